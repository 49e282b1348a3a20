// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libesa: the worker engine.
 *
 * A worker streams its allreduces as one sequence of positions (the chunks
 * of each request, in the order the requests were started) through a window
 * of `window` positions: position p may be in flight only while every
 * position before p - window has its result.  Each position is a scale
 * chunk (float32 block exponents), or a data chunk, and a data chunk whose
 * result came back flagged overflow is redone in place with one or two
 * more packets.  Sequence numbers are a deterministic function of the
 * requests (every rank computes the same), and so is every priority.
 *
 * Each position has an entry in a ring of 2 x window entries.  The results
 * of the latest chunks are kept (4 x window, by sequence number) to answer
 * the PS's FETCH: when a sum completed in the switch and both the PS's copy
 * and one rank's copy were lost, the others' copies are the only ones left.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <linux/errqueue.h>

#include "esa_int.h"
#include "esa_hist.h"
#include "esa_policy.h"
#include "esa_wire.h"
#include "xsk.h"

#define NSEC_PER_MSEC	1000000ULL

uint64_t esa_now_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

int esa_version(void)
{
	return ESA_LIB_VERSION;
}

const char *esa_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return "success";
	case EOVERFLOW:
		return "a sum does not fit the output type";
	case ERANGE:
		return "a rank had a NaN or infinity in its input";
	case ETIMEDOUT:
		return "no result came back in time (give_up_ms)";
	case EPIPE:
		return "the worker failed earlier; its ranks are out of step";
	case EPROTO:
		return "the ranks disagree on an allreduce (length or dtype), or a peer broke "
		       "the protocol";
	default:
		return strerror(err);
	}
}

static int wfail(struct esa_worker *w, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int wfail(struct esa_worker *w, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->err, sizeof(w->err), fmt, ap);
	va_end(ap);
	return err;
}

/* Add a note to the worker's warning ("; " between notes). */
void esa_warn(struct esa_worker *w, const char *fmt, ...)
{
	size_t o = strlen(w->warn);
	va_list ap;

	if (o && o + 2 < sizeof(w->warn)) {
		strcpy(w->warn + o, "; ");
		o += 2;
	}
	va_start(ap, fmt);
	vsnprintf(w->warn + o, sizeof(w->warn) - o, fmt, ap);
	va_end(ap);
}

const char *esa_worker_error(const esa_worker *w)
{
	return w ? w->err : "no worker";
}

const char *esa_worker_warning(const esa_worker *w)
{
	return w ? w->warn : "no worker";
}

const char *esa_worker_io(const esa_worker *w)
{
	return w ? w->io_desc : "no worker";
}

