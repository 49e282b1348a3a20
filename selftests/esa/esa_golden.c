// SPDX-License-Identifier: GPL-2.0
/*
 * Golden-packet tests of the ESA data plane: for each rule of the protocol,
 * input packets through BPF_PROG_TEST_RUN, the expected verdict, the expected
 * output bytes, and the expected slot and counter state.  The rules are a
 * table (GOLDEN(), one row per case, all run by one function); what does
 * not fit its shape (egress copies, bindings, leases, registrations, two
 * levels) follows as tests of its own.  Each case runs in its own process
 * and network namespace (see testlib.h for the topology).
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

/* A namespace of the test topology, and what each rank sends. */
static void fixture_init(struct __test_metadata *_metadata,
			 FIXTURE_DATA(esa) *self)
{
	ASSERT_EQ(0, esa_netns_setup(&self->n));
	for (int r = 0; r < W; r++)
		for (int i = 0; i < NV; i++)
			self->v[r][i] = (r + 1) * 1000 + i * 37 - 500;
	for (int i = 0; i < NV; i++)
		self->sum[i] = self->v[0][i] + self->v[1][i] + self->v[2][i];
}

FIXTURE_SETUP(esa)
{
	fixture_init(_metadata, self);
}

FIXTURE_TEARDOWN(esa)
{
	esa_close(&self->e);
}

/*
 * Load a switch with these settings and register jobs A and B; no_copy:
 * without result copies for the PSes (esactl prog load ps-copy off).
 */
static int load_with(FIXTURE_DATA(esa) *self, __u8 policy, __u32 slots,
		     __u32 stale_ms, bool no_copy)
{
	struct esa_opts o;
	struct esa_job a = t_job(W, T_PS_A, 7, JA), b = t_job(W, T_PS_B, 7, JB);

	esa_opts_default(&o);
	o.nvals = NV;
	o.slots = slots;
	o.max_jobs = 16;
	o.stale_ms = stale_ms;
	o.policy = policy;
	o.no_ps_copy = no_copy;
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
	    t_job_add(&self->e, JA, &a, self->err, sizeof(self->err)) ||
	    t_job_add(&self->e, JB, &b, self->err, sizeof(self->err))) {
		fprintf(stderr, "setup: %s\n", self->err);
		return -1;
	}
	return 0;
}

static int load(FIXTURE_DATA(esa) *self, __u8 policy, __u32 slots,
		__u32 stale_ms)
{
	return load_with(self, policy, slots, stale_ms, false);
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
			 __u8 flags, __be16 ipid, __u8 *buf)
{
	struct t_pkt p = t_data(&self->n, job, completer, seq, prio, sum, NV);
	struct esa_job j;

	if (esa_job_read(&self->e, job, &j))
		return -1;
	esa_stamp_reg(p.smac, j.reg);	/* whose members: for egress */
	p.ipid = ipid;		/* the broadcast's number: the switch's choice */
	p.df = 1;		/* everything the switch sends */
	p.saddr = t_ip(T_SW_IP);
	p.sport = ESA_DEFAULT_PORT;
	p.type = ESA_T_RESULT;
	p.flags = flags;
	p.rank = ESA_RANK_NONE;
	p.bitmap = esa_full_mask(W);
	return t_build(&p, buf);
}

