/* SPDX-License-Identifier: GPL-2.0 */
/*
 * esa_kfunc.bpf.h - the job functions of esa.bpf.c over esa.ko's registry.
 *
 * Built with -DESA_KFUNC, esa.bpf.c includes this instead of its functions
 * over the esa_jobs map; the semantics are the same (the kfuncs and the
 * structures they fill are documented in include/uapi/linux/esa.h).  Per
 * packet, admission is one kfunc call, the packet's fields in registers,
 * that fills the caller's struct esa_jinfo under RCU: no map lookup, no
 * reference taken, no shared write but the activity stamp (at most once a
 * millisecond).  The time is the module's: the wrappers keep the map path's
 * signatures and ignore their `now`.
 *
 * The registry is per network namespace and the kfuncs find it through the
 * packet's receiving device, so each takes the XDP context (the map path's
 * functions take it too, unused, so that both have one signature).  The
 * program's slots are not per namespace: esa_kf_ns binds them to the
 * namespace of the first packet (bpf_esa_bind()), and packets of any other
 * namespace are dropped as of an unknown job before they touch a slot.
 * The binding is a map, pinned with the slot maps ("bind"), not the
 * program's own memory: a second program that shares the slot maps (a
 * loader reusing the pins, in another namespace) shares the binding too,
 * and is refused there.  Every path to a slot passes esa_admit() (data) or
 * esa_job_regs() (the PS's ack); the other kfunc calls come after one of
 * them in the same packet.
 */
#ifndef _ESA_KFUNC_BPF_H
#define _ESA_KFUNC_BPF_H

#include "esa_kfuncs.h"

/* The namespace the slots serve, 0 until the first packet. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct esa_kf_bind);
} esa_kf_ns SEC(".maps");

/* 0 for a packet of the namespace the slots serve. */
static __always_inline int esa_kf_bind(struct xdp_md *ctx)
{
	__u32 k = 0;
	struct esa_kf_bind *b = bpf_map_lookup_elem(&esa_kf_ns, &k);

	return b ? bpf_esa_bind(ctx, b) : -1;
}

/*
 * Admit the data packet in ctx: check it against its job's registration,
 * renew the job's lease and fill *ji.  Returns 0 or the counter of the drop
 * reason.  The first packet after the lease ran out is counted as an expiry
 * here, as on the map path; it belongs to the job's new generation.
 */
__esa_global int esa_admit(struct xdp_md *ctx, __u64 now, struct esa_jinfo *ji)
{
	struct esa_pkt p;
	__u16 job;
	int err;

	if (!ji || esa_parse(ctx, &p))
		return ESA_C_DROP_TRUNC;
	if (esa_kf_bind(ctx))
		return ESA_C_DROP_JOB;
	job = bpf_ntohs(p.h->job);
	err = bpf_esa_admit(ctx, ESA_KF_KEY(job, bpf_ntohs(p.h->rank), p.h->prio,
					    p.h->flags, p.udp->source),
			    p.ip->saddr, p.h->bitmap, (struct esa_kf_jinfo *)ji);
	if (err == ESA_C_EXPIRED) {
		esa_count(job, ESA_C_EXPIRED);
		err = 0;
	}
	return err;
}

/* Is generation gen of job jid still alive? */
static __always_inline int esa_owner_alive(struct xdp_md *ctx, __u32 jid,
					   __u32 gen, __u64 now)
{
	return bpf_esa_owner_alive(ctx, jid, gen);
}

/* The PS of job jid; 0 when the job is gone. */
static __always_inline int esa_job_ps(struct xdp_md *ctx, __u32 jid,
				      struct esa_addr *ps, __u32 *nworkers)
{
	struct esa_kf_job j = {};

	if (bpf_esa_job(ctx, jid, &j) != 1)
		return 0;
	*ps = j.ps;
	*nworkers = j.nworkers;
	return 1;
}

/*
 * A leaf's spine for job jid (ip 0: this box is the top), its ranks and
 * its registration; 0 when gone.
 */
static __always_inline int esa_job_up(struct xdp_md *ctx, __u32 jid,
				      struct esa_addr *up, __u32 *nworkers,
				      __u32 *reg)
{
	struct esa_kf_job j = {};

	if (esa_kf_bind(ctx) || bpf_esa_job(ctx, jid, &j) != 1)
		return 0;
	*up = j.up;
	*nworkers = j.nworkers;
	*reg = j.reg;
	return 1;
}

/*
 * Generation, registration and region of job jid; 0 when the job is gone,
 * or when the packet is of another namespace than the program's.
 */
static __always_inline int esa_job_regs(struct xdp_md *ctx, __u32 jid,
					__u32 *gen, __u32 *reg, __u32 *base,
					__u32 *size)
{
	struct esa_kf_job j = {};

	if (esa_kf_bind(ctx) || bpf_esa_job(ctx, jid, &j) != 1)
		return 0;
	*gen = j.gen;
	*reg = j.reg;
	*base = j.region_base;
	*size = j.region_size;
	return 1;
}

#endif /* _ESA_KFUNC_BPF_H */
