// SPDX-License-Identifier: GPL-2.0
/*
 * Golden-packet tests of the ESA data plane: for each rule of the protocol,
 * input packets through BPF_PROG_TEST_RUN, the expected verdict, the expected
 * output bytes, and the expected slot and counter state.  Each test runs in
 * its own process and network namespace (see testlib.h for the topology).
 */
#include "testlib.h"
#include "kselftest_harness.h"

#define NV	32	/* values per packet in these tests */
#define JA	1	/* job A: 3 workers, PS A */
#define JB	2	/* job B: 3 workers, PS B */
#define W	3

FIXTURE(esa) {
	struct t_net n;
	struct esa e;
	char err[ESA_ERR_LEN];
	__s32 v[W][NV];		/* v[r]: what rank r sends */
	__s32 sum[NV];		/* sum over all ranks */
};

FIXTURE_SETUP(esa)
{
	ASSERT_EQ(0, esa_netns_setup(&self->n));
	for (int r = 0; r < W; r++)
		for (int i = 0; i < NV; i++)
			self->v[r][i] = (r + 1) * 1000 + i * 37 - 500;
	for (int i = 0; i < NV; i++)
		self->sum[i] = self->v[0][i] + self->v[1][i] + self->v[2][i];
}

FIXTURE_TEARDOWN(esa)
{
	esa_close(&self->e);
}

/* Load a switch with these settings and register jobs A and B. */
static int load(FIXTURE_DATA(esa) *self, __u8 policy, __u32 slots,
		__u32 stale_ms)
{
	struct esa_opts o;
	struct esa_job a = t_job(W, T_PS_A, 7, JA), b = t_job(W, T_PS_B, 7, JB);

	esa_opts_default(&o);
	o.nvals = NV;
	o.slots = slots;
	o.max_jobs = 16;
	o.stale_ms = stale_ms;
	o.policy = policy;
	o.kfunc = 0;
	if (esa_load(&self->e, &o, self->err, sizeof(self->err))) {
		fprintf(stderr, "load: %s\n", self->err);
		return -1;
	}
	if (policy == ESA_POLICY_SWITCHML) {
		a.region_base = 0;
		a.region_size = slots / 2;
		b.region_base = slots / 2;
		b.region_size = slots / 2;
	}
	if (t_port_register(&self->e, self->n.sw0) ||
	    t_port_register(&self->e, self->n.sw1) ||
	    esa_job_add(&self->e, JA, &a, self->err, sizeof(self->err)) ||
	    esa_job_add(&self->e, JB, &b, self->err, sizeof(self->err))) {
		fprintf(stderr, "setup: %s\n", self->err);
		return -1;
	}
	return 0;
}

#define LOAD(policy, slots, stale) ASSERT_EQ(0, load(self, policy, slots, stale))

/* Send rank r's data for (job, seq) with prio; fills struct t_run r_. */
#define SEND(job, r, seq, prio, fl, out)				\
	do {								\
		struct t_pkt __p = t_data(&self->n, job, r, seq, prio,	\
					  self->v[r], NV);		\
		__p.flags = (fl);					\
		ASSERT_EQ(0, t_send(&self->e, &__p, self->n.sw0, out));	\
	} while (0)

/* The result of (job, seq) as the ingress program leaves it. */
static int expect_result(FIXTURE_DATA(esa) *self, __u16 job, __u32 seq,
			 __u8 prio, int completer, const __s32 *sum,
			 __u8 flags, __u8 *buf)
{
	struct t_pkt p = t_data(&self->n, job, completer, seq, prio, sum, NV);

	p.saddr = t_ip(T_SW_IP);
	p.sport = ESA_DEFAULT_PORT;
	p.type = ESA_T_RESULT;
	p.flags = flags;
	p.rank = ESA_RANK_NONE;
	p.bitmap = esa_full_mask(W);
	return t_build(&p, buf);
}

/* A packet from rank `from` rewritten toward a PS. */
static int expect_ps(FIXTURE_DATA(esa) *self, __u16 from_job, int from_rank,
		     const char *ps, const __u8 *ps_mac, __u8 type,
		     __u8 reason, __u8 flags, __u16 job, __u16 rank,
		     __u32 seq, __u8 prio, __u64 bitmap, const __s32 *vals,
		     __u8 *buf)
{
	struct t_pkt p = t_data(&self->n, from_job, from_rank, seq, prio, vals, NV);

	memcpy(p.dmac, ps_mac, 6);
	memcpy(p.smac, self->n.sw1_mac, 6);
	p.daddr = t_ip(ps);
	p.dport = T_PS_PORT;
	p.type = type;
	p.reason = reason;
	p.flags = flags;
	p.job = job;
	p.rank = rank;
	p.bitmap = bitmap;
	return t_build(&p, buf);
}

#define EXPECT_BYTES(r, want, wlen)					\
	do {								\
		EXPECT_EQ((__u32)(wlen), (r)->len);			\
		if ((r)->len == (__u32)(wlen) &&			\
		    memcmp((r)->pkt, want, wlen)) {			\
			t_hexdiff((r)->pkt, want, wlen);		\
			EXPECT_TRUE(0);					\
		}							\
	} while (0)

static const __s32 *partial(FIXTURE_DATA(esa) *self, __u64 ranks, __s32 *out)
{
	for (int i = 0; i < NV; i++) {
		__s64 s = 0;

		for (int r = 0; r < W; r++)
			if (ranks & (1ULL << r))
				s += self->v[r][i];
		out[i] = (__s32)s;
	}
	return out;
}

/* Rule 1: a free slot is claimed for (job, seq) with the packet's values. */
TEST_F(esa, claim_free_slot)
{
	struct esa_slot s;
	__s64 sum[NV];
	struct t_run r;
	__u32 idx;

	LOAD(ESA_POLICY_ESA, 64, 0);
	SEND(JA, 0, 100, 2, 0, &r);
	EXPECT_EQ(XDP_DROP, r.verdict);
	idx = t_slot_of(&self->e, JA, 100);
	ASSERT_EQ(0, t_slot(&self->e, idx, &s, sum));
	EXPECT_EQ(ESA_SLOT_BUSY, s.state);
	EXPECT_EQ(JA, s.job);
	EXPECT_EQ(100, s.seq);
	EXPECT_EQ(2, s.prio);
	EXPECT_EQ(1, s.bitmap);
	EXPECT_EQ(1, s.nranks);
	for (int i = 0; i < NV; i++)
		EXPECT_EQ(self->v[0][i], sum[i]);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_RX));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_CLAIMED));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_LEARN));
}

