// SPDX-License-Identifier: GPL-2.0
/*
 * esa_jct report: the plot data, into --dir.  jct_cdf.dat: each policy's
 * JCT CDF, testbed then simulator; jobs.dat: per job, testbed against
 * simulator; util_ts.dat: the slot utilisation over time of the first
 * seed's first repetition; meta.gp: the plots' title.  make jct-plots
 * draws them (user/bench/plots).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jct_report.h"

static void write_cdf(FILE *f, const char *name, struct agg *a)
{
	double *c = malloc(a->njct * sizeof(double));

	if (!c)
		return;
	memcpy(c, a->jct, a->njct * sizeof(double));
	qsort(c, a->njct, sizeof(double), jct_cmp_double);
	fprintf(f, "# %s: jct_ms cdf\n", name);
	for (unsigned i = 0; i < a->njct; i++)
		fprintf(f, "%.3f %.6f\n", c[i] * 1e3, (i + 1.0) / a->njct);
	fprintf(f, "\n\n");
	free(c);
}

static FILE *plot_file(struct report *R, const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", R->o->dir, name);
	return fopen(path, "w");
}

static void write_cdfs(struct report *R)
{
	FILE *f = plot_file(R, "jct_cdf.dat");

	if (!f)
		return;
	for (int pol = 0; pol < NPOL; pol++)
		write_cdf(f, sim_policy_name(pol), &R->tb[pol]);
	for (int pol = 0; pol < NPOL; pol++)
		write_cdf(f, sim_policy_name(pol), &R->sm[pol]);
	fclose(f);
}

static void write_jobs(struct report *R)
{
	FILE *f = plot_file(R, "jobs.dat");

	if (!f)
		return;
	for (int pol = 0; pol < NPOL; pol++) {
		fprintf(f, "# %s: testbed_ms sim_ms (one line per job and seed)\n",
			sim_policy_name(pol));
		for (unsigned s = 0; s < R->ns; s++)
			for (unsigned i = 0; i < R->nj; i++)
				fprintf(f, "%.3f %.3f\n", *tb_job(R, pol, s, i) * 1e3,
					*sm_job(R, pol, s, i) * 1e3);
		fprintf(f, "\n\n");
	}
	fclose(f);
}

/* One run's slot samples averaged in bins of bin seconds up to span. */
static void write_util_run(FILE *f, const struct runf *rf, double span, double bin,
			   unsigned pool)
{
	size_t k = 0;

	for (double t = 0; rf->present && t < span; t += bin) {
		double b = 0, h = 0, oc = 0;
		unsigned n = 0;

		while (k < rf->nts && rf->ts_t[k] < t + bin) {
			if (rf->ts_t[k] >= t) {
				b += rf->ts_b[k];
				h += rf->ts_h[k];
				oc += rf->ts_o[k];
				n++;
			}
			k++;
		}
		if (n)
			fprintf(f, "%.4f %.4f %.4f %.4f\n", t + bin / 2, b / n / pool,
				h / n / pool, oc / n / pool);
	}
}

/* Utilisation over time: the first seed's first repetition, in bins of
 * 1/100 of the longest makespan. */
static void write_util(struct report *R)
{
	FILE *f = plot_file(R, "util_ts.dat");
	double span = 0, bin;

	if (!f)
		return;
	for (int pol = 0; pol < NPOL; pol++)
		if (run_of(R, pol, 0, 0)->present)
			span = fmax(span, run_of(R, pol, 0, 0)->makespan);
	bin = span > 0 ? span / 100 : 0.01;
	for (int pol = 0; pol < NPOL; pol++) {
		fprintf(f, "# %s: t_s busy held occ (share of pool), seed %u rep 1\n",
			sim_policy_name(pol), R->o->seeds[0]);
		write_util_run(f, run_of(R, pol, 0, 0), span, bin, R->o->p.pool);
		fprintf(f, "\n\n");
	}
	fclose(f);
}

static void write_meta(struct report *R)
{
	const struct sim_params *p = &R->o->p;
	FILE *f = plot_file(R, "meta.gp");

	if (!f)
		return;
	fprintf(f, "base = \"pool %u, window %u, %u jobs, load %g, seeds %u%s\"\n", p->pool,
		p->window, R->nj, p->load, R->ns, p->home ? ", homes" : "");
	fclose(f);
}

void jct_write_plots(struct report *R)
{
	write_cdfs(R);
	write_jobs(R);
	write_util(R);
	write_meta(R);
}
