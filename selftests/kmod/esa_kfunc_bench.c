// SPDX-License-Identifier: GPL-2.0
/*
 * The per-packet cost of reading jobs through esa.ko's kfuncs against the
 * esa_jobs map: both builds of the ESA program, driven through
 * bpf/esa_bench.bpf.c with the same stream of a job of 8 workers (claim,
 * 6 adds, completion and multicast per chunk), beside that driver's floors
 * (bare XDP_TX, locked add loop).  Timings are printed, never judged (in
 * the test VM they are those of software emulation); it fails only if a
 * program did not aggregate the stream.  Needs root and esa.ko.
 *
 * usage: esa_kfunc_bench [PACKETS [ROUNDS]]   (default 20000 5)
 */
#include "testlib.h"
#include "esa_bench.h"
#include "benchlib.h"
#include "kmod_test.h"

#define JOB		1
#define WORKERS		8
#define NVALS		256

static int load(struct esa *e, struct t_net *net, int kfunc)
{
	char err[ESA_ERR_LEN] = "";
	struct esa_opts o;

	esa_opts_default(&o);
	o.nvals = NVALS;
	o.kfunc = kfunc;
	if (esa_load(e, &o, err, sizeof(err)) ||
	    t_port_register(e, net->sw0) || t_port_register(e, net->sw1)) {
		fprintf(stderr, "esa_kfunc_bench: load: %s\n", err);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	__u32 n = argc > 1 ? strtoul(argv[1], NULL, 0) : 20000;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	struct esa_job j = t_job(WORKERS, T_PS_A, 0, JOB);
	double t[4][32], best[4];
	struct esa_bench_bpf *b;
	char err[ESA_ERR_LEN];
	__s32 vals[NVALS];
	struct esa e[2];
	struct esa_nl *nl;
	struct t_net net;
	__u8 pkt[2048];
	struct t_pkt p;
	int len, rc = 0;

	if (rounds < 1 || rounds > 32 || n < WORKERS) {
		fprintf(stderr, "usage: esa_kfunc_bench [PACKETS [ROUNDS]]\n");
		return 2;
	}
	if (esa_netns_setup(&net) || esa_nl_open(&nl)) {
		fprintf(stderr, "esa_kfunc_bench: needs root and esa.ko\n");
		return 4;
	}
	if (load(&e[0], &net, 0) || load(&e[1], &net, 1))
		return 1;
	if (esa_job_register(&e[0], JOB, &j, err, sizeof(err)) ||
	    k_job_add(&e[1], nl, JOB, &j, err, sizeof(err))) {
		fprintf(stderr, "esa_kfunc_bench: job: %s %s\n", err,
			esa_nl_error(nl) ?: "");
		return 1;
	}

	b = esa_bench_bpf__open();
	if (!b)
		return 1;
	b->rodata->bench_cfg.nvals = NVALS;
	b->rodata->bench_cfg.slots = e[0].cfg.slots;
	b->rodata->bench_cfg.nworkers = WORKERS;
	b->rodata->bench_cfg.job = JOB;
	b->rodata->bench_cfg.worker_ip = t_worker_ip(0);
	b->rodata->bench_cfg.switch_ip = t_ip(T_SW_IP);
	b->rodata->bench_cfg.worker_port = htons(T_WORKER_PORT + JOB);
	t_worker_mac(0, b->rodata->bench_cfg.worker_mac);
	memcpy(b->rodata->bench_cfg.switch_mac, net.sw0_mac, 6);
	bpf_map__set_max_entries(b->maps.floor_slots, e[0].cfg.slots);
	bpf_map__set_max_entries(b->maps.floor_acc, e[0].cfg.slots);
	bpf_map__set_value_size(b->maps.floor_acc, NVALS * sizeof(__u64));
	if (esa_bench_bpf__load(b)) {
		fprintf(stderr, "esa_kfunc_bench: cannot load the driver\n");
		return 1;
	}
	for (int i = 0; i < NVALS; i++)
		vals[i] = (i * 2654435761u) >> 8;
	p = t_data(&net, JOB, 0, 0, 0, vals, NVALS);
	len = t_build(&p, pkt);

	/* Interleaved, so that drifts of the machine hit all alike. */
	for (int r = 0; r < rounds; r++) {
		t[0][r] = bench_run(b, bpf_program__fd(b->progs.bench_tx), net.sw0, pkt, len, n);
		t[1][r] = bench_run(b, bpf_program__fd(b->progs.bench_add), net.sw0, pkt, len, n);
		t[2][r] = bench_run(b, e[0].prog_fd, net.sw0, pkt, len, n);
		t[3][r] = bench_run(b, e[1].prog_fd, net.sw0, pkt, len, n);
	}
	for (int k = 0; k < 4; k++) {
		qsort(t[k], rounds, sizeof(double), bench_cmp_double);
		best[k] = t[k][0];	/* interference only adds time */
		if (best[k] < 0) {
			fprintf(stderr, "esa_kfunc_bench: BPF_PROG_TEST_RUN failed\n");
			return 1;
		}
	}
	/* Both must have aggregated the stream, not dropped it. */
	for (int k = 0; k < 2; k++) {
		__u64 done = t_ctr(&e[k], JOB, ESA_C_COMPLETED);
		__u64 want = (__u64)rounds * (n / WORKERS);

		if (done < want || t_ctr(&e[k], JOB, ESA_C_DROP_JOB)) {
			fprintf(stderr, "esa_kfunc_bench: %s variant completed %llu of %llu chunks\n",
				k ? "kfunc" : "map", (unsigned long long)done,
				(unsigned long long)want);
			rc = 1;
		}
	}
	printf("ns per packet, %d values, %d workers, fastest of %d runs of %u:\n"
	       "bare XDP_TX %.1f  locked add %.1f  ESA (map) %.1f  ESA (kfunc) %.1f\n"
	       "kfunc/map %.3f  map/add %.2f  kfunc/add %.2f\n",
	       NVALS, WORKERS, rounds, n, best[0], best[1], best[2], best[3],
	       best[3] / best[2], best[2] / best[1], best[3] / best[1]);
	esa_bench_bpf__destroy(b);
	esa_close(&e[0]);
	esa_close(&e[1]);
	esa_nl_close(nl);
	return rc;
}
