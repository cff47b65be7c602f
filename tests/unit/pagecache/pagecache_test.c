/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests of the page cache on one thread: configuration checks, the fixed
 * memory overhead, fill/hit, pinning, the all-pinned fallback, eviction order
 * of LRU and S3-FIFO, the one-shot and read-ahead hints, fill errors and
 * allocation failures (every allocation of pc_create() failed in turn).
 * Multi-threaded behaviour is in pagecache_threads_test.c, the
 * scan-resistance figure in pagecache_trace_test.c.
 */
#include "pagecache.h"
#include "pc_support.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

enum { PS = 256 }; /* page size for most tests */

static pc_cache *make(pc_policy policy, size_t pages, unsigned shards)
{
    pc_cache *c = NULL;
    pc_config cfg = {
        .capacity_bytes = pages * PS, .page_size = PS, .shards = shards, .policy = policy};
    assert_int_equal(pc_create(&c, &cfg), 0);
    assert_non_null(c);
    return c;
}

static pc_key K(uint64_t i)
{
    return (pc_key){.hi = 0xabcdef, .lo = i};
}

/* Reads key like a reader: fills a miss with the pattern. Returns the
 * pc_fetch() result. */
static int touch(pc_cache *c, uint64_t i, unsigned flags)
{
    pc_key k = K(i);
    pc_page *p = NULL;
    int rc = pc_fetch(c, &k, flags, &p);
    if (rc == PC_FILL) {
        pc_pattern_fill(pc_page_data(p), PS, &k);
        assert_int_equal(pc_fill_complete(c, p, PS), 0);
    }
    if (rc == PC_HIT)
        assert_true(pc_pattern_check(pc_page_data(p), pc_page_len(p), &k));
    pc_release(c, &p);
    assert_null(p);
    return rc;
}

/* Fetches and keeps the pin; fills a miss. */
static pc_page *hold(pc_cache *c, uint64_t i)
{
    pc_key k = K(i);
    pc_page *p = NULL;
    int rc = pc_fetch(c, &k, 0, &p);
    assert_true(rc == PC_HIT || rc == PC_FILL);
    if (rc == PC_FILL) {
        pc_pattern_fill(pc_page_data(p), PS, &k);
        assert_int_equal(pc_fill_complete(c, p, PS), 0);
    }
    return p;
}

static bool has(pc_cache *c, uint64_t i)
{
    pc_key k = K(i);
    return pc_contains(c, &k);
}

static const pc_policy policies[] = {PC_POLICY_LRU, PC_POLICY_S3FIFO};

/* ---- configuration ------------------------------------------------------- */

static void test_create_rejects_bad_config(void **state)
{
    (void)state;
    pc_cache *c = (pc_cache *)&c; /* must be reset to NULL */
    pc_config ok = {.capacity_bytes = 4096, .page_size = 256};
    assert_int_equal(pc_create(NULL, &ok), -EINVAL);
    assert_int_equal(pc_create(&c, NULL), -EINVAL);
    assert_null(c);
    pc_config bad[] = {
        {.capacity_bytes = 4096, .page_size = 0},
        {.capacity_bytes = 4096, .page_size = 100},               /* not a multiple of 64 */
        {.capacity_bytes = 128, .page_size = 256},                /* below one page */
        {.capacity_bytes = 4096, .page_size = 256, .shards = 17}, /* more shards than pages */
        {.capacity_bytes = 1 << 20, .page_size = 64, .shards = PC_MAX_SHARDS + 1},
        {.capacity_bytes = 4096, .page_size = 256, .policy = (pc_policy)7},
        {.capacity_bytes = 4096, .page_size = 256, .alloc_fn = pc_counting_alloc},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        c = (pc_cache *)&c;
        assert_int_equal(pc_create(&c, &bad[i]), -EINVAL);
        assert_null(c);
    }
    pc_destroy(NULL);
    c = NULL;
    pc_destroy(&c);
    assert_null(c);
}

