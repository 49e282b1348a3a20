/* SPDX-License-Identifier: GPL-2.0 */
/*
 * esa_maps.bpf.h - the switch's maps (layouts: include/esa_maps.h), its
 * counters, its clock and the packet view every part of esa.bpf.c shares.
 * Sizes below are defaults; the loader sets them from esa_cfg.
 */
#ifndef _ESA_MAPS_BPF_H
#define _ESA_MAPS_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__uint(map_flags, BPF_F_MMAPABLE);	/* field-wise control plane */
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

/*
 * Per CPU: the values of a multi-buffer frame (jumbo), copied out before
 * the slot lock and back after it (no helper may run under the lock, and
 * the frame's pages are not one range the program can address).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, ESA_MAX_VALUES * sizeof(__u32));
} esa_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 257);
	__type(key, __u32);
	__type(value, struct esa_counters);
} esa_counters SEC(".maps");

/* Where each rank lives: index job * ESA_MAX_WORKERS + rank. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256 * ESA_MAX_WORKERS);
	__type(key, __u32);
	__type(value, struct esa_bind);
} esa_binds SEC(".maps");

/* Each job's members, for the egress program; see esa_fan. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct esa_fanout);
} esa_members SEC(".maps");

/* Where the values start: IPv4 without options (esa_xdp() checks). */
#define ESA_VALS_OFF	(sizeof(struct ethhdr) + sizeof(struct iphdr) + \
			 sizeof(struct udphdr) + ESA_HDR_LEN)

#include "esa_fan.bpf.h"	/* each job's devmap */

/* Every port the switch sends on, key ifindex, with the egress program. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, 512);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
} esa_ports SEC(".maps");

/* Per job, its routes as the FIB last gave them (esa_maps.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 512);	/* ESA_ROUTE(): two per job */
	__type(key, __u32);
	__type(value, struct esa_route);
} esa_routes SEC(".maps");

/* The ports with the tc fan-out (esa_maps.h: ESA_PORT_SKB, ESA_PORT_TC). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 512);
	__type(key, __u32);
	__type(value, struct esa_port_info);
} esa_portinfo SEC(".maps");

/*
 * Per CPU: the coarse clock, read once per tick (see esa_now()), the
 * number of the CPU's last result broadcast, and (loaded without addr) the
 * last destination the FIB said is this box's (esa_to_me()).
 */
struct esa_cpu {
	__u64	jiffies;
	__u64	now_ns;
	__u32	bcast;
	__be32	me;
	__u64	me_ns;		/* when the FIB said so; 0: never */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct esa_cpu);
} esa_cpu SEC(".maps");

/* Egress's count per CPU and port (include/esa_maps.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 512);	/* as esa_ports */
	__type(key, __u32);
	__type(value, struct esa_egress_seen);
} esa_seen SEC(".maps");

static __always_inline struct esa_counters *esa_ctr(__u32 row)
{
	return bpf_map_lookup_elem(&esa_counters, &row);
}

#define CNT(p, idx)				\
	do {					\
		if (p)				\
			(p)->c[idx]++;		\
	} while (0)

static __always_inline void esa_count(__u32 row, int idx)
{
	struct esa_counters *c = esa_ctr(row);

	CNT(c, idx);
}

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

static __always_inline int esa_parse_at(void *data, void *end,
					struct esa_pkt *p)
{
	p->eth = data;
	p->ip = (void *)(p->eth + 1);
	p->udp = (void *)(p->ip + 1);
	p->h = (void *)(p->udp + 1);
	return (void *)(p->h + 1) > end;
}

static __always_inline int esa_parse(struct xdp_md *ctx, struct esa_pkt *p)
{
	return esa_parse_at((void *)(long)ctx->data,
			    (void *)(long)ctx->data_end, p);
}

/* The switch's address: the configured one, or what the worker sent to. */
static __always_inline __be32 esa_sw_addr(const struct iphdr *ip)
{
	return esa_cfg.addr ? esa_cfg.addr : ip->daddr;
}

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

