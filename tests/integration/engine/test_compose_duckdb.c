/* SPDX-License-Identifier: Apache-2.0
 *
 * test_compose_duckdb.c: queries built of queries against DuckDB. gen_compose.mjs
 * writes a fact table, a dimension and an empty one (NULL keys, duplicate
 * keys, keys only one side has) and, for each ClickHouse-dialect query of
 * its table (subqueries in FROM, WITH, IN (SELECT ...), scalar subqueries,
 * UNION ALL, every kind of JOIN, window functions), the result of the hand-written DuckDB
 * equivalent; each runs through eng_run() at 1 and 2 threads and the rows
 * must match. Also: ClickHouse's documented join defaults, a right side over
 * max_memory_usage, and the unsupported forms named with their place.
 */
#include "duck_compare.h"
#include "eng.h"
#include "harness.h"

#include <errno.h>
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
    if (h_env_create(&env, "test_compose_duckdb") < 0)
        return -1;
    h_env_path(env, dir, sizeof(dir), "data");
    return dc_generate(env, "gen", "tests/integration/engine/gen_compose.mjs",
                       (const char *[]){dir, NULL}, 120000);
}

static int teardown(void **state)
{
    (void)state;
    h_env_destroy(&env);
    return 0;
}

/* Runs sql; returns rc, the output in *out (malloc'ed) and the error in err.
 * EXPLAIN's lines come as TabSeparatedRaw (TabSeparated escapes their quotes,
 * as ClickHouse does), to be read and run again as they are. */
static int run(const char *sql, char **out, char *err, size_t errlen, int threads)
{
    eng_format fmt = strncmp(sql, "EXPLAIN", 7) == 0 ? ENG_FMT_TSV_RAW : ENG_FMT_TSV;
    return dc_run(&(eng_ctx){.format = fmt}, sql, threads, out, NULL, err, errlen);
}

static void test_compositions_match_duckdb(void **state)
{
    (void)state;
    char *cases = dc_cases(dir);
    int n = 0, failed = 0;
    for (char *line = strtok(cases, "\n"); line; line = strtok(NULL, "\n")) {
        dc_case c;
        dc_case_parse(line, &c);
        bool sorted = strcmp(c.flags, "sorted") == 0;
        for (int threads = 1; threads <= 2; threads++)
            failed += !dc_run_matches(NULL, dir, c.name, "query", c.sql, threads, sorted, false);
        /* EXPLAIN SYNTAX's text is the same query: it runs to the same rows */
        size_t el = strlen(c.sql) + 32;
        char *ex = malloc(el), *text = NULL, err[ENG_MSG_MAX];
        assert_non_null(ex);
        snprintf(ex, el, "EXPLAIN SYNTAX %s", c.sql);
        int rc = run(ex, &text, err, sizeof(err), 1);
        free(ex);
        if (rc < 0) {
            fprintf(stderr, "%s: EXPLAIN SYNTAX failed: %s\n", c.name, err);
            failed++;
        } else {
            failed +=
                !dc_run_matches(NULL, dir, c.name, "EXPLAIN SYNTAX's text", text, 2, sorted, false);
        }
        free(text);
        n++;
    }
    free(cases);
    fprintf(stderr, "%d queries compared with DuckDB, %d mismatches\n", n, failed);
    assert_true(n >= 51);
    assert_int_equal(failed, 0);
}

/* Runs sql at 2 threads; its TSV output must be want exactly. */
static void expect_rows(const char *sql, const char *want)
{
    char *out = NULL, err[ENG_MSG_MAX];
    int rc = run(sql, &out, err, sizeof(err), 2);
    if (rc < 0)
        fprintf(stderr, "%s\n  failed: %s\n", sql, err);
    assert_int_equal(rc, 0);
    if (strcmp(out, want) != 0)
        fprintf(stderr, "%s\n  gave:\n%s  want:\n%s", sql, out, want);
    assert_string_equal(out, want);
    free(out);
}

/* A query that must fail; its message must contain every needle. */
#define expect_error(...) dc_expect_error(NULL, __VA_ARGS__)

