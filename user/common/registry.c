// SPDX-License-Identifier: GPL-2.0
/*
 * The job registry, maps or esa.ko behind one API (registry.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"
#include "esa_policy.h"

static int esa_reg_fail(struct esa_registry *r, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int esa_reg_fail(struct esa_registry *r, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	return rc;
}

int esa_registry_open(struct esa_registry *r, const char *pin_dir)
{
	int rc;

	memset(r, 0, sizeof(*r));
	r->e = &r->own;
	r->maps = !esa_open_pinned(r->e, pin_dir, r->err, sizeof(r->err));
	if (r->maps && !r->e->cfg.kfunc)
		return 0;
	rc = esa_nl_open(&r->nl);
	if (!rc)
		return 0;
	if (r->maps) {
		esa_close(r->e);
		r->maps = false;
		return esa_reg_fail(r, rc, "the loaded program reads jobs from esa.ko, which is not loaded: %s",
				    strerror(-rc));
	}
	if (rc == -ENOENT) {
		char why[ESA_ERR_LEN];

		snprintf(why, sizeof(why), "%s", r->err);
		return esa_reg_fail(r, rc, "%.200s; esa.ko is not loaded either", why);
	}
	return esa_reg_fail(r, rc, "cannot talk to esa.ko: %s", strerror(-rc));
}

void esa_registry_wrap(struct esa_registry *r, struct esa *e)
{
	memset(r, 0, sizeof(*r));
	r->e = e;
	r->maps = true;
}

void esa_registry_close(struct esa_registry *r)
{
	if (r->maps && r->e == &r->own)
		esa_close(r->e);
	if (r->nl)
		esa_nl_close(r->nl);
	r->maps = false;
	r->nl = NULL;
}

const char *esa_registry_name(const struct esa_registry *r)
{
	return r->nl ? "esa.ko (netlink)" : "BPF maps (esactl)";
}

/* A netlink failure of what on job id, in words: the kernel's when given. */
static int esa_nl_fail(struct esa_registry *r, int rc, const char *what, __u32 id)
{
	const char *why = esa_nl_error(r->nl);

	if (rc == -ENOENT)
		return esa_reg_fail(r, rc, "job %u does not exist", id);
	if (rc == -EEXIST)
		return esa_reg_fail(r, rc, "job %u exists", id);
	if (rc == -EPERM)
		return esa_reg_fail(r, rc, "%s job %u: permission denied (needs CAP_NET_ADMIN)",
				    what, id);
	return esa_reg_fail(r, rc, "%s job %u: %s", what, id,
			    why && *why ? why : strerror(-rc));
}

/* A failure of the maps on job id, in words. */
static int esa_map_fail(struct esa_registry *r, int rc, __u32 id)
{
	if (rc == -ENOENT)
		return esa_reg_fail(r, rc, "job %u does not exist", id);
	if (rc == -ERANGE)
		return esa_reg_fail(r, rc, "job id %u out of range (0..%u)", id,
				    r->e->cfg.max_jobs - 1);
	return esa_reg_fail(r, rc, "job %u: %s", id, strerror(-rc));
}

int esa_registry_get(struct esa_registry *r, __u32 id, struct esa_job *j,
		     struct esa_nl_job_info *info)
{
	int rc;

	if (r->nl) {
		rc = esa_nl_job_get(r->nl, id, j, info);
		return rc ? esa_nl_fail(r, rc, "show", id) : 0;
	}
	rc = esa_job_read(r->e, id, j);
	if (!rc && j->state != ESA_JOB_ACTIVE)
		rc = -ENOENT;
	if (rc)
		return esa_map_fail(r, rc, id);
	if (info) {
		info->idle_ms = esa_job_idle_ms(j);
		info->expired = esa_job_expired(j);
	}
	return 0;
}

/* The registry's part of an add: j->reg set. */
static int esa_registry_put(struct esa_registry *r, __u32 id, struct esa_job *j)
{
	struct esa_job got;
	int rc;

	if (!r->nl) {
		rc = esa_job_add(r->e, id, j, r->err, sizeof(r->err));
		return rc < 0 ? rc : rc ? -EINVAL : 0;
	}
	rc = esa_nl_job_add(r->nl, id, j);
	if (!rc)
		rc = esa_nl_job_get(r->nl, id, &got, NULL);
	if (rc)
		return esa_nl_fail(r, rc, "add", id);
	j->reg = got.reg;
	return 0;
}

int esa_registry_add(struct esa_registry *r, __u32 id, struct esa_job *j,
		     struct esa_place *pl)
{
	struct esa_place own[ESA_PLACES] = {};
	struct esa_job old;
	int rc;

	if (!esa_registry_get(r, id, &old, NULL))
		return esa_reg_fail(r, -EEXIST, "job %u exists", id);
	if (!pl)
		pl = own;
	if (r->maps && (esa_job_check(&r->e->cfg, id, j, r->err, sizeof(r->err)) ||
			esa_places_resolve(r->e, j, pl, r->err, sizeof(r->err)) ||
			esa_binds_stage(r->e, id, j, pl, r->err, sizeof(r->err))))
		return -EINVAL;
	rc = esa_registry_put(r, id, j);
	if (rc) {
		if (r->maps)
			esa_deliver_clear(r->e, id);
		return rc;
	}
	if (r->maps && esa_deliver_set(r->e, id, j, pl, r->err, sizeof(r->err))) {
		if (r->nl)
			esa_nl_job_del(r->nl, id);
		else
			esa_job_del(r->e, id);
		esa_deliver_clear(r->e, id);
		return -EIO;
	}
	return 0;
}

