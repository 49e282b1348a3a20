// SPDX-License-Identifier: GPL-2.0
/*
 * esa-ps's transport (ps_daemon.h): the PS's send callback, tx(), through
 * the delay line of --link-delay-us when there is one, then AF_XDP or the
 * socket of the job's PS address; what the sockets receive, a batch at a
 * time, each coalesced message split into its datagrams (UDP_GRO), to the
 * PS (or to the delay line first).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "ps_daemon.h"

static struct ps *the_ps;
static struct dl dl_rx, dl_tx;

void io_init(struct ps *ps)
{
	the_ps = ps;
}

void io_delay(uint64_t ns)
{
	dl_init(&dl_rx, ns);
	dl_init(&dl_tx, ns);
}

/* To the wire: over AF_XDP if it is open and can, else by the socket of `from`. */
static void tx_now(struct ps *ps, const struct sockaddr_in *from, const struct sockaddr_in *to,
		   const void *buf, size_t len)
{
	struct sock *s = sock_by_addr(from);

	if (!s || len > BUFSZ)
		return;
	if (xs && xs_tx(ps, from, to, buf, len))
		return;
	sock_queue(ps, s, to, buf, len);
}

void tx(void *ctx, const struct sockaddr_in *from, const struct sockaddr_in *to,
	const void *buf, size_t len)
{
	(void)ctx;
	if (dl_tx.buf && dl_push(&dl_tx, buf, len, from, to, now_ns()))
		return;
	tx_now(the_ps, from, to, buf, len);
}

/* UDP_GRO's control message: the segment size of a coalesced datagram. */
union gro_ctl {
	char	buf[CMSG_SPACE(sizeof(int))];
	struct cmsghdr align;
};

static struct mmsghdr rmsg[BATCH];
static struct iovec riov[BATCH];
static struct sockaddr_in rsrc[BATCH];
static union gro_ctl rctl[BATCH];

void rx_init(void)
{
	uint8_t *rbuf = malloc((size_t)BATCH * GRO_BYTES);

	if (!rbuf)
		die("out of memory");
	for (int i = 0; i < BATCH; i++) {
		riov[i].iov_base = rbuf + (size_t)i * GRO_BYTES;
		riov[i].iov_len = GRO_BYTES;
		rmsg[i].msg_hdr.msg_iov = &riov[i];
		rmsg[i].msg_hdr.msg_iovlen = 1;
		rmsg[i].msg_hdr.msg_name = &rsrc[i];
		rmsg[i].msg_hdr.msg_control = rctl[i].buf;
	}
}

/* The datagrams' size in message h of len bytes: UDP_GRO's, or len. */
static size_t gro_seg(struct msghdr *h, size_t len)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c)) {
		int g;

		if (c->cmsg_level != SOL_UDP || c->cmsg_type != UDP_GRO)
			continue;
		memcpy(&g, CMSG_DATA(c), sizeof(g));
		return g > 0 && (size_t)g < len ? (size_t)g : len;
	}
	return len;
}

/* One datagram: to the PS, or to the delay line first. */
static void rx_one(struct ps *ps, uint8_t *buf, size_t len,
		   const struct sockaddr_in *src, uint64_t t)
{
	if (!dl_rx.buf || !dl_push(&dl_rx, buf, len, src, NULL, t))
		ps_rx(ps, buf, len, src, t);
}

/*
 * What socket k received (a batch of messages at a time, 16 at most): each
 * message a datagram, or datagrams of one size the kernel's GRO coalesced
 * (UDP_GRO), each handed on alone.
 */
void sock_rx(struct ps *ps, int k)
{
	for (int round = 0; round < 16; round++) {
		uint64_t t = now_ns();
		int m;

		for (int i = 0; i < BATCH; i++) {
			rmsg[i].msg_hdr.msg_namelen = sizeof(rsrc[i]);
			rmsg[i].msg_hdr.msg_controllen = sizeof(rctl[i]);
		}
		m = recvmmsg(socks[k].fd, rmsg, BATCH, MSG_DONTWAIT, NULL);
		if (m <= 0)
			break;
		for (int i = 0; i < m; i++) {
			uint8_t *b = riov[i].iov_base;
			size_t len = rmsg[i].msg_len, off = 0;
			size_t seg = gro_seg(&rmsg[i].msg_hdr, len);

			do {
				size_t l = len - off < seg ? len - off : seg;

				if (seg < len)
					ps_note(ps, PS_C_RX_COALESCED);
				rx_one(ps, b + off, l, &rsrc[i], t);
				off += l;
			} while (off < len);
		}
		if (xs)
			xs_flush(ps);
		flush_socks(ps);
		if (m < BATCH)
			break;
	}
}

void dl_flush(struct ps *ps)
{
	uint64_t t = now_ns();
	uint32_t k;

	if (!dl_rx.buf)
		return;
	while (esa_dline_pop(&dl_rx.line, t, &k))
		ps_rx(ps, dl_rx.buf + (size_t)k * BUFSZ, dl_rx.len[k], &dl_rx.a[k], t);
	while (esa_dline_pop(&dl_tx.line, t, &k))
		tx_now(ps, &dl_tx.a[k], &dl_tx.b[k], dl_tx.buf + (size_t)k * BUFSZ, dl_tx.len[k]);
	flush_socks(ps);
}

/* How long poll may sleep: 200 ms, or until the next delayed datagram. */
int poll_ms(void)
{
	uint64_t next, t;

	if (!dl_rx.buf)
		return 200;
	next = esa_dline_next(&dl_rx.line);
	if (esa_dline_next(&dl_tx.line) < next)
		next = esa_dline_next(&dl_tx.line);
	t = now_ns();
	if (next == UINT64_MAX)
		return 200;
	return next <= t ? 0 : (int)((next - t + 999999) / 1000000);
}
