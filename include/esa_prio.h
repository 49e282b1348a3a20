/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The priority levels of the JCT-oriented policies (las, srsf): one
 * definition for libesa, which stamps them on the wire, and for the
 * simulator, which models them.  A pure function of a chunk count, so every
 * worker of a job stamps the same priority on the same chunk.
 *
 * esa_prio_level(n, quantum, steps, top) is top minus
 * floor(steps * log2(1 + n / quantum)), floored at 0: `steps` levels per
 * doubling of the service (las: chunks the job streamed before this one)
 * or of the work left (srsf), in units of `quantum` chunks.  One step per
 * doubling suits a small priority range (a job registered with max-prio 7
 * keeps its levels for 2^7 quanta); 16 steps over 0..255 tell apart jobs
 * whose service differs by 4.4% (2^(1/16)) or more.
 */
#ifndef ESA_PRIO_H
#define ESA_PRIO_H

#include <math.h>
#include <stdint.h>

#define ESA_PRIO_STEPS_MAX	16

/*
 * How a job's chunks get their priorities: libesa's config key `priority`
 * and the simulator's -P (names: esa_names.h).
 */
enum esa_prio_policy {
	ESA_PRIO_STATIC = 0,	/* fixed per job (the simulator: seeded 1..255) */
	ESA_PRIO_LAS,		/* least attained service first */
	ESA_PRIO_SRSF,		/* smallest remaining allreduce (or job) first */
	ESA_PRIO_FLAT,		/* the simulator's only: everyone 1, esa never preempts */
	__ESA_PRIO_MAX,
};

static inline uint8_t esa_prio_level(uint64_t n, uint32_t quantum, unsigned int steps,
				     unsigned int top)
{
	double lv;

	if (!quantum)
		quantum = 1;
	if (steps < 1)
		steps = 1;
	if (steps > ESA_PRIO_STEPS_MAX)
		steps = ESA_PRIO_STEPS_MAX;
	if (top > 255)
		top = 255;
	/* exact where it matters: log2 of a power of two is exact */
	lv = floor(steps * log2(1.0 + (double)n / quantum));
	return (uint8_t)(lv >= top ? 0 : top - (unsigned int)lv);
}

#endif /* ESA_PRIO_H */
