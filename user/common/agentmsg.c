// SPDX-License-Identifier: GPL-2.0
/*
 * esa-agent's messages (agentmsg.h): building and signing them, reading
 * and checking them, and the key file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "agentmsg.h"
#include "words.h"

#define MAGIC	"esa-agent 1 "

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void to_hex(const uint8_t *p, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = d[p[i] >> 4];
		out[2 * i + 1] = d[p[i] & 15];
	}
	out[2 * n] = 0;
}

int esa_akey_load(const char *path, struct esa_akey *key, char *why, size_t len)
{
	char text[4 * ESA_AMSG_KEY_MAX], *p;
	struct stat st;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return snprintf(why, len, "key file %s: %s", path, strerror(errno)), -1;
	if (fstat(fd, &st) || (st.st_mode & 077)) {
		close(fd);
		return snprintf(why, len, "key file %s is open to group or others (chmod 600 %s)",
				path, path), -1;
	}
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n < 0)
		return snprintf(why, len, "key file %s: %s", path, strerror(errno)), -1;
	text[n] = 0;
	p = text + strspn(text, " \t\r\n");
	for (key->len = 0; hexval(p[0]) >= 0 && hexval(p[1]) >= 0; p += 2) {
		if (key->len == ESA_AMSG_KEY_MAX)
			break;
		key->k[key->len++] = hexval(p[0]) << 4 | hexval(p[1]);
	}
	if (p[strspn(p, " \t\r\n")] || key->len < ESA_AMSG_KEY_MIN)
		return snprintf(why, len, "key file %s: not %d to %d bytes in hex digits "
				"(make one: esa-agent --new-key %s)", path, ESA_AMSG_KEY_MIN,
				ESA_AMSG_KEY_MAX, path), -1;
	return 0;
}

uint64_t esa_amsg_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

void esa_amsg_init(struct esa_amsg *m, const char *type)
{
	m->len = snprintf(m->buf, sizeof(m->buf), MAGIC "%s\n", type);
	snprintf(m->type, sizeof(m->type), "%s", type);
	m->n = 0;
	m->signed_len = 0;
}

int esa_amsg_add(struct esa_amsg *m, const char *key, const char *fmt, ...)
{
	size_t room = sizeof(m->buf) - m->len;
	va_list ap;
	int k;

	k = snprintf(m->buf + m->len, room, "%s ", key);
	if (k < 0 || (size_t)k >= room)
		return -EMSGSIZE;
	va_start(ap, fmt);
	k += vsnprintf(m->buf + m->len + k, room - k, fmt, ap);
	va_end(ap);
	if ((size_t)k + 1 >= room)
		return -EMSGSIZE;
	for (int i = 0; i < k; i++)	/* one line: nothing unprintable */
		if (m->buf[m->len + i] < 0x20 || m->buf[m->len + i] > 0x7e)
			m->buf[m->len + i] = '?';
	m->len += k;
	m->buf[m->len++] = '\n';
	m->buf[m->len] = 0;
	return 0;
}

int esa_amsg_stamp(struct esa_amsg *m, char *nonce)
{
	uint8_t r[ESA_AMSG_NONCE_LEN / 2];
	char hex[ESA_AMSG_NONCE_LEN + 1];

	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		return -EIO;
	to_hex(r, sizeof(r), hex);
	if (nonce)
		strcpy(nonce, hex);
	if (esa_amsg_add(m, "ts", "%llu", (unsigned long long)esa_amsg_now_ms()))
		return -EMSGSIZE;
	return esa_amsg_add(m, "nonce", "%s", hex);
}

int esa_amsg_sign(struct esa_amsg *m, const struct esa_akey *key)
{
	uint8_t mac[ESA_SHA256_LEN];
	char hex[2 * ESA_SHA256_LEN + 1];

	esa_hmac_sha256(key->k, key->len, m->buf, m->len, mac);
	to_hex(mac, sizeof(mac), hex);
	return esa_amsg_add(m, "mac", "%s", hex);
}

