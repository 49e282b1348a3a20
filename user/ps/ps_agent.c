// SPDX-License-Identifier: GPL-2.0
/*
 * esa-ps's jobs from esa-agent (docs/agent.md, "esa-ps"): every
 * PS_AGENT_POLL_MS the PS asks the agent which jobs its addresses serve,
 * saying which it has (ps-poll); it asks for the words of each new one
 * (ps-job), reads them with the one job parser, and adds the job; a job
 * the agent no longer lists has ended and goes.  An agent that does not
 * answer changes nothing: the jobs go on (the agent may be restarting).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "ps.h"
#include "ps_agent.h"

#define PS_AGENT_POLL_MS	200
#define PS_AGENT_JOBS		256
#define PS_AGENT_ASKS		8	/* ps-job requests in flight */

struct ps_agent {
	int		fd;
	struct esa_akey	key;
	char		ps_list[ESA_AMSG_MAX / 4];	/* "IP:PORT,..." */
	uint64_t	next_poll_ns;
	char		poll_nonce[ESA_AMSG_NONCE_LEN + 1];
	struct {
		uint16_t id;
		uint64_t serial;
	} learnt[PS_AGENT_JOBS];
	int		nlearnt;
	struct {
		uint16_t id;
		uint64_t serial;
		char	nonce[ESA_AMSG_NONCE_LEN + 1];
	} ask[PS_AGENT_ASKS];
	int		nask;
	struct esa_amsg	m, rx;		/* out, in */
	char		last_err[200];	/* a refusal is said once */
};

struct ps_agent *ps_agent_new(const struct sockaddr_in *agent, const char *key_file,
			      const struct sockaddr_in *ps, int nps, char *why, size_t len)
{
	struct ps_agent *pa = calloc(1, sizeof(*pa));
	char ip[INET_ADDRSTRLEN];
	size_t n = 0;

	if (!pa)
		return snprintf(why, len, "out of memory"), NULL;
	if (esa_akey_load(key_file, &pa->key, why, len))
		goto fail;
	for (int i = 0; i < nps && n + 24 < sizeof(pa->ps_list); i++)
		n += snprintf(pa->ps_list + n, sizeof(pa->ps_list) - n, "%s%s:%u", i ? "," : "",
			      inet_ntop(AF_INET, &ps[i].sin_addr, ip, sizeof(ip)),
			      ntohs(ps[i].sin_port));
	pa->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (pa->fd < 0 || connect(pa->fd, (const struct sockaddr *)agent, sizeof(*agent))) {
		snprintf(why, len, "agent %s:%u: %s", inet_ntop(AF_INET, &agent->sin_addr, ip,
			 sizeof(ip)), ntohs(agent->sin_port), strerror(errno));
		goto fail;
	}
	return pa;
fail:
	if (pa->fd > 0)
		close(pa->fd);
	free(pa);
	return NULL;
}

void ps_agent_free(struct ps_agent *pa)
{
	if (!pa)
		return;
	close(pa->fd);
	free(pa);
}

int ps_agent_fd(const struct ps_agent *pa)
{
	return pa->fd;
}

static int learnt_at(const struct ps_agent *pa, uint16_t id)
{
	for (int i = 0; i < pa->nlearnt; i++)
		if (pa->learnt[i].id == id)
			return i;
	return -1;
}

static void send_msg(struct ps_agent *pa, char *nonce)
{
	if (esa_amsg_stamp(&pa->m, nonce) || esa_amsg_sign(&pa->m, &pa->key))
		return;
	send(pa->fd, pa->m.buf, pa->m.len, 0);
}

/* Ask for the words of job id (serial: the agent's registration). */
static void ask_job(struct ps_agent *pa, uint16_t id, uint64_t serial)
{
	for (int i = 0; i < pa->nask; i++)
		if (pa->ask[i].id == id && pa->ask[i].serial == serial)
			return;
	if (pa->nask == PS_AGENT_ASKS)
		return;		/* the next poll asks again */
	esa_amsg_init(&pa->m, "ps-job");
	esa_amsg_add(&pa->m, "ps", "%s", pa->ps_list);
	esa_amsg_add(&pa->m, "job", "%u", id);
	pa->ask[pa->nask].id = id;
	pa->ask[pa->nask].serial = serial;
	send_msg(pa, pa->ask[pa->nask++].nonce);
}

static void poll_agent(struct ps_agent *pa)
{
	char have[PS_AGENT_JOBS * 24];
	size_t n = 0;

	for (int i = 0; i < pa->nlearnt; i++)
		n += snprintf(have + n, sizeof(have) - n, "%s%u:%llu", i ? "," : "",
			      pa->learnt[i].id, (unsigned long long)pa->learnt[i].serial);
	esa_amsg_init(&pa->m, "ps-poll");
	esa_amsg_add(&pa->m, "ps", "%s", pa->ps_list);
	esa_amsg_add(&pa->m, "have", "%s", n ? have : "-");
	pa->nask = 0;		/* unanswered asks are asked again */
	send_msg(pa, pa->poll_nonce);
}

