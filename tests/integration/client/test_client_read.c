/* SPDX-License-Identifier: Apache-2.0
 *
 * test_client_read.c: libringcache reading through three real ringcached
 * nodes, with every S3 request counted at the S3 model:
 *  - a 256 MiB object read whole equals the S3 bytes, costs one S3 GET per
 *    block (the nodes fill each block once), and 1000 random ranges of it
 *    equal the S3 bytes too;
 *  - a second client (empty page cache) reads it again: no S3 GET at all;
 *  - rc_put writes through a node, and the writer's next open sees the new
 *    version without a HEAD (read-your-writes) and reads its bytes;
 *  - errors: a missing key is -ENOENT with a sentence naming it.
 * (Sanitizer builds use 48 MiB.)
 */
#include "client_test_util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

static t_cluster tc;
static size_t big_size;
static unsigned char *big;
static char big_etag[S3_ETAG_MAX];

static int setup(void **state)
{
    (void)state;
    t_cluster_start(&tc, "test_client_read", NULL);
    big_size = t_size_mib(256, 48) + 12345; /* a short last block */
    big = t_alloc_data(big_size, 7);
    t_put_direct(&tc, "read/big.bin", big, big_size, big_etag);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    t_cluster_stop(&tc);
    free(big);
    return 0;
}

static void test_whole_and_ranges(void **state)
{
    (void)state;
    assert_int_equal(h_s3model_reset(tc.model), 0);
    rc_config cfg;
    t_rc_config(&tc, &cfg);
    rc_client *c;
    char err[RC_ERR_MAX];
    int rc = rc_create(&c, &cfg, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(rc_block_size(c), 1u << 20);
    assert_int_equal(rc_members(c), 3);
    rc_handle *h;
    assert_int_equal(rc_open(c, H_S3_DEFAULT_BUCKET, "read/big.bin", &h, err, sizeof(err)), 0);
    assert_int_equal(rc_size(h), big_size);
    assert_string_equal(rc_version(h), big_etag);

    unsigned char *buf = malloc(big_size);
    const size_t step = 8u << 20;
    for (size_t off = 0; off < big_size; off += step) {
        int64_t n = rc_pread(h, buf + off, step, off);
        assert_int_equal(n, off + step <= big_size ? step : big_size - off);
    }
    assert_memory_equal(buf, big, big_size);
    uint64_t blocks = (big_size + (1u << 20) - 1) >> 20;
    /* every block filled from S3 exactly once, by its owner */
    assert_int_equal(t_s3_gets(&tc, "read/big.bin"), (int64_t)blocks);

    /* 1000 random ranges, some crossing blocks, some past the end */
    uint64_t x = 12345;
    for (int i = 0; i < 1000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t off = (x >> 11) % big_size;
        size_t len = (size_t)((x >> 40) % (3u << 20)) + 1;
        int64_t n = rc_pread(h, buf, len, off);
        size_t want = off + len <= big_size ? len : big_size - off;
        assert_int_equal(n, want);
        assert_memory_equal(buf, big + off, want);
    }
    assert_int_equal(rc_pread(h, buf, 10, big_size), 0);
    rc_stats st;
    rc_stats_get(c, &st);
    assert_true(st.hits > 0);
    assert_int_equal(st.fallbacks, 0);
    assert_int_equal(st.stale, 0);
    rc_close(&h);
    rc_destroy(&c);

    /* a second compute node: empty page cache, warm nodes, no S3 GET */
    assert_int_equal(h_s3model_reset(tc.model), 0);
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), 0);
    assert_int_equal(rc_open(c, H_S3_DEFAULT_BUCKET, "read/big.bin", &h, err, sizeof(err)), 0);
    memset(buf, 0, big_size);
    assert_int_equal(rc_pread(h, buf, big_size, 0), big_size);
    assert_memory_equal(buf, big, big_size);
    assert_int_equal(t_s3_gets(&tc, "read/big.bin"), 0);
    rc_stats_get(c, &st);
    assert_int_equal(st.node_blocks + st.readahead_fetches >= blocks, 1);
    rc_close(&h);
    rc_destroy(&c);
    free(buf);
}

