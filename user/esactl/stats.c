// SPDX-License-Identifier: GPL-2.0
/*
 * esactl stats: the switch's counters, per job, and esa.ko's; as text,
 * JSON (-j) or in Prometheus's text format (-o prom, docs/metrics.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "esactl.h"
#include "prom.h"

static int usage_stats(void)
{
	fprintf(stdout,
		"Usage: esactl stats show [ job ID ] [ -o { text | prom } ] [ file PATH ]\n"
		"       esactl stats reset\n"
		"Without a job: the totals, packets of no known job, then every job.\n"
		"-o prom: Prometheus's text format; file PATH: written atomically there\n"
		"(the node exporter's textfile collector), not on standard output.\n");
	return 0;
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

/* ------------------------------------------------------------------ */
/* Prometheus                                                          */
/* ------------------------------------------------------------------ */

/* What stats show reads: the rows with traffic, and esa.ko's when it
 * keeps the jobs (row max_jobs: packets of no job known). */
struct prom_rows {
	struct esa *e;
	struct esa_nl *nl;
	__u32 only;		/* a job, or ~0u: all */
	__u32 n;		/* rows: jobs, then the no-job row */
	__u32 *id;
	struct esa_counters *c;
	struct esa_nl_counters *mj, mt;
	bool *have_mj, have_mt;
};

static int prom_read(struct prom_rows *r)
{
	__u32 max = r->e->cfg.max_jobs;
	int rc = 0;

	r->id = calloc(max + 1, sizeof(*r->id));
	r->c = calloc(max + 1, sizeof(*r->c));
	r->mj = calloc(max + 1, sizeof(*r->mj));
	r->have_mj = calloc(max + 1, sizeof(*r->have_mj));
	if (!r->id || !r->c || !r->mj || !r->have_mj)
		return -ENOMEM;
	for (__u32 j = 0; j <= max && !rc; j++) {
		if (r->only != ~0u && j != r->only)
			continue;
		rc = esa_counters_read(r->e, j, &r->c[r->n]);
		if (rc || (r->only == ~0u && counters_zero(&r->c[r->n])))
			continue;
		r->id[r->n] = j;
		r->have_mj[r->n] = j < max && r->nl &&
				   !esa_nl_counters(r->nl, j, &r->mt, &r->mj[r->n]);
		r->n++;
	}
	r->have_mt = r->nl && r->only == ~0u && !esa_nl_counters(r->nl, -1, &r->mt, NULL);
	return rc;
}

static void prom_free(struct prom_rows *r)
{
	free(r->id);
	free(r->c);
	free(r->mj);
	free(r->have_mj);
}

/* job="ID", none for the row of no job. */
static const char *prom_job(const struct prom_rows *r, __u32 i, char *buf, size_t len)
{
	char id[12];

	buf[0] = 0;
	if (r->id[i] < r->e->cfg.max_jobs) {
		snprintf(id, sizeof(id), "%u", r->id[i]);
		prom_label(buf, len, "job", id);
	}
	return buf;
}

static void prom_switch(FILE *f, const struct prom_rows *r)
{
	char name[64], lab[96];

	for (int k = 0; k < __ESA_C_MAX; k++) {
		if (!strncmp(esa_counter_names[k], "drop_", 5))
			continue;
		snprintf(name, sizeof(name), "esa_switch_%s_total", esa_counter_names[k]);
		prom_head(f, name, "counter", esa_counter_help[k]);
		for (__u32 i = 0; i < r->n; i++)
			prom_u64(f, name, prom_job(r, i, lab, sizeof(lab)), r->c[i].c[k]);
	}
	prom_head(f, "esa_switch_drops_total", "counter",
		  "Packets the switch dropped, by reason (esactl stats: drop_REASON)");
	for (__u32 i = 0; i < r->n; i++) {
		for (int k = 0; k < __ESA_C_MAX; k++) {
			if (strncmp(esa_counter_names[k], "drop_", 5))
				continue;
			prom_job(r, i, lab, sizeof(lab));
			prom_label(lab, sizeof(lab), "reason", esa_counter_names[k] + 5);
			prom_u64(f, "esa_switch_drops_total", lab, r->c[i].c[k]);
		}
	}
}

