// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libesa: AF_XDP's steering program and its lifetime (xsk_int.h).
 *
 * One program per interface and network namespace for the whole process
 * (esa_xsk.bpf.c): it redirects to our sockets the UDP packets addressed
 * to what they registered, everything else passes.  It is attached through
 * a bpf_link the process holds, never pinned: the kernel detaches it when
 * the last holder goes, a crashed or killed process included, and closing
 * the link detaches it whatever namespace the closing thread is in (a
 * worker opened with netns= and closed from elsewhere).  libxdp's
 * dispatcher, which would share the interface with other programs, keeps
 * its programs' links pinned in bpffs: there a killed process's program
 * stays until someone removes it, and the dispatcher fills up.  So the
 * program needs the interface's XDP hook to itself: a program already
 * there (another process's AF_XDP, a dispatcher, anything) is left alone
 * and opening fails, naming it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_link.h>
#include <net/if_arp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "xsk_int.h"
#include "xsk_maps.h"
#include "esa_xsk_obj.h"	/* esa_xsk.bpf.o, as bytes */

static struct xdev *devs;	/* reg_lock */

static int quiet_bpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

/* The interface's MAC; noarp: it has none (loopback). */
static int if_mac(const char *ifname, uint8_t mac[6], bool *noarp)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr))
		rc = -errno;
	close(fd);
	if (rc)
		return rc;
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	*noarp = ifr.ifr_hwaddr.sa_family == ARPHRD_LOOPBACK;
	return 0;
}

/* What is on the interface already, for the error. */
static int describe_existing(struct xdev *d, int rc, char *err, size_t len)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, o);
	struct bpf_prog_info info = { 0 };
	__u32 il = sizeof(info), id;
	int fd;

	if (X.bpf_xdp_query(d->ifindex, 0, &o))
		return xsk_fail(err, len, rc, "cannot attach XDP to %s: %s", d->ifname,
				strerror(-rc));
	id = o.prog_id ? o.prog_id : o.drv_prog_id ? o.drv_prog_id : o.skb_prog_id;
	fd = X.bpf_prog_get_fd_by_id(id);
	if (fd >= 0) {
		X.bpf_obj_get_info_by_fd(fd, &info, &il);
		close(fd);
	}
	return xsk_fail(err, len, rc, "%s already runs XDP program %s (id %u)%s", d->ifname,
			info.name, id,
			!strncmp(info.name, "esa_xsk", 7) ? ", another process's AF_XDP: one such "
			"process per interface" :
			!strcmp(info.name, "xdp_dispatcher") ? ", libxdp's dispatcher: AF_XDP "
			"needs the interface's XDP hook to itself" :
			": detach it (ip link set dev DEV xdp off)");
}

/* Attach the loaded program through a bpf_link: native XDP, generic where
 * the driver has none; the multi-buffer one (fd_frags) where the driver
 * refuses the other for the link's MTU (veth: its peer's, ERANGE). */
static int link_prog(struct xdev *d, int fd, int fd_frags, char *err, size_t len)
{
	bool frags = false;
	int rc;

	for (d->generic = false;;) {
		LIBBPF_OPTS(bpf_link_create_opts, o, .flags = d->generic ? XDP_FLAGS_SKB_MODE :
			    XDP_FLAGS_DRV_MODE);

		rc = X.bpf_link_create(frags ? fd_frags : fd, d->ifindex, BPF_XDP, &o);
		if (rc >= 0) {
			d->link = rc;
			snprintf(d->how, sizeof(d->how), "%s XDP%s (bpf_link)",
				 d->generic ? "generic" : "native", frags ? " multi-buffer" : "");
			return 0;
		}
		rc = rc < -1 ? rc : -errno;
		if (rc == -ERANGE && !frags && !d->generic)
			frags = true;
		else if (rc == -EOPNOTSUPP && !d->generic)
			d->generic = true;
		else
			break;
	}
	if (rc == -EPERM || rc == -EACCES)
		return xsk_fail(err, len, rc, "cannot attach an XDP program: %s (needs CAP_BPF "
				"and CAP_NET_ADMIN)", strerror(-rc));
	if (rc == -EBUSY || rc == -EEXIST)
		return describe_existing(d, rc, err, len);
	return xsk_fail(err, len, rc, "cannot attach XDP to %s: %s", d->ifname, strerror(-rc));
}

