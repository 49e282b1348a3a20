// SPDX-License-Identifier: GPL-2.0
/*
 * What the PS counts (ps.h, enum ps_counter), read per job, for packets of
 * no job and in total, and printed as text or JSON (esa-ps's SIGUSR1, -i,
 * -j); ps_metrics.c writes the same in Prometheus's format.
 */
#include <stdio.h>
#include <string.h>

#include "ps_int.h"
#include "daemon.h"

const char *const ps_counter_names[__PS_C_MAX] = {
	[PS_C_RX]		= "rx",
	[PS_C_RX_RESULT]	= "rx_result",
	[PS_C_RX_HOLD]		= "rx_hold",
	[PS_C_RX_PARTIAL]	= "rx_partial",
	[PS_C_RX_COLLISION]	= "rx_collision",
	[PS_C_RX_FETCHED]	= "rx_fetched",
	[PS_C_DONE_SWITCH]	= "done_switch",
	[PS_C_DONE_DELIVER]	= "done_deliver",
	[PS_C_DONE_MERGED]	= "done_merged",
	[PS_C_DONE_FETCHED]	= "done_fetched",
	[PS_C_DONE_OVERFLOW]	= "done_overflow",
	[PS_C_RESULT_TX]	= "result_tx",
	[PS_C_RESEND_ANSWER]	= "resend_answers",
	[PS_C_SUM_TX]		= "sum_tx",
	[PS_C_ACK_TX]		= "ack_tx",
	[PS_C_FETCH_TX]		= "fetch_tx",
	[PS_C_DUP_RESULT]	= "dup_results",
	[PS_C_DUP_SINGLE]	= "dup_singles",
	[PS_C_OVERLAP]		= "overlaps",
	[PS_C_LATE]		= "late",
	[PS_C_PENDING_EVICTED]	= "pending_evicted",
	[PS_C_CACHE_EVICTED]	= "cache_evicted",
	[PS_C_DROP_SHORT]	= "drop_short",
	[PS_C_DROP_VERSION]	= "drop_version",
	[PS_C_DROP_JOB]		= "drop_job",
	[PS_C_DROP_TYPE]	= "drop_type",
	[PS_C_DROP_COUNT]	= "drop_count",
	[PS_C_DROP_HEADER]	= "drop_header",
	[PS_C_DROP_SOURCE]	= "drop_source",
	[PS_C_DROP_UNASKED]	= "drop_unasked",
	[PS_C_RX_PROBE]		= "rx_probe",
	[PS_C_NO_SWITCH]	= "no_switch",
	[PS_C_TX_ERROR]		= "tx_error",
	[PS_C_TX_UDP]		= "tx_udp",
	[PS_C_RX_COALESCED]	= "rx_coalesced",
};

void ps_note(struct ps *ps, int c)
{
	if (c >= 0 && c < __PS_C_MAX)
		ps->nojob[c]++;
}

uint64_t ps_counter(const struct ps *ps, int i, int c)
{
	uint64_t t;

	if (c < 0 || c >= __PS_C_MAX)
		return 0;
	if (i >= 0)
		return i < ps->njobs ? ps->jobs[i]->c[c] : 0;
	if (i == -1)
		return ps->nojob[c];
	t = ps->nojob[c] + ps->ended[c];
	for (int k = 0; k < ps->njobs; k++)
		t += ps->jobs[k]->c[c];
	return t;
}

uint64_t ps_chunk_times(const struct ps *ps, int i, uint64_t hist[PS_T_BUCKETS])
{
	if (i < 0 || i >= ps->njobs)
		return 0;
	memcpy(hist, ps->jobs[i]->t_hist, sizeof(ps->jobs[i]->t_hist));
	return ps->jobs[i]->t_sum_ns;
}

uint32_t ps_cached(const struct ps *ps, int i)
{
	return i >= 0 && i < ps->njobs ? ps->jobs[i]->res_used : 0;
}

uint32_t ps_pending(const struct ps *ps, int i)
{
	return i >= 0 && i < ps->njobs ? ps->jobs[i]->pend_used : 0;
}

int ps_lookup(const struct ps *ps, int i, uint32_t seq, int32_t *vals, uint8_t *flags)
{
	struct ps_job *j;
	int32_t ri;

	if (i < 0 || i >= ps->njobs)
		return 0;
	j = ps->jobs[i];
	ri = ps_map_get(&j->res_map, seq);
	if (ri < 0)
		return 0;
	if (vals)
		memcpy(vals, j->res_vals + (size_t)ri * ps->o.nvals, ps->o.nvals * 4);
	if (flags)
		*flags = j->res[ri].flags;
	return 1;
}

static void print_row(FILE *f, const uint64_t *c, bool json)
{
	esa_print_counters(f, ps_counter_names, c, __PS_C_MAX,
			   json ? ESA_CTR_JSON : ESA_CTR_NONZERO);
}

void ps_print_stats(const struct ps *ps, FILE *f, bool json)
{
	uint64_t tot[__PS_C_MAX];

	for (int k = 0; k < __PS_C_MAX; k++)
		tot[k] = ps_counter(ps, -2, k);
	if (json) {
		fprintf(f, "{\"total\":{");
		print_row(f, tot, true);
		fprintf(f, "},\"nojob\":{");
		print_row(f, ps->nojob, true);
		fprintf(f, "},\"jobs\":[");
		for (int i = 0; i < ps->njobs; i++) {
			fprintf(f, "%s{\"job\":%u,\"cached\":%u,\"pending\":%u,", i ? "," : "",
				ps->jobs[i]->cfg.id, ps->jobs[i]->res_used,
				ps->jobs[i]->pend_used);
			print_row(f, ps->jobs[i]->c, true);
			fprintf(f, ",\"chunk_ns_sum\":%llu,\"chunk_hist\":[",
				(unsigned long long)ps->jobs[i]->t_sum_ns);
			for (int b = 0; b < PS_T_BUCKETS; b++)
				fprintf(f, "%s%llu", b ? "," : "",
					(unsigned long long)ps->jobs[i]->t_hist[b]);
			fprintf(f, "]}");
		}
		fprintf(f, "]}\n");
	} else {
		fprintf(f, "total:");
		print_row(f, tot, false);
		fprintf(f, "\n");
		for (int i = 0; i < ps->njobs; i++) {
			fprintf(f, "job %u: cached %u pending %u", ps->jobs[i]->cfg.id,
				ps->jobs[i]->res_used, ps->jobs[i]->pend_used);
			print_row(f, ps->jobs[i]->c, false);
			fprintf(f, "\n");
		}
	}
	fflush(f);
}
