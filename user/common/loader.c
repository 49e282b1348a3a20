// SPDX-License-Identifier: GPL-2.0
/*
 * Loading, pinning and opening the ESA XDP program; its counters.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "loader.h"
#include "esa.skel.h"
#include "esa_kfunc.skel.h"

/* Fill err with a one-line reason and return rc. */
int esa_fail(char *err, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return rc;
}

#define ERR(...)	esa_fail(err, len, -1, __VA_ARGS__)

void esa_opts_default(struct esa_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->port = ESA_DEFAULT_PORT;
	o->nvals = ESA_DEFAULT_VALUES;
	o->slots = 4096;
	o->max_jobs = 0;	/* 256, or esa.ko's max_jobs in mode kfunc */
	o->stale_ms = 100;
	o->policy = ESA_POLICY_ESA;
	o->kfunc = -1;
}

int esa_opts_check(const struct esa_opts *o, char *err, size_t len)
{
	if (!o->port)
		return ERR("port must not be 0");
	if (o->nvals < ESA_VALUES_ALIGN || o->nvals > ESA_MAX_VALUES ||
	    o->nvals % ESA_VALUES_ALIGN)
		return ERR("values must be a multiple of %d between %d and %d",
			   ESA_VALUES_ALIGN, ESA_VALUES_ALIGN, ESA_MAX_VALUES);
	if (o->slots < 1 || o->slots > (1u << 22))
		return ERR("slots must be between 1 and %u", 1u << 22);
	if (o->max_jobs > 65536)
		return ERR("jobs must be at most 65536");
	if (o->policy >= __ESA_POLICY_MAX)
		return ERR("unknown policy %u", o->policy);
	return 0;
}

/* libbpf's messages go to stderr only when asked (esactl -v). */
static int esa_verbose;
static int esa_libbpf_print(enum libbpf_print_level l, const char *fmt,
			    va_list ap)
{
	if (l == LIBBPF_DEBUG || !esa_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void esa_set_verbose(int v)
{
	esa_verbose = v;
}

/* esa.ko is loaded with its BTF, so its kfuncs can be called. */
int esa_kfunc_available(void)
{
	return !access("/sys/kernel/btf/esa", R_OK);
}

/* esa_cfg is the only variable of .rodata; check it sits at offset 0, so
 * that a pinned switch's configuration can be read without its BTF.
 */
static int esa_set_cfg(struct bpf_object *obj, const struct esa_cfg *cfg,
		       char *err, size_t len)
{
	const struct btf *btf = bpf_object__btf(obj);
	const struct btf_var_secinfo *v;
	const struct btf_type *t;
	struct bpf_map *m;
	const void *cur;
	size_t sz;
	char *data;
	int id, rc;

	bpf_object__for_each_map(m, obj) {
		const char *n = bpf_map__name(m);

		if (bpf_map__is_internal(m) && strstr(n, ".rodata"))
			break;
	}
	if (!m || !btf)
		return ERR("BPF object has no .rodata or no BTF");
	id = btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC);
	if (id < 0)
		return ERR("BPF object has no .rodata section in its BTF");
	t = btf__type_by_id(btf, id);
	v = btf_var_secinfos(t);
	for (int i = 0; i < btf_vlen(t); i++, v++) {
		const struct btf_type *var = btf__type_by_id(btf, v->type);

		if (strcmp(btf__name_by_offset(btf, var->name_off), "esa_cfg"))
			continue;
		cur = bpf_map__initial_value(m, &sz);
		if (v->offset || v->size != sizeof(*cfg) || !cur ||
		    sz < sizeof(*cfg))
			return ERR("esa_cfg must be the first variable of .rodata");
		data = malloc(sz);
		if (!data)
			return ERR("out of memory");
		memcpy(data, cur, sz);
		memcpy(data, cfg, sizeof(*cfg));
		rc = bpf_map__set_initial_value(m, data, sz);
		free(data);
		return rc ? ERR("cannot set the configuration: %s", strerror(-rc)) : 0;
	}
	return ERR("BPF object has no esa_cfg");
}

static int esa_map_fd(struct bpf_object *obj, const char *name)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, name);

	return m ? bpf_map__fd(m) : -1;
}

