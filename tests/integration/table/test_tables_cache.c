/* SPDX-License-Identifier: Apache-2.0
 *
 * test_tables_cache.c: tables written through the cache. Real s3rver behind
 * the S3 model (which counts GETs per object), three real ringcached nodes,
 * and `ringcache query --cache ... --warehouse ...` runs, each a process of
 * its own (an empty page cache every time): after an INSERT, and after a
 * merge (OPTIMIZE TABLE ... FINAL), the first full scan asks S3 for the log
 * only, never for a part object: the parts' blocks were placed on their ring
 * owners as they were written.
 *
 * Then three `ringcache server` processes on the same warehouse and nodes,
 * with --table-refresh-interval 60s, 300ms and 0: a server keeps each
 * table's replayed log and its open parts between queries, so within its
 * interval a repeated query asks S3 nothing, nor does the first query after
 * an INSERT on the same server; select_sequential_consistency = 1 lists the
 * log (and after an INSERT by another server GETs the new version: a part's
 * size and version are in the log, opening it asks S3 nothing); past the
 * interval a query lists again and sees other servers' rows; with 0 every
 * query lists. Every answer is checked.
 */
#include "client_test_util.h"

#include <errno.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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
    /* the parts' sizes and versions are in the log: no HEAD of a part */
    assert_int_equal(h_s3model_count(tc.model, "HEAD", NULL), 0);

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
    assert_int_equal(h_s3model_count(tc.model, "HEAD", NULL), 0);
}

/* ---- long-lived servers --------------------------------------------------------- */

static int srv_port[3];

/* Server i with --table-refresh-interval refresh. */
static void start_server(int i, const char *refresh)
{
    char name[16], pf[1024];
    snprintf(name, sizeof(name), "server%d", i);
    snprintf(pf, sizeof(pf), "%s/%s.port", h_env_dir(tc.env), name);
    char *const argv[] = {cli,
                          "server",
                          "--port",
                          "0",
                          "--port-file",
                          pf,
                          "--s3-endpoint",
                          (char *)h_s3model_endpoint(tc.model),
                          "--warehouse",
                          "s3://" H_S3_DEFAULT_BUCKET "/wh/",
                          "--cache",
                          tc.members,
                          "--no-background-merges",
                          "--max-threads",
                          "2",
                          "--table-refresh-interval",
                          (char *)refresh,
                          NULL};
    char *const envx[] = {"AWS_ACCESS_KEY_ID=S3RVER", "AWS_SECRET_ACCESS_KEY=S3RVER",
                          "AWS_REGION=us-east-1", NULL};
    h_proc *p;
    assert_int_equal(h_proc_start(tc.env, &p, name, argv, envx, pf, 0), 0);
    srv_port[i] = h_proc_port(p);
}

/* POSTs sql to server i, asserts 200; the body. */
static const char *srv_query(int i, const char *sql)
{
    static char out[65536];
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", srv_port[i]);
    h_http_req req = {.method = "POST", .url = url, .body = sql, .body_len = strlen(sql)};
    h_http_resp resp = {0};
    int st = h_http(&req, &resp);
    snprintf(out, sizeof(out), "%s", resp.body ? resp.body : "");
    h_http_resp_deinit(&resp);
    if (st != 200)
        fprintf(stderr, "server%d: %d %s\n(for %s)\n", i, st, out, sql);
    assert_int_equal(st, 200);
    return out;
}

/* Every request S3 saw since the last reset, printed by method. */
static int64_t s3_requests(const char *what)
{
    int64_t all = h_s3model_count(tc.model, NULL, NULL);
    fprintf(stderr, "%s: %lld S3 requests (%lld GET, %lld HEAD, %lld PUT)\n", what, (long long)all,
            (long long)h_s3model_count(tc.model, "GET", NULL),
            (long long)h_s3model_count(tc.model, "HEAD", NULL),
            (long long)h_s3model_count(tc.model, "PUT", NULL));
    return all;
}

static void insert_rows(int i, int from, int n)
{
    size_t cap = (size_t)n * 48 + 64, len = 0;
    char *sql = malloc(cap);
    assert_non_null(sql);
    len += (size_t)snprintf(sql, cap, "INSERT INTO s VALUES ");
    for (int k = from; k < from + n; k++)
        len += (size_t)snprintf(sql + len, cap - len, "%s(%d, 'v%d')", k > from ? ", " : "", k, k);
    srv_query(i, sql);
    free(sql);
}

