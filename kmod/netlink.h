/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _ESA_NETLINK_H
#define _ESA_NETLINK_H

#include "registry.h"

int esa_genl_init(void);
void esa_genl_exit(void);

/*
 * Events to the "events" group of en's namespace: the whole job
 * (ESA_CMD_JOB_ADDED, ESA_CMD_JOB_CHANGED), or an id and a generation
 * (atomic: under the job's lock).
 */
void esa_notify_job(struct esa_net *en, struct esa_kjob *j, u8 cmd,
		    gfp_t gfp);
void esa_notify(struct esa_net *en, u8 cmd, u32 id, u32 gen);

/* The job id a request names (netlink_jobs.c), or an error in its extack. */
struct genl_info;
int esa_nl_job_id(struct genl_info *info, u32 *id);

#endif /* _ESA_NETLINK_H */
