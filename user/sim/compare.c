// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_sim: the comparison.  Runs one seeded workload (or several seeds)
 * under each allocation policy, pools what each run says (struct cmp), and
 * writes it: the header lines, the table, every counter (-v), CSV, the
 * per-job JCTs' CDF and the utilisation time series, and the summary line.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "esa_sim.h"

void cmp_free(struct cmp *c)
{
	for (int i = 0; i < NPOL; i++) {
		free(c->p[i].jct);
		sim_result_free(&c->p[i].last);
	}
	sim_workload_free(&c->wl);
	memset(c, 0, sizeof(*c));
}

int cmp_run(const struct sim_params *base, unsigned polmask, unsigned reps,
	    struct cmp *c)
{
	memset(c, 0, sizeof(*c));
	c->reps = reps;
	c->sp_atp_min = c->sp_swml_min = INFINITY;
	c->sp_atp_max = c->sp_swml_max = -INFINITY;
	for (unsigned r = 0; r < reps; r++) {
		struct sim_params p = *base;
		double avg[NPOL] = {};

		p.seed = base->seed + r;
		sim_workload_free(&c->wl);
		if (sim_workload_gen(&p, &c->wl)) {
			fprintf(stderr, "esa_sim: bad workload parameters\n");
			return -1;
		}
		for (int pol = 0; pol < NPOL; pol++) {
			struct pol_agg *a = &c->p[pol];
			struct sim_result res;
			double t0;
			int rc;

			if (!(polmask & (1u << pol)))
				continue;
			t0 = now_s();
			rc = sim_run(&p, &c->wl, pol, &res);
			if (rc < 0) {
				fprintf(stderr, "esa_sim: %s: simulation failed\n",
					sim_policy_name(pol));
				return -1;
			}
			a->wall += now_s() - t0;
			if (rc > 0) {
				a->unfinished++;
				c->failed = 1;
			}
			a->ran++;
			double *nj = realloc(a->jct, (a->njct + res.njobs) * sizeof(double));

			if (!nj)
				return -1;
			a->jct = nj;
			memcpy(a->jct + a->njct, res.jct, res.njobs * sizeof(double));
			a->njct += res.njobs;
			avg[pol] = res.avg_jct;
			a->sum_avg += res.avg_jct;
			a->util_agg += res.util_agg / reps;
			a->util_held += res.util_held / reps;
			a->util_occ += res.util_occ / reps;
			a->util_useful += res.util_useful / reps;
			a->ps_share += (res.data_rx ? (double)res.sw_fallback / res.data_rx : 0) / reps;
			a->ps_load += (res.data_rx ? (double)res.ps_rx / res.data_rx : 0) / reps;
			a->preempt += res.c[ESA_C_PREEMPT_CAUSED];
			a->aged += res.c[ESA_C_AGED];
			a->collide += res.c[ESA_C_COLLISION];
			a->resend += res.resends;
			a->orphan += res.orphan_claims;
			a->ps_overlap += res.ps_overlap;
			a->events += res.events;
			a->data_rx += res.data_rx;
			sim_result_free(&a->last);
			a->last = res;
		}
		if (avg[ESA_POLICY_ESA] > 0) {
			double x;

			if (avg[ESA_POLICY_ATP] > 0) {
				x = avg[ESA_POLICY_ATP] / avg[ESA_POLICY_ESA];
				c->sp_atp_min = fmin(c->sp_atp_min, x);
				c->sp_atp_max = fmax(c->sp_atp_max, x);
			}
			if (avg[ESA_POLICY_SWITCHML] > 0) {
				x = avg[ESA_POLICY_SWITCHML] / avg[ESA_POLICY_ESA];
				c->sp_swml_min = fmin(c->sp_swml_min, x);
				c->sp_swml_max = fmax(c->sp_swml_max, x);
			}
		}
	}
	for (int pol = 0; pol < NPOL; pol++) {
		struct pol_agg *a = &c->p[pol];
		double s = 0;

		if (!a->ran)
			continue;
		if (a->unfinished) {
			a->avg = a->p95 = NAN;
			continue;
		}
		for (unsigned i = 0; i < a->njct; i++)
			s += a->jct[i];
		a->avg = s / a->njct;
		a->p95 = sim_quantile(a->jct, a->njct, 0.95);
	}
	return 0;
}

