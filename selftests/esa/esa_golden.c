// SPDX-License-Identifier: GPL-2.0
/*
 * Golden-packet tests of the ESA data plane: for each rule of the protocol
 * a table (golden/<rule>.h, the shape of a row in golden/golden.h), each
 * row its input packets through BPF_PROG_TEST_RUN, the expected verdict,
 * the expected output bytes, and the expected slot and counter state.
 * This file is the one driver that runs every row: each in its own
 * process and network namespace (see testlib.h for the topology), on a
 * switch of its own with jobs A and B registered.
 */
#include "testlib.h"
#include "kselftest_harness.h"
#include "golden/golden.h"

/* A namespace of the test topology, and what each rank sends. */
static int g_env_init(struct g_env *self)
{
	memset(self, 0, sizeof(*self));
	if (esa_netns_setup(&self->n))
		return -1;
	for (int r = 0; r < W; r++)
		for (int i = 0; i < NV; i++)
			self->v[r][i] = (r + 1) * 1000 + i * 37 - 500;
	for (int i = 0; i < NV; i++)
		self->sum[i] = self->v[0][i] + self->v[1][i] + self->v[2][i];
	return 0;
}

/*
 * Load a switch with the row's settings and register jobs A and B (under
 * switchml, each in half of the pool); no_copy: without result copies for
 * the PSes (esactl prog load ps-copy off); no_udp_csum: results without a
 * UDP checksum (udp-csum off).
 */
static int g_load(struct g_env *self, const struct g_case *c)
{
	struct esa_job a = t_job(W, T_PS_A, 7, JA), b = t_job(W, T_PS_B, 7, JB);
	__u32 slots = 64;
	struct esa_opts o;

	esa_opts_default(&o);
	o.nvals = NV;
	o.slots = slots;
	o.max_jobs = 16;
	o.stale_ms = c->stale_ms;
	o.policy = c->policy;
	o.no_ps_copy = c->no_copy;
	o.no_udp_csum = c->no_udp_csum;
	self->no_udp_csum = c->no_udp_csum;
	o.kfunc = 0;
	if (esa_load(&self->e, &o, self->err, sizeof(self->err))) {
		fprintf(stderr, "load: %s\n", self->err);
		return -1;
	}
	if (c->policy == ESA_POLICY_SWITCHML) {
		a.region_base = 0;
		a.region_size = slots / 2;
		b.region_base = slots / 2;
		b.region_size = slots / 2;
	}
	return t_two_jobs(&self->e, &self->n, JA, &a, JB, &b, self->err,
			  sizeof(self->err));
}

static int g_port(const struct g_env *self, __u8 port)
{
	return port == P_SW1 ? self->n.sw1 : port == P_ALIAS ? self->alias : self->n.sw0;
}

/* An address of the topology: "w1" is worker 1, else dotted. */
static __be32 g_ip(const char *s)
{
	return s[0] == 'w' ? t_worker_ip(s[1] - '0') : t_ip(s);
}

/* The sum over the ranks in the mask. */
static const __s32 *partial(struct g_env *self, __u64 ranks, __s32 *out)
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

/* The values V_* stands for (V_RANK: rank's). */
static const __s32 *g_vals(struct g_env *self, __u8 which, int rank, __s32 *buf)
{
	switch (which) {
	case V_SUM:
		return self->sum;
	case V_LX:
		return self->lx;
	case V_LY:
		return self->ly;
	case V_LXLY:
		for (int i = 0; i < NV; i++)
			buf[i] = self->lx[i] + self->ly[i];
		return buf;
	case V_RANK0:
		return self->v[0];
	}
	return self->v[rank];
}

/* The seq chunk q of job stands for. */
static __u32 g_seq_of(struct g_env *self, __u16 job, const struct g_seq *q)
{
	__u32 slot, s = 0;

	if (!q->slot_job)
		return q->seq;
	slot = t_slot_of(&self->e, q->slot_job, q->slot_seq);
	for (int n = 0; n <= q->nth; n++)
		s = t_seq_for_slot(&self->e, job, slot, n ? s + 1 : 0);
	return s;
}

