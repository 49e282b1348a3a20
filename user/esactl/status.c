// SPDX-License-Identifier: GPL-2.0
/*
 * esactl status: what is loaded, where jobs go, how many, on how many ports.
 */
#include <stdio.h>
#include <net/if.h>

#include "esactl.h"


static int count_job(__u32 id, const struct esa_job *j,
		     const struct esa_nl_job_info *info, void *arg)
{
	++*(__u32 *)arg;
	return 0;
}

/* How many ports the program sends on. */
static int count_ports(struct esa *e)
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	int ports = 0;

	for (i = ifs; i && i->if_index; i++)
		ports += esa_port_registered(e, i->if_index);
	if (ifs)
		if_freenameindex(ifs);
	return ports;
}

int do_status(int argc, char **argv)
{
	struct esa_registry r;
	struct esa_nl *nl = NULL;
	bool module, loaded, reg;
	__u32 jobs = 0;
	struct esa e;

	if (argc > 0)
		return matches(*argv, "help") ?
			(printf("Usage: esactl status\n"), 0) :
			bad_arg("status", *argv);
	module = !esa_nl_open(&nl);
	if (nl)
		esa_nl_close(nl);
	loaded = !esa_open_pinned(&e, pin_dir, (char[ESA_ERR_LEN]){}, ESA_ERR_LEN);
	reg = !esa_registry_open(&r, pin_dir);
	out_obj_open(NULL);
	out_bool("module", "esa.ko loaded: %s\n", module);
	out_bool("loaded", "program loaded: %s", loaded);
	if (loaded) {
		out_text(" (");
		out_str("pinned", "%s)", pin_dir);
	}
	out_text("\n");
	out_str("registry", "jobs registered through: %s\n",
		reg ? esa_registry_name(&r) : "none: load the program");
	if (loaded) {
		out_obj_open("config");
		out_text("config: ");
		print_cfg(&e.cfg);
		out_obj_close();
	}
	if (reg)
		esa_registry_each(&r, count_job, &jobs);
	out_u64("jobs", "jobs: %llu\n", jobs);
	if (loaded) {
		out_u64("ports", "result ports: %llu\n", count_ports(&e));
		if (module && !e.cfg.kfunc)
			out_text("note: esa.ko is loaded but this program keeps jobs in its maps;\n"
				 "      reload it ('esactl prog unload; esactl prog load') to use esa.ko\n");
		esa_close(&e);
	}
	out_obj_close();
	if (reg)
		esa_registry_close(&r);
	return 0;
}
