/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * ESA: in-network aggregation with preemptive switch-memory scheduling.
 *
 * This header is the one definition of everything that crosses a boundary:
 *   - the wire protocol (version 2) spoken by workers, switches and the PS;
 *   - the switch's counters;
 *   - the generic netlink API of esa.ko and its kfuncs (the second half).
 * The switch's BPF map layouts, shared by the XDP program and its loader
 * only, are private: include/esa_maps.h.
 * It is included by the BPF program, the kernel module and user space alike,
 * so it uses only <linux/types.h> types.
 */
#ifndef _UAPI_LINUX_ESA_H
#define _UAPI_LINUX_ESA_H

#include <linux/types.h>

/* ------------------------------------------------------------------------ */
/* Wire protocol, version 2                                                  */
/* ------------------------------------------------------------------------ */

/*
 * An ESA packet is IPv4/UDP to the switch's ESA port, UDP payload:
 *
 *    0                   1                   2                   3
 *    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *   |    version    |     type      |     flags     |   priority    |
 *   +---------------+---------------+---------------+---------------+
 *   |            job id             |             rank              |
 *   +-------------------------------+-------------------------------+
 *   |                     rank bitmap (64 bits)                     |
 *   +                                                               +
 *   |                                                               |
 *   +---------------------------------------------------------------+
 *   |                        sequence number                        |
 *   +-------------------------------+---------------+---------------+
 *   |          value count          |    reason     |   reserved    |
 *   +-------------------------------+---------------+---------------+
 *   |        value[0] .. value[count - 1]  (int32 each)             |
 *
 * Byte order: every header field is in network byte order (big endian);
 * the bitmap is one 64-bit big-endian word whose bit r (value 1 << r) is
 * rank r.  The values are signed 32-bit two's complement integers in
 * LITTLE-endian order: workers, the switch and the PS all add them natively
 * (x86-64 and arm64 hosts, accelerators), so no end ever converts them.
 *
 * version   ESA_VERSION.  Anything else is dropped and counted.
 * type      enum esa_type.
 * flags     ESA_F_* bits.  A worker's DATA may carry only ESA_F_RESEND; a
 *           leaf's (ESA_F_LEAF) also ESA_F_OVERFLOW.
 * priority  0..255, larger wins.  Must not exceed the job's registered
 *           maximum.  Every worker of a job stamps the same priority for the
 *           same chunk.
 * job id    the job's registered id (0 .. max_jobs - 1).
 * rank      sender's rank (0 .. workers - 1); ESA_RANK_NONE when a switch
 *           or the PS built the packet (results, partials); for a leaf's
 *           DATA, the lowest rank of the leaf's (its member at the spine).
 * bitmap    ranks whose values the packet contains.  A worker's DATA:
 *           exactly 1 << rank; a leaf's: the ranks under the leaf.
 * sequence  chunk number within the job's stream (wraps at 2^32).
 * count     number of int32 values; must equal the deployment's vector
 *           length (chosen when the program is loaded, default 256), so an
 *           evicted partial always fits in the packet that evicts it.
 * reason    why a packet travels to the PS (enum esa_reason), else 0.  In a
 *           RESULT from the PS: why the chunk reached the PS (the most
 *           telling reason among its pieces: contention, PREEMPT,
 *           COLLISION or NOSLOT, before AGED and FLUSH, before RESEND and
 *           DONE, before TOMB and DELIVER), so that a worker can tell
 *           contention for switch memory from a loss; 0 from the switch.
 * reserved  zero.
 *
 * UDP checksum: the switch sends 0 (legal for IPv4) on packets it rewrites.
 */
#define ESA_VERSION		3	/* 2: two levels (ESA_F_LEAF); 3: resends
					 * wait for a young partial, ESA_R_DONE,
					 * the PS's sums through the switch
					 * (ESA_T_SUM), results say why (reason)
					 */
#define ESA_DEFAULT_PORT	7680	/* UDP port the switch listens on */
#define ESA_MAX_WORKERS		64	/* ranks per job (bitmap width) */
#define ESA_MAX_VALUES		2232	/* largest vector length per packet: an
					 * 8980-byte IP packet, MTU 9000
					 */
