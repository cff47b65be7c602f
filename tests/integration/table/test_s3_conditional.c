/* SPDX-License-Identifier: Apache-2.0
 *
 * test_s3_conditional.c: conditional writes of the S3 client (s3_write_cond)
 * against the harness S3 server, which answers them as AWS S3 does:
 * If-None-Match: * on PutObject and on CompleteMultipartUpload (-EEXIST, its
 * own code, on a taken key), If-Match on both (-ESTALE on another ETag,
 * -ENOENT on a missing key), eight writers racing for one key (exactly one
 * wins), a store started without conditional writes (the second write lands,
 * which is what the table writer's probe detects), and ListObjectsV2 with
 * start-after.
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
static h_s3 *s3, *s3_plain;
static s3_config cfg, cfg_plain;
static const char *bucket = H_S3_DEFAULT_BUCKET;

static int setup(void **state)
{
    (void)state;
    if (h_env_create(&env, "test_s3_conditional") < 0)
        return -1;
    s3 = t_start_s3(env, 3);
    h_s3_opts o = {0};
    o.version = 3;
    o.name = "s3plain";
    o.no_conditional_writes = 1;
    if (h_s3_start(env, &s3_plain, &o) < 0)
        return -1;
    t_s3_config(&cfg, h_s3_endpoint(s3), NULL, NULL);
    t_s3_config(&cfg_plain, h_s3_endpoint(s3_plain), NULL, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    int st = h_proc_stop(h_s3_proc(s3), 5000);
    int st2 = h_proc_stop(h_s3_proc(s3_plain), 5000);
    h_env_destroy(&env);
    return (st == 0 || st == 143) && (st2 == 0 || st2 == 143) ? 0 : -1;
}

static int put(s3_sync *s, const char *key, const void *data, size_t len, s3_write_cond cond,
               uint64_t part_size, char *etag, s3_error *err)
{
    s3_sync_put_args a = {0};
    a.bucket = bucket;
    a.key = key;
    a.fd = -1;
    a.data = data;
    a.size = len;
    a.part_size = part_size;
    a.cond = cond;
    return s3_sync_put(s, &a, etag, err);
}

static void expect_body(s3_sync *s, const char *key, const void *want, size_t len)
{
    char *buf = malloc(len + 16);
    s3_error err;
    s3_sync_get_args g = {
        .bucket = bucket, .key = key, .fd = -1, .buf = buf, .cap = len + 16, .parallel = 1};
    assert_int_equal(s3_sync_get(s, &g, &err), (int64_t)len);
    assert_memory_equal(buf, want, len);
    free(buf);
}

static void test_if_none_match_put(void **state)
{
    (void)state;
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &cfg), 0);
    s3_error err;
    char etag[S3_ETAG_MAX];
    s3_write_cond c = {.if_none_match = true};
    assert_int_equal(put(s, "cond/a", "first", 5, c, 0, etag, &err), 0);
    assert_int_equal(put(s, "cond/a", "second", 6, c, 0, etag, &err), -EEXIST);
    assert_int_equal(err.http_status, 412);
    assert_string_equal(err.s3_code, "PreconditionFailed");
    assert_non_null(strstr(err.message, "already exists"));
    assert_non_null(strstr(err.message, "cond/a"));
    expect_body(s, "cond/a", "first", 5);
    /* without a condition the same key is overwritten */
    assert_int_equal(put(s, "cond/a", "third", 5, (s3_write_cond){0}, 0, etag, &err), 0);
    expect_body(s, "cond/a", "third", 5);
    s3_sync_destroy(&s);
}

static void test_if_match_put(void **state)
{
    (void)state;
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &cfg), 0);
    s3_error err;
    char etag[S3_ETAG_MAX], etag2[S3_ETAG_MAX];
    assert_int_equal(put(s, "cond/m", "v1", 2, (s3_write_cond){0}, 0, etag, &err), 0);
    s3_write_cond ok = {.if_match = etag};
    assert_int_equal(put(s, "cond/m", "v2", 2, ok, 0, etag2, &err), 0);
    /* the first ETag is no longer current */
    assert_int_equal(put(s, "cond/m", "v3", 2, ok, 0, NULL, &err), -ESTALE);
    assert_int_equal(err.http_status, 412);
    expect_body(s, "cond/m", "v2", 2);
    s3_write_cond quoted = {.if_match = NULL};
    char q[S3_ETAG_MAX + 2];
    snprintf(q, sizeof(q), "\"%s\"", etag2);
    quoted.if_match = q;
    assert_int_equal(put(s, "cond/m", "v3", 2, quoted, 0, NULL, &err), 0);
    expect_body(s, "cond/m", "v3", 2);
    s3_write_cond missing = {.if_match = etag};
    assert_int_equal(put(s, "cond/missing", "x", 1, missing, 0, NULL, &err), -ENOENT);
    s3_sync_destroy(&s);
}

