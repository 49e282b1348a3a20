// SPDX-License-Identifier: GPL-2.0
/*
 * esa_jct calib: the testbed preset's numbers (or the network-bound one's)
 * from the calibration microbenchmarks of jct.sh -C in --dir: the round
 * trip, a worker's and the switch's packet rates, the PS's cost per packet
 * and per result copy, each the median over the seeds' runs; then the
 * preset's numbers derived from them (as user/sim/workload.c holds them),
 * what the model makes of each microbenchmark with them, and the calib:
 * line.  docs/evaluation.md.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jct_report.h"

static double median(double *v, unsigned n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof(double), jct_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The runs of one microbenchmark: DIR/NAME/run-POLICY-sSEED-r1.txt. */
static unsigned calib_runs(const struct jct_opts *o, const char *name, const char *pol,
			   unsigned njobs, struct runf *rf)
{
	char path[4096];
	unsigned n = 0;

	for (unsigned s = 0; s < o->nseeds; s++) {
		snprintf(path, sizeof(path), "%s/%s/run-%s-s%u-r1.txt", o->dir, name, pol,
			 o->seeds[s]);
		if (jct_read_run(path, &rf[n], njobs) || !rf[n].ok) {
			fprintf(stderr, "esa_jct calib: %s missing or failed\n", path);
			jct_runf_free(&rf[n]);
			continue;
		}
		n++;
	}
	return n;
}

/* esa-ps's total count of one counter, from its JSON (-j) output. */
static double ps_json_total(const char *path, const char *name)
{
	char buf[8192], key[64], *p;
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f)
		return NAN;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	snprintf(key, sizeof(key), "\"%s\":", name);
	p = strstr(buf, "\"total\":");
	p = p ? strstr(p, key) : NULL;
	return p ? strtod(p + strlen(key), NULL) : NAN;
}

/*
 * The simulator on a microbenchmark's own workload (its run file's first
 * line holds the options) with the derived parameters: the model's view of
 * what was measured.  Returns the simulated makespan of seed, or NAN.
 */
static double calib_model(const struct jct_opts *o, const char *name, const char *pol,
			  const struct sim_params *cal, unsigned *chunks, unsigned *workers)
{
	char path[4096], line[4096], *argv[128], *save = NULL, *t;
	struct jct_opts mo;
	struct sim_workload w;
	struct sim_result r;
	double span = NAN, first = INFINITY, last = 0;
	int argc = 0, policy = sim_policy_parse(pol);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/run-%s-s%u-r1.txt", o->dir, name, pol,
		 o->seeds[0]);
	f = fopen(path, "r");
	if (!f || !fgets(line, sizeof(line), f)) {
		if (f)
			fclose(f);
		return NAN;
	}
	fclose(f);
	argv[argc++] = "esa_jct";
	t = strstr(line, "--preset");
	for (t = t ? strtok_r(t, " \n", &save) : NULL; t && argc < 127;
	     t = strtok_r(NULL, " \n", &save))
		argv[argc++] = t;
	argv[argc] = NULL;
	if (jct_parse(&mo, argc, argv, "calib") < 0)
		return NAN;
	mo.p.worker_mpps = cal->worker_mpps;
	mo.p.switch_mpps = cal->switch_mpps;
	mo.p.ps_mpps = cal->ps_mpps;
	mo.p.ps_copy_cost = cal->ps_copy_cost;
	mo.p.prop_us = cal->prop_us;
	mo.p.link_gbps = cal->link_gbps;
	mo.p.ps_link_gbps = cal->ps_link_gbps;
	mo.p.ps_hosts = cal->ps_hosts;
	if (sim_workload_gen(&mo.p, &w))
		return NAN;
	if (sim_run(&mo.p, &w, policy, &r) == 0) {
		for (unsigned i = 0; i < w.njobs; i++) {
			first = fmin(first, (double)w.job[i].arrival / T_S);
			last = fmax(last, (double)w.job[i].arrival / T_S + r.jct[i]);
		}
		span = last - first;
		*chunks = 0;
		for (unsigned i = 0; i < w.njobs; i++)
			*chunks += w.job[i].chunks * w.job[i].iters;
		*workers = w.job[0].nworkers;
	}
	sim_result_free(&r);
	sim_workload_free(&w);
	return span;
}

/* What the microbenchmarks measured (medians over their runs), whether any
 * had no run, and the switch's packets in per second of each run of w4,
 * conc and ps (their median is switch_mpps). */
