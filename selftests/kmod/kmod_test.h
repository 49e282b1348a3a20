/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the esa.ko tests share beyond testlib.h (jobs, packets, the test
 * topology): a builder for raw (also malformed) netlink attributes, event
 * collection, module loading, and dropping a capability.  The tests run as
 * root inside the test VM (or on any machine where esa.ko is loaded) and
 * skip when the module is absent.
 */
#ifndef ESA_KMOD_TEST_H
#define ESA_KMOD_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <linux/netlink.h>

#include "testlib.h"
#include "esa_nl.h"

/*
 * The harness's limit for each test: a hang, not a slow kernel.  On
 * Debian's kernels under emulation a test takes seconds; on the debug
 * kernels (KASAN or KCSAN, lockdep, under emulation: make vmtest-debug)
 * up to ten times as long, and the stress runs a minute there.
 */
#define K_TIMEOUT	1200

/*
 * Skip from a fixture's setup.  The harness of Debian's 6.1 sources would
 * run the test after SKIP(return, ...) there; jumping out skips it.
 */
#define SETUP_SKIP(fmt, ...) SKIP(longjmp(_metadata->env, 1), fmt, ##__VA_ARGS__)

/*
 * Register job id with esa.ko as esactl does: its members' places
 * resolved, bindings staged, the job added to the module, its bindings and
 * fan-out installed for the registration the module gave it.
 */
static inline int k_job_add(struct esa *e, struct esa_nl *nl, __u32 id,
			    struct esa_job *j, char *err, size_t len)
{
	struct esa_place pl[ESA_PLACES] = {};
	struct esa_job got;
	int rc;

	if (esa_places_resolve(e, j, pl, err, len) ||
	    esa_binds_stage(e, id, j, pl, err, len))
		return -1;
	rc = esa_nl_job_add(nl, id, j);
	if (!rc)
		rc = esa_nl_job_get(nl, id, &got, NULL);
	if (rc)
		return esa_fail(err, len, rc, "esa.ko: %s", strerror(-rc));
	j->reg = got.reg;
	j->life = got.life;
	return esa_deliver_set(e, id, j, pl, err, len);
}

static inline double k_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ */
/* Raw attributes                                                      */
/* ------------------------------------------------------------------ */

struct k_attrs {
	char	buf[8192];
	size_t	len;
};

static inline size_t k_put(struct k_attrs *m, __u16 type, const void *data,
			   size_t len)
{
	struct nlattr *a = (void *)(m->buf + m->len);
	size_t at = m->len;

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy(m->buf + m->len + NLA_HDRLEN, data, len);
	memset(m->buf + m->len + NLA_HDRLEN + len, 0,
	       NLA_ALIGN(len) - len);
	m->len += NLA_ALIGN(NLA_HDRLEN + len);
	return at;
}

static inline void k_u32(struct k_attrs *m, __u16 type, __u32 v)
{
	k_put(m, type, &v, 4);
}

static inline size_t k_nest(struct k_attrs *m, __u16 type)
{
	return k_put(m, type | NLA_F_NESTED, NULL, 0);
}

static inline void k_end(struct k_attrs *m, size_t at)
{
	((struct nlattr *)(m->buf + at))->nla_len = m->len - at;
}

/* An address nest; port 0 leaves ESA_ADDR_A_PORT out, ip 0 IPV4 out. */
static inline void k_addr(struct k_attrs *m, __u16 type, const char *ip,
			  __u16 port)
{
	size_t n = k_nest(m, type);
	__be16 p = htons(port);
	__be32 a = ip ? t_ip(ip) : 0;

	if (ip)
		k_put(m, ESA_ADDR_A_IPV4, &a, 4);
	if (port)
		k_put(m, ESA_ADDR_A_PORT, &p, 2);
	k_end(m, n);
}

