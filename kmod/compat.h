/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Differences between the kernels esa.ko builds against (Debian 12's 6.1
 * and 6.12), tested by the presence of macros rather than by version
 * numbers, so that stable backports need nothing here.
 */
#ifndef _ESA_COMPAT_H
#define _ESA_COMPAT_H

#include <linux/btf.h>
#include <linux/btf_ids.h>
#include <net/genetlink.h>

/* 6.2 marks kfuncs __bpf_kfunc; before, noinline kept them in BTF. */
#ifndef __bpf_kfunc
#define __bpf_kfunc noinline
#endif

/* 6.9 refuses a kfunc set not declared with BTF_KFUNCS_START. */
#ifndef BTF_KFUNCS_START
#define BTF_KFUNCS_START(name) BTF_SET8_START(name)
#define BTF_KFUNCS_END(name) BTF_SET8_END(name)
#endif

/* Only kernels with it (6.8, 6.1.y backport) can restrict joining a group. */
#ifdef GENL_MCAST_CAP_NET_ADMIN
#define ESA_MCAST_FLAGS GENL_MCAST_CAP_NET_ADMIN
#else
#define ESA_MCAST_FLAGS 0
#endif

#endif /* _ESA_COMPAT_H */
