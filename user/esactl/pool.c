// SPDX-License-Identifier: GPL-2.0
/*
 * esactl pool: the slots: how many are free, aggregating, held, per job; one slot.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "esactl.h"


static int usage_pool(void)
{
	fprintf(stdout,
		"Usage: esactl pool show [ slot N ]\n"
		"Without a slot: how many slots are free, aggregating and held, per job.\n");
	return 0;
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

int do_pool(int argc, char **argv)
{
	static const struct esactl_cmd cmds[] = {
		{ "show", "list", pool_show },
		{ NULL },
	};

	return esactl_dispatch("pool", cmds, pool_show, usage_pool, argc, argv);
}
