// SPDX-License-Identifier: GPL-2.0
/*
 * esa-ps's options (ps_daemon.h): the command line and the configuration
 * file's words, the same but for their dashes, and the jobs among them, read
 * by the one job parser (ps_parse_job()); --help; die(), which a reload's
 * parse turns into a return (soft_die) so that a bad file changes nothing.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ps_daemon.h"
#include "words.h"
#include "agentmsg.h"
#include "esa_version.h"

const char *prog = "esa-ps";
jmp_buf *soft_die;
char soft_err[320];

int die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (soft_die) {
		vsnprintf(soft_err, sizeof(soft_err), fmt, ap);
		va_end(ap);
		longjmp(*soft_die, 1);
	}
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: esa-ps [ OPTIONS ] [ job ID ps IP:PORT workers IP:PORT... ]...\n"
		"  -c, --config FILE      jobs and options from FILE (the same words,\n"
		"                         options without their dashes: \"switch IP\")\n"
		"  -s, --switch IP[:PORT] the switch's service address (port 7680), required:\n"
		"                         its packets are taken from it alone, policy atp's\n"
		"                         ACKs go to it; repeat it for two levels (every\n"
		"                         leaf and the spine; ACKs go to the one holding)\n"
		"      --values N         values per packet: the switch's (256)\n"
		"      --cache N          results kept per job (4096)\n"
		"      --pending N        unfinished chunks kept per job (1024): at least\n"
		"                         twice the largest window\n"
		"  -w, --window N         the largest window of the jobs' workers (default\n"
		"                         512, libesa's largest)\n"
		"      --io udp|xdp|auto  the transport (udp): xdp is AF_XDP (CAP_NET_ADMIN,\n"
		"                         CAP_BPF), auto is xdp if it can open, else udp\n"
		"      --ifname DEV       AF_XDP's interface (the route to --switch)\n"
		"      --queue N          AF_XDP's queue of it (0)\n"
		"      --sums switch|direct  a sum every worker needs: one SUM to the\n"
		"                         switch, which sends it to them (switch, the\n"
		"                         default, with one switch), or one RESULT to\n"
		"                         each worker from here (direct)\n"
		"      --link-delay-us N  testbeds: every datagram in and out waits N us\n"
		"                         (an emulated wire's propagation; UDP only)\n"
		"      --metrics IP:PORT  serve the counters to Prometheus: GET /metrics\n"
		"      --agent IP[:PORT]  learn jobs from esa-agent (port 7681), for the\n"
		"                         addresses of --ps; jobs it ends go\n"
		"      --key-file FILE    the key shared with esa-agent\n"
		"      --ps IP:PORT       a PS address to serve (jobs from the agent)\n"
		"  -i, --stats-interval S print the counters every S seconds\n"
		"  -j, --json             counters as JSON\n"
		"  -q, --quiet            no startup line\n"
		"  -v, --verbose          each job served, and what a reload changed\n"
		"  -V, --version          print the version\n"
		"Job words are esactl's: max-prio, lease, region, upstream and @DEV/MAC\n"
		"are accepted and ignored.  SIGUSR1 prints the counters; SIGINT/SIGTERM\n"
		"print them, exit; SIGHUP reads the jobs of -c FILE again (jobs kept keep\n"
		"their state).\n");
	exit(rc);
}

struct words {
	char	**w;
	int	n, cap;
};

static void words_add(struct words *ws, const char *s)
{
	if (ws->n == ws->cap) {
		ws->cap = ws->cap ? 2 * ws->cap : 64;
		ws->w = realloc(ws->w, ws->cap * sizeof(*ws->w));
		if (!ws->w)
			die("out of memory");
	}
	ws->w[ws->n++] = strdup(s);
}

static void read_config(const char *path, struct words *ws)
{
	char line[4096];
	FILE *f = fopen(path, "r");

	if (!f)
		die("%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *save, *t;

		if (strchr(line, '#'))
			*strchr(line, '#') = 0;
		for (t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save))
			words_add(ws, t);
	}
	fclose(f);
}

static void set_io(struct opts *o, const char *s)
{
	static const char *const names[] = { "udp", "xdp", "auto" };

	for (int i = 0; s && i < 3; i++) {
		if (!strcmp(s, names[i])) {
			o->io = i;
			return;
		}
	}
	die("io \"%s\": not udp, xdp or auto", s ? s : "");
}

static void set_ifname(struct opts *o, const char *s)
{
	if (!s || !*s || strlen(s) >= sizeof(o->ifname) || strpbrk(s, "/: \t"))
		die("ifname \"%s\": not an interface name (1..%d characters, no '/', ':' or "
		    "blanks)", s ? s : "", (int)sizeof(o->ifname) - 1);
	strcpy(o->ifname, s);
}

static int to_int(const char *what, const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s ? s : "", &end, 0);
	if (!s || !*s || *end || errno || v < lo || v > hi)
		die("%s \"%s\" is not a number in %ld..%ld", what, s ? s : "", lo, hi);
	return v;
}

/* A switch whose packets we take (repeatable: two levels' leaves and spine). */
static void set_switch(struct opts *o, const char *s)
{
	int rc;

	if (!s)
		die("switch needs IP[:PORT]");
	if (o->ps.nsw == PS_MAX_SWITCHES)
		die("switch %s: at most %d switches", s, PS_MAX_SWITCHES);
	rc = esa_parse_sin(s, ESA_ADDR_ANY, ESA_DEFAULT_PORT, &o->ps.sw[o->ps.nsw]);
	if (rc == -ERANGE)
		die("switch port \"%s\" is not a number in 1..65535", strchr(s, ':') + 1);
	if (rc)
		die("switch \"%s\" is not IP[:PORT]", s);
	if (!o->ps.sw[o->ps.nsw].sin_addr.s_addr)
		die("switch \"%s\": 0.0.0.0 is no address packets come from; give the switch's "
		    "service address (esactl prog load addr)", s);
	o->ps.nsw++;
}

