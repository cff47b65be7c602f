/* SPDX-License-Identifier: Apache-2.0
 *
 * test_client_degraded.c: what a client does when a cache node cannot serve
 * it, against real ringcached nodes and a real S3 that checks signatures
 * (@20minutes/s3rver 5) behind the S3 model, which counts every request the
 * client makes (the nodes reach S3 directly, uncounted):
 *  - a node whose own S3 endpoint is wrong, or whose secret is: `ringcache get
 *    --cache` succeeds with the right bytes, reading the blocks from S3
 *    itself, and prints one warning naming the node (with hedging off, the
 *    warning says the node's S3 access failed); with --cache-only it fails
 *    naming the node and its S3, and the client asks S3 nothing;
 *  - --cache-only with a healthy cold node: the node fills, the read works,
 *    and the client makes no S3 request; --no-fill --cache-only fails on a
 *    cold object and works on a warm one; with every node down --cache-only
 *    fails in a sentence, and ls --cache-only is refused;
 *  - members with typo'd ports: cat returns the data from S3 with exit 0 and
 *    one warning per node (not per block) naming it and why; the library's
 *    node_warn is called once per node however many reads and probes fail,
 *    and rc_stats counts bytes from nodes and from S3.
 */
#include "client_test_util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#define OBJ "deg/obj.bin"

static h_env *env;
static h_s3 *s3;
static h_s3model *model;
static s3_config direct, via_model;
static t_node bad_ep, bad_key, good;
static char cli[4096];
static unsigned char *data;
static size_t size;

static void put_direct(const char *key, const void *buf, size_t len)
{
    assert_int_equal(t_put_object(&direct, H_S3_DEFAULT_BUCKET, key, buf, len, NULL), 0);
}

static int setup(void **state)
{
    (void)state;
    assert_int_equal(h_env_create(&env, "test_client_degraded"), 0);
    if (h_build_path(cli, sizeof(cli), H_RINGCACHE_CLI) < 0)
        h_skip("the ringcache CLI is not built");
    s3 = t_start_s3(env, 5);
    int rc = h_s3model_start(env, &model, h_s3_port(s3), 0, 0);
    if (rc == -ENOENT)
        h_skip("the S3 model is not built");
    assert_int_equal(rc, 0);
    t_s3_config(&direct, h_s3_endpoint(s3), NULL, NULL);
    t_s3_config(&via_model, h_s3model_endpoint(model), NULL, NULL);
    size = (5u << 20) + 7;
    data = t_alloc_data(size, 81);
    put_direct(OBJ, data, size);
    const char *ep[] = {"--s3-endpoint", "http://127.0.0.1:1", NULL};
    const char *key[] = {"--s3-secret-key", "WRONG-SECRET", NULL};
    t_node_start(env, &bad_ep, "badep", h_s3_endpoint(s3), ep);
    t_node_start(env, &bad_key, "badkey", h_s3_endpoint(s3), key);
    t_node_start(env, &good, "good", h_s3_endpoint(s3), NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    assert_int_equal(h_proc_stop(bad_ep.proc, 15000), 0);
    assert_int_equal(h_proc_stop(bad_key.proc, 15000), 0);
    assert_int_equal(h_proc_stop(good.proc, 15000), 0);
    h_env_destroy(&env);
    free(data);
    return 0;
}

/* Runs the CLI with the client's S3 through the model (right credentials). */
static void run(h_run_result *r, const char *const *args)
{
    const char *extra[] = {"RINGCACHE_HEDGE_MS", "RINGCACHE_VERBOSE=1", NULL};
    t_run_cli_at(env, h_s3model_endpoint(model), r, cli, extra, args);
    fprintf(stderr, "ringcache %s: exit %d\n%s", args[0], r->status, r->err);
}

/* Lines of text containing needle. */
static int lines_with(const char *text, const char *needle)
{
    int n = 0;
    for (const char *l = text; l && *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        char line[4096];
        snprintf(line, sizeof(line), "%.*s", (int)(len < sizeof(line) ? len : sizeof(line) - 1), l);
        if (strstr(line, needle))
            n++;
        l = e ? e + 1 : NULL;
    }
    return n;
}

static void members_of(const t_node *n, char *out, size_t cap)
{
    snprintf(out, cap, "%s=127.0.0.1:%d", n->name, n->port);
}

/* A get through node n alone: succeeds with the right bytes and one warning
 * naming the node; the blocks came from S3 (the client's, counted). */
static void get_through(const t_node *n, const char *hedge, const char *must_say)
{
    char m[128], out[1024];
    members_of(n, m, sizeof(m));
    h_env_path(env, out, sizeof(out), "out.bin");
    h_run_result *r = malloc(sizeof(*r));
    assert_int_equal(h_s3model_reset(model), 0);
    run(r, (const char *[]){"get", "s3://" H_S3_DEFAULT_BUCKET "/" OBJ, "-o", out, "--cache", m,
                            "--hedge-ms", hedge, NULL});
    assert_int_equal(r->status, 0);
    t_file_equals(out, data, size);
    assert_int_equal(lines_with(r->err, "warning:"), 1);
    assert_int_equal(lines_with(r->err, n->name), 1);
    assert_int_equal(lines_with(r->err, must_say), 1);
    assert_true(h_s3model_count(model, "GET", "/" H_S3_DEFAULT_BUCKET "/" OBJ) >= 6);

    /* --cache-only: no S3 from here, a sentence naming the node and its S3 */
    assert_int_equal(h_s3model_reset(model), 0);
    run(r, (const char *[]){"get", "s3://" H_S3_DEFAULT_BUCKET "/" OBJ, "-o", out, "--cache", m,
                            "--hedge-ms", "0", "--cache-only", NULL});
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, n->name));
    assert_non_null(strstr(r->err, "S3 access failed"));
    assert_non_null(strstr(r->err, "cache_only"));
    assert_int_equal(h_s3model_stat(model, "requests"), 0);
    free(r);
}

