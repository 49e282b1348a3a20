// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Workers' counters in Prometheus's text format (esa_worker_metrics(),
 * esa.h): for esa-jobs' --metrics-file and the Python package, one writer
 * so that both name them alike (docs/metrics.md).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "esa_int.h"
#include "esa_hist.h"
#include "prom.h"

/* struct esa_stats's fields as metrics: counters but for the states. */
static const struct {
	const char *field, *type, *help;
} fields[] = {
	{ "ops", "counter", "Allreduces completed" },
	{ "elems", "counter", "Elements reduced" },
	{ "chunks", "counter", "Chunks completed (data, scale, redo)" },
	{ "tx_packets", "counter", "DATA packets sent, resends included" },
	{ "tx_resends", "counter", "DATA packets resent after a timeout" },
	{ "rx_packets", "counter", "Packets received" },
	{ "rx_results", "counter", "Results used (exactly one per chunk)" },
	{ "rx_from_ps", "counter", "Results used that the PS sent, not the switch" },
	{ "rx_duplicates", "counter", "Results of chunks already done" },
	{ "rx_stale", "counter", "Results of no chunk in flight" },
	{ "rx_invalid", "counter", "Packets that are not a result of this job" },
	{ "overflows", "counter", "Results flagged overflow" },
	{ "redos", "counter", "Chunks redone exactly after an overflow" },
	{ "scale_chunks", "counter", "Float scale negotiation chunks" },
	{ "fetch_rx", "counter", "FETCH requests from the PS" },
	{ "fetch_answered", "counter", "FETCH requests answered with a kept result" },
	{ "send_again", "counter", "Sends that would block, retried" },
	{ "rx_untrusted", "counter", "Results from neither the switch nor the PS, ignored" },
	{ "fetch_refused", "counter", "FETCHes not from the PS" },
	{ "icmp_errors", "counter", "ICMP errors about packets sent" },
	{ "ps_probes", "counter", "Empty datagrams to the PS in a silence" },
	{ "xdp_drops", "counter", "AF_XDP: packets to us dropped" },
	{ "rx_coalesced", "counter", "Datagrams received coalesced (UDP_GRO)" },
	{ "waits", "counter", "Times the worker slept for input or a timer" },
	{ "resends_deferred", "counter", "Late packets held back a timeout (a slow peer)" },
	{ "rx_contention", "counter",
	  "Results through the PS for want of switch memory (preempt, collision, noslot)" },
	{ "cc_decreases", "counter", "Times the window halved (window_min)" },
	{ "cwnd", "gauge", "The congestion window now, chunks" },
	{ "rcvbuf", "gauge", "Receive buffer the kernel granted, bytes" },
	{ "io_xdp", "gauge", "1: the transport is AF_XDP, 0: UDP" },
	{ "xdp_zerocopy", "gauge", "1: AF_XDP in zero-copy mode" },
	{ "udp_gro", "gauge", "1: the switch's results arrive coalesced (UDP_GRO)" },
};

static const char *labels(const esa_worker *w, char *buf, size_t len)
{
	char v[16];

	buf[0] = 0;
	snprintf(v, sizeof(v), "%d", w->cfg.job);
	prom_label(buf, len, "job", v);
	snprintf(v, sizeof(v), "%d", w->cfg.rank);
	return prom_label(buf, len, "rank", v);
}

static void write_all(FILE *f, esa_worker *const *ws, int n)
{
	double le[ESA_RTT_BUCKETS - 1];
	char name[64], lab[64];

	for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]); k++) {
		bool counter = !strcmp(fields[k].type, "counter");

		snprintf(name, sizeof(name), "esa_worker_%s%s", fields[k].field,
			 counter ? "_total" : "");
		prom_head(f, name, fields[k].type, fields[k].help);
		for (int i = 0; i < n; i++)
			prom_u64(f, name, labels(ws[i], lab, sizeof(lab)),
				 esa_worker_stat(ws[i], fields[k].field));
	}
	for (int b = 0; b < ESA_RTT_BUCKETS - 1; b++)
		le[b] = esa_hist_bound_s(b);
	prom_head(f, "esa_worker_chunk_rtt_seconds", "histogram",
		  "Round trips of chunks answered on their first send (first send to result)");
	for (int i = 0; i < n; i++) {
		struct esa_stats st;

		esa_worker_stats(ws[i], &st, sizeof(st));
		prom_hist(f, "esa_worker_chunk_rtt_seconds", labels(ws[i], lab, sizeof(lab)),
			  le, st.rtt_hist, ESA_RTT_BUCKETS - 1, st.rtt_us_sum * 1e-6);
	}
}

int esa_worker_metrics(esa_worker *const *ws, int n, char *buf, size_t len)
{
	char *text = NULL;
	size_t tlen = 0;
	FILE *f;

	if (!ws || n < 0 || (!buf && len))
		return -EINVAL;
	for (int i = 0; i < n; i++)
		if (!ws[i])
			return -EINVAL;
	f = open_memstream(&text, &tlen);
	if (!f)
		return -ENOMEM;
	write_all(f, ws, n);
	if (fclose(f))
		return -ENOMEM;
	if (len)
		snprintf(buf, len, "%s", text);
	free(text);
	return tlen > INT32_MAX ? -EOVERFLOW : (int)tlen;
}
