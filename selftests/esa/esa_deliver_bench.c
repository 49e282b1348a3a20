// SPDX-License-Identifier: GPL-2.0
/*
 * make bench, second table: what delivering one result costs, on live
 * frames (BPF_F_TEST_XDP_LIVE_FRAMES: every copy is made, addressed and sent
 * over a veth to a peer that drops it), the switch's per-job fan-out against
 * the first design's broadcast to two entries of every port
 * (bpf/esa_deliver_bench.bpf.c).  A job of W workers, on a box of P ports:
 * the workers one per port, or all behind one port (a rack).  The copies
 * the far ends received are counted: the fan-out must deliver one per
 * member, the broadcast one per port that has a member (it cannot reach a
 * second worker of a job behind one port).  Timings are printed, never
 * judged; the run fails only if the copies are not what they must be.
 *
 * usage: esa_deliver_bench [ -n RESULTS ] [ -r ROUNDS ]
 */
#include <getopt.h>
#include <sched.h>
#include <linux/if_link.h>

#include "testlib.h"
#include "esa_bench.h"
#include "benchlib.h"
#include "esa_deliver_bench.skel.h"

#define JOB	3
#define NVALS	256
#define MAXP	48

struct box {
	int	nports;
	int	ifindex[MAXP];
	__u8	mac[MAXP][6];
};

/* Worker r's address; behind port r % spread (spread 1: all behind one). */
static __be32 w_ip(int r, int spread)
{
	return htonl(0x0a020000 | (r % spread) << 8 | (10 + r));
}

/* P ports p0.. with peers q0.. (the far ends run dbench_sink), 10.2.K.1/24. */
static int box_setup(struct box *b, int nports, int sink_fd)
{
	char name[16];

	if (unshare(CLONE_NEWNET) ||
	    t_sh("ip link set lo up; sysctl -qw net.ipv4.ip_forward=1"))
		return -1;
	b->nports = nports;
	for (int k = 0; k < nports; k++) {
		if (t_sh("set -e; exec >/dev/null 2>&1; ip link add p%d type veth peer name q%d; "
			 "ip link set p%d up; ip link set q%d up; ip addr add 10.2.%d.1/24 dev p%d",
			 k, k, k, k, k, k))
			return -1;
		snprintf(name, sizeof(name), "p%d", k);
		b->ifindex[k] = if_nametoindex(name);
		if (t_read_mac(name, b->mac[k]))
			return -1;
		snprintf(name, sizeof(name), "q%d", k);
		if (bpf_xdp_attach(if_nametoindex(name), sink_fd, XDP_FLAGS_DRV_MODE, NULL))
			return -1;
	}
	/* the PS, behind the last port, its neighbour entry resolved */
	return t_sh("ip neigh add 10.2.%d.9 lladdr 02:00:00:00:09:09 nud permanent dev p%d",
		    nports - 1, nports - 1) ? -1 : 0;
}

/* The job: W workers spread over `spread` ports, their MACs given. */
static int job_setup(struct esa *e, const struct box *b, int w, int spread)
{
	struct esa_place pl[ESA_PLACES] = {};
	struct esa_job j = { .nworkers = w, .max_prio = 255 };
	char err[ESA_ERR_LEN];

	j.ps.ip = htonl(0x0a020009 | (b->nports - 1) << 8);
	j.ps.port = htons(9000);
	for (int r = 0; r < w; r++) {
		j.rank[r].ip = w_ip(r, spread);
		j.rank[r].port = htons(5000);
		pl[r].have_mac = true;
		t_worker_mac(r, pl[r].mac);
	}
	if (esa_places_resolve(e, &j, pl, err, sizeof(err)) ||
	    esa_binds_stage(e, JOB, &j, pl, err, sizeof(err)) ||
	    esa_job_add(e, JOB, &j, err, sizeof(err)) ||
	    esa_deliver_set(e, JOB, &j, pl, err, sizeof(err))) {
		fprintf(stderr, "esa_deliver_bench: %s\n", err);
		return -1;
	}
	return 0;
}

/* The first design's tables: two entries per port, a job's first worker
 * behind each port (it served one per port). */
static int old_setup(struct esa_deliver_bench_bpf *s, const struct box *b,
		     int w, int spread)
{
	int fd = bpf_program__fd(s->progs.dbench_old_egress);

	for (int k = 0; k < b->nports; k++)
		for (int lane = 0; lane < 2; lane++) {
			struct bpf_devmap_val v = { .ifindex = b->ifindex[k],
						    .bpf_prog.fd = fd };
			__u32 key = b->ifindex[k] * 2 + lane;

			if (bpf_map_update_elem(bpf_map__fd(s->maps.old_ports), &key, &v, 0))
				return -1;
		}
	s->bss->dbench_ps_ifindex = b->ifindex[b->nports - 1];
	s->bss->dbench_ps_ip = htonl(0x0a020009 | (b->nports - 1) << 8);
	s->bss->dbench_ps_port = htons(9000);
	memcpy(s->bss->dbench_ps_mac, "\x02\0\0\0\x09\x09", 6);
	for (int r = w - 1; r >= 0; r--) {
		int k = r % spread;
		__u64 key = (__u64)b->ifindex[k] << 16 | JOB;
		struct { __u8 mac[6]; __be16 port; __u8 pmac[6]; __u16 resv; __be32 ip; } d = {
			.port = htons(5000), .ip = w_ip(r, spread) };

		t_worker_mac(r, d.mac);
		memcpy(d.pmac, b->mac[k], 6);
		if (bpf_map_update_elem(bpf_map__fd(s->maps.old_dests), &key, &d, 0))
			return -1;
	}
	return 0;
}