/* A packet from rank `from` rewritten toward a PS: from the switch. */
static int expect_ps(FIXTURE_DATA(esa) *self, __u16 from_job, int from_rank,
		     const char *ps, const __u8 *ps_mac, __u8 type,
		     __u8 reason, __u8 flags, __u16 job, __u16 rank,
		     __u32 seq, __u8 prio, __u64 bitmap, const __s32 *vals,
		     __u8 *buf)
{
	struct t_pkt p = t_data(&self->n, from_job, from_rank, seq, prio, vals, NV);

	memcpy(p.dmac, ps_mac, 6);
	memcpy(p.smac, self->n.sw1_mac, 6);
	p.saddr = t_ip(T_SW_IP);
	p.sport = ESA_DEFAULT_PORT;
	p.ttl = 64;
	p.df = 1;		/* everything the switch sends */
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

/* ------------------------------------------------------------------ */
/* Golden packets: a table, one row per case                           */
/* ------------------------------------------------------------------ */

/*
 * A chunk of a case: seq itself, or the nth seq of the packet's (or
 * expectation's) job whose slot is the slot of chunk (slot_job, slot_seq):
 * two keys meeting in one slot.
 */
struct g_seq {
	__u32	seq;
	__u16	slot_job;
	__u32	slot_seq;
	__u8	nth;
};

#define SEQ(s)			{ .seq = (s) }
#define SLOT_OF(j, s)		{ .slot_job = (j), .slot_seq = (s) }
#define SLOT_OF_NTH(j, s, n)	{ .slot_job = (j), .slot_seq = (s), .nth = (n) }

/* What a step's packet must leave the switch as, byte for byte. */
enum { G_ANY, G_RESULT, G_TO_PS };

struct g_out {
	__u8	kind;
	__u8	flags;		/* the header's */
	/* G_TO_PS: the PS's address and MAC, then the header's fields */
	const char *ps;
	const __u8 *ps_mac;
	__u8	type, reason;
	__u16	job, rank;
	struct g_seq seq;	/* of job */
	__u8	prio;
	__u64	bitmap;		/* its values: the sum of these ranks' */
};

/* The sum of the step's chunk, its rank completing it. */
#define RESULT(fl)	{ .kind = G_RESULT, .flags = (fl) }
/* Rewritten from the switch toward PS p (A or B of the topology). */
#define TO_PS(p, ty, why, fl, j, r, q, pr, bm)				\
	{ .kind = G_TO_PS, .ps = T_PS_##p, .ps_mac = PS_MAC_##p,	\
	  .type = ESA_T_##ty, .reason = (why), .flags = (fl), .job = (j), \
	  .rank = (r), .seq = q, .prio = (pr), .bitmap = (bm) }
#define PS_MAC_A	t_ps_a_mac
#define PS_MAC_B	t_ps_b_mac

struct g_ctr {
	bool	on;
	__u16	job;
	int	ctr;		/* ESA_C_* */
	__u64	val;
};

#define C(j, name, v)	{ .on = true, .job = (j), .ctr = ESA_C_##name, .val = (v) }

/* The slot of chunk (job, at), and whichever of its fields are given. */
struct g_slot {
	bool	on;
	__u16	of_job;
	struct g_seq of;
	bool	c_state, c_job, c_seq, c_prio, c_bitmap, c_nranks, c_vals;
	__u8	state, prio, nranks;
	__u16	job;
	struct g_seq seq;	/* of job */
	__u64	bitmap;
	__u64	vals;		/* its sum: of these ranks' values */
};

#define SLOT(j, q)	.on = true, .of_job = (j), .of = q
#define STATE(x)	.c_state = true, .state = ESA_SLOT_##x
#define OWNER(j, q)	.c_job = true, .job = (j), .c_seq = true, .seq = q
#define OWNER_JOB(j)	.c_job = true, .job = (j)
#define PRIO(p)		.c_prio = true, .prio = (p)
#define BITMAP(b)	.c_bitmap = true, .bitmap = (b)
#define NRANKS(n)	.c_nranks = true, .nranks = (n)
#define VALS(m)		.c_vals = true, .vals = (m)

struct g_tomb {
	bool	on;
	__u16	job;
	struct g_seq seq;
	int	kind;
};

#define TOMB(j, q, k)	{ .on = true, .job = (j), .seq = q, .kind = ESA_TOMB_##k }

/*
 * One step: rank `rank` of `job` sends chunk `at` (to sw0, the workers'
 * port), or the job is deleted (del), or the slot of chunk `at` is aged
 * past the case's stale_ms (age: its stamp moved back, no waiting).  Then
 * what the switch must have done.
 */
struct g_step {
	__u16	job, rank;
	struct g_seq at;
	__u8	prio, flags;
	bool	del, age;
	int	verdict;
	struct g_out out;
	struct g_ctr ctr[4];
	struct g_slot slot;
	struct g_tomb tomb[2];
};

#define PKT(j, r, q, pr, fl)	.job = (j), .rank = (r), .at = q, .prio = (pr), .flags = (fl)
#define DEL(j)			.job = (j), .del = true
#define AGE(j, q)		.job = (j), .at = q, .age = true

/* Where chunk seq of job lands in the pool. */
struct g_place {
	bool	on;
	__u16	job;
	__u32	seq, slot;
};

#define PLACE(j, s, at)	{ .on = true, .job = (j), .seq = (s), .slot = (at) }

struct g_case {
	__u8	policy;
	__u32	stale_ms;
	/* what the ranks send instead of the fixture's values */
	void	(*values)(FIXTURE_DATA(esa) *self);
	/* what a result must carry, written out (else the ranks' sum) */
	void	(*want)(__s32 *vals);
	struct g_place place[3];
	struct g_step steps[8];
};

/* The seq chunk q of job stands for. */
static __u32 g_seq_of(FIXTURE_DATA(esa) *self, __u16 job, const struct g_seq *q)
{
	__u32 slot, s = 0;

	if (!q->slot_job)
		return q->seq;
	slot = t_slot_of(&self->e, q->slot_job, q->slot_seq);
	for (int n = 0; n <= q->nth; n++)
		s = t_seq_for_slot(&self->e, job, slot, n ? s + 1 : 0);
	return s;
}

/* The frame step st's packet (chunk seq) must have become. */
static int g_expect(FIXTURE_DATA(esa) *self, const struct g_case *c,
		    const struct g_step *st, __u32 seq, const struct t_run *r,
		    __u8 *buf)
{
	const struct g_out *o = &st->out;
	__s32 vals[NV];

	if (o->kind == G_RESULT) {
		if (c->want)
			c->want(vals);
		else
			partial(self, esa_full_mask(W), vals);
		return expect_result(self, st->job, seq, st->prio, st->rank, vals,
				     o->flags, t_ipid(r), buf);
	}
	return expect_ps(self, st->job, st->rank, o->ps, o->ps_mac, o->type,
			 o->reason, o->flags, o->job, o->rank,
			 g_seq_of(self, o->job, &o->seq), o->prio, o->bitmap,
			 partial(self, o->bitmap, vals), buf);
}

static void g_check_slot(struct __test_metadata *_metadata,
			 FIXTURE_DATA(esa) *self, const struct g_slot *w, int k)
{
	__u32 idx = t_slot_of(&self->e, w->of_job, g_seq_of(self, w->of_job, &w->of));
	struct esa_slot s;
	__s32 part[NV];
	__s64 sum[NV];

	ASSERT_EQ(0, t_slot(&self->e, idx, &s, sum));
	if (w->c_state)
		EXPECT_EQ(w->state, s.state) TH_LOG("step %d: slot %u", k, idx);
	if (w->c_job)
		EXPECT_EQ(w->job, s.job) TH_LOG("step %d: slot %u", k, idx);
	if (w->c_seq)
		EXPECT_EQ(g_seq_of(self, w->job, &w->seq), s.seq) TH_LOG("step %d", k);
	if (w->c_prio)
		EXPECT_EQ(w->prio, s.prio) TH_LOG("step %d", k);
	if (w->c_bitmap)
		EXPECT_EQ(w->bitmap, s.bitmap) TH_LOG("step %d", k);
	if (w->c_nranks)
		EXPECT_EQ(w->nranks, s.nranks) TH_LOG("step %d", k);
	if (!w->c_vals)
		return;
	partial(self, w->vals, part);
	for (int i = 0; i < NV; i++) {
		EXPECT_EQ(part[i], sum[i]) TH_LOG("step %d: value %d", k, i);
	}
}

/* After step k: its counters, slot and tombstones. */
static void g_check(struct __test_metadata *_metadata, FIXTURE_DATA(esa) *self,
		    const struct g_step *st, int k)
{
	for (int i = 0; i < 4 && st->ctr[i].on; i++) {
		const struct g_ctr *x = &st->ctr[i];

		EXPECT_EQ(x->val, t_ctr(&self->e, x->job, x->ctr))
			TH_LOG("step %d: job %u's %s", k, x->job, esa_counter_names[x->ctr]);
	}
	if (st->slot.on)
		g_check_slot(_metadata, self, &st->slot, k);
	for (int i = 0; i < 2 && st->tomb[i].on; i++) {
		const struct g_tomb *t = &st->tomb[i];

		EXPECT_EQ(t->kind, t_tomb(&self->e, t->job, g_seq_of(self, t->job, &t->seq)))
			TH_LOG("step %d: tombstone of job %u", k, t->job);
	}
}

/* Make the slot of chunk seq of job idle past stale_ms. */
static int g_age(FIXTURE_DATA(esa) *self, __u16 job, __u32 seq, __u32 stale_ms)
{
	__u32 idx = t_slot_of(&self->e, job, seq);
	struct esa_slot s;

	if (bpf_map_lookup_elem(self->e.slots_fd, &idx, &s))
		return -1;
	s.stamp_ns = esa_now_ns() - (stale_ms + 1) * 1000000ULL;
	return bpf_map_update_elem(self->e.slots_fd, &idx, &s, BPF_EXIST);
}

static void g_step(struct __test_metadata *_metadata, FIXTURE_DATA(esa) *self,
		   const struct g_case *c, const struct g_step *st, int k)
{
	__u32 seq = g_seq_of(self, st->job, &st->at);
	__u8 want[2048];
	struct t_run r;
	int len;

	if (st->del) {
		ASSERT_EQ(0, esa_job_del(&self->e, st->job));
	} else if (st->age) {
		ASSERT_EQ(0, g_age(self, st->job, seq, c->stale_ms));
	} else {
		SEND(st->job, st->rank, seq, st->prio, st->flags, &r);
		EXPECT_EQ(st->verdict, r.verdict) TH_LOG("step %d", k);
		EXPECT_EQ(0, r.metalen) TH_LOG("step %d", k);
		if (st->out.kind != G_ANY) {
			len = g_expect(self, c, st, seq, &r, want);
			EXPECT_BYTES(&r, want, len);
		}
	}
	g_check(_metadata, self, st, k);
}

FIXTURE(golden) {
	FIXTURE_DATA(esa) s;
};

FIXTURE_VARIANT(golden) {
	const struct g_case *c;
};

FIXTURE_SETUP(golden)
{
	fixture_init(_metadata, &self->s);
}

FIXTURE_TEARDOWN(golden)
{
	esa_close(&self->s.e);
}

/* The case of this variant, from a switch of its own with jobs A and B. */
TEST_F(golden, packets)
{
	const struct g_case *c = variant->c;
	FIXTURE_DATA(esa) *s = &self->s;

	ASSERT_EQ(0, load(s, c->policy, 64, c->stale_ms));
	if (c->values)
		c->values(s);
	for (int i = 0; i < 3 && c->place[i].on; i++)
		EXPECT_EQ(c->place[i].slot,
			  t_slot_of(&s->e, c->place[i].job, c->place[i].seq));
	for (int k = 0; k < 8 && c->steps[k].job; k++)
		g_step(_metadata, s, c, &c->steps[k], k);
}

#define GOLDEN(name_, ...)						\
	static const struct g_case g_##name_ = { __VA_ARGS__ };	\
	FIXTURE_VARIANT_ADD(golden, name_) { .c = &g_##name_ }

/* Rule 1: a free slot is claimed for (job, seq) with the packet's values. */
GOLDEN(claim_free_slot,
	.steps = {
		{ PKT(JA, 0, SEQ(100), 2, 0), .verdict = XDP_DROP,
		  .slot = { SLOT(JA, SEQ(100)), STATE(BUSY), OWNER(JA, SEQ(100)),
			    PRIO(2), BITMAP(1), NRANKS(1), VALS(0x1) },
		  .ctr = { C(JA, RX, 1), C(JA, CLAIMED, 1), C(JA, LEARN, 1) } },
	});

/* Rule 2: a new rank of the owning key is added and its bit set. */
GOLDEN(aggregate_adds_new_rank,
	.steps = {
		{ PKT(JA, 2, SEQ(7), 1, 0), .verdict = XDP_DROP },
		{ PKT(JA, 0, SEQ(7), 1, 0), .verdict = XDP_DROP,
		  .slot = { SLOT(JA, SEQ(7)), STATE(BUSY), BITMAP(0x5), NRANKS(2),
			    VALS(0x5) },
		  .ctr = { C(JA, AGGREGATED, 1) } },
	});

/* Rule 2: the last rank completes: the sum goes to the job's devmap (one
 * copy per member, addressed by egress), the slot is free at once, and
 * immediately claimable by another key. */
GOLDEN(complete_multicasts_and_frees_at_once,
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
	});

/* Rule 2: a rank already counted is a duplicate, never added twice. */
GOLDEN(duplicate_is_never_added,
	.steps = {
		{ PKT(JA, 1, SEQ(9), 0, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(9), 0, 0), .verdict = XDP_DROP,
		  .slot = { SLOT(JA, SEQ(9)), BITMAP(2), NRANKS(1), VALS(0x2) },
		  .ctr = { C(JA, DUPLICATE, 1) } },
	});

/* Rule 2: a copy arriving after the result went out starts nothing. */
GOLDEN(late_duplicate_after_completion_dropped,
	.steps = {
		{ PKT(JA, 0, SEQ(11), 0, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(11), 0, 0), .verdict = XDP_DROP },
		{ PKT(JA, 2, SEQ(11), 0, 0), .verdict = XDP_REDIRECT },
		{ PKT(JA, 1, SEQ(11), 0, 0), .verdict = XDP_DROP,
		  .slot = { SLOT(JA, SEQ(11)), STATE(FREE) },
		  .ctr = { C(JA, DUPLICATE, 1), C(JA, CLAIMED, 1) } },
	});

/* Rule 6: a resend after the result went out is answered by the PS, told
 * that the switch completed the chunk (DONE: fetch it if you lack it). */
GOLDEN(resend_after_completion_goes_to_ps,
	.steps = {
		{ PKT(JA, 0, SEQ(12), 4, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(12), 4, 0), .verdict = XDP_DROP },
		{ PKT(JA, 2, SEQ(12), 4, 0), .verdict = XDP_REDIRECT },
		{ PKT(JA, 0, SEQ(12), 4, ESA_F_RESEND), .verdict = XDP_REDIRECT,
		  .out = TO_PS(A, COLLISION, ESA_R_DONE, ESA_F_RESEND, JA, 0,
			       SEQ(12), 4, 1),
		  .ctr = { C(JA, RESEND_FWD, 1), C(JA, PS_TX, 1) } },
	});

/* Rule 3: a higher priority evicts a lower one's partial to the owner's PS,
 * in place: the packet leaves carrying the partial, the slot keeps its
 * values. */
GOLDEN(preempt_sends_partial_to_owner_ps,
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
	});

/* Rule 4: an owner of equal or higher priority keeps the slot; the packet
 * goes to its own PS unaggregated (and the chunk's next packet follows it
 * there, rule 5). */
GOLDEN(collision_goes_to_own_ps,
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
	});

/* Rule 5: once evicted, a chunk's later packets follow it to the PS: they
 * neither restart it in the switch nor evict anyone, even once the slot is
 * free again. */
GOLDEN(evicted_chunk_follows_to_ps,
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
	});

/* Rule 5: a chunk that collided never starts a partial later either. */
GOLDEN(collided_chunk_never_restarts,
	.steps = {
		{ PKT(JA, 0, SEQ(50), 5, 0), .verdict = XDP_DROP },
		{ PKT(JB, 0, SLOT_OF(JA, 50), 1, 0), .verdict = XDP_REDIRECT },
		{ PKT(JA, 1, SEQ(50), 5, 0), .verdict = XDP_DROP },
		{ PKT(JA, 2, SEQ(50), 5, 0), .verdict = XDP_REDIRECT },
		{ PKT(JB, 1, SLOT_OF(JA, 50), 1, 0), .verdict = XDP_REDIRECT,
		  .slot = { SLOT(JA, SEQ(50)), STATE(FREE) },
		  .ctr = { C(JB, CLAIMED, 0), C(JB, TOMB_FWD, 1) } },
	});

/* Rule 6: a resend flushes the partial still holding its chunk; the next
 * resend finds no partial: straight to the PS. */
GOLDEN(resend_flushes_partial,
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
	});

/* Rule 6: a resend of the one missing rank completes the chunk. */
GOLDEN(resend_of_missing_rank_completes,
	.steps = {
		{ PKT(JA, 0, SEQ(61), 2, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(61), 2, 0), .verdict = XDP_DROP },
		{ PKT(JA, 2, SEQ(61), 2, ESA_F_RESEND), .verdict = XDP_REDIRECT,
		  .out = RESULT(0), .ctr = { C(JA, COMPLETED, 1) } },
	});

/* Rule 6: a resend of a rank in a young partial (a rank joined it within the
 * ageing limit) is a late result: dropped (resend_held), the partial waits
 * for its last rank; once idle past the limit, a resend flushes it. */
GOLDEN(resend_waits_for_a_young_partial,
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
	});

/* Rule 6: a resend of a new rank joins a young partial, as its first send
 * would have; the last rank completes the chunk in the switch. */
