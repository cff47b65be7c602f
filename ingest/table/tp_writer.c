/* SPDX-License-Identifier: Apache-2.0
 *
 * tp_writer.c: writes one part (layout in part.h) from cb_batch input. Rows
 * go into each column's current block; at every granule boundary a block of
 * min_block_bytes or more is encoded, compressed, checksummed and held in its
 * column's pending run; max_block_bytes cuts a block inside a granule. When
 * stripe_bytes of compressed blocks are pending they are written column by
 * column. Memory is therefore bounded by one block per column plus a stripe
 * (plus the marks and the index, a few bytes per granule), unless the input
 * comes unsorted: then the writer keeps every row until finish and sorts
 * them, stably, so that of equal keys the row given last stays last.
 */
#include "errf.h"
#include "tp_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

typedef struct {
    tp_column_def def;
    tp__colbuf cur;
    tp__bytes pending;
    tp__block_ent *blocks;
    uint32_t n_blocks, cap_blocks, first_pending;
    tp__mark *marks;
    uint32_t n_marks, cap_marks;
} wcol;

struct tp_writer {
    char *name;
    wcol *cols;
    uint32_t n_cols;
    uint32_t *key_cols, n_key;
    uint32_t *mm_cols, n_mm;
    uint32_t granularity;
    size_t min_block, max_block, stripe;
    bool sorted;
    tp_write_fn write;
    void *write_arg;
    tp__bytes mem;
    uint64_t out_off;
    bool head_done, failed, finished;
    uint64_t rows, rows_in;
    uint32_t in_granule;
    tp__colbuf *index; /* n_key: first row of each granule */
    tp__colbuf *last;  /* n_key: the last row added (1 row) */
    tp__colbuf *mm;    /* n_mm: row 0 min, row 1 max */
    size_t pending_bytes;
    XXH3_state_t *hash;
    uint64_t comp_total, raw_total;
    tp__colbuf *stage; /* unsorted input, n_cols */
};

static int wfail(tp_writer *w, char *err, size_t errlen, int rc, const char *what)
{
    w->failed = true;
    return errf_fail(err, errlen, rc, "part %s: %s", w->name, what);
}

