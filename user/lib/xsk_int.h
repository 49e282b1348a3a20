/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The AF_XDP transport's insides, shared by its files (xsk.h is its
 * interface).  Who owns what:
 *
 *   xsk.c        the socket (struct esa_xsk): opening, closing, its rings'
 *                life; the registry lock; libxdp and libbpf (X)
 *   xsk_umem.c   a queue's UMEM (struct xq): frames, the fill and
 *                completion rings, which frames are free, posted or
 *                orphaned, and how many are promised
 *   xsk_prog.c   an interface (struct xdev): the steering program, its
 *                maps, its bpf_link, the slots of xsks_map
 *   xsk_neigh.c  next hops (struct nh_cache): routes, the neighbour cache,
 *                resolving without waiting
 *   xsk_rxtx.c   sending (building frames, posting, kicking) and receiving
 *                (parsing, giving frames back)
 *
 * Locks: reg_lock (xsk.c) over the registry of interfaces and queues
 * (opening, closing); xq.lock over a queue's fill and completion rings and
 * its frame books.  A socket's own rings, frames and next-hop cache are its
 * user's: one thread at a time.
 */
#ifndef LIBESA_XSK_INT_H
#define LIBESA_XSK_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>
#include <net/if.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#include "xsk.h"

#define ESA_XSK_OFF	270	/* XDP_PACKET_HEADROOM + the UMEM headroom */
#define UMEM_HEADROOM	14
#define HDRS		42	/* Ethernet, IPv4, UDP */
#define FILL_SIZE	1024
#define COMP_SIZE	2048
#define RX_SIZE		512
#define TX_SIZE		ESA_XSK_TX_RING
#define RX_BATCH	64

/* ------------------------------------------------------------------ */
/* libxdp (the xsk API) and libbpf, opened at run time (xsk.c)          */
/* ------------------------------------------------------------------ */

#define XDP_FNS(F) F(xsk_umem__create) F(xsk_umem__delete) F(xsk_socket__create_shared) \
	F(xsk_socket__delete) F(xsk_socket__fd)
#define BPF_FNS(F) F(libbpf_set_print) F(bpf_object__open_mem) F(bpf_object__load)	\
	F(bpf_object__find_program_by_name) F(bpf_program__fd)				\
	F(bpf_object__find_map_by_name) F(bpf_object__close) F(bpf_map__fd)		\
	F(bpf_map_update_elem) F(bpf_map_delete_elem) F(bpf_map_lookup_elem)		\
	F(bpf_link_create) F(bpf_xdp_query) F(bpf_prog_get_fd_by_id)			\
	F(bpf_obj_get_info_by_fd)

struct xsk_fns {
#define F(n) __typeof__(&n) n;
	XDP_FNS(F)
	BPF_FNS(F)
#undef F
	void	*xdp, *bpf;
};
extern struct xsk_fns X;

