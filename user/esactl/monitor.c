// SPDX-License-Identifier: GPL-2.0
/*
 * esactl monitor: esa.ko's events as they happen.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "esactl.h"


static int usage_monitor(void)
{
	fprintf(stdout,
		"Usage: esactl monitor\n"
		"Prints esa.ko's events (job added, deleted, expired, slots reclaimed,\n"
		"priority changed)\n"
		"until interrupted; with -j one JSON object per line.\n");
	return 0;
}

static int print_event(const struct esa_nl_event *ev, void *arg)
{
	static const char *const what[] = {
		[ESA_CMD_JOB_ADDED] = "added", [ESA_CMD_JOB_DELETED] = "deleted",
		[ESA_CMD_JOB_EXPIRED] = "expired", [ESA_CMD_JOB_RECLAIMED] = "reclaimed",
		[ESA_CMD_JOB_CHANGED] = "changed",
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
		out_u64("reg", " reg %llu", ev->info->reg);
	}
	out_text("\n");
	out_obj_close();
	fflush(stdout);
	return 0;
}

int do_monitor(int argc, char **argv)
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
