/* SPDX-License-Identifier: Apache-2.0
 *
 * test_part.c: the part format (ingest/table/part.h) in memory: every cb_type
 * with NULLs, dictionary and long strings written unsorted and read back in
 * key order (whole, by random granule ranges and column subsets), small
 * blocks and stripes so granules span blocks and streams interleave, LZ4 and
 * ZSTD, a dictionary block read back dictionary-encoded, a streaming write in
 * bounded memory, and the errors: a flipped byte in a block or the footer, a
 * truncated object, unsorted input where sorted was promised, a NULL in a
 * column that is not Nullable. Pruning against brute force on random data.
 */
#include "tgen.h"
#include "tp_int.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

typedef struct {
    cb_batch **b;
    uint32_t nb;
    uint32_t *perm_batch, *perm_row; /* expected order */
    uint32_t rows;
} input;

static input *g_in;

static int key_cmp(const input *in, uint32_t x, uint32_t y)
{
    const cb_batch *a = in->b[in->perm_batch[x]], *b = in->b[in->perm_batch[y]];
    uint32_t i = in->perm_row[x], j = in->perm_row[y];
    for (int k = 0; k < 3; k++) {
        int c = tp__cmp_col(a->cols[k], i, b->cols[k], j);
        if (c)
            return c;
    }
    return 0;
}

static int sort_cmp(const void *pa, const void *pb, void *arg)
{
    const input *in = arg;
    uint32_t x = *(const uint32_t *)pa, y = *(const uint32_t *)pb;
    int c = key_cmp(in, x, y);
    return c ? c : (x < y ? -1 : x > y);
}

/* Batches of the given sizes and their stable key order. */
static input *make_input(const uint32_t *sizes, uint32_t nb, uint64_t seed, uint32_t body_max)
{
    input *in = calloc(1, sizeof(*in));
    in->b = calloc(nb, sizeof(cb_batch *));
    in->nb = nb;
    for (uint32_t i = 0; i < nb; i++) {
        in->b[i] = tg_batch(sizes[i], seed + i, body_max);
        in->rows += sizes[i];
    }
    in->perm_batch = malloc(in->rows * sizeof(uint32_t));
    in->perm_row = malloc(in->rows * sizeof(uint32_t));
    uint32_t *ord = malloc(in->rows * sizeof(uint32_t));
    uint32_t at = 0;
    for (uint32_t i = 0; i < nb; i++)
        for (uint32_t r = 0; r < sizes[i]; r++, at++) {
            in->perm_batch[at] = i;
            in->perm_row[at] = r;
            ord[at] = at;
        }
    qsort_r(ord, in->rows, sizeof(uint32_t), sort_cmp, in);
    uint32_t *pb = malloc(in->rows * sizeof(uint32_t)), *pr = malloc(in->rows * sizeof(uint32_t));
    for (uint32_t x = 0; x < in->rows; x++) {
        pb[x] = in->perm_batch[ord[x]];
        pr[x] = in->perm_row[ord[x]];
    }
    free(in->perm_batch);
    free(in->perm_row);
    in->perm_batch = pb;
    in->perm_row = pr;
    free(ord);
    return in;
}

static void free_input(input **inp)
{
    input *in = *inp;
    for (uint32_t i = 0; i < in->nb; i++)
        cb_batch_destroy(&in->b[i]);
    free(in->b);
    free(in->perm_batch);
    free(in->perm_row);
    free(in);
    *inp = NULL;
}

static void opts_for(tp_writer_opts *o, tp_column_def *defs, tp_codec codec, int level)
{
    static const uint32_t mm[] = {12, 14};
    tg_defs(defs, codec, level);
    memset(o, 0, sizeof(*o));
    o->part_name = "p1";
    o->cols = defs;
    o->n_cols = TG_NCOLS;
    o->key_cols = tg_key;
    o->n_key = 3;
    o->minmax_cols = mm;
    o->n_minmax = 2;
}

