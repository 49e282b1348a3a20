// SPDX-License-Identifier: GPL-2.0
/*
 * XDP runs on every RX queue at once.  This drives every CPU at the same
 * slots: one thread per CPU, pinned, each playing some ranks of every job,
 * all walking the jobs' chunks in the same order so that ranks of one chunk
 * reach one slot from different CPUs at the same moment.  Eight jobs share a
 * pool of 16 slots, so claims, adds, completions, preemptions and collisions
 * race.  A lost update under a broken lock shows up as an inexact sum.
 *
 * usage: esa_stress [ -c CHUNKS ] [ -v VALUES ] [ -s SEED ] [ -o OBJECT ]
 * (-o: another build of bpf/esa.bpf.c, e.g. one without its lock, to see
 * this test fail)
 */
#include <getopt.h>
#include <sched.h>

#include "psmodel.h"
#include "kselftest_harness.h"

#define NJOBS	8

static __u32 nchunks = 1500;
static int nvals = 256;
static __u64 seed = 7;
static const char *object;

static struct pm_job jobs[NJOBS] = {
	{ .id = 0, .w = 2, .max_prio = 7, .ps = T_PS_A },
	{ .id = 1, .w = 3, .max_prio = 0, .ps = T_PS_B },
	{ .id = 2, .w = 4, .max_prio = 3, .ps = T_PS_A },
	{ .id = 3, .w = 5, .max_prio = 7, .ps = T_PS_B },
	{ .id = 4, .w = 6, .max_prio = 1, .ps = T_PS_A },
	{ .id = 5, .w = 7, .max_prio = 7, .ps = T_PS_B },
	{ .id = 6, .w = 8, .max_prio = 2, .ps = T_PS_A },
	{ .id = 7, .w = 2, .max_prio = 5, .ps = T_PS_B },
};

/* Chunks each thread has finished sending; a thread runs at most one chunk
 * ahead of the slowest, so ranks of one chunk meet in its slot at once
 * (workers keep a window too; without one, one CPU runs far ahead and its
 * chunks only collide with its own job's partials). */
static volatile __u32 progress[64];

struct worker {
	pthread_t	tid;
	int		cpu, ncpus;
	struct pm	*pm;
	struct esa	*e;
	struct t_net	*n;
	int		rc;
	int		ran_on;
	__u64		sent;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set)) {
		w->rc = -1;
		return NULL;
	}
	w->ran_on = sched_getcpu();
	for (__u32 s = 0; s < nchunks && !w->rc; s++) {
		for (int c = 0; c < w->ncpus; c++)
			while (__atomic_load_n(&progress[c], __ATOMIC_ACQUIRE) + 1 < s)
				sched_yield();
		for (int j = 0; j < NJOBS && !w->rc; j++)
			for (int r = w->cpu; r < jobs[j].w; r += w->ncpus) {
				w->rc = pm_send(w->pm, w->e, w->n, j, r, s, false);
				w->sent++;
			}
		__atomic_store_n(&progress[w->cpu], s + 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&progress[w->cpu], ~0u - 1, __ATOMIC_RELEASE);
	return NULL;
}

