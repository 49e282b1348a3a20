// SPDX-License-Identifier: GPL-2.0
/*
 * Two levels, randomized: two leaves and a spine, three XDP programs of
 * their own (BPF_PROG_TEST_RUN), with small slot pools so that leaves and
 * spine preempt, collide, flush and age; jobs across both leaves, a job
 * within one leaf (its top), a leaf of one rank.  What a leaf sends up is
 * run through the spine, what the spine sends down through each leaf; the
 * links between levels lose packets at random.  The PS (psmodel.h's merge
 * rule, the real PS's) takes every piece from all three switches; workers
 * resend until they have their result.  At the end each rank of each chunk
 * must have had the exact sum, and the leaves, the spine and the PS must
 * each have done their part.  Policies esa (preemption at both levels),
 * atp (holds at the top) and switchml (a region of its own at each box).
 *
 *        workers --sw0--> leaf0 (10.0.0.21) --+
 *                                             +--> spine (T_PS_A) --> PS (T_PS_B)
 *        workers --sw0--> leaf1 (10.0.0.22) --+
 *
 * usage: esa_tiers [ -s SEED ] [ -n PACKETS ]
 */
#include <getopt.h>

#include "psmodel.h"
#include "kselftest_harness.h"

#define NV		32
#define NJOBS		4
#define WINDOW		8
#define LEAF0		"10.0.0.21"
#define LEAF1		"10.0.0.22"
#define SPINE		T_PS_A

static __u64 seed = 1;
static __u32 npackets = 60000;


/* Which leaf each rank of each job lives under; top: the job's top box. */
static const struct {
	__u64	under[2];	/* ranks under leaf 0, leaf 1 */
	int	top_leaf;	/* -1: the spine is the top */
} shape[NJOBS] = {
	{ { 0x03, 0x0c }, -1 },		/* 2 + 2 */
	{ { 0x01, 0x06 }, -1 },		/* a leaf of one rank */
	{ { 0x00, 0x0f }, 1 },		/* within leaf 1: it is the top */
	{ { 0x15, 0x2a }, -1 },		/* interleaved ranks, 3 + 3 */
};

static struct pm_job jobs[NJOBS] = {
	{ .id = 1, .w = 4, .max_prio = 7, .ps = T_PS_B },
	{ .id = 2, .w = 3, .max_prio = 3, .ps = T_PS_B },
	{ .id = 3, .w = 4, .max_prio = 7, .ps = T_PS_B },
	{ .id = 4, .w = 6, .max_prio = 5, .ps = T_PS_B },
};

struct tiers {
	struct esa leaf[2], spine;
	int	policy;
	__u32	leaf_slots, spine_slots;
	struct t_net net;
	struct pm pm;
	__u64	*got[NJOBS];	/* per chunk: ranks that have the result */
	__u32	loss;		/* per 1000, on each leaf-spine crossing */
	__u64	lost, up, down, spine_results, acks;
};

static int leaf_of(int j, int r)
{
	return shape[j].under[0] & (1ULL << r) ? 0 : 1;
}

static __be32 leaf_ip(int l)
{
	return t_ip(l ? LEAF1 : LEAF0);
}

static int load(struct esa *e, const struct t_net *n, __be32 addr, __u32 slots,
		__u32 stale_ms, int policy, char *err)
{
	struct esa_opts o;

	esa_opts_default(&o);
	o.policy = policy;
	o.nvals = NV;
	o.slots = slots;
	o.max_jobs = 16;
	o.stale_ms = stale_ms;
	o.addr = addr;
	o.kfunc = 0;
	if (esa_load(e, &o, err, ESA_ERR_LEN))
		return -1;
	return t_port_register(e, n->sw0) ?: t_port_register(e, n->sw1);
}

/* Policy switchml: job j's own region at a box of `slots`, a quarter each. */
static void region(struct esa_job *jb, int policy, __u32 slots, int j)
{
	if (policy != ESA_POLICY_SWITCHML)
		return;
	jb->region_size = slots / NJOBS;
	jb->region_base = j * jb->region_size;
}

/* Job j at leaf l: its ranks there, upstream the spine unless l is the top. */
static int add_leaf_job(struct tiers *t, int l, int j, char *err)
{
	struct esa_job jb = t_job(jobs[j].w, jobs[j].ps, jobs[j].max_prio, jobs[j].id);

	region(&jb, t->policy, t->leaf_slots, j);
	if (!shape[j].under[l])
		return 0;
	for (int r = 0; r < jobs[j].w; r++)
		if (!(shape[j].under[l] & (1ULL << r)))
			jb.rank[r] = (struct esa_addr){};
	if (shape[j].top_leaf != l) {
		jb.up.ip = t_ip(SPINE);
		jb.up.port = htons(ESA_DEFAULT_PORT);
	}
	return t_job_add(&t->leaf[l], jobs[j].id, &jb, err, ESA_ERR_LEN);
}

