// SPDX-License-Identifier: GPL-2.0
/*
 * esa_jct run: one run of the workload on the loaded switch.  Owns R: the
 * jobs, registered with the switch at their arrival times (policy switchml:
 * into a fixed region, or without memory until one frees up, as esa_sim
 * does) and deleted when their workers are done; the schedule that starts
 * the workers (jct_worker.c) and the sampler (jct_record.c); the check
 * that every job finished, and the run file.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "jct_run.h"

struct run R;

/* The most workers any host gets over the run (AF_XDP's sharing of a
 * host's queue: not all at once, but a bound), at most libesa's 64. */
static unsigned host_workers_max(void)
{
	unsigned cnt[JCT_MAX_HOSTS + 1] = { 0 }, m = 1;

	for (unsigned i = 0; i < R.wl.njobs; i++)
		for (unsigned r = 0; r < R.job[i].n; r++) {
			unsigned h = jct_host_of(R.o, R.job[i].id, r);

			if (++cnt[h] > m)
				m = cnt[h];
		}
	return m < 64 ? m : 64;
}

/* ------------------------------------------------------------------ */
/* The switch: registration, regions                                    */
/* ------------------------------------------------------------------ */

/* Job j's registration: its ranks' and its PS's addresses, its top priority. */
static void job_entry(const struct job *j, struct esa_job *e)
{
	memset(e, 0, sizeof(*e));
	e->nworkers = j->n;
	e->max_prio = top_prio(&R.o->p, j->s);
	char ps[32];

	snprintf(ps, sizeof(ps), "10.9.%u.2", jct_ps_host(R.o, j->id));
	inet_pton(AF_INET, ps, &e->ps.ip);
	e->ps.port = htons(JCT_PS_PORT);
	e->lease_ms = 0;
	for (unsigned r = 0; r < j->n; r++) {
		char ip[32];

		snprintf(ip, sizeof(ip), "10.9.%u.2", jct_host_of(R.o, j->id, r));
		inet_pton(AF_INET, ip, &e->rank[r].ip);
		e->rank[r].port = htons(JCT_PORT_BASE + j->id);
	}
}

/* switchml: a free region for job j, if any. */
static int region_take(struct job *j)
{
	for (unsigned i = 0; i < R.nreg; i++) {
		if (R.reg_owner[i])
			continue;
		R.reg_owner[i] = (int)(j - R.job) + 1;
		j->region = (int)i;
		return 0;
	}
	return -1;
}

/* Hand region j->region to a registered job in place. */
static int job_set_region(struct job *j)
{
	struct esa_job e;

	if (esa_job_read(&R.sw, j->id, &e) || e.state != ESA_JOB_ACTIVE ||
	    esa_job_gen(&e) != j->gen)
		return -ESTALE;
	return esa_job_set_region(&R.sw, j->id, (unsigned)j->region * R.regsize,
				  R.regsize);
}

/* Job j into the switch at its arrival: a region, a home, or neither. */
static int job_register(struct job *j)
{
	char err[ESA_ERR_LEN];
	struct esa_job e;
	int rc;

	job_entry(j, &e);
	if (R.o->policy == ESA_POLICY_SWITCHML) {
		if (R.o->noslot || region_take(j)) {
			/* no region free: no switch memory (all to the PS,
			 * NOSLOT) until one frees up */
			if (!R.o->noslot)
				R.waitq[R.wq_tail++] = (unsigned)(j - R.job);
			goto add;
		}
		e.region_base = (unsigned)j->region * R.regsize;
		e.region_size = R.regsize;
	}
	if (R.o->policy != ESA_POLICY_SWITCHML && R.o->p.home) {
		/* esactl's "region auto": where it meets the fewest homes of
		 * the jobs registered now (the simulator's home_place()) */
		struct esa_home h[JCT_MAX_JOBS];
		unsigned n = 0, size = R.o->p.home < R.o->p.pool ? R.o->p.home : R.o->p.pool;

		for (unsigned k = 0; k < R.wl.njobs; k++)
			if ((R.job[k].state == J_REGISTERED || R.job[k].state == J_DONE) &&
			    R.job[k].home.size)
				h[n++] = R.job[k].home;
		j->home.base = esa_home_place(h, n, R.o->p.pool, size);
		j->home.size = size;
		e.region_base = j->home.base;
		e.region_size = j->home.size;
	}
add:
	rc = esa_job_register(&R.sw, j->id, &e, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "esa_jct: job %u: %s\n", j->id, err);
		return rc;
	}
	j->gen = esa_job_gen(&e);
	return 0;
}

/* A finished job: delete it (its slots are dead at once) and hand its
 * region to the longest waiting job, as esa_sim does. */
