// SPDX-License-Identifier: GPL-2.0
/*
 * The switch's ports: the program attached to each, and esa_ports, the
 * devmap of every port the switch sends on, each entry with the egress
 * program (a device flushes the frames queued to it through the egress
 * program of the first: every frame the switch sends to a port must carry
 * it, include/esa_maps.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "loader.h"
#include "esa_nl.h"

#define ERR(...)	esa_fail(err, len, -1, __VA_ARGS__)

static __u32 esa_prog_id(int fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

bool esa_prog_ours(struct esa *e, __u32 id)
{
	/* the fds stay as loaded or opened: their ids are asked once */
	if (!e->prog_id)
		e->prog_id = esa_prog_id(e->prog_fd);
	if (!e->skb_id)
		e->skb_id = esa_prog_id(e->skb_fd);
	return id && (id == e->prog_id || id == e->skb_id);
}

int esa_if_mtu(int ifindex)
{
	struct ifreq ifr = {};
	int fd, rc;

	if (!if_indextoname(ifindex, ifr.ifr_name))
		return -errno;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = ioctl(fd, SIOCGIFMTU, &ifr) ? -errno : ifr.ifr_mtu;
	close(fd);
	return rc;
}

/*
 * Can port ifindex carry what the switch sends?  Its MTU must hold the
 * packets, and in native mode it must take XDP redirects: the kernel's
 * broadcast skips a port that cannot, and one whose MTU the frame exceeds,
 * without a word.  Where the kernel does not report XDP features (before
 * 6.3), the driver's redirects fail later instead, counted as its tx
 * drops.
 */
static int esa_port_fits(struct esa *e, int ifindex, const char *name,
			 int generic, char *err, size_t len)
{
	int mtu = esa_if_mtu(ifindex), need = ESA_IP_LEN(e->cfg.nvals);
	__u64 f;

	if (mtu >= 0 && mtu < need)
		return ERR("%s's MTU %d is below the packets' %d bytes (values %u): raise it (ip link set %s mtu %d) or load fewer values",
			   name, mtu, need, e->cfg.nvals, name, need);
	if (!generic && !esa_nl_xdp_features(ifindex, &f) &&
	    !(f & ESA_XDP_ACT_NDO_XMIT))
		return ERR("%s cannot take XDP redirects (no ndo_xdp_xmit; a veth's peer needs XDP or GRO): results for it would be lost; attach it in mode generic",
			   name);
	return 0;
}

int esa_port_registered(struct esa *e, int ifindex)
{
	struct bpf_devmap_val v;
	__u32 k = ifindex;

	return !bpf_map_lookup_elem(e->ports_fd, &k, &v);
}

/*
 * The port's entry in esa_seen, egress's count of the copies it hands out
 * there (per CPU, zeroed); one made earlier is kept.
 */
static int esa_port_seen(struct esa *e, __u32 k)
{
	void *zero = calloc(e->ncpus, (sizeof(struct esa_egress_seen) + 7) & ~7);
	int rc;

	if (!zero)
		return -ENOMEM;
	rc = bpf_map_update_elem(e->seen_fd, &k, zero, BPF_NOEXIST);
	free(zero);
	return rc && errno != EEXIST ? -errno : 0;
}

int esa_port_register(struct esa *e, int ifindex, char *err, size_t len)
{
	struct bpf_devmap_val v = {
		.ifindex = ifindex,
		.bpf_prog.fd = e->egress_fd,
	};
	char name[IF_NAMESIZE] = "?";
	__u32 k = ifindex;
	int rc;

	rc = esa_port_seen(e, k);
	if (!rc && !bpf_map_update_elem(e->ports_fd, &k, &v, BPF_ANY))
		return 0;
	rc = rc ?: -errno;
	if_indextoname(ifindex, name);
	return ERR("cannot register %s for sending: %s", name, strerror(-rc));
}

/*
 * Generic mode's fan-out (include/esa_maps.h): the tc ingress program on
 * the port and the port's ESA_PORT_SKB mark, which makes the XDP program
 * pass finished sums up to it.  A native port gets it too when the
 * program's values exceed one single-buffer frame (ESA_PORT_TC alone):
 * its jumbo sums take it, the devmap cannot copy them.  Our filter is the
 * one of ESA_TC_HANDLE at ESA_TC_PRIO; other filters of the port's clsact
 * stay.
 */
#define ESA_TC_HANDLE	0xe5a
#define ESA_TC_PRIO	1

