// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_sim engine: one switch, per-job parameter servers, workers, links.
 *
 * The switch keeps its pool in the UAPI's struct esa_slot and decides every
 * DATA packet with esa_slot_index() and esa_decide() from esa_policy.h, then
 * executes the action the way esa_data() in bpf/esa.bpf.c does (values are
 * not simulated; bitmaps, states, priorities, stamps and tombstones are).
 * Everything around it (links, queues, PS, workers) is a model.
 */
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "sim.h"

/* ------------------------------------------------------------------ */
/* Packets and events                                                  */
/* ------------------------------------------------------------------ */

struct pkt {
	uint64_t bitmap;
	uint32_t seq;
	uint16_t job;
	uint16_t rank;
	uint8_t	type;		/* enum esa_type */
	uint8_t	reason;		/* enum esa_reason */
	uint8_t	flags;
	uint8_t	prio;
};

enum ev_kind {
	EV_ARRIVE = 1,		/* job arrives */
	EV_COMPUTE,		/* worker finished an iteration's compute */
	EV_AT_SWITCH,		/* packet reaches the switch */
	EV_SW_PROC,		/* ... and is served (finite switch rate) */
	EV_AT_PS,		/* packet reaches its PS */
	EV_PS_PROC,		/* ... and is processed */
	EV_AT_WORKER,		/* result reaches a worker */
	EV_TIMER,		/* worker resend timer */
};

#define DST_NONE	0xffff
#define DST_TO_PS	0xfffe	/* a worker's answer to FETCH, for its PS */

struct ev {
	stime_t	t;
	uint64_t ord;		/* FIFO among equal times: determinism */
	struct pkt p;
	uint16_t kind;
	uint16_t dst;		/* rank a packet is for (results), or NONE */
	uint32_t arg;		/* job (ARRIVE/COMPUTE/TIMER), timer token */
};

struct heap {
	struct ev *a;
	size_t	n, cap;
};

static inline int ev_lt(const struct ev *x, const struct ev *y)
{
	return x->t < y->t || (x->t == y->t && x->ord < y->ord);
}

static int heap_push(struct heap *h, const struct ev *e)
{
	size_t i, up;

	if (h->n == h->cap) {
		size_t nc = h->cap ? h->cap * 2 : 4096;
		struct ev *na = realloc(h->a, nc * sizeof(*na));

		if (!na)
			return -1;
		h->a = na;
		h->cap = nc;
	}
	i = h->n++;
	while (i) {
		up = (i - 1) / 2;
		if (!ev_lt(e, &h->a[up]))
			break;
		h->a[i] = h->a[up];
		i = up;
	}
	h->a[i] = *e;
	return 0;
}

static void heap_pop(struct heap *h, struct ev *out)
{
	struct ev last;
	size_t i = 0, c;

	*out = h->a[0];
	last = h->a[--h->n];
	for (;;) {
		c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && ev_lt(&h->a[c + 1], &h->a[c]))
			c++;
		if (!ev_lt(&h->a[c], &last))
			break;
		h->a[i] = h->a[c];
		i = c;
	}
	h->a[i] = last;
}

/* ------------------------------------------------------------------ */
/* Model state                                                         */
/* ------------------------------------------------------------------ */

struct link {
	stime_t	free;		/* when the transmitter is next idle */
};

enum { WS_EMPTY = 0, WS_OUT, WS_GOT };

struct wslot {
	uint32_t seq;
	uint8_t	state;
	uint8_t	tries;
	stime_t	deadline;
};

struct worker {
	struct link up, down;
	stime_t	nic_free;
	unsigned iter;
	uint32_t base;		/* first chunk of the current iteration */
	uint32_t received;	/* results received this iteration */
	unsigned wcur;		/* window of the current iteration */
	struct wslot *win;	/* ring of wmax entries, by seq */
	uint32_t *kept;		/* seq + 1 of the results kept to answer
				 * FETCH, a ring of 4 * wmax (as libesa) */
	stime_t	timer_at;	/* armed timer, 0: none; a timer event
				 * whose time is not timer_at is stale */
	int	done;
};

struct psent {
	uint32_t seq;
	uint8_t	used;
	uint8_t	done;
	uint16_t nsum;		/* ranks in the sum it completes with, with
				 * multiplicity: what the values would show
				 * if a rank were counted twice */
	uint64_t multi;		/* ranks of the multi-rank partials kept */
	uint64_t single;	/* ranks the PS has on their own */
	uint64_t resent;	/* ranks that resent the chunk */
	uint64_t resent2;	/* ... at least twice */
	stime_t	fetch_at;	/* last FETCH round, 0: none */
};

enum { JS_WAIT = 0, JS_RUN, JS_DONE };

struct job {
	const struct sim_job_spec *spec;
	struct esa_job reg;	/* what the data plane reads */
	struct worker *w;
	unsigned wmax;		/* largest window (ring size) */
	int	region;		/* switchml: region index, -1: none */
	uint64_t full;
	uint32_t total;		/* chunks over all iterations */
	uint8_t	*done_bits;	/* chunk completed (first time) */
	uint8_t	*div_bits;	/* some rank of the chunk went to the PS */
	struct psent *ring;	/* the PS's per-chunk state */
	uint32_t ringmask;
	unsigned ps;
	unsigned workers_done;
	int	state;
};

struct pshost {
	struct link up, down;
	stime_t	free;
};

/* Slot accounting classes (the simulator's view, not the data plane's). */
enum { CL_FREE = 0, CL_BUSY, CL_HELD, CL_DEAD };

struct slot_aux {
	stime_t	claimed;	/* when the current key claimed the slot */
	uint8_t	cls;
};

struct sim {
	const struct sim_params *P;
	const struct sim_workload *W;
	struct sim_result *R;
	int	policy;
	stime_t	now;
	uint64_t ord;
	struct heap h;
	uint64_t rng;
	int	oom;

	stime_t	pkt_tx, ps_pkt_tx, prop, sw_svc, ps_svc, ps_copy_svc, nic_svc;
	stime_t	t0, tmax;
	uint64_t stale_ns;

