// SPDX-License-Identifier: GPL-2.0
/*
 * The parameter server's rules (docs/protocol.md, "The PS"), per (job, chunk):
 *
 * - a RESULT copy from the switch, or a whole sum (DELIVER, or a flush that
 *   completed it) is the answer: kept in a bounded cache to answer resends;
 *   a whole sum is also sent to every worker; policy atp's HOLD is acked;
 * - partials and single ranks merge: multi-rank partials are kept only while
 *   disjoint, singles per rank; complete when they cover every rank; the sum
 *   is the kept partials plus the singles they do not cover (no rank twice);
 * - a resend of a known chunk is answered with its result; from a rank's
 *   second resend of a chunk the PS cannot finish, the other workers are
 *   asked for their copy (FETCH), since the sum may have completed in the
 *   switch while the PS's copy was lost;
 * - ESA_F_OVERFLOW on any piece makes the answer an overflow result: the
 *   workers redo the chunk.
 *
 * Memory is bounded per job: `cache` results and `pending` unfinished
 * chunks, each kept in a ring and evicted oldest first; an evicted piece is
 * never wrong to lose, since workers resend until they have their result.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "ps.h"
#include "words.h"
#include "esa_policy.h"
#include "esa_wire.h"
#include "esa_merge.h"
#include "esa_cc.h"
#include "esa_hist.h"

const char *const ps_counter_names[__PS_C_MAX] = {
	[PS_C_RX]		= "rx",
	[PS_C_RX_RESULT]	= "rx_result",
	[PS_C_RX_HOLD]		= "rx_hold",
	[PS_C_RX_PARTIAL]	= "rx_partial",
	[PS_C_RX_COLLISION]	= "rx_collision",
	[PS_C_RX_FETCHED]	= "rx_fetched",
	[PS_C_DONE_SWITCH]	= "done_switch",
	[PS_C_DONE_DELIVER]	= "done_deliver",
	[PS_C_DONE_MERGED]	= "done_merged",
	[PS_C_DONE_FETCHED]	= "done_fetched",
	[PS_C_DONE_OVERFLOW]	= "done_overflow",
	[PS_C_RESULT_TX]	= "result_tx",
	[PS_C_RESEND_ANSWER]	= "resend_answers",
	[PS_C_SUM_TX]		= "sum_tx",
	[PS_C_ACK_TX]		= "ack_tx",
	[PS_C_FETCH_TX]		= "fetch_tx",
	[PS_C_DUP_RESULT]	= "dup_results",
	[PS_C_DUP_SINGLE]	= "dup_singles",
	[PS_C_OVERLAP]		= "overlaps",
	[PS_C_LATE]		= "late",
	[PS_C_PENDING_EVICTED]	= "pending_evicted",
	[PS_C_CACHE_EVICTED]	= "cache_evicted",
	[PS_C_DROP_SHORT]	= "drop_short",
	[PS_C_DROP_VERSION]	= "drop_version",
	[PS_C_DROP_JOB]		= "drop_job",
	[PS_C_DROP_TYPE]	= "drop_type",
	[PS_C_DROP_COUNT]	= "drop_count",
	[PS_C_DROP_HEADER]	= "drop_header",
	[PS_C_DROP_SOURCE]	= "drop_source",
	[PS_C_DROP_UNASKED]	= "drop_unasked",
	[PS_C_RX_PROBE]		= "rx_probe",
	[PS_C_NO_SWITCH]	= "no_switch",
	[PS_C_TX_ERROR]		= "tx_error",
	[PS_C_TX_UDP]		= "tx_udp",
};

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

void ps_opts_default(struct ps_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->nvals = ESA_DEFAULT_VALUES;
	o->cache = 4096;
	o->pending = 1024;
	o->fetch_gap_ms = 20;
	o->sums_via_switch = true;
}

int ps_check_opts(const struct ps_opts *o, char *err, size_t len)
{
	uint32_t w = o->window ? o->window : ESA_TOMB_RING;

	if (!o->nsw)
		return snprintf(err, len, "the switch's address is needed (--switch "
				"IP[:PORT]): its packets come from it"), -EINVAL;
	if (o->nsw > PS_MAX_SWITCHES)
		return snprintf(err, len, "%d switches: at most %d", o->nsw,
				PS_MAX_SWITCHES), -EINVAL;
	if (o->window > ESA_TOMB_RING)
		return snprintf(err, len, "window %u: workers' windows are at most the "
				"switch's tombstone ring, %d", o->window, ESA_TOMB_RING),
		       -EINVAL;
	if ((uint64_t)o->pending < 2ULL * w)
		return snprintf(err, len, "pending %u holds the unfinished chunks of windows "
				"up to %u only, the workers' can be %u%s", o->pending,
				o->pending / 2, w, o->window ? "" : " (--window N: the "
				"largest window of the jobs' workers)"), -EINVAL;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The maps                                                            */
/* ------------------------------------------------------------------ */

