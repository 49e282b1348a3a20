// SPDX-License-Identifier: GPL-2.0
/*
 * esa.bpf.c - the ESA switch: in-network aggregation with preemptive slot
 * allocation, in XDP.
 *
 * Ingress (esa_xdp, attached to every port): parse, admit, and apply the
 * policy of esa_policy.h to the slot the chunk maps to, under the slot's
 * spin lock.  A packet is absorbed (aggregated), turned into the result and
 * broadcast to every port, or rewritten in place into what the job's PS must
 * see (an evicted partial, a collision, a resend) and sent there.  No packet
 * is ever created or duplicated here; the port devmap's broadcast makes the
 * copies of a result, and the egress program picks, per copy, the host that
 * copy is for (or drops it).
 *
 * Jobs come from the esa_jobs map, or with -DESA_KFUNC from esa.ko through
 * kfuncs; everything else is the same object code.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <linux/esa.h>
#include "esa_policy.h"

#define AF_INET		2
#define fallthrough	__attribute__((__fallthrough__))
#define IP_MF		0x2000
#define IP_OFFSET	0x1fff
#define NSEC_PER_MSEC	1000000ULL
#define ESA_STAMP_NS	(1 * NSEC_PER_MSEC)	/* activity stamp granularity */

const volatile struct esa_cfg esa_cfg = {
	.port		= __bpf_constant_htons(ESA_DEFAULT_PORT),
	.nvals		= ESA_DEFAULT_VALUES,
	.slots		= 4096,
	.max_jobs	= 256,
	.stale_ms	= 100,
	.policy		= ESA_POLICY_ESA,
};

/* Sizes below are defaults; the loader sets them from esa_cfg. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct esa_job);
} esa_jobs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct esa_slot);
} esa_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256 * ESA_TOMB_RING);
	__type(key, __u32);
	__type(value, struct esa_tomb);
} esa_tombs SEC(".maps");

/* nvals __u64 accumulators per slot (value size set at load). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, ESA_MAX_VALUES * sizeof(__u64));
} esa_acc SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 257);
	__type(key, __u32);
	__type(value, struct esa_counters);
} esa_counters SEC(".maps");

/* Where each (job, rank) was last seen: index job * ESA_MAX_WORKERS + rank. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256 * ESA_MAX_WORKERS);
	__type(key, __u32);
	__type(value, struct esa_dest);
} esa_learn SEC(".maps");

/* Which host of a job sits behind a port (the worker lane's lookup). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256 * ESA_MAX_WORKERS);
	__type(key, struct esa_dest_key);
	__type(value, struct esa_dest);
} esa_dests SEC(".maps");

/*
 * Per job, the route to its PS as the FIB last gave it, so that a result's
 * copy for the PS does not cost a FIB lookup each time (about 100 ns here).
 */
struct esa_route {
	__u64	stamp_ns;	/* when looked up; 0: never */
	__u32	gen;		/* job generation it was looked up for */
	__u32	ifindex;
	__be32	ps_ip;
	__be16	ps_port;
	__u8	dmac[6];
	__u8	smac[6];
	__u16	resv;
};

#define ESA_ROUTE_TTL_NS	(100 * NSEC_PER_MSEC)

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct esa_route);
} esa_routes SEC(".maps");

/*
 * Per CPU: the coarse clock, read once per tick (see esa_now()), and the
 * number of the CPU's last result broadcast.
 */
struct esa_cpu {
	__u64	jiffies;
	__u64	now_ns;
	__u32	bcast;
	__u32	resv;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct esa_cpu);
} esa_cpu SEC(".maps");

/*
 * Per CPU and port (index ifindex % 4096): which broadcast the egress
 * program saw last there, and which of its copies were delivered.  The
 * copies of one broadcast reach a port back to back on one CPU.
 */
struct esa_egress_seen {
	__u32	ifindex;
	__u32	bcast;
	__u32	served;		/* ESA_SERVED_* */
};

#define ESA_SERVED_WORKER	1
#define ESA_SERVED_PS		2

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct esa_egress_seen);
} esa_seen SEC(".maps");

/* Ports that deliver results: key ESA_PORT_KEY(ifindex, lane). */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, 512);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
} esa_ports SEC(".maps");

static __always_inline struct esa_counters *esa_ctr(__u32 row)
{
	return bpf_map_lookup_elem(&esa_counters, &row);
}

#define CNT(p, idx)				\
	do {					\
		if (p)				\
			(p)->c[idx]++;		\
	} while (0)

static __always_inline int esa_drop(struct esa_counters *c, __u32 idx)
{
	barrier_var(idx);	/* the verifier must see the bound too */
	if (idx < __ESA_C_MAX)
		CNT(c, idx);
	return XDP_DROP;
}

/*
 * CLOCK_MONOTONIC, coarse: what leases and ageing need.  The coarse clock
 * only moves on ticks, so it is read once per tick per CPU (the helper costs
 * about 15 ns a packet here; reading jiffies costs next to nothing).  At
 * worst a tick stale, the way the coarse clock always is.
 */
static __always_inline __u64 esa_now(void)
{
	__u64 j = bpf_jiffies64();
	struct esa_cpu *c;
	__u32 zero = 0;

	c = bpf_map_lookup_elem(&esa_cpu, &zero);
	if (!c)
		return bpf_ktime_get_coarse_ns();
	if (c->jiffies != j) {
		c->now_ns = bpf_ktime_get_coarse_ns();
		c->jiffies = j;
	}
	return c->now_ns;
}

