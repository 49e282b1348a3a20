// SPDX-License-Identifier: GPL-2.0
/*
 * netlink.c - the generic netlink family "esa": its registration, the
 * replies that report jobs and counters, and the events.  The requests
 * that change jobs are netlink_jobs.c's.  The API is documented attribute
 * by attribute in include/uapi/linux/esa.h and specified in kmod/esa.yaml,
 * from which the attribute policies and the operations table (genl.c) are
 * generated.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <net/genetlink.h>
#include <net/sock.h>
#include "compat.h"
#include "genl.h"
#include "netlink.h"

static struct genl_family esa_family;

/* Events go out only while the family is registered (see esa_genl_exit). */
static bool esa_genl_live;

static int esa_nl_put_addr(struct sk_buff *skb, int type,
			   const struct esa_addr *a)
{
	struct nlattr *nest = nla_nest_start(skb, type);

	if (!nest || nla_put_in_addr(skb, ESA_ADDR_A_IPV4, a->ip) ||
	    nla_put_be16(skb, ESA_ADDR_A_PORT, a->port))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

/* Rank r's ESA_JOB_A_WORKERS: empty where no worker of this box is. */
static int esa_nl_put_worker(struct sk_buff *skb, const struct esa_kjob *j,
			     int r)
{
	struct nlattr *nest;

	if (j->rank[r].ip && !j->set[r])
		return esa_nl_put_addr(skb, ESA_JOB_A_WORKERS, &j->rank[r]);
	nest = nla_nest_start(skb, ESA_JOB_A_WORKERS);
	if (!nest)
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

static int esa_nl_put_leaf(struct sk_buff *skb, const struct esa_kjob *j,
			   int r)
{
	struct nlattr *nest = nla_nest_start(skb, ESA_JOB_A_LEAVES);

	if (!nest || nla_put_in_addr(skb, ESA_LEAF_A_IPV4, j->rank[r].ip) ||
	    nla_put_be16(skb, ESA_LEAF_A_PORT, j->rank[r].port) ||
	    nla_put_u64_64bit(skb, ESA_LEAF_A_RANKS, j->set[r], ESA_LEAF_A_PAD))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

/* The members: workers by rank, then leaves, mask, ranks, upstream. */
static int esa_nl_put_members(struct sk_buff *skb, const struct esa_kjob *j)
{
	int r;

	for (r = 0; r < j->nworkers; r++)
		if (esa_nl_put_worker(skb, j, r))
			return -EMSGSIZE;
	for (r = 0; r < j->nworkers; r++)
		if (j->set[r] && esa_nl_put_leaf(skb, j, r))
			return -EMSGSIZE;
	if (nla_put_u64_64bit(skb, ESA_JOB_A_MASK, j->mask, ESA_JOB_A_PAD) ||
	    nla_put_u8(skb, ESA_JOB_A_RANKS, j->nworkers) ||
	    (j->up.ip && esa_nl_put_addr(skb, ESA_JOB_A_UPSTREAM, &j->up)))
		return -EMSGSIZE;
	return 0;
}

/*
 * Job j's attributes.  Its generation and whether it is expired change
 * together, under its lock (an expiry, a packet after one): the caller
 * holds the lock, or j is not published yet.
 */
static int esa_nl_put_job(struct sk_buff *skb, const struct esa_kjob *j)
{
	s64 idle = ktime_get_coarse_ns() - READ_ONCE(j->last_active_ns);

	/* A packet's stamp may be a little ahead of this clock read. */
	idle = idle > 0 ? div_u64(idle, NSEC_PER_MSEC) : 0;
	if (nla_put_u32(skb, ESA_JOB_A_ID, j->id) ||
	    nla_put_u32(skb, ESA_JOB_A_GEN, READ_ONCE(j->gen)) ||
	    nla_put_u32(skb, ESA_JOB_A_REG, j->reg) ||
	    nla_put_u8(skb, ESA_JOB_A_MAX_PRIO, READ_ONCE(j->max_prio)) ||
	    nla_put_u32(skb, ESA_JOB_A_LEASE_MS, j->lease_ms) ||
	    nla_put_u32(skb, ESA_JOB_A_REGION_BASE, j->region_base) ||
	    nla_put_u32(skb, ESA_JOB_A_REGION_SIZE, j->region_size) ||
	    nla_put_u32(skb, ESA_JOB_A_IDLE_MS, min_t(s64, idle, U32_MAX)) ||
	    (READ_ONCE(j->expired) && nla_put_flag(skb, ESA_JOB_A_EXPIRED)) ||
	    esa_nl_put_addr(skb, ESA_JOB_A_PS, &j->ps))
		return -EMSGSIZE;
	return esa_nl_put_members(skb, j);
}

/*
 * Room for one job message: fixed attributes, one nest per rank, one per
 * leaf and the upstream.
 */
static size_t esa_nl_job_size(const struct esa_kjob *j)
{
	size_t addr = nla_total_size(nla_total_size(4) + nla_total_size(2));
	size_t leaf = nla_total_size(nla_total_size(4) + nla_total_size(2) +
				     nla_total_size_64bit(8));
	size_t n = nla_total_size(4) * 8 + nla_total_size(1) * 2 +
		   nla_total_size(0) + nla_total_size_64bit(8) +
		   addr * (2 + j->nworkers);
	int r;

	for (r = 0; r < j->nworkers; r++)
		if (j->set[r])
			n += leaf;
	return n;
}

/*
 * One job message; in a dump (cb), flagged if the registry changed.  With
 * lock, under the job's lock (a get or a dump; an event's sender holds it
 * already, or the job is not published yet).
 */
static int esa_nl_fill_job(struct sk_buff *skb, struct esa_kjob *j,
			   u32 portid, u32 seq, int flags, u8 cmd,
			   struct netlink_callback *cb, bool lock)
{
	void *hdr = genlmsg_put(skb, portid, seq, &esa_family, flags, cmd);
	int err;

	if (!hdr)
		return -EMSGSIZE;
	if (cb)
		genl_dump_check_consistent(cb, hdr);
	if (lock)
		spin_lock_bh(&j->lock);
	err = esa_nl_put_job(skb, j);
	if (lock)
		spin_unlock_bh(&j->lock);
	if (err) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

int esa_nl_job_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct esa_net *en = esa_net(genl_info_net(info));
	struct sk_buff *msg = NULL;
	struct esa_kjob *j;
	int err;
	u32 id;

	err = esa_nl_job_id(info, &id);
	if (err)
		return err;
	mutex_lock(&en->lock);
	j = esa_job_locked(en, id);
	if (!j) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[ESA_JOB_A_ID],
				    "no such job");
		err = -ENOENT;
		goto out;
	}
	msg = genlmsg_new(esa_nl_job_size(j), GFP_KERNEL);
	err = msg ? esa_nl_fill_job(msg, j, info->snd_portid, info->snd_seq,
				    0, ESA_CMD_JOB_GET, NULL, true) : -ENOMEM;
out:
	mutex_unlock(&en->lock);
	if (err) {
		nlmsg_free(msg);
		return err;
	}
	return genlmsg_reply(msg, info);
}

/*
 * One part of a dump, from job id cb->args[0] on.  The registry's change
 * sequence goes into cb->seq, so that the parts after an add, delete or
 * set carry NLM_F_DUMP_INTR (genl_dump_check_consistent()).
 */
int esa_nl_job_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct esa_net *en = esa_net(sock_net(skb->sk));
	struct esa_kjob *j;
	int err = 0;
	u32 id;

	if (!cb->args[1]) {
		/* The id of a GET is in the policy, but a dump takes none. */
		if (nlmsg_attrlen(cb->nlh, GENL_HDRLEN)) {
			NL_SET_ERR_MSG(cb->extack, "a dump takes no attributes");
			return -EINVAL;
		}
		cb->args[1] = 1;
	}
	mutex_lock(&en->lock);
	cb->seq = atomic_read(&en->dump_seq);
	for (id = cb->args[0]; id < esa_max_jobs; id++) {
		j = esa_job_locked(en, id);
		if (!j)
			continue;
		err = esa_nl_fill_job(skb, j, NETLINK_CB(cb->skb).portid,
				      cb->nlh->nlmsg_seq, NLM_F_MULTI,
				      ESA_CMD_JOB_GET, cb, true);
		if (err)
			break;
	}
	mutex_unlock(&en->lock);
	cb->args[0] = id;
	/* A full skb ends this part; the next call resumes at id. */
	return err && !skb->len ? err : skb->len;
}

