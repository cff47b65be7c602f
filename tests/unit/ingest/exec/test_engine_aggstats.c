/* SPDX-License-Identifier: Apache-2.0
 *
 * test_engine_aggstats.c: a GROUP BY sizes its tables from the last run of
 * the same statement (collect_hash_table_stats_during_aggregation). Over CSV
 * files of a temp folder: the first run of a statement reserves nothing and
 * the second reserves what the first made, at 1 and 2 threads, with the same
 * answer, which is checked against counts made here; a statement that
 * differs in its WHERE or its keys is another shape; the data changed
 * under a kept size (more groups, then fewer) still gives the right
 * answer; the setting turns it off, max_size_to_preallocate_for_aggregation
 * caps it, and a wrong value of either is an error naming it. Two threads:
 * label `threads` (TSan in CI).
 */
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

#define N_FILES       4
#define ROWS_PER_FILE 30000

static h_env *env;

/* Writes file f of the data: row i has key k(i) = i % groups, "k<k>". */
static void write_file(int f, int groups)
{
    char path[4096], name[64];
    snprintf(name, sizeof(name), "part-%02d.csv", f);
    assert_int_equal(h_env_path(env, path, sizeof(path), name), 0);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("id,name\n", fp);
    for (int r = 0; r < ROWS_PER_FILE; r++) {
        int i = f * ROWS_PER_FILE + r;
        fprintf(fp, "%d,k%d\n", i, i % groups);
    }
    assert_int_equal(fclose(fp), 0);
}

static void write_all(int groups)
{
    for (int f = 0; f < N_FILES; f++)
        write_file(f, groups);
}

static int setup(void **state)
{
    (void)state;
    assert_int_equal(h_env_create(&env, "engine_aggstats"), 0);
    write_all(50000);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    h_env_destroy(&env);
    return 0;
}

/* What a query did: its TSV, counters, error. */
typedef struct outcome {
    char *out;
    size_t len;
    eng_result res;
    char err[ENG_MSG_MAX];
    int rc;
} outcome;

/* Runs sql ({D}: the data folder) at `threads` threads, then `settings`
 * (NULL: none) as its SETTINGS clause. */
static void run_set(const char *sql, const char *settings, int threads, outcome *o)
{
    memset(o, 0, sizeof(*o));
    FILE *f = open_memstream(&o->out, &o->len);
    assert_non_null(f);
    eng_ctx ctx = {.out = f, .format = ENG_FMT_TSV, .max_threads = threads};
    char q[8192];
    const char *at = strstr(sql, "{D}");
    assert_non_null(at);
    snprintf(q, sizeof(q), "%.*s%s%s%s%s", (int)(at - sql), sql, h_env_dir(env), at + 3,
             settings ? " SETTINGS " : "", settings ? settings : "");
    o->rc = eng_run(&ctx, q, strlen(q), NULL, &o->res, o->err, sizeof(o->err));
    assert_int_equal(fclose(f), 0);
}

static void run(const char *sql, int threads, outcome *o)
{
    run_set(sql, NULL, threads, o);
}

/* The answer of SELECT count(), count(DISTINCT name), max(c) over the
 * groups of name (rows with id >= from) when the data has `groups` keys. */
static void expect_counts(const char *got, int groups, int from)
{
    int rows = N_FILES * ROWS_PER_FILE;
    /* key k holds the ids i with i % groups == k, i >= from */
    int keys = 0, most = 0;
    for (int k = 0; k < groups; k++) {
        int n = 0;
        for (int i = k; i < rows; i += groups)
            n += i >= from;
        keys += n > 0;
        most = n > most ? n : most;
    }
    char want[128];
    snprintf(want, sizeof(want), "%d\t%d\n", keys, most);
    assert_string_equal(got, want);
}

#define Q_GROUPS                                                                                   \
    "SELECT count(), max(c) FROM (SELECT name, count() AS c FROM file('{D}/*.csv', "               \
    "'CSVWithNames') GROUP BY name)"

