// SPDX-License-Identifier: GPL-2.0
/*
 * make bench: the ESA program's cost per packet under BPF_PROG_TEST_RUN,
 * beside two floors measured in the same run and through the same driver
 * (bpf/esa_bench.bpf.c): a bare XDP_TX program and a minimal locked add loop
 * over ESA's slot layout; and the same program under policy atp, whose
 * chunks also cost the PS's ack.  Timings are printed, never judged; the run
 * only fails if a program did not take the paths it was meant to measure.
 *
 * Then the add itself in user space, over the same slot layout (64-bit
 * accumulators of v + 2^31), under a lock as the slot's: the scalar loop
 * the JIT makes of esa_acc_add() (one load, xor, load, add, store per
 * value), against AVX2 (8 values a step) as a module's kfunc could do it,
 * and what saving and restoring the vector state (XSAVE/XRSTOR, as
 * kernel_fpu_begin/end may) costs per call.  The BPF JIT has no vector
 * instructions: this is the bound of the program's own loop.
 *
 * Then the aggregate throughput on 1 and 2 cores (bench_cores.h), every
 * result checked.
 *
 * usage: esa_bench [ -n PACKETS ] [ -r ROUNDS ] [ -w WORKERS ]
 *                  [ -o OBJECT ]  (another build of bpf/esa.bpf.c)
 *                  [ -C ]         (the cores' throughput only)
 */
#include <getopt.h>
#include <math.h>
#include <immintrin.h>
#include <time.h>

#include "testlib.h"
#include "esa_bench.h"
#include "benchlib.h"
#include "util.h"
#include "jobdesc.h"

#define JOB	1

#include "bench_cores.h"

struct result {
	int	nvals;
	double	tx, add, esa, atp;	/* ns per data packet */
};

static const char *object;

/*
 * Load a switch of policy pol with job JOB registered, or with jobs 2 also
 * job BC_JOB2, each then at home in its own half of the pool; 0 or -1.
 */
static int load_switch(struct t_net *net, struct esa *e, int nvals, int workers,
		       int pol, int jobs)
{
	char err[ESA_ERR_LEN];
	struct esa_opts o;
	struct esa_job j;

	esa_opts_default(&o);
	o.nvals = nvals;
	o.slots = 4096;
	o.max_jobs = 16;
	o.policy = pol;
	o.kfunc = 0;
	o.object = object;
	if (esa_load(e, &o, err, sizeof(err))) {
		fprintf(stderr, "esa_bench: %s\n", err);
		return -1;
	}
	if (t_port_register(e, net->sw0) || t_port_register(e, net->sw1)) {
		fprintf(stderr, "esa_bench: cannot register the ports\n");
		esa_close(e);
		return -1;
	}
	for (int k = 0; k < jobs; k++) {
		__u16 id = k ? BC_JOB2 : JOB;

		/* the PS behind the workers' port: its acks (atp) arrive there too */
		j = t_job(workers, T_PS_W, 255, id);
		if (jobs > 1) {
			j.region_size = o.slots / jobs;
			j.region_base = k * j.region_size;
		}
		if (t_job_add(e, id, &j, err, sizeof(err))) {
			fprintf(stderr, "esa_bench: setup: %s\n", err);
			esa_close(e);
			return -1;
		}
	}
	return 0;
}

