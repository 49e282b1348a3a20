// SPDX-License-Identifier: GPL-2.0
/*
 * The XDP data plane in kfunc mode (build/esa_kfunc.bpf.o, or
 * $ESA_KFUNC_OBJECT) over esa.ko's registry: golden packets through
 * BPF_PROG_TEST_RUN, with jobs registered, changed, deleted and expired
 * through netlink; one program refusing a second namespace's packets; the
 * kfuncs called directly (esa_kf_probe.bpf.c): the registration, the
 * module's own clock, and programs passing what the kfuncs must not get;
 * an admission held inside the kfunc (a kprobe) while its job is deleted
 * and added again; two levels (a leaf's sum up, a spine's leaves).
 * Each test has a namespace of its own (testlib.h's topology), hence a
 * registry of its own.  Needs root and esa.ko.
 */
#include <bpf/btf.h>
#include <pthread.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kmod_test.h"
#include "esa_kf_probe.h"
#include "esa_kf_probe.skel.h"

#define JOB	3

FIXTURE(kf) {
	struct t_net n;
	struct esa e;
	struct esa_nl *nl;
	int nvals;
};

FIXTURE_SETUP(kf)
{
	char err[ESA_ERR_LEN] = "";
	struct esa_opts o;

	self->e.obj = NULL;
	if (!k_module_loaded())
		SETUP_SKIP("esa.ko is not loaded");
	ASSERT_EQ(0, esa_netns_setup(&self->n));
	ASSERT_EQ(0, esa_nl_open(&self->nl));
	esa_opts_default(&o);
	o.kfunc = 1;
	if (esa_load(&self->e, &o, err, sizeof(err)))
		TH_LOG("%s", err);
	ASSERT_NE(NULL, self->e.obj);
	ASSERT_EQ(1, self->e.cfg.kfunc);
	ASSERT_EQ(0, t_port_register(&self->e, self->n.sw0));
	ASSERT_EQ(0, t_port_register(&self->e, self->n.sw1));
	self->nvals = self->e.cfg.nvals;
}

FIXTURE_TEARDOWN(kf)
{
	if (self->e.obj)
		esa_close(&self->e);
	esa_nl_close(self->nl);
}

static void vals(__s32 *v, int n, int k)
{
	for (int i = 0; i < n; i++)
		v[i] = k * 1000 + i - 100;
}

/* Run the data packet of (job, rank, seq) with values k; its verdict. */
static int data(struct __test_metadata *_metadata, FIXTURE_DATA(kf) *self,
		__u16 job, __u16 rank, __u32 seq, __u8 prio, int k,
		struct t_run *r)
{
	__s32 v[ESA_MAX_VALUES];
	struct t_pkt p;

	vals(v, self->nvals, k);
	p = t_data(&self->n, job, rank, seq, prio, v, self->nvals);
	if (rank == 1)
		p.sport = 6000;	/* rank 1 registers port 0: any */
	EXPECT_EQ(0, t_send(&self->e, &p, self->n.sw0, r));
	return r->verdict;
}

#define DATA(rank, seq, prio, k) data(_metadata, self, JOB, rank, seq, prio, k, &r)

static __u32 add_job(struct __test_metadata *_metadata, FIXTURE_DATA(kf) *self,
		     __u8 max_prio, __u32 lease_ms)
{
	struct esa_job j = t_job(2, T_PS_A, max_prio, JOB);
	char err[ESA_ERR_LEN];

	j.rank[1].port = 0;
	j.lease_ms = lease_ms;
	EXPECT_EQ(0, k_job_add(&self->e, self->nl, JOB, &j, err, sizeof(err)))
		TH_LOG("%s", err);
	return esa_job_gen(&j);
}

/* The slot of chunk seq of JOB (registered without a home). */
static __u32 t_slot_of_kf(FIXTURE_DATA(kf) *self, __u32 seq)
{
	return esa_slot_index(self->e.cfg.policy, JOB, seq, self->e.cfg.slots, 0, 0);
}

/* The sum left as a RESULT for both ranks, by generation gen's slot. */
static void check_result(struct __test_metadata *_metadata,
			 FIXTURE_DATA(kf) *self, const struct t_run *r,
			 __u32 gen, int k0, int k1)
{
	__s32 a[ESA_MAX_VALUES], b[ESA_MAX_VALUES], got[ESA_MAX_VALUES];
	struct esa_slot slot;
	struct t_pkt p;

	ASSERT_EQ(XDP_REDIRECT, r->verdict);
	ASSERT_EQ(0, t_parse(r->pkt, r->len, &p, got, ESA_MAX_VALUES));
	EXPECT_EQ(ESA_T_RESULT, p.type);
	EXPECT_EQ(3, p.bitmap);
	EXPECT_EQ(ESA_RANK_NONE, p.rank);
	EXPECT_EQ(0, r->metalen);
	ASSERT_EQ(0, t_slot(&self->e, t_slot_of_kf(self, p.seq), &slot, NULL));
	EXPECT_EQ(gen, slot.gen);	/* the generation that completed it */
	vals(a, self->nvals, k0);
	vals(b, self->nvals, k1);
	for (int i = 0; i < self->nvals; i++)
		if (got[i] != a[i] + b[i]) {
			EXPECT_EQ(a[i] + b[i], got[i]);
			break;
		}
}

