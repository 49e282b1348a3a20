/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), self-contained: what
 * esa-agent's requests are signed with (docs/agent.md), for the agent and
 * esa-ps without a crypto library.  Tested against the FIPS and RFC 4231
 * vectors (selftests/agent/agent_unit.c) and against Python's hmac.
 */
#ifndef ESA_SHA256_H
#define ESA_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define ESA_SHA256_LEN	32

struct esa_sha256 {
	uint32_t	h[8];
	uint64_t	bytes;		/* hashed so far */
	uint8_t		buf[64];	/* a block not yet full */
	size_t		n;
};

void esa_sha256_init(struct esa_sha256 *s);
void esa_sha256_update(struct esa_sha256 *s, const void *p, size_t n);
void esa_sha256_final(struct esa_sha256 *s, uint8_t out[ESA_SHA256_LEN]);
void esa_sha256(const void *p, size_t n, uint8_t out[ESA_SHA256_LEN]);
void esa_hmac_sha256(const void *key, size_t klen, const void *msg, size_t n,
		     uint8_t out[ESA_SHA256_LEN]);
/* a and b equal, in time that does not depend on where they differ. */
int esa_mem_equal(const void *a, const void *b, size_t n);

#endif /* ESA_SHA256_H */
