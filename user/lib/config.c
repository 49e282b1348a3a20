// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libesa: settings, from code or from a file of "key = value" lines. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "esa_int.h"
#include "words.h"
#include "esa_names.h"
#include "xsk.h"

static int cfail(esa_config *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int cfail(esa_config *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

esa_config *esa_config_new(void)
{
	esa_config *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->job = -1;
	c->rank = -1;
	c->workers = 0;
	c->values = ESA_DEFAULT_VALUES;
	c->window = 128;
	c->timeout_us = ESA_TIMEOUT_US_DEFAULT;
	c->timeout_max_ms = 200;
	c->give_up_ms = 60000;
	c->policy = ESA_PRIO_STATIC;
	c->prio = 0;
	c->prio_max = -1;
	c->quantum = 256;
	c->prio_steps = 1;
	c->float_block = 8;
	c->float_headroom = -1;
	c->rcvbuf = 4 << 20;
	c->io = ESA_IO_UDP;
	c->queue = 0;
	c->xdp_workers = 2;
	c->udp_gro = -1;	/* on, unless link_delay_us holds datagrams */
	return c;
}

void esa_config_free(esa_config *c)
{
	free(c);
}

const char *esa_config_error(const esa_config *c)
{
	return c ? c->err : "no config";
}

static int parse_long(const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	long long v;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtoll(s, &end, 0);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static const char *const io_names[] = {
	[ESA_IO_UDP] = "udp",
	[ESA_IO_XDP] = "xdp",
	[ESA_IO_AUTO] = "auto",
};

struct ikey {
	const char *name;
	size_t off;
	long long lo, hi;
};

#define IK(n, f, l, h) { n, offsetof(struct esa_config, f), l, h }
static const struct ikey ikeys[] = {
	IK("job", job, 0, 65535),
	IK("rank", rank, 0, ESA_MAX_WORKERS - 1),
	IK("workers", workers, 1, ESA_MAX_WORKERS),
	IK("values", values, ESA_VALUES_ALIGN, ESA_MAX_VALUES),
	IK("window", window, 1, ESA_WINDOW_MAX),
	IK("window_min", window_min, 0, ESA_WINDOW_MAX),
	IK("timeout_us", timeout_us, 50, 60000000),
	IK("timeout_max_ms", timeout_max_ms, 1, 600000),
	IK("give_up_ms", give_up_ms, 1, 86400000),
	IK("prio", prio, 0, 255),
	IK("prio_max", prio_max, 0, 255),
	IK("quantum", quantum, 1, 1 << 30),
	IK("prio_steps", prio_steps, 1, ESA_PRIO_STEPS_MAX),
	IK("float_block", float_block, 1, 1 << 20),
	IK("float_headroom", float_headroom, 0, 30),
	IK("rcvbuf", rcvbuf, 65536, 1 << 30),
	IK("queue", queue, 0, 1023),
	IK("xdp_workers", xdp_workers, 1, 64),
	IK("udp_gro", udp_gro, 0, 1),
	IK("link_delay_us", link_delay_us, 0, 1000000),
	IK("xsk_busy_poll", xsk_busy_poll, 0, 100000),
	IK("xsk_tx_budget", xsk_tx_budget, 0, ESA_XSK_TX_RING),
};

int esa_config_set(esa_config *c, const char *key, const char *value)
{
	long long v;

	if (!c)
		return -EINVAL;
	c->err[0] = 0;
	if (!key || !value)
		return cfail(c, "missing key or value");
	if (!strcmp(key, "switch")) {
		if (esa_parse_sin(value, ESA_ADDR_ANY, ESA_DEFAULT_PORT, &c->sw))
			return cfail(c, "switch \"%s\" is not IP[:PORT]", value);
		if (!c->sw.sin_addr.s_addr)
			return cfail(c, "switch \"%s\": 0.0.0.0 is no address to send to; give "
				     "the switch's service address (esactl prog load addr)", value);
		c->have_sw = true;
		return 0;
	}
	if (!strcmp(key, "local")) {
		if (esa_parse_sin(value, ESA_ADDR_NEED_PORT | ESA_ADDR_ANY, 0, &c->local))
			return cfail(c, "local \"%s\" is not IP:PORT", value);
		c->have_local = true;
		return 0;
	}
	if (!strcmp(key, "ps")) {
		if (esa_parse_sin(value, ESA_ADDR_NEED_PORT | ESA_ADDR_ANY, 0, &c->ps))
			return cfail(c, "ps \"%s\" is not IP:PORT", value);
		if (!c->ps.sin_addr.s_addr)
			return cfail(c, "ps \"%s\": 0.0.0.0 is no address to send to; give the "
				     "job's PS as registered at the switch", value);
		c->have_ps = true;
		return 0;
	}
	if (!strcmp(key, "netns")) {
		if (strlen(value) >= sizeof(c->netns))
			return cfail(c, "netns path too long");
		strcpy(c->netns, value);
		return 0;
	}
	if (!strcmp(key, "io")) {
		for (int i = 0; i < 3; i++) {
			if (!strcmp(value, io_names[i])) {
				c->io = i;
				return 0;
			}
		}
		return cfail(c, "io \"%s\": not udp, xdp or auto", value);
	}
	if (!strcmp(key, "ifname")) {
		if (!*value || strlen(value) >= sizeof(c->ifname) || strpbrk(value, "/: \t"))
			return cfail(c, "ifname \"%s\": not an interface name (1..%d characters, "
				     "no '/', ':' or blanks)", value, (int)sizeof(c->ifname) - 1);
		strcpy(c->ifname, value);
		return 0;
	}
	if (!strcmp(key, "priority")) {
		int p = esa_prio_parse(value);

		/* flat is the simulator's alone */
		if (p < 0 || p == ESA_PRIO_FLAT)
			return cfail(c, "priority \"%s\": not static, las or srsf", value);
		c->policy = p;
		return 0;
	}
	if (!strcmp(key, "total_chunks")) {
		if (parse_long(value, 0, 1LL << 62, &v))
			return cfail(c, "total_chunks \"%s\": not a number in 0..2^62", value);
		c->total_chunks = (uint64_t)v;
		return 0;
	}
	if (!strcmp(key, "run")) {
		if (parse_long(value, 0, UINT32_MAX, &v))
			return cfail(c, "run \"%s\": not a number in 0..%u", value, UINT32_MAX);
		c->run = (uint32_t)v;
		return 0;
	}
	if (!strcmp(key, "timeout_ms")) {
		if (parse_long(value, 1, 60000, &v))
			return cfail(c, "timeout_ms \"%s\": not a number in 1..60000", value);
		c->timeout_us = (int)v * 1000;
		return 0;
	}
	if (!strcmp(key, "float_headroom") && !strcmp(value, "auto")) {
		c->float_headroom = -1;
		return 0;
	}
	if (!strcmp(key, "window") && !parse_long(value, ESA_WINDOW_MAX + 1, INT32_MAX, &v))
		return cfail(c, "window %lld: more chunks in flight than the switch's tombstone "
			     "ring holds (at most %d)", v, ESA_WINDOW_MAX);
	if (!strcmp(key, "xsk_tx_budget") && !parse_long(value, 1, ESA_XSK_TX_BUDGET_MIN - 1, &v))
		return cfail(c, "xsk_tx_budget %lld: the kernel takes %d..%d frames a send call "
			     "(the TX ring's size), or 0 for its own (%d)", v, ESA_XSK_TX_BUDGET_MIN,
			     ESA_XSK_TX_RING, ESA_XSK_TX_BUDGET_MIN);
	if (!strcmp(key, "give_up_ms") && !parse_long(value, 0, 0, &v))
		return cfail(c, "give_up_ms 0: a worker would wait for ever; give a limit in ms "
			     "(1..86400000)");
	for (size_t i = 0; i < sizeof(ikeys) / sizeof(ikeys[0]); i++) {
		if (strcmp(key, ikeys[i].name))
			continue;
		if (parse_long(value, ikeys[i].lo, ikeys[i].hi, &v))
			return cfail(c, "%s \"%s\": not a number in %lld..%lld", key, value,
				     ikeys[i].lo, ikeys[i].hi);
		*(int *)((char *)c + ikeys[i].off) = (int)v;
		return 0;
	}
	return cfail(c, "unknown key \"%s\"", key);
}

int esa_config_set_int(esa_config *c, const char *key, long long value)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", value);
	return esa_config_set(c, key, buf);
}

static void fmt_sin(const struct sockaddr_in *s, bool have, char *buf, size_t len)
{
	char ip[INET_ADDRSTRLEN];

	if (!have) {
		snprintf(buf, len, "%s", "");
		return;
	}
	inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip));
	snprintf(buf, len, "%s:%u", ip, ntohs(s->sin_port));
}

