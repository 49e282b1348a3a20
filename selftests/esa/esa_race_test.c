// SPDX-License-Identifier: GPL-2.0
/*
 * The words the data path and the control plane share, under their races:
 * a job's life word (generation and activity, include/esa_maps.h), a job's
 * map entry while the data path moves its generation (user/common/jobs.c),
 * and a tombstone that two chunks a ring apart share (include/esa_policy.h).
 * What the XDP program compiles is what runs here.
 *
 * usage: esa_race_test [ -n ROUNDS ]
 */
#include <getopt.h>
#include <pthread.h>
#include <sched.h>

#include "testlib.h"
#include "kselftest_harness.h"

static __u32 rounds = 200000;

/* Run the calling thread on cpu (modulo the CPUs there are). */
static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu % sysconf(_SC_NPROCESSORS_ONLN), &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* ------------------------------------------------------------------ */
/* The life word: a packet's step, the loser's path made deterministic */
/* ------------------------------------------------------------------ */

#define LEASE	100

struct life_case {
	const char *what;
	__u64	seen;		/* what the packet's CPU read */
	__u64	now;		/* the word when it swaps (another CPU's) */
	__u32	now_ms;
	__u32	gen;		/* the generation the packet must take */
	int	renewed;
	__u64	after;		/* the word afterwards */
};

static const struct life_case life_cases[] = {
	{ "same millisecond: no write", ESA_LIFE(5, 1000), ESA_LIFE(5, 1000),
	  1000, 5, 0, ESA_LIFE(5, 1000) },
	{ "activity stamped", ESA_LIFE(5, 1000), ESA_LIFE(5, 1000),
	  1040, 5, 0, ESA_LIFE(5, 1040) },
	{ "lease over: a new generation", ESA_LIFE(5, 1000), ESA_LIFE(5, 1000),
	  1000 + LEASE + 1, 6, 1, ESA_LIFE(6, 1000 + LEASE + 1) },
	{ "lease over across the clock's wrap", ESA_LIFE(9, 0xffffffc0),
	  ESA_LIFE(9, 0xffffffc0), 0x40, 10, 1, ESA_LIFE(10, 0x40) },
	/* the loser's path: the word moved between the read and the swap */
	{ "lost a renewal to another CPU's", ESA_LIFE(5, 1000),
	  ESA_LIFE(6, 1000 + LEASE + 1), 1000 + LEASE + 1, 6, 0,
	  ESA_LIFE(6, 1000 + LEASE + 1) },
	{ "lost a stamp to a renewal", ESA_LIFE(5, 1000),
	  ESA_LIFE(6, 1000 + LEASE + 1), 1030, 6, 0,
	  ESA_LIFE(6, 1000 + LEASE + 1) },
	{ "lost a renewal to a delete's bump", ESA_LIFE(5, 1000),
	  ESA_LIFE(6, 1090), 1000 + LEASE + 1, 6, 0, ESA_LIFE(6, 1090) },
	{ "lost a stamp to another stamp", ESA_LIFE(5, 1000), ESA_LIFE(5, 1001),
	  1002, 5, 0, ESA_LIFE(5, 1001) },
};

TEST(life_word_step_and_its_loser)
{
	for (size_t k = 0; k < ARRAY_SIZE(life_cases); k++) {
		const struct life_case *c = &life_cases[k];
		__u64 word = c->now;
		int renewed = -1;
		__u32 gen;

		gen = esa_life_activity(&word, c->seen, LEASE, c->now_ms, &renewed);
		EXPECT_EQ(c->gen, gen) TH_LOG("%s", c->what);
		EXPECT_EQ(c->renewed, renewed) TH_LOG("%s", c->what);
		EXPECT_EQ(c->after, word) TH_LOG("%s", c->what);
	}
}

/* No lease: the generation never moves, whatever the silence. */
TEST(life_word_without_lease)
{
	__u64 word = ESA_LIFE(3, 10);
	int renewed;

	EXPECT_EQ(3, esa_life_activity(&word, word, 0, 10 + 3600000, &renewed));
	EXPECT_EQ(0, renewed);
	EXPECT_EQ(ESA_LIFE(3, 10 + 3600000), word);
}

/* ------------------------------------------------------------------ */
/* A job's entry: the control plane never undoes a data-path bump      */
/* ------------------------------------------------------------------ */

struct bumper {
	__u64	*life;
	__u32	n;		/* at least this many renewals */
	__u32	made;
	volatile __u64 ops;	/* the control plane's changes so far */
	volatile bool done;
};

/*
 * The data path renewing the job's lease, esa_life_activity() on the map,
 * until it made n renewals and the control plane made changes of its own
 * all the while.
 */
static void *bump_main(void *arg)
{
	struct bumper *b = arg;
	int renewed;

	pin(1);
	while (b->made < b->n || b->ops < 64 * 64) {
		__u64 seen = __atomic_load_n(b->life, __ATOMIC_RELAXED);

		esa_life_activity(b->life, seen, LEASE,
				  esa_life_ms(seen) + LEASE + 1, &renewed);
		b->made += renewed;
	}
	b->done = true;
	return NULL;
}

