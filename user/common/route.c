// SPDX-License-Identifier: GPL-2.0
/*
 * Which port the box reaches an address through, and the route's MTU if it
 * has one: one RTM_GETROUTE, as `ip route get ADDR` asks it.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "loader.h"

struct esa_rtreq {
	struct nlmsghdr	nh;
	struct rtmsg	rt;
	struct rtattr	dst;
	__be32		ip;
};

/* RTAX_MTU of a route's RTA_METRICS, or 0. */
static __u32 esa_route_mtu(const struct rtattr *metrics)
{
	const struct rtattr *a;
	int alen = RTA_PAYLOAD(metrics);
	__u32 mtu = 0;

	for (a = RTA_DATA(metrics); RTA_OK(a, alen); a = RTA_NEXT(a, alen))
		if (a->rta_type == RTAX_MTU && RTA_PAYLOAD(a) >= sizeof(mtu))
			memcpy(&mtu, RTA_DATA(a), sizeof(mtu));
	return mtu;
}

/* The route in the answer h: its output device, type and MTU. */
static int esa_route_parse(const struct nlmsghdr *h, int n, int *ifindex,
			   bool *local, __u32 *mtu)
{
	const struct rtmsg *rt;
	const struct rtattr *a;
	int alen;

	if (!NLMSG_OK(h, n))
		return -EBADMSG;
	if (h->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(h);

		return e->error ? e->error : -EBADMSG;
	}
	if (h->nlmsg_type != RTM_NEWROUTE)
		return -EBADMSG;
	rt = NLMSG_DATA(h);
	*local = rt->rtm_type == RTN_LOCAL;
	alen = RTM_PAYLOAD(h);
	for (a = RTM_RTA(rt); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
		if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) >= sizeof(int))
			memcpy(ifindex, RTA_DATA(a), sizeof(int));
		else if (a->rta_type == RTA_METRICS)
			*mtu = esa_route_mtu(a);
	}
	return *ifindex || *local ? 0 : -ENETUNREACH;
}

int esa_route_dev(__be32 ip, int *ifindex, bool *local, __u32 *mtu)
{
	struct esa_rtreq req = {
		.nh = {
			.nlmsg_len = sizeof(req),
			.nlmsg_type = RTM_GETROUTE,
			.nlmsg_flags = NLM_F_REQUEST,
			.nlmsg_seq = 1,
		},
		.rt = { .rtm_family = AF_INET, .rtm_dst_len = 32 },
		.dst = { .rta_len = RTA_LENGTH(sizeof(ip)), .rta_type = RTA_DST },
		.ip = ip,
	};
	char buf[4096] __attribute__((aligned(4)));
	int fd, n, rc;

	*ifindex = 0;
	*local = false;
	*mtu = 0;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (send(fd, &req, sizeof(req), 0) != sizeof(req)) {
		rc = -errno;
	} else {
		n = recv(fd, buf, sizeof(buf), 0);
		rc = n < 0 ? -errno :
		     esa_route_parse((const struct nlmsghdr *)buf, n, ifindex, local,
				     mtu);
	}
	close(fd);
	return rc;
}
