// SPDX-License-Identifier: GPL-2.0
/*
 * esa_jct report: every run of a JCT benchmark, the simulator on exactly the
 * same workloads, and the comparison.
 *
 *   esa_jct report --dir DIR --seeds LIST --reps N [workload options]
 *
 * Reads DIR/run-POLICY-sSEED-rREP.txt (esa_jct run; jct_runfile.c), runs
 * esa_sim's engine (libsim.a, linked in) on the workload of every seed, and
 * prints:
 *   - the testbed table per policy: average and 95th-percentile JCT pooled
 *     over every run, JCT ratio against esa, slot utilisation, the share of
 *     DATA packets the switch sent to the PS, preemptions, and the spread
 *     over runs;
 *   - the simulator's table on the same workloads;
 *   - the validation: each policy's average JCT and each baseline's ratio to
 *     esa, simulator against testbed, and per job side by side, with the
 *     tolerances and a verdict line;
 *   - the summary line of the testbed, last.
 * It writes the plot data into DIR (jct_plots.c).
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"
#include "jct_report.h"

static int agg_add_jcts(struct agg *a, const double *v, unsigned n)
{
	double *nj = realloc(a->jct, (a->njct + n) * sizeof(double));

	if (!nj)
		return -1;
	a->jct = nj;
	memcpy(a->jct + a->njct, v, n * sizeof(double));
	a->njct += n;
	return 0;
}

static void agg_finish(struct agg *a)
{
	double s = 0;
	unsigned n = 0;

	for (unsigned i = 0; i < a->njct; i++) {
		if (isnan(a->jct[i])) {
			a->avg = a->p95 = NAN;
			return;
		}
		s += a->jct[i];
		n++;
	}
	a->avg = n ? s / n : NAN;
	a->p95 = n ? sim_quantile(a->jct, n, 0.95) : NAN;
}

static double mean_of(const double *v, unsigned n)
{
	double s = 0;

	for (unsigned i = 0; i < n; i++)
		s += v[i];
	return n ? s / n : NAN;
}

static void print_table(const char *what, struct agg *a)
{
	printf("%-9s %9s %9s %7s %7s %7s %7s %8s %9s %9s %8s %8s  %s\n", what, "avg_ms",
	       "p95_ms", "vs_esa", "u_agg", "u_held", "u_occ", "ps_share", "preempt",
	       "collide", "tomb", "resend", "avg over runs (min..max ms)");
	for (int pol = 0; pol < NPOL; pol++) {
		printf("%-9s %9.1f %9.1f %7.3f %7.3f %7.3f %7.3f %8.3f %9.0f %9.0f %8.0f %8.0f  "
		       "%.1f..%.1f (%u run%s)%s\n", sim_policy_name(pol), a[pol].avg * 1e3,
		       a[pol].p95 * 1e3, a[pol].avg / a[ESA_POLICY_ESA].avg, a[pol].u_agg,
		       a[pol].u_held, a[pol].u_occ, a[pol].ps_share, a[pol].preempt,
		       a[pol].collide, a[pol].tomb, a[pol].resend, a[pol].run_min * 1e3,
		       a[pol].run_max * 1e3, a[pol].runs, a[pol].runs == 1 ? "" : "s",
		       a[pol].failed ? "  FAILED RUNS" : "");
	}
}

static double lr(double a, double b)
{
	return fabs(log(a / b));
}

static int report_init(struct report *R, const struct jct_opts *o)
{
	size_t n = (size_t)NPOL * o->nseeds;

	memset(R, 0, sizeof(*R));
	R->o = o;
	R->ns = o->nseeds;
	R->nr = o->reps;
	R->nj = o->p.njobs;
	R->runs = calloc(n * R->nr, sizeof(*R->runs));
	R->tbjob = calloc(n * R->nj, sizeof(double));
	R->smjob = calloc(n * R->nj, sizeof(double));
	R->wls = calloc(R->ns, sizeof(*R->wls));
	R->sp_atp_min = R->sp_sw_min = INFINITY;
	R->sp_atp_max = R->sp_sw_max = -INFINITY;
	for (int pol = 0; pol < NPOL; pol++) {
		R->tb[pol].run_min = R->sm[pol].run_min = INFINITY;
		R->tb[pol].run_max = R->sm[pol].run_max = -INFINITY;
	}
	return R->runs && R->tbjob && R->smjob && R->wls ? 0 : -ENOMEM;
}

static void report_free(struct report *R)
{
	if (R->runs)
		for (size_t k = 0; k < (size_t)NPOL * R->ns * R->nr; k++)
			jct_runf_free(&R->runs[k]);
	if (R->wls)
		for (unsigned s = 0; s < R->ns; s++)
			sim_workload_free(&R->wls[s]);
	for (int pol = 0; pol < NPOL; pol++) {
		free(R->tb[pol].jct);
		free(R->sm[pol].jct);
	}
	free(R->runs);
	free(R->tbjob);
	free(R->smjob);
	free(R->wls);
}

/* The run must have run this seed's workload: the same jobs, arriving at
 * the same times. */
