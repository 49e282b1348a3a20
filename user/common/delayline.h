/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A delay line: a FIFO of items each due a fixed time after it went in, so
 * that a testbed can give a link the propagation delay of a longer wire
 * (the host kernel here has no netem).  Header-only, for libesa's transport
 * and esa-ps alike; the items are the caller's (an index into its buffers).
 * With one delay for every item, due times only grow: the head is always
 * the next one due.
 */
#ifndef ESA_DELAYLINE_H
#define ESA_DELAYLINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

struct esa_dline {
	uint64_t delay_ns;
	uint32_t cap, head, tail;	/* head - tail items in line */
	uint64_t *due;
	uint32_t *item;
};

static inline int esa_dline_init(struct esa_dline *d, uint64_t delay_ns, uint32_t cap)
{
	d->delay_ns = delay_ns;
	d->cap = cap;
	d->head = d->tail = 0;
	d->due = calloc(cap, sizeof(*d->due));
	d->item = calloc(cap, sizeof(*d->item));
	return d->due && d->item ? 0 : -1;
}

static inline void esa_dline_free(struct esa_dline *d)
{
	free(d->due);
	free(d->item);
	d->due = NULL;
	d->item = NULL;
}

static inline uint32_t esa_dline_len(const struct esa_dline *d)
{
	return d->head - d->tail;
}

static inline bool esa_dline_full(const struct esa_dline *d)
{
	return esa_dline_len(d) == d->cap;
}

/* Item goes in at now; false if the line is full. */
static inline bool esa_dline_push(struct esa_dline *d, uint32_t item, uint64_t now)
{
	if (esa_dline_full(d))
		return false;
	d->due[d->head % d->cap] = now + d->delay_ns;
	d->item[d->head % d->cap] = item;
	d->head++;
	return true;
}

/* The next item due by now: true and *item, or false. */
static inline bool esa_dline_pop(struct esa_dline *d, uint64_t now, uint32_t *item)
{
	if (d->head == d->tail || d->due[d->tail % d->cap] > now)
		return false;
	*item = d->item[d->tail % d->cap];
	d->tail++;
	return true;
}

/* When the next item is due, UINT64_MAX if none is in line. */
static inline uint64_t esa_dline_next(const struct esa_dline *d)
{
	return d->head == d->tail ? UINT64_MAX : d->due[d->tail % d->cap];
}

#endif /* ESA_DELAYLINE_H */
