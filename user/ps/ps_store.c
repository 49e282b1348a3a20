// SPDX-License-Identifier: GPL-2.0
/*
 * What the PS keeps of a job (ps_int.h): its results, to answer resends,
 * and its unfinished chunks, each in a ring of fixed size evicted oldest
 * first, found by sequence number through an open-addressing map.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ps_int.h"

int ps_map_init(struct ps_map *m, uint32_t n)
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

void ps_map_free(struct ps_map *m)
{
	free(m->key);
	free(m->val);
}

static uint32_t map_hash(uint32_t k)
{
	return esa_hash32(k);
}

int32_t ps_map_get(const struct ps_map *m, uint32_t k)
{
	for (uint32_t i = map_hash(k) & m->mask;; i = (i + 1) & m->mask) {
		if (m->val[i] < 0)
			return -1;
		if (m->key[i] == k)
			return m->val[i];
	}
}

void ps_map_put(struct ps_map *m, uint32_t k, int32_t v)
{
	uint32_t i;

	for (i = map_hash(k) & m->mask; m->val[i] >= 0 && m->key[i] != k; i = (i + 1) & m->mask)
		;
	m->key[i] = k;
	m->val[i] = v;
}

/* Remove k; shift back the entries after it that probed past it. */
void ps_map_del(struct ps_map *m, uint32_t k)
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

int32_t *ps_res_vals(struct ps *ps, struct ps_job *j, int32_t i)
{
	return j->res_vals + (size_t)i * ps->o.nvals;
}

/* Keep a result; returns its index. */
int32_t ps_res_put(struct ps *ps, struct ps_job *j, uint32_t seq, uint8_t flags,
		   const int32_t *v)
{
	int32_t i = j->res_next;
	struct ps_result *r = &j->res[i];

	if (r->used) {
		ps_map_del(&j->res_map, r->seq);
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
		memset(ps_res_vals(ps, j, i), 0, ps->o.nvals * 4);	/* never used */
	else
		memcpy(ps_res_vals(ps, j, i), v, ps->o.nvals * 4);
	ps_map_put(&j->res_map, seq, i);
	j->res_used++;
	return i;
}

int32_t *ps_pend_single(struct ps *ps, struct ps_job *j, int32_t i, int rank)
{
	return j->pend_single + ((size_t)i * j->cfg.nworkers + rank) * ps->o.nvals;
}

int64_t *ps_pend_msum(struct ps *ps, struct ps_job *j, int32_t i)
{
	return j->pend_msum + (size_t)i * ps->o.nvals;
}

void ps_pend_drop(struct ps_job *j, int32_t i)
{
	ps_map_del(&j->pend_map, j->pend[i].seq);
	j->pend[i].used = 0;
	j->pend_used--;
}

int32_t ps_pend_get(struct ps *ps, struct ps_job *j, uint32_t seq, bool create)
{
	int32_t i = ps_map_get(&j->pend_map, seq);
	struct ps_pend *p;

	if (i >= 0 || !create)
		return i;
	/* The ring's next entry is the oldest one allocated. */
	i = j->pend_next;
	j->pend_next = (j->pend_next + 1) % ps->o.pending;
	p = &j->pend[i];
	if (p->used) {
		ps_pend_drop(j, i);
		j->c[PS_C_PENDING_EVICTED]++;
	}
	memset(p, 0, sizeof(*p));
	p->seq = seq;
	p->used = 1;
	p->first_ns = ps->now;
	memset(ps_pend_msum(ps, j, i), 0, ps->o.nvals * sizeof(int64_t));
	ps_map_put(&j->pend_map, seq, i);
	j->pend_used++;
	return i;
}
