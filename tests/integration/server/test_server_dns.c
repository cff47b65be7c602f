/* SPDX-License-Identifier: Apache-2.0
 *
 * test_server_dns.c: a cluster of `ringcache server` processes named by DNS
 * (--cluster default=dns:NAME), as the Helm chart's compute Deployment is:
 * three real servers on loopback, the harness's DNS server on 127.0.0.1 (its
 * SRV records name the servers' HTTP ports), CSV files on the real S3 server.
 * Before the name has records s3Cluster fails with a sentence that names it;
 * then the members follow the records as they are added and removed
 * (re-resolved every 200 ms), system.clusters lists them, and the distributed
 * sum equals the one computed here every time (one server reads the shared
 * secret from a file, --cluster-secret-file). Skips (77) without s3rver or a
 * UDP port.
 */
#include "harness.h"
#include "s3_test_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#define SVC     "compute.ringcache.test"
#define N_SRV   3
#define N_FILES 6
#define ROWS    500

static h_env *env;
static h_s3 *s3;
static h_dns *dns;
static h_proc *srv[N_SRV];
static int port[N_SRV];
static long long want_sum;

static int setup(void **state)
{
    (void)state;
    if (h_env_create(&env, "test_server_dns") < 0)
        return -1;
    s3 = t_start_s3(env, 3);
    if (h_dns_start(&dns) < 0) {
        h_env_destroy(&env);
        h_skip("cannot run a DNS server on 127.0.0.1");
    }
    s3_config cfg;
    t_s3_config(&cfg, h_s3_endpoint(s3), NULL, NULL);
    /* file f holds rows i = 0..ROWS-1 with v = f * 1000 + i */
    for (int f = 0; f < N_FILES; f++) {
        char *csv = malloc(ROWS * 32), key[64];
        size_t n = 0;
        for (int i = 0; i < ROWS; i++) {
            long long v = (long long)f * 1000 + i;
            n += (size_t)snprintf(csv + n, 32, "%d,%lld\n", i, v);
            want_sum += v;
        }
        snprintf(key, sizeof(key), "dns/part-%d.csv", f);
        assert_int_equal(t_put_object(&cfg, H_S3_DEFAULT_BUCKET, key, csv, n, NULL), 0);
        free(csv);
    }
    char cli[4096], dns_env[128];
    assert_int_equal(h_build_path(cli, sizeof(cli), H_RINGCACHE_CLI), 0);
    snprintf(dns_env, sizeof(dns_env), "RINGCACHE_DNS_SERVER=%s", h_dns_server(dns));
    char *const envx[] = {dns_env, "AWS_ACCESS_KEY_ID=S3RVER", "AWS_SECRET_ACCESS_KEY=S3RVER",
                          "AWS_REGION=us-east-1", NULL};
    /* the last server reads the secret from a file, as the chart mounts it */
    char secret_file[1024];
    snprintf(secret_file, sizeof(secret_file), "%s/cluster-secret", h_env_dir(env));
    FILE *sf = fopen(secret_file, "w");
    assert_non_null(sf);
    fputs("test-dns-secret\n", sf);
    fclose(sf);
    for (int i = 0; i < N_SRV; i++) {
        char name[16], pf[1024];
        snprintf(name, sizeof(name), "server%d", i);
        snprintf(pf, sizeof(pf), "%s/%s.port", h_env_dir(env), name);
        char *const argv[] = {cli,
                              "server",
                              "--port",
                              "0",
                              "--port-file",
                              pf,
                              "--s3-endpoint",
                              (char *)h_s3_endpoint(s3),
                              "--cluster",
                              "default=dns:" SVC,
                              i == N_SRV - 1 ? "--cluster-secret-file" : "--cluster-secret",
                              i == N_SRV - 1 ? secret_file : "test-dns-secret",
                              "--cluster-dns-interval-ms",
                              "200",
                              "--max-threads",
                              "1",
                              NULL};
        assert_int_equal(h_proc_start(env, &srv[i], name, argv, envx, pf, 0), 0);
        port[i] = h_proc_port(srv[i]);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    h_dns_stop(&dns);
    h_env_destroy(&env);
    return 0;
}

/* POSTs sql to server i; the status, the body into out. */
static long query(int i, const char *sql, char *out, size_t cap)
{
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port[i]);
    h_http_req req = {.method = "POST", .url = url, .body = sql, .body_len = strlen(sql)};
    h_http_resp resp = {0};
    int st = h_http(&req, &resp);
    snprintf(out, cap, "%s", resp.body ? resp.body : "");
    h_http_resp_deinit(&resp);
    return st;
}

