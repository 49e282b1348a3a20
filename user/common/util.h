/* SPDX-License-Identifier: GPL-2.0 */
/* Parsing and formatting of command-line words: addresses, MACs, ranks. */
#ifndef ESA_UTIL_H
#define ESA_UTIL_H

#include <stdbool.h>
#include <linux/esa.h>
#include "place.h"

int parse_u32(const char *s, __u32 max, __u32 *out);
/* "IP" or "IP:PORT"; port required when need_port. */
int parse_addr(const char *s, struct esa_addr *a, bool need_port);
/* "aa:bb:cc:dd:ee:ff". */
int parse_mac(const char *s, __u8 mac[6]);
/*
 * A member of a job, "IP[:PORT][@DEV[/MAC]]": its address, and the switch
 * port it is behind and its MAC when given.  On error a reason in why.
 */
int parse_member(const char *s, struct esa_addr *a, bool need_port,
		 struct esa_place *w, char *why, size_t len);
/* A set of ranks, "0-3,5,8": bit r for rank r (0..63). */
int parse_ranks(const char *s, __u64 *set);
/* The same text of a set, in buf of >= 192 bytes. */
const char *fmt_ranks(__u64 set, char *buf);
/* "aa:bb:cc:dd:ee:ff" in buf of >= 18 bytes. */
const char *fmt_mac(const __u8 mac[6], char *buf);
/* "IP:PORT" (or "IP" when the port is 0), in buf of >= 24 bytes. */
const char *fmt_addr(const struct esa_addr *a, char *buf);
/* Does word w abbreviate (at least min characters of) keyword k? */
bool matches(const char *w, const char *k);

#endif /* ESA_UTIL_H */
