/* SPDX-License-Identifier: GPL-2.0 */
/*
 * esa_deliver.bpf.h - how packets leave the switch: to a job's PS (unicast,
 * through the cached route), and a finished sum to every member of its job
 * (one copy per member through the job's own devmap, each addressed by the
 * egress program).  docs/design.md, "Delivering a result".
 */
#ifndef _ESA_DELIVER_BPF_H
#define _ESA_DELIVER_BPF_H

static __always_inline long esa_fib(struct xdp_md *ctx, struct iphdr *ip,
				    struct udphdr *udp, __be32 dst, __be16 dport,
				    struct bpf_fib_lookup *fib)
{
	fib->family = AF_INET;
	fib->tos = ip->tos;
	fib->l4_protocol = IPPROTO_UDP;
	fib->sport = udp->source;
	fib->dport = dport;
	fib->tot_len = bpf_ntohs(ip->tot_len);
	fib->ipv4_src = ip->saddr;
	fib->ipv4_dst = dst;
	fib->ifindex = ctx->ingress_ifindex;
	return bpf_fib_lookup(ctx, fib, sizeof(*fib), 0);
}

/*
 * Route `which` of job jid, to ps (its PS, or a leaf's spine): the FIB's
 * answer, cached per job for ESA_ROUTE_TTL_NS.  Call with the packet's
 * source already the switch's.  Returns BPF_FIB_LKUP_RET_SUCCESS and *rtp,
 * or the FIB's failure (never cached).
 */
static __always_inline long esa_ps_route(struct xdp_md *ctx, struct esa_pkt *p,
					 __u32 jid, const struct esa_addr *ps,
					 struct esa_route **rtp, __u32 which)
{
	struct bpf_fib_lookup fib = {};
	__u32 key = ESA_ROUTE(jid, which);
	struct esa_route *rt;
	__u64 now = esa_now();
	long rc;

	rt = bpf_map_lookup_elem(&esa_routes, &key);
	if (!rt)
		return BPF_FIB_LKUP_RET_NOT_FWDED;
	*rtp = rt;
	if (rt->stamp_ns && rt->ps_ip == ps->ip && rt->ps_port == ps->port &&
	    rt->src == p->ip->saddr &&
	    (__s64)(now - rt->stamp_ns) <= (__s64)ESA_ROUTE_TTL_NS)
		return BPF_FIB_LKUP_RET_SUCCESS;
	rc = esa_fib(ctx, p->ip, p->udp, ps->ip, ps->port, &fib);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS) {
		rt->stamp_ns = 0;
		return rc;
	}
	rt->ifindex = fib.ifindex;
	rt->ps_ip = ps->ip;
	rt->ps_port = ps->port;
	rt->src = p->ip->saddr;
	__builtin_memcpy(rt->dmac, fib.dmac, 6);	/* unaligned on the stack */
	__builtin_memcpy(rt->smac, fib.smac, 6);
	rt->stamp_ns = now ? now : 1;
	return rc;
}

/*
 * Why a packet the FIB would not route is dropped: too large for the
 * route's MTU (the FIB says it needs fragmenting, and the switch sends
 * with DF), or no route.
 */
static __always_inline __u32 esa_route_drop(long rc)
{
	return rc == BPF_FIB_LKUP_RET_FRAG_NEEDED ? ESA_C_DROP_MTU :
						     ESA_C_DROP_NOROUTE;
}

/*
 * Is the frame too large for port ifindex, by the kernel's own rule for a
 * redirect (its MTU plus the link header and a VLAN tag, xdp_ok_fwd_dev()
 * and is_skb_forwardable())?  ctx: an xdp_md or a __sk_buff.
 */
#define ESA_VLAN_HLEN	4
#define esa_too_big(ctx, ifindex)					\
	({								\
		__u32 __mtu = 0;					\
		bpf_check_mtu(ctx, ifindex, &__mtu, -ESA_VLAN_HLEN, 0) ==\
			BPF_MTU_CHK_RET_FRAG_NEEDED;			\
	})