static void *write_part(const input *in, tp_writer_opts *o, size_t *len, tp_part_info *info)
{
    tp_writer *w;
    char err[512];
    assert_int_equal(tp_writer_create(&w, o, err, sizeof(err)), 0);
    for (uint32_t i = 0; i < in->nb; i++)
        if (tp_writer_add(w, in->b[i], err, sizeof(err)) < 0)
            fail_msg("add: %s", err);
    void *buf = NULL;
    if (tp_writer_finish(w, info, &buf, len, err, sizeof(err)) < 0)
        fail_msg("finish: %s", err);
    tp_writer_destroy(&w);
    return buf;
}

/* Checks rows [g0*G, ...) of the read batch against the expected order. */
static void check_read(const input *in, const tp_reader *r, const uint32_t *cols, uint32_t n,
                       uint32_t g0, uint32_t g1)
{
    cb_batch *b;
    char err[512];
    if (tp_reader_read(r, cols, n, g0, g1, &b, err, sizeof(err)) < 0)
        fail_msg("read %u..%u: %s", g0, g1, err);
    uint32_t G = tp_reader_meta(r)->granularity;
    assert_int_equal(b->n_rows, tp_reader_rows(r, g0, g1));
    for (uint32_t i = 0; i < n; i++) {
        assert_string_equal(b->cols[i]->name, tg_cols[cols[i]].name);
        for (uint32_t x = 0; x < b->n_rows; x++) {
            uint32_t at = g0 * G + x;
            const cb_column *want = in->b[in->perm_batch[at]]->cols[cols[i]];
            if (!tg_same(b->cols[i], x, want, in->perm_row[at]))
                fail_msg("column %s row %u differs", tg_cols[cols[i]].name, at);
        }
    }
    cb_batch_destroy(&b);
}

static void roundtrip(tp_codec codec, int level, uint32_t granularity, size_t min_block,
                      size_t max_block, size_t stripe, uint32_t body_max)
{
    static const uint32_t sizes[] = {1000, 1, 2500, 777, 4000};
    input *in = make_input(sizes, 5, 42, body_max);
    tp_column_def defs[TG_NCOLS];
    tp_writer_opts o;
    opts_for(&o, defs, codec, level);
    o.index_granularity = granularity;
    o.min_block_bytes = min_block;
    o.max_block_bytes = max_block;
    o.stripe_bytes = stripe;
    size_t len;
    tp_part_info info;
    void *buf = write_part(in, &o, &len, &info);
    assert_int_equal(info.rows, in->rows);
    assert_int_equal(info.bytes, len);
    assert_true(info.compressed_bytes < len);
    rs_source *src;
    assert_int_equal(tp_mem_source_create(&src, buf, len, "p1"), 0);
    tp_reader *r;
    char err[512];
    if (tp_reader_open(&r, src, "p1", err, sizeof(err)) < 0)
        fail_msg("open: %s", err);
    const tp_part_meta *m = tp_reader_meta(r);
    assert_int_equal(m->rows, in->rows);
    assert_int_equal(m->granules, (in->rows + granularity - 1) / granularity);
    assert_int_equal(m->n_cols, TG_NCOLS);
    assert_int_equal(tp_reader_column(r, "body"), 17);
    assert_int_equal(tp_reader_column(r, "nope"), -ENOENT);
    /* every column, every granule */
    uint32_t all[TG_NCOLS];
    for (uint32_t i = 0; i < TG_NCOLS; i++)
        all[i] = i;
    check_read(in, r, all, TG_NCOLS, 0, m->granules);
    /* random granule ranges and column subsets, repeats allowed */
    uint64_t s = 99;
    for (int t = 0; t < 40; t++) {
        uint32_t g0 = (uint32_t)(tg_rand(&s) % m->granules);
        uint32_t g1 = g0 + 1 + (uint32_t)(tg_rand(&s) % (m->granules - g0));
        uint32_t cols[4], n = 1 + (uint32_t)(tg_rand(&s) % 4);
        for (uint32_t i = 0; i < n; i++)
            cols[i] = (uint32_t)(tg_rand(&s) % TG_NCOLS);
        check_read(in, r, cols, n, g0, g1);
    }
    /* the index holds the first row of each granule, then the last row */
    for (uint32_t g = 0; g <= m->granules; g++) {
        uint32_t at = g < m->granules ? g * granularity : in->rows - 1;
        for (int k = 0; k < 3; k++)
            assert_true(
                tg_same(m->index[k], g, in->b[in->perm_batch[at]]->cols[k], in->perm_row[at]));
    }
    /* min/max of the partition columns */
    assert_int_equal(m->n_minmax, 2);
    for (uint32_t k = 0; k < 2; k++) {
        const cb_column *mn = m->minmax[2 * k], *mx = m->minmax[2 * k + 1];
        assert_non_null(mn);
        for (uint32_t x = 0; x < in->rows; x++) {
            const cb_column *c = in->b[in->perm_batch[x]]->cols[m->minmax_cols[k]];
            assert_true(tp__cmp_col(mn, 0, c, in->perm_row[x]) <= 0);
            assert_true(tp__cmp_col(mx, 0, c, in->perm_row[x]) >= 0);
        }
    }
    tp_reader_destroy(&r);
    rs_destroy(&src);
    free(buf);
    free_input(&in);
}

