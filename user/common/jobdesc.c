// SPDX-License-Identifier: GPL-2.0
/*
 * The one parser of a job's description (jobdesc.h), for esactl, esa-ps
 * and esa-agent: which words there are, the numbers (max-prio, lease,
 * region, ranks) with the switch's limits, the members (ps, workers,
 * leaves, upstream) with where they live, and the words back again.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <net/if.h>

#include "jobdesc.h"
#include "esa_policy.h"	/* esa_lowest_rank() */
#include "words.h"

enum jd_word {
	JW_PS,
	JW_WORKERS,
	JW_LEAVES,		/* at a spine (two levels) */
	JW_UPSTREAM,		/* at a leaf: its spine */
	JW_RANKS,		/* at a leaf: the job's ranks */
	JW_MAX_PRIO,
	JW_LEASE,
	JW_REGION,
	__JW_MAX,
};

/* A word, and whether a prefix of it is taken ("max" for max-prio). */
static const struct {
	const char	*name;
	bool		abbrev;
} jd_words[__JW_MAX] = {
	[JW_PS]		= { "ps", false },
	[JW_WORKERS]	= { "workers", false },
	[JW_LEAVES]	= { "leaves", false },
	[JW_UPSTREAM]	= { "upstream", true },
	[JW_RANKS]	= { "ranks", false },
	[JW_MAX_PRIO]	= { "max-prio", true },
	[JW_LEASE]	= { "lease", true },
	[JW_REGION]	= { "region", true },
};

/* Word w is (enum jd_word), or -1: exact, or with abbrev a prefix of one. */
static int jd_word(const char *w, bool abbrev)
{
	size_t n = strlen(w);

	for (int i = 0; i < __JW_MAX; i++)
		if (!strcmp(w, jd_words[i].name))
			return i;
	for (int i = 0; abbrev && n && i < __JW_MAX; i++)
		if (jd_words[i].abbrev && !strncmp(w, jd_words[i].name, n))
			return i;
	return -1;
}

/* Where a list of members ends: a word written out, or the next job. */
static bool jd_list_end(const char *w)
{
	return !strcmp(w, "job") || jd_word(w, false) >= 0;
}

/* The words being read. */
struct jd {
	int		argc, i;	/* argv[i]: the current word */
	char		**argv;
	unsigned int	flags;
	struct esa_jobdesc *d;
	__u32		ranks;		/* "ranks N" */
	bool		have_ps;
	char		*why;
	size_t		len;
};

static int jd_fail(struct jd *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int jd_fail(struct jd *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why, c->len, fmt, ap);
	va_end(ap);
	return -1;
}

/* The value of what in word s, 0..max. */
static int jd_num(struct jd *c, const char *what, const char *s, __u32 max, __u32 *v)
{
	int rc = esa_parse_u32(s, max, v);

	if (rc == -ERANGE)
		return jd_fail(c, "%s %s out of range (0..%u)", what, s, max);
	if (rc)
		return jd_fail(c, "%s \"%s\" is not a number", what, s);
	return 0;
}

int esa_parse_mac(const char *s, __u8 mac[6])
{
	unsigned int b[6];
	char end;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3],
		   &b[4], &b[5], &end) != 6)
		return -EINVAL;
	for (int i = 0; i < 6; i++)
		mac[i] = b[i];
	return 0;
}

int esa_parse_ranks(const char *s, __u64 *set)
{
	char *end;

	*set = 0;
	while (*s) {
		unsigned long a = strtoul(s, &end, 10), b = a;

		if (end == s)
			return -EINVAL;
		if (*end == '-') {
			s = end + 1;
			b = strtoul(s, &end, 10);
			if (end == s)
				return -EINVAL;
		}
		if (a > b || b >= 64)
			return -ERANGE;
		for (unsigned long r = a; r <= b; r++)
			*set |= 1ULL << r;
		if (*end == ',')
			end++;
		else if (*end)
			return -EINVAL;
		s = end;
	}
	return *set ? 0 : -EINVAL;
}