static uint64_t rnd(struct esa_worker *w)
{
	/* splitmix64 */
	uint64_t z = (w->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* ------------------------------------------------------------------ */
/* Opening                                                             */
/* ------------------------------------------------------------------ */

/*
 * A run's sequence numbers start at a hash of its number, so that a new run
 * of a job id does not meet the results and pieces the PS keeps of an
 * earlier run by sequence number (docs/library.md, "Runs").  The switch's
 * hash of job ids; it keeps 0 at 0.
 */
uint32_t esa_run_base(uint32_t run)
{
	return esa_hash32(run);
}

int esa_worker_set_run(esa_worker *w, uint32_t run)
{
	if (!w)
		return -EINVAL;
	if (w->nops || w->ops)
		return -EBUSY;
	w->cfg.run = run;
	w->next_base = esa_run_base(run);
	return 0;
}

/* The worker's memory, but for the transport's; 0 or -ENOMEM. */
static int worker_alloc(struct esa_worker *w)
{
	w->ent = calloc(w->nent, sizeof(*w->ent));
	w->scratchmem = calloc((size_t)w->nent * 2 * w->nvals, sizeof(int32_t));
	w->rc_seq = calloc(w->nrc, sizeof(*w->rc_seq));
	w->rc_flags = calloc(w->nrc, 1);
	w->rc_pkt = calloc(w->nrc, sizeof(*w->rc_pkt));
	w->rc_buf = calloc(w->nrc, sizeof(*w->rc_buf));
	w->ready = calloc(w->npkts, sizeof(*w->ready));
	w->heap = calloc(w->npkts, sizeof(*w->heap));
	if (!w->ent || !w->scratchmem || !w->rc_seq || !w->rc_flags || !w->rc_pkt ||
	    !w->rc_buf || !w->ready || !w->heap)
		return -ENOMEM;
	for (uint32_t i = 0; i < w->nent; i++) {
		w->ent[i].scratch = w->scratchmem + (size_t)i * 2 * w->nvals;
		w->ent[i].pos = UINT64_MAX;
	}
	return 0;
}

esa_worker *esa_worker_open(const esa_config *c, char *err, size_t errlen)
{
	char why[256] = "";
	struct esa_worker *w;
	int rc;

	if (!err || !errlen) {
		err = why;
		errlen = sizeof(why);
	}
	if (!c) {
		snprintf(err, errlen, "no config");
		errno = EINVAL;
		return NULL;
	}
	rc = esa_config_check(c, err, errlen);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	w->cfg = *c;
	w->nvals = c->values;
	w->pktlen = ESA_HDR_LEN + 4 * (size_t)w->nvals;
	w->full = c->workers >= 64 ? ~0ULL : (1ULL << c->workers) - 1;
	w->window = c->window;
	w->nent = 2 * w->window;
	w->npkts = 2 * w->nent;
	w->nrc = 4 * w->window;
	w->next_base = esa_run_base(c->run);
	w->udp.fd = w->udp.sfd = -1;
	w->rng = esa_now_mono_ns() ^ ((uint64_t)c->job << 32) ^ ((uint64_t)c->rank << 16) ^
		 (uintptr_t)w;
	rc = worker_alloc(w);
	if (rc)
		snprintf(err, errlen, "out of memory");
	else
		rc = esa_io_open(w, err, errlen);
	if (rc) {
		esa_worker_close(w);
		errno = -rc;
		return NULL;
	}
	for (uint32_t i = 0; i < w->nent; i++) {
		for (int k = 0; k < 2; k++) {
			struct esa_pkt *p = &w->ent[i].p[k];

			p->id = 2 * i + k;
			p->heap = -1;
			p->buf = esa_io_pkt(w, p->id);
		}
	}
	w->st.io_xdp = !!w->xsk;
	w->last_rx_ns = w->last_sw_ns = w->last_ps_ns = esa_now_mono_ns();
	esa_rto_init(&w->rto, (uint64_t)c->timeout_us * 1000,
		     (uint64_t)c->timeout_max_ms * NSEC_PER_MSEC);
	esa_cc_init(&w->cc, c->window_min ? c->window_min : c->window, c->window);
	w->st.cwnd = esa_cc_window(&w->cc);
	return w;
}

static void op_free(struct esa_request *r)
{
	free(r->chk);
	free(r->hist);
	free(r->scale_done);
	free(r->blk_E);
	free(r->blk_bad);
	free(r);
}

void esa_worker_close(esa_worker *w)
{
	struct esa_request *r, *n;

	if (!w)
		return;
	for (r = w->ops; r; r = n) {
		n = r->next;
		op_free(r);
	}
	/* the kept results' buffers back to the transport (AF_XDP: to the
	 * UMEM other workers of this process may share) */
	for (uint32_t i = 0; w->rc_flags && i < w->nrc; i++)
		if (w->rc_flags[i] & ESA_RC_VALID)
			esa_io_release(w, w->rc_buf[i]);
	esa_io_close(w);
	free(w->ent);
	free(w->scratchmem);
	free(w->rc_seq);
	free(w->rc_flags);
	free(w->rc_pkt);
	free(w->rc_buf);
	free(w->ready);
	free(w->heap);
	free(w);
}

/* ------------------------------------------------------------------ */
/* Priorities                                                          */
/* ------------------------------------------------------------------ */

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

/*
 * Packets to send.  New ones wait in `ready`, in the order they were built
 * (a packet is queued at most once: resv says it is in the ring); sent ones
 * wait for their result in a min-heap by deadline, so a pass sends what is
 * new and what is late without looking at the rest of the window.
 */
static void ready_push(struct esa_worker *w, struct esa_pkt *p)
{
	if (p->resv)
		return;
	p->resv = 1;
	w->ready[w->rd_tail++ % w->npkts] = p;
}

static void heap_set(struct esa_worker *w, uint32_t i, struct esa_pkt *p)
{
	w->heap[i] = p;
	p->heap = i;
}

static void heap_up(struct esa_worker *w, uint32_t i)
{
	struct esa_pkt *p = w->heap[i];

	while (i) {
		uint32_t up = (i - 1) / 2;

		if (w->heap[up]->due_ns <= p->due_ns)
			break;
		heap_set(w, i, w->heap[up]);
		i = up;
	}
	heap_set(w, i, p);
}

static void heap_down(struct esa_worker *w, uint32_t i)
{
	struct esa_pkt *p = w->heap[i];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= w->nheap)
			break;
		if (c + 1 < w->nheap && w->heap[c + 1]->due_ns < w->heap[c]->due_ns)
			c++;
		if (w->heap[c]->due_ns >= p->due_ns)
			break;
		heap_set(w, i, w->heap[c]);
		i = c;
	}
	heap_set(w, i, p);
}

static void heap_push(struct esa_worker *w, struct esa_pkt *p)
{
	heap_set(w, w->nheap++, p);
	heap_up(w, p->heap);
}

static void heap_del(struct esa_worker *w, struct esa_pkt *p)
{
	uint32_t i = p->heap;
	struct esa_pkt *last;

	if (p->heap < 0)
		return;
	p->heap = -1;
	last = w->heap[--w->nheap];
	if (i == w->nheap)
		return;
	heap_set(w, i, last);
	heap_up(w, i);
	heap_down(w, last->heap);
}

/* ------------------------------------------------------------------ */
/* Requests                                                            */
/* ------------------------------------------------------------------ */

static bool busy(const struct esa_worker *w)
{
	for (struct esa_request *r = w->ops; r; r = r->next)
		if (!r->finished)
			return true;
	return false;
}

