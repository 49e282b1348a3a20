// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libesa: AF_XDP frames and UMEM (xsk_int.h).
 *
 * A frame of the UMEM holds one packet at ESA_XSK_OFF: the XDP headroom
 * the kernel keeps in copy mode (256) and 14 bytes more, so the ESA values
 * of a frame are 16-byte aligned.  Send frames belong to a socket for its
 * life: its DATA packets are built there once, headers and all, and a
 * resend posts the same frame again.  Receive frames cycle between the
 * fill ring, the sockets' RX rings, and their users, who may keep them
 * (libesa keeps each result it uses as the FETCH cache entry).
 *
 * The books, per queue: which frames are free, how many sends of each are
 * posted and not completed (inflight: the completion ring says when), and
 * which belong to a socket that closed while they were posted (orphan:
 * free once their sends complete, never before).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "xsk_int.h"

uint8_t *xq_frame(const struct xq *q, uint32_t f)
{
	return q->area + (size_t)f * q->fs + ESA_XSK_OFF;
}

uint32_t esa_xsk_need(uint32_t tx_frames, uint32_t rx_hold)
{
	return tx_frames + rx_hold + RX_SIZE + RX_BATCH;
}

void xq_refill(struct xq *q)
{
	uint32_t idx, n = xsk_prod_nb_free(&q->fill, q->nfree);

	if (n > q->nfree)
		n = q->nfree;
	if (!n || xsk_ring_prod__reserve(&q->fill, n, &idx) != n)
		return;
	for (uint32_t i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&q->fill, idx + i) =
			(uint64_t)q->free[--q->nfree] * q->fs;
	xsk_ring_prod__submit(&q->fill, n);
}

/* A send of frame f is over (sent, or never to be): an orphan whose last
 * one it was is free again (q->lock). */
static void unpost(struct xq *q, uint32_t f)
{
	if (f >= q->nframes || !q->inflight[f])
		return;
	if (__atomic_sub_fetch(&q->inflight[f], 1, __ATOMIC_RELEASE) || !q->orphan[f])
		return;
	q->orphan[f] = 0;
	q->norphans--;
	q->free[q->nfree++] = f;
	q->avail++;
}

void xq_reap(struct xq *q)
{
	uint32_t idx, n = xsk_ring_cons__peek(&q->comp, COMP_SIZE, &idx);

	for (uint32_t i = 0; i < n; i++)
		unpost(q, *xsk_ring_cons__comp_addr(&q->comp, idx + i) / q->fs);
	if (n)
		xsk_ring_cons__release(&q->comp, n);
}

