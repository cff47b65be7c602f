/* SPDX-License-Identifier: Apache-2.0
 *
 * test_tables_faults.c: tables under faults, through `ringcache query`
 * processes against the harness S3 server:
 *  - an INSERT killed with SIGKILL at a random moment, 24 times (8 under a
 *    sanitizer; a table each): the table holds the source rows once or not at all, never part
 *    of them, and every part reads whole; the same INSERT with the same
 *    insert_deduplication_token run to its end then leaves exactly the source
 *    rows, once;
 *  - OPTIMIZE TABLE ... FINAL killed mid-merge 12 times (4 under a sanitizer): the rows stay the
 *    same; a merge run to its end leaves one part per partition;
 *  - two processes inserting into one table at once, 4 rounds: every row
 *    lands once, and the log's versions are one unbroken sequence;
 *  - a flipped byte in a part object: the query fails naming the part and
 *    the column, never a wrong answer;
 *  - INSERT ... SELECT from a ragged CSV file: an error naming the file and
 *    the line, nothing committed.
 * The seed of the random moments is printed (TABLES_FAULTS_SEED repeats it).
 */
#include "harness.h"
#include "s3_test_util.h"
#include "s3.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#define KILLS       h_rounds(24, 8)
#define MERGE_KILLS h_rounds(12, 4)
#define ROWS        60000

static h_env *env;
static h_s3 *s3;
static char cli[4096], csv[4096], ep[300];
static uint64_t seed;

static int setup(void **state)
{
    (void)state;
    if (h_env_create(&env, "test_tables_faults") < 0)
        return -1;
    int rc = h_s3_start(env, &s3, NULL);
    if (rc == -ENOPKG)
        h_skip(h_last_error());
    if (rc < 0 || h_build_path(cli, sizeof(cli), H_RINGCACHE_CLI) < 0)
        return -1;
    snprintf(ep, sizeof(ep), "AWS_ENDPOINT_URL=%s", h_s3_endpoint(s3));
    /* the source: ROWS rows of (k, g, s) */
    h_env_path(env, csv, sizeof(csv), "src.csv");
    FILE *f = fopen(csv, "w");
    if (!f)
        return -1;
    for (int k = 0; k < ROWS; k++)
        fprintf(f, "%d,%d,row %d %08x\n", k, k % 4, k, (unsigned)(k * 2654435761u));
    fclose(f);
    const char *s = getenv("TABLES_FAULTS_SEED");
    seed = s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL);
    fprintf(stderr, "TABLES_FAULTS_SEED=%llu\n", (unsigned long long)seed);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    h_env_destroy(&env);
    return 0;
}

static uint64_t rnd(void)
{
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 11;
}

static char *cli_env[] = {"AWS_ACCESS_KEY_ID=S3RVER",
                          "AWS_SECRET_ACCESS_KEY=S3RVER",
                          "AWS_REGION=us-east-1",
                          ep,
                          "RINGCACHE_WAREHOUSE=s3://" H_S3_DEFAULT_BUCKET "/wh/",
                          "RINGCACHE_CACHE=",
                          NULL};

static h_run_result rr;

