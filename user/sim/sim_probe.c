// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_sim probe: the switch alone, fed packet by packet (directed tests).
 */
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "sim_int.h"

/* ------------------------------------------------------------------ */
/* Probe: the switch alone, fed packet by packet (directed tests)       */
/* ------------------------------------------------------------------ */

struct sim_probe {
	struct sim s;
	struct sim_result r;
};

struct sim_probe *sim_probe_new(const struct sim_params *p,
				const struct sim_workload *w, int policy)
{
	struct sim_probe *pr = calloc(1, sizeof(*pr));

	if (!pr)
		return NULL;
	if (sim_setup(&pr->s, p, w, policy, &pr->r))
		goto fail;
	for (unsigned i = 0; i < w->njobs; i++)
		if (sim_job_arrive(&pr->s, &pr->s.job[i]))
			goto fail;
	pr->s.h.n = 0;	/* nothing runs but what the test feeds */
	return pr;
fail:
	sim_probe_free(pr);
	return NULL;
}

static int probe_out(struct sim_probe *pr, uint64_t before,
		     struct sim_probe_out *out, int max)
{
	struct heap *h = &pr->s.h;
	int n = 0;

	/* Only this call's pushes are in the heap; order them by push. */
	for (uint64_t o = before; o < pr->s.ord; o++) {
		for (size_t i = 0; i < h->n; i++) {
			const struct ev *e = &h->a[i];

			if (e->ord != o)
				continue;
			if (n < max) {
				struct sim_probe_out *x = &out[n];

				x->to = e->kind == EV_AT_WORKER ? SIM_TO_WORKER :
					e->kind == EV_AT_PS ? SIM_TO_PS : SIM_TO_SWITCH;
				x->dst = e->dst;
				x->type = e->p.type;
				x->reason = e->p.reason;
				x->prio = e->p.prio;
				x->flags = e->p.flags;
				x->job = e->p.job;
				x->rank = e->p.rank;
				x->seq = e->p.seq;
				x->bitmap = e->p.bitmap;
			}
			n++;
		}
	}
	h->n = 0;
	return n;
}

/* Packet p into box 0; the action it took and what it sent. */
static int probe_feed(struct sim_probe *pr, double t_us, struct pkt *p,
		      struct sim_probe_out *out, int max, int *nout)
{
	struct sim *s = &pr->s;
	uint64_t before = s->ord, acts[__ESA_A_MAX], noslot;
	int act = -1;

	memcpy(acts, s->R->act, sizeof(acts));
	noslot = s->R->c[ESA_C_NOSLOT];
	s->now = (stime_t)llround(t_us * T_US);
	sim_sw_proc(s, 0, 0, p, DST_NONE);
	for (int a = 0; a < __ESA_A_MAX; a++)
		if (s->R->act[a] != acts[a])
			act = a;
	if (s->R->c[ESA_C_NOSLOT] != noslot)
		act = SIM_A_NOSLOT;
	*nout = probe_out(pr, before, out, max);
	return act;
}

int sim_probe_data(struct sim_probe *pr, double t_us, unsigned job,
		   unsigned rank, uint32_t seq, uint8_t prio, int resend,
		   struct sim_probe_out *out, int max, int *nout)
{
	struct pkt p = {
		.bitmap = 1ULL << rank,
		.seq = seq,
		.job = job,
		.rank = rank,
		.type = ESA_T_DATA,
		.flags = resend ? ESA_F_RESEND : 0,
		.prio = prio,
	};

	return probe_feed(pr, t_us, &p, out, max, nout);
}

int sim_probe_leaf(struct sim_probe *pr, double t_us, unsigned job,
		   unsigned rank, uint32_t seq, uint8_t prio,
		   struct sim_probe_out *out, int max, int *nout)
{
	const struct job *j = &pr->s.job[job];
	uint64_t set = j->at[j->leaf[rank % ESA_MAX_WORKERS]].mask;
	struct pkt p = {
		.bitmap = set,
		.seq = seq,
		.job = job,
		.rank = set ? esa_lowest_rank(set) : rank,
		.type = ESA_T_DATA,
		.flags = ESA_F_LEAF,
		.prio = prio,
	};

	return probe_feed(pr, t_us, &p, out, max, nout);
}

int sim_probe_ack(struct sim_probe *pr, double t_us, unsigned job,
		  uint32_t seq, struct sim_probe_out *out, int max, int *nout)
{
	struct sim *s = &pr->s;
	uint64_t before = s->ord;
	struct pkt p = {
		.bitmap = s->job[job].full,
		.seq = seq,
		.job = job,
		.rank = ESA_RANK_NONE,
		.type = ESA_T_ACK,
	};

	s->now = (stime_t)llround(t_us * T_US);
	sim_sw_proc(s, 0, 0, &p, DST_NONE);
	*nout = probe_out(pr, before, out, max);
	return 0;
}

const struct esa_slot *sim_probe_slot(struct sim_probe *pr, unsigned job,
				      uint32_t seq)
{
	struct sim *s = &pr->s;
	const struct job *j = &s->job[job];
	int64_t i = esa_slot_index(s->policy, job, seq, s->P->pool,
				   j->at[0].region_base, j->at[0].region_size);

	return i < 0 ? NULL : &s->box[0].slot[i];
}

int sim_probe_tomb(struct sim_probe *pr, unsigned job, uint32_t seq)
{
	return esa_tomb_kind(sim_tomb_of(&pr->s, 0, job, seq),
			     sim_job_gen(&pr->s.job[job]), seq);
}

void sim_probe_end_job(struct sim_probe *pr, double t_us, unsigned job)
{
	pr->s.now = (stime_t)llround(t_us * T_US);
	if (pr->s.job[job].state == JS_RUN)
		sim_job_finish(&pr->s, &pr->s.job[job]);
	pr->s.h.n = 0;
}

const struct sim_result *sim_probe_result(const struct sim_probe *pr)
{
	return &pr->r;
}

void sim_probe_free(struct sim_probe *pr)
{
	if (!pr)
		return;
	if (pr->s.W)
		sim_free(&pr->s);
	sim_result_free(&pr->r);
	free(pr);
}