int esa_registry_del(struct esa_registry *r, __u32 id)
{
	int rc;

	rc = r->nl ? esa_nl_job_del(r->nl, id) : esa_job_del(r->e, id);
	if (rc)
		return r->nl ? esa_nl_fail(r, rc, "delete", id) : esa_map_fail(r, rc, id);
	if (r->maps)
		esa_deliver_clear(r->e, id);
	return 0;
}

int esa_registry_set_prio(struct esa_registry *r, __u32 id, __u8 max_prio)
{
	int rc;

	if (r->nl) {
		rc = esa_nl_job_set_prio(r->nl, id, max_prio);
		return rc ? esa_nl_fail(r, rc, "change", id) : 0;
	}
	rc = esa_job_set_prio(r->e, id, max_prio);
	return rc ? esa_map_fail(r, rc, id) : 0;
}

int esa_registry_each(struct esa_registry *r, esa_nl_job_cb cb, void *arg)
{
	struct esa_nl_job_info info;
	struct esa_job j;
	int rc;

	if (r->nl) {
		rc = esa_nl_job_dump(r->nl, cb, arg);
		return rc < 0 ? esa_reg_fail(r, rc, "cannot list esa.ko's jobs: %s",
					     strerror(-rc)) : rc;
	}
	for (__u32 id = 0; id < r->e->cfg.max_jobs; id++) {
		if (esa_job_read(r->e, id, &j) || j.state != ESA_JOB_ACTIVE)
			continue;
		info.idle_ms = esa_job_idle_ms(&j);
		info.expired = esa_job_expired(&j);
		rc = cb(id, &j, &info, arg);
		if (rc)
			return rc;
	}
	return 0;
}

int esa_job_register(struct esa *e, __u32 id, struct esa_job *j, char *err,
		     size_t len)
{
	struct esa_registry r;
	int rc;

	esa_registry_wrap(&r, e);
	rc = esa_registry_add(&r, id, j, NULL);
	if (rc)
		snprintf(err, len, "%s", r.err);
	return rc;
}

/* The homes of the other jobs, for placing one. */
struct esa_homes {
	__u32		skip;		/* the job being placed */
	__u32		n;
	struct esa_home	h[65536];
};

static int esa_collect_home(__u32 id, const struct esa_job *j,
			    const struct esa_nl_job_info *info, void *arg)
{
	struct esa_homes *hs = arg;

	if (id != hs->skip && j->region_size && !(info && info->expired))
		hs->h[hs->n++] = (struct esa_home){ j->region_base, j->region_size };
	return 0;
}

/* Policy switchml: the lowest run of size slots no other region uses. */
static int esa_free_run(const struct esa_homes *hs, __u32 pool, __u32 size, __u32 *base)
{
	bool found = false;

	for (__u32 c = 0; c <= hs->n; c++) {
		__u64 at = c ? (__u64)hs->h[c - 1].base + hs->h[c - 1].size : 0;
		__u32 k;

		for (k = 0; k < hs->n; k++)
			if (at < (__u64)hs->h[k].base + hs->h[k].size &&
			    hs->h[k].base < at + size)
				break;
		if (k == hs->n && at + size <= pool && (!found || at < *base)) {
			*base = at;
			found = true;
		}
	}
	return found ? 0 : -ENOSPC;
}

int esa_registry_place_home(struct esa_registry *r, __u32 id, struct esa_job *j)
{
	struct esa_homes *hs;
	__u32 pool, size = j->region_size;
	int rc = 0;

	if (!r->maps)
		return esa_reg_fail(r, -EINVAL, "region auto needs the loaded program (its pool size)");
	pool = r->e->cfg.slots;
	if (size > pool)
		return esa_reg_fail(r, -EINVAL, "region of %u slots does not fit the pool of %u",
				    size, pool);
	hs = calloc(1, sizeof(*hs));
	if (!hs)
		return esa_reg_fail(r, -ENOMEM, "out of memory");
	hs->skip = id;
	rc = esa_registry_each(r, esa_collect_home, hs);
	if (rc >= 0 && r->e->cfg.policy == ESA_POLICY_SWITCHML) {
		rc = esa_free_run(hs, pool, size, &j->region_base);
		if (rc)
			esa_reg_fail(r, rc, "no free run of %u slots left in the pool of %u",
				     size, pool);
	} else if (rc >= 0) {
		j->region_base = esa_home_place(hs->h, hs->n, pool, size);
	}
	free(hs);
	return rc < 0 ? rc : 0;
}

int esa_registry_add_desc(struct esa_registry *r, struct esa_jobdesc *d)
{
	int rc;

	if (d->auto_region) {
		rc = esa_registry_place_home(r, d->id, &d->j);
		if (rc)
			return rc;
	}
	if (r->maps && r->e->cfg.policy == ESA_POLICY_SWITCHML && !d->j.region_size)
		return esa_reg_fail(r, -EINVAL, "policy switchml needs a region (region BASE SIZE)");
	return esa_registry_add(r, d->id, &d->j, d->pl);
}
