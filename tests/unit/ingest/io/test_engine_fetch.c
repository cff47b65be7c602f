/* SPDX-License-Identifier: Apache-2.0
 *
 * test_engine_fetch.c: the prefetcher (eng_fetch.h) with fake jobs: every
 * unit reaches its worker exactly once, either fetched ahead or left to the
 * worker, with the bytes of its own job; the bytes held never pass the budget
 * nor the window; jobs spanning several units are shared and freed once; the
 * query's memory returns to zero; stopping early (LIMIT, an error) frees all
 * that no worker took; a memory limit makes it fetch nothing rather than fail.
 * Several worker threads at once (label `threads`, run under TSan).
 */
#include "eng_fetch.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#define UNITS 200

typedef struct fake {
    int span_every; /* units u % span_every == 0 start a job of span_every units */
    uint64_t unit_bytes;
    _Atomic int fetches[UNITS]; /* jobs fetched starting at u */
    _Atomic int covered[UNITS]; /* units covered by a fetched job */
    _Atomic int64_t held, max_held;
    _Atomic int failed; /* 1: every fetch fails */
    eng_mem *mem;
} fake;

static int64_t f_size(void *arg, int u, bool allow_span, int *span)
{
    fake *f = arg;
    *span = 1;
    if (allow_span && f->span_every > 1 && u % f->span_every == 0) {
        *span = f->span_every;
        return (int64_t)(f->unit_bytes * (uint64_t)f->span_every);
    }
    return (int64_t)f->unit_bytes;
}

static void f_fetch(void *arg, ef *p, int u, int span, ef_blob *b)
{
    fake *f = arg;
    atomic_fetch_add(&f->fetches[u], 1);
    for (int k = 0; k < span; k++)
        atomic_fetch_add(&f->covered[u + k], 1);
    if (atomic_load(&f->failed)) {
        b->rc = -EIO;
        return;
    }
    uint64_t n = f->unit_bytes * (uint64_t)span;
    b->buf = ef_buf_get(p, n, &b->cap);
    assert_non_null(b->buf);
    b->bytes = n;
    b->whole = true;
    /* every byte says which job it is */
    memset(b->buf, u & 0xff, (size_t)n);
    int64_t h = atomic_fetch_add(&f->held, (int64_t)n) + (int64_t)n;
    int64_t m = atomic_load(&f->max_held);
    while (h > m && !atomic_compare_exchange_weak(&f->max_held, &m, h))
        ;
    usleep(200); /* a request's latency */
}

typedef struct wctx {
    ef *p;
    fake *f;
    _Atomic int *next;
    int stop_at;      /* stop the prefetcher when a worker reaches it (-1: never) */
    _Atomic int *got; /* per unit: 1 taken from a blob, 2 fetched itself */
} wctx;

static void *worker(void *arg)
{
    wctx *w = arg;
    for (;;) {
        int u = atomic_fetch_add(w->next, 1);
        if (u >= UNITS || (w->stop_at >= 0 && u >= w->stop_at)) {
            ef_stop(w->p);
            break;
        }
        ef_blob *b = NULL;
        int r = ef_take(w->p, u, &b);
        if (r == 1) {
            assert_non_null(b);
            if (b->rc == 0) {
                /* the blob of the job that covers u: its first unit's byte */
                int first = u - (w->f->span_every > 1 ? u % w->f->span_every : 0);
                if (b->bytes == w->f->unit_bytes)
                    first = u;
                assert_int_equal(b->buf[0], first & 0xff);
                assert_int_equal(b->buf[b->bytes - 1], first & 0xff);
            }
            atomic_fetch_add(&w->got[u], 1);
            ef_release(w->p, &b);
            assert_null(b);
        } else {
            assert_null(b);
            atomic_fetch_add(&w->got[u], 2);
        }
        usleep(100); /* decoding */
    }
    return NULL;
}

