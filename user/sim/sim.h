/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * esa_sim: a discrete-event simulator of in-network aggregation on one
 * switch, or on racks (leaves under a spine, two levels), shared by many
 * training jobs.  Each switch decides every packet's fate with the data
 * plane's own code (esa_policy.h, esa_switch.h) and keeps its slots in the
 * data plane's struct esa_slot, so the simulator and the XDP program
 * follow one rule book.  See docs/simulator.md.
 */
#ifndef ESA_SIM_H
#define ESA_SIM_H

#include <stdint.h>
#include <stdio.h>
#include <linux/esa.h>
#include "esa_switch.h"
#include "esa_prio.h"

/* Simulated time in picoseconds: integer, so runs are bit-for-bit
 * reproducible.  2^64 ps is 213 days.
 */
typedef uint64_t stime_t;
#define T_NS	1000ULL
#define T_US	1000000ULL
#define T_MS	1000000000ULL
#define T_S	1000000000000ULL

/* las and srsf levels (esa_prio.h): 16 per doubling of 64 chunks, 255 down */
#define SIM_PRIO_QUANTUM	64
#define SIM_PRIO_STEPS		16

#define SIM_NMODELS	3
#define SIM_MAX_RACKS	64
#define SIM_MAX_WCHOICE	8

struct sim_model {
	const char *name;
	double	params;		/* gradient elements (int32 each) */
	double	compute_ms;	/* one iteration's compute, full scale */
};
extern const struct sim_model sim_models[SIM_NMODELS];

struct sim_params {
	/* hosts and links */
	double	link_gbps;	/* worker <-> switch, each direction */
	double	ps_link_gbps;	/* PS <-> switch */
	double	prop_us;	/* one-way propagation, host <-> switch */
	double	switch_mpps;	/* switch packet service rate; 0: line rate */
	double	ps_mpps;	/* PS packet processing rate */
	double	worker_mpps;	/* worker send rate; 0: link rate */
	double	ps_copy_cost;	/* PS cost of a result copy or hold (packets) */
	unsigned ps_hosts;	/* PS hosts shared round robin; 0: one per job */
	double	loss;		/* loss probability per worker link traversal */
	int	loss_ps;	/* apply the loss to PS links too */
	/* switch */
	unsigned pool;		/* aggregator slots */
	unsigned nvals;		/* int32 values per packet (and slot) */
	double	stale_ms;	/* ageing limit of idle partials; 0: never */
	unsigned ps_copy;	/* the switch copies every result to the PS */
	unsigned ps_sums;	/* the PS's sums go through the switch (SUM) */
	/* workers */
	unsigned window;	/* outstanding chunks per worker */
	unsigned window_min;	/* AIMD's floor (esa_cc.h); 0: fixed window */
	double	timeout_us;	/* first resend timeout */
	double	timeout_max_us;	/* cap of the doubling backoff */
	/* workload */
	unsigned njobs;
	double	load;		/* offered concurrency (mean jobs active if
				 * each ran alone), sets the arrival rate */
	double	rate;		/* jobs/s; overrides load when > 0 */
	unsigned wchoice[SIM_MAX_WCHOICE];	/* workers per job, drawn */
	unsigned nwchoice;
	unsigned iter_min, iter_max;
	double	scale;		/* gradient size multiplier */
	double	compute_scale;	/* compute time multiplier (on top of scale) */
	double	straggle;	/* mean extra compute per worker-iteration,
				 * exponential, as a fraction */
	unsigned model_mask;	/* bit m: draw sim_models[m] */
	int	prio;		/* enum esa_prio_policy */
	unsigned swml_regions;	/* switchml: the pool's fixed equal regions;
				 * 0: max(ceil(load), pool / window) */
	unsigned home;		/* esa, atp: every job's home of this many
				 * slots, placed at arrival by
				 * esa_home_place(); 0: hash(job) + seq */
	uint64_t seed;
	/* racks: leaves under a spine, every job's ranks in blocks of
	 * rack_workers on consecutive racks from a seeded first one */
	unsigned racks;		/* leaves; 0: one switch, no racks */
	unsigned rack_workers;	/* a job's ranks per rack; 0: 4 */
	unsigned levels;	/* 2: a switch at every leaf and the spine;
				 * 1 (flat): the spine alone, leaves route;
				 * 0: 2 */
	double	uplink_gbps;	/* leaf <-> spine, each way; 0: link_gbps */
	double	ts_bin_us;	/* utilisation time series bin; 0: auto */
	double	max_sim_s;	/* give up (livelock guard) after this */
};