static void test_put_read_your_writes(void **state)
{
    (void)state;
    rc_config cfg;
    t_rc_config(&tc, &cfg);
    cfg.metadata_ttl_ms = 60000;
    rc_client *c;
    char err[RC_ERR_MAX];
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), 0);
    size_t size = (5u << 20) + 777;
    unsigned char *v1 = t_alloc_data(size, 21), *v2 = t_alloc_data(size, 22);
    char e1[RC_VERSION_MAX], e2[RC_VERSION_MAX];
    int rc = rc_put(c, H_S3_DEFAULT_BUCKET, "read/rw.bin", v1, size, e1, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    rc_handle *h;
    assert_int_equal(rc_open(c, H_S3_DEFAULT_BUCKET, "read/rw.bin", &h, err, sizeof(err)), 0);
    assert_string_equal(rc_version(h), e1);
    rc_close(&h);
    /* overwrite: the same client sees the new version at once, though the
     * TTL of the first entry has a minute to run */
    assert_int_equal(h_s3model_reset(tc.model), 0);
    assert_int_equal(rc_put(c, H_S3_DEFAULT_BUCKET, "read/rw.bin", v2, size, e2, err, sizeof(err)),
                     0);
    assert_string_not_equal(e1, e2);
    rc_stats before, after;
    rc_stats_get(c, &before);
    assert_int_equal(rc_open(c, H_S3_DEFAULT_BUCKET, "read/rw.bin", &h, err, sizeof(err)), 0);
    rc_stats_get(c, &after);
    assert_int_equal(after.meta_hits, before.meta_hits + 1);
    assert_string_equal(rc_version(h), e2);
    unsigned char *buf = malloc(size);
    assert_int_equal(rc_pread(h, buf, size, 0), size);
    assert_memory_equal(buf, v2, size);
    /* no HEAD: the version came from the writer's metadata cache; no GET: the
     * write-through placed every block on its owner (PUT_BLOCK to the others) */
    assert_int_equal(h_s3model_count(tc.model, "HEAD", NULL), 0);
    assert_int_equal(h_s3model_count(tc.model, "GET", NULL), 0);
    rc_close(&h);
    rc_destroy(&c);
    free(buf);
    free(v1);
    free(v2);
}

static void test_missing_key(void **state)
{
    (void)state;
    rc_config cfg;
    t_rc_config(&tc, &cfg);
    rc_client *c;
    char err[RC_ERR_MAX];
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), 0);
    rc_handle *h = NULL;
    assert_int_equal(rc_open(c, H_S3_DEFAULT_BUCKET, "read/nope.bin", &h, err, sizeof(err)),
                     -ENOENT);
    assert_null(h);
    assert_non_null(strstr(err, "nope.bin"));
    rc_destroy(&c);
}

/* Each node gets a pool of exactly connections_per_node kept-alive
 * connections from one client, used in turn: the nodes count the connections
 * they accept. */
static void test_connection_pool(void **state)
{
    (void)state;
    size_t size = t_size_mib(32, 8);
    unsigned char *data = t_alloc_data(size, 9);
    t_put_direct(&tc, "read/pool.bin", data, size, NULL);
    int64_t before[T_NODES];
    for (int i = 0; i < T_NODES; i++)
        before[i] = t_node_metric(&tc.nodes[i], "ringcached_connections_total");
    rc_config cfg;
    t_rc_config(&tc, &cfg);
    cfg.connections_per_node = 2;
    char err[RC_ERR_MAX];
    rc_client *c;
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), 0);
    rc_handle *h;
    assert_int_equal(rc_open(c, H_S3_DEFAULT_BUCKET, "read/pool.bin", &h, err, sizeof(err)), 0);
    unsigned char *buf = malloc(size);
    for (int pass = 0; pass < 2; pass++) /* the second pass hits the page cache */
        assert_int_equal(rc_pread(h, buf, size, 0), (int64_t)size);
    assert_memory_equal(buf, data, size);
    for (int i = 0; i < T_NODES; i++) {
        int64_t opened = t_node_metric(&tc.nodes[i], "ringcached_connections_total") - before[i];
        fprintf(stderr, "node %d: %lld connections from the client\n", i, (long long)opened);
        assert_int_equal(opened, 2);
    }
    rc_close(&h);
    rc_destroy(&c);
    free(buf);
    free(data);
}

/* RC_READ_SCAN: consecutive ranges start no read-ahead, a range's partial
 * first and last blocks fetch only their bytes and its whole blocks land in
 * the caller's buffer (no page either: a second scan fetches them again),
 * while blocks the page cache holds are copied from it; the bytes are right. */
