// SPDX-License-Identifier: GPL-2.0
/*
 * esa-agent's live jobs: the ranks' beats and releases, esa-ps's polls for
 * the jobs of its address and their words, and the end of a job (every
 * rank released it, or every rank is silent past dead-after, or it was
 * deleted on the switch by someone else).  Groups that never completed
 * go after join-timeout.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "agent.h"
#include "registry.h"
#include "words.h"

#define MAX_PS_ADDRS	16

static struct agent_entry *find_job(struct agent *a, uint32_t id)
{
	for (int i = 0; i < AGENT_MAX_ENTRIES; i++)
		if (a->e[i].state == AE_LIVE && a->e[i].id == id)
			return &a->e[i];
	return NULL;
}

bool agent_known_addr(const struct agent *a, uint32_t ip)
{
	for (int i = 0; i < AGENT_MAX_ENTRIES; i++) {
		const struct agent_entry *e = &a->e[i];

		if (e->state != AE_LIVE)
			continue;
		if (e->ps.sin_addr.s_addr == ip)
			return true;
		for (uint32_t r = 0; r < e->world; r++)
			if (e->rank[r].addr.sin_addr.s_addr == ip)
				return true;
	}
	return false;
}

/* Job e deleted from the switch (gone already counts); then forgotten. */
static int job_end(struct agent *a, struct agent_entry *e, const char *why)
{
	struct esa_registry r;
	int rc;

	rc = esa_registry_open(&r, a->cfg.pin_dir);
	if (!rc) {
		rc = esa_registry_del(&r, e->id);
		esa_registry_close(&r);
	}
	if (rc && rc != -ENOENT) {
		if (!e->end_said)	/* tried again every tick, said once */
			agent_log("job %u: cannot delete it yet (%s): %s", e->id, why, r.err);
		e->end_said = true;
		return -1;
	}
	agent_log("job %u deleted: %s", e->id, why);
	e->state = AE_FREE;
	agent_state_save(a);
	return 0;
}

/* Ranks not released; those silent past the job's dead-after into *silent. */
static uint32_t ranks_left(const struct agent_entry *e, uint64_t now, uint32_t *silent)
{
	uint32_t left = 0;

	*silent = 0;
	for (uint32_t r = 0; r < e->world; r++) {
		if (e->rank[r].released)
			continue;
		left++;
		*silent += now - e->rank[r].seen_ms > e->dead_ms;
	}
	return left;
}

void agent_beat(struct agent *a, const struct esa_amsg *m, const struct sockaddr_in *src,
		struct esa_amsg *reply, bool release)
{
	const char *group = esa_amsg_get(m, "group");
	uint32_t id, rank, left, silent;
	struct agent_entry *e;

	if (!group || esa_amsg_u32(m, "job", 65535, &id) || esa_amsg_u32(m, "rank", 65535, &rank))
		return agent_refuse(a, reply, AR_MALFORMED, src, "group, job and rank are needed");
	e = find_job(a, id);
	if (!e || strcmp(e->group, group))
		return agent_refuse(a, reply, AR_UNKNOWN_JOB, src, "no job %u of this group", id);
	if (rank >= e->world)
		return agent_refuse(a, reply, AR_WORLD, src, "rank %u in a world of %u", rank,
				    e->world);
	if (e->rank[rank].addr.sin_addr.s_addr != src->sin_addr.s_addr)
		return agent_refuse(a, reply, AR_ADDRESS, src, "rank %u of job %u is not at %s",
				    rank, id, inet_ntoa(src->sin_addr));
	e->rank[rank].seen_ms = agent_mono_ms();
	if (release && !e->rank[rank].released) {
		e->rank[rank].released = true;
		agent_state_save(a);
	}
	left = ranks_left(e, e->rank[rank].seen_ms, &silent);
	agent_reply(reply, "ok");
	esa_amsg_add(reply, "job", "%u", id);
	esa_amsg_add(reply, "left", "%u", left);
	if (release && !left && !job_end(a, e, "every rank released it"))
		a->c.released++;
}

/* The PS addresses of a poll, each the sender's own. */
static int ps_addrs(struct agent *a, const struct esa_amsg *m, const struct sockaddr_in *src,
		    struct sockaddr_in *ps, int *n, struct esa_amsg *reply)
{
	char list[ESA_AMSG_MAX], *save = NULL, *t;
	const char *v = esa_amsg_get(m, "ps");

	*n = 0;
	if (!v)
		return agent_refuse(a, reply, AR_MALFORMED, src, "no ps IP:PORT[,IP:PORT...]"), -1;
	snprintf(list, sizeof(list), "%s", v);
	for (t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (*n == MAX_PS_ADDRS || esa_parse_sin(t, ESA_ADDR_NEED_PORT, 0, &ps[*n]))
			return agent_refuse(a, reply, AR_MALFORMED, src,
					    "ps is not up to %d IP:PORT", MAX_PS_ADDRS), -1;
		if (ps[*n].sin_addr.s_addr != src->sin_addr.s_addr)
			return agent_refuse(a, reply, AR_ADDRESS, src, "ps %s is not the sender's", t),
			       -1;
		(*n)++;
	}
	return 0;
}

