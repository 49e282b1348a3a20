/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Rules 3 to 5, who keeps a slot: a higher priority evicts a lower one's
 * partial to its PS, an equal or higher owner keeps the slot and the
 * packet goes to its own PS, and a chunk once at the PS stays there; an
 * idle partial ages out.  Where chunks land: switchml's private regions,
 * homes on the shared pool.
 */

/* Homes of 8 slots each, A's wrapping the pool (60..63, 0..3), B's at 4..11:
 * a window of 8 each, every chunk claims a slot of its own home. */
static void homes_fill(struct __test_metadata *_metadata, struct g_env *self)
{
	struct esa_slot s;
	struct t_run r;

	for (__u32 q = 0; q < 8; q++) {
		struct t_pkt a = t_data(&self->n, JA, 0, 16 + q, 1, self->v[0], NV);
		struct t_pkt b = t_data(&self->n, JB, 0, 16 + q, 1, self->v[0], NV);

		ASSERT_EQ(0, t_send(&self->e, &a, self->n.sw0, &r));
		EXPECT_EQ(XDP_DROP, r.verdict);
		ASSERT_EQ(0, t_send(&self->e, &b, self->n.sw0, &r));
		EXPECT_EQ(XDP_DROP, r.verdict);
	}
	for (__u32 q = 0; q < 8; q++) {
		ASSERT_EQ(0, t_slot(&self->e, (60 + q) % 64, &s, NULL));
		EXPECT_EQ(JA, s.job);
		EXPECT_EQ(16 + q, s.seq);
		ASSERT_EQ(0, t_slot(&self->e, 4 + q, &s, NULL));
		EXPECT_EQ(JB, s.job);
		EXPECT_EQ(16 + q, s.seq);
	}
}

/* B's home moved onto A's: its chunk 8 (8 % 8 = 0) took slot 0 from A's 20. */
static void homes_b_took_slot_0(struct __test_metadata *_metadata, struct g_env *self)
{
	struct esa_slot s;

	ASSERT_EQ(0, t_slot(&self->e, 0, &s, NULL));
	EXPECT_EQ(JB, s.job);
	EXPECT_EQ(8, s.seq);
}

