/* SPDX-License-Identifier: Apache-2.0
 *
 * bufgrow.c: growing a byte buffer by doubling (bufgrow.h).
 */
#include "bufgrow.h"

#include <errno.h>
#include <stdlib.h>

int bufgrow(uint8_t **p, size_t *cap, size_t need, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : first;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return -ENOMEM;
        c *= 2;
    }
    uint8_t *np = realloc(*p, c);
    if (!np)
        return -ENOMEM;
    *p = np;
    *cap = c;
    return 0;
}