double cmp_speedup(const struct cmp *c, int pol)
{
	const struct pol_agg *e = &c->p[ESA_POLICY_ESA], *b = &c->p[pol];

	if (!e->ran || !b->ran || e->avg <= 0)
		return NAN;
	return b->avg / e->avg;
}

void cmp_summary_line(FILE *f, const struct cmp *c)
{
	fprintf(f, "jct:");
	for (int pol = 0; pol < NPOL; pol++) {
		if (c->p[pol].ran)
			fprintf(f, " %s=%.6f", sim_policy_name(pol), c->p[pol].avg);
		else
			fprintf(f, " %s=nan", sim_policy_name(pol));
	}
	fprintf(f, " speedup_vs_atp=%.3f speedup_vs_switchml=%.3f\n",
		cmp_speedup(c, ESA_POLICY_ATP), cmp_speedup(c, ESA_POLICY_SWITCHML));
}

void cmp_print_header(const struct sim_params *p, const struct cmp *c, const char *preset)
{
	unsigned nm[SIM_NMODELS] = {}, nw[65] = {};
	const struct sim_workload *w = &c->wl;

	for (unsigned i = 0; i < w->njobs; i++) {
		nm[w->job[i].model]++;
		nw[w->job[i].nworkers]++;
	}
	printf("esa_sim: preset=%s seed=%llu reps=%u jobs=%u load=%g (%.1f jobs/s) "
	       "pool=%ux%u window=%u prio=%s switchml-regions=%u home=%u\n",
	       preset, (unsigned long long)p->seed, c->reps, p->njobs,
	       p->load, w->rate, p->pool, p->nvals, p->window,
	       sim_prio_name(p->prio), p->swml_regions, p->home);
	printf("esa_sim: links %g Gbps (PS %g Gbps), latency %g us, switch %s, "
	       "PS %g Mpps, timeout %g-%g us, stale %g ms, loss %g\n",
	       p->link_gbps, p->ps_link_gbps, p->prop_us,
	       p->switch_mpps > 0 ? "finite" : "line rate", p->ps_mpps,
	       p->timeout_us, p->timeout_max_us, p->stale_ms, p->loss);
	if (p->racks)
		printf("esa_sim: %u racks, %u ranks of a job a rack, %s, leaf-spine "
		       "links %g Gbps\n", p->racks,
		       p->rack_workers ? p->rack_workers : 4,
		       p->levels == 1 ? "flat (the spine's switch alone)" :
		       "two levels (a switch at every leaf and the spine)",
		       p->uplink_gbps > 0 ? p->uplink_gbps : p->link_gbps);
	printf("esa_sim: workload (seed %llu): scale %g, compute x%g, straggle %g, "
	       "mean JCT alone %.3f ms;",
	       (unsigned long long)(p->seed + c->reps - 1), p->scale,
	       p->compute_scale, p->straggle, w->mean_ideal_s * 1e3);
	for (unsigned m = 0; m < SIM_NMODELS; m++)
		if (nm[m])
			printf(" %s=%u", sim_models[m].name, nm[m]);
	printf(";");
	for (unsigned k = 1; k <= 64; k++)
		if (nw[k])
			printf(" %uw=%u", k, nw[k]);
	printf("\n");
}