static void check_run(struct report *R, unsigned s, const struct runf *rf, const char *path)
{
	if (rf->njobs != R->nj) {
		fprintf(stderr, "esa_jct report: %s has %u jobs, not %u\n", path, rf->njobs,
			R->nj);
		R->mismatch++;
	}
	for (unsigned i = 0; i < R->nj; i++) {
		const struct sim_job_spec *w = &R->wls[s].job[i];

		if (rf->job[i].chunks != w->chunks || rf->job[i].workers != w->nworkers ||
		    rf->job[i].iters != w->iters ||
		    fabs(rf->job[i].arrival - (double)w->arrival / T_S) > 1e-5) {
			fprintf(stderr, "esa_jct report: %s: job %u is not the workload's\n",
				path, i);
			R->mismatch++;
			break;
		}
	}
}

/* The counters of one testbed run into its policy's sums (averaged over
 * the runs by tb_average()). */
static void tb_add_counters(struct agg *a, const struct runf *rf)
{
	a->idle += rf->cpu_idle;
	a->others += rf->cpu_others;
	a->others_max = fmax(a->others_max, rf->cpu_others);
	a->u_agg += rf->u_agg;
	a->u_held += rf->u_held;
	a->u_occ += rf->u_occ;
	a->ps_share += jct_data_rx(rf->tot) ? (double)jct_fallback(rf->tot) / jct_data_rx(rf->tot) : 0;
	a->preempt += rf->tot[ESA_C_PREEMPT_CAUSED];
	a->collide += rf->tot[ESA_C_COLLISION];
	a->tomb += rf->tot[ESA_C_TOMB_FWD];
	a->held += rf->tot[ESA_C_HELD];
	a->aged += rf->tot[ESA_C_AGED];
}

/* One testbed run of pol on seed s; *avg is its average JCT. */
static int tb_add_run(struct report *R, int pol, unsigned s, const struct runf *rf,
		      double *avg)
{
	struct agg *a = &R->tb[pol];
	double *v;

	if (!rf->ok)
		a->failed++, R->failed_runs++;
	a->runs++;
	v = malloc(R->nj * sizeof(double));
	if (!v)
		return -ENOMEM;
	for (unsigned i = 0; i < R->nj; i++) {
		v[i] = rf->job[i].jct;
		*tb_job(R, pol, s, i) += v[i] / R->nr;
		a->bad += rf->job[i].bad;
		a->resend += (double)rf->job[i].resends;
	}
	agg_add_jcts(a, v, R->nj);
	*avg = mean_of(v, R->nj);
	free(v);
	a->run_min = fmin(a->run_min, *avg);
	a->run_max = fmax(a->run_max, *avg);
	tb_add_counters(a, rf);
	return 0;
}

