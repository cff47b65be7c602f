/* SPDX-License-Identifier: Apache-2.0
 *
 * test_client_cli.c: the `ringcache` CLI through the cache tier (--cache,
 * which runs on libringcache) against three real ringcached nodes and a real
 * S3 behind the S3 model:
 *  - put (write-through), head, get -o, cat, ls and stats with --cache;
 *  - warm s3://bucket/glob loads every matching object into the nodes (one S3
 *    GET per block, counted at the model) without sending data to the CLI,
 *    and a cat afterwards costs S3 nothing;
 *  - --help of warm and cat; warm without --cache is a usage error.
 */
#include "client_test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

static t_cluster tc;
static char cli[4096];

typedef h_run_result run_result;

static void run(run_result *r, const char *const *args)
{
    t_run_cli(&tc, r, cli, NULL, args);
}

static void file_equals(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char *b = malloc(len + 1);
    assert_int_equal(fread(b, 1, len + 1, f), len);
    fclose(f);
    assert_memory_equal(b, data, len);
    free(b);
}

static int setup(void **state)
{
    (void)state;
    t_cluster_start(&tc, "test_client_cli", NULL);
    if (h_build_path(cli, sizeof(cli), H_RINGCACHE_CLI) < 0)
        h_skip("the ringcache CLI is not built");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    t_cluster_stop(&tc);
    return 0;
}

static void test_put_head_get_cat_ls_stats(void **state)
{
    (void)state;
    size_t size = (3u << 20) + 5;
    unsigned char *data = t_alloc_data(size, 61);
    char src[4096], out[4096];
    h_env_path(tc.env, src, sizeof(src), "src.bin");
    h_env_path(tc.env, out, sizeof(out), "out.bin");
    FILE *f = fopen(src, "wb");
    assert_int_equal(fwrite(data, 1, size, f), size);
    fclose(f);
    run_result *r = malloc(sizeof(*r));
    const char *url = "s3://ringcache-test/cli/a.bin";
    run(r, (const char *[]){"put", src, url, "--cache", tc.members, NULL});
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "etag="));
    run(r, (const char *[]){"head", url, "--cache", tc.members, NULL});
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "size: 3145733"));
    run(r, (const char *[]){"get", url, "-o", out, "--cache", tc.members, NULL});
    assert_int_equal(r->status, 0);
    file_equals(out, data, size);
    run(r, (const char *[]){"cat", url, "--cache", tc.members, NULL});
    assert_int_equal(r->status, 0);
    file_equals(r->out_path, data, size);
    run(r, (const char *[]){"cat", url, "--range", "100-199", "--cache", tc.members, NULL});
    assert_int_equal(r->status, 0);
    file_equals(r->out_path, data + 100, 100);
    run(r, (const char *[]){"ls", "s3://ringcache-test/cli/*.bin", "--cache", tc.members, NULL});
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, url));
    run(r, (const char *[]){"stats", "--cache", tc.members, NULL});
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "== n0"));
    assert_non_null(strstr(r->out, "== n2"));
    assert_non_null(strstr(r->out, "ringcached_requests_total"));
    /* a missing key: one sentence, exit 1 */
    run(r, (const char *[]){"cat", "s3://ringcache-test/cli/none", "--cache", tc.members, NULL});
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "cli/none"));
    free(r);
    free(data);
}

static void test_warm_then_cat(void **state)
{
    (void)state;
    size_t a = (5u << 20) + 1, b = 3u << 20;
    unsigned char *da = t_alloc_data(a, 62), *db = t_alloc_data(b, 63);
    t_put_direct(&tc, "warm/x/a.bin", da, a, NULL);
    t_put_direct(&tc, "warm/x/b.bin", db, b, NULL);
    t_put_direct(&tc, "warm/y/c.bin", db, b, NULL); /* not matched by the glob */
    assert_int_equal(h_s3model_reset(tc.model), 0);
    int64_t served0 = 0;
    for (int i = 0; i < T_NODES; i++)
        served0 += t_node_metric(&tc.nodes[i], "ringcached_bytes_served_total");
    run_result *r = malloc(sizeof(*r));
    run(r, (const char *[]){"warm", "s3://ringcache-test/warm/x/*.bin", "--cache", tc.members,
                            NULL});
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "warmed 2 objects"));
    assert_non_null(strstr(r->err, "warm/x/a.bin")); /* progress, one line per object */
    assert_int_equal(t_s3_gets(&tc, "warm/x/a.bin"), 6);
    assert_int_equal(t_s3_gets(&tc, "warm/x/b.bin"), 3);
    assert_int_equal(t_s3_gets(&tc, "warm/y/c.bin"), 0);
    /* no object data went to the CLI: one byte per block (9), for --wait */
    int64_t served = 0;
    for (int i = 0; i < T_NODES; i++)
        served += t_node_metric(&tc.nodes[i], "ringcached_bytes_served_total");
    assert_true(served - served0 <= 9);
    run(r, (const char *[]){"cat", "s3://ringcache-test/warm/x/a.bin", "--cache", tc.members,
                            NULL});
    assert_int_equal(r->status, 0);
    file_equals(r->out_path, da, a);
    assert_int_equal(t_s3_gets(&tc, "warm/x/a.bin"), 6); /* all from the nodes */
    int64_t served_after = 0;
    for (int i = 0; i < T_NODES; i++)
        served_after += t_node_metric(&tc.nodes[i], "ringcached_bytes_served_total");
    assert_true(served_after - served >= (int64_t)a);
    run(r, (const char *[]){"warm", "--help", NULL});
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "usage: ringcache warm"));
    run(r, (const char *[]){"cat", "--help", NULL});
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "usage: ringcache cat"));
    run(r, (const char *[]){"warm", "s3://ringcache-test/warm/*", NULL});
    assert_int_equal(r->status, 2);
    assert_non_null(strstr(r->err, "--cache"));
    free(r);
    free(da);
    free(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_head_get_cat_ls_stats),
        cmocka_unit_test(test_warm_then_cat),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
