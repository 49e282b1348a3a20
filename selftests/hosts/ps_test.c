// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the PS (user/ps/ps_core.c and the files ps_int.h lists) with
 * adversarial input: random pieces of chunks (overlapping partials, duplicate
 * singles, resends, late copies) in random order must give each chunk's exact
 * sum exactly once;
 * whole sums, HOLD/ACK, overflow, FETCH, bounded memory, trust (the switch's
 * packets only from its address and port, a worker's answer only to a FETCH
 * sent to it), the options' bounds, and 200,000 malformed or mutated
 * packets, each counted, after which the PS still serves its jobs.  Prints
 * TAP.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "ps.h"
#include "esa_policy.h"
#include "esa_wire.h"
#include "../tap.h"

/* Values per packet: 32 for most tests, ESA_FRAME_VALUES (856) and
 * ESA_MAX_VALUES (2232) for more passes of the merge rule, whole sums,
 * overflow and fuzzing (main()). */
static int NV = 32;

static uint64_t rng = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* ------------------------------------------------------------------ */
/* What the PS sends                                                   */
/* ------------------------------------------------------------------ */

struct sent {
	struct sockaddr_in from, to;
	uint8_t	buf[ESA_HDR_LEN + 4 * ESA_MAX_VALUES];
	size_t	len;
};

static struct sent out[4096];
static int nout;

static void tx(void *ctx, const struct sockaddr_in *from, const struct sockaddr_in *to,
	       const void *buf, size_t len)
{
	if (nout < 4096) {
		out[nout].from = *from;
		out[nout].to = *to;
		memcpy(out[nout].buf, buf, len);
		out[nout].len = len;
	}
	nout++;
}

static struct sockaddr_in sin_of(const char *ip, int port)
{
	struct sockaddr_in s = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, ip, &s.sin_addr);
	return s;
}

/* The switch's service address: where its packets come from. */
static struct sockaddr_in sw(void)
{
	return sin_of("10.255.0.1", ESA_DEFAULT_PORT);
}

/* Worker r of a test job lives at 10.0.J.(r+1):5000. */
static struct sockaddr_in waddr(int job, int r)
{
	char ip[32];

	snprintf(ip, sizeof(ip), "10.0.%d.%d", job, r + 1);
	return sin_of(ip, 5000);
}

static struct ps *new_ps(int njobs, const int *ids, const int *nw, struct ps_opts *o)
{
	struct ps_opts def;
	struct ps *ps;
	char err[256];

	if (!o) {
		ps_opts_default(&def);
		def.nvals = NV;
		def.nsw = 1;
		def.sw[0] = sin_of("10.255.0.1", ESA_DEFAULT_PORT);
		/* the merge rule's tests read the results each worker gets;
		 * test_sums() sends them through the switch */
		def.sums_via_switch = false;
		o = &def;
	}
	ps = ps_new(o, tx, NULL);
	for (int k = 0; k < njobs; k++) {
		struct ps_job_cfg j = { .id = ids[k], .nworkers = nw[k] };

		j.ps = sin_of("10.0.99.1", 9000 + k);
		for (int r = 0; r < nw[k]; r++)
			j.rank[r] = waddr(ids[k], r);
		if (ps_add_job(ps, &j, err, sizeof(err)))
			fprintf(stderr, "# %s\n", err);
	}
	return ps;
}

struct pkt {
	uint8_t	type, flags, reason;
	uint16_t job, rank;
	uint64_t bitmap;
	uint32_t seq;
	int32_t	v[ESA_MAX_VALUES];
};

static size_t build(const struct pkt *p, uint8_t *buf)
{
	struct esa_hdr *h = (struct esa_hdr *)buf;

	esa_hdr_init(h, p->type, p->job, p->rank, p->bitmap, p->seq, NV);
	h->flags = p->flags;
	h->reason = p->reason;
	memcpy(buf + ESA_HDR_LEN, p->v, 4 * NV);
	return ESA_HDR_LEN + 4 * NV;
}

static void feed(struct ps *ps, const struct pkt *p, struct sockaddr_in src)
{
	uint8_t buf[ESA_HDR_LEN + 4 * ESA_MAX_VALUES];
	size_t len = build(p, buf);

	ps_rx(ps, buf, len, &src, 0);
}

static void feed_at(struct ps *ps, const struct pkt *p, struct sockaddr_in src, uint64_t t)
{
	uint8_t buf[ESA_HDR_LEN + 4 * ESA_MAX_VALUES];
	size_t len = build(p, buf);

	ps_rx(ps, buf, len, &src, t);
}

static const struct esa_hdr *oh(int i)
{
	return (const struct esa_hdr *)out[i].buf;
}

static const int32_t *ov(int i)
{
	return (const int32_t *)(out[i].buf + ESA_HDR_LEN);
}

/* ------------------------------------------------------------------ */