static void test_roundtrip_lz4_default_sizes(void **state)
{
    (void)state;
    roundtrip(TP_CODEC_LZ4, 0, 8192, 0, 0, 0, 200);
}

static void test_roundtrip_small_blocks_interleaved(void **state)
{
    (void)state;
    /* granules of 100 rows, blocks 1-4 KiB (long strings cut mid-granule),
     * a stripe every 16 KiB: blocks of the columns interleave in the object */
    roundtrip(TP_CODEC_LZ4, 0, 100, 1024, 4096, 16384, 600);
}

static void test_roundtrip_zstd_and_none(void **state)
{
    (void)state;
    roundtrip(TP_CODEC_ZSTD, 3, 333, 8192, 65536, 0, 100);
    roundtrip(TP_CODEC_NONE, 0, 50, 512, 2048, 4096, 50);
}

/* Writes rows of `sizes` (seed, body_max) as a part of the given granularity
 * and opens it: *buf, *src and *r belong to the caller. */
static input *write_and_open(const uint32_t *sizes, uint32_t nb, uint64_t seed, uint32_t body_max,
                             uint32_t granularity, void **buf, rs_source **src, tp_reader **r)
{
    input *in = make_input(sizes, nb, seed, body_max);
    tp_column_def defs[TG_NCOLS];
    tp_writer_opts o;
    opts_for(&o, defs, TP_CODEC_LZ4, 0);
    o.index_granularity = granularity;
    size_t len;
    *buf = write_part(in, &o, &len, NULL);
    assert_int_equal(tp_mem_source_create(src, *buf, len, "p"), 0);
    char err[256];
    assert_int_equal(tp_reader_open(r, *src, "p", err, sizeof(err)), 0);
    return in;
}

static void test_dictionary_block_reads_dictionary(void **state)
{
    (void)state;
    static const uint32_t sizes[] = {3000};
    void *buf;
    rs_source *src;
    tp_reader *r;
    input *in = write_and_open(sizes, 1, 5, 10, 1000, &buf, &src, &r);
    char err[256];
    uint32_t cols[] = {19, 1};
    cb_batch *b;
    assert_int_equal(tp_reader_read(r, cols, 2, 1, 2, &b, err, sizeof(err)), 0);
    assert_non_null(b->cols[0]->dict); /* lc: 5 values in 3000 rows */
    assert_true(b->cols[0]->dict->n <= 5);
    assert_non_null(b->cols[1]->dict); /* k2: 12 values */
    cb_batch_destroy(&b);
    check_read(in, r, cols, 2, 0, 3);
    tp_reader_destroy(&r);
    rs_destroy(&src);
    free(buf);
    free_input(&in);
}