#define ESA_FRAME_VALUES	856	/* largest in one single-buffer XDP frame
					 * (a 3476-byte IP packet, MTU 3500);
					 * more take multi-buffer XDP (jumbo)
					 */
#define ESA_DEFAULT_VALUES	256
#define ESA_VALUES_ALIGN	8	/* vector length must be a multiple */
#define ESA_RANK_NONE		0xffff
/*
 * Chunks of one job the switch remembers (tombstones): a worker must not
 * keep more than this many chunks in flight, or late packets of a chunk that
 * left the switch could start it again.
 */
#define ESA_TOMB_RING		512

enum esa_type {
	ESA_T_DATA = 1,		/* worker -> switch: one rank's chunk; leaf ->
				 * spine (ESA_F_LEAF): its ranks' sum
				 */
	ESA_T_RESULT,		/* switch/PS -> workers (and PS): the sum;
				 * spine -> leaves, which send it on
				 */
	ESA_T_PARTIAL,		/* switch -> PS: a partial sum with its bitmap
				 * (reasons PREEMPT, FLUSH, AGED, DELIVER; and
				 * COLLISION, TOMB, RESEND, NOSLOT for a
				 * leaf's sum a spine did not aggregate)
				 */
	ESA_T_COLLISION,	/* switch -> PS: a worker chunk not aggregated */
	ESA_T_ACK,		/* PS -> switch (policy atp): sum is final */
	ESA_T_FETCH,		/* PS -> workers: your result of this chunk,
				 * please (the PS's copy was lost): answered
				 * with a RESULT to the PS
				 */
	ESA_T_SUM,		/* PS -> switch: a sum the PS finished, which
				 * the switch sends to the job's workers as
				 * their RESULT (one packet on the PS's link
				 * instead of one per worker); its reason is
				 * why the chunk reached the PS
				 */
	__ESA_T_MAX,
};

#define ESA_F_RESEND	0x01	/* sent again after a worker timeout */
#define ESA_F_OVERFLOW	0x02	/* some element of the sum left int32 */
#define ESA_F_LEAF	0x04	/* DATA: a leaf's sum of its ranks, to the
				 * spine (docs/design.md, "Two levels")
				 */
#define ESA_F_MASK	0x07

enum esa_reason {
	ESA_R_NONE = 0,
	ESA_R_PREEMPT,		/* PARTIAL: evicted by a higher priority */
	ESA_R_COLLISION,	/* COLLISION: slot held by a key of >= prio */
	ESA_R_TOMB,		/* COLLISION: chunk already left the switch */
	ESA_R_RESEND,		/* COLLISION: resend of a chunk not in a slot */
	ESA_R_FLUSH,		/* PARTIAL: resend flushed the slot */
	ESA_R_AGED,		/* PARTIAL: idle longer than the ageing limit */
	ESA_R_DELIVER,		/* PARTIAL: complete, but the switch could
				 * not also hand the PS its copy: PS,
				 * deliver the sum to the workers
				 */
	ESA_R_NOSLOT,		/* COLLISION: job has no switch memory */
	ESA_R_HOLD,		/* RESULT to PS (atp): acknowledge me */
	ESA_R_DONE,		/* COLLISION: resend of a chunk the switch
				 * completed (its result was lost, or the
				 * resend crossed it): PS, answer it, or
				 * FETCH it at once if you have no copy
				 */
	__ESA_R_MAX,
};

struct esa_hdr {
	__u8	version;
	__u8	type;
	__u8	flags;
	__u8	prio;
	__be16	job;
	__be16	rank;
	__be64	bitmap;
	__be32	seq;
	__be16	count;
	__u8	reason;
	__u8	resv;
};

#define ESA_HDR_LEN	24

/*
 * The IP packet of an ESA packet of nvals values (IPv4 and UDP headers
 * without options): what the MTU of every port and route it takes must
 * hold.  With 256 values 1076 bytes, with ESA_FRAME_VALUES 3476, with
 * ESA_MAX_VALUES 8980.
 */
