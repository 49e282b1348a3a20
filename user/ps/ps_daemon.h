/* SPDX-License-Identifier: GPL-2.0 */
/*
 * esa-ps, the daemon around the PS (ps.h): what its files share.  Top down,
 * each calling only those below it:
 *
 *   esa_ps.c     main(), the loop (serve()), /metrics
 *   ps_reload.c  the jobs of the file and the command line, again on SIGHUP
 *                (given[], reloads, reload_failures)
 *   ps_io.c      the transport: tx(), what the sockets receive, the delay
 *                lines of --link-delay-us and poll's timeout (the_ps, the
 *                receive buffers, dl_rx, dl_tx)
 *   ps_xdp.c     AF_XDP through libesa's xsk.c (xs, its send frames)
 *   ps_sock.c    the UDP sockets of the PS addresses and their outgoing
 *                batches (socks[], nsocks)
 *   ps_delay.c   a delay line of datagrams (struct dl)
 *   ps_opts.c    the options, the configuration file, --help, and die()
 *                (soft_die: a reload's parse returns instead of exiting)
 */
#ifndef ESA_PS_DAEMON_H
#define ESA_PS_DAEMON_H

#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <sys/socket.h>

#include "ps.h"
#include "delayline.h"
#include "daemon.h"

#define BATCH		64
#define MAX_SOCKS	64
#define BUFSZ		(ESA_HDR_LEN + 4 * ESA_MAX_VALUES + 64)	/* longer: not ours */
/* A received message: up to 64 KB of datagrams GRO coalesced (UDP_GRO) */
#define GRO_BYTES	65536
#ifndef UDP_GRO
#define UDP_GRO		104
#endif
#ifndef SOL_UDP
#define SOL_UDP		17
#endif

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

struct esa_xsk;


/* ------------------------------------------------------------------ */
/* ps_opts.c                                                           */
/* ------------------------------------------------------------------ */

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

extern const char *prog;
/* While a reload parses, die() returns there instead of exiting. */
extern jmp_buf *soft_die;
extern char soft_err[320];

int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The options and jobs of the file and the command line: the jobs' number. */
int parse_args(int argc, char **argv, struct opts *o, struct ps_job_cfg *jobs);

/* ------------------------------------------------------------------ */
/* ps_delay.c: datagrams held for --link-delay-us                      */
/* ------------------------------------------------------------------ */

#define DL_CAP	2048

struct dl {
	struct esa_dline line;
	uint8_t	*buf;		/* DL_CAP copies of BUFSZ */
	uint32_t *len;
	struct sockaddr_in *a, *b;	/* rx: source; tx: from, to */
	uint32_t next;
};

void dl_init(struct dl *d, uint64_t ns);
/* Datagram buf goes in line d; false if the line is full. */
bool dl_push(struct dl *d, const void *buf, size_t len, const struct sockaddr_in *a,
	     const struct sockaddr_in *b, uint64_t now);

/* ------------------------------------------------------------------ */
/* ps_sock.c                                                           */
/* ------------------------------------------------------------------ */

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

extern struct sock socks[MAX_SOCKS];
extern int nsocks;

/* The socket bound to a, or NULL. */
struct sock *sock_by_addr(const struct sockaddr_in *a);
/* The index of the socket bound to a, or -1. */
int sock_of(const struct sockaddr_in *a);
/* The socket of a job's PS address, opened when no job had it yet. */
void sock_for(const struct sockaddr_in *a);
void flush_sock(struct ps *ps, struct sock *s);
/* Every socket's outgoing batch. */
void flush_socks(struct ps *ps);
/* buf to `to` in s's batch, sent when the batch is full. */
void sock_queue(struct ps *ps, struct sock *s, const struct sockaddr_in *to, const void *buf,
		size_t len);

/* ------------------------------------------------------------------ */
/* ps_xdp.c                                                            */
/* ------------------------------------------------------------------ */

extern struct esa_xsk *xs;	/* AF_XDP, or NULL */

/* io xdp or auto: the AF_XDP socket for every PS address, or why not. */
void xs_open(const struct opts *o, char *why, size_t len);
void xs_flush(struct ps *ps);
bool xs_tx(struct ps *ps, const struct sockaddr_in *from, const struct sockaddr_in *to,
	   const void *buf, size_t len);
void xs_rx(struct ps *ps);

/* ------------------------------------------------------------------ */
/* ps_io.c                                                             */
/* ------------------------------------------------------------------ */

/* The PS's send callback (ps_new()); io_init() says which PS it is. */
void tx(void *ctx, const struct sockaddr_in *from, const struct sockaddr_in *to,
	const void *buf, size_t len);
void io_init(struct ps *ps);
/* --link-delay-us: every datagram in and out waits ns. */
void io_delay(uint64_t ns);
void rx_init(void);
void sock_rx(struct ps *ps, int k);
/* What has waited its time in the delay lines (if any): to the PS, to the wire. */
void dl_flush(struct ps *ps);
int poll_ms(void);

/* ------------------------------------------------------------------ */
/* ps_reload.c                                                         */
/* ------------------------------------------------------------------ */

extern uint64_t reloads, reload_failures;

void say_job(const char *what, const struct ps_job_cfg *c);
/* Jobs of the file and the command line (a reload leaves the agent's alone). */
void set_given(const struct ps_job_cfg *jobs, int n);
void reload(struct ps *ps, const struct opts *o, int argc, char **argv);

#endif /* ESA_PS_DAEMON_H */
