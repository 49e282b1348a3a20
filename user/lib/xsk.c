// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libesa: AF_XDP (xsk.h), the socket: opening and closing, and the
 * libraries it runs on.  The rest is in files of their own (xsk_int.h).
 *
 * Closing.  Nothing a socket posted may be reused while the kernel can
 * still read it: the socket leaves the program's maps, lets the kernel
 * send what it posted (for a while: a device that is down keeps it), then
 * goes, and only then do its frames go back to the queue's UMEM, each once
 * its sends completed (in copy mode what stayed in the TX ring was never
 * taken and never will be: those are free at once).  Another socket of the
 * process on the same queue (xdp_workers, 2 by default) may open meanwhile
 * and must never get a frame still being sent.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_xdp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "xsk_int.h"

struct xsk_fns X;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

int xsk_fail(char *err, size_t len, int e, const char *fmt, ...)
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
static int load_libs(char *err, size_t len)
{
	if (X.xdp)
		return 0;
	X.bpf = dlopen("libbpf.so.1", RTLD_NOW | RTLD_LOCAL);
	X.xdp = X.bpf ? dlopen("libxdp.so.1", RTLD_NOW | RTLD_LOCAL) : NULL;
	if (!X.xdp) {
		xsk_fail(err, len, ENOENT, "cannot load %s (Debian: apt install %s): %s",
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
	xsk_fail(err, len, ENOSYS, "libxdp or libbpf lacks a function: %s", dlerror());
fail:
	if (X.xdp)
		dlclose(X.xdp);
	if (X.bpf)
		dlclose(X.bpf);
	X.xdp = X.bpf = NULL;
	return -ENOSYS;
}

/* ifname's index (if_nametoindex() loses why it failed). */
static int if_index(const char *ifname, int *ifindex)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFINDEX, &ifr))
		rc = -errno;
	close(fd);
	*ifindex = ifr.ifr_ifindex;
	return rc;
}

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
	if (rc == -ENOENT) {
		int ifindex, e = if_index(x->dev->ifname, &ifindex);

		rc = e ? e : rc;	/* libxdp's if_nametoindex() lost why */
	}
	if (rc) {
		x->xsk = NULL;
		return xsk_fail(err, len, rc, "AF_XDP socket on %s queue %u: %s%s",
				x->dev->ifname, q->queue, strerror(-rc),
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

#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL	69
#define SO_BUSY_POLL_BUDGET	70
#endif
#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET	9
#endif

/*
 * The socket's tuning (esa_xsk_cfg): busy polling, whose budget is the
 * receive batch, and the copy-mode send call's budget.  A kernel that
 * refuses either fails the opening with its reason: asked for, never
 * silently without.
 */
static int tune_socket(struct esa_xsk *x, const struct esa_xsk_cfg *c, char *err, size_t len)
{
	int fd = X.xsk_socket__fd(x->xsk), one = 1, us = (int)c->busy_poll_us;
	int budget = RX_BATCH, e;
	unsigned int tb = c->tx_budget;

	if (us && (setsockopt(fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &one, sizeof(one)) ||
		   setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof(us)) ||
		   setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget, sizeof(budget)))) {
		e = errno;
		return xsk_fail(err, len, e, "xsk_busy_poll %d on %s queue %u: %s%s", us,
				x->dev->ifname, x->q->queue, strerror(e),
				e == EPERM ? " (needs CAP_NET_ADMIN)" :
				e == ENOPROTOOPT ? " (a kernel without CONFIG_NET_RX_BUSY_POLL)" : "");
	}
	x->busy_us = us;
	if (tb && setsockopt(fd, SOL_XDP, XDP_MAX_TX_SKB_BUDGET, &tb, sizeof(tb))) {
		e = errno;
		return xsk_fail(err, len, e, "xsk_tx_budget %u on %s queue %u: %s%s", tb,
				x->dev->ifname, x->q->queue, strerror(e),
				e == ENOPROTOOPT ? " (kernels before 6.17 have no "
				"XDP_MAX_TX_SKB_BUDGET: leave it 0)" :
				e == EACCES ? " (the kernel takes 32 up to the TX ring's size)" : "");
	}
	return 0;
}

