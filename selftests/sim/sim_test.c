// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Checks of the simulator (user/sim) that can fail: determinism,
 * conservation of packets, chunks and results, equal JCTs without
 * contention, atp holding slots longer than esa, preemption only where the
 * policy allows it, priorities, JCT lower bounds, switchml regions, ageing,
 * the testbed preset, and racks (two levels against flat).  Prints TAP.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "sim.h"
#include "../tap.h"

static const int pols[] = { ESA_POLICY_ESA, ESA_POLICY_ATP, ESA_POLICY_SWITCHML };
#define NPOLS 3

/* A small contended setup: 16 jobs on a 128-slot pool. */
static void small(struct sim_params *p)
{
	sim_defaults(p);
	p->njobs = 16;
	p->load = 8;
	p->scale = 0.001;
	p->iter_min = 3;
	p->iter_max = 6;
	p->pool = 128;
	p->window = 64;
	p->seed = 7;
}

static int run(const struct sim_params *p, int pol, struct sim_result *r)
{
	struct sim_workload w;
	int rc;

	if (sim_workload_gen(p, &w))
		return -1;
	rc = sim_run(p, &w, pol, r);
	sim_workload_free(&w);
	return rc;
}

/* Every DATA packet in one bucket, every chunk complete exactly once, every
 * worker accepting every result exactly once.
 */
static int conserved(const struct sim_result *r, int strict, char *why, size_t n)
{
	uint64_t fates = 0;

	for (int f = 0; f < __SIM_F_MAX; f++)
		fates += r->fate[f];
	if (!r->finished)
		return snprintf(why, n, "not finished"), 0;
	if (fates != r->data_rx)
		return snprintf(why, n, "fates %llu != data_rx %llu",
				(unsigned long long)fates,
				(unsigned long long)r->data_rx), 0;
	if (r->data_tx != r->data_rx + r->lost_data)
		return snprintf(why, n, "data_tx %llu != rx %llu + lost %llu",
				(unsigned long long)r->data_tx,
				(unsigned long long)r->data_rx,
				(unsigned long long)r->lost_data), 0;
	if (r->chunks_done != r->chunks_total ||
	    r->sw_complete + r->ps_complete != r->chunks_total)
		return snprintf(why, n, "chunks %llu/%llu (switch %llu, ps %llu)",
				(unsigned long long)r->chunks_done,
				(unsigned long long)r->chunks_total,
				(unsigned long long)r->sw_complete,
				(unsigned long long)r->ps_complete), 0;
	if (r->results_accepted != r->results_expected)
		return snprintf(why, n, "results %llu/%llu",
				(unsigned long long)r->results_accepted,
				(unsigned long long)r->results_expected), 0;
	if (r->fate[SIM_F_COMPLETED] != r->sw_complete)
		return snprintf(why, n, "completing packets %llu != switch completions %llu",
				(unsigned long long)r->fate[SIM_F_COMPLETED],
				(unsigned long long)r->sw_complete), 0;
	/* (DATA of a job deleted meanwhile, a late resend, is dropped: a
	 * fate like the others.)
	 */
	if (r->bad_complete || r->ps_overrun || r->bad_sum || r->acct_errors)
		return snprintf(why, n, "bad_complete %llu overrun %llu bad_sum %llu "
				"acct_errors %llu",
				(unsigned long long)r->bad_complete,
				(unsigned long long)r->ps_overrun,
				(unsigned long long)r->bad_sum,
				(unsigned long long)r->acct_errors), 0;
	if (strict && r->redundant)
		return snprintf(why, n, "%llu redundant completions",
				(unsigned long long)r->redundant), 0;
	snprintf(why, n, "%llu DATA, %llu chunks (%llu in switch), %llu results",
		 (unsigned long long)r->data_rx, (unsigned long long)r->chunks_total,
		 (unsigned long long)r->sw_complete,
		 (unsigned long long)r->results_accepted);
	return 1;
}

/* ------------------------------------------------------------------ */
/* Directed packets through the switch mirror (like the golden tests)   */
/* ------------------------------------------------------------------ */

static const char *const act_names[__ESA_A_MAX + 1] = {
	"claim", "reclaim", "add", "complete", "hold", "duplicate", "preempt",
	"age", "collide", "tomb", "flush", "resend", "wait", "resend_done", "noslot",
};

struct probe_ctx {
	struct sim_probe *pr;
	struct sim_workload w;
	struct sim_params p;
	char	err[512];
	int	good;
};

/* Jobs with the given worker counts, registered at time 0. */
static int probe_init(struct probe_ctx *c, int policy, unsigned pool,
		      unsigned regions, const unsigned *nw, unsigned njobs)
{
	memset(c, 0, sizeof(*c));
	small(&c->p);
	c->p.njobs = njobs;
	c->p.pool = pool;
	c->p.swml_regions = regions;
	c->p.window = 4;
	c->p.stale_ms = 1;
	if (sim_workload_gen(&c->p, &c->w))
		return -1;
	for (unsigned i = 0; i < njobs; i++) {
		c->w.job[i].nworkers = nw[i];
		c->w.job[i].arrival = 0;
	}
	c->pr = sim_probe_new(&c->p, &c->w, policy);
	c->good = !!c->pr;
	return c->pr ? 0 : -1;
}

static void probe_fini(struct probe_ctx *c)
{
	sim_probe_free(c->pr);
	sim_workload_free(&c->w);
}

#define MAXOUT 16

/*
 * Feed one DATA packet; expect action `want` and outputs described by
 * `spec`: a list of "W<rank>" (result to a worker) and "P<type>/<reason>"
 * (to the PS), in order, space separated.
 */