/* Repetition r of seed s under every policy, and esa's speedups in it. */
static int tb_read_rep(struct report *R, unsigned s, unsigned r)
{
	double avg[NPOL] = { 0 };
	char path[4096];

	for (int pol = 0; pol < NPOL; pol++) {
		struct runf *rf = run_of(R, pol, s, r);

		snprintf(path, sizeof(path), "%s/run-%s-s%u-r%u.txt", R->o->dir,
			 sim_policy_name(pol), R->o->seeds[s], r + 1);
		if (jct_read_run(path, rf, R->nj)) {
			fprintf(stderr, "esa_jct report: %s missing\n", path);
			R->missing++;
			continue;
		}
		check_run(R, s, rf, path);
		if (tb_add_run(R, pol, s, rf, &avg[pol]))
			return -ENOMEM;
	}
	if (avg[ESA_POLICY_ESA] > 0 && avg[ESA_POLICY_ATP] > 0) {
		R->sp_atp_min = fmin(R->sp_atp_min, avg[ESA_POLICY_ATP] / avg[ESA_POLICY_ESA]);
		R->sp_atp_max = fmax(R->sp_atp_max, avg[ESA_POLICY_ATP] / avg[ESA_POLICY_ESA]);
	}
	if (avg[ESA_POLICY_ESA] > 0 && avg[ESA_POLICY_SWITCHML] > 0) {
		R->sp_sw_min = fmin(R->sp_sw_min, avg[ESA_POLICY_SWITCHML] / avg[ESA_POLICY_ESA]);
		R->sp_sw_max = fmax(R->sp_sw_max, avg[ESA_POLICY_SWITCHML] / avg[ESA_POLICY_ESA]);
	}
	return 0;
}

/* The testbed runs: every seed's workload, then its runs. */
static int report_testbed(struct report *R)
{
	for (unsigned s = 0; s < R->ns; s++) {
		struct sim_params p = R->o->p;

		p.seed = R->o->seeds[s];
		if (sim_workload_gen(&p, &R->wls[s])) {
			fprintf(stderr, "esa_jct: bad workload parameters\n");
			return -EINVAL;
		}
		for (unsigned r = 0; r < R->nr; r++)
			if (tb_read_rep(R, s, r))
				return -ENOMEM;
	}
	for (int pol = 0; pol < NPOL; pol++) {
		struct agg *a = &R->tb[pol];
		double n = a->runs ? a->runs : 1;

		agg_finish(a);
		a->u_agg /= n, a->u_held /= n, a->u_occ /= n, a->ps_share /= n;
		a->preempt /= n, a->collide /= n, a->tomb /= n, a->resend /= n;
		a->held /= n, a->aged /= n;
		a->idle /= n, a->others /= n;
	}
	return 0;
}

/* One simulated run into its policy's aggregate: per-seed means. */
static void sm_add_run(struct report *R, int pol, unsigned s, const struct sim_result *res)
{
	struct agg *a = &R->sm[pol];
	unsigned ns = R->ns;

	a->runs++;
	agg_add_jcts(a, res->jct, R->nj);
	for (unsigned i = 0; i < R->nj; i++)
		*sm_job(R, pol, s, i) = res->jct[i];
	a->run_min = fmin(a->run_min, res->avg_jct);
	a->run_max = fmax(a->run_max, res->avg_jct);
	a->u_agg += res->util_agg / ns;
	a->u_held += res->util_held / ns;
	a->u_occ += res->util_occ / ns;
	a->ps_share += (res->data_rx ? (double)res->sw_fallback / res->data_rx : 0) / ns;
	a->preempt += (double)res->c[ESA_C_PREEMPT_CAUSED] / ns;
	a->collide += (double)res->c[ESA_C_COLLISION] / ns;
	a->tomb += (double)res->c[ESA_C_TOMB_FWD] / ns;
	a->resend += (double)res->resends / ns;
	a->held += (double)res->c[ESA_C_HELD] / ns;
	a->aged += (double)res->c[ESA_C_AGED] / ns;
}