/* Open and load the program, attach it; each failure says what failed. */
static int attach(struct xdev *d, char *err, size_t len)
{
	libbpf_print_fn_t old = X.libbpf_set_print(quiet_bpf);
	struct bpf_program *p, *pf;
	int rc;

	errno = 0;
	d->obj = X.bpf_object__open_mem(esa_xsk_obj, sizeof(esa_xsk_obj), NULL);
	if (!d->obj) {
		rc = errno ? -errno : -EINVAL;
		rc = xsk_fail(err, len, rc, "cannot open the XDP program: %s", strerror(-rc));
		goto out;
	}
	rc = X.bpf_object__load(d->obj);
	if (rc) {
		rc = rc < -1 ? rc : errno ? -errno : -EINVAL;
		rc = xsk_fail(err, len, rc, "cannot load an XDP program: %s%s", strerror(-rc),
			      rc == -EPERM || rc == -EACCES ? " (needs CAP_BPF and CAP_NET_ADMIN)" :
			      "");
		goto out;
	}
	p = X.bpf_object__find_program_by_name(d->obj, "esa_xsk");
	pf = X.bpf_object__find_program_by_name(d->obj, "esa_xsk_frags");
	d->xsks_fd = X.bpf_map__fd(X.bpf_object__find_map_by_name(d->obj, "xsks_map"));
	d->ports_fd = X.bpf_map__fd(X.bpf_object__find_map_by_name(d->obj, "esa_xsk_ports"));
	if (!p || !pf || d->xsks_fd < 0 || d->ports_fd < 0) {
		rc = xsk_fail(err, len, ENOENT, "the XDP program lacks esa_xsk, esa_xsk_frags or "
			      "its maps");
		goto out;
	}
	rc = link_prog(d, X.bpf_program__fd(p), X.bpf_program__fd(pf), err, len);
out:
	X.libbpf_set_print(old);
	return rc;
}

static void detach(struct xdev *d)
{
	if (d->link >= 0)
		close(d->link);	/* the program leaves the interface */
	if (d->obj)
		X.bpf_object__close(d->obj);
}

/* The calling thread's network namespace, as the registry knows it. */
static int netns_id(dev_t *dev, ino_t *ino)
{
	struct stat st;

	if (stat("/proc/thread-self/ns/net", &st))
		return -errno;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

struct xdev *xdev_get(int ifindex, const char *ifname, int *rc, char *err, size_t len)
{
	struct xdev *d;
	dev_t nd = 0;
	ino_t ni = 0;

	*rc = netns_id(&nd, &ni);
	if (*rc) {
		xsk_fail(err, len, *rc, "cannot tell the network namespace: %s", strerror(-*rc));
		return NULL;
	}
	for (d = devs; d; d = d->next) {
		if (d->ns_dev == nd && d->ns_ino == ni && d->ifindex == ifindex) {
			d->refs++;
			return d;
		}
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		*rc = xsk_fail(err, len, ENOMEM, "out of memory");
		return NULL;
	}
	d->ns_dev = nd;
	d->ns_ino = ni;
	d->ifindex = ifindex;
	d->link = -1;
	snprintf(d->ifname, sizeof(d->ifname), "%s", ifname);
	*rc = if_mac(ifname, d->mac, &d->noarp);
	if (*rc)
		xsk_fail(err, len, *rc, "%s: no MAC address: %s", ifname, strerror(-*rc));
	else
		*rc = attach(d, err, len);
	if (*rc) {
		detach(d);
		free(d);
		return NULL;
	}
	d->refs = 1;
	d->next = devs;
	devs = d;
	return d;
}

void xdev_put(struct xdev *d)
{
	struct xdev **pp;

	if (--d->refs)
		return;
	for (pp = &devs; *pp != d; pp = &(*pp)->next)
		;
	*pp = d->next;
	detach(d);
	free(d);
}

/* Steer our addresses to the socket: a slot in xsks_map, the ports map. */
int xdev_steer(struct esa_xsk *x, char *err, size_t len)
{
	struct xdev *d = x->dev;
	int fd = X.xsk_socket__fd(x->xsk);
	uint32_t slot;

	if (d->slots == ~0ULL)
		return xsk_fail(err, len, ENOSPC, "%s: %d AF_XDP sockets of this process already",
				d->ifname, ESA_XSK_SLOTS);
	slot = __builtin_ctzll(~d->slots);
	if (X.bpf_map_update_elem(d->xsks_fd, &slot, &fd, 0))
		return xsk_fail(err, len, errno, "xsks_map: %s", strerror(errno));
	/* only now is the slot this socket's: unsteering frees only its own */
	x->slot = slot;
	x->steered = true;
	d->slots |= 1ULL << slot;
	for (int i = 0; i < x->nlocal; i++) {
		struct esa_xsk_key k = { .addr = x->local[i].sin_addr.s_addr,
					 .port = x->local[i].sin_port };
		struct esa_xsk_val v = { .slot = slot, .queue = x->q->queue };

		if (X.bpf_map_update_elem(d->ports_fd, &k, &v, BPF_NOEXIST))
			return xsk_fail(err, len, errno, "%s:%u is steered to another socket of "
					"this process already", inet_ntoa(x->local[i].sin_addr),
					ntohs(x->local[i].sin_port));
	}
	return 0;
}

void xdev_unsteer(struct esa_xsk *x)
{
	struct xdev *d = x->dev;

	if (!x->steered)
		return;
	for (int i = 0; i < x->nlocal; i++) {
		struct esa_xsk_key k = { .addr = x->local[i].sin_addr.s_addr,
					 .port = x->local[i].sin_port };
		struct esa_xsk_val v;

		if (!X.bpf_map_lookup_elem(d->ports_fd, &k, &v) && v.slot == x->slot)
			X.bpf_map_delete_elem(d->ports_fd, &k);
	}
	X.bpf_map_delete_elem(d->xsks_fd, &x->slot);
	d->slots &= ~(1ULL << x->slot);
	x->steered = false;
}