static void publish(int i)
{
    char target[128];
    snprintf(target, sizeof(target), "s%d." SVC, i);
    assert_int_equal(h_dns_set_a(dns, target, "127.0.0.1"), 0);
    assert_int_equal(h_dns_add_srv(dns, SVC, target, (uint16_t)port[i]), 0);
}

static void unpublish(int i)
{
    char target[128];
    snprintf(target, sizeof(target), "s%d." SVC, i);
    assert_int_equal(h_dns_remove_srv(dns, SVC, target), 0);
}

/* Waits (bounded: 15 s) until server i lists want members, then checks they
 * are the published ports. */
static void wait_members(int i, int want, const int *ports)
{
    char out[4096];
    int seen = -1;
    for (int k = 0; k < 150; k++) {
        assert_int_equal(query(i, "SELECT count() FROM system.clusters WHERE cluster = 'default'",
                               out, sizeof out),
                         200);
        seen = atoi(out);
        if (seen == want)
            break;
        struct timespec ts = {0, 100000000L};
        nanosleep(&ts, NULL);
    }
    if (seen != want)
        fprintf(stderr, "server%d lists %d members, want %d\n", i, seen, want);
    assert_int_equal(seen, want);
    assert_int_equal(
        query(i, "SELECT port FROM system.clusters WHERE cluster = 'default' ORDER BY port", out,
              sizeof out),
        200);
    char expect[256] = "";
    int sorted[N_SRV];
    memcpy(sorted, ports, sizeof(int) * (size_t)want);
    for (int a = 0; a < want; a++)
        for (int b = a + 1; b < want; b++)
            if (sorted[b] < sorted[a]) {
                int t = sorted[a];
                sorted[a] = sorted[b];
                sorted[b] = t;
            }
    for (int a = 0; a < want; a++)
        snprintf(expect + strlen(expect), sizeof(expect) - strlen(expect), "%d\n", sorted[a]);
    assert_string_equal(out, expect);
}

static void check_sum(int i)
{
    char out[4096];
    long st = query(i,
                    "SELECT sum(c2), count() FROM s3Cluster('default', 's3://" H_S3_DEFAULT_BUCKET
                    "/dns/*.csv', 'CSV', 'c1 UInt32, c2 Int64')",
                    out, sizeof out);
    if (st != 200)
        fprintf(stderr, "server%d: %ld %s\n", i, st, out);
    assert_int_equal(st, 200);
    char expect[128];
    snprintf(expect, sizeof(expect), "%lld\t%d\n", want_sum, N_FILES * ROWS);
    assert_string_equal(out, expect);
}

static void test_members_follow_dns(void **state)
{
    (void)state;
    char out[4096];
    /* no records yet: the query says which name did not resolve */
    long st = query(0,
                    "SELECT count() FROM s3Cluster('default', 's3://" H_S3_DEFAULT_BUCKET
                    "/dns/*.csv', 'CSV', 'c1 UInt32, c2 Int64')",
                    out, sizeof out);
    assert_true(st >= 400);
    if (!strstr(out, "dns:" SVC " has not resolved"))
        fprintf(stderr, "answer: %s\n", out);
    assert_non_null(strstr(out, "dns:" SVC " has not resolved"));

    publish(0);
    publish(1);
    int two[] = {port[0], port[1]};
    wait_members(0, 2, two);
    check_sum(0);

    /* a server joins: every server sees it, and the sum is still whole */
    publish(2);
    int three[] = {port[0], port[1], port[2]};
    wait_members(0, 3, three);
    wait_members(2, 3, three);
    check_sum(2);

    /* one leaves the records (a scaled-down pod): the others drop it */
    unpublish(1);
    int left[] = {port[0], port[2]};
    wait_members(0, 2, left);
    check_sum(0);
    assert_true(h_dns_queries(dns) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_members_follow_dns),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
