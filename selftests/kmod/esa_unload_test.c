// SPDX-License-Identifier: GPL-2.0
/*
 * Loading and unloading esa.ko: with jobs registered (clean, in every
 * namespace, with leases about to run out), while a loaded program uses its
 * kfuncs or a dump is in flight (refused with EAGAIN until they are gone),
 * with a monitor joined, and with bad module parameters; and what a
 * namespace costs with a large max_jobs (nothing until a job is added).
 * The module is loaded again, with defaults, after each test.  It unloads
 * the module: run it only where that is fine (the test VM); it needs
 * $ESA_KO, the module file, and skips without it.
 */
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kmod_test.h"

static bool need_module(void)
{
	return getenv("ESA_KO") && (k_module_loaded() || !k_insmod(""));
}

static int read_param(void)
{
	FILE *f = fopen("/sys/module/esa/parameters/max_jobs", "r");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* Room beyond the harness's default 30 s: emulation, debug kernels. */
FIXTURE(slow) {
	int unused;
};

FIXTURE_SETUP(slow)
{
}

FIXTURE_TEARDOWN(slow)
{
}

TEST_F_TIMEOUT(slow, refused_while_a_program_uses_the_kfuncs, K_TIMEOUT)
{
	char err[ESA_ERR_LEN] = "";
	struct esa_opts o;
	struct esa e;

	if (!need_module())
		SKIP(return, "needs $ESA_KO and esa.ko loaded or loadable");
	esa_opts_default(&o);
	o.kfunc = 1;
	if (esa_load(&e, &o, err, sizeof(err)))
		TH_LOG("%s", err);
	ASSERT_NE(NULL, e.obj);
	ASSERT_EQ(-EAGAIN, k_rmmod());
	ASSERT_TRUE(k_module_loaded());
	ASSERT_EQ(0, access("/sys/kernel/btf/esa", R_OK));

	esa_close(&e);
	ASSERT_EQ(0, k_rmmod_wait(10));
	ASSERT_FALSE(k_module_loaded());
	ASSERT_NE(0, access("/sys/kernel/btf/esa", R_OK));
	ASSERT_EQ(0, k_insmod(""));
}

TEST_F_TIMEOUT(slow, clean_with_jobs_registered, K_TIMEOUT)
{
	struct esa_job j = t_job(ESA_MAX_WORKERS, T_PS_A, 0, 0);
	int up[2], down[2], status;
	struct esa_nl *nl;
	char c = 0;
	pid_t pid;

	if (!need_module())
		SKIP(return, "needs $ESA_KO and esa.ko loaded or loadable");
	j.lease_ms = 60000;
	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	/* A second namespace with jobs, alive across the unload. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct esa_nl *cnl;

		close(up[0]);
		close(down[1]);
		if (unshare(CLONE_NEWNET) || esa_nl_open(&cnl))
			_exit(100);
		for (int id = 0; id < 10; id++)
			if (esa_nl_job_add(cnl, id, &j))
				_exit(101);
		esa_nl_close(cnl);
		if (write(up[1], &c, 1) != 1 || read(down[0], &c, 1) != 1)
			_exit(102);
		/* After the unload the family is gone from here too. */
		_exit(esa_nl_open(&cnl) != -ENOENT);
	}
	close(up[1]);
	close(down[0]);
	ASSERT_EQ(1, read(up[0], &c, 1));

	ASSERT_EQ(0, esa_nl_open(&nl));
	for (int id = 0; id < 200; id++) {
		/* Some expire now. */
		j.lease_ms = id % 2 ? 60000 : ESA_LEASE_MS_MIN + id / 4;
		ASSERT_EQ(0, esa_nl_job_add(nl, id, &j));
	}
	usleep(ESA_LEASE_MS_MIN * 1000);
	esa_nl_close(nl);
	ASSERT_EQ(0, k_rmmod_wait(10));
	ASSERT_FALSE(k_module_loaded());

	ASSERT_EQ(1, write(down[1], &c, 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));

	/* Back, and empty. */
	ASSERT_EQ(0, k_insmod(""));
	ASSERT_EQ(0, esa_nl_open(&nl));
	ASSERT_EQ(-ENOENT, esa_nl_job_get(nl, 1, &j, NULL));
	j = t_job(2, T_PS_A, 0, 0);
	ASSERT_EQ(0, esa_nl_job_add(nl, 1, &j));
	ASSERT_EQ(0, esa_nl_job_del(nl, 1));
	esa_nl_close(nl);
}