/* esa_fan_mtu()'s walk over the members, one bpf_loop() step each. */
struct esa_mtu_walk {
	struct xdp_md		*ctx;
	const struct esa_fanout	*fan;
	__u32			port;	/* of the member before */
	__u32			big;	/* the frame exceeds port's MTU */
	__u32			n;	/* copies lost so far */
	__u32			ps_copy;
};

static long esa_mtu_step(__u32 i, void *data)
{
	struct esa_mtu_walk *w = data;
	const struct esa_member *m;

	if (i >= ESA_FAN_MAX)
		return 1;
	m = &w->fan->m[i];
	if (m->ifindex != w->port) {
		w->port = m->ifindex;
		w->big = esa_too_big(w->ctx, w->port);
	}
	if (w->big && (w->ps_copy || m->rank != ESA_MEMBER_PS))
		w->n++;
	return 0;
}

/*
 * The copies of a sum the kernel's broadcast will not make: a devmap
 * broadcast skips a port whose MTU the frame exceeds, silently.  Each
 * member behind such a port is counted (drop_mtu); members are sorted by
 * port, so each port is checked once.  A bpf_loop(): the verifier checks
 * the step once, where a loop of its own it walks per member and per
 * combination of what the members before it had.
 */
static __always_inline void esa_fan_mtu(struct xdp_md *ctx,
					struct esa_counters *c,
					const struct esa_fanout *fan,
					int ps_copy)
{
	struct esa_mtu_walk w = {
		.ctx = ctx, .fan = fan, .ps_copy = !!ps_copy,
	};

	bpf_loop(fan->n < ESA_FAN_MAX ? fan->n : ESA_FAN_MAX, esa_mtu_step,
		 &w, 0);
	if (c)	/* no test of n: the verifier would tell each n apart */
		c->c[ESA_C_DROP_MTU] += w.n;
}

/*
 * Send the frame in ctx out of port ifindex as it is: through esa_ports,
 * so that it carries the egress program as every frame queued to that port
 * must (esa_maps.h); a port the switch does not know gets a plain redirect.
 */
static __always_inline int esa_xmit(__u32 ifindex)
{
	if (!bpf_map_lookup_elem(&esa_ports, &ifindex))
		return bpf_redirect(ifindex, 0);
	return bpf_redirect_map(&esa_ports, ifindex, 0);
}

/*
 * Send the packet in ctx, already rewritten, to the PS of job ps_job, and
 * count it in counter row `row`.  The switch is its source: the PS takes
 * partials, collisions and results only from the switch's address and port
 * (docs/protocol.md, "Trust"), and a new packet starts with a fresh TTL.
 * Fast path: the cached route and a redirect.  When the next hop is not
 * resolved, the packet goes through the kernel stack with the worker's
 * source, which the stack forwards like any routed packet, resolving the
 * next hop on the way; the PS refuses that one packet (not from the
 * switch), which the workers' resends make good.  A PS on this box cannot
 * be served (esactl refuses to register one): dropped, drop_noroute.
 */
__esa_global int esa_to_ps(struct xdp_md *ctx, __u32 ps_job, __u32 row)
{
	struct esa_counters *c = esa_ctr(row);
	struct esa_route *rt = NULL;
	struct esa_addr ps;
	struct esa_pkt p;
	__be32 worker;
	__u32 n;
	long rc;

	if (esa_parse(ctx, &p))
		return esa_drop(c, ESA_C_DROP_INTERNAL);
	if (!esa_job_ps(ctx, ps_job, &ps, &n))
		return esa_drop(c, ESA_C_DROP_JOB);
	worker = p.ip->saddr;
	p.ip->saddr = esa_sw_addr(p.ip);
	p.ip->daddr = ps.ip;
	p.ip->ttl = ESA_TTL;
	p.ip->frag_off = bpf_htons(IP_DF);
	p.ip->id = 0;
	p.udp->source = esa_cfg.port;
	p.udp->dest = ps.port;
	p.udp->check = 0;

	rc = esa_ps_route(ctx, &p, ps_job, &ps, &rt, ESA_ROUTE_PS);
	if (rc == BPF_FIB_LKUP_RET_SUCCESS && rt) {
		esa_ip_csum(p.ip);
		esa_mac_cpy(p.eth->h_dest, rt->dmac);
		esa_mac_cpy(p.eth->h_source, rt->smac);
		CNT(c, ESA_C_PS_TX);
		return esa_xmit(rt->ifindex);
	}
	if (rc == BPF_FIB_LKUP_RET_NO_NEIGH) {
		p.ip->saddr = worker;
		esa_ip_csum(p.ip);
		CNT(c, ESA_C_PS_TX);
		CNT(c, ESA_C_PS_STACK);
		return XDP_PASS;
	}
	return esa_drop(c, esa_route_drop(rc));
}

