// SPDX-License-Identifier: GPL-2.0
/*
 * esa_bench.bpf.c - what `make bench` runs beside the ESA program.
 *
 * BPF_PROG_TEST_RUN repeats one packet, but the ESA program must see a real
 * stream (rank after rank, chunk after chunk) to take its real paths: claim,
 * add, complete and multicast.  bench_drive turns the buffer into the next
 * packet of that stream (undoing whatever the previous run rewrote) and
 * tail-calls the program under test; bench_lane does the same on every CPU
 * at once and checks every result.  With bench_ack set (policy atp), the
 * stream has one more packet per chunk: the PS's ack that frees the held
 * slot, part of what a chunk costs under atp.  The floors run behind the
 * same driver:
 *   bench_tx:  XDP_TX, nothing else;
 *   bench_add: lock the chunk's slot, add the values, unlock: the least any
 *              aggregation over ESA's slot layout (esa_slots, esa_acc) does;
 *              a multi-buffer frame's values (jumbo) first copied out, as
 *              ESA's program does.
 * All are xdp.frags, as ESA's program: a program array takes one kind.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <stdbool.h>
#include "esa_maps.h"
#include "esa_bench.h"

const volatile struct bench_cfg bench_cfg;

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} bench_target SEC(".maps");

/* The floor's own copy of ESA's slot layout (same types, same sizes). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct esa_slot);
} floor_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, ESA_MAX_VALUES * sizeof(__u64));
} floor_acc SEC(".maps");

/* A multi-buffer frame's values, as esa_scratch. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, ESA_MAX_VALUES * sizeof(__u32));
} floor_scratch SEC(".maps");

#define BENCH_HDRS	(sizeof(struct ethhdr) + sizeof(struct iphdr) + \
			 sizeof(struct udphdr) + sizeof(struct esa_hdr))

/* bench_lane's: each CPU's lane, and what every rank sends. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bench_lane);
} bench_lanes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, ESA_MAX_VALUES * sizeof(__u32));
} bench_vals SEC(".maps");

__u64 bench_n;		/* packets driven so far (one CPU runs the bench) */
__u64 bench_shared_n;	/* the stream the shared lanes take from */
__u32 bench_ack;	/* add the PS's ack after each chunk (policy atp) */

static __always_inline __u16 csum(struct iphdr *ip)
{
	__u16 *p = (__u16 *)ip;
	__u32 s = 0;

	ip->check = 0;
#pragma unroll
	for (int i = 0; i < 10; i++)
		s += p[i];
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return ~s;
}

/* The stream's headers of its packet n: job, from port (rank n % period). */
static __always_inline void bench_headers(struct ethhdr *eth, struct iphdr *ip,
					  struct udphdr *udp, struct esa_hdr *h,
					  __u64 n, __u16 job, __be16 port)
{
	__u32 period = bench_cfg.nworkers + !!bench_ack;
	__u32 rank = n % period, seq = n / period;
	bool ack = rank == bench_cfg.nworkers;

	/* Byte by byte: a memcpy from the rodata with its volatile cast
	 * away is folded into the object's zeros.
	 */
	for (int i = 0; i < 6; i++) {
		eth->h_dest[i] = bench_cfg.switch_mac[i];
		eth->h_source[i] = ack ? bench_cfg.ps_mac[i] : bench_cfg.worker_mac[i];
	}
	if (!ack)
		eth->h_source[5] += rank;
	ip->saddr = ack ? bench_cfg.ps_ip :
			  bpf_htonl(bpf_ntohl(bench_cfg.worker_ip) + rank);
	ip->daddr = bench_cfg.switch_ip;
	ip->ttl = 64;
	ip->check = csum(ip);
	udp->source = ack ? bench_cfg.ps_port : port;
	udp->dest = bpf_htons(ESA_DEFAULT_PORT);
	h->version = ESA_VERSION;
	h->type = ack ? ESA_T_ACK : ESA_T_DATA;
	h->flags = 0;
	h->prio = 0;
	h->job = bpf_htons(job);
	h->rank = bpf_htons(ack ? ESA_RANK_NONE : rank);
	h->bitmap = bpf_cpu_to_be64(!ack ? 1ULL << rank :
				    bench_cfg.nworkers >= 64 ? ~0ULL :
				    (1ULL << bench_cfg.nworkers) - 1);
	h->seq = bpf_htonl(seq);
	h->reason = 0;
	h->resv = 0;
}

/* Drop the metadata a multicast left behind; the frame's headers, or NULL. */
static __always_inline struct esa_hdr *bench_frame(struct xdp_md *ctx)
{
	void *data, *end, *meta;

	meta = (void *)(long)ctx->data_meta;
	data = (void *)(long)ctx->data;
	if (meta < data && bpf_xdp_adjust_meta(ctx, data - meta))
		return NULL;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (data + BENCH_HDRS > end)
		return NULL;
	return data + BENCH_HDRS - sizeof(struct esa_hdr);
}