int tp_writer_create(tp_writer **out, const tp_writer_opts *o, char *err, size_t errlen)
{
    *out = NULL;
    if (!o->cols || o->n_cols == 0 || o->n_cols > TP_MAX_COLUMNS)
        return errf_fail(err, errlen, -EINVAL, "a part needs 1 to %d columns, not %u",
                         TP_MAX_COLUMNS, o->n_cols);
    const char *pname = o->part_name ? o->part_name : "(new part)";
    for (uint32_t i = 0; i < o->n_cols; i++) {
        const tp_column_def *d = &o->cols[i];
        if (!d->name || !d->name[0] || strlen(d->name) > TP__MAX_NAME)
            return errf_fail(err, errlen, -EINVAL,
                             "part %s: column %u needs a name of 1 to %d bytes", pname, i,
                             TP__MAX_NAME);
        if (!tp__type_valid(&d->info))
            return errf_fail(err, errlen, -EINVAL, "part %s: column %s has an unknown type", pname,
                             d->name);
        if (d->codec > TP_CODEC_ZSTD || d->level < -7 || d->level > 22)
            return errf_fail(
                err, errlen, -EINVAL,
                "part %s: column %s: codec %d level %d is not LZ4, ZSTD(1..22) or none", pname,
                d->name, d->codec, d->level);
    }
    for (uint32_t k = 0; k < o->n_key; k++)
        if (o->key_cols[k] >= o->n_cols || o->cols[o->key_cols[k]].nullable)
            return errf_fail(err, errlen, -EINVAL,
                             "part %s: ORDER BY column %u must be one of the part's columns and "
                             "not Nullable",
                             pname, o->key_cols[k]);
    for (uint32_t k = 0; k < o->n_minmax; k++)
        if (o->minmax_cols[k] >= o->n_cols)
            return errf_fail(err, errlen, -EINVAL, "part %s: partition column %u is not a column",
                             pname, o->minmax_cols[k]);
    if (o->n_key > o->n_cols || o->n_minmax > o->n_cols)
        return errf_fail(err, errlen, -EINVAL, "part %s: too many key or partition columns", pname);
    tp_writer *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->name = strdup(pname);
    w->cols = calloc(o->n_cols, sizeof(wcol));
    w->key_cols = calloc(o->n_key + 1, sizeof(uint32_t));
    w->mm_cols = calloc(o->n_minmax + 1, sizeof(uint32_t));
    w->index = calloc(o->n_key + 1, sizeof(tp__colbuf));
    w->last = calloc(o->n_key + 1, sizeof(tp__colbuf));
    w->mm = calloc(o->n_minmax + 1, sizeof(tp__colbuf));
    w->hash = XXH3_createState();
    if (!w->name || !w->cols || !w->key_cols || !w->mm_cols || !w->index || !w->last || !w->mm ||
        !w->hash) {
        tp_writer_destroy(&w);
        return -ENOMEM;
    }
    XXH3_128bits_reset(w->hash);
    w->n_cols = o->n_cols;
    for (uint32_t i = 0; i < o->n_cols; i++) {
        w->cols[i].def = o->cols[i];
        w->cols[i].def.name = strdup(o->cols[i].name);
        if (!w->cols[i].def.name) {
            tp_writer_destroy(&w);
            return -ENOMEM;
        }
        tp__colbuf_init(&w->cols[i].cur, &o->cols[i].info);
    }
    w->n_key = o->n_key;
    for (uint32_t k = 0; k < o->n_key; k++) {
        w->key_cols[k] = o->key_cols[k];
        tp__colbuf_init(&w->index[k], &o->cols[o->key_cols[k]].info);
        tp__colbuf_init(&w->last[k], &o->cols[o->key_cols[k]].info);
    }
    w->n_mm = o->n_minmax;
    for (uint32_t k = 0; k < o->n_minmax; k++) {
        w->mm_cols[k] = o->minmax_cols[k];
        tp__colbuf_init(&w->mm[k], &o->cols[o->minmax_cols[k]].info);
    }
    w->granularity = o->index_granularity ? o->index_granularity : TP_DEFAULT_GRANULARITY;
    w->min_block = o->min_block_bytes ? o->min_block_bytes : TP_DEFAULT_MIN_BLOCK;
    w->max_block = o->max_block_bytes ? o->max_block_bytes : TP_DEFAULT_MAX_BLOCK;
    if (w->max_block < w->min_block)
        w->max_block = w->min_block;
    if (w->max_block > TP__MAX_RAW_BLOCK / 2)
        w->max_block = TP__MAX_RAW_BLOCK / 2;
    w->stripe = o->stripe_bytes ? o->stripe_bytes : TP_DEFAULT_STRIPE;
    w->sorted = o->input_sorted;
    w->write = o->write;
    w->write_arg = o->write_arg;
    *out = w;
    return 0;
}

void tp_writer_destroy(tp_writer **wp)
{
    if (!wp || !*wp)
        return;
    tp_writer *w = *wp;
    for (uint32_t i = 0; w->cols && i < w->n_cols; i++) {
        wcol *c = &w->cols[i];
        free((char *)c->def.name);
        tp__colbuf_deinit(&c->cur);
        free(c->pending.p);
        free(c->blocks);
        free(c->marks);
        if (w->stage)
            tp__colbuf_deinit(&w->stage[i]);
    }
    for (uint32_t k = 0; k < w->n_key; k++) {
        tp__colbuf_deinit(&w->index[k]);
        tp__colbuf_deinit(&w->last[k]);
    }
    for (uint32_t k = 0; k < w->n_mm; k++)
        tp__colbuf_deinit(&w->mm[k]);
    free(w->stage);
    free(w->cols);
    free(w->key_cols);
    free(w->mm_cols);
    free(w->index);
    free(w->last);
    free(w->mm);
    free(w->mem.p);
    if (w->hash)
        XXH3_freeState(w->hash);
    free(w->name);
    free(w);
    *wp = NULL;
}