/* The ESA_PORT_* marks of port ifindex (esa_maps.h), 0 if none. */
static __always_inline __u32 esa_port_flags(__u32 ifindex)
{
	const struct esa_port_info *pi;

	pi = bpf_map_lookup_elem(&esa_portinfo, &ifindex);
	return pi ? pi->flags : 0;
}

/*
 * Is the frame in ctx, whose IP header is at ip, more than its linear part
 * (multi-buffer XDP)?  Its IP length says: esa_xdp() took only frames of
 * exactly that length.  No helper call on the common path.
 */
static __always_inline int esa_multibuf(struct xdp_md *ctx,
					const struct iphdr *ip)
{
	__u32 len = bpf_ntohs(ip->tot_len);

	/*
	 * Bounded first: the verifier of 6.1 and 6.12 does not bound a byte
	 * swap's result and refuses it added to a packet pointer.  No frame
	 * esa_xdp() took is longer.
	 */
	if (len > ESA_IP_LEN(ESA_MAX_VALUES))
		return 1;
	return (void *)ip + len > (void *)(long)ctx->data_end;
}

/*
 * Generic mode: hand the finished sum in ctx to the port's tc program,
 * which makes the members' copies (esa_tc.bpf.h, include/esa_maps.h).
 */
static __always_inline int esa_fan_by_tc(struct xdp_md *ctx,
					 struct esa_counters *c, __u32 jid,
					 __u32 reg, int ps_copy)
{
	struct esa_fan_meta *fm;

	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*fm)))
		return esa_drop(c, ESA_C_DROP_INTERNAL);
	fm = (void *)(long)ctx->data_meta;
	if ((void *)(fm + 1) > (void *)(long)ctx->data)
		return esa_drop(c, ESA_C_DROP_INTERNAL);
	fm->magic = ESA_FAN_MAGIC;
	fm->reg = reg;
	fm->job = jid;
	fm->ps_copy = !!ps_copy;
	fm->resv = 0;
	fm->resv2 = 0;
	fm->cookie = esa_cfg.cookie;
	return XDP_PASS;
}

/* esa_broadcast()'s answer when the PS must deliver the sum itself. */
#define ESA_BCAST_TO_PS		(-1)

/*
 * Send the finished sum of job jid (registration reg) in ctx to every
 * member of the job: one copy per member through the job's devmap, each
 * addressed by the egress program; with ps_copy the PS is a member too
 * (policy atp's ACK comes from the PS, which has the sum).  The PS answers
 * the workers' resends of lost results, so it must get every sum: when the
 * job has no fan-out table for this registration (registered behind
 * esactl's back) or its PS's route has moved off the port the table says,
 * the sum is rewritten into a complete partial (DELIVER) and the caller
 * sends it to the PS (ESA_BCAST_TO_PS), which delivers it.  So is a
 * multi-buffer sum (jumbo) at a native port without the tc fan-out
 * (ESA_PORT_TC, esa_maps.h): a devmap cannot copy it.  Use it through
 * esa_deliver().
 */
