// SPDX-License-Identifier: GPL-2.0
/*
 * esa.ko - the control plane of ESA in-network aggregation on a Linux
 * switch: a per-namespace job registry, administered over generic netlink
 * and read by the XDP data plane through kfuncs.  See docs/kmod.md.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <net/genetlink.h>
#include "kfunc.h"
#include "netlink.h"
#include "registry.h"

/* Job ids are 16 bits on the wire. */
#define ESA_JOBS_LIMIT	65536

unsigned int esa_max_jobs = 256;
module_param_named(max_jobs, esa_max_jobs, uint, 0444);
MODULE_PARM_DESC(max_jobs,
		 "Job ids per network namespace are 0 .. max_jobs - 1 (1 .. 65536, default 256); must equal the XDP program's max_jobs");

static int __init esa_init(void)
{
	int err;

	if (!esa_max_jobs || esa_max_jobs > ESA_JOBS_LIMIT) {
		pr_err("max_jobs must be 1 .. %u\n", ESA_JOBS_LIMIT);
		return -EINVAL;
	}
	/* Cannot be undone: a failure below leaves nothing that uses it. */
	err = esa_kfunc_init();
	if (err)
		return err;
	err = esa_registry_init();
	if (err)
		return err;
	err = esa_genl_init();
	if (err)
		goto err_registry;
	pr_info("loaded, max_jobs %u\n", esa_max_jobs);
	return 0;

err_registry:
	esa_registry_exit();
	return err;
}

static void __exit esa_exit(void)
{
	esa_genl_exit();
	esa_registry_exit();
}

module_init(esa_init);
module_exit(esa_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ESA in-network aggregation: job registry, netlink API and XDP kfuncs");
MODULE_AUTHOR("ESA on Linux developers");
