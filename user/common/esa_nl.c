// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_nl: client of esa.ko's generic netlink family.  This file: the
 * socket, the families, one request and its answers, the attributes'
 * names; jobs and events in the files esa_nl_int.h lists.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "esa_nl_int.h"

/* ------------------------------------------------------------------ */
/* Names                                                               */
/* ------------------------------------------------------------------ */

static const char *const esa_job_attr_names[] = {
	[ESA_JOB_A_ID]		= "ESA_JOB_A_ID",
	[ESA_JOB_A_GEN]		= "ESA_JOB_A_GEN",
	[ESA_JOB_A_WORKERS]	= "ESA_JOB_A_WORKERS",
	[ESA_JOB_A_PS]		= "ESA_JOB_A_PS",
	[ESA_JOB_A_MAX_PRIO]	= "ESA_JOB_A_MAX_PRIO",
	[ESA_JOB_A_LEASE_MS]	= "ESA_JOB_A_LEASE_MS",
	[ESA_JOB_A_REGION_BASE]	= "ESA_JOB_A_REGION_BASE",
	[ESA_JOB_A_REGION_SIZE]	= "ESA_JOB_A_REGION_SIZE",
	[ESA_JOB_A_IDLE_MS]	= "ESA_JOB_A_IDLE_MS",
	[ESA_JOB_A_EXPIRED]	= "ESA_JOB_A_EXPIRED",
	[ESA_JOB_A_COUNTERS]	= "ESA_JOB_A_COUNTERS",
	[ESA_JOB_A_TOTALS]	= "ESA_JOB_A_TOTALS",
	[ESA_JOB_A_REG]		= "ESA_JOB_A_REG",
	[ESA_JOB_A_PAD]		= "ESA_JOB_A_PAD",
	[ESA_JOB_A_UPSTREAM]	= "ESA_JOB_A_UPSTREAM",
	[ESA_JOB_A_LEAVES]	= "ESA_JOB_A_LEAVES",
	[ESA_JOB_A_MASK]	= "ESA_JOB_A_MASK",
	[ESA_JOB_A_RANKS]	= "ESA_JOB_A_RANKS",
};

static const char *const esa_addr_attr_names[] = {
	[ESA_ADDR_A_IPV4]	= "ESA_ADDR_A_IPV4",
	[ESA_ADDR_A_PORT]	= "ESA_ADDR_A_PORT",
};

static const char *const esa_leaf_attr_names[] = {
	[ESA_LEAF_A_IPV4]	= "ESA_LEAF_A_IPV4",
	[ESA_LEAF_A_PORT]	= "ESA_LEAF_A_PORT",
	[ESA_LEAF_A_RANKS]	= "ESA_LEAF_A_RANKS",
	[ESA_LEAF_A_PAD]	= "ESA_LEAF_A_PAD",
};

const char *esa_nl_attr_name(int type, int nested)
{
	if (nested == ESA_JOB_A_LEAVES)
		return type > 0 && type <= ESA_LEAF_A_MAX ?
		       esa_leaf_attr_names[type] : "unknown";
	if (nested)
		return type > 0 && type <= ESA_ADDR_A_MAX ?
		       esa_addr_attr_names[type] : "unknown";
	return type > 0 && type <= ESA_JOB_A_MAX ?
	       esa_job_attr_names[type] : "unknown";
}

/*
 * The type of the nest at offset off of the request (the kernel's
 * NLMSGERR_ATTR_MISS_NEST): ESA_JOB_A_PS, ..., or -1 if unknown.
 */
static int esa_nl_nest_type(const struct esa_nl *nl, __u32 off)
{
	const struct nlattr *a;

	if (!nl->req || off < NLMSG_HDRLEN + GENL_HDRLEN ||
	    off + NLA_HDRLEN > nl->req->nlh.nlmsg_len)
		return -1;
	a = (const void *)(nl->req->buf + off);
	return a->nla_type & NLA_TYPE_MASK;
}

/* ------------------------------------------------------------------ */
/* Transactions                                                        */
/* ------------------------------------------------------------------ */