__esa_global int esa_broadcast(struct xdp_md *ctx, __u32 jid, __u32 reg,
			       int ps_copy)
{
	struct esa_counters *c = esa_ctr(jid);
	struct esa_route *rt = NULL;
	struct esa_fanout *fan;
	struct esa_cpu *cpu;
	struct esa_addr ps;
	struct esa_pkt p;
	__u32 n, psi, pflags, zero = 0;
	__be32 worker;
	void *devmap;
	int mb;

	if (esa_parse(ctx, &p))
		return esa_drop(c, ESA_C_DROP_INTERNAL);
	if (!esa_job_ps(ctx, jid, &ps, &n))
		return esa_drop(c, ESA_C_DROP_JOB);
	fan = bpf_map_lookup_elem(&esa_members, &jid);
	devmap = bpf_map_lookup_elem(&esa_fan, &jid);
	cpu = bpf_map_lookup_elem(&esa_cpu, &zero);
	if (!fan || !cpu)
		return esa_drop(c, ESA_C_DROP_INTERNAL);
	worker = p.ip->saddr;
	p.ip->saddr = esa_sw_addr(p.ip);
	psi = fan->ps;
	if (!devmap || fan->reg != reg || !fan->n || (ps_copy && psi >= ESA_FAN_MAX))
		goto whole_to_ps;
	if (ps_copy && psi < ESA_FAN_MAX &&
	    (esa_ps_route(ctx, &p, jid, &ps, &rt, ESA_ROUTE_PS) !=
	     BPF_FIB_LKUP_RET_SUCCESS ||
	     !rt || rt->ifindex != fan->m[psi].ifindex))
		goto whole_to_ps;

	p.ip->ttl = ESA_TTL;
	p.ip->frag_off = bpf_htons(IP_DF);
	p.ip->id = (__u16)(++cpu->bcast);
	p.udp->source = esa_cfg.port;
	pflags = esa_port_flags(ctx->ingress_ifindex);
	mb = esa_multibuf(ctx, p.ip);	/* no devmap copies of it (esa_maps.h) */
	if ((pflags & ESA_PORT_SKB) || ((pflags & ESA_PORT_TC) && mb)) {
		p.h->resv = 0;
		p.ip->id = 0;	/* the wire's: as egress leaves it */
		esa_ip_csum(p.ip);
		if (esa_udp_csum(ctx, &p))
			return esa_drop(c, ESA_C_DROP_INTERNAL);
		return esa_fan_by_tc(ctx, c, jid, reg, ps_copy);
	}
	if (mb)
		goto whole_to_ps;
	p.h->resv = ps_copy ? 0 : ESA_RESV_NO_PS;
	esa_stamp_reg(p.eth->h_source, reg);	/* egress checks it */
	/* a valid frame even before egress; each copy adjusts both sums */
	esa_ip_csum(p.ip);
	if (esa_udp_csum(ctx, &p))
		return esa_drop(c, ESA_C_DROP_INTERNAL);
	esa_fan_mtu(ctx, c, fan, ps_copy);
	return bpf_redirect_map(devmap, 0, BPF_F_BROADCAST);

whole_to_ps:
	CNT(c, ESA_C_FANOUT_MISS);
	p.ip->saddr = worker;
	p.h->type = ESA_T_PARTIAL;
	p.h->reason = ESA_R_DELIVER;
	return ESA_BCAST_TO_PS;
}

/*
 * A finished sum to its job's members (esa_broadcast()), or to its PS.  The
 * caller makes both calls: global functions calling global functions add
 * up their stacks, and esa_xdp's frame plus two of them would pass the
 * verifier's 512 bytes (selftests/esa/stack_check.py checks the object).
 */
static __always_inline int esa_deliver(struct xdp_md *ctx, __u32 jid,
				       __u32 reg, int ps_copy)
{
	int rc = esa_broadcast(ctx, jid, reg, ps_copy);

	return rc == ESA_BCAST_TO_PS ? esa_to_ps(ctx, jid, jid) : rc;
}

/*
 * Two levels: a leaf's sum of its ranks (already the DATA|LEAF packet),
 * to its spine at up_ip:up_port (the job's upstream, as the packet's
 * admission read it), from the leaf's address and port like everything the
 * switch sends; through the cached route.  When the next hop is not
 * resolved, through the kernel stack with the worker's source, as
 * esa_to_ps() does (the leaf's own address would be a martian to the
 * stack, dropped without resolving anything): the stack forwards it,
 * resolving the next hop; the spine refuses that one packet (not from the
 * leaf), and the workers' resends go to the PS and finish the chunk there.
 */
