/* SPDX-License-Identifier: Apache-2.0
 *
 * tp_footer.c: the part footer (layout in part.h): its serialiser and its
 * parser. The parser reads bytes that came back from S3 and trusts none of
 * them (fuzzed: tests/fuzz/table_footer): every count is checked against the
 * bytes left before anything is allocated, and everything the reader later
 * relies on (blocks inside the data area and in order, rows adding up, marks
 * inside their blocks and non-decreasing) is checked here once.
 */
#include "errf.h"
#include "tp_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const uint8_t *p;
    size_t len, at;
    bool bad;
} rd;

static bool need(rd *r, size_t n)
{
    if (r->bad || r->len - r->at < n) {
        r->bad = true;
        return false;
    }
    return true;
}

static uint8_t r8(rd *r)
{
    return need(r, 1) ? r->p[r->at++] : 0;
}
static uint16_t r16(rd *r)
{
    if (!need(r, 2))
        return 0;
    uint16_t v = tp__get16(r->p + r->at);
    r->at += 2;
    return v;
}
static uint32_t r32(rd *r)
{
    if (!need(r, 4))
        return 0;
    uint32_t v = tp__get32(r->p + r->at);
    r->at += 4;
    return v;
}
static uint64_t r64(rd *r)
{
    if (!need(r, 8))
        return 0;
    uint64_t v = tp__get64(r->p + r->at);
    r->at += 8;
    return v;
}

void tp__footer_free(tp__footer *f)
{
    for (uint32_t i = 0; f->cols && i < f->n_cols; i++) {
        free((char *)f->cols[i].def.name);
        free(f->cols[i].blocks);
        free(f->cols[i].marks);
    }
    free(f->cols);
    for (uint32_t k = 0; f->index && k < f->n_key; k++)
        cb_column_destroy(&f->index[k]);
    free(f->index);
    free(f->key_cols);
    for (uint32_t k = 0; f->minmax && k < 2 * f->n_minmax; k++)
        cb_column_destroy(&f->minmax[k]);
    free(f->minmax);
    free(f->minmax_cols);
    memset(f, 0, sizeof(*f));
}

/* n values of a type: fixed bytes, or u32 length + bytes each. */
static int read_values(rd *r, const cb_typeinfo *info, uint32_t n, cb_column **out)
{
    size_t w = cb_type_width(info);
    if (w && (r->len - r->at) / w < n)
        return -EBADMSG;
    if (!w && (r->len - r->at) / 4 < n)
        return -EBADMSG;
    tp__colbuf b;
    tp__colbuf_init(&b, info);
    int rc = tp__colbuf_reserve(&b, n);
    for (uint32_t i = 0; i < n && !rc; i++) {
        if (w) {
            rc = tp__colbuf_append_fixed(&b, r->p + r->at);
            r->at += w;
        } else {
            uint32_t len = r32(r);
            if (!need(r, len)) {
                rc = -EBADMSG;
                break;
            }
            rc = tp__colbuf_append_bytes(&b, r->p + r->at, len);
            r->at += len;
        }
    }
    if (!rc && r->bad)
        rc = -EBADMSG;
    if (!rc)
        rc = tp__colbuf_to_column(&b, NULL, out);
    tp__colbuf_deinit(&b);
    return rc;
}

static int write_value(tp__bytes *o, const cb_column *c, uint32_t i)
{
    size_t w = cb_type_width(&c->info);
    if (w)
        return tp__bytes_add(o, tp__col_fixed(c, i), w);
    size_t len;
    const uint8_t *p = cb_column_bytes(c, i, &len);
    int rc = tp__bytes_u32(o, (uint32_t)len);
    return rc ? rc : tp__bytes_add(o, p, len);
}

