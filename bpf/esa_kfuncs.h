/* SPDX-License-Identifier: GPL-2.0 */
/*
 * esa_kfuncs.h - esa.ko's kfuncs (kmod/kfunc.c) as an XDP program declares
 * them: the data plane's kfunc variant (esa_kfunc.bpf.h) and the tests'
 * probe (selftests/kmod/esa_kf_probe.bpf.c).
 */
#ifndef _ESA_KFUNCS_H
#define _ESA_KFUNCS_H

#include <linux/bpf.h>
#include <linux/esa.h>

extern int bpf_esa_bind(struct xdp_md *ctx, struct esa_kf_bind *b) __ksym;
extern int bpf_esa_admit(struct xdp_md *ctx, __u64 key, __be32 saddr,
			 __be64 bitmap, struct esa_kf_jinfo *ji) __ksym;
extern int bpf_esa_owner_alive(struct xdp_md *ctx, __u32 job,
			       __u32 gen) __ksym;
extern int bpf_esa_job(struct xdp_md *ctx, __u32 job,
		       struct esa_kf_job *out) __ksym;

#endif
