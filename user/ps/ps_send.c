// SPDX-License-Identifier: GPL-2.0
/*
 * What the PS sends (ps_int.h), through the tx callback: results to
 * workers, a sum for every worker to the switch (SUM), policy atp's ACK,
 * and FETCH, asking workers for their copy.
 */
#include <string.h>

#include "ps_int.h"

static void hdr(struct esa_hdr *h, uint8_t type, uint8_t flags, uint16_t job,
		uint64_t bitmap, uint32_t seq, uint16_t count)
{
	esa_hdr_init(h, type, job, ESA_RANK_NONE, bitmap, seq, count);
	h->flags = flags;
}

/* Send result i of job j to the ranks in `to`. */
void ps_send_result(struct ps *ps, struct ps_job *j, int32_t i, uint64_t to, bool answer)
{
	struct ps_result *r = &j->res[i];

	hdr((struct esa_hdr *)ps->txbuf, ESA_T_RESULT, r->flags, j->cfg.id, j->full, r->seq,
	    ps->o.nvals);
	((struct esa_hdr *)ps->txbuf)->reason = r->why;
	memcpy(ps->txbuf + ESA_HDR_LEN, ps_res_vals(ps, j, i), ps->o.nvals * 4);
	for (int k = 0; k < j->cfg.nworkers; k++) {
		if (!(to & (1ULL << k)))
			continue;
		ps->tx(ps->ctx, &j->cfg.ps, &j->cfg.rank[k], ps->txbuf,
		       ESA_HDR_LEN + 4 * ps->o.nvals);
		j->c[PS_C_RESULT_TX]++;
		j->c[PS_C_RESEND_ANSWER] += answer;
	}
}

/*
 * Result i of job j, which every worker needs, to the switch as one SUM:
 * the switch sends it to them (from its address, with our reason).
 */
void ps_send_sum(struct ps *ps, struct ps_job *j, int32_t i)
{
	struct ps_result *r = &j->res[i];

	hdr((struct esa_hdr *)ps->txbuf, ESA_T_SUM, r->flags, j->cfg.id, j->full, r->seq,
	    ps->o.nvals);
	((struct esa_hdr *)ps->txbuf)->reason = r->why;
	memcpy(ps->txbuf + ESA_HDR_LEN, ps_res_vals(ps, j, i), ps->o.nvals * 4);
	ps->tx(ps->ctx, &j->cfg.ps, &ps->o.sw[0], ps->txbuf, ESA_HDR_LEN + 4 * ps->o.nvals);
	j->c[PS_C_SUM_TX]++;
}

/* Policy atp: the held sum back to the switch, which frees its slot. */
void ps_send_ack(struct ps *ps, struct ps_job *j, int32_t i)
{
	struct ps_result *r = &j->res[i];

	if (!ps->o.nsw) {
		j->c[PS_C_NO_SWITCH]++;
		return;
	}
	hdr((struct esa_hdr *)ps->txbuf, ESA_T_ACK, r->flags, j->cfg.id, j->full, r->seq,
	    ps->o.nvals);
	memcpy(ps->txbuf + ESA_HDR_LEN, ps_res_vals(ps, j, i), ps->o.nvals * 4);
	ps->tx(ps->ctx, &j->cfg.ps, &ps->o.sw[r->holder], ps->txbuf, ESA_HDR_LEN + 4 * ps->o.nvals);
	r->held = 1;
	j->c[PS_C_ACK_TX]++;
}

/*
 * Ask the ranks in `to` for the result of pending chunk pi.  The bitmap says
 * which ranks' pieces the PS holds: a worker that lacks the result learns
 * whom the chunk waits for (libesa names them when it gives up).
 */
void ps_send_fetch(struct ps *ps, struct ps_job *j, int32_t pi, uint64_t to)
{
	struct ps_pend *p = &j->pend[pi];

	hdr((struct esa_hdr *)ps->txbuf, ESA_T_FETCH, 0, j->cfg.id,
	    (p->m.multi | p->m.single) & j->full, p->seq, 0);
	p->asked |= to;
	for (int k = 0; k < j->cfg.nworkers; k++) {
		if (!(to & (1ULL << k)))
			continue;
		ps->tx(ps->ctx, &j->cfg.ps, &j->cfg.rank[k], ps->txbuf, ESA_HDR_LEN);
		j->c[PS_C_FETCH_TX]++;
	}
}
