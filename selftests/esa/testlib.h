/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the data-plane tests share: a private network namespace with the
 * switch's ports, a packet builder for every ESA packet, BPF_PROG_TEST_RUN
 * with an ingress port, and readers for slots and counters.
 *
 * Topology of esa_netns_setup() (inside a new network namespace):
 *
 *     workers 10.0.0.11-18 ..... sw0 10.0.0.1/24 [ESA] sw1 10.0.1.1/24 ..... PS A 10.0.1.2
 *     (MACs 02:00:00:00:00:1x)   (port 0)               (port 1)            PS B 10.0.1.3
 *     PS W 10.0.0.50 ...........'                                           PS C 10.0.1.9 (no ARP entry)
 *                                                       unreachable 10.99.0.0/16
 */
#ifndef ESA_TESTLIB_H
#define ESA_TESTLIB_H

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "loader.h"
#include "registry.h"
#include "esa_policy.h"

#define T_SW_IP		"10.0.0.1"
#define T_PS_A		"10.0.1.2"
#define T_PS_B		"10.0.1.3"
#define T_PS_NONEIGH	"10.0.1.9"
#define T_PS_W		"10.0.0.50"	/* a PS behind the workers' port */
#define T_PS_W_MAC	"02:00:00:00:00:50"	/* its neighbour entry */
#define T_PS_UNREACH	"10.99.0.1"
#define T_PS_PORT	9000
#define T_WORKER_PORT	5000

static const __u8 t_ps_a_mac[6] = { 0x02, 0, 0, 0, 0x01, 0x02 };
static const __u8 t_ps_b_mac[6] = { 0x02, 0, 0, 0, 0x01, 0x03 };
static const __u8 t_ps_w_mac[6] = { 0x02, 0, 0, 0, 0x00, 0x50 };

static inline __be32 t_ip(const char *s)
{
	struct in_addr a;

	inet_pton(AF_INET, s, &a);
	return a.s_addr;
}

/* Worker w (0-based) of the test topology. */
static inline __be32 t_worker_ip(int w)
{
	return htonl(0x0a00000b + w);	/* 10.0.0.11 + w */
}

static inline void t_worker_mac(int w, __u8 mac[6])
{
	static const __u8 m[6] = { 0x02, 0, 0, 0, 0, 0x10 };

	memcpy(mac, m, 6);
	mac[5] += w;
}

/* Value i that rank `rank` of job `job` sends for chunk seq: deterministic
 * and small enough that sums of 64 ranks never overflow. */
static inline __s32 t_val(__u64 seed, int job, int rank, __u32 seq, int i)
{
	__u32 x = (job * 7919 + rank * 104729 + seq * 1299709 + i * 15485863) ^
		  (__u32)seed;

	x ^= x >> 13;
	x *= 0x5bd1e995;
	x ^= x >> 15;
	return (__s32)(x % 2000001) - 1000000;
}

static inline int t_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int t_sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

struct t_net {
	int	sw0, sw1;	/* ifindexes of the switch ports */
	__u8	sw0_mac[6], sw1_mac[6];
};

/* sysfs shows the namespace it was mounted in: ask the device itself. */
static inline int t_read_mac(const char *ifname, __u8 mac[6])
{
	struct ifreq ifr = {};
	int fd = socket(AF_INET, SOCK_DGRAM, 0), rc;

	if (fd < 0)
		return -1;
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
	rc = ioctl(fd, SIOCGIFHWADDR, &ifr);
	close(fd);
	if (!rc)
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	return rc;
}