TEST(job_changes_keep_data_path_bumps)
{
	struct esa_job j = t_job(2, T_PS_A, 7, 3);
	char err[ESA_ERR_LEN];
	struct bumper b = {};
	__u64 cp_bumps = 0, prios = 0;
	struct esa_opts o;
	pthread_t tid;
	__u32 g0, gen;
	struct esa e;

	esa_opts_default(&o);
	o.nvals = 32;
	o.slots = 64;
	o.max_jobs = 16;
	o.kfunc = 0;
	ASSERT_EQ(0, esa_load(&e, &o, err, sizeof(err))) TH_LOG("%s", err);
	j.lease_ms = LEASE;
	ASSERT_EQ(0, esa_job_add(&e, 3, &j, err, sizeof(err))) TH_LOG("%s", err);
	g0 = esa_job_gen(&j);
	ASSERT_EQ(0, pin(0));
	b.life = &e.jobs[3].life;
	b.n = rounds;
	ASSERT_EQ(0, pthread_create(&tid, NULL, bump_main, &b));
	/* set_prio, and now and then delete and add again, all the while */
	for (__u64 k = 0; !b.done; k++) {
		b.ops = k;
		if (!esa_job_set_prio(&e, 3, k & 7))
			prios++;
		if (k % 64 != 63)
			continue;
		if (!esa_job_del(&e, 3))
			cp_bumps++;
		j = t_job(2, T_PS_A, 7, 3);
		j.lease_ms = LEASE;
		if (!esa_job_add(&e, 3, &j, err, sizeof(err)))
			cp_bumps++;
	}
	pthread_join(tid, NULL);
	ASSERT_EQ(0, esa_job_read(&e, 3, &j));
	gen = esa_job_gen(&j);
	TH_LOG("%u renewals by the data path, %llu set_prio, %llu deletes and adds",
	       b.made, (unsigned long long)prios, (unsigned long long)cp_bumps);
	EXPECT_LE(64 * 64, prios);
	EXPECT_LE(64, cp_bumps);
	EXPECT_EQ((__u32)(g0 + b.made + cp_bumps), gen);
	EXPECT_EQ(ESA_JOB_ACTIVE, j.state);
	esa_close(&e);
}

/* ------------------------------------------------------------------ */
/* A tombstone two chunks share: each write lands whole                */
/* ------------------------------------------------------------------ */

/*
 * One of two chunks a ring apart: it writes its tombstone and reads the
 * entry back, on its own CPU, while the other does the same.
 */
struct tomb_side {
	struct esa_tomb	*t;
	__u32	gen, seq;
	__u8	kind;
	int	cpu;
	struct tomb_side *other;
	volatile bool	*stop;
	__u64	iters, seen_other, torn;
};

/* Is the word in snap one of the two sides' whole words? */
static int tomb_whole(const struct tomb_side *a, const struct esa_tomb *snap)
{
	return esa_tomb_kind(snap, a->gen, a->seq) == a->kind ||
	       esa_tomb_kind(snap, a->other->gen, a->other->seq) == a->other->kind;
}

static void tomb_read_back(struct tomb_side *a)
{
	struct esa_tomb snap = { __atomic_load_n(&a->t->word, __ATOMIC_RELAXED) };

	if (!tomb_whole(a, &snap)) {
		if (a->torn++ < 4)
			fprintf(stderr, "# torn tombstone 0x%016llx\n",
				(unsigned long long)snap.word);
	} else if (esa_tomb_kind(&snap, a->other->gen, a->other->seq) ==
		   a->other->kind) {
		a->seen_other++;
	}
}

static void *tomb_side_main(void *arg)
{
	struct tomb_side *a = arg;

	pin(a->cpu);
	while (!*a->stop) {
		esa_tomb_set(a->t, a->gen, a->seq, a->kind);
		a->iters++;
		/* a few reads: the other's word, whole or torn, lands here */
		for (int r = 0; r < 8; r++)
			tomb_read_back(a);
		/* until both saw the other's often, or long enough to tell */
		if ((a->iters >= 10ULL * rounds && a->seen_other >= rounds &&
		     a->other->seen_other >= rounds) ||
		    a->iters >= 500ULL * rounds)
			*a->stop = true;
	}
	return NULL;
}

TEST(tomb_shared_by_two_chunks_never_tears)
{
	static struct esa_tomb t;
	volatile bool stop = false;
	/* chunks a ring apart, in generations that differ in every byte */
	struct tomb_side s[2] = {
		{ &t, 0x01234567, 7, ESA_TOMB_DONE, 0, &s[1], &stop },
		{ &t, 0x3edcba98, 7 + ESA_TOMB_RING, ESA_TOMB_PS, 1, &s[0], &stop },
	};
	struct esa_tomb last;
	pthread_t tid[2];

	ASSERT_EQ(esa_tomb_index(1, s[0].seq), esa_tomb_index(1, s[1].seq));
	for (int k = 0; k < 2; k++)
		ASSERT_EQ(0, pthread_create(&tid[k], NULL, tomb_side_main, &s[k]));
	for (int k = 0; k < 2; k++)
		pthread_join(tid[k], NULL);
	for (int k = 0; k < 2; k++) {
		TH_LOG("side %d: %llu writes, the other's word read back %llu times, %llu torn",
		       k, (unsigned long long)s[k].iters,
		       (unsigned long long)s[k].seen_other,
		       (unsigned long long)s[k].torn);
		EXPECT_EQ(0, s[k].torn);
	}
	last.word = t.word;
	EXPECT_TRUE(tomb_whole(&s[0], &last));
	/* a run where the two never wrote at once proves nothing */
	if (!s[0].seen_other || !s[1].seen_other)
		SKIP(return, "the two sides never ran at once (a loaded machine?)");
}

int main(int argc, char **argv)
{
	int opt;

	while ((opt = getopt(argc, argv, "n:")) != -1) {
		switch (opt) {
		case 'n':
			rounds = strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: esa_race_test [-n ROUNDS]\n");
			return 2;
		}
	}
	if (rounds < 1000) {
		fprintf(stderr, "esa_race_test: at least 1000 rounds\n");
		return 2;
	}
	return test_harness_run(1, argv);
}
