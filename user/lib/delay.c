// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libesa's emulated link delay (config key link_delay_us), for testbeds
 * whose links have no propagation delay to speak of (veth) and whose
 * kernel has no netem: every datagram this worker sends waits that long in
 * the transport before it goes, and every one it receives waits that long
 * before the engine sees it, as on a wire of that length each way.  Shaping
 * (tbf) and queues stay the kernel's; only the propagation is here.  UDP
 * only.  Sent datagrams are copied (a resend rewrites its packet in place);
 * received ones wait in their own receive buffers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "esa_int.h"
#include "delayline.h"

#define DL_BATCH	ESA_BATCH

struct esa_delay {
	struct esa_dline tx, rx;
	/* tx: a copy of each datagram in line, and where it goes */
	size_t	slot;
	uint8_t	*tx_mem;
	uint32_t *tx_len;
	uint8_t	*tx_ps;		/* to the PS (the unconnected socket), else the switch */
	uint32_t tx_next;	/* the copy slot the next datagram takes */
	/* rx: per receive buffer, its datagram's length and source */
	uint32_t *rx_len;
	struct sockaddr_in *rx_src;
	struct mmsghdr msg[DL_BATCH];
	struct iovec iov[DL_BATCH];
};

uint32_t esa_delay_rx_cap(const struct esa_worker *w)
{
	return w->cfg.link_delay_us ? 8 * w->window + 4 * ESA_BATCH : 0;
}

int esa_delay_open(struct esa_worker *w, char *err, size_t len)
{
	struct esa_delay *d;
	uint64_t ns = (uint64_t)w->cfg.link_delay_us * 1000;
	uint32_t ntx = w->npkts + 4 * ESA_BATCH, nrx = esa_delay_rx_cap(w);

	if (!ns)
		return 0;
	if (w->xsk || w->udp.gro)
		return snprintf(err, len, "link_delay_us works on io=udp without udp_gro "
				"only (it holds datagrams in user space)"), -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	w->delay = d;
	d->slot = w->pktlen;
	d->tx_mem = malloc(d->slot * ntx);
	d->tx_len = calloc(ntx, sizeof(*d->tx_len));
	d->tx_ps = calloc(ntx, 1);
	d->rx_len = calloc(w->udp.nbuf, sizeof(*d->rx_len));
	d->rx_src = calloc(w->udp.nbuf, sizeof(*d->rx_src));
	if (!d->tx_mem || !d->tx_len || !d->tx_ps || !d->rx_len || !d->rx_src ||
	    esa_dline_init(&d->tx, ns, ntx) || esa_dline_init(&d->rx, ns, nrx))
		return snprintf(err, len, "out of memory"), -ENOMEM;
	return 0;
}

void esa_delay_close(struct esa_worker *w)
{
	struct esa_delay *d = w->delay;

	if (!d)
		return;
	esa_dline_free(&d->tx);
	esa_dline_free(&d->rx);
	free(d->tx_mem);
	free(d->tx_len);
	free(d->tx_ps);
	free(d->rx_len);
	free(d->rx_src);
	free(d);
	w->delay = NULL;
}

/* A datagram to the switch (or the PS) goes in line: 0, or -ENOBUFS. */
int esa_delay_send(struct esa_worker *w, const void *buf, size_t len, bool to_ps,
		   uint64_t now)
{
	struct esa_delay *d = w->delay;
	uint32_t k = d->tx_next;

	if (len > d->slot || !esa_dline_push(&d->tx, k, now))
		return -ENOBUFS;
	d->tx_next = (k + 1) % d->tx.cap;
	memcpy(d->tx_mem + (size_t)k * d->slot, buf, len);
	d->tx_len[k] = len;
	d->tx_ps[k] = to_ps;
	return 0;
}

/* Received datagram in buffer buf waits in line: false if the line is full
 * (then the caller hands it over at once). */
bool esa_delay_hold(struct esa_worker *w, uint32_t buf, size_t len,
		    const struct sockaddr_in *src, uint64_t now)
{
	struct esa_delay *d = w->delay;

	if (!esa_dline_push(&d->rx, buf, now))
		return false;
	d->rx_len[buf] = len;
	d->rx_src[buf] = *src;
	return true;
}

/* Send what is due: to the switch in sendmmsg batches, to the PS one by one. */
static void flush_tx(struct esa_worker *w, uint64_t now)
{
	struct esa_delay *d = w->delay;
	uint32_t k;
	int n = 0;

	while (esa_dline_pop(&d->tx, now, &k)) {
		uint8_t *b = d->tx_mem + (size_t)k * d->slot;

		if (d->tx_ps[k]) {
			sendto(w->udp.fd, b, d->tx_len[k], 0,
			       (const struct sockaddr *)&w->cfg.ps, sizeof(w->cfg.ps));
			continue;
		}
		d->iov[n] = (struct iovec){ .iov_base = b, .iov_len = d->tx_len[k] };
		d->msg[n].msg_hdr = (struct msghdr){ .msg_iov = &d->iov[n], .msg_iovlen = 1 };
		if (++n == DL_BATCH) {
			sendmmsg(w->udp.sfd, d->msg, n, 0);
			n = 0;
		}
	}
	if (n)
		sendmmsg(w->udp.sfd, d->msg, n, 0);
}

/*
 * Send what is due and hand the engine what has waited its time: the
 * number of packets handed over.  A datagram the kernel refuses here is
 * lost, as on a wire; the engine's timers resend it.
 */
int esa_delay_flush(struct esa_worker *w, uint64_t now)
{
	struct esa_delay *d = w->delay;
	uint32_t b;
	int got = 0;

	flush_tx(w, now);
	while (esa_dline_pop(&d->rx, now, &b)) {
		uint8_t *p = w->udp.mem + (size_t)b * w->udp.slot;

		if (!w->rx(w, p, d->rx_len[b], &d->rx_src[b], now, b))
			esa_udp_release(&w->udp, b);
		got++;
	}
	return got;
}

/* When the next datagram is due to go or to be handed over. */
uint64_t esa_delay_next(const struct esa_worker *w)
{
	const struct esa_delay *d = w->delay;
	uint64_t a = esa_dline_next(&d->tx), b = esa_dline_next(&d->rx);

	return a < b ? a : b;
}