static int map_init(struct ps_map *m, uint32_t n)
{
	uint32_t cap = 16;

	while (cap < 2 * n)
		cap <<= 1;
	m->mask = cap - 1;
	m->key = calloc(cap, sizeof(*m->key));
	m->val = malloc(cap * sizeof(*m->val));
	if (!m->key || !m->val)
		return -ENOMEM;
	memset(m->val, 0xff, cap * sizeof(*m->val));
	return 0;
}

static void map_free(struct ps_map *m)
{
	free(m->key);
	free(m->val);
}

static uint32_t map_hash(uint32_t k)
{
	return esa_hash32(k);
}

static int32_t map_get(const struct ps_map *m, uint32_t k)
{
	for (uint32_t i = map_hash(k) & m->mask;; i = (i + 1) & m->mask) {
		if (m->val[i] < 0)
			return -1;
		if (m->key[i] == k)
			return m->val[i];
	}
}

static void map_put(struct ps_map *m, uint32_t k, int32_t v)
{
	uint32_t i;

	for (i = map_hash(k) & m->mask; m->val[i] >= 0 && m->key[i] != k; i = (i + 1) & m->mask)
		;
	m->key[i] = k;
	m->val[i] = v;
}

/* Remove k; shift back the entries after it that probed past it. */
static void map_del(struct ps_map *m, uint32_t k)
{
	uint32_t i, j;

	for (i = map_hash(k) & m->mask;; i = (i + 1) & m->mask) {
		if (m->val[i] < 0)
			return;
		if (m->key[i] == k)
			break;
	}
	m->val[i] = -1;
	for (j = (i + 1) & m->mask; m->val[j] >= 0; j = (j + 1) & m->mask) {
		uint32_t h = map_hash(m->key[j]) & m->mask;

		/* Move j into the hole at i if h is not cyclically in (i, j]. */
		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			m->key[i] = m->key[j];
			m->val[i] = m->val[j];
			m->val[j] = -1;
			i = j;
		}
	}
}

/* ------------------------------------------------------------------ */
/* Jobs                                                                */
/* ------------------------------------------------------------------ */

struct ps *ps_new(const struct ps_opts *o, ps_tx_fn tx, void *ctx)
{
	struct ps *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return NULL;
	ps->o = *o;
	if (!ps->o.cache)
		ps->o.cache = 1;
	if (!ps->o.pending)
		ps->o.pending = 1;
	ps->tx = tx;
	ps->ctx = ctx;
	ps->by_id = calloc(65536, sizeof(*ps->by_id));
	ps->txbuf = calloc(1, ESA_HDR_LEN + 4 * ESA_MAX_VALUES);
	ps->sum = calloc(ESA_MAX_VALUES, sizeof(*ps->sum));
	if (!ps->by_id || !ps->txbuf || !ps->sum) {
		ps_free(ps);
		return NULL;
	}
	return ps;
}

static void job_free(struct ps_job *j)
{
	if (!j)
		return;
	free(j->res);
	free(j->res_vals);
	map_free(&j->res_map);
	free(j->pend);
	free(j->pend_msum);
	free(j->pend_single);
	map_free(&j->pend_map);
	free(j);
}

void ps_free(struct ps *ps)
{
	if (!ps)
		return;
	for (int i = 0; i < ps->njobs; i++)
		job_free(ps->jobs[i]);
	free(ps->jobs);
	free(ps->by_id);
	free(ps->txbuf);
	free(ps->sum);
	free(ps);
}

void ps_job_from_desc(const struct esa_jobdesc *d, struct ps_job_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->id = d->id;
	c->nworkers = d->j.nworkers;
	c->ps.sin_family = AF_INET;
	c->ps.sin_addr.s_addr = d->j.ps.ip;
	c->ps.sin_port = d->j.ps.port;
	for (int r = 0; r < c->nworkers && r < ESA_MAX_WORKERS; r++) {
		c->rank[r].sin_family = AF_INET;
		c->rank[r].sin_addr.s_addr = d->j.rank[r].ip;
		c->rank[r].sin_port = d->j.rank[r].port;
	}
}

int ps_parse_job(int argc, char **argv, struct ps_job_cfg *j, char *err, size_t len)
{
	struct esa_jobdesc *d;
	char why[200];
	int used;

	memset(j, 0, sizeof(*j));
	if (argc < 2 || strcmp(argv[0], "job"))
		return snprintf(err, len, "expected \"job ID ...\""), -1;
	d = malloc(sizeof(*d));
	if (!d)
		return snprintf(err, len, "out of memory"), -1;
	used = esa_jobdesc_parse(argc - 1, argv + 1, ESA_JD_PS | ESA_JD_NO_DEV | ESA_JD_MANY,
				 d, why, sizeof(why));
	if (used < 0 && strncmp(why, "job id", 6))
		snprintf(err, len, "job %u: %s", d->id, why);
	else if (used < 0)
		snprintf(err, len, "%s", why);
	else
		ps_job_from_desc(d, j);
	free(d);
	return used < 0 ? -1 : used + 1;
}