/* Where esa-agent is, its key, and the PS addresses it gives jobs for. */
static void set_agent(struct opts *o, int which, const char *s)
{
	if (!s)
		die("%s needs a value", which == 'G' ? "agent" : which == 'K' ? "key-file" : "ps");
	if (which == 'G' && esa_parse_sin(s, 0, ESA_AGENT_PORT, &o->agent))
		die("agent \"%s\" is not IP[:PORT]", s);
	if (which == 'K' && strlen(s) >= sizeof(o->key_file))
		die("key-file: path too long");
	if (which == 'K')
		strcpy(o->key_file, s);
	if (which == 'B' && o->nserve == MAX_SOCKS)
		die("at most %d PS addresses", MAX_SOCKS);
	if (which == 'B' && esa_parse_sin(s, ESA_ADDR_NEED_PORT, 0, &o->serve[o->nserve++]))
		die("ps \"%s\" is not IP:PORT", s);
}

/* How the sums every worker needs leave: one SUM through the switch, or direct. */
static void set_sums(struct opts *o, const char *v)
{
	if (!v || (strcmp(v, "switch") && strcmp(v, "direct")))
		die("sums \"%s\": switch or direct", v ? v : "");
	o->ps.sums_via_switch = !strcmp(v, "switch");
}

/* An option word of the config file (without dashes). */
static int file_option(struct opts *o, char **w, int n)
{
	const char *k = w[0], *v = n > 1 ? w[1] : NULL;

	if (!strcmp(k, "switch"))
		set_switch(o, v);
	else if (!strcmp(k, "values"))
		o->ps.nvals = to_int("values", v, ESA_VALUES_ALIGN, ESA_MAX_VALUES);
	else if (!strcmp(k, "cache"))
		o->ps.cache = to_int("cache", v, 1, 1 << 24);
	else if (!strcmp(k, "pending"))
		o->ps.pending = to_int("pending", v, 1, 1 << 24);
	else if (!strcmp(k, "window"))
		o->ps.window = to_int("window", v, 1, 1 << 24);
	else if (!strcmp(k, "io"))
		set_io(o, v);
	else if (!strcmp(k, "ifname"))
		set_ifname(o, v);
	else if (!strcmp(k, "queue"))
		o->queue = to_int("queue", v, 0, 1023);
	else if (!strcmp(k, "sums"))
		set_sums(o, v);
	else if (!strcmp(k, "agent"))
		set_agent(o, 'G', v);
	else if (!strcmp(k, "key-file"))
		set_agent(o, 'K', v);
	else if (!strcmp(k, "ps"))
		set_agent(o, 'B', v);
	else if (!strcmp(k, "link-delay-us"))
		o->delay_us = to_int("link-delay-us", v, 0, 1000000);
	else if (!strcmp(k, "metrics") && v)
		o->metrics = strdup(v);		/* the file's words go */
	else
		die("unknown word \"%s\" (jobs start with \"job\")", k);
	return 2;
}

/*
 * -v was --values before it was --verbose: "-v 256" (or -v256) is refused
 * with what to write instead, rather than taken for a job word.
 */
