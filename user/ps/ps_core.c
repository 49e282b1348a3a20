// SPDX-License-Identifier: GPL-2.0
/*
 * The parameter server's rules (docs/protocol.md, "The PS"), per (job, chunk):
 *
 * - a RESULT copy from the switch, or a whole sum (DELIVER, or a flush that
 *   completed it) is the answer: kept in a bounded cache to answer resends;
 *   a whole sum is also sent to every worker; policy atp's HOLD is acked;
 * - partials and single ranks merge: multi-rank partials are kept only while
 *   disjoint, singles per rank; complete when they cover every rank; the sum
 *   is the kept partials plus the singles they do not cover (no rank twice);
 * - a resend of a known chunk is answered with its result; from a rank's
 *   second resend of a chunk the PS cannot finish, the other workers are
 *   asked for their copy (FETCH), since the sum may have completed in the
 *   switch while the PS's copy was lost;
 * - ESA_F_OVERFLOW on any piece makes the answer an overflow result: the
 *   workers redo the chunk.
 *
 * Memory is bounded per job: `cache` results and `pending` unfinished
 * chunks, each kept in a ring and evicted oldest first; an evicted piece is
 * never wrong to lose, since workers resend until they have their result.
 * The files around the rules are listed in ps_int.h.
 */
#include <string.h>
#include <arpa/inet.h>

#include "ps_int.h"

/*
 * The chunk's answer is known: keep it, forget its pieces, tell `to`; why:
 * the reason of the piece that finished it (its others' are in the pending
 * entry), echoed to the workers.
 */
static int32_t finish(struct ps *ps, struct ps_job *j, uint32_t seq, uint8_t flags,
		      const int32_t *v, uint64_t to, uint8_t why)
{
	int32_t p = ps_map_get(&j->pend_map, seq), i;
	uint64_t asked = 0;

	if (p >= 0) {
		uint64_t ns = ps->now - j->pend[p].first_ns;

		j->t_hist[esa_hist_bucket(ns / 1000, PS_T_BUCKETS)]++;
		j->t_sum_ns += ns;
		asked = j->pend[p].asked;
		why = esa_reason_max(j->pend[p].why, why);
		ps_pend_drop(j, p);
	}
	i = ps_res_put(ps, j, seq, flags, v);
	j->res[i].asked = asked;
	j->res[i].why = why;
	if (flags & ESA_F_OVERFLOW)
		j->c[PS_C_DONE_OVERFLOW]++;
	if (to == j->full && ps->o.sums_via_switch && ps->o.nsw == 1)
		ps_send_sum(ps, j, i);
	else if (to)
		ps_send_result(ps, j, i, to, false);
	return i;
}

/* ------------------------------------------------------------------ */
/* The merge rule                                                      */
/* ------------------------------------------------------------------ */

/* Complete when kept partials and singles cover every rank. */
static void try_complete(struct ps *ps, struct ps_job *j, int32_t pi)
{
	struct ps_pend *p = &j->pend[pi];
	const int64_t *msum = ps_pend_msum(ps, j, pi);
	uint64_t own = esa_merge_own(&p->m);
	int32_t out[ESA_MAX_VALUES];
	bool ovf = false;
	int nv = ps->o.nvals;

	if (!esa_merge_complete(&p->m, j->full))
		return;
	for (int i = 0; i < nv; i++)
		ps->sum[i] = msum[i];
	for (int r = 0; r < j->cfg.nworkers; r++) {
		const int32_t *s;

		if (!(own & (1ULL << r)))
			continue;
		s = ps_pend_single(ps, j, pi, r);
		for (int i = 0; i < nv; i++)
			ps->sum[i] += s[i];
	}
	for (int i = 0; i < nv; i++) {
		if (ps->sum[i] > INT32_MAX || ps->sum[i] < INT32_MIN)
			ovf = true;
		out[i] = (int32_t)ps->sum[i];
	}
	j->c[PS_C_DONE_MERGED]++;
	finish(ps, j, p->seq, ovf ? ESA_F_OVERFLOW : 0, out, j->full, 0);
}

static void add_single(struct ps *ps, struct ps_job *j, int32_t pi, int rank,
		       const int32_t *v)
{
	struct ps_pend *p = &j->pend[pi];

	if (esa_merge_add(&p->m, 1ULL << rank, false) != ESA_MERGE_KEPT) {
		j->c[PS_C_DUP_SINGLE]++;
		return;
	}
	memcpy(ps_pend_single(ps, j, pi, rank), v, ps->o.nvals * 4);
}

