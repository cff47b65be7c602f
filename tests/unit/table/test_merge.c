/* SPDX-License-Identifier: Apache-2.0
 *
 * test_merge.c: the merge selector (ingest/table/merge.h) on synthetic part
 * lists (balanced and unbalanced ranges, the limits on parts and bytes, a
 * simulated steady insert stream whose part count must stay bounded while
 * merges take time), and the k-way merge in memory: the output is sorted and
 * holds exactly the input rows, memory stays at a granule per input, and
 * ReplacingMergeTree keeps one row per key (the greatest version, else the
 * last inserted).
 */
#include "merge.h"
#include "tp_int.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static void test_select_basics(void **state)
{
    (void)state;
    tm_settings s;
    tm_settings_init(&s);
    tm_range r;
    uint64_t one[1] = {MiB};
    assert_int_equal(tm_select(one, 1, &s, &r), 0);
    /* five equal small parts: worth merging */
    uint64_t eq[5] = {MiB, MiB, MiB, MiB, MiB};
    assert_int_equal(tm_select(eq, 5, &s, &r), 1);
    assert_true(r.end - r.begin >= 2);
    /* a big part beside a small one: not balanced enough */
    uint64_t unb[2] = {10 * GiB, MiB};
    assert_int_equal(tm_select(unb, 2, &s, &r), 0);
    /* ... but the small ones after it merge among themselves */
    uint64_t mix[6] = {10 * GiB, MiB, MiB, MiB, MiB, MiB};
    assert_int_equal(tm_select(mix, 6, &s, &r), 1);
    assert_true(r.begin >= 1);
    /* limits: never more than 100 parts or 150 GiB */
    uint64_t *many = malloc(300 * sizeof(uint64_t));
    for (int i = 0; i < 300; i++)
        many[i] = 3 * GiB;
    assert_int_equal(tm_select(many, 300, &s, &r), 1);
    uint64_t sum = 0;
    for (size_t i = r.begin; i < r.end; i++)
        sum += many[i];
    assert_true(r.end - r.begin <= 100);
    assert_true(sum <= 150 * GiB);
    for (int i = 0; i < 300; i++)
        many[i] = 100 * MiB;
    assert_int_equal(tm_select(many, 300, &s, &r), 1);
    assert_true(r.end - r.begin <= 100);
    free(many);
    /* two parts of 200 GiB: over the byte limit */
    uint64_t huge[2] = {200 * GiB, 200 * GiB};
    assert_int_equal(tm_select(huge, 2, &s, &r), 0);
}

/* A partition under a steady stream of 1 MiB inserts; merges take time
 * (rewriting 40 MiB per tick) and at most 2 run at once; parts being merged
 * are not offered to the selector. */
typedef struct {
    uint64_t size;
    int merge; /* -1: idle, else the merge it belongs to */
} sim_part;