TEST_F_TIMEOUT(kf, registered_job_aggregates, K_TIMEOUT)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), gen;
	struct t_run r;

	gen = add_job(_metadata, self, 3, 0);
	EXPECT_EQ(XDP_DROP, DATA(0, 1, 2, 1));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_CLAIMED));
	DATA(1, 1, 2, 2);
	check_result(_metadata, self, &r, gen, 1, 2);
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_AGGREGATED));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_COMPLETED));
	EXPECT_EQ(0, t_ctr(&self->e, JOB, ESA_C_DROP_JOB));

	ASSERT_EQ(0, bpf_obj_get_info_by_fd(self->e.prog_fd, &info, &len));
	TH_LOG("esa_xdp (kfunc variant): %u instructions verified, %u in the program",
		       info.verified_insns, info.xlated_prog_len / 8);
	EXPECT_LT(0, info.verified_insns);
}

TEST_F_TIMEOUT(kf, unregistered_job_dropped, K_TIMEOUT)
{
	__s32 v[ESA_MAX_VALUES];
	struct t_pkt p;
	struct t_run r;

	vals(v, self->nvals, 1);
	p = t_data(&self->n, 5, 0, 1, 0, v, self->nvals);
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, 5, ESA_C_RX));
	EXPECT_EQ(1, t_ctr(&self->e, 5, ESA_C_DROP_JOB));
	EXPECT_EQ(0, t_ctr(&self->e, 5, ESA_C_CLAIMED));
}

/* Each check of the registration, by the kfunc, with its drop counter. */
TEST_F_TIMEOUT(kf, admission, K_TIMEOUT)
{
	__s32 v[ESA_MAX_VALUES];
	struct t_pkt p;
	struct t_run r;

	add_job(_metadata, self, 3, 0);
	vals(v, self->nvals, 1);

	p = t_data(&self->n, JOB, 2, 1, 0, v, self->nvals);	/* 2 ranks */
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	EXPECT_EQ(XDP_DROP, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_DROP_RANK));

	EXPECT_EQ(XDP_DROP, DATA(0, 1, 4, 1));			/* prio > 3 */
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_DROP_PRIO));

	p = t_data(&self->n, JOB, 0, 1, 0, v, self->nvals);
	p.saddr = t_worker_ip(1);				/* not rank 0 */
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_DROP_SPOOF));
	p = t_data(&self->n, JOB, 0, 1, 0, v, self->nvals);
	p.sport++;						/* not its port */
	ASSERT_EQ(0, t_send(&self->e, &p, self->n.sw0, &r));
	EXPECT_EQ(2, t_ctr(&self->e, JOB, ESA_C_DROP_SPOOF));
	EXPECT_EQ(0, t_ctr(&self->e, JOB, ESA_C_CLAIMED));

	/* A raised maximum applies to the next packet. */
	ASSERT_EQ(0, esa_nl_job_set_prio(self->nl, JOB, 9));
	EXPECT_EQ(XDP_DROP, DATA(0, 1, 4, 1));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_DROP_PRIO));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_CLAIMED));
	/* Rank 1 registered port 0: any source port will do. */
	DATA(1, 1, 4, 2);
	EXPECT_EQ(XDP_REDIRECT, r.verdict);
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_COMPLETED));
}

/* Delete frees the job's slots at once; the id comes back newer. */
TEST_F_TIMEOUT(kf, delete_and_reuse, K_TIMEOUT)
{
	struct esa_nl_counters t, c;
	struct k_events e = {};
	const struct k_event *ev;
	struct esa_nl *mon;
	__u32 gen, gen2;
	struct t_run r;

	ASSERT_EQ(0, esa_nl_open(&mon));
	ASSERT_EQ(0, esa_nl_join_events(mon));
	gen = add_job(_metadata, self, 0, 0);
	EXPECT_EQ(XDP_DROP, DATA(0, 1, 0, 1));		/* claims a slot */
	ASSERT_EQ(0, esa_nl_job_del(self->nl, JOB));
	EXPECT_EQ(XDP_DROP, DATA(1, 1, 0, 2));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_DROP_JOB));

	/* The used generation was reclaimed, after the delete. */
	ASSERT_EQ(1, k_wait_event(mon, &e, ESA_CMD_JOB_RECLAIMED, JOB, 2000));
	ev = k_find_event(&e, ESA_CMD_JOB_DELETED, JOB);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(gen, ev->gen);
	EXPECT_EQ(gen, k_find_event(&e, ESA_CMD_JOB_RECLAIMED, JOB)->gen);
	ASSERT_EQ(0, esa_nl_counters(self->nl, JOB, &t, &c));
	EXPECT_EQ(1, c.reclaims);

	gen2 = add_job(_metadata, self, 0, 0);
	EXPECT_EQ(gen + 2, gen2);
	/* The old partial is dead: rank 1 starts a new one in its slot. */
	EXPECT_EQ(XDP_DROP, DATA(1, 1, 0, 2));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_RECLAIMED));
	EXPECT_EQ(2, t_ctr(&self->e, JOB, ESA_C_CLAIMED));
	DATA(0, 1, 0, 3);
	check_result(_metadata, self, &r, gen2, 3, 2);
	esa_nl_close(mon);
}

/*
 * A silent job loses its slots when its lease runs out (the module's work
 * opens a new generation and says so); its next packet goes on in it.
 */
