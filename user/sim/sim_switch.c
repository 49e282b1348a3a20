// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_sim switch: esa_data(), esa_ack() and esa_down() of bpf/esa.bpf.c
 * without the values, at each box (the one switch, or a leaf or the spine
 * of racks).  A box keeps its pool in the data plane's struct esa_slot and
 * takes each step with include/esa_switch.h: the key as esa_key_of() makes
 * it (rset, mask, up), esa_slot_view(), esa_decide(), esa_slot_apply(),
 * esa_outcome() and esa_out_apply(), the XDP program's own code; bitmaps,
 * states, priorities, stamps and tombstones are simulated, values are not.
 */
#include "sim_int.h"

/* Counter c at box b: the total, and with racks its level's. */
static void count(struct sim *s, unsigned b, unsigned c)
{
	s->R->c[c]++;
	if (s->racks)
		(b ? s->R->c_leaf : s->R->c_spine)[c]++;
}

/*
 * Result multicast from box b: one copy per member (a worker, or at a
 * spine a leaf, which fans it out), and the PS's copy if ps_copy.
 */
static void broadcast(struct sim *s, unsigned b, struct job *j, struct pkt *p,
		      int ps_copy)
{
	p->type = ESA_T_RESULT;
	p->rank = ESA_RANK_NONE;
	p->bitmap = j->full;
	if (j->at[b].leaves) {
		for (unsigned l = 1; l < s->nbox; l++) {
			if (!j->at[l].mask)
				continue;
			count(s, b, ESA_C_RESULT_TX);
			sim_down(s, l, p, DST_NONE, l);
		}
	} else {
		for (unsigned r = 0; r < j->spec->nworkers; r++) {
			count(s, b, ESA_C_RESULT_TX);
			sim_to_rank(s, b, j, r, p);
		}
	}
	if (ps_copy) {
		count(s, b, ESA_C_PS_COPY_TX);
		sim_to_ps(s, b, j, p);
	}
}

/* esa_to_ps(): a rewritten packet to the job's PS, if the job is alive. */
static void sw_to_ps(struct sim *s, unsigned b, unsigned jid, struct pkt *p)
{
	struct job *j = &s->job[jid];

	if (j->reg.state != ESA_JOB_ACTIVE) {
		count(s, b, ESA_C_DROP_JOB);
		return;
	}
	count(s, b, ESA_C_PS_TX);
	if (p->type == ESA_T_PARTIAL || p->type == ESA_T_COLLISION) {
		s->R->sw_fallback++;
		sim_mark_diverted(j, p->seq);
	}
	sim_to_ps(s, b, j, p);
}

/* ------------------------------------------------------------------ */
/* The switch: esa_data(), esa_ack(), esa_down() without the values     */
/* ------------------------------------------------------------------ */

struct esa_tomb *sim_tomb_of(struct sim *s, unsigned b, uint32_t jid,
			     uint32_t seq)
{
	return &s->box[b].tombs[esa_tomb_index(jid, seq)];
}

/* The packet on the wire: the simulator keeps its fields in host order. */
static void pkt_hdr(const struct pkt *p, struct esa_hdr *h)
{
	esa_hdr_init(h, p->type, p->job, p->rank, p->bitmap, p->seq, 0);
	h->flags = p->flags;
	h->prio = p->prio;
	h->reason = p->reason;
}

static void pkt_of_hdr(struct pkt *p, const struct esa_hdr *h)
{
	p->type = h->type;
	p->flags = h->flags;
	p->prio = h->prio;
	p->job = be16toh(h->job);
	p->rank = be16toh(h->rank);
	p->bitmap = be64toh(h->bitmap);
	p->seq = be32toh(h->seq);
	p->reason = h->reason;
}

/* The packet as box b's step left it (esa_outcome()): counted, rewritten
 * by the XDP program's own esa_out_apply() and sent on. */
static void sw_send_out(struct sim *s, unsigned b, struct job *j,
			struct pkt *p, const struct esa_out *o)
{
	struct esa_hdr h;

	for (int i = 0; i < ESA_OUT_MAX_C; i++) {
		if (esa_out_ctr(o->c, i) >= 0)
			count(s, b, esa_out_ctr(o->c, i));
		if (esa_out_ctr(o->oc, i) >= 0)
			count(s, b, esa_out_ctr(o->oc, i));
	}
	if (o->to == ESA_TO_SLOT || o->to == ESA_TO_DROP)
		return;
	pkt_hdr(p, &h);
	esa_out_apply(&h, o);
	pkt_of_hdr(p, &h);
	if (o->to == ESA_TO_MEMBERS) {
		broadcast(s, b, j, p, s->P->ps_copy);
	} else if (o->to == ESA_TO_UP) {
		s->R->data_tx++;	/* the leaf's sum: DATA for the spine */
		sim_up(s, b, p, DST_NONE, 0);
	} else {
		sw_to_ps(s, b, o->job, p);
	}
}