static __always_inline void esa_count(__u32 row, int idx)
{
	struct esa_counters *c = esa_ctr(row);

	CNT(c, idx);
}

/*
 * Work outside the slot lock lives in global functions: the verifier checks
 * each once, on its own, instead of once per path that reaches it, which
 * keeps the whole program far below the verifier's limits (the locked value
 * loops are long).  They re-read the headers from ctx; esa_xdp has already
 * checked that they are there.
 */
#define __esa_global __noinline

struct esa_pkt {
	struct ethhdr	*eth;
	struct iphdr	*ip;
	struct udphdr	*udp;
	struct esa_hdr	*h;
};

static __always_inline int esa_parse(struct xdp_md *ctx, struct esa_pkt *p)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;

	p->eth = data;
	p->ip = (void *)(p->eth + 1);
	p->udp = (void *)(p->ip + 1);
	p->h = (void *)(p->udp + 1);
	return (void *)(p->h + 1) > end;
}

/* ------------------------------------------------------------------ */
/* Jobs                                                                */
/* ------------------------------------------------------------------ */

/* What the data path needs to know about the packet's job. */
struct esa_jinfo {
	__u32	gen;
	__u32	region_base;
	__u32	region_size;
	__u32	nworkers;
};

#ifdef ESA_KFUNC
#include "esa_kfunc.bpf.h"
#else
static __always_inline int esa_lease_over(__u32 lease_ms, __u64 last, __u64 now)
{
	return lease_ms && (__s64)(now - last) > (__s64)(lease_ms * NSEC_PER_MSEC);
}

static __always_inline struct esa_job *esa_job_lookup(__u32 jid)
{
	return bpf_map_lookup_elem(&esa_jobs, &jid);
}

/*
 * A job silent past its lease has lost its slots (see esa_owner_alive());
 * its next packet renews the lease under a new generation, so the slots
 * stamped with the old one stay free to all.  One CPU wins the renewal.
 * Rare, so out of line.  Returns the generation to use.
 */
__esa_global int esa_renew(__u32 jid, __u64 last, __u64 now)
{
	struct esa_job *j = esa_job_lookup(jid);

	if (!j)
		return 0;
	if (__sync_val_compare_and_swap(&j->last_active_ns, last, now) != last)
		return j->gen;
	esa_count(jid, ESA_C_EXPIRED);
	return __sync_fetch_and_add(&j->gen, 1) + 1;
}

/*
 * Admit the data packet in ctx: check it against its job's registration,
 * renew the job's lease and fill *ji.  Returns 0 or the counter of the drop
 * reason.
 */
static __always_inline int esa_admit(struct xdp_md *ctx, __u64 now,
				     struct esa_jinfo *ji)
{
	const struct esa_addr *a;
	struct esa_pkt p;
	struct esa_job *j;
	__u16 rank;
	__u64 last;

	if (esa_parse(ctx, &p))
		return ESA_C_DROP_TRUNC;
	j = esa_job_lookup(bpf_ntohs(p.h->job));
	if (!j || j->state != ESA_JOB_ACTIVE)
		return ESA_C_DROP_JOB;
	rank = bpf_ntohs(p.h->rank);
	if (rank >= j->nworkers)
		return ESA_C_DROP_RANK;
	if (p.h->prio > j->max_prio)
		return ESA_C_DROP_PRIO;
	a = &j->rank[rank & (ESA_MAX_WORKERS - 1)];
	if (a->ip != p.ip->saddr || (a->port && a->port != p.udp->source))
		return ESA_C_DROP_SPOOF;

	last = j->last_active_ns;
	ji->gen = j->gen;
	if (esa_lease_over(j->lease_ms, last, now))
		ji->gen = esa_renew(bpf_ntohs(p.h->job), last, now);
	else if ((__s64)(now - last) > (__s64)ESA_STAMP_NS)
		j->last_active_ns = now;
	ji->nworkers = j->nworkers;
	ji->region_base = j->region_base;
	ji->region_size = j->region_size;
	return 0;
}

/* Is generation gen of job jid still alive? */
__esa_global int esa_owner_alive(struct xdp_md *ctx, __u32 jid,
				 __u32 gen, __u64 now)
{
	struct esa_job *j = esa_job_lookup(jid);

	/* ctx is the kfunc variant's; a global function must be passed it */
	return ctx && j && j->state == ESA_JOB_ACTIVE && j->gen == gen &&
	       !esa_lease_over(j->lease_ms, j->last_active_ns, now);
}

/* The PS of job jid; 0 when the job is gone. */
static __always_inline int esa_job_ps(struct xdp_md *ctx, __u32 jid,
				      struct esa_addr *ps, __u32 *nworkers)
{
	struct esa_job *j = esa_job_lookup(jid);

	if (!j || j->state != ESA_JOB_ACTIVE)
		return 0;
	*ps = j->ps;
	*nworkers = j->nworkers;
	return 1;
}

/* Generation and switchml region of job jid; 0 when the job is gone. */
static __always_inline int esa_job_regs(struct xdp_md *ctx, __u32 jid,
					__u32 *gen, __u32 *base, __u32 *size)
{
	struct esa_job *j = esa_job_lookup(jid);

	if (!j || j->state != ESA_JOB_ACTIVE)
		return 0;
	*gen = j->gen;
	*base = j->region_base;
	*size = j->region_size;
	return 1;
}
#endif /* ESA_KFUNC */

