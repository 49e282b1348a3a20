// SPDX-License-Identifier: GPL-2.0
/*
 * The XDP data plane in kfunc mode (build/esa_kfunc.bpf.o, or
 * $ESA_KFUNC_OBJECT) over esa.ko's registry: golden packets through
 * BPF_PROG_TEST_RUN, with jobs registered, changed, deleted and expired
 * through netlink.  Each test has a namespace of its own (testlib.h's
 * topology), hence a registry of its own.  Needs root and esa.ko.
 */
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kmod_test.h"

#define JOB	3

FIXTURE(kf) {
	struct t_net n;
	struct esa e;
	struct esa_nl *nl;
	int nvals;
};

FIXTURE_SETUP(kf)
{
	char err[ESA_ERR_LEN] = "";
	struct esa_opts o;

	self->e.obj = NULL;
	if (!k_module_loaded())
		SETUP_SKIP("esa.ko is not loaded");
	ASSERT_EQ(0, esa_netns_setup(&self->n));
	ASSERT_EQ(0, esa_nl_open(&self->nl));
	esa_opts_default(&o);
	o.kfunc = 1;
	if (esa_load(&self->e, &o, err, sizeof(err)))
		TH_LOG("%s", err);
	ASSERT_NE(NULL, self->e.obj);
	ASSERT_EQ(1, self->e.cfg.kfunc);
	ASSERT_EQ(0, t_port_register(&self->e, self->n.sw0));
	ASSERT_EQ(0, t_port_register(&self->e, self->n.sw1));
	self->nvals = self->e.cfg.nvals;
}

FIXTURE_TEARDOWN(kf)
{
	if (self->e.obj)
		esa_close(&self->e);
	esa_nl_close(self->nl);
}

static void vals(__s32 *v, int n, int k)
{
	for (int i = 0; i < n; i++)
		v[i] = k * 1000 + i - 100;
}

/* Run the data packet of (job, rank, seq) with values k; its verdict. */
static int data(struct __test_metadata *_metadata, FIXTURE_DATA(kf) *self,
		__u16 job, __u16 rank, __u32 seq, __u8 prio, int k,
		struct t_run *r)
{
	__s32 v[ESA_MAX_VALUES];
	struct t_pkt p;

	vals(v, self->nvals, k);
	p = t_data(&self->n, job, rank, seq, prio, v, self->nvals);
	if (rank == 1)
		p.sport = 6000;	/* rank 1 registers port 0: any */
	EXPECT_EQ(0, t_send(&self->e, &p, self->n.sw0, r));
	return r->verdict;
}

#define DATA(rank, seq, prio, k) data(_metadata, self, JOB, rank, seq, prio, k, &r)

static __u32 add_job(struct __test_metadata *_metadata, FIXTURE_DATA(kf) *self,
		     __u8 max_prio, __u32 lease_ms)
{
	struct esa_job j = t_job(2, T_PS_A, max_prio, JOB), got;

	j.rank[1].port = 0;
	j.lease_ms = lease_ms;
	EXPECT_EQ(0, esa_nl_job_add(self->nl, JOB, &j));
	EXPECT_EQ(0, esa_nl_job_get(self->nl, JOB, &got, NULL));
	return got.gen;
}

/* The sum left as a RESULT for both ranks, stamped with generation gen. */
static void check_result(struct __test_metadata *_metadata,
			 FIXTURE_DATA(kf) *self, const struct t_run *r,
			 __u32 gen, int k0, int k1)
{
	__s32 a[ESA_MAX_VALUES], b[ESA_MAX_VALUES], got[ESA_MAX_VALUES];
	struct t_pkt p;

	ASSERT_EQ(XDP_REDIRECT, r->verdict);
	ASSERT_EQ(0, t_parse(r->pkt, r->len, &p, got, ESA_MAX_VALUES));
	EXPECT_EQ(ESA_T_RESULT, p.type);
	EXPECT_EQ(3, p.bitmap);
	EXPECT_EQ(ESA_RANK_NONE, p.rank);
	EXPECT_EQ(sizeof(struct esa_meta), r->metalen);
	EXPECT_EQ(gen, r->meta.gen);
	vals(a, self->nvals, k0);
	vals(b, self->nvals, k1);
	for (int i = 0; i < self->nvals; i++)
		if (got[i] != a[i] + b[i]) {
			EXPECT_EQ(a[i] + b[i], got[i]);
			break;
		}
}

