// SPDX-License-Identifier: GPL-2.0
/*
 * libesa's AF_XDP transport (user/lib/xsk*.c) driven through xsk.h, as root
 * in a network namespace of its own (loopback, and a veth pair whose far
 * end is in another namespace):
 *
 *   - the receive parser fed crafted frames (bad IP checksum, tot_len past
 *     the frame, UDP length not tot_len's, IHL > 5, fragments), directly and
 *     through the socket (refused and counted, or not steered at all);
 *   - closing a socket whose frames are still posted, while another socket
 *     of the queue goes on: no frame still posted reaches the next opener;
 *   - a steer that fails (no slot left) leaves the other sockets steered;
 *   - opening fails with what failed (errno and reason), leaving nothing;
 *   - killed processes (SIGKILL, at any point of opening) leave no program;
 *     closing a worker opened in another namespace detaches it there;
 *   - a device that goes down and up: posted frames wait, the worker goes
 *     on; a send posts what the ring has room for;
 *   - next hops: never waited for on the send path, failures kept until
 *     their retry time, thousands of destinations kept, entries expire;
 *   - two workers on one queue, one opening and closing while the other
 *     sends.
 *
 * XSKTEST=name runs the tests whose function names contain it.  Prints TAP.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "esa.h"
#include "esa_int.h"
#include "xsk.h"
#include "simswitch.h"
#include "../tap.h"

static uint16_t next_port;
static char peer_ns[64];	/* the veth's far end */

static uint16_t ports(int n)
{
	uint16_t p = next_port;

	next_port += n;
	return p;
}

static struct sockaddr_in sin4(const char *addr, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, addr, &a.sin_addr);
	return a;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* Whether dev (in namespace ns, or ours) runs an XDP program. */
static bool has_xdp(const char *ns, const char *dev)
{
	return !sh("ip %s%s link show dev %s | grep -q 'prog/xdp'", ns ? "-n " : "",
		   ns ? ns : "", dev);
}

/* Until dev runs no XDP program: 5 s at most (the kernel detaches a dead
 * process's link as its files close); whether it went. */
static bool xdp_gone(const char *ns, const char *dev)
{
	for (int t = 0; t < 100; t++) {
		if (!has_xdp(ns, dev))
			return true;
		usleep(50000);
	}
	return false;
}

/* A socket on dev for addr:port with tx send frames; umem: the UMEM's
 * frames if this opening makes it (0: its own need). */
static struct esa_xsk *xopen_cfg(const char *dev, struct sockaddr_in *local, uint32_t tx,
				 uint32_t umem, uint32_t ttl_ms, uint32_t retry_ms, char *err,
				 size_t len)
{
	struct esa_xsk_cfg c = {
		.ifname = dev, .local = local, .nlocal = 1, .tx_frames = tx, .pkt_max = 1100,
		.umem_frames = umem, .neigh_ttl_ms = ttl_ms, .neigh_retry_ms = retry_ms,
	};
	struct esa_xsk *x;

	return esa_xsk_open(&x, &c, err, len) ? NULL : x;
}

static struct esa_xsk *xopen(const char *dev, struct sockaddr_in *local, uint32_t tx,
			     uint32_t umem, char *err, size_t len)
{
	return xopen_cfg(dev, local, tx, umem, 0, 0, err, len);
}

/* Received packets on x within 2 s, until want came; how many. */
static int rx_until(struct esa_xsk *x, int want, struct esa_xsk_rx *last)
{
	struct esa_xsk_rx rx[64];
	int got = 0;

	for (int t = 0; t < 200 && got < want; t++) {
		struct pollfd p = { .fd = esa_xsk_fd(x), .events = POLLIN };
		int n;

		poll(&p, 1, 10);
		n = esa_xsk_recv(x, rx, 64);
		for (int i = 0; i < n; i++) {
			if (last)
				*last = rx[i];
			esa_xsk_release(x, rx[i].buf);
		}
		esa_xsk_flush(x);
		got += n;
	}
	return got;
}

/* ------------------------------------------------------------------ */
/* The receive parser                                                  */
/* ------------------------------------------------------------------ */

