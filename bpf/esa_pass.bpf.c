// SPDX-License-Identifier: GPL-2.0
/*
 * XDP_PASS, for the far end of a veth whose near end redirects or transmits
 * with XDP: a veth only takes XDP frames when its peer runs NAPI, which an
 * attached XDP program guarantees.  Used by the namespace tests and the demo.
 * Section xdp.frags is the same for jumbo MTUs: a veth refuses a peer MTU
 * above one page's frame (about 3500) unless its program takes
 * multi-buffer frames.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int esa_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

SEC("xdp.frags")
int esa_pass_frags(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
