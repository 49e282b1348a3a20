/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the daemons share (esa-ps, esa-agent; esa-jobs the counter
 * printer): the requests their signals make, the lines their /metrics ends
 * with (daemon.c, linked as DAEMON_OBJ: mk/agent.mk), and one printer of a
 * row of named counters, header-only since esa-jobs links libesa alone.
 */
#ifndef ESA_DAEMON_H
#define ESA_DAEMON_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

/* What the signals asked for: set by the handler, cleared by the loop. */
struct esa_want {
	volatile sig_atomic_t stats;	/* SIGUSR1: print the counters */
	volatile sig_atomic_t reload;	/* SIGHUP: read the configuration again */
	volatile sig_atomic_t exit;	/* SIGINT, SIGTERM: print them, exit */
};

extern struct esa_want esa_want;

/* The handlers of esa_want's signals; SIGPIPE ignored (a scraper gone). */
void esa_daemon_signals(void);

/*
 * The end of a daemon's /metrics, as esa_PART_...: its reloads by result,
 * the answers to GET /metrics (scrapes: this one counted), the metrics
 * connections closed without an answer, and PROG's release and wire
 * protocol (build_info).
 */
void esa_prom_daemon(FILE *f, const char *part, const char *prog, uint64_t reloads,
		     uint64_t reload_failures, uint64_t scrapes, uint64_t scrape_errors);

#define ESA_CTR_JSON	1	/* "name":value, comma-separated (a JSON object's members) */
#define ESA_CTR_NONZERO	2	/* text: only the counters that are not 0 */
#define ESA_CTR_SPACED	4	/* JSON: a space after each ':' and ',' */

/*
 * Counters names[i] = v[i], i < n: as text, " name value" each, or with
 * ESA_CTR_JSON as the members of a JSON object.
 */
static inline void esa_print_counters(FILE *f, const char *const *names, const uint64_t *v,
				      int n, int flags)
{
	const char *comma = flags & ESA_CTR_SPACED ? ", " : ",";
	const char *colon = flags & ESA_CTR_SPACED ? ": " : ":";

	for (int i = 0; i < n; i++) {
		if (flags & ESA_CTR_JSON)
			fprintf(f, "%s\"%s\"%s%llu", i ? comma : "", names[i], colon,
				(unsigned long long)v[i]);
		else if (v[i] || !(flags & ESA_CTR_NONZERO))
			fprintf(f, " %s %llu", names[i], (unsigned long long)v[i]);
	}
}

#endif /* ESA_DAEMON_H */