TEST_F_TIMEOUT(kf, lease_expiry, K_TIMEOUT)
{
	struct esa_nl_job_info info;
	struct esa_nl_counters t, c;
	struct k_events e = {};
	const struct k_event *ev;
	struct esa_job got;
	struct esa_nl *mon;
	struct t_run r;
	__u32 gen;

	ASSERT_EQ(0, esa_nl_open(&mon));
	ASSERT_EQ(0, esa_nl_join_events(mon));
	gen = add_job(_metadata, self, 0, 300);
	EXPECT_EQ(XDP_DROP, DATA(0, 1, 0, 1));
	ASSERT_EQ(1, k_wait_event(mon, &e, ESA_CMD_JOB_RECLAIMED, JOB, 5000));
	ev = k_find_event(&e, ESA_CMD_JOB_EXPIRED, JOB);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(gen + 1, ev->gen);
	EXPECT_EQ(gen, k_find_event(&e, ESA_CMD_JOB_RECLAIMED, JOB)->gen);
	ASSERT_EQ(0, esa_nl_job_get(self->nl, JOB, &got, &info));
	EXPECT_EQ(1, info.expired);
	EXPECT_EQ(gen + 1, esa_job_gen(&got));
	ASSERT_EQ(0, esa_nl_counters(self->nl, JOB, &t, &c));
	EXPECT_EQ(1, c.expiries);
	EXPECT_EQ(1, c.reclaims);

	/* The next packet: counted as the expiry's end, in the new
	 * generation, and it takes over the dead partial's slot.
	 */
	EXPECT_EQ(XDP_DROP, DATA(1, 1, 0, 2));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_EXPIRED));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_RECLAIMED));
	ASSERT_EQ(0, esa_nl_job_get(self->nl, JOB, &got, &info));
	EXPECT_EQ(0, info.expired);
	EXPECT_EQ(gen + 1, esa_job_gen(&got));
	DATA(0, 1, 0, 3);
	check_result(_metadata, self, &r, gen + 1, 3, 2);
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_EXPIRED));
	esa_nl_close(mon);
}

/*
 * One program serves one namespace: the first to send it a packet.  A
 * packet from a second namespace, whose registry has a job of the same id,
 * is dropped before it touches a slot (else that job's generation, unknown
 * here, would make this namespace's partial look dead and be taken), and
 * the second namespace's counters and the kernel log say why.
 */
TEST_F_TIMEOUT(kf, program_serves_one_namespace, K_TIMEOUT)
{
	struct esa_job j = t_job(2, T_PS_A, 0, JOB);
	struct t_run r;
	__u32 gen;
	int p[2];
	pid_t pid;
	char c;

	gen = add_job(_metadata, self, 0, 0);
	EXPECT_EQ(XDP_DROP, DATA(0, 1, 0, 1));		/* binds, claims */
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_CLAIMED));
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct esa_nl_counters t;
		__s32 v[ESA_MAX_VALUES];
		struct esa_nl *nl;
		__u8 buf[2048];
		struct t_pkt pk;
		int len, bad = 0;

		j.rank[1].port = 0;
		vals(v, self->nvals, 9);
		pk = t_data(&self->n, JOB, 1, 1, 0, v, self->nvals);
		pk.sport = 6000;
		len = t_build(&pk, buf);
		if (unshare(CLONE_NEWNET) || esa_nl_open(&nl) ||
		    esa_nl_job_add(nl, JOB, &j) ||
		    t_run(self->e.prog_fd, buf, len, 0, NULL, 0, &r))
			_exit(100);
		bad |= (r.verdict != XDP_DROP) << 0;
		bad |= (esa_nl_counters(nl, -1, &t, NULL) || t.foreign != 1) << 1;
		c = bad;
		_exit(write(p[1], &c, 1) == 1 ? bad : 101);
	}
	EXPECT_EQ(0, k_wait(pid));
	ASSERT_EQ(1, read(p[0], &c, 1));
	/* Counted as of an unknown job, in the program's counters. */
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_DROP_JOB));
	EXPECT_EQ(0, t_ctr(&self->e, JOB, ESA_C_RECLAIMED));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_CLAIMED));
	/* This namespace's partial survived: rank 1 completes it. */
	DATA(1, 1, 0, 2);
	check_result(_metadata, self, &r, gen, 1, 2);
	EXPECT_EQ(0, system("dmesg | grep -q 'refused: its XDP program (or one sharing its maps) serves netns cookie'"));
}

/*
 * A second program, loaded by hand from the same object, sharing every
 * map the loader pins (slots, accumulators, ..., and the binding), as a
 * loader reusing /sys/fs/bpf/esa/ would: in another namespace it serves
 * nobody, whatever that namespace registers, because the slots it would
 * touch serve the first program's namespace.  Returns the second
 * program's fd (in its object *obj), or -errno.
 */
static int load_sharing(FIXTURE_DATA(kf) *self, struct bpf_object **obj)
{
	const char *path = getenv("ESA_KFUNC_OBJECT");
	struct bpf_map *m, *mine;
	__u32 zero = 0;
	char ro[4096];
	int err;

	*obj = path ? bpf_object__open_file(path, NULL) : NULL;
	if (!*obj)
		return -ENOENT;
	bpf_object__for_each_map(m, *obj) {
		if (bpf_map__is_internal(m)) {
			/* the same configuration: the first's .rodata */
			if (!strstr(bpf_map__name(m), ".rodata") ||
			    bpf_map__value_size(m) > sizeof(ro) ||
			    bpf_map_lookup_elem(self->e.cfg_fd, &zero, ro))
				continue;
			bpf_map__set_initial_value(m, ro, bpf_map__value_size(m));
			continue;
		}
		mine = bpf_object__find_map_by_name(self->e.obj, bpf_map__name(m));
		if (!mine)
			return -ENOENT;
		err = bpf_map__reuse_fd(m, bpf_map__fd(mine));
		if (err)
			return err;
	}
	err = bpf_object__load(*obj);
	if (err)
		return err;
	return bpf_program__fd(bpf_object__find_program_by_name(*obj, "esa_xdp"));
}

