// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_sim links: loss, serialisation, and the hops between workers, the
 * switch and the parameter servers.
 */
#include "sim_int.h"

int sim_lose(struct sim *s)
{
	if (s->P->loss <= 0)
		return 0;
	s->rng = sim_mix64(s->rng);
	return (s->rng >> 11) * (1.0 / 9007199254740992.0) < s->P->loss;
}

/* Serialise a packet on a link; return when it has left the transmitter. */
stime_t sim_link_tx(struct link *l, stime_t t, stime_t tx)
{
	if (l->free > t)
		t = l->free;
	t += tx;
	l->free = t;
	return t;
}

/* ------------------------------------------------------------------ */
/* Sending                                                             */
/* ------------------------------------------------------------------ */

/* Switch -> worker `rank` of job j. */
void sim_to_worker(struct sim *s, struct job *j, unsigned rank,
		      const struct pkt *p)
{
	stime_t t = sim_link_tx(&j->w[rank].down, s->now, s->pkt_tx);

	if (sim_lose(s)) {
		s->R->lost++;
		return;
	}
	sim_push(s, t + s->prop, EV_AT_WORKER, p, rank, 0);
}

/* Switch -> the PS of job j. */
void sim_to_ps(struct sim *s, struct job *j, const struct pkt *p)
{
	struct pshost *h = &s->ps[j->ps];
	stime_t t = sim_link_tx(&h->down, s->now, s->ps_pkt_tx);

	if (s->P->loss_ps && sim_lose(s)) {
		s->R->lost++;
		return;
	}
	sim_push(s, t + s->prop, EV_AT_PS, p, DST_NONE, 0);
}

/* PS -> switch (an ack, or a result for worker dst). */
void sim_ps_send(struct sim *s, struct job *j, const struct pkt *p,
		    unsigned dst)
{
	struct pshost *h = &s->ps[j->ps];
	stime_t t = sim_link_tx(&h->up, s->now, s->ps_pkt_tx);

	if (s->P->loss_ps && sim_lose(s)) {
		s->R->lost++;
		return;
	}
	sim_push(s, t + s->prop, EV_AT_SWITCH, p, dst, 0);
}
