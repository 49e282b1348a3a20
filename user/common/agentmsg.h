/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The messages of esa-agent's protocol (docs/agent.md), for the agent and
 * esa-ps (the ranks' side is user/python/esa/agent.py): one UDP datagram
 * each, lines of text
 *
 *   esa-agent 1 TYPE
 *   KEY VALUE            (at most ESA_AMSG_FIELDS, each key once)
 *   ...
 *   mac HEX              (HMAC-SHA256 of every byte before this line)
 *
 * with the shared key of the key file.  Requests carry ts (the sender's
 * clock, ms since 1970) and nonce (32 hex digits); every reply carries the
 * nonce of the request it answers.
 */
#ifndef ESA_AGENTMSG_H
#define ESA_AGENTMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "sha256.h"

#define ESA_AGENT_PORT		7681
#define ESA_AMSG_MAX		4096	/* bytes of a datagram, at most */
#define ESA_AMSG_FIELDS		32
#define ESA_AMSG_KEY_MIN	16	/* bytes of key, at least ... */
#define ESA_AMSG_KEY_MAX	64	/* ... and at most */
#define ESA_AMSG_NONCE_LEN	32	/* hex digits */

struct esa_amsg {
	char		buf[ESA_AMSG_MAX + 1];	/* the datagram, as built or received */
	size_t		len;
	char		cut[ESA_AMSG_MAX + 1];	/* parsed: a copy in pieces */
	size_t		signed_len;	/* parsed: the bytes the mac covers */
	char		type[16];
	int		n;
	const char	*key[ESA_AMSG_FIELDS], *val[ESA_AMSG_FIELDS];
	char		mac[2 * ESA_SHA256_LEN + 1];	/* parsed: as sent */
};

struct esa_akey {
	uint8_t		k[ESA_AMSG_KEY_MAX];
	size_t		len;
};

/*
 * The key of file path: hex digits (16 to 64 bytes of key), blanks around.
 * The file must not be open to group or others.  -1 with the reason.
 */
int esa_akey_load(const char *path, struct esa_akey *key, char *why, size_t len);

/* A message of type to build; fields added in order, then signed. */
void esa_amsg_init(struct esa_amsg *m, const char *type);
int esa_amsg_add(struct esa_amsg *m, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* ts (now) and a fresh nonce, which goes to nonce (33 bytes) if not NULL. */
int esa_amsg_stamp(struct esa_amsg *m, char *nonce);
/* The mac line: m->buf[0..m->len) is the datagram.  -EMSGSIZE if too long. */
int esa_amsg_sign(struct esa_amsg *m, const struct esa_akey *key);

/*
 * Read a datagram of len bytes (it may be longer than ESA_AMSG_MAX: then
 * -EMSGSIZE).  -EBADMSG: not a message of this protocol (why says what).
 */
int esa_amsg_parse(struct esa_amsg *m, const void *data, size_t len, char *why, size_t wlen);
/* Is the mac the key's?  Constant time. */
bool esa_amsg_verify(const struct esa_amsg *m, const struct esa_akey *key);
/* The value of key, or NULL. */
const char *esa_amsg_get(const struct esa_amsg *m, const char *key);
/* key's value as a number in 0..max: -ENOENT, -EINVAL, -ERANGE. */
int esa_amsg_u32(const struct esa_amsg *m, const char *key, uint32_t max, uint32_t *v);
/* Milliseconds since 1970, the clock ts is read against. */
uint64_t esa_amsg_now_ms(void);

#endif /* ESA_AGENTMSG_H */
