/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The hosts' rules for reacting to the network, as pure functions: what
 * the reason a chunk reached its PS says (the PS echoes it in the RESULT),
 * the worker's congestion window, and its resend timer.  Compiled by libesa
 * (user/lib), esa-ps (user/ps) and the simulator (user/sim), so that the
 * testbed and the simulator at scale follow one rule book, as the switch's
 * rules are esa_policy.h's for the XDP program and the simulator alike.
 * docs/library.md, "Congestion", explains them.
 */
#ifndef _ESA_CC_H
#define _ESA_CC_H

#include <linux/types.h>
#include <linux/esa.h>

/* ------------------------------------------------------------------ */
/* Why a chunk reached its PS                                          */
/* ------------------------------------------------------------------ */

/*
 * How telling a reason is about why the chunk could not finish in the
 * switch, highest first: contention for switch memory (another job's
 * chunk held the slot, took it, or the job has none); a partial stuck long
 * enough to age or be flushed; a resend (a loss, or a slow peer); what
 * only follows an earlier reason (TOMB) or says nothing of the chunk's
 * fate (DELIVER).  The PS keeps the most telling reason among a chunk's
 * pieces and echoes it in the RESULT it sends.
 */
static inline int esa_reason_rank(__u8 reason)
{
	switch (reason) {
	case ESA_R_PREEMPT:
	case ESA_R_COLLISION:
	case ESA_R_NOSLOT:
		return 4;
	case ESA_R_AGED:
	case ESA_R_FLUSH:
		return 3;
	case ESA_R_RESEND:
	case ESA_R_DONE:
		return 2;
	case ESA_R_TOMB:
	case ESA_R_DELIVER:
		return 1;
	default:
		return 0;
	}
}

/* The more telling of two reasons (ties: the first). */
static inline __u8 esa_reason_max(__u8 a, __u8 b)
{
	return esa_reason_rank(b) > esa_reason_rank(a) ? b : a;
}

/* What a result tells the worker's window. */
enum esa_cc_signal {
	ESA_CC_SWITCH = 0,	/* summed in the switch: memory was there */
	ESA_CC_CONTENTION,	/* through the PS for want of switch memory */
	ESA_CC_SLOW,		/* through the PS after a loss or a wait */
	ESA_CC_NONE,		/* says nothing (a FETCHed or delivered sum) */
};

/*
 * A result's signal: from the PS (its address), or with a reason (a PS's sum
 * the switch delivered, ESA_T_SUM), it went through the PS for that reason;
 * else the switch summed it.
 */
static inline enum esa_cc_signal esa_cc_classify(int from_ps, __u8 reason)
{
	if (!from_ps && !reason)
		return ESA_CC_SWITCH;
	switch (esa_reason_rank(reason)) {
	case 4:
		return ESA_CC_CONTENTION;
	case 3:
	case 2:
		return ESA_CC_SLOW;
	default:
		return ESA_CC_NONE;
	}
}

/* ------------------------------------------------------------------ */
/* The congestion window                                               */
/* ------------------------------------------------------------------ */

/*
 * AIMD on contention, as ATP's hosts do on ECN marks: a result summed in
 * the switch grows the window by one chunk per window of results; a result
 * that went through the PS for want of switch memory halves it, at most
 * once per window (a decrease applies to the chunks sent after it, as
 * TCP's recovery point), never below `min`.  Losses and slow peers do not
 * shrink it: the switch could have summed those chunks.  The window is in
 * 1/256 chunks; `max` is the configured window.
 */
#define ESA_CC_ONE	256U

struct esa_cc {
	__u32	cwnd;		/* in 1/256 chunks */
	__u32	min, max;	/* chunks */
	__u64	recover;	/* positions below this do not decrease it */
	__u64	decreases;	/* how often it halved */
};

static inline void esa_cc_init(struct esa_cc *cc, __u32 min, __u32 max)
{
	if (min < 1)
		min = 1;
	if (min > max)
		min = max;
	cc->min = min;
	cc->max = max;
	cc->cwnd = max * ESA_CC_ONE;
	cc->recover = 0;
	cc->decreases = 0;
}

/* The window in whole chunks. */
static inline __u32 esa_cc_window(const struct esa_cc *cc)
{
	return cc->cwnd / ESA_CC_ONE;
}

/*
 * A result of the chunk at stream position pos came back, with signal sig;
 * next: the position the worker would send next (the recovery point of a
 * decrease).  Off (min == max): the window stays fixed.
 */
static inline void esa_cc_result(struct esa_cc *cc, enum esa_cc_signal sig,
				 __u64 pos, __u64 next)
{
	__u32 lo = cc->min * ESA_CC_ONE, hi = cc->max * ESA_CC_ONE;

	if (cc->min == cc->max)
		return;
	if (sig == ESA_CC_SWITCH) {
		cc->cwnd += ESA_CC_ONE * ESA_CC_ONE / cc->cwnd;
		if (cc->cwnd > hi)
			cc->cwnd = hi;
	} else if (sig == ESA_CC_CONTENTION && pos >= cc->recover) {
		cc->cwnd /= 2;
		if (cc->cwnd < lo)
			cc->cwnd = lo;
		cc->recover = next;
		cc->decreases++;
	}
}

/* ------------------------------------------------------------------ */
/* The resend timer                                                    */
/* ------------------------------------------------------------------ */

/*
 * The round-trip estimate, from chunks answered on their first send
 * (Jacobson and Karels, as TCP; the round trip includes the wait for the
 * chunk's slowest peer, so the estimate follows the job): the first
 * timeout of a chunk is srtt + 4 rttvar, within [min_ns, max_ns].  Times
 * in ns.
 */
struct esa_rto {
	__s64	srtt, rttvar;	/* 0: no sample yet */
	__u64	rto;		/* first timeout of a new chunk */
	__u64	min_ns, max_ns;
};

static inline void esa_rto_init(struct esa_rto *r, __u64 min_ns, __u64 max_ns)
{
	r->srtt = 0;
	r->rttvar = 0;
	r->min_ns = min_ns;
	r->max_ns = max_ns;
	r->rto = min_ns;
}

static inline void esa_rto_sample(struct esa_rto *r, __u64 rtt_ns)
{
	__s64 v = (__s64)rtt_ns, d;
	__u64 rto;

	if (!r->srtt) {
		r->srtt = v > 0 ? v : 1;
		r->rttvar = v / 2;
	} else {
		d = v - r->srtt;
		r->srtt += d / 8;
		r->rttvar += ((d < 0 ? -d : d) - r->rttvar) / 4;
	}
	rto = (__u64)(r->srtt + 4 * r->rttvar);
	if (rto < r->min_ns)
		rto = r->min_ns;
	if (rto > r->max_ns)
		rto = r->max_ns;
	r->rto = rto;
}

/*
 * The timeout of a resend whose last timeout was `last`: doubled, capped
 * at 4 x the round-trip timeout while other results keep arriving (a late
 * chunk is then a loss or a slow peer, and a long backoff would only stall
 * the window), at max_ns when nothing comes back (a switch or PS down).
 */
static inline __u64 esa_rto_backoff(const struct esa_rto *r, __u64 last,
				    int results_flowing)
{
	__u64 cap = r->max_ns, t = 2 * last;

	if (results_flowing && 4 * r->rto < cap)
		cap = 4 * r->rto;
	return t > cap ? cap : t;
}

#endif /* _ESA_CC_H */
