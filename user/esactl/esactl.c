// SPDX-License-Identifier: GPL-2.0
/*
 * esactl - manage the ESA in-network aggregation switch.
 *
 *   esactl [ OPTIONS ] OBJECT { COMMAND | help }
 *
 * The grammar follows iproute2: objects and commands may be abbreviated,
 * every show command prints through one path that -j turns into JSON, and
 * every error is one line on stderr with a non-zero exit status.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include "loader.h"
#include "esa_nl.h"
#include "util.h"
#include "esa_policy.h"

#define ESACTL_VERSION	"1.0"

static const char *pin_dir = ESA_PIN_DIR;
static bool json, pretty;

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("esactl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

#define NEXT_ARG()							\
	do {								\
		argc--, argv++;						\
		if (argc <= 0)						\
			return fail("\"%s\" needs a value", argv[-1]);	\
	} while (0)

static int bad_arg(const char *obj, const char *arg)
{
	return fail("unknown argument \"%s\" for %s; try 'esactl %.*s help'",
		    arg, obj, (int)strcspn(obj, " "), obj);
}

static int open_switch(struct esa *e)
{
	char err[ESA_ERR_LEN];

	if (esa_open_pinned(e, pin_dir, err, sizeof(err)))
		return fail("%s", err);
	return 0;
}

static int get_u32(const char *what, const char *s, __u32 max, __u32 *v)
{
	int rc = parse_u32(s, max, v);

	if (rc == -ERANGE)
		return fail("%s %s out of range (0..%u)", what, s, max);
	if (rc)
		return fail("%s \"%s\" is not a number", what, s);
	return 0;
}

/* ------------------------------------------------------------------ */
/* prog                                                                */
/* ------------------------------------------------------------------ */

static int usage_prog(void)
{
	fprintf(stderr,
		"Usage: esactl prog load [ port PORT ] [ values N ] [ slots N ] [ jobs N ]\n"
		"                        [ policy { esa | atp | switchml } ] [ stale MSEC ]\n"
		"                        [ addr ADDR ] [ mode { auto | maps | kfunc } ]\n"
		"       esactl prog unload\n"
		"       esactl prog show\n"
		"Loads one program for every port, pinned under %s.\n", pin_dir);
	return 2;
}

static int ensure_bpffs(void)
{
	struct statfs st;

	if (!statfs("/sys/fs/bpf", &st) && st.f_type == BPF_FS_MAGIC)
		return 0;
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700"))
		return fail("cannot mount bpffs on /sys/fs/bpf: %s", strerror(errno));
	return 0;
}

static int prog_load(int argc, char **argv)
{
	char err[ESA_ERR_LEN];
	struct esa_opts o;
	struct esa e;
	__u32 v;

	esa_opts_default(&o);
	for (; argc > 0; argc--, argv++) {
		if (matches(*argv, "port")) {
			NEXT_ARG();
			if (get_u32("port", *argv, 65535, &v))
				return 1;
			o.port = v;
		} else if (matches(*argv, "values")) {
			NEXT_ARG();
			if (get_u32("values", *argv, ESA_MAX_VALUES, &v))
				return 1;
			o.nvals = v;
		} else if (matches(*argv, "slots")) {
			NEXT_ARG();
			if (get_u32("slots", *argv, 1u << 22, &v))
				return 1;
			o.slots = v;
		} else if (matches(*argv, "jobs")) {
			NEXT_ARG();
			if (get_u32("jobs", *argv, 65536, &v))
				return 1;
			o.max_jobs = v;
		} else if (matches(*argv, "policy")) {
			NEXT_ARG();
			if (esa_policy_parse(*argv) < 0)
				return fail("unknown policy \"%s\" (esa, atp, switchml)", *argv);
			o.policy = esa_policy_parse(*argv);
		} else if (matches(*argv, "stale")) {
			NEXT_ARG();
			if (get_u32("stale", *argv, 3600 * 1000, &o.stale_ms))
				return 1;
		} else if (matches(*argv, "addr")) {
			NEXT_ARG();
			if (inet_pton(AF_INET, *argv, &o.addr) != 1)
				return fail("\"%s\" is not an IPv4 address", *argv);
		} else if (matches(*argv, "mode")) {
			NEXT_ARG();
			if (!strcmp(*argv, "auto"))
				o.kfunc = -1;
			else if (!strcmp(*argv, "maps"))
				o.kfunc = 0;
			else if (!strcmp(*argv, "kfunc"))
				o.kfunc = 1;
			else
				return fail("unknown mode \"%s\" (auto, maps, kfunc)", *argv);
		} else if (matches(*argv, "help")) {
			return usage_prog();
		} else {
			return bad_arg("prog load", *argv);
		}
	}
	if (esa_opts_check(&o, err, sizeof(err)))
		return fail("%s", err);
	if (ensure_bpffs())
		return 1;
	if (!access(pin_dir, F_OK))
		return fail("a program is already loaded at %s ('esactl prog unload' first)",
			    pin_dir);
	if (esa_load(&e, &o, err, sizeof(err)))
		return fail("%s", err);
	if (esa_pin(&e, pin_dir, err, sizeof(err))) {
		esa_close(&e);
		return fail("%s", err);
	}
	esa_close(&e);
	return 0;
}