#define ESA_IP_LEN(nvals)	(20 + 8 + ESA_HDR_LEN + 4 * (nvals))

/* ------------------------------------------------------------------------ */
/* Slot allocation policies (chosen when the program is loaded)              */
/* ------------------------------------------------------------------------ */

enum esa_policy {
	ESA_POLICY_ESA = 0,	/* shared pool, preemption, free on completion */
	ESA_POLICY_ATP,		/* shared pool, no preemption, free on PS ack */
	ESA_POLICY_SWITCHML,	/* static per-job regions, no sharing */
	__ESA_POLICY_MAX,
};

/* An IPv4 address and UDP port, as registrations carry them. */
struct esa_addr {
	__be32	ip;
	__be16	port;		/* 0 in a registration: any source port */
	__u16	resv;
};

/* ------------------------------------------------------------------------ */
/* Counters                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * What the switch counts, per job (the BPF map layouts and the rest of the
 * switch's private state are in include/esa_maps.h).  Also the drop reasons
 * esa.ko's admission kfunc returns.
 */
/* esa_counters: per-CPU array, row = job id, row max_jobs = no job known. */
enum esa_counter {
	ESA_C_RX,		/* ESA packets parsed */
	ESA_C_CLAIMED,		/* chunks started in a free slot */
	ESA_C_AGGREGATED,	/* packets added to a partial */
	ESA_C_COMPLETED,	/* chunks completed in the switch */
	ESA_C_DUPLICATE,	/* packets whose rank was already counted */
	ESA_C_PREEMPT_CAUSED,	/* partials of others this job evicted */
	ESA_C_PREEMPT_SUFFERED,	/* partials of this job evicted by others */
	ESA_C_COLLISION,	/* packets sent to the PS: slot taken */
	ESA_C_EVICTED,		/* partials of this job sent to the PS */
	ESA_C_TOMB_FWD,		/* packets sent to the PS by a tombstone */
	ESA_C_RESEND_FLUSH,	/* resends that flushed a partial */
	ESA_C_RESEND_FWD,	/* resends sent on to the PS */
	ESA_C_AGED,		/* partials of this job aged out */
	ESA_C_RECLAIMED,	/* slots of this job (dead) taken by others */
	ESA_C_EXPIRED,		/* lease expiries (new generation) */
	ESA_C_OVERFLOW,		/* sums that left int32 */
	ESA_C_NOSLOT,		/* packets sent to the PS: no switch memory */
	ESA_C_PS_TX,		/* packets sent to the PS, any reason */
	ESA_C_PS_STACK,		/* ... of which through the kernel stack */
	ESA_C_RESULT_TX,	/* result copies sent to workers */
	ESA_C_PS_COPY_TX,	/* result copies sent to the PS */
	ESA_C_HELD,		/* policy atp: sums sent to the PS to hold */
	ESA_C_ACK,		/* policy atp: acks that freed a held sum */
	ESA_C_ACK_STALE,	/* policy atp: acks of the PS matching no held
				 * sum (a repeat): dropped
				 */
	ESA_C_LEARN,		/* rank locations learnt (once a registration) */
	ESA_C_UP_TX,		/* leaf: sums of its ranks sent to the spine */
	ESA_C_DOWN_RX,		/* leaf: the spine's results, sent on to the
				 * leaf's ranks
				 */
	ESA_C_FANOUT_MISS,	/* sums sent whole to the PS to deliver: no
				 * fan-out table for the job's registration,
				 * or no route to its PS's port
				 */
	ESA_C_COPY_DROP,	/* result copies egress could not address */
	ESA_C_DROP_TRUNC,	/* drops: truncated packet */
	ESA_C_DROP_VERSION,	/* drops: wrong version */
	ESA_C_DROP_TYPE,	/* drops: type not accepted from this sender */
	ESA_C_DROP_COUNT,	/* drops: count or length not the deployment's */
	ESA_C_DROP_HEADER,	/* drops: bad flags, bitmap or reserved field */
	ESA_C_DROP_JOB,		/* drops: unknown or deleted job */
	ESA_C_DROP_RANK,	/* drops: rank outside the job */
	ESA_C_DROP_PRIO,	/* drops: priority above the job's maximum */
	ESA_C_DROP_SPOOF,	/* drops: source is not the rank's address */
	ESA_C_DROP_PLACE,	/* drops: a rank's packet from another port or
				 * MAC than the rank is bound to
				 */
	ESA_C_DROP_ACK,		/* drops: ACK not from the job's PS (its
				 * address, port, or the port it is behind)
				 */
	ESA_C_DROP_IP,		/* drops: IP options or fragment */
	ESA_C_DROP_NOROUTE,	/* drops: no route to the PS */
	ESA_C_DROP_INTERNAL,	/* drops: the switch failed (map lookup,
				 * metadata): a bug or no memory
				 */
	ESA_C_COPY_TXERR,	/* result copies a port did not take (its
				 * queue full): seen in generic mode, where
				 * the tc fan-out sends them; a devmap's in
				 * native mode are the driver's tx drops
				 */
	ESA_C_PS_SUM,		/* sums the PS finished, sent to the workers */
	ESA_C_RESEND_HELD,	/* resends of a rank already in a partial
				 * that is not idle past the ageing limit:
				 * dropped, the partial waits for its peers
				 */
	ESA_C_DROP_MTU,		/* drops: a packet, or a result copy, larger
				 * than the MTU of the route or the port it
				 * must leave by (the kernel would not send
				 * it); esactl refuses such ports and routes,
				 * this counts what changed since
				 */
	__ESA_C_MAX,
};