int ps_add_job(struct ps *ps, const struct ps_job_cfg *c, char *err, size_t len)
{
	size_t nv = ps->o.nvals;
	struct ps_job *j, **n;

	if (ps->by_id[c->id])
		return snprintf(err, len, "job %u given twice", c->id), -EEXIST;
	if (c->nworkers < 1 || c->nworkers > ESA_MAX_WORKERS)
		return snprintf(err, len, "job %u: %d workers", c->id, c->nworkers), -EINVAL;
	for (int a = 0; a < c->nworkers; a++)
		if (!c->rank[a].sin_port)
			return snprintf(err, len, "job %u: worker %d has no port (the PS sends it "
					"results and FETCHes, and takes answers only from there)",
					c->id, a), -EINVAL;
	for (int a = 0; a < c->nworkers; a++)
		for (int b = a + 1; b < c->nworkers; b++)
			if (c->rank[a].sin_addr.s_addr == c->rank[b].sin_addr.s_addr &&
			    c->rank[a].sin_port == c->rank[b].sin_port)
				return snprintf(err, len, "job %u: ranks %d and %d share an address",
						c->id, a, b), -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		goto nomem;
	j->cfg = *c;
	j->full = esa_full_mask(c->nworkers);
	j->res = calloc(ps->o.cache, sizeof(*j->res));
	j->res_vals = calloc((size_t)ps->o.cache * nv, sizeof(int32_t));
	j->pend = calloc(ps->o.pending, sizeof(*j->pend));
	j->pend_msum = calloc((size_t)ps->o.pending * nv, sizeof(int64_t));
	j->pend_single = calloc((size_t)ps->o.pending * c->nworkers * nv, sizeof(int32_t));
	if (!j->res || !j->res_vals || !j->pend || !j->pend_msum || !j->pend_single ||
	    map_init(&j->res_map, ps->o.cache) || map_init(&j->pend_map, ps->o.pending))
		goto nomem;
	n = realloc(ps->jobs, (ps->njobs + 1) * sizeof(*n));
	if (!n)
		goto nomem;
	ps->jobs = n;
	ps->jobs[ps->njobs++] = j;
	ps->by_id[c->id] = ps->njobs;
	return 0;
nomem:
	job_free(j);
	snprintf(err, len, "job %u: out of memory (cache %u, pending %u)", c->id,
		 ps->o.cache, ps->o.pending);
	return -ENOMEM;
}

int ps_del_job(struct ps *ps, uint16_t id)
{
	int i = ps->by_id[id] - 1;

	if (i < 0)
		return -ENOENT;
	for (int c = 0; c < __PS_C_MAX; c++)
		ps->ended[c] += ps->jobs[i]->c[c];
	job_free(ps->jobs[i]);
	memmove(&ps->jobs[i], &ps->jobs[i + 1], (ps->njobs - i - 1) * sizeof(ps->jobs[0]));
	ps->njobs--;
	ps->by_id[id] = 0;
	for (int k = i; k < ps->njobs; k++)
		ps->by_id[ps->jobs[k]->cfg.id] = k + 1;
	return 0;
}

int ps_find_job(const struct ps *ps, uint16_t id)
{
	return ps->by_id[id] - 1;
}

int ps_njobs(const struct ps *ps)
{
	return ps->njobs;
}

const struct ps_job_cfg *ps_job(const struct ps *ps, int i)
{
	return i >= 0 && i < ps->njobs ? &ps->jobs[i]->cfg : NULL;
}

/* ------------------------------------------------------------------ */
/* Results and pending chunks                                          */
/* ------------------------------------------------------------------ */

static int32_t *res_vals(struct ps *ps, struct ps_job *j, int32_t i)
{
	return j->res_vals + (size_t)i * ps->o.nvals;
}

/* Keep a result; returns its index. */
static int32_t res_put(struct ps *ps, struct ps_job *j, uint32_t seq, uint8_t flags,
		       const int32_t *v)
{
	int32_t i = j->res_next;
	struct ps_result *r = &j->res[i];

	if (r->used) {
		map_del(&j->res_map, r->seq);
		j->c[PS_C_CACHE_EVICTED]++;
		j->res_used--;
	}
	j->res_next = (j->res_next + 1) % ps->o.cache;
	r->seq = seq;
	r->used = 1;
	r->flags = flags & ESA_F_OVERFLOW;
	r->held = 0;
	r->holder = 0;
	r->why = 0;
	r->asked = 0;
	if (r->flags)
		memset(res_vals(ps, j, i), 0, ps->o.nvals * 4);	/* never used */
	else
		memcpy(res_vals(ps, j, i), v, ps->o.nvals * 4);
	map_put(&j->res_map, seq, i);
	j->res_used++;
	return i;
}

static int32_t *pend_single(struct ps *ps, struct ps_job *j, int32_t i, int rank)
{
	return j->pend_single + ((size_t)i * j->cfg.nworkers + rank) * ps->o.nvals;
}

static int64_t *pend_msum(struct ps *ps, struct ps_job *j, int32_t i)
{
	return j->pend_msum + (size_t)i * ps->o.nvals;
}

static void pend_drop(struct ps_job *j, int32_t i)
{
	map_del(&j->pend_map, j->pend[i].seq);
	j->pend[i].used = 0;
	j->pend_used--;
}