static void test_accessors_and_default_policy(void **state)
{
    (void)state;
    pc_cache *c = NULL;
    pc_config cfg = {.capacity_bytes = 1000 * 4096 + 17, .page_size = 4096};
    assert_int_equal(pc_create(&c, &cfg), 0);
    assert_int_equal(pc_page_size(c), 4096);
    assert_int_equal(pc_capacity_pages(c), 1000);
    assert_int_equal(pc_shards(c), 1000 / 64);
    assert_int_equal(pc_policy_of(c), PC_POLICY_S3FIFO);
    pc_destroy(&c);
    assert_null(c);
    assert_string_equal(pc_policy_name(PC_POLICY_DEFAULT), "s3fifo");
    assert_string_equal(pc_policy_name(PC_POLICY_S3FIFO), "s3fifo");
    assert_string_equal(pc_policy_name(PC_POLICY_LRU), "lru");
    assert_null(pc_policy_name((pc_policy)9));
}

/* ---- memory -------------------------------------------------------------- */

/* What the cache takes from its allocator: the stated overhead at create,
 * plus page buffers that never pass the capacity, and nothing after destroy. */
static void test_memory_is_capacity_plus_stated_overhead(void **state)
{
    (void)state;
    const struct {
        size_t pages, page_size;
        unsigned shards;
    } shapes[] = {{1, 64, 1}, {7, 64, 0}, {100, 4096, 3}, {4096, 64, 0}, {20000, 64, 256}};
    for (size_t pi = 0; pi < 2; pi++) {
        for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++) {
            struct pc_counting_alloc a;
            pc_counting_init(&a);
            size_t cap = shapes[si].pages * shapes[si].page_size + shapes[si].page_size / 2;
            pc_config cfg = {.capacity_bytes = cap,
                             .page_size = shapes[si].page_size,
                             .shards = shapes[si].shards,
                             .policy = policies[pi],
                             .alloc_fn = pc_counting_alloc,
                             .free_fn = pc_counting_free,
                             .alloc_ctx = &a};
            pc_cache *c = NULL;
            assert_int_equal(pc_create(&c, &cfg), 0);
            size_t ov = pc_overhead_bytes(c);
            assert_int_equal(atomic_load(&a.live), ov);
            assert_true(ov <= PC_OVERHEAD_PER_PAGE * shapes[si].pages +
                                  PC_OVERHEAD_PER_SHARD * pc_shards(c) + PC_OVERHEAD_FIXED);
            /* Three times the capacity in distinct keys, then all again. */
            size_t n = 3 * shapes[si].pages;
            for (size_t round = 0; round < 2; round++) {
                for (size_t i = 0; i < n; i++) {
                    pc_key k = {7, i};
                    pc_page *p = NULL;
                    int rc = pc_fetch(c, &k, 0, &p);
                    assert_true(rc == PC_HIT || rc == PC_FILL);
                    if (rc == PC_FILL)
                        assert_int_equal(pc_fill_complete(c, p, 1), 0);
                    pc_release(c, &p);
                    assert_true(atomic_load(&a.live) <= cap + ov);
                }
            }
            pc_stats st;
            pc_stats_get(c, &st);
            assert_true(st.bytes_resident <= cap);
            assert_int_equal(st.bytes_resident, shapes[si].pages * shapes[si].page_size);
            assert_int_equal(atomic_load(&a.live), ov + st.bytes_resident);
            assert_true(atomic_load(&a.peak) <= cap + ov);
            pc_destroy(&c);
            assert_int_equal(atomic_load(&a.live), 0);
        }
    }
}

/* Every allocation pc_create() makes fails in turn: -ENOMEM, nothing leaked. */
static void test_create_allocation_failures(void **state)
{
    (void)state;
    for (size_t pi = 0; pi < 2; pi++) {
        for (long k = 0;; k++) {
            struct pc_counting_alloc a;
            pc_counting_init(&a);
            atomic_store(&a.fail_after, k);
            pc_config cfg = {.capacity_bytes = 64 * 300,
                             .page_size = 64,
                             .shards = 4,
                             .policy = policies[pi],
                             .alloc_fn = pc_counting_alloc,
                             .free_fn = pc_counting_free,
                             .alloc_ctx = &a};
            pc_cache *c = NULL;
            int rc = pc_create(&c, &cfg);
            if (rc == 0) {
                assert_true(k > 4); /* cache, shards, and per-shard tables */
                pc_destroy(&c);
                assert_int_equal(atomic_load(&a.live), 0);
                break;
            }
            assert_int_equal(rc, -ENOMEM);
            assert_null(c);
            assert_int_equal(atomic_load(&a.live), 0);
        }
    }
}

/* A page buffer that cannot be allocated: -ENOMEM, nothing cached, and the
 * next fetch of the key tries again. */