/* The interface: given, or the route's to c->route_to. */
static int which_if(struct esa_xsk *x, const struct esa_xsk_cfg *c, char *ifname,
		    int *ifindex, char *err, size_t len)
{
	struct in_addr via;
	int rc;

	if (c->ifname && c->ifname[0]) {
		rc = if_index(c->ifname, ifindex);
		if (rc == -ENODEV)
			return xsk_fail(err, len, ENODEV, "no interface %s here", c->ifname);
		if (rc)
			return xsk_fail(err, len, rc, "interface %s: %s", c->ifname,
					strerror(-rc));
		snprintf(ifname, IF_NAMESIZE, "%s", c->ifname);
		return 0;
	}
	rc = nh_route(&x->nh, c->route_to, ifindex, &via);
	if (rc || !if_indextoname(*ifindex, ifname))
		return xsk_fail(err, len, rc ? rc : -errno, "no route to %s to take its "
				"interface: %s (give ifname)", inet_ntoa(c->route_to),
				strerror(rc ? -rc : errno));
	return 0;
}

/* The queue's UMEM, the socket's frames, the socket bound (reg_lock). */
static int open_queue(struct esa_xsk *x, const struct esa_xsk_cfg *c, uint32_t fs,
		      char *err, size_t len)
{
	uint32_t need = esa_xsk_need(c->tx_frames, c->rx_hold);
	int rc;

	/*
	 * The kernel frees a closed socket's hold on its queue a moment later
	 * (deferred work): a queue our last socket just left can still be
	 * busy.  Then make the UMEM anew and bind again, for up to 2 s.
	 */
	for (int t = 0;; t++) {
		x->q = xq_get(x->dev, c->queue, c->umem_frames > need ? c->umem_frames : need,
			      fs, &rc, err, len);
		if (!x->q)
			return rc;
		pthread_mutex_lock(&x->q->lock);
		rc = xq_take(x, c->tx_frames, c->rx_hold, err, len);
		pthread_mutex_unlock(&x->q->lock);
		if (!rc)
			rc = bind_socket(x, err, len);
		if (rc != -EBUSY || x->q->refs > 1 || t == 200)
			return rc;
		xq_give(x, true);
		xq_put(x->q);
		x->q = NULL;
		usleep(10000);
	}
}

static int open_locked(struct esa_xsk *x, const struct esa_xsk_cfg *c, char *err,
		       size_t len)
{
	char ifname[IF_NAMESIZE];
	uint32_t fs = ESA_XSK_OFF + HDRS + c->pkt_max <= 2048 ? 2048 : 4096;
	int ifindex, rc;

	if (ESA_XSK_OFF + HDRS + c->pkt_max > 4096)
		return xsk_fail(err, len, EMSGSIZE, "packets of %u bytes do not fit a "
				"4096-byte frame", HDRS + c->pkt_max);
	rc = which_if(x, c, ifname, &ifindex, err, len);
	if (rc)
		return rc;
	x->dev = xdev_get(ifindex, ifname, &rc, err, len);
	if (!x->dev)
		return rc;
	rc = open_queue(x, c, fs, err, len);
	if (!rc)
		rc = tune_socket(x, c, err, len);
	if (!rc)
		rc = xdev_steer(x, err, len);
	if (rc)
		return rc;
	pthread_mutex_lock(&x->q->lock);
	xq_refill(x->q);
	pthread_mutex_unlock(&x->q->lock);
	snprintf(x->desc, sizeof(x->desc), "xdp %s queue %u %s, %s", ifname, c->queue,
		 x->q->zerocopy ? "zerocopy" : "copy", x->dev->how);
	if (x->busy_us && esa_xsk_busy_napi(x))
		snprintf(x->desc + strlen(x->desc), sizeof(x->desc) - strlen(x->desc),
			 ", busy poll %u us on NAPI %u", x->busy_us, x->napi_id);
	else if (x->busy_us)
		snprintf(x->desc + strlen(x->desc), sizeof(x->desc) - strlen(x->desc),
			 ", busy poll %u us: no NAPI known for the queue", x->busy_us);
	return 0;
}