/* ClickHouse's documented answers, not DuckDB's. The join_use_nulls setting
 * (ClickHouse docs, Settings, join_use_nulls): "0 — The empty cells are filled
 * with the default value of the corresponding field type. 1 — JOIN behaves
 * the same way as in standard SQL. The type of the corresponding field is
 * converted to Nullable, and empty cells are filled with NULL." The default
 * is 0. And the JOIN page: with ANY, "if the right table has several matching
 * rows, only the first one found is joined". The keys here are non-Nullable
 * (coalesce), as ClickHouse's own example tables are. */
static void test_clickhouse_join_defaults(void **state)
{
    (void)state;
    char sql[20000];
    char lq[5000], rq[5000];
    snprintf(lq, sizeof(lq),
             "(SELECT coalesce(j, 0) AS id, coalesce(k, -2) AS k FROM "
             "file('%s/dims.parquet') WHERE j IN (752, 34, 102))",
             dir);
    snprintf(rq, sizeof(rq),
             "(SELECT coalesce(k, -1) AS k, coalesce(name, '') AS name, "
             "coalesce(j, 0) AS j, coalesce(w, 0) AS w FROM file('%s/dims.parquet') WHERE j IN "
             "(34, 834, 5, 752))",
             dir);
    /* the keys (gen_compose.mjs's dims): left 752 (k 752), 34 (k 34), 102 (k NULL
     * -> -2); right 34 and 834 (k 34), 5 (k NULL -> -1), 752 (k 752) */
    snprintf(sql, sizeof(sql), "SELECT id, k FROM %s ORDER BY id", lq);
    expect_rows(sql, "34\t34\n102\t-2\n752\t752\n");
    char *out = NULL, err[ENG_MSG_MAX];
    /* LEFT JOIN, default join_use_nulls = 0: unmatched rows get '' and 0 */
    snprintf(sql, sizeof(sql),
             "SELECT l.id, r.name, r.j, r.w FROM %s AS l LEFT JOIN %s AS r ON l.k = r.k "
             "WHERE l.id = 102 ORDER BY l.id, r.j",
             lq, rq);
    expect_rows(sql, "102\t\t0\t0\n");
    /* the same with join_use_nulls = 1: NULL */
    snprintf(sql, sizeof(sql),
             "SELECT l.id, r.name, r.j, r.w FROM %s AS l LEFT JOIN %s AS r ON l.k = r.k "
             "WHERE l.id = 102 ORDER BY l.id, r.j SETTINGS join_use_nulls = 1",
             lq, rq);
    expect_rows(sql, "102\t\\N\t\\N\t\\N\n");
    /* RIGHT JOIN: the left's columns of an unmatched right row are defaults */
    snprintf(sql, sizeof(sql),
             "SELECT l.id, r.j FROM %s AS l RIGHT JOIN %s AS r ON l.k = r.k WHERE r.j = 5", lq, rq);
    expect_rows(sql, "0\t5\n");
    /* ANY LEFT JOIN: the first right row of the key (j 34 before j 834) */
    snprintf(sql, sizeof(sql),
             "SELECT r.j, count() FROM %s AS l ANY LEFT JOIN %s AS r ON l.k = r.k GROUP BY r.j "
             "ORDER BY r.j",
             lq, rq);
    assert_int_equal(run(sql, &out, err, sizeof(err), 1), 0);
    /* every left row once, 102's with the default j 0, and never j 834 */
    assert_string_equal(out, "0\t1\n34\t1\n752\t1\n");
    free(out);
}

/* Every line of want is in the EXPLAIN output out (which is printed when one is not). */
static void explain_has(const char *out, const char *const *want, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!strstr(out, want[i]))
            fprintf(stderr, "EXPLAIN lacks '%s':\n%s", want[i], out);
        assert_non_null(strstr(out, want[i]));
    }
}

/* EXPLAIN: the stages from the output down, each join with its right side's
 * rows, the source's units after pruning, the threads. */