static void test_page_buffer_allocation_failure(void **state)
{
    (void)state;
    struct pc_counting_alloc a;
    pc_counting_init(&a);
    pc_config cfg = {.capacity_bytes = 4 * PS,
                     .page_size = PS,
                     .shards = 1,
                     .alloc_fn = pc_counting_alloc,
                     .free_fn = pc_counting_free,
                     .alloc_ctx = &a};
    pc_cache *c = NULL;
    assert_int_equal(pc_create(&c, &cfg), 0);
    atomic_store(&a.fail_after, 0);
    pc_key k = K(1);
    pc_page *p = (pc_page *)&p;
    assert_int_equal(pc_fetch(c, &k, 0, &p), -ENOMEM);
    assert_null(p);
    pc_stats st;
    pc_stats_get(c, &st);
    assert_int_equal(st.pages_cached, 0);
    assert_int_equal(st.pages_pinned, 0);
    assert_int_equal(st.bytes_resident, 0);
    assert_int_equal(st.fill_errors, 1);
    assert_false(pc_contains(c, &k));
    atomic_store(&a.fail_after, -1);
    assert_int_equal(touch(c, 1, 0), PC_FILL);
    assert_int_equal(touch(c, 1, 0), PC_HIT);
    pc_destroy(&c);
    assert_int_equal(atomic_load(&a.live), 0);
}

/* ---- basic fill / hit ---------------------------------------------------- */

static void test_fill_then_hit(void **state)
{
    (void)state;
    for (size_t pi = 0; pi < 2; pi++) {
        pc_cache *c = make(policies[pi], 8, 1);
        pc_key k = K(42);
        pc_page *p = NULL;
        assert_false(pc_contains(c, &k));
        assert_int_equal(pc_fetch(c, &k, 0, &p), PC_FILL);
        assert_non_null(pc_page_data(p));
        assert_int_equal(pc_page_len(p), 0);
        assert_false(pc_contains(c, &k)); /* not until filled */
        memset(pc_page_data(p), 0x5a, 100);
        assert_int_equal(pc_fill_complete(c, p, 100), 0);
        pc_release(c, &p);
        assert_true(pc_contains(c, &k));

        assert_int_equal(pc_fetch(c, &k, 0, &p), PC_HIT);
        assert_int_equal(pc_page_len(p), 100); /* a short last block */
        pc_key got = pc_page_key(p);
        assert_memory_equal(&got, &k, sizeof(k));
        const unsigned char *d = pc_page_data(p);
        for (size_t i = 0; i < 100; i++)
            assert_int_equal(d[i], 0x5a);
        pc_release(c, &p);

        pc_stats st;
        pc_stats_get(c, &st);
        assert_int_equal(st.hits, 1);
        assert_int_equal(st.misses, 1);
        assert_int_equal(st.fills, 1);
        assert_int_equal(st.waits, 0);
        assert_int_equal(st.pages_cached, 1);
        assert_int_equal(st.pages_pinned, 0);
        assert_int_equal(st.bytes_resident, PS);
        pc_destroy(&c);
    }
}

static void test_fetch_rejects_bad_arguments(void **state)
{
    (void)state;
    pc_cache *c = make(PC_POLICY_DEFAULT, 4, 1);
    pc_key k = K(1);
    pc_page *p = (pc_page *)&p;
    assert_int_equal(pc_fetch(NULL, &k, 0, &p), -EINVAL);
    assert_null(p);
    assert_int_equal(pc_fetch(c, NULL, 0, &p), -EINVAL);
    assert_int_equal(pc_fetch(c, &k, 0, NULL), -EINVAL);
    assert_int_equal(pc_fetch(c, &k, 1u << 9, &p), -EINVAL);
    pc_release(c, NULL);
    p = NULL;
    pc_release(c, &p);
    pc_stats st;
    pc_stats_get(c, &st);
    assert_int_equal(st.hits + st.misses + st.waits, 0);
    pc_destroy(&c);
}

