// SPDX-License-Identifier: GPL-2.0
/*
 * libesa unit tests, on loopback against simswitch.h (no root, no XDP):
 * configuration, the quantization bound, exact int32 sums through loss,
 * duplication, reordering and garbage, exactly-once delivery, overflow redo
 * (spurious flags, true int32 overflow, float headroom), NaN handling,
 * asynchronous requests, several jobs and workers in one process, FETCH
 * answers, trust (results and FETCHes only from the switch and the PS,
 * address and port), ranks disagreeing on an allreduce, giving up with the
 * silent peer named (ICMP errors, the PS's FETCH), the receive buffer
 * granted (LIBTEST=rcvbuf as non-root too), resend deadlines in
 * microseconds, 856-value packets, 0.0.0.0 refused where an address is
 * needed.  Then, as root in a network namespace of its own: the path MTU
 * to the switch checked at open; AF_XDP: its refusals (LIBTEST=xdp_refused as non-root too), no
 * program left behind (a killed process included), an unresolved next hop,
 * and the transport's tests again with every worker on AF_XDP on lo
 * (LIBTEST_XDP=name picks some).  Prints TAP.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "esa.h"
#include "esa_int.h"
#include "simswitch.h"
#include "../tap.h"

static uint16_t next_port;
/* The transport's settings for every worker (the AF_XDP pass names its
 * tests with tap_prefix). */
static const char *g_io;

static uint16_t ports(int n)
{
	uint16_t p = next_port;

	next_port += n + 1;
	return p;
}

/* ------------------------------------------------------------------ */
/* Inputs                                                              */
/* ------------------------------------------------------------------ */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

static uint64_t key(int seed, int job, int rank, int op, size_t i)
{
	return mix(((uint64_t)seed << 48) ^ ((uint64_t)job << 40) ^ ((uint64_t)rank << 32) ^
		   ((uint64_t)op << 24) ^ (i * 0x9e3779b97f4a7c15ULL));
}

/* int32 kinds: 0 small, 1 large (true overflow in some elements) */
static int32_t ival(int kind, int seed, int job, int rank, int op, size_t i)
{
	uint64_t k = key(seed, job, rank, op, i);

	if (kind == 1 && i % 7 == 3)
		return INT32_MAX - (int32_t)(k % 1000);	/* every rank: overflows */
	if (kind == 1 && i % 7 == 5)
		return (rank & 1) ? INT32_MIN + 5 : INT32_MAX - 5;	/* partials would */
	return (int32_t)(k % 2000001) - 1000000;
}

/* float32: magnitudes vary by block of 256 values over 2^-30 .. 2^10 */
static float fval(int seed, int job, int rank, int op, size_t i)
{
	uint64_t k = key(seed, job, rank, op, i);
	int e = -30 + (int)(mix(i / 256 + seed * 977 + op) % 40);
	double u = ((k >> 11) * 0x1p-53) * 2 - 1;

	if (k % 97 == 0)
		u = 0;
	return (float)ldexp(u, e);
}

/* ------------------------------------------------------------------ */
/* Workers in threads                                                  */
/* ------------------------------------------------------------------ */

#define MAXOPS 8

struct op {
	int	dtype, kind;	/* kind: ival's, or for floats 2 = NaN in rank 0 */
	size_t	n;
};

struct wt {
	pthread_t th;
	int	job, rank, n, seed;
	uint16_t swport, port0;
	const char *extra;	/* "key=value key=value" */
	int	nops;
	struct op ops[MAXOPS];
	bool	async;
	void	*in[MAXOPS], *out[MAXOPS];
	int	rc[MAXOPS];
	int	open_err;
	struct esa_stats st;
	int	serve_ms;
	char	err[256];	/* the worker's last error */
	esa_worker *w;
};

static void apply_extra(esa_config *c, const char *extra)
{
	char buf[512], *save, *t;

	if (!extra)
		return;
	snprintf(buf, sizeof(buf), "%s", extra);
	for (t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(t, '=');

		*eq = 0;
		if (esa_config_set(c, t, eq + 1))
			fprintf(stderr, "# config %s: %s\n", t, esa_config_error(c));
	}
}

static void *worker_main(void *arg)
{
	struct wt *t = arg;
	esa_config *c = esa_config_new();
	esa_request *req[MAXOPS];
	char err[256], addr[64];

	snprintf(addr, sizeof(addr), "127.0.0.1:%u", t->swport);
	esa_config_set(c, "switch", addr);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", t->swport + 1);	/* simswitch's PS */
	esa_config_set(c, "ps", addr);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", t->port0 + t->rank);
	esa_config_set(c, "local", addr);
	esa_config_set_int(c, "job", t->job);
	esa_config_set_int(c, "rank", t->rank);
	esa_config_set_int(c, "workers", t->n);
	esa_config_set_int(c, "timeout_ms", 5);
	esa_config_set_int(c, "timeout_max_ms", 40);
	esa_config_set_int(c, "give_up_ms", 20000);
	apply_extra(c, t->extra);
	apply_extra(c, g_io);
	t->w = esa_worker_open(c, err, sizeof(err));
	esa_config_free(c);
	if (!t->w) {
		fprintf(stderr, "# worker %d.%d: %s\n", t->job, t->rank, err);
		t->open_err = errno ? errno : EINVAL;
		return NULL;
	}
	for (int o = 0; o < t->nops; o++) {
		if (t->async) {
			req[o] = esa_allreduce_start(t->w, t->ops[o].dtype, t->in[o], t->out[o],
						     t->ops[o].n);
			t->rc[o] = req[o] ? 0 : -errno;
		} else {
			t->rc[o] = esa_allreduce(t->w, t->ops[o].dtype, t->in[o], t->out[o],
						 t->ops[o].n);
		}
	}
	if (t->async) {
		for (int o = t->nops - 1; o >= 0; o--) {	/* any order */
			if (req[o]) {
				t->rc[o] = esa_wait(req[o], -1);
				esa_request_free(req[o]);
			}
		}
	}
	if (t->serve_ms)
		esa_serve(t->w, t->serve_ms, 0);
	esa_worker_stats(t->w, &t->st, sizeof(t->st));
	snprintf(t->err, sizeof(t->err), "%s", esa_worker_error(t->w));
	return NULL;
}

struct job {
	int	id, n, seed;
	struct wt w[ESA_MAX_WORKERS];
};

static void job_init(struct job *j, int id, int n, int seed, uint16_t swport,
		     const char *extra, const struct op *ops, int nops)
{
	uint16_t p0 = ports(n);

	memset(j, 0, sizeof(*j));
	j->id = id;
	j->n = n;
	j->seed = seed;
	for (int r = 0; r < n; r++) {
		struct wt *t = &j->w[r];

		t->job = id;
		t->rank = r;
		t->n = n;
		t->seed = seed;
		t->swport = swport;
		t->port0 = p0;
		t->extra = extra;
		t->nops = nops;
		for (int o = 0; o < nops; o++) {
			size_t sz = ops[o].n ? ops[o].n : 1;

			t->ops[o] = ops[o];
			t->in[o] = malloc(sz * 4);
			t->out[o] = malloc(sz * 4);
			for (size_t i = 0; i < ops[o].n; i++) {
				if (ops[o].dtype == ESA_INT32) {
					((int32_t *)t->in[o])[i] =
						ival(ops[o].kind, seed, id, r, o, i);
				} else {
					float f = fval(seed, id, r, o, i);

					if (ops[o].kind == 2 && r == 0 && i == ops[o].n / 2)
						f = NAN;
					((float *)t->in[o])[i] = f;
				}
			}
			memset(t->out[o], 0xa5, sz * 4);
		}
	}
}

static void job_free(struct job *j)
{
	for (int r = 0; r < j->n; r++) {
		for (int o = 0; o < j->w[r].nops; o++) {
			free(j->w[r].in[o]);
			free(j->w[r].out[o]);
		}
		esa_worker_close(j->w[r].w);
	}
}

static void jobs_run(struct job **jobs, int njobs)
{
	for (int k = 0; k < njobs; k++)
		for (int r = 0; r < jobs[k]->n; r++)
			pthread_create(&jobs[k]->w[r].th, NULL, worker_main, &jobs[k]->w[r]);
	for (int k = 0; k < njobs; k++)
		for (int r = 0; r < jobs[k]->n; r++)
			pthread_join(jobs[k]->w[r].th, NULL);
}

/*
 * Check op o of job j on every rank: int32 exact (bad_ok: elements whose
 * true sum does not fit may be clamped); float32 within the bound (headroom
 * h, -1 auto).  Returns the number of bad elements; *ratio: largest
 * error / bound seen.
 */
