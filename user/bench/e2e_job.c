// SPDX-License-Identifier: GPL-2.0
/*
 * esa_e2e_job: register a job without switch memory, for the end-to-end
 * benchmark's "everything through the PS" row (user/bench/e2e.sh).
 *
 *   esa_e2e_job PIN ID PS_IP:PORT WORKER_IP:PORT...
 *
 * The switch pinned under PIN must run policy switchml.  The job is
 * registered as `esactl job add` registers it (ranks bound where they live,
 * its delivery made) but with no region, which esactl refuses under
 * switchml: every packet of the job goes to its PS (counter noslot), as a
 * switchml job that finds no free region does in esa_jct.  Run it in the
 * switch's namespace (the members' ports come from its routes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "loader.h"
#include "registry.h"
#include "jobdesc.h"

static int usage(void)
{
	fprintf(stderr, "usage: esa_e2e_job PIN ID PS_IP:PORT WORKER_IP:PORT...\n"
		"register job ID without switch memory (policy switchml, no region):\n"
		"every packet of it goes to its PS\n");
	return 2;
}

/* "ID ps PS workers W...": the job's words, read by the one job parser. */
static int parse_job(int argc, char **argv, struct esa_jobdesc *d)
{
	char *words[ESA_MAX_WORKERS + 8], why[ESA_ERR_LEN];
	int n = 0;

	if (argc - 4 > ESA_MAX_WORKERS + 1) {
		fprintf(stderr, "esa_e2e_job: at most %d workers\n", ESA_MAX_WORKERS);
		return -1;
	}
	words[n++] = argv[2];
	words[n++] = "ps";
	words[n++] = argv[3];
	words[n++] = "workers";
	for (int i = 4; i < argc; i++)
		words[n++] = argv[i];
	if (esa_jobdesc_parse(n, words, ESA_JD_PS, d, why, sizeof(why)) < 0) {
		fprintf(stderr, "esa_e2e_job: %s\n", why);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char err[ESA_ERR_LEN];
	struct esa_jobdesc d;
	struct esa e;
	int rc;

	if (argc < 5)
		return usage();
	if (parse_job(argc, argv, &d))
		return 2;
	if (esa_open_pinned(&e, argv[1], err, sizeof(err))) {
		fprintf(stderr, "esa_e2e_job: %s\n", err);
		return 1;
	}
	if (e.cfg.policy != ESA_POLICY_SWITCHML) {
		fprintf(stderr, "esa_e2e_job: the switch runs policy %s, not switchml\n",
			esa_policy_names[e.cfg.policy]);
		esa_close(&e);
		return 1;
	}
	if (e.cfg.kfunc) {
		fprintf(stderr, "esa_e2e_job: jobs are registered through esa.ko here: "
			"use the map registry (no esa.ko)\n");
		esa_close(&e);
		return 1;
	}
	rc = esa_job_register(&e, d.id, &d.j, err, sizeof(err));
	if (rc)
		fprintf(stderr, "esa_e2e_job: job %u: %s\n", d.id, err);
	esa_close(&e);
	return rc ? 1 : 0;
}
