// SPDX-License-Identifier: GPL-2.0
/*
 * lib_bench - is libesa fast enough not to be the bottleneck?  (make bench-lib)
 *
 * Each libesa path against a floor measured in the same run, on loopback:
 *   convert   quantize float32 into packet values, and back; int32 copies;
 *             floor: memcpy of the same bytes
 *   send      the worker's send path: a burst of 512 chunks (the largest
 *             window: a check chunk and 511 data chunks) to a sink (build and
 *             sendmmsg every DATA packet), best of 24 bursts; floor: sendmmsg
 *             of prebuilt frames, same batch
 *   recv      the worker's receive path: the burst's 512 results waiting in
 *             its socket, drained and applied (recvmmsg, checks, copy out,
 *             window); floor: recvmmsg of as many results
 *   loop      whole allreduces (float32 and int32) of one rank against an echo
 *             switch that returns each DATA as its RESULT; floor: a client that
 *             keeps the same window of prebuilt frames in flight through the
 *             same echo with sendmmsg/recvmmsg and does nothing else
 * Prints one line per measurement: packets/s, elements/s and the ratio to
 * its floor (best of 3 runs each).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <sched.h>
#include <netinet/udp.h>
#include <sys/socket.h>

#include "esa.h"
#include "esa_int.h"
#include "esa_wire.h"

static int NV = 256;			/* values per packet: 256, then 856 */
#define PKT	(ESA_HDR_LEN + 4 * NV)
#define PKTMAX	(ESA_HDR_LEN + 4 * ESA_MAX_VALUES)
#define BATCH	64

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Where sockets bind: loopback, or the ends of a veth pair (bench_veth). */
static const char *g_me = "127.0.0.1", *g_sw = "127.0.0.1";

static int udp_at(const char *ip, uint16_t port, struct sockaddr_in *a);

static int udp(uint16_t port, struct sockaddr_in *a)
{
	return udp_at("127.0.0.1", port, a);
}

static int udp_at(const char *ip, uint16_t port, struct sockaddr_in *a)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0), big = 64 << 20;

	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	inet_pton(AF_INET, ip, &a->sin_addr);
	a->sin_port = htons(port);
	/* room for a whole burst (root: beyond rmem_max) */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	if (bind(fd, (void *)a, sizeof(*a))) {
		perror("lib_bench: bind");
		exit(1);
	}
	return fd;
}

/* ------------------------------------------------------------------ */
/* The echo switch: every DATA comes back as its RESULT (one rank).     */
/* ------------------------------------------------------------------ */

struct echo {
	int fd;
	volatile int stop;
	pthread_t th;
	struct sockaddr_in addr;
	int netns;		/* the namespace to echo in, -1: ours */
	uint16_t port;
	volatile int ready;
};

static void *echo_main(void *arg)
{
	struct echo *e = arg;

	if (e->netns >= 0 && setns(e->netns, CLONE_NEWNET))
		perror("lib_bench: setns");
	e->fd = udp_at(g_sw, e->port, &e->addr);
	e->ready = 1;
	static uint8_t buf[BATCH][PKTMAX + 64];
	struct mmsghdr m[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_in src[BATCH];

	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = buf[i];
		iov[i].iov_len = sizeof(buf[i]);
		m[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i], .msg_iovlen = 1,
						.msg_name = &src[i] };
	}
	while (!e->stop) {
		struct pollfd p = { .fd = e->fd, .events = POLLIN };
		int n;

		if (poll(&p, 1, 50) <= 0)
			continue;
		for (int i = 0; i < BATCH; i++) {
			m[i].msg_hdr.msg_namelen = sizeof(src[i]);
			iov[i].iov_len = sizeof(buf[i]);
		}
		n = recvmmsg(e->fd, m, BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			continue;
		for (int i = 0; i < n; i++) {
			struct esa_hdr *h = (void *)buf[i];

			h->type = ESA_T_RESULT;
			h->rank = htons(ESA_RANK_NONE);
			h->flags = 0;
			iov[i].iov_len = m[i].msg_len;
		}
		for (int s = 0; s < n;) {
			int k = sendmmsg(e->fd, m + s, n - s, 0);

			if (k <= 0)
				break;
			s += k;
		}
	}
	return NULL;
}

