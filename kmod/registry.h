/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The job registry: one per network namespace, an RCU-protected array of
 * jobs indexed by job id, allocated when the namespace's first job is
 * added, read by the data path through the kfuncs and changed by generic
 * netlink commands and by the jobs' lease timers.
 */
#ifndef _ESA_REGISTRY_H
#define _ESA_REGISTRY_H

#include <linux/types.h>
#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/timekeeping.h>
#include <linux/workqueue.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <uapi/linux/esa.h>

/* Counters of a job id; the namespace's totals have FOREIGN too. */
enum esa_ctr {
	ESA_CTR_ADDS,
	ESA_CTR_DELETES,
	ESA_CTR_EXPIRIES,
	ESA_CTR_RECLAIMS,
	ESA_CTR_ID_NUM,
	ESA_CTR_FOREIGN = ESA_CTR_ID_NUM,
	ESA_CTR_NUM,
};

struct esa_net;
struct esa_id_state;

struct esa_kjob {
	/* Read by every packet: kept together at the start. */
	u32	gen;		/* written under lock */
	u32	used_gen;	/* last generation that admitted a packet; lock */
	u64	last_active_ns;	/* ktime_get_coarse_ns() of the last stamp */
	u32	lease_ms;
	u32	reg;		/* gen when added: the registration */
	u32	region_base;
	u32	region_size;
	u8	nworkers;	/* the job's ranks, here or not */
	u8	max_prio;	/* changed by ESA_CMD_JOB_SET */
	bool	expired;	/* lease ran out, no packet since; lock */
	bool	dead;		/* deleted: RCU readers may still see it */
	struct esa_addr ps;
	struct esa_addr up;	/* two levels: a leaf's spine; ip 0: none */
	u64	mask;		/* the ranks this box sums */
	/* Members by rank: ip 0 for none; set[r] a leaf's ranks, 0 a worker */
	struct esa_addr rank[ESA_MAX_WORKERS];
	u64	set[ESA_MAX_WORKERS];

	/* Control: generation changes and the lease timer. */
	spinlock_t lock;
	struct delayed_work lease_work;
	struct esa_net *en;
	struct esa_id_state *idst;	/* the id's generation, counters */
	u32	id;
	struct rcu_head rcu;
};

/* What ESA_CMD_JOB_ADD asks for, once validated. */
struct esa_job_cfg {
	u32	id;
	u32	lease_ms;
	u32	region_base;
	u32	region_size;
	u8	nworkers;
	u8	max_prio;
	struct esa_addr ps;
	struct esa_addr up;
	u64	mask;
	struct esa_addr rank[ESA_MAX_WORKERS];
	u64	set[ESA_MAX_WORKERS];
};

/* Per job id: survives delete and re-add, like the map's entries. */
struct esa_id_state {
	u32	gen;		/* last generation handed out; en->lock */
	atomic64_t ctrs[ESA_CTR_ID_NUM];
};

/*
 * A namespace's jobs, allocated on first use and kept until it goes: one
 * allocation, ids[] after jobs[], freed after a grace period (RCU readers
 * reach ids[] through a job).
 */
struct esa_reg {
	struct rcu_head rcu;
	struct esa_id_state *ids;		/* [esa_max_jobs], below */
	struct esa_kjob __rcu *jobs[];		/* [esa_max_jobs] */
};

struct esa_net {
	struct esa_reg __rcu *reg;	/* NULL until the first add */
	struct net *net;
	struct mutex lock;		/* serialises registry changes */
	atomic_t dump_seq;		/* bumped by every change, expiries
					 * too (any context); never 0
					 */
	atomic64_t totals[ESA_CTR_NUM];
};

extern unsigned int esa_max_jobs;
extern unsigned int esa_net_id;

static inline struct esa_net *esa_net(const struct net *net)
{
	return net_generic(net, esa_net_id);
}

/*
 * esa_net() for the data path, already in an RCU (or BH) read section:
 * net_generic() without its own rcu_read_lock(), which is two calls out of
 * line per packet with preemptible RCU.
 */
static inline struct esa_net *esa_net_rcu(const struct net *net)
{
	const struct net_generic *ng;

	ng = rcu_dereference_check(net->gen, rcu_read_lock_bh_held());
	return ng->ptr[esa_net_id];
}

/* The job registered as id, or NULL: in an RCU (or BH) read section. */
static inline struct esa_kjob *esa_job_rcu(const struct esa_net *en, u32 id)
{
	struct esa_reg *reg;
	struct esa_kjob *j;

	if (id >= esa_max_jobs)
		return NULL;
	reg = rcu_dereference_check(en->reg, rcu_read_lock_bh_held());
	if (!reg)
		return NULL;
	j = rcu_dereference_check(reg->jobs[id], rcu_read_lock_bh_held());
	return j && !READ_ONCE(j->dead) ? j : NULL;
}

static inline bool esa_lease_over(u32 lease_ms, u64 last, u64 now)
{
	return lease_ms && (s64)(now - last) > (s64)lease_ms * NSEC_PER_MSEC;
}

/* Control plane: under en->lock. */
struct esa_reg *esa_reg_locked(struct esa_net *en);
int esa_job_add(struct esa_net *en, const struct esa_job_cfg *cfg);
int esa_job_del(struct esa_net *en, u32 id);
void esa_job_set_prio(struct esa_net *en, struct esa_kjob *j, u8 max_prio);
struct esa_kjob *esa_job_locked(struct esa_net *en, u32 id);

/* Data path: in an RCU read section, any context. */
int esa_job_slow(struct esa_kjob *j, u64 now, u32 *gen);

/* The data path stamps a job's activity at most this often. */
#define ESA_STAMP_NS	NSEC_PER_MSEC

/*
 * A packet of j was admitted: stamp the job's activity (at most one write
 * a millisecond, whatever the packet rate and CPU count) and give the
 * generation the packet belongs to.  The time is the module's, never the
 * program's.  The first packet of a generation, and the first after the
 * lease ran out, take the job's lock (esa_job_slow()), so that a
 * generation retired while packets use it is always known to have been
 * used.  Returns ESA_C_EXPIRED for the first packet after an expiry,
 * ESA_C_DROP_JOB if the job was deleted meanwhile, else 0.
 */
static inline int esa_job_activity(struct esa_kjob *j, u32 *gen)
{
	u64 now = ktime_get_coarse_ns();
	u64 last = READ_ONCE(j->last_active_ns);

	*gen = READ_ONCE(j->gen);
	if (unlikely(READ_ONCE(j->expired) ||
		     esa_lease_over(j->lease_ms, last, now) ||
		     READ_ONCE(j->used_gen) != *gen))
		return esa_job_slow(j, now, gen);
	if ((s64)(now - last) > ESA_STAMP_NS)
		WRITE_ONCE(j->last_active_ns, now);
	return 0;
}

/* Does generation gen of j still own its slots? */
static inline bool esa_job_alive(const struct esa_kjob *j, u32 gen)
{
	return READ_ONCE(j->gen) == gen &&
	       !esa_lease_over(j->lease_ms, READ_ONCE(j->last_active_ns),
			       ktime_get_coarse_ns());
}

int esa_registry_init(void);
void esa_registry_exit(void);

#endif /* _ESA_REGISTRY_H */