/* A complete sum at box b: the chunk's result, or a leaf's part of it. */
static void sw_complete(struct sim *s, unsigned b, struct job *j,
			const struct esa_key *k)
{
	if (k->up) {
		s->R->fate[SIM_F_UP]++;
		sim_mark_up(s, j, b, k->seq);
		return;
	}
	s->R->fate[SIM_F_COMPLETED]++;
	sim_mark_done(s, j, k->seq, 1);
}

/* What the simulator measures beyond the switch's state: slot classes,
 * useful time, orphan claims, and the fate of each data packet. */
static void sw_account(struct sim *s, unsigned b, uint32_t idx, struct job *j,
		       const struct esa_key *k, uint8_t act)
{
	struct esa_slot *sl = &s->box[b].slot[idx];
	struct slot_aux *a = &s->box[b].aux[idx];
	struct sim_result *R = s->R;

	switch (act) {
	case ESA_A_CLAIM:
	case ESA_A_RECLAIM:
	case ESA_A_PREEMPT:
	case ESA_A_AGE:
		sim_cls_set(s, b, idx, CL_BUSY);
		a->claimed = s->now;
		if (sim_is_diverted(j, k->seq))
			R->orphan_claims++;
		/* fall through */
	case ESA_A_ADD:
		R->fate[SIM_F_ABSORBED]++;
		return;
	case ESA_A_DUPLICATE:
	case ESA_A_WAIT:
		R->fate[SIM_F_DUPLICATE]++;
		return;
	case ESA_A_COMPLETE:
	case ESA_A_HOLD:
		if (sl->bitmap != k->mask || sl->nranks != j->at[b].members)
			R->bad_complete++;
		s->useful += (double)(s->now - a->claimed);
		sim_cls_set(s, b, idx, act == ESA_A_COMPLETE ? CL_FREE : CL_HELD);
		sw_complete(s, b, j, k);
		return;
	case ESA_A_FLUSH:
		sim_cls_set(s, b, idx, CL_FREE);
		/* fall through */
	default:	/* COLLIDE, TOMB, RESEND, RESEND_DONE */
		R->fate[SIM_F_TO_PS]++;
		return;
	}
}

/* esa_key_of(): the packet's key at box b, from the job's registration. */
static void sw_key(struct esa_key *k, const struct sim *s, unsigned b,
		   const struct job *j, const struct pkt *p)
{
	const struct jreg *jr = &j->at[b];
	unsigned rank = p->rank & (ESA_MAX_WORKERS - 1);

	*k = (struct esa_key){
		.job = p->job, .gen = sim_job_gen(j), .seq = p->seq,
		.prio = p->prio, .nworkers = j->reg.nworkers,
		/* a spine's member is a leaf: the ranks under it */
		.rset = jr->leaves ? j->at[j->leaf[rank]].mask : 1ULL << rank,
		.mask = jr->mask, .up = jr->up,
		.leaf = !!(p->flags & ESA_F_LEAF),
		.ovf = !!(p->flags & ESA_F_OVERFLOW),
		.resend = !!(p->flags & ESA_F_RESEND),
	};
}

/* esa_data_slot(): the slot step at box b, under what would be its lock. */
static void sw_slot(struct sim *s, unsigned b, struct job *j, struct pkt *p,
		    const struct esa_key *k, uint32_t idx)
{
	struct esa_slot *sl = &s->box[b].slot[idx];
	struct esa_tomb *tomb = sim_tomb_of(s, b, k->job, k->seq), *otomb;
	struct esa_view view = {};
	struct esa_evicted ev = {};
	struct esa_out o = {};
	struct esa_peek pk;

	/* No concurrency here, so the data plane's peek is exact. */
	pk = (struct esa_peek){ .job = sl->job, .gen = sl->gen, .seq = sl->seq,
		.alive = sl->state == ESA_SLOT_FREE ||
			 (sl->job == k->job && sl->gen == k->gen) ||
			 sim_owner_alive(s, sl->job, sl->gen) };
	otomb = sim_tomb_of(s, b, sl->job, sl->seq);
	view.policy = s->policy;
	view.pkt_prio = p->prio;
	view.resend = k->resend;
	esa_slot_view(&view, sl, tomb, k, &pk, s->now / T_NS, s->stale_ns);
	sl->last = esa_decide(&view);
	s->R->act[sl->last]++;
	esa_slot_apply(sl, sl->last, view.rank_in, view.tomb == ESA_TOMB_NONE,
		       tomb, otomb, k, s->now / T_NS, &ev);
	sw_account(s, b, idx, j, k, sl->last);
	esa_outcome(&o, sl->last, &ev, 0, k->job, k);
	sw_send_out(s, b, j, p, &o);
}

