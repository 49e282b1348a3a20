// SPDX-License-Identifier: GPL-2.0
/*
 * A worker of esa-jobs (jobs.h): a thread with its own libesa context, its
 * socket opened in its network namespace, running its job's allreduces and
 * checking each result; then serving its peers (the PS's FETCH) until the
 * job's other workers here are done, and lingering.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs.h"


/*
 * Whether a worker about to begin iteration it stops instead.  Once the
 * stop file exists the job stops after the furthest iteration any of its
 * workers began: ranks are at most one iteration apart (one's iteration
 * it + 1 starts only once every rank sent all of iteration it), and every
 * rank still behind finishes that one, so every allreduce begun completes.
 */
static bool stop_before(struct job *j, int it)
{
	bool stop;

	pthread_mutex_lock(&j->lock);
	if (j->stop_at < 0 && g_stop_file && !access(g_stop_file, F_OK))
		j->stop_at = j->started + 1;
	stop = j->stop_at >= 0 && it >= j->stop_at;
	if (!stop && it > j->started)
		j->started = it;
	pthread_mutex_unlock(&j->lock);
	return stop;
}

void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct job *j = w->job;
	esa_config *c = esa_config_new();
	void *in = malloc(j->elems * 4 + 4), *out = malloc(j->elems * 4 + 4);
	double worst = 0;
	bool others;

	if (!c || !in || !out)
		die("out of memory");
	esa_config_set(c, "switch", w->sw[0] ? w->sw : sw_addr);
	esa_config_set_int(c, "values", j->nvals);
	esa_config_set_int(c, "job", j->id);
	esa_config_set_int(c, "rank", w->rank);
	esa_config_set_int(c, "workers", j->n);
	esa_config_set(c, "local", w->local);
	if (w->netns[0])
		esa_config_set(c, "netns", w->netns);
	for (int k = 0; k < j->nkv; k++)
		esa_config_set(c, j->key[k], j->val[k]);	/* checked in main */
	w->ew = esa_worker_open(c, w->err, sizeof(w->err));
	if (!w->ew)
		w->rc = errno ? -errno : -EINVAL;
	else if (esa_worker_warning(w->ew)[0] && !atomic_exchange(&j->warned, 1))
		fprintf(stderr, "esa-jobs: job %d rank %d: %s\n", j->id, w->rank,
			esa_worker_warning(w->ew));
	if (w->ew && g_verbose)
		fprintf(stderr, "esa-jobs: job %d rank %d: %s on %s\n", j->id, w->rank,
			esa_worker_io(w->ew), w->local);
	esa_config_free(c);
	for (int it = 0; w->ew && it < j->iters && !stop_before(j, it); it++) {
		esa_request *r;
		double t;
		int rc;

		gen(j, it, w->rank, in);
		memset(out, 0xff, j->elems * 4);
		t = now_s();
		r = esa_allreduce_start(w->ew, j->dtype, in, out, j->elems);
		if (!r) {
			w->rc = -errno;
			snprintf(w->err, sizeof(w->err), "%s", esa_worker_error(w->ew));
			break;
		}
		while ((rc = esa_wait(r, 100)) == -EAGAIN)
			atomic_store(&w->done_ppm, (uint64_t)((it + esa_request_progress(r)) /
							      j->iters * 1e6));
		esa_request_free(r);
		w->comm += now_s() - t;
		if (rc) {
			w->rc = rc;
			snprintf(w->err, sizeof(w->err), "iteration %d: %s (%s)", it,
				 esa_strerror(rc), esa_worker_error(w->ew));
			break;
		}
		atomic_store(&w->done_ppm, (uint64_t)((it + 1.0) / j->iters * 1e6));
		if (check(j, ref_get(j, it), out, &worst)) {
			atomic_fetch_add(&j->errors, 1);
			snprintf(w->err, sizeof(w->err), "iteration %d: wrong sums", it);
			w->rc = -EILSEQ;
		}
	}
	/* Also when the open failed: the job fails, and its peers stop waiting. */
	w->t_done = now_s();
	pthread_mutex_lock(&j->lock);
	if (worst > j->worst)
		j->worst = worst;
	if (w->rc && !j->rc) {
		j->rc = w->rc;
		snprintf(j->err, sizeof(j->err), "%s", w->err[0] ? w->err : esa_strerror(w->rc));
	}
	if (w->t_done > j->t_end)
		j->t_end = w->t_done;
	j->running--;
	pthread_mutex_unlock(&j->lock);
	/* Peers may still need our results (the PS's FETCH): serve them
	 * while the job's other workers here run, then linger a little. */
	if (w->ew) {
		do {
			/* a failed worker returns at once: wait out the turn */
			if (esa_serve(w->ew, 100, 0) < 0)
				usleep(100000);
			pthread_mutex_lock(&j->lock);
			others = j->running > 0;
			pthread_mutex_unlock(&j->lock);
		} while (others);
		if (g_linger > 0)
			esa_serve(w->ew, g_linger, g_linger / 2 > 500 ? g_linger / 2 : 500);
		esa_worker_stats(w->ew, &w->st, sizeof(w->st));
	}
	free(in);
	free(out);
	return NULL;
}
