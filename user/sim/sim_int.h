/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * esa_sim's insides, shared by its parts; the front ends see only sim.h.
 * From the top, each calling only those below it: sim_probe.c (the switch
 * fed packet by packet), sim_engine.c (a run: setup, the event loop,
 * results), sim_worker.c (workers and jobs), sim_ps.c (parameter servers),
 * sim_switch.c (a switch), sim_net.c (links and hops), sim_acct.c (slot
 * accounting, chunk completions), sim_rack.c (boxes and racks),
 * sim_event.c (the event queue).  What several of them read about a job's
 * registration is inline here (sim_job_gen(), sim_owner_alive()).
 */
#ifndef ESA_SIM_INT_H
#define ESA_SIM_INT_H

#include "sim.h"
#include "esa_merge.h"
#include "esa_cc.h"

/* ------------------------------------------------------------------ */
/* Packets and events                                                  */
/* ------------------------------------------------------------------ */

struct pkt {
	uint64_t bitmap;
	uint32_t seq;
	uint16_t job;
	uint16_t rank;
	uint8_t	type;		/* enum esa_type */
	uint8_t	reason;		/* enum esa_reason */
	uint8_t	flags;
	uint8_t	prio;
	uint8_t	from_ps;	/* a result the PS sent */
};

enum ev_kind {
	EV_ARRIVE = 1,		/* job arrives */
	EV_COMPUTE,		/* worker finished an iteration's compute */
	EV_AT_SWITCH,		/* packet reaches a switch (a box) */
	EV_SW_PROC,		/* ... and is served (finite switch rate) */
	EV_AT_PS,		/* packet reaches its PS */
	EV_PS_PROC,		/* ... and is processed */
	EV_AT_WORKER,		/* result reaches a worker */
	EV_TIMER,		/* worker resend timer */
};

#define DST_NONE	0xffff
#define DST_TO_PS	0xfffe	/* a worker's answer to FETCH, for its PS */

struct ev {
	stime_t	t;
	uint64_t ord;		/* FIFO among equal times: determinism */
	struct pkt p;
	uint16_t kind;
	uint16_t dst;		/* rank a packet is for (results), or NONE */
	uint32_t arg;		/* job (ARRIVE/COMPUTE/TIMER); at a switch:
				 * EV_AT(box it is at, box it is for) */
};

/*
 * Racks (--racks): box 0 is the spine, boxes 1 .. racks the leaves; a
 * packet reaches one box after another, and is the business of the box it
 * is for (its destination address).  One switch: box 0, always.
 */
#define EV_AT(at, to)	((uint32_t)(at) | (uint32_t)(to) << 16)
#define EV_AT_BOX(arg)	((arg) & 0xffff)
#define EV_TO_BOX(arg)	((arg) >> 16)

struct heap {
	struct ev *a;
	size_t	n, cap;
};

/* ------------------------------------------------------------------ */
/* Model state                                                         */
/* ------------------------------------------------------------------ */

struct link {
	stime_t	free;		/* when the transmitter is next idle */
};

enum { WS_EMPTY = 0, WS_OUT, WS_GOT };

struct wslot {
	uint32_t seq;
	uint8_t	state;
	uint8_t	tries;
	stime_t	sent;		/* first sent (round-trip samples) */
	stime_t	deadline;
	uint64_t rto_ns;	/* its timeout, backoff included */
};

struct worker {
	struct link up, down;
	stime_t	nic_free;
	unsigned iter;
	uint32_t base;		/* first chunk of the current iteration */
	uint32_t received;	/* results received this iteration */
	uint32_t low, next;	/* oldest chunk without a result; next to send:
				 * in flight while next - low < the window */
	struct esa_cc cc;	/* the congestion window (esa_cc.h) */
	struct esa_rto rto;	/* the resend timer (esa_cc.h) */
	stime_t	last_rx;	/* last result */
	struct wslot *win;	/* ring of wmax entries, by seq */
	uint32_t *kept;		/* seq + 1 of the results kept to answer
				 * FETCH, a ring of 4 * wmax (as libesa) */
	stime_t	timer_at;	/* armed timer, 0: none; a timer event
				 * whose time is not timer_at is stale */
	int	done;
};