static void test_node_s3_endpoint_wrong(void **state)
{
    (void)state;
    /* the node retries its S3 for a while: with hedging the client stops
     * waiting for it (and names it); without, it hears the node's own words */
    get_through(&bad_ep, "500", "badep");
    get_through(&bad_ep, "0", "S3 access failed");
    get_through(&bad_ep, "0", "cannot connect to http://127.0.0.1:1");
}

static void test_node_s3_secret_wrong(void **state)
{
    (void)state;
    get_through(&bad_key, "500", "S3 access failed");
    get_through(&bad_key, "500", "403");
    h_run_result *r = malloc(sizeof(*r));
    char m[128], out[1024];
    members_of(&bad_key, m, sizeof(m));
    h_env_path(env, out, sizeof(out), "out.bin");
    run(r, (const char *[]){"get", "s3://" H_S3_DEFAULT_BUCKET "/" OBJ, "-o", out, "--cache", m,
                            NULL});
    assert_int_equal(r->status, 0);
    assert_int_equal(lines_with(r->err, "upstream_fallbacks=6"), 1);
    free(r);
}

static void test_cache_only_cold_node(void **state)
{
    (void)state;
    size_t len = (3u << 20) + 99;
    unsigned char *cold = t_alloc_data(len, 82);
    put_direct("deg/cold.bin", cold, len);
    put_direct("deg/cold2.bin", cold, len);
    char m[128], out[1024];
    members_of(&good, m, sizeof(m));
    h_env_path(env, out, sizeof(out), "cold.out");
    h_run_result *r = malloc(sizeof(*r));
    assert_int_equal(h_s3model_reset(model), 0);
    int64_t fills = t_node_metric(&good, "ringcached_s3_get_requests_total");
    run(r, (const char *[]){"get", "s3://" H_S3_DEFAULT_BUCKET "/deg/cold.bin", "-o", out,
                            "--cache", m, "--cache-only", NULL});
    assert_int_equal(r->status, 0);
    t_file_equals(out, cold, len);
    assert_int_equal(h_s3model_stat(model, "requests"), 0); /* nothing from this process */
    assert_int_equal(t_node_metric(&good, "ringcached_s3_get_requests_total"), fills + 4);
    assert_int_equal(lines_with(r->err, "warning:"), 0);

    /* --no-fill: a warm object reads, a cold one fails, S3 still untouched */
    run(r, (const char *[]){"get", "s3://" H_S3_DEFAULT_BUCKET "/deg/cold.bin", "-o", out,
                            "--cache", m, "--cache-only", "--no-fill", NULL});
    assert_int_equal(r->status, 0);
    t_file_equals(out, cold, len);
    run(r, (const char *[]){"get", "s3://" H_S3_DEFAULT_BUCKET "/deg/cold2.bin", "-o", out,
                            "--cache", m, "--cache-only", "--no-fill", NULL});
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "not cached"));
    assert_int_equal(h_s3model_stat(model, "requests"), 0);
    assert_int_equal(t_node_metric(&good, "ringcached_s3_get_requests_total"), fills + 4);
    /* --no-fill alone: the cold blocks come from S3 directly, the node fills nothing */
    run(r, (const char *[]){"get", "s3://" H_S3_DEFAULT_BUCKET "/deg/cold2.bin", "-o", out,
                            "--cache", m, "--no-fill", NULL});
    assert_int_equal(r->status, 0);
    t_file_equals(out, cold, len);
    assert_int_equal(h_s3model_count(model, "GET", "/" H_S3_DEFAULT_BUCKET "/deg/cold2.bin"), 4);
    assert_int_equal(t_node_metric(&good, "ringcached_s3_get_requests_total"), fills + 4);
    free(r);
    free(cold);
}