	struct esa_slot *slot;
	struct esa_tomb *tombs;		/* esa_tombs: ESA_TOMB_RING per job */
	struct slot_aux *aux;
	/* switchml: nreg fixed regions of regsize slots, and the jobs
	 * waiting for one (FIFO by arrival)
	 */
	unsigned nreg, regsize;
	int32_t	*reg_owner;	/* job + 1, 0: free */
	uint32_t *waitq;
	unsigned wq_head, wq_tail;
	struct job *job;
	struct esa_home *homes;	/* scratch for home_place() */
	unsigned jobs_active, jobs_done;
	struct pshost *ps;
	unsigned nps;
	stime_t	sw_free;

	/* utilisation integrals (slot x ps) and time series */
	unsigned n_busy, n_held, n_resv;
	stime_t	t_last, t_first;
	uint64_t i_busy, i_held, i_occ;
	double	useful;
	stime_t	bin;
	unsigned nbins, capbins;
	double	*b_busy, *b_held, *b_occ;
};

static void push(struct sim *s, stime_t t, int kind, const struct pkt *p,
		 unsigned dst, uint32_t arg)
{
	struct ev e = { .t = t, .ord = s->ord++, .kind = kind, .dst = dst,
			.arg = arg };

	if (p)
		e.p = *p;
	if (heap_push(&s->h, &e))
		s->oom = 1;
}

static int lose(struct sim *s)
{
	if (s->P->loss <= 0)
		return 0;
	s->rng = sim_mix64(s->rng);
	return (s->rng >> 11) * (1.0 / 9007199254740992.0) < s->P->loss;
}

/* Serialise a packet on a link; return when it has left the transmitter. */
static stime_t link_tx(struct link *l, stime_t t, stime_t tx)
{
	if (l->free > t)
		t = l->free;
	t += tx;
	l->free = t;
	return t;
}

/* ------------------------------------------------------------------ */
/* Utilisation accounting                                              */
/* ------------------------------------------------------------------ */

static unsigned occ_now(const struct sim *s)
{
	unsigned o = s->n_busy + s->n_held;

	return s->n_resv > o ? s->n_resv : o;
}

static void ts_advance(struct sim *s)
{
	stime_t t = s->t_last, end;
	unsigned b, occ = occ_now(s);

	if (s->now <= t)
		return;
	s->i_busy += (uint64_t)s->n_busy * (s->now - t);
	s->i_held += (uint64_t)s->n_held * (s->now - t);
	s->i_occ += (uint64_t)occ * (s->now - t);
	while (t < s->now) {
		b = (t - s->t_first) / s->bin;
		end = s->t_first + (stime_t)(b + 1) * s->bin;
		if (end > s->now)
			end = s->now;
		if (b >= s->capbins) {
			unsigned nc = s->capbins ? s->capbins * 2 : 256;

			while (nc <= b)
				nc *= 2;
			double *x = realloc(s->b_busy, nc * sizeof(double));
			double *y = x ? realloc(s->b_held, nc * sizeof(double)) : NULL;
			double *z = y ? realloc(s->b_occ, nc * sizeof(double)) : NULL;

			if (x)
				s->b_busy = x;
			if (y)
				s->b_held = y;
			if (!z) {
				s->oom = 1;
				break;
			}
			s->b_occ = z;
			for (unsigned i = s->capbins; i < nc; i++)
				s->b_busy[i] = s->b_held[i] = s->b_occ[i] = 0;
			s->capbins = nc;
		}
		s->b_busy[b] += (double)s->n_busy * (end - t);
		s->b_held[b] += (double)s->n_held * (end - t);
		s->b_occ[b] += (double)occ * (end - t);
		if (b + 1 > s->nbins)
			s->nbins = b + 1;
		t = end;
	}
	s->t_last = s->now;
}

static void cls_set(struct sim *s, uint32_t idx, int cls)
{
	struct slot_aux *a = &s->aux[idx];

	if (a->cls == cls)
		return;
	ts_advance(s);
	if (a->cls == CL_BUSY)
		s->n_busy--;
	else if (a->cls == CL_HELD)
		s->n_held--;
	if (cls == CL_BUSY)
		s->n_busy++;
	else if (cls == CL_HELD)
		s->n_held++;
	a->cls = cls;
}

/* ------------------------------------------------------------------ */
/* Sending                                                             */
/* ------------------------------------------------------------------ */

/* Switch -> worker `rank` of job j. */
static void to_worker(struct sim *s, struct job *j, unsigned rank,
		      const struct pkt *p)
{
	stime_t t = link_tx(&j->w[rank].down, s->now, s->pkt_tx);

	if (lose(s)) {
		s->R->lost++;
		return;
	}
	push(s, t + s->prop, EV_AT_WORKER, p, rank, 0);
}

/* Switch -> the PS of job j. */
static void to_ps(struct sim *s, struct job *j, const struct pkt *p)
{
	struct pshost *h = &s->ps[j->ps];
	stime_t t = link_tx(&h->down, s->now, s->ps_pkt_tx);

	if (s->P->loss_ps && lose(s)) {
		s->R->lost++;
		return;
	}
	push(s, t + s->prop, EV_AT_PS, p, DST_NONE, 0);
}

/* PS -> switch (an ack, or a result for worker dst). */
static void ps_send(struct sim *s, struct job *j, const struct pkt *p,
		    unsigned dst)
{
	struct pshost *h = &s->ps[j->ps];
	stime_t t = link_tx(&h->up, s->now, s->ps_pkt_tx);

	if (s->P->loss_ps && lose(s)) {
		s->R->lost++;
		return;
	}
	push(s, t + s->prop, EV_AT_SWITCH, p, dst, 0);
}

static void mark_done(struct sim *s, struct job *j, uint32_t seq, int in_switch)
{
	if (seq >= j->total)
		return;
	if (j->done_bits[seq >> 3] & (1u << (seq & 7))) {
		s->R->redundant++;
		return;
	}
	j->done_bits[seq >> 3] |= 1u << (seq & 7);
	s->R->chunks_done++;
	if (in_switch)
		s->R->sw_complete++;
	else
		s->R->ps_complete++;
}

static void mark_diverted(struct job *j, uint32_t seq)
{
	if (seq < j->total)
		j->div_bits[seq >> 3] |= 1u << (seq & 7);
}

static int is_diverted(const struct job *j, uint32_t seq)
{
	return seq < j->total &&
	       ((j->div_bits[seq >> 3] | j->done_bits[seq >> 3]) &
		(1u << (seq & 7)));
}