TEST_F_TIMEOUT(kf, programs_sharing_maps_serve_one_namespace, K_TIMEOUT)
{
	struct esa_job j = t_job(2, T_PS_A, 0, JOB);
	struct t_run r;
	__u32 gen;
	pid_t pid;

	if (!getenv("ESA_KFUNC_OBJECT"))
		SKIP(return, "ESA_KFUNC_OBJECT (the kfunc variant's object) not set");
	gen = add_job(_metadata, self, 0, 0);
	EXPECT_EQ(XDP_DROP, DATA(0, 1, 0, 1));		/* binds, claims */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct esa_nl_counters t;
		__s32 v[ESA_MAX_VALUES];
		struct bpf_object *obj;
		struct esa_nl *nl;
		__u8 buf[2048];
		struct t_pkt pk;
		int len, fd;

		j.rank[1].port = 0;
		vals(v, self->nvals, 9);
		pk = t_data(&self->n, JOB, 1, 1, 0, v, self->nvals);
		pk.sport = 6000;
		len = t_build(&pk, buf);
		if (unshare(CLONE_NEWNET) || esa_nl_open(&nl) ||
		    esa_nl_job_add(nl, JOB, &j))
			_exit(100);
		fd = load_sharing(self, &obj);
		if (fd < 0)
			_exit(101);
		if (t_run(fd, buf, len, 0, NULL, 0, &r))
			_exit(102);
		if (r.verdict != XDP_DROP)
			_exit(1);
		if (esa_nl_counters(nl, -1, &t, NULL) || t.foreign != 1)
			_exit(2);
		bpf_object__close(obj);
		_exit(0);
	}
	/* 1: admitted there; 2: not counted as foreign there. */
	EXPECT_EQ(0, k_wait(pid));
	EXPECT_EQ(0, t_ctr(&self->e, JOB, ESA_C_RECLAIMED));
	/* This namespace's partial survived: rank 1 completes it. */
	DATA(1, 1, 0, 2);
	check_result(_metadata, self, &r, gen, 1, 2);
}

/* A probe program of the skeleton, alone (the others not loaded). */
static struct esa_kf_probe_bpf *probe_open(const char *only)
{
	struct esa_kf_probe_bpf *sk = esa_kf_probe_bpf__open();
	struct bpf_program *prog;

	if (!sk)
		return NULL;
	bpf_object__for_each_program(prog, sk->obj)
		bpf_program__set_autoload(prog,
					  !strcmp(bpf_program__name(prog), only));
	return sk;
}

static int probe_run(int fd, struct esa_probe *pr)
{
	struct t_run r;
	int err = t_run(fd, pr, sizeof(*pr), 0, NULL, 0, &r);

	if (!err)
		memcpy(pr, r.pkt, sizeof(*pr));
	return err;
}

/*
 * The registration the kfuncs report is the one netlink reports: the
 * generation the add opened, unchanged by a lease expiry (after which the
 * generation is one more), and the admission times the lease with the
 * module's clock.
 */
TEST_F_TIMEOUT(kf, reg_through_the_kfuncs, K_TIMEOUT)
{
	struct esa_probe pr = {};
	struct esa_nl_job_info info;
	struct bpf_program *prog_it;
	struct esa_kf_probe_bpf *sk;
	struct esa_job got;
	__u32 gen;

	sk = esa_kf_probe_bpf__open();
	ASSERT_NE(NULL, sk);
	bpf_object__for_each_program(prog_it, sk->obj)
		bpf_program__set_autoload(prog_it,
			!strncmp(bpf_program__name(prog_it), "probe_", 6));
	ASSERT_EQ(0, esa_kf_probe_bpf__load(sk));
	/* Long enough for the calls below even under emulation. */
	gen = add_job(_metadata, self, 3, 1000);
	ASSERT_EQ(0, esa_nl_job_get(self->nl, JOB, &got, &info));
	EXPECT_EQ(gen, info.reg);

	pr.key = ESA_KF_KEY(JOB, 0, 2, 0, htons(T_WORKER_PORT + JOB));
	pr.saddr = t_worker_ip(0);
	ASSERT_EQ(0, probe_run(bpf_program__fd(sk->progs.probe_admit), &pr));
	EXPECT_EQ(0, pr.ret);
	EXPECT_EQ(gen, pr.ji.gen);
	EXPECT_EQ(gen, pr.ji.reg);
	EXPECT_EQ(2, pr.ji.nworkers);
	pr.job = JOB;
	ASSERT_EQ(0, probe_run(bpf_program__fd(sk->progs.probe_job), &pr));
	EXPECT_EQ(1, pr.ret);
	EXPECT_EQ(gen, pr.kj.gen);
	EXPECT_EQ(gen, pr.kj.reg);
	EXPECT_EQ(htons(T_PS_PORT), pr.kj.ps.port);
	pr.gen = gen;
	ASSERT_EQ(0, probe_run(bpf_program__fd(sk->progs.probe_alive), &pr));
	EXPECT_EQ(1, pr.ret);

	/* Silent past the lease, by the module's clock: dead, and the next
	 * packet opens generation gen + 1 under the same registration.
	 */
	usleep(1200 * 1000);
	pr.gen = gen;
	ASSERT_EQ(0, probe_run(bpf_program__fd(sk->progs.probe_alive), &pr));
	EXPECT_EQ(0, pr.ret);
	ASSERT_EQ(0, probe_run(bpf_program__fd(sk->progs.probe_admit), &pr));
	EXPECT_EQ(ESA_C_EXPIRED, pr.ret);
	EXPECT_EQ(gen + 1, pr.ji.gen);
	EXPECT_EQ(gen, pr.ji.reg);
	ASSERT_EQ(0, esa_nl_job_get(self->nl, JOB, &got, &info));
	EXPECT_EQ(gen + 1, esa_job_gen(&got));
	EXPECT_EQ(gen, info.reg);
	/* Stamped by the admission: silent 1200 ms before it; a loaded
	 * debug guest takes tens of ms between the two calls.
	 */
	EXPECT_GT(600, info.idle_ms);
	esa_kf_probe_bpf__destroy(sk);
}