const char *esa_fmt_ranks(__u64 set, char *buf)
{
	char *p = buf;

	*p = 0;
	for (int r = 0; r < 64; r++) {
		int e = r;

		if (!(set & (1ULL << r)))
			continue;
		while (e < 63 && (set & (1ULL << (e + 1))))
			e++;
		p += sprintf(p, p == buf ? "%d" : ",%d", r);
		if (e > r)
			p += sprintf(p, "-%d", e);
		r = e;
	}
	return buf;
}

/*
 * A member, "IP[:PORT][@DEV[/MAC]]": its address (a port needed when
 * need_port), the switch port it is behind and its MAC when given.
 * -EDESTADDRREQ: the address is not one; other errors: the place.  The
 * reason in why.
 */
static int jd_member(const char *s, bool need_port, unsigned int flags, struct esa_addr *a,
		     struct esa_place *p, char *why, size_t len)
{
	char buf[96], *at, *slash;
	struct esa_addr n = {};

	memset(p, 0, sizeof(*p));
	if (strlen(s) >= sizeof(buf))
		return snprintf(why, len, "\"%s\" is too long", s), -EINVAL;
	strcpy(buf, s);
	at = strchr(buf, '@');
	if (at)
		*at++ = 0;
	if (esa_parse_ipport(buf, need_port ? ESA_ADDR_NEED_PORT : 0, 0, &n.ip, &n.port))
		return snprintf(why, len, "\"%s\" is not IP%s", buf,
				need_port ? ":PORT" : "[:PORT]"), -EDESTADDRREQ;
	*a = n;
	if (!at)
		return 0;
	slash = strchr(at, '/');
	if (slash) {
		*slash++ = 0;
		if (esa_parse_mac(slash, p->mac))
			return snprintf(why, len, "\"%s\" is not a MAC address", slash), -EINVAL;
		p->have_mac = true;
	}
	if (!*at || strlen(at) >= IF_NAMESIZE)
		return snprintf(why, len, "\"%s\" is not a port name", at), -EINVAL;
	if (flags & ESA_JD_NO_DEV)
		return 0;
	p->ifindex = if_nametoindex(at);
	if (!p->ifindex)
		return snprintf(why, len, "no port \"%s\" here", at), -ENODEV;
	return 0;
}

/* Is there a member word after the current one? Then step to it. */
static bool jd_next_member(struct jd *c)
{
	if (c->i + 1 >= c->argc || jd_list_end(c->argv[c->i + 1]))
		return false;
	c->i++;
	return true;
}

/*
 * "workers MEMBER...": one per rank, in rank order; "-" for a rank under
 * another leaf (two levels).  A PS needs every rank's IP:PORT.
 */
static int jd_workers(struct jd *c)
{
	struct esa_jobdesc *d = c->d;
	bool ps = c->flags & ESA_JD_PS;
	char why[128];
	int rc;

	while (jd_next_member(c)) {
		const char *w = c->argv[c->i];
		__u32 r = d->nranks;

		if (r == ESA_MAX_WORKERS)
			return jd_fail(c, "a job has at most %d workers", ESA_MAX_WORKERS);
		d->nranks++;
		if (!strcmp(w, "-") && !ps)
			continue;
		rc = jd_member(w, ps, c->flags, &d->j.rank[r], &d->pl[r], why, sizeof(why));
		if (rc == -EDESTADDRREQ && ps)
			return jd_fail(c, "worker %u \"%s\" is not IP:PORT (the PS sends it results and FETCHes)",
				       r, w);
		if (rc)
			return jd_fail(c, "worker %u: %s", r, why);
	}
	return 0;
}

/*
 * At a spine (two levels): "leaves MEMBER=RANKS...", each leaf's address
 * (its service address; port 7680 by default) and the ranks under it
 * ("0-3,8"); the leaf is the member at its lowest rank.
 */