/* Runs `threads` workers over UNITS units; returns per-unit outcomes. */
static void run(fake *f, eng_mem *mem, int dl_threads, int window, uint64_t budget, int threads,
                int stop_at, _Atomic int *got)
{
    ef *p = NULL;
    static const ef_ops ops = {f_size, f_fetch};
    assert_int_equal(ef_create(&p, &ops, f, UNITS, dl_threads, window, budget, mem), 0);
    assert_non_null(p);
    /* before any worker runs, the downloads start at unit 0: wait for that
     * job, so unit 0 is certainly taken from it (no timing assumed) */
    for (;;) {
        uint64_t j, h, pk;
        ef_stats(p, &j, &h, &pk);
        if (j >= 1)
            break;
        usleep(1000);
    }
    _Atomic int next = 0;
    pthread_t th[8];
    wctx w = {p, f, &next, stop_at, got};
    for (int i = 0; i < threads; i++)
        assert_int_equal(pthread_create(&th[i], NULL, worker, &w), 0);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    uint64_t jobs, hits, peak;
    ef_stats(p, &jobs, &hits, &peak);
    fprintf(stderr,
            "  %d download threads, window %d, budget %llu: %llu jobs, %llu units taken "
            "from them, peak held %llu\n",
            dl_threads, window, (unsigned long long)budget, (unsigned long long)jobs,
            (unsigned long long)hits, (unsigned long long)peak);
    assert_true(peak <= budget ||
                peak <= f->unit_bytes * (uint64_t)(f->span_every ? f->span_every : 1));
    ef_destroy(&p);
    assert_null(p);
    assert_int_equal(atomic_load(&mem->cur), 0); /* every blob uncharged */
}

static void test_every_unit_once(void **state)
{
    (void)state;
    for (int span = 1; span <= 4; span += 3)
        for (int threads = 1; threads <= 4; threads *= 2) {
            fake *f = calloc(1, sizeof(*f));
            eng_mem mem = {0};
            f->unit_bytes = 10000;
            f->span_every = span;
            _Atomic int got[UNITS] = {0};
            run(f, &mem, 4, 4, 10 * 10000, threads, -1, got);
            int ahead = 0;
            for (int u = 0; u < UNITS; u++) {
                assert_true(got[u] == 1 || got[u] == 2);       /* exactly one way */
                assert_true(atomic_load(&f->covered[u]) <= 1); /* never fetched twice */
                if (got[u] == 1)
                    assert_int_equal(atomic_load(&f->covered[u]), 1);
                ahead += got[u] == 1;
            }
            assert_int_equal(got[0], 1);
            fprintf(stderr, "  span %d, %d workers: %d of %d units fetched ahead\n", span, threads,
                    ahead, UNITS);
            free(f);
        }
}

static void test_window_and_budget_bound_what_is_held(void **state)
{
    (void)state;
    fake *f = calloc(1, sizeof(*f));
    eng_mem mem = {0};
    f->unit_bytes = 50000;
    _Atomic int got[UNITS] = {0};
    /* budget of 3 units, window 8: the budget binds */
    run(f, &mem, 8, 8, 3 * 50000, 2, -1, got);
    assert_true(atomic_load(&mem.peak) <= 3 * 50000);
    free(f);
}

static void test_stop_early_frees_everything(void **state)
{
    (void)state;
    fake *f = calloc(1, sizeof(*f));
    eng_mem mem = {0};
    f->unit_bytes = 20000;
    f->span_every = 4;
    _Atomic int got[UNITS] = {0};
    run(f, &mem, 4, 6, 1 << 20, 2, 37, got); /* LIMIT met at unit 37 */
    int fetched_after = 0;
    for (int u = 37; u < UNITS; u++)
        fetched_after += atomic_load(&f->covered[u]);
    /* a few units past the stop may have been fetched ahead, never the rest */
    assert_true(fetched_after <= 6 + 4 + 4);
    free(f);
}

static void test_failed_fetches_fall_back_to_the_worker(void **state)
{
    (void)state;
    fake *f = calloc(1, sizeof(*f));
    eng_mem mem = {0};
    f->unit_bytes = 1000;
    atomic_store(&f->failed, 1);
    _Atomic int got[UNITS] = {0};
    run(f, &mem, 3, 4, 1 << 20, 2, -1, got);
    /* a failed job still hands its unit over once (rc says to fetch it again) */
    for (int u = 0; u < UNITS; u++)
        assert_true(got[u] == 1 || got[u] == 2);
    free(f);
}