/* The tests without the data plane's setup, with room for the debug
 * kernels (the harness's default is 30 s).
 */
FIXTURE(bare) {
	int unused;
};

FIXTURE_SETUP(bare)
{
}

FIXTURE_TEARDOWN(bare)
{
}

/* No kfunc takes a time from the program: the module's BTF says so. */
TEST_F_TIMEOUT(bare, kfuncs_take_no_time, K_TIMEOUT)
{
	static const struct { const char *name; int params; } want[] = {
		{ "bpf_esa_bind", 2 }, { "bpf_esa_admit", 5 },
		{ "bpf_esa_owner_alive", 3 }, { "bpf_esa_job", 3 },
	};
	struct btf *vmlinux, *btf;

	if (!k_module_loaded())
		SKIP(return, "esa.ko is not loaded");
	vmlinux = btf__load_vmlinux_btf();
	ASSERT_NE(NULL, vmlinux);
	btf = btf__load_module_btf("esa", vmlinux);
	ASSERT_NE(NULL, btf);
	for (int i = 0; i < 4; i++) {
		int id = btf__find_by_name_kind(btf, want[i].name, BTF_KIND_FUNC);
		const struct btf_type *proto;
		const struct btf_param *prm;

		ASSERT_LT(0, id);
		proto = btf__type_by_id(btf, btf__type_by_id(btf, id)->type);
		EXPECT_EQ(want[i].params, btf_vlen(proto));
		prm = btf_params(proto);
		for (int a = 0; a < btf_vlen(proto); a++)
			EXPECT_STRNE("now", btf__name_by_offset(btf, prm[a].name_off));
	}
	btf__free(btf);
	btf__free(vmlinux);
}

/*
 * Programs that pass NULL, or a pointer that may be NULL, where a kfunc
 * writes: 6.12's verifier refuses them (KF_TRUSTED_ARGS).  6.1's lets them
 * through (its flag does not cover memory arguments): there they run, the
 * kfunc says -EINVAL, and the kernel lives on.  Programs that pass memory
 * too small or a context that is not one are refused by both.
 */
static void bad_program(struct __test_metadata *_metadata, const char *name,
			const char *refusal, bool runs_on_61)
{
	char log[16384] = "";
	struct esa_kf_probe_bpf *sk = probe_open(name);
	struct esa_probe pkt = {
		/* Job JOB, registered by the caller: a kfunc would write. */
		.key = ESA_KF_KEY(JOB, 0, 0, 0, htons(T_WORKER_PORT + JOB)),
		.saddr = t_worker_ip(0), .job = JOB,
	};
	struct bpf_program *prog;
	struct t_run r;
	int err;

	ASSERT_NE(NULL, sk);
	prog = bpf_object__find_program_by_name(sk->obj, name);
	ASSERT_NE(NULL, prog);
	bpf_program__set_log_buf(prog, log, sizeof(log));
	bpf_program__set_log_level(prog, 1);
	err = esa_kf_probe_bpf__load(sk);
	if (runs_on_61 && k_kernel() < 602) {
		ASSERT_EQ(0, err) TH_LOG("%s refused on %d: %s", name, k_kernel(), log);
		ASSERT_EQ(0, t_run(bpf_program__fd(prog), &pkt, sizeof(pkt), 0,
				   NULL, 0, &r));
		EXPECT_EQ(-EINVAL, r.verdict) TH_LOG("%s returned %d", name, r.verdict);
		TH_LOG("%s: loaded by %d's verifier; the kfunc said %d",
		       name, k_kernel(), r.verdict);
	} else {
		EXPECT_NE(0, err);
		EXPECT_NE(NULL, strstr(log, refusal))
			TH_LOG("%s: wanted \"%s\" from the verifier, got:\n%s",
			       name, refusal, log);
	}
	esa_kf_probe_bpf__destroy(sk);
}

TEST_F_TIMEOUT(bare, verifier_refuses_bad_arguments, K_TIMEOUT)
{
	struct esa_job j = t_job(2, T_PS_A, 0, JOB);
	struct esa_nl *nl;

	if (!k_module_loaded())
		SKIP(return, "esa.ko is not loaded");
	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	ASSERT_EQ(0, esa_nl_open(&nl));
	ASSERT_EQ(0, esa_nl_job_add(nl, JOB, &j));
	bad_program(_metadata, "bad_admit_null",
		    "Possibly NULL pointer passed to trusted arg4", true);
	bad_program(_metadata, "bad_admit_maybe_null",
		    "Possibly NULL pointer passed to trusted arg4", true);
	bad_program(_metadata, "bad_job_null",
		    "Possibly NULL pointer passed to trusted arg2", true);
	bad_program(_metadata, "bad_bind_null",
		    "Possibly NULL pointer passed to trusted arg1", true);
	bad_program(_metadata, "bad_admit_short",
		    "invalid indirect access to stack", false);
	bad_program(_metadata, "bad_ctx", "expected pointer to ctx", false);
	esa_nl_close(nl);
}

