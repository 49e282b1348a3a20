// SPDX-License-Identifier: GPL-2.0
/*
 * The slot policy (include/esa_policy.h) as pure functions: every input of
 * esa_decide() is enumerated and checked against the protocol's rules, and
 * esa_slot_index() against its contract.  The XDP program and the simulator
 * compile exactly this code.
 */
#include "testlib.h"
#include "kselftest_harness.h"

#define FOR_EACH_VIEW(v)						\
	for (int _p = 0; _p < __ESA_POLICY_MAX; _p++)			\
	for (int _s = 0; _s < 3; _s++)					\
	for (int _o = 0; _o < 4; _o++)					\
	for (int _t = 0; _t < 3; _t++)					\
	for (int _sp = 0; _sp < 3; _sp++)				\
	for (int _pp = 0; _pp < 3; _pp++)				\
	for (int _bits = 0; _bits < 64; _bits++)			\
	if ((v = (struct esa_view){					\
		.policy = _p, .state = _s, .owner = _o, .tomb = _t,	\
		.slot_prio = _sp * 100, .pkt_prio = _pp * 100,		\
		.resend = _bits & 1, .rank_in = !!(_bits & 2),		\
		.completes = !!(_bits & 4), .stale = !!(_bits & 8),	\
		.up = !!(_bits & 16), .young = !!(_bits & 32) }),	\
	    /* a free slot has no owner and vice versa */		\
	    (v.state == ESA_SLOT_FREE) != (v.owner == ESA_OWN_NONE))	\
		;							\
	else

TEST(every_decision_is_a_known_action)
{
	struct esa_view v;
	int n = 0;

	FOR_EACH_VIEW(v) {
		int a = esa_decide(&v);

		EXPECT_LE(0, a);
		EXPECT_GT(__ESA_A_MAX, a);
		n++;
	}
	EXPECT_LT(1000, n);
}

/*
 * Rule 6: a resend never starts a partial nor takes another's slot; at
 * its chunk's partial it waits (joins it, or is dropped as WAIT when its
 * rank is in) while the partial is young at the top box, and flushes it
 * otherwise; a resend of a chunk completed here goes to the PS as DONE.
 */
TEST(resend_never_claims_waits_for_a_young_partial)
{
	struct esa_view v;

	FOR_EACH_VIEW(v) {
		int a = esa_decide(&v);

		if (!v.resend) {
			EXPECT_NE(ESA_A_WAIT, a);
			EXPECT_NE(ESA_A_RESEND_DONE, a);
			continue;
		}
		EXPECT_NE(ESA_A_CLAIM, a);
		EXPECT_NE(ESA_A_RECLAIM, a);
		EXPECT_NE(ESA_A_PREEMPT, a);
		EXPECT_NE(ESA_A_AGE, a);
		EXPECT_NE(ESA_A_DUPLICATE, a);
		if (v.owner == ESA_OWN_SELF && v.state == ESA_SLOT_BUSY) {
			int fresh = v.young && !v.up;

			EXPECT_EQ(v.rank_in ? (fresh ? ESA_A_WAIT : ESA_A_FLUSH) :
				  v.completes ? (v.policy == ESA_POLICY_ATP && !v.up ?
						 ESA_A_HOLD : ESA_A_COMPLETE) :
				  fresh ? ESA_A_ADD : ESA_A_FLUSH, a);
		} else {
			EXPECT_NE(ESA_A_ADD, a);
			EXPECT_NE(ESA_A_WAIT, a);
		}
		if (v.owner != ESA_OWN_SELF && v.tomb == ESA_TOMB_DONE) {
			EXPECT_EQ(v.up ? ESA_A_RESEND : ESA_A_RESEND_DONE, a);
		}
	}
}

/* Rule 2: the owning key adds new ranks, drops known ones, completes. */
TEST(own_key_adds_completes_or_is_duplicate)
{
	struct esa_view v;

	FOR_EACH_VIEW(v) {
		int a = esa_decide(&v);

		if (v.owner != ESA_OWN_SELF || v.state != ESA_SLOT_BUSY || v.resend)
			continue;
		EXPECT_EQ(v.rank_in ? ESA_A_DUPLICATE :
			  !v.completes ? ESA_A_ADD :
			  v.policy == ESA_POLICY_ATP && !v.up ? ESA_A_HOLD :
			  ESA_A_COMPLETE, a);
	}
}

/* Rule 3: only policy esa preempts, only a busy slot, only a strictly
 * lower priority; rule 4: otherwise a live owner keeps its slot. */
