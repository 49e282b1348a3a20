// SPDX-License-Identifier: GPL-2.0
/*
 * Another XDP program on a port in generic mode, in place of the switch's
 * (selftests/delivery/fanout_meta.sh): every UDP frame to port 9999 leaves
 * with XDP metadata laid out as the switch's (struct esa_fan_meta), its
 * magic and all, for job 3 with a PS copy.  All it cannot know is what
 * only the switch's program can: what that program was loaded with.  The
 * port's tc fan-out must leave such frames alone.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "esa_maps.h"

SEC("xdp")
int meta_forge(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	struct esa_fan_meta *fm;

	if ((void *)(udp + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) ||
	    ip->protocol != IPPROTO_UDP || udp->dest != bpf_htons(9999))
		return XDP_PASS;
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*fm)))
		return XDP_PASS;
	fm = (void *)(long)ctx->data_meta;
	if ((void *)(fm + 1) > (void *)(long)ctx->data)
		return XDP_PASS;
	__builtin_memset(fm, 0, sizeof(*fm));
	fm->magic = ESA_FAN_MAGIC;
	fm->job = 3;
	fm->ps_copy = 1;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
