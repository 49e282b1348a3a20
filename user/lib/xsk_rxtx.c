// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libesa: AF_XDP sending and receiving (xsk_int.h).
 *
 * Sending.  A frame is built once (its headers to the next hop's MAC) and
 * posted to the socket's TX ring, as many as the ring has room for; the
 * kernel takes them when kicked (copy mode: in the system call, a batch at
 * a time; zero-copy: the driver, once woken).  A frame stays posted (busy:
 * it must not change) until the completion ring gives it back.  A device
 * that pushes back, or is down, leaves frames in the ring: they are offered
 * again later (esa_xsk_tx_kick()), which is not an error; nor is a device
 * that is down (ENETDOWN, or ENXIO after it went down and up): UDP counts
 * a send to a down link as sent and lost, and so does this.
 *
 * Receiving.  What the program steered is parsed (esa_xsk_parse()), and
 * what is not a well-formed IPv4 UDP packet to one of our addresses is
 * counted and its frame given back at once.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <sys/socket.h>

#include "xsk_int.h"

uint8_t *esa_xsk_tx_payload(struct esa_xsk *x, uint32_t i)
{
	return xq_frame(x->q, x->txf[i]) + HDRS;
}

static uint16_t csum_fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return ~s;
}

static uint32_t csum_add(uint32_t s, const void *p, size_t len)
{
	const uint8_t *b = p;

	for (size_t i = 0; i + 1 < len; i += 2)
		s += (uint32_t)b[i] << 8 | b[i + 1];
	if (len & 1)
		s += (uint32_t)b[len - 1] << 8;
	return s;
}

int esa_xsk_tx_prep(struct esa_xsk *x, uint32_t i, const struct sockaddr_in *from,
		    const struct sockaddr_in *to, size_t paylen, char *err, size_t len)
{
	uint8_t *f = xq_frame(x->q, x->txf[i]), mac[6];
	struct iphdr *ip = (struct iphdr *)(f + 14);
	struct udphdr *udp = (struct udphdr *)(ip + 1);
	int rc = nh_lookup(x, to->sin_addr, mac, err, len);

	if (rc)
		return rc;
	memcpy(f, mac, 6);
	memcpy(f + 6, x->dev->mac, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	*ip = (struct iphdr){ .version = 4, .ihl = 5, .tot_len = htons(20 + 8 + paylen),
			      .frag_off = htons(IP_DF), .ttl = 64, .protocol = IPPROTO_UDP,
			      .saddr = from->sin_addr.s_addr, .daddr = to->sin_addr.s_addr };
	ip->check = htons(csum_fold(csum_add(0, ip, 20)));
	/* UDP checksum 0 (none, legal in IPv4): the switch does not check it */
	*udp = (struct udphdr){ .source = from->sin_port, .dest = to->sin_port,
				.len = htons(8 + paylen) };
	x->txlen[i] = HDRS + paylen;
	return 0;
}

bool esa_xsk_tx_busy(struct esa_xsk *x, uint32_t i)
{
	struct xq *q = x->q;

	if (!__atomic_load_n(&q->inflight[x->txf[i]], __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&q->lock);
	xq_reap(q);
	pthread_mutex_unlock(&q->lock);
	return __atomic_load_n(&q->inflight[x->txf[i]], __ATOMIC_ACQUIRE);
}

bool esa_xsk_tx_claim(struct esa_xsk *x, uint32_t i)
{
	struct timespec t0, t;

	if (!esa_xsk_tx_busy(x, i))
		return true;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		xsk_kick(x);	/* zero-copy: the driver completes once woken */
		sched_yield();
		if (!esa_xsk_tx_busy(x, i))
			return true;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec) <
		 1000000000LL);
	return false;
}

bool xsk_tx_empty(const struct esa_xsk *x)
{
	return __atomic_load_n(x->tx.consumer, __ATOMIC_ACQUIRE) == *x->tx.producer;
}

/* The kernel's answer to a kick: 0 (taken, or pushed back: later), 1 (the
 * device is down or the socket unbound: later too, counted), or -errno. */
static int kick_errno(struct esa_xsk *x, int e)
{
	switch (e) {
	case EAGAIN: case EBUSY: case ENOBUFS: case EINTR:
		return 0;
	case ENETDOWN: case ENXIO:
		x->tx_down++;
		return 1;
	}
	return -e;
}

