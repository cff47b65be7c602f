/* SPDX-License-Identifier: Apache-2.0
 *
 * pq_page.c: decodes one column chunk (a dictionary page, then data pages v1
 * and v2) into one engine column (colbatch.h). Values are decoded densely at
 * the next free row, then, when the page has nulls, spread backwards to their
 * rows using the definition levels (in place, no second buffer):
 *
 *   dense:   [a b c . . .]        levels 1 0 1 0 0 1
 *   spread:  [a 0 b 0 0 c]        validity 1 0 1 0 0 1
 *
 * Strings keep their dictionary (indices per row + a shared dictionary column)
 * as long as every data page of the chunk is dictionary-encoded; when a writer
 * falls back to PLAIN mid-chunk (DuckDB and parquet-mr do, for large
 * dictionaries) the rows so far are materialised and the column continues plain.
 * Every size read from the file is checked before it is used: a page header that
 * lies, a corrupt compressed page or a dictionary index out of range is an
 * error naming the file, column, row group and page.
 */
#include "parquet_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pq__chunk {
    const pq__coldesc *d;
    char *err;
    size_t errlen;
    cb_column *col;
    uint32_t row;        /* rows filled so far */
    int page;            /* page number in the chunk, for messages */
    int64_t page_offset; /* offset of the page in the chunk, for messages */
    cb_column *dict;     /* decoded dictionary (output type), or NULL */
    bool dict_mode;      /* col holds indices into dict */
    bool seen_data;
    size_t width;   /* output value width (0: strings/binaries) */
    size_t pwidth;  /* physical width of fixed-size values */
    pq__scratch *s; /* the caller's, or own */
    pq__scratch own;
} pq__chunk;

