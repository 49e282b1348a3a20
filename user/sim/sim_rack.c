// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_sim boxes: the switches of a run and where each job lives on them.
 * Without racks, one switch (box 0) with every job's ranks.  With racks
 * (--racks), box 0 is the spine and boxes 1 .. racks the leaves; a job's
 * ranks sit in blocks of rack_workers on consecutive racks from a seeded
 * first one, the same whatever the policy or the levels, and the job is
 * registered as esactl would register it (docs/design.md, "Two levels"):
 *
 *   two levels, ranks under several leaves: at each of those leaves with
 *     its ranks there and its spine upstream (complete sums go up), at the
 *     spine with the leaves as members, each standing for its ranks;
 *   two levels, ranks under one leaf: at that leaf alone, as its top;
 *   flat (levels 1): at the spine alone, which the leaves only route to.
 */
#include <stdlib.h>
#include "sim_int.h"

/* Switchml: the pool in equal regions, as many as jobs would run at once. */
static int swml_regions(struct sim *s, struct box *x)
{
	sim_swml_regions(s->P, s->W, &x->nreg, &x->regsize);
	x->reg_owner = calloc(x->nreg, sizeof(*x->reg_owner));
	x->waitq = calloc(s->W->njobs, sizeof(*x->waitq));
	return x->reg_owner && x->waitq ? 0 : -1;
}

int sim_boxes_setup(struct sim *s)
{
	const struct sim_params *P = s->P;

	s->racks = P->racks;
	s->levels = P->levels ? P->levels : 2;
	s->nbox = s->racks + 1;
	s->box = calloc(s->nbox, sizeof(*s->box));
	if (!s->box)
		return -1;
	for (unsigned b = 0; b < s->nbox; b++) {
		struct box *x = &s->box[b];

		/* flat: the leaves are routers */
		x->esa = b == 0 || s->levels == 2;
		if (!x->esa)
			continue;
		s->esa_boxes++;
		x->slot = calloc(P->pool, sizeof(*x->slot));
		x->tombs = calloc((size_t)s->W->njobs * ESA_TOMB_RING,
				  sizeof(*x->tombs));
		x->aux = calloc(P->pool, sizeof(*x->aux));
		if (!x->slot || !x->tombs || !x->aux)
			return -1;
		if (s->policy == ESA_POLICY_SWITCHML && swml_regions(s, x))
			return -1;
	}
	return 0;
}

void sim_boxes_free(struct sim *s)
{
	for (unsigned b = 0; s->box && b < s->nbox; b++) {
		free(s->box[b].slot);
		free(s->box[b].tombs);
		free(s->box[b].aux);
		free(s->box[b].reg_owner);
		free(s->box[b].waitq);
	}
	free(s->box);
}

/* Job j at box b: the ranks it sums there, and its members. */
static void reg_at(struct job *j, unsigned b, uint64_t mask, unsigned members,
		   int up, int leaves)
{
	j->at[b].mask = mask;
	j->at[b].members = members;
	j->at[b].up = up;
	j->at[b].leaves = leaves;
}

int sim_job_place(struct sim *s, struct job *j)
{
	unsigned n = j->spec->nworkers, per, first, top = 0;
	uint64_t m[SIM_MAX_RACKS + 1] = {};

	for (unsigned b = 0; b < s->nbox; b++)
		j->at[b].region = -1;
	if (!s->racks) {
		reg_at(j, 0, j->full, n, 0, 0);
		return 0;
	}
	per = s->P->rack_workers ? s->P->rack_workers : 4;
	first = sim_mix64(s->P->seed ^ 0x7ac5ULL ^ (uint64_t)(j - s->job) << 20) %
		s->racks;
	for (unsigned r = 0; r < n; r++) {
		j->leaf[r] = 1 + (first + r / per) % s->racks;
		m[j->leaf[r]] |= 1ULL << r;
	}
	for (unsigned b = 1; b < s->nbox; b++) {
		if (m[b])
			top = b;
		j->racks += !!m[b];
	}
	if (s->levels == 1 || j->racks > 1) {
		reg_at(j, 0, j->full, s->levels == 1 ? n : j->racks, 0,
		       s->levels == 2);
		top = 0;
	}
	j->top = top;
	if (s->levels == 1)
		return 0;
	for (unsigned b = 1; b < s->nbox; b++)
		if (m[b])
			reg_at(j, b, m[b], __builtin_popcountll(m[b]),
			       j->racks > 1, 0);
	if (j->racks == 1)
		return 0;
	j->up_bits = calloc(s->nbox, j->total / 8 + 1);
	return j->up_bits ? 0 : -1;
}