/* esa_data(): a DATA packet at box b (a worker's, or at a spine a leaf's). */
static void sw_data(struct sim *s, unsigned b, struct pkt *p)
{
	struct job *j = &s->job[p->job];
	const struct jreg *jr = &j->at[b];
	struct esa_out o = {};
	struct esa_key k;
	int64_t sidx;

	count(s, b, ESA_C_RX);
	s->R->data_rx++;
	if (b == 0 && s->racks)
		s->R->job_spine_rx[p->job]++;
	/* esa_admit(): only registered, active jobs. */
	if (j->reg.state != ESA_JOB_ACTIVE || p->rank >= j->reg.nworkers ||
	    !jr->mask) {
		count(s, b, ESA_C_DROP_JOB);
		s->R->fate[SIM_F_DROPPED]++;
		return;
	}
	sw_key(&k, s, b, j, p);
	if (esa_solo(k.rset, k.mask)) {
		if (k.up && k.resend)
			s->R->fate[SIM_F_TO_PS]++;
		else
			sw_complete(s, b, j, &k);
		esa_outcome_solo(&o, p->job, &k);
		sw_send_out(s, b, j, p, &o);
		return;
	}
	sidx = esa_slot_index(s->policy, p->job, k.seq, s->P->pool,
			      jr->region_base, jr->region_size);
	if (sidx < 0) {
		s->R->fate[SIM_F_TO_PS]++;
		esa_outcome_noslot(&o, p->job, &k);
		sw_send_out(s, b, j, p, &o);
		return;
	}
	sw_slot(s, b, j, p, &k, (uint32_t)sidx);
}

/*
 * esa_ack(): policy atp, the PS's ack frees the held slot and becomes the
 * members' result; an ack matching no held sum is dropped (acks_stale).
 */
static void sw_ack(struct sim *s, unsigned b, struct pkt *p)
{
	struct job *j = &s->job[p->job];
	const struct jreg *jr = &j->at[b];
	int64_t sidx;

	count(s, b, ESA_C_RX);
	if (b == 0 && s->racks)
		s->R->job_spine_rx[p->job]++;
	if (j->reg.state != ESA_JOB_ACTIVE || !jr->mask) {
		count(s, b, ESA_C_DROP_JOB);
		return;
	}
	sidx = esa_slot_index(s->policy, p->job, p->seq, s->P->pool,
			      jr->region_base, jr->region_size);
	if (sidx < 0 || !esa_ack_frees(&s->box[b].slot[sidx],
				       sim_tomb_of(s, b, p->job, p->seq),
				       p->job, sim_job_gen(j), p->seq)) {
		count(s, b, ESA_C_ACK_STALE);
		return;
	}
	count(s, b, ESA_C_ACK);
	sim_cls_set(s, b, (uint32_t)sidx, CL_FREE);
	p->reason = ESA_R_NONE;
	broadcast(s, b, j, p, 0);
}

/*
 * esa_sum(): a sum the PS finished, to the job's members as their result
 * (with the PS's reason), never back to the PS.
 */
static void sw_sum(struct sim *s, unsigned b, struct pkt *p)
{
	struct job *j = &s->job[p->job];

	count(s, b, ESA_C_RX);
	if (j->reg.state != ESA_JOB_ACTIVE || !j->at[b].mask) {
		count(s, b, ESA_C_DROP_JOB);
		return;
	}
	count(s, b, ESA_C_PS_SUM);
	broadcast(s, b, j, p, 0);
}

/* esa_down(): at leaf b, its spine's result goes on to the leaf's ranks. */
static void sw_down(struct sim *s, unsigned b, struct pkt *p)
{
	struct job *j = &s->job[p->job];

	count(s, b, ESA_C_RX);
	if (j->reg.state != ESA_JOB_ACTIVE || !j->at[b].up) {
		count(s, b, ESA_C_DROP_TYPE);
		return;
	}
	count(s, b, ESA_C_DOWN_RX);
	for (unsigned r = 0; r < j->spec->nworkers; r++) {
		if (j->leaf[r] != b)
			continue;
		count(s, b, ESA_C_RESULT_TX);
		sim_to_worker(s, j, r, p);
	}
}

/*
 * A packet at box b for box `to` (or, with dst, for a worker or the PS):
 * routed on, or this box's business.
 */
void sim_sw_proc(struct sim *s, unsigned b, unsigned to, struct pkt *p,
		 unsigned dst)
{
	struct job *j = &s->job[p->job];

	if (dst == DST_TO_PS) {
		/* A worker's answer to FETCH, or a leaf's packet for the PS
		 * on its way: plain forwarding. */
		if (j->state == JS_RUN)
			sim_to_ps(s, b, j, p);
		return;
	}
	if (dst != DST_NONE) {
		/* A PS's result or FETCH for one worker: plain forwarding. */
		if (j->state == JS_RUN)
			sim_to_rank(s, b, j, dst, p);
		return;
	}
	if (to != b) {
		sim_forward(s, b, to, p);
		return;
	}
	if (p->type == ESA_T_DATA)
		sw_data(s, b, p);
	else if (p->type == ESA_T_ACK && s->policy == ESA_POLICY_ATP)
		sw_ack(s, b, p);
	else if (p->type == ESA_T_SUM)
		sw_sum(s, b, p);
	else if (p->type == ESA_T_RESULT && b)
		sw_down(s, b, p);
	else
		count(s, b, ESA_C_DROP_TYPE);
}
