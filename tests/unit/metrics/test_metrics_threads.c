/* SPDX-License-Identifier: Apache-2.0
 *
 * test_metrics_threads.c: the metrics registry (cached/metrics.h) under
 * concurrency, for TSan (ctest label `threads`): worker threads count into
 * their own slots and all of them into the shared slot, while a reader renders
 * and checks that sums never go backwards. At the end every sum is exact.
 */
#include "metrics.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define WORKERS 4
#define ROUNDS  200000

typedef struct ctx {
    met_registry *r;
    unsigned thread;
    atomic_int *running;
} ctx;

static void *worker(void *arg)
{
    ctx *c = arg;
    unsigned shared = met_shared_slot(c->r);
    for (uint64_t i = 0; i < ROUNDS; i++) {
        met_add(c->r, c->thread, 0, 1);
        met_add(c->r, shared, 1, 2);
        met_observe_us(c->r, c->thread, 2, i % 3 == 0 ? 40 : 2000000);
        met_gauge_add(c->r, 3, 1);
        met_gauge_add(c->r, 3, -1);
    }
    atomic_fetch_sub(c->running, 1);
    return NULL;
}

static uint64_t field(const char *text, const char *name)
{
    const char *p = strstr(text, name);
    assert_non_null(p);
    return strtoull(p + strlen(name), NULL, 10);
}

static void test_concurrent_counting(void **state)
{
    (void)state;
    met_registry *r;
    assert_int_equal(met_create(&r, WORKERS), 0);
    static const met_def d[] = {
        {"own_total", "per-thread slot", MET_COUNTER, NULL},
        {"shared_total", "shared slot", MET_COUNTER, NULL},
        {"lat_seconds", "latency", MET_HISTOGRAM, NULL},
        {"depth", "in flight", MET_GAUGE, NULL},
    };
    assert_int_equal(met_register(r, d, 4), 0);

    atomic_int running = WORKERS;
    pthread_t th[WORKERS];
    ctx c[WORKERS];
    for (unsigned i = 0; i < WORKERS; i++) {
        c[i] = (ctx){r, i, &running};
        assert_int_equal(pthread_create(&th[i], NULL, worker, &c[i]), 0);
    }
    /* read while they count: monotonic, and the histogram stays consistent */
    uint64_t last_own = 0, last_shared = 0;
    int renders = 0;
    while (atomic_load(&running) > 0 || renders < 3) {
        char *text;
        size_t len;
        assert_int_equal(met_render(r, &text, &len), 0);
        uint64_t own = field(text, "\nown_total ");
        uint64_t shared = field(text, "\nshared_total ");
        assert_true(own >= last_own);
        assert_true(shared >= last_shared);
        assert_true(own <= (uint64_t)WORKERS * ROUNDS);
        uint64_t inf = field(text, "lat_seconds_bucket{le=\"+Inf\"} ");
        uint64_t count = field(text, "\nlat_seconds_count ");
        assert_int_equal(inf, count);
        last_own = own;
        last_shared = shared;
        free(text);
        renders++;
    }
    for (unsigned i = 0; i < WORKERS; i++)
        pthread_join(th[i], NULL);

    assert_int_equal(met_get(r, 0), (uint64_t)WORKERS * ROUNDS);
    assert_int_equal(met_get(r, 1), 2ull * WORKERS * ROUNDS);
    assert_int_equal(met_get(r, 2), (uint64_t)WORKERS * ROUNDS);
    assert_int_equal(met_get(r, 3), 0);
    uint64_t sum, cum[MET_HIST_BUCKETS + 1];
    assert_int_equal(met_get_histogram(r, 2, &sum, cum), 0);
    uint64_t fast = (ROUNDS + 2) / 3; /* i % 3 == 0 for i in [0, ROUNDS) */
    assert_int_equal(cum[0], WORKERS * fast);
    assert_int_equal(cum[MET_HIST_BUCKETS], (uint64_t)WORKERS * ROUNDS);
    assert_int_equal(sum, WORKERS * (fast * 40 + (ROUNDS - fast) * 2000000ull));
    met_destroy(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_counting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
