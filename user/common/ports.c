// SPDX-License-Identifier: GPL-2.0
/*
 * The switch's ports: the program attached to each, and esa_ports, the
 * devmap of every port the switch sends on, each entry with the egress
 * program (a device flushes the frames queued to it through the egress
 * program of the first: every frame the switch sends to a port must carry
 * it, include/esa_maps.h).
 */
#include <errno.h>
#include <string.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "loader.h"

#define ERR(...)	esa_fail(err, len, -1, __VA_ARGS__)

static __u32 esa_prog_id(int fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

int esa_port_registered(struct esa *e, int ifindex)
{
	struct bpf_devmap_val v;
	__u32 k = ifindex;

	return !bpf_map_lookup_elem(e->ports_fd, &k, &v);
}

int esa_port_register(struct esa *e, int ifindex, char *err, size_t len)
{
	struct bpf_devmap_val v = {
		.ifindex = ifindex,
		.bpf_prog.fd = e->egress_fd,
	};
	char name[IF_NAMESIZE] = "?";
	__u32 k = ifindex;

	if (!bpf_map_update_elem(e->ports_fd, &k, &v, BPF_ANY))
		return 0;
	if_indextoname(ifindex, name);
	return ERR("cannot register %s for sending: %s", name, strerror(errno));
}

int esa_port_attach(struct esa *e, int ifindex, int generic, char *err,
		    size_t len)
{
	__u32 mode = generic ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;
	__u32 id = 0, ours = esa_prog_id(e->prog_fd);
	char name[IF_NAMESIZE] = "?";
	int rc;

	if_indextoname(ifindex, name);
	if (!bpf_xdp_query_id(ifindex, mode, &id) && id && id != ours)
		return ERR("%s already runs XDP program %u: detach it first", name, id);
	if (id != ours) {
		rc = bpf_xdp_attach(ifindex, e->prog_fd,
				    XDP_FLAGS_UPDATE_IF_NOEXIST | mode, NULL);
		if (rc)
			return ERR("cannot attach to %s in %s mode: %s%s", name,
				   generic ? "generic" : "native", strerror(-rc),
				   generic ? "" : " (try 'mode generic')");
	}
	if (esa_port_register(e, ifindex, err, len)) {
		char why[ESA_ERR_LEN];

		snprintf(why, sizeof(why), "%s", err);
		esa_port_detach(e, ifindex, err, len);
		return ERR("%s", why);
	}
	return 0;
}

int esa_port_detach(struct esa *e, int ifindex, char *err, size_t len)
{
	__u32 ours = esa_prog_id(e->prog_fd), id, k = ifindex;
	char name[IF_NAMESIZE] = "?";
	int found = 0;

	if_indextoname(ifindex, name);
	found += !bpf_map_delete_elem(e->ports_fd, &k);
	for (int m = 0; m < 2; m++) {
		__u32 mode = m ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;

		if (bpf_xdp_query_id(ifindex, mode, &id) || id != ours || !id)
			continue;
		if (bpf_xdp_detach(ifindex, mode, NULL))
			return ERR("cannot detach from %s: %s", name, strerror(errno));
		found++;
	}
	if (!found)
		return ERR("ESA is not attached to %s", name);
	return 0;
}

int esa_port_each(struct esa *e, int (*fn)(int ifindex, void *arg), void *arg)
{
	__u32 key, next, *prev = NULL;
	int rc;

	while (!bpf_map_get_next_key(e->ports_fd, prev, &next)) {
		key = next;
		prev = &key;
		rc = fn(key, arg);
		if (rc)
			return rc;
	}
	return 0;
}