struct calib {
	double	rtt, chunk_us;		/* rtt */
	double	wk;			/* w2: DATA packets/s per worker */
	double	sw_w4, copy_us;		/* w4 */
	double	sw_conc;		/* conc */
	double	ps_rate, sw_ps, ps_us;	/* ps */
	double	sw, sv[192];
	unsigned nsw, ch;
	double	worst;			/* the largest share of other processes */
	int	bad;
};

/* One run's share of the machine: idle and taken by other processes. */
static void calib_cpu(struct calib *C, const struct runf *rf, double *idle, double *oth)
{
	*idle = rf->cpu_idle;
	*oth = rf->cpu_others;
	C->worst = fmax(C->worst, *oth);
}

/* rtt: window 1, two workers: libesa's mean round trip, and the time per
 * chunk (one chunk in flight: a round trip plus the hosts' work) */
static void calib_rtt(const struct jct_opts *o, struct calib *C)
{
	struct runf rf[64];
	double v[64], w[64];
	unsigned n = calib_runs(o, "rtt", "esa", 1, rf);

	for (unsigned k = 0; k < n; k++) {
		v[k] = rf[k].job[0].rtt_us;
		w[k] = rf[k].job[0].comm / (rf[k].job[0].chunks * rf[k].job[0].iters) * 1e6;
		C->ch = rf[k].job[0].chunks;
		jct_runf_free(&rf[k]);
	}
	if (n)
		printf("  (%u chunks of %u values an iteration)\n", C->ch, o->p.nvals);
	C->rtt = median(v, n);
	C->chunk_us = median(w, n);
	C->bad |= !n;
	printf("  rtt   1 job of 2 workers, window 1: round trip %.1f us (libesa's mean), "
	       "%.1f us per chunk\n", C->rtt, C->chunk_us);
}

/* w2: a job of two workers alone: each worker's DATA rate */
static void calib_w2(const struct jct_opts *o, struct calib *C)
{
	struct runf rf[64];
	double v[64], idle[64], oth[64];
	unsigned n = calib_runs(o, "w2", "esa", 1, rf);

	for (unsigned k = 0; k < n; k++) {
		v[k] = rf[k].job[0].tx / rf[k].job[0].comm / rf[k].job[0].workers;
		calib_cpu(C, &rf[k], &idle[k], &oth[k]);
		jct_runf_free(&rf[k]);
	}
	C->wk = median(v, n);
	C->bad |= !n;
	printf("  w2    1 job of 2 workers: %.1fk DATA packets/s per worker (machine idle "
	       "%.0f%%, others %.0f%%)\n", C->wk / 1e3, 100 * median(idle, n),
	       100 * median(oth, n));
}

/* w4: a job of four workers alone: the switch's packets in per second
 * (DATA only here); esa-ps's CPU per result copy (its only work) */
static void calib_w4(const struct jct_opts *o, struct calib *C)
{
	struct runf rf[64];
	double v[64], w[64], idle[64], oth[64];
	unsigned n = calib_runs(o, "w4", "esa", 1, rf);

	for (unsigned k = 0; k < n; k++) {
		uint64_t copies = rf[k].tot[ESA_C_PS_COPY_TX];

		v[k] = rf[k].tot[ESA_C_RX] / rf[k].job[0].comm;
		C->sv[C->nsw++] = v[k];
		w[k] = copies ? rf[k].cpu_ps / copies * 1e6 : NAN;
		calib_cpu(C, &rf[k], &idle[k], &oth[k]);
		jct_runf_free(&rf[k]);
	}
	C->sw_w4 = median(v, n);
	C->copy_us = median(w, n);
	C->bad |= !n;
	printf("  w4    1 job of 4 workers: %.1fk packets/s into the switch (all DATA); "
	       "esa-ps %.2f us CPU per result copy (idle %.0f%%, others %.0f%%)\n",
	       C->sw_w4 / 1e3, C->copy_us, 100 * median(idle, n), 100 * median(oth, n));
}