void cmp_print_table(const struct cmp *c)
{
	printf("%-9s %10s %10s %7s %8s %8s %8s %8s %8s %8s %9s %9s %9s %8s %6s\n",
	       "policy", "avg_ms", "p95_ms", "vs_esa", "u_agg", "u_held",
	       "u_occ", "u_useful", "ps_share", "ps_load", "preempt", "collide",
	       "resend", "orphan", "wall_s");
	for (int pol = 0; pol < NPOL; pol++) {
		const struct pol_agg *a = &c->p[pol];
		double e = c->p[ESA_POLICY_ESA].ran ? c->p[ESA_POLICY_ESA].avg : NAN;

		if (!a->ran)
			continue;
		printf("%-9s %10.3f %10.3f %7.3f %8.4f %8.4f %8.4f %8.4f %8.4f %8.4f "
		       "%9llu %9llu %9llu %8llu %6.2f%s\n",
		       sim_policy_name(pol), a->avg * 1e3, a->p95 * 1e3,
		       a->avg / e, a->util_agg, a->util_held, a->util_occ,
		       a->util_useful, a->ps_share, a->ps_load,
		       (unsigned long long)a->preempt,
		       (unsigned long long)a->collide,
		       (unsigned long long)a->resend,
		       (unsigned long long)a->orphan, a->wall,
		       a->unfinished ? "  UNFINISHED" : "");
	}
	if (c->reps > 1 && c->p[ESA_POLICY_ESA].ran)
		printf("speedup over %u seeds: vs atp %.3f..%.3f, vs switchml %.3f..%.3f\n",
		       c->reps, c->sp_atp_min, c->sp_atp_max, c->sp_swml_min,
		       c->sp_swml_max);
}

static const char *const act_name[__ESA_A_MAX] = {
	"claim", "reclaim", "add", "complete", "hold", "duplicate", "preempt",
	"age", "collide", "tomb", "flush", "resend", "wait", "resend_done",
};

/* Every counter of the last repetition, for debugging and validation. */
void cmp_print_counters(const struct cmp *c)
{
	for (int pol = 0; pol < NPOL; pol++) {
		const struct sim_result *r = &c->p[pol].last;

		if (!c->p[pol].ran)
			continue;
		printf("%s: actions", sim_policy_name(pol));
		for (int a = 0; a < __ESA_A_MAX; a++)
			printf(" %s=%llu", act_name[a], (unsigned long long)r->act[a]);
		printf("\n%s: data_tx=%llu data_rx=%llu resends=%llu lost=%llu "
		       "fate(absorbed=%llu completed=%llu to_ps=%llu dup=%llu "
		       "dropped=%llu)\n", sim_policy_name(pol),
		       (unsigned long long)r->data_tx, (unsigned long long)r->data_rx,
		       (unsigned long long)r->resends, (unsigned long long)r->lost,
		       (unsigned long long)r->fate[SIM_F_ABSORBED],
		       (unsigned long long)r->fate[SIM_F_COMPLETED],
		       (unsigned long long)r->fate[SIM_F_TO_PS],
		       (unsigned long long)r->fate[SIM_F_DUPLICATE],
		       (unsigned long long)r->fate[SIM_F_DROPPED]);
		printf("%s: chunks=%llu done=%llu in_switch=%llu by_ps=%llu "
		       "redundant=%llu results=%llu/%llu dup_results=%llu "
		       "orphan_claims=%llu bad_complete=%llu\n",
		       sim_policy_name(pol),
		       (unsigned long long)r->chunks_total,
		       (unsigned long long)r->chunks_done,
		       (unsigned long long)r->sw_complete,
		       (unsigned long long)r->ps_complete,
		       (unsigned long long)r->redundant,
		       (unsigned long long)r->results_accepted,
		       (unsigned long long)r->results_expected,
		       (unsigned long long)r->results_dup,
		       (unsigned long long)r->orphan_claims,
		       (unsigned long long)r->bad_complete);
		printf("%s: ps_rx=%llu fallback=%llu merged=%llu dup=%llu "
		       "overlap=%llu answered=%llu fetch=%llu fetched=%llu "
		       "overtaken=%llu late=%llu "
		       "overrun=%llu timer_fires=%llu events=%llu makespan=%.6fs\n",
		       sim_policy_name(pol),
		       (unsigned long long)r->ps_rx,
		       (unsigned long long)r->sw_fallback,
		       (unsigned long long)r->ps_merged,
		       (unsigned long long)r->ps_dup,
		       (unsigned long long)r->ps_overlap,
		       (unsigned long long)r->ps_answer,
		       (unsigned long long)r->ps_fetch,
		       (unsigned long long)r->ps_fetched,
		       (unsigned long long)r->ps_overtaken,
		       (unsigned long long)r->ps_late,
		       (unsigned long long)r->ps_overrun,
		       (unsigned long long)r->timer_fires,
		       (unsigned long long)r->events, r->makespan);
	}
}