static int esa_nl_put_ctrs(struct sk_buff *skb, int type,
			   const atomic64_t *c, int n)
{
	struct nlattr *nest = nla_nest_start(skb, type);
	int i;

	if (!nest)
		return -EMSGSIZE;
	for (i = 0; i < n; i++)
		if (nla_put_u64_64bit(skb, ESA_CTR_A_ADDS + i,
				      atomic64_read(&c[i]), ESA_CTR_A_PAD))
			return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

/* Counters of an id: those of its registry, zero before there is one. */
static int esa_nl_put_id_ctrs(struct sk_buff *skb, struct esa_net *en,
			      u32 id)
{
	static const atomic64_t zero[ESA_CTR_ID_NUM];
	struct esa_reg *reg;
	int err;

	mutex_lock(&en->lock);
	reg = esa_reg_locked(en);
	err = nla_put_u32(skb, ESA_JOB_A_ID, id) ?:
	      esa_nl_put_ctrs(skb, ESA_JOB_A_COUNTERS,
			      reg ? reg->ids[id].ctrs : zero, ESA_CTR_ID_NUM);
	mutex_unlock(&en->lock);
	return err;
}

int esa_nl_ctr_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct esa_net *en = esa_net(genl_info_net(info));
	bool one = info->attrs[ESA_JOB_A_ID];
	struct sk_buff *msg;
	u32 id = 0;
	void *hdr;
	int err;

	if (one) {
		err = esa_nl_job_id(info, &id);
		if (err)
			return err;
	}
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &esa_family, 0, ESA_CMD_CTR_GET);
	if (!hdr ||
	    esa_nl_put_ctrs(msg, ESA_JOB_A_TOTALS, en->totals, ESA_CTR_NUM) ||
	    (one && esa_nl_put_id_ctrs(msg, en, id))) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
}