static void job_retire(struct job *j, double now)
{
	esa_counters_read(&R.sw, j->id, &j->ctr);
	esa_job_del(&R.sw, j->id);
	esa_deliver_clear(&R.sw, j->id);
	j->gen++;
	j->state = J_DELETED;
	j->home.size = 0;
	if (j->region < 0)
		return;
	R.reg_owner[j->region] = 0;
	j->region = -1;
	while (R.wq_head != R.wq_tail) {
		struct job *n = &R.job[R.waitq[R.wq_head]];

		if (n->state != J_REGISTERED) {
			R.wq_head++;
			continue;
		}
		if (region_take(n))
			break;
		R.wq_head++;
		if (job_set_region(n))
			fprintf(stderr, "esa_jct: job %u: cannot hand over region %d\n",
				n->id, n->region);
		n->t_region = now;
	}
}

/* ------------------------------------------------------------------ */
/* The run                                                             */
/* ------------------------------------------------------------------ */

/* The loaded switch must be the one this run needs. */
static int run_open_switch(const struct jct_opts *o)
{
	const struct sim_params *p = &o->p;
	char err[ESA_ERR_LEN];

	if (esa_open_pinned(&R.sw, o->pin, err, sizeof(err))) {
		fprintf(stderr, "esa_jct: %s\n", err);
		return -1;
	}
	if (R.sw.cfg.policy != o->policy || R.sw.cfg.slots != p->pool ||
	    R.sw.cfg.nvals != p->nvals || R.sw.cfg.max_jobs < R.wl.njobs) {
		fprintf(stderr, "esa_jct: the loaded switch runs %s with %u slots of %u values "
			"and %u jobs; this run needs %s, %u x %u, %u jobs\n",
			esa_policy_names[R.sw.cfg.policy], R.sw.cfg.slots, R.sw.cfg.nvals,
			R.sw.cfg.max_jobs, sim_policy_name(o->policy), p->pool, p->nvals,
			R.wl.njobs);
		esa_close(&R.sw);
		return -1;
	}
	if (fabs((double)R.sw.cfg.stale_ms - p->stale_ms) > 0.5)
		fprintf(stderr, "esa_jct: warning: the switch ages after %u ms, the model "
			"after %g ms\n", R.sw.cfg.stale_ms, p->stale_ms);
	return 0;
}

/* Job i of the workload, its window as esa_sim's, its arrival from t0. */
static void job_init(struct job *j, unsigned i)
{
	j->s = &R.wl.job[i];
	j->id = i;	/* as esa_sim: the same slots for the same chunks */
	j->n = j->s->nworkers;
	/* at most its switchml region or home, from the start, as esa_sim's */
	j->window = sim_job_window(&R.o->p, &R.wl, R.o->policy);
	j->region = -1;
	j->t_arr = R.t0 + (double)j->s->arrival / T_S;
	for (unsigned r = 0; r < j->n; r++) {
		j->w[r].j = j;
		j->w[r].rank = r;
	}
}

/* The jobs, and switchml's regions and queue of jobs waiting for one. */
static int run_init_jobs(const struct jct_opts *o)
{
	R.job = calloc(R.wl.njobs, sizeof(*R.job));
	if (!R.job)
		return -ENOMEM;
	if (o->policy == ESA_POLICY_SWITCHML) {
		sim_swml_regions(&o->p, &R.wl, &R.nreg, &R.regsize);
		R.reg_owner = calloc(R.nreg, sizeof(*R.reg_owner));
		R.waitq = calloc(R.wl.njobs, sizeof(*R.waitq));
		if (!R.reg_owner || !R.waitq)
			return -ENOMEM;
	}
	R.t0 = now_s() + o->lead_ms / 1e3;
	for (unsigned i = 0; i < R.wl.njobs; i++)
		job_init(&R.job[i], i);
	R.xdp_share = host_workers_max();
	return 0;
}

/* A failed or overlong run: the jobs still to come never start, and
 * workers waiting for a registration give up.  Under R.lock. */
static void sched_abort(unsigned next, unsigned *done)
{
	for (unsigned i = next; i < R.wl.njobs; i++) {
		struct job *j = &R.job[i];

		if (j->state == J_PENDING) {
			j->state = J_DELETED;
			j->failed = 1;
			(*done)++;
		} else if (j->state == J_STARTED) {
			j->state = J_REGISTERED;
			j->failed = 1;
		}
	}
	pthread_cond_broadcast(&R.cond);
}

/* Start the workers of the jobs due in 50 ms, register those due now;
 * *wake: when the next of them is due.  Under R.lock. */
static void sched_start(unsigned next, double now, double *wake)
{
	for (unsigned i = next; i < R.wl.njobs; i++) {
		struct job *j = &R.job[i];

		if (j->state == J_PENDING && now >= j->t_arr - 0.05) {
			j->state = J_STARTED;
			j->running = j->n;
			for (unsigned r = 0; r < j->n; r++)
				pthread_create(&j->w[r].th, NULL, jct_worker_main, &j->w[r]);
		}
		if (j->state == J_STARTED && now >= j->t_arr) {
			if (i == 0)
				jct_cpu_start();
			if (job_register(j)) {
				atomic_store(&R.abort, 1);
				j->failed = 1;
			}
			j->t_reg = now;
			j->state = J_REGISTERED;
			pthread_cond_broadcast(&R.cond);
		}
		if (j->state == J_PENDING) {
			*wake = fmin(*wake, j->t_arr - 0.05);
			break;
		}
		if (j->state == J_STARTED)
			*wake = fmin(*wake, j->t_arr);
	}
}

