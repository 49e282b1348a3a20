// SPDX-License-Identifier: GPL-2.0
/*
 * esactl - manage the ESA in-network aggregation switch.
 *
 *   esactl [ OPTIONS ] OBJECT { COMMAND | help }
 *
 * The grammar follows iproute2: objects and commands may be abbreviated,
 * every show command prints through one path that -j turns into JSON, and
 * every error is one line on stderr with a non-zero exit status.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include "esactl.h"

#define ESACTL_VERSION	"1.0"

const char *pin_dir = ESA_PIN_DIR;
static bool json, pretty;

int fail(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("esactl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

int bad_arg(const char *obj, const char *arg)
{
	return fail("unknown argument \"%s\" for %s; try 'esactl %.*s help'",
		    arg, obj, (int)strcspn(obj, " "), obj);
}

int open_switch(struct esa *e)
{
	char err[ESA_ERR_LEN];

	if (esa_open_pinned(e, pin_dir, err, sizeof(err)))
		return fail("%s", err);
	return 0;
}

int get_u32(const char *what, const char *s, __u32 max, __u32 *v)
{
	int rc = parse_u32(s, max, v);

	if (rc == -ERANGE)
		return fail("%s %s out of range (0..%u)", what, s, max);
	if (rc)
		return fail("%s \"%s\" is not a number", what, s);
	return 0;
}

int registry_open(struct esa_registry *r)
{
	return esa_registry_open(r, pin_dir) ? fail("%s", r->err) : 0;
}

int esactl_dispatch(const char *obj, const struct esactl_cmd *cmds,
		    int (*dflt)(int, char **), int (*usage)(void),
		    int argc, char **argv)
{
	if (argc < 1)
		return dflt(0, NULL);
	for (const struct esactl_cmd *c = cmds; c->name; c++)
		if (matches(*argv, c->name) || (c->alias && matches(*argv, c->alias)))
			return c->fn(argc - 1, argv + 1);
	if (matches(*argv, "help"))
		return usage();
	return bad_arg(obj, *argv);
}

static int usage(void)
{
	fprintf(stderr,
		"Usage: esactl [ OPTIONS ] OBJECT { COMMAND | help }\n"
		"where  OBJECT := { prog | dev | job | stats | pool | monitor | status }\n"
		"       OPTIONS := { -j[son] | -p[retty] | -v[erbose] | -d[ir] PINDIR |\n"
		"                    -V[ersion] | -h[elp] }\n");
	return 2;
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} objects[] = {
	{ "prog",	do_prog },
	{ "dev",	do_dev },
	{ "job",	do_job },
	{ "stats",	do_stats },
	{ "pool",	do_pool },
	{ "monitor",	do_monitor },
	{ "status",	do_status },
};

int main(int argc, char **argv)
{
	int rc;

	/* Options come before the object, as in ip(8). */
	for (argc--, argv++; argc > 0 && argv[0][0] == '-'; argc--, argv++) {
		const char *o = argv[0] + 1 + (argv[0][1] == '-');

		if (matches(o, "json")) {
			json = true;
		} else if (matches(o, "pretty")) {
			pretty = true;
		} else if (matches(o, "verbose")) {
			esa_set_verbose(1);
		} else if (matches(o, "dir")) {
			if (argc < 2)
				return fail("-dir needs a directory");
			pin_dir = *++argv;
			argc--;
		} else if (matches(o, "Version")) {
			printf("esactl %s (ESA wire protocol %d)\n", ESACTL_VERSION, ESA_VERSION);
			return 0;
		} else if (matches(o, "help")) {
			usage();
			return 0;
		} else {
			return fail("unknown option \"%s\"; try 'esactl -help'", *argv);
		}
	}
	if (argc < 1)
		return usage();
	out_init(json, pretty);
	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++) {
		if (matches(*argv, objects[i].name)) {
			rc = objects[i].fn(argc - 1, argv + 1);
			out_finish();
			return rc;
		}
	}
	if (matches(*argv, "help"))
		return usage();
	return fail("unknown object \"%s\"; try 'esactl help'", *argv);
}