struct esa_counters {
	__u64	c[__ESA_C_MAX];
};

/* ======================================================================== */
/* Generic netlink API of esa.ko                                             */
/* ======================================================================== */
/*
 * esa.ko keeps one job registry per network namespace, the same registry the
 * XDP program of that namespace reads through the module's kfuncs (below).
 * User space manages it through the generic netlink family ESA_GENL_NAME,
 * version ESA_GENL_VERSION.  Every command needs CAP_NET_ADMIN in the user
 * namespace that owns the network namespace, and so does joining the
 * "events" multicast group where the kernel supports it (6.1.y with the
 * GENL_MCAST_CAP_NET_ADMIN backport, 6.8 and later).  Attribute policies are
 * strict: unknown attributes, wrong lengths, nests without NLA_F_NESTED and
 * trailing bytes are rejected, and every rejection carries an extended ACK
 * message (and, for a missing attribute, NLMSGERR_ATTR_MISS_TYPE).
 *
 * Errors: EINVAL malformed or missing attribute, ERANGE a value out of range,
 * ENOENT no such job, EEXIST job id in use, EOPNOTSUPP attribute that the
 * command cannot change, EPERM caller lacks CAP_NET_ADMIN.
 *
 * Job lifecycle, as on the map path: a job's generation is bumped when it is
 * added, deleted and when its lease runs out; switch slots belong to a
 * (job, generation), so every such bump frees all the job's slots at once.
 * A job whose workers are silent for lease_ms is expired by the module (new
 * generation, "expired" event) and stays registered: its next packet uses
 * the new generation.  Re-adding a deleted id gives a new generation.
 *
 * ESA_CMD_JOB_ADD: register a job.  Request attributes:
 *   ESA_JOB_A_ID           NLA_U32, required: 0 .. max_jobs - 1 (module
 *                          parameter, default 256; ERANGE otherwise).
 *                          EEXIST if the id is registered.
 *   ESA_JOB_A_WORKERS      NLA_NESTED, repeated: one attribute per rank, in
 *                          rank order (the first is rank 0), up to
 *                          ESA_MAX_WORKERS of them (ERANGE otherwise).  Each
 *                          is a nest of:
 *       ESA_ADDR_A_IPV4    NLA_U32 (the address in network byte order, as
 *                          the spec's big-endian u32): the rank's address,
 *                          not 0.
 *       ESA_ADDR_A_PORT    NLA_U16 (network byte order), optional: its UDP
 *                          source port; 0 or absent accepts any port.
 *                          No two members (workers and leaves) may have the
 *                          same address and port.  Two levels: an empty
 *                          nest is a rank that is not a worker of this box
 *                          (under another leaf, or a leaf's lowest rank).
 *                          Required, unless ESA_JOB_A_LEAVES is given.
 *   ESA_JOB_A_PS           NLA_NESTED, required: the job's parameter server,
 *                          ESA_ADDR_A_IPV4 and ESA_ADDR_A_PORT, both
 *                          required and not 0.
 *   Two levels (docs/design.md, "Two levels"; esactl job add ... upstream,
 *   ... leaves): a leaf box sums the ranks under it and sends the sum to its
 *   spine; a spine sums the leaves' sums.  Every member of a job here, a
 *   worker or a leaf, must be at a rank of its own; together they are the
 *   box's ranks, ESA_JOB_A_MASK.
 *   ESA_JOB_A_UPSTREAM     NLA_NESTED, optional: at a leaf, its spine
 *                          (ESA_ADDR_A_IPV4 and ESA_ADDR_A_PORT, both
 *                          required and not 0), where the sum of the box's
 *                          ranks goes.  Required when some of the job's
 *                          ranks are not under this box (EINVAL).
 *   ESA_JOB_A_LEAVES       NLA_NESTED, optional, repeated: at a spine, one
 *                          attribute per leaf box, a nest of:
 *       ESA_LEAF_A_IPV4    NLA_U32 (network byte order), required, not 0:
 *                          the leaf's address.
 *       ESA_LEAF_A_PORT    NLA_U16 (network byte order), optional: the UDP
 *                          source port of its sums; 0 or absent: any.
 *       ESA_LEAF_A_RANKS   NLA_U64, required: the ranks under the leaf, bit
 *                          r for rank r; not 0, below the job's ranks
 *                          (ERANGE), disjoint from every other member's
 *                          (EINVAL).  The leaf is the member at the lowest
 *                          of them (its sums carry that rank and ESA_F_LEAF,
 *                          and exactly this bitmap): that rank's
 *                          ESA_JOB_A_WORKERS, if any, must be empty.
 *   ESA_JOB_A_RANKS        NLA_U8, optional: the job's ranks, here or not,
 *                          1 .. ESA_MAX_WORKERS; default, and at least: the
 *                          number of ESA_JOB_A_WORKERS, or one past the
 *                          highest rank of a leaf, whichever is more
 *                          (ERANGE).
 *   ESA_JOB_A_MAX_PRIO     NLA_U8, optional, default 0: the highest priority
 *                          the job's packets may carry.
 *   ESA_JOB_A_LEASE_MS     NLA_U32, optional, default 0 (never): 0, or
 *                          ESA_LEASE_MS_MIN .. ESA_LEASE_MS_MAX (ERANGE
 *                          otherwise; the data path stamps activity at most
 *                          once a millisecond on a coarse clock, so a lease
 *                          of a few ms would expire live jobs).
 *   ESA_JOB_A_REGION_BASE  NLA_U32, optional, default 0: the job's slots
 *   ESA_JOB_A_REGION_SIZE  NLA_U32, optional, default 0: (struct esa_job):
 *                          its region (switchml) or home (esa, atp); base +
 *                          size must not pass 2^32.  The pool's size is
 *                          the program's: esactl checks against it.
 *
 * ESA_CMD_JOB_DEL: unregister ESA_JOB_A_ID (required).  ENOENT if unknown.
 *
 * ESA_CMD_JOB_GET: with ESA_JOB_A_ID (required), reply with that job;
 * with NLM_F_DUMP (no attributes: EINVAL otherwise), one message per
 * registered job in id order.  A dump that spans several messages while
 * jobs are added, deleted or changed has NLM_F_DUMP_INTR set on the
 * messages after the change: run it again.  Reply attributes (also those
 * of ESA_CMD_JOB_ADDED and ESA_CMD_JOB_CHANGED events):
 *   ESA_JOB_A_ID, ESA_JOB_A_WORKERS, ESA_JOB_A_PS, ESA_JOB_A_MAX_PRIO,
 *   ESA_JOB_A_LEASE_MS, ESA_JOB_A_REGION_BASE, ESA_JOB_A_REGION_SIZE as in
 *   ESA_CMD_JOB_ADD (ESA_ADDR_A_PORT always present, 0 meaning any), and
 *   ESA_JOB_A_GEN          NLA_U32: current generation.
 *   ESA_JOB_A_IDLE_MS      NLA_U32: milliseconds since the job's last packet
 *                          (or since it was added), saturating.
 *   ESA_JOB_A_EXPIRED      NLA_FLAG: present while the lease has run out and
 *                          no packet came since.
 *   ESA_JOB_A_REG          NLA_U32: the registration: the generation the
 *                          job got when it was added.  Unlike the generation
 *                          it does not change when the lease runs out or
 *                          the priority is set; delete and add again give a
 *                          new one (unique per id over time, as generations).
 *   ESA_JOB_A_RANKS        NLA_U8: the job's ranks; ESA_JOB_A_WORKERS has
 *                          one attribute for each (empty where no worker of
 *                          this box is).
 *   ESA_JOB_A_MASK         NLA_U64: the ranks this box sums (its workers'
 *                          and leaves'); all of the job's for one level.
 *   ESA_JOB_A_UPSTREAM, ESA_JOB_A_LEAVES  as in ESA_CMD_JOB_ADD, if any.
 *
 * ESA_CMD_JOB_SET: change ESA_JOB_A_MAX_PRIO (required) of ESA_JOB_A_ID
 * (required).  No other attribute can change (EOPNOTSUPP): delete the job
 * and add it again.  Packets already admitted are not affected.
 *
 * ESA_CMD_CTR_GET: read the module's counters.  Request: ESA_JOB_A_ID,
 * optional (any id below max_jobs, registered or not).  Reply:
 *   ESA_JOB_A_TOTALS       NLA_NESTED, ESA_CTR_A_*: the namespace's totals.
 *   ESA_JOB_A_ID, ESA_JOB_A_COUNTERS (NLA_NESTED, ESA_CTR_A_*): that id's,
 *                          kept across delete and re-add, only if asked.
 *   Counters are NLA_U64: ESA_CTR_A_ADDS, ESA_CTR_A_DELETES,
 *   ESA_CTR_A_EXPIRIES (leases run out), ESA_CTR_A_RECLAIMS (retired
 *   generations that had admitted packets, so whose slots were released),
 *   and, in the totals only, ESA_CTR_A_FOREIGN (packets of this namespace
 *   refused because their XDP program serves another namespace: see
 *   bpf_esa_bind() below).
 *
 * Events, multicast group ESA_GENL_MCGRP_EVENTS, per namespace, in the
 * order things happened to a job (a job's ADDED comes before anything else
 * about it):
 *   ESA_CMD_JOB_ADDED      a job was added; attributes as ESA_CMD_JOB_GET.
 *   ESA_CMD_JOB_DELETED    ESA_JOB_A_ID, ESA_JOB_A_GEN: the generation it had.
 *   ESA_CMD_JOB_EXPIRED    ESA_JOB_A_ID, ESA_JOB_A_GEN: the new generation
 *                          (the lease ran out; the job stays registered).
 *   ESA_CMD_JOB_RECLAIMED  ESA_JOB_A_ID, ESA_JOB_A_GEN: a retired generation
 *                          that admitted packets: every slot stamped with it
 *                          is free.  Follows EXPIRED or DELETED.
 *   ESA_CMD_JOB_CHANGED    ESA_CMD_JOB_SET succeeded; attributes as
 *                          ESA_CMD_JOB_GET.
 * Expiries found by the data path before the module's timer are reported
 * from the timer's work, shortly after; two expiries of one job between
 * two runs of that work are reported as one event (with the newer
 * generation), while the counters count both.
 *
 * Memory: a namespace's registry (max_jobs entries) is allocated when its
 * first job is added, and it and every job are charged to the memory cgroup
 * of the process that adds them: a container's administrator is bounded by
 * the container's memory limit (ENOMEM beyond it).
 */
