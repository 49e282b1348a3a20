// SPDX-License-Identifier: GPL-2.0
/*
 * esa-ps - the parameter server of ESA jobs: one daemon for many jobs.
 *
 *   esa-ps [ OPTIONS ] [ job ID ps IP:PORT workers IP:PORT... ]...
 *
 * Jobs are given with the words of `esactl job add`, read by the one job
 * parser (user/common/jobdesc.c: max-prio, lease, region, upstream and
 * places are accepted and ignored, they are the switch's), on the command
 * line or in a file (-c), or learnt from esa-agent (--agent, ps_agent.c).  The PS binds every distinct PS address of its
 * jobs, finishes what the switch hands it (docs/protocol.md, "The PS") and
 * counts everything it drops.  It takes the switch's packets only from the
 * switch's address and port, and a worker's RESULT only when it answers a
 * FETCH sent to that worker, from its registered address and port.  SIGUSR1
 * prints the counters; SIGINT/SIGTERM print them and exit; SIGHUP reads the
 * jobs again (reload()).  Under systemd it says when it is ready
 * (sd_notify.h); --metrics serves its counters to Prometheus (httpd.h,
 * ps_metrics.c).  docs/ps.md, esa-ps(8).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "ps.h"
#include "ps_agent.h"
#include "words.h"
#include "delayline.h"
#include "xsk.h"
#include "esa_version.h"
#include "httpd.h"
#include "prom.h"
#include "sd_notify.h"

#define BATCH		64
#define MAX_SOCKS	64
#define BUFSZ		(ESA_HDR_LEN + 4 * ESA_MAX_VALUES + 64)	/* longer: not ours */

struct sock {
	int	fd;
	struct sockaddr_in addr;
	/* outgoing batch */
	struct mmsghdr msg[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_in to[BATCH];
	uint8_t	buf[BATCH][BUFSZ];
	int	n;
};

static struct sock socks[MAX_SOCKS];
static int nsocks;
static volatile sig_atomic_t want_stats, want_exit, want_reload;
static const char *prog = "esa-ps";
/* While reload() parses, die() returns there instead of exiting. */
static jmp_buf *soft_die;
static char soft_err[320];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (soft_die) {
		vsnprintf(soft_err, sizeof(soft_err), fmt, ap);
		va_end(ap);
		longjmp(*soft_die, 1);
	}
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: esa-ps [ OPTIONS ] [ job ID ps IP:PORT workers IP:PORT... ]...\n"
		"  -c, --config FILE      jobs and options from FILE (the same words,\n"
		"                         options without their dashes: \"switch IP\")\n"
		"  -s, --switch IP[:PORT] the switch's service address (port 7680), required:\n"
		"                         its packets are taken from it alone, policy atp's\n"
		"                         ACKs go to it; repeat it for two levels (every\n"
		"                         leaf and the spine; ACKs go to the one holding)\n"
		"      --values N         values per packet: the switch's (256)\n"
		"      --cache N          results kept per job (4096)\n"
		"      --pending N        unfinished chunks kept per job (1024): at least\n"
		"                         twice the largest window\n"
		"  -w, --window N         the largest window of the jobs' workers (default\n"
		"                         512, libesa's largest)\n"
		"      --io udp|xdp|auto  the transport (udp): xdp is AF_XDP (CAP_NET_ADMIN,\n"
		"                         CAP_BPF), auto is xdp if it can open, else udp\n"
		"      --ifname DEV       AF_XDP's interface (the route to --switch)\n"
		"      --queue N          AF_XDP's queue of it (0)\n"
		"      --sums switch|direct  a sum every worker needs: one SUM to the\n"
		"                         switch, which sends it to them (switch, the\n"
		"                         default, with one switch), or one RESULT to\n"
		"                         each worker from here (direct)\n"
		"      --link-delay-us N  testbeds: every datagram in and out waits N us\n"
		"                         (an emulated wire's propagation; UDP only)\n"
		"      --metrics IP:PORT  serve the counters to Prometheus: GET /metrics\n"
		"      --agent IP[:PORT]  learn jobs from esa-agent (port 7681), for the\n"
		"                         addresses of --ps; jobs it ends go\n"
		"      --key-file FILE    the key shared with esa-agent\n"
		"      --ps IP:PORT       a PS address to serve (jobs from the agent)\n"
		"  -i, --stats-interval S print the counters every S seconds\n"
		"  -j, --json             counters as JSON\n"
		"  -q, --quiet            no startup line\n"
		"  -v, --verbose          each job served, and what a reload changed\n"
		"  -V, --version          print the version\n"
		"Job words are esactl's: max-prio, lease, region, upstream and @DEV/MAC\n"
		"are accepted and ignored.  SIGUSR1 prints the counters; SIGINT/SIGTERM\n"
		"print them, exit; SIGHUP reads the jobs of -c FILE again (jobs kept keep\n"
		"their state).\n");
	exit(rc);
}

