// SPDX-License-Identifier: GPL-2.0
/*
 * esa.ko's generic netlink API: every command, its events and counters, and
 * each kind of bad input with the exact error and extack message expected;
 * dumps that race changes; a container's root (allowed in its own network
 * namespace, refused in one it does not own, charged to its memory cgroup
 * and stopped by its limit); namespace teardown.
 * Needs root and esa.ko with the default max_jobs (256); skips without it.
 * Each test runs in a network namespace of its own, so its registry is
 * empty at the start and the host's jobs are never touched.
 */
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kmod_test.h"

#define ID	7
#define ID2	8
#define NOID	9

FIXTURE(nl) {
	struct esa_nl *nl;
};

FIXTURE_SETUP(nl)
{
	int err;

	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	err = esa_nl_open(&self->nl);
	if (err == -ENOENT)
		SETUP_SKIP("esa.ko is not loaded");
	ASSERT_EQ(0, err);
}

FIXTURE_TEARDOWN(nl)
{
	esa_nl_close(self->nl);
}

/* The call failed with err and the kernel said exactly msg. */
#define ASSERT_NLERR(err, msg, call) do {				\
		int __rc = (call);					\
		const char *__m = esa_nl_error(self->nl);		\
		EXPECT_EQ(err, __rc);					\
		ASSERT_NE(NULL, __m);					\
		EXPECT_STREQ(msg, __m);					\
	} while (0)

static int find_cb(__u32 id, const struct esa_job *j,
		   const struct esa_nl_job_info *info, void *arg)
{
	struct esa_job *out = arg;

	if (id == ID)
		*out = *j;
	return 0;
}

TEST_F_TIMEOUT(nl, add_get_dump_del, K_TIMEOUT)
{
	struct esa_job j = t_job(3, T_PS_A, 5, 0), got, dumped = {};
	struct esa_nl_job_info info;

	j.rank[2].port = htons(6000);
	j.region_base = 100;
	j.region_size = 28;
	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &got, &info));
	EXPECT_EQ(ESA_JOB_ACTIVE, got.state);
	EXPECT_EQ(3, got.nworkers);
	EXPECT_EQ(5, got.max_prio);
	EXPECT_EQ(0, got.lease_ms);
	EXPECT_EQ(100, got.region_base);
	EXPECT_EQ(28, got.region_size);
	EXPECT_EQ(0, memcmp(&j.ps, &got.ps, sizeof(j.ps)));
	EXPECT_EQ(0, memcmp(j.rank, got.rank, 3 * sizeof(j.rank[0])));
	EXPECT_EQ(0x7, got.mask);	/* one level: the box sums every rank */
	EXPECT_EQ(0, got.up.ip);
	EXPECT_GT(1000, info.idle_ms);
	EXPECT_EQ(0, info.expired);
	/* A new registration is the generation the add opened. */
	EXPECT_EQ(esa_job_gen(&got), info.reg);

	ASSERT_EQ(0, esa_nl_job_dump(self->nl, find_cb, &dumped));
	EXPECT_EQ(0, memcmp(&got, &dumped, sizeof(got)));

	ASSERT_EQ(0, esa_nl_job_del(self->nl, ID));
	ASSERT_NLERR(-ENOENT, "no such job",
		     esa_nl_job_get(self->nl, ID, &got, NULL));
}

static int count_cb(__u32 id, const struct esa_job *j,
		    const struct esa_nl_job_info *info, void *arg)
{
	__u32 *ids = arg;

	/* ids[0]: count; then the ids in the order they came. */
	ids[++ids[0]] = id;
	return j->nworkers != ESA_MAX_WORKERS;
}

/* 100 jobs of 64 workers take several dump messages: none is lost. */
TEST_F_TIMEOUT(nl, dump_spans_messages, K_TIMEOUT)
{
	struct esa_job j = t_job(ESA_MAX_WORKERS, T_PS_A, 0, 0);
	__u32 ids[128] = {};

	for (int id = 0; id < 100; id++)
		ASSERT_EQ(0, esa_nl_job_add(self->nl, id, &j));
	ASSERT_EQ(0, esa_nl_job_dump(self->nl, count_cb, ids));
	ASSERT_EQ(100, ids[0]);
	for (int i = 0; i < 100; i++)
		EXPECT_EQ(i, ids[i + 1]);
}

struct race {
	struct esa_nl *other;
	int seen, changed;
};

/* Delete a job not dumped yet while the dump is being read. */
static int race_cb(__u32 id, const struct esa_job *j,
		   const struct esa_nl_job_info *info, void *arg)
{
	struct race *r = arg;

	if (!r->seen++)
		r->changed = esa_nl_job_del(r->other, 99) ? -1 : 1;
	return 0;
}

/*
 * A change between the parts of a dump is flagged (NLM_F_DUMP_INTR), and
 * the library says so (-EINTR) instead of returning a list that never was.
 */
TEST_F_TIMEOUT(nl, dump_interrupted_by_a_change, K_TIMEOUT)
{
	struct esa_job j = t_job(ESA_MAX_WORKERS, T_PS_A, 0, 0);
	struct race r = {};
	__u32 ids[128] = {};

	for (int id = 0; id < 100; id++)
		ASSERT_EQ(0, esa_nl_job_add(self->nl, id, &j));
	ASSERT_EQ(0, esa_nl_open(&r.other));
	ASSERT_NLERR(-EINTR, "the jobs changed during the dump: run it again",
		     esa_nl_job_dump(self->nl, race_cb, &r));
	EXPECT_EQ(1, r.changed);
	/* Again, with nothing changing: the whole list, without 99. */
	ASSERT_EQ(0, esa_nl_job_dump(self->nl, count_cb, ids));
	EXPECT_EQ(99, ids[0]);
	esa_nl_close(r.other);
}

struct expiry {
	struct esa_nl *other;
	int seen, before, expired;
};

/* At the first job of the dump, wait (10 s at most) for job 99's expiry. */
static int expiry_cb(__u32 id, const struct esa_job *j,
		     const struct esa_nl_job_info *info, void *arg)
{
	struct esa_nl_job_info i99;
	struct expiry *x = arg;
	struct esa_job got;

	if (x->seen++)
		return 0;
	x->before = !esa_nl_job_get(x->other, 99, &got, &i99) && i99.expired;
	for (int k = 0; k < 1000 && !x->expired; k++) {
		usleep(10000);
		x->expired = !esa_nl_job_get(x->other, 99, &got, &i99) &&
			     i99.expired;
	}
	return 0;
}