/* A binding the kfunc could only update with a split lock: refused. */
TEST_F_TIMEOUT(bare, bind_misaligned, K_TIMEOUT)
{
	struct esa_kf_probe_bpf *sk;
	__u8 pkt[64] = {};
	struct t_run r;

	if (!k_module_loaded())
		SKIP(return, "esa.ko is not loaded");
	sk = probe_open("bad_bind_misaligned");
	ASSERT_NE(NULL, sk);
	ASSERT_EQ(0, esa_kf_probe_bpf__load(sk));
	ASSERT_EQ(0, t_run(bpf_program__fd(sk->progs.bad_bind_misaligned),
			   pkt, sizeof(pkt), 0, NULL, 0, &r));
	EXPECT_EQ(-EINVAL, r.verdict);
	esa_kf_probe_bpf__destroy(sk);
}

/* An admission of JOB's rank 0 on CPU 0, held by pause_clock. */
struct held {
	struct esa_kf_probe_bpf *sk;
	struct esa_probe pr;
	int err;
};

static void *held_admit(void *arg)
{
	struct held *h = arg;
	struct esa_pause pz = { .tid = syscall(SYS_gettid), .armed = 1 };
	int fd = bpf_map__fd(h->sk->maps.pause);
	cpu_set_t cpu;
	__u32 k = 0;

	CPU_ZERO(&cpu);
	CPU_SET(0, &cpu);
	h->err = sched_setaffinity(0, sizeof(cpu), &cpu) ||
		 bpf_map_update_elem(fd, &k, &pz, BPF_ANY) ||
		 probe_run(bpf_program__fd(h->sk->progs.probe_admit), &h->pr);
	return NULL;
}

/* Wait for the held admission to be paused; 0 once it is. */
static int wait_paused(int fd, struct esa_pause *pz)
{
	__u32 k = 0;

	for (int i = 0; i < 2000; i++) {
		if (bpf_map_lookup_elem(fd, &k, pz))
			return -errno;
		if (pz->paused == 1)
			return 0;
		usleep(5000);
	}
	return -ETIMEDOUT;
}

/*
 * An admission that found its job, then was held inside the kfunc (at the
 * module's clock read) while the job was deleted and added again, must not
 * be admitted: not in the deleted job's last generation, which nothing
 * will ever report reclaimed, nor in the new job's, which it never looked
 * up.  A packet marking its generation used outside the job's lock (the
 * bug of issue 12) admits it in the dead one.  The hold (a kprobe on
 * ktime_get_coarse_ts64) makes the race certain instead of lucky.
 */
TEST_F_TIMEOUT(bare, admission_racing_a_delete, K_TIMEOUT)
{
	struct esa_job j = t_job(2, T_PS_A, 0, JOB), got;
	struct held h = { .pr = {
		.key = ESA_KF_KEY(JOB, 0, 0, 0, htons(T_WORKER_PORT + JOB)),
		.saddr = t_worker_ip(0), .record = 1,
	} };
	struct esa_nl_job_info info;
	struct bpf_program *prog;
	struct esa_pause pz = {};
	struct k_events e = {};
	struct bpf_link *link;
	struct esa_nl *nl, *mon;
	cpu_set_t cpu;
	pthread_t t;
	__u32 k = 0;
	__u64 n;
	int fd;

	if (!k_module_loaded())
		SKIP(return, "esa.ko is not loaded");
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs two CPUs");
	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	ASSERT_EQ(0, esa_nl_open(&nl));
	ASSERT_EQ(0, esa_nl_open(&mon));
	ASSERT_EQ(0, esa_nl_join_events(mon));
	ASSERT_EQ(0, esa_nl_job_add(nl, JOB, &j));
	ASSERT_EQ(0, esa_nl_job_get(nl, JOB, &got, &info));
	h.sk = esa_kf_probe_bpf__open();
	ASSERT_NE(NULL, h.sk);
	bpf_object__for_each_program(prog, h.sk->obj)
		bpf_program__set_autoload(prog,
			!strcmp(bpf_program__name(prog), "probe_admit") ||
			!strcmp(bpf_program__name(prog), "pause_clock"));
	ASSERT_EQ(0, esa_kf_probe_bpf__load(h.sk));
	link = bpf_program__attach(h.sk->progs.pause_clock);
	ASSERT_NE(NULL, link);
	fd = bpf_map__fd(h.sk->maps.pause);
	CPU_ZERO(&cpu);
	CPU_SET(1, &cpu);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(cpu), &cpu));

	ASSERT_EQ(0, pthread_create(&t, NULL, held_admit, &h));
	ASSERT_EQ(0, wait_paused(fd, &pz)) TH_LOG("the admission was never held");
	EXPECT_EQ(0, esa_nl_job_del(nl, JOB));
	EXPECT_EQ(0, esa_nl_job_add(nl, JOB, &j));
	pz.go = 1;
	ASSERT_EQ(0, bpf_map_update_elem(fd, &k, &pz, BPF_ANY));
	pthread_join(t, NULL);
	ASSERT_EQ(0, h.err);
	ASSERT_EQ(0, bpf_map_lookup_elem(fd, &k, &pz));
	EXPECT_EQ(2, pz.paused);
	EXPECT_EQ(0, pz.timed_out) TH_LOG("the hold ended before the job changed");
	bpf_link__destroy(link);

	/* Refused as of a deleted job, and no generation took it. */
	EXPECT_EQ(ESA_C_DROP_JOB, h.pr.ret) TH_LOG("admitted in generation %u (the job was added in %u)",
						   h.pr.ji.gen, info.reg);
	for (__u32 g = info.reg; g < info.reg + 3; g++) {
		__u64 key = (__u64)JOB << 32 | g;

		n = 0;
		bpf_map_lookup_elem(bpf_map__fd(h.sk->maps.used), &key, &n);
		EXPECT_EQ(0, n) TH_LOG("generation %u admitted %llu packets", g,
				       (unsigned long long)n);
	}
	/* Deleted in the first generation, which nothing used. */
	EXPECT_EQ(1, k_wait_event(mon, &e, ESA_CMD_JOB_ADDED, JOB, 2000) &&
		     k_wait_event(mon, &e, ESA_CMD_JOB_ADDED, JOB, 2000));
	EXPECT_EQ(info.reg, k_find_event(&e, ESA_CMD_JOB_DELETED, JOB)->gen);
	EXPECT_EQ(0, k_count_events(&e, ESA_CMD_JOB_RECLAIMED, JOB));
	esa_kf_probe_bpf__destroy(h.sk);
	esa_nl_close(mon);
	esa_nl_close(nl);
}