static void test_parse(void)
{
	char *good[] = { "job", "7", "ps", "10.0.9.2:9000", "workers", "10.0.1.2:5000",
			 "10.0.2.2:5001", "max-prio", "3", "lease", "10000", "job", "8" };
	char *wnoport[] = { "job", "7", "ps", "10.0.9.2:9", "workers", "10.0.1.2:5000",
			    "10.0.2.2" };
	char *noport[] = { "job", "7", "ps", "10.0.9.2", "workers", "10.0.1.2" };
	char *bad[] = { "job", "7", "ps", "10.0.9.2:9", "workers", "10.0.1.2:1", "frob" };
	char *nowk[] = { "job", "7", "ps", "10.0.9.2:9" };
	struct ps_job_cfg j;
	char err[256];
	int used;

	used = ps_parse_job(13, good, &j, err, sizeof(err));
	ok(used == 11 && j.id == 7 && j.nworkers == 2 && ntohs(j.ps.sin_port) == 9000 &&
	   ntohs(j.rank[0].sin_port) == 5000 && ntohs(j.rank[1].sin_port) == 5001,
	   "job words as esactl's: switch-only words skipped, stops at the next job");
	ok(ps_parse_job(7, wnoport, &j, err, sizeof(err)) < 0 &&
	   !strcmp(err, "job 7: worker 1 \"10.0.2.2\" is not IP:PORT (the PS sends it results "
		   "and FETCHes)"), "a worker without a port refused, naming it (%s)", err);
	ok(ps_parse_job(6, noport, &j, err, sizeof(err)) < 0 && strstr(err, "ps"),
	   "a PS without a port refused (%s)", err);
	ok(ps_parse_job(7, bad, &j, err, sizeof(err)) < 0 && strstr(err, "frob"),
	   "an unknown word refused (%s)", err);
	ok(ps_parse_job(4, nowk, &j, err, sizeof(err)) < 0 && strstr(err, "workers"),
	   "a job without workers refused (%s)", err);
}

/*
 * Random pieces of random chunks, in random order, then every rank's
 * single resend: each chunk's exact sum must go out exactly once, to every
 * worker, whatever the PS saw before.  Job 3, 8 ranks.
 */
#define MR_JOB		3
#define MR_RANKS	8
#define MR_PIECES	40

typedef int32_t mr_vals[MR_RANKS][ESA_MAX_VALUES];

/* What the merge rule did to the chunks so far. */
struct mr_tally {
	int	*results;	/* per chunk: completions sent to every rank */
	int	wrong;		/* results whose values are not the sum */
	int	early;		/* completions before every rank was in */
	uint64_t pieces;
};

/* A partial of the ranks in b (any subset but all): an honest sum. */
static void mr_partial(struct pkt *p, const mr_vals val, uint32_t c, uint64_t b)
{
	memset(p, 0, sizeof(*p));
	p->type = ESA_T_PARTIAL;
	p->reason = (const uint8_t[]){ ESA_R_PREEMPT, ESA_R_AGED, ESA_R_FLUSH }[rnd() % 3];
	p->job = MR_JOB;
	p->rank = ESA_RANK_NONE;
	p->bitmap = b;
	p->seq = c;
	for (int r = 0; r < MR_RANKS; r++)
		if (b & (1ULL << r))
			for (int i = 0; i < NV; i++)
				p->v[i] += val[r][i];
}

/* Rank r's single, sometimes marked a resend. */
static void mr_single(struct pkt *p, const mr_vals val, uint32_t c, int r)
{
	memset(p, 0, sizeof(*p));
	p->type = ESA_T_COLLISION;
	p->reason = (const uint8_t[]){ ESA_R_COLLISION, ESA_R_TOMB, ESA_R_RESEND }[rnd() % 3];
	p->flags = p->reason == ESA_R_RESEND || rnd() % 4 == 0 ? ESA_F_RESEND : 0;
	p->job = MR_JOB;
	p->rank = r;
	p->bitmap = 1ULL << r;
	p->seq = c;
	memcpy(p->v, val[r], 4 * NV);
}

/*
 * Chunk c's values and its pieces: random partials (overlapping ones too),
 * random singles, some duplicated, shuffled.  Returns how many.
 */
static int mr_pieces(mr_vals val, uint32_t c, struct pkt *pc)
{
	uint64_t full = esa_full_mask(MR_RANKS);
	int np = 0;

	(void)rnd();	/* a draw of old, kept: the seeded sequence stays the same */
	for (int r = 0; r < MR_RANKS; r++)
		for (int i = 0; i < NV; i++)
			val[r][i] = (int32_t)(rnd() % 2000001) - 1000000;
	for (int k = rnd() % 6; k > 0; k--) {
		uint64_t b = rnd() & full;

		if (!b)
			b = 1ULL << (rnd() % MR_RANKS);
		if (b == full)
			b &= ~(1ULL << (rnd() % MR_RANKS));
		mr_partial(&pc[np++], val, c, b);
	}
	for (int k = rnd() % 8; k > 0; k--) {
		mr_single(&pc[np], val, c, rnd() % MR_RANKS);
		np++;
		if (rnd() % 3 == 0 && np < MR_PIECES) {
			pc[np] = pc[np - 1];	/* a duplicate */
			np++;
		}
	}
	for (int k = np - 1; k > 0; k--) {
		int x = rnd() % (k + 1);
		struct pkt t = pc[k];

		pc[k] = pc[x];
		pc[x] = t;
	}
	return np;
}

/*
 * What the PS sent for chunk c: a completion goes to all 8 (counted once,
 * at its first packet); a FLUSH of a finished chunk is answered to the
 * ranks it holds.  Every result must carry the sum.
 */
static void mr_check_sent(const mr_vals val, uint32_t c, struct mr_tally *t)
{
	for (int o = 0; o < nout; o++) {
		if (oh(o)->type != ESA_T_RESULT || ntohl(oh(o)->seq) != c)
			continue;
		if (o == 0 && nout == MR_RANKS)
			t->results[c]++;
		for (int i = 0; i < NV; i++) {
			int64_t want = 0;

			for (int r = 0; r < MR_RANKS; r++)
				want += val[r][i];
			if (ov(o)[i] != want)
				t->wrong++;
		}
	}
}

/* Feed chunk c's pieces; a completion must have had every rank before it. */
static void mr_feed(struct ps *ps, const mr_vals val, uint32_t c, const struct pkt *pc,
		    int np, struct mr_tally *t)
{
	uint64_t full = esa_full_mask(MR_RANKS);

	for (int k = 0; k < np; k++) {
		uint64_t cover = 0;

		nout = 0;
		feed(ps, &pc[k], sw());
		t->pieces++;
		if (!nout)
			continue;
		for (int q = 0; q <= k; q++)
			cover |= pc[q].bitmap;
		if ((cover & full) != full)
			t->early++;
		mr_check_sent(val, c, t);
	}
}