static size_t g_streamed, g_max_mem;
static tp_writer *g_w;

static int count_write(void *arg, const void *data, size_t len)
{
    (void)arg;
    (void)data;
    g_streamed += len;
    size_t m = tp_writer_memory(g_w);
    if (m > g_max_mem)
        g_max_mem = m;
    return 0;
}

static void test_streaming_write_bounded_memory(void **state)
{
    (void)state;
    tp_column_def defs[TG_NCOLS];
    tp_writer_opts o;
    opts_for(&o, defs, TP_CODEC_LZ4, 0);
    o.input_sorted = true;
    o.n_key = 1; /* k3 alone is sorted below */
    static const uint32_t key3[] = {2};
    o.key_cols = key3;
    o.stripe_bytes = 1u << 20;
    o.write = count_write;
    g_streamed = 0;
    g_max_mem = 0;
    char err[256];
    assert_int_equal(tp_writer_create(&g_w, &o, err, sizeof(err)), 0);
    int64_t next = 0;
    size_t input_bytes = 0;
    for (int i = 0; i < 60; i++) {
        cb_batch *b = tg_batch(10000, (uint64_t)i, 300);
        int64_t *k = b->cols[2]->values;
        for (uint32_t r = 0; r < b->n_rows; r++)
            k[r] = next++;
        input_bytes += b->cols[17]->offsets[b->n_rows];
        if (tp_writer_add(g_w, b, err, sizeof(err)) < 0)
            fail_msg("%s", err);
        cb_batch_destroy(&b);
    }
    tp_part_info info;
    assert_int_equal(tp_writer_finish(g_w, &info, NULL, NULL, err, sizeof(err)), 0);
    assert_int_equal(info.rows, 600000);
    assert_int_equal(g_streamed, info.bytes);
    /* far more went out than the writer ever held: blocks + one stripe */
    assert_true(input_bytes > 60u << 20);
    assert_true(g_max_mem < 12u << 20);
    tp_writer_destroy(&g_w);
}

/* The block of column `col` that holds granule g's first row. */
static tp__block_ent block_of(const void *buf, size_t len, uint32_t col, uint32_t g)
{
    const uint8_t *p = buf;
    uint32_t flen = tp__get32(p + len - TP_TAIL_SIZE);
    tp__footer f;
    assert_int_equal(tp__footer_parse(p + len - TP_TAIL_SIZE - flen, flen,
                                      len - TP_TAIL_SIZE - flen, &f, NULL, 0),
                     0);
    tp__block_ent e = f.cols[col].blocks[f.cols[col].marks[g].block];
    tp__footer_free(&f);
    return e;
}