/* A private netns with the topology above; 0 on success. */
static inline int esa_netns_setup(struct t_net *n)
{
	if (unshare(CLONE_NEWNET))
		return -1;
	if (t_sh("set -e; exec >/dev/null 2>&1\n"
		 "ip link set lo up\n"
		 "sysctl -qw net.ipv4.ip_forward=1\n"
		 "ip link add sw0 address 02:00:00:00:00:01 type veth peer name h0\n"
		 "ip link add sw1 address 02:00:00:00:01:01 type veth peer name h1\n"
		 "for d in sw0 h0 sw1 h1; do ip link set $d up; done\n"
		 "ip addr add " T_SW_IP "/24 dev sw0\n"
		 "ip addr add 10.0.1.1/24 dev sw1\n"
		 "ip neigh add " T_PS_A " lladdr 02:00:00:00:01:02 nud permanent dev sw1\n"
		 "ip neigh add " T_PS_B " lladdr 02:00:00:00:01:03 nud permanent dev sw1\n"
		 "ip neigh add " T_PS_W " lladdr " T_PS_W_MAC " nud permanent dev sw0\n"
		 "ip route add unreachable 10.99.0.0/16\n"))
		return -1;
	n->sw0 = if_nametoindex("sw0");
	n->sw1 = if_nametoindex("sw1");
	if (!n->sw0 || !n->sw1 || t_read_mac("sw0", n->sw0_mac) ||
	    t_read_mac("sw1", n->sw1_mac))
		return -1;
	return 0;
}

/* Register ports for sending without attaching XDP (tests use test-run). */
static inline int t_port_register(struct esa *e, int ifindex)
{
	char err[ESA_ERR_LEN];

	return esa_port_register(e, ifindex, err, sizeof(err));
}

/* Register job id as esactl does: esa_job_register(). */
static inline int t_job_add(struct esa *e, __u32 id, struct esa_job *j,
			    char *err, size_t len)
{
	return esa_job_register(e, id, j, err, len);
}

/*
 * The two-job set-up of the table-driven tests: ports sw0 and sw1 of n
 * registered, then jobs ida (a) and idb (b); the reason of a failure is
 * printed and left in err.
 */
static inline int t_two_jobs(struct esa *e, const struct t_net *n, __u32 ida,
			     struct esa_job *a, __u32 idb, struct esa_job *b,
			     char *err, size_t len)
{
	if (t_port_register(e, n->sw0) || t_port_register(e, n->sw1) ||
	    t_job_add(e, ida, a, err, len) || t_job_add(e, idb, b, err, len)) {
		fprintf(stderr, "setup: %s\n", err);
		return -1;
	}
	return 0;
}

/*
 * The job registry of the loaded switch e, as esactl finds it: e's maps,
 * or esa.ko over netlink when e reads jobs through the module's kfuncs
 * (in this network namespace, whose registry it is).  Close with
 * esa_registry_close() (which leaves e open).
 */
static inline int t_registry(struct esa *e, struct esa_registry *r)
{
	esa_registry_wrap(r, e);
	return e->cfg.kfunc ? esa_nl_open(&r->nl) : 0;
}

/*
 * Register job id through r with the ranks' MACs given (job add ...
 * IP:PORT@DEV/MAC), as t_job() places them: rank k is worker k of the
 * topology.  The reason of a failure is in r->err.
 */
static inline int t_job_add_macs(struct esa_registry *r, __u32 id,
				 struct esa_job *j)
{
	struct esa_place pl[ESA_PLACES] = {};

	for (int k = 0; k < j->nworkers; k++) {
		t_worker_mac(k, pl[k].mac);
		pl[k].have_mac = true;
	}
	return esa_registry_add(r, id, j, pl);
}

/* ------------------------------------------------------------------ */
/* Packets                                                             */
/* ------------------------------------------------------------------ */

struct t_pkt {
	__u8	dmac[6], smac[6];
	__be32	saddr, daddr;
	__u16	sport, dport;	/* host order */
	__be16	ipid;		/* as on the wire */
	__u8	ttl;
	__u8	df;		/* IP's don't-fragment flag */
	__u8	version, type, flags, prio, reason, resv;
	__u16	job, rank, count;	/* host order */
	__u32	seq;
	__u64	bitmap;
	const __s32 *vals;	/* count values (NULL: zeros) */
	int	nvals;		/* values actually present (may differ from count) */
};

#define T_HDRS	(sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct udphdr))
/* The largest frame: ESA_MAX_VALUES values, multi-buffer in XDP. */
#define T_FRAME_MAX	(T_HDRS + ESA_HDR_LEN + 4 * ESA_MAX_VALUES)

static inline __u16 t_csum(const void *p, int len)
{
	const __u16 *w = p;
	__u32 s = 0;

	for (int i = 0; i < len / 2; i++)
		s += w[i];
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return ~s;
}

/*
 * The one's complement sum of the UDP datagram in frame f (len bytes, IPv4
 * without options) and its pseudo header, folded; -1 if the lengths
 * disagree.  A right checksum makes it 0xffff.
 */
