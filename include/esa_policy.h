/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The slot-allocation policy as pure functions: which slot a chunk maps to,
 * and what a packet does to the slot it maps to.  Compiled unchanged into the
 * XDP program (under the slot lock: no helper calls, no loops) and into user
 * space (golden tests, the simulator), so both follow exactly one rule book.
 */
#ifndef _ESA_POLICY_H
#define _ESA_POLICY_H

#include <linux/types.h>
#include "esa_maps.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* murmur3's finaliser: spreads job ids over the pool. */
static __always_inline __u32 esa_hash32(__u32 x)
{
	x ^= x >> 16;
	x *= 0x85ebca6bU;
	x ^= x >> 13;
	x *= 0xc2b2ae35U;
	x ^= x >> 16;
	return x;
}

/*
 * Slot of chunk (job, seq), or -1 when the job owns no switch memory.
 *
 * Static regions (switchml): seq modulo the job's own region, which no other
 * job uses.
 *
 * Shared pool (esa, atp), with a home (region_size != 0): seq modulo the
 * job's home, a run of slots the control plane placed (esa_home_place())
 * where few other homes are.  Homes may overlap and may wrap around the end
 * of the pool; where they overlap, priorities decide (preemption).  While a
 * worker's window fits its home, a job never collides with itself, and jobs
 * whose homes do not overlap never collide at all.
 *
 * Shared pool without a home: a job's consecutive chunks take consecutive
 * slots from hash(job), so its window slides around the whole pool as it
 * goes, crossing every other job's.
 */
static __always_inline __s64 esa_slot_index(__u8 policy, __u16 job, __u32 seq,
					     __u32 pool, __u32 region_base,
					     __u32 region_size)
{
	if (policy == ESA_POLICY_SWITCHML) {
		if (!region_size || region_base >= pool ||
		    region_size > pool - region_base)
			return -1;
		return region_base + seq % region_size;
	}
	if (!pool)
		return -1;
	if (region_size) {
		if (region_base >= pool || region_size > pool)
			return -1;
		return ((__u64)region_base + seq % region_size) % pool;
	}
	return (__u32)(esa_hash32(job) + seq) % pool;
}

/* Slots [a, a + x) and [b, b + y) of a pool have in common (x, y <= pool). */
static inline __u32 esa_runs_shared(__u32 a, __u32 x, __u32 b, __u32 y,
				    __u32 pool)
{
	__u64 d = ((__u64)b + pool - a) % pool, n = 0;

	if (d < x)
		n += (d + y < x ? d + y : x) - d;
	if (d + y > pool)
		n += d + y - pool < x ? d + y - pool : x;
	return (__u32)n;
}

struct esa_home {
	__u32	base;
	__u32	size;
};

/*
 * Where a new home of `size` slots goes in a pool of `pool` slots, given the
 * n homes of the active jobs (control plane only: esactl and the simulator).
 * Candidates are slot 0 and the end of every home.  The winner shares the
 * fewest slots with other homes, then meets the fewest homes, then is the
 * tightest fit of a free run (so large gaps stay for later jobs), then the
 * lowest.  So homes do not overlap while they fit, and when they cannot,
 * every home is shared by two jobs before any by three.
 */
static inline __u32 esa_home_place(const struct esa_home *h, __u32 n,
				   __u32 pool, __u32 size)
{
	__u64 best_shared = ~0ull;
	__u32 best = 0, best_meet = ~0u, best_run = ~0u;

	if (!pool || !size)
		return 0;
	if (size > pool)
		size = pool;
	for (__u32 c = 0; c <= n; c++) {
		__u32 at = c ? (__u32)(((__u64)h[c - 1].base + h[c - 1].size) % pool) : 0;
		__u32 meet = 0, run = pool;
		__u64 shared = 0;

		for (__u32 k = 0; k < n; k++) {
			__u32 d = (__u32)(((__u64)h[k].base + pool - at) % pool);
			__u32 hs = h[k].size < pool ? h[k].size : pool, sh;

			if (!hs)
				continue;
			sh = esa_runs_shared(at, size, h[k].base, hs, pool);
			shared += sh;
			meet += sh > 0;
			if (esa_runs_shared(at, 1, h[k].base, hs, pool))
				run = 0;	/* at is inside home k */
			else if (d < run)
				run = d;
		}
		if (shared < best_shared ||
		    (shared == best_shared && meet < best_meet) ||
		    (shared == best_shared && meet == best_meet && run < best_run) ||
		    (shared == best_shared && meet == best_meet && run == best_run &&
		     at < best)) {
			best = at;
			best_shared = shared;
			best_meet = meet;
			best_run = run;
		}
	}
	return best;
}

