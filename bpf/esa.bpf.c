// SPDX-License-Identifier: GPL-2.0
/*
 * esa.bpf.c - the ESA switch: in-network aggregation with preemptive slot
 * allocation, in XDP.
 *
 * Ingress (esa_xdp, attached to every port): parse, admit (the job's
 * registration, then where the rank lives: esa_bind.bpf.h), and apply the
 * policy of esa_policy.h to the slot the chunk maps to, under the slot's
 * spin lock.  A packet is absorbed (aggregated), turned into the result and
 * sent to every member of its job, or rewritten in place into what the
 * job's PS must see (an evicted partial, a collision, a resend) and sent
 * there.  No packet is ever created here; the job's devmap makes the copies
 * of a result, and the egress program addresses each to its member
 * (esa_deliver.bpf.h).
 *
 * Jobs come from the esa_jobs map (esa_jobs.bpf.h), or with -DESA_KFUNC
 * from esa.ko through kfuncs (esa_kfunc.bpf.h); everything else is the same
 * object code.  Map layouts: include/esa_maps.h.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "esa_switch.h"

#define AF_INET		2
#define fallthrough	__attribute__((__fallthrough__))
#define IP_DF		0x4000	/* everything the switch sends carries it */
#define IP_MF		0x2000
#define IP_OFFSET	0x1fff
#define NSEC_PER_MSEC	1000000ULL
#define ESA_TTL		64	/* of every packet the switch sends */

const volatile struct esa_cfg esa_cfg = {
	.port		= __bpf_constant_htons(ESA_DEFAULT_PORT),
	.nvals		= ESA_DEFAULT_VALUES,
	.slots		= 4096,
	.max_jobs	= 256,
	.stale_ms	= 100,
	.policy		= ESA_POLICY_ESA,
};

/*
 * What the data path needs to know about the packet's job: the UAPI's
 * struct esa_kf_jinfo, which bpf_esa_admit() fills in kfunc mode and the
 * map mode fills from esa_jobs (bpf/esa_jobs.bpf.h).
 */
#define esa_jinfo esa_kf_jinfo

#include "esa_maps.bpf.h"
#ifdef ESA_KFUNC
#include "esa_kfunc.bpf.h"
#else
#include "esa_jobs.bpf.h"
#endif
#include "esa_bind.bpf.h"
#include "esa_deliver.bpf.h"
#include "esa_acc.bpf.h"

/* ------------------------------------------------------------------ */
/* Ingress                                                             */
/* ------------------------------------------------------------------ */

/* What the step under the slot lock did, for the steps after it. */
struct esa_step {
	struct esa_evicted ev;
	__u64	ovf;		/* non-zero: the emitted sum left int32 */
	__u8	act;		/* enum esa_action */
};

/*
 * The packet's values and the slot's accumulators, as decision act says
 * (under the lock, before esa_slot_apply() moves the slot's count): the
 * packet's values become the sum, or the evicted partial, in place.
 * Returns non-zero when what the packet carries out left int32.
 */
static __always_inline __u64 esa_slot_values(__u64 *acc, __u32 *vals, __u8 act,
					     int rank_in, __u32 n)
{
	switch (act) {
	case ESA_A_CLAIM:
	case ESA_A_RECLAIM:
		esa_acc_set(acc, vals);
		return 0;
	case ESA_A_ADD:
		esa_acc_add(acc, vals);
		return 0;
	case ESA_A_COMPLETE:
	case ESA_A_HOLD:
		return esa_acc_emit(acc, vals, 1, ESA_BIAS(n + 1));
	case ESA_A_PREEMPT:
	case ESA_A_AGE:
		return esa_acc_swap(acc, vals, ESA_BIAS(n));
	case ESA_A_FLUSH:
		if (rank_in)	/* the resent rank is in already */
			return esa_acc_emit(acc, vals, 0, ESA_BIAS(n));
		return esa_acc_emit(acc, vals, 1, ESA_BIAS(n + 1));
	default:
		return 0;
	}
}

