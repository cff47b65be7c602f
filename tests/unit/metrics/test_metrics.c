/* SPDX-License-Identifier: Apache-2.0
 *
 * test_metrics.c: the metrics registry (cached/metrics.h) on one thread:
 * registration rules, counters summed over slots, gauges (value, delta,
 * callback), histogram buckets at their edges, and the exact Prometheus text,
 * including metrics of one name with different labels under one HELP/TYPE.
 */
#include "metrics.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static void test_create_destroy(void **state)
{
    (void)state;
    met_registry *r = (met_registry *)0x1;
    assert_int_equal(met_create(&r, 0), -EINVAL);
    assert_null(r);
    assert_int_equal(met_create(&r, 100000), -EINVAL);
    assert_int_equal(met_create(&r, 3), 0);
    assert_int_equal(met_shared_slot(r), 3);
    met_destroy(&r);
    assert_null(r);
    met_destroy(&r);
    met_destroy(NULL);
}

static void test_register_rules(void **state)
{
    (void)state;
    met_registry *r;
    assert_int_equal(met_create(&r, 2), 0);
    static const met_def a[] = {
        {"ringcached_hits_total", "hits", MET_COUNTER, "tier=\"ram\""},
        {"ringcached_hits_total", "hits", MET_COUNTER, "tier=\"ssd\""},
        {"ringcached_up", "up", MET_GAUGE, NULL},
    };
    assert_int_equal(met_register(r, a, 3), 0);
    static const met_def b[] = {{"ringcached_latency_seconds", "lat", MET_HISTOGRAM, ""}};
    assert_int_equal(met_register(r, b, 1), 3);

    static const met_def bad[][1] = {
        {{"1abc", "h", MET_COUNTER, NULL}},
        {{"a-b", "h", MET_COUNTER, NULL}},
        {{"", "h", MET_COUNTER, NULL}},
        {{NULL, "h", MET_COUNTER, NULL}},
        {{"x", NULL, MET_COUNTER, NULL}},
        {{"x", "h", (met_kind)7, NULL}},
        {{"x", "h", MET_COUNTER, "tier=ram"}},
        {{"x", "h", MET_COUNTER, "tier=\"ram\","}},
        {{"x", "h", MET_COUNTER, "__x=\"1\""}},
        {{"x", "h", MET_COUNTER, "a=\"b\\q\""}},
        {{"x", "h", MET_HISTOGRAM, "le=\"1\""}},
        {{"ringcached_up", "up", MET_COUNTER, "x=\"1\""}}, /* same name, other kind */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(met_register(r, bad[i], 1), -EINVAL);
    assert_int_equal(met_register(r, &a[1], 1), -EEXIST);
    static const met_def twice[] = {{"y", "h", MET_GAUGE, "a=\"1\""},
                                    {"y", "h", MET_GAUGE, "a=\"1\""}};
    assert_int_equal(met_register(r, twice, 2), -EEXIST);
    /* nothing of a refused table was added */
    static const met_def ok[] = {{"y", "h", MET_GAUGE, "a=\"1\",b=\"x\\\"y\""}};
    assert_int_equal(met_register(r, ok, 1), 4);
    met_destroy(&r);
}

static void test_counters_and_gauges(void **state)
{
    (void)state;
    met_registry *r;
    assert_int_equal(met_create(&r, 3), 0);
    static const met_def d[] = {
        {"c_total", "c", MET_COUNTER, NULL},
        {"g", "g", MET_GAUGE, NULL},
    };
    int base = met_register(r, d, 2);
    assert_int_equal(base, 0);
    met_add(r, 0, 0, 5);
    met_add(r, 1, 0, 7);
    met_add(r, 2, 0, 1);
    met_add(r, met_shared_slot(r), 0, 100);
    assert_int_equal(met_get(r, 0), 113);

    met_set(r, 1, -42);
    assert_int_equal((int64_t)met_get(r, 1), -42);
    met_gauge_add(r, 1, 50);
    assert_int_equal((int64_t)met_get(r, 1), 8);
    assert_int_equal(met_set_fn(r, 9, NULL, NULL), -EINVAL);
    met_destroy(&r);
}

static int64_t times_two(void *arg)
{
    return 2 * *(int64_t *)arg;
}

static void test_gauge_callback(void **state)
{
    (void)state;
    met_registry *r;
    assert_int_equal(met_create(&r, 1), 0);
    static const met_def d[] = {{"ringcached_bytes_used", "bytes", MET_GAUGE, NULL}};
    assert_int_equal(met_register(r, d, 1), 0);
    int64_t owned = 21;
    assert_int_equal(met_set_fn(r, 0, times_two, &owned), 0);
    assert_int_equal(met_get(r, 0), 42);
    owned = 1000;
    char *text;
    size_t len;
    assert_int_equal(met_render(r, &text, &len), 0);
    assert_non_null(strstr(text, "\nringcached_bytes_used 2000\n"));
    free(text);
    met_set(r, 0, 7); /* back to a plain value */
    assert_int_equal(met_get(r, 0), 7);
    met_destroy(&r);
}

/* Scaled values: a counter of microseconds rendered in seconds, a gauge of
 * milliseconds, negative ones too; raw counts through met_get; only powers of
 * 10, never on a histogram. */
static void test_scaled_values(void **state)
{
    (void)state;
    met_registry *r;
    assert_int_equal(met_create(&r, 1), 0);
    static const met_def d[] = {
        {"process_cpu_seconds_total", "cpu", MET_COUNTER, NULL},
        {"up_seconds", "up", MET_GAUGE, NULL},
        {"lat_seconds", "lat", MET_HISTOGRAM, NULL},
    };
    assert_int_equal(met_register(r, d, 3), 0);
    assert_int_equal(met_set_scale(r, 0, 1000000), 0);
    assert_int_equal(met_set_scale(r, 1, 1000), 0);
    assert_int_equal(met_set_scale(r, 2, 1000), -EINVAL);
    assert_int_equal(met_set_scale(r, 1, 1024), -EINVAL);
    assert_int_equal(met_set_scale(r, 1, 0), -EINVAL);
    assert_int_equal(met_set_scale(r, 3, 10), -EINVAL);
    met_add(r, 0, 0, 12345678);
    met_set(r, 1, -1500);
    char *text;
    size_t len;
    assert_int_equal(met_render(r, &text, &len), 0);
    assert_non_null(strstr(text, "\nprocess_cpu_seconds_total 12.345678\n"));
    assert_non_null(strstr(text, "\nup_seconds -1.500\n"));
    free(text);
    assert_int_equal(met_get(r, 0), 12345678);
    met_set(r, 1, 7);
    assert_int_equal(met_render(r, &text, &len), 0);
    assert_non_null(strstr(text, "\nup_seconds 0.007\n"));
    free(text);
    met_destroy(&r);
}

/* A counter fed by a running total kept elsewhere (the block store's
 * checksum failures): TYPE counter, its own additions included, and never
 * lower than it was, even when the total it reads goes back. */
static void test_counter_callback(void **state)
{
    (void)state;
    met_registry *r;
    assert_int_equal(met_create(&r, 1), 0);
    static const met_def d[] = {
        {"ringcached_checksum_failures_total", "failures", MET_COUNTER, NULL},
        {"h", "h", MET_HISTOGRAM, NULL},
    };
    assert_int_equal(met_register(r, d, 2), 0);
    int64_t owned = 3;
    assert_int_equal(met_set_fn(r, 0, times_two, &owned), 0);
    assert_int_equal(met_set_fn(r, 1, times_two, &owned), -EINVAL); /* a histogram */
    assert_int_equal(met_get(r, 0), 6);
    met_add(r, 0, 0, 1);
    assert_int_equal(met_get(r, 0), 7);
    owned = 1; /* the total went back (a reopened store): the counter does not */
    assert_int_equal(met_get(r, 0), 7);
    owned = 10;
    char *text;
    size_t len;
    assert_int_equal(met_render(r, &text, &len), 0);
    assert_non_null(strstr(text, "# TYPE ringcached_checksum_failures_total counter\n"
                                 "ringcached_checksum_failures_total 21\n"));
    free(text);
    met_destroy(&r);
}

static void test_histogram_edges(void **state)
{
    (void)state;
    met_registry *r;
    assert_int_equal(met_create(&r, 2), 0);
    static const met_def d[] = {{"lat_seconds", "latency", MET_HISTOGRAM, NULL}};
    assert_int_equal(met_register(r, d, 1), 0);
    met_observe_us(r, 0, 0, 0);        /* first bucket */
    met_observe_us(r, 0, 0, 50);       /* le 5e-05, on the bound */
    met_observe_us(r, 1, 0, 51);       /* le 0.0001 */
    met_observe_us(r, 2, 0, 10000000); /* le 10, on the last bound (shared slot) */
    met_observe_us(r, 1, 0, 10000001); /* +Inf only */
    uint64_t sum, cum[MET_HIST_BUCKETS + 1];
    assert_int_equal(met_get_histogram(r, 0, &sum, cum), 0);
    assert_int_equal(sum, 0 + 50 + 51 + 10000000 + 10000001);
    assert_int_equal(cum[0], 2);
    assert_int_equal(cum[1], 3);
    assert_int_equal(cum[MET_HIST_BUCKETS - 2], 3);
    assert_int_equal(cum[MET_HIST_BUCKETS - 1], 4);
    assert_int_equal(cum[MET_HIST_BUCKETS], 5);
    assert_int_equal(met_get(r, 0), 5);
    assert_int_equal(met_get_histogram(r, 1, &sum, cum), -EINVAL);
    met_destroy(&r);
}

static void test_render_exact(void **state)
{
    (void)state;
    met_registry *r;
    assert_int_equal(met_create(&r, 2), 0);
    static const met_def store[] = {
        {"ringcached_hits_total", "Blocks served from the cache.", MET_COUNTER, "tier=\"ram\""},
        {"ringcached_conns", "Open connections\nnow; a \\ b.", MET_GAUGE, NULL},
    };
    static const met_def more[] = {
        {"ringcached_hits_total", "ignored: the first help wins", MET_COUNTER, "tier=\"ssd\""},
        {"ringcached_req_seconds", "Request latency.", MET_HISTOGRAM, "op=\"get\""},
    };
    assert_int_equal(met_register(r, store, 2), 0);
    assert_int_equal(met_register(r, more, 2), 2);
    met_add(r, 0, 0, 3);
    met_add(r, 1, 2, 4);
    met_set(r, 1, -1);
    met_observe_us(r, 0, 3, 1500000);
    char *text;
    size_t len;
    assert_int_equal(met_render(r, &text, &len), 0);
    assert_int_equal(len, strlen(text));
    const char *want = "# HELP ringcached_hits_total Blocks served from the cache.\n"
                       "# TYPE ringcached_hits_total counter\n"
                       "ringcached_hits_total{tier=\"ram\"} 3\n"
                       "ringcached_hits_total{tier=\"ssd\"} 4\n"
                       "# HELP ringcached_conns Open connections\\nnow; a \\\\ b.\n"
                       "# TYPE ringcached_conns gauge\n"
                       "ringcached_conns -1\n"
                       "# HELP ringcached_req_seconds Request latency.\n"
                       "# TYPE ringcached_req_seconds histogram\n"
                       "ringcached_req_seconds_bucket{op=\"get\",le=\"5e-05\"} 0\n"
                       "ringcached_req_seconds_bucket{op=\"get\",le=\"0.0001\"} 0\n"
                       "ringcached_req_seconds_bucket{op=\"get\",le=\"0.00025\"} 0\n"
                       "ringcached_req_seconds_bucket{op=\"get\",le=\"0.0005\"} 0\n"
                       "ringcached_req_seconds_bucket{op=\"get\",le=\"0.001\"} 0\n"
                       "ringcached_req_seconds_bucket{op=\"get\",le=\"0.0025\"} 0\n"
                       "ringcached_req_seconds_bucket{op=\"get\",le=\"0.005\"} 0\n"
                       "ringcached_req_seconds_bucket{op=\"get\",le=\"0.01\"} 0\n"
                       "ringcached_req_seconds_bucket{op=\"get\",le=\"0.025\"} 0\n"
                       "ringcached_req_seconds_bucket{op=\"get\",le=\"0.05\"} 0\n"
                       "ringcached_req_seconds_bucket{op=\"get\",le=\"0.1\"} 0\n"
                       "ringcached_req_seconds_bucket{op=\"get\",le=\"0.25\"} 0\n"
                       "ringcached_req_seconds_bucket{op=\"get\",le=\"0.5\"} 0\n"
                       "ringcached_req_seconds_bucket{op=\"get\",le=\"1\"} 0\n"
                       "ringcached_req_seconds_bucket{op=\"get\",le=\"2.5\"} 1\n"
                       "ringcached_req_seconds_bucket{op=\"get\",le=\"5\"} 1\n"
                       "ringcached_req_seconds_bucket{op=\"get\",le=\"10\"} 1\n"
                       "ringcached_req_seconds_bucket{op=\"get\",le=\"+Inf\"} 1\n"
                       "ringcached_req_seconds_sum{op=\"get\"} 1.500000\n"
                       "ringcached_req_seconds_count{op=\"get\"} 1\n";
    assert_string_equal(text, want);
    free(text);

    /* an unlabelled histogram has no empty braces on _sum and _count */
    static const met_def h[] = {{"plain_seconds", "p", MET_HISTOGRAM, NULL}};
    assert_int_equal(met_register(r, h, 1), 4);
    assert_int_equal(met_render(r, &text, &len), 0);
    assert_non_null(strstr(text, "\nplain_seconds_bucket{le=\"+Inf\"} 0\n"));
    assert_non_null(strstr(text, "\nplain_seconds_sum 0.000000\nplain_seconds_count 0\n"));
    free(text);
    met_destroy(&r);
}

static void test_render_large(void **state)
{
    (void)state;
    /* more text than the first buffer: the buffer grows */
    met_registry *r;
    assert_int_equal(met_create(&r, 1), 0);
    static char names[300][32];
    static met_def d[300];
    for (int i = 0; i < 300; i++) {
        snprintf(names[i], sizeof names[i], "m%03d_seconds", i);
        d[i] = (met_def){names[i], "a histogram", MET_HISTOGRAM, NULL};
    }
    assert_int_equal(met_register(r, d, 300), 0);
    met_observe_us(r, 0, 299, 5);
    char *text;
    size_t len;
    assert_int_equal(met_render(r, &text, &len), 0);
    assert_true(len > 100000);
    assert_non_null(strstr(text, "m299_seconds_count 1\n"));
    assert_int_equal(text[len], '\0');
    free(text);
    met_destroy(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_destroy),      cmocka_unit_test(test_register_rules),
        cmocka_unit_test(test_counters_and_gauges), cmocka_unit_test(test_gauge_callback),
        cmocka_unit_test(test_counter_callback),    cmocka_unit_test(test_scaled_values),
        cmocka_unit_test(test_histogram_edges),     cmocka_unit_test(test_render_exact),
        cmocka_unit_test(test_render_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
