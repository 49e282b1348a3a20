/* SPDX-License-Identifier: GPL-2.0 */
/* Command-line words: numbers, addresses, MACs (a job's: jobdesc.h). */
#ifndef ESA_UTIL_H
#define ESA_UTIL_H

#include <stdbool.h>
#include <linux/esa.h>

int parse_u32(const char *s, __u32 max, __u32 *out);
/* "IP" or "IP:PORT"; port required when need_port. */
int parse_addr(const char *s, struct esa_addr *a, bool need_port);
/* "aa:bb:cc:dd:ee:ff" in buf of >= 18 bytes. */
const char *fmt_mac(const __u8 mac[6], char *buf);
/* "IP:PORT" (or "IP" when the port is 0), in buf of >= 24 bytes. */
const char *fmt_addr(const struct esa_addr *a, char *buf);
/* Does word w abbreviate (at least min characters of) keyword k? */
bool matches(const char *w, const char *k);

#endif /* ESA_UTIL_H */