GOLDEN(resend_of_new_rank_joins_a_young_partial,
	.stale_ms = 1000,
	.steps = {
		{ PKT(JA, 0, SEQ(64), 2, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(64), 2, ESA_F_RESEND), .verdict = XDP_DROP,
		  .slot = { SLOT(JA, SEQ(64)), STATE(BUSY), BITMAP(0x3), VALS(0x3) },
		  .ctr = { C(JA, AGGREGATED, 1), C(JA, RESEND_FLUSH, 0) } },
		{ PKT(JA, 2, SEQ(64), 2, 0), .verdict = XDP_REDIRECT,
		  .out = RESULT(0), .ctr = { C(JA, COMPLETED, 1) } },
	});

/* Rule 6: a resend with no partial in the switch goes to the PS. */
GOLDEN(resend_without_partial_goes_to_ps,
	.steps = {
		{ PKT(JA, 2, SEQ(62), 0, ESA_F_RESEND), .verdict = XDP_REDIRECT,
		  .out = TO_PS(A, COLLISION, ESA_R_RESEND, ESA_F_RESEND, JA, 2,
			       SEQ(62), 0, 4),
		  .slot = { SLOT(JA, SEQ(62)), STATE(FREE) },
		  .ctr = { C(JA, CLAIMED, 0) } },
	});

/* Element 3 leaves int32; element 4 sums to INT32_MIN exactly. */
static void vals_overflow(FIXTURE_DATA(esa) *self)
{
	self->v[0][3] = INT32_MAX;
	self->v[1][3] = 1;
	self->v[2][3] = 0;
	self->v[0][4] = INT32_MIN;
	self->v[1][4] = 0;
	self->v[2][4] = 0;
}

/* Rule 7: a sum that leaves int32 is flagged, in results... */
GOLDEN(overflow_in_result_is_flagged,
	.values = vals_overflow,
	.steps = {
		{ PKT(JA, 0, SEQ(70), 0, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(70), 0, 0), .verdict = XDP_DROP },
		{ PKT(JA, 2, SEQ(70), 0, 0), .verdict = XDP_REDIRECT,
		  .out = RESULT(ESA_F_OVERFLOW), .ctr = { C(JA, OVERFLOW, 1) } },
	});

static void vals_int32_min(FIXTURE_DATA(esa) *self)
{
	for (int k = 0; k < W; k++)
		for (int i = 0; i < NV; i++)
			self->v[k][i] = k == 0 ? INT32_MIN : 0;
}

/* ... where INT32_MIN alone is exact: no flag. */
GOLDEN(int32_min_is_no_overflow,
	.values = vals_int32_min,
	.steps = {
		{ PKT(JA, 0, SEQ(71), 0, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(71), 0, 0), .verdict = XDP_DROP },
		{ PKT(JA, 2, SEQ(71), 0, 0), .verdict = XDP_REDIRECT,
		  .out = RESULT(0), .ctr = { C(JA, OVERFLOW, 0) } },
	});

static void vals_partial_overflow(FIXTURE_DATA(esa) *self)
{
	self->v[0][0] = INT32_MIN;
	self->v[1][0] = -1;
}

/* Rule 7: ...and in partials. */
GOLDEN(overflow_in_partial_is_flagged,
	.values = vals_partial_overflow,
	.steps = {
		{ PKT(JA, 0, SEQ(80), 0, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(80), 0, 0), .verdict = XDP_DROP },
		{ PKT(JB, 0, SLOT_OF(JA, 80), 1, 0), .verdict = XDP_REDIRECT,
		  .out = TO_PS(A, PARTIAL, ESA_R_PREEMPT, ESA_F_OVERFLOW, JA,
			       ESA_RANK_NONE, SEQ(80), 0, 0x3),
		  .ctr = { C(JA, OVERFLOW, 1) } },
	});

static void vals_extreme(FIXTURE_DATA(esa) *self)
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

/* Sums of large negative and positive values stay exact. */
GOLDEN(extreme_values_sum_exactly,
	.values = vals_extreme, .want = want_extreme,
	.steps = {
		{ PKT(JA, 0, SEQ(90), 0, 0), .verdict = XDP_DROP },
		{ PKT(JA, 1, SEQ(90), 0, 0), .verdict = XDP_DROP },
		{ PKT(JA, 2, SEQ(90), 0, 0), .verdict = XDP_REDIRECT,
		  .out = RESULT(0) },
	});

/* Rule 1: a slot held by a deleted job is free, without any scan (the
 * lowest priority still wins it); the deleted job's packets are dropped
 * and counted. */
GOLDEN(deleted_job_slot_is_free,
	.steps = {
		{ PKT(JA, 0, SEQ(100), 7, 0), .verdict = XDP_DROP },
		{ DEL(JA) },
		{ PKT(JB, 0, SLOT_OF(JA, 100), 0, 0), .verdict = XDP_DROP,
		  .slot = { SLOT(JA, SEQ(100)), OWNER_JOB(JB) },
		  .ctr = { C(JA, RECLAIMED, 1), C(JB, CLAIMED, 1) } },
		{ PKT(JA, 1, SEQ(100), 7, 0), .verdict = XDP_DROP,
		  .ctr = { C(JA, DROP_JOB, 1) } },
	});

/* A partial idle past the ageing limit goes to its PS to make room; one not
 * yet idle keeps its slot. */
GOLDEN(idle_partial_ages_out,
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
	});

/* Policy switchml: each job aggregates in its own region only. */
GOLDEN(switchml_regions_are_private,
	.policy = ESA_POLICY_SWITCHML,
	.place = { PLACE(JA, 5, 5), PLACE(JB, 5, 32 + 5), PLACE(JA, 32 + 5, 5) },
	.steps = {
		{ PKT(JA, 0, SEQ(5), 0, 0), .verdict = XDP_DROP },
		{ PKT(JB, 0, SEQ(5), 7, 0), .verdict = XDP_DROP },
		/* same slot, an older chunk there: collides */
		{ PKT(JA, 0, SEQ(37), 0, 0), .verdict = XDP_REDIRECT,
		  .slot = { SLOT(JA, SEQ(5)), OWNER(JA, SEQ(5)) },
		  .ctr = { C(JA, COLLISION, 1), C(JB, PREEMPT_CAUSED, 0) } },
	});

/* Rule 1: a lease that ran out frees the job's slots; its next packet
 * renews the lease under a new generation. */
TEST_F(esa, expired_lease_frees_slots)
{
	struct esa_job j;
	struct t_run r;
	__u32 idx, sb, gen;

	LOAD(ESA_POLICY_ESA, 64, 0);
	j = t_job(W, T_PS_A, 7, 3);
	j.lease_ms = ESA_LEASE_MS_MIN - 1;	/* would expire live jobs */
	EXPECT_EQ(-EINVAL, esa_job_add(&self->e, 3, &j, self->err, sizeof(self->err)));
	EXPECT_NE(NULL, strstr(self->err, "lease"));
	j.lease_ms = ESA_LEASE_MS_MIN;
	ASSERT_EQ(0, t_job_add(&self->e, 3, &j, self->err, sizeof(self->err)));
	gen = esa_job_gen(&j);
	EXPECT_EQ(gen, j.reg);
	SEND(3, 0, 110, 7, 0, &r);
	idx = t_slot_of(&self->e, 3, 110);
	usleep((ESA_LEASE_MS_MIN + 150) * 1000);
	ASSERT_EQ(0, esa_job_read(&self->e, 3, &j));
	EXPECT_TRUE(esa_job_expired(&j));
	sb = t_seq_for_slot(&self->e, JB, idx, 0);
	SEND(JB, 0, sb, 0, 0, &r);
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, 3, ESA_C_RECLAIMED));
	SEND(3, 1, 110, 7, 0, &r);		/* renews: new generation */
	ASSERT_EQ(0, esa_job_read(&self->e, 3, &j));
	EXPECT_EQ(gen + 1, esa_job_gen(&j));
	EXPECT_EQ(gen, j.reg);			/* the same registration */
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
	esa_deliver_clear(&self->e, JA);
	ASSERT_EQ(0, t_job_add(&self->e, JA, &j, self->err, sizeof(self->err)));
	SEND(JA, 1, 120, 1, 0, &r);		/* a new chunk, not rank 1 of the old */
	EXPECT_EQ(XDP_DROP, r.verdict);
	ASSERT_EQ(0, t_slot(&self->e, idx, &s, NULL));
	EXPECT_EQ(esa_job_gen(&j), s.gen);
	EXPECT_EQ(2, s.bitmap);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_RECLAIMED));
}

/*
 * Map mode: the control plane rewrites a job's entry while packets read it
 * (a re-add after a delete); it clears the registration first, fills the
 * fields, sets the new registration, then the state.  A packet that finds
 * the registration cleared, or changed by the end of its admission, read a
 * half-written entry: dropped as of no job, never admitted with the
 * fields of one registration and the number of another.  Here the entry as
 * a packet racing a re-add can find it: active, registration cleared.
 */
TEST_F(esa, half_rewritten_job_entry_admits_nothing)
{
	struct t_run r;
	__u32 reg;

	LOAD(ESA_POLICY_ESA, 64, 0);
	reg = self->e.jobs[JA].reg;
	__atomic_store_n(&self->e.jobs[JA].reg, 0, __ATOMIC_RELEASE);
	SEND(JA, 0, 125, 1, 0, &r);
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_DROP_JOB));
	EXPECT_EQ(0, t_ctr(&self->e, JA, ESA_C_CLAIMED));
	EXPECT_EQ(0, t_ctr(&self->e, JA, ESA_C_LEARN));
	__atomic_store_n(&self->e.jobs[JA].reg, reg, __ATOMIC_RELEASE);
	SEND(JA, 0, 125, 1, 0, &r);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_CLAIMED));
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
		[T_VER]	   = { "version 1", ESA_C_DROP_VERSION, true },
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
		case T_VER: p.version = ESA_VERSION - 1; break;	/* the last one */
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

/*
 * Non-ESA traffic passes to the stack, byte for byte; so does UDP to the
 * ESA port that the box forwards (loaded without addr, the switch takes
 * only what is addressed to the box itself).
 */
