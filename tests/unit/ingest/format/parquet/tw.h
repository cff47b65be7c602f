/* SPDX-License-Identifier: Apache-2.0
 *
 * tw.h: a tiny Thrift compact-protocol and Parquet page writer for the unit
 * tests of the Parquet reader, so tests can build exact (and exactly wrong)
 * page headers, footers and pages by hand. Header-only, test code only.
 *
 * Thread-safety: a tw buffer belongs to one test.
 */
#ifndef RINGCACHE_TESTS_TW_H
#define RINGCACHE_TESTS_TW_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct tw {
    uint8_t buf[1 << 16];
    size_t len;
    int16_t last[16]; /* last field id per nesting level */
    int depth;
} tw;

static inline void tw_byte(tw *w, uint8_t b)
{
    w->buf[w->len++] = b;
}
static inline void tw_bytes(tw *w, const void *p, size_t n)
{
    memcpy(w->buf + w->len, p, n);
    w->len += n;
}
static inline void tw_varint(tw *w, uint64_t v)
{
    while (v >= 0x80) {
        tw_byte(w, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    tw_byte(w, (uint8_t)v);
}
static inline uint64_t tw_zz(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
static inline void tw_field(tw *w, int16_t id, uint8_t type)
{
    int16_t d = (int16_t)(id - w->last[w->depth]);
    if (d > 0 && d <= 15) {
        tw_byte(w, (uint8_t)(d << 4 | type));
    } else {
        tw_byte(w, type);
        tw_varint(w, tw_zz(id));
    }
    w->last[w->depth] = id;
}
static inline void tw_i32(tw *w, int16_t id, int32_t v)
{
    tw_field(w, id, 5);
    tw_varint(w, tw_zz(v));
}
static inline void tw_i64(tw *w, int16_t id, int64_t v)
{
    tw_field(w, id, 6);
    tw_varint(w, tw_zz(v));
}
static inline void tw_bool(tw *w, int16_t id, int v)
{
    tw_field(w, id, v ? 1 : 2);
}
static inline void tw_bin(tw *w, int16_t id, const void *p, size_t n)
{
    tw_field(w, id, 8);
    tw_varint(w, n);
    tw_bytes(w, p, n);
}
static inline void tw_begin(tw *w, int16_t id) /* a struct field */
{
    tw_field(w, id, 12);
    w->last[++w->depth] = 0;
}
static inline void tw_begin_elem(tw *w)
{
    w->last[++w->depth] = 0;
} /* a struct in a list */
static inline void tw_end(tw *w)
{
    tw_byte(w, 0);
    w->depth--;
}
static inline void tw_list(tw *w, int16_t id, uint8_t elem, uint32_t n)
{
    tw_field(w, id, 9);
    if (n < 15) {
        tw_byte(w, (uint8_t)(n << 4 | elem));
    } else {
        tw_byte(w, (uint8_t)(0xf0 | elem));
        tw_varint(w, n);
    }
}

/* A data page v1 header; returns nothing, appends to w. */
static inline void tw_page_v1(tw *w, int32_t ulen, int32_t clen, int32_t nvals, int32_t enc)
{
    tw_i32(w, 1, 0);
    tw_i32(w, 2, ulen);
    tw_i32(w, 3, clen);
    tw_begin(w, 5);
    tw_i32(w, 1, nvals);
    tw_i32(w, 2, enc);
    tw_i32(w, 3, 3);
    tw_i32(w, 4, 3);
    tw_end(w);
    tw_byte(w, 0);
    w->last[0] = 0;
}

static inline void tw_page_dict(tw *w, int32_t ulen, int32_t clen, int32_t nvals)
{
    tw_i32(w, 1, 2);
    tw_i32(w, 2, ulen);
    tw_i32(w, 3, clen);
    tw_begin(w, 7);
    tw_i32(w, 1, nvals);
    tw_i32(w, 2, 0);
    tw_end(w);
    tw_byte(w, 0);
    w->last[0] = 0;
}

static inline void tw_page_v2(tw *w, int32_t ulen, int32_t clen, int32_t nvals, int32_t nulls,
                              int32_t enc, int32_t def_len, int compressed)
{
    tw_i32(w, 1, 3);
    tw_i32(w, 2, ulen);
    tw_i32(w, 3, clen);
    tw_begin(w, 8);
    tw_i32(w, 1, nvals);
    tw_i32(w, 2, nulls);
    tw_i32(w, 3, nvals);
    tw_i32(w, 4, enc);
    tw_i32(w, 5, def_len);
    tw_i32(w, 6, 0);
    tw_bool(w, 7, compressed);
    tw_end(w);
    tw_byte(w, 0);
    w->last[0] = 0;
}

#endif /* RINGCACHE_TESTS_TW_H */