TEST(every_cpu_same_slots_exact_sums)
{
	int ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct worker w[64] = {};
	struct esa_counters tot;
	char err[ESA_ERR_LEN];
	struct esa_opts o;
	struct t_net net;
	struct esa e;
	struct pm pm;
	__u64 sent = 0;

	if (ncpus < 2)
		SKIP(return, "needs two CPUs, has %d", ncpus);
	if (ncpus > 64)
		ncpus = 64;
	ASSERT_EQ(0, esa_netns_setup(&net));
	esa_opts_default(&o);
	o.nvals = nvals;
	o.slots = 16;
	o.max_jobs = 16;
	o.stale_ms = 0;
	o.kfunc = 0;
	o.object = object;
	ASSERT_EQ(0, esa_load(&e, &o, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(0, t_port_register(&e, net.sw0));
	ASSERT_EQ(0, t_port_register(&e, net.sw1));
	for (int j = 0; j < NJOBS; j++) {
		struct esa_job jb = t_job(jobs[j].w, jobs[j].ps, jobs[j].max_prio, jobs[j].id);

		jobs[j].nchunks = nchunks;
		ASSERT_EQ(0, t_job_add(&e, jobs[j].id, &jb, err, sizeof(err))) TH_LOG("%s", err);
	}
	ASSERT_EQ(0, pm_init(&pm, jobs, NJOBS, nvals, seed));
	for (int j = 0; j < NJOBS; j++)
		for (__u32 s = 0; s < nchunks; s++)
			pm.chunks[j][s].sent = esa_full_mask(jobs[j].w);

	for (int c = 0; c < ncpus; c++) {
		w[c] = (struct worker){ .cpu = c, .ncpus = ncpus, .pm = &pm, .e = &e,
					.n = &net };
		ASSERT_EQ(0, pthread_create(&w[c].tid, NULL, worker_main, &w[c]));
	}
	for (int c = 0; c < ncpus; c++) {
		pthread_join(w[c].tid, NULL);
		EXPECT_EQ(0, w[c].rc);
		EXPECT_EQ(c, w[c].ran_on);
		sent += w[c].sent;
	}
	EXPECT_EQ(0, pm_drain(&pm, &e, &net));

	for (int j = 0; j < NJOBS; j++) {
		for (__u32 s = 0; s < nchunks; s++) {
			EXPECT_TRUE(pm.chunks[j][s].done) TH_LOG("job %u chunk %u never completed",
								 jobs[j].id, s);
		}
	}
	EXPECT_EQ(0, pm.st.errors);
	ASSERT_EQ(0, esa_counters_sum(&e, &tot));
	for (int k = ESA_C_DROP_TRUNC; k <= ESA_C_DROP_NOROUTE; k++) {
		EXPECT_EQ(0, tot.c[k]) TH_LOG("%s", esa_counter_names[k]);
	}
	EXPECT_EQ(pm.st.valid + pm.st.acks, tot.c[ESA_C_RX]);
	EXPECT_EQ(pm.st.switch_done, tot.c[ESA_C_COMPLETED]);
	EXPECT_LT(0, tot.c[ESA_C_PREEMPT_CAUSED]);
	EXPECT_LT(0, pm.st.switch_done);
	TH_LOG("%d CPUs, %llu packets of %d values: %llu chunks completed in the switch, "
	       "%llu by the PS; %llu preemptions, %llu collisions, %llu resends",
	       ncpus, (unsigned long long)sent, nvals,
	       (unsigned long long)pm.st.switch_done, (unsigned long long)pm.st.ps_done,
	       (unsigned long long)tot.c[ESA_C_PREEMPT_CAUSED],
	       (unsigned long long)tot.c[ESA_C_COLLISION],
	       (unsigned long long)pm.st.resends);
	if (getenv("ESA_STRESS_COUNTERS"))
		for (int k = 0; k < __ESA_C_MAX; k++)
			if (tot.c[k])
				TH_LOG("%s %llu", esa_counter_names[k],
				       (unsigned long long)tot.c[k]);
	pm_free(&pm);
	esa_close(&e);
}

int main(int argc, char **argv)
{
	int opt;

	while ((opt = getopt(argc, argv, "c:v:s:o:")) != -1) {
		switch (opt) {
		case 'c': nchunks = strtoul(optarg, NULL, 0); break;
		case 'v': nvals = atoi(optarg); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'o': object = optarg; break;
		default:
			fprintf(stderr, "usage: esa_stress [-c CHUNKS] [-v VALUES] [-s SEED] [-o OBJECT]\n");
			return 2;
		}
	}
	if (nvals < 8 || nvals > ESA_MAX_VALUES || nvals % 8 || !nchunks) {
		fprintf(stderr, "esa_stress: bad arguments\n");
		return 2;
	}
	return test_harness_run(1, argv);
}