static int pq__fail(pq__chunk *st, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int pq__fail(pq__chunk *st, int rc, const char *fmt, ...)
{
    if (!st->err || !st->errlen)
        return rc;
    int n = snprintf(st->err, st->errlen,
                     "%s: column '%s', row group %d, page %d (offset %" PRId64 " in the chunk): ",
                     st->d->file, st->d->name, st->d->rg, st->page, st->page_offset);
    if (n >= 0 && (size_t)n < st->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(st->err + n, st->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* A scratch buffer grows to the largest need so far (in 4 KiB steps), not
 * by doubling: it holds one page's worth, and a file's pages are mostly of
 * one size, so it seldom grows; and what it takes is charged to the query
 * (pq_reader_mem), where the unwritten half of a doubled buffer would be
 * counted without being memory. */
static int pq__grow(void **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    if (need > SIZE_MAX - 4095)
        return -ENOMEM;
    size_t c = (need + 4095) & ~(size_t)4095;
    void *p = realloc(*buf, c);
    if (!p)
        return -ENOMEM;
    *buf = p;
    *cap = c;
    return 0;
}

/* ---- writing values into a column (the chunk's or the dictionary) -------- */

/* Appends one binary value to a plain string/binary column at row `pos`. */
static int pq__append_bytes(cb_column *c, uint32_t pos, const uint8_t *p, size_t len)
{
    size_t start = c->offsets[pos];
    if (len > UINT32_MAX - start)
        return -E2BIG;
    if (start + len > c->data_cap) {
        int rc = cb_column_reserve_data(c, start + len);
        if (rc < 0)
            return rc;
    }
    if (len)
        memcpy(c->data + start, p, len);
    c->offsets[pos + 1] = (uint32_t)(start + len);
    return 0;
}

/* Big-endian two's complement of len bytes to a decimal of width 8 or 16. */
static void pq__be_decimal(const uint8_t *p, size_t len, uint8_t *dst, size_t width)
{
    uint64_t lo = 0, hi = 0;
    if (len > 0) {
        uint64_t fill = (p[0] & 0x80) ? ~0ull : 0;
        lo = hi = fill;
        for (size_t i = 0; i < len; i++) {
            hi = (hi << 8) | (lo >> 56);
            lo = (lo << 8) | p[i];
        }
    }
    if (width == 8) {
        memcpy(dst, &lo, 8);
    } else {
        cb_i128 v = {.lo = lo, .hi = (int64_t)hi};
        memcpy(dst, &v, 16);
    }
}

/* One variable-size or fixed-size byte value into row pos of c. */
static int pq__emit_bytes(pq__chunk *st, cb_column *c, uint32_t pos, const uint8_t *p, size_t len)
{
    switch (c->info.type) {
    case CB_STRING:
    case CB_BINARY: {
        int rc = pq__append_bytes(c, pos, p, len);
        if (rc < 0)
            return pq__fail(st, rc,
                            rc == -E2BIG ? "the row group holds more than 4 GiB of "
                                           "string data in one column"
                                         : "out of memory");
        return 0;
    }
    case CB_DECIMAL:
        if (len > 16)
            return pq__fail(st, -EBADMSG, "a decimal value is %zu bytes long (at most 16)", len);
        pq__be_decimal(p, len, (uint8_t *)c->values + (size_t)pos * st->width, st->width);
        return 0;
    case CB_FLOAT: {
        if (len != 2)
            return pq__fail(st, -EBADMSG, "a FLOAT16 value is %zu bytes long", len);
        float f = pq__half_to_float((uint16_t)(p[0] | p[1] << 8));
        memcpy((uint8_t *)c->values + (size_t)pos * 4, &f, 4);
        return 0;
    }
    default:
        return pq__fail(st, -EBADMSG, "a byte-array value for a %s column",
                        cb_type_name(c->info.type));
    }
}

static bool pq__is_unsigned(cb_type t)
{
    return t == CB_UINT8 || t == CB_UINT16 || t == CB_UINT32 || t == CB_UINT64;
}

/* n fixed-size physical values (pwidth bytes each, little endian) into rows
 * pos.. of c, converted to its width. */
static void pq__emit_fixed(pq__chunk *st, cb_column *c, uint32_t pos, const uint8_t *src, size_t n)
{
    size_t w = st->width, pw = st->pwidth;
    uint8_t *dst = (uint8_t *)c->values + (size_t)pos * w;
    if (st->d->physical == PQ_INT96) {
        for (size_t i = 0; i < n; i++) {
            int64_t ns = pq__int96_to_ns(src + i * 12);
            memcpy(dst + i * 8, &ns, 8);
        }
        return;
    }
    if (w == pw) {
        memcpy(dst, src, n * w);
        return;
    }
    bool uns = pq__is_unsigned(c->info.type);
    for (size_t i = 0; i < n; i++) {
        int64_t v;
        if (pw == 4) {
            int32_t x;
            memcpy(&x, src + i * 4, 4);
            v = uns ? (int64_t)(uint32_t)x : x;
        } else {
            memcpy(&v, src + i * 8, 8);
        }
        switch (w) {
        case 1: dst[i] = (uint8_t)v; break;
        case 2: {
            uint16_t x = (uint16_t)v;
            memcpy(dst + i * 2, &x, 2);
            break;
        }
        case 4: {
            uint32_t x = (uint32_t)v;
            memcpy(dst + i * 4, &x, 4);
            break;
        }
        case 8: memcpy(dst + i * 8, &v, 8); break;
        case 16: {
            cb_i128 x = {.lo = (uint64_t)v, .hi = v < 0 ? -1 : 0};
            memcpy(dst + i * 16, &x, 16);
            break;
        }
        }
    }
}

/* ---- encodings -------------------------------------------------------------- */

static int pq__short(pq__chunk *st, const char *enc)
{
    return pq__fail(st, -EBADMSG, "the %s values are shorter than the page header says", enc);
}

/* PLAIN: n values from p[0..len) into rows pos.. of c. */
static int pq__plain(pq__chunk *st, cb_column *c, uint32_t pos, const uint8_t *p, size_t len,
                     size_t n)
{
    const pq__coldesc *d = st->d;
    switch (d->physical) {
    case PQ_BOOLEAN: {
        if ((n + 7) / 8 > len)
            return pq__short(st, "PLAIN");
        uint8_t *dst = (uint8_t *)c->values + pos;
        for (size_t i = 0; i < n; i++)
            dst[i] = (p[i >> 3] >> (i & 7)) & 1;
        return 0;
    }
    case PQ_INT32:
    case PQ_INT64:
    case PQ_INT96:
    case PQ_FLOAT:
    case PQ_DOUBLE:
        if (n > len / st->pwidth)
            return pq__short(st, "PLAIN");
        pq__emit_fixed(st, c, pos, p, n);
        return 0;
    case PQ_FIXED_LEN_BYTE_ARRAY: {
        size_t L = (size_t)d->type_length;
        if (L && n > len / L)
            return pq__short(st, "PLAIN");
        if (c->offsets && L * n > 0) {
            size_t need = (size_t)c->offsets[pos] + L * n;
            if (need > UINT32_MAX || cb_column_reserve_data(c, need) < 0)
                return pq__fail(st, -ENOMEM, "out of memory for %zu bytes of values", need);
        }
        for (size_t i = 0; i < n; i++) {
            int rc = pq__emit_bytes(st, c, pos + (uint32_t)i, p + i * L, L);
            if (rc < 0)
                return rc;
        }
        return 0;
    }
    case PQ_BYTE_ARRAY: {
        if (c->offsets) {
            /* The strings are at most the page's bytes (plus 32 bytes of slack
             * for the fixed-size copies below): reserve once, at the first page
             * as much as the whole chunk inflates to. */
            size_t need = (size_t)c->offsets[pos] + len + 32;
            if (c == st->col && !c->data && d->size_hint > need)
                need = d->size_hint;
            if (need > UINT32_MAX)
                need = UINT32_MAX;
            if (cb_column_reserve_data(c, need) < 0)
                return pq__fail(st, -ENOMEM, "out of memory for %zu bytes of values", need);
            uint32_t *off = c->offsets + pos;
            uint8_t *data = c->data;
            size_t at = 0;
            uint64_t end = off[0];
            for (size_t i = 0; i < n; i++) {
                uint32_t l;
                if (len - at < 4)
                    return pq__short(st, "PLAIN");
                memcpy(&l, p + at, 4);
                at += 4;
                if (l > len - at)
                    return pq__fail(st, -EBADMSG,
                                    "a PLAIN string of %" PRIu32 " bytes runs past the page", l);
                if (end + 32 <= c->data_cap && l <= 32 && len - at >= 32) {
                    /* Short strings: one fixed-size copy, no call per value. */
                    memcpy(data + end, p + at, 32);
                } else {
                    if (end + l > c->data_cap)
                        return pq__fail(st, -E2BIG,
                                        "the row group holds more than 4 GiB of "
                                        "string data in one column");
                    memcpy(data + end, p + at, l);
                }
                end += l;
                at += l;
                off[i + 1] = (uint32_t)end;
            }
            return 0;
        }
        size_t at = 0;
        for (size_t i = 0; i < n; i++) {
            uint32_t l;
            if (len - at < 4)
                return pq__short(st, "PLAIN");
            memcpy(&l, p + at, 4);
            at += 4;
            if (l > len - at)
                return pq__fail(st, -EBADMSG,
                                "a PLAIN value of %" PRIu32 " bytes runs past the page", l);
            int rc = pq__emit_bytes(st, c, pos + (uint32_t)i, p + at, l);
            if (rc < 0)
                return rc;
            at += l;
        }
        return 0;
    }
    }
    return pq__fail(st, -ENOTSUP, "physical type %d is unknown", (int)d->physical);
}

static int pq__byte_stream_split(pq__chunk *st, uint32_t pos, const uint8_t *p, size_t len,
                                 size_t n)
{
    const pq__coldesc *d = st->d;
    size_t k;
    switch (d->physical) {
    case PQ_INT32:
    case PQ_FLOAT: k = 4; break;
    case PQ_INT64:
    case PQ_DOUBLE: k = 8; break;
    case PQ_FIXED_LEN_BYTE_ARRAY: k = (size_t)d->type_length; break;
    default:
        return pq__fail(st, -EBADMSG, "BYTE_STREAM_SPLIT is not defined for this physical type");
    }
    if (k == 0 || n > len / k)
        return pq__short(st, "BYTE_STREAM_SPLIT");
    /* The streams are exactly n values long: the page length tells us the
     * stride (some writers' pages hold only the non-null values). */
    if (len % k)
        return pq__fail(st, -EBADMSG,
                        "BYTE_STREAM_SPLIT data of %zu bytes is not a multiple of "
                        "the value size %zu",
                        len, k);
    size_t stride = len / k;
    if (stride != n)
        return pq__fail(st, -EBADMSG,
                        "BYTE_STREAM_SPLIT holds %zu values, the page header says "
                        "%zu non-null ones",
                        stride, n);
    if (pq__grow((void **)&st->s->tmp, &st->s->tmp_cap, (n ? n : 1) * k) < 0)
        return pq__fail(st, -ENOMEM, "out of memory");
    for (size_t b = 0; b < k; b++) {
        const uint8_t *s = p + b * stride;
        for (size_t i = 0; i < n; i++)
            st->s->tmp[i * k + b] = s[i];
    }
    return pq__plain(st, st->col, pos, st->s->tmp, n * k, n);
}

/* DELTA_BINARY_PACKED into 64-bit staging; returns the bytes it took. */
static int64_t pq__delta_stage(pq__chunk *st, const uint8_t *p, size_t len, size_t n,
                               int64_t **vals)
{
    if (pq__grow((void **)&st->s->tmp, &st->s->tmp_cap, (n ? n : 1) * 8) < 0)
        return pq__fail(st, -ENOMEM, "out of memory");
    size_t count = 0;
    int64_t used = pq__delta_decode(p, len, (int64_t *)st->s->tmp, n, &count);
    if (used < 0)
        return pq__fail(st, -EBADMSG, "the DELTA_BINARY_PACKED data is malformed or truncated");
    if (count != n)
        return pq__fail(st, -EBADMSG,
                        "DELTA_BINARY_PACKED holds %zu values, the page has %zu "
                        "non-null ones",
                        count, n);
    *vals = (int64_t *)st->s->tmp;
    return used;
}

static int pq__delta_ints(pq__chunk *st, uint32_t pos, const uint8_t *p, size_t len, size_t n)
{
    const pq__coldesc *d = st->d;
    if (d->physical != PQ_INT32 && d->physical != PQ_INT64)
        return pq__fail(st, -EBADMSG, "DELTA_BINARY_PACKED is only defined for INT32 and INT64");
    int64_t *v;
    int64_t used = pq__delta_stage(st, p, len, n, &v);
    if (used < 0)
        return (int)used;
    if (d->physical == PQ_INT32) {
        /* Narrow in place (arithmetic wraps in 32 bits, as the spec says). */
        int32_t *v32 = (int32_t *)v;
        for (size_t i = 0; i < n; i++)
            v32[i] = (int32_t)(uint32_t)(uint64_t)v[i];
    }
    pq__emit_fixed(st, st->col, pos, (const uint8_t *)v, n);
    return 0;
}

static int pq__delta_length(pq__chunk *st, uint32_t pos, const uint8_t *p, size_t len, size_t n)
{
    if (st->d->physical != PQ_BYTE_ARRAY)
        return pq__fail(st, -EBADMSG, "DELTA_LENGTH_BYTE_ARRAY is only defined for BYTE_ARRAY");
    int64_t *lens;
    int64_t used = pq__delta_stage(st, p, len, n, &lens);
    if (used < 0)
        return (int)used;
    size_t at = (size_t)used;
    cb_column *c = st->col;
    if (c->offsets && cb_column_reserve_data(c, (size_t)c->offsets[pos] + (len - at)) < 0)
        return pq__fail(st, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (lens[i] < 0 || (uint64_t)lens[i] > len - at)
            return pq__fail(st, -EBADMSG,
                            "a DELTA_LENGTH_BYTE_ARRAY length (%" PRId64 ") runs past the page",
                            lens[i]);
        int rc = pq__emit_bytes(st, c, pos + (uint32_t)i, p + at, (size_t)lens[i]);
        if (rc < 0)
            return rc;
        at += (size_t)lens[i];
    }
    return 0;
}

static int pq__delta_byte_array(pq__chunk *st, uint32_t pos, const uint8_t *p, size_t len, size_t n)
{
    const pq__coldesc *d = st->d;
    if (d->physical != PQ_BYTE_ARRAY && d->physical != PQ_FIXED_LEN_BYTE_ARRAY)
        return pq__fail(st, -EBADMSG, "DELTA_BYTE_ARRAY is only defined for byte arrays");
    /* Two delta streams share st->s->tmp: copy the prefixes aside first. */
    int64_t *v;
    int64_t used = pq__delta_stage(st, p, len, n, &v);
    if (used < 0)
        return (int)used;
    int64_t *prefix = malloc((n ? n : 1) * sizeof(int64_t));
    if (!prefix)
        return pq__fail(st, -ENOMEM, "out of memory");
    memcpy(prefix, v, n * sizeof(int64_t));
    size_t at = (size_t)used;
    int64_t *suffix;
    used = pq__delta_stage(st, p + at, len - at, n, &suffix);
    int rc = 0;
    if (used < 0) {
        rc = (int)used;
        goto out;
    }
    at += (size_t)used;
    size_t cur_len = 0;
    for (size_t i = 0; i < n; i++) {
        if (prefix[i] < 0 || (uint64_t)prefix[i] > cur_len || suffix[i] < 0 ||
            (uint64_t)suffix[i] > len - at) {
            rc = pq__fail(st, -EBADMSG,
                          "a DELTA_BYTE_ARRAY prefix (%" PRId64 ") or suffix (%" PRId64
                          ") length is out of range",
                          prefix[i], suffix[i]);
            goto out;
        }
        size_t nl = (size_t)prefix[i] + (size_t)suffix[i];
        if (pq__grow((void **)&st->s->cur, &st->s->cur_cap, nl ? nl : 1) < 0) {
            rc = pq__fail(st, -ENOMEM, "out of memory");
            goto out;
        }
        memcpy(st->s->cur + prefix[i], p + at, (size_t)suffix[i]);
        at += (size_t)suffix[i];
        cur_len = nl;
        rc = pq__emit_bytes(st, st->col, pos + (uint32_t)i, st->s->cur, cur_len);
        if (rc < 0)
            goto out;
    }
out:
    free(prefix);
    return rc;
}

/* Dictionary indices: <bit width byte> <hybrid>, n of them into idx (NULL:
 * into the scratch's; *out says where they are). */
static int pq__dict_indices(pq__chunk *st, const uint8_t *p, size_t len, size_t n, uint32_t *idx,
                            const uint32_t **out)
{
    if (!st->dict)
        return pq__fail(st, -EBADMSG, "a dictionary-encoded page comes without a dictionary page");
    if (!idx) {
        if (pq__grow((void **)&st->s->idx, &st->s->idx_cap, (n ? n : 1) * sizeof(uint32_t)) < 0)
            return pq__fail(st, -ENOMEM, "out of memory");
        idx = st->s->idx;
    }
    *out = idx;
    if (n == 0)
        return 0;
    if (len < 1)
        return pq__short(st, "dictionary index");
    int width = p[0];
    if (width > 32)
        return pq__fail(st, -EBADMSG, "the dictionary index bit width is %d (at most 32)", width);
    if (pq__rle_decode(p + 1, len - 1, width, idx, n) < 0)
        return pq__fail(st, -EBADMSG, "the dictionary indices are malformed or truncated");
    uint32_t max = 0;
    for (size_t i = 0; i < n; i++)
        max = idx[i] > max ? idx[i] : max;
    if (max >= st->dict->n) {
        for (size_t i = 0; i < n; i++)
            if (idx[i] >= st->dict->n)
                return pq__fail(st, -EBADMSG,
                                "dictionary index %" PRIu32
                                " is out of range (the dictionary has %" PRIu32 " entries)",
                                idx[i], st->dict->n);
    }
    return 0;
}

/* Bytes of dictionary entry k (data is NULL when every entry is empty). */
static const uint8_t *pq__dict_str(const cb_column *dict, uint32_t k)
{
    return dict->data ? dict->data + dict->offsets[k] : (const uint8_t *)"";
}

/* Turns a dictionary-mode string column into a plain one (rows < st->row). */
static int pq__leave_dict_mode(pq__chunk *st)
{
    cb_column *c = st->col;
    uint32_t *off = calloc((size_t)c->n + 1, sizeof(uint32_t));
    if (!off)
        return pq__fail(st, -ENOMEM, "out of memory");
    c->offsets = off;
    for (uint32_t i = 0; i < st->row; i++) {
        const uint8_t *s = NULL;
        size_t l = 0;
        if (!cb_column_is_null(c, i)) {
            const cb_column *dd = c->dict;
            uint32_t k = c->indices[i];
            s = pq__dict_str(dd, k);
            l = dd->offsets[k + 1] - dd->offsets[k];
        }
        int rc = pq__append_bytes(c, i, s, l);
        if (rc < 0)
            return pq__fail(st, rc, "out of memory");
    }
    free(c->indices);
    c->indices = NULL;
    cb_column_destroy(&c->dict);
    st->dict_mode = false;
    return 0;
}

/* The values of a dictionary-encoded page. Its indices are decoded where
 * they are wanted when they fit there: straight into a dictionary-mode
 * column's indices; into the column's own rows for 4- and 8-byte values (for
 * 8, into the upper half of the n rows' bytes, so that row i, written after
 * index i is read, never reaches an index not yet read); elsewhere into the
 * scratch, which then never holds a page's worth of them. */
static int pq__dict_values(pq__chunk *st, uint32_t pos, const uint8_t *p, size_t len, size_t n)
{
    cb_column *c = st->col;
    const cb_column *dict = st->dict;
    const size_t w = st->width;
    uint32_t *place = NULL;
    if (st->dict_mode)
        place = c->indices + pos;
    else if (w == 4)
        place = (uint32_t *)c->values + pos;
    else if (w == 8)
        place = (uint32_t *)((uint8_t *)c->values + (size_t)pos * 8) + n;
    const uint32_t *idx = NULL;
    int rc = pq__dict_indices(st, p, len, n, place, &idx);
    if (rc < 0)
        return rc;
    if (st->dict_mode)
        return 0;
    if (!w) {
        for (size_t i = 0; i < n; i++) {
            uint32_t k = idx[i];
            rc = pq__append_bytes(c, pos + (uint32_t)i, pq__dict_str(dict, k),
                                  dict->offsets[k + 1] - dict->offsets[k]);
            if (rc < 0)
                return pq__fail(st, rc, "out of memory");
        }
        return 0;
    }
    uint8_t *dst = (uint8_t *)c->values + (size_t)pos * w;
    const uint8_t *src = dict->values;
    switch (w) {
    case 1:
        for (size_t i = 0; i < n; i++)
            dst[i] = src[idx[i]];
        break;
    case 4:
        for (size_t i = 0; i < n; i++) {
            uint32_t k = idx[i];
            memcpy(dst + i * 4, src + (size_t)k * 4, 4);
        }
        break;
    case 8:
        for (size_t i = 0; i < n; i++) {
            uint32_t k = idx[i]; /* read before row i's bytes are written over it */
            memcpy(dst + i * 8, src + (size_t)k * 8, 8);
        }
        break;
    default:
        for (size_t i = 0; i < n; i++)
            memcpy(dst + i * w, src + (size_t)idx[i] * w, w);
        break;
    }
    return 0;
}

static int pq__rle_bool(pq__chunk *st, uint32_t pos, const uint8_t *p, size_t len, size_t n)
{
    if (st->d->physical != PQ_BOOLEAN)
        return pq__fail(st, -EBADMSG, "RLE values are only defined for BOOLEAN columns");
    if (len < 4)
        return pq__short(st, "RLE");
    uint32_t l;
    memcpy(&l, p, 4);
    if (l > len - 4)
        return pq__fail(st, -EBADMSG, "the RLE length prefix (%" PRIu32 ") runs past the page", l);
    if (pq__rle_decode8(p + 4, l, 1, (uint8_t *)st->col->values + pos, n) < 0)
        return pq__fail(st, -EBADMSG, "the RLE boolean values are malformed or truncated");
    return 0;
}

/* Values of one data page, densely at rows pos.. of st->col. */
static int pq__values(pq__chunk *st, int enc, uint32_t pos, const uint8_t *p, size_t len, size_t n)
{
    switch (enc) {
    case PQ__ENC_PLAIN: return pq__plain(st, st->col, pos, p, len, n);
    case PQ__ENC_PLAIN_DICTIONARY:
    case PQ__ENC_RLE_DICTIONARY: return pq__dict_values(st, pos, p, len, n);
    case PQ__ENC_RLE: return pq__rle_bool(st, pos, p, len, n);
    case PQ__ENC_DELTA_BINARY_PACKED: return pq__delta_ints(st, pos, p, len, n);
    case PQ__ENC_DELTA_LENGTH_BYTE_ARRAY: return pq__delta_length(st, pos, p, len, n);
    case PQ__ENC_DELTA_BYTE_ARRAY: return pq__delta_byte_array(st, pos, p, len, n);
    case PQ__ENC_BYTE_STREAM_SPLIT: return pq__byte_stream_split(st, pos, p, len, n);
    default:
        return pq__fail(st, -ENOTSUP, "the value encoding %s (%d) is not supported",
                        pq__encoding_name(enc), enc);
    }
}

/* Moves nonnull dense values at rows row.. to their places among nv rows
 * (levels[i] != 0: row i has a value), marks the others null. */
static int pq__spread(pq__chunk *st, const uint8_t *levels, size_t nv, size_t nonnull)
{
    cb_column *c = st->col;
    uint32_t row = st->row;
    if (cb_column_alloc_validity(c) < 0)
        return pq__fail(st, -ENOMEM, "out of memory");
    size_t k = nonnull;
    if (st->dict_mode) {
        uint32_t *v = c->indices + row;
        for (size_t r = nv; r-- > 0;) {
            if (levels[r])
                v[r] = v[--k];
            else
                v[r] = 0;
        }
    } else if (!st->width) {
        uint32_t *off = c->offsets + row;
        /* off[0] is the start; dense ends are off[1..nonnull]. */
        for (size_t r = nv; r-- > 0;) {
            off[r + 1] = off[k];
            if (levels[r])
                k--;
        }
    } else {
        size_t w = st->width;
        uint8_t *v = (uint8_t *)c->values + (size_t)row * w;
        for (size_t r = nv; r-- > 0;) {
            if (levels[r]) {
                --k;
                if (k != r)
                    memcpy(v + r * w, v + k * w, w);
            } else {
                memset(v + r * w, 0, w);
            }
        }
    }
    for (size_t r = 0; r < nv; r++) {
        if (!levels[r]) {
            uint32_t i = row + (uint32_t)r;
            c->validity[i >> 3] &= (uint8_t) ~(1u << (i & 7));
        }
    }
    c->null_count += (uint32_t)(nv - nonnull);
    return 0;
}

/* Decompresses a page body into st->s->page_buf (or returns it as is). */
static int pq__body(pq__chunk *st, const uint8_t *src, size_t src_len, size_t ulen, bool compressed,
                    const uint8_t **out)
{
    if (!compressed || st->d->codec == PQ__CODEC_UNCOMPRESSED) {
        if (src_len != ulen && !compressed)
            return pq__fail(st, -EBADMSG,
                            "an uncompressed page body is %zu bytes, its header "
                            "says %zu",
                            src_len, ulen);
        if (src_len != ulen)
            return pq__fail(st, -EBADMSG,
                            "the page's compressed size (%zu) and uncompressed "
                            "size (%zu) differ without compression",
                            src_len, ulen);
        *out = src;
        return 0;
    }
    if (pq__grow((void **)&st->s->page_buf, &st->s->page_cap, ulen ? ulen : 1) < 0)
        return pq__fail(st, -ENOMEM, "out of memory for a page of %zu bytes", ulen);
    const char *why = "corrupt";
    int rc = pq__decompress(st->d->codec, src, src_len, st->s->page_buf, ulen, &why);
    if (rc < 0)
        return pq__fail(st, rc, "%s page: %s", pq__codec_name(st->d->codec), why);
    *out = st->s->page_buf;
    return 0;
}

static int pq__dictionary_page(pq__chunk *st, const pq__page_header *h, const uint8_t *body,
                               size_t clen)
{
    if (st->dict)
        return pq__fail(st, -EBADMSG, "a second dictionary page");
    if (st->seen_data)
        return pq__fail(st, -EBADMSG, "a dictionary page after data pages");
    if (h->encoding != PQ__ENC_PLAIN && h->encoding != PQ__ENC_PLAIN_DICTIONARY)
        return pq__fail(st, -ENOTSUP, "the dictionary page is %s-encoded (only PLAIN is defined)",
                        pq__encoding_name(h->encoding));
    if (st->d->physical == PQ_BOOLEAN)
        return pq__fail(st, -EBADMSG, "a BOOLEAN column has a dictionary page");
    if (h->num_values < 0)
        return pq__fail(st, -EBADMSG, "the dictionary page holds %d values", h->num_values);
    const uint8_t *data;
    int rc = pq__body(st, body, clen, (size_t)h->uncompressed_size, true, &data);
    if (rc < 0)
        return rc;
    /* Each value takes at least one byte (or is a fixed-size value): a count
     * larger than the bytes is a lie, caught before allocating. */
    size_t minw = st->pwidth ? st->pwidth : (st->d->physical == PQ_BYTE_ARRAY ? 4 : 1);
    if (st->d->physical == PQ_FIXED_LEN_BYTE_ARRAY) {
        /* zero-width values would let any count through the check below */
        if (st->d->type_length <= 0)
            return pq__fail(st, -EBADMSG, "a FIXED_LEN_BYTE_ARRAY column with type_length %d",
                            st->d->type_length);
        minw = (size_t)st->d->type_length;
    }
    if ((size_t)h->num_values > (size_t)h->uncompressed_size / minw)
        return pq__fail(st, -EBADMSG, "the dictionary page says %d values but holds %d bytes",
                        h->num_values, h->uncompressed_size);
    rc = cb_column_create(&st->dict, &st->d->type, NULL, (uint32_t)h->num_values);
    if (rc < 0)
        return pq__fail(st, rc, "out of memory for the dictionary");
    return pq__plain(st, st->dict, 0, data, (size_t)h->uncompressed_size, (size_t)h->num_values);
}

static int pq__bits(unsigned v)
{
    int b = 0;
    while (v >> b)
        b++;
    return b;
}

/* A LIST leaf's page: the repetition and definition levels of its nv entries
 * (RLE, each at its bit width) into the scratch's reps / defs at st->row, and
 * the present flags (definition level at its maximum) into levels. */
static int pq__list_levels(pq__chunk *st, const uint8_t *rep, size_t rep_len, const uint8_t *def,
                           size_t def_len, size_t nv, size_t *nonnull)
{
    const pq__coldesc *d = st->d;
    pq__scratch *s = st->s;
    size_t need = (size_t)st->row + nv;
    if (pq__grow((void **)&s->reps, &s->reps_cap, need ? need : 1) < 0 ||
        pq__grow((void **)&s->defs, &s->defs_cap, need ? need : 1) < 0 ||
        pq__grow((void **)&s->levels, &s->levels_cap, nv ? nv : 1) < 0)
        return pq__fail(st, -ENOMEM, "out of memory");
    uint8_t *r = s->reps + st->row, *df = s->defs + st->row;
    if (pq__rle_decode8(rep, rep_len, pq__bits(d->max_rep), r, nv) < 0)
        return pq__fail(st, -EBADMSG, "the repetition levels are malformed or truncated");
    if (pq__rle_decode8(def, def_len, pq__bits(d->max_def), df, nv) < 0)
        return pq__fail(st, -EBADMSG, "the definition levels are malformed or truncated");
    size_t cnt = 0;
    for (size_t i = 0; i < nv; i++) {
        if (r[i] > d->max_rep || df[i] > d->max_def)
            return pq__fail(st, -EBADMSG, "a level is above its column's maximum");
        s->levels[i] = df[i] == d->max_def;
        cnt += s->levels[i];
    }
    *nonnull = cnt;
    return 0;
}

static int pq__data_page(pq__chunk *st, const pq__page_header *h, const uint8_t *body, size_t clen)
{
    const pq__coldesc *d = st->d;
    bool v2 = h->type == PQ__PAGE_DATA_V2;
    if (v2 ? !h->has_v2 : !h->has_data)
        return pq__fail(st, -EBADMSG, "the data page header has no %s",
                        v2 ? "data_page_header_v2" : "data_page_header");
    if (h->num_values < 0 || (uint64_t)h->num_values > (uint64_t)(d->num_rows - st->row))
        return pq__fail(st, -EBADMSG,
                        "the page holds %d values but only %" PRIu32
                        " rows of the row group are left",
                        h->num_values, d->num_rows - st->row);
    size_t nv = (size_t)h->num_values;
    size_t list_nonnull = 0;
    const uint8_t *levels_src = NULL, *values;
    size_t levels_len = 0, values_len;
    bool bit_packed_levels = false, in_scratch = false;
    if (!v2) {
        const uint8_t *data;
        int rc = pq__body(st, body, clen, (size_t)h->uncompressed_size, true, &data);
        if (rc < 0)
            return rc;
        in_scratch = data == st->s->page_buf; /* decompressed, not the file's bytes */
        size_t ulen = (size_t)h->uncompressed_size, at = 0;
        if (d->max_rep) {
            /* a LIST leaf: repetition then definition levels, each RLE with its length */
            if (h->def_encoding != PQ__ENC_RLE)
                return pq__fail(st, -ENOTSUP, "a LIST's levels are %s-encoded",
                                pq__encoding_name(h->def_encoding));
            const uint8_t *lp[2];
            size_t ll[2];
            for (int k = 0; k < 2; k++) {
                uint32_t l;
                if (ulen - at < 4)
                    return pq__fail(st, -EBADMSG, "the page is too short for its levels");
                memcpy(&l, data + at, 4);
                if (l > ulen - at - 4)
                    return pq__fail(st, -EBADMSG,
                                    "the levels' length (%" PRIu32 ") runs past the page", l);
                lp[k] = data + at + 4;
                ll[k] = l;
                at += 4 + (size_t)l;
            }
            size_t nn;
            rc = pq__list_levels(st, lp[0], ll[0], lp[1], ll[1], nv, &nn);
            if (rc < 0)
                return rc;
            list_nonnull = nn;
        } else if (d->nullable) {
            if (h->def_encoding == PQ__ENC_RLE) {
                uint32_t l;
                if (ulen < 4)
                    return pq__fail(st, -EBADMSG,
                                    "the page is too short for its definition levels");
                memcpy(&l, data, 4);
                if (l > ulen - 4)
                    return pq__fail(
                        st, -EBADMSG,
                        "the definition levels' length (%" PRIu32 ") runs past the page", l);
                levels_src = data + 4;
                levels_len = l;
                at = 4 + (size_t)l;
            } else if (h->def_encoding == PQ__ENC_BIT_PACKED) {
                size_t l = (nv + 7) / 8;
                if (l > ulen)
                    return pq__fail(st, -EBADMSG,
                                    "the page is too short for its definition levels");
                levels_src = data;
                levels_len = l;
                bit_packed_levels = true;
                at = l;
            } else {
                return pq__fail(st, -ENOTSUP, "definition levels are %s-encoded",
                                pq__encoding_name(h->def_encoding));
            }
        }
        values = data + at;
        values_len = ulen - at;
    } else {
        if (h->rep_len < 0 || h->def_len < 0 || (size_t)h->rep_len + (size_t)h->def_len > clen ||
            (size_t)h->rep_len + (size_t)h->def_len > (size_t)h->uncompressed_size)
            return pq__fail(st, -EBADMSG, "the level lengths (%d + %d) do not fit in the page",
                            h->rep_len, h->def_len);
        if (d->max_rep) {
            size_t nn;
            int rc = pq__list_levels(st, body, (size_t)h->rep_len, body + h->rep_len,
                                     (size_t)h->def_len, nv, &nn);
            if (rc < 0)
                return rc;
            list_nonnull = nn;
        } else if (h->rep_len) {
            return pq__fail(st, -EBADMSG, "a flat column has repetition levels");
        } else if (d->nullable) {
            levels_src = body + h->rep_len;
            levels_len = (size_t)h->def_len;
        } else if (h->def_len) {
            return pq__fail(st, -EBADMSG, "a REQUIRED column has definition levels");
        }
        size_t skip = (size_t)h->rep_len + (size_t)h->def_len;
        int rc = pq__body(st, body + skip, clen - skip, (size_t)h->uncompressed_size - skip,
                          h->is_compressed, &values);
        if (rc < 0)
            return rc;
        values_len = (size_t)h->uncompressed_size - skip;
    }
    size_t nonnull = nv;
    const uint8_t *lv = NULL;
    if (d->max_rep) {
        nonnull = list_nonnull;
        lv = st->s->levels;
    } else if (d->nullable && nv > 0 && !bit_packed_levels &&
               pq__rle_all_ones(levels_src, levels_len, nv)) {
        nonnull = nv; /* no NULL in the page: no levels to spread by */
    } else if (d->nullable && nv > 0) {
        if (pq__grow((void **)&st->s->levels, &st->s->levels_cap, nv) < 0)
            return pq__fail(st, -ENOMEM, "out of memory");
        if (bit_packed_levels) {
            /* Deprecated BIT_PACKED: most significant bit first. */
            for (size_t i = 0; i < nv; i++)
                st->s->levels[i] = (levels_src[i >> 3] >> (7 - (i & 7))) & 1;
        } else if (pq__rle_decode8(levels_src, levels_len, 1, st->s->levels, nv) < 0) {
            return pq__fail(st, -EBADMSG, "the definition levels are malformed or truncated");
        }
        size_t cnt = 0;
        for (size_t i = 0; i < nv; i++)
            cnt += st->s->levels[i];
        nonnull = cnt;
        lv = st->s->levels;
    }
    /* A string column keeps its dictionary while every page uses it. */
    bool dict_enc =
        h->encoding == PQ__ENC_PLAIN_DICTIONARY || h->encoding == PQ__ENC_RLE_DICTIONARY;
    if (!st->seen_data && dict_enc && st->dict && !st->width && d->keep_dictionary &&
        st->col->info.type != CB_DECIMAL) {
        cb_column *c = st->col;
        c->indices = calloc(c->n ? c->n : 1, sizeof(uint32_t));
        if (!c->indices)
            return pq__fail(st, -ENOMEM, "out of memory");
        free(c->offsets);
        c->offsets = NULL;
        c->dict = cb_column_ref(st->dict);
        st->dict_mode = true;
    } else if (st->dict_mode && !dict_enc) {
        int rc = pq__leave_dict_mode(st);
        if (rc < 0)
            return rc;
    }
    st->seen_data = true;
    /* The chunk in one decompressed PLAIN page of fixed-width values with no
     * NULL, as wide as the column's (a writer that puts a row group's column
     * in one page): the page becomes the column's values, moved to its front,
     * instead of a copy beside it; the scratch lets it go. A page buffer
     * larger than the values by more than an eighth (grown by another page
     * before) is copied from as usual. */
    size_t vbytes = nv * st->width;
    if (in_scratch && h->encoding == PQ__ENC_PLAIN && st->row == 0 && nv > 0 && nv == d->num_rows &&
        nonnull == nv && !st->dict_mode && st->width == st->pwidth &&
        (d->physical == PQ_INT32 || d->physical == PQ_INT64 || d->physical == PQ_FLOAT ||
         d->physical == PQ_DOUBLE) &&
        values_len >= vbytes && st->s->page_cap - vbytes <= vbytes / 8) {
        uint8_t *buf = st->s->page_buf;
        memmove(buf, values, vbytes);
        free(st->col->values);
        st->col->values = buf;
        st->s->page_buf = NULL;
        st->s->page_cap = 0;
        st->row += (uint32_t)nv;
        return 0;
    }
    int rc = pq__values(st, h->encoding, st->row, values, values_len, nonnull);
    if (rc < 0)
        return rc;
    if (nonnull < nv) {
        rc = pq__spread(st, lv, nv, nonnull);
        if (rc < 0)
            return rc;
    }
    st->row += (uint32_t)nv;
    return 0;
}

void pq__scratch_deinit(pq__scratch *s)
{
    free(s->page_buf);
    free(s->levels);
    free(s->idx);
    free(s->tmp);
    free(s->cur);
    free(s->reps);
    free(s->defs);
    memset(s, 0, sizeof(*s));
}

static void pq__chunk_deinit(pq__chunk *st)
{
    cb_column_destroy(&st->dict);
    pq__scratch_deinit(&st->own);
}

int pq__decode_chunk(const pq__coldesc *d, const uint8_t *buf, size_t len, cb_column **out,
                     char *err, size_t errlen)
{
    return pq__decode_chunk_with(d, buf, len, NULL, out, err, errlen);
}

int pq__decode_chunk_with(const pq__coldesc *d, const uint8_t *buf, size_t len, pq__scratch *s,
                          cb_column **out, char *err, size_t errlen)
{
    *out = NULL;
    pq__chunk st = {.d = d, .err = err, .errlen = errlen};
    st.s = s ? s : &st.own;
    int rc = cb_column_create(&st.col, &d->type, d->name, d->num_rows);
    if (rc < 0)
        return pq__fail(&st, rc, "cannot create the column: %s", strerror(-rc));
    st.width = cb_type_width(&d->type);
    switch (d->physical) {
    case PQ_BOOLEAN: st.pwidth = 1; break;
    case PQ_INT32:
    case PQ_FLOAT: st.pwidth = 4; break;
    case PQ_INT64:
    case PQ_DOUBLE: st.pwidth = 8; break;
    case PQ_INT96: st.pwidth = 12; break;
    default: st.pwidth = 0; break;
    }
    uint64_t max_page = d->max_page_bytes ? d->max_page_bytes : (1ull << 30);
    size_t pos = 0;
    while (st.row < d->num_rows) {
        st.page_offset = (int64_t)pos;
        if (pos >= len) {
            rc = pq__fail(&st, -EBADMSG,
                          "the column chunk ends after %" PRIu32 " of %" PRIu32 " rows", st.row,
                          d->num_rows);
            goto fail;
        }
        pq__page_header h;
        const char *why = "malformed";
        int hl = pq__page_header_parse(buf + pos, len - pos, &h, &why);
        if (hl < 0) {
            rc = pq__fail(&st, -EBADMSG, "the page header is malformed: %s", why);
            goto fail;
        }
        pos += (size_t)hl;
        size_t clen = (size_t)h.compressed_size;
        if (clen > len - pos) {
            rc = pq__fail(&st, -EBADMSG,
                          "the page's compressed size (%zu bytes) runs past the "
                          "end of the column chunk (%zu bytes left)",
                          clen, len - pos);
            goto fail;
        }
        if ((uint64_t)h.uncompressed_size > max_page) {
            rc = pq__fail(&st, -EBADMSG,
                          "the page's uncompressed size (%d bytes) is over the "
                          "limit of %" PRIu64 " bytes",
                          h.uncompressed_size, max_page);
            goto fail;
        }
        const uint8_t *body = buf + pos;
        pos += clen;
        switch (h.type) {
        case PQ__PAGE_DICT:
            if (!h.has_dict) {
                rc = pq__fail(&st, -EBADMSG, "the dictionary page header is missing");
                goto fail;
            }
            rc = pq__dictionary_page(&st, &h, body, clen);
            break;
        case PQ__PAGE_DATA:
        case PQ__PAGE_DATA_V2: rc = pq__data_page(&st, &h, body, clen); break;
        case PQ__PAGE_INDEX: rc = 0; break;
        default: rc = pq__fail(&st, -EBADMSG, "the page type %d is unknown", h.type); break;
        }
        if (rc < 0)
            goto fail;
        st.page++;
    }
    if (st.col->null_count == 0) {
        free(st.col->validity);
        st.col->validity = NULL;
    }
    *out = st.col;
    pq__chunk_deinit(&st);
    return 0;
fail:
    cb_column_destroy(&st.col);
    pq__chunk_deinit(&st);
    return rc;
}
