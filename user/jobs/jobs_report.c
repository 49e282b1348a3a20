// SPDX-License-Identifier: GPL-2.0
/*
 * What esa-jobs tells (jobs.h): a progress line while it runs (-p), the
 * report per job at the end (a table, or JSON with -j: completion time,
 * goodput, the workers' counters summed), and the workers' counters in
 * Prometheus's format (--metrics-file).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs.h"
#include "prom.h"
#include "daemon.h"

static void progress_line(bool final)
{
	static int tty = -1;
	char line[1024];
	int o = 0;

	if (tty < 0)
		tty = isatty(2);
	for (int k = 0; k < njobs; k++) {
		struct job *j = &jobs[k];
		uint64_t ppm = 1000000;
		int bar;

		for (int r = 0; r < j->n; r++) {
			uint64_t p;

			if (!j->w[r]->mine)
				continue;
			p = atomic_load(&j->w[r]->done_ppm);
			if (p < ppm)
				ppm = p;
		}
		bar = (int)(ppm / 100000);
		o += snprintf(line + o, sizeof(line) - o, "%sjob %d [%.*s%.*s] %3d%%",
			      k ? "  " : "", j->id, bar, "##########", 10 - bar, "..........",
			      (int)(ppm / 10000));
		if (o >= (int)sizeof(line) - 64)
			break;
	}
	if (tty)
		fprintf(stderr, "\r%s%s", line, final ? "\n" : "");
	else
		fprintf(stderr, "%s\n", line);
}

void *progress_main(void *arg)
{
	int ticks = 0;

	(void)arg;
	while (!atomic_load(&all_done)) {
		usleep(100000);
		if (isatty(2) || ++ticks % 10 == 0)
			progress_line(false);
	}
	progress_line(true);
	return NULL;
}

static uint64_t sum_stat(const struct job *j, size_t off)
{
	uint64_t t = 0;

	for (int r = 0; r < j->n; r++)
		if (j->w[r]->mine)
			t += *(const uint64_t *)((const char *)&j->w[r]->st + off);
	return t;
}

#define SUM(j, f) sum_stat(j, offsetof(struct esa_stats, f))

/* The iterations a job ran: -i, or fewer when --stop-file stopped it. */
static int iters_run(const struct job *j)
{
	return j->stop_at >= 0 && j->stop_at < j->iters ? j->stop_at : j->iters;
}

/* A reason as a JSON string's body: quotes and controls become spaces. */
static const char *json_safe(char *s)
{
	for (char *p = s; *p; p++)
		if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
			*p = ' ';
	return s;
}

/* The workers' counters -j reports per job, summed over its workers here. */
#define STAT(f)	{ #f, offsetof(struct esa_stats, f) }
static const struct {
	const char *name;
	size_t	off;
} json_stats[] = {
	STAT(tx_packets), STAT(tx_resends), STAT(rx_results), STAT(rx_from_ps),
	STAT(rx_duplicates), STAT(overflows), STAT(redos), STAT(scale_chunks),
	STAT(fetch_answered), STAT(rx_invalid), STAT(rx_untrusted), STAT(fetch_refused),
	STAT(icmp_errors), STAT(io_xdp), STAT(xdp_drops),
};
#define N_JSON_STATS	(sizeof(json_stats) / sizeof(json_stats[0]))

static void report_json(struct job *j, bool first)
{
	const char *names[N_JSON_STATS];
	uint64_t v[N_JSON_STATS];
	double comm = 0, jct = j->t_end - j->t0;
	uint64_t rtt = SUM(j, rtt_us_sum), rs = SUM(j, rtt_samples);

	for (int r = 0; r < j->n; r++)
		if (j->w[r]->mine && j->w[r]->comm > comm)
			comm = j->w[r]->comm;
	for (size_t i = 0; i < N_JSON_STATS; i++) {
		names[i] = json_stats[i].name;
		v[i] = sum_stat(j, json_stats[i].off);
	}
	printf("%s{\"job\":%d,\"workers\":%d,\"elems\":%zu,\"iters\":%d,"
	       "\"stopped\":%s,\"dtype\":\"%s\",\"ok\":%s,\"error\":\"%s\","
	       "\"jct_s\":%.4f,\"comm_s\":%.4f,\"goodput_gbps\":%.4f,\"worst_error_ratio\":%.4f,",
	       first ? "" : ",", j->id, j->n, j->elems, iters_run(j),
	       iters_run(j) < j->iters ? "true" : "false",
	       j->dtype == ESA_INT32 ? "i32" : "f32", j->rc ? "false" : "true",
	       json_safe(j->err), jct, comm,
	       comm > 0 ? j->elems * 4.0 * 8 * iters_run(j) / comm / 1e9 : 0, j->worst);
	esa_print_counters(stdout, names, v, N_JSON_STATS, ESA_CTR_JSON);
	printf(",\"rtt_us\":%.1f}", rs ? (double)rtt / rs : 0);
}

void report(void)
{
	if (g_json) {
		printf("{\"jobs\":[");
		for (int k = 0; k < njobs; k++)
			report_json(&jobs[k], !k);
		printf("]}\n");
		return;
	}
	if (g_quiet)
		return;
	printf("%-5s %-3s %-5s %9s %5s %8s %8s %9s %9s %9s %8s %6s  %s\n", "job", "w", "type",
	       "elems", "iters", "jct_s", "comm_s", "Gbit/s", "packets", "resends", "from_ps",
	       "redos", "result");
	for (int k = 0; k < njobs; k++) {
		struct job *j = &jobs[k];
		double comm = 0;

		for (int r = 0; r < j->n; r++)
			if (j->w[r]->mine && j->w[r]->comm > comm)
				comm = j->w[r]->comm;
		printf("%-5d %-3d %-5s %9zu %5d %8.3f %8.3f %9.3f %9llu %9llu %8llu %6llu  %s\n",
		       j->id, j->n, j->dtype == ESA_INT32 ? "i32" : "f32", j->elems, iters_run(j),
		       j->t_end - j->t0, comm,
		       comm > 0 ? j->elems * 4.0 * 8 * iters_run(j) / comm / 1e9 : 0,
		       (unsigned long long)SUM(j, tx_packets),
		       (unsigned long long)SUM(j, tx_resends),
		       (unsigned long long)SUM(j, rx_from_ps), (unsigned long long)SUM(j, redos),
		       j->rc ? "FAILED" : "ok");
	}
}

/* --metrics-file: every open worker's counters (esa_worker_metrics()). */
static int metrics_text(FILE *f, void *arg)
{
	esa_worker **ws = arg;
	int n = 0, len;
	char *buf;

	for (int k = 0; k < njobs; k++)
		for (int r = 0; r < jobs[k].n; r++)
			if (jobs[k].w[r]->ew)
				ws[n++] = jobs[k].w[r]->ew;
	len = esa_worker_metrics(ws, n, NULL, 0);
	buf = len < 0 ? NULL : malloc(len + 1);
	if (!buf)
		return len < 0 ? len : -ENOMEM;
	esa_worker_metrics(ws, n, buf, len + 1);
	fputs(buf, f);
	free(buf);
	return ferror(f) ? -EIO : 0;
}

void write_metrics(const char *path)
{
	static esa_worker *ws[MAXJOBS * MAXW];
	int rc = prom_write_file(path, metrics_text, ws);

	if (rc)
		fprintf(stderr, "esa-jobs: cannot write %s: %s\n", path, strerror(-rc));
}