static void test_flipped_bytes_and_truncation(void **state)
{
    (void)state;
    static const uint32_t sizes[] = {5000};
    input *in = make_input(sizes, 1, 9, 100);
    tp_column_def defs[TG_NCOLS];
    tp_writer_opts o;
    opts_for(&o, defs, TP_CODEC_LZ4, 0);
    o.index_granularity = 1000;
    o.min_block_bytes = 1024;
    size_t len;
    uint8_t *buf = write_part(in, &o, &len, NULL);
    char err[512];
    rs_source *src;
    tp_reader *r;
    /* a byte inside block 2 of column "body" */
    tp__block_ent e = block_of(buf, len, 17, 2);
    uint64_t at = e.offset + e.comp_len / 2;
    buf[at] ^= 0x40;
    assert_int_equal(tp_mem_source_create(&src, buf, len, "posts/p7"), 0);
    assert_int_equal(tp_reader_open(&r, src, "posts/p7", err, sizeof(err)), 0);
    uint32_t body = 17, k3 = 2;
    cb_batch *b;
    assert_int_equal(tp_reader_read(r, &body, 1, 2, 3, &b, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "posts/p7"));
    assert_non_null(strstr(err, "column body"));
    assert_non_null(strstr(err, "block"));
    assert_non_null(strstr(err, "checksum"));
    /* other granules and columns still read */
    assert_int_equal(tp_reader_read(r, &body, 1, 0, 1, &b, err, sizeof(err)), 0);
    cb_batch_destroy(&b);
    assert_int_equal(tp_reader_read(r, &k3, 1, 0, 5, &b, err, sizeof(err)), 0);
    cb_batch_destroy(&b);
    tp_reader_destroy(&r);
    rs_destroy(&src);
    buf[at] ^= 0x40;
    /* a byte of the footer */
    uint32_t flen = tp__get32(buf + len - TP_TAIL_SIZE);
    buf[len - TP_TAIL_SIZE - flen / 2] ^= 1;
    assert_int_equal(tp_mem_source_create(&src, buf, len, "posts/p7"), 0);
    assert_int_equal(tp_reader_open(&r, src, "posts/p7", err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "posts/p7"));
    assert_non_null(strstr(err, "footer"));
    rs_destroy(&src);
    buf[len - TP_TAIL_SIZE - flen / 2] ^= 1;
    /* a torn upload: the object cut anywhere is refused */
    for (size_t cut = 1; cut < len; cut += len / 7) {
        assert_int_equal(tp_mem_source_create(&src, buf, len - cut, "posts/p7"), 0);
        assert_int_equal(tp_reader_open(&r, src, "posts/p7", err, sizeof(err)), -EBADMSG);
        rs_destroy(&src);
    }
    /* a newer format version */
    tp__put32(buf + len - TP_TAIL_SIZE + 4, 2);
    assert_int_equal(tp_mem_source_create(&src, buf, len, "posts/p7"), 0);
    assert_int_equal(tp_reader_open(&r, src, "posts/p7", err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "version 2"));
    rs_destroy(&src);
    free(buf);
    free_input(&in);
}

static void test_bad_input(void **state)
{
    (void)state;
    tp_column_def defs[TG_NCOLS];
    tp_writer_opts o;
    opts_for(&o, defs, TP_CODEC_LZ4, 0);
    o.input_sorted = true;
    char err[512];
    tp_writer *w;
    cb_batch *b = tg_batch(100, 1, 10); /* random keys: not sorted */
    assert_int_equal(tp_writer_create(&w, &o, err, sizeof(err)), 0);
    assert_int_equal(tp_writer_add(w, b, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "not sorted"));
    tp_writer_destroy(&w);
    /* a NULL where the column is not Nullable */
    o.input_sorted = false;
    defs[17].nullable = false;
    assert_int_equal(tp_writer_create(&w, &o, err, sizeof(err)), 0);
    assert_int_equal(tp_writer_add(w, b, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "column body"));
    assert_non_null(strstr(err, "row"));
    tp_writer_destroy(&w);
    defs[17].nullable = true;
    /* a nullable key column is refused */
    defs[0].nullable = true;
    assert_int_equal(tp_writer_create(&w, &o, err, sizeof(err)), -EINVAL);
    defs[0].nullable = false;
    /* a type mismatch names the column */
    defs[4].info.type = CB_INT32;
    assert_int_equal(tp_writer_create(&w, &o, err, sizeof(err)), 0);
    assert_int_equal(tp_writer_add(w, b, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "i16"));
    tp_writer_destroy(&w);
    defs[4].info.type = CB_INT16;
    /* zero rows */
    assert_int_equal(tp_writer_create(&w, &o, err, sizeof(err)), 0);
    assert_int_equal(tp_writer_finish(w, NULL, NULL, NULL, err, sizeof(err)), -EINVAL);
    tp_writer_destroy(&w);
    cb_batch_destroy(&b);
    (void)g_in;
}

/* ---- pruning against brute force ---------------------------------------- */