/* ------------------------------------------------------------------ */

static void tx(void *ctx, const struct sockaddr_in *from, const struct sockaddr_in *to,
	       const void *buf, size_t len);

static void flush_sock(struct ps *ps, struct sock *s)
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

static struct ps *the_ps;
static struct esa_xsk *xs;	/* AF_XDP, or NULL (below) */
static bool xs_tx(const struct sockaddr_in *from, const struct sockaddr_in *to,
		  const void *buf, size_t len);

/* ------------------------------------------------------------------ */
/* Emulated link delay (--link-delay-us, testbeds without netem)       */
/* ------------------------------------------------------------------ */

/*
 * Every datagram the PS receives waits that long before the PS sees it,
 * every one it sends before it goes: the propagation of a longer wire,
 * each way (libesa's link_delay_us is the workers' side).  UDP only.
 */
#define DL_CAP	2048

struct dl {
	struct esa_dline line;
	uint8_t	*buf;		/* DL_CAP copies of BUFSZ */
	uint32_t *len;
	struct sockaddr_in *a, *b;	/* rx: source; tx: from, to */
	uint32_t next;
};

static struct dl dl_rx, dl_tx;

static void dl_init(struct dl *d, uint64_t ns)
{
	d->buf = malloc((size_t)DL_CAP * BUFSZ);
	d->len = calloc(DL_CAP, sizeof(*d->len));
	d->a = calloc(DL_CAP, sizeof(*d->a));
	d->b = calloc(DL_CAP, sizeof(*d->b));
	if (!d->buf || !d->len || !d->a || !d->b || esa_dline_init(&d->line, ns, DL_CAP))
		die("out of memory");
}

/* Datagram buf goes in line d; false if the line is full. */
static bool dl_push(struct dl *d, const void *buf, size_t len, const struct sockaddr_in *a,
		    const struct sockaddr_in *b, uint64_t now)
{
	uint32_t k = d->next;

	if (len > BUFSZ || !esa_dline_push(&d->line, k, now))
		return false;
	d->next = (k + 1) % DL_CAP;
	memcpy(d->buf + (size_t)k * BUFSZ, buf, len);
	d->len[k] = len;
	d->a[k] = *a;
	if (b)
		d->b[k] = *b;
	return true;
}

static void tx_now(const struct sockaddr_in *from, const struct sockaddr_in *to,
		   const void *buf, size_t len);

static void tx(void *ctx, const struct sockaddr_in *from, const struct sockaddr_in *to,
	       const void *buf, size_t len)
{
	(void)ctx;
	if (dl_tx.buf && dl_push(&dl_tx, buf, len, from, to, now_ns()))
		return;
	tx_now(from, to, buf, len);
}

static void tx_now(const struct sockaddr_in *from, const struct sockaddr_in *to,
		   const void *buf, size_t len)
{
	struct sock *s = NULL;

	for (int i = 0; i < nsocks; i++) {
		if (socks[i].addr.sin_addr.s_addr == from->sin_addr.s_addr &&
		    socks[i].addr.sin_port == from->sin_port) {
			s = &socks[i];
			break;
		}
	}
	if (!s || len > BUFSZ)
		return;
	if (xs && xs_tx(from, to, buf, len))
		return;
	if (s->n == BATCH)
		flush_sock(the_ps, s);
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
	if (bind(fd, (const struct sockaddr *)a, sizeof(*a))) {
		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
		die("cannot bind %s:%u: %s", ip, ntohs(a->sin_port), strerror(errno));
	}
	return fd;
}

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		want_stats = 1;
	else if (sig == SIGHUP)
		want_reload = 1;
	else
		want_exit = 1;
}

/* ------------------------------------------------------------------ */
/* Configuration                                                       */
/* ------------------------------------------------------------------ */

struct words {
	char	**w;
	int	n, cap;
};

static void words_add(struct words *ws, const char *s)
{
	if (ws->n == ws->cap) {
		ws->cap = ws->cap ? 2 * ws->cap : 64;
		ws->w = realloc(ws->w, ws->cap * sizeof(*ws->w));
		if (!ws->w)
			die("out of memory");
	}
	ws->w[ws->n++] = strdup(s);
}

static void read_config(const char *path, struct words *ws)
{
	char line[4096];
	FILE *f = fopen(path, "r");

	if (!f)
		die("%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *save, *t;

		if (strchr(line, '#'))
			*strchr(line, '#') = 0;
		for (t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save))
			words_add(ws, t);
	}
	fclose(f);
}

enum { IO_UDP, IO_XDP, IO_AUTO };