static size_t job_check(struct job *j, int o, int h, double *ratio, int want_rc)
{
	struct op *op = &j->w[0].ops[o];
	int nvals = 256, block = 8;
	size_t bad = 0;
	double worst = 0;

	for (int r = 0; r < j->n; r++)
		if (j->w[r].rc[o] != want_rc) {
			fprintf(stderr, "# job %d rank %d op %d: rc %d (%s), want %d\n", j->id, r,
				o, j->w[r].rc[o], esa_strerror(j->w[r].rc[o]), want_rc);
			bad++;
		}
	if (j->w[0].extra && strstr(j->w[0].extra, "values="))
		nvals = atoi(strstr(j->w[0].extra, "values=") + 7);
	if (j->w[0].extra && strstr(j->w[0].extra, "float_block="))
		block = atoi(strstr(j->w[0].extra, "float_block=") + 12);
	for (size_t i = 0; i < op->n; i++) {
		if (op->dtype == ESA_INT32) {
			int64_t want = 0;
			int32_t w32;

			for (int r = 0; r < j->n; r++)
				want += ((int32_t *)j->w[r].in[o])[i];
			w32 = want > INT32_MAX ? INT32_MAX : want < INT32_MIN ? INT32_MIN : want;
			for (int r = 0; r < j->n; r++) {
				int32_t got = ((int32_t *)j->w[r].out[o])[i];

				if (got != w32) {
					if (bad++ < 5)
						fprintf(stderr, "# job %d rank %d op %d [%zu]: %d want %lld\n",
							j->id, r, o, i, got, (long long)want);
				}
			}
		} else {
			size_t b0 = i / (block * nvals) * block * nvals, b1 = b0 + block * nvals;
			double want = 0, amax = 0, bound;
			bool nan = false;

			if (b1 > op->n)
				b1 = op->n;
			for (int r = 0; r < j->n; r++) {
				want += ((float *)j->w[r].in[o])[i];
				for (size_t k = b0; k < b1; k++) {
					float f = ((float *)j->w[r].in[o])[k];

					if (isnan(f) || isinf(f))
						nan = true;
					else if (fabs(f) > amax)
						amax = fabs(f);
				}
			}
			bound = esa_f32_error_bound(amax, want, j->n, h);
			for (int r = 0; r < j->n; r++) {
				float got = ((float *)j->w[r].out[o])[i];
				double err = fabs((double)got - want);

				if (nan) {
					if (!isnan(got) && bad++ < 5)
						fprintf(stderr, "# [%zu] %g, want NaN\n", i, got);
					continue;
				}
				if (!(err <= bound)) {
					if (bad++ < 5)
						fprintf(stderr, "# job %d rank %d op %d [%zu]: %.9g want %.9g "
							"err %.3g bound %.3g\n", j->id, r, o, i, got,
							want, err, bound);
				} else if (err / bound > worst) {
					worst = err / bound;
				}
			}
		}
	}
	if (ratio)
		*ratio = worst;
	return bad;
}

static uint64_t sum_st(struct job *j, size_t off)
{
	uint64_t t = 0;

	for (int r = 0; r < j->n; r++)
		t += *(uint64_t *)((char *)&j->w[r].st + off);
	return t;
}

#define ST(j, f) sum_st(j, offsetof(struct esa_stats, f))

/* ------------------------------------------------------------------ */
/* Tests                                                               */
/* ------------------------------------------------------------------ */

/* 0.0.0.0 where an address to send to, or to send from over AF_XDP, is
 * needed: refused in one line naming the setting (it used to end in a
 * timeout).  local 0.0.0.0 over UDP is a wildcard bind, and stays. */
static void test_config_wildcards(void)
{
	esa_config *c = esa_config_new();
	char err[256] = "", got[64] = "";
	esa_worker *w;
	int rc;

	rc = esa_config_set(c, "switch", "0.0.0.0");
	ok(rc == -EINVAL && !strcmp(esa_config_error(c), "switch \"0.0.0.0\": 0.0.0.0 is no "
	   "address to send to; give the switch's service address (esactl prog load addr)") &&
	   !esa_config_get(c, "switch", got, sizeof(got)) && !got[0],
	   "config: switch 0.0.0.0 refused, naming it (%s)", esa_config_error(c));
	rc = esa_config_set(c, "ps", "0.0.0.0:9000");
	ok(rc == -EINVAL && !strcmp(esa_config_error(c), "ps \"0.0.0.0:9000\": 0.0.0.0 is no "
	   "address to send to; give the job's PS as registered at the switch"),
	   "config: ps 0.0.0.0 refused, naming it (%s)", esa_config_error(c));
	esa_config_set(c, "switch", "127.0.0.1:1");
	esa_config_set(c, "ps", "127.0.0.1:2");
	esa_config_set(c, "job", "1");
	esa_config_set(c, "rank", "0");
	esa_config_set(c, "workers", "1");
	esa_config_set(c, "local", "0.0.0.0:5000");
	for (int k = 0; k < 2; k++) {
		const char *io = k ? "auto" : "xdp";
		char want[200];

		esa_config_set(c, "io", io);
		w = esa_worker_open(c, err, sizeof(err));
		snprintf(want, sizeof(want), "local 0.0.0.0:5000 with io=%s: AF_XDP sends from "
			 "the address given, and the switch takes only the rank's registered one; "
			 "give it", io);
		ok(!w && errno == EINVAL && !strcmp(err, want),
		   "open: local 0.0.0.0 with io=%s refused, naming it (%s)", io, err);
		esa_worker_close(w);
	}
	esa_config_set(c, "io", "udp");
	err[0] = 0;
	ok(!esa_config_check(c, err, sizeof(err)),
	   "open: local 0.0.0.0 with io=udp taken (a wildcard bind) (%s)", err);
	esa_config_free(c);
}

static void test_config(void)
{
	esa_config *c = esa_config_new();
	char buf[64], path[] = "/tmp/esa-lib-test-XXXXXX";
	esa_worker *w;
	FILE *f;
	int fd;

	ok(esa_config_set(c, "window", "0") == -EINVAL && strstr(esa_config_error(c), "window"),
	   "config: window 0 refused (%s)", esa_config_error(c));
	ok(esa_config_set(c, "frob", "1") == -EINVAL, "config: unknown key refused");
	ok(esa_config_set(c, "switch", "10.0.0.300") == -EINVAL, "config: bad address refused");
	ok(esa_config_set(c, "priority", "fifo") == -EINVAL, "config: unknown priority refused");
	ok(!esa_config_set(c, "switch", "10.255.0.1") && !esa_config_get(c, "switch", buf, sizeof(buf)) &&
	   !strcmp(buf, "10.255.0.1:7680"), "config: switch port defaults to 7680 (%s)", buf);
	w = esa_worker_open(c, buf, sizeof(buf));
	ok(!w && strstr(buf, "local"), "open: incomplete config refused (%s)", buf);
	ok(esa_config_set(c, "give_up_ms", "0") == -EINVAL &&
	   strstr(esa_config_error(c), "give_up_ms 0: a worker would wait for ever"),
	   "config: give_up_ms 0 refused (%s)", esa_config_error(c));
	{
		int rc = esa_config_set(c, "window", "513");
		char why[160];

		snprintf(why, sizeof(why), "%s", esa_config_error(c));
		ok(rc == -EINVAL && !strcmp(why, "window 513: more chunks in flight than the "
		   "switch's tombstone ring holds (at most 512)") &&
		   !esa_config_set(c, "window", "512"), "config: window 513 refused, 512 "
		   "taken (%s)", why);
	}
	{
		static const char *const bad[][2] = {
			{ "xsk_busy_poll", "-1" }, { "xsk_busy_poll", "100001" },
			{ "xsk_busy_poll", "20us" }, { "xsk_tx_budget", "16" },
			{ "xsk_tx_budget", "513" }, { "xsk_tx_budget", "-1" },
		};
		char refused[160] = "", got[2][16] = { "", "" }, why16[200] = "";

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			if (esa_config_set(c, bad[i][0], bad[i][1]) != -EINVAL ||
			    !strstr(esa_config_error(c), bad[i][0]))
				snprintf(refused + strlen(refused), sizeof(refused) - strlen(refused),
					 " %s=%s", bad[i][0], bad[i][1]);
			if (i == 3)
				snprintf(why16, sizeof(why16), "%s", esa_config_error(c));
		}
		ok(!refused[0] && strstr(why16, "the kernel takes 32..512 frames a send call") &&
		   !esa_config_set(c, "xsk_busy_poll", "50") &&
		   !esa_config_set(c, "xsk_tx_budget", "64") &&
		   !esa_config_get(c, "xsk_busy_poll", got[0], sizeof(got[0])) &&
		   !esa_config_get(c, "xsk_tx_budget", got[1], sizeof(got[1])) &&
		   !strcmp(got[0], "50") && !strcmp(got[1], "64"),
		   "config: xsk_busy_poll and xsk_tx_budget out of range refused, each naming "
		   "itself (%s); 50 and 64 taken (%s, %s)%s%s", why16, got[0], got[1],
		   refused[0] ? "; not refused:" : "", refused);
		esa_config_set(c, "xsk_busy_poll", "0");
		esa_config_set(c, "xsk_tx_budget", "0");
	}
	fd = mkstemp(path);
	f = fdopen(fd, "w");
	fprintf(f, "# a worker\nswitch = 10.255.0.1:7680\njob = 3\nrank=1\n workers = 4 \n"
		   "local = 127.0.0.1:1\npriority = srsf # JCT\nprio_max = 3\nvalues = 64\n");
	fclose(f);
	ok(!esa_config_load(c, path) && !esa_config_get(c, "priority", buf, sizeof(buf)) &&
	   !strcmp(buf, "srsf"), "config file: loaded (%s)", esa_config_error(c));
	{
		char why[256];

		w = esa_worker_open(c, why, sizeof(why));
		ok(!w && !strcmp(why, "no PS address (ps = IP:PORT): results are taken only "
				 "from the switch and the job's PS"), "open: no ps refused (%s)",
		   why);
	}
	esa_config_set(c, "ps", "10.0.9.2:9000");
	f = fopen(path, "w");
	fprintf(f, "job = 3\nwindow = lots\n");
	fclose(f);
	ok(esa_config_load(c, path) == -EINVAL && strstr(esa_config_error(c), ":2:"),
	   "config file: error names its line (%s)", esa_config_error(c));
	unlink(path);
	esa_config_set(c, "rank", "7");
	w = esa_worker_open(c, buf, sizeof(buf));
	ok(!w && strstr(buf, "rank"), "open: rank outside workers refused (%s)", buf);
	esa_config_free(c);
	test_config_wildcards();
}

