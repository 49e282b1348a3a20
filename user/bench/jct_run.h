/* SPDX-License-Identifier: GPL-2.0 */
/*
 * esa_jct run's insides, shared by its files: the run and its schedule
 * (jct_run.c), the workers (jct_worker.c), what a run records: CPU time,
 * the slot samples and the run file (jct_record.c).  jct.h is the whole
 * benchmark's.
 */
#ifndef ESA_JCT_RUN_H
#define ESA_JCT_RUN_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "esa.h"
#include "loader.h"
#include "registry.h"
#include "jct.h"

/* Wall-clock seconds (CLOCK_MONOTONIC). */
static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Sleep until t (now_s()'s clock). */
static inline void sleep_until(double t)
{
	struct timespec ts;

	if (t <= now_s())
		return;
	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - ts.tv_sec) * 1e9);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

enum { J_PENDING = 0, J_STARTED, J_REGISTERED, J_DONE, J_DELETED };

struct job;

/* A worker: a thread of this process with its libesa worker. */
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

/* A job of the workload: its schedule, registration and workers. */
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

/* A run: the workload, the switch, the jobs, the lock, the slot samples. */
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

/* The run: one per process.  jct_run.c sets it up and runs the schedule;
 * the workers and the sampler read it, the shared parts under R.lock. */
extern struct run R;

/* The highest priority job s stamps: its registered max-prio. */
static inline unsigned top_prio(const struct sim_params *p, const struct sim_job_spec *s)
{
	unsigned first = sim_prio_of(p->prio, s, 0);
	unsigned last = sim_prio_of(p->prio, s, s->chunks * s->iters - 1);

	return first > last ? first : last;
}

/* jct_worker.c: a worker's thread (arg: its struct wk) */
void *jct_worker_main(void *arg);

/* jct_record.c */
/* The CPU counters at the start of the run (the first registration). */
void jct_cpu_start(void);
/* The slot sampler's thread: every sample_ms while R.sampling. */
void *jct_sampler_main(void *arg);
/* The run file: the run, CPU, transport, utilisation, jobs, counters,
 * samples. */
void jct_write_run(FILE *f, double makespan, int ok);

#endif /* ESA_JCT_RUN_H */
