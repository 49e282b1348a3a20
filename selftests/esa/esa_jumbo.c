// SPDX-License-Identifier: GPL-2.0
/*
 * Jumbo frames through BPF_PROG_TEST_RUN.  The switch loaded with
 * ESA_MAX_VALUES values gets frames the kernel hands to its xdp.frags
 * program as several buffers (test-run puts what exceeds one page's frame
 * in frags), so the values live partly in the linear part, partly in the
 * frags.  Every value of every sum is checked: a completion (fanned out by
 * tc, or sent whole to the PS where the port has no tc fan-out), a
 * preemption (the packet carries the evicted partial out), a truncated
 * frame; and the largest single-buffer vector, whose sum still takes the
 * devmap.  Each case runs in its own network namespace (testlib.h).
 */
#include "testlib.h"
#include "kselftest_harness.h"

#define JA	1	/* job A: 3 workers, PS A */
#define JB	2	/* job B: 3 workers, PS B */
#define W	3

FIXTURE(jumbo) {
	struct t_net n;
	struct esa e;
	char err[ESA_ERR_LEN];
	int nv;
	__s32 v[W][ESA_MAX_VALUES];
	__s32 got[ESA_MAX_VALUES];
	__s64 acc[ESA_MAX_VALUES];
};

/* Each rank's values differ at every index: a value out of place shows. */
FIXTURE_SETUP(jumbo)
{
	ASSERT_EQ(0, esa_netns_setup(&self->n));
	/* Jobs are refused behind ports whose MTU the packets exceed. */
	ASSERT_EQ(0, t_sh("for d in sw0 h0 sw1 h1; do ip link set $d mtu 9000; done"));
	for (int r = 0; r < W; r++)
		for (int i = 0; i < ESA_MAX_VALUES; i++)
			self->v[r][i] = (i * 7919 + r * 104729) % 1000003 -
					500000 + r;
}

FIXTURE_TEARDOWN(jumbo)
{
	esa_close(&self->e);
}

/* A switch of nv values with jobs A and B; tc: sw0 has the tc fan-out. */
static int jload(FIXTURE_DATA(jumbo) *self, int nv, __u32 slots, bool tc)
{
	struct esa_job a = t_job(W, T_PS_A, 7, JA), b = t_job(W, T_PS_B, 7, JB);
	struct esa_port_info pi = { .flags = ESA_PORT_TC };
	__u32 k = self->n.sw0;
	struct esa_opts o;

	esa_opts_default(&o);
	o.nvals = nv;
	o.slots = slots;
	o.max_jobs = 16;
	o.kfunc = 0;
	self->nv = nv;
	if (esa_load(&self->e, &o, self->err, sizeof(self->err))) {
		fprintf(stderr, "load: %s\n", self->err);
		return -1;
	}
	if (t_two_jobs(&self->e, &self->n, JA, &a, JB, &b, self->err,
		       sizeof(self->err)))
		return -1;
	return tc ? bpf_map_update_elem(self->e.portinfo_fd, &k, &pi, BPF_ANY) : 0;
}

static int jsend(FIXTURE_DATA(jumbo) *self, __u16 job, int rank, __u32 seq,
		 __u8 prio, struct t_run *r)
{
	struct t_pkt p = t_data(&self->n, job, rank, seq, prio, self->v[rank],
				self->nv);

	return t_send(&self->e, &p, self->n.sw0, r);
}

/* Index of the first value of r other than the sum of ranks, or -1. */
static int jbad(FIXTURE_DATA(jumbo) *self, const struct t_run *r, __u64 ranks,
		struct t_pkt *p)
{
	if (t_parse(r->pkt, r->len, p, self->got, ESA_MAX_VALUES) ||
	    p->nvals != self->nv || p->count != self->nv)
		return self->nv;
	for (int i = 0; i < self->nv; i++) {
		__s64 s = 0;

		for (int k = 0; k < W; k++)
			if (ranks & (1ULL << k))
				s += self->v[k][i];
		if (self->got[i] != (__s32)s)
			return i;
	}
	return -1;
}

/* The slot's partial against the sum of ranks: the first index off, or -1. */
static int jslot(FIXTURE_DATA(jumbo) *self, __u16 job, __u32 seq, __u64 ranks)
{
	struct esa_slot s;

	if (t_slot(&self->e, t_slot_of(&self->e, job, seq), &s, self->acc))
		return self->nv;
	for (int i = 0; i < self->nv; i++) {
		__s64 sum = 0;

		for (int k = 0; k < W; k++)
			if (ranks & (1ULL << k))
				sum += self->v[k][i];
		if (self->acc[i] != sum)
			return i;
	}
	return -1;
}

