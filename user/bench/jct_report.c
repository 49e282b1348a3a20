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

/* "run seed=... ok=1 ...": what ran, and whether every sum was right. */
static void parse_run_line(const char *line, struct runf *r)
{
	const char *s;

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
}

/* "cpu ...": the machine's idle share and who else used it. */
static void parse_cpu_line(const char *line, struct runf *r)
{
	const char *q;

	if ((q = strstr(line, " idle=")))
		r->cpu_idle = strtod(q + 6, NULL);
	if ((q = strstr(line, " self_s=")))
		r->cpu_self = strtod(q + 8, NULL);
	if ((q = strstr(line, " ps_s=")))
		r->cpu_ps = strtod(q + 6, NULL);
	if ((q = strstr(line, " others=")))
		r->cpu_others = strtod(q + 8, NULL);
}

/* "job ...": one job's line of write_run(); a job that failed has no JCT. */
static void parse_job_line(const char *line, struct runf *r, unsigned njobs)
{
	struct rjob j = { 0 };
	unsigned prio, win;
	double cms, comm;
	unsigned long long tx, rs, rr, rp, bad;

	if (sscanf(line, "job %u %lf %15s %u %u %u %lf %u %u %lf %d %lf %lf "
		   "%llu %llu %llu %llu %lf %llu", &j.id, &j.arrival, j.model,
		   &j.workers, &j.iters, &j.chunks, &cms, &prio, &win, &j.jct,
		   &j.ok, &j.wait_region, &comm, &tx, &rs, &rr, &rp, &j.rtt_us,
		   &bad) != 19 || j.id >= njobs)
		return;
	j.comm = comm;
	j.tx = tx;
	j.resends = rs;
	j.rx_ps = rp;
	j.bad = bad;
	if (!j.ok)
		j.jct = NAN;
	r->job[j.id] = j;
}

/* "# ctr ROW name...": which counter each column of the ctr lines is (a
 * run file of an older build may have fewer or others). */
static int parse_ctr_cols(char *line, int *cols)
{
	char *save = NULL, *t = strtok_r(line + 9, " \n", &save);
	int ncols;

	for (ncols = 0; t && ncols < 128; t = strtok_r(NULL, " \n", &save))
		cols[ncols++] = counter_index(t);
	return ncols;
}

static void parse_ctr_total(const char *line, struct runf *r, const int *cols, int ncols)
{
	const char *p = line + 9;
	char *end;

	for (int k = 0; k < ncols; k++) {
		unsigned long long v = strtoull(p, &end, 10);

		if (end == p)
			break;
		if (cols[k] >= 0)
			r->tot[cols[k]] = v;
		p = end;
	}
}

/* "ts t busy held occ": one sample of the slots, appended. */
static int parse_ts_line(const char *line, struct runf *r, size_t *capts)
{
	double t;
	unsigned b, h, o;

	if (sscanf(line, "ts %lf %u %u %u", &t, &b, &h, &o) != 4)
		return 0;
	if (r->nts == *capts) {
		*capts = *capts ? 2 * *capts : 4096;
		r->ts_t = realloc(r->ts_t, *capts * sizeof(double));
		r->ts_b = realloc(r->ts_b, *capts * sizeof(unsigned));
		r->ts_h = realloc(r->ts_h, *capts * sizeof(unsigned));
		r->ts_o = realloc(r->ts_o, *capts * sizeof(unsigned));
		if (!r->ts_t || !r->ts_b || !r->ts_h || !r->ts_o)
			return -ENOMEM;
	}
	r->ts_t[r->nts] = t;
	r->ts_b[r->nts] = b;
	r->ts_h[r->nts] = h;
	r->ts_o[r->nts] = o;
	r->nts++;
	return 0;
}

