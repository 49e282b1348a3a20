// SPDX-License-Identifier: GPL-2.0
/*
 * esa_jct run: the workers.  Each is a thread of this process with its
 * libesa worker in its host's network namespace (worker_config(): the
 * simulator's window, timeouts and priorities); each iteration computes (a
 * sleep of the simulator's compute draw) and then allreduces the job's
 * scaled gradient as int32, whose sum is known in closed form and checked
 * element by element.  A failed worker aborts the run.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jct_run.h"

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

void *jct_worker_main(void *arg)
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