TEST_F_TIMEOUT(kf, registered_job_aggregates, 120)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), gen;
	struct t_run r;

	gen = add_job(_metadata, self, 3, 0);
	EXPECT_EQ(XDP_DROP, DATA(0, 1, 2, 1));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_CLAIMED));
	DATA(1, 1, 2, 2);
	check_result(_metadata, self, &r, gen, 1, 2);
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_AGGREGATED));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_COMPLETED));
	EXPECT_EQ(0, t_ctr(&self->e, JOB, ESA_C_DROP_JOB));

	ASSERT_EQ(0, bpf_obj_get_info_by_fd(self->e.prog_fd, &info, &len));
	TH_LOG("esa_xdp (kfunc variant): %u instructions verified, %u in the program",
		       info.verified_insns, info.xlated_prog_len / 8);
	EXPECT_LT(0, info.verified_insns);
}

TEST_F_TIMEOUT(kf, unregistered_job_dropped, 120)
{
	__s32 v[ESA_MAX_VALUES];
	struct t_pkt p;
	struct t_run r;

	vals(v, self->nvals, 1);
	p = t_data(&self->n, 5, 0, 1, 0, v, self->nvals);
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, 5, ESA_C_RX));
	EXPECT_EQ(1, t_ctr(&self->e, 5, ESA_C_DROP_JOB));
	EXPECT_EQ(0, t_ctr(&self->e, 5, ESA_C_CLAIMED));
}

/* Each check of the registration, by the kfunc, with its drop counter. */
TEST_F_TIMEOUT(kf, admission, 120)
{
	__s32 v[ESA_MAX_VALUES];
	struct t_pkt p;
	struct t_run r;

	add_job(_metadata, self, 3, 0);
	vals(v, self->nvals, 1);

	p = t_data(&self->n, JOB, 2, 1, 0, v, self->nvals);	/* 2 ranks */
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_DROP_RANK));

	EXPECT_EQ(XDP_DROP, DATA(0, 1, 4, 1));			/* prio > 3 */
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_DROP_PRIO));

	p = t_data(&self->n, JOB, 0, 1, 0, v, self->nvals);
	p.saddr = t_worker_ip(1);				/* not rank 0 */
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_DROP_SPOOF));
	p = t_data(&self->n, JOB, 0, 1, 0, v, self->nvals);
	p.sport++;						/* not its port */
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	EXPECT_EQ(2, t_ctr(&self->e, JOB, ESA_C_DROP_SPOOF));
	EXPECT_EQ(0, t_ctr(&self->e, JOB, ESA_C_CLAIMED));

	/* A raised maximum applies to the next packet. */
	ASSERT_EQ(0, esa_nl_job_set_prio(self->nl, JOB, 9));
	EXPECT_EQ(XDP_DROP, DATA(0, 1, 4, 1));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_DROP_PRIO));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_CLAIMED));
	/* Rank 1 registered port 0: any source port will do. */
	DATA(1, 1, 4, 2);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_COMPLETED));
}

