/* SPDX-License-Identifier: Apache-2.0
 *
 * test_client_faults.c: libringcache when cache nodes die, against three real
 * ringcached nodes and a real S3 behind the S3 model:
 *  - one node SIGKILLed in the middle of a sequential read: the read
 *    completes, the bytes equal S3's, and the blocks the dead node owned were
 *    asked of their next owner (failovers counted); small scattered reads
 *    before and after, on the reader's own connections (one of them to the
 *    node that dies), are right too;
 *  - every node down: a new client still opens (HEAD from S3) and reads the
 *    object from S3 directly (fallbacks counted, ETag checked), and a PUT goes
 *    to S3 directly and reads back; a cache_only client refuses instead with
 *    -EHOSTDOWN and a sentence saying why.
 * The tests run in this order and share the cluster (the second needs the
 * first's dead node).
 */
#include "client_test_util.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static t_cluster tc;

static int setup(void **state)
{
    (void)state;
    t_cluster_start(&tc, "test_client_faults", NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    t_cluster_stop(&tc);
    return 0;
}

static void kill_node(int i)
{
    assert_int_equal(h_proc_kill(tc.nodes[i].proc, SIGKILL), 0);
    assert_int_equal(h_proc_wait(tc.nodes[i].proc, 10000), 128 + SIGKILL);
    tc.nodes[i].proc = NULL; /* the environment reaps it; no clean exit to check */
}

static void test_kill_one_mid_read(void **state)
{
    (void)state;
    size_t size = t_size_mib(64, 24);
    unsigned char *data = t_alloc_data(size, 31);
    t_put_direct(&tc, "faults/a.bin", data, size, NULL);
    rc_config cfg;
    t_rc_config(&tc, &cfg);
    cfg.readahead_blocks = 4;
    rc_client *c;
    char err[RC_ERR_MAX];
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), 0);
    rc_handle *h;
    assert_int_equal(rc_open(c, H_S3_DEFAULT_BUCKET, "faults/a.bin", &h, err, sizeof(err)), 0);
    unsigned char *buf = malloc(size);
    /* small scattered reads first: the reader keeps blocking connections to
     * every node (small_reads_inline), node 1's among them */
    t_scattered_reads(h, data, size, 50, 1);
    rc_stats st;
    rc_stats_get(c, &st);
    assert_true(st.inline_reads > 0);
    const size_t step = 1u << 20;
    for (size_t off = 0; off < size; off += step) {
        if (off == size / 4)
            kill_node(1);
        int64_t n = rc_pread(h, buf + off, step, off);
        if (n < 0) {
            rc_last_error(h, err, sizeof(err));
            fprintf(stderr, "pread at %zu: %s\n", off, err);
        }
        assert_int_equal(n, step);
    }
    assert_memory_equal(buf, data, size);
    /* node 1 is dead: its kept connections fail, those reads go through the
     * I/O thread's failover; every byte is still right */
    t_scattered_reads(h, data, size, 200, 2);
    rc_stats_get(c, &st);
    assert_true(st.failovers >= 1);
    assert_int_equal(st.stale, 0);
    rc_close(&h);
    rc_destroy(&c);
    free(buf);
    free(data);
}

static void test_all_down(void **state)
{
    (void)state;
    size_t size = t_size_mib(16, 8) + 4321;
    unsigned char *data = t_alloc_data(size, 32);
    char etag[S3_ETAG_MAX];
    t_put_direct(&tc, "faults/b.bin", data, size, etag);
    kill_node(0);
    kill_node(2);
    assert_int_equal(h_s3model_reset(tc.model), 0);

    rc_config cfg;
    t_rc_config(&tc, &cfg);
    rc_client *c;
    char err[RC_ERR_MAX];
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), 0);
    rc_handle *h;
    assert_int_equal(rc_open(c, H_S3_DEFAULT_BUCKET, "faults/b.bin", &h, err, sizeof(err)), 0);
    assert_string_equal(rc_version(h), etag);
    unsigned char *buf = malloc(size);
    assert_int_equal(rc_pread(h, buf, size, 0), size);
    assert_memory_equal(buf, data, size);
    /* a small range too (fetched as a range, not a page) */
    assert_int_equal(rc_pread(h, buf, 1000, 5000000), 1000);
    assert_memory_equal(buf, data + 5000000, 1000);
    rc_stats st;
    rc_stats_get(c, &st);
    uint64_t blocks = (size + (1u << 20) - 1) >> 20;
    assert_true(st.fallbacks >= blocks);
    assert_int_equal(st.node_blocks, 0);
    assert_true(st.head_fallbacks >= 1);
    assert_true(t_s3_gets(&tc, "faults/b.bin") >= (int64_t)blocks);
    rc_close(&h);

    /* a write with every node down goes to S3 directly, and reads back */
    char v[RC_VERSION_MAX];
    unsigned char *w = t_alloc_data(3u << 20, 33);
    assert_int_equal(
        rc_put(c, H_S3_DEFAULT_BUCKET, "faults/c.bin", w, 3u << 20, v, err, sizeof(err)), 0);
    assert_int_equal(rc_open(c, H_S3_DEFAULT_BUCKET, "faults/c.bin", &h, err, sizeof(err)), 0);
    assert_string_equal(rc_version(h), v);
    assert_int_equal(rc_pread(h, buf, 3u << 20, 0), 3u << 20);
    assert_memory_equal(buf, w, 3u << 20);
    rc_close(&h);
    rc_destroy(&c);

    /* cache_only: no S3 behind the user's back */
    cfg.cache_only = true;
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), 0);
    h = NULL;
    assert_int_equal(rc_open(c, H_S3_DEFAULT_BUCKET, "faults/b.bin", &h, err, sizeof(err)),
                     -EHOSTDOWN);
    assert_null(h);
    assert_non_null(strstr(err, "cache_only"));
    rc_destroy(&c);
    free(w);
    free(buf);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_one_mid_read),
        cmocka_unit_test(test_all_down),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
