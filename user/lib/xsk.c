// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libesa: AF_XDP (xsk.h).
 *
 * Frames.  A frame of the UMEM holds one packet at ESA_XSK_OFF: the XDP
 * headroom the kernel keeps in copy mode (256) and 14 bytes more, so the
 * ESA values of a frame are 16-byte aligned.  Send frames belong to a
 * socket for its life: its DATA packets are built there once, headers and
 * all, and a resend posts the same frame again.  Receive frames cycle
 * between the fill ring, the sockets' RX rings, and their users, who may
 * keep them (libesa keeps each result it uses as the FETCH cache entry).
 *
 * Attaching.  The program goes through libxdp (xdp_program__attach), which
 * runs it in its dispatcher beside other libxdp programs where the kernel
 * allows extension programs.  Where it does not (libxdp then attaches it
 * alone, through netlink, and it would outlive a crashed process), the
 * program is attached through a bpf_link instead: the kernel removes it
 * when the last process holding the link exits.  Either way a program
 * already on the interface that is not a libxdp dispatcher is left alone:
 * opening fails, naming it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#include "xsk.h"
#include "xsk_maps.h"
#include "esa_xsk_obj.h"	/* esa_xsk.bpf.o, as bytes */
#include <dlfcn.h>

#define ESA_XSK_OFF	270	/* XDP_PACKET_HEADROOM + the UMEM headroom */
#define UMEM_HEADROOM	14
#define HDRS		42	/* Ethernet, IPv4, UDP */
#define FILL_SIZE	1024
#define COMP_SIZE	2048
#define RX_SIZE		512
#define TX_SIZE		512
#define RX_BATCH	64
#define NEIGH_MAX	64

/* One queue of an interface: its UMEM, shared by our sockets on it. */
struct xq {
	struct xq *next;
	struct xdev *dev;
	uint32_t queue;
	int	refs;
	pthread_mutex_t lock;	/* fill, comp, free, inflight, avail */
	uint8_t	*area;
	size_t	size;
	uint32_t fs, nframes;	/* frame size, frames */
	struct xsk_umem *umem;
	struct xsk_ring_prod fill;
	struct xsk_ring_cons comp;
	uint32_t *free, nfree;	/* frames nobody holds */
	uint16_t *inflight;	/* per frame: sends posted, not completed */
	uint32_t avail;		/* frames not promised to a socket */
	bool	zerocopy, bound;
};

/* One interface (in one network namespace): the program on it. */
struct xdev {
	struct xdev *next;
	dev_t	ns_dev;
	ino_t	ns_ino;
	int	ifindex;
	char	ifname[IF_NAMESIZE];
	int	refs;
	struct bpf_object *obj;
	struct xdp_program *prog;
	int	xsks_fd, ports_fd;	/* its maps */
	int	link;		/* the bpf_link, where the dispatcher cannot run */
	bool	attached;	/* through libxdp */
	enum xdp_attach_mode mode;
	uint64_t slots;		/* xsks_map entries in use */
	uint8_t	mac[6];
	bool	noarp;		/* loopback: no MACs */
	char	how[96];	/* how the program runs */
	struct xq *qs;
};

struct neigh {
	struct in_addr dst;
	uint8_t	mac[6];
};

