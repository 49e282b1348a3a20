// SPDX-License-Identifier: GPL-2.0
/*
 * esa_jct run: what a run records.  The CPU time over the run (the
 * machine's by kind, this process's, esa-ps's), the switch's slots sampled
 * every few ms (busy, held, occupied: the simulator's u_agg, u_held,
 * u_occ), and the run file: the run's line, CPU, transport, utilisation,
 * each job's JCT and its workers' counters, the switch's counters and the
 * samples (esa_jct report reads it: jct_runfile.c).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "jct_run.h"

/*
 * CPU time: the machine's (from /proc/stat: busy jiffies by kind, and idle),
 * this process's (the workers and the sampler) and esa-ps's.  On a shared
 * 2-core machine it says whether a run was CPU-bound and who used the CPU.
 */
struct cpu {
	unsigned long long user, sys, softirq, idle, total;
	double	self, ps;
};

/* Process pid's CPU seconds (user and system), 0 if it is gone. */
static double proc_cpu_s(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n > 0 ? n : 0] = 0;
	p = strrchr(buf, ')');	/* comm may hold spaces */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return 0;
	return (double)(ut + st) / sysconf(_SC_CLK_TCK);
}

/* The machine's, this process's and esa-ps's CPU counters now. */
static void cpu_read(struct cpu *c)
{
	unsigned long long v[10] = { 0 };
	FILE *f = fopen("/proc/stat", "r");

	memset(c, 0, sizeof(*c));
	if (f) {
		if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
			   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
			memset(v, 0, sizeof(v));
		fclose(f);
	}
	c->user = v[0] + v[1];
	c->sys = v[2] + v[5];
	c->softirq = v[6];
	c->idle = v[3] + v[4];
	c->total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
	c->self = proc_cpu_s(getpid());
	c->ps = 0;
	for (int i = 0; R.o && i < R.o->nps_pid; i++)
		c->ps += proc_cpu_s(R.o->ps_pid[i]);
}

/* The counters at the start of the run (its first registration). */
static struct cpu cpu0;

void jct_cpu_start(void)
{
	cpu_read(&cpu0);
}

/* ------------------------------------------------------------------ */
/* Slot sampler                                                        */
/* ------------------------------------------------------------------ */

/* Every slot of the switch into s (a batch lookup where the kernel has it). */
static int read_slots(struct esa_slot *s, __u32 *keys, unsigned pool)
{
	LIBBPF_OPTS(bpf_map_batch_opts, bo);
	__u32 count = pool, out_batch = 0;
	static int no_batch;
	int rc;

	if (!no_batch) {
		rc = bpf_map_lookup_batch(R.sw.slots_fd, NULL, &out_batch, keys, s,
					  &count, &bo);
		if ((!rc || errno == ENOENT) && count == pool)
			return 0;
		no_batch = 1;
	}
	for (__u32 i = 0; i < pool; i++)
		if (bpf_map_lookup_elem(R.sw.slots_fd, &i, &s[i]))
			return -errno;
	return 0;
}

/* One sample into the time series. */
static void ts_add(double t, unsigned busy, unsigned held, unsigned occ)
{
	if (R.nts == R.capts) {
		size_t cap = R.capts ? 2 * R.capts : 4096;

		R.ts_t = realloc(R.ts_t, cap * sizeof(*R.ts_t));
		R.ts_busy = realloc(R.ts_busy, cap * sizeof(*R.ts_busy));
		R.ts_held = realloc(R.ts_held, cap * sizeof(*R.ts_held));
		R.ts_occ = realloc(R.ts_occ, cap * sizeof(*R.ts_occ));
		if (!R.ts_t || !R.ts_busy || !R.ts_held || !R.ts_occ) {
			fprintf(stderr, "esa_jct: out of memory\n");
			exit(2);
		}
		R.capts = cap;
	}
	R.ts_t[R.nts] = t;
	R.ts_busy[R.nts] = busy;
	R.ts_held[R.nts] = held;
	R.ts_occ[R.nts] = occ;
	R.nts++;
}

/*
 * Every sample_ms: each slot is busy (a live owner aggregating), held (a live
 * owner's complete sum waiting for the PS's ack: atp) or neither (free, or
 * its owner deleted); occupied adds the idle slots of the switchml regions
 * of registered jobs.  The time averages over the run are the simulator's
 * u_agg, u_held and u_occ.
 */
