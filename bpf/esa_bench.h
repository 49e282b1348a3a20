/* SPDX-License-Identifier: GPL-2.0 */
/* Shared by bpf/esa_bench.bpf.c and the benchmark that drives it. */
#ifndef ESA_BENCH_H
#define ESA_BENCH_H

#include <linux/types.h>

struct bench_cfg {
	__u32	nvals;
	__u32	slots;
	__u32	nworkers;
	__u16	job;
	__u16	resv;
	__be32	worker_ip;	/* rank r sends from worker_ip + r */
	__be32	switch_ip;
	__be16	worker_port;
	__u8	worker_mac[6];	/* last byte + r */
	__u8	switch_mac[6];
	__be32	ps_ip;		/* the job's PS, source of acks */
	__be16	ps_port;
	__u8	ps_mac[6];	/* its MAC: the switch takes acks only from it */
	__u16	resv2;
};

/* One CPU's lane of bench_lane (a per-CPU map): its stream, its checks. */
struct bench_lane {
	__u64	n;		/* packets of the lane's own stream so far */
	__u64	results;	/* results seen, each checked */
	__u64	bad;		/* results with a wrong sum */
	__u64	other;		/* packets made into anything but a result */
	__u16	job;
	__be16	worker_port;
	__u32	shared;		/* take the packets from the shared stream */
};

#endif /* ESA_BENCH_H */
