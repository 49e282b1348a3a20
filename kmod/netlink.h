/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _ESA_NETLINK_H
#define _ESA_NETLINK_H

#include "registry.h"

int esa_genl_init(void);
void esa_genl_exit(void);

/* Events to the "events" group of en's namespace, from process context. */
void esa_notify_job(struct esa_net *en, const struct esa_kjob *j);
void esa_notify(struct esa_net *en, u8 cmd, u32 id, u32 gen);

#endif /* _ESA_NETLINK_H */
