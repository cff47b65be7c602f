/* SPDX-License-Identifier: Apache-2.0
 *
 * test_client_multiproc.c: six compute-node processes (rc_reader, each with
 * its own libringcache client) read the same cold 256 MiB object at once
 * through three ringcached nodes. Each checks the bytes (XXH3-64); S3 sees
 * exactly one GET per block: the nodes fill each block once however many
 * clients ask (48 MiB in sanitizer builds).
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
#include <xxhash.h>
#include <cmocka.h>

#define N_READERS 6

static void test_six_cold_readers(void **state)
{
    (void)state;
    char bin[1024];
    if (h_build_path(bin, sizeof(bin), "tests/integration/client/rc_reader") < 0)
        h_skip("rc_reader is not built");
    t_cluster tc;
    t_cluster_start(&tc, "test_client_multiproc", NULL);
    size_t size = t_size_mib(256, 48) + 100;
    unsigned char *data = t_alloc_data(size, 41);
    t_put_direct(&tc, "multi/cold.bin", data, size, NULL);
    char hash[32];
    snprintf(hash, sizeof(hash), "%016" PRIx64, (uint64_t)XXH3_64bits(data, size));
    free(data);
    assert_int_equal(h_s3model_reset(tc.model), 0);

    char cache[600], endpoint[256];
    snprintf(cache, sizeof(cache), "RINGCACHE_CACHE=%s", tc.members);
    snprintf(endpoint, sizeof(endpoint), "AWS_ENDPOINT_URL=%s", h_s3model_endpoint(tc.model));
    /* hedging off: a node slowed past 3 x hedge_ms (a sanitizer build on a
     * loaded machine) would have its blocks asked of the next owner, which
     * fills them again, by design; what is counted here is the single flight
     * of one owner (hedging has its own tests) */
    char *envp[] = {cache,
                    endpoint,
                    "AWS_ACCESS_KEY_ID=S3RVER",
                    "AWS_SECRET_ACCESS_KEY=S3RVER",
                    "AWS_REGION=us-east-1",
                    "RINGCACHE_HEDGE_MS=0",
                    NULL};
    char *argv[] = {bin, H_S3_DEFAULT_BUCKET, "multi/cold.bin", hash, NULL};
    h_proc *p[N_READERS];
    for (int i = 0; i < N_READERS; i++) {
        char name[32];
        snprintf(name, sizeof(name), "reader%d", i);
        assert_int_equal(h_proc_start(tc.env, &p[i], name, argv, envp, NULL, 0), 0);
    }
    for (int i = 0; i < N_READERS; i++) {
        int st = h_proc_wait(p[i], 300000);
        if (st != 0)
            h_proc_print_log_tail(p[i], 20);
        assert_int_equal(st, 0);
    }
    uint64_t blocks = (size + (1u << 20) - 1) >> 20;
    int64_t gets = t_s3_gets(&tc, "multi/cold.bin");
    int64_t fills = 0, waits = 0, fbuf = 0;
    for (int i = 0; i < T_NODES; i++) {
        fills += t_node_metric(&tc.nodes[i], "ringcached_s3_get_requests_total");
        waits += t_node_metric(&tc.nodes[i], "ringcached_singleflight_waits_total");
        fbuf += t_node_metric(&tc.nodes[i], "ringcached_fill_buffer_hits_total");
    }
    fprintf(stderr,
            "blocks %" PRIu64 ", S3 GETs %" PRId64 ", node fills %" PRId64
            ", single-flight waits %" PRId64 ", fill-buffer hits %" PRId64 "\n",
            blocks, gets, fills, waits, fbuf);
    assert_int_equal(gets, (int64_t)blocks);
    assert_int_equal(fills, (int64_t)blocks);
    t_cluster_stop(&tc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_six_cold_readers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