/* A key: 1 to 15 of [a-z-]. */
static bool good_key(const char *s, size_t n)
{
	if (!n || n > 15)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || s[i] == '-'))
			return false;
	return true;
}

/* The lines after the first: fields, then the mac line last. */
static int parse_fields(struct esa_amsg *m, char *p, char *end, char *why, size_t wlen)
{
	while (p < end) {
		char *nl = memchr(p, '\n', end - p), *sp = memchr(p, ' ', nl - p);

		if (!sp || !good_key(p, sp - p) || sp + 1 == nl)
			return snprintf(why, wlen, "a line is not \"KEY VALUE\""), -EBADMSG;
		*sp = 0;
		*nl = 0;
		if (!strcmp(p, "mac")) {
			if (nl + 1 != end || strlen(sp + 1) != 2 * ESA_SHA256_LEN)
				return snprintf(why, wlen, "the mac is not the last line of 64 hex digits"),
				       -EBADMSG;
			m->signed_len = p - m->cut;
			strcpy(m->mac, sp + 1);
			return 0;
		}
		if (esa_amsg_get(m, p))
			return snprintf(why, wlen, "field \"%s\" given twice", p), -EBADMSG;
		if (m->n == ESA_AMSG_FIELDS)
			return snprintf(why, wlen, "more than %d fields", ESA_AMSG_FIELDS), -EBADMSG;
		m->key[m->n] = p;
		m->val[m->n++] = sp + 1;
		p = nl + 1;
	}
	return snprintf(why, wlen, "no mac line"), -EBADMSG;
}

int esa_amsg_parse(struct esa_amsg *m, const void *data, size_t len, char *why, size_t wlen)
{
	char *p, *nl;

	m->n = 0;
	m->signed_len = 0;
	if (len > ESA_AMSG_MAX)
		return snprintf(why, wlen, "%zu bytes, more than %d", len, ESA_AMSG_MAX), -EMSGSIZE;
	memcpy(m->buf, data, len);
	m->buf[len] = 0;
	m->len = len;
	for (size_t i = 0; i < len; i++)
		if ((m->buf[i] < 0x20 || m->buf[i] > 0x7e) && m->buf[i] != '\n')
			return snprintf(why, wlen, "byte %zu is not printable text", i), -EBADMSG;
	if (!len || m->buf[len - 1] != '\n' || strncmp(m->buf, MAGIC, strlen(MAGIC)))
		return snprintf(why, wlen, "not \"%s\" and lines", MAGIC "TYPE"), -EBADMSG;
	memcpy(m->cut, m->buf, len + 1);
	p = m->cut + strlen(MAGIC);
	nl = strchr(p, '\n');
	if (!good_key(p, nl - p))
		return snprintf(why, wlen, "no type"), -EBADMSG;
	*nl = 0;
	strcpy(m->type, p);
	return parse_fields(m, nl + 1, m->cut + len, why, wlen);
}

bool esa_amsg_verify(const struct esa_amsg *m, const struct esa_akey *key)
{
	uint8_t mac[ESA_SHA256_LEN], got[ESA_SHA256_LEN];

	if (!m->signed_len)
		return false;
	for (int i = 0; i < ESA_SHA256_LEN; i++) {
		int hi = hexval(m->mac[2 * i]), lo = hexval(m->mac[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		got[i] = hi << 4 | lo;
	}
	esa_hmac_sha256(key->k, key->len, m->buf, m->signed_len, mac);
	return esa_mem_equal(mac, got, sizeof(mac));
}

const char *esa_amsg_get(const struct esa_amsg *m, const char *key)
{
	for (int i = 0; i < m->n; i++)
		if (!strcmp(m->key[i], key))
			return m->val[i];
	return NULL;
}

int esa_amsg_u32(const struct esa_amsg *m, const char *key, uint32_t max, uint32_t *v)
{
	const char *s = esa_amsg_get(m, key);

	if (!s)
		return -ENOENT;
	if (s[0] == '0' && s[1])
		return -EINVAL;		/* decimal only: no octal, no hex */
	return esa_parse_u32(s, max, v);
}
