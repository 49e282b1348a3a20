// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_xsk: the XDP program libesa and esa-ps put on a host's interface for
 * AF_XDP (user/lib/xsk.c).  It steers to an AF_XDP socket only the UDP
 * packets addressed to an address and port in esa_xsk_ports (a worker's
 * registered address, a PS's), arriving on the queue that socket is bound
 * to; everything else passes to the kernel untouched: other traffic, ICMP
 * errors, fragments, IP options, and our packets on another queue (the
 * UDP socket libesa keeps on the same port takes those).  xsk_prog.c
 * attaches it alone, through a bpf_link its process holds.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xsk_maps.h"

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, ESA_XSK_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ESA_XSK_SLOTS);
	__type(key, struct esa_xsk_key);
	__type(value, struct esa_xsk_val);
} esa_xsk_ports SEC(".maps");

static __always_inline int steer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	struct esa_xsk_key key = {};
	struct esa_xsk_val *v;

	if ((void *)(udp + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) ||
	    ip->version != 4 || ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
	    (ip->frag_off & bpf_htons(0x3fff)))
		return XDP_PASS;
	key.addr = ip->daddr;
	key.port = udp->dest;
	v = bpf_map_lookup_elem(&esa_xsk_ports, &key);
	if (!v || v->queue != ctx->rx_queue_index)
		return XDP_PASS;
	return bpf_redirect_map(&xsks_map, v->slot, XDP_PASS);
}

SEC("xdp")
int esa_xsk(struct xdp_md *ctx)
{
	return steer(ctx);
}

/*
 * The same for a link whose peer's MTU exceeds a page: veth refuses a
 * program that cannot take multi-buffer frames there (ERANGE).  Only the
 * headers are read, from the first buffer; a multi-buffer frame steered
 * to a socket without XDP_USE_SG is the kernel's drop, counted in
 * XDP_STATISTICS (libesa's packets fit a frame).
 */
SEC("xdp.frags")
int esa_xsk_frags(struct xdp_md *ctx)
{
	return steer(ctx);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