static __u32 prog_id(int fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

/* Every interface running our program, registered or attached by ip(8). */
static int for_each_attached(struct esa *e, int (*fn)(struct esa *, int, int))
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	__u32 ours = prog_id(e->prog_fd), id;
	int rc = 0;

	for (i = ifs; i && i->if_index; i++) {
		bool on[2] = { false, false };

		for (int m = 0; m < 2; m++)
			on[m] = !bpf_xdp_query_id(i->if_index, m ? XDP_FLAGS_SKB_MODE :
						  XDP_FLAGS_DRV_MODE, &id) && id == ours;
		if (on[0] || on[1] || esa_port_registered(e, i->if_index))
			rc |= fn(e, i->if_index, on[1] ? 2 : on[0] ? 1 : 0);
	}
	if (ifs)
		if_freenameindex(ifs);
	return rc;
}

static int detach_one(struct esa *e, int ifindex, int mode)
{
	char err[ESA_ERR_LEN];

	if (esa_port_detach(e, ifindex, err, sizeof(err)))
		return fail("%s", err);
	return 0;
}

static int prog_unload(int argc, char **argv)
{
	struct esa e;
	int rc;

	if (argc > 0)
		return matches(*argv, "help") ? usage_prog() : bad_arg("prog unload", *argv);
	if (open_switch(&e))
		return 1;
	rc = for_each_attached(&e, detach_one);
	esa_close(&e);
	if (!esa_unpin(pin_dir))
		return fail("nothing pinned at %s", pin_dir);
	return rc;
}

static void print_cfg(const struct esa_cfg *c)
{
	char a[INET_ADDRSTRLEN] = "any";

	if (c->addr)
		inet_ntop(AF_INET, &c->addr, a, sizeof(a));
	out_str("policy", "policy %s ", esa_policy_names[c->policy % __ESA_POLICY_MAX]);
	out_u64("port", "port %llu ", ntohs(c->port));
	out_str("addr", "addr %s ", a);
	out_u64("values", "values %llu ", c->nvals);
	out_u64("slots", "slots %llu ", c->slots);
	out_u64("jobs", "jobs %llu ", c->max_jobs);
	out_u64("stale_ms", "stale %llums ", c->stale_ms);
	out_str("registry", "registry %s\n", c->kfunc ? "esa.ko" : "maps");
}

static int prog_show(int argc, char **argv)
{
	struct esa e;

	if (argc > 0)
		return matches(*argv, "help") ? usage_prog() : bad_arg("prog show", *argv);
	if (open_switch(&e))
		return 1;
	out_obj_open(NULL);
	out_u64("prog_id", "prog %llu ", prog_id(e.prog_fd));
	out_str("pinned", "pinned %s ", pin_dir);
	print_cfg(&e.cfg);
	out_obj_close();
	esa_close(&e);
	return 0;
}

static int do_prog(int argc, char **argv)
{
	if (argc < 1)
		return prog_show(0, NULL);
	if (matches(*argv, "load"))
		return prog_load(argc - 1, argv + 1);
	if (matches(*argv, "unload"))
		return prog_unload(argc - 1, argv + 1);
	if (matches(*argv, "show") || matches(*argv, "list"))
		return prog_show(argc - 1, argv + 1);
	if (matches(*argv, "help"))
		return usage_prog();
	return bad_arg("prog", *argv);
}

/* ------------------------------------------------------------------ */
/* dev                                                                 */
/* ------------------------------------------------------------------ */

static int usage_dev(void)
{
	fprintf(stderr,
		"Usage: esactl dev attach DEV [ mode { native | generic } ]\n"
		"       esactl dev detach DEV\n"
		"       esactl dev show\n"
		"attach runs the program on DEV and delivers results through it;\n"
		"'ip link set dev DEV xdp pinned %s/xdp' attaches without result delivery.\n",
		pin_dir);
	return 2;
}

static int dev_ifindex(const char *name, int *ifindex)
{
	*ifindex = if_nametoindex(name);
	if (!*ifindex)
		return fail("cannot find device \"%s\"", name);
	return 0;
}

static int dev_attach(int argc, char **argv)
{
	char err[ESA_ERR_LEN];
	int ifindex, generic = 0, rc;
	struct esa e;

	if (argc < 1)
		return fail("dev attach needs a device");
	if (matches(*argv, "help"))
		return usage_dev();
	if (dev_ifindex(*argv, &ifindex))
		return 1;
	for (argc--, argv++; argc > 0; argc--, argv++) {
		if (matches(*argv, "mode")) {
			NEXT_ARG();
			if (!strcmp(*argv, "generic") || !strcmp(*argv, "skb"))
				generic = 1;
			else if (strcmp(*argv, "native") && strcmp(*argv, "drv"))
				return fail("unknown mode \"%s\" (native, generic)", *argv);
		} else {
			return bad_arg("dev attach", *argv);
		}
	}
	if (open_switch(&e))
		return 1;
	rc = esa_port_attach(&e, ifindex, generic, err, sizeof(err));
	esa_close(&e);
	return rc ? fail("%s", err) : 0;
}

static int dev_detach(int argc, char **argv)
{
	int ifindex, rc;
	struct esa e;

	if (argc < 1)
		return fail("dev detach needs a device");
	if (matches(*argv, "help"))
		return usage_dev();
	if (argc > 1)
		return bad_arg("dev detach", argv[1]);
	if (dev_ifindex(*argv, &ifindex) || open_switch(&e))
		return 1;
	rc = detach_one(&e, ifindex, 0);
	esa_close(&e);
	return rc;
}