TEST(preemption_only_by_strictly_higher_priority)
{
	struct esa_view v;

	FOR_EACH_VIEW(v) {
		int a = esa_decide(&v);

		if (a == ESA_A_PREEMPT) {
			EXPECT_EQ(ESA_POLICY_ESA, v.policy);
			EXPECT_EQ(ESA_OWN_LIVE, v.owner);
			EXPECT_EQ(ESA_SLOT_BUSY, v.state);
			EXPECT_GT(v.pkt_prio, v.slot_prio);
		}
		if (v.owner == ESA_OWN_LIVE && v.tomb == ESA_TOMB_NONE && !v.resend &&
		    !v.stale && v.pkt_prio <= v.slot_prio) {
			EXPECT_EQ(ESA_A_COLLIDE, a);
		}
		if (v.owner == ESA_OWN_LIVE && v.state == ESA_SLOT_BUSY &&
		    v.tomb == ESA_TOMB_NONE && !v.resend && v.pkt_prio > v.slot_prio) {
			EXPECT_EQ(v.policy == ESA_POLICY_ESA ? ESA_A_PREEMPT :
				  v.stale ? ESA_A_AGE : ESA_A_COLLIDE, a);
		}
	}
}

/* Rule 1: free slots and slots of dead owners are taken. */
TEST(free_or_dead_slots_are_taken)
{
	struct esa_view v;

	FOR_EACH_VIEW(v) {
		int a = esa_decide(&v);

		if (v.resend || v.tomb != ESA_TOMB_NONE)
			continue;
		if (v.owner == ESA_OWN_NONE) {
			EXPECT_EQ(ESA_A_CLAIM, a);
		}
		if (v.owner == ESA_OWN_DEAD) {
			EXPECT_EQ(ESA_A_RECLAIM, a);
		}
	}
}

/* Rule 5: a chunk that left never restarts in the switch. */
TEST(tombstones_send_chunks_on)
{
	struct esa_view v;

	FOR_EACH_VIEW(v) {
		int a = esa_decide(&v);

		if (v.owner == ESA_OWN_SELF || v.tomb == ESA_TOMB_NONE)
			continue;
		EXPECT_EQ(!v.resend ? (v.tomb == ESA_TOMB_DONE ? ESA_A_DUPLICATE :
				       ESA_A_TOMB) :
			  v.tomb == ESA_TOMB_DONE && !v.up ? ESA_A_RESEND_DONE :
			  ESA_A_RESEND, a);
	}
}

/* Policy atp: a held slot is released only by its ack, or when idle. */
TEST(held_slots_stay_held)
{
	struct esa_view v;

	FOR_EACH_VIEW(v) {
		int a = esa_decide(&v);

		if (v.state != ESA_SLOT_HELD || v.owner == ESA_OWN_DEAD ||
		    v.tomb != ESA_TOMB_NONE)
			continue;
		if (v.owner == ESA_OWN_SELF) {
			EXPECT_EQ(v.resend ? ESA_A_RESEND : ESA_A_DUPLICATE, a);
		} else if (!v.resend) {
			EXPECT_EQ(v.stale ? ESA_A_RECLAIM : ESA_A_COLLIDE, a);
		}
	}
}

TEST(slot_index_contract)
{
	/* shared pool: in range, a job's consecutive chunks on distinct slots */
	for (__u32 pool = 1; pool < 300; pool += 37) {
		for (__u16 job = 0; job < 50; job++) {
			__s64 first = esa_slot_index(ESA_POLICY_ESA, job, 0, pool, 0, 0);

			for (__u32 s = 0; s < pool; s++) {
				__s64 i = esa_slot_index(ESA_POLICY_ESA, job, s, pool, 0, 0);

				ASSERT_LE(0, i);
				ASSERT_GT(pool, i);
				ASSERT_EQ((first + s) % pool, i);
				ASSERT_EQ(i, esa_slot_index(ESA_POLICY_ATP, job, s, pool, 0, 0));
			}
		}
	}
	/* jobs start at different places */
	EXPECT_NE(esa_slot_index(ESA_POLICY_ESA, 1, 0, 4096, 0, 0),
		  esa_slot_index(ESA_POLICY_ESA, 2, 0, 4096, 0, 0));
	/* wrapping sequence numbers stay in range */
	EXPECT_GT(4096, esa_slot_index(ESA_POLICY_ESA, 3, 0xffffffffu, 4096, 0, 0));
	/* switchml: inside the region only; no region or a bad one: -1 */
	for (__u32 s = 0; s < 100; s++) {
		EXPECT_EQ(40 + s % 8, esa_slot_index(ESA_POLICY_SWITCHML, 5, s, 64, 40, 8));
	}
	EXPECT_EQ(-1, esa_slot_index(ESA_POLICY_SWITCHML, 5, 1, 64, 0, 0));
	EXPECT_EQ(-1, esa_slot_index(ESA_POLICY_SWITCHML, 5, 1, 64, 60, 8));
	EXPECT_EQ(-1, esa_slot_index(ESA_POLICY_SWITCHML, 5, 1, 64, 64, 1));
	EXPECT_EQ(-1, esa_slot_index(ESA_POLICY_ESA, 5, 1, 0, 0, 0));
	/* a home on the shared pool: seq modulo the home, wrapping the pool */
	for (__u32 s = 0; s < 100; s++) {
		EXPECT_EQ(40 + s % 8, esa_slot_index(ESA_POLICY_ESA, 5, s, 64, 40, 8));
		EXPECT_EQ((60 + s % 8) % 64, esa_slot_index(ESA_POLICY_ATP, 5, s, 64, 60, 8));
	}
	EXPECT_EQ((0xfffffff0ull + 0xffffffffu % 64) % 0xffffffffu,
		  esa_slot_index(ESA_POLICY_ESA, 5, 0xffffffffu, 0xffffffffu, 0xfffffff0u, 64));
	EXPECT_EQ(-1, esa_slot_index(ESA_POLICY_ESA, 5, 1, 64, 64, 8));
	EXPECT_EQ(-1, esa_slot_index(ESA_POLICY_ESA, 5, 1, 64, 0, 65));
}

