// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_sim's event queue: a min-heap of events by time, FIFO among equal
 * times (s->ord), so that a run is deterministic.  Owns s->h and s->ord
 * (and s->oom when the heap cannot grow).  Every part schedules through
 * sim_push(); the engine's loop takes them in order with sim_pop().  It
 * calls no other part.
 */
#include <stdlib.h>
#include "sim_int.h"

static inline int ev_lt(const struct ev *x, const struct ev *y)
{
	return x->t < y->t || (x->t == y->t && x->ord < y->ord);
}

static int heap_push(struct heap *h, const struct ev *e)
{
	size_t i, up;

	if (h->n == h->cap) {
		size_t nc = h->cap ? h->cap * 2 : 4096;
		struct ev *na = realloc(h->a, nc * sizeof(*na));

		if (!na)
			return -1;
		h->a = na;
		h->cap = nc;
	}
	i = h->n++;
	while (i) {
		up = (i - 1) / 2;
		if (!ev_lt(e, &h->a[up]))
			break;
		h->a[i] = h->a[up];
		i = up;
	}
	h->a[i] = *e;
	return 0;
}

/* The earliest event into out; the heap must not be empty. */
void sim_pop(struct heap *h, struct ev *out)
{
	struct ev last;
	size_t i = 0, c;

	*out = h->a[0];
	last = h->a[--h->n];
	for (;;) {
		c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && ev_lt(&h->a[c + 1], &h->a[c]))
			c++;
		if (!ev_lt(&h->a[c], &last))
			break;
		h->a[i] = h->a[c];
		i = c;
	}
	h->a[i] = last;
}

void sim_push(struct sim *s, stime_t t, int kind, const struct pkt *p,
	      unsigned dst, uint32_t arg)
{
	struct ev e = { .t = t, .ord = s->ord++, .kind = kind, .dst = dst,
			.arg = arg };

	if (p)
		e.p = *p;
	if (heap_push(&s->h, &e))
		s->oom = 1;
}