SEC("xdp.frags")
int bench_drive(struct xdp_md *ctx)
{
	struct esa_hdr *h = bench_frame(ctx);
	struct udphdr *udp;
	struct iphdr *ip;

	if (!h)
		return XDP_ABORTED;
	udp = (void *)h - sizeof(*udp);
	ip = (void *)udp - sizeof(*ip);
	bench_headers((void *)ip - sizeof(struct ethhdr), ip, udp, h, bench_n++,
		      bench_cfg.job, bench_cfg.worker_port);
	bpf_tail_call(ctx, &bench_target, 0);
	return XDP_ABORTED;
}

/*
 * What this CPU's previous packet became (the buffer is the same from one
 * run of the program to the next): a result must carry nworkers times the
 * values every rank sends, which are small enough to sum exactly.  Whatever
 * the program rewrote gets the ranks' values back before it goes out again.
 */
static __always_inline int bench_check(struct xdp_md *ctx, struct esa_hdr *h,
				       struct bench_lane *l)
{
	void *end = (void *)(long)ctx->data_end;
	__u32 *v = (void *)(h + 1), *want, zero = 0, bad = 0;

	if (h->type == ESA_T_DATA)
		return 0;
	want = bpf_map_lookup_elem(&bench_vals, &zero);
	if (!want || (void *)v + bench_cfg.nvals * sizeof(__u32) > end)
		return -1;
	for (__u32 i = 0; i < ESA_MAX_VALUES; i += 8) {
		if (i >= bench_cfg.nvals)
			break;
#pragma unroll
		for (int j = 0; j < 8; j++) {
			bad |= v[i + j] ^ want[i + j] * bench_cfg.nworkers;
			v[i + j] = want[i + j];
		}
	}
	if (h->type != ESA_T_RESULT) {
		l->other++;
	} else {
		l->results++;
		l->bad += bad || (h->flags & ESA_F_OVERFLOW);
	}
	return 0;
}

/*
 * make bench's throughput on several cores: each CPU drives its lane, its
 * own stream of its job, or with .shared the one stream that every shared
 * lane takes its packets from (ranks of one chunk then reach its slot from
 * every CPU at once), and checks every result it sees.
 */
SEC("xdp.frags")
int bench_lane(struct xdp_md *ctx)
{
	struct esa_hdr *h = bench_frame(ctx);
	struct bench_lane *l;
	struct udphdr *udp;
	struct iphdr *ip;
	__u32 zero = 0;
	__u64 n;

	l = bpf_map_lookup_elem(&bench_lanes, &zero);
	if (!l || !h || bench_check(ctx, h, l))
		return XDP_ABORTED;
	n = l->shared ? __sync_fetch_and_add(&bench_shared_n, 1) : l->n++;
	udp = (void *)h - sizeof(*udp);
	ip = (void *)udp - sizeof(*ip);
	bench_headers((void *)ip - sizeof(struct ethhdr), ip, udp, h, n, l->job,
		      l->worker_port);
	bpf_tail_call(ctx, &bench_target, 0);
	return XDP_ABORTED;
}

SEC("xdp.frags")
int bench_tx(struct xdp_md *ctx)
{
	return XDP_TX;
}

SEC("xdp.frags")
int bench_add(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct esa_hdr *h = data + sizeof(struct ethhdr) + sizeof(struct iphdr) +
			    sizeof(struct udphdr);
	__u32 *v = (void *)(h + 1);
	struct esa_slot *s;
	__u64 *acc;
	__u32 idx;

	if ((void *)(h + 1) > end)
		return XDP_ABORTED;
	if ((void *)v + bench_cfg.nvals * sizeof(__u32) > end) {
		idx = 0;
		v = bpf_map_lookup_elem(&floor_scratch, &idx);
		if (!v || bpf_xdp_load_bytes(ctx, sizeof(struct ethhdr) +
					     sizeof(struct iphdr) +
					     sizeof(struct udphdr) + ESA_HDR_LEN,
					     v, bench_cfg.nvals * sizeof(__u32)))
			return XDP_ABORTED;
	}
	idx = bpf_ntohl(h->seq) % bench_cfg.slots;
	s = bpf_map_lookup_elem(&floor_slots, &idx);
	acc = bpf_map_lookup_elem(&floor_acc, &idx);
	if (!s || !acc)
		return XDP_ABORTED;
	bpf_spin_lock(&s->lock);
	for (__u32 i = 0; i < ESA_MAX_VALUES; i += 8) {
		if (i >= bench_cfg.nvals)
			break;
#pragma unroll
		for (int j = 0; j < 8; j++)
			acc[i + j] += (__u64)(v[i + j] ^ 0x80000000U);
	}
	bpf_spin_unlock(&s->lock);
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "GPL";
