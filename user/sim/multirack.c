// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_sim --multirack: one seeded workload on racks, each policy flat (one
 * switch, the spine, that the leaves only route to) and on two levels (a
 * switch at every leaf and at the spine), the same jobs in the same places.
 * It reports the average JCT of each, and the bytes crossing the leaf-spine
 * links per allreduce, against what two levels should save: a job's ranks
 * per leaf.  Columns: average JCT flat and on two levels, and their ratio;
 * leaf-spine KB per allreduce (all jobs) flat and on two levels; the ratio
 * of those bytes for the jobs across racks, and its goal (flat bytes over
 * flat bytes / ranks per leaf: the bytes-weighted ranks per leaf); packets
 * to the PS (partials, collisions) and resends, flat and on two levels;
 * packets of one-rack jobs at the spine's switch on two levels (0).
 * docs/simulator.md, "Racks"; docs/evaluation.md, "Multi-rack".
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "sim.h"

#define NPOL	__ESA_POLICY_MAX

/* One policy at one level count: what the report needs. */
struct mr_point {
	int	ran, finished;
	double	jct;		/* average, s */
	double	ar_bytes;	/* leaf-spine bytes per allreduce, all jobs */
	double	span_bytes;	/* ... of the jobs across racks, in total */
	double	span_goal;	/* flat bytes of those / their ranks per leaf */
	uint64_t local_spine;	/* packets of one-rack jobs the spine took */
	uint64_t resends, fallback;
};

static int mr_run(const struct sim_params *p, const struct sim_workload *w,
		  int pol, struct mr_point *m)
{
	struct sim_result r;
	double iters = 0;
	int rc = sim_run(p, w, pol, &r);

	memset(m, 0, sizeof(*m));
	if (rc < 0)
		return -1;
	m->ran = 1;
	m->finished = rc == 0;
	m->jct = r.avg_jct;
	for (unsigned i = 0; i < w->njobs; i++) {
		const struct sim_job_spec *j = &w->job[i];

		iters += j->iters;
		if (r.job_racks[i] > 1) {
			m->span_bytes += r.job_uplink[i];
			m->span_goal += r.job_uplink[i] * r.job_racks[i] / j->nworkers;
		} else {
			m->local_spine += r.job_spine_rx[i];
		}
	}
	m->ar_bytes = r.uplink_bytes / iters;
	m->resends = r.resends;
	m->fallback = r.sw_fallback;
	sim_result_free(&r);
	return 0;
}

static void mr_header(const struct sim_params *p, const struct sim_workload *w)
{
	unsigned span = 0, per = p->rack_workers ? p->rack_workers : 4;

	for (unsigned i = 0; i < w->njobs; i++)
		span += p->racks > 1 && w->job[i].nworkers > per;
	printf("multirack-sim: %u racks, %u ranks of a job per rack, leaf-spine links "
	       "%g Gbps (hosts %g Gbps), pool %u a switch, window %u, seed %llu\n",
	       p->racks, per, p->uplink_gbps > 0 ? p->uplink_gbps : p->link_gbps,
	       p->link_gbps, p->pool, p->window, (unsigned long long)p->seed);
	printf("multirack-sim: %u jobs (%u across racks), load %g, mean JCT alone "
	       "%.3f ms (one switch)\n", w->njobs, span, p->load,
	       w->mean_ideal_s * 1e3);
	printf("%-9s %9s %9s %7s %10s %10s %6s %6s %9s %9s %9s %9s %6s\n",
	       "policy", "flat_ms", "2lvl_ms", "speedup", "flat_KB/ar", "2lvl_KB/ar",
	       "ratio", "goal", "flat_ps", "2lvl_ps", "flat_rsnd", "2lvl_rsnd",
	       "local");
}

/* The table's row of one policy. */
static void mr_row(int pol, const struct mr_point *f, const struct mr_point *t)
{
	double ratio = t->span_bytes > 0 ? f->span_bytes / t->span_bytes : NAN;
	double goal = f->span_goal > 0 ? f->span_bytes / f->span_goal : NAN;

	printf("%-9s %9.3f %9.3f %7.3f %10.1f %10.1f %6.2f %6.2f %9llu %9llu "
	       "%9llu %9llu %6llu%s\n",
	       sim_policy_name(pol), f->jct * 1e3, t->jct * 1e3, f->jct / t->jct,
	       f->ar_bytes / 1e3, t->ar_bytes / 1e3, ratio, goal,
	       (unsigned long long)f->fallback, (unsigned long long)t->fallback,
	       (unsigned long long)f->resends, (unsigned long long)t->resends,
	       (unsigned long long)t->local_spine,
	       f->finished && t->finished ? "" : "  UNFINISHED");
}

int sim_multirack(const struct sim_params *base, const struct sim_mr_opts *o)
{
	struct mr_point m[NPOL][2];
	struct sim_params p[2] = { *base, *base };
	struct sim_workload w;
	double ratio = NAN;
	int fail = 0, first = 0;

	if (!base->racks) {
		fprintf(stderr, "esa_sim: --multirack needs --racks N (at least 1)\n");
		return 2;
	}
	p[0].levels = 1;
	p[1].levels = 2;
	if (sim_workload_gen(base, &w)) {
		fprintf(stderr, "esa_sim: bad workload parameters\n");
		return 2;
	}
	for (int pol = 0; pol < NPOL; pol++)
		for (int l = 0; l < 2; l++) {
			m[pol][l].ran = 0;
			if (!(o->polmask & 1u << pol))
				continue;
			if (mr_run(&p[l], &w, pol, &m[pol][l])) {
				fprintf(stderr, "esa_sim: %s: simulation failed\n",
					sim_policy_name(pol));
				sim_workload_free(&w);
				return 1;
			}
			fail |= !m[pol][l].finished;
		}
	if (!o->quiet)
		mr_header(base, &w);
	for (int pol = NPOL - 1; pol >= 0; pol--) {	/* esa's wins */
		if (!m[pol][0].ran)
			continue;
		first = pol;
		ratio = m[pol][1].span_bytes > 0 ?
			m[pol][0].span_bytes / m[pol][1].span_bytes : NAN;
	}
	for (int pol = 0; pol < NPOL && !o->quiet; pol++)
		if (m[pol][0].ran)
			mr_row(pol, &m[pol][0], &m[pol][1]);
	/* The line: esa's figures (or the first policy run's), then each's. */
	printf("multirack-sim: uplink_bytes_ratio=%.2f jct_speedup_vs_flat=%.3f",
	       ratio, m[first][0].jct / m[first][1].jct);
	for (int pol = 0; pol < NPOL; pol++)
		if (m[pol][0].ran)
			printf(" %s=%.3f", sim_policy_name(pol),
			       m[pol][0].jct / m[pol][1].jct);
	printf("\n");
	sim_workload_free(&w);
	if (fail)
		fprintf(stderr, "esa_sim: some jobs did not finish within %g s simulated\n",
			base->max_sim_s);
	return fail;
}
