/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * esa_sim's front end, shared by its files: the command line (esa_sim.c),
 * the comparison of the policies and its output (compare.c), the sweep
 * (sweep.c).  The engine is behind sim.h.
 */
#ifndef ESA_SIM_FRONT_H
#define ESA_SIM_FRONT_H

#include <stdio.h>
#include <time.h>
#include "sim.h"

#define NPOL	__ESA_POLICY_MAX
#define MAXLIST	32

/* Wall-clock seconds (progress lines, the wall_s column). */
static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* compare.c: each policy run over the repetitions (seeds seed .. seed + reps - 1) */
struct pol_agg {
	int	ran;
	int	unfinished;
	double	*jct;		/* pooled over repetitions */
	unsigned njct;
	double	avg, p95;
	double	sum_avg;	/* sum of per-rep averages */
	double	util_agg, util_held, util_occ, util_useful;
	double	ps_share, ps_load;
	uint64_t preempt, aged, collide, resend, orphan, ps_overlap, events;
	uint64_t data_rx;
	double	wall;
	struct sim_result last;	/* last repetition, for the time series */
};

struct cmp {
	struct pol_agg p[NPOL];
	unsigned reps;
	double	sp_atp_min, sp_atp_max, sp_swml_min, sp_swml_max;
	struct sim_workload wl;	/* last repetition's workload */
	int	failed;
};

int cmp_run(const struct sim_params *base, unsigned polmask, unsigned reps,
	    struct cmp *c);
void cmp_free(struct cmp *c);
/* A policy's average JCT over esa's (NaN if either did not run). */
double cmp_speedup(const struct cmp *c, int pol);
/* The last line: jct: esa=<s> atp=<s> switchml=<s> speedup_vs_... */
void cmp_summary_line(FILE *f, const struct cmp *c);
void cmp_print_header(const struct sim_params *p, const struct cmp *c, const char *preset);
void cmp_print_table(const struct cmp *c);
void cmp_print_counters(const struct cmp *c);
void cmp_print_csv(const struct cmp *c, const struct sim_params *p);
/* Per-job JCTs' CDF and the slot utilisation over time: CSV, or gnuplot
 * data (gp); 0 or -1 (errno). */
int cmp_write_cdf(const char *path, const struct cmp *c, int gp);
int cmp_write_ts(const char *path, const struct cmp *c, unsigned pool, int gp);

/* sweep.c */
/*
 * A grid of pool size x load (what decides contention is the pool per
 * concurrent job), then one factor at a time around the base point: number
 * of jobs, priority policy, window and host latency.
 */
enum { D_JOBS, D_PRIO, D_WINDOW, D_PROP, NDIM };

struct sweep {
	double	pool[MAXLIST], load[MAXLIST];
	int	npool, nload;
	double	v[NDIM][MAXLIST];
	int	n[NDIM];
	const char *out;
};

void sweep_defaults(struct sweep *sw);
/* The sweep: files in sw->out; 0, 1 if some jobs did not finish, -1. */
int sweep_run(const struct sim_params *base, unsigned polmask, unsigned reps,
	      const struct sweep *sw);

#endif /* ESA_SIM_FRONT_H */