static const struct sim_probe_out *feed(struct probe_ctx *c, double t,
					unsigned job, unsigned rank,
					uint32_t seq, uint8_t prio, int resend,
					int want, const char *spec)
{
	static struct sim_probe_out out[MAXOUT];
	char got[256] = "", *g = got;
	int n, act;

	if (!c->good)
		return out;
	act = sim_probe_data(c->pr, t, job, rank, seq, prio, resend, out,
			     MAXOUT, &n);
	for (int i = 0; i < n && i < MAXOUT; i++) {
		if (out[i].to == SIM_TO_WORKER)
			g += sprintf(g, "%sW%u", i ? " " : "", out[i].dst);
		else
			g += sprintf(g, "%sP%u/%u", i ? " " : "", out[i].type,
				     out[i].reason);
	}
	if (act != want || strcmp(got, spec)) {
		snprintf(c->err, sizeof(c->err),
			 "job %u rank %u seq %u prio %u%s at %gus: %s [%s], want %s [%s]",
			 job, rank, seq, prio, resend ? " resend" : "", t,
			 act >= 0 ? act_names[act] : "none", got,
			 act_names[want], spec);
		c->good = 0;
	}
	return out;
}

static void check(struct probe_ctx *c, int cond, const char *what)
{
	if (c->good && !cond) {
		snprintf(c->err, sizeof(c->err), "%s", what);
		c->good = 0;
	}
}

static char spec[64];
static const char *ps(int type, int reason)
{
	snprintf(spec, sizeof(spec), "P%d/%d", type, reason);
	return spec;
}

static void test_probe_esa(void)
{
	static const unsigned nw[] = { 3, 2 };
	const struct sim_probe_out *o;
	const struct esa_slot *sl;
	struct probe_ctx c;
	char want[96];

	probe_init(&c, ESA_POLICY_ESA, 1, 0, nw, 2);
	sl = sim_probe_slot(c.pr, 0, 5);
	feed(&c, 0, 0, 0, 5, 10, 0, ESA_A_CLAIM, "");
	check(&c, sl->state == ESA_SLOT_BUSY && sl->job == 0 && sl->seq == 5 &&
	      sl->bitmap == 1 && sl->prio == 10 && sl->nranks == 1, "claim: slot state");
	feed(&c, 1, 0, 0, 5, 10, 0, ESA_A_DUPLICATE, "");
	feed(&c, 2, 0, 1, 5, 10, 0, ESA_A_ADD, "");
	/* Equal priority: no preemption, the chunk goes to its PS and
	 * leaves a tombstone that steers its other packets there too.
	 */
	o = feed(&c, 3, 1, 0, 9, 10, 0, ESA_A_COLLIDE,
		 ps(ESA_T_COLLISION, ESA_R_COLLISION));
	check(&c, o->job == 1 && o->seq == 9 && o->bitmap == 1, "collide: packet");
	feed(&c, 4, 1, 1, 9, 10, 0, ESA_A_TOMB, ps(ESA_T_COLLISION, ESA_R_TOMB));
	/* Higher priority: the partial {0,1} of job 0 goes to its PS. */
	o = feed(&c, 5, 1, 0, 10, 20, 0, ESA_A_PREEMPT,
		 ps(ESA_T_PARTIAL, ESA_R_PREEMPT));
	check(&c, o->job == 0 && o->seq == 5 && o->bitmap == 3 && o->prio == 10 &&
	      o->rank == ESA_RANK_NONE, "preempt: evicted partial");
	check(&c, sl->job == 1 && sl->seq == 10 && sl->prio == 20 && sl->bitmap == 1,
	      "preempt: slot taken");
	feed(&c, 6, 0, 2, 5, 10, 0, ESA_A_TOMB, ps(ESA_T_COLLISION, ESA_R_TOMB));
	/* Completion: result to both workers and the PS's copy; free. */
	snprintf(want, sizeof(want), "W0 W1 %s", ps(ESA_T_RESULT, ESA_R_NONE));
	o = feed(&c, 7, 1, 1, 10, 20, 0, ESA_A_COMPLETE, want);
	check(&c, o[0].bitmap == 3 && o[2].bitmap == 3 && sl->state == ESA_SLOT_FREE &&
	      sim_probe_tomb(c.pr, 1, 10) == ESA_TOMB_DONE &&
	      sim_probe_tomb(c.pr, 0, 5) == ESA_TOMB_PS,
	      "complete: sum and tombstone");
	feed(&c, 8, 1, 1, 10, 20, 0, ESA_A_DUPLICATE, "");
	/* A resend of a chunk the switch completed: to the PS, DONE. */
	feed(&c, 9, 1, 0, 10, 20, 1, ESA_A_RESEND_DONE, ps(ESA_T_COLLISION, ESA_R_DONE));
	/* A resend never starts a partial. */
	feed(&c, 10, 0, 0, 11, 10, 1, ESA_A_RESEND, ps(ESA_T_COLLISION, ESA_R_RESEND));
	check(&c, sl->state == ESA_SLOT_FREE, "resend: slot left free");
	/* A young partial waits for its peers: a resend of a rank in it is
	 * dropped, one of a new rank joins it. */
	feed(&c, 11, 0, 0, 12, 10, 0, ESA_A_CLAIM, "");
	feed(&c, 12, 0, 0, 12, 10, 1, ESA_A_WAIT, "");
	feed(&c, 13, 0, 1, 12, 10, 1, ESA_A_ADD, "");
	check(&c, sl->state == ESA_SLOT_BUSY && sl->bitmap == 3,
	      "wait: a young partial keeps its slot");
	/* Flush: idle past the ageing limit (1 ms), a resend sends it on. */
	o = feed(&c, 1014, 0, 0, 12, 10, 1, ESA_A_FLUSH, ps(ESA_T_PARTIAL, ESA_R_FLUSH));
	check(&c, o->bitmap == 3 && sl->state == ESA_SLOT_FREE, "flush: partial, slot freed");
	feed(&c, 1015, 0, 2, 12, 10, 0, ESA_A_TOMB, ps(ESA_T_COLLISION, ESA_R_TOMB));
	feed(&c, 1016, 0, 0, 13, 10, 0, ESA_A_CLAIM, "");
	o = feed(&c, 2017, 0, 1, 13, 10, 1, ESA_A_FLUSH, ps(ESA_T_PARTIAL, ESA_R_FLUSH));
	check(&c, o->bitmap == 3, "flush: the resent rank is added");
	/* Ageing: an idle partial older than stale_ms goes to its PS. */
	feed(&c, 2020, 0, 0, 14, 200, 0, ESA_A_CLAIM, "");
	feed(&c, 2500, 1, 0, 20, 5, 0, ESA_A_COLLIDE, ps(ESA_T_COLLISION, ESA_R_COLLISION));
	o = feed(&c, 3100, 1, 0, 21, 5, 0, ESA_A_AGE, ps(ESA_T_PARTIAL, ESA_R_AGED));
	check(&c, o->job == 0 && o->seq == 14, "age: evicted partial");
	/* A finished job's slot is reclaimed silently. */
	sim_probe_end_job(c.pr, 3200, 1);
	feed(&c, 3201, 0, 0, 15, 1, 0, ESA_A_RECLAIM, "");
	ok(c.good, "directed esa: claim, add, duplicate, collide, tomb, preempt, "
	   "complete, resend, resend of a done chunk, wait, flush, age, reclaim%s%s",
	   c.good ? "" : ": ", c.err);
	probe_fini(&c);
}

