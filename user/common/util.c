// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <net/if.h>

#include "words.h"
#include "util.h"

int parse_u32(const char *s, __u32 max, __u32 *out)
{
	return esa_parse_u32(s, max, out);
}

int parse_addr(const char *s, struct esa_addr *a, bool need_port)
{
	struct esa_addr n = {};

	if (esa_parse_ipport(s, need_port ? ESA_ADDR_NEED_PORT : 0, 0, &n.ip, &n.port))
		return -EINVAL;
	*a = n;
	return 0;
}

int parse_mac(const char *s, __u8 mac[6])
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

int parse_member(const char *s, struct esa_addr *a, bool need_port,
		 struct esa_place *w, char *why, size_t len)
{
	char buf[96], *at, *slash;

	memset(w, 0, sizeof(*w));
	if (strlen(s) >= sizeof(buf))
		return snprintf(why, len, "\"%s\" is too long", s), -EINVAL;
	strcpy(buf, s);
	at = strchr(buf, '@');
	if (at)
		*at++ = 0;
	if (parse_addr(buf, a, need_port))
		return snprintf(why, len, "\"%s\" is not IP%s", buf,
				need_port ? ":PORT" : "[:PORT]"), -EINVAL;
	if (!at)
		return 0;
	slash = strchr(at, '/');
	if (slash) {
		*slash++ = 0;
		if (parse_mac(slash, w->mac))
			return snprintf(why, len, "\"%s\" is not a MAC address",
					slash), -EINVAL;
		w->have_mac = true;
	}
	w->ifindex = if_nametoindex(at);
	if (!w->ifindex)
		return snprintf(why, len, "no port \"%s\" here", at), -ENODEV;
	return 0;
}

int parse_ranks(const char *s, __u64 *set)
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

const char *fmt_ranks(__u64 set, char *buf)
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

const char *fmt_mac(const __u8 mac[6], char *buf)
{
	sprintf(buf, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2],
		mac[3], mac[4], mac[5]);
	return buf;
}

const char *fmt_addr(const struct esa_addr *a, char *buf)
{
	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &a->ip, ip, sizeof(ip));
	if (a->port)
		sprintf(buf, "%s:%u", ip, ntohs(a->port));
	else
		sprintf(buf, "%s", ip);
	return buf;
}

bool matches(const char *w, const char *k)
{
	size_t n = strlen(w);

	return n && n <= strlen(k) && !strncmp(w, k, n);
}