/* Result multicast: one copy per worker, and the PS's copy if ps_copy. */
static void broadcast(struct sim *s, struct job *j, struct pkt *p, int ps_copy)
{
	p->type = ESA_T_RESULT;
	p->rank = ESA_RANK_NONE;
	p->bitmap = j->full;
	for (unsigned r = 0; r < j->spec->nworkers; r++) {
		s->R->c[ESA_C_RESULT_TX]++;
		to_worker(s, j, r, p);
	}
	if (ps_copy) {
		s->R->c[ESA_C_PS_COPY_TX]++;
		to_ps(s, j, p);
	}
}

/* esa_to_ps(): a rewritten packet to the job's PS, if the job is alive. */
static void sw_to_ps(struct sim *s, unsigned jid, struct pkt *p)
{
	struct job *j = &s->job[jid];

	if (j->reg.state != ESA_JOB_ACTIVE) {
		s->R->c[ESA_C_DROP_JOB]++;
		return;
	}
	s->R->c[ESA_C_PS_TX]++;
	if (p->type == ESA_T_PARTIAL || p->type == ESA_T_COLLISION) {
		s->R->sw_fallback++;
		mark_diverted(j, p->seq);
	}
	to_ps(s, j, p);
}

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
	t = link_tx(&w->up, t, s->pkt_tx) + s->prop;
	s->R->data_tx++;
	if (resend)
		s->R->resends++;
	if (lose(s)) {
		s->R->lost++;
		s->R->lost_data++;
	} else {
		push(s, t, EV_AT_SWITCH, &p, DST_NONE, 0);
	}
	return t;
}

static void arm_timer(struct sim *s, struct job *j, unsigned rank, stime_t d)
{
	struct worker *w = &j->w[rank];

	if (w->timer_at && w->timer_at <= d)
		return;
	w->timer_at = d;
	push(s, d, EV_TIMER, NULL, rank, (uint32_t)(j - s->job));
}

static void send_chunk(struct sim *s, struct job *j, unsigned rank, uint32_t seq)
{
	struct wslot *e = &j->w[rank].win[seq % j->wmax];
	stime_t arr = worker_tx(s, j, rank, seq, 0);

	e->seq = seq;
	e->state = WS_OUT;
	e->tries = 0;
	e->deadline = arr + s->t0;
	arm_timer(s, j, rank, e->deadline);
}

/* ------------------------------------------------------------------ */
/* The switch: esa_data() and esa_ack() without the values              */
/* ------------------------------------------------------------------ */

/* The job's generation (the simulator's clock does not stamp activity). */
static uint32_t job_gen(const struct job *j)
{
	return esa_life_gen(j->reg.life);
}

static int owner_alive(struct sim *s, uint32_t jid, uint32_t gen)
{
	return jid < s->W->njobs && s->job[jid].reg.state == ESA_JOB_ACTIVE &&
	       job_gen(&s->job[jid]) == gen;
}

static struct esa_tomb *tomb_of(struct sim *s, uint32_t jid, uint32_t seq)
{
	return &s->tombs[esa_tomb_index(jid, seq)];
}

/* The packet as the switch's step left it (esa_outcome()): counted,
 * rewritten and sent on. */
static void sw_send_out(struct sim *s, struct job *j, struct pkt *p,
			const struct esa_out *o)
{
	for (int i = 0; i < ESA_OUT_MAX_C; i++) {
		if (esa_out_ctr(o->c, i) >= 0)
			s->R->c[esa_out_ctr(o->c, i)]++;
		if (esa_out_ctr(o->oc, i) >= 0)
			s->R->c[esa_out_ctr(o->oc, i)]++;
	}
	if (o->to == ESA_TO_SLOT || o->to == ESA_TO_DROP)
		return;
	p->type = o->type;
	p->reason = o->reason;
	if (o->set & ESA_SET_FLAGS)
		p->flags = o->flags;
	if (o->set & ESA_SET_KEY) {
		p->prio = o->prio;
		p->job = o->job;
		p->seq = o->seq;
	}
	if (o->set & ESA_SET_RANK)
		p->rank = ESA_RANK_NONE;
	if (o->set & ESA_SET_BITMAP)
		p->bitmap = o->bitmap;
	if (o->to == ESA_TO_MEMBERS)
		broadcast(s, j, p, 1);
	else
		sw_to_ps(s, o->job, p);
}

/* What the simulator measures beyond the switch's state: slot classes,
 * useful time, orphan claims, and the fate of each data packet. */
static void sw_account(struct sim *s, uint32_t idx, struct job *j, uint32_t seq,
		       uint8_t act)
{
	struct esa_slot *sl = &s->slot[idx];
	struct sim_result *R = s->R;

	switch (act) {
	case ESA_A_CLAIM:
	case ESA_A_RECLAIM:
	case ESA_A_PREEMPT:
	case ESA_A_AGE:
		cls_set(s, idx, CL_BUSY);
		s->aux[idx].claimed = s->now;
		if (is_diverted(j, seq))
			R->orphan_claims++;
		/* fall through */
	case ESA_A_ADD:
		R->fate[SIM_F_ABSORBED]++;
		return;
	case ESA_A_DUPLICATE:
		R->fate[SIM_F_DUPLICATE]++;
		return;
	case ESA_A_COMPLETE:
	case ESA_A_HOLD:
		if (sl->bitmap != j->full || sl->nranks != j->reg.nworkers)
			R->bad_complete++;
		s->useful += (double)(s->now - s->aux[idx].claimed);
		cls_set(s, idx, act == ESA_A_COMPLETE ? CL_FREE : CL_HELD);
		R->fate[SIM_F_COMPLETED]++;
		mark_done(s, j, seq, 1);
		return;
	case ESA_A_FLUSH:
		cls_set(s, idx, CL_FREE);
		/* fall through */
	default:	/* ESA_A_COLLIDE, ESA_A_TOMB, ESA_A_RESEND */
		R->fate[SIM_F_TO_PS]++;
		return;
	}
}

