// SPDX-License-Identifier: GPL-2.0
/*
 * esa-ps's UDP sockets (ps_daemon.h): one bound to each PS address of its
 * jobs (and each --ps of the agent's), and each one's batch of outgoing
 * datagrams, sent by sendmmsg() when full or when a receive round ends.
 * A send the socket refuses is counted (tx_error), never retried.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "ps_daemon.h"

struct sock socks[MAX_SOCKS];
int nsocks;

struct sock *sock_by_addr(const struct sockaddr_in *a)
{
	for (int i = 0; i < nsocks; i++)
		if (socks[i].addr.sin_addr.s_addr == a->sin_addr.s_addr &&
		    socks[i].addr.sin_port == a->sin_port)
			return &socks[i];
	return NULL;
}

int sock_of(const struct sockaddr_in *a)
{
	struct sock *s = sock_by_addr(a);

	return s ? s - socks : -1;
}

static int open_sock(const struct sockaddr_in *a)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int big = 8 << 20;
	char ip[INET_ADDRSTRLEN];

	if (fd < 0)
		die("socket: %s", strerror(errno));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	/* the switch's result copies, coalesced by GRO: sock_rx() splits them */
	setsockopt(fd, SOL_UDP, UDP_GRO, &(int){ 1 }, sizeof(int));
	if (bind(fd, (const struct sockaddr *)a, sizeof(*a))) {
		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
		die("cannot bind %s:%u: %s", ip, ntohs(a->sin_port), strerror(errno));
	}
	return fd;
}

/* The socket of a job's PS address, opened when no job had it yet. */
void sock_for(const struct sockaddr_in *a)
{
	int fd;

	if (sock_of(a) >= 0)
		return;
	if (nsocks == MAX_SOCKS)
		die("at most %d PS addresses", MAX_SOCKS);
	fd = open_sock(a);
	socks[nsocks].addr = *a;
	socks[nsocks++].fd = fd;
}

void flush_sock(struct ps *ps, struct sock *s)
{
	int sent = 0;

	while (sent < s->n) {
		int m = sendmmsg(s->fd, s->msg + sent, s->n - sent, 0);

		if (m < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == ENOBUFS) {
				struct pollfd p = { .fd = s->fd, .events = POLLOUT };

				poll(&p, 1, 10);
				continue;
			}
			/* unreachable destination and the like: count, go on */
			ps_note(ps, PS_C_TX_ERROR);
			sent++;
			continue;
		}
		sent += m;
	}
	s->n = 0;
}

void flush_socks(struct ps *ps)
{
	for (int s = 0; s < nsocks; s++)
		if (socks[s].n)
			flush_sock(ps, &socks[s]);
}

void sock_queue(struct ps *ps, struct sock *s, const struct sockaddr_in *to, const void *buf,
		size_t len)
{
	if (s->n == BATCH)
		flush_sock(ps, s);
	memcpy(s->buf[s->n], buf, len);
	s->to[s->n] = *to;
	s->iov[s->n].iov_base = s->buf[s->n];
	s->iov[s->n].iov_len = len;
	s->msg[s->n].msg_hdr.msg_iov = &s->iov[s->n];
	s->msg[s->n].msg_hdr.msg_iovlen = 1;
	s->msg[s->n].msg_hdr.msg_name = &s->to[s->n];
	s->msg[s->n].msg_hdr.msg_namelen = sizeof(s->to[s->n]);
	s->n++;
}
