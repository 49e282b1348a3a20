// SPDX-License-Identifier: GPL-2.0
/*
 * esa_jct: options.  The workload and model options are esa_sim's, with the
 * same names and meanings, so one set of words drives the testbed and the
 * simulator alike; the preset is applied first whatever its position.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "esa.h"
#include "jct.h"

enum {
	O_PRESET = 256, O_SEED, O_PRIO, O_HOSTS, O_PREFIX, O_PIN, O_OUT, O_DIR,
	O_POLICY, O_REP, O_SAMPLE, O_LEAD, O_MAXRUN, O_SEEDS, O_REPS, O_TOL_ESA,
	O_TOL_ATP, O_TOL_SWML, O_NOSLOT, O_PSPID, O_INJECT, O_IO, O_STRIDE, O_DELAY,
};

static const struct option own_opts[] = {
	{ "preset", required_argument, 0, O_PRESET },
	{ "seed", required_argument, 0, O_SEED },
	{ "prio", required_argument, 0, O_PRIO },
	{ "hosts", required_argument, 0, O_HOSTS },
	{ "prefix", required_argument, 0, O_PREFIX },
	{ "pin", required_argument, 0, O_PIN },
	{ "out", required_argument, 0, O_OUT },
	{ "dir", required_argument, 0, O_DIR },
	{ "policy", required_argument, 0, O_POLICY },
	{ "rep", required_argument, 0, O_REP },
	{ "sample-ms", required_argument, 0, O_SAMPLE },
	{ "lead-ms", required_argument, 0, O_LEAD },
	{ "max-run-s", required_argument, 0, O_MAXRUN },
	{ "seeds", required_argument, 0, O_SEEDS },
	{ "reps", required_argument, 0, O_REPS },
	{ "tol-esa", required_argument, 0, O_TOL_ESA },
	{ "tol-atp", required_argument, 0, O_TOL_ATP },
	{ "tol-switchml", required_argument, 0, O_TOL_SWML },
	{ "noslot", no_argument, 0, O_NOSLOT },
	{ "ps-pid", required_argument, 0, O_PSPID },
	{ "inject-error", no_argument, 0, O_INJECT },
	{ "io", required_argument, 0, O_IO },
	{ "host-stride", required_argument, 0, O_STRIDE },
	{ "link-delay-us", required_argument, 0, O_DELAY },
	{ "verbose", no_argument, 0, 'v' },
	{ "help", no_argument, 0, 'h' },
	{ 0 }
};

void jct_usage(FILE *f)
{
	fprintf(f,
"usage: esa_jct COMMAND [options]\n"
"The JCT benchmark on the namespace testbed (docs/evaluation.md); user/bench/jct.sh\n"
"(make jct) builds the testbed and runs it.  Commands:\n"
"  list      print the workload (as esa_sim --list-jobs) and how it is scaled\n"
"  env       the testbed's settings as shell assignments (for jct.sh)\n"
"  ps-jobs   the jobs' registrations for esa-ps -c\n"
"  run       run the workload once on the loaded switch (root): --policy,\n"
"            --pin, --prefix, --out; every result is checked\n"
"  report    every run of --dir, the simulator on the same workload, the\n"
"            tables, plot data and the summary line\n"
"  calib     the testbed preset's numbers from the calibration runs of --dir\n"
"            (jct.sh -C)\n"
"Workload and model (esa_sim's options and meaning; preset first):\n"
"  --preset NAME --seed N --jobs N --load X --rate X --workers LIST\n"
"  --iters MIN-MAX --models LIST --scale X --compute-scale X --straggle X\n"
"  --prio static|las|srsf|flat --pool N --window N --stale-ms X --switchml-regions N\n"
"  --home N (esa, atp: each job's chunks on a run of N slots placed by\n"
"  esa_home_place(), as esactl's region auto; 0: hash(job) + chunk)\n"
"  --timeout-us X --timeout-max-us X  (testbed and simulator)\n"
"  --link-gbps X --ps-link-gbps X --prop-us X --switch-mpps X --ps-mpps X\n"
"  --ps-copy-cost X --ps-hosts N --worker-mpps X  (simulator only)\n"
"Testbed:\n"
"  --hosts N          worker hosts (namespaces PREFIX-h1..N) [8; preset\n"
"                     netbound: jobs x the most workers, at most 200]\n"
"  --host-stride N    job j's rank r on host 1 + (N j + r) mod hosts [3;\n"
"                     netbound: the most workers: every rank its own link]\n"
"  --link-delay-us N  every host's link delays datagrams N us each way\n"
"                     (libesa's link_delay_us, esa-ps --link-delay-us; the\n"
"                     emulated part of --prop-us) [0; netbound: 1000]\n"
"  --ps-hosts N       1: one esa-ps for every job (host 250); 0: one per\n"
"                     job, each on its own host and link (201 + job); N:\n"
"                     N of them, jobs in turn (as the simulator's)\n"
"  --prefix P         namespace prefix\n"
"  --pin DIR          the switch's pinned maps\n"
"  --policy P         run: esa, atp or switchml (must be the loaded one)\n"
"  --rep N            run: repetition label [1]\n"
"  --out FILE         run: the result file\n"
"  --sample-ms X      slot sampling period [5]\n"
"  --lead-ms X        from start to the first arrival [300]\n"
"  --max-run-s X      give up a run after this long [300]\n"
"  --ps-pid PID[,PID] the esa-ps's pids: their CPU time goes into the run file\n"
"  --noslot           switchml: no job ever gets a region, every packet\n"
"                     goes through the PS (calibration)\n"
"  --inject-error     rank 0 of job 0 adds 1 to one element of its first\n"
"                     gradient: the run must find the wrong sums (tests)\n"
"  --io udp|xdp|auto  run: libesa's transport [udp]; xdp: AF_XDP on each\n"
"                     host's eth0 queue 0, the workers of a host sharing it\n"
"Report:\n"
"  --dir DIR          the run files (run-POLICY-sSEED-rREP.txt)\n"
"  --seeds LIST       seeds [the --seed]; --reps N repetitions per seed [1]\n"
"  --tol-esa X, --tol-atp X, --tol-switchml X\n"
"                     simulator vs testbed: the largest |log(sim/testbed)| of\n"
"                     the policy's average JCT and of the median over jobs of\n"
"                     each job's [0.20, 0.35, 0.30] (docs/evaluation.md)\n");
}

static int num(const char *opt, const char *s, double lo, double hi, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(*v) || *v < lo || *v > hi) {
		fprintf(stderr, "esa_jct: bad value for --%s: %s\n", opt, s);
		return -1;
	}
	return 0;
}

/* The preset first, wherever it is in argv, then the testbed's defaults. */
static int jct_defaults(struct jct_opts *o, int argc, char **argv)
{
	struct sim_params *p = &o->p;

	memset(o, 0, sizeof(*o));
	o->preset = "testbed";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--preset") && i + 1 < argc)
			o->preset = argv[i + 1];
		else if (!strncmp(argv[i], "--preset=", 9))
			o->preset = argv[i] + 9;
	}
	if (sim_preset(p, o->preset)) {
		fprintf(stderr, "esa_jct: unknown preset %s\n", o->preset);
		return -1;
	}
	/* esa_sim's default priority is las; the testbed's libesa stamps the
	 * simulator's static priorities exactly (see docs/evaluation.md). */
	p->prio = ESA_PRIO_STATIC;
	o->hosts = 8;
	o->host_stride = 3;
	if (!strcmp(o->preset, "netbound")) {
		/* every rank on a link of its own, the propagation emulated */
		o->host_stride = 4;
		o->hosts = 0;	/* jct_check(): jobs x stride */
		o->link_delay_us = 1000;
	}
	o->prefix = "";
	o->pin = "";
	o->policy = -1;
	o->rep = 1;
	o->sample_ms = 5;
	o->lead_ms = 300;
	o->max_run_s = 300;
	o->reps = 1;
	o->io = "udp";
	/* docs/evaluation.md, "Validation": the largest deviations over its
	 * 21-point sweep are esa 0.17, atp 0.18, switchml 0.21; the margin is
	 * for the run-to-run spread of averages of a few runs. */
	o->tol[ESA_POLICY_ESA] = 0.20;
	o->tol[ESA_POLICY_ATP] = 0.35;
	o->tol[ESA_POLICY_SWITCHML] = 0.30;
	return 0;
}