esa_request *esa_allreduce_start(esa_worker *w, int dtype, const void *in,
				 void *out, size_t n)
{
	struct esa_request *r;
	uint64_t npos, span;

	if (!w) {
		errno = EINVAL;
		return NULL;
	}
	if (w->broken) {
		/* w->err still says why */
		errno = EPIPE;
		return NULL;
	}
	if ((dtype != ESA_INT32 && dtype != ESA_FLOAT32) || (n && (!in || !out))) {
		wfail(w, -EINVAL, "bad dtype or buffer");
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		goto nomem;
	r->w = w;
	r->dtype = dtype;
	r->in = in;
	r->out = out;
	r->n = n;
	r->ndata = (n + w->nvals - 1) / w->nvals;
	/* Every rank's length and dtype, two ints in its own slots (check_done) */
	r->nchk = (2 * w->cfg.workers + w->nvals - 1) / w->nvals;
	r->chk_left = r->nchk;
	r->chk = calloc((size_t)r->nchk * w->nvals, sizeof(int32_t));
	if (!r->chk) {
		op_free(r);
		goto nomem;
	}
	if (dtype == ESA_FLOAT32 && r->ndata) {
		r->block = w->cfg.float_block;
		r->nblocks = (r->ndata + r->block - 1) / r->block;
		r->nscale = ((uint64_t)r->nblocks * ESA_HIST_INTS + w->nvals - 1) / w->nvals;
		r->safe_headroom = esa_ilog2_ceil(w->cfg.workers);
		r->headroom = w->cfg.float_headroom < 0 ? r->safe_headroom :
							    w->cfg.float_headroom;
		r->hist = calloc((size_t)r->nscale * w->nvals, sizeof(int32_t));
		r->scale_done = calloc(r->nscale, 1);
		r->blk_E = malloc(r->nblocks * sizeof(int16_t));
		r->blk_bad = calloc(r->nblocks, 1);
		if (!r->hist || !r->scale_done || !r->blk_E || !r->blk_bad) {
			op_free(r);
			goto nomem;
		}
		for (uint32_t b = 0; b < r->nblocks; b++)
			r->blk_E[b] = INT16_MIN;
	}
	npos = (uint64_t)r->nchk + r->nscale + r->ndata;
	span = npos + 2 * (uint64_t)r->ndata;
	if (span > (1u << 30)) {
		op_free(r);
		wfail(w, -EINVAL, "allreduce too large (%zu elements)", n);
		errno = EINVAL;
		return NULL;
	}
	r->npos = npos;
	r->span = span;
	r->base = w->next_base;
	w->next_base += span;
	r->pos0 = w->positions;
	w->positions += npos;
	r->attained0 = w->attained;
	r->opno = w->nops++;
	w->attained += npos - r->nchk;
	r->t_start = esa_now_mono_ns();
	if (!busy(w)) {
		/* the silence clock starts now */
		w->last_rx_ns = r->t_start;
		w->probed = false;
	}
	if (w->ops_tail)
		w->ops_tail->next = r;
	else
		w->ops = r;
	w->ops_tail = r;
	if (!w->admit)
		w->admit = r;
	return r;
nomem:
	wfail(w, -ENOMEM, "out of memory");
	errno = ENOMEM;
	return NULL;
}

static void op_unlink(struct esa_worker *w, struct esa_request *r)
{
	struct esa_request **pp, *prev = NULL;

	for (pp = &w->ops; *pp; prev = *pp, pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			if (w->ops_tail == r)
				w->ops_tail = prev;
			break;
		}
	}
	if (w->admit == r)
		w->admit = r->next;
}

void esa_request_free(esa_request *r)
{
	struct esa_worker *w;

	if (!r)
		return;
	w = r->w;
	if (!r->finished || r->admitted < r->npos) {
		/* Abandoned: the peers will wait for chunks that never come. */
		for (uint64_t pos = w->low_pos; pos < w->next_pos; pos++) {
			struct esa_entry *e = &w->ent[pos % w->nent];

			if (e->op == r) {
				if (e->state == EN_WAIT)
					w->nwait--;
				e->state = EN_DONE;
				e->p[0].state = e->p[1].state = PK_IDLE;
				heap_del(w, &e->p[0]);
				heap_del(w, &e->p[1]);
			}
		}
		while (w->low_pos < w->next_pos &&
		       w->ent[w->low_pos % w->nent].state == EN_DONE)
			w->low_pos++;
		if (!w->broken) {
			w->broken = -EPIPE;
			wfail(w, -EPIPE, "an unfinished allreduce was abandoned");
		}
	}
	op_unlink(w, r);
	/* Finished entries may outlive r: forget it. */
	for (uint32_t i = 0; i < w->nent; i++)
		if (w->ent[i].op == r)
			w->ent[i].op = NULL;
	op_free(r);
}

double esa_request_progress(const esa_request *r)
{
	if (!r)
		return 0;
	if (r->finished || !r->npos)
		return 1;
	return (double)r->done / r->npos;
}

/* ------------------------------------------------------------------ */
/* Building packets                                                    */
/* ------------------------------------------------------------------ */

static int32_t *pkt_vals(struct esa_pkt *p)
{
	return (int32_t *)(p->buf + ESA_HDR_LEN);
}