static bool row_matches(const tp_cond *c, const cb_batch *b, uint32_t row)
{
    switch (c->op) {
    case TP_COND_AND:
        for (uint32_t i = 0; i < c->n_kids; i++)
            if (!row_matches(c->kids[i], b, row))
                return false;
        return true;
    case TP_COND_OR:
        for (uint32_t i = 0; i < c->n_kids; i++)
            if (row_matches(c->kids[i], b, row))
                return true;
        return false;
    default: break;
    }
    const cb_column *col = b->cols[tg_key[c->key_pos]];
    int r = tp__cmp_col(col, row, c->values, 0);
    switch (c->op) {
    case TP_COND_EQ: return r == 0;
    case TP_COND_IN:
        for (uint32_t i = 0; i < c->values->n; i++)
            if (tp__cmp_col(col, row, c->values, i) == 0)
                return true;
        return false;
    case TP_COND_LT: return r < 0;
    case TP_COND_LE: return r <= 0;
    case TP_COND_GT: return r > 0;
    case TP_COND_GE: return r >= 0;
    default: return true;
    }
}

typedef struct {
    tp_cond nodes[32];
    const tp_cond *kids[32][3];
    cb_column *vals[32];
    int n;
} cond_pool;

/* A value column for key position k taken from random rows of the data. */
static cb_column *vals_from(const cb_batch *b, uint32_t k, uint32_t n, uint64_t *s)
{
    tp__colbuf cb;
    tp__colbuf_init(&cb, &b->cols[tg_key[k]]->info);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t row = (uint32_t)(tg_rand(s) % b->n_rows);
        if (tp__colbuf_append(&cb, b->cols[tg_key[k]], row, 1) < 0)
            abort();
        if (k == 2 && tg_rand(s) % 3 == 0) /* a value that may not occur */
            ((int64_t *)cb.values)[cb.n - 1] += (int64_t)(tg_rand(s) % 7) - 3;
    }
    cb_column *c;
    if (tp__colbuf_to_column(&cb, NULL, &c) < 0)
        abort();
    tp__colbuf_deinit(&cb);
    return c;
}

static const tp_cond *rand_cond(cond_pool *p, const cb_batch *b, int depth, uint64_t *s)
{
    int i = p->n++;
    tp_cond *c = &p->nodes[i];
    memset(c, 0, sizeof(*c));
    uint64_t x = tg_rand(s);
    if (depth < 2 && x % 3 == 0 && p->n < 28) {
        c->op = x % 2 ? TP_COND_AND : TP_COND_OR;
        c->n_kids = 2 + (uint32_t)(tg_rand(s) % 2);
        for (uint32_t k = 0; k < c->n_kids; k++)
            p->kids[i][k] = rand_cond(p, b, depth + 1, s);
        c->kids = p->kids[i];
        return c;
    }
    static const tp_cond_op ops[] = {TP_COND_EQ, TP_COND_IN, TP_COND_LT,
                                     TP_COND_LE, TP_COND_GT, TP_COND_GE};
    c->op = ops[tg_rand(s) % 6];
    c->key_pos = (uint32_t)(tg_rand(s) % 3);
    p->vals[i] = vals_from(b, c->key_pos, c->op == TP_COND_IN ? 3 : 1, s);
    c->values = p->vals[i];
    return c;
}

