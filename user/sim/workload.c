// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * esa_sim: parameters, presets, the seeded job workload and the priority
 * functions.  The workload does not depend on the allocation policy, so
 * every policy runs exactly the same jobs; what a policy gives a job
 * (switchml's regions, the window) is ruled here once for esa_sim and
 * esa_jct.
 */
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "sim.h"
#include "esa_prio.h"
#include "esa_names.h"

/*
 * Gradient sizes are the models' parameter counts.  Compute times are the
 * order of magnitude of one training iteration on one V100-class GPU with
 * mixed precision (ResNet-50 and VGG-16 at 64 images, BERT-base at 32
 * sequences of 128 tokens); they set how communication-bound a job is and
 * can be scaled with --compute-scale.
 */
const struct sim_model sim_models[SIM_NMODELS] = {
	{ "resnet50",	25.6e6,	55.0 },
	{ "vgg16",	138.0e6, 120.0 },
	{ "bert-base",	110.0e6, 100.0 },
};

void sim_defaults(struct sim_params *p)
{
	memset(p, 0, sizeof(*p));
	/* A rack of 100 Gbps hosts behind one Tofino-sized switch. */
	p->link_gbps = 100;
	p->ps_link_gbps = 100;
	p->prop_us = 1.0;
	p->switch_mpps = 0;
	p->ps_mpps = 12;
	p->worker_mpps = 0;
	p->ps_copy_cost = 1.0;
	p->ps_hosts = 0;
	p->loss = 0;
	p->pool = 16384;
	p->nvals = ESA_DEFAULT_VALUES;
	p->stale_ms = 1.0;
	p->window = 128;
	p->window_min = 0;
	p->ps_copy = 1;
	p->ps_sums = 1;
	p->timeout_us = 500;
	p->timeout_max_us = 8000;
	p->njobs = 100;
	p->load = 32;
	p->rate = 0;
	p->wchoice[0] = 2;
	p->wchoice[1] = 4;
	p->wchoice[2] = 8;
	p->nwchoice = 3;
	p->iter_min = 5;
	p->iter_max = 20;
	p->scale = 0.002;
	p->compute_scale = 1.0;
	p->straggle = 0.05;
	p->model_mask = (1u << SIM_NMODELS) - 1;
	p->prio = ESA_PRIO_LAS;
	p->swml_regions = 0;
	p->home = 0;
	p->seed = 1;
	p->ts_bin_us = 0;
	p->max_sim_s = 1000;
}

int sim_preset(struct sim_params *p, const char *name)
{
	if (!strcmp(name, "datacenter")) {
		sim_defaults(p);
		return 0;
	}
	if (!strcmp(name, "testbed")) {
		/*
		 * The single-machine namespace testbed of the JCT benchmark
		 * (make jct, docs/evaluation.md): the XDP switch, libesa
		 * workers and one esa-ps sharing two cores.  Calibrated from
		 * the microbenchmarks of `user/bench/jct.sh -C` (docs/
		 * simulator.md, "Calibration"); every rate is a packet rate of
		 * the shared CPU, not of a link.
		 */
		sim_defaults(p);
		p->link_gbps = 10;	/* veth: no line rate, never binds */
		p->ps_link_gbps = 10;
		p->prop_us = 12.4;	/* half of libesa's round trip, window 1 */
		p->switch_mpps = 0.1626;	/* packets into the switch, saturated */
		p->ps_mpps = 0.0847;	/* 1 / esa-ps's CPU per packet */
		p->ps_copy_cost = 0.13;	/* esa-ps's CPU per result copy */
		p->worker_mpps = 0.0693;	/* a worker of a job of two, alone */
		p->ps_hosts = 1;	/* one esa-ps serves every job */
		p->pool = 64;
		p->stale_ms = 100;	/* the XDP program's default */
		p->window = 32;		/* a job alone is fastest with 32 */
		p->timeout_us = 20000;
		p->timeout_max_us = 200000;
		p->njobs = 12;
		p->load = 4;
		p->wchoice[0] = 2;
		p->wchoice[1] = 3;
		p->wchoice[2] = 4;
		p->nwchoice = 3;
		p->iter_min = 20;
		p->iter_max = 40;
		p->scale = 0.002;
		/*
		 * A testbed worker moves 69k packets/s, a 100 Gbps port 11.2M:
		 * stretching compute by the same factor (about 160) keeps each
		 * job's compute-to-communication ratio that of the datacenter
		 * preset.  256 values, not the links' 856: docs/evaluation.md
		 * ("At 856 values") says why.
		 */
		p->compute_scale = 160;
		/* esa_jct's default: libesa stamps static priorities (and
		 * las, esa_prio.h) exactly as sim_prio_of() does. */
		p->prio = ESA_PRIO_STATIC;
		return 0;
	}
	if (!strcmp(name, "netbound")) {
		/*
		 * The testbed made network-bound (user/bench/jct.sh -N): the
		 * datacenter preset's network with time dilated 1000 times,
		 * 100 Gbit/s to 100 Mbit/s.  Every host link is shaped to 100
		 * Mbit/s (tbf, through a bridge namespace per host), every
		 * rank has its own host and link, each job its
		 * own PS on its own link; each link's 1 us of propagation
		 * becomes 1 ms, emulated in the hosts' transport (libesa's
		 * link_delay_us), on top of the testbed's own latency; the
		 * compute stretches alike (the gradients' scale 0.002 times
		 * 1000).  The CPU rates stay the testbed's: at this link
		 * rate they do not bind (docs/evaluation.md measures the idle
		 * share of every run).  A pool of 16 slots for about four
		 * jobs at once, windows of up to 32 chunks (the
		 * bandwidth-delay product is about 24).  The link rate, the
		 * propagation and esa-ps's costs are `make jct-calib
		 * JCT_CALIB_ARGS=-N`'s (docs/evaluation.md): tbf passes a
		 * little over its rate, the testbed adds about 100 us.
		 */
		sim_preset(p, "testbed");
		p->link_gbps = 0.1028;
		p->ps_link_gbps = 0.1028;
		p->prop_us = 1110.3;
		p->ps_mpps = 0.0322;
		p->ps_copy_cost = 0.47;
		p->compute_scale = 1000;
		p->ps_hosts = 0;
		p->pool = 16;
		p->home = 16;
		p->window = 32;
		p->timeout_us = 10000;	/* libesa's least timeout */
		p->timeout_max_us = 200000;
		p->prio = ESA_PRIO_LAS;
		return 0;
	}
	return -1;
}

/* The names are esa_names.h's; these are the simulator's API to them. */
const char *sim_prio_name(int prio)
{
	return esa_prio_name(prio);
}

int sim_prio_parse(const char *s)
{
	return esa_prio_parse(s);
}

const char *sim_policy_name(int policy)
{
	return esa_policy_name(policy);
}

int sim_policy_parse(const char *s)
{
	return esa_policy_parse(s);
}

/* Bytes a packet takes on the wire: Ethernet (with preamble, FCS and
 * inter-frame gap), IPv4, UDP, the ESA header and the values.
 */
double sim_pkt_bytes(unsigned nvals)
{
	return 8 + 14 + 20 + 8 + ESA_HDR_LEN + 4.0 * nvals + 4 + 12;
}

/* splitmix64's finaliser: the simulator's only source of randomness. */
uint64_t sim_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Uniform in (0, 1). */
static double u01(uint64_t *s)
{
	*s = sim_mix64(*s);
	return ((*s >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/*
 * One worker's compute time in one iteration: the job's mean plus an
 * exponential straggler delay, drawn from (job, rank, iteration) alone so
 * that it does not depend on the order of events.
 */
stime_t sim_compute_draw(const struct sim_params *p,
			 const struct sim_job_spec *j, unsigned rank,
			 unsigned iter)
{
	uint64_t s = j->seed ^ sim_mix64(((uint64_t)rank << 32) | iter);
	double e = -log(u01(&s));

	return j->compute + (stime_t)(j->compute * p->straggle * e);
}

/*
 * Priority of chunk seq of job j: a function of the job and the chunk only,
 * so that every worker stamps the same priority on the same chunk.  Service
 * is counted in chunks (one aggregator slot each), in levels of 1/16 of a
 * doubling of 64 chunks (esa_prio.h, as libesa stamps them with quantum=64
 * prio_steps=16 prio_max=255): LAS lowers a job's priority as it aggregates
 * more, SRSF raises it as its remaining chunks shrink.
 */
static uint8_t prio_level(uint64_t chunks)
{
	return esa_prio_level(chunks, SIM_PRIO_QUANTUM, SIM_PRIO_STEPS, 255);
}

uint8_t sim_prio_of(int prio, const struct sim_job_spec *j, uint32_t seq)
{
	uint64_t total = (uint64_t)j->chunks * j->iters;

	switch (prio) {
	case ESA_PRIO_STATIC:
		return j->sprio;
	case ESA_PRIO_LAS:
		return prio_level(seq);
	case ESA_PRIO_SRSF:
		return prio_level(total - seq);
	default:
		return 1;
	}
}

/* The job's JCT if it ran alone with a perfect switch (for the load). */
static double ideal_jct(const struct sim_params *p, const struct sim_job_spec *j)
{
	double pkt = sim_pkt_bytes(p->nvals) * 8 / (p->link_gbps * 1e9);
	double hw = 0, comm, comp;

	if (p->worker_mpps > 0 && 1 / (p->worker_mpps * 1e6) > pkt)
		pkt = 1 / (p->worker_mpps * 1e6);
	for (unsigned i = 1; i <= j->nworkers; i++)
		hw += 1.0 / i;
	comp = (double)j->compute / T_S * (1 + p->straggle * hw);
	comm = j->chunks * pkt + 4 * p->prop_us * 1e-6 + 2 * pkt;
	return j->iters * (comp + comm);
}

int sim_workload_gen(const struct sim_params *p, struct sim_workload *w)
{
	uint64_t s = sim_mix64(p->seed ^ 0x5eedULL);
	unsigned nm = 0, models[SIM_NMODELS];
	double t = 0, sum = 0;

	memset(w, 0, sizeof(*w));
	for (unsigned m = 0; m < SIM_NMODELS; m++)
		if (p->model_mask & (1u << m))
			models[nm++] = m;
	if (!nm || !p->njobs || !p->nwchoice || p->iter_min < 1 ||
	    p->iter_max < p->iter_min || p->njobs > 65535)
		return -1;
	w->job = calloc(p->njobs, sizeof(*w->job));
	if (!w->job)
		return -1;
	w->njobs = p->njobs;
	for (unsigned i = 0; i < p->njobs; i++) {
		struct sim_job_spec *j = &w->job[i];
		const struct sim_model *m;
		double ch;

		j->model = models[(unsigned)(u01(&s) * nm)];
		m = &sim_models[j->model];
		j->nworkers = p->wchoice[(unsigned)(u01(&s) * p->nwchoice)];
		j->iters = p->iter_min +
			   (unsigned)(u01(&s) * (p->iter_max - p->iter_min + 1));
		ch = ceil(m->params * p->scale / p->nvals);
		j->chunks = ch < 1 ? 1 : (unsigned)ch;
		j->compute = (stime_t)(m->compute_ms * p->scale *
				       p->compute_scale * T_MS);
		j->sprio = 1 + (uint8_t)(u01(&s) * 255);
		s = sim_mix64(s);
		j->seed = s;
		j->ideal_s = ideal_jct(p, j);
		sum += j->ideal_s;
	}
	w->mean_ideal_s = sum / p->njobs;
	w->rate = p->rate > 0 ? p->rate : p->load / w->mean_ideal_s;
	for (unsigned i = 0; i < p->njobs; i++) {
		w->job[i].arrival = (stime_t)(t * T_S);
		t += -log(u01(&s)) / w->rate;
	}
	return 0;
}

void sim_workload_free(struct sim_workload *w)
{
	free(w->job);
	w->job = NULL;
}

/*
 * switchml: the pool cut once into nreg equal regions of regsize slots, as
 * many as jobs would run at once (--switchml-regions, or max(ceil(offered
 * load), pool / window)).  esa_sim and esa_jct both size them here.
 */
void sim_swml_regions(const struct sim_params *p, const struct sim_workload *w,
		      unsigned *nreg, unsigned *regsize)
{
	double conc = ceil(w->rate * w->mean_ideal_s);
	unsigned n = p->swml_regions;

	if (!n) {
		n = p->pool / p->window;
		if (conc > n)
			n = conc < p->pool ? (unsigned)conc : p->pool;
	}
	if (n > p->pool)
		n = p->pool;
	if (!n)
		n = 1;
	*nreg = n;
	*regsize = p->pool / n;
}

/*
 * A worker's window for the whole job: --window, at most the job's memory
 * (a larger window would collide with itself): a switchml region, or a
 * home.  libesa's window is fixed when the worker opens, so a switchml job
 * that waits for a region (its packets to the PS) already uses the
 * region's size.
 */
unsigned sim_job_window(const struct sim_params *p, const struct sim_workload *w,
			int policy)
{
	unsigned win = p->window, nreg, mem = 0;

	if (policy == ESA_POLICY_SWITCHML)
		sim_swml_regions(p, w, &nreg, &mem);
	else if (p->home)
		mem = p->home < p->pool ? p->home : p->pool;
	return mem && mem < win ? mem : win;
}
