// SPDX-License-Identifier: GPL-2.0
/*
 * One request to esa-agent (docs/agent.md): its size, the sender's
 * network, the protocol, the mac, the time and the nonce are checked in
 * that order before its type is looked at, and whatever fails is refused
 * with the reason and changes nothing but the counters.  The nonces of
 * the replay window are remembered here.  A sender outside the networks
 * allowed is heard only when it is a rank or the PS of a live job (the
 * policy tightened by a reload, which such jobs outlive), and only about
 * the jobs there are: beats, releases, polls.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include "agent.h"

const char *const agent_refusal_names[__AR_MAX] = {
	[AR_OVERSIZED]	= "oversized",
	[AR_MALFORMED]	= "malformed",
	[AR_NETWORK]	= "network",
	[AR_BAD_MAC]	= "bad-mac",
	[AR_STALE]	= "stale",
	[AR_REPLAY]	= "replay",
	[AR_BUSY]	= "busy",
	[AR_POLICY]	= "policy",
	[AR_WORLD]	= "world",
	[AR_ADDRESS]	= "address",
	[AR_MISMATCH]	= "mismatch",
	[AR_FULL]	= "full",
	[AR_UNKNOWN_JOB] = "unknown-job",
	[AR_REGISTER]	= "register",
};

const char *const agent_answer_names[__AA_MAX] = {
	[AA_OK]		= "ok",
	[AA_WAIT]	= "wait",
	[AA_REFUSED]	= "refused",
};

const char *const agent_req_names[__AQ_MAX] = {
	[AQ_JOIN]	= "join",
	[AQ_BEAT]	= "beat",
	[AQ_RELEASE]	= "release",
	[AQ_PS_POLL]	= "ps-poll",
	[AQ_PS_JOB]	= "ps-job",
};

/*
 * The nonces of requests taken, each until its ts leaves the replay
 * window: 4096 buckets of 16, by the nonce's first bytes (random).
 */
#define NONCE_BUCKETS	4096
#define NONCE_WAYS	16

static struct {
	uint8_t		n[ESA_AMSG_NONCE_LEN / 2];
	uint64_t	until;		/* wall clock, ms */
} nonces[NONCE_BUCKETS][NONCE_WAYS];

/* The nonce of the request being answered, for its reply ("-": none). */
static char cur_nonce[ESA_AMSG_NONCE_LEN + 1];

void agent_vlog(const char *fmt, va_list ap)
{
	fputs("esa-agent: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void agent_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	agent_vlog(fmt, ap);
	va_end(ap);
}

uint64_t agent_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

uint64_t agent_mono_ms(void)
{
	return agent_mono_ns() / 1000000;
}

const char *agent_fmt_sin(const struct sockaddr_in *s, char *buf)
{
	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip));
	sprintf(buf, "%s:%u", ip, ntohs(s->sin_port));
	return buf;
}

/* At most 20 refusals a second are logged; the rest counted. */
static bool log_budget(struct agent *a)
{
	uint64_t sec = agent_mono_ms() / 1000;

	if (sec != a->log_sec) {
		if (a->log_dropped)
			agent_log("%llu more refusals not shown", (unsigned long long)a->log_dropped);
		a->log_sec = sec;
		a->log_budget = 20;
		a->log_dropped = 0;
	}
	if (a->log_budget > 0) {
		a->log_budget--;
		return true;
	}
	a->log_dropped++;
	return false;
}

void agent_refuse(struct agent *a, struct esa_amsg *reply, int what,
		  const struct sockaddr_in *src, const char *fmt, ...)
{
	char why[300], from[24];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	a->c.refused[what]++;
	esa_amsg_init(reply, "refused");
	esa_amsg_add(reply, "nonce", "%s", cur_nonce);
	esa_amsg_add(reply, "reason", "%s", agent_refusal_names[what]);
	esa_amsg_add(reply, "why", "%s", why);
	if (log_budget(a))
		agent_log("refused %s: %s: %s", agent_fmt_sin(src, from),
			  agent_refusal_names[what], why);
}

/* 32 hex digits into 16 bytes. */
static bool nonce_bytes(const char *s, uint8_t *n)
{
	if (!s || strlen(s) != ESA_AMSG_NONCE_LEN ||
	    strspn(s, "0123456789abcdef") != ESA_AMSG_NONCE_LEN)
		return false;
	for (int i = 0; i < ESA_AMSG_NONCE_LEN / 2; i++)
		sscanf(s + 2 * i, "%2hhx", &n[i]);
	return true;
}

/* Remember nonce n until `until`: -EEXIST (a replay), -ENOSPC (no room). */
static int nonce_take(const uint8_t *n, uint64_t now, uint64_t until)
{
	int b = (n[0] | n[1] << 8) % NONCE_BUCKETS, free_way = -1;

	for (int w = 0; w < NONCE_WAYS; w++) {
		if (nonces[b][w].until <= now) {
			if (free_way < 0)
				free_way = w;
			continue;
		}
		if (!memcmp(nonces[b][w].n, n, sizeof(nonces[b][w].n)))
			return -EEXIST;
	}
	if (free_way < 0)
		return -ENOSPC;
	memcpy(nonces[b][free_way].n, n, sizeof(nonces[b][free_way].n));
	nonces[b][free_way].until = until;
	return 0;
}