/* Closing: let the kernel send what the socket posted, for a while (a
 * device that is down, or pushes back, may keep it). */
static void drain(struct esa_xsk *x)
{
	struct xq *q = x->q;

	for (int t = 0; t < 100; t++) {
		bool posted = false;

		if (xsk_kick(x))
			return;		/* down: it will not drain */
		pthread_mutex_lock(&q->lock);
		xq_reap(q);
		for (uint32_t i = 0; i < x->ntx && !posted; i++)
			posted = q->inflight[x->txf[i]];
		pthread_mutex_unlock(&q->lock);
		if (!posted)
			return;
		usleep(1000);
	}
}

static void close_locked(struct esa_xsk *x)
{
	uint32_t idx, n;

	if (x->xsk) {
		if (x->dev)
			xdev_unsteer(x);
		drain(x);
		/* what the RX ring still holds goes back to the UMEM */
		n = xsk_ring_cons__peek(&x->rx, RX_SIZE, &idx);
		for (uint32_t j = 0; j < n; j++)
			esa_xsk_release(x, ESA_XSK_BUF | xsk_ring_cons__rx_desc(&x->rx, idx + j)->addr);
		xsk_ring_cons__release(&x->rx, n);
		if (!x->q->zerocopy)
			xq_unpost(x);
		X.xsk_socket__delete(x->xsk);
	}
	if (x->q) {
		/* with the last socket of the queue went its rings */
		xq_give(x, x->q->refs == 1);
		xq_put(x->q);
	}
	if (x->dev)
		xdev_put(x->dev);
}

static void xsk_free(struct esa_xsk *x)
{
	nh_free(&x->nh);
	free(x->local);
	free(x->txf);
	free(x->txlen);
	free(x->rel);
	free(x);
}

int esa_xsk_open(struct esa_xsk **out, const struct esa_xsk_cfg *c, char *err, size_t len)
{
	struct esa_xsk *x = calloc(1, sizeof(*x));
	int rc;

	*out = NULL;
	if (!x)
		return xsk_fail(err, len, ENOMEM, "out of memory");
	x->nh.nl = -1;
	x->nlocal = c->nlocal;
	x->local = calloc(c->nlocal ? c->nlocal : 1, sizeof(*x->local));
	if (x->local)
		memcpy(x->local, c->local, c->nlocal * sizeof(*c->local));
	x->txf = calloc(c->tx_frames ? c->tx_frames : 1, sizeof(*x->txf));
	x->txlen = calloc(c->tx_frames ? c->tx_frames : 1, sizeof(*x->txlen));
	x->crel = c->rx_hold + RX_SIZE + RX_BATCH;
	x->rel = calloc(x->crel, sizeof(*x->rel));
	if (!x->local || !x->txf || !x->txlen || !x->rel) {
		xsk_free(x);
		return xsk_fail(err, len, ENOMEM, "out of memory");
	}
	/* the netlink socket first: it lives in the calling thread's namespace */
	rc = nh_init(&x->nh, c, err, len);
	if (rc) {
		xsk_free(x);
		return rc;
	}
	pthread_mutex_lock(&reg_lock);
	rc = load_libs(err, len);
	if (!rc)
		rc = open_locked(x, c, err, len);
	if (rc)
		close_locked(x);
	pthread_mutex_unlock(&reg_lock);
	if (rc) {
		xsk_free(x);
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
	xsk_free(x);
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

uint64_t esa_xsk_tx_down(const struct esa_xsk *x)
{
	return x->tx_down;
}
