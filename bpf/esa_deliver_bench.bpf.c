// SPDX-License-Identifier: GPL-2.0
/*
 * esa_deliver_bench.bpf.c - what a result costs to deliver, for `make
 * bench` (selftests/esa/esa_deliver_bench.c), on live frames
 * (BPF_F_TEST_XDP_LIVE_FRAMES: the copies are made and sent).  The frame
 * run is a finished sum; each program does what the switch does with one:
 *
 *   dbench_fan:   the switch's delivery (esa_broadcast()): the job's own
 *                 devmap (the switch's esa_fan, reused), one copy per member,
 *                 each addressed by the switch's own egress program;
 *   dbench_bcast: the first design's, for comparison: every port's two
 *                 entries of one devmap, XDP metadata saying which broadcast,
 *                 and an egress program (dbench_old_egress, its logic as it
 *                 was) that gives a port's first copy to the job's worker
 *                 there, the next to the PS if it is there, and drops the
 *                 rest.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "esa_maps.h"

/* The switch's map, reused (bpf_map__reuse_fd()). */
#include "esa_fan.bpf.h"

/* The first design: two entries per port (key ifindex * 2 + lane). */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, 512);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
} old_ports SEC(".maps");

/* ... and its worker of a job behind a port: key ifindex << 16 | job. */
struct old_dest {
	__u8	mac[6];
	__be16	port;
	__u8	port_mac[6];
	__u16	resv;
	__be32	ip;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct old_dest);
} old_dests SEC(".maps");

struct old_meta {
	__u32	ps_ifindex;
	__u32	bcast;
	__be32	ps_ip;
	__be16	ps_port;
	__u8	ps_mac[6];
};

struct old_seen {
	__u32	ifindex;
	__u32	bcast;
	__u32	served;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct old_seen);
} old_seen SEC(".maps");

const volatile __u32 dbench_job;
__u32 dbench_ps_ifindex;	/* the PS's port, address and MAC */
__be32 dbench_ps_ip;
__be16 dbench_ps_port;
__u8 dbench_ps_mac[6];
__u32 dbench_bcast_n;	/* broadcasts made (one CPU runs the bench) */
__u32 dbench_reg;	/* the job's registration, which egress checks */
__u64 dbench_sunk;	/* copies the far ends received */

struct pkt {
	struct ethhdr *eth;
	struct iphdr *ip;
	struct udphdr *udp;
	struct esa_hdr *h;
};

static __always_inline int parse(struct xdp_md *ctx, struct pkt *p)
{
	void *d = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;

	p->eth = d;
	p->ip = (void *)(p->eth + 1);
	p->udp = (void *)(p->ip + 1);
	p->h = (void *)(p->udp + 1);
	return (void *)(p->h + 1) > end;
}

SEC("xdp")
int dbench_fan(struct xdp_md *ctx)
{
	__u32 job = dbench_job;
	struct pkt p;
	void *devmap;

	if (parse(ctx, &p))
		return XDP_ABORTED;
	devmap = bpf_map_lookup_elem(&esa_fan, &job);
	if (!devmap)
		return XDP_ABORTED;
	p.ip->id = (__u16)(++dbench_bcast_n);	/* the broadcast's number */
	p.h->resv = 0;
	/* as the switch's ingress: live frames come back with egress's MACs */
	esa_stamp_reg(p.eth->h_source, dbench_reg);
	return bpf_redirect_map(devmap, 0, BPF_F_BROADCAST);
}

SEC("xdp")
int dbench_bcast(struct xdp_md *ctx)
{
	struct old_meta *m;

	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*m)))
		return XDP_ABORTED;
	m = (void *)(long)ctx->data_meta;
	if ((void *)(m + 1) > (void *)(long)ctx->data)
		return XDP_ABORTED;
	m->ps_ifindex = dbench_ps_ifindex;
	m->ps_ip = dbench_ps_ip;
	m->ps_port = dbench_ps_port;
	__builtin_memcpy(m->ps_mac, dbench_ps_mac, 6);
	m->bcast = ++dbench_bcast_n;
	return bpf_redirect_map(&old_ports, 0, BPF_F_BROADCAST);
}

static __always_inline void csum(struct iphdr *ip)
{
	__u16 *w = (__u16 *)ip;
	__u32 s = 0;

	ip->check = 0;
#pragma unroll
	for (int i = 0; i < (int)sizeof(*ip) / 2; i++)
		s += w[i];
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	ip->check = (__u16)~s;
}

SEC("xdp/devmap")
int dbench_old_egress(struct xdp_md *ctx)
{
	struct old_meta *m = (void *)(long)ctx->data_meta;
	__u32 ifindex = ctx->egress_ifindex, k = ifindex % 4096;
	struct old_seen *seen;
	struct old_dest *d;
	struct pkt p;
	__u64 key;

	if (parse(ctx, &p) || (void *)(m + 1) > (void *)p.eth)
		return XDP_DROP;
	seen = bpf_map_lookup_elem(&old_seen, &k);
	if (!seen)
		return XDP_DROP;
	if (seen->ifindex != ifindex || seen->bcast != m->bcast) {
		seen->ifindex = ifindex;
		seen->bcast = m->bcast;
		seen->served = 0;
	}
	key = (__u64)ifindex << 16 | bpf_ntohs(p.h->job);
	d = bpf_map_lookup_elem(&old_dests, &key);
	if (d && !(seen->served & 1)) {
		seen->served |= 1;
		p.ip->daddr = d->ip;
		p.udp->dest = d->port;
		__builtin_memcpy(p.eth->h_dest, d->mac, 6);
		__builtin_memcpy(p.eth->h_source, d->port_mac, 6);
	} else if (m->ps_ifindex == ifindex && !(seen->served & 2)) {
		seen->served |= 2;
		p.ip->daddr = m->ps_ip;
		p.udp->dest = m->ps_port;
		__builtin_memcpy(p.eth->h_dest, m->ps_mac, 6);
	} else {
		return XDP_DROP;
	}
	csum(p.ip);
	return XDP_PASS;
}

/* On the far end of every port: take the copies and drop them. */
SEC("xdp")
int dbench_sink(struct xdp_md *ctx)
{
	__sync_fetch_and_add(&dbench_sunk, 1);
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "GPL";
