/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The switch's private state: the layouts of the BPF maps that the XDP
 * program (bpf/) and its loader (user/common/) share, pinned under
 * ESA_PIN_DIR.  Not an API: only the program and the loader of the same
 * build read them.  What crosses a boundary (wire format, counters,
 * netlink, kfuncs) is in include/uapi/linux/esa.h.
 */
#ifndef _ESA_MAPS_H
#define _ESA_MAPS_H

#include <linux/types.h>
#include <linux/bpf.h>		/* struct bpf_spin_lock */
#include <linux/esa.h>

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
	__u8	flags;		/* ESA_CFG_F_* */
	__u8	resv;
	__u64	cookie;		/* random per load: its fan-out metadata's */
};

/*
 * No result copies for the PSes: a completed sum goes to the workers only
 * (the PS then learns a sum it lacks from the workers, FETCH), so that a
 * PS shared by many jobs on one link carries only their fallbacks.
 */
#define ESA_CFG_F_NO_PS_COPY	0x1
/*
 * Results with UDP checksum 0, as before the hosts' GRO took them: saves
 * the switch the sum over the values (docs/evaluation.md has its cost).
 */
#define ESA_CFG_F_NO_UDP_CSUM	0x2

/* ------------------------------------------------------------------------ */
/* Jobs (the map registry; esa.ko keeps its own)                             */
/* ------------------------------------------------------------------------ */

enum esa_job_state {
	ESA_JOB_NONE = 0,	/* id never used */
	ESA_JOB_ACTIVE,
	ESA_JOB_DELETED,
};

/*
 * esa_jobs: array indexed by job id, mmap()ed by the control plane, which
 * writes only the fields it changes, state last (so the data path never
 * sees a half-written active job).  A slot belongs to a live owner only
 * while the owner's generation still matches the one stamped in the slot,
 * so deleting a job or letting its lease run out frees all its slots at
 * once, without a scan.
 *
 * The generation and the job's last activity share one word, `life`, that
 * changes only by compare-and-swap, in the data path (activity stamps, at
 * most one a millisecond, and the renewal of a lease that ran out, which
 * opens a new generation) and in the control plane (add and delete bump the
 * generation): whoever loses a race reads the winner's word, so no packet
 * ever takes a generation another CPU already retired, and no bump undoes
 * another.
 */
#define ESA_LIFE(gen, ms)	((__u64)(__u32)(ms) << 32 | (__u32)(gen))

static inline __u32 esa_life_gen(__u64 life)
{
	return (__u32)life;
}

/* Milliseconds of CLOCK_MONOTONIC (coarse) at the last activity, wrapping. */
static inline __u32 esa_life_ms(__u64 life)
{
	return (__u32)(life >> 32);
}

static inline int esa_lease_over_ms(__u32 lease_ms, __u64 life, __u32 now_ms)
{
	return lease_ms && (__s32)(now_ms - esa_life_ms(life)) > (__s32)lease_ms;
}

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/*
 * The one way a life word changes: from seen, the word the caller read, to
 * next, by compare-and-swap.  Returns the word found: seen when this call
 * won, else the winner's.
 */
static __always_inline __u64 esa_life_cas(__u64 *life, __u64 seen, __u64 next)
{
	return __sync_val_compare_and_swap(life, seen, next);
}

/*
 * A packet of a job with lease lease_ms arrives at now_ms; *life was read
 * as seen.  Stamp the activity (once a millisecond) and, when the lease ran
 * out, open a new generation.  Returns the generation the packet belongs
 * to, *renewed set when this call opened it.  A CPU that loses the race
 * takes the winner's generation: the one it read may just have been
 * retired (a renewal, or a delete in the control plane).
 */
static __always_inline __u32 esa_life_activity(__u64 *life, __u64 seen,
					       __u32 lease_ms, __u32 now_ms,
					       int *renewed)
{
	int renew = esa_lease_over_ms(lease_ms, seen, now_ms);
	__u32 gen = esa_life_gen(seen);
	__u64 old;

	*renewed = 0;
	if (!renew && esa_life_ms(seen) == now_ms)
		return gen;
	old = esa_life_cas(life, seen, ESA_LIFE(gen + renew, now_ms));
	if (old != seen)
		return esa_life_gen(old);
	*renewed = renew;
	return gen + renew;
}

struct esa_job {
	__u64	life;		/* ESA_LIFE(generation, last activity) */
	__u8	state;		/* enum esa_job_state */
	__u8	nworkers;	/* 1 .. ESA_MAX_WORKERS */
	__u8	max_prio;	/* highest priority the job may stamp */
	__u8	flags;
	/*
	 * The registration: the generation the job was added with.  Unlike
	 * the generation it survives lease expiries; ranks' bindings and the
	 * fan-out table belong to it.
	 */
	__u32	reg;
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
	/*
	 * Two levels (docs/design.md): the ranks this box sums (0: all the
	 * job's), and where a leaf sends the sum of its ranks (ip 0: this box
	 * is the top, results go to the members).
	 */
	__u64	mask;
	struct esa_addr up;
	/*
	 * The job's members here, indexed by the rank field of their packets:
	 * rank r's address (ip 0: not a member here, e.g. under another
	 * leaf), or at a spine the address of the leaf whose lowest rank is r;
	 * set[r]: the member's ranks (0: 1 << r, a worker).
	 */
	struct esa_addr rank[ESA_MAX_WORKERS];
	__u64	set[ESA_MAX_WORKERS];
};