static const struct g_case g_preempt[] = {
	{ .name = "preempt_sends_partial_to_owner_ps",
	  .what = "rule 3: a higher priority evicts a lower one's partial to the "
		  "owner's PS, in place: the packet leaves carrying the partial, "
		  "the slot keeps its values",
	  .steps = {
		{ PKT(JA, 0, SEQ(20), 1, 0), .verdict = XDP_DROP },
		{ PKT(JA, 2, SEQ(20), 1, 0), .verdict = XDP_DROP },
		{ PKT(JB, 1, SLOT_OF(JA, 20), 2, 0), .verdict = XDP_REDIRECT,
		  .out = TO_PS(A, PARTIAL, ESA_R_PREEMPT, 0, JA, ESA_RANK_NONE,
			       SEQ(20), 1, 0x5),
		  .slot = { SLOT(JA, SEQ(20)), STATE(BUSY),
			    OWNER(JB, SLOT_OF(JA, 20)), PRIO(2), BITMAP(2),
			    VALS(0x2) },
		  .tomb = { TOMB(JA, SEQ(20), PS), TOMB(JB, SLOT_OF(JA, 20), NONE) },
		  .ctr = { C(JB, PREEMPT_CAUSED, 1), C(JA, PREEMPT_SUFFERED, 1),
			   C(JA, EVICTED, 1), C(JA, PS_TX, 1) } },
	} },
	{ .name = "collision_goes_to_own_ps",
	  .what = "rule 4: an owner of equal or higher priority keeps the slot; "
		  "the packet goes to its own PS unaggregated (and the chunk's "
		  "next packet follows it there, rule 5)",
	  .steps = {
		{ PKT(JA, 0, SEQ(30), 3, 0), .verdict = XDP_DROP },
		{ PKT(JB, 1, SLOT_OF(JA, 30), 3, 0), .verdict = XDP_REDIRECT,
		  .out = TO_PS(B, COLLISION, ESA_R_COLLISION, 0, JB, 1,
			       SLOT_OF(JA, 30), 3, 2) },
		{ PKT(JB, 0, SLOT_OF(JA, 30), 2, 0), .verdict = XDP_REDIRECT,
		  .out = TO_PS(B, COLLISION, ESA_R_TOMB, 0, JB, 0,
			       SLOT_OF(JA, 30), 2, 1),
		  .slot = { SLOT(JA, SEQ(30)), OWNER_JOB(JA), BITMAP(1) },
		  .ctr = { C(JB, COLLISION, 1), C(JB, TOMB_FWD, 1),
			   C(JB, PREEMPT_CAUSED, 0) } },
	} },
	{ .name = "evicted_chunk_follows_to_ps",
	  .what = "rule 5: once evicted, a chunk's later packets follow it to the "
		  "PS: they neither restart it in the switch nor evict anyone, "
		  "even once the slot is free again",
	  .steps = {
		{ PKT(JA, 0, SEQ(40), 5, 0), .verdict = XDP_DROP },
		{ PKT(JB, 0, SLOT_OF(JA, 40), 6, 0), .verdict = XDP_REDIRECT },
		{ PKT(JA, 1, SEQ(40), 7, 0), .verdict = XDP_REDIRECT,
		  .slot = { SLOT(JA, SEQ(40)), OWNER_JOB(JB) },
		  .ctr = { C(JA, TOMB_FWD, 1), C(JA, PREEMPT_CAUSED, 0) } },
		{ PKT(JB, 1, SLOT_OF(JA, 40), 6, 0), .verdict = XDP_DROP },
		{ PKT(JB, 2, SLOT_OF(JA, 40), 6, 0), .verdict = XDP_REDIRECT },
		{ PKT(JA, 2, SEQ(40), 5, 0), .verdict = XDP_REDIRECT,
		  .ctr = { C(JA, TOMB_FWD, 2), C(JA, CLAIMED, 1) } },
	} },
	{ .name = "collided_chunk_never_restarts",
	  .what = "rule 5: a chunk that collided never starts a partial later "
		  "either",
	  .steps = {
		{ PKT(JA, 0, SEQ(50), 5, 0), .verdict = XDP_DROP },
		{ PKT(JB, 0, SLOT_OF(JA, 50), 1, 0), .verdict = XDP_REDIRECT },
		{ PKT(JA, 1, SEQ(50), 5, 0), .verdict = XDP_DROP },
		{ PKT(JA, 2, SEQ(50), 5, 0), .verdict = XDP_REDIRECT },
		{ PKT(JB, 1, SLOT_OF(JA, 50), 1, 0), .verdict = XDP_REDIRECT,
		  .slot = { SLOT(JA, SEQ(50)), STATE(FREE) },
		  .ctr = { C(JB, CLAIMED, 0), C(JB, TOMB_FWD, 1) } },
	} },
	{ .name = "idle_partial_ages_out",
	  .what = "a partial idle past the ageing limit goes to its PS to make "
		  "room; one not yet idle keeps its slot",
	  .stale_ms = 1000,
	  .steps = {
		{ PKT(JA, 0, SEQ(130), 7, 0), .verdict = XDP_DROP },
		{ PKT(JB, 0, SLOT_OF(JA, 130), 0, 0), .verdict = XDP_REDIRECT,
		  .ctr = { C(JB, COLLISION, 1) } },
		{ AGE(JA, SEQ(130)) },
		{ PKT(JB, 0, SLOT_OF_NTH(JA, 130, 1), 0, 0), .verdict = XDP_REDIRECT,
		  .out = TO_PS(A, PARTIAL, ESA_R_AGED, 0, JA, ESA_RANK_NONE,
			       SEQ(130), 7, 0x1),
		  .ctr = { C(JA, AGED, 1), C(JA, EVICTED, 1) } },
	} },
	{ .name = "switchml_regions_are_private",
	  .what = "policy switchml: each job aggregates in its own region only",
	  .policy = ESA_POLICY_SWITCHML,
	  .place = { PLACE(JA, 5, 5), PLACE(JB, 5, 32 + 5), PLACE(JA, 32 + 5, 5) },
	  .steps = {
		{ PKT(JA, 0, SEQ(5), 0, 0), .verdict = XDP_DROP },
		{ PKT(JB, 0, SEQ(5), 7, 0), .verdict = XDP_DROP },
		/* same slot, an older chunk there: collides */
		{ PKT(JA, 0, SEQ(37), 0, 0), .verdict = XDP_REDIRECT,
		  .slot = { SLOT(JA, SEQ(5)), OWNER(JA, SEQ(5)) },
		  .ctr = { C(JA, COLLISION, 1), C(JB, PREEMPT_CAUSED, 0) } },
	} },
	{ .name = "homes_place_chunks_on_the_shared_pool",
	  .what = "homes on the shared pool (esactl job add ... region BASE SIZE "
		  "under esa): chunk seq of a job with home B+S lands in slot "
		  "(B + seq % S) mod slots, wrapping the pool; homes that do not "
		  "overlap never collide, and where two overlap, priorities "
		  "decide as anywhere in the shared pool",
	  .steps = {
		{ DEL(JA) },
		{ DEL(JB) },
		{ ADD(JA, .how = HOW_RAW, .edit = { JE(BASE, 60), JE(SIZE, 8) }) },
		{ ADD(JB, .how = HOW_RAW, .ps = T_PS_B,
		      .edit = { JE(BASE, 4), JE(SIZE, 8) }) },
		{ CALL(homes_fill),
		  .ctr = { C(JA, COLLISION, 0), C(JB, COLLISION, 0) } },
		/* a chunk a home further on meets its own job's chunk */
		{ PKT(JA, 0, SEQ(24), 1, 0), .verdict = XDP_REDIRECT,
		  .ctr = { C(JA, COLLISION, 1) } },
		/* B moves its home onto A's: the higher priority takes slot 0 */
		{ DEL(JB) },
		{ ADD(JB, .how = HOW_RAW, .ps = T_PS_B,
		      .edit = { JE(BASE, 0), JE(SIZE, 8) }) },
		{ PKT(JB, 0, SEQ(8), 2, 0), .verdict = XDP_REDIRECT,
		  .ctr = { C(JB, PREEMPT_CAUSED, 1) },
		  .tomb = { TOMB(JA, SEQ(20), PS) } },
		{ CALL(homes_b_took_slot_0) },
	} },
};
