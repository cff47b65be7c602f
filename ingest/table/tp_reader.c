/* SPDX-License-Identifier: Apache-2.0
 *
 * tp_reader.c: reads a part (layout in part.h) through a byte-range source:
 * one tail read for the footer, then, per request, only the blocks of the
 * asked columns that the asked granules touch, adjacent blocks of a column in
 * one range and every range of the request in one rs_read_ranges call. Each
 * block's checksum is verified before it is decompressed, so a flipped or
 * torn byte is an error naming the part, the column and the block, never a
 * wrong value. The reader is immutable after open: reads from many threads
 * share it.
 */
#include "errf.h"
#include "tp_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define TP__TAIL_READ (64u << 10)

struct tp_reader {
    char *name;
    rs_source *src;
    uint64_t size;
    tp__footer f;
    tp_column_def *defs;
    tp_part_meta meta;
};

int tp_reader_open(tp_reader **out, rs_source *src, const char *part_name, char *err, size_t errlen)
{
    *out = NULL;
    const char *name = part_name ? part_name : rs_name(src);
    uint64_t size = rs_size(src);
    if (size < TP__HEAD_SIZE + TP_TAIL_SIZE)
        return errf_fail(err, errlen, -EBADMSG,
                         "part %s: the object has %llu bytes, too few for a part", name,
                         (unsigned long long)size);
    uint64_t want = size < TP__TAIL_READ ? size : TP__TAIL_READ;
    uint8_t *buf = malloc(want);
    if (!buf)
        return -ENOMEM;
    char msg[RS_MSG_MAX];
    int rc = rs_read(src, size - want, buf, want, msg, sizeof(msg));
    if (rc < 0) {
        free(buf);
        return errf_fail(err, errlen, rc, "part %s: cannot read its footer: %s", name, msg);
    }
    uint64_t flen, sum;
    rc = tp__tail_parse(buf + want - TP_TAIL_SIZE, size, &flen, &sum, msg, sizeof(msg));
    if (rc < 0) {
        free(buf);
        return errf_fail(err, errlen, rc, "part %s: %s", name, msg);
    }
    uint64_t fstart = size - TP_TAIL_SIZE - flen;
    const uint8_t *foot;
    uint8_t *extra = NULL;
    if (fstart >= size - want) {
        foot = buf + (fstart - (size - want));
    } else {
        extra = malloc(flen ? flen : 1);
        if (!extra) {
            free(buf);
            return -ENOMEM;
        }
        rc = rs_read(src, fstart, extra, flen, msg, sizeof(msg));
        if (rc < 0) {
            free(buf);
            free(extra);
            return errf_fail(err, errlen, rc, "part %s: cannot read its footer: %s", name, msg);
        }
        foot = extra;
    }
    if (XXH3_64bits(foot, flen) != sum) {
        free(buf);
        free(extra);
        return errf_fail(err, errlen, -EBADMSG,
                         "part %s: its footer's checksum does not match (the object is damaged)",
                         name);
    }
    tp_reader *r = calloc(1, sizeof(*r));
    if (!r || !(r->name = strdup(name))) {
        free(r);
        free(buf);
        free(extra);
        return -ENOMEM;
    }
    rc = tp__footer_parse(foot, flen, fstart, &r->f, msg, sizeof(msg));
    free(buf);
    free(extra);
    if (rc < 0) {
        errf_fail(err, errlen, rc, "part %s: its footer is damaged: %s", name,
                  rc == -ENOMEM ? "out of memory" : msg);
        tp_reader_destroy(&r);
        return rc;
    }
    r->src = src;
    r->size = size;
    r->defs = calloc(r->f.n_cols, sizeof(tp_column_def));
    if (!r->defs) {
        tp_reader_destroy(&r);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < r->f.n_cols; i++)
        r->defs[i] = r->f.cols[i].def;
    r->meta.rows = r->f.rows;
    r->meta.granularity = r->f.granularity;
    r->meta.granules = r->f.granules;
    r->meta.n_cols = r->f.n_cols;
    r->meta.cols = r->defs;
    r->meta.n_key = r->f.n_key;
    r->meta.key_cols = r->f.key_cols;
    r->meta.index = (const cb_column *const *)r->f.index;
    r->meta.n_minmax = r->f.n_minmax;
    r->meta.minmax_cols = r->f.minmax_cols;
    r->meta.minmax = (const cb_column *const *)r->f.minmax;
    *out = r;
    return 0;
}

void tp_reader_destroy(tp_reader **rp)
{
    if (!rp || !*rp)
        return;
    tp_reader *r = *rp;
    tp__footer_free(&r->f);
    free(r->defs);
    free(r->name);
    free(r);
    *rp = NULL;
}

