// SPDX-License-Identifier: GPL-2.0
/*
 * registry.c - the job registry of each network namespace.
 *
 * Jobs follow the rules of the map path (struct esa_job in the UAPI header):
 * a switch slot belongs to a (job, generation), and a job's generation is
 * bumped when it is added, deleted and when its lease runs out, which frees
 * all the job's slots at once, without a scan.  Here the lease is enforced
 * twice, with the same result: by a delayed work per job, which expires a
 * silent job on time and tells user space, and by the data path, which
 * opens the new generation itself when a packet finds the lease over before
 * that work ran.  A generation change happens under the job's lock; the
 * data path reads everything else without locks, under RCU.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/random.h>
#include <linux/slab.h>
#include <linux/jiffies.h>
#include <linux/timekeeping.h>
#include <net/netns/generic.h>
#include "registry.h"
#include "netlink.h"

unsigned int esa_net_id;

static void esa_ctr_inc(struct esa_net *en, u32 id, enum esa_ctr c)
{
	atomic64_inc(&en->ids[id].ctrs.c[c]);
	atomic64_inc(&en->totals.c[c]);
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
 * Retire the current generation of j: every slot stamped with it becomes
 * free to all.  The events this owes are sent later, from process context.
 */
static void esa_job_retire(struct esa_kjob *j, bool expiry)
{
	u32 old = j->gen;

	lockdep_assert_held(&j->lock);
	WRITE_ONCE(j->gen, old + 1);
	if (expiry) {
		esa_ctr_inc(j->en, j->id, ESA_CTR_EXPIRIES);
		j->ev.expired = true;
		j->ev.expired_gen = old + 1;
	}
	if (READ_ONCE(j->used_gen) == old) {
		esa_ctr_inc(j->en, j->id, ESA_CTR_RECLAIMS);
		j->ev.reclaimed = true;
		j->ev.reclaimed_gen = old;
	}
}

static struct esa_job_events esa_job_take_events(struct esa_kjob *j)
{
	struct esa_job_events ev = j->ev;

	lockdep_assert_held(&j->lock);
	memset(&j->ev, 0, sizeof(j->ev));
	return ev;
}

static void esa_job_send_events(struct esa_kjob *j,
				const struct esa_job_events *ev, bool deleted,
				u32 deleted_gen)
{
	if (ev->expired)
		esa_notify(j->en, ESA_CMD_JOB_EXPIRED, j->id, ev->expired_gen);
	if (deleted)
		esa_notify(j->en, ESA_CMD_JOB_DELETED, j->id, deleted_gen);
	if (ev->reclaimed)
		esa_notify(j->en, ESA_CMD_JOB_RECLAIMED, j->id,
			   ev->reclaimed_gen);
}

static void esa_lease_work(struct work_struct *work)
{
	struct esa_kjob *j = container_of(to_delayed_work(work),
					 struct esa_kjob, lease_work);
	u64 now = ktime_get_coarse_ns();
	struct esa_job_events ev;

	spin_lock_bh(&j->lock);
	if (j->dead) {
		/* esa_job_del() sends what is owed. */
		spin_unlock_bh(&j->lock);
		return;
	}
	if (!j->expired) {
		if (esa_lease_over(j->lease_ms, j->last_active_ns, now)) {
			esa_job_retire(j, true);
			WRITE_ONCE(j->expired, true);
		} else {
			mod_delayed_work(system_wq, &j->lease_work,
					 esa_lease_delay(j, now));
		}
	}
	ev = esa_job_take_events(j);
	spin_unlock_bh(&j->lock);
	esa_job_send_events(j, &ev, false, 0);
}

/*
 * Slow path of esa_job_activity(): the job's lease has run out.  Either the
 * lease work has expired it already, and this packet simply goes on in the
 * new generation, or it has not yet, and the packet expires it here (the
 * work then reports it).  Either way the lease starts again.
 */
int esa_job_renew(struct esa_kjob *j, u64 now, u32 *gen)
{
	int ret = 0;

	spin_lock_bh(&j->lock);
	if (!j->dead && (j->expired ||
			 esa_lease_over(j->lease_ms, j->last_active_ns, now))) {
		bool owed = !j->expired;

		if (owed)
			esa_job_retire(j, true);
		WRITE_ONCE(j->expired, false);
		WRITE_ONCE(j->last_active_ns, now);
		mod_delayed_work(system_wq, &j->lease_work,
				 owed ? 0 : esa_lease_delay(j, now));
		ret = ESA_C_EXPIRED;
	}
	*gen = j->gen;
	spin_unlock_bh(&j->lock);
	return ret;
}