/* esa_data(): the switch's step (include/esa_switch.h), without values. */
static void sw_data(struct sim *s, struct pkt *p)
{
	struct sim_result *R = s->R;
	uint32_t jid = p->job, idx;
	struct job *j = &s->job[jid];
	struct esa_key k = {
		.job = jid, .gen = job_gen(j), .seq = p->seq, .prio = p->prio,
		.nworkers = j->reg.nworkers, .rset = 1ULL << (p->rank & 63),
		.mask = esa_full_mask(j->reg.nworkers),
		.resend = !!(p->flags & ESA_F_RESEND),
	};
	struct esa_view view = {};
	struct esa_tomb *otomb;
	struct esa_evicted ev = {};
	struct esa_out o = {};
	struct esa_peek pk;
	struct esa_slot *sl;
	int64_t sidx;

	R->c[ESA_C_RX]++;
	R->data_rx++;
	/* esa_admit(): only registered, active jobs. */
	if (j->reg.state != ESA_JOB_ACTIVE || p->rank >= j->reg.nworkers) {
		R->c[ESA_C_DROP_JOB]++;
		R->fate[SIM_F_DROPPED]++;
		return;
	}
	if (esa_solo(k.rset, k.mask)) {
		R->fate[SIM_F_COMPLETED]++;
		mark_done(s, j, k.seq, 1);
		esa_outcome_solo(&o, jid, &k);
		sw_send_out(s, j, p, &o);
		return;
	}
	sidx = esa_slot_index(s->policy, jid, k.seq, s->P->pool,
			      j->reg.region_base, j->reg.region_size);
	if (sidx < 0) {
		p->type = ESA_T_COLLISION;
		p->reason = ESA_R_NOSLOT;
		R->c[ESA_C_NOSLOT]++;
		R->fate[SIM_F_TO_PS]++;
		sw_to_ps(s, jid, p);
		return;
	}
	idx = (uint32_t)sidx;
	sl = &s->slot[idx];
	/* No concurrency here, so the data plane's peek is exact. */
	pk = (struct esa_peek){ .job = sl->job, .gen = sl->gen, .seq = sl->seq,
		.alive = sl->state == ESA_SLOT_FREE ||
			 (sl->job == jid && sl->gen == k.gen) ||
			 owner_alive(s, sl->job, sl->gen) };
	otomb = tomb_of(s, sl->job, sl->seq);
	view.policy = s->policy;
	view.pkt_prio = p->prio;
	view.resend = !!(p->flags & ESA_F_RESEND);
	esa_slot_view(&view, sl, tomb_of(s, jid, k.seq), &k, &pk, s->now / T_NS,
		      s->stale_ns);
	sl->last = esa_decide(&view);
	R->act[sl->last]++;
	esa_slot_apply(sl, sl->last, view.rank_in, view.tomb == ESA_TOMB_NONE,
		       tomb_of(s, jid, k.seq), otomb, &k, s->now / T_NS, &ev);
	sw_account(s, idx, j, k.seq, sl->last);
	esa_outcome(&o, sl->last, &ev, 0, jid, &k);
	sw_send_out(s, j, p, &o);
}

/*
 * esa_ack(): policy atp, the PS's ack frees the held slot and becomes the
 * workers' result; an ack matching no held sum is dropped (acks_stale).
 */
static void sw_ack(struct sim *s, struct pkt *p)
{
	struct job *j = &s->job[p->job];
	int64_t sidx;

	s->R->c[ESA_C_RX]++;
	if (j->reg.state != ESA_JOB_ACTIVE) {
		s->R->c[ESA_C_DROP_JOB]++;
		return;
	}
	sidx = esa_slot_index(s->policy, p->job, p->seq, s->P->pool,
			      j->reg.region_base, j->reg.region_size);
	if (sidx < 0 || !esa_ack_frees(&s->slot[sidx], tomb_of(s, p->job, p->seq),
				       p->job, job_gen(j), p->seq)) {
		s->R->c[ESA_C_ACK_STALE]++;
		return;
	}
	s->R->c[ESA_C_ACK]++;
	cls_set(s, (uint32_t)sidx, CL_FREE);
	p->reason = ESA_R_NONE;
	broadcast(s, j, p, 0);
}

static void sw_proc(struct sim *s, struct pkt *p, unsigned dst)
{
	struct job *j = &s->job[p->job];

	if (dst == DST_TO_PS) {
		/* A worker's answer to FETCH: plain forwarding. */
		if (j->state == JS_RUN)
			to_ps(s, j, p);
		return;
	}
	if (dst != DST_NONE) {
		/* A PS's result or FETCH for one worker: plain forwarding. */
		if (j->state == JS_RUN)
			to_worker(s, j, dst, p);
		return;
	}
	if (p->type == ESA_T_DATA)
		sw_data(s, p);
	else if (p->type == ESA_T_ACK && s->policy == ESA_POLICY_ATP)
		sw_ack(s, p);
	else
		s->R->c[ESA_C_DROP_TYPE]++;
}

/* ------------------------------------------------------------------ */
/* Parameter servers                                                   */
/* ------------------------------------------------------------------ */

/* The PS's state for chunk seq; NULL when seq is older than what the ring
 * remembers (complete long ago).
 */
static struct psent *ps_ent(struct sim *s, struct job *j, uint32_t seq)
{
	struct psent *e = &j->ring[seq & j->ringmask];

	if (e->used && e->seq == seq)
		return e;
	if (e->used && (int32_t)(seq - e->seq) < 0)
		return NULL;
	if (e->used && !e->done)
		s->R->ps_overrun++;
	e->used = 1;
	e->seq = seq;
	e->done = 0;
	e->nsum = 0;
	e->multi = 0;
	e->single = 0;
	e->resent = 0;
	e->resent2 = 0;
	e->fetch_at = 0;
	return e;
}

static void ps_result(struct sim *s, struct job *j, uint32_t seq, unsigned dst)
{
	struct pkt r = {
		.bitmap = j->full,
		.seq = seq,
		.job = (uint16_t)(j - s->job),
		.rank = ESA_RANK_NONE,
		.type = ESA_T_RESULT,
	};

	ps_send(s, j, &r, dst);
}

static void ps_complete(struct sim *s, struct job *j, struct psent *e)
{
	if (e->nsum != j->spec->nworkers)
		s->R->bad_sum++;
	e->done = 1;
	mark_done(s, j, e->seq, 0);
	for (unsigned r = 0; r < j->spec->nworkers; r++)
		ps_result(s, j, e->seq, r);
}