static void pkt_init(struct esa_worker *w, struct esa_entry *e, int k, uint32_t seq,
		     uint8_t kind)
{
	struct esa_pkt *p = &e->p[k];
	struct esa_hdr *h = (struct esa_hdr *)p->buf;

	heap_del(w, p);
	if (!esa_io_claim(w, p) && !w->broken) {
		/* rewriting a frame the device still reads would send a mix of
		 * two chunks: stop instead (esa_pump fails every request) */
		wfail(w, -EIO, "AF_XDP: send frame %u still posted after a second: %s does "
		      "not complete its sends", p->id, w->io_desc);
		w->broken = -EIO;
	}
	p->seq = seq;
	p->kind = kind;
	p->state = PK_READY;
	p->tries = 0;
	p->ovf = 0;
	p->rto_us = w->rto.rto / 1000;
	p->first_ns = p->due_ns = 0;
	ready_push(w, p);
	esa_hdr_init(h, ESA_T_DATA, w->cfg.job, w->cfg.rank, 1ULL << w->cfg.rank, seq,
		     w->nvals);
	h->prio = e->prio;
}

static size_t chunk_len(const struct esa_worker *w, const struct esa_request *r,
			uint32_t idx)
{
	size_t off = (size_t)idx * w->nvals;

	return r->n - off < (size_t)w->nvals ? r->n - off : (size_t)w->nvals;
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

static void entry_done(struct esa_worker *w, struct esa_entry *e);

static void fill_nan(float *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = NAN;
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
		len = chunk_len(w, r, e->idx);
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
				fill_nan((float *)r->out + off, len);
				e->npkt = 0;
				e->state = EN_RUN;
				w->nwait--;
				entry_done(w, e);
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

static void admit(struct esa_worker *w)
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

			heap_del(w, q);
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

/* ------------------------------------------------------------------ */
/* Results                                                             */
/* ------------------------------------------------------------------ */

static void op_error(struct esa_request *r, int err)
{
	if (!r->status)
		r->status = err;
}

static void entry_done(struct esa_worker *w, struct esa_entry *e)
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
			wfail(w, -EPROTO, "scale block %u of job %d has %u counts for %d ranks",
			      b, w->cfg.job, count, w->cfg.workers);
		op_error(r, -EPROTO);
		r->blk_bad[b] = 1;
		top = 0;
	}
	if (top == ESA_EXP_NONFINITE) {
		r->blk_bad[b] = 1;
		op_error(r, -ERANGE);
	}
	r->blk_E[b] = esa_q_E(top < 0 ? 0 : top);
	build_block(w, r, b);
}

static void scale_result(struct esa_worker *w, struct esa_entry *e, const int32_t *v)
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

static void start_redo(struct esa_worker *w, struct esa_entry *e)
{
	struct esa_request *r = e->op;
	size_t off = (size_t)e->idx * w->nvals, len = chunk_len(w, r, e->idx);
	uint32_t seq = r->base + r->npos + 2 * e->idx;

	w->st.redos++;
	if (r->dtype == ESA_INT32) {
		pkt_init(w, e, 0, seq, CK_REDO_HI);
		pkt_init(w, e, 1, seq + 1, CK_REDO_LO);
		esa_q_split((const int32_t *)r->in + off, len, pkt_vals(&e->p[0]),
			    pkt_vals(&e->p[1]), w->nvals);
		e->npkt = 2;
	} else {
		int h = r->headroom + 1 > r->safe_headroom ? r->headroom + 1 : r->safe_headroom;
		uint32_t b = e->idx / r->block;

		if (h > 30)
			h = 30;
		pkt_init(w, e, 0, seq, CK_REDO_F);
		esa_q_f32((const float *)r->in + off, len, pkt_vals(&e->p[0]), w->nvals,
			  esa_q_shift(r->blk_E[b], h));
		e->npkt = 1;
	}
}

