// SPDX-License-Identifier: GPL-2.0
/*
 * esactl job: register, delete, change and show jobs, in whichever registry
 * holds them (user/common/registry.h): their words, where their members
 * live (ADDR[:PORT][@DEV[/MAC]]), their homes on the pool.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <arpa/inet.h>

#include "esactl.h"
#include "jobdesc.h"

static int usage_job(void)
{
	fprintf(stdout,
		"Usage: esactl job add ID ps MEMBER workers MEMBER... [ max-prio N ]\n"
		"                      [ lease MSEC ] [ region { BASE | auto } SIZE ]\n"
		"       esactl job add ID ps MEMBER workers { MEMBER | - }... upstream MEMBER\n"
		"                      [ ranks N ] [ OPTIONS ]      (a leaf of two levels)\n"
		"       esactl job add ID ps MEMBER leaves MEMBER=RANKS... [ OPTIONS ]\n"
		"                                                   (the spine)\n"
		"       esactl job delete ID\n"
		"       esactl job set ID max-prio N\n"
		"       esactl job show [ ID ]\n"
		"       esactl job flush\n"
		"MEMBER := ADDR[:PORT][@DEV[/MAC]]: the switch port it is behind (default:\n"
		"the route to ADDR) and its MAC (default: learnt from its first packet).\n"
		"Workers are listed in rank order; a worker without a port may send from any.\n"
		"Two levels: \"-\" for a rank under another leaf; RANKS := 0-3,8 (a leaf is the\n"
		"spine's member at its lowest rank).\n"
		"Jobs go to esa.ko when the loaded program reads them from it (esactl status).\n");
	return 0;
}

static int job_add(int argc, char **argv)
{
	struct esa_registry r;
	struct esa_jobdesc *d;
	char why[ESA_ERR_LEN];
	int rc;

	if (argc < 1)
		return fail("job add needs a job id");
	if (matches(*argv, "help"))
		return usage_job();
	d = calloc(1, sizeof(*d));
	if (!d)
		return fail("out of memory");
	rc = esa_jobdesc_parse(argc, argv, 0, d, why, sizeof(why)) < 0 ? fail("%s", why) : 0;
	if (!rc && !(rc = registry_open(&r))) {
		if (esa_registry_add_desc(&r, d))
			rc = fail("%s", r.err);
		esa_registry_close(&r);
	}
	free(d);
	return rc;
}

/* job CMD ID [ WORDS ]: the id, or fail(). */
static int job_id_arg(int argc, char **argv, const char *cmd, __u32 *id)
{
	if (argc < 1)
		return fail("job %s needs a job id", cmd);
	return get_u32("job id", *argv, 65535, id);
}

static int job_del(int argc, char **argv)
{
	struct esa_registry r;
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
	rc = esa_registry_del(&r, id) ? fail("%s", r.err) : 0;
	esa_registry_close(&r);
	return rc;
}

static int job_set(int argc, char **argv)
{
	struct esa_registry r;
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
	rc = esa_registry_set_prio(&r, id, v) ? fail("%s", r.err) : 0;
	esa_registry_close(&r);
	return rc;
}

/*
 * Where rank r of job id lives, as the switch has it bound: the port and
 * MAC given at registration or learnt from the rank's first packet.
 */
static void print_bind(struct esa *e, __u32 id, const struct esa_job *j, int r)
{
	char dev[IF_NAMESIZE] = "?", mac[18];
	struct esa_bind b;
	bool ours;

	if (!e || esa_bind_read(e, id, r, &b))
		return;
	ours = (b.word >> 32) == j->reg && j->reg;
	out_obj_open("where");
	if (!ours || !(b.word & ESA_BIND_PORT)) {
		out_str("state", " unbound", "unbound");
	} else {
		if_indextoname(b.ifindex, dev);
		out_str("dev", " dev %s", dev);
		if (b.word & ESA_BIND_MAC)
			out_str("mac", " mac %s", fmt_mac(b.mac, mac));
		else
			out_str("mac", " mac %s", "(to learn)");
	}
	out_obj_close();
}