void cmp_print_csv(const struct cmp *c, const struct sim_params *p)
{
	printf("policy,prio,pool,load,jobs,seed,reps,avg_jct_s,p95_jct_s,util_agg,"
	       "util_held,util_occ,util_useful,ps_share,ps_load,preempt,aged,"
	       "collide,resend,orphan,ps_overlap,events,finished\n");
	for (int pol = 0; pol < NPOL; pol++) {
		const struct pol_agg *a = &c->p[pol];

		if (!a->ran)
			continue;
		printf("%s,%s,%u,%g,%u,%llu,%u,%.9f,%.9f,%.6f,%.6f,%.6f,%.6f,%.6f,"
		       "%.6f,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%d\n",
		       sim_policy_name(pol), sim_prio_name(p->prio), p->pool,
		       p->load, p->njobs, (unsigned long long)p->seed, c->reps,
		       a->avg, a->p95, a->util_agg, a->util_held, a->util_occ,
		       a->util_useful, a->ps_share, a->ps_load,
		       (unsigned long long)a->preempt, (unsigned long long)a->aged,
		       (unsigned long long)a->collide,
		       (unsigned long long)a->resend,
		       (unsigned long long)a->orphan,
		       (unsigned long long)a->ps_overlap,
		       (unsigned long long)a->events, !a->unfinished);
	}
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* gnuplot data: one block per policy (index 0, 1, 2), CDF of JCT in ms. */
int cmp_write_cdf(const char *path, const struct cmp *c, int gp)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	if (!gp)
		fprintf(f, "policy,job_index_sorted,jct_s,cdf\n");
	for (int pol = 0; pol < NPOL; pol++) {
		const struct pol_agg *a = &c->p[pol];
		double *v;

		if (!a->ran || a->unfinished)
			continue;
		v = malloc(a->njct * sizeof(*v));
		if (!v) {
			fclose(f);
			return -1;
		}
		memcpy(v, a->jct, a->njct * sizeof(*v));
		qsort(v, a->njct, sizeof(*v), cmp_dbl);
		if (gp)
			fprintf(f, "# %s: jct_ms cdf\n", sim_policy_name(pol));
		for (unsigned i = 0; i < a->njct; i++) {
			if (gp)
				fprintf(f, "%.6f %.6f\n", v[i] * 1e3,
					(i + 1.0) / a->njct);
			else
				fprintf(f, "%s,%u,%.9f,%.6f\n",
					sim_policy_name(pol), i, v[i],
					(i + 1.0) / a->njct);
		}
		if (gp)
			fprintf(f, "\n\n");
		free(v);
	}
	return fclose(f);
}

/* Slot utilisation over time (last repetition), as shares of the pool. */
int cmp_write_ts(const char *path, const struct cmp *c, unsigned pool, int gp)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	if (!gp)
		fprintf(f, "policy,t_s,agg,held,occ\n");
	for (int pol = 0; pol < NPOL; pol++) {
		const struct sim_result *r = &c->p[pol].last;

		if (!c->p[pol].ran)
			continue;
		if (gp)
			fprintf(f, "# %s: t_ms agg held occ (share of pool)\n",
				sim_policy_name(pol));
		for (unsigned b = 0; b < r->nbins; b++) {
			double t = (b + 0.5) * r->bin_s;

			if (gp)
				fprintf(f, "%.6f %.6f %.6f %.6f\n", t * 1e3,
					r->ts_agg[b] / pool, r->ts_held[b] / pool,
					r->ts_occ[b] / pool);
			else
				fprintf(f, "%s,%.9f,%.6f,%.6f,%.6f\n",
					sim_policy_name(pol), t,
					r->ts_agg[b] / pool, r->ts_held[b] / pool,
					r->ts_occ[b] / pool);
		}
		if (gp)
			fprintf(f, "\n\n");
	}
	return fclose(f);
}
