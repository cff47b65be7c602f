/* SPDX-License-Identifier: Apache-2.0
 *
 * test_ringcached_limits.c: the cache node under hostile clients, each case a
 * real node behind the S3 model (which counts every S3 request):
 *  - block numbers past the object's end (2^44, 2^63: i * block_size wraps)
 *    are refused by GET, WARM and PUT_BLOCK, and nothing is stored or fetched;
 *  - every metric whose name ends in _total is declared a counter (the
 *    store's checksum failures were a gauge).
 */
#include "node_util.h"
#include "s3_test_util.h"

#include <errno.h>
#include <stdbool.h>
#include <event2/event.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

static h_env *env;
static h_s3 *s3;
static h_s3model *model;
static s3_config direct;
static const char *bucket = H_S3_DEFAULT_BUCKET;
static struct event_base *base;

static int setup(void **state)
{
    (void)state;
    if (h_env_create(&env, "test_ringcached_limits") < 0)
        return -1;
    s3 = t_start_s3(env, 3);
    if (h_s3model_start(env, &model, h_s3_port(s3), 0, 0) < 0)
        return -1;
    t_s3_config(&direct, h_s3_endpoint(s3), NULL, NULL);
    base = event_base_new();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    event_base_free(base);
    h_env_destroy(&env);
    return 0;
}

static void put_direct(const char *key, const void *data, size_t len, char etag[S3_ETAG_MAX])
{
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &direct), 0);
    s3_error err;
    s3_sync_put_args pa = {.bucket = bucket, .key = key, .fd = -1, .data = data, .size = len};
    int rc = s3_sync_put(s, &pa, etag, &err);
    if (rc < 0)
        fprintf(stderr, "%s\n", err.message);
    assert_int_equal(rc, 0);
    s3_sync_destroy(&s);
}

static void stop_clean(t_node *n)
{
    assert_int_equal(h_proc_stop(n->proc, 15000), 0);
}

/* ---- block numbers past the end ------------------------------------------ */

static void test_block_numbers_past_the_end(void **state)
{
    (void)state;
    t_node n;
    t_node_start(env, &n, "wrap", h_s3model_endpoint(model), NULL);
    size_t size = 5u << 20; /* five 1 MiB blocks */
    unsigned char *data = t_alloc_data(size, 71);
    char etag[S3_ETAG_MAX];
    put_direct("wrap/obj", data, size, etag);
    assert_int_equal(h_s3model_reset(model), 0);
    cc_conn *c = t_conn(base, &n, NULL);
    unsigned char *buf = malloc(1u << 20);
    /* 2^44 and 2^63 times 1 MiB wrap to 0; 2^44 + 2 to block 2 */
    const uint64_t bad[] = {5, 1ull << 44, (1ull << 44) + 2, 1ull << 63, UINT64_MAX};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cc_result r = t_get(base, c, bucket, "wrap/obj", etag, size, bad[i], buf, 1u << 20);
        fprintf(stderr, "GET block %llu: code %d rcp %d bytes %u: %s\n",
                (unsigned long long)bad[i], r.code, r.rcp_code, r.bytes, r.message);
        assert_int_equal(r.code, -EREMOTEIO);
        assert_int_equal(r.rcp_code, RCP_E_BAD_REQUEST);
    }
    /* WARM of the same blocks starts nothing */
    rcp_object obj = {rcp_s(bucket), rcp_s("wrap/obj"), rcp_s(etag), size};
    t_wait w = {0};
    cc_result r = t_wait_run(base, &w, cc_warm(c, &obj, bad, 5, t_done, &w));
    assert_int_equal(r.code, 0);
    assert_int_equal(r.count, 0);
    /* PUT_BLOCK of block 2^44 with block 0's length is refused */
    rcp_put_block_req pb = {rcp_s(""), obj, 1ull << 44, data, 1u << 20};
    memset(&w, 0, sizeof(w));
    r = t_wait_run(base, &w, cc_put_block(c, &pb, t_done, &w));
    fprintf(stderr, "PUT_BLOCK block 2^44: code %d rcp %d: %s\n", r.code, r.rcp_code, r.message);
    assert_int_equal(r.code, -EREMOTEIO);
    assert_int_equal(r.rcp_code, RCP_E_BAD_REQUEST);
    event_base_loop(base, EVLOOP_NONBLOCK);
    sleep(1); /* a wrongly started fill would have reached S3 by now */
    assert_int_equal(h_s3model_count(model, "GET", NULL), 0);
    assert_int_equal(t_node_metric(&n, "ringcached_blocks_stored"), 0);
    /* the real blocks still read right */
    r = t_get(base, c, bucket, "wrap/obj", etag, size, 4, buf, 1u << 20);
    assert_int_equal(r.code, 0);
    assert_memory_equal(buf, data + (4u << 20), 1u << 20);
    cc_conn_destroy(&c);
    event_base_loop(base, EVLOOP_NONBLOCK);
    free(buf);
    free(data);
    stop_clean(&n);
}

/* ---- metric types ---------------------------------------------------------- */

static void test_metric_types(void **state)
{
    (void)state;
    t_node n;
    t_node_start(env, &n, "types", h_s3model_endpoint(model), NULL);
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", n.admin_port);
    h_http_resp r = {0};
    assert_int_equal(h_http_get(url, &r), 200);
    int types = 0, counters = 0;
    bool checksum = false;
    for (const char *l = r.body; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        char name[128], kind[32];
        if (sscanf(l, "# TYPE %127s %31s", name, kind) != 2)
            continue;
        types++;
        size_t nl = strlen(name);
        bool total = nl > 6 && strcmp(name + nl - 6, "_total") == 0;
        if (total && strcmp(kind, "counter") != 0)
            fprintf(stderr, "%s is declared %s\n", name, kind);
        assert_true(!total || strcmp(kind, "counter") == 0);
        counters += strcmp(kind, "counter") == 0;
        checksum |= strcmp(name, "ringcached_checksum_failures_total") == 0 &&
                    strcmp(kind, "counter") == 0;
    }
    fprintf(stderr, "%d metrics, %d counters\n", types, counters);
    assert_true(checksum);
    h_http_resp_deinit(&r);
    stop_clean(&n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_numbers_past_the_end),
        cmocka_unit_test(test_metric_types),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
