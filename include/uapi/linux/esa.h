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
				 * deliver the sum to the workers */
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
	__u32	region_base;	/* policy switchml: first slot of the region */
	__u32	region_size;	/* policy switchml: slots in the region */
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

/* The key of a chunk that recently left a slot, kept so that late packets
 * of that chunk neither start a partial that can never complete nor evict
 * live work.  Two per slot; a miss is never wrong, only slower (the PS and
 * the workers' resends finish the chunk).
 */
struct esa_tomb {
	__u32	seq;
	__u32	gen;
	__u16	job;
	__u8	kind;		/* enum esa_tomb_kind */
	__u8	resv;
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
				 * in esa_policy.h), for debugging */
	__u16	job;
	__u16	resv2;
	__u32	gen;
	__u32	seq;
	__u32	resv3;
	__u64	bitmap;
	__u64	stamp_ns;	/* last change, for ageing */
	struct esa_tomb tomb[2];
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

/* Devmap keys: two lanes per port, so a worker and the PS of one job can
 * share a port and still get one copy each.
 */
#define ESA_LANE_WORKER	0
#define ESA_LANE_PS	1
#define ESA_PORT_KEY(ifindex, lane)	((ifindex) * 2 + (lane))

/* Metadata the ingress program hands to the egress programs of a result. */
struct esa_meta {
	__u32	ps_ifindex;	/* port toward the job's PS; 0: none */
	__u32	gen;		/* job generation the result belongs to */
	__be32	ps_ip;
	__u8	ps_mac[6];
	__be16	ps_port;
	__u8	ps_port_mac[6];
	__u16	resv;
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

#endif /* _UAPI_LINUX_ESA_H */
