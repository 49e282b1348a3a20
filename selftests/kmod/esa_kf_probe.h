/* SPDX-License-Identifier: GPL-2.0 */
/* What the probe programs (esa_kf_probe.bpf.c) read and write. */
#ifndef ESA_KF_PROBE_H
#define ESA_KF_PROBE_H

struct esa_probe {
	/* In. */
	__u64	key;		/* probe_admit: ESA_KF_KEY() */
	__be64	bitmap;		/* probe_admit: the packet's, as on the wire */
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

/*
 * pause_clock: the next call of ktime_get_coarse_ts64() by thread tid
 * (esa.ko's clock read, early in bpf_esa_admit() after the job lookup)
 * waits until go is set, so that a test can change the registry between
 * the lookup and the rest of the admission.
 */
struct esa_pause {
	__u32	tid;		/* in: the thread to pause (gettid()) */
	__u32	armed;		/* in: 1 to pause its next call; the probe clears it */
	__u32	go;		/* in: 1 lets it go on */
	__u32	paused;		/* out: 1 while it waits, 2 once it went on */
	__u32	timed_out;	/* out: it went on without go */
};

#endif /* ESA_KF_PROBE_H */
