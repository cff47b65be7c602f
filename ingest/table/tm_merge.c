/* SPDX-License-Identifier: Apache-2.0
 *
 * tm_merge.c: the k-way merge of sorted parts (a binary heap of cursors, one
 * granule of every column per input in memory at a time, rows copied into
 * output batches of batch_rows), ReplacingMergeTree's "one row per sorting
 * key" on the way, and tm_run(): select, merge from S3 to S3, commit.
 */
#include "errf.h"
#include "merge.h"
#include "tb_int.h"
#include "tp_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    tp_reader *r;
    uint32_t g, granules;
    cb_batch *b;
    uint32_t row;
    size_t idx;
    size_t bytes;
} cursor;

typedef struct {
    const tm_merge_opts *o;
    const tp_part_meta *m;
    cursor *cur;
    size_t *heap, n_heap;
    uint32_t *all_cols;
    tp__colbuf *out;  /* output batch being filled */
    tp__colbuf *pend; /* replacing: the row kept for the current key */
    bool have_pend;
    tm_merge_stats st;
    int64_t charged; /* bytes charged to o->mem now */
    char *err;
    size_t errlen;
} mctx;

static size_t batch_bytes(const cb_batch *b)
{
    size_t s = 0;
    for (uint32_t i = 0; i < b->n_cols; i++) {
        const cb_column *c = b->cols[i];
        size_t w = cb_type_width(&c->info);
        s += w ? (size_t)c->n * w : (size_t)c->n * 4 + (c->offsets ? c->offsets[c->n] : 0);
    }
    return s;
}

static int load(mctx *x, cursor *c)
{
    cb_batch_destroy(&c->b);
    c->row = 0;
    c->bytes = 0;
    if (c->g >= c->granules)
        return 0;
    int rc =
        tp_reader_read(c->r, x->all_cols, x->m->n_cols, c->g, c->g + 1, &c->b, x->err, x->errlen);
    if (rc == 0)
        c->bytes = batch_bytes(c->b);
    return rc;
}

static int key_cmp(const mctx *x, const cursor *a, const cursor *b)
{
    for (uint32_t k = 0; k < x->m->n_key; k++) {
        uint32_t kc = x->m->key_cols[k];
        int c = tp__cmp_col(a->b->cols[kc], a->row, b->b->cols[kc], b->row);
        if (c)
            return c;
    }
    return a->idx < b->idx ? -1 : a->idx > b->idx; /* older input first */
}

static void sift_down(mctx *x, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < x->n_heap && key_cmp(x, &x->cur[x->heap[l]], &x->cur[x->heap[m]]) < 0)
            m = l;
        if (r < x->n_heap && key_cmp(x, &x->cur[x->heap[r]], &x->cur[x->heap[m]]) < 0)
            m = r;
        if (m == i)
            return;
        size_t t = x->heap[i];
        x->heap[i] = x->heap[m];
        x->heap[m] = t;
        i = m;
    }
}

static int flush_out(mctx *x)
{
    uint32_t n = x->out[0].n;
    if (!n)
        return 0;
    cb_batch *b;
    int rc = cb_batch_create(&b, n, x->m->n_cols);
    for (uint32_t i = 0; i < x->m->n_cols && !rc; i++)
        rc = tp__colbuf_take_column(&x->out[i], x->m->cols[i].name, &b->cols[i]);
    if (!rc)
        rc = tp_writer_add(x->o->out, b, x->err, x->errlen);
    cb_batch_destroy(&b);
    for (uint32_t i = 0; i < x->m->n_cols; i++)
        tp__colbuf_clear(&x->out[i]);
    x->st.rows_out += n;
    return rc;
}

static int emit_from_cursor(mctx *x, const cursor *c)
{
    int rc = 0;
    for (uint32_t i = 0; i < x->m->n_cols && !rc; i++)
        rc = tp__colbuf_append(&x->out[i], c->b->cols[i], c->row, 1);
    return rc;
}

static int emit_pending(mctx *x)
{
    if (!x->have_pend)
        return 0;
    int rc = 0;
    for (uint32_t i = 0; i < x->m->n_cols && !rc; i++)
        rc = tp__colbuf_append_buf(&x->out[i], &x->pend[i], 0);
    x->have_pend = false;
    return rc;
}

static bool same_key_as_pending(const mctx *x, const cursor *c)
{
    for (uint32_t k = 0; k < x->m->n_key; k++) {
        uint32_t kc = x->m->key_cols[k];
        if (tp__cmp_buf_col(&x->pend[kc], 0, c->b->cols[kc], c->row) != 0)
            return false;
    }
    return true;
}

