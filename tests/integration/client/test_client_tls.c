/* SPDX-License-Identifier: Apache-2.0
 *
 * test_client_tls.c: libringcache and the `ringcache` CLI over TLS to three
 * real ringcached nodes started with --tls-cert/--tls-key (one certificate
 * shared by the nodes, its own CA, naming 127.0.0.1 and the SRV targets
 * n0..n2.<service>), S3 behind the S3 model counting GETs:
 *  - static members (127.0.0.1:port) with tls and the right CA: an object
 *    reads equal to S3's bytes, one S3 GET per block, no fallback; with an
 *    unrelated CA and cache_only, rc_open fails with -EHOSTDOWN and a
 *    sentence naming the verification failure; a CA file that cannot be
 *    loaded, and a CA without tls, are refused by rc_create;
 *  - dns: members (the harness's DNS server): the nodes are verified by their
 *    SRV target names while the client dials their addresses: targets the
 *    certificate names read fine; a second Service whose targets it does not
 *    name (same addresses, and 127.0.0.1 is in the certificate) fails with
 *    "hostname mismatch", which verifying the dialled IP would not;
 *  - the CLI: get with --cache-tls-ca fills the nodes; gets with --cache-only
 *    (served by the nodes alone) with RINGCACHE_CACHE_TLS=1 /
 *    RINGCACHE_CACHE_TLS_CA, and in the dns: form with --dns-server; a wrong
 *    CA, or names the certificate lacks, with --cache-only exit 1 naming the
 *    failure; --help lists the options.
 */
#include "client_test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#define SVC       "ringcache-headless.rc-test.svc.cluster.local"
#define SVC_OTHER "other-headless.rc-test.svc.cluster.local"

static t_cluster tc;
static h_env *certs; /* made before the cluster's folder exists */
static h_dns *dns;
static char cert[600], cert_key[600], other_cert[600], other_key[600];
static char cli[4096];
static char dns_members[256], other_members[256];

static int setup(void **state)
{
    (void)state;
    if (h_env_create(&certs, "test_client_tls_certs") < 0) {
        fprintf(stderr, "cannot create the certificates' folder: %s\n", h_last_error());
        exit(1);
    }
    h_env_path(certs, cert, sizeof(cert), "node.crt");
    h_env_path(certs, cert_key, sizeof(cert_key), "node.key");
    h_env_path(certs, other_cert, sizeof(other_cert), "other.crt");
    h_env_path(certs, other_key, sizeof(other_key), "other.key");
    /* a certificate shared by the pods names their SRV targets, not their IPs;
     * 127.0.0.1 is there for the static-list tests */
    assert_int_equal(h_make_cert_san(cert, cert_key,
                                     "DNS:n0." SVC ",DNS:n1." SVC ",DNS:n2." SVC ",IP:127.0.0.1"),
                     0);
    assert_int_equal(h_make_cert(other_cert, other_key), 0);
    const char *extra[] = {"--tls-cert", cert, "--tls-key", cert_key, "--tls-ca", cert, NULL};
    t_cluster_start(&tc, "test_client_tls", extra);
    if (h_dns_start(&dns) < 0) {
        t_cluster_stop(&tc);
        h_env_destroy(&certs);
        h_skip("cannot run a DNS server on 127.0.0.1");
    }
    t_cluster_publish(&tc, dns, SVC);
    t_cluster_publish(&tc, dns, SVC_OTHER);
    snprintf(dns_members, sizeof(dns_members), "dns:" SVC ":7070");
    snprintf(other_members, sizeof(other_members), "dns:" SVC_OTHER ":7070");
    if (h_build_path(cli, sizeof(cli), H_RINGCACHE_CLI) < 0)
        cli[0] = '\0';
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    h_dns_stop(&dns);
    t_cluster_stop(&tc);
    h_env_destroy(&certs);
    return 0;
}

static void tls_config(rc_config *cfg, const char *members, const char *ca)
{
    t_rc_config(&tc, cfg);
    cfg->members = members;
    cfg->tls = true;
    cfg->tls_ca = ca;
    cfg->dns_server = h_dns_server(dns);
    /* a handshake under a sanitizer on a loaded 2-core machine can take more
     * than the default 2 s; the failures these tests expect are refusals, not
     * timeouts, so a timeout must never stand in for them */
    cfg->connect_timeout_ms = 20000;
}