/* The driver, for the stream of job JOB's ranks through switch e. */
static struct esa_bench_bpf *driver_load(struct t_net *net, struct esa *e, int nvals,
					 int workers)
{
	struct esa_bench_bpf *b = esa_bench_bpf__open();

	if (!b)
		return NULL;
	b->rodata->bench_cfg.nvals = nvals;
	b->rodata->bench_cfg.slots = e->cfg.slots;
	b->rodata->bench_cfg.nworkers = workers;
	b->rodata->bench_cfg.job = JOB;
	b->rodata->bench_cfg.worker_ip = t_worker_ip(0);
	b->rodata->bench_cfg.switch_ip = t_ip(T_SW_IP);
	b->rodata->bench_cfg.worker_port = htons(T_WORKER_PORT + JOB);
	b->rodata->bench_cfg.ps_ip = t_ip(T_PS_W);
	b->rodata->bench_cfg.ps_port = htons(T_PS_PORT);
	/* acks from the MAC the switch reaches the PS at (policy atp) */
	if (esa_parse_mac(T_PS_W_MAC, b->rodata->bench_cfg.ps_mac))
		goto fail;
	t_worker_mac(0, b->rodata->bench_cfg.worker_mac);
	memcpy(b->rodata->bench_cfg.switch_mac, net->sw0_mac, 6);
	bpf_map__set_max_entries(b->maps.floor_slots, e->cfg.slots);
	bpf_map__set_max_entries(b->maps.floor_acc, e->cfg.slots);
	bpf_map__set_value_size(b->maps.floor_acc, nvals * sizeof(__u64));
	if (!esa_bench_bpf__load(b))
		return b;
	fprintf(stderr, "esa_bench: cannot load the driver\n");
fail:
	esa_bench_bpf__destroy(b);
	return NULL;
}

/* The stream must have been aggregated, not dropped or sent away. */
static int check_paths(struct esa *e, const char *what, int nvals, __u64 chunks,
		       bool atp)
{
	struct esa_counters c;

	esa_counters_read(e, JOB, &c);
	if (c.c[atp ? ESA_C_HELD : ESA_C_COMPLETED] >= chunks &&
	    c.c[ESA_C_CLAIMED] >= chunks && (!atp || c.c[ESA_C_ACK] >= chunks) &&
	    !c.c[ESA_C_COLLISION] && !c.c[ESA_C_DROP_SPOOF] &&
	    !c.c[ESA_C_DROP_HEADER] && !c.c[ESA_C_DROP_NOROUTE])
		return 0;
	fprintf(stderr, "esa_bench: %s, values=%d: wrong paths: completed %llu held %llu"
		" acks %llu claimed %llu (want >= %llu) collisions %llu drop_ack %llu"
		" drop_spoof %llu drop_header %llu drop_noroute %llu\n", what, nvals,
		(unsigned long long)c.c[ESA_C_COMPLETED], (unsigned long long)c.c[ESA_C_HELD],
		(unsigned long long)c.c[ESA_C_ACK], (unsigned long long)c.c[ESA_C_CLAIMED],
		(unsigned long long)chunks, (unsigned long long)c.c[ESA_C_COLLISION],
		(unsigned long long)c.c[ESA_C_DROP_ACK], (unsigned long long)c.c[ESA_C_DROP_SPOOF],
		(unsigned long long)c.c[ESA_C_DROP_HEADER], (unsigned long long)c.c[ESA_C_DROP_NOROUTE]);
	return -1;
}