static void xq_free(struct xq *q)
{
	if (q->umem)
		X.xsk_umem__delete(q->umem);
	if (q->area)
		munmap(q->area, q->size);
	free(q->free);
	free(q->inflight);
	free(q->orphan);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

/* A new queue's UMEM (reg_lock). */
static struct xq *xq_new(struct xdev *d, uint32_t queue, uint32_t frames, uint32_t fs,
			 int *rc, char *err, size_t len)
{
	struct xsk_umem_config uc = { .fill_size = FILL_SIZE, .comp_size = COMP_SIZE,
				      .frame_headroom = UMEM_HEADROOM, .frame_size = fs };
	struct xq *q = calloc(1, sizeof(*q));

	if (!q) {
		*rc = xsk_fail(err, len, ENOMEM, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&q->lock, NULL);
	q->dev = d;
	q->queue = queue;
	q->fs = fs;
	q->nframes = FILL_SIZE + frames;
	q->size = (size_t)q->nframes * fs;
	q->area = mmap(NULL, q->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
		       MAP_POPULATE, -1, 0);
	q->free = malloc(q->nframes * sizeof(*q->free));
	q->inflight = calloc(q->nframes, sizeof(*q->inflight));
	q->orphan = calloc(q->nframes, sizeof(*q->orphan));
	if (q->area == MAP_FAILED || !q->free || !q->inflight || !q->orphan) {
		if (q->area == MAP_FAILED)
			q->area = NULL;
		xq_free(q);
		*rc = xsk_fail(err, len, ENOMEM, "out of memory for a UMEM of %zu MiB",
			       ((size_t)(FILL_SIZE + frames) * fs) >> 20);
		return NULL;
	}
	*rc = X.xsk_umem__create(&q->umem, q->area, q->size, &q->fill, &q->comp, &uc);
	if (*rc) {
		xsk_fail(err, len, *rc, "cannot register a UMEM of %zu MiB: %s%s", q->size >> 20,
			 strerror(-*rc), *rc == -EPERM || *rc == -ENOBUFS || *rc == -ENOMEM ?
			 " (locked memory: ulimit -l, or CAP_IPC_LOCK)" :
			 *rc == -EAFNOSUPPORT ? " (a kernel without CONFIG_XDP_SOCKETS)" : "");
		q->umem = NULL;
		xq_free(q);
		return NULL;
	}
	for (uint32_t i = 0; i < q->nframes; i++)
		q->free[i] = q->nframes - 1 - i;
	q->nfree = q->nframes;
	q->avail = q->nframes - FILL_SIZE;
	return q;
}

struct xq *xq_get(struct xdev *d, uint32_t queue, uint32_t frames, uint32_t fs, int *rc,
		  char *err, size_t len)
{
	struct xq *q;

	for (q = d->qs; q; q = q->next) {
		if (q->queue != queue)
			continue;
		if (q->fs < fs) {
			*rc = xsk_fail(err, len, EINVAL, "%s queue %u: its UMEM's %u-byte frames "
				       "are too small for these packets", d->ifname, queue, q->fs);
			return NULL;
		}
		q->refs++;
		return q;
	}
	q = xq_new(d, queue, frames, fs, rc, err, len);
	if (!q)
		return NULL;
	q->refs = 1;
	q->next = d->qs;
	d->qs = q;
	return q;
}

void xq_put(struct xq *q)
{
	struct xq **pp;

	if (--q->refs)
		return;
	for (pp = &q->dev->qs; *pp != q; pp = &(*pp)->next)
		;
	*pp = q->next;
	xq_free(q);
}

int xq_take(struct esa_xsk *x, uint32_t tx, uint32_t hold, char *err, size_t len)
{
	struct xq *q = x->q;
	uint32_t need = esa_xsk_need(tx, hold);

	if (need > q->avail)
		return xsk_fail(err, len, ENOSPC, "%s queue %u: the UMEM this process's workers "
				"share there has %u frames free, %u needed (xdp_workers sizes it)",
				x->dev->ifname, q->queue, q->avail, need);
	q->avail -= need;
	x->promised = need;
	for (uint32_t i = 0; i < tx; i++)
		x->txf[i] = q->free[--q->nfree];
	x->ntx = tx;
	return 0;
}

void xq_unpost(struct esa_xsk *x)
{
	struct xq *q = x->q;
	uint32_t cons = __atomic_load_n(x->tx.consumer, __ATOMIC_ACQUIRE);
	uint32_t prod = *x->tx.producer;

	pthread_mutex_lock(&q->lock);
	for (uint32_t i = cons; i != prod; i++)
		unpost(q, xsk_ring_prod__tx_desc(&x->tx, i)->addr / q->fs);
	pthread_mutex_unlock(&q->lock);
}

void xq_give(struct esa_xsk *x, bool last)
{
	struct xq *q = x->q;
	uint32_t kept = 0;

	if (last) {
		x->ntx = x->nrel = x->promised = 0;
		return;
	}
	pthread_mutex_lock(&q->lock);
	xq_reap(q);
	for (uint32_t i = 0; i < x->ntx; i++) {
		uint32_t f = x->txf[i];

		if (__atomic_load_n(&q->inflight[f], __ATOMIC_ACQUIRE)) {
			q->orphan[f] = 1;	/* unpost() frees it */
			q->norphans++;
			kept++;
		} else {
			q->free[q->nfree++] = f;
		}
	}
	for (uint32_t i = 0; i < x->nrel; i++)
		q->free[q->nfree++] = x->rel[i] / q->fs;
	q->avail += x->promised - kept;
	x->ntx = x->nrel = x->promised = 0;
	xq_refill(q);
	pthread_mutex_unlock(&q->lock);
}

void esa_xsk_release(struct esa_xsk *x, uint64_t buf)
{
	uint64_t addr = buf & ~ESA_XSK_BUF;

	x->rel[x->nrel++] = addr - addr % x->q->fs;
	if (x->nrel == x->crel)
		esa_xsk_flush(x);
}

/*
 * Zero-copy (XDP_USE_NEED_WAKEUP): a driver that found the fill ring empty
 * stops receiving until it is woken; copy mode fills from the ring in the
 * kernel's receive path and never asks.
 */
void xsk_wake_fill(struct esa_xsk *x)
{
	if (x->q->zerocopy && xsk_ring_prod__needs_wakeup(&x->q->fill))
		recvfrom(X.xsk_socket__fd(x->xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
}

void esa_xsk_flush(struct esa_xsk *x)
{
	struct xq *q = x->q;
	uint32_t filled = __atomic_load_n(q->fill.producer, __ATOMIC_RELAXED) -
			  __atomic_load_n(q->fill.consumer, __ATOMIC_RELAXED);

	/* frames kept (the FETCH cache) come back late: keep the fill ring
	 * stocked from the free ones meanwhile */
	if (!x->nrel && filled >= FILL_SIZE / 2)
		return;
	pthread_mutex_lock(&q->lock);
	for (uint32_t i = 0; i < x->nrel; i++)
		q->free[q->nfree++] = x->rel[i] / q->fs;
	x->nrel = 0;
	xq_refill(q);
	pthread_mutex_unlock(&q->lock);
	xsk_wake_fill(x);
}