const tp_part_meta *tp_reader_meta(const tp_reader *r)
{
    return &r->meta;
}

uint64_t tp_reader_rows(const tp_reader *r, uint32_t g0, uint32_t g1)
{
    if (g1 > r->f.granules)
        g1 = r->f.granules;
    if (g0 >= g1)
        return 0;
    uint64_t end = (uint64_t)g1 * r->f.granularity;
    if (end > r->f.rows)
        end = r->f.rows;
    return end - (uint64_t)g0 * r->f.granularity;
}

int tp_reader_column(const tp_reader *r, const char *name)
{
    for (uint32_t i = 0; i < r->f.n_cols; i++)
        if (strcmp(r->f.cols[i].def.name, name) == 0)
            return (int)i;
    return -ENOENT;
}

size_t tp_reader_memory(const tp_reader *r)
{
    size_t m = sizeof(*r);
    for (uint32_t i = 0; i < r->f.n_cols; i++)
        m += r->f.cols[i].n_blocks * sizeof(tp__block_ent) + r->f.granules * sizeof(tp__mark);
    for (uint32_t k = 0; k < r->f.n_key; k++) {
        const cb_column *c = r->f.index[k];
        m += (size_t)(c->n + 1) * (cb_type_width(&c->info) ? cb_type_width(&c->info) : 4) +
             (c->offsets ? c->offsets[c->n] : 0);
    }
    return m;
}

/* The blocks and the rows inside them that granules [g0, g1) of c cover. */
typedef struct {
    uint32_t b0, b1;     /* blocks [b0, b1] */
    uint32_t row0, row1; /* first row in b0; end row (exclusive) in b1 */
} span;

static span col_span(const tp_reader *r, const tp__col_meta *c, uint32_t g0, uint32_t g1)
{
    span s;
    s.b0 = c->marks[g0].block;
    s.row0 = c->marks[g0].row;
    if (g1 < r->f.granules) {
        const tp__mark *m = &c->marks[g1];
        if (m->row > 0) {
            s.b1 = m->block;
            s.row1 = m->row;
        } else {
            s.b1 = m->block - 1;
            s.row1 = c->blocks[s.b1].rows;
        }
    } else {
        s.b1 = c->n_blocks - 1;
        s.row1 = c->blocks[s.b1].rows;
    }
    return s;
}

typedef struct {
    uint32_t col;    /* index into the request */
    uint32_t b0, b1; /* blocks of this range */
    uint8_t *buf;
} range_ctx;

static int decode_col(const tp_reader *r, const tp__col_meta *c, const span *s, const range_ctx *rg,
                      size_t n_rg, uint32_t req_i, cb_column **out, char *err, size_t errlen)
{
    int rc = 0;
    tp__colbuf b;
    tp__colbuf_init(&b, &c->def.info);
    uint8_t *raw = NULL;
    size_t raw_cap = 0;
    char msg[256];
    bool single_dict = s->b0 == s->b1 && c->blocks[s->b0].enc == TP__ENC_DICT;
    for (size_t k = 0; k < n_rg && !rc; k++) {
        if (rg[k].col != req_i)
            continue;
        const uint8_t *p = rg[k].buf;
        for (uint32_t bi = rg[k].b0; bi <= rg[k].b1 && !rc; bi++) {
            const tp__block_ent *e = &c->blocks[bi];
            if (XXH3_64bits(p, e->comp_len) != e->checksum) {
                rc =
                    errf_fail(err, errlen, -EBADMSG,
                              "part %s: column %s: block %u (%u bytes at offset %llu): checksum "
                              "mismatch, the part object is damaged",
                              r->name, c->def.name, bi, e->comp_len, (unsigned long long)e->offset);
                break;
            }
            if (e->raw_len > raw_cap) {
                uint8_t *n = realloc(raw, e->raw_len);
                if (!n) {
                    rc = -ENOMEM;
                    break;
                }
                raw = n;
                raw_cap = e->raw_len;
            }
            if (tp__decompress(e->codec, p, e->comp_len, raw, e->raw_len) < 0) {
                rc = errf_fail(err, errlen, -EBADMSG,
                               "part %s: column %s: block %u does not decompress to its %u bytes",
                               r->name, c->def.name, bi, e->raw_len);
                break;
            }
            uint32_t lo = bi == s->b0 ? s->row0 : 0, hi = bi == s->b1 ? s->row1 : e->rows;
            if (single_dict) {
                rc = tp__block_decode_dict(raw, e->raw_len, e->rows, c->def.nullable, &c->def.info,
                                           c->def.name, lo, hi, out, msg, sizeof(msg));
            } else {
                rc = tp__block_decode(raw, e->raw_len, e->enc, e->rows, c->def.nullable, lo, hi, &b,
                                      msg, sizeof(msg));
            }
            if (rc == -EBADMSG || rc == -EINVAL)
                rc = errf_fail(err, errlen, -EBADMSG, "part %s: column %s: block %u: %s", r->name,
                               c->def.name, bi, msg);
            p += e->comp_len;
        }
    }
    free(raw);
    if (!rc && !single_dict)
        rc = tp__colbuf_take_column(&b, c->def.name, out);
    tp__colbuf_deinit(&b);
    return rc;
}