static void print_job(__u32 id, const struct esa_job *j, __u32 idle_ms,
		      bool expired, struct esa *e)
{
	char buf[32];

	out_obj_open(NULL);
	out_u64("id", "job %llu ", id);
	out_str("state", "%s ", expired ? "expired" : "active");
	out_u64("gen", "gen %llu ", esa_job_gen(j));
	out_u64("reg", "reg %llu ", j->reg);
	out_u64("workers", "workers %llu ", j->nworkers);
	out_u64("max_prio", "max-prio %llu ", j->max_prio);
	out_u64("lease_ms", "lease %llums ", j->lease_ms);
	out_u64("idle_ms", "idle %llums ", idle_ms);
	out_str("ps", "ps %s", fmt_addr(&j->ps, buf));
	if (j->up.ip)
		out_str("upstream", " upstream %s", fmt_addr(&j->up, buf));
	if (j->region_size) {
		out_obj_open("region");
		out_u64("base", " region %llu", j->region_base);
		out_u64("size", "+%llu", j->region_size);
		out_obj_close();
	}
	out_text("\n");
	out_arr_open("ranks");
	for (int r = 0; r < j->nworkers && r < ESA_MAX_WORKERS; r++) {
		char set[192];

		if (!j->rank[r].ip)
			continue;	/* two levels: under another leaf */
		out_obj_open(NULL);
		out_u64("rank", "\trank %llu ", r);
		out_str("addr", "%s", fmt_addr(&j->rank[r], buf));
		if (j->set[r])
			out_str("leaf", " leaf of ranks %s", esa_fmt_ranks(j->set[r], set));
		print_bind(e, id, j, r);
		out_text("\n");
		out_obj_close();
	}
	out_arr_close();
	out_obj_close();
}

static int show_job(__u32 id, const struct esa_job *j,
		    const struct esa_nl_job_info *info, void *arg)
{
	print_job(id, j, info->idle_ms, info->expired, arg);
	return 0;
}

static int job_show(int argc, char **argv)
{
	struct esa_nl_job_info info;
	struct esa_registry r;
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
	if (one) {
		rc = esa_registry_get(&r, id, &j, &info);
		if (rc)
			rc = fail("%s", r.err);
		else
			print_job(id, &j, info.idle_ms, info.expired, r.maps ? r.e : NULL);
	} else {
		out_arr_open(NULL);
		if (esa_registry_each(&r, show_job, r.maps ? r.e : NULL) < 0)
			rc = fail("%s", r.err);
		out_arr_close();
	}
	esa_registry_close(&r);
	return rc;
}

/* Up to 65536 job ids, ids[0] of them after it. */
static int collect_id(__u32 id, const struct esa_job *j,
		      const struct esa_nl_job_info *info, void *arg)
{
	__u32 *ids = arg;

	ids[ids[0]++ + 1] = id;
	return ids[0] == 65536;
}

static int job_flush(int argc, char **argv)
{
	struct esa_registry r;
	__u32 *ids;
	int rc = 0;

	if (argc > 0)
		return matches(*argv, "help") ? usage_job() : bad_arg("job flush", *argv);
	ids = calloc(65537, sizeof(*ids));
	if (!ids)
		return fail("out of memory");
	if (registry_open(&r)) {
		free(ids);
		return 1;
	}
	if (esa_registry_each(&r, collect_id, ids) < 0)
		rc = fail("%s", r.err);
	for (__u32 i = 0; !rc && i < ids[0]; i++) {
		int e = esa_registry_del(&r, ids[i + 1]);

		if (e && e != -ENOENT)	/* gone since: expired, or deleted */
			rc = fail("%s", r.err);
	}
	esa_registry_close(&r);
	free(ids);
	return rc;
}

int do_job(int argc, char **argv)
{
	static const struct esactl_cmd cmds[] = {
		{ "add", NULL, job_add },
		{ "delete", "del", job_del },
		{ "set", "change", job_set },
		{ "show", "list", job_show },
		{ "flush", NULL, job_flush },
		{ NULL },
	};

	return esactl_dispatch("job", cmds, job_show, usage_job, argc, argv);
}