static void old_values_option(int argc, char **argv)
{
	for (int i = 1; i < argc && argv[i][0] == '-' && argv[i][1] != '-'; i++) {
		/* a cluster of short options (-jv 256), up to one taking a value */
		for (const char *p = argv[i] + 1; *p; p++) {
			const char *v = p[1] ? p + 1 : i + 1 < argc ? argv[i + 1] : "";

			if (*p == 'v' && isdigit((unsigned char)*v))
				die("-v %s: -v is --verbose now; values per packet are "
				    "--values %s", v, v);
			if (strchr("cswi", *p)) {
				i += !p[1];	/* its value is the next word */
				break;
			}
		}
	}
}

/* The options and jobs of the file and the command line. */
int parse_args(int argc, char **argv, struct opts *o, struct ps_job_cfg *jobs)
{
	static const struct option lo[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "switch", required_argument, NULL, 's' },
		{ "values", required_argument, NULL, 'A' },
		{ "metrics", required_argument, NULL, 'M' },
		{ "cache", required_argument, NULL, 'C' },
		{ "pending", required_argument, NULL, 'P' },
		{ "window", required_argument, NULL, 'w' },
		{ "stats-interval", required_argument, NULL, 'i' },
		{ "io", required_argument, NULL, 'I' },
		{ "ifname", required_argument, NULL, 'F' },
		{ "queue", required_argument, NULL, 'Q' },
		{ "sums", required_argument, NULL, 'S' },
		{ "link-delay-us", required_argument, NULL, 'D' },
		{ "agent", required_argument, NULL, 'G' },
		{ "key-file", required_argument, NULL, 'K' },
		{ "ps", required_argument, NULL, 'B' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct words file = { 0 }, cmd = { 0 };
	int njobs = 0, opt;
	char err[256];

	ps_opts_default(&o->ps);
	old_values_option(argc, argv);
	optind = 0;	/* again from the start: reload() parses anew */
	while ((opt = getopt_long(argc, argv, "+c:s:w:i:jqvVh", lo, NULL)) != -1) {
		switch (opt) {
		case 'c': read_config(optarg, &file); break;
		case 's': set_switch(o, optarg); break;
		case 'A': o->ps.nvals = to_int("values", optarg, ESA_VALUES_ALIGN, ESA_MAX_VALUES); break;
		case 'M': o->metrics = optarg; break;
		case 'C': o->ps.cache = to_int("cache", optarg, 1, 1 << 24); break;
		case 'P': o->ps.pending = to_int("pending", optarg, 1, 1 << 24); break;
		case 'w': o->ps.window = to_int("window", optarg, 1, 1 << 24); break;
		case 'i': o->interval = to_int("stats-interval", optarg, 1, 86400); break;
		case 'I': set_io(o, optarg); break;
		case 'F': set_ifname(o, optarg); break;
		case 'Q': o->queue = to_int("queue", optarg, 0, 1023); break;
		case 'S': set_sums(o, optarg); break;
		case 'D': o->delay_us = to_int("link-delay-us", optarg, 0, 1000000); break;
		case 'G': case 'K': case 'B': set_agent(o, opt, optarg); break;
		case 'j': o->json = true; break;
		case 'q': o->quiet = true; break;
		case 'v': o->verbose = true; break;
		case 'V': esa_print_version(prog); exit(0);
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (o->ps.nvals % ESA_VALUES_ALIGN)
		die("values must be a multiple of %d", ESA_VALUES_ALIGN);
	for (int i = optind; i < argc; i++)
		words_add(&cmd, argv[i]);
	/* The file's options, then every job of the file and the command line. */
	for (struct words *ws = &file; ws; ws = ws == &file ? &cmd : NULL) {
		for (int i = 0; i < ws->n;) {
			int used;

			if (strcmp(ws->w[i], "job")) {
				if (ws == &cmd)
					die("unknown argument \"%s\" (jobs start with \"job\")",
					    ws->w[i]);
				i += file_option(o, ws->w + i, ws->n - i);
				continue;
			}
			if (njobs == 256)
				die("at most 256 jobs");
			used = ps_parse_job(ws->n - i, ws->w + i, &jobs[njobs], err, sizeof(err));
			if (used < 0)
				die("%s", err);
			njobs++;
			i += used;
		}
	}
	for (struct words *ws = &file; ws; ws = ws == &file ? &cmd : NULL) {
		for (int i = 0; i < ws->n; i++)
			free(ws->w[i]);
		free(ws->w);
	}
	if (o->agent.sin_port && (!o->key_file[0] || !o->nserve))
		die("agent needs key-file FILE and ps IP:PORT (the address it gives jobs for)");
	if (!njobs && !o->agent.sin_port)
		die("no jobs (try esa-ps --help)");
	if (ps_check_opts(&o->ps, err, sizeof(err)))
		die("%s", err);
	return njobs;
}
