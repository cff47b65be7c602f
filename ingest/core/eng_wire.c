/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_wire.c: the bounded writer and reader of eng_wire.h. Integers are
 * little-endian on the wire whatever the host, doubles their IEEE-754 bits.
 */
#include "eng_wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void ew_init(ew_buf *b, size_t max)
{
    memset(b, 0, sizeof(*b));
    b->max = max;
}

void ew_free(ew_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

static bool ew_room(ew_buf *b, size_t n)
{
    if (b->err)
        return false;
    if (n > SIZE_MAX - b->n || (b->max && b->n + n > b->max)) {
        b->err = -E2BIG;
        return false;
    }
    if (b->n + n <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n)
        cap = cap > SIZE_MAX / 2 ? b->n + n : cap * 2;
    uint8_t *np = realloc(b->p, cap);
    if (!np) {
        b->err = -ENOMEM;
        return false;
    }
    b->p = np;
    b->cap = cap;
    return true;
}

void ew_raw(ew_buf *b, const void *p, size_t n)
{
    if (!ew_room(b, n))
        return;
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
}

void ew_u8(ew_buf *b, uint8_t v)
{
    ew_raw(b, &v, 1);
}

void ew_u32(ew_buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    ew_raw(b, x, 4);
}

void ew_u64(ew_buf *b, uint64_t v)
{
    ew_u32(b, (uint32_t)v);
    ew_u32(b, (uint32_t)(v >> 32));
}

void ew_f64(ew_buf *b, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    ew_u64(b, u);
}

void ew_bytes(ew_buf *b, const void *p, size_t n)
{
    if (n > UINT32_MAX) {
        if (!b->err)
            b->err = -E2BIG;
        return;
    }
    ew_u32(b, (uint32_t)n);
    ew_raw(b, p, n);
}

void ew_put_u32_at(ew_buf *b, size_t off, uint32_t v)
{
    if (b->err || off + 4 > b->n)
        return;
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    memcpy(b->p + off, x, 4);
}

void er_init(er_buf *r, const void *p, size_t n)
{
    r->p = p;
    r->n = n;
    r->off = 0;
    r->err = 0;
}

int er_fail(er_buf *r)
{
    r->err = -EBADMSG;
    return -EBADMSG;
}

const uint8_t *er_raw(er_buf *r, size_t n)
{
    if (r->err)
        return NULL;
    if (n > r->n - r->off) {
        er_fail(r);
        return NULL;
    }
    const uint8_t *p = r->p + r->off;
    r->off += n;
    return p;
}

uint8_t er_u8(er_buf *r)
{
    const uint8_t *p = er_raw(r, 1);
    return p ? p[0] : 0;
}

uint32_t er_u32(er_buf *r)
{
    const uint8_t *p = er_raw(r, 4);
    return p ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24
             : 0;
}

uint64_t er_u64(er_buf *r)
{
    uint64_t lo = er_u32(r);
    uint64_t hi = er_u32(r);
    return lo | hi << 32;
}

double er_f64(er_buf *r)
{
    uint64_t u = er_u64(r);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

const uint8_t *er_bytes(er_buf *r, uint32_t max, uint32_t *len)
{
    *len = 0;
    uint32_t n = er_u32(r);
    if (r->err)
        return NULL;
    if (n > max) {
        er_fail(r);
        return NULL;
    }
    const uint8_t *p = er_raw(r, n);
    if (p)
        *len = n;
    return p;
}

uint32_t er_count(er_buf *r, size_t min_size, uint32_t max)
{
    uint32_t n = er_u32(r);
    if (r->err)
        return 0;
    if (n > max || (min_size && (size_t)n > (r->n - r->off) / min_size)) {
        er_fail(r);
        return 0;
    }
    return n;
}
