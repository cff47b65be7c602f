/* SPDX-License-Identifier: Apache-2.0
 *
 * test_ringcached_soak.c (label `slow`): 200 connections keep asking one node
 * for blocks for 60 s (warm and cold, ranges and whole blocks). No request may
 * fail, and the node's resident memory at 60 s must be within 10% of what it
 * was at 10 s (no leak, no unbounded queue). The node exits 0 on SIGTERM.
 * RINGCACHE_SOAK_SECONDS shortens it for a quick local run.
 */
#include "node_util.h"
#include "s3_test_util.h"

#include <errno.h>
#include <event2/event.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

enum { CONNS = 200, OBJ_BLOCKS = 32 };

typedef struct soak soak;
typedef struct {
    soak *s;
    cc_conn *c;
    uint8_t *buf;
    uint64_t rnd;
} soak_conn;

struct soak {
    struct event_base *base;
    soak_conn conns[CONNS];
    char etag[S3_ETAG_MAX];
    uint64_t size;
    int64_t deadline_ms;
    uint64_t done, failed;
    int inflight;
    char last_err[256];
};

static void soak_issue(soak_conn *sc);

static void soak_done(const cc_result *r, void *arg)
{
    soak_conn *sc = arg;
    soak *s = sc->s;
    s->inflight--;
    if (r->code) {
        s->failed++;
        snprintf(s->last_err, sizeof(s->last_err), "%s", r->message);
    } else {
        s->done++;
    }
    if (h_now_ms() < s->deadline_ms)
        soak_issue(sc);
}

static void soak_issue(soak_conn *sc)
{
    soak *s = sc->s;
    sc->rnd ^= sc->rnd << 13;
    sc->rnd ^= sc->rnd >> 7;
    sc->rnd ^= sc->rnd << 17;
    uint64_t b = sc->rnd % OBJ_BLOCKS;
    uint32_t off = (uint32_t)((sc->rnd >> 20) % 16) * 65536, len = (sc->rnd & 1) ? 65536 : 0;
    if (!len)
        off = 0;
    rcp_get_req g = {
        {rcp_s(H_S3_DEFAULT_BUCKET), rcp_s("soak/obj"), rcp_s(s->etag), s->size}, b, off, len, 0};
    if (cc_get(sc->c, &g, sc->buf, 1u << 20, soak_done, sc, NULL) == 0)
        s->inflight++;
    else
        s->failed++;
}

static void run_until(soak *s, int64_t until_ms)
{
    while (h_now_ms() < until_ms && (s->inflight > 0 || h_now_ms() < s->deadline_ms))
        event_base_loop(s->base, EVLOOP_ONCE);
}

static void test_soak(void **state)
{
    (void)state;
    int secs = getenv("RINGCACHE_SOAK_SECONDS") ? atoi(getenv("RINGCACHE_SOAK_SECONDS")) : 60;
    if (secs < 12)
        secs = 12;
    h_env *env;
    assert_int_equal(h_env_create(&env, "test_ringcached_soak"), 0);
    h_s3 *s3 = t_start_s3(env, 3);
    h_s3model *model;
    assert_int_equal(h_s3model_start(env, &model, h_s3_port(s3), 5, 0), 0);
    s3_config direct;
    t_s3_config(&direct, h_s3_endpoint(s3), NULL, NULL);
    soak *s = calloc(1, sizeof(*s));
    s->size = (uint64_t)OBJ_BLOCKS << 20;
    void *data = t_alloc_data(s->size, 11);
    s3_sync *sy;
    assert_int_equal(s3_sync_create(&sy, &direct), 0);
    s3_error err;
    s3_sync_put_args pa = {
        .bucket = H_S3_DEFAULT_BUCKET, .key = "soak/obj", .fd = -1, .data = data, .size = s->size};
    assert_int_equal(s3_sync_put(sy, &pa, s->etag, &err), 0);
    s3_sync_destroy(&sy);

    t_node n;
    const char *extra[] = {"--threads", "2", "--ram-capacity", "16MiB", NULL};
    t_node_start(env, &n, "soak", h_s3model_endpoint(model), extra);
    s->base = event_base_new();
    for (int i = 0; i < CONNS; i++) {
        s->conns[i].s = s;
        s->conns[i].rnd = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
        s->conns[i].buf = malloc(1u << 20);
        s->conns[i].c = t_conn(s->base, &n, NULL);
        assert_non_null(s->conns[i].c);
    }
    int64_t start = h_now_ms();
    s->deadline_ms = start + (int64_t)secs * 1000;
    for (int i = 0; i < CONNS; i++)
        soak_issue(&s->conns[i]);
    run_until(s, start + 10000);
    int64_t rss10 = t_node_rss_kib(&n);
    run_until(s, s->deadline_ms + 30000);
    int64_t rss_end = t_node_rss_kib(&n);
    fprintf(stderr,
            "soak: %d connections, %d s: %llu GETs, %llu failed; RSS %lld KiB at 10 s, "
            "%lld KiB at the end\n",
            CONNS, secs, (unsigned long long)s->done, (unsigned long long)s->failed,
            (long long)rss10, (long long)rss_end);
    if (s->failed)
        fprintf(stderr, "last error: %s\n", s->last_err);
    assert_int_equal(s->failed, 0);
    assert_true(s->done > 1000);
    assert_true(rss_end <= rss10 + rss10 / 10);
    for (int i = 0; i < CONNS; i++) {
        cc_conn_destroy(&s->conns[i].c);
        free(s->conns[i].buf);
    }
    event_base_loop(s->base, EVLOOP_NONBLOCK);
    event_base_free(s->base);
    assert_int_equal(h_proc_stop(n.proc, 15000), 0);
    free(s);
    free(data);
    h_env_destroy(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_soak)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