static void chunk_result(struct esa_worker *w, struct esa_entry *e, int k, bool ovf,
			 const int32_t *v)
{
	struct esa_request *r = e->op;
	size_t off = (size_t)e->idx * w->nvals, len;
	struct esa_pkt *p = &e->p[k];
	uint32_t b;
	int h;

	if (p->kind == CK_CHECK) {
		/* A check cannot overflow: flagged, its ranks wrote nothing. */
		if (!ovf)
			memcpy(r->chk + (size_t)e->idx * w->nvals, v, w->nvals * sizeof(*v));
		if (!--r->chk_left)
			check_done(w, r);
		entry_done(w, e);
		return;
	}
	if (p->kind == CK_SCALE) {
		static const int32_t zeros[ESA_MAX_VALUES];

		/* Counts cannot overflow: a flagged sum is no histogram, and
		 * its blocks fail their count check (-EPROTO). */
		scale_result(w, e, ovf ? zeros : v);
		entry_done(w, e);
		return;
	}
	len = chunk_len(w, r, e->idx);
	switch (p->kind) {
	case CK_DATA:
		if (ovf) {
			start_redo(w, e);
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
			op_error(r, -EOVERFLOW);
			memset((int32_t *)r->out + off, 0, len * 4);
		} else if (esa_dq_join(e->scratch, e->scratch + w->nvals, len,
				       (int32_t *)r->out + off)) {
			op_error(r, -EOVERFLOW);	/* the true sum does not fit */
		}
		break;
	case CK_REDO_F:
		b = e->idx / r->block;
		h = r->headroom + 1 > r->safe_headroom ? r->headroom + 1 : r->safe_headroom;
		if (h > 30)
			h = 30;
		if (ovf) {
			op_error(r, -EOVERFLOW);
			fill_nan((float *)r->out + off, len);
		} else {
			esa_dq_f32(v, len, (float *)r->out + off, esa_q_shift(r->blk_E[b], h));
		}
		break;
	}
	entry_done(w, e);
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

static bool same_sin(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	return a->sin_addr.s_addr == b->sin_addr.s_addr && a->sin_port == b->sin_port;
}

/*
 * Errors a send can meet that are not the socket's fault: no route, a
 * firewall, or an ICMP error about an earlier packet that IP_RECVERR left on
 * the socket (then also in its error queue: esa_read_errq()).
 */
bool esa_transient_errno(int e)
{
	switch (e) {
	case ECONNREFUSED: case EHOSTUNREACH: case ENETUNREACH: case EHOSTDOWN:
	case ENETDOWN: case ENONET: case ENOPROTOOPT: case EPROTO: case EMSGSIZE:
	case EOPNOTSUPP: case EACCES: case EPERM:
		return true;
	}
	return false;
}

static void note_icmp(struct esa_worker *w, const struct sockaddr_in *to,
		      const struct sock_extended_err *ee, uint64_t now)
{
	struct esa_icmp *x = same_sin(to, &w->cfg.sw) ? &w->icmp_sw :
			     same_sin(to, &w->cfg.ps) ? &w->icmp_ps : NULL;

	w->st.icmp_errors++;
	if (!x)
		return;
	x->ns = now;
	x->count++;
	x->err = ee->ee_errno;
	x->origin = ee->ee_origin;
	x->from = ((const struct sockaddr_in *)SO_EE_OFFENDER(ee))->sin_addr;
}

/* The socket's queued errors (ICMP about what we sent): noted per peer. */
void esa_read_errq(struct esa_worker *w, int fd, uint64_t now)
{
	union {
		char	buf[CMSG_SPACE(sizeof(struct sock_extended_err) +
				       sizeof(struct sockaddr_in))];
		struct cmsghdr align;
	} cb;
	uint8_t payload[ESA_HDR_LEN];
	struct sockaddr_in to;

	for (;;) {
		struct iovec iov = { payload, sizeof(payload) };
		struct msghdr m = {
			.msg_name = &to, .msg_namelen = sizeof(to), .msg_iov = &iov,
			.msg_iovlen = 1, .msg_control = cb.buf, .msg_controllen = sizeof(cb.buf),
		};
		struct cmsghdr *cm;

		if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			return;
		for (cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
			if (cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR)
				note_icmp(w, &to, (const void *)CMSG_DATA(cm), now);
	}
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
	if (!src || !same_sin(src, &w->cfg.ps)) {
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
static struct esa_entry *entry_of_seq(struct esa_worker *w, uint32_t seq, int *k)
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
	from_ps = src && same_sin(src, &w->cfg.ps);
	if (!src || (!from_ps && !same_sin(src, &w->cfg.sw))) {
		w->st.rx_untrusted++;
		return false;
	}
	*(from_ps ? &w->last_ps_ns : &w->last_sw_ns) = now;
	e = entry_of_seq(w, ntohl(h->seq), &k);
	if (!e) {
		w->st.rx_stale++;
		return false;
	}
	if (k == e->npkt || e->p[k].state == PK_DONE) {
		w->st.rx_duplicates++;
		return false;
	}
	heap_del(w, &e->p[k]);
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

/* ------------------------------------------------------------------ */
/* Sending and receiving                                               */
/* ------------------------------------------------------------------ */

/*
 * p[0..n) went out now: their deadlines, into the heap.  A resend's timeout
 * doubles (esa_rto_backoff(): fully only when nothing comes back, a switch
 * or PS down; while results arrive, a late chunk is a loss or a slow peer,
 * and a long timeout would only stall the window).
 */
static void mark_sent(struct esa_worker *w, struct esa_pkt **p, int n, uint64_t now)
{
	int flowing = now - w->last_rx_ns < w->rto.max_ns;

	for (int i = 0; i < n; i++) {
		uint64_t rto = (uint64_t)p[i]->rto_us * 1000;

		w->st.tx_packets++;
		if (p[i]->state == PK_SENT) {
			w->st.tx_resends++;
			rto = esa_rto_backoff(&w->rto, rto, flowing);
			p[i]->rto_us = rto / 1000;
		} else {
			p[i]->first_ns = now;
			p[i]->state = PK_SENT;
		}
		p[i]->tries++;
		/* a quarter of jitter, so that ranks do not resend in step */
		p[i]->due_ns = now + rto + rnd(w) % (rto / 4 + 1);
		heap_push(w, p[i]);
	}
}

/*
 * Nothing came back for a whole timeout: far more often a peer that has
 * not run (a shared CPU) than a network that lost the whole window.  Then
 * only the oldest few late packets go again, and the rest wait one more
 * timeout each: resending the window would flush every one of its partial
 * sums to the PS.  Anything that comes back ends the quiet.
 */
#define ESA_QUIET_RESENDS	8

static int late_limit(struct esa_worker *w, uint64_t now)
{
	return now - w->last_rx_ns > w->rto.rto ? ESA_QUIET_RESENDS : ESA_BATCH;
}

/* The late packets beyond a quiet round's few: due again a timeout later. */
static void defer_late(struct esa_worker *w, uint64_t now)
{
	while (w->nheap && w->heap[0]->due_ns <= now) {
		struct esa_pkt *p = w->heap[0];

		w->looked++;
		w->st.resends_deferred++;
		p->due_ns = now + (uint64_t)p->rto_us * 1000;
		heap_down(w, 0);
	}
}

/*
 * The next batch: late packets first (they hold the window back), then new
 * ones in order.  A late packet whose buffer is still posted (AF_XDP) waits
 * a little.  Returns the batch's size; *nlate: how many are resends.
 */
static int next_batch(struct esa_worker *w, uint64_t now, int *nlate)
{
	int n = 0, lim = late_limit(w, now);

	while (n < lim && w->nheap && w->heap[0]->due_ns <= now) {
		struct esa_pkt *p = w->heap[0];

		w->looked++;
		if (esa_io_busy(w, p)) {
			p->due_ns = now + 20000;
			heap_down(w, 0);
			continue;
		}
		heap_del(w, p);
		p->buf[2] = ESA_F_RESEND;	/* same bytes, flagged */
		w->spkt[n++] = p;
	}
	if (lim < ESA_BATCH)
		defer_late(w, now);
	*nlate = n;
	while (n < ESA_BATCH && w->rd_head != w->rd_tail) {
		struct esa_pkt *p = w->ready[w->rd_head++ % w->npkts];

		w->looked++;
		p->resv = 0;
		if (p->state == PK_READY)
			w->spkt[n++] = p;
	}
	return n;
}

/* What could not go: late ones stay due, new ones go back to the front. */
static void unsend(struct esa_worker *w, int from, int n, int nlate, uint64_t now)
{
	for (int i = n - 1; i >= from; i--) {
		struct esa_pkt *p = w->spkt[i];

		if (i < nlate) {
			p->due_ns = now;
			heap_push(w, p);
		} else {
			p->resv = 1;
			w->ready[--w->rd_head % w->npkts] = p;
		}
	}
}

/* Send what is new and what is late, until done or the socket is full. */
static int send_pass(struct esa_worker *w, uint64_t now)
{
	w->send_blocked = false;
	for (;;) {
		int nlate, n = next_batch(w, now, &nlate), sent;

		if (!n)
			return 0;
		sent = esa_io_send(w, w->spkt, n, now);
		if (sent < 0)
			return sent;
		mark_sent(w, w->spkt, sent, now);
		if (sent < n)
			unsend(w, sent, n, nlate, now);
		if (w->send_blocked || n < ESA_BATCH)
			return 0;
	}
}

static void fail_all(struct esa_worker *w, int err)
{
	for (struct esa_request *r = w->ops; r; r = r->next) {
		if (!r->finished) {
			op_error(r, err);
			r->finished = true;
		}
	}
	if (!w->broken)
		w->broken = err;
}

static const char *sin_str(const struct sockaddr_in *a, char *buf, size_t len)
{
	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
	snprintf(buf, len, "%s:%u", ip, ntohs(a->sin_port));
	return buf;
}

/* "0,2,5": the ranks of a set, the first 8 of them. */
static const char *ranks_str(uint64_t set, char *buf, size_t len)
{
	int o = 0, n = 0;

	buf[0] = 0;
	for (int r = 0; r < 64 && o < (int)len; r++) {
		if (!(set & (1ULL << r)))
			continue;
		if (n++ == 8) {
			snprintf(buf + o, len - o, ",...");
			break;
		}
		o += snprintf(buf + o, len - o, "%s%d", n > 1 ? "," : "", r);
	}
	return buf;
}

static int fmt_icmp(char *buf, size_t len, const char *who, const struct sockaddr_in *a,
		    const struct esa_icmp *x)
{
	char addr[32], from[INET_ADDRSTRLEN];

	sin_str(a, addr, sizeof(addr));
	inet_ntop(AF_INET, &x->from, from, sizeof(from));
	return snprintf(buf, len, "the %s %s is unreachable: %s (%s%s, %u time%s)", who, addr,
			strerror(x->err), x->origin == SO_EE_ORIGIN_ICMP ? "ICMP from " : "",
			x->origin == SO_EE_ORIGIN_ICMP ? from : "local error", x->count,
			x->count > 1 ? "s" : "");
}

/* The oldest packet still waiting for its result, NULL if none was sent. */
static const struct esa_pkt *oldest_waiting(const struct esa_worker *w)
{
	for (uint64_t pos = w->low_pos; pos < w->next_pos; pos++) {
		const struct esa_entry *e = &w->ent[pos % w->nent];

		for (int k = 0; e->state == EN_RUN && k < e->npkt; k++)
			if (e->p[k].state == PK_SENT)
				return &e->p[k];
	}
	return NULL;
}

/*
 * Giving up: say who is silent.  ICMP errors name an unreachable switch or
 * PS; the PS's latest FETCH names the ranks a chunk waits for (it holds the
 * others' pieces); else which of the switch and the PS sent nothing since
 * the oldest chunk waiting went out.
 */
static void diagnose(struct esa_worker *w, uint64_t now)
{
	const struct esa_pkt *p = oldest_waiting(w);
	char sw[32], ps[32], held[48], lack[48];
	size_t len = sizeof(w->err);
	struct esa_entry *e;
	int o, k;

	sin_str(&w->cfg.sw, sw, sizeof(sw));
	sin_str(&w->cfg.ps, ps, sizeof(ps));
	o = snprintf(w->err, len, "no result for %d ms (job %d rank %d): ", w->cfg.give_up_ms,
		     w->cfg.job, w->cfg.rank);
	e = w->ps_ns ? entry_of_seq(w, w->ps_seq, &k) : NULL;
	if (w->icmp_sw.count && w->icmp_sw.ns >= w->last_sw_ns)
		fmt_icmp(w->err + o, len - o, "switch", &w->cfg.sw, &w->icmp_sw);
	else if (e && k < e->npkt && e->p[k].state == PK_SENT && (w->full & ~w->ps_held))
		snprintf(w->err + o, len - o, "the PS %s holds chunk %u of rank(s) %s and lacks "
			 "rank(s) %s", ps, w->ps_seq, ranks_str(w->ps_held, held, sizeof(held)),
			 ranks_str(w->full & ~w->ps_held, lack, sizeof(lack)));
	else if (w->icmp_ps.count && w->icmp_ps.ns >= w->last_ps_ns)
		fmt_icmp(w->err + o, len - o, "PS", &w->cfg.ps, &w->icmp_ps);
	else if (!p)
		snprintf(w->err + o, len - o, "nothing could be sent (the socket stays full)");
	else if (w->last_sw_ns > p->first_ns)
		snprintf(w->err + o, len - o, "the switch %s answered until %llu ms ago but not "
			 "chunk %u; the PS %s sent nothing about it", sw,
			 (unsigned long long)((now - w->last_sw_ns) / NSEC_PER_MSEC), p->seq, ps);
	else
		snprintf(w->err + o, len - o, "nothing from the switch %s since chunk %u went "
			 "out %llu ms ago, nor from the PS %s; no ICMP error", sw, p->seq,
			 (unsigned long long)((now - p->first_ns) / NSEC_PER_MSEC), ps);
}

/*
 * Silence (no result): half-way to giving up, an empty datagram to the PS,
 * whose ICMP error would say that it is gone (a PS ignores it); at
 * give_up_ms, fail, naming the silent peer.
 */
static int silence(struct esa_worker *w, uint64_t now)
{
	uint64_t quiet = now - w->last_rx_ns, limit = (uint64_t)w->cfg.give_up_ms * NSEC_PER_MSEC;

	if (!w->probed && quiet > limit / 2) {
		w->probed = true;
		w->st.ps_probes++;
		esa_io_send_ps(w, "", 0, now);
	}
	if (quiet <= limit)
		return 0;
	esa_read_errq(w, w->udp.fd, now);
	if (w->udp.sfd >= 0)
		esa_read_errq(w, w->udp.sfd, now);
	diagnose(w, now);
	fail_all(w, -ETIMEDOUT);
	return -ETIMEDOUT;
}

int esa_pump(struct esa_worker *w, int wait_ms)
{
	uint64_t now = esa_now_mono_ns(), until;
	int rc, got;

	if (w->broken) {
		fail_all(w, w->broken);
		return w->broken;
	}
	admit(w);
	rc = send_pass(w, now);
	if (rc < 0)
		goto fatal;
	got = esa_io_recv(w, now);
	if (got < 0) {
		rc = got;
		goto fatal;
	}
	if (got)
		return got;
	if (!busy(w))
		return 0;
	rc = silence(w, now);
	if (rc || !wait_ms)
		return rc;
	/* sleep until input, the next deadline, giving up, or wait_ms */
	until = w->last_rx_ns + (uint64_t)w->cfg.give_up_ms * NSEC_PER_MSEC + 1;
	if (w->nheap && w->heap[0]->due_ns < until)
		until = w->heap[0]->due_ns;
	if (wait_ms > 0 && now + (uint64_t)wait_ms * NSEC_PER_MSEC < until)
		until = now + (uint64_t)wait_ms * NSEC_PER_MSEC;
	if (until <= now || (w->rd_head != w->rd_tail && !w->send_blocked))
		return 0;
	w->st.waits++;
	rc = esa_io_wait(w, until);
	if (rc < 0)
		goto fatal;
	return 0;
fatal:
	wfail(w, rc, "socket: %s", strerror(-rc));
	fail_all(w, -EPIPE);
	return rc;
}

int esa_progress(esa_worker *w, int timeout_ms)
{
	uint64_t end = esa_now_mono_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) *
					    NSEC_PER_MSEC;
	int left, rc;

	if (!w)
		return -EINVAL;
	do {
		uint64_t now = esa_now_mono_ns();
		int ms = now >= end ? 0 : (int)((end - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC);

		rc = esa_pump(w, ms);
		if (rc < 0)
			return rc;
		left = 0;
		for (struct esa_request *r = w->ops; r; r = r->next)
			left += !r->finished;
	} while (left && timeout_ms > 0 && esa_now_mono_ns() < end);
	return left;
}

int esa_serve(esa_worker *w, int timeout_ms, int quiet_ms)
{
	uint64_t start = esa_now_mono_ns(), last = start, end, now;
	uint64_t answered = w ? w->st.fetch_answered : 0, before;

	if (!w)
		return -EINVAL;
	end = start + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * NSEC_PER_MSEC;
	while ((now = esa_now_mono_ns()) < end) {
		uint64_t stop = end;
		int rc;

		if (quiet_ms > 0 && last + (uint64_t)quiet_ms * NSEC_PER_MSEC < stop)
			stop = last + (uint64_t)quiet_ms * NSEC_PER_MSEC;
		if (now >= stop)
			break;
		rc = esa_io_wait(w, stop);
		if (rc < 0)
			return rc;
		before = w->st.rx_packets;
		rc = esa_pump(w, 0);
		if (rc < 0)
			return rc;
		if (w->st.rx_packets != before)
			last = esa_now_mono_ns();
	}
	return (int)(w->st.fetch_answered - answered);
}

int esa_test(esa_request *r, int *status)
{
	int rc;

	if (!r)
		return -EINVAL;
	if (!r->finished) {
		rc = esa_pump(r->w, 0);
		if (rc < 0 && !r->finished)
			return rc;
	}
	if (r->finished && status)
		*status = r->status;
	return r->finished;
}

int esa_wait(esa_request *r, int timeout_ms)
{
	uint64_t end = 0;
	int rc;

	if (!r)
		return -EINVAL;
	if (timeout_ms >= 0)
		end = esa_now_mono_ns() + (uint64_t)timeout_ms * NSEC_PER_MSEC;
	while (!r->finished) {
		int ms = -1;

		if (timeout_ms >= 0) {
			uint64_t now = esa_now_mono_ns();

			if (now >= end)
				return -EAGAIN;
			ms = (int)((end - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC);
		}
		rc = esa_pump(r->w, ms);
		if (rc < 0 && !r->finished)
			return rc;
	}
	return r->status;
}

int esa_allreduce(esa_worker *w, int dtype, const void *in, void *out, size_t n)
{
	esa_request *r = esa_allreduce_start(w, dtype, in, out, n);
	int rc;

	if (!r)
		return -errno;
	rc = esa_wait(r, -1);
	esa_request_free(r);
	return rc;
}

int esa_allreduce_i32(esa_worker *w, const int32_t *in, int32_t *out, size_t n)
{
	return esa_allreduce(w, ESA_INT32, in, out, n);
}

int esa_allreduce_f32(esa_worker *w, const float *in, float *out, size_t n)
{
	return esa_allreduce(w, ESA_FLOAT32, in, out, n);
}

/* ------------------------------------------------------------------ */
/* Statistics                                                          */
/* ------------------------------------------------------------------ */

/* Counters read from the transport when asked. */
static void io_stats(const struct esa_worker *w)
{
	if (w->xsk)
		((struct esa_worker *)w)->st.xdp_drops = esa_xsk_rx_bad(w->xsk);
}

int esa_worker_stats(const esa_worker *w, struct esa_stats *s, size_t size)
{
	if (!w || !s)
		return -EINVAL;
	io_stats(w);
	memcpy(s, &w->st, size < sizeof(w->st) ? size : sizeof(w->st));
	return 0;
}

#define SF(f) { #f, offsetof(struct esa_stats, f) }
static const struct {
	const char *name;
	size_t off;
} stat_fields[] = {
	SF(ops), SF(elems), SF(chunks), SF(tx_packets), SF(tx_resends),
	SF(rx_packets), SF(rx_results), SF(rx_from_ps), SF(rx_duplicates), SF(rx_stale),
	SF(rx_invalid), SF(overflows), SF(redos), SF(scale_chunks), SF(fetch_rx),
	SF(fetch_answered), SF(send_again), SF(rtt_us_sum), SF(rtt_samples),
	SF(rx_untrusted), SF(fetch_refused), SF(icmp_errors), SF(ps_probes), SF(rcvbuf),
	SF(io_xdp), SF(xdp_zerocopy), SF(xdp_drops), SF(udp_gro), SF(rx_coalesced),
	SF(waits), SF(resends_deferred), SF(rx_contention), SF(cc_decreases), SF(cwnd),
};

int64_t esa_worker_stat(const esa_worker *w, const char *name)
{
	if (!w || !name)
		return -1;
	io_stats(w);
	for (size_t i = 0; i < sizeof(stat_fields) / sizeof(stat_fields[0]); i++)
		if (!strcmp(name, stat_fields[i].name))
			return *(const uint64_t *)((const char *)&w->st + stat_fields[i].off);
	return -1;
}
