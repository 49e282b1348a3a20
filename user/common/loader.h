/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ESA switch as user space drives it: loading the XDP program, pinning
 * it, opening it again from its pins (loader.c); jobs in its maps
 * (jobs.c); its ports (ports.c); where each job's members live and how its
 * results reach them (deliver.c); its counters (loader.c).  Shared by
 * esactl, the tests and the benchmarks, so that there is one way to turn
 * options into a loaded switch and one way to register a job.
 */
#ifndef ESA_LOADER_H
#define ESA_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include "esa_maps.h"
#include "place.h"
#include "esa_names.h"	/* esa_policy_names[], esa_policy_parse() */

struct bpf_object;

struct esa_opts {
	__u16	port;		/* UDP port, host order */
	__u16	nvals;		/* values per packet */
	__u32	slots;		/* aggregator slots */
	__u32	max_jobs;	/* 0: 256, or esa.ko's in mode kfunc */
	__u32	stale_ms;
	__be32	addr;		/* switch address or 0 */
	__u8	policy;		/* enum esa_policy */
	__u8	no_ps_copy;	/* results to the workers only (ESA_CFG_F_NO_PS_COPY) */
	__u8	no_udp_csum;	/* results with UDP checksum 0 (ESA_CFG_F_NO_UDP_CSUM) */
	int	kfunc;		/* -1: auto, 0: maps, 1: esa.ko kfuncs */
	const char *object;	/* BPF object file; NULL: built in */
};

