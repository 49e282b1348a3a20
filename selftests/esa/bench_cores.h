/* SPDX-License-Identifier: GPL-2.0 */
/*
 * make bench's aggregate throughput on 1 and 2 cores (esa_bench.c): the
 * driver's bench_lane on CPU 0, then on CPUs 0 and 1 at once, one thread
 * pinned to each (BPF_PROG_TEST_RUN runs an XDP program on the calling
 * CPU), in two cases:
 *   apart:  each CPU its own job, the two jobs' homes disjoint halves of
 *           the pool: no slot, tomb or counter line is written by both;
 *   shared: both CPUs take the packets of one job's stream from one
 *           counter, so the ranks of a chunk reach its slot from both CPUs
 *           at once: the slot's lock and accumulators move between them.
 * Packets per second are counted against the wall clock from the moment
 * all threads start to the moment the last ends, fastest of the rounds.
 * Every result is checked (in the driver, and the run's last packet here),
 * and the switch must have completed every chunk of every run, nothing
 * else.  The CPUs are shared with whatever else runs: /proc/stat's idle
 * share is printed beside the numbers.
 */
#ifndef ESA_BENCH_CORES_H
#define ESA_BENCH_CORES_H

#include <pthread.h>
#include <time.h>

#define BC_CPUS		2
#define BC_JOB2		2	/* job 1 is the bench's JOB */
#define BC_SHORTER	32	/* runs that much shorter than the table's, as many more */
#define BC_BOTH		0.9	/* a 2-core run with both on their CPUs 90% of it */
#define BENCH_HDR_OFF	42	/* Ethernet, IPv4, UDP: where ESA's header is */

enum { BC_APART, BC_SHARED, BC_FLOOR, BC_NCASES };

static const char *const bc_case_names[BC_NCASES] = { "apart", "shared", "floor" };

/* Everything the threads of one run share. */
struct bc_run {
	struct esa_bench_bpf	*b;
	const __u8		*pkt;
	__u32			len, n;
	int			nvals, workers;
	int			ready;	/* threads on their CPUs, spinning */
	int			ncpus;
};

struct bc_thread {
	pthread_t	tid;
	struct bc_run	*run;
	int		cpu, rc;
	double		t0, t1;		/* ns, CLOCK_MONOTONIC */
	__u32		ns;		/* per packet while on the CPU (the kernel's) */
	__u64		results, bad, other;	/* of the run's last packet */
};

static double bc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* CPU time of the whole machine from /proc/stat's first line: busy, idle. */
static int bc_stat(__u64 *busy, __u64 *idle)
{
	unsigned long long v[8] = {};
	FILE *f = fopen("/proc/stat", "r");
	int k;

	if (!f)
		return -1;
	k = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
		   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (k != 8)
		return -1;
	*idle = v[3] + v[4];
	*busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
	return 0;
}

/* Share of the machine's CPU time, in %, that was idle between two reads. */
static double bc_idle_pct(__u64 b0, __u64 i0, __u64 b1, __u64 i1)
{
	__u64 t = (b1 - b0) + (i1 - i0);

	return t ? 100.0 * (i1 - i0) / t : 0;
}

/* The run's last packet, which no next run of the driver saw: as it checks. */
static void bc_check_last(struct bc_thread *t, const __u8 *out, __u32 len)
{
	const struct esa_hdr *h = (const void *)(out + BENCH_HDR_OFF);
	const __u32 *v = (const void *)(h + 1);
	const __u32 *want = (const void *)(t->run->pkt + BENCH_HDR_OFF + sizeof(*h));

	if (len < BENCH_HDR_OFF + sizeof(*h) + t->run->nvals * 4 || h->type == ESA_T_DATA)
		return;
	if (h->type != ESA_T_RESULT) {
		t->other++;
		return;
	}
	t->results++;
	for (int i = 0; i < t->run->nvals; i++)
		if (v[i] != want[i] * t->run->workers || (h->flags & ESA_F_OVERFLOW)) {
			t->bad++;
			break;
		}
}

static void *bc_thread_main(void *arg)
{
	struct bc_thread *t = arg;
	struct bc_run *r = t->run;
	struct xdp_md ctx = { .data_end = r->len };
	__u8 in[4096], out[4096];
	cpu_set_t set;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in, .data_size_in = r->len,
		    .data_out = out, .data_size_out = sizeof(out),
		    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = r->n);

	CPU_ZERO(&set);
	CPU_SET(t->cpu, &set);
	memcpy(in, r->pkt, r->len);
	ctx.ingress_ifindex = t->rc;	/* the port, passed in rc */
	t->rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	/* Spin, not sleep, until all are there: they start on their CPUs at
	 * once, not each when the scheduler wakes it. */
	__atomic_add_fetch(&r->ready, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&r->ready, __ATOMIC_ACQUIRE) < r->ncpus)
		;
	if (t->rc || sched_getcpu() != t->cpu) {
		t->rc = -1;
		return NULL;
	}
	t->t0 = bc_now();
	t->rc = bpf_prog_test_run_opts(bpf_program__fd(r->b->progs.bench_lane), &o);
	t->t1 = bc_now();
	t->ns = o.duration;
	if (!t->rc)
		bc_check_last(t, out, o.data_size_out);
	return NULL;
}

