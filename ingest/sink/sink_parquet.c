/* SPDX-License-Identifier: Apache-2.0
 *
 * sink_parquet.c: the Parquet output format (FORMAT Parquet, INTO OUTFILE
 * 'x.parquet'), over the reader's own writer (format/parquet/parquet.h). Rows
 * gather into a row group of at most SK_PQ_GROUP_ROWS rows or SK_PQ_GROUP_BYTES
 * bytes, which is then written; the footer comes at the end, so the output is
 * a stream and memory stays bounded by one row group.
 *
 * Types as ClickHouse writes them: Int/UInt of every width with their
 * INTEGER annotation, Float32/64, String as STRING, Date as DATE, DateTime
 * as TIMESTAMP(MILLIS) (seconds have no unit of their own) and DateTime64(p)
 * in milliseconds, microseconds or nanoseconds (the smallest unit holding p
 * digits), Decimal(P, S) as DECIMAL(P, S), Bool as BOOLEAN, Nullable(T) as an
 * OPTIONAL column, Array(T) as a LIST of T (its elements OPTIONAL when T is
 * Nullable).
 */
#include "sink_int.h"

#include "parquet.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SK_PQ_GROUP_ROWS  (1u << 20)
#define SK_PQ_GROUP_BYTES (128u << 20)

/* One column's rows of the row group being gathered. A list column (an
 * Array) keeps its elements in values/valid/offsets/data, `ne` of them in
 * room for `ecap`, and row r's elements at lists[r] .. lists[r + 1]. */
typedef struct pq_colbuf {
    ex_type t;  /* the column's */
    ex_type et; /* its values': t, or an Array's element type */
    cb_typeinfo cb;
    size_t width;
    uint8_t *values;
    uint8_t *valid;
    uint32_t *offsets;
    uint8_t *data;
    size_t data_len, data_cap;
    bool list;
    uint32_t *lists;
    uint32_t ne, ecap;
} pq_colbuf;

typedef struct pq_sink {
    eng_sink base;
    eng_writer w;
    pq_writer *pw;
    pq_colbuf *cols;
    int n_cols;
    uint32_t n, cap; /* rows gathered, room */
} pq_sink;

static int pw_write(void *arg, const void *buf, size_t len)
{
    const eng_writer *w = arg;
    return w->write(w->arg, buf, len);
}

/* The Parquet type of an engine type. */
static cb_typeinfo cb_of(const ex_type *t)
{
    cb_typeinfo c = {0};
    switch (t->kind) {
    case EX_BOOL: c.type = CB_BOOL; break;
    case EX_INT:
        c.type = t->bits == 8    ? CB_INT8
                 : t->bits == 16 ? CB_INT16
                 : t->bits == 32 ? CB_INT32
                                 : CB_INT64;
        break;
    case EX_UINT:
        c.type = t->bits == 8    ? CB_UINT8
                 : t->bits == 16 ? CB_UINT16
                 : t->bits == 32 ? CB_UINT32
                                 : CB_UINT64;
        break;
    case EX_FLOAT: c.type = t->bits == 32 ? CB_FLOAT : CB_DOUBLE; break;
    case EX_DATE: c.type = CB_DATE; break;
    case EX_DATETIME:
        c.type = CB_TIMESTAMP;
        c.unit = t->scale <= 3 ? CB_UNIT_MS : t->scale <= 6 ? CB_UNIT_US : CB_UNIT_NS;
        c.utc = true;
        break;
    case EX_DECIMAL:
        c.type = CB_DECIMAL;
        c.precision = t->prec;
        c.scale = t->scale;
        break;
    default: c.type = CB_STRING; break; /* strings, and Nothing (every row NULL) */
    }
    return c;
}

static void free_cols(pq_sink *s)
{
    for (int k = 0; s->cols && k < s->n_cols; k++) {
        free(s->cols[k].values);
        free(s->cols[k].valid);
        free(s->cols[k].offsets);
        free(s->cols[k].data);
        free(s->cols[k].lists);
    }
    free(s->cols);
    s->cols = NULL;
}