/* Does decision act rewrite the packet's values (esa_slot_values())? */
static __always_inline int esa_act_writes(__u8 act)
{
	return act == ESA_A_COMPLETE || act == ESA_A_HOLD ||
	       act == ESA_A_PREEMPT || act == ESA_A_AGE || act == ESA_A_FLUSH;
}

/*
 * Under the slot lock: decide (esa_policy.h), then do what the decision
 * says to the values and to the slot (esa_switch.h).  No calls: everything
 * is inlined.
 */
static __always_inline void esa_slot_step(struct esa_step *st,
					  struct esa_slot *s, __u64 *acc,
					  __u32 *vals, struct esa_tomb *tomb,
					  struct esa_tomb *otomb,
					  struct esa_view *view,
					  const struct esa_key *k,
					  const struct esa_peek *pk, __u64 now)
{
	__u8 code;

	esa_slot_view(view, s, tomb, k, pk, now,
		      (__u64)esa_cfg.stale_ms * NSEC_PER_MSEC);
	/*
	 * The decision goes through slot memory and comes back as a value the
	 * verifier cannot know: it then checks the execution below once for
	 * all the paths that led to some decision, not once per path.
	 */
	s->last = esa_decide(view) | view->rank_in << 4 |
		  (view->tomb == ESA_TOMB_NONE) << 5;
	code = *(volatile __u8 *)&s->last;
	st->act = code & 15;
	s->last = st->act;
	st->ovf = esa_slot_values(acc, vals, st->act, code & 16, s->nranks);
	esa_slot_apply(s, st->act, code & 16, code & 32, tomb, otomb, k, now,
		       &st->ev);
}

/* Count what the step made of the packet, rewrite it, send it on. */
static __always_inline int esa_send_out(struct xdp_md *ctx, struct esa_hdr *h,
					struct esa_counters *jc, __u16 ejob,
					const struct esa_jinfo *ji,
					const struct esa_out *o)
{
	struct esa_counters *oc;
	int i, c;

	for (i = 0; i < ESA_OUT_MAX_C; i++) {
		c = esa_out_ctr(o->c, i);
		if (c < 0)
			break;
		if (c < __ESA_C_MAX)
			CNT(jc, c);
	}
	if (o->oc) {	/* an evicted key's job: rare */
		oc = esa_ctr(ejob);
		for (i = 0; i < ESA_OUT_MAX_C; i++) {
			c = esa_out_ctr(o->oc, i);
			if (c < 0)
				break;
			if (c < __ESA_C_MAX)
				CNT(oc, c);
		}
	}
	if (o->to == ESA_TO_SLOT || o->to == ESA_TO_DROP)
		return XDP_DROP;
	esa_out_apply(h, o);
	if (o->to == ESA_TO_MEMBERS)
		return esa_deliver(ctx, o->job, ji->reg,
				   !(esa_cfg.flags & ESA_CFG_F_NO_PS_COPY));
	if (o->to == ESA_TO_UP)	/* the upstream its admission just read */
		return esa_to_up(ctx, o->job, ji->up.ip, ji->up.port);
	return esa_to_ps(ctx, o->job, o->job);
}

/* The packet's key, as esa_switch.h's rules see it, from its admission. */
static __always_inline void esa_key_of(struct esa_key *k, const struct esa_hdr *h,
				       __u32 jid, const struct esa_jinfo *ji)
{
	__u16 rank = bpf_ntohs(h->rank) & (ESA_MAX_WORKERS - 1);

	k->job = jid;
	k->gen = ji->gen;
	k->seq = bpf_ntohl(h->seq);
	k->nworkers = ji->nworkers;
	k->prio = h->prio;
	k->rset = ji->rset ? ji->rset : 1ULL << rank;
	k->mask = ji->mask ? ji->mask : esa_full_mask(ji->nworkers);
	k->leaf = !!(h->flags & ESA_F_LEAF);
	k->ovf = !!(h->flags & ESA_F_OVERFLOW);
	k->up = ji->up.ip != 0;
	k->resend = !!(h->flags & ESA_F_RESEND);
}

