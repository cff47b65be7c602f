/* SPDX-License-Identifier: Apache-2.0
 *
 * test_s3_sigv4_server.c: the S3 client against @20minutes/s3rver 5, which
 * verifies Signature V4: every operation with the right secret (including keys
 * that need URI encoding and query strings with continuation tokens and upload
 * ids) is accepted, and a wrong secret is refused with a clear message that
 * never contains the secret.
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

static h_env *env;
static h_s3 *s3;
static s3_config cfg;
static const char *bucket = H_S3_DEFAULT_BUCKET;

static int setup(void **state)
{
    (void)state;
    return t_s3_setup(&env, &s3, &cfg, "test_s3_sigv4_server", 5);
}

static int teardown(void **state)
{
    (void)state;
    h_env_destroy(&env);
    return 0;
}

static int count_cb(const s3_object_info *o, void *arg)
{
    (void)o;
    (*(int *)arg)++;
    return 0;
}

static void test_signed_operations_accepted(void **state)
{
    (void)state;
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &cfg), 0);
    s3_error err;
    const char *keys[] = {"plain.txt", "dir/with space.txt", "dir/unicode-\xc3\xa9\xe2\x82\xac.bin",
                          "dir/sym+b=ol&s~(1)!.dat", "deep/a/b/c/d.txt"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        s3_sync_put_args pa = {
            .bucket = bucket, .key = keys[i], .fd = -1, .data = keys[i], .size = strlen(keys[i])};
        int rc = s3_sync_put(s, &pa, NULL, &err);
        if (rc < 0)
            fprintf(stderr, "PUT %s: %s\n", keys[i], err.message);
        assert_int_equal(rc, 0);
        s3_object_info info;
        assert_int_equal(s3_sync_head(s, bucket, keys[i], &info, &err), 0);
        assert_int_equal(info.size, strlen(keys[i]));
        char buf[128];
        s3_sync_get_args ga = {.bucket = bucket,
                               .key = keys[i],
                               .offset = 1,
                               .length = 3,
                               .fd = -1,
                               .buf = buf,
                               .cap = sizeof(buf),
                               .parallel = 1};
        assert_int_equal(s3_sync_get(s, &ga, &err), 3);
        assert_memory_equal(buf, keys[i] + 1, 3);
    }
    /* listing with a prefix that needs encoding, in pages of 2 (continuation
     * tokens are signed query parameters) */
    int n = 0;
    assert_int_equal(s3_sync_list(s, bucket, "dir/", count_cb, &n, &err), 0);
    assert_int_equal(n, 3);
    assert_int_equal(t_put_many(&cfg, bucket, "page/k", 7, 8, 4), 0);
    n = 0;
    assert_int_equal(s3_sync_list(s, bucket, "page/", count_cb, &n, &err), 0);
    assert_int_equal(n, 7);

    /* multipart: uploads=, partNumber= and uploadId= are signed too */
    size_t size = 11u << 20;
    void *data = t_alloc_data(size, 5);
    s3_sync_put_args pa = {.bucket = bucket,
                           .key = "mpu/eleven mib.bin",
                           .fd = -1,
                           .data = data,
                           .size = size,
                           .part_size = 5u << 20,
                           .parallel = 2};
    int rc = s3_sync_put(s, &pa, NULL, &err);
    if (rc < 0)
        fprintf(stderr, "multipart: %s\n", err.message);
    assert_int_equal(rc, 0);
    void *back = malloc(size);
    s3_sync_get_args ga = {.bucket = bucket,
                           .key = "mpu/eleven mib.bin",
                           .fd = -1,
                           .buf = back,
                           .cap = size,
                           .parallel = 3,
                           .part_size = 2u << 20};
    assert_int_equal(s3_sync_get(s, &ga, &err), (int64_t)size);
    assert_memory_equal(back, data, size);
    assert_int_equal(s3_sync_delete(s, bucket, "mpu/eleven mib.bin", &err), 0);
    free(back);
    free(data);
    s3_sync_destroy(&s);
}

typedef struct {
    int done, n, pages;
    char token[1024];
    int truncated;
    s3_error err;
} page_wait;

static void page_cb(const s3_error *err, const s3_list_page *page, void *arg)
{
    page_wait *w = arg;
    w->err = *err;
    w->truncated = 0;
    w->token[0] = '\0';
    if (page) {
        w->n += (int)page->n_objects;
        w->pages++;
        w->truncated = page->truncated;
        if (page->next_token)
            snprintf(w->token, sizeof(w->token), "%s", page->next_token);
    }
    w->done = 1;
}

static void test_paged_list_async(void **state)
{
    (void)state;
    /* the async list, two keys a page, follows NextContinuationToken */
    assert_int_equal(t_put_many(&cfg, bucket, "tok/k", 5, 4, 5), 0);
    struct event_base *base = event_base_new();
    s3_client *c;
    assert_int_equal(s3_client_create(&c, &cfg, base), 0);
    page_wait w = {0};
    do {
        w.done = 0;
        assert_int_equal(
            s3_list(c, bucket, "tok/", NULL, w.token[0] ? w.token : NULL, 2, page_cb, &w), 0);
        while (!w.done)
            event_base_loop(base, EVLOOP_ONCE);
        if (w.err.code)
            fprintf(stderr, "%s\n", w.err.message);
        assert_int_equal(w.err.code, 0);
    } while (w.truncated && w.pages < 10);
    assert_int_equal(w.n, 5);
    assert_int_equal(w.pages, 3);
    s3_client_destroy(&c);
    event_base_free(base);
}

static void test_wrong_secret_refused(void **state)
{
    (void)state;
    s3_config bad;
    t_s3_config(&bad, h_s3_endpoint(s3), "S3RVER", "not-the-secret-Xq7");
    bad.max_attempts = 3;
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &bad), 0);
    s3_error err;
    s3_object_info info;
    s3_sync_put_args pa = {.bucket = bucket, .key = "denied.txt", .fd = -1, .data = "x", .size = 1};
    assert_int_equal(s3_sync_put(s, &pa, NULL, &err), -EACCES);
    fprintf(stderr, "wrong secret: %s\n", err.message);
    assert_int_equal(err.http_status, 403);
    assert_int_equal(err.attempts, 1); /* 403 is not retried */
    assert_string_equal(err.s3_code, "SignatureDoesNotMatch");
    assert_non_null(strstr(err.message, "access denied"));
    assert_non_null(strstr(err.message, "denied.txt"));
    assert_null(strstr(err.message, "not-the-secret"));
    assert_int_equal(s3_sync_head(s, bucket, "plain.txt", &info, &err), -EACCES);
    int n = 0;
    assert_int_equal(s3_sync_list(s, bucket, "", count_cb, &n, &err), -EACCES);
    s3_sync_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signed_operations_accepted),
        cmocka_unit_test(test_paged_list_async),
        cmocka_unit_test(test_wrong_secret_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