static void ip_csum(struct iphdr *ip)
{
	const uint8_t *b = (const uint8_t *)ip;
	uint32_t s = 0;

	ip->check = 0;
	for (int i = 0; i < ip->ihl * 4; i += 2)
		s += (uint32_t)b[i] << 8 | b[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	ip->check = htons(~s);
}

enum { C_GOOD, C_CSUM, C_TOTLEN, C_UDPLEN, C_IHL, C_MF, C_OFFSET, C_SHORT, C_PORT, C_MAX };
static const char *const craft_name[C_MAX] = {
	"well-formed", "bad IP checksum", "tot_len past the frame",
	"UDP length not tot_len's", "IHL 6 (an option)", "a first fragment (MF)",
	"a later fragment (offset 8)", "shorter than its headers", "to another port",
};

/* Frame kind k to 127.0.0.1:port, 16 bytes of payload; its length. */
static size_t craft(uint8_t *f, int k, uint16_t port)
{
	int ihl = k == C_IHL ? 6 : 5;
	struct iphdr *ip = (struct iphdr *)(f + 14);
	struct udphdr *udp = (struct udphdr *)(f + 14 + 4 * ihl);
	size_t tot = 4 * ihl + 8 + 16;

	memset(f, 0, 14 + tot);
	f[12] = 0x08;
	*ip = (struct iphdr){ .version = 4, .ihl = ihl, .tot_len = htons(tot), .ttl = 64,
			      .protocol = IPPROTO_UDP, .saddr = htonl(INADDR_LOOPBACK),
			      .daddr = htonl(INADDR_LOOPBACK) };
	if (ihl > 5)
		memset(ip + 1, IPOPT_NOP, 4);
	*udp = (struct udphdr){ .source = htons(7777), .dest = htons(k == C_PORT ? port + 1 :
								       port),
				.len = htons(8 + 16) };
	memcpy(udp + 1, "crafted payload!", 16);
	if (k == C_TOTLEN)
		ip->tot_len = htons(tot + 1);
	if (k == C_MF)
		ip->frag_off = htons(IP_MF);
	if (k == C_OFFSET)
		ip->frag_off = htons(1);
	if (k == C_UDPLEN)
		udp->len = htons(8 + 15);
	ip_csum(ip);
	if (k == C_CSUM)
		ip->check ^= htons(0x0101);
	return k == C_SHORT ? 14 + 20 + 4 : 14 + tot;
}

/* parse() itself: each kind taken or refused. */
static void test_parse(void)
{
	uint16_t p = ports(2);
	struct sockaddr_in me = sin4("127.0.0.1", p);
	uint8_t f[128];
	char wrong[256] = "";

	for (int k = 0; k < C_MAX; k++) {
		struct esa_xsk_rx rx = { 0 };
		size_t n = craft(f, k, p);
		bool took = esa_xsk_parse(&me, 1, f, n, &rx);

		if (took != (k == C_GOOD) ||
		    (took && (rx.len != 16 || memcmp(rx.pkt, "crafted payload!", 16) ||
			      rx.src.sin_port != htons(7777))))
			snprintf(wrong + strlen(wrong), sizeof(wrong) - strlen(wrong), " %s",
				 craft_name[k]);
	}
	ok(!wrong[0], "parse(): a well-formed frame taken (payload, source); refused: bad IP "
	   "checksum, tot_len past the frame, UDP length not tot_len's, IHL > 5, first and "
	   "later fragments, a short frame, another port%s%s", wrong[0] ? "; wrong:" : "",
	   wrong);
}

/* The same frames into lo (a packet socket): the program steers what is to
 * us without options or fragments; the socket refuses and counts the
 * malformed among them; the good one, sent last, arrives once. */
static void test_rx_crafted(void)
{
	static const int order[] = { C_IHL, C_MF, C_OFFSET, C_CSUM, C_TOTLEN, C_UDPLEN, C_GOOD };
	uint16_t p = ports(2);
	struct sockaddr_in me = sin4("127.0.0.1", p);
	struct sockaddr_ll ll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP),
				  .sll_ifindex = if_nametoindex("lo"), .sll_halen = 6 };
	int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_IP));
	struct esa_xsk_rx rx = { 0 };
	char err[256] = "";
	struct esa_xsk *x = xopen("lo", &me, 8, 0, err, sizeof(err));
	uint64_t bad0 = x ? esa_xsk_rx_bad(x) : 0;
	int got = 0;

	for (size_t i = 0; x && fd >= 0 && i < sizeof(order) / sizeof(order[0]); i++) {
		uint8_t f[128];
		size_t n = craft(f, order[i], p);

		sendto(fd, f, n, 0, (struct sockaddr *)&ll, sizeof(ll));
	}
	if (x)
		got = rx_until(x, 1, &rx);
	ok(x && fd >= 0 && got == 1 && rx.len == 16 && esa_xsk_rx_bad(x) - bad0 == 3,
	   "through the socket: bad checksum, tot_len and UDP length refused and counted "
	   "(%llu), IHL > 5 and fragments left to the kernel, the good frame taken once (%d)%s%s",
	   x ? (unsigned long long)(esa_xsk_rx_bad(x) - bad0) : 0ULL, got, x ? "" : ": ", err);
	esa_xsk_close(x);
	if (fd >= 0)
		close(fd);
}

/* ------------------------------------------------------------------ */
/* Frames and closing                                                  */
/* ------------------------------------------------------------------ */

/* Frames of x still posted. */
static int busy_frames(struct esa_xsk *x, uint32_t n)
{
	int busy = 0;

	for (uint32_t i = 0; i < n; i++)
		busy += esa_xsk_tx_busy(x, i);
	return busy;
}

/* One packet from a to b (both on lo), its payload checked. */
static bool one_way(struct esa_xsk *a, struct sockaddr_in *from, struct esa_xsk *b,
		    struct sockaddr_in *to, uint32_t frame)
{
	struct esa_xsk_rx rx = { 0 };
	char err[160];

	if (esa_xsk_tx_prep(a, frame, from, to, 32, err, sizeof(err)))
		return false;
	memset(esa_xsk_tx_payload(a, frame), 0x5a, 32);
	if (esa_xsk_send(a, &frame, 1) != 1 || rx_until(b, 1, &rx) != 1)
		return false;
	return rx.len == 32 && rx.pkt[0] == 0x5a && rx.pkt[31] == 0x5a &&
	       rx.src.sin_port == from->sin_port;
}

/*
 * Two sockets on lo's queue 0 (one UMEM, sized for three).  B posts its
 * frames while lo is down (they stay in its TX ring, never taken) and
 * closes; lo comes back and C opens: none of C's frames may be one still
 * posted (it would stay busy, or change under the kernel).  A and C then
 * send to each other.
 */
