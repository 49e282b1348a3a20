// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_nl: jobs (esa_nl.h): a registration as esa.ko's attributes, and back
 * from a GET answer, a dump part or an event (esa_nl_read_job()).
 */
#include <errno.h>

#include "esa_nl_int.h"

/* A spine's member at rank r: a leaf, the ranks set under it. */
static void msg_leaf(struct esa_msg *m, const struct esa_addr *a, __u64 set)
{
	struct nlattr *nest = msg_nest(m, ESA_JOB_A_LEAVES);

	msg_put(m, ESA_LEAF_A_IPV4, &a->ip, sizeof(a->ip));
	msg_put(m, ESA_LEAF_A_PORT, &a->port, sizeof(a->port));
	msg_put(m, ESA_LEAF_A_RANKS, &set, sizeof(set));
	msg_nest_end(m, nest);
}

/*
 * The job's members: one ESA_JOB_A_WORKERS per rank, in rank order, empty
 * where rank r has no worker here (two levels: under another leaf, or the
 * lowest rank of a leaf, which goes in ESA_JOB_A_LEAVES); the job's ranks,
 * and a leaf's upstream.
 */
static void msg_members(struct esa_msg *m, const struct esa_job *j)
{
	__u8 n = j->nworkers;

	for (int r = 0; r < j->nworkers; r++) {
		if (j->rank[r].ip && !j->set[r])
			msg_addr(m, ESA_JOB_A_WORKERS, &j->rank[r]);
		else
			msg_nest_end(m, msg_nest(m, ESA_JOB_A_WORKERS));
	}
	for (int r = 0; r < j->nworkers; r++)
		if (j->rank[r].ip && j->set[r])
			msg_leaf(m, &j->rank[r], j->set[r]);
	if (n)
		msg_put(m, ESA_JOB_A_RANKS, &n, 1);
	if (j->up.ip)
		msg_addr(m, ESA_JOB_A_UPSTREAM, &j->up);
}

int esa_nl_job_add(struct esa_nl *nl, __u32 id, const struct esa_job *j)
{
	struct esa_msg m;

	if (j->nworkers > ESA_MAX_WORKERS)
		return -ERANGE;
	msg_init(nl, &m, nl->family, 0, ESA_CMD_JOB_ADD);
	msg_u32(&m, ESA_JOB_A_ID, id);
	msg_members(&m, j);
	msg_addr(&m, ESA_JOB_A_PS, &j->ps);
	msg_put(&m, ESA_JOB_A_MAX_PRIO, &j->max_prio, 1);
	msg_u32(&m, ESA_JOB_A_LEASE_MS, j->lease_ms);
	msg_u32(&m, ESA_JOB_A_REGION_BASE, j->region_base);
	msg_u32(&m, ESA_JOB_A_REGION_SIZE, j->region_size);
	return esa_nl_do(nl, &m, NULL, NULL);
}

int esa_nl_job_del(struct esa_nl *nl, __u32 id)
{
	struct esa_msg m;

	msg_init(nl, &m, nl->family, 0, ESA_CMD_JOB_DEL);
	msg_u32(&m, ESA_JOB_A_ID, id);
	return esa_nl_do(nl, &m, NULL, NULL);
}

int esa_nl_job_set_prio(struct esa_nl *nl, __u32 id, __u8 max_prio)
{
	struct esa_msg m;

	msg_init(nl, &m, nl->family, 0, ESA_CMD_JOB_SET);
	msg_u32(&m, ESA_JOB_A_ID, id);
	msg_put(&m, ESA_JOB_A_MAX_PRIO, &max_prio, 1);
	return esa_nl_do(nl, &m, NULL, NULL);
}

static void parse_addr(const struct nlattr *nest, struct esa_addr *a)
{
	const struct nlattr *tb[ESA_ADDR_A_MAX + 1];

	parse_attrs(attr_data(nest), attr_len(nest), tb, ESA_ADDR_A_MAX);
	memset(a, 0, sizeof(*a));
	a->ip = attr_u32(tb[ESA_ADDR_A_IPV4]);
	a->port = attr_u16(tb[ESA_ADDR_A_PORT]);
}

/* A leaf (ESA_JOB_A_LEAVES) into its lowest rank's member and set. */
static void parse_leaf(const struct nlattr *nest, struct esa_job *j)
{
	const struct nlattr *tb[ESA_LEAF_A_MAX + 1];
	__u64 set;
	int r;

	parse_attrs(attr_data(nest), attr_len(nest), tb, ESA_LEAF_A_MAX);
	set = attr_u64(tb[ESA_LEAF_A_RANKS]);
	if (!set)
		return;
	r = __builtin_ctzll(set);
	memset(&j->rank[r], 0, sizeof(j->rank[r]));
	j->rank[r].ip = attr_u32(tb[ESA_LEAF_A_IPV4]);
	j->rank[r].port = attr_u16(tb[ESA_LEAF_A_PORT]);
	j->set[r] = set;
}

