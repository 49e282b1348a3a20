// SPDX-License-Identifier: GPL-2.0
/*
 * The one output path of esactl's show commands (print.h): text through
 * the callers' printf formats, or with -j the same calls as JSON.
 */
#include <stdarg.h>
#include <stdio.h>

#include "print.h"

static struct {
	bool json, pretty;
	int depth;
	bool first[32];		/* no comma needed before the next item */
} o;

void out_init(bool json, bool pretty)
{
	o.json = json;
	o.pretty = pretty;
	o.depth = 0;
	o.first[0] = true;
}

bool out_is_json(void)
{
	return o.json;
}

static void out_indent(void)
{
	if (o.pretty) {
		putchar('\n');
		for (int i = 0; i < o.depth; i++)
			fputs("  ", stdout);
	}
}

static void out_json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* Comma, indentation and key of the next JSON item. */
static void out_key(const char *key)
{
	if (!o.first[o.depth])
		putchar(',');
	o.first[o.depth] = false;
	if (o.depth)
		out_indent();
	if (key && o.depth) {
		out_json_str(key);
		fputs(o.pretty ? ": " : ":", stdout);
	}
}

static void out_open(const char *key, char c)
{
	if (!o.json)
		return;
	out_key(key);
	putchar(c);
	if (o.depth < 31)
		o.depth++;
	o.first[o.depth] = true;
}

static void out_close(char c)
{
	if (!o.json)
		return;
	bool empty = o.first[o.depth];

	if (o.depth)
		o.depth--;
	if (!empty)
		out_indent();
	putchar(c);
	if (!o.depth)
		putchar('\n');
}

void out_obj_open(const char *key) { out_open(key, '{'); }
void out_obj_close(void) { out_close('}'); }
void out_arr_open(const char *key) { out_open(key, '['); }
void out_arr_close(void) { out_close(']'); }

void out_finish(void)
{
	fflush(stdout);
}

void out_str(const char *key, const char *fmt, const char *v)
{
	if (o.json) {
		out_key(key);
		out_json_str(v);
	} else if (fmt) {
		printf(fmt, v);
	}
}

void out_u64(const char *key, const char *fmt, unsigned long long v)
{
	if (o.json) {
		out_key(key);
		printf("%llu", v);
	} else if (fmt) {
		printf(fmt, v);
	}
}

void out_s64(const char *key, const char *fmt, long long v)
{
	if (o.json) {
		out_key(key);
		printf("%lld", v);
	} else if (fmt) {
		printf(fmt, v);
	}
}

void out_bool(const char *key, const char *fmt, bool v)
{
	if (o.json) {
		out_key(key);
		fputs(v ? "true" : "false", stdout);
	} else if (fmt) {
		printf(fmt, v ? "yes" : "no");
	}
}

void out_text(const char *fmt, ...)
{
	va_list ap;

	if (o.json)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}