/* Rule 2: a new rank of the owning key is added and its bit set. */
TEST_F(esa, aggregate_adds_new_rank)
{
	struct esa_slot s;
	__s64 sum[NV];
	struct t_run r;

	LOAD(ESA_POLICY_ESA, 64, 0);
	SEND(JA, 2, 7, 1, 0, &r);
	EXPECT_EQ(XDP_DROP, r.verdict);
	SEND(JA, 0, 7, 1, 0, &r);
	EXPECT_EQ(XDP_DROP, r.verdict);
	ASSERT_EQ(0, t_slot(&self->e, t_slot_of(&self->e, JA, 7), &s, sum));
	EXPECT_EQ(ESA_SLOT_BUSY, s.state);
	EXPECT_EQ(0x5, s.bitmap);
	EXPECT_EQ(2, s.nranks);
	for (int i = 0; i < NV; i++)
		EXPECT_EQ((__s64)self->v[0][i] + self->v[2][i], sum[i]);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_AGGREGATED));
}

/* Rule 2: the last rank completes: the sum goes to every port at once (one
 * copy per port and lane, addressed by egress), the slot is free at once. */
TEST_F(esa, complete_multicasts_and_frees_at_once)
{
	__u8 want[2048];
	struct esa_slot s;
	struct t_run r;
	int len;

	LOAD(ESA_POLICY_ESA, 64, 0);
	SEND(JA, 0, 5, 3, 0, &r);
	SEND(JA, 1, 5, 3, 0, &r);
	SEND(JA, 2, 5, 3, 0, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	len = expect_result(self, JA, 5, 3, 2, self->sum, 0, want);
	EXPECT_BYTES(&r, want, len);
	ASSERT_EQ(sizeof(struct esa_meta), r.metalen);
	EXPECT_EQ(self->n.sw1, r.meta.ps_ifindex);
	EXPECT_EQ(t_ip(T_PS_A), r.meta.ps_ip);
	EXPECT_EQ(htons(T_PS_PORT), r.meta.ps_port);
	EXPECT_EQ(0, memcmp(r.meta.ps_mac, t_ps_a_mac, 6));
	EXPECT_EQ(0, memcmp(r.meta.ps_port_mac, self->n.sw1_mac, 6));
	ASSERT_EQ(0, t_slot(&self->e, t_slot_of(&self->e, JA, 5), &s, NULL));
	EXPECT_EQ(ESA_SLOT_FREE, s.state);
	EXPECT_EQ(ESA_TOMB_DONE, t_tomb(&self->e, JA, 5));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_COMPLETED));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_CLAIMED));
	EXPECT_EQ(2, t_ctr(&self->e, JA, ESA_C_AGGREGATED));

	/* ...and is immediately claimable by another key. */
	SEND(JB, 0, t_seq_for_slot(&self->e, JB, t_slot_of(&self->e, JA, 5), 0),
	     0, 0, &r);
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JB, ESA_C_CLAIMED));
}

/* Rule 2: a rank already counted is a duplicate, never added twice. */
TEST_F(esa, duplicate_is_never_added)
{
	struct esa_slot s;
	__s64 sum[NV];
	struct t_run r;

	LOAD(ESA_POLICY_ESA, 64, 0);
	SEND(JA, 1, 9, 0, 0, &r);
	SEND(JA, 1, 9, 0, 0, &r);
	EXPECT_EQ(XDP_DROP, r.verdict);
	ASSERT_EQ(0, t_slot(&self->e, t_slot_of(&self->e, JA, 9), &s, sum));
	EXPECT_EQ(2, s.bitmap);
	EXPECT_EQ(1, s.nranks);
	for (int i = 0; i < NV; i++)
		EXPECT_EQ(self->v[1][i], sum[i]);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_DUPLICATE));
}

/* Rule 2: a copy arriving after the result went out starts nothing. */
TEST_F(esa, late_duplicate_after_completion_dropped)
{
	struct esa_slot s;
	struct t_run r;

	LOAD(ESA_POLICY_ESA, 64, 0);
	for (int k = 0; k < W; k++)
		SEND(JA, k, 11, 0, 0, &r);
	SEND(JA, 1, 11, 0, 0, &r);
	EXPECT_EQ(XDP_DROP, r.verdict);
	ASSERT_EQ(0, t_slot(&self->e, t_slot_of(&self->e, JA, 11), &s, NULL));
	EXPECT_EQ(ESA_SLOT_FREE, s.state);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_DUPLICATE));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_CLAIMED));
}

/* Rule 6: a resend after the result went out is answered by the PS. */
TEST_F(esa, resend_after_completion_goes_to_ps)
{
	__u8 want[2048];
	struct t_run r;
	int len;

	LOAD(ESA_POLICY_ESA, 64, 0);
	for (int k = 0; k < W; k++)
		SEND(JA, k, 12, 4, 0, &r);
	SEND(JA, 0, 12, 4, ESA_F_RESEND, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	len = expect_ps(self, JA, 0, T_PS_A, t_ps_a_mac, ESA_T_COLLISION,
			ESA_R_RESEND, ESA_F_RESEND, JA, 0, 12, 4, 1, self->v[0], want);
	EXPECT_BYTES(&r, want, len);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_RESEND_FWD));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_PS_TX));
}

/* Rule 3: a higher priority evicts a lower one's partial to the owner's PS,
 * in place: the packet leaves carrying the partial, the slot keeps its
 * values. */
TEST_F(esa, preempt_sends_partial_to_owner_ps)
{
	__s32 part[NV];
	__u8 want[2048];
	struct esa_slot s;
	__s64 sum[NV];
	struct t_run r;
	__u32 idx, sb;
	int len;

	LOAD(ESA_POLICY_ESA, 64, 0);
	SEND(JA, 0, 20, 1, 0, &r);
	SEND(JA, 2, 20, 1, 0, &r);
	idx = t_slot_of(&self->e, JA, 20);
	sb = t_seq_for_slot(&self->e, JB, idx, 0);
	SEND(JB, 1, sb, 2, 0, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	len = expect_ps(self, JB, 1, T_PS_A, t_ps_a_mac, ESA_T_PARTIAL,
			ESA_R_PREEMPT, 0, JA, ESA_RANK_NONE, 20, 1, 0x5,
			partial(self, 0x5, part), want);
	EXPECT_BYTES(&r, want, len);
	ASSERT_EQ(0, t_slot(&self->e, idx, &s, sum));
	EXPECT_EQ(ESA_SLOT_BUSY, s.state);
	EXPECT_EQ(JB, s.job);
	EXPECT_EQ(sb, s.seq);
	EXPECT_EQ(2, s.prio);
	EXPECT_EQ(2, s.bitmap);
	for (int i = 0; i < NV; i++)
		EXPECT_EQ(self->v[1][i], sum[i]);
	EXPECT_EQ(ESA_TOMB_PS, t_tomb(&self->e, JA, 20));
	EXPECT_EQ(ESA_TOMB_NONE, t_tomb(&self->e, JB, sb));
	EXPECT_EQ(1, t_ctr(&self->e, JB, ESA_C_PREEMPT_CAUSED));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_PREEMPT_SUFFERED));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_EVICTED));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_PS_TX));
}