/* The attributes of a valid ADD of id with nworkers workers. */
static inline void k_add_attrs(struct k_attrs *m, __u32 id, int nworkers)
{
	char ip[32];

	m->len = 0;
	k_u32(m, ESA_JOB_A_ID, id);
	/* One ESA_JOB_A_WORKERS per rank, in rank order. */
	for (int r = 0; r < nworkers; r++) {
		snprintf(ip, sizeof(ip), "10.0.%d.%d", 10 + r / 200, 11 + r % 200);
		k_addr(m, ESA_JOB_A_WORKERS, ip, 0);
	}
	k_addr(m, ESA_JOB_A_PS, T_PS_A, T_PS_PORT);
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

struct k_event {
	__u8	cmd;
	__u32	id, gen, nworkers, max_prio, reg;
};

struct k_events {
	struct k_event ev[64];
	int	n;
	__u8	want;		/* stop at this command, 0: when full */
	__u32	want_id;
};

static inline int k_event_cb(const struct esa_nl_event *ev, void *arg)
{
	struct k_events *e = arg;

	if (e->n < 64) {
		struct k_event *k = &e->ev[e->n++];

		k->cmd = ev->cmd;
		k->id = ev->id;
		k->gen = ev->gen;
		k->nworkers = ev->job ? ev->job->nworkers : 0;
		k->max_prio = ev->job ? ev->job->max_prio : 0;
		k->reg = ev->info ? ev->info->reg : 0;
	}
	if (e->want && ev->cmd == e->want && ev->id == e->want_id)
		return 1;
	return e->n == 64;
}

/* Collect events until cmd for id arrives (1) or ms pass (0). */
static inline int k_wait_event(struct esa_nl *mon, struct k_events *e,
			       __u8 cmd, __u32 id, unsigned int ms)
{
	e->want = cmd;
	e->want_id = id;
	esa_nl_set_timeout(mon, ms);
	return esa_nl_monitor(mon, k_event_cb, e) == 1;
}

static inline int k_count_events(const struct k_events *e, __u8 cmd, __u32 id)
{
	int n = 0;

	for (int i = 0; i < e->n; i++)
		n += e->ev[i].cmd == cmd && e->ev[i].id == id;
	return n;
}

static inline const struct k_event *k_find_event(const struct k_events *e,
						 __u8 cmd, __u32 id)
{
	for (int i = 0; i < e->n; i++)
		if (e->ev[i].cmd == cmd && e->ev[i].id == id)
			return &e->ev[i];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Module and privileges                                               */
/* ------------------------------------------------------------------ */

static inline bool k_module_loaded(void)
{
	return !access("/sys/module/esa", F_OK);
}

/* delete_module(2) as rmmod does it; -errno. */
static inline int k_rmmod(void)
{
	return syscall(__NR_delete_module, "esa", O_NONBLOCK) ? -errno : 0;
}

/* Unloading waits for programs freed after an RCU grace period. */
static inline int k_rmmod_wait(double seconds)
{
	double end = k_now() + seconds;
	int err;

	while ((err = k_rmmod()) == -EAGAIN && k_now() < end)
		usleep(20000);
	return err;
}

/* finit_module(2) of $ESA_KO with params; -errno. */
static inline int k_insmod(const char *params)
{
	const char *ko = getenv("ESA_KO");
	int fd, err = 0;

	if (!ko)
		return -ENOENT;
	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (syscall(__NR_finit_module, fd, params, 0))
		err = -errno;
	close(fd);
	return err;
}

/* Drop cap from the effective set (the permitted set keeps it). */
static inline int k_drop_cap(int cap)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[cap / 32].effective &= ~(1U << (cap % 32));
	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

/* major * 100 + minor of the running kernel: 601, 612, ... */
static inline int k_kernel(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return 0;
	return major * 100 + minor;
}

/* ------------------------------------------------------------------ */
/* Memory cgroups (cgroup v2 at /sys/fs/cgroup)                        */
/* ------------------------------------------------------------------ */

#define K_CGROOT	"/sys/fs/cgroup"

static inline int k_cg_write(const char *cg, const char *file, const char *v)
{
	char path[256];
	int fd, n;

	snprintf(path, sizeof(path), K_CGROOT "/%s/%s", cg, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, v, strlen(v));
	n = n < 0 ? -errno : 0;
	close(fd);
	return n;
}

/* A number from a cgroup file ("max": -1), or a key's in a flat keyed
 * file (memory.events, memory.stat); -2 if it cannot be read.
 */
static inline long long k_cg_read(const char *cg, const char *file,
				  const char *key)
{
	char path[256], k[64];
	long long v = -2, x;
	FILE *f;

	snprintf(path, sizeof(path), K_CGROOT "/%s/%s", cg, file);
	f = fopen(path, "re");
	if (!f)
		return -2;
	if (!key) {
		if (fscanf(f, "%lld", &x) == 1)
			v = x;
		else if (fscanf(f, "%63s", k) == 1 && !strcmp(k, "max"))
			v = -1;
	} else {
		while (fscanf(f, "%63s %lld", k, &x) == 2)
			if (!strcmp(k, key)) {
				v = x;
				break;
			}
	}
	fclose(f);
	return v;
}

/*
 * Bytes of slab (and large kmalloc) objects charged to cg, exact to a few
 * KiB, unlike memory.current, which moves in batches of pages a CPU has
 * charged ahead.  The kernel flushes these statistics every 2 s.
 */
static inline long long k_cg_slab(const char *cg)
{
	usleep(2100000);
	return k_cg_read(cg, "memory.stat", "slab_unreclaimable");
}

/* A fresh memory cgroup `cg` under the root, with the memory controller
 * (cgroup2 mounted, the controller enabled for the root's children).
 */
static inline int k_cg_make(const char *cg)
{
	char path[256];

	if (access(K_CGROOT "/cgroup.controllers", F_OK) &&
	    mount("cgroup2", K_CGROOT, "cgroup2", 0, NULL))
		return -errno;
	k_cg_write(".", "cgroup.subtree_control", "+memory");
	snprintf(path, sizeof(path), K_CGROOT "/%s", cg);
	rmdir(path);
	if (mkdir(path, 0755))
		return -errno;
	return 0;
}

static inline void k_cg_remove(const char *cg)
{
	char path[256];

	snprintf(path, sizeof(path), K_CGROOT "/%s", cg);
	rmdir(path);
}

/* Move process pid (0: the caller) into cg. */
static inline int k_cg_enter(const char *cg, pid_t pid)
{
	char v[32];

	snprintf(v, sizeof(v), "%d", pid ? pid : getpid());
	return k_cg_write(cg, "cgroup.procs", v);
}

/* ------------------------------------------------------------------ */
/* A container's root                                                  */
/* ------------------------------------------------------------------ */

/*
 * Fork a child that becomes the root of a container: a user namespace of
 * its own, its uid and gid 0 mapped to K_CT_UID outside (by the parent, as
 * a container runtime does), with all capabilities there and none outside,
 * in memory cgroup cg if not NULL.  The child runs fn(arg) as that root,
 * still in the caller's network namespace (unshare(CLONE_NEWNET) makes one
 * it owns), and exits with its return value.  Returns the child's pid, or
 * -errno.
 */
#define K_CT_UID	100000

/* Write s to /proc/pid/file in one write(2), as id maps must be. */
static inline int k_proc_write(pid_t pid, const char *file, const char *s)
{
	char path[64];
	int fd, ok;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

static inline pid_t k_container(const char *cg, int (*fn)(void *), void *arg)
{
	int up[2], down[2];
	char map[64];
	char c = 0;
	pid_t pid;

	if (pipe(up) || pipe(down))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		close(up[0]);
		close(down[1]);
		if (unshare(CLONE_NEWUSER) || write(up[1], &c, 1) != 1 ||
		    read(down[0], &c, 1) != 1 || c)
			_exit(120);
		if (setresgid(0, 0, 0) || setgroups(0, NULL) ||
		    setresuid(0, 0, 0))
			_exit(121);
		_exit(fn(arg));
	}
	close(up[1]);
	close(down[0]);
	if (read(up[0], &c, 1) != 1)
		c = 1;
	snprintf(map, sizeof(map), "0 %d 65536\n", K_CT_UID);
	c = c || k_proc_write(pid, "uid_map", map) ||
	    k_proc_write(pid, "gid_map", map) ||
	    (cg && k_cg_enter(cg, pid));
	if (write(down[1], &c, 1) != 1)
		c = 1;
	close(up[0]);
	close(down[1]);
	return pid;
}

/* Wait for pid; its exit status, or 200 + signal if killed. */
static inline int k_wait(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return 255;
	if (WIFSIGNALED(status))
		return 200 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

#endif /* ESA_KMOD_TEST_H */