static void echo_start(struct echo *e, uint16_t port, int netns)
{
	memset(e, 0, sizeof(*e));
	e->netns = netns;
	e->port = port;
	pthread_create(&e->th, NULL, echo_main, e);
	while (!e->ready)
		usleep(1000);
}

static void echo_stop(struct echo *e)
{
	e->stop = 1;
	pthread_join(e->th, NULL);
	close(e->fd);
}

/* ------------------------------------------------------------------ */

static void frame(uint8_t *b, uint32_t seq)
{
	struct esa_hdr *h = (void *)b;

	esa_hdr_init(h, ESA_T_DATA, 1, 0, 1, seq, NV);
}

/* Raw floor of the loop: keep `window` frames in flight through the echo. */
static double raw_loop(struct echo *e, uint16_t port, long npkts, int window)
{
	static uint8_t tx[BATCH][PKTMAX], rx[BATCH][PKTMAX + 64];
	struct mmsghdr sm[BATCH], rm[BATCH];
	struct iovec siov[BATCH], riov[BATCH];
	struct sockaddr_in me;
	int fd = udp_at(g_me, port, &me);
	long sent = 0, got = 0, lost = 0;
	double t0;

	for (int i = 0; i < BATCH; i++) {
		frame(tx[i], i);
		siov[i] = (struct iovec){ tx[i], PKT };
		sm[i].msg_hdr = (struct msghdr){ .msg_iov = &siov[i], .msg_iovlen = 1,
						 .msg_name = &e->addr,
						 .msg_namelen = sizeof(e->addr) };
		riov[i] = (struct iovec){ rx[i], sizeof(rx[i]) };
		rm[i].msg_hdr = (struct msghdr){ .msg_iov = &riov[i], .msg_iovlen = 1 };
	}
	t0 = now();
	while (got < npkts) {
		int want = window - (sent - got), n;
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (want > BATCH)
			want = BATCH;
		if (want > npkts - sent)
			want = npkts - sent;
		if (want > 0) {
			n = sendmmsg(fd, sm, want, 0);
			if (n > 0)
				sent += n;
		}
		if (sent - got >= window || sent == npkts) {
			if (poll(&p, 1, 100) <= 0) {
				lost += sent - got;	/* refill the window */
				sent = got;
				continue;
			}
		}
		n = recvmmsg(fd, rm, BATCH, MSG_DONTWAIT, NULL);
		if (n > 0)
			got += n;
	}
	if (lost)
		fprintf(stderr, "lib_bench: raw loop: %ld replies lost and refilled\n", lost);
	t0 = now() - t0;
	close(fd);
	return npkts / t0;
}

/* The send path's floors: prebuilt frames to a sink, by sendmmsg to an
 * address (what libesa did), by sendmmsg on a socket connected to the sink,
 * and as UDP GSO bursts on it (one sendmsg per batch). */
enum { RAW_TO, RAW_CONN, RAW_GSO };

static double raw_send(uint16_t sink_port, long npkts, int mode)
{
	static uint8_t tx[BATCH][PKTMAX];
	struct mmsghdr sm[BATCH];
	struct iovec siov[BATCH];
	struct sockaddr_in sink, me;
	int sfd = udp(sink_port, &sink), fd = udp(sink_port + 1, &me), seg = PKT, per = BATCH;
	long sent = 0;
	double t0;

	if (mode != RAW_TO && connect(fd, (void *)&sink, sizeof(sink)))
		perror("lib_bench: connect");
	if (mode == RAW_GSO) {
		setsockopt(fd, SOL_UDP, 103 /* UDP_SEGMENT */, &seg, sizeof(seg));
		per = 65507 / PKT < BATCH ? 65507 / PKT : BATCH;
	}
	for (int i = 0; i < BATCH; i++) {
		frame(tx[i], i);
		siov[i] = (struct iovec){ tx[i], PKT };
		sm[i].msg_hdr = (struct msghdr){ .msg_iov = &siov[i], .msg_iovlen = 1,
						 .msg_name = mode == RAW_TO ? &sink : NULL,
						 .msg_namelen = mode == RAW_TO ? sizeof(sink) : 0 };
	}
	t0 = now();
	while (sent < npkts) {
		if (mode == RAW_GSO) {
			struct msghdr m = { .msg_iov = siov, .msg_iovlen = per };

			if (sendmsg(fd, &m, 0) > 0)
				sent += per;
		} else {
			int n = sendmmsg(fd, sm, BATCH, 0);

			if (n > 0)
				sent += n;
		}
	}
	t0 = now() - t0;
	close(fd);
	close(sfd);
	return sent / t0;
}