static void test_the_second_run_is_sized_by_the_first(void **state)
{
    (void)state;
    for (int threads = 1; threads <= 2; threads++) {
        /* a WHERE of its own, so that this shape is new to the process */
        char sql[512];
        snprintf(sql, sizeof(sql),
                 "SELECT name, count() AS c FROM file('{D}/*.csv', 'CSVWithNames') "
                 "WHERE id >= %d GROUP BY name ORDER BY c DESC, name LIMIT 3",
                 threads);
        outcome a, b, c;
        run(sql, threads, &a);
        assert_int_equal(a.rc, 0);
        assert_int_equal(a.res.agg_preallocated, 0); /* nothing known yet */
        run(sql, threads, &b);
        assert_int_equal(b.rc, 0);
        /* each worker's table sized for what the largest held, at least */
        assert_true(b.res.agg_preallocated >= 50000u / (unsigned)threads);
        assert_string_equal(a.out, b.out);
        run(sql, threads, &c);
        assert_int_equal(c.rc, 0);
        assert_string_equal(a.out, c.out);
        free(a.out);
        free(b.out);
        free(c.out);
    }
}

static void test_another_shape_is_not_sized(void **state)
{
    (void)state;
    outcome a, b;
    run("SELECT name, count() FROM file('{D}/*.csv', 'CSVWithNames') WHERE id >= 77 "
        "GROUP BY name FORMAT Null",
        2, &a);
    assert_int_equal(a.rc, 0);
    /* the same FROM, another WHERE: its own shape */
    run("SELECT name, count() FROM file('{D}/*.csv', 'CSVWithNames') WHERE id >= 78 "
        "GROUP BY name FORMAT Null",
        2, &b);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.res.agg_preallocated, 0);
    free(b.out);
    /* another key over the same rows */
    run("SELECT id % 7 AS k, count() FROM file('{D}/*.csv', 'CSVWithNames') WHERE id >= 77 "
        "GROUP BY k FORMAT Null",
        2, &b);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.res.agg_preallocated, 0);
    free(a.out);
    free(b.out);
}

#define Q_TOP                                                                                      \
    "SELECT name, count() AS c FROM file('{D}/*.csv', 'CSVWithNames') GROUP BY name ORDER BY c "   \
    "DESC, name LIMIT 5"

/* Q_TOP at `threads` (its tables sized from the last run when `sized`),
 * equal to the same statement that reads no kept size, and Q_GROUPS (the
 * same groups under a subquery) equal to the counts made here. */
static void check_top(int threads, int groups, bool sized)
{
    outcome o, ref;
    run(Q_TOP, threads, &o);
    assert_int_equal(o.rc, 0);
    if (sized)
        assert_true(o.res.agg_preallocated > 0);
    run(Q_TOP " SETTINGS collect_hash_table_stats_during_aggregation = 0", threads, &ref);
    assert_int_equal(ref.rc, 0);
    assert_int_equal(ref.res.agg_preallocated, 0);
    assert_string_equal(o.out, ref.out);
    free(o.out);
    free(ref.out);
    run(Q_GROUPS, threads, &o);
    assert_int_equal(o.rc, 0);
    expect_counts(o.out, groups, 0);
    free(o.out);
}

static void test_shapes_by_their_bound_keys(void **state)
{
    (void)state;
    outcome a, b;
    /* a DISTINCT's keys are its columns: two DISTINCTs are two shapes */
    run("SELECT DISTINCT id FROM file('{D}/*.csv', 'CSVWithNames') FORMAT Null", 2, &a);
    assert_int_equal(a.rc, 0);
    run("SELECT DISTINCT id % 2 FROM file('{D}/*.csv', 'CSVWithNames') FORMAT Null", 2, &b);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.res.agg_preallocated, 0);
    free(a.out);
    free(b.out);
    run("SELECT DISTINCT id FROM file('{D}/*.csv', 'CSVWithNames') FORMAT Null", 2, &a);
    assert_true(a.res.agg_preallocated >= 60000); /* its own size, 120k ids over 2 workers */
    free(a.out);
    /* GROUP BY an alias and a position: the bound keys, not the words */
    run("SELECT id AS k, count() FROM file('{D}/*.csv', 'CSVWithNames') GROUP BY k FORMAT Null", 2,
        &a);
    assert_int_equal(a.rc, 0);
    run("SELECT id % 3 AS k, count() FROM file('{D}/*.csv', 'CSVWithNames') GROUP BY k "
        "FORMAT Null",
        2, &b);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.res.agg_preallocated, 0);
    free(a.out);
    free(b.out);
    run("SELECT id % 3, count() FROM file('{D}/*.csv', 'CSVWithNames') GROUP BY 1 FORMAT Null", 2,
        &b);
    assert_int_equal(b.rc, 0);
    assert_true(b.res.agg_preallocated <= 3 * 2 + 3); /* the three groups' shape, not the ids' */
    free(b.out);
}

