// SPDX-License-Identifier: GPL-2.0
/*
 * Loading and unloading esa.ko: with jobs registered (clean, in every
 * namespace, with leases about to run out), while a loaded program uses its
 * kfuncs (refused with EAGAIN until the program is gone), and with bad
 * module parameters.  The module is loaded again, with defaults, after each
 * test.  It unloads the module: run it only where that is fine (the test
 * VM); it needs $ESA_KO, the module file, and skips without it.
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

TEST(refused_while_a_program_uses_the_kfuncs)
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

TEST(clean_with_jobs_registered)
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
		j.lease_ms = id % 2 ? 60000 : 30 + id;	/* some expire now */
		ASSERT_EQ(0, esa_nl_job_add(nl, id, &j));
	}
	usleep(100000);
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

TEST(module_parameters)
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

/* A module without BTF would leave the data path on the maps: refused. */
TEST(refused_without_btf)
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
