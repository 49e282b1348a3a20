/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A job's description: the one parser of the words of a job registration
 * ("ID ps MEMBER workers MEMBER... [ leaves MEMBER=RANKS... ] [ upstream
 * MEMBER ] [ ranks N ] [ max-prio N ] [ lease MSEC ] [ region { BASE |
 * auto } SIZE ]"), as esactl's "job add", esa-ps's "job" and esa-agent
 * take them, into the job (struct esa_job) and where its members live
 * (struct esa_place).  MEMBER := IP[:PORT][@DEV[/MAC]], or "-" for a rank
 * under another leaf.  Its own object (jobdesc.c), with words.h beneath
 * it: esa-ps links this one object of user/common.
 */
#ifndef ESA_JOBDESC_H
#define ESA_JOBDESC_H

#include <stdbool.h>
#include <stddef.h>
#include "esa_maps.h"
#include "place.h"

/* How a description is read (flags of esa_jobdesc_parse()). */
#define ESA_JD_PS	0x1	/* for a PS: every worker "IP:PORT" (it sends
				 * to them), no "-", no leaves */
#define ESA_JD_NO_DEV	0x2	/* @DEV not looked up: not the switch's box */
#define ESA_JD_MANY	0x4	/* stop before a word "job" (the next one) */

struct esa_jobdesc {
	__u32		id;
	struct esa_job	j;		/* members, max-prio, lease, region */
	struct esa_place pl[ESA_PLACES];	/* ranks, the PS, the spine */
	__u32		nranks;		/* the ranks the workers and leaves name */
	bool		auto_region;	/* "region auto SIZE": to place */
};

/*
 * Parse argv[0..argc): the id, then the words.  Returns the number of
 * words taken (all of them, or with ESA_JD_MANY up to the next "job"), or
 * -1 with a one-line reason in why.  max-prio defaults to 255, lease and
 * region to none.
 */
int esa_jobdesc_parse(int argc, char **argv, unsigned int flags,
		      struct esa_jobdesc *d, char *why, size_t len);
/*
 * The same, from one line of words separated by blanks (at most 256
 * words; the line is not changed).
 */
int esa_jobdesc_parse_line(const char *line, unsigned int flags,
			   struct esa_jobdesc *d, char *why, size_t len);
/*
 * The words of d (what esa_jobdesc_parse() takes back): the id, ps,
 * workers (or leaves), upstream, ranks, max-prio, lease, region, and the
 * places given (@DEV/MAC).  -ENOSPC when buf is too small.
 */
int esa_jobdesc_format(const struct esa_jobdesc *d, char *buf, size_t len);

/* "aa:bb:cc:dd:ee:ff". */
int esa_parse_mac(const char *s, __u8 mac[6]);
/* A set of ranks, "0-3,5,8": bit r for rank r (0..63). */
int esa_parse_ranks(const char *s, __u64 *set);
/* The same text of a set, in buf of >= 192 bytes. */
const char *esa_fmt_ranks(__u64 set, char *buf);

#endif /* ESA_JOBDESC_H */