static int take_pending(mctx *x, const cursor *c)
{
    int rc = 0;
    for (uint32_t i = 0; i < x->m->n_cols && !rc; i++) {
        tp__colbuf_clear(&x->pend[i]);
        rc = tp__colbuf_append(&x->pend[i], c->b->cols[i], c->row, 1);
    }
    x->have_pend = rc == 0;
    return rc;
}

static int check_inputs(const tm_merge_opts *o, char *err, size_t errlen)
{
    if (!o->n_inputs || !o->out)
        return errf_fail(err, errlen, -EINVAL, "a merge needs inputs and an output");
    const tp_part_meta *a = tp_reader_meta(o->inputs[0]);
    for (size_t i = 1; i < o->n_inputs; i++) {
        const tp_part_meta *b = tp_reader_meta(o->inputs[i]);
        bool ok = a->n_cols == b->n_cols && a->n_key == b->n_key;
        for (uint32_t c = 0; ok && c < a->n_cols; c++)
            ok = !strcmp(a->cols[c].name, b->cols[c].name) &&
                 a->cols[c].info.type == b->cols[c].info.type &&
                 a->cols[c].info.unit == b->cols[c].info.unit &&
                 a->cols[c].info.precision == b->cols[c].info.precision &&
                 a->cols[c].info.scale == b->cols[c].info.scale &&
                 a->cols[c].info.elem == b->cols[c].info.elem &&
                 a->cols[c].info.elem_null == b->cols[c].info.elem_null &&
                 a->cols[c].nullable == b->cols[c].nullable;
        for (uint32_t k = 0; ok && k < a->n_key; k++)
            ok = a->key_cols[k] == b->key_cols[k];
        if (!ok)
            return errf_fail(err, errlen, -EINVAL,
                             "merge input %zu has other columns or another sorting key than "
                             "input 0",
                             i);
    }
    if (o->replacing && o->version_col >= (int32_t)a->n_cols)
        return errf_fail(err, errlen, -EINVAL, "the version column is not a column");
    if (o->replacing && o->version_col >= 0 && a->cols[o->version_col].nullable)
        return errf_fail(err, errlen, -EINVAL, "the version column %s may not be Nullable",
                         a->cols[o->version_col].name);
    return 0;
}

int tm_merge(const tm_merge_opts *o, tm_merge_stats *stats, char *err, size_t errlen)
{
    int rc = check_inputs(o, err, errlen);
    if (rc < 0)
        return rc;
    mctx x = {.o = o, .m = tp_reader_meta(o->inputs[0]), .err = err, .errlen = errlen};
    uint32_t nc = x.m->n_cols;
    uint32_t batch = o->batch_rows ? o->batch_rows : 8192;
    x.cur = calloc(o->n_inputs, sizeof(cursor));
    x.heap = calloc(o->n_inputs, sizeof(size_t));
    x.all_cols = calloc(nc, sizeof(uint32_t));
    x.out = calloc(nc, sizeof(tp__colbuf));
    x.pend = calloc(nc, sizeof(tp__colbuf));
    if (!x.cur || !x.heap || !x.all_cols || !x.out || !x.pend) {
        rc = -ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < nc; i++) {
        x.all_cols[i] = i;
        tp__colbuf_init(&x.out[i], &x.m->cols[i].info);
        tp__colbuf_init(&x.pend[i], &x.m->cols[i].info);
    }
    for (size_t i = 0; i < o->n_inputs && !rc; i++) {
        cursor *c = &x.cur[i];
        c->r = o->inputs[i];
        c->granules = tp_reader_meta(c->r)->granules;
        c->idx = i;
        x.st.rows_in += tp_reader_meta(c->r)->rows;
        rc = load(&x, c);
        if (!rc && c->b)
            x.heap[x.n_heap++] = i;
    }
    for (size_t i = x.n_heap; i-- > 0;)
        sift_down(&x, i);
    while (!rc && x.n_heap) {
        cursor *c = &x.cur[x.heap[0]];
        size_t held = 0;
        for (size_t i = 0; i < o->n_inputs; i++)
            held += x.cur[i].bytes;
        for (uint32_t i = 0; i < nc; i++)
            held += tp__colbuf_memory(&x.out[i]);
        if (held > x.st.peak_batch_bytes)
            x.st.peak_batch_bytes = held;
        /* the tracker also gets the writer's buffers and its sink's */
        if (o->out)
            held += tp_writer_memory(o->out);
        if (o->out_held)
            held += o->out_held(o->out_held_arg);
        if (o->mem && (int64_t)held != x.charged) {
            int64_t d = (int64_t)held - x.charged;
            if (!em_account(o->mem, d)) {
                int64_t now = atomic_load(&o->mem->cur) + d;
                bool own = o->mem->limit > 0 && now > o->mem->limit;
                rc = errf_fail(err, errlen, -ENOMEM,
                               "%s memory limit (%lld bytes) is exceeded: merging %zu parts "
                               "would hold %zu bytes; the merge stops and its parts stay as "
                               "they were",
                               own ? "the background merges'" : "the server's",
                               (long long)(own              ? o->mem->limit
                                           : o->mem->parent ? o->mem->parent->limit
                                                            : 0),
                               o->n_inputs, held);
                break;
            }
            x.charged = (int64_t)held;
        }
        if (!o->replacing) {
            rc = emit_from_cursor(&x, c);
        } else if (x.have_pend && same_key_as_pending(&x, c)) {
            /* the later row wins, unless its version is smaller */
            if (o->version_col < 0 || tp__cmp_buf_col(&x.pend[o->version_col], 0,
                                                      c->b->cols[o->version_col], c->row) <= 0)
                rc = take_pending(&x, c);
        } else {
            rc = emit_pending(&x);
            if (!rc)
                rc = take_pending(&x, c);
        }
        if (!rc && x.out[0].n >= batch)
            rc = flush_out(&x);
        if (rc)
            break;
        if (++c->row == c->b->n_rows) {
            c->g++;
            if ((rc = load(&x, c)) < 0)
                break;
            if (!c->b) {
                x.heap[0] = x.heap[--x.n_heap];
                if (!x.n_heap)
                    break;
            }
        }
        sift_down(&x, 0);
    }
    if (!rc)
        rc = emit_pending(&x);
    if (!rc)
        rc = flush_out(&x);
out:
    if (o->mem && x.charged)
        em_account(o->mem, -x.charged);
    for (size_t i = 0; x.cur && i < o->n_inputs; i++)
        cb_batch_destroy(&x.cur[i].b);
    for (uint32_t i = 0; x.out && x.pend && i < nc; i++) {
        tp__colbuf_deinit(&x.out[i]);
        tp__colbuf_deinit(&x.pend[i]);
    }
    free(x.cur);
    free(x.heap);
    free(x.all_cols);
    free(x.out);
    free(x.pend);
    if (rc == -ENOMEM && err && errlen && !err[0])
        errf_fail(err, errlen, rc, "out of memory merging %zu parts", o->n_inputs);
    if (stats)
        *stats = x.st;
    return rc;
}