/* conc: four jobs of two workers at once, each in its own region */
static void calib_conc(const struct jct_opts *o, struct calib *C)
{
	struct runf rf[64];
	double v[64], idle[64], oth[64];
	unsigned n = calib_runs(o, "conc", "switchml", 4, rf);

	for (unsigned k = 0; k < n; k++) {
		double first = INFINITY, last = 0;

		for (unsigned i = 0; i < 4; i++) {
			first = fmin(first, rf[k].job[i].arrival);
			last = fmax(last, rf[k].job[i].arrival + rf[k].job[i].jct);
		}
		v[k] = rf[k].tot[ESA_C_RX] / (last - first);
		C->sv[C->nsw++] = v[k];
		calib_cpu(C, &rf[k], &idle[k], &oth[k]);
		jct_runf_free(&rf[k]);
	}
	C->sw_conc = median(v, n);
	C->bad |= !n;
	printf("  conc  4 jobs of 2 workers at once: %.1fk packets/s into the switch (all "
	       "DATA; idle %.0f%%, others %.0f%%)\n", C->sw_conc / 1e3, 100 * median(idle, n),
	       100 * median(oth, n));
}

/* ps: four workers, every packet through the PS (no switch memory): the
 * switch takes the DATA and forwards the PS's results; esa-ps's CPU per
 * packet it merges */
static void calib_ps(const struct jct_opts *o, struct calib *C)
{
	struct runf rf[64];
	double v[64], w[64], x[64], idle[64], oth[64];
	char path[4096];
	unsigned n = calib_runs(o, "ps", "switchml", 1, rf);

	for (unsigned k = 0; k < n; k++) {
		double res;

		snprintf(path, sizeof(path), "%s/ps/ps-switchml-s%u-r1.json", o->dir, rf[k].seed);
		res = ps_json_total(path, "result_tx");
		v[k] = rf[k].job[0].tx / rf[k].job[0].comm;
		x[k] = (rf[k].tot[ESA_C_RX] + res) / rf[k].job[0].comm;
		C->sv[C->nsw++] = x[k];
		w[k] = rf[k].cpu_ps / rf[k].job[0].tx * 1e6;
		calib_cpu(C, &rf[k], &idle[k], &oth[k]);
		jct_runf_free(&rf[k]);
	}
	C->ps_rate = median(v, n);
	C->sw_ps = median(x, n);
	C->ps_us = median(w, n);
	C->bad |= !n;
	printf("  ps    1 job of 4 workers, no switch memory: %.1fk DATA packets/s through "
	       "the PS, %.1fk packets/s into the switch (DATA and the PS's results); esa-ps "
	       "%.2f us CPU per packet (idle %.0f%%, others %.0f%%)\n", C->ps_rate / 1e3,
	       C->sw_ps / 1e3, C->ps_us, 100 * median(idle, n), 100 * median(oth, n));
}

/*
 * The network-bound testbed's numbers (jct.sh -C -N): the links bind, not
 * the CPU, so w2 measures the links' rate and the round trip the
 * propagation (the emulated delay and the hosts' own) plus a packet's
 * serialization each way; the switch's and the workers' CPU rates do not
 * bind at 30% idle (0: line rate); esa-ps's CPU per packet is measured.
 */
static void calib_netbound(const struct calib *C, struct sim_params *cal)
{
	double bits = 8 * sim_pkt_bytes(ESA_DEFAULT_VALUES);

	memset(cal, 0, sizeof(*cal));
	cal->link_gbps = cal->ps_link_gbps = C->wk * bits / 1e9;
	cal->prop_us = C->rtt / 2 - bits / (cal->link_gbps * 1e3);
	cal->ps_mpps = 1 / C->ps_us;
	cal->ps_copy_cost = C->copy_us / C->ps_us;
	cal->ps_hosts = 0;
	printf("netbound preset (user/sim/workload.c):\n"
	       "  link_gbps    = w2's rate per worker x %.0f bits a packet     = %.4f\n"
	       "  prop_us      = rtt / 2 - a packet's serialization       = %.1f\n"
	       "  ps_mpps      = 1 / esa-ps CPU per packet (ps)            = %.4f\n"
	       "  ps_copy_cost = esa-ps CPU per copy (w4) / per packet     = %.2f\n"
	       "  worker_mpps, switch_mpps: 0 (line rate: the CPU does not bind)\n"
	       "  ps_hosts     = 0 (one esa-ps per job, on its own link)\n",
	       bits, cal->link_gbps, cal->prop_us, cal->ps_mpps, cal->ps_copy_cost);
}

