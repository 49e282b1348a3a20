/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * esa_nl's internals (the API is esa_nl.h): the handle, building a request
 * and reading the attributes of an answer.  The files, top down, each
 * calling only those below it:
 *
 *   esa_nl_events.c  the counters, the events group, raw requests for the
 *                    tests
 *   esa_nl_jobs.c    jobs: add, delete, priority, get, dump; a job's
 *                    message read back (esa_nl_read_job())
 *   esa_nl.c         the socket (struct esa_nl: its buffer, sequence
 *                    numbers, the last extended ACK), the families
 *                    ("esa", "netdev"), one request and its answers
 *                    (esa_nl_do(), esa_nl_recv()), the attributes' names
 *
 * Plain netlink sockets, not libmnl: the family has a dozen attribute
 * types, which a page of code builds and parses; every tool that links
 * user/common keeps its dependencies (the top-level LDLIBS does not grow);
 * and the tests link statically into the VM's initramfs, while Debian's
 * libmnl-dev ships no static library.
 */
#ifndef ESA_NL_INT_H
#define ESA_NL_INT_H

#include <stdbool.h>
#include <string.h>
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

static inline void *msg_tail(struct esa_msg *m)
{
	return m->buf + NLMSG_ALIGN(m->nlh.nlmsg_len);
}

static inline void msg_init(struct esa_nl *nl, struct esa_msg *m, __u16 type,
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

static inline struct nlattr *msg_put(struct esa_msg *m, __u16 type,
				     const void *data, size_t len)
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

static inline void msg_u32(struct esa_msg *m, __u16 type, __u32 v)
{
	msg_put(m, type, &v, sizeof(v));
}

static inline struct nlattr *msg_nest(struct esa_msg *m, __u16 type)
{
	return msg_put(m, type | NLA_F_NESTED, NULL, 0);
}

static inline void msg_nest_end(struct esa_msg *m, struct nlattr *nest)
{
	if (nest)
		nest->nla_len = (char *)msg_tail(m) - (char *)nest;
}

static inline void msg_addr(struct esa_msg *m, __u16 type, const struct esa_addr *a)
{
	struct nlattr *nest = msg_nest(m, type);

	msg_put(m, ESA_ADDR_A_IPV4, &a->ip, sizeof(a->ip));
	msg_put(m, ESA_ADDR_A_PORT, &a->port, sizeof(a->port));
	msg_nest_end(m, nest);
}

/* Attributes of a received message, by type (up to max). */
static inline int parse_attrs(const void *data, int len, const struct nlattr **tb,
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

static inline const void *attr_data(const struct nlattr *a)
{
	return (const char *)a + NLA_HDRLEN;
}

static inline int attr_len(const struct nlattr *a)
{
	return a->nla_len - NLA_HDRLEN;
}

static inline __u32 attr_u32(const struct nlattr *a)
{
	__u32 v = 0;

	if (a && attr_len(a) >= 4)
		memcpy(&v, attr_data(a), 4);
	return v;
}

static inline __u16 attr_u16(const struct nlattr *a)
{
	__u16 v = 0;

	if (a && attr_len(a) >= 2)
		memcpy(&v, attr_data(a), 2);
	return v;
}

static inline __u64 attr_u64(const struct nlattr *a)
{
	__u64 v = 0;

	if (a && attr_len(a) >= 8)
		memcpy(&v, attr_data(a), 8);
	return v;
}

static inline __u8 attr_u8(const struct nlattr *a)
{
	return a && attr_len(a) >= 1 ? *(const __u8 *)attr_data(a) : 0;
}

/* ------------------------------------------------------------------ */
/* Transactions (esa_nl.c)                                             */
/* ------------------------------------------------------------------ */

typedef int (*esa_msg_cb)(struct esa_nl *nl, const struct nlmsghdr *h,
			  void *arg);

/*
 * Read the answers to request seq until its ACK, error or end of dump,
 * handing the family's messages to cb until cb returns non-zero.  With seq
 * 0, read events until cb returns non-zero.
 */
int esa_nl_recv(struct esa_nl *nl, __u32 seq, esa_msg_cb cb, void *arg);
/* Send request m and read its answers (esa_nl_recv()). */
int esa_nl_do(struct esa_nl *nl, struct esa_msg *m, esa_msg_cb cb, void *arg);

/* esa_nl_jobs.c: a job message (GET answer, dump part, ADDED or CHANGED
 * event) into j and info; returns its id. */
__u32 esa_nl_read_job(const struct nlmsghdr *h, struct esa_job *j,
		      struct esa_nl_job_info *info);

#endif /* ESA_NL_INT_H */
