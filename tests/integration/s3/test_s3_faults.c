/* SPDX-License-Identifier: Apache-2.0
 *
 * test_s3_faults.c: the S3 client's retry policy against faults injected by the
 * S3 model proxy in front of a real s3rver: 503 SlowDown and connection resets
 * are retried and counted (at the model and by the client), retries are
 * bounded, a stalled server is a timeout,
 * and a multipart upload that fails is aborted (the model counts the abort:
 * s3rver itself answers 405 to it).
 */
#include "s3_test_util.h"

#include <errno.h>
#include <event2/event.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

typedef struct {
    int done;
    s3_error err;
    s3_get_result res;
} get_wait;

static void get_cb(const s3_error *e, const s3_get_result *r, void *arg)
{
    get_wait *w = arg;
    w->err = *e;
    w->res = *r;
    w->done = 1;
}

static h_env *env;
static h_s3 *s3;
static h_s3model *model;
static s3_config cfg;
static const char *bucket = H_S3_DEFAULT_BUCKET;

static int setup(void **state)
{
    (void)state;
    if (h_env_create(&env, "test_s3_faults") < 0)
        return -1;
    s3 = t_start_s3(env, 3);
    int rc = h_s3model_start(env, &model, h_s3_port(s3), 0, 0);
    if (rc == -ENOENT)
        h_skip("the S3 model (bench/s3model/s3model) is not built");
    if (rc < 0)
        return -1;
    t_s3_config(&cfg, h_s3model_endpoint(model), NULL, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    int st = h_proc_stop(h_s3model_proc(model), 5000);
    h_env_destroy(&env);
    return st == 0 ? 0 : -1; /* the model exits cleanly (sanitizer reports fail) */
}

static void put_obj(s3_sync *s, const char *key, const void *data, size_t len)
{
    s3_error err;
    s3_sync_put_args pa = {.bucket = bucket, .key = key, .fd = -1, .data = data, .size = len};
    int rc = s3_sync_put(s, &pa, NULL, &err);
    if (rc < 0)
        fprintf(stderr, "%s\n", err.message);
    assert_int_equal(rc, 0);
}

static void test_503_retried_and_counted(void **state)
{
    (void)state;
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &cfg), 0);
    put_obj(s, "f/slow", "0123456789", 10);
    assert_int_equal(h_s3model_reset(model), 0);
    assert_int_equal(h_s3model_fault(model, "503", 3, "GET", "f/slow", 0), 0);

    struct event_base *base = event_base_new();
    s3_client *c;
    assert_int_equal(s3_client_create(&c, &cfg, base), 0);
    char buf[10];
    get_wait w = {0};
    s3_get_args ga = {.bucket = bucket, .key = "f/slow", .buf = buf, .cap = sizeof(buf)};
    assert_int_equal(s3_get(c, &ga, get_cb, &w), 0);
    while (!w.done)
        event_base_loop(base, EVLOOP_ONCE);
    assert_int_equal(w.err.code, 0);
    assert_int_equal(w.err.attempts, 4);
    assert_memory_equal(buf, "0123456789", 10);
    s3_client_stats st;
    s3_client_stats_get(c, &st);
    assert_int_equal(st.retries, 3);
    assert_int_equal(h_s3model_count(model, "GET", "/ringcache-test/f/slow"), 4);
    assert_int_equal(h_s3model_stat(model, "faults_503"), 3);
    s3_client_destroy(&c);
    event_base_free(base);

    /* more 503s than attempts: a clear error, bounded */
    s3_config few = cfg;
    few.max_attempts = 3;
    s3_sync *s2;
    assert_int_equal(s3_sync_create(&s2, &few), 0);
    assert_int_equal(h_s3model_reset(model), 0);
    assert_int_equal(h_s3model_fault(model, "503", 10, "HEAD", "f/slow", 0), 0);
    s3_error err;
    s3_object_info info;
    assert_true(s3_sync_head(s2, bucket, "f/slow", &info, &err) < 0);
    fprintf(stderr, "503 x10: %s\n", err.message);
    assert_int_equal(err.attempts, 3);
    assert_int_equal(err.http_status, 503);
    assert_non_null(strstr(err.message, "f/slow"));
    assert_int_equal(h_s3model_count(model, "HEAD", "/ringcache-test/f/slow"), 3);
    assert_int_equal(h_s3model_fault(model, "none", 0, NULL, NULL, 0), 0); /* disarm */
    s3_sync_destroy(&s2);
    s3_sync_destroy(&s);
}

