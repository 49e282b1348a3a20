// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libesa: what a worker says went wrong.  Owns the worker's error line
 * (w->err, esa_worker_error()) and warning line (w->warn,
 * esa_worker_warning()), and the meaning of each error (esa_strerror()).
 * Every other file of the library may call it; it calls none of them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "esa_int.h"

const char *esa_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return "success";
	case EOVERFLOW:
		return "a sum does not fit the output type";
	case ERANGE:
		return "a rank had a NaN or infinity in its input";
	case ETIMEDOUT:
		return "no result came back in time (give_up_ms)";
	case EPIPE:
		return "the worker failed earlier; its ranks are out of step";
	case EPROTO:
		return "the ranks disagree on an allreduce (length or dtype), or a peer broke "
		       "the protocol";
	default:
		return strerror(err);
	}
}

/* Say why in the worker's error line; returns err. */
int esa_worker_fail(struct esa_worker *w, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->err, sizeof(w->err), fmt, ap);
	va_end(ap);
	return err;
}

/* "what: strerror(errno)" into err; returns -errno. */
int esa_sock_fail(char *err, size_t len, const char *what)
{
	int e = errno;

	snprintf(err, len, "%s: %s", what, strerror(e));
	return -e;
}

/* Add a note to the worker's warning ("; " between notes). */
void esa_warn(struct esa_worker *w, const char *fmt, ...)
{
	size_t o = strlen(w->warn);
	va_list ap;

	if (o && o + 2 < sizeof(w->warn)) {
		strcpy(w->warn + o, "; ");
		o += 2;
	}
	va_start(ap, fmt);
	vsnprintf(w->warn + o, sizeof(w->warn) - o, fmt, ap);
	va_end(ap);
}

const char *esa_worker_error(const esa_worker *w)
{
	return w ? w->err : "no worker";
}

const char *esa_worker_warning(const esa_worker *w)
{
	return w ? w->warn : "no worker";
}