/* Slots of home h that some other home of hs[0..n) covers. */
static __u32 shared_slots(const struct esa_home *hs, __u32 n, __u32 pool, __u32 i)
{
	__u32 shared = 0;

	for (__u32 s = 0; s < hs[i].size; s++) {
		__u32 slot = (hs[i].base + s) % pool;

		for (__u32 k = 0; k < n; k++)
			if (k != i && esa_runs_shared(slot, 1, hs[k].base, hs[k].size, pool)) {
				shared++;
				break;
			}
	}
	return shared;
}

TEST(runs_shared)
{
	/* against slot-by-slot counting, wrapping runs included */
	for (__u32 pool = 1; pool <= 12; pool++)
		for (__u32 a = 0; a < pool; a++)
			for (__u32 x = 0; x <= pool; x++)
				for (__u32 b = 0; b < pool; b++)
					for (__u32 y = 0; y <= pool; y++) {
						__u32 want = 0;

						for (__u32 i = 0; i < x; i++)
							want += (i + a + pool - b) % pool < y;
						ASSERT_EQ(want, esa_runs_shared(a, x, b, y, pool));
					}
}

TEST(home_place)
{
	struct esa_home hs[64];
	__u32 n, pool = 1024, covered;

	/* eight homes of 128 tile a pool of 1024 exactly, none overlapping */
	for (n = 0; n < 8; n++) {
		hs[n].base = esa_home_place(hs, n, pool, 128);
		hs[n].size = 128;
	}
	for (__u32 i = 0; i < n; i++) {
		ASSERT_GT(pool, hs[i].base);
		ASSERT_EQ(0, shared_slots(hs, n, pool, i));
	}
	/* a ninth shares one home's slots exactly, a tenth another's */
	hs[8].base = esa_home_place(hs, 8, pool, 128);
	hs[8].size = 128;
	hs[9].base = esa_home_place(hs, 9, pool, 128);
	hs[9].size = 128;
	EXPECT_EQ(0, hs[8].base % 128);
	EXPECT_EQ(0, hs[9].base % 128);
	EXPECT_NE(hs[8].base, hs[9].base);
	/* a home leaving the pool frees its run for the next job: best fit */
	for (__u32 i = 0; i < 8; i++)
		hs[i] = (struct esa_home){ i * 128, 128 };
	hs[2].size = 0;				/* job 2 gone: a hole at 256 */
	EXPECT_EQ(256, esa_home_place(hs, 8, pool, 100));
	/* no room: the place sharing the fewest slots, not the fewest homes */
	hs[0] = (struct esa_home){ 0, 16 };
	hs[1] = (struct esa_home){ 16, 16 };
	EXPECT_EQ(32, esa_home_place(hs, 2, 64, 40));	/* shares 8 of home 0 */
	/* mixed sizes: homes pack from slot 0, none overlapping while they fit */
	for (int round = 0; round < 200; round++) {
		__u32 sum = 0;

		srand(round);
		pool = 64 + rand() % 4000;
		covered = 0;
		for (n = 0; n < 64; n++) {
			__u32 size = 1 + rand() % 64;

			if (sum + size > pool)
				break;
			hs[n].base = esa_home_place(hs, n, pool, size);
			hs[n].size = size;
			sum += size;
		}
		for (__u32 i = 0; i < n; i++) {
			ASSERT_GT(pool, hs[i].base);
			covered += shared_slots(hs, n, pool, i);
		}
		ASSERT_EQ(0, covered);
	}
	EXPECT_EQ(0, esa_home_place(hs, 0, 0, 8));
	EXPECT_EQ(0, esa_home_place(hs, 0, 100, 8));
}

TEST(full_mask)
{
	EXPECT_EQ(1, esa_full_mask(1));
	EXPECT_EQ(7, esa_full_mask(3));
	EXPECT_EQ(~0ULL >> 1, esa_full_mask(63));
	EXPECT_EQ(~0ULL, esa_full_mask(64));
}

TEST(counter_names_complete)
{
	for (int i = 0; i < __ESA_C_MAX; i++) {
		ASSERT_NE(NULL, esa_counter_names[i]) TH_LOG("counter %d has no name", i);
		for (int k = 0; k < i; k++) {
			EXPECT_NE(0, strcmp(esa_counter_names[i], esa_counter_names[k]));
		}
	}
}

TEST_HARNESS_MAIN