static void test_simulated_insert_stream_stays_bounded(void **state)
{
    (void)state;
    tm_settings s;
    tm_settings_init(&s);
    sim_part *p = calloc(20000, sizeof(sim_part));
    size_t n = 0, max_n = 0, merges_done = 0;
    struct {
        bool on;
        double left;
    } m[2] = {{0}};
    uint64_t written = 0, inserted = 0;
    const int ticks = 8000;
    for (int tick = 0; tick < ticks; tick++) {
        p[n++] = (sim_part){MiB + (uint64_t)(tick % 7) * 100000, -1};
        inserted += p[n - 1].size;
        /* progress merges; a finished one replaces its range by one part */
        for (int k = 0; k < 2; k++) {
            if (!m[k].on || (m[k].left -= 40.0 * MiB) > 0)
                continue;
            size_t a = 0;
            while (p[a].merge != k)
                a++;
            size_t b = a;
            uint64_t sum = 0;
            while (b < n && p[b].merge == k)
                sum += p[b++].size;
            p[a] = (sim_part){sum, -1};
            memmove(&p[a + 1], &p[b], (n - b) * sizeof(sim_part));
            n -= b - a - 1;
            m[k].on = false;
            merges_done++;
        }
        /* start merges on idle runs */
        for (int k = 0; k < 2; k++) {
            if (m[k].on)
                continue;
            bool found = false;
            tm_range best = {0};
            size_t best_at = 0;
            for (size_t i = 0; i < n;) {
                if (p[i].merge >= 0) {
                    i++;
                    continue;
                }
                size_t j = i;
                uint64_t sizes[20000];
                while (j < n && p[j].merge < 0) {
                    sizes[j - i] = p[j].size;
                    j++;
                }
                tm_range r;
                /* the partition's whole count lowers the base */
                tm_settings s2 = s;
                if (tm_select(sizes, j - i, &s2, &r) && (!found || r.score < best.score)) {
                    best = r;
                    best_at = i;
                    found = true;
                }
                i = j;
            }
            if (!found)
                continue;
            uint64_t sum = 0;
            for (size_t i = best_at + best.begin; i < best_at + best.end; i++) {
                p[i].merge = k;
                sum += p[i].size;
            }
            assert_true(best.end - best.begin <= 100);
            m[k].on = true;
            m[k].left = (double)sum;
            written += sum;
        }
        if (n > max_n)
            max_n = n;
    }
    printf("simulation: %d inserts, %zu merges, max %zu parts, %zu at the end, write "
           "amplification %.2f\n",
           ticks, merges_done, max_n, n, (double)written / (double)inserted);
    assert_true(merges_done > 100);
    assert_true(max_n <= 60);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += p[i].size;
    assert_true(total == inserted);
    free(p);
}

/* ---- the merge ---------------------------------------------------------------- */

static const tp_column_def mcols[3] = {
    {.name = "k", .info = {.type = CB_INT32}, .codec = TP_CODEC_LZ4},
    {.name = "ver", .info = {.type = CB_UINT32}, .codec = TP_CODEC_LZ4},
    {.name = "tag", .info = {.type = CB_STRING}, .nullable = true, .codec = TP_CODEC_LZ4},
};
static const uint32_t mkey[1] = {0};

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* A part of n rows with sorted keys in [0, range), ver random, tag "p<i>". */
static void *make_part(int idx, uint32_t n, int32_t range, uint64_t seed, size_t *len,
                       int32_t **keys_out, uint32_t **vers_out)
{
    uint64_t s = seed;
    int32_t *keys = malloc(n * sizeof(int32_t));
    uint32_t *vers = malloc(n * sizeof(uint32_t));
    for (uint32_t i = 0; i < n; i++)
        keys[i] = (int32_t)(rnd(&s) % (uint64_t)range);
    qsort(keys, n, sizeof(int32_t), cmp_i32);
    cb_batch *b;
    assert_int_equal(cb_batch_create(&b, n, 3), 0);
    for (int c = 0; c < 3; c++)
        assert_int_equal(cb_column_create(&b->cols[c], &mcols[c].info, mcols[c].name, n), 0);
    char tag[16];
    int tl = snprintf(tag, sizeof(tag), "p%d", idx);
    assert_int_equal(cb_column_reserve_data(b->cols[2], (size_t)n * (size_t)tl), 0);
    for (uint32_t i = 0; i < n; i++) {
        vers[i] = (uint32_t)(rnd(&s) % 5);
        ((int32_t *)b->cols[0]->values)[i] = keys[i];
        ((uint32_t *)b->cols[1]->values)[i] = vers[i];
        memcpy(b->cols[2]->data + (size_t)i * (size_t)tl, tag, (size_t)tl);
        b->cols[2]->offsets[i + 1] = (i + 1) * (uint32_t)tl;
    }
    tp_writer_opts o = {.part_name = "in",
                        .cols = mcols,
                        .n_cols = 3,
                        .key_cols = mkey,
                        .n_key = 1,
                        .index_granularity = 256,
                        .input_sorted = true};
    tp_writer *w;
    char err[256];
    assert_int_equal(tp_writer_create(&w, &o, err, sizeof(err)), 0);
    assert_int_equal(tp_writer_add(w, b, err, sizeof(err)), 0);
    void *buf;
    assert_int_equal(tp_writer_finish(w, NULL, &buf, len, err, sizeof(err)), 0);
    tp_writer_destroy(&w);
    cb_batch_destroy(&b);
    *keys_out = keys;
    *vers_out = vers;
    return buf;
}

