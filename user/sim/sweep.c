// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_sim --sweep: the pool x load grid, then one factor at a time (jobs,
 * prio, window, latency) around the base point, each point a comparison
 * (compare.c).  Writes sweep.csv, the grid's and each factor's gnuplot
 * data, the base point's JCT CDF and utilisation, and base.txt into --out
 * (make sim-plots draws them).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "esa_sim.h"

static const char *const dim_name[NDIM] = { "jobs", "prio", "window", "prop" };

void sweep_defaults(struct sweep *sw)
{
	static const double pool[] = { 256, 512, 1024, 2048, 4096, 16384 };
	static const double load[] = { 8, 16, 32, 64, 128 };
	static const double jobs[] = { 25, 50, 100, 200 };
	static const double win[] = { 32, 64, 128, 256 };
	static const double prop[] = { 0.5, 1, 2, 5 };

	memset(sw, 0, sizeof(*sw));
	memcpy(sw->pool, pool, sizeof(pool));
	sw->npool = 6;
	memcpy(sw->load, load, sizeof(load));
	sw->nload = 5;
	memcpy(sw->v[D_JOBS], jobs, sizeof(jobs));
	sw->n[D_JOBS] = 4;
	for (int i = 0; i < __ESA_PRIO_MAX; i++)
		sw->v[D_PRIO][i] = i;
	sw->n[D_PRIO] = __ESA_PRIO_MAX;
	memcpy(sw->v[D_WINDOW], win, sizeof(win));
	sw->n[D_WINDOW] = 4;
	memcpy(sw->v[D_PROP], prop, sizeof(prop));
	sw->n[D_PROP] = 4;
	sw->out = "build/sim";
}

static int mkdirs(const char *path)
{
	char buf[4096], *q;

	if (strlen(path) >= sizeof(buf))
		return -1;
	strcpy(buf, path);
	for (q = buf + 1; *q; q++) {
		if (*q != '/')
			continue;
		*q = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -1;
		*q = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		return -1;
	return 0;
}

static FILE *openf(const char *dir, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "esa_sim: %s: %s\n", path, strerror(errno));
	return f;
}

struct sweep_state {
	char	base_line[256];	/* the base point's summary line */
	FILE	*csv;
	double	best, worst, t0;
	char	bestat[96], worstat[96];
	int	fail;
};

static const char dat_header[] =
	"esa_ms atp_ms switchml_ms sp_atp sp_switchml sp_best sp_best_min "
	"sp_best_max esa_p95_ms atp_p95_ms switchml_p95_ms esa_agg atp_agg "
	"switchml_agg esa_occ atp_occ switchml_occ esa_ps atp_ps switchml_ps "
	"esa_preempt\n";


/* Run one point; append it to the CSV and to dat (gnuplot) if given. */
static int sweep_point(struct sweep_state *st, const struct sim_params *p,
		       unsigned polmask, unsigned reps, const char *dim,
		       const char *xs, FILE *dat)
{
	double spa, sps, spb, bmin, bmax;
	struct cmp c;

	fprintf(stderr, "esa_sim: sweep %s=%s (%.0f s)\n", dim, xs, now_s() - st->t0);
	if (cmp_run(p, polmask, reps, &c))
		return -1;
	for (int pol = 0; pol < NPOL; pol++) {
		const struct pol_agg *a = &c.p[pol];

		if (!a->ran)
			continue;
		fprintf(st->csv, "%s,%s,%s,%u,%g,%u,%u,%g,%u,%s,%.9f,%.9f,%.4f,"
			"%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%llu,%llu,%llu,%llu,%llu,%d\n",
			dim, xs, sim_prio_name(p->prio), p->pool, p->load,
			p->njobs, p->window, p->prop_us, reps,
			sim_policy_name(pol), a->avg, a->p95,
			a->avg / c.p[ESA_POLICY_ESA].avg, a->util_agg,
			a->util_held, a->util_occ, a->util_useful, a->ps_share,
			a->ps_load, (unsigned long long)a->preempt,
			(unsigned long long)a->aged,
			(unsigned long long)a->collide,
			(unsigned long long)a->resend,
			(unsigned long long)a->orphan, !a->unfinished);
		if (a->unfinished)
			st->fail = 1;
	}
	fflush(st->csv);
	spa = cmp_speedup(&c, ESA_POLICY_ATP);
	sps = cmp_speedup(&c, ESA_POLICY_SWITCHML);
	spb = fmin(spa, sps);
	bmin = fmin(c.sp_atp_min, c.sp_swml_min);
	bmax = fmin(c.sp_atp_max, c.sp_swml_max);
	if (dat) {
		fprintf(dat, "%s %.6f %.6f %.6f %.4f %.4f %.4f %.4f %.4f %.6f %.6f "
			"%.6f %.5f %.5f %.5f %.5f %.5f %.5f %.5f %.5f %.5f %llu\n",
			xs, c.p[0].avg * 1e3, c.p[1].avg * 1e3, c.p[2].avg * 1e3,
			spa, sps, spb, bmin, bmax, c.p[0].p95 * 1e3,
			c.p[1].p95 * 1e3, c.p[2].p95 * 1e3, c.p[0].util_agg,
			c.p[1].util_agg, c.p[2].util_agg, c.p[0].util_occ,
			c.p[1].util_occ, c.p[2].util_occ, c.p[0].ps_share,
			c.p[1].ps_share, c.p[2].ps_share,
			(unsigned long long)c.p[0].preempt);
		fflush(dat);
	}
	printf("sweep %-6s %-18s esa=%.3fms atp=%.3fms switchml=%.3fms "
	       "speedup_vs_atp=%.3f speedup_vs_switchml=%.3f\n", dim, xs,
	       c.p[0].avg * 1e3, c.p[1].avg * 1e3, c.p[2].avg * 1e3, spa, sps);
	fflush(stdout);
	if (spb > st->best) {
		st->best = spb;
		snprintf(st->bestat, sizeof(st->bestat), "%s=%s", dim, xs);
	}
	if (spb < st->worst) {
		st->worst = spb;
		snprintf(st->worstat, sizeof(st->worstat), "%s=%s", dim, xs);
	}
	cmp_free(&c);
	return 0;
}