/*
 * A data packet of an admitted rank: the slot step.  Whether another key's
 * owner is alive takes a lookup, a call, which cannot happen under the
 * lock: peek at the owner now, and under the lock trust the answer only if
 * the owner did not change in between (esa_slot_view()).  mb: the frame
 * is multi-buffer, its values beyond the program's reach under the lock
 * (only helpers read frags): they go through esa_scratch.  A flag, not a
 * NULL vals: the verifier knows it on each path, where it cannot tell a
 * packet pointer from NULL and would check the step once more.
 */
static __always_inline int esa_data_slot(struct xdp_md *ctx, struct esa_hdr *h,
					 __u32 *vals, int mb, __u32 jid,
					 struct esa_counters *jc,
					 const struct esa_jinfo *ji,
					 const struct esa_key *kp, __u64 now)
{
	const struct esa_key k = *kp;
	struct esa_tomb *tomb, *otomb;
	struct esa_view view = {};
	struct esa_step st = {};
	struct esa_out o = {};
	struct esa_peek pk;
	struct esa_slot *s;
	__s64 sidx;
	__u64 *acc;
	__u32 idx;

	sidx = esa_slot_index(esa_cfg.policy, jid, k.seq, esa_cfg.slots,
			      ji->region_base, ji->region_size);
	if (sidx < 0) {
		esa_outcome_noslot(&o, jid, &k);
		return esa_send_out(ctx, h, jc, jid, ji, &o);
	}
	idx = sidx;
	s = bpf_map_lookup_elem(&esa_slots, &idx);
	acc = bpf_map_lookup_elem(&esa_acc, &idx);
	idx = esa_tomb_index(jid, k.seq);
	tomb = bpf_map_lookup_elem(&esa_tombs, &idx);
	if (!s || !acc || !tomb)
		return esa_drop(jc, ESA_C_DROP_INTERNAL);
	pk.job = s->job;
	pk.gen = s->gen;
	pk.seq = s->seq;
	pk.alive = s->state == ESA_SLOT_FREE ||
		   (pk.job == jid && pk.gen == ji->gen) ||
		   esa_owner_alive(ctx, pk.job, pk.gen, now);
	idx = esa_tomb_index(pk.job, pk.seq);
	otomb = bpf_map_lookup_elem(&esa_tombs, &idx);
	if (!otomb)
		return esa_drop(jc, ESA_C_DROP_INTERNAL);

	view.policy = esa_cfg.policy;
	view.pkt_prio = h->prio;
	view.resend = !!(h->flags & ESA_F_RESEND);
	if (mb) {	/* a multi-buffer frame's: copied out, and back below */
		idx = 0;
		vals = bpf_map_lookup_elem(&esa_scratch, &idx);
		if (!vals || bpf_xdp_load_bytes(ctx, ESA_VALS_OFF, vals,
						esa_cfg.nvals * sizeof(__u32)))
			return esa_drop(jc, ESA_C_DROP_INTERNAL);
	}
	bpf_spin_lock(&s->lock);
	esa_slot_step(&st, s, acc, vals, tomb, otomb, &view, &k, &pk, now);
	bpf_spin_unlock(&s->lock);
	/*
	 * The scratch looked up again: the verifier does not tie mb to what
	 * vals points at, and the helper takes no packet pointer.
	 */
	if (mb && esa_act_writes(st.act)) {
		idx = 0;
		vals = bpf_map_lookup_elem(&esa_scratch, &idx);
		if (!vals || bpf_xdp_store_bytes(ctx, ESA_VALS_OFF, vals,
						 esa_cfg.nvals * sizeof(__u32)))
			return esa_drop(jc, ESA_C_DROP_INTERNAL);
	}
	esa_outcome(&o, st.act, &st.ev, st.ovf, jid, &k);
	return esa_send_out(ctx, h, jc, st.ev.job, ji, &o);
}