static void test_close_posted(void)
{
	uint16_t p = ports(3);
	struct sockaddr_in a_at = sin4("127.0.0.1", p), b_at = sin4("127.0.0.1", p + 1);
	struct sockaddr_in c_at = sin4("127.0.0.1", p + 2);
	uint32_t f[16];
	char err[256] = "";
	struct esa_xsk *a = xopen("lo", &a_at, 16, 3 * esa_xsk_need(16, 0), err, sizeof(err));
	struct esa_xsk *b = a ? xopen("lo", &b_at, 16, 0, err, sizeof(err)) : NULL, *c = NULL;
	int posted = 0, sent = -1, busy = -1;

	for (uint32_t i = 0; b && i < 16; i++) {
		f[i] = i;
		esa_xsk_tx_prep(b, i, &b_at, &a_at, 100, err, sizeof(err));
	}
	if (b && !sh("ip link set dev lo down")) {
		sent = esa_xsk_send(b, f, 16);
		posted = busy_frames(b, 16);
		esa_xsk_close(b);
		sh("ip link set dev lo up");
		c = xopen("lo", &c_at, 16, 0, err, sizeof(err));
		busy = c ? busy_frames(c, 16) : -1;
	}
	ok(posted == 16 && c && busy == 0,
	   "a socket closed with 16 frames posted on a device that is down (send: %d): the "
	   "next opener on the queue gets none still posted (%d of its 16 busy)%s%s", sent, busy,
	   c ? "" : ": ", c ? "" : err);
	ok(c && one_way(a, &a_at, c, &c_at, 0) && one_way(c, &c_at, a, &a_at, 1),
	   "meanwhile the other socket of the queue goes on: it and the new one send to each "
	   "other");
	esa_xsk_close(a);
	esa_xsk_close(c);
}

/* Down, a send posts what the ring has room for (a reservation is all or
 * nothing: asking for more than the room used to post none); up, the
 * frames go. */
static void test_send_partial(void)
{
	uint16_t p = ports(1);
	struct sockaddr_in me = sin4("127.0.0.1", p);
	static uint32_t f[600];
	char err[256] = "";
	struct esa_xsk *x = xopen("lo", &me, 600, 0, err, sizeof(err));
	int first = -1, second = -1, left = -1;

	for (uint32_t i = 0; x && i < 600; i++) {
		f[i] = i;
		esa_xsk_tx_prep(x, i, &me, &me, 64, err, sizeof(err));
	}
	if (x && !sh("ip link set dev lo down")) {
		first = esa_xsk_send(x, f, 500);
		second = esa_xsk_send(x, f + 500, 64);	/* the ring holds 512 */
		sh("ip link set dev lo up");
		for (int t = 0; t < 200 && (left = busy_frames(x, 512)); t++) {
			esa_xsk_tx_kick(x);
			usleep(10000);
		}
	}
	ok(first == 500 && second == 12 && left == 0 && esa_xsk_tx_down(x) > 0,
	   "device down: 500 frames posted, then 12 of 64 (the ring's room), no error "
	   "(%d, %d; %llu kicks refused); up again, they went (%d still posted)", first,
	   second, x ? (unsigned long long)esa_xsk_tx_down(x) : 0ULL, left);
	esa_xsk_close(x);
}

/* Kicks to send 64 frames on x (to itself, on lo). */
static long kicks_for_64(struct esa_xsk *x, struct sockaddr_in *me)
{
	uint32_t f[64];
	uint64_t k0;
	char err[160];

	for (uint32_t i = 0; i < 64; i++) {
		f[i] = i;
		if (esa_xsk_tx_prep(x, i, me, me, 64, err, sizeof(err)))
			return -1;
	}
	k0 = esa_xsk_kicks(x);
	if (esa_xsk_send(x, f, 64) != 64 || busy_frames(x, 64))
		return -1;
	rx_until(x, 64, NULL);
	return (long)(esa_xsk_kicks(x) - k0);
}

static int sockopt(struct esa_xsk *x, int name)
{
	int v = -1;
	socklen_t l = sizeof(v);

	return getsockopt(esa_xsk_fd(x), SOL_SOCKET, name, &v, &l) ? -errno : v;
}

struct noadmin {
	struct esa_xsk **x;
	const struct esa_xsk_cfg *c;
	char	*err;
	size_t	len;
	int	rc;
};

/* Capabilities are a thread's: this one opens without CAP_NET_ADMIN. */
static void *noadmin_main(void *arg)
{
	struct noadmin *a = arg;
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d)) {
		a->rc = -errno;
		return NULL;
	}
	d[CAP_NET_ADMIN / 32].effective &= ~(1u << (CAP_NET_ADMIN % 32));
	if (syscall(SYS_capset, &h, d)) {
		a->rc = -errno;
		return NULL;
	}
	a->rc = esa_xsk_open(a->x, a->c, a->err, a->len);
	return NULL;
}

static int drop_net_admin_and_open(struct esa_xsk **x, const struct esa_xsk_cfg *c, char *err,
				   size_t len)
{
	struct noadmin a = { .x = x, .c = c, .err = err, .len = len, .rc = -EINVAL };
	pthread_t t;

	if (pthread_create(&t, NULL, noadmin_main, &a))
		return -EAGAIN;
	pthread_join(t, NULL);
	return a.rc;
}

/*
 * The tuning (xsk_busy_poll, xsk_tx_budget): the socket carries the busy
 * polling asked for (SO_PREFER_BUSY_POLL, SO_BUSY_POLL, its budget the
 * receive batch); a copy-mode send of 64 frames takes two send calls with
 * the kernel's budget (32) and one with 64; a budget the kernel refuses
 * fails the opening, naming it; so does busy polling without the right.
 */
