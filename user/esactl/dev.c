// SPDX-License-Identifier: GPL-2.0
/*
 * esactl dev: attach the program to a port and register it for sending, detach, show.
 */
#include <stdio.h>
#include <string.h>
#include <net/if.h>

#include "esactl.h"


static int usage_dev(void)
{
	fprintf(stdout,
		"Usage: esactl dev attach DEV [ mode { native | generic } ]\n"
		"       esactl dev detach DEV\n"
		"       esactl dev show\n"
		"attach runs the program on DEV and delivers results through it (in\n"
		"generic mode with a tc ingress program too); 'ip link set dev DEV xdpdrv\n"
		"pinned %s/xdp' (or xdpgeneric ... /xdp-generic) attaches without result\n"
		"delivery.\n",
		pin_dir);
	return 0;
}

static int dev_ifindex(const char *name, int *ifindex)
{
	*ifindex = if_nametoindex(name);
	if (!*ifindex)
		return fail("cannot find device \"%s\"", name);
	return 0;
}

static int dev_attach(int argc, char **argv)
{
	char err[ESA_ERR_LEN];
	int ifindex, generic = 0, rc;
	struct esa e;

	if (argc < 1)
		return fail("dev attach needs a device");
	if (matches(*argv, "help"))
		return usage_dev();
	if (dev_ifindex(*argv, &ifindex))
		return 1;
	for (argc--, argv++; argc > 0; argc--, argv++) {
		if (matches(*argv, "mode")) {
			NEXT_ARG();
			if (!strcmp(*argv, "generic") || !strcmp(*argv, "skb"))
				generic = 1;
			else if (strcmp(*argv, "native") && strcmp(*argv, "drv"))
				return fail("unknown mode \"%s\" (native, generic)", *argv);
		} else {
			return bad_arg("dev attach", *argv);
		}
	}
	if (open_switch(&e))
		return 1;
	rc = esa_port_attach(&e, ifindex, generic, err, sizeof(err));
	esa_close(&e);
	return rc ? fail("%s", err) : 0;
}

static int dev_detach(int argc, char **argv)
{
	int ifindex, rc;
	struct esa e;
	__u32 id;

	if (argc < 1)
		return fail("dev detach needs a device");
	if (matches(*argv, "help"))
		return usage_dev();
	if (argc > 1)
		return bad_arg("dev detach", argv[1]);
	if (dev_ifindex(*argv, &ifindex) || open_switch(&e))
		return 1;
	/* a job's devmap would go on sending there (prog unload takes all) */
	if (esa_port_serves(&e, ifindex, &id) > 0) {
		esa_close(&e);
		return fail("%s serves job %u, whose members are behind it: delete the job first",
			    *argv, id);
	}
	rc = detach_one(&e, ifindex, 0);
	esa_close(&e);
	return rc;
}

static int show_one_dev(struct esa *e, int ifindex, int mode)
{
	char name[IF_NAMESIZE] = "?";
	bool results = esa_port_registered(e, ifindex);
	const char *fan = "none";

	/* How sums finished on this port reach their members: a devmap in
	 * native mode (and the tc program for its multi-buffer sums when the
	 * values exceed one frame), the tc program in generic mode
	 * (esa_maps.h). */
	if (mode == 1)
		fan = esa_port_tc(e, ifindex) ? "devmap+tc" : "devmap";
	else if (mode == 2 && esa_port_generic(e, ifindex))
		fan = "tc";
	if_indextoname(ifindex, name);
	out_obj_open(NULL);
	out_str("dev", "%s ", name);
	out_u64("ifindex", "ifindex %llu ", ifindex);
	out_str("xdp", "xdp %s ", mode == 2 ? "generic" : mode == 1 ? "native" : "none");
	out_str("fanout", "fanout %s ", fan);
	out_bool("results", "results %s\n", results);
	out_obj_close();
	return 0;
}

static int dev_show(int argc, char **argv)
{
	struct esa e;

	if (argc > 0)
		return matches(*argv, "help") ? usage_dev() : bad_arg("dev show", *argv);
	if (open_switch(&e))
		return 1;
	out_arr_open(NULL);
	for_each_attached(&e, show_one_dev);
	out_arr_close();
	esa_close(&e);
	return 0;
}

int do_dev(int argc, char **argv)
{
	static const struct esactl_cmd cmds[] = {
		{ "attach", "add", dev_attach },
		{ "detach", "delete", dev_detach },
		{ "show", "list", dev_show },
		{ NULL },
	};

	return esactl_dispatch("dev", cmds, dev_show, usage_dev, argc, argv);
}