size_t tp_writer_memory(const tp_writer *w)
{
    size_t m = w->mem.cap;
    for (uint32_t i = 0; i < w->n_cols; i++) {
        const wcol *c = &w->cols[i];
        m += tp__colbuf_memory(&c->cur) + c->pending.cap + c->cap_blocks * sizeof(tp__block_ent) +
             c->cap_marks * sizeof(tp__mark);
        if (w->stage)
            m += tp__colbuf_memory(&w->stage[i]);
    }
    for (uint32_t k = 0; k < w->n_key; k++)
        m += tp__colbuf_memory(&w->index[k]);
    return m;
}

static int emit(tp_writer *w, const void *p, size_t n)
{
    int rc = w->write ? w->write(w->write_arg, p, n) : tp__bytes_add(&w->mem, p, n);
    if (rc < 0)
        return rc;
    w->out_off += n;
    return 0;
}

static int emit_head(tp_writer *w)
{
    if (w->head_done)
        return 0;
    uint8_t h[TP__HEAD_SIZE];
    memcpy(h, TP__HEAD_MAGIC, 8);
    tp__put32(h + 8, TP_FORMAT_VERSION);
    tp__put32(h + 12, 0);
    w->head_done = true;
    return emit(w, h, sizeof(h));
}

static int write_stripe(tp_writer *w)
{
    int rc = emit_head(w);
    for (uint32_t i = 0; i < w->n_cols && !rc; i++) {
        wcol *c = &w->cols[i];
        if (!c->pending.len)
            continue;
        uint64_t base = w->out_off;
        for (uint32_t b = c->first_pending; b < c->n_blocks; b++)
            c->blocks[b].offset += base;
        rc = emit(w, c->pending.p, c->pending.len);
        c->first_pending = c->n_blocks;
        c->pending.len = 0;
    }
    w->pending_bytes = 0;
    return rc;
}

static int flush_block(tp_writer *w, wcol *c)
{
    if (!c->cur.n)
        return 0;
    if (tp__grow((void **)&c->blocks, c->n_blocks, &c->cap_blocks, sizeof(tp__block_ent), 16) < 0)
        return -ENOMEM;
    uint8_t enc, codec, *raw = NULL, *comp = NULL;
    size_t raw_len, comp_len;
    bool strings = c->cur.width == 0;
    int rc = tp__block_encode(&c->cur, strings, &enc, &raw, &raw_len);
    if (rc < 0)
        return rc;
    XXH3_128bits_update(w->hash, raw, raw_len);
    rc = tp__compress(c->def.codec, c->def.level, raw, raw_len, &comp, &comp_len, &codec);
    free(raw);
    if (rc < 0)
        return rc;
    if (comp_len > UINT32_MAX) {
        free(comp);
        return -E2BIG;
    }
    tp__block_ent *e = &c->blocks[c->n_blocks];
    e->offset = c->pending.len; /* made absolute when the stripe is written */
    e->comp_len = (uint32_t)comp_len;
    e->raw_len = (uint32_t)raw_len;
    e->rows = c->cur.n;
    e->codec = codec;
    e->enc = enc;
    e->checksum = XXH3_64bits(comp, comp_len);
    rc = tp__bytes_add(&c->pending, comp, comp_len);
    free(comp);
    if (rc < 0)
        return rc;
    c->n_blocks++;
    w->pending_bytes += comp_len;
    w->comp_total += comp_len;
    w->raw_total += raw_len;
    tp__colbuf_clear(&c->cur);
    return 0;
}