static void test_probe_atp(void)
{
	static const unsigned nw[] = { 2, 2 };
	const struct sim_probe_out *o;
	struct sim_probe_out out[MAXOUT];
	const struct esa_slot *sl;
	struct probe_ctx c;
	int n;

	probe_init(&c, ESA_POLICY_ATP, 1, 0, nw, 2);
	sl = sim_probe_slot(c.pr, 0, 1);
	feed(&c, 0, 0, 0, 1, 10, 0, ESA_A_CLAIM, "");
	/* Never preempts. */
	feed(&c, 1, 1, 0, 7, 200, 0, ESA_A_COLLIDE, ps(ESA_T_COLLISION, ESA_R_COLLISION));
	/* The sum goes to the PS alone; the slot is held. */
	o = feed(&c, 2, 0, 1, 1, 10, 0, ESA_A_HOLD, ps(ESA_T_RESULT, ESA_R_HOLD));
	check(&c, o->bitmap == 3 && sl->state == ESA_SLOT_HELD, "hold: slot held");
	feed(&c, 3, 1, 0, 8, 200, 0, ESA_A_COLLIDE, ps(ESA_T_COLLISION, ESA_R_COLLISION));
	feed(&c, 4, 0, 0, 1, 10, 0, ESA_A_DUPLICATE, "");
	feed(&c, 5, 0, 0, 1, 10, 1, ESA_A_RESEND, ps(ESA_T_COLLISION, ESA_R_RESEND));
	/* The ack frees it and is multicast to the workers (no PS copy). */
	if (c.good) {
		sim_probe_ack(c.pr, 6, 0, 1, out, MAXOUT, &n);
		check(&c, n == 2 && out[0].to == SIM_TO_WORKER && out[1].to == SIM_TO_WORKER &&
		      out[0].type == ESA_T_RESULT && sl->state == ESA_SLOT_FREE &&
		      sim_probe_tomb(c.pr, 0, 1) == ESA_TOMB_DONE,
		      "ack: slot freed, result to both workers only");
	}
	feed(&c, 7, 1, 0, 9, 200, 0, ESA_A_CLAIM, "");
	feed(&c, 8, 1, 1, 9, 200, 0, ESA_A_HOLD, ps(ESA_T_RESULT, ESA_R_HOLD));
	/* A hold whose ack never comes is reclaimed once stale. */
	feed(&c, 1200, 0, 0, 2, 10, 0, ESA_A_RECLAIM, "");
	ok(c.good, "directed atp: no preemption, hold, ack frees, stale hold reclaimed%s%s",
	   c.good ? "" : ": ", c.err);
	probe_fini(&c);
}