typedef struct {
    void *buf[8];
    size_t len[8];
    rs_source *src[8];
    tp_reader *r[8];
    int32_t *keys[8];
    uint32_t *vers[8];
    uint32_t n[8];
    int k;
} inputs;

static void open_inputs(inputs *in, int k, uint32_t rows, int32_t range)
{
    char err[256];
    in->k = k;
    for (int i = 0; i < k; i++) {
        in->n[i] = rows + (uint32_t)i * 37;
        in->buf[i] = make_part(i, in->n[i], range, 1000 + (uint64_t)i, &in->len[i], &in->keys[i],
                               &in->vers[i]);
        assert_int_equal(tp_mem_source_create(&in->src[i], in->buf[i], in->len[i], "in"), 0);
        assert_int_equal(tp_reader_open(&in->r[i], in->src[i], "in", err, sizeof(err)), 0);
    }
}

static void close_inputs(inputs *in)
{
    for (int i = 0; i < in->k; i++) {
        tp_reader_destroy(&in->r[i]);
        rs_destroy(&in->src[i]);
        free(in->buf[i]);
        free(in->keys[i]);
        free(in->vers[i]);
    }
}

static cb_batch *merge_all(inputs *in, bool replacing, int32_t version_col, tm_merge_stats *st)
{
    tp_writer_opts o = {.part_name = "out",
                        .cols = mcols,
                        .n_cols = 3,
                        .key_cols = mkey,
                        .n_key = 1,
                        .index_granularity = 256,
                        .input_sorted = true};
    tp_writer *w;
    char err[256];
    assert_int_equal(tp_writer_create(&w, &o, err, sizeof(err)), 0);
    tm_merge_opts mo = {.inputs = in->r,
                        .n_inputs = (size_t)in->k,
                        .replacing = replacing,
                        .version_col = version_col,
                        .batch_rows = 1000,
                        .out = w};
    if (tm_merge(&mo, st, err, sizeof(err)) < 0)
        fail_msg("merge: %s", err);
    void *buf;
    size_t len;
    assert_int_equal(tp_writer_finish(w, NULL, &buf, &len, err, sizeof(err)), 0);
    tp_writer_destroy(&w);
    rs_source *src;
    tp_reader *r;
    assert_int_equal(tp_mem_source_create(&src, buf, len, "out"), 0);
    assert_int_equal(tp_reader_open(&r, src, "out", err, sizeof(err)), 0);
    uint32_t cols[3] = {0, 1, 2};
    cb_batch *b;
    assert_int_equal(
        tp_reader_read(r, cols, 3, 0, tp_reader_meta(r)->granules, &b, err, sizeof(err)), 0);
    tp_reader_destroy(&r);
    rs_destroy(&src);
    free(buf);
    return b;
}

static void test_kway_merge(void **state)
{
    (void)state;
    inputs in = {0};
    open_inputs(&in, 5, 20000, 50000);
    tm_merge_stats st;
    cb_batch *b = merge_all(&in, false, -1, &st);
    uint64_t want_rows = 0, want_sum = 0, got_sum = 0;
    for (int i = 0; i < in.k; i++) {
        want_rows += in.n[i];
        for (uint32_t r = 0; r < in.n[i]; r++)
            want_sum += (uint64_t)(uint32_t)in.keys[i][r] * 31 + in.vers[i][r];
    }
    assert_int_equal(b->n_rows, want_rows);
    assert_int_equal(st.rows_in, want_rows);
    assert_int_equal(st.rows_out, want_rows);
    const int32_t *k = b->cols[0]->values;
    const uint32_t *v = b->cols[1]->values;
    for (uint32_t r = 0; r < b->n_rows; r++) {
        if (r)
            assert_true(k[r - 1] <= k[r]);
        got_sum += (uint64_t)(uint32_t)k[r] * 31 + v[r];
    }
    assert_true(got_sum == want_sum);
    /* a granule of each input and one output batch, never whole parts */
    assert_true(st.peak_batch_bytes < 5 * 256 * 16 + 64 * 1024);
    cb_batch_destroy(&b);
    close_inputs(&in);
}

/* Brute force: per key the row ReplacingMergeTree keeps (input order is
 * insert order; within an input, row order). */
