/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * ESA: in-network aggregation with preemptive switch-memory scheduling.
 *
 * This header is the one definition of everything that crosses a boundary:
 *   - the wire protocol (version 1) spoken by workers, the switch and the PS;
 *   - the layouts of the BPF maps shared by the XDP program and user space;
 *   - the generic netlink API of esa.ko (see the second half of this file).
 * It is included by the BPF program, the kernel module and user space alike,
 * so it uses only <linux/types.h> types.
 */
#ifndef _UAPI_LINUX_ESA_H
#define _UAPI_LINUX_ESA_H

#include <linux/types.h>
#include <linux/bpf.h>		/* struct bpf_spin_lock */

/* ------------------------------------------------------------------------ */
/* Wire protocol, version 1                                                  */
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
 * flags     ESA_F_* bits.  DATA may carry only ESA_F_RESEND.
 * priority  0..255, larger wins.  Must not exceed the job's registered
 *           maximum.  Every worker of a job stamps the same priority for the
 *           same chunk.
 * job id    the job's registered id (0 .. max_jobs - 1).
 * rank      sender's rank (0 .. workers - 1); ESA_RANK_NONE when the switch
 *           or the PS built the packet (results, partials).
 * bitmap    ranks whose values the packet contains.  DATA: exactly 1 << rank.
 * sequence  chunk number within the job's stream (wraps at 2^32).
 * count     number of int32 values; must equal the deployment's vector
 *           length (chosen when the program is loaded, default 256), so an
 *           evicted partial always fits in the packet that evicts it.
 * reason    why a packet travels to the PS (enum esa_reason), else 0.
 * reserved  zero.
 *
 * UDP checksum: the switch sends 0 (legal for IPv4) on packets it rewrites.
 */
#define ESA_VERSION		1
#define ESA_DEFAULT_PORT	7680	/* UDP port the switch listens on */
#define ESA_MAX_WORKERS		64	/* ranks per job (bitmap width) */
#define ESA_MAX_VALUES		256	/* largest vector length per packet */
#define ESA_DEFAULT_VALUES	256
#define ESA_VALUES_ALIGN	8	/* vector length must be a multiple */
#define ESA_RANK_NONE		0xffff

enum esa_type {
	ESA_T_DATA = 1,		/* worker -> switch: one rank's chunk */
	ESA_T_RESULT,		/* switch/PS -> workers (and PS): the sum */
	ESA_T_PARTIAL,		/* switch -> PS: a partial sum with its bitmap */
	ESA_T_COLLISION,	/* switch -> PS: a worker chunk not aggregated */
	ESA_T_ACK,		/* PS -> switch (policy atp): sum is final */
	ESA_T_FETCH,		/* PS -> workers: your result of this chunk,
				 * please (the PS's copy was lost): answered
				 * with a RESULT to the PS
				 */
	__ESA_T_MAX,
};

#define ESA_F_RESEND	0x01	/* sent again after a worker timeout */
#define ESA_F_OVERFLOW	0x02	/* some element of the sum left int32 */
#define ESA_F_MASK	0x03

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

/* ------------------------------------------------------------------------ */
/* Slot allocation policies (chosen when the program is loaded)              */
/* ------------------------------------------------------------------------ */

enum esa_policy {
	ESA_POLICY_ESA = 0,	/* shared pool, preemption, free on completion */
	ESA_POLICY_ATP,		/* shared pool, no preemption, free on PS ack */
	ESA_POLICY_SWITCHML,	/* static per-job regions, no sharing */
	__ESA_POLICY_MAX,
};

/* ------------------------------------------------------------------------ */
/* BPF maps (pinned under /sys/fs/bpf/esa/)                                  */
/* ------------------------------------------------------------------------ */

#define ESA_PIN_DIR		"/sys/fs/bpf/esa"

/* Load-time configuration: the program's .rodata (read-only once loaded). */
struct esa_cfg {
	__be16	port;		/* UDP port of the switch */
	__u16	nvals;		/* values per packet */
	__u32	slots;		/* aggregator slots in the pool */
	__u32	max_jobs;	/* job ids 0 .. max_jobs - 1 */
	__u32	stale_ms;	/* age out partials idle this long; 0: never */
	__be32	addr;		/* switch address; 0: any destination */
	__u8	policy;		/* enum esa_policy */
	__u8	kfunc;		/* job registry read through esa.ko kfuncs */
	__u16	resv;
};

enum esa_job_state {
	ESA_JOB_NONE = 0,	/* id never used */
	ESA_JOB_ACTIVE,
	ESA_JOB_DELETED,
};

