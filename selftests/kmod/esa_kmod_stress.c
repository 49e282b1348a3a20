// SPDX-License-Identifier: GPL-2.0
/*
 * esa.ko under concurrency, for the test VM's two vCPUs (and the debug
 * kernels, whose lockdep, KASAN, KCSAN and atomic-sleep checks see what
 * it provokes).  For ESA_STRESS_SECONDS (default 8), all at once:
 *   - a thread per CPU sends DATA packets through the kfunc data plane
 *     (jobs 0..3) and through bpf_esa_admit() directly (jobs 4..7, each
 *     generation that admitted a packet recorded by the probe program);
 *   - a thread adds, deletes and sets the priority of those jobs, with
 *     leases of 100 and 200 ms that run out in its pauses;
 *   - a monitor records every event; a thread dumps the jobs again and
 *     again; a thread tries to rmmod (refused: the program holds esa.ko);
 *   - a thread creates network namespaces with jobs, a listener and
 *     admitted packets, and lets them go.
 * Then everything is deleted and checked: each job's events form a valid
 * history (added first, generations in order, every retirement of a used
 * generation followed by its reclaim), the events match the module's
 * counters exactly, every generation that admitted a packet was reported
 * reclaimed, the data plane counted every packet, dumps failed only as
 * interrupted, and rmmod never succeeded.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "kselftest_harness.h"
#include "kmod_test.h"
#include "esa_kf_probe.h"
#include "esa_kf_probe.skel.h"

#define NJOBS		8	/* 0..3 data plane, 4..7 probe */
#define PROBE0		4
#define MAX_EVENTS	400000

struct ev {
	__u8	cmd;
	__u16	id;
	__u32	gen;
};

struct stress {
	struct t_net n;
	struct esa e;
	struct esa_kf_probe_bpf *sk;
	atomic_int stop;
	double	seconds;

	/* control thread */
	int	adds[NJOBS], dels[NJOBS], sets[NJOBS], ctl_err;
	/* packet threads */
	atomic_ullong sent[NJOBS];
	atomic_int pkt_err;
	/* monitor */
	struct ev *ev;
	int	nev, mon_err;
	/* dumps */
	int	dumps, dumps_intr, dump_err;
	/* rmmod */
	int	rmmods, rmmod_bad;
	/* namespaces */
	int	netns, netns_bad;
};

static __u32 rnd(__u32 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu % sysconf(_SC_NPROCESSORS_ONLN), &set);
	sched_setaffinity(0, sizeof(set), &set);
}

struct pkt_arg {
	struct stress *st;
	int cpu;
};

static void *pkt_thread(void *a)
{
	struct pkt_arg *pa = a;
	struct stress *st = pa->st;
	int nvals = st->e.cfg.nvals, probe = bpf_program__fd(st->sk->progs.probe_admit);
	__u32 seed = 0x9e3779b9 * (pa->cpu + 1);
	__s32 v[ESA_MAX_VALUES] = {};
	__u8 buf[2048];
	struct t_run r;

	pin(pa->cpu);
	while (!atomic_load(&st->stop)) {
		int id = rnd(&seed) % NJOBS, rank = rnd(&seed) % 2;

		if (id < PROBE0) {
			struct t_pkt p = t_data(&st->n, id, rank, rnd(&seed) % 64,
						0, v, nvals);

			if (t_run(st->e.prog_fd, buf, t_build(&p, buf),
				  st->n.sw0, NULL, 0, &r))
				atomic_fetch_add(&st->pkt_err, 1);
		} else {
			struct esa_probe pr = {
				.key = ESA_KF_KEY(id, rank, 0, 0,
						  htons(T_WORKER_PORT + id)),
				.saddr = t_worker_ip(rank), .record = 1,
			};

			if (t_run(probe, &pr, sizeof(pr), 0, NULL, 0, &r))
				atomic_fetch_add(&st->pkt_err, 1);
		}
		atomic_fetch_add(&st->sent[id], 1);
	}
	return NULL;
}

