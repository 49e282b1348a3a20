/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The switch's step for one packet, around the policy's decision
 * (esa_policy.h): how the slot looks from the packet's key
 * (esa_slot_view), what the decision does to the slot and the tombstones
 * (esa_slot_apply), and what the packet becomes after it: the counters it
 * bumps, where it goes (esa_outcome), its new header (esa_out_apply).
 * Policy atp's ack (esa_ack_frees).  Compiled unchanged by the XDP program,
 * under the slot lock where it says so, and by the simulator: one switch.
 * The values are the caller's (the XDP program adds them in its own step;
 * the simulator has none).
 */
#ifndef _ESA_SWITCH_H
#define _ESA_SWITCH_H

#include "esa_policy.h"
#include "esa_wire.h"	/* the header's byte order */

/* The key a slot held before this packet's decision evicted it. */
struct esa_evicted {
	__u64	bitmap;
	__u32	seq;
	__u16	job;
	__u8	prio;
	__u8	ovf;		/* a leaf's sum in it had left int32 */
};

/*
 * The packet's key and what its job is at this box.  A worker's packet
 * carries one rank; a leaf's (two levels), at its spine, the sum of its
 * ranks.  This box completes a chunk when it has every rank of mask: all
 * the job's, or at a leaf the leaf's own, whose sum then goes up.
 */
struct esa_key {
	__u32	job;
	__u32	gen;
	__u32	seq;
	__u32	nworkers;	/* the job's ranks */
	__u64	rset;		/* the packet's ranks: 1 << rank, or a leaf's */
	__u64	mask;		/* the ranks this box sums */
	__u8	prio;
	__u8	leaf;		/* the packet is a leaf's sum */
	__u8	ovf;		/* ... and it left int32 */
	__u8	up;		/* this box is a leaf: complete sums go up */
	__u8	resend;		/* a worker's resend (ESA_F_RESEND) */
	__u8	resv[3];
};

/*
 * What the switch saw of the slot's owner before taking the lock (a lookup
 * may not run under it): the owner then, and whether it was alive.
 */
struct esa_peek {
	__u32	job;
	__u32	gen;
	__u32	seq;
	int	alive;
};

/*
 * The slot's owner as the packet's key sees it (under the slot lock).  An
 * owner that changed since the peek is left alone: treated as live with the
 * highest priority (the packet collides, never wrongly evicts).
 */
static __always_inline void esa_slot_view(struct esa_view *view,
					  const struct esa_slot *s,
					  const struct esa_tomb *tomb,
					  const struct esa_key *k,
					  const struct esa_peek *pk,
					  __u64 now, __u64 stale_ns)
{
	view->state = s->state;
	view->slot_prio = s->prio;
	view->up = k->up;
	if (s->state == ESA_SLOT_FREE) {
		view->owner = ESA_OWN_NONE;
	} else if (s->job == k->job && s->gen == k->gen && s->seq == k->seq) {
		view->owner = ESA_OWN_SELF;
		view->rank_in = !!(s->bitmap & k->rset);
		view->completes = (s->bitmap | k->rset) == k->mask;
		view->young = stale_ns &&
			      (__s64)(now - s->stamp_ns) <= (__s64)stale_ns;
	} else if (s->job != pk->job || s->gen != pk->gen || s->seq != pk->seq) {
		view->owner = ESA_OWN_LIVE;
		view->slot_prio = 0xff;
	} else {
		view->owner = pk->alive ? ESA_OWN_LIVE : ESA_OWN_DEAD;
		view->stale = stale_ns &&
			      (__s64)(now - s->stamp_ns) > (__s64)stale_ns;
	}
	if (view->owner != ESA_OWN_SELF)	/* else the slot says where it is */
		view->tomb = esa_tomb_kind(tomb, k->gen, k->seq);
}

/*
 * What decision act does to slot s and to the tombstones (under the slot
 * lock): tomb is the packet's chunk's, otomb the slot owner's.  rank_in:
 * the packet's rank was in the slot already; no_tomb: the packet's chunk
 * had no tombstone yet.  *ev gets the key the slot held before.
 */
static __always_inline void esa_slot_apply(struct esa_slot *s, __u8 act,
					   int rank_in, int no_tomb,
					   struct esa_tomb *tomb,
					   struct esa_tomb *otomb,
					   const struct esa_key *k, __u64 now,
					   struct esa_evicted *ev)
{
	__u16 flags = k->ovf ? ESA_SLOT_F_OVF : 0;

