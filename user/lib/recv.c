// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libesa: receiving.  Owns what the worker learns from its peers: a
 * packet's checks and the use of each result (esa_rx_packet(), which the
 * transport calls through w->rx), the check chunks' verdict, the round-trip
 * estimate (w->rto) and the congestion window (w->cc), the results kept for
 * FETCH (w->rc_*, direct-mapped by sequence number), and the PS's latest
 * FETCH (ps_seq, ps_held, ps_ns), answered from that cache: when a sum
 * completed in the switch and both the PS's copy and one rank's copy were
 * lost, the others' copies are the only ones left.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include "esa_int.h"
#include "esa_hist.h"
#include "esa_wire.h"

/* One rank's (length << 2 | dtype << 1 | 1) from the summed check stream. */
static uint64_t check_of(const struct esa_request *r, int rank)
{
	return (uint32_t)r->chk[2 * rank] | (uint64_t)(uint32_t)r->chk[2 * rank + 1] << 32;
}

static int fmt_check(char *buf, size_t len, int rank, uint64_t v)
{
	if (!(v & 1))
		return snprintf(buf, len, "rank %d nothing", rank);
	return snprintf(buf, len, "rank %d %llu %s", rank, (unsigned long long)(v >> 2),
			v & 2 ? "float32" : "int32");
}

/*
 * Every rank's length and dtype are in: all the same, or this allreduce
 * fails on every rank with the list of what differs, and the worker with
 * it (its ranks reserved different sequence numbers: out of step).
 */
static void check_done(struct esa_worker *w, struct esa_request *r)
{
	uint64_t mine = check_of(r, w->cfg.rank);
	char here[64];
	int o = 0, shown = 0;

	for (int k = 0; k < w->cfg.workers; k++) {
		uint64_t v = check_of(r, k);

		if (v == mine)
			continue;
		if (!shown)
			o = snprintf(w->err, sizeof(w->err), "ranks disagree on allreduce %llu "
				     "of job %d:", (unsigned long long)r->opno, w->cfg.job);
		if (shown++ < 4 && o < (int)sizeof(w->err)) {
			o += snprintf(w->err + o, sizeof(w->err) - o, shown > 1 ? ", " : " ");
			o += fmt_check(w->err + o, sizeof(w->err) - o, k, v);
		}
	}
	if (!shown)
		return;
	fmt_check(here, sizeof(here), w->cfg.rank, mine);
	if (o < (int)sizeof(w->err))
		snprintf(w->err + o, sizeof(w->err) - o, "%s (here %s)", shown > 4 ? ", ..." : "",
			 here);
	r->status = -EPROTO;	/* the cause of whatever else went wrong in it */
	w->broken = -EPROTO;	/* esa_pump fails every request */
}

/* Result of packet k of entry e (values v, flagged overflow or not). */
static void chunk_result(struct esa_worker *w, struct esa_entry *e, int k, bool ovf,
			 const int32_t *v)
{
	struct esa_request *r = e->op;
	size_t off = (size_t)e->idx * w->nvals, len;
	struct esa_pkt *p = &e->p[k];
	uint32_t b;

	if (p->kind == CK_CHECK) {
		/* A check cannot overflow: flagged, its ranks wrote nothing. */
		if (!ovf)
			memcpy(r->chk + (size_t)e->idx * w->nvals, v, w->nvals * sizeof(*v));
		if (!--r->chk_left)
			check_done(w, r);
		esa_entry_done(w, e);
		return;
	}
	if (p->kind == CK_SCALE) {
		static const int32_t zeros[ESA_MAX_VALUES];

		/* Counts cannot overflow: a flagged sum is no histogram, and
		 * its blocks fail their count check (-EPROTO). */
		esa_scale_result(w, e, ovf ? zeros : v);
		esa_entry_done(w, e);
		return;
	}
	len = esa_chunk_len(w, r, e->idx);
	switch (p->kind) {
	case CK_DATA:
		if (ovf) {
			esa_start_redo(w, e);
			return;
		}
		if (r->dtype == ESA_INT32) {
			esa_dq_i32(v, len, (int32_t *)r->out + off);
		} else {
			b = e->idx / r->block;
			esa_dq_f32(v, len, (float *)r->out + off,
				   esa_q_shift(r->blk_E[b], r->headroom));
		}
		break;
	case CK_REDO_HI:
	case CK_REDO_LO:
		memcpy(e->scratch + (p->kind == CK_REDO_LO) * w->nvals, v, len * 4);
		p->ovf = ovf;
		if (e->p[0].state != PK_DONE || e->p[1].state != PK_DONE)
			return;
		if (e->p[0].ovf || e->p[1].ovf) {
			/* Halves cannot overflow for <= 64 ranks: not our peers. */
			esa_op_error(r, -EOVERFLOW);
			memset((int32_t *)r->out + off, 0, len * 4);
		} else if (esa_dq_join(e->scratch, e->scratch + w->nvals, len,
				       (int32_t *)r->out + off)) {
			esa_op_error(r, -EOVERFLOW);	/* the true sum does not fit */
		}
		break;
	case CK_REDO_F:
		b = e->idx / r->block;
		if (ovf) {
			esa_op_error(r, -EOVERFLOW);
			esa_fill_nan((float *)r->out + off, len);
		} else {
			esa_dq_f32(v, len, (float *)r->out + off,
				   esa_q_shift(r->blk_E[b], esa_redo_headroom(r)));
		}
		break;
	}
	esa_entry_done(w, e);
}