/*
 * A lease running out is a change too (a new generation, the job
 * expired): a dump across it is flagged, as across an add or a delete.
 */
TEST_F_TIMEOUT(nl, dump_interrupted_by_an_expiry, K_TIMEOUT)
{
	struct esa_job j = t_job(ESA_MAX_WORKERS, T_PS_A, 0, 0);
	struct expiry x = {};

	for (int id = 0; id < 99; id++)
		ASSERT_EQ(0, esa_nl_job_add(self->nl, id, &j));
	ASSERT_EQ(0, esa_nl_open(&x.other));
	j.lease_ms = 1000;		/* runs out during the dump */
	ASSERT_EQ(0, esa_nl_job_add(self->nl, 99, &j));
	ASSERT_NLERR(-EINTR, "the jobs changed during the dump: run it again",
		     esa_nl_job_dump(self->nl, expiry_cb, &x));
	EXPECT_EQ(0, x.before) TH_LOG("job 99 expired before the dump began");
	EXPECT_EQ(1, x.expired);
	esa_nl_close(x.other);
}

TEST_F_TIMEOUT(nl, dump_takes_no_attributes, K_TIMEOUT)
{
	struct esa_job j = t_job(2, T_PS_A, 0, 0);
	struct k_attrs m = {};

	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	k_u32(&m, ESA_JOB_A_ID, ID2);
	ASSERT_NLERR(-EINVAL, "a dump takes no attributes",
		     esa_nl_raw_dump(self->nl, ESA_CMD_JOB_GET, m.buf, m.len));
	EXPECT_EQ(0, esa_nl_raw_dump(self->nl, ESA_CMD_JOB_GET, NULL, 0));
}

TEST_F_TIMEOUT(nl, add_existing_id, K_TIMEOUT)
{
	struct esa_job j = t_job(2, T_PS_A, 0, 0);

	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	ASSERT_NLERR(-EEXIST, "job id in use", esa_nl_job_add(self->nl, ID, &j));
}

/* Delete bumps the generation, and so does the next add of the id. */
TEST_F_TIMEOUT(nl, id_reuse_new_generation, K_TIMEOUT)
{
	struct esa_job j = t_job(2, T_PS_A, 0, 0), got;
	struct esa_nl_job_info info;
	__u32 gen;

	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &got, &info));
	gen = esa_job_gen(&got);
	EXPECT_EQ(gen, info.reg);
	ASSERT_EQ(0, esa_nl_job_del(self->nl, ID));
	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &got, &info));
	EXPECT_EQ(gen + 2, esa_job_gen(&got));
	EXPECT_EQ(gen + 2, info.reg);
}

/* The registration stays when the lease runs out and when set changes. */
TEST_F_TIMEOUT(nl, reg_survives_expiry_and_set, K_TIMEOUT)
{
	struct esa_job j = t_job(2, T_PS_A, 0, 0), got;
	struct esa_nl_job_info info;
	struct k_events e = {};
	struct esa_nl *mon;
	__u32 reg;

	j.lease_ms = ESA_LEASE_MS_MIN;
	ASSERT_EQ(0, esa_nl_open(&mon));
	ASSERT_EQ(0, esa_nl_join_events(mon));
	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &got, &info));
	reg = info.reg;
	ASSERT_EQ(1, k_wait_event(mon, &e, ESA_CMD_JOB_EXPIRED, ID, 3000));
	ASSERT_EQ(0, esa_nl_job_set_prio(self->nl, ID, 4));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &got, &info));
	EXPECT_EQ(reg + 1, esa_job_gen(&got));
	EXPECT_EQ(reg, info.reg);
	ASSERT_EQ(1, k_wait_event(mon, &e, ESA_CMD_JOB_CHANGED, ID, 2000));
	EXPECT_EQ(reg, k_find_event(&e, ESA_CMD_JOB_ADDED, ID)->reg);
	EXPECT_EQ(reg, k_find_event(&e, ESA_CMD_JOB_CHANGED, ID)->reg);
	esa_nl_close(mon);
}

TEST_F_TIMEOUT(nl, unknown_job, K_TIMEOUT)
{
	struct esa_nl_counters t, c;
	struct esa_job got;

	ASSERT_NLERR(-ENOENT, "no such job", esa_nl_job_del(self->nl, NOID));
	ASSERT_NLERR(-ENOENT, "no such job",
		     esa_nl_job_get(self->nl, NOID, &got, NULL));
	ASSERT_NLERR(-ENOENT, "no such job",
		     esa_nl_job_set_prio(self->nl, NOID, 1));
	/* Counters of an id exist whether or not it is registered, and
	 * whether or not the namespace has a registry yet.
	 */
	ASSERT_EQ(0, esa_nl_counters(self->nl, NOID, &t, &c));
	EXPECT_EQ(0, c.adds + t.adds);
}

TEST_F_TIMEOUT(nl, id_out_of_range, K_TIMEOUT)
{
	struct esa_job j = t_job(2, T_PS_A, 0, 0), got;
	struct esa_nl_counters t, c;

	ASSERT_NLERR(-ERANGE, "job id not below the module's max_jobs",
		     esa_nl_job_add(self->nl, 256, &j));
	ASSERT_NLERR(-ERANGE, "job id not below the module's max_jobs",
		     esa_nl_job_get(self->nl, 70000, &got, NULL));
	ASSERT_NLERR(-ERANGE, "job id not below the module's max_jobs",
		     esa_nl_job_del(self->nl, 256));
	ASSERT_NLERR(-ERANGE, "job id not below the module's max_jobs",
		     esa_nl_counters(self->nl, 256, &t, &c));
	ASSERT_EQ(0, esa_nl_job_add(self->nl, 255, &j));
	ASSERT_EQ(0, esa_nl_job_del(self->nl, 255));
}