	ev->job = s->job;
	ev->seq = s->seq;
	ev->prio = s->prio;
	ev->ovf = !!(s->flags & ESA_SLOT_F_OVF);
	switch (act) {
	case ESA_A_CLAIM:
	case ESA_A_RECLAIM:
		esa_slot_take(s, k->job, k->gen, k->seq, k->prio, k->rset,
			      flags, now);
		break;
	case ESA_A_ADD:
	case ESA_A_COMPLETE:
	case ESA_A_HOLD:
		s->bitmap |= k->rset;
		s->nranks++;
		s->flags |= flags;
		s->stamp_ns = now;
		ev->ovf = !!(s->flags & ESA_SLOT_F_OVF);
		if (act == ESA_A_COMPLETE) {
			s->state = ESA_SLOT_FREE;
			esa_tomb_set(tomb, k->gen, k->seq, ESA_TOMB_DONE);
		} else if (act == ESA_A_HOLD) {
			s->state = ESA_SLOT_HELD;
		}
		break;
	case ESA_A_PREEMPT:
	case ESA_A_AGE:
		ev->bitmap = s->bitmap;
		esa_tomb_set(otomb, s->gen, s->seq, ESA_TOMB_PS);
		esa_slot_take(s, k->job, k->gen, k->seq, k->prio, k->rset,
			      flags, now);
		break;
	case ESA_A_FLUSH:
		if (!rank_in) {
			s->bitmap |= k->rset;
			s->nranks++;
			s->flags |= flags;
		}
		ev->bitmap = s->bitmap;
		ev->ovf = !!(s->flags & ESA_SLOT_F_OVF);
		s->state = ESA_SLOT_FREE;
		esa_tomb_set(tomb, k->gen, k->seq, ESA_TOMB_PS);
		break;
	case ESA_A_COLLIDE:
	case ESA_A_RESEND:
		if (no_tomb)
			esa_tomb_set(tomb, k->gen, k->seq, ESA_TOMB_PS);
		break;
	default: /* ESA_A_DUPLICATE, ESA_A_TOMB */
		break;
	}
}

/* Where the packet goes after the step. */
enum esa_to {
	ESA_TO_SLOT = 0,	/* absorbed in the slot */
	ESA_TO_DROP,		/* dropped (a duplicate) */
	ESA_TO_PS,		/* to the PS of out.job */
	ESA_TO_MEMBERS,		/* the sum, to every member of the job */
	ESA_TO_UP,		/* a leaf's sum of its ranks, to its spine */
};

/* Which header fields the packet takes from struct esa_out. */
#define ESA_SET_KEY	0x1	/* prio, job, seq: the evicted key's */
#define ESA_SET_BITMAP	0x2
#define ESA_SET_RANK	0x4	/* rank: out.rank */
#define ESA_SET_FLAGS	0x8	/* else the packet keeps its own (RESEND) */

#define ESA_OUT_MAX_C	4	/* counters an outcome bumps, per job */

/*
 * What the packet becomes after the step, and what is counted: up to
 * ESA_OUT_MAX_C counters of the packet's job (c) and of the evicted key's
 * job (oc), packed a byte each as counter + 1 (0 ends the list; packed,
 * not in arrays, so that the XDP program never writes its stack at a
 * variable offset).
 */
struct esa_out {
	__u8	to;		/* enum esa_to */
	__u8	set;		/* ESA_SET_*: fields beyond type and reason */
	__u8	type;		/* 0: unchanged */
	__u8	flags;
	__u8	reason;
	__u8	prio;
	__u16	job;		/* whose PS (ESA_TO_PS), or the packet's job */
	__u16	rank;		/* with ESA_SET_RANK (else ESA_RANK_NONE) */
	__u16	resv;
	__u32	seq;
	__u32	c, oc;
	__u64	bitmap;
};

static __always_inline void esa_out_push(__u32 *list, __u8 ctr)
{
	for (int i = 0; i < ESA_OUT_MAX_C; i++)
		if (!(*list >> 8 * i & 0xff)) {
			*list |= (__u32)(ctr + 1) << 8 * i;
			return;
		}
}

static __always_inline void esa_out_c(struct esa_out *o, __u8 ctr)
{
	esa_out_push(&o->c, ctr);
}

static __always_inline void esa_out_oc(struct esa_out *o, __u8 ctr)
{
	esa_out_push(&o->oc, ctr);
}

/* Counter i (0 ..) of a packed list, or -1 past its end. */
static __always_inline int esa_out_ctr(__u32 list, int i)
{
	return (int)(list >> 8 * i & 0xff) - 1;
}