static void test_explain_names_the_stages(void **state)
{
    (void)state;
    char sql[20000], *out = NULL, err[ENG_MSG_MAX];
    snprintf(sql, sizeof(sql),
             "EXPLAIN SELECT d.s, count(), sum(f.v) FROM file('%s/facts.parquet') AS f LEFT JOIN "
             "file('%s/dims.parquet') AS d ON f.k = d.k WHERE f.v > 10 GROUP BY d.s ORDER BY d.s "
             "LIMIT 3 SETTINGS max_threads = 2",
             dir, dir);
    assert_int_equal(run(sql, &out, err, sizeof(err), 2), 0);
    const char *want[] = {"Expression (SELECT ",
                          "Limit (3, offset 0)",
                          "Sorting (ORDER BY s",
                          "Aggregating (GROUP BY s: count(), sum(v)",
                          "Filter (WHERE greater(v, 10)",
                          "Join (LEFT JOIN, hash join on 1 key; join_use_nulls = 0)",
                          "1000 rows in memory",
                          "Left side (probed in parallel, 6 units)",
                          "facts.parquet'): 1 file; 6 units to read",
                          "Threads: max_threads = 2"};
    explain_has(out, want, sizeof(want) / sizeof(want[0]));
    free(out);
    /* pruning: id < 10000 keeps the first of the 6 row groups */
    snprintf(sql, sizeof(sql),
             "EXPLAIN SELECT id FROM file('%s/facts.parquet') WHERE id < 10000 "
             "ORDER BY id DESC LIMIT 5",
             dir);
    assert_int_equal(run(sql, &out, err, sizeof(err), 2), 0);
    if (!strstr(out, "1 unit to read") || !strstr(out, "5 pruned by WHERE; columns id"))
        fprintf(stderr, "%s", out);
    assert_non_null(strstr(out, "1 unit to read"));
    assert_non_null(strstr(out, "5 pruned by WHERE; columns id"));
    free(out);
    /* the right side reads only the columns the query names */
    snprintf(sql, sizeof(sql),
             "EXPLAIN SELECT count(), sum(d.w) FROM file('%s/facts.parquet') AS f JOIN "
             "file('%s/dims.parquet') AS d ON f.k = d.k WHERE d.s != 'x'",
             dir, dir);
    assert_int_equal(run(sql, &out, err, sizeof(err), 2), 0);
    if (!strstr(out, "rows in memory (columns k, w, s) with"))
        fprintf(stderr, "%s", out);
    assert_non_null(strstr(out, "rows in memory (columns k, w, s) with"));
    free(out);
    snprintf(sql, sizeof(sql),
             "EXPLAIN SELECT * FROM file('%s/facts.parquet') AS f JOIN "
             "file('%s/dims.parquet') AS d ON f.k = d.k",
             dir, dir);
    assert_int_equal(run(sql, &out, err, sizeof(err), 2), 0);
    assert_non_null(strstr(out, "rows in memory (columns j, k, name, w, s) with"));
    free(out);
    /* a right side whose one integer key is dense is indexed by it (the
       join_dense_* cases compare its answers with DuckDB's; dims' k is 1..799
       there, 0 being one of the keys moved to 5000 + j) */
    snprintf(sql, sizeof(sql),
             "EXPLAIN SELECT count() FROM file('%s/facts.parquet') AS f JOIN (SELECT k - 400 AS "
             "k, w FROM file('%s/dims.parquet') WHERE k < 800) AS d ON f.k = d.k",
             dir, dir);
    assert_int_equal(run(sql, &out, err, sizeof(err), 2), 0);
    const char *dense[] = {"Join (INNER JOIN, direct join on 1 key;",
                           "Right side: a subquery AS d (run first, into memory): 969 rows",
                           "indexed by its key, whose values span -399..399"};
    explain_has(out, dense, sizeof(dense) / sizeof(dense[0]));
    free(out);
    /* through a LEFT JOIN, WHERE on the left's columns prunes the left */
    snprintf(sql, sizeof(sql),
             "EXPLAIN SELECT count() FROM file('%s/facts.parquet') AS f LEFT JOIN "
             "file('%s/dims.parquet') AS d ON f.k = d.k WHERE f.id < 10000",
             dir, dir);
    assert_int_equal(run(sql, &out, err, sizeof(err), 2), 0);
    if (!strstr(out, "Left side (probed in parallel, 1 units)"))
        fprintf(stderr, "%s", out);
    assert_non_null(strstr(out, "Left side (probed in parallel, 1 units)"));
    assert_non_null(strstr(out, "5 pruned by WHERE"));
    free(out);
    snprintf(sql, sizeof(sql),
             "EXPLAIN SELECT id, rank() OVER (ORDER BY v) FROM "
             "file('%s/facts.parquet') UNION ALL SELECT j, 1 FROM file('%s/dims.parquet')",
             dir, dir);
    assert_int_equal(run(sql, &out, err, sizeof(err), 2), 0);
    assert_non_null(strstr(out, "Union (UNION ALL of 2 SELECTs"));
    assert_non_null(strstr(out, "Window (1 function: rank() OVER (ORDER BY v ASC)"));
    free(out);
    /* EXPLAIN SYNTAX: one clause a line */
    snprintf(sql, sizeof(sql),
             "EXPLAIN SYNTAX SELECT a.id AS i FROM file('x') AS a JOIN t USING k "
             "WHERE i>1 LIMIT 2");
    expect_rows(sql, "SELECT a.id AS i\nFROM file('x') AS a\nINNER JOIN t USING (k)\n"
                     "WHERE (i > 1)\nLIMIT 2\n");
}

