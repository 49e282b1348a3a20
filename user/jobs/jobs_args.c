// SPDX-License-Identifier: GPL-2.0
/*
 * esa-jobs's options and its jobs' words (jobs.h): every job's libesa
 * settings are checked with libesa here, before any worker runs, and what
 * the checks of the results need (values, float_block, float_headroom) is
 * read back from it.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs.h"
#include "esa_version.h"

const char *sw_addr;
int g_values = 256, g_iters = 3, g_dtype = 1, g_linger = -1;
size_t g_elems = 1 << 20;
uint64_t g_seed = 1;
bool g_progress, g_json, g_quiet, g_verbose;
const char *g_metrics;
int only_job = -1, only_rank = -1;
const char *g_stop_file;

void die(const char *fmt, ...)
{
	va_list ap;

	fputs("esa-jobs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: esa-jobs -s SWITCH[:PORT] [ OPTIONS ] JOB...\n"
		"  JOB := job ID ps=IP:PORT [ KEY=VALUE... ] worker [ netns=PATH ] [ switch=IP ]\n"
		"         IP:PORT [ worker ... ]   (ps: the job's PS, as registered at the switch;\n"
		"         switch: this worker's, e.g. its leaf with two levels)\n"
		"  -s, --switch ADDR   the switch's service address (workers without switch=)\n"
		"      --values N      values per packet (256)\n"
		"  -n, --elems N       elements per tensor (1048576); per job: elems=N\n"
		"  -i, --iters N       allreduces per job (3); per job: iters=N\n"
		"  -t, --dtype T       f32 or i32 (f32); per job: dtype=T\n"
		"      --seed N        tensors' seed (1)\n"
		"      --only JOB:RANK run that worker only (its peers run elsewhere)\n"
		"      --linger MS     serve the PS this long after finishing (default\n"
		"                      1000, with --only 3000)\n"
		"      --stop-file PATH  once PATH exists, each job ends after the iteration\n"
		"                      its furthest worker is in (every result checked, the\n"
		"                      report written); -i is then the most (not with --only)\n"
		"  -p, --progress      progress on stderr while running\n"
		"  -j, --json          report as JSON\n"
		"  -q, --quiet         no report table\n"
		"  -v, --verbose       each worker's transport as it opens\n"
		"      --metrics-file PATH  the workers' counters in Prometheus's text\n"
		"                      format, written there (atomically) at the end\n"
		"  -V, --version       print the version\n"
		"Other KEY=VALUE words are libesa settings (docs/library.md): window,\n"
		"priority, prio, prio_max, timeout_ms, give_up_ms, float_block, run, ...\n"
		"A job without run= gets a new run number each time, unless --only.\n"
		"Exit status 0 when every result of every job was right.\n");
	exit(rc);
}

static size_t to_size(const char *what, const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (*end == 'k' || *end == 'K')
		v *= 1024, end++;
	else if (*end == 'm' || *end == 'M')
		v *= 1024 * 1024, end++;
	if (*end || v < 0 || v > 1e10)
		die("%s \"%s\" is not a size", what, s);
	return (size_t)v;
}

static int dtype_of(const char *s)
{
	if (!strcmp(s, "f32") || !strcmp(s, "float32"))
		return ESA_FLOAT32;
	if (!strcmp(s, "i32") || !strcmp(s, "int32"))
		return ESA_INT32;
	die("dtype \"%s\": f32 or i32", s);
}

/*
 * KEY=VALUE into copies: writing a NUL into argv while another worker's
 * thread reads the same word made strchr() miss the '=' (a crash, 30-hosts).
 */
static void split_kv(struct job *j, const char *word)
{
	const char *eq = strchr(word, '=');

	j->key[j->nkv] = strndup(word, eq - word);
	j->val[j->nkv] = strdup(eq + 1);
	if (!j->key[j->nkv] || !j->val[j->nkv])
		die("out of memory");
	j->nkv++;
}

int parse_jobs(int argc, char **argv)
{
	struct job *j = NULL;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "job")) {
			if (njobs == MAXJOBS)
				die("at most %d jobs", MAXJOBS);
			if (i + 1 >= argc)
				die("job needs an id");
			j = &jobs[njobs++];
			j->id = atoi(argv[++i]);
			j->elems = g_elems;
			j->iters = g_iters;
			j->dtype = g_dtype;
			continue;
		}
		if (!j)
			die("\"%s\": jobs start with \"job ID\"", argv[i]);
		if (!strcmp(argv[i], "worker")) {
			struct worker *w;

			if (j->n == MAXW)
				die("job %d: at most %d workers", j->id, MAXW);
			w = calloc(1, sizeof(*w));
			w->job = j;
			w->rank = j->n;
			j->w[j->n++] = w;
			if (i + 1 < argc && !strncmp(argv[i + 1], "netns=", 6))
				snprintf(w->netns, sizeof(w->netns), "%s", argv[++i] + 6);
			if (i + 1 < argc && !strncmp(argv[i + 1], "switch=", 7))
				snprintf(w->sw, sizeof(w->sw), "%s", argv[++i] + 7);
			if (i + 1 >= argc)
				die("job %d: worker needs IP:PORT", j->id);
			snprintf(w->local, sizeof(w->local), "%s", argv[++i]);
			continue;
		}
		if (!strchr(argv[i], '='))
			die("job %d: \"%s\" is neither KEY=VALUE nor worker", j->id, argv[i]);
		if (!strncmp(argv[i], "elems=", 6))
			j->elems = to_size("elems", argv[i] + 6);
		else if (!strncmp(argv[i], "iters=", 6))
			j->iters = atoi(argv[i] + 6);
		else if (!strncmp(argv[i], "dtype=", 6))
			j->dtype = dtype_of(argv[i] + 6);
		else if (j->nkv == 64)
			die("job %d: at most 64 settings", j->id);
		else
			split_kv(j, argv[i]);
	}
	return njobs;
}

