// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_sim workers and jobs: windows, resend timers, results, iterations;
 * a job's arrival and registration (switchml regions, homes) and its end.
 */
#include <stdlib.h>
#include "sim_int.h"

static stime_t worker_tx(struct sim *s, struct job *j, unsigned rank,
			 uint32_t seq, int resend)
{
	struct worker *w = &j->w[rank];
	struct pkt p = {
		.bitmap = 1ULL << rank,
		.seq = seq,
		.job = (uint16_t)(j - s->job),
		.rank = rank,
		.type = ESA_T_DATA,
		.flags = resend ? ESA_F_RESEND : 0,
		.prio = sim_prio_of(s->P->prio, j->spec, seq),
	};
	stime_t t = s->now;

	if (s->nic_svc) {
		if (w->nic_free > t)
			t = w->nic_free;
		t += s->nic_svc;
		w->nic_free = t;
	}
	t = sim_link_tx(&w->up, t, s->pkt_tx) + s->prop;
	s->R->data_tx++;
	if (resend)
		s->R->resends++;
	if (sim_lose(s)) {
		s->R->lost++;
		s->R->lost_data++;
	} else {
		sim_push(s, t, EV_AT_SWITCH, &p, DST_NONE,
			 EV_AT(j->leaf[rank], sim_via(j, rank)));
	}
	return t;
}

static void arm_timer(struct sim *s, struct job *j, unsigned rank, stime_t d)
{
	struct worker *w = &j->w[rank];

	if (w->timer_at && w->timer_at <= d)
		return;
	w->timer_at = d;
	sim_push(s, d, EV_TIMER, NULL, rank, (uint32_t)(j - s->job));
}

/* The simulator's picoseconds and esa_cc.h's nanoseconds. */
static uint64_t ps_to_ns(stime_t t)
{
	return t / T_NS;
}

static stime_t ns_to_ps(uint64_t ns)
{
	return (stime_t)ns * T_NS;
}

/* A new chunk goes out; its first timeout is the job's (esa_rto). */
static void send_chunk(struct sim *s, struct job *j, unsigned rank, uint32_t seq)
{
	struct worker *w = &j->w[rank];
	struct wslot *e = &w->win[seq % j->wmax];

	worker_tx(s, j, rank, seq, 0);
	e->seq = seq;
	e->state = WS_OUT;
	e->tries = 0;
	e->sent = s->now;
	e->rto_ns = w->rto.rto;
	e->deadline = s->now + ns_to_ps(e->rto_ns);
	arm_timer(s, j, rank, e->deadline);
}

/*
 * Send what the window admits, as libesa does: chunk `next` may go while
 * every chunk before next - window has its result; the window is the
 * congestion window (esa_cc.h), at most the job's (sim_job_window()).
 */
static void fill_window(struct sim *s, struct job *j, unsigned rank)
{
	struct worker *w = &j->w[rank];
	uint32_t end = w->base + j->spec->chunks;
	unsigned win = esa_cc_window(&w->cc);

	while (w->next < end && w->next - w->low < win)
		send_chunk(s, j, rank, w->next++);
}

/* ------------------------------------------------------------------ */
/* Workers and jobs                                                    */
/* ------------------------------------------------------------------ */

void sim_start_iteration(struct sim *s, struct job *j, unsigned rank)
{
	struct worker *w = &j->w[rank];

	w->base = w->iter * j->spec->chunks;
	w->low = w->next = w->base;
	w->received = 0;
	fill_window(s, j, rank);
}

/*
 * Switchml: the pool is cut into nreg equal regions once; a job takes a free
 * one when it arrives, or waits (its packets go to the PS: no switch memory)
 * until a job's completion frees one.  The control plane writes the region
 * into the job's registration; the workers' window is the region's size
 * from the job's start (sim_job_window(): libesa's is fixed).
 */
static int swml_assign(struct sim *s, unsigned b, struct job *j)
{
	struct box *x = &s->box[b];
	struct jreg *jr = &j->at[b];

	for (unsigned i = 0; i < x->nreg; i++) {
		if (x->reg_owner[i])
			continue;
		x->reg_owner[i] = (int32_t)(j - s->job) + 1;
		jr->region = i;
		jr->region_base = i * x->regsize;
		jr->region_size = x->regsize;
		sim_ts_advance(s);
		s->n_resv += x->regsize;
		return 0;
	}
	return -1;
}