/*
 * A worker resent chunk e twice and the PS still has no sum: the sum may
 * have completed in the switch while the PS's copy was lost, and then the
 * workers that got it never resend.  Ask the others for it (FETCH), at most
 * once per worker timeout.
 */
static void ps_maybe_fetch(struct sim *s, struct job *j, struct psent *e,
			   uint64_t bit)
{
	struct pkt f = {
		.seq = e->seq,
		.job = (uint16_t)(j - s->job),
		.rank = ESA_RANK_NONE,
		.type = ESA_T_FETCH,
	};
	uint64_t to = j->full & ~e->resent;

	if (e->done || !(e->resent2 & bit) || !to ||
	    (e->fetch_at && s->now - e->fetch_at < s->t0))
		return;
	e->fetch_at = s->now;
	s->R->ps_fetch++;
	for (unsigned r = 0; r < j->spec->nworkers; r++)
		if (to & (1ULL << r))
			ps_send(s, j, &f, r);
}

/* Worker `rank` answered a FETCH with the sum: deliver it to the askers. */
static void ps_fetched(struct sim *s, struct job *j, struct psent *e,
		       unsigned rank)
{
	uint64_t to;

	s->R->ps_fetched++;
	if (!e || e->done)
		return;
	/* A worker has the sum, so the chunk is complete (and counted) */
	e->done = 1;
	to = e->resent ? e->resent : j->full & ~(1ULL << rank);
	for (unsigned r = 0; r < j->spec->nworkers; r++)
		if (to & (1ULL << r))
			ps_result(s, j, e->seq, r);
}

static void ps_proc(struct sim *s, struct pkt *p)
{
	struct job *j = &s->job[p->job];
	struct psent *e;

	s->R->ps_rx++;
	if (j->state != JS_RUN) {
		s->R->ps_late++;
		return;
	}
	e = ps_ent(s, j, p->seq);
	switch (p->type) {
	case ESA_T_RESULT:
		if (p->rank < j->spec->nworkers) {
			ps_fetched(s, j, e, p->rank);
			return;
		}
		/* The switch's copy of a sum (esa), or a sum to hold (atp). */
		if (e && !e->done) {
			if (e->multi | e->single)
				s->R->ps_overtaken++;
			e->done = 1;
		} else if (e && e->done) {
			/* The PS completed it from resends meanwhile. */
		}
		if (p->reason == ESA_R_HOLD) {
			struct pkt a = *p;

			a.type = ESA_T_ACK;
			a.reason = ESA_R_NONE;
			a.rank = ESA_RANK_NONE;
			ps_send(s, j, &a, DST_NONE);
		}
		return;
	case ESA_T_PARTIAL:
	case ESA_T_COLLISION:
		if (!e || e->done) {
			/* Complete already: a worker asking again gets the
			 * sum; partials are redundant.
			 */
			s->R->ps_dup++;
			if (p->type == ESA_T_COLLISION && p->rank < j->spec->nworkers) {
				s->R->ps_answer++;
				ps_result(s, j, p->seq, p->rank);
			}
			return;
		}
		if (p->bitmap == 1ULL << p->rank &&
		    ((p->flags & ESA_F_RESEND) || p->reason == ESA_R_RESEND)) {
			if (e->resent & p->bitmap)
				e->resent2 |= p->bitmap;
			e->resent |= p->bitmap;
			ps_maybe_fetch(s, j, e, p->bitmap);
		}
		/*
		 * docs/protocol.md's merge rule: multi-rank partials are kept
		 * while they are disjoint; single ranks fill in what they do
		 * not cover.  No rank is counted twice.
		 */
		if (p->bitmap & (p->bitmap - 1)) {
			if (p->bitmap & e->multi) {
				s->R->ps_overlap++;
				return;
			}
			e->multi |= p->bitmap;
		} else {
			if (e->single & p->bitmap) {
				s->R->ps_dup++;
				return;
			}
			e->single |= p->bitmap;
		}
		s->R->ps_merged++;
		if ((e->multi | e->single) == j->full) {
			e->nsum = __builtin_popcountll(e->multi) +
				  __builtin_popcountll(e->single & ~e->multi);
			ps_complete(s, j, e);
		}
		return;
	default:
		return;
	}
}

/* ------------------------------------------------------------------ */
/* Workers and jobs                                                    */
/* ------------------------------------------------------------------ */

/*
 * The window a worker uses for an iteration: its own, or under switchml at
 * most its job's region (a larger window would collide with itself).  It
 * changes only between iterations, when the worker has nothing in flight.
 */
static unsigned job_window(const struct sim *s, const struct job *j)
{
	if (j->reg.region_size && j->reg.region_size < j->wmax)
		return j->reg.region_size;
	return j->wmax;
}

static void start_iteration(struct sim *s, struct job *j, unsigned rank)
{
	struct worker *w = &j->w[rank];
	unsigned n;

	w->wcur = job_window(s, j);
	n = j->spec->chunks < w->wcur ? j->spec->chunks : w->wcur;
	w->base = w->iter * j->spec->chunks;
	w->received = 0;
	for (unsigned i = 0; i < n; i++)
		send_chunk(s, j, rank, w->base + i);
}

/*
 * Switchml: the pool is cut into nreg equal regions once; a job takes a free
 * one when it arrives, or waits (its packets go to the PS: no switch memory)
 * until a job's completion frees one.  The control plane writes the region
 * into the job's registration; workers adopt the matching window at their
 * next iteration.
 */
static int swml_assign(struct sim *s, struct job *j)
{
	for (unsigned i = 0; i < s->nreg; i++) {
		if (s->reg_owner[i])
			continue;
		s->reg_owner[i] = (int32_t)(j - s->job) + 1;
		j->region = i;
		j->reg.region_base = i * s->regsize;
		j->reg.region_size = s->regsize;
		ts_advance(s);
		s->n_resv += s->regsize;
		return 0;
	}
	return -1;
}