static void test_fill_complete_checks(void **state)
{
    (void)state;
    pc_cache *c = make(PC_POLICY_DEFAULT, 4, 1);
    pc_key k = K(1);
    pc_page *p = NULL;
    assert_int_equal(pc_fetch(c, &k, 0, &p), PC_FILL);
    assert_int_equal(pc_fill_complete(c, p, PS + 1), -EINVAL); /* still filling */
    assert_int_equal(pc_fetch(c, &k, PC_FETCH_NOWAIT, &(pc_page *){NULL}), -EAGAIN);
    assert_int_equal(pc_fetch(c, &k, PC_FETCH_READAHEAD, &(pc_page *){NULL}), -EEXIST);
    assert_int_equal(pc_fill_complete(c, p, PS), 0);
    assert_int_equal(pc_fill_complete(c, p, PS), -EINVAL); /* not filling any more */
    assert_int_equal(pc_fill_complete(NULL, p, 0), -EINVAL);
    pc_release(c, &p);
    assert_int_equal(pc_fetch(c, &k, PC_FETCH_NOWAIT, &p), PC_HIT);
    assert_int_equal(pc_page_len(p), PS);
    pc_release(c, &p);
    pc_destroy(&c);
}

/* A failed fill leaves nothing behind; the next fetch fills again. */
static void test_failed_fill_is_retried(void **state)
{
    (void)state;
    for (size_t pi = 0; pi < 2; pi++) {
        pc_cache *c = make(policies[pi], 4, 1);
        pc_key k = K(9);
        pc_page *p = NULL;
        assert_int_equal(pc_fetch(c, &k, 0, &p), PC_FILL);
        assert_int_equal(pc_fill_complete(c, p, -EIO), 0);
        pc_release(c, &p);
        assert_false(pc_contains(c, &k));
        pc_stats st;
        pc_stats_get(c, &st);
        assert_int_equal(st.fill_errors, 1);
        assert_int_equal(st.pages_cached, 0);
        assert_int_equal(st.pages_pinned, 0);
        assert_int_equal(touch(c, 9, 0), PC_FILL);
        assert_int_equal(touch(c, 9, 0), PC_HIT);
        /* The failed page's slot went back: four more keys fit without an
         * eviction. */
        for (uint64_t i = 10; i < 13; i++)
            assert_int_equal(touch(c, i, 0), PC_FILL);
        pc_stats_get(c, &st);
        assert_int_equal(st.evictions, 0);
        assert_int_equal(st.pages_cached, 4);
        pc_destroy(&c);
    }
}

/* Releasing a page without completing its fill abandons the fill. */
static void test_release_without_complete_abandons_fill(void **state)
{
    (void)state;
    for (size_t pi = 0; pi < 2; pi++) {
        pc_cache *c = make(policies[pi], 1, 1);
        pc_key k = K(3);
        pc_page *p = NULL;
        assert_int_equal(pc_fetch(c, &k, 0, &p), PC_FILL);
        pc_release(c, &p);
        assert_null(p);
        assert_false(pc_contains(c, &k));
        pc_stats st;
        pc_stats_get(c, &st);
        assert_int_equal(st.fill_errors, 1);
        assert_int_equal(st.pages_cached, 0);
        assert_int_equal(st.pages_pinned, 0);
        /* The only slot is free again. */
        assert_int_equal(touch(c, 4, 0), PC_FILL);
        assert_int_equal(touch(c, 3, 0), PC_FILL);
        pc_destroy(&c);
    }
}

/* ---- pinning and the all-pinned fallback --------------------------------- */

static void test_pinned_page_is_never_evicted(void **state)
{
    (void)state;
    for (size_t pi = 0; pi < 2; pi++) {
        pc_cache *c = make(policies[pi], 4, 1);
        pc_page *p = hold(c, 1);
        for (uint64_t i = 100; i < 200; i++)
            assert_int_equal(touch(c, i, 0), PC_FILL);
        assert_true(has(c, 1));
        pc_key k = K(1);
        assert_true(pc_pattern_check(pc_page_data(p), PS, &k));
        pc_stats st;
        pc_stats_get(c, &st);
        assert_int_equal(st.pages_pinned, 1);
        assert_int_equal(st.evictions, 100 - 3);
        pc_release(c, &p);
        /* Unpinned, a page read once goes under the same pressure. */
        for (uint64_t i = 200; i < 300; i++)
            assert_int_equal(touch(c, i, 0), PC_FILL);
        assert_false(has(c, 1));
        pc_destroy(&c);
    }
}

