// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libesa: requests.  Owns the worker's requests (w->ops, ops_tail, admit:
 * the list in the order they were started) and the sequence numbers and
 * stream positions each reserves (next_base, positions, attained, nops):
 * the request API (esa_allreduce_start(), esa_test(), esa_wait(),
 * esa_request_free(), the blocking calls) and the pump that drives the
 * engine one round (esa_pump(): admit, send, receive, then wait).
 *
 * A worker streams its allreduces as one sequence of positions (the chunks
 * of each request, in the order the requests were started) through a window
 * of `window` positions: position p may be in flight only while every
 * position before p - window has its result.  An allreduce reserves npos
 * positions (check, scale, data chunks in this order) and npos + 2 ndata
 * sequence numbers (a redo's packets after its positions).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "esa_int.h"

/* Some request is not finished yet. */
static bool busy(const struct esa_worker *w)
{
	for (struct esa_request *r = w->ops; r; r = r->next)
		if (!r->finished)
			return true;
	return false;
}

/* A request's memory (esa_request_free(), and closing: esa_worker_close()). */
void esa_op_free(struct esa_request *r)
{
	free(r->chk);
	free(r->hist);
	free(r->scale_done);
	free(r->blk_E);
	free(r->blk_bad);
	free(r);
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
		esa_worker_fail(w, -EINVAL, "bad dtype or buffer");
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
		esa_op_free(r);
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
			esa_op_free(r);
			goto nomem;
		}
		for (uint32_t b = 0; b < r->nblocks; b++)
			r->blk_E[b] = INT16_MIN;
	}
	npos = (uint64_t)r->nchk + r->nscale + r->ndata;
	span = npos + 2 * (uint64_t)r->ndata;
	if (span > (1u << 30)) {
		esa_op_free(r);
		esa_worker_fail(w, -EINVAL, "allreduce too large (%zu elements)", n);
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
	esa_worker_fail(w, -ENOMEM, "out of memory");
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
				esa_heap_del(w, &e->p[0]);
				esa_heap_del(w, &e->p[1]);
			}
		}
		while (w->low_pos < w->next_pos &&
		       w->ent[w->low_pos % w->nent].state == EN_DONE)
			w->low_pos++;
		if (!w->broken) {
			w->broken = -EPIPE;
			esa_worker_fail(w, -EPIPE, "an unfinished allreduce was abandoned");
		}
	}
	op_unlink(w, r);
	/* Finished entries may outlive r: forget it. */
	for (uint32_t i = 0; i < w->nent; i++)
		if (w->ent[i].op == r)
			w->ent[i].op = NULL;
	esa_op_free(r);
}

double esa_request_progress(const esa_request *r)
{
	if (!r)
		return 0;
	if (r->finished || !r->npos)
		return 1;
	return (double)r->done / r->npos;
}

/* Every unfinished request fails with err, and the worker with it. */
static void fail_all(struct esa_worker *w, int err)
{
	for (struct esa_request *r = w->ops; r; r = r->next) {
		if (!r->finished) {
			esa_op_error(r, err);
			r->finished = true;
		}
	}
	if (!w->broken)
		w->broken = err;
}

int esa_pump(struct esa_worker *w, int wait_ms)
{
	uint64_t now = esa_now_mono_ns(), until;
	int rc, got;

	if (w->broken) {
		fail_all(w, w->broken);
		return w->broken;
	}
	esa_admit_chunks(w);
	rc = esa_send_pass(w, now);
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
	rc = esa_silence(w, now);
	if (rc)
		fail_all(w, rc);
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
	esa_worker_fail(w, rc, "socket: %s", strerror(-rc));
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