static void test_tuning(void)
{
	uint16_t p = ports(3);
	struct sockaddr_in me = sin4("127.0.0.1", p), me2 = sin4("127.0.0.1", p + 1);
	struct sockaddr_in me3 = sin4("127.0.0.1", p + 2);
	struct esa_xsk_cfg c = { .ifname = "lo", .local = &me, .nlocal = 1, .tx_frames = 64,
				 .pkt_max = 1100, .umem_frames = 3 * esa_xsk_need(64, 0),
				 .busy_poll_us = 20, .tx_budget = 64 };
	char err[256] = "", err2[256] = "", err3[256] = "";
	struct esa_xsk *x = NULL, *plain = NULL, *bad = NULL;
	long k64 = -1, k32 = -1;
	int prefer = -1, us = -1, rc2, rc3;

	if (!esa_xsk_open(&x, &c, err, sizeof(err))) {
		prefer = sockopt(x, SO_PREFER_BUSY_POLL);
		us = sockopt(x, SO_BUSY_POLL);	/* SO_BUSY_POLL_BUDGET: set only */
		k64 = kicks_for_64(x, &me);
	}
	c.local = &me2;
	c.busy_poll_us = 0;
	c.tx_budget = 0;
	if (x && !esa_xsk_open(&plain, &c, err, sizeof(err)))
		k32 = kicks_for_64(plain, &me2);
	ok(prefer == 1 && us == 20 && k64 == 1 && k32 == 2,
	   "xsk_busy_poll=20 xsk_tx_budget=64: SO_PREFER_BUSY_POLL %d, SO_BUSY_POLL %d; 64 "
	   "frames sent in %ld send call(s), %ld with the kernel's budget (%s; NAPI %u)%s%s",
	   prefer, us, k64, k32, x ? esa_xsk_desc(x) : "",
	   x ? esa_xsk_busy_napi(x) : 0, x && plain ? "" : ": ", x && plain ? "" : err);
	c.local = &me3;
	c.tx_budget = 1024;	/* past the TX ring (config.c refuses it before) */
	rc2 = esa_xsk_open(&bad, &c, err2, sizeof(err2));
	esa_xsk_close(bad);
	bad = NULL;
	/* without CAP_NET_ADMIN (only for the setsockopt: it is opened) */
	c.tx_budget = 0;
	c.busy_poll_us = 20;
	rc3 = drop_net_admin_and_open(&bad, &c, err3, sizeof(err3));
	ok(rc2 == -EACCES && strstr(err2, "xsk_tx_budget 1024 on lo") &&
	   rc3 == -EPERM && strstr(err3, "xsk_busy_poll 20 on lo") &&
	   strstr(err3, "CAP_NET_ADMIN"), "refused, naming what: a TX budget past the ring "
	   "(%d: %s); busy polling without CAP_NET_ADMIN (%d: %s)", rc2, err2, rc3, err3);
	esa_xsk_close(bad);
	esa_xsk_close(plain);
	esa_xsk_close(x);
}

/* 64 sockets fill the program's slots; the 65th is refused, and the first
 * is still steered (a refused steer used to free slot 0). */
static void test_steer_full(void)
{
	uint16_t p = ports(65);
	static struct esa_xsk *x[65];
	struct sockaddr_in at[65];
	char err[256] = "", err65[256] = "";
	int opened = 0, fd, got = 0;

	for (int i = 0; i < 65; i++)
		at[i] = sin4("127.0.0.1", p + i);
	for (int i = 0; i < 64; i++) {
		x[i] = xopen("lo", &at[i], 4, i ? 0 : 65 * esa_xsk_need(4, 0), err, sizeof(err));
		opened += !!x[i];
	}
	x[64] = xopen("lo", &at[64], 4, 0, err65, sizeof(err65));
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	sendto(fd, "to slot 0", 9, 0, (struct sockaddr *)&at[0], sizeof(at[0]));
	close(fd);
	if (x[0])
		got = rx_until(x[0], 1, NULL);
	ok(opened == 64 && !x[64] && strstr(err65, "64 AF_XDP sockets") && got == 1,
	   "64 sockets steered; the 65th refused (%s); the first still gets its packets (%d)",
	   err65, got);
	for (int i = 0; i < 65; i++)
		esa_xsk_close(x[i]);
}

/* ------------------------------------------------------------------ */
/* The program's lifetime                                              */
/* ------------------------------------------------------------------ */

/* Out of file descriptors at each step of opening in turn: each failure
 * names what failed with its errno, and leaves nothing on lo. */
static void test_open_errors(void)
{
	uint16_t p = ports(1);
	struct sockaddr_in me = sin4("127.0.0.1", p);
	struct rlimit old, r;
	char err[256] = "", bad[512] = "";
	struct esa_xsk *x = NULL;
	int fails = 0, lim, fd = open("/dev/null", O_RDONLY);

	getrlimit(RLIMIT_NOFILE, &old);
	close(fd);
	/* once with room: libbpf probes the kernel's features once a process */
	esa_xsk_close(xopen("lo", &me, 8, 0, err, sizeof(err)));
	for (lim = fd; lim < fd + 64 && !x; lim++) {
		int rc;
		struct esa_xsk_cfg c = { .ifname = "lo", .local = &me, .nlocal = 1,
					 .tx_frames = 8, .pkt_max = 1100 };

		r = (struct rlimit){ lim, old.rlim_max };
		setrlimit(RLIMIT_NOFILE, &r);
		rc = esa_xsk_open(&x, &c, err, sizeof(err));
		setrlimit(RLIMIT_NOFILE, &old);
		if (!rc)
			break;
		fails++;
		if ((rc != -EMFILE || !strstr(err, strerror(EMFILE)) || has_xdp(NULL, "lo")) &&
		    !bad[0])
			snprintf(bad, sizeof(bad), "; at %d descriptors: %d %s%s", lim, rc, err,
				 has_xdp(NULL, "lo") ? ", and a program left on lo" : "");
	}
	ok(x && fails > 3 && !bad[0], "out of descriptors at each of %d steps of opening: "
	   "-EMFILE and \"%s\" each time, nothing left on lo%s", fails, strerror(EMFILE), bad);
	esa_xsk_close(x);
}

