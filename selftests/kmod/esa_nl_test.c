// SPDX-License-Identifier: GPL-2.0
/*
 * esa.ko's generic netlink API: every command, its events and counters, and
 * each kind of bad input with the exact error (and extack) expected.
 * Needs root and esa.ko with the default max_jobs (256); skips without it.
 * Each test runs in a network namespace of its own, so its registry is
 * empty at the start and the host's jobs are never touched.
 */
#include <sched.h>
#include <stdlib.h>
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

/* The call failed with err and the kernel said msg. */
#define ASSERT_NLERR(err, msg, call) do {				\
		int __rc = (call);					\
		const char *__m = esa_nl_error(self->nl);		\
		EXPECT_EQ(err, __rc);					\
		ASSERT_NE(NULL, __m);					\
		EXPECT_STREQ(msg, __m);					\
	} while (0)

/* The call failed with err and the kernel explained it (policy text). */
#define ASSERT_NLERR_ANY(err, call) do {				\
		int __rc = (call);					\
		EXPECT_EQ(err, __rc);					\
		EXPECT_NE(NULL, esa_nl_error(self->nl));		\
		TH_LOG("kernel: %s", esa_nl_error(self->nl));		\
	} while (0)

static int find_cb(__u32 id, const struct esa_job *j,
		   const struct esa_nl_job_info *info, void *arg)
{
	struct esa_job *out = arg;

	if (id == ID)
		*out = *j;
	return 0;
}

TEST_F(nl, add_get_dump_del)
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
	EXPECT_GT(1000, info.idle_ms);
	EXPECT_EQ(0, info.expired);

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

/* 40 jobs of 64 workers take several dump messages: none is lost. */
TEST_F(nl, dump_spans_messages)
{
	struct esa_job j = t_job(ESA_MAX_WORKERS, T_PS_A, 0, 0);
	__u32 ids[64] = {};

	for (int id = 0; id < 40; id++)
		ASSERT_EQ(0, esa_nl_job_add(self->nl, id, &j));
	ASSERT_EQ(0, esa_nl_job_dump(self->nl, count_cb, ids));
	ASSERT_EQ(40, ids[0]);
	for (int i = 0; i < 40; i++)
		EXPECT_EQ(i, ids[i + 1]);
}

TEST_F(nl, add_existing_id)
{
	struct esa_job j = t_job(2, T_PS_A, 0, 0);

	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	ASSERT_NLERR(-EEXIST, "job id in use", esa_nl_job_add(self->nl, ID, &j));
}

/* Delete bumps the generation, and so does the next add of the id. */
TEST_F(nl, id_reuse_new_generation)
{
	struct esa_job j = t_job(2, T_PS_A, 0, 0), got;
	__u32 gen;

	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &got, NULL));
	gen = got.gen;
	ASSERT_EQ(0, esa_nl_job_del(self->nl, ID));
	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &got, NULL));
	EXPECT_EQ(gen + 2, got.gen);
}

TEST_F(nl, unknown_job)
{
	struct esa_nl_counters t, c;
	struct esa_job got;

	ASSERT_NLERR(-ENOENT, "no such job", esa_nl_job_del(self->nl, NOID));
	ASSERT_NLERR(-ENOENT, "no such job",
		     esa_nl_job_get(self->nl, NOID, &got, NULL));
	ASSERT_NLERR(-ENOENT, "no such job",
		     esa_nl_job_set_prio(self->nl, NOID, 1));
	/* Counters of an id exist whether or not it is registered. */
	ASSERT_EQ(0, esa_nl_counters(self->nl, NOID, &t, &c));
}

TEST_F(nl, id_out_of_range)
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

TEST_F(nl, missing_attributes)
{
	struct k_attrs m;
	size_t w;

	/* ADD without an id, without workers, without a PS. */
	m.len = 0;
	w = k_nest(&m, ESA_JOB_A_WORKERS);
	k_addr(&m, 0, "10.0.0.11", 0);
	k_end(&m, w);
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
	w = k_nest(&m, ESA_JOB_A_WORKERS);
	k_addr(&m, 0, "10.0.0.11", 0);
	k_end(&m, w);
	ASSERT_NLERR(-EINVAL, "missing attribute ESA_JOB_A_PS",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));

	/* A worker without an address; a PS without a port. */
	m.len = 0;
	k_u32(&m, ESA_JOB_A_ID, ID);
	w = k_nest(&m, ESA_JOB_A_WORKERS);
	k_addr(&m, 0, NULL, 5000);
	k_end(&m, w);
	k_addr(&m, ESA_JOB_A_PS, T_PS_A, T_PS_PORT);
	ASSERT_NLERR(-EINVAL, "missing attribute ESA_ADDR_A_IPV4",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));

	m.len = 0;
	k_u32(&m, ESA_JOB_A_ID, ID);
	w = k_nest(&m, ESA_JOB_A_WORKERS);
	k_addr(&m, 0, "10.0.0.11", 0);
	k_end(&m, w);
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