/* A frame of ESA_MAX_VALUES is more than one buffer: test-run splits it. */
TEST_F(jumbo, frame_spans_buffers)
{
	EXPECT_GT(T_FRAME_MAX, 4096 - 256 - 320);
}

/* The sum, in the linear part and in the frags, passed up to the tc fan-out. */
TEST_F(jumbo, multibuf_sum_to_tc_fanout)
{
	struct t_run r;
	struct t_pkt p;

	ASSERT_EQ(0, jload(self, ESA_MAX_VALUES, 64, true));
	ASSERT_EQ(0, jsend(self, JA, 0, 5, 3, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	ASSERT_EQ(0, jsend(self, JA, 1, 5, 3, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(-1, jslot(self, JA, 5, 0x3));
	ASSERT_EQ(0, jsend(self, JA, 2, 5, 3, &r));
	EXPECT_EQ(XDP_PASS, r.verdict);
	EXPECT_EQ(sizeof(struct esa_fan_meta), r.metalen);
	EXPECT_EQ(T_FRAME_MAX, r.len);
	EXPECT_EQ(-1, jbad(self, &r, 0x7, &p));
	EXPECT_EQ(ESA_T_RESULT, p.type);
	EXPECT_EQ(ESA_RANK_NONE, p.rank);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_COMPLETED));
	EXPECT_EQ(0, t_ctr(&self->e, JA, ESA_C_FANOUT_MISS));
}

/* No tc fan-out on the port: the whole sum to the PS, which delivers it. */
TEST_F(jumbo, multibuf_sum_without_tc_to_ps)
{
	struct t_run r;
	struct t_pkt p;

	ASSERT_EQ(0, jload(self, ESA_MAX_VALUES, 64, false));
	for (int k = 0; k < W; k++)
		ASSERT_EQ(0, jsend(self, JA, k, 9, 3, &r));
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	EXPECT_EQ(T_FRAME_MAX, r.len);
	EXPECT_EQ(-1, jbad(self, &r, 0x7, &p));
	EXPECT_EQ(ESA_T_PARTIAL, p.type);
	EXPECT_EQ(ESA_R_DELIVER, p.reason);
	EXPECT_EQ(t_ip(T_PS_A), p.daddr);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_FANOUT_MISS));
}

/* A preemption swaps: the slot keeps the packet's values, the packet
 * leaves with the evicted partial, written back into its buffers. */
TEST_F(jumbo, multibuf_preempt_swaps)
{
	__u32 sb;
	struct t_run r;
	struct t_pkt p;

	ASSERT_EQ(0, jload(self, ESA_MAX_VALUES, 64, true));
	sb = t_seq_for_slot(&self->e, JB, t_slot_of(&self->e, JA, 20), 0);
	ASSERT_EQ(0, jsend(self, JA, 0, 20, 1, &r));
	ASSERT_EQ(0, jsend(self, JA, 2, 20, 1, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	ASSERT_EQ(0, jsend(self, JB, 1, sb, 2, &r));
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	EXPECT_EQ(-1, jbad(self, &r, 0x5, &p));
	EXPECT_EQ(ESA_T_PARTIAL, p.type);
	EXPECT_EQ(ESA_R_PREEMPT, p.reason);
	EXPECT_EQ(JA, p.job);
	EXPECT_EQ(-1, jslot(self, JB, sb, 0x2));
}

/* A frame shorter than its values, in any buffer: dropped, truncated. */
TEST_F(jumbo, multibuf_truncated_dropped)
{
	static __u8 buf[T_FRAME_MAX];
	struct t_pkt p;
	struct t_run r;
	int len;

	ASSERT_EQ(0, jload(self, ESA_MAX_VALUES, 64, true));
	p = t_data(&self->n, JA, 0, 3, 3, self->v[0], self->nv);
	len = t_build(&p, buf);
	ASSERT_EQ(0, t_run(self->e.prog_fd, buf, len - 4, self->n.sw0, NULL, 0,
			   &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_DROP_TRUNC));
	EXPECT_EQ(-1, jslot(self, JA, 3, 0));
}

/* The largest single-buffer vector: its sum still goes by the devmap. */
TEST_F(jumbo, single_buffer_sum_by_devmap)
{
	struct t_run r;
	struct t_pkt p;

	ASSERT_EQ(0, jload(self, ESA_FRAME_VALUES, 64, true));
	for (int k = 0; k < W; k++)
		ASSERT_EQ(0, jsend(self, JA, k, 7, 3, &r));
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	EXPECT_EQ(0, r.metalen);
	EXPECT_EQ(-1, jbad(self, &r, 0x7, &p));
	EXPECT_EQ(ESA_T_RESULT, p.type);
	EXPECT_EQ(0, t_ctr(&self->e, JA, ESA_C_FANOUT_MISS));
}

TEST_HARNESS_MAIN
