/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The job registry, whichever holds it: the loaded program's maps, or
 * esa.ko (over netlink) when the loaded program reads jobs through the
 * module's kfuncs, or when no program is loaded yet but the module is.  A
 * registration here is the whole of it: the job in the registry and, when
 * a program is loaded, where its members live and how its results reach
 * them (deliver.c).  Used by esactl, the benchmarks and the tests.
 *
 * Calls return 0 or a negative errno with a one-line reason in r->err
 * ("job 7 exists", the kernel's own explanation, ...).
 */
#ifndef ESA_REGISTRY_H
#define ESA_REGISTRY_H

#include "loader.h"
#include "esa_nl.h"
#include "jobdesc.h"

struct esa_registry {
	struct esa	*e;	/* the loaded program, when maps */
	bool		maps;	/* a program is loaded: e is open */
	struct esa_nl	*nl;	/* jobs go to esa.ko */
	struct esa	own;	/* e, when opened here */
	char		err[ESA_ERR_LEN];
};

/* Open what holds the jobs of the switch pinned at pin_dir. */
int esa_registry_open(struct esa_registry *r, const char *pin_dir);
/* The registry of the maps of e, already open (not closed with r). */
void esa_registry_wrap(struct esa_registry *r, struct esa *e);
void esa_registry_close(struct esa_registry *r);
/* Where jobs go: "esa.ko (netlink)", "BPF maps (esactl)". */
const char *esa_registry_name(const struct esa_registry *r);

/*
 * Register job id: bind its ranks where pl says (staged before the
 * registration, so that no packet can bind one elsewhere in between),
 * register it, then install its bindings and fan-out.  pl (ESA_PLACES
 * entries, may be NULL: all from the routes) is resolved in place.  Sets
 * j->reg.  A failure after the registration undoes it.
 */
int esa_registry_add(struct esa_registry *r, __u32 id, struct esa_job *j,
		     struct esa_place *pl);
/*
 * Register the job d describes (jobdesc.h): its home placed first when
 * "region auto" (esa_registry_place_home()), the switch's policy checked
 * (switchml needs a region), then esa_registry_add().  What esactl's job
 * add and esa-agent do.
 */
int esa_registry_add_desc(struct esa_registry *r, struct esa_jobdesc *d);
/*
 * A home of j->region_size slots for job id, into j->region_base: policy
 * switchml the lowest run no other job's region uses; esa and atp where it
 * meets the fewest other homes (esa_home_place()).  Needs the program.
 */
int esa_registry_place_home(struct esa_registry *r, __u32 id, struct esa_job *j);
int esa_registry_del(struct esa_registry *r, __u32 id);
int esa_registry_set_prio(struct esa_registry *r, __u32 id, __u8 max_prio);
/* Job id, and (not NULL) what the registry knows beyond it. */
int esa_registry_get(struct esa_registry *r, __u32 id, struct esa_job *j,
		     struct esa_nl_job_info *info);
/* Calls cb for every registered job, in id order; stops on non-zero. */
int esa_registry_each(struct esa_registry *r, esa_nl_job_cb cb, void *arg);
/*
 * All of an add in the maps of e, already open, as esactl's job add does
 * it (members' ports from the routes): resolve, stage, add, set.  Sets
 * j->reg.  For the benchmarks and the tests.
 */
int esa_job_register(struct esa *e, __u32 id, struct esa_job *j, char *err,
		     size_t len);

#endif /* ESA_REGISTRY_H */
