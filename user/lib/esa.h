/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libesa: the worker side of ESA in-network aggregation.
 *
 * A training program creates one worker context per (job, rank) it drives,
 * then calls allreduce on int32 or float32 buffers; the library splits them
 * into chunks of the deployment's vector length, streams them to the switch
 * with a window of chunks in flight, resends what is late, and hands each
 * chunk's sum to the caller exactly once.  See docs/library.md.
 *
 * The API is plain C: opaque handles, int return codes (0 or a negative
 * errno), fixed-width types.  It needs no macro to be called, so it can be
 * used from Python through ctypes.  Nothing is process-wide: any number of
 * contexts (of one job or of several) may live in one process.  One context
 * must be driven by one thread at a time; different contexts are independent.
 */
#ifndef LIBESA_H
#define LIBESA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct esa_config esa_config;	/* settings, before a worker opens */
typedef struct esa_worker esa_worker;	/* one rank of one job */
typedef struct esa_request esa_request;	/* an allreduce in progress */

/* Element types (plain ints for callers without this header's enums). */
enum esa_dtype {
	ESA_INT32 = 0,
	ESA_FLOAT32 = 1,
};

/*
 * Largest `window` setting: chunks a worker keeps in flight.  The switch's
 * tombstone ring (ESA_TOMB_RING in linux/esa.h): a wider window would have
 * two chunks of a job in flight on one tombstone, and late packets of the
 * older could start partials that never complete.
 */
#define ESA_WINDOW_MAX	512

/* Version of this API: major * 10000 + minor * 100 + patch. */
int esa_version(void);

/* ------------------------------------------------------------------ */
/* Configuration                                                       */
/* ------------------------------------------------------------------ */
/*
 * Every setting is a key and a string value, from code (esa_config_set) or
 * from a file of "key = value" lines ('#' starts a comment).  The keys:
 *
 *   switch          IP[:PORT]  the switch's service address (port 7680)
 *   job             0..65535   the job id the switch registered
 *   rank            0..63      this worker's rank
 *   workers         1..64      ranks in the job
 *   local           IP:PORT    address to send from and receive on: the
 *                              rank's registered address
 *   ps              IP:PORT    the job's PS, as registered at the switch:
 *                              results are taken only from the switch's
 *                              address and port and from this one, FETCH
 *                              only from this one (required)
 *   values          8..2232    values per packet: the switch's `values`
 *                              (856: a 3476-byte IP packet, one single-
 *                              buffer XDP frame, links need MTU >= 3476;
 *                              2232: 8980 bytes, jumbo, MTU 9000, over
 *                              UDP only: AF_XDP takes one 4 KiB frame)
 *   window          1..ESA_WINDOW_MAX (512)  chunks in flight (default 128)
 *   timeout_us      50..60000000: least resend timeout in microseconds
 *                   (default 10000); the timeout follows the measured
 *                   round trip (srtt + 4 rttvar, as TCP), timed in ns
 *   timeout_ms      the same in milliseconds (sets timeout_us)
 *   timeout_max_ms  resend timeout cap, backoff included (default 200)
 *   give_up_ms      1..86400000: no result this long: fail with -ETIMEDOUT,
 *                   naming the silent peer (default 60000)
 *   priority        static | las | srsf  (default static)
 *   prio            the static priority (default 0)
 *   prio_max        highest priority to stamp: the job's registered
 *                   max-prio (default: prio)
 *   quantum         chunks per priority step of las and srsf (default 256)
 *   total_chunks    srsf: the chunks the job streams in all; 0: count each
 *                   allreduce alone (default 0)
 *   prio_steps      1..16      priority steps per doubling of las's and
 *                              srsf's count (default 1; esa_prio.h)
 *   float_block     data chunks per float scale block (default 8)
 *   float_headroom  bits kept free for the sum; auto = ceil(log2 workers),
 *                   which cannot overflow (default auto)
 *   netns           path of a network namespace (/run/netns/NAME) to open
 *                   the socket in; default: the caller's
 *   rcvbuf          socket receive buffer in bytes (default 4194304); what
 *                   the kernel granted is the `rcvbuf` counter, and a
 *                   shortfall is esa_worker_warning()'s
 *   run             0..2^32-1: the same on every rank of the job, new for
 *                   each run; sequence numbers start at a hash of it, so a
 *                   run never takes what the PS kept of an earlier one
 *                   (default 0: from 0)
 *   io              udp | xdp | auto: the transport (default udp).  udp:
 *                   UDP sockets, no privileges.  xdp: AF_XDP through libxdp
 *                   (needs CAP_NET_ADMIN and CAP_BPF, an interface with XDP;
 *                   opening fails with a one-line reason when it cannot).
 *                   auto: xdp if it can open, else udp (esa_worker_io() and
 *                   the io_xdp counter say which; esa_worker_warning() why
 *                   not xdp)
 *   ifname          the interface AF_XDP uses (default: the one of the route
 *                   to the switch)
 *   queue           0..1023: its queue for AF_XDP (default 0)
 *   xdp_workers     1..64: AF_XDP workers of this process that may share
 *                   the interface's queue: the first to open sizes the
 *                   UMEM they share for that many like it (default 2)
 *   udp_gro         0|1: io=udp takes the switch's results coalesced by the
 *                   kernel's GRO (UDP_GRO), each in a buffer of its own
 *                   (default: on, unless link_delay_us is set; the kernel
 *                   coalesces only datagrams with a UDP checksum, which
 *                   the XDP switch gives its results; the udp_gro counter
 *                   says if the socket took it)
 *   xsk_busy_poll   0..100000 us: AF_XDP busy polling (default 0: off):
 *                   SO_PREFER_BUSY_POLL, SO_BUSY_POLL, the device's NAPI
 *                   run from the worker, and a spin this long for input
 *                   before sleeping; esa_worker_io() names the NAPI polled,
 *                   esa_worker_warning() says when the kernel knows none
 *   xsk_tx_budget   0, 32..512: frames one AF_XDP send call takes in copy
 *                   mode (XDP_MAX_TX_SKB_BUDGET, kernel 6.17; default 0:
 *                   the kernel's 32)
 */
