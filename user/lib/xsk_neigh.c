// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libesa: AF_XDP's next hops (xsk_int.h).
 *
 * A frame leaves with its next hop's MAC, which the kernel's neighbour
 * table knows once resolved; AF_XDP frames do not go through the kernel,
 * so nothing resolves for them.  A socket keeps a cache per destination:
 * its route (RTM_GETROUTE), the next hop's MAC (RTM_GETNEIGH), trusted for
 * neigh_ttl_ms and then read again.  A next hop not resolved is never
 * waited for on the send path: the kernel is asked to resolve it
 * (RTM_NEWNEIGH with NTF_USE, as `ip neigh replace ... use` does, which
 * sends the ARP request) and its table read again at the next packet to
 * that destination, 10 ms later at the soonest; meanwhile the caller sends
 * another way (esa-ps: its UDP socket).  A resolution that failed (the
 * kernel's entry FAILED, or still incomplete after 5 s) is kept as such
 * until neigh_retry_ms has passed.  The cache grows to NH_MAX
 * destinations (a PS's fan-in: every worker of every job), then evicts the
 * least recently used (clock).  Every netlink request is answered within
 * its send (rtnetlink runs in the sender's call): reading the answer never
 * waits either.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include "xsk_int.h"

#define NH_MAX		16384		/* destinations kept */
#define NH_POLL_NS	10000000ULL	/* a resolution's table read again */
#define NH_RESOLVE_NS	5000000000ULL	/* ... until it counts as failed */
#define NH_TTL_MS	30000
#define NH_RETRY_MS	1000

/* The kernel's states with a MAC to use (its NUD_VALID, not in UAPI). */
#define NUD_USABLE	(NUD_PERMANENT | NUD_NOARP | NUD_REACHABLE | NUD_PROBE | NUD_STALE | \
			 NUD_DELAY)

enum { NH_OK, NH_WAIT, NH_BAD };

struct nh {
	uint32_t dst, via;	/* network order */
	int32_t	next;		/* in its bucket's chain, -1: last */
	int	oif;
	uint8_t	state;		/* NH_* */
	uint8_t	used;		/* looked up since the clock hand passed */
	uint8_t	mac[6];
	int	err;		/* NH_BAD: why (-errno) */
	uint64_t check_ns;	/* OK: fresh until; WAIT: read again at; BAD:
				 * retry at */
	uint64_t give_up_ns;	/* WAIT: failed at */
};

int nh_init(struct nh_cache *c, const struct esa_xsk_cfg *cfg, char *err, size_t len)
{
	memset(c, 0, sizeof(*c));
	c->ttl_ns = (cfg->neigh_ttl_ms ? cfg->neigh_ttl_ms : NH_TTL_MS) * 1000000ULL;
	c->retry_ns = (cfg->neigh_retry_ms ? cfg->neigh_retry_ms : NH_RETRY_MS) * 1000000ULL;
	c->nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (c->nl < 0)
		return xsk_fail(err, len, errno, "netlink: %s", strerror(errno));
	return 0;
}

void nh_free(struct nh_cache *c)
{
	if (c->nl >= 0)
		close(c->nl);
	c->nl = -1;
	free(c->e);
	free(c->bucket);
	c->e = NULL;
	c->bucket = NULL;
}

/* ------------------------------------------------------------------ */
/* The kernel's tables                                                 */
/* ------------------------------------------------------------------ */

/* Send req; its answer (the first message of its sequence number) into
 * buf: its length, 0 for an acknowledgement, or -errno. */
static int nl_ask(struct nh_cache *c, struct nlmsghdr *req, char *buf, size_t cap)
{
	req->nlmsg_seq = ++c->seq;
	if (send(c->nl, req, req->nlmsg_len, 0) < 0)
		return -errno;
	c->st.queries++;
	for (;;) {
		int got = recv(c->nl, buf, cap, MSG_DONTWAIT);
		struct nlmsghdr *n = (struct nlmsghdr *)buf;

		if (got < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		for (; NLMSG_OK(n, (unsigned int)got); n = NLMSG_NEXT(n, got)) {
			if (n->nlmsg_seq != c->seq)
				continue;	/* an earlier request's */
			if (n->nlmsg_type == NLMSG_ERROR)
				return ((struct nlmsgerr *)NLMSG_DATA(n))->error;
			memmove(buf, n, n->nlmsg_len);
			return n->nlmsg_len;
		}
	}
}

int nh_route(struct nh_cache *c, struct in_addr dst, int *oif, struct in_addr *via)
{
	struct {
		struct nlmsghdr n;
		struct rtmsg r;
		struct rtattr a;
		struct in_addr dst;
	} req = {
		.n = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETROUTE,
		       .nlmsg_flags = NLM_F_REQUEST },
		.r = { .rtm_family = AF_INET, .rtm_dst_len = 32 },
		.a = { .rta_len = RTA_LENGTH(sizeof(struct in_addr)), .rta_type = RTA_DST },
		.dst = dst,
	};
	char buf[4096];
	struct nlmsghdr *n = (struct nlmsghdr *)buf;
	int got = nl_ask(c, &req.n, buf, sizeof(buf)), alen;
	struct rtattr *a;

	*oif = 0;
	*via = dst;
	if (got <= 0 || n->nlmsg_type != RTM_NEWROUTE)
		return got < 0 ? got : -ENOENT;
	a = RTM_RTA(NLMSG_DATA(n));
	alen = RTM_PAYLOAD(n);
	for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
		if (a->rta_type == RTA_OIF)
			*oif = *(int *)RTA_DATA(a);
		else if (a->rta_type == RTA_GATEWAY)
			*via = *(struct in_addr *)RTA_DATA(a);
	}
	return *oif ? 0 : -ENOENT;
}

/* The neighbour table's entry for via on ifindex: 1 and its MAC if usable
 * (*state says how sure the kernel is), 0 if not, or -errno. */
static int neigh_get(struct nh_cache *c, uint32_t via, int ifindex, uint8_t mac[6],
		     uint16_t *state)
{
	struct {
		struct nlmsghdr n;
		struct ndmsg m;
		struct rtattr a;
		uint32_t dst;
	} req = {
		.n = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETNEIGH,
		       .nlmsg_flags = NLM_F_REQUEST },
		.m = { .ndm_family = AF_INET, .ndm_ifindex = ifindex },
		.a = { .rta_len = RTA_LENGTH(sizeof(uint32_t)), .rta_type = NDA_DST },
		.dst = via,
	};
	char buf[1024];
	struct nlmsghdr *n = (struct nlmsghdr *)buf;
	int got = nl_ask(c, &req.n, buf, sizeof(buf)), alen, have = 0;
	struct ndmsg *m = NLMSG_DATA(n);
	struct rtattr *a;

	*state = NUD_NONE;
	if (got == -ENOENT)
		return 0;
	if (got <= 0 || n->nlmsg_type != RTM_NEWNEIGH)
		return got < 0 ? got : -EPROTO;
	*state = m->ndm_state;
	a = (struct rtattr *)((char *)m + NLMSG_ALIGN(sizeof(*m)));
	alen = n->nlmsg_len - NLMSG_LENGTH(sizeof(*m));
	for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
		if (a->rta_type == NDA_LLADDR && RTA_PAYLOAD(a) == 6) {
			memcpy(mac, RTA_DATA(a), 6);
			have = 1;
		}
	}
	return have && (m->ndm_state & NUD_USABLE);
}

