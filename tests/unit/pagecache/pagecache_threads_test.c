/* SPDX-License-Identifier: Apache-2.0
 *
 * Multi-threaded tests of the page cache (ctest labels unit and threads, so
 * CI also runs them under TSan): one fill however many threads ask, a failed
 * fill waking every waiter with its error, and many threads hammering a small
 * cache while the bytes it holds stay within capacity plus the stated
 * overhead and every hit carries its own key's bytes.
 *
 * cmocka's assertions must run on the main thread, so worker threads record
 * what they saw and the main thread asserts it.
 */
#include "pagecache.h"
#include "pc_support.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

enum { NWAITERS = 8 };

static const pc_policy policies[] = {PC_POLICY_LRU, PC_POLICY_S3FIFO};

/* ---- single fill, many waiters ------------------------------------------- */

struct waiter {
    pthread_t tid;
    pc_cache *cache;
    pc_key key;
    int rc;
    pc_page *page; /* what pc_fetch() handed out */
    bool data_ok;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    pc_page *p = NULL;
    w->rc = pc_fetch(w->cache, &w->key, 0, &p);
    w->page = p;
    if (w->rc == PC_HIT)
        w->data_ok = pc_page_len(p) == pc_page_size(w->cache) &&
                     pc_pattern_check(pc_page_data(p), pc_page_len(p), &w->key);
    pc_release(w->cache, &p);
    return NULL;
}

/* Waits (without a clock) until n fetches have gone to sleep on a fill. A
 * broken cache that never lets them sleep trips the iteration guard. */
static void wait_for_sleepers(pc_cache *c, uint64_t n)
{
    pc_stats st;
    for (unsigned long spins = 0;; spins++) {
        pc_stats_get(c, &st);
        if (st.waits >= n || st.hits > 0 || st.misses > 1)
            break;
        assert_true(spins < 200000000ul);
        sched_yield();
    }
    assert_int_equal(st.waits, n);
}

/* The filler completes with `result` (or, with abandon, releases the page
 * without completing it); NWAITERS threads asked meanwhile. */
static void run_fill_with_waiters(pc_policy policy, ssize_t result, bool abandon, struct waiter *w)
{
    pc_cache *c = NULL;
    pc_config cfg = {.capacity_bytes = 16 * 4096, .page_size = 4096, .policy = policy};
    assert_int_equal(pc_create(&c, &cfg), 0);
    pc_key key = {0x1234, 0x5678};
    pc_page *p = NULL;
    assert_int_equal(pc_fetch(c, &key, 0, &p), PC_FILL);

    for (int i = 0; i < NWAITERS; i++) {
        w[i] = (struct waiter){.cache = c, .key = key, .rc = 1000};
        assert_int_equal(pthread_create(&w[i].tid, NULL, waiter_main, &w[i]), 0);
    }
    wait_for_sleepers(c, NWAITERS);
    /* Nobody got through while the page was being filled. */
    for (int i = 0; i < NWAITERS; i++)
        assert_int_equal(__atomic_load_n(&w[i].rc, __ATOMIC_ACQUIRE), 1000);

    if (result >= 0)
        pc_pattern_fill(pc_page_data(p), (size_t)result, &key);
    if (!abandon)
        assert_int_equal(pc_fill_complete(c, p, result), 0);
    pc_page *filled = p;
    pc_release(c, &p);
    for (int i = 0; i < NWAITERS; i++)
        assert_int_equal(pthread_join(w[i].tid, NULL), 0);

    pc_stats st;
    pc_stats_get(c, &st);
    assert_int_equal(st.misses, 1);
    assert_int_equal(st.fills, 1);
    assert_int_equal(st.waits, NWAITERS);
    assert_int_equal(st.hits, 0);
    assert_int_equal(st.pages_pinned, 0);
    for (int i = 0; i < NWAITERS; i++)
        assert_true(w[i].page == NULL || w[i].page == filled);

    if (result < 0) {
        assert_int_equal(st.fill_errors, 1);
        assert_int_equal(st.pages_cached, 0);
        assert_false(pc_contains(c, &key));
        /* Nothing sticky: the next reader fills again. */
        assert_int_equal(pc_fetch(c, &key, 0, &p), PC_FILL);
        assert_int_equal(pc_fill_complete(c, p, 0), 0);
        pc_release(c, &p);
    } else {
        assert_int_equal(st.pages_cached, 1);
    }
    pc_destroy(&c);
}

static void test_single_fill_many_waiters(void **state)
{
    (void)state;
    for (size_t pi = 0; pi < 2; pi++) {
        struct waiter w[NWAITERS];
        run_fill_with_waiters(policies[pi], 4096, false, w);
        for (int i = 0; i < NWAITERS; i++) {
            assert_int_equal(w[i].rc, PC_HIT);
            assert_true(w[i].data_ok);
        }
    }
}

static void test_failed_fill_wakes_all_with_error(void **state)
{
    (void)state;
    for (size_t pi = 0; pi < 2; pi++) {
        struct waiter w[NWAITERS];
        run_fill_with_waiters(policies[pi], -ETIMEDOUT, false, w);
        for (int i = 0; i < NWAITERS; i++) {
            assert_int_equal(w[i].rc, -ETIMEDOUT);
            assert_null(w[i].page);
        }
    }
}