static void test_reset_retried_and_resumed(void **state)
{
    (void)state;
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &cfg), 0);
    size_t size = 3u << 20;
    unsigned char *data = t_alloc_data(size, 9);
    put_obj(s, "f/reset", data, size);
    assert_int_equal(h_s3model_reset(model), 0);
    assert_int_equal(h_s3model_fault(model, "reset", 2, "GET", "f/reset", 0), 0);
    unsigned char *back = malloc(size);
    s3_error err;
    s3_sync_get_args ga = {
        .bucket = bucket, .key = "f/reset", .fd = -1, .buf = back, .cap = size, .parallel = 1};
    assert_int_equal(s3_sync_get(s, &ga, &err), (int64_t)size);
    assert_memory_equal(back, data, size);
    assert_int_equal(h_s3model_stat(model, "faults_reset"), 2);
    assert_int_equal(h_s3model_count(model, "GET", "/ringcache-test/f/reset"), 3);
    s3_client_stats st;
    s3_client_stats_get(s3_sync_client(s), &st);
    /* libcurl itself resends once on a reused connection that died before any
     * answer, so the client's own retries are 1 or 2; the model saw all 3 GETs */
    assert_true(st.retries >= 1 && st.retries <= 2);
    free(back);
    free(data);
    s3_sync_destroy(&s);
}

static void test_stall_is_a_timeout(void **state)
{
    (void)state;
    s3_config t = cfg;
    t.request_timeout_ms = 1000;
    t.max_attempts = 2;
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &t), 0);
    put_obj(s, "f/stall", "abc", 3);
    assert_int_equal(h_s3model_reset(model), 0);
    assert_int_equal(h_s3model_fault(model, "stall", 2, "HEAD", "f/stall", 4000), 0);
    s3_error err;
    s3_object_info info;
    int64_t t0 = h_now_ms();
    assert_int_equal(s3_sync_head(s, bucket, "f/stall", &info, &err), -ETIMEDOUT);
    fprintf(stderr, "stall: %lld ms: %s\n", (long long)(h_now_ms() - t0), err.message);
    assert_int_equal(err.attempts, 2);
    assert_non_null(strstr(err.message, "f/stall"));
    assert_int_equal(h_s3model_fault(model, "none", 0, NULL, NULL, 0), 0);
    s3_sync_destroy(&s);
}

static void test_failed_multipart_is_aborted(void **state)
{
    (void)state;
    s3_config few = cfg;
    few.max_attempts = 2;
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &few), 0);
    size_t size = 12u << 20;
    void *data = t_alloc_data(size, 3);
    assert_int_equal(h_s3model_reset(model), 0);
    /* every part PUT fails: the upload must be aborted, not left behind */
    assert_int_equal(h_s3model_fault(model, "503", 1000, "PUT", "f/mpu-fail", 0), 0);
    s3_error err;
    s3_sync_put_args pa = {.bucket = bucket,
                           .key = "f/mpu-fail",
                           .fd = -1,
                           .data = data,
                           .size = size,
                           .part_size = 5u << 20,
                           .parallel = 2};
    assert_true(s3_sync_put(s, &pa, NULL, &err) < 0);
    fprintf(stderr, "failed multipart: %s\n", err.message);
    assert_int_equal(h_s3model_count(model, "POST", "/ringcache-test/f/mpu-fail"), 1);
    assert_int_equal(h_s3model_count(model, "DELETE", "/ringcache-test/f/mpu-fail"), 1);
    assert_int_equal(h_s3model_fault(model, "none", 0, NULL, NULL, 0), 0);
    s3_object_info info;
    assert_int_equal(s3_sync_head(s, bucket, "f/mpu-fail", &info, &err), -ENOENT);

    /* the same upload without faults succeeds and sends no abort */
    assert_int_equal(h_s3model_reset(model), 0);
    assert_int_equal(s3_sync_put(s, &pa, NULL, &err), 0);
    assert_int_equal(h_s3model_count(model, "DELETE", "/ringcache-test/f/mpu-fail"), 0);
    assert_int_equal(h_s3model_count(model, "PUT", "/ringcache-test/f/mpu-fail"), 3);
    free(data);
    s3_sync_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_503_retried_and_counted),
        cmocka_unit_test(test_reset_retried_and_resumed),
        cmocka_unit_test(test_stall_is_a_timeout),
        cmocka_unit_test(test_failed_multipart_is_aborted),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
