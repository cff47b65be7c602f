/* SPDX-License-Identifier: Apache-2.0
 *
 * errf.c: an error sentence into the caller's buffer (errf.h).
 */
#include "errf.h"

#include <stdio.h>

void errf_vset(char *err, size_t errlen, const char *fmt, va_list ap)
{
    if (err == NULL || errlen == 0)
        return;
    vsnprintf(err, errlen, fmt, ap);
}

void errf_set(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    errf_vset(err, errlen, fmt, ap);
    va_end(ap);
}

int errf_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    errf_vset(err, errlen, fmt, ap);
    va_end(ap);
    return rc;
}
