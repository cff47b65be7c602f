/* SPDX-License-Identifier: Apache-2.0
 *
 * test_s3_client.c: the S3 client against a real S3 server (npm s3rver 3):
 * listing with pagination over more than 1000 keys and globs, ranged GETs
 * compared byte for byte, PUT and a 64 MiB multipart upload read back equal,
 * a missing key, a version that changed, DELETE, and a server that is down.
 * One server for the whole file (group setup), its own temp folder.
 */
#include "s3_test_util.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <unistd.h>
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
    return t_s3_setup(&env, &s3, &cfg, "test_s3_client", 3);
}

static int teardown(void **state)
{
    (void)state;
    return t_s3_teardown(&env, s3);
}

typedef struct {
    int n;
    char last[256];
    int sorted;
} count_state;

static int count_cb(const s3_object_info *o, void *arg)
{
    count_state *c = arg;
    if (c->n && strcmp(c->last, o->key) >= 0)
        c->sorted = 0;
    snprintf(c->last, sizeof(c->last), "%s", o->key);
    c->n++;
    return 0;
}

static void test_list_pagination_and_glob(void **state)
{
    (void)state;
    assert_int_equal(t_put_many(&cfg, bucket, "many/obj-", 1105, 16, 32), 0);
    assert_int_equal(t_put_many(&cfg, bucket, "other/x-", 3, 16, 3), 0);

    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &cfg), 0);
    s3_error err;
    count_state c = {0, "", 1};
    assert_int_equal(s3_sync_list(s, bucket, "many/", count_cb, &c, &err), 0);
    assert_int_equal(c.n, 1105); /* two pages of ListObjectsV2 */
    assert_true(c.sorted);
    assert_string_equal(c.last, "many/obj-01104");

    /* globs list only the prefix before the first wildcard and match the rest */
    count_state g = {0, "", 1};
    assert_int_equal(s3_sync_glob(s, bucket, "many/obj-010*", count_cb, &g, &err), 0);
    assert_int_equal(g.n, 100); /* 01000..01099 */
    count_state g2 = {0, "", 1};
    assert_int_equal(s3_sync_glob(s, bucket, "many/obj-0{0001,1104,9999}", count_cb, &g2, &err), 0);
    assert_int_equal(g2.n, 2);
    count_state g3 = {0, "", 1};
    assert_int_equal(s3_sync_glob(s, bucket, "many/obj-{00010..00019}", count_cb, &g3, &err), 0);
    assert_int_equal(g3.n, 10);
    count_state g4 = {0, "", 1};
    assert_int_equal(s3_sync_glob(s, bucket, "**/x-?????", count_cb, &g4, &err), 0);
    assert_int_equal(g4.n, 3);
    count_state g5 = {0, "", 1};
    assert_int_equal(s3_sync_glob(s, bucket, "*/x-*", count_cb, &g5, &err), 0);
    assert_int_equal(g5.n, 3);
    s3_sync_destroy(&s);
}

static void test_ranged_gets_byte_for_byte(void **state)
{
    (void)state;
    const size_t size = 5 * 1024 * 1024 + 123;
    unsigned char *data = t_alloc_data(size, 42);
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &cfg), 0);
    s3_error err;
    s3_sync_put_args pa = {
        .bucket = bucket, .key = "ranges/obj.bin", .fd = -1, .data = data, .size = size};
    char etag[S3_ETAG_MAX];
    assert_int_equal(s3_sync_put(s, &pa, etag, &err), 0);
    assert_true(strlen(etag) > 0);
    assert_null(strchr(etag, '"'));

    s3_object_info info;
    assert_int_equal(s3_sync_head(s, bucket, "ranges/obj.bin", &info, &err), 0);
    assert_int_equal(info.size, size);
    assert_string_equal(info.etag, etag);

    unsigned char *buf = malloc(size);
    struct {
        uint64_t off, len;
    } ranges[] = {
        {0, 1},
        {0, 65536},
        {size - 1, 1},
        {size - 65536, 65536},
        {1000000, 3000000},
        {1048575, 2},
        {12345, 0 /* to the end */},
        {0, 0 /* whole */},
        {size - 10, 100 /* past the end: trimmed */},
    };
    for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
        for (int par = 1; par <= 4; par += 3) {
            memset(buf, 0xAA, size);
            s3_sync_get_args ga = {.bucket = bucket,
                                   .key = "ranges/obj.bin",
                                   .offset = ranges[i].off,
                                   .length = ranges[i].len,
                                   .fd = -1,
                                   .buf = buf,
                                   .cap = size,
                                   .parallel = par,
                                   .part_size = 1 << 20,
                                   .if_match = etag};
            int64_t n = s3_sync_get(s, &ga, &err);
            uint64_t avail = size - ranges[i].off;
            uint64_t want = ranges[i].len && ranges[i].len < avail ? ranges[i].len : avail;
            if (n < 0)
                fprintf(stderr, "range %zu: %s\n", i, err.message);
            assert_int_equal(n, (int64_t)want);
            assert_memory_equal(buf, data + ranges[i].off, want);
        }
    }
    /* a range starting past the end is an error that says so */
    s3_sync_get_args bad = {.bucket = bucket,
                            .key = "ranges/obj.bin",
                            .offset = size + 5,
                            .length = 10,
                            .fd = -1,
                            .buf = buf,
                            .cap = size,
                            .parallel = 1};
    assert_true(s3_sync_get(s, &bad, &err) < 0);
    assert_non_null(strstr(err.message, "ranges/obj.bin"));

    /* the async GET straight into a buffer, with If-Match */
    s3_sync_destroy(&s);
    free(buf);
    free(data);
}

