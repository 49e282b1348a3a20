// SPDX-License-Identifier: GPL-2.0
/*
 * esa_jct - the JCT benchmark on the namespace testbed: its commands.
 *
 *   esa_jct run --policy P --pin DIR --prefix P --out FILE [workload options]
 *
 * `run` runs the simulator's seeded workload (user/sim/workload.c) once on
 * the loaded switch (jct_run.c: the schedule and the switch, jct_worker.c:
 * the workers, jct_record.c: the samples and the run file); every sum is
 * checked.  `report` turns the runs into tables beside the simulator on
 * the same jobs (jct_report.c, jct_runfile.c, jct_plots.c), `calib` reads
 * the calibration runs (jct_calib.c); `list`, `env` and `ps-jobs` print the
 * workload and the testbed's settings (this file), the options are
 * jct_opts.c's.  user/bench/jct.sh (make jct) builds the testbed;
 * docs/evaluation.md.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <getopt.h>

#include "jct.h"

static int cmd_list(struct jct_opts *o)
{
	struct sim_workload w;

	if (sim_workload_gen(&o->p, &w)) {
		fprintf(stderr, "esa_jct: bad workload parameters\n");
		return 2;
	}
	jct_print_scale(stdout, &o->p);
	printf("job arrival_ms model workers iters chunks compute_ms static_prio alone_ms hosts\n");
	for (unsigned i = 0; i < w.njobs; i++) {
		const struct sim_job_spec *j = &w.job[i];

		printf("%u %.4f %s %u %u %u %.4f %u %.4f ", i, (double)j->arrival / T_MS,
		       sim_models[j->model].name, j->nworkers, j->iters, j->chunks,
		       (double)j->compute / T_MS, j->sprio, j->ideal_s * 1e3);
		for (unsigned r = 0; r < j->nworkers; r++)
			printf("%s%u", r ? "," : "", jct_host_of(o, i, r));
		printf("\n");
	}
	printf("rate %.3f jobs/s, mean alone %.4f ms\n", w.rate, w.mean_ideal_s * 1e3);
	printf("esa_sim ");
	jct_sim_args(stdout, o);
	printf("\n");
	sim_workload_free(&w);
	return 0;
}

static int cmd_env(struct jct_opts *o)
{
	unsigned nps = o->p.ps_hosts ? o->p.ps_hosts : o->p.njobs;

	printf("JCT_POOL=%u\nJCT_NVALS=%u\nJCT_STALE=%u\nJCT_JOBS=%u\nJCT_HOSTS=%u\n",
	       o->p.pool, o->p.nvals, (unsigned)lround(o->p.stale_ms), o->p.njobs,
	       o->hosts);
	printf("JCT_DELAY=%u\nJCT_PSCOPY=%s\nJCT_PSSUMS=%s\nJCT_PSHOSTS=\"", o->link_delay_us,
	       o->p.ps_copy ? "on" : "off", o->p.ps_sums ? "switch" : "direct");
	for (unsigned k = 0; k < nps; k++)
		printf("%s%u", k ? " " : "", o->p.ps_hosts == 1 ? JCT_PS_HOST : JCT_PS_HOST0 + k);
	printf("\"\n");
	return 0;
}

static int cmd_ps_jobs(struct jct_opts *o)
{
	struct sim_workload w;

	if (sim_workload_gen(&o->p, &w)) {
		fprintf(stderr, "esa_jct: bad workload parameters\n");
		return 2;
	}
	printf("values %u\n", o->p.nvals);
	for (unsigned i = 0; i < w.njobs; i++) {
		printf("job %u ps 10.9.%u.2:%u workers", i, jct_ps_host(o, i), JCT_PS_PORT);
		for (unsigned r = 0; r < w.job[i].nworkers; r++)
			printf(" 10.9.%u.2:%u", jct_host_of(o, i, r), JCT_PORT_BASE + i);
		printf("\n");
	}
	sim_workload_free(&w);
	return 0;
}

int main(int argc, char **argv)
{
	struct jct_opts o;
	const char *cmd;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		jct_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	cmd = argv[1];
	if (jct_parse(&o, argc - 1, argv + 1, cmd) < 0)
		return 2;
	if (optind < argc - 1) {
		fprintf(stderr, "esa_jct: unexpected argument %s\n", argv[optind + 1]);
		return 2;
	}
	if (!strcmp(cmd, "list"))
		return cmd_list(&o);
	if (!strcmp(cmd, "env"))
		return cmd_env(&o);
	if (!strcmp(cmd, "ps-jobs"))
		return cmd_ps_jobs(&o);
	if (!strcmp(cmd, "run"))
		return jct_run(&o);
	if (!strcmp(cmd, "report"))
		return jct_report(&o);
	if (!strcmp(cmd, "calib"))
		return jct_calib(&o);
	fprintf(stderr, "esa_jct: unknown command %s (list, env, ps-jobs, run, report, calib)\n", cmd);
	return 2;
}