/* Job j at the spine: each leaf a member, at its lowest rank. */
static int add_spine_job(struct tiers *t, int j, char *err)
{
	struct esa_job jb = t_job(jobs[j].w, jobs[j].ps, jobs[j].max_prio, jobs[j].id);

	region(&jb, t->policy, t->spine_slots, j);
	if (shape[j].top_leaf >= 0)
		return 0;
	memset(jb.rank, 0, sizeof(jb.rank));
	for (int l = 0; l < 2; l++) {
		int r = esa_lowest_rank(shape[j].under[l]);

		jb.rank[r] = (struct esa_addr){ leaf_ip(l), htons(ESA_DEFAULT_PORT) };
		jb.set[r] = shape[j].under[l];
	}
	return t_job_add(&t->spine, jobs[j].id, &jb, err, ESA_ERR_LEN);
}

static bool lose(struct tiers *t)
{
	if (t_rnd_below(1000) >= t->loss)
		return false;
	t->lost++;
	return true;
}

/* A result reached the ranks `to` of job j: it must be exact. */
static void delivered(struct tiers *t, int j, __u32 s, const __s32 *v, __u64 to)
{
	__s64 sum[NV];

	for (int i = 0; i < NV; i++)
		sum[i] = v[i];
	pm_complete(&t->pm, j, s, sum, true);	/* checks; the PS has its copy */
	t->got[j][s] |= to;
}

/* A piece for the PS; it answers resends and flushes of a finished chunk. */
static void to_ps(struct tiers *t, int j, const struct t_pkt *o)
{
	struct pm_chunk *c = &t->pm.chunks[j][o->seq];
	bool done = c->done;

	pm_ps_receive(&t->pm, o);
	if (!done && c->done)
		t->got[j][o->seq] = esa_full_mask(jobs[j].w);
	else if (done && ((o->flags & ESA_F_RESEND) || o->reason == ESA_R_RESEND ||
			  o->reason == ESA_R_FLUSH))
		t->got[j][o->seq] |= o->bitmap;
}

static void spine_out(struct __test_metadata *_metadata, struct tiers *t, int j,
		      const struct t_run *res);

/*
 * Policy atp: box e (the job's top) holds the sum it sent the PS; the PS
 * acks it, and the box sends it to the members.  *res becomes that.
 */
static void ack_held(struct __test_metadata *_metadata, struct tiers *t,
		     struct esa *e, int j, struct t_pkt *o, __s32 *v, struct t_run *res)
{
	__s64 sum[NV];
	__u8 buf[2048];

	for (int i = 0; i < NV; i++)
		sum[i] = v[i];
	pm_complete(&t->pm, j, o->seq, sum, true);	/* the PS has it */
	t->acks++;
	o->type = ESA_T_ACK;
	o->reason = 0;
	t_reply_macs(o);	/* from the PS, where the held sum went */
	o->saddr = t_ip(T_PS_B);
	o->sport = T_PS_PORT;
	o->daddr = e == &t->spine ? t_ip(SPINE) : e == &t->leaf[0] ? leaf_ip(0) : leaf_ip(1);
	o->dport = ESA_DEFAULT_PORT;
	o->vals = v;
	o->nvals = NV;
	ASSERT_EQ(0, t_run(e->prog_fd, buf, t_build(o, buf), t->net.sw1, NULL, 0, res));
	ASSERT_EQ(XDP_REDIRECT, res->verdict) TH_LOG("job %u chunk %u: ack refused",
						     o->job, o->seq);
	ASSERT_EQ(0, t_parse(res->pkt, res->len, o, v, NV));
}