static void test_multipart_64mib_roundtrip(void **state)
{
    (void)state;
    const size_t size = 64u * 1024 * 1024 + 4097;
    unsigned char *data = t_alloc_data(size, 64);
    char path[4096];
    assert_int_equal(h_env_path(env, path, sizeof(path), "big.bin"), 0);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, size, f), size);
    fclose(f);

    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &cfg), 0);
    s3_error err;
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    s3_sync_put_args pa = {.bucket = bucket,
                           .key = "big/64mib.bin",
                           .fd = fd,
                           .size = size,
                           .part_size = 8u << 20,
                           .parallel = 4};
    char etag[S3_ETAG_MAX];
    int rc = s3_sync_put(s, &pa, etag, &err);
    if (rc < 0)
        fprintf(stderr, "%s\n", err.message);
    assert_int_equal(rc, 0);
    close(fd);

    unsigned char *back = malloc(size);
    s3_sync_get_args ga = {.bucket = bucket,
                           .key = "big/64mib.bin",
                           .fd = -1,
                           .buf = back,
                           .cap = size,
                           .parallel = 4,
                           .part_size = 4u << 20};
    assert_int_equal(s3_sync_get(s, &ga, &err), (int64_t)size);
    assert_memory_equal(back, data, size);

    /* and a single-stream read of the same object */
    memset(back, 0, size);
    ga.parallel = 1;
    assert_int_equal(s3_sync_get(s, &ga, &err), (int64_t)size);
    assert_memory_equal(back, data, size);
    s3_sync_destroy(&s);
    free(back);
    free(data);
}

static void test_missing_key_and_changed_version(void **state)
{
    (void)state;
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &cfg), 0);
    s3_error err;
    s3_object_info info;
    assert_int_equal(s3_sync_head(s, bucket, "no/such/key", &info, &err), -ENOENT);
    assert_int_equal(err.http_status, 404);
    assert_non_null(strstr(err.message, "no/such/key"));
    assert_non_null(strstr(err.message, "no such key"));
    assert_int_equal(err.attempts, 1); /* a 404 is not retried */

    char buf[16];
    s3_sync_get_args ga = {.bucket = bucket,
                           .key = "no/such/key",
                           .fd = -1,
                           .buf = buf,
                           .cap = sizeof(buf),
                           .parallel = 1};
    assert_int_equal(s3_sync_get(s, &ga, &err), -ENOENT);

    /* overwrite: the old version is gone, a read pinned to it is "stale" */
    const char *v1 = "version one", *v2 = "version two!";
    char e1[S3_ETAG_MAX], e2[S3_ETAG_MAX];
    s3_sync_put_args pa = {
        .bucket = bucket, .key = "ver/obj", .fd = -1, .data = v1, .size = strlen(v1)};
    assert_int_equal(s3_sync_put(s, &pa, e1, &err), 0);
    pa.data = v2;
    pa.size = strlen(v2);
    assert_int_equal(s3_sync_put(s, &pa, e2, &err), 0);
    assert_string_not_equal(e1, e2);
    ga.key = "ver/obj";
    ga.if_match = e1;
    assert_int_equal(s3_sync_get(s, &ga, &err), -ESTALE);
    assert_non_null(strstr(err.message, "changed"));
    ga.if_match = e2;
    assert_int_equal(s3_sync_get(s, &ga, &err), (int64_t)strlen(v2));
    assert_memory_equal(buf, v2, strlen(v2));

    /* the async GET compares the answer's ETag too (s3rver ignores If-Match) */
    ga.if_match = NULL;
    assert_int_equal(s3_sync_delete(s, bucket, "ver/obj", &err), 0);
    assert_int_equal(s3_sync_head(s, bucket, "ver/obj", &info, &err), -ENOENT);
    assert_int_equal(s3_sync_delete(s, bucket, "ver/obj", &err), 0); /* missing: fine */
    s3_sync_destroy(&s);
}