/* Where chunk seq of job jid keeps its tombstone in esa_tombs. */
static __always_inline __u32 esa_tomb_index(__u32 jid, __u32 seq)
{
	return jid * ESA_TOMB_RING + (seq & (ESA_TOMB_RING - 1));
}

/* The word a tombstone of (generation gen, chunk seq) of this kind holds. */
static __always_inline __u64 esa_tomb_word(__u32 gen, __u32 seq, __u8 kind)
{
	return (__u64)seq << 32 | (__u64)(gen & ESA_TOMB_GEN) << 2 | (kind & 3);
}

/* The tombstone of (generation gen, chunk seq) in t, or ESA_TOMB_NONE. */
static __always_inline __u8 esa_tomb_kind(const struct esa_tomb *t, __u32 gen,
					  __u32 seq)
{
	__u64 w = *(const volatile __u64 *)&t->word;	/* once, whole */
	__u8 kind = w & 3;

	return kind != ESA_TOMB_NONE && w == esa_tomb_word(gen, seq, kind) ?
	       kind : ESA_TOMB_NONE;
}

static __always_inline void esa_tomb_set(struct esa_tomb *t, __u32 gen,
					 __u32 seq, __u8 kind)
{
	*(volatile __u64 *)&t->word = esa_tomb_word(gen, seq, kind);
}

/* Who holds the slot, relative to the packet's key (job, gen, seq). */
enum esa_owner {
	ESA_OWN_NONE = 0,	/* slot free */
	ESA_OWN_SELF,		/* slot busy or held with the packet's key */
	ESA_OWN_LIVE,		/* another key of a live job generation */
	ESA_OWN_DEAD,		/* another key whose job is gone or expired */
};

enum esa_action {
	ESA_A_CLAIM = 0,	/* free slot: start the chunk with the packet */
	ESA_A_RECLAIM,		/* dead owner or aged hold: discard, claim */
	ESA_A_ADD,		/* add the packet, absorb it */
	ESA_A_COMPLETE,		/* add, result to all workers and PS, free */
	ESA_A_HOLD,		/* add, result to the PS only, hold for ack */
	ESA_A_DUPLICATE,	/* rank already in: drop */
	ESA_A_PREEMPT,		/* evict the owner's partial to its PS, claim */
	ESA_A_AGE,		/* evict the owner's idle partial, claim */
	ESA_A_COLLIDE,		/* packet to its PS unaggregated */
	ESA_A_TOMB,		/* chunk left the switch: packet to its PS */
	ESA_A_FLUSH,		/* resend: add if new, partial to PS, free */
	ESA_A_RESEND,		/* resend of a chunk not in the slot: to PS */
	ESA_A_WAIT,		/* resend of a rank in a young partial: drop */
	ESA_A_RESEND_DONE,	/* resend of a chunk completed here: to PS */
	__ESA_A_MAX,
};

/*
 * A chunk's first packet takes slot s (the caller holds its lock): its
 * ranks rset, its flags (ESA_SLOT_F_*).
 */
static __always_inline void esa_slot_take(struct esa_slot *s, __u32 jid,
					  __u32 gen, __u32 seq, __u8 prio,
					  __u64 rset, __u16 flags, __u64 now)
{
	s->state = ESA_SLOT_BUSY;
	s->job = jid;
	s->gen = gen;
	s->seq = seq;
	s->prio = prio;
	s->bitmap = rset;
	s->nranks = 1;
	s->flags = flags;
	s->stamp_ns = now;
}