/* Have the kernel resolve via (or check a stale entry): NTF_USE, as a
 * packet to it would.  Not for a permanent entry (NTF_USE drops that). */
static void neigh_probe(struct nh_cache *c, uint32_t via, int ifindex)
{
	struct {
		struct nlmsghdr n;
		struct ndmsg m;
		struct rtattr a;
		uint32_t dst;
	} req = {
		.n = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_NEWNEIGH,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_ACK },
		.m = { .ndm_family = AF_INET, .ndm_ifindex = ifindex, .ndm_flags = NTF_USE },
		.a = { .rta_len = RTA_LENGTH(sizeof(uint32_t)), .rta_type = NDA_DST },
		.dst = via,
	};
	char buf[512];

	c->st.probes++;
	nl_ask(c, &req.n, buf, sizeof(buf));
}

/* ------------------------------------------------------------------ */
/* The cache                                                           */
/* ------------------------------------------------------------------ */

static uint32_t hash(const struct nh_cache *c, uint32_t dst)
{
	uint32_t h = dst * 2654435761u;

	return (h ^ h >> 15) & (c->nbucket - 1);
}

static struct nh *find(struct nh_cache *c, uint32_t dst)
{
	if (!c->nbucket)
		return NULL;
	for (int32_t i = c->bucket[hash(c, dst)]; i >= 0; i = c->e[i].next)
		if (c->e[i].dst == dst)
			return &c->e[i];
	return NULL;
}

