// SPDX-License-Identifier: GPL-2.0
/*
 * The model's and the workload's options, parsed in one place for every
 * front end that builds a struct sim_params (esa_sim, esa_jct), so that the
 * simulator and the testbed take the same names, ranges and list syntax.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

enum kind { K_UINT, K_DBL, K_WORKERS, K_ITERS, K_MODELS };

struct param {
	const char *name;
	enum kind kind;
	size_t off;		/* into struct sim_params (K_UINT, K_DBL) */
	double lo, hi;		/* inclusive, unless lo_open */
	int lo_open;		/* the value must be above lo */
};

#define U(n, f, l, h)	{ n, K_UINT, offsetof(struct sim_params, f), l, h, 0 }
#define D(n, f, l, h)	{ n, K_DBL, offsetof(struct sim_params, f), l, h, 0 }
#define DP(n, f, l, h)	{ n, K_DBL, offsetof(struct sim_params, f), l, h, 1 }

static const struct param params[] = {
	U("pool", pool, 1, 1 << 24),
	D("stale-ms", stale_ms, 0, 1e6),
	U("switchml-regions", swml_regions, 0, 1 << 24),
	U("home", home, 0, 1 << 24),
	DP("link-gbps", link_gbps, 0, 1e6),
	DP("ps-link-gbps", ps_link_gbps, 0, 1e6),
	D("prop-us", prop_us, 0, 1e7),
	D("switch-mpps", switch_mpps, 0, 1e6),
	DP("ps-mpps", ps_mpps, 0, 1e6),
	D("ps-copy-cost", ps_copy_cost, 0, 1e3),
	U("ps-hosts", ps_hosts, 0, 1 << 16),
	D("worker-mpps", worker_mpps, 0, 1e6),
	U("window", window, 1, 1 << 20),
	U("window-min", window_min, 0, 1 << 20),
	U("ps-copy", ps_copy, 0, 1),
	U("ps-sums", ps_sums, 0, 1),
	DP("timeout-us", timeout_us, 0, 1e9),
	DP("timeout-max-us", timeout_max_us, 0, 1e9),
	U("jobs", njobs, 1, 65535),
	DP("load", load, 0, 1e6),
	D("rate", rate, 0, 1e9),
	{ "workers", K_WORKERS },
	{ "iters", K_ITERS },
	{ "models", K_MODELS },
	DP("scale", scale, 0, 1),
	D("compute-scale", compute_scale, 0, 1e6),
	D("straggle", straggle, 0, 100),
};

#define NPARAMS	(sizeof(params) / sizeof(params[0]))

struct option *sim_param_options(const struct option *own)
{
	size_t n = 0, k = 0;
	struct option *o;

	while (own[n].name)
		n++;
	o = calloc(n + NPARAMS + 1, sizeof(*o));
	if (!o)
		return NULL;
	memcpy(o, own, n * sizeof(*o));
	for (k = 0; k < NPARAMS; k++)
		o[n + k] = (struct option){ params[k].name, required_argument, 0,
					    SIM_OPT_BASE + (int)k };
	return o;
}

int sim_param_model(const char *s)
{
	for (int m = 0; m < SIM_NMODELS; m++)
		if (!strcmp(s, sim_models[m].name))
			return m;
	return -1;
}

/* "a,b,c" of integers in [lo, hi], at most max of them: how many, or -1. */
int sim_param_ulist(const char *s, unsigned *v, unsigned max, unsigned lo, unsigned hi)
{
	unsigned n = 0;
	char *end;

	for (;;) {
		unsigned long x;

		errno = 0;
		x = strtoul(s, &end, 10);
		if (end == s || errno || x < lo || x > hi || n == max)
			return -1;
		v[n++] = (unsigned)x;
		if (!*end)
			return (int)n;
		if (*end != ',')
			return -1;
		s = end + 1;
	}
}

static int set(struct sim_params *p, const struct param *d, const char *arg)
{
	char *end, buf[256], *tok, *save = NULL;
	unsigned a, b, mask = 0;
	double x;
	int n;

	switch (d->kind) {
	case K_UINT:
	case K_DBL:
		errno = 0;
		x = strtod(arg, &end);
		if (end == arg || *end || errno || !isfinite(x) || x > d->hi ||
		    (d->lo_open ? x <= d->lo : x < d->lo))
			return -1;
		if (d->kind == K_UINT) {
			if (x != floor(x))
				return -1;
			*(unsigned *)((char *)p + d->off) = (unsigned)x;
		} else {
			*(double *)((char *)p + d->off) = x;
		}
		return 0;
	case K_WORKERS:
		n = sim_param_ulist(arg, p->wchoice, SIM_MAX_WCHOICE, 1, ESA_MAX_WORKERS);
		if (n < 0)
			return -1;
		p->nwchoice = n;
		return 0;
	case K_ITERS:
		if (sscanf(arg, "%u-%u%c", &a, &b, buf) == 2)
			;
		else if (sscanf(arg, "%u%c", &a, buf) == 1)
			b = a;
		else
			return -1;
		if (!a || b < a)
			return -1;
		p->iter_min = a;
		p->iter_max = b;
		return 0;
	case K_MODELS:
		if (strlen(arg) >= sizeof(buf))
			return -1;
		strcpy(buf, arg);
		for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			int m = sim_param_model(tok);

			if (m < 0)
				return -1;
			mask |= 1u << m;
		}
		if (!mask)
			return -1;
		p->model_mask = mask;
		return 0;
	}
	return -1;
}

int sim_param_set(struct sim_params *p, int opt, const char *arg, const char *prog)
{
	const struct param *d;

	if (opt < SIM_OPT_BASE || opt >= SIM_OPT_BASE + (int)NPARAMS)
		return -1;
	d = &params[opt - SIM_OPT_BASE];
	if (!set(p, d, arg))
		return 0;
	switch (d->kind) {
	case K_WORKERS:
		fprintf(stderr, "%s: bad --workers %s: a list of 1..%d, at most %d entries\n",
			prog, arg, ESA_MAX_WORKERS, SIM_MAX_WCHOICE);
		break;
	case K_ITERS:
		fprintf(stderr, "%s: bad --iters %s: N or MIN-MAX, at least 1\n", prog, arg);
		break;
	case K_MODELS:
		fprintf(stderr, "%s: bad --models %s: a list of", prog, arg);
		for (int m = 0; m < SIM_NMODELS; m++)
			fprintf(stderr, "%s %s", m ? "," : "", sim_models[m].name);
		fprintf(stderr, "\n");
		break;
	default:
		if (d->lo_open)
			fprintf(stderr, "%s: bad --%s %s: want a number above %.10g, at most %.10g\n",
				prog, d->name, arg, d->lo, d->hi);
		else
			fprintf(stderr, "%s: bad --%s %s: want %s %.10g..%.10g\n", prog, d->name,
				arg, d->kind == K_UINT ? "an integer in" : "a number in",
				d->lo, d->hi);
	}
	return -1;
}
