// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_sim accounting: what the simulator measures beyond the switch's own
 * state: slot classes over time (utilisation), and which chunks completed
 * or went to the PS.
 */
#include <stdlib.h>
#include "sim_int.h"

/* ------------------------------------------------------------------ */
/* Utilisation accounting                                              */
/* ------------------------------------------------------------------ */

static unsigned occ_now(const struct sim *s)
{
	unsigned o = s->n_busy + s->n_held;

	return s->n_resv > o ? s->n_resv : o;
}

void sim_ts_advance(struct sim *s)
{
	stime_t t = s->t_last, end;
	unsigned b, occ = occ_now(s);

	if (s->now <= t)
		return;
	s->i_busy += (uint64_t)s->n_busy * (s->now - t);
	s->i_held += (uint64_t)s->n_held * (s->now - t);
	s->i_occ += (uint64_t)occ * (s->now - t);
	while (t < s->now) {
		b = (t - s->t_first) / s->bin;
		end = s->t_first + (stime_t)(b + 1) * s->bin;
		if (end > s->now)
			end = s->now;
		if (b >= s->capbins) {
			unsigned nc = s->capbins ? s->capbins * 2 : 256;

			while (nc <= b)
				nc *= 2;
			double *x = realloc(s->b_busy, nc * sizeof(double));
			double *y = x ? realloc(s->b_held, nc * sizeof(double)) : NULL;
			double *z = y ? realloc(s->b_occ, nc * sizeof(double)) : NULL;

			if (x)
				s->b_busy = x;
			if (y)
				s->b_held = y;
			if (!z) {
				s->oom = 1;
				break;
			}
			s->b_occ = z;
			for (unsigned i = s->capbins; i < nc; i++)
				s->b_busy[i] = s->b_held[i] = s->b_occ[i] = 0;
			s->capbins = nc;
		}
		s->b_busy[b] += (double)s->n_busy * (end - t);
		s->b_held[b] += (double)s->n_held * (end - t);
		s->b_occ[b] += (double)occ * (end - t);
		if (b + 1 > s->nbins)
			s->nbins = b + 1;
		t = end;
	}
	s->t_last = s->now;
}

void sim_cls_set(struct sim *s, unsigned b, uint32_t idx, int cls)
{
	struct slot_aux *a = &s->box[b].aux[idx];

	if (a->cls == cls)
		return;
	sim_ts_advance(s);
	if (a->cls == CL_BUSY)
		s->n_busy--;
	else if (a->cls == CL_HELD)
		s->n_held--;
	if (cls == CL_BUSY)
		s->n_busy++;
	else if (cls == CL_HELD)
		s->n_held++;
	a->cls = cls;
}

void sim_mark_done(struct sim *s, struct job *j, uint32_t seq, int in_switch)
{
	if (seq >= j->total)
		return;
	if (j->done_bits[seq >> 3] & (1u << (seq & 7))) {
		s->R->redundant++;
		return;
	}
	j->done_bits[seq >> 3] |= 1u << (seq & 7);
	s->R->chunks_done++;
	if (in_switch)
		s->R->sw_complete++;
	else
		s->R->ps_complete++;
}

/*
 * Leaf b sent the sum of its ranks of chunk seq up: once per chunk, or the
 * leaf added some rank twice.
 */
void sim_mark_up(struct sim *s, struct job *j, unsigned b, uint32_t seq)
{
	uint8_t *bits = j->up_bits + (size_t)b * (j->total / 8 + 1);

	s->R->up_complete++;
	if (seq >= j->total)
		return;
	if (bits[seq >> 3] & (1u << (seq & 7)))
		s->R->up_redundant++;
	bits[seq >> 3] |= 1u << (seq & 7);
}

void sim_mark_diverted(struct job *j, uint32_t seq)
{
	if (seq < j->total)
		j->div_bits[seq >> 3] |= 1u << (seq & 7);
}

int sim_is_diverted(const struct job *j, uint32_t seq)
{
	return seq < j->total &&
	       ((j->div_bits[seq >> 3] | j->done_bits[seq >> 3]) &
		(1u << (seq & 7)));
}

/* The utilisation accounting must agree with the slots themselves. */
void sim_acct_check(struct sim *s)
{
	unsigned busy = 0, held = 0;

	for (unsigned b = 0; b < s->nbox; b++) {
		const struct box *x = &s->box[b];

		for (unsigned i = 0; x->esa && i < s->P->pool; i++) {
			const struct esa_slot *sl = &x->slot[i];
			int cls = CL_FREE;

			if (sl->state != ESA_SLOT_FREE)
				cls = !sim_owner_alive(s, sl->job, sl->gen) ? CL_DEAD :
				      sl->state == ESA_SLOT_BUSY ? CL_BUSY : CL_HELD;
			if (cls != x->aux[i].cls)
				s->R->acct_errors++;
			busy += cls == CL_BUSY;
			held += cls == CL_HELD;
		}
	}
	if (busy != s->n_busy || held != s->n_held)
		s->R->acct_errors++;
}