static const char *g_io = "udp";	/* the transport of the workers */
static int g_timeout_us;		/* their least resend timeout, 0: 200 ms */

static esa_worker *worker(uint16_t sw, uint16_t me, int window, int give_up)
{
	esa_config *c = esa_config_new();
	char a[64], err[256];
	esa_worker *w;

	snprintf(a, sizeof(a), "%s:%u", g_sw, sw);
	esa_config_set(c, "switch", a);
	snprintf(a, sizeof(a), "%s:%u", g_me, me);
	esa_config_set(c, "local", a);
	snprintf(a, sizeof(a), "%s:9", g_sw);
	esa_config_set(c, "ps", a);	/* never heard from */
	esa_config_set(c, "job", "1");
	esa_config_set(c, "rank", "0");
	esa_config_set(c, "workers", "1");
	esa_config_set_int(c, "window", window);
	esa_config_set_int(c, "give_up_ms", give_up);
	esa_config_set(c, "timeout_ms", "200");	/* loopback: no loss, no resend */
	esa_config_set(c, "timeout_max_ms", "1000");
	if (g_timeout_us)
		esa_config_set_int(c, "timeout_us", g_timeout_us);
	esa_config_set_int(c, "values", NV);
	esa_config_set(c, "io", g_io);
	w = esa_worker_open(c, err, sizeof(err));
	esa_config_free(c);
	if (!w) {
		fprintf(stderr, "lib_bench: %s\n", err);
		exit(1);
	}
	return w;
}

/*
 * libesa's send and receive paths, one burst of `chunks` int32 chunks and
 * the allreduce's check chunk: the worker sends them all (window = chunks +
 * 1) to a sink that answers nothing
 * (send: build and sendmmsg); the sink then turns them all into results and
 * returns them at once, and the worker drains and applies them (receive:
 * recvmmsg, check, copy out, retire).  Floors: sendmmsg of the same frames,
 * and recvmmsg of the same number of results waiting in a socket.
 */
struct paths {
	double send, recv, raw_recv;
};

/* Results back to the worker in UDP GSO sends of up to 16: what the
 * kernel's GRO hands a UDP_GRO socket when the datagrams carry checksums
 * (on loopback a GSO send arrives whole).  How many went. */
static int send_coalesced(int fd, struct iovec *iov, int k, struct sockaddr_in *to)
{
	int sent = 0;

	for (int i = 0; i < k; i += 16) {
		int n = k - i < 16 ? k - i : 16;
		union {
			char	b[CMSG_SPACE(sizeof(uint16_t))];
			struct cmsghdr align;
		} ctl;
		struct msghdr m = { .msg_name = to, .msg_namelen = sizeof(*to),
				    .msg_iov = iov + i, .msg_iovlen = n };
		uint16_t seg = iov[i].iov_len;

		if (n > 1) {
			struct cmsghdr *c;

			m.msg_control = ctl.b;
			m.msg_controllen = sizeof(ctl.b);
			c = CMSG_FIRSTHDR(&m);
			c->cmsg_level = IPPROTO_UDP;
			c->cmsg_type = 103;	/* UDP_SEGMENT */
			c->cmsg_len = CMSG_LEN(sizeof(seg));
			memcpy(CMSG_DATA(c), &seg, sizeof(seg));
		}
		if (sendmsg(fd, &m, 0) >= 0)
			sent += n;
	}
	return sent;
}

/* The worker of lib_paths(): one rank, the whole burst in one window, no
 * resend while it is measured. */