/* Rule 4: an owner of equal or higher priority keeps the slot; the packet
 * goes to its own PS unaggregated. */
TEST_F(esa, collision_goes_to_own_ps)
{
	__u8 want[2048];
	struct esa_slot s;
	struct t_run r;
	__u32 idx, sb;
	int len;

	LOAD(ESA_POLICY_ESA, 64, 0);
	SEND(JA, 0, 30, 3, 0, &r);
	idx = t_slot_of(&self->e, JA, 30);
	sb = t_seq_for_slot(&self->e, JB, idx, 0);
	for (int prio = 3; prio >= 2; prio--) {
		SEND(JB, prio - 2, sb, prio, 0, &r);
		EXPECT_EQ(XDP_REDIRECT, r.verdict);
		len = expect_ps(self, JB, prio - 2, T_PS_B, t_ps_b_mac,
				ESA_T_COLLISION, prio == 3 ? ESA_R_COLLISION : ESA_R_TOMB,
				0, JB, prio - 2, sb, prio, 1ULL << (prio - 2),
				self->v[prio - 2], want);
		EXPECT_BYTES(&r, want, len);
	}
	ASSERT_EQ(0, t_slot(&self->e, idx, &s, NULL));
	EXPECT_EQ(JA, s.job);
	EXPECT_EQ(1, s.bitmap);
	EXPECT_EQ(1, t_ctr(&self->e, JB, ESA_C_COLLISION));
	EXPECT_EQ(1, t_ctr(&self->e, JB, ESA_C_TOMB_FWD));
	EXPECT_EQ(0, t_ctr(&self->e, JB, ESA_C_PREEMPT_CAUSED));
}

/* Rule 5: once evicted, a chunk's later packets follow it to the PS: they
 * neither restart it in the switch nor evict anyone. */
TEST_F(esa, evicted_chunk_follows_to_ps)
{
	struct esa_slot s;
	struct t_run r;
	__u32 idx, sb;

	LOAD(ESA_POLICY_ESA, 64, 0);
	SEND(JA, 0, 40, 5, 0, &r);
	idx = t_slot_of(&self->e, JA, 40);
	sb = t_seq_for_slot(&self->e, JB, idx, 0);
	SEND(JB, 0, sb, 6, 0, &r);		/* evicts A */
	SEND(JA, 1, 40, 7, 0, &r);		/* A, higher prio still */
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	ASSERT_EQ(0, t_slot(&self->e, idx, &s, NULL));
	EXPECT_EQ(JB, s.job);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_TOMB_FWD));
	EXPECT_EQ(0, t_ctr(&self->e, JA, ESA_C_PREEMPT_CAUSED));
	/* Even once the slot is free again. */
	SEND(JB, 1, sb, 6, 0, &r);
	SEND(JB, 2, sb, 6, 0, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	SEND(JA, 2, 40, 5, 0, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	EXPECT_EQ(2, t_ctr(&self->e, JA, ESA_C_TOMB_FWD));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_CLAIMED));
}

/* Rule 5: a chunk that collided never starts a partial later either. */
TEST_F(esa, collided_chunk_never_restarts)
{
	struct esa_slot s;
	struct t_run r;
	__u32 idx, sb;

	LOAD(ESA_POLICY_ESA, 64, 0);
	SEND(JA, 0, 50, 5, 0, &r);
	idx = t_slot_of(&self->e, JA, 50);
	sb = t_seq_for_slot(&self->e, JB, idx, 0);
	SEND(JB, 0, sb, 1, 0, &r);		/* collides */
	SEND(JA, 1, 50, 5, 0, &r);
	SEND(JA, 2, 50, 5, 0, &r);		/* A completes, slot free */
	SEND(JB, 1, sb, 1, 0, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	ASSERT_EQ(0, t_slot(&self->e, idx, &s, NULL));
	EXPECT_EQ(ESA_SLOT_FREE, s.state);
	EXPECT_EQ(0, t_ctr(&self->e, JB, ESA_C_CLAIMED));
	EXPECT_EQ(1, t_ctr(&self->e, JB, ESA_C_TOMB_FWD));
}

/* Rule 6: a resend flushes the partial still holding its chunk. */
TEST_F(esa, resend_flushes_partial)
{
	__s32 part[NV];
	__u8 want[2048];
	struct esa_slot s;
	struct t_run r;
	int len;

	LOAD(ESA_POLICY_ESA, 64, 0);
	SEND(JA, 0, 60, 2, 0, &r);
	SEND(JA, 1, 60, 2, 0, &r);
	SEND(JA, 0, 60, 2, ESA_F_RESEND, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	len = expect_ps(self, JA, 0, T_PS_A, t_ps_a_mac, ESA_T_PARTIAL,
			ESA_R_FLUSH, 0, JA, ESA_RANK_NONE, 60, 2, 0x3,
			partial(self, 0x3, part), want);
	EXPECT_BYTES(&r, want, len);
	ASSERT_EQ(0, t_slot(&self->e, t_slot_of(&self->e, JA, 60), &s, NULL));
	EXPECT_EQ(ESA_SLOT_FREE, s.state);
	EXPECT_EQ(ESA_TOMB_PS, t_tomb(&self->e, JA, 60));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_RESEND_FLUSH));
	/* The next resend finds no partial: straight to the PS. */
	SEND(JA, 1, 60, 2, ESA_F_RESEND, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_RESEND_FWD));
}

/* Rule 6: a resend of the one missing rank completes the chunk. */
TEST_F(esa, resend_of_missing_rank_completes)
{
	__u8 want[2048];
	struct t_run r;
	int len;

	LOAD(ESA_POLICY_ESA, 64, 0);
	SEND(JA, 0, 61, 2, 0, &r);
	SEND(JA, 1, 61, 2, 0, &r);
	SEND(JA, 2, 61, 2, ESA_F_RESEND, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	len = expect_result(self, JA, 61, 2, 2, self->sum, 0, want);
	EXPECT_BYTES(&r, want, len);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_COMPLETED));
}