static int esa_prog_fd(struct bpf_object *obj, const char *name)
{
	struct bpf_program *p = bpf_object__find_program_by_name(obj, name);

	return p ? bpf_program__fd(p) : -1;
}

static int esa_resize(struct bpf_object *obj, const char *name, __u32 entries)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, name);

	return m ? bpf_map__set_max_entries(m, entries) : -ENOENT;
}

static void esa_clear(struct esa *e)
{
	memset(e, 0, sizeof(*e));
	e->prog_fd = e->jobs_fd = e->slots_fd = e->acc_fd = -1;
	e->counters_fd = e->tombs_fd = e->routes_fd = e->binds_fd = -1;
	e->members_fd = e->fan_fd = e->ports_fd = e->portinfo_fd = -1;
	e->seen_fd = e->skb_fd = -1;
	e->cfg_fd = e->egress_fd = e->egress_test_fd = e->tc_fd = -1;
}

/*
 * The jobs map is mmap()ed: the control plane writes the fields it changes,
 * and the generation with compare-and-swap (include/esa_maps.h).
 */
static int esa_map_jobs(struct esa *e, char *err, size_t len)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	if (bpf_obj_get_info_by_fd(e->jobs_fd, &info, &ilen))
		return ERR("cannot read the jobs map: %s", strerror(errno));
	if (info.value_size != sizeof(struct esa_job))
		return ERR("the jobs map holds %u-byte jobs, this esactl %zu: a program of another build is loaded",
			   info.value_size, sizeof(struct esa_job));
	e->jobs_len = ((size_t)info.max_entries * sizeof(struct esa_job) +
		       page - 1) / page * page;
	p = mmap(NULL, e->jobs_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		 e->jobs_fd, 0);
	if (p == MAP_FAILED) {
		e->jobs_len = 0;
		return ERR("cannot map the jobs map: %s", strerror(errno));
	}
	e->jobs = p;
	return 0;
}

