// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libesa: a worker's life.  Opening (the config checked and copied, the
 * memory of the window, the transport opened, the round-trip estimate and
 * the congestion window set), runs (esa_worker_set_run()), closing, and
 * the counters (w->st; esa_worker_stats(), esa_worker_stat()).
 *
 * The engine's files, from the top: request.c (the request API and the
 * pump), diag.c (silence), recv.c (results), chunk.c (the window's entries
 * and the packets built for them), send.c (the ready ring, the resend
 * heap), then the transport: io.c (opening, dispatch), udp.c, io_xsk.c
 * (AF_XDP), delay.c (an emulated link delay).  esa_int.h says which owns
 * what.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "esa_int.h"
#include "esa_policy.h"
#include "xsk.h"

int esa_version(void)
{
	return ESA_LIB_VERSION;
}

const char *esa_worker_io(const esa_worker *w)
{
	return w ? w->io_desc : "no worker";
}

/*
 * A run's sequence numbers start at a hash of its number, so that a new run
 * of a job id does not meet the results and pieces the PS keeps of an
 * earlier run by sequence number (docs/library.md, "Runs").  The switch's
 * hash of job ids; it keeps 0 at 0.
 */
uint32_t esa_run_base(uint32_t run)
{
	return esa_hash32(run);
}

int esa_worker_set_run(esa_worker *w, uint32_t run)
{
	if (!w)
		return -EINVAL;
	if (w->nops || w->ops)
		return -EBUSY;
	w->cfg.run = run;
	w->next_base = esa_run_base(run);
	return 0;
}

/* The worker's memory, but for the transport's; 0 or -ENOMEM. */
static int worker_alloc(struct esa_worker *w)
{
	w->ent = calloc(w->nent, sizeof(*w->ent));
	w->scratchmem = calloc((size_t)w->nent * 2 * w->nvals, sizeof(int32_t));
	w->rc_seq = calloc(w->nrc, sizeof(*w->rc_seq));
	w->rc_flags = calloc(w->nrc, 1);
	w->rc_pkt = calloc(w->nrc, sizeof(*w->rc_pkt));
	w->rc_buf = calloc(w->nrc, sizeof(*w->rc_buf));
	w->ready = calloc(w->npkts, sizeof(*w->ready));
	w->heap = calloc(w->npkts, sizeof(*w->heap));
	if (!w->ent || !w->scratchmem || !w->rc_seq || !w->rc_flags || !w->rc_pkt ||
	    !w->rc_buf || !w->ready || !w->heap)
		return -ENOMEM;
	for (uint32_t i = 0; i < w->nent; i++) {
		w->ent[i].scratch = w->scratchmem + (size_t)i * 2 * w->nvals;
		w->ent[i].pos = UINT64_MAX;
	}
	return 0;
}

esa_worker *esa_worker_open(const esa_config *c, char *err, size_t errlen)
{
	char why[256] = "";
	struct esa_worker *w;
	int rc;

	if (!err || !errlen) {
		err = why;
		errlen = sizeof(why);
	}
	if (!c) {
		snprintf(err, errlen, "no config");
		errno = EINVAL;
		return NULL;
	}
	rc = esa_config_check(c, err, errlen);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	w->cfg = *c;
	w->nvals = c->values;
	w->pktlen = ESA_HDR_LEN + 4 * (size_t)w->nvals;
	w->full = c->workers >= 64 ? ~0ULL : (1ULL << c->workers) - 1;
	w->window = c->window;
	w->nent = 2 * w->window;
	w->npkts = 2 * w->nent;
	w->nrc = 4 * w->window;
	w->next_base = esa_run_base(c->run);
	w->udp.fd = w->udp.sfd = -1;
	w->rx = esa_rx_packet;
	w->rng = esa_now_mono_ns() ^ ((uint64_t)c->job << 32) ^ ((uint64_t)c->rank << 16) ^
		 (uintptr_t)w;
	rc = worker_alloc(w);
	if (rc)
		snprintf(err, errlen, "out of memory");
	else
		rc = esa_io_open(w, err, errlen);
	if (rc) {
		esa_worker_close(w);
		errno = -rc;
		return NULL;
	}
	for (uint32_t i = 0; i < w->nent; i++) {
		for (int k = 0; k < 2; k++) {
			struct esa_pkt *p = &w->ent[i].p[k];

			p->id = 2 * i + k;
			p->heap = -1;
			p->buf = esa_io_pkt(w, p->id);
		}
	}
	w->st.io_xdp = !!w->xsk;
	w->last_rx_ns = w->last_sw_ns = w->last_ps_ns = esa_now_mono_ns();
	esa_rto_init(&w->rto, (uint64_t)c->timeout_us * 1000,
		     (uint64_t)c->timeout_max_ms * NSEC_PER_MSEC);
	esa_cc_init(&w->cc, c->window_min ? c->window_min : c->window, c->window);
	w->st.cwnd = esa_cc_window(&w->cc);
	return w;
}

void esa_worker_close(esa_worker *w)
{
	struct esa_request *r, *n;

	if (!w)
		return;
	for (r = w->ops; r; r = n) {
		n = r->next;
		esa_op_free(r);
	}
	/* the kept results' buffers back to the transport (AF_XDP: to the
	 * UMEM other workers of this process may share) */
	for (uint32_t i = 0; w->rc_flags && i < w->nrc; i++)
		if (w->rc_flags[i] & ESA_RC_VALID)
			esa_io_release(w, w->rc_buf[i]);
	esa_io_close(w);
	free(w->ent);
	free(w->scratchmem);
	free(w->rc_seq);
	free(w->rc_flags);
	free(w->rc_pkt);
	free(w->rc_buf);
	free(w->ready);
	free(w->heap);
	free(w);
}

/* Counters read from the transport when asked. */
static void io_stats(const struct esa_worker *w)
{
	if (w->xsk)
		((struct esa_worker *)w)->st.xdp_drops = esa_xsk_rx_bad(w->xsk);
}

int esa_worker_stats(const esa_worker *w, struct esa_stats *s, size_t size)
{
	if (!w || !s)
		return -EINVAL;
	io_stats(w);
	memcpy(s, &w->st, size < sizeof(w->st) ? size : sizeof(w->st));
	return 0;
}

#define SF(f) { #f, offsetof(struct esa_stats, f) }
static const struct {
	const char *name;
	size_t off;
} stat_fields[] = {
	SF(ops), SF(elems), SF(chunks), SF(tx_packets), SF(tx_resends),
	SF(rx_packets), SF(rx_results), SF(rx_from_ps), SF(rx_duplicates), SF(rx_stale),
	SF(rx_invalid), SF(overflows), SF(redos), SF(scale_chunks), SF(fetch_rx),
	SF(fetch_answered), SF(send_again), SF(rtt_us_sum), SF(rtt_samples),
	SF(rx_untrusted), SF(fetch_refused), SF(icmp_errors), SF(ps_probes), SF(rcvbuf),
	SF(io_xdp), SF(xdp_zerocopy), SF(xdp_drops), SF(udp_gro), SF(rx_coalesced),
	SF(waits), SF(resends_deferred), SF(rx_contention), SF(cc_decreases), SF(cwnd),
};

int64_t esa_worker_stat(const esa_worker *w, const char *name)
{
	if (!w || !name)
		return -1;
	io_stats(w);
	for (size_t i = 0; i < sizeof(stat_fields) / sizeof(stat_fields[0]); i++)
		if (!strcmp(name, stat_fields[i].name))
			return *(const uint64_t *)((const char *)&w->st + stat_fields[i].off);
	return -1;
}