/* A WITH query named by both branches of a UNION ALL runs once: the
 * statement reads the 60000 fact rows once, then the WITH's rows once per
 * branch. */
static void test_with_query_runs_once(void **state)
{
    (void)state;
    char sql[20000], *out = NULL, err[ENG_MSG_MAX];
    snprintf(sql, sizeof(sql),
             "WITH a AS (SELECT k, sum(v) AS sv FROM file('%s/facts.parquet') GROUP BY k) "
             "SELECT count() FROM a UNION ALL SELECT count() FROM a",
             dir);
    for (int threads = 1; threads <= 2; threads++) {
        eng_result r;
        int rc =
            dc_run(&(eng_ctx){.format = ENG_FMT_TSV}, sql, threads, &out, &r, err, sizeof(err));
        if (rc < 0)
            fprintf(stderr, "%s\n  failed: %s\n", sql, err);
        assert_int_equal(rc, 0);
        unsigned long long groups = strtoull(out, NULL, 10);
        if (r.rows_read != 60000 + 2 * groups)
            fprintf(stderr, "%d threads: %llu rows read, %llu groups\n", threads,
                    (unsigned long long)r.rows_read, groups);
        assert_true(groups > 0);
        assert_int_equal(r.rows_read, 60000 + 2 * groups);
        free(out);
        out = NULL;
    }
}

static void test_right_side_over_the_memory_limit(void **state)
{
    (void)state;
    char sql[20000];
    /* facts' k is dense (0..1199): its 60000 rows indexed by the key, about
       0.8 MB with the key column */
    snprintf(sql, sizeof(sql),
             "SELECT count() FROM file('%s/dims.parquet') AS d JOIN file('%s/facts.parquet') AS f "
             "ON d.k = f.k SETTINGS max_memory_usage = 400000",
             dir, dir);
    expect_error(sql, "memory limit", "max_memory_usage", NULL);
    /* a sparse key: the hash table's slots alone are 1.5 MB */
    snprintf(sql, sizeof(sql),
             "SELECT count() FROM file('%s/dims.parquet') AS d JOIN (SELECT id * 1000 AS k FROM "
             "file('%s/facts.parquet')) AS f ON d.k = f.k SETTINGS max_memory_usage = 1500000",
             dir, dir);
    expect_error(sql, "memory limit", "max_memory_usage", NULL);
    /* with room, the same join runs */
    snprintf(
        sql, sizeof(sql),
        "SELECT count() > 0 FROM file('%s/dims.parquet') AS d JOIN file('%s/facts.parquet') AS f "
        "ON d.k = f.k SETTINGS max_memory_usage = 200000000",
        dir, dir);
    expect_rows(sql, "1\n");
}

