// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

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
