// SPDX-License-Identifier: GPL-2.0
/*
 * esactl - manage the ESA in-network aggregation switch.
 *
 *   esactl [ OPTIONS ] OBJECT { COMMAND | help }
 *
 * The grammar follows iproute2: objects and commands may be abbreviated,
 * every show command prints through one path that -j turns into JSON, and
 * every error is one line on stderr with a non-zero exit status.  -batch
 * runs a file of commands (the switch's unit does), -n enters a network
 * namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
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
#include "esa_version.h"

const char *pin_dir = ESA_PIN_DIR;
static bool json, pretty;
/* "FILE:LINE: " of the batch command running, "" otherwise. */
static char batch_at[320];

int fail(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "esactl: %s", batch_at);
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

/* On request (-h, help) on stdout, status 0; for a missing object on
 * stderr, status 2 (esactl(8), EXIT STATUS). */
static int usage(FILE *f)
{
	fprintf(f,
		"Usage: esactl [ OPTIONS ] OBJECT { COMMAND | help }\n"
		"       esactl [ OPTIONS ] -b[atch] FILE\n"
		"where  OBJECT := { prog | dev | job | stats | pool | monitor | status }\n"
		"       OPTIONS := { -j[son] | -p[retty] | -v[erbose] | -d[ir] PINDIR |\n"
		"                    -n[etns] NAME | -V[ersion] | -h[elp] }\n");
	return f == stdout ? 0 : 2;
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

/* One command: OBJECT COMMAND ARGS. */
static int run(int argc, char **argv)
{
	int rc;

	out_init(json, pretty);
	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++) {
		if (matches(*argv, objects[i].name)) {
			rc = objects[i].fn(argc - 1, argv + 1);
			out_finish();
			return rc;
		}
	}
	if (matches(*argv, "help"))
		return usage(stdout);
	return fail("unknown object \"%s\"; try 'esactl help'", *argv);
}

/*
 * -batch FILE ("-": standard input): one command a line, words split at
 * blanks, '#' to the end of a line a comment.  The first that fails stops
 * the batch; its error names the file and line.
 */
static int run_batch(const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	char *line = NULL, *argv[256], *save;
	size_t cap = 0;
	int lineno = 0, rc = 0;

	if (!f)
		return fail("cannot open batch file %s: %s", path, strerror(errno));
	while (!rc && getline(&line, &cap, f) > 0) {
		int argc = 0;

		lineno++;
		snprintf(batch_at, sizeof(batch_at), "%s:%d: ", path, lineno);
		line[strcspn(line, "#")] = 0;
		for (char *w = strtok_r(line, " \t\r\n", &save); w && !rc;
		     w = strtok_r(NULL, " \t\r\n", &save))
			rc = argc < 255 ? (argv[argc++] = w, 0) : fail("more than 255 words");
		argv[argc] = NULL;
		if (!rc && argc)
			rc = run(argc, argv);
	}
	batch_at[0] = 0;
	free(line);
	if (f != stdin)
		fclose(f);
	return rc;
}

/*
 * -n NAME: the network namespace of `ip netns add NAME` (or a path), its
 * net namespace alone, as nsenter --net does: unlike `ip netns exec`, no
 * new mount namespace, so /sys/fs/bpf stays the host's and the pins seen.
 */
static int enter_netns(const char *name)
{
	char path[4096];
	int fd, rc;

	snprintf(path, sizeof(path), strchr(name, '/') ? "%s" : "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail("cannot open network namespace \"%s\": %s", name, strerror(errno));
	rc = setns(fd, CLONE_NEWNET);
	close(fd);
	if (rc)
		return fail("cannot enter network namespace \"%s\": %s", name, strerror(errno));
	return 0;
}

int main(int argc, char **argv)
{
	const char *batch = NULL;

	/* Options come before the object, as in ip(8). */
	for (argc--, argv++; argc > 0 && argv[0][0] == '-'; argc--, argv++) {
		const char *o = argv[0] + 1 + (argv[0][1] == '-');

		if (matches(o, "json")) {
			json = true;
		} else if (matches(o, "pretty")) {
			pretty = true;
		} else if (matches(o, "verbose")) {
			esa_set_verbose(1);
		} else if (matches(o, "dir") || matches(o, "netns") || matches(o, "batch")) {
			if (argc < 2)
				return fail("%s needs a%s", argv[0], *o == 'd' ? " directory" :
					    *o == 'n' ? " namespace name" : " file");
			if (*o == 'd')
				pin_dir = argv[1];
			else if (*o == 'b')
				batch = argv[1];
			else if (enter_netns(argv[1]))
				return 1;
			argc--, argv++;
		} else if (matches(o, "Version") || !strcmp(o, "version")) {
			esa_print_version("esactl");
			return 0;
		} else if (matches(o, "help")) {
			return usage(stdout);
		} else {
			return fail("unknown option \"%s\"; try 'esactl -help'", *argv);
		}
	}
	if (batch)
		return argc ? fail("-batch takes no command (\"%s\")", *argv) : run_batch(batch);
	if (argc < 1)
		return usage(stderr);
	return run(argc, argv);
}
