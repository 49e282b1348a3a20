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
#include "esa_policy.h"
#include "jobwords.h"

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

/* Where a list of members ends: at the next job word, written out. */
static bool is_job_keyword(const char *w)
{
	return esa_job_word(w, false) >= 0;
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
static int place_region(struct esa_registry *r, __u32 id, struct esa_job *j)
{
	struct regions *rs;
	__u32 pool, size = j->region_size;
	int rc = 0;

	if (!r->maps)
		return fail("region auto needs the loaded program (its pool size)");
	pool = r->e->cfg.slots;
	if (size > pool)
		return fail("region of %u slots does not fit the pool of %u", size, pool);
	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return fail("out of memory");
	rs->skip = id;
	if (esa_registry_each(r, collect_region, rs) < 0)
		rc = fail("%s", r->err);
	if (!rc && r->e->cfg.policy == ESA_POLICY_SWITCHML) {
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

/* The words of "job add", parsed. */
struct job_words {
	struct esa_job	j;
	struct esa_place pl[ESA_PLACES];	/* ranks, the PS, the spine */
	__u32		nranks;		/* from the workers and leaves */
	struct esa_job_opts o;		/* the words with numbers */
};

/*
 * "workers ADDR[:PORT][@DEV[/MAC]]...": one per rank, in rank order; "-"
 * for a rank under another leaf (two levels).
 */
static int parse_workers(int *argc, char ***argv, struct job_words *w)
{
	char why[128];

	while (*argc > 1 && !is_job_keyword((*argv)[1])) {
		(*argc)--, (*argv)++;
		if (w->nranks == ESA_MAX_WORKERS)
			return fail("a job has at most %d workers", ESA_MAX_WORKERS);
		if (strcmp(**argv, "-") &&
		    parse_member(**argv, &w->j.rank[w->nranks], false,
				 &w->pl[w->nranks], why, sizeof(why)))
			return fail("worker %u: %s", w->nranks, why);
		w->nranks++;
	}
	return 0;
}

/*
 * At a spine (two levels): "leaves ADDR[:PORT][@DEV[/MAC]]=RANKS...", each
 * leaf's address (its service address; port 7680 by default) and the ranks
 * under it ("0-3,8"); the leaf is the member at its lowest rank.
 */
static int parse_leaves(int *argc, char ***argv, struct job_words *w)
{
	char why[128], word[128], *eq;
	struct esa_addr a;
	__u64 set;
	__u32 r;

	while (*argc > 1 && !is_job_keyword((*argv)[1])) {
		(*argc)--, (*argv)++;
		snprintf(word, sizeof(word), "%s", **argv);
		eq = strchr(word, '=');
		if (!eq || parse_ranks(eq + 1, &set))
			return fail("leaf \"%s\" is not ADDR[:PORT][@DEV[/MAC]]=RANKS (e.g. 10.255.1.1=0-3)",
				    **argv);
		*eq = 0;
		r = esa_lowest_rank(set);
		if (parse_member(word, &a, false, &w->pl[r], why, sizeof(why)))
			return fail("leaf %s: %s", word, why);
		if (w->j.rank[r].ip)
			return fail("leaf %s: rank %u has a member already", word, r);
		if (!a.port)
			a.port = htons(ESA_DEFAULT_PORT);
		w->j.rank[r] = a;
		w->j.set[r] = set;
		r = 64 - __builtin_clzll(set);
		if (r > w->nranks)
			w->nranks = r;
	}
	return 0;
}

/* A leaf's "upstream ADDR[:PORT][@DEV[/MAC]]": its spine (port 7680). */
static int parse_upstream(const char *word, struct job_words *w)
{
	char why[128];

	if (parse_member(word, &w->j.up, false, &w->pl[ESA_PLACE_UP], why,
			 sizeof(why)))
		return fail("upstream: %s", why);
	if (!w->j.up.port)
		w->j.up.port = htons(ESA_DEFAULT_PORT);
	return 0;
}

/* A word naming members (ps, workers, leaves, upstream), with them. */
static int parse_member_word(int word, int *argc, char ***argv, struct job_words *w)
{
	char why[128];

	if (word == ESA_JW_WORKERS)
		return parse_workers(argc, argv, w);
	if (word == ESA_JW_LEAVES)
		return parse_leaves(argc, argv, w);
	if (*argc < 2)
		return fail("\"%s\" needs a value", **argv);
	(*argc)--, (*argv)++;
	if (word == ESA_JW_UPSTREAM)
		return parse_upstream(**argv, w);
	if (parse_member(**argv, &w->j.ps, true, &w->pl[ESA_PLACE_PS], why, sizeof(why)))
		return fail("PS: %s", why);
	return 0;
}

static int parse_job_words(int argc, char **argv, struct job_words *w)
{
	bool have_ps = false;
	char why[128];
	int word, n;

	for (; argc > 0; argc--, argv++) {
		word = esa_job_word(*argv, true);
		if (word < 0)
			return bad_arg("job add", *argv);
		n = esa_job_opt(word, argc, argv, &w->o, why, sizeof(why));
		if (n < 0)
			return fail("%s", why);
		if (n) {	/* the loop steps over the last of them */
			argc -= n - 1;
			argv += n - 1;
			continue;
		}
		if (parse_member_word(word, &argc, &argv, w))
			return 1;
		have_ps |= word == ESA_JW_PS;
	}
	if (!have_ps)
		return fail("job add needs \"ps ADDR:PORT\"");
	if (!w->nranks)
		return fail("job add needs \"workers ADDR...\" (or, at a spine, \"leaves\")");
	if (w->o.ranks && w->o.ranks < w->nranks)
		return fail("ranks %u: the workers and leaves name %u", w->o.ranks, w->nranks);
	if (w->o.auto_region && !w->o.region_size)
		return fail("region auto needs a size of at least 1");
	w->j.nworkers = w->o.ranks ? w->o.ranks : w->nranks;
	w->j.max_prio = w->o.max_prio;
	w->j.lease_ms = w->o.lease_ms;
	w->j.region_base = w->o.region_base;
	w->j.region_size = w->o.region_size;
	return 0;
}

/*
 * Register the job: its words parsed, its home placed (region auto), the
 * switch's own limits checked, then the registry's add (registry.h).
 */
static int job_register(struct esa_registry *r, __u32 id, struct job_words *w)
{
	if (w->o.auto_region && place_region(r, id, &w->j))
		return 1;
	if (r->maps && r->e->cfg.policy == ESA_POLICY_SWITCHML && !w->j.region_size)
		return fail("policy switchml needs a region (region BASE SIZE)");
	return esa_registry_add(r, id, &w->j, w->pl) ? fail("%s", r->err) : 0;
}

static int job_add(int argc, char **argv)
{
	struct esa_registry r;
	struct job_words *w;
	__u32 id;
	int rc;

	if (argc < 1)
		return fail("job add needs a job id");
	if (matches(*argv, "help"))
		return usage_job();
	if (get_u32("job id", *argv, 65535, &id))
		return 1;
	w = calloc(1, sizeof(*w));
	if (!w)
		return fail("out of memory");
	w->o.max_prio = 255;
	rc = parse_job_words(argc - 1, argv + 1, w);
	if (!rc && !(rc = registry_open(&r))) {
		rc = job_register(&r, id, w);
		esa_registry_close(&r);
	}
	free(w);
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
			out_str("leaf", " leaf of ranks %s", fmt_ranks(j->set[r], set));
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
