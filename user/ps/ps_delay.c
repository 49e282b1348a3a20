// SPDX-License-Identifier: GPL-2.0
/*
 * Emulated link delay (--link-delay-us, testbeds without netem): a line of
 * datagrams (delayline.h), each held until its time.  Every datagram the
 * PS receives waits that long before the PS sees it, every one it sends
 * before it goes: the propagation of a longer wire, each way (libesa's
 * link_delay_us is the workers' side).  UDP only.  ps_io.c holds the two
 * lines and empties them.
 */
#include <stdlib.h>
#include <string.h>

#include "ps_daemon.h"

void dl_init(struct dl *d, uint64_t ns)
{
	d->buf = malloc((size_t)DL_CAP * BUFSZ);
	d->len = calloc(DL_CAP, sizeof(*d->len));
	d->a = calloc(DL_CAP, sizeof(*d->a));
	d->b = calloc(DL_CAP, sizeof(*d->b));
	if (!d->buf || !d->len || !d->a || !d->b || esa_dline_init(&d->line, ns, DL_CAP))
		die("out of memory");
}

/* Datagram buf goes in line d; false if the line is full. */
bool dl_push(struct dl *d, const void *buf, size_t len, const struct sockaddr_in *a,
		    const struct sockaddr_in *b, uint64_t now)
{
	uint32_t k = d->next;

	if (len > BUFSZ || !esa_dline_push(&d->line, k, now))
		return false;
	d->next = (k + 1) % DL_CAP;
	memcpy(d->buf + (size_t)k * BUFSZ, buf, len);
	d->len[k] = len;
	d->a[k] = *a;
	if (b)
		d->b[k] = *b;
	return true;
}