/*
 * A chunk answered on its first send: a round-trip sample (esa_rto_sample():
 * srtt + 4 rttvar, within timeout_us and timeout_max_ms).  A round trip
 * includes the wait for the slowest peer's packet, so the estimate follows
 * the job.
 */
static void rtt_sample(struct esa_worker *w, uint64_t ns)
{
	w->st.rtt_us_sum += ns / 1000;
	w->st.rtt_samples++;
	w->st.rtt_hist[esa_hist_bucket(ns / 1000, ESA_RTT_BUCKETS)]++;
	esa_rto_sample(&w->rto, ns);
}

/*
 * What the result of entry e says to the congestion window (esa_cc.h): a
 * sum from the switch grows it; one through the PS for want of switch
 * memory halves it, once per window (with window_min set).
 */
static void window_result(struct esa_worker *w, const struct esa_entry *e,
			  bool from_ps, uint8_t reason)
{
	enum esa_cc_signal sig = esa_cc_classify(from_ps, reason);

	w->st.rx_contention += sig == ESA_CC_CONTENTION;
	esa_cc_result(&w->cc, sig, e->pos, w->next_pos);
	w->st.cc_decreases = w->cc.decreases;
	w->st.cwnd = esa_cc_window(&w->cc);
}

/* Keep a result for FETCH: the received packet itself, in its buffer. */
static void keep_result(struct esa_worker *w, uint32_t seq, uint8_t flags, uint8_t *pkt,
			uint64_t buf)
{
	uint32_t i = seq % w->nrc;

	if (w->rc_flags[i] & ESA_RC_VALID)
		esa_io_release(w, w->rc_buf[i]);
	w->rc_seq[i] = seq;
	w->rc_flags[i] = ESA_RC_VALID | (flags & ESA_F_OVERFLOW);
	w->rc_pkt[i] = pkt;
	w->rc_buf[i] = buf;
}

/*
 * The PS asks for the result of a chunk (it lost the switch's copy and a
 * peer lacks it): send ours, if we still have it.  Only the PS may ask.
 * Its bitmap says which ranks' pieces of the chunk it holds: what the chunk
 * waits for, if we lack it too (diagnose()).
 */
static void answer_fetch(struct esa_worker *w, const struct esa_hdr *f,
			 const struct sockaddr_in *src, uint64_t now)
{
	uint32_t seq = ntohl(f->seq), i = seq % w->nrc;
	struct esa_hdr *h;

	if (f->version != ESA_VERSION || ntohs(f->job) != w->cfg.job ||
	    (be64toh(f->bitmap) & ~w->full) || f->count) {
		w->st.rx_invalid++;
		return;
	}
	if (!src || !esa_same_sin(src, &w->cfg.ps)) {
		w->st.fetch_refused++;
		return;
	}
	w->st.fetch_rx++;
	w->last_ps_ns = now;
	w->ps_seq = seq;
	w->ps_held = be64toh(f->bitmap);
	w->ps_ns = now;
	if (!(w->rc_flags[i] & ESA_RC_VALID) || w->rc_seq[i] != seq)
		return;
	/* The kept result, as received, becomes our answer: only its header
	 * changes (our rank), its values are the sum. */
	h = (struct esa_hdr *)w->rc_pkt[i];
	esa_hdr_init(h, ESA_T_RESULT, w->cfg.job, w->cfg.rank, w->full, seq, w->nvals);
	h->flags = w->rc_flags[i] & ESA_F_OVERFLOW;
	if (!esa_io_send_ps(w, h, w->pktlen, now))
		w->st.fetch_answered++;
}