/* Every rank resends its single until it has the result. */
static void mr_resend_all(struct ps *ps, const mr_vals val, uint32_t c, struct mr_tally *t)
{
	for (int r = 0; r < MR_RANKS; r++) {
		struct pkt p = { .type = ESA_T_COLLISION, .reason = ESA_R_RESEND,
				 .flags = ESA_F_RESEND, .job = MR_JOB, .rank = r,
				 .bitmap = 1ULL << r, .seq = c };

		memcpy(p.v, val[r], 4 * NV);
		nout = 0;
		feed(ps, &p, sw());
		mr_check_sent(val, c, t);
	}
}

static void test_merge_random(void)
{
	const uint32_t CHUNKS = NV > 64 ? 300 : 3000;
	int ids[1] = { MR_JOB }, nw[1] = { MR_RANKS };
	struct ps *ps = new_ps(1, ids, nw, NULL);
	mr_vals *val = calloc(CHUNKS, sizeof(*val));
	struct mr_tally t = { .results = calloc(CHUNKS, sizeof(int)) };
	int twice = 0, missing = 0;

	for (uint32_t c = 0; c < CHUNKS; c++) {
		struct pkt pc[MR_PIECES];
		int np = mr_pieces(val[c], c, pc);

		mr_feed(ps, val[c], c, pc, np, &t);
		mr_resend_all(ps, val[c], c, &t);
	}
	for (uint32_t c = 0; c < CHUNKS; c++) {
		missing += !t.results[c];
		twice += t.results[c] > 1;
	}
	ok(!t.wrong && !twice && !missing && !t.early,
	   "merge rule: %d chunks from %llu random pieces (overlapping partials, duplicate "
	   "singles, resends, any order): every sum exact, completed once, never before "
	   "every rank was in (wrong %d, twice %d, missing %d, early %d)", (int)CHUNKS,
	   (unsigned long long)t.pieces, t.wrong, twice, missing, t.early);
	ok(ps_counter(ps, 0, PS_C_OVERLAP) > 0 && ps_counter(ps, 0, PS_C_DUP_SINGLE) > 0 &&
	   ps_counter(ps, 0, PS_C_RESEND_ANSWER) > 0 && ps_counter(ps, 0, PS_C_LATE) > 0,
	   "overlapping partials discarded (%llu), duplicate singles (%llu), resends "
	   "answered from the cache (%llu), late pieces ignored (%llu)",
	   (unsigned long long)ps_counter(ps, 0, PS_C_OVERLAP),
	   (unsigned long long)ps_counter(ps, 0, PS_C_DUP_SINGLE),
	   (unsigned long long)ps_counter(ps, 0, PS_C_RESEND_ANSWER),
	   (unsigned long long)ps_counter(ps, 0, PS_C_LATE));
	ps_free(ps);
	free(val);
	free(t.results);
}

/* The adversarial case of the rule: {0,1} kept, {1,2} must not count 1 twice. */
static void test_overlap_exact(void)
{
	int ids[1] = { 1 }, nw[1] = { 3 };
	struct ps *ps = new_ps(1, ids, nw, NULL);
	struct pkt a = { .type = ESA_T_PARTIAL, .reason = ESA_R_PREEMPT, .job = 1,
			 .rank = ESA_RANK_NONE, .bitmap = 3, .seq = 5 };
	struct pkt b = a, s2 = { .type = ESA_T_COLLISION, .reason = ESA_R_TOMB, .job = 1,
				 .rank = 2, .bitmap = 4, .seq = 5 };

	b.bitmap = 6;
	for (int i = 0; i < NV; i++) {
		a.v[i] = 1 + 10;	/* ranks 0 and 1 hold 1 and 10 */
		b.v[i] = 10 + 100;
		s2.v[i] = 100;
	}
	nout = 0;
	feed(ps, &a, sw());
	feed(ps, &b, sw());
	ok(!nout && ps_counter(ps, 0, PS_C_OVERLAP) == 1,
	   "partial {1,2} after {0,1}: discarded, nothing sent");
	feed(ps, &s2, sw());
	ok(nout == 3 && ov(0)[0] == 111 && ov(2)[NV - 1] == 111 &&
	   oh(0)->rank == htons(ESA_RANK_NONE) && be64toh(oh(0)->bitmap) == 7,
	   "then single 2: sum 111 to the 3 workers, rank 1 counted once");
	ok(out[0].to.sin_addr.s_addr == waddr(1, 0).sin_addr.s_addr &&
	   out[0].from.sin_port == htons(9000),
	   "results go to the registered worker addresses, from the job's PS address");

	/* singles first, then a multi covering some of them: the multi counts */
	{
		struct pkt s0 = s2, m = a;

		s0.rank = 0;
		s0.bitmap = 1;
		s0.seq = m.seq = 6;
		for (int i = 0; i < NV; i++)
			s0.v[i] = 1;
		nout = 0;
		feed(ps, &s0, sw());
		feed(ps, &m, sw());
		s2.seq = 6;
		feed(ps, &s2, sw());
		ok(nout == 3 && ov(0)[3] == 111,
		   "single 0, then partial {0,1}, then single 2: 111 (0's single not added)");
	}
	ps_free(ps);
}