int esa_config_get(const esa_config *c, const char *key, char *buf, size_t len)
{
	if (!c || !key || !buf || !len)
		return -EINVAL;
	if (!strcmp(key, "switch"))
		fmt_sin(&c->sw, c->have_sw, buf, len);
	else if (!strcmp(key, "local"))
		fmt_sin(&c->local, c->have_local, buf, len);
	else if (!strcmp(key, "ps"))
		fmt_sin(&c->ps, c->have_ps, buf, len);
	else if (!strcmp(key, "netns"))
		snprintf(buf, len, "%s", c->netns);
	else if (!strcmp(key, "priority"))
		snprintf(buf, len, "%s", esa_prio_name(c->policy));
	else if (!strcmp(key, "io"))
		snprintf(buf, len, "%s", io_names[c->io]);
	else if (!strcmp(key, "ifname"))
		snprintf(buf, len, "%s", c->ifname);
	else if (!strcmp(key, "run"))
		snprintf(buf, len, "%u", c->run);
	else if (!strcmp(key, "total_chunks"))
		snprintf(buf, len, "%llu", (unsigned long long)c->total_chunks);
	else if (!strcmp(key, "float_headroom") && c->float_headroom < 0)
		snprintf(buf, len, "auto");
	else if (!strcmp(key, "timeout_ms"))
		snprintf(buf, len, "%d", c->timeout_us / 1000);
	else if (!strcmp(key, "prio_max") && c->prio_max < 0)
		snprintf(buf, len, "%d", c->prio);
	else {
		for (size_t i = 0; i < sizeof(ikeys) / sizeof(ikeys[0]); i++) {
			if (!strcmp(key, ikeys[i].name)) {
				snprintf(buf, len, "%d", *(const int *)((const char *)c +
									ikeys[i].off));
				return 0;
			}
		}
		return -EINVAL;
	}
	return 0;
}