/* The simulator on the same workloads. */
static int report_simulate(struct report *R)
{
	for (unsigned s = 0; s < R->ns; s++) {
		struct sim_params p = R->o->p;

		p.seed = R->o->seeds[s];
		for (int pol = 0; pol < NPOL; pol++) {
			struct sim_result res;
			int rc = sim_run(&p, &R->wls[s], pol, &res);

			if (rc < 0) {
				fprintf(stderr, "esa_jct report: the simulator failed\n");
				return rc;
			}
			if (rc > 0)
				R->sm[pol].failed++;
			sm_add_run(R, pol, s, &res);
			sim_result_free(&res);
		}
	}
	for (int pol = 0; pol < NPOL; pol++)
		agg_finish(&R->sm[pol]);
	return 0;
}

static void print_header(struct report *R)
{
	const struct jct_opts *o = R->o;
	unsigned nreg, regsize;

	printf("esa_jct: %u jobs per run, seeds", R->nj);
	for (unsigned s = 0; s < R->ns; s++)
		printf("%s%u", s ? "," : " ", o->seeds[s]);
	printf(", %u repetition%s each, pool %u x %u values, window %u, prio %s, home %u\n",
	       R->nr, R->nr > 1 ? "s" : "", o->p.pool, o->p.nvals, o->p.window,
	       sim_prio_name(o->p.prio), o->p.home);
	jct_print_scale(stdout, &o->p);
	sim_swml_regions(&o->p, &R->wls[0], &nreg, &regsize);
	printf("switchml: %u regions of %u slots (max(ceil(load), pool / window)); "
	       "offered load %.2f jobs at %.3f jobs/s\n", nreg, regsize,
	       R->wls[0].rate * R->wls[0].mean_ideal_s, R->wls[0].rate);
	printf("same workload in the simulator: esa_sim ");
	jct_sim_args(stdout, o);
	printf(" --seed S (S in the seeds above)\n\n");
}

static void print_tables(struct report *R)
{
	const struct agg *tb = R->tb;

	printf("testbed (%u runs per policy; JCTs pooled over runs; counters per run):\n",
	       R->ns * R->nr);
	print_table("policy", R->tb);
	printf("speedup of esa per run: vs atp %.3f..%.3f, vs switchml %.3f..%.3f\n",
	       R->sp_atp_min, R->sp_atp_max, R->sp_sw_min, R->sp_sw_max);
	printf("machine during the runs (esa, atp, switchml): idle %.0f%%, %.0f%%, %.0f%%; "
	       "other processes %.0f%%, %.0f%%, %.0f%% (at most %.0f%%)\n",
	       100 * tb[0].idle, 100 * tb[1].idle, 100 * tb[2].idle, 100 * tb[0].others,
	       100 * tb[1].others, 100 * tb[2].others,
	       100 * fmax(tb[0].others_max, fmax(tb[1].others_max, tb[2].others_max)));
	printf("wrong elements in any allreduce: %llu; failed runs: %d\n\n",
	       (unsigned long long)(tb[0].bad + tb[1].bad + tb[2].bad), R->failed_runs);

	printf("simulator, same workloads (%u seed%s):\n", R->ns, R->ns > 1 ? "s" : "");
	print_table("policy", R->sm);
	printf("\n");
}

/* A run during which the machine was less idle than this measured the CPU
 * (docs/evaluation.md): flagged in the runs' table. */
#define CPU_BOUND_IDLE	0.20

/*
 * Every run: its average JCT, how idle the machine was and how much other
 * processes took, what went to the PS and the resends.  A run under 20%
 * idle is flagged CPU-bound: the testbed then measured the CPU, not the
 * network or the policy.  Returns the number of such runs.
 */