/* Quantize and dequantize one rank's values: error <= 2^-(s+1) each. */
static void test_quant(void)
{
	static float x[4096], y[4096];
	static int32_t q[4096];
	size_t bad = 0, checked = 0;
	double worst = 0;

	for (int trial = 0; trial < 400; trial++) {
		int e = -140 + trial * 7 % 270, h = trial % 7;
		size_t n = 1 + mix(trial) % 4096;
		unsigned ex;
		int s;

		if (e > 127)
			e = 127;
		for (size_t i = 0; i < n; i++)
			x[i] = (float)ldexp(((mix(trial * 4096 + i) >> 11) * 0x1p-53) * 2 - 1, e);
		if (trial % 5 == 0)
			x[n / 2] = (float)ldexp(1, e > -126 ? e - 1 : -126);	/* exactly 2^k */
		ex = esa_q_maxexp(x, n);
		s = esa_q_shift(esa_q_E(ex), h);
		esa_q_f32(x, n, q, n, s);
		esa_dq_f32(q, n, y, s);
		for (size_t i = 0; i < n; i++) {
			double err = fabs((double)y[i] - x[i]);
			double b = ldexp(1, -s - 1) * (1 + 0x1p-23) + 0x1p-24 * fabs(x[i]) +
				   0x1p-149;

			checked++;
			if (llabs(q[i]) > (1LL << (30 - h)) || !(err <= b)) {
				if (bad++ < 3)
					fprintf(stderr, "# quant e %d h %d x %g q %d y %g s %d\n", e,
						h, x[i], q[i], y[i], s);
			} else if (err / b > worst) {
				worst = err / b;
			}
		}
	}
	ok(!bad, "quantization: |q| <= 2^(30-h) and error <= 2^-(s+1) on %zu values "
	   "over exponents -140..127 (worst %.2f of the bound)", checked, worst);

	{
		int32_t hi[8], lo[8], out[8], v[8] = { 0, -1, 1, INT32_MIN, INT32_MAX, 65536,
						       -65537, 123456789 };

		esa_q_split(v, 8, hi, lo, 8);
		ok(!esa_dq_join(hi, lo, 8, out) && !memcmp(out, v, sizeof(v)),
		   "int32 split into halves and joined in 64 bits is exact");
	}
}

static void test_int_clean(void)
{
	struct simswitch s;
	struct op ops[] = { { ESA_INT32, 0, 100000 }, { ESA_INT32, 0, 1 }, { ESA_INT32, 0, 0 },
			    { ESA_INT32, 0, 257 } };
	struct job j, *jp = &j;
	uint16_t sp = ports(1);

	ss_start(&s, sp, 256, 1);
	ss_job(&s, 5, 3, 0);
	job_init(&j, 5, 3, 11, sp, "timeout_ms=500 timeout_max_ms=1000", ops, 4);
	for (int r = 0; r < 3; r++)
		s.jobs[0].w[r].sin_port = htons(j.w[0].port0 + r);
	ss_run(&s);
	jobs_run(&jp, 1);
	ss_stop(&s);
	ok(!job_check(&j, 0, -1, NULL, 0) && !job_check(&j, 1, -1, NULL, 0) &&
	   !job_check(&j, 2, -1, NULL, 0) && !job_check(&j, 3, -1, NULL, 0),
	   "int32, 3 workers: 100000, 1, 0 and 257 elements exact");
	/* every allreduce, empty ones too, has its check chunk */
	ok(ST(&j, rx_results) == ST(&j, chunks) && ST(&j, chunks) == 3 * (4 + 391 + 1 + 2) &&
	   !ST(&j, tx_resends) && !s.st.bad_data && !s.st.inconsistent && !s.st.prio_mismatch,
	   "clean run: one result per chunk, no resends, well-formed DATA (%llu chunks)",
	   (unsigned long long)ST(&j, chunks));
	job_free(&j);
}

static void run_one(struct simswitch *s, struct job *j, int id, int n, int seed,
		    const char *extra, const struct op *ops, int nops,
		    void (*tweak)(struct simswitch *), int nvals)
{
	uint16_t sp = ports(1);

	ss_start(s, sp, nvals, seed);
	if (tweak)
		tweak(s);
	job_init(j, id, n, seed, sp, extra, ops, nops);
	ss_job(s, id, n, j->w[0].port0);
	ss_run(s);
	jobs_run(&j, 1);
	ss_stop(s);
}

static void lossy(struct simswitch *s)
{
	s->p_drop_in = 0.05;
	s->p_drop_out = 0.05;
	s->p_dup = 0.10;
	s->p_reorder = 0.10;
	s->p_garbage = 0.05;
}

static void test_int_lossy(void)
{
	struct op ops[] = { { ESA_INT32, 0, 300000 }, { ESA_INT32, 0, 5000 } };
	struct simswitch s;
	struct job j;

	run_one(&s, &j, 9, 4, 21, "window=64 priority=srsf prio_max=7 quantum=16", ops, 2,
		lossy, 256);
	ok(!job_check(&j, 0, -1, NULL, 0) && !job_check(&j, 1, -1, NULL, 0),
	   "int32 through 5%% loss each way, 10%% duplicates, 10%% reordered, garbage: exact");
	ok(ST(&j, rx_results) == ST(&j, chunks) && ST(&j, rx_duplicates) > 0 &&
	   ST(&j, tx_resends) > 0 && ST(&j, rx_invalid) > 0,
	   "exactly once: %llu results for %llu chunks, %llu duplicates and %llu invalid "
	   "ignored, %llu resends", (unsigned long long)ST(&j, rx_results),
	   (unsigned long long)ST(&j, chunks), (unsigned long long)ST(&j, rx_duplicates),
	   (unsigned long long)ST(&j, rx_invalid), (unsigned long long)ST(&j, tx_resends));
	ok(!s.st.inconsistent && !s.st.bad_data && !s.st.prio_mismatch && s.st.resends > 0,
	   "resends carry the same bytes, every rank stamps the same srsf priority");
	job_free(&j);
}

/*
 * The congestion window's rule (esa_cc.h), step by step: switch results
 * grow it by one per window of them, a contention result halves it once
 * per window (not for chunks sent before the last halving), never below
 * window_min; losses and slow peers leave it alone; fixed when min == max.
 */
static void test_cc_rule(void)
{
	struct esa_cc cc, fixed;
	bool once = true, grows, floor = true;
	uint32_t w0;

	esa_cc_init(&cc, 2, 32);
	esa_cc_init(&fixed, 32, 32);
	esa_cc_result(&cc, esa_cc_classify(false, ESA_R_PREEMPT), 10, 40);
	esa_cc_result(&fixed, ESA_CC_CONTENTION, 10, 40);
	w0 = esa_cc_window(&cc);
	/* chunks sent before the halving (positions below 40) do not halve */
	for (uint64_t p = 11; p < 40; p++)
		esa_cc_result(&cc, ESA_CC_CONTENTION, p, 41);
	once = esa_cc_window(&cc) == 16 && cc.decreases == 1;
	esa_cc_result(&cc, ESA_CC_SLOW, 50, 60);
	esa_cc_result(&cc, esa_cc_classify(true, ESA_R_RESEND), 51, 60);
	esa_cc_result(&cc, esa_cc_classify(true, 0), 52, 60);
	once &= esa_cc_window(&cc) == 16;
	/* about a window's worth (the integer steps shrink as it grows) */
	for (int k = 0; k < 17; k++)
		esa_cc_result(&cc, esa_cc_classify(false, 0), 60 + k, 80);
	grows = esa_cc_window(&cc) == 17;
	for (uint64_t p = 100; p < 1000; p += 100)
		esa_cc_result(&cc, ESA_CC_CONTENTION, p, p + 1);
	floor = esa_cc_window(&cc) == 2;
	ok(w0 == 16 && once && grows && floor && esa_cc_window(&fixed) == 32,
	   "window rule: contention halves once per window (32 -> %u), losses and slow peers "
	   "keep it, a window of switch results adds one (%s), never below window_min (%s), "
	   "fixed without window_min", w0, grows ? "17" : "no", floor ? "2" : "no");
}

/*
 * A job whose results come through the PS for want of switch memory (a
 * reason, from the switch's address: the PS's SUM): counted, and with
 * window_min its window shrinks; every sum still exact.
 */
static void contended(struct simswitch *s)
{
	s->p_contention = 0.2;
}

static void test_cc(void)
{
	struct op ops[] = { { ESA_INT32, 0, 200000 } };
	struct simswitch s;
	struct job j;

	run_one(&s, &j, 12, 2, 31, "window=32 window_min=2", ops, 1, contended, 256);
	/* ST() sums the two workers' counters: every result reaches both */
	ok(!job_check(&j, 0, -1, NULL, 0) && ST(&j, rx_contention) == 2 * s.st.contention &&
	   ST(&j, rx_from_ps) == 2 * s.st.contention && ST(&j, cc_decreases) > 0 &&
	   ST(&j, cwnd) >= 2 * 2 && ST(&j, cwnd) <= 2 * 32,
	   "window_min 2: %llu of %llu results through the PS for contention, counted "
	   "(rx_contention, rx_from_ps), the window halved %llu times (now %llu), sums exact",
	   (unsigned long long)ST(&j, rx_contention) / 2, (unsigned long long)ST(&j, chunks) / 2,
	   (unsigned long long)ST(&j, cc_decreases) / 2, (unsigned long long)ST(&j, cwnd) / 2);
	job_free(&j);
	run_one(&s, &j, 12, 2, 31, "window=32", ops, 1, contended, 256);
	ok(!job_check(&j, 0, -1, NULL, 0) && ST(&j, rx_contention) > 0 &&
	   !ST(&j, cc_decreases) && ST(&j, cwnd) == 2 * 32,
	   "without window_min the window stays 32 whatever the results say");
	job_free(&j);
}

/*
 * link_delay_us: every datagram waits that long each way in the transport
 * (a testbed's emulated propagation); sums exact, and no round trip shorter
 * than the two delays (a lower bound that a slow machine only raises).
 * With UDP_GRO (or AF_XDP) it is refused at open.
 */
