/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one parser of each kind of command-line word: numbers and
 * "IP[:PORT]" (a job's words: jobdesc.c).  Header-only: esactl and the tests
 * take them through util.c too, but libesa (config.c) links no object of
 * user/common, and esa-ps only the job parser and the agent's messages.  They say what is wrong by their code; each
 * caller names the word in its own message.
 */
#ifndef ESA_WORDS_H
#define ESA_WORDS_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/types.h>

/*
 * A number in 0..max, decimal, 0x hexadecimal or 0 octal: -EINVAL when s
 * is not one, -ERANGE when it is larger.
 */
static inline int esa_parse_u32(const char *s, __u32 max, __u32 *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return -EINVAL;
	if (v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* How a word is taken (flags of esa_parse_ipport()). */
#define ESA_ADDR_NEED_PORT	0x1	/* "IP:PORT" only */
#define ESA_ADDR_NO_PORT	0x2	/* "IP" only */
#define ESA_ADDR_ANY		0x4	/* 0.0.0.0 too (a wildcard, or unset) */

/*
 * "IP" or "IP:PORT" into *ip and *port, both in network order: the port
 * a number in 1..65535 (esa_parse_u32()), def_port when the word has none.
 * Nothing is written unless it parses; port may be NULL with
 * ESA_ADDR_NO_PORT.  -ERANGE: the port is not a number in 1..65535;
 * -EINVAL: anything else (not an IPv4 address, a port missing or not
 * wanted).
 */
static inline int esa_parse_ipport(const char *s, unsigned int flags, __u16 def_port,
				   __be32 *ip, __be16 *port)
{
	char buf[INET_ADDRSTRLEN];
	const char *colon;
	__u32 p = def_port;
	struct in_addr a;
	size_t len;

	if (!s)
		return -EINVAL;
	colon = strchr(s, ':');
	len = colon ? (size_t)(colon - s) : strlen(s);
	if (len >= sizeof(buf) || (colon && (flags & ESA_ADDR_NO_PORT)) ||
	    (!colon && (flags & ESA_ADDR_NEED_PORT)))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = 0;
	if (colon && (esa_parse_u32(colon + 1, 65535, &p) || !p))
		return -ERANGE;
	if (inet_pton(AF_INET, buf, &a) != 1 || (!a.s_addr && !(flags & ESA_ADDR_ANY)))
		return -EINVAL;
	*ip = a.s_addr;
	if (port)
		*port = htons(p);
	return 0;
}

/* The same into a struct sockaddr_in, zeroed first. */
static inline int esa_parse_sin(const char *s, unsigned int flags, __u16 def_port,
				struct sockaddr_in *sin)
{
	__be32 ip;
	__be16 port;
	int rc = esa_parse_ipport(s, flags, def_port, &ip, &port);

	if (rc)
		return rc;
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = ip;
	sin->sin_port = port;
	return 0;
}

#endif /* ESA_WORDS_H */