static int bench_one(struct t_net *net, int nvals, int workers, __u32 n,
		     int rounds, struct result *res)
{
	double tx[32], add[32], es[32], at[32];
	struct esa_bench_bpf *b = NULL;
	struct esa e = {}, a = {};
	__s32 vals[ESA_MAX_VALUES];
	__u8 pkt[T_FRAME_MAX];
	struct t_pkt p;
	int len, rc = -1;

	if (load_switch(net, &e, nvals, workers, ESA_POLICY_ESA, 1))
		return -1;
	if (load_switch(net, &a, nvals, workers, ESA_POLICY_ATP, 1))
		goto out;
	b = driver_load(net, &e, nvals, workers);
	if (!b)
		goto out;

	for (int i = 0; i < nvals; i++)
		vals[i] = (i * 2654435761u) >> 8;
	p = t_data(net, JOB, 0, 0, 0, vals, nvals);
	len = t_build(&p, pkt);

	/* Interleave them so that drifts of the machine hit all alike. */
	res->nvals = nvals;
	for (int r = 0; r < rounds; r++) {
		b->bss->bench_ack = 0;
		tx[r] = bench_run(b, bpf_program__fd(b->progs.bench_tx), net->sw0, pkt, len, n);
		add[r] = bench_run(b, bpf_program__fd(b->progs.bench_add), net->sw0, pkt, len, n);
		es[r] = bench_run(b, e.prog_fd, net->sw0, pkt, len, n);
		/* a fresh stream: the esa one's chunks are not atp's */
		b->bss->bench_n = 0;
		b->bss->bench_ack = 1;
		at[r] = bench_run(b, a.prog_fd, net->sw0, pkt, len, n + n / workers) *
			(workers + 1) / workers;
		b->bss->bench_n = 0;
		if (tx[r] < 0 || add[r] < 0 || es[r] < 0 || at[r] < 0) {
			fprintf(stderr, "esa_bench: BPF_PROG_TEST_RUN failed: %s\n",
				strerror(errno));
			goto out;
		}
	}
	res->tx = bench_fastest(tx, rounds);
	res->add = bench_fastest(add, rounds);
	res->esa = bench_fastest(es, rounds);
	res->atp = bench_fastest(at, rounds);
	if (!check_paths(&e, "esa", nvals, (__u64)rounds * (n / workers), false) &&
	    !check_paths(&a, "atp", nvals, (__u64)rounds * (n / workers), true))
		rc = 0;
out:
	esa_bench_bpf__destroy(b);
	esa_close(&a);
	esa_close(&e);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Aggregate throughput on 1 and 2 cores (bench_cores.h)               */
/* ------------------------------------------------------------------ */

struct cores_cell {
	double	mpps[BC_CPUS];	/* on 1 core, on 2 */
	double	oncpu[BC_CPUS];	/* the same from the threads' time on their CPUs */
	double	both;		/* the share of that 2-core run on both at once */
	double	idle_pct, others_pct;	/* of the machine, over the cell */
	__u64	results;
};

/* The switch's counters of the cell's jobs, summed. */
static void cores_counters(struct esa *e, struct esa_counters *sum)
{
	struct esa_counters c;

	memset(sum, 0, sizeof(*sum));
	for (__u32 job = JOB; job <= BC_JOB2; job++) {
		if (esa_counters_read(e, job, &c))
			continue;
		for (int k = 0; k < __ESA_C_MAX; k++)
			sum->c[k] += c.c[k];
	}
}

/*
 * Every chunk sent completed in the switch and nothing else happened to
 * it; every completion was a result the driver or bc_check_last() checked,
 * and every sum was right.
 */
static int cores_verify(struct esa *e, int kase, int nvals, __u64 chunks,
			__u64 results, __u64 bad, __u64 other)
{
	struct esa_counters c;
	int wrong = 0;

	if (kase == BC_FLOOR) {
		wrong = results || other;
	} else {
		cores_counters(e, &c);
		wrong = c.c[ESA_C_COMPLETED] != chunks || results != chunks ||
			c.c[ESA_C_COLLISION] || c.c[ESA_C_PREEMPT_CAUSED] ||
			c.c[ESA_C_DROP_HEADER] || c.c[ESA_C_DROP_SPOOF] ||
			c.c[ESA_C_DROP_NOROUTE];
		if (wrong)
			fprintf(stderr, "esa_bench: cores %s, values=%d: %llu chunks sent, "
				"%llu completed, %llu results checked, %llu collisions, "
				"%llu preemptions\n", bc_case_names[kase], nvals,
				(unsigned long long)chunks,
				(unsigned long long)c.c[ESA_C_COMPLETED],
				(unsigned long long)results,
				(unsigned long long)c.c[ESA_C_COLLISION],
				(unsigned long long)c.c[ESA_C_PREEMPT_CAUSED]);
	}
	if (bad || other)
		fprintf(stderr, "esa_bench: cores %s, values=%d: %llu wrong sums, %llu "
			"packets made into something else than a result\n",
			bc_case_names[kase], nvals, (unsigned long long)bad,
			(unsigned long long)other);
	return wrong || bad || other ? -1 : 0;
}

/* The driver's lanes and what every rank sends, into switch e (or XDP_TX). */
static int cores_driver(struct esa_bench_bpf *b, struct esa *e, int kase,
			const __s32 *vals)
{
	int target = kase == BC_FLOOR ? bpf_program__fd(b->progs.bench_tx) : e->prog_fd;
	__s32 all[ESA_MAX_VALUES] = {};
	__u32 zero = 0;

	memcpy(all, vals, sizeof(all));
	return bpf_map_update_elem(bpf_map__fd(b->maps.bench_target), &zero, &target,
				   BPF_ANY) ||
	       bpf_map_update_elem(bpf_map__fd(b->maps.bench_vals), &zero, all, BPF_ANY) ||
	       bc_lanes(b, kase);
}

static int cores_cell(struct t_net *net, int kase, int nvals, int workers, __u32 n,
		      int rounds, struct cores_cell *res)
{
	__u64 results = 0, bad = 0, other = 0, sent = 0, b0, i0, b1, i1;
	struct esa_bench_bpf *b = NULL;
	__s32 vals[ESA_MAX_VALUES] = {};
	struct bc_run run = {};
	struct timespec c0, c1;
	struct esa e = {};
	__u8 pkt[4096];
	int rc = -1;

	if (load_switch(net, &e, nvals, workers, ESA_POLICY_ESA, 2))
		return -1;
	b = driver_load(net, &e, nvals, workers);
	/* small enough that workers of them sum exactly in int32 */
	for (int i = 0; i < nvals; i++)
		vals[i] = (i * 2654435761u) >> 8;
	if (!b || cores_driver(b, &e, kase, vals))
		goto out;
	run = (struct bc_run){ .b = b, .pkt = pkt, .n = n,
			       .nvals = nvals, .workers = workers };
	{
		struct t_pkt p = t_data(net, JOB, 0, 0, 0, vals, nvals);

		run.len = t_build(&p, pkt);
	}
	memset(res, 0, sizeof(*res));
	bc_stat(&b0, &i0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	for (int r = 0; r < rounds; r++) {
		for (int k = 1; k <= BC_CPUS; k++) {
			struct bc_rate m;

			if (bc_run_once(&run, net->sw0, k, &m, &results, &bad, &other))
				goto out;
			sent += (__u64)k * run.n;
			if (m.wall > res->mpps[k - 1])
				res->mpps[k - 1] = m.wall;
			/* on 2 cores: from the runs that had both at once, if any */
			if (k > 1 && m.both < BC_BOTH && res->both >= BC_BOTH)
				continue;
			if (m.oncpu > res->oncpu[k - 1] || (k > 1 && m.both >= BC_BOTH &&
							    res->both < BC_BOTH)) {
				res->oncpu[k - 1] = m.oncpu;
				if (k > 1)
					res->both = m.both;
			}
		}
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	bc_stat(&b1, &i1);
	res->idle_pct = bc_idle_pct(b0, i0, b1, i1);
	/* ours: CPU time of this process over the machine's (clock ticks) */
	res->others_pct = 100 - res->idle_pct -
		100.0 * ((c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) * 1e-9) /
		((double)(b1 - b0 + i1 - i0) / sysconf(_SC_CLK_TCK));
	if (res->others_pct < 0)	/* the clocks' granularities differ */
		res->others_pct = 0;
	if (!bc_lane_sums(b, &results, &bad, &other) &&
	    !cores_verify(&e, kase, nvals, sent / workers, results, bad, other))
		rc = 0;
	res->results = results;
out:
	esa_bench_bpf__destroy(b);
	esa_close(&e);
	return rc;
}

/*
 * The throughput table and its summary lines; 0, or -1 if a check failed.
 * Runs of n / BC_SHORTER packets a thread, BC_SHORTER times as many: a run
 * short enough to fit the scheduler's slice more often has both threads on
 * their CPUs throughout on a machine shared with other work.
 */
static int bench_cores(struct t_net *net, int workers, __u32 n, int rounds)
{
	static const int sizes[] = { 256, ESA_FRAME_VALUES };	/* single-buffer */
	struct cores_cell res;
	__u64 b0, i0, b1, i1;

	if (sysconf(_SC_NPROCESSORS_ONLN) < BC_CPUS) {
		printf("\nAggregate throughput on 1 and 2 cores: not measured (one CPU)\n");
		return 0;
	}
	n /= BC_SHORTER;
	n = n < (__u32)workers ? (__u32)workers : n - n % workers;
	rounds *= BC_SHORTER;
	bc_stat(&b0, &i0);
	usleep(1000000);
	bc_stat(&b1, &i1);
	printf("\nAggregate throughput on 1 and 2 cores: threads pinned to CPUs 0 and 1,\n"
	       "each driving %u packets through bench_lane; Mpps by the wall clock of the\n"
	       "whole run, fastest of %d.  apart: each core its own job, at home in its own\n"
	       "half of the pool; shared: both cores take one job's stream, so each chunk's\n"
	       "ranks reach its slot from both; floor: the shared stream into XDP_TX, the\n"
	       "harness alone.  on-CPU: the threads' rates summed, each from its time on\n"
	       "its CPU (the kernel's timer of the run stops while the thread yields it),\n"
	       "on 2 cores from the runs with both threads on their CPUs at once 90%% of\n"
	       "the time or more if any; both: that share for the run shown.\n"
	       "Every result checked.  The machine's idle share in the second before:\n"
	       "%.0f%%; others: the share of the machine that other work took in the cell.\n\n",
	       n, rounds, bc_idle_pct(b0, i0, b1, i1));
	printf("%7s %6s %12s %13s %6s %9s %8s %7s %7s %7s %9s\n", "case", "values",
	       "1 core Mpps", "2 cores Mpps", "scale", "on-CPU 1", "on-CPU 2", "scale",
	       "both %", "idle %", "others %");
	for (int i = 0; i < 2; i++) {
		for (int kase = 0; kase < BC_NCASES; kase++) {
			if (cores_cell(net, kase, sizes[i], workers, n, rounds, &res))
				return -1;
			printf("%7s %6d %12.2f %13.2f %6.2f %9.2f %8.2f %7.2f %7.0f %7.0f %9.0f\n",
			       bc_case_names[kase], sizes[i], res.mpps[0], res.mpps[1],
			       res.mpps[1] / res.mpps[0], res.oncpu[0], res.oncpu[1],
			       res.oncpu[1] / res.oncpu[0], 100 * res.both, res.idle_pct,
			       res.others_pct);
			printf("bench-cores: case=%s values=%d mpps_1=%.2f mpps_2=%.2f scale=%.2f "
			       "oncpu_1=%.2f oncpu_2=%.2f oncpu_scale=%.2f both_pct=%.0f "
			       "results=%llu idle_pct=%.0f others_pct=%.0f\n",
			       bc_case_names[kase], sizes[i], res.mpps[0], res.mpps[1],
			       res.mpps[1] / res.mpps[0], res.oncpu[0], res.oncpu[1],
			       res.oncpu[1] / res.oncpu[0], 100 * res.both,
			       (unsigned long long)res.results, res.idle_pct, res.others_pct);
			fflush(stdout);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The add in user space: scalar (the JIT's loop) and AVX2              */
/* ------------------------------------------------------------------ */

static double ns_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

struct uslot {
	int	lock;		/* as bpf_spin_lock: one word */
	__u64	acc[ESA_FRAME_VALUES] __attribute__((aligned(64)));
};

static void ulock(int *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		;
}

static void uunlock(int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* What the JIT makes of esa_acc_add(): one value a step, no vectors. */
__attribute__((noinline, optimize("no-tree-vectorize")))
static void add_scalar(struct uslot *s, const __u32 *v, int n)
{
	ulock(&s->lock);
	for (int i = 0; i < n; i += 8) {
#pragma GCC unroll 8
		for (int j = 0; j < 8; j++)
			s->acc[i + j] += (__u64)(v[i + j] ^ 0x80000000U);
		__asm__ volatile("" ::: "memory");	/* as the JIT: no fusing */
	}
	uunlock(&s->lock);
}

/* The same with AVX2: 8 values, 2 x 4 accumulators a step. */
__attribute__((noinline, target("avx2")))
static void add_avx2(struct uslot *s, const __u32 *v, int n)
{
	const __m256i sign = _mm256_set1_epi32((int)0x80000000U);

	ulock(&s->lock);
	for (int i = 0; i < n; i += 8) {
		__m256i x = _mm256_xor_si256(_mm256_loadu_si256((const void *)(v + i)), sign);
		__m256i lo = _mm256_cvtepu32_epi64(_mm256_castsi256_si128(x));
		__m256i hi = _mm256_cvtepu32_epi64(_mm256_extracti128_si256(x, 1));
		__m256i *a = (__m256i *)(s->acc + i);

		_mm256_store_si256(a, _mm256_add_epi64(_mm256_load_si256(a), lo));
		_mm256_store_si256(a + 1, _mm256_add_epi64(_mm256_load_si256(a + 1), hi));
	}
	uunlock(&s->lock);
}

/* AVX2 with the vector state saved and restored around it (XSAVE area of
 * the x87, SSE and AVX state), as a kernel's kernel_fpu_begin/end may. */
__attribute__((noinline, target("avx2,xsave")))
static void add_avx2_xsave(struct uslot *s, const __u32 *v, int n, void *area)
{
	_xsave64(area, 7);
	add_avx2(s, v, n);
	_xrstor64(area, 7);
}

/* ns per add of n values, fastest of `rounds`: 8 adds to a slot (a chunk of
 * 8 workers), the next chunk in the next of 4096 slots, as the bench's
 * stream goes through ESA's pool. */
static double user_add(int kind, int n, int rounds)
{
	enum { NSLOTS = 4096, REPS = 40000 };
	static struct uslot slots[NSLOTS];
	static __u32 v[ESA_MAX_VALUES];
	static __u8 area[4096] __attribute__((aligned(64)));
	double best = 1e30;

	for (int i = 0; i < ESA_MAX_VALUES; i++)
		v[i] = (i * 2654435761u) >> 8;
	for (int r = 0; r < rounds; r++) {
		double t = ns_now();

		for (int k = 0; k < REPS; k++) {
			struct uslot *s = &slots[(k / 8) % NSLOTS];

			if (kind == 0)
				add_scalar(s, v, n);
			else if (kind == 1)
				add_avx2(s, v, n);
			else
				add_avx2_xsave(s, v, n, area);
		}
		t = (ns_now() - t) / REPS;
		if (t < best)
			best = t;
	}
	return best;
}

static void bench_user(int rounds)
{
	static const int sizes[] = { 256, ESA_FRAME_VALUES };

	if (!__builtin_cpu_supports("avx2")) {
		printf("\nThe add in user space: not measured (no AVX2 here)\n");
		return;
	}
	printf("\nThe add alone in user space, same slot layout, under a lock, fastest of %d:\n"
	       "%6s %14s %14s %9s %22s\n", rounds, "values", "scalar (JIT)", "AVX2", "speedup",
	       "AVX2 + XSAVE/XRSTOR");
	for (int i = 0; i < 2; i++) {
		int n = sizes[i];
		double sc = user_add(0, n, rounds), av = user_add(1, n, rounds);
		double xs = user_add(2, n, rounds);

		printf("%6d %8.1f ns %8.1f ns %8.2fx %15.1f ns\n", n, sc, av, sc / av, xs);
		printf("bench: user_add values=%d scalar_ns=%.1f avx2_ns=%.1f avx2_xsave_ns=%.1f "
		       "scalar_gelem_s=%.2f avx2_gelem_s=%.2f\n", n, sc, av, xs, n / sc, n / av);
	}
}

int main(int argc, char **argv)
{
	/* the largest single-buffer vector, then a jumbo one (multi-buffer) */
	static const int sizes[] = { 32, 64, 256, ESA_FRAME_VALUES, ESA_MAX_VALUES };
	struct result res[5];
	int workers = 8, rounds = 15, opt, cores_only = 0;
	__u32 n = 96000;
	struct t_net net;

	while ((opt = getopt(argc, argv, "n:r:w:o:C")) != -1) {
		switch (opt) {
		case 'n': n = strtoul(optarg, NULL, 0); break;
		case 'r': rounds = atoi(optarg); break;
		case 'w': workers = atoi(optarg); break;
		case 'o': object = optarg; break;
		case 'C': cores_only = 1; break;
		default:
			fprintf(stderr, "usage: esa_bench [-n PACKETS] [-r ROUNDS] [-w WORKERS] [-o OBJECT] [-C]\n");
			return 2;
		}
	}
	if (rounds < 1 || rounds > 31 || workers < 2 || workers > ESA_MAX_WORKERS - 1 ||
	    n < (__u32)workers) {
		fprintf(stderr, "esa_bench: bad arguments\n");
		return 2;
	}
	/* links that carry the largest vector (2232 values: an 8980-byte IP
	 * packet; the route to the PS checks the MTU) */
	if (esa_netns_setup(&net) ||
	    t_sh("set -e; exec >/dev/null 2>&1\nfor d in sw0 h0 sw1 h1; do ip link set $d mtu 9000; done\n")) {
		fprintf(stderr, "esa_bench: cannot set up a network namespace (root?)\n");
		return 1;
	}
	if (cores_only)
		return bench_cores(&net, workers, n, rounds) ? 1 : 0;
	printf("ESA data plane: ns per data packet under BPF_PROG_TEST_RUN, one core,\n"
	       "fastest of %d runs of %u packets; a job of %d workers, so per chunk 1\n"
	       "claim, %d adds and 1 completion (result multicast with the PS's copy;\n"
	       "under policy atp the sum goes to the PS and its ack frees the slot).\n"
	       "Floors measured in the same run through the same driver.\n\n",
	       rounds, n, workers, workers - 2);
	printf("%6s %11s %11s %9s %8s %9s %8s %9s %12s\n", "values", "bare XDP_TX",
	       "locked add", "ESA", "ESA/add", "ATP", "ESA/ATP", "ESA Mpps",
	       "ESA Gelem/s");
	for (int i = 0; i < 5; i++) {
		if (bench_one(&net, sizes[i], workers, n, rounds, &res[i]))
			return 1;
		printf("%6d %8.1f ns %8.1f ns %6.1f ns %8.2f %6.1f ns %8.2f %9.2f %12.2f\n",
		       sizes[i], res[i].tx, res[i].add, res[i].esa,
		       res[i].esa / res[i].add, res[i].atp, res[i].esa / res[i].atp,
		       1e3 / res[i].esa, sizes[i] / res[i].esa);
		fflush(stdout);
	}
	printf("\nESA's own logic over the add floor, harness (XDP_TX floor) removed: ");
	for (int i = 0; i < 5; i++)
		printf("%s%d values %.2fx", i ? ", " : "", sizes[i],
		       (res[i].esa - res[i].tx) / (res[i].add - res[i].tx));
	printf("\nbench: values=256 esa_ns=%.1f atp_ns=%.1f ratio_vs_atp=%.2f\n",
	       res[2].esa, res[2].atp, res[2].esa / res[2].atp);
	printf("bench: values=256 esa_ns=%.1f floor_add_ns=%.1f ratio=%.2f\n",
	       res[2].esa, res[2].add, res[2].esa / res[2].add);
	printf("bench: values=%d esa_ns=%.1f floor_add_ns=%.1f ratio=%.2f esa_gelem_s=%.2f "
	       "add_gelem_s=%.2f\n", ESA_FRAME_VALUES, res[3].esa, res[3].add,
	       res[3].esa / res[3].add, ESA_FRAME_VALUES / res[3].esa,
	       ESA_FRAME_VALUES / res[3].add);
	printf("bench: jumbo values=%d esa_ns=%.1f floor_add_ns=%.1f ratio=%.2f esa_gelem_s=%.2f "
	       "add_gelem_s=%.2f per_elem_vs_%d=%.2f\n", ESA_MAX_VALUES, res[4].esa, res[4].add,
	       res[4].esa / res[4].add, ESA_MAX_VALUES / res[4].esa, ESA_MAX_VALUES / res[4].add,
	       ESA_FRAME_VALUES, (res[4].esa / ESA_MAX_VALUES) / (res[3].esa / ESA_FRAME_VALUES));
	if (bench_cores(&net, workers, n, rounds))
		return 1;
	bench_user(rounds);
	return 0;
}
