// SPDX-License-Identifier: GPL-2.0
/*
 * netlink_jobs.c - the requests of the "esa" family that change jobs: a
 * job read from its attributes (esa_nl_parse_job()), then added, deleted
 * or its priority set.  The family itself, the replies that report jobs
 * and counters, and the events are netlink.c's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <net/genetlink.h>
#include "compat.h"
#include "genl.h"
#include "netlink.h"

/* The job id of a request: required, below the module's max_jobs. */
int esa_nl_job_id(struct genl_info *info, u32 *id)
{
	struct nlattr *a = info->attrs[ESA_JOB_A_ID];

	if (GENL_REQ_ATTR_CHECK(info, ESA_JOB_A_ID))
		return -EINVAL;
	*id = nla_get_u32(a);
	if (*id >= esa_max_jobs) {
		NL_SET_ERR_MSG_ATTR(info->extack, a,
				    "job id not below the module's max_jobs");
		return -ERANGE;
	}
	return 0;
}

/* Whose address a nest is. */
enum esa_addr_of {
	ESA_ADDR_WORKER,
	ESA_ADDR_PS,
	ESA_ADDR_UP,
};

/*
 * An address nest: of the PS or a leaf's upstream, address and port
 * required; of a worker, the address, or nothing at all for a rank that is
 * not a worker of this box (two levels).
 */
static int esa_nl_parse_addr(const struct nlattr *nest, struct esa_addr *a,
			     enum esa_addr_of of,
			     struct netlink_ext_ack *extack)
{
	bool service = of != ESA_ADDR_WORKER;
	struct nlattr *tb[ESA_ADDR_A_MAX + 1];
	int err;

	err = nla_parse_nested(tb, ESA_ADDR_A_MAX, nest, esa_addr_nl_policy,
			       extack);
	if (err)
		return err;
	memset(a, 0, sizeof(*a));
	if (!service && !tb[ESA_ADDR_A_IPV4] && !tb[ESA_ADDR_A_PORT])
		return 0;
	if (NL_REQ_ATTR_CHECK(extack, nest, tb, ESA_ADDR_A_IPV4))
		return -EINVAL;
	if (service && NL_REQ_ATTR_CHECK(extack, nest, tb, ESA_ADDR_A_PORT))
		return -EINVAL;
	a->ip = nla_get_in_addr(tb[ESA_ADDR_A_IPV4]);
	a->port = tb[ESA_ADDR_A_PORT] ? nla_get_be16(tb[ESA_ADDR_A_PORT]) : 0;
	if (!a->ip) {
		NL_SET_ERR_MSG_ATTR(extack, tb[ESA_ADDR_A_IPV4],
				    "address 0.0.0.0 is not allowed");
		return -EINVAL;
	}
	if (service && !a->port) {
		if (of == ESA_ADDR_PS)
			NL_SET_ERR_MSG_ATTR(extack, tb[ESA_ADDR_A_PORT],
					    "the parameter server needs a port");
		else
			NL_SET_ERR_MSG_ATTR(extack, tb[ESA_ADDR_A_PORT],
					    "the upstream needs a port");
		return -EINVAL;
	}
	return 0;
}

static bool esa_addr_eq(const struct esa_addr *a, const struct esa_addr *b)
{
	return a->ip == b->ip && a->port == b->port;
}

/* Does a member of cfg other than rank skip have the address a? */
static bool esa_addr_taken(const struct esa_job_cfg *cfg,
			   const struct esa_addr *a, int skip)
{
	int r;

	for (r = 0; r < ESA_MAX_WORKERS; r++)
		if (r != skip && cfg->rank[r].ip && esa_addr_eq(&cfg->rank[r], a))
			return true;
	return false;
}

/*
 * The ESA_JOB_A_WORKERS attributes, one per rank, in rank order; *n is set
 * to their number.  An empty one is a rank without a worker here.
 */
static int esa_nl_parse_workers(struct genl_info *info,
				struct esa_job_cfg *cfg, int *n)
{
	struct netlink_ext_ack *extack = info->extack;
	const struct nlattr *e;
	int rem, err;

	*n = 0;
	nla_for_each_attr(e, genlmsg_data(info->genlhdr),
			  genlmsg_len(info->genlhdr), rem) {
		if (nla_type(e) != ESA_JOB_A_WORKERS)
			continue;
		if (*n == ESA_MAX_WORKERS) {
			NL_SET_ERR_MSG_ATTR(extack, e, "more than 64 workers");
			return -ERANGE;
		}
		err = esa_nl_parse_addr(e, &cfg->rank[*n], ESA_ADDR_WORKER,
					extack);
		if (err)
			return err;
		if (cfg->rank[*n].ip) {
			if (esa_addr_taken(cfg, &cfg->rank[*n], *n)) {
				NL_SET_ERR_MSG_ATTR(extack, e,
						    "two ranks with one address and port");
				return -EINVAL;
			}
			cfg->mask |= BIT_ULL(*n);
		}
		(*n)++;
	}
	return 0;
}

