/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one histogram of durations: power-of-two buckets of microseconds.
 * libesa's chunk round trips (struct esa_stats.rtt_hist, ESA_RTT_BUCKETS)
 * and esa-ps's chunk times (ps.h) count in them, and the Prometheus
 * exporters (prom.h) give each bucket's bound in seconds.
 */
#ifndef ESA_HIST_H
#define ESA_HIST_H

#include <stdint.h>

/*
 * The bucket of a duration of us microseconds among n: i holds what took
 * at most 2^i us and more than 2^(i-1) (i = 0: at most 1 us), the last,
 * n - 1, everything above 2^(n-2) us.
 */
static inline int esa_hist_bucket(uint64_t us, int n)
{
	if (us <= 1)
		return 0;
	if (us > 1ULL << (n - 2))
		return n - 1;
	return 64 - __builtin_clzll(us - 1);
}

/* The upper bound of bucket i < n - 1 in seconds (the last has none). */
static inline double esa_hist_bound_s(int i)
{
	return (double)(1ULL << i) * 1e-6;
}

#endif /* ESA_HIST_H */
