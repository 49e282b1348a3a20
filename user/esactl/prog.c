// SPDX-License-Identifier: GPL-2.0
/*
 * esactl prog: load the program once for every port, pin it, unload it, show it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/magic.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "esactl.h"
#include "words.h"


static int usage_prog(void)
{
	fprintf(stdout,
		"Usage: esactl prog load [ port PORT ] [ values N ] [ slots N ] [ jobs N ]\n"
		"                        [ policy { esa | atp | switchml } ] [ stale MSEC ]\n"
		"                        [ addr ADDR ] [ mode { auto | maps | kfunc } ]\n"
		"                        [ ps-copy { on | off } ] [ udp-csum { on | off } ]\n"
		"       esactl prog unload\n"
		"       esactl prog show\n"
		"Loads one program for every port, pinned under %s.\n", pin_dir);
	return 0;
}

static int ensure_bpffs(void)
{
	struct statfs st;

	if (!statfs("/sys/fs/bpf", &st) && st.f_type == BPF_FS_MAGIC)
		return 0;
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700"))
		return fail("cannot mount bpffs on /sys/fs/bpf: %s", strerror(errno));
	return 0;
}

static int prog_load(int argc, char **argv)
{
	char err[ESA_ERR_LEN];
	struct esa_opts o;
	struct esa e;
	__u32 v;

	esa_opts_default(&o);
	for (; argc > 0; argc--, argv++) {
		if (matches(*argv, "port")) {
			NEXT_ARG();
			if (get_u32("port", *argv, 65535, &v))
				return 1;
			o.port = v;
		} else if (matches(*argv, "values")) {
			NEXT_ARG();
			if (get_u32("values", *argv, ESA_MAX_VALUES, &v))
				return 1;
			o.nvals = v;
		} else if (matches(*argv, "slots")) {
			NEXT_ARG();
			if (get_u32("slots", *argv, 1u << 22, &v))
				return 1;
			o.slots = v;
		} else if (matches(*argv, "jobs")) {
			NEXT_ARG();
			if (get_u32("jobs", *argv, 65536, &v))
				return 1;
			o.max_jobs = v;
		} else if (matches(*argv, "policy")) {
			NEXT_ARG();
			if (esa_policy_parse(*argv) < 0)
				return fail("unknown policy \"%s\" (esa, atp, switchml)", *argv);
			o.policy = esa_policy_parse(*argv);
		} else if (matches(*argv, "stale")) {
			NEXT_ARG();
			if (get_u32("stale", *argv, 3600 * 1000, &o.stale_ms))
				return 1;
		} else if (matches(*argv, "addr")) {
			NEXT_ARG();
			if (esa_parse_ipport(*argv, ESA_ADDR_NO_PORT | ESA_ADDR_ANY, 0, &o.addr,
					     NULL))
				return fail("\"%s\" is not an IPv4 address", *argv);
		} else if (matches(*argv, "ps-copy")) {
			NEXT_ARG();
			if (strcmp(*argv, "on") && strcmp(*argv, "off"))
				return fail("ps-copy \"%s\": on or off", *argv);
			o.no_ps_copy = !strcmp(*argv, "off");
		} else if (matches(*argv, "udp-csum")) {
			NEXT_ARG();
			if (strcmp(*argv, "on") && strcmp(*argv, "off"))
				return fail("udp-csum \"%s\": on or off", *argv);
			o.no_udp_csum = !strcmp(*argv, "off");
		} else if (matches(*argv, "mode")) {
			NEXT_ARG();
			if (!strcmp(*argv, "auto"))
				o.kfunc = -1;
			else if (!strcmp(*argv, "maps"))
				o.kfunc = 0;
			else if (!strcmp(*argv, "kfunc"))
				o.kfunc = 1;
			else
				return fail("unknown mode \"%s\" (auto, maps, kfunc)", *argv);
		} else if (matches(*argv, "help")) {
			return usage_prog();
		} else {
			return bad_arg("prog load", *argv);
		}
	}
	if (esa_opts_check(&o, err, sizeof(err)))
		return fail("%s", err);
	if (ensure_bpffs())
		return 1;
	if (!access(pin_dir, F_OK))
		return fail("a program is already loaded at %s ('esactl prog unload' first)",
			    pin_dir);
	if (esa_load(&e, &o, err, sizeof(err)))
		return fail("%s", err);
	if (esa_pin(&e, pin_dir, err, sizeof(err))) {
		esa_close(&e);
		return fail("%s", err);
	}
	esa_close(&e);
	return 0;
}

__u32 prog_id(int fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

/* Every interface running our program, registered or attached by ip(8). */
int for_each_attached(struct esa *e, int (*fn)(struct esa *, int, int))
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	__u32 id;
	int rc = 0;

	for (i = ifs; i && i->if_index; i++) {
		bool on[2] = { false, false };

		for (int m = 0; m < 2; m++)
			on[m] = !bpf_xdp_query_id(i->if_index, m ? XDP_FLAGS_SKB_MODE :
						  XDP_FLAGS_DRV_MODE, &id) && esa_prog_ours(e, id);
		if (on[0] || on[1] || esa_port_registered(e, i->if_index))
			rc |= fn(e, i->if_index, on[1] ? 2 : on[0] ? 1 : 0);
	}
	if (ifs)
		if_freenameindex(ifs);
	return rc;
}