static void test_whole_sums(void)
{
	int ids[2] = { 1, 2 }, nw[2] = { 3, 2 };
	struct ps *ps = new_ps(2, ids, nw, NULL);
	struct pkt res = { .type = ESA_T_RESULT, .job = 1, .rank = ESA_RANK_NONE,
			   .bitmap = 7, .seq = 40 };
	struct pkt rs = { .type = ESA_T_COLLISION, .reason = ESA_R_RESEND,
			  .flags = ESA_F_RESEND, .job = 1, .rank = 1, .bitmap = 2, .seq = 40 };
	struct pkt tomb = rs;

	for (int i = 0; i < NV; i++)
		res.v[i] = 1000 + i;
	nout = 0;
	feed(ps, &res, sw());
	ok(!nout && ps_counter(ps, 0, PS_C_DONE_SWITCH) == 1,
	   "the switch's RESULT copy: kept, nothing sent");
	feed(ps, &rs, sw());
	ok(nout == 1 && out[0].to.sin_addr.s_addr == waddr(1, 1).sin_addr.s_addr &&
	   ov(0)[5] == 1005, "a resend of it: the kept sum to that worker only");
	tomb.reason = ESA_R_TOMB;
	tomb.flags = 0;
	nout = 0;
	feed(ps, &tomb, sw());
	ok(!nout && ps_counter(ps, 0, PS_C_LATE) == 1, "a late TOMB without RESEND: ignored");

	res.type = ESA_T_PARTIAL;
	res.reason = ESA_R_DELIVER;
	res.seq = 41;
	nout = 0;
	feed(ps, &res, sw());
	ok(nout == 3 && ps_counter(ps, 0, PS_C_DONE_DELIVER) == 1,
	   "DELIVER: the whole sum to every worker");
	nout = 0;
	feed(ps, &res, sw());
	ok(nout == 3 && ps_counter(ps, 0, PS_C_DONE_DELIVER) == 1,
	   "DELIVER again (the switch could not deliver the PS's SUM): to every worker again");

	/* policy atp */
	res.type = ESA_T_RESULT;
	res.reason = ESA_R_HOLD;
	res.seq = 42;
	nout = 0;
	feed(ps, &res, sw());
	ok(nout == 1 && oh(0)->type == ESA_T_ACK && ntohs(out[0].to.sin_port) == 7680 &&
	   out[0].to.sin_addr.s_addr == sin_of("10.255.0.1", 0).sin_addr.s_addr &&
	   ov(0)[7] == 1007 && be64toh(oh(0)->bitmap) == 7 &&
	   oh(0)->rank == htons(ESA_RANK_NONE), "HOLD: an ACK with the sum to the switch");
	rs.seq = 42;
	nout = 0;
	feed(ps, &rs, sw());
	ok(nout == 2 && oh(0)->type == ESA_T_RESULT && oh(1)->type == ESA_T_ACK,
	   "a resend of a held sum: the sum to the worker, the ACK again (it may be lost)");

	/* job 2 is unaffected */
	ok(ps_counter(ps, 1, PS_C_RX) == 0, "other jobs untouched");
	ps_free(ps);

}

static void test_overflow(void)
{
	int ids[1] = { 4 }, nw[1] = { 2 };
	struct ps *ps = new_ps(1, ids, nw, NULL);
	struct pkt p = { .type = ESA_T_PARTIAL, .reason = ESA_R_PREEMPT,
			 .flags = ESA_F_OVERFLOW, .job = 4, .rank = ESA_RANK_NONE,
			 .bitmap = 1, .seq = 9 };
	struct pkt a = { .type = ESA_T_COLLISION, .reason = ESA_R_COLLISION, .job = 4,
			 .rank = 0, .bitmap = 1, .seq = 10 };
	struct pkt b = a;

	nout = 0;
	feed(ps, &p, sw());
	ok(nout == 2 && (oh(0)->flags & ESA_F_OVERFLOW) && oh(0)->type == ESA_T_RESULT,
	   "a piece flagged overflow: RESULT|OVERFLOW to every worker (they redo)");
	b.rank = 1;
	b.bitmap = 2;
	for (int i = 0; i < NV; i++)
		a.v[i] = b.v[i] = 0x60000000;
	nout = 0;
	feed(ps, &a, sw());
	feed(ps, &b, sw());
	ok(nout == 2 && (oh(0)->flags & ESA_F_OVERFLOW) &&
	   ps_counter(ps, 0, PS_C_DONE_OVERFLOW) == 2,
	   "a merged sum beyond int32: RESULT|OVERFLOW, never wrapped");
	ps_free(ps);
}