static inline int t_udp_sum(const __u8 *f, int len)
{
	const struct iphdr *ip = (const void *)(f + sizeof(struct ethhdr));
	const struct udphdr *udp = (const void *)(ip + 1);
	int ulen = len - (int)(sizeof(struct ethhdr) + sizeof(*ip));
	const __u8 *u = (const void *)udp;
	__u32 s = 0;

	if (ulen < (int)sizeof(*udp) || ntohs(udp->len) != ulen)
		return -1;
	s += (ip->saddr & 0xffff) + (ip->saddr >> 16);
	s += (ip->daddr & 0xffff) + (ip->daddr >> 16);
	s += htons(IPPROTO_UDP) + udp->len;
	for (int i = 0; i + 1 < ulen; i += 2)
		s += u[i] | u[i + 1] << 8;
	if (ulen & 1)
		s += u[ulen - 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s;
}

/*
 * Does the UDP datagram in frame f carry a right checksum?  0 is none: the
 * kernel's UDP GRO would not coalesce it.
 */
static inline int t_udp_csum_ok(const __u8 *f, int len)
{
	const struct udphdr *udp = (const void *)(f + sizeof(struct ethhdr) +
						  sizeof(struct iphdr));

	return udp->check && t_udp_sum(f, len) == 0xffff;
}

/* Give the UDP datagram in frame f its checksum (0 sent as 0xffff). */
static inline void t_udp_csum_set(__u8 *f, int len)
{
	struct udphdr *udp = (void *)(f + sizeof(struct ethhdr) +
				      sizeof(struct iphdr));
	__u16 c;

	udp->check = 0;
	c = ~t_udp_sum(f, len);
	udp->check = c ? c : 0xffff;
}

/* Serialise p into buf; returns the frame length. */
static inline int t_build(const struct t_pkt *p, __u8 *buf)
{
	struct ethhdr *eth = (void *)buf;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	struct esa_hdr *h = (void *)(udp + 1);
	__u8 *v = (void *)(h + 1);
	int plen = ESA_HDR_LEN + 4 * p->nvals;

	memset(buf, 0, T_HDRS + plen);
	memcpy(eth->h_dest, p->dmac, 6);
	memcpy(eth->h_source, p->smac, 6);
	eth->h_proto = htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = p->ttl ? p->ttl : 64;
	ip->id = p->ipid;
	ip->frag_off = p->df ? htons(0x4000) : 0;
	ip->protocol = IPPROTO_UDP;
	ip->tot_len = htons(sizeof(*ip) + sizeof(*udp) + plen);
	ip->saddr = p->saddr;
	ip->daddr = p->daddr;
	ip->check = t_csum(ip, sizeof(*ip));
	udp->source = htons(p->sport);
	udp->dest = htons(p->dport);
	udp->len = htons(sizeof(*udp) + plen);
	h->version = p->version;
	h->type = p->type;
	h->flags = p->flags;
	h->prio = p->prio;
	h->job = htons(p->job);
	h->rank = htons(p->rank);
	h->bitmap = htobe64(p->bitmap);
	h->seq = htonl(p->seq);
	h->count = htons(p->count);
	h->reason = p->reason;
	h->resv = p->resv;
	for (int i = 0; i < p->nvals; i++) {
		__u32 x = p->vals ? (__u32)p->vals[i] : 0;

		v[4 * i + 0] = x;	/* values are little endian */
		v[4 * i + 1] = x >> 8;
		v[4 * i + 2] = x >> 16;
		v[4 * i + 3] = x >> 24;
	}
	return T_HDRS + plen;
}

/* The data packet rank `rank` of job `job` sends for chunk seq. */
static inline struct t_pkt t_data(const struct t_net *n, __u16 job, __u16 rank,
				  __u32 seq, __u8 prio, const __s32 *vals,
				  int nvals)
{
	struct t_pkt p = {
		.saddr = t_worker_ip(rank), .daddr = t_ip(T_SW_IP),
		.sport = T_WORKER_PORT + job, .dport = ESA_DEFAULT_PORT,
		.version = ESA_VERSION, .type = ESA_T_DATA, .prio = prio,
		.job = job, .rank = rank, .count = nvals, .seq = seq,
		.bitmap = 1ULL << rank, .vals = vals, .nvals = nvals,
	};

	memcpy(p.dmac, n->sw0_mac, 6);
	t_worker_mac(rank, p.smac);
	return p;
}

/* A reply to packet p: the frame comes back from where p went. */
static inline void t_reply_macs(struct t_pkt *p)
{
	__u8 m[6];

	memcpy(m, p->dmac, 6);
	memcpy(p->dmac, p->smac, 6);
	memcpy(p->smac, m, 6);
}

struct t_run {
	int	verdict;
	__u8	out[T_FRAME_MAX + 64];
	__u32	len;		/* packet length (after any metadata) */
	__u32	metalen;
	const __u8 *pkt;	/* out + metalen */
};

/* BPF_PROG_TEST_RUN the packet on port ifindex; -errno on failure. */
static inline int t_run(int prog_fd, const void *in, __u32 len, int ifindex,
			const void *meta, __u32 metalen, struct t_run *r)
{
	__u8 buf[T_FRAME_MAX + 64];
	struct xdp_md ctx_in = {
		.data = metalen, .data_end = metalen + len,
		.ingress_ifindex = ifindex,
	}, ctx_out = {};
	LIBBPF_OPTS(bpf_test_run_opts, o,
		    .data_in = buf, .data_size_in = metalen + len,
		    .data_out = r->out, .data_size_out = sizeof(r->out),
		    .ctx_in = &ctx_in, .ctx_size_in = sizeof(ctx_in),
		    .ctx_out = &ctx_out, .ctx_size_out = sizeof(ctx_out),
		    .repeat = 1);

	memcpy(buf, meta, metalen);
	memcpy(buf + metalen, in, len);
	if (bpf_prog_test_run_opts(prog_fd, &o))
		return -errno;
	r->verdict = o.retval;
	r->metalen = ctx_out.data;
	r->len = o.data_size_out - r->metalen;
	r->pkt = r->out + r->metalen;
	return 0;
}

/* The IP id the switch gave a result it sent in r: which broadcast. */
static inline __be16 t_ipid(const struct t_run *r)
{
	return ((const struct iphdr *)(r->pkt + sizeof(struct ethhdr)))->id;
}

static inline int t_send(struct esa *e, const struct t_pkt *p, int ifindex,
			 struct t_run *r)
{
	__u8 buf[T_FRAME_MAX];
	int len = t_build(p, buf);

	return t_run(e->prog_fd, buf, len, ifindex, NULL, 0, r);
}

/* Parse an output packet back (for the PS model and for checks). */
static inline int t_parse(const __u8 *buf, __u32 len, struct t_pkt *p,
			  __s32 *vals, int max)
{
	const struct ethhdr *eth = (const void *)buf;
	const struct iphdr *ip = (const void *)(eth + 1);
	const struct udphdr *udp = (const void *)(ip + 1);
	const struct esa_hdr *h = (const void *)(udp + 1);
	const __u8 *v = (const void *)(h + 1);
	int n;

	if (len < T_HDRS + ESA_HDR_LEN)
		return -1;
	memset(p, 0, sizeof(*p));
	memcpy(p->dmac, eth->h_dest, 6);
	memcpy(p->smac, eth->h_source, 6);
	p->saddr = ip->saddr;
	p->daddr = ip->daddr;
	p->ttl = ip->ttl;
	p->df = ip->frag_off == htons(0x4000);
	p->ipid = ip->id;
	p->sport = ntohs(udp->source);
	p->dport = ntohs(udp->dest);
	p->version = h->version;
	p->type = h->type;
	p->flags = h->flags;
	p->prio = h->prio;
	p->reason = h->reason;
	p->resv = h->resv;
	p->job = ntohs(h->job);
	p->rank = ntohs(h->rank);
	p->count = ntohs(h->count);
	p->seq = ntohl(h->seq);
	p->bitmap = be64toh(h->bitmap);
	n = (len - T_HDRS - ESA_HDR_LEN) / 4;
	if (n > max)
		n = max;
	for (int i = 0; i < n; i++)
		vals[i] = (__s32)(v[4 * i] | v[4 * i + 1] << 8 | v[4 * i + 2] << 16 |
				  (__u32)v[4 * i + 3] << 24);
	p->nvals = n;
	p->vals = vals;
	return 0;
}

/* ------------------------------------------------------------------ */
/* State                                                               */
/* ------------------------------------------------------------------ */

static inline int t_slot(struct esa *e, __u32 idx, struct esa_slot *s,
			 __s64 *sum)
{
	__u64 acc[ESA_MAX_VALUES];

	if (bpf_map_lookup_elem(e->slots_fd, &idx, s) ||
	    bpf_map_lookup_elem(e->acc_fd, &idx, acc))
		return -1;
	for (int i = 0; sum && i < e->cfg.nvals; i++)
		sum[i] = (__s64)(acc[i] - ((__u64)s->nranks << 31));
	return 0;
}

/* The tombstone kind of chunk seq of job (current generation), or -1. */
static inline int t_tomb(struct esa *e, __u16 job, __u32 seq)
{
	__u32 k = esa_tomb_index(job, seq);
	struct esa_tomb t;
	struct esa_job j;
	int fd;

	fd = bpf_map__fd(bpf_object__find_map_by_name(e->obj, "esa_tombs"));
	if (fd < 0 || bpf_map_lookup_elem(fd, &k, &t) || esa_job_read(e, job, &j))
		return -1;
	return esa_tomb_kind(&t, esa_job_gen(&j), seq);
}

static inline __u64 t_ctr(struct esa *e, __u32 row, int idx)
{
	struct esa_counters c;

	if (esa_counters_read(e, row, &c))
		return ~0ULL;
	return c.c[idx];
}

/* A job of the test topology: ranks are workers 0..n-1, PS given. */
static inline struct esa_job t_job(int nworkers, const char *ps, __u8 max_prio,
				   __u16 job)
{
	struct esa_job j = {
		.nworkers = nworkers, .max_prio = max_prio,
		.ps = { .ip = t_ip(ps), .port = htons(T_PS_PORT) },
	};

	for (int r = 0; r < nworkers; r++) {
		j.rank[r].ip = t_worker_ip(r);
		j.rank[r].port = htons(T_WORKER_PORT + job);
	}
	return j;
}

static inline __u32 t_slot_of(struct esa *e, __u16 job, __u32 seq)
{
	struct esa_job j;

	esa_job_read(e, job, &j);
	return esa_slot_index(e->cfg.policy, job, seq, e->cfg.slots,
			      j.region_base, j.region_size);
}

/* First seq >= from of job b whose slot equals slot. */
static inline __u32 t_seq_for_slot(struct esa *e, __u16 job, __u32 slot,
				   __u32 from)
{
	for (__u32 s = from;; s++)
		if (t_slot_of(e, job, s) == slot)
			return s;
}

static inline void t_hexdiff(const __u8 *a, const __u8 *b, __u32 len)
{
	for (__u32 i = 0; i < len; i++)
		if (a[i] != b[i])
			fprintf(stderr, "  byte %u: got %02x want %02x\n", i, a[i], b[i]);
}

/* xorshift64*: a test's draws, reproducible from the seed it prints. */
static inline __u64 *t_rnd_state(void)
{
	static __u64 x = 1;

	return &x;
}

static inline void t_rnd_seed(__u64 seed)
{
	*t_rnd_state() = seed * 0x9e3779b97f4a7c15ULL | 1;
}

static inline __u32 t_rnd(void)
{
	__u64 *x = t_rnd_state();

	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return (*x * 2685821657736338717ULL) >> 32;
}

static inline __u32 t_rnd_below(__u32 n)
{
	return n ? t_rnd() % n : 0;
}

/* At a spine: leaves at workers 0 (ranks 0-1) and 2 (ranks 2-3). */
static inline struct esa_job t_spine_job(__u8 max_prio)
{
	struct esa_job j = {
		.nworkers = 4, .max_prio = max_prio,
		.ps = { .ip = t_ip(T_PS_A), .port = htons(T_PS_PORT) },
	};

	j.rank[0] = (struct esa_addr){ t_worker_ip(0), htons(ESA_DEFAULT_PORT) };
	j.set[0] = 0x3;
	j.rank[2] = (struct esa_addr){ t_worker_ip(2), htons(ESA_DEFAULT_PORT) };
	j.set[2] = 0xc;
	return j;
}

#endif /* ESA_TESTLIB_H */