static esa_worker *paths_worker(uint16_t port, int pk, int gro)
{
	esa_config *c = esa_config_new();
	esa_worker *w;
	char a[64], err[256];

	snprintf(a, sizeof(a), "127.0.0.1:%u", port);
	esa_config_set(c, "switch", a);
	snprintf(a, sizeof(a), "127.0.0.1:%u", port + 1);
	esa_config_set(c, "local", a);
	esa_config_set(c, "ps", "127.0.0.1:9");
	esa_config_set(c, "job", "1");
	esa_config_set(c, "rank", "0");
	esa_config_set(c, "workers", "1");
	esa_config_set_int(c, "window", pk);
	esa_config_set_int(c, "rcvbuf", 64 << 20);
	esa_config_set(c, "timeout_ms", "60000");	/* no resend while we measure */
	esa_config_set(c, "timeout_max_ms", "60000");
	esa_config_set_int(c, "values", NV);
	if (gro >= 0)
		esa_config_set_int(c, "udp_gro", gro);
	w = esa_worker_open(c, err, sizeof(err));
	esa_config_free(c);
	if (!w) {
		fprintf(stderr, "lib_bench: %s\n", err);
		exit(1);
	}
	return w;
}

/* The receive batch of the sink: BATCH buffers of one packet each. */
struct paths_batch {
	uint8_t (*buf)[PKTMAX + 64];
	struct mmsghdr m[BATCH];
	struct iovec iov[BATCH];
};

static void batch_reset(struct paths_batch *b)
{
	for (int i = 0; i < BATCH; i++) {
		b->iov[i] = (struct iovec){ b->buf[i], sizeof(b->buf[i]) };
		b->m[i].msg_hdr = (struct msghdr){ .msg_iov = &b->iov[i], .msg_iovlen = 1 };
	}
}

/* The k packets received sent back as results to the worker at wa, and a
 * copy to the plain socket at fa; returns how many went back. */
static int batch_echo(struct paths_batch *b, int sfd, int k, struct sockaddr_in *wa,
		      struct sockaddr_in *fa, int gro)
{
	int back;

	for (int i = 0; i < k; i++) {
		struct esa_hdr *h = (void *)b->buf[i];

		h->type = ESA_T_RESULT;
		h->rank = htons(ESA_RANK_NONE);
		b->iov[i].iov_len = b->m[i].msg_len;
		b->m[i].msg_hdr.msg_name = wa;
		b->m[i].msg_hdr.msg_namelen = sizeof(*wa);
	}
	back = gro < 0 ? sendmmsg(sfd, b->m, k, 0) : send_coalesced(sfd, b->iov, k, wa);
	for (int i = 0; i < k; i++)
		b->m[i].msg_hdr.msg_name = fa;
	sendmmsg(sfd, b->m, k, 0);
	for (int i = 0; i < k; i++) {
		b->iov[i].iov_len = sizeof(b->buf[i]);
		b->m[i].msg_hdr.msg_name = NULL;
		b->m[i].msg_hdr.msg_namelen = 0;
	}
	return back;
}

/* The sink has them all: back as results, all queued for the worker, and
 * a second copy into a plain socket for the floor.  Returns the packets
 * received, *back those sent back. */
static int paths_sink(struct paths_batch *b, int sfd, int pk, struct sockaddr_in *wa,
		      struct sockaddr_in *fa, int gro, int *back)
{
	int got = 0;

	while (got < pk) {
		struct pollfd pf = { .fd = sfd, .events = POLLIN };
		int k;

		if (poll(&pf, 1, 1000) <= 0)
			break;	/* some were dropped: the sink's buffer is too small */
		k = recvmmsg(sfd, b->m, BATCH, MSG_DONTWAIT, NULL);
		if (k <= 0)
			continue;
		*back += batch_echo(b, sfd, k, wa, fa, gro);
		got += k;
	}
	return got;
}

/* gro < 0: results back one datagram each; else coalesced, to a worker
 * with udp_gro=gro. */