struct sim_job_spec {
	stime_t	arrival;
	unsigned model;
	unsigned nworkers;
	unsigned iters;
	unsigned chunks;	/* per iteration */
	stime_t	compute;	/* mean compute time per iteration */
	uint8_t	sprio;		/* static priority, 1..255 */
	uint64_t seed;		/* per-worker compute draws */
	double	ideal_s;	/* JCT alone, no contention (estimate) */
};

struct sim_workload {
	unsigned njobs;
	struct sim_job_spec *job;
	double	rate;		/* jobs/s actually used */
	double	mean_ideal_s;
};

/* Outcome of a DATA packet at the switch: every one lands in one bucket. */
enum sim_fate {
	SIM_F_ABSORBED = 0,	/* claim, reclaim, add, preempt, age */
	SIM_F_COMPLETED,	/* complete, hold */
	SIM_F_TO_PS,		/* collide, tomb, resend, flush, noslot */
	SIM_F_DUPLICATE,
	SIM_F_DROPPED,		/* job not active */
	SIM_F_UP,		/* a leaf's sum of its ranks, sent up */
	__SIM_F_MAX,
};

struct sim_result {
	int	policy;		/* enum esa_policy */
	int	finished;	/* every job completed */
	unsigned njobs;
	double	*jct;		/* per job, seconds (malloc'ed) */
	double	avg_jct, p95_jct, max_jct;
	double	makespan;	/* first arrival to last completion, s */
	uint64_t events;

	uint64_t c[__ESA_C_MAX];	/* the data plane's counters */
	uint64_t act[__ESA_A_MAX];	/* decisions taken */
	uint64_t fate[__SIM_F_MAX];	/* DATA packets by outcome */

	uint64_t data_tx;	/* DATA packets sent by workers */
	uint64_t data_rx;	/* DATA packets processed by the switch */
	uint64_t resends;	/* ... of which resends */
	uint64_t lost;		/* packets lost on links */
	uint64_t lost_data;	/* ... of which DATA */
	uint64_t sw_fallback;	/* PARTIAL + COLLISION packets to the PS */
	uint64_t ps_rx;		/* packets processed by PS hosts */
	uint64_t ps_late;	/* ... for jobs already finished */
	uint64_t ps_merged;	/* partials/collisions merged at the PS */
	uint64_t ps_dup;	/* ... already contained */
	uint64_t ps_overlap;	/* ... overlapping, not mergeable: dropped */
	uint64_t ps_answer;	/* results sent to one worker (resend) */
	uint64_t ps_fetch;	/* FETCH rounds (PS asks workers for a sum) */
	uint64_t ps_fetched;	/* ... answers that reached the PS */
	uint64_t fetch_answered;	/* FETCHes workers answered */
	uint64_t ps_overtaken;	/* copy/hold found ranks merged at the PS */
	uint64_t ps_overrun;	/* PS ring entry lost before done (bug) */
	uint64_t sw_complete;	/* chunks completed in the switch */
	uint64_t ps_complete;	/* chunks completed by the PS */
	uint64_t redundant;	/* completions of chunks already complete */
	uint64_t chunks_total;	/* chunks of all jobs */
	uint64_t chunks_done;	/* distinct chunks completed */
	uint64_t results_expected;	/* chunks x workers */
	uint64_t results_accepted;
	uint64_t results_dup;
	uint64_t orphan_claims;	/* claims by chunks with ranks at the PS */
	uint64_t bad_complete;	/* switch completion with a partial bitmap */
	uint64_t bad_sum;	/* PS sum with a rank missing or twice */
	uint64_t acct_errors;	/* accounting disagrees with slot states */
	uint64_t timer_fires;

	/* shares of pool-time over the makespan */
	double	util_agg;	/* slot busy with a live aggregation */
	double	util_held;	/* slot held (atp) waiting for the PS ack */
	double	util_occ;	/* unavailable to others: busy, held, or
				 * reserved region (switchml) */
	double	util_useful;	/* busy with an aggregation that completed
				 * in the switch */
	/* time series (mean slots per bin) */
	unsigned nbins;
	double	bin_s;
	double	*ts_agg, *ts_held, *ts_occ;
	unsigned slots;		/* of all switches: pool x switches */