static int esa_port_tc_attach(struct esa *e, int ifindex, int generic,
			      const char *name, char *err, size_t len)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
		    .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = ESA_TC_HANDLE,
		    .priority = ESA_TC_PRIO, .prog_fd = e->tc_fd,
		    .flags = BPF_TC_F_REPLACE);
	struct esa_port_info pi = {
		.flags = ESA_PORT_TC | (generic ? ESA_PORT_SKB : 0),
	};
	__u32 k = ifindex;
	int rc;

	rc = bpf_tc_hook_create(&hook);
	/* ENOENT: no such qdisc or classifier kind in this kernel. */
	if (rc && rc != -EEXIST)
		return ERR("cannot add a clsact qdisc to %s for the fan-out by tc: %s%s",
			   name, strerror(-rc), rc == -ENOENT ?
			   " (the kernel lacks clsact: CONFIG_NET_SCH_INGRESS, module sch_ingress)" : "");
	rc = bpf_tc_attach(&hook, &opts);
	if (rc)
		return ERR("cannot attach the fan-out by tc to %s: %s%s",
			   name, strerror(-rc), rc == -ENOENT || rc == -EOPNOTSUPP ?
			   " (the kernel lacks cls_bpf: CONFIG_NET_CLS_BPF, module cls_bpf)" : "");
	if (bpf_map_update_elem(e->portinfo_fd, &k, &pi, BPF_ANY))
		return ERR("cannot mark %s's fan-out by tc: %s", name,
			   strerror(errno));
	return 0;
}

/* Undo esa_port_tc_attach(); 1 if there was something to undo. */
static int esa_port_tc_detach(struct esa *e, int ifindex)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
		    .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = ESA_TC_HANDLE,
		    .priority = ESA_TC_PRIO);
	__u32 k = ifindex;
	int found;

	found = !bpf_map_delete_elem(e->portinfo_fd, &k);
	found += !bpf_tc_detach(&hook, &opts);
	return found > 0;
}

static __u32 esa_port_flags(struct esa *e, int ifindex)
{
	struct esa_port_info pi;
	__u32 k = ifindex;

	return bpf_map_lookup_elem(e->portinfo_fd, &k, &pi) ? 0 : pi.flags;
}

int esa_port_generic(struct esa *e, int ifindex)
{
	return !!(esa_port_flags(e, ifindex) & ESA_PORT_SKB);
}

int esa_port_tc(struct esa *e, int ifindex)
{
	return !!(esa_port_flags(e, ifindex) & ESA_PORT_TC);
}

int esa_port_attach(struct esa *e, int ifindex, int generic, char *err,
		    size_t len)
{
	__u32 mode = generic ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;
	__u32 other = generic ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
	int fd = generic ? e->skb_fd : e->prog_fd;
	__u32 id = 0, oid = 0, ours = esa_prog_id(fd);
	char name[IF_NAMESIZE] = "?";
	int rc, tc;

	if_indextoname(ifindex, name);
	if (!bpf_xdp_query_id(ifindex, other, &oid) && oid &&
	    esa_prog_ours(e, oid))
		return ERR("%s runs ESA in %s mode: detach it first (esactl dev detach %s)",
			   name, generic ? "native" : "generic", name);
	if (!bpf_xdp_query_id(ifindex, mode, &id) && id && id != ours)
		return ERR("%s already runs XDP program %u: detach it first", name, id);
	if (esa_port_fits(e, ifindex, name, generic, err, len))
		return -1;
	if (id != ours) {
		rc = bpf_xdp_attach(ifindex, fd,
				    XDP_FLAGS_UPDATE_IF_NOEXIST | mode, NULL);
		if (rc)
			return ERR("cannot attach to %s in %s mode: %s%s", name,
				   generic ? "generic" : "native", strerror(-rc),
				   generic ? "" : " (try 'mode generic')");
	}
	tc = generic || e->cfg.nvals > ESA_FRAME_VALUES;
	if (!tc)
		esa_port_tc_detach(e, ifindex);	/* of an earlier generic attach */
	if ((tc && esa_port_tc_attach(e, ifindex, generic, name, err, len)) ||
	    esa_port_register(e, ifindex, err, len)) {
		char why[ESA_ERR_LEN];

		snprintf(why, sizeof(why), "%s", err);
		esa_port_detach(e, ifindex, err, len);
		return ERR("%s", why);
	}
	return 0;
}

int esa_port_detach(struct esa *e, int ifindex, char *err, size_t len)
{
	__u32 id, k = ifindex;
	char name[IF_NAMESIZE] = "?";
	int found = 0;

	if_indextoname(ifindex, name);
	found += !bpf_map_delete_elem(e->ports_fd, &k);
	bpf_map_delete_elem(e->seen_fd, &k);
	found += esa_port_tc_detach(e, ifindex);
	for (int m = 0; m < 2; m++) {
		__u32 mode = m ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;

		if (bpf_xdp_query_id(ifindex, mode, &id) || !id ||
		    !esa_prog_ours(e, id))
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