static void expect_rows_with(int i, long long n, const char *settings)
{
    char want[128], sql[256];
    snprintf(want, sizeof(want), "%lld\t%lld\n", n, n * (n - 1) / 2);
    snprintf(sql, sizeof(sql), "SELECT count(), sum(k) FROM s%s", settings);
    assert_string_equal(srv_query(i, sql), want);
}

static void expect_rows(int i, long long n)
{
    expect_rows_with(i, n, "");
}

static const char *const SEQ = " SETTINGS select_sequential_consistency = 1";

/* Server 0 keeps what it knows of a table's log for a minute, server 1 for
 * 300 ms, server 2 not at all (every query lists the log). */
static void test_server_asks_s3_for_the_log_only(void **state)
{
    (void)state;
    start_server(0, "60s");
    start_server(1, "300ms");
    start_server(2, "0");
    srv_query(0, "CREATE TABLE s (k UInt64, v String) ENGINE = MergeTree ORDER BY k");
    insert_rows(0, 0, 1000);
    expect_rows(0, 1000); /* the first open of the table reads its log */

    /* the same query again: nothing changed and the log was listed a moment
     * ago: S3 is asked nothing */
    assert_int_equal(h_s3model_reset(tc.model), 0);
    expect_rows(0, 1000);
    assert_int_equal(s3_requests("a repeated query"), 0);
    /* select_sequential_consistency = 1: one List of the log */
    assert_int_equal(h_s3model_reset(tc.model), 0);
    expect_rows_with(0, 1000, SEQ);
    assert_int_equal(s3_requests("a repeated query, sequentially consistent"), 1);

    /* after an INSERT on the same server: nothing either; the new part's
     * blocks are on the nodes and its size in the log */
    insert_rows(0, 1000, 1000);
    assert_int_equal(h_s3model_reset(tc.model), 0);
    expect_rows(0, 2000);
    assert_int_equal(s3_requests("the first query after an INSERT here"), 0);

    /* after an INSERT by another server: within server 0's interval its
     * queries read the table as it last saw it; a sequentially consistent
     * one lists the log and reads the new version (the new part's size and
     * version are in it: no HEAD), and the queries after it see it too */
    insert_rows(2, 2000, 1000);
    assert_int_equal(h_s3model_reset(tc.model), 0);
    expect_rows(0, 2000);
    assert_int_equal(s3_requests("a query after an INSERT there, within the interval"), 0);
    expect_rows_with(0, 3000, SEQ);
    int64_t n = s3_requests("a sequentially consistent query after an INSERT there");
    assert_int_equal(h_s3model_count(tc.model, "GET", NULL), 2);
    assert_int_equal(n, 2);
    assert_int_equal(h_s3model_reset(tc.model), 0);
    expect_rows(0, 3000);
    assert_int_equal(s3_requests("and again"), 0);

    /* server 2 lists the log for every query */
    expect_rows(2, 3000);
    assert_int_equal(h_s3model_reset(tc.model), 0);
    expect_rows(2, 3000);
    assert_int_equal(s3_requests("a repeated query on a server that keeps nothing"), 1);

    /* server 1: once its interval has passed, a query lists again and sees
     * another server's rows */
    expect_rows(1, 3000);
    insert_rows(2, 3000, 1000);
    nanosleep(&(struct timespec){0, 400 * 1000000L}, NULL);
    assert_int_equal(h_s3model_reset(tc.model), 0);
    expect_rows(1, 4000);
    assert_true(s3_requests("a query after the interval") >= 1);

    /* a DROP on server 2 is seen by the others when they ask */
    srv_query(2, "DROP TABLE s");
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", srv_port[0]);
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT count() FROM s%s", SEQ);
    h_http_req req = {.method = "POST", .url = url, .body = sql, .body_len = strlen(sql)};
    h_http_resp resp = {0};
    int st = h_http(&req, &resp);
    assert_true(st >= 400);
    assert_non_null(strstr(resp.body ? resp.body : "", "does not exist"));
    h_http_resp_deinit(&resp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_scan_after_insert_reads_only_the_log),
        cmocka_unit_test(test_server_asks_s3_for_the_log_only),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
