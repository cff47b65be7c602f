/* SPDX-License-Identifier: Apache-2.0
 *
 * test_tables_cache.c: tables written through the cache. Real s3rver behind
 * the S3 model (which counts GETs per object), three real ringcached nodes,
 * and `ringcache query --cache ... --warehouse ...` runs, each a process of
 * its own (an empty page cache every time): after an INSERT, and after a
 * merge (OPTIMIZE TABLE ... FINAL), the first full scan asks S3 for the log
 * only, never for a part object: the parts' blocks were placed on their ring
 * owners as they were written.
 */
#include "client_test_util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static t_cluster tc;
static char cli[4096];

static int setup(void **state)
{
    (void)state;
    t_cluster_start(&tc, "test_tables_cache", NULL);
    if (h_build_path(cli, sizeof(cli), H_RINGCACHE_CLI) < 0)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    t_cluster_stop(&tc);
    return 0;
}

static h_run_result rr;

/* Runs the statements of file (or sql) through the CLI with the cache. */
static const char *cli_query(const char *sql, const char *file)
{
    const char *args[12];
    int n = 0;
    args[n++] = "query";
    args[n++] = "--cache";
    args[n++] = tc.members;
    args[n++] = "--warehouse";
    args[n++] = "s3://" H_S3_DEFAULT_BUCKET "/wh/";
    args[n++] = "--format";
    args[n++] = "TSV";
    if (file) {
        args[n++] = "--queries-file";
        args[n++] = file;
    } else {
        args[n++] = sql;
    }
    args[n] = NULL;
    t_run_cli(&tc, &rr, cli, NULL, args);
    assert_int_equal(rr.status, 0);
    return rr.out;
}

/* GETs of the parts' objects since the last reset, and of everything. */
static int64_t part_gets(char names[][160], int n, int64_t *all)
{
    int64_t g = 0;
    for (int i = 0; i < n; i++) {
        char key[400];
        snprintf(key, sizeof(key), "wh/default/t/data/%.150s.part", names[i]);
        g += t_s3_gets(&tc, key);
    }
    *all = h_s3model_count(tc.model, "GET", NULL);
    return g;
}

static int active_parts(char names[][160], int max)
{
    char out[65536];
    snprintf(out, sizeof(out), "%s",
             cli_query("SELECT name FROM system.parts WHERE table = 't' AND active ORDER BY name",
                       NULL));
    int n = 0;
    for (char *l = strtok(out, "\n"); l && n < max; l = strtok(NULL, "\n"))
        snprintf(names[n++], 160, "%s", l);
    return n;
}

static void test_first_scan_after_insert_reads_only_the_log(void **state)
{
    (void)state;
    cli_query("CREATE TABLE t (k UInt64, g UInt8, s String) ENGINE = MergeTree ORDER BY k "
              "PARTITION BY g SETTINGS index_granularity = 1024",
              NULL);
    /* three inserts of 20000 rows each, three partitions each */
    char path[4096];
    h_env_path(tc.env, path, sizeof(path), "insert.sql");
    for (int b = 0; b < 3; b++) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f, "INSERT INTO t VALUES ");
        for (int i = 0; i < 20000; i++) {
            int k = b * 20000 + i;
            fprintf(f, "%s(%d, %d, 'row %d %08x')", i ? ", " : "", k, k % 3, k,
                    (unsigned)(k * 2654435761u));
        }
        fclose(f);
        cli_query(NULL, path);
    }
    char names[64][160];
    int n = active_parts(names, 64);
    assert_int_equal(n, 9);
    assert_int_equal(h_s3model_reset(tc.model), 0);
    const char *out = cli_query("SELECT count(), sum(k), uniqExact(s) FROM t", NULL);
    assert_string_equal(out, "60000\t1799970000\t60000\n");
    int64_t all, parts = part_gets(names, n, &all);
    fprintf(stderr, "first scan after the inserts: %lld GETs of part objects, %lld GETs in all\n",
            (long long)parts, (long long)all);
    assert_int_equal(parts, 0);
    assert_true(all >= 1); /* the log */

    /* a merge through the cache: its output too is on the nodes */
    cli_query("OPTIMIZE TABLE t FINAL", NULL);
    n = active_parts(names, 64);
    assert_int_equal(n, 3);
    assert_int_equal(h_s3model_reset(tc.model), 0);
    out = cli_query("SELECT g, count(), sum(k) FROM t GROUP BY g ORDER BY g", NULL);
    assert_string_equal(out, "0\t20000\t599970000\n1\t20000\t599990000\n2\t20000\t600010000\n");
    parts = part_gets(names, n, &all);
    fprintf(stderr, "first scan after the merge: %lld GETs of part objects, %lld GETs in all\n",
            (long long)parts, (long long)all);
    assert_int_equal(parts, 0);
    assert_true(all >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_scan_after_insert_reads_only_the_log),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
