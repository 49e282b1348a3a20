/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * AF_XDP for libesa's workers and for esa-ps: UMEM frames as the packets'
 * memory, an XDP program on the interface (esa_xsk.bpf.c, through a
 * bpf_link) that steers only our addresses' UDP packets to our sockets,
 * full Ethernet/IP/UDP frames to the next hop's MAC.  Not installed.
 *
 * One process shares, per network namespace and interface, one XDP
 * program, and per queue one UMEM: the sockets of the workers that sit on
 * the same queue share it (XDP_SHARED_UMEM), each with its own RX and TX
 * rings and its own send frames.  All of this is behind one lock for
 * opening and closing and one per queue for its fill and completion rings.
 *
 * The files (xsk_int.h says which owns which state): xsk.c the socket,
 * xsk_umem.c frames and UMEM, xsk_prog.c the steering program and its
 * lifetime, xsk_neigh.c next hops and the neighbour cache, xsk_rxtx.c
 * sending, receiving and parsing.
 */
#ifndef LIBESA_XSK_H
#define LIBESA_XSK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

/* A receive-buffer handle of AF_XDP (esa_io_release() tells them apart). */
#define ESA_XSK_BUF	(1ULL << 63)

/* A socket's TX ring, and the kernel's frames a copy-mode send call takes
 * unless told more (XDP_MAX_TX_SKB_BUDGET, 32 up to the ring's size). */
#define ESA_XSK_TX_RING		512
#define ESA_XSK_TX_BUDGET_MIN	32

struct esa_xsk;

struct esa_xsk_cfg {
	const char *ifname;		/* "" or NULL: the route to route_to's */
	struct in_addr route_to;	/* the main peer (the switch) */
	uint32_t queue;
	const struct sockaddr_in *local;	/* steered to us: address and port */
	int	nlocal;
	uint32_t tx_frames;		/* frames kept for sending */
	uint32_t rx_hold;		/* frames we may keep from receiving */
	uint32_t pkt_max;		/* largest UDP payload either way */
	uint32_t umem_frames;		/* the UMEM's frames if this opening
					 * makes it (others of this process may
					 * share it); 0: this socket's need */
	uint32_t neigh_ttl_ms;		/* a resolved next hop is trusted this
					 * long, then checked again (0: 30 s) */
	uint32_t neigh_retry_ms;	/* one that failed is tried again after
					 * this long (0: 1 s) */
	uint32_t busy_poll_us;		/* busy polling: SO_PREFER_BUSY_POLL,
					 * SO_BUSY_POLL (this), SO_BUSY_POLL_BUDGET;
					 * esa_xsk_busy_wait() spins this long
					 * (0: off) */
	uint32_t tx_budget;		/* copy mode: frames one send call takes
					 * (XDP_MAX_TX_SKB_BUDGET, kernel 6.17 and
					 * later; 0: the kernel's 32) */
};

/* The frames a socket needs of its queue's UMEM (beside the fill ring). */
uint32_t esa_xsk_need(uint32_t tx_frames, uint32_t rx_hold);

/* A received UDP packet. */
struct esa_xsk_rx {
	uint8_t	*pkt;			/* UDP payload */
	size_t	len;
	struct sockaddr_in src;
	uint64_t buf;			/* for esa_xsk_release() */
};

/* Open in the calling thread's network namespace; 0 or -errno and a
 * one-line reason naming what is missing. */
int esa_xsk_open(struct esa_xsk **x, const struct esa_xsk_cfg *c, char *err, size_t len);
void esa_xsk_close(struct esa_xsk *x);
/* "DEV queue N copy|zerocopy, native|generic XDP, ..." */
const char *esa_xsk_desc(const struct esa_xsk *x);
bool esa_xsk_zerocopy(const struct esa_xsk *x);
int esa_xsk_fd(const struct esa_xsk *x);
/* The route's device, its next hop and MAC for dst, waiting up to a second
 * for the kernel to resolve it (for opening: never on the send path). */
int esa_xsk_next_hop(struct esa_xsk *x, struct in_addr dst, uint8_t mac[6], char *err,
		     size_t len);

