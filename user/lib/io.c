// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libesa: the transport.  Opens the one the config asks for (io = udp,
 * xdp, auto) in the configured network namespace, once the path to the
 * switch is known to carry a whole packet, and hands each esa_io_*() call
 * to it: UDP (udp.c), AF_XDP (io_xsk.c, with udp.c's unconnected socket
 * beside it), and the emulated link delay in front of UDP (delay.c).  Owns
 * the packets' memory on UDP (w->pktmem) and w->io_desc.  The transport
 * hands what arrives up to the engine through w->rx only: it calls nothing
 * above it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "esa_int.h"
#include "xsk.h"

/* Enter netns (if any) for the calling thread; *back: the fd to return. */
static int enter_netns(const char *path, int *back, char *err, size_t len)
{
	int tgt, e;

	*back = -1;
	if (!path[0])
		return 0;
	*back = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (*back < 0)
		return esa_sock_fail(err, len, "cannot open this thread's netns");
	tgt = open(path, O_RDONLY | O_CLOEXEC);
	if (tgt < 0 || setns(tgt, CLONE_NEWNET)) {
		e = errno;
		snprintf(err, len, "cannot %s netns %s: %s", tgt < 0 ? "open" : "enter", path,
			 strerror(e));
		if (tgt >= 0)
			close(tgt);
		close(*back);
		*back = -1;
		return -e;
	}
	close(tgt);
	return 0;
}

static void leave_netns(int back)
{
	if (back < 0)
		return;
	if (setns(back, CLONE_NEWNET)) {
		/* The thread would stay in the other namespace: never. */
		perror("libesa: cannot return to the caller's netns");
		abort();
	}
	close(back);
}

/* ------------------------------------------------------------------ */
/* The path MTU to the switch                                          */
/* ------------------------------------------------------------------ */

/*
 * The route to dst (RTM_GETROUTE, as `ip route get`): its device and its
 * mtu metric, which holds a path MTU learnt from ICMP too (0: none).
 */
static int route_mtu(struct in_addr dst, int *oif, unsigned int *metric)
{
	struct {
		struct nlmsghdr n;
		struct rtmsg r;
		struct rtattr a;
		struct in_addr dst;
	} req = {
		.n = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETROUTE,
		       .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 1 },
		.r = { .rtm_family = AF_INET, .rtm_dst_len = 32 },
		.a = { .rta_len = RTA_LENGTH(sizeof(struct in_addr)), .rta_type = RTA_DST },
		.dst = dst,
	};
	char buf[4096];
	struct nlmsghdr *n = (struct nlmsghdr *)buf;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), got, rc = -ENOENT;

	if (fd < 0)
		return -errno;
	*oif = 0;
	*metric = 0;
	if (send(fd, &req, sizeof(req), 0) < 0 || (got = recv(fd, buf, sizeof(buf), 0)) < 0) {
		rc = -errno;
		goto out;
	}
	for (; NLMSG_OK(n, (unsigned int)got); n = NLMSG_NEXT(n, got)) {
		struct rtmsg *r = NLMSG_DATA(n);
		struct rtattr *a = RTM_RTA(r);
		int alen = RTM_PAYLOAD(n);

		if (n->nlmsg_type == NLMSG_ERROR) {
			rc = ((struct nlmsgerr *)NLMSG_DATA(n))->error;
			break;
		}
		if (n->nlmsg_type != RTM_NEWROUTE)
			continue;
		for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
			struct rtattr *m = RTA_DATA(a);
			int mlen = RTA_PAYLOAD(a);

			if (a->rta_type == RTA_OIF)
				*oif = *(int *)RTA_DATA(a);
			if (a->rta_type != RTA_METRICS)
				continue;
			for (; RTA_OK(m, mlen); m = RTA_NEXT(m, mlen))
				if (m->rta_type == RTAX_MTU)
					*metric = *(unsigned int *)RTA_DATA(m);
		}
		rc = *oif ? 0 : -ENOENT;
		break;
	}
out:
	close(fd);
	return rc;
}

