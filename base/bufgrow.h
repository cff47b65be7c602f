/* SPDX-License-Identifier: Apache-2.0
 *
 * bufgrow.h: the one growth rule of a byte buffer that is appended to:
 * capacity doubles (from a first size) until what is asked for fits, so n
 * appends cost O(n) copies in all. The buffer (pointer and capacity) is the
 * caller's; callers keep the check "does it fit already" inline on their
 * append path and call bufgrow only when it does not.
 *
 * Pure but for realloc: no state, thread-safe on distinct buffers.
 */
#ifndef RINGCACHE_BUFGROW_H
#define RINGCACHE_BUFGROW_H

#include <stddef.h>
#include <stdint.h>

/* Makes *cap at least need: *cap (first when *cap is 0; first > 0) doubled
 * until it is, and *p reallocated to that many bytes (the first *cap bytes
 * kept). Returns 0 (also when need <= *cap already); -ENOMEM when realloc
 * fails or the capacity would pass SIZE_MAX, leaving *p and *cap as they
 * were. */
int bufgrow(uint8_t **p, size_t *cap, size_t need, size_t first);

#endif
