// SPDX-License-Identifier: GPL-2.0
/*
 * What the daemons share (daemon.h): their signals' requests and the end
 * of their /metrics.
 */

#include "daemon.h"
#include "prom.h"
#include "esa_version.h"

struct esa_want esa_want;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		esa_want.stats = 1;
	else if (sig == SIGHUP)
		esa_want.reload = 1;
	else
		esa_want.exit = 1;
}

void esa_daemon_signals(void)
{
	struct sigaction sa = { 0 };

	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

void esa_prom_daemon(FILE *f, const char *part, const char *prog, uint64_t reloads,
		     uint64_t reload_failures, uint64_t scrapes, uint64_t scrape_errors)
{
	char name[64], help[96], lab[64] = "", wire[8];

	snprintf(name, sizeof(name), "esa_%s_reloads_total", part);
	prom_head(f, name, "counter", "Reloads (SIGHUP), by result");
	prom_u64(f, name, "result=\"ok\"", reloads);
	prom_u64(f, name, "result=\"failed\"", reload_failures);
	snprintf(name, sizeof(name), "esa_%s_scrapes_total", part);
	prom_head(f, name, "counter", "Answers to GET /metrics");
	prom_u64(f, name, NULL, scrapes);
	snprintf(name, sizeof(name), "esa_%s_scrape_errors_total", part);
	prom_head(f, name, "counter",
		  "Metrics connections closed without an answer: too many, bad or slow "
		  "requests, other paths");
	prom_u64(f, name, NULL, scrape_errors);
	snprintf(name, sizeof(name), "esa_%s_build_info", part);
	snprintf(help, sizeof(help), "%s's release and wire protocol", prog);
	prom_head(f, name, "gauge", help);
	prom_label(lab, sizeof(lab), "version", ESA_RELEASE);
	snprintf(wire, sizeof(wire), "%d", ESA_VERSION);
	prom_label(lab, sizeof(lab), "wire", wire);
	prom_u64(f, name, lab, 1);
}