static int add_mark(wcol *c)
{
    if (tp__grow((void **)&c->marks, c->n_marks, &c->cap_marks, sizeof(tp__mark), 64) < 0)
        return -ENOMEM;
    c->marks[c->n_marks++] = (tp__mark){c->n_blocks, c->cur.n};
    return 0;
}

/* Rows [r, r + k) of src into c's current block, cutting at max_block. */
static int append_range(tp_writer *w, wcol *c, const cb_column *src, uint32_t r, uint32_t k)
{
    int rc = 0;
    while (k && !rc) {
        uint32_t take;
        if (c->cur.width) {
            size_t used = tp__colbuf_raw_size(&c->cur);
            size_t room = used < w->max_block ? (w->max_block - used) / c->cur.width : 0;
            if (room == 0 && c->cur.n) {
                rc = flush_block(w, c);
                continue;
            }
            if (room == 0)
                room = 1;
            take = k < room ? k : (uint32_t)room;
        } else {
            size_t used = tp__colbuf_raw_size(&c->cur);
            take = 0;
            while (take < k) {
                size_t len;
                cb_column_bytes(src, r + take, &len);
                if (used + 4 + len > w->max_block && (c->cur.n || take))
                    break;
                used += 4 + len;
                take++;
            }
            if (take == 0) {
                rc = flush_block(w, c);
                continue;
            }
        }
        rc = tp__colbuf_append(&c->cur, src, r, take);
        r += take;
        k -= take;
    }
    return rc;
}

static int key_cmp_rows(const tp_writer *w, const cb_batch *a, uint32_t i, const cb_batch *b,
                        uint32_t j)
{
    for (uint32_t k = 0; k < w->n_key; k++) {
        int c = tp__cmp_col(a->cols[w->key_cols[k]], i, b->cols[w->key_cols[k]], j);
        if (c)
            return c;
    }
    return 0;
}

static int key_cmp_last(const tp_writer *w, const cb_batch *b, uint32_t j)
{
    for (uint32_t k = 0; k < w->n_key; k++) {
        int c = tp__cmp_buf_col(&w->last[k], 0, b->cols[w->key_cols[k]], j);
        if (c)
            return c;
    }
    return 0;
}

