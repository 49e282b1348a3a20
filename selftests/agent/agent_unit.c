// SPDX-License-Identifier: GPL-2.0
/*
 * esa-agent's messages without the agent (user/common/sha256.c and
 * agentmsg.c): SHA-256 against FIPS 180's examples, HMAC-SHA256 against
 * RFC 4231's test cases, and messages built, signed, read and checked,
 * with every way a datagram can fail to be one.  Prints TAP (suite
 * 70-agent, which also checks the C side against Python's hmac).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "../tap.h"
#include "agentmsg.h"

static const char *hex(const uint8_t *p, size_t n)
{
	static char out[129];

	for (size_t i = 0; i < n && i < 64; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	return out;
}

static void test_sha256(void)
{
	static const struct {
		const char *in, *out;
	} v[] = {
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
	};
	uint8_t d[ESA_SHA256_LEN];
	struct esa_sha256 s;
	char a[1001];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		esa_sha256(v[i].in, strlen(v[i].in), d);
		ok(!strcmp(hex(d, 32), v[i].out), "SHA-256 of \"%.12s\" (%zu bytes): FIPS 180's",
		   v[i].in, strlen(v[i].in));
	}
	memset(a, 'a', sizeof(a));
	esa_sha256_init(&s);
	for (int i = 0; i < 1000; i++)		/* a million 'a', in odd pieces too */
		esa_sha256_update(&s, a, i % 2 ? 999 : 1001);
	esa_sha256_final(&s, d);
	ok(!strcmp(hex(d, 32), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
	   "SHA-256 of a million 'a' fed in pieces of 999 and 1001");
}