static int kick_once(struct esa_xsk *x)
{
	int rc = 0;

	x->kicks++;
	if (sendto(X.xsk_socket__fd(x->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0) < 0)
		rc = kick_errno(x, errno);
	if (rc)
		return rc;
	/* the kernel sends a batch per call and needs room to complete */
	pthread_mutex_lock(&x->q->lock);
	xq_reap(x->q);
	pthread_mutex_unlock(&x->q->lock);
	return 0;
}

/*
 * Copy mode sends only in the system call, a batch at a time: call until
 * the ring is empty, so that no frame stays posted behind our back (but
 * for push-back and a device that is down: those stay, and go later).
 */
int xsk_kick(struct esa_xsk *x)
{
	int rc;

	if (x->q->zerocopy) {
		if (!xsk_ring_prod__needs_wakeup(&x->tx))
			return 0;
		x->kicks++;
		if (sendto(X.xsk_socket__fd(x->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0) < 0)
			return kick_errno(x, errno);
		return 0;
	}
	for (int t = 0; t < 1000 && !xsk_tx_empty(x); t++)
		if ((rc = kick_once(x)))
			return rc;
	return 0;
}

int esa_xsk_tx_kick(struct esa_xsk *x)
{
	int rc = x->q->zerocopy || xsk_tx_empty(x) ? 0 : kick_once(x);

	return rc < 0 ? rc : 0;
}

int esa_xsk_send(struct esa_xsk *x, const uint32_t *frames, int n)
{
	struct xq *q = x->q;
	uint32_t idx, k = xsk_prod_nb_free(&x->tx, n);
	int rc;

	/* what the ring has room for (reserve is all or nothing) */
	k = k < (uint32_t)n ? k : (uint32_t)n;
	if (k && xsk_ring_prod__reserve(&x->tx, k, &idx) != k)
		k = 0;
	for (uint32_t j = 0; j < k; j++) {
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&x->tx, idx + j);
		uint32_t f = x->txf[frames[j]];

		d->addr = (uint64_t)f * q->fs + ESA_XSK_OFF;
		d->len = x->txlen[frames[j]];
		d->options = 0;
		__atomic_add_fetch(&q->inflight[f], 1, __ATOMIC_RELAXED);
	}
	xsk_ring_prod__submit(&x->tx, k);
	rc = xsk_kick(x);
	return rc < 0 ? rc : (int)k;
}

bool esa_xsk_parse(const struct sockaddr_in *local, int nlocal, uint8_t *f, uint32_t len,
		   struct esa_xsk_rx *rx)
{
	struct iphdr *ip = (struct iphdr *)(f + 14);
	struct udphdr *udp = (struct udphdr *)(ip + 1);
	uint32_t tot, ulen;
	bool ours = false;

	if (len < HDRS || f[12] != 0x08 || f[13] != 0x00 || ip->version != 4 ||
	    ip->ihl != 5 || ip->protocol != IPPROTO_UDP || (ntohs(ip->frag_off) & 0x3fff))
		return false;
	tot = ntohs(ip->tot_len);
	ulen = ntohs(udp->len);
	if (tot > len - 14 || tot < 28 || ulen != tot - 20 || csum_fold(csum_add(0, ip, 20)))
		return false;
	for (int i = 0; i < nlocal; i++)
		ours |= ip->daddr == local[i].sin_addr.s_addr && udp->dest == local[i].sin_port;
	if (!ours)
		return false;
	/*
	 * The UDP checksum is not checked, as the switch does not: a sender's
	 * checksum offload may leave it partial in the frame (the kernel
	 * trusts such packets from their skb's flags, which AF_XDP does not
	 * carry), and the link's CRC guards the bytes.
	 */
	rx->pkt = (uint8_t *)(udp + 1);
	rx->len = ulen - 8;
	rx->src = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = udp->source,
					.sin_addr.s_addr = ip->saddr };
	return true;
}

uint64_t esa_xsk_kicks(const struct esa_xsk *x)
{
	return x->kicks;
}

uint32_t esa_xsk_busy_napi(struct esa_xsk *x)
{
	socklen_t sl = sizeof(x->napi_id);

	/* before 6.13 the kernel learns it from the first packet received */
	if (x->busy_us && !x->napi_id &&
	    getsockopt(X.xsk_socket__fd(x->xsk), SOL_SOCKET, SO_INCOMING_NAPI_ID, &x->napi_id,
		       &sl))
		x->napi_id = 0;
	return x->napi_id;
}

/* Busy polling: the device's NAPI run here, once (the kernel's
 * sk_busy_loop() of a non-blocking call), for what it has for us. */
static void busy_poll(struct esa_xsk *x)
{
	if (x->napi_id)
		recvfrom(X.xsk_socket__fd(x->xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
}

/*
 * Spin instead of sleeping: a result a few microseconds away is taken
 * without the sleep and wake-up (and with a NAPI to poll, without its
 * softirq on another CPU).  The kernel's own busy loop in poll() needs
 * the global net.core.busy_poll; a library does not set that.
 */
bool esa_xsk_busy_wait(struct esa_xsk *x, uint64_t deadline_ns)
{
	uint64_t end;

	if (!x->busy_us)
		return false;	/* off: no clock read on every wait */
	end = xsk_mono_ns() + (uint64_t)x->busy_us * 1000;
	esa_xsk_busy_napi(x);
	if (end > deadline_ns)
		end = deadline_ns;
	do {
		busy_poll(x);
		if (xsk_cons_nb_avail(&x->rx, 1))
			return true;
	} while (xsk_mono_ns() < end);
	return false;
}

int esa_xsk_recv(struct esa_xsk *x, struct esa_xsk_rx *rx, int max)
{
	uint32_t idx, n;
	int got = 0;

	busy_poll(x);
	n = xsk_ring_cons__peek(&x->rx, max, &idx);

	if (!n)
		xsk_wake_fill(x);	/* nothing came: perhaps for want of frames */

	for (uint32_t j = 0; j < n; j++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&x->rx, idx + j);
		uint8_t *f = xsk_umem__get_data(x->q->area, d->addr);

		if (esa_xsk_parse(x->local, x->nlocal, f, d->len, &rx[got])) {
			rx[got++].buf = ESA_XSK_BUF | d->addr;
		} else {
			x->bad++;
			esa_xsk_release(x, ESA_XSK_BUF | d->addr);
		}
	}
	if (n)
		xsk_ring_cons__release(&x->rx, n);
	return got;
}