/* The base point: JCT CDF and utilisation over time, and its summary line. */
static int sweep_base(struct sweep_state *st, const struct sim_params *base,
		      unsigned polmask, unsigned reps, const struct sweep *sw)
{
	char path[4096];
	struct cmp c;
	FILE *f;

	fprintf(stderr, "esa_sim: sweep base point\n");
	if (cmp_run(base, polmask, reps, &c))
		return -1;
	snprintf(path, sizeof(path), "%s/jct_cdf.dat", sw->out);
	cmp_write_cdf(path, &c, 1);
	snprintf(path, sizeof(path), "%s/util_ts.dat", sw->out);
	cmp_write_ts(path, &c, base->pool, 1);
	f = openf(sw->out, "base.txt");
	if (f) {
		fprintf(f, "base: pool=%u load=%g jobs=%u window=%u prop=%gus "
			"prio=%s seed=%llu reps=%u\n", base->pool, base->load,
			base->njobs, base->window, base->prop_us,
			sim_prio_name(base->prio),
			(unsigned long long)base->seed, reps);
		cmp_summary_line(f, &c);
		fclose(f);
	}
	printf("sweep base pool=%u load=%g jobs=%u prio=%s: ", base->pool,
	       base->load, base->njobs, sim_prio_name(base->prio));
	cmp_summary_line(stdout, &c);
	f = fmemopen(st->base_line, sizeof(st->base_line), "w");
	if (f) {
		cmp_summary_line(f, &c);
		fclose(f);
	}
	cmp_free(&c);
	return 0;
}

/* Grid rows "pool=..;load=.. <columns>", with the label swapped for x. */
static void grid_block(FILE *f, const char *what, double v, const double *x,
		       int n, char (*row)[512], int stride)
{
	fprintf(f, "# %s %g: %s %s", what, v, strcmp(what, "load") ? "load" : "pool",
		dat_header);
	for (int i = 0; i < n; i++) {
		const char *rest = strchr(row[i * stride], ' ');

		fprintf(f, "%g%s", x[i], rest ? rest : "\n");
	}
	fprintf(f, "\n\n");
}