static void add_multi(struct ps *ps, struct ps_job *j, int32_t pi, uint64_t bitmap,
		      const int32_t *v)
{
	struct ps_pend *p = &j->pend[pi];
	int64_t *msum = ps_pend_msum(ps, j, pi);

	if (esa_merge_add(&p->m, bitmap, true) != ESA_MERGE_KEPT) {
		j->c[PS_C_OVERLAP]++;	/* would count a rank twice */
		return;
	}
	for (int i = 0; i < ps->o.nvals; i++)
		msum[i] += v[i];
}

/* ------------------------------------------------------------------ */
/* Receiving                                                           */
/* ------------------------------------------------------------------ */

/*
 * Which switch (o.sw[]) src is, or -1: where PARTIAL, COLLISION and
 * RESULT come from.
 */
static int switch_of(const struct ps *ps, const struct sockaddr_in *src)
{
	for (int i = 0; i < ps->o.nsw && i < PS_MAX_SWITCHES; i++)
		if (src->sin_addr.s_addr == ps->o.sw[i].sin_addr.s_addr &&
		    src->sin_port == ps->o.sw[i].sin_port)
			return i;
	return -1;
}

/* Rank `rank`'s registered address and port. */
static bool from_rank(const struct ps_job *j, uint16_t rank,
		      const struct sockaddr_in *src)
{
	const struct sockaddr_in *r;

	if (rank >= j->cfg.nworkers)
		return false;
	r = &j->cfg.rank[rank];
	return src->sin_addr.s_addr == r->sin_addr.s_addr && src->sin_port == r->sin_port;
}

static bool reason_ok(uint8_t type, uint8_t reason, uint64_t bitmap, uint64_t full)
{
	switch (type) {
	case ESA_T_RESULT:
		return reason == ESA_R_NONE || reason == ESA_R_HOLD;
	case ESA_T_PARTIAL:
		if (reason == ESA_R_DELIVER)
			return bitmap == full;
		/* and a leaf's sum that a spine did not add (two levels) */
		return reason == ESA_R_PREEMPT || reason == ESA_R_FLUSH ||
		       reason == ESA_R_AGED || reason == ESA_R_COLLISION ||
		       reason == ESA_R_TOMB || reason == ESA_R_NOSLOT;
	case ESA_T_COLLISION:
		return reason == ESA_R_COLLISION || reason == ESA_R_TOMB ||
		       reason == ESA_R_RESEND || reason == ESA_R_NOSLOT ||
		       reason == ESA_R_DONE;
	}
	return false;
}

static bool is_resend(const struct esa_hdr *h)
{
	return (h->flags & ESA_F_RESEND) || h->reason == ESA_R_RESEND ||
	       h->reason == ESA_R_DONE;
}

/* A single rank's chunk, through the switch (it collided, or came late). */
static void rx_collision(struct ps *ps, struct ps_job *j, const struct esa_hdr *h,
			 const int32_t *v, uint64_t now_ns)
{
	uint16_t rank = ntohs(h->rank);
	uint32_t seq = ntohl(h->seq);
	uint64_t bit = 1ULL << rank;
	struct ps_pend *p;
	int32_t ri, pi;

	j->c[PS_C_RX_COLLISION]++;
	ri = ps_map_get(&j->res_map, seq);
	if (ri >= 0) {
		if (is_resend(h)) {
			ps_send_result(ps, j, ri, bit, true);
			if (j->res[ri].held)
				ps_send_ack(ps, j, ri);	/* the ack may be lost */
		} else {
			j->c[PS_C_LATE]++;
		}
		return;
	}
	pi = ps_pend_get(ps, j, seq, true);
	j->pend[pi].why = esa_reason_max(j->pend[pi].why, h->reason);
	add_single(ps, j, pi, rank, v);
	if (is_resend(h)) {
		p = &j->pend[pi];
		if (p->resent & bit)
			p->resent2 |= bit;
		p->resent |= bit;
	}
	try_complete(ps, j, pi);
	pi = ps_map_get(&j->pend_map, seq);
	if (pi < 0)
		return;
	p = &j->pend[pi];
	if (((p->resent2 & bit) || h->reason == ESA_R_DONE) &&
	    now_ns - p->fetch_ns >= ps->o.fetch_gap_ms * 1000000ULL) {
		/*
		 * Second resend and still no sum: maybe the switch finished it
		 * and our copy was lost.  The switch says so (DONE) when it
		 * did: then at the first (it sends us no copies, or ours was
		 * lost).  Ask the ranks that did not resend; and tell this one
		 * which ranks we hold (a rank may be gone).
		 */
		p->fetch_ns = now_ns;
		ps_send_fetch(ps, j, pi, (j->full & ~p->resent) | bit);
	}
}