/* What a leaf's program made of a packet: route it on. */
static void leaf_out(struct __test_metadata *_metadata, struct tiers *t, int l,
		     int j, const struct t_run *res, bool from_spine)
{
	__s32 v[NV];
	struct t_pkt o;
	struct t_run sr, ar;

	ASSERT_TRUE(!from_spine || res->verdict == XDP_REDIRECT)
		TH_LOG("leaf %d refused its spine's result (verdict %d)", l, res->verdict);
	if (res->verdict == XDP_DROP)
		return;
	ASSERT_EQ(0, t_parse(res->pkt, res->len, &o, v, NV));
	j = pm_job_index(&t->pm, o.job);	/* an evicted partial: another's */
	ASSERT_LE(0, j);
	if (o.type == ESA_T_RESULT && o.reason == ESA_R_HOLD) {
		ASSERT_EQ(l, shape[j].top_leaf);
		ack_held(_metadata, t, &t->leaf[l], j, &o, v, &ar);
		res = &ar;
	}
	if (o.type == ESA_T_RESULT) {
		/* the spine's, sent on; or the leaf's own as the job's top */
		ASSERT_EQ(XDP_REDIRECT, res->verdict);
		ASSERT_EQ(esa_full_mask(jobs[j].w), o.bitmap);
		ASSERT_TRUE(from_spine || shape[j].top_leaf == l);
		delivered(t, j, o.seq, v, shape[j].under[l]);
		return;
	}
	ASSERT_FALSE(from_spine) TH_LOG("a leaf sent type %u from the spine's result", o.type);
	if (o.type == ESA_T_DATA) {
		ASSERT_EQ(ESA_F_LEAF, o.flags & ~ESA_F_OVERFLOW);
		ASSERT_EQ(shape[j].under[l], o.bitmap);
		ASSERT_EQ(t_ip(SPINE), o.daddr);
		ASSERT_EQ(leaf_ip(l), o.saddr);
		t->up++;
		if (lose(t))
			return;
		ASSERT_EQ(0, t_run(t->spine.prog_fd, res->pkt, res->len, t->net.sw0,
				   NULL, 0, &sr));
		spine_out(_metadata, t, j, &sr);
		return;
	}
	ASSERT_TRUE(o.type == ESA_T_PARTIAL || o.type == ESA_T_COLLISION);
	ASSERT_EQ(t_ip(T_PS_B), o.daddr);
	to_ps(t, j, &o);
}

/* What the spine made of a leaf's sum: results down each leaf, or the PS's. */
static void spine_out(struct __test_metadata *_metadata, struct tiers *t, int j,
		      const struct t_run *res)
{
	struct t_run lr, ar;
	struct t_pkt o;
	__s32 v[NV];
	__u8 buf[2048];

	if (res->verdict == XDP_DROP)
		return;
	ASSERT_EQ(0, t_parse(res->pkt, res->len, &o, v, NV));
	j = pm_job_index(&t->pm, o.job);
	ASSERT_LE(0, j);
	if (o.type == ESA_T_RESULT && o.reason == ESA_R_HOLD)
		ack_held(_metadata, t, &t->spine, j, &o, v, &ar);
	if (o.type != ESA_T_RESULT) {
		ASSERT_TRUE(o.type == ESA_T_PARTIAL) TH_LOG("spine sent type %u", o.type);
		ASSERT_EQ(ESA_RANK_NONE, o.rank);
		to_ps(t, j, &o);
		return;
	}
	ASSERT_EQ(XDP_REDIRECT, res->verdict);
	t->spine_results++;
	{
		__s64 sum[NV];

		for (int i = 0; i < NV; i++)
			sum[i] = v[i];
		pm_complete(&t->pm, j, o.seq, sum, true);	/* the PS's copy */
	}
	/* each leaf's copy, as egress addresses it, through the leaf */
	for (int l = 0; l < 2; l++) {
		struct t_pkt d = o;

		if (lose(t))
			continue;
		t->down++;
		memcpy(d.dmac, t->net.sw1_mac, 6);
		memcpy(d.smac, t_ps_a_mac, 6);
		d.daddr = leaf_ip(l);
		d.dport = ESA_DEFAULT_PORT;
		d.resv = 0;			/* egress clears it */
		d.vals = v;
		d.nvals = NV;
		ASSERT_EQ(0, t_run(t->leaf[l].prog_fd, buf, t_build(&d, buf),
				   t->net.sw1, NULL, 0, &lr));
		leaf_out(_metadata, t, l, j, &lr, true);
	}
}

/* Rank r of job j sends chunk s to its leaf. */
static void send_data(struct __test_metadata *_metadata, struct tiers *t, int j,
		      int r, __u32 s, bool resend)
{
	int l = leaf_of(j, r);
	__s32 v[NV];
	struct t_pkt p;
	struct t_run res;

	for (int i = 0; i < NV; i++)
		v[i] = pm_val(&t->pm, j, r, s, i);
	p = t_data(&t->net, jobs[j].id, r, s, pm_prio(&t->pm, j, s), v, NV);
	p.daddr = leaf_ip(l);
	if (resend)
		p.flags = ESA_F_RESEND;
	ASSERT_EQ(0, t_send(&t->leaf[l], &p, t->net.sw0, &res));
	leaf_out(_metadata, t, l, j, &res, false);
}

static bool has(struct tiers *t, int j, __u32 s, int r)
{
	return t->got[j][s] & (1ULL << r);
}