TEST_F_TIMEOUT(slow, module_parameters, K_TIMEOUT)
{
	struct esa_job j = t_job(2, T_PS_A, 0, 0);
	struct esa_nl *nl;

	if (!need_module())
		SKIP(return, "needs $ESA_KO and esa.ko loaded or loadable");
	ASSERT_EQ(256, read_param());
	ASSERT_EQ(0, k_rmmod_wait(10));
	ASSERT_EQ(-EINVAL, k_insmod("max_jobs=0"));
	ASSERT_EQ(-EINVAL, k_insmod("max_jobs=65537"));
	ASSERT_FALSE(k_module_loaded());

	ASSERT_EQ(0, k_insmod("max_jobs=16"));
	ASSERT_EQ(16, read_param());
	ASSERT_EQ(0, esa_nl_open(&nl));
	EXPECT_EQ(-ERANGE, esa_nl_job_add(nl, 16, &j));
	EXPECT_EQ(0, esa_nl_job_add(nl, 15, &j));
	EXPECT_EQ(0, esa_nl_job_del(nl, 15));
	esa_nl_close(nl);

	ASSERT_EQ(0, k_rmmod_wait(10));
	ASSERT_EQ(0, k_insmod(""));
	ASSERT_EQ(256, read_param());
}

struct in_flight {
	int	rmmod_during;	/* what rmmod said while the dump ran */
	int	seen;
};

static int in_flight_cb(__u32 id, const struct esa_job *j,
			const struct esa_nl_job_info *info, void *arg)
{
	struct in_flight *f = arg;

	if (!f->seen++)
		f->rmmod_during = k_rmmod();
	return 0;
}

/*
 * rmmod while a dump is between two parts (the dump holds the module) and
 * a monitor is joined (it does not): refused with EAGAIN, then, the dump
 * done, clean; the monitor hears nothing more and its socket stays usable.
 */
TEST_F_TIMEOUT(slow, rmmod_with_a_monitor_and_a_dump_in_flight, K_TIMEOUT)
{
	struct esa_job j = t_job(ESA_MAX_WORKERS, T_PS_A, 0, 0);
	int rc, big = 4 << 20;
	struct in_flight f = {};
	struct k_events e = {};
	struct esa_nl *nl, *mon;

	if (!need_module())
		SKIP(return, "needs $ESA_KO and esa.ko loaded or loadable");
	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	ASSERT_EQ(0, esa_nl_open(&nl));
	ASSERT_EQ(0, esa_nl_open(&mon));
	ASSERT_EQ(0, setsockopt(esa_nl_fd(mon), SOL_SOCKET, SO_RCVBUFFORCE,
				&big, sizeof(big)));
	ASSERT_EQ(0, esa_nl_join_events(mon));
	/* Half the jobs leased, so that rmmod finds lease timers armed; a
	 * minute, not ESA_LEASE_MS_MIN: on a debug kernel the adds and the
	 * dump outlast 100 ms, the leases ran out mid-dump and the dump was
	 * (rightly) flagged as interrupted.
	 */
	for (int id = 0; id < 100; id++) {
		j.lease_ms = id % 2 ? 0 : 60000;
		ASSERT_EQ(0, esa_nl_job_add(nl, id, &j));
	}
	ASSERT_EQ(0, esa_nl_job_dump(nl, in_flight_cb, &f));
	EXPECT_EQ(100, f.seen);
	EXPECT_EQ(-EAGAIN, f.rmmod_during);
	EXPECT_TRUE(k_module_loaded());
	ASSERT_EQ(0, k_rmmod_wait(10));
	ASSERT_FALSE(k_module_loaded());
	/* Whatever was queued before is there; nothing comes after, and
	 * the socket works (times out) rather than failing.
	 */
	esa_nl_set_timeout(mon, 300);
	do {
		e.n = 0;
		rc = esa_nl_monitor(mon, k_event_cb, &e);
	} while (rc == 1);
	EXPECT_EQ(-EAGAIN, rc);
	esa_nl_close(mon);
	esa_nl_close(nl);
	ASSERT_EQ(0, k_insmod(""));
}