static int32_t pend_get(struct ps *ps, struct ps_job *j, uint32_t seq, bool create)
{
	int32_t i = map_get(&j->pend_map, seq);
	struct ps_pend *p;

	if (i >= 0 || !create)
		return i;
	/* The ring's next entry is the oldest one allocated. */
	i = j->pend_next;
	j->pend_next = (j->pend_next + 1) % ps->o.pending;
	p = &j->pend[i];
	if (p->used) {
		pend_drop(j, i);
		j->c[PS_C_PENDING_EVICTED]++;
	}
	memset(p, 0, sizeof(*p));
	p->seq = seq;
	p->used = 1;
	p->first_ns = ps->now;
	memset(pend_msum(ps, j, i), 0, ps->o.nvals * sizeof(int64_t));
	map_put(&j->pend_map, seq, i);
	j->pend_used++;
	return i;
}

/* ------------------------------------------------------------------ */
/* Sending                                                             */
/* ------------------------------------------------------------------ */

static void hdr(struct esa_hdr *h, uint8_t type, uint8_t flags, uint16_t job,
		uint64_t bitmap, uint32_t seq, uint16_t count)
{
	esa_hdr_init(h, type, job, ESA_RANK_NONE, bitmap, seq, count);
	h->flags = flags;
}

/* Send result i of job j to the ranks in `to`. */
static void send_result(struct ps *ps, struct ps_job *j, int32_t i, uint64_t to,
			bool answer)
{
	struct ps_result *r = &j->res[i];

	hdr((struct esa_hdr *)ps->txbuf, ESA_T_RESULT, r->flags, j->cfg.id, j->full, r->seq,
	    ps->o.nvals);
	((struct esa_hdr *)ps->txbuf)->reason = r->why;
	memcpy(ps->txbuf + ESA_HDR_LEN, res_vals(ps, j, i), ps->o.nvals * 4);
	for (int k = 0; k < j->cfg.nworkers; k++) {
		if (!(to & (1ULL << k)))
			continue;
		ps->tx(ps->ctx, &j->cfg.ps, &j->cfg.rank[k], ps->txbuf,
		       ESA_HDR_LEN + 4 * ps->o.nvals);
		j->c[PS_C_RESULT_TX]++;
		j->c[PS_C_RESEND_ANSWER] += answer;
	}
}

/*
 * Result i of job j, which every worker needs, to the switch as one SUM:
 * the switch sends it to them (from its address, with our reason).
 */
static void send_sum(struct ps *ps, struct ps_job *j, int32_t i)
{
	struct ps_result *r = &j->res[i];

	hdr((struct esa_hdr *)ps->txbuf, ESA_T_SUM, r->flags, j->cfg.id, j->full, r->seq,
	    ps->o.nvals);
	((struct esa_hdr *)ps->txbuf)->reason = r->why;
	memcpy(ps->txbuf + ESA_HDR_LEN, res_vals(ps, j, i), ps->o.nvals * 4);
	ps->tx(ps->ctx, &j->cfg.ps, &ps->o.sw[0], ps->txbuf, ESA_HDR_LEN + 4 * ps->o.nvals);
	j->c[PS_C_SUM_TX]++;
}

/* Policy atp: the held sum back to the switch, which frees its slot. */
static void send_ack(struct ps *ps, struct ps_job *j, int32_t i)
{
	struct ps_result *r = &j->res[i];

	if (!ps->o.nsw) {
		j->c[PS_C_NO_SWITCH]++;
		return;
	}
	hdr((struct esa_hdr *)ps->txbuf, ESA_T_ACK, r->flags, j->cfg.id, j->full, r->seq,
	    ps->o.nvals);
	memcpy(ps->txbuf + ESA_HDR_LEN, res_vals(ps, j, i), ps->o.nvals * 4);
	ps->tx(ps->ctx, &j->cfg.ps, &ps->o.sw[r->holder], ps->txbuf, ESA_HDR_LEN + 4 * ps->o.nvals);
	r->held = 1;
	j->c[PS_C_ACK_TX]++;
}

/*
 * Ask the ranks in `to` for the result of pending chunk pi.  The bitmap says
 * which ranks' pieces the PS holds: a worker that lacks the result learns
 * whom the chunk waits for (libesa names them when it gives up).
 */
static void send_fetch(struct ps *ps, struct ps_job *j, int32_t pi, uint64_t to)
{
	struct ps_pend *p = &j->pend[pi];

	hdr((struct esa_hdr *)ps->txbuf, ESA_T_FETCH, 0, j->cfg.id,
	    (p->m.multi | p->m.single) & j->full, p->seq, 0);
	p->asked |= to;
	for (int k = 0; k < j->cfg.nworkers; k++) {
		if (!(to & (1ULL << k)))
			continue;
		ps->tx(ps->ctx, &j->cfg.ps, &j->cfg.rank[k], ps->txbuf, ESA_HDR_LEN);
		j->c[PS_C_FETCH_TX]++;
	}
}

/*
 * The chunk's answer is known: keep it, forget its pieces, tell `to`; why:
 * the reason of the piece that finished it (its others' are in the pending
 * entry), echoed to the workers.
 */