/* The job ids esa.ko serves (its parameter max_jobs); 0 if unknown. */
static __u32 esa_module_max_jobs(void)
{
	FILE *f = fopen("/sys/module/esa/parameters/max_jobs", "r");
	unsigned int v = 0;

	if (f) {
		if (fscanf(f, "%u", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* The job ids the program serves: o's (256 by default), or with esa.ko's
 * kfuncs the module's, which o may only repeat. */
static int load_max_jobs(const struct esa_opts *o, int kfunc, __u32 *max_jobs,
			 char *err, size_t len)
{
	__u32 m;

	*max_jobs = o->max_jobs ? o->max_jobs : 256;
	if (!kfunc)
		return 0;
	m = esa_module_max_jobs();
	if (!m)
		return ERR("cannot read esa.ko's max_jobs");
	if (o->max_jobs && o->max_jobs != m)
		return ERR("esa.ko serves %u job ids: load with jobs %u, or load esa.ko with max_jobs=%u",
			   m, m, o->max_jobs);
	*max_jobs = m;
	return 0;
}

/* Both variants are built in; ESA_KFUNC_OBJECT or o->object override. */
static struct bpf_object *load_open(const struct esa_opts *o, int kfunc, char *err,
				    size_t len)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "esa");
	const char *path = o->object;
	struct bpf_object *obj;

	if (kfunc && !path)
		path = getenv("ESA_KFUNC_OBJECT");
	if (path) {
		obj = bpf_object__open_file(path, &oo);
	} else {
		size_t sz;
		const void *elf = kfunc ? esa_kfunc_bpf__elf_bytes(&sz) :
					  esa_bpf__elf_bytes(&sz);

		obj = bpf_object__open_mem(elf, sz, &oo);
	}
	if (!obj)
		ERR("cannot open BPF object %s: %s", path ? path : "(built in)",
		    strerror(errno));
	return obj;
}

/* The program's constants, and every map sized for cfg's slots and jobs. */
static int load_size(struct bpf_object *obj, const struct esa_cfg *cfg, char *err,
		     size_t len)
{
	__u32 max_jobs = cfg->max_jobs;
	struct bpf_map *acc;
	int rc = esa_set_cfg(obj, cfg, err, len);

	if (!rc)
		/* With esa.ko the jobs are the module's: esa_jobs stays empty. */
		rc = esa_resize(obj, "esa_jobs", cfg->kfunc ? 1 : max_jobs) ||
		     esa_resize(obj, "esa_slots", cfg->slots) ||
		     esa_resize(obj, "esa_acc", cfg->slots) ||
		     esa_resize(obj, "esa_counters", max_jobs + 1) ||
		     esa_resize(obj, "esa_binds", max_jobs * ESA_MAX_WORKERS) ||
		     esa_resize(obj, "esa_members", max_jobs) ||
		     esa_resize(obj, "esa_fan", max_jobs) ||
		     esa_resize(obj, "esa_routes", 2 * max_jobs) ||
		     esa_resize(obj, "esa_tombs", max_jobs * ESA_TOMB_RING);
	acc = bpf_object__find_map_by_name(obj, "esa_acc");
	if (!rc && (!acc || bpf_map__set_value_size(acc, cfg->nvals * sizeof(__u64))))
		rc = ERR("cannot size the accumulator map");
	if (rc && !err[0])
		snprintf(err, len, "BPF object does not have the expected maps");
	return rc ? -1 : 0;
}

/* The loaded object's programs and maps. */
static void load_fds(struct esa *e, struct bpf_object *obj)
{
	struct bpf_map *m;

	e->ncpus = libbpf_num_possible_cpus();
	e->prog_fd = esa_prog_fd(obj, "esa_xdp");
	e->skb_fd = esa_prog_fd(obj, "esa_xdp_skb");
	e->egress_fd = esa_prog_fd(obj, "esa_egress_prog");
	e->egress_test_fd = esa_prog_fd(obj, "esa_egress_test");
	e->tc_fd = esa_prog_fd(obj, "esa_tc_fan");
	e->jobs_fd = esa_map_fd(obj, "esa_jobs");
	e->slots_fd = esa_map_fd(obj, "esa_slots");
	e->acc_fd = esa_map_fd(obj, "esa_acc");
	e->counters_fd = esa_map_fd(obj, "esa_counters");
	e->tombs_fd = esa_map_fd(obj, "esa_tombs");
	e->routes_fd = esa_map_fd(obj, "esa_routes");
	e->binds_fd = esa_map_fd(obj, "esa_binds");
	e->members_fd = esa_map_fd(obj, "esa_members");
	e->fan_fd = esa_map_fd(obj, "esa_fan");
	e->ports_fd = esa_map_fd(obj, "esa_ports");
	e->portinfo_fd = esa_map_fd(obj, "esa_portinfo");
	e->seen_fd = esa_map_fd(obj, "esa_seen");
	bpf_object__for_each_map(m, obj)
		if (bpf_map__is_internal(m) && strstr(bpf_map__name(m), ".rodata"))
			e->cfg_fd = bpf_map__fd(m);
}

int esa_load(struct esa *e, const struct esa_opts *o, char *err, size_t len)
{
	struct esa_cfg cfg = {};
	struct bpf_object *obj;
	__u32 max_jobs;
	int kfunc = o->kfunc;
	int rc;

	esa_clear(e);
	libbpf_set_print(esa_libbpf_print);
	if (esa_opts_check(o, err, len))
		return -1;
	if (kfunc < 0)
		kfunc = esa_kfunc_available();
	if (kfunc && !esa_kfunc_available())
		return ERR("mode kfunc needs esa.ko loaded");
	if (load_max_jobs(o, kfunc, &max_jobs, err, len))
		return -1;
	obj = load_open(o, kfunc, err, len);
	if (!obj)
		return -1;
	cfg.port = htons(o->port);
	cfg.nvals = o->nvals;
	cfg.slots = o->slots;
	cfg.max_jobs = max_jobs;
	cfg.stale_ms = o->stale_ms;
	cfg.flags = (o->no_ps_copy ? ESA_CFG_F_NO_PS_COPY : 0) |
		    (o->no_udp_csum ? ESA_CFG_F_NO_UDP_CSUM : 0);
	cfg.addr = o->addr;
	cfg.policy = o->policy;
	cfg.kfunc = !!kfunc;
	if (getrandom(&cfg.cookie, sizeof(cfg.cookie), 0) != sizeof(cfg.cookie))
		cfg.cookie = (__u64)time(NULL) << 32 ^ getpid() ^ (__u64)(long)&cfg;
	if (load_size(obj, &cfg, err, len))
		goto out_close;
	if (bpf_object__load(obj)) {
		rc = errno;
		ERR("loading the XDP program failed: %s%s", strerror(rc),
		    esa_verbose ? "" : " (esactl -v shows the verifier's log)");
		goto out_close;
	}
	e->obj = obj;
	e->cfg = cfg;
	load_fds(e, obj);
	if (esa_map_jobs(e, err, len)) {
		esa_close(e);
		return -1;
	}
	return 0;
out_close:
	bpf_object__close(obj);
	return -1;
}

/* Pin names: what a user sees in /sys/fs/bpf/esa/ and passes to ip(8). */
static const struct {
	const char *pin, *name;
	int prog;
} esa_pins[] = {
	{ "xdp",		"esa_xdp",		1 },
	{ "xdp-generic",	"esa_xdp_skb",		1 },
	{ "egress",		"esa_egress_prog",	1 },
	{ "tc",			"esa_tc_fan",		1 },
	{ "jobs",		"esa_jobs",		0 },
	{ "slots",		"esa_slots",		0 },
	{ "acc",		"esa_acc",		0 },
	{ "counters",		"esa_counters",		0 },
	{ "tombs",		"esa_tombs",		0 },
	{ "routes",		"esa_routes",		0 },
	{ "binds",		"esa_binds",		0 },
	{ "members",		"esa_members",		0 },
	{ "fan",		"esa_fan",		0 },
	{ "ports",		"esa_ports",		0 },
	{ "portinfo",		"esa_portinfo",		0 },
	{ "seen",		"esa_seen",		0 },
	{ "config",		NULL,			0 },
};

#define ESA_NPINS	(sizeof(esa_pins) / sizeof(esa_pins[0]))

static int esa_pin_fd(int i, const struct esa *e)
{
	const char *n = esa_pins[i].name;

	if (!n)
		return e->cfg_fd;
	if (esa_pins[i].prog)
		return esa_prog_fd(e->obj, n);
	return esa_map_fd(e->obj, n);
}

int esa_pin(struct esa *e, const char *dir, char *err, size_t len)
{
	char path[512];

	if (mkdir(dir, 0700) && errno != EEXIST)
		return ERR("cannot create %s: %s", dir, strerror(errno));
	for (size_t i = 0; i < ESA_NPINS; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, esa_pins[i].pin);
		if (bpf_obj_pin(esa_pin_fd(i, e), path)) {
			int rc = errno;

			esa_unpin(dir);
			return ERR("cannot pin %s: %s", path, strerror(rc));
		}
	}
	/* The kfunc variant's namespace binding goes with the slot maps. */
	snprintf(path, sizeof(path), "%s/bind", dir);
	if (e->obj && esa_map_fd(e->obj, "esa_kf_ns") >= 0 &&
	    bpf_obj_pin(esa_map_fd(e->obj, "esa_kf_ns"), path)) {
		int rc = errno;

		esa_unpin(dir);
		return ERR("cannot pin %s: %s", path, strerror(rc));
	}
	return 0;
}

int esa_unpin(const char *dir)
{
	char path[512];
	int n = 0;

	for (size_t i = 0; i < ESA_NPINS; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, esa_pins[i].pin);
		n += !unlink(path);
	}
	snprintf(path, sizeof(path), "%s/bind", dir);
	n += !unlink(path);
	rmdir(dir);
	return n;
}

