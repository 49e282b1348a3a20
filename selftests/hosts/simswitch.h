/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A switch and PS in one, in user space on loopback, for libesa's unit
 * tests: it sums each (job, chunk) over all ranks in 64 bits and sends the
 * result to every worker, answers resends of finished chunks, and misbehaves
 * on purpose: it drops, duplicates and reorders packets both ways, flags
 * sums that fit as overflowed (the library must redo them exactly), and
 * throws garbage at the workers (which they must ignore).  It also checks
 * what the workers send: one rank's DATA, consistent bytes on resends.
 * Results go out from the switch's socket; FETCHes from a second one, the
 * PS's (the switch's port + 1), where the answers come back.
 */
#ifndef ESA_SIMSWITCH_H
#define ESA_SIMSWITCH_H

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/esa.h>
#include "esa_policy.h"	/* esa_full_mask() */
#include "esa_wire.h"	/* esa_hdr_init() */

#define SS_MAXJOBS	8
#define SS_MAXSEQ	(1u << 18)
#define SS_HELD		512

struct ss_chunk {
	uint64_t bitmap;
	uint8_t	done, flags, prio;
	uint8_t	reason;		/* its results': 0, or PREEMPT (p_contention) */
	int64_t	*sum;		/* while aggregating */
	int32_t	*first;		/* each rank's first DATA, to check resends */
	int32_t	*res;		/* the result, kept for resends */
};

struct ss_job {
	int	id, n;
	struct sockaddr_in w[ESA_MAX_WORKERS];
	struct ss_chunk *c;	/* SS_MAXSEQ */
};

struct ss_held {
	struct sockaddr_in to;
	int	len, delay;
	uint8_t	buf[ESA_HDR_LEN + 4 * ESA_MAX_VALUES];
};

#define SS_GSO_MAX	16	/* datagrams per coalesced send */
#define SS_GSO_DESTS	8	/* destinations queued at once */

struct ss_stats {
	uint64_t gso_sends;	/* coalesced sends of 2 datagrams or more */
	uint64_t rx, tx, results, resends, drop_in, drop_out, dups, reordered;
	uint64_t false_ovf, true_ovf, garbage, bad_data, inconsistent, fetch_answers;
	uint64_t prio_mismatch, contention;
};

struct simswitch {
	int	fd, psfd;
	struct sockaddr_in addr, psaddr;
	pthread_t th;
	volatile int stop;
	int	nvals;
	struct ss_job jobs[SS_MAXJOBS];
	int	njobs;
	/* misbehaviour, probabilities in 0..1 */
	double	p_drop_in, p_drop_out, p_dup, p_reorder, p_false_ovf, p_garbage;
	/* results marked as the PS's sums (ESA_T_SUM through the switch):
	 * reason PREEMPT, a chunk that met contention for switch memory */
	double	p_contention;
	/* as a PS: a resend of a chunk not complete gets a FETCH (from the
	 * PS's socket) whose bitmap holds the ranks in so far */
	bool	fetch_status;
	/* false overflow flags only on chunks in [fo_lo, fo_hi): the tensor's
	 * own chunks, whose partials could overflow, not the redo halves */
	uint32_t fo_lo[4], fo_hi[4];
	int	nfo;
	uint64_t rng;
	struct ss_held held[SS_HELD];
	int	nheld;
	/* gso > 1: what goes out to one address, of one length, leaves in UDP
	 * GSO sends of up to gso datagrams, as a kernel's GRO hands results
	 * over coalesced (on loopback the receiver gets them so, with UDP_GRO) */
	int	gso;
	struct ss_q {
		struct sockaddr_in to;
		int	n, len;
		uint8_t	buf[SS_GSO_MAX * (ESA_HDR_LEN + 4 * ESA_MAX_VALUES)];
	} q[SS_GSO_DESTS];	/* one per destination (the last one evicts) */
	struct ss_stats st;
	/* FETCH answers seen: (job, seq) -> values, for the FETCH test */
	uint32_t fetch_seq;
	int32_t	fetch_vals[ESA_MAX_VALUES];
	int	fetch_got;
	pthread_mutex_t lock;
};