/* Rule 6: a resend with no partial in the switch goes to the PS. */
TEST_F(esa, resend_without_partial_goes_to_ps)
{
	__u8 want[2048];
	struct esa_slot s;
	struct t_run r;
	int len;

	LOAD(ESA_POLICY_ESA, 64, 0);
	SEND(JA, 2, 62, 0, ESA_F_RESEND, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	len = expect_ps(self, JA, 2, T_PS_A, t_ps_a_mac, ESA_T_COLLISION,
			ESA_R_RESEND, ESA_F_RESEND, JA, 2, 62, 0, 4, self->v[2], want);
	EXPECT_BYTES(&r, want, len);
	ASSERT_EQ(0, t_slot(&self->e, t_slot_of(&self->e, JA, 62), &s, NULL));
	EXPECT_EQ(ESA_SLOT_FREE, s.state);
	EXPECT_EQ(0, t_ctr(&self->e, JA, ESA_C_CLAIMED));
}

/* Rule 7: a sum that leaves int32 is flagged, in results... */
TEST_F(esa, overflow_in_result_is_flagged)
{
	__s32 want_v[NV];
	__u8 want[2048];
	struct t_run r;
	int len;

	LOAD(ESA_POLICY_ESA, 64, 0);
	self->v[0][3] = INT32_MAX;
	self->v[1][3] = 1;
	self->v[2][3] = 0;
	self->v[0][4] = INT32_MIN;	/* and exact sums at the edges pass */
	self->v[1][4] = 0;
	self->v[2][4] = 0;
	for (int i = 0; i < NV; i++)
		want_v[i] = (__s32)((__s64)self->v[0][i] + self->v[1][i] + self->v[2][i]);
	for (int k = 0; k < W; k++)
		SEND(JA, k, 70, 0, 0, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	len = expect_result(self, JA, 70, 0, 2, want_v, ESA_F_OVERFLOW, want);
	EXPECT_BYTES(&r, want, len);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_OVERFLOW));

	/* INT32_MIN alone is exact: no flag. */
	for (int k = 0; k < W; k++) {
		for (int i = 0; i < NV; i++)
			self->v[k][i] = k == 0 ? INT32_MIN : 0;
		SEND(JA, k, 71, 0, 0, &r);
	}
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	EXPECT_EQ(0, ((const struct esa_hdr *)(r.pkt + T_HDRS))->flags);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_OVERFLOW));
}

/* Rule 7: ...and in partials. */
TEST_F(esa, overflow_in_partial_is_flagged)
{
	const struct esa_hdr *h;
	struct t_run r;
	__u32 idx, sb;

	LOAD(ESA_POLICY_ESA, 64, 0);
	self->v[0][0] = INT32_MIN;
	self->v[1][0] = -1;
	SEND(JA, 0, 80, 0, 0, &r);
	SEND(JA, 1, 80, 0, 0, &r);
	idx = t_slot_of(&self->e, JA, 80);
	sb = t_seq_for_slot(&self->e, JB, idx, 0);
	SEND(JB, 0, sb, 1, 0, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	h = (const void *)(r.pkt + T_HDRS);
	EXPECT_EQ(ESA_T_PARTIAL, h->type);
	EXPECT_EQ(ESA_F_OVERFLOW, h->flags);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_OVERFLOW));
}

/* Sums of large negative and positive values stay exact. */
TEST_F(esa, extreme_values_sum_exactly)
{
	__s32 want_v[NV];
	__u8 want[2048];
	struct t_run r;
	int len;

	LOAD(ESA_POLICY_ESA, 64, 0);
	for (int i = 0; i < NV; i++) {
		self->v[0][i] = i % 2 ? INT32_MAX : INT32_MIN;
		self->v[1][i] = i % 2 ? INT32_MIN : INT32_MAX;
		self->v[2][i] = -i;
		want_v[i] = -1 - i;
	}
	for (int k = 0; k < W; k++)
		SEND(JA, k, 90, 0, 0, &r);
	len = expect_result(self, JA, 90, 0, 2, want_v, 0, want);
	EXPECT_BYTES(&r, want, len);
}

/* Rule 1: a slot held by a deleted job is free, without any scan. */
TEST_F(esa, deleted_job_slot_is_free)
{
	struct esa_slot s;
	struct t_run r;
	__u32 idx, sb;

	LOAD(ESA_POLICY_ESA, 64, 0);
	SEND(JA, 0, 100, 7, 0, &r);
	idx = t_slot_of(&self->e, JA, 100);
	ASSERT_EQ(0, esa_job_del(&self->e, JA));
	sb = t_seq_for_slot(&self->e, JB, idx, 0);
	SEND(JB, 0, sb, 0, 0, &r);		/* lowest priority still wins */
	EXPECT_EQ(XDP_DROP, r.verdict);
	ASSERT_EQ(0, t_slot(&self->e, idx, &s, NULL));
	EXPECT_EQ(JB, s.job);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_RECLAIMED));
	EXPECT_EQ(1, t_ctr(&self->e, JB, ESA_C_CLAIMED));
	/* The deleted job's packets are dropped and counted. */
	SEND(JA, 1, 100, 7, 0, &r);
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_DROP_JOB));
}

/* Rule 1: a lease that ran out frees the job's slots; its next packet
 * renews the lease under a new generation. */
TEST_F(esa, expired_lease_frees_slots)
{
	struct esa_job j;
	struct t_run r;
	__u32 idx, sb, gen;

	LOAD(ESA_POLICY_ESA, 64, 0);
	j = t_job(W, T_PS_A, 7, 3);
	j.lease_ms = 20;
	ASSERT_EQ(0, esa_job_add(&self->e, 3, &j, self->err, sizeof(self->err)));
	gen = j.gen;
	SEND(3, 0, 110, 7, 0, &r);
	idx = t_slot_of(&self->e, 3, 110);
	usleep(80 * 1000);
	ASSERT_EQ(0, esa_job_read(&self->e, 3, &j));
	EXPECT_TRUE(esa_job_expired(&j));
	sb = t_seq_for_slot(&self->e, JB, idx, 0);
	SEND(JB, 0, sb, 0, 0, &r);
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, 3, ESA_C_RECLAIMED));
	SEND(3, 1, 110, 7, 0, &r);		/* renews: new generation */
	ASSERT_EQ(0, esa_job_read(&self->e, 3, &j));
	EXPECT_EQ(gen + 1, j.gen);
	EXPECT_FALSE(esa_job_expired(&j));
	EXPECT_EQ(1, t_ctr(&self->e, 3, ESA_C_EXPIRED));
}

/* A job id registered again is a new job: the old one's slots are free. */
TEST_F(esa, job_id_reuse_starts_new_generation)
{
	struct esa_job j = t_job(W, T_PS_A, 7, JA);
	struct esa_slot s;
	struct t_run r;
	__u32 idx;

	LOAD(ESA_POLICY_ESA, 64, 0);
	SEND(JA, 0, 120, 1, 0, &r);
	idx = t_slot_of(&self->e, JA, 120);
	EXPECT_EQ(-EEXIST, esa_job_add(&self->e, JA, &j, self->err, sizeof(self->err)));
	ASSERT_EQ(0, esa_job_del(&self->e, JA));
	ASSERT_EQ(0, esa_job_add(&self->e, JA, &j, self->err, sizeof(self->err)));
	SEND(JA, 1, 120, 1, 0, &r);		/* a new chunk, not rank 1 of the old */
	EXPECT_EQ(XDP_DROP, r.verdict);
	ASSERT_EQ(0, t_slot(&self->e, idx, &s, NULL));
	EXPECT_EQ(j.gen, s.gen);
	EXPECT_EQ(2, s.bitmap);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_RECLAIMED));
}

