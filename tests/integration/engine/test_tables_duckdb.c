/* SPDX-License-Identifier: Apache-2.0
 *
 * test_tables_duckdb.c: every query shape that works on files works on a
 * MergeTree table. gen.mjs writes the posts dataset and, for each query of
 * its table, DuckDB's answer; here the posts are loaded into a table on the
 * harness S3 server (INSERT INTO posts SELECT * FROM file(...), several
 * parts over several partitions), and each query that reads posts.parquet
 * runs again on the table, with 1 and 2 threads, and must give DuckDB's
 * answer. The primary index must prune: a query on a key range reads fewer
 * rows than the table holds, with the same answer as the file gives.
 */
#include "duck_compare.h"
#include "eng.h"
#include "harness.h"
#include "s3_test_util.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static h_env *env;
static h_s3 *s3;
static tb_wh wh;
static char dir[4096];

static int run(const char *sql, char **out, char *err, size_t errlen, int threads, eng_result *res)
{
    return dc_run(&(eng_ctx){.format = ENG_FMT_TSV, .warehouse = &wh}, sql, threads, out, res, err,
                  errlen);
}

static void ok(const char *sql)
{
    char *out = NULL, err[ENG_MSG_MAX];
    int rc = run(sql, &out, err, sizeof(err), 2, NULL);
    if (rc < 0)
        fprintf(stderr, "failed: %s\n  %s\n", err, sql);
    assert_int_equal(rc, 0);
    free(out);
}

static int setup(void **state)
{
    (void)state;
    if (dc_setup(&env, "test_tables_duckdb", dir, sizeof(dir)) < 0)
        return -1;
    int rc = h_s3_start(env, &s3, NULL);
    if (rc == -ENOPKG)
        h_skip(h_last_error());
    if (rc < 0)
        return -1;
    s3_config cfg;
    t_s3_config(&cfg, h_s3_endpoint(s3), NULL, NULL);
    char err[256];
    if (tb_wh_init(&wh, "s3://" H_S3_DEFAULT_BUCKET "/wh/", &cfg, err, sizeof(err)) < 0)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    h_env_destroy(&env);
    return 0;
}

/* Replaces every `from` in s by `to` (malloc'ed); NULL when there is none. */
static char *replace_all(const char *s, const char *from, const char *to)
{
    if (!strstr(s, from))
        return NULL;
    size_t fl = strlen(from), tl = strlen(to), n = 0;
    for (const char *p = strstr(s, from); p; p = strstr(p + fl, from))
        n++;
    char *o = malloc(strlen(s) + n * tl + 1), *w = o;
    assert_non_null(o);
    for (const char *p = s;;) {
        const char *q = strstr(p, from);
        if (!q) {
            strcpy(w, p);
            break;
        }
        memcpy(w, p, (size_t)(q - p));
        w += q - p;
        memcpy(w, to, tl);
        w += tl;
        p = q + fl;
    }
    return o;
}