static unsigned print_runs(struct report *R)
{
	unsigned cpu_bound = 0;

	printf("runs (idle: the machine's idle share; others: other processes'; "
	       "CPU-bound: under %.0f%% idle):\n", 100 * CPU_BOUND_IDLE);
	printf("%4s %3s %-9s %9s %5s %6s %8s %8s %7s\n", "seed", "rep", "policy",
	       "avg_ms", "idle", "others", "ps_share", "resends", "held");
	for (unsigned s = 0; s < R->ns; s++)
		for (unsigned r = 0; r < R->nr; r++)
			for (int pol = 0; pol < NPOL; pol++) {
				const struct runf *rf = run_of(R, pol, s, r);
				uint64_t rx = jct_data_rx(rf->tot), rs = 0, held;
				double sum = 0;

				if (!rf->present)
					continue;
				for (unsigned i = 0; i < R->nj; i++) {
					sum += rf->job[i].jct;
					rs += rf->job[i].resends;
				}
				held = rf->tot[ESA_C_RESEND_HELD];
				printf("%4u %3u %-9s %9.1f %4.0f%% %5.0f%% %8.3f %8llu %7llu%s\n",
				       R->o->seeds[s], r + 1, sim_policy_name(pol),
				       1e3 * sum / R->nj, 100 * rf->cpu_idle,
				       100 * rf->cpu_others,
				       rx ? (double)jct_fallback(rf->tot) / rx : 0,
				       (unsigned long long)rs, (unsigned long long)held,
				       rf->cpu_idle < CPU_BOUND_IDLE ? "  CPU-bound" : "");
				cpu_bound += rf->cpu_idle < CPU_BOUND_IDLE;
			}
	printf("(held: resends the switch held for a young partial, resend_held)\n");
	printf("runs under %.0f%% idle (CPU-bound): %u\n\n", 100 * CPU_BOUND_IDLE, cpu_bound);
	return cpu_bound;
}

/*
 * Per job, side by side: testbed (mean over repetitions) and simulator.
 * Each policy's |log(sim/testbed)| per job goes into dev (NULL: none),
 * ndev[pol] of them from dev + pol * ns * nj.
 */
static void print_jobs(struct report *R, double *dev, unsigned *ndev)
{
	size_t per_pol = (size_t)R->ns * R->nj;

	printf("per job, testbed vs simulator (JCT ms; testbed: mean of %u repetition%s):\n",
	       R->nr, R->nr > 1 ? "s" : "");
	printf("%4s %4s %-9s %2s %5s %5s %8s | %8s %8s %8s | %8s %8s %8s\n", "seed", "job",
	       "model", "w", "iters", "chnks", "arr_ms", "tb_esa", "tb_atp", "tb_swml",
	       "sim_esa", "sim_atp", "sim_swml");
	for (unsigned s = 0; s < R->ns; s++) {
		for (unsigned i = 0; i < R->nj; i++) {
			const struct sim_job_spec *w = &R->wls[s].job[i];

			printf("%4u %4u %-9s %2u %5u %5u %8.1f |", R->o->seeds[s], i,
			       sim_models[w->model].name, w->nworkers, w->iters, w->chunks,
			       (double)w->arrival / T_MS);
			for (int pol = 0; pol < NPOL; pol++)
				printf(" %8.1f", *tb_job(R, pol, s, i) * 1e3);
			printf(" |");
			for (int pol = 0; pol < NPOL; pol++) {
				double tbj = *tb_job(R, pol, s, i), smj = *sm_job(R, pol, s, i);

				printf(" %8.1f", smj * 1e3);
				if (dev && tbj > 0 && smj > 0)
					dev[pol * per_pol + ndev[pol]++] = lr(smj, tbj);
			}
			printf("\n");
		}
	}
	printf("\n");
}

/* The validation: each policy's average JCT and the median of its per-job
 * deviations within its tolerance.  Returns whether every policy is. */