static void swml_release(struct sim *s, unsigned b, struct job *j)
{
	struct box *x = &s->box[b];
	struct jreg *jr = &j->at[b];

	x->reg_owner[jr->region] = 0;
	jr->region = -1;
	jr->region_base = 0;
	jr->region_size = 0;
	sim_ts_advance(s);
	s->n_resv -= x->regsize;
	while (x->wq_head != x->wq_tail) {
		struct job *n = &s->job[x->waitq[x->wq_head]];

		if (n->state != JS_RUN) {
			x->wq_head++;
			continue;
		}
		if (swml_assign(s, b, n))
			break;
		x->wq_head++;
	}
}

void sim_job_finish(struct sim *s, struct job *j)
{
	unsigned jid = j - s->job;

	j->state = JS_DONE;
	s->R->jct[jid] = (double)(s->now - j->spec->arrival) / T_S;
	/* esactl job delete: a new generation, its slots are dead now. */
	j->reg.state = ESA_JOB_DELETED;
	j->reg.life = ESA_LIFE(sim_job_gen(j) + 1, 0);
	for (unsigned b = 0; b < s->nbox; b++) {
		const struct box *x = &s->box[b];

		for (unsigned i = 0; x->esa && i < s->P->pool; i++) {
			const struct esa_slot *sl = &x->slot[i];

			if (sl->job == jid && sl->state != ESA_SLOT_FREE)
				sim_cls_set(s, b, i, CL_DEAD);
		}
		if (j->at[b].region >= 0)
			swml_release(s, b, j);
	}
	sim_acct_check(s);
	for (unsigned r = 0; r < j->spec->nworkers; r++) {
		free(j->w[r].win);
		free(j->w[r].kept);
	}
	free(j->w);
	j->w = NULL;
	free(j->ring);
	j->ring = NULL;
	s->jobs_active--;
	s->jobs_done++;
}

/* A PS's FETCH: answer with the result if the worker still keeps it. */
static void worker_fetch(struct sim *s, struct job *j, struct pkt *p,
			 unsigned rank)
{
	struct worker *w = &j->w[rank];
	struct pkt r = *p;
	stime_t t;

	if (w->kept[p->seq % (4 * j->wmax)] != p->seq + 1)
		return;
	r.type = ESA_T_RESULT;
	r.rank = rank;
	r.bitmap = j->full;
	s->R->fetch_answered++;
	t = sim_link_tx(&w->up, s->now, s->pkt_tx) + s->prop;
	if (sim_lose(s)) {
		s->R->lost++;
		return;
	}
	sim_push(s, t, EV_AT_SWITCH, &r, DST_TO_PS, EV_AT(j->leaf[rank], 0));
}

void sim_worker_result(struct sim *s, struct pkt *p, unsigned rank)
{
	struct job *j = &s->job[p->job];
	struct worker *w;
	struct wslot *e;
	uint32_t seq = p->seq;

	if (j->state == JS_RUN && rank < j->spec->nworkers &&
	    p->type == ESA_T_FETCH) {
		worker_fetch(s, j, p, rank);
		return;
	}
	if (j->state != JS_RUN || rank >= j->spec->nworkers) {
		s->R->results_dup++;
		return;
	}
	w = &j->w[rank];
	e = &w->win[seq % j->wmax];
	if (w->done || e->seq != seq || e->state != WS_OUT) {
		s->R->results_dup++;
		return;
	}
	e->state = WS_GOT;
	w->kept[seq % (4 * j->wmax)] = seq + 1;
	s->R->results_accepted++;
	w->received++;
	w->last_rx = s->now;
	if (!e->tries)
		esa_rto_sample(&w->rto, ps_to_ns(s->now - e->sent));
	esa_cc_result(&w->cc, esa_cc_classify(p->from_ps, p->reason), seq, w->next);
	while (w->low < w->next && w->win[w->low % j->wmax].seq == w->low &&
	       w->win[w->low % j->wmax].state == WS_GOT)
		w->low++;
	fill_window(s, j, rank);
	if (w->received < j->spec->chunks)
		return;
	/* Iteration done. */
	w->iter++;
	if (w->iter < j->spec->iters) {
		sim_push(s, s->now + sim_compute_draw(s->P, j->spec, rank, w->iter),
			 EV_COMPUTE, NULL, rank, p->job);
		return;
	}
	w->done = 1;
	if (++j->workers_done == j->spec->nworkers)
		sim_job_finish(s, j);
}