/* Room for `cap` values (rows, or a list column's elements) in c. */
static int grow_values(pq_colbuf *c, uint32_t cap)
{
    if (c->width) {
        uint8_t *v = realloc(c->values, (size_t)cap * c->width);
        if (!v)
            return -ENOMEM;
        c->values = v;
    } else {
        uint32_t *o = realloc(c->offsets, ((size_t)cap + 1) * sizeof(uint32_t));
        if (!o)
            return -ENOMEM;
        if (!c->offsets)
            o[0] = 0;
        c->offsets = o;
    }
    if (c->et.nullable || c->et.kind == EX_NOTHING) {
        uint8_t *v = realloc(c->valid, cap);
        if (!v)
            return -ENOMEM;
        c->valid = v;
    }
    return 0;
}

static int grow_rows(pq_sink *s, uint32_t need)
{
    if (need <= s->cap)
        return 0;
    uint32_t cap = s->cap ? s->cap : 1024;
    while (cap < need)
        cap *= 2;
    for (int k = 0; k < s->n_cols; k++) {
        pq_colbuf *c = &s->cols[k];
        if (c->list) {
            uint32_t *l = realloc(c->lists, ((size_t)cap + 1) * sizeof(uint32_t));
            if (!l)
                return -ENOMEM;
            if (!c->lists)
                l[0] = 0;
            c->lists = l;
            continue;
        }
        int rc = grow_values(c, cap);
        if (rc < 0)
            return rc;
    }
    s->cap = cap;
    return 0;
}

/* Value v into slot g of c's values. */
static int put_val(pq_colbuf *c, uint32_t g, const ex_arr_val *v)
{
    bool nul = v->null;
    if (c->valid)
        c->valid[g] = !nul;
    if (!c->width) {
        uint32_t l = nul ? 0 : v->len;
        if (c->data_len + l > UINT32_MAX)
            return -E2BIG;
        if (c->data_len + l > c->data_cap) {
            size_t cap = c->data_cap ? c->data_cap * 2 : 4096;
            while (cap < c->data_len + l)
                cap *= 2;
            uint8_t *d = realloc(c->data, cap);
            if (!d)
                return -ENOMEM;
            c->data = d;
            c->data_cap = cap;
        }
        if (l)
            memcpy(c->data + c->data_len, v->s, l);
        c->data_len += l;
        c->offsets[g + 1] = (uint32_t)c->data_len;
        return 0;
    }
    uint8_t *dst = c->values + (size_t)g * c->width;
    memset(dst, 0, c->width);
    if (nul)
        return 0;
    switch (c->cb.type) {
    case CB_FLOAT: {
        float f = (float)v->d;
        memcpy(dst, &f, 4);
        break;
    }
    case CB_DOUBLE: memcpy(dst, &v->d, 8); break;
    case CB_BOOL: *dst = v->i != 0; break;
    case CB_TIMESTAMP: {
        int want = c->cb.unit == CB_UNIT_MS ? 3 : c->cb.unit == CB_UNIT_US ? 6 : 9;
        int64_t x = v->i;
        for (int q = c->et.scale; q < want; q++)
            x *= 10;
        memcpy(dst, &x, 8);
        break;
    }
    case CB_DECIMAL:
        if (c->width == 16) {
            cb_i128 x = {.lo = (uint64_t)v->i, .hi = v->i < 0 ? -1 : 0};
            memcpy(dst, &x, 16);
        } else {
            memcpy(dst, &v->i, 8);
        }
        break;
    default: memcpy(dst, &v->i, c->width); break; /* little-endian low bytes */
    }
    return 0;
}

/* Row r of v into row g of c. */
static int put(pq_colbuf *c, uint32_t g, const ex_vec *v, uint32_t r)
{
    ex_arr_val x;
    if (!c->list) {
        ex_arr_val_of(v, r, &x);
        return put_val(c, g, &x);
    }
    uint32_t l = 0;
    const uint8_t *p = ex_str(v, r, &l);
    ex_arr_it it;
    ex_arr_open(&it, &c->t, p, l);
    while (ex_arr_next(&it, &x)) {
        if (c->ne == c->ecap) {
            uint32_t cap = c->ecap ? c->ecap * 2 : 1024;
            if (cap < c->ecap || grow_values(c, cap) < 0)
                return -ENOMEM;
            c->ecap = cap;
        }
        int rc = put_val(c, c->ne++, &x);
        if (rc < 0)
            return rc;
    }
    c->lists[g + 1] = c->ne;
    return 0;
}