static void *ctl_thread(void *a)
{
	struct stress *st = a;
	__u32 seed = 12345;
	struct esa_nl *nl;
	double end = k_now() + st->seconds;

	if (esa_nl_open(&nl)) {
		st->ctl_err++;
		return NULL;
	}
	while (k_now() < end) {
		int id = rnd(&seed) % NJOBS, op = rnd(&seed) % 8, rc;
		struct esa_job j = t_job(2, T_PS_A, 3, id);

		j.lease_ms = (rnd(&seed) % 3) * ESA_LEASE_MS_MIN;
		if (op < 3) {
			rc = esa_nl_job_add(nl, id, &j);
			st->adds[id] += !rc;
			st->ctl_err += rc && rc != -EEXIST;
		} else if (op < 5) {
			rc = esa_nl_job_del(nl, id);
			st->dels[id] += !rc;
			st->ctl_err += rc && rc != -ENOENT;
		} else if (op < 7) {
			rc = esa_nl_job_set_prio(nl, id, rnd(&seed) % 4);
			st->sets[id] += !rc;
			st->ctl_err += rc && rc != -ENOENT;
		} else {
			/* A pause, in which leases run out. */
			usleep(rnd(&seed) % 2 ? 250000 : 20000);
		}
		usleep(rnd(&seed) % 5000);
	}
	atomic_store(&st->stop, 1);
	esa_nl_close(nl);
	return NULL;
}

static int mon_cb(const struct esa_nl_event *e, void *a)
{
	struct stress *st = a;

	if (st->nev == MAX_EVENTS)
		return -ENOSPC;
	st->ev[st->nev++] = (struct ev){ e->cmd, e->id, e->gen };
	return 0;
}

/* Stops at st->stop == 2, once the final deletes are reported. */
static void *mon_thread(void *a)
{
	struct stress *st = a;
	int big = 16 << 20, rc;
	struct esa_nl *mon;

	if (esa_nl_open(&mon) ||
	    setsockopt(esa_nl_fd(mon), SOL_SOCKET, SO_RCVBUFFORCE, &big,
		       sizeof(big)) || esa_nl_join_events(mon)) {
		st->mon_err = -1;
		return NULL;
	}
	esa_nl_set_timeout(mon, 200);
	while (atomic_load(&st->stop) < 2) {
		rc = esa_nl_monitor(mon, mon_cb, st);
		if (rc != -EAGAIN) {
			st->mon_err = rc;
			break;
		}
	}
	esa_nl_close(mon);
	return NULL;
}

static int dump_cb(__u32 id, const struct esa_job *j,
		   const struct esa_nl_job_info *info, void *arg)
{
	return id >= NJOBS;	/* only this test's ids */
}

static void *dump_thread(void *a)
{
	struct stress *st = a;
	struct esa_nl *nl;
	int rc;

	if (esa_nl_open(&nl)) {
		st->dump_err++;
		return NULL;
	}
	while (!atomic_load(&st->stop)) {
		rc = esa_nl_job_dump(nl, dump_cb, NULL);
		st->dumps++;
		st->dumps_intr += rc == -EINTR;
		st->dump_err += rc && rc != -EINTR;
		usleep(2000);
	}
	esa_nl_close(nl);
	return NULL;
}

static void *rmmod_thread(void *a)
{
	struct stress *st = a;

	while (!atomic_load(&st->stop)) {
		st->rmmod_bad += k_rmmod() != -EAGAIN;
		st->rmmods++;
		usleep(100000);
	}
	return NULL;
}

/* A namespace with jobs, a listener and admitted packets, then gone. */
static int netns_child(struct stress *st, __u32 seed)
{
	int probe = bpf_program__fd(st->sk->progs.probe_admit);
	struct esa_nl *nl, *mon;
	struct t_run r;

	if (unshare(CLONE_NEWNET) || esa_nl_open(&nl) || esa_nl_open(&mon) ||
	    esa_nl_join_events(mon))
		return 1;
	for (int id = 0; id < 20; id++) {
		struct esa_job j = t_job(2, T_PS_A, 0, id);

		j.lease_ms = ESA_LEASE_MS_MIN;
		if (esa_nl_job_add(nl, id, &j))
			return 2;
	}
	for (int i = 0; i < 50; i++) {
		int id = rnd(&seed) % 20;
		struct esa_probe pr = {
			.key = ESA_KF_KEY(id, 0, 0, 0, htons(T_WORKER_PORT + id)),
			.saddr = t_worker_ip(0),
		};

		if (t_run(probe, &pr, sizeof(pr), 0, NULL, 0, &r) || pr.ret)
			return 3;
	}
	usleep(rnd(&seed) % 200000);
	return 0;
}

static void *netns_thread(void *a)
{
	struct stress *st = a;
	__u32 seed = 777;

	while (!atomic_load(&st->stop)) {
		pid_t pid = fork();

		if (!pid)
			_exit(netns_child(st, rnd(&seed)));
		st->netns++;
		st->netns_bad += pid < 0 || k_wait(pid) != 0;
		rnd(&seed);
	}
	return NULL;
}

/*
 * Check one job's history of events against the rules of the UAPI
 * header; count what it says happened.
 */
struct hist {
	int	present, pending;	/* a retired gen awaits its reclaim? */
	__u32	cur, retired, last_del;
	int	seen_del;
	int	adds, dels, expiries, reclaims, changes;
};

