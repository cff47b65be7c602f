/* SPDX-License-Identifier: Apache-2.0
 *
 * test_engine_memory.c: the peak memory a query's summary reports is the
 * memory it really touched: within 10% of the growth of the process's
 * resident set, read from /proc, for three shapes over 5M generated rows
 * (memgen.mjs, DuckDB): a GROUP BY over 5M distinct strings, a wide SELECT *
 * with ORDER BY (2.6M rows held and sorted), and a Parquet scan with string
 * aggregates over few groups. Each query runs in a process of its own (this
 * binary again, --probe), after the same query over a small file (so code
 * pages and thread arenas are in place), with the peak RSS reset
 * (clear_refs 5) just before it: the growth is VmHWM after minus VmRSS
 * before. Memory, not time: a band is a fair assertion, 10% or 2 MiB,
 * whichever is larger. The scan shape (about 15 MiB) sits near 0.89-0.91 (2
 * threads): glibc keeps about 0.6 MiB of freed batch buffers per worker
 * thread's arena once its mmap threshold has risen, which is resident but
 * not the query's (with a fixed threshold, MALLOC_MMAP_THRESHOLD_=131072,
 * the same shape gives 0.998). Skips (77)
 * without node or @duckdb/node-api, and in sanitizer builds (their shadow
 * memory and quarantine are in the RSS).
 */
#include "duck_compare.h"
#include "eng.h"
#include "harness.h"

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

#define ROWS    5000000
#define THREADS "2"

static h_env *env;
static char dir[4096];

/* A field of /proc/self/status in KiB, -1 when absent. */
static long status_kib(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, key, kl) == 0)
            v = strtol(line + kl, NULL, 10);
    fclose(f);
    return v;
}

static int run_sql(const char *sql, int threads, eng_result *res)
{
    FILE *out = fopen("/dev/null", "w");
    if (!out)
        return -errno;
    eng_ctx ctx = {.out = out, .format = ENG_FMT_TSV, .max_threads = threads};
    char err[ENG_MSG_MAX];
    int rc = eng_run(&ctx, sql, strlen(sql), NULL, res, err, sizeof(err));
    fclose(out);
    if (rc < 0)
        fprintf(stderr, "%s: %s\n", sql, err);
    return rc;
}

/* The probe: warm-up query, peak RSS reset, the measured query; prints
 * "rss_before_kib hwm_kib peak_bytes". */
static int probe(const char *sql, const char *warm, int threads)
{
    eng_result res;
    if (run_sql(warm, threads, &res) < 0)
        return 1;
    int fd = open("/proc/self/clear_refs", O_WRONLY);
    if (fd < 0 || write(fd, "5", 1) != 1) {
        fprintf(stderr, "cannot reset the peak RSS (/proc/self/clear_refs): %s\n", strerror(errno));
        return 77;
    }
    close(fd);
    long before = status_kib("VmRSS:");
    if (run_sql(sql, threads, &res) < 0)
        return 1;
    long hwm = status_kib("VmHWM:");
    printf("%ld %ld %lld\n", before, hwm, (long long)res.peak_memory);
    return 0;
}

static int setup(void **state)
{
    (void)state;
#ifdef ENG_TEST_SANITIZED
    h_skip("a sanitizer's shadow memory and quarantine are in the RSS: run in a release build");
#endif
    if (h_env_create(&env, "test_engine_memory") < 0)
        return -1;
    h_env_path(env, dir, sizeof(dir), "data");
    if (mkdir(dir, 0755) != 0)
        return -1;
    char rows[32];
    snprintf(rows, sizeof(rows), "%d", ROWS);
    return dc_generate(env, "memgen", "tests/integration/engine/memgen.mjs",
                       (const char *[]){dir, rows, NULL}, 240000);
}

static int teardown(void **state)
{
    (void)state;
    h_env_destroy(&env);
    return 0;
}

/* Runs shape (a query with {F} for the file) in a probe process and asserts
 * the reported peak is within 10% of the RSS growth. */
static void check_shape(const char *name, const char *shape)
{
    char big[4300], small[4300], sql[8192], warm[8192];
    snprintf(big, sizeof(big), "%s/rows.parquet", dir);
    snprintf(small, sizeof(small), "%s/small.parquet", dir);
    const char *at = strstr(shape, "{F}");
    assert_non_null(at);
    snprintf(sql, sizeof(sql), "%.*s%s%s", (int)(at - shape), shape, big, at + 3);
    snprintf(warm, sizeof(warm), "%.*s%s%s", (int)(at - shape), shape, small, at + 3);
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    assert_true(n > 0);
    self[n] = 0;
    const char *argv[] = {self, "--probe", sql, warm, THREADS, NULL};
    h_run_result *r = malloc(sizeof(*r));
    assert_non_null(r);
    assert_int_equal(h_run(env, r, argv, NULL), 0);
    if (r->status == 77) {
        fprintf(stderr, "%s", r->err);
        free(r);
        h_skip("the peak RSS cannot be reset here");
    }
    if (r->status != 0)
        fprintf(stderr, "%s: probe exit %d: %s\n", name, r->status, r->err);
    assert_int_equal(r->status, 0);
    long before = 0, hwm = 0;
    long long peak = 0;
    assert_int_equal(sscanf(r->out, "%ld %ld %lld", &before, &hwm, &peak), 3);
    free(r);
    double growth = (double)(hwm - before) * 1024.0;
    double ratio = growth > 0 ? (double)peak / growth : 0;
    fprintf(stderr, "%s: peak memory %.1f MiB, RSS growth %.1f MiB (%ld -> %ld KiB): %.3f\n", name,
            (double)peak / 1048576.0, growth / 1048576.0, before, hwm, ratio);
    assert_true(growth > 4.0 * 1048576.0); /* a shape that measures something */
    /* within 10%, or within what glibc's arenas keep of freed buffers
     * (about 0.6 MiB per thread: 2 MiB for the workers and the main
     * thread), which decides a shape of a few MiB */
    double slack = growth * 0.1 > 2.0 * 1048576.0 ? growth * 0.1 : 2.0 * 1048576.0;
    assert_true((double)peak >= growth - slack && (double)peak <= growth + slack);
}

static void test_group_by_5m_distinct_strings(void **state)
{
    (void)state;
    check_shape("GROUP BY name", "SELECT name, count(), sum(v) FROM file('{F}') GROUP BY name");
}

static void test_wide_select_order_by(void **state)
{
    (void)state;
    check_shape("SELECT * ORDER BY",
                "SELECT * FROM file('{F}') WHERE id % 100 < 52 ORDER BY v DESC, name");
}

static void test_parquet_scan_string_aggregates(void **state)
{
    (void)state;
    check_shape("scan, string aggregates",
                "SELECT k, min(name), max(title), count() FROM file('{F}') GROUP BY k");
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--probe") == 0)
        return probe(argv[2], argv[3], atoi(argv[4]));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_by_5m_distinct_strings),
        cmocka_unit_test(test_wide_select_order_by),
        cmocka_unit_test(test_parquet_scan_string_aggregates),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