#define ESA_GENL_NAME		"esa"
#define ESA_GENL_VERSION	1
#define ESA_GENL_MCGRP_EVENTS	"events"
#define ESA_LEASE_MS_MAX	3600000	/* one hour */
#define ESA_LEASE_MS_MIN	100	/* below, live jobs expire: activity is
				 * stamped at most once a millisecond, on a
				 * clock that moves by ticks
				 */

enum esa_cmd {
	ESA_CMD_UNSPEC,
	ESA_CMD_JOB_ADD,
	ESA_CMD_JOB_DEL,
	ESA_CMD_JOB_GET,
	ESA_CMD_JOB_SET,
	ESA_CMD_CTR_GET,
	ESA_CMD_JOB_ADDED,	/* events only */
	ESA_CMD_JOB_DELETED,
	ESA_CMD_JOB_EXPIRED,
	ESA_CMD_JOB_RECLAIMED,
	ESA_CMD_JOB_CHANGED,
	__ESA_CMD_MAX,
};

#define ESA_CMD_MAX	(__ESA_CMD_MAX - 1)

enum esa_job_attr {
	ESA_JOB_A_UNSPEC,
	ESA_JOB_A_ID,
	ESA_JOB_A_GEN,
	ESA_JOB_A_WORKERS,
	ESA_JOB_A_PS,
	ESA_JOB_A_MAX_PRIO,
	ESA_JOB_A_LEASE_MS,
	ESA_JOB_A_REGION_BASE,
	ESA_JOB_A_REGION_SIZE,
	ESA_JOB_A_IDLE_MS,
	ESA_JOB_A_EXPIRED,
	ESA_JOB_A_COUNTERS,
	ESA_JOB_A_TOTALS,
	ESA_JOB_A_REG,
	ESA_JOB_A_PAD,
	ESA_JOB_A_UPSTREAM,
	ESA_JOB_A_LEAVES,
	ESA_JOB_A_MASK,
	ESA_JOB_A_RANKS,
	__ESA_JOB_A_MAX,
};