static int jd_leaves(struct jd *c)
{
	struct esa_jobdesc *d = c->d;
	char why[128], word[128], *eq;
	struct esa_addr a;
	__u64 set;
	__u32 r;

	if (c->flags & ESA_JD_PS)
		return jd_fail(c, "\"leaves\" is a spine's word: the PS needs \"workers IP:PORT...\"");
	while (jd_next_member(c)) {
		const char *w = c->argv[c->i];

		snprintf(word, sizeof(word), "%s", w);
		eq = strchr(word, '=');
		if (!eq || esa_parse_ranks(eq + 1, &set))
			return jd_fail(c, "leaf \"%s\" is not ADDR[:PORT][@DEV[/MAC]]=RANKS (e.g. 10.255.1.1=0-3)",
				       w);
		*eq = 0;
		r = esa_lowest_rank(set);
		if (jd_member(word, false, c->flags, &a, &d->pl[r], why, sizeof(why)))
			return jd_fail(c, "leaf %s: %s", word, why);
		if (d->j.rank[r].ip)
			return jd_fail(c, "leaf %s: rank %u has a member already", word, r);
		if (!a.port)
			a.port = htons(ESA_DEFAULT_PORT);
		d->j.rank[r] = a;
		d->j.set[r] = set;
		r = 64 - __builtin_clzll(set);
		if (r > d->nranks)
			d->nranks = r;
	}
	return 0;
}

/* "ps IP:PORT[@DEV[/MAC]]" or a leaf's "upstream IP[:PORT][@DEV[/MAC]]". */
static int jd_one_member(struct jd *c, int word)
{
	struct esa_jobdesc *d = c->d;
	bool ps = word == JW_PS;
	char why[128];

	if (c->i + 1 >= c->argc)
		return jd_fail(c, "\"%s\" needs a value", c->argv[c->i]);
	c->i++;
	if (jd_member(c->argv[c->i], ps, c->flags, ps ? &d->j.ps : &d->j.up,
		      &d->pl[ps ? ESA_PLACE_PS : ESA_PLACE_UP], why, sizeof(why)))
		return jd_fail(c, "%s: %s", ps ? "ps" : "upstream", why);
	if (!ps && !d->j.up.port)
		d->j.up.port = htons(ESA_DEFAULT_PORT);
	c->have_ps |= ps;
	return 0;
}

/* A word with numbers (ranks, max-prio, lease, region), with them. */
static int jd_numbers(struct jd *c, int word)
{
	struct esa_job *j = &c->d->j;
	int need = word == JW_REGION ? 3 : 2;
	char **v = c->argv + c->i;
	__u32 n;

	if (c->argc - c->i < need && word == JW_REGION)
		return jd_fail(c, "region needs BASE SIZE or auto SIZE");
	if (c->argc - c->i < need)
		return jd_fail(c, "\"%s\" needs a value", v[0]);
	c->i += need - 1;
	switch (word) {
	case JW_RANKS:
		return jd_num(c, "ranks", v[1], ESA_MAX_WORKERS, &c->ranks);
	case JW_MAX_PRIO:
		if (jd_num(c, "max-prio", v[1], 255, &n))
			return -1;
		j->max_prio = n;
		return 0;
	case JW_LEASE:
		return jd_num(c, "lease", v[1], 24 * 3600 * 1000, &j->lease_ms);
	}
	c->d->auto_region = !strcmp(v[1], "auto");
	if (!c->d->auto_region && jd_num(c, "region base", v[1], ~0u, &j->region_base))
		return -1;
	return jd_num(c, "region size", v[2], ~0u, &j->region_size);
}

/* What the words add up to. */
static int jd_finish(struct jd *c)
{
	struct esa_jobdesc *d = c->d;

	if (!c->have_ps)
		return jd_fail(c, "the job needs \"ps IP:PORT\"");
	if (!d->nranks)
		return jd_fail(c, "the job needs \"workers ADDR...\" (or, at a spine, \"leaves\")");
	if (c->ranks && c->ranks < d->nranks)
		return jd_fail(c, "ranks %u: the workers and leaves name %u", c->ranks, d->nranks);
	if (d->auto_region && !d->j.region_size)
		return jd_fail(c, "region auto needs a size of at least 1");
	d->j.nworkers = c->ranks ? c->ranks : d->nranks;
	return 0;
}

int esa_jobdesc_parse(int argc, char **argv, unsigned int flags,
		      struct esa_jobdesc *d, char *why, size_t len)
{
	struct jd c = { .argc = argc, .argv = argv, .flags = flags, .d = d,
			.why = why, .len = len };
	int word, rc;

