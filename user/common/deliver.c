// SPDX-License-Identifier: GPL-2.0
/*
 * Where a job's members live and how its results reach them: the ranks'
 * bindings (esa_binds) and the job's fan-out (esa_members and its devmap in
 * esa_fan), written around a registration in either registry (esactl's job
 * add: resolve, stage, register, set).  Layouts and rules:
 * include/esa_maps.h; the data path: bpf/esa_bind.bpf.h and
 * bpf/esa_deliver.bpf.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <bpf/bpf.h>

#include "loader.h"

#define ERR(...)	esa_fail(err, len, -1, __VA_ARGS__)

/* The address of place i: rank i (or the leaf there), the PS, the spine. */
static __be32 esa_place_ip(const struct esa_job *j, int i)
{
	return i == ESA_PLACE_PS ? j->ps.ip : i == ESA_PLACE_UP ? j->up.ip :
	       j->rank[i].ip;
}

/* "rank 3 (10.0.3.2)", "the PS (10.0.9.2)", "the spine (..)", in buf. */
static const char *esa_who(const struct esa_job *j, int i, char *buf, size_t n)
{
	char a[INET_ADDRSTRLEN];
	__be32 ip = esa_place_ip(j, i);

	inet_ntop(AF_INET, &ip, a, sizeof(a));
	if (i == ESA_PLACE_PS)
		snprintf(buf, n, "the PS (%s)", a);
	else if (i == ESA_PLACE_UP)
		snprintf(buf, n, "the spine (%s)", a);
	else if (j->set[i])
		snprintf(buf, n, "the leaf at rank %d (%s)", i, a);
	else
		snprintf(buf, n, "rank %d (%s)", i, a);
	return buf;
}

/* Resolve and check place i (a member, the PS, a leaf's spine). */
static int esa_place_one(struct esa *e, const struct esa_job *j, int i,
			 struct esa_place *p, char *err, size_t len)
{
	__be32 ip = esa_place_ip(j, i);
	char who[64], dev[IF_NAMESIZE] = "?";
	int rc, need = ESA_IP_LEN(e->cfg.nvals);
	__u32 rmtu = 0;
	bool local;

	esa_who(j, i, who, sizeof(who));
	if (!p->ifindex) {
		rc = esa_route_dev(ip, &p->ifindex, &local, &rmtu);
		if (rc)
			return ERR("%s: no route from the switch: %s", who,
				   strerror(-rc));
		if (local)
			return ERR("%s is an address of this box: the switch serves hosts behind its ports",
				   who);
	}
	if (!if_indextoname(p->ifindex, dev))
		return ERR("%s: no port with index %d", who, p->ifindex);
	if (!esa_port_registered(e, p->ifindex))
		return ERR("%s is behind %s, where ESA is not attached (esactl dev attach %s)",
			   who, dev, dev);
	/* what the switch sends it must get there (esa_port_fits()) */
	rc = esa_if_mtu(p->ifindex);
	if (rc >= 0 && rc < need)
		return ERR("%s is behind %s, whose MTU %d is below the packets' %d bytes",
			   who, dev, rc, need);
	if (rmtu && rmtu < (__u32)need)
		return ERR("%s is reached by a route of MTU %u, below the packets' %d bytes",
			   who, rmtu, need);
	return 0;
}

int esa_places_resolve(struct esa *e, const struct esa_job *j,
		       struct esa_place *pl, char *err, size_t len)
{
	for (int r = 0; r < j->nworkers; r++)
		if (esa_job_member(j, r) && esa_place_one(e, j, r, &pl[r], err, len))
			return -1;
	if (j->up.ip &&
	    esa_place_one(e, j, ESA_PLACE_UP, &pl[ESA_PLACE_UP], err, len))
		return -1;
	return esa_place_one(e, j, ESA_PLACE_PS, &pl[ESA_PLACE_PS], err, len);
}

/* The MAC of the switch's port ifindex (ask the device, not sysfs). */
static int esa_if_mac(int ifindex, __u8 mac[6])
{
	struct ifreq ifr = {};
	int fd, rc = -1;

	if (!if_indextoname(ifindex, ifr.ifr_name))
		return -1;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (!ioctl(fd, SIOCGIFHWADDR, &ifr)) {
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
		rc = 0;
	}
	close(fd);
	return rc;
}

/* Write the binding of every rank of job id: word's flags and reg. */
static int esa_binds_write(struct esa *e, __u32 id, const struct esa_job *j,
			   const struct esa_place *pl, __u64 tag, char *err,
			   size_t len)
{
	for (int r = 0; r < ESA_MAX_WORKERS; r++) {
		struct esa_bind b = {};
		__u32 k = id * ESA_MAX_WORKERS + r;

		if (esa_job_member(j, r)) {
			b.word = tag | ESA_BIND_PORT |
				 (pl[r].have_mac ? ESA_BIND_MAC : 0);
			b.ifindex = pl[r].ifindex;
			memcpy(b.mac, pl[r].mac, 6);
			b.sport = j->rank[r].port;
			if (esa_if_mac(pl[r].ifindex, b.port_mac))
				return ERR("cannot read the MAC of port %d", pl[r].ifindex);
		}
		if (bpf_map_update_elem(e->binds_fd, &k, &b, BPF_ANY))
			return ERR("cannot write the binding of job %u rank %d: %s",
				   id, r, strerror(errno));
	}
	return 0;
}