/*
 * A run number for a job without run=: its workers all run here, so any
 * number new to this run does (docs/library.md, "Runs").  With --only, the
 * peers run elsewhere and would not share it: there, 0 unless given.
 */
static void default_run(struct job *j)
{
	struct timespec ts;
	char buf[32];

	for (int k = 0; k < j->nkv; k++)
		if (!strcmp(j->key[k], "run"))
			return;
	if (only_job >= 0)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(buf, sizeof(buf), "run=%u", (unsigned)(mix64(((uint64_t)ts.tv_sec << 30) ^
		 ts.tv_nsec ^ ((uint64_t)getpid() << 16) ^ j->id) | 1));
	split_kv(j, buf);
}

void setup_job(struct job *j)
{
	esa_config *c = esa_config_new();
	char buf[64];

	if (!j->n)
		die("job %d has no workers", j->id);
	default_run(j);
	esa_config_set_int(c, "values", g_values);
	for (int k = 0; k < j->nkv; k++)
		if (esa_config_set(c, j->key[k], j->val[k]))
			die("job %d: %s", j->id, esa_config_error(c));
	for (int r = 0; r < j->n; r++) {
		struct worker *w = j->w[r];

		if ((w->sw[0] && esa_config_set(c, "switch", w->sw)) ||
		    esa_config_set(c, "local", w->local) ||
		    (w->netns[0] && esa_config_set(c, "netns", w->netns)))
			die("job %d worker %d: %s", j->id, r, esa_config_error(c));
	}
	if (esa_config_get(c, "ps", buf, sizeof(buf)) || !buf[0])
		die("job %d: no ps=IP:PORT (the job's PS: workers take results only from the "
		    "switch and it)", j->id);
	esa_config_get(c, "values", buf, sizeof(buf));
	j->nvals = atoi(buf);
	esa_config_get(c, "float_block", buf, sizeof(buf));
	j->block = atoi(buf);
	esa_config_get(c, "float_headroom", buf, sizeof(buf));
	j->headroom = strcmp(buf, "auto") ? atoi(buf) : -1;
	esa_config_free(c);
	pthread_mutex_init(&j->lock, NULL);
	j->ref[0].iter = j->ref[1].iter = -1;
	j->started = j->stop_at = -1;
	for (int r = 0; r < j->n; r++) {
		j->w[r]->mine = only_job < 0 || (j->id == only_job && r == only_rank);
		j->running += j->w[r]->mine;
	}
}

/* The options; returns the index of the first job word. */
int parse_options(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "switch", required_argument, NULL, 's' },
		{ "values", required_argument, NULL, 'A' },
		{ "metrics-file", required_argument, NULL, 'M' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "elems", required_argument, NULL, 'n' },
		{ "iters", required_argument, NULL, 'i' },
		{ "dtype", required_argument, NULL, 't' },
		{ "seed", required_argument, NULL, 'S' },
		{ "only", required_argument, NULL, 'O' },
		{ "linger", required_argument, NULL, 'L' },
		{ "stop-file", required_argument, NULL, 'F' },
		{ "progress", no_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	esa_config *c;
	int opt;

	for (int i = 1; i < argc - 1; i++)	/* -v was --values */
		if (!strcmp(argv[i], "-v") && argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9')
			die("-v %s: -v is --verbose now; values per packet are --values %s",
			    argv[i + 1], argv[i + 1]);
	while ((opt = getopt_long(argc, argv, "+s:n:i:t:pjqvVh", lo, NULL)) != -1) {
		switch (opt) {
		case 's': sw_addr = optarg; break;
		case 'A': g_values = atoi(optarg); break;
		case 'M': g_metrics = optarg; break;
		case 'v': g_verbose = true; break;
		case 'V': esa_print_version("esa-jobs"); exit(0);
		case 'n': g_elems = to_size("elems", optarg); break;
		case 'i': g_iters = atoi(optarg); break;
		case 't': g_dtype = dtype_of(optarg); break;
		case 'S': g_seed = strtoull(optarg, NULL, 0); break;
		case 'O':
			if (sscanf(optarg, "%d:%d", &only_job, &only_rank) != 2)
				die("--only JOB:RANK");
			break;
		case 'L': g_linger = atoi(optarg); break;
		case 'F': g_stop_file = optarg; break;
		case 'p': g_progress = true; break;
		case 'j': g_json = true; break;
		case 'q': g_quiet = true; break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (!sw_addr)
		die("the switch's address is needed (-s IP[:PORT])");
	c = esa_config_new();
	if (esa_config_set(c, "switch", sw_addr))
		die("%s", esa_config_error(c));
	esa_config_free(c);
	return optind;
}
