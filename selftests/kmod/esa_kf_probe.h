/* SPDX-License-Identifier: GPL-2.0 */
/* What the probe programs (esa_kf_probe.bpf.c) read and write. */
#ifndef ESA_KF_PROBE_H
#define ESA_KF_PROBE_H

struct esa_probe {
	/* In. */
	__u64	key;		/* probe_admit: ESA_KF_KEY() */
	__be32	saddr;		/* probe_admit */
	__u32	job;		/* probe_job, probe_alive */
	__u32	gen;		/* probe_alive */
	__u32	record;		/* probe_admit: count (job, gen) in map used */
	/* Out. */
	__s32	ret;
	__u32	pad;
	struct esa_kf_jinfo ji;	/* probe_admit */
	struct esa_kf_job kj;	/* probe_job */
};

#endif /* ESA_KF_PROBE_H */