struct esa_xsk {
	struct xdev *dev;
	struct xq *q;
	struct xsk_socket *xsk;
	struct xsk_ring_cons rx;
	struct xsk_ring_prod tx;
	uint32_t slot;
	uint32_t ntx, *txf;	/* send frames */
	uint16_t *txlen;	/* their lengths */
	uint32_t promised;	/* frames promised by q->avail */
	struct sockaddr_in *local;
	int	nlocal;
	uint64_t *rel;		/* frames freed, not yet back in the fill ring */
	uint32_t nrel, crel;
	struct neigh neigh[NEIGH_MAX];
	int	nneigh;
	uint64_t bad;		/* malformed packets dropped */
	char	desc[160];
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xdev *devs;

static int fail(char *err, size_t len, int e, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t len, int e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return e > 0 ? -e : e;
}

/*
 * libxdp and libbpf are loaded when AF_XDP is first asked for, so that
 * programs linking libesa need neither unless they use it, and a host
 * without them gets a reason, not a link error.
 */
#define XDP_FNS(F) F(libxdp_set_print) F(libxdp_get_error) F(xdp_program__from_bpf_obj) \
	F(xdp_program__attach) F(xdp_program__detach) F(xdp_program__close)		\
	F(xdp_program__fd) F(xdp_program__name) F(xdp_program__id)			\
	F(xdp_multiprog__get_from_ifindex) F(xdp_multiprog__main_prog)			\
	F(xdp_multiprog__is_legacy) F(xdp_multiprog__close) F(xsk_umem__create)		\
	F(xsk_umem__delete) F(xsk_socket__create_shared) F(xsk_socket__delete)		\
	F(xsk_socket__fd)
#define BPF_FNS(F) F(libbpf_set_print) F(bpf_object__open_mem)				\
	F(bpf_object__find_map_by_name) F(bpf_object__close) F(bpf_map__fd)		\
	F(bpf_map_update_elem) F(bpf_map_delete_elem) F(bpf_map_lookup_elem)		\
	F(bpf_link_create)

static struct {
#define F(n) __typeof__(&n) n;
	XDP_FNS(F)
	BPF_FNS(F)
#undef F
	void	*xdp, *bpf;
} X;

/* Load libxdp and libbpf once (reg_lock); 0 or -errno and a reason. */
static int load_libs(char *err, size_t len)
{
	if (X.xdp)
		return 0;
	X.bpf = dlopen("libbpf.so.1", RTLD_NOW | RTLD_LOCAL);
	X.xdp = X.bpf ? dlopen("libxdp.so.1", RTLD_NOW | RTLD_LOCAL) : NULL;
	if (!X.xdp) {
		fail(err, len, ENOENT, "cannot load %s (Debian: apt install %s): %s",
		     X.bpf ? "libxdp.so.1" : "libbpf.so.1", X.bpf ? "libxdp1" : "libbpf1",
		     dlerror());
		goto fail;
	}
#define F(n) if (!(X.n = (__typeof__(X.n))dlsym(X.xdp, #n))) goto missing;
	XDP_FNS(F)
#undef F
#define F(n) if (!(X.n = (__typeof__(X.n))dlsym(X.bpf, #n))) goto missing;
	BPF_FNS(F)
#undef F
	return 0;
missing:
	fail(err, len, ENOSYS, "libxdp or libbpf lacks a function: %s", dlerror());
fail:
	if (X.xdp)
		dlclose(X.xdp);
	if (X.bpf)
		dlclose(X.bpf);
	X.xdp = X.bpf = NULL;
	return -ENOSYS;
}

/* ------------------------------------------------------------------ */
/* The route, the neighbour, the interface                             */
/* ------------------------------------------------------------------ */

/* The route to dst (RTM_GETROUTE): its device and next hop. */
static int route_get(struct in_addr dst, int *oif, struct in_addr *via)
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
	*via = dst;
	if (send(fd, &req, sizeof(req), 0) < 0 || (got = recv(fd, buf, sizeof(buf), 0)) < 0) {
		rc = -errno;
		goto out;
	}
	for (; NLMSG_OK(n, (unsigned)got); n = NLMSG_NEXT(n, got)) {
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
			if (a->rta_type == RTA_OIF)
				*oif = *(int *)RTA_DATA(a);
			else if (a->rta_type == RTA_GATEWAY)
				*via = *(struct in_addr *)RTA_DATA(a);
		}
		rc = *oif ? 0 : -ENOENT;
		break;
	}
out:
	close(fd);
	return rc;
}

/* The neighbour table's MAC for ip on ifname, if complete; 1 if found. */
static int arp_lookup(struct in_addr ip, const char *ifname, uint8_t mac[6])
{
	FILE *f = fopen("/proc/thread-self/net/arp", "r");
	char line[256], addr[64], hw[64], dev[64];
	unsigned type, flags, m[6];
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		struct in_addr a;

		if (sscanf(line, "%63s 0x%x 0x%x %63s %*s %63s", addr, &type, &flags, hw, dev) != 5 ||
		    inet_pton(AF_INET, addr, &a) != 1 || a.s_addr != ip.s_addr ||
		    strcmp(dev, ifname) || !(flags & ATF_COM) ||
		    sscanf(hw, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
			continue;
		for (int i = 0; i < 6; i++)
			mac[i] = m[i];
		found = 1;
	}
	fclose(f);
	return found;
}

/* The MAC of `via` on ifname: from the neighbour table, after asking the
 * kernel to resolve it (a datagram to its discard port) if need be. */
static int neigh_mac(struct in_addr via, const char *ifname, uint8_t mac[6])
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(9), .sin_addr = via };
	int fd;

	if (arp_lookup(via, ifname, mac))
		return 0;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		sendto(fd, "", 0, MSG_DONTWAIT, (struct sockaddr *)&to, sizeof(to));
		close(fd);
	}
	for (int t = 0; t < 100; t++) {
		struct timespec ts = { 0, 10000000 };

		if (arp_lookup(via, ifname, mac))
			return 0;
		nanosleep(&ts, NULL);
	}
	return -EHOSTUNREACH;
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