/* The three switches, the jobs at each, the PS model. */
static void setup(struct __test_metadata *_metadata, struct tiers *t,
		  __u32 stale_ms)
{
	char err[ESA_ERR_LEN];

	ASSERT_EQ(0, esa_netns_setup(&t->net));
	ASSERT_EQ(0, t_sh("exec >/dev/null 2>&1; ip neigh add " LEAF0
			  " lladdr 02:00:00:00:00:21 nud permanent dev sw0 && "
			  "ip neigh add " LEAF1 " lladdr 02:00:00:00:00:22 nud permanent dev sw0"));
	for (int l = 0; l < 2; l++)
		ASSERT_EQ(0, load(&t->leaf[l], &t->net, leaf_ip(l), t->leaf_slots,
				  stale_ms, t->policy, err)) TH_LOG("%s", err);
	/* a spine needs ageing (esactl refuses stale 0 with leaves) */
	ASSERT_EQ(0, load(&t->spine, &t->net, t_ip(SPINE), t->spine_slots,
			  stale_ms ? stale_ms : 60000, t->policy, err))
		TH_LOG("%s", err);
	for (int j = 0; j < NJOBS; j++) {
		jobs[j].nchunks = npackets / NJOBS / jobs[j].w + 1;
		ASSERT_EQ(0, add_leaf_job(t, 0, j, err)) TH_LOG("job %d leaf 0: %s", j, err);
		ASSERT_EQ(0, add_leaf_job(t, 1, j, err)) TH_LOG("job %d leaf 1: %s", j, err);
		ASSERT_EQ(0, add_spine_job(t, j, err)) TH_LOG("job %d spine: %s", j, err);
		t->got[j] = calloc(jobs[j].nchunks, sizeof(__u64));
		ASSERT_NE(NULL, t->got[j]);
	}
	ASSERT_EQ(0, pm_init(&t->pm, jobs, NJOBS, NV, seed));
}

/*
 * Workers send in order, a window ahead of the oldest chunk not done, then
 * the rest of every chunk, then resend until each rank has its sum.
 * Returns the ranks still without it; *resends counts the resends.
 */
static int traffic(struct __test_metadata *_metadata, struct tiers *t,
		   __u64 *resends)
{
	int left = 1;

	for (__u32 k = 0; k < npackets; k++) {
		int j = t_rnd_below(NJOBS), r = t_rnd_below(jobs[j].w);
		struct pm_job *jb = &jobs[j];
		__u32 cur = jb->cur[r];

		while (jb->oldest < jb->nchunks &&
		       t->got[j][jb->oldest] == esa_full_mask(jb->w))
			jb->oldest++;
		if (cur < jb->nchunks && cur < jb->oldest + WINDOW) {
			jb->cur[r]++;
			t->pm.chunks[j][cur].sent |= 1ULL << r;
			send_data(_metadata, t, j, r, cur, false);
		} else if (jb->oldest < cur && !has(t, j, jb->oldest, r)) {
			(*resends)++;	/* timed out on its oldest chunk */
			send_data(_metadata, t, j, r, jb->oldest, true);
		}
	}
	for (int j = 0; j < NJOBS; j++)
		for (__u32 s = 0; s < jobs[j].nchunks; s++)
			for (int r = 0; r < jobs[j].w; r++)
				if (!(t->pm.chunks[j][s].sent & (1ULL << r)))
					send_data(_metadata, t, j, r, s, false);
	for (int round = 0; round < 50 && left; round++) {
		left = 0;
		for (int j = 0; j < NJOBS; j++)
			for (__u32 s = 0; s < jobs[j].nchunks; s++)
				for (int r = 0; r < jobs[j].w; r++)
					if (!has(t, j, s, r)) {
						left++;
						(*resends)++;
						send_data(_metadata, t, j, r, s, true);
					}
	}
	return left;
}

/* The first chunks some rank still lacks, for the log. */
static void log_missing(struct __test_metadata *_metadata, struct tiers *t)
{
	for (int j = 0, n = 0; j < NJOBS && n < 5; j++)
		for (__u32 s = 0; s < jobs[j].nchunks && n < 5; s++)
			if (t->got[j][s] != esa_full_mask(jobs[j].w)) {
				n++;
				TH_LOG("job %u chunk %u: got %llx, PS done %d multi %llx single %llx tombs %d %d spine %d",
				       jobs[j].id, s, (unsigned long long)t->got[j][s],
				       t->pm.chunks[j][s].done,
				       (unsigned long long)t->pm.chunks[j][s].m.multi,
				       (unsigned long long)t->pm.chunks[j][s].m.single,
				       t_tomb(&t->leaf[0], jobs[j].id, s),
				       t_tomb(&t->leaf[1], jobs[j].id, s),
				       t_tomb(&t->spine, jobs[j].id, s));
			}
}