int tp__footer_write(const tp__footer *f, uint8_t **out, size_t *out_len)
{
    tp__bytes o = {0};
    int rc = 0;
    rc |= tp__bytes_u64(&o, f->rows);
    rc |= tp__bytes_u32(&o, f->granularity);
    rc |= tp__bytes_u32(&o, f->granules);
    rc |= tp__bytes_u32(&o, f->n_cols);
    rc |= tp__bytes_u32(&o, f->n_key);
    rc |= tp__bytes_u32(&o, f->n_minmax);
    rc |= tp__bytes_u32(&o, 0);
    for (uint32_t i = 0; i < f->n_cols && !rc; i++) {
        const tp__col_meta *c = &f->cols[i];
        size_t nl = strlen(c->def.name);
        rc |= tp__bytes_u16(&o, (uint16_t)nl);
        rc |= tp__bytes_add(&o, c->def.name, nl);
        uint8_t t[8] = {(uint8_t)c->def.info.type, (uint8_t)c->def.info.unit, c->def.info.utc,
                        c->def.info.precision,     c->def.info.scale,         c->def.nullable,
                        (uint8_t)c->def.codec,     (uint8_t)c->def.level};
        rc |= tp__bytes_add(&o, t, 8);
        if (c->def.info.type == CB_LIST) { /* an Array: its element type */
            rc |= tp__bytes_u8(&o, (uint8_t)c->def.info.elem);
            rc |= tp__bytes_u8(&o, c->def.info.elem_null);
        }
        rc |= tp__bytes_u32(&o, c->n_blocks);
        for (uint32_t b = 0; b < c->n_blocks; b++) {
            const tp__block_ent *e = &c->blocks[b];
            rc |= tp__bytes_u64(&o, e->offset);
            rc |= tp__bytes_u32(&o, e->comp_len);
            rc |= tp__bytes_u32(&o, e->raw_len);
            rc |= tp__bytes_u32(&o, e->rows);
            rc |= tp__bytes_u8(&o, e->codec);
            rc |= tp__bytes_u8(&o, e->enc);
            rc |= tp__bytes_u16(&o, 0);
            rc |= tp__bytes_u64(&o, e->checksum);
        }
        for (uint32_t g = 0; g < f->granules; g++) {
            rc |= tp__bytes_u32(&o, c->marks[g].block);
            rc |= tp__bytes_u32(&o, c->marks[g].row);
        }
    }
    for (uint32_t k = 0; k < f->n_key; k++)
        rc |= tp__bytes_u16(&o, (uint16_t)f->key_cols[k]);
    for (uint32_t k = 0; k < f->n_key && !rc; k++)
        for (uint32_t g = 0; g <= f->granules && !rc; g++)
            rc |= write_value(&o, f->index[k], g);
    for (uint32_t k = 0; k < f->n_minmax && !rc; k++) {
        rc |= tp__bytes_u16(&o, (uint16_t)f->minmax_cols[k]);
        bool have = f->minmax[2 * k] != NULL;
        rc |= tp__bytes_u8(&o, have);
        if (have) {
            rc |= write_value(&o, f->minmax[2 * k], 0);
            rc |= write_value(&o, f->minmax[2 * k + 1], 0);
        }
    }
    if (rc) {
        free(o.p);
        return -ENOMEM;
    }
    *out = o.p;
    *out_len = o.len;
    return 0;
}

#define BAD(...)                                                                                   \
    do {                                                                                           \
        rc = errf_fail(err, errlen, -EBADMSG, __VA_ARGS__);                                        \
        goto fail;                                                                                 \
    } while (0)

