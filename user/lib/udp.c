// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libesa: the UDP transport.  Owns the UDP sockets and receive buffers
 * (w->udp) and the ICMP errors noted per peer (w->icmp_sw, w->icmp_ps).
 * What arrives goes up to the engine through w->rx, or into the emulated
 * link delay's line first (delay.c).
 *
 * Two sockets on the worker's registered address and port.  `sfd` is
 * connected to the switch: DATA leaves through it with one route lookup per
 * send, not per packet, as UDP GSO bursts (UDP_SEGMENT: one send, up to 64
 * datagrams) where the kernel takes them, and the switch's results come
 * back on it (the kernel prefers the connected socket for them).  `fd` is
 * unconnected: the PS's results and FETCHes, and the ICMP errors about what
 * goes to the PS, arrive there (a connected socket would refuse the PS's
 * packets; results are unicast, so no broadcast is lost either way); on
 * AF_XDP it stays beside the socket for strays, ICMP errors and what goes
 * to the PS.  Both are drained every round.  Results are received straight
 * into buffers of a pool; a result the worker uses stays in its buffer as
 * the FETCH cache entry, so a result is copied once, by the kernel, and
 * then read where it lies.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <linux/errqueue.h>

#include "esa_int.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT	103
#endif
#ifndef UDP_GRO
#define UDP_GRO		104
#endif
#define GRO_MAX_BYTES	65536	/* the most a GRO'd datagram holds (gro_max_size) */
#define UDP_MAX_SEGS	64	/* the kernel's UDP_MAX_SEGMENTS up to 6.x */
#define UDP_MAX_PAYLOAD	65507

/* Set a socket buffer (beyond the sysctl cap if allowed); what was granted. */
static int set_buf(int fd, int force, int plain, int bytes)
{
	socklen_t sl = sizeof(int);
	int got = 0;

	if (setsockopt(fd, SOL_SOCKET, force, &bytes, sizeof(bytes)))
		setsockopt(fd, SOL_SOCKET, plain, &bytes, sizeof(bytes));
	if (getsockopt(fd, SOL_SOCKET, plain, &got, &sl))
		return 0;
	return got / 2;		/* the kernel doubles it for its bookkeeping */
}

/* A socket bound to `local` (shared with the worker's other one); report:
 * the receive buffer granted is the rcvbuf counter. */
static int bound_socket(struct esa_worker *w, bool report, char *err, size_t len)
{
	int rcvbuf = w->cfg.rcvbuf, got;
	const struct esa_config *c = &w->cfg;
	char ip[INET_ADDRSTRLEN];
	int one = 1, fd, e;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return esa_sock_fail(err, len, "socket");
	/* ICMP errors about what we send, to name a dead peer (diagnose()) */
	if (setsockopt(fd, IPPROTO_IP, IP_RECVERR, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one))) {
		e = esa_sock_fail(err, len, "IP_RECVERR, SO_REUSEPORT");
		close(fd);
		return e;
	}
	got = set_buf(fd, SO_RCVBUFFORCE, SO_RCVBUF, rcvbuf);
	if (report) {
		w->st.rcvbuf = got;
		if (got < rcvbuf)
			esa_warn(w, "rcvbuf: %d bytes granted of %d asked (SO_RCVBUFFORCE needs "
				 "CAP_NET_ADMIN; net.core.rmem_max caps the rest)", got, rcvbuf);
	}
	set_buf(fd, SO_SNDBUFFORCE, SO_SNDBUF, 1 << 20);
	if (bind(fd, (const struct sockaddr *)&c->local, sizeof(c->local))) {
		e = errno;
		inet_ntop(AF_INET, &c->local.sin_addr, ip, sizeof(ip));
		snprintf(err, len, "cannot bind %s:%u%s%s: %s", ip, ntohs(c->local.sin_port),
			 c->netns[0] ? " in " : "", c->netns, strerror(e));
		close(fd);
		return -e;
	}
	return fd;
}

/* UDP_GRO: the most results one coalesced datagram can hold. */
static int gro_segs(const struct esa_worker *w)
{
	size_t n = GRO_MAX_BYTES / w->pktlen + 1;

	return n < ESA_GRO_SEGS ? (int)n : ESA_GRO_SEGS;
}