static void test_fetch(void)
{
	int ids[1] = { 5 }, nw[1] = { 3 };
	struct ps *ps = new_ps(1, ids, nw, NULL);
	struct pkt rs = { .type = ESA_T_COLLISION, .reason = ESA_R_RESEND,
			  .flags = ESA_F_RESEND, .job = 5, .rank = 2, .bitmap = 4, .seq = 77 };
	struct pkt ans = { .type = ESA_T_RESULT, .job = 5, .rank = 0, .bitmap = 7, .seq = 77 };
	struct sockaddr_in wrong_port = waddr(5, 0);
	bool to[3] = { false }, held = true;

	nout = 0;
	feed_at(ps, &rs, sw(), 1000000000ULL);
	ok(!nout, "a first resend of an unknown chunk: kept as a single");
	feed_at(ps, &rs, sw(), 1100000000ULL);
	for (int o = 0; o < nout; o++) {
		if (oh(o)->type != ESA_T_FETCH || out[o].len != ESA_HDR_LEN || oh(o)->count ||
		    ntohl(oh(o)->seq) != 77)
			continue;
		held &= be64toh(oh(o)->bitmap) == 4;
		for (int r = 0; r < 3; r++)
			to[r] |= out[o].to.sin_addr.s_addr == waddr(5, r).sin_addr.s_addr &&
				 out[o].to.sin_port == waddr(5, r).sin_port;
	}
	ok(nout == 3 && to[0] && to[1] && to[2] && held,
	   "the second resend: FETCH (no values, the bitmap of the ranks held: rank 2) to the "
	   "others and to the resender, at their registered ports");
	for (int i = 0; i < NV; i++)
		ans.v[i] = -i;
	nout = 0;
	feed(ps, &ans, sin_of("10.0.9.9", 5000));
	ok(!nout && ps_counter(ps, 0, PS_C_DROP_SOURCE) == 1,
	   "an answer from an address that is no worker: dropped (drop_source)");
	feed(ps, &ans, waddr(5, 1));
	ok(!nout && ps_counter(ps, 0, PS_C_DROP_SOURCE) == 2,
	   "an answer claiming rank 0 from rank 1's address: dropped (drop_source)");
	wrong_port.sin_port = htons(5001);
	feed(ps, &ans, wrong_port);
	ok(!nout && ps_counter(ps, 0, PS_C_DROP_SOURCE) == 3,
	   "an answer from rank 0's address but another port: dropped (drop_source)");
	ans.seq = 78;
	feed(ps, &ans, waddr(5, 0));
	ok(!nout && ps_counter(ps, 0, PS_C_DROP_UNASKED) == 1,
	   "rank 0's answer for a chunk no FETCH asked about: dropped (drop_unasked)");
	ans.seq = 77;
	feed(ps, &ans, waddr(5, 0));
	ok(nout == 1 && out[0].to.sin_addr.s_addr == waddr(5, 2).sin_addr.s_addr &&
	   ov(0)[9] == -9 && ps_counter(ps, 0, PS_C_DONE_FETCHED) == 1,
	   "rank 0's answer: delivered to rank 2, which asked");
	nout = 0;
	ans.rank = 1;
	feed(ps, &ans, waddr(5, 1));
	ok(!nout && ps_counter(ps, 0, PS_C_DUP_RESULT) == 1 &&
	   ps_counter(ps, 0, PS_C_DROP_UNASKED) == 1,
	   "rank 1's late answer (it was asked too): a duplicate, not a drop");
	nout = 0;
	feed(ps, &rs, sw());
	ok(nout == 1 && ov(0)[9] == -9, "and kept: the next resend is answered");
	ps_free(ps);
}

/*
 * With one switch, a sum every worker needs goes to the switch as one SUM
 * (it sends it to the workers), echoing why the chunk reached the PS; a
 * resend of a chunk the switch completed (DONE) draws a FETCH at once; a
 * sum the switch could not deliver comes back as DELIVER and goes to each
 * worker from here.
 */
static void test_sums(void)
{
	int ids[1] = { 9 }, nw[1] = { 3 };
	struct ps_opts o;
	struct ps *ps;
	struct pkt part = { .type = ESA_T_PARTIAL, .reason = ESA_R_PREEMPT, .job = 9,
			    .rank = ESA_RANK_NONE, .bitmap = 3, .seq = 50 };
	struct pkt one = { .type = ESA_T_COLLISION, .reason = ESA_R_TOMB, .job = 9,
			   .rank = 2, .bitmap = 4, .seq = 50 };
	struct pkt done = { .type = ESA_T_COLLISION, .reason = ESA_R_DONE,
			    .flags = ESA_F_RESEND, .job = 9, .rank = 1, .bitmap = 2, .seq = 51 };
	struct pkt back = part;

	ps_opts_default(&o);
	o.nvals = NV;
	o.nsw = 1;
	o.sw[0] = sin_of("10.255.0.1", ESA_DEFAULT_PORT);
	ps = new_ps(1, ids, nw, &o);
	for (int i = 0; i < NV; i++) {
		part.v[i] = 10 * i;
		one.v[i] = 1;
	}
	nout = 0;
	feed(ps, &part, sw());
	feed(ps, &one, sw());
	ok(nout == 1 && oh(0)->type == ESA_T_SUM && oh(0)->reason == ESA_R_PREEMPT &&
	   out[0].to.sin_addr.s_addr == sw().sin_addr.s_addr && out[0].to.sin_port == sw().sin_port &&
	   oh(0)->rank == htons(ESA_RANK_NONE) && be64toh(oh(0)->bitmap) == 7 &&
	   ov(0)[3] == 31 && ps_counter(ps, 0, PS_C_SUM_TX) == 1,
	   "a merged sum: one SUM to the switch (bitmap every rank, the sum), reason PREEMPT "
	   "(the most telling of PREEMPT and TOMB)");
	nout = 0;
	one.reason = ESA_R_RESEND;
	one.flags = ESA_F_RESEND;
	feed(ps, &one, sw());
	ok(nout == 1 && oh(0)->type == ESA_T_RESULT && oh(0)->reason == ESA_R_PREEMPT &&
	   out[0].to.sin_addr.s_addr == waddr(9, 2).sin_addr.s_addr,
	   "a resend of it: the kept sum to that worker, the reason echoed");
	nout = 0;
	feed_at(ps, &done, sw(), 1000000000ULL);
	ok(nout == 3 && oh(0)->type == ESA_T_FETCH && ntohl(oh(0)->seq) == 51,
	   "a first resend the switch says it completed (DONE): FETCH at once");
	nout = 0;
	back.reason = ESA_R_DELIVER;
	back.bitmap = 7;
	feed(ps, &back, sw());
	ok(nout == 3 && oh(0)->type == ESA_T_RESULT && oh(2)->type == ESA_T_RESULT,
	   "the switch could not deliver the SUM (DELIVER back): a RESULT to each worker");
	ps_free(ps);
}