static __u32 g_row(struct g_env *self, __u16 job)
{
	return job == G_GLOBAL ? self->e.cfg.max_jobs : job;
}

/* ------------------------------------------------------------------ */
/* Frames in: a row's packet, and its edits                            */
/* ------------------------------------------------------------------ */

static void g_edit_pkt(struct g_env *self, struct t_pkt *p, const struct g_edit *x)
{
	switch (x->f) {
	case E_TYPE: p->type = x->v; break;
	case E_RANK: p->rank = x->v; break;
	case E_BITMAP: p->bitmap = x->v; break;
	case E_REASON: p->reason = x->v; break;
	case E_FLAGS: p->flags = x->v; break;
	case E_VERSION: p->version = x->v; break;
	case E_COUNT: p->count = x->v; break;
	case E_RESV: p->resv = x->v; break;
	case E_JOB: p->job = x->v; break;
	case E_SPORT: p->sport = x->v; break;
	case E_SPORT_INC: p->sport += x->v; break;
	case E_SADDR_WORKER: p->saddr = t_worker_ip(x->v); break;
	case E_SADDR_PS_A: p->saddr = t_ip(T_PS_A); break;
	case E_SADDR_PS_B: p->saddr = t_ip(T_PS_B); break;
	case E_SMAC_WORKER: t_worker_mac(x->v, p->smac); break;
	case E_SMAC_FLIP: p->smac[5] ^= 0x40; break;
	case E_SMAC_PS_A: memcpy(p->smac, t_ps_a_mac, 6); break;
	case E_DMAC_SW1: memcpy(p->dmac, self->n.sw1_mac, 6); break;
	case E_LEAF:
		p->sport = ESA_DEFAULT_PORT;
		p->flags = ESA_F_LEAF;
		p->bitmap = x->v;
		break;
	case E_SPINE:
		memcpy(p->smac, t_ps_a_mac, 6);
		memcpy(p->dmac, self->n.sw1_mac, 6);
		p->saddr = t_ip(T_PS_A);
		p->sport = ESA_DEFAULT_PORT;
		p->type = ESA_T_RESULT;
		p->rank = ESA_RANK_NONE;
		p->bitmap = esa_full_mask(W);
		break;
	case E_ACK:
	case E_SUM:
		p->type = x->f == E_ACK ? ESA_T_ACK : ESA_T_SUM;
		p->rank = ESA_RANK_NONE;
		p->bitmap = esa_full_mask(W);
		break;
	case E_FROM_PS_A:
		p->saddr = t_ip(T_PS_A);
		p->sport = T_PS_PORT;
		memcpy(p->dmac, self->n.sw1_mac, 6);
		memcpy(p->smac, t_ps_a_mac, 6);
		break;
	}
}

/* Edits of the built frame (E_LEN on); returns its new length. */
static int g_edit_frame(__u8 *buf, int len, const struct g_edit *x)
{
	struct iphdr *ip = (void *)(buf + sizeof(struct ethhdr));
	struct udphdr *u = (void *)(ip + 1);
	__u8 opt[2048];

	switch (x->f) {
	case E_LEN: return x->v;
	case E_CUT: return len - x->v;
	case E_ULEN: u->len = htons(ntohs(u->len) - x->v); break;
	case E_FRAG: ip->frag_off = htons(0x2000); break;
	case E_IPOPT:		/* NOP x4 between the IP and UDP headers */
		memcpy(opt, buf, T_HDRS - 8);
		memset(opt + T_HDRS - 8, 1, 4);
		memcpy(opt + T_HDRS - 4, buf + T_HDRS - 8, len - (T_HDRS - 8));
		memcpy(buf, opt, len + 4);
		ip->ihl = 6;
		ip->tot_len = htons(ntohs(ip->tot_len) + 4);
		return len + 4;
	case E_ETHTYPE: buf[12] = x->v >> 8; buf[13] = x->v; break;
	case E_PROTO: buf[sizeof(struct ethhdr) + 9] = x->v; break;
	case E_DPORT_FLIP: buf[T_HDRS - 6] ^= 1; break;
	case E_TRANSIT:
		ip->daddr = t_ip(T_PS_A);
		ip->frag_off = x->v ? htons(0x2000) : 0;
		ip->check = 0;
		ip->check = t_csum(ip, sizeof(*ip));
		break;
	}
	return len;
}