static struct esa_request *op_of_seq(struct esa_worker *w, uint32_t seq)
{
	for (struct esa_request *r = w->ops; r; r = r->next)
		if ((uint32_t)(seq - r->base) < r->span)
			return r;
	return NULL;
}

/* The entry and packet a result of seq belongs to; NULL if none in flight. */
struct esa_entry *esa_entry_of_seq(struct esa_worker *w, uint32_t seq, int *k)
{
	struct esa_request *r = op_of_seq(w, seq);
	struct esa_entry *e;
	uint32_t off, p;
	uint64_t pos;

	if (!r)
		return NULL;
	off = seq - r->base;
	p = off < r->npos ? off : r->nchk + r->nscale + (off - r->npos) / 2;
	pos = r->pos0 + p;
	if (pos >= w->next_pos)
		return NULL;	/* never sent: not a result of ours */
	e = &w->ent[pos % w->nent];
	if (e->pos != pos || e->op != r)
		return NULL;
	for (*k = 0; *k < e->npkt; (*k)++)
		if (e->p[*k].seq == seq && e->p[*k].state >= PK_SENT)
			break;
	return e;
}

/*
 * One packet from the transport: its UDP payload, from src, in the
 * transport's buffer buf.  True if the worker keeps the buffer (a result,
 * kept for FETCH until a later one takes its slot).
 */
bool esa_rx_packet(struct esa_worker *w, uint8_t *pkt, size_t len,
		   const struct sockaddr_in *src, uint64_t now, uint64_t buf)
{
	const struct esa_hdr *h = (const struct esa_hdr *)pkt;
	struct esa_entry *e;
	bool from_ps;
	int k;

	w->st.rx_packets++;
	if (len == ESA_HDR_LEN && h->type == ESA_T_FETCH) {
		answer_fetch(w, h, src, now);
		return false;
	}
	if (len != w->pktlen || h->version != ESA_VERSION || h->type != ESA_T_RESULT ||
	    ntohs(h->job) != w->cfg.job || ntohs(h->count) != w->nvals ||
	    be64toh(h->bitmap) != w->full || (h->flags & ~ESA_F_MASK)) {
		w->st.rx_invalid++;
		return false;
	}
	/* Results come from the switch or from the PS: address and port. */
	from_ps = src && esa_same_sin(src, &w->cfg.ps);
	if (!src || (!from_ps && !esa_same_sin(src, &w->cfg.sw))) {
		w->st.rx_untrusted++;
		return false;
	}
	*(from_ps ? &w->last_ps_ns : &w->last_sw_ns) = now;
	e = esa_entry_of_seq(w, ntohl(h->seq), &k);
	if (!e) {
		w->st.rx_stale++;
		return false;
	}
	if (k == e->npkt || e->p[k].state == PK_DONE) {
		w->st.rx_duplicates++;
		return false;
	}
	esa_heap_del(w, &e->p[k]);
	e->p[k].state = PK_DONE;
	w->st.rx_results++;
	/* the PS's own, or its sum through the switch (a reason) */
	w->st.rx_from_ps += from_ps || h->reason;
	if (e->p[k].tries == 1)
		rtt_sample(w, now - e->p[k].first_ns);
	window_result(w, e, from_ps, h->reason);
	if (h->flags & ESA_F_OVERFLOW)
		w->st.overflows++;
	if (e->p[k].kind == CK_SCALE)
		w->st.scale_chunks++;
	w->last_rx_ns = now;
	w->probed = false;
	keep_result(w, e->p[k].seq, h->flags, pkt, buf);
	chunk_result(w, e, k, h->flags & ESA_F_OVERFLOW,
		     (const int32_t *)(pkt + ESA_HDR_LEN));
	return true;
}
