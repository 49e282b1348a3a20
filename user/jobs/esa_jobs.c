// SPDX-License-Identifier: GPL-2.0
/*
 * esa-jobs - run jobs of workers through libesa and check every result.
 *
 *   esa-jobs -s SWITCH [ OPTIONS ] JOB...
 *   JOB := job ID ps=IP:PORT [ KEY=VALUE... ] worker [ netns=PATH ] [ switch=IP ] IP:PORT
 *          [ worker ... ]
 *
 * Every worker is a thread with its own libesa context (its socket opened in
 * its network namespace), so one process drives workers spread over many
 * hosts.  Each iteration, every rank reduces a deterministic tensor (float32:
 * gradient-like, layers of normal values at scales from 1e-5 to 1e-1; int32:
 * uniform in +-1e6) and checks the result against the sum computed here from
 * every rank's tensor: int32 exact, float32 within libesa's documented bound.
 * The report gives per job its completion time, goodput and counters.
 * With --stop-file, the jobs run until that file exists: each job then ends
 * after the iteration its furthest worker is in, its results checked as any.
 * docs/library.md, scripts/demo.sh.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "esa.h"
#include "esa_version.h"
#include "prom.h"

#define MAXJOBS		64
#define MAXW		64

struct worker;

/* The sums every rank must get, for one iteration (two kept: see ref_get). */
struct ref {
	int	iter;		/* -1: none */
	double	*sum;		/* exact (double) sums, or int64 as double */
	float	*absmax;	/* float32: per scale block, over all ranks */
	bool	*bad;		/* float32: the block has a NaN (never here) */
};

struct job {
	int	id, n;
	size_t	elems;
	int	iters, dtype;
	int	block, headroom, nvals;
	/* libesa settings, split once here: the workers' threads share them;
	 * up to 64 given, and a run number drawn here */
	char	*key[65], *val[65];
	int	nkv;
	struct worker *w[MAXW];
	pthread_mutex_t lock;
	struct ref ref[2];
	int	running;	/* workers of this process not done */
	int	started;	/* the furthest iteration a worker began, or -1 */
	int	stop_at;	/* --stop-file seen: iterations 0..stop_at-1 run */
	double	t0, t_end;
	/* results */
	atomic_int errors;
	atomic_int warned;	/* a worker's warning printed (once a job) */
	double	worst;		/* largest float error / bound */
	int	rc;		/* first error code */
	char	err[256];	/* ... and its worker's reason */
};

struct worker {
	struct job *job;
	int	rank;
	char	local[64], netns[256];
	char	sw[64];		/* its switch (two levels: its leaf); "": -s */
	bool	mine;		/* run by this process */
	pthread_t th;
	esa_worker *ew;
	atomic_uint_fast64_t done_ppm;	/* progress, millionths */
	double	comm;		/* seconds inside allreduce */
	double	t_done;
	struct esa_stats st;
	int	rc;
	char	err[256];
};

static struct job jobs[MAXJOBS];
static int njobs;
static const char *sw_addr;
static int g_values = 256, g_iters = 3, g_dtype = 1, g_linger = -1;
static size_t g_elems = 1 << 20;
static uint64_t g_seed = 1;
static bool g_progress, g_json, g_quiet, g_verbose;
static const char *g_metrics;	/* --metrics-file PATH */
static int only_job = -1, only_rank = -1;
static const char *g_stop_file;
static atomic_int all_done;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("esa-jobs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* ------------------------------------------------------------------ */
/* Tensors                                                             */
/* ------------------------------------------------------------------ */

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static inline uint64_t key(int job, int iter, int rank)
{
	return mix64(g_seed * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)job << 40) ^
		     ((uint64_t)iter << 20) ^ (uint64_t)rank);
}

/* Layers: element i belongs to layer i >> 14; each layer has its scale. */
static inline float layer_scale(int job, int iter, size_t i)
{
	uint64_t h = mix64(key(job, iter, 4095) ^ (i >> 14));

	return (float)pow(10.0, -5.0 + 4.0 * ((h >> 11) * 0x1p-53));
}