static int show_one_dev(struct esa *e, int ifindex, int mode)
{
	char name[IF_NAMESIZE] = "?";
	bool results = esa_port_registered(e, ifindex);

	if_indextoname(ifindex, name);
	out_obj_open(NULL);
	out_str("dev", "%s ", name);
	out_u64("ifindex", "ifindex %llu ", ifindex);
	out_str("xdp", "xdp %s ", mode == 2 ? "generic" : mode == 1 ? "native" : "none");
	out_bool("results", "results %s\n", results);
	out_obj_close();
	return 0;
}

static int dev_show(int argc, char **argv)
{
	struct esa e;

	if (argc > 0)
		return matches(*argv, "help") ? usage_dev() : bad_arg("dev show", *argv);
	if (open_switch(&e))
		return 1;
	out_arr_open(NULL);
	for_each_attached(&e, show_one_dev);
	out_arr_close();
	esa_close(&e);
	return 0;
}

static int do_dev(int argc, char **argv)
{
	if (argc < 1)
		return dev_show(0, NULL);
	if (matches(*argv, "attach") || matches(*argv, "add"))
		return dev_attach(argc - 1, argv + 1);
	if (matches(*argv, "detach") || matches(*argv, "delete"))
		return dev_detach(argc - 1, argv + 1);
	if (matches(*argv, "show") || matches(*argv, "list"))
		return dev_show(argc - 1, argv + 1);
	if (matches(*argv, "help"))
		return usage_dev();
	return bad_arg("dev", *argv);
}

/* ------------------------------------------------------------------ */
/* job                                                                 */
/* ------------------------------------------------------------------ */

/*
 * Where jobs live: the maps of the loaded program, or esa.ko's registry
 * (over netlink) when the loaded program reads jobs through the module's
 * kfuncs, or when no program is loaded yet but the module is.
 */
struct registry {
	struct esa	e;
	bool		maps;	/* a program is loaded: e is open */
	struct esa_nl	*nl;	/* jobs go to esa.ko */
};

static int registry_open(struct registry *r)
{
	char err[ESA_ERR_LEN];
	int rc;

	memset(r, 0, sizeof(*r));
	r->maps = !esa_open_pinned(&r->e, pin_dir, err, sizeof(err));
	if (r->maps && !r->e.cfg.kfunc)
		return 0;
	rc = esa_nl_open(&r->nl);
	if (!rc)
		return 0;
	if (r->maps) {
		esa_close(&r->e);
		return fail("the loaded program reads jobs from esa.ko, which is not loaded: %s",
			    strerror(-rc));
	}
	if (rc == -ENOENT)
		return fail("%s; esa.ko is not loaded either", err);
	return fail("cannot talk to esa.ko: %s", strerror(-rc));
}

static void registry_close(struct registry *r)
{
	if (r->maps)
		esa_close(&r->e);
	if (r->nl)
		esa_nl_close(r->nl);
}

/* The kernel's own explanation when it gave one. */
static int nl_fail(struct registry *r, int rc, const char *what, __u32 id)
{
	const char *why = esa_nl_error(r->nl);

	if (rc == -ENOENT)
		return fail("job %u does not exist", id);
	if (rc == -EEXIST)
		return fail("job %u exists", id);
	if (rc == -EPERM)
		return fail("%s job %u: permission denied (needs CAP_NET_ADMIN)", what, id);
	return fail("%s job %u: %s", what, id, why && *why ? why : strerror(-rc));
}

static int usage_job(void)
{
	fprintf(stderr,
		"Usage: esactl job add ID ps ADDR:PORT workers ADDR[:PORT]... [ max-prio N ]\n"
		"                      [ lease MSEC ] [ region { BASE | auto } SIZE ]\n"
		"       esactl job delete ID\n"
		"       esactl job set ID max-prio N\n"
		"       esactl job show [ ID ]\n"
		"       esactl job flush\n"
		"Workers are listed in rank order; a worker without a port may send from any.\n"
		"Jobs go to esa.ko when the loaded program reads them from it (esactl status).\n");
	return 2;
}

static bool is_job_keyword(const char *w)
{
	static const char *const kw[] = { "ps", "workers", "max-prio", "lease",
					  "region", NULL };

	for (int i = 0; kw[i]; i++)
		if (!strcmp(w, kw[i]))
			return true;
	return false;
}

struct regions {
	__u32		skip;		/* the job being placed */
	__u32		n;
	struct esa_home	h[65536];
};

static int collect_region(__u32 id, const struct esa_job *j,
			  const struct esa_nl_job_info *info, void *arg)
{
	struct regions *rs = arg;

	if (id != rs->skip && j->region_size && !(info && info->expired))
		rs->h[rs->n++] = (struct esa_home){ j->region_base, j->region_size };
	return 0;
}

/*
 * region auto SIZE: policy switchml takes the lowest run of SIZE slots no
 * other job's region uses; esa and atp place the job's home where it meets
 * the fewest other homes (esa_home_place()).
 */
