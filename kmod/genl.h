/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause) */
/* Do not edit directly, auto-generated from: */
/*	kmod/esa.yaml */
/* YNL-GEN kernel header */

#ifndef _LINUX_ESA_GEN_H
#define _LINUX_ESA_GEN_H

#include <net/netlink.h>
#include <net/genetlink.h>

#include <uapi/linux/esa.h>

/* Common nested types */
extern const struct nla_policy esa_addr_nl_policy[ESA_ADDR_A_PORT + 1];
extern const struct nla_policy esa_leaf_nl_policy[ESA_LEAF_A_PAD + 1];

extern const struct nla_policy esa_job_add_nl_policy[ESA_JOB_A_RANKS + 1];

extern const struct nla_policy esa_job_del_nl_policy[ESA_JOB_A_ID + 1];

extern const struct nla_policy esa_job_get_nl_policy[ESA_JOB_A_ID + 1];

extern const struct nla_policy esa_job_set_nl_policy[ESA_JOB_A_RANKS + 1];

extern const struct nla_policy esa_ctr_get_nl_policy[ESA_JOB_A_ID + 1];

/* Ops table for esa */
extern const struct genl_ops esa_nl_ops[5];

int esa_nl_job_add_doit(struct sk_buff *skb, struct genl_info *info);
int esa_nl_job_del_doit(struct sk_buff *skb, struct genl_info *info);
int esa_nl_job_get_doit(struct sk_buff *skb, struct genl_info *info);
int esa_nl_job_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb);
int esa_nl_job_set_doit(struct sk_buff *skb, struct genl_info *info);
int esa_nl_ctr_get_doit(struct sk_buff *skb, struct genl_info *info);

enum {
	ESA_NLGRP_EVENTS,
};

#endif /* _LINUX_ESA_GEN_H */
