// SPDX-License-Identifier: GPL-2.0
/*
 * esa-agent's configuration file: "KEY VALUE" lines, '#' comments.  Where
 * it listens and keeps its state, the key, the PS, /metrics, and the
 * policy: which job ids it assigns, the highest priority, the largest
 * home, world size and number of jobs, the client networks, and its
 * timers.  Read at start and again on SIGHUP (reload.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "agent.h"
#include "words.h"

void agent_cfg_default(struct agent_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->listen.sin_family = AF_INET;
	c->listen.sin_port = htons(ESA_AGENT_PORT);
	strcpy(c->state_path, "/var/lib/esa/agent.state");
	strcpy(c->pin_dir, "/sys/fs/bpf/esa");
	c->max_prio = 255;
	c->max_workers = ESA_MAX_WORKERS;
	c->max_jobs = 64;
	c->lease_ms = 10000;
	c->beat_ms = 2000;
	c->dead_ms = 15000;
	c->join_ms = 60000;
	c->replay_ms = 30000;
}

struct cfg_line {
	const char	*path;
	int		no;
	char		*why;
	size_t		len;
};

static int bad(struct cfg_line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct cfg_line *l, const char *fmt, ...)
{
	int k = l->no ? snprintf(l->why, l->len, "%s:%d: ", l->path, l->no) :
			snprintf(l->why, l->len, "%s: ", l->path);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(l->why + k, l->len > (size_t)k ? l->len - k : 0, fmt, ap);
	va_end(ap);
	return -1;
}

static int num(struct cfg_line *l, const char *k, const char *v, uint32_t lo, uint32_t hi,
	       uint32_t *out)
{
	int rc = esa_parse_u32(v, hi, out);

	if (rc || *out < lo)
		return bad(l, "%s \"%s\" is not a number in %u..%u", k, v, lo, hi);
	return 0;
}

static int addr(struct cfg_line *l, const char *k, const char *v, unsigned int flags,
		uint16_t port, struct sockaddr_in *out)
{
	if (esa_parse_sin(v, flags, port, out))
		return bad(l, "%s \"%s\" is not IP%s", k, v,
			   flags & ESA_ADDR_NEED_PORT ? ":PORT" : "[:PORT]");
	return 0;
}

static int path(struct cfg_line *l, const char *k, const char *v, char *out)
{
	if (strlen(v) >= PATH_MAX)
		return bad(l, "%s: path too long", k);
	strcpy(out, v);
	return 0;
}

/* "metrics IP:PORT": where /metrics is served. */
static int metrics(struct cfg_line *l, struct agent_cfg *c, const char *v)
{
	struct sockaddr_in sin;

	if (strlen(v) >= sizeof(c->metrics) ||
	    esa_parse_sin(v, ESA_ADDR_NEED_PORT | ESA_ADDR_ANY, 0, &sin))
		return bad(l, "metrics \"%s\" is not IP:PORT", v);
	strcpy(c->metrics, v);
	return 0;
}

/* "allow 10.9.0.0/16": a client network. */
static int allow(struct cfg_line *l, struct agent_cfg *c, const char *v)
{
	char ip[INET_ADDRSTRLEN];
	const char *slash = strchr(v, '/');
	uint32_t bits = 32;
	struct in_addr a;

	if (c->nallow == AGENT_MAX_ALLOW)
		return bad(l, "more than %d networks", AGENT_MAX_ALLOW);
	if (!slash || (size_t)(slash - v) >= sizeof(ip) ||
	    esa_parse_u32(slash + 1, 32, &bits))
		return bad(l, "allow \"%s\" is not IP/BITS (e.g. 10.9.0.0/16)", v);
	memcpy(ip, v, slash - v);
	ip[slash - v] = 0;
	if (inet_pton(AF_INET, ip, &a) != 1)
		return bad(l, "allow \"%s\" is not IP/BITS (e.g. 10.9.0.0/16)", v);
	c->allow[c->nallow].mask = bits ? htonl(~0u << (32 - bits)) : 0;
	c->allow[c->nallow].net = a.s_addr & c->allow[c->nallow].mask;
	c->nallow++;
	return 0;
}

/* "jobs LO-HI": the ids the agent assigns. */
static int id_range(struct cfg_line *l, struct agent_cfg *c, const char *v)
{
	char lo[16];
	const char *dash = strchr(v, '-');

	if (!dash || (size_t)(dash - v) >= sizeof(lo))
		return bad(l, "jobs \"%s\" is not LO-HI (e.g. 100-199)", v);
	memcpy(lo, v, dash - v);
	lo[dash - v] = 0;
	if (esa_parse_u32(lo, 65535, &c->id_lo) || esa_parse_u32(dash + 1, 65535, &c->id_hi) ||
	    c->id_lo > c->id_hi)
		return bad(l, "jobs \"%s\" is not LO-HI with 0 <= LO <= HI <= 65535", v);
	c->have_ids = true;
	return 0;
}

