/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The shape of a golden-packet row, as katran's test fixtures are: what
 * goes in (a packet, or a step of the control plane), what the row checks,
 * the verdict, and what must come out (bytes, header fields, counters,
 * slot and tombstone state).  Each table (golden/<rule>.h) holds the rows
 * of one rule of the protocol; esa_golden.c runs them all, each row on a
 * switch of its own in a network namespace of its own.
 */
#ifndef ESA_GOLDEN_H
#define ESA_GOLDEN_H

#define NV	32	/* values per packet in these tests */
#define JA	1	/* job A: 3 workers, PS A */
#define JB	2	/* job B: 3 workers, PS B */
#define W	3
/* Two levels.  A spine needs ageing (esactl refuses stale 0 with leaves). */
#define SPINE_STALE	60000
#define JL	10	/* at a leaf: ranks 0 and 1 of 3 here, its spine at PS A's address */
#define JS	11	/* at a spine: leaves at workers 0 (ranks 0-1) and 2 (ranks 2-3) */

/* What a row's switch and hooks work on. */
struct g_env {
	struct t_net n;
	struct esa e;
	char err[ESA_ERR_LEN];
	__s32 v[W][NV];		/* v[r]: what rank r sends */
	__s32 sum[NV];		/* sum over all ranks */
	__s32 lx[NV], ly[NV];	/* what a case's two leaves send (V_LX, V_LY) */
	struct t_run out;	/* the frame the last send left: egress's input */
	int alias;		/* a port of index sw0 + 4096 (P_ALIAS) */
	struct esa_job j;	/* the job the last G_ADD built */
	struct esa_place pl[ESA_PLACES];	/* a hook's places */
	__u32 reg, gen;		/* what a hook keeps for a later one */
	__u64 stamp;
	bool no_udp_csum;	/* loaded with udp-csum off */
};

typedef void g_hook(struct __test_metadata *_metadata, struct g_env *self);

/*
 * A chunk: seq itself, or the nth seq of the packet's (or expectation's)
 * job whose slot is the slot of chunk (slot_job, slot_seq): two keys
 * meeting in one slot.
 */
struct g_seq {
	__u32	seq;
	__u16	slot_job;
	__u32	slot_seq;
	__u8	nth;
};

#define SEQ(s)			{ .seq = (s) }
#define SLOT_OF(j, s)		{ .slot_job = (j), .slot_seq = (s) }
#define SLOT_OF_NTH(j, s, n)	{ .slot_job = (j), .slot_seq = (s), .nth = (n) }

/* Ports of the test topology: the workers', the PSes', a far alias. */
enum { P_SW0, P_SW1, P_ALIAS };

/* Values a packet carries: its rank's, the ranks' sum, a leaf's. */
enum { V_RANK, V_SUM, V_LX, V_LY, V_LXLY, V_RANK0 };

/*
 * Edits of a packet before it is built (the header's fields and the
 * addresses), and of the frame after (cut short, IP options, ...).
 */
enum {
	E_NONE, E_TYPE, E_RANK, E_BITMAP, E_REASON, E_FLAGS, E_VERSION,
	E_COUNT, E_RESV, E_JOB, E_SPORT, E_SPORT_INC, E_SADDR_WORKER,
	E_SADDR_PS_A, E_SADDR_PS_B, E_SMAC_WORKER, E_SMAC_FLIP, E_SMAC_PS_A,
	E_DMAC_SW1,
	E_LEAF,		/* a leaf's DATA to its spine: v = its ranks */
	E_SPINE,	/* the spine's RESULT to the leaf, as on sw1 */
	E_ACK,		/* an ack of the whole sum (policy atp) */
	E_SUM,		/* a sum the PS finished */
	E_FROM_PS_A,	/* PS A's address, port and MAC, to sw1 */
	/* the frame */
	E_LEN,		/* cut to v bytes */
	E_CUT,		/* v bytes off the end */
	E_ULEN,		/* UDP length less v */
	E_FRAG,		/* a first fragment */
	E_IPOPT,	/* 4 bytes of IP options */
	E_ETHTYPE,	/* another ethertype: v */
	E_PROTO,	/* another IP protocol: v */
	E_DPORT_FLIP,	/* another UDP port */
	E_TRANSIT,	/* to PS A's address (v: a first fragment) */
};

struct g_edit {
	__u8	f;
	__s64	v;
};

#define ED(f_, v_)	{ .f = E_##f_, .v = (v_) }

/* What a send's frame must leave the switch as, byte for byte. */
enum { G_ANY, G_RESULT, G_TO_PS, G_SAME };