/*
 * Processes killed with SIGKILL, 40 times: after opening (half of them),
 * or at points spread over its course (the others).  Each time the program
 * leaves lo with the process, and the next one opens.  (The program used to
 * be attached through libxdp first and moved to a bpf_link after: a kill in
 * between left it on lo for good, with every later opening refused.)
 */
static void test_killed(void)
{
	uint16_t p = ports(1);
	struct sockaddr_in me = sin4("127.0.0.1", p);
	char err[256] = "", why[256] = "";
	int opened = 0, left = 0;
	struct esa_xsk *x;

	for (int i = 0; i < 40; i++) {
		int pfd[2], st;
		char c = 0;
		pid_t pid;

		if (pipe(pfd))
			break;
		pid = fork();
		if (!pid) {
			x = xopen("lo", &me, 8, 0, err, sizeof(err));
			if (write(pfd[1], x ? "o" : "f", 1) != 1 || !x)
				_exit(1);
			pause();
			_exit(0);
		}
		close(pfd[1]);
		if (i % 2 == 0) {
			if (read(pfd[0], &c, 1) == 1 && c == 'o')
				opened++;
		} else {
			usleep((i / 2) * 3000);	/* 0 to 57 ms */
		}
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		close(pfd[0]);
		if (!xdp_gone(NULL, "lo") && !left++)
			snprintf(why, sizeof(why), " (left after kill %d)", i);
	}
	x = xopen("lo", &me, 8, 0, err, sizeof(err));
	ok(opened == 20 && !left && x, "40 processes killed (SIGKILL) after or while opening: no "
	   "program left on lo (%d times%s), the next one opens%s%s", left, why, x ? "" : ": ",
	   x ? "" : err);
	esa_xsk_close(x);
}

/* A worker opened in another namespace (netns=), closed from here: its
 * program leaves that namespace's interface. */
static void test_netns_close(void)
{
	uint16_t p = ports(3);
	char ns[64], path[96], a[64], err[256] = "";
	esa_config *c = esa_config_new();
	esa_worker *w = NULL;
	bool on = false, gone = false;

	snprintf(ns, sizeof(ns), "esaxk%d", getpid());
	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	if (!sh("ip netns add %s && ip -n %s link set lo up && ip netns exec %s sysctl -qw "
		"net.ipv4.conf.lo.accept_local=1 net.ipv4.conf.lo.route_localnet=1", ns, ns, ns)) {
		snprintf(a, sizeof(a), "127.0.0.1:%u", p);
		esa_config_set(c, "switch", a);
		snprintf(a, sizeof(a), "127.0.0.1:%u", p + 1);
		esa_config_set(c, "ps", a);
		snprintf(a, sizeof(a), "127.0.0.1:%u", p + 2);
		esa_config_set(c, "local", a);
		esa_config_set(c, "job", "4");
		esa_config_set(c, "rank", "0");
		esa_config_set(c, "workers", "1");
		esa_config_set(c, "io", "xdp");
		esa_config_set(c, "netns", path);
		w = esa_worker_open(c, err, sizeof(err));
		on = w && has_xdp(ns, "lo") && !has_xdp(NULL, "lo");
		esa_worker_close(w);
		gone = xdp_gone(ns, "lo");
	}
	ok(w && on && gone, "a worker opened with netns=, closed from another namespace: its "
	   "program was on that namespace's lo, and left it%s%s", w ? "" : ": ", err);
	sh("ip netns del %s", ns);
	esa_config_free(c);
}

/* ------------------------------------------------------------------ */
/* Workers                                                             */
/* ------------------------------------------------------------------ */

static esa_worker *worker(uint16_t sw, uint16_t me, int job, char *err, size_t len)
{
	esa_config *c = esa_config_new();
	esa_worker *w;
	char a[64];

	snprintf(a, sizeof(a), "127.0.0.1:%u", sw);
	esa_config_set(c, "switch", a);
	snprintf(a, sizeof(a), "127.0.0.1:%u", sw + 1);
	esa_config_set(c, "ps", a);
	snprintf(a, sizeof(a), "127.0.0.1:%u", me);
	esa_config_set(c, "local", a);
	esa_config_set_int(c, "job", job);
	esa_config_set(c, "rank", "0");
	esa_config_set(c, "workers", "1");
	esa_config_set(c, "io", "xdp");
	esa_config_set(c, "timeout_ms", "20");
	esa_config_set(c, "timeout_max_ms", "100");
	esa_config_set(c, "give_up_ms", "20000");
	w = esa_worker_open(c, err, len);
	esa_config_free(c);
	return w;
}

/* in[i] = i * seed: its sum over one rank is itself. */
static int32_t *vec(size_t n, int seed)
{
	int32_t *v = malloc(n * 4);

	for (size_t i = 0; v && i < n; i++)
		v[i] = (int32_t)(i * seed);
	return v;
}

/*
 * lo goes down in the middle of a worker's allreduce, and up again: its
 * posted frames wait (the device refuses the kicks: ENETDOWN) and go once
 * it is up; the allreduce ends right.  (ENETDOWN used to fail the worker,
 * where UDP counts such a send as sent and lost.)
 */