int esa_config_load(esa_config *c, const char *path)
{
	char line[512];
	int lineno = 0, rc = 0;
	FILE *f;

	if (!c || !path)
		return -EINVAL;
	f = fopen(path, "r");
	if (!f) {
		rc = -errno;
		snprintf(c->err, sizeof(c->err), "%s: %s", path, strerror(errno));
		return rc;
	}
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *key, *val, *eq, *end;

		lineno++;
		if (strchr(p, '#'))
			*strchr(p, '#') = 0;
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			continue;
		eq = strchr(p, '=');
		if (!eq) {
			snprintf(c->err, sizeof(c->err), "%s:%d: not \"key = value\"", path,
				 lineno);
			rc = -EINVAL;
			break;
		}
		*eq = 0;
		key = p;
		val = eq + 1;
		for (end = eq; end > key && isspace((unsigned char)end[-1]); end--)
			end[-1] = 0;
		while (isspace((unsigned char)*val))
			val++;
		for (end = val + strlen(val); end > val && isspace((unsigned char)end[-1]); end--)
			end[-1] = 0;
		rc = esa_config_set(c, key, val);
		if (rc) {
			char why[sizeof(c->err)];

			snprintf(why, sizeof(why), "%s", c->err);
			snprintf(c->err, sizeof(c->err), "%.60s:%d: %.180s", path, lineno, why);
			break;
		}
	}
	fclose(f);
	return rc;
}

int esa_config_check(const struct esa_config *c, char *err, size_t len)
{
	int pmax = c->prio_max < 0 ? c->prio : c->prio_max;

	if (!c->have_sw)
		return snprintf(err, len, "no switch address (switch = IP[:PORT])"), -EINVAL;
	if (!c->have_local)
		return snprintf(err, len, "no local address (local = IP:PORT)"), -EINVAL;
	if (!c->have_ps)
		return snprintf(err, len, "no PS address (ps = IP:PORT): results are taken only "
				"from the switch and the job's PS"), -EINVAL;
	/* AF_XDP writes the source itself: a wildcard would go out as 0.0.0.0 */
	if (c->io != ESA_IO_UDP && !c->local.sin_addr.s_addr)
		return snprintf(err, len, "local 0.0.0.0:%u with io=%s: AF_XDP sends from the "
				"address given, and the switch takes only the rank's registered "
				"one; give it", ntohs(c->local.sin_port), io_names[c->io]), -EINVAL;
	if (c->job < 0)
		return snprintf(err, len, "no job id (job = N)"), -EINVAL;
	if (c->workers < 1)
		return snprintf(err, len, "no number of workers (workers = N)"), -EINVAL;
	if (c->rank < 0 || c->rank >= c->workers)
		return snprintf(err, len, "rank %d not in 0..%d", c->rank, c->workers - 1),
		       -EINVAL;
	if (c->values % ESA_VALUES_ALIGN)
		return snprintf(err, len, "values %d is not a multiple of %d", c->values,
				ESA_VALUES_ALIGN), -EINVAL;
	if (c->prio > pmax)
		return snprintf(err, len, "prio %d above prio_max %d", c->prio, pmax), -EINVAL;
	if ((int64_t)c->timeout_max_ms * 1000 < c->timeout_us)
		return snprintf(err, len, "timeout_max_ms below timeout_us (timeout_ms)"), -EINVAL;
	if (c->window_min > c->window)
		return snprintf(err, len, "window_min %d above window %d (the window halves "
				"on contention down to window_min)", c->window_min, c->window),
		       -EINVAL;
	return 0;
}