/* The next-hop cache of a socket: destinations kept, lookups, answers from
 * the cache, the kernel's tables read, resolutions asked of the kernel,
 * answers "failed" from the negative cache, entries evicted for room. */
struct esa_xsk_neigh_stats {
	uint64_t entries, lookups, hits, queries, probes, negative, evicted;
};
void esa_xsk_neigh_stats(const struct esa_xsk *x, struct esa_xsk_neigh_stats *st);

/* Send frame i (0 .. tx_frames - 1): the UDP payload's place in it. */
uint8_t *esa_xsk_tx_payload(struct esa_xsk *x, uint32_t i);
/* Its Ethernet, IP and UDP headers, from `from` to `to`, for a payload of
 * paylen bytes.  Never waits: -EAGAIN while `to`'s next hop is being
 * resolved, -EHOSTUNREACH once that failed (until its retry time), and
 * another -errno if the route does not leave by this interface: send it
 * another way meanwhile (UDP). */
int esa_xsk_tx_prep(struct esa_xsk *x, uint32_t i, const struct sockaddr_in *from,
		    const struct sockaddr_in *to, size_t paylen, char *err, size_t len);
/* The frame is still posted (being sent): it must not change. */
bool esa_xsk_tx_busy(struct esa_xsk *x, uint32_t i);
/* Wait until it is not, for at most a second: false if it still is (the
 * device does not complete its sends), and then it must stay untouched. */
bool esa_xsk_tx_claim(struct esa_xsk *x, uint32_t i);
/* Post frames[0..n) and have the kernel send them: how many were posted
 * (as many as the ring had room for), or -errno.  A device that is down
 * (ENETDOWN, ENXIO after a down and up) is no error: the frames stay
 * posted and go when it is up (esa_xsk_tx_down() counts such kicks). */
int esa_xsk_send(struct esa_xsk *x, const uint32_t *frames, int n);
/* Frames still in the TX ring (the device pushed back, or was down): offer
 * them to the kernel once more; 0 or -errno.  Call it now and then (every
 * pump). */
int esa_xsk_tx_kick(struct esa_xsk *x);
uint64_t esa_xsk_tx_down(const struct esa_xsk *x);

/*
 * Busy polling (busy_poll_us): the NAPI id the socket's busy polls run, 0
 * if the kernel knows none for its queue (then they poll nothing: kernels
 * from 6.13 take it from the driver's queue at bind, netif_queue_set_napi(),
 * older ones from the first packet received), or busy polling is off.
 */
uint32_t esa_xsk_busy_napi(struct esa_xsk *x);
/* With busy polling on: run the device's NAPI from here (a non-blocking
 * recvfrom) until a packet is in the RX ring, for at most busy_poll_us and
 * not past deadline_ns (CLOCK_MONOTONIC); whether one is.  Off: false. */
bool esa_xsk_busy_wait(struct esa_xsk *x, uint64_t deadline_ns);
/* Send calls made (kicks), for tests and tuning. */
uint64_t esa_xsk_kicks(const struct esa_xsk *x);

/* Up to max received packets (malformed ones are counted and dropped). */
int esa_xsk_recv(struct esa_xsk *x, struct esa_xsk_rx *rx, int max);
/* Frame f of len bytes: an IPv4 UDP packet to one of local[0..nlocal),
 * without options or fragments, lengths and IP header checksum right:
 * true and its payload and source in rx (esa_xsk_recv's check). */
bool esa_xsk_parse(const struct sockaddr_in *local, int nlocal, uint8_t *f, uint32_t len,
		   struct esa_xsk_rx *rx);
/* A received packet's frame is free again (after esa_xsk_recv's batch, or
 * later: a kept one); esa_xsk_flush() hands freed frames to the kernel. */
void esa_xsk_release(struct esa_xsk *x, uint64_t buf);
void esa_xsk_flush(struct esa_xsk *x);
/* Malformed packets dropped, and the kernel's drops (XDP_STATISTICS). */
uint64_t esa_xsk_rx_bad(const struct esa_xsk *x);

#endif /* LIBESA_XSK_H */