int esa_binds_stage(struct esa *e, __u32 id, const struct esa_job *j,
		    const struct esa_place *pl, char *err, size_t len)
{
	return esa_binds_write(e, id, j, pl, ESA_BIND_ANYREG, err, len);
}

/* Members sorted by port: a port's copies then come one after the other. */
static int esa_member_cmp(const void *a, const void *b)
{
	const struct esa_member *x = a, *y = b;

	if (x->ifindex != y->ifindex)
		return x->ifindex < y->ifindex ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/*
 * The job's members here, sorted by port, and its PS, except at a leaf
 * (two levels), whose spine sends the PS its copy.
 */
static void esa_fanout_fill(struct esa_fanout *f, const struct esa_job *j,
			    const struct esa_place *pl)
{
	int n = 0;

	for (int r = 0; r < j->nworkers; r++)
		if (esa_job_member(j, r))
			f->m[n++] = (struct esa_member){ .ifindex = pl[r].ifindex,
				.ip = j->rank[r].ip, .port = j->rank[r].port,
				.rank = r };
	if (!j->up.ip)
		f->m[n++] = (struct esa_member){
			.ifindex = pl[ESA_PLACE_PS].ifindex, .ip = j->ps.ip,
			.port = j->ps.port, .rank = ESA_MEMBER_PS };
	qsort(f->m, n, sizeof(f->m[0]), esa_member_cmp);
	f->n = n;
	f->ps = ESA_FAN_MAX;
	for (int i = 0; i < n; i++)
		if (f->m[i].rank == ESA_MEMBER_PS)
			f->ps = i;
	f->up_ifindex = j->up.ip ? pl[ESA_PLACE_UP].ifindex : 0;
	f->reg = j->reg;
}

/* The job's devmap: entry i sends a copy to member i's port. */
static int esa_fan_devmap(struct esa *e, const struct esa_fanout *f, char *err,
			  size_t len)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_DEVMAP, "esa_fan_job", sizeof(__u32),
				sizeof(struct bpf_devmap_val), ESA_FAN_MAX, NULL);

	if (fd < 0)
		return ERR("cannot create the job's devmap: %s", strerror(errno));
	for (__u32 i = 0; i < f->n; i++) {
		struct bpf_devmap_val v = { .ifindex = f->m[i].ifindex,
					    .bpf_prog.fd = e->egress_fd };

		if (bpf_map_update_elem(fd, &i, &v, BPF_ANY)) {
			close(fd);
			return ERR("cannot add port %u to the job's devmap: %s",
				   f->m[i].ifindex, strerror(errno));
		}
	}
	return fd;
}

int esa_deliver_set(struct esa *e, __u32 id, const struct esa_job *j,
		    const struct esa_place *pl, char *err, size_t len)
{
	struct esa_fanout *f;
	int fd, rc = -1;

	if (esa_binds_write(e, id, j, pl, (__u64)j->reg << 32, err, len))
		return -1;
	f = calloc(1, sizeof(*f));
	if (!f)
		return ERR("out of memory");
	esa_fanout_fill(f, j, pl);
	fd = esa_fan_devmap(e, f, err, len);
	if (fd >= 0) {
		/* the table first: the data path checks it against reg */
		if (bpf_map_update_elem(e->members_fd, &id, f, BPF_ANY) ||
		    bpf_map_update_elem(e->fan_fd, &id, &fd, BPF_ANY))
			ERR("cannot install job %u's fan-out: %s", id, strerror(errno));
		else
			rc = 0;
		close(fd);
	}
	free(f);
	return rc;
}

void esa_deliver_clear(struct esa *e, __u32 id)
{
	struct esa_fanout *f = calloc(1, sizeof(*f));
	struct esa_bind b = {};

	bpf_map_delete_elem(e->fan_fd, &id);
	if (f)
		bpf_map_update_elem(e->members_fd, &id, f, BPF_ANY);
	free(f);
	for (__u32 r = 0; r < ESA_MAX_WORKERS; r++) {
		__u32 k = id * ESA_MAX_WORKERS + r;

		bpf_map_update_elem(e->binds_fd, &k, &b, BPF_ANY);
	}
}

int esa_bind_read(struct esa *e, __u32 id, int rank, struct esa_bind *b)
{
	__u32 k = id * ESA_MAX_WORKERS + rank;

	return bpf_map_lookup_elem(e->binds_fd, &k, b) ? -errno : 0;
}

int esa_fanout_read(struct esa *e, __u32 id, struct esa_fanout *f)
{
	return bpf_map_lookup_elem(e->members_fd, &id, f) ? -errno : 0;
}

/* Does fan-out f send to port ifindex (a member, or a leaf's spine)? */
static bool esa_fan_uses(const struct esa_fanout *f, int ifindex)
{
	for (int i = 0; i < f->n && i < ESA_FAN_MAX; i++)
		if (f->m[i].ifindex == (__u32)ifindex)
			return true;
	return f->up_ifindex == (__u32)ifindex;
}

int esa_port_serves(struct esa *e, int ifindex, __u32 *id)
{
	struct esa_fanout *f = calloc(1, sizeof(*f));
	int found = 0;

	if (!f)
		return -ENOMEM;
	for (__u32 k = 0; k < e->cfg.max_jobs && !found; k++) {
		if (esa_fanout_read(e, k, f) || !f->reg || !esa_fan_uses(f, ifindex))
			continue;
		*id = k;
		found = 1;
	}
	free(f);
	return found;
}