/* The send socket: connected to the switch, GSO if the kernel has it,
 * GRO for the results it receives. */
static int send_socket(struct esa_worker *w, char *err, size_t len)
{
	struct esa_udp *u = &w->udp;
	int fd = bound_socket(w, false, err, len), seg = w->pktlen;

	if (fd < 0)
		return fd;
	if (connect(fd, (const struct sockaddr *)&w->cfg.sw, sizeof(w->cfg.sw))) {
		int e = esa_sock_fail(err, len, "connect to the switch");

		close(fd);
		return e;
	}
	u->gso = 0;
	if (!setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg))) {
		u->gso = UDP_MAX_PAYLOAD / w->pktlen;
		if (u->gso > UDP_MAX_SEGS)
			u->gso = UDP_MAX_SEGS;
		if (u->gso < 2)
			u->gso = 0;
	}
	u->gro = 0;
	if ((w->cfg.udp_gro > 0 || (w->cfg.udp_gro < 0 && !w->cfg.link_delay_us)) &&
	    !setsockopt(fd, SOL_UDP, UDP_GRO, &(int){ 1 }, sizeof(int)))
		u->gro = gro_segs(w);
	w->st.udp_gro = u->gro > 0;
	return fd;
}

/* The receive buffers: the cache's share, two batches' worth, and what
 * UDP_GRO's messages hold posted. */
int esa_udp_buffers(struct esa_worker *w)
{
	struct esa_udp *u = &w->udp;

	u->slot = (w->pktlen + 64 + 63) & ~(size_t)63;	/* longer: not ours */
	u->nbuf = w->nrc + 2 * ESA_BATCH + ESA_GRO_MSGS * gro_segs(w) + esa_delay_rx_cap(w);
	u->mem = aligned_alloc(64, u->slot * u->nbuf);
	u->free = malloc(u->nbuf * sizeof(*u->free));
	if (!u->mem || !u->free)
		return -ENOMEM;
	for (uint32_t i = 0; i < u->nbuf; i++)
		u->free[i] = u->nbuf - 1 - i;
	u->nfree = u->nbuf;
	for (int i = 0; i < ESA_BATCH; i++) {
		u->rmsg[i].msg_hdr.msg_iov = &u->riov[i];
		u->rmsg[i].msg_hdr.msg_iovlen = 1;
		u->rmsg[i].msg_hdr.msg_name = &u->rsrc[i];
		u->rb[i] = UINT32_MAX;
	}
	for (int i = 0; i < ESA_GRO_MSGS; i++) {
		u->gmsg[i].msg_hdr.msg_iov = u->giov[i];
		u->gmsg[i].msg_hdr.msg_name = &u->gsrc[i];
		u->gmsg[i].msg_hdr.msg_control = u->gctl[i].buf;
		for (int k = 0; k < ESA_GRO_SEGS; k++)
			u->gb[i][k] = UINT32_MAX;
	}
	return 0;
}

/* The UDP sockets (on AF_XDP: the unconnected one only). */
int esa_udp_open(struct esa_worker *w, char *err, size_t len)
{
	int rc;

	w->udp.fd = w->udp.sfd = -1;
	rc = bound_socket(w, true, err, len);
	if (rc < 0)
		return rc;
	w->udp.fd = rc;
	if (w->xsk)
		return 0;
	rc = send_socket(w, err, len);
	if (rc < 0)
		return rc;
	w->udp.sfd = rc;
	return 0;
}

void esa_udp_close(struct esa_worker *w)
{
	if (w->udp.fd >= 0)
		close(w->udp.fd);
	if (w->udp.sfd >= 0)
		close(w->udp.sfd);
	free(w->udp.mem);
	free(w->udp.free);
}

/* ------------------------------------------------------------------ */
/* ICMP errors                                                         */
/* ------------------------------------------------------------------ */

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
	struct esa_icmp *x = esa_same_sin(to, &w->cfg.sw) ? &w->icmp_sw :
			     esa_same_sin(to, &w->cfg.ps) ? &w->icmp_ps : NULL;

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

/* ------------------------------------------------------------------ */
/* Sending                                                             */
/* ------------------------------------------------------------------ */