static int32_t finish(struct ps *ps, struct ps_job *j, uint32_t seq, uint8_t flags,
		      const int32_t *v, uint64_t to, uint8_t why)
{
	int32_t p = map_get(&j->pend_map, seq), i;
	uint64_t asked = 0;

	if (p >= 0) {
		uint64_t ns = ps->now - j->pend[p].first_ns;

		j->t_hist[esa_hist_bucket(ns / 1000, PS_T_BUCKETS)]++;
		j->t_sum_ns += ns;
		asked = j->pend[p].asked;
		why = esa_reason_max(j->pend[p].why, why);
		pend_drop(j, p);
	}
	i = res_put(ps, j, seq, flags, v);
	j->res[i].asked = asked;
	j->res[i].why = why;
	if (flags & ESA_F_OVERFLOW)
		j->c[PS_C_DONE_OVERFLOW]++;
	if (to == j->full && ps->o.sums_via_switch && ps->o.nsw == 1)
		send_sum(ps, j, i);
	else if (to)
		send_result(ps, j, i, to, false);
	return i;
}

/* ------------------------------------------------------------------ */
/* The merge rule                                                      */
/* ------------------------------------------------------------------ */

/* Complete when kept partials and singles cover every rank. */
static void try_complete(struct ps *ps, struct ps_job *j, int32_t pi)
{
	struct ps_pend *p = &j->pend[pi];
	const int64_t *msum = pend_msum(ps, j, pi);
	uint64_t own = esa_merge_own(&p->m);
	int32_t out[ESA_MAX_VALUES];
	bool ovf = false;
	int nv = ps->o.nvals;

	if (!esa_merge_complete(&p->m, j->full))
		return;
	for (int i = 0; i < nv; i++)
		ps->sum[i] = msum[i];
	for (int r = 0; r < j->cfg.nworkers; r++) {
		const int32_t *s;

		if (!(own & (1ULL << r)))
			continue;
		s = pend_single(ps, j, pi, r);
		for (int i = 0; i < nv; i++)
			ps->sum[i] += s[i];
	}
	for (int i = 0; i < nv; i++) {
		if (ps->sum[i] > INT32_MAX || ps->sum[i] < INT32_MIN)
			ovf = true;
		out[i] = (int32_t)ps->sum[i];
	}
	j->c[PS_C_DONE_MERGED]++;
	finish(ps, j, p->seq, ovf ? ESA_F_OVERFLOW : 0, out, j->full, 0);
}

static void add_single(struct ps *ps, struct ps_job *j, int32_t pi, int rank,
		       const int32_t *v)
{
	struct ps_pend *p = &j->pend[pi];

	if (esa_merge_add(&p->m, 1ULL << rank, false) != ESA_MERGE_KEPT) {
		j->c[PS_C_DUP_SINGLE]++;
		return;
	}
	memcpy(pend_single(ps, j, pi, rank), v, ps->o.nvals * 4);
}

static void add_multi(struct ps *ps, struct ps_job *j, int32_t pi, uint64_t bitmap,
		      const int32_t *v)
{
	struct ps_pend *p = &j->pend[pi];
	int64_t *msum = pend_msum(ps, j, pi);

	if (esa_merge_add(&p->m, bitmap, true) != ESA_MERGE_KEPT) {
		j->c[PS_C_OVERLAP]++;	/* would count a rank twice */
		return;
	}
	for (int i = 0; i < ps->o.nvals; i++)
		msum[i] += v[i];
}

/* ------------------------------------------------------------------ */
/* Receiving                                                           */
/* ------------------------------------------------------------------ */

/*
 * Which switch (o.sw[]) src is, or -1: where PARTIAL, COLLISION and
 * RESULT come from.
 */
static int switch_of(const struct ps *ps, const struct sockaddr_in *src)
{
	for (int i = 0; i < ps->o.nsw && i < PS_MAX_SWITCHES; i++)
		if (src->sin_addr.s_addr == ps->o.sw[i].sin_addr.s_addr &&
		    src->sin_port == ps->o.sw[i].sin_port)
			return i;
	return -1;
}

/* Rank `rank`'s registered address and port. */
static bool from_rank(const struct ps_job *j, uint16_t rank,
		      const struct sockaddr_in *src)
{
	const struct sockaddr_in *r;

	if (rank >= j->cfg.nworkers)
		return false;
	r = &j->cfg.rank[rank];
	return src->sin_addr.s_addr == r->sin_addr.s_addr && src->sin_port == r->sin_port;
}

static bool reason_ok(uint8_t type, uint8_t reason, uint64_t bitmap, uint64_t full)
{
	switch (type) {
	case ESA_T_RESULT:
		return reason == ESA_R_NONE || reason == ESA_R_HOLD;
	case ESA_T_PARTIAL:
		if (reason == ESA_R_DELIVER)
			return bitmap == full;
		/* and a leaf's sum that a spine did not add (two levels) */
		return reason == ESA_R_PREEMPT || reason == ESA_R_FLUSH ||
		       reason == ESA_R_AGED || reason == ESA_R_COLLISION ||
		       reason == ESA_R_TOMB || reason == ESA_R_NOSLOT;
	case ESA_T_COLLISION:
		return reason == ESA_R_COLLISION || reason == ESA_R_TOMB ||
		       reason == ESA_R_RESEND || reason == ESA_R_NOSLOT ||
		       reason == ESA_R_DONE;
	}
	return false;
}