/* ---- tm_run ------------------------------------------------------------------- */

int tm_run(tb_table *t, const tm_settings *s, bool final, tm_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof(*res));
    int rc = tb_table_refresh(t, err, errlen);
    tb_snapshot *snap = NULL;
    if (rc < 0 || (rc = tb_table_snapshot(t, &snap, err, errlen)) < 0)
        return rc;
    /* the best range over every partition */
    bool found = false;
    tm_range best = {0};
    size_t best_base = 0;
    uint64_t *sizes = calloc(snap->n_parts + 1, sizeof(uint64_t));
    if (!sizes) {
        tb_snapshot_destroy(&snap);
        return -ENOMEM;
    }
    for (size_t i = 0; i < snap->n_parts;) {
        size_t j = i;
        while (j < snap->n_parts && !strcmp(snap->parts[j].partition, snap->parts[i].partition))
            j++;
        for (size_t k = i; k < j; k++)
            sizes[k - i] = snap->parts[k].bytes;
        tm_range r;
        if (final) {
            if (!found && j - i >= 2) {
                size_t n = j - i < s->max_parts_to_merge ? j - i : s->max_parts_to_merge;
                best = (tm_range){0, n, 0};
                best_base = i;
                found = true;
            }
        } else if (tm_select(sizes, j - i, s, &r) && (!found || r.score < best.score)) {
            best = r;
            best_base = i;
            found = true;
        }
        i = j;
    }
    free(sizes);
    if (!found) {
        tb_snapshot_destroy(&snap);
        return 0;
    }
    size_t n = best.end - best.begin;
    const tb_part *in = &snap->parts[best_base + best.begin];
    if (s->mem && s->mem->limit > 0) {
        uint64_t need = 0;
        for (size_t i = 0; i < n; i++)
            need += in[i].granules ? in[i].uncompressed_bytes / in[i].granules : in[i].bytes;
        if ((int64_t)need > s->mem->limit - atomic_load(&s->mem->cur)) {
            res->skipped_for_memory = true;
            res->mem_needed = need;
            snprintf(res->partition, sizeof(res->partition), "%s", in[0].partition);
            res->n_inputs = n;
            tb_snapshot_destroy(&snap);
            return 0;
        }
    }
    rs_source **srcs = calloc(n, sizeof(rs_source *));
    tp_reader **rds = calloc(n, sizeof(tp_reader *));
    const char **names = calloc(n, sizeof(char *));
    tb_upload *u = NULL;
    tp_writer *w = NULL;
    rc = srcs && rds && names ? 0 : -ENOMEM;
    for (size_t i = 0; i < n && !rc; i++) {
        names[i] = in[i].name;
        rc = tb_part_open(t, in[i].name, &srcs[i], &rds[i], err, errlen);
    }
    if (!rc)
        rc = tb_upload_create(&u, t, in[0].partition, 0, err, errlen);
    const tp_part_meta *m = rc ? NULL : tp_reader_meta(rds[0]);
    if (!rc) {
        tp_writer_opts wo = {.part_name = tb_upload_name(u),
                             .cols = m->cols,
                             .n_cols = m->n_cols,
                             .key_cols = m->key_cols,
                             .n_key = m->n_key,
                             .minmax_cols = m->minmax_cols,
                             .n_minmax = m->n_minmax,
                             .index_granularity = snap->schema.index_granularity,
                             .input_sorted = true,
                             .write = tb_upload_write,
                             .write_arg = u};
        rc = tp_writer_create(&w, &wo, err, errlen);
    }
    tm_merge_stats st = {0};
    if (!rc) {
        bool replacing = snap->schema.engine && !strcmp(snap->schema.engine, "ReplacingMergeTree");
        tm_merge_opts mo = {.mem = s->mem,
                            .inputs = rds,
                            .n_inputs = n,
                            .replacing = replacing,
                            .version_col = snap->schema.version_col,
                            .out = w,
                            .out_held = tb_upload_memory,
                            .out_held_arg = u};
        rc = tm_merge(&mo, &st, err, errlen);
    }
    tp_part_info info;
    if (!rc && (rc = tp_writer_finish(w, &info, NULL, NULL, err, errlen)) < 0 &&
        tb_upload_error(u)[0])
        snprintf(err, errlen, "%s", tb_upload_error(u));
    /* the part's last bytes, gathered for the upload: still under the limit */
    int64_t held = rc || !s->mem ? 0 : (int64_t)tb_upload_memory(u);
    if (held && !em_account(s->mem, held)) {
        bool own = s->mem->limit > 0 && atomic_load(&s->mem->cur) + held > s->mem->limit;
        rc = errf_fail(err, errlen, -ENOMEM,
                       "%s memory limit (%lld bytes) is exceeded: the merged part's upload "
                       "would hold %lld bytes; the merge stops and its parts stay as they were",
                       own ? "the background merges'" : "the server's",
                       (long long)(own              ? s->mem->limit
                                   : s->mem->parent ? s->mem->parent->limit
                                                    : 0),
                       (long long)held);
        held = 0;
    }
    uint64_t size = 0;
    if (!rc)
        rc = tb_upload_finish(u, &size, err, errlen);
    if (held)
        em_account(s->mem, -held);
    if (!rc) {
        tb_part_add add = {.name = tb_upload_name(u),
                           .partition = in[0].partition,
                           .rows = info.rows,
                           .bytes = size,
                           .min_block = in[0].min_block,
                           .max_block = in[0].max_block,
                           .granules = info.granules,
                           .compressed_bytes = info.compressed_bytes,
                           .uncompressed_bytes = info.uncompressed_bytes,
                           .etag = tb_upload_etag(u)};
        for (size_t i = 0; i < n; i++) {
            if (in[i].level + 1 > add.level)
                add.level = in[i].level + 1;
            if (in[i].min_block < add.min_block)
                add.min_block = in[i].min_block;
            if (in[i].max_block > add.max_block)
                add.max_block = in[i].max_block;
        }
        tb_commit c = {
            .kind = TB_COMMIT_MERGE, .add = &add, .n_add = 1, .remove = names, .n_remove = n};
        tb_commit_result cr;
        rc = tb_commit_run(t, &c, &cr, err, errlen);
        if (rc < 0) {
            char e2[64];
            tb_part_delete(t, tb_upload_name(u), e2, sizeof(e2));
        } else {
            res->merged = true;
            snprintf(res->partition, sizeof(res->partition), "%s", in[0].partition);
            res->n_inputs = n;
            res->rows_in = st.rows_in;
            res->rows_out = st.rows_out;
            res->bytes_out = size;
            res->version = cr.version;
        }
    }
    tp_writer_destroy(&w);
    tb_upload_destroy(&u);
    for (size_t i = 0; i < n; i++) {
        if (rds)
            tp_reader_destroy(&rds[i]);
        if (srcs)
            rs_destroy(&srcs[i]);
    }
    free(srcs);
    free(rds);
    free(names);
    tb_snapshot_destroy(&snap);
    return rc;
}
