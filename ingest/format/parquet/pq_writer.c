/* SPDX-License-Identifier: Apache-2.0
 *
 * pq_writer.c: the Parquet writer (parquet.h, pq_writer_*): REQUIRED and
 * OPTIONAL columns and three-level LISTs of them, one column chunk per column
 * and row group, data pages v1 of at most PQ__W_PAGE_ROWS rows, PLAIN values,
 * repetition and definition levels each as one bit-packed run, ZSTD pages,
 * and the Thrift compact footer with both LogicalType and ConvertedType so
 * that old readers understand it.
 *
 *   "PAR1" | chunk(col 0, rg 0) | chunk(col 1, rg 0) | ... | footer | len | "PAR1"
 *   chunk:  page header | [rep-level length (4 LE) | bit-packed levels]
 *           [def-level length (4 LE) | bit-packed levels] values
 *           (level bytes and values compressed together, v1)
 *
 * A list column's levels: repetition 0 starts a row, 1 continues its list;
 * definition 0 is an empty list (one level entry, no value), 1 an element
 * (a NULL one when the element is OPTIONAL), 2 a non-NULL OPTIONAL element.
 *
 * Types: Bool BOOLEAN; Int8..Int32, UInt8..UInt32, Date INT32 (INTEGER(w,
 * signed) / DATE); Int64, UInt64, timestamps INT64 (TIMESTAMP(unit, UTC));
 * Float32 FLOAT; Float64 DOUBLE; strings and binaries BYTE_ARRAY (STRING for
 * strings); decimals INT32 (up to 9 digits), INT64 (18) or a 16-byte
 * FIXED_LEN_BYTE_ARRAY (38), big-endian, as DECIMAL(P, S).
 */
#include "errf.h"
#include "parquet_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define PQ__W_PAGE_ROWS 65536

/* A growable byte buffer with the Thrift compact writer on top. */
typedef struct wbuf {
    uint8_t *p;
    size_t len, cap;
    bool oom;
    int16_t last[16]; /* last field id per struct level */
    int depth;
} wbuf;

static void wb_reserve(wbuf *b, size_t more)
{
    if (b->oom || b->len + more <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more)
        cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return;
    }
    b->p = p;
    b->cap = cap;
}