static bool is_resend(const struct esa_hdr *h)
{
	return (h->flags & ESA_F_RESEND) || h->reason == ESA_R_RESEND ||
	       h->reason == ESA_R_DONE;
}

/* A single rank's chunk, through the switch (it collided, or came late). */
static void rx_collision(struct ps *ps, struct ps_job *j, const struct esa_hdr *h,
			 const int32_t *v, uint64_t now_ns)
{
	uint16_t rank = ntohs(h->rank);
	uint32_t seq = ntohl(h->seq);
	uint64_t bit = 1ULL << rank;
	struct ps_pend *p;
	int32_t ri, pi;

	j->c[PS_C_RX_COLLISION]++;
	ri = map_get(&j->res_map, seq);
	if (ri >= 0) {
		if (is_resend(h)) {
			send_result(ps, j, ri, bit, true);
			if (j->res[ri].held)
				send_ack(ps, j, ri);	/* the ack may be lost */
		} else {
			j->c[PS_C_LATE]++;
		}
		return;
	}
	pi = pend_get(ps, j, seq, true);
	j->pend[pi].why = esa_reason_max(j->pend[pi].why, h->reason);
	add_single(ps, j, pi, rank, v);
	if (is_resend(h)) {
		p = &j->pend[pi];
		if (p->resent & bit)
			p->resent2 |= bit;
		p->resent |= bit;
	}
	try_complete(ps, j, pi);
	pi = map_get(&j->pend_map, seq);
	if (pi < 0)
		return;
	p = &j->pend[pi];
	if (((p->resent2 & bit) || h->reason == ESA_R_DONE) &&
	    now_ns - p->fetch_ns >= ps->o.fetch_gap_ms * 1000000ULL) {
		/*
		 * Second resend and still no sum: maybe the switch finished it
		 * and our copy was lost.  The switch says so (DONE) when it
		 * did: then at the first (it sends us no copies, or ours was
		 * lost).  Ask the ranks that did not resend; and tell this one
		 * which ranks we hold (a rank may be gone).
		 */
		p->fetch_ns = now_ns;
		send_fetch(ps, j, pi, (j->full & ~p->resent) | bit);
	}
}

/* A worker's RESULT: its answer to a FETCH we sent it for that chunk. */
static void rx_fetched(struct ps *ps, struct ps_job *j, const struct esa_hdr *h,
		       const int32_t *v)
{
	uint16_t rank = ntohs(h->rank);
	uint32_t seq = ntohl(h->seq);
	uint64_t bit = 1ULL << rank;
	int32_t ri, pi;

	if (rank >= j->cfg.nworkers || be64toh(h->bitmap) != j->full || h->reason) {
		j->c[PS_C_DROP_HEADER]++;
		return;
	}
	ri = map_get(&j->res_map, seq);
	pi = ri < 0 ? map_get(&j->pend_map, seq) : -1;
	if (!((ri >= 0 ? j->res[ri].asked : pi >= 0 ? j->pend[pi].asked : 0) & bit)) {
		j->c[PS_C_DROP_UNASKED]++;
		return;
	}
	j->c[PS_C_RX_FETCHED]++;
	if (ri >= 0) {
		j->c[PS_C_DUP_RESULT]++;	/* another rank answered first */
		return;
	}
	j->c[PS_C_DONE_FETCHED]++;
	/* to those that asked, else to everyone but the one who had it */
	finish(ps, j, seq, h->flags, v,
	       j->pend[pi].resent ? j->pend[pi].resent : j->full & ~bit, 0);
}

/*
 * Switch sw's RESULT: its copy of a sum it completed (atp: HOLD it, and
 * ack it to sw, the top of the job's tree).
 */
static void rx_result(struct ps *ps, struct ps_job *j, const struct esa_hdr *h,
		      const int32_t *v, int sw)
{
	uint32_t seq = ntohl(h->seq);
	int32_t ri;

	if (be64toh(h->bitmap) != j->full) {
		j->c[PS_C_DROP_HEADER]++;
		return;
	}
	ri = map_get(&j->res_map, seq);
	if (h->reason == ESA_R_HOLD) {
		j->c[PS_C_RX_HOLD]++;
		if (ri < 0) {
			j->c[PS_C_DONE_SWITCH]++;
			ri = finish(ps, j, seq, h->flags, v, 0, 0);
		} else {
			j->c[PS_C_DUP_RESULT]++;
		}
		j->res[ri].holder = sw;
		send_ack(ps, j, ri);
		return;
	}
	j->c[PS_C_RX_RESULT]++;
	if (ri >= 0) {
		j->c[PS_C_DUP_RESULT]++;
		return;
	}
	j->c[PS_C_DONE_SWITCH]++;
	finish(ps, j, seq, h->flags, v, 0, 0);	/* the workers have it */
}