static void test_file_queries_on_a_table(void **state)
{
    (void)state;
    char sql[16384], file[4400];
    snprintf(file, sizeof(file), "file('%s/posts.parquet')", dir);
    ok("CREATE TABLE posts (Id Int64, PostTypeId Int32, CreationDate DateTime64(6), "
       "Score Nullable(Int32), ViewCount Nullable(Int64), OwnerUserId Nullable(Int64), "
       "OwnerDisplayName Nullable(String), Tags Nullable(String), Title Nullable(String), "
       "Day Nullable(Date32), Ratio Nullable(Float64)) ENGINE = MergeTree "
       "ORDER BY (PostTypeId, CreationDate, Id) PARTITION BY toYear(CreationDate) "
       "SETTINGS index_granularity = 2048");
    snprintf(sql, sizeof(sql),
             "INSERT INTO posts SELECT * FROM %s SETTINGS "
             "max_insert_threads = 2, min_insert_block_size_rows = 60000",
             file);
    ok(sql);
    /* several parts over several partitions */
    char *out = NULL, err[ENG_MSG_MAX];
    assert_int_equal(run("SELECT count(), uniqExact(partition), sum(rows) FROM system.parts "
                         "WHERE table = 'posts' AND active",
                         &out, err, sizeof(err), 1, NULL),
                     0);
    unsigned parts, parts_p, rows;
    assert_int_equal(sscanf(out, "%u\t%u\t%u", &parts, &parts_p, &rows), 3);
    assert_true(parts >= 6);
    assert_true(parts_p >= 4);
    assert_int_equal(rows, 200000);
    free(out);

    char *cases = dc_cases(dir);
    int n = 0, failed = 0;
    for (char *line = strtok(cases, "\n"); line; line = strtok(NULL, "\n")) {
        dc_case c;
        dc_case_parse(line, &c);
        char *q = replace_all(c.sql, file, "posts");
        if (!q)
            continue; /* another dataset */
        for (int threads = 1; threads <= 2; threads++)
            failed += !dc_run_matches(&(eng_ctx){.format = ENG_FMT_TSV, .warehouse = &wh}, dir,
                                      c.name, "query on the table", q, threads,
                                      strcmp(c.flags, "sorted") == 0, false);
        free(q);
        n++;
    }
    free(cases);
    fprintf(stderr, "%d queries on the table compared with DuckDB, %d mismatches\n", n, failed);
    assert_true(n >= 20);
    assert_int_equal(failed, 0);

    /* the primary index prunes: the same answer as the file, fewer rows read */
    const char *where[] = {
        "PostTypeId = 2 AND CreationDate < '2015-03-01 00:00:00'",
        "PostTypeId IN (1, 3) AND CreationDate >= '2018-06-01 00:00:00'",
        "(PostTypeId = 1 AND CreationDate < '2015-02-01 00:00:00') OR PostTypeId = 3 AND "
        "CreationDate BETWEEN '2016-01-01 00:00:00' AND '2016-01-15 00:00:00'",
    };
    for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
        char *a = NULL, *b = NULL;
        eng_result ra, rb;
        snprintf(sql, sizeof(sql),
                 "SELECT count(), sum(Score), min(Id), max(Id) FROM posts "
                 "WHERE %s",
                 where[i]);
        assert_int_equal(run(sql, &a, err, sizeof(err), 2, &ra), 0);
        snprintf(sql, sizeof(sql),
                 "SELECT count(), sum(Score), min(Id), max(Id) FROM %s "
                 "WHERE %s",
                 file, where[i]);
        assert_int_equal(run(sql, &b, err, sizeof(err), 2, &rb), 0);
        assert_string_equal(a, b);
        fprintf(stderr, "pruned %zu: %llu of 200000 rows read\n", i,
                (unsigned long long)ra.rows_read);
        assert_true(ra.rows_read < 200000 / 2);
        if (i == 0) /* one partition, PostTypeId 2, two months: a few granules of 2048 */
            assert_true(ra.rows_read <= 4 * 2048);
        free(a);
        free(b);
    }
}

/* Sorting key expressions: ORDER BY (PostTypeId, toDate(CreationDate)),
 * ORDER BY (toYYYYMM(CreationDate), Id) PRIMARY KEY toYYYYMM(CreationDate).
 * Every WHERE gives the file's answer (the file's answers
 * are DuckDB's, above); the index prunes on a WHERE on the key expression
 * itself and on its column through the non-decreasing toDate / toYYYYMM,
 * also after a merge. */