static void test_replacing(void **state)
{
    (void)state;
    for (int with_version = 0; with_version < 2; with_version++) {
        inputs in = {0};
        open_inputs(&in, 4, 3000, 2000); /* many duplicate keys */
        int32_t range = 2000;
        int *best_part = malloc(range * sizeof(int));
        uint32_t *best_ver = malloc(range * sizeof(uint32_t));
        for (int32_t x = 0; x < range; x++)
            best_part[x] = -1;
        for (int i = 0; i < in.k; i++)
            for (uint32_t r = 0; r < in.n[i]; r++) {
                int32_t key = in.keys[i][r];
                if (best_part[key] < 0 || !with_version || in.vers[i][r] >= best_ver[key]) {
                    best_part[key] = i;
                    best_ver[key] = in.vers[i][r];
                }
            }
        tm_merge_stats st;
        cb_batch *b = merge_all(&in, true, with_version ? 1 : -1, &st);
        uint32_t distinct = 0;
        for (int32_t x = 0; x < range; x++)
            distinct += best_part[x] >= 0;
        assert_int_equal(b->n_rows, distinct);
        const int32_t *k = b->cols[0]->values;
        const uint32_t *v = b->cols[1]->values;
        for (uint32_t r = 0; r < b->n_rows; r++) {
            if (r)
                assert_true(k[r - 1] < k[r]); /* one row per key */
            size_t tl;
            const uint8_t *tag = cb_column_bytes(b->cols[2], r, &tl);
            char want[8];
            snprintf(want, sizeof(want), "p%d", best_part[k[r]]);
            if (tl != strlen(want) || memcmp(tag, want, tl) != 0 ||
                (with_version && v[r] != best_ver[k[r]]))
                fail_msg("key %d: kept %.*s ver %u, want %s ver %u", k[r], (int)tl, tag, v[r], want,
                         best_ver[k[r]]);
        }
        cb_batch_destroy(&b);
        free(best_part);
        free(best_ver);
        close_inputs(&in);
    }
}

static void test_merge_refuses_mismatched_inputs(void **state)
{
    (void)state;
    inputs in = {0};
    open_inputs(&in, 2, 100, 100);
    tp_column_def other[3];
    memcpy(other, mcols, sizeof(other));
    other[1].info.type = CB_INT64;
    tp_writer_opts o = {.part_name = "x",
                        .cols = other,
                        .n_cols = 3,
                        .key_cols = mkey,
                        .n_key = 1,
                        .input_sorted = true};
    tp_writer *w;
    char err[256];
    assert_int_equal(tp_writer_create(&w, &o, err, sizeof(err)), 0);
    void *buf;
    size_t len;
    cb_batch *b;
    assert_int_equal(cb_batch_create(&b, 1, 3), 0);
    for (int c = 0; c < 3; c++)
        assert_int_equal(cb_column_create(&b->cols[c], &other[c].info, other[c].name, 1), 0);
    assert_int_equal(tp_writer_add(w, b, err, sizeof(err)), 0);
    assert_int_equal(tp_writer_finish(w, NULL, &buf, &len, err, sizeof(err)), 0);
    cb_batch_destroy(&b);
    tp_writer_destroy(&w);
    rs_source *src;
    tp_reader *r2;
    assert_int_equal(tp_mem_source_create(&src, buf, len, "x"), 0);
    assert_int_equal(tp_reader_open(&r2, src, "x", err, sizeof(err)), 0);
    tp_reader_destroy(&in.r[1]);
    in.r[1] = r2;
    assert_int_equal(tp_writer_create(&w, &o, err, sizeof(err)), 0);
    tm_merge_opts mo = {.inputs = in.r, .n_inputs = 2, .out = w};
    assert_int_equal(tm_merge(&mo, NULL, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "input 1"));
    tp_writer_destroy(&w);
    close_inputs(&in);
    rs_destroy(&src);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_select_basics),
        cmocka_unit_test(test_simulated_insert_stream_stays_bounded),
        cmocka_unit_test(test_kway_merge),
        cmocka_unit_test(test_replacing),
        cmocka_unit_test(test_merge_refuses_mismatched_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