static int place_region(struct registry *r, __u32 id, struct esa_job *j)
{
	struct regions *rs;
	struct esa_job o;
	__u32 pool, size = j->region_size;
	int rc = 0;

	if (!r->maps)
		return fail("region auto needs the loaded program (its pool size)");
	pool = r->e.cfg.slots;
	if (size > pool)
		return fail("region of %u slots does not fit the pool of %u", size, pool);
	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return fail("out of memory");
	rs->skip = id;
	if (r->nl) {
		rc = esa_nl_job_dump(r->nl, collect_region, rs);
		if (rc)
			rc = fail("cannot list esa.ko's jobs: %s", strerror(-rc));
	} else {
		for (__u32 k = 0; k < r->e.cfg.max_jobs; k++)
			if (!esa_job_read(&r->e, k, &o) && o.state == ESA_JOB_ACTIVE &&
			    !esa_job_expired(&o))
				collect_region(k, &o, NULL, rs);
	}
	if (!rc && r->e.cfg.policy == ESA_POLICY_SWITCHML) {
		bool found = false;

		for (__u32 c = 0; c <= rs->n; c++) {
			__u64 at = c ? (__u64)rs->h[c - 1].base + rs->h[c - 1].size : 0;
			__u32 k;

			for (k = 0; k < rs->n; k++)
				if (at < (__u64)rs->h[k].base + rs->h[k].size &&
				    rs->h[k].base < at + size)
					break;
			if (k == rs->n && at + size <= pool && (!found || at < j->region_base)) {
				j->region_base = at;
				found = true;
			}
		}
		if (!found)
			rc = fail("no free run of %u slots left in the pool of %u", size, pool);
	} else if (!rc) {
		j->region_base = esa_home_place(rs->h, rs->n, pool, size);
	}
	free(rs);
	return rc;
}

static int job_add(int argc, char **argv)
{
	struct esa_job j = { .max_prio = 255 };
	char err[ESA_ERR_LEN];
	struct registry r;
	bool have_ps = false, auto_region = false;
	__u32 id, v;
	int rc;

	if (argc < 1)
		return fail("job add needs a job id");
	if (matches(*argv, "help"))
		return usage_job();
	if (get_u32("job id", *argv, 65535, &id))
		return 1;
	for (argc--, argv++; argc > 0; argc--, argv++) {
		if (!strcmp(*argv, "ps")) {
			NEXT_ARG();
			if (parse_addr(*argv, &j.ps, true))
				return fail("PS address \"%s\" is not IP:PORT", *argv);
			have_ps = true;
		} else if (!strcmp(*argv, "workers")) {
			while (argc > 1 && !is_job_keyword(argv[1])) {
				argc--, argv++;
				if (j.nworkers == ESA_MAX_WORKERS)
					return fail("a job has at most %d workers", ESA_MAX_WORKERS);
				if (parse_addr(*argv, &j.rank[j.nworkers], false))
					return fail("worker address \"%s\" is not IP[:PORT]", *argv);
				j.nworkers++;
			}
		} else if (matches(*argv, "max-prio")) {
			NEXT_ARG();
			if (get_u32("max-prio", *argv, 255, &v))
				return 1;
			j.max_prio = v;
		} else if (matches(*argv, "lease")) {
			NEXT_ARG();
			if (get_u32("lease", *argv, 24 * 3600 * 1000, &j.lease_ms))
				return 1;
		} else if (matches(*argv, "region")) {
			NEXT_ARG();
			auto_region = !strcmp(*argv, "auto");
			if (!auto_region &&
			    get_u32("region base", *argv, ~0u, &j.region_base))
				return 1;
			NEXT_ARG();
			if (get_u32("region size", *argv, ~0u, &j.region_size))
				return 1;
		} else {
			return bad_arg("job add", *argv);
		}
	}
	if (!have_ps)
		return fail("job add needs \"ps ADDR:PORT\"");
	if (!j.nworkers)
		return fail("job add needs \"workers ADDR...\"");
	if (auto_region && !j.region_size)
		return fail("region auto needs a size of at least 1");
	if (registry_open(&r))
		return 1;
	if (auto_region && place_region(&r, id, &j)) {
		registry_close(&r);
		return 1;
	}
	/* What the loaded program cannot serve is refused with its reason. */
	if (r.maps && esa_job_check(&r.e.cfg, id, &j, err, sizeof(err))) {
		registry_close(&r);
		return fail("%s", err);
	}
	if (r.nl) {
		rc = esa_nl_job_add(r.nl, id, &j);
		rc = rc ? nl_fail(&r, rc, "add", id) : 0;
	} else {
		rc = esa_job_add(&r.e, id, &j, err, sizeof(err)) ? fail("%s", err) : 0;
	}
	registry_close(&r);
	return rc;
}

static int job_id_arg(int argc, char **argv, const char *cmd, __u32 *id)
{
	if (argc < 1)
		return fail("job %s needs a job id", cmd);
	return get_u32("job id", *argv, 65535, id);
}

static int job_rc(int rc, __u32 id)
{
	if (rc == -ENOENT)
		return fail("job %u does not exist", id);
	if (rc == -ERANGE)
		return fail("job id %u out of range", id);
	if (rc)
		return fail("job %u: %s", id, strerror(-rc));
	return 0;
}

static int job_del(int argc, char **argv)
{
	struct registry r;
	__u32 id;
	int rc;

	if (argc > 0 && matches(*argv, "help"))
		return usage_job();
	if (job_id_arg(argc, argv, "delete", &id))
		return 1;
	if (argc > 1)
		return bad_arg("job delete", argv[1]);
	if (registry_open(&r))
		return 1;
	if (r.nl) {
		rc = esa_nl_job_del(r.nl, id);
		rc = rc ? nl_fail(&r, rc, "delete", id) : 0;
	} else {
		rc = job_rc(esa_job_del(&r.e, id), id);
	}
	registry_close(&r);
	return rc;
}

