// SPDX-License-Identifier: GPL-2.0
/*
 * esa_kf_probe.bpf.c - esa.ko's kfuncs called directly, for the VM tests.
 *
 * probe_*: one kfunc call each, its arguments taken from, and its results
 * written to, a struct esa_probe at the start of the packet, so that
 * threads can drive them at once through BPF_PROG_TEST_RUN.  probe_admit
 * can also record each (job, generation) it was admitted in (map used),
 * so a test knows every generation that took packets.
 *
 * bad_*: programs that pass what the kfuncs must not get (NULL, a pointer
 * that may be NULL, memory too small, something else than the context).
 * The tests load each alone and check the verifier's verdict.
 *
 * pause_clock: a kprobe that holds one thread inside a kfunc (esa_pause in
 * esa_kf_probe.h), for races the tests must not leave to chance.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <linux/esa.h>
#include "esa_kf_probe.h"

#include "esa_kfuncs.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);		/* job << 32 | generation */
	__type(value, __u64);		/* packets admitted */
} used SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct esa_kf_jinfo);
} one SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct esa_pause);
} pause SEC(".maps");

struct esa_kf_bind probe_ns;

static __always_inline struct esa_probe *probe_of(struct xdp_md *ctx)
{
	struct esa_probe *p = (void *)(long)ctx->data;

	if ((void *)(p + 1) > (void *)(long)ctx->data_end)
		return NULL;
	return p;
}

SEC("xdp")
int probe_admit(struct xdp_md *ctx)
{
	struct esa_probe *p = probe_of(ctx);
	struct esa_kf_jinfo ji = {};
	__u64 k, *n, one_pkt = 1;

	if (!p)
		return XDP_ABORTED;
	p->ret = bpf_esa_admit(ctx, p->key, p->saddr, p->bitmap, &ji);
	p->ji = ji;
	if (p->record && (p->ret == 0 || p->ret == ESA_C_EXPIRED)) {
		k = (p->key & 0xffff) << 32 | ji.gen;
		n = bpf_map_lookup_elem(&used, &k);
		if (n)
			__sync_fetch_and_add(n, 1);
		else
			bpf_map_update_elem(&used, &k, &one_pkt, BPF_NOEXIST);
	}
	return XDP_PASS;
}

SEC("xdp")
int probe_job(struct xdp_md *ctx)
{
	struct esa_probe *p = probe_of(ctx);
	struct esa_kf_job kj = {};

	if (!p)
		return XDP_ABORTED;
	p->ret = bpf_esa_job(ctx, p->job, &kj);
	p->kj = kj;
	return XDP_PASS;
}

SEC("xdp")
int probe_alive(struct xdp_md *ctx)
{
	struct esa_probe *p = probe_of(ctx);

	if (!p)
		return XDP_ABORTED;
	p->ret = bpf_esa_owner_alive(ctx, p->job, p->gen);
	return XDP_PASS;
}

SEC("xdp")
int probe_bind(struct xdp_md *ctx)
{
	struct esa_probe *p = probe_of(ctx);

	if (!p)
		return XDP_ABORTED;
	p->ret = bpf_esa_bind(ctx, &probe_ns);
	return XDP_PASS;
}

/* The programs below must not load where the verifier enforces what the
 * kfuncs are registered with; where it does not (6.1, for memory), the
 * kfuncs refuse the NULL at run time.  Each returns the kfunc's result.
 */
SEC("xdp")
int bad_admit_null(struct xdp_md *ctx)
{
	struct esa_probe *p = probe_of(ctx);

	/* A packet of a registered job: the kfunc would write. */
	if (!p)
		return XDP_ABORTED;
	return bpf_esa_admit(ctx, p->key, p->saddr, p->bitmap, NULL);
}

SEC("xdp")
int bad_admit_maybe_null(struct xdp_md *ctx)
{
	struct esa_probe *p = probe_of(ctx);
	/* An index the verifier cannot know: the lookup may give NULL. */
	__u32 k = ctx->rx_queue_index + 7;

	if (!p)
		return XDP_ABORTED;
	return bpf_esa_admit(ctx, p->key, p->saddr, p->bitmap,
			     bpf_map_lookup_elem(&one, &k));
}

SEC("xdp")
int bad_job_null(struct xdp_md *ctx)
{
	struct esa_probe *p = probe_of(ctx);

	if (!p)
		return XDP_ABORTED;
	return bpf_esa_job(ctx, p->job, NULL);
}

SEC("xdp")
int bad_bind_null(struct xdp_md *ctx)
{
	return bpf_esa_bind(ctx, NULL);
}

/* Loaded by every kernel, refused by the kfunc: a binding not aligned. */
SEC("xdp")
int bad_bind_misaligned(struct xdp_md *ctx)
{
	__u64 b[3] = {};

	return bpf_esa_bind(ctx, (struct esa_kf_bind *)((char *)b + 4));
}

/* Refused by every kernel: memory too small, a context that is not one. */
SEC("xdp")
int bad_admit_short(struct xdp_md *ctx)
{
	__u64 small = 0;

	return bpf_esa_admit(ctx, 0, 0, 0, (struct esa_kf_jinfo *)&small);
}

SEC("xdp")
int bad_ctx(struct xdp_md *ctx)
{
	struct esa_kf_jinfo ji = {};
	__u64 fake[4] = {};

	return bpf_esa_admit((struct xdp_md *)fake, 0, 0, 0, &ji);
}

struct pause_arg {
	struct esa_pause *p;
};

static long pause_wait(__u32 i, void *arg)
{
	struct pause_arg *a = arg;

	/* 1 stops the loop: the verifier wants 0 or 1 */
	return *(volatile __u32 *)&a->p->go ? 1 : 0;
}

SEC("kprobe/ktime_get_coarse_ts64")
int pause_clock(void *ctx)
{
	struct pause_arg a;
	__u32 k = 0;

	a.p = bpf_map_lookup_elem(&pause, &k);
	if (!a.p || (__u32)bpf_get_current_pid_tgid() != a.p->tid ||
	    !__sync_bool_compare_and_swap(&a.p->armed, 1, 0))
		return 0;
	a.p->paused = 1;
	/* Seconds at most (the test sets go within milliseconds). */
	for (int i = 0; i < 16 && !*(volatile __u32 *)&a.p->go; i++)
		bpf_loop(1 << 20, pause_wait, &a, 0);
	a.p->timed_out = !*(volatile __u32 *)&a.p->go;
	a.p->paused = 2;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
