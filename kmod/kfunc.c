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
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bpf.h>
#include <linux/netdevice.h>
#include <net/xdp.h>
#include "compat.h"
#include "kfunc.h"
#include "registry.h"

static struct esa_net *esa_kf_net(const struct xdp_md *ctx)
{
	const struct xdp_buff *xdp = (const struct xdp_buff *)ctx;

	return esa_net_rcu(dev_net(xdp->rxq->dev));
}

/**
 * bpf_esa_admit - admit a DATA packet to its job and renew the job's lease
 * @ctx: the XDP context of the packet
 * @key: the packet's job, rank, priority and UDP source port: ESA_KF_KEY()
 * @saddr: its IPv4 source address
 * @now: bpf_ktime_get_coarse_ns()
 * @ji: filled with the job's generation, region and worker count
 *
 * Return: 0; ESA_C_EXPIRED if admitted as the job's first packet after its
 * lease ran out; or the ESA_C_DROP_* counter of the reason for a drop.
 */
__bpf_kfunc int bpf_esa_admit(struct xdp_md *ctx, u64 key, __be32 saddr,
			      u64 now, struct esa_kf_jinfo *ji)
{
	u32 rank = (u16)(key >> 16);
	__be16 sport = (__force __be16)(u16)(key >> 48);
	const struct esa_addr *r;
	struct esa_kjob *j;
	int ret;

	j = esa_job_rcu(esa_kf_net(ctx), (u16)key);
	if (!j)
		return ESA_C_DROP_JOB;
	if (rank >= j->nworkers)
		return ESA_C_DROP_RANK;
	if ((u8)(key >> 32) > READ_ONCE(j->max_prio))
		return ESA_C_DROP_PRIO;
	r = &j->rank[rank];
	if (r->ip != saddr || (r->port && r->port != sport))
		return ESA_C_DROP_SPOOF;
	ret = esa_job_activity(j, now, &ji->gen);
	ji->region_base = j->region_base;
	ji->region_size = j->region_size;
	ji->nworkers = j->nworkers;
	return ret;
}

/**
 * bpf_esa_owner_alive - does a generation of a job still own its slots?
 * @ctx: the XDP context of the packet
 * @job: job id
 * @gen: generation stamped in the slot
 * @now: bpf_ktime_get_coarse_ns()
 *
 * Return: 1 while the job is registered in generation @gen and within its
 * lease, else 0.
 */
__bpf_kfunc int bpf_esa_owner_alive(struct xdp_md *ctx, u32 job, u32 gen,
				    u64 now)
{
	struct esa_kjob *j = esa_job_rcu(esa_kf_net(ctx), job);

	return j && esa_job_alive(j, gen, now);
}

/**
 * bpf_esa_job - snapshot of a registered job
 * @ctx: the XDP context of the packet
 * @job: job id
 * @out: filled with the job's generation, region, worker count and PS
 *
 * Return: 1, or 0 when no job @job is registered.
 */
__bpf_kfunc int bpf_esa_job(struct xdp_md *ctx, u32 job,
			    struct esa_kf_job *out)
{
	struct esa_kjob *j = esa_job_rcu(esa_kf_net(ctx), job);

	if (!j)
		return 0;
	out->gen = READ_ONCE(j->gen);
	out->region_base = j->region_base;
	out->region_size = j->region_size;
	out->nworkers = j->nworkers;
	out->ps = j->ps;
	return 1;
}

BTF_KFUNCS_START(esa_kfunc_ids)
BTF_ID_FLAGS(func, bpf_esa_admit)
BTF_ID_FLAGS(func, bpf_esa_owner_alive)
BTF_ID_FLAGS(func, bpf_esa_job)
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