/* ------------------------------------------------------------------ */
/* Packet helpers                                                      */
/* ------------------------------------------------------------------ */

static __always_inline void esa_ip_csum(struct iphdr *ip)
{
	__u16 *p = (__u16 *)ip;
	__u32 s = 0;
	int i;

	ip->check = 0;
#pragma unroll
	for (i = 0; i < (int)sizeof(*ip) / 2; i++)
		s += p[i];
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	ip->check = (__u16)~s;
}

static __always_inline int esa_mac_eq(const __u8 *a, const __u8 *b)
{
	return *(const __u32 *)a == *(const __u32 *)b &&
	       *(const __u16 *)(a + 4) == *(const __u16 *)(b + 4);
}

static __always_inline void esa_mac_cpy(__u8 *d, const __u8 *s)
{
	*(__u32 *)d = *(const __u32 *)s;
	*(__u16 *)(d + 4) = *(const __u16 *)(s + 4);
}

/* From struct bpf_fib_lookup, whose MACs sit unaligned on the stack. */
static __always_inline void esa_mac_cpy_fib(__u8 *d, const __u8 *s)
{
	__builtin_memcpy(d, s, 6);
}

/*
 * Remember where the sender of the data packet in ctx lives (generation gen
 * of its job), so the egress program of that port can address its copy of
 * a result.  Runs when something changed: see esa_learn_rank().
 */
__esa_global int esa_learn_slow(struct xdp_md *ctx, __u32 gen)
{
	__u32 k, jid, rank, ifindex = ctx->ingress_ifindex;
	struct esa_dest_key dk = { .ifindex = ifindex };
	struct esa_dest *l, *old, nd = {};
	struct esa_pkt p;
	__u32 pk = ESA_PORT_KEY(ifindex, 0);

	if (esa_parse(ctx, &p))
		return 0;
	jid = bpf_ntohs(p.h->job);
	rank = bpf_ntohs(p.h->rank) & (ESA_MAX_WORKERS - 1);
	k = jid * ESA_MAX_WORKERS + rank;
	l = bpf_map_lookup_elem(&esa_learn, &k);
	if (!l)
		return 0;

	nd.ip = p.ip->saddr;
	nd.port = p.udp->source;
	esa_mac_cpy(nd.mac, p.eth->h_source);
	esa_mac_cpy(nd.port_mac, p.eth->h_dest);
	nd.rank = rank;
	nd.gen = gen;
	nd.ifindex = ifindex;

	if (!bpf_map_lookup_elem(&esa_ports, &pk))
		esa_count(jid, ESA_C_PORT_UNKNOWN);

	dk.job = jid;
	old = bpf_map_lookup_elem(&esa_dests, &dk);
	if (old && old->gen == gen && old->rank != rank) {
		/* Another rank of this job holds the port: still there? */
		__u32 ok = jid * ESA_MAX_WORKERS + (old->rank & (ESA_MAX_WORKERS - 1));
		struct esa_dest *lo = bpf_map_lookup_elem(&esa_learn, &ok);

		if (lo && lo->ifindex == ifindex && lo->gen == gen) {
			/* One copy per port and lane: this rank gets its
			 * results from the PS (after a resend) instead.
			 */
			esa_count(jid, ESA_C_LEARN_CONFLICT);
			*l = nd;
			return 0;
		}
	}
	bpf_map_update_elem(&esa_dests, &dk, &nd, BPF_ANY);
	if (l->ifindex && l->ifindex != ifindex) {
		struct esa_dest_key ok = { .ifindex = l->ifindex, .job = jid };

		old = bpf_map_lookup_elem(&esa_dests, &ok);
		if (old && old->rank == rank)
			bpf_map_delete_elem(&esa_dests, &ok);
	}
	*l = nd;
	esa_count(jid, ESA_C_LEARN);
	return 0;
}

/* Where did rank `rank` of job jid send from last time?  Same place: done
 * (one lookup and a compare); else learn it out of line.
 */
static __always_inline void esa_learn_rank(struct xdp_md *ctx,
					   struct ethhdr *eth,
					   struct iphdr *ip,
					   struct udphdr *udp, __u32 jid,
					   __u32 rank, __u32 gen)
{
	__u32 k = jid * ESA_MAX_WORKERS + rank;
	struct esa_dest *l = bpf_map_lookup_elem(&esa_learn, &k);

	if (l && l->ifindex == ctx->ingress_ifindex && l->gen == gen &&
	    l->ip == ip->saddr && l->port == udp->source &&
	    esa_mac_eq(l->mac, eth->h_source) &&
	    esa_mac_eq(l->port_mac, eth->h_dest))
		return;
	esa_learn_slow(ctx, gen);
}

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
 * Send the frame in ctx out of port ifindex as it is.  Through the port
 * devmap when the port delivers results, because a device flushes all the
 * frames queued to it in one go through the egress program of the first:
 * frames with and without that program must not meet there.
 */
