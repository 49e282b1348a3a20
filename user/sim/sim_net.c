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

/* Switch -> worker `rank` of job j (from the switch the rank is under). */
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

/* Box b -> worker `rank`: from the spine, through the rank's leaf. */
void sim_to_rank(struct sim *s, unsigned b, struct job *j, unsigned rank,
		 const struct pkt *p)
{
	if (b == 0 && s->racks)
		sim_down(s, j->leaf[rank], p, rank, j->leaf[rank]);
	else
		sim_to_worker(s, j, rank, p);
}

/* Box b -> the PS of job j, which is behind the spine. */
void sim_to_ps(struct sim *s, unsigned b, struct job *j, const struct pkt *p)
{
	struct pshost *h = &s->ps[j->ps];
	stime_t t;

	if (b) {
		sim_up(s, b, p, DST_TO_PS, 0);
		return;
	}
	t = sim_link_tx(&h->down, s->now, s->ps_pkt_tx);
	if (s->P->loss_ps && sim_lose(s)) {
		s->R->lost++;
		return;
	}
	sim_push(s, t + s->prop, EV_AT_PS, p, DST_NONE, 0);
}

/*
 * PS -> the spine (or the one switch): a result for worker dst, or an ack
 * for the box that holds the job's sums.
 */
void sim_ps_send(struct sim *s, struct job *j, const struct pkt *p,
		 unsigned dst)
{
	struct pshost *h = &s->ps[j->ps];
	stime_t t = sim_link_tx(&h->up, s->now, s->ps_pkt_tx);

	if (s->P->loss_ps && sim_lose(s)) {
		s->R->lost++;
		return;
	}
	sim_push(s, t + s->prop, EV_AT_SWITCH, p, dst,
		 EV_AT(0, dst == DST_NONE ? j->top : 0));
}

/* A packet on a leaf-spine link: counted, maybe lost, else at box `at`. */
static void uplink(struct sim *s, struct link *l, unsigned at,
		   const struct pkt *p, unsigned dst, unsigned to)
{
	double b = sim_pkt_bytes(s->P->nvals);
	stime_t t = sim_link_tx(l, s->now, s->up_pkt_tx);

	s->R->uplink_pkts++;
	s->R->uplink_bytes += b;
	s->R->job_uplink[p->job] += b;
	if (sim_lose(s)) {
		s->R->lost++;
		s->R->lost_data += p->type == ESA_T_DATA && dst == DST_NONE;
		return;
	}
	sim_push(s, t + s->prop, EV_AT_SWITCH, p, dst, EV_AT(at, to));
}

/* Leaf b -> the spine, for box `to` (or dst). */
void sim_up(struct sim *s, unsigned b, const struct pkt *p, unsigned dst,
	    unsigned to)
{
	uplink(s, &s->box[b].up, 0, p, dst, to);
}

/* The spine -> leaf l, for box `to` (or dst). */
void sim_down(struct sim *s, unsigned l, const struct pkt *p, unsigned dst,
	      unsigned to)
{
	uplink(s, &s->box[l].down, l, p, dst, to);
}

/* A packet at box b for box `to`: one hop on, up or down. */
void sim_forward(struct sim *s, unsigned b, unsigned to, const struct pkt *p)
{
	if (b)
		sim_up(s, b, p, DST_NONE, to);
	else
		sim_down(s, to, p, DST_NONE, to);
}