/*
 * A data packet: check its header, admit it (its job's registration, then
 * the port and MAC its rank lives behind), and take it to its slot.  A job
 * of one rank needs no slot: its packet is its sum.
 */
static __always_inline int esa_data(struct xdp_md *ctx, struct ethhdr *eth,
				    struct udphdr *udp, struct esa_hdr *h,
				    __u32 *vals, int mb, __u32 jid,
				    struct esa_counters *jc)
{
	__u16 rank = bpf_ntohs(h->rank);
	struct esa_jinfo ji = {};
	__u64 now = esa_now();
	struct esa_key k;
	int err;

	if (rank >= ESA_MAX_WORKERS)
		return esa_drop(jc, ESA_C_DROP_RANK);
	/*
	 * A worker's: one rank, maybe resent; a leaf's: its ranks (checked
	 * against its registration by esa_admit()), maybe overflowed.
	 */
	if ((h->flags & ESA_F_LEAF ?
	     h->flags & ~(ESA_F_LEAF | ESA_F_OVERFLOW) :
	     (h->flags & ~ESA_F_RESEND) ||
	     h->bitmap != bpf_cpu_to_be64(1ULL << rank)) ||
	    h->reason || h->resv)
		return esa_drop(jc, ESA_C_DROP_HEADER);
	err = esa_admit(ctx, now, &ji);
	if (!err)
		err = esa_bind_check(ctx, eth, udp, jid, rank, ji.reg);
	if (err)
		return esa_drop(jc, err);
	esa_key_of(&k, h, jid, &ji);
	if (esa_solo(k.rset, k.mask)) {
		struct esa_out o = {};

		esa_outcome_solo(&o, jid, &k);
		return esa_send_out(ctx, h, jc, jid, &ji, &o);
	}
	return esa_data_slot(ctx, h, vals, mb, jid, jc, &ji, &k, now);
}

/*
 * Did the frame come in from the PS's next hop, as the switch's route to
 * the PS has it (the port and MAC its held sums went to)?  An ack follows a
 * held sum, whose sending resolved and cached that route.
 */
static __always_inline int esa_from_ps_hop(struct xdp_md *ctx,
					   const struct ethhdr *eth, __u32 jid)
{
	__u32 key = ESA_ROUTE(jid, ESA_ROUTE_PS);
	const struct esa_route *rt = bpf_map_lookup_elem(&esa_routes, &key);

	return rt && rt->stamp_ns && rt->ifindex == ctx->ingress_ifindex &&
	       esa_mac_eq(eth->h_source, rt->dmac);
}

/* The job's registration, for a packet of its PS (an ACK, a SUM). */
struct esa_psjob {
	__u32	gen, reg, base, size, n;
};

/*
 * Is this packet its job's PS's?  Its address and port, the port it is
 * behind (the job's fan-out says), and the port and MAC the switch reaches
 * it through.  0, or the counter to drop it with: drop_job, or drop_ack
 * (anything that claims to be the PS and is not), drop_header (a PS's sum
 * must have every rank, no rank, and no flag but overflow).
 */
static __always_inline int esa_from_ps(struct xdp_md *ctx, struct ethhdr *eth,
				       struct iphdr *ip, struct udphdr *udp,
				       struct esa_hdr *h, __u32 jid,
				       struct esa_psjob *pj)
{
	const struct esa_fanout *fan;
	struct esa_addr ps;
	__u32 psi;