/* An interface's MTU (SIOCGIFMTU) and name, or 0. */
static unsigned int if_mtu(int ifindex, char name[IF_NAMESIZE])
{
	struct ifreq ifr = { 0 };
	int fd, rc;

	if (!if_indextoname(ifindex, name))
		return 0;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	rc = ioctl(fd, SIOCGIFMTU, &ifr);
	close(fd);
	return rc ? 0 : (unsigned int)ifr.ifr_mtu;
}

/*
 * A packet must reach the switch whole: the XDP switch takes no IP
 * fragments, and AF_XDP sends no frame beyond the interface's MTU.  The
 * route's device, its mtu metric if any, and AF_XDP's interface if given
 * must all carry values x 4 + 24 bytes of payload, 52 with the IP and UDP
 * headers.  No route: the sockets' opening says so.
 */
static int mtu_check(const struct esa_worker *w, char *err, size_t len)
{
	unsigned int need = w->pktlen + 28, metric, mtu, m;
	char dev[IF_NAMESIZE] = "", xdev[IF_NAMESIZE] = "", ip[INET_ADDRSTRLEN], what[96];
	char less[40] = "";
	int oif, fit;

	if (route_mtu(w->cfg.sw.sin_addr, &oif, &metric))
		return 0;
	mtu = if_mtu(oif, dev);
	inet_ntop(AF_INET, &w->cfg.sw.sin_addr, ip, sizeof(ip));
	snprintf(what, sizeof(what), "the route to the switch %s (%s)", ip, dev);
	if (metric && (!mtu || metric < mtu)) {
		mtu = metric;
		snprintf(what, sizeof(what), "the route to the switch %s (%s, mtu %u)", ip, dev,
			 metric);
	}
	if (w->cfg.io != ESA_IO_UDP && w->cfg.ifname[0]) {
		m = if_mtu(if_nametoindex(w->cfg.ifname), xdev);
		if (m && (!mtu || m < mtu)) {
			mtu = m;
			snprintf(what, sizeof(what), "AF_XDP's interface %s", xdev);
		}
	}
	if (!mtu || need <= mtu)
		return 0;
	fit = (int)(mtu > 52 ? (mtu - 52) / 4 : 0) / ESA_VALUES_ALIGN * ESA_VALUES_ALIGN;
	if (fit)
		snprintf(less, sizeof(less), ", or values %d or less", fit);
	snprintf(err, len, "values %d: %u-byte packets (values x 4 + 52), but %s has MTU %u: "
		 "give it an MTU of %u or more%s", w->nvals, need, what, mtu, need, less);
	return -EMSGSIZE;
}

/* ------------------------------------------------------------------ */
/* Opening and closing                                                 */
/* ------------------------------------------------------------------ */

/* io=xdp, or io=auto: AF_XDP, and the UDP socket beside it. */
static int xdp_open(struct esa_worker *w, char *err, size_t len)
{
	char why[256];
	int rc;

	rc = esa_xsk_worker_open(w, why, sizeof(why));
	if (rc && w->cfg.io == ESA_IO_XDP) {
		snprintf(err, len, "io=xdp: %s", why);
		return rc;
	}
	if (rc)
		esa_warn(w, "io=auto: UDP, since AF_XDP cannot open: %s", why);
	rc = esa_udp_open(w, err, len);
	return rc;
}

int esa_io_open(struct esa_worker *w, char *err, size_t len)
{
	int back, rc;

	rc = esa_udp_buffers(w);
	if (rc) {
		snprintf(err, len, "out of memory");
		return rc;
	}
	rc = enter_netns(w->cfg.netns, &back, err, len);
	if (rc)
		return rc;
	rc = mtu_check(w, err, len);
	if (!rc)
		rc = w->cfg.io == ESA_IO_UDP ? esa_udp_open(w, err, len) : xdp_open(w, err, len);
	leave_netns(back);
	if (!rc)
		rc = esa_delay_open(w, err, len);
	if (rc)
		return rc;
	if (!w->xsk) {
		size_t stride = (w->pktlen + 63) & ~(size_t)63;

		w->pktmem = aligned_alloc(64, stride * w->npkts);
		if (!w->pktmem) {
			snprintf(err, len, "out of memory");
			return -ENOMEM;
		}
		memset(w->pktmem, 0, stride * w->npkts);
		snprintf(w->io_desc, sizeof(w->io_desc), "udp%s", w->udp.gso ? " gso" : "");
	}
	return 0;
}