static void test_scan_reads(void **state)
{
    (void)state;
    size_t size = t_size_mib(16, 8);
    unsigned char *data = t_alloc_data(size, 11);
    t_put_direct(&tc, "read/scan.bin", data, size, NULL);
    rc_config cfg;
    t_rc_config(&tc, &cfg);
    char err[RC_ERR_MAX];
    rc_client *c;
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), 0);
    rc_handle *h;
    assert_int_equal(rc_open(c, H_S3_DEFAULT_BUCKET, "read/scan.bin", &h, err, sizeof(err)), 0);
    uint64_t bs = rc_block_size(c);
    unsigned char *buf = malloc(size);
    rc_stats st0, st1;
    rc_stats_get(c, &st0);
    /* three consecutive ranges of 2 blocks each, each starting mid-block */
    uint64_t off = bs / 2;
    for (int i = 0; i < 3; i++, off += 2 * bs) {
        assert_int_equal(rc_pread_flags(h, buf, 2 * bs, off, RC_READ_SCAN), (int64_t)(2 * bs));
        assert_memory_equal(buf, data + off, 2 * bs);
    }
    rc_stats_get(c, &st1);
    assert_int_equal(st1.readahead_fetches - st0.readahead_fetches, 0);
    /* each range: its first and last blocks partial, one whole block between */
    assert_int_equal(st1.partial_fetches - st0.partial_fetches, 6);
    assert_int_equal(st1.scan_direct - st0.scan_direct, 3);
    assert_int_equal(st1.hits - st0.hits, 0);
    /* nothing of them was cached: the same scan fetches the same again */
    off = bs / 2;
    for (int i = 0; i < 3; i++, off += 2 * bs) {
        assert_int_equal(rc_pread_flags(h, buf, 2 * bs, off, RC_READ_SCAN), (int64_t)(2 * bs));
        assert_memory_equal(buf, data + off, 2 * bs);
    }
    rc_stats_get(c, &st0);
    assert_int_equal(st0.scan_direct - st1.scan_direct, 3);
    assert_int_equal(st0.hits - st1.hits, 0);
    /* the same three ranges read plainly: the read-ahead starts */
    off = bs / 2;
    for (int i = 0; i < 3; i++, off += 2 * bs)
        assert_int_equal(rc_pread(h, buf, 2 * bs, off), (int64_t)(2 * bs));
    rc_stats_get(c, &st0);
    assert_true(st0.readahead_fetches > st1.readahead_fetches);
    /* and now that the page cache has the blocks, a scan copies them from it */
    rc_stats_get(c, &st1);
    assert_int_equal(rc_pread_flags(h, buf, bs, bs, RC_READ_SCAN), (int64_t)bs);
    assert_memory_equal(buf, data + bs, bs);
    rc_stats_get(c, &st0);
    assert_int_equal(st0.scan_direct - st1.scan_direct, 0);
    assert_int_equal(st0.hits - st1.hits, 1);
    rc_close(&h);
    rc_destroy(&c);
    free(buf);
    free(data);
}

/* One query's reads of test_scan_repeats_kept: 4000 bytes at 1000 into each
 * of blocks 0..2, checked. */
static void one_round(rc_handle *h, const unsigned char *data, uint64_t bs)
{
    unsigned char buf[4000];
    for (uint64_t k = 0; k < 3; k++) {
        assert_int_equal(rc_pread_flags(h, buf, sizeof(buf), k * bs + 1000, RC_READ_SCAN),
                         (int64_t)sizeof(buf));
        assert_memory_equal(buf, data + k * bs + 1000, sizeof(buf));
    }
}

/* With cache_scans (a long-lived server): a scan's small part of a block is
 * fetched alone, also when the same query reads it again; when a later query
 * (rc_query_begin) reads the same bytes, that read fills the block's whole
 * page, and from then on the page answers. Other bytes of a block
 * read once per query do not count. The bytes are right every time. */