/* Free memory now, in bytes. */
static long long mem_free(void)
{
	long long kb = -1;
	char k[64];
	FILE *f = fopen("/proc/meminfo", "re");

	while (f && fscanf(f, "%63s %lld kB", k, &kb) == 2 &&
	       strcmp(k, "MemFree:"))
		;
	if (f)
		fclose(f);
	return kb * 1024;
}

/* What n new network namespaces cost each, in bytes of free memory. */
static long long netns_cost(int n)
{
	int go[2], ack[2], stop[2];
	long long before, after;
	pid_t pid[16];
	char c = 0;

	if (pipe(go) || pipe(ack) || pipe(stop))
		return -1;
	for (int i = 0; i < n; i++) {
		pid[i] = fork();
		if (!pid[i]) {
			close(go[1]);
			close(ack[0]);
			close(stop[1]);
			if (read(go[0], &c, 1) != 1 || unshare(CLONE_NEWNET) ||
			    write(ack[1], &c, 1) != 1)
				_exit(1);
			read(stop[0], &c, 1);
			_exit(0);
		}
	}
	usleep(200000);
	before = mem_free();
	for (int i = 0; i < n; i++)
		if (write(go[1], &c, 1) != 1 || read(ack[0], &c, 1) != 1)
			return -1;
	usleep(200000);
	after = mem_free();
	close(stop[1]);
	for (int i = 0; i < n; i++)
		waitpid(pid[i], NULL, 0);
	close(go[0]), close(go[1]), close(ack[0]), close(ack[1]);
	close(stop[0]);
	return (before - after) / n;
}

/*
 * A namespace pays for esa's registry only when its first job is added,
 * and the caller's memory cgroup pays: with max_jobs 65536 a registry is
 * about 3 MiB, which a namespace that never uses esa must not cost.
 */
TEST_F_TIMEOUT(slow, registry_allocated_on_first_use, K_TIMEOUT)
{
	struct esa_job j = t_job(2, T_PS_A, 0, 0);
	long long small, large, before, after;
	struct esa_nl *nl;

	if (!need_module())
		SKIP(return, "needs $ESA_KO and esa.ko loaded or loadable");
	if (k_cg_make("esa-unload-test"))
		SKIP(return, "no cgroup v2 memory controller");
	ASSERT_EQ(0, k_rmmod_wait(10));
	ASSERT_EQ(0, k_insmod("max_jobs=16"));
	small = netns_cost(8);
	ASSERT_EQ(0, k_rmmod_wait(10));
	ASSERT_EQ(0, k_insmod("max_jobs=65536"));
	large = netns_cost(8);
	TH_LOG("a new namespace costs %lld KiB with max_jobs 16, %lld KiB with 65536",
	       small / 1024, large / 1024);
	EXPECT_GT(1024 * 1024, large - small);

	/* The first add allocates it, charged to the caller. */
	ASSERT_EQ(0, k_cg_enter("esa-unload-test", 0));
	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	ASSERT_EQ(0, esa_nl_open(&nl));
	before = k_cg_read("esa-unload-test", "memory.current", NULL);
	ASSERT_EQ(0, esa_nl_job_add(nl, 65535, &j));
	after = k_cg_read("esa-unload-test", "memory.current", NULL);
	TH_LOG("the first add charged %lld KiB", (after - before) / 1024);
	/* 65536 * (8 + 36) B; memory.current moves in batches (page stocks). */
	EXPECT_LE(2LL << 20, after - before);
	esa_nl_close(nl);
	ASSERT_EQ(0, k_cg_enter(".", 0));

	ASSERT_EQ(0, k_rmmod_wait(10));
	ASSERT_EQ(0, k_insmod(""));
	k_cg_remove("esa-unload-test");
}

/* A module without BTF would leave the data path on the maps: refused. */
TEST_F_TIMEOUT(slow, refused_without_btf, K_TIMEOUT)
{
	const char *ko = getenv("ESA_KO_NOBTF");
	int fd, err;

	if (!ko || !need_module())
		SKIP(return, "needs $ESA_KO_NOBTF (esa.ko built without BTF)");
	ASSERT_EQ(0, k_rmmod_wait(10));
	fd = open(ko, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	err = syscall(__NR_finit_module, fd, "", 0) ? -errno : 0;
	close(fd);
	EXPECT_EQ(-ENOPKG, err);
	EXPECT_FALSE(k_module_loaded());
	ASSERT_EQ(0, k_insmod(""));
}

TEST_HARNESS_MAIN