static int job_set(int argc, char **argv)
{
	struct registry r;
	__u32 id, v;
	int rc;

	if (argc > 0 && matches(*argv, "help"))
		return usage_job();
	if (job_id_arg(argc, argv, "set", &id))
		return 1;
	if (argc != 3 || !matches(argv[1], "max-prio"))
		return fail("usage: esactl job set ID max-prio N");
	if (get_u32("max-prio", argv[2], 255, &v) || registry_open(&r))
		return 1;
	if (r.nl) {
		rc = esa_nl_job_set_prio(r.nl, id, v);
		rc = rc ? nl_fail(&r, rc, "change", id) : 0;
	} else {
		rc = job_rc(esa_job_set_prio(&r.e, id, v), id);
	}
	registry_close(&r);
	return rc;
}

static void print_job(__u32 id, const struct esa_job *j, __u32 idle_ms,
		      bool expired)
{
	char buf[32];

	out_obj_open(NULL);
	out_u64("id", "job %llu ", id);
	out_str("state", "%s ", expired ? "expired" : "active");
	out_u64("gen", "gen %llu ", j->gen);
	out_u64("workers", "workers %llu ", j->nworkers);
	out_u64("max_prio", "max-prio %llu ", j->max_prio);
	out_u64("lease_ms", "lease %llums ", j->lease_ms);
	out_u64("idle_ms", "idle %llums ", idle_ms);
	out_str("ps", "ps %s", fmt_addr(&j->ps, buf));
	if (j->region_size) {
		out_obj_open("region");
		out_u64("base", " region %llu", j->region_base);
		out_u64("size", "+%llu", j->region_size);
		out_obj_close();
	}
	out_text("\n");
	out_arr_open("ranks");
	for (int r = 0; r < j->nworkers && r < ESA_MAX_WORKERS; r++) {
		out_text("\trank %d ", r);
		out_str(NULL, "%s\n", fmt_addr(&j->rank[r], buf));
	}
	out_arr_close();
	out_obj_close();
}

/* A job of the maps: its idle time from its activity stamp. */
static void print_map_job(__u32 id, const struct esa_job *j)
{
	__s64 idle = (__s64)(esa_now_ns() - j->last_active_ns) / 1000000;

	print_job(id, j, idle < 0 ? 0 : idle > 0xffffffffLL ? 0xffffffffu : idle,
		  esa_job_expired(j));
}

static int show_nl_job(__u32 id, const struct esa_job *j,
		       const struct esa_nl_job_info *info, void *arg)
{
	print_job(id, j, info->idle_ms, info->expired);
	return 0;
}

static int job_show(int argc, char **argv)
{
	struct esa_nl_job_info info;
	struct registry r;
	struct esa_job j;
	__u32 id = 0;
	bool one = false;
	int rc = 0;

	if (argc > 0) {
		if (matches(*argv, "help"))
			return usage_job();
		if (get_u32("job id", *argv, 65535, &id))
			return 1;
		if (argc > 1)
			return bad_arg("job show", argv[1]);
		one = true;
	}
	if (registry_open(&r))
		return 1;
	if (one && r.nl) {
		rc = esa_nl_job_get(r.nl, id, &j, &info);
		if (rc)
			rc = nl_fail(&r, rc, "show", id);
		else
			print_job(id, &j, info.idle_ms, info.expired);
	} else if (one) {
		rc = esa_job_read(&r.e, id, &j);
		if (!rc && j.state != ESA_JOB_ACTIVE)
			rc = -ENOENT;
		if (id >= r.e.cfg.max_jobs)
			rc = -ERANGE;
		if (rc)
			rc = job_rc(rc, id);
		else
			print_map_job(id, &j);
	} else {
		out_arr_open(NULL);
		if (r.nl) {
			rc = esa_nl_job_dump(r.nl, show_nl_job, NULL);
			if (rc)
				rc = fail("cannot list esa.ko's jobs: %s", strerror(-rc));
		} else {
			for (id = 0; id < r.e.cfg.max_jobs; id++)
				if (!esa_job_read(&r.e, id, &j) && j.state == ESA_JOB_ACTIVE)
					print_map_job(id, &j);
		}
		out_arr_close();
	}
	registry_close(&r);
	return rc;
}

static int collect_id(__u32 id, const struct esa_job *j,
		      const struct esa_nl_job_info *info, void *arg)
{
	__u32 *ids = arg;

	ids[ids[0]++ + 1] = id;
	return ids[0] == 65536;
}

static int job_flush(int argc, char **argv)
{
	struct registry r;
	struct esa_job j;
	__u32 *ids;
	int rc = 0;

	if (argc > 0)
		return matches(*argv, "help") ? usage_job() : bad_arg("job flush", *argv);
	if (registry_open(&r))
		return 1;
	if (r.nl) {
		ids = calloc(65537, sizeof(*ids));
		if (!ids || esa_nl_job_dump(r.nl, collect_id, ids) < 0)
			rc = fail("cannot list esa.ko's jobs");
		for (__u32 i = 0; !rc && ids && i < ids[0]; i++) {
			int e = esa_nl_job_del(r.nl, ids[i + 1]);

			if (e && e != -ENOENT)
				rc = nl_fail(&r, e, "delete", ids[i + 1]);
		}
		free(ids);
	} else {
		for (__u32 id = 0; id < r.e.cfg.max_jobs; id++)
			if (!esa_job_read(&r.e, id, &j) && j.state == ESA_JOB_ACTIVE)
				rc |= job_rc(esa_job_del(&r.e, id), id);
	}
	registry_close(&r);
	return rc;
}

