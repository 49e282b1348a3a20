/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The words of a job registration, as esactl's "job add ID WORDS" and
 * esa-ps's "job ID WORDS" take them (the same words, given to both): which
 * words there are, and the one parser of those that carry numbers
 * (max-prio, lease, region, ranks), with the switch's limits.  The words
 * naming members (ps, workers, leaves, upstream) each tool reads itself:
 * esactl places them on ports, esa-ps only sends to them.  Header-only:
 * esa-ps links no object of user/common.
 */
#ifndef ESA_JOBWORDS_H
#define ESA_JOBWORDS_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/esa.h>
#include "words.h"	/* esa_parse_u32() */

enum esa_job_word {
	ESA_JW_PS,
	ESA_JW_WORKERS,
	ESA_JW_LEAVES,		/* at a spine (two levels) */
	ESA_JW_UPSTREAM,	/* at a leaf: its spine */
	ESA_JW_RANKS,		/* at a leaf: the job's ranks */
	ESA_JW_MAX_PRIO,
	ESA_JW_LEASE,
	ESA_JW_REGION,
	__ESA_JW_MAX,
};

/* A word, and whether esactl takes a prefix of it ("max" for max-prio). */
struct esa_job_word_name {
	const char	*name;
	bool		abbrev;
};

static const struct esa_job_word_name esa_job_words[__ESA_JW_MAX] = {
	[ESA_JW_PS]		= { "ps", false },
	[ESA_JW_WORKERS]	= { "workers", false },
	[ESA_JW_LEAVES]		= { "leaves", false },
	[ESA_JW_UPSTREAM]	= { "upstream", true },
	[ESA_JW_RANKS]		= { "ranks", false },
	[ESA_JW_MAX_PRIO]	= { "max-prio", true },
	[ESA_JW_LEASE]		= { "lease", true },
	[ESA_JW_REGION]		= { "region", true },
};

/*
 * The job word w is (enum esa_job_word), or -1.  Exact, or with abbrev a
 * prefix of a word that may be abbreviated; a member's address is never one.
 */
static inline int esa_job_word(const char *w, bool abbrev)
{
	size_t n = strlen(w);

	for (int i = 0; i < __ESA_JW_MAX; i++)
		if (!strcmp(w, esa_job_words[i].name))
			return i;
	for (int i = 0; abbrev && n && i < __ESA_JW_MAX; i++)
		if (esa_job_words[i].abbrev && !strncmp(w, esa_job_words[i].name, n))
			return i;
	return -1;
}

/* The job's settings from the words with numbers. */
struct esa_job_opts {
	__u32	max_prio;	/* the caller's default (255) unless given */
	__u32	lease_ms;
	__u32	region_base;
	__u32	region_size;
	__u32	ranks;		/* "ranks N", or 0 */
	bool	auto_region;	/* "region auto SIZE" */
};

/* The value of what in word s, or -1 with the reason in why. */
static inline int esa_job_num(const char *what, const char *s, __u32 max, __u32 *v,
			      char *why, size_t len)
{
	int rc = esa_parse_u32(s, max, v);

	if (rc == -ERANGE)
		return snprintf(why, len, "%s %s out of range (0..%u)", what, s, max), -1;
	if (rc)
		return snprintf(why, len, "%s \"%s\" is not a number", what, s), -1;
	return 0;
}

/*
 * Word argv[0], which is word (esa_job_word()), with its numbers into o:
 * how many words it took (2 or 3), 0 when word carries no number (a
 * member's word), or -1 with the reason in why.
 */
static inline int esa_job_opt(int word, int argc, char **argv, struct esa_job_opts *o,
			      char *why, size_t len)
{
	int need = word == ESA_JW_REGION ? 3 : 2, rc = 0;

	if (word != ESA_JW_RANKS && word != ESA_JW_MAX_PRIO && word != ESA_JW_LEASE &&
	    word != ESA_JW_REGION)
		return 0;
	if (argc < need && word == ESA_JW_REGION)
		return snprintf(why, len, "region needs BASE SIZE or auto SIZE"), -1;
	if (argc < need)
		return snprintf(why, len, "\"%s\" needs a value", argv[0]), -1;
	switch (word) {
	case ESA_JW_RANKS:
		rc = esa_job_num("ranks", argv[1], ESA_MAX_WORKERS, &o->ranks, why, len);
		break;
	case ESA_JW_MAX_PRIO:
		rc = esa_job_num("max-prio", argv[1], 255, &o->max_prio, why, len);
		break;
	case ESA_JW_LEASE:
		rc = esa_job_num("lease", argv[1], 24 * 3600 * 1000, &o->lease_ms, why, len);
		break;
	case ESA_JW_REGION:
		o->auto_region = !strcmp(argv[1], "auto");
		if (!o->auto_region)
			rc = esa_job_num("region base", argv[1], ~0u, &o->region_base, why, len);
		if (!rc)
			rc = esa_job_num("region size", argv[2], ~0u, &o->region_size, why, len);
		break;
	}
	return rc ? -1 : need;
}

#endif /* ESA_JOBWORDS_H */
