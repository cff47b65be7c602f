/* SPDX-License-Identifier: Apache-2.0
 *
 * tp_block.c: the pieces of a part below the footer: the growable column the
 * writer, reader and merge fill, comparison in key order, the encoding of one
 * block of rows (fixed width, plain bytes, or a dictionary per block where it
 * pays) and its decoder, which trusts nothing in the bytes (fuzzed:
 * tests/fuzz/table_block), and the codecs (LZ4, ZSTD).
 */
#include "tp_int.h"
#include "bufgrow.h"
#include "errf.h"

#include <errno.h>
#include <lz4.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

bool tp__type_valid(const cb_typeinfo *info)
{
    if (info->type == CB_LIST) { /* an Array of a scalar */
        cb_typeinfo e = *info;
        e.type = info->elem;
        return e.type != CB_LIST && tp__type_valid(&e);
    }
    if (info->type < CB_BOOL || info->type > CB_BINARY)
        return false;
    if ((info->type == CB_TIME || info->type == CB_TIMESTAMP) &&
        (info->unit < CB_UNIT_NONE || info->unit > CB_UNIT_NS))
        return false;
    if (info->type == CB_DECIMAL &&
        (info->precision < 1 || info->precision > 38 || info->scale > info->precision))
        return false;
    return true;
}

int tp__grow(void **arr, uint32_t n, uint32_t *cap, size_t elem, uint32_t first)
{
    if (n < *cap)
        return 0;
    uint32_t c = *cap ? *cap * 2 : first;
    void *p = realloc(*arr, (size_t)c * elem);
    if (!p)
        return -ENOMEM;
    *arr = p;
    *cap = c;
    return 0;
}

/* ---- bytes ---------------------------------------------------------------- */

int tp__bytes_reserve(tp__bytes *b, size_t more)
{
    if (b->cap - b->len >= more)
        return 0;
    if (more > SIZE_MAX - b->len)
        return -ENOMEM;
    return bufgrow(&b->p, &b->cap, b->len + more, 256);
}