static int do_job(int argc, char **argv)
{
	if (argc < 1)
		return job_show(0, NULL);
	if (matches(*argv, "add"))
		return job_add(argc - 1, argv + 1);
	if (matches(*argv, "delete") || matches(*argv, "del"))
		return job_del(argc - 1, argv + 1);
	if (matches(*argv, "set") || matches(*argv, "change"))
		return job_set(argc - 1, argv + 1);
	if (matches(*argv, "show") || matches(*argv, "list"))
		return job_show(argc - 1, argv + 1);
	if (matches(*argv, "flush"))
		return job_flush(argc - 1, argv + 1);
	if (matches(*argv, "help"))
		return usage_job();
	return bad_arg("job", *argv);
}

/* ------------------------------------------------------------------ */
/* monitor                                                             */
/* ------------------------------------------------------------------ */

static int usage_monitor(void)
{
	fprintf(stderr,
		"Usage: esactl monitor\n"
		"Prints esa.ko's events (job added, deleted, expired, slots reclaimed)\n"
		"until interrupted; with -j one JSON object per line.\n");
	return 2;
}

static int print_event(const struct esa_nl_event *ev, void *arg)
{
	static const char *const what[] = {
		[ESA_CMD_JOB_ADDED] = "added", [ESA_CMD_JOB_DELETED] = "deleted",
		[ESA_CMD_JOB_EXPIRED] = "expired", [ESA_CMD_JOB_RECLAIMED] = "reclaimed",
	};
	const char *w = ev->cmd < sizeof(what) / sizeof(what[0]) && what[ev->cmd] ?
			what[ev->cmd] : "unknown";

	char buf[32];

	out_obj_open(NULL);
	out_u64("id", "job %llu ", ev->id);
	out_str("event", "%s ", w);
	out_u64("gen", "gen %llu", ev->gen);
	if (ev->job) {
		out_u64("workers", " workers %llu", ev->job->nworkers);
		out_u64("max_prio", " max-prio %llu", ev->job->max_prio);
		out_u64("lease_ms", " lease %llums", ev->job->lease_ms);
		out_str("ps", " ps %s", fmt_addr(&ev->job->ps, buf));
	}
	out_text("\n");
	out_obj_close();
	fflush(stdout);
	return 0;
}

static int do_monitor(int argc, char **argv)
{
	struct esa_nl *nl;
	int rc;

	if (argc > 0)
		return matches(*argv, "help") ? usage_monitor() : bad_arg("monitor", *argv);
	rc = esa_nl_open(&nl);
	if (rc == -ENOENT)
		return fail("monitor needs esa.ko (events come from the module)");
	if (rc)
		return fail("cannot talk to esa.ko: %s", strerror(-rc));
	rc = esa_nl_join_events(nl);
	if (!rc)
		rc = esa_nl_monitor(nl, print_event, NULL);
	esa_nl_close(nl);
	return rc ? fail("monitor: %s", strerror(-rc)) : 0;
}

/* ------------------------------------------------------------------ */
/* stats                                                               */
/* ------------------------------------------------------------------ */

static int usage_stats(void)
{
	fprintf(stderr,
		"Usage: esactl stats show [ job ID ]\n"
		"       esactl stats reset\n"
		"Without a job: the totals, packets of no known job, then every job.\n");
	return 2;
}

static void print_counters(const struct esa_counters *c, bool all)
{
	int n = 0;

	for (int i = 0; i < __ESA_C_MAX; i++) {
		char fmt[64];

		if (!all && !c->c[i] && !out_is_json())
			continue;
		snprintf(fmt, sizeof(fmt), "%s%s %%llu", n++ % 6 ? " " : "\n\t",
			 esa_counter_names[i]);
		out_u64(esa_counter_names[i], fmt, c->c[i]);
	}
	out_text("\n");
}

static bool counters_zero(const struct esa_counters *c)
{
	for (int i = 0; i < __ESA_C_MAX; i++)
		if (c->c[i])
			return false;
	return true;
}

/* esa.ko's own counters, when it keeps the jobs. */
static void print_module_counters(const struct esa_nl_counters *c)
{
	out_obj_open("module");
	out_text("\tesa.ko:");
	out_u64("adds", " adds %llu", c->adds);
	out_u64("deletes", " deletes %llu", c->deletes);
	out_u64("expiries", " expiries %llu", c->expiries);
	out_u64("reclaims", " reclaims %llu\n", c->reclaims);
	out_obj_close();
}

static int stats_show(int argc, char **argv)
{
	struct esa_nl_counters mt, mj;
	struct esa_counters c;
	struct esa_nl *nl = NULL;
	struct esa e;
	__u32 id = ~0u;
	int rc = 0;

	for (; argc > 0; argc--, argv++) {
		if (matches(*argv, "job")) {
			NEXT_ARG();
			if (get_u32("job id", *argv, 65535, &id))
				return 1;
		} else if (matches(*argv, "help")) {
			return usage_stats();
		} else {
			return bad_arg("stats show", *argv);
		}
	}
	if (open_switch(&e))
		return 1;
	if (e.cfg.kfunc && esa_nl_open(&nl))
		nl = NULL;
	if (id != ~0u) {
		if (id >= e.cfg.max_jobs) {
			esa_close(&e);
			if (nl)
				esa_nl_close(nl);
			return fail("job id %u out of range (0..%u)", id, e.cfg.max_jobs - 1);
		}
		rc = esa_counters_read(&e, id, &c);
		if (!rc) {
			out_obj_open(NULL);
			out_u64("job", "job %llu:", id);
			print_counters(&c, true);
			if (nl && !esa_nl_counters(nl, id, &mt, &mj))
				print_module_counters(&mj);
			out_obj_close();
		}
	} else {
		rc = esa_counters_sum(&e, &c);
		out_obj_open(NULL);
		out_obj_open("total");
		out_text("total:");
		print_counters(&c, true);
		if (nl && !esa_nl_counters(nl, -1, &mt, NULL))
			print_module_counters(&mt);
		out_obj_close();
		if (!rc)
			rc = esa_counters_read(&e, e.cfg.max_jobs, &c);
		if (out_is_json() || !counters_zero(&c)) {
			out_obj_open("nojob");
			out_text("no job:");
			print_counters(&c, false);
			out_obj_close();
		}
		out_arr_open("jobs");
		for (__u32 j = 0; j < e.cfg.max_jobs && !rc; j++) {
			rc = esa_counters_read(&e, j, &c);
			if (rc || counters_zero(&c))
				continue;
			out_obj_open(NULL);
			out_u64("job", "job %llu:", j);
			print_counters(&c, false);
			if (nl && !esa_nl_counters(nl, j, &mt, &mj))
				print_module_counters(&mj);
			out_obj_close();
		}
		out_arr_close();
		out_obj_close();
	}
	esa_close(&e);
	if (nl)
		esa_nl_close(nl);
	return rc ? fail("cannot read counters: %s", strerror(-rc)) : 0;
}