struct psent {
	uint32_t seq;
	uint8_t	used;
	uint8_t	done;
	uint16_t nsum;		/* ranks in the sum it completes with, with
				 * multiplicity: what the values would show
				 * if a rank were counted twice */
	struct esa_merge m;	/* the ranks kept (esa_merge.h) */
	uint64_t resent;	/* ranks that resent the chunk */
	uint64_t resent2;	/* ... at least twice */
	stime_t	fetch_at;	/* last FETCH round, 0: none */
	uint8_t	why;		/* most telling reason of its pieces */
};

enum { JS_WAIT = 0, JS_RUN, JS_DONE };

/*
 * A job's registration at one box (esactl job add there): the ranks the
 * box sums (esa_key's mask; 0: not registered here), whether its complete
 * sums go up (a leaf below a spine), whether its members are leaves (a
 * spine), and its memory there.
 */
struct jreg {
	uint64_t mask;
	uint32_t region_base, region_size;	/* esa_job's */
	int	region;		/* switchml: region index, -1: none */
	uint8_t	up;
	uint8_t	leaves;
	uint8_t	members;	/* contributions a complete sum has */
};

struct job {
	const struct sim_job_spec *spec;
	struct esa_job reg;	/* the job's life and ranks, every box's */
	struct jreg *at;	/* per box */
	uint8_t	leaf[ESA_MAX_WORKERS];	/* each rank's box (0: one switch) */
	unsigned top;		/* the box whose sums are the results */
	unsigned racks;		/* racks its ranks are in (0: one switch) */
	struct worker *w;
	unsigned wmax;		/* largest window (ring size) */
	uint64_t full;
	uint32_t total;		/* chunks over all iterations */
	uint8_t	*done_bits;	/* chunk completed (first time) */
	uint8_t	*div_bits;	/* some rank of the chunk went to the PS */
	uint8_t	*up_bits;	/* per box: the leaf sent the chunk's sum up */
	struct psent *ring;	/* the PS's per-chunk state */
	uint32_t ringmask;
	unsigned ps;
	unsigned workers_done;
	int	state;
};

struct pshost {
	struct link up, down;
	stime_t	free;
};

/* Slot accounting classes (the simulator's view, not the data plane's). */
enum { CL_FREE = 0, CL_BUSY, CL_HELD, CL_DEAD };

struct slot_aux {
	stime_t	claimed;	/* when the current key claimed the slot */
	uint8_t	cls;
};

/*
 * One switch (an ESA box): the one of a run without racks, or the spine or
 * a leaf.  Each has its own pool, tombstones, switchml regions and service
 * queue; a leaf has its link to the spine and back.
 */
struct box {
	struct esa_slot *slot;
	struct esa_tomb *tombs;		/* esa_tombs: ESA_TOMB_RING per job */
	struct slot_aux *aux;
	/* switchml: nreg fixed regions of regsize slots, and the jobs
	 * waiting for one (FIFO by arrival)
	 */
	unsigned nreg, regsize;
	int32_t	*reg_owner;	/* job + 1, 0: free */
	uint32_t *waitq;
	unsigned wq_head, wq_tail;
	stime_t	free;		/* when it takes its next packet */
	int	esa;		/* runs the switch (else it only routes) */
	struct link up, down;	/* a leaf's: to the spine, from it */
};

struct sim {
	const struct sim_params *P;
	const struct sim_workload *W;
	struct sim_result *R;
	int	policy;
	stime_t	now;
	uint64_t ord;
	struct heap h;
	uint64_t rng;
	int	oom;

	stime_t	pkt_tx, ps_pkt_tx, prop, sw_svc, ps_svc, ps_copy_svc, nic_svc;
	stime_t	t0, tmax;
	uint64_t stale_ns;

	struct box *box;
	unsigned nbox;		/* 1, or racks + 1 */
	unsigned racks, levels;	/* levels: 1 flat, 2 two-level */
	unsigned esa_boxes;	/* boxes that run the switch */
	stime_t	up_pkt_tx;	/* a packet on a leaf-spine link */
	struct job *job;
	struct esa_home *homes;	/* scratch for home_place() */
	unsigned jobs_active, jobs_done;
	struct pshost *ps;
	unsigned nps;