static void wb_bytes(wbuf *b, const void *p, size_t n)
{
    wb_reserve(b, n);
    if (b->oom || !n)
        return;
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

static void wb_byte(wbuf *b, uint8_t v)
{
    wb_bytes(b, &v, 1);
}

static void wb_u32le(wbuf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    wb_bytes(b, x, 4);
}

static void wb_varint(wbuf *b, uint64_t v)
{
    while (v >= 0x80) {
        wb_byte(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    wb_byte(b, (uint8_t)v);
}

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static void t_field(wbuf *b, int16_t id, uint8_t type)
{
    int16_t d = (int16_t)(id - b->last[b->depth]);
    if (d > 0 && d <= 15) {
        wb_byte(b, (uint8_t)(d << 4 | type));
    } else {
        wb_byte(b, type);
        wb_varint(b, zigzag(id));
    }
    b->last[b->depth] = id;
}

static void t_i32(wbuf *b, int16_t id, int32_t v)
{
    t_field(b, id, PQ__T_I32);
    wb_varint(b, zigzag(v));
}

static void t_i64(wbuf *b, int16_t id, int64_t v)
{
    t_field(b, id, PQ__T_I64);
    wb_varint(b, zigzag(v));
}

static void t_i8(wbuf *b, int16_t id, int8_t v)
{
    t_field(b, id, PQ__T_I8);
    wb_byte(b, (uint8_t)v);
}

static void t_bool(wbuf *b, int16_t id, bool v)
{
    t_field(b, id, v ? PQ__T_TRUE : PQ__T_FALSE);
}

static void t_bin(wbuf *b, int16_t id, const void *p, size_t n)
{
    t_field(b, id, PQ__T_BINARY);
    wb_varint(b, n);
    wb_bytes(b, p, n);
}

static void t_begin(wbuf *b, int16_t id)
{
    t_field(b, id, PQ__T_STRUCT);
    b->last[++b->depth] = 0;
}

static void t_begin_elem(wbuf *b)
{
    b->last[++b->depth] = 0;
}

static void t_end(wbuf *b)
{
    wb_byte(b, PQ__T_STOP);
    b->depth--;
}

static void t_list(wbuf *b, int16_t id, uint8_t elem, uint32_t n)
{
    t_field(b, id, PQ__T_LIST);
    if (n < 15) {
        wb_byte(b, (uint8_t)(n << 4 | elem));
    } else {
        wb_byte(b, (uint8_t)(0xf0 | elem));
        wb_varint(b, n);
    }
}

/* ---- the writer ---------------------------------------------------------------- */

typedef struct wchunk {
    int64_t offset; /* of its first page */
    int64_t values;
    int64_t usize, csize; /* with the page headers */
} wchunk;

typedef struct wrg {
    wchunk *chunks;
    int64_t rows, bytes;
} wrg;

struct pq_writer {
    pq_write_fn write;
    void *arg;
    pq_wcol *cols;
    int n_cols;
    int64_t pos; /* bytes written so far */
    wrg *rgs;
    int n_rgs;
    int64_t rows;
    wbuf page, comp, hdr; /* scratch */
    uint8_t *lv;          /* scratch levels */
    size_t lv_cap;
    bool failed;
};

static int emit(pq_writer *w, const void *p, size_t n, char *err, size_t errlen)
{
    int rc = w->write(w->arg, p, n);
    if (rc < 0) {
        w->failed = true;
        return errf_fail(err, errlen, rc, "cannot write the Parquet output: %s", strerror(-rc));
    }
    w->pos += (int64_t)n;
    return 0;
}

/* The physical type of a column and its FLBA length. */
static pq_physical phys(const cb_typeinfo *t, int32_t *flba)
{
    *flba = 0;
    switch (t->type) {
    case CB_BOOL: return PQ_BOOLEAN;
    case CB_INT8:
    case CB_INT16:
    case CB_INT32:
    case CB_UINT8:
    case CB_UINT16:
    case CB_UINT32:
    case CB_DATE: return PQ_INT32;
    case CB_FLOAT: return PQ_FLOAT;
    case CB_DOUBLE: return PQ_DOUBLE;
    case CB_STRING:
    case CB_BINARY: return PQ_BYTE_ARRAY;
    case CB_DECIMAL:
        if (t->precision <= 9)
            return PQ_INT32;
        if (t->precision <= 18)
            return PQ_INT64;
        *flba = 16;
        return PQ_FIXED_LEN_BYTE_ARRAY;
    default: return PQ_INT64;
    }
}

int pq_writer_create(pq_writer **out, const pq_wcol *cols, int n_cols, pq_write_fn fn, void *arg,
                     char *err, size_t errlen)
{
    *out = NULL;
    for (int k = 0; k < n_cols; k++) {
        const cb_typeinfo *t = &cols[k].type;
        if (t->type == CB_TIME ||
            (t->type == CB_DECIMAL && (t->precision < 1 || t->precision > 38)) ||
            (t->type == CB_TIMESTAMP && t->unit == CB_UNIT_NONE))
            return errf_fail(err, errlen, -ENOTSUP,
                             "column '%s' has a type the Parquet writer "
                             "does not write (%s)",
                             cols[k].name, cb_type_name(t->type));
    }
    pq_writer *w = calloc(1, sizeof(*w));
    if (!w || !(w->cols = calloc((size_t)n_cols + 1, sizeof(pq_wcol)))) {
        free(w);
        return errf_fail(err, errlen, -ENOMEM, "out of memory");
    }
    w->write = fn;
    w->arg = arg;
    w->n_cols = n_cols;
    for (int k = 0; k < n_cols; k++) {
        w->cols[k] = cols[k];
        if (!(w->cols[k].name = strdup(cols[k].name))) {
            w->n_cols = k;
            pq_writer_destroy(&w);
            return errf_fail(err, errlen, -ENOMEM, "out of memory");
        }
    }
    *out = w;
    return emit(w, "PAR1", 4, err, errlen);
}

void pq_writer_destroy(pq_writer **wp)
{
    if (!wp || !*wp)
        return;
    pq_writer *w = *wp;
    for (int k = 0; k < w->n_cols; k++)
        free((char *)w->cols[k].name);
    free(w->cols);
    for (int g = 0; g < w->n_rgs; g++)
        free(w->rgs[g].chunks);
    free(w->rgs);
    free(w->page.p);
    free(w->comp.p);
    free(w->hdr.p);
    free(w->lv);
    free(w);
    *wp = NULL;
}

/* The PLAIN values of rows [r0, r0 + n) of column d (not NULL ones) into b. */
static void plain_values(wbuf *b, const pq_wcol *c, const pq_wdata *d, uint32_t r0, uint32_t n)
{
    const cb_typeinfo *t = &c->type;
    size_t width = cb_type_width(t);
    int32_t flba;
    pq_physical ph = phys(t, &flba);
    if (ph == PQ_BOOLEAN) {
        uint8_t acc = 0;
        int bits = 0;
        for (uint32_t r = r0; r < r0 + n; r++) {
            if (d->valid && !d->valid[r])
                continue;
            acc |= (uint8_t)((((const uint8_t *)d->values)[r] != 0) << bits);
            if (++bits == 8) {
                wb_byte(b, acc);
                acc = 0;
                bits = 0;
            }
        }
        if (bits)
            wb_byte(b, acc);
        return;
    }
    for (uint32_t r = r0; r < r0 + n; r++) {
        if (d->valid && !d->valid[r])
            continue;
        const uint8_t *v = (const uint8_t *)d->values + (size_t)r * width;
        switch (ph) {
        case PQ_INT32: {
            int32_t x;
            switch (t->type) {
            case CB_INT8: x = *(const int8_t *)v; break;
            case CB_UINT8: x = *v; break;
            case CB_INT16: {
                int16_t y;
                memcpy(&y, v, 2);
                x = y;
                break;
            }
            case CB_UINT16: {
                uint16_t y;
                memcpy(&y, v, 2);
                x = y;
                break;
            }
            case CB_DECIMAL: {
                int64_t y;
                memcpy(&y, v, 8);
                x = (int32_t)y;
                break;
            }
            default: memcpy(&x, v, 4); break;
            }
            wb_u32le(b, (uint32_t)x);
            break;
        }
        case PQ_BYTE_ARRAY: {
            uint32_t o = d->offsets[r], l = d->offsets[r + 1] - o;
            wb_u32le(b, l);
            wb_bytes(b, d->data + o, l);
            break;
        }
        case PQ_FIXED_LEN_BYTE_ARRAY: {
            cb_i128 x;
            memcpy(&x, v, 16);
            uint8_t be[16];
            for (int i = 0; i < 8; i++) {
                be[i] = (uint8_t)((uint64_t)x.hi >> (56 - 8 * i));
                be[8 + i] = (uint8_t)(x.lo >> (56 - 8 * i));
            }
            wb_bytes(b, be, 16);
            break;
        }
        default:
            wb_bytes(b, v, width); /* INT64, FLOAT, DOUBLE: little-endian as held */
            break;
        }
    }
}

/* Levels lv[0 .. n) of `width` bits (1 or 2) as one bit-packed run, with its
 * 4-byte length before it. */
static void put_levels(wbuf *b, const uint8_t *lv, uint32_t n, int width)
{
    uint32_t groups = (n + 7) / 8;
    wbuf run = {0};
    wb_varint(&run, (uint64_t)groups << 1 | 1);
    for (uint32_t g = 0; g < groups; g++) {
        uint32_t acc = 0; /* 8 levels of width bits: width bytes */
        for (uint32_t i = 0; i < 8 && g * 8 + i < n; i++)
            acc |= (uint32_t)lv[g * 8 + i] << (i * (uint32_t)width);
        for (int k = 0; k < width; k++)
            wb_byte(&run, (uint8_t)(acc >> (8 * k)));
    }
    wb_u32le(b, (uint32_t)run.len);
    wb_bytes(b, run.p, run.len);
    b->oom |= run.oom;
    free(run.p);
}

/* Room for n levels in the writer's scratch. */
static bool lv_room(pq_writer *w, wbuf *b, size_t n)
{
    if (n <= w->lv_cap)
        return true;
    uint8_t *p = realloc(w->lv, n);
    if (!p) {
        b->oom = true;
        return false;
    }
    w->lv = p;
    w->lv_cap = n;
    return true;
}

/* Definition levels of rows [r0, r0 + n) of a flat OPTIONAL column. */
static void def_levels(pq_writer *w, wbuf *b, const pq_wdata *d, uint32_t r0, uint32_t n)
{
    if (!lv_room(w, b, n))
        return;
    for (uint32_t i = 0; i < n; i++)
        w->lv[i] = d->valid ? d->valid[r0 + i] != 0 : 1;
    put_levels(b, w->lv, n, 1);
}

/* Repetition then definition levels of rows [r0, r0 + n) of a list column:
 * the count of level entries (an empty list has one) in *entries. */
static void list_levels(pq_writer *w, wbuf *b, const pq_wcol *c, const pq_wdata *d, uint32_t r0,
                        uint32_t n, uint32_t *entries)
{
    uint32_t m = d->lists[r0 + n] - d->lists[r0];
    for (uint32_t r = r0; r < r0 + n; r++)
        m += d->lists[r + 1] == d->lists[r];
    *entries = m;
    if (!lv_room(w, b, (size_t)m * 2))
        return;
    uint8_t *rep = w->lv, *def = w->lv + m;
    uint32_t k = 0;
    for (uint32_t r = r0; r < r0 + n; r++) {
        if (d->lists[r + 1] == d->lists[r]) {
            rep[k] = 0;
            def[k++] = 0;
            continue;
        }
        for (uint32_t e = d->lists[r]; e < d->lists[r + 1]; e++) {
            rep[k] = e != d->lists[r];
            def[k++] = (uint8_t)(1 + (c->nullable && (!d->valid || d->valid[e])));
        }
    }
    put_levels(b, rep, m, 1);
    put_levels(b, def, m, c->nullable ? 2 : 1);
}

static int write_page(pq_writer *w, const pq_wcol *c, const pq_wdata *d, uint32_t r0, uint32_t n,
                      wchunk *ch, char *err, size_t errlen)
{
    wbuf *pg = &w->page, *cp = &w->comp, *h = &w->hdr;
    pg->len = 0;
    uint32_t entries = n;
    if (c->list) {
        list_levels(w, pg, c, d, r0, n, &entries);
        plain_values(pg, c, d, d->lists[r0], d->lists[r0 + n] - d->lists[r0]);
    } else {
        if (c->nullable)
            def_levels(w, pg, d, r0, n);
        plain_values(pg, c, d, r0, n);
    }
    if (pg->oom)
        return errf_fail(err, errlen, -ENOMEM, "out of memory while writing Parquet");
    if (pg->len > INT32_MAX)
        return errf_fail(err, errlen, -E2BIG,
                         "a Parquet page of column '%s' would exceed 2 GiB: "
                         "its strings are too long for one page",
                         c->name);
    cp->len = 0;
    size_t bound = ZSTD_compressBound(pg->len);
    wb_reserve(cp, bound);
    if (cp->oom)
        return errf_fail(err, errlen, -ENOMEM, "out of memory while writing Parquet");
    size_t clen = ZSTD_compress(cp->p, bound, pg->p, pg->len, 1);
    if (ZSTD_isError(clen))
        return errf_fail(err, errlen, -EIO, "ZSTD failed on a Parquet page: %s",
                         ZSTD_getErrorName(clen));
    h->len = 0;
    h->depth = 0;
    h->last[0] = 0;
    t_i32(h, 1, 0); /* DATA_PAGE */
    t_i32(h, 2, (int32_t)pg->len);
    t_i32(h, 3, (int32_t)clen);
    t_begin(h, 5); /* DataPageHeader */
    t_i32(h, 1, (int32_t)entries);
    t_i32(h, 2, 0); /* PLAIN */
    t_i32(h, 3, 3); /* RLE levels */
    t_i32(h, 4, 3);
    t_end(h);
    wb_byte(h, PQ__T_STOP);
    if (h->oom)
        return errf_fail(err, errlen, -ENOMEM, "out of memory while writing Parquet");
    int rc;
    if ((rc = emit(w, h->p, h->len, err, errlen)) < 0 ||
        (rc = emit(w, cp->p, clen, err, errlen)) < 0)
        return rc;
    ch->values += entries;
    ch->usize += (int64_t)(h->len + pg->len);
    ch->csize += (int64_t)(h->len + clen);
    return 0;
}

int pq_writer_row_group(pq_writer *w, const pq_wdata *cols, uint32_t n, char *err, size_t errlen)
{
    if (w->failed)
        return errf_fail(err, errlen, -EIO, "the Parquet output failed before");
    if (n == 0)
        return 0;
    wrg *nr = realloc(w->rgs, sizeof(*nr) * (size_t)(w->n_rgs + 1));
    if (!nr)
        return errf_fail(err, errlen, -ENOMEM, "out of memory");
    w->rgs = nr;
    wrg *g = &w->rgs[w->n_rgs];
    *g = (wrg){.chunks = calloc((size_t)w->n_cols + 1, sizeof(wchunk)), .rows = n};
    if (!g->chunks)
        return errf_fail(err, errlen, -ENOMEM, "out of memory");
    w->n_rgs++;
    for (int k = 0; k < w->n_cols; k++) {
        wchunk *ch = &g->chunks[k];
        ch->offset = w->pos;
        for (uint32_t r0 = 0; r0 < n; r0 += PQ__W_PAGE_ROWS) {
            uint32_t m = n - r0 < PQ__W_PAGE_ROWS ? n - r0 : PQ__W_PAGE_ROWS;
            int rc = write_page(w, &w->cols[k], &cols[k], r0, m, ch, err, errlen);
            if (rc < 0) {
                w->failed = true;
                return rc;
            }
        }
        g->bytes += ch->usize;
    }
    w->rows += n;
    return 0;
}

/* The SchemaElement of column c: physical type, repetition, name, and both
 * type annotations. */
static void schema_elem(wbuf *b, const pq_wcol *c)
{
    const cb_typeinfo *t = &c->type;
    int32_t flba;
    pq_physical ph = phys(t, &flba);
    if (c->list) {
        /* required group name (LIST) { repeated group list { element } } */
        t_begin_elem(b);
        t_i32(b, 3, PQ__REQUIRED);
        t_bin(b, 4, c->name, strlen(c->name));
        t_i32(b, 5, 1);
        t_i32(b, 6, 3); /* ConvertedType LIST */
        t_begin(b, 10);
        t_begin(b, PQ__LT_LIST);
        t_end(b);
        t_end(b);
        t_end(b);
        t_begin_elem(b);
        t_i32(b, 3, PQ__REPEATED);
        t_bin(b, 4, "list", 4);
        t_i32(b, 5, 1);
        t_end(b);
    }
    const char *name = c->list ? "element" : c->name;
    t_begin_elem(b);
    t_i32(b, 1, ph);
    if (flba)
        t_i32(b, 2, flba);
    t_i32(b, 3, c->nullable ? PQ__OPTIONAL : PQ__REQUIRED);
    t_bin(b, 4, name, strlen(name));
    int conv = -1, bits = 0;
    bool sig = true;
    switch (t->type) {
    case CB_STRING: conv = 0; break; /* UTF8 */
    case CB_DECIMAL: conv = 5; break;
    case CB_DATE: conv = 6; break;
    case CB_TIMESTAMP: conv = t->unit == CB_UNIT_MS ? 9 : t->unit == CB_UNIT_US ? 10 : -1; break;
    case CB_UINT8:
        conv = 11;
        bits = 8;
        sig = false;
        break;
    case CB_UINT16:
        conv = 12;
        bits = 16;
        sig = false;
        break;
    case CB_UINT32:
        conv = 13;
        bits = 32;
        sig = false;
        break;
    case CB_UINT64:
        conv = 14;
        bits = 64;
        sig = false;
        break;
    case CB_INT8:
        conv = 15;
        bits = 8;
        break;
    case CB_INT16:
        conv = 16;
        bits = 16;
        break;
    default: break;
    }
    if (conv >= 0)
        t_i32(b, 6, conv);
    if (t->type == CB_DECIMAL) {
        t_i32(b, 7, t->scale);
        t_i32(b, 8, t->precision);
    }
    /* LogicalType */
    switch (t->type) {
    case CB_STRING:
        t_begin(b, 10);
        t_begin(b, PQ__LT_STRING);
        t_end(b);
        t_end(b);
        break;
    case CB_DECIMAL:
        t_begin(b, 10);
        t_begin(b, PQ__LT_DECIMAL);
        t_i32(b, 1, t->scale);
        t_i32(b, 2, t->precision);
        t_end(b);
        t_end(b);
        break;
    case CB_DATE:
        t_begin(b, 10);
        t_begin(b, PQ__LT_DATE);
        t_end(b);
        t_end(b);
        break;
    case CB_TIMESTAMP:
        t_begin(b, 10);
        t_begin(b, PQ__LT_TIMESTAMP);
        t_bool(b, 1, true);
        t_begin(b, 2);
        t_begin(b, t->unit == CB_UNIT_MS ? 1 : t->unit == CB_UNIT_US ? 2 : 3);
        t_end(b);
        t_end(b);
        t_end(b);
        t_end(b);
        break;
    default:
        if (bits) {
            t_begin(b, 10);
            t_begin(b, PQ__LT_INTEGER);
            t_i8(b, 1, (int8_t)bits);
            t_bool(b, 2, sig);
            t_end(b);
            t_end(b);
        }
        break;
    }
    t_end(b);
}

int pq_writer_finish(pq_writer *w, char *err, size_t errlen)
{
    if (w->failed)
        return errf_fail(err, errlen, -EIO, "the Parquet output failed before");
    wbuf b = {0};
    t_i32(&b, 1, 1); /* version */
    uint32_t n_elems = (uint32_t)w->n_cols + 1;
    for (int k = 0; k < w->n_cols; k++)
        n_elems += w->cols[k].list ? 2 : 0;
    t_list(&b, 2, PQ__T_STRUCT, n_elems);
    t_begin_elem(&b); /* the root */
    t_bin(&b, 4, "schema", 6);
    t_i32(&b, 5, w->n_cols);
    t_end(&b);
    for (int k = 0; k < w->n_cols; k++)
        schema_elem(&b, &w->cols[k]);
    t_i64(&b, 3, w->rows);
    t_list(&b, 4, PQ__T_STRUCT, (uint32_t)w->n_rgs);
    for (int g = 0; g < w->n_rgs; g++) {
        const wrg *rg = &w->rgs[g];
        t_begin_elem(&b);
        t_list(&b, 1, PQ__T_STRUCT, (uint32_t)w->n_cols);
        for (int k = 0; k < w->n_cols; k++) {
            const wchunk *ch = &rg->chunks[k];
            int32_t flba;
            t_begin_elem(&b);
            t_i64(&b, 2, ch->offset);
            t_begin(&b, 3); /* ColumnMetaData */
            t_i32(&b, 1, phys(&w->cols[k].type, &flba));
            t_list(&b, 2, PQ__T_I32, 2);
            wb_varint(&b, zigzag(0)); /* PLAIN */
            wb_varint(&b, zigzag(3)); /* RLE */
            t_list(&b, 3, PQ__T_BINARY, w->cols[k].list ? 3 : 1);
            wb_varint(&b, strlen(w->cols[k].name));
            wb_bytes(&b, w->cols[k].name, strlen(w->cols[k].name));
            if (w->cols[k].list) {
                wb_varint(&b, 4);
                wb_bytes(&b, "list", 4);
                wb_varint(&b, 7);
                wb_bytes(&b, "element", 7);
            }
            t_i32(&b, 4, 6); /* ZSTD */
            t_i64(&b, 5, ch->values);
            t_i64(&b, 6, ch->usize);
            t_i64(&b, 7, ch->csize);
            t_i64(&b, 9, ch->offset);
            t_end(&b);
            t_end(&b);
        }
        t_i64(&b, 2, rg->bytes);
        t_i64(&b, 3, rg->rows);
        t_end(&b);
    }
    t_bin(&b, 6, "ringcache", 9); /* created_by */
    wb_byte(&b, PQ__T_STOP);
    int rc = 0;
    if (b.oom)
        rc = errf_fail(err, errlen, -ENOMEM, "out of memory while writing the Parquet footer");
    else if (b.len > UINT32_MAX)
        rc = errf_fail(err, errlen, -E2BIG, "the Parquet footer would exceed 4 GiB");
    if (rc == 0) {
        wb_u32le(&b, (uint32_t)b.len);
        wb_bytes(&b, "PAR1", 4);
        rc = b.oom ? errf_fail(err, errlen, -ENOMEM, "out of memory")
                   : emit(w, b.p, b.len, err, errlen);
    }
    free(b.p);
    return rc;
}
