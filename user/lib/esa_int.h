/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libesa internals, shared by the library's files, its unit tests and its
 * benchmark.  Not installed; the API is esa.h.
 */
#ifndef LIBESA_INT_H
#define LIBESA_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/esa.h>
#include "esa_prio.h"
#include "esa_cc.h"

#include "esa.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
/* The values travel in little endian and every end adds them natively. */
#error "libesa supports little-endian hosts only (as does the protocol)"
#endif

/*
 * 2.1.0: io, ifname, queue, timeout_us; 2.2.0: window_min and its
 * counters (esa_stats' rx_contention, cc_decreases, cwnd), link_delay_us,
 * the round-trip histogram (rtt_hist), esa_worker_metrics().  The major is libesa's
 * soname (libesa.so.2); the Makefile reads the version here
 * (libesa.so.2.2.0, esa.pc).
 */
#define ESA_LIB_VERSION		20200

/* The least resend timeout by default (timeout_us). */
#define ESA_TIMEOUT_US_DEFAULT	10000

_Static_assert(ESA_WINDOW_MAX == ESA_TOMB_RING, "a window is at most the tombstone ring");

/* The transport (config key `io`). */
enum esa_io {
	ESA_IO_UDP = 0,		/* UDP sockets: no privileges needed */
	ESA_IO_XDP,		/* AF_XDP (libxdp): CAP_NET_ADMIN, CAP_BPF */
	ESA_IO_AUTO,		/* AF_XDP if possible, else UDP */
};

#define ESA_IFNAMSIZ	16

struct esa_config {
	struct sockaddr_in sw, local, ps;
	bool	have_sw, have_local, have_ps;
	int	job, rank, workers;
	int	values, window;
	int	window_min;		/* AIMD's floor (esa_cc.h); 0: fixed */
	int	timeout_us, timeout_max_ms, give_up_ms;
	int	policy, prio, prio_max;		/* prio_max < 0: = prio */
	int	quantum, prio_steps;		/* las, srsf: esa_prio.h */
	int	float_block, float_headroom;	/* headroom < 0: auto */
	int	rcvbuf;
	uint32_t run;			/* sequence numbers start at esa_run_base() */
	uint64_t total_chunks;		/* srsf: the job's chunks in all; 0: per op */
	int	io;			/* enum esa_io */
	int	queue;			/* AF_XDP: the interface's queue */
	int	xdp_workers;		/* AF_XDP: workers of a process sharing a
					 * queue's UMEM (the first sizes it) */
	int	udp_gro;		/* UDP: results coalesced (UDP_GRO); -1: unless
					 * link_delay_us */
	int	link_delay_us;		/* emulated one-way link delay (delay.c) */
	int	xsk_busy_poll;		/* AF_XDP: busy polling, us; 0: off (xsk.h) */
	int	xsk_tx_budget;		/* AF_XDP copy mode: frames a kick sends;
					 * 0: the kernel's (32) */
	char	ifname[ESA_IFNAMSIZ];	/* AF_XDP: "" = the route to the switch */
	char	netns[256];
	char	err[256];
};

/* ------------------------------------------------------------------ */
/* Quantization (quant.c)                                              */
/* ------------------------------------------------------------------ */

/* A float block histogram: 256 byte-wide bins, 4 per int32. */
#define ESA_HIST_INTS	64
#define ESA_EXP_NONFINITE 255