static void test_probe_switchml(void)
{
	static const unsigned nw[] = { 2, 2, 2 };
	const struct esa_slot *a, *b;
	struct probe_ctx c;

	/* Two regions of 2 slots; the third job has none. */
	probe_init(&c, ESA_POLICY_SWITCHML, 4, 2, nw, 3);
	a = sim_probe_slot(c.pr, 0, 0);
	b = sim_probe_slot(c.pr, 1, 0);
	check(&c, a && b && a != b && sim_probe_slot(c.pr, 0, 2) == a &&
	      !sim_probe_slot(c.pr, 2, 0), "regions: disjoint, seq modulo region");
	feed(&c, 0, 0, 0, 0, 10, 0, ESA_A_CLAIM, "");
	feed(&c, 1, 1, 0, 0, 200, 0, ESA_A_CLAIM, "");
	/* Its own next chunk into a busy slot: collides (window > region). */
	feed(&c, 2, 0, 0, 2, 200, 0, ESA_A_COLLIDE, ps(ESA_T_COLLISION, ESA_R_COLLISION));
	feed(&c, 3, 2, 0, 0, 10, 0, SIM_A_NOSLOT, ps(ESA_T_COLLISION, ESA_R_NOSLOT));
	/* Job 0 ends: its region goes to job 2, which waited. */
	sim_probe_end_job(c.pr, 4, 0);
	check(&c, sim_probe_slot(c.pr, 2, 0) == a, "handover: job 2 gets job 0's region");
	feed(&c, 5, 2, 0, 0, 10, 0, ESA_A_RECLAIM, "");
	ok(c.good, "directed switchml: static regions, no sharing, no memory -> PS, "
	   "handover%s%s", c.good ? "" : ": ", c.err);
	probe_fini(&c);
}

/*
 * Two levels, at a spine whose job has no memory (switchml, one region,
 * taken by the other job): a leaf's sum goes to the PS as the PARTIAL it
 * is, its ranks and rank none, as the XDP program sends it; a COLLISION
 * is one rank's only.
 */
static void test_probe_noslot_leaf(void)
{
	static const unsigned nw[] = { 4, 4 };
	struct sim_probe_out out[MAXOUT];
	struct probe_ctx c;
	int n = 0, act = -1;

	memset(&c, 0, sizeof(c));
	small(&c.p);
	c.p.njobs = 2;
	c.p.pool = 4;
	c.p.swml_regions = 1;
	c.p.racks = 2;
	c.p.rack_workers = 2;
	c.p.levels = 2;
	c.good = !sim_workload_gen(&c.p, &c.w);
	for (unsigned i = 0; c.good && i < 2; i++) {
		c.w.job[i].nworkers = nw[i];
		c.w.job[i].arrival = 0;
	}
	c.pr = c.good ? sim_probe_new(&c.p, &c.w, ESA_POLICY_SWITCHML) : NULL;
	check(&c, c.pr && sim_probe_slot(c.pr, 0, 0) && !sim_probe_slot(c.pr, 1, 0),
	      "setup: job 0 has the spine's region, job 1 none");
	if (c.good)
		act = sim_probe_leaf(c.pr, 1, 1, 2, 7, 3, out, MAXOUT, &n);
	check(&c, act == SIM_A_NOSLOT && n == 1 && out[0].to == SIM_TO_PS,
	      "noslot: the leaf's sum to the PS");
	check(&c, out[0].type == ESA_T_PARTIAL && out[0].reason == ESA_R_NOSLOT &&
	      out[0].rank == ESA_RANK_NONE && out[0].bitmap == 0xc &&
	      !(out[0].flags & ESA_F_LEAF),
	      "noslot: a PARTIAL of the leaf's ranks (0xc), rank none");
	ok(c.good, "directed switchml, two levels: a spine without memory sends a "
	   "leaf's sum to the PS as a PARTIAL%s%s", c.good ? "" : ": ", c.err);
	if (c.good)
		diag("noslot: type %u reason %u rank %u bitmap 0x%llx", out[0].type,
		     out[0].reason, out[0].rank, (unsigned long long)out[0].bitmap);
	sim_probe_free(c.pr);
	sim_workload_free(&c.w);
}

static void test_prio(void)
{
	struct sim_job_spec j = { .chunks = 500, .iters = 10, .sprio = 77 };
	int good = 1;
	uint8_t prev_l = 255, prev_s = 0;

	for (uint32_t seq = 0; seq < 5000; seq++) {
		uint8_t st = sim_prio_of(ESA_PRIO_STATIC, &j, seq);
		uint8_t l = sim_prio_of(ESA_PRIO_LAS, &j, seq);
		uint8_t s = sim_prio_of(ESA_PRIO_SRSF, &j, seq);
		uint8_t f = sim_prio_of(ESA_PRIO_FLAT, &j, seq);

		if (st != 77 || f != 1 || !l || !s || l > prev_l || s < prev_s ||
		    l != sim_prio_of(ESA_PRIO_LAS, &j, seq))
			good = 0;
		prev_l = l;
		prev_s = s;
	}
	ok(good && sim_prio_of(ESA_PRIO_LAS, &j, 0) == 255 &&
	   sim_prio_of(ESA_PRIO_LAS, &j, 4999) < 200 &&
	   sim_prio_of(ESA_PRIO_SRSF, &j, 4999) == 255,
	   "priorities: static fixed, las falls and srsf rises with the chunk, all in 1..255");
	/* 255 - floor(16 log2(1 + n / 64)), as libesa stamps them with
	 * quantum=64 prio_steps=16 prio_max=255 (lib_test checks the same) */
	ok(sim_prio_of(ESA_PRIO_LAS, &j, 32) == 246 && sim_prio_of(ESA_PRIO_LAS, &j, 64) == 239 &&
	   sim_prio_of(ESA_PRIO_LAS, &j, 192) == 223 && sim_prio_of(ESA_PRIO_SRSF, &j, 5000 - 193) == 223,
	   "priorities: las and srsf levels are esa_prio.h's, 16 per doubling of 64 chunks");
}