/* The testbed preset's numbers from the measurements. */
static void calib_preset(const struct calib *C, struct sim_params *cal)
{
	memset(cal, 0, sizeof(*cal));
	cal->worker_mpps = C->wk / 1e6;
	cal->switch_mpps = C->sw / 1e6;
	cal->ps_mpps = 1 / C->ps_us;
	cal->ps_copy_cost = C->copy_us / C->ps_us;
	cal->prop_us = C->rtt / 2;
	cal->link_gbps = cal->ps_link_gbps = 10;
	cal->ps_hosts = 1;
	printf("testbed preset (user/sim/workload.c):\n"
	       "  worker_mpps  = w2's rate per worker                      = %.4f\n"
	       "  switch_mpps  = median of w4, conc, ps: packets/s in      = %.4f\n"
	       "  ps_mpps      = 1 / esa-ps CPU per packet (ps)            = %.4f\n"
	       "  ps_copy_cost = esa-ps CPU per copy (w4) / per packet     = %.2f\n"
	       "  prop_us      = rtt / 2                                   = %.1f\n"
	       "  link_gbps, ps_link_gbps: 10 (no line rate on veth; never binds)\n"
	       "  ps_hosts     = 1 (one esa-ps for every job)\n",
	       cal->worker_mpps, cal->switch_mpps, cal->ps_mpps, cal->ps_copy_cost,
	       cal->prop_us);
}

/* What the model makes of the microbenchmarks with these numbers. */
static void calib_check_model(const struct jct_opts *o, const struct calib *C,
			      const struct sim_params *cal)
{
	unsigned ch = C->ch, nw = 0;
	double span;

	printf("the model on the microbenchmarks (seed %u), measured -> simulated:\n",
	       o->seeds[0]);
	span = calib_model(o, "rtt", "esa", cal, &ch, &nw);
	printf("  rtt   %.1f -> %.1f us per chunk\n", C->chunk_us, span / ch * 1e6);
	span = calib_model(o, "w2", "esa", cal, &ch, &nw);
	printf("  w2    %.1fk -> %.1fk DATA packets/s per worker\n", C->wk / 1e3,
	       ch / span / 1e3);
	span = calib_model(o, "w4", "esa", cal, &ch, &nw);
	printf("  w4    %.1fk -> %.1fk DATA packets/s\n", C->sw_w4 / 1e3, ch * nw / span / 1e3);
	span = calib_model(o, "conc", "switchml", cal, &ch, &nw);
	printf("  conc  %.1fk -> %.1fk DATA packets/s\n", C->sw_conc / 1e3,
	       ch * nw / span / 1e3);
	printf("  ps    %.1fk -> %.1fk DATA packets/s through the PS (min(switch / 2, "
	       "PS, 4 x worker); esa_sim cannot run a job without memory)\n",
	       C->ps_rate / 1e3, fmin(fmin(C->sw / 2, 1e6 / C->ps_us), 4 * C->wk) / 1e3);
}

int jct_calib(struct jct_opts *o)
{
	struct calib C = { 0 };
	struct sim_params cal;

	if (!o->dir) {
		fprintf(stderr, "esa_jct calib: --dir is needed\n");
		return 2;
	}
	printf("calibration: medians over the runs of each microbenchmark (seeds");
	for (unsigned s = 0; s < o->nseeds; s++)
		printf("%s%u", s ? "," : " ", o->seeds[s]);
	printf("); one VGG-16-sized gradient per iteration, no compute\n");
	calib_rtt(o, &C);
	calib_w2(o, &C);
	calib_w4(o, &C);
	calib_conc(o, &C);
	calib_ps(o, &C);
	C.sw = median(C.sv, C.nsw);

	if (!strcmp(o->preset, "netbound"))
		calib_netbound(&C, &cal);
	else
		calib_preset(&C, &cal);
	calib_check_model(o, &C, &cal);
	if (C.worst > 0.1)
		printf("warning: other processes used up to %.0f%% of the machine during "
		       "these runs: calibrate on a quiet machine\n", 100 * C.worst);
	printf("calib: --worker-mpps %.4f --switch-mpps %.4f --ps-mpps %.4f "
	       "--ps-copy-cost %.2f --prop-us %.1f --link-gbps %g --ps-link-gbps %g "
	       "--ps-hosts %u\n", cal.worker_mpps, cal.switch_mpps, cal.ps_mpps,
	       cal.ps_copy_cost, cal.prop_us, cal.link_gbps, cal.ps_link_gbps, cal.ps_hosts);
	return C.bad ? 1 : 0;
}