esa_config *esa_config_new(void);
void esa_config_free(esa_config *c);
/* 0, -EINVAL (unknown key or bad value: see esa_config_error). */
int esa_config_set(esa_config *c, const char *key, const char *value);
/* Integer settings without formatting a string. */
int esa_config_set_int(esa_config *c, const char *key, long long value);
/* Read "key = value" lines; 0 or -errno (-EINVAL: see esa_config_error). */
int esa_config_load(esa_config *c, const char *path);
/* The current value of a key as text; 0 or -EINVAL. */
int esa_config_get(const esa_config *c, const char *key, char *buf, size_t len);
/* The reason of the last failure of a config call, "" if none. */
const char *esa_config_error(const esa_config *c);

/* ------------------------------------------------------------------ */
/* Workers                                                             */
/* ------------------------------------------------------------------ */

/*
 * Open a worker: checks the configuration and opens its socket (in the
 * configured network namespace).  NULL on failure, with the reason in err
 * (if not NULL) and errno set.
 */
esa_worker *esa_worker_open(const esa_config *c, char *err, size_t errlen);
/* Close the socket and free everything, requests included. */
void esa_worker_close(esa_worker *w);
/*
 * The run number (the `run` setting) of a worker that has started no
 * allreduce yet: 0, -EBUSY after its first, -EINVAL without a worker.  For
 * a number the ranks agree on only after opening (esa.ddp does).
 */
int esa_worker_set_run(esa_worker *w, uint32_t run);
/* The reason of the worker's last error, "" if none. */
const char *esa_worker_error(const esa_worker *w);
/* What the worker could not get as configured, "" if nothing (e.g. a
 * receive buffer smaller than `rcvbuf`: SO_RCVBUFFORCE needs CAP_NET_ADMIN;
 * io=auto falling back to UDP, and why). */
const char *esa_worker_warning(const esa_worker *w);
/* The transport in use: "udp", or "xdp DEV queue N copy|zerocopy ..." */
const char *esa_worker_io(const esa_worker *w);

