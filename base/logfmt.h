/* SPDX-License-Identifier: Apache-2.0
 *
 * logfmt.h: the one shape of a log line, shared by the cache node and the
 * compute server: `ts=2026-01-02T03:04:05.678Z level=info ` (UTC,
 * milliseconds) then the event's own `msg="..." key=value` text, and the four
 * level names their --log-level options take. Where a line goes (stderr, a
 * callback) is the caller's.
 *
 * Pure: reads the clock, writes only the caller's buffer; no state,
 * thread-safe.
 */
#ifndef RINGCACHE_LOGFMT_H
#define RINGCACHE_LOGFMT_H

#include <stdarg.h>
#include <stddef.h>

/* The levels, most severe first; each module's own constants (NODE_LOG_*,
 * BS_LOG_*, SRV_LOG_*) have these values. */
enum { LOGFMT_ERROR = 0, LOGFMT_WARN = 1, LOGFMT_INFO = 2, LOGFMT_DEBUG = 3 };

/* "error", "warn", "info" or "debug"; NULL for any other level. */
const char *logfmt_level_name(int level);

/* The level one of those four names says; -EINVAL for any other name. */
int logfmt_level_of(const char *name);

/* Writes into line (cap > 0) the timestamp and level, then fmt with ap (which
 * it consumes), truncated to cap - 1 bytes and NUL-terminated. */
void logfmt_vline(char *line, size_t cap, int level, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

#endif