static void test_workload(void)
{
	struct sim_params p;
	struct sim_workload a, b, c;
	double mean;

	small(&p);
	sim_workload_gen(&p, &a);
	sim_workload_gen(&p, &b);
	p.seed++;
	sim_workload_gen(&p, &c);
	ok(!memcmp(a.job, b.job, a.njobs * sizeof(*a.job)) &&
	   memcmp(a.job, c.job, a.njobs * sizeof(*a.job)),
	   "workload: same seed, same jobs; another seed, other jobs");
	sim_workload_free(&a);
	sim_workload_free(&b);
	sim_workload_free(&c);

	sim_defaults(&p);
	p.njobs = 4000;
	sim_workload_gen(&p, &a);
	mean = (double)a.job[a.njobs - 1].arrival / T_S / (a.njobs - 1);
	ok(fabs(mean * a.rate - 1) < 0.1 &&
	   fabs(a.rate * a.mean_ideal_s / p.load - 1) < 1e-9,
	   "workload: Poisson arrivals at load/mean-alone-JCT (mean gap %.3g s, 1/rate %.3g s)",
	   mean, 1 / a.rate);
	sim_workload_free(&a);
}

static int same_result(const struct sim_result *a, const struct sim_result *b)
{
	return a->njobs == b->njobs &&
	       !memcmp(a->jct, b->jct, a->njobs * sizeof(double)) &&
	       !memcmp(a->c, b->c, sizeof(a->c)) &&
	       !memcmp(a->act, b->act, sizeof(a->act)) &&
	       a->events == b->events && a->util_agg == b->util_agg &&
	       a->util_occ == b->util_occ;
}

static void test_determinism(void)
{
	struct sim_params p;

	small(&p);
	for (int i = 0; i < NPOLS; i++) {
		struct sim_result a, b;
		int ra = run(&p, pols[i], &a), rb = run(&p, pols[i], &b);

		ok(!ra && !rb && same_result(&a, &b),
		   "determinism: %s, same seed, identical JCTs, counters and event count",
		   sim_policy_name(pols[i]));
		sim_result_free(&a);
		sim_result_free(&b);
	}
}

static void test_conservation(void)
{
	struct sim_params p;
	char why[256];

	small(&p);
	p.prio = ESA_PRIO_STATIC;
	for (int i = 0; i < NPOLS; i++) {
		struct sim_result r;
		int rc = run(&p, pols[i], &r);

		ok(!rc && conserved(&r, 1, why, sizeof(why)),
		   "conservation: %s under contention: %s", sim_policy_name(pols[i]), why);
		sim_result_free(&r);
	}
	/* Loss on worker links: lost DATA, lost results, resends, flushes. */
	small(&p);
	p.loss = 0.01;
	p.timeout_us = 100;
	p.timeout_max_us = 1000;
	for (int i = 0; i < NPOLS; i++) {
		struct sim_result r;
		int rc = run(&p, pols[i], &r);

		ok(!rc && conserved(&r, 0, why, sizeof(why)) && r.lost_data > 0 &&
		   r.resends > 0,
		   "conservation: %s with 1%% loss on worker links: %s, %llu lost, %llu resends",
		   sim_policy_name(pols[i]), why, (unsigned long long)r.lost,
		   (unsigned long long)r.resends);
		sim_result_free(&r);
	}
}

/*
 * Loss on PS links too: a sum that completed in the switch can lose the
 * PS's copy and a worker's result both.  Only FETCH (the PS asks the other
 * workers for it) lets such a chunk finish; without it the job hangs.
 */
static void test_fetch(void)
{
	struct sim_params p;
	char why[256];

	small(&p);
	p.loss = 0.01;
	p.loss_ps = 1;
	p.timeout_us = 100;
	p.timeout_max_us = 1000;
	for (int i = 0; i < NPOLS; i++) {
		struct sim_result r;
		int rc = run(&p, pols[i], &r);
		int need = pols[i] != ESA_POLICY_ATP;	/* atp's PS holds every sum */

		ok(!rc && conserved(&r, 0, why, sizeof(why)) &&
		   (!need || r.ps_fetched > 0),
		   "fetch: %s with 1%% loss on all links: %s, %llu FETCH rounds, %llu answered",
		   sim_policy_name(pols[i]), why, (unsigned long long)r.ps_fetch,
		   (unsigned long long)r.ps_fetched);
		sim_result_free(&r);
	}
}

/* No contention: a pool far larger than all windows, jobs far apart in it. */
static void test_no_contention(void)
{
	struct sim_result r[NPOLS];
	struct sim_params p;
	struct sim_workload w;
	double e, a, s, rt, iters = 0;
	int good = 1;

	small(&p);
	p.pool = 1 << 20;
	p.njobs = 8;
	for (int i = 0; i < NPOLS; i++) {
		if (run(&p, pols[i], &r[i]))
			good = 0;
		if (r[i].c[ESA_C_COLLISION] || r[i].c[ESA_C_PREEMPT_CAUSED] ||
		    r[i].resends || r[i].sw_fallback || r[i].ps_complete)
			good = 0;
	}
	ok(good, "no contention: no collision, preemption, resend or PS fallback in any policy");
	e = r[0].avg_jct;
	a = r[1].avg_jct;
	s = r[2].avg_jct;
	diag("no contention: esa %.6f atp %.6f switchml %.6f s", e, a, s);
	ok(fabs(s / e - 1) < 1e-3,
	   "no contention: switchml JCT equals esa within 0.1%% (%.5f)", s / e);
	/*
	 * atp delivers each sum one PS round trip later (switch -> PS -> ack
	 * -> switch): the last chunks of every iteration wait that much more.
	 */
	sim_workload_gen(&p, &w);
	for (unsigned k = 0; k < w.njobs; k++)
		iters += w.job[k].iters;
	iters /= w.njobs;
	sim_workload_free(&w);
	rt = 2 * p.prop_us * 1e-6 + 2 * sim_pkt_bytes(p.nvals) * 8 / (p.ps_link_gbps * 1e9) +
	     2 / (p.ps_mpps * 1e6);
	ok(a > e && (a - e) / iters < 1.5 * rt,
	   "no contention: atp JCT above esa by less than 1.5 PS round trips per iteration "
	   "(%.3g us vs %.3g us)", (a - e) / iters * 1e6, rt * 1e6);
	for (int i = 0; i < NPOLS; i++)
		sim_result_free(&r[i]);
}

