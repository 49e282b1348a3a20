/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The parameter server's logic (ps_core.c, and the files ps_int.h lists),
 * without sockets: packets in through ps_rx(), packets out through a
 * callback.  esa-ps (esa_ps.c) wraps it in a daemon; the unit tests drive it
 * directly.  docs/ps.md.
 */
#ifndef ESA_PS_H
#define ESA_PS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <netinet/in.h>
#include <linux/esa.h>
#include "jobdesc.h"

/* What the PS counts, per job (and a row for packets of no known job). */
enum ps_counter {
	PS_C_RX,		/* packets received */
	PS_C_RX_RESULT,		/* RESULT copies from the switch */
	PS_C_RX_HOLD,		/* RESULT/HOLD (policy atp) */
	PS_C_RX_PARTIAL,	/* PARTIAL */
	PS_C_RX_COLLISION,	/* COLLISION (single ranks) */
	PS_C_RX_FETCHED,	/* RESULT from a worker, answering a FETCH */
	PS_C_DONE_SWITCH,	/* chunks the switch completed (its copy kept) */
	PS_C_DONE_DELIVER,	/* whole sums the PS delivered (DELIVER) */
	PS_C_DONE_MERGED,	/* chunks the PS completed by the merge rule */
	PS_C_DONE_FETCHED,	/* chunks recovered from a worker's copy */
	PS_C_DONE_OVERFLOW,	/* chunks whose sum is not representable */
	PS_C_RESULT_TX,		/* RESULT packets sent to workers */
	PS_C_RESEND_ANSWER,	/* ... of which answers to a resend */
	PS_C_SUM_TX,		/* sums sent to the switch for the workers (SUM) */
	PS_C_ACK_TX,		/* ACKs sent to the switch (policy atp) */
	PS_C_FETCH_TX,		/* FETCH packets sent to workers */
	PS_C_DUP_RESULT,	/* sums of chunks already known */
	PS_C_DUP_SINGLE,	/* a rank already kept for the chunk */
	PS_C_OVERLAP,		/* partials sharing a rank with a kept one */
	PS_C_LATE,		/* pieces of chunks already complete */
	PS_C_PENDING_EVICTED,	/* unfinished chunks dropped for memory */
	PS_C_CACHE_EVICTED,	/* results dropped from the cache for memory */
	PS_C_DROP_SHORT,	/* drops: shorter than a header */
	PS_C_DROP_VERSION,	/* drops: wrong version */
	PS_C_DROP_JOB,		/* drops: unknown job */
	PS_C_DROP_TYPE,		/* drops: a type the PS does not take */
	PS_C_DROP_COUNT,	/* drops: count or length not the deployment's */
	PS_C_DROP_HEADER,	/* drops: bad flags, rank, bitmap, reason */
	PS_C_DROP_SOURCE,	/* drops: not from the switch (address and port), nor
				 * a worker's answer from its registered address */
	PS_C_DROP_UNASKED,	/* drops: a worker's RESULT answering no FETCH the PS
				 * sent that rank for that chunk */
	PS_C_RX_PROBE,		/* empty datagrams: a worker checking the PS runs */
	PS_C_NO_SWITCH,		/* ACK needed but no --switch address */
	PS_C_TX_ERROR,		/* packets the socket refused (or, on AF_XDP,
				 * the device did not take in time) */
	PS_C_TX_UDP,		/* on AF_XDP: packets sent by UDP instead (the
				 * next hop not resolved yet, or every send
				 * frame still posted) */
	PS_C_RX_COALESCED,	/* datagrams that came coalesced by GRO
				 * (UDP_GRO), two or more in one receive */
	__PS_C_MAX,
};

extern const char *const ps_counter_names[__PS_C_MAX];

/* Switches a PS takes packets from (two levels: the leaves and the spine). */
#define PS_MAX_SWITCHES	16

struct ps_job_cfg {
	uint16_t id;
	int	nworkers;
	struct sockaddr_in ps;				/* the job's PS address */
	struct sockaddr_in rank[ESA_MAX_WORKERS];	/* address and port */
};