#define ESA_JOB_A_MAX	(__ESA_JOB_A_MAX - 1)

enum esa_addr_attr {
	ESA_ADDR_A_UNSPEC,
	ESA_ADDR_A_IPV4,
	ESA_ADDR_A_PORT,
	__ESA_ADDR_A_MAX,
};

#define ESA_ADDR_A_MAX	(__ESA_ADDR_A_MAX - 1)

enum esa_leaf_attr {
	ESA_LEAF_A_UNSPEC,
	ESA_LEAF_A_IPV4,
	ESA_LEAF_A_PORT,
	ESA_LEAF_A_RANKS,
	ESA_LEAF_A_PAD,
	__ESA_LEAF_A_MAX,
};

#define ESA_LEAF_A_MAX	(__ESA_LEAF_A_MAX - 1)

enum esa_ctr_attr {
	ESA_CTR_A_UNSPEC,
	ESA_CTR_A_PAD,
	ESA_CTR_A_ADDS,
	ESA_CTR_A_DELETES,
	ESA_CTR_A_EXPIRIES,
	ESA_CTR_A_RECLAIMS,
	ESA_CTR_A_FOREIGN,
	__ESA_CTR_A_MAX,
};

#define ESA_CTR_A_MAX	(__ESA_CTR_A_MAX - 1)