/* ------------------------------------------------------------------ */
/* Allreduce                                                           */
/* ------------------------------------------------------------------ */
/*
 * out[i] = sum over all ranks of their in[i], for i < n.  in and out may be
 * the same buffer; they must stay valid and untouched by the caller until
 * the call (or the request) completes.  Every rank of the job must call the
 * same sequence of allreduces with the same n and dtype.
 *
 * Returns 0, or:
 *   -EOVERFLOW  int32: some element's sum does not fit int32 (it is
 *               clamped to INT32_MIN/INT32_MAX, every other element exact);
 *               float32: a chunk overflowed even at the safe scale (a peer
 *               does not follow the protocol); that chunk is NaN
 *   -ERANGE     float32: some rank had a NaN or infinity in a block; that
 *               block's elements are NaN on every rank
 *   -ETIMEDOUT  nothing came back for give_up_ms (esa_worker_error() names
 *               the silent peer: the switch, the PS, or the ranks the PS
 *               lacks)
 *   -EPROTO     the ranks disagree on this allreduce's length or dtype
 *               (checked in band; esa_worker_error() lists them)
 *   -EPIPE      the worker failed before (timeout, mismatch or socket
 *               error): its job's ranks are out of step; open a new worker
 *   -EINVAL     bad arguments
 * -EOVERFLOW and -ERANGE leave the worker usable: every rank sees them.
 */
int esa_allreduce(esa_worker *w, int dtype, const void *in, void *out, size_t n);
int esa_allreduce_i32(esa_worker *w, const int32_t *in, int32_t *out, size_t n);
int esa_allreduce_f32(esa_worker *w, const float *in, float *out, size_t n);

/*
 * Asynchronous form: start, then esa_test (non-blocking) or esa_wait.
 * Several requests of one worker may be outstanding: they stream in the
 * order they were started, through one window.  A request is freed by
 * esa_request_free (after it completed, or to abandon it: abandoning makes
 * the worker fail with -EPIPE from then on, since its peers would wait).
 * NULL on failure (errno set, reason in esa_worker_error).
 */
esa_request *esa_allreduce_start(esa_worker *w, int dtype, const void *in,
				 void *out, size_t n);
/* Drive the worker without blocking: 1 done (*status if not NULL gets the
 * result code), 0 not yet, or a negative errno of the progress itself. */
int esa_test(esa_request *r, int *status);
/* Block until done (or timeout_ms passes; -1: forever); returns the
 * request's result code, or -EAGAIN on timeout. */
int esa_wait(esa_request *r, int timeout_ms);
void esa_request_free(esa_request *r);
/* Drive every request of the worker for at most timeout_ms (0: poll);
 * returns the number of requests still running, or a negative errno. */
int esa_progress(esa_worker *w, int timeout_ms);
/* Fraction of the request's chunks done, 0..1. */
double esa_request_progress(const esa_request *r);
/*
 * Serve the PS while not reducing: a worker keeps the results of its recent
 * chunks and answers the PS's FETCH for one a peer lacks (docs/protocol.md).
 * Those requests are answered whenever the worker is driven; a worker that
 * finished before its peers should call this until they are done too (or
 * for a while before closing).  Returns after timeout_ms, or after quiet_ms
 * without any packet (0: no such limit), with the number of FETCHes
 * answered, or a negative errno.
 */
int esa_serve(esa_worker *w, int timeout_ms, int quiet_ms);

/* ------------------------------------------------------------------ */
/* Statistics                                                          */
/* ------------------------------------------------------------------ */

/*
 * The round-trip histogram: rtt_hist[i] counts the chunks whose round trip
 * (first send to result, in whole microseconds as rtt_us_sum adds them) was
 * at most 2^i us and more than 2^(i-1) us (i = 0: at most 1 us); the last
 * bucket, ESA_RTT_BUCKETS - 1, every longer one (above 2^22 us, 4.2 s).
 */
#define ESA_RTT_BUCKETS	24

/*
 * Counters of a worker, since it opened.  The layout is fixed (ctypes) and
 * only grows at its end: esa_worker_stats() copies what the caller knows.
 */