/* Runs sql to its end; its status, stdout in rr. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
    char sql[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    const char *argv[] = {cli, "query", "--format", "TSV", sql, NULL};
    assert_int_equal(h_run(env, &rr, argv, (const char *const *)cli_env), 0);
    return rr.status;
}

static void ok(const char *sql, const char *want)
{
    int st = run("%s", sql);
    if (st)
        fprintf(stderr, "%s: exit %d: %s\n", sql, st, rr.err);
    assert_int_equal(st, 0);
    if (want) {
        if (strcmp(rr.out, want))
            fprintf(stderr, "%s\n  gave [%s]\n  want [%s]\n", sql, rr.out, want);
        assert_string_equal(rr.out, want);
    }
}

/* Starts sql in a process of its own. */
static h_proc *start(const char *name, const char *sql)
{
    char *argv[] = {cli, "query", "--format", "TSV", (char *)sql, NULL};
    h_proc *p;
    assert_int_equal(h_proc_start(env, &p, name, argv, cli_env, NULL, 0), 0);
    return p;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(double ms)
{
    struct timespec ts = {(time_t)(ms / 1000),
                          (long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6)};
    nanosleep(&ts, NULL);
}

static char want_all[64];

static void test_kill9_insert(void **state)
{
    (void)state;
    snprintf(want_all, sizeof(want_all), "%d\t%lld\n", ROWS, (long long)ROWS * (ROWS - 1) / 2);
    /* how long one takes, on a table of its own */
    ok("CREATE TABLE probe (k UInt64, g UInt8, s String) ENGINE = MergeTree ORDER BY k "
       "PARTITION BY g",
       NULL);
    char ins[8192];
    snprintf(ins, sizeof(ins),
             "INSERT INTO probe SELECT * FROM file('%s', 'CSV') SETTINGS "
             "insert_deduplication_token = 'probe', max_insert_threads = 2, "
             "min_insert_block_size_rows = 5000",
             csv);
    double t0 = now_ms();
    h_proc *pp = start("probe", ins);
    assert_int_equal(h_proc_wait(pp, 120000), 0);
    double span = now_ms() - t0;
    fprintf(stderr, "one insert takes %.0f ms\n", span);
    int finished = 0, committed = 0;
    for (int i = 0; i < KILLS; i++) {
        char sql[8192];
        snprintf(sql, sizeof(sql),
                 "CREATE TABLE k%d (k UInt64, g UInt8, s String) ENGINE = "
                 "MergeTree ORDER BY k PARTITION BY g",
                 i);
        ok(sql, NULL);
        snprintf(ins, sizeof(ins),
                 "INSERT INTO k%d SELECT * FROM file('%s', 'CSV') SETTINGS "
                 "insert_deduplication_token = 'load-%d', max_insert_threads = 2, "
                 "min_insert_block_size_rows = 5000",
                 i, csv, i);
        h_proc *p = start("insert", ins);
        sleep_ms((double)(rnd() % 1000) / 1000.0 * span * 1.4);
        if (h_proc_wait(p, 0) == 0)
            finished++;
        h_proc_kill(p, SIGKILL);
        h_proc_wait(p, 10000);
        /* the rows are there once or not at all, and every part reads whole */
        snprintf(sql, sizeof(sql), "SELECT count(), sum(k) FROM k%d", i);
        ok(sql, NULL);
        bool none = strcmp(rr.out, "0\t0\n") == 0, all = strcmp(rr.out, want_all) == 0;
        if (!none && !all)
            fprintf(stderr, "after kill %d: %s", i, rr.out);
        assert_true(none || all);
        committed += all;
        snprintf(sql, sizeof(sql), "SELECT count() FROM k%d WHERE s LIKE 'row %%'", i);
        ok(sql, none ? "0\n" : "60000\n");
        /* the same INSERT, same token, to its end: the source rows exactly once */
        ok(ins, NULL);
        snprintf(sql, sizeof(sql), "SELECT count(), sum(k) FROM k%d", i);
        ok(sql, want_all);
        snprintf(sql, sizeof(sql), "SELECT count(), uniqExact(k) FROM k%d", i);
        ok(sql, "60000\t60000\n");
    }
    fprintf(stderr, "%d kills: %d inserts had finished, %d had committed, %d had not\n", KILLS,
            finished, committed, KILLS - committed);
}

static void test_kill9_merge(void **state)
{
    (void)state;
    ok("CREATE TABLE mg (k UInt64, g UInt8, s String) ENGINE = MergeTree ORDER BY k "
       "PARTITION BY g",
       NULL);
    char ins[8192];
    snprintf(ins, sizeof(ins),
             "INSERT INTO mg SELECT * FROM file('%s', 'CSV') SETTINGS "
             "min_insert_block_size_rows = 4000",
             csv);
    ok(ins, NULL);
    ok("SELECT count() FROM system.parts WHERE table = 'mg' AND active", NULL);
    assert_true(atoi(rr.out) >= 40);
    double t0 = now_ms();
    ok("CREATE TABLE mprobe (k UInt64, g UInt8, s String) ENGINE = MergeTree ORDER BY k "
       "PARTITION BY g",
       NULL);
    char probe[8192];
    snprintf(probe, sizeof(probe),
             "INSERT INTO mprobe SELECT * FROM file('%s', 'CSV') SETTINGS "
             "min_insert_block_size_rows = 4000",
             csv);
    ok(probe, NULL);
    t0 = now_ms();
    ok("OPTIMIZE TABLE mprobe FINAL", NULL);
    double span = now_ms() - t0;
    fprintf(stderr, "one OPTIMIZE FINAL takes %.0f ms\n", span);
    for (int i = 0; i < MERGE_KILLS; i++) {
        h_proc *p = start("optimize", "OPTIMIZE TABLE mg FINAL");
        sleep_ms((double)(rnd() % 1000) / 1000.0 * span * 0.9);
        h_proc_kill(p, SIGKILL);
        h_proc_wait(p, 10000);
        ok("SELECT count(), sum(k) FROM mg", want_all);
    }
    ok("OPTIMIZE TABLE mg FINAL", NULL);
    ok("SELECT count(), sum(rows) FROM system.parts WHERE table = 'mg' AND active", "4\t60000\n");
    ok("SELECT count(), sum(k) FROM mg", want_all);
}

static void test_two_writers(void **state)
{
    (void)state;
    ok("CREATE TABLE two (k UInt64, w UInt8) ENGINE = MergeTree ORDER BY k", NULL);
    char a[8192], b[8192];
    uint64_t want = 0, rows = 0;
    for (int round = 0; round < 4; round++) {
        /* different rows for each writer and round: nothing to deduplicate */
        snprintf(a, sizeof(a),
                 "INSERT INTO two SELECT c1 + %d, 1 FROM file('%s', 'CSV') "
                 "SETTINGS min_insert_block_size_rows = 10000",
                 round * 2 * ROWS, csv);
        snprintf(b, sizeof(b),
                 "INSERT INTO two SELECT c1 + %d, 2 FROM file('%s', 'CSV') "
                 "SETTINGS min_insert_block_size_rows = 10000",
                 (round * 2 + 1) * ROWS, csv);
        h_proc *pa = start("writer_a", a), *pb = start("writer_b", b);
        int sa = h_proc_wait(pa, 120000), sb = h_proc_wait(pb, 120000);
        if (sa || sb) {
            h_proc_print_log_tail(pa, 5);
            h_proc_print_log_tail(pb, 5);
        }
        assert_int_equal(sa, 0);
        assert_int_equal(sb, 0);
        for (int w = 0; w < 2; w++)
            for (uint64_t k = 0; k < ROWS; k++)
                want += k + (uint64_t)(round * 2 + w) * ROWS;
        rows += 2 * ROWS;
    }
    char w[64];
    snprintf(w, sizeof(w), "%llu\t%llu\t%llu\n", (unsigned long long)rows, (unsigned long long)want,
             (unsigned long long)rows);
    ok("SELECT count(), sum(k), uniqExact(k) FROM two", w);
    /* the versions: 0 (CREATE), then one per insert, none missing, none twice */
    s3_config cfg;
    t_s3_config(&cfg, h_s3_endpoint(s3), NULL, NULL);
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &cfg), 0);
    for (int v = 0; v <= 8; v++) {
        char key[200];
        snprintf(key, sizeof(key), "wh/default/two/_log/%020d.json", v);
        s3_object_info oi;
        memset(&oi, 0, sizeof(oi));
        s3_error e;
        assert_int_equal(s3_sync_head(s, H_S3_DEFAULT_BUCKET, key, &oi, &e), 0);
    }
    char key[200];
    snprintf(key, sizeof(key), "wh/default/two/_log/%020d.json", 9);
    s3_object_info oi;
    memset(&oi, 0, sizeof(oi));
    s3_error e;
    assert_int_equal(s3_sync_head(s, H_S3_DEFAULT_BUCKET, key, &oi, &e), -ENOENT);
    s3_sync_destroy(&s);
}