static const char *hist_step(struct hist *h, const struct ev *e)
{
	switch (e->cmd) {
	case ESA_CMD_JOB_ADDED:
		if (h->present)
			return "ADDED while registered";
		if (h->seen_del && e->gen != h->last_del + 2)
			return "ADDED not two generations after DELETED";
		h->present = 1;
		h->cur = e->gen;
		h->pending = 0;
		h->adds++;
		return NULL;
	case ESA_CMD_JOB_CHANGED:
		if (!h->present || e->gen != h->cur)
			return "CHANGED of no job, or of another generation";
		h->pending = 0;
		h->changes++;
		return NULL;
	case ESA_CMD_JOB_EXPIRED:
		if (!h->present || e->gen != h->cur + 1)
			return "EXPIRED of no job, or not to the next generation";
		h->retired = h->cur;
		h->cur = e->gen;
		h->pending = 1;
		h->expiries++;
		return NULL;
	case ESA_CMD_JOB_DELETED:
		if (!h->present || e->gen != h->cur)
			return "DELETED of no job, or of another generation";
		h->present = 0;
		h->retired = e->gen;
		h->last_del = e->gen;
		h->seen_del = 1;
		h->pending = 1;
		h->dels++;
		return NULL;
	case ESA_CMD_JOB_RECLAIMED:
		if (!h->pending || e->gen != h->retired)
			return "RECLAIMED not right after the retirement of its generation";
		h->pending = 0;
		h->reclaims++;
		return NULL;
	}
	return "unknown event";
}

/* Did probe job id admit packets in generation gen? */
static int used(struct stress *st, __u32 id, __u32 gen)
{
	__u64 k = (__u64)id << 32 | gen, n = 0;

	bpf_map_lookup_elem(bpf_map__fd(st->sk->maps.used), &k, &n);
	return n > 0;
}

/* Every recorded (id, gen) of probe job id, as a count. */
static int used_gens(struct stress *st, __u32 id)
{
	__u64 k, next, *prev = NULL;
	int fd = bpf_map__fd(st->sk->maps.used), n = 0;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		n += (next >> 32) == id;
		k = next;
		prev = &k;
	}
	return n;
}

static struct stress st;

static void start(struct __test_metadata *_metadata, pthread_t *t,
		  void *(*fn)(void *), void *arg)
{
	ASSERT_EQ(0, pthread_create(t, NULL, fn, arg));
}

/* One job's history, against its counters and the probe's records. */
static void check_job(struct __test_metadata *_metadata, int id,
		      const struct esa_nl_counters *c)
{
	struct hist h = {};
	int reclaimed_unused = 0;

	for (int i = 0; i < st.nev; i++) {
		const char *why;

		if (st.ev[i].id != id)
			continue;
		why = hist_step(&h, &st.ev[i]);
		if (why) {
			TH_LOG("job %d, event %d (cmd %d gen %u): %s", id, i,
			       st.ev[i].cmd, st.ev[i].gen, why);
			EXPECT_EQ(NULL, why);
			return;
		}
		if (id >= PROBE0 && st.ev[i].cmd == ESA_CMD_JOB_RECLAIMED)
			reclaimed_unused += !used(&st, id, st.ev[i].gen);
	}
	TH_LOG("job %d: %d adds %d deletes %d sets %d expiries %d reclaims%s",
	       id, h.adds, h.dels, h.changes, h.expiries, h.reclaims,
	       id < PROBE0 ? "" : " (probe)");
	EXPECT_EQ(0, h.present);
	EXPECT_EQ(st.adds[id], h.adds);
	EXPECT_EQ(st.dels[id], h.dels);
	EXPECT_EQ(st.sets[id], h.changes);
	EXPECT_EQ(c->adds, h.adds);
	EXPECT_EQ(c->deletes, h.dels);
	EXPECT_EQ(c->expiries, h.expiries);
	EXPECT_EQ(c->reclaims, h.reclaims);
	if (id >= PROBE0) {
		/* Every generation that admitted a packet was reclaimed,
		 * and only those.
		 */
		EXPECT_EQ(used_gens(&st, id), h.reclaims);
		EXPECT_EQ(0, reclaimed_unused);
	} else {
		EXPECT_EQ(atomic_load(&st.sent[id]),
			  t_ctr(&st.e, id, ESA_C_RX));
	}
}

FIXTURE(kmod) {
	int unused;
};

FIXTURE_SETUP(kmod)
{
}

FIXTURE_TEARDOWN(kmod)
{
}