static void lib_paths(uint16_t port, int chunks, struct paths *res, int gro)
{
	static uint8_t buf[BATCH][PKTMAX + 64];
	struct paths_batch b = { .buf = buf };
	struct sockaddr_in sink, wa, fa;
	int sfd = udp(port, &sink), ffd = udp(port + 2, &fa), got, back = 0;
	int pk = chunks + 1;	/* packets: the check chunk too */
	size_t n = (size_t)chunks * NV;
	int32_t *in = malloc(n * 4), *out = malloc(n * 4);
	esa_worker *w = paths_worker(port, pk, gro);
	esa_request *r;
	double t;

	wa = sink;
	wa.sin_port = htons(port + 1);
	for (size_t i = 0; i < n; i++)
		in[i] = (int32_t)i;
	memset(out, 0, n * 4);	/* no page faults in the measurement */
	batch_reset(&b);
	r = esa_allreduce_start(w, ESA_INT32, in, out, n);
	t = now();
	while (esa_worker_stat(w, "tx_packets") < pk)
		esa_test(r, NULL);
	res->send = pk / (now() - t);
	got = paths_sink(&b, sfd, pk, &wa, &fa, gro, &back);
	t = now();
	if (got < pk || esa_wait(r, 5000) || memcmp(in, out, n * 4))
		fprintf(stderr, "lib_bench: the burst did not come back whole (%d sent back): "
			"SO_RCVBUFFORCE needs root\n", back);
	res->recv = pk / (now() - t);
	esa_request_free(r);
	got = 0;
	t = now();
	while (got < pk) {
		int k = recvmmsg(ffd, b.m, BATCH, MSG_DONTWAIT, NULL);

		if (k <= 0)
			break;
		got += k;
	}
	res->raw_recv = got / (now() - t);
	esa_worker_close(w);
	close(sfd);
	close(ffd);
	free(in);
	free(out);
}