int esa_open_pinned(struct esa *e, const char *dir, char *err, size_t len)
{
	int *fds[] = {
		&e->prog_fd, &e->skb_fd, &e->egress_fd, &e->tc_fd,
		&e->jobs_fd, &e->slots_fd, &e->acc_fd, &e->counters_fd,
		&e->tombs_fd, &e->routes_fd, &e->binds_fd, &e->members_fd,
		&e->fan_fd, &e->ports_fd, &e->portinfo_fd, &e->seen_fd,
		&e->cfg_fd,
	};
	char path[512], *buf;
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info), zero = 0;

	_Static_assert(sizeof(fds) / sizeof(fds[0]) == ESA_NPINS,
		       "one fd per pin, in esa_pins' order");
	esa_clear(e);
	libbpf_set_print(esa_libbpf_print);
	for (size_t i = 0; i < ESA_NPINS; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, esa_pins[i].pin);
		*fds[i] = bpf_obj_get(path);
		if (*fds[i] < 0) {
			int rc = errno;

			esa_close(e);
			if (rc == ENOENT)
				return ERR("no ESA program is loaded (%s missing): run 'esactl prog load'",
					   path);
			return ERR("cannot open %s: %s", path, strerror(rc));
		}
	}
	if (bpf_obj_get_info_by_fd(e->cfg_fd, &info, &ilen) ||
	    info.value_size < sizeof(e->cfg) || !(buf = calloc(1, info.value_size))) {
		esa_close(e);
		return ERR("cannot read the pinned configuration");
	}
	if (bpf_map_lookup_elem(e->cfg_fd, &zero, buf)) {
		free(buf);
		esa_close(e);
		return ERR("cannot read the pinned configuration: %s", strerror(errno));
	}
	memcpy(&e->cfg, buf, sizeof(e->cfg));
	free(buf);
	e->ncpus = libbpf_num_possible_cpus();
	if (esa_map_jobs(e, err, len)) {
		esa_close(e);
		return -1;
	}
	return 0;
}

