/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_log.c: the server's logs: one logfmt line per event on stderr
 * (ts=... level=... msg="..." then the event's key=value pairs, the query id
 * among them for a query's events), filtered by --log-level. Nothing at info
 * or above per request except failed queries.
 */
#include "srv_int.h"
#include "logfmt.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Atomic int g_level = SRV_LOG_INFO;

int srv_log_set_level(const char *name)
{
    int level = logfmt_level_of(name);
    if (level < 0)
        return level;
    atomic_store(&g_level, level);
    return 0;
}

bool srv_log_enabled(int level)
{
    return level <= atomic_load(&g_level);
}

void srv_log(int level, const char *fmt, ...)
{
    if (!srv_log_enabled(level))
        return;
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    logfmt_vline(line, sizeof line, level, fmt, ap);
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