static __always_inline int esa_xmit(struct xdp_md *ctx, __u32 ifindex)
{
	__u32 pk = ESA_PORT_KEY(ifindex, 0);
	struct esa_meta *m;

	if (!bpf_map_lookup_elem(&esa_ports, &pk))
		return bpf_redirect(ifindex, 0);
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*m)))
		return XDP_ABORTED;
	m = (void *)(long)ctx->data_meta;
	if ((void *)(m + 1) > (void *)(long)ctx->data)
		return XDP_ABORTED;
	m->kind = ESA_META_UNICAST;
	return bpf_redirect_map(&esa_ports, pk, 0);
}

/*
 * Send the packet in ctx, already rewritten, to the PS of job ps_job, and
 * count it in counter row `row`: fast path through the FIB and a redirect;
 * when the next hop is unresolved or local, through the kernel stack (which
 * resolves it).  The source stays the worker's, so that the stack forwards
 * it like any routed packet.
 */
__esa_global int esa_to_ps(struct xdp_md *ctx, __u32 ps_job, __u32 row)
{
	struct esa_counters *c = esa_ctr(row);
	struct bpf_fib_lookup fib = {};
	struct esa_addr ps;
	struct esa_pkt p;
	__u32 n;
	long rc;

	if (esa_parse(ctx, &p))
		return XDP_ABORTED;
	if (!esa_job_ps(ctx, ps_job, &ps, &n))
		return esa_drop(c, ESA_C_DROP_JOB);
	p.ip->daddr = ps.ip;
	p.udp->dest = ps.port;
	p.udp->check = 0;
	esa_ip_csum(p.ip);

	rc = esa_fib(ctx, p.ip, p.udp, ps.ip, ps.port, &fib);
	if (rc == BPF_FIB_LKUP_RET_SUCCESS) {
		esa_mac_cpy_fib(p.eth->h_dest, fib.dmac);
		esa_mac_cpy_fib(p.eth->h_source, fib.smac);
		CNT(c, ESA_C_PS_TX);
		return esa_xmit(ctx, fib.ifindex);
	}
	if (rc == BPF_FIB_LKUP_RET_NO_NEIGH || rc == BPF_FIB_LKUP_RET_NOT_FWDED) {
		CNT(c, ESA_C_PS_TX);
		CNT(c, ESA_C_PS_STACK);
		return XDP_PASS;
	}
	return esa_drop(c, ESA_C_DROP_NOROUTE);
}

/*
 * Multicast the finished sum of job jid in ctx: one copy per port and lane
 * through the devmap; the egress programs address the copies to workers and
 * to the PS.  Only when the PS is sure to get its copy (it answers resends
 * of lost results), else the PS gets the sum as a complete partial and
 * delivers it itself.  The IP source becomes the address the workers sent
 * to, the switch's.
 */
__esa_global int esa_broadcast(struct xdp_md *ctx, __u32 jid, __u32 gen,
			       int ps_copy, __u64 now)
{
	struct bpf_fib_lookup fib = {};
	struct esa_route *rt = NULL;
	struct esa_cpu *cpu;
	struct esa_meta *m;
	struct esa_addr ps;
	struct esa_pkt p;
	__u32 pk, n, zero = 0;
	void *data;
	__be32 sw;

	if (esa_parse(ctx, &p))
		return XDP_ABORTED;
	if (!esa_job_ps(ctx, jid, &ps, &n))
		return esa_drop(esa_ctr(jid), ESA_C_DROP_JOB);
	if (ps_copy) {
		rt = bpf_map_lookup_elem(&esa_routes, &jid);
		if (!rt)
			return XDP_ABORTED;
		if (!rt->stamp_ns || rt->gen != gen || rt->ps_ip != ps.ip ||
		    rt->ps_port != ps.port ||
		    (__s64)(now - rt->stamp_ns) > (__s64)ESA_ROUTE_TTL_NS) {
			if (esa_fib(ctx, p.ip, p.udp, ps.ip, ps.port, &fib) !=
			    BPF_FIB_LKUP_RET_SUCCESS) {
				rt->stamp_ns = 0;
				goto whole_to_ps;
			}
			rt->gen = gen;
			rt->ifindex = fib.ifindex;
			rt->ps_ip = ps.ip;
			rt->ps_port = ps.port;
			esa_mac_cpy_fib(rt->dmac, fib.dmac);
			esa_mac_cpy_fib(rt->smac, fib.smac);
			rt->stamp_ns = now ? now : 1;
		}
		pk = ESA_PORT_KEY(rt->ifindex, 0);
		if (!bpf_map_lookup_elem(&esa_ports, &pk))
			goto whole_to_ps;
	}
	cpu = bpf_map_lookup_elem(&esa_cpu, &zero);
	if (!cpu)
		return XDP_ABORTED;

	sw = p.ip->daddr;
	p.ip->saddr = sw;
	p.ip->ttl = 64;
	p.udp->source = esa_cfg.port;
	p.udp->check = 0;
	esa_ip_csum(p.ip);	/* a valid frame even before egress */
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*m)))
		return XDP_ABORTED;
	data = (void *)(long)ctx->data;
	m = (void *)(long)ctx->data_meta;
	if ((void *)(m + 1) > data)
		return XDP_ABORTED;
	m->gen = gen;
	m->kind = ESA_META_RESULT;
	m->resv = 0;
	m->bcast = ++cpu->bcast;
	m->ps_ifindex = 0;
	if (rt) {
		m->ps_ifindex = rt->ifindex;
		m->ps_ip = ps.ip;
		m->ps_port = ps.port;
		esa_mac_cpy(m->ps_mac, rt->dmac);
		esa_mac_cpy(m->ps_port_mac, rt->smac);
	}
	return bpf_redirect_map(&esa_ports, 0, BPF_F_BROADCAST);