static void test_prune_vs_brute_force(void **state)
{
    (void)state;
    /* sorted data with repeats in the key prefix */
    static const uint32_t sizes[] = {20000};
    void *buf;
    rs_source *src;
    tp_reader *r;
    input *in = write_and_open(sizes, 1, 3, 8, 64, &buf, &src, &r);
    char err[256];
    uint32_t G = 64, granules = tp_reader_meta(r)->granules;
    /* the data in part order, one batch */
    uint32_t keys[3] = {0, 1, 2};
    cb_batch *sorted;
    assert_int_equal(tp_reader_read(r, keys, 3, 0, granules, &sorted, err, sizeof(err)), 0);
    cb_batch *by_pos;
    assert_int_equal(cb_batch_create(&by_pos, sorted->n_rows, TG_NCOLS), 0);
    for (int k = 0; k < 3; k++)
        by_pos->cols[k] = cb_column_ref(sorted->cols[k]);
    uint64_t s = 12345;
    size_t pruned_total = 0, kept_total = 0;
    for (int t = 0; t < 300; t++) {
        cond_pool p = {0};
        const tp_cond *c = rand_cond(&p, by_pos, 0, &s);
        tp_granule_range *gr;
        size_t n;
        assert_int_equal(tp_prune(r, c, &gr, &n, err, sizeof(err)), 0);
        char *in_range = calloc(granules, 1);
        for (size_t i = 0; i < n; i++) {
            assert_true(gr[i].begin < gr[i].end && gr[i].end <= granules);
            if (i)
                assert_true(gr[i - 1].end < gr[i].begin); /* merged, disjoint */
            for (uint32_t g = gr[i].begin; g < gr[i].end; g++)
                in_range[g] = 1;
        }
        for (uint32_t row = 0; row < by_pos->n_rows; row++)
            if (row_matches(c, by_pos, row) && !in_range[row / G])
                fail_msg("condition %d: row %u matches but granule %u was pruned", t, row, row / G);
        for (uint32_t g = 0; g < granules; g++)
            in_range[g] ? kept_total++ : pruned_total++;
        free(in_range);
        free(gr);
        for (int i = 0; i < p.n; i++)
            cb_column_destroy(&p.vals[i]);
    }
    /* and it does prune: most granules of most conditions go */
    assert_true(pruned_total > kept_total / 2);
    /* a point on the whole key keeps at most a couple of granules */
    cond_pool p = {0};
    tp_cond eq[3];
    const tp_cond *kids[3];
    for (uint32_t k = 0; k < 3; k++) {
        tp__colbuf cb;
        tp__colbuf_init(&cb, &by_pos->cols[k]->info);
        assert_int_equal(tp__colbuf_append(&cb, by_pos->cols[k], 5000, 1), 0);
        assert_int_equal(tp__colbuf_to_column(&cb, NULL, &p.vals[k]), 0);
        tp__colbuf_deinit(&cb);
        eq[k] = (tp_cond){.op = TP_COND_EQ, .key_pos = k, .values = p.vals[k]};
        kids[k] = &eq[k];
    }
    tp_cond all = {.op = TP_COND_AND, .kids = kids, .n_kids = 3};
    tp_granule_range *gr;
    size_t n;
    assert_int_equal(tp_prune(r, &all, &gr, &n, err, sizeof(err)), 0);
    /* the granule of row 5000, and at most the granules where k1 or k2 change
     * (there k2 and k3 are not bounded) */
    uint32_t kept = 0;
    bool has = false;
    for (size_t i = 0; i < n; i++) {
        kept += gr[i].end - gr[i].begin;
        has |= gr[i].begin <= 5000 / G && gr[i].end > 5000 / G;
    }
    assert_true(has);
    assert_true(kept <= 4);
    free(gr);
    for (int k = 0; k < 3; k++)
        cb_column_destroy(&p.vals[k]);
    /* a type mismatch is an error, not a wrong answer */
    cb_column *bad;
    cb_typeinfo ti = {.type = CB_INT32};
    assert_int_equal(cb_column_create(&bad, &ti, NULL, 1), 0);
    tp_cond wrong = {.op = TP_COND_EQ, .key_pos = 0, .values = bad};
    assert_int_equal(tp_prune(r, &wrong, &gr, &n, err, sizeof(err)), -EINVAL);
    cb_column_destroy(&bad);
    cb_batch_destroy(&by_pos);
    cb_batch_destroy(&sorted);
    tp_reader_destroy(&r);
    rs_destroy(&src);
    free(buf);
    free_input(&in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_lz4_default_sizes),
        cmocka_unit_test(test_roundtrip_small_blocks_interleaved),
        cmocka_unit_test(test_roundtrip_zstd_and_none),
        cmocka_unit_test(test_dictionary_block_reads_dictionary),
        cmocka_unit_test(test_streaming_write_bounded_memory),
        cmocka_unit_test(test_flipped_bytes_and_truncation),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_prune_vs_brute_force),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