struct g_out {
	__u8	kind;
	__u8	flags;		/* the header's */
	/* G_TO_PS: the PS's address and MAC, then the header's fields */
	const char *ps;
	const __u8 *ps_mac;
	__u8	type, reason;
	__u16	job, rank;
	struct g_seq seq;	/* of job */
	__u8	prio;
	__u64	bitmap;
	__u8	vals;		/* V_RANK: the sum of bitmap's ranks' */
	__u16	dport;		/* the UDP port, if not the PS's */
};

/* The sum of the step's chunk, its rank completing it. */
#define RESULT(fl)	{ .kind = G_RESULT, .flags = (fl) }
/* Rewritten from the switch toward the PS at ip, mac; of p (A or B). */
#define TO(ip, mac, ty, why, fl, j, r, q, pr, bm, ...)			\
	{ .kind = G_TO_PS, .ps = (ip), .ps_mac = (mac),			\
	  .type = ESA_T_##ty, .reason = (why), .flags = (fl), .job = (j), \
	  .rank = (r), .seq = q, .prio = (pr), .bitmap = (bm), __VA_ARGS__ }
#define TO_PS(p, ty, why, fl, j, r, q, pr, bm, ...)			\
	{ .kind = G_TO_PS, .ps = T_PS_##p, .ps_mac = PS_MAC_##p,	\
	  .type = ESA_T_##ty, .reason = (why), .flags = (fl), .job = (j), \
	  .rank = (r), .seq = q, .prio = (pr), .bitmap = (bm), __VA_ARGS__ }
#define PS_MAC_A	t_ps_a_mac
#define PS_MAC_B	t_ps_b_mac
/* The frame as it came in, byte for byte. */
#define SAME		{ .kind = G_SAME }

/* Header and address fields of the frame out (sends) or a copy (egress). */
struct g_hdr {
	unsigned int	m;		/* which of them: H_* */
	__u8	type, reason, flags, resv;
	__u16	rank, dport;
	__u32	seq;
	__u64	bitmap;
	const char *daddr, *saddr;	/* "10.0.1.2", or "w1": worker 1 */
	const __u8 *dmac;
	__u8	vals;			/* V_* */
};

enum {
	H_TYPE = 1 << 0, H_REASON = 1 << 1, H_FLAGS = 1 << 2, H_RESV = 1 << 3,
	H_RANK = 1 << 4, H_DPORT = 1 << 5, H_SEQ = 1 << 6, H_BITMAP = 1 << 7,
	H_DADDR = 1 << 8, H_SADDR = 1 << 9, H_DMAC = 1 << 10, H_VALS = 1 << 11,
	H_CSUM = 1 << 12,	/* the IP header's checksum holds */
	H_SMAC1 = 1 << 13,	/* from sw1's MAC */
};

#define HDR(mask, ...)	{ .m = (mask), __VA_ARGS__ }

struct g_ctr {
	bool	on;
	__u16	job;		/* G_GLOBAL: the switch's own row */
	int	ctr;		/* ESA_C_* */
	__u64	val;
};

#define G_GLOBAL	0xffff
#define C(j, name, v)	{ .on = true, .job = (j), .ctr = ESA_C_##name, .val = (v) }

/* The slot of chunk (job, at), and whichever of its fields are given. */
struct g_slot {
	bool	on;
	__u16	of_job;
	struct g_seq of;
	bool	c_state, c_job, c_seq, c_prio, c_bitmap, c_nranks, c_vals;
	__u8	state, prio, nranks;
	__u16	job;
	struct g_seq seq;	/* of job */
	__u64	bitmap;
	__u64	vals;		/* its sum: of these ranks' values */
};

#define SLOT(j, q)	.on = true, .of_job = (j), .of = q
#define STATE(x)	.c_state = true, .state = ESA_SLOT_##x
#define OWNER(j, q)	.c_job = true, .job = (j), .c_seq = true, .seq = q
#define OWNER_JOB(j)	.c_job = true, .job = (j)
#define PRIO(p)		.c_prio = true, .prio = (p)
#define BITMAP(b)	.c_bitmap = true, .bitmap = (b)
#define NRANKS(n)	.c_nranks = true, .nranks = (n)
#define VALS(m)		.c_vals = true, .vals = (m)

struct g_tomb {
	bool	on;
	__u16	job;
	struct g_seq seq;
	int	kind;
};

#define TOMB(j, q, k)	{ .on = true, .job = (j), .seq = q, .kind = ESA_TOMB_##k }