static void test_hold(void)
{
	struct sim_result re, ra;
	struct sim_params p;
	double he, ha;

	small(&p);
	run(&p, ESA_POLICY_ESA, &re);
	run(&p, ESA_POLICY_ATP, &ra);
	/* Mean slot-time per chunk completed in the switch. */
	he = (re.util_agg + re.util_held) * re.makespan / re.sw_complete;
	ha = (ra.util_agg + ra.util_held) * ra.makespan / ra.sw_complete;
	ok(re.util_held == 0 && ra.util_held > 0 && ra.c[ESA_C_HELD] == ra.sw_complete &&
	   ra.c[ESA_C_ACK] >= ra.sw_complete,
	   "contention: atp holds every switch-completed slot until the ack, esa none "
	   "(held share %.4f)", ra.util_held);
	ok(ha > he && ra.util_occ > re.util_occ,
	   "contention: atp occupies slots longer than esa (%.3g vs %.3g slot-us per chunk)",
	   ha * p.pool * 1e6, he * p.pool * 1e6);
	sim_result_free(&re);
	sim_result_free(&ra);
}

static void test_preempt(void)
{
	struct sim_params p;
	struct sim_result r[NPOLS], f;
	int good;

	small(&p);
	p.prio = ESA_PRIO_STATIC;
	for (int i = 0; i < NPOLS; i++)
		run(&p, pols[i], &r[i]);
	p.prio = ESA_PRIO_FLAT;
	run(&p, ESA_POLICY_ESA, &f);
	good = r[0].c[ESA_C_PREEMPT_CAUSED] > 0 && !r[1].c[ESA_C_PREEMPT_CAUSED] &&
	       !r[2].c[ESA_C_PREEMPT_CAUSED] && !f.c[ESA_C_PREEMPT_CAUSED] &&
	       r[0].c[ESA_C_PREEMPT_CAUSED] == r[0].act[ESA_A_PREEMPT];
	ok(good, "preemption: only esa with distinct priorities preempts (%llu), "
	   "never atp, switchml or esa with flat priorities",
	   (unsigned long long)r[0].c[ESA_C_PREEMPT_CAUSED]);
	for (int i = 0; i < NPOLS; i++)
		sim_result_free(&r[i]);
	sim_result_free(&f);
}

/* Two identical jobs on a one-slot pool: the higher priority wins in esa. */
static void test_priority_wins(void)
{
	struct sim_params p;
	struct sim_workload w;
	struct sim_result r;
	int rc;

	small(&p);
	p.njobs = 2;
	p.pool = 4;
	p.window = 4;
	p.prio = ESA_PRIO_STATIC;
	p.straggle = 0.2;	/* partials wait: the jobs meet in the slots */
	sim_workload_gen(&p, &w);
	w.job[1] = w.job[0];
	w.job[0].sprio = 10;
	w.job[1].sprio = 200;
	rc = sim_run(&p, &w, ESA_POLICY_ESA, &r);
	ok(!rc && r.jct[1] < r.jct[0] && r.c[ESA_C_PREEMPT_CAUSED] > 0,
	   "priority: of two identical jobs sharing 4 slots, the higher priority finishes first "
	   "under esa (%.4f < %.4f ms)", r.jct[1] * 1e3, r.jct[0] * 1e3);
	sim_result_free(&r);
	sim_workload_free(&w);
}

static void test_lower_bound(void)
{
	struct sim_params p;
	struct sim_workload w;
	double pkt;
	int good = 1;

	small(&p);
	sim_workload_gen(&p, &w);
	pkt = sim_pkt_bytes(p.nvals) * 8 / (p.link_gbps * 1e9);
	for (int i = 0; i < NPOLS; i++) {
		struct sim_result r;

		if (sim_run(&p, &w, pols[i], &r))
			good = 0;
		for (unsigned k = 0; k < w.njobs; k++) {
			const struct sim_job_spec *j = &w.job[k];
			double lb = j->iters * ((double)j->compute / T_S +
						j->chunks * pkt + 4 * p.prop_us * 1e-6);

			if (r.jct[k] < lb)
				good = 0;
		}
		sim_result_free(&r);
	}
	ok(good, "every job's JCT is at least its compute plus serialisation plus latency");
	sim_workload_free(&w);
}

/*
 * A switchml worker's window is its region's size from the job's start,
 * also while the job waits for a region (libesa's window is fixed when
 * the worker opens; esa_jct sets it from sim_job_window()): asking for a
 * window of 64 or of the region's 4 runs the same jobs the same way.
 */