	/* racks: c[] by level, and the leaf-spine links */
	uint64_t c_leaf[__ESA_C_MAX], c_spine[__ESA_C_MAX];
	uint64_t up_complete;	/* leaves' sums of their ranks sent up */
	uint64_t up_redundant;	/* ... of a chunk the leaf had sent up */
	uint64_t uplink_pkts;	/* packets on leaf-spine links, both ways */
	double	uplink_bytes;
	/* per job (malloc'ed, njobs each) */
	double	*job_uplink;	/* bytes its packets put on those links */
	uint64_t *job_spine_rx;	/* its packets the spine's switch took */
	unsigned *job_racks;	/* racks its ranks are in */
};

/* params.c */
void sim_defaults(struct sim_params *p);
int sim_preset(struct sim_params *p, const char *name);
const char *sim_prio_name(int prio);
int sim_prio_parse(const char *s);
const char *sim_policy_name(int policy);
int sim_policy_parse(const char *s);
/*
 * params.c: the model's and the workload's options (--pool ... --straggle),
 * one parser for esa_sim and esa_jct.  sim_param_options() appends them to
 * a front end's own getopt_long table (freed by the caller); getopt_long
 * then returns SIM_OPT_BASE + k for them, which sim_param_set() takes
 * (0, or -1 after a one-line reason on stderr prefixed with prog).
 */
#define SIM_OPT_BASE	0x1000
struct option;
struct option *sim_param_options(const struct option *own);
int sim_param_set(struct sim_params *p, int opt, const char *arg, const char *prog);
int sim_param_model(const char *name);
int sim_param_ulist(const char *s, unsigned *v, unsigned max, unsigned lo, unsigned hi);
/* workload.c */
int sim_workload_gen(const struct sim_params *p, struct sim_workload *w);
void sim_workload_free(struct sim_workload *w);
void sim_swml_regions(const struct sim_params *p, const struct sim_workload *w,
		      unsigned *nreg, unsigned *regsize);
unsigned sim_job_window(const struct sim_params *p, const struct sim_workload *w,
			int policy);
uint8_t sim_prio_of(int prio, const struct sim_job_spec *j, uint32_t seq);
stime_t sim_compute_draw(const struct sim_params *p,
			 const struct sim_job_spec *j, unsigned rank,
			 unsigned iter);
double sim_pkt_bytes(unsigned nvals);
uint64_t sim_mix64(uint64_t x);
/* Probe: the switch alone, for directed packet tests. */
struct sim_probe;
enum { SIM_TO_WORKER = 1, SIM_TO_PS, SIM_TO_SWITCH };
#define SIM_A_NOSLOT	__ESA_A_MAX	/* "action" of a job without memory */
struct sim_probe_out {
	int	to;		/* SIM_TO_* */
	unsigned dst;		/* worker rank for SIM_TO_WORKER */
	uint8_t	type, reason, prio, flags;
	uint16_t job, rank;
	uint32_t seq;
	uint64_t bitmap;
};
/* sim_engine.c */
int sim_run(const struct sim_params *p, const struct sim_workload *w,
	    int policy, struct sim_result *r);
void sim_result_free(struct sim_result *r);
/* sim_probe.c */
struct sim_probe *sim_probe_new(const struct sim_params *p,
				const struct sim_workload *w, int policy);
int sim_probe_data(struct sim_probe *pr, double t_us, unsigned job,
		   unsigned rank, uint32_t seq, uint8_t prio, int resend,
		   struct sim_probe_out *out, int max, int *nout);
/* With racks: the sum a leaf sends up of the ranks under rank's leaf. */
int sim_probe_leaf(struct sim_probe *pr, double t_us, unsigned job,
		   unsigned rank, uint32_t seq, uint8_t prio,
		   struct sim_probe_out *out, int max, int *nout);
int sim_probe_ack(struct sim_probe *pr, double t_us, unsigned job,
		  uint32_t seq, struct sim_probe_out *out, int max, int *nout);
const struct esa_slot *sim_probe_slot(struct sim_probe *pr, unsigned job,
				      uint32_t seq);
/* The tombstone kind (enum esa_tomb_kind) of job's chunk seq. */
int sim_probe_tomb(struct sim_probe *pr, unsigned job, uint32_t seq);
void sim_probe_end_job(struct sim_probe *pr, double t_us, unsigned job);
const struct sim_result *sim_probe_result(const struct sim_probe *pr);
void sim_probe_free(struct sim_probe *pr);
double sim_quantile(const double *v, unsigned n, double q);
/* multirack.c (esa_sim --multirack): flat against two levels */
struct sim_mr_opts {
	unsigned polmask;	/* bit p: run policy p */
	int	quiet;
};
int sim_multirack(const struct sim_params *p, const struct sim_mr_opts *o);

#endif /* ESA_SIM_H */
