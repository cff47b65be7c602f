/* SPDX-License-Identifier: Apache-2.0
 *
 * test_parquet_duckdb.c: the Parquet reader (ingest/format/parquet/parquet.h) on files written
 * by DuckDB and hyparquet-writer (gen.mjs: every codec, pages v1 and v2, all
 * encodings, nulls in every type, empty files, one and many row groups),
 * every value compared with what DuckDB reads from the same file. Also: only
 * the requested column chunks are fetched and nearby ones coalesced, the
 * footer costs one read, row groups are pruned by statistics, a LIST column
 * reads as Arrays and a MAP is refused by name while the file's other columns
 * read, and damaged files give errors naming the file.
 * One generated folder for the whole file (group setup).
 */
#include "eng_types.h"
#include "pq_ref.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

static h_env *env;
static char dir[4096];

static int setup(void **state)
{
    (void)state;
    if (h_env_create(&env, "test_parquet_duckdb") < 0)
        return -1;
    h_env_path(env, dir, sizeof(dir), "files");
    return pqt_generate(env, dir);
}

static int teardown(void **state)
{
    (void)state;
    h_env_destroy(&env);
    return 0;
}

static void path_of(char *buf, size_t cap, const char *name, const char *ext)
{
    snprintf(buf, cap, "%s/%s.%s", dir, name, ext);
}

