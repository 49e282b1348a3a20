// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_sim switch: esa_data() and esa_ack() of bpf/esa.bpf.c without the
 * values.  It keeps its pool in the data plane's struct esa_slot and takes
 * each step with include/esa_switch.h: esa_slot_view(), esa_decide(),
 * esa_slot_apply(), esa_outcome() and esa_out_apply(), the XDP program's
 * own code; bitmaps, states, priorities, stamps and tombstones are
 * simulated, values are not.
 */
#include "sim_int.h"

/* Result multicast: one copy per worker, and the PS's copy if ps_copy. */
static void broadcast(struct sim *s, struct job *j, struct pkt *p, int ps_copy)
{
	p->type = ESA_T_RESULT;
	p->rank = ESA_RANK_NONE;
	p->bitmap = j->full;
	for (unsigned r = 0; r < j->spec->nworkers; r++) {
		s->R->c[ESA_C_RESULT_TX]++;
		sim_to_worker(s, j, r, p);
	}
	if (ps_copy) {
		s->R->c[ESA_C_PS_COPY_TX]++;
		sim_to_ps(s, j, p);
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
		sim_mark_diverted(j, p->seq);
	}
	sim_to_ps(s, j, p);
}

/* ------------------------------------------------------------------ */
/* The switch: esa_data() and esa_ack() without the values              */
/* ------------------------------------------------------------------ */

/* The job's generation (the simulator's clock does not stamp activity). */
uint32_t sim_job_gen(const struct job *j)
{
	return esa_life_gen(j->reg.life);
}

int sim_owner_alive(struct sim *s, uint32_t jid, uint32_t gen)
{
	return jid < s->W->njobs && s->job[jid].reg.state == ESA_JOB_ACTIVE &&
	       sim_job_gen(&s->job[jid]) == gen;
}

struct esa_tomb *sim_tomb_of(struct sim *s, uint32_t jid, uint32_t seq)
{
	return &s->tombs[esa_tomb_index(jid, seq)];
}

/* The packet on the wire: the simulator keeps its fields in host order. */
static void pkt_hdr(const struct pkt *p, struct esa_hdr *h)
{
	*h = (struct esa_hdr){
		.version = ESA_VERSION, .type = p->type, .flags = p->flags,
		.prio = p->prio, .job = htobe16(p->job), .rank = htobe16(p->rank),
		.bitmap = htobe64(p->bitmap), .seq = htobe32(p->seq),
		.reason = p->reason,
	};
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

/* The packet as the switch's step left it (esa_outcome()): counted,
 * rewritten by the XDP program's own esa_out_apply() and sent on. */
static void sw_send_out(struct sim *s, struct job *j, struct pkt *p,
			const struct esa_out *o)
{
	struct esa_hdr h;

	for (int i = 0; i < ESA_OUT_MAX_C; i++) {
		if (esa_out_ctr(o->c, i) >= 0)
			s->R->c[esa_out_ctr(o->c, i)]++;
		if (esa_out_ctr(o->oc, i) >= 0)
			s->R->c[esa_out_ctr(o->oc, i)]++;
	}
	if (o->to == ESA_TO_SLOT || o->to == ESA_TO_DROP)
		return;
	pkt_hdr(p, &h);
	esa_out_apply(&h, o);
	pkt_of_hdr(p, &h);
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
		sim_cls_set(s, idx, CL_BUSY);
		s->aux[idx].claimed = s->now;
		if (sim_is_diverted(j, seq))
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
		sim_cls_set(s, idx, act == ESA_A_COMPLETE ? CL_FREE : CL_HELD);
		R->fate[SIM_F_COMPLETED]++;
		sim_mark_done(s, j, seq, 1);
		return;
	case ESA_A_FLUSH:
		sim_cls_set(s, idx, CL_FREE);
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
		.job = jid, .gen = sim_job_gen(j), .seq = p->seq, .prio = p->prio,
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
		sim_mark_done(s, j, k.seq, 1);
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
			 sim_owner_alive(s, sl->job, sl->gen) };
	otomb = sim_tomb_of(s, sl->job, sl->seq);
	view.policy = s->policy;
	view.pkt_prio = p->prio;
	view.resend = !!(p->flags & ESA_F_RESEND);
	esa_slot_view(&view, sl, sim_tomb_of(s, jid, k.seq), &k, &pk, s->now / T_NS,
		      s->stale_ns);
	sl->last = esa_decide(&view);
	R->act[sl->last]++;
	esa_slot_apply(sl, sl->last, view.rank_in, view.tomb == ESA_TOMB_NONE,
		       sim_tomb_of(s, jid, k.seq), otomb, &k, s->now / T_NS, &ev);
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
	if (sidx < 0 || !esa_ack_frees(&s->slot[sidx], sim_tomb_of(s, p->job, p->seq),
				       p->job, sim_job_gen(j), p->seq)) {
		s->R->c[ESA_C_ACK_STALE]++;
		return;
	}
	s->R->c[ESA_C_ACK]++;
	sim_cls_set(s, (uint32_t)sidx, CL_FREE);
	p->reason = ESA_R_NONE;
	broadcast(s, j, p, 0);
}

void sim_sw_proc(struct sim *s, struct pkt *p, unsigned dst)
{
	struct job *j = &s->job[p->job];

	if (dst == DST_TO_PS) {
		/* A worker's answer to FETCH: plain forwarding. */
		if (j->state == JS_RUN)
			sim_to_ps(s, j, p);
		return;
	}
	if (dst != DST_NONE) {
		/* A PS's result or FETCH for one worker: plain forwarding. */
		if (j->state == JS_RUN)
			sim_to_worker(s, j, dst, p);
		return;
	}
	if (p->type == ESA_T_DATA)
		sw_data(s, p);
	else if (p->type == ESA_T_ACK && s->policy == ESA_POLICY_ATP)
		sw_ack(s, p);
	else
		s->R->c[ESA_C_DROP_TYPE]++;
}
