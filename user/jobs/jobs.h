/* SPDX-License-Identifier: GPL-2.0 */
/*
 * esa-jobs's files (esa_jobs.c says what it does).  Top down, each calling
 * only those below it:
 *
 *   esa_jobs.c     main(): the jobs' threads, their end (jobs[], njobs,
 *                  all_done)
 *   jobs_report.c  the progress line, the report, --metrics-file
 *   jobs_worker.c  a worker's thread: its allreduces, each result checked
 *   jobs_tensor.c  the tensors and the reference sums they are checked
 *                  against (struct ref)
 *   jobs_args.c    the options and the jobs' words, checked with libesa
 *                  before anything runs (the g_* settings, sw_addr,
 *                  only_job, only_rank, g_stop_file), die()
 */
#ifndef ESA_JOBS_H
#define ESA_JOBS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "esa.h"

#define MAXJOBS		64
#define MAXW		64

struct worker;

/* The sums every rank must get, for one iteration (two kept: see ref_get). */
struct ref {
	int	iter;		/* -1: none */
	double	*sum;		/* exact (double) sums, or int64 as double */
	float	*absmax;	/* float32: per scale block, over all ranks */
	bool	*bad;		/* float32: the block has a NaN (never here) */
};

struct job {
	int	id, n;
	size_t	elems;
	int	iters, dtype;
	int	block, headroom, nvals;
	/* libesa settings, split once here: the workers' threads share them;
	 * up to 64 given, and a run number drawn here */
	char	*key[65], *val[65];
	int	nkv;
	struct worker *w[MAXW];
	pthread_mutex_t lock;
	struct ref ref[2];
	int	running;	/* workers of this process not done */
	int	started;	/* the furthest iteration a worker began, or -1 */
	int	stop_at;	/* --stop-file seen: iterations 0..stop_at-1 run */
	double	t0, t_end;
	/* results */
	atomic_int errors;
	atomic_int warned;	/* a worker's warning printed (once a job) */
	double	worst;		/* largest float error / bound */
	int	rc;		/* first error code */
	char	err[256];	/* ... and its worker's reason */
};

struct worker {
	struct job *job;
	int	rank;
	char	local[64], netns[256];
	char	sw[64];		/* its switch (two levels: its leaf); "": -s */
	bool	mine;		/* run by this process */
	pthread_t th;
	esa_worker *ew;
	atomic_uint_fast64_t done_ppm;	/* progress, millionths */
	double	comm;		/* seconds inside allreduce */
	double	t_done;
	struct esa_stats st;
	int	rc;
	char	err[256];
};

/* esa_jobs.c */
extern struct job jobs[MAXJOBS];
extern int njobs;
extern atomic_int all_done;

/* jobs_args.c: the options */
extern const char *sw_addr;
extern int g_values, g_iters, g_dtype, g_linger;
extern size_t g_elems;
extern uint64_t g_seed;
extern bool g_progress, g_json, g_quiet, g_verbose;
extern const char *g_metrics;	/* --metrics-file PATH */
extern int only_job, only_rank;
extern const char *g_stop_file;

void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* The options; returns the index of the first job word. */
int parse_options(int argc, char **argv);
/* The jobs' words into jobs[]; their number. */
int parse_jobs(int argc, char **argv);
/* Check each job's settings with libesa now, and learn what the checks need. */
void setup_job(struct job *j);

/* jobs_tensor.c */
void gen(const struct job *j, int iter, int rank, void *buf);
struct ref *ref_get(struct job *j, int iter);
size_t check(struct job *j, const struct ref *r, const void *out, double *worst);

/* jobs_worker.c */
void *worker_main(void *arg);

/* jobs_report.c */
void *progress_main(void *arg);
void report(void);
void write_metrics(const char *path);

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

#endif /* ESA_JOBS_H */