static void test_link_delay(void)
{
	struct op ops[] = { { ESA_INT32, 0, 30000 }, { ESA_INT32, 0, 700 } };
	struct simswitch s;
	struct job j;
	uint64_t n, mean;
	char why[256] = "";
	esa_config *c;
	esa_worker *w;

	run_one(&s, &j, 13, 2, 41, "window=8 link_delay_us=3000 timeout_ms=20", ops, 2,
		lossy, 256);
	n = ST(&j, rtt_samples);
	mean = n ? ST(&j, rtt_us_sum) / n : 0;
	ok(!job_check(&j, 0, -1, NULL, 0) && !job_check(&j, 1, -1, NULL, 0) && n &&
	   mean >= 6000, "link_delay_us 3000 through loss and reordering: sums exact, "
	   "round trips %llu us on average (at least the two delays, 6000)",
	   (unsigned long long)mean);
	job_free(&j);
	c = esa_config_new();
	esa_config_set(c, "switch", "127.0.0.1:9");
	esa_config_set(c, "job", "1");
	esa_config_set(c, "rank", "0");
	esa_config_set(c, "workers", "1");
	snprintf(why, sizeof(why), "127.0.0.1:%u", ports(1));
	esa_config_set(c, "local", why);
	esa_config_set(c, "ps", "127.0.0.1:10");
	esa_config_set(c, "link_delay_us", "100");
	esa_config_set(c, "udp_gro", "1");
	w = esa_worker_open(c, why, sizeof(why));
	ok(!w && strstr(why, "link_delay_us works on io=udp without udp_gro"),
	   "link_delay_us with udp_gro: refused at open (%s)", why);
	if (w)
		esa_worker_close(w);
	esa_config_free(c);
}

static void fetch_case(int gso, const char *what);

static void coalescing(struct simswitch *s)
{
	lossy(s);
	s->gso = 8;
}

/*
 * Results coalesced as the kernel's GRO hands them over (UDP_GRO): the
 * switch sends its results to each worker in UDP GSO sends of up to 8,
 * which loopback delivers whole to a socket with UDP_GRO, with their
 * segment size; each result must land in its own buffer (kept as the FETCH
 * cache entry), garbage and duplicates inside a batch ignored.  And the
 * same with udp_gro=0 (the kernel splits them again).
 */
static void test_gro(void)
{
	struct op ops[] = { { ESA_INT32, 0, 200000 }, { ESA_FLOAT32, 0, 50000 } };
	struct simswitch s;
	struct job j;

	run_one(&s, &j, 13, 3, 31, "values=856 window=64 udp_gro=1", ops, 2, coalescing, 856);
	ok(!job_check(&j, 0, -1, NULL, 0) && !job_check(&j, 1, -1, NULL, 0) &&
	   ST(&j, udp_gro) == 3 && ST(&j, rx_coalesced) > ST(&j, rx_packets) / 4 &&
	   ST(&j, rx_results) == ST(&j, chunks) && ST(&j, rx_invalid) > 0 && s.st.gso_sends > 0,
	   "UDP_GRO: 856 values, results in GSO sends of up to 8 (%llu), through loss, "
	   "duplicates and garbage: exact, %llu of %llu datagrams coalesced, %llu invalid "
	   "ignored", (unsigned long long)s.st.gso_sends,
	   (unsigned long long)ST(&j, rx_coalesced), (unsigned long long)ST(&j, rx_packets),
	   (unsigned long long)ST(&j, rx_invalid));
	job_free(&j);
	run_one(&s, &j, 13, 3, 32, "values=856 window=64 udp_gro=0", ops, 2, coalescing, 856);
	ok(!job_check(&j, 0, -1, NULL, 0) && !job_check(&j, 1, -1, NULL, 0) &&
	   ST(&j, udp_gro) == 0 && ST(&j, rx_coalesced) == 0 && s.st.gso_sends > 0,
	   "udp_gro=0: the same results one datagram at a time (the kernel splits them), "
	   "exact");
	job_free(&j);
	fetch_case(8, " of results that came coalesced (UDP_GRO)");
}

static void false_ovf(struct simswitch *s)
{
	/* the data chunks of the two ops of test_overflow (see the layout in
	 * request.c): int32 50000 = a check chunk and 196 data chunks, span
	 * 589; float32 50000 = a check, 7 scale and 196 data chunks from 589 */
	s->fo_lo[0] = 1;
	s->fo_hi[0] = 197;
	s->fo_lo[1] = 589 + 8;
	s->fo_hi[1] = 589 + 204;
	s->nfo = 2;
	s->p_false_ovf = 0.10;
	s->p_dup = 0.05;
	s->p_drop_out = 0.02;
}

static void test_overflow(void)
{
	struct op ops[] = { { ESA_INT32, 0, 50000 }, { ESA_FLOAT32, 0, 50000 } };
	struct op big[] = { { ESA_INT32, 1, 20000 }, { ESA_INT32, 0, 3000 } };
	struct simswitch s;
	struct job j;
	double ratio;

	run_one(&s, &j, 2, 3, 31, NULL, ops, 2, false_ovf, 256);
	/* a redone chunk is quantized at headroom max(h + 1, ceil(log2 n)) */
	ok(!job_check(&j, 0, -1, NULL, 0) && !job_check(&j, 1, 3, &ratio, 0) &&
	   ST(&j, redos) > 0 && ST(&j, redos) == ST(&j, overflows),
	   "overflow flags on sums that fit (a partial overflowed): %llu chunks redone, "
	   "int32 exact, float32 within the bound", (unsigned long long)ST(&j, redos));
	job_free(&j);

	run_one(&s, &j, 3, 4, 41, NULL, big, 2, NULL, 256);
	ok(!job_check(&j, 0, -1, NULL, -EOVERFLOW) && !job_check(&j, 1, -1, NULL, 0) &&
	   s.st.true_ovf > 0,
	   "int32 sums beyond int32: -EOVERFLOW on every rank, those clamped, the rest "
	   "(partials that would overflow included) exact; the next allreduce is fine");
	job_free(&j);

}

/* Float inputs where every rank has the block's largest value, same sign. */
static void test_float_headroom(void)
{
	struct op f[] = { { ESA_FLOAT32, 0, 40000 } };
	struct simswitch s;
	struct job j;
	double ratio;
	uint16_t sp = ports(1);

	ss_start(&s, sp, 256, 5);
	job_init(&j, 6, 4, 61, sp, "float_headroom=0", f, 1);
	for (int r = 0; r < 4; r++)
		for (size_t i = 0; i < 40000; i += 997)
			((float *)j.w[r].in[0])[i] = 1.5f * (float)ldexp(1, 9);
	ss_job(&s, 6, 4, j.w[0].port0);
	ss_run(&s);
	{
		struct job *jp = &j;

		jobs_run(&jp, 1);
	}
	ss_stop(&s);
	ok(!job_check(&j, 0, -1, &ratio, 0) && ST(&j, redos) > 0 && s.st.true_ovf > 0,
	   "float32 at headroom 0: %llu overflowed chunks redone at the safe scale, all "
	   "within the bound", (unsigned long long)ST(&j, redos) / 4);
	job_free(&j);
}

/*
 * The largest vector: ESA_MAX_VALUES (2232, a jumbo frame: multi-buffer in
 * XDP; 856, one single-buffer frame, is 30-hosts' every scenario).
 */
static void test_large(void)
{
	struct op ops[] = { { ESA_INT32, 0, 100000 }, { ESA_FLOAT32, 0, 70001 } };
	char over[16], max[16], msg[64], set[48];
	struct simswitch s;
	struct job j;
	double ratio = 0;
	esa_config *c = esa_config_new();
	/* AF_XDP frames are one page: io=xdp refuses more than one frame's */
	int nv = g_io && strstr(g_io, "io=xdp") ? ESA_FRAME_VALUES : ESA_MAX_VALUES;
	bool cfg;

	snprintf(over, sizeof(over), "%d", ESA_MAX_VALUES + ESA_VALUES_ALIGN);
	snprintf(max, sizeof(max), "%d", ESA_MAX_VALUES);
	snprintf(msg, sizeof(msg), "values \"%s\": not a number in 8..%s", over, max);
	snprintf(set, sizeof(set), "values=%d window=64", nv);
	cfg = esa_config_set(c, "values", over) == -EINVAL &&
	      strstr(esa_config_error(c), msg) && !esa_config_set(c, "values", max);
	esa_config_free(c);
	ok(cfg, "config: values %s taken, %s refused (ESA_MAX_VALUES)", max, over);
	run_one(&s, &j, 16, 3, 161, set, ops, 2, lossy, nv);
	ok(!job_check(&j, 0, -1, NULL, 0) && !job_check(&j, 1, -1, &ratio, 0) &&
	   ST(&j, rx_results) == ST(&j, chunks) && ST(&j, tx_resends) > 0,
	   "values=%d, 3 workers, loss/dups/reordering: int32 exact, float32 within the "
	   "bound (worst %.3g of it), %llu chunks of %d-byte packets", nv, ratio,
	   (unsigned long long)ST(&j, chunks) / 3, ESA_HDR_LEN + 4 * nv);
	job_free(&j);
}

static void test_float(void)
{
	struct op ops[] = { { ESA_FLOAT32, 0, 262144 }, { ESA_FLOAT32, 0, 1000 },
			    { ESA_FLOAT32, 0, 7 } };
	struct op nan[] = { { ESA_FLOAT32, 2, 30000 }, { ESA_FLOAT32, 0, 3000 } };
	struct simswitch s;
	struct job j;
	double r0 = 0, r1 = 0;

	run_one(&s, &j, 7, 4, 71, "window=100", ops, 3, lossy, 256);
	ok(!job_check(&j, 0, -1, &r0, 0) && !job_check(&j, 1, -1, &r1, 0) &&
	   !job_check(&j, 2, -1, NULL, 0),
	   "float32, 4 workers, loss/dups/reordering: within the documented bound "
	   "(worst %.3f of it; magnitudes 2^-30..2^10)", r0 > r1 ? r0 : r1);
	ok(r0 > 0.01, "the bound is not vacuous: errors reach %.3f of it", r0);
	ok(ST(&j, scale_chunks) > 0 && ST(&j, rx_results) == ST(&j, chunks) &&
	   ST(&j, rx_duplicates) > 0,
	   "scale negotiation: %llu scale chunks, exactly one result per chunk",
	   (unsigned long long)ST(&j, scale_chunks));
	job_free(&j);

	run_one(&s, &j, 7, 3, 72, NULL, nan, 2, lossy, 256);
	ok(!job_check(&j, 0, -1, NULL, -ERANGE) && !job_check(&j, 1, -1, NULL, 0),
	   "a NaN on one rank: -ERANGE on every rank, its block NaN, the rest within "
	   "bound; the next allreduce is fine");
	job_free(&j);

	{	/* small vectors: a block's histogram spans two chunks */
		struct op o2[] = { { ESA_FLOAT32, 0, 20000 }, { ESA_INT32, 0, 999 } };

		run_one(&s, &j, 8, 3, 81, "values=40 float_block=3 window=32", o2, 2, lossy, 40);
		ok(!job_check(&j, 0, -1, NULL, 0) && !job_check(&j, 1, -1, NULL, 0),
		   "40 values per packet, 3-chunk scale blocks (histograms across chunks)");
		job_free(&j);
	}
}