TEST_F_TIMEOUT(nl, missing_attributes, K_TIMEOUT)
{
	struct k_attrs m;

	/* ADD without an id, without workers, without a PS. */
	m.len = 0;
	k_addr(&m, ESA_JOB_A_WORKERS, "10.0.0.11", 0);
	k_addr(&m, ESA_JOB_A_PS, T_PS_A, T_PS_PORT);
	ASSERT_NLERR(-EINVAL, "missing attribute ESA_JOB_A_ID",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));

	m.len = 0;
	k_u32(&m, ESA_JOB_A_ID, ID);
	k_addr(&m, ESA_JOB_A_PS, T_PS_A, T_PS_PORT);
	ASSERT_NLERR(-EINVAL, "missing attribute ESA_JOB_A_WORKERS",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));

	m.len = 0;
	k_u32(&m, ESA_JOB_A_ID, ID);
	k_addr(&m, ESA_JOB_A_WORKERS, "10.0.0.11", 0);
	ASSERT_NLERR(-EINVAL, "missing attribute ESA_JOB_A_PS",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));

	/* A worker without an address; a PS without a port. */
	m.len = 0;
	k_u32(&m, ESA_JOB_A_ID, ID);
	k_addr(&m, ESA_JOB_A_WORKERS, NULL, 5000);
	k_addr(&m, ESA_JOB_A_PS, T_PS_A, T_PS_PORT);
	ASSERT_NLERR(-EINVAL, "missing attribute ESA_ADDR_A_IPV4",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));

	m.len = 0;
	k_u32(&m, ESA_JOB_A_ID, ID);
	k_addr(&m, ESA_JOB_A_WORKERS, "10.0.0.11", 0);
	k_addr(&m, ESA_JOB_A_PS, T_PS_A, 0);
	ASSERT_NLERR(-EINVAL, "missing attribute ESA_ADDR_A_PORT",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));

	/* SET without the priority; GET, DEL without an id. */
	m.len = 0;
	k_u32(&m, ESA_JOB_A_ID, ID);
	ASSERT_NLERR(-EINVAL, "missing attribute ESA_JOB_A_MAX_PRIO",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_SET, m.buf, m.len));
	ASSERT_NLERR(-EINVAL, "missing attribute ESA_JOB_A_ID",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_GET, NULL, 0));
	ASSERT_NLERR(-EINVAL, "missing attribute ESA_JOB_A_ID",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_DEL, NULL, 0));
}

TEST_F_TIMEOUT(nl, malformed_attributes, K_TIMEOUT)
{
	struct k_attrs m;
	__u16 id16 = ID;
	size_t w;

	/* Wrong length, caught by the policy. */
	m.len = 0;
	k_put(&m, ESA_JOB_A_ID, &id16, 2);
	ASSERT_NLERR(-EINVAL, "invalid attribute length",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_GET, m.buf, m.len));

	/* A nest without NLA_F_NESTED. */
	k_add_attrs(&m, ID, 1);
	((struct nlattr *)(m.buf + NLA_ALIGN(NLA_HDRLEN + 4)))->nla_type =
		ESA_JOB_A_WORKERS;
	ASSERT_NLERR(-EINVAL, "NLA_F_NESTED is missing",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));

	/* An attribute the family does not have; one the command does not
	 * take (the generation is the kernel's to choose).
	 */
	k_add_attrs(&m, ID, 1);
	k_u32(&m, 100, 1);
	ASSERT_NLERR(-EINVAL, "Unknown attribute type",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));
	k_add_attrs(&m, ID, 1);
	k_u32(&m, ESA_JOB_A_GEN, 1);
	ASSERT_NLERR(-EINVAL, "Unsupported attribute",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));

	/* Trailing bytes that are no attribute: after the last attribute,
	 * and inside a worker's nest.
	 */
	k_add_attrs(&m, ID, 1);
	memset(m.buf + m.len, 0, 4);
	m.len += 4;
	ASSERT_NLERR(-EINVAL, "bytes leftover after parsing attributes",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));
	m.len = 0;
	k_u32(&m, ESA_JOB_A_ID, ID);
	k_addr(&m, ESA_JOB_A_WORKERS, "10.0.0.11", 0);
	w = k_nest(&m, ESA_JOB_A_WORKERS);
	k_u32(&m, ESA_ADDR_A_IPV4, t_ip("10.0.0.12"));
	memset(m.buf + m.len, 0, 4);
	m.len += 4;
	k_end(&m, w);
	k_addr(&m, ESA_JOB_A_PS, T_PS_A, T_PS_PORT);
	ASSERT_NLERR(-EINVAL, "bytes leftover after parsing attributes",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));

	/* Bad addresses. */
	{
		struct esa_job j = t_job(2, T_PS_A, 0, 0);

		m.len = 0;
		k_u32(&m, ESA_JOB_A_ID, ID);
		k_addr(&m, ESA_JOB_A_WORKERS, "0.0.0.0", 0);
		k_addr(&m, ESA_JOB_A_PS, T_PS_A, T_PS_PORT);
		ASSERT_NLERR(-EINVAL, "address 0.0.0.0 is not allowed",
			     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));
		j.rank[1] = j.rank[0];
		ASSERT_NLERR(-EINVAL, "two ranks with one address and port",
			     esa_nl_job_add(self->nl, ID, &j));
		j = t_job(2, T_PS_A, 0, 0);
		j.ps.port = 0;
		ASSERT_NLERR(-EINVAL, "the parameter server needs a port",
			     esa_nl_job_add(self->nl, ID, &j));
	}
	/* None of it registered anything. */
	ASSERT_EQ(-ENOENT, esa_nl_job_get(self->nl, ID, &(struct esa_job){}, NULL));
}

TEST_F_TIMEOUT(nl, out_of_range_values, K_TIMEOUT)
{
	struct esa_job j = t_job(2, T_PS_A, 0, 0);
	struct k_attrs m;

	/* Leases: 0 (never), or 100 ms .. one hour. */
	j.lease_ms = ESA_LEASE_MS_MAX + 1;
	ASSERT_NLERR(-ERANGE, "lease longer than one hour (3600000 ms)",
		     esa_nl_job_add(self->nl, ID, &j));
	j.lease_ms = 1;
	ASSERT_NLERR(-ERANGE, "lease shorter than 100 ms (0: never)",
		     esa_nl_job_add(self->nl, ID, &j));
	j.lease_ms = ESA_LEASE_MS_MIN - 1;
	ASSERT_NLERR(-ERANGE, "lease shorter than 100 ms (0: never)",
		     esa_nl_job_add(self->nl, ID, &j));
	j.lease_ms = ESA_LEASE_MS_MIN;
	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	ASSERT_EQ(0, esa_nl_job_del(self->nl, ID));
	j.lease_ms = ESA_LEASE_MS_MAX;
	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	ASSERT_EQ(0, esa_nl_job_del(self->nl, ID));

	j = t_job(2, T_PS_A, 0, 0);
	j.region_base = 0xffffff00;
	j.region_size = 0x200;
	ASSERT_NLERR(-ERANGE, "region ends past slot 2^32",
		     esa_nl_job_add(self->nl, ID, &j));
	j.region_size = 0x100;	/* up to slot 2^32 - 1: fine */
	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));

	/* 65 workers. */
	k_add_attrs(&m, ID2, ESA_MAX_WORKERS + 1);
	ASSERT_NLERR(-ERANGE, "more than 64 workers",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));
	k_add_attrs(&m, ID2, ESA_MAX_WORKERS);
	ASSERT_EQ(0, esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));
}