static int one(struct cfg_line *l, struct agent_cfg *c, const char *k, const char *v)
{
	if (!strcmp(k, "listen"))
		return addr(l, k, v, ESA_ADDR_ANY, ESA_AGENT_PORT, &c->listen);
	if (!strcmp(k, "switch"))
		return addr(l, k, v, 0, ESA_DEFAULT_PORT, &c->sw);
	if (!strcmp(k, "ps"))
		return addr(l, k, v, ESA_ADDR_NEED_PORT, 0, &c->ps);
	if (!strcmp(k, "key"))
		return path(l, k, v, c->key_path);
	if (!strcmp(k, "state"))
		return path(l, k, v, c->state_path);
	if (!strcmp(k, "pin"))
		return path(l, k, v, c->pin_dir);
	if (!strcmp(k, "allow"))
		return allow(l, c, v);
	if (!strcmp(k, "metrics"))
		return metrics(l, c, v);
	if (!strcmp(k, "jobs"))
		return id_range(l, c, v);
	if (!strcmp(k, "values"))
		return num(l, k, v, ESA_VALUES_ALIGN, ESA_MAX_VALUES, &c->values);
	if (!strcmp(k, "max-prio"))
		return num(l, k, v, 0, 255, &c->max_prio);
	if (!strcmp(k, "slots"))
		return num(l, k, v, 0, 1 << 24, &c->slots);
	if (!strcmp(k, "max-workers"))
		return num(l, k, v, 1, ESA_MAX_WORKERS, &c->max_workers);
	if (!strcmp(k, "max-jobs"))
		return num(l, k, v, 1, AGENT_MAX_ENTRIES / 2, &c->max_jobs);
	if (!strcmp(k, "lease"))
		return num(l, k, v, 100, 3600000, &c->lease_ms);
	if (!strcmp(k, "window"))
		return num(l, k, v, 1, 512, &c->window);
	if (!strcmp(k, "heartbeat"))
		return num(l, k, v, 100, 600000, &c->beat_ms);
	if (!strcmp(k, "dead-after"))
		return num(l, k, v, 500, 3600000, &c->dead_ms);
	if (!strcmp(k, "join-timeout"))
		return num(l, k, v, 1000, 3600000, &c->join_ms);
	if (!strcmp(k, "replay-window"))
		return num(l, k, v, 1000, 600000, &c->replay_ms);
	return bad(l, "unknown key \"%s\"", k);
}

/* What must be there, and what must agree. */
static int check(struct cfg_line *l, const struct agent_cfg *c)
{
	l->no = 0;
	if (!c->key_path[0])
		return bad(l, "no \"key FILE\": the key shared with the ranks and esa-ps");
	if (!c->ps.sin_port)
		return bad(l, "no \"ps IP:PORT\": the PS of the jobs");
	if (!c->have_ids)
		return bad(l, "no \"jobs LO-HI\": the job ids the agent may assign");
	if (!c->nallow)
		return bad(l, "no \"allow NET/BITS\": the networks ranks and esa-ps ask from");
	if (c->dead_ms <= c->beat_ms)
		return bad(l, "dead-after %u must be longer than heartbeat %u", c->dead_ms,
			   c->beat_ms);
	if (c->values % ESA_VALUES_ALIGN)
		return bad(l, "values must be a multiple of %d", ESA_VALUES_ALIGN);
	return 0;
}

int agent_cfg_load(struct agent_cfg *c, const char *file, char *why, size_t len)
{
	struct cfg_line l = { .path = file, .why = why, .len = len };
	char line[1024];
	FILE *f;

	snprintf(c->path, sizeof(c->path), "%s", file);
	f = fopen(file, "r");
	if (!f)
		return snprintf(why, len, "%s: %s", file, strerror(errno)), -1;
	while (fgets(line, sizeof(line), f)) {
		char *save, *k, *v;

		l.no++;
		if (strchr(line, '#'))
			*strchr(line, '#') = 0;
		k = strtok_r(line, " \t\r\n", &save);
		if (!k)
			continue;
		v = strtok_r(NULL, " \t\r\n", &save);
		if (!v || strtok_r(NULL, " \t\r\n", &save)) {
			fclose(f);
			return bad(&l, "\"%s\" needs one value", k);
		}
		if (one(&l, c, k, v)) {
			fclose(f);
			return -1;
		}
	}
	fclose(f);
	return check(&l, c);
}

int agent_cfg_read(const struct agent *a, struct agent_cfg *c, const char *path, char *why,
		   size_t len)
{
	agent_cfg_default(c);
	if (agent_cfg_load(c, path, why, len))
		return -1;
	if (a->metrics_opt)
		snprintf(c->metrics, sizeof(c->metrics), "%s", a->metrics_opt);
	return 0;
}

bool agent_allowed(const struct agent_cfg *c, uint32_t ip)
{
	for (int i = 0; i < c->nallow; i++)
		if ((ip & c->allow[i].mask) == c->allow[i].net)
			return true;
	return false;
}