/* A job message (GET reply, dump part, ADDED or CHANGED event) into j and
 * info; returns the job's id.  Workers come as one ESA_JOB_A_WORKERS
 * attribute per rank, in rank order (empty: no worker here), leaves as
 * ESA_JOB_A_LEAVES.
 */
__u32 esa_nl_read_job(const struct nlmsghdr *h, struct esa_job *j,
		      struct esa_nl_job_info *info)
{
	const struct nlattr *tb[ESA_JOB_A_MAX + 1], *a;
	int off = NLMSG_HDRLEN + GENL_HDRLEN;
	int rem = h->nlmsg_len - off;

	parse_attrs((const char *)h + off, rem, tb, ESA_JOB_A_MAX);
	memset(j, 0, sizeof(*j));
	j->state = ESA_JOB_ACTIVE;
	j->life = ESA_LIFE(attr_u32(tb[ESA_JOB_A_GEN]), 0);
	j->reg = attr_u32(tb[ESA_JOB_A_REG]);	/* 0: a module without it */
	j->max_prio = attr_u8(tb[ESA_JOB_A_MAX_PRIO]);
	j->lease_ms = attr_u32(tb[ESA_JOB_A_LEASE_MS]);
	j->region_base = attr_u32(tb[ESA_JOB_A_REGION_BASE]);
	j->region_size = attr_u32(tb[ESA_JOB_A_REGION_SIZE]);
	if (tb[ESA_JOB_A_PS])
		parse_addr(tb[ESA_JOB_A_PS], &j->ps);
	if (tb[ESA_JOB_A_UPSTREAM])
		parse_addr(tb[ESA_JOB_A_UPSTREAM], &j->up);
	for (a = (const void *)((const char *)h + off);
	     rem >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= rem;
	     rem -= NLA_ALIGN(a->nla_len),
	     a = (const void *)((const char *)a + NLA_ALIGN(a->nla_len))) {
		int type = a->nla_type & NLA_TYPE_MASK;

		if (type == ESA_JOB_A_WORKERS && j->nworkers < ESA_MAX_WORKERS)
			parse_addr(a, &j->rank[j->nworkers++]);
		else if (type == ESA_JOB_A_LEAVES)
			parse_leaf(a, j);
	}
	if (tb[ESA_JOB_A_RANKS])
		j->nworkers = attr_u8(tb[ESA_JOB_A_RANKS]);
	j->mask = attr_u64(tb[ESA_JOB_A_MASK]);
	if (info) {
		info->idle_ms = attr_u32(tb[ESA_JOB_A_IDLE_MS]);
		info->expired = !!tb[ESA_JOB_A_EXPIRED];
		info->reg = attr_u32(tb[ESA_JOB_A_REG]);
	}
	return attr_u32(tb[ESA_JOB_A_ID]);
}

struct esa_get_arg {
	struct esa_job *j;
	struct esa_nl_job_info *info;
};

static int esa_nl_get_cb(struct esa_nl *nl, const struct nlmsghdr *h,
			 void *arg)
{
	struct esa_get_arg *a = arg;

	if (h->nlmsg_type == nl->family)
		esa_nl_read_job(h, a->j, a->info);
	return 0;
}

int esa_nl_job_get(struct esa_nl *nl, __u32 id, struct esa_job *j,
		   struct esa_nl_job_info *info)
{
	struct esa_get_arg a = { .j = j, .info = info };
	struct esa_msg m;

	msg_init(nl, &m, nl->family, 0, ESA_CMD_JOB_GET);
	msg_u32(&m, ESA_JOB_A_ID, id);
	return esa_nl_do(nl, &m, esa_nl_get_cb, &a);
}

struct esa_dump_arg {
	esa_nl_job_cb cb;
	void *arg;
};

static int esa_nl_dump_cb(struct esa_nl *nl, const struct nlmsghdr *h,
			  void *arg)
{
	struct esa_dump_arg *a = arg;
	struct esa_nl_job_info info;
	struct esa_job j;
	__u32 id;

	if (h->nlmsg_type != nl->family)
		return 0;
	id = esa_nl_read_job(h, &j, &info);
	return a->cb(id, &j, &info, a->arg);
}

int esa_nl_job_dump(struct esa_nl *nl, esa_nl_job_cb cb, void *arg)
{
	struct esa_dump_arg a = { .cb = cb, .arg = arg };
	struct esa_msg m;

	msg_init(nl, &m, nl->family, NLM_F_DUMP, ESA_CMD_JOB_GET);
	return esa_nl_do(nl, &m, esa_nl_dump_cb, &a);
}
