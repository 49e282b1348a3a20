/* SPDX-License-Identifier: GPL-2.0 */
/* Where a member of a job lives, as registration words may give it. */
#ifndef ESA_PLACE_H
#define ESA_PLACE_H

#include <stdbool.h>
#include <linux/types.h>
#include <linux/esa.h>

/*
 * Where a member of a job (a rank, or its PS) is: the switch port it is
 * behind and, if given, its MAC.  What is not given is resolved (the port,
 * from the routing table) or learnt by the data path from the member's
 * first packet (the MAC).
 */
struct esa_place {
	int	ifindex;	/* 0: not given */
	__u8	mac[6];
	bool	have_mac;
};

/* The places of a job's members: ranks 0..63, the PS, a leaf's spine. */
#define ESA_PLACE_PS	ESA_MAX_WORKERS
#define ESA_PLACE_UP	(ESA_MAX_WORKERS + 1)
#define ESA_PLACES	(ESA_MAX_WORKERS + 2)

#endif /* ESA_PLACE_H */