TEST_F(nl, malformed_attributes)
{
	struct k_attrs m;
	__u16 id16 = ID;
	size_t w;

	/* Wrong length, caught by the policy. */
	m.len = 0;
	k_put(&m, ESA_JOB_A_ID, &id16, 2);
	ASSERT_NLERR_ANY(-EINVAL,
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
	ASSERT_NLERR_ANY(-EINVAL,
			 esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));
	k_add_attrs(&m, ID, 1);
	k_u32(&m, ESA_JOB_A_GEN, 1);
	ASSERT_NLERR_ANY(-EINVAL,
			 esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));

	/* Trailing bytes that are no attribute. */
	k_add_attrs(&m, ID, 1);
	memset(m.buf + m.len, 0, 4);
	m.len += 4;
	ASSERT_NLERR_ANY(-EINVAL,
			 esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));

	/* Workers out of rank order. */
	m.len = 0;
	k_u32(&m, ESA_JOB_A_ID, ID);
	w = k_nest(&m, ESA_JOB_A_WORKERS);
	k_addr(&m, 1, "10.0.0.11", 0);
	k_addr(&m, 0, "10.0.0.12", 0);
	k_end(&m, w);
	k_addr(&m, ESA_JOB_A_PS, T_PS_A, T_PS_PORT);
	ASSERT_NLERR(-EINVAL,
		     "worker entries must be in rank order, each of type rank",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));

	/* Bad addresses. */
	{
		struct esa_job j = t_job(2, T_PS_A, 0, 0);

		j.rank[1].ip = 0;
		ASSERT_NLERR(-EINVAL, "address 0.0.0.0 is not allowed",
			     esa_nl_job_add(self->nl, ID, &j));
		j = t_job(2, T_PS_A, 0, 0);
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

TEST_F(nl, out_of_range_values)
{
	struct esa_job j = t_job(2, T_PS_A, 0, 0);
	struct k_attrs m;
	size_t w;

	j.lease_ms = ESA_LEASE_MS_MAX + 1;
	ASSERT_NLERR_ANY(-ERANGE, esa_nl_job_add(self->nl, ID, &j));

	j = t_job(2, T_PS_A, 0, 0);
	j.region_base = 0xffffff00;
	j.region_size = 0x200;
	ASSERT_NLERR(-ERANGE, "region ends past slot 2^32",
		     esa_nl_job_add(self->nl, ID, &j));
	j.region_size = 0x100;	/* up to slot 2^32 - 1: fine */
	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));

	/* 65 workers; none. */
	k_add_attrs(&m, ID2, ESA_MAX_WORKERS + 1);
	ASSERT_NLERR(-ERANGE, "more than 64 workers",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));
	m.len = 0;
	k_u32(&m, ESA_JOB_A_ID, ID2);
	w = k_nest(&m, ESA_JOB_A_WORKERS);
	k_end(&m, w);
	k_addr(&m, ESA_JOB_A_PS, T_PS_A, T_PS_PORT);
	ASSERT_NLERR(-ERANGE, "a job needs a worker",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));
	k_add_attrs(&m, ID2, ESA_MAX_WORKERS);
	ASSERT_EQ(0, esa_nl_raw(self->nl, ESA_CMD_JOB_ADD, m.buf, m.len));
}

TEST_F(nl, set_prio)
{
	struct esa_job j = t_job(2, T_PS_A, 3, 0), got;
	struct k_attrs m;
	__u8 prio = 4;

	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	ASSERT_EQ(0, esa_nl_job_set_prio(self->nl, ID, 200));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &got, NULL));
	EXPECT_EQ(200, got.max_prio);

	m.len = 0;
	k_u32(&m, ESA_JOB_A_ID, ID);
	k_put(&m, ESA_JOB_A_MAX_PRIO, &prio, 1);
	k_u32(&m, ESA_JOB_A_LEASE_MS, 10);
	ASSERT_NLERR(-EOPNOTSUPP,
		     "only the maximum priority can change: delete and add the job",
		     esa_nl_raw(self->nl, ESA_CMD_JOB_SET, m.buf, m.len));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &got, NULL));
	EXPECT_EQ(200, got.max_prio);
	EXPECT_EQ(0, got.lease_ms);
}

TEST_F(nl, counters)
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
}