/* Delete frees the job's slots at once; the id comes back newer. */
TEST_F_TIMEOUT(kf, delete_and_reuse, 120)
{
	struct esa_nl_counters t, c;
	struct k_events e = {};
	const struct k_event *ev;
	struct esa_nl *mon;
	__u32 gen, gen2;
	struct t_run r;

	ASSERT_EQ(0, esa_nl_open(&mon));
	ASSERT_EQ(0, esa_nl_join_events(mon));
	gen = add_job(_metadata, self, 0, 0);
	EXPECT_EQ(XDP_DROP, DATA(0, 1, 0, 1));		/* claims a slot */
	ASSERT_EQ(0, esa_nl_job_del(self->nl, JOB));
	EXPECT_EQ(XDP_DROP, DATA(1, 1, 0, 2));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_DROP_JOB));

	/* The used generation was reclaimed, after the delete. */
	ASSERT_EQ(1, k_wait_event(mon, &e, ESA_CMD_JOB_RECLAIMED, JOB, 2000));
	ev = k_find_event(&e, ESA_CMD_JOB_DELETED, JOB);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(gen, ev->gen);
	EXPECT_EQ(gen, k_find_event(&e, ESA_CMD_JOB_RECLAIMED, JOB)->gen);
	ASSERT_EQ(0, esa_nl_counters(self->nl, JOB, &t, &c));
	EXPECT_EQ(1, c.reclaims);

	gen2 = add_job(_metadata, self, 0, 0);
	EXPECT_EQ(gen + 2, gen2);
	/* The old partial is dead: rank 1 starts a new one in its slot. */
	EXPECT_EQ(XDP_DROP, DATA(1, 1, 0, 2));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_RECLAIMED));
	EXPECT_EQ(2, t_ctr(&self->e, JOB, ESA_C_CLAIMED));
	DATA(0, 1, 0, 3);
	check_result(_metadata, self, &r, gen2, 3, 2);
	esa_nl_close(mon);
}

/*
 * A silent job loses its slots when its lease runs out (the module's work
 * opens a new generation and says so); its next packet goes on in it.
 */
TEST_F_TIMEOUT(kf, lease_expiry, 120)
{
	struct esa_nl_job_info info;
	struct esa_nl_counters t, c;
	struct k_events e = {};
	const struct k_event *ev;
	struct esa_job got;
	struct esa_nl *mon;
	struct t_run r;
	__u32 gen;

	ASSERT_EQ(0, esa_nl_open(&mon));
	ASSERT_EQ(0, esa_nl_join_events(mon));
	gen = add_job(_metadata, self, 0, 300);
	EXPECT_EQ(XDP_DROP, DATA(0, 1, 0, 1));
	ASSERT_EQ(1, k_wait_event(mon, &e, ESA_CMD_JOB_RECLAIMED, JOB, 5000));
	ev = k_find_event(&e, ESA_CMD_JOB_EXPIRED, JOB);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(gen + 1, ev->gen);
	EXPECT_EQ(gen, k_find_event(&e, ESA_CMD_JOB_RECLAIMED, JOB)->gen);
	ASSERT_EQ(0, esa_nl_job_get(self->nl, JOB, &got, &info));
	EXPECT_EQ(1, info.expired);
	EXPECT_EQ(gen + 1, got.gen);
	ASSERT_EQ(0, esa_nl_counters(self->nl, JOB, &t, &c));
	EXPECT_EQ(1, c.expiries);
	EXPECT_EQ(1, c.reclaims);

	/* The next packet: counted as the expiry's end, in the new
	 * generation, and it takes over the dead partial's slot.
	 */
	EXPECT_EQ(XDP_DROP, DATA(1, 1, 0, 2));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_EXPIRED));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_RECLAIMED));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, JOB, &got, &info));
	EXPECT_EQ(0, info.expired);
	EXPECT_EQ(gen + 1, got.gen);
	DATA(0, 1, 0, 3);
	check_result(_metadata, self, &r, gen + 1, 3, 2);
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_EXPIRED));
	esa_nl_close(mon);
}

/* The program reads the registry of the namespace it runs in. */
TEST_F_TIMEOUT(kf, per_namespace, 120)
{
	pid_t pid;
	int status;

	add_job(_metadata, self, 0, 0);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		__s32 v[ESA_MAX_VALUES];
		__u8 buf[2048];
		struct t_pkt p;
		struct t_run r;
		int len;

		vals(v, self->nvals, 1);
		p = t_data(&self->n, JOB, 0, 1, 0, v, self->nvals);
		len = t_build(&p, buf);
		if (unshare(CLONE_NEWNET) ||
		    t_run(self->e.prog_fd, buf, len, 0, NULL, 0, &r))
			_exit(100);
		_exit(r.verdict != XDP_DROP ||
		      t_ctr(&self->e, JOB, ESA_C_DROP_JOB) != 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, t_ctr(&self->e, JOB, ESA_C_CLAIMED));
}

TEST_HARNESS_MAIN