static void link_in(struct nh_cache *c, int32_t i)
{
	uint32_t b = hash(c, c->e[i].dst);

	c->e[i].next = c->bucket[b];
	c->bucket[b] = i;
}

/* Room for twice as many, up to NH_MAX; 0 or -ENOMEM. */
static int grow(struct nh_cache *c)
{
	uint32_t cap = c->cap ? 2 * c->cap : 16;
	struct nh *e = realloc(c->e, cap * sizeof(*e));
	int32_t *b = malloc(2 * cap * sizeof(*b));

	if (e)
		c->e = e;
	if (!e || !b) {
		free(b);
		return -ENOMEM;
	}
	free(c->bucket);
	c->bucket = b;
	c->cap = cap;
	c->nbucket = 2 * cap;
	memset(b, 0xff, c->nbucket * sizeof(*b));
	for (uint32_t i = 0; i < c->n; i++)
		link_in(c, i);
	return 0;
}

/* The clock's victim: the first entry not used since the hand last passed. */
static int32_t evict(struct nh_cache *c)
{
	int32_t i, *pp;

	for (;; c->hand = (c->hand + 1) % c->n) {
		if (c->e[c->hand].used) {
			c->e[c->hand].used = 0;
			continue;
		}
		i = c->hand;
		c->hand = (c->hand + 1) % c->n;
		break;
	}
	for (pp = &c->bucket[hash(c, c->e[i].dst)]; *pp != i; pp = &c->e[*pp].next)
		;
	*pp = c->e[i].next;
	c->st.evicted++;
	return i;
}

static struct nh *insert(struct nh_cache *c, uint32_t dst)
{
	int32_t i;

	if (c->n == c->cap && c->cap < NH_MAX && grow(c) && !c->n)
		return NULL;
	if (c->n < c->cap)
		i = c->n++;
	else
		i = evict(c);
	c->e[i] = (struct nh){ .dst = dst, .next = -1 };
	link_in(c, i);
	return &c->e[i];
}

/* ------------------------------------------------------------------ */
/* Resolving                                                           */
/* ------------------------------------------------------------------ */

static void set_bad(struct nh_cache *c, struct nh *e, int err, uint64_t now)
{
	e->state = NH_BAD;
	e->err = err;
	e->check_ns = now + c->retry_ns;
}

static void set_ok(struct nh_cache *c, struct nh *e, uint16_t kstate, uint64_t now)
{
	e->state = NH_OK;
	e->check_ns = now + c->ttl_ns;
	/* not confirmed lately (AF_XDP's traffic confirms nothing): have the
	 * kernel check it, and read its verdict at the next expiry */
	if (kstate & NUD_STALE)
		neigh_probe(c, e->via, e->oif);
}

/* From the start: the route, the neighbour, or a resolution asked for. */
static void resolve(struct esa_xsk *x, struct nh *e, uint64_t now)
{
	struct nh_cache *c = &x->nh;
	struct in_addr via;
	uint16_t kstate;
	int rc;

	rc = nh_route(c, (struct in_addr){ e->dst }, &e->oif, &via);
	e->via = via.s_addr;
	if (rc || e->oif != x->dev->ifindex) {
		set_bad(c, e, rc ? rc : -ENETUNREACH, now);
		return;
	}
	if (x->dev->noarp) {
		memset(e->mac, 0, 6);
		set_ok(c, e, NUD_NOARP, now);
		return;
	}
	rc = neigh_get(c, e->via, e->oif, e->mac, &kstate);
	if (rc > 0) {
		set_ok(c, e, kstate, now);
		return;
	}
	neigh_probe(c, e->via, e->oif);
	e->state = NH_WAIT;
	e->check_ns = now + NH_POLL_NS;
	e->give_up_ns = now + NH_RESOLVE_NS;
}