static int read_run(const char *path, struct runf *r, unsigned njobs)
{
	char line[4096];
	int cols[128], ncols = 0, rc = 0;
	size_t capts = 0;
	FILE *f = fopen(path, "r");

	memset(r, 0, sizeof(*r));
	if (!f)
		return -errno;
	r->job = calloc(njobs, sizeof(*r->job));
	if (!r->job) {
		rc = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < njobs; i++)
		r->job[i].jct = NAN;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "run ", 4))
			parse_run_line(line, r);
		else if (!strncmp(line, "cpu ", 4))
			parse_cpu_line(line, r);
		else if (!strncmp(line, "util ", 5))
			sscanf(line, "util u_agg=%lf u_held=%lf u_occ=%lf", &r->u_agg,
			       &r->u_held, &r->u_occ);
		else if (!strncmp(line, "job ", 4))
			parse_job_line(line, r, njobs);
		else if (!strncmp(line, "# ctr ROW", 9))
			ncols = parse_ctr_cols(line, cols);
		else if (!strncmp(line, "ctr total", 9))
			parse_ctr_total(line, r, cols, ncols);
		else if (!strncmp(line, "ts ", 3) && (rc = parse_ts_line(line, r, &capts)))
			goto out;
	}
	r->present = 1;
out:
	fclose(f);
	return rc;
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
	       c[ESA_C_RESEND_FLUSH] + c[ESA_C_NOSLOT] + c[ESA_C_RESEND_HELD];
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

/*
 * One report: the workload of every seed, every run file read, and the
 * testbed's and the simulator's aggregates.  Per policy, seed and job, the
 * JCT of the testbed (the mean over repetitions) and of the simulator.
 */
struct report {
	const struct jct_opts *o;
	unsigned ns, nr, nj;
	struct agg tb[NPOL], sm[NPOL];
	struct runf *runs;
	double	*tbjob, *smjob;
	struct sim_workload *wls;
	double	sp_atp_min, sp_atp_max, sp_sw_min, sp_sw_max;
	int	failed_runs, missing, mismatch;
};

static struct runf *run_of(struct report *R, int pol, unsigned s, unsigned r)
{
	return &R->runs[((size_t)pol * R->ns + s) * R->nr + r];
}

static double *tb_job(struct report *R, int pol, unsigned s, unsigned i)
{
	return &R->tbjob[((size_t)pol * R->ns + s) * R->nj + i];
}