static void test_memory(void)
{
	int ids[1] = { 6 }, nw[1] = { 4 };
	struct ps_opts o;
	struct ps *ps;
	bool bounded = true;

	ps_opts_default(&o);
	o.nvals = NV;
	o.cache = 64;
	o.pending = 32;
	o.nsw = 1;
	o.sw[0] = sw();
	ps = new_ps(1, ids, nw, &o);
	for (uint32_t c = 0; c < 1000; c++) {
		struct pkt s = { .type = ESA_T_COLLISION, .reason = ESA_R_COLLISION, .job = 6,
				 .rank = c % 4, .bitmap = 1ULL << (c % 4), .seq = c };
		struct pkt r = { .type = ESA_T_RESULT, .job = 6, .rank = ESA_RANK_NONE,
				 .bitmap = 15, .seq = 100000 + c };

		feed(ps, &s, sw());
		feed(ps, &r, sw());
		bounded &= ps_pending(ps, 0) <= 32 && ps_cached(ps, 0) <= 64;
	}
	ok(bounded && ps_counter(ps, 0, PS_C_DROP_SOURCE) == 0 && ps_counter(ps, 0, PS_C_PENDING_EVICTED) == 1000 - 32 &&
	   ps_counter(ps, 0, PS_C_CACHE_EVICTED) == 1000 - 64 &&
	   ps_lookup(ps, 0, 100999, NULL, NULL) && !ps_lookup(ps, 0, 100000, NULL, NULL),
	   "memory bounded: 32 pending and 64 results kept, oldest evicted and counted");
	ps_free(ps);
}

/* A rank's port cannot be learnt (the switch's packets carry its own): it
 * must be registered. */
static void test_ports(void)
{
	struct ps_opts o;
	struct ps_job_cfg j = { .id = 9, .nworkers = 2 };
	struct ps *ps;
	char err[160] = "";

	ps_opts_default(&o);
	o.nvals = NV;
	ps = ps_new(&o, tx, NULL);
	j.ps = sin_of("10.0.99.1", 9000);
	j.rank[0] = sin_of("10.0.9.1", 6000);
	j.rank[1] = sin_of("10.0.9.2", 0);
	ok(ps_add_job(ps, &j, err, sizeof(err)) == -EINVAL && !ps_njobs(ps) &&
	   strstr(err, "job 9: worker 1 has no port"),
	   "a job whose worker has no port: refused, naming the worker (%s)", err);
	ps_free(ps);
}

/*
 * A job esa-agent ends goes (ps_del_job()): its memory, its id (packets
 * of it are then of no job), the others' indexes kept right, its
 * counters still in the total; the same id added again starts empty.
 */
static void test_del(void)
{
	int ids[3] = { 4, 5, 6 }, nw[3] = { 2, 2, 2 };
	struct ps *ps = new_ps(3, ids, nw, NULL);
	struct pkt res = { .type = ESA_T_RESULT, .job = 5, .rank = ESA_RANK_NONE,
			   .bitmap = 3, .seq = 1 };
	struct ps_job_cfg j = *ps_job(ps, 1);
	char err[160];

	feed(ps, &res, sw());
	ok(ps_del_job(ps, 5) == 0 && ps_njobs(ps) == 2 && ps_find_job(ps, 5) < 0 &&
	   ps_find_job(ps, 6) == 1 && ps_job(ps, 1)->id == 6 &&
	   ps_counter(ps, -2, PS_C_DONE_SWITCH) == 1,
	   "job 5 deleted: gone, job 6 moved to its index, its counters still in the total");
	feed(ps, &res, sw());
	res.job = 6;
	feed(ps, &res, sw());
	ok(ps_counter(ps, -1, PS_C_DROP_JOB) == 1 && ps_counter(ps, 1, PS_C_DONE_SWITCH) == 1,
	   "then a packet of job 5 is of no job, one of job 6 is job 6's");
	ok(ps_del_job(ps, 5) == -ENOENT, "deleting it again: -ENOENT");
	ok(!ps_add_job(ps, &j, err, sizeof(err)) && !ps_lookup(ps, ps_find_job(ps, 5), 1, NULL, NULL),
	   "job 5 added again: nothing kept of before");
	ps_free(ps);
}

/* The switch's packets only from its address and port; nothing else counts. */
static void test_trust(void)
{
	int ids[1] = { 2 }, nw[1] = { 2 };
	struct ps *ps = new_ps(1, ids, nw, NULL);
	struct sockaddr_in rogue[3] = { waddr(2, 0), sw(), sin_of("10.0.7.7", 7680) };
	struct pkt s0 = { .type = ESA_T_COLLISION, .reason = ESA_R_COLLISION, .job = 2,
			  .rank = 0, .bitmap = 1, .seq = 3 };
	struct pkt s1 = s0, part = { .type = ESA_T_PARTIAL, .reason = ESA_R_DELIVER, .job = 2,
				     .rank = ESA_RANK_NONE, .bitmap = 3, .seq = 4 };
	struct pkt res = { .type = ESA_T_RESULT, .job = 2, .rank = ESA_RANK_NONE,
			   .bitmap = 3, .seq = 5 };
	bool none = true;

	rogue[1].sin_port = htons(7681);	/* the switch's address, another port */
	s1.rank = 1;
	s1.bitmap = 2;
	for (int i = 0; i < NV; i++) {
		s0.v[i] = 1000;
		s1.v[i] = 7;
		part.v[i] = res.v[i] = 666;
	}
	nout = 0;
	for (int k = 0; k < 3; k++) {
		feed(ps, &s0, rogue[k]);	/* rank 0's chunk, forged */
		feed(ps, &part, rogue[k]);	/* a whole sum, forged */
		feed(ps, &res, rogue[k]);	/* a result copy, forged */
		none &= !nout;
	}
	ok(none && ps_counter(ps, 0, PS_C_DROP_SOURCE) == 9 && !ps_pending(ps, 0) &&
	   !ps_cached(ps, 0),
	   "COLLISION, PARTIAL and RESULT from a worker's address, from the switch's address "
	   "with another port, from elsewhere: all 9 dropped (drop_source), nothing kept");
	for (int i = 0; i < NV; i++)
		s0.v[i] = 1;
	feed(ps, &s0, sw());
	feed(ps, &s1, sw());
	ok(nout == 2 && ov(0)[0] == 8 && ov(1)[NV - 1] == 8,
	   "then the switch's own singles: their exact sum, nothing forged in it");
	ps_free(ps);
}

