/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Prometheus text exposition format (version 0.0.4), written once for
 * esactl (`stats show -o prom`), esa-ps (`--metrics`) and esa-agent.
 * Header-only, like words.h: esa-ps links no object of user/common.
 *
 * A family is its HELP and TYPE lines, then every sample of it together
 * (the format wants them grouped); labels are given preformatted,
 * `job="7",reason="spoof"`, built with prom_label().  Counters are named
 * esa_<part>_<what>_total, histograms in seconds (docs/metrics.md).
 */
#ifndef ESA_PROM_H
#define ESA_PROM_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

/*
 * "# HELP" and "# TYPE" of family name (type: counter, gauge, histogram).
 * A counter added without its help text (NULL) is helped by its name.
 */
static inline void prom_head(FILE *f, const char *name, const char *type, const char *help)
{
	if (!help)
		help = name;
	fprintf(f, "# HELP %s ", name);
	for (; *help; help++) {		/* HELP escapes \ and newlines */
		if (*help == '\\')
			fputs("\\\\", f);
		else if (*help == '\n')
			fputs("\\n", f);
		else
			fputc(*help, f);
	}
	fprintf(f, "\n# TYPE %s %s\n", name, type);
}

/*
 * Append name="value" to the label list in buf (len bytes, "" to start),
 * with the value escaped as the format says; returns buf.
 */
static inline char *prom_label(char *buf, size_t len, const char *name, const char *value)
{
	size_t n = strlen(buf);

	n += snprintf(buf + n, n < len ? len - n : 0, "%s%s=\"", n ? "," : "", name);
	for (; *value && n + 3 < len; value++) {
		if (*value == '\\' || *value == '"' || *value == '\n') {
			buf[n++] = '\\';
			buf[n++] = *value == '\n' ? 'n' : *value;
		} else {
			buf[n++] = *value;
		}
	}
	if (n + 1 < len) {
		buf[n++] = '"';
		buf[n] = 0;
	}
	return buf;
}

/* One sample: name{labels} v (no braces when labels is NULL or ""). */
static inline void prom_u64(FILE *f, const char *name, const char *labels, uint64_t v)
{
	if (labels && *labels)
		fprintf(f, "%s{%s} %" PRIu64 "\n", name, labels, v);
	else
		fprintf(f, "%s %" PRIu64 "\n", name, v);
}

/*
 * The samples of one histogram series: count[i] (not cumulative) for
 * buckets whose upper bounds are le[i] seconds, i < n, and count[n] above
 * the last; sum in seconds.  Writes name_bucket (cumulative, +Inf last),
 * name_sum and name_count.
 */
static inline void prom_hist(FILE *f, const char *name, const char *labels,
			     const double *le, const uint64_t *count, int n, double sum)
{
	const char *sep = labels && *labels ? "," : "";
	uint64_t acc = 0;

	for (int i = 0; i <= n; i++) {
		acc += count[i];
		if (i < n)
			fprintf(f, "%s_bucket{%s%sle=\"%.9g\"} %" PRIu64 "\n", name,
				labels ? labels : "", sep, le[i], acc);
		else
			fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name,
				labels ? labels : "", sep, acc);
	}
	if (labels && *labels) {
		fprintf(f, "%s_sum{%s} %.17g\n", name, labels, sum);
		fprintf(f, "%s_count{%s} %" PRIu64 "\n", name, labels, acc);
	} else {
		fprintf(f, "%s_sum %.17g\n", name, sum);
		fprintf(f, "%s_count %" PRIu64 "\n", name, acc);
	}
}

/*
 * Write the text that fn writes (0, or -errno) to path atomically, as the node exporter's
 * textfile collector needs: into a temporary file beside it (a name it
 * does not read: not ending in .prom), then renamed over it.  0 or -errno.
 */
static inline int prom_write_file(const char *path, int (*fn)(FILE *f, void *arg), void *arg)
{
	char tmp[4096];
	FILE *f;
	int fd, rc;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		rc = -errno;
		close(fd);
		unlink(tmp);
		return rc;
	}
	rc = fn(f, arg);
	/* readable by the exporter's user, as a file written by redirection */
	if (!rc && (fchmod(fd, 0644) || fflush(f) || fsync(fd)))
		rc = -errno;
	if (fclose(f) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

#endif /* ESA_PROM_H */
