/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Running the bench driver (bpf/esa_bench.bpf.c): shared by make bench and
 * the VM's kfunc bench.
 */
#ifndef ESA_BENCHLIB_H
#define ESA_BENCHLIB_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/esa.h>

#include "esa_bench.skel.h"

/*
 * ns per packet of one run of n packets of the driver's stream through the
 * program prog_fd, on port ifindex; -1 on failure.  The stream goes on
 * across runs unless the caller resets b->bss->bench_n.
 */
static inline double bench_run(struct esa_bench_bpf *b, int prog_fd, int ifindex,
			       const __u8 *pkt, __u32 len, __u32 n)
{
	struct xdp_md ctx = { .data_end = len, .ingress_ifindex = ifindex };
	/* ESA_MAX_VALUES: a 8994-byte frame, multi-buffer in XDP */
	__u8 buf[ETH_HLEN + ESA_IP_LEN(ESA_MAX_VALUES)];
	__u32 zero = 0;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = buf, .data_size_in = len,
		    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = n);

	if (len > sizeof(buf)) {
		errno = EMSGSIZE;
		return -1;
	}
	if (bpf_map_update_elem(bpf_map__fd(b->maps.bench_target), &zero,
				&prog_fd, BPF_ANY))
		return -1;
	memcpy(buf, pkt, len);
	if (bpf_prog_test_run_opts(bpf_program__fd(b->progs.bench_drive), &o))
		return -1;
	return o.duration;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Interference only ever adds time: the fastest run is the cleanest. */
static inline double bench_fastest(double *t, int n)
{
	qsort(t, n, sizeof(t[0]), bench_cmp_double);
	return t[0];
}

#endif /* ESA_BENCHLIB_H */