/* A one's complement sum of 16-bit words, folded to 16 bits. */
static __always_inline __u16 esa_csum_fold(__u64 s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)s;
}

/*
 * A UDP checksum from its sum; 0 means "no checksum", so a sum that
 * complements to 0 is sent as 0xffff (RFC 768).
 */
static __always_inline __u16 esa_udp_check(__u64 s)
{
	__u16 c = ~esa_csum_fold(s);

	return c ? c : 0xffff;
}

/* The one's complement sum of nvals values, eight at a time. */
static __always_inline __u64 esa_csum_vals(const __u32 *v, __u64 s)
{
	__u32 i;

	for (i = 0; i < ESA_MAX_VALUES && i < esa_cfg.nvals; i += 8) {
#pragma unroll
		for (int j = 0; j < 8; j++)
			s += v[i + j];
	}
	return s;
}

/*
 * The UDP checksum of the packet at p, over its pseudo header, its UDP and
 * ESA headers and nvals values, as the packet is now: once per sum.  The
 * words are summed as they lie in memory, which gives the checksum in the
 * order it is stored (RFC 1071: the sum does not depend on byte order).
 * A multi-buffer frame's values are read into esa_scratch first.  Loaded
 * with udp-csum off: 0, no checksum.  Non-zero if the values cannot be
 * read.
 */
static __always_inline int esa_udp_csum(struct xdp_md *ctx, struct esa_pkt *p)
{
	const __u32 *w = (const __u32 *)p->udp;
	const __u32 *v = (const __u32 *)(p->h + 1);
	__u32 len = esa_cfg.nvals * sizeof(__u32), zero = 0;
	__u32 *sv;
	__u64 s;
	__u32 i;

	p->udp->check = 0;
	if (esa_cfg.flags & ESA_CFG_F_NO_UDP_CSUM)
		return 0;	/* and each copy keeps none */
	s = (__u64)p->ip->saddr + p->ip->daddr + bpf_htons(IPPROTO_UDP) +
	    p->udp->len;
#pragma unroll
	for (i = 0; i < (sizeof(struct udphdr) + ESA_HDR_LEN) / 4; i++)
		s += w[i];
	if ((void *)v + len <= (void *)(long)ctx->data_end) {
		s = esa_csum_vals(v, s);
	} else {	/* multi-buffer */
		sv = bpf_map_lookup_elem(&esa_scratch, &zero);
		if (!sv || len > ESA_MAX_VALUES * sizeof(__u32) ||
		    bpf_xdp_load_bytes(ctx, ESA_VALS_OFF, sv, len))
			return 1;
		s = esa_csum_vals(sv, s);
	}
	p->udp->check = esa_udp_check(s);
	return 0;
}

/*
 * A field of the packet changed from `from` to `to` (16 or 32 bits, as
 * loaded): its UDP checksum follows by RFC 1624's eqn. 3, HC' = ~(~HC +
 * ~m + m'), the copy's rewrite instead of a sum over the values.  A packet
 * without a checksum (0) keeps none.  A 16-bit field's zero-extended
 * complement adds 0xffff, which is 0 in one's complement.
 */
static __always_inline void esa_csum_replace(__sum16 *check, __u32 from,
					     __u32 to)
{
	if (!*check)
		return;
	*check = esa_udp_check((__u64)(__u16)~*check + (__u32)~from + to);
}

/* MACs in packets and maps sit 2-byte aligned: compare and copy by halves. */
static __always_inline int esa_mac_eq(const __u8 *a, const __u8 *b)
{
	return *(const __u16 *)a == *(const __u16 *)b &&
	       *(const __u16 *)(a + 2) == *(const __u16 *)(b + 2) &&
	       *(const __u16 *)(a + 4) == *(const __u16 *)(b + 4);
}

static __always_inline void esa_mac_cpy(__u8 *d, const __u8 *s)
{
	*(__u16 *)d = *(const __u16 *)s;
	*(__u16 *)(d + 2) = *(const __u16 *)(s + 2);
	*(__u16 *)(d + 4) = *(const __u16 *)(s + 4);
}

#endif /* _ESA_MAPS_BPF_H */