static void test_switchml_window(void)
{
	struct sim_params p;
	struct sim_workload w;
	struct sim_result a, b;
	int rc;

	small(&p);
	p.pool = 16;
	p.swml_regions = 4;
	if (sim_workload_gen(&p, &w)) {
		ok(0, "switchml window: workload");
		return;
	}
	rc = sim_run(&p, &w, ESA_POLICY_SWITCHML, &a);
	p.window = 4;
	rc |= sim_run(&p, &w, ESA_POLICY_SWITCHML, &b);
	ok(!rc && a.c[ESA_C_NOSLOT] > 0 && a.avg_jct == b.avg_jct &&
	   a.resends == b.resends && a.c[ESA_C_NOSLOT] == b.c[ESA_C_NOSLOT],
	   "switchml: a job waiting for a region keeps its region's window "
	   "(window 64: %.4f ms, %llu to the PS without memory; window 4: %.4f ms, %llu)",
	   a.avg_jct * 1e3, (unsigned long long)a.c[ESA_C_NOSLOT], b.avg_jct * 1e3,
	   (unsigned long long)b.c[ESA_C_NOSLOT]);
	sim_result_free(&a);
	sim_result_free(&b);
	sim_workload_free(&w);
}

static void test_switchml(void)
{
	struct sim_params p;
	struct sim_result r;
	char why[256];
	int rc;

	/* Regions as large as the window: no job ever meets another. */
	small(&p);
	p.pool = 64 * 16;
	p.swml_regions = 16;
	rc = run(&p, ESA_POLICY_SWITCHML, &r);
	ok(!rc && !r.c[ESA_C_COLLISION] && !r.c[ESA_C_NOSLOT] && !r.sw_fallback &&
	   conserved(&r, 1, why, sizeof(why)),
	   "switchml: with a window-sized region each, no collisions and no PS traffic");
	sim_result_free(&r);
	/* One region for many jobs: the others run through the PS until it
	 * is handed over, and everything still completes.
	 */
	p.swml_regions = 1;
	rc = run(&p, ESA_POLICY_SWITCHML, &r);
	ok(!rc && r.c[ESA_C_NOSLOT] > 0 && r.sw_complete > 0 &&
	   conserved(&r, 0, why, sizeof(why)),
	   "switchml: one region, jobs without memory go to the PS (%llu) and all complete",
	   (unsigned long long)r.c[ESA_C_NOSLOT]);
	sim_result_free(&r);
	test_switchml_window();
}

static void test_ageing(void)
{
	struct sim_params p;
	struct sim_result r, n;
	char why[256];
	int rc, rn;

	/* Lost packets leave partials behind; with resends far away only
	 * ageing (by another chunk wanting the slot) clears them.
	 */
	small(&p);
	p.loss = 0.005;
	p.stale_ms = 0.02;
	p.timeout_us = 2000;
	p.timeout_max_us = 2000;
	rc = run(&p, ESA_POLICY_ATP, &r);
	p.stale_ms = 0;
	rn = run(&p, ESA_POLICY_ATP, &n);
	ok(!rc && !rn && r.c[ESA_C_AGED] > 0 && !n.c[ESA_C_AGED] &&
	   conserved(&r, 0, why, sizeof(why)),
	   "ageing: stale partials are evicted (%llu) only when ageing is on",
	   (unsigned long long)r.c[ESA_C_AGED]);
	sim_result_free(&r);
	sim_result_free(&n);
}

static void test_testbed(void)
{
	struct sim_params p;
	char why[256];
	int good = 1;

	sim_preset(&p, "testbed");
	for (int i = 0; i < NPOLS; i++) {
		struct sim_result r;

		if (run(&p, pols[i], &r) || !conserved(&r, 0, why, sizeof(why)))
			good = 0;
		diag("testbed %s: avg JCT %.3f s", sim_policy_name(pols[i]), r.avg_jct);
		sim_result_free(&r);
	}
	ok(good, "testbed preset: every policy completes and conserves");
}

/* ------------------------------------------------------------------ */
/* Racks: leaves under a spine                                          */
/* ------------------------------------------------------------------ */

/* small() on 4 racks of 2 ranks a job: jobs of 2 stay in one rack. */
static void racks(struct sim_params *p, unsigned levels)
{
	small(p);
	p->racks = 4;
	p->rack_workers = 2;
	p->levels = levels;
	p->wchoice[0] = 2;
	p->wchoice[1] = 4;
	p->wchoice[2] = 6;
	p->nwchoice = 3;
}

/* Expected leaf sums sent up: each chunk of a job across racks, per rack. */
static uint64_t ups_expected(const struct sim_params *p)
{
	struct sim_workload w;
	uint64_t n = 0;
	unsigned per = p->rack_workers;

	sim_workload_gen(p, &w);
	for (unsigned i = 0; i < w.njobs; i++) {
		unsigned r = (w.job[i].nworkers + per - 1) / per;

		if (r > 1)
			n += (uint64_t)w.job[i].chunks * w.job[i].iters * r;
	}
	sim_workload_free(&w);
	return n;
}

/*
 * Two levels, every policy at both levels: every chunk completes once
 * (in the switches, or at the PS), each leaf sends up each chunk's sum of
 * its ranks at most once, and no box completes a sum with a rank missing
 * or twice.  With ample pools every chunk completes in the switches: once
 * per rack it spans at the leaves, then once at the spine.
 */
static void test_racks_once(void)
{
	struct sim_params p;
	char why[256];

	for (int ample = 0; ample < 2; ample++) {
		racks(&p, 2);
		if (ample)
			p.pool = 1 << 16;
		for (int i = 0; i < NPOLS; i++) {
			struct sim_result r;
			int rc = run(&p, pols[i], &r), good;

			good = !rc && conserved(&r, ample, why, sizeof(why)) &&
			       !r.up_redundant && r.up_complete > 0;
			if (ample)
				good = good && r.sw_complete == r.chunks_total &&
				       !r.ps_complete && !r.sw_fallback &&
				       r.up_complete == ups_expected(&p) &&
				       r.fate[SIM_F_UP] == r.up_complete;
			ok(good, "racks, two levels, %s, %s pools: %s; %llu leaf sums up "
			   "(%llu twice), %llu chunks done at the top, %llu by the PS",
			   sim_policy_name(pols[i]), ample ? "ample" : "contended", why,
			   (unsigned long long)r.up_complete,
			   (unsigned long long)r.up_redundant,
			   (unsigned long long)r.sw_complete,
			   (unsigned long long)r.ps_complete);
			sim_result_free(&r);
		}
	}
}

