// SPDX-License-Identifier: GPL-2.0
/*
 * registry.c - the job registry of each network namespace.
 *
 * Jobs follow the rules of the map path (struct esa_job in the UAPI header):
 * a switch slot belongs to a (job, generation), and a job's generation is
 * bumped when it is added, deleted and when its lease runs out, which frees
 * all the job's slots at once, without a scan.  Here the lease is enforced
 * twice, with the same result: by a delayed work per job, which expires a
 * silent job on time, and by the data path, which opens the new generation
 * itself when a packet finds the lease over before that work ran.  A
 * generation change happens under the job's lock, and the events it causes
 * are sent under it too, so that user space sees them in the order they
 * happened; the data path reads everything else without locks, under RCU.
 *
 * A namespace pays for its registry only once a job is added there, and
 * the registry and every job are charged to the memory cgroup of the
 * process that adds them.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/random.h>
#include <linux/slab.h>
#include <linux/jiffies.h>
#include <net/netns/generic.h>
#include "registry.h"
#include "netlink.h"

unsigned int esa_net_id;

/* Charged to the caller's memory cgroup; ENOMEM rather than an OOM kill. */
#define ESA_GFP	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN)

static void esa_ctr_inc(struct esa_kjob *j, enum esa_ctr c)
{
	atomic64_inc(&j->idst->ctrs[c]);
	atomic64_inc(&j->en->totals[c]);
}

/* Jiffies from now until the lease of j runs out, at least one. */
static unsigned long esa_lease_delay(const struct esa_kjob *j, u64 now)
{
	u64 end = READ_ONCE(j->last_active_ns) +
		  (u64)j->lease_ms * NSEC_PER_MSEC;
	s64 left = end - now;

	if (left <= 0)
		return 1;
	return msecs_to_jiffies(div_u64(left, NSEC_PER_MSEC)) + 1;
}

/*
 * A change that a dump in progress must report (NLM_F_DUMP_INTR): an add,
 * a delete, a priority set, an expiry.  From any context.
 */
static void esa_changed(struct esa_net *en)
{
	/* 0 would mean "no sequence" to nl_dump_check_consistent(). */
	while (!atomic_inc_return(&en->dump_seq))
		;
}

/*
 * Retire the current generation of j: every slot stamped with it becomes
 * free to all.  Tells the namespace's listeners at once (notify), in this
 * order: EXPIRED with the new generation or DELETED with the old one, then
 * RECLAIMED if the old one admitted packets.  A dump in progress sees it
 * as a change.
 */
static void esa_job_retire(struct esa_kjob *j, bool expiry, bool notify)
{
	u32 old = j->gen;

	lockdep_assert_held(&j->lock);
	WRITE_ONCE(j->gen, old + 1);
	esa_changed(j->en);
	if (expiry) {
		esa_ctr_inc(j, ESA_CTR_EXPIRIES);
		if (notify)
			esa_notify(j->en, ESA_CMD_JOB_EXPIRED, j->id, old + 1);
	} else if (notify) {
		esa_notify(j->en, ESA_CMD_JOB_DELETED, j->id, old);
	}
	if (j->used_gen == old) {
		esa_ctr_inc(j, ESA_CTR_RECLAIMS);
		if (notify)
			esa_notify(j->en, ESA_CMD_JOB_RECLAIMED, j->id, old);
	}
}

static void esa_lease_work(struct work_struct *work)
{
	struct esa_kjob *j = container_of(to_delayed_work(work),
					 struct esa_kjob, lease_work);
	u64 now = ktime_get_coarse_ns();

	spin_lock_bh(&j->lock);
	if (!j->dead && !j->expired) {
		if (esa_lease_over(j->lease_ms, READ_ONCE(j->last_active_ns),
				   now)) {
			esa_job_retire(j, true, true);
			WRITE_ONCE(j->expired, true);
		} else {
			mod_delayed_work(system_wq, &j->lease_work,
					 esa_lease_delay(j, now));
		}
	}
	spin_unlock_bh(&j->lock);
}