struct opts {
	struct ps_opts ps;
	struct sockaddr_in agent;	/* esa-agent; port 0: none */
	char	key_file[256];
	struct sockaddr_in serve[MAX_SOCKS];	/* --ps */
	int	nserve;
	int	interval;
	bool	json, quiet, verbose;
	const char *metrics;	/* --metrics IP:PORT, or NULL */
	int	io;		/* IO_*: the transport */
	int	queue;		/* AF_XDP: the interface's queue */
	int	delay_us;	/* emulated one-way link delay (0: none) */
	char	ifname[16];	/* AF_XDP: "" = the route to the first switch */
};

static void set_io(struct opts *o, const char *s)
{
	static const char *const names[] = { "udp", "xdp", "auto" };

	for (int i = 0; s && i < 3; i++) {
		if (!strcmp(s, names[i])) {
			o->io = i;
			return;
		}
	}
	die("io \"%s\": not udp, xdp or auto", s ? s : "");
}

static void set_ifname(struct opts *o, const char *s)
{
	if (!s || !*s || strlen(s) >= sizeof(o->ifname) || strpbrk(s, "/: \t"))
		die("ifname \"%s\": not an interface name (1..%d characters, no '/', ':' or "
		    "blanks)", s ? s : "", (int)sizeof(o->ifname) - 1);
	strcpy(o->ifname, s);
}

static int to_int(const char *what, const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s ? s : "", &end, 0);
	if (!s || !*s || *end || errno || v < lo || v > hi)
		die("%s \"%s\" is not a number in %ld..%ld", what, s ? s : "", lo, hi);
	return v;
}

/* A switch whose packets we take (repeatable: two levels' leaves and spine). */
static void set_switch(struct opts *o, const char *s)
{
	int rc;

	if (!s)
		die("switch needs IP[:PORT]");
	if (o->ps.nsw == PS_MAX_SWITCHES)
		die("switch %s: at most %d switches", s, PS_MAX_SWITCHES);
	rc = esa_parse_sin(s, ESA_ADDR_ANY, ESA_DEFAULT_PORT, &o->ps.sw[o->ps.nsw]);
	if (rc == -ERANGE)
		die("switch port \"%s\" is not a number in 1..65535", strchr(s, ':') + 1);
	if (rc)
		die("switch \"%s\" is not IP[:PORT]", s);
	if (!o->ps.sw[o->ps.nsw].sin_addr.s_addr)
		die("switch \"%s\": 0.0.0.0 is no address packets come from; give the switch's "
		    "service address (esactl prog load addr)", s);
	o->ps.nsw++;
}

/* Where esa-agent is, its key, and the PS addresses it gives jobs for. */
static void set_agent(struct opts *o, int which, const char *s)
{
	if (!s)
		die("%s needs a value", which == 'G' ? "agent" : which == 'K' ? "key-file" : "ps");
	if (which == 'G' && esa_parse_sin(s, 0, ESA_AGENT_PORT, &o->agent))
		die("agent \"%s\" is not IP[:PORT]", s);
	if (which == 'K' && strlen(s) >= sizeof(o->key_file))
		die("key-file: path too long");
	if (which == 'K')
		strcpy(o->key_file, s);
	if (which == 'B' && o->nserve == MAX_SOCKS)
		die("at most %d PS addresses", MAX_SOCKS);
	if (which == 'B' && esa_parse_sin(s, ESA_ADDR_NEED_PORT, 0, &o->serve[o->nserve++]))
		die("ps \"%s\" is not IP:PORT", s);
}

/* How the sums every worker needs leave: one SUM through the switch, or direct. */
static void set_sums(struct opts *o, const char *v)
{
	if (!v || (strcmp(v, "switch") && strcmp(v, "direct")))
		die("sums \"%s\": switch or direct", v ? v : "");
	o->ps.sums_via_switch = !strcmp(v, "switch");
}

/* An option word of the config file (without dashes). */
static int file_option(struct opts *o, char **w, int n)
{
	const char *k = w[0], *v = n > 1 ? w[1] : NULL;

	if (!strcmp(k, "switch"))
		set_switch(o, v);
	else if (!strcmp(k, "values"))
		o->ps.nvals = to_int("values", v, ESA_VALUES_ALIGN, ESA_MAX_VALUES);
	else if (!strcmp(k, "cache"))
		o->ps.cache = to_int("cache", v, 1, 1 << 24);
	else if (!strcmp(k, "pending"))
		o->ps.pending = to_int("pending", v, 1, 1 << 24);
	else if (!strcmp(k, "window"))
		o->ps.window = to_int("window", v, 1, 1 << 24);
	else if (!strcmp(k, "io"))
		set_io(o, v);
	else if (!strcmp(k, "ifname"))
		set_ifname(o, v);
	else if (!strcmp(k, "queue"))
		o->queue = to_int("queue", v, 0, 1023);
	else if (!strcmp(k, "sums"))
		set_sums(o, v);
	else if (!strcmp(k, "agent"))
		set_agent(o, 'G', v);
	else if (!strcmp(k, "key-file"))
		set_agent(o, 'K', v);
	else if (!strcmp(k, "ps"))
		set_agent(o, 'B', v);
	else if (!strcmp(k, "link-delay-us"))
		o->delay_us = to_int("link-delay-us", v, 0, 1000000);
	else if (!strcmp(k, "metrics") && v)
		o->metrics = strdup(v);		/* the file's words go */
	else
		die("unknown word \"%s\" (jobs start with \"job\")", k);
	return 2;
}

