// SPDX-License-Identifier: GPL-2.0
/*
 * esa-agent's jobs: a group of ranks checks in (join), one request per
 * rank; when all have, the job is registered through the one registry API
 * (user/common/registry.h) and esa-ps is told (ps-poll, ps-job); the ranks
 * are answered once esa-ps serves it.  Beats keep it alive; it is deleted
 * when every rank has released it or gone silent.  Nothing changes until
 * every check of a request has passed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "agent.h"
#include "esa_hist.h"
#include "registry.h"
#include "words.h"

#define NOT_ASKED	(~0u)

/* A join's fields, checked. */
struct join {
	const char	*group;
	uint32_t	world, rank;
	struct sockaddr_in addr;
	uint32_t	want_job, want_prio, want_slots;
};

static bool same_sin(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	return a->sin_addr.s_addr == b->sin_addr.s_addr && a->sin_port == b->sin_port;
}

static bool is_group(const char *s)
{
	return s && strlen(s) == ESA_AMSG_NONCE_LEN &&
	       strspn(s, "0123456789abcdef") == ESA_AMSG_NONCE_LEN;
}

static struct agent_entry *find_group(struct agent *a, const char *group)
{
	for (int i = 0; i < AGENT_MAX_ENTRIES; i++)
		if (a->e[i].state != AE_FREE && !strcmp(a->e[i].group, group))
			return &a->e[i];
	return NULL;
}

int agent_live(const struct agent *a)
{
	int n = 0;

	for (int i = 0; i < AGENT_MAX_ENTRIES; i++)
		n += a->e[i].state == AE_LIVE;
	return n;
}

int agent_joining(const struct agent *a)
{
	int n = 0;

	for (int i = 0; i < AGENT_MAX_ENTRIES; i++)
		n += a->e[i].state == AE_JOINING;
	return n;
}

/* An optional number of the request: NOT_ASKED when absent. */
static int opt_num(const struct esa_amsg *m, const char *k, uint32_t max, uint32_t *v)
{
	int rc = esa_amsg_u32(m, k, max, v);

	if (rc == -ENOENT)
		*v = NOT_ASKED;
	return rc == -ENOENT ? 0 : rc;
}

int agent_policy(const struct agent_cfg *c, uint32_t world, uint32_t job, uint32_t prio,
		 uint32_t slots, char *why, size_t len)
{
	if (world > c->max_workers)
		return snprintf(why, len, "world %u: the policy allows at most %u ranks", world,
				c->max_workers), -1;
	if (job != NOT_ASKED && (job < c->id_lo || job > c->id_hi))
		return snprintf(why, len, "job %u is outside the agent's ids %u-%u", job, c->id_lo,
				c->id_hi), -1;
	if (prio != NOT_ASKED && prio > c->max_prio)
		return snprintf(why, len, "max-prio %u is above the policy's %u", prio,
				c->max_prio), -1;
	if (slots != NOT_ASKED && slots > c->slots)
		return snprintf(why, len, "slots %u: the policy allows a home of %u at most", slots,
				c->slots), -1;
	return 0;
}

/* A join's options against the policy. */
static int join_policy(struct agent *a, struct join *j, const struct sockaddr_in *src,
		       struct esa_amsg *reply)
{
	char why[160];

	if (agent_policy(&a->cfg, j->world, j->want_job, j->want_prio, j->want_slots, why,
			 sizeof(why)))
		return agent_refuse(a, reply, AR_POLICY, src, "%s", why), -1;
	return 0;
}

/* The fields of a join, each checked on its own. */
static int join_fields(struct agent *a, const struct esa_amsg *m, const struct sockaddr_in *src,
		       struct join *j, struct esa_amsg *reply)
{
	const char *addr = esa_amsg_get(m, "addr");
	char ip[INET_ADDRSTRLEN];

