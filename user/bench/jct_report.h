/* SPDX-License-Identifier: GPL-2.0 */
/*
 * esa_jct report's and calib's insides, shared by their files: the run
 * files read back (jct_runfile.c), the report (jct_report.c) and its plot
 * data (jct_plots.c), the calibration (jct_calib.c).  jct.h is the whole
 * benchmark's.
 */
#ifndef ESA_JCT_REPORT_H
#define ESA_JCT_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "jct.h"

#define NPOL	JCT_NPOL

/* jct_runfile.c: a run file (esa_jct run's, jct_record.c) read back */
/* One job's line. */
struct rjob {
	unsigned id, workers, iters, chunks;
	double	arrival, jct, wait_region, rtt_us, comm;
	char	model[16];
	int	ok;
	uint64_t tx, resends, rx_ps, bad;
};

/* One run: its line, CPU, utilisation, jobs, the switch's total
 * counters, the slot samples. */
struct runf {
	int	present, ok;
	unsigned seed, rep, njobs, regions, regsize;
	double	makespan, u_agg, u_held, u_occ;
	double	cpu_idle, cpu_self, cpu_ps, cpu_others;
	struct rjob *job;
	uint64_t tot[__ESA_C_MAX];
	double	*ts_t;
	unsigned *ts_b, *ts_h, *ts_o;
	size_t	nts;
};

/* Read path's run of njobs jobs into r (r->present then); 0 or -errno. */
int jct_read_run(const char *path, struct runf *r, unsigned njobs);
void jct_runf_free(struct runf *r);
/* DATA packets the switch saw, and those it sent on to the PS (partials and
 * collisions of every reason), from its counters: esa_sim's data_rx and
 * sw_fallback. */
uint64_t jct_data_rx(const uint64_t *c);
uint64_t jct_fallback(const uint64_t *c);

/* jct_report.c: per policy, the testbed's runs or the simulator's pooled */
struct agg {
	unsigned runs, failed;
	double	*jct;
	unsigned njct;
	double	avg, p95;
	double	run_min, run_max;	/* per-run average JCT */
	double	u_agg, u_held, u_occ, ps_share;
	double	preempt, collide, tomb, resend, held, aged;
	uint64_t bad;
	double	idle, others, others_max;
};

/*
 * One report: the workload of every seed, every run file read, and the
 * testbed's and the simulator's aggregates.  Per policy, seed and job, the
 * JCT of the testbed (the mean over repetitions) and of the simulator.
 */
struct report {
	const struct jct_opts *o;
	unsigned ns, nr, nj;
	struct agg tb[NPOL], sm[NPOL];
	struct runf *runs;
	double	*tbjob, *smjob;
	struct sim_workload *wls;
	double	sp_atp_min, sp_atp_max, sp_sw_min, sp_sw_max;
	int	failed_runs, missing, mismatch;
};

static inline struct runf *run_of(struct report *R, int pol, unsigned s, unsigned r)
{
	return &R->runs[((size_t)pol * R->ns + s) * R->nr + r];
}

static inline double *tb_job(struct report *R, int pol, unsigned s, unsigned i)
{
	return &R->tbjob[((size_t)pol * R->ns + s) * R->nj + i];
}

static inline double *sm_job(struct report *R, int pol, unsigned s, unsigned i)
{
	return &R->smjob[((size_t)pol * R->ns + s) * R->nj + i];
}

/* For qsort(): doubles in ascending order. */
static inline int jct_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* jct_plots.c: the plot data into --dir: jct_cdf.dat, jobs.dat,
 * util_ts.dat, meta.gp (the scripts in user/bench/plots draw them). */
void jct_write_plots(struct report *R);

#endif /* ESA_JCT_REPORT_H */