/* The packet becomes the sum of its chunk. */
static __always_inline void esa_out_result(struct esa_out *o, __u32 nworkers,
					   __u64 ovf)
{
	o->type = ESA_T_RESULT;
	o->flags = ovf ? ESA_F_OVERFLOW : 0;
	o->set = ESA_SET_RANK | ESA_SET_BITMAP | ESA_SET_FLAGS;
	o->bitmap = esa_full_mask(nworkers);
}

/*
 * The packet goes to its job's PS as it came, not summed here: a worker's
 * as a COLLISION (one rank); a leaf's, several ranks, as a PARTIAL.  The
 * caller set the reason.
 */
static __always_inline void esa_out_unsummed(struct esa_out *o,
					     const struct esa_key *k)
{
	o->to = ESA_TO_PS;
	if (!k->leaf) {
		o->type = ESA_T_COLLISION;
		return;
	}
	o->type = ESA_T_PARTIAL;
	o->flags = k->ovf ? ESA_F_OVERFLOW : 0;
	o->set = ESA_SET_RANK | ESA_SET_FLAGS;
}

/*
 * The job has no switch memory (policy switchml without a region): the
 * packet goes to its PS unsummed, a worker's as a COLLISION, a leaf's sum
 * as the PARTIAL it is (a PS drops a COLLISION of several ranks).
 */
static __always_inline void esa_outcome_noslot(struct esa_out *o, __u32 jid,
					       const struct esa_key *k)
{
	o->job = jid;
	o->rank = ESA_RANK_NONE;
	esa_out_c(o, ESA_C_NOSLOT);
	o->reason = ESA_R_NOSLOT;
	esa_out_unsummed(o, k);
}

/* The packet becomes the partial the slot held (ev), for its job's PS. */
static __always_inline void esa_out_partial(struct esa_out *o,
					    const struct esa_evicted *ev,
					    __u8 reason, __u64 ovf)
{
	o->to = ESA_TO_PS;
	o->type = ESA_T_PARTIAL;
	o->flags = ovf ? ESA_F_OVERFLOW : 0;
	o->reason = reason;
	o->set = ESA_SET_KEY | ESA_SET_RANK | ESA_SET_BITMAP | ESA_SET_FLAGS;
	o->prio = ev->prio;
	o->job = ev->job;
	o->seq = ev->seq;
	o->bitmap = ev->bitmap;
}

/*
 * A leaf's complete sum of its ranks (mask) becomes its DATA to the spine,
 * as the member that is its lowest rank there.
 */
static __always_inline void esa_out_up(struct esa_out *o, __u64 mask, __u64 ovf)
{
	o->to = ESA_TO_UP;
	o->type = ESA_T_DATA;
	o->flags = ESA_F_LEAF | (ovf ? ESA_F_OVERFLOW : 0);
	o->set = ESA_SET_BITMAP | ESA_SET_FLAGS | ESA_SET_RANK;
	o->rank = esa_lowest_rank(mask);
	o->bitmap = mask;
}

/*
 * The packet's header after the step: type and reason always, the fields
 * o->set names, the rest as the packet came.  In network byte order.
 */
static __always_inline void esa_out_apply(struct esa_hdr *h,
					  const struct esa_out *o)
{
	h->type = o->type;
	h->reason = o->reason;
	if (o->set & ESA_SET_FLAGS)
		h->flags = o->flags;
	if (o->set & ESA_SET_KEY) {
		h->prio = o->prio;
		h->job = esa_htons(o->job);
		h->seq = esa_htonl(o->seq);
	}
	if (o->set & ESA_SET_RANK)
		h->rank = esa_htons(o->rank);
	if (o->set & ESA_SET_BITMAP)
		h->bitmap = esa_htonll(o->bitmap);
}

/*
 * After the step: what decision act made of the packet k of job jid (ovf:
 * the sum it carries out left int32), and the counters of the packet's job
 * and of the evicted key's job.
 */