/* Largest biased exponent of x[0..n): 0 (zeros, subnormals) .. 255 (NaN/inf). */
unsigned esa_q_maxexp(const float *x, size_t n);
/* E of a block whose largest biased exponent is e: 2^E > |every value|. */
static inline int esa_q_E(unsigned e)
{
	return (int)(e < 1 ? 1 : e) - 126;
}
/* The scale exponent s of a block: q = round(x * 2^s), |q| <= 2^(30-h). */
static inline int esa_q_shift(int E, int headroom)
{
	return 30 - headroom - E;
}
/* Two float factors whose product is 2^s, applied in this order. */
void esa_q_factors(int s, float *f1, float *f2);
/* q[i] = round(x[i] * 2^s) for i < n, 0 up to nvals. */
void esa_q_f32(const float *x, size_t n, int32_t *q, size_t nvals, int s);
/* out[i] = q[i] * 2^-s. */
void esa_dq_f32(const int32_t *q, size_t n, float *out, int s);
/* int32 values into a packet (0-padded), and back. */
void esa_q_i32(const int32_t *x, size_t n, int32_t *q, size_t nvals);
void esa_dq_i32(const int32_t *q, size_t n, int32_t *out);
/* Redo of an overflowed int32 chunk: v = hi * 2^16 + lo, lo in [0, 2^16). */
void esa_q_split(const int32_t *x, size_t n, int32_t *hi, int32_t *lo, size_t nvals);
/* out[i] = hi[i] * 2^16 + lo[i] if it fits int32, else clamped; returns the
 * number of clamped elements. */
size_t esa_dq_join(const int32_t *hi, const int32_t *lo, size_t n, int32_t *out);
/* ceil(log2(n)) for n >= 1. */
int esa_ilog2_ceil(unsigned n);
/* out[0..n) = NaN: a float chunk no sum came for. */
void esa_fill_nan(float *out, size_t n);

/* ------------------------------------------------------------------ */
/* The engine                                                          */
/* ------------------------------------------------------------------ */

/*
 * The engine's files, each calling only those below it (the transport
 * calls back only through w->rx):
 *
 *   worker.c   opening, closing, runs, the counters
 *   request.c  the request API and the pump (esa_pump())
 *   diag.c     silence: probing the PS, giving up, naming who is silent
 *   recv.c     results: checks, their use, RTT and window, FETCH answers
 *   chunk.c    the window's entries: admitting, building, scale blocks
 *   send.c     the ready ring and the resend heap: sending and resending
 *   io.c       the transport: opening the one asked for, each call to it
 *   udp.c      UDP, the ICMP errors; io_xsk.c: AF_XDP; delay.c: an
 *              emulated link delay in front of UDP
 *   errors.c   the error and warning lines (any file may call it)
 *
 * struct esa_worker below groups its fields by the file that owns them
 * (writes them; the others read).
 */

#define NSEC_PER_MSEC	1000000ULL

enum esa_pkt_state {
	PK_IDLE = 0,	/* unused */
	PK_READY,	/* built, not sent yet */
	PK_SENT,	/* waiting for its result */
	PK_DONE,	/* result used */
};

enum esa_chunk_kind {
	CK_SCALE = 0,	/* float scale negotiation (block histograms) */
	CK_CHECK,	/* every rank's length and dtype, in its own slots */
	CK_DATA,	/* a chunk of the tensor */
	CK_REDO_HI,	/* int32 redo: high halves */
	CK_REDO_LO,	/* int32 redo: low halves */
	CK_REDO_F,	/* float32 redo at the safe scale */
};

struct esa_pkt {
	uint32_t seq;
	uint8_t	state;		/* enum esa_pkt_state */
	uint8_t	kind;		/* enum esa_chunk_kind */
	uint8_t	ovf;		/* its result was flagged overflow */
	uint8_t	resv;
	uint16_t tries;
	uint16_t resv2;
	uint32_t id;		/* the worker's packet number (AF_XDP: its frame) */
	int32_t	heap;		/* index in the resend heap, -1: not in it */
	uint32_t rto_us;	/* this packet's timeout, backoff included */
	uint64_t first_ns, due_ns;
	uint8_t	*buf;		/* the DATA packet, header and values */
};

enum esa_entry_state {
	EN_FREE = 0,
	EN_WAIT,	/* admitted; float data waiting for its block's scale */
	EN_RUN,		/* packets in flight */
	EN_DONE,	/* result delivered to the caller */
};

/* What a position of an allreduce carries: its check, scale, data chunks. */
enum esa_part {
	PT_DATA = 0,
	PT_SCALE,
	PT_CHECK,
};