/* A filler that gives up without completing (releases the page) wakes every
 * waiter with -ECANCELED, and the next reader fills again. */
static void test_abandoned_fill_wakes_all_with_ecanceled(void **state)
{
    (void)state;
    for (size_t pi = 0; pi < 2; pi++) {
        struct waiter w[NWAITERS];
        run_fill_with_waiters(policies[pi], -ECANCELED, true, w);
        for (int i = 0; i < NWAITERS; i++) {
            assert_int_equal(w[i].rc, -ECANCELED);
            assert_null(w[i].page);
        }
    }
}

/* ---- capacity under many threads ----------------------------------------- */

enum {
    NTHREADS = 8,
    OPS = 6000,
    PAGE = 512,
    CAP_PAGES = 32,
    SHARDS = 4,
    KEYS = 4 * CAP_PAGES,
    MAX_HELD = 4,
};

struct hammer {
    pthread_t tid;
    pc_cache *cache;
    struct pc_counting_alloc *alloc;
    size_t capacity;
    size_t overhead;
    uint64_t seed;
    /* what this thread saw */
    bool burst_uncached;
    uint64_t demand, readahead, bad_data, over_cap, unexpected;
    uint64_t hit, fill, uncached, waited_error, eagain;
};

static pc_key hkey(uint64_t i)
{
    return (pc_key){.hi = i * 0x9E3779B97F4A7C15ull, .lo = i};
}

static void hammer_check_memory(struct hammer *h)
{
    pc_stats st;
    pc_stats_get(h->cache, &st);
    if (st.bytes_resident > h->capacity || atomic_load(&h->alloc->live) > h->capacity + h->overhead)
        h->over_cap++;
}

/* Pins distinct keys until the cache answers PC_UNCACHED, then lets them
 * all go. With CAP_PAGES slots, at most CAP_PAGES pins can succeed before
 * some key's shard is all pinned, so a cache that evicted a pinned page, or
 * waited instead of answering PC_UNCACHED, fails here whatever the timing. */
static void hammer_burst(struct hammer *h, uint64_t first)
{
    pc_page *pinned[KEYS];
    pc_key keys[KEYS];
    size_t n = 0;
    for (uint64_t j = 0; j < KEYS && !h->burst_uncached; j++) {
        pc_key k = hkey((first + j) % KEYS);
        pc_page *p = NULL;
        int rc = pc_fetch(h->cache, &k, 0, &p);
        h->demand++;
        if (rc == PC_FILL) {
            h->fill++;
            pc_pattern_fill(pc_page_data(p), PAGE, &k);
            if (pc_fill_complete(h->cache, p, PAGE) != 0)
                h->unexpected++;
        } else if (rc == PC_HIT) {
            h->hit++;
        } else if (rc == PC_UNCACHED) {
            h->uncached++;
            h->burst_uncached = true;
        } else if (rc == -EIO) {
            h->waited_error++;
        } else {
            h->unexpected++;
        }
        if (p) {
            pinned[n] = p;
            keys[n++] = k;
        }
    }
    if (n > CAP_PAGES)
        h->unexpected++; /* more pages pinned than the cache holds */
    for (size_t i = 0; i < n; i++) {
        if (!pc_pattern_check(pc_page_data(pinned[i]), PAGE, &keys[i]))
            h->bad_data++;
        pc_release(h->cache, &pinned[i]);
    }
}