/* One sendmsg of p[0..n) as a GSO burst; 0 or -errno. */
static int send_gso(struct esa_worker *w, struct esa_pkt **p, int n)
{
	struct esa_udp *u = &w->udp;
	struct msghdr m = { .msg_iov = u->siov, .msg_iovlen = n };

	for (int i = 0; i < n; i++) {
		u->siov[i].iov_base = p[i]->buf;
		u->siov[i].iov_len = w->pktlen;
	}
	return sendmsg(u->sfd, &m, 0) < 0 ? -errno : 0;
}

/* sendmmsg of p[0..n): how many went, or -errno. */
static int send_each(struct esa_worker *w, struct esa_pkt **p, int n)
{
	struct esa_udp *u = &w->udp;
	int m;

	for (int i = 0; i < n; i++) {
		u->siov[i].iov_base = p[i]->buf;
		u->siov[i].iov_len = w->pktlen;
		u->smsg[i].msg_hdr = (struct msghdr){ .msg_iov = &u->siov[i], .msg_iovlen = 1 };
	}
	m = sendmmsg(u->sfd, u->smsg, n, 0);
	return m < 0 ? -errno : m;
}

int esa_udp_send(struct esa_worker *w, struct esa_pkt **p, int n, uint64_t now)
{
	struct esa_udp *u = &w->udp;
	bool retried = false;
	int sent = 0;

	while (sent < n) {
		int k = n - sent, m;

		if (u->gso && k > 1) {
			if (k > u->gso)
				k = u->gso;
			m = send_gso(w, p + sent, k);
			if (m == -EIO || m == -EINVAL) {
				u->gso = 0;	/* the route's device cannot segment */
				continue;
			}
			m = m ? m : k;
		} else {
			m = send_each(w, p + sent, k);
		}
		if (m == -EINTR)
			continue;
		if (m == -EAGAIN || m == -ENOBUFS) {
			w->st.send_again++;
			w->send_blocked = true;
			break;
		}
		if (m < 0 && !esa_transient_errno(-m))
			return m;
		if (m < 0) {
			esa_read_errq(w, u->sfd, now);
			if (!retried) {
				retried = true;	/* an earlier packet's ICMP error */
				continue;
			}
			m = 1;	/* count it as sent and lost; the timer resends */
		}
		sent += m;
	}
	return sent;
}

int esa_udp_send_ps(struct esa_worker *w, const void *buf, size_t len, uint64_t now)
{
	if (sendto(w->udp.fd, buf, len, 0, (const struct sockaddr *)&w->cfg.ps,
		   sizeof(w->cfg.ps)) == (ssize_t)len)
		return 0;
	if (esa_transient_errno(errno))
		esa_read_errq(w, w->udp.fd, now);	/* an ICMP error took its turn */
	return -errno;
}

/* ------------------------------------------------------------------ */
/* Receiving                                                           */
/* ------------------------------------------------------------------ */

/* recvmmsg, reading the error queue after a transient error: how many
 * messages, 0 if none is there, or -errno (fatal). */
static int recv_batch(struct esa_worker *w, int fd, struct mmsghdr *msg, int n, uint64_t now)
{
	for (;;) {
		int m = recvmmsg(fd, msg, n, MSG_DONTWAIT, NULL), e = errno;

		if (m >= 0)
			return m;
		if (e == EAGAIN || e == EWOULDBLOCK)
			return 0;
		if (e != EINTR && !esa_transient_errno(e))
			return -e;
		if (e != EINTR)
			esa_read_errq(w, fd, now);	/* ICMP errors about what we sent */
	}
}

/* Drain one socket: packets handled, or -errno (fatal). */
static int udp_drain(struct esa_worker *w, int fd, uint64_t now)
{
	struct esa_udp *u = &w->udp;
	int got = 0;

	for (;;) {
		int m;

		for (int i = 0; i < ESA_BATCH; i++) {
			if (u->rb[i] == UINT32_MAX)
				u->rb[i] = u->free[--u->nfree];
			u->riov[i].iov_base = u->mem + (size_t)u->rb[i] * u->slot;
			u->riov[i].iov_len = u->slot;
			u->rmsg[i].msg_hdr.msg_namelen = sizeof(u->rsrc[i]);
		}
		m = recv_batch(w, fd, u->rmsg, ESA_BATCH, now);
		if (m <= 0)
			return m < 0 ? m : got;
		for (int i = 0; i < m; i++) {
			if (w->delay && esa_delay_hold(w, u->rb[i], u->rmsg[i].msg_len,
						       &u->rsrc[i], now))
				u->rb[i] = UINT32_MAX;	/* the delay line has it */
			else if (w->rx(w, u->riov[i].iov_base, u->rmsg[i].msg_len,
					       &u->rsrc[i], now, u->rb[i]))
				u->rb[i] = UINT32_MAX;	/* the cache has it now */
		}
		got += m;
		if (m < ESA_BATCH)
			return got;
	}
}

