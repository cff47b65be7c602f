/* SPDX-License-Identifier: Apache-2.0
 *
 * test_client_hedge.c: libringcache with a cache node that stops answering
 * (SIGSTOP), against three real ringcached nodes and a real S3 behind the S3
 * model:
 *  - one node stopped in the middle of a read of many warm blocks: the read
 *    completes with the right bytes because the requests to it were hedged
 *    to the next owner (hedges and hedge wins counted, not time), the node is
 *    named once to node_warn, small scattered reads meanwhile are right too;
 *    after SIGCONT the node serves again and every node exits cleanly;
 *  - a node stopped before the client is made: its HELLO and the PING of the
 *    connect wait in the queue until the request timeout, which must unlink
 *    them (not free them in the queue), while reads go around it;
 *  - a slow S3 (1.5 s per request at the model) is no stopped node: a cold
 *    read with a 300 ms hedge delay hedges nothing (the node answers its
 *    PING), and S3 sees one GET per block.
 * The tests share the cluster and run in this order.
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
#include <time.h>
#include <cmocka.h>

static t_cluster tc;

static int setup(void **state)
{
    (void)state;
    t_cluster_start(&tc, "test_client_hedge", NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < T_NODES; i++)
        if (tc.nodes[i].proc)
            h_proc_kill(tc.nodes[i].proc, SIGCONT); /* a failed test may leave one stopped */
    t_cluster_stop(&tc); /* every node, the once-stopped ones too, exits 0 */
    return 0;
}

typedef struct {
    int calls;
    char last[1200];
} warn_count;