/* A worker's RESULT: its answer to a FETCH we sent it for that chunk. */
static void rx_fetched(struct ps *ps, struct ps_job *j, const struct esa_hdr *h,
		       const int32_t *v)
{
	uint16_t rank = ntohs(h->rank);
	uint32_t seq = ntohl(h->seq);
	uint64_t bit = 1ULL << rank;
	int32_t ri, pi;

	if (rank >= j->cfg.nworkers || be64toh(h->bitmap) != j->full || h->reason) {
		j->c[PS_C_DROP_HEADER]++;
		return;
	}
	ri = ps_map_get(&j->res_map, seq);
	pi = ri < 0 ? ps_map_get(&j->pend_map, seq) : -1;
	if (!((ri >= 0 ? j->res[ri].asked : pi >= 0 ? j->pend[pi].asked : 0) & bit)) {
		j->c[PS_C_DROP_UNASKED]++;
		return;
	}
	j->c[PS_C_RX_FETCHED]++;
	if (ri >= 0) {
		j->c[PS_C_DUP_RESULT]++;	/* another rank answered first */
		return;
	}
	j->c[PS_C_DONE_FETCHED]++;
	/* to those that asked, else to everyone but the one who had it */
	finish(ps, j, seq, h->flags, v,
	       j->pend[pi].resent ? j->pend[pi].resent : j->full & ~bit, 0);
}

/*
 * Switch sw's RESULT: its copy of a sum it completed (atp: HOLD it, and
 * ack it to sw, the top of the job's tree).
 */
static void rx_result(struct ps *ps, struct ps_job *j, const struct esa_hdr *h,
		      const int32_t *v, int sw)
{
	uint32_t seq = ntohl(h->seq);
	int32_t ri;

	if (be64toh(h->bitmap) != j->full) {
		j->c[PS_C_DROP_HEADER]++;
		return;
	}
	ri = ps_map_get(&j->res_map, seq);
	if (h->reason == ESA_R_HOLD) {
		j->c[PS_C_RX_HOLD]++;
		if (ri < 0) {
			j->c[PS_C_DONE_SWITCH]++;
			ri = finish(ps, j, seq, h->flags, v, 0, 0);
		} else {
			j->c[PS_C_DUP_RESULT]++;
		}
		j->res[ri].holder = sw;
		ps_send_ack(ps, j, ri);
		return;
	}
	j->c[PS_C_RX_RESULT]++;
	if (ri >= 0) {
		j->c[PS_C_DUP_RESULT]++;
		return;
	}
	j->c[PS_C_DONE_SWITCH]++;
	finish(ps, j, seq, h->flags, v, 0, 0);	/* the workers have it */
}

/* A partial sum the switch evicted, flushed, aged or could not deliver. */
static void rx_partial(struct ps *ps, struct ps_job *j, const struct esa_hdr *h,
		       const int32_t *v)
{
	uint64_t bitmap = be64toh(h->bitmap);
	uint32_t seq = ntohl(h->seq);
	int32_t ri, pi;

	j->c[PS_C_RX_PARTIAL]++;
	ri = ps_map_get(&j->res_map, seq);
	if (ri >= 0) {
		/* the switch could not deliver our SUM (or its own sum, which
		 * we finished too): to each worker, here */
		if (h->reason == ESA_R_DELIVER)
			ps_send_result(ps, j, ri, j->full, false);
		else if (h->reason == ESA_R_FLUSH)
			ps_send_result(ps, j, ri, bitmap, true);	/* its ranks asked */
		else
			j->c[PS_C_LATE]++;
		return;
	}
	if (h->flags & ESA_F_OVERFLOW) {
		/* This piece has no representable sum: the workers redo. */
		finish(ps, j, seq, ESA_F_OVERFLOW, v, j->full, h->reason);
		return;
	}
	if (bitmap == j->full && h->reason == ESA_R_DELIVER) {
		/* the switch could not deliver it: to each worker, here */
		j->c[PS_C_DONE_DELIVER]++;
		ri = finish(ps, j, seq, 0, v, 0, h->reason);
		ps_send_result(ps, j, ri, j->full, false);
		return;
	}
	if (bitmap == j->full) {
		j->c[PS_C_DONE_MERGED]++;
		finish(ps, j, seq, 0, v, j->full, h->reason);
		return;
	}
	pi = ps_pend_get(ps, j, seq, true);
	j->pend[pi].why = esa_reason_max(j->pend[pi].why, h->reason);
	if (bitmap & (bitmap - 1))
		add_multi(ps, j, pi, bitmap, v);
	else
		add_single(ps, j, pi, __builtin_ctzll(bitmap), v);
	try_complete(ps, j, pi);
}