/*
 * Late chunks go again, their timeouts doubled as libesa's are
 * (esa_rto_backoff(): capped at 4 x the round-trip timeout while results
 * flow, at the maximum when nothing comes back).
 */
void sim_worker_timer(struct sim *s, struct job *j, unsigned rank)
{
	struct worker *w = &j->w[rank];
	stime_t next = 0;

	s->R->timer_fires++;
	w->timer_at = 0;
	for (unsigned i = 0; i < j->wmax; i++) {
		struct wslot *e = &w->win[i];

		if (e->state != WS_OUT)
			continue;
		if (e->deadline <= s->now) {
			int flowing = s->now - w->last_rx < ns_to_ps(w->rto.max_ns);

			if (e->tries < 255)
				e->tries++;
			e->rto_ns = esa_rto_backoff(&w->rto, e->rto_ns, flowing);
			worker_tx(s, j, rank, e->seq, 1);
			e->deadline = s->now + ns_to_ps(e->rto_ns);
		}
		if (!next || e->deadline < next)
			next = e->deadline;
	}
	if (next)
		arm_timer(s, j, rank, next);
}

/* esactl job add ... region auto HOME at box b: where few others are. */
static void home_place(struct sim *s, unsigned b, struct job *j)
{
	struct esa_home *h = s->homes;
	unsigned n = 0, size = s->P->home < s->P->pool ? s->P->home : s->P->pool;

	for (unsigned k = 0; k < s->W->njobs; k++) {
		const struct jreg *o = &s->job[k].at[b];

		if (s->job[k].state == JS_RUN && o->region_size)
			h[n++] = (struct esa_home){ o->region_base, o->region_size };
	}
	j->at[b].region_base = esa_home_place(h, n, s->P->pool, size);
	j->at[b].region_size = size;
}

/* The job's memory at each box it is registered at. */
static void job_memory(struct sim *s, struct job *j)
{
	for (unsigned b = 0; b < s->nbox; b++) {
		j->at[b].region = -1;
		if (!j->at[b].mask)
			continue;
		if (s->policy == ESA_POLICY_SWITCHML && swml_assign(s, b, j))
			s->box[b].waitq[s->box[b].wq_tail++] = (uint32_t)(j - s->job);
		if (s->policy != ESA_POLICY_SWITCHML && s->P->home)
			home_place(s, b, j);
	}
}

int sim_job_arrive(struct sim *s, struct job *j)
{
	unsigned n = j->spec->nworkers, win = s->P->window;
	/* the workers' window: at most the job's memory, from the start */
	unsigned cwin = sim_job_window(s->P, s->W, s->policy);
	uint32_t ring = 64;

	j->reg.life = ESA_LIFE(sim_job_gen(j) + 1, 0);
	j->reg.state = ESA_JOB_ACTIVE;
	j->reg.nworkers = n;
	j->reg.max_prio = 255;
	j->reg.lease_ms = 0;
	j->wmax = win;
	job_memory(s, j);
	while (ring < 4 * win)
		ring *= 2;
	j->ringmask = ring - 1;
	j->ring = calloc(ring, sizeof(*j->ring));
	j->w = calloc(n, sizeof(*j->w));
	if (!j->ring || !j->w)
		return -1;
	for (unsigned r = 0; r < n; r++) {
		struct worker *w = &j->w[r];

		w->win = calloc(win, sizeof(struct wslot));
		w->kept = calloc(4 * win, sizeof(uint32_t));
		if (!w->win || !w->kept)
			return -1;
		esa_cc_init(&w->cc, s->P->window_min ? s->P->window_min : cwin, cwin);
		esa_rto_init(&w->rto, ps_to_ns(s->t0), ps_to_ns(s->tmax));
		w->last_rx = s->now;
		sim_push(s, s->now + sim_compute_draw(s->P, j->spec, r, 0),
			 EV_COMPUTE, NULL, r, (uint32_t)(j - s->job));
	}
	j->state = JS_RUN;
	s->jobs_active++;
	return 0;
}
