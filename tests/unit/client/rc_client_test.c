/* SPDX-License-Identifier: Apache-2.0
 *
 * rc_client_test.c: libringcache without servers: defaults and the
 * environment, the read-ahead window bound min(window, pages / (4 x readers)),
 * configuration errors with sentences, and what a client does when nothing
 * listens: S3 fallback errors come back as errors (never a hang or a crash),
 * cache_only refuses S3 with -EHOSTDOWN, a handle stays usable after a
 * failed open. Addresses are 127.0.0.1 ports nobody listens on.
 */
#include "harness.h"
#include "ringcache.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>
#include <cmocka.h>

/* A loopback port with nothing listening (bound, then closed). */
static int dead_port(void)
{
    int port = h_free_port();
    assert_true(port > 0);
    return port;
}

static void base_config(rc_config *cfg, char *members, size_t cap, char *s3_port_out)
{
    rc_config_init(cfg);
    snprintf(members, cap, "n0=127.0.0.1:%d,n1=127.0.0.1:%d", dead_port(), dead_port());
    cfg->members = members;
    snprintf(cfg->s3.endpoint, sizeof(cfg->s3.endpoint), "http://127.0.0.1:%d", dead_port());
    cfg->s3.path_style = true;
    snprintf(cfg->s3.access_key, sizeof(cfg->s3.access_key), "K");
    snprintf(cfg->s3.secret_key, sizeof(cfg->s3.secret_key), "S");
    cfg->s3.max_attempts = 1;
    cfg->connect_timeout_ms = 500;
    cfg->page_cache_bytes = 8u << 20;
    (void)s3_port_out;
}

static void test_defaults_and_window(void **state)
{
    (void)state;
    rc_config cfg;
    rc_config_init(&cfg);
    assert_int_equal(cfg.readahead_blocks, 16);
    assert_int_equal(cfg.timeout_ms, 30000);
    assert_true(cfg.max_threads >= 1);
    assert_false(cfg.cache_only);
    /* 512 MiB of 1 MiB pages, 1 reader: 16; 64 readers: 512 / 256 = 2 */
    cfg.max_threads = 1;
    assert_int_equal(rc_readahead_window(&cfg, 1u << 20), 16);
    cfg.max_threads = 64;
    assert_int_equal(rc_readahead_window(&cfg, 1u << 20), 2);
    /* 16 MiB, 8 readers: 16 / 32 = 0: no read-ahead rather than a thrashing one */
    cfg.page_cache_bytes = 16u << 20;
    cfg.max_threads = 8;
    assert_int_equal(rc_readahead_window(&cfg, 1u << 20), 0);
    cfg.page_cache_bytes = 1u << 30;
    cfg.max_threads = 2;
    cfg.readahead_blocks = 0;
    assert_int_equal(rc_readahead_window(&cfg, 1u << 20), 0);
    cfg.readahead_blocks = 40;
    assert_int_equal(rc_readahead_window(&cfg, 4u << 20), 32); /* 256 pages / 8 */
}

static void test_env(void **state)
{
    (void)state;
    setenv("RINGCACHE_CACHE", "a=127.0.0.1:1", 1);
    setenv("RINGCACHE_TOKEN", "tok", 1);
    setenv("AWS_ACCESS_KEY_ID", "AK", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "SK", 1);
    setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9", 1);
    rc_config cfg;
    rc_config_init(&cfg);
    char err[RC_ERR_MAX];
    assert_int_equal(rc_config_from_env(&cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg.members, "a=127.0.0.1:1");
    assert_string_equal(cfg.token, "tok");
    assert_string_equal(cfg.s3.access_key, "AK");
    assert_string_equal(cfg.s3.endpoint, "http://127.0.0.1:9");
    /* an explicit member list wins over the variable */
    rc_config_init(&cfg);
    cfg.members = "b=127.0.0.1:2";
    assert_int_equal(rc_config_from_env(&cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg.members, "b=127.0.0.1:2");
    unsetenv("RINGCACHE_CACHE");
    unsetenv("RINGCACHE_TOKEN");
}

static void test_config_errors(void **state)
{
    (void)state;
    rc_config cfg;
    char members[256], err[RC_ERR_MAX];
    base_config(&cfg, members, sizeof(members), NULL);
    rc_client *c = (rc_client *)&cfg; /* must come back NULL on failure */
    cfg.members = "n0=127.0.0.1:7070,n0=127.0.0.1:7071";
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), -EINVAL);
    assert_null(c);
    assert_non_null(strstr(err, "n0"));
    base_config(&cfg, members, sizeof(members), NULL);
    cfg.block_size = 3000;
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "power of two"));
    base_config(&cfg, members, sizeof(members), NULL);
    cfg.page_cache_bytes = 4096;
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "page cache"));
}

static void test_nothing_listens(void **state)
{
    (void)state;
    rc_config cfg;
    char members[256], err[RC_ERR_MAX];
    base_config(&cfg, members, sizeof(members), NULL);
    rc_client *c;
    /* no node answers: not an error, the client falls back to S3 */
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), 0);
    assert_int_equal(rc_block_size(c), 1u << 20);
    assert_int_equal(rc_members(c), 2);
    assert_string_equal(rc_tenant(c), "");
    rc_handle *h = NULL;
    int rc = rc_open(c, "bucket-a", "k", &h, err, sizeof(err));
    assert_true(rc < 0 && rc != -EHOSTDOWN); /* S3 was asked and is not there either */
    assert_null(h);
    assert_true(strlen(err) > 0);
    rc_stats st;
    rc_stats_get(c, &st);
    assert_int_equal(st.head_fallbacks, 1);
    assert_int_equal(rc_put(c, "bucket-a", "k", "x", 1, NULL, err, sizeof(err)) < 0, 1);
    assert_int_equal(rc_open(c, "", "k", &h, err, sizeof(err)), -EINVAL);
    /* a key of 1024 bytes is an S3 key, one of 1025 is not: refused before any request */
    char key[1026];
    memset(key, 'k', 1025);
    key[1025] = '\0';
    rc_stats_get(c, &st);
    uint64_t asked = st.head_fallbacks;
    assert_int_equal(rc_open(c, "bucket-a", key, &h, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "at most 63 and 1024 bytes"));
    rc_stats_get(c, &st);
    assert_int_equal(st.head_fallbacks, asked); /* no HEAD for it */
    rc_destroy(&c);
    assert_null(c);

    /* cache_only: S3 is never asked */
    cfg.cache_only = true;
    assert_int_equal(rc_create(&c, &cfg, err, sizeof(err)), 0);
    assert_int_equal(rc_open(c, "bucket-a", "k", &h, err, sizeof(err)), -EHOSTDOWN);
    assert_non_null(strstr(err, "cache_only"));
    assert_int_equal(rc_put(c, "bucket-a", "k", "x", 1, NULL, err, sizeof(err)), -EHOSTDOWN);
    assert_int_equal(rc_warm(c, "bucket-a", "k", true, NULL, NULL, err, sizeof(err)), -EHOSTDOWN);
    rc_stats_get(c, &st);
    assert_int_equal(st.head_fallbacks, 0);
    rc_destroy(&c);
    rc_destroy(&c); /* NULL is fine */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_window),
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_nothing_listens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
