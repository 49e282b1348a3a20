// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_nl: client of esa.ko's generic netlink family.
 *
 * Plain netlink sockets, not libmnl: the family has a dozen attribute
 * types, which a page of code builds and parses; every tool that links
 * user/common keeps its dependencies (the top-level LDLIBS does not grow);
 * and the tests link statically into the VM's initramfs, while Debian's
 * libmnl-dev ships no static library.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include "esa_nl.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK	270
#endif

#define ESA_NL_BUF	65536	/* larger than any dump part the kernel sends */
#define ESA_NL_MSG	8192	/* larger than any request (64 workers) */

struct esa_nl {
	int	fd;
	__u16	family;
	__u32	mcgrp;		/* id of the events group, 0: none */
	__u32	seq;
	__u32	portid;
	bool	joined;
	char	err[256];
	bool	has_err;
	const struct esa_msg *req;	/* the request being answered */
	char	buf[ESA_NL_BUF];
};

/* ------------------------------------------------------------------ */
/* Messages                                                            */
/* ------------------------------------------------------------------ */

struct esa_msg {
	union {
		struct nlmsghdr nlh;
		char buf[ESA_NL_MSG];
	};
	bool	overflow;
};

static void *msg_tail(struct esa_msg *m)
{
	return m->buf + NLMSG_ALIGN(m->nlh.nlmsg_len);
}

static void msg_init(struct esa_nl *nl, struct esa_msg *m, __u16 type,
		     __u16 flags, __u8 cmd)
{
	struct genlmsghdr *g;

	memset(&m->nlh, 0, NLMSG_HDRLEN + GENL_HDRLEN);
	m->overflow = false;
	m->nlh.nlmsg_len = NLMSG_HDRLEN + GENL_HDRLEN;
	m->nlh.nlmsg_type = type;
	m->nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	m->nlh.nlmsg_seq = ++nl->seq;
	g = NLMSG_DATA(&m->nlh);
	g->cmd = cmd;
	g->version = type == GENL_ID_CTRL ? 1 : ESA_GENL_VERSION;
}

static struct nlattr *msg_put(struct esa_msg *m, __u16 type, const void *data,
			      size_t len)
{
	struct nlattr *a = msg_tail(m);
	size_t total = NLA_ALIGN(NLA_HDRLEN + len);

	if (NLMSG_ALIGN(m->nlh.nlmsg_len) + total > sizeof(m->buf)) {
		m->overflow = true;
		return NULL;
	}
	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	if (len)
		memcpy((char *)a + NLA_HDRLEN, data, len);
	memset((char *)a + NLA_HDRLEN + len, 0, total - NLA_HDRLEN - len);
	m->nlh.nlmsg_len = NLMSG_ALIGN(m->nlh.nlmsg_len) + total;
	return a;
}

static void msg_u32(struct esa_msg *m, __u16 type, __u32 v)
{
	msg_put(m, type, &v, sizeof(v));
}

static struct nlattr *msg_nest(struct esa_msg *m, __u16 type)
{
	return msg_put(m, type | NLA_F_NESTED, NULL, 0);
}

static void msg_nest_end(struct esa_msg *m, struct nlattr *nest)
{
	if (nest)
		nest->nla_len = (char *)msg_tail(m) - (char *)nest;
}

static void msg_addr(struct esa_msg *m, __u16 type, const struct esa_addr *a)
{
	struct nlattr *nest = msg_nest(m, type);

	msg_put(m, ESA_ADDR_A_IPV4, &a->ip, sizeof(a->ip));
	msg_put(m, ESA_ADDR_A_PORT, &a->port, sizeof(a->port));
	msg_nest_end(m, nest);
}

/* Attributes of a received message, by type (up to max). */
static int parse_attrs(const void *data, int len, const struct nlattr **tb,
		       int max)
{
	const struct nlattr *a;

	memset(tb, 0, (max + 1) * sizeof(*tb));
	for (a = data; len >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
	     a->nla_len <= len;
	     len -= NLA_ALIGN(a->nla_len),
	     a = (const void *)((const char *)a + NLA_ALIGN(a->nla_len))) {
		int type = a->nla_type & NLA_TYPE_MASK;

		if (type <= max)
			tb[type] = a;
	}
	return 0;
}