static void swml_release(struct sim *s, struct job *j)
{
	s->reg_owner[j->region] = 0;
	j->region = -1;
	j->reg.region_base = 0;
	j->reg.region_size = 0;
	ts_advance(s);
	s->n_resv -= s->regsize;
	while (s->wq_head != s->wq_tail) {
		struct job *n = &s->job[s->waitq[s->wq_head]];

		if (n->state != JS_RUN) {
			s->wq_head++;
			continue;
		}
		if (swml_assign(s, n))
			break;
		s->wq_head++;
	}
}

/* The utilisation accounting must agree with the slots themselves. */
static void acct_check(struct sim *s)
{
	unsigned busy = 0, held = 0;

	for (unsigned i = 0; i < s->P->pool; i++) {
		const struct esa_slot *sl = &s->slot[i];
		int cls = CL_FREE;

		if (sl->state != ESA_SLOT_FREE)
			cls = !owner_alive(s, sl->job, sl->gen) ? CL_DEAD :
			      sl->state == ESA_SLOT_BUSY ? CL_BUSY : CL_HELD;
		if (cls != s->aux[i].cls)
			s->R->acct_errors++;
		busy += cls == CL_BUSY;
		held += cls == CL_HELD;
	}
	if (busy != s->n_busy || held != s->n_held)
		s->R->acct_errors++;
}

static void job_finish(struct sim *s, struct job *j)
{
	unsigned jid = j - s->job;

	j->state = JS_DONE;
	s->R->jct[jid] = (double)(s->now - j->spec->arrival) / T_S;
	/* esactl job delete: a new generation, its slots are dead now. */
	j->reg.state = ESA_JOB_DELETED;
	j->reg.life = ESA_LIFE(job_gen(j) + 1, 0);
	for (unsigned i = 0; i < s->P->pool; i++) {
		struct esa_slot *sl = &s->slot[i];

		if (sl->job == jid && sl->state != ESA_SLOT_FREE)
			cls_set(s, i, CL_DEAD);
	}
	if (j->region >= 0)
		swml_release(s, j);
	acct_check(s);
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
	t = link_tx(&w->up, s->now, s->pkt_tx) + s->prop;
	if (lose(s)) {
		s->R->lost++;
		return;
	}
	push(s, t, EV_AT_SWITCH, &r, DST_TO_PS, 0);
}

static void worker_result(struct sim *s, struct pkt *p, unsigned rank)
{
	struct job *j = &s->job[p->job];
	struct worker *w;
	struct wslot *e;
	uint32_t seq = p->seq, nx;

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
	nx = seq + w->wcur;
	if (nx < w->base + j->spec->chunks)
		send_chunk(s, j, rank, nx);
	if (w->received < j->spec->chunks)
		return;
	/* Iteration done. */
	w->iter++;
	if (w->iter < j->spec->iters) {
		push(s, s->now + sim_compute_draw(s->P, j->spec, rank, w->iter),
		     EV_COMPUTE, NULL, rank, p->job);
		return;
	}
	w->done = 1;
	if (++j->workers_done == j->spec->nworkers)
		job_finish(s, j);
}

static void worker_timer(struct sim *s, struct job *j, unsigned rank)
{
	struct worker *w = &j->w[rank];
	stime_t next = 0, to;

	s->R->timer_fires++;
	w->timer_at = 0;
	for (unsigned i = 0; i < j->wmax; i++) {
		struct wslot *e = &w->win[i];

		if (e->state != WS_OUT)
			continue;
		if (e->deadline <= s->now) {
			if (e->tries < 30)
				e->tries++;
			to = s->t0 << (e->tries < 20 ? e->tries : 20);
			if (to > s->tmax || to < s->t0)
				to = s->tmax;
			e->deadline = worker_tx(s, j, rank, e->seq, 1) + to;
		}
		if (!next || e->deadline < next)
			next = e->deadline;
	}
	if (next)
		arm_timer(s, j, rank, next);
}

/* esactl job add ... region auto HOME: a home where few others are. */
static void home_place(struct sim *s, struct job *j)
{
	struct esa_home *h = s->homes;
	unsigned n = 0, size = s->P->home < s->P->pool ? s->P->home : s->P->pool;

	for (unsigned k = 0; k < s->W->njobs; k++)
		if (s->job[k].state == JS_RUN && s->job[k].reg.region_size)
			h[n++] = (struct esa_home){ s->job[k].reg.region_base,
						    s->job[k].reg.region_size };
	j->reg.region_base = esa_home_place(h, n, s->P->pool, size);
	j->reg.region_size = size;
}

static int job_arrive(struct sim *s, struct job *j)
{
	unsigned n = j->spec->nworkers, win = s->P->window;
	uint32_t ring = 64;

	j->reg.life = ESA_LIFE(job_gen(j) + 1, 0);
	j->reg.state = ESA_JOB_ACTIVE;
	j->reg.nworkers = n;
	j->reg.max_prio = 255;
	j->reg.lease_ms = 0;
	j->region = -1;
	if (s->policy == ESA_POLICY_SWITCHML && swml_assign(s, j))
		s->waitq[s->wq_tail++] = (uint32_t)(j - s->job);
	j->wmax = win;
	if (s->policy != ESA_POLICY_SWITCHML && s->P->home)
		home_place(s, j);
	while (ring < 4 * win)
		ring *= 2;
	j->ringmask = ring - 1;
	j->ring = calloc(ring, sizeof(*j->ring));
	j->w = calloc(n, sizeof(*j->w));
	if (!j->ring || !j->w)
		return -1;
	for (unsigned r = 0; r < n; r++) {
		j->w[r].win = calloc(win, sizeof(struct wslot));
		j->w[r].kept = calloc(4 * win, sizeof(uint32_t));
		if (!j->w[r].win || !j->w[r].kept)
			return -1;
		push(s, s->now + sim_compute_draw(s->P, j->spec, r, 0),
		     EV_COMPUTE, NULL, r, (uint32_t)(j - s->job));
	}
	j->state = JS_RUN;
	s->jobs_active++;
	return 0;
}

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

static void sim_free(struct sim *s)
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
		}
	}
	free(s->job);
	free(s->homes);
	free(s->slot);
	free(s->tombs);
	free(s->aux);
	free(s->reg_owner);
	free(s->waitq);
	free(s->ps);
	free(s->h.a);
	free(s->b_busy);
	free(s->b_held);
	free(s->b_occ);
}