typedef struct {
    int done;
    s3_error err;
    s3_get_result res;
} get_wait;

static void get_cb(const s3_error *err, const s3_get_result *res, void *arg)
{
    get_wait *w = arg;
    w->err = *err;
    w->res = *res;
    w->done = 1;
}

static void test_async_get_version_check(void **state)
{
    (void)state;
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &cfg), 0);
    s3_error err;
    char e1[S3_ETAG_MAX];
    s3_sync_put_args pa = {
        .bucket = bucket, .key = "async/obj", .fd = -1, .data = "0123456789", .size = 10};
    assert_int_equal(s3_sync_put(s, &pa, e1, &err), 0);
    struct event_base *base = event_base_new();
    s3_client *c;
    assert_int_equal(s3_client_create(&c, &cfg, base), 0);
    char buf[10];
    get_wait w = {0};
    s3_get_args ga = {.bucket = bucket,
                      .key = "async/obj",
                      .offset = 2,
                      .length = 5,
                      .if_match = e1,
                      .buf = buf,
                      .cap = sizeof(buf)};
    assert_int_equal(s3_get(c, &ga, get_cb, &w), 0);
    assert_int_equal(w.done, 0); /* never completes inside the submit */
    while (!w.done)
        event_base_loop(base, EVLOOP_ONCE);
    assert_int_equal(w.err.code, 0);
    assert_int_equal(w.res.bytes, 5);
    assert_int_equal(w.res.object_size, 10);
    assert_memory_equal(buf, "23456", 5);

    w = (get_wait){0};
    ga.if_match = "\"0000000000000000\"";
    assert_int_equal(s3_get(c, &ga, get_cb, &w), 0);
    while (!w.done)
        event_base_loop(base, EVLOOP_ONCE);
    assert_int_equal(w.err.code, -ESTALE);
    assert_int_equal(w.err.attempts, 1);

    /* a buffer too small is an error, not an overflow */
    w = (get_wait){0};
    ga.if_match = NULL;
    ga.offset = 0;
    ga.length = 0;
    ga.cap = 4;
    assert_int_equal(s3_get(c, &ga, get_cb, &w), 0);
    while (!w.done)
        event_base_loop(base, EVLOOP_ONCE);
    assert_int_equal(w.err.code, -ENOBUFS);

    /* destroy with a request in flight cancels it with -ECANCELED */
    w = (get_wait){0};
    ga.cap = sizeof(buf);
    assert_int_equal(s3_get(c, &ga, get_cb, &w), 0);
    assert_int_equal(s3_client_inflight(c), 1);
    s3_client_destroy(&c);
    assert_int_equal(w.done, 1);
    assert_int_equal(w.err.code, -ECANCELED);
    assert_null(c);
    event_base_free(base);
    s3_sync_destroy(&s);
}

static void test_server_down(void **state)
{
    (void)state;
    /* a port nothing listens on: connect it, close it, use it */
    int fd = h_tcp_connect(h_s3_port(s3), 1000);
    assert_true(fd >= 0);
    close(fd);
    s3_config down;
    t_s3_config(&down, "http://127.0.0.1:1", NULL, NULL);
    down.max_attempts = 3;
    down.connect_timeout_ms = 500;
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &down), 0);
    s3_error err;
    s3_object_info info;
    int64_t t0 = h_now_ms();
    assert_int_equal(s3_sync_head(s, bucket, "k", &info, &err), -ECONNREFUSED);
    fprintf(stderr, "server down: failed after %d attempts in %lld ms: %s\n", err.attempts,
            (long long)(h_now_ms() - t0), err.message);
    assert_int_equal(err.attempts, 3); /* refused connections are retried, bounded */
    assert_non_null(strstr(err.message, "127.0.0.1:1"));
    assert_null(strstr(err.message, "S3RVER")); /* no credentials in messages */
    s3_sync_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_pagination_and_glob),
        cmocka_unit_test(test_ranged_gets_byte_for_byte),
        cmocka_unit_test(test_multipart_64mib_roundtrip),
        cmocka_unit_test(test_missing_key_and_changed_version),
        cmocka_unit_test(test_async_get_version_check),
        cmocka_unit_test(test_server_down),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