struct ps_opts {
	int	nvals;		/* values per packet (the switch's) */
	uint32_t cache;		/* results kept per job */
	uint32_t pending;	/* unfinished chunks kept per job */
	uint32_t window;	/* the largest window of the jobs' workers (0:
				 * libesa's largest, ESA_TOMB_RING) */
	/*
	 * The switches (address and port): their packets come from them; an
	 * ACK (policy atp) goes to the one that sent the held sum.  Two
	 * levels: every leaf and the spine of the jobs' trees.
	 */
	struct sockaddr_in sw[PS_MAX_SWITCHES];
	int	nsw;
	uint32_t fetch_gap_ms;	/* at most one FETCH round per chunk this often */
	/*
	 * A sum every worker needs goes to the switch as one SUM, which the
	 * switch sends to the workers (one packet on the PS's link instead of
	 * one per worker); with several switches (two levels), or when off,
	 * to each worker.
	 */
	bool	sums_via_switch;
};

/* Send buf from the job's PS address `from` to `to`. */
typedef void (*ps_tx_fn)(void *ctx, const struct sockaddr_in *from,
			 const struct sockaddr_in *to, const void *buf, size_t len);

struct ps;

void ps_opts_default(struct ps_opts *o);
/*
 * 0, or -EINVAL with a reason: the switch's address is needed, and
 * `pending` must hold the unfinished chunks of two windows (ranks run up to
 * a window apart, so a job's unfinished chunks span up to two).
 */
int ps_check_opts(const struct ps_opts *o, char *err, size_t len);
struct ps *ps_new(const struct ps_opts *o, ps_tx_fn tx, void *ctx);
void ps_free(struct ps *ps);

/*
 * Parse "job ID ps IP:PORT workers IP:PORT... [max-prio N] [lease MS]
 * [region BASE SIZE]" from argv[0..argc), up to the next "job": esactl's
 * words through the one parser (user/common/jobdesc.h; the switch-only
 * ones are accepted and ignored).  Every worker needs its port: the PS
 * sends it results and FETCHes there, and takes answers only from there.
 * Returns the number of words used, or -1 with a reason in err.
 */
int ps_parse_job(int argc, char **argv, struct ps_job_cfg *j, char *err, size_t len);
/* What the PS keeps of a job's description: its PS and ranks. */
void ps_job_from_desc(const struct esa_jobdesc *d, struct ps_job_cfg *c);
int ps_add_job(struct ps *ps, const struct ps_job_cfg *j, char *err, size_t len);
/* The job is gone (esa-agent said so): everything kept for it goes. */
int ps_del_job(struct ps *ps, uint16_t id);
/* The index of job id, or -1. */
int ps_find_job(const struct ps *ps, uint16_t id);
int ps_njobs(const struct ps *ps);
const struct ps_job_cfg *ps_job(const struct ps *ps, int i);

/* One packet that arrived from src. */
void ps_rx(struct ps *ps, const uint8_t *buf, size_t len, const struct sockaddr_in *src,
	   uint64_t now_ns);

/* Count an event of no particular job (e.g. a send error). */
void ps_note(struct ps *ps, int counter);
/* Counters of job index i (0..ps_njobs-1), -1: packets of no job, -2: total. */
uint64_t ps_counter(const struct ps *ps, int i, int counter);
/* Print every counter, text (non-zero ones) or JSON. */
void ps_print_stats(const struct ps *ps, FILE *f, bool json);
/* The same in the Prometheus text format (ps_metrics.c, docs/metrics.md). */
void ps_print_prom(const struct ps *ps, FILE *f);
/*
 * Chunk times of job index i: of each chunk the PS held pieces of, the
 * time from its first piece to its answer (the merge, a worker's copy, or
 * the switch's sum), in esa_hist.h's buckets of microseconds.  Fills hist,
 * returns the sum in ns.
 */
#define PS_T_BUCKETS	24
uint64_t ps_chunk_times(const struct ps *ps, int i, uint64_t hist[PS_T_BUCKETS]);
/* Chunks currently kept (tests check the memory bounds). */
uint32_t ps_cached(const struct ps *ps, int i);
uint32_t ps_pending(const struct ps *ps, int i);
/* The kept result of a chunk: 1 and values/flags, or 0. */
int ps_lookup(const struct ps *ps, int i, uint32_t seq, int32_t *vals, uint8_t *flags);

#endif /* ESA_PS_H */
