/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Building the ESA header (struct esa_hdr, linux/esa.h) that a sender puts
 * on the wire: the version and the byte order of every field in one place.
 * Shared by the switch's helpers (esa_switch.h), libesa, esa-ps, the
 * simulator and the tests; the XDP program compiles it too.
 */
#ifndef _ESA_WIRE_H
#define _ESA_WIRE_H

#include <linux/esa.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* Header byte order: libbpf's helpers in BPF, glibc's in user space. */
#ifdef __bpf__
#include <bpf/bpf_endian.h>
#define esa_htons(x)	bpf_htons(x)
#define esa_htonl(x)	bpf_htonl(x)
#define esa_htonll(x)	bpf_cpu_to_be64(x)
#else
#include <endian.h>
#define esa_htons(x)	htobe16(x)
#define esa_htonl(x)	htobe32(x)
#define esa_htonll(x)	htobe64(x)
#endif

/*
 * A header of this version, the fields in host order.  Flags, priority and
 * reason start at 0: single bytes, the caller sets those it has.
 */
static __always_inline void esa_hdr_init(struct esa_hdr *h, __u8 type, __u16 job,
					 __u16 rank, __u64 bitmap, __u32 seq,
					 __u16 count)
{
	*h = (struct esa_hdr){
		.version	= ESA_VERSION,
		.type		= type,
		.job		= esa_htons(job),
		.rank		= esa_htons(rank),
		.bitmap		= esa_htonll(bitmap),
		.seq		= esa_htonl(seq),
		.count		= esa_htons(count),
	};
}

#endif /* _ESA_WIRE_H */