int esa_xsk_next_hop(struct esa_xsk *x, struct in_addr dst, uint8_t mac[6], char *err,
		     size_t len)
{
	char d[INET_ADDRSTRLEN], v[INET_ADDRSTRLEN];
	struct in_addr via;
	int oif, rc;

	for (int i = 0; i < x->nneigh; i++) {
		if (x->neigh[i].dst.s_addr == dst.s_addr) {
			memcpy(mac, x->neigh[i].mac, 6);
			return 0;
		}
	}
	inet_ntop(AF_INET, &dst, d, sizeof(d));
	rc = route_get(dst, &oif, &via);
	if (rc)
		return fail(err, len, rc, "no route to %s: %s", d, strerror(-rc));
	if (oif != x->dev->ifindex)
		return fail(err, len, ENETUNREACH, "the route to %s leaves by interface %d, "
			    "not %s", d, oif, x->dev->ifname);
	if (x->dev->noarp) {
		memset(mac, 0, 6);
	} else if (neigh_mac(via, x->dev->ifname, mac)) {
		inet_ntop(AF_INET, &via, v, sizeof(v));
		return fail(err, len, EHOSTUNREACH, "the next hop %s to %s on %s has no "
			    "neighbour entry (ARP unresolved)", v, d, x->dev->ifname);
	}
	if (x->nneigh < NEIGH_MAX) {
		x->neigh[x->nneigh].dst = dst;
		memcpy(x->neigh[x->nneigh++].mac, mac, 6);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The program on the interface                                        */
/* ------------------------------------------------------------------ */

static char xdp_msg[256];	/* libxdp's last message, under reg_lock */

static int quiet_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	if (level <= LIBXDP_WARN)
		vsnprintf(xdp_msg, sizeof(xdp_msg), fmt, ap);
	return 0;
}

static int quiet_bpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

/* What is on the interface already, for the error. */
static void describe_existing(int ifindex, const char *ifname, char *err, size_t len)
{
	struct xdp_multiprog *mp = X.xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *p;

	if (X.libxdp_get_error(mp) || !(p = X.xdp_multiprog__main_prog(mp))) {
		snprintf(err, len, "cannot attach to %s: %s", ifname, xdp_msg);
		X.xdp_multiprog__close(X.libxdp_get_error(mp) ? NULL : mp);
		return;
	}
	snprintf(err, len, "%s already runs XDP program %s (id %u)%s", ifname,
		 X.xdp_program__name(p), X.xdp_program__id(p),
		 !strcmp(X.xdp_program__name(p), "esa_xsk") ?
		 ", another process's AF_XDP, and this kernel cannot run libxdp's dispatcher "
		 "to share the interface: one such process per interface" :
		 X.xdp_multiprog__is_legacy(mp) ?
		 ", not through libxdp's dispatcher: detach it (ip link set dev DEV xdp off) "
		 "or load it with xdp-loader" : "");
	X.xdp_multiprog__close(mp);
}

/*
 * libxdp's dispatcher could not run (the kernel refuses extension
 * programs): it attached our program alone, through netlink, where it would
 * outlive a crash.  Attach it through a bpf_link instead.
 */
static int relink(struct xdev *d, char *err, size_t len)
{
	LIBBPF_OPTS(bpf_link_create_opts, o, .flags = d->mode == XDP_MODE_SKB ?
		    XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);
	int fd = X.xdp_program__fd(d->prog), rc;

	rc = X.xdp_program__detach(d->prog, d->ifindex, d->mode, 0);
	if (rc)
		return fail(err, len, rc, "cannot detach from %s to relink: %s", d->ifname,
			    strerror(-rc));
	d->attached = false;
	d->link = X.bpf_link_create(fd, d->ifindex, BPF_XDP, &o);
	if (d->link < 0)
		return fail(err, len, errno, "bpf_link on %s: %s", d->ifname, strerror(errno));
	snprintf(d->how, sizeof(d->how), "%s XDP alone (bpf_link; this kernel cannot run "
		 "libxdp's dispatcher)", d->mode == XDP_MODE_SKB ? "generic" : "native");
	return 0;
}

static int attach(struct xdev *d, char *err, size_t len)
{
	libxdp_print_fn_t old_xdp = X.libxdp_set_print(quiet_print);
	libbpf_print_fn_t old_bpf = X.libbpf_set_print(quiet_bpf);
	struct xdp_multiprog *mp;
	int rc;

	xdp_msg[0] = 0;
	d->obj = X.bpf_object__open_mem(esa_xsk_obj, sizeof(esa_xsk_obj), NULL);
	if (!d->obj) {
		rc = fail(err, len, ENOMEM, "cannot open the XDP program");
		goto out;
	}
	d->prog = X.xdp_program__from_bpf_obj(d->obj, "xdp");
	if (X.libxdp_get_error(d->prog)) {
		d->prog = NULL;
		rc = fail(err, len, ENOMEM, "cannot open the XDP program");
		goto out;
	}
	d->mode = XDP_MODE_NATIVE;
	rc = X.xdp_program__attach(d->prog, d->ifindex, d->mode, 0);
	if (rc == -EOPNOTSUPP) {
		d->mode = XDP_MODE_SKB;	/* the driver has no native XDP */
		rc = X.xdp_program__attach(d->prog, d->ifindex, d->mode, 0);
	}
	if (rc == -EPERM || rc == -EACCES) {
		rc = fail(err, len, rc, "cannot load an XDP program: %s (needs CAP_BPF and "
			  "CAP_NET_ADMIN)", strerror(-rc));
		goto out;
	}
	if (rc == -EBUSY || rc == -EEXIST) {
		describe_existing(d->ifindex, d->ifname, err, len);
		goto out;
	}
	if (rc) {
		rc = fail(err, len, rc, "cannot attach XDP to %s: %s%s%s", d->ifname,
			  strerror(-rc), xdp_msg[0] ? ": " : "", xdp_msg);
		goto out;
	}
	d->attached = true;
	snprintf(d->how, sizeof(d->how), "%s XDP in libxdp's dispatcher",
		 d->mode == XDP_MODE_SKB ? "generic" : "native");
	d->xsks_fd = X.bpf_map__fd(X.bpf_object__find_map_by_name(d->obj, "xsks_map"));
	d->ports_fd = X.bpf_map__fd(X.bpf_object__find_map_by_name(d->obj, "esa_xsk_ports"));
	mp = X.xdp_multiprog__get_from_ifindex(d->ifindex);
	if (!X.libxdp_get_error(mp) && X.xdp_multiprog__is_legacy(mp))
		rc = relink(d, err, len);
	if (!X.libxdp_get_error(mp))
		X.xdp_multiprog__close(mp);
out:
	X.libxdp_set_print(old_xdp);
	X.libbpf_set_print(old_bpf);
	return rc;
}

static void detach(struct xdev *d)
{
	if (d->link >= 0)
		close(d->link);
	else if (d->attached)
		X.xdp_program__detach(d->prog, d->ifindex, d->mode, 0);
	if (d->prog)
		X.xdp_program__close(d->prog);
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

/* The interface's entry, attaching the program on first use (reg_lock). */
static struct xdev *dev_get(int ifindex, const char *ifname, char *err, size_t len)
{
	struct xdev *d;
	dev_t nd = 0;
	ino_t ni = 0;
	int rc = netns_id(&nd, &ni);

	if (rc) {
		fail(err, len, rc, "cannot tell the network namespace: %s", strerror(-rc));
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
		fail(err, len, ENOMEM, "out of memory");
		return NULL;
	}
	d->ns_dev = nd;
	d->ns_ino = ni;
	d->ifindex = ifindex;
	d->link = -1;
	snprintf(d->ifname, sizeof(d->ifname), "%s", ifname);
	rc = if_mac(ifname, d->mac, &d->noarp);
	if (rc)
		fail(err, len, rc, "%s: no MAC address: %s", ifname, strerror(-rc));
	else
		rc = attach(d, err, len);
	if (rc) {
		detach(d);
		free(d);
		return NULL;
	}
	d->refs = 1;
	d->next = devs;
	devs = d;
	return d;
}

static void dev_put(struct xdev *d)
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

/* ------------------------------------------------------------------ */
/* The UMEM of a queue                                                 */
/* ------------------------------------------------------------------ */

/* Hand free frames to the kernel's fill ring (q->lock). */
static void refill(struct xq *q)
{
	uint32_t idx, n = xsk_prod_nb_free(&q->fill, q->nfree);

	if (n > q->nfree)
		n = q->nfree;
	if (!n || xsk_ring_prod__reserve(&q->fill, n, &idx) != n)
		return;
	for (uint32_t i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&q->fill, idx + i) =
			(uint64_t)q->free[--q->nfree] * q->fs;
	xsk_ring_prod__submit(&q->fill, n);
}

/* Frames the kernel has sent: no longer posted (q->lock). */
static void reap(struct xq *q)
{
	uint32_t idx, n = xsk_ring_cons__peek(&q->comp, COMP_SIZE, &idx);

	for (uint32_t i = 0; i < n; i++) {
		uint32_t f = *xsk_ring_cons__comp_addr(&q->comp, idx + i) / q->fs;

		if (f < q->nframes && q->inflight[f])
			__atomic_sub_fetch(&q->inflight[f], 1, __ATOMIC_RELEASE);
	}
	if (n)
		xsk_ring_cons__release(&q->comp, n);
}

static void q_free(struct xq *q)
{
	if (q->umem)
		X.xsk_umem__delete(q->umem);
	if (q->area)
		munmap(q->area, q->size);
	free(q->free);
	free(q->inflight);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

uint32_t esa_xsk_need(uint32_t tx_frames, uint32_t rx_hold)
{
	return tx_frames + rx_hold + RX_SIZE + RX_BATCH;
}

/* A queue's UMEM of `frames` frames beside the fill ring's (reg_lock). */
static struct xq *q_get(struct xdev *d, uint32_t queue, uint32_t frames, uint32_t fs,
			char *err, size_t len)
{
	struct xsk_umem_config uc = { .fill_size = FILL_SIZE, .comp_size = COMP_SIZE,
				      .frame_headroom = UMEM_HEADROOM };
	struct xq *q;
	int rc;

	for (q = d->qs; q; q = q->next) {
		if (q->queue == queue) {
			if (q->fs < fs) {
				fail(err, len, EINVAL, "%s queue %u: its UMEM's %u-byte frames are too "
				     "small for these packets", d->ifname, queue, q->fs);
				return NULL;
			}
			q->refs++;
			return q;
		}
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		fail(err, len, ENOMEM, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&q->lock, NULL);
	q->dev = d;
	q->queue = queue;
	q->fs = uc.frame_size = fs;
	q->nframes = FILL_SIZE + frames;
	q->size = (size_t)q->nframes * fs;
	q->area = mmap(NULL, q->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
		       MAP_POPULATE, -1, 0);
	q->free = malloc(q->nframes * sizeof(*q->free));
	q->inflight = calloc(q->nframes, sizeof(*q->inflight));
	if (q->area == MAP_FAILED || !q->free || !q->inflight) {
		if (q->area == MAP_FAILED)
			q->area = NULL;
		q_free(q);
		fail(err, len, ENOMEM, "out of memory for a UMEM of %zu MiB", q->size >> 20);
		return NULL;
	}
	rc = X.xsk_umem__create(&q->umem, q->area, q->size, &q->fill, &q->comp, &uc);
	if (rc) {
		fail(err, len, rc, "cannot register a UMEM of %zu MiB: %s%s", q->size >> 20,
		     strerror(-rc), rc == -EPERM || rc == -ENOBUFS || rc == -ENOMEM ?
		     " (locked memory: ulimit -l, or CAP_IPC_LOCK)" :
		     rc == -EAFNOSUPPORT ? " (a kernel without CONFIG_XDP_SOCKETS)" : "");
		q->umem = NULL;
		q_free(q);
		return NULL;
	}
	for (uint32_t i = 0; i < q->nframes; i++)
		q->free[i] = q->nframes - 1 - i;
	q->nfree = q->nframes;
	q->avail = q->nframes - FILL_SIZE;
	q->refs = 1;
	q->next = d->qs;
	d->qs = q;
	return q;
}

static void q_put(struct xq *q)
{
	struct xq **pp;

	if (--q->refs)
		return;
	for (pp = &q->dev->qs; *pp != q; pp = &(*pp)->next)
		;
	*pp = q->next;
	q_free(q);
}

/* ------------------------------------------------------------------ */
/* Sockets                                                             */
/* ------------------------------------------------------------------ */

/* The socket itself: zero-copy where the driver has it, else copy mode. */
static int bind_socket(struct esa_xsk *x, char *err, size_t len)
{
	struct xq *q = x->q;
	struct xsk_socket_config sc = {
		.rx_size = RX_SIZE, .tx_size = TX_SIZE,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		/* neither XDP_COPY nor XDP_ZEROCOPY: the kernel takes zero-copy
		 * where the driver has it and falls back to copy mode */
		.bind_flags = XDP_USE_NEED_WAKEUP,
	};
	struct xdp_options opt = { 0 };
	socklen_t ol = sizeof(opt);
	int rc;

	rc = X.xsk_socket__create_shared(&x->xsk, x->dev->ifname, q->queue, q->umem, &x->rx,
				       &x->tx, &q->fill, &q->comp, &sc);
	if (rc) {
		x->xsk = NULL;
		return fail(err, len, rc, "AF_XDP socket on %s queue %u: %s%s", x->dev->ifname,
			    q->queue, strerror(-rc),
			    rc == -EPERM ? " (needs CAP_NET_RAW)" :
			    rc == -EAFNOSUPPORT ? " (a kernel without CONFIG_XDP_SOCKETS)" :
			    rc == -EINVAL ? " (no such queue?)" :
			    rc == -EBUSY ? " (another process's AF_XDP socket has this queue: "
			    "give another queue)" : "");
	}
	if (!q->bound) {
		q->bound = true;
		if (!getsockopt(X.xsk_socket__fd(x->xsk), SOL_XDP, XDP_OPTIONS, &opt, &ol))
			q->zerocopy = opt.flags & XDP_OPTIONS_ZEROCOPY;
	}
	return 0;
}

/* Steer our addresses to the socket: a slot in xsks_map, the ports map. */
static int steer(struct esa_xsk *x, char *err, size_t len)
{
	struct xdev *d = x->dev;
	int fd = X.xsk_socket__fd(x->xsk), rc;

	if (d->slots == ~0ULL)
		return fail(err, len, ENOSPC, "%s: %d AF_XDP sockets of this process already",
			    d->ifname, ESA_XSK_SLOTS);
	x->slot = __builtin_ctzll(~d->slots);
	rc = X.bpf_map_update_elem(d->xsks_fd, &x->slot, &fd, 0);
	if (rc)
		return fail(err, len, errno, "xsks_map: %s", strerror(errno));
	d->slots |= 1ULL << x->slot;
	for (int i = 0; i < x->nlocal; i++) {
		struct esa_xsk_key k = { .addr = x->local[i].sin_addr.s_addr,
					 .port = x->local[i].sin_port };
		struct esa_xsk_val v = { .slot = x->slot, .queue = x->q->queue };

		if (X.bpf_map_update_elem(d->ports_fd, &k, &v,
					BPF_NOEXIST))
			return fail(err, len, errno, "%s:%u is steered to another socket of this "
				    "process already", inet_ntoa(x->local[i].sin_addr),
				    ntohs(x->local[i].sin_port));
	}
	return 0;
}

static void unsteer(struct esa_xsk *x)
{
	struct xdev *d = x->dev;

	if (!(d->slots & (1ULL << x->slot)))
		return;
	for (int i = 0; i < x->nlocal; i++) {
		struct esa_xsk_key k = { .addr = x->local[i].sin_addr.s_addr,
					 .port = x->local[i].sin_port };
		struct esa_xsk_val v;

		if (!X.bpf_map_lookup_elem(d->ports_fd, &k, &v) &&
		    v.slot == x->slot)
			X.bpf_map_delete_elem(d->ports_fd, &k);
	}
	X.bpf_map_delete_elem(d->xsks_fd, &x->slot);
	d->slots &= ~(1ULL << x->slot);
}

/* Frames for the socket: its send frames, and the promise of its share of
 * receive frames (q->lock). */
static int take_frames(struct esa_xsk *x, uint32_t tx, uint32_t hold, char *err,
		       size_t len)
{
	struct xq *q = x->q;
	uint32_t need = esa_xsk_need(tx, hold);

	if (need > q->avail)
		return fail(err, len, ENOSPC, "%s queue %u: the UMEM this process's workers "
			    "share there has %u frames free, %u needed (xdp_workers sizes it)",
			    x->dev->ifname, q->queue, q->avail, need);
	q->avail -= need;
	x->promised = need;
	for (uint32_t i = 0; i < tx; i++)
		x->txf[i] = q->free[--q->nfree];
	x->ntx = tx;
	return 0;
}

static void give_frames(struct esa_xsk *x)
{
	struct xq *q = x->q;

	pthread_mutex_lock(&q->lock);
	reap(q);
	for (uint32_t i = 0; i < x->ntx; i++)
		q->free[q->nfree++] = x->txf[i];
	for (uint32_t i = 0; i < x->nrel; i++)
		q->free[q->nfree++] = x->rel[i] / q->fs;
	x->ntx = x->nrel = 0;
	q->avail += x->promised;
	x->promised = 0;
	refill(q);
	pthread_mutex_unlock(&q->lock);
}

/* The interface: given, or the route's to c->route_to. */
static int which_if(const struct esa_xsk_cfg *c, char *ifname, int *ifindex, char *err,
		    size_t len)
{
	struct in_addr via;
	int rc;

	if (c->ifname && c->ifname[0]) {
		*ifindex = if_nametoindex(c->ifname);
		if (!*ifindex)
			return fail(err, len, ENODEV, "no interface %s here", c->ifname);
		snprintf(ifname, IF_NAMESIZE, "%s", c->ifname);
		return 0;
	}
	rc = route_get(c->route_to, ifindex, &via);
	if (rc || !if_indextoname(*ifindex, ifname))
		return fail(err, len, rc ? rc : errno, "no route to %s to take its interface: "
			    "%s (give ifname)", inet_ntoa(c->route_to), strerror(rc ? -rc : errno));
	return 0;
}

static int open_locked(struct esa_xsk *x, const struct esa_xsk_cfg *c, char *err,
		       size_t len)
{
	char ifname[IF_NAMESIZE];
	uint32_t fs = ESA_XSK_OFF + HDRS + c->pkt_max <= 2048 ? 2048 : 4096;
	uint32_t need = esa_xsk_need(c->tx_frames, c->rx_hold);
	int ifindex, rc;

	if (ESA_XSK_OFF + HDRS + c->pkt_max > 4096)
		return fail(err, len, EMSGSIZE, "packets of %u bytes do not fit a 4096-byte "
			    "frame", HDRS + c->pkt_max);
	rc = which_if(c, ifname, &ifindex, err, len);
	if (rc)
		return rc;
	x->dev = dev_get(ifindex, ifname, err, len);
	if (!x->dev)
		return -EIO;
	/*
	 * The kernel frees a closed socket's hold on its queue a moment later
	 * (deferred work): a queue our last socket just left can still be
	 * busy.  Then make the UMEM anew and bind again, for up to 2 s.
	 */
	for (int t = 0;; t++) {
		x->q = q_get(x->dev, c->queue, c->umem_frames > need ? c->umem_frames : need,
			     fs, err, len);
		if (!x->q)
			return -EIO;
		pthread_mutex_lock(&x->q->lock);
		rc = take_frames(x, c->tx_frames, c->rx_hold, err, len);
		pthread_mutex_unlock(&x->q->lock);
		if (!rc)
			rc = bind_socket(x, err, len);
		if (rc != -EBUSY || x->q->refs > 1 || t == 200)
			break;
		give_frames(x);
		q_put(x->q);
		x->q = NULL;
		usleep(10000);
	}
	if (!rc)
		rc = steer(x, err, len);
	if (rc)
		return rc;
	pthread_mutex_lock(&x->q->lock);
	refill(x->q);
	pthread_mutex_unlock(&x->q->lock);
	snprintf(x->desc, sizeof(x->desc), "xdp %s queue %u %s, %s", ifname, c->queue,
		 x->q->zerocopy ? "zerocopy" : "copy", x->dev->how);
	return 0;
}

static void close_locked(struct esa_xsk *x)
{
	uint32_t idx, n;

	if (x->dev && x->xsk)
		unsteer(x);
	if (x->xsk) {
		/* what the RX ring still holds goes back to the UMEM */
		n = xsk_ring_cons__peek(&x->rx, RX_SIZE, &idx);
		for (uint32_t j = 0; j < n; j++)
			esa_xsk_release(x, ESA_XSK_BUF | xsk_ring_cons__rx_desc(&x->rx, idx + j)->addr);
		xsk_ring_cons__release(&x->rx, n);
	}
	/* before the socket goes: with the last one go the rings */
	if (x->q)
		give_frames(x);
	if (x->xsk)
		X.xsk_socket__delete(x->xsk);
	if (x->q)
		q_put(x->q);
	if (x->dev)
		dev_put(x->dev);
}

int esa_xsk_open(struct esa_xsk **out, const struct esa_xsk_cfg *c, char *err, size_t len)
{
	struct esa_xsk *x = calloc(1, sizeof(*x));
	int rc;

	*out = NULL;
	if (!x)
		return fail(err, len, ENOMEM, "out of memory");
	x->nlocal = c->nlocal;
	x->local = calloc(c->nlocal ? c->nlocal : 1, sizeof(*x->local));
	if (x->local)
		memcpy(x->local, c->local, c->nlocal * sizeof(*c->local));
	x->txf = calloc(c->tx_frames ? c->tx_frames : 1, sizeof(*x->txf));
	x->txlen = calloc(c->tx_frames ? c->tx_frames : 1, sizeof(*x->txlen));
	x->crel = c->rx_hold + RX_SIZE + RX_BATCH;
	x->rel = calloc(x->crel, sizeof(*x->rel));
	if (!x->local || !x->txf || !x->txlen || !x->rel) {
		free(x->local);
		free(x->txf);
		free(x->txlen);
		free(x->rel);
		free(x);
		return fail(err, len, ENOMEM, "out of memory");
	}
	pthread_mutex_lock(&reg_lock);
	rc = load_libs(err, len);
	if (!rc)
		rc = open_locked(x, c, err, len);
	if (rc)
		close_locked(x);
	pthread_mutex_unlock(&reg_lock);
	if (rc) {
		free(x->local);
		free(x->txf);
		free(x->txlen);
		free(x->rel);
		free(x);
		return rc;
	}
	*out = x;
	return 0;
}

void esa_xsk_close(struct esa_xsk *x)
{
	if (!x)
		return;
	pthread_mutex_lock(&reg_lock);
	close_locked(x);
	pthread_mutex_unlock(&reg_lock);
	free(x->local);
	free(x->txf);
	free(x->txlen);
	free(x->rel);
	free(x);
}

const char *esa_xsk_desc(const struct esa_xsk *x)
{
	return x->desc;
}

bool esa_xsk_zerocopy(const struct esa_xsk *x)
{
	return x->q->zerocopy;
}

int esa_xsk_fd(const struct esa_xsk *x)
{
	return X.xsk_socket__fd(x->xsk);
}

uint64_t esa_xsk_rx_bad(const struct esa_xsk *x)
{
	struct xdp_statistics st = { 0 };
	socklen_t sl = sizeof(st);

	getsockopt(X.xsk_socket__fd(x->xsk), SOL_XDP, XDP_STATISTICS, &st, &sl);
	return x->bad + st.rx_dropped + st.rx_invalid_descs + st.rx_ring_full +
	       st.rx_fill_ring_empty_descs;
}

/* ------------------------------------------------------------------ */
/* Sending                                                             */
/* ------------------------------------------------------------------ */

static uint8_t *frame(struct xq *q, uint32_t f)
{
	return q->area + (size_t)f * q->fs + ESA_XSK_OFF;
}

uint8_t *esa_xsk_tx_payload(struct esa_xsk *x, uint32_t i)
{
	return frame(x->q, x->txf[i]) + HDRS;
}

static uint16_t csum_fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return ~s;
}

static uint32_t csum_add(uint32_t s, const void *p, size_t len)
{
	const uint8_t *b = p;

	for (size_t i = 0; i + 1 < len; i += 2)
		s += (uint32_t)b[i] << 8 | b[i + 1];
	if (len & 1)
		s += (uint32_t)b[len - 1] << 8;
	return s;
}

int esa_xsk_tx_prep(struct esa_xsk *x, uint32_t i, const struct sockaddr_in *from,
		    const struct sockaddr_in *to, size_t paylen, char *err, size_t len)
{
	uint8_t *f = frame(x->q, x->txf[i]), mac[6];
	struct iphdr *ip = (struct iphdr *)(f + 14);
	struct udphdr *udp = (struct udphdr *)(ip + 1);
	int rc = esa_xsk_next_hop(x, to->sin_addr, mac, err, len);

	if (rc)
		return rc;
	memcpy(f, mac, 6);
	memcpy(f + 6, x->dev->mac, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	*ip = (struct iphdr){ .version = 4, .ihl = 5, .tot_len = htons(20 + 8 + paylen),
			      .frag_off = htons(IP_DF), .ttl = 64, .protocol = IPPROTO_UDP,
			      .saddr = from->sin_addr.s_addr, .daddr = to->sin_addr.s_addr };
	ip->check = htons(csum_fold(csum_add(0, ip, 20)));
	/* UDP checksum 0 (none, legal in IPv4): the switch does not check it */
	*udp = (struct udphdr){ .source = from->sin_port, .dest = to->sin_port,
				.len = htons(8 + paylen) };
	x->txlen[i] = HDRS + paylen;
	return 0;
}

bool esa_xsk_tx_busy(struct esa_xsk *x, uint32_t i)
{
	struct xq *q = x->q;

	if (!__atomic_load_n(&q->inflight[x->txf[i]], __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&q->lock);
	reap(q);
	pthread_mutex_unlock(&q->lock);
	return __atomic_load_n(&q->inflight[x->txf[i]], __ATOMIC_ACQUIRE);
}

static int kick(struct esa_xsk *x);

bool esa_xsk_tx_claim(struct esa_xsk *x, uint32_t i)
{
	struct timespec t0, t;

	if (!esa_xsk_tx_busy(x, i))
		return true;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		kick(x);	/* zero-copy: the driver completes once woken */
		sched_yield();
		if (!esa_xsk_tx_busy(x, i))
			return true;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec) <
		 1000000000LL);
	return false;
}

/*
 * Have the kernel take what the TX ring holds; 0 or -errno.  In copy mode
 * it sends only in the system call, a batch at a time: call until the ring
 * is empty, so that no frame stays posted behind our back.  Zero-copy: the
 * driver takes the ring by itself, once woken.  A device that pushes back
 * (a veth whose peer's ring is full: its NAPI has not run) may leave frames
 * in the ring: they stay posted (busy) and esa_xsk_tx_kick() offers them
 * again later; that is not an error.
 */
static bool tx_empty(const struct esa_xsk *x)
{
	return __atomic_load_n(x->tx.consumer, __ATOMIC_ACQUIRE) == *x->tx.producer;
}

static int kick_once(struct esa_xsk *x)
{
	if (sendto(X.xsk_socket__fd(x->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 &&
	    errno != EAGAIN && errno != EBUSY && errno != ENOBUFS && errno != EINTR)
		return -errno;
	/* the kernel sends a batch per call and needs room to complete */
	pthread_mutex_lock(&x->q->lock);
	reap(x->q);
	pthread_mutex_unlock(&x->q->lock);
	return 0;
}

static int kick(struct esa_xsk *x)
{
	int rc;

	if (x->q->zerocopy) {
		if (xsk_ring_prod__needs_wakeup(&x->tx) &&
		    sendto(X.xsk_socket__fd(x->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 &&
		    errno != EAGAIN && errno != EBUSY && errno != ENOBUFS && errno != EINTR)
			return -errno;
		return 0;
	}
	for (int t = 0; t < 1000 && !tx_empty(x); t++)
		if ((rc = kick_once(x)))
			return rc;
	return 0;
}

int esa_xsk_tx_kick(struct esa_xsk *x)
{
	return x->q->zerocopy || tx_empty(x) ? 0 : kick_once(x);
}

int esa_xsk_send(struct esa_xsk *x, const uint32_t *frames, int n)
{
	struct xq *q = x->q;
	uint32_t idx, k = xsk_ring_prod__reserve(&x->tx, n, &idx);
	int rc;

	for (uint32_t j = 0; j < k; j++) {
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&x->tx, idx + j);
		uint32_t f = x->txf[frames[j]];

		d->addr = (uint64_t)f * q->fs + ESA_XSK_OFF;
		d->len = x->txlen[frames[j]];
		d->options = 0;
		__atomic_add_fetch(&q->inflight[f], 1, __ATOMIC_RELAXED);
	}
	xsk_ring_prod__submit(&x->tx, k);
	rc = kick(x);
	return rc ? rc : (int)k;
}

/* ------------------------------------------------------------------ */
/* Receiving                                                           */
/* ------------------------------------------------------------------ */

/* An IPv4 UDP packet to one of our addresses, its IP header checksum
 * right: its UDP payload and source, or false. */
static bool parse(struct esa_xsk *x, uint8_t *f, uint32_t len, struct esa_xsk_rx *rx)
{
	struct iphdr *ip = (struct iphdr *)(f + 14);
	struct udphdr *udp = (struct udphdr *)(ip + 1);
	uint32_t tot, ulen;
	bool ours = false;

	if (len < HDRS || f[12] != 0x08 || f[13] != 0x00 || ip->version != 4 ||
	    ip->ihl != 5 || ip->protocol != IPPROTO_UDP || (ntohs(ip->frag_off) & 0x3fff))
		return false;
	tot = ntohs(ip->tot_len);
	ulen = ntohs(udp->len);
	if (tot > len - 14 || tot < 28 || ulen != tot - 20 || csum_fold(csum_add(0, ip, 20)))
		return false;
	for (int i = 0; i < x->nlocal; i++)
		ours |= ip->daddr == x->local[i].sin_addr.s_addr && udp->dest == x->local[i].sin_port;
	if (!ours)
		return false;
	/*
	 * The UDP checksum is not checked, as the switch does not: a sender's
	 * checksum offload may leave it partial in the frame (the kernel
	 * trusts such packets from their skb's flags, which AF_XDP does not
	 * carry), and the link's CRC guards the bytes.
	 */
	rx->pkt = (uint8_t *)(udp + 1);
	rx->len = ulen - 8;
	rx->src = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = udp->source,
					.sin_addr.s_addr = ip->saddr };
	return true;
}

/*
 * Zero-copy (XDP_USE_NEED_WAKEUP): a driver that found the fill ring empty
 * stops receiving until it is woken; copy mode fills from the ring in the
 * kernel's receive path and never asks.
 */
static void wake_fill(struct esa_xsk *x)
{
	if (x->q->zerocopy && xsk_ring_prod__needs_wakeup(&x->q->fill))
		recvfrom(X.xsk_socket__fd(x->xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
}

int esa_xsk_recv(struct esa_xsk *x, struct esa_xsk_rx *rx, int max)
{
	uint32_t idx, n = xsk_ring_cons__peek(&x->rx, max, &idx);
	int got = 0;

	if (!n)
		wake_fill(x);	/* nothing came: perhaps for want of frames */

	for (uint32_t j = 0; j < n; j++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&x->rx, idx + j);
		uint8_t *f = xsk_umem__get_data(x->q->area, d->addr);

		if (parse(x, f, d->len, &rx[got])) {
			rx[got++].buf = ESA_XSK_BUF | d->addr;
		} else {
			x->bad++;
			esa_xsk_release(x, ESA_XSK_BUF | d->addr);
		}
	}
	if (n)
		xsk_ring_cons__release(&x->rx, n);
	return got;
}

void esa_xsk_release(struct esa_xsk *x, uint64_t buf)
{
	uint64_t addr = buf & ~ESA_XSK_BUF;

	x->rel[x->nrel++] = addr - addr % x->q->fs;
	if (x->nrel == x->crel)
		esa_xsk_flush(x);
}

void esa_xsk_flush(struct esa_xsk *x)
{
	struct xq *q = x->q;
	uint32_t filled = __atomic_load_n(q->fill.producer, __ATOMIC_RELAXED) -
			  __atomic_load_n(q->fill.consumer, __ATOMIC_RELAXED);

	/* frames kept (the FETCH cache) come back late: keep the fill ring
	 * stocked from the free ones meanwhile */
	if (!x->nrel && filled >= FILL_SIZE / 2)
		return;
	pthread_mutex_lock(&q->lock);
	for (uint32_t i = 0; i < x->nrel; i++)
		q->free[q->nfree++] = x->rel[i] / q->fs;
	x->nrel = 0;
	refill(q);
	pthread_mutex_unlock(&q->lock);
	wake_fill(x);
}
