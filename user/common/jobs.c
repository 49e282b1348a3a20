// SPDX-License-Identifier: GPL-2.0
/*
 * Jobs in the switch's esa_jobs map: the registry when esa.ko is not
 * loaded.  The map is mmap()ed (loader.c); the data path reads an entry
 * while it is written, so every change writes only its own fields, an
 * added job's state last, and moves the generation by compare-and-swap of
 * the `life` word the data path also changes (include/esa_maps.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include "loader.h"
#include "esa_policy.h"

#define ERR(...)	esa_fail(err, len, -1, __VA_ARGS__)

__u64 esa_now_ns(void)
{
	struct timespec ts;

	/* The data path stamps with bpf_ktime_get_coarse_ns(): same clock. */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static __u32 esa_now_ms(void)
{
	return (__u32)(esa_now_ns() / 1000000);
}

__u32 esa_job_gen(const struct esa_job *j)
{
	return esa_life_gen(j->life);
}

__u32 esa_job_idle_ms(const struct esa_job *j)
{
	__s32 d = (__s32)(esa_now_ms() - esa_life_ms(j->life));

	return d < 0 ? 0 : (__u32)d;
}

int esa_job_expired(const struct esa_job *j)
{
	return j->state == ESA_JOB_ACTIVE &&
	       esa_lease_over_ms(j->lease_ms, j->life, esa_now_ms());
}

bool esa_job_two_levels(const struct esa_job *j)
{
	if (j->up.ip || j->mask)
		return true;
	for (int r = 0; r < ESA_MAX_WORKERS; r++)
		if (j->set[r])
			return true;
	return false;
}

bool esa_job_spine(const struct esa_job *j)
{
	for (int r = 0; r < ESA_MAX_WORKERS; r++)
		if (j->set[r])
			return true;
	return false;
}

__u64 esa_job_mask(const struct esa_job *j)
{
	__u64 m = 0;

	for (int r = 0; r < j->nworkers; r++)
		if (esa_job_member(j, r))
			m |= esa_member_set(j, r);
	return m;
}

/*
 * A leaf member's ranks (two levels, at the spine) are within the job, the
 * member's own rank is the lowest of them, and no two members share one.
 */
static int esa_sets_check(const struct esa_job *j, char *err, size_t len)
{
	__u64 seen = 0, set;

	for (int r = 0; r < j->nworkers; r++) {
		if (!esa_job_member(j, r)) {
			if (j->set[r])
				return ERR("rank %d has ranks but no address", r);
			continue;
		}
		set = esa_member_set(j, r);
		if (set & ~esa_full_mask(j->nworkers))
			return ERR("the leaf at rank %d has ranks beyond the job's %u",
				   r, j->nworkers);
		if (esa_lowest_rank(set) != (__u32)r)
			return ERR("the leaf at rank %d must be listed at its lowest rank, %u",
				   r, esa_lowest_rank(set));
		if (seen & set)
			return ERR("ranks under two members (rank %d's overlap another's)", r);
		seen |= set;
	}
	if (!seen)
		return ERR("a job needs at least one member here");
	if (j->mask && j->mask != seen)
		return ERR("the job's mask 0x%llx is not its members' ranks 0x%llx",
			   (unsigned long long)j->mask, (unsigned long long)seen);
	if (!j->up.ip && seen != esa_full_mask(j->nworkers))
		return ERR("ranks not under this box need an upstream (upstream ADDR)");
	return 0;
}

static int esa_ranks_check(const struct esa_job *j, char *err, size_t len)
{
	char a[INET_ADDRSTRLEN];

	for (int r = 0; r < j->nworkers; r++) {
		const struct esa_addr *x = &j->rank[r];

		if (!x->ip)
			continue;
		for (int q = 0; q < r; q++) {
			const struct esa_addr *y = &j->rank[q];

			if (y->ip && x->ip == y->ip &&
			    (!x->port || !y->port || x->port == y->port))
				return ERR("ranks %d and %d share address %s:%u", q, r,
					   inet_ntop(AF_INET, &x->ip, a, sizeof(a)),
					   ntohs(x->port));
		}
	}
	return esa_sets_check(j, err, len);
}