whole_to_ps:
	/*
	 * The PS answers resends of lost results, so it must get every sum:
	 * when its copy cannot be made, it gets the sum and delivers it.
	 */
	p.h->type = ESA_T_PARTIAL;
	p.h->reason = ESA_R_DELIVER;
	return esa_to_ps(ctx, jid, jid);
}

/* ------------------------------------------------------------------ */
/* Slot arithmetic: all under the slot lock, no calls.                 */
/* ------------------------------------------------------------------ */

/*
 * A value v enters an accumulator as v + 2^31 (zero-extended: cheap), so n
 * values sum to s = sum(v) + n * 2^31.  Out, u = s - (n - 1) * 2^31 is the
 * sum plus 2^31: it fits int32 iff u < 2^32, and the int32 is u - 2^31.
 * ESA_BIAS(n) is what to subtract; OR-ing every u together leaves any
 * overflow in the high word, checked once per vector, not per value.
 */
#define ESA_IN(v)	((__u64)((__u32)(v) ^ 0x80000000U))
#define ESA_BIAS(n)	((__u64)((n) - 1) << 31)
#define ESA_OUT(s, bias, ovf)						\
	({								\
		__u64 __u = (s) - (bias);				\
		(ovf) |= __u;						\
		(__u32)__u ^ 0x80000000U;				\
	})

/* Eight values at a time; nvals is a multiple of eight. */
#define ESA_FOR_EACH_VALUE(i)						\
	for ((i) = 0; (i) < ESA_MAX_VALUES && (i) < esa_cfg.nvals; (i) += 8)

static __always_inline void esa_acc_set(__u64 *acc, const __u32 *v)
{
	__u32 i;

	ESA_FOR_EACH_VALUE(i) {
#pragma unroll
		for (int j = 0; j < 8; j++)
			acc[i + j] = ESA_IN(v[i + j]);
	}
}

static __always_inline void esa_acc_add(__u64 *acc, const __u32 *v)
{
	__u32 i;

	ESA_FOR_EACH_VALUE(i) {
#pragma unroll
		for (int j = 0; j < 8; j++)
			acc[i + j] += ESA_IN(v[i + j]);
	}
}

/* Packet := acc (+ packet if add) - bias; non-zero on overflow. */
static __always_inline __u64 esa_acc_emit(const __u64 *acc, __u32 *v,
					  int add, __u64 bias)
{
	__u64 ovf = 0;
	__u32 i;

	ESA_FOR_EACH_VALUE(i) {
#pragma unroll
		for (int j = 0; j < 8; j++)
			v[i + j] = ESA_OUT(acc[i + j] + (add ? ESA_IN(v[i + j]) : 0),
					   bias, ovf);
	}
	return ovf >> 32;
}

/* The slot takes the packet's values, the packet the slot's old sum. */
static __always_inline __u64 esa_acc_swap(__u64 *acc, __u32 *v, __u64 bias)
{
	__u64 ovf = 0, old;
	__u32 i;

	ESA_FOR_EACH_VALUE(i) {
#pragma unroll
		for (int j = 0; j < 8; j++) {
			old = acc[i + j];
			acc[i + j] = ESA_IN(v[i + j]);
			v[i + j] = ESA_OUT(old, bias, ovf);
		}
	}
	return ovf >> 32;
}

/* ------------------------------------------------------------------ */
/* Ingress                                                             */
/* ------------------------------------------------------------------ */

/* The key a slot held before this packet's decision evicted it. */
struct esa_evicted {
	__u64	bitmap;
	__u32	seq;
	__u16	job;
	__u8	prio;
	__u8	resv;
};

static __always_inline int esa_data(struct xdp_md *ctx, struct ethhdr *eth,
				    struct iphdr *ip, struct udphdr *udp,
				    struct esa_hdr *h, __u32 *vals, __u32 jid,
				    struct esa_counters *jc)
{
	__u16 rank = bpf_ntohs(h->rank);
	__u32 seq = bpf_ntohl(h->seq);
	__u64 now = esa_now();
	__u64 stale_ns = (__u64)esa_cfg.stale_ms * NSEC_PER_MSEC;
	struct esa_jinfo ji = {};
	struct esa_evicted ev = {};
	struct esa_counters *oc;
	struct esa_view view = {};
	struct esa_tomb *tomb, *otomb;
	struct esa_slot *s;
	__u32 idx, pjob, pgen, pseq;
	__u64 rbit, ovf = 0;
	__u8 code, act, alive;
	__s64 sidx;
	__u64 *acc;
	int err;

	if (rank >= ESA_MAX_WORKERS)
		return esa_drop(jc, ESA_C_DROP_RANK);
	rbit = 1ULL << rank;
	if ((h->flags & ~ESA_F_RESEND) || h->reason || h->resv ||
	    h->bitmap != bpf_cpu_to_be64(rbit))
		return esa_drop(jc, ESA_C_DROP_HEADER);
	err = esa_admit(ctx, now, &ji);
	if (err)
		return esa_drop(jc, err);
	esa_learn_rank(ctx, eth, ip, udp, jid, rank, ji.gen);

