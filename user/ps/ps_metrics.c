// SPDX-License-Identifier: GPL-2.0
/*
 * esa-ps's counters for Prometheus (prom.h): what esa-ps -j prints, as
 * esa_ps_<counter>_total{job="ID"} and esa_ps_drops_total{job,reason}, the
 * chunk times as the histogram esa_ps_chunk_seconds{job}; packets of no
 * known job carry no job label.  docs/metrics.md.
 */
#include <string.h>

#include "ps.h"
#include "prom.h"
#include "esa_hist.h"

/* HELP of each counter (ps.h says the same of enum ps_counter). */
static const char *const ps_counter_help[__PS_C_MAX] = {
	[PS_C_RX]		= "Packets received",
	[PS_C_RX_RESULT]	= "RESULT copies from the switch",
	[PS_C_RX_HOLD]		= "RESULT/HOLD packets (policy atp)",
	[PS_C_RX_PARTIAL]	= "PARTIAL packets",
	[PS_C_RX_COLLISION]	= "COLLISION packets (single ranks)",
	[PS_C_RX_FETCHED]	= "RESULTs from a worker, answering a FETCH",
	[PS_C_DONE_SWITCH]	= "Chunks the switch completed (their copy kept)",
	[PS_C_DONE_DELIVER]	= "Whole sums the PS delivered (DELIVER)",
	[PS_C_DONE_MERGED]	= "Chunks the PS completed by the merge rule",
	[PS_C_DONE_FETCHED]	= "Chunks recovered from a worker's copy",
	[PS_C_DONE_OVERFLOW]	= "Chunks whose sum is not representable",
	[PS_C_RESULT_TX]	= "RESULT packets sent to workers",
	[PS_C_SUM_TX]		= "Sums sent to the switch for the workers (SUM)",
	[PS_C_RESEND_ANSWER]	= "RESULT packets sent answering a resend",
	[PS_C_ACK_TX]		= "ACKs sent to the switch (policy atp)",
	[PS_C_FETCH_TX]		= "FETCH packets sent to workers",
	[PS_C_DUP_RESULT]	= "Sums of chunks already known",
	[PS_C_DUP_SINGLE]	= "Single ranks already kept for their chunk",
	[PS_C_OVERLAP]		= "Partials sharing a rank with a kept one",
	[PS_C_LATE]		= "Pieces of chunks already complete",
	[PS_C_PENDING_EVICTED]	= "Unfinished chunks dropped for memory",
	[PS_C_CACHE_EVICTED]	= "Results dropped from the cache for memory",
	[PS_C_RX_PROBE]		= "Empty datagrams: a worker checking the PS runs",
	[PS_C_NO_SWITCH]	= "ACKs needed without a switch address",
	[PS_C_TX_ERROR]		= "Packets the socket refused",
	[PS_C_TX_UDP]		= "On AF_XDP: packets sent by UDP instead (next hop not resolved, frames posted)",
	[PS_C_RX_COALESCED]	= "Datagrams received coalesced by GRO (UDP_GRO)",
};

static bool is_drop(int c)
{
	return !strncmp(ps_counter_names[c], "drop_", 5);
}

static void job_label(char *buf, size_t len, const struct ps *ps, int i)
{
	char id[8];

	buf[0] = 0;
	if (i >= 0) {
		snprintf(id, sizeof(id), "%u", ps_job(ps, i)->id);
		prom_label(buf, len, "job", id);
	}
}

/* A counter of every job, then of no job when it moved. */
static void counter(FILE *f, const struct ps *ps, int c)
{
	char name[64], lab[64];

	snprintf(name, sizeof(name), "esa_ps_%s_total", ps_counter_names[c]);
	prom_head(f, name, "counter", ps_counter_help[c]);
	for (int i = -1; i < ps_njobs(ps); i++) {
		if (i < 0 && !ps_counter(ps, -1, c))
			continue;
		job_label(lab, sizeof(lab), ps, i);
		prom_u64(f, name, lab, ps_counter(ps, i, c));
	}
}

static void drops(FILE *f, const struct ps *ps)
{
	prom_head(f, "esa_ps_drops_total", "counter",
		  "Packets dropped, by reason (esa-ps -j: drop_REASON)");
	for (int i = -1; i < ps_njobs(ps); i++) {
		for (int c = 0; c < __PS_C_MAX; c++) {
			char lab[96];

			if (!is_drop(c) || (i < 0 && !ps_counter(ps, -1, c)))
				continue;
			job_label(lab, sizeof(lab), ps, i);
			prom_label(lab, sizeof(lab), "reason", ps_counter_names[c] + 5);
			prom_u64(f, "esa_ps_drops_total", lab, ps_counter(ps, i, c));
		}
	}
}

static void gauges(FILE *f, const struct ps *ps)
{
	char lab[64];

	prom_head(f, "esa_ps_jobs", "gauge", "Jobs served");
	prom_u64(f, "esa_ps_jobs", NULL, ps_njobs(ps));
	prom_head(f, "esa_ps_cached_chunks", "gauge", "Results kept to answer resends");
	for (int i = 0; i < ps_njobs(ps); i++) {
		job_label(lab, sizeof(lab), ps, i);
		prom_u64(f, "esa_ps_cached_chunks", lab, ps_cached(ps, i));
	}
	prom_head(f, "esa_ps_pending_chunks", "gauge", "Unfinished chunks kept");
	for (int i = 0; i < ps_njobs(ps); i++) {
		job_label(lab, sizeof(lab), ps, i);
		prom_u64(f, "esa_ps_pending_chunks", lab, ps_pending(ps, i));
	}
}

static void chunk_times(FILE *f, const struct ps *ps)
{
	double le[PS_T_BUCKETS - 1];
	uint64_t h[PS_T_BUCKETS];
	char lab[64];

	for (int b = 0; b < PS_T_BUCKETS - 1; b++)
		le[b] = esa_hist_bound_s(b);
	prom_head(f, "esa_ps_chunk_seconds", "histogram",
		  "Chunks the PS held pieces of, by the time from the first piece to "
		  "the answer (merged, a worker's copy, or the switch's sum)");
	for (int i = 0; i < ps_njobs(ps); i++) {
		uint64_t ns = ps_chunk_times(ps, i, h);

		job_label(lab, sizeof(lab), ps, i);
		prom_hist(f, "esa_ps_chunk_seconds", lab, le, h, PS_T_BUCKETS - 1, ns * 1e-9);
	}
}

void ps_print_prom(const struct ps *ps, FILE *f)
{
	for (int c = 0; c < __PS_C_MAX; c++)
		if (!is_drop(c))
			counter(f, ps, c);
	drops(f, ps);
	gauges(f, ps);
	chunk_times(f, ps);
}
