/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libesa internals, shared by the library's files, its unit tests and its
 * benchmark.  Not installed; the API is esa.h.
 */
#ifndef LIBESA_INT_H
#define LIBESA_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <linux/esa.h>
#include "esa_prio.h"

#include "esa.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
/* The values travel in little endian and every end adds them natively. */
#error "libesa supports little-endian hosts only (as does the protocol)"
#endif

#define ESA_LIB_VERSION		10000	/* 1.0.0 */

enum esa_prio_policy {
	ESA_PRIO_STATIC = 0,
	ESA_PRIO_LAS,		/* least attained service first */
	ESA_PRIO_SRSF,		/* smallest remaining allreduce (or job) first */
};

struct esa_config {
	struct sockaddr_in sw, local, ps;
	bool	have_sw, have_local, have_ps;
	int	job, rank, workers;
	int	values, window;
	int	timeout_ms, timeout_max_ms, give_up_ms;
	int	policy, prio, prio_max;		/* prio_max < 0: = prio */
	int	quantum, prio_steps;		/* las, srsf: esa_prio.h */
	int	float_block, float_headroom;	/* headroom < 0: auto */
	int	rcvbuf;
	uint32_t run;			/* sequence numbers start at esa_run_base() */
	uint64_t total_chunks;		/* srsf: the job's chunks in all; 0: per op */
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

/* ------------------------------------------------------------------ */
/* The engine (worker.c)                                               */
/* ------------------------------------------------------------------ */

enum esa_pkt_state {
	PK_IDLE = 0,	/* unused */
	PK_READY,	/* built, not sent yet */
	PK_SENT,	/* waiting for its result */
	PK_DONE,	/* result used */
};

enum esa_chunk_kind {
	CK_SCALE = 0,	/* float scale negotiation (block histograms) */
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
	uint32_t rto_ms;
	uint64_t first_ns, due_ns;
	uint8_t	*buf;		/* the DATA packet, header and values */
};

enum esa_entry_state {
	EN_FREE = 0,
	EN_WAIT,	/* admitted; float data waiting for its block's scale */
	EN_RUN,		/* packets in flight */
	EN_DONE,	/* result delivered to the caller */
};

/* One position of the stream: a scale or data chunk of an allreduce. */
struct esa_entry {
	struct esa_request *op;
	uint64_t pos;		/* position in the worker's stream */
	uint32_t idx;		/* scale chunk or data chunk index in the op */
	uint8_t	state;		/* enum esa_entry_state */
	uint8_t	is_scale;
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
	uint32_t nscale, ndata, npos;	/* npos = nscale + ndata */
	uint32_t span;		/* sequence numbers reserved: npos + 2 ndata */
	uint64_t pos0;		/* stream position of the first chunk */
	uint64_t attained0;	/* positions of the worker's earlier ops */
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

struct esa_worker {
	struct esa_config cfg;
	int	fd;
	int	nvals;
	size_t	pktlen;
	uint64_t full;		/* bitmap of every rank */
	uint32_t window, nent;	/* nent = 2 * window */
	struct esa_entry *ent;
	uint8_t	*pktmem;
	int32_t	*scratchmem;
	uint64_t next_pos, low_pos;
	uint32_t next_base;	/* sequence number of the next op */
	uint64_t attained;	/* positions of all ops started */
	struct esa_request *ops, *ops_tail, *admit;
	uint32_t nwait;		/* entries in EN_WAIT */
	uint64_t last_rx_ns;	/* last result used (or start of waiting) */
	/* The latest results, direct-mapped by sequence number, for FETCH. */
	uint32_t nrc;
	uint32_t *rc_seq;
	uint8_t	*rc_flags;	/* ESA_RC_VALID | the result's flags */
	int32_t	*rc_vals;
	uint8_t	*fbuf;		/* a RESULT answering a FETCH */
	uint64_t rng;
	int	broken;		/* 0, or the error every later call gets */
	bool	send_blocked;
	uint64_t next_due;	/* earliest resend deadline */
	int64_t	srtt_us, rttvar_us;	/* round-trip estimate */
	uint32_t rto_ms;	/* first timeout of a new chunk */
	struct esa_stats st;
	char	err[256];
	/* receive batch */
	struct mmsghdr rmsg[ESA_BATCH];
	struct iovec riov[ESA_BATCH];
	struct sockaddr_in rsrc[ESA_BATCH];
	uint8_t	*rbuf;
	/* send batch */
	struct mmsghdr smsg[ESA_BATCH];
	struct iovec siov[ESA_BATCH];
	struct esa_pkt *spkt[ESA_BATCH];
};

uint64_t esa_now_mono_ns(void);
/* The first sequence number of a worker of run `run` (0: 0). */
uint32_t esa_run_base(uint32_t run);
int esa_config_check(const struct esa_config *c, char *err, size_t len);
/* Priority of stream position p of request r (deterministic). */
uint8_t esa_prio_of(const struct esa_worker *w, const struct esa_request *r,
		    uint32_t p);
/* Handle one received packet (exposed for tests and the benchmark). */
void esa_rx_packet(struct esa_worker *w, const uint8_t *buf, size_t len,
		   const struct sockaddr_in *src, uint64_t now);
/* One round of the engine: admit, build, send, receive; wait at most
 * wait_ms for input when there is nothing else to do. */
int esa_pump(struct esa_worker *w, int wait_ms);

#endif /* LIBESA_INT_H */