/*
 * Slow path of esa_job_activity(), under the job's lock.  If the job's
 * lease has run out, either the lease work has expired it already, and this
 * packet simply goes on in the new generation, or it has not yet, and the
 * packet expires it here; either way the lease starts again.  Then the
 * packet's generation is marked used, so that its retirement is reported.
 * A job deleted since the packet found it admits nothing: ESA_C_DROP_JOB.
 */
int esa_job_slow(struct esa_kjob *j, u64 now, u32 *gen)
{
	int ret = ESA_C_DROP_JOB;

	spin_lock_bh(&j->lock);
	if (!j->dead) {
		ret = 0;
		if (j->expired ||
		    esa_lease_over(j->lease_ms, READ_ONCE(j->last_active_ns),
				   now)) {
			if (!j->expired)
				esa_job_retire(j, true, true);
			WRITE_ONCE(j->expired, false);
			WRITE_ONCE(j->last_active_ns, now);
			mod_delayed_work(system_wq, &j->lease_work,
					 esa_lease_delay(j, now));
			ret = ESA_C_EXPIRED;
		}
		WRITE_ONCE(j->used_gen, j->gen);
	}
	*gen = j->gen;
	spin_unlock_bh(&j->lock);
	return ret;
}

struct esa_reg *esa_reg_locked(struct esa_net *en)
{
	return rcu_dereference_protected(en->reg, lockdep_is_held(&en->lock));
}

struct esa_kjob *esa_job_locked(struct esa_net *en, u32 id)
{
	struct esa_reg *reg = esa_reg_locked(en);

	return reg ? rcu_dereference_protected(reg->jobs[id],
					       lockdep_is_held(&en->lock)) :
		     NULL;
}

/* The namespace's registry, allocated (and charged) on first use. */
static struct esa_reg *esa_reg_get(struct esa_net *en)
{
	struct esa_reg *reg = esa_reg_locked(en);
	u32 id;

	if (reg)
		return reg;
	reg = kvzalloc(struct_size(reg, jobs, esa_max_jobs) +
		       esa_max_jobs * sizeof(*reg->ids), ESA_GFP);
	if (!reg)
		return NULL;
	/* jobs[] is of pointers: ids[] after it is aligned for its u64s */
	reg->ids = (void *)&reg->jobs[esa_max_jobs];
	/* Not from 1: slots may outlive a module (pinned maps). */
	for (id = 0; id < esa_max_jobs; id++)
		reg->ids[id].gen = get_random_u32();
	rcu_assign_pointer(en->reg, reg);
	return reg;
}

static struct esa_kjob *esa_job_new(const struct esa_job_cfg *cfg, u32 gen)
{
	struct esa_kjob *j = kzalloc(sizeof(*j), ESA_GFP);

	if (!j)
		return NULL;
	j->gen = gen;
	j->reg = gen;
	j->used_gen = gen - 1;
	j->last_active_ns = ktime_get_coarse_ns();
	j->lease_ms = cfg->lease_ms;
	j->region_base = cfg->region_base;
	j->region_size = cfg->region_size;
	j->nworkers = cfg->nworkers;
	j->max_prio = cfg->max_prio;
	j->ps = cfg->ps;
	j->up = cfg->up;
	j->mask = cfg->mask;
	memcpy(j->rank, cfg->rank, sizeof(j->rank));
	memcpy(j->set, cfg->set, sizeof(j->set));
	spin_lock_init(&j->lock);
	INIT_DELAYED_WORK(&j->lease_work, esa_lease_work);
	j->id = cfg->id;
	return j;
}