/* The options of one run on the testbed (esa_jct run). */
static int set_run_opt(struct jct_opts *o, int c, const char *name, char *arg)
{
	double x;

	switch (c) {
	case O_HOSTS:
		if (num(name, arg, 1, JCT_MAX_HOSTS, &x))
			return -1;
		o->hosts = (unsigned)x;
		break;
	case O_PREFIX:
		o->prefix = arg;
		break;
	case O_PIN:
		o->pin = arg;
		break;
	case O_OUT:
		o->out = arg;
		break;
	case O_POLICY:
		o->policy = sim_policy_parse(arg);
		if (o->policy < 0) {
			fprintf(stderr, "esa_jct: --policy esa, atp or switchml\n");
			return -1;
		}
		break;
	case O_IO:
		if (strcmp(arg, "udp") && strcmp(arg, "xdp") && strcmp(arg, "auto")) {
			fprintf(stderr, "esa_jct: --io udp, xdp or auto\n");
			return -1;
		}
		o->io = arg;
		break;
	case O_REP:
		if (num(name, arg, 1, 1000, &x))
			return -1;
		o->rep = (unsigned)x;
		break;
	case O_SAMPLE:
		return num(name, arg, 0.5, 1000, &o->sample_ms);
	case O_LEAD:
		return num(name, arg, 0, 60000, &o->lead_ms);
	case O_MAXRUN:
		return num(name, arg, 1, 86400, &o->max_run_s);
	case O_PSPID: {
		char *save = NULL, *t;

		o->nps_pid = 0;
		for (t = strtok_r(arg, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			if (o->nps_pid == JCT_MAX_PSPIDS || num(name, t, 1, 1 << 30, &x))
				return -1;
			o->ps_pid[o->nps_pid++] = (int)x;
		}
		break;
	}
	case O_STRIDE:
		if (num(name, arg, 1, JCT_MAX_HOSTS, &x))
			return -1;
		o->host_stride = (unsigned)x;
		break;
	case O_DELAY:
		if (num(name, arg, 0, 1000000, &x))
			return -1;
		o->link_delay_us = (unsigned)x;
		break;
	case O_INJECT:
		o->inject = 1;
		break;
	case O_NOSLOT:
		o->noslot = 1;
		break;
	default:
		jct_usage(stderr);
		return -1;
	}
	return 0;
}

/* The workload's own options, the report's, and then set_run_opt()'s. */
static int set_opt(struct jct_opts *o, int c, const char *name, char *arg)
{
	struct sim_params *p = &o->p;
	double x;

	switch (c) {
	case O_PRESET:
		break;
	case O_SEED:
		if (num(name, arg, 0, 1e15, &x))
			return -1;
		p->seed = (uint64_t)x;
		o->seeds[0] = (unsigned)x;
		break;
	case O_PRIO:
		p->prio = sim_prio_parse(arg);
		if (p->prio < 0) {
			fprintf(stderr, "esa_jct: --prio static, las, srsf or flat\n");
			return -1;
		}
		break;
	case O_DIR:
		o->dir = arg;
		break;
	case O_SEEDS: {
		int n = sim_param_ulist(arg, o->seeds, 64, 0, ~0u);

		if (n < 0) {
			fprintf(stderr, "esa_jct: bad --seeds %s\n", arg);
			return -1;
		}
		o->nseeds = n;
		break;
	}
	case O_REPS:
		if (num(name, arg, 1, 100, &x))
			return -1;
		o->reps = (unsigned)x;
		break;
	case O_TOL_ESA:
		return num(name, arg, 0, 10, &o->tol[ESA_POLICY_ESA]);
	case O_TOL_ATP:
		return num(name, arg, 0, 10, &o->tol[ESA_POLICY_ATP]);
	case O_TOL_SWML:
		return num(name, arg, 0, 10, &o->tol[ESA_POLICY_SWITCHML]);
	case 'v':
		o->verbose++;
		break;
	case 'h':
		jct_usage(stdout);
		exit(0);
	default:
		return set_run_opt(o, c, name, arg);
	}
	return 0;
}

/* What the testbed adds to esa_sim's ranges. */
static int jct_check(struct jct_opts *o)
{
	struct sim_params *p = &o->p;

	if (!o->nseeds) {
		o->seeds[0] = (unsigned)p->seed;
		o->nseeds = 1;
	}
	if (!o->hosts)
		o->hosts = p->njobs * o->host_stride < JCT_MAX_HOSTS ?
			   p->njobs * o->host_stride : JCT_MAX_HOSTS;
	for (unsigned k = 0; k < p->nwchoice; k++) {
		if (p->wchoice[k] > o->hosts) {
			fprintf(stderr, "esa_jct: jobs of %u workers need --hosts %u or more\n",
				p->wchoice[k], p->wchoice[k]);
			return -1;
		}
	}
	if (p->ps_hosts != 1 && (p->ps_hosts ? p->ps_hosts : p->njobs) > JCT_MAX_PS) {
		fprintf(stderr, "esa_jct: --ps-hosts %u with %u jobs: at most %d PS hosts "
			"(201..249)\n", p->ps_hosts, p->njobs, JCT_MAX_PS);
		return -1;
	}
	if (p->njobs > JCT_MAX_JOBS) {
		fprintf(stderr, "esa_jct: --jobs %u: at most %d (job ids of the switch and "
			"esa-ps)\n", p->njobs, JCT_MAX_JOBS);
		return -1;
	}
	if (p->window > ESA_WINDOW_MAX) {
		fprintf(stderr, "esa_jct: --window %u: libesa's windows are 1..%d\n",
			p->window, ESA_WINDOW_MAX);
		return -1;
	}
	if (p->timeout_us < 1000 || p->timeout_max_us < 1000) {
		fprintf(stderr, "esa_jct: --timeout-us and --timeout-max-us: at least 1000 "
			"(libesa counts milliseconds)\n");
		return -1;
	}
	return 0;
}

int jct_parse(struct jct_opts *o, int argc, char **argv, const char *cmd)
{
	struct option *lopts;
	int c, rc = -1;

	(void)cmd;
	if (jct_defaults(o, argc, argv))
		return -1;
	/* The model's and workload's options are esa_sim's (params.c). */
	lopts = sim_param_options(own_opts);
	if (!lopts)
		return -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "vh", lopts, NULL)) != -1) {
		const char *name = NULL;

		if (c >= SIM_OPT_BASE) {
			if (sim_param_set(&o->p, c, optarg, "esa_jct"))
				goto out;
			continue;
		}
		for (const struct option *l = lopts; l->name; l++)
			if (l->val == c)
				name = l->name;
		if (set_opt(o, c, name, optarg))
			goto out;
	}
	if (!jct_check(o))
		rc = optind;