/* A rank's binding: its word's flags, and the port if given. */
struct g_bind {
	bool	on;
	__u16	job, rank;
	__u32	word;
	__u8	port;
	bool	c_port;
};

#define BIND(j, r, w)	{ .on = true, .job = (j), .rank = (r), .word = (w) }
#define BIND_AT(j, r, w, p) \
	{ .on = true, .job = (j), .rank = (r), .word = (w), .port = (p), .c_port = true }

/* A job registration: which job, edited how, through which path. */
enum { J_PLAIN, J_LEAF, J_SPINE };
enum { HOW_ESACTL, HOW_RAW, HOW_REGISTRY };
enum {
	JE_NONE, JE_NWORKERS, JE_DUP_RANK, JE_PS_PORT, JE_BASE, JE_SIZE,
	JE_LEASE, JE_NO_RANK, JE_UP_NONEIGH, JE_RANKS_MOVED,
};

#define JE(f_, v_)	{ .f = JE_##f_, .v = (v_) }

struct g_add {
	__u8	kind, how;
	__u16	workers;	/* J_PLAIN: 0 is W */
	const char *ps;		/* J_PLAIN: 0 is PS A */
	struct g_edit edit[3];	/* JE_* */
	int	rc;		/* G_FAILS: any error */
	const char *err;	/* in the reason, if given */
};

#define G_FAILS	1

enum { G_END, G_SEND, G_EGRESS, G_DEL, G_AGE, G_ADD, G_CALL, G_SH, G_CHECK };

/*
 * One step: rank `rank` of `job` sends chunk `at` on `port` (G_SEND); or
 * egress runs on the frame the last send left, on `port` (G_EGRESS); or
 * the job is deleted (G_DEL), registered (G_ADD), the slot of chunk `at`
 * aged past the case's stale_ms (G_AGE: its stamp moved back, no
 * waiting), a hook runs (G_CALL), or a shell command (G_SH: ip route,
 * ip link); or nothing (G_CHECK).  Then what the switch must have done.
 */
struct g_step {
	__u8	op;
	__u16	job, rank;
	struct g_seq at;
	__u8	prio, flags, port, vals;
	struct g_edit edit[4];
	bool	clear;		/* G_DEL: the job's delivery state too */
	struct g_add add;
	g_hook	*call;
	const char *sh;
	/* what it must have done */
	int	verdict;
	struct g_out out;
	struct g_hdr hdr;
	int	member;		/* G_EGRESS: k + 1: the copy for rank k, checked whole */
	struct g_ctr ctr[6];
	bool	only;		/* no counter but rx and ctr[0] moved, by one */
	struct g_slot slot;
	struct g_tomb tomb[2];
	struct g_bind bind;
};

#define PKT(j, r, q, pr, fl)	.op = G_SEND, .job = (j), .rank = (r), .at = q, \
				.prio = (pr), .flags = (fl)
#define EGRESS(j, p)		.op = G_EGRESS, .job = (j), .port = P_##p
#define DEL(j)			.op = G_DEL, .job = (j)
#define AGE(j, q)		.op = G_AGE, .job = (j), .at = q
#define ADD(j, ...)		.op = G_ADD, .job = (j), .add = { __VA_ARGS__ }
#define CALL(fn)		.op = G_CALL, .call = (fn)
#define SH(cmd)			.op = G_SH, .sh = (cmd)
#define CHECK			.op = G_CHECK

/* Where chunk seq of job lands in the pool. */
struct g_place {
	bool	on;
	__u16	job;
	__u32	seq, slot;
};

#define PLACE(j, s, at)	{ .on = true, .job = (j), .seq = (s), .slot = (at) }

#define G_STEPS	20

struct g_case {
	const char *name;
	const char *what;	/* the rule the row holds the switch to */
	__u8	policy;
	__u32	stale_ms;
	bool	no_copy;	/* without result copies for the PS */
	bool	no_udp_csum;	/* results without a UDP checksum (udp-csum off) */
	/* what the ranks send instead of the fixture's values */
	void	(*values)(struct g_env *self);
	/* what a result must carry, written out (else the ranks' sum) */
	void	(*want)(__s32 *vals);
	struct g_place place[3];
	struct g_step steps[G_STEPS];
};

/* A table: the rows of one rule. */
struct g_table {
	const char *rule;
	const struct g_case *rows;
	size_t n;
};

#define G_TABLE(rule_, rows_) \
	{ .rule = rule_, .rows = rows_, .n = sizeof(rows_) / sizeof(rows_[0]) }

#endif