	/* utilisation integrals (slot x ps) and time series */
	unsigned n_busy, n_held, n_resv;
	stime_t	t_last, t_first;
	uint64_t i_busy, i_held, i_occ;
	double	useful;
	stime_t	bin;
	unsigned nbins, capbins;
	double	*b_busy, *b_held, *b_occ;
};

/* The job's generation (the simulator's clock does not stamp activity). */
static inline uint32_t sim_job_gen(const struct job *j)
{
	return esa_life_gen(j->reg.life);
}

/* Job jid of generation gen is registered and active (esa_owner_alive()). */
static inline int sim_owner_alive(const struct sim *s, uint32_t jid, uint32_t gen)
{
	return jid < s->W->njobs && s->job[jid].reg.state == ESA_JOB_ACTIVE &&
	       sim_job_gen(&s->job[jid]) == gen;
}

/* sim_event.c */
void sim_push(struct sim *s, stime_t t, int kind, const struct pkt *p,
	      unsigned dst, uint32_t arg);
void sim_pop(struct heap *h, struct ev *out);
/* sim_engine.c */
int sim_setup(struct sim *s, const struct sim_params *P,
	      const struct sim_workload *W, int policy, struct sim_result *R);
void sim_free(struct sim *s);
/* sim_net.c */
int sim_lose(struct sim *s);
stime_t sim_link_tx(struct link *l, stime_t t, stime_t tx);
void sim_to_worker(struct sim *s, struct job *j, unsigned rank,
		   const struct pkt *p);
void sim_to_rank(struct sim *s, unsigned b, struct job *j, unsigned rank,
		 const struct pkt *p);
void sim_to_ps(struct sim *s, unsigned b, struct job *j, const struct pkt *p);
void sim_ps_send(struct sim *s, struct job *j, const struct pkt *p,
		 unsigned dst);
void sim_up(struct sim *s, unsigned b, const struct pkt *p, unsigned dst,
	    unsigned to);
void sim_down(struct sim *s, unsigned l, const struct pkt *p, unsigned dst,
	      unsigned to);
void sim_forward(struct sim *s, unsigned b, unsigned to, const struct pkt *p);
/* sim_acct.c */
void sim_ts_advance(struct sim *s);
void sim_cls_set(struct sim *s, unsigned b, uint32_t idx, int cls);
void sim_acct_check(struct sim *s);
void sim_mark_done(struct sim *s, struct job *j, uint32_t seq, int in_switch);
void sim_mark_up(struct sim *s, struct job *j, unsigned b, uint32_t seq);
void sim_mark_diverted(struct job *j, uint32_t seq);
int sim_is_diverted(const struct job *j, uint32_t seq);
/* sim_switch.c */
struct esa_tomb *sim_tomb_of(struct sim *s, unsigned b, uint32_t jid,
			     uint32_t seq);
void sim_sw_proc(struct sim *s, unsigned b, unsigned to, struct pkt *p,
		 unsigned dst);
/* sim_ps.c */
void sim_ps_proc(struct sim *s, struct pkt *p);
/* sim_worker.c */
int sim_job_arrive(struct sim *s, struct job *j);
void sim_job_finish(struct sim *s, struct job *j);
void sim_start_iteration(struct sim *s, struct job *j, unsigned rank);
void sim_worker_result(struct sim *s, struct pkt *p, unsigned rank);
void sim_worker_timer(struct sim *s, struct job *j, unsigned rank);
/* sim_rack.c */
int sim_boxes_setup(struct sim *s);
void sim_boxes_free(struct sim *s);
int sim_job_place(struct sim *s, struct job *j);
/* The box a rank's DATA is for: its leaf's, if the job is registered there. */
static inline unsigned sim_via(const struct job *j, unsigned rank)
{
	return j->at[j->leaf[rank]].mask ? j->leaf[rank] : 0;
}

#endif /* ESA_SIM_INT_H */