/* Each part of the tree did its share, as the policy has it. */
static void level_checks(struct __test_metadata *_metadata, struct tiers *t)
{
	__u64 pre = 0, up = 0, down = 0, coll = 0;
	struct esa_counters c;

	EXPECT_GT(t->spine_results, 0);
	EXPECT_GT(t->pm.st.ps_done, 0);
	for (int j = 0; j < NJOBS; j++) {
		ASSERT_EQ(0, esa_counters_read(&t->spine, jobs[j].id, &c));
		pre += c.c[ESA_C_PREEMPT_CAUSED];
		coll += c.c[ESA_C_NOSLOT];
		for (int l = 0; l < 2; l++) {
			ASSERT_EQ(0, esa_counters_read(&t->leaf[l], jobs[j].id, &c));
			up += c.c[ESA_C_UP_TX];
			down += c.c[ESA_C_DOWN_RX];
			coll += c.c[ESA_C_NOSLOT];
		}
	}
	EXPECT_EQ(t->policy == ESA_POLICY_ESA, pre > 0) TH_LOG("spine preemptions: %llu",
							      (unsigned long long)pre);
	EXPECT_EQ(t->policy == ESA_POLICY_ATP, t->acks > 0);
	/* switchml: every job has its region at every box */
	EXPECT_TRUE(t->policy != ESA_POLICY_SWITCHML || !coll) TH_LOG("noslot %llu",
								     (unsigned long long)coll);
	EXPECT_EQ(t->up, up);
	EXPECT_GT(down, 0);
}

static void run(struct __test_metadata *_metadata, int policy, __u32 leaf_slots,
		__u32 spine_slots, __u32 stale_ms, __u32 loss)
{
	static struct tiers t;
	__u64 resends = 0;
	int left;

	memset(&t, 0, sizeof(t));
	t.loss = loss;
	t.policy = policy;
	t.leaf_slots = leaf_slots;
	t.spine_slots = spine_slots;
	t_rnd_seed(seed);
	TH_LOG("seed %llu, %u packets, policy %s, slots %u/%u, stale %u ms, loss %u/1000",
	       (unsigned long long)seed, npackets, esa_policy_names[policy], leaf_slots,
	       spine_slots, stale_ms, loss);
	setup(_metadata, &t, stale_ms);
	left = traffic(_metadata, &t, &resends);
	TH_LOG("up %llu down %llu lost %llu spine results %llu resends %llu; "
	       "PS: %llu pieces, %llu done, %llu by switches",
	       (unsigned long long)t.up, (unsigned long long)t.down,
	       (unsigned long long)t.lost, (unsigned long long)t.spine_results,
	       (unsigned long long)resends, (unsigned long long)t.pm.st.ps_pieces,
	       (unsigned long long)t.pm.st.ps_done, (unsigned long long)t.pm.st.switch_done);
	if (left)
		log_missing(_metadata, &t);
	EXPECT_EQ(0, left) TH_LOG("ranks still without their sum");
	EXPECT_EQ(0, t.pm.st.errors);
	level_checks(_metadata, &t);
	pm_free(&t.pm);
	for (int j = 0; j < NJOBS; j++)
		free(t.got[j]);
	esa_close(&t.leaf[0]);
	esa_close(&t.leaf[1]);
	esa_close(&t.spine);
}

TEST(ample_leaves_small_spine)
{
	run(_metadata, ESA_POLICY_ESA, 64, 6, 0, 0);
}

TEST(small_everywhere_with_ageing)
{
	run(_metadata, ESA_POLICY_ESA, 8, 4, 1, 0);
}

TEST(lossy_links_between_levels)
{
	run(_metadata, ESA_POLICY_ESA, 16, 6, 1, 50);
}

TEST(atp_holds_at_the_top)
{
	run(_metadata, ESA_POLICY_ATP, 16, 6, 1, 20);
}

/* Static regions of a quarter of each box, as large as the window. */
TEST(switchml_regions_at_both_levels)
{
	run(_metadata, ESA_POLICY_SWITCHML, 32, 32, 1, 20);
}

int main(int argc, char **argv)
{
	int opt;

	while ((opt = getopt(argc, argv, "s:n:")) != -1) {
		switch (opt) {
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'n': npackets = strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: %s [ -s SEED ] [ -n PACKETS ]\n", argv[0]);
			return 2;
		}
	}
	return test_harness_run(1, argv);
}