/* Delete the jobs whose workers have all finished.  Under R.lock. */
static void sched_retire(unsigned next, unsigned *done)
{
	for (unsigned i = 0; i < next; i++) {
		struct job *j = &R.job[i];

		if (j->state != J_REGISTERED || j->running)
			continue;
		j->state = J_DONE;
		for (unsigned r = 0; r < j->n; r++)
			pthread_join(j->w[r].th, NULL);
		job_retire(j, now_s());
		for (unsigned r = 0; r < j->n; r++) {
			if (j->w[r].ew)
				esa_worker_close(j->w[r].ew);
			j->w[r].ew = NULL;
		}
		(*done)++;
	}
}

/* Wait on R.cond until wake (monotonic), between 0.5 and 100 ms.  Condition
 * variables use CLOCK_REALTIME: the wait is relative. */
static void sched_wait(double wake)
{
	double d = wake - now_s();
	struct timespec rt, ts;

	if (d < 0.0005)
		d = 0.0005;
	if (d > 0.1)
		d = 0.1;
	clock_gettime(CLOCK_REALTIME, &rt);
	ts.tv_sec = rt.tv_sec + (time_t)d;
	ts.tv_nsec = rt.tv_nsec + (long)((d - (time_t)d) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&R.cond, &R.lock, &ts);
}

/*
 * The schedule: a job's worker threads start 50 ms before its arrival
 * (they open their sockets, then wait); at its arrival the job is
 * registered and its workers start computing.  Finished jobs are deleted
 * at once.
 */
static void run_schedule(const struct jct_opts *o)
{
	double deadline = R.t0 + o->max_run_s;
	unsigned next = 0, done = 0;

	pthread_mutex_lock(&R.lock);
	while (done < R.wl.njobs) {
		double now = now_s(), wake = deadline;

		if (now > deadline && !atomic_load(&R.abort)) {
			fprintf(stderr, "esa_jct: run longer than %g s: giving up\n", o->max_run_s);
			atomic_store(&R.abort, 1);
			pthread_cond_broadcast(&R.cond);
			deadline = now + 60;	/* workers see the abort within 200 ms */
		}
		if (atomic_load(&R.abort))
			sched_abort(next, &done);
		sched_start(next, now, &wake);
		while (next < R.wl.njobs && R.job[next].state >= J_REGISTERED)
			next++;
		sched_retire(next, &done);
		if (done == R.wl.njobs)
			break;
		sched_wait(wake);
	}
	pthread_mutex_unlock(&R.lock);
}

/* Whether every job finished; the failed ones' errors said.  *last: when
 * the last one ended. */
static int run_check(const struct jct_opts *o, double *last)
{
	int ok = 1;

	*last = R.t0;
	for (unsigned i = 0; i < R.wl.njobs; i++) {
		struct job *j = &R.job[i];

		if (j->failed || j->t_end <= 0) {
			ok = 0;
			for (unsigned r = 0; r < j->n; r++)
				if (j->w[r].rc)
					fprintf(stderr, "esa_jct: %s: job %u rank %u: %s\n",
						sim_policy_name(o->policy), j->id, r,
						j->w[r].err[0] ? j->w[r].err :
						esa_strerror(j->w[r].rc));
		}
		if (j->t_end > *last)
			*last = j->t_end;
	}
	return ok;
}

int jct_run(struct jct_opts *o)
{
	pthread_t sampler;
	double last;
	int ok, rc = 2;
	FILE *f;

	if (o->policy < 0 || !o->pin[0] || !o->prefix[0] || !o->out) {
		fprintf(stderr, "esa_jct run: --policy, --pin, --prefix and --out are needed\n");
		return 2;
	}
	memset(&R, 0, sizeof(R));
	R.o = o;
	pthread_mutex_init(&R.lock, NULL);
	pthread_cond_init(&R.cond, NULL);
	if (sim_workload_gen(&o->p, &R.wl)) {
		fprintf(stderr, "esa_jct: bad workload parameters\n");
		return 2;
	}
	if (run_open_switch(o))
		goto out_wl;
	if (run_init_jobs(o))
		goto out_sw;
	atomic_store(&R.sampling, 1);
	pthread_create(&sampler, NULL, jct_sampler_main, NULL);
	run_schedule(o);
	atomic_store(&R.sampling, 0);
	pthread_join(sampler, NULL);

	ok = run_check(o, &last);
	f = fopen(o->out, "w");
	if (!f) {
		fprintf(stderr, "esa_jct: %s: %s\n", o->out, strerror(errno));
		goto out_sw;
	}
	jct_write_run(f, last - R.t0, ok);
	fclose(f);
	rc = ok ? 0 : 1;
out_sw:
	esa_close(&R.sw);
out_wl:
	sim_workload_free(&R.wl);
	return rc;
}