/* A partial sum the switch evicted, flushed, aged or could not deliver. */
static void rx_partial(struct ps *ps, struct ps_job *j, const struct esa_hdr *h,
		       const int32_t *v)
{
	uint64_t bitmap = be64toh(h->bitmap);
	uint32_t seq = ntohl(h->seq);
	int32_t ri, pi;

	j->c[PS_C_RX_PARTIAL]++;
	ri = map_get(&j->res_map, seq);
	if (ri >= 0) {
		/* the switch could not deliver our SUM (or its own sum, which
		 * we finished too): to each worker, here */
		if (h->reason == ESA_R_DELIVER)
			send_result(ps, j, ri, j->full, false);
		else if (h->reason == ESA_R_FLUSH)
			send_result(ps, j, ri, bitmap, true);	/* its ranks asked */
		else
			j->c[PS_C_LATE]++;
		return;
	}
	if (h->flags & ESA_F_OVERFLOW) {
		/* This piece has no representable sum: the workers redo. */
		finish(ps, j, seq, ESA_F_OVERFLOW, v, j->full, h->reason);
		return;
	}
	if (bitmap == j->full && h->reason == ESA_R_DELIVER) {
		/* the switch could not deliver it: to each worker, here */
		j->c[PS_C_DONE_DELIVER]++;
		ri = finish(ps, j, seq, 0, v, 0, h->reason);
		send_result(ps, j, ri, j->full, false);
		return;
	}
	if (bitmap == j->full) {
		j->c[PS_C_DONE_MERGED]++;
		finish(ps, j, seq, 0, v, j->full, h->reason);
		return;
	}
	pi = pend_get(ps, j, seq, true);
	j->pend[pi].why = esa_reason_max(j->pend[pi].why, h->reason);
	if (bitmap & (bitmap - 1))
		add_multi(ps, j, pi, bitmap, v);
	else
		add_single(ps, j, pi, __builtin_ctzll(bitmap), v);
	try_complete(ps, j, pi);
}

/* The header of a packet of job j: its drop counter, or -1 if well formed. */
static int bad_header(const struct ps *ps, const struct ps_job *j, const struct esa_hdr *h,
		      size_t len)
{
	uint64_t bitmap = be64toh(h->bitmap);

	if (h->type != ESA_T_RESULT && h->type != ESA_T_PARTIAL &&
	    h->type != ESA_T_COLLISION)
		return PS_C_DROP_TYPE;
	if (len != ESA_HDR_LEN + 4 * (size_t)ps->o.nvals || ntohs(h->count) != ps->o.nvals)
		return PS_C_DROP_COUNT;
	if ((h->flags & ~ESA_F_MASK) || h->resv || !bitmap || (bitmap & ~j->full) ||
	    !reason_ok(h->type, h->reason, bitmap, j->full))
		return PS_C_DROP_HEADER;
	return -1;
}

void ps_rx(struct ps *ps, const uint8_t *buf, size_t len, const struct sockaddr_in *src,
	   uint64_t now_ns)
{
	const struct esa_hdr *h = (const struct esa_hdr *)buf;
	int32_t copy[ESA_MAX_VALUES];
	const int32_t *vals;
	struct ps_job *j;
	uint16_t rank;
	int idx, bad, sw;

	ps->now = now_ns;
	if (len < ESA_HDR_LEN || h->version != ESA_VERSION || !ps->by_id[ntohs(h->job)]) {
		ps->nojob[PS_C_RX]++;
		ps->nojob[!len ? PS_C_RX_PROBE :	/* a worker checks that we run */
			  len < ESA_HDR_LEN ? PS_C_DROP_SHORT :
			  h->version != ESA_VERSION ? PS_C_DROP_VERSION : PS_C_DROP_JOB]++;
		return;
	}
	idx = ps->by_id[ntohs(h->job)];
	j = ps->jobs[idx - 1];
	j->c[PS_C_RX]++;
	bad = bad_header(ps, j, h, len);
	if (bad >= 0) {
		j->c[bad]++;
		return;
	}
	/*
	 * Collisions, partials and the switch's results come from the switch
	 * alone (it checked each rank's packets against its registration);
	 * only a worker answering a FETCH sends a RESULT with its rank, from
	 * its registered address and port.
	 */
	rank = ntohs(h->rank);
	sw = src && src->sin_family == AF_INET ? switch_of(ps, src) : -1;
	if (!src || src->sin_family != AF_INET ||
	    (rank == ESA_RANK_NONE || h->type != ESA_T_RESULT ? sw < 0 :
								 !from_rank(j, rank, src))) {
		j->c[PS_C_DROP_SOURCE]++;
		return;
	}
	/* Read in place where aligned (a receive buffer, an AF_XDP frame), else
	 * from a copy: every packet's values would otherwise be copied twice. */
	if ((uintptr_t)(buf + ESA_HDR_LEN) % _Alignof(int32_t)) {
		memcpy(copy, buf + ESA_HDR_LEN, ps->o.nvals * 4);
		vals = copy;
	} else {
		vals = (const int32_t *)(buf + ESA_HDR_LEN);
	}
	if (h->type == ESA_T_COLLISION) {
		/* One rank's own chunk, unaltered. */
		if (rank >= j->cfg.nworkers || be64toh(h->bitmap) != 1ULL << rank ||
		    (h->flags & ESA_F_OVERFLOW)) {
			j->c[PS_C_DROP_HEADER]++;
			return;
		}
		rx_collision(ps, j, h, vals, now_ns);
	} else if (rank != ESA_RANK_NONE) {
		rx_fetched(ps, j, h, vals);
	} else if (h->type == ESA_T_RESULT) {
		rx_result(ps, j, h, vals, sw);
	} else {
		rx_partial(ps, j, h, vals);
	}
}

