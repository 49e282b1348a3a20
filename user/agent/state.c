// SPDX-License-Identifier: GPL-2.0
/*
 * esa-agent's state file: its live jobs, so that a restarted agent goes
 * on serving them (beats, releases, esa-ps's polls) without touching them
 * on the switch.  Text, written whole to FILE.tmp, synced, and renamed
 * over FILE: a crash leaves the old state or the new, never half of one.
 *
 *   esa-agent-state 2
 *   serial N
 *   job SERIAL GROUP PS-OK RELEASED-MASK WINDOW HEARTBEAT DEAD-AFTER WORDS...
 *
 * WORDS are jobdesc.h's; WINDOW, HEARTBEAT and DEAD-AFTER what the ranks
 * were told (a reload does not change them).  Version 1 had not these
 * three: its jobs take the configuration's.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "agent.h"
#include "registry.h"

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		p += k, n -= k;
	}
	return 0;
}

static uint64_t released_mask(const struct agent_entry *e)
{
	uint64_t m = 0;

	for (uint32_t r = 0; r < e->world; r++)
		m |= (uint64_t)e->rank[r].released << r;
	return m;
}

/* The directory of path, synced (the rename in it lasts). */
static void sync_dir(const char *path)
{
	char d[PATH_MAX];
	int fd;

	snprintf(d, sizeof(d), "%s", path);
	fd = open(dirname(d), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

int agent_state_save(struct agent *a)
{
	char tmp[PATH_MAX + 8], line[2300];
	int fd, rc, n;

	snprintf(tmp, sizeof(tmp), "%s.tmp", a->cfg.state_path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		goto fail;
	n = snprintf(line, sizeof(line), "esa-agent-state 2\nserial %llu\n",
		     (unsigned long long)a->next_serial);
	rc = write_all(fd, line, n);
	for (int i = 0; !rc && i < AGENT_MAX_ENTRIES; i++) {
		const struct agent_entry *e = &a->e[i];

		if (e->state != AE_LIVE)
			continue;
		n = snprintf(line, sizeof(line), "job %llu %s %d %llx %u %u %u %s\n",
			     (unsigned long long)e->serial, e->group, e->ps_ok,
			     (unsigned long long)released_mask(e), e->window, e->beat_ms,
			     e->dead_ms, e->desc);
		rc = write_all(fd, line, n);
	}
	if (rc || fsync(fd) || close(fd) || rename(tmp, a->cfg.state_path)) {
		if (rc)
			close(fd);
		goto fail;
	}
	sync_dir(a->cfg.state_path);
	return 0;
fail:
	agent_log("cannot write the state file %s: %s", a->cfg.state_path, strerror(errno));
	unlink(tmp);
	return -1;
}

/* Is job d on the switch as the state has it?  1 yes, 0 no, -1 cannot tell. */
static int on_switch(struct esa_registry *r, bool have_r, const struct esa_jobdesc *d)
{
	struct esa_job j;
	int rc;

	if (!have_r)
		return -1;
	rc = esa_registry_get(r, d->id, &j, NULL);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return -1;
	if (j.nworkers != d->j.nworkers || j.ps.ip != d->j.ps.ip || j.ps.port != d->j.ps.port)
		return 0;
	for (int k = 0; k < j.nworkers; k++)
		if (j.rank[k].ip != d->j.rank[k].ip || j.rank[k].port != d->j.rank[k].port)
			return 0;
	return 1;
}

/* One "job" line of version v back into entry e. */
static int load_job(struct agent *a, struct agent_entry *e, char *line, int v,
		    struct esa_registry *r, bool have_r)
{
	unsigned long long serial, released;
	struct esa_jobdesc d;
	char why[160];
	int ps_ok, at = 0, on, k;

	memset(e, 0, sizeof(*e));
	if (v == 1)
		k = sscanf(line, "job %llu %32s %d %llx %n", &serial, e->group, &ps_ok, &released,
			   &at) + 3;
	else
		k = sscanf(line, "job %llu %32s %d %llx %u %u %u %n", &serial, e->group, &ps_ok,
			   &released, &e->window, &e->beat_ms, &e->dead_ms, &at);
	if (k != 7 || !at ||
	    esa_jobdesc_parse_line(line + at, ESA_JD_NO_DEV, &d, why, sizeof(why)) < 0)
		return agent_log("state: a job line is not one: %.60s", line), -1;
	if (v == 1)
		agent_told(&a->cfg, e, d.j.region_size);
	on = on_switch(r, have_r, &d);
	if (!on)
		return agent_log("state: job %u is not on the switch as registered: forgotten", d.id),
		       -1;
	e->state = AE_LIVE;
	e->id = d.id;
	e->serial = serial;
	e->ps_ok = ps_ok;
	e->world = d.j.nworkers;
	e->njoined = e->world;
	e->want_job = e->want_prio = e->want_slots = ~0u;
	snprintf(e->desc, sizeof(e->desc), "%s", line + at);
	e->desc[strcspn(e->desc, "\n")] = 0;
	e->ps = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = d.j.ps.ip,
				      .sin_port = d.j.ps.port };
	for (uint32_t k = 0; k < e->world; k++) {
		e->rank[k].addr = (struct sockaddr_in){ .sin_family = AF_INET,
			.sin_addr.s_addr = d.j.rank[k].ip, .sin_port = d.j.rank[k].port };
		e->rank[k].joined = true;
		e->rank[k].released = released >> k & 1;
		e->rank[k].seen_ms = agent_mono_ms();	/* a grace of dead-after */
	}
	agent_log("state: job %u of group %.8s goes on%s", e->id, e->group,
		  on < 0 ? " (the switch cannot be asked now)" : "");
	return 0;
}

/* The switch's address and vector length of the loaded jobs. */
static void load_switch(struct agent *a, struct esa_registry *r, bool have_r)
{
	for (int i = 0; i < AGENT_MAX_ENTRIES; i++) {
		struct agent_entry *e = &a->e[i];

		if (e->state != AE_LIVE)
			continue;
		e->sw = a->cfg.sw;
		if (!e->sw.sin_addr.s_addr && have_r && r->maps) {
			e->sw.sin_family = AF_INET;
			e->sw.sin_addr.s_addr = r->e->cfg.addr;
			e->sw.sin_port = r->e->cfg.port;
		}
		e->values = a->cfg.values ? a->cfg.values : have_r && r->maps ?
			    r->e->cfg.nvals : ESA_DEFAULT_VALUES;
	}
}

int agent_state_load(struct agent *a, char *why, size_t len)
{
	static char line[4096];
	struct esa_registry r;
	unsigned long long serial;
	bool have_r;
	int n = 0, v;
	FILE *f;

	f = fopen(a->cfg.state_path, "r");
	if (!f && errno == ENOENT)
		return 0;
	if (!f)
		return snprintf(why, len, "state %s: %s", a->cfg.state_path, strerror(errno)), -1;
	if (!fgets(line, sizeof(line), f) || sscanf(line, "esa-agent-state %d", &v) != 1 ||
	    v < 1 || v > 2) {
		fclose(f);
		return snprintf(why, len, "state %s: not an esa-agent state file",
				a->cfg.state_path), -1;
	}
	have_r = !esa_registry_open(&r, a->cfg.pin_dir);
	while (fgets(line, sizeof(line), f) && n < AGENT_MAX_ENTRIES) {
		if (sscanf(line, "serial %llu", &serial) == 1)
			a->next_serial = serial;
		else if (!strncmp(line, "job ", 4) && !load_job(a, &a->e[n], line, v, &r, have_r))
			n++;
	}
	fclose(f);
	load_switch(a, &r, have_r);
	if (have_r)
		esa_registry_close(&r);
	return n;
}