static void test_opts(void)
{
	struct ps_opts o;
	char err[200] = "";

	ps_opts_default(&o);
	ok(ps_check_opts(&o, err, sizeof(err)) == -EINVAL && strstr(err, "--switch"),
	   "options: no switch address refused (%s)", err);
	o.nsw = 1;
	o.sw[0] = sw();
	ok(!ps_check_opts(&o, err, sizeof(err)),
	   "options: the defaults (pending 1024) hold two of libesa's largest windows (512)");
	o.pending = 256;
	ok(ps_check_opts(&o, err, sizeof(err)) == -EINVAL &&
	   strstr(err, "pending 256 holds the unfinished chunks of windows up to 128 only, the "
		  "workers' can be 512"), "options: pending 256 for windows of 512 refused (%s)",
	   err);
	o.window = 128;
	ok(!ps_check_opts(&o, err, sizeof(err)), "options: pending 256 for windows of 128");
	o.window = 129;
	ok(ps_check_opts(&o, err, sizeof(err)) == -EINVAL && strstr(err, "can be 129"),
	   "options: pending 256 for windows of 129 refused (%s)", err);
	o.window = ESA_TOMB_RING + 1;
	o.pending = 4096;
	ok(ps_check_opts(&o, err, sizeof(err)) == -EINVAL && strstr(err, "tombstone ring"),
	   "options: a window beyond the switch's tombstone ring refused (%s)", err);
}

/* Malformed, mutated and random packets: all counted, none kills the PS. */
static void test_fuzz(void)
{
	int ids[2] = { 1, 2 }, nw[2] = { 3, 4 };
	struct ps *ps = new_ps(2, ids, nw, NULL);
	uint8_t buf[ESA_HDR_LEN + 4 * ESA_MAX_VALUES + 64];
	struct pkt base = { .type = ESA_T_COLLISION, .reason = ESA_R_COLLISION, .job = 1,
			    .rank = 1, .bitmap = 2, .seq = 3 };
	uint64_t drops = 0, rx, good_done;
	struct {
		const char *what;
		int counter;
		void (*mut)(uint8_t *b, size_t *len);
	} cases[] = {
		{ "short", PS_C_DROP_SHORT, NULL },
		{ "version", PS_C_DROP_VERSION, NULL },
		{ "job", PS_C_DROP_JOB, NULL },
		{ "type", PS_C_DROP_TYPE, NULL },
		{ "count", PS_C_DROP_COUNT, NULL },
		{ "header", PS_C_DROP_HEADER, NULL },
	};
	bool each = true;

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct esa_hdr *h = (struct esa_hdr *)buf;
		size_t len = build(&base, buf);
		uint64_t before = ps_counter(ps, -2, cases[k].counter);

		switch (k) {
		case 0: len = 10; break;
		case 1: h->version = ESA_VERSION + 1; break;
		case 2: h->job = htons(77); break;
		case 3: h->type = ESA_T_DATA; break;
		case 4: h->count = htons(NV + 8); break;
		case 5: h->bitmap = htobe64(6); break;
		}
		ps_rx(ps, buf, len, &(struct sockaddr_in){ .sin_family = AF_INET,
			.sin_addr = sw().sin_addr, .sin_port = sw().sin_port }, 0);
		each &= ps_counter(ps, -2, cases[k].counter) == before + 1;
	}
	ok(each, "each malformation counted under its own reason (short, version, job, "
	   "type, count, header)");
	ps_rx(ps, buf, 0, &(struct sockaddr_in){ .sin_family = AF_INET,
	      .sin_addr = waddr(1, 1).sin_addr }, 0);
	ok(ps_counter(ps, -1, PS_C_RX_PROBE) == 1,
	   "an empty datagram (a worker's probe): counted as a probe, not a drop");

	nout = 0;
	for (int i = 0; i < 200000; i++) {
		size_t len = build(&base, buf);
		struct sockaddr_in src = rnd() % 2 ? sw() : waddr(1 + rnd() % 2, rnd() % 4);

		switch (rnd() % 4) {
		case 0:	/* random bytes */
			len = rnd() % sizeof(buf);
			for (size_t k = 0; k < len; k++)
				buf[k] = rnd();
			break;
		case 1:	/* flip a few header bits */
			for (int k = 0; k < 1 + (int)(rnd() % 3); k++)
				buf[rnd() % ESA_HDR_LEN] ^= 1 << (rnd() % 8);
			break;
		case 2:	/* a random header field value */
			buf[rnd() % ESA_HDR_LEN] = rnd();
			buf[5] = 1 + rnd() % 2;	/* a known job, mostly */
			break;
		default:	/* truncated or padded */
			len = rnd() % (len + 32);
			break;
		}
		ps_rx(ps, buf, len, &src, i * 1000ULL);
	}
	for (int c = PS_C_DROP_SHORT; c <= PS_C_DROP_UNASKED; c++)
		drops += ps_counter(ps, -2, c);
	rx = ps_counter(ps, -2, PS_C_RX);
	ok(rx == 200000 + 7 && drops > 100000,
	   "200000 random and mutated packets: every one received and %llu dropped with "
	   "a reason", (unsigned long long)drops);
	/* still serving: a fresh chunk of job 2 completes exactly */
	good_done = ps_counter(ps, 1, PS_C_DONE_MERGED);
	nout = 0;
	for (int r = 0; r < 4; r++) {
		struct pkt p = { .type = ESA_T_COLLISION, .reason = ESA_R_COLLISION, .job = 2,
				 .rank = r, .bitmap = 1ULL << r, .seq = 0x7fff0000 };

		for (int i = 0; i < NV; i++)
			p.v[i] = r + i;
		feed(ps, &p, sw());
	}
	ok(ps_counter(ps, 1, PS_C_DONE_MERGED) == good_done + 1 && nout == 4 &&
	   ov(0)[1] == 0 + 1 + 2 + 3 + 4, "and then still serves: a new chunk completes exactly");
	ps_print_stats(ps, stderr, false);
	ps_free(ps);
}