static void gen(const struct job *j, int iter, int rank, void *buf)
{
	uint64_t k = key(j->id, iter, rank);

	if (j->dtype == ESA_INT32) {
		int32_t *v = buf;

		for (size_t i = 0; i < j->elems; i++)
			v[i] = (int32_t)(mix64(k + i) % 2000001) - 1000000;
		return;
	}
	for (size_t i = 0; i < j->elems; i += 2) {
		/* Box-Muller: two normals from two uniforms */
		uint64_t h = mix64(k + i);
		double u1 = ((h >> 11) + 1) * 0x1p-53, u2 = (mix64(h) >> 11) * 0x1p-53;
		double r = sqrt(-2 * log(u1));
		float s = layer_scale(j->id, iter, i);
		float *v = buf;

		v[i] = (float)(r * cos(2 * M_PI * u2)) * s;
		if (i + 1 < j->elems)
			v[i + 1] = (float)(r * sin(2 * M_PI * u2)) * s;
	}
}

/* The reference sums of an iteration, computed once per job. */
static struct ref *ref_get(struct job *j, int iter)
{
	struct ref *r = &j->ref[iter & 1];

	pthread_mutex_lock(&j->lock);
	if (r->iter != iter) {
		size_t bsz = (size_t)j->block * j->nvals, nb = (j->elems + bsz - 1) / bsz;
		void *tmp = malloc(j->elems * 4);

		if (!r->sum) {
			r->sum = malloc(j->elems * sizeof(double));
			r->absmax = calloc(nb, sizeof(float));
			r->bad = calloc(nb, sizeof(bool));
			if (!r->sum || !r->absmax || !r->bad)
				die("out of memory");
		}
		if (!tmp)
			die("out of memory");
		memset(r->sum, 0, j->elems * sizeof(double));
		memset(r->absmax, 0, nb * sizeof(float));
		for (int k = 0; k < j->n; k++) {
			gen(j, iter, k, tmp);
			if (j->dtype == ESA_INT32) {
				for (size_t i = 0; i < j->elems; i++)
					r->sum[i] += ((int32_t *)tmp)[i];
			} else {
				for (size_t i = 0; i < j->elems; i++) {
					float f = ((float *)tmp)[i];

					r->sum[i] += f;
					if (fabsf(f) > r->absmax[i / bsz])
						r->absmax[i / bsz] = fabsf(f);
				}
			}
		}
		free(tmp);
		r->iter = iter;
	}
	pthread_mutex_unlock(&j->lock);
	return r;
}

/* Errors in out against the reference; *worst: largest error / bound. */
static size_t check(struct job *j, const struct ref *r, const void *out, double *worst)
{
	size_t bsz = (size_t)j->block * j->nvals, bad = 0;

	for (size_t i = 0; i < j->elems; i++) {
		if (j->dtype == ESA_INT32) {
			double want = r->sum[i];
			int32_t got = ((const int32_t *)out)[i];

			if (got != want && bad++ < 3)
				fprintf(stderr, "esa-jobs: job %d [%zu]: %d, want %.0f\n", j->id, i,
					got, want);
		} else {
			double want = r->sum[i], got = ((const float *)out)[i];
			double b = esa_f32_error_bound(r->absmax[i / bsz], want, j->n, j->headroom);
			double e = fabs(got - want);

			if (!(e <= b)) {
				if (bad++ < 3)
					fprintf(stderr, "esa-jobs: job %d [%zu]: %.9g, want %.9g "
						"(error %.3g > bound %.3g)\n", j->id, i, got, want,
						e, b);
			} else if (e / b > *worst) {
				*worst = e / b;
			}
		}
	}
	return bad;
}

/* ------------------------------------------------------------------ */
/* Workers                                                             */
/* ------------------------------------------------------------------ */

/*
 * Whether a worker about to begin iteration it stops instead.  Once the
 * stop file exists the job stops after the furthest iteration any of its
 * workers began: ranks are at most one iteration apart (one's iteration
 * it + 1 starts only once every rank sent all of iteration it), and every
 * rank still behind finishes that one, so every allreduce begun completes.
 */