__esa_global int esa_to_up(struct xdp_md *ctx, __u32 jid, __be32 up_ip,
			   __be16 up_port)
{
	struct esa_counters *c = esa_ctr(jid);
	struct esa_addr up = { .ip = up_ip, .port = up_port };
	struct esa_route *rt = NULL;
	struct esa_pkt p;
	__be32 worker;
	long rc;

	if (esa_parse(ctx, &p))
		return esa_drop(c, ESA_C_DROP_INTERNAL);
	if (!up.ip)
		return esa_drop(c, ESA_C_DROP_JOB);
	worker = p.ip->saddr;
	p.ip->saddr = esa_sw_addr(p.ip);
	p.ip->daddr = up.ip;
	p.ip->ttl = ESA_TTL;
	p.ip->frag_off = bpf_htons(IP_DF);
	p.ip->id = 0;
	p.udp->source = esa_cfg.port;
	p.udp->dest = up.port;
	p.udp->check = 0;
	esa_ip_csum(p.ip);
	rc = esa_ps_route(ctx, &p, jid, &up, &rt, ESA_ROUTE_UP);
	if (rc == BPF_FIB_LKUP_RET_SUCCESS && rt) {
		esa_mac_cpy(p.eth->h_dest, rt->dmac);
		esa_mac_cpy(p.eth->h_source, rt->smac);
		return esa_xmit(rt->ifindex);
	}
	if (rc == BPF_FIB_LKUP_RET_NO_NEIGH) {
		p.ip->saddr = worker;
		esa_ip_csum(p.ip);
		CNT(c, ESA_C_PS_STACK);
		return XDP_PASS;
	}
	return esa_drop(c, esa_route_drop(rc));
}

/*
 * Two levels: at a leaf, the spine's result of a chunk goes on to the
 * leaf's ranks (its fan-out; the spine gave the PS its copy).  Only from
 * the job's spine: its address and port, and the port it is behind.  The
 * fan-out must be the job's current registration's (esa_broadcast()
 * checks): a job registered again under its id never gets its results
 * sent to the old registration's hosts.
 */
static __always_inline int esa_down(struct xdp_md *ctx, struct iphdr *ip,
				    struct udphdr *udp, struct esa_hdr *h,
				    __u32 jid, struct esa_counters *jc)
{
	const struct esa_fanout *fan = bpf_map_lookup_elem(&esa_members, &jid);
	struct esa_addr up;
	__u32 n, reg;

	if (!esa_job_up(ctx, jid, &up, &n, &reg) || !up.ip)
		return esa_drop(jc, ESA_C_DROP_TYPE);	/* not a leaf of it */
	if (up.ip != ip->saddr || up.port != udp->source ||
	    (fan && fan->up_ifindex && fan->up_ifindex != ctx->ingress_ifindex))
		return esa_drop(jc, ESA_C_DROP_SPOOF);
	/* its reason: 0, or why a PS's sum reached its PS (ESA_T_SUM) */
	if ((h->flags & ~ESA_F_OVERFLOW) || h->reason == ESA_R_HOLD ||
	    h->reason >= __ESA_R_MAX || h->resv ||
	    h->rank != bpf_htons(ESA_RANK_NONE) ||
	    h->bitmap != bpf_cpu_to_be64(esa_full_mask(n)) || !fan)
		return esa_drop(jc, ESA_C_DROP_HEADER);
	CNT(jc, ESA_C_DOWN_RX);
	return esa_deliver(ctx, jid, reg, 0);
}

/* ------------------------------------------------------------------ */
/* Egress: run by the devmaps on each frame they send                  */
/* ------------------------------------------------------------------ */

/* The first member behind port ifindex, or fan->n if none. */
static __always_inline __u32 esa_first_member(const struct esa_fanout *fan,
					      __u32 ifindex)
{
	__u32 i;

	for (i = 0; i < ESA_FAN_MAX && i < fan->n; i++)
		if (fan->m[i].ifindex == ifindex)
			return i;
	return fan->n;
}

