// SPDX-License-Identifier: GPL-2.0
/*
 * esa_jct - the JCT benchmark's driver on the namespace testbed.
 *
 *   esa_jct run --policy P --pin DIR --prefix P --out FILE [workload options]
 *
 * Runs the simulator's seeded workload (user/sim/workload.c) once on the
 * loaded switch: every job is registered with the switch at its arrival
 * time (policy switchml: into a fixed region, or without memory until one
 * frees up, as esa_sim does), its workers are threads of this process with
 * their libesa sockets in their hosts' network namespaces, each iteration
 * computes (a sleep of the simulator's compute draw) and then allreduces the
 * job's scaled gradient as int32, and every sum is checked against the one
 * computed here.  A sampler reads the switch's slots every few ms.  The run
 * file has the jobs' JCTs, their workers' and the switch's counters and the
 * slot utilisation; `esa_jct report` turns the runs into tables.
 * user/bench/jct.sh (make jct) builds the testbed; docs/evaluation.md.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>

#include "esa.h"
#include "loader.h"
#include "registry.h"
#include "jct.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_until(double t)
{
	struct timespec ts;

	if (t <= now_s())
		return;
	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - ts.tv_sec) * 1e9);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* ------------------------------------------------------------------ */
/* Gradients with a sum known in closed form                            */
/* ------------------------------------------------------------------ */
/*
 * Rank r's element i of iteration it is base(i) + (r + 1) k(i), so the sum
 * over W ranks is W base(i) + k(i) W (W + 1) / 2: each rank generates its
 * tensor and checks the result with two hashes per element, whatever W.  A
 * rank missing or counted twice, or another iteration's or job's sum, shows
 * in almost every element.  |sum| < 2^28 + 2^16 * 2080 < 2^31 for 64 ranks.
 */
static inline uint32_t h32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

static uint32_t salt_of(uint64_t seed, unsigned job, unsigned iter, unsigned which)
{
	return (uint32_t)sim_mix64(seed * 0x100000001b3ULL ^ ((uint64_t)job << 40) ^
				   ((uint64_t)iter << 8) ^ which);
}

static inline int32_t g_base(uint32_t s, size_t i)
{
	return (int32_t)(h32((uint32_t)i ^ s) >> 9) - (1 << 22);
}

static inline int32_t g_k(uint32_t s, size_t i)
{
	return (int32_t)(h32((uint32_t)i + s) >> 15) - (1 << 16);
}

/* ------------------------------------------------------------------ */
/* The run                                                             */
/* ------------------------------------------------------------------ */

enum { J_PENDING = 0, J_STARTED, J_REGISTERED, J_DONE, J_DELETED };

struct job;

struct wk {
	struct job *j;
	unsigned rank;
	pthread_t th;
	esa_worker *ew;
	struct esa_stats st;
	double	comm;		/* seconds inside allreduce */
	double	t_done;
	uint64_t bad;		/* wrong elements */
	int	rc;
	char	err[256];
};

struct job {
	const struct sim_job_spec *s;
	unsigned id, n, window;
	int	state;
	double	t_arr;		/* scheduled arrival (monotonic s) */
	double	t_reg;		/* registered at the switch */
	double	t_region;	/* switchml: got its region (0: at arrival) */
	double	t_end;		/* last iteration of its slowest worker */
	unsigned opened, running;
	int	failed;
	uint32_t gen;		/* the switch's generation while registered */
	int	region;		/* switchml: region index, -1: none */
	struct esa_home home;	/* esa, atp with --home: its run of the pool */
	struct esa_counters ctr;
	struct wk w[ESA_MAX_WORKERS];
};

struct run {
	struct jct_opts *o;
	unsigned xdp_share;	/* AF_XDP: the most workers on one host */
	struct sim_workload wl;
	struct esa sw;
	struct job *job;
	unsigned nreg, regsize;
	int	*reg_owner;	/* job + 1, 0: free */
	unsigned *waitq, wq_head, wq_tail;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	atomic_int abort;
	atomic_int sampling;
	double	t0;		/* time zero: the workload's arrival 0 */
	/* slot samples */
	double	*ts_t;
	uint16_t *ts_busy, *ts_held, *ts_occ;
	size_t	nts, capts;
	double	sum_busy, sum_held, sum_occ;
	uint64_t nsamples, sample_err;
};

static struct run R;

/*
 * CPU time: the machine's (from /proc/stat: busy jiffies by kind, and idle),
 * this process's (the workers and the sampler) and esa-ps's.  On a shared
 * 2-core machine it says whether a run was CPU-bound and who used the CPU.
 */
struct cpu {
	unsigned long long user, sys, softirq, idle, total;
	double	self, ps;
};

static double proc_cpu_s(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n > 0 ? n : 0] = 0;
	p = strrchr(buf, ')');	/* comm may hold spaces */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return 0;
	return (double)(ut + st) / sysconf(_SC_CLK_TCK);
}

static void cpu_read(struct cpu *c)
{
	unsigned long long v[10] = { 0 };
	FILE *f = fopen("/proc/stat", "r");

	memset(c, 0, sizeof(*c));
	if (f) {
		if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
			   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
			memset(v, 0, sizeof(v));
		fclose(f);
	}
	c->user = v[0] + v[1];
	c->sys = v[2] + v[5];
	c->softirq = v[6];
	c->idle = v[3] + v[4];
	c->total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
	c->self = proc_cpu_s(getpid());
	c->ps = 0;
	for (int i = 0; R.o && i < R.o->nps_pid; i++)
		c->ps += proc_cpu_s(R.o->ps_pid[i]);
}