static bool print_validation(struct report *R, double *dev, const unsigned *ndev)
{
	const struct agg *tb = R->tb, *sm = R->sm;
	size_t per_pol = (size_t)R->ns * R->nj;
	bool val_ok = true;

	printf("validation (simulator against testbed: |log(sim/testbed)| of each policy's "
	       "average JCT, and the median over jobs of each job's, within the policy's "
	       "tolerance):\n");
	for (int pol = 0; pol < NPOL; pol++) {
		double d = lr(sm[pol].avg, tb[pol].avg), med = NAN, tol = R->o->tol[pol];
		bool ok;

		if (dev && ndev[pol]) {
			qsort(dev + pol * per_pol, ndev[pol], sizeof(double), jct_cmp_double);
			med = sim_quantile(dev + pol * per_pol, ndev[pol], 0.5);
		}
		ok = d <= tol && med <= tol;
		printf("  %-9s avg JCT testbed %8.1f ms, sim %8.1f ms: sim/testbed %.3f, "
		       "|log| %.3f; per job median |log| %.3f; tolerance %.2f: %s\n",
		       sim_policy_name(pol), tb[pol].avg * 1e3, sm[pol].avg * 1e3,
		       sm[pol].avg / tb[pol].avg, d, med, tol, ok ? "ok" : "NO");
		val_ok &= ok;
	}
	for (int pol = 1; pol < NPOL; pol++)
		printf("  %s/esa: testbed %.3f, sim %.3f\n", sim_policy_name(pol),
		       tb[pol].avg / tb[ESA_POLICY_ESA].avg, sm[pol].avg / sm[ESA_POLICY_ESA].avg);
	printf("sim-jct: esa=%.6f atp=%.6f switchml=%.6f speedup_vs_atp=%.3f "
	       "speedup_vs_switchml=%.3f\n", sm[ESA_POLICY_ESA].avg, sm[ESA_POLICY_ATP].avg,
	       sm[ESA_POLICY_SWITCHML].avg, sm[ESA_POLICY_ATP].avg / sm[ESA_POLICY_ESA].avg,
	       sm[ESA_POLICY_SWITCHML].avg / sm[ESA_POLICY_ESA].avg);
	printf("validation: %s (tolerances: esa %.2f, atp %.2f, switchml %.2f)\n\n",
	       val_ok ? "ok" : "FAILED", R->o->tol[0], R->o->tol[1], R->o->tol[2]);
	return val_ok;
}

int jct_report(struct jct_opts *o)
{
	struct report R;
	unsigned ndev[NPOL] = { 0 };
	double *dev;
	const struct agg *tb = R.tb;
	int rc = 2;

	if (!o->dir) {
		fprintf(stderr, "esa_jct report: --dir is needed\n");
		return 2;
	}
	if (report_init(&R, o) || report_testbed(&R) || report_simulate(&R))
		goto out;

	print_header(&R);
	print_tables(&R);
	print_runs(&R);
	dev = calloc((size_t)NPOL * R.ns * R.nj, sizeof(double));
	print_jobs(&R, dev, ndev);
	print_validation(&R, dev, ndev);
	free(dev);

	jct_write_plots(&R);

	printf("jct: esa=%.6f atp=%.6f switchml=%.6f speedup_vs_atp=%.3f "
	       "speedup_vs_switchml=%.3f\n", tb[ESA_POLICY_ESA].avg, tb[ESA_POLICY_ATP].avg,
	       tb[ESA_POLICY_SWITCHML].avg, tb[ESA_POLICY_ATP].avg / tb[ESA_POLICY_ESA].avg,
	       tb[ESA_POLICY_SWITCHML].avg / tb[ESA_POLICY_ESA].avg);
	rc = R.missing || R.mismatch || R.failed_runs ? 1 : 0;
out:
	report_free(&R);
	return rc;
}