static void test_down_up(void)
{
	const size_t n = 4 << 20;
	uint16_t sp = ports(2), me = ports(1);
	struct simswitch s;
	int32_t *in = vec(n, 3), *out = malloc(n * 4);
	char err[256] = "";
	esa_worker *w;
	esa_request *r = NULL;
	uint64_t down = 0;
	int rc = -1, st = 0, mid = 0;

	ss_start(&s, sp, 256, 5);
	ss_job(&s, 6, 1, me);
	ss_run(&s);
	w = worker(sp, me, 6, err, sizeof(err));
	if (w)
		r = esa_allreduce_start(w, ESA_INT32, in, out, n);
	/* down once the allreduce is under way (100 of its 16384 chunks) */
	while (r && esa_worker_stat(w, "chunks") < 100 && esa_progress(w, 0) >= 0)
		;
	if (r && !esa_test(r, &st) && !sh("ip link set dev lo down")) {
		mid = 1;
		for (int t = 0; t < 3000 && !down && !esa_test(r, &st); t++) {
			esa_progress(w, 1);
			down = esa_xsk_tx_down(((struct esa_worker *)w)->xsk);
		}
		sh("ip link set dev lo up");
		rc = esa_wait(r, 120000);
	}
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = out[i] != in[i];
	ok(mid && down && rc == 0, "lo down mid-allreduce (%llu kicks refused) and up again: "
	   "the worker went on, every sum right (%d%s%s)", (unsigned long long)down, rc,
	   w ? "" : ": ", w ? esa_worker_error(w) : err);
	esa_request_free(r);
	esa_worker_close(w);
	ss_stop(&s);
	free(in);
	free(out);
}

struct churn {
	esa_worker *w;
	int	ops, bad;
};

static void *churn_main(void *arg)
{
	struct churn *c = arg;
	const size_t n = 200000;
	int32_t *in = vec(n, 7), *out = malloc(n * 4);

	for (int o = 0; o < c->ops; o++) {
		if (esa_allreduce(c->w, ESA_INT32, in, out, n) || memcmp(in, out, n * 4))
			c->bad++;
	}
	free(in);
	free(out);
	return NULL;
}

/* Two workers on lo's queue 0 (xdp_workers=2, the default): one allreduces
 * throughout while the other opens, allreduces and closes, 10 times. */
static void test_two_per_queue(void)
{
	uint16_t sp = ports(2), me = ports(2);
	struct simswitch s;
	struct churn a = { .ops = 40 };
	const size_t n = 50000;
	int32_t *in = vec(n, 11), *out = malloc(n * 4);
	char err[256] = "";
	int good = 0;
	pthread_t th;

	ss_start(&s, sp, 256, 9);
	ss_job(&s, 7, 1, me);
	ss_job(&s, 8, 1, me + 1);
	ss_run(&s);
	a.w = worker(sp, me, 7, err, sizeof(err));
	if (a.w)
		pthread_create(&th, NULL, churn_main, &a);
	for (int i = 0; a.w && i < 10; i++) {
		esa_worker *b = worker(sp, me + 1, 8, err, sizeof(err));

		good += b && !esa_allreduce(b, ESA_INT32, in, out, n) && !memcmp(in, out, n * 4);
		esa_worker_close(b);
	}
	if (a.w)
		pthread_join(th, NULL);
	ok(a.w && good == 10 && !a.bad, "two workers on one queue: one opened, reduced and "
	   "closed 10 times (%d right) while the other reduced 40 times (%d wrong)%s%s", good,
	   a.bad, a.w ? "" : ": ", err);
	esa_worker_close(a.w);
	ss_stop(&s);
	free(in);
	free(out);
}

/* ------------------------------------------------------------------ */
/* Next hops                                                           */
/* ------------------------------------------------------------------ */

/* xa (10.77.0.1/24, here) to xb (10.77.0.2, in peer_ns); 10.77.0.9 never
 * answers ARP, and the kernel gives up on it after one request (1 s). */
static bool veth_up(void)
{
	return !sh("ip netns add %s && ip link add xa type veth peer name xb netns %s && "
		   "ip addr add 10.77.0.1/24 dev xa && ip link set xa up && "
		   "ip -n %s addr add 10.77.0.2/24 dev xb && ip -n %s link set xb up && "
		   "ip netns exec %s ethtool -K xb gro on >/dev/null && "
		   "sysctl -qw net.ipv4.neigh.xa.mcast_solicit=1 "
		   "net.ipv4.neigh.xa.retrans_time_ms=1000", peer_ns, peer_ns, peer_ns, peer_ns,
		   peer_ns);
}

/*
 * A jumbo link (MTU 9000 both ends): the program attaches (veth refuses a
 * program without xdp.frags when its peer's MTU exceeds a page, ERANGE,
 * and so did ours: io=xdp was unavailable at MTU 9000), and a packet of
 * 856 values' size comes from the peer to the socket.
 */
static void test_jumbo_link(void)
{
	uint16_t p = ports(1);
	struct sockaddr_in me = sin4("10.77.0.1", p);
	struct esa_xsk_cfg c = { .ifname = "xa", .local = &me, .nlocal = 1, .tx_frames = 8,
				 .pkt_max = 3476 };
	struct esa_xsk_rx rx = { 0 };
	char err[256] = "";
	struct esa_xsk *x = NULL;
	int got = 0;

	if (!sh("ip link set xa mtu 9000 && ip -n %s link set xb mtu 9000", peer_ns) &&
	    !esa_xsk_open(&x, &c, err, sizeof(err))) {
		sh("ip netns exec %s python3 -c 'import socket; s = socket.socket(socket.AF_INET, "
		   "socket.SOCK_DGRAM); s.sendto(bytes(3424), (\"10.77.0.1\", %u))'", peer_ns, p);
		got = rx_until(x, 1, &rx);
	}
	ok(x && got == 1 && rx.len == 3424, "MTU 9000 on both ends: the program attaches and a "
	   "3424-byte datagram arrives (%d, %zu bytes)%s%s", got, rx.len, x ? "" : ": ", err);
	esa_xsk_close(x);
	sh("ip link set xa mtu 1500; ip -n %s link set xb mtu 1500", peer_ns);
}