	if (!esa_job_ps(ctx, jid, &ps, &pj->n) ||
	    !esa_job_regs(ctx, jid, &pj->gen, &pj->reg, &pj->base, &pj->size))
		return ESA_C_DROP_JOB;
	fan = bpf_map_lookup_elem(&esa_members, &jid);
	psi = fan ? fan->ps : ESA_FAN_MAX;
	if (ps.ip != ip->saddr || ps.port != udp->source ||
	    (fan && fan->reg == pj->reg && psi < ESA_FAN_MAX &&
	     fan->m[psi].ifindex != ctx->ingress_ifindex) ||
	    !esa_from_ps_hop(ctx, eth, jid))
		return ESA_C_DROP_ACK;
	if ((h->flags & ~ESA_F_OVERFLOW) || h->resv ||
	    h->rank != bpf_htons(ESA_RANK_NONE) ||
	    h->bitmap != bpf_cpu_to_be64(esa_full_mask(pj->n)))
		return ESA_C_DROP_HEADER;
	return 0;
}

/*
 * A sum the PS finished (ESA_T_SUM): to the job's workers as their result,
 * from the switch's address like every result, with the PS's reason (why
 * the chunk reached the PS) as it came; never back to the PS.  One packet
 * on the PS's link instead of one per worker.  Only from the job's PS
 * (esa_from_ps()), any policy.
 */
static __always_inline int esa_sum(struct xdp_md *ctx, struct ethhdr *eth,
				   struct iphdr *ip, struct udphdr *udp,
				   struct esa_hdr *h, __u32 jid,
				   struct esa_counters *jc)
{
	struct esa_psjob pj;
	int err;

	err = esa_from_ps(ctx, eth, ip, udp, h, jid, &pj);
	if (!err && (h->reason == ESA_R_HOLD || h->reason >= __ESA_R_MAX))
		err = ESA_C_DROP_HEADER;
	if (err)
		return esa_drop(jc, err);
	CNT(jc, ESA_C_PS_SUM);
	h->type = ESA_T_RESULT;
	return esa_deliver(ctx, jid, pj.reg, 0);
}

/*
 * Policy atp: the PS's ack of a held sum frees the slot and goes to the
 * workers as their result.  Only from the job's PS (esa_from_ps()), and
 * only for a sum held in a slot with the same key and generation: anything
 * else is dropped and counted (drop_ack; a repeat of the PS, acks_stale),
 * never sent to the workers.
 */
static __always_inline int esa_ack(struct xdp_md *ctx, struct ethhdr *eth,
				   struct iphdr *ip, struct udphdr *udp,
				   struct esa_hdr *h, __u32 jid,
				   struct esa_counters *jc)
{
	__u32 seq = bpf_ntohl(h->seq), idx;
	struct esa_tomb *tomb;
	struct esa_psjob pj;
	struct esa_slot *s;
	int held = 0, err;
	__s64 sidx;

	err = esa_from_ps(ctx, eth, ip, udp, h, jid, &pj);
	if (!err && h->reason)
		err = ESA_C_DROP_HEADER;
	if (err)
		return esa_drop(jc, err);
	sidx = esa_slot_index(esa_cfg.policy, jid, seq, esa_cfg.slots, pj.base,
			      pj.size);
	if (sidx < 0)
		return esa_drop(jc, ESA_C_ACK_STALE);
	idx = sidx;
	s = bpf_map_lookup_elem(&esa_slots, &idx);
	idx = esa_tomb_index(jid, seq);
	tomb = bpf_map_lookup_elem(&esa_tombs, &idx);
	if (!s || !tomb)
		return esa_drop(jc, ESA_C_DROP_INTERNAL);
	bpf_spin_lock(&s->lock);
	held = esa_ack_frees(s, tomb, jid, pj.gen, seq);
	bpf_spin_unlock(&s->lock);
	if (!held)	/* the PS repeats acks: its first may be lost */
		return esa_drop(jc, ESA_C_ACK_STALE);
	CNT(jc, ESA_C_ACK);
	h->type = ESA_T_RESULT;
	return esa_deliver(ctx, jid, pj.reg, 0);
}

