/* SPDX-License-Identifier: GPL-2.0 */
/*
 * esa_bind.bpf.h - where each rank lives (struct esa_bind), checked for
 * every admitted data packet before it can touch a slot: the port it came
 * in on and the MAC it came from must be the rank's.  What registration did
 * not give is learnt from the rank's first packet, once: nothing a packet
 * from elsewhere does can move it (docs/protocol.md, "Trust").
 */
#ifndef _ESA_BIND_BPF_H
#define _ESA_BIND_BPF_H

#define ESA_BIND_KNOWN	(ESA_BIND_PORT | ESA_BIND_MAC)

static __always_inline struct esa_bind *esa_bind_of(__u32 jid, __u32 rank)
{
	__u32 k = jid * ESA_MAX_WORKERS + (rank & (ESA_MAX_WORKERS - 1));

	return bpf_map_lookup_elem(&esa_binds, &k);
}

/* Does the packet come from where the binding (flags of word) says? */
static __always_inline int esa_bind_match(const struct esa_bind *b, __u64 word,
					  struct xdp_md *ctx,
					  const struct ethhdr *eth)
{
	if ((word & ESA_BIND_PORT) && b->ifindex != ctx->ingress_ifindex)
		return 0;
	if ((word & ESA_BIND_MAC) && !esa_mac_eq(b->mac, eth->h_source))
		return 0;
	return 1;
}

/*
 * The rank's first packet of registration reg (or the first to find a
 * binding of an older one): take the entry (compare-and-swap to CLAIM),
 * fill in what was not given, publish.  Rare, so out of line.  Returns 0,
 * or ESA_C_DROP_PLACE when another CPU is learning the same rank just now.
 */
__esa_global int esa_bind_learn(struct xdp_md *ctx, __u32 reg)
{
	struct esa_bind *b;
	struct esa_pkt p;
	__u64 word, keep;

	if (esa_parse(ctx, &p))
		return ESA_C_DROP_INTERNAL;
	b = esa_bind_of(bpf_ntohs(p.h->job), bpf_ntohs(p.h->rank));
	if (!b)
		return ESA_C_DROP_INTERNAL;
	word = *(volatile __u64 *)&b->word;
	keep = (word >> 32) == reg ? word & ESA_BIND_KNOWN : 0;
	if ((word & (ESA_BIND_CLAIM | ESA_BIND_ANYREG)) ||
	    __sync_val_compare_and_swap(&b->word, word,
					(__u64)reg << 32 | ESA_BIND_CLAIM) != word)
		return ESA_C_DROP_PLACE;
	if (!(keep & ESA_BIND_PORT)) {
		b->ifindex = ctx->ingress_ifindex;
		esa_mac_cpy(b->port_mac, p.eth->h_dest);
	}
	if (!(keep & ESA_BIND_MAC))
		esa_mac_cpy(b->mac, p.eth->h_source);
	b->sport = p.udp->source;
	*(volatile __u64 *)&b->word = (__u64)reg << 32 | ESA_BIND_KNOWN;
	esa_count(bpf_ntohs(p.h->job), ESA_C_LEARN);
	return 0;
}

/*
 * Is the data packet in ctx (rank `rank` of job jid, registration reg) from
 * where the rank lives?  One lookup and a few compares when the binding is
 * complete; learning, once, out of line.  Returns 0 or ESA_C_DROP_PLACE.
 */
static __always_inline int esa_bind_check(struct xdp_md *ctx,
					  const struct ethhdr *eth,
					  const struct udphdr *udp, __u32 jid,
					  __u32 rank, __u32 reg)
{
	struct esa_bind *b = esa_bind_of(jid, rank);
	__u64 word;

	if (!b)
		return ESA_C_DROP_INTERNAL;
	word = *(volatile __u64 *)&b->word;
	if ((word >> 32) != reg && !(word & ESA_BIND_ANYREG))
		return esa_bind_learn(ctx, reg);	/* not bound yet */
	if ((word & ESA_BIND_CLAIM) || !esa_bind_match(b, word, ctx, eth))
		return ESA_C_DROP_PLACE;
	/*
	 * Where results go back to: the UDP port is not where a rank lives
	 * (registration, when it names one, checked it), so it follows the
	 * rank's socket.
	 */
	if (b->sport != udp->source)
		b->sport = udp->source;
	if ((word & ESA_BIND_KNOWN) == ESA_BIND_KNOWN || (word & ESA_BIND_ANYREG))
		return 0;
	return esa_bind_learn(ctx, reg);	/* the rest, given the port */
}

#endif /* _ESA_BIND_BPF_H */
