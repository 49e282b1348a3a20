// SPDX-License-Identifier: GPL-2.0
/*
 * SIGHUP: esa-agent's configuration file read again (docs/agent.md,
 * "Reload").  The policy and the timers apply to what comes next: new
 * groups, and the groups still joining, of which those the new policy
 * refuses are dropped.  A live job keeps what it was registered with and
 * its ranks were told (id, priority, home, lease, PS, switch, window,
 * heartbeat, dead-after) and runs until it ends, even outside the new
 * policy: its ranks and PS are heard though their networks are no longer
 * allowed (serve.c).  Where the agent listens, its key, state file, pins
 * and /metrics take a restart.  A file that does not parse, or changes one
 * of those, changes nothing, and says why in one line.
 */
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include "agent.h"
#include "jobdesc.h"

/* The options a running agent cannot take anew: their names, or 0. */
static int restart_only(const struct agent_cfg *o, const struct agent_cfg *n, char *why,
			size_t len)
{
	const char *name[5];
	int k = 0;
	size_t w = 0;

	if (o->listen.sin_addr.s_addr != n->listen.sin_addr.s_addr ||
	    o->listen.sin_port != n->listen.sin_port)
		name[k++] = "listen";
	if (strcmp(o->key_path, n->key_path))
		name[k++] = "key";
	if (strcmp(o->state_path, n->state_path))
		name[k++] = "state";
	if (strcmp(o->pin_dir, n->pin_dir))
		name[k++] = "pin";
	if (strcmp(o->metrics, n->metrics))
		name[k++] = "metrics";
	if (!k)
		return 0;
	for (int i = 0; i < k && w < len; i++)
		w += snprintf(why + w, len - w, "%s%s", !i ? "" : i < k - 1 ? ", " : " and ",
			      name[i]);
	if (w < len)
		snprintf(why + w, len - w, " cannot change without a restart");
	return -1;
}

/* Does the policy c allow the ranks' addresses of e (joined ones)? */
static int ranks_allowed(const struct agent_cfg *c, const struct agent_entry *e, char *why,
			 size_t len)
{
	char at[24];

	for (uint32_t r = 0; r < e->world; r++)
		if (e->rank[r].joined && !agent_allowed(c, e->rank[r].addr.sin_addr.s_addr))
			return snprintf(why, len, "rank %u at %s is in no network allowed", r,
					agent_fmt_sin(&e->rank[r].addr, at)), -1;
	return 0;
}

/* Would the policy c allow live job e?  Its words say what it was given. */
static int live_allowed(const struct agent_cfg *c, const struct agent_entry *e, char *why,
			size_t len)
{
	struct esa_jobdesc d;

	if (esa_jobdesc_parse_line(e->desc, ESA_JD_NO_DEV, &d, why, len) < 0)
		return -1;
	if (agent_policy(c, e->world, e->id, d.j.max_prio, d.j.region_size, why, len))
		return -1;
	return ranks_allowed(c, e, why, len);
}

/*
 * The groups joining that the new policy c refuses, dropped; the live
 * jobs it would not allow, counted and named (they run on).
 */
static int apply(struct agent *a, const struct agent_cfg *c, char *outside, size_t len)
{
	char why[200];
	int n = 0;
	size_t w = 0;

	outside[0] = 0;
	for (int i = 0; i < AGENT_MAX_ENTRIES; i++) {
		struct agent_entry *e = &a->e[i];

		if (e->state == AE_JOINING &&
		    (agent_policy(c, e->world, e->want_job, e->want_prio, e->want_slots, why,
				  sizeof(why)) || ranks_allowed(c, e, why, sizeof(why)))) {
			agent_log("reload: group %.8s (%u of %u ranks joined) dropped: %s", e->group,
				  e->njoined, e->world, why);
			e->state = AE_FREE;
			a->c.dropped_groups++;
		} else if (e->state == AE_LIVE && live_allowed(c, e, why, sizeof(why))) {
			agent_log("reload: job %u runs on until it ends, outside the new policy: %s",
				  e->id, why);
			if (w < len)
				w += snprintf(outside + w, len - w, "%s%u", n ? "," : "", e->id);
			n++;
		}
	}
	return n;
}

/* A status line: the policy and what there is. */
static void say_done(struct agent *a, int outside, const char *ids)
{
	char s[24];

	agent_log("reload: job ids %u-%u, max-prio %u, slots %u, max-workers %u, %d network%s, "
		  "PS %s; %d job%s live%s%s%s", a->cfg.id_lo, a->cfg.id_hi, a->cfg.max_prio,
		  a->cfg.slots, a->cfg.max_workers, a->cfg.nallow, a->cfg.nallow == 1 ? "" : "s",
		  agent_fmt_sin(&a->cfg.ps, s), agent_live(a), agent_live(a) == 1 ? "" : "s",
		  outside ? " (outside the policy: " : "", outside ? ids : "", outside ? ")" : "");
}

int agent_reload(struct agent *a, char *why, size_t len)
{
	static struct agent_cfg c;
	char ids[128];
	int outside;

	if (agent_cfg_read(a, &c, a->cfg.path, why, len) || restart_only(&a->cfg, &c, why, len)) {
		a->c.reload_failures++;
		agent_log("reload: %s; nothing changed", why);
		return -1;
	}
	outside = apply(a, &c, ids, sizeof(ids));
	a->cfg = c;
	a->c.reloads++;
	say_done(a, outside, ids);
	return 0;
}
