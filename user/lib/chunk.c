// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libesa: the window's entries and the packets built for them.  Owns the
 * entries (w->ent: one per stream position, a ring of 2 x window;
 * next_pos, low_pos, nwait): admitting positions into the window
 * (esa_admit_chunks(), as far as the congestion window allows), their
 * priorities (esa_prio_of()), building a position's packets when its inputs are
 * known (check, scale and data chunks, and a redo's), the float32 scale
 * blocks (a block's exponent from its summed histograms, r->blk_E), and a
 * position's end (esa_entry_done()).
 *
 * Each position is a check chunk (every rank's length and dtype), a scale
 * chunk (float32 block exponents) or a data chunk; a data chunk whose
 * result came back flagged overflow is redone in place with one or two
 * more packets.  Sequence numbers and priorities are a deterministic
 * function of the requests: every rank computes the same.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "esa_int.h"
#include "esa_wire.h"

/*
 * The priority of stream position p of request r (esa_prio.h's levels for
 * las and srsf).
 */
uint8_t esa_prio_of(const struct esa_worker *w, const struct esa_request *r,
		    uint32_t p)
{
	const struct esa_config *c = &w->cfg;
	int pmax = c->prio_max < 0 ? c->prio : c->prio_max;
	uint32_t n = r->npos - r->nchk;

	/* Check chunks take the priority of the op's first chunk and count
	 * as no service: las and srsf stay the simulator's. */
	p = p < r->nchk ? 0 : p - r->nchk;
	switch (c->policy) {
	case ESA_PRIO_LAS:
		/* Service attained by the job so far: its positions before. */
		return esa_prio_level(r->attained0 + p, c->quantum, c->prio_steps, pmax);
	case ESA_PRIO_SRSF:
		if (c->total_chunks) {
			/* What the job has left, this chunk included (the
			 * simulator's total - seq); past its total: 0. */
			uint64_t a = r->attained0 + p;

			return esa_prio_level(c->total_chunks > a ? c->total_chunks - a : 0,
					      c->quantum, c->prio_steps, pmax);
		}
		/* What is left of this allreduce after this chunk. */
		return esa_prio_level(n > p ? n - p - 1 : 0, c->quantum, c->prio_steps, pmax);
	default:
		return c->prio;
	}
}

static int32_t *pkt_vals(struct esa_pkt *p)
{
	return (int32_t *)(p->buf + ESA_HDR_LEN);
}

/* Packet k of entry e becomes chunk seq, header written, ready to send. */
static void pkt_init(struct esa_worker *w, struct esa_entry *e, int k, uint32_t seq,
		     uint8_t kind)
{
	struct esa_pkt *p = &e->p[k];
	struct esa_hdr *h = (struct esa_hdr *)p->buf;

	esa_heap_del(w, p);
	if (!esa_io_claim(w, p) && !w->broken) {
		/* rewriting a frame the device still reads would send a mix of
		 * two chunks: stop instead (esa_pump fails every request) */
		esa_worker_fail(w, -EIO, "AF_XDP: send frame %u still posted after a second: "
				"%s does not complete its sends", p->id, w->io_desc);
		w->broken = -EIO;
	}
	p->seq = seq;
	p->kind = kind;
	p->state = PK_READY;
	p->tries = 0;
	p->ovf = 0;
	p->rto_us = w->rto.rto / 1000;
	p->first_ns = p->due_ns = 0;
	esa_ready_push(w, p);
	esa_hdr_init(h, ESA_T_DATA, w->cfg.job, w->cfg.rank, 1ULL << w->cfg.rank, seq,
		     w->nvals);
	h->prio = e->prio;
}

/* Largest biased exponent of this rank's values in block b. */
static unsigned block_maxexp(const struct esa_worker *w, const struct esa_request *r,
			     uint32_t b)
{
	size_t from = (size_t)b * r->block * w->nvals;
	size_t to = from + (size_t)r->block * w->nvals;

	if (to > r->n)
		to = r->n;
	return esa_q_maxexp((const float *)r->in + from, to - from);
}

/*
 * Scale chunk idx: a slice of the op's histogram stream, ESA_HIST_INTS ints
 * per block.  A rank puts one count in the bin of its largest exponent in
 * the block: byte (e % 4) of int (e / 4).  Summed over <= 64 ranks a byte
 * never carries, and the highest non-zero bin is the job's largest exponent.
 */
static void build_scale(struct esa_worker *w, struct esa_entry *e)
{
	struct esa_request *r = e->op;
	uint64_t g0 = (uint64_t)e->idx * w->nvals, g1 = g0 + w->nvals;
	int32_t *v;

	pkt_init(w, e, 0, r->base + r->nchk + e->idx, CK_SCALE);
	v = pkt_vals(&e->p[0]);
	memset(v, 0, w->nvals * sizeof(*v));
	for (uint64_t b = g0 / ESA_HIST_INTS; b < r->nblocks && b * ESA_HIST_INTS < g1; b++) {
		unsigned ex = block_maxexp(w, r, b);
		uint64_t gi = b * ESA_HIST_INTS + ex / 4;

		if (gi >= g0 && gi < g1)
			v[gi - g0] = 1 << (8 * (ex % 4));
	}
	e->npkt = 1;
}

/*
 * Check chunk idx: slice idx of the op's check stream, two ints per rank,
 * where each rank writes its own length and dtype and zeros elsewhere: the
 * sum gives every rank every rank's (check_done()).  Bit 0 says a rank
 * wrote it: a rank that wrote nothing is a peer outside the protocol.
 */
static void build_check(struct esa_worker *w, struct esa_entry *e)
{
	struct esa_request *r = e->op;
	uint64_t v = ((uint64_t)r->n << 2) | ((uint64_t)r->dtype << 1) | 1;
	uint32_t g0 = e->idx * w->nvals, at = 2 * w->cfg.rank;
	int32_t *q;

	pkt_init(w, e, 0, r->base + e->idx, CK_CHECK);
	q = pkt_vals(&e->p[0]);
	memset(q, 0, w->nvals * sizeof(*q));
	if (at >= g0 && at < g0 + w->nvals)
		q[at - g0] = (int32_t)(uint32_t)v;
	if (at + 1 >= g0 && at + 1 < g0 + w->nvals)
		q[at + 1 - g0] = (int32_t)(uint32_t)(v >> 32);
	e->npkt = 1;
}

/* Turn an admitted entry into packets, if its inputs are known. */
static bool try_build(struct esa_worker *w, struct esa_entry *e)
{
	struct esa_request *r = e->op;
	size_t off, len;
	uint32_t seq;

	if (e->part == PT_CHECK) {
		build_check(w, e);
	} else if (e->part == PT_SCALE) {
		build_scale(w, e);
	} else {
		off = (size_t)e->idx * w->nvals;
		len = esa_chunk_len(w, r, e->idx);
		seq = r->base + r->nchk + r->nscale + e->idx;
		if (r->dtype == ESA_INT32) {
			pkt_init(w, e, 0, seq, CK_DATA);
			esa_q_i32((const int32_t *)r->in + off, len, pkt_vals(&e->p[0]), w->nvals);
		} else {
			uint32_t b = e->idx / r->block;

			if (r->blk_E[b] == INT16_MIN)
				return false;
			if (r->blk_bad[b]) {
				/* Every rank knows: nobody sends this block. */
				esa_fill_nan((float *)r->out + off, len);
				e->npkt = 0;
				e->state = EN_RUN;
				w->nwait--;
				esa_entry_done(w, e);
				return true;
			}
			pkt_init(w, e, 0, seq, CK_DATA);
			esa_q_f32((const float *)r->in + off, len, pkt_vals(&e->p[0]), w->nvals,
				  esa_q_shift(r->blk_E[b], r->headroom));
		}
		e->npkt = 1;
	}
	e->state = EN_RUN;
	w->nwait--;
	return true;
}

/* Take positions into the window, as far as the congestion window allows. */
void esa_admit_chunks(struct esa_worker *w)
{
	uint32_t win = esa_cc_window(&w->cc);

	while (w->admit && w->next_pos - w->low_pos < win) {
		struct esa_request *r = w->admit;
		struct esa_entry *e;
		uint32_t p;

		if (r->admitted == r->npos) {
			w->admit = r->next;
			continue;
		}
		p = r->admitted++;
		e = &w->ent[w->next_pos % w->nent];
		for (int k = 0; k < 2; k++) {
			struct esa_pkt *q = &e->p[k];

			esa_heap_del(w, q);
			q->seq = 0;
			q->state = PK_IDLE;
			q->kind = q->ovf = 0;
			q->tries = 0;
		}
		e->op = r;
		e->pos = w->next_pos++;
		if (p < r->nchk) {
			e->part = PT_CHECK;
			e->idx = p;
		} else if (p < r->nchk + r->nscale) {
			e->part = PT_SCALE;
			e->idx = p - r->nchk;
		} else {
			e->part = PT_DATA;
			e->idx = p - r->nchk - r->nscale;
		}
		e->npkt = 0;
		e->prio = esa_prio_of(w, r, p);
		e->state = EN_WAIT;
		w->nwait++;
		try_build(w, e);
	}
}

/* Entry e has its result (or needs none): the window moves past it. */
void esa_entry_done(struct esa_worker *w, struct esa_entry *e)
{
	struct esa_request *r = e->op;

	e->state = EN_DONE;
	w->st.chunks++;
	if (++r->done == r->npos) {
		r->finished = true;
		w->st.ops++;
		w->st.elems += r->n;
	}
	while (w->low_pos < w->next_pos && w->ent[w->low_pos % w->nent].state == EN_DONE)
		w->low_pos++;
}

/* Block b's scale is known: build its data chunks already admitted. */
static void build_block(struct esa_worker *w, struct esa_request *r, uint32_t b)
{
	uint32_t to = (b + 1) * r->block < r->ndata ? (b + 1) * r->block : r->ndata;

	for (uint32_t idx = b * r->block; idx < to; idx++) {
		uint64_t pos = r->pos0 + r->nchk + r->nscale + idx;
		struct esa_entry *e = &w->ent[pos % w->nent];

		if (pos < w->low_pos || pos >= w->next_pos)
			continue;
		if (e->pos == pos && e->op == r && e->state == EN_WAIT)
			try_build(w, e);
	}
}

/* The summed histograms of block b are all in: the block's E. */
static void block_known(struct esa_worker *w, struct esa_request *r, uint32_t b)
{
	const uint8_t *bins = (const uint8_t *)(r->hist + (size_t)b * ESA_HIST_INTS);
	unsigned count = 0;
	int top = -1;

	for (int bin = 0; bin < 4 * ESA_HIST_INTS; bin++) {
		if (bins[bin]) {
			count += bins[bin];
			top = bin;
		}
	}
	if (count != (unsigned)w->cfg.workers) {
		/* Every rank counts once per block: someone reduces something else
		 * (the check chunks say what, if the ranks disagree: check_done). */
		if (!r->status)
			esa_worker_fail(w, -EPROTO, "scale block %u of job %d has %u counts "
					"for %d ranks", b, w->cfg.job, count, w->cfg.workers);
		esa_op_error(r, -EPROTO);
		r->blk_bad[b] = 1;
		top = 0;
	}
	if (top == ESA_EXP_NONFINITE) {
		r->blk_bad[b] = 1;
		esa_op_error(r, -ERANGE);
	}
	r->blk_E[b] = esa_q_E(top < 0 ? 0 : top);
	build_block(w, r, b);
}

/* A scale chunk's summed histograms: every block whose slices are all in is known. */
void esa_scale_result(struct esa_worker *w, struct esa_entry *e, const int32_t *v)
{
	struct esa_request *r = e->op;
	uint64_t g0 = (uint64_t)e->idx * w->nvals, g1 = g0 + w->nvals;

	memcpy(r->hist + g0, v, w->nvals * sizeof(*v));
	r->scale_done[e->idx] = 1;
	for (uint64_t b = g0 / ESA_HIST_INTS; b < r->nblocks && b * ESA_HIST_INTS < g1; b++) {
		uint64_t c0 = b * ESA_HIST_INTS / w->nvals;
		uint64_t c1 = (b * ESA_HIST_INTS + ESA_HIST_INTS - 1) / w->nvals;
		bool all = true;

		for (uint64_t c = c0; c <= c1; c++)
			all &= r->scale_done[c];
		if (all)
			block_known(w, r, b);
	}
}

/*
 * Data chunk e's sum overflowed: redo it in place.  int32: its values as
 * halves (two packets), float32: once more at the safe headroom.  Their
 * sequence numbers follow the op's positions, two per data chunk.
 */
void esa_start_redo(struct esa_worker *w, struct esa_entry *e)
{
	struct esa_request *r = e->op;
	size_t off = (size_t)e->idx * w->nvals, len = esa_chunk_len(w, r, e->idx);
	uint32_t seq = r->base + r->npos + 2 * e->idx;

	w->st.redos++;
	if (r->dtype == ESA_INT32) {
		pkt_init(w, e, 0, seq, CK_REDO_HI);
		pkt_init(w, e, 1, seq + 1, CK_REDO_LO);
		esa_q_split((const int32_t *)r->in + off, len, pkt_vals(&e->p[0]),
			    pkt_vals(&e->p[1]), w->nvals);
		e->npkt = 2;
	} else {
		uint32_t b = e->idx / r->block;

		pkt_init(w, e, 0, seq, CK_REDO_F);
		esa_q_f32((const float *)r->in + off, len, pkt_vals(&e->p[0]), w->nvals,
			  esa_q_shift(r->blk_E[b], esa_redo_headroom(r)));
		e->npkt = 1;
	}
}
