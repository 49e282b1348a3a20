// SPDX-License-Identifier: GPL-2.0
/*
 * esactl stats: the switch's counters, per job, and esa.ko's.
 */
#include <stdio.h>
#include <string.h>

#include "esactl.h"


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
	out_u64("reclaims", " reclaims %llu", c->reclaims);
	if (c->foreign)
		out_u64("foreign", " foreign %llu", c->foreign);
	out_text("\n");
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

int do_stats(int argc, char **argv)
{
	static const struct esactl_cmd cmds[] = {
		{ "show", "list", stats_show },
		{ "reset", NULL, stats_reset },
		{ NULL },
	};

	return esactl_dispatch("stats", cmds, stats_show, usage_stats, argc, argv);
}