TEST_F(esa, other_traffic_passes_untouched)
{
	struct iphdr *ip;
	__u8 buf[2048];
	struct t_pkt p;
	struct t_run r;
	int len;

	LOAD(ESA_POLICY_ESA, 64, 0);
	p = t_data(&self->n, JA, 0, 160, 0, self->v[0], NV);
	for (int t = 0; t < 6; t++) {
		len = t_build(&p, buf);
		ip = (void *)(buf + sizeof(struct ethhdr));
		switch (t) {
		case 0: buf[12] = 0x08; buf[13] = 0x06; break;	/* ARP */
		case 1: buf[12] = 0x86; buf[13] = 0xdd; break;	/* IPv6 */
		case 2: buf[sizeof(struct ethhdr) + 9] = IPPROTO_TCP; break;
		case 3: buf[T_HDRS - 6] ^= 1; break;		/* other port */
		case 4:						/* transit */
		case 5:			/* transit, first fragment */
			ip->daddr = t_ip(T_PS_A);
			ip->frag_off = t == 5 ? htons(0x2000) : 0;
			ip->check = 0;
			ip->check = t_csum(ip, sizeof(*ip));
			break;
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
	if (t_run(self->e.egress_test_fd, r->pkt, r->len, ifindex, NULL, 0, out))
		return -1;
	if (out->verdict == XDP_PASS && t_parse(out->pkt, out->len, got, vals, NV))
		return -1;
	return out->verdict;
}

/* The copy got must be the sum, addressed to worker rank of job. */
static void expect_worker_copy(struct __test_metadata *_metadata,
			       FIXTURE_DATA(esa) *self, const struct t_run *w,
			       const struct t_pkt *got, const __s32 *vals,
			       int rank, __u16 job)
{
	__u8 mac[6];

	EXPECT_EQ(t_worker_ip(rank), got->daddr);
	EXPECT_EQ(t_ip(T_SW_IP), got->saddr);
	EXPECT_EQ(T_WORKER_PORT + job, got->dport);
	EXPECT_EQ(ESA_DEFAULT_PORT, got->sport);
	EXPECT_EQ(1, got->df);
	EXPECT_EQ(0, got->resv);
	EXPECT_EQ(0, t_csum(w->pkt + sizeof(struct ethhdr), sizeof(struct iphdr)));
	t_worker_mac(rank, mac);
	EXPECT_EQ(0, memcmp(got->dmac, mac, 6));
	EXPECT_EQ(0, memcmp(got->smac, self->n.sw0_mac, 6));
	for (int i = 0; i < NV; i++)
		EXPECT_EQ(self->sum[i], vals[i]);
}

/*
 * One copy per member, through the job's devmap: on each port the copies
 * come in member order, and egress addresses each to its member.  All three
 * ranks of job A sit behind sw0, its PS behind sw1.
 */
TEST_F(esa, egress_addresses_every_member)
{
	struct esa_fanout f;
	struct t_run r, w;
	struct t_pkt got;
	__s32 vals[NV];

	LOAD(ESA_POLICY_ESA, 64, 0);
	ASSERT_EQ(0, esa_fanout_read(&self->e, JA, &f));
	EXPECT_EQ(W + 1, f.n);
	for (int k = 0; k < W; k++)
		SEND(JA, k, 170, 0, 0, &r);
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	for (int k = 0; k < W; k++) {
		ASSERT_EQ(XDP_PASS, egress(self, &r, self->n.sw0, &w, &got, vals));
		expect_worker_copy(_metadata, self, &w, &got, vals, k, JA);
	}
	/* A fourth copy on sw0 has no member: dropped and counted. */
	EXPECT_EQ(XDP_DROP, egress(self, &r, self->n.sw0, &w, &got, vals));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_COPY_DROP));

	ASSERT_EQ(XDP_PASS, egress(self, &r, self->n.sw1, &w, &got, vals));
	EXPECT_EQ(t_ip(T_PS_A), got.daddr);
	EXPECT_EQ(T_PS_PORT, got.dport);
	EXPECT_EQ(0, memcmp(got.dmac, t_ps_a_mac, 6));
	EXPECT_EQ(0, memcmp(got.smac, self->n.sw1_mac, 6));
	EXPECT_EQ(0, t_csum(w.pkt + sizeof(struct ethhdr), sizeof(struct iphdr)));
	EXPECT_EQ(XDP_DROP, egress(self, &r, self->n.sw1, &w, &got, vals));
	EXPECT_EQ(W, t_ctr(&self->e, JA, ESA_C_RESULT_TX));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_PS_COPY_TX));

	/* The next result (another broadcast) starts afresh on every port. */
	for (int k = 0; k < W; k++)
		SEND(JA, k, 171, 0, 0, &r);
	ASSERT_EQ(XDP_PASS, egress(self, &r, self->n.sw0, &w, &got, vals));
	EXPECT_EQ(t_worker_ip(0), got.daddr);
}

/*
 * A copy addresses itself to the members of the registration whose sum it
 * carries: the job registered again (other hosts) between the ingress and
 * the port's flush, its copies of the old sum are dropped and counted,
 * never sent to the new registration's hosts.
 */
TEST_F(esa, egress_copies_of_an_old_registration_dropped)
{
	struct esa_job j = t_job(W, T_PS_A, 7, JA);
	struct esa_registry reg;
	struct t_run r, w;
	struct t_pkt got;
	__s32 vals[NV];

	LOAD(ESA_POLICY_ESA, 64, 0);
	for (int k = 0; k < W; k++)
		SEND(JA, k, 173, 0, 0, &r);
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	ASSERT_EQ(0, esa_job_del(&self->e, JA));
	esa_deliver_clear(&self->e, JA);
	for (int k = 0; k < W; k++)
		j.rank[k].ip = t_worker_ip(k + 3);
	ASSERT_EQ(0, t_registry(&self->e, &reg));
	ASSERT_EQ(0, t_job_add_macs(&reg, JA, &j)) TH_LOG("%s", reg.err);
	esa_registry_close(&reg);
	EXPECT_EQ(XDP_DROP, egress(self, &r, self->n.sw0, &w, &got, vals));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_COPY_DROP));
	EXPECT_EQ(0, t_ctr(&self->e, JA, ESA_C_RESULT_TX));
}

/*
 * Egress keeps, per CPU and port, which copy of a broadcast comes next:
 * two ports whose ifindexes are 4096 apart keep theirs apart.  Job 6's
 * ranks are behind sw0, its PS behind a port of index sw0 + 4096; the
 * copies, interleaved across the two ports, each reach their member.
 */
TEST_F(esa, egress_ports_keep_their_own_count)
{
	struct esa_job j = t_job(W, "10.0.2.2", 7, 6);
	int alias = self->n.sw0 + 4096;
	struct t_run r, w;
	struct t_pkt got;
	__s32 vals[NV];

	LOAD(ESA_POLICY_ESA, 64, 0);
	ASSERT_EQ(0, t_sh("set -e; exec >/dev/null 2>&1\n"
			  "ip link add swa index %d type veth peer name ha\n"
			  "ip link set swa up; ip link set ha up\n"
			  "ip addr add 10.0.2.1/24 dev swa\n"
			  "ip neigh add 10.0.2.2 lladdr 02:00:00:00:02:02 nud permanent dev swa\n",
			  alias));
	ASSERT_EQ(0, t_port_register(&self->e, alias));
	ASSERT_EQ(0, t_job_add(&self->e, 6, &j, self->err, sizeof(self->err)))
		TH_LOG("%s", self->err);
	for (int k = 0; k < W; k++)
		SEND(6, k, 174, 0, 0, &r);
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	for (int k = 0; k < W; k++) {
		ASSERT_EQ(XDP_PASS, egress(self, &r, self->n.sw0, &w, &got, vals));
		EXPECT_EQ(t_worker_ip(k), got.daddr) TH_LOG("copy %d on sw0", k);
		if (k == 0) {
			ASSERT_EQ(XDP_PASS, egress(self, &r, alias, &w, &got, vals));
			EXPECT_EQ(t_ip("10.0.2.2"), got.daddr);
		}
	}
	EXPECT_EQ(0, t_ctr(&self->e, 6, ESA_C_COPY_DROP));
}

/* A job's workers and its PS behind one port each get their copy. */
TEST_F(esa, egress_workers_and_ps_share_a_port)
{
	struct esa_job j = t_job(W, T_PS_W, 7, 6);
	struct t_run r, w;
	struct t_pkt got;
	__s32 vals[NV];

	LOAD(ESA_POLICY_ESA, 64, 0);
	ASSERT_EQ(0, t_job_add(&self->e, 6, &j, self->err, sizeof(self->err)));
	for (int k = 0; k < W; k++)
		SEND(6, k, 3, 0, 0, &r);
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	for (int k = 0; k < W; k++) {
		ASSERT_EQ(XDP_PASS, egress(self, &r, self->n.sw0, &w, &got, vals));
		EXPECT_EQ(t_worker_ip(k), got.daddr);
	}
	ASSERT_EQ(XDP_PASS, egress(self, &r, self->n.sw0, &w, &got, vals));
	EXPECT_EQ(t_ip(T_PS_W), got.daddr);
	EXPECT_EQ(0, memcmp(got.dmac, t_ps_w_mac, 6));
	EXPECT_EQ(XDP_DROP, egress(self, &r, self->n.sw0, &w, &got, vals));
	EXPECT_EQ(XDP_DROP, egress(self, &r, self->n.sw1, &w, &got, vals));
}

/* A unicast frame (here to a PS) goes through the port devmap with its
 * egress program, untouched by it. */
TEST_F(esa, unicast_passes_egress_untouched)
{
	struct t_run r, w;
	struct t_pkt got;
	__s32 vals[NV];

	LOAD(ESA_POLICY_ESA, 64, 0);
	SEND(JA, 0, 172, 0, ESA_F_RESEND, &r);
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	EXPECT_EQ(0, r.metalen);
	ASSERT_EQ(XDP_PASS, egress(self, &r, self->n.sw1, &w, &got, vals));
	EXPECT_EQ(r.len, w.len);
	EXPECT_EQ(0, memcmp(r.pkt, w.pkt, r.len));
}

/*
 * A rank lives where it is bound: its port from the registration, its MAC
 * learnt from its first packet.  A packet carrying its address from another
 * port, or from another MAC on its port, is dropped (drop_place) and moves
 * nothing, whatever it would have done to the slot.
 */