TEST_F(nl, events)
{
	struct esa_job j = t_job(3, T_PS_A, 0, 0), got;
	const struct k_event *ev;
	struct k_events e = {};
	struct esa_nl *mon;

	ASSERT_EQ(0, esa_nl_open(&mon));
	ASSERT_EQ(0, esa_nl_join_events(mon));
	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &got, NULL));
	ASSERT_EQ(0, esa_nl_job_del(self->nl, ID));
	ASSERT_EQ(1, k_wait_event(mon, &e, ESA_CMD_JOB_DELETED, ID, 2000));
	ev = k_find_event(&e, ESA_CMD_JOB_ADDED, ID);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(got.gen, ev->gen);
	EXPECT_EQ(3, ev->nworkers);
	ev = k_find_event(&e, ESA_CMD_JOB_DELETED, ID);
	EXPECT_EQ(got.gen, ev->gen);
	/* Never used: nothing reclaimed. */
	EXPECT_EQ(0, k_count_events(&e, ESA_CMD_JOB_RECLAIMED, ID));
	esa_nl_close(mon);
}

/* A silent job expires on time, once, and stays registered. */
TEST_F(nl, lease_expiry)
{
	struct esa_job j = t_job(2, T_PS_A, 0, 0), got;
	struct esa_nl_counters t0, c0, t1, c1;
	struct esa_nl_job_info info;
	struct k_events e = {};
	const struct k_event *ev;
	struct esa_nl *mon;
	double t;

	j.lease_ms = 100;
	ASSERT_EQ(0, esa_nl_open(&mon));
	ASSERT_EQ(0, esa_nl_join_events(mon));
	ASSERT_EQ(0, esa_nl_counters(self->nl, ID, &t0, &c0));
	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &got, &info));
	EXPECT_EQ(0, info.expired);
	t = k_now();
	ASSERT_EQ(1, k_wait_event(mon, &e, ESA_CMD_JOB_EXPIRED, ID, 3000));
	t = k_now() - t;
	TH_LOG("expired after %.0f ms (lease 100 ms)", t * 1000);
	EXPECT_LT(0.08, t);
	ev = k_find_event(&e, ESA_CMD_JOB_EXPIRED, ID);
	EXPECT_EQ(got.gen + 1, ev->gen);

	/* Expired once, however long it stays silent. */
	EXPECT_EQ(0, k_wait_event(mon, &e, ESA_CMD_JOB_EXPIRED, ID, 400));
	EXPECT_EQ(1, k_count_events(&e, ESA_CMD_JOB_EXPIRED, ID));
	EXPECT_EQ(0, k_count_events(&e, ESA_CMD_JOB_RECLAIMED, ID));

	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &got, &info));
	EXPECT_EQ(1, info.expired);
	EXPECT_EQ(ev->gen, got.gen);
	EXPECT_LE(400, info.idle_ms);
	ASSERT_EQ(0, esa_nl_counters(self->nl, ID, &t1, &c1));
	EXPECT_EQ(c0.expiries + 1, c1.expiries);
	EXPECT_EQ(t0.expiries + 1, t1.expiries);
	EXPECT_EQ(c0.reclaims, c1.reclaims);
	esa_nl_close(mon);
}

/* Everything needs CAP_NET_ADMIN, joining the events group too. */
TEST_F(nl, unprivileged)
{
	struct esa_job j = t_job(2, T_PS_A, 0, 0);
	pid_t pid;
	int status;

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
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* Still there: the unprivileged delete did nothing. */
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &j, NULL));
}

/* Each network namespace has its own registry (this test's and a child's). */
TEST_F(nl, per_namespace)
{
	struct esa_job j = t_job(2, T_PS_A, 0, 0);
	pid_t pid;
	int status;

	ASSERT_EQ(0, esa_nl_job_add(self->nl, ID, &j));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct esa_nl_counters t, c;
		struct esa_job k = t_job(4, T_PS_A, 0, 0);
		struct esa_job got;
		struct esa_nl *nl;
		int bad = 0;

		k.lease_ms = 50;
		if (unshare(CLONE_NEWNET) || esa_nl_open(&nl))
			_exit(100);
		bad |= (esa_nl_job_get(nl, ID, &got, NULL) != -ENOENT) << 0;
		bad |= (esa_nl_job_add(nl, ID, &k) != 0) << 1;
		bad |= (esa_nl_job_get(nl, ID, &got, NULL) || got.nworkers != 4) << 2;
		bad |= (esa_nl_counters(nl, -1, &t, &c) || t.adds != 1) << 3;
		/* The namespace goes with its jobs (and their leases). */
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, ID, &j, NULL));
	EXPECT_EQ(2, j.nworkers);
}

TEST_HARNESS_MAIN