/*
 * Two levels: a job of 8 ranks under leaves {0-3} (10.255.1.1) and {4-7}
 * (10.255.2.1) and a spine (10.255.0.1).  The PS takes pieces from all
 * three: a leaf's partials and single ranks, the spine's partials of whole
 * leaves (also a leaf's sum it did not add: PARTIAL COLLISION/TOMB/NOSLOT).
 */
static void test_two_levels(void)
{
	struct sockaddr_in l0 = sin_of("10.255.1.1", ESA_DEFAULT_PORT);
	struct sockaddr_in l1 = sin_of("10.255.2.1", ESA_DEFAULT_PORT);
	int ids[1] = { 4 }, nw[1] = { 8 };
	struct pkt up = { .type = ESA_T_PARTIAL, .reason = ESA_R_COLLISION, .job = 4,
			  .rank = ESA_RANK_NONE, .bitmap = 0xf0, .seq = 1 };
	struct pkt lp = up, s = { .type = ESA_T_COLLISION, .reason = ESA_R_TOMB,
				  .job = 4, .seq = 1 };
	struct ps_opts o;
	struct ps *ps;

	ps_opts_default(&o);
	o.nvals = NV;
	o.nsw = 3;
	o.sw[0] = sw();
	o.sw[1] = l0;
	o.sw[2] = l1;
	ps = new_ps(1, ids, nw, &o);
	for (int i = 0; i < NV; i++)
		up.v[i] = 4000 + i;		/* ranks 4-7 hold 1000 each */
	lp.reason = ESA_R_PREEMPT;
	lp.bitmap = 0x3;
	for (int i = 0; i < NV; i++)
		lp.v[i] = 2000;			/* ranks 0, 1: 1000 each */
	nout = 0;
	feed(ps, &up, sw());			/* the spine: leaf 1's sum */
	feed(ps, &lp, l0);			/* leaf 0: a preempted partial */
	for (int r = 2; r < 4; r++) {
		s.rank = r;
		s.bitmap = 1ULL << r;
		for (int i = 0; i < NV; i++)
			s.v[i] = 1000;
		feed(ps, &s, l0);		/* and its ranks after it */
	}
	ok(nout == 8 && ov(0)[0] == 8000 && ov(7)[NV - 1] == 8000 + NV - 1 &&
	   ps_counter(ps, 0, PS_C_DROP_HEADER) == 0,
	   "two levels: a spine's PARTIAL COLLISION of a leaf, the other leaf's "
	   "partial and singles: the exact sum to the 8 ranks");

	/* a leaf's rank resent after its leaf's sum went up, then that sum */
	up.seq = lp.seq = s.seq = 2;
	s.reason = ESA_R_RESEND;
	s.flags = ESA_F_RESEND;
	s.rank = 5;
	s.bitmap = 1ULL << 5;
	nout = 0;
	feed(ps, &s, l1);
	up.reason = ESA_R_AGED;
	feed(ps, &up, sw());
	lp.bitmap = 0xf;
	lp.reason = ESA_R_FLUSH;
	for (int i = 0; i < NV; i++)
		lp.v[i] = 4000;
	feed(ps, &lp, l0);
	ok(nout == 8 && ov(0)[0] == 8000 && ov(3)[NV - 1] == 8000 + NV - 1,
	   "two levels: rank 5 resent, then the spine's aged {4-7} and leaf 0's "
	   "{0-3}: rank 5 counted once");

	nout = 0;
	up.seq = 3;
	feed(ps, &up, sin_of("10.255.3.1", ESA_DEFAULT_PORT));
	ok(!nout && ps_counter(ps, 0, PS_C_DROP_SOURCE) == 1 && !ps_pending(ps, 0),
	   "two levels: a partial from a switch not given: dropped");
	ps_free(ps);
}

int main(void)
{
	tap_start();
	test_parse();
	test_overlap_exact();
	test_two_levels();
	test_merge_random();
	test_whole_sums();
	test_overflow();
	test_fetch();
	test_sums();
	test_memory();
	test_ports();
	test_del();
	test_trust();
	test_opts();
	test_fuzz();
	/*
	 * The largest single-buffer vector (ESA_FRAME_VALUES), then the
	 * largest, a jumbo frame's (ESA_MAX_VALUES)
	 */
	for (int pass = 0; pass < 2; pass++) {
		static char prefix[32];

		NV = pass ? ESA_MAX_VALUES : ESA_FRAME_VALUES;
		snprintf(prefix, sizeof(prefix), "values %d: ", NV);
		tap_prefix = prefix;
		test_overlap_exact();
		test_merge_random();
		test_whole_sums();
		test_overflow();
		test_fetch();
		test_fuzz();
	}
	return tap_end();
}
