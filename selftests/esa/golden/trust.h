/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Trust: a rank lives where it is bound (its port from the registration,
 * its MAC learnt from its first packet or given), and a packet is admitted
 * by one registration's fields only.  What would spoof a rank is dropped
 * (drop_place, drop_job) and moves nothing.
 */

/* Job 7's places with the ranks' MACs given, staged before registration. */
static void stage_given_macs(struct __test_metadata *_metadata, struct g_env *self)
{
	self->j = t_job(W, T_PS_A, 7, 7);
	memset(self->pl, 0, sizeof(self->pl));
	ASSERT_EQ(0, esa_places_resolve(&self->e, &self->j, self->pl, self->err,
					sizeof(self->err)));
	for (int k = 0; k < W; k++) {
		t_worker_mac(k, self->pl[k].mac);
		self->pl[k].have_mac = true;
	}
	ASSERT_EQ(0, esa_binds_stage(&self->e, 7, &self->j, self->pl, self->err,
				     sizeof(self->err)));
}

/* ... registered (behind esactl's back: no fan-out yet), then its fan-out. */
static void add_staged(struct __test_metadata *_metadata, struct g_env *self)
{
	ASSERT_EQ(0, esa_job_add(&self->e, 7, &self->j, self->err, sizeof(self->err)));
}

static void deliver_given_macs(struct __test_metadata *_metadata, struct g_env *self)
{
	ASSERT_EQ(0, esa_deliver_set(&self->e, 7, &self->j, self->pl, self->err,
				     sizeof(self->err)));
}

/* Job A's entry as a packet racing a re-add can find it: active, its
 * registration cleared (the control plane clears it first, fills the
 * fields, sets the new registration, then the state). */
static void reg_cleared(struct __test_metadata *_metadata, struct g_env *self)
{
	self->reg = self->e.jobs[JA].reg;
	__atomic_store_n(&self->e.jobs[JA].reg, 0, __ATOMIC_RELEASE);
}

static void reg_restored(struct __test_metadata *_metadata, struct g_env *self)
{
	__atomic_store_n(&self->e.jobs[JA].reg, self->reg, __ATOMIC_RELEASE);
}

static const struct g_case g_trust[] = {
	{ .name = "rank_bound_to_its_port_and_mac",
	  .what = "a rank's port comes from its registration, its MAC from its "
		  "first packet; its address from another port or MAC is "
		  "dropped (drop_place) and moves nothing; the first packet wins",
	  .steps = {
		{ CHECK, .bind = BIND_AT(JA, 0, ESA_BIND_PORT, P_SW0) },
		/* rank 0's first packet, from its port: the MAC is learnt, once */
		{ PKT(JA, 0, SEQ(180), 0, 0), .verdict = XDP_DROP,
		  .ctr = { C(JA, LEARN, 1) },
		  .bind = BIND(JA, 0, ESA_BIND_PORT | ESA_BIND_MAC) },
		/* the same rank from another port (a resend would flush) */
		{ PKT(JA, 0, SEQ(180), 0, ESA_F_RESEND), .port = P_SW1,
		  .verdict = XDP_DROP },
		/* ... and from another MAC on its port */
		{ PKT(JA, 0, SEQ(180), 0, ESA_F_RESEND), .edit = { ED(SMAC_FLIP, 0) },
		  .verdict = XDP_DROP,
		  .ctr = { C(JA, DROP_PLACE, 2), C(JA, RESEND_FLUSH, 0) } },
		/* rank 1's first packet from another port binds nothing: its
		 * port came with the registration */
		{ PKT(JA, 1, SEQ(180), 0, 0), .port = P_SW1, .verdict = XDP_DROP,
		  .ctr = { C(JA, DROP_PLACE, 3), C(JA, AGGREGATED, 0) } },
		/* a forged first packet of rank 2 from another MAC binds it
		 * there (give MACs at registration where that matters); the
		 * real rank 2 is then refused, and nothing re-learns */
		{ PKT(JA, 2, SEQ(181), 0, 0), .edit = { ED(SMAC_FLIP, 0) },
		  .verdict = XDP_DROP },
		{ PKT(JA, 2, SEQ(182), 0, 0), .verdict = XDP_DROP,
		  .ctr = { C(JA, DROP_PLACE, 4), C(JA, LEARN, 2) } },
	} },
	{ .name = "given_mac_checked_from_the_first_packet",
	  .what = "a MAC given at registration is checked from the first packet "
		  "on; staged bindings refuse packets as of no job",
	  .steps = {
		{ CALL(stage_given_macs) },
		{ PKT(7, 0, SEQ(1), 0, 0), .edit = { ED(SMAC_FLIP, 0) },
		  .verdict = XDP_DROP, .ctr = { C(7, DROP_JOB, 1) } },
		{ CALL(add_staged) },
		{ PKT(7, 0, SEQ(1), 0, 0), .edit = { ED(SMAC_FLIP, 0) },
		  .verdict = XDP_DROP, .ctr = { C(7, DROP_PLACE, 1) } },
		{ CALL(deliver_given_macs) },
		{ PKT(7, 0, SEQ(1), 0, 0), .edit = { ED(SMAC_FLIP, 0) },
		  .verdict = XDP_DROP, .ctr = { C(7, DROP_PLACE, 2) } },
		{ PKT(7, 0, SEQ(2), 0, 0), .verdict = XDP_DROP,
		  .ctr = { C(7, CLAIMED, 1), C(7, LEARN, 0) } },
	} },
	{ .name = "half_rewritten_job_entry_admits_nothing",
	  .what = "a packet that finds a job's registration cleared read a "
		  "half-written entry: dropped as of no job, never admitted "
		  "with the fields of one registration and the number of another",
	  .steps = {
		{ CALL(reg_cleared) },
		{ PKT(JA, 0, SEQ(125), 1, 0), .verdict = XDP_DROP,
		  .ctr = { C(JA, DROP_JOB, 1), C(JA, CLAIMED, 0), C(JA, LEARN, 0) } },
		{ CALL(reg_restored) },
		{ PKT(JA, 0, SEQ(125), 1, 0), .verdict = XDP_DROP,
		  .ctr = { C(JA, CLAIMED, 1) } },
	} },
};
