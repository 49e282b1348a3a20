/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * TAP for the C tests, as selftests/esa/tap.sh is for the shell ones:
 * selftests/run.sh and the suites read "ok N - ...", "not ok N - ..." and
 * "ok N - ... # SKIP why".  Include it once per test program, as
 * "../tap.h" from selftests/DIR/ (the way the kernel's selftests include
 * kselftest.h).
 *
 *   tap_start()            the version line
 *   ok(cond, fmt, ...)     one result; returns cond
 *   tap_skip(why, fmt, ...) one result that could not run
 *   diag(fmt, ...)         a comment line
 *   tap_end()              the plan and the counts; returns the exit status
 *
 * tap_prefix goes before every result's name: a test program that runs
 * its tests again under other settings names the pass with it.
 */
#ifndef ESA_SELFTESTS_TAP_H
#define ESA_SELFTESTS_TAP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static int tap_tests, tap_failures;
static const char *tap_prefix = "";

static inline void tap_start(void)
{
	printf("TAP version 13\n");
}

/* Flushed at once: tests fork and run threads, and a crash must not lose
 * the results before it. */
static bool ok(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - %s", cond ? "" : "not ", ++tap_tests, tap_prefix);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	tap_failures += !cond;
	return cond;
}

static void tap_skip(const char *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), unused));
static void tap_skip(const char *why, const char *fmt, ...)
{
	va_list ap;

	printf("ok %d - %s", ++tap_tests, tap_prefix);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" # SKIP %s\n", why);
	fflush(stdout);
}

static void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* The plan last (the number of tests is known only at the end); main()
 * returns what this returns. */
static inline int tap_end(void)
{
	printf("1..%d\n", tap_tests);
	printf("# %d passed, %d failed\n", tap_tests - tap_failures, tap_failures);
	return tap_failures ? 1 : 0;
}

#endif /* ESA_SELFTESTS_TAP_H */