static double lib_loop(struct echo *e, uint16_t port, long npkts, int window, int dtype)
{
	size_t n = npkts * NV;
	float *in = malloc(n * 4), *out = malloc(n * 4);
	esa_worker *w = worker(ntohs(e->addr.sin_port), port, window, 10000);
	double t0;
	int rc;

	memset(out, 0, n * 4);
	for (size_t i = 0; i < n; i++) {
		if (dtype == ESA_FLOAT32)
			in[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
		else
			((int32_t *)in)[i] = (int32_t)i;
	}
	t0 = now();
	rc = esa_allreduce(w, dtype, in, out, n);
	t0 = now() - t0;
	if (rc)
		fprintf(stderr, "lib_bench: allreduce: %s\n", esa_strerror(rc));
	else if (dtype == ESA_INT32 && memcmp(in, out, n * 4))
		fprintf(stderr, "lib_bench: int32 sums wrong\n");
	esa_worker_close(w);
	free(in);
	free(out);
	return npkts / t0;	/* data packets; float32 adds 1/32 scale chunks */
}

/*
 * The resend timer: a worker of window 1 sends one chunk to a sink that
 * never answers; the time from its first send to its first resend, as the
 * sink sees them, against the configured least timeout (timeout_us: no
 * round trip measured yet).  Median of `trials`.
 */
static double timer_delay(uint16_t port, int timeout_us, int trials)
{
	double d[64];
	int got = 0;

	for (int k = 0; k < trials && k < 64; k++) {
		struct sockaddr_in sink;
		int sfd = udp(port + 2 * k, &sink);
		esa_worker *w;

		g_timeout_us = timeout_us;
		w = worker(port + 2 * k, port + 2 * k + 1, 1, 10000);
		g_timeout_us = 0;
		static int32_t buf[ESA_MAX_VALUES];
		uint8_t pkt[PKTMAX + 64];
		esa_request *r;
		double t[2] = { 0, 0 };
		uint32_t seq = 0;
		int n = 0;

		r = esa_allreduce_start(w, ESA_INT32, buf, buf, NV);
		while (n < 2) {
			struct pollfd p = { .fd = sfd, .events = POLLIN };

			esa_pump(w, 0);
			/* window 1: the first chunk (the check), and its resend */
			if (poll(&p, 1, 0) > 0 && recv(sfd, pkt, sizeof(pkt), 0) > 0 &&
			    (!n || ((struct esa_hdr *)pkt)->seq == seq)) {
				seq = ((struct esa_hdr *)pkt)->seq;
				t[n++] = now();
			}
		}
		d[got++] = t[1] - t[0];
		esa_request_free(r);
		esa_worker_close(w);
		close(sfd);
	}
	for (int i = 1; i < got; i++)
		for (int j = i; j > 0 && d[j] < d[j - 1]; j--) {
			double x = d[j];

			d[j] = d[j - 1];
			d[j - 1] = x;
		}
	return got ? d[got / 2] : 0;
}

/*
 * A pump of a worker whose whole window is in flight and nothing is due:
 * ns per esa_pump().  It must not grow with the window.
 */
static double pump_cost(uint16_t port, int window)
{
	struct sockaddr_in sink;
	int sfd = udp(port, &sink), calls = 20000;
	esa_worker *w = worker(port, port + 1, window, 100000);
	size_t n = (size_t)(window - 1) * NV;
	int32_t *buf = calloc(n, 4);
	esa_request *r = esa_allreduce_start(w, ESA_INT32, buf, buf, n);
	double t;

	while (esa_worker_stat(w, "tx_packets") < window)
		esa_pump(w, 0);
	t = now();
	for (int i = 0; i < calls; i++)
		esa_pump(w, 0);
	t = (now() - t) / calls * 1e9;
	esa_request_free(r);
	esa_worker_close(w);
	close(sfd);
	free(buf);
	return t;
}

static double best(double a, double b)
{
	return a > b ? a : b;
}

/* Conversions: float32 and int32 into packets and back, against memcpy. */
static void bench_convert(int runs)
{
	size_t ne = 1 << 22;
	float *x = malloc(ne * 4), *y = malloc(ne * 4);
	int32_t *q = malloc(ne * 4);
	double c_mem = 0, c_q = 0, c_dq = 0, c_i = 0, t;

	for (size_t i = 0; i < ne; i++)
		x[i] = (float)((i * 2654435761u) % 100000) * 1e-5f - 0.5f;
	for (int r = 0; r < runs; r++) {
		t = now();
		for (size_t o = 0; o + NV <= ne; o += NV)
			memcpy(q + o, x + o, NV * 4);
		c_mem = best(c_mem, ne / (now() - t));
		t = now();
		for (size_t o = 0; o + NV <= ne; o += NV)
			esa_q_f32(x + o, NV, q + o, NV, esa_q_shift(esa_q_E(esa_q_maxexp(x + o, NV)), 2));
		c_q = best(c_q, ne / (now() - t));
		t = now();
		for (size_t o = 0; o + NV <= ne; o += NV)
			esa_dq_f32(q + o, NV, y + o, 30);
		c_dq = best(c_dq, ne / (now() - t));
		t = now();
		for (size_t o = 0; o + NV <= ne; o += NV)
			esa_q_i32((int32_t *)x + o, NV, q + o, NV);
		c_i = best(c_i, ne / (now() - t));
	}
	printf("bench-lib: values %d: convert f32 -> packet (scale + quantize): %.2e elem/s, "
	       "memcpy floor %.2e, ratio %.2f\n", NV, c_q, c_mem, c_q / c_mem);
	printf("bench-lib: values %d: convert packet -> f32 (dequantize): %.2e elem/s, ratio "
	       "%.2f\n", NV, c_dq, c_dq / c_mem);
	printf("bench-lib: values %d: convert i32 -> packet (copy): %.2e elem/s, ratio %.2f\n",
	       NV, c_i, c_i / c_mem);
	/* the copy of every result into the FETCH cache that libesa no longer makes */
	printf("bench-lib: values %d: memcpy of one result (the copy into the FETCH cache, "
	       "gone): %.1f ns\n", NV, 1e9 * NV / c_mem);
	fflush(stdout);
	free(x);
	free(y);
	free(q);
}

/* The UDP steps: send and receive bursts against their floors. */
static void bench_udp(uint16_t p0, int runs)
{
	double s_to = 0, s_conn = 0, s_gso = 0, s_lib = 0, r_lib = 0, r_raw = 0, r_gro = 0;
	double r_split = 0;
	struct paths ps;

	for (int r = 0; r < 8 * runs; r++) {	/* short bursts: best of 24 */
		s_to = best(s_to, raw_send(p0 + 10 + 4 * r, ESA_WINDOW_MAX, RAW_TO));
		s_conn = best(s_conn, raw_send(p0 + 200 + 4 * r, ESA_WINDOW_MAX, RAW_CONN));
		s_gso = best(s_gso, raw_send(p0 + 400 + 4 * r, ESA_WINDOW_MAX, RAW_GSO));
		lib_paths(p0 + 600 + 4 * r, ESA_WINDOW_MAX - 1, &ps, -1);
		s_lib = best(s_lib, ps.send);
		r_lib = best(r_lib, ps.recv);
		r_raw = best(r_raw, ps.raw_recv);
		lib_paths(p0 + 700 + 4 * r, ESA_WINDOW_MAX - 1, &ps, 1);
		r_gro = best(r_gro, ps.recv);
		lib_paths(p0 + 800 + 4 * r, ESA_WINDOW_MAX - 1, &ps, 0);
		r_split = best(r_split, ps.recv);
	}
	printf("bench-lib: values %d: send raw sendmmsg to an address: %.0f pkt/s (libesa's "
	       "path before)\n", NV, s_to);
	printf("bench-lib: values %d: send raw sendmmsg, connected:    %.0f pkt/s, %.2fx\n", NV,
	       s_conn, s_conn / s_to);
	printf("bench-lib: values %d: send raw GSO, connected (floor): %.0f pkt/s, %.2fx\n", NV,
	       s_gso, s_gso / s_to);
	printf("bench-lib: values %d: send libesa (build+send):        %.0f pkt/s, %.2e elem/s, "
	       "ratio %.2f of the floor, %.2fx the path before\n", NV, s_lib, s_lib * NV,
	       s_lib / s_gso, s_lib / s_to);
	printf("bench-lib: values %d: recv raw recvmmsg (floor):        %.0f pkt/s\n", NV, r_raw);
	printf("bench-lib: values %d: recv libesa (recv+apply):         %.0f pkt/s, %.2e elem/s, "
	       "ratio %.2f\n", NV, r_lib, r_lib * NV, r_lib / r_raw);
	printf("bench-lib: values %d: recv libesa, results sent coalesced (GSO of 16): "
	       "udp_gro=1 %.0f pkt/s, udp_gro=0 %.0f pkt/s, %.2fx\n", NV, r_gro, r_split,
	       r_gro / r_split);
	fflush(stdout);
}

/* Whole allreduces against the raw client, through the echo switch. */
static void bench_loop(uint16_t p0, long npkts, int runs, double *raw, double *f32,
		       double *i32, int netns)
{
	struct echo e;

	echo_start(&e, p0 + 50, netns);
	for (int r = 0; r < runs; r++) {
		*raw = best(*raw, raw_loop(&e, p0 + 60 + 4 * r, npkts, 128));
		*f32 = best(*f32, lib_loop(&e, p0 + 80 + 4 * r, npkts, 128, ESA_FLOAT32));
		*i32 = best(*i32, lib_loop(&e, p0 + 100 + 4 * r, npkts, 128, ESA_INT32));
	}
	echo_stop(&e);
	printf("bench-lib: values %d: loop io=%s raw window 128 (floor): %.0f pkt/s\n", NV, g_io,
	       *raw);
	printf("bench-lib: values %d: loop io=%s libesa f32 allreduce:  %.0f pkt/s, %.2e elem/s, "
	       "ratio %.2f\n", NV, g_io, *f32, *f32 * NV, *f32 / *raw);
	printf("bench-lib: values %d: loop io=%s libesa i32 allreduce:  %.0f pkt/s, %.2e elem/s, "
	       "ratio %.2f\n", NV, g_io, *i32, *i32 * NV, *i32 / *raw);
	fflush(stdout);
}

/*
 * Over a veth pair between two namespaces of our own (root): the worker in
 * one (10.88.0.1), the echo switch in the other (10.88.0.2), io=udp and
 * io=xdp (native XDP on the worker's end, copy mode) against the raw
 * client, all through the same echo.
 */
static void bench_veth(uint16_t p0, long npkts, int runs)
{
	static const int sizes[] = { 256, ESA_FRAME_VALUES };
	char cmd[768], a[64], b[64], path[96];
	int nsb = -1, nsa = -1, home = open("/proc/thread-self/ns/net", O_RDONLY);

	snprintf(a, sizeof(a), "esalb%d-a", getpid());
	snprintf(b, sizeof(b), "esalb%d-b", getpid());
	snprintf(cmd, sizeof(cmd), "ip netns add %s && ip netns add %s && ip link add va mtu 3500 "
		 "netns %s type veth peer name vb mtu 3500 netns %s && ip -n %s addr add "
		 "10.88.0.1/24 dev va && ip -n %s addr add 10.88.0.2/24 dev vb && ip -n %s link "
		 "set va up && ip -n %s link set vb up", a, b, a, b, a, b, a, b);
	if (geteuid() || system(cmd)) {
		printf("bench-lib: veth not measured: needs root\n");
		goto out;
	}
	snprintf(path, sizeof(path), "/run/netns/%s", a);
	nsa = open(path, O_RDONLY);
	snprintf(path, sizeof(path), "/run/netns/%s", b);
	nsb = open(path, O_RDONLY);
	if (nsa < 0 || nsb < 0 || setns(nsa, CLONE_NEWNET))
		goto out;
	g_me = "10.88.0.1";
	g_sw = "10.88.0.2";
	for (int k = 0; k < 2; k++) {
		double r[2] = { 0 }, f[2] = { 0 }, i[2] = { 0 };

		NV = sizes[k];
		for (int io = 0; io < 2; io++) {
			g_io = io ? "xdp" : "udp";
			bench_loop(p0 + 400 * k + 200 * io, npkts, runs, &r[io], &f[io], &i[io], nsb);
		}
		printf("bench-lib: values %d: veth, io=xdp against io=udp: f32 %.2fx, i32 %.2fx; "
		       "raw floors %.0f and %.0f pkt/s\n", NV, f[1] / f[0], i[1] / i[0], r[0], r[1]);
		fflush(stdout);
	}
out:
	if (home >= 0 && setns(home, CLONE_NEWNET))
		perror("lib_bench: setns");
	snprintf(cmd, sizeof(cmd), "ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", a, b);
	if (system(cmd))
		fprintf(stderr, "lib_bench: cannot remove the namespaces\n");
	g_me = g_sw = "127.0.0.1";
	g_io = "udp";
	for (int fd = 0; fd < 3; fd++) {
		int x[] = { home, nsa, nsb };

		if (x[fd] >= 0)
			close(x[fd]);
	}
}

/* LIBBENCH="udp timer ..." runs only those parts (convert udp timer pump
 * loop veth). */
static bool want(const char *part)
{
	const char *w = getenv("LIBBENCH");

	return !w || strstr(w, part);
}

int main(int argc, char **argv)
{
	long npkts = argc > 1 ? atol(argv[1]) : 100000;
	int runs = 3;
	uint16_t p0 = 20000 + (getpid() * 7) % 20000;
	static const int sizes[] = { 256, ESA_FRAME_VALUES };
	double udp_f[2] = { 0 }, udp_i[2] = { 0 }, raw[2] = { 0 }, t, p8, p512;

	setvbuf(stdout, NULL, _IOLBF, 0);

	for (int k = 0; k < 2; k++) {
		NV = sizes[k];
		if (want("convert"))
			bench_convert(runs);
		if (want("udp"))
			bench_udp(p0 + 1000 * k, runs);
	}
	NV = 256;
	if (want("timer")) {
		t = timer_delay(p0 + 3000, 300, 15);
		printf("bench-lib: resend timer, timeout_us=300: first resend %.0f us after the "
		       "send (median of 15), %.2f of the floor (jitter adds up to 0.25)\n",
		       t * 1e6, t * 1e6 / 300);
	}
	if (want("pump")) {
		p8 = pump_cost(p0 + 3100, 8);
		p512 = pump_cost(p0 + 3110, 512);
		printf("bench-lib: a pump with the window in flight, nothing due: window 8 %.0f "
		       "ns, window 512 %.0f ns, ratio %.2f\n", p8, p512, p512 / p8);
	}
	fflush(stdout);
	for (int k = 0; want("loop") && k < 2; k++) {
		NV = sizes[k];
		bench_loop(p0 + 4000 + 200 * k, npkts, runs, &raw[k], &udp_f[k], &udp_i[k], -1);
	}
	if (want("veth"))
		bench_veth(p0 + 6000, npkts, runs);
	return 0;
}
