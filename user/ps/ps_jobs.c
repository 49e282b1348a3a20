// SPDX-License-Identifier: GPL-2.0
/*
 * The PS's options, its life and its jobs (ps_int.h): a job's memory,
 * bounded by the options' cache and pending, taken when it is added and
 * freed when it goes, its counters then kept in the total.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "ps_int.h"
#include "words.h"

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
	ps_map_free(&j->res_map);
	free(j->pend);
	free(j->pend_msum);
	free(j->pend_single);
	ps_map_free(&j->pend_map);
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

/*
 * Every result of a job goes into its store, a ring that each allreduce's
 * results walk through: touch its pages now, at registration, or the first
 * pass over them (cache x nvals x 4 bytes, 14 MB by default) takes a page
 * fault and a zeroed page every 4 KB inside the job's first allreduces.
 */
static void prefault(void *p, size_t n)
{
	volatile char *b = p;

	for (size_t i = 0; i < n; i += 4096)
		b[i] = 0;
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
	    ps_map_init(&j->res_map, ps->o.cache) || ps_map_init(&j->pend_map, ps->o.pending))
		goto nomem;
	prefault(j->res_vals, (size_t)ps->o.cache * nv * sizeof(int32_t));
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