/* ns per result of n results through prog, live; -1 on failure. */
static double run_live(int prog, int ifindex, const __u8 *pkt, __u32 len, __u32 n)
{
	struct xdp_md ctx = { .data_end = len, .ingress_ifindex = ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = len,
		    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = n,
		    .flags = BPF_F_TEST_XDP_LIVE_FRAMES,
		    /* a flush's copies to one port stay within its veth ring */
		    .batch_size = 16);

	return bpf_prog_test_run_opts(prog, &o) ? -1 : (double)o.duration;
}

struct cfg {
	int	ports, workers, spread;
};

struct res {
	double	fan, bcast;		/* ns per result, fastest */
	__u64	fan_copies, bcast_copies;	/* copies received per result */
};

/* The result frame both designs deliver: a sum of job JOB. */
static int result_frame(const struct box *b, int workers, __u8 *pkt)
{
	struct t_pkt p = {
		.saddr = htonl(0x0a02ff01), .daddr = htonl(0x0a02ff01),
		.sport = ESA_DEFAULT_PORT, .dport = ESA_DEFAULT_PORT,
		.version = ESA_VERSION, .type = ESA_T_RESULT, .job = JOB,
		.rank = ESA_RANK_NONE, .count = NVALS, .seq = 1,
		.bitmap = esa_full_mask(workers), .nvals = NVALS,
	};

	memcpy(p.dmac, b->mac[0], 6);
	return t_build(&p, pkt);
}

/*
 * One chunk through the switch itself, so that its route to the PS is
 * cached (the PS's copy is addressed from it): every rank's DATA from where
 * the rank lives; the last completes.
 */
static int prime(struct esa *e, const struct box *b, const struct cfg *c)
{
	__s32 v[NVALS] = {};
	struct t_run r;
	__u8 buf[2048];

	for (int k = 0; k < c->workers; k++) {
		struct t_pkt p = {
			.saddr = w_ip(k, c->spread), .daddr = htonl(0x0a02ff01),
			.sport = 5000, .dport = ESA_DEFAULT_PORT,
			.version = ESA_VERSION, .type = ESA_T_DATA, .job = JOB,
			.rank = k, .count = NVALS, .seq = 0, .bitmap = 1ULL << k,
			.vals = v, .nvals = NVALS,
		};
		int len;

		memcpy(p.dmac, b->mac[k % c->spread], 6);
		t_worker_mac(k, p.smac);
		len = t_build(&p, buf);
		if (t_run(e->prog_fd, buf, len, b->ifindex[k % c->spread], NULL, 0, &r))
			return -1;
	}
	if (r.verdict == XDP_REDIRECT && t_ctr(e, JOB, ESA_C_COMPLETED) == 1)
		return 0;
	fprintf(stderr, "esa_deliver_bench: priming chunk: verdict %d;", r.verdict);
	for (int i = 0; i < __ESA_C_MAX; i++)
		if (t_ctr(e, JOB, i))
			fprintf(stderr, " %s %llu", esa_counter_names[i],
				(unsigned long long)t_ctr(e, JOB, i));
	fprintf(stderr, "\n");
	return -1;
}

/* Copies the far ends got since the last call (*last: the count then). */
static __u64 sunk(struct esa_deliver_bench_bpf *s, __u64 *last)
{
	__u64 now = __atomic_load_n(&s->bss->dbench_sunk, __ATOMIC_RELAXED), d;

	d = now - *last;
	*last = now;
	return d;
}

static int bench_loop(struct esa *e, struct esa_deliver_bench_bpf *s,
		      const struct box *b, const struct cfg *c, const __u8 *pkt,
		      int len, __u32 n, int rounds, double *fan, double *bc,
		      struct res *out)
{
	int fan_fd = bpf_program__fd(s->progs.dbench_fan);
	int bc_fd = bpf_program__fd(s->progs.dbench_bcast);
	__u64 fc = 0, bcc = 0, last = 0;