/* Opens <dir>/<name>.parquet; asserts success. */
static pq_file *open_file(const char *name, rs_source **src)
{
    char path[4200], err[PQ_MSG_MAX];
    path_of(path, sizeof(path), name, "parquet");
    int rc = rs_file_open(src, path, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    pq_file *f;
    rc = pq_file_open(&f, *src, NULL, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    return f;
}

static void test_every_file_matches_duckdb(void **state)
{
    (void)state;
    char **names;
    int n = pqt_manifest(dir, &names);
    assert_true(n >= 15);
    long total = 0;
    for (int i = 0; i < n; i++) {
        rs_source *src;
        pq_file *f = open_file(names[i], &src);
        char ref[4200];
        path_of(ref, sizeof(ref), names[i], "ref");
        long got = pqt_compare(f, ref, NULL);
        if (got < 0)
            fprintf(stderr, "%s differs from DuckDB (see above)\n", names[i]);
        assert_true(got >= 0);
        /* Every value of every column was compared. */
        assert_int_equal(got, pq_file_num_rows(f) * pq_file_num_columns(f));
        fprintf(stderr, "%-24s %8lld rows %3d columns %2d row groups: %ld values equal (%s)\n",
                names[i], (long long)pq_file_num_rows(f), pq_file_num_columns(f),
                pq_file_num_row_groups(f), got, pq_file_created_by(f));
        total += got;
        pq_file_destroy(&f);
        rs_destroy(&src);
        free(names[i]);
    }
    free(names);
    assert_true(total > 1000000);
}

static void test_plain_strings_match_duckdb(void **state)
{
    (void)state;
    static const char *files[] = {"duck_snappy_v1", "duck_zstd_v2", "hy_enc_snappy"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        rs_source *src;
        pq_file *f = open_file(files[i], &src);
        pq_read_opts o;
        pq_read_opts_init(&o);
        o.keep_dictionary = false;
        char ref[4200];
        path_of(ref, sizeof(ref), files[i], "ref");
        assert_true(pqt_compare(f, ref, &o) > 0);
        pq_file_destroy(&f);
        rs_destroy(&src);
    }
}

static void test_dictionary_kept_for_strings(void **state)
{
    (void)state;
    rs_source *src;
    pq_file *f = open_file("duck_snappy_v1", &src);
    int col = pq_file_find_column(f, "s_low");
    assert_true(col >= 0);
    pq_read_opts o;
    pq_read_opts_init(&o);
    o.columns = &col;
    o.n_columns = 1;
    pq_reader *r;
    assert_int_equal(pq_reader_create(&r, f, &o, NULL, 0), 0);
    cb_batch *b;
    assert_int_equal(pq_reader_next(r, &b), 1);
    const cb_column *c = b->cols[0];
    assert_non_null(c->dict);         /* indices, so a GROUP BY can use them */
    assert_int_equal(c->dict->n, 17); /* 'cat_0' .. 'cat_16' */
    assert_null(c->offsets);
    assert_true(c->null_count > 0);
    /* Materialising gives the same strings. */
    size_t l1, l2;
    const uint8_t *p1 = cb_column_bytes(c, 5, &l1);
    char before[64];
    snprintf(before, sizeof(before), "%.*s", (int)l1, (const char *)p1);
    assert_int_equal(cb_column_materialize(b->cols[0]), 0);
    const uint8_t *p2 = cb_column_bytes(b->cols[0], 5, &l2);
    assert_int_equal(l1, l2);
    assert_memory_equal(before, p2, l2);
    assert_null(b->cols[0]->dict);
    cb_batch_destroy(&b);
    pq_reader_destroy(&r);
    pq_file_destroy(&f);
    rs_destroy(&src);
}

static void test_only_requested_chunks_fetched(void **state)
{
    (void)state;
    rs_source *src;
    pq_file *f = open_file("duck_uncompressed_v1", &src);
    rs_stats st0;
    rs_stats_get(src, &st0);
    assert_int_equal(st0.calls, 1); /* the footer: one speculative tail read */

    int cols[2] = {pq_file_find_column(f, "i64"), pq_file_find_column(f, "d4")};
    pq_read_opts o;
    pq_read_opts_init(&o);
    o.columns = cols;
    o.n_columns = 2;
    o.coalesce_gap = 1; /* no coalescing across the columns in between */
    char ref[4200];
    path_of(ref, sizeof(ref), "duck_uncompressed_v1", "ref");
    assert_int_equal(pqt_compare(f, ref, &o), 2 * pq_file_num_rows(f));
    rs_stats st1;
    rs_stats_get(src, &st1);
    int nrg = pq_file_num_row_groups(f);
    assert_int_equal(st1.calls - st0.calls, nrg);       /* one batch of ranges per row group */
    assert_int_equal(st1.ranges - st0.ranges, 2 * nrg); /* two chunks, not coalesced */
    assert_true(st1.bytes - st0.bytes < rs_size(src) / 4);

    /* With the default gap the two chunks of a row group come in one range. */
    pq_read_opts_init(&o);
    o.columns = cols;
    o.n_columns = 2;
    pq_reader *r;
    assert_int_equal(pq_reader_create(&r, f, &o, NULL, 0), 0);
    cb_batch *b;
    while (pq_reader_next(r, &b) > 0)
        cb_batch_destroy(&b);
    pq_reader_stats rst;
    pq_reader_stats_get(r, &rst);
    assert_int_equal(rst.ranges_requested, 2 * nrg);
    assert_int_equal(rst.ranges_fetched, nrg);
    assert_int_equal(rst.row_groups_read, nrg);
    pq_reader_destroy(&r);
    pq_file_destroy(&f);
    rs_destroy(&src);
}

static void test_footer_larger_than_tail_read(void **state)
{
    (void)state;
    char path[4200], err[PQ_MSG_MAX];
    path_of(path, sizeof(path), "duck_gzip_v2", "parquet");
    rs_source *src;
    assert_int_equal(rs_file_open(&src, path, err, sizeof(err)), 0);
    pq_open_opts oo = {.footer_read = 64};
    pq_file *f;
    assert_int_equal(pq_file_open(&f, src, &oo, err, sizeof(err)), 0);
    rs_stats st;
    rs_stats_get(src, &st);
    assert_int_equal(st.calls, 2); /* the tail, then the rest of the footer */
    char ref[4200];
    path_of(ref, sizeof(ref), "duck_gzip_v2", "ref");
    assert_true(pqt_compare(f, ref, NULL) > 0);
    pq_file_destroy(&f);
    rs_destroy(&src);
}

static int count_batches(pq_file *f, const pq_pred *p, size_t n, pq_reader_stats *st)
{
    pq_read_opts o;
    pq_read_opts_init(&o);
    o.preds = p;
    o.n_preds = n;
    pq_reader *r;
    assert_int_equal(pq_reader_create(&r, f, &o, NULL, 0), 0);
    cb_batch *b;
    int k = 0;
    while (pq_reader_next(r, &b) > 0) {
        k++;
        cb_batch_destroy(&b);
    }
    pq_reader_stats_get(r, st);
    pq_reader_destroy(&r);
    return k;
}

static void test_row_groups_pruned_by_statistics(void **state)
{
    (void)state;
    rs_source *src;
    pq_file *f = open_file("duck_snappy_v1", &src);
    int nrg = pq_file_num_row_groups(f);
    assert_true(nrg >= 2); /* DuckDB rounds ROW_GROUP_SIZE 1000 up to its vectors */
    int id = pq_file_find_column(f, "id"), s_low = pq_file_find_column(f, "s_low");
    int s_high = pq_file_find_column(f, "s_high"), all_null = pq_file_find_column(f, "all_null");
    /* ids are 0..N-1 in order: each row group's bounds are its first and
     * last id. */
    int64_t first = 0;
    for (int g = 0; g < nrg; g++) {
        pq_stats s;
        assert_int_equal(pq_file_stats(f, g, id, &s), 0);
        assert_true(s.has_min && s.has_max);
        assert_int_equal(s.min.i, first);
        assert_int_equal(s.max.i, first + pq_file_row_group_rows(f, g) - 1);
        first += pq_file_row_group_rows(f, g);
    }
    pq_stats s;
    assert_int_equal(pq_file_stats(f, 0, s_low, &s), 0);
    assert_true(s.has_min && s.has_max);
    assert_int_equal(s.min.len, 5); /* "cat_0" */
    assert_memory_equal(s.min.bytes, "cat_0", 5);

    int64_t last_start = pq_file_num_rows(f) - pq_file_row_group_rows(f, nrg - 1);
    pq_reader_stats st;
    pq_pred ge = {.column = id, .op = PQ_GE, .value = {.i = last_start}};
    assert_int_equal(count_batches(f, &ge, 1, &st), 1);
    assert_int_equal(st.row_groups_pruned, nrg - 1);
    pq_pred gt = {.column = id, .op = PQ_GT, .value = {.i = last_start - 1}};
    assert_int_equal(count_batches(f, &gt, 1, &st), 1);
    pq_pred eq = {.column = id, .op = PQ_EQ, .value = {.i = 5}};
    assert_int_equal(count_batches(f, &eq, 1, &st), 1);
    pq_pred lt = {.column = id, .op = PQ_LT, .value = {.i = 0}};
    assert_int_equal(count_batches(f, &lt, 1, &st), 0);
    pq_pred le = {.column = id, .op = PQ_LE, .value = {.i = last_start}};
    assert_int_equal(count_batches(f, &le, 1, &st), nrg);
    pq_pred le2 = {.column = id, .op = PQ_LE, .value = {.i = last_start - 1}};
    assert_int_equal(count_batches(f, &le2, 1, &st), nrg - 1);
    pq_pred both[2] = {ge, {.column = id, .op = PQ_LT, .value = {.i = last_start}}};
    assert_int_equal(count_batches(f, both, 2, &st), 0);
    /* Strings by min_value/max_value: "zzz" sorts after every 'cat_*'. */
    pq_pred sgt = {
        .column = s_low, .op = PQ_GT, .value = {.bytes = (const uint8_t *)"zzz", .len = 3}};
    assert_int_equal(count_batches(f, &sgt, 1, &st), 0);
    pq_pred seq = {
        .column = s_low, .op = PQ_EQ, .value = {.bytes = (const uint8_t *)"cat_3", .len = 5}};
    assert_int_equal(count_batches(f, &seq, 1, &st), nrg);
    /* md5 hex strings never sort below "0". */
    pq_pred hlt = {
        .column = s_high, .op = PQ_LT, .value = {.bytes = (const uint8_t *)"0", .len = 1}};
    assert_int_equal(count_batches(f, &hlt, 1, &st), 0);
    /* A column with nothing but nulls. */
    pq_pred nn = {.column = all_null, .op = PQ_NOT_NULL};
    assert_int_equal(count_batches(f, &nn, 1, &st), 0);
    pq_pred isn = {.column = all_null, .op = PQ_IS_NULL};
    assert_int_equal(count_batches(f, &isn, 1, &st), nrg);
    pq_pred anyc = {.column = all_null, .op = PQ_EQ, .value = {.i = 1}};
    assert_int_equal(count_batches(f, &anyc, 1, &st), 0);

    /* A pruned read still returns the right rows. */
    pq_read_opts o;
    pq_read_opts_init(&o);
    o.preds = &ge;
    o.n_preds = 1;
    char ref[4200];
    path_of(ref, sizeof(ref), "duck_snappy_v1", "ref");
    assert_int_equal(pqt_compare(f, ref, &o),
                     pq_file_row_group_rows(f, nrg - 1) * pq_file_num_columns(f));
    pq_file_destroy(&f);
    rs_destroy(&src);
}

static void test_row_group_window(void **state)
{
    (void)state;
    rs_source *src;
    pq_file *f = open_file("hy_enc_gzip", &src);
    int nrg = pq_file_num_row_groups(f);
    assert_true(nrg >= 3);
    pq_read_opts o;
    pq_read_opts_init(&o);
    o.rg_begin = 1;
    o.rg_end = 2;
    char ref[4200];
    path_of(ref, sizeof(ref), "hy_enc_gzip", "ref");
    assert_int_equal(pqt_compare(f, ref, &o),
                     pq_file_row_group_rows(f, 1) * pq_file_num_columns(f));
    pq_file_destroy(&f);
    rs_destroy(&src);
}

/* A file with nested columns opens; its flat column reads, and its LIST (of
 * int32, DuckDB's three levels) as one encoded Array per row; the MAP is
 * listed, says what it is, and a reader of it is refused naming it. */
static void test_nested_columns(void **state)
{
    (void)state;
    char path[4200], err[PQ_MSG_MAX];
    snprintf(path, sizeof(path), "%s/nested.parquet", dir);
    rs_source *src;
    assert_int_equal(rs_file_open(&src, path, err, sizeof(err)), 0);
    pq_file *f;
    assert_int_equal(pq_file_open(&f, src, NULL, err, sizeof(err)), 0);
    assert_int_equal(pq_file_num_columns(f), 3);
    int a = pq_file_find_column(f, "a"), l = pq_file_find_column(f, "l"),
        m = pq_file_find_column(f, "m");
    assert_int_equal(a, 0);
    assert_int_equal(l, 1);
    assert_int_equal(m, 2);
    assert_null(pq_file_column(f, a)->nested);
    assert_null(pq_file_column(f, l)->nested);
    assert_int_equal(pq_file_column(f, l)->type.type, CB_LIST);
    assert_int_equal(pq_file_column(f, l)->type.elem, CB_INT32);
    assert_non_null(strstr(pq_file_column(f, m)->nested, "MAP"));
    pq_read_opts o;
    pq_read_opts_init(&o);
    int cols[2] = {a, l};
    o.columns = cols;
    o.n_columns = 2;
    pq_reader *r;
    assert_int_equal(pq_reader_create(&r, f, &o, err, sizeof(err)), 0);
    cb_batch *b;
    assert_int_equal(pq_reader_next(r, &b), 1);
    assert_int_equal(b->n_rows, 1);
    assert_int_equal(((const int32_t *)b->cols[0]->values)[0], 1);
    /* [1, 2]: count 2, then each element (nullable: a flag byte) as 8 bytes */
    ex_type at = ex_type_of_column(&b->cols[1]->info, false);
    size_t n;
    const uint8_t *p = cb_column_bytes(b->cols[1], 0, &n);
    ex_bytes txt = {0};
    assert_int_equal(ex_arr_text(&at, p, (uint32_t)n, false, &txt), 0);
    assert_int_equal(txt.n, 5);
    assert_memory_equal(txt.p, "[1,2]", 5);
    ex_bytes_free(&txt);
    cb_batch_destroy(&b);
    pq_reader_destroy(&r);
    o.columns = &m;
    o.n_columns = 1;
    assert_int_equal(pq_reader_create(&r, f, &o, err, sizeof(err)), -ENOTSUP);
    fprintf(stderr, "nested: %s\n", err);
    assert_non_null(strstr(err, "nested.parquet"));
    assert_non_null(strstr(err, "'m'"));
    assert_null(r);
    pq_file_destroy(&f);
    rs_destroy(&src);
}

/* Copies a generated file, lets `damage` change the bytes, writes it back. */
static void write_damaged(const char *name, const char *out, void (*damage)(uint8_t *, size_t *))
{
    char path[4200];
    path_of(path, sizeof(path), name, "parquet");
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    size_t n = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *buf = malloc(n);
    assert_int_equal(fread(buf, 1, n, fp), n);
    fclose(fp);
    damage(buf, &n);
    fp = fopen(out, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(buf, 1, n, fp), n);
    fclose(fp);
    free(buf);
}

static void dmg_magic(uint8_t *b, size_t *n)
{
    memcpy(b + *n - 4, "PAR2", 4);
}
static void dmg_truncate(uint8_t *b, size_t *n)
{
    (void)b;
    *n -= 100;
}
static void dmg_footer_len(uint8_t *b, size_t *n)
{
    uint32_t l = (uint32_t)*n;
    memcpy(b + *n - 8, &l, 4);
}
static void dmg_footer_bytes(uint8_t *b, size_t *n)
{
    uint32_t l;
    memcpy(&l, b + *n - 8, 4);
    memset(b + *n - 8 - l + l / 3, 0xff, 24);
}
static void dmg_tiny(uint8_t *b, size_t *n)
{
    (void)b;
    *n = 10;
}

/* Opens and reads everything; returns the first error (or 0) with err. */
static int read_all(const char *path, char *err, size_t errlen)
{
    rs_source *src;
    int rc = rs_file_open(&src, path, err, errlen);
    if (rc < 0)
        return rc;
    pq_file *f;
    rc = pq_file_open(&f, src, NULL, err, errlen);
    if (rc == 0) {
        pq_reader *r;
        rc = pq_reader_create(&r, f, NULL, err, errlen);
        if (rc == 0) {
            cb_batch *b;
            while ((rc = pq_reader_next(r, &b)) > 0)
                cb_batch_destroy(&b);
            if (rc < 0)
                snprintf(err, errlen, "%s", pq_reader_error(r));
            pq_reader_destroy(&r);
        }
        pq_file_destroy(&f);
    }
    rs_destroy(&src);
    return rc;
}

static void test_malformed_files_name_the_file(void **state)
{
    (void)state;
    static const struct {
        const char *what;
        void (*damage)(uint8_t *, size_t *);
        const char *expect;
    } cases[] = {
        {"bad magic", dmg_magic, "PAR1"},
        {"truncated", dmg_truncate, "PAR1"},
        {"footer length lies", dmg_footer_len, "footer length"},
        {"footer garbage", dmg_footer_bytes, ""},
        {"too short", dmg_tiny, "12"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[4200], err[PQ_MSG_MAX] = "";
        snprintf(out, sizeof(out), "%s/damaged-%zu.parquet", dir, i);
        write_damaged("duck_snappy_v1", out, cases[i].damage);
        int rc = read_all(out, err, sizeof(err));
        fprintf(stderr, "%s: rc %d: %s\n", cases[i].what, rc, err);
        assert_true(rc < 0);
        assert_non_null(strstr(err, out));
        assert_non_null(strstr(err, cases[i].expect));
    }
}

/* Overwrites bytes inside column chunks: every outcome but a crash (or an
 * out-of-bounds read, under ASan) is fine; an error names the file and the
 * column. */
static void test_damaged_pages_fail_cleanly(void **state)
{
    (void)state;
    static const char *files[] = {"duck_snappy_v1", "duck_zstd_v2",         "duck_gzip_v1",
                                  "duck_lz4_v2",    "duck_uncompressed_v2", "hy_enc_snappy"};
    int errors = 0;
    for (size_t fi = 0; fi < sizeof(files) / sizeof(files[0]); fi++) {
        char src_path[4200];
        path_of(src_path, sizeof(src_path), files[fi], "parquet");
        struct stat sb;
        assert_int_equal(stat(src_path, &sb), 0);
        for (int k = 1; k <= 24; k++) {
            char out[4200], err[PQ_MSG_MAX] = "";
            snprintf(out, sizeof(out), "%s/pagedmg.parquet", dir);
            FILE *fp = fopen(src_path, "rb");
            uint8_t *buf = malloc((size_t)sb.st_size);
            assert_int_equal(fread(buf, 1, (size_t)sb.st_size, fp), (size_t)sb.st_size);
            fclose(fp);
            /* Spots spread over the data part (not the footer). */
            size_t at = 4 + (size_t)((uint64_t)(sb.st_size / 2) * (uint64_t)k / 25);
            for (int j = 0; j < 8; j++)
                buf[at + (size_t)j * 7] ^= (uint8_t)(0x5a + j * 13);
            fp = fopen(out, "wb");
            assert_int_equal(fwrite(buf, 1, (size_t)sb.st_size, fp), (size_t)sb.st_size);
            fclose(fp);
            free(buf);
            int rc = read_all(out, err, sizeof(err));
            if (rc < 0) {
                errors++;
                assert_non_null(strstr(err, out));
                assert_non_null(strstr(err, "column '"));
            }
        }
    }
    fprintf(stderr, "damaged pages: %d of %zu reads failed with an error naming the column\n",
            errors, 24 * sizeof(files) / sizeof(files[0]));
    assert_true(errors > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_file_matches_duckdb),
        cmocka_unit_test(test_plain_strings_match_duckdb),
        cmocka_unit_test(test_dictionary_kept_for_strings),
        cmocka_unit_test(test_only_requested_chunks_fetched),
        cmocka_unit_test(test_footer_larger_than_tail_read),
        cmocka_unit_test(test_row_groups_pruned_by_statistics),
        cmocka_unit_test(test_row_group_window),
        cmocka_unit_test(test_nested_columns),
        cmocka_unit_test(test_malformed_files_name_the_file),
        cmocka_unit_test(test_damaged_pages_fail_cleanly),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
