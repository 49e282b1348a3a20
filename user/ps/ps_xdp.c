// SPDX-License-Identifier: GPL-2.0
/*
 * esa-ps over AF_XDP (--io xdp|auto, ps_daemon.h): one socket of libesa's
 * xsk.c for every PS address, its frames handed to the PS in place and
 * back at once; what the PS sends is built in a send frame, or goes by UDP
 * (counted) while the next hop is not resolved or every frame is posted.
 */
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "ps_daemon.h"
#include "xsk.h"

#define XS_TX	1024	/* send frames, used in turn */
#define XS_WAITS	10	/* a full ring waited for (1 ms each) per flush */

struct esa_xsk *xs;
static uint32_t xs_next, xs_pend[BATCH];
static int xs_npend;

/*
 * Post what was built: as much as the ring takes, waiting for room a few
 * times (1 ms each) and not once asked to exit; what is left is dropped
 * and counted (the workers' resends recover it).  A device that is down
 * keeps what was posted (it goes when it is up) and takes no more.
 */
void xs_flush(struct ps *ps)
{
	int done = 0, waits = 0;

	while (done < xs_npend && !esa_want.exit) {
		int k = esa_xsk_send(xs, xs_pend + done, xs_npend - done);

		if (k < 0)
			break;
		done += k;
		if (!k) {
			struct pollfd p = { .fd = esa_xsk_fd(xs), .events = POLLOUT };

			if (++waits > XS_WAITS)
				break;
			poll(&p, 1, 1);
		}
	}
	for (; done < xs_npend; done++)
		ps_note(ps, PS_C_TX_ERROR);
	xs_npend = 0;
}

/* Build the packet in a send frame; false: send it by UDP (counted): its
 * next hop is not resolved yet (xsk_neigh.c resolves it meanwhile, without
 * waiting), or the frame is still posted. */
bool xs_tx(struct ps *ps, const struct sockaddr_in *from, const struct sockaddr_in *to,
	   const void *buf, size_t len)
{
	uint32_t f = xs_next++ % XS_TX;
	char err[160];

	if (xs_npend == BATCH)
		xs_flush(ps);
	/* a frame the device has not sent yet must not change */
	if (esa_xsk_tx_busy(xs, f) || esa_xsk_tx_prep(xs, f, from, to, len, err, sizeof(err))) {
		ps_note(ps, PS_C_TX_UDP);
		return false;
	}
	memcpy(esa_xsk_tx_payload(xs, f), buf, len);
	xs_pend[xs_npend++] = f;
	return true;
}

void xs_open(const struct opts *o, char *why, size_t len)
{
	struct sockaddr_in local[MAX_SOCKS];
	struct esa_xsk_cfg c = {
		.ifname = o->ifname, .route_to = o->ps.sw[0].sin_addr, .queue = o->queue,
		.local = local, .nlocal = nsocks, .tx_frames = XS_TX, .rx_hold = 0,
		.pkt_max = ESA_HDR_LEN + 4 * o->ps.nvals,
	};
	int rc;

	for (int k = 0; k < nsocks; k++)
		local[k] = socks[k].addr;
	rc = esa_xsk_open(&xs, &c, why, len);
	if (rc && o->io == IO_XDP)
		die("io xdp: %s", why);
	if (!rc)
		snprintf(why, len, "%s", esa_xsk_desc(xs));
}

/* What AF_XDP received: to the PS, frames back at once. */
void xs_rx(struct ps *ps)
{
	struct esa_xsk_rx rx[BATCH];
	int n;

	do {
		uint64_t t = now_ns();

		n = esa_xsk_recv(xs, rx, BATCH);
		for (int i = 0; i < n; i++) {
			ps_rx(ps, rx[i].pkt, rx[i].len, &rx[i].src, t);
			esa_xsk_release(xs, rx[i].buf);
		}
		esa_xsk_flush(xs);
		xs_flush(ps);
		flush_socks(ps);
	} while (n == BATCH);
}