/* ------------------------------------------------------------------ */
/* AF_XDP (--io xdp|auto): libesa's xsk.c                              */
/* ------------------------------------------------------------------ */

#define XS_TX	1024	/* send frames, used in turn */
#define XS_WAITS	10	/* a full ring waited for (1 ms each) per flush */

static uint32_t xs_next, xs_pend[BATCH];
static int xs_npend;

/*
 * Post what was built: as much as the ring takes, waiting for room a few
 * times (1 ms each) and not once asked to exit; what is left is dropped
 * and counted (the workers' resends recover it).  A device that is down
 * keeps what was posted (it goes when it is up) and takes no more.
 */
static void xs_flush(struct ps *ps)
{
	int done = 0, waits = 0;

	while (done < xs_npend && !want_exit) {
		int k = esa_xsk_send(xs, xs_pend + done, xs_npend - done);

		if (k < 0)
			break;
		done += k;
		if (!k) {
			struct pollfd p = { .fd = esa_xsk_fd(xs), .events = POLLOUT };

			if (++waits > XS_WAITS)
				break;
			poll(&p, 1, 1);
		}
	}
	for (; done < xs_npend; done++)
		ps_note(ps, PS_C_TX_ERROR);
	xs_npend = 0;
}

/* Build the packet in a send frame; false: send it by UDP (counted): its
 * next hop is not resolved yet (xsk_neigh.c resolves it meanwhile, without
 * waiting), or the frame is still posted. */
static bool xs_tx(const struct sockaddr_in *from, const struct sockaddr_in *to,
		  const void *buf, size_t len)
{
	uint32_t f = xs_next++ % XS_TX;
	char err[160];

	if (xs_npend == BATCH)
		xs_flush(the_ps);
	/* a frame the device has not sent yet must not change */
	if (esa_xsk_tx_busy(xs, f) || esa_xsk_tx_prep(xs, f, from, to, len, err, sizeof(err))) {
		ps_note(the_ps, PS_C_TX_UDP);
		return false;
	}
	memcpy(esa_xsk_tx_payload(xs, f), buf, len);
	xs_pend[xs_npend++] = f;
	return true;
}

/* io xdp or auto: the AF_XDP socket for every PS address, or why not. */
static void xs_open(const struct opts *o, char *why, size_t len)
{
	struct sockaddr_in local[MAX_SOCKS];
	struct esa_xsk_cfg c = {
		.ifname = o->ifname, .route_to = o->ps.sw[0].sin_addr, .queue = o->queue,
		.local = local, .nlocal = nsocks, .tx_frames = XS_TX, .rx_hold = 0,
		.pkt_max = ESA_HDR_LEN + 4 * o->ps.nvals,
	};
	int rc;

	for (int k = 0; k < nsocks; k++)
		local[k] = socks[k].addr;
	rc = esa_xsk_open(&xs, &c, why, len);
	if (rc && o->io == IO_XDP)
		die("io xdp: %s", why);
	if (!rc)
		snprintf(why, len, "%s", esa_xsk_desc(xs));
}

/* What AF_XDP received: to the PS, frames back at once. */
static void xs_rx(struct ps *ps)
{
	struct esa_xsk_rx rx[BATCH];
	int n;

	do {
		uint64_t t = now_ns();

		n = esa_xsk_recv(xs, rx, BATCH);
		for (int i = 0; i < n; i++) {
			ps_rx(ps, rx[i].pkt, rx[i].len, &rx[i].src, t);
			esa_xsk_release(xs, rx[i].buf);
		}
		esa_xsk_flush(xs);
		xs_flush(ps);
		for (int s = 0; s < nsocks; s++)
			if (socks[s].n)
				flush_sock(ps, &socks[s]);
	} while (n == BATCH);
}

/* ------------------------------------------------------------------ */
/* Serving                                                             */
/* ------------------------------------------------------------------ */

static struct mmsghdr rmsg[BATCH];
static struct iovec riov[BATCH];
static struct sockaddr_in rsrc[BATCH];

static void rx_init(void)
{
	uint8_t *rbuf = malloc(BATCH * BUFSZ);

	if (!rbuf)
		die("out of memory");
	for (int i = 0; i < BATCH; i++) {
		riov[i].iov_base = rbuf + i * BUFSZ;
		riov[i].iov_len = BUFSZ;
		rmsg[i].msg_hdr.msg_iov = &riov[i];
		rmsg[i].msg_hdr.msg_iovlen = 1;
		rmsg[i].msg_hdr.msg_name = &rsrc[i];
	}
}