/* Member r's ranks. */
static inline __u64 esa_member_set(const struct esa_job *j, __u32 r)
{
	r &= ESA_MAX_WORKERS - 1;
	return j->set[r] ? j->set[r] : 1ULL << r;
}

/* ------------------------------------------------------------------------ */
/* Slots and tombstones                                                      */
/* ------------------------------------------------------------------------ */

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
 * chunk).  An entry is read and written under the lock of its chunk's slot;
 * two chunks a ring apart sit in different slots, so the entry is one 64-bit
 * word, read and written whole (esa_tomb_word()): it cannot tear.
 */
struct esa_tomb {
	__u64	word;		/* seq << 32 | (gen & ESA_TOMB_GEN) << 2 | kind */
};

#define ESA_TOMB_GEN	0x3fffffffU	/* the generation bits a tomb keeps */

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
	__u8	nranks;		/* contributions added (packets: a leaf's
				 * carries several ranks)
				 */
	__u8	last;		/* last decision taken here (enum esa_action
				 * in esa_policy.h), for debugging
				 */
	__u16	job;
	__u16	flags;		/* ESA_SLOT_F_* */
	__u32	gen;
	__u32	seq;
	__u32	resv3;
	__u64	bitmap;
	__u64	stamp_ns;	/* last change, for ageing */
	__u64	resv4[3];
};

#define ESA_SLOT_F_OVF	0x1	/* a leaf's sum in it left int32 */

#define ESA_ACC_BIAS	0x80000000ULL

/* ------------------------------------------------------------------------ */
/* Where ranks live: bindings                                                */
/* ------------------------------------------------------------------------ */

/*
 * esa_binds: where each rank of each job lives, index job * ESA_MAX_WORKERS
 * + rank: the switch port its packets must arrive on and the MAC they must
 * come from (the host's, or its last router's).  Given at registration
 * (esactl resolves the port from the routing table, or takes `@DEV/MAC`),
 * or learnt from the rank's first admitted packet; then fixed until the job
 * is registered again.  A packet from elsewhere is dropped (drop_place) and
 * never moves a binding.
 *
 * word = reg << 32 | ESA_BIND_*: the entry belongs to registration reg of
 * the job (struct esa_job's reg, or esa.ko's).  The data path changes an
 * entry only by winning a compare-and-swap of word to CLAIM, writes what it
 * learnt, then stores the final word; user space writes an entry only while
 * no packet can learn into it (ANYREG set: checked, never learnt into).
 */
#define ESA_BIND_PORT	0x1	/* ifindex and port_mac are the binding's */
#define ESA_BIND_MAC	0x2	/* mac is */
#define ESA_BIND_CLAIM	0x4	/* a CPU is learning: hands off */
#define ESA_BIND_ANYREG	0x8	/* given, for whatever registration comes */

struct esa_bind {
	__u64	word;
	__u32	ifindex;	/* the switch port the rank is behind */
	__u8	mac[6];		/* its MAC (or its last router's) */
	__u8	port_mac[6];	/* the switch port's MAC */
	__be16	sport;		/* its UDP source port, last seen */
	__u8	resv[4];
};

/* ------------------------------------------------------------------------ */
/* Delivery of results                                                       */
/* ------------------------------------------------------------------------ */

/*
 * Results go to a job's members (its ranks and its PS) through a devmap of
 * the job's own, esa_fan[job] (array of maps), one entry per member: entry i
 * sends a copy out of member i's port, where the egress program addresses
 * it to member i.  Members are sorted by port, so a port's copies come one
 * after the other, in member order; egress counts them (per CPU) to know
 * which member a copy is for.  esa_members[job] is the table egress reads,
 * written by the control plane with the devmap.  A result costs one copy
 * per member: O(workers of the job), whatever the number of ports.
 */
#define ESA_MEMBER_PS	0xff	/* the member that is the job's PS */
#define ESA_FAN_MAX	(ESA_MAX_WORKERS + 1)

struct esa_member {
	__u32	ifindex;	/* the member's port */
	__be32	ip;
	__be16	port;		/* 0: the rank's learnt sport */
	__u8	rank;		/* 0 .. 63, or ESA_MEMBER_PS */
	__u8	resv;
};

struct esa_fanout {
	__u32	reg;		/* the registration it was made for; 0: none */
	__u16	n;		/* members, entries 0 .. n - 1 of the devmap */
	__u16	ps;		/* the PS's member index; ESA_FAN_MAX: none
				 * (a leaf: the spine gives the PS its copy)
				 */
	__u32	up_ifindex;	/* a leaf: the port its spine is behind */
	__u32	resv;
	struct esa_member m[ESA_FAN_MAX];
};