/* A resolution under way: the kernel's table read again. */
static void poll_wait(struct esa_xsk *x, struct nh *e, uint64_t now)
{
	struct nh_cache *c = &x->nh;
	uint16_t kstate;
	int rc = neigh_get(c, e->via, e->oif, e->mac, &kstate);

	if (rc > 0)
		set_ok(c, e, kstate, now);
	else if ((kstate & NUD_FAILED) || now >= e->give_up_ns)
		set_bad(c, e, -EHOSTUNREACH, now);
	else
		e->check_ns = now + NH_POLL_NS;
}

static int answer(struct esa_xsk *x, const struct nh *e, uint8_t mac[6], char *err,
		  size_t len)
{
	char d[INET_ADDRSTRLEN], v[INET_ADDRSTRLEN];

	if (e->state == NH_OK) {
		memcpy(mac, e->mac, 6);
		return 0;
	}
	inet_ntop(AF_INET, &e->dst, d, sizeof(d));
	inet_ntop(AF_INET, &e->via, v, sizeof(v));
	if (e->state == NH_WAIT)
		return xsk_fail(err, len, EAGAIN, "the next hop %s to %s on %s is being resolved",
				v, d, x->dev->ifname);
	if (e->err == -EHOSTUNREACH)
		return xsk_fail(err, len, EHOSTUNREACH, "the next hop %s to %s on %s has no "
				"neighbour entry (ARP unresolved)", v, d, x->dev->ifname);
	if (e->err == -ENETUNREACH)
		return xsk_fail(err, len, ENETUNREACH, "the route to %s leaves by interface %d, "
				"not %s", d, e->oif, x->dev->ifname);
	return xsk_fail(err, len, e->err, "no route to %s: %s", d, strerror(-e->err));
}

int nh_lookup(struct esa_xsk *x, struct in_addr dst, uint8_t mac[6], char *err, size_t len)
{
	struct nh_cache *c = &x->nh;
	uint64_t now = xsk_mono_ns();
	struct nh *e = find(c, dst.s_addr);

	c->st.lookups++;
	if (!e) {
		e = insert(c, dst.s_addr);
		if (!e)
			return xsk_fail(err, len, ENOMEM, "out of memory");
		resolve(x, e, now);
	} else if (now < e->check_ns) {
		c->st.hits += e->state == NH_OK;
		c->st.negative += e->state == NH_BAD;
	} else if (e->state == NH_WAIT) {
		poll_wait(x, e, now);
	} else {
		resolve(x, e, now);	/* expired, or its retry time */
	}
	e->used = 1;
	return answer(x, e, mac, err, len);
}

int esa_xsk_next_hop(struct esa_xsk *x, struct in_addr dst, uint8_t mac[6], char *err,
		     size_t len)
{
	struct timespec ts = { 0, NH_POLL_NS };
	char what[160], *p;
	int rc;

	/* opening: a second for the kernel's first ARP answer */
	for (int t = 0; (rc = nh_lookup(x, dst, mac, err, len)) == -EAGAIN && t < 100; t++)
		nanosleep(&ts, NULL);
	if (rc != -EAGAIN)
		return rc;
	snprintf(what, sizeof(what), "%s", err);
	p = strstr(what, " is being resolved");
	if (p)
		*p = 0;
	return xsk_fail(err, len, EHOSTUNREACH, "%s has no neighbour entry (ARP unresolved)",
			what);
}

void esa_xsk_neigh_stats(const struct esa_xsk *x, struct esa_xsk_neigh_stats *st)
{
	*st = x->nh.st;
	st->entries = x->nh.n;
}