TEST_F(esa, rank_bound_to_its_port_and_mac)
{
	struct esa_bind b;
	struct t_pkt p;
	struct t_run r;

	LOAD(ESA_POLICY_ESA, 64, 0);
	ASSERT_EQ(0, esa_bind_read(&self->e, JA, 0, &b));
	EXPECT_EQ(ESA_BIND_PORT, b.word & 0xffffffff);
	EXPECT_EQ(self->n.sw0, (int)b.ifindex);

	/* rank 0's first packet, from its port: the MAC is learnt, once */
	SEND(JA, 0, 180, 0, 0, &r);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_LEARN));
	ASSERT_EQ(0, esa_bind_read(&self->e, JA, 0, &b));
	EXPECT_EQ(ESA_BIND_PORT | ESA_BIND_MAC, b.word & 0xffffffff);

	/* the same rank from another port: dropped, not aggregated */
	p = t_data(&self->n, JA, 0, 180, 0, self->v[0], NV);
	p.flags = ESA_F_RESEND;		/* would flush the partial */
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw1, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	/* ... and from another MAC on its port */
	p.smac[5] ^= 0x40;
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(2, t_ctr(&self->e, JA, ESA_C_DROP_PLACE));
	EXPECT_EQ(0, t_ctr(&self->e, JA, ESA_C_RESEND_FLUSH));
	/* rank 1's first packet from another port binds nothing: its port
	 * came with the registration */
	p = t_data(&self->n, JA, 1, 180, 0, self->v[1], NV);
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw1, &r));
	EXPECT_EQ(3, t_ctr(&self->e, JA, ESA_C_DROP_PLACE));
	EXPECT_EQ(0, t_ctr(&self->e, JA, ESA_C_AGGREGATED));

	/* a forged first packet of rank 2 from another MAC binds it there
	 * (the first packet wins: give MACs at registration where that
	 * matters); the real rank 2 is then refused, and nothing re-learns */
	p = t_data(&self->n, JA, 2, 181, 0, self->v[2], NV);
	p.smac[5] ^= 0x40;
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	SEND(JA, 2, 182, 0, 0, &r);
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(4, t_ctr(&self->e, JA, ESA_C_DROP_PLACE));
	EXPECT_EQ(2, t_ctr(&self->e, JA, ESA_C_LEARN));
}

/* A MAC given at registration is checked from the first packet on. */
TEST_F(esa, given_mac_checked_from_the_first_packet)
{
	struct esa_job j = t_job(W, T_PS_A, 7, 7);
	struct esa_place pl[ESA_PLACES] = {};
	struct t_pkt p;
	struct t_run r;

	LOAD(ESA_POLICY_ESA, 64, 0);
	ASSERT_EQ(0, esa_places_resolve(&self->e, &j, pl, self->err, sizeof(self->err)));
	for (int k = 0; k < W; k++) {
		t_worker_mac(k, pl[k].mac);
		pl[k].have_mac = true;
	}
	ASSERT_EQ(0, esa_binds_stage(&self->e, 7, &j, pl, self->err, sizeof(self->err)));
	/* staged (registration not yet made): packets are refused as the
	 * job's, and nothing can be learnt into the staged bindings */
	p = t_data(&self->n, 7, 0, 1, 0, self->v[0], NV);
	p.smac[5] ^= 0x40;
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	EXPECT_EQ(1, t_ctr(&self->e, 7, ESA_C_DROP_JOB));
	ASSERT_EQ(0, esa_job_add(&self->e, 7, &j, self->err, sizeof(self->err)));
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, 7, ESA_C_DROP_PLACE));	/* staged: checked */
	ASSERT_EQ(0, esa_deliver_set(&self->e, 7, &j, pl, self->err, sizeof(self->err)));
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	EXPECT_EQ(2, t_ctr(&self->e, 7, ESA_C_DROP_PLACE));
	SEND(7, 0, 2, 0, 0, &r);
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, 7, ESA_C_CLAIMED));
	EXPECT_EQ(0, t_ctr(&self->e, 7, ESA_C_LEARN));
}

/* A job of one rank: its packet is its sum, sent to its members at once. */
TEST_F(esa, one_rank_job_completes_at_once)
{
	struct esa_job j = t_job(1, T_PS_A, 7, 8);
	struct t_run r, w;
	struct t_pkt got;
	__s32 vals[NV];

	LOAD(ESA_POLICY_ESA, 64, 0);
	ASSERT_EQ(0, t_job_add(&self->e, 8, &j, self->err, sizeof(self->err)));
	for (__u32 seq = 0; seq < 3; seq++) {
		SEND(8, 0, seq, 0, 0, &r);
		ASSERT_EQ(XDP_REDIRECT, r.verdict);
		ASSERT_EQ(XDP_PASS, egress(self, &r, self->n.sw0, &w, &got, vals));
		EXPECT_EQ(ESA_T_RESULT, got.type);
		EXPECT_EQ(1, got.bitmap);
		EXPECT_EQ(ESA_RANK_NONE, got.rank);
		EXPECT_EQ(seq, got.seq);
		EXPECT_EQ(t_worker_ip(0), got.daddr);
		for (int i = 0; i < NV; i++)
			EXPECT_EQ(self->v[0][i], vals[i]);
	}
	EXPECT_EQ(3, t_ctr(&self->e, 8, ESA_C_COMPLETED));
	EXPECT_EQ(0, t_ctr(&self->e, 8, ESA_C_CLAIMED));
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
	ASSERT_EQ(0, t_job_add(&self->e, 4, &j, self->err, sizeof(self->err)));
	SEND(4, 0, 190, 0, ESA_F_RESEND, &r);
	EXPECT_EQ(XDP_PASS, r.verdict);
	ip = (const void *)(r.pkt + sizeof(struct ethhdr));
	EXPECT_EQ(t_ip(T_PS_NONEIGH), ip->daddr);
	EXPECT_EQ(t_worker_ip(0), ip->saddr);	/* the stack forwards it */
	EXPECT_EQ(1, t_ctr(&self->e, 4, ESA_C_PS_STACK));

	/* A completion whose PS copy cannot be made goes whole to the PS. */
	for (int k = 0; k < W; k++)
		SEND(4, k, 191, 0, 0, &r);
	EXPECT_EQ(XDP_PASS, r.verdict);
	h = (const void *)(r.pkt + T_HDRS);
	EXPECT_EQ(ESA_T_PARTIAL, h->type);
	EXPECT_EQ(ESA_R_DELIVER, h->reason);
	EXPECT_EQ(esa_full_mask(W), be64toh(h->bitmap));
	EXPECT_EQ(1, t_ctr(&self->e, 4, ESA_C_FANOUT_MISS));

	/* no route: the registration is refused, and a job registered
	 * behind esactl's back has its packets dropped and counted */
	j = t_job(W, T_PS_UNREACH, 7, 5);
	EXPECT_NE(0, t_job_add(&self->e, 5, &j, self->err, sizeof(self->err)));
	EXPECT_NE(NULL, strstr(self->err, "no route"));
	ASSERT_EQ(0, esa_job_add(&self->e, 5, &j, self->err, sizeof(self->err)));
	SEND(5, 0, 192, 0, ESA_F_RESEND, &r);
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, 5, ESA_C_DROP_NOROUTE));
}

/*
 * A route or a port whose MTU fell below the packets' size since the job
 * was registered (esactl refuses them then): what the kernel would not
 * send is counted drop_mtu, never drop_noroute, and never silently.  To
 * the PS: the FIB says the packet needs fragmenting.  The copies of a sum:
 * the kernel's broadcast skips a port whose MTU is too small, so each
 * member behind it counts.
 */
TEST_F(esa, packets_above_the_mtu_are_counted)
{
	struct t_run r;

	LOAD(ESA_POLICY_ESA, 64, 0);
	ASSERT_EQ(0, t_sh("ip route add " T_PS_A "/32 dev sw1 mtu lock 100"));
	SEND(JA, 0, 230, 0, ESA_F_RESEND, &r);
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_DROP_MTU));
	EXPECT_EQ(0, t_ctr(&self->e, JA, ESA_C_DROP_NOROUTE));
	ASSERT_EQ(0, t_sh("ip route del " T_PS_A "/32"));

	/* job B's three ranks are behind sw0, its PS behind sw1 */
	ASSERT_EQ(0, t_sh("ip link set sw0 mtu 150"));
	for (int k = 0; k < W; k++)
		SEND(JB, k, 231, 0, 0, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JB, ESA_C_COMPLETED));
	EXPECT_EQ(W, t_ctr(&self->e, JB, ESA_C_DROP_MTU));
	ASSERT_EQ(0, t_sh("ip link set sw0 mtu 1500"));
	for (int k = 0; k < W; k++)
		SEND(JB, k, 232, 0, 0, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	EXPECT_EQ(W, t_ctr(&self->e, JB, ESA_C_DROP_MTU));
}

/*
 * The route to a PS is the FIB's answer, cached for ESA_ROUTE_TTL_NS: a
 * next hop that changes within it is not seen (the packet goes out by the
 * cache, no lookup), after it is.  The test puts the cache's stamp where it
 * needs it: ahead of now (fresh, however slow the machine), then a TTL and
 * a millisecond behind (run out).
 */
TEST_F(esa, ps_route_cached_for_its_ttl)
{
	static const __u8 moved[6] = { 0x02, 0, 0, 0, 0x01, 0x22 };
	__u32 key = ESA_ROUTE(JA, ESA_ROUTE_PS);
	struct esa_route rt;
	__u8 want[2048];
	struct t_run r;
	__u64 stale;
	int len;

	LOAD(ESA_POLICY_ESA, 64, 0);
	SEND(JA, 0, 220, 0, ESA_F_RESEND, &r);
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	ASSERT_EQ(0, bpf_map_lookup_elem(self->e.routes_fd, &key, &rt));
	EXPECT_NE(0, rt.stamp_ns);
	EXPECT_LE(rt.stamp_ns, esa_now_ns());
	EXPECT_EQ(self->n.sw1, (int)rt.ifindex);
	EXPECT_EQ(t_ip(T_PS_A), rt.ps_ip);
	EXPECT_EQ(t_ip(T_SW_IP), rt.src);
	EXPECT_EQ(0, memcmp(rt.dmac, t_ps_a_mac, 6));

	/* PS A's next hop moves: within the TTL the cache still rules */
	ASSERT_EQ(0, t_sh("ip neigh replace " T_PS_A " lladdr 02:00:00:00:01:22 "
			  "nud permanent dev sw1"));
	rt.stamp_ns = esa_now_ns() + 3600 * 1000000000ULL;
	ASSERT_EQ(0, bpf_map_update_elem(self->e.routes_fd, &key, &rt, BPF_EXIST));
	SEND(JA, 1, 220, 0, ESA_F_RESEND, &r);
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	len = expect_ps(self, JA, 1, T_PS_A, t_ps_a_mac, ESA_T_COLLISION,
			ESA_R_RESEND, ESA_F_RESEND, JA, 1, 220, 0, 2, self->v[1], want);
	EXPECT_BYTES(&r, want, len);

	/* run out: looked up again, the new next hop seen and cached */
	stale = esa_now_ns() - ESA_ROUTE_TTL_NS - 1000000;
	rt.stamp_ns = stale;
	ASSERT_EQ(0, bpf_map_update_elem(self->e.routes_fd, &key, &rt, BPF_EXIST));
	SEND(JA, 2, 220, 0, ESA_F_RESEND, &r);
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	len = expect_ps(self, JA, 2, T_PS_A, moved, ESA_T_COLLISION,
			ESA_R_RESEND, ESA_F_RESEND, JA, 2, 220, 0, 4, self->v[2], want);
	EXPECT_BYTES(&r, want, len);
	ASSERT_EQ(0, bpf_map_lookup_elem(self->e.routes_fd, &key, &rt));
	EXPECT_LT(stale, rt.stamp_ns);
	EXPECT_EQ(0, memcmp(rt.dmac, moved, 6));
	EXPECT_EQ(3, t_ctr(&self->e, JA, ESA_C_PS_TX));
	EXPECT_EQ(3, t_ctr(&self->e, JA, ESA_C_RESEND_FWD));
}