/* ts: within the replay window, and not from before the agent started. */
static int check_time(struct agent *a, const struct esa_amsg *m, const struct sockaddr_in *src,
		      struct esa_amsg *reply, uint64_t *ts)
{
	const char *s = esa_amsg_get(m, "ts");
	uint64_t now = esa_amsg_now_ms(), w = a->cfg.replay_ms;
	char *end;

	if (!s || strlen(s) > 16 || strspn(s, "0123456789") != strlen(s))
		return agent_refuse(a, reply, AR_MALFORMED, src, "no ts (ms since 1970)"), -1;
	*ts = strtoull(s, &end, 10);
	if (*ts + w < now || *ts > now + w)
		return agent_refuse(a, reply, AR_STALE, src,
				    "ts %s is %lld ms from the agent's clock (the window is %llu ms: "
				    "are the clocks in step?)", s, (long long)(*ts - now),
				    (unsigned long long)w), -1;
	if (*ts < a->start_ms)
		return agent_refuse(a, reply, AR_STALE, src,
				    "ts %s is from before the agent started: send it again", s), -1;
	return 0;
}

/*
 * The checks every request passes before its type is looked at; *outside:
 * its sender is not in a network allowed, only a live job's rank or PS.
 */
static int admit(struct agent *a, const void *buf, size_t len, const struct sockaddr_in *src,
		 struct esa_amsg *m, struct esa_amsg *reply, bool *outside)
{
	uint8_t n[ESA_AMSG_NONCE_LEN / 2];
	char why[160];
	uint64_t ts;
	int rc;

	strcpy(cur_nonce, "-");
	if (len > ESA_AMSG_MAX)
		return agent_refuse(a, reply, AR_OVERSIZED, src, "%zu bytes, more than %d", len,
				    ESA_AMSG_MAX), -1;
	*outside = !agent_allowed(&a->cfg, src->sin_addr.s_addr);
	if (*outside && !agent_known_addr(a, src->sin_addr.s_addr))
		return agent_refuse(a, reply, AR_NETWORK, src,
				    "%s is not in a network the policy allows",
				    inet_ntoa(src->sin_addr)), -1;
	rc = esa_amsg_parse(m, buf, len, why, sizeof(why));
	if (nonce_bytes(esa_amsg_get(m, "nonce"), n))
		strcpy(cur_nonce, esa_amsg_get(m, "nonce"));
	if (rc)
		return agent_refuse(a, reply, AR_MALFORMED, src, "%s", why), -1;
	if (!esa_amsg_verify(m, &a->key))
		return agent_refuse(a, reply, AR_BAD_MAC, src,
				    "the mac is not the key's (is the key file the agent's?)"), -1;
	if (check_time(a, m, src, reply, &ts))
		return -1;
	if (!strcmp(cur_nonce, "-"))
		return agent_refuse(a, reply, AR_MALFORMED, src, "no nonce (32 hex digits)"), -1;
	rc = nonce_take(n, esa_amsg_now_ms(), ts + a->cfg.replay_ms);
	if (rc == -EEXIST)
		return agent_refuse(a, reply, AR_REPLAY, src, "nonce %s was used before",
				    cur_nonce), -1;
	if (rc)
		return agent_refuse(a, reply, AR_BUSY, src,
				    "too many requests in the replay window to remember"), -1;
	return 0;
}

void agent_handle(struct agent *a, const void *buf, size_t len, const struct sockaddr_in *src,
		  struct esa_amsg *reply)
{
	static struct esa_amsg m;
	bool outside = false;
	int t;

	a->c.requests++;
	if (!admit(a, buf, len, src, &m, reply, &outside)) {
		for (t = 0; t < __AQ_MAX && strcmp(m.type, agent_req_names[t]); t++)
			;
		if (t < __AQ_MAX)
			a->c.by_type[t]++;
		if (outside && (t == AQ_JOIN || t == __AQ_MAX))
			agent_refuse(a, reply, AR_NETWORK, src, "%s is not in a network the policy "
				     "allows (since a reload: only its live jobs are heard from it)",
				     inet_ntoa(src->sin_addr));
		else if (t == AQ_JOIN)
			agent_join(a, &m, src, reply);
		else if (t == AQ_BEAT || t == AQ_RELEASE)
			agent_beat(a, &m, src, reply, t == AQ_RELEASE);
		else if (t == AQ_PS_POLL)
			agent_ps_poll(a, &m, src, reply);
		else if (t == AQ_PS_JOB)
			agent_ps_job(a, &m, src, reply);
		else
			agent_refuse(a, reply, AR_MALFORMED, src, "unknown request \"%s\"", m.type);
	}
	for (t = 0; t < __AA_MAX && strcmp(reply->type, agent_answer_names[t]); t++)
		;
	if (t < __AA_MAX)
		a->c.answers[t]++;
	esa_amsg_sign(reply, &a->key);
}

/* The start of a reply that is not a refusal: ok or wait. */
void agent_reply(struct esa_amsg *reply, const char *type)
{
	esa_amsg_init(reply, type);
	esa_amsg_add(reply, "nonce", "%s", cur_nonce);
}
