/* SPDX-License-Identifier: Apache-2.0
 *
 * test_engine_duckdb.c: the engine against DuckDB. gen.mjs writes the
 * datasets (Parquet: one file of several row groups and 12 small files; CSV,
 * TSV, plain CSV, NDJSON, gzip, zstd) and, for each row of its table of
 * ClickHouse-dialect queries, the result of the hand-written DuckDB
 * equivalent. Each query runs through eng_run() with the TSV format and the
 * rows must match: exactly for text, within 1e-9 relative for numbers that
 * differ in their last printed digits; digit for digit for the cases flagged
 * 'exact' (the Decimal ones: a float's answer must not pass for an exact one). Also: malformed inputs and a column
 * missing from one file of a glob fail with sentences naming the file and the
 * place; SQL errors point at line and column; max_memory_usage stops a query
 * with the memory-limit sentence.
 */
#include "duck_compare.h"
#include "eng.h"
#include "harness.h"
#include "parquet.h"

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
static char dir[4096];

static int setup(void **state)
{
    (void)state;
    return dc_setup(&env, "test_engine_duckdb", dir, sizeof(dir));
}

static int teardown(void **state)
{
    (void)state;
    h_env_destroy(&env);
    return 0;
}

/* Runs sql; returns rc, the output in *out (malloc'ed) and the error in err. */
static int run(const char *sql, char **out, char *err, size_t errlen, int threads)
{
    return dc_run(NULL, sql, threads, out, NULL, err, errlen);
}

/* Runs the cases of one list file; returns how many, adding mismatches to *failed. */
static int run_cases(const char *list, int *failed_out)
{
    char path[4300];
    snprintf(path, sizeof(path), "%s/%s", dir, list);
    char *cases = dc_slurp(path);
    assert_non_null(cases);
    int n = 0, failed = 0;
    for (char *line = strtok(cases, "\n"); line; line = strtok(NULL, "\n")) {
        dc_case c;
        dc_case_parse(line, &c);
        bool exact = strcmp(c.flags, "exact") == 0, sorted = strcmp(c.flags, "sorted") == 0;
        /* 1 and 2 threads: partial aggregates and top-N must merge to the same result */
        for (int threads = 1; threads <= 2; threads++)
            failed += !dc_run_matches(NULL, dir, c.name, "query", c.sql, threads, sorted, exact);
        n++;
    }
    free(cases);
    *failed_out += failed;
    return n;
}

static void test_queries_match_duckdb(void **state)
{
    (void)state;
    int failed = 0;
    int n = run_cases("cases.tsv", &failed);
    n += run_cases("cases_local.tsv", &failed);
    fprintf(stderr, "%d queries compared with DuckDB, %d mismatches\n", n, failed);
    assert_true(n >= 35);
    assert_int_equal(failed, 0);
}

/* A query that must fail; its message must contain every needle. */
#define expect_error(...) dc_expect_error(NULL, __VA_ARGS__)

/* Runs sql in format fmt (2 threads); the output must be `want` exactly. */
static void expect_output(const char *sql, eng_format fmt, const char *want)
{
    char *out = NULL, err[ENG_MSG_MAX];
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    assert_non_null(f);
    eng_ctx ctx = {.out = f, .format = fmt, .max_threads = 2};
    int rc = eng_run(&ctx, sql, strlen(sql), NULL, NULL, err, sizeof(err));
    fclose(f);
    if (rc < 0)
        fprintf(stderr, "%s: %s\n", sql, err);
    assert_int_equal(rc, 0);
    if (strcmp(out, want) != 0)
        fprintf(stderr, "%s:\n got: [%s]\nwant: [%s]\n", sql, out, want);
    assert_string_equal(out, want);
    free(out);
}

/* Arrays in every output format, as ClickHouse writes them: in text formats
 * [1,2] and ['a','b'] with strings quoted and escaped (the array's text is
 * not escaped again in TSV; CSV quotes it whole), JSON arrays (64-bit
 * integers quoted, as output_format_json_quote_64bit_integers=1 does), and
 * the type names Array(T). */
