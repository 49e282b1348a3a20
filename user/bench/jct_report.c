// SPDX-License-Identifier: GPL-2.0
/*
 * esa_jct report: every run of a JCT benchmark, the simulator on exactly the
 * same workloads, and the comparison.
 *
 *   esa_jct report --dir DIR --seeds LIST --reps N [workload options]
 *
 * Reads DIR/run-POLICY-sSEED-rREP.txt (esa_jct run), runs esa_sim's engine
 * (user/sim/sim.c, linked in) on the workload of every seed, and prints:
 *   - the testbed table per policy: average and 95th-percentile JCT pooled
 *     over every run, JCT ratio against esa, slot utilisation, the share of
 *     DATA packets the switch sent to the PS, preemptions, and the spread
 *     over runs;
 *   - the simulator's table on the same workloads;
 *   - the validation: each policy's average JCT and each baseline's ratio to
 *     esa, simulator against testbed, and per job side by side, with the
 *     tolerances and a verdict line;
 *   - the summary line of the testbed, last.
 * It writes the plot data into DIR: jct_cdf.dat, util_ts.dat, jobs.dat.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"
#include "jct.h"

#define NPOL	JCT_NPOL

struct rjob {
	unsigned id, workers, iters, chunks;
	double	arrival, jct, wait_region, rtt_us, comm;
	char	model[16];
	int	ok;
	uint64_t tx, resends, rx_ps, bad;
};

struct runf {
	int	present, ok;
	unsigned seed, rep, njobs, regions, regsize;
	double	makespan, u_agg, u_held, u_occ;
	double	cpu_idle, cpu_self, cpu_ps, cpu_others;
	struct rjob *job;
	uint64_t tot[__ESA_C_MAX];
	double	*ts_t;
	unsigned *ts_b, *ts_h, *ts_o;
	size_t	nts;
};

static int counter_index(const char *name)
{
	for (int c = 0; c < __ESA_C_MAX; c++)
		if (!strcmp(esa_counter_names[c], name))
			return c;
	return -1;
}

static int read_run(const char *path, struct runf *r, unsigned njobs)
{
	char line[4096];
	int cols[128], ncols = 0;
	size_t capts = 0;
	FILE *f = fopen(path, "r");

	memset(r, 0, sizeof(*r));
	if (!f)
		return -errno;
	r->job = calloc(njobs, sizeof(*r->job));
	if (!r->job) {
		fclose(f);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < njobs; i++)
		r->job[i].jct = NAN;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "run ", 4)) {
			char *s;

			if ((s = strstr(line, " seed=")))
				r->seed = strtoul(s + 6, NULL, 10);
			if ((s = strstr(line, " rep=")))
				r->rep = strtoul(s + 5, NULL, 10);
			if ((s = strstr(line, " jobs=")))
				r->njobs = strtoul(s + 6, NULL, 10);
			if ((s = strstr(line, " regions=")))
				r->regions = strtoul(s + 9, NULL, 10);
			if ((s = strstr(line, " regsize=")))
				r->regsize = strtoul(s + 9, NULL, 10);
			if ((s = strstr(line, " makespan_s=")))
				r->makespan = strtod(s + 12, NULL);
			if ((s = strstr(line, " ok=")))
				r->ok = atoi(s + 4);
		} else if (!strncmp(line, "cpu ", 4)) {
			char *q;

			if ((q = strstr(line, " idle=")))
				r->cpu_idle = strtod(q + 6, NULL);
			if ((q = strstr(line, " self_s=")))
				r->cpu_self = strtod(q + 8, NULL);
			if ((q = strstr(line, " ps_s=")))
				r->cpu_ps = strtod(q + 6, NULL);
			if ((q = strstr(line, " others=")))
				r->cpu_others = strtod(q + 8, NULL);
		} else if (!strncmp(line, "util ", 5)) {
			sscanf(line, "util u_agg=%lf u_held=%lf u_occ=%lf", &r->u_agg,
			       &r->u_held, &r->u_occ);
		} else if (!strncmp(line, "job ", 4)) {
			struct rjob j = { 0 };
			unsigned prio, win;
			double cms, comm;
			unsigned long long tx, rs, rr, rp, bad;

			if (sscanf(line, "job %u %lf %15s %u %u %u %lf %u %u %lf %d %lf %lf "
				   "%llu %llu %llu %llu %lf %llu", &j.id, &j.arrival, j.model,
				   &j.workers, &j.iters, &j.chunks, &cms, &prio, &win, &j.jct,
				   &j.ok, &j.wait_region, &comm, &tx, &rs, &rr, &rp, &j.rtt_us,
				   &bad) != 19 || j.id >= njobs)
				continue;
			j.comm = comm;
			j.tx = tx;
			j.resends = rs;
			j.rx_ps = rp;
			j.bad = bad;
			if (!j.ok)
				j.jct = NAN;
			r->job[j.id] = j;
		} else if (!strncmp(line, "# ctr ROW", 9)) {
			char *save = NULL, *t = strtok_r(line + 9, " \n", &save);

			for (ncols = 0; t && ncols < 128; t = strtok_r(NULL, " \n", &save))
				cols[ncols++] = counter_index(t);
		} else if (!strncmp(line, "ctr total", 9)) {
			char *p = line + 9, *end;

			for (int k = 0; k < ncols; k++) {
				unsigned long long v = strtoull(p, &end, 10);

				if (end == p)
					break;
				if (cols[k] >= 0)
					r->tot[cols[k]] = v;
				p = end;
			}
		} else if (!strncmp(line, "ts ", 3)) {
			double t;
			unsigned b, h, o;

			if (sscanf(line, "ts %lf %u %u %u", &t, &b, &h, &o) != 4)
				continue;
			if (r->nts == capts) {
				capts = capts ? 2 * capts : 4096;
				r->ts_t = realloc(r->ts_t, capts * sizeof(double));
				r->ts_b = realloc(r->ts_b, capts * sizeof(unsigned));
				r->ts_h = realloc(r->ts_h, capts * sizeof(unsigned));
				r->ts_o = realloc(r->ts_o, capts * sizeof(unsigned));
				if (!r->ts_t || !r->ts_b || !r->ts_h || !r->ts_o) {
					fclose(f);
					return -ENOMEM;
				}
			}
			r->ts_t[r->nts] = t;
			r->ts_b[r->nts] = b;
			r->ts_h[r->nts] = h;
			r->ts_o[r->nts] = o;
			r->nts++;
		}
	}
	fclose(f);
	r->present = 1;
	return 0;
}

static void run_free(struct runf *r)
{
	free(r->job);
	free(r->ts_t);
	free(r->ts_b);
	free(r->ts_h);
	free(r->ts_o);
}

/* DATA packets the switch saw, and those it sent on to the PS (partials and
 * collisions of every reason): esa_sim's data_rx and sw_fallback. */