/* What socket k received (a batch at a time, 16 at most). */
static void sock_rx(struct ps *ps, int k)
{
	for (int round = 0; round < 16; round++) {
		uint64_t t = now_ns();
		int m;

		for (int i = 0; i < BATCH; i++)
			rmsg[i].msg_hdr.msg_namelen = sizeof(rsrc[i]);
		m = recvmmsg(socks[k].fd, rmsg, BATCH, MSG_DONTWAIT, NULL);
		if (m <= 0)
			break;
		for (int i = 0; i < m; i++)
			if (!dl_rx.buf || !dl_push(&dl_rx, riov[i].iov_base, rmsg[i].msg_len,
						   &rsrc[i], NULL, t))
				ps_rx(ps, riov[i].iov_base, rmsg[i].msg_len, &rsrc[i], t);
		if (xs)
			xs_flush(ps);
		for (int s = 0; s < nsocks; s++)
			if (socks[s].n)
				flush_sock(ps, &socks[s]);
		if (m < BATCH)
			break;
	}
}

/* What has waited its time in the delay lines: to the PS, to the wire. */
static void dl_flush(struct ps *ps)
{
	uint64_t t = now_ns();
	uint32_t k;

	while (esa_dline_pop(&dl_rx.line, t, &k))
		ps_rx(ps, dl_rx.buf + (size_t)k * BUFSZ, dl_rx.len[k], &dl_rx.a[k], t);
	while (esa_dline_pop(&dl_tx.line, t, &k))
		tx_now(&dl_tx.a[k], &dl_tx.b[k], dl_tx.buf + (size_t)k * BUFSZ, dl_tx.len[k]);
	for (int s = 0; s < nsocks; s++)
		if (socks[s].n)
			flush_sock(ps, &socks[s]);
}

/* How long poll may sleep: 200 ms, or until the next delayed datagram. */
static int poll_ms(void)
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

/*
 * -v was --values before it was --verbose: "-v 256" (or -v256) is refused
 * with what to write instead, rather than taken for a job word.
 */
static void old_values_option(int argc, char **argv)
{
	for (int i = 1; i < argc && argv[i][0] == '-' && argv[i][1] != '-'; i++) {
		/* a cluster of short options (-jv 256), up to one taking a value */
		for (const char *p = argv[i] + 1; *p; p++) {
			const char *v = p[1] ? p + 1 : i + 1 < argc ? argv[i + 1] : "";

			if (*p == 'v' && isdigit((unsigned char)*v))
				die("-v %s: -v is --verbose now; values per packet are "
				    "--values %s", v, v);
			if (strchr("cswi", *p)) {
				i += !p[1];	/* its value is the next word */
				break;
			}
		}
	}
}