static void test_async_multi(void)
{
	struct op a[] = { { ESA_INT32, 0, 40000 }, { ESA_FLOAT32, 0, 40000 },
			  { ESA_INT32, 0, 1000 } };
	struct op b[] = { { ESA_FLOAT32, 0, 70000 }, { ESA_INT32, 0, 70000 } };
	struct simswitch s;
	struct job j1, j2, *jp[2] = { &j1, &j2 };
	uint16_t sp = ports(1);

	ss_start(&s, sp, 256, 9);
	lossy(&s);
	job_init(&j1, 1, 3, 91, sp, "window=48 priority=las prio_max=5 quantum=8", a, 3);
	job_init(&j2, 2, 2, 92, sp, "window=200", b, 2);
	for (int r = 0; r < 3; r++)
		j1.w[r].async = true;
	for (int r = 0; r < 2; r++)
		j2.w[r].async = true;
	ss_job(&s, 1, 3, j1.w[0].port0);
	ss_job(&s, 2, 2, j2.w[0].port0);
	ss_run(&s);
	jobs_run(jp, 2);
	ss_stop(&s);
	ok(!job_check(&j1, 0, -1, NULL, 0) && !job_check(&j1, 1, -1, NULL, 0) &&
	   !job_check(&j1, 2, -1, NULL, 0) && !job_check(&j2, 0, -1, NULL, 0) &&
	   !job_check(&j2, 1, -1, NULL, 0),
	   "two jobs (3 and 2 workers) in one process, 3 and 2 requests outstanding each: "
	   "all correct");
	ok(!s.st.prio_mismatch, "las priorities agree across ranks");
	job_free(&j1);
	job_free(&j2);
}

/* A kept result answers a FETCH; gso > 1: the results came coalesced. */
static void fetch_case(int gso, const char *what)
{
	struct op ops[] = { { ESA_INT32, 0, 2560 } };
	/*
	 * Not on the stack: at ESA_MAX_VALUES a simswitch is 5.7 MB, and
	 * test_gro() calls this with one of its own on the stack.
	 */
	static struct simswitch s;
	struct job j, *jp = &j;
	uint16_t sp = ports(1);
	int32_t want[256];
	uint32_t seq = 4;

	ss_start(&s, sp, 256, 3);
	s.gso = gso;
	job_init(&j, 11, 2, 101, sp, gso > 1 ? "udp_gro=1" : NULL, ops, 1);
	for (int r = 0; r < 2; r++)
		j.w[r].serve_ms = 600;
	ss_job(&s, 11, 2, j.w[0].port0);
	ss_run(&s);
	for (int r = 0; r < 2; r++)
		pthread_create(&j.w[r].th, NULL, worker_main, &j.w[r]);
	/* ask rank 1 for chunk 4 once both are done and serving */
	for (int i = 0; i < 100 && !(j.w[0].w && j.w[1].w &&
				     esa_worker_stat(j.w[1].w, "ops") == 1); i++)
		usleep(10000);
	usleep(50000);
	ss_fetch(&s, 0, 1, seq);
	ss_fetch(&s, 0, 1, 12345);	/* a chunk it never had: no answer */
	for (int r = 0; r < 2; r++)
		pthread_join(j.w[r].th, NULL);
	ss_stop(&s);
	for (int i = 0; i < 256; i++)	/* seq 4: data chunk 3, after the check */
		want[i] = ((int32_t *)j.w[0].in[0])[(seq - 1) * 256 + i] +
			  ((int32_t *)j.w[1].in[0])[(seq - 1) * 256 + i];
	ok(s.fetch_got == 1 && s.fetch_seq == seq && !memcmp(s.fetch_vals, want, sizeof(want)) &&
	   j.w[1].st.fetch_rx == 2 && j.w[1].st.fetch_answered == 1 &&
	   (gso < 2 || (s.st.gso_sends && j.w[1].st.rx_coalesced)),
	   "FETCH%s: a finished worker answers with its kept result, ignores unknown chunks",
	   what);
	(void)jp;
	job_free(&j);
}

static void test_fetch(void)
{
	fetch_case(0, "");
}

static void fetch_status(struct simswitch *s)
{
	s->fetch_status = true;	/* as a PS: a FETCH with the ranks held */
}

static void test_give_up(void)
{
	struct op ops[] = { { ESA_INT32, 0, 1000 }, { ESA_INT32, 0, 10 } };
	struct simswitch s;
	struct job j;
	uint16_t sp = ports(1);
	uint64_t t0 = esa_now_mono_ns();

	/* a job of 2 whose rank 1 never runs; the PS says what it holds */
	ss_start(&s, sp, 256, 111);
	fetch_status(&s);
	job_init(&j, 12, 2, 111, sp, "give_up_ms=300", ops, 2);
	ss_job(&s, 12, 2, j.w[0].port0);
	ss_run(&s);
	pthread_create(&j.w[0].th, NULL, worker_main, &j.w[0]);
	pthread_join(j.w[0].th, NULL);
	ss_stop(&s);
	ok(j.w[0].rc[0] == -ETIMEDOUT && j.w[0].rc[1] == -EPIPE &&
	   esa_now_mono_ns() - t0 < 3000000000ULL,
	   "a peer that never comes: -ETIMEDOUT after give_up_ms, then -EPIPE (%d, %d)",
	   j.w[0].rc[0], j.w[0].rc[1]);
	ok(strstr(j.w[0].err, "no result for 300 ms (job 12 rank 0): the PS 127.0.0.1:") &&
	   strstr(j.w[0].err, "holds chunk ") && strstr(j.w[0].err, "of rank(s) 0 and lacks "
							  "rank(s) 1"),
	   "the error names the rank the PS lacks (%s)", j.w[0].err);
	job_free(&j);
}