	memset(d, 0, sizeof(*d));
	d->j.max_prio = 255;
	if (argc < 1)
		return jd_fail(&c, "needs a job id");
	if (jd_num(&c, "job id", argv[0], 65535, &d->id))
		return -1;
	for (c.i = 1; c.i < argc; c.i++) {
		if ((flags & ESA_JD_MANY) && !strcmp(argv[c.i], "job"))
			break;
		word = jd_word(argv[c.i], true);
		if (word < 0)
			return jd_fail(&c, "unknown word \"%s\"", argv[c.i]);
		if (word == JW_WORKERS)
			rc = jd_workers(&c);
		else if (word == JW_LEAVES)
			rc = jd_leaves(&c);
		else if (word == JW_PS || word == JW_UPSTREAM)
			rc = jd_one_member(&c, word);
		else
			rc = jd_numbers(&c, word);
		if (rc)
			return -1;
	}
	return jd_finish(&c) ? -1 : c.i;
}

int esa_jobdesc_parse_line(const char *line, unsigned int flags,
			   struct esa_jobdesc *d, char *why, size_t len)
{
	char *buf = strdup(line), *argv[256], *save = NULL, *t;
	int argc = 0, rc;

	if (!buf)
		return snprintf(why, len, "out of memory"), -1;
	for (t = strtok_r(buf, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
		if (argc == 256) {
			free(buf);
			return snprintf(why, len, "more than 256 words"), -1;
		}
		argv[argc++] = t;
	}
	rc = esa_jobdesc_parse(argc, argv, flags, d, why, len);
	free(buf);
	return rc;
}

/* Appends to a buffer, remembering whether it overflowed. */
struct jd_out {
	char	*p;
	size_t	len, n;
};

static void jd_put(struct jd_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jd_put(struct jd_out *o, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(o->p + (o->n < o->len ? o->n : o->len),
		      o->n < o->len ? o->len - o->n : 0, fmt, ap);
	va_end(ap);
	o->n += k > 0 ? k : 0;
}

/* A member's words: its address and the place given. */
static void jd_put_member(struct jd_out *o, const struct esa_addr *a, const struct esa_place *p)
{
	char ip[INET_ADDRSTRLEN], dev[IF_NAMESIZE];

	inet_ntop(AF_INET, &a->ip, ip, sizeof(ip));
	jd_put(o, " %s", ip);
	if (a->port)
		jd_put(o, ":%u", ntohs(a->port));
	if (!p->ifindex || !if_indextoname(p->ifindex, dev))
		return;
	jd_put(o, "@%s", dev);
	if (p->have_mac)
		jd_put(o, "/%02x:%02x:%02x:%02x:%02x:%02x", p->mac[0], p->mac[1],
		       p->mac[2], p->mac[3], p->mac[4], p->mac[5]);
}

int esa_jobdesc_format(const struct esa_jobdesc *d, char *buf, size_t len)
{
	const struct esa_job *j = &d->j;
	struct jd_out o = { .p = buf, .len = len };
	bool leaves = false;
	char set[192];

	for (__u32 r = 0; r < d->nranks && r < ESA_MAX_WORKERS; r++)
		leaves |= j->set[r] != 0;
	jd_put(&o, "%u ps", d->id);
	jd_put_member(&o, &j->ps, &d->pl[ESA_PLACE_PS]);
	jd_put(&o, leaves ? " leaves" : " workers");
	for (__u32 r = 0; r < d->nranks && r < ESA_MAX_WORKERS; r++) {
		if (!j->rank[r].ip) {
			if (!leaves)
				jd_put(&o, " -");
			continue;
		}
		jd_put_member(&o, &j->rank[r], &d->pl[r]);
		if (leaves)
			jd_put(&o, "=%s", esa_fmt_ranks(j->set[r], set));
	}
	if (j->up.ip) {
		jd_put(&o, " upstream");
		jd_put_member(&o, &j->up, &d->pl[ESA_PLACE_UP]);
	}
	if (j->nworkers != d->nranks)
		jd_put(&o, " ranks %u", j->nworkers);
	jd_put(&o, " max-prio %u", j->max_prio);
	if (j->lease_ms)
		jd_put(&o, " lease %u", j->lease_ms);
	if (d->auto_region)
		jd_put(&o, " region auto %u", j->region_size);
	else if (j->region_size)
		jd_put(&o, " region %u %u", j->region_base, j->region_size);
	return o.n < len ? 0 : -ENOSPC;
}
