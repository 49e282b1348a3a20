// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libesa: sending.  Owns the packets on their way out: the ready ring and
 * the resend heap (below), the batch being sent (w->spkt), and each sent
 * packet's tries, timeout and deadline (mark_sent()); the transport says
 * when it is full (w->send_blocked).
 */
#include <stdint.h>

#include "esa_int.h"
#include "esa_wire.h"

/*
 * Packets to send.  New ones wait in `ready`, in the order they were built
 * (a packet is queued at most once: resv says it is in the ring); sent ones
 * wait for their result in a min-heap by deadline, so a pass sends what is
 * new and what is late without looking at the rest of the window.
 */
void esa_ready_push(struct esa_worker *w, struct esa_pkt *p)
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

/* Out of the heap (its result came, or it is rebuilt); no-op if not in it. */
void esa_heap_del(struct esa_worker *w, struct esa_pkt *p)
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

static uint64_t rnd(struct esa_worker *w)
{
	/* splitmix64 */
	uint64_t z = (w->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

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
		esa_heap_del(w, p);
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
int esa_send_pass(struct esa_worker *w, uint64_t now)
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