/* Step st's packet, chunk seq, into buf; returns its length. */
static int g_frame(struct g_env *self, const struct g_step *st, __u32 seq,
		   __u8 *buf)
{
	__s32 tmp[NV];
	struct t_pkt p = t_data(&self->n, st->job, st->rank, seq, st->prio,
				g_vals(self, st->vals, st->rank, tmp), NV);
	int len, i;

	p.flags = st->flags;
	for (i = 0; i < 4 && st->edit[i].f && st->edit[i].f < E_LEN; i++)
		g_edit_pkt(self, &p, &st->edit[i]);
	len = t_build(&p, buf);
	for (; i < 4 && st->edit[i].f; i++)
		len = g_edit_frame(buf, len, &st->edit[i]);
	return len;
}

/* ------------------------------------------------------------------ */
/* Frames out: what the switch must have sent                          */
/* ------------------------------------------------------------------ */

/* The result of (job, seq) as the ingress program leaves it. */
static int expect_result(struct g_env *self, __u16 job, __u32 seq,
			 __u8 prio, int completer, const __s32 *sum,
			 __u8 flags, __be16 ipid, __u8 *buf)
{
	struct t_pkt p = t_data(&self->n, job, completer, seq, prio, sum, NV);
	struct esa_job j;
	int len;

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
	len = t_build(&p, buf);
	if (!self->no_udp_csum)
		t_udp_csum_set(buf, len);	/* once per sum; each copy adjusts it */
	return len;
}

