// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_sim engine: setting a run up, its event loop and its results.  The
 * parts it drives are by concern, each calling only those below it: the
 * workers and jobs (sim_worker.c), the parameter servers (sim_ps.c), the
 * switch (sim_switch.c), the links (sim_net.c), the slot accounting
 * (sim_acct.c), the racks (sim_rack.c), and the event queue they all
 * schedule through (sim_event.c).  sim_probe.c feeds the switch packet by
 * packet for directed tests.
 */
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "sim_int.h"

/* ------------------------------------------------------------------ */
/* Run                                                                 */
/* ------------------------------------------------------------------ */

static stime_t per_pkt(double rate_pps)
{
	stime_t t;

	if (rate_pps <= 0)
		return 0;
	t = (stime_t)llround(T_S / rate_pps);
	return t ? t : 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double sim_quantile(const double *v, unsigned n, double q)
{
	double *c, r, pos;
	unsigned i;

	if (!n)
		return 0;
	c = malloc(n * sizeof(*c));
	if (!c)
		return NAN;
	memcpy(c, v, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_double);
	pos = q * (n - 1);
	i = (unsigned)pos;
	r = i + 1 < n ? c[i] + (pos - i) * (c[i + 1] - c[i]) : c[n - 1];
	free(c);
	return r;
}

void sim_free(struct sim *s)
{
	if (s->job) {
		for (unsigned i = 0; i < s->W->njobs; i++) {
			struct job *j = &s->job[i];

			if (j->w)
				for (unsigned r = 0; r < j->spec->nworkers; r++)
					free(j->w[r].win);
			free(j->w);
			free(j->ring);
			free(j->done_bits);
			free(j->div_bits);
			free(j->up_bits);
			free(j->at);
		}
	}
	sim_boxes_free(s);
	free(s->job);
	free(s->homes);
	free(s->ps);
	free(s->h.a);
	free(s->b_busy);
	free(s->b_held);
	free(s->b_occ);
}

static stime_t tx_time(double bytes, double gbps)
{
	return (stime_t)llround(bytes * 8 / (gbps * 1e9) * T_S);
}

/* The model's times, from its rates. */
static void setup_times(struct sim *s, const struct sim_params *P)
{
	double pktb = sim_pkt_bytes(P->nvals);

	s->pkt_tx = tx_time(pktb, P->link_gbps);
	s->ps_pkt_tx = tx_time(pktb, P->ps_link_gbps);
	s->up_pkt_tx = tx_time(pktb, P->uplink_gbps > 0 ? P->uplink_gbps :
			       P->link_gbps);
	s->prop = (stime_t)llround(P->prop_us * T_US);
	s->sw_svc = per_pkt(P->switch_mpps * 1e6);
	s->ps_svc = per_pkt(P->ps_mpps * 1e6);
	s->ps_copy_svc = (stime_t)llround(s->ps_svc * P->ps_copy_cost);
	s->nic_svc = per_pkt(P->worker_mpps * 1e6);
	s->t0 = (stime_t)llround(P->timeout_us * T_US);
	s->tmax = (stime_t)llround(P->timeout_max_us * T_US);
	if (s->tmax < s->t0)
		s->tmax = s->t0;
	s->stale_ns = (uint64_t)llround(P->stale_ms * 1e6);
}

/* Every job's state, where it lives, and its arrival on the heap. */
static int setup_jobs(struct sim *s, const struct sim_workload *W,
		      struct sim_result *R)
{
	stime_t first = W->job[0].arrival;

	for (unsigned i = 0; i < W->njobs; i++) {
		struct job *j = &s->job[i];

		j->spec = &W->job[i];
		j->total = j->spec->chunks * j->spec->iters;
		j->full = esa_full_mask(j->spec->nworkers);
		j->ps = i % s->nps;
		j->done_bits = calloc(j->total / 8 + 1, 1);
		j->div_bits = calloc(j->total / 8 + 1, 1);
		j->at = calloc(s->nbox, sizeof(*j->at));
		if (!j->done_bits || !j->div_bits || !j->at || sim_job_place(s, j))
			return -1;
		R->job_racks[i] = j->racks;
		R->chunks_total += j->total;
		R->results_expected += (uint64_t)j->total * j->spec->nworkers;
		if (j->spec->arrival < first)
			first = j->spec->arrival;
		sim_push(s, j->spec->arrival, EV_ARRIVE, NULL, DST_NONE, i);
	}
	s->t_first = s->t_last = first;
	return 0;
}

static int bad_params(const struct sim_params *P, const struct sim_workload *W)
{
	if (!W->njobs || !P->pool || !P->window || P->nvals < 8 ||
	    P->nvals > ESA_MAX_VALUES || P->link_gbps <= 0 ||
	    P->ps_link_gbps <= 0 || P->ps_mpps <= 0 || P->timeout_us <= 0 ||
	    P->racks > SIM_MAX_RACKS || P->levels > 2 || P->uplink_gbps < 0)
		return 1;
	for (unsigned i = 0; i < W->njobs; i++)
		if (W->job[i].nworkers < 1 || W->job[i].nworkers > ESA_MAX_WORKERS)
			return 1;
	return 0;
}

int sim_setup(struct sim *s, const struct sim_params *P,
	      const struct sim_workload *W, int policy, struct sim_result *R)
{
	unsigned n = W->njobs;
	double span;

	memset(s, 0, sizeof(*s));
	memset(R, 0, sizeof(*R));
	R->policy = policy;
	R->njobs = n;
	if (bad_params(P, W))
		return -1;
	R->jct = calloc(n, sizeof(double));
	R->job_uplink = calloc(n, sizeof(double));
	R->job_spine_rx = calloc(n, sizeof(uint64_t));
	R->job_racks = calloc(n, sizeof(unsigned));
	if (!R->jct || !R->job_uplink || !R->job_spine_rx || !R->job_racks)
		return -1;

	s->P = P;
	s->W = W;
	s->R = R;
	s->policy = policy;
	s->rng = sim_mix64(P->seed ^ 0x1055ULL);
	setup_times(s, P);
	s->job = calloc(n, sizeof(*s->job));
	s->homes = calloc(n, sizeof(*s->homes));
	s->nps = P->ps_hosts ? P->ps_hosts : n;
	s->ps = calloc(s->nps, sizeof(*s->ps));
	if (!s->job || !s->homes || !s->ps || sim_boxes_setup(s) ||
	    setup_jobs(s, W, R))
		return -1;
	R->slots = P->pool * s->esa_boxes;
	if (P->ts_bin_us > 0) {
		s->bin = (stime_t)(P->ts_bin_us * T_US);
	} else {
		span = (double)W->job[n - 1].arrival / T_S + 2 * W->mean_ideal_s;
		s->bin = (stime_t)(span / 200 * T_S);
	}
	if (!s->bin)
		s->bin = 1;
	return s->oom ? -1 : 0;
}

/* A packet reaches box b: served in turn where a switch runs, else routed. */
static void at_box(struct sim *s, const struct ev *e)
{
	struct box *x = &s->box[EV_AT_BOX(e->arg)];
	struct pkt p = e->p;

	if (e->kind == EV_AT_SWITCH && x->esa && s->sw_svc) {
		stime_t t = x->free > s->now ? x->free : s->now;

		x->free = t + s->sw_svc;
		sim_push(s, x->free, EV_SW_PROC, &e->p, e->dst, e->arg);
		return;
	}
	sim_sw_proc(s, EV_AT_BOX(e->arg), EV_TO_BOX(e->arg), &p, e->dst);
}

/* One event; non-zero when the run cannot go on. */
static int sim_event(struct sim *s, const struct ev *e)
{
	struct pkt p = e->p;

	switch (e->kind) {
	case EV_ARRIVE:
		return sim_job_arrive(s, &s->job[e->arg]);
	case EV_COMPUTE:
		if (s->job[e->arg].state == JS_RUN)
			sim_start_iteration(s, &s->job[e->arg], e->dst);
		return 0;
	case EV_AT_SWITCH:
	case EV_SW_PROC:
		at_box(s, e);
		return 0;
	case EV_AT_PS: {
		struct pshost *h = &s->ps[s->job[e->p.job].ps];
		stime_t t = h->free > s->now ? h->free : s->now;

		h->free = t + (e->p.type == ESA_T_RESULT ? s->ps_copy_svc : s->ps_svc);
		sim_push(s, h->free, EV_PS_PROC, &e->p, DST_NONE, 0);
		return 0;
	}
	case EV_PS_PROC:
		sim_ps_proc(s, &p);
		return 0;
	case EV_AT_WORKER:
		sim_worker_result(s, &p, e->dst);
		return 0;
	case EV_TIMER: {
		struct job *j = &s->job[e->arg];

		if (j->state == JS_RUN && j->w[e->dst].timer_at == e->t)
			sim_worker_timer(s, j, e->dst);
		return 0;
	}
	}
	return 0;
}

/* JCTs and utilisation at the end of a run; -1 out of memory. */
static int sim_results(struct sim *s, struct sim_result *R, stime_t first)
{
	unsigned n = s->W->njobs;
	stime_t last = s->now;
	double sum = 0;

	R->finished = s->jobs_done == n;
	R->makespan = (double)(last - first) / T_S;
	if (R->finished) {
		for (unsigned i = 0; i < n; i++)
			sum += R->jct[i];
		R->avg_jct = sum / n;
		R->p95_jct = sim_quantile(R->jct, n, 0.95);
		R->max_jct = sim_quantile(R->jct, n, 1.0);
	} else {
		/* Unfinished jobs have no JCT: no average either. */
		for (unsigned i = 0; i < n; i++)
			if (s->job[i].state != JS_DONE)
				R->jct[i] = NAN;
		R->avg_jct = R->p95_jct = R->max_jct = NAN;
	}
	if (last > first) {
		double pt = (double)R->slots * (double)(last - first);

		R->util_agg = s->i_busy / pt;
		R->util_held = s->i_held / pt;
		R->util_occ = s->i_occ / pt;
		R->util_useful = s->useful / pt;
	}
	R->nbins = s->nbins;
	R->bin_s = (double)s->bin / T_S;
	R->ts_agg = calloc(s->nbins + 1, sizeof(double));
	R->ts_held = calloc(s->nbins + 1, sizeof(double));
	R->ts_occ = calloc(s->nbins + 1, sizeof(double));
	if (!R->ts_agg || !R->ts_held || !R->ts_occ)
		return -1;
	for (unsigned b = 0; b < s->nbins; b++) {
		R->ts_agg[b] = s->b_busy[b] / s->bin;
		R->ts_held[b] = s->b_held[b] / s->bin;
		R->ts_occ[b] = s->b_occ[b] / s->bin;
	}
	return 0;
}

int sim_run(const struct sim_params *P, const struct sim_workload *W,
	    int policy, struct sim_result *R)
{
	stime_t limit = (stime_t)(P->max_sim_s * T_S);
	struct sim S, *s = &S;
	struct ev e;
	int rc = -1;

	if (sim_setup(s, P, W, policy, R))
		goto out;
	while (s->h.n && !s->oom) {
		sim_pop(&s->h, &e);
		if (e.t > limit)
			break;
		s->now = e.t;
		R->events++;
		if (sim_event(s, &e))
			goto out;
		if (s->jobs_done == W->njobs)
			break;
	}
	if (s->oom)
		goto out;
	sim_ts_advance(s);
	sim_acct_check(s);
	if (sim_results(s, R, s->t_first))
		goto out;
	rc = R->finished ? 0 : 1;
out:
	sim_free(s);
	return rc;
}

void sim_result_free(struct sim_result *r)
{
	free(r->job_uplink);
	free(r->job_spine_rx);
	free(r->job_racks);
	r->job_uplink = NULL;
	r->job_spine_rx = NULL;
	r->job_racks = NULL;
	free(r->jct);
	free(r->ts_agg);
	free(r->ts_held);
	free(r->ts_occ);
	r->jct = r->ts_agg = r->ts_held = r->ts_occ = NULL;
}
