/* SPDX-License-Identifier: Apache-2.0
 *
 * test_parquet_s3.c: the Parquet reader through the S3 byte-range source
 * (rangesrc.h rs_s3_open) against a real S3 server (npm s3rver 3, via the
 * harness): generated files uploaded, every value equal to DuckDB's reading of
 * the local copy, the footer in one ranged GET, a version change after open
 * surfacing as -ESTALE unchanged through the reader, a missing object named.
 */
#include "pq_ref.h"

#include "s3.h"
#include "s3_test_util.h"

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
static h_s3 *s3;
static s3_config cfg;
static char dir[4096];
static const char *bucket = H_S3_DEFAULT_BUCKET;

static int setup(void **state)
{
    (void)state;
    if (t_s3_setup(&env, &s3, &cfg, "test_parquet_s3", 3) < 0)
        return -1;
    h_env_path(env, dir, sizeof(dir), "files");
    return pqt_generate(env, dir);
}

static int teardown(void **state)
{
    (void)state;
    return t_s3_teardown(&env, s3);
}

static void upload(const char *name, const char *key)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s.parquet", dir, name);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &cfg), 0);
    s3_sync_put_args a = {.bucket = bucket, .key = key, .fd = fd, .size = (uint64_t)sb.st_size};
    s3_error err;
    int rc = s3_sync_put(s, &a, NULL, &err);
    if (rc < 0)
        fprintf(stderr, "upload %s: %s\n", key, err.message);
    assert_int_equal(rc, 0);
    s3_sync_destroy(&s);
    close(fd);
}

static void test_s3_matches_duckdb(void **state)
{
    (void)state;
    static const char *files[] = {"duck_zstd_v2", "duck_lz4_v1", "hy_enc_gzip", "duck_big",
                                  "duck_empty"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char key[256], err[RS_MSG_MAX];
        snprintf(key, sizeof(key), "data/%s.parquet", files[i]);
        upload(files[i], key);
        rs_source *src;
        int rc = rs_s3_open(&src, &cfg, bucket, key, err, sizeof(err));
        if (rc < 0)
            fprintf(stderr, "%s\n", err);
        assert_int_equal(rc, 0);
        assert_true(strstr(rs_name(src), key) != NULL);
        assert_true(rs_version(src)[0] != '\0');
        pq_file *f;
        rc = pq_file_open(&f, src, NULL, err, sizeof(err));
        if (rc < 0)
            fprintf(stderr, "%s\n", err);
        assert_int_equal(rc, 0);
        rs_stats st;
        rs_stats_get(src, &st);
        assert_int_equal(st.calls, 1); /* the footer: one ranged GET of the tail */
        char ref[4200];
        snprintf(ref, sizeof(ref), "%s/%s.ref", dir, files[i]);
        long got = pqt_compare(f, ref, NULL);
        assert_int_equal(got, pq_file_num_rows(f) * pq_file_num_columns(f));
        rs_stats_get(src, &st);
        fprintf(stderr, "%s: %ld values equal over S3, %llu ranges in %llu calls, %llu bytes\n",
                key, got, (unsigned long long)st.ranges, (unsigned long long)st.calls,
                (unsigned long long)st.bytes);
        pq_file_destroy(&f);
        rs_destroy(&src);
    }
}

static void test_s3_projection_many_ranges_in_flight(void **state)
{
    (void)state;
    upload("duck_uncompressed_v2", "data/proj.parquet");
    rs_source *src;
    char err[RS_MSG_MAX];
    assert_int_equal(rs_s3_open(&src, &cfg, bucket, "data/proj.parquet", err, sizeof(err)), 0);
    pq_file *f;
    assert_int_equal(pq_file_open(&f, src, NULL, err, sizeof(err)), 0);
    /* Every other column, never coalesced: many ranges per call. */
    int cols[16], n = 0;
    for (int c = 0; c < pq_file_num_columns(f) && n < 16; c += 2)
        cols[n++] = c;
    pq_read_opts o;
    pq_read_opts_init(&o);
    o.columns = cols;
    o.n_columns = (size_t)n;
    o.coalesce_gap = 1;
    char ref[4200];
    snprintf(ref, sizeof(ref), "%s/duck_uncompressed_v2.ref", dir);
    assert_int_equal(pqt_compare(f, ref, &o), (long)n * pq_file_num_rows(f));
    rs_stats st;
    rs_stats_get(src, &st);
    assert_int_equal(st.calls, 1 + pq_file_num_row_groups(f));
    assert_int_equal(st.ranges, 1 + (uint64_t)n * (uint64_t)pq_file_num_row_groups(f));
    pq_file_destroy(&f);
    rs_destroy(&src);
}

static void test_s3_version_change_is_stale(void **state)
{
    (void)state;
    upload("duck_snappy_v1", "data/changing.parquet");
    rs_source *src;
    char err[RS_MSG_MAX];
    assert_int_equal(rs_s3_open(&src, &cfg, bucket, "data/changing.parquet", err, sizeof(err)), 0);
    pq_file *f;
    assert_int_equal(pq_file_open(&f, src, NULL, err, sizeof(err)), 0);
    /* Overwritten after open: the pinned version is gone. */
    upload("duck_gzip_v1", "data/changing.parquet");
    pq_reader *r;
    assert_int_equal(pq_reader_create(&r, f, NULL, NULL, 0), 0);
    cb_batch *b = NULL;
    int rc = pq_reader_next(r, &b);
    fprintf(stderr, "after overwrite: rc %d: %s\n", rc, pq_reader_error(r));
    assert_int_equal(rc, -ESTALE);
    assert_null(b);
    assert_non_null(strstr(pq_reader_error(r), "changing.parquet"));
    pq_reader_destroy(&r);
    pq_file_destroy(&f);
    rs_destroy(&src);
}

static void test_s3_missing_object(void **state)
{
    (void)state;
    rs_source *src;
    char err[RS_MSG_MAX] = "";
    int rc = rs_s3_open(&src, &cfg, bucket, "data/no-such.parquet", err, sizeof(err));
    fprintf(stderr, "missing: rc %d: %s\n", rc, err);
    assert_int_equal(rc, -ENOENT);
    assert_null(src);
    assert_non_null(strstr(err, "no-such.parquet"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_s3_matches_duckdb),
        cmocka_unit_test(test_s3_projection_many_ranges_in_flight),
        cmocka_unit_test(test_s3_version_change_is_stale),
        cmocka_unit_test(test_s3_missing_object),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