/* A job without a fan-out table for its registration (registered behind
 * esactl's back): its sums go whole to its PS, which delivers them. */
TEST_F(esa, completion_without_fanout_goes_whole_to_ps)
{
	struct esa_job j = t_job(W, T_PS_A, 7, 9);
	__u8 want[2048];
	struct t_run r;
	int len;

	LOAD(ESA_POLICY_ESA, 64, 0);
	ASSERT_EQ(0, esa_job_add(&self->e, 9, &j, self->err, sizeof(self->err)));
	for (int i = 0; i < W; i++)
		SEND(9, i, 200, 1, 0, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	EXPECT_EQ(0, r.metalen);
	len = expect_ps(self, 9, 2, T_PS_A, t_ps_a_mac, ESA_T_PARTIAL,
			ESA_R_DELIVER, 0, 9, ESA_RANK_NONE, 200, 1,
			esa_full_mask(W), self->sum, want);
	EXPECT_BYTES(&r, want, len);
	EXPECT_EQ(1, t_ctr(&self->e, 9, ESA_C_FANOUT_MISS));
	EXPECT_EQ(W, t_ctr(&self->e, 9, ESA_C_LEARN));	/* bound by packets */
}

/* Policy atp: a completed slot is held until the PS's ack passes back. */
TEST_F(esa, atp_holds_slot_until_ps_ack)
{
	const struct esa_hdr *h;
	struct esa_slot s;
	struct t_run r, w;
	struct t_pkt ack, got;
	__s32 vals[NV];
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

	/* An ack from anyone but the PS is dropped, and sends nothing on. */
	ack = t_data(&self->n, JA, 0, 210, 1, self->sum, NV);
	ack.type = ESA_T_ACK;
	ack.rank = ESA_RANK_NONE;
	ack.bitmap = esa_full_mask(W);
	ASSERT_EQ(0, t_send(&self->e, &ack, self->n.sw0, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	/* ... nor the PS's address from another port than the PS's */
	ack.saddr = t_ip(T_PS_A);
	ack.sport = T_PS_PORT;
	ASSERT_EQ(0, t_send(&self->e, &ack, self->n.sw0, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(2, t_ctr(&self->e, JA, ESA_C_DROP_ACK));
	/* ... nor from the PS's port with another MAC than the PS's */
	memcpy(ack.dmac, self->n.sw1_mac, 6);
	ASSERT_EQ(0, t_send(&self->e, &ack, self->n.sw1, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(3, t_ctr(&self->e, JA, ESA_C_DROP_ACK));
	memcpy(ack.smac, t_ps_a_mac, 6);
	/* ... nor one with a reason */
	ack.reason = ESA_R_HOLD;
	ASSERT_EQ(0, t_send(&self->e, &ack, self->n.sw1, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_DROP_HEADER));
	ack.reason = 0;

	/* The PS's ack frees the slot and goes to the members, not the PS. */
	ASSERT_EQ(0, t_send(&self->e, &ack, self->n.sw1, &r));
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	EXPECT_EQ(0, r.metalen);
	h = (const void *)(r.pkt + T_HDRS);
	EXPECT_EQ(ESA_T_RESULT, h->type);
	EXPECT_EQ(ESA_RESV_NO_PS, h->resv);
	ASSERT_EQ(0, egress(self, &r, self->n.sw1, &w, &got, vals) == XDP_DROP ? 0 : -1);
	EXPECT_EQ(0, t_ctr(&self->e, JA, ESA_C_PS_COPY_TX));
	ASSERT_EQ(XDP_PASS, egress(self, &r, self->n.sw0, &w, &got, vals));
	EXPECT_EQ(0, got.resv);
	ASSERT_EQ(0, t_slot(&self->e, idx, &s, NULL));
	EXPECT_EQ(ESA_SLOT_FREE, s.state);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_HELD));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_ACK));

	/* A second ack of the same sum (or a spoofed one) matches no held
	 * slot: dropped and counted, never a second result to the workers. */
	ASSERT_EQ(0, t_send(&self->e, &ack, self->n.sw1, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_ACK_STALE));
	EXPECT_EQ(3, t_ctr(&self->e, JA, ESA_C_DROP_ACK));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_ACK));
}

/*
 * A sum the PS finished (ESA_T_SUM) goes to the job's workers as their
 * result, with the PS's reason, never back to the PS; only from the PS
 * (its address, port, the port and MAC the switch reaches it by), never
 * with reason HOLD.
 */
TEST_F(esa, ps_sum_goes_to_the_workers)
{
	const struct esa_hdr *h;
	struct t_pkt sum, got;
	struct t_run r, w;
	__s32 vals[NV];

	LOAD(ESA_POLICY_ESA, 64, 0);
	/* a resend with nothing in the switch: to the PS, whose route is
	 * now known */
	SEND(JA, 0, 230, 1, ESA_F_RESEND, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	sum = t_data(&self->n, JA, 0, 230, 1, self->sum, NV);
	sum.type = ESA_T_SUM;
	sum.rank = ESA_RANK_NONE;
	sum.bitmap = esa_full_mask(W);
	sum.reason = ESA_R_PREEMPT;
	/* from a worker: dropped, nothing sent */
	ASSERT_EQ(0, t_send(&self->e, &sum, self->n.sw0, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_DROP_ACK));
	sum.saddr = t_ip(T_PS_A);
	sum.sport = T_PS_PORT;
	memcpy(sum.dmac, self->n.sw1_mac, 6);
	memcpy(sum.smac, t_ps_a_mac, 6);
	/* the PS's, but HOLD is atp's alone */
	sum.reason = ESA_R_HOLD;
	ASSERT_EQ(0, t_send(&self->e, &sum, self->n.sw1, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_DROP_HEADER));
	sum.reason = ESA_R_PREEMPT;
	ASSERT_EQ(0, t_send(&self->e, &sum, self->n.sw1, &r));
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	h = (const void *)(r.pkt + T_HDRS);
	EXPECT_EQ(ESA_T_RESULT, h->type);
	EXPECT_EQ(ESA_R_PREEMPT, h->reason);
	EXPECT_EQ(ESA_RESV_NO_PS, h->resv);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_PS_SUM));
	/* no copy for the PS, one addressed to each worker */
	EXPECT_EQ(XDP_DROP, egress(self, &r, self->n.sw1, &w, &got, vals));
	EXPECT_EQ(0, t_ctr(&self->e, JA, ESA_C_PS_COPY_TX));
	ASSERT_EQ(XDP_PASS, egress(self, &r, self->n.sw0, &w, &got, vals));
	EXPECT_EQ(ESA_T_RESULT, got.type);
	EXPECT_EQ(ESA_R_PREEMPT, got.reason);
	EXPECT_EQ(0, memcmp(vals, self->sum, sizeof(vals)));
}

/* ps-copy off: a completed sum goes to the workers only. */
TEST_F(esa, no_ps_copy_sends_results_to_workers_only)
{
	const struct esa_hdr *h;
	struct t_run r, w;
	struct t_pkt got;
	__s32 vals[NV];

	ASSERT_EQ(0, load_with(self, ESA_POLICY_ESA, 64, 0, true));
	for (int k = 0; k < W; k++)
		SEND(JA, k, 240, 1, 0, &r);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	h = (const void *)(r.pkt + T_HDRS);
	EXPECT_EQ(ESA_T_RESULT, h->type);
	EXPECT_EQ(ESA_RESV_NO_PS, h->resv);
	EXPECT_EQ(XDP_DROP, egress(self, &r, self->n.sw1, &w, &got, vals));
	EXPECT_EQ(0, t_ctr(&self->e, JA, ESA_C_PS_COPY_TX));
	ASSERT_EQ(XDP_PASS, egress(self, &r, self->n.sw0, &w, &got, vals));
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_COMPLETED));
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

/* ------------------------------------------------------------------ */
/* Two levels: leaves sum their ranks, a spine sums the leaves         */
/* ------------------------------------------------------------------ */

/* A spine needs ageing (esactl refuses stale 0 with leaves); never in these. */
#define SPINE_STALE	60000
#define JL	10	/* at a leaf: ranks 0 and 1 of 3 here, its spine at PS A's address */
#define JS	11	/* at a spine: leaves at workers 0 (ranks 0-1) and 2 (ranks 2-3) */

static struct esa_job leaf_job(void)
{
	struct esa_job j = t_job(W, T_PS_B, 7, JL);

	j.rank[2] = (struct esa_addr){};	/* under another leaf */
	j.up.ip = t_ip(T_PS_A);
	j.up.port = htons(ESA_DEFAULT_PORT);
	return j;
}

/* The DATA a leaf (at worker `rank`'s address) sends its spine. */
static struct t_pkt leaf_data(FIXTURE_DATA(esa) *self, int rank, __u32 seq,
			      __u8 prio, __u64 set, const __s32 *vals)
{
	struct t_pkt p = t_data(&self->n, JS, rank, seq, prio, vals, NV);

	p.sport = ESA_DEFAULT_PORT;
	p.flags = ESA_F_LEAF;
	p.bitmap = set;
	return p;
}

/* The spine's RESULT of chunk seq for the leaf, as it arrives on sw1. */
static struct t_pkt spine_result(FIXTURE_DATA(esa) *self, __u32 seq,
				 const __s32 *vals)
{
	struct t_pkt p = t_data(&self->n, JL, 0, seq, 1, vals, NV);

	memcpy(p.smac, t_ps_a_mac, 6);
	memcpy(p.dmac, self->n.sw1_mac, 6);
	p.saddr = t_ip(T_PS_A);
	p.sport = ESA_DEFAULT_PORT;
	p.type = ESA_T_RESULT;
	p.rank = ESA_RANK_NONE;
	p.bitmap = esa_full_mask(W);
	return p;
}

/*
 * A leaf sums the ranks under it; the sum goes to its spine as one DATA
 * (ESA_F_LEAF, the lowest rank, the leaf's ranks), from the leaf's
 * address and port, through the route to the spine.  A rank under another
 * leaf is not its to take; a resend after the sum went up goes to the PS.
 */