static struct cpu cpu0;

static void job_fail(struct wk *w, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void job_fail(struct wk *w, int rc, const char *fmt, ...)
{
	va_list ap;

	w->rc = rc;
	va_start(ap, fmt);
	vsnprintf(w->err, sizeof(w->err), fmt, ap);
	va_end(ap);
}

/* The highest priority job s stamps: its registered max-prio. */
static unsigned top_prio(const struct sim_params *p, const struct sim_job_spec *s)
{
	unsigned first = sim_prio_of(p->prio, s, 0);
	unsigned last = sim_prio_of(p->prio, s, s->chunks * s->iters - 1);

	return first > last ? first : last;
}

/* The most workers any host gets over the run (AF_XDP's sharing of a
 * host's queue: not all at once, but a bound), at most libesa's 64. */
static unsigned host_workers_max(void)
{
	unsigned cnt[JCT_MAX_HOSTS + 1] = { 0 }, m = 1;

	for (unsigned i = 0; i < R.wl.njobs; i++)
		for (unsigned r = 0; r < R.job[i].n; r++) {
			unsigned h = jct_host_of(R.o, R.job[i].id, r);

			if (++cnt[h] > m)
				m = cnt[h];
		}
	return m < 64 ? m : 64;
}

/* Worker w's libesa settings: its job, rank, host and the simulator's
 * timeouts and priorities. */
static void worker_config(const struct wk *w, esa_config *c)
{
	const struct job *j = w->j;
	const struct sim_params *p = &R.o->p;
	unsigned host = jct_host_of(R.o, j->id, w->rank);
	char buf[128];

	esa_config_set(c, "switch", "10.255.0.1");
	esa_config_set_int(c, "values", p->nvals);
	esa_config_set_int(c, "job", j->id);
	esa_config_set_int(c, "rank", w->rank);
	esa_config_set_int(c, "workers", j->n);
	snprintf(buf, sizeof(buf), "10.9.%u.2:%u", host, JCT_PORT_BASE + j->id);
	esa_config_set(c, "local", buf);
	snprintf(buf, sizeof(buf), "/run/netns/%s-h%u", R.o->prefix, host);
	esa_config_set(c, "netns", buf);
	esa_config_set_int(c, "window", j->window);
	esa_config_set_int(c, "timeout_ms", (long long)(p->timeout_us / 1000));
	esa_config_set_int(c, "timeout_max_ms", (long long)(p->timeout_max_us / 1000));
	esa_config_set_int(c, "give_up_ms", 30000);
	/* the simulator's priorities (sim_prio_of()): static or flat as a
	 * fixed priority; las and srsf through esa_prio.h with the
	 * simulator's steps, libesa counting the job's chunks as the
	 * simulator's seq does (srsf: out of the job's total); one enum,
	 * esa_prio.h's, and one name table, esa_names.h's */
	esa_config_set(c, "priority",
		       esa_prio_name(p->prio == ESA_PRIO_FLAT ? ESA_PRIO_STATIC : p->prio));
	esa_config_set_int(c, "prio", top_prio(p, j->s));
	esa_config_set_int(c, "prio_max", top_prio(p, j->s));
	esa_config_set_int(c, "total_chunks", (long long)j->s->chunks * j->s->iters);
	esa_config_set_int(c, "quantum", SIM_PRIO_QUANTUM);
	esa_config_set_int(c, "prio_steps", SIM_PRIO_STEPS);
	snprintf(buf, sizeof(buf), "10.9.%u.2:%u", jct_ps_host(R.o, j->id), JCT_PS_PORT);
	esa_config_set(c, "ps", buf);
	if (p->window_min)
		esa_config_set_int(c, "window_min", p->window_min);
	if (R.o->link_delay_us)
		esa_config_set_int(c, "link_delay_us", R.o->link_delay_us);
	if (strcmp(R.o->io, "udp")) {
		/* the workers of a host share its queue's UMEM, which the
		 * first to open sizes for xdp_workers like it */
		esa_config_set(c, "io", R.o->io);
		esa_config_set(c, "ifname", "eth0");
		esa_config_set_int(c, "xdp_workers", R.xdp_share);
	}
}

/* Elements of out that are not the sum of job j's iteration it. */
static uint64_t wrong_sums(const struct job *j, unsigned it, const int32_t *out, size_t n)
{
	uint64_t seed = R.o->p.seed;
	uint32_t pb = salt_of(seed, j->id, it, 1), pk = salt_of(seed, j->id, it, 2);
	int64_t m = (int64_t)j->n * (j->n + 1) / 2;
	uint64_t bad = 0;

	for (size_t i = 0; i < n; i++)
		if (out[i] != (int32_t)((int64_t)j->n * g_base(pb, i) + m * g_k(pk, i)))
			bad++;
	return bad;
}

/* Tell the main thread the worker is open, then wait for the job's
 * registration at the switch. */
static void worker_wait_registered(struct job *j)
{
	pthread_mutex_lock(&R.lock);
	j->opened++;
	pthread_cond_broadcast(&R.cond);
	while (j->state < J_REGISTERED && !atomic_load(&R.abort))
		pthread_cond_wait(&R.cond, &R.lock);
	pthread_mutex_unlock(&R.lock);
}

/*
 * Iteration it: compute (generate the gradient, check the last sum, sleep
 * out the simulator's compute draw until *t plus the draw), then allreduce;
 * *t is when it ended.  Returns -1 when the worker must stop.
 */
static int worker_iteration(struct wk *w, unsigned it, int32_t *in, int32_t *out, size_t n,
			    double *t)
{
	struct job *j = w->j;
	const struct sim_params *p = &R.o->p;
	uint32_t sb = salt_of(p->seed, j->id, it, 1), sk = salt_of(p->seed, j->id, it, 2);
	esa_request *r;
	double ta;
	int rc;

	for (size_t i = 0; i < n; i++)
		in[i] = g_base(sb, i) + (int32_t)(w->rank + 1) * g_k(sk, i);
	if (R.o->inject && j->id == 0 && w->rank == 0 && it == 0)
		in[n / 2] += 1;
	if (it > 0)
		w->bad += wrong_sums(j, it - 1, out, n);
	sleep_until(*t + (double)sim_compute_draw(p, j->s, w->rank, it) / T_S);
	ta = now_s();
	r = esa_allreduce_start(w->ew, ESA_INT32, in, out, n);
	if (!r) {
		job_fail(w, -EIO, "iteration %u: %s", it, esa_worker_error(w->ew));
		return -1;
	}
	while ((rc = esa_wait(r, 200)) == -EAGAIN && !atomic_load(&R.abort))
		;
	esa_request_free(r);
	*t = now_s();
	w->comm += *t - ta;
	if (rc == -EAGAIN) {
		job_fail(w, -ETIMEDOUT, "iteration %u: run aborted", it);
		return -1;
	}
	if (rc) {
		job_fail(w, rc, "iteration %u: %s (%s)", it, esa_strerror(rc),
			 esa_worker_error(w->ew));
		return -1;
	}
	if (it + 1 == j->s->iters) {
		w->t_done = *t;
		w->bad += wrong_sums(j, it, out, n);
	}
	return 0;
}

/* A worker's end: a failed one aborts the run (its peers would wait for
 * it); the job ends with its slowest worker. */
static void worker_exit(struct wk *w)
{
	struct job *j = w->j;

	pthread_mutex_lock(&R.lock);
	if (w->rc) {
		j->failed = 1;
		atomic_store(&R.abort, 1);
		if (!w->ew)	/* never opened: let the main thread go on */
			j->opened++;
	}
	if (w->t_done > j->t_end)
		j->t_end = w->t_done;
	j->running--;
	pthread_cond_broadcast(&R.cond);
	pthread_mutex_unlock(&R.lock);
}

static void *worker_main(void *arg)
{
	struct wk *w = arg;
	struct job *j = w->j;
	size_t n = (size_t)j->s->chunks * R.o->p.nvals;
	int32_t *in = malloc(n * 4), *out = malloc(n * 4);
	esa_config *c = esa_config_new();
	double t;

	if (!in || !out || !c) {
		job_fail(w, -ENOMEM, "out of memory");
		goto done;
	}
	worker_config(w, c);
	if (esa_config_error(c)[0]) {
		job_fail(w, -EINVAL, "config: %s", esa_config_error(c));
		goto done;
	}
	w->ew = esa_worker_open(c, w->err, sizeof(w->err));
	if (!w->ew) {
		w->rc = -errno ? -errno : -EIO;
		goto done;
	}
	worker_wait_registered(j);
	t = j->t_arr;
	for (unsigned it = 0; it < j->s->iters && !atomic_load(&R.abort); it++)
		if (worker_iteration(w, it, in, out, n, &t))
			break;
	if (w->bad && !w->rc)
		job_fail(w, -EILSEQ, "%llu wrong elements", (unsigned long long)w->bad);
	esa_worker_stats(w->ew, &w->st, sizeof(w->st));
done:
	if (c)
		esa_config_free(c);
	free(in);
	free(out);
	worker_exit(w);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The switch: registration, regions                                    */
/* ------------------------------------------------------------------ */

static void job_entry(const struct job *j, struct esa_job *e)
{
	memset(e, 0, sizeof(*e));
	e->nworkers = j->n;
	e->max_prio = top_prio(&R.o->p, j->s);
	char ps[32];

	snprintf(ps, sizeof(ps), "10.9.%u.2", jct_ps_host(R.o, j->id));
	inet_pton(AF_INET, ps, &e->ps.ip);
	e->ps.port = htons(JCT_PS_PORT);
	e->lease_ms = 0;
	for (unsigned r = 0; r < j->n; r++) {
		char ip[32];

		snprintf(ip, sizeof(ip), "10.9.%u.2", jct_host_of(R.o, j->id, r));
		inet_pton(AF_INET, ip, &e->rank[r].ip);
		e->rank[r].port = htons(JCT_PORT_BASE + j->id);
	}
}

static int region_take(struct job *j)
{
	for (unsigned i = 0; i < R.nreg; i++) {
		if (R.reg_owner[i])
			continue;
		R.reg_owner[i] = (int)(j - R.job) + 1;
		j->region = (int)i;
		return 0;
	}
	return -1;
}

/* Hand region j->region to a registered job in place. */
static int job_set_region(struct job *j)
{
	struct esa_job e;

	if (esa_job_read(&R.sw, j->id, &e) || e.state != ESA_JOB_ACTIVE ||
	    esa_job_gen(&e) != j->gen)
		return -ESTALE;
	return esa_job_set_region(&R.sw, j->id, (unsigned)j->region * R.regsize,
				  R.regsize);
}

static int job_register(struct job *j)
{
	char err[ESA_ERR_LEN];
	struct esa_job e;
	int rc;

	job_entry(j, &e);
	if (R.o->policy == ESA_POLICY_SWITCHML) {
		if (R.o->noslot || region_take(j)) {
			/* no region free: no switch memory (all to the PS,
			 * NOSLOT) until one frees up */
			if (!R.o->noslot)
				R.waitq[R.wq_tail++] = (unsigned)(j - R.job);
			goto add;
		}
		e.region_base = (unsigned)j->region * R.regsize;
		e.region_size = R.regsize;
	}
	if (R.o->policy != ESA_POLICY_SWITCHML && R.o->p.home) {
		/* esactl's "region auto": where it meets the fewest homes of
		 * the jobs registered now (the simulator's home_place()) */
		struct esa_home h[JCT_MAX_JOBS];
		unsigned n = 0, size = R.o->p.home < R.o->p.pool ? R.o->p.home : R.o->p.pool;

		for (unsigned k = 0; k < R.wl.njobs; k++)
			if ((R.job[k].state == J_REGISTERED || R.job[k].state == J_DONE) &&
			    R.job[k].home.size)
				h[n++] = R.job[k].home;
		j->home.base = esa_home_place(h, n, R.o->p.pool, size);
		j->home.size = size;
		e.region_base = j->home.base;
		e.region_size = j->home.size;
	}
add:
	rc = esa_job_register(&R.sw, j->id, &e, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "esa_jct: job %u: %s\n", j->id, err);
		return rc;
	}
	j->gen = esa_job_gen(&e);
	return 0;
}

/* A finished job: delete it (its slots are dead at once) and hand its
 * region to the longest waiting job, as esa_sim does. */
static void job_retire(struct job *j, double now)
{
	esa_counters_read(&R.sw, j->id, &j->ctr);
	esa_job_del(&R.sw, j->id);
	esa_deliver_clear(&R.sw, j->id);
	j->gen++;
	j->state = J_DELETED;
	j->home.size = 0;
	if (j->region < 0)
		return;
	R.reg_owner[j->region] = 0;
	j->region = -1;
	while (R.wq_head != R.wq_tail) {
		struct job *n = &R.job[R.waitq[R.wq_head]];

		if (n->state != J_REGISTERED) {
			R.wq_head++;
			continue;
		}
		if (region_take(n))
			break;
		R.wq_head++;
		if (job_set_region(n))
			fprintf(stderr, "esa_jct: job %u: cannot hand over region %d\n",
				n->id, n->region);
		n->t_region = now;
	}
}

/* ------------------------------------------------------------------ */
/* Slot sampler                                                        */
/* ------------------------------------------------------------------ */

static int read_slots(struct esa_slot *s, __u32 *keys, unsigned pool)
{
	LIBBPF_OPTS(bpf_map_batch_opts, bo);
	__u32 count = pool, out_batch = 0;
	static int no_batch;
	int rc;

	if (!no_batch) {
		rc = bpf_map_lookup_batch(R.sw.slots_fd, NULL, &out_batch, keys, s,
					  &count, &bo);
		if ((!rc || errno == ENOENT) && count == pool)
			return 0;
		no_batch = 1;
	}
	for (__u32 i = 0; i < pool; i++)
		if (bpf_map_lookup_elem(R.sw.slots_fd, &i, &s[i]))
			return -errno;
	return 0;
}

static void ts_add(double t, unsigned busy, unsigned held, unsigned occ)
{
	if (R.nts == R.capts) {
		size_t cap = R.capts ? 2 * R.capts : 4096;

		R.ts_t = realloc(R.ts_t, cap * sizeof(*R.ts_t));
		R.ts_busy = realloc(R.ts_busy, cap * sizeof(*R.ts_busy));
		R.ts_held = realloc(R.ts_held, cap * sizeof(*R.ts_held));
		R.ts_occ = realloc(R.ts_occ, cap * sizeof(*R.ts_occ));
		if (!R.ts_t || !R.ts_busy || !R.ts_held || !R.ts_occ) {
			fprintf(stderr, "esa_jct: out of memory\n");
			exit(2);
		}
		R.capts = cap;
	}
	R.ts_t[R.nts] = t;
	R.ts_busy[R.nts] = busy;
	R.ts_held[R.nts] = held;
	R.ts_occ[R.nts] = occ;
	R.nts++;
}

/*
 * Every sample_ms: each slot is busy (a live owner aggregating), held (a live
 * owner's complete sum waiting for the PS's ack: atp) or neither (free, or
 * its owner deleted); occupied adds the idle slots of the switchml regions
 * of registered jobs.  The time averages over the run are the simulator's
 * u_agg, u_held and u_occ.
 */
static void *sampler_main(void *arg)
{
	unsigned pool = R.o->p.pool, nj = R.wl.njobs;
	struct esa_slot *s = calloc(pool, sizeof(*s));
	__u32 *keys = calloc(pool, sizeof(*keys));
	uint32_t *gen = calloc(nj, sizeof(*gen));
	uint8_t *alive = calloc(nj, 1);
	int *rbase = calloc(nj, sizeof(*rbase));
	double period = R.o->sample_ms / 1e3, next = now_s();

	(void)arg;
	if (!s || !keys || !gen || !alive || !rbase) {
		fprintf(stderr, "esa_jct: out of memory\n");
		exit(2);
	}
	while (atomic_load(&R.sampling)) {
		unsigned busy = 0, held = 0, reserved = 0, inreg = 0;
		double t;

		next += period;
		sleep_until(next);
		if (now_s() > next + period)	/* late: do not catch up */
			next = now_s();
		pthread_mutex_lock(&R.lock);
		for (unsigned i = 0; i < nj; i++) {
			struct job *j = &R.job[i];

			alive[i] = j->state == J_REGISTERED || j->state == J_DONE;
			gen[i] = j->gen;
			rbase[i] = alive[i] && j->region >= 0 ? j->region * (int)R.regsize : -1;
			if (rbase[i] >= 0)
				reserved += R.regsize;
		}
		pthread_mutex_unlock(&R.lock);
		t = now_s() - R.t0;
		if (read_slots(s, keys, pool)) {
			R.sample_err++;
			continue;
		}
		for (unsigned k = 0; k < pool; k++) {
			unsigned jid = s[k].job;
			bool live;

			if (s[k].state == ESA_SLOT_FREE)
				continue;
			live = jid < nj && alive[jid] && gen[jid] == s[k].gen;
			if (!live)
				continue;
			busy += s[k].state == ESA_SLOT_BUSY;
			held += s[k].state == ESA_SLOT_HELD;
			if (rbase[jid] >= 0 && k >= (unsigned)rbase[jid] &&
			    k < (unsigned)rbase[jid] + R.regsize)
				inreg++;
		}
		R.sum_busy += busy;
		R.sum_held += held;
		R.sum_occ += busy + held + reserved - inreg;
		R.nsamples++;
		ts_add(t, busy, held, busy + held + reserved - inreg);
	}
	free(s);
	free(keys);
	free(gen);
	free(alive);
	free(rbase);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Output                                                              */
/* ------------------------------------------------------------------ */

/* CPU time over the run: shares of the machine by kind, ours and esa-ps's
 * seconds, and others: busy time not softirq and not ours or esa-ps's, as
 * a share of the machine (other users of a shared machine). */
static void write_cpu(FILE *f, double makespan)
{
	long tck = sysconf(_SC_CLK_TCK);
	struct cpu c1;
	double tot_j, busy_s, others;

	cpu_read(&c1);
	tot_j = c1.total > cpu0.total ? (double)(c1.total - cpu0.total) : 1;
	busy_s = (double)(c1.total - cpu0.total - (c1.idle - cpu0.idle) -
			  (c1.softirq - cpu0.softirq)) / tck;
	others = (busy_s - (c1.self - cpu0.self) - (c1.ps - cpu0.ps)) / (tot_j / tck);
	fprintf(f, "cpu wall_s=%.3f ncpu=%ld user=%.3f sys=%.3f softirq=%.3f "
		"idle=%.3f self_s=%.3f ps_s=%.3f others=%.3f\n", makespan,
		sysconf(_SC_NPROCESSORS_ONLN), (c1.user - cpu0.user) / tot_j,
		(c1.sys - cpu0.sys) / tot_j, (c1.softirq - cpu0.softirq) / tot_j,
		(c1.idle - cpu0.idle) / tot_j, c1.self - cpu0.self, c1.ps - cpu0.ps,
		others > 0 ? others : 0);
}

/* The transport asked for, and how many workers got AF_XDP. */
static void write_io(FILE *f)
{
	unsigned nw = 0, nx = 0;

	for (unsigned i = 0; i < R.wl.njobs; i++)
		for (unsigned r = 0; r < R.job[i].n; r++) {
			nw++;
			nx += R.job[i].w[r].st.io_xdp != 0;
		}
	fprintf(f, "io asked=%s workers=%u on_xdp=%u xdp_share=%u\n", R.o->io, nw, nx,
		R.xdp_share);
}

/* One job's line: its JCT (NAN when it failed), its workers' counters
 * summed, its slowest worker's time in allreduce, its first error. */
static void write_job(FILE *f, const struct job *j)
{
	const struct sim_params *p = &R.o->p;
	uint64_t tx = 0, rs = 0, rr = 0, rp = 0, rtt = 0, rtn = 0, bad = 0;
	double comm = 0;
	const char *err = "-";

	for (unsigned r = 0; r < j->n; r++) {
		const struct wk *w = &j->w[r];

		tx += w->st.tx_packets;
		rs += w->st.tx_resends;
		rr += w->st.rx_results;
		rp += w->st.rx_from_ps;
		rtt += w->st.rtt_us_sum;
		rtn += w->st.rtt_samples;
		bad += w->bad;
		if (w->comm > comm)
			comm = w->comm;
		if (w->rc && !strcmp(err, "-"))
			err = w->err[0] ? w->err : esa_strerror(w->rc);
	}
	fprintf(f, "job %u %.6f %s %u %u %u %.4f %u %u %.6f %d %.6f %.6f %llu %llu "
		"%llu %llu %.1f %llu \"%s\"\n", j->id, (double)j->s->arrival / T_S,
		sim_models[j->s->model].name, j->n, j->s->iters, j->s->chunks,
		(double)j->s->compute / T_MS, sim_prio_of(p->prio, j->s, 0),
		j->window, j->failed || j->t_end <= 0 ? NAN : j->t_end - j->t_arr,
		!j->failed && j->t_end > 0, j->t_region > 0 ? j->t_region - j->t_arr : 0,
		comm, (unsigned long long)tx, (unsigned long long)rs,
		(unsigned long long)rr, (unsigned long long)rp,
		rtn ? (double)rtt / rtn : 0, (unsigned long long)bad, err);
}

static void write_ctr_row(FILE *f, const char *row, const struct esa_counters *c)
{
	fprintf(f, "ctr %s", row);
	for (int k = 0; k < __ESA_C_MAX; k++)
		fprintf(f, " %llu", (unsigned long long)c->c[k]);
	fprintf(f, "\n");
}

/* The switch's counters: per job, then the total of every row. */
static void write_counters(FILE *f)
{
	struct esa_counters tot;
	char row[16];

	fprintf(f, "# ctr ROW");
	for (int c = 0; c < __ESA_C_MAX; c++)
		fprintf(f, " %s", esa_counter_names[c]);
	fprintf(f, "\n");
	for (unsigned i = 0; i < R.wl.njobs; i++) {
		snprintf(row, sizeof(row), "%u", R.job[i].id);
		write_ctr_row(f, row, &R.job[i].ctr);
	}
	if (!esa_counters_sum(&R.sw, &tot))
		write_ctr_row(f, "total", &tot);
}

static void write_run(FILE *f, double makespan, int ok)
{
	const struct sim_params *p = &R.o->p;

	fprintf(f, "# esa_jct run: esa_jct run --policy %s ", sim_policy_name(R.o->policy));
	jct_sim_args(f, R.o);
	fprintf(f, "\nrun policy=%s seed=%llu rep=%u pool=%u window=%u nvals=%u "
		"jobs=%u regions=%u regsize=%u makespan_s=%.6f ok=%d hosts=%u "
		"sample_ms=%g samples=%llu sample_errors=%llu\n",
		sim_policy_name(R.o->policy), (unsigned long long)p->seed, R.o->rep,
		p->pool, p->window, p->nvals, R.wl.njobs, R.nreg, R.regsize, makespan,
		ok, R.o->hosts, R.o->sample_ms, (unsigned long long)R.nsamples,
		(unsigned long long)R.sample_err);
	write_cpu(f, makespan);
	write_io(f);
	fprintf(f, "util u_agg=%.6f u_held=%.6f u_occ=%.6f\n",
		R.nsamples ? R.sum_busy / R.nsamples / p->pool : 0,
		R.nsamples ? R.sum_held / R.nsamples / p->pool : 0,
		R.nsamples ? R.sum_occ / R.nsamples / p->pool : 0);
	fprintf(f, "# job id arrival_s model workers iters chunks compute_ms prio window "
		"jct_s ok wait_region_s comm_max_s tx resends rx_results rx_from_ps "
		"rtt_us bad error\n");
	for (unsigned i = 0; i < R.wl.njobs; i++)
		write_job(f, &R.job[i]);
	write_counters(f);
	fprintf(f, "# ts t_s busy held occ\n");
	for (size_t k = 0; k < R.nts; k++)
		fprintf(f, "ts %.4f %u %u %u\n", R.ts_t[k], R.ts_busy[k], R.ts_held[k],
			R.ts_occ[k]);
}

/* The loaded switch must be the one this run needs. */
static int run_open_switch(const struct jct_opts *o)
{
	const struct sim_params *p = &o->p;
	char err[ESA_ERR_LEN];

	if (esa_open_pinned(&R.sw, o->pin, err, sizeof(err))) {
		fprintf(stderr, "esa_jct: %s\n", err);
		return -1;
	}
	if (R.sw.cfg.policy != o->policy || R.sw.cfg.slots != p->pool ||
	    R.sw.cfg.nvals != p->nvals || R.sw.cfg.max_jobs < R.wl.njobs) {
		fprintf(stderr, "esa_jct: the loaded switch runs %s with %u slots of %u values "
			"and %u jobs; this run needs %s, %u x %u, %u jobs\n",
			esa_policy_names[R.sw.cfg.policy], R.sw.cfg.slots, R.sw.cfg.nvals,
			R.sw.cfg.max_jobs, sim_policy_name(o->policy), p->pool, p->nvals,
			R.wl.njobs);
		esa_close(&R.sw);
		return -1;
	}
	if (fabs((double)R.sw.cfg.stale_ms - p->stale_ms) > 0.5)
		fprintf(stderr, "esa_jct: warning: the switch ages after %u ms, the model "
			"after %g ms\n", R.sw.cfg.stale_ms, p->stale_ms);
	return 0;
}

/* Job i of the workload, its window as esa_sim's, its arrival from t0. */
static void job_init(struct job *j, unsigned i)
{
	const struct jct_opts *o = R.o;
	const struct sim_params *p = &o->p;
	unsigned home = p->home < p->pool ? p->home : p->pool;

	j->s = &R.wl.job[i];
	j->id = i;	/* as esa_sim: the same slots for the same chunks */
	j->n = j->s->nworkers;
	j->window = p->window;
	/* A switchml worker's window is at most its region (esa_sim adopts it
	 * at the next iteration; libesa's is fixed). */
	if (o->policy == ESA_POLICY_SWITCHML && R.regsize < j->window)
		j->window = R.regsize;
	/* ... and so is a home (esa_sim's job_window()) */
	if (o->policy != ESA_POLICY_SWITCHML && p->home && home < j->window)
		j->window = home;
	j->region = -1;
	j->t_arr = R.t0 + (double)j->s->arrival / T_S;
	for (unsigned r = 0; r < j->n; r++) {
		j->w[r].j = j;
		j->w[r].rank = r;
	}
}

/* The jobs, and switchml's regions and queue of jobs waiting for one. */
static int run_init_jobs(const struct jct_opts *o)
{
	R.job = calloc(R.wl.njobs, sizeof(*R.job));
	if (!R.job)
		return -ENOMEM;
	if (o->policy == ESA_POLICY_SWITCHML) {
		jct_regions(&o->p, &R.wl, &R.nreg, &R.regsize);
		R.reg_owner = calloc(R.nreg, sizeof(*R.reg_owner));
		R.waitq = calloc(R.wl.njobs, sizeof(*R.waitq));
		if (!R.reg_owner || !R.waitq)
			return -ENOMEM;
	}
	R.t0 = now_s() + o->lead_ms / 1e3;
	for (unsigned i = 0; i < R.wl.njobs; i++)
		job_init(&R.job[i], i);
	R.xdp_share = host_workers_max();
	return 0;
}

/* A failed or overlong run: the jobs still to come never start, and
 * workers waiting for a registration give up.  Under R.lock. */
static void sched_abort(unsigned next, unsigned *done)
{
	for (unsigned i = next; i < R.wl.njobs; i++) {
		struct job *j = &R.job[i];

		if (j->state == J_PENDING) {
			j->state = J_DELETED;
			j->failed = 1;
			(*done)++;
		} else if (j->state == J_STARTED) {
			j->state = J_REGISTERED;
			j->failed = 1;
		}
	}
	pthread_cond_broadcast(&R.cond);
}

/* Start the workers of the jobs due in 50 ms, register those due now;
 * *wake: when the next of them is due.  Under R.lock. */
static void sched_start(unsigned next, double now, double *wake)
{
	for (unsigned i = next; i < R.wl.njobs; i++) {
		struct job *j = &R.job[i];

		if (j->state == J_PENDING && now >= j->t_arr - 0.05) {
			j->state = J_STARTED;
			j->running = j->n;
			for (unsigned r = 0; r < j->n; r++)
				pthread_create(&j->w[r].th, NULL, worker_main, &j->w[r]);
		}
		if (j->state == J_STARTED && now >= j->t_arr) {
			if (i == 0)
				cpu_read(&cpu0);
			if (job_register(j)) {
				atomic_store(&R.abort, 1);
				j->failed = 1;
			}
			j->t_reg = now;
			j->state = J_REGISTERED;
			pthread_cond_broadcast(&R.cond);
		}
		if (j->state == J_PENDING) {
			*wake = fmin(*wake, j->t_arr - 0.05);
			break;
		}
		if (j->state == J_STARTED)
			*wake = fmin(*wake, j->t_arr);
	}
}

/* Delete the jobs whose workers have all finished.  Under R.lock. */
static void sched_retire(unsigned next, unsigned *done)
{
	for (unsigned i = 0; i < next; i++) {
		struct job *j = &R.job[i];

		if (j->state != J_REGISTERED || j->running)
			continue;
		j->state = J_DONE;
		for (unsigned r = 0; r < j->n; r++)
			pthread_join(j->w[r].th, NULL);
		job_retire(j, now_s());
		for (unsigned r = 0; r < j->n; r++) {
			if (j->w[r].ew)
				esa_worker_close(j->w[r].ew);
			j->w[r].ew = NULL;
		}
		(*done)++;
	}
}

/* Wait on R.cond until wake (monotonic), between 0.5 and 100 ms.  Condition
 * variables use CLOCK_REALTIME: the wait is relative. */
static void sched_wait(double wake)
{
	double d = wake - now_s();
	struct timespec rt, ts;

	if (d < 0.0005)
		d = 0.0005;
	if (d > 0.1)
		d = 0.1;
	clock_gettime(CLOCK_REALTIME, &rt);
	ts.tv_sec = rt.tv_sec + (time_t)d;
	ts.tv_nsec = rt.tv_nsec + (long)((d - (time_t)d) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&R.cond, &R.lock, &ts);
}

/*
 * The schedule: a job's worker threads start 50 ms before its arrival
 * (they open their sockets, then wait); at its arrival the job is
 * registered and its workers start computing.  Finished jobs are deleted
 * at once.
 */
static void run_schedule(const struct jct_opts *o)
{
	double deadline = R.t0 + o->max_run_s;
	unsigned next = 0, done = 0;

	pthread_mutex_lock(&R.lock);
	while (done < R.wl.njobs) {
		double now = now_s(), wake = deadline;

		if (now > deadline && !atomic_load(&R.abort)) {
			fprintf(stderr, "esa_jct: run longer than %g s: giving up\n", o->max_run_s);
			atomic_store(&R.abort, 1);
			pthread_cond_broadcast(&R.cond);
			deadline = now + 60;	/* workers see the abort within 200 ms */
		}
		if (atomic_load(&R.abort))
			sched_abort(next, &done);
		sched_start(next, now, &wake);
		while (next < R.wl.njobs && R.job[next].state >= J_REGISTERED)
			next++;
		sched_retire(next, &done);
		if (done == R.wl.njobs)
			break;
		sched_wait(wake);
	}
	pthread_mutex_unlock(&R.lock);
}

/* Whether every job finished; the failed ones' errors said.  *last: when
 * the last one ended. */
static int run_check(const struct jct_opts *o, double *last)
{
	int ok = 1;

	*last = R.t0;
	for (unsigned i = 0; i < R.wl.njobs; i++) {
		struct job *j = &R.job[i];

		if (j->failed || j->t_end <= 0) {
			ok = 0;
			for (unsigned r = 0; r < j->n; r++)
				if (j->w[r].rc)
					fprintf(stderr, "esa_jct: %s: job %u rank %u: %s\n",
						sim_policy_name(o->policy), j->id, r,
						j->w[r].err[0] ? j->w[r].err :
						esa_strerror(j->w[r].rc));
		}
		if (j->t_end > *last)
			*last = j->t_end;
	}
	return ok;
}

int jct_run(struct jct_opts *o)
{
	pthread_t sampler;
	double last;
	int ok, rc = 2;
	FILE *f;

	if (o->policy < 0 || !o->pin[0] || !o->prefix[0] || !o->out) {
		fprintf(stderr, "esa_jct run: --policy, --pin, --prefix and --out are needed\n");
		return 2;
	}
	memset(&R, 0, sizeof(R));
	R.o = o;
	pthread_mutex_init(&R.lock, NULL);
	pthread_cond_init(&R.cond, NULL);
	if (sim_workload_gen(&o->p, &R.wl)) {
		fprintf(stderr, "esa_jct: bad workload parameters\n");
		return 2;
	}
	if (run_open_switch(o))
		goto out_wl;
	if (run_init_jobs(o))
		goto out_sw;
	atomic_store(&R.sampling, 1);
	pthread_create(&sampler, NULL, sampler_main, NULL);
	run_schedule(o);
	atomic_store(&R.sampling, 0);
	pthread_join(sampler, NULL);

	ok = run_check(o, &last);
	f = fopen(o->out, "w");
	if (!f) {
		fprintf(stderr, "esa_jct: %s: %s\n", o->out, strerror(errno));
		goto out_sw;
	}
	write_run(f, last - R.t0, ok);
	fclose(f);
	rc = ok ? 0 : 1;
out_sw:
	esa_close(&R.sw);
out_wl:
	sim_workload_free(&R.wl);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Commands                                                            */
/* ------------------------------------------------------------------ */

static int cmd_list(struct jct_opts *o)
{
	struct sim_workload w;

	if (sim_workload_gen(&o->p, &w)) {
		fprintf(stderr, "esa_jct: bad workload parameters\n");
		return 2;
	}
	jct_print_scale(stdout, &o->p);
	printf("job arrival_ms model workers iters chunks compute_ms static_prio alone_ms hosts\n");
	for (unsigned i = 0; i < w.njobs; i++) {
		const struct sim_job_spec *j = &w.job[i];

		printf("%u %.4f %s %u %u %u %.4f %u %.4f ", i, (double)j->arrival / T_MS,
		       sim_models[j->model].name, j->nworkers, j->iters, j->chunks,
		       (double)j->compute / T_MS, j->sprio, j->ideal_s * 1e3);
		for (unsigned r = 0; r < j->nworkers; r++)
			printf("%s%u", r ? "," : "", jct_host_of(o, i, r));
		printf("\n");
	}
	printf("rate %.3f jobs/s, mean alone %.4f ms\n", w.rate, w.mean_ideal_s * 1e3);
	printf("esa_sim ");
	jct_sim_args(stdout, o);
	printf("\n");
	sim_workload_free(&w);
	return 0;
}

static int cmd_env(struct jct_opts *o)
{
	unsigned nps = o->p.ps_hosts ? o->p.ps_hosts : o->p.njobs;

	printf("JCT_POOL=%u\nJCT_NVALS=%u\nJCT_STALE=%u\nJCT_JOBS=%u\nJCT_HOSTS=%u\n",
	       o->p.pool, o->p.nvals, (unsigned)lround(o->p.stale_ms), o->p.njobs,
	       o->hosts);
	printf("JCT_DELAY=%u\nJCT_PSCOPY=%s\nJCT_PSSUMS=%s\nJCT_PSHOSTS=\"", o->link_delay_us,
	       o->p.ps_copy ? "on" : "off", o->p.ps_sums ? "switch" : "direct");
	for (unsigned k = 0; k < nps; k++)
		printf("%s%u", k ? " " : "", o->p.ps_hosts == 1 ? JCT_PS_HOST : JCT_PS_HOST0 + k);
	printf("\"\n");
	return 0;
}

static int cmd_ps_jobs(struct jct_opts *o)
{
	struct sim_workload w;

	if (sim_workload_gen(&o->p, &w)) {
		fprintf(stderr, "esa_jct: bad workload parameters\n");
		return 2;
	}
	printf("values %u\n", o->p.nvals);
	for (unsigned i = 0; i < w.njobs; i++) {
		printf("job %u ps 10.9.%u.2:%u workers", i, jct_ps_host(o, i), JCT_PS_PORT);
		for (unsigned r = 0; r < w.job[i].nworkers; r++)
			printf(" 10.9.%u.2:%u", jct_host_of(o, i, r), JCT_PORT_BASE + i);
		printf("\n");
	}
	sim_workload_free(&w);
	return 0;
}

int main(int argc, char **argv)
{
	struct jct_opts o;
	const char *cmd;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		jct_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	cmd = argv[1];
	if (jct_parse(&o, argc - 1, argv + 1, cmd) < 0)
		return 2;
	if (optind < argc - 1) {
		fprintf(stderr, "esa_jct: unexpected argument %s\n", argv[optind + 1]);
		return 2;
	}
	if (!strcmp(cmd, "list"))
		return cmd_list(&o);
	if (!strcmp(cmd, "env"))
		return cmd_env(&o);
	if (!strcmp(cmd, "ps-jobs"))
		return cmd_ps_jobs(&o);
	if (!strcmp(cmd, "run"))
		return jct_run(&o);
	if (!strcmp(cmd, "report"))
		return jct_report(&o);
	if (!strcmp(cmd, "calib"))
		return jct_calib(&o);
	fprintf(stderr, "esa_jct: unknown command %s (list, env, ps-jobs, run, report, calib)\n", cmd);
	return 2;
}