/* The destination MAC of x's send frame 0. */
static const uint8_t *dst_mac(struct esa_xsk *x)
{
	return esa_xsk_tx_payload(x, 0) - 42;
}

/* Never waiting for a next hop: one that does not answer is "being
 * resolved" (the kernel asked once), then failed, and failed it stays
 * until its retry time without asking again; one that answers is taken. */
static void test_neigh_wait(void)
{
	uint16_t p = ports(1);
	struct sockaddr_in me = sin4("10.77.0.1", p), dead = sin4("10.77.0.9", 9);
	struct sockaddr_in live = sin4("10.77.0.2", 9);
	struct esa_xsk_neigh_stats st0 = { 0 }, st1 = { 0 };
	char err[256] = "", e1[160] = "", e2[160] = "";
	struct esa_xsk *x = xopen_cfg("xa", &me, 8, 0, 0, 60000, err, sizeof(err));
	int first = x ? esa_xsk_tx_prep(x, 0, &me, &dead, 64, e1, sizeof(e1)) : 0;
	int again = x ? esa_xsk_tx_prep(x, 0, &me, &dead, 64, err, sizeof(err)) : 0, rc = 0;
	int same = 0;

	for (int t = 0; x && t < 500 && (rc = esa_xsk_tx_prep(x, 0, &me, &dead, 64, e2,
								sizeof(e2))) == -EAGAIN; t++)
		usleep(10000);
	if (x)
		esa_xsk_neigh_stats(x, &st0);
	for (int i = 0; x && i < 1000; i++)
		same += esa_xsk_tx_prep(x, 0, &me, &dead, 64, err, sizeof(err)) == -EHOSTUNREACH;
	if (x)
		esa_xsk_neigh_stats(x, &st1);
	ok(x && first == -EAGAIN && again == -EAGAIN && rc == -EHOSTUNREACH && same == 1000 &&
	   st0.probes == 1 && st1.probes == 1 && st1.queries == st0.queries &&
	   st1.negative - st0.negative == 1000,
	   "a next hop that never answers: \"%s\" at once, twice, one resolution asked; then "
	   "\"%s\"; 1000 sends more refused from the cache (%d), nothing asked again (%llu "
	   "resolutions, %llu table reads before and after)", e1, e2, same,
	   x ? (unsigned long long)st1.probes : 0ULL, x ? (unsigned long long)st1.queries : 0ULL);
	rc = -EAGAIN;
	for (int t = 0; x && t < 500 && (rc = esa_xsk_tx_prep(x, 0, &me, &live, 64, err,
								sizeof(err))) == -EAGAIN; t++)
		usleep(10000);
	ok(x && rc == 0 && !sh("ip -n %s link show xb | grep -qi %02x:%02x:%02x:%02x:%02x:%02x",
			       peer_ns, dst_mac(x)[0], dst_mac(x)[1], dst_mac(x)[2],
			       dst_mac(x)[3], dst_mac(x)[4], dst_mac(x)[5]),
	   "a next hop that answers: resolved without waiting, the frame to its MAC (%s)",
	   rc ? err : "");
	esa_xsk_close(x);
}

/* A failed next hop is asked for again after its retry time (50 ms). */
static void test_neigh_retry(void)
{
	uint16_t p = ports(1);
	struct sockaddr_in me = sin4("10.77.0.1", p), dead = sin4("10.77.0.9", 9);
	struct esa_xsk_neigh_stats st0 = { 0 }, st1 = { 0 };
	char err[256] = "";
	struct esa_xsk *x = xopen_cfg("xa", &me, 8, 0, 0, 50, err, sizeof(err));
	int rc = -EAGAIN, after;

	for (int t = 0; x && t < 500 && rc == -EAGAIN; t++) {
		rc = esa_xsk_tx_prep(x, 0, &me, &dead, 64, err, sizeof(err));
		usleep(10000);
	}
	if (x)
		esa_xsk_neigh_stats(x, &st0);
	usleep(100000);
	after = x ? esa_xsk_tx_prep(x, 0, &me, &dead, 64, err, sizeof(err)) : 0;
	if (x)
		esa_xsk_neigh_stats(x, &st1);
	ok(x && rc == -EHOSTUNREACH && after == -EAGAIN && st1.probes == st0.probes + 1,
	   "a failed next hop, past its retry time: asked for again (%d, %llu resolutions)",
	   after, x ? (unsigned long long)st1.probes : 0ULL);
	esa_xsk_close(x);
}

/*
 * 17,000 destinations on the link (10.78.0.0/16, permanent neighbours):
 * each resolved; the cache keeps 16,384 and evicts the least recently
 * used; the last 5,000 again: all from the cache.  Then entries expire: a
 * neighbour's new MAC is seen after the TTL (50 ms), not before it (60 s).
 */