/* ------------------------------------------------------------------ */
/* Two levels                                                          */
/* ------------------------------------------------------------------ */

/* A leaf: ranks 0 and 2 of 4 here, 1 and 3 under another leaf. */
static struct esa_job leaf_job(void)
{
	struct esa_job j = t_job(4, T_PS_A, 2, 0);

	j.rank[1] = (struct esa_addr){};
	j.rank[3] = (struct esa_addr){};
	j.up = (struct esa_addr){ t_ip("10.255.0.1"), htons(ESA_DEFAULT_PORT) };
	return j;
}

/* A spine: a worker at rank 0, leaves of ranks 1-2 and 3-5. */
static struct esa_job spine_job(void)
{
	struct esa_job j = t_job(1, T_PS_A, 2, 0);

	j.nworkers = 6;
	j.rank[1] = (struct esa_addr){ t_ip("10.254.1.1"), htons(ESA_DEFAULT_PORT) };
	j.set[1] = 0x6;
	j.rank[3] = (struct esa_addr){ t_ip("10.254.2.1"), 0 };
	j.set[3] = 0x38;
	return j;
}

static void expect_same_members(struct __test_metadata *_metadata,
				const struct esa_job *want,
				const struct esa_job *got)
{
	EXPECT_EQ(want->nworkers, got->nworkers);
	EXPECT_EQ(0, memcmp(want->rank, got->rank, sizeof(want->rank)));
	EXPECT_EQ(0, memcmp(want->set, got->set, sizeof(want->set)));
	EXPECT_EQ(0, memcmp(&want->up, &got->up, sizeof(want->up)));
}

struct two_found {
	struct esa_job leaf, spine;
	int n;
};

static int two_cb(__u32 id, const struct esa_job *j,
		  const struct esa_nl_job_info *info, void *arg)
{
	struct two_found *f = arg;

	if (id == ID)
		f->leaf = *j;
	else if (id == ID2)
		f->spine = *j;
	f->n++;
	return 0;
}

static int two_event_cb(const struct esa_nl_event *ev, void *arg)
{
	struct two_found *f = arg;

	if (ev->cmd == ESA_CMD_JOB_ADDED && ev->id == ID2) {
		f->spine = *ev->job;
		return 1;
	}
	return 0;
}

/*
 * A leaf (its ranks here, the others' not, its spine) and a spine (a
 * worker and two leaves with their ranks) registered, read back, dumped
 * and announced as they were given, with the ranks each box sums.
 */
TEST_F_TIMEOUT(nl, two_levels_add_get_dump, K_TIMEOUT)
{
	struct esa_job leaf = leaf_job(), spine = spine_job(), got;
	struct two_found f = {}, ev = {};
	struct esa_nl *mon;

	ASSERT_EQ(0, esa_nl_open(&mon));
	ASSERT_EQ(0, esa_nl_join_events(mon));
	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &leaf));
	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID2, &spine));

	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &got, NULL));
	expect_same_members(_metadata, &leaf, &got);
	EXPECT_EQ(0x5, got.mask);
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID2, &got, NULL));
	expect_same_members(_metadata, &spine, &got);
	EXPECT_EQ(0x3f, got.mask);
	EXPECT_EQ(0, got.up.ip);

	ASSERT_EQ(0, esa_nl_job_dump(self->nl, two_cb, &f));
	EXPECT_EQ(2, f.n);
	expect_same_members(_metadata, &leaf, &f.leaf);
	expect_same_members(_metadata, &spine, &f.spine);
	EXPECT_EQ(0x3f, f.spine.mask);

	esa_nl_set_timeout(mon, 2000);
	ASSERT_EQ(1, esa_nl_monitor(mon, two_event_cb, &ev));
	expect_same_members(_metadata, &spine, &ev.spine);
	EXPECT_EQ(0x3f, ev.spine.mask);

	/* A job of the ranks "ranks" names, more than its members do. */
	ASSERT_EQ(0, esa_nl_job_del(self->nl, ID));
	leaf.nworkers = 9;
	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &leaf));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &got, NULL));
	EXPECT_EQ(9, got.nworkers);
	EXPECT_EQ(0x5, got.mask);
	esa_nl_close(mon);
}

/* A leaf nest: address (NULL: none), port, ranks (0: none). */
static void k_leaf(struct k_attrs *m, const char *ip, __u16 port, __u64 set)
{
	size_t n = k_nest(m, ESA_JOB_A_LEAVES);
	__be32 a = ip ? t_ip(ip) : 0;
	__be16 p = htons(port);

	if (ip)
		k_put(m, ESA_LEAF_A_IPV4, &a, 4);
	if (port)
		k_put(m, ESA_LEAF_A_PORT, &p, 2);
	if (set)
		k_put(m, ESA_LEAF_A_RANKS, &set, 8);
	k_end(m, n);
}

/* An ADD of ID with the PS and nothing else yet. */
static void k_two(struct k_attrs *m)
{
	m->len = 0;
	k_u32(m, ESA_JOB_A_ID, ID);
	k_addr(m, ESA_JOB_A_PS, T_PS_A, T_PS_PORT);
}

/* A job with ranks elsewhere needs an upstream, with an address and a
 * port. */
static void bad_upstream(struct __test_metadata *_metadata, FIXTURE_DATA(nl) *self)
{
	struct esa_job j;
	struct k_attrs m;

	/* Ranks not here, and no upstream to sum them at. */
	j = leaf_job();
	j.up = (struct esa_addr){};
	ASSERT_NLERR(-EINVAL, "ranks not under this box need an upstream (ESA_JOB_A_UPSTREAM)",
		     esa_nl_job_add(self->nl, ID, &j));
	j = spine_job();
	j.nworkers = 7;
	ASSERT_NLERR(-EINVAL, "ranks not under this box need an upstream (ESA_JOB_A_UPSTREAM)",
		     esa_nl_job_add(self->nl, ID, &j));
	/* An upstream without a port; without an address. */
	j = leaf_job();
	j.up.port = 0;
	ASSERT_NLERR(-EINVAL, "the upstream needs a port",
		     esa_nl_job_add(self->nl, ID, &j));
	k_two(&m);
	k_addr(&m, ESA_JOB_A_WORKERS, "10.0.0.11", 0);
	k_addr(&m, ESA_JOB_A_UPSTREAM, NULL, ESA_DEFAULT_PORT);
	ASSERT_NLERR(-EINVAL, "missing attribute ESA_ADDR_A_IPV4",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));
}

