/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _ESA_KFUNC_H
#define _ESA_KFUNC_H

#include <linux/types.h>

struct xdp_md;
struct esa_kf_jinfo;
struct esa_kf_job;
struct esa_kf_bind;

int esa_kfunc_init(void);

/* Called by BPF programs only (declared for -Wmissing-prototypes). */
int bpf_esa_bind(struct xdp_md *ctx, struct esa_kf_bind *b);
int bpf_esa_admit(struct xdp_md *ctx, u64 key, __be32 saddr, __be64 bitmap,
		  struct esa_kf_jinfo *ji);
int bpf_esa_owner_alive(struct xdp_md *ctx, u32 job, u32 gen);
int bpf_esa_job(struct xdp_md *ctx, u32 job, struct esa_kf_job *out);

#endif /* _ESA_KFUNC_H */
