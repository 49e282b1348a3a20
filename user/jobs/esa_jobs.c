// SPDX-License-Identifier: GPL-2.0
/*
 * esa-jobs - run jobs of workers through libesa and check every result.
 *
 *   esa-jobs -s SWITCH [ OPTIONS ] JOB...
 *   JOB := job ID ps=IP:PORT [ KEY=VALUE... ] worker [ netns=PATH ] [ switch=IP ] IP:PORT
 *          [ worker ... ]
 *
 * Every worker is a thread with its own libesa context (its socket opened in
 * its network namespace), so one process drives workers spread over many
 * hosts.  Each iteration, every rank reduces a deterministic tensor (float32:
 * gradient-like, layers of normal values at scales from 1e-5 to 1e-1; int32:
 * uniform in +-1e6) and checks the result against the sum computed here from
 * every rank's tensor: int32 exact, float32 within libesa's documented bound.
 * The report gives per job its completion time, goodput and counters.
 * With --stop-file, the jobs run until that file exists: each job then ends
 * after the iteration its furthest worker is in, its results checked as any.
 * docs/library.md, scripts/demo.sh.  Its files are listed in jobs.h.
 */
#include <stdio.h>

#include "jobs.h"

struct job jobs[MAXJOBS];
int njobs;
atomic_int all_done;

int main(int argc, char **argv)
{
	pthread_t prog;
	int failed = 0, first = parse_options(argc, argv);

	if (!parse_jobs(argc - first, argv + first))
		die("no jobs (try esa-jobs --help)");
	if (g_stop_file && only_job >= 0)
		die("--stop-file stops a job where all its workers run: not with --only "
		    "(its peers elsewhere would not stop at the same iteration)");
	if (g_linger < 0)
		g_linger = only_job >= 0 ? 3000 : 1000;
	for (int k = 0; k < njobs; k++)
		setup_job(&jobs[k]);
	if (g_progress)
		pthread_create(&prog, NULL, progress_main, NULL);
	for (int k = 0; k < njobs; k++) {
		jobs[k].t0 = now_s();
		for (int r = 0; r < jobs[k].n; r++)
			if (jobs[k].w[r]->mine)
				pthread_create(&jobs[k].w[r]->th, NULL, worker_main, jobs[k].w[r]);
	}
	for (int k = 0; k < njobs; k++)
		for (int r = 0; r < jobs[k].n; r++)
			if (jobs[k].w[r]->mine)
				pthread_join(jobs[k].w[r]->th, NULL);
	atomic_store(&all_done, 1);
	if (g_progress)
		pthread_join(prog, NULL);
	if (g_metrics)
		write_metrics(g_metrics);
	for (int k = 0; k < njobs; k++) {
		struct job *j = &jobs[k];

		for (int r = 0; r < j->n; r++) {
			struct worker *w = j->w[r];

			if (w->mine && w->rc)
				fprintf(stderr, "esa-jobs: job %d rank %d: %s\n", j->id, r,
					w->err[0] ? w->err : esa_strerror(w->rc));
			if (w->ew)
				esa_worker_close(w->ew);
		}
		failed += j->rc != 0;
	}
	report();
	return failed ? 1 : 0;
}