static bool stop_before(struct job *j, int it)
{
	bool stop;

	pthread_mutex_lock(&j->lock);
	if (j->stop_at < 0 && g_stop_file && !access(g_stop_file, F_OK))
		j->stop_at = j->started + 1;
	stop = j->stop_at >= 0 && it >= j->stop_at;
	if (!stop && it > j->started)
		j->started = it;
	pthread_mutex_unlock(&j->lock);
	return stop;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct job *j = w->job;
	esa_config *c = esa_config_new();
	void *in = malloc(j->elems * 4 + 4), *out = malloc(j->elems * 4 + 4);
	double worst = 0;
	bool others;

	if (!c || !in || !out)
		die("out of memory");
	esa_config_set(c, "switch", w->sw[0] ? w->sw : sw_addr);
	esa_config_set_int(c, "values", j->nvals);
	esa_config_set_int(c, "job", j->id);
	esa_config_set_int(c, "rank", w->rank);
	esa_config_set_int(c, "workers", j->n);
	esa_config_set(c, "local", w->local);
	if (w->netns[0])
		esa_config_set(c, "netns", w->netns);
	for (int k = 0; k < j->nkv; k++)
		esa_config_set(c, j->key[k], j->val[k]);	/* checked in main */
	w->ew = esa_worker_open(c, w->err, sizeof(w->err));
	if (!w->ew)
		w->rc = errno ? -errno : -EINVAL;
	else if (esa_worker_warning(w->ew)[0] && !atomic_exchange(&j->warned, 1))
		fprintf(stderr, "esa-jobs: job %d rank %d: %s\n", j->id, w->rank,
			esa_worker_warning(w->ew));
	if (w->ew && g_verbose)
		fprintf(stderr, "esa-jobs: job %d rank %d: %s on %s\n", j->id, w->rank,
			esa_worker_io(w->ew), w->local);
	esa_config_free(c);
	for (int it = 0; w->ew && it < j->iters && !stop_before(j, it); it++) {
		esa_request *r;
		double t;
		int rc;

		gen(j, it, w->rank, in);
		memset(out, 0xff, j->elems * 4);
		t = now_s();
		r = esa_allreduce_start(w->ew, j->dtype, in, out, j->elems);
		if (!r) {
			w->rc = -errno;
			snprintf(w->err, sizeof(w->err), "%s", esa_worker_error(w->ew));
			break;
		}
		while ((rc = esa_wait(r, 100)) == -EAGAIN)
			atomic_store(&w->done_ppm, (uint64_t)((it + esa_request_progress(r)) /
							      j->iters * 1e6));
		esa_request_free(r);
		w->comm += now_s() - t;
		if (rc) {
			w->rc = rc;
			snprintf(w->err, sizeof(w->err), "iteration %d: %s (%s)", it,
				 esa_strerror(rc), esa_worker_error(w->ew));
			break;
		}
		atomic_store(&w->done_ppm, (uint64_t)((it + 1.0) / j->iters * 1e6));
		if (check(j, ref_get(j, it), out, &worst)) {
			atomic_fetch_add(&j->errors, 1);
			snprintf(w->err, sizeof(w->err), "iteration %d: wrong sums", it);
			w->rc = -EILSEQ;
		}
	}
	/* Also when the open failed: the job fails, and its peers stop waiting. */
	w->t_done = now_s();
	pthread_mutex_lock(&j->lock);
	if (worst > j->worst)
		j->worst = worst;
	if (w->rc && !j->rc) {
		j->rc = w->rc;
		snprintf(j->err, sizeof(j->err), "%s", w->err[0] ? w->err : esa_strerror(w->rc));
	}
	if (w->t_done > j->t_end)
		j->t_end = w->t_done;
	j->running--;
	pthread_mutex_unlock(&j->lock);
	/* Peers may still need our results (the PS's FETCH): serve them
	 * while the job's other workers here run, then linger a little. */
	if (w->ew) {
		do {
			/* a failed worker returns at once: wait out the turn */
			if (esa_serve(w->ew, 100, 0) < 0)
				usleep(100000);
			pthread_mutex_lock(&j->lock);
			others = j->running > 0;
			pthread_mutex_unlock(&j->lock);
		} while (others);
		if (g_linger > 0)
			esa_serve(w->ew, g_linger, g_linger / 2 > 500 ? g_linger / 2 : 500);
		esa_worker_stats(w->ew, &w->st, sizeof(w->st));
	}
	free(in);
	free(out);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Arguments                                                           */
/* ------------------------------------------------------------------ */

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

static int parse_jobs(int argc, char **argv)
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

/* Check each job's settings with libesa now, and learn what the checks need. */
static void setup_job(struct job *j)
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

/* ------------------------------------------------------------------ */
/* Progress and report                                                 */
/* ------------------------------------------------------------------ */

static void progress_line(bool final)
{
	static int tty = -1;
	char line[1024];
	int o = 0;

	if (tty < 0)
		tty = isatty(2);
	for (int k = 0; k < njobs; k++) {
		struct job *j = &jobs[k];
		uint64_t ppm = 1000000;
		int bar;

		for (int r = 0; r < j->n; r++) {
			uint64_t p;

			if (!j->w[r]->mine)
				continue;
			p = atomic_load(&j->w[r]->done_ppm);
			if (p < ppm)
				ppm = p;
		}
		bar = (int)(ppm / 100000);
		o += snprintf(line + o, sizeof(line) - o, "%sjob %d [%.*s%.*s] %3d%%",
			      k ? "  " : "", j->id, bar, "##########", 10 - bar, "..........",
			      (int)(ppm / 10000));
		if (o >= (int)sizeof(line) - 64)
			break;
	}
	if (tty)
		fprintf(stderr, "\r%s%s", line, final ? "\n" : "");
	else
		fprintf(stderr, "%s\n", line);
}

static void *progress_main(void *arg)
{
	int ticks = 0;

	(void)arg;
	while (!atomic_load(&all_done)) {
		usleep(100000);
		if (isatty(2) || ++ticks % 10 == 0)
			progress_line(false);
	}
	progress_line(true);
	return NULL;
}

static uint64_t sum_stat(const struct job *j, size_t off)
{
	uint64_t t = 0;

	for (int r = 0; r < j->n; r++)
		if (j->w[r]->mine)
			t += *(const uint64_t *)((const char *)&j->w[r]->st + off);
	return t;
}

#define SUM(j, f) sum_stat(j, offsetof(struct esa_stats, f))

/* The iterations a job ran: -i, or fewer when --stop-file stopped it. */
static int iters_run(const struct job *j)
{
	return j->stop_at >= 0 && j->stop_at < j->iters ? j->stop_at : j->iters;
}

/* A reason as a JSON string's body: quotes and controls become spaces. */
static const char *json_safe(char *s)
{
	for (char *p = s; *p; p++)
		if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
			*p = ' ';
	return s;
}

static void report(void)
{
	if (g_json) {
		printf("{\"jobs\":[");
		for (int k = 0; k < njobs; k++) {
			struct job *j = &jobs[k];
			double comm = 0, jct = j->t_end - j->t0;
			uint64_t rtt = SUM(j, rtt_us_sum), rs = SUM(j, rtt_samples);

			for (int r = 0; r < j->n; r++)
				if (j->w[r]->mine && j->w[r]->comm > comm)
					comm = j->w[r]->comm;
			printf("%s{\"job\":%d,\"workers\":%d,\"elems\":%zu,\"iters\":%d,"
			       "\"stopped\":%s,\"dtype\":\"%s\",\"ok\":%s,\"error\":\"%s\","
			       "\"jct_s\":%.4f,\"comm_s\":%.4f,\"goodput_gbps\":%.4f,\"worst_error_ratio\":%.4f,"
			       "\"tx_packets\":%llu,\"tx_resends\":%llu,\"rx_results\":%llu,"
			       "\"rx_from_ps\":%llu,\"rx_duplicates\":%llu,\"overflows\":%llu,"
			       "\"redos\":%llu,\"scale_chunks\":%llu,\"fetch_answered\":%llu,"
			       "\"rx_invalid\":%llu,\"rx_untrusted\":%llu,\"fetch_refused\":%llu,"
			       "\"icmp_errors\":%llu,\"io_xdp\":%llu,\"xdp_drops\":%llu,"
			       "\"rtt_us\":%.1f}",
			       k ? "," : "", j->id, j->n, j->elems, iters_run(j),
			       iters_run(j) < j->iters ? "true" : "false",
			       j->dtype == ESA_INT32 ? "i32" : "f32", j->rc ? "false" : "true",
			       json_safe(j->err), jct, comm,
			       comm > 0 ? j->elems * 4.0 * 8 * iters_run(j) / comm / 1e9 : 0,
			       j->worst,
			       (unsigned long long)SUM(j, tx_packets),
			       (unsigned long long)SUM(j, tx_resends),
			       (unsigned long long)SUM(j, rx_results),
			       (unsigned long long)SUM(j, rx_from_ps),
			       (unsigned long long)SUM(j, rx_duplicates),
			       (unsigned long long)SUM(j, overflows),
			       (unsigned long long)SUM(j, redos),
			       (unsigned long long)SUM(j, scale_chunks),
			       (unsigned long long)SUM(j, fetch_answered),
			       (unsigned long long)SUM(j, rx_invalid),
			       (unsigned long long)SUM(j, rx_untrusted),
			       (unsigned long long)SUM(j, fetch_refused),
			       (unsigned long long)SUM(j, icmp_errors),
			       (unsigned long long)SUM(j, io_xdp), (unsigned long long)SUM(j, xdp_drops),
			       rs ? (double)rtt / rs : 0);
		}
		printf("]}\n");
		return;
	}
	if (g_quiet)
		return;
	printf("%-5s %-3s %-5s %9s %5s %8s %8s %9s %9s %9s %8s %6s  %s\n", "job", "w", "type",
	       "elems", "iters", "jct_s", "comm_s", "Gbit/s", "packets", "resends", "from_ps",
	       "redos", "result");
	for (int k = 0; k < njobs; k++) {
		struct job *j = &jobs[k];
		double comm = 0;

		for (int r = 0; r < j->n; r++)
			if (j->w[r]->mine && j->w[r]->comm > comm)
				comm = j->w[r]->comm;
		printf("%-5d %-3d %-5s %9zu %5d %8.3f %8.3f %9.3f %9llu %9llu %8llu %6llu  %s\n",
		       j->id, j->n, j->dtype == ESA_INT32 ? "i32" : "f32", j->elems, iters_run(j),
		       j->t_end - j->t0, comm,
		       comm > 0 ? j->elems * 4.0 * 8 * iters_run(j) / comm / 1e9 : 0,
		       (unsigned long long)SUM(j, tx_packets),
		       (unsigned long long)SUM(j, tx_resends),
		       (unsigned long long)SUM(j, rx_from_ps), (unsigned long long)SUM(j, redos),
		       j->rc ? "FAILED" : "ok");
	}
}

/* --metrics-file: every open worker's counters (esa_worker_metrics()). */
static int metrics_text(FILE *f, void *arg)
{
	esa_worker **ws = arg;
	int n = 0, len;
	char *buf;

	for (int k = 0; k < njobs; k++)
		for (int r = 0; r < jobs[k].n; r++)
			if (jobs[k].w[r]->ew)
				ws[n++] = jobs[k].w[r]->ew;
	len = esa_worker_metrics(ws, n, NULL, 0);
	buf = len < 0 ? NULL : malloc(len + 1);
	if (!buf)
		return len < 0 ? len : -ENOMEM;
	esa_worker_metrics(ws, n, buf, len + 1);
	fputs(buf, f);
	free(buf);
	return ferror(f) ? -EIO : 0;
}

static void write_metrics(const char *path)
{
	static esa_worker *ws[MAXJOBS * MAXW];
	int rc = prom_write_file(path, metrics_text, ws);

	if (rc)
		fprintf(stderr, "esa-jobs: cannot write %s: %s\n", path, strerror(-rc));
}

int main(int argc, char **argv)
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
	pthread_t prog;
	int opt, failed = 0;

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
		case 'V': esa_print_version("esa-jobs"); return 0;
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
	{
		esa_config *c = esa_config_new();

		if (esa_config_set(c, "switch", sw_addr))
			die("%s", esa_config_error(c));
		esa_config_free(c);
	}
	if (!parse_jobs(argc - optind, argv + optind))
		die("no jobs (try esa-jobs --help)");
	if (g_stop_file && only_job >= 0)
		die("--stop-file stops a job where all its workers run: not with --only "
		    "(its peers elsewhere would not stop at the same iteration)");
	if (g_linger < 0)
		g_linger = only_job >= 0 ? 3000 : 1000;
	for (int k = 0; k < njobs; k++)
		setup_job(&jobs[k]);
	if (g_progress)
		pthread_create(&prog, NULL, progress_main, NULL);
	for (int k = 0; k < njobs; k++) {
		jobs[k].t0 = now_s();
		for (int r = 0; r < jobs[k].n; r++)
			if (jobs[k].w[r]->mine)
				pthread_create(&jobs[k].w[r]->th, NULL, worker_main, jobs[k].w[r]);
	}
	for (int k = 0; k < njobs; k++)
		for (int r = 0; r < jobs[k].n; r++)
			if (jobs[k].w[r]->mine)
				pthread_join(jobs[k].w[r]->th, NULL);
	atomic_store(&all_done, 1);
	if (g_progress)
		pthread_join(prog, NULL);
	if (g_metrics)
		write_metrics(g_metrics);
	for (int k = 0; k < njobs; k++) {
		struct job *j = &jobs[k];

		for (int r = 0; r < j->n; r++) {
			struct worker *w = j->w[r];

			if (w->mine && w->rc)
				fprintf(stderr, "esa-jobs: job %d rank %d: %s\n", j->id, r,
					w->err[0] ? w->err : esa_strerror(w->rc));
			if (w->ew)
				esa_worker_close(w->ew);
		}
		failed += j->rc != 0;
	}
	report();
	return failed ? 1 : 0;
}
