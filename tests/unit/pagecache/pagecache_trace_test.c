/* SPDX-License-Identifier: Apache-2.0
 *
 * Trace-driven tests of scan resistance (what the default policy promises): a hot set of
 * 25% of the capacity, read repeatedly while a one-shot scan of 10x the
 * capacity runs, keeps >= 90% hits with the default policy, with no hint from
 * the caller. LRU's figure on the same trace is printed beside it (and must
 * be low, or the trace would not be testing anything). The hit ratio is a
 * property of the policy on a fixed trace: no timing involved.
 */
#include "pagecache.h"
#include "pc_support.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

static double run(const struct pc_trace_config *cfg)
{
    struct pc_trace_result res;
    assert_int_equal(pc_trace_hot_under_scan(cfg, &res), 0);
    assert_true(res.hot_reads > 0);
    /* The scan really was 10x the capacity, one-shot. */
    assert_int_equal(res.scan_reads, (uint64_t)(cfg->scan_multiple * (double)cfg->capacity_pages));
    assert_int_equal(res.stats.pages_pinned, 0);
    return res.hot_hit_ratio;
}

static void test_default_policy_keeps_hot_set_under_scan(void **state)
{
    (void)state;
    struct pc_trace_config cfg;
    pc_trace_default(&cfg, PC_POLICY_DEFAULT);
    double def = run(&cfg);
    pc_trace_default(&cfg, PC_POLICY_LRU);
    double lru = run(&cfg);
    print_message("hot_hits_under_scan=%.4f lru_hot_hits_under_scan=%.4f "
                  "(hot 25%% of 4096 pages, scan 10x, 4 scan reads per hot read, no hints)\n",
                  def, lru);
    assert_true(def >= 0.90);
    assert_true(lru < 0.80);
}

/* The figure holds across seeds, shard counts and scan intensities. */
static void test_s3fifo_scan_resistance_is_robust(void **state)
{
    (void)state;
    const unsigned shards[] = {1, 4, 0, 64};
    const unsigned per_hot[] = {1, 4, 16};
    for (size_t si = 0; si < sizeof(shards) / sizeof(shards[0]); si++) {
        for (size_t pi = 0; pi < sizeof(per_hot) / sizeof(per_hot[0]); pi++) {
            struct pc_trace_config cfg;
            pc_trace_default(&cfg, PC_POLICY_S3FIFO);
            cfg.capacity_pages = 2048;
            cfg.shards = shards[si];
            cfg.scan_per_hot = per_hot[pi];
            cfg.seed = 1000 + si * 10 + pi;
            double h = run(&cfg);
            print_message("s3fifo shards=%u scan_per_hot=%u hot_hits=%.4f\n", shards[si],
                          per_hot[pi], h);
            assert_true(h >= 0.90);
        }
    }
}

/* LRU keeps the hot set too when the caller marks the scan one-shot. */
static void test_lru_keeps_hot_set_when_scan_is_marked(void **state)
{
    (void)state;
    struct pc_trace_config cfg;
    pc_trace_default(&cfg, PC_POLICY_LRU);
    cfg.scan_flags = PC_FETCH_ONCE;
    double h = run(&cfg);
    print_message("lru with PC_FETCH_ONCE scan: hot_hits=%.4f\n", h);
    assert_true(h >= 0.90);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_policy_keeps_hot_set_under_scan),
        cmocka_unit_test(test_s3fifo_scan_resistance_is_robust),
        cmocka_unit_test(test_lru_keeps_hot_set_when_scan_is_marked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