struct esa_addr {
	__be32	ip;
	__be16	port;		/* 0 in a registration: any source port */
	__u16	resv;
};

/*
 * esa_jobs: array indexed by job id.  Written by the control plane
 * (esactl or esa.ko) except last_active_ns and, on lease renewal, gen.
 * A slot belongs to a live owner only while the owner's gen still matches
 * the gen stamped in the slot, so deleting a job or letting its lease run out
 * frees all its slots at once, without a scan.
 */
struct esa_job {
	__u32	gen;		/* generation: bumped on add, delete, expiry */
	__u8	state;		/* enum esa_job_state */
	__u8	nworkers;	/* 1 .. ESA_MAX_WORKERS */
	__u8	max_prio;	/* highest priority the job may stamp */
	__u8	flags;
	struct esa_addr ps;	/* the job's parameter server */
	__u32	lease_ms;	/* silent this long: slots reclaimed; 0: never */
	/*
	 * Where chunk seq goes: slot region_base + seq % region_size.  Policy
	 * switchml: the job's own region (required).  Policies esa and atp:
	 * the job's home on the shared pool, which may overlap other homes
	 * and wrap the pool's end; region_size 0: hash(job) + seq instead.
	 */
	__u32	region_base;
	__u32	region_size;
	__u32	resv;
	__u64	last_active_ns;	/* CLOCK_MONOTONIC (coarse), data path */
	struct esa_addr rank[ESA_MAX_WORKERS];
};

enum esa_slot_state {
	ESA_SLOT_FREE = 0,	/* never used, completed, or flushed */
	ESA_SLOT_BUSY,		/* aggregating */
	ESA_SLOT_HELD,		/* policy atp: complete, waiting for PS ack */
};

enum esa_tomb_kind {
	ESA_TOMB_NONE = 0,
	ESA_TOMB_DONE,		/* completed: later copies are duplicates */
	ESA_TOMB_PS,		/* went to the PS: later packets follow it */
};

/*
 * esa_tombs: what became of each job's recent chunks, so that late packets of
 * a chunk that left the switch neither start a partial that can never
 * complete nor evict live work.  ESA_TOMB_RING entries per job, indexed by
 * esa_tomb_index() (include/esa_policy.h): job * ESA_TOMB_RING + seq % ring.
 * Only the job's own chunk ESA_TOMB_RING later overwrites an entry.  A miss
 * is never wrong, only slower (the PS and the workers' resends finish the
 * chunk).  An entry is only read and written under the lock of its chunk's
 * slot.
 */
#define ESA_TOMB_RING	512

struct esa_tomb {
	__u32	seq;
	__u32	gen;
	__u8	kind;		/* enum esa_tomb_kind */
	__u8	resv[3];
};

/*
 * esa_slots: array of ESA_CFG.slots slot headers.  The values live in the
 * parallel array esa_acc: nvals __u64 accumulators per slot, each holding
 * sum(v + 2^31) over the nranks values added so far (value = acc -
 * nranks * 2^31); 64-bit accumulators cannot overflow for 64 ranks, so
 * overflow is checked once per emitted sum, not once per added packet.
 * Everything in a slot (header and its accumulators) is guarded by lock.
 */
struct esa_slot {
	struct bpf_spin_lock lock;
	__u8	state;		/* enum esa_slot_state */
	__u8	prio;
	__u8	nranks;		/* popcount(bitmap) */
	__u8	last;		/* last decision taken here (enum esa_action
				 * in esa_policy.h), for debugging
				 */
	__u16	job;
	__u16	resv2;
	__u32	gen;
	__u32	seq;
	__u32	resv3;
	__u64	bitmap;
	__u64	stamp_ns;	/* last change, for ageing */
	__u64	resv4[3];
};

#define ESA_ACC_BIAS	0x80000000ULL

/* Where a result for one job leaves one port: learnt from the job's own
 * data packets (worker lane) and read by the port's egress program.
 */
struct esa_dest_key {
	__u32	ifindex;
	__u16	job;
	__u16	resv;
};

struct esa_dest {
	__u8	mac[6];		/* the host's MAC */
	__be16	port;
	__u8	port_mac[6];	/* the switch port's MAC */
	__u16	rank;
	__be32	ip;
	__u32	gen;
	__u32	ifindex;
};

/*
 * esa_ports: the devmap of ports that deliver results, ESA_PORT_COPIES
 * entries per port (key ESA_PORT_KEY(ifindex, copy)), all with the same
 * egress program.  A result is broadcast to every entry; on each port the
 * egress program gives one copy to the job's worker there and one to the
 * job's PS if it is there too, and drops the rest.  One program for every
 * entry because the kernel runs the egress program of the first frame
 * queued to a device on all frames it flushes to that device together.
 */
