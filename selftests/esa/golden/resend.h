/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Rule 6, resends: a resend flushes the partial holding its chunk unless
 * the partial is young (a rank joined it within the ageing limit), joins
 * it if its rank is new, and goes to the PS when the switch has no
 * partial or already completed the chunk.
 */

static const struct g_case g_resend[] = {
	{ .name = "resend_after_completion_goes_to_ps",
	  .what = "rule 6: a resend after the result went out is answered by the "
		  "PS, told that the switch completed the chunk (DONE: fetch it "
		  "if you lack it)",
	  .steps = {
		{ PKT(JA, 0, SEQ(12), 4, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(12), 4, 0), .verdict = XDP_DROP },
		{ PKT(JA, 2, SEQ(12), 4, 0), .verdict = XDP_REDIRECT },
		{ PKT(JA, 0, SEQ(12), 4, ESA_F_RESEND), .verdict = XDP_REDIRECT,
		  .out = TO_PS(A, COLLISION, ESA_R_DONE, ESA_F_RESEND, JA, 0,
			       SEQ(12), 4, 1),
		  .ctr = { C(JA, RESEND_FWD, 1), C(JA, PS_TX, 1) } },
	} },
	{ .name = "resend_flushes_partial",
	  .what = "rule 6: a resend flushes the partial still holding its chunk; "
		  "the next resend finds no partial: straight to the PS",
	  .steps = {
		{ PKT(JA, 0, SEQ(60), 2, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(60), 2, 0), .verdict = XDP_DROP },
		{ PKT(JA, 0, SEQ(60), 2, ESA_F_RESEND), .verdict = XDP_REDIRECT,
		  .out = TO_PS(A, PARTIAL, ESA_R_FLUSH, 0, JA, ESA_RANK_NONE,
			       SEQ(60), 2, 0x3),
		  .slot = { SLOT(JA, SEQ(60)), STATE(FREE) },
		  .tomb = { TOMB(JA, SEQ(60), PS) },
		  .ctr = { C(JA, RESEND_FLUSH, 1) } },
		{ PKT(JA, 1, SEQ(60), 2, ESA_F_RESEND), .verdict = XDP_REDIRECT,
		  .ctr = { C(JA, RESEND_FWD, 1) } },
	} },
	{ .name = "resend_of_missing_rank_completes",
	  .what = "rule 6: a resend of the one missing rank completes the chunk",
	  .steps = {
		{ PKT(JA, 0, SEQ(61), 2, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(61), 2, 0), .verdict = XDP_DROP },
		{ PKT(JA, 2, SEQ(61), 2, ESA_F_RESEND), .verdict = XDP_REDIRECT,
		  .out = RESULT(0), .ctr = { C(JA, COMPLETED, 1) } },
	} },
	{ .name = "resend_waits_for_a_young_partial",
	  .what = "rule 6: a resend of a rank in a young partial (a rank joined "
		  "it within the ageing limit) is a late result: dropped "
		  "(resend_held), the partial waits for its last rank; once idle "
		  "past the limit, a resend flushes it",
	  .stale_ms = 1000,
	  .steps = {
		{ PKT(JA, 0, SEQ(63), 2, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(63), 2, 0), .verdict = XDP_DROP },
		{ PKT(JA, 0, SEQ(63), 2, ESA_F_RESEND), .verdict = XDP_DROP,
		  .slot = { SLOT(JA, SEQ(63)), STATE(BUSY), BITMAP(0x3), NRANKS(2),
			    VALS(0x3) },
		  .tomb = { TOMB(JA, SEQ(63), NONE) },
		  .ctr = { C(JA, RESEND_HELD, 1), C(JA, RESEND_FLUSH, 0),
			   C(JA, PS_TX, 0) } },
		{ AGE(JA, SEQ(63)) },
		{ PKT(JA, 1, SEQ(63), 2, ESA_F_RESEND), .verdict = XDP_REDIRECT,
		  .out = TO_PS(A, PARTIAL, ESA_R_FLUSH, 0, JA, ESA_RANK_NONE,
			       SEQ(63), 2, 0x3),
		  .slot = { SLOT(JA, SEQ(63)), STATE(FREE) },
		  .ctr = { C(JA, RESEND_HELD, 1), C(JA, RESEND_FLUSH, 1) } },
	} },
	{ .name = "resend_of_new_rank_joins_a_young_partial",
	  .what = "rule 6: a resend of a new rank joins a young partial, as its "
		  "first send would have; the last rank completes the chunk in "
		  "the switch",
	  .stale_ms = 1000,
	  .steps = {
		{ PKT(JA, 0, SEQ(64), 2, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(64), 2, ESA_F_RESEND), .verdict = XDP_DROP,
		  .slot = { SLOT(JA, SEQ(64)), STATE(BUSY), BITMAP(0x3), VALS(0x3) },
		  .ctr = { C(JA, AGGREGATED, 1), C(JA, RESEND_FLUSH, 0) } },
		{ PKT(JA, 2, SEQ(64), 2, 0), .verdict = XDP_REDIRECT,
		  .out = RESULT(0), .ctr = { C(JA, COMPLETED, 1) } },
	} },
	{ .name = "resend_without_partial_goes_to_ps",
	  .what = "rule 6: a resend with no partial in the switch goes to the PS",
	  .steps = {
		{ PKT(JA, 2, SEQ(62), 0, ESA_F_RESEND), .verdict = XDP_REDIRECT,
		  .out = TO_PS(A, COLLISION, ESA_R_RESEND, ESA_F_RESEND, JA, 2,
			       SEQ(62), 0, 4),
		  .slot = { SLOT(JA, SEQ(62)), STATE(FREE) },
		  .ctr = { C(JA, CLAIMED, 0) } },
	} },
};