/* The header of a packet of job j: its drop counter, or -1 if well formed. */
static int bad_header(const struct ps *ps, const struct ps_job *j, const struct esa_hdr *h,
		      size_t len)
{
	uint64_t bitmap = be64toh(h->bitmap);

	if (h->type != ESA_T_RESULT && h->type != ESA_T_PARTIAL &&
	    h->type != ESA_T_COLLISION)
		return PS_C_DROP_TYPE;
	if (len != ESA_HDR_LEN + 4 * (size_t)ps->o.nvals || ntohs(h->count) != ps->o.nvals)
		return PS_C_DROP_COUNT;
	if ((h->flags & ~ESA_F_MASK) || h->resv || !bitmap || (bitmap & ~j->full) ||
	    !reason_ok(h->type, h->reason, bitmap, j->full))
		return PS_C_DROP_HEADER;
	return -1;
}

void ps_rx(struct ps *ps, const uint8_t *buf, size_t len, const struct sockaddr_in *src,
	   uint64_t now_ns)
{
	const struct esa_hdr *h = (const struct esa_hdr *)buf;
	int32_t copy[ESA_MAX_VALUES];
	const int32_t *vals;
	struct ps_job *j;
	uint16_t rank;
	int idx, bad, sw;

	ps->now = now_ns;
	if (len < ESA_HDR_LEN || h->version != ESA_VERSION || !ps->by_id[ntohs(h->job)]) {
		ps->nojob[PS_C_RX]++;
		ps->nojob[!len ? PS_C_RX_PROBE :	/* a worker checks that we run */
			  len < ESA_HDR_LEN ? PS_C_DROP_SHORT :
			  h->version != ESA_VERSION ? PS_C_DROP_VERSION : PS_C_DROP_JOB]++;
		return;
	}
	idx = ps->by_id[ntohs(h->job)];
	j = ps->jobs[idx - 1];
	j->c[PS_C_RX]++;
	bad = bad_header(ps, j, h, len);
	if (bad >= 0) {
		j->c[bad]++;
		return;
	}
	/*
	 * Collisions, partials and the switch's results come from the switch
	 * alone (it checked each rank's packets against its registration);
	 * only a worker answering a FETCH sends a RESULT with its rank, from
	 * its registered address and port.
	 */
	rank = ntohs(h->rank);
	sw = src && src->sin_family == AF_INET ? switch_of(ps, src) : -1;
	if (!src || src->sin_family != AF_INET ||
	    (rank == ESA_RANK_NONE || h->type != ESA_T_RESULT ? sw < 0 :
								 !from_rank(j, rank, src))) {
		j->c[PS_C_DROP_SOURCE]++;
		return;
	}
	/* Read in place where aligned (a receive buffer, an AF_XDP frame), else
	 * from a copy: every packet's values would otherwise be copied twice. */
	if ((uintptr_t)(buf + ESA_HDR_LEN) % _Alignof(int32_t)) {
		memcpy(copy, buf + ESA_HDR_LEN, ps->o.nvals * 4);
		vals = copy;
	} else {
		vals = (const int32_t *)(buf + ESA_HDR_LEN);
	}
	if (h->type == ESA_T_COLLISION) {
		/* One rank's own chunk, unaltered. */
		if (rank >= j->cfg.nworkers || be64toh(h->bitmap) != 1ULL << rank ||
		    (h->flags & ESA_F_OVERFLOW)) {
			j->c[PS_C_DROP_HEADER]++;
			return;
		}
		rx_collision(ps, j, h, vals, now_ns);
	} else if (rank != ESA_RANK_NONE) {
		rx_fetched(ps, j, h, vals);
	} else if (h->type == ESA_T_RESULT) {
		rx_result(ps, j, h, vals, sw);
	} else {
		rx_partial(ps, j, h, vals);
	}
}