/* A job inside one rack never reaches the spine's switch; others do. */
static void test_racks_local(void)
{
	struct sim_params p;

	for (unsigned levels = 1; levels <= 2; levels++) {
		struct sim_result r;
		unsigned local = 0, across = 0, bad = 0;

		racks(&p, levels);
		run(&p, ESA_POLICY_ESA, &r);
		for (unsigned i = 0; i < r.njobs; i++) {
			int on_spine = r.job_spine_rx[i] > 0;

			local += r.job_racks[i] == 1;
			across += r.job_racks[i] > 1;
			/* flat: every job is the spine's */
			if (on_spine != (levels == 1 || r.job_racks[i] > 1))
				bad++;
		}
		ok(r.finished && local && across && !bad,
		   "racks, %s: %u jobs inside one rack, %u across; %s (%u wrong)",
		   levels == 1 ? "flat" : "two levels", local, across,
		   levels == 1 ? "the spine takes every job's packets" :
		   "only the jobs across racks reach the spine's switch", bad);
		sim_result_free(&r);
	}
}

/*
 * Bytes on the leaf-spine links, one job alone with ample memory: flat,
 * each rank's packet crosses its rack's link both ways; on two levels one
 * sum a rack goes up and one result comes down.  Two levels divide them
 * by the job's ranks per rack, exactly; a job inside one rack sends only
 * the PS's copy of each sum up.
 */
static void test_racks_bytes(void)
{
	static const unsigned nw[] = { 8, 6, 16, 3 };
	int good = 1;

	for (unsigned k = 0; k < sizeof(nw) / sizeof(nw[0]); k++) {
		struct sim_result f, t;
		struct sim_params p;
		struct sim_workload w;
		double want, got;

		small(&p);
		p.racks = 4;
		p.rack_workers = 4;
		p.njobs = 1;
		p.pool = 1 << 16;
		sim_workload_gen(&p, &w);
		w.job[0].nworkers = nw[k];
		p.levels = 1;
		sim_run(&p, &w, ESA_POLICY_ESA, &f);
		p.levels = 2;
		sim_run(&p, &w, ESA_POLICY_ESA, &t);
		/* inside one rack, only the PS's copy of each sum goes up */
		want = t.job_racks[0] > 1 ? (double)nw[k] / t.job_racks[0] :
		       f.uplink_bytes / (w.job[0].chunks * w.job[0].iters *
					 sim_pkt_bytes(p.nvals));
		got = f.uplink_bytes / t.uplink_bytes;
		diag("racks: a job of %u ranks on %u racks: %.0f bytes flat, %.0f on two "
		     "levels a run, %.3f times (want %.3f); JCT %.4f vs %.4f ms",
		     nw[k], t.job_racks[0], f.uplink_bytes, t.uplink_bytes, got, want,
		     f.avg_jct * 1e3, t.avg_jct * 1e3);
		if (!f.finished || !t.finished || fabs(got / want - 1) > 1e-9 ||
		    f.job_uplink[0] != f.uplink_bytes)
			good = 0;
		/* four ranks a rack on links as fast as a host's: flat waits on
		 * them, two levels do not */
		if (nw[k] >= 8 && !(t.avg_jct < f.avg_jct))
			good = 0;
		sim_result_free(&f);
		sim_result_free(&t);
		sim_workload_free(&w);
	}
	ok(good, "racks: two levels divide the leaf-spine bytes per allreduce by the "
	   "job's ranks per rack, and are faster than flat on links a host fast");
}

/* Racks are as deterministic as one switch. */
static void test_racks_determinism(void)
{
	struct sim_params p;
	int good = 1;

	racks(&p, 2);
	p.loss = 0.01;
	p.timeout_us = 100;
	p.timeout_max_us = 1000;
	for (int i = 0; i < NPOLS; i++) {
		struct sim_result a, b;
		char why[256];

		if (run(&p, pols[i], &a) || run(&p, pols[i], &b) || !same_result(&a, &b) ||
		    a.uplink_bytes != b.uplink_bytes || !conserved(&a, 0, why, sizeof(why)) ||
		    a.up_redundant || !a.lost_data) {
			diag("racks with loss, %s: %s", sim_policy_name(pols[i]), why);
			good = 0;
		}
		sim_result_free(&a);
		sim_result_free(&b);
	}
	ok(good, "racks with 1%% loss on every link: deterministic, conserved, "
	   "no leaf sum sent up twice, for every policy");
}

int main(void)
{
	tap_start();
	test_probe_esa();
	test_probe_atp();
	test_probe_switchml();
	test_probe_noslot_leaf();
	test_prio();
	test_workload();
	test_determinism();
	test_conservation();
	test_fetch();
	test_no_contention();
	test_hold();
	test_preempt();
	test_priority_wins();
	test_lower_bound();
	test_switchml();
	test_ageing();
	test_testbed();
	test_racks_once();
	test_racks_local();
	test_racks_bytes();
	test_racks_determinism();
	return tap_end();
}