TEST_F(esa, leaf_sends_its_sum_up)
{
	struct esa_job j = leaf_job();
	struct esa_fanout f;
	__u8 want[2048];
	__s32 part[NV];
	struct t_run r;
	int len;

	LOAD(ESA_POLICY_ESA, 64, 0);
	ASSERT_EQ(0, t_job_add(&self->e, JL, &j, self->err, sizeof(self->err)));
	ASSERT_EQ(0, esa_fanout_read(&self->e, JL, &f));
	EXPECT_EQ(2, f.n);			/* its two ranks, no PS copy */
	EXPECT_EQ(ESA_FAN_MAX, f.ps);
	EXPECT_EQ(self->n.sw1, (int)f.up_ifindex);

	SEND(JL, 0, 300, 1, 0, &r);
	EXPECT_EQ(XDP_DROP, r.verdict);
	SEND(JL, 1, 300, 1, 0, &r);
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	len = expect_ps(self, JL, 1, T_PS_A, t_ps_a_mac, ESA_T_DATA, 0,
			ESA_F_LEAF, JL, 0, 300, 1, 0x3, partial(self, 0x3, part),
			want);
	((struct udphdr *)(want + sizeof(struct ethhdr) +
			   sizeof(struct iphdr)))->dest = htons(ESA_DEFAULT_PORT);
	EXPECT_BYTES(&r, want, len);
	EXPECT_EQ(1, t_ctr(&self->e, JL, ESA_C_UP_TX));
	EXPECT_EQ(0, t_ctr(&self->e, JL, ESA_C_COMPLETED));
	EXPECT_EQ(ESA_TOMB_DONE, t_tomb(&self->e, JL, 300));

	/* rank 2 lives under another leaf */
	SEND(JL, 2, 300, 1, 0, &r);
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JL, ESA_C_DROP_RANK));

	/* the leaf's sum went up: a resend is the PS's to answer */
	SEND(JL, 0, 300, 1, ESA_F_RESEND, &r);
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	len = expect_ps(self, JL, 0, T_PS_B, t_ps_b_mac, ESA_T_COLLISION,
			ESA_R_RESEND, ESA_F_RESEND, JL, 0, 300, 1, 0x1,
			self->v[0], want);
	EXPECT_BYTES(&r, want, len);
}

/*
 * A leaf with no next hop for its spine: its sum goes up through the
 * kernel stack with the completing worker's source, which the stack
 * forwards (resolving the next hop on the way), as a PS's packets do; the
 * leaf's own address as source would be a martian, dropped, and the next
 * hop never resolved.
 */
TEST_F(esa, leaf_sum_up_through_the_stack_when_unresolved)
{
	struct esa_job j = leaf_job();
	const struct iphdr *ip;
	const struct esa_hdr *h;
	struct t_run r;

	LOAD(ESA_POLICY_ESA, 64, 0);
	j.up.ip = t_ip(T_PS_NONEIGH);
	ASSERT_EQ(0, t_job_add(&self->e, JL, &j, self->err, sizeof(self->err)));
	SEND(JL, 0, 305, 1, 0, &r);
	SEND(JL, 1, 305, 1, 0, &r);
	ASSERT_EQ(XDP_PASS, r.verdict);
	ip = (const void *)(r.pkt + sizeof(struct ethhdr));
	h = (const void *)(r.pkt + T_HDRS);
	EXPECT_EQ(t_ip(T_PS_NONEIGH), ip->daddr);
	EXPECT_EQ(t_worker_ip(1), ip->saddr);	/* the stack forwards it */
	EXPECT_EQ(0, t_csum(ip, sizeof(*ip)));
	EXPECT_EQ(ESA_T_DATA, h->type);
	EXPECT_EQ(ESA_F_LEAF, h->flags);
	EXPECT_EQ(0x3, be64toh(h->bitmap));
	EXPECT_EQ(1, t_ctr(&self->e, JL, ESA_C_UP_TX));
	EXPECT_EQ(1, t_ctr(&self->e, JL, ESA_C_PS_STACK));
}

/* A leaf with one rank of its job: each packet is the leaf's sum at once. */
TEST_F(esa, leaf_of_one_rank_sends_at_once)
{
	struct esa_job j = leaf_job();
	const struct esa_hdr *h;
	struct t_run r;

	LOAD(ESA_POLICY_ESA, 64, 0);
	j.rank[1] = (struct esa_addr){};
	ASSERT_EQ(0, t_job_add(&self->e, JL, &j, self->err, sizeof(self->err)));
	SEND(JL, 0, 310, 2, 0, &r);
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	h = (const void *)(r.pkt + T_HDRS);
	EXPECT_EQ(ESA_T_DATA, h->type);
	EXPECT_EQ(ESA_F_LEAF, h->flags);
	EXPECT_EQ(1, be64toh(h->bitmap));
	EXPECT_EQ(0, ntohs(h->rank));
	EXPECT_EQ(0, memcmp(r.pkt + T_HDRS + ESA_HDR_LEN, self->v[0], 4 * NV));
	EXPECT_EQ(1, t_ctr(&self->e, JL, ESA_C_UP_TX));
	EXPECT_EQ(0, t_ctr(&self->e, JL, ESA_C_CLAIMED));
	/* its resend is the PS's, as at any leaf */
	SEND(JL, 0, 310, 2, ESA_F_RESEND, &r);
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	h = (const void *)(r.pkt + T_HDRS);
	EXPECT_EQ(ESA_T_COLLISION, h->type);
	EXPECT_EQ(ESA_R_RESEND, h->reason);
	EXPECT_EQ(t_ip(T_PS_B), ((const struct iphdr *)(r.pkt + sizeof(struct ethhdr)))->daddr);
	EXPECT_EQ(1, t_ctr(&self->e, JL, ESA_C_RESEND_FWD));
}

/*
 * The spine's result comes back to the leaf, which sends it on to its own
 * ranks (the spine gave the PS its copy).  It is taken only from the
 * job's spine: its address and port, on the port it is behind.
 */
TEST_F(esa, leaf_sends_the_spines_result_to_its_ranks)
{
	struct esa_job j = leaf_job();
	struct t_run r, w;
	struct t_pkt p, got;
	__s32 vals[NV];

	LOAD(ESA_POLICY_ESA, 64, 0);
	ASSERT_EQ(0, t_job_add(&self->e, JL, &j, self->err, sizeof(self->err)));
	SEND(JL, 0, 301, 1, 0, &r);		/* their MACs learnt, the */
	SEND(JL, 1, 301, 1, 0, &r);		/* leaf's sum sent up */
	p = spine_result(self, 301, self->sum);
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw1, &r));
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	for (int k = 0; k < 2; k++) {
		ASSERT_EQ(XDP_PASS, egress(self, &r, self->n.sw0, &w, &got, vals));
		expect_worker_copy(_metadata, self, &w, &got, vals, k, JL);
		EXPECT_EQ(ESA_T_RESULT, got.type);
		EXPECT_EQ(esa_full_mask(W), got.bitmap);
	}
	EXPECT_EQ(XDP_DROP, egress(self, &r, self->n.sw0, &w, &got, vals));
	EXPECT_EQ(XDP_DROP, egress(self, &r, self->n.sw1, &w, &got, vals));
	EXPECT_EQ(1, t_ctr(&self->e, JL, ESA_C_DOWN_RX));
	EXPECT_EQ(2, t_ctr(&self->e, JL, ESA_C_RESULT_TX));
	EXPECT_EQ(0, t_ctr(&self->e, JL, ESA_C_PS_COPY_TX));

	/* not from the spine: its address, its port, its side */
	p.saddr = t_ip(T_PS_B);
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw1, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	p = spine_result(self, 302, self->sum);
	p.sport = T_PS_PORT;
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw1, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	p = spine_result(self, 302, self->sum);
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(3, t_ctr(&self->e, JL, ESA_C_DROP_SPOOF));
	/* not a whole sum, or with a rank */
	p.bitmap = 0x3;
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw1, &r));
	p = spine_result(self, 302, self->sum);
	p.rank = 0;
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw1, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(2, t_ctr(&self->e, JL, ESA_C_DROP_HEADER));
	EXPECT_EQ(1, t_ctr(&self->e, JL, ESA_C_DOWN_RX));
	/* a RESULT for a job of one level is no leaf's */
	p = spine_result(self, 303, self->sum);
	p.job = JA;
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw1, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JA, ESA_C_DROP_TYPE));
}

/*
 * A leaf hands the spine's result to the fan-out of the job's current
 * registration only: registered again under the same id (here behind
 * esactl's back, so its fan-out is still the old registration's), the
 * job's results never go to the old registration's hosts; the sum goes
 * whole to the PS (DELIVER), which delivers it.
 */
TEST_F(esa, leaf_delivers_to_the_current_registration_only)
{
	struct esa_job j = leaf_job();
	const struct iphdr *ip;
	const struct esa_hdr *h;
	struct t_run r;
	struct t_pkt p;

	LOAD(ESA_POLICY_ESA, 64, 0);
	ASSERT_EQ(0, t_job_add(&self->e, JL, &j, self->err, sizeof(self->err)));
	SEND(JL, 0, 306, 1, 0, &r);
	SEND(JL, 1, 306, 1, 0, &r);
	ASSERT_EQ(0, esa_job_del(&self->e, JL));
	ASSERT_EQ(0, esa_job_add(&self->e, JL, &j, self->err, sizeof(self->err)));
	p = spine_result(self, 306, self->sum);
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw1, &r));
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	ip = (const void *)(r.pkt + sizeof(struct ethhdr));
	h = (const void *)(r.pkt + T_HDRS);
	EXPECT_EQ(ESA_T_PARTIAL, h->type);
	EXPECT_EQ(ESA_R_DELIVER, h->reason);
	EXPECT_EQ(t_ip(T_PS_B), ip->daddr);
	EXPECT_EQ(1, t_ctr(&self->e, JL, ESA_C_DOWN_RX));
	EXPECT_EQ(1, t_ctr(&self->e, JL, ESA_C_FANOUT_MISS));
}

/*
 * A spine sums whole leaves: each leaf's DATA carries exactly the ranks
 * registered under it, from its address and port; the result goes to the
 * leaves and the PS.  A leaf's overflow carries into the result.
 */