/* One ESA_JOB_A_LEAVES: a leaf box, the member at its lowest rank. */
static int esa_nl_parse_leaf(const struct nlattr *nest,
			     struct esa_job_cfg *cfg,
			     struct netlink_ext_ack *extack)
{
	struct nlattr *tb[ESA_LEAF_A_MAX + 1];
	struct esa_addr a = {};
	int err, r;
	u64 set;

	err = nla_parse_nested(tb, ESA_LEAF_A_MAX, nest, esa_leaf_nl_policy,
			       extack);
	if (err)
		return err;
	if (NL_REQ_ATTR_CHECK(extack, nest, tb, ESA_LEAF_A_IPV4) ||
	    NL_REQ_ATTR_CHECK(extack, nest, tb, ESA_LEAF_A_RANKS))
		return -EINVAL;
	a.ip = nla_get_in_addr(tb[ESA_LEAF_A_IPV4]);
	a.port = tb[ESA_LEAF_A_PORT] ? nla_get_be16(tb[ESA_LEAF_A_PORT]) : 0;
	set = nla_get_u64(tb[ESA_LEAF_A_RANKS]);
	if (!a.ip) {
		NL_SET_ERR_MSG_ATTR(extack, tb[ESA_LEAF_A_IPV4],
				    "address 0.0.0.0 is not allowed");
		return -EINVAL;
	}
	if (!set) {
		NL_SET_ERR_MSG_ATTR(extack, tb[ESA_LEAF_A_RANKS],
				    "a leaf needs ranks");
		return -EINVAL;
	}
	if (set & cfg->mask) {
		NL_SET_ERR_MSG_ATTR(extack, tb[ESA_LEAF_A_RANKS],
				    "ranks under two members");
		return -EINVAL;
	}
	if (esa_addr_taken(cfg, &a, -1)) {
		NL_SET_ERR_MSG_ATTR(extack, nest,
				    "two members with one address and port");
		return -EINVAL;
	}
	r = __ffs64(set);
	cfg->rank[r] = a;
	cfg->set[r] = set;
	cfg->mask |= set;
	return 0;
}

static int esa_nl_parse_leaves(struct genl_info *info,
			       struct esa_job_cfg *cfg)
{
	const struct nlattr *e;
	int rem, err;

	nla_for_each_attr(e, genlmsg_data(info->genlhdr),
			  genlmsg_len(info->genlhdr), rem) {
		if (nla_type(e) != ESA_JOB_A_LEAVES)
			continue;
		err = esa_nl_parse_leaf(e, cfg, info->extack);
		if (err)
			return err;
	}
	return 0;
}

/*
 * The job's members here: workers and (at a spine) leaves; its ranks
 * (ESA_JOB_A_RANKS, or as many as the members name); and, if some ranks
 * are not under this box, the upstream they are summed at.
 */
static int esa_nl_parse_members(struct genl_info *info,
				struct esa_job_cfg *cfg)
{
	struct netlink_ext_ack *extack = info->extack;
	struct nlattr **tb = info->attrs;
	int err, n;
	u32 top;

	if (!tb[ESA_JOB_A_LEAVES] &&
	    GENL_REQ_ATTR_CHECK(info, ESA_JOB_A_WORKERS))
		return -EINVAL;
	err = esa_nl_parse_workers(info, cfg, &n);
	if (err)
		return err;
	err = esa_nl_parse_leaves(info, cfg);
	if (err)
		return err;
	if (!cfg->mask) {
		NL_SET_ERR_MSG(extack, "a job needs a worker or a leaf here");
		return -EINVAL;
	}
	top = max_t(u32, n, fls64(cfg->mask));
	cfg->nworkers = top;
	if (tb[ESA_JOB_A_RANKS]) {
		cfg->nworkers = nla_get_u8(tb[ESA_JOB_A_RANKS]);
		if (cfg->nworkers < top) {
			NL_SET_ERR_MSG_ATTR(extack, tb[ESA_JOB_A_RANKS],
					    "fewer ranks than the workers and leaves name");
			return -ERANGE;
		}
	}
	if (tb[ESA_JOB_A_UPSTREAM]) {
		err = esa_nl_parse_addr(tb[ESA_JOB_A_UPSTREAM], &cfg->up,
					ESA_ADDR_UP, extack);
		if (err)
			return err;
	} else if (cfg->mask != GENMASK_ULL(cfg->nworkers - 1, 0)) {
		NL_SET_ERR_MSG(extack,
			       "ranks not under this box need an upstream (ESA_JOB_A_UPSTREAM)");
		return -EINVAL;
	}
	return 0;
}