TEST_F_TIMEOUT(kmod, stress, K_TIMEOUT)
{
	const char *sec = getenv("ESA_STRESS_SECONDS");
	struct esa_nl_counters tot, c[NJOBS], sum = {};
	char err[ESA_ERR_LEN] = "";
	struct bpf_program *prog;
	struct pkt_arg pa[2];
	struct esa_opts o;
	struct esa_nl *nl;
	pthread_t t[8];

	if (!k_module_loaded())
		SKIP(return, "esa.ko is not loaded");
	st.seconds = sec ? atof(sec) : 8;
	st.ev = calloc(MAX_EVENTS, sizeof(*st.ev));
	ASSERT_NE(NULL, st.ev);
	ASSERT_EQ(0, esa_netns_setup(&st.n));
	esa_opts_default(&o);
	o.kfunc = 1;
	if (esa_load(&st.e, &o, err, sizeof(err)))
		TH_LOG("%s", err);
	ASSERT_NE(NULL, st.e.obj);
	ASSERT_EQ(0, t_port_register(&st.e, st.n.sw0));
	ASSERT_EQ(0, t_port_register(&st.e, st.n.sw1));
	st.sk = esa_kf_probe_bpf__open();
	ASSERT_NE(NULL, st.sk);
	bpf_object__for_each_program(prog, st.sk->obj)
		bpf_program__set_autoload(prog,
			!strncmp(bpf_program__name(prog), "probe_", 6));
	ASSERT_EQ(0, esa_kf_probe_bpf__load(st.sk));

	start(_metadata, &t[0], mon_thread, &st);
	usleep(200000);
	for (int i = 0; i < 2; i++) {
		pa[i] = (struct pkt_arg){ &st, i };
		start(_metadata, &t[1 + i], pkt_thread, &pa[i]);
	}
	start(_metadata, &t[3], ctl_thread, &st);
	start(_metadata, &t[4], dump_thread, &st);
	start(_metadata, &t[5], rmmod_thread, &st);
	start(_metadata, &t[6], netns_thread, &st);
	for (int i = 1; i < 7; i++)
		pthread_join(t[i], NULL);

	/* Delete what is left; wait for the monitor to hear it. */
	ASSERT_EQ(0, esa_nl_open(&nl));
	for (int id = 0; id < NJOBS; id++)
		st.dels[id] += !esa_nl_job_del(nl, id);
	usleep(500000);
	atomic_store(&st.stop, 2);
	pthread_join(t[0], NULL);

	TH_LOG("%.0f s: %llu packets, %d events, %d dumps (%d interrupted), %d rmmod refused, %d namespaces",
	       st.seconds, (unsigned long long)(atomic_load(&st.sent[0]) +
		atomic_load(&st.sent[1]) + atomic_load(&st.sent[2]) +
		atomic_load(&st.sent[3]) + atomic_load(&st.sent[4]) +
		atomic_load(&st.sent[5]) + atomic_load(&st.sent[6]) +
		atomic_load(&st.sent[7])),
	       st.nev, st.dumps, st.dumps_intr, st.rmmods, st.netns);
	EXPECT_EQ(0, st.ctl_err);
	EXPECT_EQ(0, atomic_load(&st.pkt_err));
	EXPECT_EQ(0, st.mon_err);
	EXPECT_GT(MAX_EVENTS, st.nev);
	EXPECT_EQ(0, st.dump_err);
	EXPECT_EQ(0, st.rmmod_bad);
	EXPECT_LT(0, st.rmmods);
	EXPECT_EQ(0, st.netns_bad);
	EXPECT_TRUE(k_module_loaded());

	ASSERT_EQ(0, esa_nl_counters(nl, -1, &tot, NULL));
	for (int id = 0; id < NJOBS; id++) {
		ASSERT_EQ(0, esa_nl_counters(nl, id, &tot, &c[id]));
		check_job(_metadata, id, &c[id]);
		sum.adds += c[id].adds;
		sum.deletes += c[id].deletes;
		sum.expiries += c[id].expiries;
		sum.reclaims += c[id].reclaims;
	}
	/* The namespace's totals are its ids' sums; nothing is left. */
	EXPECT_EQ(sum.adds, tot.adds);
	EXPECT_EQ(sum.deletes, tot.deletes);
	EXPECT_EQ(sum.expiries, tot.expiries);
	EXPECT_EQ(sum.reclaims, tot.reclaims);
	EXPECT_EQ(tot.adds, tot.deletes);
	EXPECT_EQ(0, tot.foreign);
	esa_nl_close(nl);
	esa_kf_probe_bpf__destroy(st.sk);
	esa_close(&st.e);
	free(st.ev);
}

TEST_HARNESS_MAIN