TEST_F(esa, spine_sums_whole_leaves)
{
	struct esa_job j = t_spine_job(7);
	__s32 lx[NV], ly[NV], vals[NV];
	struct t_run r, w;
	struct t_pkt p, got;
	struct esa_slot s;

	LOAD(ESA_POLICY_ESA, 64, SPINE_STALE);
	ASSERT_EQ(0, t_job_add(&self->e, JS, &j, self->err, sizeof(self->err)));
	for (int i = 0; i < NV; i++) {
		lx[i] = 1000 * i - 7;
		ly[i] = -3 * i + 11;
	}
	p = leaf_data(self, 0, 400, 2, 0x3, lx);
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	ASSERT_EQ(0, t_slot(&self->e, t_slot_of(&self->e, JS, 400), &s, NULL));
	EXPECT_EQ(0x3, s.bitmap);
	p = leaf_data(self, 2, 400, 2, 0xc, ly);
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	for (int k = 0; k < 4; k += 2) {
		ASSERT_EQ(XDP_PASS, egress(self, &r, self->n.sw0, &w, &got, vals));
		EXPECT_EQ(t_worker_ip(k), got.daddr);
		EXPECT_EQ(ESA_DEFAULT_PORT, got.dport);
		EXPECT_EQ(ESA_T_RESULT, got.type);
		EXPECT_EQ(0xf, got.bitmap);
		EXPECT_EQ(ESA_RANK_NONE, got.rank);
		for (int i = 0; i < NV; i++)
			EXPECT_EQ(lx[i] + ly[i], vals[i]);
	}
	ASSERT_EQ(XDP_PASS, egress(self, &r, self->n.sw1, &w, &got, vals));
	EXPECT_EQ(t_ip(T_PS_A), got.daddr);
	EXPECT_EQ(1, t_ctr(&self->e, JS, ESA_C_COMPLETED));

	/* a leaf's sum that left int32 makes the result's flag */
	p = leaf_data(self, 0, 401, 2, 0x3, lx);
	p.flags |= ESA_F_OVERFLOW;
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	p = leaf_data(self, 2, 401, 2, 0xc, ly);
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	EXPECT_EQ(ESA_F_OVERFLOW, ((const struct esa_hdr *)(r.pkt + T_HDRS))->flags);
	EXPECT_EQ(1, t_ctr(&self->e, JS, ESA_C_OVERFLOW));
}

/* What a spine takes from a leaf: its ranks, no fewer, as a leaf's DATA. */
TEST_F(esa, spine_checks_each_leaf)
{
	static const struct {
		const char *what;
		int rank, src, flags, counter;
		__u64 set;
	} bad[] = {
		{ "not all its ranks", 0, 0, ESA_F_LEAF, ESA_C_DROP_HEADER, 0x1 },
		{ "more than its ranks", 0, 0, ESA_F_LEAF, ESA_C_DROP_HEADER, 0x7 },
		{ "a worker's DATA", 0, 0, 0, ESA_C_DROP_HEADER, 0x1 },
		{ "a leaf's resend", 0, 0, ESA_F_LEAF | ESA_F_RESEND, ESA_C_DROP_HEADER, 0x3 },
		{ "a rank under a leaf", 1, 1, ESA_F_LEAF, ESA_C_DROP_RANK, 0x2 },
		{ "another's address", 0, 1, ESA_F_LEAF, ESA_C_DROP_SPOOF, 0x3 },
	};
	struct esa_job j = t_spine_job(7);
	struct t_run r;

	LOAD(ESA_POLICY_ESA, 64, SPINE_STALE);
	ASSERT_EQ(0, t_job_add(&self->e, JS, &j, self->err, sizeof(self->err)));
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		struct t_pkt p = leaf_data(self, bad[k].rank, 410, 1, bad[k].set,
					   self->v[0]);
		__u64 before = t_ctr(&self->e, JS, bad[k].counter);

		p.flags = bad[k].flags;
		p.saddr = t_worker_ip(bad[k].src);
		t_worker_mac(bad[k].src, p.smac);
		ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
		EXPECT_EQ(XDP_DROP, r.verdict);
		EXPECT_EQ(before + 1, t_ctr(&self->e, JS, bad[k].counter))
			TH_LOG("%s", bad[k].what);
	}
	EXPECT_EQ(0, t_ctr(&self->e, JS, ESA_C_CLAIMED));
}

/*
 * A leaf's sum the spine does not add goes to the PS as the PARTIAL it
 * is (rank none, the leaf's ranks): evicted by a higher priority, then
 * the other leaf's following its chunk (tombstone).
 */
TEST_F(esa, spine_sends_unsummed_leaf_sums_to_the_ps)
{
	struct esa_job j = t_spine_job(7);
	__s32 lx[NV], ly[NV];
	__u8 want[2048];
	struct t_run r;
	struct t_pkt p;
	__u32 idx, sa;
	int len;

	LOAD(ESA_POLICY_ESA, 64, SPINE_STALE);
	ASSERT_EQ(0, t_job_add(&self->e, JS, &j, self->err, sizeof(self->err)));
	for (int i = 0; i < NV; i++) {
		lx[i] = 5 * i;
		ly[i] = 7 * i + 1;
	}
	p = leaf_data(self, 0, 420, 1, 0x3, lx);
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	idx = t_slot_of(&self->e, JS, 420);
	sa = t_seq_for_slot(&self->e, JA, idx, 0);
	SEND(JA, 0, sa, 5, 0, &r);
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	len = expect_ps(self, JA, 0, T_PS_A, t_ps_a_mac, ESA_T_PARTIAL,
			ESA_R_PREEMPT, 0, JS, ESA_RANK_NONE, 420, 1, 0x3, lx, want);
	EXPECT_BYTES(&r, want, len);

	p = leaf_data(self, 2, 420, 1, 0xc, ly);
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	len = expect_ps(self, JS, 2, T_PS_A, t_ps_a_mac, ESA_T_PARTIAL,
			ESA_R_TOMB, 0, JS, ESA_RANK_NONE, 420, 1, 0xc, ly, want);
	((struct udphdr *)(want + sizeof(struct ethhdr) +
			   sizeof(struct iphdr)))->source = htons(ESA_DEFAULT_PORT);
	EXPECT_BYTES(&r, want, len);
	EXPECT_EQ(1, t_ctr(&self->e, JS, ESA_C_TOMB_FWD));
	EXPECT_EQ(1, t_ctr(&self->e, JS, ESA_C_EVICTED));
}

/*
 * A spine whose job has no switch memory (switchml without a region): a
 * leaf's sum goes to the PS as the PARTIAL it is (rank none, the leaf's
 * ranks, reason NOSLOT), never as a COLLISION, which a PS takes from one
 * rank only; a worker's packet of a job without memory stays a COLLISION.
 */
TEST_F(esa, noslot_leaf_sum_goes_to_the_ps_as_a_partial)
{
	struct esa_job j = t_spine_job(7);
	__u8 want[2048];
	struct t_run r;
	struct t_pkt p;
	__s32 lx[NV];
	int len;

	LOAD(ESA_POLICY_SWITCHML, 64, SPINE_STALE);
	ASSERT_EQ(0, t_job_add(&self->e, JS, &j, self->err, sizeof(self->err)));
	for (int i = 0; i < NV; i++)
		lx[i] = 3 * i - 40;
	p = leaf_data(self, 2, 430, 1, 0xc, lx);
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	len = expect_ps(self, JS, 2, T_PS_A, t_ps_a_mac, ESA_T_PARTIAL,
			ESA_R_NOSLOT, 0, JS, ESA_RANK_NONE, 430, 1, 0xc, lx, want);
	EXPECT_BYTES(&r, want, len);
	EXPECT_EQ(1, t_ctr(&self->e, JS, ESA_C_NOSLOT));
	EXPECT_EQ(1, t_ctr(&self->e, JS, ESA_C_PS_TX));

	/* one level: a worker's chunk without memory, a COLLISION */
	j = t_job(W, T_PS_A, 7, 12);
	ASSERT_EQ(0, t_job_add(&self->e, 12, &j, self->err, sizeof(self->err)));
	SEND(12, 1, 431, 2, 0, &r);
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	len = expect_ps(self, 12, 1, T_PS_A, t_ps_a_mac, ESA_T_COLLISION,
			ESA_R_NOSLOT, 0, 12, 1, 431, 2, 0x2, self->v[1], want);
	EXPECT_BYTES(&r, want, len);
}

/*
 * Policy atp across two levels: the top holds the sum until its PS acks;
 * a leaf, whose sums go up, holds none.
 */
TEST_F(esa, atp_holds_at_the_top_only)
{
	struct esa_job j = leaf_job(), sj = t_spine_job(7);
	const struct esa_hdr *h;
	struct t_pkt p, ack;
	struct esa_slot s;
	struct t_run r;
	__s32 lx[NV];

	LOAD(ESA_POLICY_ATP, 64, SPINE_STALE);
	ASSERT_EQ(0, t_job_add(&self->e, JL, &j, self->err, sizeof(self->err)));
	SEND(JL, 0, 320, 1, 0, &r);
	SEND(JL, 1, 320, 1, 0, &r);
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	h = (const void *)(r.pkt + T_HDRS);
	EXPECT_EQ(ESA_T_DATA, h->type);
	EXPECT_EQ(ESA_F_LEAF, h->flags);
	ASSERT_EQ(0, t_slot(&self->e, t_slot_of(&self->e, JL, 320), &s, NULL));
	EXPECT_EQ(ESA_SLOT_FREE, s.state);
	EXPECT_EQ(0, t_ctr(&self->e, JL, ESA_C_HELD));

	ASSERT_EQ(0, t_job_add(&self->e, JS, &sj, self->err, sizeof(self->err)));
	for (int i = 0; i < NV; i++)
		lx[i] = i;
	p = leaf_data(self, 0, 321, 1, 0x3, lx);
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	p = leaf_data(self, 2, 321, 1, 0xc, lx);
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	h = (const void *)(r.pkt + T_HDRS);
	EXPECT_EQ(ESA_T_RESULT, h->type);
	EXPECT_EQ(ESA_R_HOLD, h->reason);
	ASSERT_EQ(0, t_slot(&self->e, t_slot_of(&self->e, JS, 321), &s, NULL));
	EXPECT_EQ(ESA_SLOT_HELD, s.state);
	ack = t_data(&self->n, JS, 0, 321, 1, lx, NV);
	ack.type = ESA_T_ACK;
	ack.rank = ESA_RANK_NONE;
	ack.bitmap = 0xf;
	ack.saddr = t_ip(T_PS_A);
	ack.sport = T_PS_PORT;
	memcpy(ack.smac, t_ps_a_mac, 6);
	memcpy(ack.dmac, self->n.sw1_mac, 6);
	ASSERT_EQ(0, t_send(&self->e, &ack, self->n.sw1, &r));
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JS, ESA_C_ACK));
	ASSERT_EQ(0, t_slot(&self->e, t_slot_of(&self->e, JS, 321), &s, NULL));
	EXPECT_EQ(ESA_SLOT_FREE, s.state);
}

TEST_HARNESS_MAIN