/* A partial idle past the ageing limit goes to its PS to make room. */
TEST_F(esa, idle_partial_ages_out)
{
	const struct esa_hdr *h;
	struct t_run r;
	__u32 idx, sb;

	LOAD(ESA_POLICY_ESA, 64, 20);
	SEND(JA, 0, 130, 7, 0, &r);
	idx = t_slot_of(&self->e, JA, 130);
	sb = t_seq_for_slot(&self->e, JB, idx, 0);
	SEND(JB, 0, sb, 0, 0, &r);		/* not yet idle: collides */
	EXPECT_EQ(1, t_ctr(&self->e, JB, ESA_C_COLLISION));
	usleep(80 * 1000);
	sb = t_seq_for_slot(&self->e, JB, idx, sb + 1);
	SEND(JB, 0, sb, 0, 0, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	h = (const void *)(r.pkt + T_HDRS);
	EXPECT_EQ(ESA_T_PARTIAL, h->type);
	EXPECT_EQ(ESA_R_AGED, h->reason);
	EXPECT_EQ(JA, ntohs(h->job));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_AGED));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_EVICTED));
}

/* Rule 8: malformed, spoofed and unknown packets are dropped and counted,
 * never aggregated. */
TEST_F(esa, bad_packets_dropped_and_counted)
{
	enum { T_HDR, T_VAL, T_VER, T_JOB, T_BIGJOB, T_RANK, T_PRIO, T_SPOOF,
	       T_SPORT, T_COUNT, T_ULEN, T_BITMAP, T_FLAG, T_RESV, T_REASON,
	       T_RESULT, T_ACK, T_PARTIAL, T_MAX };
	static const struct { const char *name; int ctr; bool global; } c[T_MAX] = {
		[T_HDR]	   = { "header cut short", ESA_C_DROP_TRUNC, true },
		[T_VAL]	   = { "values cut short", ESA_C_DROP_TRUNC },
		[T_VER]	   = { "version 2", ESA_C_DROP_VERSION, true },
		[T_JOB]	   = { "unregistered job", ESA_C_DROP_JOB },
		[T_BIGJOB] = { "job id past max_jobs", ESA_C_DROP_JOB, true },
		[T_RANK]   = { "rank past the job", ESA_C_DROP_RANK },
		[T_PRIO]   = { "priority above max", ESA_C_DROP_PRIO },
		[T_SPOOF]  = { "another rank's address", ESA_C_DROP_SPOOF },
		[T_SPORT]  = { "wrong source port", ESA_C_DROP_SPOOF },
		[T_COUNT]  = { "count not the deployment's", ESA_C_DROP_COUNT },
		[T_ULEN]   = { "UDP length wrong", ESA_C_DROP_COUNT },
		[T_BITMAP] = { "bitmap not 1 << rank", ESA_C_DROP_HEADER },
		[T_FLAG]   = { "unknown flag", ESA_C_DROP_HEADER },
		[T_RESV]   = { "reserved byte set", ESA_C_DROP_HEADER },
		[T_REASON] = { "reason set by a worker", ESA_C_DROP_HEADER },
		[T_RESULT] = { "result sent to the switch", ESA_C_DROP_TYPE },
		[T_ACK]	   = { "ack without policy atp", ESA_C_DROP_TYPE },
		[T_PARTIAL] = { "partial sent to the switch", ESA_C_DROP_TYPE },
	};
	struct esa_counters before, after;
	struct esa_slot s;
	__u8 buf[2048];
	struct t_run r;

	LOAD(ESA_POLICY_ESA, 64, 0);
	for (int t = 0; t < T_MAX; t++) {
		struct t_pkt p = t_data(&self->n, JA, 1, 140, 0, self->v[1], NV);
		__u32 row = c[t].global ? self->e.cfg.max_jobs : JA;
		__u64 was = t_ctr(&self->e, row, c[t].ctr);
		int len;

		switch (t) {
		case T_VER: p.version = 2; break;
		case T_JOB: p.job = 9; p.sport = T_WORKER_PORT + 9; row = 9;
			was = t_ctr(&self->e, row, c[t].ctr); break;
		case T_BIGJOB: p.job = 16; break;
		case T_RANK: p.rank = 3; p.bitmap = 8; p.saddr = t_worker_ip(3); break;
		case T_PRIO: p.prio = 8; break;
		case T_SPOOF: p.saddr = t_worker_ip(0); break;
		case T_SPORT: p.sport++; break;
		case T_COUNT: p.count = NV - 8; break;
		case T_BITMAP: p.bitmap = 3; break;
		case T_FLAG: p.flags = 0x80; break;
		case T_RESV: p.resv = 1; break;
		case T_REASON: p.reason = ESA_R_TOMB; break;
		case T_RESULT: p.type = ESA_T_RESULT; break;
		case T_ACK: p.type = ESA_T_ACK; break;
		case T_PARTIAL: p.type = ESA_T_PARTIAL; break;
		}
		len = t_build(&p, buf);
		if (t == T_HDR)
			len = T_HDRS + ESA_HDR_LEN - 1;
		if (t == T_VAL)
			len -= 4;
		if (t == T_ULEN) {
			struct udphdr *u = (void *)(buf + sizeof(struct ethhdr) +
						    sizeof(struct iphdr));
			u->len = htons(ntohs(u->len) - 4);
		}
		ASSERT_EQ(0, esa_counters_sum(&self->e, &before));
		ASSERT_EQ(0, t_run(self->e.prog_fd, buf, len, self->n.sw0, NULL, 0, &r));
		ASSERT_EQ(0, esa_counters_sum(&self->e, &after));
		EXPECT_EQ(XDP_DROP, r.verdict) TH_LOG("%s", c[t].name);
		EXPECT_EQ(was + 1, t_ctr(&self->e, row, c[t].ctr)) TH_LOG("%s", c[t].name);
		/* Exactly one drop counter and rx moved; nothing else. */
		for (int k = 0; k < __ESA_C_MAX; k++) {
			__u64 d = after.c[k] - before.c[k];

			__u64 want = k == c[t].ctr || k == ESA_C_RX;

			EXPECT_EQ(want, d) TH_LOG("%s: %s", c[t].name, esa_counter_names[k]);
		}
	}
	ASSERT_EQ(0, t_slot(&self->e, t_slot_of(&self->e, JA, 140), &s, NULL));
	EXPECT_EQ(ESA_SLOT_FREE, s.state);
	EXPECT_EQ(0, s.nranks);
}