/* Keep the kernel's extended ACK of an error message. */
static void esa_nl_extack(struct esa_nl *nl, const struct nlmsghdr *h)
{
	const struct nlmsgerr *e = NLMSG_DATA(h);
	const struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	int off = sizeof(*e);

	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (!(h->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - sizeof(e->msg);
	off = NLMSG_ALIGN(off);
	if (NLMSG_HDRLEN + off > (int)h->nlmsg_len)
		return;
	parse_attrs((const char *)e + off, h->nlmsg_len - NLMSG_HDRLEN - off,
		    tb, NLMSGERR_ATTR_MAX);
	if (tb[NLMSGERR_ATTR_MSG]) {
		snprintf(nl->err, sizeof(nl->err), "%.*s",
			 attr_len(tb[NLMSGERR_ATTR_MSG]),
			 (const char *)attr_data(tb[NLMSGERR_ATTR_MSG]));
		nl->err[strcspn(nl->err, "\n")] = 0;
		nl->has_err = true;
	} else if (tb[NLMSGERR_ATTR_MISS_TYPE]) {
		int nest = tb[NLMSGERR_ATTR_MISS_NEST] ?
			   esa_nl_nest_type(nl, attr_u32(tb[NLMSGERR_ATTR_MISS_NEST])) : 0;

		snprintf(nl->err, sizeof(nl->err), "missing attribute %s",
			 esa_nl_attr_name(attr_u32(tb[NLMSGERR_ATTR_MISS_TYPE]),
					  nest));
		nl->has_err = true;
	}
}

/* The kernel's error message of a dump, after the error in NLMSG_DONE. */
static void esa_nl_done_extack(struct esa_nl *nl, const struct nlmsghdr *h)
{
	const struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	int off = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(int));

	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS) || (int)h->nlmsg_len <= off)
		return;
	parse_attrs((const char *)h + off, h->nlmsg_len - off, tb,
		    NLMSGERR_ATTR_MAX);
	if (tb[NLMSGERR_ATTR_MSG]) {
		snprintf(nl->err, sizeof(nl->err), "%.*s",
			 attr_len(tb[NLMSGERR_ATTR_MSG]),
			 (const char *)attr_data(tb[NLMSGERR_ATTR_MSG]));
		nl->err[strcspn(nl->err, "\n")] = 0;
		nl->has_err = true;
	}
}

/* The end of a dump: its error, or -EINTR if the kernel flagged a change. */
static int esa_nl_done(struct esa_nl *nl, const struct nlmsghdr *h,
		       bool intr, int stop)
{
	int err = 0;

	if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(err)))
		memcpy(&err, NLMSG_DATA(h), sizeof(err));
	if (err < 0) {
		esa_nl_done_extack(nl, h);
		return err;
	}
	if (intr && !stop) {
		snprintf(nl->err, sizeof(nl->err),
			 "the jobs changed during the dump: run it again");
		nl->has_err = true;
		return -EINTR;
	}
	return stop;
}

int esa_nl_recv(struct esa_nl *nl, __u32 seq, esa_msg_cb cb, void *arg)
{
	bool intr = false;
	int stop = 0;

	for (;;) {
		const struct nlmsghdr *h;
		ssize_t n = recv(nl->fd, nl->buf, sizeof(nl->buf), 0);
		int len;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		len = n;
		for (h = (const void *)nl->buf; NLMSG_OK(h, len);
		     h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_seq != seq)
				continue;	/* an event, or a stale answer */
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				if (e->error)
					esa_nl_extack(nl, h);
				return e->error ? e->error : stop;
			}
			intr |= !!(h->nlmsg_flags & NLM_F_DUMP_INTR);
			if (h->nlmsg_type == NLMSG_DONE)
				return esa_nl_done(nl, h, intr, stop);
			if (!stop && cb)
				stop = cb(nl, h, arg);
		}
		if (!seq && stop)
			return stop;
	}
}

static int esa_nl_send(struct esa_nl *nl, struct esa_msg *m)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };

	nl->has_err = false;
	if (m->overflow)
		return -EMSGSIZE;
	if (sendto(nl->fd, m->buf, m->nlh.nlmsg_len, 0, (struct sockaddr *)&sa,
		   sizeof(sa)) < 0)
		return -errno;
	return 0;
}

int esa_nl_do(struct esa_nl *nl, struct esa_msg *m, esa_msg_cb cb, void *arg)
{
	int err = esa_nl_send(nl, m);

	if (err)
		return err;
	nl->req = m;
	err = esa_nl_recv(nl, m->nlh.nlmsg_seq, cb, arg);
	nl->req = NULL;
	return err;
}