/*
 * esa_routes: per job, the route to its PS (and a leaf's to its spine) as
 * the FIB last gave it, key ESA_ROUTE(job, which): a lookup costs about
 * 100 ns, and the switch sends its PS many packets.  An entry serves for
 * ESA_ROUTE_TTL_NS from its stamp, for the same destination and source; a
 * next hop that changes within that is not seen until it runs out.
 */
#define ESA_ROUTE_PS		0	/* to its PS */
#define ESA_ROUTE_UP		1	/* a leaf's, to its spine */
#define ESA_ROUTE(jid, which)	((jid) * 2 + (which))
#define ESA_ROUTE_TTL_NS	(100 * 1000000ULL)

struct esa_route {
	__u64	stamp_ns;	/* when looked up (coarse monotonic); 0: never */
	__be32	src;		/* the source it was looked up for */
	__u32	ifindex;
	__be32	ps_ip;
	__be16	ps_port;
	__u8	dmac[6];
	__u8	smac[6];
	__u16	resv;
};

/*
 * esa_ports: every port the switch sends on, with the egress program.  A
 * device flushes the frames queued to it in one go through the egress
 * program of the first: frames the switch sends to a member's port must all
 * carry that program, unicasts too.
 */

/*
 * Results carry, between the ingress and the egress program, which
 * broadcast they are (the IP header's id: each CPU numbers its broadcasts),
 * in the ESA header's reserved byte whether the PS needs a copy, and in
 * the first four bytes of the Ethernet source the registration whose
 * members the copies are for (esa_stamp_reg()): egress addresses a copy
 * only from the fan-out table of that registration.  Egress sets the
 * reserved byte back to 0 and writes both MACs.  In the packet, not in XDP
 * metadata, which generic XDP does not carry across a redirect.
 */
#define ESA_RESV_NO_PS	0x1	/* the PS has the sum (policy atp's ACK) */

/* The registration in a result's Ethernet source, by halves (aligned 2). */
static inline void esa_stamp_reg(__u8 *mac, __u32 reg)
{
	((__u16 *)mac)[0] = (__u16)(reg >> 16);
	((__u16 *)mac)[1] = (__u16)reg;
}

static inline __u32 esa_stamped_reg(const __u8 *mac)
{
	return (__u32)((const __u16 *)mac)[0] << 16 | ((const __u16 *)mac)[1];
}

/*
 * Per CPU and port (key: its ifindex, one entry for each port in
 * esa_ports, made and removed with it by the control plane): the
 * broadcast whose copies the egress program is handing out there, and the
 * member the next copy is for.  A port's copies of one broadcast reach it
 * back to back, in member order, on the CPU that made them (queued in
 * native mode); another port's copies in between are counted apart.
 */
struct esa_egress_seen {
	__u32	ifindex;
	__u32	seq;
	__u16	job;
	__u16	bcast;		/* the IP id of the broadcast's copies */
	__u32	next;		/* member index of the next copy */
};

/*
 * Generic (SKB) mode cannot fan out through a devmap: it clones the skb for
 * every entry and runs the egress program on each clone without unsharing
 * it, so every member's addressing lands in one shared buffer and all copies
 * leave with the last member's.  esa_portinfo marks the ports attached in
 * generic mode (ESA_PORT_SKB, written by esactl dev attach; ESA_PORT_TC with
 * it); a sum finished on such a port leaves the XDP program by XDP_PASS with
 * struct esa_fan_meta as XDP metadata (which generic XDP keeps on XDP_PASS),
 * and the port's tc ingress program esa_tc_fan makes one addressed copy per
 * member (bpf_clone_redirect, which unshares the original after each clone).
 * The copies go through the member ports' qdiscs, as any frame the kernel
 * sends.
 */
#define ESA_PORT_SKB	0x1	/* attached in generic mode: fan out by tc */
/*
 * Native mode cannot broadcast a multi-buffer frame (a jumbo sum) either:
 * the devmap's copies are of the linear part only, and the kernel refuses
 * to make them (EOPNOTSUPP).  A port attached natively by a program whose
 * values exceed one frame (ESA_FRAME_VALUES) gets the tc fan-out too, and
 * such a sum takes it; at a port without it the sum goes to the PS, which
 * delivers it (fanout_miss).
 */
#define ESA_PORT_TC	0x2	/* the tc fan-out is attached (any mode) */

struct esa_port_info {
	__u32	flags;		/* ESA_PORT_* */
	__u32	resv;
};

#define ESA_FAN_MAGIC	0xe5af0a17

/*
 * The tc program takes a frame for a sum to fan out only when its
 * metadata carries the magic and the cookie the program was loaded with
 * (esa_cfg.cookie: random, in no frame on a wire) and the frame is the
 * switch's RESULT of that job: XDP metadata another program on the port
 * left behind is not the switch's.
 */
struct esa_fan_meta {
	__u32	magic;		/* ESA_FAN_MAGIC */
	__u32	reg;		/* the job's registration */
	__u16	job;
	__u8	ps_copy;	/* the PS gets a copy too */
	__u8	resv;
	__u32	resv2;
	__u64	cookie;		/* esa_cfg.cookie */
};

#endif /* _ESA_MAPS_H */
