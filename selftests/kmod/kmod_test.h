/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the esa.ko tests share beyond testlib.h (jobs, packets, the test
 * topology): a builder for raw (also malformed) netlink attributes, event
 * collection, module loading, and dropping a capability.  The tests run as
 * root inside the test VM (or on any machine where esa.ko is loaded) and
 * skip when the module is absent.
 */
#ifndef ESA_KMOD_TEST_H
#define ESA_KMOD_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <linux/netlink.h>

#include "testlib.h"
#include "esa_nl.h"

/*
 * Skip from a fixture's setup.  The harness of Debian's 6.1 sources would
 * run the test after SKIP(return, ...) there; jumping out skips it.
 */
#define SETUP_SKIP(fmt, ...) SKIP(longjmp(_metadata->env, 1), fmt, ##__VA_ARGS__)

static inline double k_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ */
/* Raw attributes                                                      */
/* ------------------------------------------------------------------ */

struct k_attrs {
	char	buf[8192];
	size_t	len;
};

static inline size_t k_put(struct k_attrs *m, __u16 type, const void *data,
			   size_t len)
{
	struct nlattr *a = (void *)(m->buf + m->len);
	size_t at = m->len;

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy(m->buf + m->len + NLA_HDRLEN, data, len);
	memset(m->buf + m->len + NLA_HDRLEN + len, 0,
	       NLA_ALIGN(len) - len);
	m->len += NLA_ALIGN(NLA_HDRLEN + len);
	return at;
}

static inline void k_u32(struct k_attrs *m, __u16 type, __u32 v)
{
	k_put(m, type, &v, 4);
}

static inline size_t k_nest(struct k_attrs *m, __u16 type)
{
	return k_put(m, type | NLA_F_NESTED, NULL, 0);
}

static inline void k_end(struct k_attrs *m, size_t at)
{
	((struct nlattr *)(m->buf + at))->nla_len = m->len - at;
}

/* An address nest; port 0 leaves ESA_ADDR_A_PORT out, ip 0 IPV4 out. */
static inline void k_addr(struct k_attrs *m, __u16 type, const char *ip,
			  __u16 port)
{
	size_t n = k_nest(m, type);
	__be16 p = htons(port);
	__be32 a = ip ? t_ip(ip) : 0;

	if (ip)
		k_put(m, ESA_ADDR_A_IPV4, &a, 4);
	if (port)
		k_put(m, ESA_ADDR_A_PORT, &p, 2);
	k_end(m, n);
}

/* The attributes of a valid ADD of id with nworkers workers. */
static inline void k_add_attrs(struct k_attrs *m, __u32 id, int nworkers)
{
	char ip[32];
	size_t w;

	m->len = 0;
	k_u32(m, ESA_JOB_A_ID, id);
	w = k_nest(m, ESA_JOB_A_WORKERS);
	for (int r = 0; r < nworkers; r++) {
		snprintf(ip, sizeof(ip), "10.0.0.%d", 11 + r);
		k_addr(m, r, ip, 0);
	}
	k_end(m, w);
	k_addr(m, ESA_JOB_A_PS, T_PS_A, T_PS_PORT);
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

struct k_event {
	__u8	cmd;
	__u32	id, gen, nworkers;
};

struct k_events {
	struct k_event ev[64];
	int	n;
	__u8	want;		/* stop at this command, 0: when full */
	__u32	want_id;
};

static inline int k_event_cb(const struct esa_nl_event *ev, void *arg)
{
	struct k_events *e = arg;

	if (e->n < 64) {
		e->ev[e->n].cmd = ev->cmd;
		e->ev[e->n].id = ev->id;
		e->ev[e->n].gen = ev->gen;
		e->ev[e->n].nworkers = ev->job ? ev->job->nworkers : 0;
		e->n++;
	}
	if (e->want && ev->cmd == e->want && ev->id == e->want_id)
		return 1;
	return e->n == 64;
}

/* Collect events until cmd for id arrives (1) or ms pass (0). */
static inline int k_wait_event(struct esa_nl *mon, struct k_events *e,
			       __u8 cmd, __u32 id, unsigned int ms)
{
	e->want = cmd;
	e->want_id = id;
	esa_nl_set_timeout(mon, ms);
	return esa_nl_monitor(mon, k_event_cb, e) == 1;
}

static inline int k_count_events(const struct k_events *e, __u8 cmd, __u32 id)
{
	int n = 0;

	for (int i = 0; i < e->n; i++)
		n += e->ev[i].cmd == cmd && e->ev[i].id == id;
	return n;
}

static inline const struct k_event *k_find_event(const struct k_events *e,
						 __u8 cmd, __u32 id)
{
	for (int i = 0; i < e->n; i++)
		if (e->ev[i].cmd == cmd && e->ev[i].id == id)
			return &e->ev[i];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Module and privileges                                               */
/* ------------------------------------------------------------------ */

static inline bool k_module_loaded(void)
{
	return !access("/sys/module/esa", F_OK);
}

/* delete_module(2) as rmmod does it; -errno. */
static inline int k_rmmod(void)
{
	return syscall(__NR_delete_module, "esa", O_NONBLOCK) ? -errno : 0;
}

/* Unloading waits for programs freed after an RCU grace period. */
static inline int k_rmmod_wait(double seconds)
{
	double end = k_now() + seconds;
	int err;

	while ((err = k_rmmod()) == -EAGAIN && k_now() < end)
		usleep(20000);
	return err;
}

/* finit_module(2) of $ESA_KO with params; -errno. */
static inline int k_insmod(const char *params)
{
	const char *ko = getenv("ESA_KO");
	int fd, err = 0;

	if (!ko)
		return -ENOENT;
	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (syscall(__NR_finit_module, fd, params, 0))
		err = -errno;
	close(fd);
	return err;
}

/* Drop cap from the effective set (the permitted set keeps it). */
static inline int k_drop_cap(int cap)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[cap / 32].effective &= ~(1U << (cap % 32));
	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

#endif /* ESA_KMOD_TEST_H */
