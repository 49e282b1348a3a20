/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The release of ESA's programs (esactl, esa-ps, esa-jobs, esa-agent) and
 * of the Python package, which says the same in user/python/esa/__init__.py
 * (the install suite checks they agree); what --version prints.  libesa's
 * API has a version of its own (ESA_LIB_VERSION, the soname), the wire
 * protocol too (ESA_VERSION in linux/esa.h).
 */
#ifndef ESA_VERSION_H
#define ESA_VERSION_H

#include <stdio.h>
#include <linux/esa.h>

#define ESA_RELEASE	"1.1.0"

/* "PROG 1.1.0 (ESA wire protocol 1)" on stdout, for --version. */
static inline void esa_print_version(const char *prog)
{
	printf("%s %s (ESA wire protocol %d)\n", prog, ESA_RELEASE, ESA_VERSION);
}

#endif /* ESA_VERSION_H */