/* ------------------------------------------------------------------ */
/* Introspection                                                       */
/* ------------------------------------------------------------------ */

void ps_note(struct ps *ps, int c)
{
	if (c >= 0 && c < __PS_C_MAX)
		ps->nojob[c]++;
}

uint64_t ps_counter(const struct ps *ps, int i, int c)
{
	uint64_t t;

	if (c < 0 || c >= __PS_C_MAX)
		return 0;
	if (i >= 0)
		return i < ps->njobs ? ps->jobs[i]->c[c] : 0;
	if (i == -1)
		return ps->nojob[c];
	t = ps->nojob[c] + ps->ended[c];
	for (int k = 0; k < ps->njobs; k++)
		t += ps->jobs[k]->c[c];
	return t;
}

uint64_t ps_chunk_times(const struct ps *ps, int i, uint64_t hist[PS_T_BUCKETS])
{
	if (i < 0 || i >= ps->njobs)
		return 0;
	memcpy(hist, ps->jobs[i]->t_hist, sizeof(ps->jobs[i]->t_hist));
	return ps->jobs[i]->t_sum_ns;
}

uint32_t ps_cached(const struct ps *ps, int i)
{
	return i >= 0 && i < ps->njobs ? ps->jobs[i]->res_used : 0;
}

uint32_t ps_pending(const struct ps *ps, int i)
{
	return i >= 0 && i < ps->njobs ? ps->jobs[i]->pend_used : 0;
}

int ps_lookup(const struct ps *ps, int i, uint32_t seq, int32_t *vals, uint8_t *flags)
{
	struct ps_job *j;
	int32_t ri;

	if (i < 0 || i >= ps->njobs)
		return 0;
	j = ps->jobs[i];
	ri = map_get(&j->res_map, seq);
	if (ri < 0)
		return 0;
	if (vals)
		memcpy(vals, j->res_vals + (size_t)ri * ps->o.nvals, ps->o.nvals * 4);
	if (flags)
		*flags = j->res[ri].flags;
	return 1;
}

static void print_row(FILE *f, const uint64_t *c, bool json)
{
	bool first = true;

	for (int k = 0; k < __PS_C_MAX; k++) {
		if (json) {
			fprintf(f, "%s\"%s\":%llu", first ? "" : ",", ps_counter_names[k],
				(unsigned long long)c[k]);
		} else if (c[k]) {
			fprintf(f, " %s %llu", ps_counter_names[k], (unsigned long long)c[k]);
		}
		first = false;
	}
}

void ps_print_stats(const struct ps *ps, FILE *f, bool json)
{
	uint64_t tot[__PS_C_MAX];

	for (int k = 0; k < __PS_C_MAX; k++)
		tot[k] = ps_counter(ps, -2, k);
	if (json) {
		fprintf(f, "{\"total\":{");
		print_row(f, tot, true);
		fprintf(f, "},\"nojob\":{");
		print_row(f, ps->nojob, true);
		fprintf(f, "},\"jobs\":[");
		for (int i = 0; i < ps->njobs; i++) {
			fprintf(f, "%s{\"job\":%u,\"cached\":%u,\"pending\":%u,", i ? "," : "",
				ps->jobs[i]->cfg.id, ps->jobs[i]->res_used,
				ps->jobs[i]->pend_used);
			print_row(f, ps->jobs[i]->c, true);
			fprintf(f, ",\"chunk_ns_sum\":%llu,\"chunk_hist\":[",
				(unsigned long long)ps->jobs[i]->t_sum_ns);
			for (int b = 0; b < PS_T_BUCKETS; b++)
				fprintf(f, "%s%llu", b ? "," : "",
					(unsigned long long)ps->jobs[i]->t_hist[b]);
			fprintf(f, "]}");
		}
		fprintf(f, "]}\n");
	} else {
		fprintf(f, "total:");
		print_row(f, tot, false);
		fprintf(f, "\n");
		for (int i = 0; i < ps->njobs; i++) {
			fprintf(f, "job %u: cached %u pending %u", ps->jobs[i]->cfg.id,
				ps->jobs[i]->res_used, ps->jobs[i]->pend_used);
			print_row(f, ps->jobs[i]->c, false);
			fprintf(f, "\n");
		}
	}
	fflush(f);
}