/* One position of the stream: a check, scale or data chunk of an allreduce. */
struct esa_entry {
	struct esa_request *op;
	uint64_t pos;		/* position in the worker's stream */
	uint32_t idx;		/* check, scale or data chunk index in the op */
	uint8_t	state;		/* enum esa_entry_state */
	uint8_t	part;		/* enum esa_part */
	uint8_t	npkt;		/* packets in use: 1, or 2 for an int32 redo */
	uint8_t	prio;
	struct esa_pkt p[2];
	int32_t	*scratch;	/* 2 * nvals: the redo's halves */
};

struct esa_request {
	struct esa_worker *w;
	struct esa_request *next;
	int	dtype;
	const void *in;
	void	*out;
	size_t	n;
	uint32_t base;		/* first sequence number */
	uint32_t nchk, nscale, ndata;	/* check, scale and data chunks */
	uint32_t npos;		/* nchk + nscale + ndata, in this order */
	uint32_t span;		/* sequence numbers reserved: npos + 2 ndata */
	uint64_t pos0;		/* stream position of the first chunk */
	uint64_t attained0;	/* scale and data positions of earlier ops */
	uint64_t opno;		/* allreduces the worker started before */
	int32_t	*chk;		/* nchk * nvals: every rank's length, summed */
	uint32_t chk_left;	/* check chunks without a result */
	uint32_t admitted, done;
	int	status;		/* 0 or the first error */
	bool	finished;
	/* float32 */
	uint32_t nblocks, block;	/* blocks, data chunks per block */
	int	headroom, safe_headroom;
	int32_t	*hist;		/* nscale * nvals: the summed histograms */
	uint8_t	*scale_done;	/* per scale chunk */
	int16_t	*blk_E;		/* per block; INT16_MIN: not known yet */
	uint8_t	*blk_bad;	/* per block: a rank had NaN or infinity */
	uint64_t t_start;
};

#define ESA_BATCH	64
#define ESA_RC_VALID	0x80
/* UDP_GRO: messages per recvmmsg on the switch's socket; a message is up
 * to ESA_GRO_SEGS results coalesced by the kernel (its UDP_GRO_CNT_MAX). */
#define ESA_GRO_MSGS	8
#define ESA_GRO_SEGS	64

struct esa_xsk;

/* The UDP transport's sockets and receive buffers (udp.c). */
struct esa_udp {
	int	fd;		/* bound to `local`, unconnected: the PS's packets,
				 * FETCHes, ICMP errors; AF_XDP's strays */
	int	sfd;		/* bound to `local` too, connected to the switch:
				 * DATA out (one route lookup), its results in;
				 * -1 on AF_XDP */
	int	gso;		/* UDP_SEGMENT: packets per send, 0: none */
	int	gro;		/* UDP_GRO on sfd: segments a message holds
				 * (an iovec and a buffer each), 0: off */
	uint32_t nbuf;		/* receive buffers: the FETCH cache holds some */
	size_t	slot;		/* bytes each */
	uint8_t	*mem;
	uint32_t *free, nfree;	/* free buffer numbers */
	struct mmsghdr rmsg[ESA_BATCH];
	struct iovec riov[ESA_BATCH];
	struct sockaddr_in rsrc[ESA_BATCH];
	uint32_t rb[ESA_BATCH];	/* the buffer of each receive slot */
	struct mmsghdr gmsg[ESA_GRO_MSGS];	/* UDP_GRO's receive messages */
	struct iovec giov[ESA_GRO_MSGS][ESA_GRO_SEGS];
	uint32_t gb[ESA_GRO_MSGS][ESA_GRO_SEGS];	/* the buffer of each */
	struct sockaddr_in gsrc[ESA_GRO_MSGS];
	union {
		char	buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} gctl[ESA_GRO_MSGS];
	struct mmsghdr smsg[ESA_BATCH];
	struct iovec siov[ESA_BATCH];
	union {
		char	buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} sctl;
};

struct esa_worker {
	/* worker.c: set at opening, read only after */
	struct esa_config cfg;
	int	nvals;
	size_t	pktlen;
	uint64_t full;		/* bitmap of every rank */
	uint32_t window, nent;	/* nent = 2 * window */
	uint32_t npkts;		/* 2 * nent */
	int32_t	*scratchmem;	/* the entries' redo halves */
	struct esa_stats st;	/* the counters: each file counts its own */