	j->group = esa_amsg_get(m, "group");
	if (!is_group(j->group))
		return agent_refuse(a, reply, AR_MALFORMED, src, "group is not 32 hex digits"), -1;
	if (esa_amsg_u32(m, "world", ESA_MAX_WORKERS, &j->world) || !j->world)
		return agent_refuse(a, reply, AR_MALFORMED, src, "world is not a number in 1..%d",
				    ESA_MAX_WORKERS), -1;
	if (esa_amsg_u32(m, "rank", 65535, &j->rank))
		return agent_refuse(a, reply, AR_MALFORMED, src, "rank is not a number"), -1;
	if (!addr || esa_parse_sin(addr, ESA_ADDR_NEED_PORT, 0, &j->addr))
		return agent_refuse(a, reply, AR_MALFORMED, src, "addr is not IP:PORT"), -1;
	if (opt_num(m, "job", 65535, &j->want_job) || opt_num(m, "max-prio", 255, &j->want_prio) ||
	    opt_num(m, "slots", 1 << 24, &j->want_slots))
		return agent_refuse(a, reply, AR_MALFORMED, src, "job, max-prio or slots is not a number"),
		       -1;
	if (j->rank >= j->world)
		return agent_refuse(a, reply, AR_WORLD, src, "rank %u in a world of %u", j->rank,
				    j->world), -1;
	inet_ntop(AF_INET, &src->sin_addr, ip, sizeof(ip));
	if (j->addr.sin_addr.s_addr != src->sin_addr.s_addr)
		return agent_refuse(a, reply, AR_ADDRESS, src,
				    "rank %u claims %s, its request comes from %s", j->rank, addr, ip), -1;
	return join_policy(a, j, src, reply);
}

/* Is addr a rank of another group or job?  Then refused. */
static int addr_taken(struct agent *a, const struct agent_entry *self, const struct join *j,
		      const struct sockaddr_in *src, struct esa_amsg *reply)
{
	char who[24];

	for (int i = 0; i < AGENT_MAX_ENTRIES; i++) {
		const struct agent_entry *e = &a->e[i];

		if (e->state == AE_FREE || e->state == AE_FAILED)
			continue;
		for (uint32_t r = 0; r < e->world; r++) {
			if (!e->rank[r].joined || e->rank[r].released ||
			    !same_sin(&e->rank[r].addr, &j->addr) || (e == self && r == j->rank))
				continue;
			agent_fmt_sin(&j->addr, who);
			if (e->state == AE_LIVE)
				return agent_refuse(a, reply, AR_ADDRESS, src, "%s is rank %u of job %u",
						    who, r, e->id), -1;
			return agent_refuse(a, reply, AR_ADDRESS, src, "%s is rank %u of %s group",
					    who, r, e == self ? "this" : "another"), -1;
		}
	}
	return 0;
}

/* A join to a group that exists: the same world, options and address. */
static int join_check(struct agent *a, const struct agent_entry *e, const struct join *j,
		      const struct sockaddr_in *src, struct esa_amsg *reply)
{
	const struct agent_rank *r = &e->rank[j->rank];
	char was[24];

	if (e->state == AE_FAILED)
		return agent_refuse(a, reply, AR_REGISTER, src, "%s", e->why), -1;
	if (j->world != e->world)
		return agent_refuse(a, reply, AR_WORLD, src, "world %u, the group's is %u", j->world,
				    e->world), -1;
	if (j->want_job != e->want_job || j->want_prio != e->want_prio ||
	    j->want_slots != e->want_slots)
		return agent_refuse(a, reply, AR_MISMATCH, src,
				    "job, max-prio or slots are not those the group's first rank asked"),
		       -1;
	if (r->released)
		return agent_refuse(a, reply, AR_UNKNOWN_JOB, src, "rank %u has released job %u",
				    j->rank, e->id), -1;
	if (r->joined && !same_sin(&r->addr, &j->addr))
		return agent_refuse(a, reply, AR_ADDRESS, src, "rank %u joined from %s", j->rank,
				    agent_fmt_sin(&r->addr, was)), -1;
	return 0;
}

/* A new group for j's first rank, or NULL (refused: full). */
static struct agent_entry *group_new(struct agent *a, const struct join *j,
				     const struct sockaddr_in *src, struct esa_amsg *reply)
{
	struct agent_entry *e = NULL;
	uint32_t used = 0;

	for (int i = 0; i < AGENT_MAX_ENTRIES; i++) {
		if (a->e[i].state != AE_FREE)
			used++;
		else if (!e)
			e = &a->e[i];
	}
	if (!e || used >= a->cfg.max_jobs)
		return agent_refuse(a, reply, AR_FULL, src,
				    "the agent holds %u jobs and groups, its max-jobs", used), NULL;
	memset(e, 0, sizeof(*e));
	e->state = AE_JOINING;
	snprintf(e->group, sizeof(e->group), "%s", j->group);
	e->world = j->world;
	e->want_job = j->want_job;
	e->want_prio = j->want_prio;
	e->want_slots = j->want_slots;
	e->since_ms = agent_mono_ms();
	e->first_ns = agent_mono_ns();
	return e;
}

