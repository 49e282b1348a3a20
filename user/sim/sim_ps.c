// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_sim parameter servers: docs/protocol.md's merge rule of partials and
 * collisions, results for resends, atp's acks, and FETCH.
 */
#include "sim_int.h"

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
	e->m = (struct esa_merge){ 0 };
	e->resent = 0;
	e->resent2 = 0;
	e->fetch_at = 0;
	e->why = 0;
	return e;
}

/* The PS's result for worker dst, echoing why the chunk reached the PS. */
static void ps_result(struct sim *s, struct job *j, uint32_t seq, unsigned dst,
		      uint8_t why)
{
	struct pkt r = {
		.bitmap = j->full,
		.seq = seq,
		.job = (uint16_t)(j - s->job),
		.rank = ESA_RANK_NONE,
		.type = ESA_T_RESULT,
		.reason = why,
		.from_ps = 1,
	};

	sim_ps_send(s, j, &r, dst);
}

/*
 * The PS finished chunk e: one SUM to the switch, which sends it to the
 * workers (esa-ps with one switch); with racks, or --ps-sums 0, a result
 * to each worker.
 */
static void ps_complete(struct sim *s, struct job *j, struct psent *e)
{
	struct pkt sum = {
		.bitmap = j->full,
		.seq = e->seq,
		.job = (uint16_t)(j - s->job),
		.rank = ESA_RANK_NONE,
		.type = ESA_T_SUM,
		.reason = e->why,
	};

	if (e->nsum != j->spec->nworkers)
		s->R->bad_sum++;
	e->done = 1;
	sim_mark_done(s, j, e->seq, 0);
	if (s->P->ps_sums && !s->racks) {
		sim_ps_send(s, j, &sum, DST_NONE);
		return;
	}
	for (unsigned r = 0; r < j->spec->nworkers; r++)
		ps_result(s, j, e->seq, r, e->why);
}

/*
 * A worker resent chunk e twice (or once, when the switch says it completed
 * the chunk: DONE) and the PS still has no sum: the sum may have completed
 * in the switch while the PS's copy was lost (or not sent), and then the
 * workers that got it never resend.  Ask the others for it (FETCH), at most
 * once per worker timeout.
 */
static void ps_maybe_fetch(struct sim *s, struct job *j, struct psent *e,
			   uint64_t bit, int done)
{
	struct pkt f = {
		.seq = e->seq,
		.job = (uint16_t)(j - s->job),
		.rank = ESA_RANK_NONE,
		.type = ESA_T_FETCH,
	};
	uint64_t to = j->full & ~e->resent;

	if (e->done || !((e->resent2 & bit) || done) || !to ||
	    (e->fetch_at && s->now - e->fetch_at < s->t0))
		return;
	e->fetch_at = s->now;
	s->R->ps_fetch++;
	for (unsigned r = 0; r < j->spec->nworkers; r++)
		if (to & (1ULL << r))
			sim_ps_send(s, j, &f, r);
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
			ps_result(s, j, e->seq, r, e->why);
}

void sim_ps_proc(struct sim *s, struct pkt *p)
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
			if (e->m.multi | e->m.single)
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
			sim_ps_send(s, j, &a, DST_NONE);
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
				ps_result(s, j, p->seq, p->rank, e ? e->why : p->reason);
			}
			return;
		}
		e->why = esa_reason_max(e->why, p->reason);
		if (p->bitmap == 1ULL << p->rank &&
		    ((p->flags & ESA_F_RESEND) || p->reason == ESA_R_RESEND ||
		     p->reason == ESA_R_DONE)) {
			if (e->resent & p->bitmap)
				e->resent2 |= p->bitmap;
			e->resent |= p->bitmap;
			ps_maybe_fetch(s, j, e, p->bitmap, p->reason == ESA_R_DONE);
		}
		/* The real PS's merge rule (esa_merge.h): no rank twice. */
		switch (esa_merge_add(&e->m, p->bitmap, true)) {
		case ESA_MERGE_OVERLAP:
			s->R->ps_overlap++;
			return;
		case ESA_MERGE_DUP:
			s->R->ps_dup++;
			return;
		}
		s->R->ps_merged++;
		if (esa_merge_complete(&e->m, j->full)) {
			e->nsum = __builtin_popcountll(e->m.multi) +
				  __builtin_popcountll(esa_merge_own(&e->m));
			ps_complete(s, j, e);
		}
		return;
	default:
		return;
	}
}
