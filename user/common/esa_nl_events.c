// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_nl: the registry's counters, its events group and esa_nl_monitor(),
 * and raw requests (esa_nl_raw(), for the tests' malformed ones).
 */
#include <errno.h>
#include <sys/socket.h>

#include "esa_nl_int.h"

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
		esa_nl_read_job(h, &j, &info);
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