void esa_close(struct esa *e)
{
	if (e->jobs)
		munmap(e->jobs, e->jobs_len);
	if (e->obj) {
		bpf_object__close(e->obj);
	} else {
		int fds[] = {
			e->prog_fd, e->skb_fd, e->egress_fd, e->tc_fd, e->jobs_fd,
			e->slots_fd, e->acc_fd, e->counters_fd, e->tombs_fd,
			e->routes_fd, e->binds_fd, e->members_fd, e->fan_fd,
			e->ports_fd, e->portinfo_fd, e->seen_fd, e->cfg_fd,
		};

		for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
	esa_clear(e);
}

/* ------------------------------------------------------------------ */
/* Counters                                                            */
/* ------------------------------------------------------------------ */

int esa_counters_read(struct esa *e, __u32 row, struct esa_counters *c)
{
	struct esa_counters *pc = calloc(e->ncpus, sizeof(*pc));
	int rc = 0;

	if (!pc)
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	if (bpf_map_lookup_elem(e->counters_fd, &row, pc)) {
		rc = -errno;
	} else {
		for (int cpu = 0; cpu < e->ncpus; cpu++)
			for (int i = 0; i < __ESA_C_MAX; i++)
				c->c[i] += pc[cpu].c[i];
	}
	free(pc);
	return rc;
}

int esa_counters_sum(struct esa *e, struct esa_counters *c)
{
	struct esa_counters r;

	memset(c, 0, sizeof(*c));
	for (__u32 row = 0; row <= e->cfg.max_jobs; row++) {
		if (esa_counters_read(e, row, &r))
			return -errno;
		for (int i = 0; i < __ESA_C_MAX; i++)
			c->c[i] += r.c[i];
	}
	return 0;
}

int esa_counters_reset(struct esa *e)
{
	struct esa_counters *z = calloc(e->ncpus, sizeof(*z));
	int rc = 0;

	if (!z)
		return -ENOMEM;
	for (__u32 row = 0; row <= e->cfg.max_jobs && !rc; row++)
		if (bpf_map_update_elem(e->counters_fd, &row, z, BPF_ANY))
			rc = -errno;
	free(z);
	return rc;
}