static void test_array_formats(void **state)
{
    (void)state;
    const char *q = "SELECT [1, 2] AS a, ['x', 'it''s'] AS s, [[toInt64(1)], []] AS n, [] AS e, "
                    "[NULL, 1.5] AS f";
    expect_output(q, ENG_FMT_TSV, "[1,2]\t['x','it\\'s']\t[[1],[]]\t[]\t[NULL,1.5]\n");
    expect_output(q, ENG_FMT_TSV_WITH_NAMES_AND_TYPES,
                  "a\ts\tn\te\tf\nArray(UInt8)\tArray(String)\tArray(Array(Int64))\t"
                  "Array(Nothing)\tArray(Nullable(Float64))\n"
                  "[1,2]\t['x','it\\'s']\t[[1],[]]\t[]\t[NULL,1.5]\n");
    expect_output(q, ENG_FMT_CSV,
                  "\"[1,2]\",\"['x','it\\'s']\",\"[[1],[]]\",\"[]\",\"[NULL,1.5]\"\n");
    expect_output(q, ENG_FMT_JSON_EACH_ROW,
                  "{\"a\":[1,2],\"s\":[\"x\",\"it's\"],\"n\":[[\"1\"],[]],\"e\":[],"
                  "\"f\":[null,1.5]}\n");
    expect_output(q, ENG_FMT_JSON_COMPACT_EACH_ROW,
                  "[[1,2], [\"x\",\"it's\"], [[\"1\"],[]], [], [null,1.5]]\n");
    expect_output(q, ENG_FMT_VALUES, "([1,2],['x','it\\'s'],[[1],[]],[],[NULL,1.5])");
    expect_output("SELECT ['a'] AS s, [3] AS a", ENG_FMT_VERTICAL,
                  "Row 1:\n──────\ns: ['a']\na: [3]\n");
    expect_output("SELECT toUInt64(0) AS k, groupArray(number) AS g FROM numbers(2) GROUP BY k",
                  ENG_FMT_JSON_COMPACT_EACH_ROW, "[\"0\", [\"0\",\"1\"]]\n");
    expect_error("SELECT [[1]] AS a FORMAT Parquet", "column 'a' is an Array(Array(UInt8))",
                 "Parquet output format does not write nested arrays", NULL);
}

static void test_malformed_inputs_name_file_and_place(void **state)
{
    (void)state;
    char sql[8192];
    snprintf(sql, sizeof(sql), "SELECT * FROM file('%s/bad_quote.csv')", dir);
    expect_error(sql, "bad_quote.csv", "line 2", "unterminated quoted field", NULL);
    snprintf(sql, sizeof(sql), "SELECT count() FROM file('%s/bad_line.ndjson')", dir);
    expect_error(sql, "bad_line.ndjson", "line 3", NULL);
    snprintf(sql, sizeof(sql), "SELECT sum(Score) FROM file('%s/mixed/*.parquet')", dir);
    expect_error(sql, "column 'Score' is missing from", "b.parquet", NULL);
    snprintf(sql, sizeof(sql), "SELECT count() FROM file('%s/nothing_here_*.parquet')", dir);
    expect_error(sql, "no files match", NULL);
    /* nested columns the engine does not read: named when the query reads
     * them (directly, through *, DESCRIBE), never in the way of the others */
    snprintf(sql, sizeof(sql), "SELECT * FROM file('%s/nested.parquet')", dir);
    expect_error(sql, "column 'M' is a Parquet MAP (a Map)", "not supported", "SELECT * EXCEPT (M)",
                 NULL);
    snprintf(sql, sizeof(sql), "SELECT Id, T FROM file('%s/nested.parquet')", dir);
    expect_error(sql, "line 1, column 12", "column 'T' is a group of fields (a Tuple)", NULL);
    snprintf(sql, sizeof(sql), "DESCRIBE file('%s/nested.parquet')", dir);
    expect_error(sql, "column 'M' is a Parquet MAP", NULL);
}

static void test_sql_errors_point_at_the_place(void **state)
{
    (void)state;
    char sql[8192];
    snprintf(sql, sizeof(sql),
             "SELECT OwnerDisplayNam, count() FROM file('%s/posts.parquet') GROUP BY 1", dir);
    expect_error(sql, "line 1, column 8", "unknown column 'OwnerDisplayNam'",
                 "did you mean 'OwnerDisplayName'?", NULL);
    snprintf(sql, sizeof(sql), "SELECT Id\nFROM file('%s/posts.parquet')\nWHERE Scor > 1", dir);
    expect_error(sql, "line 3, column 7", "did you mean 'Score'?", NULL);
    snprintf(sql, sizeof(sql), "SELECT Id, count() FROM file('%s/posts.parquet')", dir);
    expect_error(sql, "not under an aggregate function", NULL);
    snprintf(sql, sizeof(sql), "SELECT Id FROM file('%s/posts.parquet') SETTINGS max_thread = 2",
             dir);
    expect_error(sql, "unknown setting 'max_thread'", "did you mean 'max_threads'?", NULL);
}