static void test_key_expressions(void **state)
{
    (void)state;
    static const char *const cols =
        "(Id Int64, PostTypeId Int32, CreationDate DateTime64(6), Score Nullable(Int32), "
        "ViewCount Nullable(Int64), OwnerUserId Nullable(Int64), OwnerDisplayName "
        "Nullable(String), Tags Nullable(String), Title Nullable(String), Day Nullable(Date32), "
        "Ratio Nullable(Float64))";
    static const char *const keys[] = {
        "ORDER BY (PostTypeId, toDate(CreationDate))",
        "ORDER BY (toYYYYMM(CreationDate), Id) PRIMARY KEY toYYYYMM(CreationDate)",
    };
    char sql[16384], file[4400], err[ENG_MSG_MAX];
    snprintf(file, sizeof(file), "file('%s/posts.parquet')", dir);
    for (int t = 0; t < 2; t++) {
        snprintf(sql, sizeof(sql),
                 "CREATE TABLE pk%d %s ENGINE = MergeTree %s SETTINGS index_granularity = 2048", t,
                 cols, keys[t]);
        ok(sql);
        snprintf(sql, sizeof(sql),
                 "INSERT INTO pk%d SELECT * FROM %s SETTINGS min_insert_block_size_rows = 70000", t,
                 file);
        ok(sql);
    }
    /* where, and which table must read fewer than a quarter of the rows */
    static const struct {
        const char *where;
        int prunes;
    } w[] = {
        {"PostTypeId = 2 AND CreationDate < '2015-03-01 00:00:00'", 0},
        {"PostTypeId = 1 AND toDate(CreationDate) = '2016-05-05'", 0},
        {"PostTypeId IN (1, 3) AND CreationDate > '2018-06-10 12:00:00'", 0},
        {"CreationDate >= '2018-06-01 00:00:00' AND CreationDate < '2018-07-01 00:00:00'", 1},
        {"toYYYYMM(CreationDate) IN (201601, 201705)", 1},
        {"CreationDate = '2017-03-04 05:06:07'", 1},
        {"Id = 12345 OR Score > 90", -1}, /* no key: every row, the same answer */
        {"(PostTypeId = 3 AND CreationDate BETWEEN '2016-01-01 00:00:00' AND "
         "'2016-01-15 00:00:00') OR toDate(CreationDate) < '2015-01-03'",
         -1},
    };
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
            char *want = NULL;
            snprintf(sql, sizeof(sql),
                     "SELECT count(), sum(Score), uniqExact(Id), uniqExact(CreationDate), "
                     "countIf(Id %% 7 = 3) FROM %s "
                     "WHERE %s",
                     file, w[i].where);
            assert_int_equal(run(sql, &want, err, sizeof(err), 2, NULL), 0);
            for (int t = 0; t < 2; t++) {
                char *got = NULL;
                eng_result r;
                snprintf(sql, sizeof(sql),
                         "SELECT count(), sum(Score), uniqExact(Id), uniqExact(CreationDate), "
                         "countIf(Id %% 7 = 3) FROM pk%d WHERE %s",
                         t, w[i].where);
                int rc = run(sql, &got, err, sizeof(err), 2, &r);
                if (rc < 0)
                    fprintf(stderr, "failed: %s\n  %s\n", err, sql);
                assert_int_equal(rc, 0);
                if (strcmp(got, want) != 0)
                    fprintf(stderr, "%s\n  gave %s  want %s", sql, got, want);
                assert_string_equal(got, want);
                if (w[i].prunes == t) {
                    fprintf(stderr, "pk%d WHERE %s: %llu of 200000 rows read\n", t, w[i].where,
                            (unsigned long long)r.rows_read);
                    assert_true(r.rows_read < 200000 / 4);
                }
                free(got);
            }
            free(want);
        }
        ok("OPTIMIZE TABLE pk0 FINAL");
        ok("OPTIMIZE TABLE pk1 FINAL");
    }
    char *out = NULL;
    assert_int_equal(run("SELECT name, sorting_key, primary_key FROM system.tables WHERE name "
                         "LIKE 'pk%' ORDER BY name",
                         &out, err, sizeof(err), 1, NULL),
                     0);
    assert_string_equal(out, "pk0\tPostTypeId, toDate(CreationDate)\tPostTypeId, "
                             "toDate(CreationDate)\n"
                             "pk1\ttoYYYYMM(CreationDate), Id\ttoYYYYMM(CreationDate)\n");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_queries_on_a_table),
        cmocka_unit_test(test_key_expressions),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