static void test_multipart_conditions(void **state)
{
    (void)state;
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &cfg), 0);
    s3_error err;
    size_t len = 11u << 20; /* three parts of 5 MiB */
    void *a = t_alloc_data(len, 1), *b = t_alloc_data(len, 2);
    char etag[S3_ETAG_MAX];
    s3_write_cond c = {.if_none_match = true};
    assert_int_equal(put(s, "cond/big", a, len, c, 5u << 20, etag, &err), 0);
    assert_int_equal(put(s, "cond/big", b, len, c, 5u << 20, NULL, &err), -EEXIST);
    assert_int_equal(err.http_status, 412);
    expect_body(s, "cond/big", a, len);
    s3_write_cond stale = {.if_match = "0123456789abcdef0123456789abcdef"};
    assert_int_equal(put(s, "cond/big", b, len, stale, 5u << 20, NULL, &err), -ESTALE);
    s3_write_cond cur = {.if_match = etag};
    assert_int_equal(put(s, "cond/big", b, len, cur, 5u << 20, NULL, &err), 0);
    expect_body(s, "cond/big", b, len);
    free(a);
    free(b);
    s3_sync_destroy(&s);
}

typedef struct {
    int done, ok, exists, other;
} race_state;

static void race_cb(const s3_error *err, const char *etag, void *arg)
{
    (void)etag;
    race_state *r = arg;
    r->done++;
    if (!err->code)
        r->ok++;
    else if (err->code == -EEXIST)
        r->exists++;
    else
        r->other++;
}

static void test_eight_writers_one_key(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    s3_client *c;
    assert_int_equal(s3_client_create(&c, &cfg, base), 0);
    race_state r = {0};
    static char bodies[8][16];
    s3_write_cond cond = {.if_none_match = true};
    for (int i = 0; i < 8; i++) {
        snprintf(bodies[i], sizeof(bodies[i]), "writer-%d", i);
        assert_int_equal(
            s3_put_cond(c, bucket, "cond/race", bodies[i], strlen(bodies[i]), &cond, race_cb, &r),
            0);
    }
    while (r.done < 8)
        event_base_loop(base, EVLOOP_ONCE);
    assert_int_equal(r.ok, 1);
    assert_int_equal(r.exists, 7);
    assert_int_equal(r.other, 0);
    s3_client_destroy(&c);
    event_base_free(base);
}

static void test_store_without_conditions(void **state)
{
    (void)state;
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &cfg_plain), 0);
    s3_error err;
    s3_write_cond c = {.if_none_match = true};
    assert_int_equal(put(s, "cond/p", "one", 3, c, 0, NULL, &err), 0);
    assert_int_equal(put(s, "cond/p", "two", 3, c, 0, NULL, &err), 0); /* ignored */
    expect_body(s, "cond/p", "two", 3);
    s3_sync_destroy(&s);
}

typedef struct {
    bool done;
    int code;
    int n;
    char first[64];
} list_state;

static void list_cb(const s3_error *err, const s3_list_page *page, void *arg)
{
    list_state *l = arg;
    l->done = true;
    l->code = err->code;
    if (page) {
        l->n = (int)page->n_objects;
        if (page->n_objects)
            snprintf(l->first, sizeof(l->first), "%s", page->objects[0].key);
    }
}

static void test_list_start_after(void **state)
{
    (void)state;
    assert_int_equal(t_put_many(&cfg, bucket, "after/k", 30, 4, 8), 0);
    struct event_base *base = event_base_new();
    s3_client *c;
    assert_int_equal(s3_client_create(&c, &cfg, base), 0);
    list_state l = {0};
    assert_int_equal(s3_list_from(c, bucket, "after/", "after/k00024", 100, list_cb, &l), 0);
    while (!l.done)
        event_base_loop(base, EVLOOP_ONCE);
    assert_int_equal(l.code, 0);
    assert_int_equal(l.n, 5);
    assert_string_equal(l.first, "after/k00025");
    s3_client_destroy(&c);
    event_base_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_if_none_match_put),
        cmocka_unit_test(test_if_match_put),
        cmocka_unit_test(test_multipart_conditions),
        cmocka_unit_test(test_eight_writers_one_key),
        cmocka_unit_test(test_store_without_conditions),
        cmocka_unit_test(test_list_start_after),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