/* Puts key into S3, reads it whole through a client made from cfg: bytes equal,
 * one S3 GET per block, nothing read from S3 directly. */
static void read_through(const rc_config *cfg, const char *key, uint64_t seed)
{
    size_t size = t_size_mib(12, 6) + 999;
    unsigned char *data = t_alloc_data(size, seed);
    t_put_direct(&tc, key, data, size, NULL);
    assert_int_equal(h_s3model_reset(tc.model), 0);
    rc_client *c;
    char err[RC_ERR_MAX];
    int rc = rc_create(&c, cfg, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "rc_create: %s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(rc_members(c), 3);
    rc_handle *h;
    rc = rc_open(c, H_S3_DEFAULT_BUCKET, key, &h, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "rc_open: %s\n", err);
    assert_int_equal(rc, 0);
    unsigned char *buf = malloc(size);
    int64_t n = rc_pread(h, buf, size, 0);
    if (n < 0) {
        rc_last_error(h, err, sizeof(err));
        fprintf(stderr, "rc_pread: %s\n", err);
    }
    assert_int_equal(n, size);
    assert_memory_equal(buf, data, size);
    assert_int_equal(t_s3_gets(&tc, key), (int64_t)((size + (1u << 20) - 1) >> 20));
    rc_stats st;
    rc_stats_get(c, &st);
    assert_int_equal(st.fallbacks, 0);
    assert_int_equal(st.head_fallbacks, 0);
    assert_true(st.node_blocks > 0);
    rc_close(&h);
    rc_destroy(&c);
    free(buf);
    free(data);
}

/* rc_open through a client made from cfg (cache_only) fails with -EHOSTDOWN;
 * the sentence goes to err. */
static void open_fails(rc_config *cfg, const char *key, char *err, size_t errlen)
{
    cfg->cache_only = true;
    rc_client *c;
    int rc = rc_create(&c, cfg, err, errlen);
    if (rc < 0)
        fprintf(stderr, "rc_create: %s\n", err);
    assert_int_equal(rc, 0);
    rc_handle *h = NULL;
    assert_int_equal(rc_open(c, H_S3_DEFAULT_BUCKET, key, &h, err, errlen), -EHOSTDOWN);
    assert_null(h);
    fprintf(stderr, "expected failure: %s\n", err);
    rc_destroy(&c);
}

static void test_static_members(void **state)
{
    (void)state;
    rc_config cfg;
    tls_config(&cfg, tc.members, cert);
    read_through(&cfg, "tls/static.bin", 41);

    /* another CA: no silent S3 read with cache_only, and the error says why */
    char err[RC_ERR_MAX];
    tls_config(&cfg, tc.members, other_cert);
    open_fails(&cfg, "tls/static.bin", err, sizeof(err));
    assert_non_null(strstr(err, "certificate verify failed"));
    assert_non_null(strstr(err, "TLS with cache node 127.0.0.1:"));

    /* a CA file that is not there, and a CA without TLS: refused at once */
    rc_client *c = NULL;
    tls_config(&cfg, tc.members, "/nonexistent/ca.crt");
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), -EINVAL);
    assert_null(c);
    assert_non_null(strstr(err, "/nonexistent/ca.crt"));
    tls_config(&cfg, tc.members, cert);
    cfg.tls = false;
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), -EINVAL);
    assert_null(c);
    assert_non_null(strstr(err, "TLS is off"));
}

static void test_dns_members_verified_by_srv_target(void **state)
{
    (void)state;
    rc_config cfg;
    tls_config(&cfg, dns_members, cert);
    read_through(&cfg, "tls/dns.bin", 42);

    /* the same nodes and addresses under names the certificate lacks */
    char err[RC_ERR_MAX];
    tls_config(&cfg, other_members, cert);
    open_fails(&cfg, "tls/dns.bin", err, sizeof(err));
    assert_non_null(strstr(err, "certificate verify failed"));
    assert_non_null(strstr(err, "hostname mismatch"));
    assert_non_null(strstr(err, "." SVC_OTHER));
}

