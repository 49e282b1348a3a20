/* SPDX-License-Identifier: GPL-2.0 */
/*
 * esa_jct: the JCT benchmark on the namespace testbed (docs/evaluation.md).
 * Shared by its commands (esa_jct.c), the options (jct_opts.c), a run of
 * one policy (jct_run.c, jct_worker.c, jct_record.c; jct_run.h) and the
 * report and calibration (jct_runfile.c, jct_report.c, jct_plots.c,
 * jct_calib.c; jct_report.h).  The workload is the simulator's
 * (user/sim/workload.c), so the testbed and esa_sim run exactly the same
 * jobs.
 */
#ifndef ESA_JCT_H
#define ESA_JCT_H

#include <stdint.h>
#include <stdio.h>
#include <linux/esa.h>
#include "sim.h"

#define JCT_MAX_JOBS	250	/* job ids 0..249: the switch's and esa-ps's limits */
#define JCT_MAX_HOSTS	200
#define JCT_PS_HOST	250	/* the PS's host number (topo.sh), one PS */
#define JCT_PS_HOST0	201	/* with several (--ps-hosts 0 or N): 201 + k */
#define JCT_MAX_PS	49	/* ... up to host 249 */
#define JCT_MAX_PSPIDS	64
#define JCT_PS_PORT	9000
#define JCT_PORT_BASE	20000	/* worker port: JCT_PORT_BASE + job id */
#define JCT_NPOL	__ESA_POLICY_MAX

/* Everything that defines a run besides the policy: the workload and model
 * parameters (those of esa_sim), and the testbed's own settings. */
struct jct_opts {
	struct sim_params p;
	const char *preset;
	unsigned hosts;		/* worker hosts in the topology */
	unsigned host_stride;	/* job j's rank r on host 1 + (stride j + r) mod
				 * hosts */
	unsigned link_delay_us;	/* the hosts' emulated link delay (libesa's
				 * link_delay_us, esa-ps --link-delay-us): the
				 * testbed's share of prop_us */
	const char *prefix;	/* namespaces /run/netns/PREFIX-hI */
	const char *pin;	/* the switch's pinned maps */
	const char *out;	/* run: result file */
	const char *dir;	/* report: directory of run files */
	int	policy;		/* run: enum esa_policy */
	unsigned rep;		/* run: repetition number (a label) */
	double	sample_ms;	/* slot sampling period */
	double	lead_ms;	/* time from start to the first arrival */
	double	max_run_s;	/* give up a run after this long */
	int	ps_pid[JCT_MAX_PSPIDS];	/* run: the esa-ps's pids, their CPU time */
	int	nps_pid;
	int	noslot;		/* run, switchml: no job ever gets switch
				 * memory (calibration of the PS path) */
	int	inject;		/* run: rank 0 of job 0 sends one wrong element
				 * (the test that the sums are checked) */
	const char *io;		/* run: libesa's transport, udp, xdp or auto
				 * (AF_XDP on each host's eth0, queue 0) */
	unsigned seeds[64];	/* report: the seeds run */
	unsigned nseeds;
	unsigned reps;		/* report: repetitions per seed */
	double	tol[JCT_NPOL];	/* report: per policy, the largest |log(sim /
				 * testbed)| of the average JCT, and of the
				 * median over jobs of each job's JCT */
	int	verbose;
};

/* Words of a job's registration (esactl and esa-ps), worker hosts. */
unsigned jct_host_of(const struct jct_opts *o, unsigned job, unsigned rank);
/* The host of job's PS: the one PS (--ps-hosts 1), the job's own (0), or
 * one of N in turn, as the simulator's ps_hosts. */
unsigned jct_ps_host(const struct jct_opts *o, unsigned job);
/* Parse argv into o; returns optind, or -1 after printing why. */
int jct_parse(struct jct_opts *o, int argc, char **argv, const char *cmd);
void jct_usage(FILE *f);
/* The esa_sim options that reproduce o's workload and model. */
void jct_sim_args(FILE *f, const struct jct_opts *o);
/* How gradients and compute were scaled, one line per model. */
void jct_print_scale(FILE *f, const struct sim_params *p);

int jct_run(struct jct_opts *o);
int jct_report(struct jct_opts *o);
int jct_calib(struct jct_opts *o);

#endif /* ESA_JCT_H */