static void test_unsupported_forms_are_named(void **state)
{
    (void)state;
    char sql[20000];
    snprintf(sql, sizeof(sql),
             "SELECT count() FROM file('%s/facts.parquet') AS f\nJOIN "
             "file('%s/dims.parquet') AS d ON f.k < d.k",
             dir, dir);
    expect_error(sql, "line 2, column", "JOIN ON supports equalities", NULL);
    snprintf(sql, sizeof(sql),
             "SELECT count() FROM file('%s/facts.parquet') AS f ANY RIGHT JOIN "
             "file('%s/dims.parquet') AS d ON f.k = d.k",
             dir, dir);
    expect_error(sql, "ANY RIGHT JOIN is not supported", NULL);
    snprintf(sql, sizeof(sql),
             "SELECT count() FROM file('%s/facts.parquet') AS f SEMI JOIN "
             "file('%s/dims.parquet') AS d ON f.k = d.k",
             dir, dir);
    expect_error(sql, "SEMI JOIN is not supported", NULL);
    snprintf(sql, sizeof(sql),
             "SELECT id FROM file('%s/facts.parquet') UNION SELECT j FROM "
             "file('%s/dims.parquet')",
             dir, dir);
    expect_error(sql, "write UNION ALL", NULL);
    snprintf(sql, sizeof(sql),
             "SELECT id FROM file('%s/facts.parquet') UNION DISTINCT SELECT j "
             "FROM file('%s/dims.parquet')",
             dir, dir);
    expect_error(sql, "UNION DISTINCT is not supported", NULL);
    snprintf(sql, sizeof(sql),
             "SELECT id, s FROM file('%s/facts.parquet') UNION ALL SELECT j "
             "FROM file('%s/dims.parquet')",
             dir, dir);
    expect_error(sql, "as many columns", NULL);
    snprintf(sql, sizeof(sql),
             "SELECT s FROM file('%s/facts.parquet') UNION ALL SELECT j "
             "FROM file('%s/dims.parquet')",
             dir, dir);
    expect_error(sql, "no common type", NULL);
    snprintf(sql, sizeof(sql),
             "SELECT count() FROM file('%s/facts.parquet') WHERE v = "
             "(SELECT v FROM file('%s/facts.parquet'))",
             dir, dir);
    expect_error(sql, "scalar subquery returned 60000 rows", NULL);
    snprintf(sql, sizeof(sql),
             "SELECT count() FROM file('%s/facts.parquet') WHERE v IN "
             "(SELECT v, k FROM file('%s/facts.parquet'))",
             dir, dir);
    expect_error(sql, "must return one column", NULL);
    snprintf(sql, sizeof(sql), "WITH x AS (SELECT * FROM x) SELECT * FROM x");
    expect_error(sql, "recursive WITH", NULL);
    snprintf(sql, sizeof(sql),
             "SELECT s FROM file('%s/facts.parquet') AS f JOIN "
             "file('%s/dims.parquet') AS d ON f.k = d.k",
             dir, dir);
    /* s is in both: the bare name is the left's (d.s is the right's), as in ClickHouse */
    char *out = NULL, err[ENG_MSG_MAX];
    assert_int_equal(run(sql, &out, err, sizeof(err), 2), 0);
    free(out);
    snprintf(sql, sizeof(sql),
             "SELECT count() FROM file('%s/facts.parquet') AS f JOIN "
             "file('%s/dims.parquet') AS d ON k = k",
             dir, dir);
    expect_error(sql, "column 'k' of ON is in both tables", NULL);
    snprintf(sql, sizeof(sql),
             "SELECT id,\n  sum(v) OVER (ORDER BY t RANGE BETWEEN 1 PRECEDING AND "
             "CURRENT ROW) FROM file('%s/facts.parquet')",
             dir);
    expect_error(sql, "line 2, column 27", "window frames with RANGE are not supported", NULL);
    snprintf(sql, sizeof(sql), "SELECT sum(v) OVER w FROM file('%s/facts.parquet')", dir);
    expect_error(sql, "named windows", NULL);
    snprintf(sql, sizeof(sql), "SELECT 1 + row_number() OVER () FROM file('%s/facts.parquet')",
             dir);
    expect_error(sql, "line 1, column 12", "only supported as a whole item of the SELECT list",
                 NULL);
    snprintf(sql, sizeof(sql), "SELECT ntile(4) OVER (ORDER BY t) FROM file('%s/facts.parquet')",
             dir);
    expect_error(sql, "ntile() is not supported as a window function", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compositions_match_duckdb),
        cmocka_unit_test(test_clickhouse_join_defaults),
        cmocka_unit_test(test_explain_names_the_stages),
        cmocka_unit_test(test_with_query_runs_once),
        cmocka_unit_test(test_right_side_over_the_memory_limit),
        cmocka_unit_test(test_unsupported_forms_are_named),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