/* A UDP socket on 127.0.0.1 (or addr) at port; -1 on failure. */
static int bound(const char *addr, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 2 };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	inet_pton(AF_INET, addr, &a.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One rank of a job of `workers` on loopback: switch, PS and local ports. */
static esa_worker *lone(uint16_t sw, uint16_t ps, uint16_t me, int workers, int give_up,
			char *err, size_t len)
{
	esa_config *c = esa_config_new();
	esa_worker *w;
	char a[64];

	snprintf(a, sizeof(a), "127.0.0.1:%u", sw);
	esa_config_set(c, "switch", a);
	snprintf(a, sizeof(a), "127.0.0.1:%u", ps);
	esa_config_set(c, "ps", a);
	snprintf(a, sizeof(a), "127.0.0.1:%u", me);
	esa_config_set(c, "local", a);
	esa_config_set(c, "job", "4");
	esa_config_set(c, "rank", "0");
	esa_config_set_int(c, "workers", workers);
	esa_config_set_int(c, "give_up_ms", give_up);
	esa_config_set(c, "timeout_ms", "50");
	esa_config_set(c, "timeout_max_ms", "100");
	apply_extra(c, g_io);
	w = esa_worker_open(c, err, len);
	esa_config_free(c);
	return w;
}

/* Results and FETCHes from a rogue: another address, or the switch's and
 * the PS's address with another port.  Ignored and counted; the real ones
 * are used; a FETCH is answered to the PS only. */
static void test_trust(void)
{
	uint16_t p = ports(5);
	int swfd = bound("127.0.0.1", p), psfd = bound("127.0.0.1", p + 1);
	int rogue[2] = { bound("127.0.0.2", p + 3), bound("127.0.0.1", p + 4) };
	struct sockaddr_in wa = { .sin_family = AF_INET, .sin_port = htons(p + 2),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	static int32_t in[256], out[256];
	uint8_t pkt[2][2048], fetch[ESA_HDR_LEN];
	char err[256] = "";
	esa_worker *w = lone(p, p + 1, p + 2, 1, 5000, err, sizeof(err));
	esa_request *r = NULL;
	bool got = true, quiet = true;
	int rc = -1;

	for (int i = 0; i < 256; i++)
		in[i] = 1000 + i;
	if (w)
		r = esa_allreduce_start(w, ESA_INT32, in, out, 256);
	if (r)
		esa_progress(w, 0);	/* its check and data chunks go out */
	for (int k = 0; k < 2; k++)
		got &= recv(swfd, pkt[k], sizeof(pkt[k]), 0) == ESA_HDR_LEN + 1024;
	for (int k = 0; got && k < 2; k++) {
		struct esa_hdr *h = (struct esa_hdr *)pkt[k];

		h->type = ESA_T_RESULT;
		h->rank = htons(ESA_RANK_NONE);
		memcpy(fetch, h, ESA_HDR_LEN);
		((struct esa_hdr *)fetch)->type = ESA_T_FETCH;
		((struct esa_hdr *)fetch)->bitmap = 0;
		((struct esa_hdr *)fetch)->count = 0;
		for (int q = 0; q < 2; q++) {
			int32_t forged[256];

			memcpy(forged, pkt[k] + ESA_HDR_LEN, sizeof(forged));
			forged[0] = 7;
			memcpy(pkt[k] + ESA_HDR_LEN, forged, sizeof(forged));
			sendto(rogue[q], pkt[k], ESA_HDR_LEN + 1024, 0, (void *)&wa, sizeof(wa));
			memcpy(forged, in + 0, 4);	/* back to the true sum */
			memcpy(pkt[k] + ESA_HDR_LEN, forged, sizeof(forged));
			sendto(rogue[q], fetch, ESA_HDR_LEN, 0, (void *)&wa, sizeof(wa));
		}
	}
	/* the forged ones are queued first; then the switch's own */
	for (int k = 0; got && k < 2; k++) {
		struct esa_hdr *h = (struct esa_hdr *)pkt[k];

		if (ntohl(h->seq) == 1)
			memcpy(pkt[k] + ESA_HDR_LEN, in, sizeof(in));
		sendto(swfd, pkt[k], ESA_HDR_LEN + 1024, 0, (void *)&wa, sizeof(wa));
	}
	if (r)
		rc = esa_wait(r, 3000);
	ok(got && !rc && !memcmp(in, out, sizeof(in)) && esa_worker_stat(w, "rx_results") == 2 &&
	   esa_worker_stat(w, "rx_untrusted") == 4 && esa_worker_stat(w, "fetch_refused") == 4,
	   "results from another address, and from the switch's address but another port: "
	   "ignored (rx_untrusted %lld), FETCHes from them refused (fetch_refused %lld), the "
	   "switch's results used (%s)", (long long)esa_worker_stat(w, "rx_untrusted"),
	   (long long)esa_worker_stat(w, "fetch_refused"), rc ? esa_strerror(rc) : "exact");
	/* the PS asks: answered to it alone */
	sendto(psfd, fetch, ESA_HDR_LEN, 0, (void *)&wa, sizeof(wa));
	if (w)
		esa_serve(w, 300, 100);
	for (int q = 0; q < 2; q++)
		quiet &= recv(rogue[q], pkt[0], sizeof(pkt[0]), MSG_DONTWAIT) < 0;
	ok(quiet && recv(psfd, pkt[1], sizeof(pkt[1]), 0) == ESA_HDR_LEN + 1024 &&
	   esa_worker_stat(w, "fetch_answered") == 1,
	   "the PS's FETCH answered, to the PS; nothing ever sent to the rogues");
	if (r)
		esa_request_free(r);
	esa_worker_close(w);
	close(swfd);
	close(psfd);
	close(rogue[0]);
	close(rogue[1]);
}

/*
 * Resend timers in microseconds, and no look at the whole window per pump:
 * a worker with timeout_us=300 and a full window of 512 in flight to a sink
 * that never answers.  A new chunk's first deadline is 300 us + a quarter
 * of jitter after its send (the old floor was 10 ms, in ms steps); pumping
 * with nothing due looks at no packet at all (the old send pass scanned
 * the window every time).  Deterministic: deadlines and counts, no timing.
 */
static void test_timers(void)
{
	uint16_t p = ports(3);
	int sink = bound("127.0.0.1", p);
	esa_config *c = esa_config_new();
	int32_t *buf = calloc(511 * 256, 4);
	uint64_t min = UINT64_MAX, max = 0, looked;
	esa_request *r = NULL;
	esa_worker *w;
	char a[64], err[256] = "";

	snprintf(a, sizeof(a), "127.0.0.1:%u", p);
	esa_config_set(c, "switch", a);
	esa_config_set(c, "ps", a);
	snprintf(a, sizeof(a), "127.0.0.1:%u", p + 1);
	esa_config_set(c, "local", a);
	esa_config_set(c, "job", "4");
	esa_config_set(c, "rank", "0");
	esa_config_set(c, "workers", "1");
	esa_config_set(c, "window", "512");
	esa_config_set(c, "timeout_us", "300");
	esa_config_set(c, "timeout_max_ms", "60000");
	apply_extra(c, g_io);
	ok(esa_config_set(c, "timeout_us", "10") == -EINVAL &&
	   !esa_config_get(c, "timeout_ms", a, sizeof(a)) && !strcmp(a, "0"),
	   "config: timeout_us 300 taken (timeout_ms reads 0), 10 refused (%s)",
	   esa_config_error(c));
	w = esa_worker_open(c, err, sizeof(err));
	if (w)
		r = esa_allreduce_start(w, ESA_INT32, buf, buf, 511 * 256);
	while (r && esa_worker_stat(w, "tx_packets") < 512)
		esa_pump(w, 0);
	for (uint32_t i = 0; w && i < w->nheap; i++) {
		uint64_t d = w->heap[i]->due_ns - w->heap[i]->first_ns;

		min = d < min ? d : min;
		max = d > max ? d : max;
	}
	ok(w && w->nheap == 512 && min >= 300000 && max <= 375000,
	   "timeout_us=300: the 512 chunks in flight are due %.0f..%.0f us after their send",
	   min / 1e3, max / 1e3);
	looked = w ? w->looked : 0;
	for (int i = 0; w && i < 1000; i++) {
		for (uint32_t k = 0; k < w->nheap; k++)
			w->heap[k]->due_ns += 1000000000ULL;	/* nothing due meanwhile */
		esa_pump(w, 0);
	}
	ok(w && w->looked == looked && w->nheap == 512,
	   "1000 pumps with 512 chunks in flight and none due look at %llu packets",
	   (unsigned long long)(w ? w->looked - looked : 0));
	if (r)
		esa_request_free(r);
	esa_worker_close(w);
	esa_config_free(c);
	free(buf);
	close(sink);
}

/* Ranks that disagree on an allreduce's length or dtype: every rank fails
 * it at once with -EPROTO, naming what each has; the worker is done. */
static void test_mismatch(void)
{
	struct op ops[] = { { ESA_INT32, 0, 2000 }, { ESA_INT32, 0, 10 } };
	struct simswitch s;
	struct job j, *jp = &j;
	uint16_t sp = ports(1);
	uint64_t t0 = esa_now_mono_ns();

	ss_start(&s, sp, 256, 7);
	job_init(&j, 14, 2, 141, sp, "give_up_ms=20000", ops, 2);
	j.w[0].ops[0].n = 1000;
	ss_job(&s, 14, 2, j.w[0].port0);
	ss_run(&s);
	jobs_run(&jp, 1);
	ss_stop(&s);
	ok(j.w[0].rc[0] == -EPROTO && j.w[1].rc[0] == -EPROTO && j.w[0].rc[1] == -EPIPE &&
	   j.w[1].rc[1] == -EPIPE && esa_now_mono_ns() - t0 < 5000000000ULL,
	   "int32 allreduces of 1000 and 2000 elements: -EPROTO on both ranks at once, then "
	   "-EPIPE (%d %d)", j.w[0].rc[0], j.w[1].rc[0]);
	ok(!strcmp(j.w[0].err, "ranks disagree on allreduce 0 of job 14: rank 1 2000 int32 "
			       "(here rank 0 1000 int32)") &&
	   !strcmp(j.w[1].err, "ranks disagree on allreduce 0 of job 14: rank 0 1000 int32 "
			       "(here rank 1 2000 int32)"),
	   "each rank's error says what the other has (%s | %s)", j.w[0].err, j.w[1].err);
	job_free(&j);

	ss_start(&s, sp, 256, 8);
	job_init(&j, 15, 3, 151, sp, "give_up_ms=20000", ops, 2);
	j.w[2].ops[0].dtype = ESA_FLOAT32;
	ss_job(&s, 15, 3, j.w[0].port0);
	ss_run(&s);
	jobs_run(&jp, 1);
	ss_stop(&s);
	ok(j.w[0].rc[0] == -EPROTO && j.w[1].rc[0] == -EPROTO && j.w[2].rc[0] == -EPROTO &&
	   strstr(j.w[0].err, "rank 2 2000 float32 (here rank 0 2000 int32)") &&
	   strstr(j.w[2].err, "rank 0 2000 int32, rank 1 2000 int32 (here rank 2 2000 float32)"),
	   "int32 on two ranks, float32 on the third: -EPROTO on all three (%s)", j.w[2].err);
	job_free(&j);
}

/* A dead switch, a dead PS, and both silent: the error names which. */
static void test_dead_peers(void)
{
	uint16_t p = ports(4);
	int hole = bound("127.0.0.1", p + 3);	/* takes anything, answers nothing */
	static int32_t buf[256];
	char err[256] = "";
	esa_worker *w;
	int rc;

	/* the switch's port closed: ICMP port unreachable for every packet */
	w = lone(p, p + 1, p + 2, 1, 400, err, sizeof(err));
	rc = w ? esa_allreduce_i32(w, buf, buf, 256) : -1;
	snprintf(err, sizeof(err), "%s", esa_worker_error(w));
	ok(rc == -ETIMEDOUT && esa_worker_stat(w, "icmp_errors") > 0 &&
	   strstr(err, "(job 4 rank 0): the switch 127.0.0.1:") &&
	   strstr(err, " is unreachable: Connection refused (ICMP from 127.0.0.1,"),
	   "the switch's port closed: the error names the switch and its ICMP error (%s)", err);
	esa_worker_close(w);
	/* the switch takes everything and answers nothing, the PS's port is
	 * closed: the probe half-way draws the PS's ICMP error */
	w = lone(p + 3, p + 1, p + 2, 1, 400, err, sizeof(err));
	rc = w ? esa_allreduce_i32(w, buf, buf, 256) : -1;
	snprintf(err, sizeof(err), "%s", esa_worker_error(w));
	ok(rc == -ETIMEDOUT && esa_worker_stat(w, "ps_probes") == 1 &&
	   strstr(err, "the PS 127.0.0.1:") &&
	   strstr(err, " is unreachable: Connection refused (ICMP from 127.0.0.1, 1 time)"),
	   "a silent switch and the PS's port closed: the error names the PS (%s)", err);
	esa_worker_close(w);
	/* both take everything and answer nothing */
	w = lone(p + 3, p + 3, p + 2, 1, 400, err, sizeof(err));
	rc = w ? esa_allreduce_i32(w, buf, buf, 256) : -1;
	snprintf(err, sizeof(err), "%s", esa_worker_error(w));
	ok(rc == -ETIMEDOUT && strstr(err, "nothing from the switch 127.0.0.1:") &&
	   strstr(err, "nor from the PS 127.0.0.1:") && strstr(err, "no ICMP error"),
	   "both silent: the error says so (%s)", err);
	esa_worker_close(w);
	close(hole);
}

/* The receive buffer granted, against what root and rmem_max allow; run
 * also as non-root (30-hosts: LIBTEST=rcvbuf under setpriv). */
static void test_rcvbuf(void)
{
	uint16_t p = ports(3);
	long long rmem_max = 0, ask, want, got;
	char err[256] = "", a[64];
	FILE *f = fopen("/proc/sys/net/core/rmem_max", "r");
	bool root = geteuid() == 0;
	esa_config *c = esa_config_new();
	esa_worker *w;

	if (f && fscanf(f, "%lld", &rmem_max) != 1)
		rmem_max = 0;
	if (f)
		fclose(f);
	/* more than rmem_max: only root gets it all */
	ask = want = rmem_max < (4 << 20) ? 4 << 20 : 2 * rmem_max;
	if (!root)
		want = rmem_max;
	snprintf(a, sizeof(a), "127.0.0.1:%u", p);
	esa_config_set(c, "switch", a);
	esa_config_set(c, "ps", a);
	snprintf(a, sizeof(a), "127.0.0.1:%u", p + 2);
	esa_config_set(c, "local", a);
	esa_config_set(c, "job", "4");
	esa_config_set(c, "rank", "0");
	esa_config_set(c, "workers", "1");
	esa_config_set_int(c, "rcvbuf", ask);
	apply_extra(c, g_io);	/* AF_XDP: the UDP socket beside it */
	w = esa_worker_open(c, err, sizeof(err));
	esa_config_free(c);
	got = esa_worker_stat(w, "rcvbuf");
	ok(w && got == want && (got < ask) == !!esa_worker_warning(w)[0] &&
	   (got == ask || strstr(esa_worker_warning(w), "rcvbuf: ")),
	   "as %s (rmem_max %lld): a receive buffer of %lld bytes of %lld asked, reported; "
	   "warning \"%s\"", root ? "root" : "non-root", rmem_max, got, ask,
	   w ? esa_worker_warning(w) : err);
	esa_worker_close(w);
}

static void test_prio(void)
{
	struct esa_worker w = { 0 };
	struct esa_request r = { 0 };
	bool mono = true;
	int prev = -1, lo = 255, hi = 0;

	w.cfg.policy = ESA_PRIO_SRSF;
	w.cfg.prio_max = 5;
	w.cfg.quantum = 4;
	r.npos = 300;
	for (uint32_t p = 0; p < r.npos; p++) {
		int pr = esa_prio_of(&w, &r, p);

		mono &= pr >= prev;
		prev = pr;
		lo = pr < lo ? pr : lo;
		hi = pr > hi ? pr : hi;
	}
	ok(mono && lo == 0 && hi == 5,
	   "srsf: priority rises as the allreduce nears its end, 0..prio_max");
	w.cfg.policy = ESA_PRIO_LAS;
	prev = 256;
	mono = true;
	for (uint32_t p = 0; p < r.npos; p++) {
		int pr = esa_prio_of(&w, &r, p);

		mono &= pr <= prev;
		prev = pr;
	}
	ok(mono && esa_prio_of(&w, &r, 0) == 5 && prev == 0,
	   "las: priority falls as the job attains service");
	/* The simulator's levels (sim_test checks the same values). */
	w.cfg.prio_max = 255;
	w.cfg.quantum = 64;
	w.cfg.prio_steps = 16;
	r.attained0 = 32;
	ok(esa_prio_of(&w, &r, 0) == 246 && esa_prio_of(&w, &r, 32) == 239 &&
	   esa_prio_of(&w, &r, 160) == 223,
	   "las with quantum=64 prio_steps=16 prio_max=255: 255 - floor(16 log2(1 + n / 64))");
	w.cfg.policy = ESA_PRIO_SRSF;
	r.npos = 1000;
	ok(esa_prio_of(&w, &r, 1000 - 193) == 223 && esa_prio_of(&w, &r, 999) == 255,
	   "srsf with the same settings: the same levels of the chunks left");
	/* total_chunks: the job's chunks left, as the simulator's srsf
	 * (sim_test checks sim_prio_of(SRSF) at 5000 - 193 of 5000: 223) */
	w.cfg.total_chunks = 5000;
	r.npos = 300;
	r.attained0 = 4700;
	ok(esa_prio_of(&w, &r, 300 - 193) == 223 && esa_prio_of(&w, &r, 299) == 255 &&
	   esa_prio_of(&w, &r, 0) == 215,
	   "srsf with total_chunks=5000: the job's chunks left, this one included "
	   "(the simulator's levels)");
	r.attained0 = 6000;
	ok(esa_prio_of(&w, &r, 0) == 255, "srsf past total_chunks: the top level");
}

/* The first sequence number worker (run) sends to a socket standing in for
 * the switch; -1 if none came. */
static int64_t first_seq(const char *run, int *set_run_after)
{
	uint16_t sp = ports(2);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(sp),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 2 };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	esa_config *c = esa_config_new();
	static int32_t buf[256];
	uint8_t pkt[2048];
	int64_t seq = -1;
	esa_request *r = NULL;
	esa_worker *w = NULL;
	char s[64];

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)))
		goto out;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	snprintf(s, sizeof(s), "127.0.0.1:%u", sp);
	esa_config_set(c, "switch", s);
	snprintf(s, sizeof(s), "127.0.0.1:%u", sp + 1);
	esa_config_set(c, "local", s);
	esa_config_set(c, "ps", "127.0.0.1:9");
	esa_config_set(c, "job", "5");
	esa_config_set(c, "rank", "0");
	esa_config_set(c, "workers", "2");
	if (run)
		esa_config_set(c, "run", run);
	apply_extra(c, g_io);
	w = esa_worker_open(c, NULL, 0);
	if (!w)
		goto out;
	r = esa_allreduce_start(w, ESA_INT32, buf, buf, 256);
	esa_progress(w, 0);
	if (r && recv(fd, pkt, sizeof(pkt), 0) >= ESA_HDR_LEN)
		seq = ntohl(((struct esa_hdr *)pkt)->seq);
	*set_run_after = esa_worker_set_run(w, 7);
