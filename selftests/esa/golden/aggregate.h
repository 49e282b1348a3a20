/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Rules 1, 2 and 7, aggregation: a free slot is claimed, new ranks are
 * added, duplicates never; the last rank completes the chunk and the slot
 * is free at once; sums are exact, and one that leaves int32 is flagged.
 */

/* Element 3 leaves int32; element 4 sums to INT32_MIN exactly. */
static void vals_overflow(struct g_env *self)
{
	self->v[0][3] = INT32_MAX;
	self->v[1][3] = 1;
	self->v[2][3] = 0;
	self->v[0][4] = INT32_MIN;
	self->v[1][4] = 0;
	self->v[2][4] = 0;
}

static void vals_int32_min(struct g_env *self)
{
	for (int k = 0; k < W; k++)
		for (int i = 0; i < NV; i++)
			self->v[k][i] = k == 0 ? INT32_MIN : 0;
}

static void vals_partial_overflow(struct g_env *self)
{
	self->v[0][0] = INT32_MIN;
	self->v[1][0] = -1;
}

static void vals_extreme(struct g_env *self)
{
	for (int i = 0; i < NV; i++) {
		self->v[0][i] = i % 2 ? INT32_MAX : INT32_MIN;
		self->v[1][i] = i % 2 ? INT32_MIN : INT32_MAX;
		self->v[2][i] = -i;
	}
}

static void want_extreme(__s32 *vals)
{
	for (int i = 0; i < NV; i++)
		vals[i] = -1 - i;
}

/* Job 8's chunk seq, from its one rank: its sum at once, to that rank. */
#define ONE_RANK(s)							\
	{ PKT(8, 0, SEQ(s), 0, 0), .verdict = XDP_REDIRECT },		\
	{ EGRESS(8, SW0), .verdict = XDP_PASS,				\
	  .hdr = HDR(H_TYPE | H_BITMAP | H_RANK | H_SEQ | H_DADDR | H_VALS, \
		     .type = ESA_T_RESULT, .bitmap = 1, .rank = ESA_RANK_NONE, \
		     .seq = (s), .daddr = "w0", .vals = V_RANK0) }

