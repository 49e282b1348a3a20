// SPDX-License-Identifier: GPL-2.0
/*
 * The one job-description parser (user/common/jobdesc.c), as esactl,
 * esa-ps and esa-agent read jobs through it: flat jobs, a leaf's and a
 * spine's words, places, the PS's stricter reading, the reasons given, and
 * the words written back (esa_jobdesc_format()) reading as the same job.
 * Prints TAP (suite 30-hosts).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <net/if.h>

#include "../tap.h"
#include "jobdesc.h"

static struct esa_jobdesc d, back;
static char why[256], words[8192];

static int parse(const char *line, unsigned int flags)
{
	return esa_jobdesc_parse_line(line, flags, &d, why, sizeof(why));
}

/* The words of d read back as the same job. */
static bool round_trip(unsigned int flags)
{
	if (esa_jobdesc_format(&d, words, sizeof(words)) ||
	    esa_jobdesc_parse_line(words, flags, &back, why, sizeof(why)) < 0)
		return false;
	return back.id == d.id && back.nranks == d.nranks && back.auto_region == d.auto_region &&
	       !memcmp(&back.j, &d.j, sizeof(d.j)) && !memcmp(back.pl, d.pl, sizeof(d.pl));
}

/* Parsing fails with exactly this reason. */
static bool refused(const char *line, unsigned int flags, const char *want)
{
	return parse(line, flags) < 0 && !strcmp(why, want);
}

static void test_flat(void)
{
	int n = parse("7 ps 10.0.9.2:9000 workers 10.0.1.2:5000 10.0.2.2 max-prio 3 "
		      "lease 10000 region auto 32", 0);

	ok(n == 13 && d.id == 7 && d.j.nworkers == 2 && d.nranks == 2 &&
	   d.j.rank[0].port == htons(5000) && !d.j.rank[1].port &&
	   d.j.ps.port == htons(9000) && d.j.max_prio == 3 && d.j.lease_ms == 10000 &&
	   d.auto_region && d.j.region_size == 32, "a flat job: ranks, PS, numbers (%d words)", n);
	ok(round_trip(0), "a flat job's words read back as the same job (%s)", words);
	ok(parse("7 ps 10.0.9.2:9000 max 4 reg 0 16 workers 10.0.1.2", 0) > 0 &&
	   d.j.max_prio == 4 && !d.auto_region && d.j.region_size == 16 && d.j.lease_ms == 0,
	   "abbreviated words (max, reg) outside member lists; no lease unless given");
	ok(parse("7 ps 10.0.9.2:9000 workers 10.0.1.2", 0) > 0 && d.j.max_prio == 255,
	   "max-prio 255 unless given");
}

static void test_two_levels(void)
{
	ok(parse("8 ps 10.0.9.2:9000 workers 10.11.1.2:5000 - 10.11.3.2:5000 upstream 10.255.0.1 "
		 "ranks 6", 0) > 0 && d.j.nworkers == 6 && d.nranks == 3 && !d.j.rank[1].ip &&
	   d.j.up.port == htons(ESA_DEFAULT_PORT), "a leaf: \"-\" for a rank elsewhere, its "
	   "upstream on port 7680, ranks 6");
	ok(round_trip(0), "a leaf's words read back as the same job (%s)", words);
	ok(parse("8 ps 10.0.9.2:9000 leaves 10.254.1.1=0-1,4 10.254.2.1:7000=2-3", 0) > 0 &&
	   d.j.nworkers == 5 && d.j.set[0] == 0x13 && d.j.set[2] == 0xc &&
	   d.j.rank[0].port == htons(ESA_DEFAULT_PORT) && d.j.rank[2].port == htons(7000),
	   "a spine: each leaf at its lowest rank with its ranks");
	ok(round_trip(0), "a spine's words read back as the same job (%s)", words);
	ok(refused("8 ps 10.0.9.2:9000 leaves 10.0.0.31=1-2 10.0.0.32=1,3", 0,
		   "leaf 10.0.0.32: rank 1 has a member already"),
	   "two leaves with one lowest rank refused (%s)", why);
}

static void test_places(void)
{
	int lo = if_nametoindex("lo");

	ok(parse("9 ps 10.0.9.2:9000@lo workers 10.0.1.2:5000@lo/02:00:00:00:00:01", 0) > 0 &&
	   d.pl[0].ifindex == lo && d.pl[0].have_mac && d.pl[0].mac[5] == 1 &&
	   d.pl[ESA_PLACE_PS].ifindex == lo && !d.pl[ESA_PLACE_PS].have_mac,
	   "places: the port a member is behind and its MAC");
	ok(round_trip(0), "places read back (%s)", words);
	ok(refused("9 ps 10.0.9.2:9000 workers 10.0.1.2@nope0", 0, "worker 0: no port \"nope0\" here"),
	   "a port not on this box refused (%s)", why);
	ok(parse("9 ps 10.0.9.2:9000 workers 10.0.1.2:1@nope0/02:00:00:00:00:02", ESA_JD_NO_DEV) > 0 &&
	   !d.pl[0].ifindex && d.pl[0].have_mac,
	   "ESA_JD_NO_DEV: the port's name is the switch's, not looked up here");
	ok(refused("9 ps 10.0.9.2:9000 workers 10.0.1.2@a0/02:00:zz:00:00:01", 0,
		   "worker 0: \"02:00:zz:00:00:01\" is not a MAC address"),
	   "a bad MAC refused (%s)", why);
}

