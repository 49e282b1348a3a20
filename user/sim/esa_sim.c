// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_sim: run one seeded workload under the esa, atp and switchml
 * allocation policies and compare job completion times (compare.c), or
 * sweep pool size, load, number of jobs and priority policy into CSV for
 * plotting (sweep.c), or compare flat and two-level racks (multirack.c).
 * This file: the command line (usage, options, presets) and what it asks
 * for.  See docs/simulator.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include "esa_sim.h"

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

	if (cmp_run(p, a->polmask, a->reps, &c))
		return 1;
	if (!a->quiet && !a->csv) {
		cmp_print_header(p, &c, preset_name);
		cmp_print_table(&c);
		if (a->verbose)
			cmp_print_counters(&c);
	} else if (a->csv) {
		cmp_print_csv(&c, p);
	}
	if (a->jct_csv && cmp_write_cdf(a->jct_csv, &c, 0))
		fprintf(stderr, "esa_sim: %s: %s\n", a->jct_csv, strerror(errno));
	if (a->ts_csv && cmp_write_ts(a->ts_csv, &c, p->pool, 0))
		fprintf(stderr, "esa_sim: %s: %s\n", a->ts_csv, strerror(errno));
	cmp_summary_line(stdout, &c);
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
		rc = sweep_run(&c.p, c.polmask, c.reps, &c.sw);
		return rc < 0 ? 1 : rc;
	}
	return compare(&c);
}