static void forget(struct ps_agent *pa, struct ps *ps, int i, const char *why)
{
	fprintf(stderr, "esa-ps: job %u %s\n", pa->learnt[i].id, why);
	ps_del_job(ps, pa->learnt[i].id);
	pa->learnt[i] = pa->learnt[--pa->nlearnt];
}

/* The agent's list ("ID:SERIAL,..." or "-"): new jobs asked, ended ones gone. */
static void on_jobs(struct ps_agent *pa, struct ps *ps, const char *list)
{
	bool listed[PS_AGENT_JOBS] = { 0 };
	unsigned long long serial;
	unsigned int id;
	int k, at;

	for (const char *p = list; p && sscanf(p, "%u:%llu", &id, &serial) == 2;
	     p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		if (id > 65535)
			continue;
		at = learnt_at(pa, id);
		if (at >= 0 && pa->learnt[at].serial == serial)
			listed[at] = true;
		else if (at < 0 && ps_find_job(ps, id) >= 0)
			continue;	/* given on the command line: that one stays */
		else
			ask_job(pa, id, serial);
	}
	for (k = pa->nlearnt - 1; k >= 0; k--)
		if (!listed[k])
			forget(pa, ps, k, "ended (esa-agent no longer lists it)");
}

/* The words of a job asked for: the job, added (replacing an older one). */
static void on_desc(struct ps_agent *pa, struct ps *ps, int a, const struct esa_amsg *r)
{
	const char *desc = esa_amsg_get(r, "desc");
	struct esa_jobdesc d;
	struct ps_job_cfg c;
	char why[256];
	int at = learnt_at(pa, pa->ask[a].id);

	if (!desc || esa_jobdesc_parse_line(desc, ESA_JD_PS | ESA_JD_NO_DEV, &d, why,
					    sizeof(why)) < 0 || d.id != pa->ask[a].id) {
		fprintf(stderr, "esa-ps: job %u from esa-agent: %s\n", pa->ask[a].id,
			desc ? why : "no desc");
		return;
	}
	if (at >= 0)
		forget(pa, ps, at, "registered again: the old one goes");
	ps_job_from_desc(&d, &c);
	if (pa->nlearnt == PS_AGENT_JOBS || ps_add_job(ps, &c, why, sizeof(why))) {
		fprintf(stderr, "esa-ps: job %u from esa-agent: %s\n", d.id,
			pa->nlearnt == PS_AGENT_JOBS ? "too many jobs" : why);
		return;
	}
	pa->learnt[pa->nlearnt].id = d.id;
	pa->learnt[pa->nlearnt++].serial = pa->ask[a].serial;
	fprintf(stderr, "esa-ps: job %s (from esa-agent)\n", desc);
}

/* One reply: signed with the key, answering a request of ours. */
static void on_reply(struct ps_agent *pa, struct ps *ps, const void *buf, size_t len)
{
	struct esa_amsg *r = &pa->rx;
	const char *nonce, *why;
	char err[sizeof(pa->last_err)];

	if (esa_amsg_parse(r, buf, len, err, sizeof(err)) || !esa_amsg_verify(r, &pa->key))
		return;
	nonce = esa_amsg_get(r, "nonce");
	if (!nonce)
		return;
	if (strcmp(r->type, "ok")) {
		why = esa_amsg_get(r, "why");
		snprintf(err, sizeof(err), "%s: %s", esa_amsg_get(r, "reason") ?: "?",
			 why ? why : "");
		if (strcmp(err, pa->last_err))
			fprintf(stderr, "esa-ps: esa-agent refused: %s\n", err);
		strcpy(pa->last_err, err);
		return;
	}
	pa->last_err[0] = 0;
	if (!strcmp(nonce, pa->poll_nonce)) {
		pa->poll_nonce[0] = 0;
		on_jobs(pa, ps, esa_amsg_get(r, "jobs"));
		return;
	}
	for (int a = 0; a < pa->nask; a++) {
		if (strcmp(nonce, pa->ask[a].nonce))
			continue;
		pa->ask[a].nonce[0] = 0;
		on_desc(pa, ps, a, r);
		return;
	}
}

void ps_agent_step(struct ps_agent *pa, struct ps *ps, uint64_t now_ns)
{
	static uint8_t buf[ESA_AMSG_MAX + 1];
	ssize_t n;

	while ((n = recv(pa->fd, buf, sizeof(buf), 0)) > 0)
		on_reply(pa, ps, buf, n);
	if (now_ns < pa->next_poll_ns)
		return;
	pa->next_poll_ns = now_ns + PS_AGENT_POLL_MS * 1000000ULL;
	poll_agent(pa);
}