static void *hammer_main(void *arg)
{
    struct hammer *h = arg;
    pc_page *held[MAX_HELD] = {NULL};
    pc_key held_key[MAX_HELD];
    uint64_t rng = h->seed;
    for (int op = 0; op < OPS; op++) {
        uint64_t r = pc_rand_next(&rng);
        if (op == OPS / 2)
            hammer_burst(h, r % KEYS);
        /* Half the reads go to a hot eighth of the keys. */
        uint64_t ki = (r & 1) ? (r >> 8) % (KEYS / 8) : (r >> 8) % KEYS;
        pc_key k = hkey(ki);
        unsigned flags = 0;
        switch ((r >> 40) % 8) {
        case 0: flags = PC_FETCH_ONCE; break;
        case 1: flags = PC_FETCH_READAHEAD; break;
        case 2: flags = PC_FETCH_NOWAIT; break;
        default: break;
        }
        pc_page *p = NULL;
        int rc = pc_fetch(h->cache, &k, flags, &p);
        if (flags & PC_FETCH_READAHEAD)
            h->readahead++;
        else
            h->demand++;
        if (rc == PC_FILL) {
            h->fill++;
            /* One fill in 16 fails, so waiters see errors too. */
            if (((r >> 50) & 15) == 0) {
                pc_fill_complete(h->cache, p, -EIO);
                pc_release(h->cache, &p);
                continue;
            }
            pc_pattern_fill(pc_page_data(p), PAGE, &k);
            if (pc_fill_complete(h->cache, p, PAGE) != 0)
                h->unexpected++;
        } else if (rc == PC_HIT) {
            h->hit++;
            if (pc_page_len(p) != PAGE || !pc_pattern_check(pc_page_data(p), PAGE, &k))
                h->bad_data++;
        } else if (rc == PC_UNCACHED) {
            h->uncached++;
        } else if (rc == -EIO) {
            h->waited_error++;
        } else if (rc == -EAGAIN && (flags & PC_FETCH_NOWAIT)) {
            h->eagain++;
        } else if (!((rc == -EEXIST || rc == -ENOSPC) && (flags & PC_FETCH_READAHEAD))) {
            h->unexpected++;
        }
        if (!p)
            continue;
        /* Keep some pages pinned for a while, to run the cache out of
         * evictable pages now and then. */
        unsigned slot = (unsigned)((r >> 56) % (MAX_HELD * 2));
        if (slot < MAX_HELD) {
            if (held[slot]) {
                if (!pc_pattern_check(pc_page_data(held[slot]), PAGE, &held_key[slot]))
                    h->bad_data++;
                pc_release(h->cache, &held[slot]);
            }
            held[slot] = p;
            held_key[slot] = k;
        } else {
            pc_release(h->cache, &p);
        }
        if (op % 64 == 0)
            hammer_check_memory(h);
    }
    for (unsigned i = 0; i < MAX_HELD; i++) {
        if (held[i] && !pc_pattern_check(pc_page_data(held[i]), PAGE, &held_key[i]))
            h->bad_data++;
        pc_release(h->cache, &held[i]);
    }
    hammer_check_memory(h);
    return NULL;
}

static void test_capacity_under_many_threads(void **state)
{
    (void)state;
    for (size_t pi = 0; pi < 2; pi++) {
        struct pc_counting_alloc a;
        pc_counting_init(&a);
        size_t cap = CAP_PAGES * PAGE;
        pc_config cfg = {.capacity_bytes = cap,
                         .page_size = PAGE,
                         .shards = SHARDS,
                         .policy = policies[pi],
                         .alloc_fn = pc_counting_alloc,
                         .free_fn = pc_counting_free,
                         .alloc_ctx = &a};
        pc_cache *c = NULL;
        assert_int_equal(pc_create(&c, &cfg), 0);
        size_t ov = pc_overhead_bytes(c);

        struct hammer h[NTHREADS];
        for (int i = 0; i < NTHREADS; i++) {
            h[i] = (struct hammer){.cache = c,
                                   .alloc = &a,
                                   .capacity = cap,
                                   .overhead = ov,
                                   .seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1 + pi * 100)};
            assert_int_equal(pthread_create(&h[i].tid, NULL, hammer_main, &h[i]), 0);
        }
        struct hammer sum = {0};
        for (int i = 0; i < NTHREADS; i++) {
            assert_int_equal(pthread_join(h[i].tid, NULL), 0);
            assert_true(h[i].burst_uncached);
            sum.demand += h[i].demand;
            sum.readahead += h[i].readahead;
            sum.bad_data += h[i].bad_data;
            sum.over_cap += h[i].over_cap;
            sum.unexpected += h[i].unexpected;
            sum.hit += h[i].hit;
            sum.fill += h[i].fill;
            sum.uncached += h[i].uncached;
            sum.waited_error += h[i].waited_error;
            sum.eagain += h[i].eagain;
        }
        assert_int_equal(sum.bad_data, 0);
        assert_int_equal(sum.over_cap, 0);
        assert_int_equal(sum.unexpected, 0);
        assert_true(atomic_load(&a.peak) <= cap + ov);

        pc_stats st;
        pc_stats_get(c, &st);
        print_message("%s: hits %llu misses %llu waits %llu uncached %llu fill_errors %llu "
                      "evictions %llu peak %zu <= %zu + %zu\n",
                      pc_policy_name(policies[pi]), (unsigned long long)st.hits,
                      (unsigned long long)st.misses, (unsigned long long)st.waits,
                      (unsigned long long)st.uncached, (unsigned long long)st.fill_errors,
                      (unsigned long long)st.evictions, atomic_load(&a.peak), cap, ov);
        assert_int_equal(st.pages_pinned, 0);
        /* Keys spread over every shard: each slot got a buffer, no more. */
        assert_int_equal(st.bytes_resident, cap);
        /* The counters add up to what the threads saw. */
        assert_int_equal(st.fills, sum.fill);
        assert_int_equal(st.uncached, sum.uncached);
        assert_int_equal(st.hits + st.misses + st.waits, sum.demand - sum.eagain);
        assert_int_equal(st.fills, st.misses - st.uncached + st.readahead_fills);
        /* Four times the capacity in keys: pages were evicted. */
        assert_true(st.evictions > 0);
        pc_destroy(&c);
        assert_int_equal(atomic_load(&a.live), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_fill_many_waiters),
        cmocka_unit_test(test_failed_fill_wakes_all_with_error),
        cmocka_unit_test(test_abandoned_fill_wakes_all_with_ecanceled),
        cmocka_unit_test(test_capacity_under_many_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
