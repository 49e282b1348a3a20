/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The PS's internals, shared by its files (the API is ps.h).  Each file
 * calls only those below it:
 *
 *   ps_core.c   the rules: ps_rx(), the merge, finish() (the pieces of the
 *               pending entries, the answers' why and asked)
 *   ps_stats.c  the counters' names, what the PS counts, ps_print_stats()
 *   ps_jobs.c   options, the PS's life, its jobs: struct ps, struct ps_job
 *               (their memory; by_id, jobs, ended)
 *   ps_send.c   RESULT, SUM, ACK and FETCH out through ps->tx (ps->txbuf)
 *   ps_store.c  a job's results cache and pending ring and their maps
 *               (res, res_vals, res_next, res_used; pend, pend_msum,
 *               pend_single, pend_next, pend_used; the seq maps)
 *
 * ps_metrics.c writes the counters in Prometheus's format through ps.h.
 */
#ifndef ESA_PS_INT_H
#define ESA_PS_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "ps.h"
#include "esa_policy.h"
#include "esa_wire.h"
#include "esa_merge.h"
#include "esa_cc.h"
#include "esa_hist.h"

/* seq -> index, open addressing with linear probing. */
struct ps_map {
	uint32_t mask;
	uint32_t *key;
	int32_t	*val;		/* -1: empty */
};

struct ps_result {
	uint32_t seq;
	uint8_t	used;
	uint8_t	flags;		/* ESA_F_OVERFLOW */
	uint8_t	held;		/* policy atp: acked once, re-ack on resend */
	uint8_t	holder;		/* ... to the switch that holds it (o.sw[]) */
	uint8_t	why;		/* why the chunk reached us (esa_reason_max()
				 * of its pieces' reasons), echoed in results */
	uint64_t asked;		/* ranks sent a FETCH for it: their late answers
				 * are duplicates, anyone else's are unasked */
};

struct ps_pend {
	uint32_t seq;
	uint8_t	used;
	uint8_t	why;		/* the most telling reason of its pieces */
	uint8_t	resv[2];
	struct esa_merge m;	/* the ranks kept (esa_merge.h) */
	uint64_t resent;	/* ranks that resent the chunk */
	uint64_t resent2;	/* ... twice or more */
	uint64_t asked;		/* ranks sent a FETCH for it */
	uint64_t fetch_ns;	/* last FETCH round */
	uint64_t first_ns;	/* its first piece came (chunk times) */
};

struct ps_job {
	struct ps_job_cfg cfg;
	uint64_t full;
	uint64_t c[__PS_C_MAX];
	/* results */
	struct ps_result *res;
	int32_t	*res_vals;	/* cache x nvals */
	uint32_t res_next, res_used;
	struct ps_map res_map;
	/* unfinished chunks */
	struct ps_pend *pend;
	int64_t	*pend_msum;	/* pending x nvals */
	int32_t	*pend_single;	/* pending x nworkers x nvals */
	uint32_t pend_next, pend_used;
	struct ps_map pend_map;
	/* chunk times: first piece to answer (ps_chunk_times()) */
	uint64_t t_hist[PS_T_BUCKETS];
	uint64_t t_sum_ns;
};

struct ps {
	struct ps_opts o;
	ps_tx_fn tx;
	void	*ctx;
	struct ps_job **jobs;
	int	njobs;
	int16_t	*by_id;		/* 65536: job index + 1, 0: none */
	uint64_t nojob[__PS_C_MAX];
	uint64_t ended[__PS_C_MAX];	/* the counters of jobs deleted (in the total) */
	uint8_t	*txbuf;
	int64_t	*sum;		/* nvals, scratch */
	uint64_t now;		/* the packet's arrival (ps_rx) */
};

/* ps_store.c: the seq maps */
int ps_map_init(struct ps_map *m, uint32_t n);
void ps_map_free(struct ps_map *m);
/* The index of seq k, or -1. */
int32_t ps_map_get(const struct ps_map *m, uint32_t k);
void ps_map_put(struct ps_map *m, uint32_t k, int32_t v);
void ps_map_del(struct ps_map *m, uint32_t k);

/* ps_store.c: a job's kept results and unfinished chunks */
int32_t *ps_res_vals(struct ps *ps, struct ps_job *j, int32_t i);
/* Keep a result (the oldest one goes when the cache is full); its index. */
int32_t ps_res_put(struct ps *ps, struct ps_job *j, uint32_t seq, uint8_t flags,
		   const int32_t *v);
int32_t *ps_pend_single(struct ps *ps, struct ps_job *j, int32_t i, int rank);
int64_t *ps_pend_msum(struct ps *ps, struct ps_job *j, int32_t i);
void ps_pend_drop(struct ps_job *j, int32_t i);
/* The pending entry of seq, or -1; with create, a new one (the oldest goes). */
int32_t ps_pend_get(struct ps *ps, struct ps_job *j, uint32_t seq, bool create);

/* ps_send.c */
void ps_send_result(struct ps *ps, struct ps_job *j, int32_t i, uint64_t to, bool answer);
void ps_send_sum(struct ps *ps, struct ps_job *j, int32_t i);
void ps_send_ack(struct ps *ps, struct ps_job *j, int32_t i);
void ps_send_fetch(struct ps *ps, struct ps_job *j, int32_t pi, uint64_t to);

#endif /* ESA_PS_INT_H */