int tp__footer_parse(const uint8_t *buf, size_t len, uint64_t data_end, tp__footer *f, char *err,
                     size_t errlen)
{
    memset(f, 0, sizeof(*f));
    rd r = {buf, len, 0, false};
    int rc = 0;
    f->rows = r64(&r);
    f->granularity = r32(&r);
    f->granules = r32(&r);
    uint32_t n_cols = r32(&r), n_key = r32(&r), n_minmax = r32(&r);
    (void)r32(&r);
    if (r.bad)
        BAD("the footer is cut short");
    if (f->granularity == 0)
        BAD("the footer says granules of 0 rows");
    if (f->rows == 0 || f->granules != (f->rows + f->granularity - 1) / f->granularity)
        BAD("the footer's %u granules of %u rows do not hold its %llu rows", f->granules,
            f->granularity, (unsigned long long)f->rows);
    if (n_cols == 0 || n_cols > TP_MAX_COLUMNS)
        BAD("the footer lists %u columns", n_cols);
    if (n_key > n_cols || n_minmax > n_cols)
        BAD("the footer lists %u key and %u partition columns of %u", n_key, n_minmax, n_cols);
    /* each column needs at least 14 bytes plus 8 per granule of marks */
    if ((len - r.at) / 14 < n_cols || (len - r.at) / 8 / n_cols < f->granules)
        BAD("the footer is too short for %u columns of %u granules", n_cols, f->granules);
    f->cols = calloc(n_cols, sizeof(*f->cols));
    if (!f->cols)
        return -ENOMEM;
    f->n_cols = n_cols;
    uint64_t prev_end = TP__HEAD_SIZE;
    (void)prev_end;
    for (uint32_t i = 0; i < n_cols; i++) {
        tp__col_meta *c = &f->cols[i];
        uint16_t nl = r16(&r);
        if (!need(&r, nl))
            BAD("column %u's name is cut short", i);
        char *name = malloc((size_t)nl + 1);
        if (!name) {
            rc = -ENOMEM;
            goto fail;
        }
        memcpy(name, r.p + r.at, nl);
        name[nl] = 0;
        r.at += nl;
        c->def.name = name;
        if (memchr(name, 0, nl))
            BAD("column %u's name holds a NUL byte", i);
        c->def.info.type = (cb_type)r8(&r);
        c->def.info.unit = (cb_unit)r8(&r);
        c->def.info.utc = r8(&r) != 0;
        c->def.info.precision = r8(&r);
        c->def.info.scale = r8(&r);
        c->def.nullable = r8(&r) != 0;
        c->def.codec = (tp_codec)r8(&r);
        c->def.level = (int8_t)r8(&r);
        if (c->def.info.type == CB_LIST) {
            c->def.info.elem = (cb_type)r8(&r);
            c->def.info.elem_null = r8(&r) != 0;
        }
        c->n_blocks = r32(&r);
        if (r.bad)
            BAD("column %s is cut short", name);
        if (!tp__type_valid(&c->def.info))
            BAD("column %s has an unknown type %u", name, c->def.info.type);
        if (c->def.codec > TP_CODEC_ZSTD)
            BAD("column %s has an unknown codec %u", name, c->def.codec);
        if (c->n_blocks == 0 || c->n_blocks > f->rows || (len - r.at) / 32 < c->n_blocks)
            BAD("column %s lists %u blocks", name, c->n_blocks);
        c->blocks = calloc(c->n_blocks, sizeof(*c->blocks));
        c->marks = calloc(f->granules, sizeof(*c->marks));
        if (!c->blocks || !c->marks) {
            rc = -ENOMEM;
            goto fail;
        }
        uint64_t rows = 0, prev = TP__HEAD_SIZE;
        for (uint32_t b = 0; b < c->n_blocks; b++) {
            tp__block_ent *e = &c->blocks[b];
            e->offset = r64(&r);
            e->comp_len = r32(&r);
            e->raw_len = r32(&r);
            e->rows = r32(&r);
            e->codec = r8(&r);
            e->enc = r8(&r);
            (void)r16(&r);
            e->checksum = r64(&r);
            if (r.bad)
                BAD("column %s block %u is cut short", name, b);
            if (e->offset < prev || e->offset > data_end || e->comp_len > data_end - e->offset)
                BAD("column %s block %u (%u bytes at %llu) lies outside the part's data", name, b,
                    e->comp_len, (unsigned long long)e->offset);
            if (e->rows == 0 || e->raw_len == 0 || e->raw_len > TP__MAX_RAW_BLOCK ||
                e->codec > TP_CODEC_ZSTD || e->enc > TP__ENC_DICT)
                BAD("column %s block %u has %u rows, %u bytes, codec %u, encoding %u", name, b,
                    e->rows, e->raw_len, e->codec, e->enc);
            if (e->codec == TP_CODEC_NONE && e->comp_len != e->raw_len)
                BAD("column %s block %u is stored as is but its sizes differ", name, b);
            prev = e->offset + e->comp_len;
            rows += e->rows;
        }
        if (rows != f->rows)
            BAD("column %s's blocks hold %llu rows, the part %llu", name, (unsigned long long)rows,
                (unsigned long long)f->rows);
        for (uint32_t g = 0; g < f->granules; g++) {
            c->marks[g].block = r32(&r);
            c->marks[g].row = r32(&r);
            if (r.bad)
                BAD("column %s's marks are cut short", name);
            const tp__mark *m = &c->marks[g];
            if (m->block >= c->n_blocks || m->row >= c->blocks[m->block].rows)
                BAD("column %s granule %u's mark (block %u, row %u) points outside its blocks",
                    name, g, m->block, m->row);
            if (g == 0 ? (m->block != 0 || m->row != 0)
                       : (m->block < c->marks[g - 1].block ||
                          (m->block == c->marks[g - 1].block && m->row <= c->marks[g - 1].row)))
                BAD("column %s granule %u's mark goes backwards", name, g);
        }
        /* the marks must sit at granularity-row steps */
        uint64_t at_row = 0;
        uint32_t bi = 0;
        for (uint32_t g = 0; g < f->granules; g++) {
            uint64_t want = (uint64_t)g * f->granularity;
            while (bi < c->marks[g].block)
                at_row += c->blocks[bi++].rows;
            if (at_row + c->marks[g].row != want)
                BAD("column %s granule %u's mark is at row %llu, not %llu", name, g,
                    (unsigned long long)(at_row + c->marks[g].row), (unsigned long long)want);
        }
    }
    if (n_key) {
        if ((len - r.at) / 2 < n_key)
            BAD("the footer's key columns are cut short");
        f->key_cols = calloc(n_key, sizeof(uint32_t));
        f->index = calloc(n_key, sizeof(cb_column *));
        if (!f->key_cols || !f->index) {
            rc = -ENOMEM;
            goto fail;
        }
        f->n_key = n_key;
        for (uint32_t k = 0; k < n_key; k++) {
            f->key_cols[k] = r16(&r);
            if (f->key_cols[k] >= n_cols || f->cols[f->key_cols[k]].def.nullable)
                BAD("key column %u is %u, not a non-nullable column of the part", k,
                    f->key_cols[k]);
        }
        if (f->granules == UINT32_MAX)
            BAD("too many granules");
        for (uint32_t k = 0; k < n_key; k++) {
            rc = read_values(&r, &f->cols[f->key_cols[k]].def.info, f->granules + 1, &f->index[k]);
            if (rc == -EBADMSG)
                BAD("the primary index of column %s is cut short",
                    f->cols[f->key_cols[k]].def.name);
            if (rc < 0)
                goto fail;
        }
    }
    if (n_minmax) {
        f->minmax_cols = calloc(n_minmax, sizeof(uint32_t));
        f->minmax = calloc(2 * (size_t)n_minmax, sizeof(cb_column *));
        if (!f->minmax_cols || !f->minmax) {
            rc = -ENOMEM;
            goto fail;
        }
        f->n_minmax = n_minmax;
        for (uint32_t k = 0; k < n_minmax; k++) {
            f->minmax_cols[k] = r16(&r);
            uint8_t have = r8(&r);
            if (r.bad || f->minmax_cols[k] >= n_cols || have > 1)
                BAD("partition column %u of the footer is damaged", k);
            if (!have)
                continue;
            const cb_typeinfo *ti = &f->cols[f->minmax_cols[k]].def.info;
            if ((rc = read_values(&r, ti, 1, &f->minmax[2 * k])) < 0 ||
                (rc = read_values(&r, ti, 1, &f->minmax[2 * k + 1])) < 0) {
                if (rc == -EBADMSG)
                    BAD("the min/max of column %s is cut short",
                        f->cols[f->minmax_cols[k]].def.name);
                goto fail;
            }
        }
    }
    if (r.at != len)
        BAD("the footer has %zu bytes after its end", len - r.at);
    return 0;
fail:
    tp__footer_free(f);
    return rc;
}

int tp__tail_parse(const uint8_t tail[TP_TAIL_SIZE], uint64_t object_size, uint64_t *footer_len,
                   uint64_t *checksum, char *err, size_t errlen)
{
    if (memcmp(tail + 16, TP__TAIL_MAGIC, 8) != 0)
        return errf_fail(err, errlen, -EBADMSG,
                         "it does not end like a part (no tail marker: not a part, or cut short)");
    *footer_len = tp__get32(tail);
    uint32_t version = tp__get32(tail + 4);
    *checksum = tp__get64(tail + 8);
    if (version != TP_FORMAT_VERSION)
        return errf_fail(err, errlen, -EBADMSG,
                         "it is in part format version %u; this build reads version %d", version,
                         TP_FORMAT_VERSION);
    if (object_size < TP__HEAD_SIZE + TP_TAIL_SIZE ||
        *footer_len > object_size - TP__HEAD_SIZE - TP_TAIL_SIZE)
        return errf_fail(err, errlen, -EBADMSG, "its tail says the footer has %llu bytes of %llu",
                         (unsigned long long)*footer_len, (unsigned long long)object_size);
    return 0;
}