struct esa_kjob *esa_job_locked(struct esa_net *en, u32 id)
{
	return rcu_dereference_protected(en->jobs[id],
					 lockdep_is_held(&en->lock));
}

int esa_job_add(struct esa_net *en, const struct esa_job_cfg *cfg)
{
	struct esa_id_state *ids = &en->ids[cfg->id];
	struct esa_kjob *j;

	lockdep_assert_held(&en->lock);
	if (WARN_ON_ONCE(esa_job_locked(en, cfg->id)))
		return -EEXIST;
	j = kzalloc(sizeof(*j), GFP_KERNEL);
	if (!j)
		return -ENOMEM;
	j->gen = ++ids->gen;
	j->used_gen = j->gen - 1;
	j->last_active_ns = ktime_get_coarse_ns();
	j->lease_ms = cfg->lease_ms;
	j->region_base = cfg->region_base;
	j->region_size = cfg->region_size;
	j->nworkers = cfg->nworkers;
	j->max_prio = cfg->max_prio;
	j->ps = cfg->ps;
	memcpy(j->rank, cfg->rank, sizeof(j->rank));
	spin_lock_init(&j->lock);
	INIT_DELAYED_WORK(&j->lease_work, esa_lease_work);
	j->en = en;
	j->id = cfg->id;

	rcu_assign_pointer(en->jobs[cfg->id], j);
	if (j->lease_ms)
		queue_delayed_work(system_wq, &j->lease_work,
				   esa_lease_delay(j, j->last_active_ns));
	esa_ctr_inc(en, cfg->id, ESA_CTR_ADDS);
	esa_notify_job(en, j);
	return 0;
}

/*
 * Unpublish j and stop its timer.  Packets already past the lookup see it
 * dead, or in a generation that no longer owns anything; it is freed after
 * a grace period.
 */
static struct esa_job_events esa_job_unlink(struct esa_net *en,
					    struct esa_kjob *j, u32 *gen)
{
	struct esa_job_events ev;

	RCU_INIT_POINTER(en->jobs[j->id], NULL);
	spin_lock_bh(&j->lock);
	WRITE_ONCE(j->dead, true);
	*gen = j->gen;
	esa_job_retire(j, false);
	en->ids[j->id].gen = j->gen;
	spin_unlock_bh(&j->lock);
	/* The work does not rearm itself once the job is dead. */
	cancel_delayed_work_sync(&j->lease_work);
	spin_lock_bh(&j->lock);
	ev = esa_job_take_events(j);
	spin_unlock_bh(&j->lock);
	return ev;
}

int esa_job_del(struct esa_net *en, u32 id)
{
	struct esa_kjob *j = esa_job_locked(en, id);
	struct esa_job_events ev;
	u32 gen;

	lockdep_assert_held(&en->lock);
	if (!j)
		return -ENOENT;
	ev = esa_job_unlink(en, j, &gen);
	esa_ctr_inc(en, id, ESA_CTR_DELETES);
	esa_job_send_events(j, &ev, true, gen);
	kfree_rcu(j, rcu);
	return 0;
}

static int __net_init esa_net_init(struct net *net)
{
	struct esa_net *en = esa_net(net);
	u32 id;

	en->jobs = kvcalloc(esa_max_jobs, sizeof(*en->jobs), GFP_KERNEL);
	en->ids = kvcalloc(esa_max_jobs, sizeof(*en->ids), GFP_KERNEL);
	if (!en->jobs || !en->ids) {
		kvfree(en->jobs);
		kvfree(en->ids);
		return -ENOMEM;
	}
	/* Not from 1: slots may outlive a module (pinned maps). */
	for (id = 0; id < esa_max_jobs; id++)
		en->ids[id].gen = get_random_u32();
	mutex_init(&en->lock);
	en->net = net;
	return 0;
}

/*
 * The namespace is going away, or the module.  No netlink caller can reach
 * it, and no XDP program can look it up: a program that uses the kfuncs
 * holds the module, and the namespace's devices were unregistered (with a
 * grace period) before subsystems exit.  Drop the jobs without events.
 */
static void __net_exit esa_net_exit(struct net *net)
{
	struct esa_net *en = esa_net(net);
	struct esa_kjob *j;
	u32 id, gen;

	mutex_lock(&en->lock);
	for (id = 0; id < esa_max_jobs; id++) {
		j = esa_job_locked(en, id);
		if (!j)
			continue;
		esa_job_unlink(en, j, &gen);
		kfree_rcu(j, rcu);
	}
	mutex_unlock(&en->lock);
	kvfree(en->jobs);
	kvfree(en->ids);
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
