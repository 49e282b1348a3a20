/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Jobs: registration rejects what the data path could not serve; a job's
 * slots are free once it is deleted, its lease ran out, or its id was
 * registered again (a new generation), without any scan.
 */

/* Registering job `id` edited so is refused (or, rc 0, taken). */
#define REG(name_, what_, id, rc_, err_, ...)				\
	{ .name = name_, .what = what_, .steps = {			\
		{ ADD(id, .how = HOW_RAW, .edit = { __VA_ARGS__ },	\
		      .rc = (rc_), .err = (err_)) } } }

/* The registration's generation, as the lease started it. */
static void lease_started(struct __test_metadata *_metadata, struct g_env *self)
{
	self->gen = esa_job_gen(&self->j);
	EXPECT_EQ(self->gen, self->j.reg);
}

/* Job 3's lease runs out (its packets renew it; none come). */
static void lease_run_out(struct __test_metadata *_metadata, struct g_env *self)
{
	struct esa_job j;

	usleep((ESA_LEASE_MS_MIN + 150) * 1000);
	ASSERT_EQ(0, esa_job_read(&self->e, 3, &j));
	EXPECT_TRUE(esa_job_expired(&j));
}

/* Renewed by a packet: a new generation of the same registration. */
static void lease_renewed(struct __test_metadata *_metadata, struct g_env *self)
{
	struct esa_job j;

	ASSERT_EQ(0, esa_job_read(&self->e, 3, &j));
	EXPECT_EQ(self->gen + 1, esa_job_gen(&j));
	EXPECT_EQ(self->gen, j.reg);
	EXPECT_FALSE(esa_job_expired(&j));
}

/* The slot of job A's chunk 120 is the new registration's. */
static void slot_of_new_gen(struct __test_metadata *_metadata, struct g_env *self)
{
	struct esa_slot s;

	ASSERT_EQ(0, t_slot(&self->e, t_slot_of(&self->e, JA, 120), &s, NULL));
	EXPECT_EQ(esa_job_gen(&self->j), s.gen);
}

static const struct g_case g_jobs[] = {
	REG("no_workers", "a job without workers", 6, -EINVAL, "workers",
	    JE(NWORKERS, 0)),
	REG("ranks_share_an_address", "two ranks at one address", 6, -EINVAL,
	    "share", JE(DUP_RANK, 0)),
	REG("ps_without_port", "a PS without a port", 6, -EINVAL, NULL,
	    JE(PS_PORT, 0)),
	REG("id_past_max_jobs", "a job id past max_jobs", 16, -EINVAL,
	    "out of range"),
	REG("home_without_size", "a home needs a size", 6, -EINVAL, "size",
	    JE(BASE, 4)),
	REG("home_outside_the_pool", "a home must start in the pool", 6, -EINVAL,
	    "does not fit", JE(BASE, 64), JE(SIZE, 4)),
	REG("home_larger_than_the_pool", "a home no larger than the pool", 6,
	    -EINVAL, NULL, JE(BASE, 0), JE(SIZE, 65)),
	REG("home_wrapping_the_pool", "a home may wrap the pool", 6, 0, NULL,
	    JE(BASE, 60), JE(SIZE, 64)),
	{ .name = "deleted_job_slot_is_free",
	  .what = "rule 1: a slot held by a deleted job is free, without any "
		  "scan (the lowest priority still wins it); the deleted job's "
		  "packets are dropped and counted",
	  .steps = {
		{ PKT(JA, 0, SEQ(100), 7, 0), .verdict = XDP_DROP },
		{ DEL(JA) },
		{ PKT(JB, 0, SLOT_OF(JA, 100), 0, 0), .verdict = XDP_DROP,
		  .slot = { SLOT(JA, SEQ(100)), OWNER_JOB(JB) },
		  .ctr = { C(JA, RECLAIMED, 1), C(JB, CLAIMED, 1) } },
		{ PKT(JA, 1, SEQ(100), 7, 0), .verdict = XDP_DROP,
		  .ctr = { C(JA, DROP_JOB, 1) } },
	} },
	{ .name = "expired_lease_frees_slots",
	  .what = "rule 1: a lease that ran out frees the job's slots; its next "
		  "packet renews the lease under a new generation",
	  .steps = {
		/* a lease so short it would expire live jobs */
		{ ADD(3, .how = HOW_RAW, .edit = { JE(LEASE, ESA_LEASE_MS_MIN - 1) },
		      .rc = -EINVAL, .err = "lease") },
		{ ADD(3, .edit = { JE(LEASE, ESA_LEASE_MS_MIN) }) },
		{ CALL(lease_started) },
		{ PKT(3, 0, SEQ(110), 7, 0), .verdict = XDP_DROP },
		{ CALL(lease_run_out) },
		{ PKT(JB, 0, SLOT_OF(3, 110), 0, 0), .verdict = XDP_DROP,
		  .ctr = { C(3, RECLAIMED, 1) } },
		{ PKT(3, 1, SEQ(110), 7, 0), .verdict = XDP_REDIRECT },
		{ CALL(lease_renewed), .ctr = { C(3, EXPIRED, 1) } },
	} },
	{ .name = "job_id_reuse_starts_new_generation",
	  .what = "a job id registered again is a new job: the old one's slots "
		  "are free",
	  .steps = {
		{ PKT(JA, 0, SEQ(120), 1, 0), .verdict = XDP_DROP },
		{ ADD(JA, .how = HOW_RAW, .rc = -EEXIST) },
		{ DEL(JA), .clear = true },
		{ ADD(JA) },
		/* a new chunk, not rank 1 of the old */
		{ PKT(JA, 1, SEQ(120), 1, 0), .verdict = XDP_DROP,
		  .slot = { SLOT(JA, SEQ(120)), BITMAP(2) },
		  .ctr = { C(JA, RECLAIMED, 1) } },
		{ CALL(slot_of_new_gen) },
	} },
};