/* esa.ko's counters: the namespace's, and each job id's. */
static void prom_module(FILE *f, const struct prom_rows *r)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} m[] = {
		{ "adds", "Jobs added", offsetof(struct esa_nl_counters, adds) },
		{ "deletes", "Jobs deleted", offsetof(struct esa_nl_counters, deletes) },
		{ "expiries", "Leases run out", offsetof(struct esa_nl_counters, expiries) },
		{ "reclaims", "Retired generations whose slots were released",
		  offsetof(struct esa_nl_counters, reclaims) },
		{ "foreign", "Packets refused: their program serves another namespace",
		  offsetof(struct esa_nl_counters, foreign) },
	};
	char name[64], lab[64];

	for (size_t k = 0; k < sizeof(m) / sizeof(m[0]) && r->have_mt; k++) {
		snprintf(name, sizeof(name), "esa_kmod_%s_total", m[k].name);
		prom_head(f, name, "counter", m[k].help);
		prom_u64(f, name, NULL, *(const __u64 *)((const char *)&r->mt + m[k].off));
	}
	for (size_t k = 0; k < 4; k++) {		/* no foreign per job */
		bool any = false;

		snprintf(name, sizeof(name), "esa_kmod_job_%s_total", m[k].name);
		for (__u32 i = 0; i < r->n; i++) {
			if (!r->have_mj[i])
				continue;
			if (!any)
				prom_head(f, name, "counter", m[k].help);
			any = true;
			prom_u64(f, name, prom_job(r, i, lab, sizeof(lab)),
				 *(const __u64 *)((const char *)&r->mj[i] + m[k].off));
		}
	}
}

static int prom_write(FILE *f, void *arg)
{
	const struct prom_rows *r = arg;

	prom_switch(f, r);
	prom_module(f, r);
	return ferror(f) ? -EIO : 0;
}

static int stats_prom(struct esa *e, struct esa_nl *nl, __u32 id, const char *path)
{
	struct prom_rows r = { .e = e, .nl = nl, .only = id };
	int rc = prom_read(&r);

	if (rc)
		rc = fail("cannot read counters: %s", strerror(-rc));
	else if (!path)
		rc = prom_write(stdout, &r) ? 1 : 0;
	else if ((rc = prom_write_file(path, prom_write, &r)))
		rc = fail("cannot write %s: %s", path, strerror(-rc));
	prom_free(&r);
	return rc;
}

/* One job's counters, text or JSON. */
static int show_job(struct esa *e, struct esa_nl *nl, __u32 id)
{
	struct esa_nl_counters mt, mj;
	struct esa_counters c;
	int rc = esa_counters_read(e, id, &c);

	if (rc)
		return rc;
	out_obj_open(NULL);
	out_u64("job", "job %llu:", id);
	print_counters(&c, true);
	if (nl && !esa_nl_counters(nl, id, &mt, &mj))
		print_module_counters(&mj);
	out_obj_close();
	return 0;
}

/* The totals, packets of no job, then every job with traffic. */
static int show_all(struct esa *e, struct esa_nl *nl)
{
	struct esa_nl_counters mt, mj;
	struct esa_counters c;
	int rc = esa_counters_sum(e, &c);

	out_obj_open(NULL);
	out_obj_open("total");
	out_text("total:");
	print_counters(&c, true);
	if (nl && !esa_nl_counters(nl, -1, &mt, NULL))
		print_module_counters(&mt);
	out_obj_close();
	if (!rc)
		rc = esa_counters_read(e, e->cfg.max_jobs, &c);
	if (out_is_json() || !counters_zero(&c)) {
		out_obj_open("nojob");
		out_text("no job:");
		print_counters(&c, false);
		out_obj_close();
	}
	out_arr_open("jobs");
	for (__u32 j = 0; j < e->cfg.max_jobs && !rc; j++) {
		rc = esa_counters_read(e, j, &c);
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
	return rc;
}

static int stats_show(int argc, char **argv)
{
	struct esa_nl *nl = NULL;
	const char *path = NULL;
	bool prom = false;
	struct esa e;
	__u32 id = ~0u;
	int rc;

	for (; argc > 0; argc--, argv++) {
		if (matches(*argv, "job")) {
			NEXT_ARG();
			if (get_u32("job id", *argv, 65535, &id))
				return 1;
		} else if (!strcmp(*argv, "-o")) {
			NEXT_ARG();
			if (strcmp(*argv, "prom") && strcmp(*argv, "text"))
				return fail("-o %s: not text or prom", *argv);
			prom = !strcmp(*argv, "prom");
		} else if (matches(*argv, "file")) {
			NEXT_ARG();
			path = *argv;
		} else if (matches(*argv, "help")) {
			return usage_stats();
		} else {
			return bad_arg("stats show", *argv);
		}
	}
	if (path && !prom)
		return fail("file %s: only with -o prom", path);
	if (open_switch(&e))
		return 1;
	if (e.cfg.kfunc && esa_nl_open(&nl))
		nl = NULL;
	if (id != ~0u && id >= e.cfg.max_jobs)
		rc = fail("job id %u out of range (0..%u)", id, e.cfg.max_jobs - 1);
	else if (prom)
		rc = stats_prom(&e, nl, id, path);
	else if ((rc = id != ~0u ? show_job(&e, nl, id) : show_all(&e, nl)))
		rc = fail("cannot read counters: %s", strerror(-rc));
	esa_close(&e);
	if (nl)
		esa_nl_close(nl);
	return rc;
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