/* ------------------------------------------------------------------ */
/* Two levels through esa.ko                                          */
/* ------------------------------------------------------------------ */

/* At a leaf: ranks 0 and 1 of 3 here, rank 2 under another leaf. */
static struct esa_job leaf_job(void)
{
	struct esa_job j = t_job(3, T_PS_B, 3, JOB);

	j.rank[1].port = 0;		/* DATA(1, ...) sends from port 6000 */
	j.rank[2] = (struct esa_addr){};
	j.up.ip = t_ip(T_PS_A);
	j.up.port = htons(ESA_DEFAULT_PORT);
	return j;
}

/* A leaf's sum (leaf at worker `rank`'s address) with values k. */
static int leaf_data(struct __test_metadata *_metadata, FIXTURE_DATA(kf) *self,
		     __u16 rank, __u32 seq, __u64 set, __u8 flags, int k,
		     struct t_run *r)
{
	__s32 v[ESA_MAX_VALUES];
	struct t_pkt p;

	vals(v, self->nvals, k);
	p = t_data(&self->n, JOB, rank, seq, 1, v, self->nvals);
	p.sport = ESA_DEFAULT_PORT;
	p.flags = flags;
	p.bitmap = set;
	EXPECT_EQ(0, t_send(&self->e, &p, self->n.sw0, r));
	return r->verdict;
}

/*
 * A leaf registered through esa.ko sums the ranks under it and sends the
 * sum up as one DATA (ESA_F_LEAF, its lowest rank, its ranks' bitmap) to
 * its spine; a rank under another leaf is not its to take, and a worker
 * cannot pass for a leaf.
 */
TEST_F_TIMEOUT(kf, leaf_sends_its_sum_up, K_TIMEOUT)
{
	__s32 got[ESA_MAX_VALUES], a[ESA_MAX_VALUES], b[ESA_MAX_VALUES];
	struct esa_job j = leaf_job();
	char err[ESA_ERR_LEN];
	struct t_pkt p;
	struct t_run r;

	ASSERT_EQ(0, k_job_add(&self->e, self->nl, JOB, &j, err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_EQ(XDP_DROP, DATA(0, 5, 2, 1));
	DATA(1, 5, 2, 2);
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	ASSERT_EQ(0, t_parse(r.pkt, r.len, &p, got, ESA_MAX_VALUES));
	EXPECT_EQ(ESA_T_DATA, p.type);
	EXPECT_EQ(ESA_F_LEAF, p.flags);
	EXPECT_EQ(0, p.rank);
	EXPECT_EQ(0x3, p.bitmap);
	EXPECT_EQ(5, p.seq);
	EXPECT_EQ(t_ip(T_PS_A), p.daddr);
	EXPECT_EQ(ESA_DEFAULT_PORT, p.dport);
	vals(a, self->nvals, 1);
	vals(b, self->nvals, 2);
	for (int i = 0; i < self->nvals; i++)
		if (got[i] != a[i] + b[i]) {
			EXPECT_EQ(a[i] + b[i], got[i]);
			break;
		}
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_UP_TX));
	EXPECT_EQ(0, t_ctr(&self->e, JOB, ESA_C_COMPLETED));

	/* rank 2 lives under another leaf */
	EXPECT_EQ(XDP_DROP, DATA(2, 6, 2, 1));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_DROP_RANK));
	/* a worker's packet claiming to be a leaf's sum */
	EXPECT_EQ(XDP_DROP, leaf_data(_metadata, self, 0, 6, 0x1, ESA_F_LEAF, 1, &r));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_DROP_HEADER));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_CLAIMED));
}

/*
 * A spine registered through esa.ko admits each leaf's sum of exactly the
 * leaf's ranks, from the leaf's address and port, and completes the chunk
 * when the leaves' ranks make the job's.
 */
