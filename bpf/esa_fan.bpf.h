/* SPDX-License-Identifier: GPL-2.0 */
/*
 * esa_fan.bpf.h - esa_fan, the jobs' devmaps (include/esa_maps.h): entry i
 * of job J's devmap sends a copy to member i's port.  Its own header
 * because the delivery benchmark (esa_deliver_bench.bpf.c) reuses the
 * switch's map and must declare it alike.
 */
#ifndef _ESA_FAN_BPF_H
#define _ESA_FAN_BPF_H

struct esa_fan_devmap {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, ESA_FAN_MAX);
	__uint(key_size, sizeof(__u32));	/* devmaps take no BTF */
	__uint(value_size, sizeof(struct bpf_devmap_val));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 256);
	__type(key, __u32);
	__array(values, struct esa_fan_devmap);
} esa_fan SEC(".maps");

#endif /* _ESA_FAN_BPF_H */