/*
 * Multicast msg to en's namespace, or drop it if nobody listens.  A
 * listener that misses an event for want of memory is told (ENOBUFS).
 * Atomic: inside the RCU section that esa_genl_exit() waits for, the
 * broadcast must not sleep (with GFP_KERNEL it yields to congested
 * listeners).
 */
static void esa_nl_multicast(struct esa_net *en, struct sk_buff *msg)
{
	rcu_read_lock();
	if (!READ_ONCE(esa_genl_live) ||
	    !genl_has_listeners(&esa_family, en->net, 0))
		nlmsg_free(msg);
	else if (!msg)
		genl_set_err(&esa_family, en->net, 0, 0, -ENOBUFS);
	else
		genlmsg_multicast_netns(&esa_family, en->net, msg, 0, 0,
					GFP_ATOMIC);
	rcu_read_unlock();
}

void esa_notify_job(struct esa_net *en, struct esa_kjob *j, u8 cmd,
		    gfp_t gfp)
{
	struct sk_buff *msg = genlmsg_new(esa_nl_job_size(j), gfp);

	if (msg && esa_nl_fill_job(msg, j, 0, 0, 0, cmd, NULL, false)) {
		nlmsg_free(msg);
		msg = NULL;
	}
	esa_nl_multicast(en, msg);
}

/* From any context, under the job's lock: atomic allocations. */
void esa_notify(struct esa_net *en, u8 cmd, u32 id, u32 gen)
{
	struct sk_buff *msg;
	void *hdr;

	msg = genlmsg_new(nla_total_size(4) * 2, GFP_ATOMIC);
	hdr = msg ? genlmsg_put(msg, 0, 0, &esa_family, 0, cmd) : NULL;
	if (!hdr || nla_put_u32(msg, ESA_JOB_A_ID, id) ||
	    nla_put_u32(msg, ESA_JOB_A_GEN, gen)) {
		nlmsg_free(msg);
		msg = NULL;
	} else {
		genlmsg_end(msg, hdr);
	}
	esa_nl_multicast(en, msg);
}

static const struct genl_multicast_group esa_mcgrps[] = {
	[ESA_NLGRP_EVENTS] = {
		.name = ESA_GENL_MCGRP_EVENTS,
		.flags = ESA_MCAST_FLAGS,
	},
};

/* Operations and policies: esa_nl_ops, generated from kmod/esa.yaml. */
static struct genl_family esa_family __ro_after_init = {
	.name = ESA_GENL_NAME,
	.version = ESA_GENL_VERSION,
	.maxattr = ESA_JOB_A_MAX,
	.netnsok = true,
	.module = THIS_MODULE,
	.ops = esa_nl_ops,
	.n_ops = ARRAY_SIZE(esa_nl_ops),
	.mcgrps = esa_mcgrps,
	.n_mcgrps = ARRAY_SIZE(esa_mcgrps),
};

int esa_genl_init(void)
{
	int err = genl_register_family(&esa_family);

	if (!err)
		WRITE_ONCE(esa_genl_live, true);
	return err;
}

/*
 * Lease works may still send events until the registry goes (after this):
 * stop them from using the family's multicast group once it is released.
 */
void esa_genl_exit(void)
{
	WRITE_ONCE(esa_genl_live, false);
	synchronize_rcu();
	genl_unregister_family(&esa_family);
}
