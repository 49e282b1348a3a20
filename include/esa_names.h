/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The names of the switch's slot-allocation policies (enum esa_policy,
 * linux/esa.h) and of the priority policies (enum esa_prio_policy,
 * esa_prio.h), as esactl, libesa's config, the simulator and the
 * benchmarks read and print them: one table each, in user space.
 */
#ifndef ESA_NAMES_H
#define ESA_NAMES_H

#include <string.h>
#include <linux/esa.h>
#include "esa_prio.h"

static const char *const esa_policy_names[__ESA_POLICY_MAX] = {
	[ESA_POLICY_ESA]	= "esa",
	[ESA_POLICY_ATP]	= "atp",
	[ESA_POLICY_SWITCHML]	= "switchml",
};

static const char *const esa_prio_names[__ESA_PRIO_MAX] = {
	[ESA_PRIO_STATIC]	= "static",
	[ESA_PRIO_LAS]		= "las",
	[ESA_PRIO_SRSF]		= "srsf",
	[ESA_PRIO_FLAT]		= "flat",
};

/* The index of name s in names[n], or -1. */
static inline int esa_name_find(const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (names[i] && !strcmp(s, names[i]))
			return i;
	return -1;
}

static inline int esa_policy_parse(const char *s)
{
	return esa_name_find(esa_policy_names, __ESA_POLICY_MAX, s);
}

static inline const char *esa_policy_name(int policy)
{
	return policy >= 0 && policy < __ESA_POLICY_MAX ? esa_policy_names[policy] : "?";
}

static inline int esa_prio_parse(const char *s)
{
	return esa_name_find(esa_prio_names, __ESA_PRIO_MAX, s);
}

static inline const char *esa_prio_name(int prio)
{
	return prio >= 0 && prio < __ESA_PRIO_MAX ? esa_prio_names[prio] : "?";
}

#endif /* ESA_NAMES_H */