static uint64_t data_rx(const uint64_t *c)
{
	return c[ESA_C_CLAIMED] + c[ESA_C_AGGREGATED] + c[ESA_C_DUPLICATE] +
	       c[ESA_C_COLLISION] + c[ESA_C_TOMB_FWD] + c[ESA_C_RESEND_FWD] +
	       c[ESA_C_RESEND_FLUSH] + c[ESA_C_NOSLOT];
}

static uint64_t fallback(const uint64_t *c)
{
	return c[ESA_C_EVICTED] + c[ESA_C_COLLISION] + c[ESA_C_TOMB_FWD] +
	       c[ESA_C_RESEND_FWD] + c[ESA_C_NOSLOT];
}

struct agg {
	unsigned runs, failed;
	double	*jct;
	unsigned njct;
	double	avg, p95;
	double	run_min, run_max;	/* per-run average JCT */
	double	u_agg, u_held, u_occ, ps_share;
	double	preempt, collide, tomb, resend, held, aged;
	uint64_t bad;
	double	idle, others, others_max;
};

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

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void write_cdf(FILE *f, const char *name, struct agg *a)
{
	double *c = malloc(a->njct * sizeof(double));

	if (!c)
		return;
	memcpy(c, a->jct, a->njct * sizeof(double));
	qsort(c, a->njct, sizeof(double), cmp_d);
	fprintf(f, "# %s: jct_ms cdf\n", name);
	for (unsigned i = 0; i < a->njct; i++)
		fprintf(f, "%.3f %.6f\n", c[i] * 1e3, (i + 1.0) / a->njct);
	fprintf(f, "\n\n");
	free(c);
}