/* Grid: pool x load, written both ways round for the two plots. */
static int sweep_grid(struct sweep_state *st, const struct sim_params *base,
		      unsigned polmask, unsigned reps, const struct sweep *sw)
{
	static char line[MAXLIST][MAXLIST][512];
	char xs[64];
	FILE *gp, *gl, *f;

	gp = openf(sw->out, "grid_pool.dat");
	gl = openf(sw->out, "grid_load.dat");
	if (!gp || !gl)
		return -1;
	for (int li = 0; li < sw->nload; li++) {
		for (int pi = 0; pi < sw->npool; pi++) {
			struct sim_params p = *base;
			FILE *tmp = tmpfile();

			p.pool = (unsigned)sw->pool[pi];
			p.load = sw->load[li];
			p.rate = 0;
			snprintf(xs, sizeof(xs), "pool=%u;load=%g", p.pool, p.load);
			if (!tmp || sweep_point(st, &p, polmask, reps, "grid", xs, tmp))
				return -1;
			rewind(tmp);
			if (!fgets(line[li][pi], sizeof(line[li][pi]), tmp))
				line[li][pi][0] = 0;
			fclose(tmp);
		}
	}
	for (int li = 0; li < sw->nload; li++)
		grid_block(gp, "load", sw->load[li], sw->pool, sw->npool, line[li], 1);
	for (int pi = 0; pi < sw->npool; pi++)
		grid_block(gl, "pool", sw->pool[pi], sw->load, sw->nload, &line[0][pi],
			   MAXLIST);
	fclose(gp);
	fclose(gl);
	/* What the gnuplot scripts need to label the grid's lines. */
	f = openf(sw->out, "grid_meta.gp");
	if (!f)
		return -1;
	fprintf(f, "loads = \"");
	for (int li = 0; li < sw->nload; li++)
		fprintf(f, "%s%g", li ? " " : "", sw->load[li]);
	fprintf(f, "\"\npools = \"");
	for (int pi = 0; pi < sw->npool; pi++)
		fprintf(f, "%s%g", pi ? " " : "", sw->pool[pi]);
	fprintf(f, "\"\nbase = \"pool %u, load %g, %u jobs, window %u, %g us, prio %s\"\n",
		base->pool, base->load, base->njobs, base->window, base->prop_us,
		sim_prio_name(base->prio));
	fclose(f);
	return 0;
}

/* One factor at a time around the base point. */
static int sweep_dims(struct sweep_state *st, const struct sim_params *base,
		      unsigned polmask, unsigned reps, const struct sweep *sw)
{
	char path[4096], xs[64];

	for (int d = 0; d < NDIM; d++) {
		FILE *dat;

		snprintf(path, sizeof(path), "sweep_%s.dat", dim_name[d]);
		dat = openf(sw->out, path);
		if (!dat)
			return -1;
		fprintf(dat, "# %s %s", dim_name[d], dat_header);
		for (int i = 0; i < sw->n[d]; i++) {
			struct sim_params p = *base;
			double x = sw->v[d][i];

			switch (d) {
			case D_JOBS: p.njobs = (unsigned)x; break;
			case D_PRIO: p.prio = (int)x; break;
			case D_WINDOW: p.window = (unsigned)x; break;
			case D_PROP: p.prop_us = x; break;
			}
			if (d == D_PRIO)
				snprintf(xs, sizeof(xs), "%s", sim_prio_name(p.prio));
			else
				snprintf(xs, sizeof(xs), "%g", x);
			if (sweep_point(st, &p, polmask, reps, dim_name[d], xs, dat))
				return -1;
		}
		fclose(dat);
	}
	return 0;
}

int sweep_run(const struct sim_params *base, unsigned polmask, unsigned reps,
	      const struct sweep *sw)
{
	struct sweep_state st = { .worst = INFINITY, .t0 = now_s() };

	if (mkdirs(sw->out)) {
		fprintf(stderr, "esa_sim: %s: %s\n", sw->out, strerror(errno));
		return -1;
	}
	st.csv = openf(sw->out, "sweep.csv");
	if (!st.csv)
		return -1;
	fprintf(st.csv, "dim,x,prio,pool,load,jobs,window,prop_us,reps,policy,"
		"avg_jct_s,p95_jct_s,ratio_vs_esa,util_agg,util_held,util_occ,"
		"util_useful,ps_share,ps_load,preempt,aged,collide,resend,orphan,"
		"finished\n");
	if (sweep_base(&st, base, polmask, reps, sw) ||
	    sweep_grid(&st, base, polmask, reps, sw) ||
	    sweep_dims(&st, base, polmask, reps, sw))
		return -1;
	fclose(st.csv);
	printf("sweep: speedup over the better baseline: best %.3f at %s, worst %.3f at %s "
	       "(%.0f s)\n", st.best, st.bestat, st.worst, st.worstat,
	       now_s() - st.t0);
	printf("sweep: wrote %s/{sweep.csv,grid_*.dat,sweep_*.dat,jct_cdf.dat,"
	       "util_ts.dat,base.txt}\n", sw->out);
	/* Like a comparison, end with the (base point's) summary line. */
	fputs(st.base_line, stdout);
	return st.fail;
}