/*
 * Loaded without a switch address, is the packet in ctx (IPv4, to the ESA
 * port) addressed to this box?  Only then is it the switch's: a box that
 * also forwards must not take transit UDP to the port.  The FIB says: a
 * local address (or broadcast, or no route: NOT_FWDED), or forwarding off
 * on the port (then there is no transit).  The last answer is cached per
 * CPU for ESA_ROUTE_TTL_NS, so the workers' packets cost a compare.
 */
__esa_global int esa_to_me(struct xdp_md *ctx)
{
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = (void *)(long)ctx->data;
	struct bpf_fib_lookup fib = {};
	struct esa_cpu *cpu;
	struct iphdr *ip;
	__u32 zero = 0;
	__u64 now;
	long rc;

	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end)
		return 0;
	now = esa_now();
	cpu = bpf_map_lookup_elem(&esa_cpu, &zero);
	if (cpu && cpu->me_ns && cpu->me == ip->daddr &&
	    (__s64)(now - cpu->me_ns) <= (__s64)ESA_ROUTE_TTL_NS)
		return 1;
	fib.family = AF_INET;
	fib.ipv4_src = ip->saddr;
	fib.ipv4_dst = ip->daddr;
	fib.ifindex = ctx->ingress_ifindex;
	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
	if (rc != BPF_FIB_LKUP_RET_NOT_FWDED && rc != BPF_FIB_LKUP_RET_FWD_DISABLED)
		return 0;
	if (cpu) {
		cpu->me = ip->daddr;
		cpu->me_ns = now ? now : 1;
	}
	return 1;
}

/* Is the packet in ctx, to the ESA port, the switch's to take? */
static __always_inline int esa_mine(struct xdp_md *ctx)
{
	return esa_cfg.addr || esa_to_me(ctx);
}

/* IP options or a first fragment: drop if it is for us, else not ours. */
static __always_inline int esa_odd_ip(struct xdp_md *ctx, struct iphdr *ip,
				      void *end)
{
	struct udphdr *udp;
	__u32 hl = ip->ihl * 4;

	if (ip->frag_off & bpf_htons(IP_OFFSET) || hl < sizeof(*ip))
		return XDP_PASS;
	udp = (void *)ip + hl;
	if ((void *)(udp + 1) > end || udp->dest != esa_cfg.port ||
	    !esa_mine(ctx))
		return XDP_PASS;
	return esa_drop(esa_ctr(esa_cfg.max_jobs), ESA_C_DROP_IP);
}

/*
 * Frames of one buffer or several (jumbo MTUs); the values of a
 * multi-buffer frame go through esa_scratch (esa_data_slot()).
 */
