/* SPDX-License-Identifier: GPL-2.0 */
/*
 * esa_jobs.bpf.h - the job functions of esa.bpf.c over the esa_jobs map.
 * Built with -DESA_KFUNC, esa.bpf.c includes esa_kfunc.bpf.h instead, the
 * same functions over esa.ko's registry; both fill struct esa_jinfo.
 */
#ifndef _ESA_JOBS_BPF_H
#define _ESA_JOBS_BPF_H

static __always_inline struct esa_job *esa_job_lookup(__u32 jid)
{
	return bpf_map_lookup_elem(&esa_jobs, &jid);
}

static __always_inline __u32 esa_ms(__u64 now)
{
	return (__u32)(now / NSEC_PER_MSEC);
}

/*
 * A packet of job j was admitted: stamp the job's activity (at most once a
 * millisecond) and return the generation the packet belongs to.  A job
 * silent past its lease has lost its slots (see esa_owner_alive()); its next
 * packet renews the lease under a new generation, so the slots stamped with
 * the old one stay free to all.  Both are one compare-and-swap of j->life
 * (esa_life_activity(), include/esa_maps.h, unit-tested in user space).
 */
static __always_inline __u32 esa_job_activity(struct esa_job *j, __u32 jid,
					      __u64 now)
{
	__u64 life = *(volatile __u64 *)&j->life;
	int renewed;
	__u32 gen;

	gen = esa_life_activity(&j->life, life, j->lease_ms, esa_ms(now),
				&renewed);
	if (renewed)
		esa_count(jid, ESA_C_EXPIRED);
	return gen;
}

/* The compiler keeps the reads on either side of it in their order. */
static __always_inline void esa_barrier(void)
{
	asm volatile("" ::: "memory");
}

/*
 * Admit the data packet in ctx: check it against its job's registration,
 * renew the job's lease and fill *ji.  Returns 0 or the counter of the drop
 * reason.  The control plane rewrites an entry in place on a re-add, the
 * registration cleared first and set again before the state (jobs.c): an
 * entry whose registration is cleared, or changed by the end, was read
 * half-written, and admits nothing (loads stay in order on x86; arm64
 * would want the load-acquire of later kernels' BPF).
 */
static __always_inline int esa_admit(struct xdp_md *ctx, __u64 now,
				     struct esa_jinfo *ji)
{
	const struct esa_addr *a;
	struct esa_pkt p;
	struct esa_job *j;
	__u16 rank, jid;
	__u32 reg;
	__u64 set;

	if (esa_parse(ctx, &p))
		return ESA_C_DROP_TRUNC;
	jid = bpf_ntohs(p.h->job);
	j = esa_job_lookup(jid);
	if (!j)
		return ESA_C_DROP_JOB;
	reg = *(volatile __u32 *)&j->reg;
	esa_barrier();
	if (!reg || *(volatile __u8 *)&j->state != ESA_JOB_ACTIVE)
		return ESA_C_DROP_JOB;
	rank = bpf_ntohs(p.h->rank);
	if (rank >= j->nworkers)
		return ESA_C_DROP_RANK;
	if (p.h->prio > j->max_prio)
		return ESA_C_DROP_PRIO;
	a = &j->rank[rank & (ESA_MAX_WORKERS - 1)];
	if (!a->ip)
		return ESA_C_DROP_RANK;		/* under another leaf */
	/* a leaf's sum (at its spine) is of exactly the leaf's ranks */
	set = j->set[rank & (ESA_MAX_WORKERS - 1)];
	if (!(p.h->flags & ESA_F_LEAF) != !set ||
	    (set && p.h->bitmap != bpf_cpu_to_be64(set)))
		return ESA_C_DROP_HEADER;
	if (a->ip != p.ip->saddr || (a->port && a->port != p.udp->source))
		return ESA_C_DROP_SPOOF;

	ji->nworkers = j->nworkers;
	ji->region_base = j->region_base;
	ji->region_size = j->region_size;
	ji->mask = j->mask;
	ji->rset = set;
	ji->up = j->up;
	ji->gen = esa_job_activity(j, jid, now);
	esa_barrier();
	/* not added again meanwhile: the generation is this one's, or dead */
	if (*(volatile __u32 *)&j->reg != reg)
		return ESA_C_DROP_JOB;
	ji->reg = reg;
	return 0;
}

/* Is generation gen of job jid still alive? */
__esa_global int esa_owner_alive(struct xdp_md *ctx, __u32 jid,
				 __u32 gen, __u64 now)
{
	struct esa_job *j = esa_job_lookup(jid);
	__u64 life;

	/* ctx is the kfunc variant's; a global function must be passed it */
	if (!ctx || !j || j->state != ESA_JOB_ACTIVE)
		return 0;
	life = *(volatile __u64 *)&j->life;
	return esa_life_gen(life) == gen &&
	       !esa_lease_over_ms(j->lease_ms, life, esa_ms(now));
}

/* The PS of job jid; 0 when the job is gone. */
static __always_inline int esa_job_ps(struct xdp_md *ctx, __u32 jid,
				      struct esa_addr *ps, __u32 *nworkers)
{
	struct esa_job *j = esa_job_lookup(jid);

	if (!j || j->state != ESA_JOB_ACTIVE)
		return 0;
	*ps = j->ps;
	*nworkers = j->nworkers;
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
	struct esa_job *j = esa_job_lookup(jid);

	if (!j || j->state != ESA_JOB_ACTIVE)
		return 0;
	*up = j->up;
	*nworkers = j->nworkers;
	*reg = j->reg;
	return 1;
}

/* Generation, registration and region of job jid; 0 when it is gone. */
static __always_inline int esa_job_regs(struct xdp_md *ctx, __u32 jid,
					__u32 *gen, __u32 *reg, __u32 *base,
					__u32 *size)
{
	struct esa_job *j = esa_job_lookup(jid);

	if (!j || j->state != ESA_JOB_ACTIVE)
		return 0;
	*gen = esa_life_gen(*(volatile __u64 *)&j->life);
	*reg = j->reg;
	*base = j->region_base;
	*size = j->region_size;
	return 1;
}

#endif /* _ESA_JOBS_BPF_H */