/* Leaves: no ranks, no address, address 0, ranks 0. */
static void bad_leaves(struct __test_metadata *_metadata, FIXTURE_DATA(nl) *self)
{
	struct k_attrs m;
	__u64 zero = 0;
	size_t at;

	k_two(&m);
	k_leaf(&m, "10.254.1.1", 0, 0);
	ASSERT_NLERR(-EINVAL, "missing attribute ESA_LEAF_A_RANKS",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));
	k_two(&m);
	k_leaf(&m, NULL, 0, 0x3);
	ASSERT_NLERR(-EINVAL, "missing attribute ESA_LEAF_A_IPV4",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));
	k_two(&m);
	k_leaf(&m, "0.0.0.0", 0, 0x3);
	ASSERT_NLERR(-EINVAL, "address 0.0.0.0 is not allowed",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));
	k_two(&m);
	at = k_nest(&m, ESA_JOB_A_LEAVES);
	k_u32(&m, ESA_LEAF_A_IPV4, t_ip("10.254.1.1"));
	k_put(&m, ESA_LEAF_A_RANKS, &zero, 8);
	k_end(&m, at);
	ASSERT_NLERR(-EINVAL, "a leaf needs ranks",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));
}

/* Ranks under two members: two leaves; a leaf and a worker.  Two leaves,
 * or a leaf and a worker, at one address and port. */
static void bad_members(struct __test_metadata *_metadata, FIXTURE_DATA(nl) *self)
{
	struct esa_job j;
	struct k_attrs m;

	j = spine_job();
	j.set[3] = 0x3c;
	ASSERT_NLERR(-EINVAL, "ranks under two members",
		     esa_nl_job_add(self->nl, ID, &j));
	k_two(&m);
	k_addr(&m, ESA_JOB_A_WORKERS, "10.0.0.11", 0);
	k_addr(&m, ESA_JOB_A_WORKERS, "10.0.0.12", 0);
	k_leaf(&m, "10.254.1.1", 0, 0x6);
	ASSERT_NLERR(-EINVAL, "ranks under two members",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));
	j = spine_job();
	j.rank[3] = j.rank[1];
	ASSERT_NLERR(-EINVAL, "two members with one address and port",
		     esa_nl_job_add(self->nl, ID, &j));
	j = spine_job();
	j.rank[1] = j.rank[0];
	ASSERT_NLERR(-EINVAL, "two members with one address and port",
		     esa_nl_job_add(self->nl, ID, &j));
}

/* The job's ranks: fewer than its members name, 0, 65. */
static void bad_ranks(struct __test_metadata *_metadata, FIXTURE_DATA(nl) *self)
{
	struct k_attrs m;
	__u8 n;

	k_two(&m);
	k_leaf(&m, "10.254.1.1", 0, 0xf0);
	n = 4;
	k_put(&m, ESA_JOB_A_RANKS, &n, 1);
	ASSERT_NLERR(-ERANGE, "fewer ranks than the workers and leaves name",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));
	k_add_attrs(&m, ID, 1);
	n = 0;
	k_put(&m, ESA_JOB_A_RANKS, &n, 1);
	ASSERT_NLERR(-ERANGE, "integer out of range",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));
	k_add_attrs(&m, ID, 1);
	n = ESA_MAX_WORKERS + 1;
	k_put(&m, ESA_JOB_A_RANKS, &n, 1);
	ASSERT_NLERR(-ERANGE, "integer out of range",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));
}

/* Every way two levels can be wrong, each with its errno and message. */
TEST_F_TIMEOUT(nl, two_levels_bad_input, K_TIMEOUT)
{
	struct esa_job j;
	struct k_attrs m;
	__u64 mask = 1;
	__u8 n;

	bad_upstream(_metadata, self);
	bad_leaves(_metadata, self);
	bad_members(_metadata, self);
	bad_ranks(_metadata, self);

	/* No member here at all: only ranks elsewhere. */
	k_two(&m);
	k_nest(&m, ESA_JOB_A_WORKERS);
	k_addr(&m, ESA_JOB_A_UPSTREAM, "10.255.0.1", ESA_DEFAULT_PORT);
	ASSERT_NLERR(-EINVAL, "a job needs a worker or a leaf here",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));
	/* A mask is the module's to say. */
	k_add_attrs(&m, ID, 1);
	k_put(&m, ESA_JOB_A_MASK, &mask, 8);
	ASSERT_NLERR(-EINVAL, "Unsupported attribute",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));

	/* None of it registered anything; and the levels cannot be set. */
	ASSERT_EQ(-ENOENT, esa_nl_job_get(self->nl, ID, &(struct esa_job){}, NULL));
	j = leaf_job();
	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	m.len = 0;
	k_u32(&m, ESA_JOB_A_ID, ID);
	n = 1;
	k_put(&m, ESA_JOB_A_MAX_PRIO, &n, 1);
	k_addr(&m, ESA_JOB_A_UPSTREAM, "10.255.0.2", ESA_DEFAULT_PORT);
	ASSERT_NLERR(-EOPNOTSUPP,
		     "only the maximum priority can change: delete and add the job",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_SET, m.buf, m.len));
}

/* The priority changes, and says so; nothing else may change. */
TEST_F_TIMEOUT(nl, set_prio, K_TIMEOUT)
{
	struct esa_job j = t_job(2, T_PS_A, 3, 0), got;
	const struct k_event *ev;
	struct k_events e = {};
	struct esa_nl *mon;
	struct k_attrs m;
	__u8 prio = 4;

	ASSERT_EQ(0, esa_nl_open(&mon));
	ASSERT_EQ(0, esa_nl_join_events(mon));
	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	ASSERT_EQ(0, esa_nl_job_set_prio(self->nl, ID, 200));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &got, NULL));
	EXPECT_EQ(200, got.max_prio);
	ASSERT_EQ(1, k_wait_event(mon, &e, ESA_CMD_JOB_CHANGED, ID, 2000));
	ev = k_find_event(&e, ESA_CMD_JOB_CHANGED, ID);
	EXPECT_EQ(200, ev->max_prio);
	EXPECT_EQ(2, ev->nworkers);
	EXPECT_EQ(esa_job_gen(&got), ev->gen);
	EXPECT_EQ(ESA_CMD_JOB_ADDED, e.ev[0].cmd);

	m.len = 0;
	k_u32(&m, ESA_JOB_A_ID, ID);
	k_put(&m, ESA_JOB_A_MAX_PRIO, &prio, 1);
	k_u32(&m, ESA_JOB_A_LEASE_MS, 1000);
	ASSERT_NLERR(-EOPNOTSUPP,
		     "only the maximum priority can change: delete and add the job",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_SET, m.buf, m.len));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &got, NULL));
	EXPECT_EQ(200, got.max_prio);
	EXPECT_EQ(0, got.lease_ms);
	/* A refused set tells nobody anything. */
	EXPECT_EQ(0, k_wait_event(mon, &e, ESA_CMD_JOB_CHANGED, NOID, 300));
	EXPECT_EQ(1, k_count_events(&e, ESA_CMD_JOB_CHANGED, ID));
	esa_nl_close(mon);
}