static int esa_region_check(const struct esa_cfg *cfg, const struct esa_job *j,
			    char *err, size_t len)
{
	if (cfg->policy == ESA_POLICY_SWITCHML) {
		/* without a region the job has no switch memory: all to its PS */
		if (j->region_size && (j->region_base >= cfg->slots ||
		    j->region_size > cfg->slots - j->region_base))
			return ERR("region %u+%u exceeds the pool of %u slots",
				   j->region_base, j->region_size, cfg->slots);
	} else if (j->region_size) {
		/* a home on the shared pool: it may wrap, and overlap others */
		if (j->region_base >= cfg->slots || j->region_size > cfg->slots)
			return ERR("home %u+%u does not fit the pool of %u slots",
				   j->region_base, j->region_size, cfg->slots);
	} else if (j->region_base) {
		return ERR("a region needs a size (region BASE SIZE)");
	}
	return 0;
}

int esa_job_check(const struct esa_cfg *cfg, __u32 id, const struct esa_job *j,
		  char *err, size_t len)
{
	if (id >= cfg->max_jobs)
		return ERR("job id %u out of range (0..%u)", id, cfg->max_jobs - 1);
	if (j->nworkers < 1 || j->nworkers > ESA_MAX_WORKERS)
		return ERR("a job has 1 to %d workers, not %u", ESA_MAX_WORKERS,
			   j->nworkers);
	if (!j->ps.ip || !j->ps.port)
		return ERR("the PS needs an address and a port");
	if (j->lease_ms && (j->lease_ms < ESA_LEASE_MS_MIN ||
			    j->lease_ms > ESA_LEASE_MS_MAX))
		return ERR("a lease is 0 (none) or %u to %u ms, not %u",
			   ESA_LEASE_MS_MIN, ESA_LEASE_MS_MAX, j->lease_ms);
	/* a spine sees no resends: only ageing frees a leaf's sum the PS
	 * finished (docs/design.md, "Two levels") */
	if (!cfg->stale_ms && esa_job_spine(j))
		return ERR("a spine's job needs ageing, and the program was loaded with stale 0 (esactl prog load ... stale MS)");
	return esa_ranks_check(j, err, len) ?: esa_region_check(cfg, j, err, len);
}

int esa_job_read(struct esa *e, __u32 id, struct esa_job *j)
{
	if (id >= e->cfg.max_jobs || !e->jobs)
		return -ERANGE;
	memcpy(j, &e->jobs[id], sizeof(*j));
	j->life = __atomic_load_n(&e->jobs[id].life, __ATOMIC_RELAXED);
	return 0;
}

/* A new generation (and an activity stamp); returns the new generation. */
static __u32 esa_job_bump(struct esa_job *m)
{
	__u64 life = __atomic_load_n(&m->life, __ATOMIC_RELAXED), next, old;

	/* a loser bumps the winner's word: no bump undoes another */
	for (;; life = old) {
		next = ESA_LIFE(esa_life_gen(life) + 1, esa_now_ms());
		old = esa_life_cas(&m->life, life, next);
		if (old == life)
			return esa_life_gen(next);
	}
}

static int esa_regions_overlap(struct esa *e, __u32 id, const struct esa_job *j,
			       char *err, size_t len)
{
	for (__u32 k = 0; k < e->cfg.max_jobs; k++) {
		const struct esa_job *o = &e->jobs[k];

		if (k == id || o->state != ESA_JOB_ACTIVE)
			continue;
		if (j->region_base < o->region_base + o->region_size &&
		    o->region_base < j->region_base + j->region_size)
			return esa_fail(err, len, -EBUSY,
					"region %u+%u overlaps job %u's region %u+%u",
					j->region_base, j->region_size, k,
					o->region_base, o->region_size);
	}
	return 0;
}