static int stats_reset(int argc, char **argv)
{
	struct esa e;
	int rc;

	if (argc > 0)
		return matches(*argv, "help") ? usage_stats() : bad_arg("stats reset", *argv);
	if (open_switch(&e))
		return 1;
	rc = esa_counters_reset(&e);
	esa_close(&e);
	return rc ? fail("cannot reset counters: %s", strerror(-rc)) : 0;
}

static int do_stats(int argc, char **argv)
{
	if (argc < 1)
		return stats_show(0, NULL);
	if (matches(*argv, "show") || matches(*argv, "list"))
		return stats_show(argc - 1, argv + 1);
	if (matches(*argv, "reset"))
		return stats_reset(argc - 1, argv + 1);
	if (matches(*argv, "help"))
		return usage_stats();
	return bad_arg("stats", *argv);
}

/* ------------------------------------------------------------------ */
/* pool                                                                */
/* ------------------------------------------------------------------ */

static int usage_pool(void)
{
	fprintf(stderr,
		"Usage: esactl pool show [ slot N ]\n"
		"Without a slot: how many slots are free, aggregating and held, per job.\n");
	return 2;
}

static const char *const slot_states[] = { "free", "busy", "held" };

static int pool_slot(struct esa *e, __u32 idx)
{
	__u64 *acc = calloc(e->cfg.nvals, sizeof(*acc));
	struct esa_slot s;

	if (!acc)
		return fail("out of memory");
	if (idx >= e->cfg.slots) {
		free(acc);
		return fail("slot %u out of range (0..%u)", idx, e->cfg.slots - 1);
	}
	if (bpf_map_lookup_elem(e->slots_fd, &idx, &s) ||
	    bpf_map_lookup_elem(e->acc_fd, &idx, acc)) {
		free(acc);
		return fail("cannot read slot %u: %s", idx, strerror(errno));
	}
	out_obj_open(NULL);
	out_u64("slot", "slot %llu ", idx);
	out_str("state", "%s ", slot_states[s.state % 3]);
	out_u64("job", "job %llu ", s.job);
	out_u64("gen", "gen %llu ", s.gen);
	out_u64("seq", "seq %llu ", s.seq);
	out_u64("prio", "prio %llu ", s.prio);
	out_u64("bitmap", "bitmap 0x%llx ", s.bitmap);
	out_u64("ranks", "ranks %llu\n", s.nranks);
	out_arr_open("values");
	out_text("\tvalues");
	for (int i = 0; i < e->cfg.nvals; i++)
		out_s64(NULL, " %lld", s.state == ESA_SLOT_FREE ? 0 :
			(long long)(acc[i] - ((__u64)s.nranks << 31)));
	out_text("\n");
	out_arr_close();
	out_obj_close();
	free(acc);
	return 0;
}

static int pool_show(int argc, char **argv)
{
	__u32 n[3] = {}, *busy, idx = ~0u;
	struct esa_slot s;
	struct esa e;
	int rc = 0;

	for (; argc > 0; argc--, argv++) {
		if (matches(*argv, "slot")) {
			NEXT_ARG();
			if (get_u32("slot", *argv, ~0u - 1, &idx))
				return 1;
		} else if (matches(*argv, "help")) {
			return usage_pool();
		} else {
			return bad_arg("pool show", *argv);
		}
	}
	if (open_switch(&e))
		return 1;
	if (idx != ~0u) {
		rc = pool_slot(&e, idx);
		esa_close(&e);
		return rc;
	}
	busy = calloc(e.cfg.max_jobs, sizeof(*busy));
	if (!busy) {
		esa_close(&e);
		return fail("out of memory");
	}
	for (__u32 i = 0; i < e.cfg.slots; i++) {
		if (bpf_map_lookup_elem(e.slots_fd, &i, &s)) {
			rc = fail("cannot read slot %u: %s", i, strerror(errno));
			break;
		}
		n[s.state % 3]++;
		if (s.state != ESA_SLOT_FREE && s.job < e.cfg.max_jobs)
			busy[s.job]++;
	}
	if (!rc) {
		out_obj_open(NULL);
		out_u64("slots", "slots %llu ", e.cfg.slots);
		out_u64("free", "free %llu ", n[ESA_SLOT_FREE]);
		out_u64("busy", "busy %llu ", n[ESA_SLOT_BUSY]);
		out_u64("held", "held %llu\n", n[ESA_SLOT_HELD]);
		out_arr_open("jobs");
		for (__u32 j = 0; j < e.cfg.max_jobs; j++) {
			if (!busy[j])
				continue;
			out_obj_open(NULL);
			out_u64("job", "\tjob %llu ", j);
			out_u64("slots", "slots %llu\n", busy[j]);
			out_obj_close();
		}
		out_arr_close();
		out_obj_close();
	}
	free(busy);
	esa_close(&e);
	return rc;
}