TEST_F_TIMEOUT(nl, counters, K_TIMEOUT)
{
	struct esa_nl_counters t0, t1, c0, c1;
	struct esa_job j = t_job(2, T_PS_A, 0, 0);

	ASSERT_EQ(0, esa_nl_counters(self->nl, ID, &t0, &c0));
	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	ASSERT_EQ(0, esa_nl_job_del(self->nl, ID));
	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID2, &j));
	ASSERT_EQ(0, esa_nl_counters(self->nl, ID, &t1, &c1));
	EXPECT_EQ(c0.adds + 2, c1.adds);
	EXPECT_EQ(c0.deletes + 1, c1.deletes);
	EXPECT_EQ(t0.adds + 3, t1.adds);
	EXPECT_EQ(t0.deletes + 1, t1.deletes);
	/* A job that never sent a packet has no slots to give back. */
	EXPECT_EQ(c0.reclaims, c1.reclaims);
	EXPECT_EQ(c0.expiries, c1.expiries);
	EXPECT_EQ(0, t1.foreign);
}

/* Every event of a job, in the order things happened to it. */
TEST_F_TIMEOUT(nl, events, K_TIMEOUT)
{
	struct esa_job j = t_job(3, T_PS_A, 0, 0), got;
	struct esa_nl_job_info info;
	struct k_events e = {};
	struct esa_nl *mon;

	ASSERT_EQ(0, esa_nl_open(&mon));
	ASSERT_EQ(0, esa_nl_join_events(mon));
	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &got, &info));
	ASSERT_EQ(0, esa_nl_job_set_prio(self->nl, ID, 1));
	ASSERT_EQ(0, esa_nl_job_del(self->nl, ID));
	ASSERT_EQ(1, k_wait_event(mon, &e, ESA_CMD_JOB_DELETED, ID, 2000));
	ASSERT_EQ(3, e.n);
	EXPECT_EQ(ESA_CMD_JOB_ADDED, e.ev[0].cmd);
	EXPECT_EQ(esa_job_gen(&got), e.ev[0].gen);
	EXPECT_EQ(info.reg, e.ev[0].reg);
	EXPECT_EQ(3, e.ev[0].nworkers);
	EXPECT_EQ(ESA_CMD_JOB_CHANGED, e.ev[1].cmd);
	EXPECT_EQ(1, e.ev[1].max_prio);
	EXPECT_EQ(ESA_CMD_JOB_DELETED, e.ev[2].cmd);
	EXPECT_EQ(esa_job_gen(&got), e.ev[2].gen);
	/* Never used: nothing reclaimed. */
	EXPECT_EQ(0, k_wait_event(mon, &e, ESA_CMD_JOB_RECLAIMED, ID, 300));
	EXPECT_EQ(3, e.n);
	esa_nl_close(mon);
}

/* A silent job expires on time, once, and stays registered. */
TEST_F_TIMEOUT(nl, lease_expiry, K_TIMEOUT)
{
	struct esa_job j = t_job(2, T_PS_A, 0, 0), got;
	struct esa_nl_counters t0, c0, t1, c1;
	struct esa_nl_job_info info;
	struct k_events e = {};
	const struct k_event *ev;
	struct esa_nl *mon;
	double t;

	j.lease_ms = ESA_LEASE_MS_MIN;
	ASSERT_EQ(0, esa_nl_open(&mon));
	ASSERT_EQ(0, esa_nl_join_events(mon));
	ASSERT_EQ(0, esa_nl_counters(self->nl, ID, &t0, &c0));
	/* From before the add, which stamps the job: the add and the get
	 * took 45 ms on a loaded KCSAN guest, and the lease runs meanwhile.
	 */
	t = k_now();
	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &got, &info));
	EXPECT_EQ(0, info.expired);
	ASSERT_EQ(1, k_wait_event(mon, &e, ESA_CMD_JOB_EXPIRED, ID, 3000));
	t = k_now() - t;
	TH_LOG("expired %.0f ms after the add began (lease 100 ms)", t * 1000);
	EXPECT_LT(0.08, t);
	/* Added, then expired: the order they happened in. */
	ASSERT_EQ(2, e.n);
	EXPECT_EQ(ESA_CMD_JOB_ADDED, e.ev[0].cmd);
	ev = &e.ev[1];
	EXPECT_EQ(esa_job_gen(&got) + 1, ev->gen);

	/* Expired once, however long it stays silent. */
	EXPECT_EQ(0, k_wait_event(mon, &e, ESA_CMD_JOB_EXPIRED, ID, 400));
	EXPECT_EQ(1, k_count_events(&e, ESA_CMD_JOB_EXPIRED, ID));
	EXPECT_EQ(0, k_count_events(&e, ESA_CMD_JOB_RECLAIMED, ID));

	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &got, &info));
	EXPECT_EQ(1, info.expired);
	EXPECT_EQ(ev->gen, esa_job_gen(&got));
	EXPECT_LE(400, info.idle_ms);
	ASSERT_EQ(0, esa_nl_counters(self->nl, ID, &t1, &c1));
	EXPECT_EQ(c0.expiries + 1, c1.expiries);
	EXPECT_EQ(t0.expiries + 1, t1.expiries);
	EXPECT_EQ(c0.reclaims, c1.reclaims);
	esa_nl_close(mon);
}

/*
 * What a container's root may do: everything in a network namespace its
 * user namespace owns, nothing in one it does not (the test's own, owned
 * by the initial user namespace).  Bit n of the exit status: check n
 * failed.
 */