	/* request.c: the requests, what they reserved, the state of all */
	struct esa_request *ops, *ops_tail, *admit;
	uint32_t next_base;	/* sequence number of the next op */
	uint64_t attained;	/* scale and data positions of all ops started */
	uint64_t positions;	/* positions of all ops started */
	uint64_t nops;		/* allreduces started */
	int	broken;		/* 0, or the error every later call gets (set
				 * by whichever file finds the ranks out of
				 * step; esa_pump() fails every request) */

	/* chunk.c: the window's entries, a ring of nent by stream position */
	struct esa_entry *ent;
	uint64_t next_pos, low_pos;
	uint32_t nwait;		/* entries in EN_WAIT */

	/* send.c: packets to send, new ones in order, late ones by deadline */
	struct esa_pkt **ready;	/* ring of npkts: built, not sent yet */
	uint32_t rd_head, rd_tail;
	struct esa_pkt **heap;	/* sent, waiting: a min-heap by due_ns */
	uint32_t nheap;
	uint64_t looked;	/* packets a send pass looked at (tests) */
	struct esa_pkt *spkt[ESA_BATCH];	/* the batch being sent */
	bool	send_blocked;	/* the transport's queue is full (it says so) */
	uint64_t rng;		/* the resend deadlines' jitter */

	/* recv.c: what the peers said */
	uint64_t last_rx_ns;	/* last result used (or start of waiting) */
	uint64_t last_sw_ns;	/* last packet from the switch */
	uint64_t last_ps_ns;	/* last packet from the PS */
	uint32_t ps_seq;	/* the latest FETCH of the PS: its chunk, */
	uint64_t ps_held;	/*   the ranks it holds of it, */
	uint64_t ps_ns;		/*   when */
	struct esa_rto rto;	/* round trip, first timeout of a chunk (esa_cc.h) */
	struct esa_cc cc;	/* the congestion window (esa_cc.h) */
	/*
	 * The latest results, direct-mapped by sequence number, for FETCH:
	 * the received packets themselves (a UDP receive buffer or an AF_XDP
	 * frame, held until a later result takes the slot), never copies.
	 */
	uint32_t nrc;		/* 4 * window */
	uint32_t *rc_seq;
	uint8_t	*rc_flags;	/* ESA_RC_VALID | the result's flags */
	uint8_t	**rc_pkt;	/* the packet (ESA header first) */
	uint64_t *rc_buf;	/* its buffer, for esa_io_release() */

	/* diag.c: the PS probed in this silence (a result clears it) */
	bool	probed;

	/* errors.c */
	char	err[256];	/* esa_worker_error() */
	char	warn[320];	/* esa_worker_warning() */

	/* the transport: io.c, udp.c (udp, icmp_*), io_xsk.c (xsk), delay.c
	 * (delay) */
	/* the engine's receive, esa_rx_packet(): what arrives goes up here */
	bool	(*rx)(struct esa_worker *w, uint8_t *pkt, size_t len,
		      const struct sockaddr_in *src, uint64_t now, uint64_t buf);
	struct esa_udp udp;
	struct esa_xsk *xsk;	/* AF_XDP, or NULL: UDP */
	struct esa_delay *delay;	/* emulated link delay, or NULL */
	uint8_t	*pktmem;	/* UDP: the packets (AF_XDP: UMEM frames) */
	char	io_desc[224];	/* esa_worker_io() */
	/* Who is silent, for the error when giving up (diag.c) */
	struct esa_icmp {
		uint64_t ns;		/* last one */
		uint32_t count;
		int	err;		/* its errno */
		uint8_t	origin;		/* SO_EE_ORIGIN_* */
		struct in_addr from;	/* who sent the ICMP error */
	} icmp_sw, icmp_ps;	/* about packets to the switch, to the PS */
};

static inline uint64_t esa_now_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline bool esa_same_sin(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	return a->sin_addr.s_addr == b->sin_addr.s_addr && a->sin_port == b->sin_port;
}