/* The runs of blocks that columns cols[0..n) of granules [g0, g1) need, one
 * range each (adjacent blocks of a column in one), and each column's span. */
static int plan_runs(const tp_reader *r, const uint32_t *cols, uint32_t n, uint32_t g0, uint32_t g1,
                     span **spans_out, range_ctx **rg_out, rs_range **rr_out, size_t *n_out,
                     char *err, size_t errlen)
{
    *spans_out = NULL;
    *rg_out = NULL;
    *rr_out = NULL;
    *n_out = 0;
    if (g0 >= g1 || g1 > r->f.granules)
        return errf_fail(err, errlen, -EINVAL, "part %s: granules %u..%u are not inside its %u",
                         r->name, g0, g1, r->f.granules);
    for (uint32_t i = 0; i < n; i++)
        if (cols[i] >= r->f.n_cols)
            return errf_fail(err, errlen, -EINVAL, "part %s has no column %u", r->name, cols[i]);
    span *spans = calloc(n + 1, sizeof(span));
    size_t n_rg = 0, cap_rg = 0;
    range_ctx *rg = NULL;
    rs_range *rr = NULL;
    int rc = spans ? 0 : -ENOMEM;
    for (uint32_t i = 0; i < n && !rc; i++) {
        const tp__col_meta *c = &r->f.cols[cols[i]];
        spans[i] = col_span(r, c, g0, g1);
        for (uint32_t bi = spans[i].b0; bi <= spans[i].b1 && !rc; bi++) {
            const tp__block_ent *e = &c->blocks[bi];
            if (n_rg && rg[n_rg - 1].col == i && rg[n_rg - 1].b1 + 1 == bi &&
                rr[n_rg - 1].offset + rr[n_rg - 1].length == e->offset) {
                rg[n_rg - 1].b1 = bi;
                rr[n_rg - 1].length += e->comp_len;
                continue;
            }
            if (n_rg == cap_rg) {
                size_t cap = cap_rg ? cap_rg * 2 : 16;
                range_ctx *a = realloc(rg, cap * sizeof(*a));
                if (a)
                    rg = a;
                rs_range *b = realloc(rr, cap * sizeof(*b));
                if (b)
                    rr = b;
                if (!a || !b) {
                    rc = -ENOMEM;
                    break;
                }
                cap_rg = cap;
            }
            rg[n_rg] = (range_ctx){i, bi, bi, NULL};
            rr[n_rg] = (rs_range){e->offset, e->comp_len, NULL};
            n_rg++;
        }
    }
    if (rc < 0) {
        free(spans);
        free(rg);
        free(rr);
        return rc;
    }
    *spans_out = spans;
    *rg_out = rg;
    *rr_out = rr;
    *n_out = n_rg;
    return 0;
}

static int cmp_range(const void *a, const void *b)
{
    const rs_range *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

int tp_reader_ranges(const tp_reader *r, const uint32_t *cols, uint32_t n, uint32_t g0, uint32_t g1,
                     rs_range **ranges, size_t *n_ranges, uint64_t *total, char *err, size_t errlen)
{
    *ranges = NULL;
    *n_ranges = 0;
    *total = 0;
    span *spans;
    range_ctx *rg;
    rs_range *rr;
    size_t n_rg;
    int rc = plan_runs(r, cols, n, g0, g1, &spans, &rg, &rr, &n_rg, err, errlen);
    if (rc < 0)
        return rc == -ENOMEM ? errf_fail(err, errlen, rc, "part %s: out of memory", r->name) : rc;
    free(spans);
    free(rg);
    if (n_rg > 1)
        qsort(rr, n_rg, sizeof(*rr), cmp_range);
    size_t m = 0;
    for (size_t k = 0; k < n_rg; k++) {
        if (m && rr[m - 1].offset + rr[m - 1].length >= rr[k].offset) {
            /* touching or overlapping (a column asked twice): one range */
            uint64_t end = rr[k].offset + rr[k].length;
            if (end > rr[m - 1].offset + rr[m - 1].length)
                rr[m - 1].length = end - rr[m - 1].offset;
            continue;
        }
        rr[m++] = rr[k];
    }
    for (size_t k = 0; k < m; k++)
        *total += rr[k].length;
    if (!m) {
        free(rr);
        rr = NULL;
    }
    *ranges = rr;
    *n_ranges = m;
    return 0;
}

/* The range of pre[] (sorted) that holds [off, off + len), or NULL. */
static const rs_range *find_pre(const rs_range *pre, size_t n_pre, uint64_t off, uint64_t len)
{
    size_t lo = 0, hi = n_pre;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pre[mid].offset + pre[mid].length <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < n_pre && pre[lo].buf && pre[lo].offset <= off &&
        off + len <= pre[lo].offset + pre[lo].length)
        return &pre[lo];
    return NULL;
}

