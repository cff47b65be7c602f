/* SPDX-License-Identifier: Apache-2.0
 *
 * test_client_readahead.c: read-ahead for sequential readers, none for
 * scattered ones, through three real ringcached nodes:
 *  - a sequential 1 GiB read in 1 MiB preads stalls (a pread that had to
 *    start a fetch itself, because read-ahead had not asked for its block) at
 *    most once per read-ahead window, and equals the S3 bytes;
 *  - 2000 random 64 KiB reads (unaligned, of a cold client) make no
 *    read-ahead fetch, and equal the S3 bytes.
 * (128 MiB in sanitizer builds.) Counts, never times, are asserted.
 */
#include "client_test_util.h"

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static t_cluster tc;
static size_t size;
static unsigned char *data;

static int setup(void **state)
{
    (void)state;
    t_cluster_start(&tc, "test_client_readahead", NULL);
    size = t_size_mib(1024, 128);
    data = t_alloc_data(size, 51);
    t_put_direct(&tc, "ra/seq.bin", data, size, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    t_cluster_stop(&tc);
    free(data);
    return 0;
}

static void test_sequential_stalls_once_per_window(void **state)
{
    (void)state;
    rc_config cfg;
    t_rc_config(&tc, &cfg);
    cfg.max_threads = 1;
    cfg.page_cache_bytes = 256u << 20;
    rc_client *c;
    char err[RC_ERR_MAX];
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), 0);
    int window = rc_window(c);
    assert_int_equal(window, 16); /* min(16, 256 pages / (4 x 1 reader)) */
    rc_handle *h;
    assert_int_equal(rc_open(c, H_S3_DEFAULT_BUCKET, "ra/seq.bin", &h, err, sizeof(err)), 0);
    unsigned char *buf = malloc(1u << 20);
    uint64_t blocks = size >> 20;
    for (uint64_t b = 0; b < blocks; b++) {
        assert_int_equal(rc_pread(h, buf, 1u << 20, b << 20), 1u << 20);
        if (memcmp(buf, data + (b << 20), 1u << 20) != 0)
            fail_msg("block %" PRIu64 " differs from S3", b);
    }
    rc_stats st;
    rc_stats_get(c, &st);
    fprintf(stderr,
            "sequential: %" PRIu64 " blocks, window %d, stalls %" PRIu64
            ", read-ahead fetches %" PRIu64 ", waits %" PRIu64 ", hits %" PRIu64 "\n",
            blocks, window, st.stalls, st.readahead_fetches, st.waits, st.hits);
    assert_true(st.stalls <= blocks / (uint64_t)window);
    assert_true(st.readahead_fetches >= blocks - st.stalls - 1);
    rc_close(&h);
    rc_destroy(&c);
    free(buf);
}

static void test_random_reads_no_readahead(void **state)
{
    (void)state;
    rc_config cfg;
    t_rc_config(&tc, &cfg);
    rc_client *c;
    char err[RC_ERR_MAX];
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), 0);
    assert_true(rc_window(c) > 0);
    rc_handle *h;
    assert_int_equal(rc_open(c, H_S3_DEFAULT_BUCKET, "ra/seq.bin", &h, err, sizeof(err)), 0);
    unsigned char *buf = malloc(64u << 10);
    uint64_t x = 99;
    for (int i = 0; i < 2000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t off = (x >> 7) % (size - (64u << 10));
        assert_int_equal(rc_pread(h, buf, 64u << 10, off), 64u << 10);
        if (memcmp(buf, data + off, 64u << 10) != 0)
            fail_msg("random read %d at %" PRIu64 " differs from S3", i, off);
    }
    rc_stats st;
    rc_stats_get(c, &st);
    fprintf(stderr,
            "random: read-ahead fetches %" PRIu64 ", range fetches %" PRIu64 ", hits %" PRIu64 "\n",
            st.readahead_fetches, st.partial_fetches, st.hits);
    assert_int_equal(st.readahead_fetches, 0);
    assert_true(st.partial_fetches > 0);
    rc_close(&h);
    rc_destroy(&c);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sequential_stalls_once_per_window),
        cmocka_unit_test(test_random_reads_no_readahead),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