/* Family id and events group from the controller's answer. */
static int esa_nl_family_cb(struct esa_nl *nl, const struct nlmsghdr *h,
			    void *arg)
{
	const struct nlattr *tb[CTRL_ATTR_MAX + 1], *g, *gtb[CTRL_ATTR_MCAST_GRP_MAX + 1];
	int off = NLMSG_HDRLEN + GENL_HDRLEN, rem;

	parse_attrs((const char *)h + off, h->nlmsg_len - off, tb,
		    CTRL_ATTR_MAX);
	nl->family = attr_u16(tb[CTRL_ATTR_FAMILY_ID]);
	if (!tb[CTRL_ATTR_MCAST_GROUPS])
		return 0;
	rem = attr_len(tb[CTRL_ATTR_MCAST_GROUPS]);
	for (g = attr_data(tb[CTRL_ATTR_MCAST_GROUPS]);
	     rem >= NLA_HDRLEN && g->nla_len >= NLA_HDRLEN && g->nla_len <= rem;
	     rem -= NLA_ALIGN(g->nla_len),
	     g = (const void *)((const char *)g + NLA_ALIGN(g->nla_len))) {
		const struct nlattr *name;

		parse_attrs(attr_data(g), attr_len(g), gtb,
			    CTRL_ATTR_MCAST_GRP_MAX);
		name = gtb[CTRL_ATTR_MCAST_GRP_NAME];
		if (name && !strncmp(attr_data(name), ESA_GENL_MCGRP_EVENTS,
				     attr_len(name)))
			nl->mcgrp = attr_u32(gtb[CTRL_ATTR_MCAST_GRP_ID]);
	}
	return 0;
}

/* A handle on generic netlink family `name`; -ENOENT when there is none. */
static int esa_nl_open_family(struct esa_nl **out, const char *name)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	socklen_t salen = sizeof(sa);
	struct esa_nl *nl;
	struct esa_msg m;
	int one = 1, err;

	*out = NULL;
	nl = calloc(1, sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	nl->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (nl->fd < 0 || bind(nl->fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockname(nl->fd, (struct sockaddr *)&sa, &salen)) {
		err = -errno;
		goto fail;
	}
	nl->portid = sa.nl_pid;
	/* Errors explained and without the request echoed; strict dumps. */
	setsockopt(nl->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(nl->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	setsockopt(nl->fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one,
		   sizeof(one));
	msg_init(nl, &m, GENL_ID_CTRL, 0, CTRL_CMD_GETFAMILY);
	msg_put(&m, CTRL_ATTR_FAMILY_NAME, name, strlen(name) + 1);
	err = esa_nl_do(nl, &m, esa_nl_family_cb, NULL);
	if (!err && !nl->family)
		err = -ENOENT;
	if (err)
		goto fail;
	*out = nl;
	return 0;
fail:
	if (nl->fd >= 0)
		close(nl->fd);
	free(nl);
	return err;
}

int esa_nl_open(struct esa_nl **out)
{
	return esa_nl_open_family(out, ESA_GENL_NAME);
}

/*
 * The kernel's "netdev" family (6.3 and later; linux/netdev.h, which
 * Debian 12's headers lack): a device's XDP features.
 */
#define ESA_NETDEV_NAME			"netdev"
#define ESA_NETDEV_CMD_DEV_GET		1
#define ESA_NETDEV_A_DEV_IFINDEX	1
#define ESA_NETDEV_A_DEV_XDP_FEATURES	3

static int esa_nl_features_cb(struct esa_nl *nl, const struct nlmsghdr *h,
			      void *arg)
{
	const struct nlattr *tb[ESA_NETDEV_A_DEV_XDP_FEATURES + 1];
	int off = NLMSG_HDRLEN + GENL_HDRLEN;

	if (h->nlmsg_type != nl->family)
		return 0;
	parse_attrs((const char *)h + off, h->nlmsg_len - off, tb,
		    ESA_NETDEV_A_DEV_XDP_FEATURES);
	if (!tb[ESA_NETDEV_A_DEV_XDP_FEATURES])
		return -ENODATA;
	*(__u64 *)arg = attr_u64(tb[ESA_NETDEV_A_DEV_XDP_FEATURES]);
	return 1;
}

int esa_nl_xdp_features(int ifindex, __u64 *features)
{
	struct esa_nl *nl;
	struct esa_msg m;
	int err;

	err = esa_nl_open_family(&nl, ESA_NETDEV_NAME);
	if (err)
		return err;
	msg_init(nl, &m, nl->family, 0, ESA_NETDEV_CMD_DEV_GET);
	msg_u32(&m, ESA_NETDEV_A_DEV_IFINDEX, ifindex);
	err = esa_nl_do(nl, &m, esa_nl_features_cb, features);
	esa_nl_close(nl);
	return err < 0 ? err : err ? 0 : -ENODATA;
}

void esa_nl_close(struct esa_nl *nl)
{
	if (!nl)
		return;
	close(nl->fd);
	free(nl);
}

const char *esa_nl_error(const struct esa_nl *nl)
{
	return nl && nl->has_err ? nl->err : NULL;
}

int esa_nl_fd(const struct esa_nl *nl)
{
	return nl->fd;
}

int esa_nl_set_timeout(struct esa_nl *nl, unsigned int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000,
			      .tv_usec = (ms % 1000) * 1000 };

	return setsockopt(nl->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ?
	       -errno : 0;
}

