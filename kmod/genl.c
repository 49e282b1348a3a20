// SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause)
/* Do not edit directly, auto-generated from: */
/*	kmod/esa.yaml */
/* YNL-GEN kernel source */

#include <net/netlink.h>
#include <net/genetlink.h>

#include "genl.h"

#include <uapi/linux/esa.h>

/* Common nested types */
const struct nla_policy esa_addr_nl_policy[ESA_ADDR_A_PORT + 1] = {
	[ESA_ADDR_A_IPV4] = { .type = NLA_U32, },
	[ESA_ADDR_A_PORT] = { .type = NLA_U16, },
};

const struct nla_policy esa_leaf_nl_policy[ESA_LEAF_A_PAD + 1] = {
	[ESA_LEAF_A_IPV4] = { .type = NLA_U32, },
	[ESA_LEAF_A_PORT] = { .type = NLA_U16, },
	[ESA_LEAF_A_RANKS] = { .type = NLA_U64, },
};

/* ESA_CMD_JOB_ADD - do */
const struct nla_policy esa_job_add_nl_policy[ESA_JOB_A_RANKS + 1] = {
	[ESA_JOB_A_ID] = { .type = NLA_U32, },
	[ESA_JOB_A_WORKERS] = NLA_POLICY_NESTED(esa_addr_nl_policy),
	[ESA_JOB_A_PS] = NLA_POLICY_NESTED(esa_addr_nl_policy),
	[ESA_JOB_A_MAX_PRIO] = { .type = NLA_U8, },
	[ESA_JOB_A_LEASE_MS] = { .type = NLA_U32, },
	[ESA_JOB_A_REGION_BASE] = { .type = NLA_U32, },
	[ESA_JOB_A_REGION_SIZE] = { .type = NLA_U32, },
	[ESA_JOB_A_UPSTREAM] = NLA_POLICY_NESTED(esa_addr_nl_policy),
	[ESA_JOB_A_LEAVES] = NLA_POLICY_NESTED(esa_leaf_nl_policy),
	[ESA_JOB_A_RANKS] = NLA_POLICY_RANGE(NLA_U8, 1, ESA_MAX_WORKERS),
};

/* ESA_CMD_JOB_DEL - do */
const struct nla_policy esa_job_del_nl_policy[ESA_JOB_A_ID + 1] = {
	[ESA_JOB_A_ID] = { .type = NLA_U32, },
};

/* ESA_CMD_JOB_GET - do */
const struct nla_policy esa_job_get_nl_policy[ESA_JOB_A_ID + 1] = {
	[ESA_JOB_A_ID] = { .type = NLA_U32, },
};

/* ESA_CMD_JOB_SET - do */
const struct nla_policy esa_job_set_nl_policy[ESA_JOB_A_RANKS + 1] = {
	[ESA_JOB_A_ID] = { .type = NLA_U32, },
	[ESA_JOB_A_WORKERS] = NLA_POLICY_NESTED(esa_addr_nl_policy),
	[ESA_JOB_A_PS] = NLA_POLICY_NESTED(esa_addr_nl_policy),
	[ESA_JOB_A_MAX_PRIO] = { .type = NLA_U8, },
	[ESA_JOB_A_LEASE_MS] = { .type = NLA_U32, },
	[ESA_JOB_A_REGION_BASE] = { .type = NLA_U32, },
	[ESA_JOB_A_REGION_SIZE] = { .type = NLA_U32, },
	[ESA_JOB_A_UPSTREAM] = NLA_POLICY_NESTED(esa_addr_nl_policy),
	[ESA_JOB_A_LEAVES] = NLA_POLICY_NESTED(esa_leaf_nl_policy),
	[ESA_JOB_A_RANKS] = NLA_POLICY_RANGE(NLA_U8, 1, ESA_MAX_WORKERS),
};

/* ESA_CMD_CTR_GET - do */
const struct nla_policy esa_ctr_get_nl_policy[ESA_JOB_A_ID + 1] = {
	[ESA_JOB_A_ID] = { .type = NLA_U32, },
};

/* Ops table for esa */
const struct genl_ops esa_nl_ops[5] = {
	{
		.cmd		= ESA_CMD_JOB_ADD,
		.doit		= esa_nl_job_add_doit,
		.policy		= esa_job_add_nl_policy,
		.maxattr	= ESA_JOB_A_RANKS,
		.flags		= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd		= ESA_CMD_JOB_DEL,
		.doit		= esa_nl_job_del_doit,
		.policy		= esa_job_del_nl_policy,
		.maxattr	= ESA_JOB_A_ID,
		.flags		= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd		= ESA_CMD_JOB_GET,
		.doit		= esa_nl_job_get_doit,
		.dumpit		= esa_nl_job_get_dumpit,
		.policy		= esa_job_get_nl_policy,
		.maxattr	= ESA_JOB_A_ID,
		.flags		= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd		= ESA_CMD_JOB_SET,
		.doit		= esa_nl_job_set_doit,
		.policy		= esa_job_set_nl_policy,
		.maxattr	= ESA_JOB_A_RANKS,
		.flags		= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd		= ESA_CMD_CTR_GET,
		.doit		= esa_nl_ctr_get_doit,
		.policy		= esa_ctr_get_nl_policy,
		.maxattr	= ESA_JOB_A_ID,
		.flags		= GENL_UNS_ADMIN_PERM,
	},
};

static const struct genl_multicast_group esa_nl_mcgrps[] = {
	[ESA_NLGRP_EVENTS] = { "events", },
};
