// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libesa: the worker's side of AF_XDP (the socket, frames and program are
 * the xsk*.c files', shared with esa-ps).  Owns w->xsk: its send frames
 * are the DATA packets' buffers (headers written once, at opening, for the
 * switch's next hop), what arrives goes to the engine (w->rx) in its frame,
 * and a frame the engine keeps for FETCH goes back when released.  io.c
 * calls it for io=xdp and io=auto.
 */
#include <stdio.h>

#include "esa_int.h"
#include "xsk.h"

int esa_xsk_worker_open(struct esa_worker *w, char *err, size_t len)
{
	struct esa_xsk_cfg c = {
		.ifname = w->cfg.ifname, .route_to = w->cfg.sw.sin_addr, .queue = w->cfg.queue,
		.local = &w->cfg.local, .nlocal = 1, .tx_frames = w->npkts,
		.rx_hold = w->nrc, .pkt_max = w->pktlen,
		.busy_poll_us = w->cfg.xsk_busy_poll, .tx_budget = w->cfg.xsk_tx_budget,
	};
	/* xdp_workers workers like this one, or of window 128 if larger */
	uint32_t one = esa_xsk_need(w->npkts, w->nrc), dflt = esa_xsk_need(4 * 128, 4 * 128);
	uint8_t mac[6];
	int rc;

	c.umem_frames = w->cfg.xdp_workers * (one > dflt ? one : dflt);
	rc = esa_xsk_open(&w->xsk, &c, err, len);
	/* the switch's next hop, resolved now (opening may wait for it) */
	if (!rc)
		rc = esa_xsk_next_hop(w->xsk, w->cfg.sw.sin_addr, mac, err, len);
	for (uint32_t i = 0; !rc && i < w->npkts; i++)
		rc = esa_xsk_tx_prep(w->xsk, i, &w->cfg.local, &w->cfg.sw, w->pktlen, err, len);
	if (rc) {
		esa_xsk_close(w->xsk);
		w->xsk = NULL;
		return rc;
	}
	snprintf(w->io_desc, sizeof(w->io_desc), "%s", esa_xsk_desc(w->xsk));
	w->st.xdp_zerocopy = esa_xsk_zerocopy(w->xsk);
	if (w->cfg.xsk_busy_poll && !esa_xsk_busy_napi(w->xsk))
		esa_warn(w, "xsk_busy_poll: the kernel knows no NAPI for the queue (%s; the "
			 "driver does not name it, netif_queue_set_napi()): its busy loop polls "
			 "nothing, libesa spins on the ring alone", esa_xsk_desc(w->xsk));
	return 0;
}

void esa_xsk_worker_close(struct esa_worker *w)
{
	esa_xsk_close(w->xsk);
	w->xsk = NULL;
}

uint8_t *esa_xsk_worker_pkt(struct esa_worker *w, uint32_t id)
{
	return esa_xsk_tx_payload(w->xsk, id);
}

int esa_xsk_worker_send(struct esa_worker *w, struct esa_pkt **p, int n, uint64_t now)
{
	uint32_t f[ESA_BATCH];
	int k;

	for (int i = 0; i < n; i++)
		f[i] = p[i]->id;
	k = esa_xsk_send(w->xsk, f, n);
	if (k >= 0 && k < n) {
		w->st.send_again++;
		w->send_blocked = true;
	}
	return k;
}

bool esa_xsk_worker_busy(struct esa_worker *w, uint32_t id)
{
	return esa_xsk_tx_busy(w->xsk, id);
}

bool esa_xsk_worker_claim(struct esa_worker *w, uint32_t id)
{
	return esa_xsk_tx_claim(w->xsk, id);
}

int esa_xsk_worker_recv(struct esa_worker *w, uint64_t now)
{
	struct esa_xsk_rx rx[ESA_BATCH];
	int got = 0, n = esa_xsk_tx_kick(w->xsk);	/* what the device pushed back */

	if (n < 0)
		return n;
	do {
		n = esa_xsk_recv(w->xsk, rx, ESA_BATCH);
		for (int i = 0; i < n; i++)
			if (!w->rx(w, rx[i].pkt, rx[i].len, &rx[i].src, now, rx[i].buf))
				esa_xsk_release(w->xsk, rx[i].buf);
		got += n;
	} while (n == ESA_BATCH);
	esa_xsk_flush(w->xsk);
	return got;
}

void esa_xsk_worker_release(struct esa_worker *w, uint64_t buf)
{
	esa_xsk_release(w->xsk, buf);
}

bool esa_xsk_worker_busy_wait(struct esa_worker *w, uint64_t deadline_ns)
{
	return esa_xsk_busy_wait(w->xsk, deadline_ns);
}

int esa_xsk_worker_fd(struct esa_worker *w)
{
	return esa_xsk_fd(w->xsk);
}
