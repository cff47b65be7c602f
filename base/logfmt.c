/* SPDX-License-Identifier: Apache-2.0
 *
 * logfmt.c: the shape of a log line (logfmt.h).
 */
#include "logfmt.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *const g_names[] = {"error", "warn", "info", "debug"};
#define N_LEVELS (int)(sizeof g_names / sizeof g_names[0])

const char *logfmt_level_name(int level)
{
    return level >= 0 && level < N_LEVELS ? g_names[level] : NULL;
}

int logfmt_level_of(const char *name)
{
    for (int i = 0; i < N_LEVELS; i++)
        if (strcmp(name, g_names[i]) == 0)
            return i;
    return -EINVAL;
}

void logfmt_vline(char *line, size_t cap, int level, const char *fmt, va_list ap)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    const char *name = logfmt_level_name(level);
    int n = snprintf(line, cap, "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, name ? name : "unknown");
    if (n < 0 || (size_t)n >= cap)
        return;
    vsnprintf(line + n, cap - (size_t)n, fmt, ap);
}