static void count_warn(const char *sentence, void *arg)
{
    warn_count *w = arg; /* read by the test after rc_destroy */
    w->calls++;
    snprintf(w->last, sizeof(w->last), "%s", sentence);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A new client from cfg with a handle on key. */
static rc_handle *open_new(const rc_config *cfg, const char *key, rc_client **c)
{
    char err[RC_ERR_MAX];
    rc_handle *h = NULL;
    assert_int_equal(rc_create(c, cfg, err, sizeof(err)), 0);
    assert_int_equal(rc_open(*c, H_S3_DEFAULT_BUCKET, key, &h, err, sizeof(err)), 0);
    return h;
}

static void read_all(rc_handle *h, unsigned char *buf, size_t size)
{
    const size_t step = 1u << 20;
    for (size_t off = 0; off < size; off += step) {
        size_t n = size - off < step ? size - off : step;
        int64_t got = rc_pread(h, buf + off, n, off);
        if (got != (int64_t)n) {
            char err[RC_ERR_MAX];
            rc_last_error(h, err, sizeof(err));
            fprintf(stderr, "pread at %zu: %lld: %s\n", off, (long long)got, err);
        }
        assert_int_equal(got, n);
    }
}

static void test_sigstop_mid_read(void **state)
{
    (void)state;
    size_t size = t_size_mib(64, 16) + 333;
    unsigned char *data = t_alloc_data(size, 91);
    t_put_direct(&tc, "hedge/a.bin", data, size, NULL);
    unsigned char *buf = malloc(size);
    rc_config cfg;
    t_rc_config(&tc, &cfg);
    rc_client *c;
    rc_handle *h = open_new(&cfg, "hedge/a.bin", &c); /* warm the nodes */
    read_all(h, buf, size);
    rc_close(&h);
    rc_destroy(&c);

    /* a new client, empty page cache; node 1 stops under it */
    warn_count w = {0};
    cfg.node_warn = count_warn;
    cfg.node_warn_arg = &w;
    h = open_new(&cfg, "hedge/a.bin", &c);
    assert_int_equal(h_proc_kill(tc.nodes[1].proc, SIGSTOP), 0);
    memset(buf, 0, size);
    read_all(h, buf, size);
    assert_memory_equal(buf, data, size);
    t_scattered_reads(h, data, size, 50, 7);
    rc_stats st;
    rc_stats_get(c, &st);
    fprintf(stderr, "hedges %llu, hedge wins %llu, failovers %llu, fallbacks %llu\n",
            (unsigned long long)st.hedges, (unsigned long long)st.hedge_wins,
            (unsigned long long)st.failovers, (unsigned long long)st.fallbacks);
    assert_true(st.hedges >= 1);
    assert_true(st.hedge_wins >= 1);
    assert_int_equal(st.stale, 0);
    rc_close(&h);
    rc_destroy(&c);
    assert_int_equal(w.calls, 1);
    assert_non_null(strstr(w.last, "n1"));
    assert_non_null(strstr(w.last, "PING"));

    /* resumed: it serves again (a client that never saw it stop) */
    assert_int_equal(h_proc_kill(tc.nodes[1].proc, SIGCONT), 0);
    cfg.node_warn = NULL;
    cfg.hedge_ms = 0; /* a stopped node would now hold the read for the timeout */
    h = open_new(&cfg, "hedge/a.bin", &c);
    memset(buf, 0, size);
    read_all(h, buf, size);
    assert_memory_equal(buf, data, size);
    rc_stats_get(c, &st);
    assert_int_equal(st.failovers, 0);
    assert_int_equal(st.fallbacks, 0);
    rc_close(&h);
    rc_destroy(&c);
    free(buf);
    free(data);
}

static void test_sigstop_before_create(void **state)
{
    (void)state;
    size_t size = t_size_mib(16, 8) + 5;
    unsigned char *data = t_alloc_data(size, 92);
    t_put_direct(&tc, "hedge/b.bin", data, size, NULL);
    unsigned char *buf = malloc(size);
    assert_int_equal(h_proc_kill(tc.nodes[2].proc, SIGSTOP), 0);
    rc_config cfg;
    t_rc_config(&tc, &cfg);
    cfg.timeout_ms = 3000; /* the connect's PING to node 2 times out during the test */
    rc_client *c;
    int64_t t0 = h_now_ms();
    rc_handle *h = open_new(&cfg, "hedge/b.bin", &c);
    read_all(h, buf, size);
    assert_memory_equal(buf, data, size);
    /* past the timeout of the requests queued behind node 2's HELLO (bounded) */
    while (h_now_ms() - t0 < 4000)
        sleep_ms(100);
    memset(buf, 0, size);
    assert_int_equal(rc_pread(h, buf, size, 0), size);
    assert_memory_equal(buf, data, size);
    rc_close(&h);
    rc_destroy(&c);
    assert_int_equal(h_proc_kill(tc.nodes[2].proc, SIGCONT), 0);
    free(buf);
    free(data);
}

static void test_slow_s3_is_not_hedged(void **state)
{
    (void)state;
    size_t size = (6u << 20) + 1;
    unsigned char *data = t_alloc_data(size, 93);
    t_put_direct(&tc, "hedge/slow.bin", data, size, NULL);
    int64_t fills0 = 0;
    for (int i = 0; i < T_NODES; i++)
        fills0 += t_node_metric(&tc.nodes[i], "ringcached_s3_get_requests_total");
    assert_int_equal(h_s3model_reset(tc.model), 0);
    assert_int_equal(h_s3model_config(tc.model, 1500, -1), 0);
    rc_config cfg;
    t_rc_config(&tc, &cfg);
    cfg.hedge_ms = 300;
    rc_client *c;
    rc_handle *h = open_new(&cfg, "hedge/slow.bin", &c);
    unsigned char *buf = malloc(size);
    read_all(h, buf, size);
    assert_memory_equal(buf, data, size);
    rc_stats st;
    rc_stats_get(c, &st);
    rc_close(&h);
    rc_destroy(&c);
    assert_int_equal(h_s3model_config(tc.model, 0, -1), 0);
    int64_t fills = -fills0;
    for (int i = 0; i < T_NODES; i++)
        fills += t_node_metric(&tc.nodes[i], "ringcached_s3_get_requests_total");
    assert_int_equal(st.hedges, 0);
    assert_int_equal(st.fallbacks, 0);
    assert_int_equal(fills, 7);
    assert_int_equal(t_s3_gets(&tc, "hedge/slow.bin"), 7);
    free(buf);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigstop_mid_read),
        cmocka_unit_test(test_sigstop_before_create),
        cmocka_unit_test(test_slow_s3_is_not_hedged),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