static void group_fail(struct agent *a, struct agent_entry *e, const char *why)
{
	e->state = AE_FAILED;
	e->since_ms = agent_mono_ms();
	snprintf(e->why, sizeof(e->why), "%.255s", why);
	a->c.failed_groups++;
	agent_log("group %.8s: not registered: %s", e->group, why);
}

/* The job id for e: the one asked, or the lowest free of the range. */
static int pick_id(struct agent *a, struct esa_registry *r, const struct agent_entry *e,
		   uint32_t *id)
{
	struct esa_job j;

	for (uint32_t k = a->cfg.id_lo; k <= a->cfg.id_hi; k++) {
		bool ours = false;

		if (e->want_job != NOT_ASKED && k != e->want_job)
			continue;
		for (int i = 0; i < AGENT_MAX_ENTRIES; i++)
			ours |= a->e[i].state == AE_LIVE && a->e[i].id == k;
		if (!ours && esa_registry_get(r, k, &j, NULL) == -ENOENT) {
			*id = k;
			return 0;
		}
	}
	return -ENOSPC;
}

/* The switch's address and vector length the ranks are told. */
static int switch_of(struct agent *a, struct esa_registry *r, struct agent_entry *e)
{
	e->sw = a->cfg.sw;
	if (!e->sw.sin_addr.s_addr && r->maps && r->e->cfg.addr) {
		e->sw.sin_family = AF_INET;
		e->sw.sin_addr.s_addr = r->e->cfg.addr;
		e->sw.sin_port = r->e->cfg.port;
	}
	e->values = a->cfg.values ? a->cfg.values : r->maps ? r->e->cfg.nvals :
		    ESA_DEFAULT_VALUES;
	return e->sw.sin_addr.s_addr ? 0 : -1;
}

/* The words of e's job (jobdesc.h), as the registry is to take them. */
static void job_words(struct agent *a, const struct agent_entry *e, uint32_t id, char *buf,
		      size_t len)
{
	uint32_t prio = e->want_prio != NOT_ASKED ? e->want_prio : a->cfg.max_prio;
	uint32_t slots = e->want_slots != NOT_ASKED ? e->want_slots : a->cfg.slots;
	char s[24];
	size_t n;

	n = snprintf(buf, len, "%u ps %s workers", id, agent_fmt_sin(&a->cfg.ps, s));
	for (uint32_t r = 0; r < e->world && n < len; r++)
		n += snprintf(buf + n, len - n, " %s", agent_fmt_sin(&e->rank[r].addr, s));
	if (n < len)
		n += snprintf(buf + n, len - n, " max-prio %u lease %u", prio, a->cfg.lease_ms);
	if (slots && n < len)
		snprintf(buf + n, len - n, " region auto %u", slots);
}

/* e's job registered through r (d: its description), or why not. */
static int group_job(struct agent *a, struct esa_registry *r, struct agent_entry *e,
		     struct esa_jobdesc *d, char *why, size_t len)
{
	char words[2048];

	if (switch_of(a, r, e))
		return snprintf(why, len, "no switch address: set \"switch IP\" in %.200s",
				a->cfg.path), -1;
	if (pick_id(a, r, e, &e->id)) {
		if (e->want_job != NOT_ASKED)
			return snprintf(why, len, "job %u is taken", e->want_job), -1;
		return snprintf(why, len, "no job id free in %u-%u", a->cfg.id_lo, a->cfg.id_hi), -1;
	}
	job_words(a, e, e->id, words, sizeof(words));
	if (esa_jobdesc_parse_line(words, 0, d, why, len) < 0)
		return -1;
	esa_jobdesc_format(d, e->desc, sizeof(e->desc));	/* as asked, before places resolve */
	if (esa_registry_add_desc(r, d))
		return snprintf(why, len, "%s", r->err), -1;
	return 0;
}