static __always_inline int esa_ingress(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	const __u32 need = sizeof(struct udphdr) + ESA_HDR_LEN +
			   esa_cfg.nvals * sizeof(__u32);
	struct ethhdr *eth = data;
	struct esa_counters *jc;
	struct udphdr *udp;
	struct iphdr *ip;
	struct esa_hdr *h;
	__u32 jid, *vals;
	int mb;

	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->version != 4 ||
	    ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	if (esa_cfg.addr && ip->daddr != esa_cfg.addr)
		return XDP_PASS;
	if (ip->ihl != 5 || ip->frag_off & bpf_htons(IP_MF | IP_OFFSET))
		return esa_odd_ip(ctx, ip, end);
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end || udp->dest != esa_cfg.port ||
	    !esa_mine(ctx))
		return XDP_PASS;

	/* An ESA packet: from here on it is aggregated, sent on, or counted. */
	h = (void *)(udp + 1);
	if ((void *)(h + 1) > end) {
		jc = esa_ctr(esa_cfg.max_jobs);
		CNT(jc, ESA_C_RX);
		return esa_drop(jc, ESA_C_DROP_TRUNC);
	}
	jid = bpf_ntohs(h->job);
	if (h->version != ESA_VERSION || jid >= esa_cfg.max_jobs) {
		jc = esa_ctr(esa_cfg.max_jobs);
		CNT(jc, ESA_C_RX);
		return esa_drop(jc, h->version != ESA_VERSION ?
				ESA_C_DROP_VERSION : ESA_C_DROP_JOB);
	}
	/*
	 * jid has its row, so never NULL; but a NULL jc let through would
	 * have the verifier check the slot step once more.
	 */
	jc = esa_ctr(jid);
	if (!jc)
		return esa_drop(esa_ctr(esa_cfg.max_jobs), ESA_C_DROP_INTERNAL);
	CNT(jc, ESA_C_RX);
	if (bpf_ntohs(h->count) != esa_cfg.nvals)
		return esa_drop(jc, ESA_C_DROP_COUNT);
	vals = (void *)(h + 1);
	/* multi-buffer (jumbo): esa_data_slot() copies the values */
	mb = (void *)vals + esa_cfg.nvals * sizeof(__u32) > end;
	if ((mb && bpf_xdp_get_buff_len(ctx) <
		   ESA_VALS_OFF + esa_cfg.nvals * sizeof(__u32)) ||
	    bpf_ntohs(ip->tot_len) < sizeof(*ip) + need)
		return esa_drop(jc, ESA_C_DROP_TRUNC);
	if (bpf_ntohs(udp->len) != need ||
	    bpf_ntohs(ip->tot_len) != sizeof(*ip) + need)
		return esa_drop(jc, ESA_C_DROP_COUNT);
	if (h->type == ESA_T_DATA)
		return esa_data(ctx, eth, udp, h, vals, mb, jid, jc);
	if (h->type == ESA_T_ACK && esa_cfg.policy == ESA_POLICY_ATP)
		return esa_ack(ctx, eth, ip, udp, h, jid, jc);
	if (h->type == ESA_T_SUM)
		return esa_sum(ctx, eth, ip, udp, h, jid, jc);
	if (h->type == ESA_T_RESULT)
		return esa_down(ctx, ip, udp, h, jid, jc);
	return esa_drop(jc, ESA_C_DROP_TYPE);
}

/* Native ports: frames of one buffer or several (xdp.frags). */
SEC("xdp.frags")
int esa_xdp(struct xdp_md *ctx)
{
	return esa_ingress(ctx);
}

/*
 * Generic ports: the same code without frags.  For a program that takes
 * frags, generic XDP copies the skb (skb_cow_data_for_xdp()), and what
 * reaches tc ingress after XDP_PASS then has mac_len 0 (6.18): the tc
 * fan-out finds its metadata 14 bytes off and takes no sum.  Without frags
 * the kernel linearizes the skb instead, a jumbo frame included, and the
 * program sees every frame whole.
 */
SEC("xdp")
int esa_xdp_skb(struct xdp_md *ctx)
{
	return esa_ingress(ctx);
}

/* ------------------------------------------------------------------ */
/* Egress (esa_deliver.bpf.h)                                          */
/* ------------------------------------------------------------------ */

SEC("xdp.frags/devmap")	/* as the ingress: a devmap takes one kind */
int esa_egress_prog(struct xdp_md *ctx)
{
	return esa_egress(ctx, ctx->egress_ifindex);
}

/* Generic mode's fan-out, at the tc ingress of its ports (esa_maps.h). */
SEC("tc")
int esa_tc_fan(struct __sk_buff *skb)
{
	return esa_tc_fanout(skb);
}

/*
 * The same egress code as a plain XDP program, with the ingress ifindex
 * standing in for the egress one: BPF_PROG_TEST_RUN cannot run devmap
 * programs, and the golden tests must.  Never attached.
 */
SEC("xdp")
int esa_egress_test(struct xdp_md *ctx)
{
	return esa_egress(ctx, ctx->ingress_ifindex);
}

char LICENSE[] SEC("license") = "GPL";