static bool ps_listed(const struct sockaddr_in *ps, int n, const struct sockaddr_in *x)
{
	for (int i = 0; i < n; i++)
		if (ps[i].sin_addr.s_addr == x->sin_addr.s_addr && ps[i].sin_port == x->sin_port)
			return true;
	return false;
}

/* Does "have" (ID:SERIAL,...) list e's registration? */
static bool ps_has(const char *have, const struct agent_entry *e)
{
	char me[32];
	size_t k;

	k = snprintf(me, sizeof(me), "%u:%llu", e->id, (unsigned long long)e->serial);
	for (const char *p = have; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, me, k) && (p[k] == ',' || !p[k]))
			return true;
	return false;
}

void agent_ps_poll(struct agent *a, const struct esa_amsg *m, const struct sockaddr_in *src,
		   struct esa_amsg *reply)
{
	const char *have = esa_amsg_get(m, "have");
	struct sockaddr_in ps[MAX_PS_ADDRS];
	char jobs[ESA_AMSG_MAX / 2];
	size_t n = 0;
	bool changed = false;
	int nps;

	if (ps_addrs(a, m, src, ps, &nps, reply))
		return;
	if (!have)
		return agent_refuse(a, reply, AR_MALFORMED, src, "no have (ID:SERIAL,... or -)");
	jobs[0] = 0;
	for (int i = 0; i < AGENT_MAX_ENTRIES; i++) {
		struct agent_entry *e = &a->e[i];

		if (e->state != AE_LIVE || !ps_listed(ps, nps, &e->ps) || n + 32 >= sizeof(jobs))
			continue;
		n += snprintf(jobs + n, sizeof(jobs) - n, "%s%u:%llu", n ? "," : "", e->id,
			      (unsigned long long)e->serial);
		if (!e->ps_ok && ps_has(have, e)) {
			e->ps_ok = changed = true;
			agent_log("job %u: esa-ps serves it", e->id);
		}
	}
	if (changed)
		agent_state_save(a);
	agent_reply(reply, "ok");
	esa_amsg_add(reply, "jobs", "%s", n ? jobs : "-");
}

void agent_ps_job(struct agent *a, const struct esa_amsg *m, const struct sockaddr_in *src,
		  struct esa_amsg *reply)
{
	struct sockaddr_in ps[MAX_PS_ADDRS];
	struct agent_entry *e;
	uint32_t id;
	int nps;

	if (ps_addrs(a, m, src, ps, &nps, reply))
		return;
	if (esa_amsg_u32(m, "job", 65535, &id))
		return agent_refuse(a, reply, AR_MALFORMED, src, "no job ID");
	e = find_job(a, id);
	if (!e || !ps_listed(ps, nps, &e->ps))
		return agent_refuse(a, reply, AR_UNKNOWN_JOB, src, "no job %u of this PS", id);
	agent_reply(reply, "ok");
	esa_amsg_add(reply, "job", "%u", id);
	esa_amsg_add(reply, "serial", "%llu", (unsigned long long)e->serial);
	esa_amsg_add(reply, "desc", "%s", e->desc);
}

/* Live jobs deleted on the switch by someone else: forgotten. */
static void gone_check(struct agent *a)
{
	struct esa_registry r;
	struct esa_job j;

	if (esa_registry_open(&r, a->cfg.pin_dir))
		return;
	for (int i = 0; i < AGENT_MAX_ENTRIES; i++) {
		struct agent_entry *e = &a->e[i];

		if (e->state != AE_LIVE || esa_registry_get(&r, e->id, &j, NULL) != -ENOENT)
			continue;
		agent_log("job %u was deleted on the switch, not by the agent: forgotten", e->id);
		e->state = AE_FREE;
		a->c.gone++;
		agent_state_save(a);
	}
	esa_registry_close(&r);
}

void agent_tick(struct agent *a)
{
	static uint64_t next_gone;
	uint64_t now = agent_mono_ms();
	uint32_t left, silent;
	char why[96];

	for (int i = 0; i < AGENT_MAX_ENTRIES; i++) {
		struct agent_entry *e = &a->e[i];

		if ((e->state == AE_JOINING || e->state == AE_FAILED) &&
		    now - e->since_ms > a->cfg.join_ms) {
			if (e->state == AE_JOINING) {
				agent_log("group %.8s: %u of %u ranks joined in %u ms: dropped",
					  e->group, e->njoined, e->world, a->cfg.join_ms);
				a->c.expired_groups++;
			}
			e->state = AE_FREE;
			continue;
		}
		if (e->state != AE_LIVE)
			continue;
		left = ranks_left(e, now, &silent);
		if (left && silent < left)
			continue;
		snprintf(why, sizeof(why), left ? "%u ranks silent for %u ms" :
			 "every rank released it", left, e->dead_ms);
		if (job_end(a, e, why))
			continue;
		if (left)
			a->c.timed_out++;
		else
			a->c.released++;
	}
	if (now >= next_gone) {
		next_gone = now + 2000;
		gone_check(a);
	}
}
