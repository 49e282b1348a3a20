/* SPDX-License-Identifier: GPL-2.0 */
/*
 * esactl's objects, one file each as ip(8)'s are (prog.c, dev.c, job.c,
 * stats.c, pool.c, monitor.c, status.c), and what they share (esactl.c).
 */
#ifndef ESACTL_H
#define ESACTL_H

#include <stdbool.h>
#include "loader.h"
#include "registry.h"
#include "print.h"
#include "util.h"

/* Where the program's pins are (-d). */
extern const char *pin_dir;

/* One line on stderr, "esactl: ...": returns 1, the exit status. */
int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int bad_arg(const char *obj, const char *arg);
int get_u32(const char *what, const char *s, __u32 max, __u32 *v);
/* The pinned program, or fail() with the reason. */
int open_switch(struct esa *e);
/* Where jobs live (registry.h), or fail() with the reason. */
int registry_open(struct esa_registry *r);

#define NEXT_ARG()							\
	do {								\
		argc--, argv++;						\
		if (argc <= 0)						\
			return fail("\"%s\" needs a value", argv[-1]);	\
	} while (0)

/* An object's commands, matched in order (abbreviations too). */
struct esactl_cmd {
	const char *name;
	const char *alias;	/* another spelling, or NULL */
	int (*fn)(int argc, char **argv);
};

/*
 * Run the command argv[0] of object obj (abbreviations allowed), with the
 * rest of argv; none: dflt, what the object alone does; "help": usage().
 */
int esactl_dispatch(const char *obj, const struct esactl_cmd *cmds,
		    int (*dflt)(int, char **), int (*usage)(void),
		    int argc, char **argv);

int do_prog(int argc, char **argv);
int do_dev(int argc, char **argv);
int do_job(int argc, char **argv);
int do_stats(int argc, char **argv);
int do_pool(int argc, char **argv);
int do_monitor(int argc, char **argv);
int do_status(int argc, char **argv);

/* Shared between objects. */
void print_cfg(const struct esa_cfg *c);
/* fn for every interface running the program or registered for sending;
 * mode 0 none, 1 native, 2 generic. */
int for_each_attached(struct esa *e, int (*fn)(struct esa *, int, int));
__u32 prog_id(int fd);
/* Detach the program from a port and unregister it (fn of the above). */
int detach_one(struct esa *e, int ifindex, int mode);

#endif /* ESACTL_H */