/* A loaded (or opened from pins) switch: program and map fds. */
struct esa {
	struct bpf_object *obj;	/* NULL when opened from pins */
	int	prog_fd;	/* native ports' (xdp.frags) */
	int	skb_fd;		/* generic ports': the same without frags */
	__u32	prog_id, skb_id;	/* their ids, once asked (esa_prog_ours()) */
	int	egress_fd;	/* the ports' egress program */
	int	tc_fd;		/* generic mode's fan-out (tc ingress) */
	int	egress_test_fd;	/* its test copy (loaded objects only) */
	int	jobs_fd, slots_fd, acc_fd, counters_fd, tombs_fd, routes_fd;
	int	binds_fd, members_fd, fan_fd, ports_fd, portinfo_fd, seen_fd;
	int	cfg_fd;
	struct esa_job *jobs;	/* the jobs map, mmap()ed */
	size_t	jobs_len;
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
/* Fill err with a one-line reason and return rc (for the files here). */
int esa_fail(char *err, size_t len, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* ------------------------------------------------------------------ */
/* Jobs in the map (jobs.c): the registry when esa.ko is not loaded    */
/* ------------------------------------------------------------------ */

int esa_job_check(const struct esa_cfg *cfg, __u32 id, const struct esa_job *j,
		  char *err, size_t len);
int esa_job_read(struct esa *e, __u32 id, struct esa_job *j);
/* Register job id; fails with EEXIST if it is active.  Sets j->reg, j->life. */
int esa_job_add(struct esa *e, __u32 id, struct esa_job *j, char *err,
		size_t len);
int esa_job_set_prio(struct esa *e, __u32 id, __u8 max_prio);
int esa_job_set_region(struct esa *e, __u32 id, __u32 base, __u32 size);
int esa_job_del(struct esa *e, __u32 id);
/* Is rank r a member of job j at this box (two levels: under this leaf)? */
static inline bool esa_job_member(const struct esa_job *j, int r)
{
	return r < j->nworkers && j->rank[r].ip;
}

/* The ranks this box sums: the union of its members' (esa_member_set()). */
__u64 esa_job_mask(const struct esa_job *j);
/* Is job j a leaf's or a spine's (an upstream, or a member with ranks)? */
bool esa_job_two_levels(const struct esa_job *j);
/* Is job j a spine's (a member that is a leaf with its ranks)? */
bool esa_job_spine(const struct esa_job *j);
/* Active and expired are both registered; expired = silent past its lease. */
int esa_job_expired(const struct esa_job *j);
__u32 esa_job_gen(const struct esa_job *j);
/* Milliseconds since the job's last packet (or its add), saturating. */
__u32 esa_job_idle_ms(const struct esa_job *j);
__u64 esa_now_ns(void);

/* ------------------------------------------------------------------ */
/* Counters (loader.c)                                                 */
/* ------------------------------------------------------------------ */

/* One row per job, row cfg.max_jobs for packets of no job. */
int esa_counters_read(struct esa *e, __u32 row, struct esa_counters *c);
int esa_counters_sum(struct esa *e, struct esa_counters *c);
int esa_counters_reset(struct esa *e);

/* ------------------------------------------------------------------ */
/* Ports (ports.c)                                                     */
/* ------------------------------------------------------------------ */

/* Attach the program and register the port for sending. */
int esa_port_attach(struct esa *e, int ifindex, int generic, char *err,
		    size_t len);
int esa_port_detach(struct esa *e, int ifindex, char *err, size_t len);
/* Is XDP program id one of ours (the native ports' or the generic ones')? */
bool esa_prog_ours(struct esa *e, __u32 id);
int esa_port_registered(struct esa *e, int ifindex);
/* Is the port attached in generic mode, with its fan-out (tc)? */
int esa_port_generic(struct esa *e, int ifindex);
/* Does the port have the tc fan-out (generic mode, or jumbo sums)? */
int esa_port_tc(struct esa *e, int ifindex);
/* Calls fn for every registered port; stops on non-zero. */
int esa_port_each(struct esa *e, int (*fn)(int ifindex, void *arg), void *arg);
/* Register a port for sending without attaching (tests, a PS's port). */
int esa_port_register(struct esa *e, int ifindex, char *err, size_t len);
/* The MTU of port ifindex, or -errno. */
int esa_if_mtu(int ifindex);

/* ------------------------------------------------------------------ */
/* Where members live and how results reach them (deliver.c)           */
/* ------------------------------------------------------------------ */

/*
 * Resolve the ports of the job's ranks and PS and check the switch can
 * serve them: every port attached (or registered), no member on this box.
 */
int esa_places_resolve(struct esa *e, const struct esa_job *j,
		       struct esa_place *pl, char *err, size_t len);
/*
 * Before the job is registered: bind its ranks where pl says, for whatever
 * registration comes (checked, never learnt into), so that no packet can
 * bind a rank elsewhere in between.
 */
int esa_binds_stage(struct esa *e, __u32 id, const struct esa_job *j,
		    const struct esa_place *pl, char *err, size_t len);
/*
 * Once it is registered (j->reg set): the bindings become the
 * registration's (the MACs not given then learnt once), and the job's
 * fan-out table and devmap are made.
 */
int esa_deliver_set(struct esa *e, __u32 id, const struct esa_job *j,
		    const struct esa_place *pl, char *err, size_t len);
/* The job is gone: its bindings and fan-out with it. */
void esa_deliver_clear(struct esa *e, __u32 id);
int esa_bind_read(struct esa *e, __u32 id, int rank, struct esa_bind *b);
int esa_fanout_read(struct esa *e, __u32 id, struct esa_fanout *f);
/* 1 and *id when a job's fan-out sends to port ifindex (or its spine's
 * there), else 0. */
int esa_port_serves(struct esa *e, int ifindex, __u32 *id);

/*
 * The port the box reaches ip through (route.c); *local: ip is the box's;
 * *mtu: the route's own MTU, 0 if it has none (then the port's rules).
 */
int esa_route_dev(__be32 ip, int *ifindex, bool *local, __u32 *mtu);

extern const char *const esa_counter_names[__ESA_C_MAX];
/* What each counts, a line (names.c; Prometheus's HELP). */
extern const char *const esa_counter_help[__ESA_C_MAX];

#endif /* ESA_LOADER_H */