void *jct_sampler_main(void *arg)
{
	unsigned pool = R.o->p.pool, nj = R.wl.njobs;
	struct esa_slot *s = calloc(pool, sizeof(*s));
	__u32 *keys = calloc(pool, sizeof(*keys));
	uint32_t *gen = calloc(nj, sizeof(*gen));
	uint8_t *alive = calloc(nj, 1);
	int *rbase = calloc(nj, sizeof(*rbase));
	double period = R.o->sample_ms / 1e3, next = now_s();

	(void)arg;
	if (!s || !keys || !gen || !alive || !rbase) {
		fprintf(stderr, "esa_jct: out of memory\n");
		exit(2);
	}
	while (atomic_load(&R.sampling)) {
		unsigned busy = 0, held = 0, reserved = 0, inreg = 0;
		double t;

		next += period;
		sleep_until(next);
		if (now_s() > next + period)	/* late: do not catch up */
			next = now_s();
		pthread_mutex_lock(&R.lock);
		for (unsigned i = 0; i < nj; i++) {
			struct job *j = &R.job[i];

			alive[i] = j->state == J_REGISTERED || j->state == J_DONE;
			gen[i] = j->gen;
			rbase[i] = alive[i] && j->region >= 0 ? j->region * (int)R.regsize : -1;
			if (rbase[i] >= 0)
				reserved += R.regsize;
		}
		pthread_mutex_unlock(&R.lock);
		t = now_s() - R.t0;
		if (read_slots(s, keys, pool)) {
			R.sample_err++;
			continue;
		}
		for (unsigned k = 0; k < pool; k++) {
			unsigned jid = s[k].job;
			bool live;

			if (s[k].state == ESA_SLOT_FREE)
				continue;
			live = jid < nj && alive[jid] && gen[jid] == s[k].gen;
			if (!live)
				continue;
			busy += s[k].state == ESA_SLOT_BUSY;
			held += s[k].state == ESA_SLOT_HELD;
			if (rbase[jid] >= 0 && k >= (unsigned)rbase[jid] &&
			    k < (unsigned)rbase[jid] + R.regsize)
				inreg++;
		}
		R.sum_busy += busy;
		R.sum_held += held;
		R.sum_occ += busy + held + reserved - inreg;
		R.nsamples++;
		ts_add(t, busy, held, busy + held + reserved - inreg);
	}
	free(s);
	free(keys);
	free(gen);
	free(alive);
	free(rbase);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The run file                                                        */
/* ------------------------------------------------------------------ */

/* CPU time over the run: shares of the machine by kind, ours and esa-ps's
 * seconds, and others: busy time not softirq and not ours or esa-ps's, as
 * a share of the machine (other users of a shared machine). */
static void write_cpu(FILE *f, double makespan)
{
	long tck = sysconf(_SC_CLK_TCK);
	struct cpu c1;
	double tot_j, busy_s, others;

	cpu_read(&c1);
	tot_j = c1.total > cpu0.total ? (double)(c1.total - cpu0.total) : 1;
	busy_s = (double)(c1.total - cpu0.total - (c1.idle - cpu0.idle) -
			  (c1.softirq - cpu0.softirq)) / tck;
	others = (busy_s - (c1.self - cpu0.self) - (c1.ps - cpu0.ps)) / (tot_j / tck);
	fprintf(f, "cpu wall_s=%.3f ncpu=%ld user=%.3f sys=%.3f softirq=%.3f "
		"idle=%.3f self_s=%.3f ps_s=%.3f others=%.3f\n", makespan,
		sysconf(_SC_NPROCESSORS_ONLN), (c1.user - cpu0.user) / tot_j,
		(c1.sys - cpu0.sys) / tot_j, (c1.softirq - cpu0.softirq) / tot_j,
		(c1.idle - cpu0.idle) / tot_j, c1.self - cpu0.self, c1.ps - cpu0.ps,
		others > 0 ? others : 0);
}

/* The transport asked for, and how many workers got AF_XDP. */
static void write_io(FILE *f)
{
	unsigned nw = 0, nx = 0;

	for (unsigned i = 0; i < R.wl.njobs; i++)
		for (unsigned r = 0; r < R.job[i].n; r++) {
			nw++;
			nx += R.job[i].w[r].st.io_xdp != 0;
		}
	fprintf(f, "io asked=%s workers=%u on_xdp=%u xdp_share=%u\n", R.o->io, nw, nx,
		R.xdp_share);
}

/* One job's line: its JCT (NAN when it failed), its workers' counters
 * summed, its slowest worker's time in allreduce, its first error. */
static void write_job(FILE *f, const struct job *j)
{
	const struct sim_params *p = &R.o->p;
	uint64_t tx = 0, rs = 0, rr = 0, rp = 0, rtt = 0, rtn = 0, bad = 0;
	double comm = 0;
	const char *err = "-";

	for (unsigned r = 0; r < j->n; r++) {
		const struct wk *w = &j->w[r];

		tx += w->st.tx_packets;
		rs += w->st.tx_resends;
		rr += w->st.rx_results;
		rp += w->st.rx_from_ps;
		rtt += w->st.rtt_us_sum;
		rtn += w->st.rtt_samples;
		bad += w->bad;
		if (w->comm > comm)
			comm = w->comm;
		if (w->rc && !strcmp(err, "-"))
			err = w->err[0] ? w->err : esa_strerror(w->rc);
	}
	fprintf(f, "job %u %.6f %s %u %u %u %.4f %u %u %.6f %d %.6f %.6f %llu %llu "
		"%llu %llu %.1f %llu \"%s\"\n", j->id, (double)j->s->arrival / T_S,
		sim_models[j->s->model].name, j->n, j->s->iters, j->s->chunks,
		(double)j->s->compute / T_MS, sim_prio_of(p->prio, j->s, 0),
		j->window, j->failed || j->t_end <= 0 ? NAN : j->t_end - j->t_arr,
		!j->failed && j->t_end > 0, j->t_region > 0 ? j->t_region - j->t_arr : 0,
		comm, (unsigned long long)tx, (unsigned long long)rs,
		(unsigned long long)rr, (unsigned long long)rp,
		rtn ? (double)rtt / rtn : 0, (unsigned long long)bad, err);
}

static void write_ctr_row(FILE *f, const char *row, const struct esa_counters *c)
{
	fprintf(f, "ctr %s", row);
	for (int k = 0; k < __ESA_C_MAX; k++)
		fprintf(f, " %llu", (unsigned long long)c->c[k]);
	fprintf(f, "\n");
}

/* The switch's counters: per job, then the total of every row. */
static void write_counters(FILE *f)
{
	struct esa_counters tot;
	char row[16];

	fprintf(f, "# ctr ROW");
	for (int c = 0; c < __ESA_C_MAX; c++)
		fprintf(f, " %s", esa_counter_names[c]);
	fprintf(f, "\n");
	for (unsigned i = 0; i < R.wl.njobs; i++) {
		snprintf(row, sizeof(row), "%u", R.job[i].id);
		write_ctr_row(f, row, &R.job[i].ctr);
	}
	if (!esa_counters_sum(&R.sw, &tot))
		write_ctr_row(f, "total", &tot);
}

void jct_write_run(FILE *f, double makespan, int ok)
{
	const struct sim_params *p = &R.o->p;

	fprintf(f, "# esa_jct run: esa_jct run --policy %s ", sim_policy_name(R.o->policy));
	jct_sim_args(f, R.o);
	fprintf(f, "\nrun policy=%s seed=%llu rep=%u pool=%u window=%u nvals=%u "
		"jobs=%u regions=%u regsize=%u makespan_s=%.6f ok=%d hosts=%u "
		"sample_ms=%g samples=%llu sample_errors=%llu\n",
		sim_policy_name(R.o->policy), (unsigned long long)p->seed, R.o->rep,
		p->pool, p->window, p->nvals, R.wl.njobs, R.nreg, R.regsize, makespan,
		ok, R.o->hosts, R.o->sample_ms, (unsigned long long)R.nsamples,
		(unsigned long long)R.sample_err);
	write_cpu(f, makespan);
	write_io(f);
	fprintf(f, "util u_agg=%.6f u_held=%.6f u_occ=%.6f\n",
		R.nsamples ? R.sum_busy / R.nsamples / p->pool : 0,
		R.nsamples ? R.sum_held / R.nsamples / p->pool : 0,
		R.nsamples ? R.sum_occ / R.nsamples / p->pool : 0);
	fprintf(f, "# job id arrival_s model workers iters chunks compute_ms prio window "
		"jct_s ok wait_region_s comm_max_s tx resends rx_results rx_from_ps "
		"rtt_us bad error\n");
	for (unsigned i = 0; i < R.wl.njobs; i++)
		write_job(f, &R.job[i]);
	write_counters(f);
	fprintf(f, "# ts t_s busy held occ\n");
	for (size_t k = 0; k < R.nts; k++)
		fprintf(f, "ts %.4f %u %u %u\n", R.ts_t[k], R.ts_busy[k], R.ts_held[k],
			R.ts_occ[k]);
}