/* The values of data chunk idx of r (the last one may be short). */
static inline size_t esa_chunk_len(const struct esa_worker *w, const struct esa_request *r,
				   uint32_t idx)
{
	size_t off = (size_t)idx * w->nvals;

	return r->n - off < (size_t)w->nvals ? r->n - off : (size_t)w->nvals;
}

/* The headroom of a float redo: one more bit, at least the safe one. */
static inline int esa_redo_headroom(const struct esa_request *r)
{
	int h = r->headroom + 1 > r->safe_headroom ? r->headroom + 1 : r->safe_headroom;

	return h > 30 ? 30 : h;
}

/* The first error of a request is its status. */
static inline void esa_op_error(struct esa_request *r, int err)
{
	if (!r->status)
		r->status = err;
}

/* errors.c */
/* "what: strerror(errno)" into err; returns -errno. */
int esa_sock_fail(char *err, size_t len, const char *what);
/* Say why in esa_worker_error(); returns err. */
int esa_worker_fail(struct esa_worker *w, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Add a note to esa_worker_warning() ("; " between notes). */
void esa_warn(struct esa_worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* worker.c */
/* The first sequence number of a worker of run `run` (0: 0). */
uint32_t esa_run_base(uint32_t run);
/* config.c */
int esa_config_check(const struct esa_config *c, char *err, size_t len);

/* request.c */
void esa_op_free(struct esa_request *r);
/* One round of the engine: admit, build, send, receive; wait at most
 * wait_ms for input when there is nothing else to do. */
int esa_pump(struct esa_worker *w, int wait_ms);

/* diag.c: probe the PS half-way to give_up_ms; at it, -ETIMEDOUT and the
 * error line names who is silent. */
int esa_silence(struct esa_worker *w, uint64_t now);

/* recv.c */
/*
 * Handle one received packet: its UDP payload (the ESA header first), from
 * src, in receive buffer `buf` of the transport.  Returns true if the
 * worker keeps the buffer (a result, kept for FETCH until a later one
 * takes its slot: then esa_io_release()), false if the transport may reuse
 * it at once.  The transport calls it through w->rx.
 */
bool esa_rx_packet(struct esa_worker *w, uint8_t *pkt, size_t len,
		   const struct sockaddr_in *src, uint64_t now, uint64_t buf);
/* The entry and packet (*k; e->npkt if none sent) a result of seq belongs
 * to; NULL if none in flight. */
struct esa_entry *esa_entry_of_seq(struct esa_worker *w, uint32_t seq, int *k);

/* chunk.c */
/* Priority of stream position p of request r (deterministic). */
uint8_t esa_prio_of(const struct esa_worker *w, const struct esa_request *r,
		    uint32_t p);
void esa_admit_chunks(struct esa_worker *w);
void esa_entry_done(struct esa_worker *w, struct esa_entry *e);
void esa_scale_result(struct esa_worker *w, struct esa_entry *e, const int32_t *v);
void esa_start_redo(struct esa_worker *w, struct esa_entry *e);

/* send.c */
void esa_ready_push(struct esa_worker *w, struct esa_pkt *p);
void esa_heap_del(struct esa_worker *w, struct esa_pkt *p);
/* Send what is new and what is late, until done or the transport is full. */
int esa_send_pass(struct esa_worker *w, uint64_t now);

/* ------------------------------------------------------------------ */
/* Transports (io.c; udp.c, io_xsk.c: AF_XDP, delay.c)                 */
/* ------------------------------------------------------------------ */

/*
 * Open the transport the config asks for (io = udp, xdp, auto), in the
 * configured network namespace: sets w->pktmem or the packets' buffers,
 * w->io_desc; 0 or -errno with a one-line reason in err.
 */
int esa_io_open(struct esa_worker *w, char *err, size_t len);
void esa_io_close(struct esa_worker *w);
/* The buffer of the worker's packet number id (0 .. npkts - 1). */
uint8_t *esa_io_pkt(struct esa_worker *w, uint32_t id);
/* Send p[0..n) (DATA to the switch); returns how many went (the rest
 * would block: w->send_blocked), or -errno (fatal). */
int esa_io_send(struct esa_worker *w, struct esa_pkt **p, int n, uint64_t now);
/* Drain what arrived: packets handled, or -errno (fatal). */
int esa_io_recv(struct esa_worker *w, uint64_t now);
/* A kept receive buffer is free again. */
void esa_io_release(struct esa_worker *w, uint64_t buf);
/* Packet p's buffer may not change yet (AF_XDP: its frame is posted). */
bool esa_io_busy(struct esa_worker *w, const struct esa_pkt *p);
/* Before writing packet p: wait (bounded) until it is not busy; false if
 * it still is (then it must not be written). */
bool esa_io_claim(struct esa_worker *w, const struct esa_pkt *p);
/* Wait for input (or room to send) until deadline_ns (UINT64_MAX: no
 * limit); 0 or -errno. */
int esa_io_wait(struct esa_worker *w, uint64_t deadline_ns);
/* A datagram to the PS (a FETCH answer, a probe), on the UDP socket. */
int esa_io_send_ps(struct esa_worker *w, const void *buf, size_t len, uint64_t now);

/* udp.c: the UDP transport, for io.c */
/* The receive buffers (before opening: the delay line sizes by them). */
int esa_udp_buffers(struct esa_worker *w);
/* The sockets (on AF_XDP: the unconnected one only); 0 or -errno. */
int esa_udp_open(struct esa_worker *w, char *err, size_t len);
void esa_udp_close(struct esa_worker *w);
int esa_udp_send(struct esa_worker *w, struct esa_pkt **p, int n, uint64_t now);
int esa_udp_send_ps(struct esa_worker *w, const void *buf, size_t len, uint64_t now);
/* Drain both sockets: packets handled, or -errno (fatal). */
int esa_udp_recv(struct esa_worker *w, uint64_t now);
/* ICMP errors queued on a socket (IP_RECVERR): noted per peer. */
void esa_read_errq(struct esa_worker *w, int fd, uint64_t now);
/* Errors a send can meet that are not the socket's fault. */
bool esa_transient_errno(int e);

/* A UDP receive buffer is free again. */
static inline void esa_udp_release(struct esa_udp *u, uint32_t buf)
{
	u->free[u->nfree++] = buf;
}

/* io_xsk.c: the worker's side of AF_XDP (xsk.h), for io.c */
int esa_xsk_worker_open(struct esa_worker *w, char *err, size_t len);
void esa_xsk_worker_close(struct esa_worker *w);
uint8_t *esa_xsk_worker_pkt(struct esa_worker *w, uint32_t id);
int esa_xsk_worker_send(struct esa_worker *w, struct esa_pkt **p, int n, uint64_t now);
bool esa_xsk_worker_busy(struct esa_worker *w, uint32_t id);
bool esa_xsk_worker_claim(struct esa_worker *w, uint32_t id);
int esa_xsk_worker_recv(struct esa_worker *w, uint64_t now);
void esa_xsk_worker_release(struct esa_worker *w, uint64_t buf);
/* xsk_busy_poll: spin for input before sleeping; whether some came. */
bool esa_xsk_worker_busy_wait(struct esa_worker *w, uint64_t deadline_ns);
int esa_xsk_worker_fd(struct esa_worker *w);

/* ------------------------------------------------------------------ */
/* Emulated link delay (delay.c: config key link_delay_us, UDP only)   */
/* ------------------------------------------------------------------ */

struct esa_delay;
/* Receive buffers the delay line may hold (0 without a delay). */
uint32_t esa_delay_rx_cap(const struct esa_worker *w);
int esa_delay_open(struct esa_worker *w, char *err, size_t len);
void esa_delay_close(struct esa_worker *w);
int esa_delay_send(struct esa_worker *w, const void *buf, size_t len, bool to_ps,
		   uint64_t now);
bool esa_delay_hold(struct esa_worker *w, uint32_t buf, size_t len,
		    const struct sockaddr_in *src, uint64_t now);
int esa_delay_flush(struct esa_worker *w, uint64_t now);
uint64_t esa_delay_next(const struct esa_worker *w);

#endif /* LIBESA_INT_H */