/* Rule 8: IP options and fragments on the ESA port are dropped too. */
TEST_F(esa, odd_ip_on_esa_port_dropped)
{
	__u8 buf[2048], opt[2048];
	struct iphdr *ip = (void *)(buf + sizeof(struct ethhdr));
	struct t_pkt p;
	struct t_run r;
	int len;

	LOAD(ESA_POLICY_ESA, 64, 0);
	p = t_data(&self->n, JA, 0, 150, 0, self->v[0], NV);
	len = t_build(&p, buf);
	ip->frag_off = htons(0x2000);		/* first fragment */
	ASSERT_EQ(0, t_run(self->e.prog_fd, buf, len, self->n.sw0, NULL, 0, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	/* 4 bytes of options (NOP x4) between the IP and UDP headers. */
	len = t_build(&p, buf);
	memcpy(opt, buf, T_HDRS - 8);
	memset(opt + T_HDRS - 8, 1, 4);
	memcpy(opt + T_HDRS - 4, buf + T_HDRS - 8, len - (T_HDRS - 8));
	ip = (void *)(opt + sizeof(struct ethhdr));
	ip->ihl = 6;
	ip->tot_len = htons(ntohs(ip->tot_len) + 4);
	ASSERT_EQ(0, t_run(self->e.prog_fd, opt, len + 4, self->n.sw0, NULL, 0, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(2, t_ctr(&self->e, self->e.cfg.max_jobs, ESA_C_DROP_IP));
	EXPECT_EQ(0, t_ctr(&self->e, JA, ESA_C_CLAIMED));
}

/* Non-ESA traffic passes to the stack, byte for byte. */
TEST_F(esa, other_traffic_passes_untouched)
{
	__u8 buf[2048];
	struct t_pkt p;
	struct t_run r;
	int len;

	LOAD(ESA_POLICY_ESA, 64, 0);
	p = t_data(&self->n, JA, 0, 160, 0, self->v[0], NV);
	for (int t = 0; t < 4; t++) {
		len = t_build(&p, buf);
		switch (t) {
		case 0: buf[12] = 0x08; buf[13] = 0x06; break;	/* ARP */
		case 1: buf[12] = 0x86; buf[13] = 0xdd; break;	/* IPv6 */
		case 2: buf[sizeof(struct ethhdr) + 9] = IPPROTO_TCP; break;
		case 3: buf[T_HDRS - 6] ^= 1; break;		/* other port */
		}
		ASSERT_EQ(0, t_run(self->e.prog_fd, buf, len, self->n.sw0, NULL, 0, &r));
		EXPECT_EQ(XDP_PASS, r.verdict) TH_LOG("case %d", t);
		EXPECT_EQ((__u32)len, r.len);
		EXPECT_EQ(0, memcmp(r.pkt, buf, len)) TH_LOG("case %d", t);
	}
	EXPECT_EQ(0, t_ctr(&self->e, JA, ESA_C_RX));
	EXPECT_EQ(0, t_ctr(&self->e, self->e.cfg.max_jobs, ESA_C_RX));
}

/* Run the egress program on one copy of a broadcast result, on port ifindex. */
static int egress(FIXTURE_DATA(esa) *self, const struct t_run *r, int ifindex,
		  struct t_run *out, struct t_pkt *got, __s32 *vals)
{
	if (t_run(self->e.egress_test_fd, r->pkt, r->len, ifindex, r->out,
		  r->metalen, out))
		return -1;
	if (out->verdict == XDP_PASS && t_parse(out->pkt, out->len, got, vals, NV))
		return -1;
	return out->verdict;
}

/* On each port the copies of a result go: first to the job's worker there,
 * next to its PS if it is there too; the rest are dropped. */
TEST_F(esa, egress_addresses_worker_and_ps)
{
	struct t_run r, w;
	struct t_pkt got;
	__s32 vals[NV];
	__u8 mac[6];

	LOAD(ESA_POLICY_ESA, 64, 0);
	for (int k = 0; k < W; k++)
		SEND(JA, k, 170, 0, 0, &r);
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	ASSERT_EQ(ESA_META_RESULT, r.meta.kind);

	/* sw0: all three ranks sit behind it here; the first one learnt
	 * (rank 0) holds the port.  Its copy, then nothing: no PS on sw0. */
	ASSERT_EQ(XDP_PASS, egress(self, &r, self->n.sw0, &w, &got, vals));
	EXPECT_EQ(t_worker_ip(0), got.daddr);
	EXPECT_EQ(t_ip(T_SW_IP), got.saddr);
	EXPECT_EQ(T_WORKER_PORT + JA, got.dport);
	EXPECT_EQ(ESA_DEFAULT_PORT, got.sport);
	EXPECT_EQ(0, t_csum(w.pkt + sizeof(struct ethhdr), sizeof(struct iphdr)));
	t_worker_mac(0, mac);
	EXPECT_EQ(0, memcmp(got.dmac, mac, 6));
	EXPECT_EQ(0, memcmp(got.smac, self->n.sw0_mac, 6));
	for (int i = 0; i < NV; i++)
		EXPECT_EQ(self->sum[i], vals[i]);
	EXPECT_EQ(XDP_DROP, egress(self, &r, self->n.sw0, &w, &got, vals));

	/* sw1: no worker of job A, its PS: the first copy is the PS's. */
	ASSERT_EQ(XDP_PASS, egress(self, &r, self->n.sw1, &w, &got, vals));
	EXPECT_EQ(t_ip(T_PS_A), got.daddr);
	EXPECT_EQ(T_PS_PORT, got.dport);
	EXPECT_EQ(0, memcmp(got.dmac, t_ps_a_mac, 6));
	EXPECT_EQ(0, memcmp(got.smac, self->n.sw1_mac, 6));
	EXPECT_EQ(0, t_csum(w.pkt + sizeof(struct ethhdr), sizeof(struct iphdr)));
	EXPECT_EQ(XDP_DROP, egress(self, &r, self->n.sw1, &w, &got, vals));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_RESULT_TX));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_PS_COPY_TX));

	/* The next result starts afresh on every port. */
	for (int k = 0; k < W; k++)
		SEND(JA, k, 171, 0, 0, &r);
	EXPECT_EQ(XDP_PASS, egress(self, &r, self->n.sw0, &w, &got, vals));
	EXPECT_EQ(t_worker_ip(0), got.daddr);
}