static int sim_setup(struct sim *s, const struct sim_params *P,
		     const struct sim_workload *W, int policy,
		     struct sim_result *R)
{
	double pktb = sim_pkt_bytes(P->nvals), span;
	stime_t first;

	memset(s, 0, sizeof(*s));
	memset(R, 0, sizeof(*R));
	R->policy = policy;
	R->njobs = W->njobs;
	if (!W->njobs || !P->pool || !P->window || P->nvals < 8 ||
	    P->nvals > ESA_MAX_VALUES || P->link_gbps <= 0 ||
	    P->ps_link_gbps <= 0 || P->ps_mpps <= 0 || P->timeout_us <= 0)
		return -1;
	for (unsigned i = 0; i < W->njobs; i++)
		if (W->job[i].nworkers < 1 || W->job[i].nworkers > ESA_MAX_WORKERS)
			return -1;
	R->jct = calloc(W->njobs, sizeof(double));
	if (!R->jct)
		return -1;

	s->P = P;
	s->W = W;
	s->R = R;
	s->policy = policy;
	s->rng = sim_mix64(P->seed ^ 0x1055ULL);
	s->pkt_tx = (stime_t)llround(pktb * 8 / (P->link_gbps * 1e9) * T_S);
	s->ps_pkt_tx = (stime_t)llround(pktb * 8 / (P->ps_link_gbps * 1e9) * T_S);
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

	s->slot = calloc(P->pool, sizeof(*s->slot));
	s->tombs = calloc((size_t)W->njobs * ESA_TOMB_RING, sizeof(*s->tombs));
	s->aux = calloc(P->pool, sizeof(*s->aux));
	s->job = calloc(W->njobs, sizeof(*s->job));
	s->homes = calloc(W->njobs, sizeof(*s->homes));
	s->nps = P->ps_hosts ? P->ps_hosts : W->njobs;
	s->ps = calloc(s->nps, sizeof(*s->ps));
	if (policy == ESA_POLICY_SWITCHML) {
		double conc = ceil(W->rate * W->mean_ideal_s);

		s->nreg = P->swml_regions;
		if (!s->nreg) {
			s->nreg = P->pool / P->window;
			if (conc > s->nreg)
				s->nreg = conc < P->pool ? (unsigned)conc : P->pool;
		}
		if (s->nreg > P->pool)
			s->nreg = P->pool;
		if (!s->nreg)
			s->nreg = 1;
		s->regsize = P->pool / s->nreg;
		s->reg_owner = calloc(s->nreg, sizeof(*s->reg_owner));
		s->waitq = calloc(W->njobs, sizeof(*s->waitq));
		if (!s->reg_owner || !s->waitq)
			return -1;
	}
	if (!s->slot || !s->tombs || !s->aux || !s->job || !s->homes || !s->ps)
		return -1;

	first = W->job[0].arrival;
	for (unsigned i = 0; i < W->njobs; i++) {
		struct job *j = &s->job[i];

		j->spec = &W->job[i];
		j->total = j->spec->chunks * j->spec->iters;
		j->full = esa_full_mask(j->spec->nworkers);
		j->ps = i % s->nps;
		j->done_bits = calloc(j->total / 8 + 1, 1);
		j->div_bits = calloc(j->total / 8 + 1, 1);
		if (!j->done_bits || !j->div_bits)
			return -1;
		R->chunks_total += j->total;
		R->results_expected += (uint64_t)j->total * j->spec->nworkers;
		if (j->spec->arrival < first)
			first = j->spec->arrival;
		push(s, j->spec->arrival, EV_ARRIVE, NULL, DST_NONE, i);
	}
	s->t_first = s->t_last = first;
	if (P->ts_bin_us > 0) {
		s->bin = (stime_t)(P->ts_bin_us * T_US);
	} else {
		span = (double)W->job[W->njobs - 1].arrival / T_S + 2 * W->mean_ideal_s;
		s->bin = (stime_t)(span / 200 * T_S);
	}
	if (!s->bin)
		s->bin = 1;
	return s->oom ? -1 : 0;
}