static int add_sorted(tp_writer *w, const cb_batch *b, char *err, size_t errlen)
{
    int rc = 0;
    uint32_t n = b->n_rows;
    if (!n)
        return 0;
    if (w->n_key) {
        if (w->rows && key_cmp_last(w, b, 0) > 0)
            return errf_fail(err, errlen, -EINVAL,
                             "part %s: row %llu comes before the row ahead of it in ORDER BY "
                             "order (the input is not sorted)",
                             w->name, (unsigned long long)w->rows);
        for (uint32_t i = 1; i < n; i++)
            if (key_cmp_rows(w, b, i - 1, b, i) > 0)
                return errf_fail(err, errlen, -EINVAL,
                                 "part %s: row %llu comes before the row ahead of it in ORDER BY "
                                 "order (the input is not sorted)",
                                 w->name, (unsigned long long)(w->rows + i));
    }
    if ((rc = emit_head(w)) < 0)
        return rc;
    for (uint32_t r = 0; r < n && !rc;) {
        uint32_t k = w->granularity - w->in_granule;
        if (k > n - r)
            k = n - r;
        if (w->in_granule == 0) {
            for (uint32_t i = 0; i < w->n_cols && !rc; i++)
                rc = add_mark(&w->cols[i]);
            for (uint32_t j = 0; j < w->n_key && !rc; j++)
                rc = tp__colbuf_append(&w->index[j], b->cols[w->key_cols[j]], r, 1);
        }
        for (uint32_t i = 0; i < w->n_cols && !rc; i++)
            rc = append_range(w, &w->cols[i], b->cols[i], r, k);
        w->in_granule += k;
        w->rows += k;
        r += k;
        if (!rc && w->in_granule == w->granularity) {
            w->in_granule = 0;
            for (uint32_t i = 0; i < w->n_cols && !rc; i++)
                if (tp__colbuf_raw_size(&w->cols[i].cur) >= w->min_block)
                    rc = flush_block(w, &w->cols[i]);
            if (!rc && w->pending_bytes >= w->stripe)
                rc = write_stripe(w);
        }
    }
    for (uint32_t j = 0; j < w->n_key && !rc; j++) {
        tp__colbuf_clear(&w->last[j]);
        rc = tp__colbuf_append(&w->last[j], b->cols[w->key_cols[j]], n - 1, 1);
    }
    for (uint32_t m = 0; m < w->n_mm && !rc; m++) {
        const cb_column *c = b->cols[w->mm_cols[m]];
        tp__colbuf *mm = &w->mm[m];
        for (uint32_t i = 0; i < n && !rc; i++) {
            if (cb_column_is_null(c, i))
                continue;
            if (mm->n == 0) {
                rc = tp__colbuf_append(mm, c, i, 1);
                if (!rc)
                    rc = tp__colbuf_append(mm, c, i, 1);
                continue;
            }
            bool lo = tp__cmp_buf_col(mm, 0, c, i) > 0, hi = tp__cmp_buf_col(mm, 1, c, i) < 0;
            if (lo || hi) {
                /* rebuild the two rows: colbufs only append */
                tp__colbuf t;
                tp__colbuf_init(&t, &mm->info);
                rc = lo ? tp__colbuf_append(&t, c, i, 1) : tp__colbuf_append_buf(&t, mm, 0);
                if (!rc)
                    rc = hi ? tp__colbuf_append(&t, c, i, 1) : tp__colbuf_append_buf(&t, mm, 1);
                tp__colbuf_deinit(mm);
                *mm = t;
            }
        }
    }
    return rc;
}

static bool same_type(const cb_typeinfo *a, const cb_typeinfo *b)
{
    cb_type t = a->type == CB_LIST ? a->elem : a->type;
    return a->type == b->type && a->unit == b->unit &&
           (a->type != CB_LIST || (a->elem == b->elem && a->elem_null == b->elem_null)) &&
           (t != CB_DECIMAL || (a->precision == b->precision && a->scale == b->scale));
}

int tp_writer_add(tp_writer *w, const cb_batch *b, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (w->failed || w->finished)
        return errf_fail(err, errlen, -EINVAL, "part %s: the writer has %s", w->name,
                         w->failed ? "failed already" : "finished");
    if (b->n_cols != w->n_cols)
        return wfail(w, err, errlen, -EINVAL, "the batch's columns do not match the part's");
    for (uint32_t i = 0; i < w->n_cols; i++) {
        const cb_column *c = b->cols[i];
        const wcol *wc = &w->cols[i];
        if (!c || c->n != b->n_rows || !same_type(&c->info, &wc->def.info)) {
            w->failed = true;
            return errf_fail(err, errlen, -EINVAL,
                             "part %s: column %s is %s in the batch but %s in the part", w->name,
                             wc->def.name, c ? cb_type_name(c->info.type) : "missing",
                             cb_type_name(wc->def.info.type));
        }
        if (c->null_count && !wc->def.nullable) {
            uint32_t r = 0;
            while (r < c->n && !cb_column_is_null(c, r))
                r++;
            w->failed = true;
            return errf_fail(err, errlen, -EINVAL,
                             "part %s: column %s is not Nullable but row %llu is NULL", w->name,
                             wc->def.name, (unsigned long long)(w->rows_in + r));
        }
    }
    int rc;
    if (w->sorted) {
        rc = add_sorted(w, b, err, errlen);
    } else {
        if (!w->stage) {
            w->stage = calloc(w->n_cols, sizeof(tp__colbuf));
            if (!w->stage)
                return wfail(w, err, errlen, -ENOMEM, "out of memory");
            for (uint32_t i = 0; i < w->n_cols; i++)
                tp__colbuf_init(&w->stage[i], &w->cols[i].def.info);
        }
        rc = 0;
        for (uint32_t i = 0; i < w->n_cols && !rc; i++)
            rc = tp__colbuf_append(&w->stage[i], b->cols[i], 0, b->n_rows);
        if (rc == -E2BIG)
            return wfail(w, err, errlen, rc, "more than 4 GiB of strings or 2^32 rows in one part");
    }
    if (rc < 0) {
        w->failed = true;
        if (err && errlen && !err[0])
            errf_fail(err, errlen, rc, "part %s: %s", w->name, strerror(-rc));
        return rc;
    }
    w->rows_in += b->n_rows;
    return 0;
}

