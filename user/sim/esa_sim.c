// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_sim: run one seeded workload under the esa, atp and switchml
 * allocation policies and compare job completion times, or sweep pool size,
 * load, number of jobs and priority policy into CSV for plotting.
 * See docs/simulator.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <time.h>
#include <sys/stat.h>
#include "sim.h"

#define NPOL	__ESA_POLICY_MAX
#define MAXLIST	32

static const char *preset_name = "datacenter";

static void usage(FILE *f)
{
	struct sim_params d;

	sim_defaults(&d);
	fprintf(f,
"usage: esa_sim [options]\n"
"Discrete-event simulator of in-network aggregation with the data plane's own\n"
"slot policy (esa_policy.h).  Runs the same seeded workload under each\n"
"allocation policy and compares job completion times (JCT).\n"
"\n"
"General:\n"
"  --preset NAME         datacenter (default), testbed or netbound; applied before the\n"
"                        other options whatever their order\n"
"  --policy LIST         policies to run: esa,atp,switchml (default all)\n"
"  --prio NAME           packet priority: static, las, srsf, flat [%s]\n"
"  --seed N              workload seed [%llu]\n"
"  --reps N              repeat with seeds seed..seed+N-1, pool the JCTs [1]\n"
"  --csv                 one CSV line per policy instead of the table\n"
"  --jct-csv FILE        per-job JCTs of every policy (CSV)\n"
"  --ts-csv FILE         slot utilisation time series (CSV)\n"
"  --list-jobs           print the workload and exit\n"
"  -v, --verbose         every counter of every policy (last repetition)\n"
"  -q, --quiet           only the summary line\n"
"  -h, --help            this text\n"
"Switch:\n"
"  --pool N              aggregator slots [%u]\n"
"  --nvals N             int32 values per packet and slot [%u]\n"
"  --switch-mpps X       switch service rate, Mpps; 0 = line rate [%g]\n"
"  --stale-ms X          age out partials idle this long; 0 = never [%g]\n"
"  --switchml-regions N  switchml: the pool's fixed equal regions; a job takes\n"
"                        a free one at arrival or when one frees up;\n"
"                        0 = max(ceil(load), pool / window) [%u]\n"
"  --home N              esa, atp: every job gets a home of N slots, placed\n"
"                        where it meets the fewest others (esactl's region\n"
"                        auto N); 0 = hash(job) + chunk over the pool [%u]\n"
"Hosts and links:\n"
"  --link-gbps X         worker link rate [%g]\n"
"  --ps-link-gbps X      PS link rate [%g]\n"
"  --prop-us X           one-way host-switch latency [%g]\n"
"  --ps-mpps X           PS processing rate, Mpps [%g]\n"
"  --ps-copy-cost X      PS cost of a result copy or hold, packets [%g]\n"
"  --ps-hosts N          PS hosts shared by all jobs; 0 = one per job [%u]\n"
"  --ps-copy 0|1         the switch copies every result to the PS [%u]\n"
"  --ps-sums 0|1         the PS sends its sums to the switch, which sends them\n"
"                        to the workers (one packet on the PS's link); 0: one\n"
"                        to each worker [%u]\n"
"  --worker-mpps X       worker send rate, Mpps; 0 = link rate [%g]\n"
"  --window N            outstanding chunks per worker [%u]\n"
"  --window-min N        the window halves on contention down to N, grows\n"
"                        back by one per window of switch results (libesa's\n"
"                        window_min, esa_cc.h); 0 = fixed window [%u]\n"
"  --timeout-us X        first resend timeout [%g]\n"
"  --timeout-max-us X    cap of the doubling resend timeout [%g]\n"
"  --loss X              loss probability per worker-link traversal [%g]\n"
"  --loss-ps             apply --loss to PS links too\n"
"Workload:\n"
"  --jobs N              jobs [%u]\n"
"  --load X              offered concurrency: arrival rate = X / mean JCT\n"
"                        of a job alone [%g]\n"
"  --rate X              arrival rate in jobs/s (overrides --load)\n"
"  --workers LIST        workers per job, drawn uniformly [2,4,8]\n"
"  --iters MIN-MAX       iterations per job [%u-%u]\n"
"  --models LIST         resnet50,vgg16,bert-base (default all)\n"
"  --scale X             gradient size multiplier [%g]\n"
"  --compute-scale X     compute time multiplier on top of --scale [%g]\n"
"  --straggle X          mean extra compute per worker-iteration [%g]\n"
"  --ts-bin-us X         time series bin; 0 = auto\n"
"  --max-sim-s X         give up after this much simulated time [%g]\n"
"Racks (docs/simulator.md, \"Racks\"):\n"
"  --racks N             leaves under a spine, every job's ranks in blocks on\n"
"                        consecutive racks; 0 = one switch [%u]\n"
"  --rack-workers N      a job's ranks per rack [4]\n"
"  --levels N            2: a switch at every leaf and the spine; 1 (flat): the\n"
"                        spine alone, the leaves route [2]\n"
"  --uplink-gbps X       leaf-spine links, each way; 0 = --link-gbps [%g]\n"
"  --multirack           every policy flat and on two levels, the same jobs;\n"
"                        sets --racks 8 --rack-workers 4 --workers 4,8,16\n"
"                        --uplink-gbps 4x--link-gbps first (other options\n"
"                        override); ends with\n"
"                        multirack-sim: uplink_bytes_ratio=<x> jct_speedup_vs_flat=<x> ...\n"
"Sweep:\n"
"  --sweep               a pool x load grid, then one factor at a time (jobs,\n"
"                        prio, window, latency) around the options given\n"
"  --out DIR             where the sweep writes its files [build/sim]\n"
"  --sweep-pool LIST     grid pool sizes [256,512,1024,2048,4096,16384]\n"
"  --sweep-load LIST     grid loads [8,16,32,64,128]\n"
"  --sweep-jobs LIST     numbers of jobs [25,50,100,200]\n"
"  --sweep-prio LIST     priority policies [static,las,srsf,flat]\n"
"  --sweep-window LIST   windows [32,64,128,256]\n"
"  --sweep-prop LIST     one-way latencies, us [0.5,1,2,5]\n"
"  (an empty LIST skips that dimension)\n"
"\n"
"The last line is always (for a sweep: of its base point)\n"
"  jct: esa=<s> atp=<s> switchml=<s> speedup_vs_atp=<x> speedup_vs_switchml=<x>\n",
		sim_prio_name(d.prio), (unsigned long long)d.seed, d.pool, d.nvals,
		d.switch_mpps, d.stale_ms, d.swml_regions, d.home, d.link_gbps,
		d.ps_link_gbps, d.prop_us, d.ps_mpps, d.ps_copy_cost, d.ps_hosts,
		d.ps_copy, d.ps_sums, d.worker_mpps, d.window, d.window_min,
		d.timeout_us, d.timeout_max_us, d.loss,
		d.njobs, d.load, d.iter_min, d.iter_max, d.scale, d.compute_scale,
		d.straggle, d.max_sim_s, d.racks, d.uplink_gbps);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int parse_list_d(const char *s, double *v, int max)
{
	char *end;
	int n = 0;

	while (*s && n < max) {
		errno = 0;
		v[n] = strtod(s, &end);
		if (end == s || errno)
			return -1;
		n++;
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return *s ? -1 : n;
}

static int num(const char *opt, const char *s, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(*v)) {
		fprintf(stderr, "esa_sim: bad value for --%s: %s\n", opt, s);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Comparison                                                          */
/* ------------------------------------------------------------------ */

struct pol_agg {
	int	ran;
	int	unfinished;
	double	*jct;		/* pooled over repetitions */
	unsigned njct;
	double	avg, p95;
	double	sum_avg;	/* sum of per-rep averages */
	double	util_agg, util_held, util_occ, util_useful;
	double	ps_share, ps_load;
	uint64_t preempt, aged, collide, resend, orphan, ps_overlap, events;
	uint64_t data_rx;
	double	wall;
	struct sim_result last;	/* last repetition, for the time series */
};

struct cmp {
	struct pol_agg p[NPOL];
	unsigned reps;
	double	sp_atp_min, sp_atp_max, sp_swml_min, sp_swml_max;
	struct sim_workload wl;	/* last repetition's workload */
	int	failed;
};

static void cmp_free(struct cmp *c)
{
	for (int i = 0; i < NPOL; i++) {
		free(c->p[i].jct);
		sim_result_free(&c->p[i].last);
	}
	sim_workload_free(&c->wl);
	memset(c, 0, sizeof(*c));
}

static int run_compare(const struct sim_params *base, unsigned polmask,
		       unsigned reps, struct cmp *c)
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

static double speedup(const struct cmp *c, int pol)
{
	const struct pol_agg *e = &c->p[ESA_POLICY_ESA], *b = &c->p[pol];

	if (!e->ran || !b->ran || e->avg <= 0)
		return NAN;
	return b->avg / e->avg;
}

static void summary_line(FILE *f, const struct cmp *c)
{
	fprintf(f, "jct:");
	for (int pol = 0; pol < NPOL; pol++) {
		if (c->p[pol].ran)
			fprintf(f, " %s=%.6f", sim_policy_name(pol), c->p[pol].avg);
		else
			fprintf(f, " %s=nan", sim_policy_name(pol));
	}
	fprintf(f, " speedup_vs_atp=%.3f speedup_vs_switchml=%.3f\n",
		speedup(c, ESA_POLICY_ATP), speedup(c, ESA_POLICY_SWITCHML));
}

static void print_header(const struct sim_params *p, const struct cmp *c)
{
	unsigned nm[SIM_NMODELS] = {}, nw[65] = {};
	const struct sim_workload *w = &c->wl;

	for (unsigned i = 0; i < w->njobs; i++) {
		nm[w->job[i].model]++;
		nw[w->job[i].nworkers]++;
	}
	printf("esa_sim: preset=%s seed=%llu reps=%u jobs=%u load=%g (%.1f jobs/s) "
	       "pool=%ux%u window=%u prio=%s switchml-regions=%u home=%u\n",
	       preset_name, (unsigned long long)p->seed, c->reps, p->njobs,
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

static void print_table(const struct cmp *c)
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
static void print_counters(const struct cmp *c)
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

static void print_csv(const struct cmp *c, const struct sim_params *p)
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
static int write_cdf(const char *path, const struct cmp *c, int gp)
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
static int write_ts(const char *path, const struct cmp *c, unsigned pool, int gp)
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

/* ------------------------------------------------------------------ */
/* Sweep                                                               */
/* ------------------------------------------------------------------ */

/*
 * A grid of pool size x load (what decides contention is the pool per
 * concurrent job), then one factor at a time around the base point: number
 * of jobs, priority policy, window and host latency.
 */
enum { D_JOBS, D_PRIO, D_WINDOW, D_PROP, NDIM };
static const char *const dim_name[NDIM] = { "jobs", "prio", "window", "prop" };

struct sweep {
	double	pool[MAXLIST], load[MAXLIST];
	int	npool, nload;
	double	v[NDIM][MAXLIST];
	int	n[NDIM];
	const char *out;
};

static void sweep_defaults(struct sweep *sw)
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
	if (run_compare(p, polmask, reps, &c))
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
	spa = speedup(&c, ESA_POLICY_ATP);
	sps = speedup(&c, ESA_POLICY_SWITCHML);
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
	if (run_compare(base, polmask, reps, &c))
		return -1;
	snprintf(path, sizeof(path), "%s/jct_cdf.dat", sw->out);
	write_cdf(path, &c, 1);
	snprintf(path, sizeof(path), "%s/util_ts.dat", sw->out);
	write_ts(path, &c, base->pool, 1);
	f = openf(sw->out, "base.txt");
	if (f) {
		fprintf(f, "base: pool=%u load=%g jobs=%u window=%u prop=%gus "
			"prio=%s seed=%llu reps=%u\n", base->pool, base->load,
			base->njobs, base->window, base->prop_us,
			sim_prio_name(base->prio),
			(unsigned long long)base->seed, reps);
		summary_line(f, &c);
		fclose(f);
	}
	printf("sweep base pool=%u load=%g jobs=%u prio=%s: ", base->pool,
	       base->load, base->njobs, sim_prio_name(base->prio));
	summary_line(stdout, &c);
	f = fmemopen(st->base_line, sizeof(st->base_line), "w");
	if (f) {
		summary_line(f, &c);
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

static int run_sweep(const struct sim_params *base, unsigned polmask,
		     unsigned reps, const struct sweep *sw)
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

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

enum {
	O_PRESET = 256, O_POLICY, O_PRIO, O_SEED, O_REPS, O_CSV, O_JCTCSV,
	O_TSCSV, O_LIST, O_NVALS, O_LOSS, O_LOSSPS, O_TSBIN, O_MAXSIM,
	O_SWEEP, O_OUT, O_SPOOL, O_SLOAD, O_SJOBS, O_SPRIO, O_SWIN, O_SPROP,
	O_RACKS, O_RACKW, O_LEVELS, O_UPLINK, O_MULTIRACK,
};

static const struct option opts[] = {
	{ "preset", required_argument, 0, O_PRESET },
	{ "policy", required_argument, 0, O_POLICY },
	{ "prio", required_argument, 0, O_PRIO },
	{ "seed", required_argument, 0, O_SEED },
	{ "reps", required_argument, 0, O_REPS },
	{ "csv", no_argument, 0, O_CSV },
	{ "jct-csv", required_argument, 0, O_JCTCSV },
	{ "ts-csv", required_argument, 0, O_TSCSV },
	{ "list-jobs", no_argument, 0, O_LIST },
	{ "nvals", required_argument, 0, O_NVALS },
	{ "loss", required_argument, 0, O_LOSS },
	{ "loss-ps", no_argument, 0, O_LOSSPS },
	{ "ts-bin-us", required_argument, 0, O_TSBIN },
	{ "max-sim-s", required_argument, 0, O_MAXSIM },
	{ "sweep", no_argument, 0, O_SWEEP },
	{ "out", required_argument, 0, O_OUT },
	{ "sweep-pool", required_argument, 0, O_SPOOL },
	{ "sweep-load", required_argument, 0, O_SLOAD },
	{ "sweep-jobs", required_argument, 0, O_SJOBS },
	{ "sweep-prio", required_argument, 0, O_SPRIO },
	{ "sweep-window", required_argument, 0, O_SWIN },
	{ "sweep-prop", required_argument, 0, O_SPROP },
	{ "racks", required_argument, 0, O_RACKS },
	{ "rack-workers", required_argument, 0, O_RACKW },
	{ "levels", required_argument, 0, O_LEVELS },
	{ "uplink-gbps", required_argument, 0, O_UPLINK },
	{ "multirack", no_argument, 0, O_MULTIRACK },
	{ "verbose", no_argument, 0, 'v' },
	{ "quiet", no_argument, 0, 'q' },
	{ "help", no_argument, 0, 'h' },
	{ 0, 0, 0, 0 },
};

static int parse_names(const char *s, int (*parse)(const char *), double *v,
		       int max)
{
	char buf[256], *tok, *save = NULL;
	int n = 0, x;

	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		x = parse(tok);
		if (x < 0 || n >= max)
			return -1;
		v[n++] = x;
	}
	return n ? n : -1;
}

/* What the command line asks for. */
struct cli {
	struct sim_params p;
	struct sweep sw;
	const char *jct_csv, *ts_csv;
	int	csv, quiet, verbose, list, sweep, multirack;
	unsigned polmask, reps;
};

/*
 * Before the other options, whatever their order, so that any of them
 * overrides: the preset, and --multirack's racks and jobs (docs/
 * simulator.md, "Racks").
 */
static int pre_scan(struct cli *c, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *name = NULL;

		if (!strcmp(argv[i], "--preset") && i + 1 < argc)
			name = argv[i + 1];
		else if (!strncmp(argv[i], "--preset=", 9))
			name = argv[i] + 9;
		if (name) {
			if (sim_preset(&c->p, name)) {
				fprintf(stderr, "esa_sim: unknown preset %s\n", name);
				return -1;
			}
			preset_name = name;
		}
	}
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--multirack"))
			continue;
		c->p.racks = 8;
		c->p.rack_workers = 4;
		c->p.uplink_gbps = 4 * c->p.link_gbps;
		c->p.nwchoice = sim_param_ulist("4,8,16", c->p.wchoice,
						SIM_MAX_WCHOICE, 1, ESA_MAX_WORKERS);
	}
	return 0;
}

/* A list option of the sweep (or --policy); 0, or -1 if it is bad. */
static int parse_list(struct cli *c, int o, const char *arg)
{
	double v[MAXLIST];
	int n, d;

	switch (o) {
	case O_POLICY:
		n = parse_names(arg, sim_policy_parse, v, MAXLIST);
		if (n < 0)
			return -1;
		c->polmask = 0;
		for (int i = 0; i < n; i++)
			c->polmask |= 1u << (int)v[i];
		return 0;
	case O_SPOOL:
		n = parse_list_d(arg, c->sw.pool, MAXLIST);
		c->sw.npool = n;
		return n < 0 ? -1 : 0;
	case O_SLOAD:
		n = parse_list_d(arg, c->sw.load, MAXLIST);
		c->sw.nload = n;
		return n < 0 ? -1 : 0;
	case O_SPRIO:
		n = *arg ? parse_names(arg, sim_prio_parse, c->sw.v[D_PRIO], MAXLIST) : 0;
		c->sw.n[D_PRIO] = n;
		return n < 0 ? -1 : 0;
	default:	/* O_SJOBS, O_SWIN, O_SPROP */
		d = o == O_SJOBS ? D_JOBS : o == O_SWIN ? D_WINDOW : D_PROP;
		n = parse_list_d(arg, c->sw.v[d], MAXLIST);
		c->sw.n[d] = n;
		return n < 0 ? -1 : 0;
	}
}

/* A numeric option, x its value; 0, or -1 if it is out of range. */
static int parse_num(struct cli *c, int o, double x)
{
	struct sim_params *p = &c->p;

	switch (o) {
	case O_SEED: p->seed = (uint64_t)x; return 0;
	case O_REPS: if (x < 1) return -1; c->reps = (unsigned)x; return 0;
	case O_NVALS:
		if (x < 8 || x > ESA_MAX_VALUES || (unsigned)x % ESA_VALUES_ALIGN)
			return -1;
		p->nvals = (unsigned)x;
		return 0;
	case O_LOSS: if (x < 0 || x >= 1) return -1; p->loss = x; return 0;
	case O_TSBIN: if (x < 0) return -1; p->ts_bin_us = x; return 0;
	case O_MAXSIM: if (x <= 0) return -1; p->max_sim_s = x; return 0;
	case O_RACKS:
		if (x < 0 || x > SIM_MAX_RACKS || x != floor(x))
			return -1;
		p->racks = (unsigned)x;
		return 0;
	case O_RACKW:
		if (x < 1 || x > ESA_MAX_WORKERS || x != floor(x))
			return -1;
		p->rack_workers = (unsigned)x;
		return 0;
	case O_LEVELS: if (x != 1 && x != 2) return -1; p->levels = (unsigned)x; return 0;
	case O_UPLINK: if (x <= 0) return -1; p->uplink_gbps = x; return 0;
	}
	return -1;
}

/* One option; 0, 1 to exit 0 (help), or -1 to exit 2 (said why). */
static int parse_opt(struct cli *c, int o, const char *arg,
		     const struct option *lopts)
{
	const char *name = NULL;
	double x;

	switch (o) {
	case O_PRESET: return 0;
	case O_PRIO: c->p.prio = sim_prio_parse(arg); return c->p.prio < 0 ? -2 : 0;
	case O_POLICY: case O_SPOOL: case O_SLOAD: case O_SJOBS: case O_SPRIO:
	case O_SWIN: case O_SPROP:
		return parse_list(c, o, arg) ? -2 : 0;
	case O_OUT: c->sw.out = arg; return 0;
	case O_CSV: c->csv = 1; return 0;
	case O_JCTCSV: c->jct_csv = arg; return 0;
	case O_TSCSV: c->ts_csv = arg; return 0;
	case O_LIST: c->list = 1; return 0;
	case O_SWEEP: c->sweep = 1; return 0;
	case O_MULTIRACK: c->multirack = 1; return 0;
	case O_LOSSPS: c->p.loss_ps = 1; return 0;
	case 'q': c->quiet = 1; return 0;
	case 'v': c->verbose = 1; return 0;
	case 'h': usage(stdout); return 1;
	case '?': usage(stderr); return -1;
	}
	if (o >= SIM_OPT_BASE)
		return sim_param_set(&c->p, o, arg, "esa_sim") ? -1 : 0;
	for (const struct option *op = lopts; op->name; op++)
		if (op->val == o)
			name = op->name;
	if (num(name, arg, &x))
		return -1;
	return parse_num(c, o, x) ? -2 : 0;
}

/* The command line into c; 0, 1 to exit 0, or 2 after saying why. */
static int parse_args(struct cli *c, int argc, char **argv)
{
	struct option *lopts;
	int o, rc = 0;

	memset(c, 0, sizeof(*c));
	c->polmask = (1u << NPOL) - 1;
	c->reps = 1;
	sim_defaults(&c->p);
	sweep_defaults(&c->sw);
	if (pre_scan(c, argc, argv))
		return 2;
	/* The model's and workload's options are params.c's, as esa_jct's. */
	lopts = sim_param_options(opts);
	if (!lopts)
		return 2;
	while (!rc && (o = getopt_long(argc, argv, "qvh", lopts, NULL)) != -1) {
		rc = parse_opt(c, o, optarg, lopts);
		if (rc == -2)
			fprintf(stderr, "esa_sim: bad value: %s\n", optarg);
	}
	free(lopts);
	if (rc)
		return rc > 0 ? 1 : 2;
	if (optind < argc) {
		fprintf(stderr, "esa_sim: unexpected argument %s\n", argv[optind]);
		return 2;
	}
	return 0;
}

static int list_jobs(const struct sim_params *p)
{
	struct sim_workload w;

	if (sim_workload_gen(p, &w))
		return 2;
	printf("job arrival_ms model workers iters chunks compute_ms "
	       "static_prio alone_ms\n");
	for (unsigned i = 0; i < w.njobs; i++) {
		const struct sim_job_spec *j = &w.job[i];

		printf("%u %.4f %s %u %u %u %.4f %u %.4f\n", i,
		       (double)j->arrival / T_MS, sim_models[j->model].name,
		       j->nworkers, j->iters, j->chunks,
		       (double)j->compute / T_MS, j->sprio, j->ideal_s * 1e3);
	}
	printf("rate %.3f jobs/s, mean alone %.4f ms\n", w.rate,
	       w.mean_ideal_s * 1e3);
	sim_workload_free(&w);
	return 0;
}

/* The comparison of the policies: table or CSV, files, summary line. */
static int compare(const struct cli *a)
{
	const struct sim_params *p = &a->p;
	struct cmp c;
	int rc;

	if (run_compare(p, a->polmask, a->reps, &c))
		return 1;
	if (!a->quiet && !a->csv) {
		print_header(p, &c);
		print_table(&c);
		if (a->verbose)
			print_counters(&c);
	} else if (a->csv) {
		print_csv(&c, p);
	}
	if (a->jct_csv && write_cdf(a->jct_csv, &c, 0))
		fprintf(stderr, "esa_sim: %s: %s\n", a->jct_csv, strerror(errno));
	if (a->ts_csv && write_ts(a->ts_csv, &c, p->pool, 0))
		fprintf(stderr, "esa_sim: %s: %s\n", a->ts_csv, strerror(errno));
	summary_line(stdout, &c);
	rc = c.failed;
	if (c.failed)
		fprintf(stderr, "esa_sim: some jobs did not finish within %g s "
			"simulated\n", p->max_sim_s);
	cmp_free(&c);
	return rc;
}

int main(int argc, char **argv)
{
	static struct cli c;
	int rc = parse_args(&c, argc, argv);

	if (rc)
		return rc == 1 ? 0 : rc;
	if (c.list)
		return list_jobs(&c.p);
	if (c.multirack) {
		struct sim_mr_opts mo = { .polmask = c.polmask, .quiet = c.quiet };

		return sim_multirack(&c.p, &mo);
	}
	if (c.sweep) {
		rc = run_sweep(&c.p, c.polmask, c.reps, &c.sw);
		return rc < 0 ? 1 : rc;
	}
	return compare(&c);
}