/* Address the copy in p to member m of job jid; 0, or 1 if it cannot be. */
static __always_inline int esa_address(struct esa_pkt *p, __u32 jid,
				       const struct esa_fanout *fan,
				       const struct esa_member *m)
{
	const struct esa_route *rt;
	const struct esa_bind *b;
	__be16 port = m->port;

	if (m->rank == ESA_MEMBER_PS) {
		__u32 key = ESA_ROUTE(jid, ESA_ROUTE_PS);

		rt = bpf_map_lookup_elem(&esa_routes, &key);
		if (!rt || !rt->stamp_ns || rt->ifindex != m->ifindex)
			return 1;
		esa_mac_cpy(p->eth->h_dest, rt->dmac);
		esa_mac_cpy(p->eth->h_source, rt->smac);
	} else {
		b = esa_bind_of(jid, m->rank);
		if (!b || (b->word >> 32) != fan->reg ||
		    (b->word & ESA_BIND_KNOWN) != ESA_BIND_KNOWN)
			return 1;
		esa_mac_cpy(p->eth->h_dest, b->mac);
		esa_mac_cpy(p->eth->h_source, b->port_mac);
		if (!port)
			port = b->sport;
	}
	esa_csum_replace(&p->udp->check, p->ip->daddr, m->ip);
	esa_csum_replace(&p->udp->check, p->udp->dest, port);
	p->ip->daddr = m->ip;
	p->udp->dest = port;
	return 0;
}

/*
 * A frame on its way out of port ifindex.  What the switch unicasts goes as
 * it is.  A copy of a result goes to the next member behind this port: the
 * copies of one broadcast (same IP id, job and chunk) reach a port back to
 * back in member order, so counting them tells which member each is for.
 * The members are those of the registration the ingress stamped in the
 * copy: a job registered again before the port's flush has its old sum's
 * copies dropped (copy_drop), never addressed to the new hosts.
 */
static __always_inline int esa_egress(struct xdp_md *ctx, __u32 ifindex)
{
	const struct esa_fanout *fan;
	const struct esa_member *m;
	struct esa_egress_seen *seen;
	struct esa_counters *c;
	__u32 jid, i;
	struct esa_pkt p;
	__u16 *rw, w;
	int no_ps;

	if (esa_parse(ctx, &p))
		return XDP_PASS;	/* not ours: as it is */
	/*
	 * a sum's copy (reason 0, or the PS's echo: ESA_T_SUM); a held sum
	 * for the PS (atp) is a unicast
	 */
	if (p.h->type != ESA_T_RESULT || p.h->reason == ESA_R_HOLD)
		return XDP_PASS;
	jid = bpf_ntohs(p.h->job);
	c = esa_ctr(jid);
	fan = bpf_map_lookup_elem(&esa_members, &jid);
	seen = bpf_map_lookup_elem(&esa_seen, &ifindex);
	if (!fan || !seen)
		return esa_drop(c, ESA_C_DROP_INTERNAL);
	if (esa_stamped_reg(p.eth->h_source) != fan->reg)
		return esa_drop(c, ESA_C_COPY_DROP);
	if (seen->ifindex != ifindex || seen->bcast != p.ip->id ||
	    seen->job != jid || seen->seq != p.h->seq) {
		seen->ifindex = ifindex;
		seen->bcast = p.ip->id;
		seen->job = jid;
		seen->seq = p.h->seq;
		seen->next = esa_first_member(fan, ifindex);
	}
	i = seen->next++;
	if (i >= ESA_FAN_MAX || i >= fan->n || fan->m[i].ifindex != ifindex)
		return esa_drop(c, ESA_C_COPY_DROP);
	m = &fan->m[i];
	no_ps = p.h->resv & ESA_RESV_NO_PS;
	rw = (__u16 *)&p.h->reason;	/* the checksum's word: reason, resv */
	w = *rw;
	p.h->resv = 0;
	esa_csum_replace(&p.udp->check, w, *rw);
	if (m->rank == ESA_MEMBER_PS && no_ps)
		return XDP_DROP;	/* the PS has it: policy atp's ACK */
	if (esa_address(&p, jid, fan, m))
		return esa_drop(c, ESA_C_COPY_DROP);
	/*
	 * The broadcast's number was for the copies' count above; on the wire
	 * every result has id 0 (DF set: an atomic datagram, RFC 6864), so
	 * that the hosts' GRO takes a member's results as one flow: it
	 * coalesces only ids that stay fixed or grow by one, and broadcasts
	 * from several CPUs and jobs interleave theirs.
	 */
	p.ip->id = 0;
	esa_ip_csum(p.ip);
	CNT(c, m->rank == ESA_MEMBER_PS ? ESA_C_PS_COPY_TX : ESA_C_RESULT_TX);
	return XDP_PASS;
}