static void test_hmac(void)
{
	uint8_t k20[20], kaa[131], dd[50], d[ESA_SHA256_LEN];
	static const char *big = "This is a test using a larger than block-size key and a larger "
				 "than block-size data. The key needs to be hashed before being used "
				 "by the HMAC algorithm.";

	memset(k20, 0x0b, sizeof(k20));
	esa_hmac_sha256(k20, 20, "Hi There", 8, d);
	ok(!strcmp(hex(d, 32), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
	   "HMAC-SHA256: RFC 4231 test case 1");
	esa_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d);
	ok(!strcmp(hex(d, 32), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
	   "HMAC-SHA256: RFC 4231 test case 2");
	memset(k20, 0xaa, sizeof(k20));
	memset(dd, 0xdd, sizeof(dd));
	esa_hmac_sha256(k20, 20, dd, 50, d);
	ok(!strcmp(hex(d, 32), "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
	   "HMAC-SHA256: RFC 4231 test case 3");
	memset(kaa, 0xaa, sizeof(kaa));
	esa_hmac_sha256(kaa, 131, "Test Using Larger Than Block-Size Key - Hash Key First", 54, d);
	ok(!strcmp(hex(d, 32), "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
	   "HMAC-SHA256: RFC 4231 test case 6 (a key longer than a block)");
	esa_hmac_sha256(kaa, 131, big, strlen(big), d);
	ok(!strcmp(hex(d, 32), "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
	   "HMAC-SHA256: RFC 4231 test case 7 (key and data longer than a block)");
}

static struct esa_amsg m, r;
static struct esa_akey key = { .len = 16 }, other = { .len = 16 };
static char why[200];

/* Parse text as a datagram: its error code. */
static int read_text(const char *text)
{
	return esa_amsg_parse(&r, text, strlen(text), why, sizeof(why));
}

static void test_messages(void)
{
	char nonce[ESA_AMSG_NONCE_LEN + 1], big[ESA_AMSG_MAX + 2];
	uint32_t v;

	memset(key.k, 7, 16);
	memset(other.k, 8, 16);
	esa_amsg_init(&m, "join");
	esa_amsg_stamp(&m, nonce);
	esa_amsg_add(&m, "world", "%d", 3);
	esa_amsg_add(&m, "why", "two words\nand a newline");
	ok(!esa_amsg_sign(&m, &key) && !esa_amsg_parse(&r, m.buf, m.len, why, sizeof(why)) &&
	   !strcmp(r.type, "join") && !strcmp(esa_amsg_get(&r, "nonce"), nonce) &&
	   !esa_amsg_u32(&r, "world", 64, &v) && v == 3 && esa_amsg_verify(&r, &key),
	   "a message built, signed, read back and verified");
	ok(!strcmp(esa_amsg_get(&r, "why"), "two words?and a newline"),
	   "a value stays one line (a newline in it becomes '?')");
	ok(!esa_amsg_verify(&r, &other), "another key's mac does not verify");
	m.buf[20] ^= 1;
	ok(!esa_amsg_parse(&r, m.buf, m.len, why, sizeof(why)) && !esa_amsg_verify(&r, &key),
	   "one bit changed: the mac does not verify");
	ok(esa_amsg_u32(&r, "nope", 10, &v) == -ENOENT, "a field not there: -ENOENT");
	ok(read_text("esa-agent 1 beat\nts 1\nmac 00\n") == -EBADMSG,
	   "a short mac: malformed (%s)", why);
	ok(read_text("esa-agent 1 beat\nts 1\n") == -EBADMSG, "no mac: malformed (%s)", why);
	ok(read_text("esa-agent 2 beat\nmac x\n") == -EBADMSG, "another version: malformed (%s)", why);
	ok(read_text("esa-agent 1 beat\nts 1\nts 2\nmac x\n") == -EBADMSG,
	   "a field twice: malformed (%s)", why);
	ok(read_text("esa-agent 1 beat\nts \x01\nmac x\n") == -EBADMSG,
	   "a control byte: malformed (%s)", why);
	ok(read_text("esa-agent 1 beat\nTS 1\nmac x\n") == -EBADMSG,
	   "a key not [a-z-]: malformed (%s)", why);
	ok(read_text("esa-agent 1 beat\nmac 0000000000000000000000000000000000000000000000000000000000000000\n"
		     "ts 1\n") == -EBADMSG, "a line after the mac: malformed (%s)", why);
	memset(big, 'a', sizeof(big));
	ok(esa_amsg_parse(&r, big, ESA_AMSG_MAX + 1, why, sizeof(why)) == -EMSGSIZE,
	   "%d bytes: too long (%s)", ESA_AMSG_MAX + 1, why);
	esa_amsg_init(&m, "beat");
	for (int i = 0; i < 33; i++) {
		char k[4] = { 'f', 'a' + i / 26, 'a' + i % 26, 0 };

		esa_amsg_add(&m, k, "%d", i);
	}
	ok(esa_amsg_parse(&r, m.buf, m.len, why, sizeof(why)) == -EBADMSG,
	   "more than %d fields: malformed (%s)", ESA_AMSG_FIELDS, why);
	esa_amsg_init(&m, "beat");
	esa_amsg_add(&m, "rank", "010");
	esa_amsg_sign(&m, &key);
	esa_amsg_parse(&r, m.buf, m.len, why, sizeof(why));
	ok(esa_amsg_u32(&r, "rank", 64, &v) == -EINVAL, "numbers are decimal: 010 refused");
}

static void test_key_file(void)
{
	char path[] = "/tmp/esa-agent-unit.XXXXXX";
	struct esa_akey k;
	int fd = mkstemp(path);

	ok(fd >= 0 && dprintf(fd, "  00112233445566778899aabbccddeeff0011\n") > 0,
	   "a key file written");
	fchmod(fd, 0644);
	ok(esa_akey_load(path, &k, why, sizeof(why)) && strstr(why, "chmod 600"),
	   "a key file others can read is refused (%s)", why);
	fchmod(fd, 0600);
	ok(!esa_akey_load(path, &k, why, sizeof(why)) && k.len == 18 && k.k[17] == 0x11,
	   "a key file of 18 bytes in hex, blanks around: read");
	ftruncate(fd, 0);
	lseek(fd, 0, SEEK_SET);
	dprintf(fd, "00112233\n");
	ok(esa_akey_load(path, &k, why, sizeof(why)) && strstr(why, "--new-key"),
	   "a key of 4 bytes is refused (%s)", why);
	close(fd);
	unlink(path);
}

int main(void)
{
	tap_start();
	test_sha256();
	test_hmac();
	test_messages();
	test_key_file();
	return tap_end();
}