out:
	if (r)
		esa_request_free(r);
	esa_worker_close(w);
	esa_config_free(c);
	if (fd >= 0)
		close(fd);
	return seq;
}

static void test_run(void)
{
	esa_config *c = esa_config_new();
	char buf[32];
	int busy0 = 0, busy1 = 0;
	int64_t s0, s1;

	ok(esa_config_set(c, "run", "4294967296") == -EINVAL && !esa_config_set(c, "run",
	   "4294967295") && !esa_config_get(c, "run", buf, sizeof(buf)) &&
	   !strcmp(buf, "4294967295"), "config: run is 0..2^32-1 (%s)", buf);
	ok(esa_config_set(c, "total_chunks", "-1") == -EINVAL &&
	   strstr(esa_config_error(c), "total_chunks \"-1\": not a number in 0..2^62") &&
	   !esa_config_set(c, "total_chunks", "5000") &&
	   !esa_config_get(c, "total_chunks", buf, sizeof(buf)) && !strcmp(buf, "5000"),
	   "config: total_chunks is 0..2^62 (%s)", esa_config_error(c));
	esa_config_free(c);
	ok(esa_run_base(0) == 0 && esa_run_base(1) != esa_run_base(2) && esa_run_base(1),
	   "run 0 starts at sequence number 0, others at a hash of the run");
	s0 = first_seq(NULL, &busy0);
	s1 = first_seq("123456", &busy1);
	ok(s0 == 0 && s1 == esa_run_base(123456),
	   "a worker's first chunk: sequence number 0 without run, %u with run=123456 (%lld)",
	   esa_run_base(123456), (long long)s1);
	ok(busy0 == -EBUSY && busy1 == -EBUSY && esa_worker_set_run(NULL, 1) == -EINVAL,
	   "esa_worker_set_run: refused once an allreduce has started");
}

/* ------------------------------------------------------------------ */
/* AF_XDP                                                              */
/* ------------------------------------------------------------------ */

static esa_config *xdp_config(const char *io, const char *more)
{
	esa_config *c = esa_config_new();
	uint16_t p = ports(3);
	char a[64];

	snprintf(a, sizeof(a), "127.0.0.1:%u", p);
	esa_config_set(c, "switch", a);
	snprintf(a, sizeof(a), "127.0.0.1:%u", p + 1);
	esa_config_set(c, "ps", a);
	snprintf(a, sizeof(a), "127.0.0.1:%u", p + 2);
	esa_config_set(c, "local", a);
	esa_config_set(c, "job", "4");
	esa_config_set(c, "rank", "0");
	esa_config_set(c, "workers", "1");
	esa_config_set(c, "io", io);
	apply_extra(c, more);
	return c;
}

/* io=xdp where it cannot be: a one-line reason; io=auto: UDP, and why.  As
 * root in a namespace of its own (an interface that is not there), and as
 * nobody (30-hosts runs LIBTEST=xdp_refused under setpriv). */