static const struct g_case g_aggregate[] = {
	{ .name = "claim_free_slot",
	  .what = "rule 1: a free slot is claimed for (job, seq) with the "
		  "packet's values",
	  .steps = {
		{ PKT(JA, 0, SEQ(100), 2, 0), .verdict = XDP_DROP,
		  .slot = { SLOT(JA, SEQ(100)), STATE(BUSY), OWNER(JA, SEQ(100)),
			    PRIO(2), BITMAP(1), NRANKS(1), VALS(0x1) },
		  .ctr = { C(JA, RX, 1), C(JA, CLAIMED, 1), C(JA, LEARN, 1) } },
	} },
	{ .name = "aggregate_adds_new_rank",
	  .what = "rule 2: a new rank of the owning key is added and its bit set",
	  .steps = {
		{ PKT(JA, 2, SEQ(7), 1, 0), .verdict = XDP_DROP },
		{ PKT(JA, 0, SEQ(7), 1, 0), .verdict = XDP_DROP,
		  .slot = { SLOT(JA, SEQ(7)), STATE(BUSY), BITMAP(0x5), NRANKS(2),
			    VALS(0x5) },
		  .ctr = { C(JA, AGGREGATED, 1) } },
	} },
	{ .name = "complete_multicasts_and_frees_at_once",
	  .what = "rule 2: the last rank completes: the sum goes to the job's "
		  "devmap (one copy per member, addressed by egress), the slot is "
		  "free at once, and immediately claimable by another key",
	  .steps = {
		{ PKT(JA, 0, SEQ(5), 3, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(5), 3, 0), .verdict = XDP_DROP },
		{ PKT(JA, 2, SEQ(5), 3, 0), .verdict = XDP_REDIRECT, .out = RESULT(0),
		  .slot = { SLOT(JA, SEQ(5)), STATE(FREE) },
		  .tomb = { TOMB(JA, SEQ(5), DONE) },
		  .ctr = { C(JA, COMPLETED, 1), C(JA, CLAIMED, 1),
			   C(JA, AGGREGATED, 2) } },
		{ PKT(JB, 0, SLOT_OF(JA, 5), 0, 0), .verdict = XDP_DROP,
		  .ctr = { C(JB, CLAIMED, 1) } },
	} },
	{ .name = "duplicate_is_never_added",
	  .what = "rule 2: a rank already counted is a duplicate, never added "
		  "twice",
	  .steps = {
		{ PKT(JA, 1, SEQ(9), 0, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(9), 0, 0), .verdict = XDP_DROP,
		  .slot = { SLOT(JA, SEQ(9)), BITMAP(2), NRANKS(1), VALS(0x2) },
		  .ctr = { C(JA, DUPLICATE, 1) } },
	} },
	{ .name = "late_duplicate_after_completion_dropped",
	  .what = "rule 2: a copy arriving after the result went out starts "
		  "nothing",
	  .steps = {
		{ PKT(JA, 0, SEQ(11), 0, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(11), 0, 0), .verdict = XDP_DROP },
		{ PKT(JA, 2, SEQ(11), 0, 0), .verdict = XDP_REDIRECT },
		{ PKT(JA, 1, SEQ(11), 0, 0), .verdict = XDP_DROP,
		  .slot = { SLOT(JA, SEQ(11)), STATE(FREE) },
		  .ctr = { C(JA, DUPLICATE, 1), C(JA, CLAIMED, 1) } },
	} },
	{ .name = "overflow_in_result_is_flagged",
	  .what = "rule 7: a sum that leaves int32 is flagged, in results",
	  .values = vals_overflow,
	  .steps = {
		{ PKT(JA, 0, SEQ(70), 0, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(70), 0, 0), .verdict = XDP_DROP },
		{ PKT(JA, 2, SEQ(70), 0, 0), .verdict = XDP_REDIRECT,
		  .out = RESULT(ESA_F_OVERFLOW), .ctr = { C(JA, OVERFLOW, 1) } },
	} },
	{ .name = "int32_min_is_no_overflow",
	  .what = "rule 7: INT32_MIN alone is exact: no flag",
	  .values = vals_int32_min,
	  .steps = {
		{ PKT(JA, 0, SEQ(71), 0, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(71), 0, 0), .verdict = XDP_DROP },
		{ PKT(JA, 2, SEQ(71), 0, 0), .verdict = XDP_REDIRECT,
		  .out = RESULT(0), .ctr = { C(JA, OVERFLOW, 0) } },
	} },
	{ .name = "overflow_in_partial_is_flagged",
	  .what = "rule 7: a sum that leaves int32 is flagged in partials too",
	  .values = vals_partial_overflow,
	  .steps = {
		{ PKT(JA, 0, SEQ(80), 0, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(80), 0, 0), .verdict = XDP_DROP },
		{ PKT(JB, 0, SLOT_OF(JA, 80), 1, 0), .verdict = XDP_REDIRECT,
		  .out = TO_PS(A, PARTIAL, ESA_R_PREEMPT, ESA_F_OVERFLOW, JA,
			       ESA_RANK_NONE, SEQ(80), 0, 0x3),
		  .ctr = { C(JA, OVERFLOW, 1) } },
	} },
	{ .name = "extreme_values_sum_exactly",
	  .what = "sums of large negative and positive values stay exact",
	  .values = vals_extreme, .want = want_extreme,
	  .steps = {
		{ PKT(JA, 0, SEQ(90), 0, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(90), 0, 0), .verdict = XDP_DROP },
		{ PKT(JA, 2, SEQ(90), 0, 0), .verdict = XDP_REDIRECT,
		  .out = RESULT(0) },
	} },
	{ .name = "one_rank_job_completes_at_once",
	  .what = "a job of one rank: its packet is its sum, sent to its members "
		  "at once",
	  .steps = {
		{ ADD(8, .workers = 1) },
		ONE_RANK(0),
		ONE_RANK(1),
		ONE_RANK(2),
		{ CHECK, .ctr = { C(8, COMPLETED, 3), C(8, CLAIMED, 0) } },
	} },
};