uint8_t *esa_io_pkt(struct esa_worker *w, uint32_t id)
{
	if (w->xsk)
		return esa_xsk_worker_pkt(w, id);
	return w->pktmem + (size_t)id * ((w->pktlen + 63) & ~(size_t)63);
}

void esa_io_close(struct esa_worker *w)
{
	esa_delay_close(w);
	esa_xsk_worker_close(w);
	esa_udp_close(w);
	free(w->pktmem);
}

/* ------------------------------------------------------------------ */
/* Sending and receiving                                               */
/* ------------------------------------------------------------------ */

/* With an emulated link delay (delay.c): into its line, out when due. */
static int delayed_send(struct esa_worker *w, struct esa_pkt **p, int n, uint64_t now)
{
	int k;

	for (k = 0; k < n; k++)
		if (esa_delay_send(w, p[k]->buf, w->pktlen, false, now))
			break;
	if (k < n) {
		w->st.send_again++;
		w->send_blocked = true;
	}
	return k;
}

int esa_io_send(struct esa_worker *w, struct esa_pkt **p, int n, uint64_t now)
{
	if (w->xsk)
		return esa_xsk_worker_send(w, p, n, now);
	if (w->delay)
		return delayed_send(w, p, n, now);
	return esa_udp_send(w, p, n, now);
}

bool esa_io_busy(struct esa_worker *w, const struct esa_pkt *p)
{
	return w->xsk && esa_xsk_worker_busy(w, p->id);
}

bool esa_io_claim(struct esa_worker *w, const struct esa_pkt *p)
{
	return !w->xsk || esa_xsk_worker_claim(w, p->id);
}

int esa_io_send_ps(struct esa_worker *w, const void *buf, size_t len, uint64_t now)
{
	if (w->delay)
		return esa_delay_send(w, buf, len, true, now);
	return esa_udp_send_ps(w, buf, len, now);
}

void esa_io_release(struct esa_worker *w, uint64_t buf)
{
	if (buf & ESA_XSK_BUF)
		esa_xsk_worker_release(w, buf);
	else
		esa_udp_release(&w->udp, (uint32_t)buf);
}

int esa_io_recv(struct esa_worker *w, uint64_t now)
{
	int got = w->delay ? esa_delay_flush(w, now) : 0, rc;

	if (w->xsk) {
		rc = esa_xsk_worker_recv(w, now);
		if (rc < 0)
			return rc;
		got += rc;
	}
	rc = esa_udp_recv(w, now);
	return rc < 0 ? rc : got + rc;
}

int esa_io_wait(struct esa_worker *w, uint64_t deadline_ns)
{
	struct pollfd pfd[3];
	struct timespec ts, *tp = NULL;
	uint64_t now = esa_now_mono_ns();
	int n = 0, rc;

	if (w->delay && esa_delay_next(w) < deadline_ns)
		deadline_ns = esa_delay_next(w);
	/* xsk_busy_poll: what comes within it is taken without sleeping */
	if (w->xsk && !w->send_blocked && esa_xsk_worker_busy_wait(w, deadline_ns))
		return 0;
	if (deadline_ns != UINT64_MAX) {
		uint64_t d = deadline_ns > now ? deadline_ns - now : 0;

		ts.tv_sec = d / 1000000000ULL;
		ts.tv_nsec = d % 1000000000ULL;
		tp = &ts;
	}
	pfd[n++] = (struct pollfd){ .fd = w->udp.fd, .events = POLLIN };
	if (w->udp.sfd >= 0)
		pfd[n++] = (struct pollfd){ .fd = w->udp.sfd, .events = POLLIN |
					    (w->send_blocked ? POLLOUT : 0) };
	if (w->xsk)
		pfd[n++] = (struct pollfd){ .fd = esa_xsk_worker_fd(w), .events = POLLIN |
					    (w->send_blocked ? POLLOUT : 0) };
	rc = ppoll(pfd, n, tp, NULL);
	if (rc < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++)
		if ((pfd[i].revents & POLLERR) && (pfd[i].fd == w->udp.fd ||
						   pfd[i].fd == w->udp.sfd))
			esa_read_errq(w, pfd[i].fd, esa_now_mono_ns());
	return 0;
}
