/* SPDX-License-Identifier: Apache-2.0
 *
 * test_cli_common.c: the CLI's size options (cli_size_opt: every unit a
 * power of 1024, junk refused with a sentence, never read as its leading
 * digits) and its connection options (cli_conn_*: the environment, then the
 * command line on top; every option and variable in --help).
 */
#include "cli_cache.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static void test_sizes(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        uint64_t v;
    } ok[] = {
        {"0", 0},           {"4096", 4096},   {"64k", 65536},       {"64KB", 65536},
        {"8MiB", 8u << 20}, {"1M", 1u << 20}, {"2GiB", 2ull << 30},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v = 7;
        if (cli_size_opt("page-cache", ok[i].s, &v) != 0)
            fail_msg("'%s' refused", ok[i].s);
        assert_int_equal(v, ok[i].v);
    }
    /* the grammar is bytesize's (test_bytesize has its sentences): junk,
       fractions, signs and sizes over 8 EiB are refused, the value untouched */
    static const char *const bad[] = {"1x", "10XB", "1.5M", "-1", "", " 1M", "8388608TiB"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 7;
        assert_int_equal(cli_size_opt("page-cache", bad[i], &v), -1);
        assert_int_equal(v, 7);
    }
}

/* argv for cli_conn: "cmd" then the words. */
static int conn(cli_conn *c, char **words, int n)
{
    char *argv[32] = {"cmd"};
    for (int i = 0; i < n; i++)
        argv[i + 1] = words[i];
    int argc = n + 1;
    int rc = cli_conn_init(c, argc, argv);
    if (rc)
        return rc;
    for (int i = 1; i < argc; i++) {
        int r = cli_conn_opt(c, argc, argv, &i);
        if (r <= 0)
            return r < 0 ? -1 : -2; /* -2: not a connection option */
    }
    return 0;
}

static void test_connection_options(void **state)
{
    (void)state;
    setenv("HOME", "/nonexistent", 1);
    unsetenv("AWS_PROFILE");
    setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "SKENV", 1);
    setenv("RINGCACHE_CACHE", "n0=127.0.0.1:7070", 1);
    setenv("RINGCACHE_TOKEN", "tok-env", 1);
    setenv("RINGCACHE_CACHE_TLS", "yes", 1);
    setenv("RINGCACHE_HEDGE_MS", "250", 1);
    unsetenv("RINGCACHE_CACHE_TLS_CA");
    unsetenv("RINGCACHE_DNS_SERVER");
    cli_conn c;
    /* the environment alone */
    assert_int_equal(conn(&c, NULL, 0), 0);
    assert_string_equal(c.cache.members, "n0=127.0.0.1:7070");
    assert_string_equal(c.cache.token, "tok-env");
    assert_true(c.cache.tls);
    assert_int_equal(c.cache.hedge_ms, 250);
    assert_string_equal(c.s3.cfg.access_key, "AKENV");
    assert_false(c.s3.cfg.anonymous);
    assert_true(cli_s3_signable(&c.s3.cfg));
    assert_ptr_equal(c.cache.s3, &c.s3.cfg);
    /* the command line wins */
    char *w[] = {
        "--cache",           "a:1",      "--token=t2",     "--cache-only",      "--no-fill",
        "--hedge-ms",        "0",        "--cache-tls-ca", "/ca.pem",           "--dns-server",
        "127.0.0.1:53",      "--region", "eu-west-3",      "--no-sign-request", "--endpoint",
        "http://127.0.0.1:9"};
    assert_int_equal(conn(&c, w, 16), 0);
    assert_string_equal(c.cache.members, "a:1");
    assert_string_equal(c.cache.token, "t2");
    assert_true(c.cache.cache_only);
    assert_true(c.cache.no_fill);
    assert_int_equal(c.cache.hedge_ms, 0);
    assert_string_equal(c.cache.tls_ca, "/ca.pem");
    assert_string_equal(c.cache.dns_server, "127.0.0.1:53");
    assert_string_equal(c.s3.cfg.region, "eu-west-3");
    assert_true(c.s3.cfg.anonymous);
    assert_string_equal(c.s3.cfg.endpoint, "http://127.0.0.1:9");
    /* bad values are refused, other words are left to the command */
    char *bad[] = {"--hedge-ms", "soon"};
    assert_int_equal(conn(&c, bad, 2), -1);
    char *other[] = {"--format", "TSV"};
    assert_int_equal(conn(&c, other, 2), -2);
    setenv("RINGCACHE_CACHE_TLS", "maybe", 1);
    assert_int_equal(conn(&c, NULL, 0), CLI_USAGE);
    unsetenv("RINGCACHE_CACHE_TLS");
    /* no credentials: not signable, unless unsigned requests are asked for */
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    assert_int_equal(conn(&c, NULL, 0), 0);
    assert_false(c.s3.cfg.anonymous);
    assert_false(cli_s3_signable(&c.s3.cfg));
    char *ns[] = {"--no-sign-request"};
    assert_int_equal(conn(&c, ns, 1), 0);
    assert_true(cli_s3_signable(&c.s3.cfg));
}

static void test_help_names_every_option_and_variable(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    cli_conn_help(f);
    fclose(f);
    static const char *const want[] = {"--endpoint URL",
                                       "--region NAME",
                                       "--profile NAME",
                                       "--no-sign-request",
                                       "--ca-bundle FILE",
                                       "--cache MEMBERS",
                                       "--token TOKEN",
                                       "--cache-tls ",
                                       "--cache-tls-ca FILE",
                                       "--dns-server IP:PORT",
                                       "--hedge-ms MS",
                                       "--cache-only",
                                       "--no-fill",
                                       "RINGCACHE_CACHE)",
                                       "RINGCACHE_TOKEN",
                                       "RINGCACHE_CACHE_TLS=1",
                                       "RINGCACHE_CACHE_TLS_CA",
                                       "RINGCACHE_DNS_SERVER",
                                       "RINGCACHE_HEDGE_MS",
                                       "AWS_ACCESS_KEY_ID",
                                       "AWS_PROFILE",
                                       "AWS_REGION",
                                       "AWS_ENDPOINT_URL"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(text, want[i]))
            fail_msg("--help lacks '%s':\n%s", want[i], text);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_connection_options),
        cmocka_unit_test(test_help_names_every_option_and_variable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
