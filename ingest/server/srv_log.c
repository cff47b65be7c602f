/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_log.c: the server's logs: one logfmt line per event on stderr
 * (ts=... level=... msg="..." then the event's key=value pairs, the query id
 * among them for a query's events), filtered by --log-level. Nothing at info
 * or above per request except failed queries.
 */
#include "srv_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static _Atomic int g_level = SRV_LOG_INFO;

int srv_log_set_level(const char *name)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (strcmp(name, names[i]) == 0) {
            atomic_store(&g_level, i);
            return 0;
        }
    return -EINVAL;
}

bool srv_log_enabled(int level)
{
    return level <= atomic_load(&g_level);
}

void srv_log(int level, const char *fmt, ...)
{
    if (!srv_log_enabled(level))
        return;
    static const char *const names[] = {"error", "warn", "info", "debug"};
    char line[4096];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof(line), "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, names[level]);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}

void srv_log_quote(char *buf, size_t cap, const char *s, size_t len)
{
    size_t o = 0;
    if (cap < 3) {
        if (cap)
            buf[0] = 0;
        return;
    }
    buf[o++] = '"';
    for (size_t i = 0; i < len && o + 3 < cap; i++) {
        char c = s[i];
        if (c == '"' || c == '\\') {
            buf[o++] = '\\';
            buf[o++] = c;
        } else if (c == '\n') {
            buf[o++] = '\\';
            buf[o++] = 'n';
        } else if ((unsigned char)c < 0x20) {
            buf[o++] = ' ';
        } else {
            buf[o++] = c;
        }
    }
    buf[o++] = '"';
    buf[o] = 0;
}