	if (prime(e, b, c)) {
		fprintf(stderr, "esa_deliver_bench: the switch did not complete a chunk\n");
		return -1;
	}
	sunk(s, &last);
	for (int r = 0; r < rounds; r++) {
		fan[r] = run_live(fan_fd, b->ifindex[0], pkt, len, n);
		usleep(20000);		/* the far ends' queues drain */
		fc += sunk(s, &last);
		bc[r] = run_live(bc_fd, b->ifindex[0], pkt, len, n);
		usleep(20000);
		bcc += sunk(s, &last);
		if (fan[r] < 0 || bc[r] < 0) {
			fprintf(stderr, "esa_deliver_bench: live test run failed: %s\n",
				strerror(errno));
			return -1;
		}
	}
	out->fan = bench_fastest(fan, rounds);
	out->bcast = bench_fastest(bc, rounds);
	out->fan_copies = fc / ((__u64)rounds * n);
	out->bcast_copies = bcc / ((__u64)rounds * n);
	return 0;
}

static int bench_cfg(const struct cfg *c, __u32 n, int rounds, struct res *out)
{
	struct esa_deliver_bench_bpf *s = esa_deliver_bench_bpf__open();
	double fan[32], bc[32];
	char err[ESA_ERR_LEN];
	struct esa_opts o;
	struct esa_job j;
	struct esa e = {};
	__u8 pkt[2048];
	struct box b;
	int len, rc = -1;

	if (!s)
		return -1;
	esa_opts_default(&o);
	o.nvals = NVALS;
	o.max_jobs = 16;
	o.kfunc = 0;
	if (esa_load(&e, &o, err, sizeof(err))) {
		fprintf(stderr, "esa_deliver_bench: %s\n", err);
		goto out;
	}
	s->rodata->dbench_job = JOB;
	if (bpf_map__reuse_fd(s->maps.esa_fan, e.fan_fd) ||
	    esa_deliver_bench_bpf__load(s))
		goto out;
	if (box_setup(&b, c->ports, bpf_program__fd(s->progs.dbench_sink)))
		goto out;
	for (int k = 0; k < c->ports; k++)
		if (esa_port_register(&e, b.ifindex[k], err, sizeof(err)))
			goto out;
	if (job_setup(&e, &b, c->workers, c->spread) ||
	    old_setup(s, &b, c->workers, c->spread))
		goto out;
	if (esa_job_read(&e, JOB, &j))
		goto out;
	s->bss->dbench_reg = j.reg;	/* dbench_fan stamps it, as ingress */
	len = result_frame(&b, c->workers, pkt);
	s->bss->dbench_bcast_n = 0;
	rc = bench_loop(&e, s, &b, c, pkt, len, n, rounds, fan, bc, out);
out:
	esa_deliver_bench_bpf__destroy(s);
	esa_close(&e);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct cfg cfgs[] = {
		{ 8, 4, 4 }, { 48, 4, 4 }, { 8, 8, 1 }, { 48, 8, 1 },
	};
	int rounds = 7, opt, fail = 0;
	__u32 n = 20000;

	while ((opt = getopt(argc, argv, "n:r:")) != -1) {
		switch (opt) {
		case 'n': n = strtoul(optarg, NULL, 0); break;
		case 'r': rounds = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: esa_deliver_bench [-n RESULTS] [-r ROUNDS]\n");
			return 2;
		}
	}
	if (rounds < 1 || rounds > 31 || !n) {
		fprintf(stderr, "esa_deliver_bench: bad arguments\n");
		return 2;
	}
	printf("\nDelivering one result (%d values) on live frames: ns per result, fastest of\n"
	       "%d runs of %u; copies received per result.  The per-job fan-out (one copy\n"
	       "per member) against the first design (two entries of every port, egress\n"
	       "drops what is for no one; one worker of a job per port at most).\n\n",
	       NVALS, rounds, n);
	printf("%5s %7s %-9s %13s %7s %13s %7s %7s\n", "ports", "workers", "placed",
	       "fan-out ns", "copies", "broadcast ns", "copies", "ratio");
	for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		const struct cfg *c = &cfgs[i];
		struct res r;

		if (bench_cfg(c, n, rounds, &r))
			return 1;
		printf("%5d %7d %-9s %10.1f ns %7llu %10.1f ns %7llu %7.2f\n", c->ports,
		       c->workers, c->spread == 1 ? "one port" : "own ports", r.fan,
		       (unsigned long long)r.fan_copies, r.bcast,
		       (unsigned long long)r.bcast_copies, r.bcast / r.fan);
		/* what each must deliver: every member; a port's first worker */
		if (r.fan_copies != (__u64)c->workers + 1 ||
		    r.bcast_copies != (__u64)(c->spread == 1 ? 1 : c->workers) + 1) {
			fprintf(stderr, "esa_deliver_bench: wrong number of copies\n");
			fail = 1;
		}
		if (i == 1)
			printf("bench: delivery ports=48 workers=4 fanout_ns=%.1f broadcast_ns=%.1f ratio=%.2f\n",
			       r.fan, r.bcast, r.bcast / r.fan);
	}
	return fail;
}