static inline uint64_t ss_rand(struct simswitch *s)
{
	uint64_t z = (s->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline bool ss_chance(struct simswitch *s, double p)
{
	return p > 0 && (ss_rand(s) >> 11) * 0x1p-53 < p;
}

/* Send what a coalescing queue holds: one datagram, or a GSO send. */
static inline void ss_flush_q(struct simswitch *s, struct ss_q *q)
{
	struct iovec iov = { .iov_base = q->buf, .iov_len = (size_t)q->n * q->len };
	union {
		char	b[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} ctl;
	struct msghdr m = { .msg_name = &q->to, .msg_namelen = sizeof(q->to),
			    .msg_iov = &iov, .msg_iovlen = 1 };

	if (!q->n)
		return;
	if (q->n > 1) {
		struct cmsghdr *c;
		uint16_t seg = q->len;

		m.msg_control = ctl.b;
		m.msg_controllen = sizeof(ctl.b);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = IPPROTO_UDP;	/* SOL_UDP */
		c->cmsg_type = 103;	/* UDP_SEGMENT */
		c->cmsg_len = CMSG_LEN(sizeof(seg));
		memcpy(CMSG_DATA(c), &seg, sizeof(seg));
		s->st.gso_sends++;
	}
	sendmsg(s->fd, &m, 0);
	s->st.tx += q->n;
	q->n = 0;
}

static inline void ss_flush(struct simswitch *s)
{
	for (int i = 0; i < SS_GSO_DESTS; i++)
		ss_flush_q(s, &s->q[i]);
}

static inline void ss_raw_send(struct simswitch *s, const struct sockaddr_in *to,
			       const void *buf, int len)
{
	struct ss_q *q = &s->q[SS_GSO_DESTS - 1];

	if (s->gso < 2) {
		sendto(s->fd, buf, len, 0, (const struct sockaddr *)to, sizeof(*to));
		s->st.tx++;
		return;
	}
	/* the destination's queue, else an empty one, else the last */
	for (int i = SS_GSO_DESTS - 1; i >= 0; i--) {
		if (!s->q[i].n)
			q = &s->q[i];
		else if (s->q[i].to.sin_port == to->sin_port &&
			 s->q[i].to.sin_addr.s_addr == to->sin_addr.s_addr) {
			q = &s->q[i];
			break;
		}
	}
	if (q->n && (len != q->len || q->to.sin_port != to->sin_port ||
		     q->to.sin_addr.s_addr != to->sin_addr.s_addr))
		ss_flush_q(s, q);
	q->to = *to;
	q->len = len;
	memcpy(q->buf + (size_t)q->n++ * len, buf, len);
	if (q->n == s->gso || q->n == SS_GSO_MAX)
		ss_flush_q(s, q);
}

/* Send with the configured misbehaviour. */
static inline void ss_send(struct simswitch *s, const struct sockaddr_in *to,
			   const void *buf, int len)
{
	if (ss_chance(s, s->p_drop_out)) {
		s->st.drop_out++;
		return;
	}
	if (ss_chance(s, s->p_reorder) && s->nheld < SS_HELD) {
		struct ss_held *h = &s->held[s->nheld++];

		h->to = *to;
		h->len = len;
		h->delay = 1 + ss_rand(s) % 40;	/* packets processed until sent */
		memcpy(h->buf, buf, len);
		s->st.reordered++;
	} else {
		ss_raw_send(s, to, buf, len);
	}
	if (ss_chance(s, s->p_dup)) {
		ss_raw_send(s, to, buf, len);
		s->st.dups++;
	}
}

static inline void ss_tick(struct simswitch *s, bool all)
{
	for (int i = 0; i < s->nheld;) {
		if (all || --s->held[i].delay <= 0) {
			ss_raw_send(s, &s->held[i].to, s->held[i].buf, s->held[i].len);
			s->held[i] = s->held[--s->nheld];
		} else {
			i++;
		}
	}
}

static inline void ss_garbage(struct simswitch *s, struct ss_job *j, uint32_t seq)
{
	uint8_t buf[ESA_HDR_LEN + 4 * ESA_MAX_VALUES];
	struct esa_hdr *h = (struct esa_hdr *)buf;
	int len = ESA_HDR_LEN + 4 * s->nvals, kind = ss_rand(s) % 7;

	memset(buf, 0, sizeof(buf));
	esa_hdr_init(h, ESA_T_RESULT, j->id, ESA_RANK_NONE, esa_full_mask(j->n), seq,
		     s->nvals);
	switch (kind) {
	case 0: h->job = htons(j->id + 1); break;		/* another job's */
	case 1: len -= 4; break;				/* short */
	case 2: h->version = 9; break;				/* wrong version */
	case 3: h->bitmap = htobe64(1); break;			/* not every rank */
	case 4: h->type = ESA_T_PARTIAL; break;			/* not a result */
	case 5: h->seq = htonl(seq + 0x40000000u); break;	/* no such chunk */
	default:						/* noise */
		for (int i = 0; i < len; i++)
			buf[i] = ss_rand(s);
		break;
	}
	ss_send(s, &j->w[ss_rand(s) % j->n], buf, len);
	s->st.garbage++;
}

static inline void ss_result(struct simswitch *s, struct ss_job *j, uint32_t seq,
			     uint64_t to)
{
	uint8_t buf[ESA_HDR_LEN + 4 * ESA_MAX_VALUES];
	struct esa_hdr *h = (struct esa_hdr *)buf;
	struct ss_chunk *c = &j->c[seq];

	esa_hdr_init(h, ESA_T_RESULT, j->id, ESA_RANK_NONE, esa_full_mask(j->n), seq,
		     s->nvals);
	h->flags = c->flags;
	h->reason = c->reason;
	memcpy(buf + ESA_HDR_LEN, c->res, 4 * s->nvals);
	for (int r = 0; r < j->n; r++)
		if (to & (1ULL << r))
			ss_send(s, &j->w[r], buf, ESA_HDR_LEN + 4 * s->nvals);
	if (ss_chance(s, s->p_garbage))
		ss_garbage(s, j, seq);
}

/* As the PS: a FETCH for seq to a rank that resent it, with what we hold. */
static inline void ss_status(struct simswitch *s, struct ss_job *j, uint32_t seq, int rank)
{
	struct esa_hdr h;

	esa_hdr_init(&h, ESA_T_FETCH, j->id, ESA_RANK_NONE, j->c[seq].bitmap, seq, 0);
	sendto(s->psfd, &h, ESA_HDR_LEN, 0, (const struct sockaddr *)&j->w[rank],
	       sizeof(j->w[rank]));
}

static inline bool ss_fo_range(const struct simswitch *s, uint32_t seq)
{
	for (int i = 0; i < s->nfo; i++)
		if (seq >= s->fo_lo[i] && seq < s->fo_hi[i])
			return true;
	return !s->nfo;
}

static inline void ss_rx(struct simswitch *s, const uint8_t *buf, int len,
			 const struct sockaddr_in *src)
{
	const struct esa_hdr *h = (const void *)buf;
	const int32_t *v = (const int32_t *)(buf + ESA_HDR_LEN);
	struct ss_job *j = NULL;
	struct ss_chunk *c;
	uint32_t seq;
	int rank;

	s->st.rx++;
	if (len >= ESA_HDR_LEN && h->type == ESA_T_RESULT) {
		/* a worker answering our FETCH */
		if (len == ESA_HDR_LEN + 4 * s->nvals) {
			s->fetch_seq = ntohl(h->seq);
			memcpy(s->fetch_vals, v, 4 * s->nvals);
			s->fetch_got++;
			s->st.fetch_answers++;
		}
		return;
	}
	if (ss_chance(s, s->p_drop_in)) {
		s->st.drop_in++;
		return;
	}
	for (int i = 0; i < s->njobs; i++)
		if (len >= ESA_HDR_LEN && s->jobs[i].id == ntohs(h->job))
			j = &s->jobs[i];
	rank = len >= ESA_HDR_LEN ? ntohs(h->rank) : -1;
	if (!j || len != ESA_HDR_LEN + 4 * s->nvals || h->version != ESA_VERSION ||
	    h->type != ESA_T_DATA || (h->flags & ~ESA_F_RESEND) || rank >= j->n ||
	    be64toh(h->bitmap) != 1ULL << rank || ntohs(h->count) != s->nvals ||
	    src->sin_port != j->w[rank].sin_port || h->reason || h->resv) {
		s->st.bad_data++;
		return;
	}
	seq = ntohl(h->seq);
	if (seq >= SS_MAXSEQ) {
		s->st.bad_data++;
		return;
	}
	c = &j->c[seq];
	s->st.resends += !!(h->flags & ESA_F_RESEND);
	if (!c->first) {
		c->first = calloc((size_t)j->n * s->nvals, 4);
		c->sum = calloc(s->nvals, 8);
		c->res = calloc(s->nvals, 4);
	}
	if (c->bitmap & (1ULL << rank)) {
		if (memcmp(c->first + rank * s->nvals, v, 4 * s->nvals))
			s->st.inconsistent++;	/* a resend must be the same bytes */
		if (c->done && (h->flags & ESA_F_RESEND))
			ss_result(s, j, seq, 1ULL << rank);
		else if (s->fetch_status && (h->flags & ESA_F_RESEND))
			ss_status(s, j, seq, rank);
		return;
	}
	memcpy(c->first + rank * s->nvals, v, 4 * s->nvals);
	if (c->bitmap && c->prio != h->prio)
		s->st.prio_mismatch++;	/* ranks must agree on a chunk's priority */
	c->prio = h->prio;
	c->bitmap |= 1ULL << rank;
	for (int i = 0; i < s->nvals; i++)
		c->sum[i] += v[i];
	if (c->bitmap != (j->n >= 64 ? ~0ULL : (1ULL << j->n) - 1))
		return;
	c->done = 1;
	for (int i = 0; i < s->nvals; i++) {
		if (c->sum[i] > INT32_MAX || c->sum[i] < INT32_MIN)
			c->flags = ESA_F_OVERFLOW;
		c->res[i] = (int32_t)c->sum[i];
	}
	if (c->flags)
		s->st.true_ovf++;
	else if (ss_fo_range(s, seq) && ss_chance(s, s->p_false_ovf)) {
		c->flags = ESA_F_OVERFLOW;	/* e.g. a partial overflowed */
		s->st.false_ovf++;
	}
	if (ss_chance(s, s->p_contention)) {
		c->reason = ESA_R_PREEMPT;
		s->st.contention++;
	}
	s->st.results++;
	ss_result(s, j, seq, ~0ULL);
}

static inline void *ss_thread(void *arg)
{
	struct simswitch *s = arg;
	uint8_t buf[ESA_HDR_LEN + 4 * ESA_MAX_VALUES + 64];

	while (!s->stop) {
		struct pollfd p[2] = { { .fd = s->fd, .events = POLLIN },
				       { .fd = s->psfd, .events = POLLIN } };
		struct sockaddr_in src;
		socklen_t sl = sizeof(src);
		int n;

		if (poll(p, 2, s->nheld ? 1 : 20) <= 0) {
			pthread_mutex_lock(&s->lock);
			ss_tick(s, true);	/* quiet: let the held ones go */
			ss_flush(s);
			pthread_mutex_unlock(&s->lock);
			continue;
		}
		for (int k = 0; k < 2; k++) {
			while ((n = recvfrom(p[k].fd, buf, sizeof(buf), MSG_DONTWAIT,
					     (void *)&src, &sl)) >= 0) {
				pthread_mutex_lock(&s->lock);
				ss_rx(s, buf, n, &src);
				ss_tick(s, false);
				pthread_mutex_unlock(&s->lock);
				sl = sizeof(src);
			}
		}
		pthread_mutex_lock(&s->lock);
		ss_flush(s);	/* a burst handled: what is queued goes */
		pthread_mutex_unlock(&s->lock);
	}
	return NULL;
}

static inline int ss_start(struct simswitch *s, uint16_t port, int nvals, uint64_t seed)
{
	int big = 8 << 20;

	memset(s, 0, sizeof(*s));
	s->nvals = nvals;
	s->rng = seed;
	pthread_mutex_init(&s->lock, NULL);
	s->addr.sin_family = AF_INET;
	s->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->addr.sin_port = htons(port);
	s->psaddr = s->addr;
	s->psaddr.sin_port = htons(port + 1);
	s->fd = socket(AF_INET, SOCK_DGRAM, 0);
	s->psfd = socket(AF_INET, SOCK_DGRAM, 0);
	if (s->fd < 0 || s->psfd < 0)
		return -errno;
	setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	setsockopt(s->fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	if (bind(s->fd, (void *)&s->addr, sizeof(s->addr)) ||
	    bind(s->psfd, (void *)&s->psaddr, sizeof(s->psaddr)))
		return -errno;
	return 0;
}

/* Register job id with n workers on 127.0.0.1, ports port0 + rank. */
static inline void ss_job(struct simswitch *s, int id, int n, uint16_t port0)
{
	struct ss_job *j = &s->jobs[s->njobs++];

	j->id = id;
	j->n = n;
	j->c = calloc(SS_MAXSEQ, sizeof(*j->c));
	for (int r = 0; r < n; r++) {
		j->w[r].sin_family = AF_INET;
		j->w[r].sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		j->w[r].sin_port = htons(port0 + r);
	}
}

static inline int ss_run(struct simswitch *s)
{
	return pthread_create(&s->th, NULL, ss_thread, s);
}

static inline void ss_stop(struct simswitch *s)
{
	s->stop = 1;
	pthread_join(s->th, NULL);
	close(s->fd);
	close(s->psfd);
	for (int i = 0; i < s->njobs; i++) {
		for (uint32_t q = 0; q < SS_MAXSEQ; q++) {
			free(s->jobs[i].c[q].first);
			free(s->jobs[i].c[q].sum);
			free(s->jobs[i].c[q].res);
		}
		free(s->jobs[i].c);
	}
}

/* Ask worker `rank` of job j for its result of seq (a FETCH, from the PS). */
static inline void ss_fetch(struct simswitch *s, int ji, int rank, uint32_t seq)
{
	struct esa_hdr h;

	esa_hdr_init(&h, ESA_T_FETCH, s->jobs[ji].id, ESA_RANK_NONE, 0, seq, 0);
	pthread_mutex_lock(&s->lock);
	sendto(s->psfd, &h, ESA_HDR_LEN, 0, (const struct sockaddr *)&s->jobs[ji].w[rank],
	       sizeof(s->jobs[ji].w[rank]));
	pthread_mutex_unlock(&s->lock);
}

#endif /* ESA_SIMSWITCH_H */