static int ct_root(void *arg)
{
	struct esa_job j = t_job(2, T_PS_A, 0, 0), got;
	struct esa_nl_counters t, c;
	struct esa_nl *host, *own;
	int bad = 0;

	/* A socket of the namespace it was born in: refused. */
	if (esa_nl_open(&host))
		return 100;
	bad |= (esa_nl_job_add(host, ID2, &j) != -EPERM) << 0;
	bad |= (esa_nl_job_del(host, ID) != -EPERM) << 1;
	bad |= (esa_nl_job_get(host, ID, &got, NULL) != -EPERM) << 2;
	bad |= (esa_nl_job_dump(host, find_cb, &got) != -EPERM) << 3;
	bad |= (esa_nl_job_set_prio(host, ID, 1) != -EPERM) << 4;
	bad |= (esa_nl_counters(host, -1, &t, &c) != -EPERM) << 5;
	bad |= (esa_nl_join_events(host) != -EPERM) << 6;
	esa_nl_close(host);

	/* Its own network namespace: allowed. */
	if (unshare(CLONE_NEWNET) || esa_nl_open(&own))
		return 101;
	bad |= (esa_nl_join_events(own) != 0) << 7;
	bad |= (esa_nl_job_add(own, ID, &j) != 0) << 8;
	bad |= (esa_nl_job_get(own, ID, &got, NULL) != 0) << 9;
	bad |= (esa_nl_job_set_prio(own, ID, 1) != 0) << 10;
	bad |= (esa_nl_counters(own, ID, &t, &c) || c.adds != 1) << 11;
	bad |= (esa_nl_job_del(own, ID) != 0) << 12;
	esa_nl_close(own);
	return bad;
}

TEST_F_TIMEOUT(nl, container_root, K_TIMEOUT)
{
	struct esa_job j = t_job(2, T_PS_A, 0, 0);
	pid_t pid;

	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	pid = k_container(NULL, ct_root, NULL);
	ASSERT_LT(0, pid);
	EXPECT_EQ(0, k_wait(pid));
	/* Still there: the container's delete did nothing here. */
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &j, NULL));
	ASSERT_EQ(0, esa_nl_job_del(self->nl, ID));
}

/* Everything needs CAP_NET_ADMIN, joining the events group too. */
TEST_F_TIMEOUT(nl, no_net_admin, K_TIMEOUT)
{
	struct esa_job j = t_job(2, T_PS_A, 0, 0);
	pid_t pid;

	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct esa_nl_counters t, c;
		struct esa_nl *nl;
		struct esa_job got;
		int bad = 0;

		if (k_drop_cap(CAP_NET_ADMIN) || esa_nl_open(&nl))
			_exit(100);
		bad |= (esa_nl_job_add(nl, ID2, &j) != -EPERM) << 0;
		bad |= (esa_nl_job_del(nl, ID) != -EPERM) << 1;
		bad |= (esa_nl_job_get(nl, ID, &got, NULL) != -EPERM) << 2;
		bad |= (esa_nl_job_dump(nl, find_cb, &got) != -EPERM) << 3;
		bad |= (esa_nl_job_set_prio(nl, ID, 1) != -EPERM) << 4;
		bad |= (esa_nl_counters(nl, -1, &t, &c) != -EPERM) << 5;
		bad |= (esa_nl_join_events(nl) != -EPERM) << 6;
		_exit(bad);
	}
	EXPECT_EQ(0, k_wait(pid));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &j, NULL));
}

#define CG	"esa-nl-test"

/* The container's end of two pipes: results out, the parent's go in. */
struct ct_pipes {
	int	out, in;
};

/*
 * What the container measured, in memory shared with the parent: once its
 * memory cgroup is at its limit, writing to a pipe (which allocates a
 * charged page) could have the container killed before it tells.
 */
struct ct_mem_result {
	long long before, registry, jobs100;
	int	added_under_limit, err, extack_ok;
	volatile int phase;	/* 1: measured, 2: the parent set the limit,
				 * 3: at the limit, 4: the parent lifted it
				 */
};

#define CT_NETNS	8

/* Fault in stack below the caller's frame, where its callees will run. */
static void __attribute__((noinline)) ct_stack_in(void)
{
	volatile char b[256 * 1024];

	for (size_t i = 0; i < sizeof(b); i += 1024)
		b[i] = 1;
}

static void ct_wait_phase(struct ct_mem_result *r, int phase)
{
	while (r->phase < phase)
		usleep(10000);
}

/*
 * In the container's own namespaces: what the registry and 100 jobs of 64
 * workers cost its memory cgroup; then, once the parent has set a limit
 * 64 KiB above what it is charged, how many more jobs fit in 8 namespaces
 * (made beforehand, so that only jobs and registries meet the limit, and
 * with the stack touched, so that no page fault of its own does).
 */
static int ct_mem(void *arg)
{
	struct esa_job j = t_job(ESA_MAX_WORKERS, T_PS_A, 0, 0), got;
	struct esa_nl *nl[CT_NETNS];
	struct ct_mem_result *r = arg;
	struct esa_nl_counters t, c;
	int id, k, err = 0;

	for (k = 0; k < CT_NETNS; k++) {
		if (unshare(CLONE_NEWNET) || esa_nl_open(&nl[k]))
			return 100;
		/* Fault in what the calls below use before measuring. */
		esa_nl_counters(nl[k], 1, &t, &c);
		esa_nl_job_dump(nl[k], find_cb, &got);
	}
	r->before = k_cg_slab(CG);
	if (esa_nl_job_add(nl[0], 0, &j))
		return 101;
	r->registry = k_cg_slab(CG);
	for (id = 1; id < 100; id++)
		if (esa_nl_job_add(nl[0], id, &j))
			return 102;
	r->jobs100 = k_cg_slab(CG);
	ct_stack_in();
	r->phase = 1;
	ct_wait_phase(r, 2);
	for (k = 0, id = 100; k < CT_NETNS && !err; k++, id = 0) {
		for (; id < 256; id++) {
			err = esa_nl_job_add(nl[k], id, &j);
			if (err)
				break;
			r->added_under_limit++;
		}
	}
	r->err = err;
	r->extack_ok = esa_nl_error(nl[k - 1]) &&
		       !strcmp(esa_nl_error(nl[k - 1]),
			       "out of memory for the job (the memory cgroup of the caller is charged)");
	r->phase = 3;
	ct_wait_phase(r, 4);
	for (k = 0; k < CT_NETNS; k++)
		esa_nl_close(nl[k]);
	return 0;
}