void agent_told(const struct agent_cfg *c, struct agent_entry *e, uint32_t home)
{
	e->window = c->window ? c->window : home < 512 ? home : 512;
	e->beat_ms = c->beat_ms;
	e->dead_ms = c->dead_ms;
}

/* The time from e's first join to now, its registration. */
static void join_time(struct agent *a, const struct agent_entry *e)
{
	uint64_t ns = agent_mono_ns() - e->first_ns;

	a->c.join_hist[esa_hist_bucket(ns / 1000, AGENT_JOIN_BUCKETS)]++;
	a->c.join_ns_sum += ns;
}

/* Every rank has joined: the job on the switch, or the group failed. */
static void group_register(struct agent *a, struct agent_entry *e)
{
	struct esa_jobdesc d;
	struct esa_registry r;
	char why[ESA_ERR_LEN];
	int rc;

	if (esa_registry_open(&r, a->cfg.pin_dir))
		return group_fail(a, e, r.err);
	rc = group_job(a, &r, e, &d, why, sizeof(why));
	esa_registry_close(&r);
	if (rc)
		return group_fail(a, e, why);
	e->ps = a->cfg.ps;
	agent_told(&a->cfg, e, d.j.region_size);
	e->state = AE_LIVE;
	e->serial = ++a->next_serial;
	a->c.registered++;
	join_time(a, e);
	agent_log("job %u registered for group %.8s: %s", e->id, e->group, e->desc);
	agent_state_save(a);
}

/* What a rank of e is told. */
static void join_answer(struct agent *a, const struct agent_entry *e,
			const struct sockaddr_in *src, struct esa_amsg *reply)
{
	struct esa_jobdesc d;
	char s[24], why[160];

	if (e->state == AE_FAILED)
		return agent_refuse(a, reply, AR_REGISTER, src, "%s", e->why);
	if (e->state == AE_JOINING) {
		agent_reply(reply, "wait");
		esa_amsg_add(reply, "why", "%u of %u ranks have joined", e->njoined, e->world);
		return;
	}
	if (!e->ps_ok) {
		agent_reply(reply, "wait");
		esa_amsg_add(reply, "why", "the PS %s has not taken job %u yet (esa-ps --agent)",
			     agent_fmt_sin(&e->ps, s), e->id);
		return;
	}
	esa_jobdesc_parse_line(e->desc, ESA_JD_NO_DEV, &d, why, sizeof(why));
	agent_reply(reply, "ok");
	esa_amsg_add(reply, "job", "%u", e->id);
	esa_amsg_add(reply, "serial", "%llu", (unsigned long long)e->serial);
	esa_amsg_add(reply, "workers", "%u", e->world);
	esa_amsg_add(reply, "switch", "%s", agent_fmt_sin(&e->sw, s));
	esa_amsg_add(reply, "ps", "%s", agent_fmt_sin(&e->ps, s));
	esa_amsg_add(reply, "values", "%u", e->values);
	if (e->window)
		esa_amsg_add(reply, "window", "%u", e->window);
	esa_amsg_add(reply, "max-prio", "%u", d.j.max_prio);
	esa_amsg_add(reply, "lease", "%u", d.j.lease_ms);
	esa_amsg_add(reply, "heartbeat", "%u", e->beat_ms);
	esa_amsg_add(reply, "dead-after", "%u", e->dead_ms);
}

void agent_join(struct agent *a, const struct esa_amsg *m, const struct sockaddr_in *src,
		struct esa_amsg *reply)
{
	struct agent_entry *e;
	struct join j;

	if (join_fields(a, m, src, &j, reply))
		return;
	e = find_group(a, j.group);
	if ((e && join_check(a, e, &j, src, reply)) || addr_taken(a, e, &j, src, reply))
		return;
	if (!e && !(e = group_new(a, &j, src, reply)))
		return;
	if (!e->rank[j.rank].joined) {
		e->rank[j.rank].joined = true;
		e->rank[j.rank].addr = j.addr;
		e->njoined++;
	}
	e->rank[j.rank].seen_ms = agent_mono_ms();
	if (e->state == AE_JOINING && e->njoined == e->world)
		group_register(a, e);
	join_answer(a, e, src, reply);
}