/* What one run measured. */
struct bc_rate {
	double	wall;		/* Mpps, all packets over the wall clock */
	double	oncpu;		/* Mpps, the threads' rates on their CPUs summed */
	double	both;		/* the least share of the run that every thread
				 * was on its CPU at once (0..1) */
};

/*
 * One run of n packets a thread on CPUs 0..ncpus-1; 0, or -1 on failure.
 * The kernel's timer of a run stops while its thread yields the CPU, so
 * the on-CPU rate leaves out the time other work took; the threads' times
 * on their CPUs, d_i, within a wall time w overlap at least
 * sum(d_i) - (ncpus - 1) w.
 */
static int bc_run_once(struct bc_run *r, int ifindex, int ncpus, struct bc_rate *rate,
		       __u64 *results, __u64 *bad, __u64 *other)
{
	struct bc_thread t[BC_CPUS] = {};
	double t0 = 1e300, t1 = 0, on = 0, dmax = 0;
	int rc = 0;

	memset(rate, 0, sizeof(*rate));
	r->ready = 0;
	r->ncpus = ncpus;
	for (int c = 0; c < ncpus; c++) {
		t[c] = (struct bc_thread){ .run = r, .cpu = c, .rc = ifindex };
		if (pthread_create(&t[c].tid, NULL, bc_thread_main, &t[c])) {
			fprintf(stderr, "esa_bench: cannot start a thread\n");
			exit(1);	/* the others spin at the start */
		}
	}
	for (int c = 0; c < ncpus; c++) {
		pthread_join(t[c].tid, NULL);
		rc |= t[c].rc;
		t0 = t[c].t0 < t0 ? t[c].t0 : t0;
		t1 = t[c].t1 > t1 ? t[c].t1 : t1;
		*results += t[c].results;
		*bad += t[c].bad;
		*other += t[c].other;
		rate->oncpu += t[c].ns ? 1e3 / t[c].ns : 0;
		on += (double)t[c].ns * r->n;
		dmax = (double)t[c].ns * r->n > dmax ? (double)t[c].ns * r->n : dmax;
	}
	if (rc) {
		fprintf(stderr, "esa_bench: a thread was not on its CPU or its run failed\n");
		return -1;
	}
	rate->wall = (double)ncpus * r->n * 1e3 / (t1 - t0);
	on -= (ncpus - 1) * (t1 - t0);
	rate->both = on > 0 && dmax > 0 ? on / dmax : 0;
	if (rate->both > 1)	/* the kernel's timer and ours differ a little */
		rate->both = 1;
	return 0;
}

/* Each CPU's lane: its job (and port), or the shared stream. */
static int bc_lanes(struct esa_bench_bpf *b, int kase)
{
	int ncpu = libbpf_num_possible_cpus();
	struct bench_lane *l;
	__u32 zero = 0;
	int rc;

	if (ncpu < 1)
		return -1;
	l = calloc(ncpu, sizeof(*l));
	if (!l)
		return -1;
	for (int c = 0; c < ncpu; c++) {
		__u16 job = kase == BC_APART && c == 1 ? BC_JOB2 : JOB;

		l[c].job = job;
		l[c].worker_port = htons(T_WORKER_PORT + job);
		l[c].shared = kase != BC_APART;
	}
	rc = bpf_map_update_elem(bpf_map__fd(b->maps.bench_lanes), &zero, l, BPF_ANY);
	free(l);
	return rc;
}

/* The lanes' checks, summed over the CPUs. */
static int bc_lane_sums(struct esa_bench_bpf *b, __u64 *results, __u64 *bad,
			__u64 *other)
{
	int ncpu = libbpf_num_possible_cpus();
	struct bench_lane *l = calloc(ncpu > 0 ? ncpu : 1, sizeof(*l));
	__u32 zero = 0;
	int rc;

	if (!l || ncpu < 1)
		return -1;
	rc = bpf_map_lookup_elem(bpf_map__fd(b->maps.bench_lanes), &zero, l);
	for (int c = 0; !rc && c < ncpu; c++) {
		*results += l[c].results;
		*bad += l[c].bad;
		*other += l[c].other;
	}
	free(l);
	return rc;
}

#endif /* ESA_BENCH_CORES_H */