static void test_neigh_many(void)
{
	uint16_t p = ports(2);
	struct sockaddr_in me = sin4("10.77.0.1", p), to = sin4("10.78.0.1", 9), other;
	struct esa_xsk_neigh_stats st0 = { 0 }, st1 = { 0 };
	char err[256] = "", path[64];
	FILE *f;
	struct esa_xsk *x = NULL, *fresh = NULL, *quick = NULL;
	int first = 0, second = 0, kept = -1, seen = -1;

	snprintf(path, sizeof(path), "/tmp/esaxk%d.neigh", getpid());
	f = fopen(path, "w");
	for (int i = 1; f && i <= 17000; i++)
		fprintf(f, "neigh add 10.78.%d.%d lladdr 02:00:00:00:%02x:%02x dev xa nud "
			"permanent\n", i >> 8, i & 255, i >> 8, i & 255);
	if (f)
		fclose(f);
	if (f && !sh("ip route add 10.78.0.0/16 dev xa && ip -batch %s", path))
		x = xopen("xa", &me, 8, 0, err, sizeof(err));
	unlink(path);
	for (int i = 1; x && i <= 17000; i++) {
		to.sin_addr.s_addr = htonl(0x0a4e0000 | i);
		first += !esa_xsk_tx_prep(x, 0, &me, &to, 64, err, sizeof(err)) &&
			 dst_mac(x)[4] == i >> 8 && dst_mac(x)[5] == (i & 255);
	}
	if (x)
		esa_xsk_neigh_stats(x, &st0);
	for (int i = 12001; x && i <= 17000; i++) {
		to.sin_addr.s_addr = htonl(0x0a4e0000 | i);
		second += !esa_xsk_tx_prep(x, 0, &me, &to, 64, err, sizeof(err));
	}
	if (x)
		esa_xsk_neigh_stats(x, &st1);
	ok(x && first == 17000 && st0.entries == 16384 && st0.evicted == 17000 - 16384 &&
	   second == 5000 && st1.queries == st0.queries && st1.hits - st0.hits == 5000,
	   "17,000 destinations resolved (%d), 16,384 kept, %llu evicted; the last 5,000 again "
	   "from the cache (%llu hits, %llu table reads)", first,
	   x ? (unsigned long long)st0.evicted : 0ULL,
	   x ? (unsigned long long)(st1.hits - st0.hits) : 0ULL,
	   x ? (unsigned long long)(st1.queries - st0.queries) : 0ULL);
	esa_xsk_close(x);
	/* expiry: two sockets, TTL 60 s and 50 ms, the neighbour's MAC changed */
	me.sin_port = htons(p + 1);
	fresh = xopen_cfg("xa", &me, 8, 2 * esa_xsk_need(8, 0), 60000, 0, err, sizeof(err));
	other = me;
	other.sin_port = htons(p + 2);
	quick = fresh ? xopen_cfg("xa", &other, 8, 0, 50, 0, err, sizeof(err)) : NULL;
	to.sin_addr.s_addr = htonl(0x0a4e0001);
	if (quick && !esa_xsk_tx_prep(fresh, 0, &me, &to, 64, err, sizeof(err)) &&
	    !esa_xsk_tx_prep(quick, 0, &other, &to, 64, err, sizeof(err)) &&
	    !sh("ip neigh replace 10.78.0.1 lladdr 02:00:00:00:99:99 dev xa nud permanent")) {
		usleep(100000);
		kept = !esa_xsk_tx_prep(fresh, 0, &me, &to, 64, err, sizeof(err)) &&
		       dst_mac(fresh)[4] == 0 && dst_mac(fresh)[5] == 1;
		seen = !esa_xsk_tx_prep(quick, 0, &other, &to, 64, err, sizeof(err)) &&
		       dst_mac(quick)[4] == 0x99;
	}
	ok(kept == 1 && seen == 1, "a neighbour's MAC changed: within the TTL the cache's is "
	   "used (%d), past it the new one (%d)", kept, seen);
	esa_xsk_close(fresh);
	esa_xsk_close(quick);
	sh("ip route del 10.78.0.0/16 dev xa; ip neigh flush dev xa nud all");
}

int main(void)
{
	next_port = 20000 + (getpid() * 97) % 30000;
	snprintf(peer_ns, sizeof(peer_ns), "esaxkp%d", getpid());
	tap_start();
	if (geteuid()) {
		tap_skip("not root", "AF_XDP transport tests");
		return tap_end();
	}
	/* Frames that enter lo from AF_XDP carry no route, so the kernel checks
	 * their addresses as a received packet's: a local source needs
	 * accept_local, 127/8 route_localnet. */
	if (unshare(CLONE_NEWNET) || sh("ip link set dev lo up && sysctl -qw "
					"net.ipv4.conf.lo.accept_local=1 "
					"net.ipv4.conf.lo.route_localnet=1")) {
		ok(false, "a network namespace of its own: %s", strerror(errno));
		return tap_end();
	}
#define RUN(t) do { if (!getenv("XSKTEST") || strstr(#t, getenv("XSKTEST"))) t(); } while (0)
	RUN(test_parse);
	RUN(test_rx_crafted);
	RUN(test_close_posted);
	RUN(test_send_partial);
	RUN(test_tuning);
	RUN(test_steer_full);
	RUN(test_open_errors);
	RUN(test_killed);
	RUN(test_netns_close);
	RUN(test_down_up);
	RUN(test_two_per_queue);
	if (!veth_up()) {
		ok(false, "a veth pair to another namespace");
	} else {
		RUN(test_neigh_wait);
		RUN(test_neigh_retry);
		RUN(test_neigh_many);
		RUN(test_jumbo_link);
	}
	sh("ip netns del %s 2>/dev/null", peer_ns);
	return tap_end();
}
