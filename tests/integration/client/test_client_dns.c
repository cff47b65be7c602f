/* SPDX-License-Identifier: Apache-2.0
 *
 * test_client_dns.c: libringcache with `dns:` members, as on Kubernetes: the
 * harness's DNS server (h_dns, 127.0.0.1, a free UDP port) answers SRV records
 * of a headless-Service-like name pointing at three real ringcached nodes
 * (n0..n2.<service>, their ports) and A records of those targets; the client
 * is given `dns:NAME:7070` and that server (rc_config.dns_server), S3 behind
 * the S3 model counts every GET.
 *  - the ring comes from DNS (3 members); an object read whole equals S3's
 *    bytes, with one S3 GET per block, and every node served some of it;
 *  - one node leaves the SRV answer: after the re-resolve interval the
 *    client's ring has 2 members, a cold object is read with one S3 GET per
 *    block and the node that left is asked for nothing (its GET counter does
 *    not move), no failover; then it is stopped and reads still succeed with
 *    no failover and no S3 fallback;
 *  - configuration: a dns_server that is not an address is refused by
 *    rc_create naming it; RINGCACHE_DNS_SERVER and RINGCACHE_CACHE_TLS(_CA)
 *    reach rc_config through rc_config_from_env, a bad RINGCACHE_CACHE_TLS is
 *    refused.
 * No timing is asserted: the ring change is awaited (guard 60 s).
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

#define SVC "ringcache-headless.rc-test.svc.cluster.local"

static t_cluster tc;
static h_dns *dns;

static int setup(void **state)
{
    (void)state;
    t_cluster_start(&tc, "test_client_dns", NULL);
    if (h_dns_start(&dns) < 0) {
        t_cluster_stop(&tc);
        h_skip("cannot run a DNS server on 127.0.0.1");
    }
    t_cluster_publish(&tc, dns, SVC);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    h_dns_stop(&dns);
    t_cluster_stop(&tc);
    return 0;
}

/* Puts `key` straight into S3, reads it whole through c and checks the bytes
 * and that S3 saw one GET per block; returns the block count. */
static uint64_t read_cold(rc_client *c, const char *key, uint64_t seed)
{
    size_t size = t_size_mib(24, 16) + 777;
    unsigned char *data = t_alloc_data(size, seed);
    t_put_direct(&tc, key, data, size, NULL);
    assert_int_equal(h_s3model_reset(tc.model), 0);
    char err[RC_ERR_MAX];
    rc_handle *h;
    int rc = rc_open(c, H_S3_DEFAULT_BUCKET, key, &h, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "open %s: %s\n", key, err);
    assert_int_equal(rc, 0);
    unsigned char *buf = malloc(size);
    const size_t step = 4u << 20;
    for (size_t off = 0; off < size; off += step) {
        int64_t n = rc_pread(h, buf + off, step, off);
        if (n < 0) {
            rc_last_error(h, err, sizeof(err));
            fprintf(stderr, "read %s at %zu: %s\n", key, off, err);
        }
        assert_int_equal(n, off + step <= size ? step : size - off);
    }
    assert_memory_equal(buf, data, size);
    uint64_t blocks = (size + (1u << 20) - 1) >> 20;
    assert_int_equal(t_s3_gets(&tc, key), (int64_t)blocks);
    rc_close(&h);
    free(buf);
    free(data);
    return blocks;
}

static int64_t node_gets(int i)
{
    return t_node_metric(&tc.nodes[i], "ringcached_get_requests_total");
}

static void test_ring_from_dns_follows_changes(void **state)
{
    (void)state;
    rc_config cfg;
    t_rc_config(&tc, &cfg);
    cfg.members = "dns:" SVC ":7070";
    cfg.dns_server = h_dns_server(dns);
    cfg.dns_interval_ms = 100;
    rc_client *c;
    char err[RC_ERR_MAX];
    int rc = rc_create(&c, &cfg, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(rc_members(c), 3);
    assert_int_equal(rc_block_size(c), 1u << 20);

    int64_t before[T_NODES];
    for (int i = 0; i < T_NODES; i++)
        before[i] = node_gets(i);
    read_cold(c, "dns/a.bin", 31);
    for (int i = 0; i < T_NODES; i++) /* the ring from DNS spread the blocks */
        assert_true(node_gets(i) > before[i]);
    rc_stats st;
    rc_stats_get(c, &st);
    assert_int_equal(st.fallbacks, 0);
    assert_int_equal(st.failovers, 0);

    /* n2 leaves the Service: the next rounds drop it from the ring */
    assert_int_equal(h_dns_remove_srv(dns, SVC, "n2." SVC), 0);
    int64_t q0 = h_dns_queries(dns);
    int64_t guard = h_now_ms() + 60000;
    while (rc_members(c) != 2) {
        if (h_now_ms() > guard)
            fail_msg("the client's ring still has %zu members after 60 s (DNS queries since "
                     "the change: %lld)",
                     rc_members(c), (long long)(h_dns_queries(dns) - q0));
        usleep(20000);
    }
    int64_t n2 = node_gets(2);
    read_cold(c, "dns/b.bin", 32);
    assert_int_equal(node_gets(2), n2); /* nothing was asked of the node that left */
    rc_stats_get(c, &st);
    assert_int_equal(st.failovers, 0);
    assert_int_equal(st.fallbacks, 0);

    /* and once it is gone for good, reads do not notice */
    assert_int_equal(h_proc_stop(tc.nodes[2].proc, 15000), 0);
    tc.nodes[2].proc = NULL;
    read_cold(c, "dns/c.bin", 33);
    rc_stats_get(c, &st);
    assert_int_equal(st.failovers, 0);
    assert_int_equal(st.fallbacks, 0);
    rc_destroy(&c);
}

static void test_config(void **state)
{
    (void)state;
    rc_config cfg;
    t_rc_config(&tc, &cfg);
    cfg.members = "dns:" SVC ":7070";
    cfg.dns_server = "dns.example.com";
    rc_client *c = NULL;
    char err[RC_ERR_MAX] = "";
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), -EINVAL);
    assert_null(c);
    fprintf(stderr, "bad dns_server: %s\n", err);
    assert_non_null(strstr(err, "dns.example.com"));
    assert_non_null(strstr(err, "IP:PORT"));

    /* the environment */
    setenv("RINGCACHE_DNS_SERVER", "127.0.0.1:5353", 1);
    setenv("RINGCACHE_CACHE_TLS", "yes", 1);
    setenv("RINGCACHE_CACHE_TLS_CA", "/etc/ringcache/ca.crt", 1);
    rc_config_init(&cfg);
    assert_int_equal(rc_config_from_env(&cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg.dns_server, "127.0.0.1:5353");
    assert_true(cfg.tls);
    assert_string_equal(cfg.tls_ca, "/etc/ringcache/ca.crt");
    setenv("RINGCACHE_CACHE_TLS", "0", 1);
    assert_int_equal(rc_config_from_env(&cfg, err, sizeof(err)), 0);
    assert_false(cfg.tls);
    setenv("RINGCACHE_CACHE_TLS", "maybe", 1);
    assert_int_equal(rc_config_from_env(&cfg, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "RINGCACHE_CACHE_TLS"));
    unsetenv("RINGCACHE_DNS_SERVER");
    unsetenv("RINGCACHE_CACHE_TLS");
    unsetenv("RINGCACHE_CACHE_TLS_CA");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_ring_from_dns_follows_changes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