static void test_max_memory_usage_stops_the_query(void **state)
{
    (void)state;
    char sql[8192];
    snprintf(sql, sizeof(sql),
             "SELECT Id, Title FROM file('%s/posts.parquet') ORDER BY Title SETTINGS "
             "max_memory_usage = 2000000",
             dir);
    expect_error(sql, "memory limit", "max_memory_usage", NULL);
    /* the figure is what the query would have reached: over the limit */
    char *o = NULL, err0[ENG_MSG_MAX];
    assert_true(run(sql, &o, err0, sizeof(err0), 2) < 0);
    free(o);
    double would = 0, max = 0;
    char wu[8] = "", mu[8] = "";
    const char *w = strstr(err0, "would use "), *mx = strstr(err0, "maximum: ");
    assert_non_null(w);
    assert_non_null(mx);
    assert_int_equal(sscanf(w, "would use %lf %7s", &would, wu), 2);
    assert_int_equal(sscanf(mx, "maximum: %lf %7s", &max, mu), 2);
    double scale_w = !strcmp(wu, "KiB") ? 1024 : !strcmp(wu, "MiB") ? 1048576 : 1;
    double scale_m = !strncmp(mu, "KiB", 3) ? 1024 : !strncmp(mu, "MiB", 3) ? 1048576 : 1;
    if (would * scale_w <= max * scale_m)
        fprintf(stderr, "%s\n", err0);
    assert_true(would * scale_w > max * scale_m);
    /* the same query fits without the limit */
    char *out = NULL, err[ENG_MSG_MAX];
    snprintf(sql, sizeof(sql),
             "SELECT Id, Title FROM file('%s/posts.parquet') ORDER BY Title LIMIT 3", dir);
    assert_int_equal(run(sql, &out, err, sizeof(err), 2), 0);
    free(out);
}

/* The bytes of column chunks fetched from a file count in the query's memory,
 * not only the decoded batches: at one thread and no reading ahead, the peak
 * holds at least a row group's decoded Id column (8 bytes a row) plus its
 * compressed chunk, for the largest row group. */
static void test_memory_counts_fetched_chunks(void **state)
{
    (void)state;
    char path[4300], err[ENG_MSG_MAX];
    snprintf(path, sizeof(path), "%s/posts.parquet", dir);
    rs_source *src;
    assert_int_equal(rs_file_open(&src, path, err, sizeof(err)), 0);
    pq_file *pf;
    assert_int_equal(pq_file_open(&pf, src, NULL, err, sizeof(err)), 0);
    int id = pq_file_find_column(pf, "Id");
    assert_true(id >= 0);
    uint64_t want = 0;
    for (int rg = 0; rg < pq_file_num_row_groups(pf); rg++) {
        rs_range *r;
        size_t n;
        uint64_t total;
        assert_int_equal(
            pq_row_group_ranges(pf, rg, &id, 1, 0, 0, &r, &n, &total, err, sizeof(err)), 0);
        free(r);
        uint64_t need = total + 8 * (uint64_t)pq_file_row_group_rows(pf, rg);
        if (need > want)
            want = need;
    }
    assert_true(pq_file_num_row_groups(pf) > 1);
    pq_file_destroy(&pf);
    rs_destroy(&src);
    char sql[8192], *out = NULL;
    snprintf(sql, sizeof(sql), "SELECT sum(Id) FROM file('%s') SETTINGS max_download_threads = 0",
             path);
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    assert_non_null(f);
    eng_ctx ctx = {.out = f, .format = ENG_FMT_TSV, .max_threads = 1};
    eng_result res;
    int rc = eng_run(&ctx, sql, strlen(sql), NULL, &res, err, sizeof(err));
    fclose(f);
    free(out);
    assert_int_equal(rc, 0);
    fprintf(stderr, "peak %lld bytes, a row group's Id decoded + compressed %llu bytes\n",
            (long long)res.peak_memory, (unsigned long long)want);
    assert_true(res.peak_memory >= (int64_t)want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queries_match_duckdb),
        cmocka_unit_test(test_malformed_inputs_name_file_and_place),
        cmocka_unit_test(test_array_formats),
        cmocka_unit_test(test_sql_errors_point_at_the_place),
        cmocka_unit_test(test_max_memory_usage_stops_the_query),
        cmocka_unit_test(test_memory_counts_fetched_chunks),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
