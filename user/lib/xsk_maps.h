/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The maps of esa_xsk.bpf.c, shared with xsk.c. */
#ifndef ESA_XSK_MAPS_H
#define ESA_XSK_MAPS_H

#include <linux/types.h>

/* AF_XDP sockets one process can steer to on one interface. */
#define ESA_XSK_SLOTS	64

/* A steered address: destination IPv4 address and UDP port. */
struct esa_xsk_key {
	__be32	addr;
	__be16	port;
	__u16	pad;
};

/* Where to: the socket's slot in xsks_map, and the queue it is bound to. */
struct esa_xsk_val {
	__u32	slot;
	__u32	queue;
};

#endif /* ESA_XSK_MAPS_H */