/* ---- the CLI ---------------------------------------------------------------- */

typedef h_run_result run_result;

/* env: NULL or "NAME=VALUE" entries (NULL-terminated) for this run */
static void run(run_result *r, const char *const *env, const char *const *args)
{
    t_run_cli(&tc, r, cli, env, args);
}

/* The file holds the bytes; it is removed then. */
static void file_equals(const char *path, const void *data, size_t len)
{
    t_file_equals(path, data, len);
    unlink(path);
}

static void test_cli(void **state)
{
    (void)state;
    if (!cli[0]) {
        fprintf(stderr, "the ringcache CLI is not built: CLI cases not run\n");
        skip();
    }
    size_t size = (3u << 20) + 17;
    unsigned char *data = t_alloc_data(size, 43);
    t_put_direct(&tc, "tls/cli.bin", data, size, NULL);
    const char *url = "s3://ringcache-test/tls/cli.bin";
    char out[4096];
    h_env_path(tc.env, out, sizeof(out), "cli-out.bin");
    run_result *r = malloc(sizeof(*r));

    /* the first read fills the nodes (--cache-only would ask them not to);
     * the next ones, --cache-only, can only have come from the nodes */
    assert_int_equal(h_s3model_reset(tc.model), 0);
    run(r, NULL,
        (const char *[]){"get", url, "-o", out, "--cache", tc.members, "--cache-tls-ca", cert,
                         NULL});
    assert_int_equal(r->status, 0);
    file_equals(out, data, size);
    assert_int_equal(t_s3_gets(&tc, "tls/cli.bin"), 4); /* one per block */

    /* the same from the environment, and the dns: form */
    char ca_env[1200];
    snprintf(ca_env, sizeof(ca_env), "RINGCACHE_CACHE_TLS_CA=%s", cert);
    run(r, (const char *[]){"RINGCACHE_CACHE_TLS=1", ca_env, NULL},
        (const char *[]){"get", url, "-o", out, "--cache", tc.members, "--cache-only", NULL});
    assert_int_equal(r->status, 0);
    file_equals(out, data, size);
    run(r, NULL,
        (const char *[]){"get", url, "-o", out, "--cache", dns_members, "--dns-server",
                         h_dns_server(dns), "--cache-tls", "--cache-tls-ca", cert, "--cache-only",
                         NULL});
    assert_int_equal(r->status, 0);
    file_equals(out, data, size);
    assert_int_equal(t_s3_gets(&tc, "tls/cli.bin"), 4); /* the nodes had it */

    /* a wrong CA with --cache-only: exit 1, and the reason */
    run(r, NULL,
        (const char *[]){"get", url, "-o", out, "--cache", tc.members, "--cache-tls-ca", other_cert,
                         "--cache-only", NULL});
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "certificate verify failed"));
    run(r, NULL,
        (const char *[]){"get", url, "-o", out, "--cache", other_members, "--dns-server",
                         h_dns_server(dns), "--cache-tls-ca", cert, "--cache-only", NULL});
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "hostname mismatch"));
    unlink(out);

    /* plain TCP to TLS nodes with --cache-only fails too, it does not hang */
    run(r, NULL,
        (const char *[]){"get", url, "-o", out, "--cache", tc.members, "--cache-only", NULL});
    assert_int_equal(r->status, 1);
    unlink(out);

    /* --help documents the options */
    char outp[4096];
    h_env_path(tc.env, outp, sizeof(outp), "help.txt");
    char cmd[8400];
    snprintf(cmd, sizeof(cmd), "%s get --help > %s", cli, outp);
    assert_int_equal(system(cmd), 0);
    FILE *f = fopen(outp, "r");
    assert_non_null(f);
    char help[16384];
    size_t k = fread(help, 1, sizeof(help) - 1, f);
    help[k] = '\0';
    fclose(f);
    assert_non_null(strstr(help, "--cache-tls "));
    assert_non_null(strstr(help, "--cache-tls-ca FILE"));
    assert_non_null(strstr(help, "--dns-server IP:PORT"));
    assert_non_null(strstr(help, "RINGCACHE_CACHE_TLS=1"));
    free(r);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_static_members),
        cmocka_unit_test(test_dns_members_verified_by_srv_target),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