static void test_all_pinned_reads_uncached(void **state)
{
    (void)state;
    for (size_t pi = 0; pi < 2; pi++) {
        pc_cache *c = make(policies[pi], 4, 1);
        pc_page *held[4];
        for (uint64_t i = 0; i < 4; i++)
            held[i] = hold(c, i);
        pc_key k = K(77);
        pc_page *p = (pc_page *)&p;
        assert_int_equal(pc_fetch(c, &k, 0, &p), PC_UNCACHED);
        assert_null(p);
        assert_int_equal(pc_fetch(c, &k, PC_FETCH_ONCE, &p), PC_UNCACHED);
        assert_int_equal(pc_fetch(c, &k, PC_FETCH_READAHEAD, &p), -ENOSPC);
        /* A cached page still hits while everything is pinned. */
        assert_int_equal(touch(c, 2, 0), PC_HIT);
        pc_stats st;
        pc_stats_get(c, &st);
        assert_int_equal(st.uncached, 2);
        assert_int_equal(st.misses, 4 + 2);
        assert_int_equal(st.fills, 4);
        assert_int_equal(st.pages_pinned, 4);
        pc_release(c, &held[3]);
        assert_int_equal(touch(c, 77, 0), PC_FILL);
        assert_false(has(c, 3));
        assert_true(has(c, 77));
        for (uint64_t i = 0; i < 3; i++)
            pc_release(c, &held[i]);
        pc_stats_get(c, &st);
        assert_int_equal(st.pages_pinned, 0);
        assert_int_equal(st.evictions, 1);
        pc_destroy(&c);
    }
}

/* A filling page is pinned by its filler and not evictable either. */
static void test_filling_pages_count_as_pinned(void **state)
{
    (void)state;
    pc_cache *c = make(PC_POLICY_DEFAULT, 2, 1);
    pc_page *a = NULL, *b = NULL;
    assert_int_equal(pc_fetch(c, &(pc_key){0, 1}, 0, &a), PC_FILL);
    assert_int_equal(pc_fetch(c, &(pc_key){0, 2}, 0, &b), PC_FILL);
    pc_page *p = NULL;
    assert_int_equal(pc_fetch(c, &(pc_key){0, 3}, 0, &p), PC_UNCACHED);
    assert_int_equal(pc_fill_complete(c, a, 0), 0);
    assert_int_equal(pc_fill_complete(c, b, -ENOENT), 0);
    pc_release(c, &a);
    pc_release(c, &b);
    assert_int_equal(pc_fetch(c, &(pc_key){0, 3}, 0, &p), PC_FILL);
    assert_int_equal(pc_fill_complete(c, p, 0), 0);
    pc_release(c, &p);
    pc_destroy(&c);
}

/* ---- eviction order ------------------------------------------------------ */

static void test_lru_eviction_order(void **state)
{
    (void)state;
    pc_cache *c = make(PC_POLICY_LRU, 4, 1);
    for (uint64_t i = 1; i <= 4; i++)
        touch(c, i, 0);
    touch(c, 1, 0); /* order, newest first: 1 4 3 2 */
    touch(c, 5, 0); /* evicts 2 */
    assert_false(has(c, 2));
    assert_true(has(c, 1) && has(c, 3) && has(c, 4) && has(c, 5));
    touch(c, 3, 0); /* 3 5 1 4 */
    touch(c, 6, 0); /* evicts 4 */
    assert_false(has(c, 4));
    touch(c, 7, 0); /* evicts 1 */
    assert_false(has(c, 1));
    assert_true(has(c, 3) && has(c, 5) && has(c, 6) && has(c, 7));
    pc_stats st;
    pc_stats_get(c, &st);
    assert_int_equal(st.evictions, 3);
    pc_destroy(&c);
}