/* The segment size of a coalesced message (UDP_GRO's cmsg), or 0. */
static size_t gro_size(struct msghdr *h)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c)) {
		int g;

		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
			memcpy(&g, CMSG_DATA(c), sizeof(g));
			return g > 0 ? (size_t)g : 0;
		}
	}
	return 0;
}

/*
 * One message of the switch's socket: a datagram, or datagrams of `seg`
 * bytes coalesced.  Each iovec is one buffer of pktlen bytes, so each
 * result lies in a buffer of its own, whole, and a kept one pins only it;
 * a segment of another size cannot be a result (they straddle buffers):
 * all invalid.  Returns the datagrams it held.
 */
static int gro_split(struct esa_worker *w, int i, uint64_t now)
{
	struct esa_udp *u = &w->udp;
	struct mmsghdr *m = &u->gmsg[i];
	size_t len = m->msg_len, seg = gro_size(&m->msg_hdr), n;

	if (!seg || seg >= len)
		seg = len ? len : 1;	/* a datagram alone */
	n = (len + seg - 1) / seg;
	if (!n)
		n = 1;
	if ((n > 1 && seg != w->pktlen) || (n == 1 && len > w->pktlen) ||
	    (m->msg_hdr.msg_flags & MSG_TRUNC)) {
		w->st.rx_packets += n;
		w->st.rx_invalid += n;
		return (int)n;
	}
	if (n > 1)
		w->st.rx_coalesced += n;
	for (size_t k = 0; k < n; k++) {
		size_t l = len - k * seg < seg ? len - k * seg : seg;

		if (w->rx(w, u->giov[i][k].iov_base, l, &u->gsrc[i], now, u->gb[i][k])) {
			/* the cache has it now: a fresh buffer in its place */
			u->gb[i][k] = u->free[--u->nfree];
			u->giov[i][k].iov_base = u->mem + (size_t)u->gb[i][k] * u->slot;
		}
	}
	return (int)n;
}

/* Drain the switch's socket with UDP_GRO: packets handled, or -errno. */
static int gro_drain(struct esa_worker *w, uint64_t now)
{
	struct esa_udp *u = &w->udp;
	int got = 0;

	if (u->gb[0][0] == UINT32_MAX) {	/* first time: post every buffer */
		for (int i = 0; i < ESA_GRO_MSGS; i++) {
			for (int k = 0; k < u->gro; k++) {
				u->gb[i][k] = u->free[--u->nfree];
				u->giov[i][k].iov_base = u->mem + (size_t)u->gb[i][k] * u->slot;
				u->giov[i][k].iov_len = w->pktlen;
			}
			u->gmsg[i].msg_hdr.msg_iovlen = u->gro;
		}
	}
	for (;;) {
		int m;

		for (int i = 0; i < ESA_GRO_MSGS; i++) {
			u->gmsg[i].msg_hdr.msg_namelen = sizeof(u->gsrc[i]);
			u->gmsg[i].msg_hdr.msg_controllen = sizeof(u->gctl[i]);
		}
		m = recv_batch(w, u->sfd, u->gmsg, ESA_GRO_MSGS, now);
		if (m <= 0)
			return m < 0 ? m : got;
		for (int i = 0; i < m; i++)
			got += gro_split(w, i, now);
		if (m < ESA_GRO_MSGS)
			return got;
	}
}

int esa_udp_recv(struct esa_worker *w, uint64_t now)
{
	int got = 0, rc;

	if (w->udp.sfd >= 0) {
		rc = w->udp.gro ? gro_drain(w, now) : udp_drain(w, w->udp.sfd, now);
		if (rc < 0)
			return rc;
		got += rc;
	}
	rc = udp_drain(w, w->udp.fd, now);
	return rc < 0 ? rc : got + rc;
}