static int esa_nl_parse_lease(struct genl_info *info, u32 *lease_ms)
{
	struct nlattr *a = info->attrs[ESA_JOB_A_LEASE_MS];

	*lease_ms = a ? nla_get_u32(a) : 0;
	if (*lease_ms && *lease_ms < ESA_LEASE_MS_MIN) {
		NL_SET_ERR_MSG_ATTR(info->extack, a,
				    "lease shorter than 100 ms (0: never)");
		return -ERANGE;
	}
	if (*lease_ms > ESA_LEASE_MS_MAX) {
		NL_SET_ERR_MSG_ATTR(info->extack, a,
				    "lease longer than one hour (3600000 ms)");
		return -ERANGE;
	}
	return 0;
}

static int esa_nl_parse_job(struct genl_info *info, struct esa_job_cfg *cfg)
{
	struct netlink_ext_ack *extack = info->extack;
	struct nlattr **tb = info->attrs;
	u64 end;
	int err;

	err = esa_nl_job_id(info, &cfg->id);
	if (err)
		return err;
	err = esa_nl_parse_members(info, cfg);
	if (err)
		return err;
	if (GENL_REQ_ATTR_CHECK(info, ESA_JOB_A_PS))
		return -EINVAL;
	err = esa_nl_parse_addr(tb[ESA_JOB_A_PS], &cfg->ps, ESA_ADDR_PS,
				extack);
	if (err)
		return err;
	err = esa_nl_parse_lease(info, &cfg->lease_ms);
	if (err)
		return err;
	if (tb[ESA_JOB_A_MAX_PRIO])
		cfg->max_prio = nla_get_u8(tb[ESA_JOB_A_MAX_PRIO]);
	if (tb[ESA_JOB_A_REGION_BASE])
		cfg->region_base = nla_get_u32(tb[ESA_JOB_A_REGION_BASE]);
	if (tb[ESA_JOB_A_REGION_SIZE])
		cfg->region_size = nla_get_u32(tb[ESA_JOB_A_REGION_SIZE]);
	end = (u64)cfg->region_base + cfg->region_size;
	if (end > (u64)U32_MAX + 1) {
		NL_SET_ERR_MSG_ATTR(extack, tb[ESA_JOB_A_REGION_SIZE],
				    "region ends past slot 2^32");
		return -ERANGE;
	}
	return 0;
}

int esa_nl_job_add_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct esa_net *en = esa_net(genl_info_net(info));
	struct esa_job_cfg *cfg;
	int err;

	cfg = kzalloc(sizeof(*cfg), GFP_KERNEL);
	if (!cfg)
		return -ENOMEM;
	err = esa_nl_parse_job(info, cfg);
	if (err)
		goto out;
	mutex_lock(&en->lock);
	err = esa_job_add(en, cfg);
	mutex_unlock(&en->lock);
	if (err == -EEXIST)
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[ESA_JOB_A_ID],
				    "job id in use");
	else if (err == -ENOMEM)
		NL_SET_ERR_MSG(info->extack,
			       "out of memory for the job (the memory cgroup of the caller is charged)");
out:
	kfree(cfg);
	return err;
}

int esa_nl_job_del_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct esa_net *en = esa_net(genl_info_net(info));
	u32 id;
	int err;

	err = esa_nl_job_id(info, &id);
	if (err)
		return err;
	mutex_lock(&en->lock);
	err = esa_job_del(en, id);
	mutex_unlock(&en->lock);
	if (err == -ENOENT)
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[ESA_JOB_A_ID],
				    "no such job");
	return err;
}

int esa_nl_job_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct esa_net *en = esa_net(genl_info_net(info));
	struct esa_kjob *j;
	int err, i;
	u32 id;

	err = esa_nl_job_id(info, &id);
	if (err)
		return err;
	if (GENL_REQ_ATTR_CHECK(info, ESA_JOB_A_MAX_PRIO))
		return -EINVAL;
	/* info->attrs has room for the attributes of this op's policy only. */
	for (i = 1; i < ARRAY_SIZE(esa_job_set_nl_policy); i++) {
		if (info->attrs[i] && i != ESA_JOB_A_ID &&
		    i != ESA_JOB_A_MAX_PRIO) {
			NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[i],
					    "only the maximum priority can change: delete and add the job");
			return -EOPNOTSUPP;
		}
	}
	mutex_lock(&en->lock);
	j = esa_job_locked(en, id);
	if (j)
		esa_job_set_prio(en, j,
				 nla_get_u8(info->attrs[ESA_JOB_A_MAX_PRIO]));
	mutex_unlock(&en->lock);
	if (!j) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[ESA_JOB_A_ID],
				    "no such job");
		return -ENOENT;
	}
	return 0;
}