/* ------------------------------------------------------------------------ */
/* kfuncs of esa.ko for XDP programs                                         */
/* ------------------------------------------------------------------------ */
/*
 * With esa.ko loaded, the XDP program built with -DESA_KFUNC reads the
 * registry of its packets' namespace (that of the receiving device) through
 * these kfuncs instead of the esa_jobs map (bpf/esa_kfunc.bpf.h).  Time is
 * the module's own (the coarse monotonic clock): no kfunc takes it from the
 * program, so no program can expire every job or keep a silent one alive.
 *
 *   int bpf_esa_bind(struct xdp_md *ctx, struct esa_kf_bind *b);
 *	Jobs are per network namespace, but a program's slots are not: a
 *	program (or its maps) serving ports in two namespaces would see one
 *	namespace's slots as dead owners in the other and take them.  *b,
 *	zeroed when the program is loaded and kept in a map that goes with
 *	the slot maps (the data plane's esa_kf_ns, pinned as "bind": a
 *	program sharing the slot maps shares it too), binds the slots to
 *	the namespace of the first packet that calls this; a packet from
 *	another namespace then returns -EXDEV, is counted there
 *	(ESA_CTR_A_FOREIGN) and named in the kernel log, and must be dropped.
 *	Returns 0 for a packet of the slots' namespace; -EINVAL if b is
 *	not 8-byte aligned.  The data path calls it before admission and
 *	before the PS's ack touches a slot.
 *   int bpf_esa_admit(struct xdp_md *ctx, __u64 key, __be32 saddr,
 *		       __be64 bitmap, struct esa_kf_jinfo *ji);
 *	Admit a DATA packet: its job, rank, priority, flags and UDP source
 *	port packed by ESA_KF_KEY(), its IPv4 source and its bitmap (as on
 *	the wire).  Returns 0, or ESA_C_EXPIRED when the packet is the job's
 *	first after its lease ran out (it belongs to the new generation:
 *	count it), or the ESA_C_DROP_* counter of the reason it is refused
 *	(JOB; RANK, also a rank that is not a member of this box; PRIO;
 *	HEADER, a leaf's sum without ESA_F_LEAF or with another bitmap than
 *	the leaf's ranks, or ESA_F_LEAF from a worker; SPOOF).  On admission
 *	the job's lease is renewed and *ji filled (generation, registration,
 *	region, worker count, and the two levels' mask, the member's ranks
 *	and the upstream); else *ji is left alone.
 *   int bpf_esa_owner_alive(struct xdp_md *ctx, __u32 job, __u32 gen);
 *	1 while generation gen of the job is registered and within its lease.
 *   int bpf_esa_job(struct xdp_md *ctx, __u32 job, struct esa_kf_job *out);
 *	1 and *out (with a leaf's upstream), or 0 when the job is not
 *	registered.
 *
 * Pointer arguments must not be NULL.  The module registers the kfuncs with
 * KF_TRUSTED_ARGS, with which 6.12's verifier refuses a program that may
 * pass NULL; 6.1's flag does not cover memory arguments, so there the
 * kfuncs return -EINVAL for a NULL pointer instead of writing through it.
 *
 * No refcounts are taken: the snapshot is copied under RCU (XDP programs
 * run inside an RCU read-side section), and admission passes the packet's
 * fields in registers, so a packet costs one call and no stack copies.  A
 * loaded program that calls them holds a reference on esa.ko: rmmod fails
 * with EAGAIN until it is gone.
 */