/* S3-FIFO with 10 pages: small FIFO target 1, main 9. */
static void test_s3fifo_eviction_order(void **state)
{
    (void)state;
    pc_cache *c = make(PC_POLICY_S3FIFO, 10, 1);
    for (uint64_t i = 0; i < 10; i++)
        touch(c, i, 0); /* all in the small FIFO, 0 oldest */
    touch(c, 0, 0);
    touch(c, 1, 0); /* 0 and 1 re-used */
    touch(c, 100, 0);
    /* 0 and 1 moved to main; 2, the oldest page read once, went out. */
    assert_false(has(c, 2));
    assert_true(has(c, 0) && has(c, 1));
    touch(c, 101, 0);
    assert_false(has(c, 3));
    /* 2 is in the ghost: its next miss goes straight to main. The small FIFO
     * (4..9, 100, 101) pays for it. */
    assert_int_equal(touch(c, 2, 0), PC_FILL);
    assert_false(has(c, 4));
    /* Eight more one-time pages churn only the small FIFO. */
    for (uint64_t i = 200; i < 208; i++)
        touch(c, i, 0);
    assert_true(has(c, 0) && has(c, 1) && has(c, 2));
    for (uint64_t i = 5; i < 10; i++)
        assert_false(has(c, i));
    assert_false(has(c, 100) || has(c, 101));
    pc_stats st;
    pc_stats_get(c, &st);
    assert_int_equal(st.evictions, 3 + 8);
    pc_destroy(&c);
}

/* S3-FIFO's main FIFO is a CLOCK: a page re-used in main gets another round,
 * a page not re-used goes first. */
static void test_s3fifo_main_is_clock(void **state)
{
    (void)state;
    pc_cache *c = make(PC_POLICY_S3FIFO, 10, 1);
    for (uint64_t i = 0; i < 10; i++)
        touch(c, i, 0);
    for (uint64_t i = 0; i < 10; i++)
        touch(c, i, 0); /* every page re-used once */
    touch(c, 0, 0);     /* 0 twice */
    /* The miss moves all ten to main (the small FIFO empties), then CLOCK
     * spends one credit of each; 0 still has one, so 1, the next oldest,
     * goes. */
    touch(c, 100, 0);
    assert_false(has(c, 1));
    assert_true(has(c, 0) && has(c, 100));
    for (uint64_t i = 2; i < 10; i++)
        assert_true(has(c, i));
    pc_stats st;
    pc_stats_get(c, &st);
    assert_int_equal(st.evictions, 1);
    pc_destroy(&c);
}

/* ---- hints --------------------------------------------------------------- */

/* LRU honours PC_FETCH_ONCE: a marked scan does not flush the hot pages;
 * the same scan unmarked does. */
static void test_lru_once_hint_protects_hot_pages(void **state)
{
    (void)state;
    for (int marked = 0; marked < 2; marked++) {
        pc_cache *c = make(PC_POLICY_LRU, 16, 1);
        for (int r = 0; r < 2; r++)
            for (uint64_t i = 0; i < 8; i++)
                touch(c, i, 0);
        for (uint64_t i = 1000; i < 1100; i++)
            touch(c, i, marked ? PC_FETCH_ONCE : 0);
        for (uint64_t i = 0; i < 8; i++)
            assert_int_equal(has(c, i), marked);
        pc_destroy(&c);
    }
}

/* S3-FIFO: a page hit only by one-shot reads is never promoted. */
static void test_s3fifo_once_hits_do_not_promote(void **state)
{
    (void)state;
    pc_cache *c = make(PC_POLICY_S3FIFO, 10, 1);
    touch(c, 1, PC_FETCH_ONCE);
    touch(c, 2, 0);
    for (int r = 0; r < 5; r++)
        assert_int_equal(touch(c, 1, PC_FETCH_ONCE), PC_HIT);
    assert_int_equal(touch(c, 2, 0), PC_HIT);
    for (uint64_t i = 100; i < 120; i++)
        touch(c, i, 0);
    assert_false(has(c, 1));
    assert_true(has(c, 2));
    /* And a one-shot page leaves no ghost: its next miss enters the small
     * FIFO, so ten more pages read once push it out again. */
    touch(c, 1, 0);
    for (uint64_t i = 200; i < 210; i++)
        touch(c, i, 0);
    assert_false(has(c, 1));
    pc_destroy(&c);
}

/* Read-ahead: starts fills without pinning what is there; its pages go
 * before the hot pages, and the unused ones are counted. */
