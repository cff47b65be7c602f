/* SPDX-License-Identifier: Apache-2.0
 *
 * tgen.h: test data for the table tests: a deterministic batch with a column
 * of every cb_type (nullable ones with NULLs, a dictionary-encoded string
 * column, long strings), its part column definitions, and a value-by-value
 * comparison of two columns. Header-only; single-threaded.
 */
#ifndef RINGCACHE_TESTS_TGEN_H
#define RINGCACHE_TESTS_TGEN_H

#include "part.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    cb_typeinfo info;
    bool nullable;
} tg_col;

/* Keys first: k1 (uint8 0..3), k2 (string of 12 values), k3 (int64). */
static const tg_col tg_cols[] = {
    {"k1", {.type = CB_UINT8}, false},
    {"k2", {.type = CB_STRING}, false},
    {"k3", {.type = CB_INT64}, false},
    {"i8", {.type = CB_INT8}, true},
    {"i16", {.type = CB_INT16}, false},
    {"i32", {.type = CB_INT32}, true},
    {"u16", {.type = CB_UINT16}, false},
    {"u32", {.type = CB_UINT32}, false},
    {"u64", {.type = CB_UINT64}, false},
    {"f32", {.type = CB_FLOAT}, true},
    {"f64", {.type = CB_DOUBLE}, false},
    {"flag", {.type = CB_BOOL}, false},
    {"day", {.type = CB_DATE}, false},
    {"tod", {.type = CB_TIME, .unit = CB_UNIT_NS}, false},
    {"ts", {.type = CB_TIMESTAMP, .unit = CB_UNIT_US, .utc = true}, false},
    {"dec", {.type = CB_DECIMAL, .precision = 10, .scale = 2}, false},
    {"dec128", {.type = CB_DECIMAL, .precision = 30, .scale = 4}, true},
    {"body", {.type = CB_STRING}, true},
    {"bin", {.type = CB_BINARY}, false},
    {"lc", {.type = CB_STRING}, false},
};
#define TG_NCOLS (sizeof(tg_cols) / sizeof(tg_cols[0]))
static const uint32_t tg_key[] = {0, 1, 2};

static inline uint64_t tg_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static inline void tg_defs(tp_column_def *d, tp_codec codec, int level)
{
    for (size_t i = 0; i < TG_NCOLS; i++) {
        d[i].name = tg_cols[i].name;
        d[i].info = tg_cols[i].info;
        d[i].nullable = tg_cols[i].nullable;
        d[i].codec = codec;
        d[i].level = level;
    }
}

static const char *const tg_words[] = {"alpha", "bravo", "charlie", "delta",  "echo", "fox",
                                       "golf",  "hotel", "india",   "juliet", "kilo", ""};

/* A batch of n rows from seed; body strings up to body_max bytes. */
static inline cb_batch *tg_batch(uint32_t n, uint64_t seed, uint32_t body_max)
{
    uint64_t s = seed * 2654435761u + 7;
    cb_batch *b;
    if (cb_batch_create(&b, n, TG_NCOLS) < 0)
        abort();
    for (size_t c = 0; c < TG_NCOLS; c++) {
        if (cb_column_create(&b->cols[c], &tg_cols[c].info, tg_cols[c].name, n) < 0)
            abort();
        if (tg_cols[c].nullable && cb_column_alloc_validity(b->cols[c]) < 0)
            abort();
    }
    cb_column *lcdict;
    cb_typeinfo st = {.type = CB_STRING};
    if (cb_column_create(&lcdict, &st, NULL, 5) < 0 || cb_column_reserve_data(lcdict, 64) < 0)
        abort();
    const char *lcv[5] = {"red", "green", "blue", "cyan", "a longer magenta value"};
    uint32_t off = 0;
    for (int i = 0; i < 5; i++) {
        memcpy(lcdict->data + off, lcv[i], strlen(lcv[i]));
        off += (uint32_t)strlen(lcv[i]);
        lcdict->offsets[i + 1] = off;
    }
    cb_column *lc = b->cols[19];
    free(lc->offsets);
    lc->offsets = NULL;
    lc->dict = lcdict;
    lc->indices = calloc(n + 1, sizeof(uint32_t));
    for (uint32_t r = 0; r < n; r++) {
        for (size_t c = 0; c < TG_NCOLS; c++) {
            cb_column *col = b->cols[c];
            uint64_t x = tg_rand(&s);
            if (tg_cols[c].nullable && x % 7 == 0) {
                col->validity[r >> 3] &= (uint8_t) ~(1u << (r & 7));
                col->null_count++;
                if (col->offsets)
                    col->offsets[r + 1] = col->offsets[r];
                continue;
            }
            size_t w = cb_type_width(&col->info);
            uint8_t *v = (uint8_t *)col->values + (size_t)r * w;
            switch (c) {
            case 0: *v = (uint8_t)(x % 4); break;
            case 2: {
                int64_t k = (int64_t)(x % 1000) - 500;
                memcpy(v, &k, 8);
                break;
            }
            case 9: {
                float f = (float)((int64_t)(x % 20001) - 10000) / 8.0f;
                memcpy(v, &f, 4);
                break;
            }
            case 10: {
                double d = (double)(x % 1000003) / 3.0;
                memcpy(v, &d, 8);
                break;
            }
            case 11: *v = (uint8_t)(x & 1); break;
            case 15: {
                int64_t d = (int64_t)(x % 2000000) - 1000000;
                memcpy(v, &d, 8);
                break;
            }
            case 16: {
                cb_i128 d = {x, (int64_t)(x % 5) - 2};
                memcpy(v, &d, 16);
                break;
            }
            case 1:
            case 17:
            case 18: {
                char buf[4096];
                size_t len;
                if (c == 1) {
                    len = strlen(tg_words[x % 12]);
                    memcpy(buf, tg_words[x % 12], len);
                } else {
                    len = (size_t)(x % (c == 17 ? body_max + 1 : 40));
                    for (size_t i = 0; i < len; i++)
                        buf[i] = (char)(c == 17 ? 'a' + (tg_rand(&s) % 26) : tg_rand(&s));
                }
                if (cb_column_reserve_data(col, col->offsets[r] + len) < 0)
                    abort();
                if (len)
                    memcpy(col->data + col->offsets[r], buf, len);
                col->offsets[r + 1] = col->offsets[r] + (uint32_t)len;
                break;
            }
            case 19: lc->indices[r] = (uint32_t)(x % 5); break;
            default: memcpy(v, &x, w); break;
            }
        }
    }
    return b;
}

/* Row i of a equals row j of b (value and NULL-ness). */
static inline bool tg_same(const cb_column *a, uint32_t i, const cb_column *b, uint32_t j)
{
    bool na = cb_column_is_null(a, i), nb = cb_column_is_null(b, j);
    if (na || nb)
        return na == nb;
    size_t w = cb_type_width(&a->info);
    if (w)
        return memcmp((const uint8_t *)a->values + (size_t)i * w,
                      (const uint8_t *)b->values + (size_t)j * w, w) == 0;
    size_t la, lb;
    const uint8_t *pa = cb_column_bytes(a, i, &la), *pb = cb_column_bytes(b, j, &lb);
    return la == lb && (la == 0 || memcmp(pa, pb, la) == 0);
}

#endif