static const void *attr_data(const struct nlattr *a)
{
	return (const char *)a + NLA_HDRLEN;
}

static int attr_len(const struct nlattr *a)
{
	return a->nla_len - NLA_HDRLEN;
}

static __u32 attr_u32(const struct nlattr *a)
{
	__u32 v = 0;

	if (a && attr_len(a) >= 4)
		memcpy(&v, attr_data(a), 4);
	return v;
}

static __u16 attr_u16(const struct nlattr *a)
{
	__u16 v = 0;

	if (a && attr_len(a) >= 2)
		memcpy(&v, attr_data(a), 2);
	return v;
}

static __u64 attr_u64(const struct nlattr *a)
{
	__u64 v = 0;

	if (a && attr_len(a) >= 8)
		memcpy(&v, attr_data(a), 8);
	return v;
}

static __u8 attr_u8(const struct nlattr *a)
{
	return a && attr_len(a) >= 1 ? *(const __u8 *)attr_data(a) : 0;
}

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

typedef int (*esa_msg_cb)(struct esa_nl *nl, const struct nlmsghdr *h,
			  void *arg);

/*
 * Read the answers to request seq until its ACK, error or end of dump,
 * handing the family's messages to cb until cb returns non-zero.  With seq
 * 0, read events until cb returns non-zero.
 */
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

static int esa_nl_recv(struct esa_nl *nl, __u32 seq, esa_msg_cb cb, void *arg)
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

static int esa_nl_do(struct esa_nl *nl, struct esa_msg *m, esa_msg_cb cb,
		     void *arg)
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

/* ------------------------------------------------------------------ */
/* Jobs                                                                */
/* ------------------------------------------------------------------ */

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
static __u32 parse_job(const struct nlmsghdr *h, struct esa_job *j,
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
		parse_job(h, a->j, a->info);
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
	id = parse_job(h, &j, &info);
	return a->cb(id, &j, &info, a->arg);
}

int esa_nl_job_dump(struct esa_nl *nl, esa_nl_job_cb cb, void *arg)
{
	struct esa_dump_arg a = { .cb = cb, .arg = arg };
	struct esa_msg m;

	msg_init(nl, &m, nl->family, NLM_F_DUMP, ESA_CMD_JOB_GET);
	return esa_nl_do(nl, &m, esa_nl_dump_cb, &a);
}

/* ------------------------------------------------------------------ */
/* Counters and events                                                 */
/* ------------------------------------------------------------------ */

static void parse_ctrs(const struct nlattr *nest, struct esa_nl_counters *c)
{
	const struct nlattr *tb[ESA_CTR_A_MAX + 1];

	memset(c, 0, sizeof(*c));
	if (!nest)
		return;
	parse_attrs(attr_data(nest), attr_len(nest), tb, ESA_CTR_A_MAX);
	c->adds = attr_u64(tb[ESA_CTR_A_ADDS]);
	c->deletes = attr_u64(tb[ESA_CTR_A_DELETES]);
	c->expiries = attr_u64(tb[ESA_CTR_A_EXPIRIES]);
	c->reclaims = attr_u64(tb[ESA_CTR_A_RECLAIMS]);
	c->foreign = attr_u64(tb[ESA_CTR_A_FOREIGN]);
}

struct esa_ctr_arg {
	struct esa_nl_counters *totals, *job;
};

static int esa_nl_ctr_cb(struct esa_nl *nl, const struct nlmsghdr *h,
			 void *arg)
{
	const struct nlattr *tb[ESA_JOB_A_MAX + 1];
	int off = NLMSG_HDRLEN + GENL_HDRLEN;
	struct esa_ctr_arg *a = arg;

	if (h->nlmsg_type != nl->family)
		return 0;
	parse_attrs((const char *)h + off, h->nlmsg_len - off, tb,
		    ESA_JOB_A_MAX);
	if (a->totals)
		parse_ctrs(tb[ESA_JOB_A_TOTALS], a->totals);
	if (a->job)
		parse_ctrs(tb[ESA_JOB_A_COUNTERS], a->job);
	return 0;
}