static void test_readahead(void **state)
{
    (void)state;
    for (size_t pi = 0; pi < 2; pi++) {
        pc_cache *c = make(policies[pi], 10, 1);
        pc_key r1 = K(1), r2 = K(2);
        pc_page *p = NULL;
        assert_int_equal(pc_fetch(c, &r1, PC_FETCH_READAHEAD, &p), PC_FILL);
        pc_pattern_fill(pc_page_data(p), PS, &r1);
        assert_int_equal(pc_fill_complete(c, p, PS), 0);
        pc_release(c, &p);
        /* Already there: read-ahead is told so, and pins nothing. */
        assert_int_equal(pc_fetch(c, &r1, PC_FETCH_READAHEAD, &p), -EEXIST);
        assert_null(p);
        assert_int_equal(pc_fetch(c, &r2, PC_FETCH_READAHEAD, &p), PC_FILL);
        assert_int_equal(pc_fill_complete(c, p, PS), 0);
        pc_release(c, &p);
        /* The reader comes for r1, one-shot, as a sequential reader does. */
        assert_int_equal(touch(c, 1, PC_FETCH_ONCE), PC_HIT);
        pc_stats st;
        pc_stats_get(c, &st);
        assert_int_equal(st.readahead_fills, 2);
        assert_int_equal(st.fills, 2);
        assert_int_equal(st.misses, 0);
        assert_int_equal(st.hits, 1);
        assert_int_equal(st.pages_pinned, 0);
        if (policies[pi] == PC_POLICY_LRU) {
            /* Eight hot pages fill the cache; r1, used, is at the cold end
             * and goes first; r2, never used, next. */
            for (uint64_t i = 10; i < 18; i++)
                touch(c, i, 0);
            touch(c, 18, 0);
            assert_false(has(c, 1));
            assert_true(has(c, 2));
            touch(c, 19, 0);
            assert_false(has(c, 2));
            for (uint64_t i = 10; i < 20; i++)
                assert_true(has(c, i));
        } else {
            /* Hot pages read twice, then a one-shot scan: both read-ahead
             * pages go before any hot page. */
            for (int r = 0; r < 2; r++)
                for (uint64_t i = 10; i < 14; i++)
                    touch(c, i, 0);
            for (uint64_t i = 100; i < 130; i++)
                touch(c, i, PC_FETCH_ONCE);
            assert_false(has(c, 1) || has(c, 2));
            for (uint64_t i = 10; i < 14; i++)
                assert_true(has(c, i));
        }
        pc_stats_get(c, &st);
        assert_int_equal(st.readahead_unused, 1);
        pc_destroy(&c);
    }
}

/* S3-FIFO: the first demand hit of a read-ahead page is its first access;
 * only a second one promotes it. */
static void test_s3fifo_readahead_first_use_is_not_reuse(void **state)
{
    (void)state;
    for (int reads = 1; reads <= 2; reads++) {
        pc_cache *c = make(PC_POLICY_S3FIFO, 10, 1);
        pc_key k = K(1);
        pc_page *p = NULL;
        assert_int_equal(pc_fetch(c, &k, PC_FETCH_READAHEAD, &p), PC_FILL);
        pc_pattern_fill(pc_page_data(p), PS, &k);
        assert_int_equal(pc_fill_complete(c, p, PS), 0);
        pc_release(c, &p);
        for (int r = 0; r < reads; r++)
            assert_int_equal(touch(c, 1, 0), PC_HIT);
        for (uint64_t i = 100; i < 130; i++)
            touch(c, i, 0);
        assert_int_equal(has(c, 1), reads == 2);
        pc_destroy(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_rejects_bad_config),
        cmocka_unit_test(test_accessors_and_default_policy),
        cmocka_unit_test(test_memory_is_capacity_plus_stated_overhead),
        cmocka_unit_test(test_create_allocation_failures),
        cmocka_unit_test(test_page_buffer_allocation_failure),
        cmocka_unit_test(test_fill_then_hit),
        cmocka_unit_test(test_fetch_rejects_bad_arguments),
        cmocka_unit_test(test_fill_complete_checks),
        cmocka_unit_test(test_failed_fill_is_retried),
        cmocka_unit_test(test_release_without_complete_abandons_fill),
        cmocka_unit_test(test_pinned_page_is_never_evicted),
        cmocka_unit_test(test_all_pinned_reads_uncached),
        cmocka_unit_test(test_filling_pages_count_as_pinned),
        cmocka_unit_test(test_lru_eviction_order),
        cmocka_unit_test(test_s3fifo_eviction_order),
        cmocka_unit_test(test_s3fifo_main_is_clock),
        cmocka_unit_test(test_lru_once_hint_protects_hot_pages),
        cmocka_unit_test(test_s3fifo_once_hits_do_not_promote),
        cmocka_unit_test(test_readahead),
        cmocka_unit_test(test_s3fifo_readahead_first_use_is_not_reuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
