/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * esa_nl: a client of esa.ko's generic netlink family "esa" (the API is
 * documented in include/uapi/linux/esa.h and kmod/esa.yaml).
 *
 * Calls return 0 or a negative errno.  When the kernel explained a failure
 * (extended ACK), esa_nl_error() returns its message until the next call;
 * for a missing attribute it names the attribute ("missing attribute
 * ESA_JOB_A_ID").  A handle serves one thread at a time; a handle that has
 * joined the events group should be kept for esa_nl_monitor(), since the
 * requests of a joined handle drop the events they read.
 */
#ifndef ESA_NL_H
#define ESA_NL_H

#include <stddef.h>
#include <linux/types.h>
#include "esa_maps.h"	/* struct esa_job: a registration */

struct esa_nl;

/* What the registry knows beyond the registration. */
struct esa_nl_job_info {
	__u32	idle_ms;	/* since the job's last packet, or its add */
	__u8	expired;	/* its lease ran out, no packet since */
	__u32	reg;		/* registration: the generation when added */
};

struct esa_nl_counters {
	__u64	adds, deletes, expiries, reclaims;
	__u64	foreign;	/* totals only: see ESA_CTR_A_FOREIGN */
};

struct esa_nl_event {
	__u8	cmd;		/* ESA_CMD_JOB_ADDED .. ESA_CMD_JOB_CHANGED */
	__u32	id;
	__u32	gen;		/* see the UAPI header, per event */
	/* ESA_CMD_JOB_ADDED and ESA_CMD_JOB_CHANGED only, else NULL: */
	const struct esa_job *job;
	const struct esa_nl_job_info *info;
};

/* Return non-zero to stop a dump or a monitor; that value is returned. */
typedef int (*esa_nl_job_cb)(__u32 id, const struct esa_job *j,
			     const struct esa_nl_job_info *info, void *arg);
typedef int (*esa_nl_event_cb)(const struct esa_nl_event *ev, void *arg);

/* -ENOENT when esa.ko is not loaded. */
int esa_nl_open(struct esa_nl **nl);
void esa_nl_close(struct esa_nl *nl);

/*
 * The XDP features of device ifindex (NETDEV_XDP_ACT_*, the kernel's
 * "netdev" family); -ENOENT on a kernel that does not report them (before
 * 6.3).
 */
#define ESA_XDP_ACT_NDO_XMIT	(1ULL << 2)	/* takes XDP redirects */
int esa_nl_xdp_features(int ifindex, __u64 *features);
/* The kernel's explanation of the last failure, or NULL if it gave none. */
const char *esa_nl_error(const struct esa_nl *nl);
/* For poll(2); and a receive timeout for every later call (0: none). */
int esa_nl_fd(const struct esa_nl *nl);
int esa_nl_set_timeout(struct esa_nl *nl, unsigned int ms);

/*
 * Register job id with j's workers (rank[0 .. nworkers - 1]), ps, max_prio,
 * lease_ms, region_base and region_size; the other fields are ignored.
 */
int esa_nl_job_add(struct esa_nl *nl, __u32 id, const struct esa_job *j);
int esa_nl_job_del(struct esa_nl *nl, __u32 id);
/* Fills j (state ESA_JOB_ACTIVE, last_active_ns 0) and info if not NULL. */
int esa_nl_job_get(struct esa_nl *nl, __u32 id, struct esa_job *j,
		   struct esa_nl_job_info *info);
/*
 * Every job, in id order.  -EINTR when jobs were added, deleted or changed
 * while the dump was read (after cb saw part of it): run it again.
 */
int esa_nl_job_dump(struct esa_nl *nl, esa_nl_job_cb cb, void *arg);
int esa_nl_job_set_prio(struct esa_nl *nl, __u32 id, __u8 max_prio);
/* Totals of the namespace; with id >= 0 also that id's counters in job. */
int esa_nl_counters(struct esa_nl *nl, int id, struct esa_nl_counters *totals,
		    struct esa_nl_counters *job);

/* Join the "events" group (esa_nl_monitor() does it if needed). */
int esa_nl_join_events(struct esa_nl *nl);
/* Deliver events to cb until it returns non-zero, or an error (-EAGAIN
 * after the timeout of esa_nl_set_timeout()).
 */
int esa_nl_monitor(struct esa_nl *nl, esa_nl_event_cb cb, void *arg);

/*
 * Send command cmd with the given attribute bytes as they are (for tests
 * and debugging: nothing is checked) and wait for the kernel's answer.
 */
int esa_nl_raw(struct esa_nl *nl, __u8 cmd, const void *attrs, size_t len);
/* The same as a dump request (NLM_F_DUMP); the messages are not parsed. */
int esa_nl_raw_dump(struct esa_nl *nl, __u8 cmd, const void *attrs,
		    size_t len);

/*
 * "ESA_JOB_A_ID", ... for an attribute type; nested: the type of the nest
 * it is in (ESA_JOB_A_LEAVES: a leaf's attributes; another: an address's).
 */
const char *esa_nl_attr_name(int type, int nested);

#endif /* ESA_NL_H */