static void test_a_size_spread_over_more_workers(void **state)
{
    (void)state;
    const char *sql = "SELECT name, count() FROM file('{D}/*.csv', 'CSVWithNames') WHERE id >= 9 "
                      "GROUP BY name FORMAT Null";
    outcome o;
    run(sql, 1, &o); /* one table of every group: 50000 */
    assert_int_equal(o.rc, 0);
    free(o.out);
    run(sql, 2, &o);
    assert_int_equal(o.rc, 0);
    /* each of the two sized for half, the merged table for the rest: not 2 x 50000 and more */
    assert_true(o.res.agg_preallocated >= 50000 && o.res.agg_preallocated <= 75000);
    free(o.out);
}

static void test_changed_data_under_a_kept_size(void **state)
{
    (void)state;
    for (int threads = 1; threads <= 2; threads++) {
        write_all(50000);
        check_top(threads, 50000, threads > 1); /* the first pass has run it before */
        check_top(threads, 50000, true);
        /* more groups than the kept size: the tables grow past it */
        write_all(110000);
        check_top(threads, 110000, true);
        /* far fewer: the tables are larger than they need, the answer the same */
        write_all(300);
        outcome o;
        run(Q_TOP, threads, &o);
        assert_int_equal(o.rc, 0);
        assert_true(o.res.agg_preallocated >= 110000u / (unsigned)threads);
        free(o.out);
        check_top(threads, 300, true);
    }
    write_all(50000);
}

static void test_the_settings(void **state)
{
    (void)state;
    const char *base = "SELECT name, count() FROM file('{D}/*.csv', 'CSVWithNames') WHERE id >= "
                       "5 GROUP BY name FORMAT Null";
    static const struct {
        const char *settings;
        int rc;
        uint64_t least, most; /* agg_preallocated */
    } cases[] = {
        {NULL, 0, 0, UINT64_MAX}, /* the first run: the size kept */
        /* off: neither read nor kept */
        {"collect_hash_table_stats_during_aggregation = 0", 0, 0, 0},
        /* capped: 1000 groups in all, 500 a worker, the merged table none more */
        {"max_size_to_preallocate_for_aggregation = 1000", 0, 1, 2000},
        {"max_size_to_preallocate_for_aggregation = 0", 0, 0, 0},
        /* on again: the size the first run kept */
        {NULL, 0, 50000, UINT64_MAX},
        {"collect_hash_table_stats_during_aggregation = 2", -EINVAL, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        outcome o;
        run_set(base, cases[i].settings, 2, &o);
        assert_int_equal(o.rc, cases[i].rc);
        if (o.rc == 0) {
            assert_true(o.res.agg_preallocated >= cases[i].least);
            assert_true(o.res.agg_preallocated <= cases[i].most);
        } else {
            assert_non_null(strstr(o.err, "collect_hash_table_stats_during_aggregation is 0 or 1"));
        }
        free(o.out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_second_run_is_sized_by_the_first),
        cmocka_unit_test(test_another_shape_is_not_sized),
        cmocka_unit_test(test_shapes_by_their_bound_keys),
        cmocka_unit_test(test_a_size_spread_over_more_workers),
        cmocka_unit_test(test_changed_data_under_a_kept_size),
        cmocka_unit_test(test_the_settings),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