static void test_scan_repeats_kept(void **state)
{
    (void)state;
    size_t size = t_size_mib(8, 8);
    unsigned char *data = t_alloc_data(size, 13);
    t_put_direct(&tc, "read/repeat.bin", data, size, NULL);
    rc_config cfg;
    t_rc_config(&tc, &cfg);
    cfg.cache_scans = true;
    char err[RC_ERR_MAX];
    rc_client *c;
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), 0);
    rc_handle *h;
    assert_int_equal(rc_open(c, H_S3_DEFAULT_BUCKET, "read/repeat.bin", &h, err, sizeof(err)), 0);
    uint64_t bs = rc_block_size(c);
    unsigned char buf[4000];
    rc_stats a, b;
    rc_query_begin(c);
    rc_stats_get(c, &a);
    one_round(h, data, bs);
    one_round(h, data, bs); /* the same query again: no reason to keep the blocks */
    rc_stats_get(c, &b);
    assert_int_equal(b.partial_fetches - a.partial_fetches, 6);
    assert_int_equal(b.repeat_fills - a.repeat_fills, 0);
    /* the next query reads the same bytes: each read fills its block's page */
    rc_query_begin(c);
    one_round(h, data, bs);
    rc_stats_get(c, &a);
    assert_int_equal(a.partial_fetches - b.partial_fetches, 0);
    assert_int_equal(a.repeat_fills - b.repeat_fills, 3);
    /* from then on the pages answer */
    rc_query_begin(c);
    one_round(h, data, bs);
    rc_query_begin(c);
    one_round(h, data, bs);
    rc_stats_get(c, &b);
    assert_int_equal(b.partial_fetches - a.partial_fetches, 0);
    assert_int_equal(b.repeat_fills - a.repeat_fills, 0);
    assert_int_equal(b.hits - a.hits, 6);
    /* block 3 read at other bytes by each query: never kept */
    for (int q = 0; q < 3; q++) {
        rc_query_begin(c);
        uint64_t off = 3 * bs + 1000 + (uint64_t)q * 8000;
        assert_int_equal(rc_pread_flags(h, buf, sizeof(buf), off, RC_READ_SCAN),
                         (int64_t)sizeof(buf));
        assert_memory_equal(buf, data + off, sizeof(buf));
    }
    rc_stats_get(c, &a);
    assert_int_equal(a.partial_fetches - b.partial_fetches, 3);
    assert_int_equal(a.repeat_fills - b.repeat_fills, 0);
    rc_close(&h);
    rc_destroy(&c);
    free(data);
}

/* Small scattered reads go out on the reader's own connections by default
 * (every one counted in inline_reads), and through the I/O thread with
 * small_reads_inline off; the bytes are right both ways. */
static void test_small_reads_inline(void **state)
{
    (void)state;
    size_t size = t_size_mib(16, 8);
    unsigned char *data = t_alloc_data(size, 13);
    t_put_direct(&tc, "read/small.bin", data, size, NULL);
    for (int inl = 0; inl < 2; inl++) {
        rc_config cfg;
        t_rc_config(&tc, &cfg);
        cfg.small_reads_inline = inl;
        char err[RC_ERR_MAX];
        rc_client *c;
        assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), 0);
        rc_handle *h;
        assert_int_equal(rc_open(c, H_S3_DEFAULT_BUCKET, "read/small.bin", &h, err, sizeof(err)),
                         0);
        t_scattered_reads(h, data, size, 100, 77);
        rc_stats st;
        rc_stats_get(c, &st);
        fprintf(stderr, "inline %d: %llu ranges, %llu on the reader's thread\n", inl,
                (unsigned long long)st.partial_fetches, (unsigned long long)st.inline_reads);
        assert_true(st.partial_fetches >= 100);
        assert_int_equal(st.inline_reads, inl ? st.partial_fetches : 0);
        rc_close(&h);
        rc_destroy(&c);
    }
    free(data);
}

/* prefault backs the page cache with memory in rc_create (RSS grows by about
 * its size there, and not without it); RINGCACHE_PREFAULT is read as a yes/no
 * and anything else is refused with the variable named. */
static void test_prefault(void **state)
{
    (void)state;
    rc_config cfg;
    t_rc_config(&tc, &cfg);
    cfg.page_cache_bytes = 64u << 20;
    char err[RC_ERR_MAX];
    rc_client *c;
    long before = h_pid_rss_kib(getpid());
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), 0);
    long plain = h_pid_rss_kib(getpid()) - before;
    rc_destroy(&c);
    cfg.prefault = true;
    before = h_pid_rss_kib(getpid());
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), 0);
    long pre = h_pid_rss_kib(getpid()) - before;
    rc_destroy(&c);
    fprintf(stderr, "RSS growth at rc_create: %ld KiB plain, %ld KiB with prefault\n", plain, pre);
    assert_true(pre >= 60 * 1024);
    assert_true(plain < 32 * 1024);

    rc_config e;
    rc_config_init(&e);
    setenv("RINGCACHE_PREFAULT", "yes", 1);
    assert_int_equal(rc_config_from_env(&e, err, sizeof(err)), 0);
    assert_true(e.prefault);
    setenv("RINGCACHE_PREFAULT", "maybe", 1);
    assert_int_equal(rc_config_from_env(&e, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "RINGCACHE_PREFAULT='maybe'"));
    unsetenv("RINGCACHE_PREFAULT");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_and_ranges),   cmocka_unit_test(test_put_read_your_writes),
        cmocka_unit_test(test_missing_key),        cmocka_unit_test(test_prefault),
        cmocka_unit_test(test_connection_pool),    cmocka_unit_test(test_scan_reads),
        cmocka_unit_test(test_small_reads_inline), cmocka_unit_test(test_scan_repeats_kept),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