typedef struct {
    const tp_writer *w;
} sort_ctx;

static int perm_cmp(const void *a, const void *b, void *arg)
{
    const tp_writer *w = ((sort_ctx *)arg)->w;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    for (uint32_t k = 0; k < w->n_key; k++) {
        const tp__colbuf *s = &w->stage[w->key_cols[k]];
        int c = tp__cmp_buf(s, i, s, j);
        if (c)
            return c;
    }
    return i < j ? -1 : i > j; /* stable: equal keys keep their input order */
}

static int sort_and_feed(tp_writer *w, char *err, size_t errlen)
{
    uint32_t n = w->stage[0].n;
    uint32_t *perm = malloc(((size_t)n + 1) * sizeof(uint32_t));
    if (!perm)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        perm[i] = i;
    sort_ctx ctx = {w};
    if (w->n_key)
        qsort_r(perm, n, sizeof(uint32_t), perm_cmp, &ctx);
    int rc = 0;
    const uint32_t chunk = 65536;
    for (uint32_t r = 0; r < n && !rc; r += chunk) {
        uint32_t k = n - r < chunk ? n - r : chunk;
        cb_batch *b;
        if ((rc = cb_batch_create(&b, k, w->n_cols)) < 0)
            break;
        for (uint32_t i = 0; i < w->n_cols && !rc; i++) {
            tp__colbuf t;
            tp__colbuf_init(&t, &w->cols[i].def.info);
            rc = tp__colbuf_reserve(&t, k);
            for (uint32_t j = 0; j < k && !rc; j++)
                rc = tp__colbuf_append_buf(&t, &w->stage[i], perm[r + j]);
            if (!rc)
                rc = tp__colbuf_take_column(&t, NULL, &b->cols[i]);
            tp__colbuf_deinit(&t);
        }
        if (!rc)
            rc = add_sorted(w, b, err, errlen);
        cb_batch_destroy(&b);
    }
    free(perm);
    for (uint32_t i = 0; i < w->n_cols; i++)
        tp__colbuf_deinit(&w->stage[i]);
    free(w->stage);
    w->stage = NULL;
    return rc;
}