/* The options and jobs of the file and the command line. */
static int parse_args(int argc, char **argv, struct opts *o, struct ps_job_cfg *jobs)
{
	static const struct option lo[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "switch", required_argument, NULL, 's' },
		{ "values", required_argument, NULL, 'A' },
		{ "metrics", required_argument, NULL, 'M' },
		{ "cache", required_argument, NULL, 'C' },
		{ "pending", required_argument, NULL, 'P' },
		{ "window", required_argument, NULL, 'w' },
		{ "stats-interval", required_argument, NULL, 'i' },
		{ "io", required_argument, NULL, 'I' },
		{ "ifname", required_argument, NULL, 'F' },
		{ "queue", required_argument, NULL, 'Q' },
		{ "sums", required_argument, NULL, 'S' },
		{ "link-delay-us", required_argument, NULL, 'D' },
		{ "agent", required_argument, NULL, 'G' },
		{ "key-file", required_argument, NULL, 'K' },
		{ "ps", required_argument, NULL, 'B' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct words file = { 0 }, cmd = { 0 };
	int njobs = 0, opt;
	char err[256];

	ps_opts_default(&o->ps);
	old_values_option(argc, argv);
	optind = 0;	/* again from the start: reload() parses anew */
	while ((opt = getopt_long(argc, argv, "+c:s:w:i:jqvVh", lo, NULL)) != -1) {
		switch (opt) {
		case 'c': read_config(optarg, &file); break;
		case 's': set_switch(o, optarg); break;
		case 'A': o->ps.nvals = to_int("values", optarg, ESA_VALUES_ALIGN, ESA_MAX_VALUES); break;
		case 'M': o->metrics = optarg; break;
		case 'C': o->ps.cache = to_int("cache", optarg, 1, 1 << 24); break;
		case 'P': o->ps.pending = to_int("pending", optarg, 1, 1 << 24); break;
		case 'w': o->ps.window = to_int("window", optarg, 1, 1 << 24); break;
		case 'i': o->interval = to_int("stats-interval", optarg, 1, 86400); break;
		case 'I': set_io(o, optarg); break;
		case 'F': set_ifname(o, optarg); break;
		case 'Q': o->queue = to_int("queue", optarg, 0, 1023); break;
		case 'S': set_sums(o, optarg); break;
		case 'D': o->delay_us = to_int("link-delay-us", optarg, 0, 1000000); break;
		case 'G': case 'K': case 'B': set_agent(o, opt, optarg); break;
		case 'j': o->json = true; break;
		case 'q': o->quiet = true; break;
		case 'v': o->verbose = true; break;
		case 'V': esa_print_version(prog); exit(0);
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (o->ps.nvals % ESA_VALUES_ALIGN)
		die("values must be a multiple of %d", ESA_VALUES_ALIGN);
	for (int i = optind; i < argc; i++)
		words_add(&cmd, argv[i]);
	/* The file's options, then every job of the file and the command line. */
	for (struct words *ws = &file; ws; ws = ws == &file ? &cmd : NULL) {
		for (int i = 0; i < ws->n;) {
			int used;

			if (strcmp(ws->w[i], "job")) {
				if (ws == &cmd)
					die("unknown argument \"%s\" (jobs start with \"job\")",
					    ws->w[i]);
				i += file_option(o, ws->w + i, ws->n - i);
				continue;
			}
			if (njobs == 256)
				die("at most 256 jobs");
			used = ps_parse_job(ws->n - i, ws->w + i, &jobs[njobs], err, sizeof(err));
			if (used < 0)
				die("%s", err);
			njobs++;
			i += used;
		}
	}
	for (struct words *ws = &file; ws; ws = ws == &file ? &cmd : NULL) {
		for (int i = 0; i < ws->n; i++)
			free(ws->w[i]);
		free(ws->w);
	}
	if (o->agent.sin_port && (!o->key_file[0] || !o->nserve))
		die("agent needs key-file FILE and ps IP:PORT (the address it gives jobs for)");
	if (!njobs && !o->agent.sin_port)
		die("no jobs (try esa-ps --help)");
	if (ps_check_opts(&o->ps, err, sizeof(err)))
		die("%s", err);
	return njobs;
}

/* esa-ps's own lines beside the PS's counters (ps_metrics.c). */
static uint64_t reloads, reload_failures;
static struct esa_httpd httpd = { .lfd = -1 };

static int write_metrics(FILE *f, void *arg)
{
	char lab[64] = "", wire[8];

	ps_print_prom(arg, f);
	prom_head(f, "esa_ps_reloads_total", "counter", "Reloads (SIGHUP), by result");
	prom_u64(f, "esa_ps_reloads_total", "result=\"ok\"", reloads);
	prom_u64(f, "esa_ps_reloads_total", "result=\"failed\"", reload_failures);
	prom_head(f, "esa_ps_scrapes_total", "counter", "Answers to GET /metrics");
	prom_u64(f, "esa_ps_scrapes_total", NULL, httpd.served + 1);	/* this one too */
	prom_head(f, "esa_ps_scrape_errors_total", "counter",
		  "Metrics connections closed without an answer: too many, bad or slow "
		  "requests, other paths");
	prom_u64(f, "esa_ps_scrape_errors_total", NULL, httpd.errors);
	prom_head(f, "esa_ps_build_info", "gauge", "esa-ps's release and wire protocol");
	prom_label(lab, sizeof(lab), "version", ESA_RELEASE);
	snprintf(wire, sizeof(wire), "%d", ESA_VERSION);
	prom_label(lab, sizeof(lab), "wire", wire);
	prom_u64(f, "esa_ps_build_info", lab, 1);
	return ferror(f) ? -EIO : 0;
}

static void reload(struct ps *ps, const struct opts *o, int argc, char **argv);

static void serve(struct ps *ps, const struct opts *o, int argc, char **argv,
		  struct ps_agent *pa)
{
	struct pollfd pfd[MAX_SOCKS + 3 + ESA_HTTPD_CONNS];
	uint64_t next_stats = 0;

	if (o->interval)
		next_stats = now_ns() + o->interval * 1000000000ULL;
	while (!want_exit) {
		/* rebuilt each turn: a reload changes the sockets, connections come and go */
		int n = 0, xi, hi, rc;

		for (int k = 0; k < nsocks; k++)
			pfd[n++] = (struct pollfd){ .fd = socks[k].fd, .events = POLLIN };
		xi = n;
		if (xs)
			pfd[n++] = (struct pollfd){ .fd = esa_xsk_fd(xs), .events = POLLIN };
		if (pa)
			pfd[n++] = (struct pollfd){ .fd = ps_agent_fd(pa), .events = POLLIN };
		hi = n;
		n += esa_httpd_pollfds(&httpd, pfd + n);
		rc = poll(pfd, n, poll_ms());
		if (rc < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		for (int k = 0; rc > 0 && k < nsocks; k++)
			if (pfd[k].revents & POLLIN)
				sock_rx(ps, k);
		if (rc > 0 && xs && (pfd[xi].revents & POLLIN))
			xs_rx(ps);
		if (dl_rx.buf)
			dl_flush(ps);
		if (xs)
			esa_xsk_tx_kick(xs);	/* what the device pushed back */
		if (pa)
			ps_agent_step(pa, ps, now_ns());
		esa_httpd_step(&httpd, pfd + hi, n - hi, now_ns(), write_metrics, ps);
		if (want_reload) {
			want_reload = 0;
			reload(ps, o, argc, argv);
		}
		if (want_stats) {
			want_stats = 0;
			ps_print_stats(ps, stdout, o->json);
		}
		if (o->interval && now_ns() >= next_stats) {
			next_stats += o->interval * 1000000000ULL;
			ps_print_stats(ps, stdout, o->json);
		}
	}
}

/* ------------------------------------------------------------------ */
/* Jobs: at the start, and again on SIGHUP                             */
/* ------------------------------------------------------------------ */

static int sock_of(const struct sockaddr_in *a)
{
	for (int k = 0; k < nsocks; k++)
		if (socks[k].addr.sin_addr.s_addr == a->sin_addr.s_addr &&
		    socks[k].addr.sin_port == a->sin_port)
			return k;
	return -1;
}

/* The socket of a job's PS address, opened when no job had it yet. */
static void sock_for(const struct sockaddr_in *a)
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

/* Close the sockets of PS addresses no job has any more (not under
 * AF_XDP, whose program was given them all). */
static void socks_unused(struct ps *ps, const struct opts *o)
{
	for (int k = nsocks - 1; k >= 0 && !xs; k--) {
		bool used = false;

		for (int i = 0; i < o->nserve && !used; i++)
			used = sock_of(&o->serve[i]) == k;	/* the agent's jobs' */
		for (int i = 0; i < ps_njobs(ps) && !used; i++)
			used = sock_of(&ps_job(ps, i)->ps) == k;
		if (used)
			continue;
		if (socks[k].n)
			flush_sock(ps, &socks[k]);
		close(socks[k].fd);
		memmove(socks + k, socks + k + 1, (nsocks - k - 1) * sizeof(*socks));
		nsocks--;
	}
}

static void say_job(const char *what, const struct ps_job_cfg *c)
{
	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &c->ps.sin_addr, ip, sizeof(ip));
	fprintf(stderr, "%s: job %u %s: ps %s:%u, %d worker%s\n", prog, c->id, what, ip,
		ntohs(c->ps.sin_port), c->nworkers, c->nworkers > 1 ? "s" : "");
}

/* The reload's new jobs and options, checked before anything changes. */
static void reload_check(const struct opts *o, const struct opts *no,
			 const struct ps_job_cfg *jobs, int n)
{
	if (memcmp(&o->ps, &no->ps, sizeof(o->ps)) || o->io != no->io ||
	    o->queue != no->queue || strcmp(o->ifname, no->ifname) ||
	    o->delay_us != no->delay_us ||
	    strcmp(o->metrics ? o->metrics : "", no->metrics ? no->metrics : ""))
		die("the options changed (switch, values, cache, pending, window, io, "
		    "ifname, queue, sums, link-delay-us, metrics): they take a restart");
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < i; k++)
			if (jobs[k].id == jobs[i].id)
				die("job %u given twice", jobs[i].id);
		if (xs && sock_of(&jobs[i].ps) < 0)
			die("job %u: a new PS address under AF_XDP takes a restart", jobs[i].id);
	}
	for (int i = 0; i < n; i++)
		sock_for(&jobs[i].ps);
}

/*
 * SIGHUP: the jobs of -c FILE and of the command line, read again.  A job
 * whose words are the same keeps everything, its results, its unfinished
 * chunks and its counters; one whose words changed starts anew; one no
 * longer there is forgotten; a new one is served.  Options stay as they
 * are (a change of theirs takes a restart), and a file that does not
 * parse changes nothing.  systemd hears RELOADING=1, then READY=1.
 */
/* The jobs of the file and the command line again: their number, or -1
 * (said, counted) when they do not parse or take a restart. */
static int reload_read(struct ps *ps, const struct opts *o, int argc, char **argv,
		       struct ps_job_cfg *jobs)
{
	struct opts no = { 0 };
	jmp_buf jb;
	int n;

	if (setjmp(jb)) {
		soft_die = NULL;
		reload_failures++;
		fprintf(stderr, "%s: reload: %s; nothing changed\n", prog, soft_err);
		esa_sd_notify("READY=1\nSTATUS=reload failed: %s; serving %d jobs", soft_err,
			      ps_njobs(ps));
		return -1;
	}
	soft_die = &jb;
	n = parse_args(argc, argv, &no, jobs);
	reload_check(o, &no, jobs, n);
	soft_die = NULL;
	return n;
}

/* The jobs of the file and the command line (not the agent's): a bit per id. */
static uint8_t given[65536 / 8];

static bool job_given(uint16_t id)
{
	return given[id / 8] & (1 << id % 8);
}

static void set_given(const struct ps_job_cfg *jobs, int n)
{
	memset(given, 0, sizeof(given));
	for (int i = 0; i < n; i++)
		given[jobs[i].id / 8] |= 1 << jobs[i].id % 8;
}

static void reload(struct ps *ps, const struct opts *o, int argc, char **argv)
{
	static struct ps_job_cfg jobs[256];
	int n, kept = 0, added = 0, dropped = 0;
	char err[256];

	esa_sd_reloading();
	n = reload_read(ps, o, argc, argv, jobs);
	if (n < 0)
		return;
	for (int i = ps_njobs(ps) - 1; i >= 0; i--) {
		const struct ps_job_cfg *c = ps_job(ps, i);
		int k = 0;

		if (!job_given(c->id))
			continue;	/* esa-agent's: the agent says when it goes */
		while (k < n && jobs[k].id != c->id)
			k++;
		if (k < n && !memcmp(c, &jobs[k], sizeof(*c))) {
			kept++;
			continue;
		}
		if (o->verbose)
			say_job(k < n ? "changed: starts anew" : "gone", c);
		ps_del_job(ps, c->id);
		dropped++;
	}
	for (int k = 0; k < n; k++) {
		bool have = false;

		for (int i = 0; i < ps_njobs(ps) && !have; i++)
			have = ps_job(ps, i)->id == jobs[k].id;
		if (have)
			continue;
		if (ps_add_job(ps, &jobs[k], err, sizeof(err))) {
			fprintf(stderr, "%s: reload: %s\n", prog, err);
			continue;
		}
		if (o->verbose)
			say_job("served", &jobs[k]);
		added++;
	}
	set_given(jobs, n);
	socks_unused(ps, o);
	reloads++;
	fprintf(stderr, "%s: reload: %d job%s kept, %d added, %d dropped\n", prog, kept,
		kept == 1 ? "" : "s", added, dropped);
	esa_sd_notify("READY=1\nSTATUS=serving %d jobs on %d addresses", ps_njobs(ps), nsocks);
}

int main(int argc, char **argv)
{
	struct ps_agent *pa = NULL;
	struct ps_job_cfg jobs[256];
	struct sigaction sa = { 0 };
	struct opts o = { 0 };
	char err[256], io[200] = "udp";
	struct ps *ps;
	int njobs = parse_args(argc, argv, &o, jobs);

	ps = ps_new(&o.ps, tx, NULL);
	if (!ps)
		die("out of memory");
	the_ps = ps;
	set_given(jobs, njobs);
	for (int i = 0; i < njobs; i++) {
		if (ps_add_job(ps, &jobs[i], err, sizeof(err)))
			die("%s", err);
		sock_for(&jobs[i].ps);
		if (o.verbose)
			say_job("served", &jobs[i]);
	}
	for (int i = 0; i < o.nserve; i++)
		sock_for(&o.serve[i]);
	if (o.agent.sin_port) {
		pa = ps_agent_new(&o.agent, o.key_file, o.serve, o.nserve, err, sizeof(err));
		if (!pa)
			die("%s", err);
	}
	if (o.delay_us && o.io != IO_UDP)
		die("link-delay-us needs --io udp (AF_XDP's frames are not held)");
	if (o.delay_us) {
		dl_init(&dl_rx, o.delay_us * 1000ULL);
		dl_init(&dl_tx, o.delay_us * 1000ULL);
	}
	if (o.io != IO_UDP) {
		char why[160];

		xs_open(&o, why, sizeof(why));
		snprintf(io, sizeof(io), xs ? "%s" : "udp (auto: AF_XDP cannot open: %s)", why);
	}
	if (o.metrics && esa_httpd_open(&httpd, o.metrics, err, sizeof(err)))
		die("%s", err);
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	rx_init();
	if (!o.quiet)
		fprintf(stderr, "%s: serving %d job%s on %d address%s, %d values, cache %u, "
			"pending %u per job, io %s%s%.0d%s%s%s%s\n", prog, njobs,
			njobs == 1 ? "" : "s", nsocks, nsocks > 1 ? "es" : "", o.ps.nvals,
			o.ps.cache, o.ps.pending, io, o.delay_us ? ", link delay " : "",
			o.delay_us, o.delay_us ? " us" : "", o.metrics ? ", metrics on " : "",
			o.metrics ? o.metrics : "", pa ? ", jobs from esa-agent" : "");
	esa_sd_notify("READY=1\nSTATUS=serving %d jobs on %d addresses, io %s", njobs, nsocks, io);
	serve(ps, &o, argc, argv, pa);
	esa_sd_notify("STOPPING=1");
	ps_print_stats(ps, stdout, o.json);
	esa_httpd_close(&httpd);
	ps_agent_free(pa);
	esa_xsk_close(xs);
	ps_free(ps);
	return 0;
}
