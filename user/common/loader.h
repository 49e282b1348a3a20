/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Loading the ESA XDP program, pinning it, and reading and writing its maps.
 * Shared by esactl, the tests and the benchmark, so that there is one way to
 * turn options into a loaded switch and one way to register a job.
 */
#ifndef ESA_LOADER_H
#define ESA_LOADER_H

#include <stddef.h>
#include <linux/esa.h>

struct bpf_object;

struct esa_opts {
	__u16	port;		/* UDP port, host order */
	__u16	nvals;		/* values per packet */
	__u32	slots;		/* aggregator slots */
	__u32	max_jobs;	/* 0: 256, or esa.ko's in mode kfunc */
	__u32	stale_ms;
	__be32	addr;		/* switch address or 0 */
	__u8	policy;		/* enum esa_policy */
	int	kfunc;		/* -1: auto, 0: maps, 1: esa.ko kfuncs */
	const char *object;	/* BPF object file; NULL: built in */
};

/* A loaded (or opened from pins) switch: program and map fds. */
struct esa {
	struct bpf_object *obj;	/* NULL when opened from pins */
	int	prog_fd;
	int	egress_fd;	/* the ports' egress program */
	int	egress_test_fd;	/* its test copy (loaded objects only) */
	int	jobs_fd, slots_fd, acc_fd, counters_fd;
	int	learn_fd, dests_fd, ports_fd, cfg_fd;
	struct esa_cfg cfg;
	int	ncpus;
};

#define ESA_ERR_LEN	256

/* Let libbpf's warnings (and the verifier's log) through to stderr. */
void esa_set_verbose(int v);
void esa_opts_default(struct esa_opts *o);
/* Check options; on error fill err with a one-line reason. */
int esa_opts_check(const struct esa_opts *o, char *err, size_t len);

/* Load a new switch (not pinned, not attached). */
int esa_load(struct esa *e, const struct esa_opts *o, char *err, size_t len);
int esa_pin(struct esa *e, const char *dir, char *err, size_t len);
/* Remove the pins of dir (programs stay attached where they are). */
int esa_unpin(const char *dir);
int esa_open_pinned(struct esa *e, const char *dir, char *err, size_t len);
void esa_close(struct esa *e);
/* Is the variant that reads jobs through esa.ko's kfuncs available? */
int esa_kfunc_available(void);

/* Jobs in the map (the path used when esa.ko is not loaded). */
int esa_job_check(const struct esa_cfg *cfg, __u32 id, const struct esa_job *j,
		  char *err, size_t len);
int esa_job_read(struct esa *e, __u32 id, struct esa_job *j);
/* Register job id; fails with EEXIST if it is active.  Sets j->gen. */
int esa_job_add(struct esa *e, __u32 id, struct esa_job *j, char *err,
		size_t len);
int esa_job_set_prio(struct esa *e, __u32 id, __u8 max_prio);
int esa_job_del(struct esa *e, __u32 id);
/* Active and expired are both registered; expired = silent past its lease. */
int esa_job_expired(const struct esa_job *j);
__u64 esa_now_ns(void);

/* Counters: one row per job, row cfg.max_jobs for packets of no job. */
int esa_counters_read(struct esa *e, __u32 row, struct esa_counters *c);
int esa_counters_sum(struct esa *e, struct esa_counters *c);
int esa_counters_reset(struct esa *e);

/* Ports: attach the program and register the port for results. */
int esa_port_attach(struct esa *e, int ifindex, int generic, char *err,
		    size_t len);
int esa_port_detach(struct esa *e, int ifindex, char *err, size_t len);
int esa_port_registered(struct esa *e, int ifindex);
/* Calls fn for every registered port; stops on non-zero. */
int esa_port_each(struct esa *e, int (*fn)(int ifindex, void *arg), void *arg);

extern const char *const esa_counter_names[__ESA_C_MAX];
extern const char *const esa_policy_names[__ESA_POLICY_MAX];
int esa_policy_parse(const char *s);

#endif /* ESA_LOADER_H */