TEST_F_TIMEOUT(kf, spine_admits_whole_leaves, K_TIMEOUT)
{
	static const struct {
		const char *what;
		int rank, flags, counter;
		__u64 set;
	} bad[] = {
		{ "not all its ranks", 0, ESA_F_LEAF, ESA_C_DROP_HEADER, 0x1 },
		{ "more than its ranks", 0, ESA_F_LEAF, ESA_C_DROP_HEADER, 0x7 },
		{ "a worker's DATA", 0, 0, ESA_C_DROP_HEADER, 0x1 },
		{ "a rank under a leaf", 1, ESA_F_LEAF, ESA_C_DROP_RANK, 0x2 },
	};
	struct esa_job j = t_spine_job(3);
	__s32 got[ESA_MAX_VALUES];
	char err[ESA_ERR_LEN];
	struct t_pkt p;
	struct t_run r;

	ASSERT_EQ(0, k_job_add(&self->e, self->nl, JOB, &j, err, sizeof(err)))
		TH_LOG("%s", err);
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		__u64 before = t_ctr(&self->e, JOB, bad[k].counter);

		EXPECT_EQ(XDP_DROP, leaf_data(_metadata, self, bad[k].rank, 7,
					      bad[k].set, bad[k].flags, 1, &r));
		EXPECT_EQ(before + 1, t_ctr(&self->e, JOB, bad[k].counter))
			TH_LOG("%s", bad[k].what);
	}
	EXPECT_EQ(0, t_ctr(&self->e, JOB, ESA_C_CLAIMED));

	EXPECT_EQ(XDP_DROP, leaf_data(_metadata, self, 0, 8, 0x3, ESA_F_LEAF, 3, &r));
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_CLAIMED));
	leaf_data(_metadata, self, 2, 8, 0xc, ESA_F_LEAF, 4, &r);
	ASSERT_EQ(XDP_REDIRECT, r.verdict);
	ASSERT_EQ(0, t_parse(r.pkt, r.len, &p, got, ESA_MAX_VALUES));
	EXPECT_EQ(ESA_T_RESULT, p.type);
	EXPECT_EQ(0xf, p.bitmap);
	EXPECT_EQ(ESA_RANK_NONE, p.rank);
	EXPECT_EQ((3 * 1000 - 100) + (4 * 1000 - 100), got[0]);
	EXPECT_EQ(1, t_ctr(&self->e, JOB, ESA_C_COMPLETED));
}

/* What the kfuncs tell the data plane of the two levels. */
TEST_F_TIMEOUT(kf, two_levels_through_the_kfuncs, K_TIMEOUT)
{
	struct esa_job leaf = leaf_job(), spine = t_spine_job(3);
	struct esa_kf_probe_bpf *sk = probe_open("probe_admit");
	struct esa_probe pr = {};

	ASSERT_NE(NULL, sk);
	ASSERT_EQ(0, esa_kf_probe_bpf__load(sk));
	ASSERT_EQ(0, esa_nl_job_add(self->nl, JOB, &leaf));
	ASSERT_EQ(0, esa_nl_job_add(self->nl, JOB + 1, &spine));

	pr.key = ESA_KF_KEY(JOB, 0, 0, 0, htons(T_WORKER_PORT + JOB));
	pr.saddr = t_worker_ip(0);
	pr.bitmap = htobe64(1);
	ASSERT_EQ(0, probe_run(bpf_program__fd(sk->progs.probe_admit), &pr));
	EXPECT_EQ(0, pr.ret);
	EXPECT_EQ(0x3, pr.ji.mask);
	EXPECT_EQ(0, pr.ji.rset);
	EXPECT_EQ(t_ip(T_PS_A), pr.ji.up.ip);
	EXPECT_EQ(htons(ESA_DEFAULT_PORT), pr.ji.up.port);
	EXPECT_EQ(3, pr.ji.nworkers);

	pr = (struct esa_probe){
		.key = ESA_KF_KEY(JOB + 1, 2, 0, ESA_F_LEAF, htons(ESA_DEFAULT_PORT)),
		.saddr = t_worker_ip(2), .bitmap = htobe64(0xc),
	};
	ASSERT_EQ(0, probe_run(bpf_program__fd(sk->progs.probe_admit), &pr));
	EXPECT_EQ(0, pr.ret);
	EXPECT_EQ(0xf, pr.ji.mask);
	EXPECT_EQ(0xc, pr.ji.rset);
	EXPECT_EQ(0, pr.ji.up.ip);
	EXPECT_EQ(4, pr.ji.nworkers);
	/* the same leaf without its flag, or with a bitmap not its own */
	pr.key = ESA_KF_KEY(JOB + 1, 2, 0, 0, htons(ESA_DEFAULT_PORT));
	ASSERT_EQ(0, probe_run(bpf_program__fd(sk->progs.probe_admit), &pr));
	EXPECT_EQ(ESA_C_DROP_HEADER, pr.ret);
	pr.key = ESA_KF_KEY(JOB + 1, 2, 0, ESA_F_LEAF, htons(ESA_DEFAULT_PORT));
	pr.bitmap = htobe64(0x4);
	ASSERT_EQ(0, probe_run(bpf_program__fd(sk->progs.probe_admit), &pr));
	EXPECT_EQ(ESA_C_DROP_HEADER, pr.ret);
	/* rank 3 is under the leaf at rank 2: no member of its own here */
	pr.key = ESA_KF_KEY(JOB + 1, 3, 0, 0, htons(T_WORKER_PORT + JOB + 1));
	pr.saddr = t_worker_ip(3);
	pr.bitmap = htobe64(0x8);
	ASSERT_EQ(0, probe_run(bpf_program__fd(sk->progs.probe_admit), &pr));
	EXPECT_EQ(ESA_C_DROP_RANK, pr.ret);
	esa_kf_probe_bpf__destroy(sk);
}

TEST_HARNESS_MAIN
