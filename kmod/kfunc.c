// SPDX-License-Identifier: GPL-2.0
/*
 * kfunc.c - the registry as XDP programs see it (bpf/esa_kfunc.bpf.h).
 *
 * These run for every packet, so they take no references and, in the
 * common case, write nothing shared: XDP programs run in an RCU read-side
 * section, which is all a lookup needs, and a job's activity is stamped at
 * most once a millisecond.  Each finds the registry of the packet's
 * namespace, the receiving device's.  A program that calls them holds a
 * reference on this module (taken by the verifier through the module's
 * BTF), so none can run once the module has begun to go away.
 *
 * Pointer arguments are checked for NULL although the kfuncs are
 * registered KF_TRUSTED_ARGS: 6.12's verifier then refuses a NULL, 6.1's
 * does not for memory arguments.  The time is read here, never taken from
 * the program.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bpf.h>
#include <linux/netdevice.h>
#include <net/xdp.h>
#include "compat.h"
#include "kfunc.h"
#include "registry.h"

static struct net_device *esa_kf_dev(const struct xdp_md *ctx)
{
	return ((const struct xdp_buff *)ctx)->rxq->dev;
}

static struct esa_net *esa_kf_net(const struct xdp_md *ctx)
{
	return esa_net_rcu(dev_net(esa_kf_dev(ctx)));
}

/* A packet of net reached a program that serves the namespace cookie. */
static void esa_kf_foreign(const struct xdp_md *ctx, struct net *net,
			   u64 cookie)
{
	atomic64_inc(&esa_net_rcu(net)->totals[ESA_CTR_FOREIGN]);
	pr_warn_ratelimited("packet on %s (netns cookie %llu) refused: its XDP program (or one sharing its maps) serves netns cookie %llu, and jobs are per network namespace: load one program, with maps of its own, per namespace\n",
			    esa_kf_dev(ctx)->name, net->net_cookie, cookie);
}

/**
 * bpf_esa_bind - bind the calling program's slots to its packets' namespace
 * @ctx: the XDP context of the packet
 * @b: the binding, zero when the program is loaded; kept in a map that
 *     goes with the slot maps, so that programs sharing them share it
 *
 * The first packet binds *@b to its namespace; packets of other
 * namespaces are refused from then on, counted (ESA_CTR_A_FOREIGN) and
 * logged (ratelimited).
 *
 * Return: 0 for a packet of the program's namespace, -EXDEV for one of
 * another, -EINVAL if @b is NULL or not aligned to 8 bytes.
 */
__bpf_kfunc int bpf_esa_bind(struct xdp_md *ctx, struct esa_kf_bind *b)
{
	struct net *net = dev_net(esa_kf_dev(ctx));
	u64 cookie;

	/* Aligned: a cmpxchg across cache lines is a split lock. */
	if (unlikely(!b || !IS_ALIGNED((unsigned long)b, sizeof(u64))))
		return -EINVAL;
	cookie = READ_ONCE(b->netns_cookie);
	if (likely(cookie == net->net_cookie))
		return 0;
	if (!cookie) {
		cookie = cmpxchg64(&b->netns_cookie, 0, net->net_cookie);
		if (!cookie || cookie == net->net_cookie)
			return 0;
	}
	esa_kf_foreign(ctx, net, cookie);
	return -EXDEV;
}

/*
 * The packet of rank r, with flags and bitmap, against member r of j: 0 or
 * the drop counter.  A leaf's sum (at its spine) carries ESA_F_LEAF and
 * exactly the leaf's ranks; a worker's packet does not carry ESA_F_LEAF.
 */
static int esa_kf_member(const struct esa_kjob *j, u32 r, u8 flags,
			 __be64 bitmap, __be32 saddr, __be16 sport)
{
	const struct esa_addr *a = &j->rank[r];
	u64 set = j->set[r];

	if (!a->ip)
		return ESA_C_DROP_RANK;		/* under another leaf */
	if (!(flags & ESA_F_LEAF) != !set ||
	    (set && bitmap != cpu_to_be64(set)))
		return ESA_C_DROP_HEADER;
	if (a->ip != saddr || (a->port && a->port != sport))
		return ESA_C_DROP_SPOOF;
	return 0;
}