out:
	free(lopts);
	return rc;
}

/*
 * Rank r of job j runs on host 1 + (3 j + r) mod hosts: a job's ranks are on
 * distinct hosts (one worker of a job per switch port), and jobs that run at
 * the same time mostly use different hosts.
 */
unsigned jct_host_of(const struct jct_opts *o, unsigned job, unsigned rank)
{
	return 1 + (o->host_stride * job + rank) % o->hosts;
}

unsigned jct_ps_host(const struct jct_opts *o, unsigned job)
{
	if (o->p.ps_hosts == 1)
		return JCT_PS_HOST;
	return JCT_PS_HOST0 + (o->p.ps_hosts ? job % o->p.ps_hosts : job);
}

void jct_sim_args(FILE *f, const struct jct_opts *o)
{
	const struct sim_params *p = &o->p;

	fprintf(f, "--preset %s --seed %llu --jobs %u ", o->preset,
		(unsigned long long)p->seed, p->njobs);
	if (p->rate > 0)
		fprintf(f, "--rate %g ", p->rate);
	else
		fprintf(f, "--load %g ", p->load);
	fprintf(f, "--workers ");
	for (unsigned k = 0; k < p->nwchoice; k++)
		fprintf(f, "%s%u", k ? "," : "", p->wchoice[k]);
	fprintf(f, " --iters %u-%u --models ", p->iter_min, p->iter_max);
	for (unsigned m = 0, first = 1; m < SIM_NMODELS; m++)
		if (p->model_mask & (1u << m)) {
			fprintf(f, "%s%s", first ? "" : ",", sim_models[m].name);
			first = 0;
		}
	fprintf(f, " --scale %g --compute-scale %g --straggle %g --prio %s "
		"--pool %u --window %u --stale-ms %g --switchml-regions %u --home %u "
		"--timeout-us %g --timeout-max-us %g --link-gbps %g --ps-link-gbps %g "
		"--prop-us %g --switch-mpps %g --ps-mpps %g --ps-copy-cost %g "
		"--ps-hosts %u --worker-mpps %g --ps-copy %u --ps-sums %u --window-min %u",
		p->scale, p->compute_scale, p->straggle, sim_prio_name(p->prio),
		p->pool, p->window, p->stale_ms, p->swml_regions, p->home, p->timeout_us,
		p->timeout_max_us, p->link_gbps, p->ps_link_gbps, p->prop_us,
		p->switch_mpps, p->ps_mpps, p->ps_copy_cost, p->ps_hosts,
		p->worker_mpps, p->ps_copy, p->ps_sums, p->window_min);
}

void jct_print_scale(FILE *f, const struct sim_params *p)
{
	fprintf(f, "scale: gradients x%g, compute x%g (x%g on top of the gradient "
		"scale), %u int32 values per packet\n", p->scale,
		p->scale * p->compute_scale, p->compute_scale, p->nvals);
	for (unsigned m = 0; m < SIM_NMODELS; m++) {
		const struct sim_model *sm = &sim_models[m];
		double ch = ceil(sm->params * p->scale / p->nvals);

		if (!(p->model_mask & (1u << m)))
			continue;
		fprintf(f, "  %-9s %6.1f M parameters -> %8.0f int32 (%4.0f chunks, "
			"%6.2f MB) per allreduce; compute %6.1f ms -> %7.2f ms\n",
			sm->name, sm->params / 1e6, ch * p->nvals, ch,
			ch * p->nvals * 4 / 1e6, sm->compute_ms,
			sm->compute_ms * p->scale * p->compute_scale);
	}
}