static void test_xdp_refused(void)
{
	const char *more = geteuid() ? NULL : "ifname=nosuchif";
	esa_config *c = xdp_config("xdp", more);
	char err[256] = "", io[64];
	esa_worker *w = esa_worker_open(c, err, sizeof(err));
	bool one_line = !strchr(err, '\n') && strlen(err) > 10;

	ok(!w && one_line && !strncmp(err, "io=xdp: ", 8) &&
	   strstr(err, geteuid() ? "needs CAP_BPF and CAP_NET_ADMIN" : "no interface nosuchif"),
	   "io=xdp %s: refused with one line (%s)", geteuid() ? "as non-root" :
	   "on an interface that is not there", err);
	esa_worker_close(w);
	esa_config_set(c, "io", "auto");
	w = esa_worker_open(c, err, sizeof(err));
	snprintf(io, sizeof(io), "%s", esa_worker_io(w));
	ok(w && !strncmp(io, "udp", 3) && esa_worker_stat(w, "io_xdp") == 0 &&
	   strstr(esa_worker_warning(w), "io=auto: UDP, since AF_XDP cannot open: "),
	   "io=auto there: UDP (%s), and the warning says why (%s)", io,
	   w ? esa_worker_warning(w) : err);
	esa_worker_close(w);
	ok(esa_config_set(c, "io", "afxdp") == -EINVAL &&
	   !strcmp(esa_config_error(c), "io \"afxdp\": not udp, xdp or auto") &&
	   esa_config_set(c, "queue", "1024") == -EINVAL &&
	   esa_config_set(c, "ifname", "a/b") == -EINVAL &&
	   esa_config_set(c, "ifname", "0123456789abcdef") == -EINVAL &&
	   !esa_config_get(c, "io", io, sizeof(io)) && !strcmp(io, "auto"),
	   "config: io, queue, ifname checked (%s)", esa_config_error(c));
	esa_config_free(c);
}

/* How many XDP programs the namespace's lo runs (ip link). */
static int lo_xdp(void)
{
	return system("ip link show dev lo | grep -q ' xdp'") == 0;
}

/* Root, in a network namespace of its own: io=xdp on lo. */
static void test_xdp_open(void)
{
	esa_config *c = xdp_config("xdp", NULL);
	char err[256] = "", io[160] = "";
	esa_worker *w = esa_worker_open(c, err, sizeof(err));
	int on, child, st = -1;

	snprintf(io, sizeof(io), "%s", w ? esa_worker_io(w) : err);
	on = lo_xdp();
	ok(w && esa_worker_stat(w, "io_xdp") == 1 && !strncmp(io, "xdp lo queue 0 copy", 19) &&
	   on, "io=xdp, the interface the route to the switch takes: %s", io);
	esa_worker_close(w);
	ok(on && !lo_xdp(), "closed: no XDP program left on the interface");
	esa_config_set(c, "queue", "3");
	w = esa_worker_open(c, err, sizeof(err));
	ok(!w && strstr(err, "io=xdp: AF_XDP socket on lo queue 3: ") && !lo_xdp(),
	   "a queue the interface does not have: refused (%s)", err);
	esa_config_set(c, "queue", "0");
	/* a process that dies with its worker open leaves nothing behind */
	child = fork();
	if (!child) {
		w = esa_worker_open(c, err, sizeof(err));
		_exit(w && lo_xdp() ? 0 : 1);
	}
	waitpid(child, &st, 0);
	w = esa_worker_open(c, err, sizeof(err));
	ok(WIFEXITED(st) && !WEXITSTATUS(st) && w && esa_worker_stat(w, "io_xdp") == 1,
	   "a process killed with io=xdp open leaves no program: the next one opens (%s)",
	   w ? "xdp" : err);
	esa_worker_close(w);
	esa_config_free(c);
	/* a switch behind a next hop that never answers ARP */
	c = xdp_config("xdp", "switch=10.99.0.1:7680 local=10.77.0.1:7000 ps=10.99.0.2:9000");
	w = system("ip link add xa type veth peer name xb && ip addr add 10.77.0.1/24 dev xa && "
		   "ip link set xa up && ip link set xb up && "
		   "ip route add 10.99.0.0/16 via 10.77.0.9") ? NULL :
	    esa_worker_open(c, err, sizeof(err));
	ok(!w && !strcmp(err, "io=xdp: the next hop 10.77.0.9 to 10.99.0.1 on xa has no "
			 "neighbour entry (ARP unresolved)") && !system("ip link del xa"),
	   "an unresolved next hop: refused, naming it (%s)", err);
	esa_worker_close(w);
	esa_config_free(c);
}

/*
 * The path to the switch must carry the packets whole (the switch takes no
 * fragments): checked at open against the route's device, its mtu metric
 * and AF_XDP's interface, refused in one line naming values and the MTU
 * needed.  Root, in the AF_XDP tests' namespace: xma (MTU 1500) leads to
 * 10.78.0.0/24 and, by a route of mtu 1200, to 10.98.0.0/16; its peer xmb
 * has MTU 1000.
 */
static void test_mtu(void)
{
	static const struct {
		const char *io, *more, *want;
	} t[] = {
		{ "udp", "values=856 switch=10.78.0.9:7680",
		  "values 856: 3476-byte packets (values x 4 + 52), but the route to the switch "
		  "10.78.0.9 (xma) has MTU 1500: give it an MTU of 3476 or more, or values 360 or "
		  "less" },
		{ "udp", "values=360 switch=10.78.0.9:7680", NULL },
		{ "udp", "values=296 switch=10.98.0.1:7680",
		  "values 296: 1236-byte packets (values x 4 + 52), but the route to the switch "
		  "10.98.0.1 (xma, mtu 1200) has MTU 1200: give it an MTU of 1236 or more, or "
		  "values 280 or less" },
		{ "udp", "values=280 switch=10.98.0.1:7680", NULL },
		{ "xdp", "values=856 switch=10.78.0.9:7680",
		  "values 856: 3476-byte packets (values x 4 + 52), but the route to the switch "
		  "10.78.0.9 (xma) has MTU 1500: give it an MTU of 3476 or more, or values 360 or "
		  "less" },
		{ "auto", "values=296 switch=10.78.0.9:7680 ifname=xmb",
		  "values 296: 1236-byte packets (values x 4 + 52), but AF_XDP's interface xmb has "
		  "MTU 1000: give it an MTU of 1236 or more, or values 232 or less" },
	};

	if (system("ip link add xma type veth peer name xmb && ip link set xma mtu 1500 && "
		   "ip link set xmb mtu 1000 && "
		   "ip addr add 10.78.0.1/24 dev xma && ip link set xma up && "
		   "ip link set xmb up && "
		   "ip route add 10.98.0.0/16 dev xma mtu 1200")) {
		ok(false, "path MTU: interfaces and routes made");
		return;
	}
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		esa_config *c = xdp_config(t[i].io, "local=10.78.0.1:7000 ps=10.78.0.8:9000");
		char err[256] = "";
		esa_worker *w;

		apply_extra(c, t[i].more);
		w = esa_worker_open(c, err, sizeof(err));
		if (t[i].want)
			ok(!w && errno == EMSGSIZE && !strcmp(err, t[i].want),
			   "path MTU: io=%s %s refused at open (%s)", t[i].io, t[i].more, err);
		else
			ok(w != NULL, "path MTU: io=%s %s fits, opened (%s)", t[i].io, t[i].more,
			   w ? esa_worker_io(w) : err);
		esa_worker_close(w);
		esa_config_free(c);
	}
	ok(!system("ip link del xma"), "path MTU: interfaces removed");
}

/* The tests of the transport again, every worker on AF_XDP (lo, in a
 * namespace of its own: several workers of a process share its queue). */
static void test_xdp(void)
{
	if (geteuid()) {
		tap_skip("not root", "AF_XDP tests");
		test_xdp_refused();
		return;
	}
	/* Frames that enter lo from AF_XDP carry no route, so the kernel checks
	 * their addresses as a received packet's: a local source needs
	 * accept_local, 127/8 route_localnet. */
	if (unshare(CLONE_NEWNET) || system("ip link set dev lo up && sysctl -qw "
					    "net.ipv4.conf.lo.accept_local=1 "
					    "net.ipv4.conf.lo.route_localnet=1")) {
		ok(false, "a network namespace for the AF_XDP tests: %s", strerror(errno));
		return;
	}
	test_mtu();
	tap_prefix = "io=xdp: ";
	test_xdp_refused();
	test_xdp_open();
	g_io = "io=xdp xdp_workers=8";	/* up to 5 workers share lo queue 0 */
#define XRUN(t) do { if (!getenv("LIBTEST_XDP") || strstr(#t, getenv("LIBTEST_XDP"))) t(); } while (0)
	XRUN(test_run);
	XRUN(test_int_clean);
	XRUN(test_int_lossy);
	XRUN(test_overflow);
	XRUN(test_float_headroom);
	XRUN(test_float);
	XRUN(test_large);
	XRUN(test_async_multi);
	XRUN(test_fetch);
	XRUN(test_give_up);
	XRUN(test_trust);
	XRUN(test_mismatch);
	XRUN(test_dead_peers);
	XRUN(test_rcvbuf);
	XRUN(test_timers);
	g_io = NULL;
	tap_prefix = "";
}

int main(void)
{
	next_port = 20000 + (getpid() * 97) % 30000;
	tap_start();
#define RUN(t) do { if (!getenv("LIBTEST") || strstr(#t, getenv("LIBTEST"))) t(); } while (0)
	RUN(test_config);
	RUN(test_quant);
	RUN(test_prio);
	RUN(test_run);
	RUN(test_int_clean);
	RUN(test_int_lossy);
	RUN(test_cc_rule);
	RUN(test_cc);
	RUN(test_link_delay);
	RUN(test_gro);
	RUN(test_overflow);
	RUN(test_float_headroom);
	RUN(test_float);
	RUN(test_large);
	RUN(test_async_multi);
	RUN(test_fetch);
	RUN(test_give_up);
	RUN(test_trust);
	RUN(test_mismatch);
	RUN(test_dead_peers);
	RUN(test_rcvbuf);
	RUN(test_timers);
	if (getenv("LIBTEST") && !strcmp(getenv("LIBTEST"), "xdp_refused"))
		test_xdp_refused();
	else
		RUN(test_xdp);
	return tap_end();
}
