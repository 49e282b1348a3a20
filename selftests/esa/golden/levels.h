/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Two levels: a leaf sums the ranks under it and sends the sum up to its
 * spine as one DATA (ESA_F_LEAF, the lowest rank, the leaf's ranks); the
 * spine sums whole leaves and its result comes back down, each leaf
 * sending it on to its own ranks.  Each side takes only what the other
 * may send.
 */

/* The leaf's fan-out: its two ranks, no PS copy, the way up on sw1. */
static void leaf_fanout(struct __test_metadata *_metadata, struct g_env *self)
{
	struct esa_fanout f;

	ASSERT_EQ(0, esa_fanout_read(&self->e, JL, &f));
	EXPECT_EQ(2, f.n);
	EXPECT_EQ(ESA_FAN_MAX, f.ps);
	EXPECT_EQ(self->n.sw1, (int)f.up_ifindex);
}

static void leaves_whole(struct g_env *self)
{
	for (int i = 0; i < NV; i++) {
		self->lx[i] = 1000 * i - 7;
		self->ly[i] = -3 * i + 11;
	}
}

static void leaves_evicted(struct g_env *self)
{
	for (int i = 0; i < NV; i++) {
		self->lx[i] = 5 * i;
		self->ly[i] = 7 * i + 1;
	}
}

static void leaf_noslot(struct g_env *self)
{
	for (int i = 0; i < NV; i++)
		self->lx[i] = 3 * i - 40;
}

static void leaf_atp(struct g_env *self)
{
	for (int i = 0; i < NV; i++)
		self->lx[i] = i;
}

/* The spine's RESULT of chunk s for the leaf (ED(SPINE)), on port p. */
#define SPINE(s, p)	PKT(JL, 0, SEQ(s), 1, 0), .vals = V_SUM, .port = P_##p

/* The DATA of the leaf at worker k's address: ranks set, values v. */
#define LEAF_DATA(k, s, pr, set, v)					\
	PKT(JS, k, SEQ(s), pr, 0), .vals = v, .edit = { ED(LEAF, set) }

/* A spine refuses a leaf's DATA: rank, its source, flags, ranks set. */
#define NOT_A_LEAF(name_, what_, rank, src, fl, ctr_, set)		\
	{ .name = name_, .what = what_, .stale_ms = SPINE_STALE,	\
	  .steps = {							\
		{ ADD(JS, .kind = J_SPINE) },				\
		{ PKT(JS, rank, SEQ(410), 1, 0), .vals = V_RANK0,	\
		  .edit = { ED(LEAF, set), ED(FLAGS, fl),		\
			    ED(SADDR_WORKER, src), ED(SMAC_WORKER, src) }, \
		  .verdict = XDP_DROP,					\
		  .ctr = { C(JS, ctr_, 1), C(JS, CLAIMED, 0) } },	\
	} }

/* A copy of the spine's sum of the two leaves, to the leaf at worker k. */
#define SPINE_COPY(k)							\
	{ EGRESS(JS, SW0), .verdict = XDP_PASS,				\
	  .hdr = HDR(H_DADDR | H_DPORT | H_TYPE | H_BITMAP | H_RANK | H_VALS, \
		     .daddr = "w" #k, .dport = ESA_DEFAULT_PORT,	\
		     .type = ESA_T_RESULT, .bitmap = 0xf,		\
		     .rank = ESA_RANK_NONE, .vals = V_LXLY) }

static const struct g_case g_levels[] = {
	{ .name = "leaf_sends_its_sum_up",
	  .what = "a leaf sums the ranks under it; the sum goes to its spine as "
		  "one DATA from the leaf's address and port, through the route "
		  "to the spine; a rank under another leaf is not its to take; "
		  "a resend after the sum went up goes to the PS",
	  .steps = {
		{ ADD(JL, .kind = J_LEAF) },
		{ CALL(leaf_fanout) },
		{ PKT(JL, 0, SEQ(300), 1, 0), .verdict = XDP_DROP },
		{ PKT(JL, 1, SEQ(300), 1, 0), .verdict = XDP_REDIRECT,
		  .out = TO_PS(A, DATA, 0, ESA_F_LEAF, JL, 0, SEQ(300), 1, 0x3,
			       .dport = ESA_DEFAULT_PORT),
		  .ctr = { C(JL, UP_TX, 1), C(JL, COMPLETED, 0) },
		  .tomb = { TOMB(JL, SEQ(300), DONE) } },
		/* rank 2 lives under another leaf */
		{ PKT(JL, 2, SEQ(300), 1, 0), .verdict = XDP_DROP,
		  .ctr = { C(JL, DROP_RANK, 1) } },
		/* the leaf's sum went up: a resend is the PS's to answer */
		{ PKT(JL, 0, SEQ(300), 1, ESA_F_RESEND), .verdict = XDP_REDIRECT,
		  .out = TO_PS(B, COLLISION, ESA_R_RESEND, ESA_F_RESEND, JL, 0,
			       SEQ(300), 1, 0x1) },
	} },
	{ .name = "leaf_sum_up_through_the_stack_when_unresolved",
	  .what = "a leaf with no next hop for its spine: its sum goes up "
		  "through the kernel stack with the completing worker's "
		  "source, which the stack forwards (the leaf's own address "
		  "would be a martian)",
	  .steps = {
		{ ADD(JL, .kind = J_LEAF, .edit = { JE(UP_NONEIGH, 0) }) },
		{ PKT(JL, 0, SEQ(305), 1, 0), .verdict = XDP_DROP },
		{ PKT(JL, 1, SEQ(305), 1, 0), .verdict = XDP_PASS,
		  .hdr = HDR(H_DADDR | H_SADDR | H_CSUM | H_TYPE | H_FLAGS | H_BITMAP,
			     .daddr = T_PS_NONEIGH, .saddr = "w1",
			     .type = ESA_T_DATA, .flags = ESA_F_LEAF, .bitmap = 0x3),
		  .ctr = { C(JL, UP_TX, 1), C(JL, PS_STACK, 1) } },
	} },
	{ .name = "leaf_of_one_rank_sends_at_once",
	  .what = "a leaf with one rank of its job: each packet is the leaf's "
		  "sum at once; its resend is the PS's, as at any leaf",
	  .steps = {
		{ ADD(JL, .kind = J_LEAF, .edit = { JE(NO_RANK, 1) }) },
		{ PKT(JL, 0, SEQ(310), 2, 0), .verdict = XDP_REDIRECT,
		  .hdr = HDR(H_TYPE | H_FLAGS | H_BITMAP | H_RANK | H_VALS,
			     .type = ESA_T_DATA, .flags = ESA_F_LEAF, .bitmap = 1,
			     .rank = 0, .vals = V_RANK0),
		  .ctr = { C(JL, UP_TX, 1), C(JL, CLAIMED, 0) } },
		{ PKT(JL, 0, SEQ(310), 2, ESA_F_RESEND), .verdict = XDP_REDIRECT,
		  .hdr = HDR(H_TYPE | H_REASON | H_DADDR, .type = ESA_T_COLLISION,
			     .reason = ESA_R_RESEND, .daddr = T_PS_B),
		  .ctr = { C(JL, RESEND_FWD, 1) } },
	} },
	{ .name = "leaf_sends_the_spines_result_to_its_ranks",
	  .what = "the spine's result comes back to the leaf, which sends it "
		  "on to its own ranks (the spine gave the PS its copy); it is "
		  "taken only from the job's spine (its address and port, on the "
		  "port it is behind), whole, without a rank, for a leaf's job",
	  .steps = {
		{ ADD(JL, .kind = J_LEAF) },
		/* their MACs learnt, the leaf's sum sent up */
		{ PKT(JL, 0, SEQ(301), 1, 0), .verdict = XDP_DROP },
		{ PKT(JL, 1, SEQ(301), 1, 0), .verdict = XDP_REDIRECT },
		{ SPINE(301, SW1), .edit = { ED(SPINE, 0) }, .verdict = XDP_REDIRECT },
		{ EGRESS(JL, SW0), .verdict = XDP_PASS, .member = 1,
		  .hdr = HDR(H_TYPE | H_BITMAP, .type = ESA_T_RESULT, .bitmap = 0x7) },
		{ EGRESS(JL, SW0), .verdict = XDP_PASS, .member = 2,
		  .hdr = HDR(H_TYPE | H_BITMAP, .type = ESA_T_RESULT, .bitmap = 0x7) },
		{ EGRESS(JL, SW0), .verdict = XDP_DROP },
		{ EGRESS(JL, SW1), .verdict = XDP_DROP,
		  .ctr = { C(JL, DOWN_RX, 1), C(JL, RESULT_TX, 2),
			   C(JL, PS_COPY_TX, 0) } },
		/* not from the spine: its address, its port, its side */
		{ SPINE(301, SW1), .edit = { ED(SPINE, 0), ED(SADDR_PS_B, 0) },
		  .verdict = XDP_DROP },
		{ SPINE(302, SW1), .edit = { ED(SPINE, 0), ED(SPORT, T_PS_PORT) },
		  .verdict = XDP_DROP },
		{ SPINE(302, SW0), .edit = { ED(SPINE, 0) }, .verdict = XDP_DROP,
		  .ctr = { C(JL, DROP_SPOOF, 3) } },
		/* not a whole sum, or with a rank */
		{ SPINE(302, SW1), .edit = { ED(SPINE, 0), ED(BITMAP, 0x3) },
		  .verdict = XDP_DROP },
		{ SPINE(302, SW1), .edit = { ED(SPINE, 0), ED(RANK, 0) },
		  .verdict = XDP_DROP,
		  .ctr = { C(JL, DROP_HEADER, 2), C(JL, DOWN_RX, 1) } },
		/* a RESULT for a job of one level is no leaf's */
		{ SPINE(303, SW1), .edit = { ED(SPINE, 0), ED(JOB, JA) },
		  .verdict = XDP_DROP, .ctr = { C(JA, DROP_TYPE, 1) } },
	} },
	{ .name = "leaf_delivers_to_the_current_registration_only",
	  .what = "a leaf hands the spine's result to the fan-out of the job's "
		  "current registration only: registered again behind esactl's "
		  "back (its fan-out still the old registration's), the sum goes "
		  "whole to the PS (DELIVER), never to the old hosts",
	  .steps = {
		{ ADD(JL, .kind = J_LEAF) },
		{ PKT(JL, 0, SEQ(306), 1, 0), .verdict = XDP_DROP },
		{ PKT(JL, 1, SEQ(306), 1, 0), .verdict = XDP_REDIRECT },
		{ DEL(JL) },
		{ ADD(JL, .kind = J_LEAF, .how = HOW_RAW) },
		{ SPINE(306, SW1), .edit = { ED(SPINE, 0) }, .verdict = XDP_REDIRECT,
		  .hdr = HDR(H_TYPE | H_REASON | H_DADDR, .type = ESA_T_PARTIAL,
			     .reason = ESA_R_DELIVER, .daddr = T_PS_B),
		  .ctr = { C(JL, DOWN_RX, 1), C(JL, FANOUT_MISS, 1) } },
	} },
	{ .name = "spine_sums_whole_leaves",
	  .what = "a spine sums whole leaves: each leaf's DATA carries exactly "
		  "the ranks registered under it, from its address and port; "
		  "the result goes to the leaves and the PS; a leaf's overflow "
		  "carries into the result",
	  .stale_ms = SPINE_STALE, .values = leaves_whole,
	  .steps = {
		{ ADD(JS, .kind = J_SPINE) },
		{ LEAF_DATA(0, 400, 2, 0x3, V_LX), .verdict = XDP_DROP,
		  .slot = { SLOT(JS, SEQ(400)), BITMAP(0x3) } },
		{ LEAF_DATA(2, 400, 2, 0xc, V_LY), .verdict = XDP_REDIRECT },
		SPINE_COPY(0),
		SPINE_COPY(2),
		{ EGRESS(JS, SW1), .verdict = XDP_PASS,
		  .hdr = HDR(H_DADDR, .daddr = T_PS_A),
		  .ctr = { C(JS, COMPLETED, 1) } },
		/* a leaf's sum that left int32 makes the result's flag */
		{ PKT(JS, 0, SEQ(401), 2, 0), .vals = V_LX,
		  .edit = { ED(LEAF, 0x3), ED(FLAGS, ESA_F_LEAF | ESA_F_OVERFLOW) },
		  .verdict = XDP_DROP },
		{ LEAF_DATA(2, 401, 2, 0xc, V_LY), .verdict = XDP_REDIRECT,
		  .hdr = HDR(H_FLAGS, .flags = ESA_F_OVERFLOW),
		  .ctr = { C(JS, OVERFLOW, 1) } },
	} },
	/* what a spine takes from a leaf: its ranks, no fewer, as a leaf's DATA */
	NOT_A_LEAF("spine_refuses_not_all_its_ranks", "not all its ranks",
		   0, 0, ESA_F_LEAF, DROP_HEADER, 0x1),
	NOT_A_LEAF("spine_refuses_more_than_its_ranks", "more than its ranks",
		   0, 0, ESA_F_LEAF, DROP_HEADER, 0x7),
	NOT_A_LEAF("spine_refuses_a_workers_data", "a worker's DATA",
		   0, 0, 0, DROP_HEADER, 0x1),
	NOT_A_LEAF("spine_refuses_a_leafs_resend", "a leaf's resend",
		   0, 0, ESA_F_LEAF | ESA_F_RESEND, DROP_HEADER, 0x3),
	NOT_A_LEAF("spine_refuses_a_rank_under_a_leaf", "a rank under a leaf",
		   1, 1, ESA_F_LEAF, DROP_RANK, 0x2),
	NOT_A_LEAF("spine_refuses_anothers_address", "another's address",
		   0, 1, ESA_F_LEAF, DROP_SPOOF, 0x3),
	{ .name = "spine_sends_unsummed_leaf_sums_to_the_ps",
	  .what = "a leaf's sum the spine does not add goes to the PS as the "
		  "PARTIAL it is (rank none, the leaf's ranks): evicted by a "
		  "higher priority, then the other leaf's following its chunk "
		  "(tombstone)",
	  .stale_ms = SPINE_STALE, .values = leaves_evicted,
	  .steps = {
		{ ADD(JS, .kind = J_SPINE) },
		{ LEAF_DATA(0, 420, 1, 0x3, V_LX), .verdict = XDP_DROP },
		{ PKT(JA, 0, SLOT_OF(JS, 420), 5, 0), .verdict = XDP_REDIRECT,
		  .out = TO_PS(A, PARTIAL, ESA_R_PREEMPT, 0, JS, ESA_RANK_NONE,
			       SEQ(420), 1, 0x3, .vals = V_LX) },
		{ LEAF_DATA(2, 420, 1, 0xc, V_LY), .verdict = XDP_REDIRECT,
		  .out = TO_PS(A, PARTIAL, ESA_R_TOMB, 0, JS, ESA_RANK_NONE,
			       SEQ(420), 1, 0xc, .vals = V_LY),
		  .ctr = { C(JS, TOMB_FWD, 1), C(JS, EVICTED, 1) } },
	} },
	{ .name = "noslot_leaf_sum_goes_to_the_ps_as_a_partial",
	  .what = "a spine whose job has no switch memory (switchml without a "
		  "region): a leaf's sum goes to the PS as the PARTIAL it is "
		  "(reason NOSLOT), never as a COLLISION, which a PS takes from "
		  "one rank only; a worker's packet without memory stays a "
		  "COLLISION",
	  .policy = ESA_POLICY_SWITCHML, .stale_ms = SPINE_STALE,
	  .values = leaf_noslot,
	  .steps = {
		{ ADD(JS, .kind = J_SPINE) },
		{ LEAF_DATA(2, 430, 1, 0xc, V_LX), .verdict = XDP_REDIRECT,
		  .out = TO_PS(A, PARTIAL, ESA_R_NOSLOT, 0, JS, ESA_RANK_NONE,
			       SEQ(430), 1, 0xc, .vals = V_LX),
		  .ctr = { C(JS, NOSLOT, 1), C(JS, PS_TX, 1) } },
		/* one level: a worker's chunk without memory, a COLLISION */
		{ ADD(12) },
		{ PKT(12, 1, SEQ(431), 2, 0), .verdict = XDP_REDIRECT,
		  .out = TO_PS(A, COLLISION, ESA_R_NOSLOT, 0, 12, 1, SEQ(431), 2,
			       0x2) },
	} },
	{ .name = "atp_holds_at_the_top_only",
	  .what = "policy atp across two levels: the top holds the sum until "
		  "its PS acks; a leaf, whose sums go up, holds none",
	  .policy = ESA_POLICY_ATP, .stale_ms = SPINE_STALE, .values = leaf_atp,
	  .steps = {
		{ ADD(JL, .kind = J_LEAF) },
		{ PKT(JL, 0, SEQ(320), 1, 0), .verdict = XDP_DROP },
		{ PKT(JL, 1, SEQ(320), 1, 0), .verdict = XDP_REDIRECT,
		  .hdr = HDR(H_TYPE | H_FLAGS, .type = ESA_T_DATA, .flags = ESA_F_LEAF),
		  .slot = { SLOT(JL, SEQ(320)), STATE(FREE) },
		  .ctr = { C(JL, HELD, 0) } },
		{ ADD(JS, .kind = J_SPINE) },
		{ LEAF_DATA(0, 321, 1, 0x3, V_LX), .verdict = XDP_DROP },
		{ LEAF_DATA(2, 321, 1, 0xc, V_LX), .verdict = XDP_REDIRECT,
		  .hdr = HDR(H_TYPE | H_REASON, .type = ESA_T_RESULT,
			     .reason = ESA_R_HOLD),
		  .slot = { SLOT(JS, SEQ(321)), STATE(HELD) } },
		{ PKT(JS, 0, SEQ(321), 1, 0), .vals = V_LX, .port = P_SW1,
		  .edit = { ED(ACK, 0), ED(BITMAP, 0xf), ED(FROM_PS_A, 0) },
		  .verdict = XDP_REDIRECT,
		  .slot = { SLOT(JS, SEQ(321)), STATE(FREE) },
		  .ctr = { C(JS, ACK, 1) } },
	} },
};
