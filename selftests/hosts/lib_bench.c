// SPDX-License-Identifier: GPL-2.0
/*
 * lib_bench - is libesa fast enough not to be the bottleneck?  (make bench-lib)
 *
 * Each libesa path against a floor measured in the same run, on loopback:
 *   convert   quantize float32 into packet values, and back; int32 copies;
 *             floor: memcpy of the same bytes
 *   send      the worker's send path: a burst of 4096 chunks (window 4096)
 *             to a sink (build and sendmmsg every DATA packet); floor:
 *             sendmmsg of prebuilt frames, same batch
 *   recv      the worker's receive path: the burst's 4096 results waiting in
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
#include <sys/socket.h>

#include "esa.h"
#include "esa_int.h"

#define NV	256
#define PKT	(ESA_HDR_LEN + 4 * NV)
#define BATCH	64

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int udp(uint16_t port, struct sockaddr_in *a)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0), big = 64 << 20;

	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
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
};

static void *echo_main(void *arg)
{
	struct echo *e = arg;
	static uint8_t buf[BATCH][2048];
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

static void echo_start(struct echo *e, uint16_t port)
{
	memset(e, 0, sizeof(*e));
	e->fd = udp(port, &e->addr);
	pthread_create(&e->th, NULL, echo_main, e);
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

	memset(h, 0, sizeof(*h));
	h->version = ESA_VERSION;
	h->type = ESA_T_DATA;
	h->job = htons(1);
	h->rank = 0;
	h->bitmap = htobe64(1);
	h->seq = htonl(seq);
	h->count = htons(NV);
}

/* Raw floor of the loop: keep `window` frames in flight through the echo. */
static double raw_loop(struct echo *e, uint16_t port, long npkts, int window)
{
	static uint8_t tx[BATCH][PKT], rx[BATCH][2048];
	struct mmsghdr sm[BATCH], rm[BATCH];
	struct iovec siov[BATCH], riov[BATCH];
	struct sockaddr_in me;
	int fd = udp(port, &me);
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

/* Raw floor of the send path: sendmmsg of prebuilt frames to a sink. */
static double raw_send(uint16_t sink_port, long npkts)
{
	static uint8_t tx[BATCH][PKT];
	struct mmsghdr sm[BATCH];
	struct iovec siov[BATCH];
	struct sockaddr_in sink, me;
	int sfd = udp(sink_port, &sink), fd = udp(sink_port + 1, &me);
	long sent = 0;
	double t0;

	for (int i = 0; i < BATCH; i++) {
		frame(tx[i], i);
		siov[i] = (struct iovec){ tx[i], PKT };
		sm[i].msg_hdr = (struct msghdr){ .msg_iov = &siov[i], .msg_iovlen = 1,
						 .msg_name = &sink, .msg_namelen = sizeof(sink) };
	}
	t0 = now();
	while (sent < npkts) {
		int n = sendmmsg(fd, sm, BATCH, 0);

		if (n > 0)
			sent += n;
	}
	t0 = now() - t0;
	close(fd);
	close(sfd);
	return npkts / t0;
}

static esa_worker *worker(uint16_t sw, uint16_t me, int window, int give_up)
{
	esa_config *c = esa_config_new();
	char a[64], err[256];
	esa_worker *w;

	snprintf(a, sizeof(a), "127.0.0.1:%u", sw);
	esa_config_set(c, "switch", a);
	snprintf(a, sizeof(a), "127.0.0.1:%u", me);
	esa_config_set(c, "local", a);
	esa_config_set(c, "job", "1");
	esa_config_set(c, "rank", "0");
	esa_config_set(c, "workers", "1");
	esa_config_set_int(c, "window", window);
	esa_config_set_int(c, "give_up_ms", give_up);
	esa_config_set(c, "timeout_ms", "200");	/* loopback: no loss, no resend */
	esa_config_set(c, "timeout_max_ms", "1000");
	w = esa_worker_open(c, err, sizeof(err));
	esa_config_free(c);
	if (!w) {
		fprintf(stderr, "lib_bench: %s\n", err);
		exit(1);
	}
	return w;
}

/*
 * libesa's send and receive paths, one burst of `chunks` int32 chunks: the
 * worker sends them all (window = chunks) to a sink that answers nothing
 * (send: build and sendmmsg); the sink then turns them all into results and
 * returns them at once, and the worker drains and applies them (receive:
 * recvmmsg, check, copy out, retire).  Floors: sendmmsg of the same frames,
 * and recvmmsg of the same number of results waiting in a socket.
 */
struct paths {
	double send, recv, raw_recv;
};

static void lib_paths(uint16_t port, int chunks, struct paths *res)
{
	static uint8_t buf[BATCH][2048];
	struct mmsghdr m[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_in sink, wa, fa;
	int sfd = udp(port, &sink), ffd = udp(port + 2, &fa), got = 0, back = 0;
	size_t n = (size_t)chunks * NV;
	int32_t *in = malloc(n * 4), *out = malloc(n * 4);
	esa_config *c = esa_config_new();
	esa_request *r;
	esa_worker *w;
	char a[64], err[256];
	double t;

	snprintf(a, sizeof(a), "127.0.0.1:%u", port);
	esa_config_set(c, "switch", a);
	snprintf(a, sizeof(a), "127.0.0.1:%u", port + 1);
	esa_config_set(c, "local", a);
	esa_config_set(c, "job", "1");
	esa_config_set(c, "rank", "0");
	esa_config_set(c, "workers", "1");
	esa_config_set_int(c, "window", chunks);
	esa_config_set_int(c, "rcvbuf", 64 << 20);
	esa_config_set(c, "timeout_ms", "60000");	/* no resend while we measure */
	esa_config_set(c, "timeout_max_ms", "60000");
	w = esa_worker_open(c, err, sizeof(err));
	esa_config_free(c);
	if (!w) {
		fprintf(stderr, "lib_bench: %s\n", err);
		exit(1);
	}
	wa = sink;
	wa.sin_port = htons(port + 1);
	for (size_t i = 0; i < n; i++)
		in[i] = (int32_t)i;
	memset(out, 0, n * 4);	/* no page faults in the measurement */
	for (int i = 0; i < BATCH; i++) {
		iov[i] = (struct iovec){ buf[i], sizeof(buf[i]) };
		m[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i], .msg_iovlen = 1 };
	}
	r = esa_allreduce_start(w, ESA_INT32, in, out, n);
	t = now();
	while (esa_worker_stat(w, "tx_packets") < chunks)
		esa_test(r, NULL);
	res->send = chunks / (now() - t);
	/* the sink has them all: back as results, all queued for the worker,
	 * and a second copy into a plain socket for the floor */
	while (got < chunks) {
		struct pollfd pf = { .fd = sfd, .events = POLLIN };
		int k;

		if (poll(&pf, 1, 1000) <= 0)
			break;	/* some were dropped: the sink's buffer is too small */
		k = recvmmsg(sfd, m, BATCH, MSG_DONTWAIT, NULL);
		if (k <= 0)
			continue;
		for (int i = 0; i < k; i++) {
			struct esa_hdr *h = (void *)buf[i];

			h->type = ESA_T_RESULT;
			h->rank = htons(ESA_RANK_NONE);
			iov[i].iov_len = m[i].msg_len;
			m[i].msg_hdr.msg_name = &wa;
			m[i].msg_hdr.msg_namelen = sizeof(wa);
		}
		back += sendmmsg(sfd, m, k, 0);
		for (int i = 0; i < k; i++)
			m[i].msg_hdr.msg_name = &fa;
		sendmmsg(sfd, m, k, 0);
		for (int i = 0; i < k; i++) {
			iov[i].iov_len = sizeof(buf[i]);
			m[i].msg_hdr.msg_name = NULL;
			m[i].msg_hdr.msg_namelen = 0;
		}
		got += k;
	}
	t = now();
	if (got < chunks || esa_wait(r, 5000) || memcmp(in, out, n * 4))
		fprintf(stderr, "lib_bench: the burst did not come back whole (%d sent back): "
			"SO_RCVBUFFORCE needs root\n", back);
	res->recv = chunks / (now() - t);
	esa_request_free(r);
	got = 0;
	t = now();
	while (got < chunks) {
		int k = recvmmsg(ffd, m, BATCH, MSG_DONTWAIT, NULL);

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

static double best(double a, double b)
{
	return a > b ? a : b;
}

int main(int argc, char **argv)
{
	long npkts = argc > 1 ? atol(argv[1]) : 200000;
	int window = 128, runs = 3;
	uint16_t p0 = 20000 + (getpid() * 7) % 20000;
	size_t ne = 1 << 22;
	float *x = malloc(ne * 4), *y = malloc(ne * 4);
	int32_t *q = malloc(ne * 4);
	double c_mem = 0, c_q = 0, c_dq = 0, c_i = 0, t;
	double s_raw = 0, s_lib = 0, r_lib = 0, r_raw = 0, l_raw = 0, l_f = 0, l_i = 0;
	struct paths ps;
	struct echo e;

	for (size_t i = 0; i < ne; i++)
		x[i] = (float)((i * 2654435761u) % 100000) * 1e-5f - 0.5f;
	for (int r = 0; r < runs; r++) {
		t = now();
		for (size_t o = 0; o < ne; o += NV)
			memcpy(q + o, x + o, NV * 4);
		c_mem = best(c_mem, ne / (now() - t));
		t = now();
		for (size_t o = 0; o < ne; o += NV)
			esa_q_f32(x + o, NV, q + o, NV, esa_q_shift(esa_q_E(esa_q_maxexp(x + o, NV)), 2));
		c_q = best(c_q, ne / (now() - t));
		t = now();
		for (size_t o = 0; o < ne; o += NV)
			esa_dq_f32(q + o, NV, y + o, 30);
		c_dq = best(c_dq, ne / (now() - t));
		t = now();
		for (size_t o = 0; o < ne; o += NV)
			esa_q_i32((int32_t *)x + o, NV, q + o, NV);
		c_i = best(c_i, ne / (now() - t));
	}
	printf("bench-lib: convert f32 -> packet (scale + quantize): %.2e elem/s, memcpy floor "
	       "%.2e, ratio %.2f\n", c_q, c_mem, c_q / c_mem);
	printf("bench-lib: convert packet -> f32 (dequantize):       %.2e elem/s, ratio %.2f\n",
	       c_dq, c_dq / c_mem);
	printf("bench-lib: convert i32 -> packet (copy):             %.2e elem/s, ratio %.2f\n",
	       c_i, c_i / c_mem);
	fflush(stdout);

	for (int r = 0; r < runs; r++) {
		s_raw = best(s_raw, raw_send(p0 + 10 + 4 * r, 4096));
		lib_paths(p0 + 30 + 4 * r, 4096, &ps);
		s_lib = best(s_lib, ps.send);
		r_lib = best(r_lib, ps.recv);
		r_raw = best(r_raw, ps.raw_recv);
	}
	printf("bench-lib: send raw sendmmsg (floor):   %.0f pkt/s\n", s_raw);
	printf("bench-lib: send libesa (build+send):    %.0f pkt/s, %.2e elem/s, ratio %.2f\n",
	       s_lib, s_lib * NV, s_lib / s_raw);
	printf("bench-lib: recv raw recvmmsg (floor):   %.0f pkt/s\n", r_raw);
	printf("bench-lib: recv libesa (recv+apply):    %.0f pkt/s, %.2e elem/s, ratio %.2f\n",
	       r_lib, r_lib * NV, r_lib / r_raw);
	fflush(stdout);

	echo_start(&e, p0 + 50);
	for (int r = 0; r < runs; r++) {
		l_raw = best(l_raw, raw_loop(&e, p0 + 60 + 4 * r, npkts, window));
		l_f = best(l_f, lib_loop(&e, p0 + 80 + 4 * r, npkts, window, ESA_FLOAT32));
		l_i = best(l_i, lib_loop(&e, p0 + 100 + 4 * r, npkts, window, ESA_INT32));
	}
	echo_stop(&e);
	printf("bench-lib: loop raw window %d (floor):  %.0f pkt/s\n", window, l_raw);
	printf("bench-lib: loop libesa f32 allreduce:   %.0f pkt/s, %.2e elem/s, ratio %.2f\n",
	       l_f, l_f * NV, l_f / l_raw);
	printf("bench-lib: loop libesa i32 allreduce:   %.0f pkt/s, %.2e elem/s, ratio %.2f\n",
	       l_i, l_i * NV, l_i / l_raw);
	free(x);
	free(y);
	free(q);
	return 0;
}
