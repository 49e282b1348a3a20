// SPDX-License-Identifier: GPL-2.0
/*
 * esa_jct: a run file read back (DIR/run-POLICY-sSEED-rREP.txt, written by
 * jct_record.c): its run, CPU and utilisation lines, each job's line, the
 * switch's total counters by name, the slot samples.  For the report and
 * the calibration.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"
#include "jct_report.h"

static int counter_index(const char *name)
{
	for (int c = 0; c < __ESA_C_MAX; c++)
		if (!strcmp(esa_counter_names[c], name))
			return c;
	return -1;
}

/* "run seed=... ok=1 ...": what ran, and whether every sum was right. */
static void parse_run_line(const char *line, struct runf *r)
{
	const char *s;

	if ((s = strstr(line, " seed=")))
		r->seed = strtoul(s + 6, NULL, 10);
	if ((s = strstr(line, " rep=")))
		r->rep = strtoul(s + 5, NULL, 10);
	if ((s = strstr(line, " jobs=")))
		r->njobs = strtoul(s + 6, NULL, 10);
	if ((s = strstr(line, " regions=")))
		r->regions = strtoul(s + 9, NULL, 10);
	if ((s = strstr(line, " regsize=")))
		r->regsize = strtoul(s + 9, NULL, 10);
	if ((s = strstr(line, " makespan_s=")))
		r->makespan = strtod(s + 12, NULL);
	if ((s = strstr(line, " ok=")))
		r->ok = atoi(s + 4);
}

/* "cpu ...": the machine's idle share and who else used it. */
static void parse_cpu_line(const char *line, struct runf *r)
{
	const char *q;

	if ((q = strstr(line, " idle=")))
		r->cpu_idle = strtod(q + 6, NULL);
	if ((q = strstr(line, " self_s=")))
		r->cpu_self = strtod(q + 8, NULL);
	if ((q = strstr(line, " ps_s=")))
		r->cpu_ps = strtod(q + 6, NULL);
	if ((q = strstr(line, " others=")))
		r->cpu_others = strtod(q + 8, NULL);
}

/* "job ...": one job's line of jct_write_run(); a job that failed has no JCT. */
static void parse_job_line(const char *line, struct runf *r, unsigned njobs)
{
	struct rjob j = { 0 };
	unsigned prio, win;
	double cms, comm;
	unsigned long long tx, rs, rr, rp, bad;

	if (sscanf(line, "job %u %lf %15s %u %u %u %lf %u %u %lf %d %lf %lf "
		   "%llu %llu %llu %llu %lf %llu", &j.id, &j.arrival, j.model,
		   &j.workers, &j.iters, &j.chunks, &cms, &prio, &win, &j.jct,
		   &j.ok, &j.wait_region, &comm, &tx, &rs, &rr, &rp, &j.rtt_us,
		   &bad) != 19 || j.id >= njobs)
		return;
	j.comm = comm;
	j.tx = tx;
	j.resends = rs;
	j.rx_ps = rp;
	j.bad = bad;
	if (!j.ok)
		j.jct = NAN;
	r->job[j.id] = j;
}

/* "# ctr ROW name...": which counter each column of the ctr lines is (a
 * run file of an older build may have fewer or others). */
static int parse_ctr_cols(char *line, int *cols)
{
	char *save = NULL, *t = strtok_r(line + 9, " \n", &save);
	int ncols;

	for (ncols = 0; t && ncols < 128; t = strtok_r(NULL, " \n", &save))
		cols[ncols++] = counter_index(t);
	return ncols;
}

static void parse_ctr_total(const char *line, struct runf *r, const int *cols, int ncols)
{
	const char *p = line + 9;
	char *end;

	for (int k = 0; k < ncols; k++) {
		unsigned long long v = strtoull(p, &end, 10);

		if (end == p)
			break;
		if (cols[k] >= 0)
			r->tot[cols[k]] = v;
		p = end;
	}
}

/* "ts t busy held occ": one sample of the slots, appended. */
static int parse_ts_line(const char *line, struct runf *r, size_t *capts)
{
	double t;
	unsigned b, h, o;

	if (sscanf(line, "ts %lf %u %u %u", &t, &b, &h, &o) != 4)
		return 0;
	if (r->nts == *capts) {
		*capts = *capts ? 2 * *capts : 4096;
		r->ts_t = realloc(r->ts_t, *capts * sizeof(double));
		r->ts_b = realloc(r->ts_b, *capts * sizeof(unsigned));
		r->ts_h = realloc(r->ts_h, *capts * sizeof(unsigned));
		r->ts_o = realloc(r->ts_o, *capts * sizeof(unsigned));
		if (!r->ts_t || !r->ts_b || !r->ts_h || !r->ts_o)
			return -ENOMEM;
	}
	r->ts_t[r->nts] = t;
	r->ts_b[r->nts] = b;
	r->ts_h[r->nts] = h;
	r->ts_o[r->nts] = o;
	r->nts++;
	return 0;
}

int jct_read_run(const char *path, struct runf *r, unsigned njobs)
{
	char line[4096];
	int cols[128], ncols = 0, rc = 0;
	size_t capts = 0;
	FILE *f = fopen(path, "r");

	memset(r, 0, sizeof(*r));
	if (!f)
		return -errno;
	r->job = calloc(njobs, sizeof(*r->job));
	if (!r->job) {
		rc = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < njobs; i++)
		r->job[i].jct = NAN;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "run ", 4))
			parse_run_line(line, r);
		else if (!strncmp(line, "cpu ", 4))
			parse_cpu_line(line, r);
		else if (!strncmp(line, "util ", 5))
			sscanf(line, "util u_agg=%lf u_held=%lf u_occ=%lf", &r->u_agg,
			       &r->u_held, &r->u_occ);
		else if (!strncmp(line, "job ", 4))
			parse_job_line(line, r, njobs);
		else if (!strncmp(line, "# ctr ROW", 9))
			ncols = parse_ctr_cols(line, cols);
		else if (!strncmp(line, "ctr total", 9))
			parse_ctr_total(line, r, cols, ncols);
		else if (!strncmp(line, "ts ", 3) && (rc = parse_ts_line(line, r, &capts)))
			goto out;
	}
	r->present = 1;
out:
	fclose(f);
	return rc;
}

void jct_runf_free(struct runf *r)
{
	free(r->job);
	free(r->ts_t);
	free(r->ts_b);
	free(r->ts_h);
	free(r->ts_o);
}

/* What the switch saw and what it sent to the PS (jct_report.h). */
uint64_t jct_data_rx(const uint64_t *c)
{
	return c[ESA_C_CLAIMED] + c[ESA_C_AGGREGATED] + c[ESA_C_DUPLICATE] +
	       c[ESA_C_COLLISION] + c[ESA_C_TOMB_FWD] + c[ESA_C_RESEND_FWD] +
	       c[ESA_C_RESEND_FLUSH] + c[ESA_C_NOSLOT] + c[ESA_C_RESEND_HELD];
}

uint64_t jct_fallback(const uint64_t *c)
{
	return c[ESA_C_EVICTED] + c[ESA_C_COLLISION] + c[ESA_C_TOMB_FWD] +
	       c[ESA_C_RESEND_FWD] + c[ESA_C_NOSLOT];
}