/* err <- the reason; returns -e. */
int xsk_fail(char *err, size_t len, int e, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* ------------------------------------------------------------------ */
/* A queue's UMEM (xsk_umem.c)                                         */
/* ------------------------------------------------------------------ */

/* One queue of an interface: its UMEM, shared by our sockets on it. */
struct xq {
	struct xq *next;
	struct xdev *dev;
	uint32_t queue;
	int	refs;
	pthread_mutex_t lock;	/* fill, comp, free, inflight, orphan, avail */
	uint8_t	*area;
	size_t	size;
	uint32_t fs, nframes;	/* frame size, frames */
	struct xsk_umem *umem;
	struct xsk_ring_prod fill;
	struct xsk_ring_cons comp;
	uint32_t *free, nfree;	/* frames nobody holds */
	uint16_t *inflight;	/* per frame: sends posted, not completed */
	uint8_t	*orphan;	/* per frame: its socket closed while it was
				 * posted; free once its sends complete */
	uint32_t norphans;
	uint32_t avail;		/* frames not promised to a socket */
	bool	zerocopy, bound;
};

/* The queue's UMEM, made with `frames` frames beside the fill ring's if
 * new; NULL, *rc and a reason (reg_lock). */
struct xq *xq_get(struct xdev *d, uint32_t queue, uint32_t frames, uint32_t fs, int *rc,
		  char *err, size_t len);
void xq_put(struct xq *q);
/* Hand free frames to the fill ring; take back what the kernel sent
 * (q->lock). */
void xq_refill(struct xq *q);
void xq_reap(struct xq *q);
/* A socket's send frames and its promise of receive frames (q->lock). */
int xq_take(struct esa_xsk *x, uint32_t tx, uint32_t hold, char *err, size_t len);
/* Copy mode, the socket closing: what its TX ring still holds will never
 * be sent (only our system calls send): no longer posted. */
void xq_unpost(struct esa_xsk *x);
/* Back to the queue, once its socket is gone: the frames whose sends
 * completed now, the others when they complete.  last: the queue goes too
 * (its rings went with the socket). */
void xq_give(struct esa_xsk *x, bool last);
uint8_t *xq_frame(const struct xq *q, uint32_t f);
/* Zero-copy: wake a driver that found the fill ring empty. */
void xsk_wake_fill(struct esa_xsk *x);

/* ------------------------------------------------------------------ */
/* An interface and its program (xsk_prog.c)                           */
/* ------------------------------------------------------------------ */

/* One interface (in one network namespace): the program on it. */
struct xdev {
	struct xdev *next;
	dev_t	ns_dev;
	ino_t	ns_ino;
	int	ifindex;
	char	ifname[IF_NAMESIZE];
	int	refs;
	struct bpf_object *obj;
	int	xsks_fd, ports_fd;	/* its maps */
	int	link;		/* the bpf_link: the program's life */
	bool	generic;	/* generic (SKB) mode: the driver has no XDP */
	uint64_t slots;		/* xsks_map entries in use */
	uint8_t	mac[6];
	bool	noarp;		/* loopback: no MACs */
	char	how[96];	/* how the program runs */
	struct xq *qs;
};

/* The calling thread's interface's entry, the program attached on first
 * use; NULL and a reason (reg_lock). */
struct xdev *xdev_get(int ifindex, const char *ifname, int *rc, char *err, size_t len);
void xdev_put(struct xdev *d);
/* Steer the socket's addresses to it; undo it (reg_lock). */
int xdev_steer(struct esa_xsk *x, char *err, size_t len);
void xdev_unsteer(struct esa_xsk *x);

/* ------------------------------------------------------------------ */
/* Next hops (xsk_neigh.c)                                             */
/* ------------------------------------------------------------------ */

struct nh;

/* A socket's next hops: destination -> MAC, expiring, with failures kept
 * until a retry time.  Resolving never waits: the kernel is asked to
 * resolve (RTM_NEWNEIGH, NTF_USE) and its table read again later. */
struct nh_cache {
	int	nl;		/* NETLINK_ROUTE, in the socket's namespace */
	uint32_t seq;
	struct nh *e;		/* entries */
	int32_t	*bucket;	/* heads of chains, by destination */
	uint32_t n, cap, nbucket, hand;
	uint64_t ttl_ns, retry_ns;
	struct esa_xsk_neigh_stats st;
};

int nh_init(struct nh_cache *c, const struct esa_xsk_cfg *cfg, char *err, size_t len);
void nh_free(struct nh_cache *c);
/* The route to dst (RTM_GETROUTE): its device and next hop. */
int nh_route(struct nh_cache *c, struct in_addr dst, int *oif, struct in_addr *via);
/* dst's next hop's MAC now: 0, -EAGAIN (being resolved), or why not
 * (-EHOSTUNREACH: resolution failed, kept until the retry time;
 * -ENETUNREACH: the route leaves by another interface; no route). */
int nh_lookup(struct esa_xsk *x, struct in_addr dst, uint8_t mac[6], char *err, size_t len);

/* ------------------------------------------------------------------ */
/* The socket (xsk.c)                                                  */
/* ------------------------------------------------------------------ */

struct esa_xsk {
	struct xdev *dev;
	struct xq *q;
	struct xsk_socket *xsk;
	struct xsk_ring_cons rx;
	struct xsk_ring_prod tx;
	uint32_t slot;
	bool	steered;	/* slot and ports in the program's maps */
	uint32_t ntx, *txf;	/* send frames */
	uint16_t *txlen;	/* their lengths */
	uint32_t promised;	/* frames promised by q->avail */
	struct sockaddr_in *local;
	int	nlocal;
	uint64_t *rel;		/* frames freed, not yet back in the fill ring */
	uint32_t nrel, crel;
	struct nh_cache nh;	/* xsk_neigh.c */
	uint64_t bad;		/* malformed packets dropped */
	uint64_t tx_down;	/* kicks the device refused (down, unbound) */
	uint64_t kicks;		/* send calls made */
	uint32_t busy_us;	/* busy polling (esa_xsk_cfg) */
	uint32_t napi_id;	/* ... the NAPI it runs, once known */
	char	desc[224];
};

/* CLOCK_MONOTONIC in ns (the neighbour cache's ages, busy polling's spin). */
static inline uint64_t xsk_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* xsk_rxtx.c: have the kernel take what the TX ring holds; 0, 1 (the
 * device is down: the frames stay posted) or -errno. */
int xsk_kick(struct esa_xsk *x);
bool xsk_tx_empty(const struct esa_xsk *x);

#endif /* LIBESA_XSK_INT_H */