static int flush_group(pq_sink *s, char *err, size_t errlen)
{
    if (!s->n)
        return 0;
    pq_wdata *d = calloc((size_t)s->n_cols + 1, sizeof(pq_wdata));
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (int k = 0; k < s->n_cols; k++) {
        pq_colbuf *c = &s->cols[k];
        d[k] = (pq_wdata){c->values, c->offsets, c->data, c->valid, c->list ? c->lists : NULL};
    }
    int rc = pq_writer_row_group(s->pw, d, s->n, err, errlen);
    free(d);
    s->n = 0;
    for (int k = 0; k < s->n_cols; k++) {
        s->cols[k].data_len = 0;
        s->cols[k].ne = 0;
    }
    return rc;
}

static int pqs_begin(eng_sink *b, const char *const *names, const ex_type *types, int n_cols,
                     char *err, size_t errlen)
{
    pq_sink *s = (pq_sink *)b;
    pq_wcol *wc = calloc((size_t)n_cols + 1, sizeof(pq_wcol));
    s->cols = calloc((size_t)n_cols + 1, sizeof(pq_colbuf));
    if (!wc || !s->cols) {
        free(wc);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    s->n_cols = n_cols;
    for (int k = 0; k < n_cols; k++)
        if (types[k].kind == EX_ARRAY && types[k].depth > 1) {
            char tn[128];
            ex_type_name(&types[k], tn, sizeof(tn));
            snprintf(err, errlen,
                     "column '%s' is an %s: the Parquet output format does not write nested "
                     "arrays (use another format, or arrayJoin the column)",
                     names[k], tn);
            free(wc);
            return -ENOTSUP;
        }
    for (int k = 0; k < n_cols; k++) {
        pq_colbuf *c = &s->cols[k];
        c->t = types[k];
        c->list = types[k].kind == EX_ARRAY;
        c->et = c->list ? ex_arr_elem(&types[k]) : types[k];
        c->cb = cb_of(&c->et);
        c->width = cb_type_width(&c->cb);
        wc[k] = (pq_wcol){names[k], c->cb, c->et.nullable || c->et.kind == EX_NOTHING, c->list};
    }
    int rc = pq_writer_create(&s->pw, wc, n_cols, pw_write, &s->w, err, errlen);
    free(wc);
    return rc;
}

static int pqs_write(eng_sink *b, const eng_block *blk, char *err, size_t errlen)
{
    pq_sink *s = (pq_sink *)b;
    for (uint32_t r0 = 0; r0 < blk->n_rows;) {
        uint32_t m = blk->n_rows - r0;
        if (m > SK_PQ_GROUP_ROWS - s->n)
            m = SK_PQ_GROUP_ROWS - s->n;
        int rc = grow_rows(s, s->n + m);
        for (int k = 0; rc == 0 && k < s->n_cols; k++)
            for (uint32_t r = 0; rc == 0 && r < m; r++)
                rc = put(&s->cols[k], s->n + r, &blk->cols[k], r0 + r);
        if (rc < 0) {
            snprintf(err, errlen,
                     rc == -E2BIG ? "a row group of the Parquet output would hold "
                                    "more than 4 GiB of strings"
                                  : "out of memory");
            return rc;
        }
        s->n += m;
        r0 += m;
        size_t bytes = 0;
        for (int k = 0; k < s->n_cols; k++) {
            const pq_colbuf *c = &s->cols[k];
            bytes += c->width * (c->list ? c->ne : s->n) + c->data_len;
        }
        if (s->n == SK_PQ_GROUP_ROWS || bytes >= SK_PQ_GROUP_BYTES)
            if ((rc = flush_group(s, err, errlen)) < 0)
                return rc;
    }
    return 0;
}

static int pqs_end(eng_sink *b, char *err, size_t errlen)
{
    pq_sink *s = (pq_sink *)b;
    int rc = flush_group(s, err, errlen);
    if (rc == 0)
        rc = pq_writer_finish(s->pw, err, errlen);
    if (rc == 0 && s->w.flush && (rc = s->w.flush(s->w.arg)) < 0)
        return sk_error(rc, err, errlen);
    return rc;
}

static void pqs_destroy(eng_sink *b)
{
    pq_sink *s = (pq_sink *)b;
    pq_writer_destroy(&s->pw);
    free_cols(s);
    free(s);
}

static const eng_sink_ops pq_ops = {pqs_begin, pqs_write, pqs_end, pqs_destroy};

int sk__parquet_create(eng_sink **out, const eng_writer *w)
{
    pq_sink *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->base.ops = &pq_ops;
    s->w = *w;
    *out = &s->base;
    return 0;
}