static void test_cache_only_all_down(void **state)
{
    (void)state;
    char out[1024];
    h_env_path(env, out, sizeof(out), "down.out");
    h_run_result *r = malloc(sizeof(*r));
    assert_int_equal(h_s3model_reset(model), 0);
    run(r, (const char *[]){"get", "s3://" H_S3_DEFAULT_BUCKET "/" OBJ, "-o", out, "--cache",
                            "n0=127.0.0.1:1,n1=127.0.0.1:2", "--cache-only", NULL});
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "cache_only"));
    assert_non_null(strstr(r->err, "Connection refused"));
    run(r, (const char *[]){"ls", "s3://" H_S3_DEFAULT_BUCKET "/deg/", "--cache", "n0=127.0.0.1:1",
                            "--cache-only", NULL});
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "listing"));
    assert_int_equal(h_s3model_stat(model, "requests"), 0);
    free(r);
}

static void test_typo_port_warns_once_per_node(void **state)
{
    (void)state;
    h_run_result *r = malloc(sizeof(*r));
    run(r, (const char *[]){"cat", "s3://" H_S3_DEFAULT_BUCKET "/" OBJ, "--cache",
                            "n0=127.0.0.1:1,n1=127.0.0.1:2", NULL});
    assert_int_equal(r->status, 0);
    t_file_equals(r->out_path, data, size);
    assert_int_equal(lines_with(r->err, "warning:"), 2);
    assert_int_equal(lines_with(r->err, "n0 (127.0.0.1:1)"), 1);
    assert_int_equal(lines_with(r->err, "n1 (127.0.0.1:2)"), 1);
    assert_int_equal(lines_with(r->err, "Connection refused"), 2);
    free(r);
}

typedef struct {
    int calls;
    char last[1200];
} warn_count;

static void count_warn(const char *sentence, void *arg)
{
    warn_count *w = arg; /* the I/O thread: the test reads it after rc_destroy */
    w->calls++;
    snprintf(w->last, sizeof(w->last), "%s", sentence);
}

/* The library: once per node however many reads and probes fail; the bytes
 * of nodes and of S3 counted apart. */
static void test_library_warns_once_and_counts_bytes(void **state)
{
    (void)state;
    rc_config cfg;
    rc_config_init(&cfg);
    cfg.members = "n0=127.0.0.1:1,n1=127.0.0.1:2";
    cfg.s3 = via_model;
    cfg.page_cache_bytes = 64u << 20;
    cfg.down_ms = 50; /* probed again and again */
    warn_count w = {0};
    cfg.node_warn = count_warn;
    cfg.node_warn_arg = &w;
    rc_client *c;
    char err[RC_ERR_MAX];
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), 0);
    rc_handle *h;
    assert_int_equal(rc_open(c, H_S3_DEFAULT_BUCKET, OBJ, &h, err, sizeof(err)), 0);
    unsigned char *buf = malloc(size);
    for (int i = 0; i < 5; i++) {
        struct timespec ts = {0, 80 * 1000000L};
        nanosleep(&ts, NULL);
        assert_int_equal(rc_pread(h, buf + i * 1000, 1000, (uint64_t)i * 1000), 1000);
    }
    assert_int_equal(rc_pread(h, buf, size, 0), size);
    assert_memory_equal(buf, data, size);
    rc_stats st;
    rc_stats_get(c, &st);
    assert_int_equal(st.node_bytes, 0);
    assert_true(st.s3_bytes >= size);
    rc_close(&h);
    rc_destroy(&c);
    assert_int_equal(w.calls, 2);

    /* through the healthy node: every byte from it, none from S3 */
    char m[128];
    members_of(&good, m, sizeof(m));
    cfg.members = m;
    w.calls = 0;
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), 0);
    assert_int_equal(rc_open(c, H_S3_DEFAULT_BUCKET, OBJ, &h, err, sizeof(err)), 0);
    assert_int_equal(rc_pread(h, buf, size, 0), size);
    assert_memory_equal(buf, data, size);
    rc_stats_get(c, &st);
    assert_int_equal(st.node_bytes, size);
    assert_int_equal(st.s3_bytes, 0);
    rc_close(&h);
    rc_destroy(&c);
    assert_int_equal(w.calls, 0);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_s3_endpoint_wrong),
        cmocka_unit_test(test_node_s3_secret_wrong),
        cmocka_unit_test(test_cache_only_cold_node),
        cmocka_unit_test(test_cache_only_all_down),
        cmocka_unit_test(test_typo_port_warns_once_per_node),
        cmocka_unit_test(test_library_warns_once_and_counts_bytes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