int detach_one(struct esa *e, int ifindex, int mode)
{
	char err[ESA_ERR_LEN];

	if (esa_port_detach(e, ifindex, err, sizeof(err)))
		return fail("%s", err);
	return 0;
}

static int prog_unload(int argc, char **argv)
{
	struct esa e;
	int rc;

	if (argc > 0)
		return matches(*argv, "help") ? usage_prog() : bad_arg("prog unload", *argv);
	if (open_switch(&e))
		return 1;
	rc = for_each_attached(&e, detach_one);
	esa_close(&e);
	if (!esa_unpin(pin_dir))
		return fail("nothing pinned at %s", pin_dir);
	return rc;
}

void print_cfg(const struct esa_cfg *c)
{
	char a[INET_ADDRSTRLEN] = "any";

	if (c->addr)
		inet_ntop(AF_INET, &c->addr, a, sizeof(a));
	out_str("policy", "policy %s ", esa_policy_names[c->policy % __ESA_POLICY_MAX]);
	out_u64("port", "port %llu ", ntohs(c->port));
	out_str("addr", "addr %s ", a);
	out_u64("values", "values %llu ", c->nvals);
	out_u64("slots", "slots %llu ", c->slots);
	out_u64("jobs", "jobs %llu ", c->max_jobs);
	out_u64("stale_ms", "stale %llums ", c->stale_ms);
	out_str("ps_copy", "ps-copy %s ", c->flags & ESA_CFG_F_NO_PS_COPY ? "off" : "on");
	out_str("udp_csum", "udp-csum %s ", c->flags & ESA_CFG_F_NO_UDP_CSUM ? "off" : "on");
	out_str("registry", "registry %s\n", c->kfunc ? "esa.ko" : "maps");
}

static int prog_show(int argc, char **argv)
{
	struct esa e;

	if (argc > 0)
		return matches(*argv, "help") ? usage_prog() : bad_arg("prog show", *argv);
	if (open_switch(&e))
		return 1;
	out_obj_open(NULL);
	out_u64("prog_id", "prog %llu ", prog_id(e.prog_fd));
	out_u64("generic_prog_id", "generic-prog %llu ", prog_id(e.skb_fd));
	out_str("pinned", "pinned %s ", pin_dir);
	print_cfg(&e.cfg);
	out_obj_close();
	esa_close(&e);
	return 0;
}

int do_prog(int argc, char **argv)
{
	static const struct esactl_cmd cmds[] = {
		{ "load", NULL, prog_load },
		{ "unload", NULL, prog_unload },
		{ "show", "list", prog_show },
		{ NULL },
	};

	return esactl_dispatch("prog", cmds, prog_show, usage_prog, argc, argv);
}