/* Wait until cg's slab charge is below limit; the last value read. */
static long long cg_drains_below(const char *cg, long long limit)
{
	long long v = 0;

	for (int i = 0; i < 15; i++) {
		v = k_cg_slab(cg);
		if (v < limit)
			break;
	}
	return v;
}

/*
 * The registry and every job are charged to the memory cgroup of the
 * container that adds them, and its limit stops it with ENOMEM (not an OOM
 * kill).  When the container's namespaces go, so does the charge.
 */
TEST_F_TIMEOUT(nl, container_memory, K_TIMEOUT)
{
	struct ct_mem_result *r;
	long long after;
	char lim[32];
	pid_t pid;

	if (k_cg_make(CG))
		SKIP(return, "no cgroup v2 memory controller");
	r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, r);
	memset(r, 0, sizeof(*r));
	pid = k_container(CG, ct_mem, r);
	ASSERT_LT(0, pid);
	for (int i = 0; i < 12000 && r->phase < 1 && !waitpid(pid, NULL, WNOHANG); i++)
		usleep(10000);
	ASSERT_EQ(1, r->phase);
	snprintf(lim, sizeof(lim), "%lld",
		 k_cg_read(CG, "memory.current", NULL) + 64 * 1024);
	ASSERT_EQ(0, k_cg_write(CG, "memory.max", lim));
	r->phase = 2;
	for (int i = 0; i < 12000 && r->phase < 3; i++)
		usleep(10000);
	ASSERT_EQ(3, r->phase);
	ASSERT_EQ(0, k_cg_write(CG, "memory.max", "max"));
	r->phase = 4;
	EXPECT_EQ(0, k_wait(pid));
	TH_LOG("slab charged: registry and a job %lld B, 99 more jobs of 64 workers %lld B; %d more jobs under a limit 64 KiB higher, then %d",
	       r->registry - r->before, r->jobs100 - r->registry,
	       r->added_under_limit, r->err);
	/* 256 ids of generation and counters, and a job, at least. */
	EXPECT_LE(256 * 36 + 512, r->registry - r->before);
	/* At least 512 B a job (64 addresses alone). */
	EXPECT_LE(99 * 512, r->jobs100 - r->registry);
	EXPECT_EQ(-ENOMEM, r->err);
	EXPECT_EQ(1, r->extack_ok);
	EXPECT_LT(0, r->added_under_limit);
	EXPECT_GT(CT_NETNS * 256 - 100, r->added_under_limit);
	EXPECT_EQ(0, k_cg_read(CG, "memory.events", "oom_kill"));
	EXPECT_LT(0, k_cg_read(CG, "memory.events", "max"));

	/* The container is gone, with its namespaces: the charge goes too
	 * (namespaces are dismantled, and jobs freed, asynchronously).
	 */
	/* Eight namespaces leave some slab of their own for a while: less
	 * than half of what 100 jobs cost, or the jobs were not freed.
	 */
	after = cg_drains_below(CG, (r->jobs100 - r->before) / 2);
	TH_LOG("slab left charged after the container: %lld B", after);
	EXPECT_GT((r->jobs100 - r->before) / 2, after);
	munmap(r, sizeof(*r));
	k_cg_remove(CG);
}

/* Each network namespace has its own registry (this test's and a child's). */
TEST_F_TIMEOUT(nl, per_namespace, K_TIMEOUT)
{
	struct esa_job j = t_job(2, T_PS_A, 0, 0);
	pid_t pid;

	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct esa_nl_counters t, c;
		struct esa_job k = t_job(4, T_PS_A, 0, 0);
		struct esa_job got;
		struct esa_nl *nl;
		int bad = 0;

		if (unshare(CLONE_NEWNET) || esa_nl_open(&nl))
			_exit(100);
		bad |= (esa_nl_job_get(nl, ID, &got, NULL) != -ENOENT) << 0;
		bad |= (esa_nl_job_add(nl, ID, &k) != 0) << 1;
		bad |= (esa_nl_job_get(nl, ID, &got, NULL) || got.nworkers != 4) << 2;
		bad |= (esa_nl_counters(nl, -1, &t, &c) || t.adds != 1) << 3;
		_exit(bad);
	}
	EXPECT_EQ(0, k_wait(pid));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &j, NULL));
	EXPECT_EQ(2, j.nworkers);
}

/*
 * A namespace torn down with jobs (leases running out) and a listener
 * joined: its jobs and registry are freed, charge and all, and nothing of
 * it is left to run (the kernel log check after the tests sees the rest).
 */
static int teardown_child(void *arg)
{
	struct esa_job j = t_job(ESA_MAX_WORKERS, T_PS_A, 0, 0);
	struct ct_pipes *p = arg;
	struct esa_nl *nl, *mon;
	long long v[2];

	if (unshare(CLONE_NEWNET) || esa_nl_open(&nl) || esa_nl_open(&mon) ||
	    esa_nl_join_events(mon))
		return 100;
	v[0] = k_cg_slab(CG);
	for (int id = 0; id < 200; id++) {
		j.lease_ms = ESA_LEASE_MS_MIN + id % 3 * 50;
		if (esa_nl_job_add(nl, id, &j))
			return 101;
	}
	v[1] = k_cg_slab(CG);
	if (write(p->out, v, sizeof(v)) != sizeof(v))
		return 102;
	usleep(150000);		/* some leases run out: events queue up */
	return 0;		/* exit: sockets closed, namespace freed */
}

TEST_F_TIMEOUT(nl, namespace_teardown, K_TIMEOUT)
{
	long long v[2], after;
	struct ct_pipes p;
	int up[2];
	pid_t pid;

	if (k_cg_make(CG))
		SKIP(return, "no cgroup v2 memory controller");
	ASSERT_EQ(0, pipe(up));
	p.out = up[1];
	pid = k_container(CG, teardown_child, &p);
	ASSERT_LT(0, pid);
	close(up[1]);
	ASSERT_EQ(sizeof(v), read(up[0], v, sizeof(v)));
	EXPECT_EQ(0, k_wait(pid));
	/* 200 jobs' addresses at least, and the registry. */
	EXPECT_LE(200 * 512, v[1] - v[0]);
	after = cg_drains_below(CG, 16 * 1024);
	TH_LOG("slab charged %lld B for the jobs; %lld B left after the namespace went",
	       v[1] - v[0], after);
	EXPECT_GT(16 * 1024, after);
	k_cg_remove(CG);
}

TEST_HARNESS_MAIN
