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
 * millisecond).
 *
 * The registry is per network namespace and the kfuncs find it through the
 * packet's receiving device, so each takes the XDP context (the map path's
 * functions take it too, unused, so that both have one signature).
 */
#ifndef _ESA_KFUNC_BPF_H
#define _ESA_KFUNC_BPF_H

extern int bpf_esa_admit(struct xdp_md *ctx, __u64 key, __be32 saddr,
			 __u64 now, struct esa_kf_jinfo *ji) __ksym;
extern int bpf_esa_owner_alive(struct xdp_md *ctx, __u32 job, __u32 gen,
			       __u64 now) __ksym;
extern int bpf_esa_job(struct xdp_md *ctx, __u32 job,
		       struct esa_kf_job *out) __ksym;

/* bpf_esa_admit() fills struct esa_jinfo as the UAPI's esa_kf_jinfo. */
_Static_assert(sizeof(struct esa_jinfo) == sizeof(struct esa_kf_jinfo) &&
	       __builtin_offsetof(struct esa_jinfo, gen) ==
	       __builtin_offsetof(struct esa_kf_jinfo, gen) &&
	       __builtin_offsetof(struct esa_jinfo, region_base) ==
	       __builtin_offsetof(struct esa_kf_jinfo, region_base) &&
	       __builtin_offsetof(struct esa_jinfo, region_size) ==
	       __builtin_offsetof(struct esa_kf_jinfo, region_size) &&
	       __builtin_offsetof(struct esa_jinfo, nworkers) ==
	       __builtin_offsetof(struct esa_kf_jinfo, nworkers),
	       "struct esa_jinfo must have the layout of struct esa_kf_jinfo");

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
	job = bpf_ntohs(p.h->job);
	err = bpf_esa_admit(ctx, ESA_KF_KEY(job, bpf_ntohs(p.h->rank), p.h->prio,
					    p.udp->source),
			    p.ip->saddr, now, (struct esa_kf_jinfo *)ji);
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
	return bpf_esa_owner_alive(ctx, jid, gen, now);
}

/* The PS of job jid; 0 when the job is gone. */
static __always_inline int esa_job_ps(struct xdp_md *ctx, __u32 jid,
				      struct esa_addr *ps, __u32 *nworkers)
{
	struct esa_kf_job j = {};

	if (!bpf_esa_job(ctx, jid, &j))
		return 0;
	*ps = j.ps;
	*nworkers = j.nworkers;
	return 1;
}

/* Generation and switchml region of job jid; 0 when the job is gone. */
static __always_inline int esa_job_regs(struct xdp_md *ctx, __u32 jid,
					__u32 *gen, __u32 *base, __u32 *size)
{
	struct esa_kf_job j = {};

	if (!bpf_esa_job(ctx, jid, &j))
		return 0;
	*gen = j.gen;
	*base = j.region_base;
	*size = j.region_size;
	return 1;
}

#endif /* _ESA_KFUNC_BPF_H */