/* ------------------------------------------------------------------ */
/* Generic mode: the fan-out in the port's tc ingress program          */
/* ------------------------------------------------------------------ */

/*
 * Is the frame at p, with metadata fm, a sum the switch's XDP program
 * passed up to be fanned out?  Its metadata carries the magic and this
 * load's cookie, and the frame is the switch's RESULT of fm's job (its
 * reason 0, or the one a PS's sum echoes: ESA_T_SUM).
 */
static __always_inline int esa_fan_ours(const struct esa_fan_meta *fm,
					const struct esa_pkt *p)
{
	return fm->magic == ESA_FAN_MAGIC && fm->cookie == esa_cfg.cookie &&
	       p->h->version == ESA_VERSION && p->h->type == ESA_T_RESULT &&
	       p->h->reason != ESA_R_HOLD && p->h->reason < __ESA_R_MAX &&
	       bpf_ntohs(p->h->job) == fm->job &&
	       p->udp->source == esa_cfg.port;
}

/*
 * A frame at the tc ingress of a port attached in generic mode: a sum the
 * XDP program finished and passed up with struct esa_fan_meta goes to each
 * member as its own copy, addressed as egress addresses one (esa_address()),
 * counted alike; everything else goes on as it is.  bpf_clone_redirect()
 * sends a clone and makes the original private again, so each member's
 * addressing is written into a buffer no sent copy shares.
 */
static __always_inline int esa_tc_fanout(struct __sk_buff *skb)
{
	struct esa_fan_meta *fm = (void *)(long)skb->data_meta;
	const struct esa_fanout *fan;
	const struct esa_member *m;
	struct esa_counters *c;
	__u32 jid, reg, i;
	struct esa_pkt p;
	int ps_copy;

	if ((void *)(fm + 1) > (void *)(long)skb->data ||
	    esa_parse_at((void *)(long)skb->data, (void *)(long)skb->data_end,
			 &p) || !esa_fan_ours(fm, &p))
		return TC_ACT_OK;	/* not a sum of ours */
	jid = fm->job;
	reg = fm->reg;
	ps_copy = fm->ps_copy;
	c = esa_ctr(jid);
	fan = bpf_map_lookup_elem(&esa_members, &jid);
	if (!c)
		return TC_ACT_SHOT;
	if (!fan || fan->reg != reg) {
		c->c[ESA_C_COPY_DROP]++;
		return TC_ACT_SHOT;
	}
	for (i = 0; i < ESA_FAN_MAX; i++) {
		if (i >= fan->n)
			break;
		m = &fan->m[i];
		if (m->rank == ESA_MEMBER_PS && !ps_copy)
			continue;	/* the PS has it: policy atp's ACK */
		if (esa_parse_at((void *)(long)skb->data,
				 (void *)(long)skb->data_end, &p))
			break;
		if (esa_address(&p, jid, fan, m)) {
			CNT(c, ESA_C_COPY_DROP);
			continue;
		}
		esa_ip_csum(p.ip);
		if (esa_too_big(skb, m->ifindex)) {
			CNT(c, ESA_C_DROP_MTU);
			continue;
		}
		if (bpf_clone_redirect(skb, m->ifindex, 0)) {
			CNT(c, ESA_C_COPY_TXERR);
			continue;
		}
		CNT(c, m->rank == ESA_MEMBER_PS ? ESA_C_PS_COPY_TX :
						  ESA_C_RESULT_TX);
	}
	return TC_ACT_SHOT;
}

#endif /* _ESA_DELIVER_BPF_H */