static void test_ps(void)
{
	unsigned int ps = ESA_JD_PS | ESA_JD_NO_DEV | ESA_JD_MANY;
	char *two[] = { "7", "ps", "10.0.9.2:9000", "workers", "10.0.1.2:5000", "job", "8" };

	ok(esa_jobdesc_parse(7, two, ps, &d, why, sizeof(why)) == 5 && d.j.nworkers == 1,
	   "ESA_JD_MANY: stops before the next \"job\"");
	ok(esa_jobdesc_parse(7, two, 0, &d, why, sizeof(why)) < 0 &&
	   !strcmp(why, "unknown word \"job\""), "without it, \"job\" is no word of a job (%s)", why);
	ok(refused("7 ps 10.0.9.2:9000 workers 10.0.1.2:5000 10.0.2.2", ps,
		   "worker 1 \"10.0.2.2\" is not IP:PORT (the PS sends it results and FETCHes)"),
	   "a PS: every worker with its port (%s)", why);
	ok(refused("7 ps 10.0.9.2:9000 workers 10.0.1.2:5000 -", ps,
		   "worker 1 \"-\" is not IP:PORT (the PS sends it results and FETCHes)"),
	   "a PS: no \"-\" (%s)", why);
	ok(refused("7 ps 10.0.9.2:9000 leaves 10.0.0.31=0-1", ps,
		   "\"leaves\" is a spine's word: the PS needs \"workers IP:PORT...\""),
	   "a PS: no leaves (%s)", why);
	ok(parse("7 ps 10.0.9.2:9000 workers 10.0.1.2:5000@p1 upstream 10.255.0.1 max-prio 3", ps) > 0,
	   "a PS takes the switch's words too (places, upstream, numbers)");
}

static void test_reasons(void)
{
	char line[4096] = "7 ps 10.0.9.2:9000 workers";

	for (int r = 0; r < 65; r++)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), " 10.0.%d.2:5000", r);
	ok(refused(line, 0, "a job has at most 64 workers"), "65 workers refused (%s)", why);
	ok(refused("70000 ps 10.0.9.2:9000 workers 10.0.1.2", 0,
		   "job id 70000 out of range (0..65535)"), "a job id out of range (%s)", why);
	ok(refused("7 workers 10.0.1.2", 0, "the job needs \"ps IP:PORT\""), "no PS (%s)", why);
	ok(refused("7 ps 10.0.9.2", 0, "ps: \"10.0.9.2\" is not IP:PORT"),
	   "a PS without its port (%s)", why);
	ok(refused("7 ps 10.0.9.2:9", 0,
		   "the job needs \"workers ADDR...\" (or, at a spine, \"leaves\")"),
	   "no workers (%s)", why);
	ok(refused("7 ps 10.0.9.2:9 workers 10.0.1.2 frob", 0,
		   "worker 1: \"frob\" is not IP[:PORT]"), "a word in a member list is a member (%s)", why);
	ok(refused("7 ps 10.0.9.2:9 workers 10.0.1.2 lease", 0, "\"lease\" needs a value"),
	   "a number missing (%s)", why);
	ok(refused("7 ps 10.0.9.2:9 workers 10.0.1.2 region 4", 0,
		   "region needs BASE SIZE or auto SIZE"), "a region without its size (%s)", why);
	ok(refused("7 ps 10.0.9.2:9 workers 10.0.1.2 10.0.2.2 ranks 1", 0,
		   "ranks 1: the workers and leaves name 2"), "ranks below the workers (%s)", why);
	ok(refused("7 ps 10.0.9.2:9 workers 10.0.1.2 region auto 0", 0,
		   "region auto needs a size of at least 1"), "region auto 0 (%s)", why);
	ok(parse("7 ps 10.0.9.2:9 workers 10.0.1.2", 0) > 0 &&
	   esa_jobdesc_format(&d, words, 16) == -ENOSPC,
	   "words that do not fit the buffer: -ENOSPC");
}

int main(void)
{
	tap_start();
	test_flat();
	test_two_levels();
	test_places();
	test_ps();
	test_reasons();
	return tap_end();
}