static __always_inline void esa_outcome(struct esa_out *o, __u8 act,
					const struct esa_evicted *ev,
					__u64 ovf, __u32 jid,
					const struct esa_key *k)
{
	o->job = jid;
	o->rank = ESA_RANK_NONE;
	ovf |= ev->ovf;
	switch (act) {
	case ESA_A_RECLAIM:
		esa_out_oc(o, ESA_C_RECLAIMED);
		/* fall through */
	case ESA_A_CLAIM:
		esa_out_c(o, ESA_C_CLAIMED);
		return;
	case ESA_A_ADD:
		esa_out_c(o, ESA_C_AGGREGATED);
		return;
	case ESA_A_DUPLICATE:
		o->to = ESA_TO_DROP;
		esa_out_c(o, ESA_C_DUPLICATE);
		return;
	case ESA_A_COMPLETE:
	case ESA_A_HOLD:
		esa_out_c(o, ESA_C_AGGREGATED);
		if (act == ESA_A_COMPLETE && k->up) {	/* a leaf's part done */
			esa_out_c(o, ESA_C_UP_TX);
			esa_out_up(o, k->mask, ovf);
			return;
		}
		esa_out_result(o, k->nworkers, ovf);
		if (ovf)
			esa_out_c(o, ESA_C_OVERFLOW);
		if (act == ESA_A_HOLD) {
			esa_out_c(o, ESA_C_HELD);
			o->reason = ESA_R_HOLD;
			o->to = ESA_TO_PS;
		} else {
			esa_out_c(o, ESA_C_COMPLETED);
			o->to = ESA_TO_MEMBERS;
		}
		return;
	case ESA_A_PREEMPT:
	case ESA_A_AGE:
		esa_out_c(o, ESA_C_CLAIMED);
		esa_out_oc(o, ESA_C_EVICTED);
		if (act == ESA_A_PREEMPT) {
			esa_out_c(o, ESA_C_PREEMPT_CAUSED);
			esa_out_oc(o, ESA_C_PREEMPT_SUFFERED);
		} else {
			esa_out_oc(o, ESA_C_AGED);
		}
		if (ovf)
			esa_out_oc(o, ESA_C_OVERFLOW);
		esa_out_partial(o, ev, act == ESA_A_PREEMPT ? ESA_R_PREEMPT :
				ESA_R_AGED, ovf);
		return;
	case ESA_A_FLUSH:
		esa_out_c(o, ESA_C_RESEND_FLUSH);
		esa_out_c(o, ESA_C_EVICTED);
		if (ovf)
			esa_out_c(o, ESA_C_OVERFLOW);
		esa_out_partial(o, ev, ESA_R_FLUSH, ovf);
		return;
	case ESA_A_COLLIDE:
		esa_out_c(o, ESA_C_COLLISION);
		o->reason = ESA_R_COLLISION;
		break;
	case ESA_A_TOMB:
		esa_out_c(o, ESA_C_TOMB_FWD);
		o->reason = ESA_R_TOMB;
		break;
	case ESA_A_WAIT:
		o->to = ESA_TO_DROP;
		esa_out_c(o, ESA_C_RESEND_HELD);
		return;
	case ESA_A_RESEND_DONE:
		esa_out_c(o, ESA_C_RESEND_FWD);
		o->reason = ESA_R_DONE;
		break;
	default: /* ESA_A_RESEND */
		esa_out_c(o, ESA_C_RESEND_FWD);
		o->reason = ESA_R_RESEND;
		break;
	}
	esa_out_unsummed(o, k);
}

/*
 * A packet that alone is this box's sum (esa_solo()): the result, at once,
 * with no slot; at a leaf, its DATA to the spine, but a resend goes to the
 * PS, as at any leaf (its spine has the chunk done, or will never have it).
 */
static __always_inline void esa_outcome_solo(struct esa_out *o, __u32 jid,
					     const struct esa_key *k)
{
	o->job = jid;
	o->rank = ESA_RANK_NONE;
	if (k->up && k->resend) {
		esa_out_c(o, ESA_C_RESEND_FWD);
		o->reason = ESA_R_RESEND;
		esa_out_unsummed(o, k);
		return;
	}
	if (k->up) {
		esa_out_c(o, ESA_C_UP_TX);
		esa_out_up(o, k->mask, k->ovf);
		return;
	}
	esa_out_c(o, ESA_C_COMPLETED);
	esa_out_result(o, k->nworkers, k->ovf);
	o->to = ESA_TO_MEMBERS;
}

/*
 * Policy atp: does the PS's ack of (job, gen, seq) free slot s (under its
 * lock)?  Only a sum held there with the same key and generation.
 */
static __always_inline int esa_ack_frees(struct esa_slot *s,
					 struct esa_tomb *tomb, __u32 job,
					 __u32 gen, __u32 seq)
{
	if (s->state != ESA_SLOT_HELD || s->job != job || s->gen != gen ||
	    s->seq != seq)
		return 0;
	s->state = ESA_SLOT_FREE;
	esa_tomb_set(tomb, gen, seq, ESA_TOMB_DONE);
	return 1;
}

#endif /* _ESA_SWITCH_H */