int esa_job_add(struct esa *e, __u32 id, struct esa_job *j, char *err,
		size_t len)
{
	struct esa_job *m;
	__u32 reg;
	int rc;

	if (esa_job_check(&e->cfg, id, j, err, len))
		return -EINVAL;
	m = &e->jobs[id];
	if (__atomic_load_n(&m->state, __ATOMIC_ACQUIRE) == ESA_JOB_ACTIVE)
		return esa_fail(err, len, -EEXIST, "job %u exists", id);
	if (e->cfg.policy == ESA_POLICY_SWITCHML) {
		rc = esa_regions_overlap(e, id, j, err, len);
		if (rc)
			return rc;
	}
	/*
	 * Inactive, nothing in the data path writes the entry, but a packet
	 * that found it active before the delete may still be reading it:
	 * clear the registration first, which tells such a packet the entry
	 * changed under it (esa_admit(), bpf/esa_jobs.bpf.h); fill it, open a
	 * new generation (which frees whatever slots an earlier job with this
	 * id still held) as the new registration, then flip the state.
	 */
	__atomic_store_n(&m->reg, 0, __ATOMIC_RELEASE);
	m->nworkers = j->nworkers;
	m->max_prio = j->max_prio;
	m->flags = j->flags;
	m->ps = j->ps;
	m->lease_ms = j->lease_ms;
	m->region_base = j->region_base;
	m->region_size = j->region_size;
	memcpy(m->rank, j->rank, sizeof(m->rank));
	memcpy(m->set, j->set, sizeof(m->set));
	m->mask = esa_job_mask(j);
	m->up = j->up;
	do	/* 0 means "being written" */
		reg = esa_job_bump(m);
	while (!reg);
	__atomic_store_n(&m->reg, reg, __ATOMIC_RELEASE);
	__atomic_store_n(&m->state, ESA_JOB_ACTIVE, __ATOMIC_RELEASE);
	j->reg = m->reg;
	j->life = __atomic_load_n(&m->life, __ATOMIC_RELAXED);
	j->state = ESA_JOB_ACTIVE;
	return 0;
}

/* The entry of job id if it is active: NULL with *rc -ERANGE or -ENOENT. */
static struct esa_job *esa_job_active(struct esa *e, __u32 id, int *rc)
{
	if (id >= e->cfg.max_jobs || !e->jobs) {
		*rc = -ERANGE;
		return NULL;
	}
	*rc = -ENOENT;
	return __atomic_load_n(&e->jobs[id].state, __ATOMIC_ACQUIRE) ==
	       ESA_JOB_ACTIVE ? &e->jobs[id] : NULL;
}

int esa_job_set_prio(struct esa *e, __u32 id, __u8 max_prio)
{
	struct esa_job *m;
	int rc;

	m = esa_job_active(e, id, &rc);
	if (!m)
		return rc;
	__atomic_store_n(&m->max_prio, max_prio, __ATOMIC_RELAXED);
	return 0;
}

/*
 * Give an active job another region in place: the base first, while the
 * size is 0 (no switch memory), then the size, so that a packet racing
 * with the change sees either no region or the whole new one.
 */
int esa_job_set_region(struct esa *e, __u32 id, __u32 base, __u32 size)
{
	struct esa_job *m;
	int rc;

	m = esa_job_active(e, id, &rc);
	if (!m)
		return rc;
	__atomic_store_n(&m->region_size, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&m->region_base, base, __ATOMIC_RELEASE);
	__atomic_store_n(&m->region_size, size, __ATOMIC_RELEASE);
	return 0;
}

/* A new generation frees every slot of the old one. */
int esa_job_del(struct esa *e, __u32 id)
{
	struct esa_job *m;
	int rc;

	m = esa_job_active(e, id, &rc);
	if (!m)
		return rc;
	__atomic_store_n(&m->state, ESA_JOB_DELETED, __ATOMIC_RELEASE);
	esa_job_bump(m);
	return 0;
}
