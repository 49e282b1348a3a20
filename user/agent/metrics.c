// SPDX-License-Identifier: GPL-2.0
/*
 * esa-agent's counters, three ways: a text line each (SIGUSR1, -i), JSON
 * (-j), and Prometheus's text format for GET /metrics (--metrics,
 * docs/metrics.md), the same numbers under esa_agent_ names.
 */
#include <errno.h>
#include <stdio.h>

#include "agent.h"
#include "daemon.h"
#include "esa_hist.h"
#include "prom.h"

#define ULL(x)	((unsigned long long)(x))

static void print_text(const struct agent *a)
{
	const struct agent_counters *c = &a->c;

	printf("requests %llu", ULL(c->requests));
	esa_print_counters(stdout, agent_req_names, c->by_type, __AQ_MAX, 0);
	printf("\nanswers");
	esa_print_counters(stdout, agent_answer_names, c->answers, __AA_MAX, 0);
	printf("\nrefused");
	esa_print_counters(stdout, agent_refusal_names, c->refused, __AR_MAX, 0);
	printf("\njobs live %d joining %d registered %llu released %llu timed_out %llu "
	       "gone %llu groups expired %llu failed %llu dropped %llu\n"
	       "reloads %llu failed %llu\n", agent_live(a), agent_joining(a),
	       ULL(c->registered), ULL(c->released), ULL(c->timed_out), ULL(c->gone),
	       ULL(c->expired_groups), ULL(c->failed_groups), ULL(c->dropped_groups),
	       ULL(c->reloads), ULL(c->reload_failures));
}

/* "NAME": {"a": 1, ...} of n counters named names[]. */
static void json_map(const char *name, const char *const *names, const uint64_t *v, int n)
{
	printf(", \"%s\": {", name);
	esa_print_counters(stdout, names, v, n, ESA_CTR_JSON | ESA_CTR_SPACED);
	printf("}");
}

static void print_json(const struct agent *a)
{
	const struct agent_counters *c = &a->c;

	printf("{\"requests\": %llu", ULL(c->requests));
	json_map("by_type", agent_req_names, c->by_type, __AQ_MAX);
	json_map("answers", agent_answer_names, c->answers, __AA_MAX);
	json_map("refused", agent_refusal_names, c->refused, __AR_MAX);
	printf(", \"jobs_live\": %d, \"groups_joining\": %d, \"jobs_registered\": %llu, "
	       "\"jobs_released\": %llu, \"jobs_timed_out\": %llu, \"jobs_gone\": %llu, "
	       "\"groups_expired\": %llu, \"groups_failed\": %llu, \"groups_dropped\": %llu, "
	       "\"reloads\": %llu, \"reload_failures\": %llu, \"join_ns_sum\": %llu, "
	       "\"join_hist\": [", agent_live(a), agent_joining(a), ULL(c->registered),
	       ULL(c->released), ULL(c->timed_out), ULL(c->gone), ULL(c->expired_groups),
	       ULL(c->failed_groups), ULL(c->dropped_groups), ULL(c->reloads),
	       ULL(c->reload_failures), ULL(c->join_ns_sum));
	for (int i = 0; i < AGENT_JOIN_BUCKETS; i++)
		printf("%s%llu", i ? ", " : "", ULL(c->join_hist[i]));
	printf("]}\n");
}

void agent_print_stats(const struct agent *a, bool json)
{
	if (json)
		print_json(a);
	else
		print_text(a);
	fflush(stdout);
}

/* A counter family of n samples, label lab=names[i] each. */
static void prom_by(FILE *f, const char *name, const char *help, const char *lab,
		    const char *const *names, const uint64_t *v, int n)
{
	prom_head(f, name, "counter", help);
	for (int i = 0; i < n; i++) {
		char l[96] = "";

		prom_u64(f, name, prom_label(l, sizeof(l), lab, names[i]), v[i]);
	}
}

static void prom_requests(FILE *f, const struct agent_counters *c)
{
	uint64_t rest = c->requests;

	for (int i = 0; i < __AQ_MAX; i++)
		rest -= c->by_type[i];
	prom_by(f, "esa_agent_requests_total", "Requests, by type (other: refused before "
		"their type was read, or of no type the agent knows)", "type", agent_req_names,
		c->by_type, __AQ_MAX);
	prom_u64(f, "esa_agent_requests_total", "type=\"other\"", rest);
	prom_by(f, "esa_agent_answers_total", "Requests, by the answer: ok, wait (a group "
		"joining, or its PS has not taken the job yet), refused", "result",
		agent_answer_names, c->answers, __AA_MAX);
	prom_by(f, "esa_agent_refusals_total", "Requests refused, by reason (docs/agent.md, "
		"Refusals)", "reason", agent_refusal_names, c->refused, __AR_MAX);
}

static void prom_jobs(FILE *f, const struct agent *a)
{
	static const char *const ends[] = { "released", "timed_out", "gone" };
	static const char *const lost[] = { "expired", "failed", "dropped" };
	const struct agent_counters *c = &a->c;
	uint64_t e[] = { c->released, c->timed_out, c->gone };
	uint64_t g[] = { c->expired_groups, c->failed_groups, c->dropped_groups };

	prom_head(f, "esa_agent_jobs", "gauge", "Jobs registered and live");
	prom_u64(f, "esa_agent_jobs", NULL, agent_live(a));
	prom_head(f, "esa_agent_groups_joining", "gauge",
		  "Groups whose ranks have not all joined yet");
	prom_u64(f, "esa_agent_groups_joining", NULL, agent_joining(a));
	prom_head(f, "esa_agent_registrations_total", "counter",
		  "Jobs registered on the switch for a group whose ranks had all joined");
	prom_u64(f, "esa_agent_registrations_total", NULL, c->registered);
	prom_by(f, "esa_agent_deletions_total", "Live jobs ended, by cause: released (by every "
		"rank), timed_out (every rank left silent past dead-after), gone (deleted on the "
		"switch by someone else)", "cause", ends, e, 3);
	prom_by(f, "esa_agent_groups_ended_total", "Groups that never became a job, by cause: "
		"expired (not complete within join-timeout), failed (the switch refused the job), "
		"dropped (refused by a reload's policy)", "cause", lost, g, 3);
}

static void prom_join_hist(FILE *f, const struct agent_counters *c)
{
	double le[AGENT_JOIN_BUCKETS - 1];

	for (int i = 0; i < AGENT_JOIN_BUCKETS - 1; i++)
		le[i] = esa_hist_bound_s(i);
	prom_head(f, "esa_agent_join_seconds", "histogram",
		  "Jobs registered: the time from their group's first join to the registration");
	prom_hist(f, "esa_agent_join_seconds", NULL, le, c->join_hist, AGENT_JOIN_BUCKETS - 1,
		  c->join_ns_sum * 1e-9);
}

int agent_write_prom(FILE *f, const struct agent *a, uint64_t scrapes, uint64_t scrape_errors)
{
	prom_requests(f, &a->c);
	prom_jobs(f, a);
	prom_join_hist(f, &a->c);
	esa_prom_daemon(f, "agent", "esa-agent", a->c.reloads, a->c.reload_failures, scrapes,
			scrape_errors);
	return ferror(f) ? -EIO : 0;
}