#define ESA_PORT_COPIES	2
#define ESA_PORT_KEY(ifindex, copy)	((ifindex) * ESA_PORT_COPIES + (copy))

enum esa_meta_kind {
	ESA_META_UNICAST = 1,	/* addressed already: send as it is */
	ESA_META_RESULT,	/* a copy of a broadcast result */
};

/* Metadata the ingress program hands to the egress program. */
struct esa_meta {
	__u32	ps_ifindex;	/* port toward the job's PS; 0: none */
	__u32	gen;		/* job generation the result belongs to */
	__be32	ps_ip;
	__u8	ps_mac[6];
	__be16	ps_port;
	__u8	ps_port_mac[6];
	__u8	kind;		/* enum esa_meta_kind */
	__u8	resv;
	__u32	bcast;		/* which broadcast of this CPU */
};

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
	ESA_C_ACK,		/* policy atp: acks from the PS */
	ESA_C_LEARN,		/* worker locations (re)learnt */
	ESA_C_LEARN_CONFLICT,	/* two ranks of one job behind one port */
	ESA_C_PORT_UNKNOWN,	/* data from a port without result delivery */
	ESA_C_DROP_TRUNC,	/* drops: truncated packet */
	ESA_C_DROP_VERSION,	/* drops: wrong version */
	ESA_C_DROP_TYPE,	/* drops: type not accepted from this sender */
	ESA_C_DROP_COUNT,	/* drops: count or length not the deployment's */
	ESA_C_DROP_HEADER,	/* drops: bad flags, bitmap or reserved field */
	ESA_C_DROP_JOB,		/* drops: unknown or deleted job */
	ESA_C_DROP_RANK,	/* drops: rank outside the job */
	ESA_C_DROP_PRIO,	/* drops: priority above the job's maximum */
	ESA_C_DROP_SPOOF,	/* drops: source is not the rank's address */
	ESA_C_DROP_IP,		/* drops: IP options or fragment */
	ESA_C_DROP_NOROUTE,	/* drops: no route to the PS */
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
 *   ESA_JOB_A_WORKERS      NLA_NESTED, required: 1 .. ESA_MAX_WORKERS
 *                          entries (ERANGE otherwise), one per rank in rank
 *                          order; entry r has type r and is itself a nest:
 *       ESA_ADDR_A_IPV4    NLA_BE32, required, not 0: the rank's address.
 *       ESA_ADDR_A_PORT    NLA_BE16, optional: its UDP source port; 0 or
 *                          absent accepts any port.
 *                          No two ranks may have the same address and port.
 *   ESA_JOB_A_PS           NLA_NESTED, required: the job's parameter server,
 *                          ESA_ADDR_A_IPV4 and ESA_ADDR_A_PORT, both
 *                          required and not 0.
 *   ESA_JOB_A_MAX_PRIO     NLA_U8, optional, default 0: the highest priority
 *                          the job's packets may carry.
 *   ESA_JOB_A_LEASE_MS     NLA_U32, optional, default 0 (never):
 *                          0 .. ESA_LEASE_MS_MAX.
 *   ESA_JOB_A_REGION_BASE  NLA_U32, optional, default 0: the job's slots
 *   ESA_JOB_A_REGION_SIZE  NLA_U32, optional, default 0: (struct esa_job):
 *                          its region (switchml) or home (esa, atp); base +
 *                          size must not pass 2^32.  The pool's size is
 *                          the program's: esactl checks against it.
 *
 * ESA_CMD_JOB_DEL: unregister ESA_JOB_A_ID (required).  ENOENT if unknown.
 *
 * ESA_CMD_JOB_GET: with ESA_JOB_A_ID (required), reply with that job;
 * with NLM_F_DUMP (no attributes), one message per registered job in id
 * order.  Reply attributes (also those of ESA_CMD_JOB_ADDED events):
 *   ESA_JOB_A_ID, ESA_JOB_A_WORKERS, ESA_JOB_A_PS, ESA_JOB_A_MAX_PRIO,
 *   ESA_JOB_A_LEASE_MS, ESA_JOB_A_REGION_BASE, ESA_JOB_A_REGION_SIZE as in
 *   ESA_CMD_JOB_ADD (ESA_ADDR_A_PORT always present, 0 meaning any), and
 *   ESA_JOB_A_GEN          NLA_U32: current generation.
 *   ESA_JOB_A_IDLE_MS      NLA_U32: milliseconds since the job's last packet
 *                          (or since it was added), saturating.
 *   ESA_JOB_A_EXPIRED      NLA_FLAG: present while the lease has run out and
 *                          no packet came since.
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
 *   generations that had admitted packets, so whose slots were released).
 *
 * Events, multicast group ESA_GENL_MCGRP_EVENTS, per namespace:
 *   ESA_CMD_JOB_ADDED      a job was added; attributes as ESA_CMD_JOB_GET.
 *   ESA_CMD_JOB_DELETED    ESA_JOB_A_ID, ESA_JOB_A_GEN: the generation it had.
 *   ESA_CMD_JOB_EXPIRED    ESA_JOB_A_ID, ESA_JOB_A_GEN: the new generation
 *                          (the lease ran out; the job stays registered).
 *   ESA_CMD_JOB_RECLAIMED  ESA_JOB_A_ID, ESA_JOB_A_GEN: a retired generation
 *                          that admitted packets: every slot stamped with it
 *                          is free.  Follows EXPIRED or DELETED.
 * Expiries found by the data path before the module's timer are reported
 * from the timer's work, shortly after; two expiries of one job between
 * two runs of that work (a lease shorter than the work's latency) are
 * reported as one event, while the counters count both.
 */
#define ESA_GENL_NAME		"esa"
#define ESA_GENL_VERSION	1
#define ESA_GENL_MCGRP_EVENTS	"events"
#define ESA_LEASE_MS_MAX	3600000	/* one hour */

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

enum esa_ctr_attr {
	ESA_CTR_A_UNSPEC,
	ESA_CTR_A_PAD,
	ESA_CTR_A_ADDS,
	ESA_CTR_A_DELETES,
	ESA_CTR_A_EXPIRIES,
	ESA_CTR_A_RECLAIMS,
	__ESA_CTR_A_MAX,
};

#define ESA_CTR_A_MAX	(__ESA_CTR_A_MAX - 1)

/* ------------------------------------------------------------------------ */
/* kfuncs of esa.ko for XDP programs                                         */
/* ------------------------------------------------------------------------ */
/*
 * With esa.ko loaded, the XDP program built with -DESA_KFUNC reads the
 * registry of its packets' namespace (that of the receiving device) through
 * these kfuncs instead of the esa_jobs map (bpf/esa_kfunc.bpf.h):
 *
 *   int bpf_esa_admit(struct xdp_md *ctx, __u64 key, __be32 saddr,
 *		       __u64 now, struct esa_kf_jinfo *ji);
 *	Admit a DATA packet: its job, rank, priority and UDP source port
 *	packed by ESA_KF_KEY(), its IPv4 source, and the time
 *	(bpf_ktime_get_coarse_ns()).  Returns 0, or ESA_C_EXPIRED when the
 *	packet is the job's first after its lease ran out (it belongs to the
 *	new generation: count it), or the ESA_C_DROP_* counter of the reason
 *	it is refused (JOB, RANK, PRIO, SPOOF).  On admission the job's lease
 *	is renewed and *ji filled; else *ji is left alone.
 *   int bpf_esa_owner_alive(struct xdp_md *ctx, __u32 job, __u32 gen,
 *			     __u64 now);
 *	1 while generation gen of the job is registered and within its lease.
 *   int bpf_esa_job(struct xdp_md *ctx, __u32 job, struct esa_kf_job *out);
 *	1 and *out, or 0 when the job is not registered.
 *
 * No refcounts are taken: the snapshot is copied under RCU (XDP programs
 * run inside an RCU read-side section), and admission passes the packet's
 * fields in registers, so a packet costs one call and no stack copies.  A
 * loaded program that calls them holds a reference on esa.ko: rmmod fails
 * with EAGAIN until it is gone.
 */
#define ESA_KF_KEY(job, rank, prio, sport)				\
	((__u64)(__u16)(job) | (__u64)(__u16)(rank) << 16 |		\
	 (__u64)(__u8)(prio) << 32 | (__u64)(__u16)(sport) << 48)

/* What admission tells the data path: bpf/esa.bpf.c's struct esa_jinfo. */
struct esa_kf_jinfo {
	__u32	gen;
	__u32	region_base;
	__u32	region_size;
	__u32	nworkers;
};

struct esa_kf_job {
	__u32	gen;
	__u32	region_base;
	__u32	region_size;
	__u32	nworkers;
	struct esa_addr ps;
};

#endif /* _UAPI_LINUX_ESA_H */