	sidx = esa_slot_index(esa_cfg.policy, jid, seq, esa_cfg.slots,
			      ji.region_base, ji.region_size);
	if (sidx < 0) {
		h->type = ESA_T_COLLISION;
		h->reason = ESA_R_NOSLOT;
		CNT(jc, ESA_C_NOSLOT);
		return esa_to_ps(ctx, jid, jid);
	}
	idx = sidx;
	s = bpf_map_lookup_elem(&esa_slots, &idx);
	acc = bpf_map_lookup_elem(&esa_acc, &idx);
	idx = esa_tomb_index(jid, seq);
	tomb = bpf_map_lookup_elem(&esa_tombs, &idx);
	if (!s || !acc || !tomb)
		return XDP_ABORTED;

	/*
	 * Whether another key's owner is alive takes a lookup, a call, which
	 * cannot happen under the lock: peek now, and under the lock trust the
	 * answer only if the owner did not change in between.
	 */
	pjob = s->job;
	pgen = s->gen;
	pseq = s->seq;
	alive = s->state == ESA_SLOT_FREE || (pjob == jid && pgen == ji.gen) ||
		esa_owner_alive(ctx, pjob, pgen, now);
	idx = esa_tomb_index(pjob, pseq);
	otomb = bpf_map_lookup_elem(&esa_tombs, &idx);
	if (!otomb)
		return XDP_ABORTED;

	view.policy = esa_cfg.policy;
	view.pkt_prio = h->prio;
	view.resend = !!(h->flags & ESA_F_RESEND);

	bpf_spin_lock(&s->lock);
	view.state = s->state;
	view.slot_prio = s->prio;
	if (s->state == ESA_SLOT_FREE) {
		view.owner = ESA_OWN_NONE;
	} else if (s->job == jid && s->gen == ji.gen && s->seq == seq) {
		view.owner = ESA_OWN_SELF;
		view.rank_in = !!(s->bitmap & rbit);
		view.completes = (s->bitmap | rbit) == esa_full_mask(ji.nworkers);
	} else if (s->job != pjob || s->gen != pgen || s->seq != pseq) {
		/* Changed since the peek: leave it alone. */
		view.owner = ESA_OWN_LIVE;
		view.slot_prio = 0xff;
	} else {
		view.owner = alive ? ESA_OWN_LIVE : ESA_OWN_DEAD;
		view.stale = stale_ns && (__s64)(now - s->stamp_ns) > (__s64)stale_ns;
	}
	if (view.owner != ESA_OWN_SELF)	/* else the slot says where it is */
		view.tomb = esa_tomb_kind(tomb, ji.gen, seq);

	/*
	 * The decision goes through slot memory and comes back as a value the
	 * verifier cannot know: it then checks the execution below once for
	 * all the paths that led to some decision, not once per path.
	 */
	s->last = esa_decide(&view) | view.rank_in << 4 |
		  (view.tomb == ESA_TOMB_NONE) << 5;
	code = *(volatile __u8 *)&s->last;
	act = code & 15;
	s->last = act;

	ev.job = s->job;
	ev.seq = s->seq;
	ev.prio = s->prio;
	switch (act) {
	case ESA_A_CLAIM:
	case ESA_A_RECLAIM:
		esa_slot_take(s, jid, ji.gen, seq, h->prio, rbit, now);
		esa_acc_set(acc, vals);
		break;
	case ESA_A_ADD:
		s->bitmap |= rbit;
		s->nranks++;
		s->stamp_ns = now;
		esa_acc_add(acc, vals);
		break;
	case ESA_A_COMPLETE:
	case ESA_A_HOLD:
		ovf = esa_acc_emit(acc, vals, 1, ESA_BIAS(s->nranks + 1));
		s->bitmap |= rbit;
		s->nranks++;
		s->stamp_ns = now;
		if (act == ESA_A_COMPLETE) {
			s->state = ESA_SLOT_FREE;
			esa_tomb_set(tomb, ji.gen, seq, ESA_TOMB_DONE);
		} else {
			s->state = ESA_SLOT_HELD;
		}
		break;
	case ESA_A_PREEMPT:
	case ESA_A_AGE:
		ev.bitmap = s->bitmap;
		ovf = esa_acc_swap(acc, vals, ESA_BIAS(s->nranks));
		esa_tomb_set(otomb, s->gen, s->seq, ESA_TOMB_PS);
		esa_slot_take(s, jid, ji.gen, seq, h->prio, rbit, now);
		break;
	case ESA_A_FLUSH:
		if (code & 16) {	/* the resent rank is in already */
			ovf = esa_acc_emit(acc, vals, 0, ESA_BIAS(s->nranks));
		} else {
			s->bitmap |= rbit;
			s->nranks++;
			ovf = esa_acc_emit(acc, vals, 1, ESA_BIAS(s->nranks));
		}
		ev.bitmap = s->bitmap;
		s->state = ESA_SLOT_FREE;
		esa_tomb_set(tomb, ji.gen, seq, ESA_TOMB_PS);
		break;
	case ESA_A_COLLIDE:
	case ESA_A_RESEND:
		if (code & 32)	/* no tomb for this chunk yet */
			esa_tomb_set(tomb, ji.gen, seq, ESA_TOMB_PS);
		break;
	default: /* ESA_A_DUPLICATE, ESA_A_TOMB */
		break;
	}
	bpf_spin_unlock(&s->lock);