/* A worker and the PS of one job behind one port both get their copy. */
TEST_F(esa, egress_worker_and_ps_share_a_port)
{
	struct esa_job j = t_job(W, T_PS_W, 7, 6);
	struct t_run r, w;
	struct t_pkt got;
	__s32 vals[NV];

	LOAD(ESA_POLICY_ESA, 64, 0);
	ASSERT_EQ(0, esa_job_add(&self->e, 6, &j, self->err, sizeof(self->err)));
	for (int k = 0; k < W; k++)
		SEND(6, k, 3, 0, 0, &r);
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	EXPECT_EQ(self->n.sw0, r.meta.ps_ifindex);
	ASSERT_EQ(XDP_PASS, egress(self, &r, self->n.sw0, &w, &got, vals));
	EXPECT_EQ(t_worker_ip(0), got.daddr);
	ASSERT_EQ(XDP_PASS, egress(self, &r, self->n.sw0, &w, &got, vals));
	EXPECT_EQ(t_ip(T_PS_W), got.daddr);
	EXPECT_EQ(0, memcmp(got.dmac, t_ps_w_mac, 6));
	EXPECT_EQ(XDP_DROP, egress(self, &r, self->n.sw0, &w, &got, vals));
	EXPECT_EQ(XDP_DROP, egress(self, &r, self->n.sw1, &w, &got, vals));
}

/* A unicast frame (here to a PS) leaves through the port devmap with its
 * egress program, untouched by it. */
TEST_F(esa, unicast_passes_egress_untouched)
{
	struct t_run r, w;
	struct t_pkt got;
	__s32 vals[NV];

	LOAD(ESA_POLICY_ESA, 64, 0);
	SEND(JA, 0, 172, 0, ESA_F_RESEND, &r);
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	ASSERT_EQ(sizeof(struct esa_meta), r.metalen);
	EXPECT_EQ(ESA_META_UNICAST, r.meta.kind);
	ASSERT_EQ(XDP_PASS, egress(self, &r, self->n.sw1, &w, &got, vals));
	EXPECT_EQ(r.len, w.len);
	EXPECT_EQ(0, memcmp(r.pkt, w.pkt, r.len));
}

/* Two ranks of one job behind one port: the first keeps the port (one copy
 * per port and lane); the conflict is counted. */
TEST_F(esa, two_ranks_behind_one_port_counted)
{
	struct t_run r;

	LOAD(ESA_POLICY_ESA, 64, 0);
	SEND(JA, 0, 180, 0, 0, &r);
	SEND(JA, 1, 180, 0, 0, &r);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_LEARN));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_LEARN_CONFLICT));
	SEND(JA, 1, 181, 0, 0, &r);		/* no new conflict per packet */
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_LEARN_CONFLICT));
}

/* Without a resolved next hop the PS is reached through the kernel stack;
 * without a route the packet is dropped and counted. */
TEST_F(esa, unresolved_and_unreachable_ps)
{
	struct esa_job j = t_job(W, T_PS_NONEIGH, 7, 4);
	const struct esa_hdr *h;
	const struct iphdr *ip;
	struct t_run r;

	LOAD(ESA_POLICY_ESA, 64, 0);
	ASSERT_EQ(0, esa_job_add(&self->e, 4, &j, self->err, sizeof(self->err)));
	SEND(4, 0, 190, 0, ESA_F_RESEND, &r);
	EXPECT_EQ(XDP_PASS, r.verdict);
	ip = (const void *)(r.pkt + sizeof(struct ethhdr));
	EXPECT_EQ(t_ip(T_PS_NONEIGH), ip->daddr);
	EXPECT_EQ(1, t_ctr(&self->e, 4, ESA_C_PS_STACK));

	/* A completion whose PS copy cannot be made goes whole to the PS. */
	for (int k = 0; k < W; k++)
		SEND(4, k, 191, 0, 0, &r);
	EXPECT_EQ(XDP_PASS, r.verdict);
	h = (const void *)(r.pkt + T_HDRS);
	EXPECT_EQ(ESA_T_PARTIAL, h->type);
	EXPECT_EQ(ESA_R_DELIVER, h->reason);
	EXPECT_EQ(esa_full_mask(W), be64toh(h->bitmap));

	j = t_job(W, T_PS_UNREACH, 7, 5);
	ASSERT_EQ(0, esa_job_add(&self->e, 5, &j, self->err, sizeof(self->err)));
	SEND(5, 0, 192, 0, ESA_F_RESEND, &r);
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, 5, ESA_C_DROP_NOROUTE));
}

/* A PS port that does not deliver results: the completed sum goes to the
 * PS whole, so the PS always has every result. */
TEST_F(esa, completion_without_ps_lane_goes_whole_to_ps)
{
	__u8 want[2048];
	struct t_run r;
	int len;

	LOAD(ESA_POLICY_ESA, 64, 0);
	for (int c = 0; c < ESA_PORT_COPIES; c++) {
		__u32 k = ESA_PORT_KEY(self->n.sw1, c);

		ASSERT_EQ(0, bpf_map_delete_elem(self->e.ports_fd, &k));
	}
	for (int i = 0; i < W; i++)
		SEND(JA, i, 200, 1, 0, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	EXPECT_EQ(0, r.metalen);
	len = expect_ps(self, JA, 2, T_PS_A, t_ps_a_mac, ESA_T_PARTIAL,
			ESA_R_DELIVER, 0, JA, ESA_RANK_NONE, 200, 1,
			esa_full_mask(W), self->sum, want);
	EXPECT_BYTES(&r, want, len);
}

/* Policy atp: a completed slot is held until the PS's ack passes back. */
TEST_F(esa, atp_holds_slot_until_ps_ack)
{
	const struct esa_hdr *h;
	struct esa_slot s;
	struct t_run r;
	struct t_pkt ack;
	__u32 idx, sb;

	LOAD(ESA_POLICY_ATP, 64, 0);
	for (int k = 0; k < W; k++)
		SEND(JA, k, 210, 1, 0, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	h = (const void *)(r.pkt + T_HDRS);
	EXPECT_EQ(ESA_T_RESULT, h->type);
	EXPECT_EQ(ESA_R_HOLD, h->reason);
	idx = t_slot_of(&self->e, JA, 210);
	ASSERT_EQ(0, t_slot(&self->e, idx, &s, NULL));
	EXPECT_EQ(ESA_SLOT_HELD, s.state);

	/* Held: even a higher priority collides (no preemption in atp). */
	sb = t_seq_for_slot(&self->e, JB, idx, 0);
	SEND(JB, 0, sb, 7, 0, &r);
	EXPECT_EQ(1, t_ctr(&self->e, JB, ESA_C_COLLISION));

	/* An ack from anyone but the PS is dropped. */
	ack = t_data(&self->n, JA, 0, 210, 1, self->sum, NV);
	ack.type = ESA_T_ACK;
	ack.rank = ESA_RANK_NONE;
	ack.bitmap = esa_full_mask(W);
	ASSERT_EQ(0, t_send(&self->e, &ack, self->n.sw0, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_DROP_SPOOF));

	/* The PS's ack frees the slot and goes to the workers. */
	ack.saddr = t_ip(T_PS_A);
	ack.sport = T_PS_PORT;
	ASSERT_EQ(0, t_send(&self->e, &ack, self->n.sw1, &r));
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	ASSERT_EQ(sizeof(struct esa_meta), r.metalen);
	EXPECT_EQ(0, r.meta.ps_ifindex);
	h = (const void *)(r.pkt + T_HDRS);
	EXPECT_EQ(ESA_T_RESULT, h->type);
	ASSERT_EQ(0, t_slot(&self->e, idx, &s, NULL));
	EXPECT_EQ(ESA_SLOT_FREE, s.state);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_HELD));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_ACK));
}