int sim_run(const struct sim_params *P, const struct sim_workload *W,
	    int policy, struct sim_result *R)
{
	stime_t limit = (stime_t)(P->max_sim_s * T_S), first, last;
	struct sim S, *s = &S;
	double sum = 0;
	struct ev e;
	int rc = -1;

	if (sim_setup(s, P, W, policy, R))
		goto out;
	first = s->t_first;

	while (s->h.n && !s->oom) {
		heap_pop(&s->h, &e);
		if (e.t > limit)
			break;
		s->now = e.t;
		R->events++;
		switch (e.kind) {
		case EV_ARRIVE:
			if (job_arrive(s, &s->job[e.arg]))
				goto out;
			break;
		case EV_COMPUTE:
			if (s->job[e.arg].state == JS_RUN)
				start_iteration(s, &s->job[e.arg], e.dst);
			break;
		case EV_AT_SWITCH:
			if (s->sw_svc) {
				stime_t t = s->sw_free > s->now ? s->sw_free : s->now;

				s->sw_free = t + s->sw_svc;
				push(s, s->sw_free, EV_SW_PROC, &e.p, e.dst, 0);
				break;
			}
			/* fallthrough */
		case EV_SW_PROC:
			sw_proc(s, &e.p, e.dst);
			break;
		case EV_AT_PS: {
			struct pshost *h = &s->ps[s->job[e.p.job].ps];
			stime_t t = h->free > s->now ? h->free : s->now;

			h->free = t + (e.p.type == ESA_T_RESULT ?
				       s->ps_copy_svc : s->ps_svc);
			push(s, h->free, EV_PS_PROC, &e.p, DST_NONE, 0);
			break;
		}
		case EV_PS_PROC:
			ps_proc(s, &e.p);
			break;
		case EV_AT_WORKER:
			worker_result(s, &e.p, e.dst);
			break;
		case EV_TIMER: {
			struct job *j = &s->job[e.arg];

			if (j->state == JS_RUN && j->w[e.dst].timer_at == e.t)
				worker_timer(s, j, e.dst);
			break;
		}
		}
		if (s->jobs_done == W->njobs)
			break;
	}
	if (s->oom)
		goto out;
	ts_advance(s);
	acct_check(s);

	R->finished = s->jobs_done == W->njobs;
	last = s->now;
	R->makespan = (double)(last - first) / T_S;
	if (R->finished) {
		for (unsigned i = 0; i < W->njobs; i++)
			sum += R->jct[i];
		R->avg_jct = sum / W->njobs;
		R->p95_jct = sim_quantile(R->jct, W->njobs, 0.95);
		R->max_jct = sim_quantile(R->jct, W->njobs, 1.0);
	} else {
		/* Unfinished jobs have no JCT: no average either. */
		for (unsigned i = 0; i < W->njobs; i++)
			if (s->job[i].state != JS_DONE)
				R->jct[i] = NAN;
		R->avg_jct = R->p95_jct = R->max_jct = NAN;
	}
	if (last > first) {
		double pt = (double)P->pool * (double)(last - first);

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
		goto out;
	for (unsigned b = 0; b < s->nbins; b++) {
		R->ts_agg[b] = s->b_busy[b] / s->bin;
		R->ts_held[b] = s->b_held[b] / s->bin;
		R->ts_occ[b] = s->b_occ[b] / s->bin;
	}
	rc = R->finished ? 0 : 1;
out:
	sim_free(s);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Probe: the switch alone, fed packet by packet (directed tests)       */
/* ------------------------------------------------------------------ */

struct sim_probe {
	struct sim s;
	struct sim_result r;
};

struct sim_probe *sim_probe_new(const struct sim_params *p,
				const struct sim_workload *w, int policy)
{
	struct sim_probe *pr = calloc(1, sizeof(*pr));

	if (!pr)
		return NULL;
	if (sim_setup(&pr->s, p, w, policy, &pr->r))
		goto fail;
	for (unsigned i = 0; i < w->njobs; i++)
		if (job_arrive(&pr->s, &pr->s.job[i]))
			goto fail;
	pr->s.h.n = 0;	/* nothing runs but what the test feeds */
	return pr;
fail:
	sim_probe_free(pr);
	return NULL;
}

static int probe_out(struct sim_probe *pr, uint64_t before,
		     struct sim_probe_out *out, int max)
{
	struct heap *h = &pr->s.h;
	int n = 0;

	/* Only this call's pushes are in the heap; order them by push. */
	for (uint64_t o = before; o < pr->s.ord; o++) {
		for (size_t i = 0; i < h->n; i++) {
			const struct ev *e = &h->a[i];

			if (e->ord != o)
				continue;
			if (n < max) {
				struct sim_probe_out *x = &out[n];

				x->to = e->kind == EV_AT_WORKER ? SIM_TO_WORKER :
					e->kind == EV_AT_PS ? SIM_TO_PS : SIM_TO_SWITCH;
				x->dst = e->dst;
				x->type = e->p.type;
				x->reason = e->p.reason;
				x->prio = e->p.prio;
				x->flags = e->p.flags;
				x->job = e->p.job;
				x->rank = e->p.rank;
				x->seq = e->p.seq;
				x->bitmap = e->p.bitmap;
			}
			n++;
		}
	}
	h->n = 0;
	return n;
}

int sim_probe_data(struct sim_probe *pr, double t_us, unsigned job,
		   unsigned rank, uint32_t seq, uint8_t prio, int resend,
		   struct sim_probe_out *out, int max, int *nout)
{
	struct sim *s = &pr->s;
	uint64_t before = s->ord, acts[__ESA_A_MAX], noslot;
	struct pkt p = {
		.bitmap = 1ULL << rank,
		.seq = seq,
		.job = job,
		.rank = rank,
		.type = ESA_T_DATA,
		.flags = resend ? ESA_F_RESEND : 0,
		.prio = prio,
	};
	int act = -1;

	memcpy(acts, s->R->act, sizeof(acts));
	noslot = s->R->c[ESA_C_NOSLOT];
	s->now = (stime_t)llround(t_us * T_US);
	sw_proc(s, &p, DST_NONE);
	for (int a = 0; a < __ESA_A_MAX; a++)
		if (s->R->act[a] != acts[a])
			act = a;
	if (s->R->c[ESA_C_NOSLOT] != noslot)
		act = SIM_A_NOSLOT;
	*nout = probe_out(pr, before, out, max);
	return act;
}

int sim_probe_ack(struct sim_probe *pr, double t_us, unsigned job,
		  uint32_t seq, struct sim_probe_out *out, int max, int *nout)
{
	struct sim *s = &pr->s;
	uint64_t before = s->ord;
	struct pkt p = {
		.bitmap = s->job[job].full,
		.seq = seq,
		.job = job,
		.rank = ESA_RANK_NONE,
		.type = ESA_T_ACK,
	};

	s->now = (stime_t)llround(t_us * T_US);
	sw_proc(s, &p, DST_NONE);
	*nout = probe_out(pr, before, out, max);
	return 0;
}

const struct esa_slot *sim_probe_slot(struct sim_probe *pr, unsigned job,
				      uint32_t seq)
{
	struct sim *s = &pr->s;
	const struct job *j = &s->job[job];
	int64_t i = esa_slot_index(s->policy, job, seq, s->P->pool,
				   j->reg.region_base, j->reg.region_size);

	return i < 0 ? NULL : &s->slot[i];
}

int sim_probe_tomb(struct sim_probe *pr, unsigned job, uint32_t seq)
{
	return esa_tomb_kind(tomb_of(&pr->s, job, seq), job_gen(&pr->s.job[job]), seq);
}

void sim_probe_end_job(struct sim_probe *pr, double t_us, unsigned job)
{
	pr->s.now = (stime_t)llround(t_us * T_US);
	if (pr->s.job[job].state == JS_RUN)
		job_finish(&pr->s, &pr->s.job[job]);
	pr->s.h.n = 0;
}

const struct sim_result *sim_probe_result(const struct sim_probe *pr)
{
	return &pr->r;
}

void sim_probe_free(struct sim_probe *pr)
{
	if (!pr)
		return;
	if (pr->s.W)
		sim_free(&pr->s);
	sim_result_free(&pr->r);
	free(pr);
}

void sim_result_free(struct sim_result *r)
{
	free(r->jct);
	free(r->ts_agg);
	free(r->ts_held);
	free(r->ts_occ);
	r->jct = r->ts_agg = r->ts_held = r->ts_occ = NULL;
}
