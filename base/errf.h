/* SPDX-License-Identifier: Apache-2.0
 *
 * errf.h: the one way a module writes its error sentence. Functions that can
 * fail take a caller-owned buffer (`char *err, size_t errlen`) and, on
 * failure, fill it with one sentence that names the thing and the fix; a
 * caller that does not want the sentence passes NULL (or a length of 0).
 *
 * Pure: it writes only the caller's buffer, no state, thread-safe.
 */
#ifndef RINGCACHE_ERRF_H
#define RINGCACHE_ERRF_H

#include <stdarg.h>
#include <stddef.h>

/* Formats fmt into err, truncated to errlen - 1 bytes and always
 * NUL-terminated; does nothing when err is NULL or errlen is 0. */
void errf_set(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* errf_set with the arguments as a va_list (which it consumes). */
void errf_vset(char *err, size_t errlen, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* errf_set, then returns rc: the shape of a failure path,
 * `return errf_fail(err, errlen, -EINVAL, "...", ...);`. */
int errf_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