#define ESA_KF_KEY(job, rank, prio, flags, sport)			\
	((__u64)(__u16)(job) | (__u64)(__u16)(rank) << 16 |		\
	 (__u64)(__u8)(prio) << 32 | (__u64)(__u8)(flags) << 40 |	\
	 (__u64)(__u16)(sport) << 48)

/*
 * What admission tells the data path: bpf/esa.bpf.c's struct esa_jinfo.
 * reg is the job's registration (ESA_JOB_A_REG): its generation when it was
 * added, which lease expiries do not change.
 */
struct esa_kf_jinfo {
	__u32	gen;
	__u32	reg;		/* the registration: gen as the job was added */
	__u32	region_base;
	__u32	region_size;
	__u32	nworkers;	/* the job's ranks */
	__u32	resv;
	/* Two levels (ESA_JOB_A_MASK, ESA_JOB_A_LEAVES, ESA_JOB_A_UPSTREAM): */
	__u64	mask;		/* the ranks this box sums; 0: all */
	__u64	rset;		/* the packet's member's ranks; 0: 1 << rank */
	struct esa_addr up;	/* a leaf's spine; ip 0: this box is the top */
};

struct esa_kf_job {
	__u32	gen;
	__u32	reg;
	__u32	region_base;
	__u32	region_size;
	__u32	nworkers;
	struct esa_addr ps;
	struct esa_addr up;	/* a leaf's spine; ip 0: this box is the top */
};

/* The namespace a program serves, set by bpf_esa_bind(); 0: none yet. */
struct esa_kf_bind {
	__u64	netns_cookie;
};

#endif /* _UAPI_LINUX_ESA_H */
