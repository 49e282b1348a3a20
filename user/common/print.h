/* SPDX-License-Identifier: GPL-2.0 */
/* The single text/JSON output path (print.c). */
#ifndef ESA_PRINT_H
#define ESA_PRINT_H

#include <stdbool.h>

/*
 * One output path, iproute2 style: every show command prints through these,
 * and -j turns the same calls into JSON.  Text formats are printf formats;
 * they are ignored in JSON mode, where key names the value.
 */
void out_init(bool json, bool pretty);
void out_finish(void);
void out_obj_open(const char *key);
void out_obj_close(void);
void out_arr_open(const char *key);
void out_arr_close(void);
void out_str(const char *key, const char *fmt, const char *v);
void out_u64(const char *key, const char *fmt, unsigned long long v);
void out_s64(const char *key, const char *fmt, long long v);
void out_bool(const char *key, const char *fmt, bool v);
/* Text only. */
void out_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool out_is_json(void);

#endif /* ESA_PRINT_H */