int esa_nl_counters(struct esa_nl *nl, int id, struct esa_nl_counters *totals,
		    struct esa_nl_counters *job)
{
	struct esa_ctr_arg a = { .totals = totals, .job = id >= 0 ? job : NULL };
	struct esa_msg m;

	msg_init(nl, &m, nl->family, 0, ESA_CMD_CTR_GET);
	if (id >= 0)
		msg_u32(&m, ESA_JOB_A_ID, id);
	return esa_nl_do(nl, &m, esa_nl_ctr_cb, &a);
}

int esa_nl_join_events(struct esa_nl *nl)
{
	if (nl->joined)
		return 0;
	if (!nl->mcgrp)
		return -ENOENT;
	if (setsockopt(nl->fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &nl->mcgrp,
		       sizeof(nl->mcgrp)))
		return -errno;
	nl->joined = true;
	return 0;
}

struct esa_event_arg {
	esa_nl_event_cb cb;
	void *arg;
};

static int esa_nl_event_msg(struct esa_nl *nl, const struct nlmsghdr *h,
			    void *arg)
{
	const struct genlmsghdr *g = NLMSG_DATA(h);
	const struct nlattr *tb[ESA_JOB_A_MAX + 1];
	int off = NLMSG_HDRLEN + GENL_HDRLEN;
	struct esa_event_arg *a = arg;
	struct esa_nl_event ev = { .cmd = g->cmd };
	struct esa_nl_job_info info;
	struct esa_job j;

	if (h->nlmsg_type != nl->family || h->nlmsg_len < (__u32)off)
		return 0;
	parse_attrs((const char *)h + off, h->nlmsg_len - off, tb,
		    ESA_JOB_A_MAX);
	ev.id = attr_u32(tb[ESA_JOB_A_ID]);
	ev.gen = attr_u32(tb[ESA_JOB_A_GEN]);
	if (ev.cmd == ESA_CMD_JOB_ADDED || ev.cmd == ESA_CMD_JOB_CHANGED) {
		parse_job(h, &j, &info);
		ev.job = &j;
		ev.info = &info;
	}
	return a->cb(&ev, a->arg);
}

int esa_nl_monitor(struct esa_nl *nl, esa_nl_event_cb cb, void *arg)
{
	struct esa_event_arg a = { .cb = cb, .arg = arg };
	int err = esa_nl_join_events(nl);

	nl->has_err = false;
	/* Events have sequence number 0 and no end: only cb stops this. */
	return err ? err : esa_nl_recv(nl, 0, esa_nl_event_msg, &a);
}

static int esa_nl_raw_flags(struct esa_nl *nl, __u8 cmd, __u16 flags,
			    const void *attrs, size_t len)
{
	struct esa_msg m;

	msg_init(nl, &m, nl->family, flags, cmd);
	if (NLMSG_ALIGN(m.nlh.nlmsg_len) + len > sizeof(m.buf))
		return -EMSGSIZE;
	if (len)
		memcpy(msg_tail(&m), attrs, len);
	m.nlh.nlmsg_len = NLMSG_ALIGN(m.nlh.nlmsg_len) + len;
	return esa_nl_do(nl, &m, NULL, NULL);
}

int esa_nl_raw(struct esa_nl *nl, __u8 cmd, const void *attrs, size_t len)
{
	return esa_nl_raw_flags(nl, cmd, 0, attrs, len);
}

int esa_nl_raw_dump(struct esa_nl *nl, __u8 cmd, const void *attrs,
		    size_t len)
{
	return esa_nl_raw_flags(nl, cmd, NLM_F_DUMP, attrs, len);
}