/**
 * bpf_esa_admit - admit a DATA packet to its job and renew the job's lease
 * @ctx: the XDP context of the packet
 * @key: the packet's job, rank, priority, flags and UDP source port:
 *	 ESA_KF_KEY()
 * @saddr: its IPv4 source address
 * @bitmap: its bitmap, as on the wire
 * @ji: filled with the job's generation, registration, region, worker
 *	count, the ranks this box sums, the member's ranks and the upstream
 *
 * Return: 0; ESA_C_EXPIRED if admitted as the job's first packet after its
 * lease ran out; the ESA_C_DROP_* counter of the reason for a drop; or
 * -EINVAL if @ji is NULL.
 */
__bpf_kfunc int bpf_esa_admit(struct xdp_md *ctx, u64 key, __be32 saddr,
			      __be64 bitmap, struct esa_kf_jinfo *ji)
{
	u32 rank = (u16)(key >> 16);
	struct esa_kjob *j;
	int ret;
	u32 gen;

	if (unlikely(!ji))
		return -EINVAL;
	j = esa_job_rcu(esa_kf_net(ctx), (u16)key);
	if (!j)
		return ESA_C_DROP_JOB;
	if (rank >= j->nworkers)
		return ESA_C_DROP_RANK;
	if ((u8)(key >> 32) > READ_ONCE(j->max_prio))
		return ESA_C_DROP_PRIO;
	ret = esa_kf_member(j, rank, (u8)(key >> 40), bitmap, saddr,
			    (__force __be16)(u16)(key >> 48));
	if (ret)
		return ret;
	ret = esa_job_activity(j, &gen);
	if (ret == ESA_C_DROP_JOB)
		return ret;
	ji->gen = gen;
	ji->reg = j->reg;
	ji->region_base = j->region_base;
	ji->region_size = j->region_size;
	ji->nworkers = j->nworkers;
	ji->mask = j->mask;
	ji->rset = j->set[rank];
	ji->up = j->up;
	return ret;
}

/**
 * bpf_esa_owner_alive - does a generation of a job still own its slots?
 * @ctx: the XDP context of the packet
 * @job: job id
 * @gen: generation stamped in the slot
 *
 * Return: 1 while the job is registered in generation @gen and within its
 * lease, else 0.
 */
__bpf_kfunc int bpf_esa_owner_alive(struct xdp_md *ctx, u32 job, u32 gen)
{
	struct esa_kjob *j = esa_job_rcu(esa_kf_net(ctx), job);

	return j && esa_job_alive(j, gen);
}

/**
 * bpf_esa_job - snapshot of a registered job
 * @ctx: the XDP context of the packet
 * @job: job id
 * @out: filled with the job's generation, registration, region, worker
 *	 count, PS and upstream
 *
 * Return: 1, 0 when no job @job is registered, or -EINVAL if @out is NULL.
 */
__bpf_kfunc int bpf_esa_job(struct xdp_md *ctx, u32 job,
			    struct esa_kf_job *out)
{
	struct esa_kjob *j;

	if (unlikely(!out))
		return -EINVAL;
	j = esa_job_rcu(esa_kf_net(ctx), job);
	if (!j)
		return 0;
	out->gen = READ_ONCE(j->gen);
	out->reg = j->reg;
	out->region_base = j->region_base;
	out->region_size = j->region_size;
	out->nworkers = j->nworkers;
	out->ps = j->ps;
	out->up = j->up;
	return 1;
}

BTF_KFUNCS_START(esa_kfunc_ids)
BTF_ID_FLAGS(func, bpf_esa_bind, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, bpf_esa_admit, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, bpf_esa_owner_alive, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, bpf_esa_job, KF_TRUSTED_ARGS)
BTF_KFUNCS_END(esa_kfunc_ids)

static const struct btf_kfunc_id_set esa_kfunc_set = {
	.owner = THIS_MODULE,
	.set = &esa_kfunc_ids,
};

static bool esa_has_btf(void)
{
#ifdef CONFIG_DEBUG_INFO_BTF_MODULES
	return THIS_MODULE->btf_data_size;
#else
	return false;
#endif
}

int esa_kfunc_init(void)
{
	/*
	 * Without module BTF the set registers, yet no program can call it:
	 * the data path would go on reading the maps while netlink changed
	 * the registry.  Refuse to load instead.
	 */
	if (!esa_has_btf()) {
		pr_err("no module BTF, so no kfuncs for XDP: build with vmlinux and resolve_btfids (kmod/build.sh)\n");
		return -ENOPKG;
	}
	return register_btf_kfunc_id_set(BPF_PROG_TYPE_XDP, &esa_kfunc_set);
}
