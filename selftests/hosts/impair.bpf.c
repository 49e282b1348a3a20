// SPDX-License-Identifier: GPL-2.0
/*
 * impair.bpf.c - a lossy, duplicating, reordering link for the reliability
 * tests, as a tc egress program (the host kernel has no sch_netem).
 *
 * Attached with `tc filter add dev DEV egress bpf da obj impair.bpf.o sec
 * tc/NAME` on both ports of a worker's link (selftests/hosts/topo.sh), it
 * acts on IPv4 UDP only (ARP and the rest pass): it drops a packet with
 * probability LOSS, sends a second copy with probability DUP (the copy is
 * marked so that it is not impaired again), and with probability REORDER
 * steers the packet into HTB class 1:2, a 20 Mbit/s lane beside the 10
 * Gbit/s class 1:1, so that it arrives after packets sent behind it.
 * Probabilities are in parts per million, one section per mix.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define DUP_MARK	0xe5a0d0b1
#define CLASS_FAST	0x10001		/* 1:1 */
#define CLASS_SLOW	0x10002		/* 1:2 */

static __always_inline int impair(struct __sk_buff *skb, __u32 loss, __u32 dup,
				  __u32 reorder)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if (skb->mark == DUP_MARK) {	/* our own copy: as it is */
		skb->mark = 0;
		skb->priority = CLASS_FAST;
		return TC_ACT_OK;
	}
	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) ||
	    ip->protocol != IPPROTO_UDP)
		return TC_ACT_OK;
	if (bpf_get_prandom_u32() % 1000000 < loss)
		return TC_ACT_SHOT;
	if (dup && bpf_get_prandom_u32() % 1000000 < dup) {
		skb->mark = DUP_MARK;
		bpf_clone_redirect(skb, skb->ifindex, 0);
		skb->mark = 0;
	}
	skb->priority = reorder && bpf_get_prandom_u32() % 1000000 < reorder ? CLASS_SLOW :
									      CLASS_FAST;
	return TC_ACT_OK;
}

#define IMPAIR(name, loss, dup, reorder)				\
	SEC("tc/" #name)						\
	int name(struct __sk_buff *skb)					\
	{								\
		return impair(skb, loss, dup, reorder);			\
	}

IMPAIR(loss1, 10000, 0, 0)		/* 1% loss */
IMPAIR(loss5, 50000, 0, 0)		/* 5% loss */
IMPAIR(dupreorder, 0, 20000, 50000)	/* 2% duplicated, 5% reordered */
IMPAIR(mix, 10000, 10000, 20000)	/* 1% loss, 1% dup, 2% reordered */

char LICENSE[] SEC("license") = "GPL";
