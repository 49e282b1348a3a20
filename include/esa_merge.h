/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The PS merge rule (docs/protocol.md), on the ranks of one chunk: a
 * multi-rank partial is kept only while it shares no rank with the
 * partials kept so far; single ranks are kept once each; the chunk is
 * complete when the kept pieces cover every rank, and its sum is the kept
 * partials plus the singles they do not cover, so no rank counts twice.
 * The values are the caller's: esa-ps (ps_core.c) sums them, the
 * simulator (sim_ps.c) has none, the test model (psmodel.h) checks them.
 */
#ifndef _ESA_MERGE_H
#define _ESA_MERGE_H

#include <stdbool.h>
#include <linux/types.h>

struct esa_merge {
	__u64	multi;		/* ranks in kept multi-rank partials */
	__u64	single;		/* ranks kept on their own */
};

enum esa_merge_verdict {
	ESA_MERGE_KEPT,		/* the piece counts: add its values */
	ESA_MERGE_OVERLAP,	/* a partial sharing a rank with a kept one */
	ESA_MERGE_DUP,		/* a single rank kept already */
};

/* A partial of several ranks (bitmap), or one rank's values alone. */
static inline int esa_merge_add(struct esa_merge *m, __u64 bitmap, bool partial)
{
	if (partial && (bitmap & (bitmap - 1))) {
		if (bitmap & m->multi)
			return ESA_MERGE_OVERLAP;
		m->multi |= bitmap;
		return ESA_MERGE_KEPT;
	}
	if (m->single & bitmap)
		return ESA_MERGE_DUP;
	m->single |= bitmap;
	return ESA_MERGE_KEPT;
}

/* Do the kept pieces cover every rank of full? */
static inline bool esa_merge_complete(const struct esa_merge *m, __u64 full)
{
	return ((m->multi | m->single) & full) == full;
}

/* The singles whose values go into the sum: those no kept partial covers. */
static inline __u64 esa_merge_own(const struct esa_merge *m)
{
	return m->single & ~m->multi;
}

#endif /* _ESA_MERGE_H */