int jct_report(struct jct_opts *o)
{
	unsigned ns = o->nseeds, nr = o->reps, nj = o->p.njobs;
	struct agg tb[NPOL] = { 0 }, sm[NPOL] = { 0 };
	struct runf *runs = calloc((size_t)NPOL * ns * nr, sizeof(*runs));
	double *tbjob = calloc((size_t)NPOL * ns * nj, sizeof(double));
	double *smjob = calloc((size_t)NPOL * ns * nj, sizeof(double));
	double sp_atp_min = INFINITY, sp_atp_max = -INFINITY;
	double sp_sw_min = INFINITY, sp_sw_max = -INFINITY;
	struct sim_workload *wls = calloc(ns, sizeof(*wls));
	int failed_runs = 0, missing = 0, mismatch = 0, val_ok = 1;
	char path[4096];
	FILE *f;

	if (!o->dir) {
		fprintf(stderr, "esa_jct report: --dir is needed\n");
		return 2;
	}
	if (!runs || !tbjob || !smjob || !wls)
		return 2;
#define RUN(pol, s, r) (&runs[((size_t)(pol) * ns + (s)) * nr + (r)])
#define TBJ(pol, s, i) tbjob[((size_t)(pol) * ns + (s)) * nj + (i)]
#define SMJ(pol, s, i) smjob[((size_t)(pol) * ns + (s)) * nj + (i)]

	for (int pol = 0; pol < NPOL; pol++) {
		tb[pol].run_min = sm[pol].run_min = INFINITY;
		tb[pol].run_max = sm[pol].run_max = -INFINITY;
	}
	/* The testbed runs. */
	for (unsigned s = 0; s < ns; s++) {
		struct sim_params p = o->p;

		p.seed = o->seeds[s];
		if (sim_workload_gen(&p, &wls[s])) {
			fprintf(stderr, "esa_jct: bad workload parameters\n");
			return 2;
		}
		for (unsigned r = 0; r < nr; r++) {
			double avg[NPOL] = { 0 };

			for (int pol = 0; pol < NPOL; pol++) {
				struct runf *rf = RUN(pol, s, r);
				struct agg *a = &tb[pol];
				double *v;

				snprintf(path, sizeof(path), "%s/run-%s-s%u-r%u.txt", o->dir,
					 sim_policy_name(pol), o->seeds[s], r + 1);
				if (read_run(path, rf, nj)) {
					fprintf(stderr, "esa_jct report: %s missing\n", path);
					missing++;
					continue;
				}
				if (rf->njobs != nj) {
					fprintf(stderr, "esa_jct report: %s has %u jobs, not %u\n",
						path, rf->njobs, nj);
					mismatch++;
				}
				/* The run must have run this seed's workload. */
				for (unsigned i = 0; i < nj; i++) {
					const struct sim_job_spec *w = &wls[s].job[i];

					if (rf->job[i].chunks != w->chunks ||
					    rf->job[i].workers != w->nworkers ||
					    rf->job[i].iters != w->iters ||
					    fabs(rf->job[i].arrival - (double)w->arrival / T_S) > 1e-5) {
						fprintf(stderr, "esa_jct report: %s: job %u is not "
							"the workload's\n", path, i);
						mismatch++;
						break;
					}
				}
				if (!rf->ok)
					a->failed++, failed_runs++;
				a->runs++;
				v = malloc(nj * sizeof(double));
				if (!v)
					return 2;
				for (unsigned i = 0; i < nj; i++) {
					v[i] = rf->job[i].jct;
					TBJ(pol, s, i) += v[i] / nr;
					a->bad += rf->job[i].bad;
					a->resend += (double)rf->job[i].resends;
				}
				agg_add_jcts(a, v, nj);
				avg[pol] = mean_of(v, nj);
				free(v);
				a->run_min = fmin(a->run_min, avg[pol]);
				a->run_max = fmax(a->run_max, avg[pol]);
				a->idle += rf->cpu_idle;
				a->others += rf->cpu_others;
				a->others_max = fmax(a->others_max, rf->cpu_others);
				a->u_agg += rf->u_agg;
				a->u_held += rf->u_held;
				a->u_occ += rf->u_occ;
				a->ps_share += data_rx(rf->tot) ?
					(double)fallback(rf->tot) / data_rx(rf->tot) : 0;
				a->preempt += rf->tot[ESA_C_PREEMPT_CAUSED];
				a->collide += rf->tot[ESA_C_COLLISION];
				a->tomb += rf->tot[ESA_C_TOMB_FWD];
				a->held += rf->tot[ESA_C_HELD];
				a->aged += rf->tot[ESA_C_AGED];
			}
			if (avg[ESA_POLICY_ESA] > 0 && avg[ESA_POLICY_ATP] > 0) {
				sp_atp_min = fmin(sp_atp_min, avg[ESA_POLICY_ATP] / avg[ESA_POLICY_ESA]);
				sp_atp_max = fmax(sp_atp_max, avg[ESA_POLICY_ATP] / avg[ESA_POLICY_ESA]);
			}
			if (avg[ESA_POLICY_ESA] > 0 && avg[ESA_POLICY_SWITCHML] > 0) {
				sp_sw_min = fmin(sp_sw_min, avg[ESA_POLICY_SWITCHML] / avg[ESA_POLICY_ESA]);
				sp_sw_max = fmax(sp_sw_max, avg[ESA_POLICY_SWITCHML] / avg[ESA_POLICY_ESA]);
			}
		}
	}
	for (int pol = 0; pol < NPOL; pol++) {
		struct agg *a = &tb[pol];
		double n = a->runs ? a->runs : 1;

		agg_finish(a);
		a->u_agg /= n, a->u_held /= n, a->u_occ /= n, a->ps_share /= n;
		a->preempt /= n, a->collide /= n, a->tomb /= n, a->resend /= n;
		a->held /= n, a->aged /= n;
		a->idle /= n, a->others /= n;
	}

	/* The simulator on the same workloads. */
	for (unsigned s = 0; s < ns; s++) {
		struct sim_params p = o->p;

		p.seed = o->seeds[s];
		for (int pol = 0; pol < NPOL; pol++) {
			struct agg *a = &sm[pol];
			struct sim_result res;
			int rc = sim_run(&p, &wls[s], pol, &res);

			if (rc < 0) {
				fprintf(stderr, "esa_jct report: the simulator failed\n");
				return 2;
			}
			if (rc > 0)
				a->failed++;
			a->runs++;
			agg_add_jcts(a, res.jct, nj);
			for (unsigned i = 0; i < nj; i++)
				SMJ(pol, s, i) = res.jct[i];
			a->run_min = fmin(a->run_min, res.avg_jct);
			a->run_max = fmax(a->run_max, res.avg_jct);
			a->u_agg += res.util_agg / ns;
			a->u_held += res.util_held / ns;
			a->u_occ += res.util_occ / ns;
			a->ps_share += (res.data_rx ? (double)res.sw_fallback / res.data_rx : 0) / ns;
			a->preempt += (double)res.c[ESA_C_PREEMPT_CAUSED] / ns;
			a->collide += (double)res.c[ESA_C_COLLISION] / ns;
			a->tomb += (double)res.c[ESA_C_TOMB_FWD] / ns;
			a->resend += (double)res.resends / ns;
			a->held += (double)res.c[ESA_C_HELD] / ns;
			a->aged += (double)res.c[ESA_C_AGED] / ns;
			sim_result_free(&res);
		}
	}
	for (int pol = 0; pol < NPOL; pol++)
		agg_finish(&sm[pol]);

	/* ---------------------------------------------------------- */
	printf("esa_jct: %u jobs per run, seeds", nj);
	for (unsigned s = 0; s < ns; s++)
		printf("%s%u", s ? "," : " ", o->seeds[s]);
	printf(", %u repetition%s each, pool %u x %u values, window %u, prio %s, home %u\n",
	       nr, nr > 1 ? "s" : "", o->p.pool, o->p.nvals, o->p.window,
	       sim_prio_name(o->p.prio), o->p.home);
	jct_print_scale(stdout, &o->p);
	{
		unsigned nreg, regsize;

		jct_regions(&o->p, &wls[0], &nreg, &regsize);
		printf("switchml: %u regions of %u slots (max(ceil(load), pool / window)); "
		       "offered load %.2f jobs at %.3f jobs/s\n", nreg, regsize,
		       wls[0].rate * wls[0].mean_ideal_s, wls[0].rate);
	}
	printf("same workload in the simulator: esa_sim ");
	jct_sim_args(stdout, o);
	printf(" --seed S (S in the seeds above)\n\n");

	printf("testbed (%u runs per policy; JCTs pooled over runs; counters per run):\n",
	       ns * nr);
	print_table("policy", tb);
	printf("speedup of esa per run: vs atp %.3f..%.3f, vs switchml %.3f..%.3f\n",
	       sp_atp_min, sp_atp_max, sp_sw_min, sp_sw_max);
	printf("machine during the runs (esa, atp, switchml): idle %.0f%%, %.0f%%, %.0f%%; "
	       "other processes %.0f%%, %.0f%%, %.0f%% (at most %.0f%%)\n",
	       100 * tb[0].idle, 100 * tb[1].idle, 100 * tb[2].idle, 100 * tb[0].others,
	       100 * tb[1].others, 100 * tb[2].others,
	       100 * fmax(tb[0].others_max, fmax(tb[1].others_max, tb[2].others_max)));
	printf("wrong elements in any allreduce: %llu; failed runs: %d\n\n",
	       (unsigned long long)(tb[0].bad + tb[1].bad + tb[2].bad), failed_runs);

	printf("simulator, same workloads (%u seed%s):\n", ns, ns > 1 ? "s" : "");
	print_table("policy", sm);
	printf("\n");

	/* Per job, side by side: testbed (mean over repetitions) and sim. */
	printf("per job, testbed vs simulator (JCT ms; testbed: mean of %u repetition%s):\n",
	       nr, nr > 1 ? "s" : "");
	printf("%4s %4s %-9s %2s %5s %5s %8s | %8s %8s %8s | %8s %8s %8s\n", "seed", "job",
	       "model", "w", "iters", "chnks", "arr_ms", "tb_esa", "tb_atp", "tb_swml",
	       "sim_esa", "sim_atp", "sim_swml");
	double *dev = calloc((size_t)NPOL * ns * nj, sizeof(double));
	unsigned ndev[NPOL] = { 0 };

	for (unsigned s = 0; s < ns; s++) {
		for (unsigned i = 0; i < nj; i++) {
			const struct sim_job_spec *w = &wls[s].job[i];

			printf("%4u %4u %-9s %2u %5u %5u %8.1f |", o->seeds[s], i,
			       sim_models[w->model].name, w->nworkers, w->iters, w->chunks,
			       (double)w->arrival / T_MS);
			for (int pol = 0; pol < NPOL; pol++)
				printf(" %8.1f", TBJ(pol, s, i) * 1e3);
			printf(" |");
			for (int pol = 0; pol < NPOL; pol++) {
				printf(" %8.1f", SMJ(pol, s, i) * 1e3);
				if (dev && TBJ(pol, s, i) > 0 && SMJ(pol, s, i) > 0)
					dev[(size_t)pol * ns * nj + ndev[pol]++] =
						lr(SMJ(pol, s, i), TBJ(pol, s, i));
			}
			printf("\n");
		}
	}
	printf("\n");

	/* Validation. */
	printf("validation (simulator against testbed: |log(sim/testbed)| of each policy's "
	       "average JCT, and the median over jobs of each job's, within the policy's "
	       "tolerance):\n");
	for (int pol = 0; pol < NPOL; pol++) {
		double d = lr(sm[pol].avg, tb[pol].avg), med = NAN, tol = o->tol[pol];
		bool ok;

		if (dev && ndev[pol]) {
			qsort(dev + (size_t)pol * ns * nj, ndev[pol], sizeof(double), cmp_d);
			med = sim_quantile(dev + (size_t)pol * ns * nj, ndev[pol], 0.5);
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
	       val_ok ? "ok" : "FAILED", o->tol[0], o->tol[1], o->tol[2]);
	free(dev);

	/* Plot data. */
	snprintf(path, sizeof(path), "%s/jct_cdf.dat", o->dir);
	if ((f = fopen(path, "w"))) {
		for (int pol = 0; pol < NPOL; pol++)
			write_cdf(f, sim_policy_name(pol), &tb[pol]);
		for (int pol = 0; pol < NPOL; pol++)
			write_cdf(f, sim_policy_name(pol), &sm[pol]);
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/jobs.dat", o->dir);
	if ((f = fopen(path, "w"))) {
		for (int pol = 0; pol < NPOL; pol++) {
			fprintf(f, "# %s: testbed_ms sim_ms (one line per job and seed)\n",
				sim_policy_name(pol));
			for (unsigned s = 0; s < ns; s++)
				for (unsigned i = 0; i < nj; i++)
					fprintf(f, "%.3f %.3f\n", TBJ(pol, s, i) * 1e3,
						SMJ(pol, s, i) * 1e3);
			fprintf(f, "\n\n");
		}
		fclose(f);
	}
	/* Utilisation over time: the first seed's first repetition, in bins
	 * of 1/100 of the longest makespan. */
	snprintf(path, sizeof(path), "%s/util_ts.dat", o->dir);
	if ((f = fopen(path, "w"))) {
		double span = 0, bin;

		for (int pol = 0; pol < NPOL; pol++)
			if (RUN(pol, 0, 0)->present)
				span = fmax(span, RUN(pol, 0, 0)->makespan);
		bin = span > 0 ? span / 100 : 0.01;
		for (int pol = 0; pol < NPOL; pol++) {
			struct runf *rf = RUN(pol, 0, 0);
			size_t k = 0;

			fprintf(f, "# %s: t_s busy held occ (share of pool), seed %u rep 1\n",
				sim_policy_name(pol), o->seeds[0]);
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
					fprintf(f, "%.4f %.4f %.4f %.4f\n", t + bin / 2,
						b / n / o->p.pool, h / n / o->p.pool,
						oc / n / o->p.pool);
			}
			fprintf(f, "\n\n");
		}
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/meta.gp", o->dir);
	if ((f = fopen(path, "w"))) {
		fprintf(f, "base = \"pool %u, window %u, %u jobs, load %g, seeds %u%s\"\n",
			o->p.pool, o->p.window, nj, o->p.load, ns, o->p.home ? ", homes" : "");
		fclose(f);
	}

	printf("jct: esa=%.6f atp=%.6f switchml=%.6f speedup_vs_atp=%.3f "
	       "speedup_vs_switchml=%.3f\n", tb[ESA_POLICY_ESA].avg, tb[ESA_POLICY_ATP].avg,
	       tb[ESA_POLICY_SWITCHML].avg, tb[ESA_POLICY_ATP].avg / tb[ESA_POLICY_ESA].avg,
	       tb[ESA_POLICY_SWITCHML].avg / tb[ESA_POLICY_ESA].avg);

	for (size_t k = 0; k < (size_t)NPOL * ns * nr; k++)
		run_free(&runs[k]);
	for (unsigned s = 0; s < ns; s++)
		sim_workload_free(&wls[s]);
	for (int pol = 0; pol < NPOL; pol++) {
		free(tb[pol].jct);
		free(sm[pol].jct);
	}
	free(runs);
	free(tbjob);
	free(smjob);
	free(wls);
	return missing || mismatch || failed_runs ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* Calibration: the testbed preset's numbers from microbenchmarks      */
/* ------------------------------------------------------------------ */

static double median(double *v, unsigned n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof(double), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The runs of one microbenchmark: DIR/NAME/run-POLICY-sSEED-r1.txt. */
static unsigned calib_runs(const struct jct_opts *o, const char *name, const char *pol,
			   unsigned njobs, struct runf *rf)
{
	char path[4096];
	unsigned n = 0;

	for (unsigned s = 0; s < o->nseeds; s++) {
		snprintf(path, sizeof(path), "%s/%s/run-%s-s%u-r1.txt", o->dir, name, pol,
			 o->seeds[s]);
		if (read_run(path, &rf[n], njobs) || !rf[n].ok) {
			fprintf(stderr, "esa_jct calib: %s missing or failed\n", path);
			run_free(&rf[n]);
			continue;
		}
		n++;
	}
	return n;
}

/* esa-ps's total count of one counter, from its JSON (-j) output. */
static double ps_json_total(const char *path, const char *name)
{
	char buf[8192], key[64], *p;
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f)
		return NAN;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	snprintf(key, sizeof(key), "\"%s\":", name);
	p = strstr(buf, "\"total\":");
	p = p ? strstr(p, key) : NULL;
	return p ? strtod(p + strlen(key), NULL) : NAN;
}

/*
 * The simulator on a microbenchmark's own workload (its run file's first
 * line holds the options) with the derived parameters: the model's view of
 * what was measured.  Returns the simulated makespan of seed, or NAN.
 */
static double calib_model(const struct jct_opts *o, const char *name, const char *pol,
			  const struct sim_params *cal, unsigned *chunks, unsigned *workers)
{
	char path[4096], line[4096], *argv[128], *save = NULL, *t;
	struct jct_opts mo;
	struct sim_workload w;
	struct sim_result r;
	double span = NAN, first = INFINITY, last = 0;
	int argc = 0, policy = sim_policy_parse(pol);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/run-%s-s%u-r1.txt", o->dir, name, pol,
		 o->seeds[0]);
	f = fopen(path, "r");
	if (!f || !fgets(line, sizeof(line), f)) {
		if (f)
			fclose(f);
		return NAN;
	}
	fclose(f);
	argv[argc++] = "esa_jct";
	t = strstr(line, "--preset");
	for (t = t ? strtok_r(t, " \n", &save) : NULL; t && argc < 127;
	     t = strtok_r(NULL, " \n", &save))
		argv[argc++] = t;
	argv[argc] = NULL;
	if (jct_parse(&mo, argc, argv, "calib") < 0)
		return NAN;
	mo.p.worker_mpps = cal->worker_mpps;
	mo.p.switch_mpps = cal->switch_mpps;
	mo.p.ps_mpps = cal->ps_mpps;
	mo.p.ps_copy_cost = cal->ps_copy_cost;
	mo.p.prop_us = cal->prop_us;
	mo.p.link_gbps = cal->link_gbps;
	mo.p.ps_link_gbps = cal->ps_link_gbps;
	mo.p.ps_hosts = cal->ps_hosts;
	if (sim_workload_gen(&mo.p, &w))
		return NAN;
	if (sim_run(&mo.p, &w, policy, &r) == 0) {
		for (unsigned i = 0; i < w.njobs; i++) {
			first = fmin(first, (double)w.job[i].arrival / T_S);
			last = fmax(last, (double)w.job[i].arrival / T_S + r.jct[i]);
		}
		span = last - first;
		*chunks = 0;
		for (unsigned i = 0; i < w.njobs; i++)
			*chunks += w.job[i].chunks * w.job[i].iters;
		*workers = w.job[0].nworkers;
	}
	sim_result_free(&r);
	sim_workload_free(&w);
	return span;
}

int jct_calib(struct jct_opts *o)
{
	struct runf rf[64];
	double v[64], w[64], x[64], idle[64], oth[64], sv[192], worst = 0;
	double rtt, chunk_us, wk, sw_w4, sw_conc, sw_ps, sw, ps_rate, ps_us, copy_us;
	struct sim_params cal;
	unsigned n, nsw = 0, ch, nw;
	char path[4096];
	int bad = 0;

	if (!o->dir) {
		fprintf(stderr, "esa_jct calib: --dir is needed\n");
		return 2;
	}
	printf("calibration: medians over the runs of each microbenchmark (seeds");
	for (unsigned s = 0; s < o->nseeds; s++)
		printf("%s%u", s ? "," : " ", o->seeds[s]);
	printf("); one VGG-16-sized gradient per iteration, no compute\n");

	/* rtt: window 1, two workers: libesa's mean round trip, and the time
	 * per chunk (one chunk in flight: a round trip plus the hosts' work) */
	n = calib_runs(o, "rtt", "esa", 1, rf);
	for (unsigned k = 0; k < n; k++) {
		v[k] = rf[k].job[0].rtt_us;
		w[k] = rf[k].job[0].comm / (rf[k].job[0].chunks * rf[k].job[0].iters) * 1e6;
		ch = rf[k].job[0].chunks;
		run_free(&rf[k]);
	}
	if (n)
		printf("  (%u chunks of %u values an iteration)\n", ch, o->p.nvals);
	rtt = median(v, n);
	chunk_us = median(w, n);
	bad |= !n;
	printf("  rtt   1 job of 2 workers, window 1: round trip %.1f us (libesa's mean), "
	       "%.1f us per chunk\n", rtt, chunk_us);

	/* w2: a job of two workers alone: each worker's DATA rate */
	n = calib_runs(o, "w2", "esa", 1, rf);
	for (unsigned k = 0; k < n; k++) {
		v[k] = rf[k].job[0].tx / rf[k].job[0].comm / rf[k].job[0].workers;
		idle[k] = rf[k].cpu_idle;
		oth[k] = rf[k].cpu_others;
		worst = fmax(worst, oth[k]);
		run_free(&rf[k]);
	}
	wk = median(v, n);
	bad |= !n;
	printf("  w2    1 job of 2 workers: %.1fk DATA packets/s per worker (machine idle "
	       "%.0f%%, others %.0f%%)\n", wk / 1e3, 100 * median(idle, n), 100 * median(oth, n));

	/* w4: a job of four workers alone: the switch's packets in per second
	 * (DATA only here); esa-ps's CPU per result copy (its only work) */
	n = calib_runs(o, "w4", "esa", 1, rf);
	for (unsigned k = 0; k < n; k++) {
		uint64_t copies = rf[k].tot[ESA_C_PS_COPY_TX];

		v[k] = rf[k].tot[ESA_C_RX] / rf[k].job[0].comm;
		sv[nsw++] = v[k];
		w[k] = copies ? rf[k].cpu_ps / copies * 1e6 : NAN;
		idle[k] = rf[k].cpu_idle;
		oth[k] = rf[k].cpu_others;
		worst = fmax(worst, oth[k]);
		run_free(&rf[k]);
	}
	sw_w4 = median(v, n);
	copy_us = median(w, n);
	bad |= !n;
	printf("  w4    1 job of 4 workers: %.1fk packets/s into the switch (all DATA); "
	       "esa-ps %.2f us CPU per result copy (idle %.0f%%, others %.0f%%)\n", sw_w4 / 1e3, copy_us,
	       100 * median(idle, n), 100 * median(oth, n));

	/* conc: four jobs of two workers at once, each in its own region */
	n = calib_runs(o, "conc", "switchml", 4, rf);
	for (unsigned k = 0; k < n; k++) {
		double first = INFINITY, last = 0;

		for (unsigned i = 0; i < 4; i++) {
			first = fmin(first, rf[k].job[i].arrival);
			last = fmax(last, rf[k].job[i].arrival + rf[k].job[i].jct);
		}
		v[k] = rf[k].tot[ESA_C_RX] / (last - first);
		sv[nsw++] = v[k];
		idle[k] = rf[k].cpu_idle;
		oth[k] = rf[k].cpu_others;
		worst = fmax(worst, oth[k]);
		run_free(&rf[k]);
	}
	sw_conc = median(v, n);
	bad |= !n;
	printf("  conc  4 jobs of 2 workers at once: %.1fk packets/s into the switch (all "
	       "DATA; idle %.0f%%, others %.0f%%)\n", sw_conc / 1e3, 100 * median(idle, n),
	       100 * median(oth, n));

	/* ps: four workers, every packet through the PS (no switch memory):
	 * the switch takes the DATA and forwards the PS's results; esa-ps's
	 * CPU per packet it merges */
	n = calib_runs(o, "ps", "switchml", 1, rf);
	for (unsigned k = 0; k < n; k++) {
		double res;

		snprintf(path, sizeof(path), "%s/ps/ps-switchml-s%u-r1.json", o->dir, rf[k].seed);
		res = ps_json_total(path, "result_tx");
		v[k] = rf[k].job[0].tx / rf[k].job[0].comm;
		x[k] = (rf[k].tot[ESA_C_RX] + res) / rf[k].job[0].comm;
		sv[nsw++] = x[k];
		w[k] = rf[k].cpu_ps / rf[k].job[0].tx * 1e6;
		idle[k] = rf[k].cpu_idle;
		oth[k] = rf[k].cpu_others;
		worst = fmax(worst, oth[k]);
		run_free(&rf[k]);
	}
	ps_rate = median(v, n);
	sw_ps = median(x, n);
	ps_us = median(w, n);
	bad |= !n;
	printf("  ps    1 job of 4 workers, no switch memory: %.1fk DATA packets/s through "
	       "the PS, %.1fk packets/s into the switch (DATA and the PS's results); esa-ps "
	       "%.2f us CPU per packet (idle %.0f%%, others %.0f%%)\n", ps_rate / 1e3, sw_ps / 1e3, ps_us,
	       100 * median(idle, n), 100 * median(oth, n));
	sw = median(sv, nsw);

	memset(&cal, 0, sizeof(cal));
	cal.worker_mpps = wk / 1e6;
	cal.switch_mpps = sw / 1e6;
	cal.ps_mpps = 1 / ps_us;
	cal.ps_copy_cost = copy_us / ps_us;
	cal.prop_us = rtt / 2;
	cal.link_gbps = cal.ps_link_gbps = 10;
	cal.ps_hosts = 1;
	printf("testbed preset (user/sim/workload.c):\n"
	       "  worker_mpps  = w2's rate per worker                      = %.4f\n"
	       "  switch_mpps  = median of w4, conc, ps: packets/s in      = %.4f\n"
	       "  ps_mpps      = 1 / esa-ps CPU per packet (ps)            = %.4f\n"
	       "  ps_copy_cost = esa-ps CPU per copy (w4) / per packet     = %.2f\n"
	       "  prop_us      = rtt / 2                                   = %.1f\n"
	       "  link_gbps, ps_link_gbps: 10 (no line rate on veth; never binds)\n"
	       "  ps_hosts     = 1 (one esa-ps for every job)\n",
	       cal.worker_mpps, cal.switch_mpps, cal.ps_mpps, cal.ps_copy_cost, cal.prop_us);

	/* What the model makes of the microbenchmarks with these numbers. */
	printf("the model on the microbenchmarks (seed %u), measured -> simulated:\n",
	       o->seeds[0]);
	{
		double span;

		span = calib_model(o, "rtt", "esa", &cal, &ch, &nw);
		printf("  rtt   %.1f -> %.1f us per chunk\n", chunk_us, span / ch * 1e6);
		span = calib_model(o, "w2", "esa", &cal, &ch, &nw);
		printf("  w2    %.1fk -> %.1fk DATA packets/s per worker\n", wk / 1e3,
		       ch / span / 1e3);
		span = calib_model(o, "w4", "esa", &cal, &ch, &nw);
		printf("  w4    %.1fk -> %.1fk DATA packets/s\n", sw_w4 / 1e3, ch * nw / span / 1e3);
		span = calib_model(o, "conc", "switchml", &cal, &ch, &nw);
		printf("  conc  %.1fk -> %.1fk DATA packets/s\n", sw_conc / 1e3,
		       ch * nw / span / 1e3);
		printf("  ps    %.1fk -> %.1fk DATA packets/s through the PS (min(switch / 2, "
		       "PS, 4 x worker); esa_sim cannot run a job without memory)\n",
		       ps_rate / 1e3, fmin(fmin(sw / 2, 1e6 / ps_us), 4 * wk) / 1e3);
	}
	if (worst > 0.1)
		printf("warning: other processes used up to %.0f%% of the machine during "
		       "these runs: calibrate on a quiet machine\n", 100 * worst);
	printf("calib: --worker-mpps %.4f --switch-mpps %.4f --ps-mpps %.4f "
	       "--ps-copy-cost %.2f --prop-us %.1f --link-gbps 10 --ps-link-gbps 10 "
	       "--ps-hosts 1\n", cal.worker_mpps, cal.switch_mpps, cal.ps_mpps,
	       cal.ps_copy_cost, cal.prop_us);
	return bad ? 1 : 0;
}