struct esa_stats {
	uint64_t ops;		/* allreduces completed */
	uint64_t elems;		/* elements reduced */
	uint64_t chunks;	/* chunks completed (data, scale, redo) */
	uint64_t tx_packets;	/* DATA packets sent, resends included */
	uint64_t tx_resends;	/* ... of which resends after a timeout */
	uint64_t rx_packets;	/* packets received */
	uint64_t rx_results;	/* results used (exactly one per chunk) */
	uint64_t rx_from_ps;	/* ... of which sent by the PS, not the switch */
	uint64_t rx_duplicates;	/* results of chunks already done */
	uint64_t rx_stale;	/* results of no chunk in flight */
	uint64_t rx_invalid;	/* packets that are not a result of this job */
	uint64_t overflows;	/* results flagged ESA_F_OVERFLOW */
	uint64_t redos;		/* chunks redone exactly after an overflow */
	uint64_t scale_chunks;	/* float scale negotiation chunks */
	uint64_t fetch_rx;	/* FETCH requests from the PS */
	uint64_t fetch_answered; /* ... answered with a kept result */
	uint64_t send_again;	/* sendmmsg would block: retried */
	uint64_t rtt_us_sum;	/* first-send-to-result time of chunks sent */
	uint64_t rtt_samples;	/*   once, for the mean round trip */
	uint64_t rx_untrusted;	/* results from neither the switch nor the PS
				 * (address and port): ignored */
	uint64_t fetch_refused;	/* FETCHes not from the PS (address and port) */
	uint64_t icmp_errors;	/* ICMP errors about packets sent (IP_RECVERR) */
	uint64_t ps_probes;	/* empty datagrams to the PS in a silence */
	uint64_t rcvbuf;	/* receive buffer the kernel granted, bytes */
	uint64_t io_xdp;	/* 1: the transport is AF_XDP, 0: UDP */
	uint64_t xdp_zerocopy;	/* 1: AF_XDP in zero-copy mode, 0: copy mode */
	uint64_t xdp_drops;	/* AF_XDP: packets to us dropped (malformed, or by
				 * the kernel: fill ring empty, RX ring full) */
	uint64_t udp_gro;	/* 1: the switch's results arrive coalesced
				 * (UDP_GRO on its socket), 0: one at a time */
	uint64_t rx_coalesced;	/* datagrams received in coalesced messages of
				 * two or more (UDP_GRO) */
	uint64_t waits;		/* times the worker slept for input or a timer */
	uint64_t resends_deferred; /* late packets held back a timeout because
				 * nothing had come back for one (a slow peer,
				 * not loss: only the oldest few go again) */
	uint64_t rx_contention;	/* results through the PS for want of switch
				 * memory (its reason: PREEMPT, COLLISION,
				 * NOSLOT) */
	uint64_t cc_decreases;	/* times the window halved (window_min) */
	uint64_t cwnd;		/* the congestion window now, chunks */
	/* API 2.2: the round trips of rtt_us_sum and rtt_samples as a
	 * histogram (ESA_RTT_BUCKETS below); sum over it = rtt_samples */
	uint64_t rtt_hist[ESA_RTT_BUCKETS];
};

/* 0, or -EINVAL.  size: sizeof(struct esa_stats) as the caller knows it
 * (a larger struct of a newer header: the rest is left as it was). */
int esa_worker_stats(const esa_worker *w, struct esa_stats *s, size_t size);
/* One counter by its field name above; -1 if unknown. */
int64_t esa_worker_stat(const esa_worker *w, const char *name);
/*
 * API 2.2: the counters of workers ws[0..n) in Prometheus's text format,
 * labelled with each one's job and rank: esa_worker_<counter>_total, a
 * gauge for each state (rcvbuf, io_xdp, xdp_zerocopy, udp_gro), and the
 * round trips as the histogram esa_worker_chunk_rtt_seconds (its _count is
 * rtt_samples; docs/metrics.md).  Writes at most len bytes, NUL included,
 * to buf; returns the whole text's length (a larger buf is needed when it
 * is >= len), or -EINVAL, -ENOMEM.
 */
int esa_worker_metrics(esa_worker *const *ws, int n, char *buf, size_t len);

/* ------------------------------------------------------------------ */
/* Float32 quantization (see docs/library.md)                          */
/* ------------------------------------------------------------------ */
/*
 * The documented bound of |out[i] - exact sum| for an element whose scale
 * block has largest magnitude block_absmax over all ranks, when the exact
 * sum is exact_sum: nworkers * 2^(E + h - 31) + 2^-24 * |exact_sum|, where
 * 2^E is the smallest power of two above block_absmax (E >= -125) and h the
 * headroom (-1: auto).
 */
double esa_f32_error_bound(double block_absmax, double exact_sum, int nworkers,
			   int headroom);

/* A message for a (negative or positive) errno returned by this library. */
const char *esa_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* LIBESA_H */