	switch (act) {
	case ESA_A_RECLAIM:
		esa_count(ev.job, ESA_C_RECLAIMED);
		fallthrough;
	case ESA_A_CLAIM:
		CNT(jc, ESA_C_CLAIMED);
		return XDP_DROP;
	case ESA_A_ADD:
		CNT(jc, ESA_C_AGGREGATED);
		return XDP_DROP;
	case ESA_A_DUPLICATE:
		return esa_drop(jc, ESA_C_DUPLICATE);
	case ESA_A_COMPLETE:
	case ESA_A_HOLD:
		CNT(jc, ESA_C_AGGREGATED);
		h->type = ESA_T_RESULT;
		h->flags = ovf ? ESA_F_OVERFLOW : 0;
		h->rank = bpf_htons(ESA_RANK_NONE);
		h->bitmap = bpf_cpu_to_be64(esa_full_mask(ji.nworkers));
		if (ovf)
			CNT(jc, ESA_C_OVERFLOW);
		if (act == ESA_A_HOLD) {
			CNT(jc, ESA_C_HELD);
			h->reason = ESA_R_HOLD;
			return esa_to_ps(ctx, jid, jid);
		}
		CNT(jc, ESA_C_COMPLETED);
		return esa_broadcast(ctx, jid, ji.gen, 1, now);
	case ESA_A_PREEMPT:
	case ESA_A_AGE:
		oc = esa_ctr(ev.job);
		CNT(jc, ESA_C_CLAIMED);
		CNT(oc, ESA_C_EVICTED);
		if (act == ESA_A_PREEMPT) {
			CNT(jc, ESA_C_PREEMPT_CAUSED);
			CNT(oc, ESA_C_PREEMPT_SUFFERED);
		} else {
			CNT(oc, ESA_C_AGED);
		}
		if (ovf)
			CNT(oc, ESA_C_OVERFLOW);
		h->type = ESA_T_PARTIAL;
		h->flags = ovf ? ESA_F_OVERFLOW : 0;
		h->reason = act == ESA_A_PREEMPT ? ESA_R_PREEMPT : ESA_R_AGED;
		h->prio = ev.prio;
		h->job = bpf_htons(ev.job);
		h->rank = bpf_htons(ESA_RANK_NONE);
		h->seq = bpf_htonl(ev.seq);
		h->bitmap = bpf_cpu_to_be64(ev.bitmap);
		return esa_to_ps(ctx, ev.job, ev.job);
	case ESA_A_FLUSH:
		CNT(jc, ESA_C_RESEND_FLUSH);
		CNT(jc, ESA_C_EVICTED);
		if (ovf)
			CNT(jc, ESA_C_OVERFLOW);
		h->type = ESA_T_PARTIAL;
		h->flags = ovf ? ESA_F_OVERFLOW : 0;
		h->reason = ESA_R_FLUSH;
		h->rank = bpf_htons(ESA_RANK_NONE);
		h->bitmap = bpf_cpu_to_be64(ev.bitmap);
		return esa_to_ps(ctx, jid, jid);
	case ESA_A_COLLIDE:
		CNT(jc, ESA_C_COLLISION);
		h->reason = ESA_R_COLLISION;
		break;
	case ESA_A_TOMB:
		CNT(jc, ESA_C_TOMB_FWD);
		h->reason = ESA_R_TOMB;
		break;
	default: /* ESA_A_RESEND */
		CNT(jc, ESA_C_RESEND_FWD);
		h->reason = ESA_R_RESEND;
		break;
	}
	h->type = ESA_T_COLLISION;
	return esa_to_ps(ctx, jid, jid);
}

/*
 * Policy atp: the PS's ack of a held sum frees the slot and goes to the
 * workers as their result.  Only the job's PS may send it.
 */
static __always_inline int esa_ack(struct xdp_md *ctx, struct iphdr *ip,
				   struct udphdr *udp, struct esa_hdr *h,
				   __u32 jid, struct esa_counters *jc)
{
	__u32 seq = bpf_ntohl(h->seq), idx, gen, base, size, n;
	struct esa_tomb *tomb;
	struct esa_addr ps;
	struct esa_slot *s;
	__s64 sidx;

	if (!esa_job_ps(ctx, jid, &ps, &n) ||
	    !esa_job_regs(ctx, jid, &gen, &base, &size))
		return esa_drop(jc, ESA_C_DROP_JOB);
	if (ps.ip != ip->saddr || (ps.port && ps.port != udp->source))
		return esa_drop(jc, ESA_C_DROP_SPOOF);
	if ((h->flags & ~ESA_F_OVERFLOW) || h->resv ||
	    h->bitmap != bpf_cpu_to_be64(esa_full_mask(n)))
		return esa_drop(jc, ESA_C_DROP_HEADER);
	CNT(jc, ESA_C_ACK);
	sidx = esa_slot_index(esa_cfg.policy, jid, seq, esa_cfg.slots, base, size);
	if (sidx >= 0) {
		idx = sidx;
		s = bpf_map_lookup_elem(&esa_slots, &idx);
		idx = esa_tomb_index(jid, seq);
		tomb = bpf_map_lookup_elem(&esa_tombs, &idx);
		if (!s || !tomb)
			return XDP_ABORTED;
		bpf_spin_lock(&s->lock);
		if (s->state == ESA_SLOT_HELD && s->job == jid &&
		    s->gen == gen && s->seq == seq) {
			s->state = ESA_SLOT_FREE;
			esa_tomb_set(tomb, gen, seq, ESA_TOMB_DONE);
		}
		bpf_spin_unlock(&s->lock);
	}
	h->type = ESA_T_RESULT;
	h->reason = ESA_R_NONE;
	h->rank = bpf_htons(ESA_RANK_NONE);
	return esa_broadcast(ctx, jid, gen, 0, 0);
}