/* Everything the decision depends on, computed under the slot lock. */
struct esa_view {
	__u8	policy;		/* enum esa_policy */
	__u8	state;		/* enum esa_slot_state */
	__u8	owner;		/* enum esa_owner */
	__u8	tomb;		/* enum esa_tomb_kind of the packet's key */
	__u8	slot_prio;
	__u8	pkt_prio;
	__u8	resend;		/* packet carries ESA_F_RESEND */
	__u8	rank_in;	/* SELF: the packet's rank is already in */
	__u8	completes;	/* SELF: adding the packet completes the sum */
	__u8	stale;		/* LIVE: owner idle past the ageing limit */
	__u8	young;		/* SELF: the partial is not idle past the
				 * ageing limit (never with ageing off)
				 */
	__u8	up;		/* a leaf's (two levels): its sums go up, so
				 * it holds none (atp holds at the top)
				 */
};

/*
 * A resend that finds its chunk's partial at the top box (not a leaf, whose
 * sums go up) while the partial is young (a rank joined it within the
 * ageing limit) is a late result, not a loss: the chunk waits for a slow
 * peer, or for a lost packet of a peer that peer will resend.  It joins the
 * partial if its rank is new, and is dropped if not (ESA_A_WAIT): the slow
 * peer costs a wait, not a trip of the whole chunk through the PS.  An old
 * partial (or any with ageing off, which cannot tell young from stuck) is
 * flushed to the PS as before; a resend that completes the sum completes it.
 */
static __always_inline enum esa_action esa_decide(const struct esa_view *v)
{
	if (v->owner == ESA_OWN_SELF) {
		if (v->state == ESA_SLOT_HELD)
			return v->resend ? ESA_A_RESEND : ESA_A_DUPLICATE;
		if (v->rank_in)
			return !v->resend ? ESA_A_DUPLICATE :
			       v->young && !v->up ? ESA_A_WAIT : ESA_A_FLUSH;
		if (v->completes)
			return v->policy == ESA_POLICY_ATP && !v->up ?
			       ESA_A_HOLD : ESA_A_COMPLETE;
		return v->resend && (!v->young || v->up) ? ESA_A_FLUSH : ESA_A_ADD;
	}
	/* The chunk was here before and left: never restart it in the switch. */
	if (v->tomb == ESA_TOMB_DONE) {
		if (!v->resend)
			return ESA_A_DUPLICATE;
		/* completed here: its result was lost on the way */
		return v->up ? ESA_A_RESEND : ESA_A_RESEND_DONE;
	}
	if (v->tomb == ESA_TOMB_PS)
		return v->resend ? ESA_A_RESEND : ESA_A_TOMB;
	/* A resend never starts a partial: the rest of the chunk is elsewhere. */
	if (v->resend)
		return ESA_A_RESEND;
	if (v->owner == ESA_OWN_NONE)
		return ESA_A_CLAIM;
	if (v->owner == ESA_OWN_DEAD)
		return ESA_A_RECLAIM;
	/* A live owner holds another key. */
	if (v->state == ESA_SLOT_HELD)
		return v->stale ? ESA_A_RECLAIM : ESA_A_COLLIDE;
	if (v->policy == ESA_POLICY_ESA && v->pkt_prio > v->slot_prio)
		return ESA_A_PREEMPT;
	if (v->stale)
		return ESA_A_AGE;
	return ESA_A_COLLIDE;
}

/*
 * A packet that alone has every rank this box sums (a job of one rank, or
 * a leaf with one rank of its job) aggregates nothing: it is the box's sum
 * at once, with no slot (a slot it claimed could never complete, and
 * preempting one for it would gain nothing).
 */
static __always_inline int esa_solo(__u64 rset, __u64 mask)
{
	return rset == mask;
}

/* The lowest rank of a non-empty rank set (a leaf's member at its spine). */
static __always_inline __u32 esa_lowest_rank(__u64 m)
{
	__u32 r = 0;

	if (!(m & 0xffffffffULL)) {
		r += 32;
		m >>= 32;
	}
	if (!(m & 0xffff)) {
		r += 16;
		m >>= 16;
	}
	if (!(m & 0xff)) {
		r += 8;
		m >>= 8;
	}
	if (!(m & 0xf)) {
		r += 4;
		m >>= 4;
	}
	if (!(m & 0x3)) {
		r += 2;
		m >>= 2;
	}
	return r + !(m & 0x1);
}

/* Bitmap of a job with n ranks. */
static __always_inline __u64 esa_full_mask(__u32 n)
{
	return n >= 64 ? ~0ULL : (1ULL << n) - 1;
}

#endif /* _ESA_POLICY_H */