static double *sm_job(struct report *R, int pol, unsigned s, unsigned i)
{
	return &R->smjob[((size_t)pol * R->ns + s) * R->nj + i];
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
			run_free(&R->runs[k]);
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
	a->ps_share += data_rx(rf->tot) ? (double)fallback(rf->tot) / data_rx(rf->tot) : 0;
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
		if (read_run(path, rf, R->nj)) {
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
	jct_regions(&o->p, &R->wls[0], &nreg, &regsize);
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
				uint64_t rx = data_rx(rf->tot), rs = 0, held;
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
				       rx ? (double)fallback(rf->tot) / rx : 0,
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
			qsort(dev + pol * per_pol, ndev[pol], sizeof(double), cmp_d);
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

	write_cdfs(&R);
	write_jobs(&R);
	write_util(&R);
	write_meta(&R);

	printf("jct: esa=%.6f atp=%.6f switchml=%.6f speedup_vs_atp=%.3f "
	       "speedup_vs_switchml=%.3f\n", tb[ESA_POLICY_ESA].avg, tb[ESA_POLICY_ATP].avg,
	       tb[ESA_POLICY_SWITCHML].avg, tb[ESA_POLICY_ATP].avg / tb[ESA_POLICY_ESA].avg,
	       tb[ESA_POLICY_SWITCHML].avg / tb[ESA_POLICY_ESA].avg);
	rc = R.missing || R.mismatch || R.failed_runs ? 1 : 0;
out:
	report_free(&R);
	return rc;
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

/* What the microbenchmarks measured (medians over their runs), whether any
 * had no run, and the switch's packets in per second of each run of w4,
 * conc and ps (their median is switch_mpps). */
struct calib {
	double	rtt, chunk_us;		/* rtt */
	double	wk;			/* w2: DATA packets/s per worker */
	double	sw_w4, copy_us;		/* w4 */
	double	sw_conc;		/* conc */
	double	ps_rate, sw_ps, ps_us;	/* ps */
	double	sw, sv[192];
	unsigned nsw, ch;
	double	worst;			/* the largest share of other processes */
	int	bad;
};

/* One run's share of the machine: idle and taken by other processes. */
static void calib_cpu(struct calib *C, const struct runf *rf, double *idle, double *oth)
{
	*idle = rf->cpu_idle;
	*oth = rf->cpu_others;
	C->worst = fmax(C->worst, *oth);
}

/* rtt: window 1, two workers: libesa's mean round trip, and the time per
 * chunk (one chunk in flight: a round trip plus the hosts' work) */
static void calib_rtt(const struct jct_opts *o, struct calib *C)
{
	struct runf rf[64];
	double v[64], w[64];
	unsigned n = calib_runs(o, "rtt", "esa", 1, rf);

	for (unsigned k = 0; k < n; k++) {
		v[k] = rf[k].job[0].rtt_us;
		w[k] = rf[k].job[0].comm / (rf[k].job[0].chunks * rf[k].job[0].iters) * 1e6;
		C->ch = rf[k].job[0].chunks;
		run_free(&rf[k]);
	}
	if (n)
		printf("  (%u chunks of %u values an iteration)\n", C->ch, o->p.nvals);
	C->rtt = median(v, n);
	C->chunk_us = median(w, n);
	C->bad |= !n;
	printf("  rtt   1 job of 2 workers, window 1: round trip %.1f us (libesa's mean), "
	       "%.1f us per chunk\n", C->rtt, C->chunk_us);
}

/* w2: a job of two workers alone: each worker's DATA rate */
static void calib_w2(const struct jct_opts *o, struct calib *C)
{
	struct runf rf[64];
	double v[64], idle[64], oth[64];
	unsigned n = calib_runs(o, "w2", "esa", 1, rf);

	for (unsigned k = 0; k < n; k++) {
		v[k] = rf[k].job[0].tx / rf[k].job[0].comm / rf[k].job[0].workers;
		calib_cpu(C, &rf[k], &idle[k], &oth[k]);
		run_free(&rf[k]);
	}
	C->wk = median(v, n);
	C->bad |= !n;
	printf("  w2    1 job of 2 workers: %.1fk DATA packets/s per worker (machine idle "
	       "%.0f%%, others %.0f%%)\n", C->wk / 1e3, 100 * median(idle, n),
	       100 * median(oth, n));
}

/* w4: a job of four workers alone: the switch's packets in per second
 * (DATA only here); esa-ps's CPU per result copy (its only work) */
static void calib_w4(const struct jct_opts *o, struct calib *C)
{
	struct runf rf[64];
	double v[64], w[64], idle[64], oth[64];
	unsigned n = calib_runs(o, "w4", "esa", 1, rf);

	for (unsigned k = 0; k < n; k++) {
		uint64_t copies = rf[k].tot[ESA_C_PS_COPY_TX];

		v[k] = rf[k].tot[ESA_C_RX] / rf[k].job[0].comm;
		C->sv[C->nsw++] = v[k];
		w[k] = copies ? rf[k].cpu_ps / copies * 1e6 : NAN;
		calib_cpu(C, &rf[k], &idle[k], &oth[k]);
		run_free(&rf[k]);
	}
	C->sw_w4 = median(v, n);
	C->copy_us = median(w, n);
	C->bad |= !n;
	printf("  w4    1 job of 4 workers: %.1fk packets/s into the switch (all DATA); "
	       "esa-ps %.2f us CPU per result copy (idle %.0f%%, others %.0f%%)\n",
	       C->sw_w4 / 1e3, C->copy_us, 100 * median(idle, n), 100 * median(oth, n));
}

/* conc: four jobs of two workers at once, each in its own region */
static void calib_conc(const struct jct_opts *o, struct calib *C)
{
	struct runf rf[64];
	double v[64], idle[64], oth[64];
	unsigned n = calib_runs(o, "conc", "switchml", 4, rf);

	for (unsigned k = 0; k < n; k++) {
		double first = INFINITY, last = 0;

		for (unsigned i = 0; i < 4; i++) {
			first = fmin(first, rf[k].job[i].arrival);
			last = fmax(last, rf[k].job[i].arrival + rf[k].job[i].jct);
		}
		v[k] = rf[k].tot[ESA_C_RX] / (last - first);
		C->sv[C->nsw++] = v[k];
		calib_cpu(C, &rf[k], &idle[k], &oth[k]);
		run_free(&rf[k]);
	}
	C->sw_conc = median(v, n);
	C->bad |= !n;
	printf("  conc  4 jobs of 2 workers at once: %.1fk packets/s into the switch (all "
	       "DATA; idle %.0f%%, others %.0f%%)\n", C->sw_conc / 1e3, 100 * median(idle, n),
	       100 * median(oth, n));
}

/* ps: four workers, every packet through the PS (no switch memory): the
 * switch takes the DATA and forwards the PS's results; esa-ps's CPU per
 * packet it merges */
static void calib_ps(const struct jct_opts *o, struct calib *C)
{
	struct runf rf[64];
	double v[64], w[64], x[64], idle[64], oth[64];
	char path[4096];
	unsigned n = calib_runs(o, "ps", "switchml", 1, rf);

	for (unsigned k = 0; k < n; k++) {
		double res;

		snprintf(path, sizeof(path), "%s/ps/ps-switchml-s%u-r1.json", o->dir, rf[k].seed);
		res = ps_json_total(path, "result_tx");
		v[k] = rf[k].job[0].tx / rf[k].job[0].comm;
		x[k] = (rf[k].tot[ESA_C_RX] + res) / rf[k].job[0].comm;
		C->sv[C->nsw++] = x[k];
		w[k] = rf[k].cpu_ps / rf[k].job[0].tx * 1e6;
		calib_cpu(C, &rf[k], &idle[k], &oth[k]);
		run_free(&rf[k]);
	}
	C->ps_rate = median(v, n);
	C->sw_ps = median(x, n);
	C->ps_us = median(w, n);
	C->bad |= !n;
	printf("  ps    1 job of 4 workers, no switch memory: %.1fk DATA packets/s through "
	       "the PS, %.1fk packets/s into the switch (DATA and the PS's results); esa-ps "
	       "%.2f us CPU per packet (idle %.0f%%, others %.0f%%)\n", C->ps_rate / 1e3,
	       C->sw_ps / 1e3, C->ps_us, 100 * median(idle, n), 100 * median(oth, n));
}

/*
 * The network-bound testbed's numbers (jct.sh -C -N): the links bind, not
 * the CPU, so w2 measures the links' rate and the round trip the
 * propagation (the emulated delay and the hosts' own) plus a packet's
 * serialization each way; the switch's and the workers' CPU rates do not
 * bind at 30% idle (0: line rate); esa-ps's CPU per packet is measured.
 */
static void calib_netbound(const struct calib *C, struct sim_params *cal)
{
	double bits = 8 * sim_pkt_bytes(ESA_DEFAULT_VALUES);

	memset(cal, 0, sizeof(*cal));
	cal->link_gbps = cal->ps_link_gbps = C->wk * bits / 1e9;
	cal->prop_us = C->rtt / 2 - bits / (cal->link_gbps * 1e3);
	cal->ps_mpps = 1 / C->ps_us;
	cal->ps_copy_cost = C->copy_us / C->ps_us;
	cal->ps_hosts = 0;
	printf("netbound preset (user/sim/workload.c):\n"
	       "  link_gbps    = w2's rate per worker x %.0f bits a packet     = %.4f\n"
	       "  prop_us      = rtt / 2 - a packet's serialization       = %.1f\n"
	       "  ps_mpps      = 1 / esa-ps CPU per packet (ps)            = %.4f\n"
	       "  ps_copy_cost = esa-ps CPU per copy (w4) / per packet     = %.2f\n"
	       "  worker_mpps, switch_mpps: 0 (line rate: the CPU does not bind)\n"
	       "  ps_hosts     = 0 (one esa-ps per job, on its own link)\n",
	       bits, cal->link_gbps, cal->prop_us, cal->ps_mpps, cal->ps_copy_cost);
}

/* The testbed preset's numbers from the measurements. */
static void calib_preset(const struct calib *C, struct sim_params *cal)
{
	memset(cal, 0, sizeof(*cal));
	cal->worker_mpps = C->wk / 1e6;
	cal->switch_mpps = C->sw / 1e6;
	cal->ps_mpps = 1 / C->ps_us;
	cal->ps_copy_cost = C->copy_us / C->ps_us;
	cal->prop_us = C->rtt / 2;
	cal->link_gbps = cal->ps_link_gbps = 10;
	cal->ps_hosts = 1;
	printf("testbed preset (user/sim/workload.c):\n"
	       "  worker_mpps  = w2's rate per worker                      = %.4f\n"
	       "  switch_mpps  = median of w4, conc, ps: packets/s in      = %.4f\n"
	       "  ps_mpps      = 1 / esa-ps CPU per packet (ps)            = %.4f\n"
	       "  ps_copy_cost = esa-ps CPU per copy (w4) / per packet     = %.2f\n"
	       "  prop_us      = rtt / 2                                   = %.1f\n"
	       "  link_gbps, ps_link_gbps: 10 (no line rate on veth; never binds)\n"
	       "  ps_hosts     = 1 (one esa-ps for every job)\n",
	       cal->worker_mpps, cal->switch_mpps, cal->ps_mpps, cal->ps_copy_cost,
	       cal->prop_us);
}

/* What the model makes of the microbenchmarks with these numbers. */
static void calib_check_model(const struct jct_opts *o, const struct calib *C,
			      const struct sim_params *cal)
{
	unsigned ch = C->ch, nw = 0;
	double span;

	printf("the model on the microbenchmarks (seed %u), measured -> simulated:\n",
	       o->seeds[0]);
	span = calib_model(o, "rtt", "esa", cal, &ch, &nw);
	printf("  rtt   %.1f -> %.1f us per chunk\n", C->chunk_us, span / ch * 1e6);
	span = calib_model(o, "w2", "esa", cal, &ch, &nw);
	printf("  w2    %.1fk -> %.1fk DATA packets/s per worker\n", C->wk / 1e3,
	       ch / span / 1e3);
	span = calib_model(o, "w4", "esa", cal, &ch, &nw);
	printf("  w4    %.1fk -> %.1fk DATA packets/s\n", C->sw_w4 / 1e3, ch * nw / span / 1e3);
	span = calib_model(o, "conc", "switchml", cal, &ch, &nw);
	printf("  conc  %.1fk -> %.1fk DATA packets/s\n", C->sw_conc / 1e3,
	       ch * nw / span / 1e3);
	printf("  ps    %.1fk -> %.1fk DATA packets/s through the PS (min(switch / 2, "
	       "PS, 4 x worker); esa_sim cannot run a job without memory)\n",
	       C->ps_rate / 1e3, fmin(fmin(C->sw / 2, 1e6 / C->ps_us), 4 * C->wk) / 1e3);
}

int jct_calib(struct jct_opts *o)
{
	struct calib C = { 0 };
	struct sim_params cal;

	if (!o->dir) {
		fprintf(stderr, "esa_jct calib: --dir is needed\n");
		return 2;
	}
	printf("calibration: medians over the runs of each microbenchmark (seeds");
	for (unsigned s = 0; s < o->nseeds; s++)
		printf("%s%u", s ? "," : " ", o->seeds[s]);
	printf("); one VGG-16-sized gradient per iteration, no compute\n");
	calib_rtt(o, &C);
	calib_w2(o, &C);
	calib_w4(o, &C);
	calib_conc(o, &C);
	calib_ps(o, &C);
	C.sw = median(C.sv, C.nsw);

	if (!strcmp(o->preset, "netbound"))
		calib_netbound(&C, &cal);
	else
		calib_preset(&C, &cal);
	calib_check_model(o, &C, &cal);
	if (C.worst > 0.1)
		printf("warning: other processes used up to %.0f%% of the machine during "
		       "these runs: calibrate on a quiet machine\n", 100 * C.worst);
	printf("calib: --worker-mpps %.4f --switch-mpps %.4f --ps-mpps %.4f "
	       "--ps-copy-cost %.2f --prop-us %.1f --link-gbps %g --ps-link-gbps %g "
	       "--ps-hosts %u\n", cal.worker_mpps, cal.switch_mpps, cal.ps_mpps,
	       cal.ps_copy_cost, cal.prop_us, cal.link_gbps, cal.ps_link_gbps, cal.ps_hosts);
	return C.bad ? 1 : 0;
}