static void test_flipped_byte_and_ragged_source(void **state)
{
    (void)state;
    ok("CREATE TABLE fb (k UInt64, s String) ENGINE = MergeTree ORDER BY k", NULL);
    char ins[8192];
    snprintf(ins, sizeof(ins), "INSERT INTO fb SELECT c1, c3 FROM file('%s', 'CSV')", csv);
    ok(ins, NULL);
    ok("SELECT name FROM system.parts WHERE table = 'fb'", NULL);
    char name[200];
    snprintf(name, sizeof(name), "%.*s", (int)strcspn(rr.out, "\n"), rr.out);
    /* flip a byte in the middle of the object (a data block) */
    s3_config cfg;
    t_s3_config(&cfg, h_s3_endpoint(s3), NULL, NULL);
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &cfg), 0);
    char key[400];
    snprintf(key, sizeof(key), "wh/default/fb/data/%s.part", name);
    s3_object_info oi;
    memset(&oi, 0, sizeof(oi));
    s3_error e;
    assert_int_equal(s3_sync_head(s, H_S3_DEFAULT_BUCKET, key, &oi, &e), 0);
    uint8_t *buf = malloc(oi.size);
    assert_non_null(buf);
    s3_sync_get_args ga = {.bucket = H_S3_DEFAULT_BUCKET,
                           .key = key,
                           .fd = -1,
                           .buf = buf,
                           .cap = oi.size,
                           .offset = 0,
                           .length = oi.size,
                           .parallel = 1};
    assert_int_equal(s3_sync_get(s, &ga, &e), (int64_t)oi.size);
    buf[oi.size / 3] ^= 0x40;
    s3_sync_put_args pa = {
        .bucket = H_S3_DEFAULT_BUCKET, .key = key, .fd = -1, .data = buf, .size = oi.size};
    assert_int_equal(s3_sync_put(s, &pa, NULL, &e), 0);
    free(buf);
    s3_sync_destroy(&s);
    int st = run("SELECT sum(k), count(), max(s) FROM fb");
    fprintf(stderr, "flipped byte: %s", rr.err);
    assert_int_not_equal(st, 0);
    assert_non_null(strstr(rr.err, name));
    assert_non_null(strstr(rr.err, "column"));

    /* a ragged source file: an error naming it and the line, nothing committed */
    char rag[4096];
    h_env_path(env, rag, sizeof(rag), "ragged.csv");
    FILE *f = fopen(rag, "w");
    assert_non_null(f);
    fprintf(f, "1,a\n2,b\n3\n4,d\n");
    fclose(f);
    ok("CREATE TABLE rg (k UInt64, s String) ENGINE = MergeTree ORDER BY k", NULL);
    st = run("INSERT INTO rg SELECT * FROM file('%s', 'CSV')", rag);
    fprintf(stderr, "ragged: %s", rr.err);
    assert_int_not_equal(st, 0);
    assert_non_null(strstr(rr.err, "ragged.csv"));
    assert_non_null(strstr(rr.err, "line 3"));
    ok("SELECT count() FROM rg", "0\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill9_insert),
        cmocka_unit_test(test_kill9_merge),
        cmocka_unit_test(test_two_writers),
        cmocka_unit_test(test_flipped_byte_and_ragged_source),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