/* Policy switchml: each job aggregates in its own region only. */
TEST_F(esa, switchml_regions_are_private)
{
	struct esa_slot s;
	struct t_run r;

	LOAD(ESA_POLICY_SWITCHML, 64, 0);
	EXPECT_EQ(5, t_slot_of(&self->e, JA, 5));
	EXPECT_EQ(32 + 5, t_slot_of(&self->e, JB, 5));
	EXPECT_EQ(5, t_slot_of(&self->e, JA, 32 + 5));
	SEND(JA, 0, 5, 0, 0, &r);
	SEND(JB, 0, 5, 7, 0, &r);
	EXPECT_EQ(XDP_DROP, r.verdict);		/* its own slot: claimed */
	SEND(JA, 0, 37, 0, 0, &r);		/* same slot, older chunk there */
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_COLLISION));
	ASSERT_EQ(0, t_slot(&self->e, 5, &s, NULL));
	EXPECT_EQ(JA, s.job);
	EXPECT_EQ(5, s.seq);
	EXPECT_EQ(0, t_ctr(&self->e, JB, ESA_C_PREEMPT_CAUSED));
}

/*
 * Homes on the shared pool (esactl job add ... region BASE SIZE under esa):
 * chunk seq of a job with home B+S lands in slot (B + seq % S) mod slots,
 * wrapping the pool; homes that do not overlap never collide, and where
 * two overlap, priorities decide as anywhere in the shared pool.
 */
TEST_F(esa, homes_place_chunks_on_the_shared_pool)
{
	struct esa_job a = t_job(W, T_PS_A, 7, JA), b = t_job(W, T_PS_B, 7, JB);
	struct esa_slot s;
	struct t_run r;

	LOAD(ESA_POLICY_ESA, 64, 0);
	ASSERT_EQ(0, esa_job_del(&self->e, JA));
	ASSERT_EQ(0, esa_job_del(&self->e, JB));
	a.region_base = 60;			/* slots 60..63, 0..3 */
	a.region_size = 8;
	b.region_base = 4;			/* slots 4..11 */
	b.region_size = 8;
	ASSERT_EQ(0, esa_job_add(&self->e, JA, &a, self->err, sizeof(self->err)));
	ASSERT_EQ(0, esa_job_add(&self->e, JB, &b, self->err, sizeof(self->err)));
	/* a window of 8 each: every chunk claims a slot of its own home */
	for (__u32 q = 0; q < 8; q++) {
		SEND(JA, 0, 16 + q, 1, 0, &r);
		EXPECT_EQ(XDP_DROP, r.verdict);
		SEND(JB, 0, 16 + q, 1, 0, &r);
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
	EXPECT_EQ(0, t_ctr(&self->e, JA, ESA_C_COLLISION));
	EXPECT_EQ(0, t_ctr(&self->e, JB, ESA_C_COLLISION));
	/* a chunk a home further on meets its own job's chunk: collision */
	SEND(JA, 0, 24, 1, 0, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_COLLISION));
	/* B moves its home onto A's: the higher priority takes slot 0 */
	ASSERT_EQ(0, esa_job_del(&self->e, JB));
	b.region_base = 0;
	ASSERT_EQ(0, esa_job_add(&self->e, JB, &b, self->err, sizeof(self->err)));
	SEND(JB, 0, 8, 2, 0, &r);		/* 8 % 8 = 0: slot 0, A's chunk 20 */
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	ASSERT_EQ(0, t_slot(&self->e, 0, &s, NULL));
	EXPECT_EQ(JB, s.job);
	EXPECT_EQ(8, s.seq);
	EXPECT_EQ(1, t_ctr(&self->e, JB, ESA_C_PREEMPT_CAUSED));
	EXPECT_EQ(ESA_TOMB_PS, t_tomb(&self->e, JA, 20));
}

/* Job registration rejects what the data path could not serve. */
TEST_F(esa, job_registration_checked)
{
	struct esa_job j;

	LOAD(ESA_POLICY_ESA, 64, 0);
	j = t_job(W, T_PS_A, 7, 6);
	j.nworkers = 0;
	EXPECT_EQ(-EINVAL, esa_job_add(&self->e, 6, &j, self->err, sizeof(self->err)));
	EXPECT_NE(NULL, strstr(self->err, "workers"));
	j = t_job(W, T_PS_A, 7, 6);
	j.rank[1] = j.rank[0];
	EXPECT_EQ(-EINVAL, esa_job_add(&self->e, 6, &j, self->err, sizeof(self->err)));
	EXPECT_NE(NULL, strstr(self->err, "share"));
	j = t_job(W, T_PS_A, 7, 6);
	j.ps.port = 0;
	EXPECT_EQ(-EINVAL, esa_job_add(&self->e, 6, &j, self->err, sizeof(self->err)));
	j = t_job(W, T_PS_A, 7, 6);
	EXPECT_EQ(-EINVAL, esa_job_add(&self->e, 16, &j, self->err, sizeof(self->err)));
	EXPECT_NE(NULL, strstr(self->err, "out of range"));
	j.region_base = 4;		/* a home needs a size */
	EXPECT_EQ(-EINVAL, esa_job_add(&self->e, 6, &j, self->err, sizeof(self->err)));
	EXPECT_NE(NULL, strstr(self->err, "size"));
	j.region_base = 64;		/* and must start in the pool */
	j.region_size = 4;
	EXPECT_EQ(-EINVAL, esa_job_add(&self->e, 6, &j, self->err, sizeof(self->err)));
	EXPECT_NE(NULL, strstr(self->err, "does not fit"));
	j.region_base = 0;
	j.region_size = 65;
	EXPECT_EQ(-EINVAL, esa_job_add(&self->e, 6, &j, self->err, sizeof(self->err)));
	j.region_base = 60;		/* wrapping the pool is fine */
	j.region_size = 64;
	EXPECT_EQ(0, esa_job_add(&self->e, 6, &j, self->err, sizeof(self->err)));
}

TEST_HARNESS_MAIN