int tp_writer_finish(tp_writer *w, tp_part_info *info, void **buf, size_t *len, char *err,
                     size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (w->failed || w->finished)
        return errf_fail(err, errlen, -EINVAL, "part %s: the writer has %s", w->name,
                         w->failed ? "failed already" : "finished");
    int rc = 0;
    if (w->stage)
        rc = sort_and_feed(w, err, errlen);
    if (!rc && w->rows == 0)
        return wfail(w, err, errlen, -EINVAL, "a part needs at least one row");
    for (uint32_t i = 0; i < w->n_cols && !rc; i++)
        rc = flush_block(w, &w->cols[i]);
    if (!rc)
        rc = write_stripe(w);
    /* the index ends with the last row, the upper bound of the last granule */
    for (uint32_t k = 0; k < w->n_key && !rc; k++)
        rc = tp__colbuf_append_buf(&w->index[k], &w->last[k], 0);
    tp__footer f = {0};
    cb_column *idx[64], **index = NULL, **mm = NULL;
    tp__col_meta *cm = NULL;
    uint8_t *foot = NULL;
    size_t foot_len = 0;
    if (!rc) {
        f.rows = w->rows;
        f.granularity = w->granularity;
        f.granules = (uint32_t)((w->rows + w->granularity - 1) / w->granularity);
        f.n_cols = w->n_cols;
        f.n_key = w->n_key;
        f.key_cols = w->key_cols;
        f.n_minmax = w->n_mm;
        f.minmax_cols = w->mm_cols;
        cm = calloc(w->n_cols, sizeof(*cm));
        index = w->n_key <= 64 ? idx : calloc(w->n_key, sizeof(cb_column *));
        mm = calloc(2 * (size_t)w->n_mm + 1, sizeof(cb_column *));
        if (!cm || !index || !mm)
            rc = -ENOMEM;
        for (uint32_t k = 0; k < w->n_key && !rc; k++)
            rc = tp__colbuf_to_column(&w->index[k], NULL, &index[k]);
        for (uint32_t m = 0; m < w->n_mm && !rc; m++) {
            if (!w->mm[m].n)
                continue;
            tp__colbuf one;
            for (int side = 0; side < 2 && !rc; side++) {
                tp__colbuf_init(&one, &w->mm[m].info);
                rc = tp__colbuf_append_buf(&one, &w->mm[m], (uint32_t)side);
                if (!rc)
                    rc = tp__colbuf_to_column(&one, NULL, &mm[2 * m + side]);
                tp__colbuf_deinit(&one);
            }
        }
        for (uint32_t i = 0; i < w->n_cols && cm; i++) {
            cm[i].def = w->cols[i].def;
            cm[i].n_blocks = w->cols[i].n_blocks;
            cm[i].blocks = w->cols[i].blocks;
            cm[i].marks = w->cols[i].marks;
        }
        f.cols = cm;
        f.index = index;
        f.minmax = mm;
        if (!rc)
            rc = tp__footer_write(&f, &foot, &foot_len);
    }
    if (!rc && foot_len > UINT32_MAX)
        rc = -E2BIG;
    if (!rc)
        rc = emit(w, foot, foot_len);
    if (!rc) {
        uint8_t tail[TP_TAIL_SIZE];
        tp__put32(tail, (uint32_t)foot_len);
        tp__put32(tail + 4, TP_FORMAT_VERSION);
        tp__put64(tail + 8, XXH3_64bits(foot, foot_len));
        memcpy(tail + 16, TP__TAIL_MAGIC, 8);
        rc = emit(w, tail, sizeof(tail));
    }
    free(foot);
    for (uint32_t k = 0; index && k < w->n_key; k++)
        cb_column_destroy(&index[k]);
    if (index != idx)
        free(index);
    for (uint32_t m = 0; mm && m < 2 * w->n_mm; m++)
        cb_column_destroy(&mm[m]);
    free(mm);
    free(cm);
    if (rc < 0) {
        w->failed = true;
        if (err && errlen && !err[0])
            errf_fail(err, errlen, rc, "part %s: cannot write it: %s", w->name, strerror(-rc));
        return rc;
    }
    w->finished = true;
    if (info) {
        memset(info, 0, sizeof(*info));
        info->rows = w->rows;
        info->granules = f.granules;
        info->bytes = w->out_off;
        info->compressed_bytes = w->comp_total;
        info->uncompressed_bytes = w->raw_total;
        XXH128_hash_t h = XXH3_128bits_digest(w->hash);
        XXH128_canonical_t can;
        XXH128_canonicalFromHash(&can, h);
        memcpy(info->data_hash, can.digest, 16);
    }
    if (!w->write) {
        if (buf) {
            *buf = w->mem.p;
            w->mem.p = NULL;
            w->mem.cap = 0;
        }
        if (len)
            *len = w->mem.len;
    }
    return 0;
}