static void test_memory_limit_means_no_read_ahead(void **state)
{
    (void)state;
    fake *f = calloc(1, sizeof(*f));
    eng_mem mem = {0};
    mem.limit = 100000;
    atomic_store(&mem.cur, 60000); /* the workers hold more than half the limit */
    f->unit_bytes = 1000;
    _Atomic int got[UNITS] = {0};
    ef *p = NULL;
    static const ef_ops ops = {f_size, f_fetch};
    assert_int_equal(ef_create(&p, &ops, f, UNITS, 2, 4, 1 << 20, &mem), 0);
    _Atomic int next = 0;
    pthread_t th;
    wctx w = {p, f, &next, -1, got};
    assert_int_equal(pthread_create(&th, NULL, worker, &w), 0);
    pthread_join(th, NULL);
    ef_destroy(&p);
    for (int u = 0; u < UNITS; u++)
        assert_int_equal(got[u], 2);
    assert_int_equal(atomic_load(&mem.cur), 60000);
    assert_int_equal(atomic_load(&mem.failed_at), 0); /* not a failure of the query */
    free(f);
}

static void test_no_threads_no_prefetcher(void **state)
{
    (void)state;
    ef *p = (ef *)1;
    static const ef_ops ops = {f_size, f_fetch};
    assert_int_equal(ef_create(&p, &ops, NULL, 10, 0, 4, 1000, NULL), 0);
    assert_null(p);
    ef_blob *b = (ef_blob *)1;
    assert_int_equal(ef_take(NULL, 0, &b), 0);
    assert_null(b);
    ef_stop(NULL);
    ef_destroy(&p);
}

/* A shelf keeps a prefetcher's buffers for the next one, within its bound. */
static void test_shelf_keeps_buffers_between_prefetchers(void **state)
{
    (void)state;
    ef_shelf *shelf = NULL;
    assert_int_equal(ef_shelf_create(&shelf, 3u << 20), 0);
    static const ef_ops ops = {f_size, f_fetch};
    fake *f = calloc(1, sizeof(*f));
    f->unit_bytes = 1000;
    ef *p = NULL;
    assert_int_equal(ef_create_shelved(&p, &ops, f, 4, 1, 1, 8u << 20, NULL, shelf), 0);
    ef_stop(p);
    uint64_t c1 = 0, c2 = 0, c3 = 0;
    uint8_t *b1 = ef_buf_get(p, 1u << 20, &c1);
    uint8_t *b2 = ef_buf_get(p, 1u << 20, &c2);
    uint8_t *b3 = ef_buf_get(p, 2u << 20, &c3);
    assert_non_null(b1);
    assert_non_null(b2);
    assert_non_null(b3);
    memset(b1, 1, c1);
    ef_buf_put(p, b1, c1);
    ef_buf_put(p, b2, c2);
    ef_buf_put(p, b3, c3);
    assert_int_equal(ef_shelf_bytes(shelf), 0); /* in the prefetcher's own pool */
    ef_destroy(&p);
    /* 1 + 1 MiB fit the 3 MiB bound; the 2 MiB one is unmapped */
    assert_true(ef_shelf_bytes(shelf) >= (2u << 20) && ef_shelf_bytes(shelf) <= (3u << 20));
    uint64_t held = ef_shelf_bytes(shelf);
    assert_int_equal(ef_create_shelved(&p, &ops, f, 4, 1, 1, 8u << 20, NULL, shelf), 0);
    ef_stop(p);
    uint64_t c4 = 0;
    /* (a download may have fetched a unit before the stop: 64 KiB buffers) */
    uint8_t *b4 = ef_buf_get(p, 512u << 10, &c4);
    assert_true(b4 == b1 || b4 == b2); /* a kept buffer, not a new mapping */
    assert_true(c4 == (1u << 20));
    assert_true(ef_shelf_bytes(shelf) <= held - c4);
    ef_buf_put(p, b4, c4);
    ef_destroy(&p);
    assert_true(ef_shelf_bytes(shelf) >= held && ef_shelf_bytes(shelf) <= (3u << 20));
    ef_shelf_destroy(&shelf);
    assert_null(shelf);
    free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_unit_once),
        cmocka_unit_test(test_window_and_budget_bound_what_is_held),
        cmocka_unit_test(test_stop_early_frees_everything),
        cmocka_unit_test(test_failed_fetches_fall_back_to_the_worker),
        cmocka_unit_test(test_memory_limit_means_no_read_ahead),
        cmocka_unit_test(test_no_threads_no_prefetcher),
        cmocka_unit_test(test_shelf_keeps_buffers_between_prefetchers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