static int do_pool(int argc, char **argv)
{
	if (argc < 1)
		return pool_show(0, NULL);
	if (matches(*argv, "show") || matches(*argv, "list"))
		return pool_show(argc - 1, argv + 1);
	if (matches(*argv, "help"))
		return usage_pool();
	return bad_arg("pool", *argv);
}

/* ------------------------------------------------------------------ */
/* status                                                              */
/* ------------------------------------------------------------------ */

static int count_job(__u32 id, const struct esa_job *j,
		     const struct esa_nl_job_info *info, void *arg)
{
	++*(__u32 *)arg;
	return 0;
}

static int do_status(int argc, char **argv)
{
	struct if_nameindex *ifs, *i;
	struct esa_nl *nl = NULL;
	bool module, loaded;
	struct esa_job j;
	__u32 jobs = 0;
	struct esa e;
	int ports = 0;

	if (argc > 0)
		return matches(*argv, "help") ?
			(fprintf(stderr, "Usage: esactl status\n"), 2) :
			bad_arg("status", *argv);
	module = !esa_nl_open(&nl);
	loaded = !esa_open_pinned(&e, pin_dir, (char[ESA_ERR_LEN]){}, ESA_ERR_LEN);
	out_obj_open(NULL);
	out_bool("module", "esa.ko loaded: %s\n", module);
	out_bool("loaded", "program loaded: %s", loaded);
	if (loaded) {
		out_text(" (");
		out_str("pinned", "%s)", pin_dir);
	}
	out_text("\n");
	out_str("registry", "jobs registered through: %s\n",
		loaded ? (e.cfg.kfunc ? "esa.ko (netlink)" : "BPF maps (esactl)") :
		module ? "esa.ko (netlink)" : "none: load the program");
	if (loaded) {
		out_obj_open("config");
		out_text("config: ");
		print_cfg(&e.cfg);
		out_obj_close();
	}
	if (nl && (!loaded || e.cfg.kfunc)) {
		esa_nl_job_dump(nl, count_job, &jobs);
	} else if (loaded) {
		for (__u32 id = 0; id < e.cfg.max_jobs; id++)
			jobs += !esa_job_read(&e, id, &j) && j.state == ESA_JOB_ACTIVE;
	}
	out_u64("jobs", "jobs: %llu\n", jobs);
	if (loaded) {
		ifs = if_nameindex();
		for (i = ifs; i && i->if_index; i++)
			ports += esa_port_registered(&e, i->if_index);
		if (ifs)
			if_freenameindex(ifs);
		out_u64("ports", "result ports: %llu\n", ports);
		if (module && !e.cfg.kfunc)
			out_text("note: esa.ko is loaded but this program keeps jobs in its maps;\n"
				 "      reload it ('esactl prog unload; esactl prog load') to use esa.ko\n");
		esa_close(&e);
	}
	out_obj_close();
	if (nl)
		esa_nl_close(nl);
	return 0;
}

/* ------------------------------------------------------------------ */

static int usage(void)
{
	fprintf(stderr,
		"Usage: esactl [ OPTIONS ] OBJECT { COMMAND | help }\n"
		"where  OBJECT := { prog | dev | job | stats | pool | monitor | status }\n"
		"       OPTIONS := { -j[son] | -p[retty] | -v[erbose] | -d[ir] PINDIR |\n"
		"                    -V[ersion] | -h[elp] }\n");
	return 2;
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} objects[] = {
	{ "prog",	do_prog },
	{ "dev",	do_dev },
	{ "job",	do_job },
	{ "stats",	do_stats },
	{ "pool",	do_pool },
	{ "monitor",	do_monitor },
	{ "status",	do_status },
};

int main(int argc, char **argv)
{
	int rc;

	/* Options come before the object, as in ip(8). */
	for (argc--, argv++; argc > 0 && argv[0][0] == '-'; argc--, argv++) {
		const char *o = argv[0] + 1 + (argv[0][1] == '-');

		if (matches(o, "json")) {
			json = true;
		} else if (matches(o, "pretty")) {
			pretty = true;
		} else if (matches(o, "verbose")) {
			esa_set_verbose(1);
		} else if (matches(o, "dir")) {
			if (argc < 2)
				return fail("-dir needs a directory");
			pin_dir = *++argv;
			argc--;
		} else if (matches(o, "Version")) {
			printf("esactl %s (ESA wire protocol %d)\n", ESACTL_VERSION, ESA_VERSION);
			return 0;
		} else if (matches(o, "help")) {
			usage();
			return 0;
		} else {
			return fail("unknown option \"%s\"; try 'esactl -help'", *argv);
		}
	}
	if (argc < 1)
		return usage();
	out_init(json, pretty);
	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++) {
		if (matches(*argv, objects[i].name)) {
			rc = objects[i].fn(argc - 1, argv + 1);
			out_finish();
			return rc;
		}
	}
	if (matches(*argv, "help"))
		return usage();
	return fail("unknown object \"%s\"; try 'esactl help'", *argv);
}