/* Step st's packet as the switch rewrites it toward a PS (out: how). */
static int expect_ps(struct g_env *self, const struct g_step *st, __u8 *buf)
{
	const struct g_out *o = &st->out;
	__s32 part[NV];
	const __s32 *vals = o->vals ? g_vals(self, o->vals, 0, part) :
				      partial(self, o->bitmap, part);
	struct t_pkt p = t_data(&self->n, st->job, st->rank,
				g_seq_of(self, o->job, &o->seq), o->prio, vals, NV);

	memcpy(p.dmac, o->ps_mac, 6);
	memcpy(p.smac, self->n.sw1_mac, 6);
	p.saddr = t_ip(T_SW_IP);
	p.sport = ESA_DEFAULT_PORT;
	p.ttl = 64;
	p.df = 1;		/* everything the switch sends */
	p.daddr = t_ip(o->ps);
	p.dport = o->dport ?: T_PS_PORT;
	p.type = o->type;
	p.reason = o->reason;
	p.flags = o->flags;
	p.job = o->job;
	p.rank = o->rank;
	p.bitmap = o->bitmap;
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

/* The frame a send left: the bytes its row gives. */
static void g_check_out(struct __test_metadata *_metadata, struct g_env *self,
			const struct g_case *c, const struct g_step *st,
			__u32 seq, const __u8 *in, int inlen)
{
	const struct t_run *r = &self->out;
	__u8 want[2048];
	__s32 vals[NV];
	int len;

	switch (st->out.kind) {
	case G_RESULT:
		if (c->want)
			c->want(vals);
		else
			partial(self, esa_full_mask(W), vals);
		len = expect_result(self, st->job, seq, st->prio, st->rank, vals,
				    st->out.flags, t_ipid(r), want);
		EXPECT_BYTES(r, want, len);
		break;
	case G_TO_PS:
		len = expect_ps(self, st, want);
		EXPECT_BYTES(r, want, len);
		break;
	case G_SAME:
		EXPECT_BYTES(r, in, inlen);
		break;
	}
}

/* The fields of a frame out that the row gives. */
static void g_check_hdr(struct __test_metadata *_metadata, struct g_env *self,
			const struct g_hdr *h, const struct t_run *r, int k)
{
	__s32 vals[NV], buf[NV];
	struct t_pkt p;

	if (!h->m)
		return;
	ASSERT_EQ(0, t_parse(r->pkt, r->len, &p, vals, NV)) TH_LOG("step %d", k);
	if (h->m & H_TYPE)
		EXPECT_EQ(h->type, p.type) TH_LOG("step %d", k);
	if (h->m & H_REASON)
		EXPECT_EQ(h->reason, p.reason) TH_LOG("step %d", k);
	if (h->m & H_FLAGS)
		EXPECT_EQ(h->flags, p.flags) TH_LOG("step %d", k);
	if (h->m & H_RESV)
		EXPECT_EQ(h->resv, p.resv) TH_LOG("step %d", k);
	if (h->m & H_RANK)
		EXPECT_EQ(h->rank, p.rank) TH_LOG("step %d", k);
	if (h->m & H_DPORT)
		EXPECT_EQ(h->dport, p.dport) TH_LOG("step %d", k);
	if (h->m & H_SEQ)
		EXPECT_EQ(h->seq, p.seq) TH_LOG("step %d", k);
	if (h->m & H_BITMAP)
		EXPECT_EQ(h->bitmap, p.bitmap) TH_LOG("step %d", k);
	if (h->m & H_DADDR)
		EXPECT_EQ(g_ip(h->daddr), p.daddr) TH_LOG("step %d", k);
	if (h->m & H_SADDR)
		EXPECT_EQ(g_ip(h->saddr), p.saddr) TH_LOG("step %d", k);
	if (h->m & H_DMAC)
		EXPECT_EQ(0, memcmp(p.dmac, h->dmac, 6)) TH_LOG("step %d", k);
	if (h->m & H_SMAC1)
		EXPECT_EQ(0, memcmp(p.smac, self->n.sw1_mac, 6)) TH_LOG("step %d", k);
	if (h->m & H_CSUM)
		EXPECT_EQ(0, t_csum(r->pkt + sizeof(struct ethhdr),
				    sizeof(struct iphdr))) TH_LOG("step %d", k);
	if (h->m & H_VALS)
		EXPECT_EQ(0, memcmp(vals, g_vals(self, h->vals, 0, buf),
				    sizeof(vals))) TH_LOG("step %d", k);
}

/* The copy w must be the sum, addressed to worker rank of job. */
static void expect_worker_copy(struct __test_metadata *_metadata,
			       struct g_env *self, const struct t_run *w,
			       int rank, __u16 job)
{
	struct t_pkt got;
	__s32 vals[NV];
	__u8 mac[6];

	ASSERT_EQ(0, t_parse(w->pkt, w->len, &got, vals, NV));
	EXPECT_EQ(t_worker_ip(rank), got.daddr);
	EXPECT_EQ(t_ip(T_SW_IP), got.saddr);
	EXPECT_EQ(T_WORKER_PORT + job, got.dport);
	EXPECT_EQ(ESA_DEFAULT_PORT, got.sport);
	EXPECT_EQ(1, got.df);
	EXPECT_EQ(0, got.resv);
	EXPECT_EQ(0, t_csum(w->pkt + sizeof(struct ethhdr), sizeof(struct iphdr)));
	t_worker_mac(rank, mac);
	EXPECT_EQ(0, memcmp(got.dmac, mac, 6));
	EXPECT_EQ(0, memcmp(got.smac, self->n.sw0_mac, 6));
	for (int i = 0; i < NV; i++)
		EXPECT_EQ(self->sum[i], vals[i]);
}

/* ------------------------------------------------------------------ */
/* State: slots, tombstones, bindings, counters                        */
/* ------------------------------------------------------------------ */

static void g_check_slot(struct __test_metadata *_metadata,
			 struct g_env *self, const struct g_slot *w, int k)
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

/* After step k: its counters, slot, tombstones and binding. */
static void g_check(struct __test_metadata *_metadata, struct g_env *self,
		    const struct g_step *st, int k)
{
	const struct g_bind *b = &st->bind;

	for (int i = 0; i < 6 && st->ctr[i].on; i++) {
		const struct g_ctr *x = &st->ctr[i];

		EXPECT_EQ(x->val, t_ctr(&self->e, g_row(self, x->job), x->ctr))
			TH_LOG("step %d: job %u's %s", k, x->job, esa_counter_names[x->ctr]);
	}
	if (st->slot.on)
		g_check_slot(_metadata, self, &st->slot, k);
	for (int i = 0; i < 2 && st->tomb[i].on; i++) {
		const struct g_tomb *t = &st->tomb[i];

		EXPECT_EQ(t->kind, t_tomb(&self->e, t->job, g_seq_of(self, t->job, &t->seq)))
			TH_LOG("step %d: tombstone of job %u", k, t->job);
	}
	if (b->on) {
		struct esa_bind got;

		ASSERT_EQ(0, esa_bind_read(&self->e, b->job, b->rank, &got));
		EXPECT_EQ(b->word, got.word & 0xffffffff) TH_LOG("step %d", k);
		if (b->c_port)
			EXPECT_EQ(g_port(self, b->port), (int)got.ifindex) TH_LOG("step %d", k);
	}
}

/* Only rx and the row's first counter moved, each by one. */
static void g_check_only(struct __test_metadata *_metadata,
			 const struct g_step *st, const struct esa_counters *before,
			 const struct esa_counters *after, int k)
{
	for (int i = 0; i < __ESA_C_MAX; i++) {
		__u64 d = after->c[i] - before->c[i];
		__u64 want = i == st->ctr[0].ctr || i == ESA_C_RX;

		EXPECT_EQ(want, d) TH_LOG("step %d: %s", k, esa_counter_names[i]);
	}
}

/* ------------------------------------------------------------------ */
/* Steps                                                               */
/* ------------------------------------------------------------------ */

/* Make the slot of chunk seq of job idle past stale_ms. */
static int g_age(struct g_env *self, __u16 job, __u32 seq, __u32 stale_ms)
{
	__u32 idx = t_slot_of(&self->e, job, seq);
	struct esa_slot s;

	if (bpf_map_lookup_elem(self->e.slots_fd, &idx, &s))
		return -1;
	s.stamp_ns = esa_now_ns() - (stale_ms + 1) * 1000000ULL;
	return bpf_map_update_elem(self->e.slots_fd, &idx, &s, BPF_EXIST);
}

static struct esa_job leaf_job(void)
{
	struct esa_job j = t_job(W, T_PS_B, 7, JL);

	j.rank[2] = (struct esa_addr){};	/* under another leaf */
	j.up.ip = t_ip(T_PS_A);
	j.up.port = htons(ESA_DEFAULT_PORT);
	return j;
}

/* The job a G_ADD registers. */
static struct esa_job g_job(__u16 id, const struct g_add *a)
{
	struct esa_job j;

	if (a->kind == J_LEAF)
		j = leaf_job();
	else if (a->kind == J_SPINE)
		j = t_spine_job(7);
	else
		j = t_job(a->workers ?: W, a->ps ?: T_PS_A, 7, id);
	for (int i = 0; i < 3 && a->edit[i].f; i++) {
		__s64 v = a->edit[i].v;

		switch (a->edit[i].f) {
		case JE_NWORKERS: j.nworkers = v; break;
		case JE_DUP_RANK: j.rank[1] = j.rank[0]; break;
		case JE_PS_PORT: j.ps.port = v; break;
		case JE_BASE: j.region_base = v; break;
		case JE_SIZE: j.region_size = v; break;
		case JE_LEASE: j.lease_ms = v; break;
		case JE_NO_RANK: j.rank[v] = (struct esa_addr){}; break;
		case JE_UP_NONEIGH: j.up.ip = t_ip(T_PS_NONEIGH); break;
		case JE_RANKS_MOVED:
			for (int k = 0; k < W; k++)
				j.rank[k].ip = t_worker_ip(k + v);
			break;
		}
	}
	return j;
}

/* G_ADD: register job id as the row says; the outcome it gives. */
static void g_add(struct __test_metadata *_metadata, struct g_env *self,
		  const struct g_step *st, int k)
{
	const struct g_add *a = &st->add;
	struct esa_registry reg;
	int rc;

	self->j = g_job(st->job, a);
	self->err[0] = 0;
	if (a->how == HOW_RAW) {
		rc = esa_job_add(&self->e, st->job, &self->j, self->err, sizeof(self->err));
	} else if (a->how == HOW_REGISTRY) {
		ASSERT_EQ(0, t_registry(&self->e, &reg));
		rc = t_job_add_macs(&reg, st->job, &self->j);
		snprintf(self->err, sizeof(self->err), "%s", reg.err);
		esa_registry_close(&reg);
	} else {
		rc = t_job_add(&self->e, st->job, &self->j, self->err, sizeof(self->err));
	}
	if (a->rc == G_FAILS) {
		EXPECT_NE(0, rc) TH_LOG("step %d", k);
	} else if (!a->rc) {
		ASSERT_EQ(0, rc) TH_LOG("step %d: %s", k, self->err);
	} else {
		EXPECT_EQ(a->rc, rc) TH_LOG("step %d: %s", k, self->err);
	}
	if (a->err)
		EXPECT_NE(NULL, strstr(self->err, a->err)) TH_LOG("step %d: %s", k, self->err);
}

static void g_send(struct __test_metadata *_metadata, struct g_env *self,
		   const struct g_case *c, const struct g_step *st, __u32 seq, int k)
{
	struct esa_counters before, after;
	__u8 in[2048];
	int len = g_frame(self, st, seq, in);

	if (st->only)
		ASSERT_EQ(0, esa_counters_sum(&self->e, &before));
	ASSERT_EQ(0, t_run(self->e.prog_fd, in, len, g_port(self, st->port),
			   NULL, 0, &self->out));
	EXPECT_EQ(st->verdict, self->out.verdict) TH_LOG("step %d", k);
	EXPECT_EQ(0, self->out.metalen) TH_LOG("step %d", k);
	g_check_out(_metadata, self, c, st, seq, in, len);
	g_check_hdr(_metadata, self, &st->hdr, &self->out, k);
	if (st->only) {
		ASSERT_EQ(0, esa_counters_sum(&self->e, &after));
		g_check_only(_metadata, st, &before, &after, k);
	}
}

/*
 * A sum's copy as egress passes it (not a unicast: a held sum): its UDP
 * checksum right (none with udp-csum off) and IP id 0, for the hosts' GRO
 * (one flow).
 */
static void g_check_copy(struct __test_metadata *_metadata,
			 const struct g_env *self, const struct t_run *w, int k)
{
	const struct udphdr *udp = (const void *)(w->pkt + sizeof(struct ethhdr) +
						  sizeof(struct iphdr));
	const struct esa_hdr *h = (const void *)(w->pkt + T_HDRS);

	if (w->len < T_HDRS + sizeof(*h) || h->type != ESA_T_RESULT ||
	    h->reason == ESA_R_HOLD)
		return;
	if (self->no_udp_csum) {
		EXPECT_EQ(0, udp->check) TH_LOG("step %d", k);
	} else {
		EXPECT_TRUE(t_udp_csum_ok(w->pkt, w->len)) TH_LOG("step %d", k);
	}
	EXPECT_EQ(0, ((const struct iphdr *)(w->pkt + sizeof(struct ethhdr)))->id)
		TH_LOG("step %d", k);
}

/* G_EGRESS: the egress program on the frame the last send left. */
static void g_egress(struct __test_metadata *_metadata, struct g_env *self,
		     const struct g_step *st, int k)
{
	struct t_run w;

	ASSERT_EQ(0, t_run(self->e.egress_test_fd, self->out.pkt, self->out.len,
			   g_port(self, st->port), NULL, 0, &w));
	ASSERT_EQ(st->verdict, w.verdict) TH_LOG("step %d", k);
	if (w.verdict != XDP_PASS)
		return;
	g_check_copy(_metadata, self, &w, k);
	if (st->member)
		expect_worker_copy(_metadata, self, &w, st->member - 1, st->job);
	g_check_hdr(_metadata, self, &st->hdr, &w, k);
	if (st->out.kind == G_SAME)
		EXPECT_BYTES(&w, self->out.pkt, self->out.len);
}

static void g_step(struct __test_metadata *_metadata, struct g_env *self,
		   const struct g_case *c, const struct g_step *st, int k)
{
	__u32 seq = g_seq_of(self, st->job, &st->at);

	switch (st->op) {
	case G_SEND:
		g_send(_metadata, self, c, st, seq, k);
		break;
	case G_EGRESS:
		g_egress(_metadata, self, st, k);
		break;
	case G_DEL:
		ASSERT_EQ(0, esa_job_del(&self->e, st->job));
		if (st->clear)
			esa_deliver_clear(&self->e, st->job);
		break;
	case G_AGE:
		ASSERT_EQ(0, g_age(self, st->job, seq, c->stale_ms));
		break;
	case G_ADD:
		g_add(_metadata, self, st, k);
		break;
	case G_CALL:
		st->call(_metadata, self);
		break;
	case G_SH:
		ASSERT_EQ(0, t_sh("%s", st->sh)) TH_LOG("step %d: %s", k, st->sh);
		break;
	}
	g_check(_metadata, self, st, k);
}

static void g_case_run(struct __test_metadata *_metadata, struct g_env *self,
		       const struct g_case *c)
{
	if (c->values)
		c->values(self);
	for (int i = 0; i < 3 && c->place[i].on; i++)
		EXPECT_EQ(c->place[i].slot,
			  t_slot_of(&self->e, c->place[i].job, c->place[i].seq));
	for (int k = 0; k < G_STEPS && c->steps[k].op; k++)
		g_step(_metadata, self, c, &c->steps[k], k);
	if (!_metadata->passed)
		TH_LOG("the row: %s", c->what);
}

/* The tables, one per rule. */
#include "golden/parse.h"
#include "golden/trust.h"
#include "golden/jobs.h"
#include "golden/aggregate.h"
#include "golden/preempt.h"
#include "golden/resend.h"
#include "golden/results.h"
#include "golden/levels.h"

static const struct g_table g_tables[] = {
	G_TABLE("parse", g_parse),
	G_TABLE("trust", g_trust),
	G_TABLE("jobs", g_jobs),
	G_TABLE("aggregate", g_aggregate),
	G_TABLE("preempt", g_preempt),
	G_TABLE("resend", g_resend),
	G_TABLE("results", g_results),
	G_TABLE("levels", g_levels),
};

FIXTURE(golden) {
	struct g_env s;
};

FIXTURE_VARIANT(golden) {
	const struct g_case *c;
};

FIXTURE_SETUP(golden)
{
	ASSERT_EQ(0, g_env_init(&self->s));
}

FIXTURE_TEARDOWN(golden)
{
	esa_close(&self->s.e);
}

/* The row of this variant, from a switch of its own with jobs A and B. */
TEST_F(golden, packets)
{
	const struct g_case *c = variant->c;

	ASSERT_EQ(0, g_load(&self->s, c));
	g_case_run(_metadata, &self->s, c);
}

/* Every row of every table a variant of its own: "<rule>.<row>". */
static void __attribute__((constructor)) g_register(void)
{
	for (size_t t = 0; t < sizeof(g_tables) / sizeof(g_tables[0]); t++) {
		for (size_t k = 0; k < g_tables[t].n; k++) {
			const struct g_case *c = &g_tables[t].rows[k];
			struct __fixture_variant_metadata *v = calloc(1, sizeof(*v));
			FIXTURE_VARIANT(golden) *d = calloc(1, sizeof(*d));
			char *name;

			if (!v || !d || asprintf(&name, "%s.%s", g_tables[t].rule,
						 c->name) < 0)
				abort();
			d->c = c;
			v->name = name;
			v->data = d;
			__register_fixture_variant(&_golden_fixture_object, v);
		}
	}
}

TEST_HARNESS_MAIN