/* Returns 0, -EEXIST, or -ENOMEM (the caller's memory cgroup is full). */
int esa_job_add(struct esa_net *en, const struct esa_job_cfg *cfg)
{
	struct esa_reg *reg;
	struct esa_kjob *j;

	lockdep_assert_held(&en->lock);
	if (esa_job_locked(en, cfg->id))
		return -EEXIST;
	reg = esa_reg_get(en);
	if (!reg)
		return -ENOMEM;
	j = esa_job_new(cfg, reg->ids[cfg->id].gen + 1);
	if (!j)
		return -ENOMEM;
	reg->ids[cfg->id].gen = j->gen;
	j->en = en;
	j->idst = &reg->ids[cfg->id];
	/* Announced before anything else can happen to it. */
	esa_notify_job(en, j, ESA_CMD_JOB_ADDED, GFP_KERNEL);
	rcu_assign_pointer(reg->jobs[cfg->id], j);
	if (j->lease_ms)
		queue_delayed_work(system_wq, &j->lease_work,
				   esa_lease_delay(j, j->last_active_ns));
	esa_ctr_inc(j, ESA_CTR_ADDS);
	esa_changed(en);
	return 0;
}

/* Under the job's lock, so that its events keep the order of its changes. */
void esa_job_set_prio(struct esa_net *en, struct esa_kjob *j, u8 max_prio)
{
	lockdep_assert_held(&en->lock);
	spin_lock_bh(&j->lock);
	WRITE_ONCE(j->max_prio, max_prio);
	esa_notify_job(en, j, ESA_CMD_JOB_CHANGED, GFP_ATOMIC);
	spin_unlock_bh(&j->lock);
	esa_changed(en);
}

/*
 * Unpublish j, retire its generation (telling user space if notify) and
 * stop its timer.  Packets already past the lookup see it dead, or in a
 * generation that no longer owns anything; it is freed after a grace
 * period.
 */
static void esa_job_unlink(struct esa_net *en, struct esa_kjob *j,
			   bool notify)
{
	struct esa_reg *reg = esa_reg_locked(en);

	RCU_INIT_POINTER(reg->jobs[j->id], NULL);
	spin_lock_bh(&j->lock);
	WRITE_ONCE(j->dead, true);
	esa_job_retire(j, false, notify);
	j->idst->gen = j->gen;
	spin_unlock_bh(&j->lock);
	/* The work does nothing, and does not rearm, once the job is dead. */
	cancel_delayed_work_sync(&j->lease_work);
}

int esa_job_del(struct esa_net *en, u32 id)
{
	struct esa_kjob *j = esa_job_locked(en, id);

	lockdep_assert_held(&en->lock);
	if (!j)
		return -ENOENT;
	esa_job_unlink(en, j, true);
	esa_ctr_inc(j, ESA_CTR_DELETES);
	esa_changed(en);
	kfree_rcu(j, rcu);
	return 0;
}

static int __net_init esa_net_init(struct net *net)
{
	struct esa_net *en = esa_net(net);

	mutex_init(&en->lock);
	en->net = net;
	atomic_set(&en->dump_seq, 1);
	return 0;
}

/*
 * The namespace is going away, or the module.  No netlink caller can reach
 * it, and no XDP program should look it up: a program that uses the kfuncs
 * holds the module, and the namespace's devices were unregistered (with a
 * grace period) before subsystems exit.  Drop the jobs without events, and
 * free the registry after a grace period all the same, as every RCU
 * reader's memory is: nothing here relies on there being none.
 */
static void __net_exit esa_net_exit(struct net *net)
{
	struct esa_net *en = esa_net(net);
	struct esa_reg *reg;
	struct esa_kjob *j;
	u32 id;

	mutex_lock(&en->lock);
	reg = esa_reg_locked(en);
	for (id = 0; reg && id < esa_max_jobs; id++) {
		j = esa_job_locked(en, id);
		if (!j)
			continue;
		esa_job_unlink(en, j, false);
		kfree_rcu(j, rcu);
	}
	RCU_INIT_POINTER(en->reg, NULL);
	mutex_unlock(&en->lock);
	if (reg)
		kvfree_rcu(reg, rcu);
}

static struct pernet_operations esa_net_ops = {
	.init = esa_net_init,
	.exit = esa_net_exit,
	.id = &esa_net_id,
	.size = sizeof(struct esa_net),
};

int esa_registry_init(void)
{
	return register_pernet_subsys(&esa_net_ops);
}

void esa_registry_exit(void)
{
	unregister_pernet_subsys(&esa_net_ops);
}