int tp_reader_read(const tp_reader *r, const uint32_t *cols, uint32_t n, uint32_t g0, uint32_t g1,
                   cb_batch **out, char *err, size_t errlen)
{
    return tp_reader_read_from(r, cols, n, g0, g1, NULL, 0, out, err, errlen);
}

int tp_reader_read_from(const tp_reader *r, const uint32_t *cols, uint32_t n, uint32_t g0,
                        uint32_t g1, const rs_range *pre, size_t n_pre, cb_batch **out, char *err,
                        size_t errlen)
{
    *out = NULL;
    span *spans;
    range_ctx *rg;
    rs_range *rr;
    size_t n_rg;
    int rc = plan_runs(r, cols, n, g0, g1, &spans, &rg, &rr, &n_rg, err, errlen);
    if (rc == -EINVAL)
        return rc;
    uint64_t rows = tp_reader_rows(r, g0, g1);
    /* runs read ahead point into pre's bytes; the rest are fetched here */
    bool *own = rc ? NULL : calloc(n_rg + 1, sizeof(bool));
    size_t n_fetch = 0;
    if (!rc && !own)
        rc = -ENOMEM;
    for (size_t k = 0; k < n_rg && !rc; k++) {
        const rs_range *p = pre ? find_pre(pre, n_pre, rr[k].offset, rr[k].length) : NULL;
        if (p) {
            rg[k].buf = (uint8_t *)p->buf + (rr[k].offset - p->offset);
            continue;
        }
        own[k] = true;
        rg[k].buf = malloc(rr[k].length ? rr[k].length : 1);
        if (!rg[k].buf) {
            rc = -ENOMEM;
            break;
        }
        rr[n_fetch] = (rs_range){rr[k].offset, rr[k].length, rg[k].buf};
        n_fetch++;
    }
    char msg[RS_MSG_MAX];
    if (!rc && n_fetch && (rc = rs_read_ranges(r->src, rr, n_fetch, msg, sizeof(msg))) < 0)
        errf_fail(err, errlen, rc, "part %s: cannot read its blocks: %s", r->name, msg);
    cb_batch *b = NULL;
    if (!rc)
        rc = cb_batch_create(&b, (uint32_t)rows, n);
    for (uint32_t i = 0; i < n && !rc; i++) {
        const tp__col_meta *c = &r->f.cols[cols[i]];
        rc = decode_col(r, c, &spans[i], rg, n_rg, i, &b->cols[i], err, errlen);
        if (!rc && b->cols[i]->n != rows)
            rc = errf_fail(err, errlen, -EBADMSG,
                           "part %s: column %s gave %u rows for granules %u..%u, not %llu", r->name,
                           c->def.name, b->cols[i]->n, g0, g1, (unsigned long long)rows);
    }
    for (size_t k = 0; k < n_rg; k++)
        if (own && own[k])
            free(rg[k].buf);
    free(own);
    free(rg);
    free(rr);
    free(spans);
    if (rc < 0) {
        if (rc == -ENOMEM)
            errf_fail(err, errlen, rc, "part %s: out of memory reading granules %u..%u", r->name,
                      g0, g1);
        cb_batch_destroy(&b);
        return rc;
    }
    *out = b;
    return 0;
}

typedef struct {
    const uint8_t *p;
    size_t len;
} mem_src;

static int mem_read(void *impl, const rs_range *ranges, size_t n, char *err, size_t errlen)
{
    mem_src *m = impl;
    for (size_t i = 0; i < n; i++) {
        if (ranges[i].offset > m->len || ranges[i].length > m->len - ranges[i].offset)
            return errf_fail(err, errlen, -ERANGE, "a range runs past the buffer's end");
        memcpy(ranges[i].buf, m->p + ranges[i].offset, ranges[i].length);
    }
    return 0;
}

static void mem_destroy(void *impl)
{
    free(impl);
}

int tp_mem_source_create(rs_source **out, const void *buf, size_t len, const char *name)
{
    mem_src *m = malloc(sizeof(*m));
    if (!m)
        return -ENOMEM;
    m->p = buf;
    m->len = len;
    rs_ops ops = {mem_read, mem_destroy};
    return rs_source_create(out, &ops, m, name ? name : "memory", len, "mem");
}