int tp__bytes_add(tp__bytes *b, const void *p, size_t n)
{
    if (tp__bytes_reserve(b, n) < 0)
        return -ENOMEM;
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

int tp__bytes_u16(tp__bytes *b, uint16_t v)
{
    uint8_t t[2];
    tp__put16(t, v);
    return tp__bytes_add(b, t, 2);
}

int tp__bytes_u32(tp__bytes *b, uint32_t v)
{
    uint8_t t[4];
    tp__put32(t, v);
    return tp__bytes_add(b, t, 4);
}

int tp__bytes_u64(tp__bytes *b, uint64_t v)
{
    uint8_t t[8];
    tp__put64(t, v);
    return tp__bytes_add(b, t, 8);
}

/* ---- colbuf --------------------------------------------------------------- */

void tp__colbuf_init(tp__colbuf *b, const cb_typeinfo *info)
{
    memset(b, 0, sizeof(*b));
    b->info = *info;
    b->width = cb_type_width(info);
}

void tp__colbuf_deinit(tp__colbuf *b)
{
    free(b->values);
    free(b->valid);
    free(b->offsets);
    free(b->data);
    memset(b, 0, sizeof(*b));
}

void tp__colbuf_clear(tp__colbuf *b)
{
    b->n = 0;
    b->nulls = 0;
    b->data_len = 0;
    if (b->valid) {
        free(b->valid);
        b->valid = NULL;
    }
}

int tp__colbuf_reserve(tp__colbuf *b, uint32_t rows)
{
    if (rows > UINT32_MAX - b->n)
        return -E2BIG;
    uint64_t need = (uint64_t)b->n + rows;
    if (need <= b->cap && (b->width || b->offsets))
        return 0;
    uint64_t cap = b->cap ? b->cap : 1024;
    while (cap < need)
        cap *= 2;
    if (cap > UINT32_MAX - 1)
        cap = UINT32_MAX - 1;
    if (b->width) {
        uint8_t *v = realloc(b->values, (size_t)cap * b->width);
        if (!v)
            return -ENOMEM;
        b->values = v;
    } else {
        uint32_t *o = realloc(b->offsets, ((size_t)cap + 1) * sizeof(uint32_t));
        if (!o)
            return -ENOMEM;
        if (!b->offsets)
            o[0] = 0;
        b->offsets = o;
    }
    if (b->valid) {
        uint8_t *v = realloc(b->valid, (size_t)cap);
        if (!v)
            return -ENOMEM;
        b->valid = v;
    }
    b->cap = (uint32_t)cap;
    return 0;
}

static int colbuf_data(tp__colbuf *b, size_t more)
{
    if (b->data_len + more > UINT32_MAX)
        return -E2BIG;
    if (b->data_cap - b->data_len >= more)
        return 0;
    size_t cap = b->data_cap ? b->data_cap : 4096;
    while (cap - b->data_len < more)
        cap *= 2;
    uint8_t *d = realloc(b->data, cap);
    if (!d)
        return -ENOMEM;
    b->data = d;
    b->data_cap = cap;
    return 0;
}

/* Makes the per-row validity bytes exist (all valid so far). */
static int colbuf_valid(tp__colbuf *b)
{
    if (b->valid)
        return 0;
    b->valid = malloc(b->cap ? b->cap : 1);
    if (!b->valid)
        return -ENOMEM;
    memset(b->valid, 1, b->cap ? b->cap : 1);
    return 0;
}

int tp__colbuf_append_null(tp__colbuf *b)
{
    int rc = tp__colbuf_reserve(b, 1);
    if (rc < 0 || (rc = colbuf_valid(b)) < 0)
        return rc;
    if (b->width)
        memset(b->values + (size_t)b->n * b->width, 0, b->width);
    else
        b->offsets[b->n + 1] = (uint32_t)b->data_len;
    b->valid[b->n] = 0;
    b->n++;
    b->nulls++;
    return 0;
}

int tp__colbuf_append_bytes(tp__colbuf *b, const void *p, size_t len)
{
    int rc = tp__colbuf_reserve(b, 1);
    if (rc < 0 || (rc = colbuf_data(b, len)) < 0)
        return rc;
    if (len)
        memcpy(b->data + b->data_len, p, len);
    b->data_len += len;
    b->offsets[b->n + 1] = (uint32_t)b->data_len;
    if (b->valid)
        b->valid[b->n] = 1;
    b->n++;
    return 0;
}

int tp__colbuf_append_fixed(tp__colbuf *b, const void *p)
{
    int rc = tp__colbuf_reserve(b, 1);
    if (rc < 0)
        return rc;
    memcpy(b->values + (size_t)b->n * b->width, p, b->width);
    if (b->valid)
        b->valid[b->n] = 1;
    b->n++;
    return 0;
}

int tp__colbuf_append(tp__colbuf *b, const cb_column *src, uint32_t row, uint32_t n)
{
    int rc = tp__colbuf_reserve(b, n);
    if (rc < 0)
        return rc;
    if (src->null_count && !b->valid && (rc = colbuf_valid(b)) < 0)
        return rc;
    if (b->width) {
        if (n)
            memcpy(b->values + (size_t)b->n * b->width,
                   (const uint8_t *)src->values + (size_t)row * b->width, (size_t)n * b->width);
        if (b->valid) {
            for (uint32_t i = 0; i < n; i++) {
                bool null = cb_column_is_null(src, row + i);
                b->valid[b->n + i] = !null;
                b->nulls += null;
            }
        }
        b->n += n;
        return 0;
    }
    if (!src->dict && !src->null_count) {
        uint32_t a = src->offsets[row], z = src->offsets[row + n];
        if ((rc = colbuf_data(b, z - a)) < 0)
            return rc;
        if (z > a)
            memcpy(b->data + b->data_len, src->data + a, z - a);
        uint32_t base = (uint32_t)b->data_len - a;
        for (uint32_t i = 0; i < n; i++)
            b->offsets[b->n + i + 1] = src->offsets[row + i + 1] + base;
        if (b->valid)
            memset(b->valid + b->n, 1, n);
        b->data_len += z - a;
        b->n += n;
        return 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (cb_column_is_null(src, row + i)) {
            rc = tp__colbuf_append_null(b);
        } else {
            size_t len;
            const uint8_t *p = cb_column_bytes(src, row + i, &len);
            rc = tp__colbuf_append_bytes(b, p, len);
        }
        if (rc < 0)
            return rc;
    }
    return 0;
}

int tp__colbuf_append_buf(tp__colbuf *b, const tp__colbuf *src, uint32_t row)
{
    if (tp__colbuf_is_null(src, row))
        return tp__colbuf_append_null(b);
    if (b->width)
        return tp__colbuf_append_fixed(b, src->values + (size_t)row * b->width);
    return tp__colbuf_append_bytes(b, src->data + src->offsets[row],
                                   src->offsets[row + 1] - src->offsets[row]);
}

size_t tp__colbuf_raw_size(const tp__colbuf *b)
{
    size_t s = 1 + (b->valid ? (b->n + 7) / 8 : 0);
    if (b->width)
        return s + (size_t)b->n * b->width;
    return s + (size_t)b->n * 4 + b->data_len;
}

size_t tp__colbuf_memory(const tp__colbuf *b)
{
    return (size_t)b->cap * (b->width ? b->width : 4) + (b->valid ? b->cap : 0) + b->data_cap;
}

int tp__colbuf_take_column(tp__colbuf *b, const char *name, cb_column **out)
{
    cb_column *c;
    cb_typeinfo info = b->info;
    int rc = cb_column_create(&c, &info, name, 0);
    if (rc < 0)
        return rc;
    if (b->nulls) {
        uint8_t *bits = calloc(((size_t)b->n + 7) / 8 + 1, 1);
        if (!bits) {
            cb_column_destroy(&c);
            return -ENOMEM;
        }
        for (uint32_t i = 0; i < b->n; i++)
            if (b->valid[i])
                bits[i >> 3] |= (uint8_t)(1u << (i & 7));
        c->validity = bits;
        c->null_count = b->nulls;
    }
    if (b->width) {
        if (!b->values && (rc = tp__colbuf_reserve(b, 1)) < 0) {
            cb_column_destroy(&c);
            return rc;
        }
        free(c->values);
        c->values = b->values;
        b->values = NULL;
    } else {
        if (!b->offsets && (rc = tp__colbuf_reserve(b, 1)) < 0) {
            cb_column_destroy(&c);
            return rc;
        }
        free(c->offsets);
        free(c->data);
        c->offsets = b->offsets;
        c->data = b->data;
        c->data_cap = b->data_cap;
        b->offsets = NULL;
        b->data = NULL;
    }
    c->n = b->n;
    tp__colbuf_deinit(b);
    tp__colbuf_init(b, &info);
    *out = c;
    return 0;
}

int tp__colbuf_to_column(const tp__colbuf *b, const char *name, cb_column **out)
{
    cb_column *c;
    int rc = cb_column_create(&c, &b->info, name, b->n);
    if (rc < 0)
        return rc;
    if (b->width) {
        if (b->n)
            memcpy(c->values, b->values, (size_t)b->n * b->width);
    } else {
        if (b->n)
            memcpy(c->offsets, b->offsets, ((size_t)b->n + 1) * sizeof(uint32_t));
        if (b->data_len) {
            if ((rc = cb_column_reserve_data(c, b->data_len)) < 0) {
                cb_column_destroy(&c);
                return rc;
            }
            memcpy(c->data, b->data, b->data_len);
        }
    }
    if (b->nulls) {
        if ((rc = cb_column_alloc_validity(c)) < 0) {
            cb_column_destroy(&c);
            return rc;
        }
        for (uint32_t i = 0; i < b->n; i++)
            if (!b->valid[i])
                c->validity[i >> 3] &= (uint8_t) ~(1u << (i & 7));
        c->null_count = b->nulls;
    }
    *out = c;
    return 0;
}

/* ---- comparison ------------------------------------------------------------ */

int tp__cmp_bytes(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
    size_t m = al < bl ? al : bl;
    int r = m ? memcmp(a, b, m) : 0;
    if (r)
        return r;
    return al < bl ? -1 : al > bl;
}

#define CMP(x, y) ((x) < (y) ? -1 : (x) > (y))

static int cmp_float(double x, double y)
{
    bool nx = isnan(x), ny = isnan(y);
    if (nx || ny)
        return nx && ny ? 0 : nx ? 1 : -1;
    return CMP(x, y);
}

int tp__cmp_fixed(const cb_typeinfo *info, const void *a, const void *b)
{
    switch (info->type) {
    case CB_BOOL:
    case CB_UINT8: return CMP(*(const uint8_t *)a, *(const uint8_t *)b);
    case CB_UINT16: {
        uint16_t x, y;
        memcpy(&x, a, 2);
        memcpy(&y, b, 2);
        return CMP(x, y);
    }
    case CB_UINT32: {
        uint32_t x, y;
        memcpy(&x, a, 4);
        memcpy(&y, b, 4);
        return CMP(x, y);
    }
    case CB_UINT64: {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        return CMP(x, y);
    }
    case CB_INT8: return CMP(*(const int8_t *)a, *(const int8_t *)b);
    case CB_INT16: {
        int16_t x, y;
        memcpy(&x, a, 2);
        memcpy(&y, b, 2);
        return CMP(x, y);
    }
    case CB_INT32:
    case CB_DATE: {
        int32_t x, y;
        memcpy(&x, a, 4);
        memcpy(&y, b, 4);
        return CMP(x, y);
    }
    case CB_INT64:
    case CB_TIME:
    case CB_TIMESTAMP: {
        int64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        return CMP(x, y);
    }
    case CB_FLOAT: {
        float x, y;
        memcpy(&x, a, 4);
        memcpy(&y, b, 4);
        return cmp_float(x, y);
    }
    case CB_DOUBLE: {
        double x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        return cmp_float(x, y);
    }
    case CB_DECIMAL:
        if (info->precision <= 18) {
            int64_t x, y;
            memcpy(&x, a, 8);
            memcpy(&y, b, 8);
            return CMP(x, y);
        } else {
            cb_i128 x, y;
            memcpy(&x, a, 16);
            memcpy(&y, b, 16);
            return x.hi != y.hi ? CMP(x.hi, y.hi) : CMP(x.lo, y.lo);
        }
    case CB_STRING:
    case CB_BINARY:
    case CB_LIST: break;
    }
    return 0;
}

const void *tp__col_fixed(const cb_column *c, uint32_t i)
{
    return (const uint8_t *)c->values + (size_t)i * cb_type_width(&c->info);
}

int tp__cmp_col(const cb_column *a, uint32_t i, const cb_column *b, uint32_t j)
{
    if (cb_type_width(&a->info))
        return tp__cmp_fixed(&a->info, tp__col_fixed(a, i), tp__col_fixed(b, j));
    size_t al, bl;
    const uint8_t *x = cb_column_bytes(a, i, &al), *y = cb_column_bytes(b, j, &bl);
    return tp__cmp_bytes(x, al, y, bl);
}

int tp__cmp_buf(const tp__colbuf *a, uint32_t i, const tp__colbuf *b, uint32_t j)
{
    if (a->width)
        return tp__cmp_fixed(&a->info, a->values + (size_t)i * a->width,
                             b->values + (size_t)j * b->width);
    return tp__cmp_bytes(a->data + a->offsets[i], a->offsets[i + 1] - a->offsets[i],
                         b->data + b->offsets[j], b->offsets[j + 1] - b->offsets[j]);
}

int tp__cmp_buf_col(const tp__colbuf *a, uint32_t i, const cb_column *b, uint32_t j)
{
    if (a->width)
        return tp__cmp_fixed(&a->info, a->values + (size_t)i * a->width, tp__col_fixed(b, j));
    size_t bl;
    const uint8_t *y = cb_column_bytes(b, j, &bl);
    return tp__cmp_bytes(a->data + a->offsets[i], a->offsets[i + 1] - a->offsets[i], y, bl);
}

/* ---- block encoding -------------------------------------------------------- */

/* Distinct values of a string colbuf, by open addressing on XXH3: gives up
 * (returns false) past max_distinct. */
typedef struct {
    uint32_t *slots; /* row of the first occurrence + 1, 0 = empty */
    uint32_t mask;
    uint32_t *index; /* per row: dictionary entry */
    uint32_t *first; /* per entry: its first row */
    uint32_t n;
} dict_build;

static bool dict_try(const tp__colbuf *b, uint32_t max_distinct, dict_build *d)
{
    memset(d, 0, sizeof(*d));
    uint32_t cap = 16;
    while (cap < max_distinct * 2u + 2)
        cap *= 2;
    d->slots = calloc(cap, sizeof(uint32_t));
    d->index = malloc(((size_t)b->n + 1) * sizeof(uint32_t));
    d->first = malloc(((size_t)max_distinct + 1) * sizeof(uint32_t));
    d->mask = cap - 1;
    if (!d->slots || !d->index || !d->first)
        return false;
    for (uint32_t r = 0; r < b->n; r++) {
        if (tp__colbuf_is_null(b, r)) {
            d->index[r] = 0;
            continue;
        }
        const uint8_t *p = b->data + b->offsets[r];
        size_t len = b->offsets[r + 1] - b->offsets[r];
        uint32_t h = (uint32_t)XXH3_64bits(p, len) & d->mask;
        for (;;) {
            uint32_t s = d->slots[h];
            if (!s) {
                if (d->n == max_distinct)
                    return false;
                d->first[d->n] = r;
                d->slots[h] = d->n + 1;
                d->index[r] = d->n++;
                break;
            }
            uint32_t fr = d->first[s - 1];
            if (tp__cmp_bytes(p, len, b->data + b->offsets[fr],
                              b->offsets[fr + 1] - b->offsets[fr]) == 0) {
                d->index[r] = s - 1;
                break;
            }
            h = (h + 1) & d->mask;
        }
    }
    return true;
}

static void dict_free(dict_build *d)
{
    free(d->slots);
    free(d->index);
    free(d->first);
}

int tp__block_encode(const tp__colbuf *b, bool allow_dict, uint8_t *enc, uint8_t **out,
                     size_t *out_len)
{
    tp__bytes o = {0};
    int rc = 0;
    bool nulls = b->nulls > 0;
    rc |= tp__bytes_u8(&o, nulls);
    if (nulls) {
        size_t nb = (b->n + 7) / 8;
        if ((rc = tp__bytes_reserve(&o, nb)) < 0)
            goto fail;
        memset(o.p + o.len, 0, nb);
        for (uint32_t i = 0; i < b->n; i++)
            if (b->valid[i])
                o.p[o.len + (i >> 3)] |= (uint8_t)(1u << (i & 7));
        o.len += nb;
    }
    if (b->width) {
        *enc = TP__ENC_FIXED;
        rc |= tp__bytes_add(&o, b->values, (size_t)b->n * b->width);
    } else {
        dict_build d;
        bool use_dict = false;
        if (allow_dict && b->n >= 16 && dict_try(b, b->n / 2, &d)) {
            size_t dict_bytes = 0;
            for (uint32_t e = 0; e < d.n; e++)
                dict_bytes += b->offsets[d.first[e] + 1] - b->offsets[d.first[e]];
            unsigned iw = d.n <= 256 ? 1 : d.n <= 65536 ? 2 : 4;
            size_t dsize = 4 + 4 * (size_t)d.n + dict_bytes + 1 + (size_t)iw * b->n;
            size_t psize = 4 * (size_t)b->n + b->data_len;
            if (dsize * 4 < psize * 3) {
                use_dict = true;
                *enc = TP__ENC_DICT;
                rc |= tp__bytes_u32(&o, d.n);
                for (uint32_t e = 0; e < d.n; e++)
                    rc |= tp__bytes_u32(&o, b->offsets[d.first[e] + 1] - b->offsets[d.first[e]]);
                for (uint32_t e = 0; e < d.n; e++)
                    rc |= tp__bytes_add(&o, b->data + b->offsets[d.first[e]],
                                        b->offsets[d.first[e] + 1] - b->offsets[d.first[e]]);
                rc |= tp__bytes_u8(&o, (uint8_t)iw);
                if (!rc && !(rc = tp__bytes_reserve(&o, (size_t)iw * b->n))) {
                    for (uint32_t r = 0; r < b->n; r++) {
                        uint32_t v = d.index[r];
                        if (iw == 1)
                            o.p[o.len] = (uint8_t)v;
                        else if (iw == 2)
                            tp__put16(o.p + o.len, (uint16_t)v);
                        else
                            tp__put32(o.p + o.len, v);
                        o.len += iw;
                    }
                }
            }
        }
        if (allow_dict && b->n >= 16)
            dict_free(&d);
        if (!use_dict) {
            *enc = TP__ENC_PLAIN;
            if (!(rc |= tp__bytes_reserve(&o, 4 * (size_t)b->n))) {
                for (uint32_t r = 0; r < b->n; r++) {
                    tp__put32(o.p + o.len, b->offsets[r + 1] - b->offsets[r]);
                    o.len += 4;
                }
            }
            rc |= tp__bytes_add(&o, b->data, b->data_len);
        }
    }
    if (rc)
        goto fail;
    if (o.len > TP__MAX_RAW_BLOCK) {
        rc = -E2BIG;
        goto fail;
    }
    *out = o.p;
    *out_len = o.len;
    return 0;
fail:
    free(o.p);
    return rc < 0 ? -ENOMEM : rc;
}

/* The parts of an encoded block, checked against raw_len. */
typedef struct {
    const uint8_t *validity; /* NULL: no nulls */
    const uint8_t *body;
    size_t body_len;
} block_view;

static int block_split(const uint8_t *raw, size_t raw_len, uint32_t rows, bool nullable,
                       block_view *v, char *err, size_t errlen)
{
    if (raw_len < 1)
        return errf_fail(err, errlen, -EBADMSG, "the block is empty");
    if (raw[0] > 1)
        return errf_fail(err, errlen, -EBADMSG, "the block's null flag is %u, not 0 or 1", raw[0]);
    size_t at = 1;
    v->validity = NULL;
    if (raw[0]) {
        if (!nullable)
            return errf_fail(err, errlen, -EBADMSG,
                             "the block has a null map but the column is not nullable");
        size_t nb = ((size_t)rows + 7) / 8;
        if (raw_len - at < nb)
            return errf_fail(err, errlen, -EBADMSG, "the block's null map is cut short");
        v->validity = raw + at;
        at += nb;
    }
    v->body = raw + at;
    v->body_len = raw_len - at;
    return 0;
}

static inline bool view_null(const block_view *v, uint32_t r)
{
    return v->validity && !(v->validity[r >> 3] & (1u << (r & 7)));
}

/* Validity of rows [lo, hi) of a block, appended at out->n (before n grows). */
static int colbuf_mark_nulls(tp__colbuf *out, const block_view *v, uint32_t lo, uint32_t hi)
{
    if (!v->validity) {
        if (out->valid)
            memset(out->valid + out->n, 1, hi - lo);
        return 0;
    }
    int rc = colbuf_valid(out);
    if (rc < 0)
        return rc;
    for (uint32_t r = lo; r < hi; r++) {
        bool null = view_null(v, r);
        out->valid[out->n + (r - lo)] = !null;
        out->nulls += null;
    }
    return 0;
}

int tp__block_decode(const uint8_t *raw, size_t raw_len, uint8_t enc, uint32_t rows, bool nullable,
                     uint32_t lo, uint32_t hi, tp__colbuf *out, char *err, size_t errlen)
{
    if (lo > hi || hi > rows)
        return errf_fail(err, errlen, -EINVAL, "rows %u..%u are outside the block's %u", lo, hi,
                         rows);
    block_view v = {0};
    int rc = block_split(raw, raw_len, rows, nullable, &v, err, errlen);
    if (rc < 0)
        return rc;
    size_t w = out->width;
    if ((w != 0) != (enc == TP__ENC_FIXED))
        return errf_fail(err, errlen, -EBADMSG, "the block's encoding %u does not suit a %s column",
                         enc, cb_type_name(out->info.type));
    if ((rc = tp__colbuf_reserve(out, hi - lo)) < 0)
        return rc;
    if (enc == TP__ENC_FIXED) {
        if (v.body_len != (size_t)rows * w)
            return errf_fail(err, errlen, -EBADMSG,
                             "the block holds %zu bytes of values, %u rows of %zu bytes need %zu",
                             v.body_len, rows, w, (size_t)rows * w);
        /* one copy of the values; NULL rows keep the zero bytes the writer
         * stored there */
        if (hi > lo)
            memcpy(out->values + (size_t)out->n * w, v.body + (size_t)lo * w,
                   (size_t)(hi - lo) * w);
        if ((rc = colbuf_mark_nulls(out, &v, lo, hi)) < 0)
            return rc;
        out->n += hi - lo;
        return 0;
    }
    if (enc == TP__ENC_PLAIN) {
        if (v.body_len / 4 < rows)
            return errf_fail(err, errlen, -EBADMSG, "the block's lengths are cut short");
        const uint8_t *lens = v.body;
        const uint8_t *data = v.body + (size_t)rows * 4;
        size_t data_len = v.body_len - (size_t)rows * 4, at = 0, from = 0;
        for (uint32_t r = 0; r < rows; r++) {
            uint32_t len = tp__get32(lens + (size_t)r * 4);
            if (len > data_len - at)
                return errf_fail(err, errlen, -EBADMSG,
                                 "row %u's %u bytes run past the block's data", r, len);
            if (r == lo)
                from = at;
            at += len;
        }
        if (at != data_len)
            return errf_fail(err, errlen, -EBADMSG, "the block has %zu bytes after its last row",
                             data_len - at);
        /* rows [lo, hi) are one run of bytes: one copy, offsets from the lengths */
        size_t to = from;
        for (uint32_t r = lo; r < hi; r++)
            to += tp__get32(lens + (size_t)r * 4);
        if ((rc = colbuf_data(out, to - from)) < 0)
            return rc;
        if (to > from)
            memcpy(out->data + out->data_len, data + from, to - from);
        uint32_t off = (uint32_t)out->data_len;
        for (uint32_t r = lo; r < hi; r++) {
            off += tp__get32(lens + (size_t)r * 4);
            out->offsets[out->n + (r - lo) + 1] = off;
        }
        out->data_len = off;
        if ((rc = colbuf_mark_nulls(out, &v, lo, hi)) < 0)
            return rc;
        out->n += hi - lo;
        return 0;
    }
    if (enc != TP__ENC_DICT)
        return errf_fail(err, errlen, -EBADMSG, "unknown block encoding %u", enc);
    if (v.body_len < 4)
        return errf_fail(err, errlen, -EBADMSG, "the block's dictionary is cut short");
    uint32_t nd = tp__get32(v.body);
    if ((v.body_len - 4) / 4 < nd)
        return errf_fail(err, errlen, -EBADMSG, "the dictionary's %u lengths are cut short", nd);
    const uint8_t *lens = v.body + 4;
    size_t at = 4 + (size_t)nd * 4;
    uint32_t *doff = malloc(((size_t)nd + 1) * sizeof(uint32_t));
    if (!doff)
        return -ENOMEM;
    size_t dstart = at;
    doff[0] = 0;
    for (uint32_t e = 0; e < nd; e++) {
        uint32_t len = tp__get32(lens + (size_t)e * 4);
        if (len > v.body_len - at) {
            free(doff);
            return errf_fail(err, errlen, -EBADMSG, "dictionary entry %u runs past the block", e);
        }
        at += len;
        doff[e + 1] = (uint32_t)(at - dstart);
    }
    if (v.body_len - at < 1) {
        free(doff);
        return errf_fail(err, errlen, -EBADMSG, "the block's index width is missing");
    }
    unsigned iw = v.body[at++];
    if ((iw != 1 && iw != 2 && iw != 4) || (v.body_len - at) != (size_t)iw * rows) {
        free(doff);
        return errf_fail(err, errlen, -EBADMSG,
                         "the block's index (width %u) does not hold %u rows", iw, rows);
    }
    const uint8_t *idx = v.body + at, *dict = v.body + dstart;
    for (uint32_t r = lo; r < hi && !rc; r++) {
        uint32_t e = iw == 1   ? idx[r]
                     : iw == 2 ? tp__get16(idx + 2 * (size_t)r)
                               : tp__get32(idx + 4 * (size_t)r);
        if (view_null(&v, r)) {
            rc = tp__colbuf_append_null(out);
        } else if (e >= nd) {
            rc = errf_fail(err, errlen, -EBADMSG, "row %u points at dictionary entry %u of %u", r,
                           e, nd);
        } else {
            rc = tp__colbuf_append_bytes(out, dict + doff[e], doff[e + 1] - doff[e]);
        }
    }
    free(doff);
    return rc;
}

int tp__block_decode_dict(const uint8_t *raw, size_t raw_len, uint32_t rows, bool nullable,
                          const cb_typeinfo *info, const char *name, uint32_t lo, uint32_t hi,
                          cb_column **out, char *err, size_t errlen)
{
    *out = NULL;
    block_view v = {0};
    int rc = block_split(raw, raw_len, rows, nullable, &v, err, errlen);
    if (rc < 0)
        return rc;
    if (lo > hi || hi > rows)
        return -EINVAL;
    /* Decode the dictionary as a plain column by reusing the plain decoder's
     * checks on the entries: entries form a PLAIN body of nd rows. */
    if (v.body_len < 4)
        return errf_fail(err, errlen, -EBADMSG, "the block's dictionary is cut short");
    uint32_t nd = tp__get32(v.body);
    if ((v.body_len - 4) / 4 < nd)
        return errf_fail(err, errlen, -EBADMSG, "the dictionary's %u lengths are cut short", nd);
    size_t at = 4 + (size_t)nd * 4, total = 0;
    for (uint32_t e = 0; e < nd; e++) {
        uint32_t len = tp__get32(v.body + 4 + (size_t)e * 4);
        if (len > v.body_len - at - total)
            return errf_fail(err, errlen, -EBADMSG, "dictionary entry %u runs past the block", e);
        total += len;
    }
    size_t iat = at + total;
    if (v.body_len - iat < 1)
        return errf_fail(err, errlen, -EBADMSG, "the block's index width is missing");
    unsigned iw = v.body[iat++];
    if ((iw != 1 && iw != 2 && iw != 4) || (v.body_len - iat) != (size_t)iw * rows)
        return errf_fail(err, errlen, -EBADMSG,
                         "the block's index (width %u) does not hold %u rows", iw, rows);
    cb_column *dict = NULL, *c = NULL;
    if ((rc = cb_column_create(&dict, info, NULL, nd)) < 0)
        return rc;
    if ((rc = cb_column_reserve_data(dict, total ? total : 1)) < 0)
        goto fail;
    if (total)
        memcpy(dict->data, v.body + at, total);
    uint32_t off = 0;
    for (uint32_t e = 0; e < nd; e++) {
        off += tp__get32(v.body + 4 + (size_t)e * 4);
        dict->offsets[e + 1] = off;
    }
    if ((rc = cb_column_create(&c, info, name, hi - lo)) < 0)
        goto fail;
    free(c->offsets);
    c->offsets = NULL;
    c->indices = calloc((size_t)(hi - lo) + 1, sizeof(uint32_t));
    if (!c->indices) {
        rc = -ENOMEM;
        goto fail;
    }
    c->dict = dict;
    dict = NULL;
    const uint8_t *idx = v.body + iat;
    for (uint32_t r = lo; r < hi; r++) {
        uint32_t e = iw == 1   ? idx[r]
                     : iw == 2 ? tp__get16(idx + 2 * (size_t)r)
                               : tp__get32(idx + 4 * (size_t)r);
        if (view_null(&v, r)) {
            if (!c->validity && (rc = cb_column_alloc_validity(c)) < 0)
                goto fail;
            c->validity[(r - lo) >> 3] &= (uint8_t) ~(1u << ((r - lo) & 7));
            c->null_count++;
            e = 0;
        } else if (e >= nd) {
            rc = errf_fail(err, errlen, -EBADMSG, "row %u points at dictionary entry %u of %u", r,
                           e, nd);
            goto fail;
        }
        c->indices[r - lo] = e;
    }
    if (c->null_count && nd == 0) {
        /* every row null: an empty dictionary cannot be indexed; keep one "" */
        cb_column *d1;
        if ((rc = cb_column_create(&d1, info, NULL, 1)) < 0)
            goto fail;
        cb_column_unref(c->dict);
        c->dict = d1;
    }
    *out = c;
    return 0;
fail:
    cb_column_destroy(&dict);
    cb_column_destroy(&c);
    return rc;
}

/* ---- codecs ----------------------------------------------------------------- */

int tp__compress(tp_codec codec, int level, const uint8_t *raw, size_t raw_len, uint8_t **out,
                 size_t *out_len, uint8_t *used)
{
    size_t cap = raw_len;
    if (codec == TP_CODEC_LZ4)
        cap = (size_t)LZ4_compressBound((int)raw_len);
    else if (codec == TP_CODEC_ZSTD)
        cap = ZSTD_compressBound(raw_len);
    uint8_t *o = malloc(cap ? cap : 1);
    if (!o)
        return -ENOMEM;
    size_t n = 0;
    if (codec == TP_CODEC_LZ4) {
        int r = LZ4_compress_default((const char *)raw, (char *)o, (int)raw_len, (int)cap);
        n = r > 0 ? (size_t)r : SIZE_MAX;
    } else if (codec == TP_CODEC_ZSTD) {
        size_t r = ZSTD_compress(o, cap, raw, raw_len, level ? level : 1);
        n = ZSTD_isError(r) ? SIZE_MAX : r;
    } else {
        n = SIZE_MAX;
    }
    if (n >= raw_len) {
        /* not smaller: store it as it is */
        if (cap < raw_len) {
            uint8_t *p = realloc(o, raw_len ? raw_len : 1);
            if (!p) {
                free(o);
                return -ENOMEM;
            }
            o = p;
        }
        memcpy(o, raw, raw_len);
        n = raw_len;
        *used = TP_CODEC_NONE;
    } else {
        *used = (uint8_t)codec;
    }
    *out = o;
    *out_len = n;
    return 0;
}

int tp__decompress(uint8_t codec, const uint8_t *src, size_t src_len, uint8_t *raw, size_t raw_len)
{
    switch (codec) {
    case TP_CODEC_NONE:
        if (src_len != raw_len)
            return -EBADMSG;
        memcpy(raw, src, raw_len);
        return 0;
    case TP_CODEC_LZ4: {
        if (src_len > INT32_MAX || raw_len > INT32_MAX)
            return -EBADMSG;
        int r = LZ4_decompress_safe((const char *)src, (char *)raw, (int)src_len, (int)raw_len);
        return r == (int)raw_len ? 0 : -EBADMSG;
    }
    case TP_CODEC_ZSTD: {
        size_t r = ZSTD_decompress(raw, raw_len, src, src_len);
        return !ZSTD_isError(r) && r == raw_len ? 0 : -EBADMSG;
    }
    }
    return -EBADMSG;
}