/* IP options or a first fragment: drop if it is for us, else not ours. */
static __always_inline int esa_odd_ip(struct iphdr *ip, void *end)
{
	struct udphdr *udp;
	__u32 hl = ip->ihl * 4;

	if (ip->frag_off & bpf_htons(IP_OFFSET) || hl < sizeof(*ip))
		return XDP_PASS;
	udp = (void *)ip + hl;
	if ((void *)(udp + 1) > end || udp->dest != esa_cfg.port)
		return XDP_PASS;
	return esa_drop(esa_ctr(esa_cfg.max_jobs), ESA_C_DROP_IP);
}

SEC("xdp")
int esa_xdp(struct xdp_md *ctx)
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

	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->version != 4 ||
	    ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	if (esa_cfg.addr && ip->daddr != esa_cfg.addr)
		return XDP_PASS;
	if (ip->ihl != 5 || ip->frag_off & bpf_htons(IP_MF | IP_OFFSET))
		return esa_odd_ip(ip, end);
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end || udp->dest != esa_cfg.port)
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
	jc = esa_ctr(jid);
	CNT(jc, ESA_C_RX);
	vals = (void *)(h + 1);
	if ((void *)vals + esa_cfg.nvals * sizeof(__u32) > end ||
	    bpf_ntohs(ip->tot_len) < sizeof(*ip) + need)
		return esa_drop(jc, ESA_C_DROP_TRUNC);
	if (bpf_ntohs(h->count) != esa_cfg.nvals ||
	    bpf_ntohs(udp->len) != need ||
	    bpf_ntohs(ip->tot_len) != sizeof(*ip) + need)
		return esa_drop(jc, ESA_C_DROP_COUNT);
	if (h->type == ESA_T_DATA)
		return esa_data(ctx, eth, ip, udp, h, vals, jid, jc);
	if (h->type == ESA_T_ACK && esa_cfg.policy == ESA_POLICY_ATP)
		return esa_ack(ctx, ip, udp, h, jid, jc);
	return esa_drop(jc, ESA_C_DROP_TYPE);
}

/* ------------------------------------------------------------------ */
/* Egress: one program per lane, run by the devmap on each copy        */
/* ------------------------------------------------------------------ */

/*
 * A copy of a frame on its way out of port ifindex.  Unicast frames go as
 * they are.  Of the copies of a result, the first goes to the job's worker
 * behind this port, if any, the next to the job's PS if it is behind this
 * port too; the rest are dropped.  Copies of one broadcast reach a port
 * back to back on the CPU that made them, so per-CPU state tells them apart.
 */
static __always_inline int esa_egress(struct xdp_md *ctx, __u32 ifindex)
{
	struct esa_meta *m = (void *)(long)ctx->data_meta;
	struct esa_dest_key dk = { .ifindex = ifindex };
	struct esa_egress_seen *seen;
	struct esa_counters *jc;
	__u32 k = ifindex % 4096;
	struct esa_dest *d;
	struct esa_pkt p;

	if (esa_parse(ctx, &p) || (void *)(m + 1) > (void *)p.eth)
		return XDP_DROP;
	if (m->kind == ESA_META_UNICAST)
		return XDP_PASS;
	if (m->kind != ESA_META_RESULT || p.h->type != ESA_T_RESULT)
		return XDP_DROP;
	seen = bpf_map_lookup_elem(&esa_seen, &k);
	if (!seen)
		return XDP_DROP;
	if (seen->ifindex != ifindex || seen->bcast != m->bcast) {
		seen->ifindex = ifindex;
		seen->bcast = m->bcast;
		seen->served = 0;
	}
	dk.job = bpf_ntohs(p.h->job);
	jc = esa_ctr(dk.job);
	d = bpf_map_lookup_elem(&esa_dests, &dk);
	if (d && d->gen == m->gen && !(seen->served & ESA_SERVED_WORKER)) {
		seen->served |= ESA_SERVED_WORKER;
		p.ip->daddr = d->ip;
		p.udp->dest = d->port;
		esa_mac_cpy(p.eth->h_dest, d->mac);
		esa_mac_cpy(p.eth->h_source, d->port_mac);
		CNT(jc, ESA_C_RESULT_TX);
	} else if (m->ps_ifindex == ifindex && !(seen->served & ESA_SERVED_PS)) {
		seen->served |= ESA_SERVED_PS;
		p.ip->daddr = m->ps_ip;
		p.udp->dest = m->ps_port;
		esa_mac_cpy(p.eth->h_dest, m->ps_mac);
		esa_mac_cpy(p.eth->h_source, m->ps_port_mac);
		CNT(jc, ESA_C_PS_COPY_TX);
	} else {
		return XDP_DROP;
	}
	esa_ip_csum(p.ip);
	return XDP_PASS;
}

SEC("xdp/devmap")
int esa_egress_prog(struct xdp_md *ctx)
{
	return esa_egress(ctx, ctx->egress_ifindex);
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
