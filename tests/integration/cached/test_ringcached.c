/* SPDX-License-Identifier: Apache-2.0
 *
 * test_ringcached.c: the cache node as clients see it, with every S3 request
 * counted at the S3 model in front of a real s3rver:
 *  - read-through: a cold block is one S3 GET, then served warm with none;
 *  - single-flight: 10 connections over 4 worker threads ask for one cold
 *    block at once: one S3 GET;
 *  - an object overwritten in S3 after it was opened: "version changed",
 *    nothing stored;
 *  - write-through: a 64 MiB PUT through the node, then reading it back costs
 *    S3 no GET;
 *  - tenants: a token outside its prefixes is refused before any S3 request;
 *    an unknown token is refused at HELLO;
 *  - bad input: a corrupt frame header gets one ERROR frame and a close; an
 *    unknown opcode an ERROR and the connection stays; a client vanishing
 *    mid-frame; the node keeps serving everyone else;
 *  - back-pressure: 10,000 pipelined GETs never read: memory stays bounded;
 *  - every node exits 0 on SIGTERM (drain), so sanitizer reports fail tests.
 */
#include "node_util.h"
#include "s3_test_util.h"

#include "cluster.h"

#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>
#include <sys/wait.h>

static h_env *env;
static h_s3 *s3;
static h_s3model *model;
static s3_config direct;
static const char *bucket = H_S3_DEFAULT_BUCKET;
static struct event_base *base;

static int setup(void **state)
{
    (void)state;
    if (h_env_create(&env, "test_ringcached") < 0)
        return -1;
    s3 = t_start_s3(env, 3);
    if (h_s3model_start(env, &model, h_s3_port(s3), 0, 0) < 0)
        return -1;
    t_s3_config(&direct, h_s3_endpoint(s3), NULL, NULL);
    base = event_base_new();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    event_base_free(base);
    h_env_destroy(&env);
    return 0;
}

/* Puts an object straight into S3 (not counted by the model); returns its etag. */
static void put_direct(const char *key, const void *data, size_t len, char etag[S3_ETAG_MAX])
{
    assert_int_equal(t_put_object(&direct, bucket, key, data, len, etag), 0);
}

static void stop_clean(t_node *n)
{
    assert_int_equal(h_proc_stop(n->proc, 15000), 0);
}

/* name: the node's and the object's; extra: the node's flags. */
static void read_through(const char *name, const char *const *extra)
{
    t_node n;
    t_node_start(env, &n, name, h_s3model_endpoint(model), extra);
    size_t size = (2u << 20) + 12345;
    unsigned char *data = t_alloc_data(size, 1);
    char etag[S3_ETAG_MAX], key[64], path[128];
    snprintf(key, sizeof(key), "%s/obj", name);
    snprintf(path, sizeof(path), "/ringcache-test/%s", key);
    put_direct(key, data, size, etag);
    assert_int_equal(h_s3model_reset(model), 0);
    cc_conn *c = t_conn(base, &n, NULL);
    unsigned char *buf = malloc(1 << 20);
    /* the third pass: RAM-tier hits (with --sendfile always, sent from the
     * tier's pages) */
    for (int pass = 0; pass < 3; pass++)
        for (uint64_t b = 0; b < 3; b++) {
            cc_result r = t_get(base, c, bucket, key, etag, size, b, buf, 1 << 20);
            if (r.code)
                fprintf(stderr, "block %llu: %s\n", (unsigned long long)b, r.message);
            assert_int_equal(r.code, 0);
            uint64_t want = b < 2 ? (1u << 20) : 12345;
            assert_int_equal(r.bytes, want);
            assert_memory_equal(buf, data + b * (1u << 20), want);
            /* the second pass is served by the store, or by the fill's buffer when
             * the block's write to disk has not finished yet: never by S3 */
            if (pass == 0)
                assert_int_equal(r.source, RCP_SRC_S3);
            else
                assert_true(r.source == RCP_SRC_SSD || r.source == RCP_SRC_FILL_WAIT);
        }
    /* one S3 GET per block, on the first pass only */
    assert_int_equal(h_s3model_count(model, "GET", path), 3);
    assert_int_equal(t_node_metric(&n, "ringcached_hits_total") +
                         t_node_metric(&n, "ringcached_fill_buffer_hits_total"),
                     6);
    assert_int_equal(t_node_metric(&n, "ringcached_s3_get_requests_total"), 3);
    cc_conn_destroy(&c);
    event_base_loop(base, EVLOOP_NONBLOCK);
    free(buf);
    free(data);
    stop_clean(&n);
}

static void test_read_through_and_warm(void **state)
{
    (void)state;
    read_through("rt", NULL);
}

/* This client is on the node's host: by default its hits are copied; with
 * --sendfile always they go out with sendfile() from the RAM tier. */
static void test_read_through_sendfile(void **state)
{
    (void)state;
    const char *extra[] = {"--sendfile", "always", NULL};
    read_through("rtsf", extra);
}

typedef struct {
    int done;
    cc_result res;
} waitr;

static void waitr_cb(const cc_result *r, void *arg)
{
    waitr *w = arg;
    w->res = *r;
    w->res.text = NULL;
    w->done = 1;
}

static void test_single_flight(void **state)
{
    (void)state;
    t_node n;
    const char *extra[] = {"--threads", "4", NULL};
    t_node_start(env, &n, "sf", h_s3model_endpoint(model), extra);
    size_t size = 1u << 20;
    unsigned char *data = t_alloc_data(size, 2);
    char etag[S3_ETAG_MAX];
    put_direct("sf/obj", data, size, etag);
    /* slow S3 down so every request arrives while the fill runs */
    assert_int_equal(h_s3model_config(model, 300, 0), 0);
    assert_int_equal(h_s3model_reset(model), 0);
    enum { N = 12 };
    cc_conn *cs[N];
    unsigned char *bufs[N];
    waitr w[N];
    memset(w, 0, sizeof(w));
    for (int i = 0; i < N; i++) { /* connections land on different worker threads */
        cs[i] = t_conn(base, &n, NULL);
        assert_non_null(cs[i]);
    }
    /* connect and HELLO everyone first, so the GETs leave together */
    for (int i = 0; i < N; i++) {
        waitr pw = {0};
        assert_int_equal(cc_ping(cs[i], waitr_cb, &pw), 0);
        while (!pw.done)
            event_base_loop(base, EVLOOP_ONCE);
        assert_int_equal(pw.res.code, 0);
    }
    for (int i = 0; i < N; i++) {
        bufs[i] = malloc(size);
        rcp_get_req g = {{rcp_s(bucket), rcp_s("sf/obj"), rcp_s(etag), size}, 0, 0, 0, 0};
        assert_int_equal(cc_get(cs[i], &g, bufs[i], size, waitr_cb, &w[i], NULL), 0);
    }
    for (int i = 0; i < N; i++) {
        while (!w[i].done)
            event_base_loop(base, EVLOOP_ONCE);
        assert_int_equal(w[i].res.code, 0);
        assert_memory_equal(bufs[i], data, size);
    }
    assert_int_equal(h_s3model_count(model, "GET", "/ringcache-test/sf/obj"), 1);
    assert_true(t_node_metric(&n, "ringcached_singleflight_waits_total") >= 1);
    assert_int_equal(h_s3model_config(model, 0, 0), 0);
    for (int i = 0; i < N; i++) {
        cc_conn_destroy(&cs[i]);
        free(bufs[i]);
    }
    event_base_loop(base, EVLOOP_NONBLOCK);
    free(data);
    stop_clean(&n);
}

static void test_version_changed(void **state)
{
    (void)state;
    t_node n;
    t_node_start(env, &n, "vc", h_s3model_endpoint(model), NULL);
    size_t size = 100000;
    unsigned char *v1 = t_alloc_data(size, 3), *v2 = t_alloc_data(size, 4);
    char e1[S3_ETAG_MAX], e2[S3_ETAG_MAX];
    put_direct("vc/obj", v1, size, e1);
    put_direct("vc/obj", v2, size, e2); /* overwritten after the client "opened" v1 */
    assert_int_equal(h_s3model_reset(model), 0);
    cc_conn *c = t_conn(base, &n, NULL);
    unsigned char *buf = malloc(size);
    cc_result r = t_get(base, c, bucket, "vc/obj", e1, size, 0, buf, size);
    assert_int_equal(r.code, -EREMOTEIO);
    assert_int_equal(r.rcp_code, RCP_E_VERSION_CHANGED);
    fprintf(stderr, "version changed: %s\n", r.message);
    assert_int_equal(t_node_metric(&n, "ringcached_blocks_stored"), 0); /* nothing stored */
    assert_int_equal(t_node_metric(&n, "ringcached_version_changed_total"), 1);
    /* the current version reads fine */
    r = t_get(base, c, bucket, "vc/obj", e2, size, 0, buf, size);
    assert_int_equal(r.code, 0);
    assert_memory_equal(buf, v2, size);
    cc_conn_destroy(&c);
    event_base_loop(base, EVLOOP_NONBLOCK);
    free(buf);
    free(v1);
    free(v2);
    stop_clean(&n);
}

typedef struct {
    const unsigned char *data;
    uint64_t size, off;
} src_t;

static int64_t src_read(void *buf, size_t cap, void *arg)
{
    src_t *s = arg;
    size_t k = s->size - s->off < cap ? (size_t)(s->size - s->off) : cap;
    memcpy(buf, s->data + s->off, k);
    s->off += k;
    return (int64_t)k;
}

typedef struct {
    int done, code;
    char msg[2600];
} rcl_wait;

static void rcl_cb(int code, const char *msg, void *arg)
{
    rcl_wait *w = arg;
    w->code = code;
    snprintf(w->msg, sizeof(w->msg), "%s", msg ? msg : "");
    w->done = 1;
}

static void test_write_through_then_read_costs_no_get(void **state)
{
    (void)state;
    t_node n;
    t_node_start(env, &n, "wt", h_s3model_endpoint(model), NULL);
    size_t size = 64u << 20;
    unsigned char *data = t_alloc_data(size, 5);
    assert_int_equal(h_s3model_reset(model), 0);
    cc_conn *c = t_conn(base, &n, NULL);
    src_t src = {data, size, 0};
    waitr w = {0};
    assert_int_equal(cc_put(c, bucket, "wt/big.bin", size, src_read, &src, waitr_cb, &w), 0);
    while (!w.done)
        event_base_loop(base, EVLOOP_ONCE);
    if (w.res.code)
        fprintf(stderr, "PUT: %s\n", w.res.message);
    assert_int_equal(w.res.code, 0);
    assert_int_equal(w.res.size, size);
    assert_true(strlen(w.res.version) > 0);
    char version[130];
    snprintf(version, sizeof(version), "%s", w.res.version);
    /* S3 has it, byte for byte */
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &direct), 0);
    unsigned char *back = malloc(size);
    s3_error err;
    s3_sync_get_args ga = {
        .bucket = bucket, .key = "wt/big.bin", .fd = -1, .buf = back, .cap = size, .parallel = 4};
    assert_int_equal(s3_sync_get(s, &ga, &err), (int64_t)size);
    assert_memory_equal(back, data, size);
    s3_sync_destroy(&s);
    cc_conn_destroy(&c);

    /* read it back through the cache: every block is there, S3 sees no GET */
    assert_int_equal(h_s3model_reset(model), 0);
    char members[64];
    snprintf(members, sizeof(members), "wt=127.0.0.1:%d", n.port);
    rcl_config rc = {.members = members};
    rcl_cluster *cl;
    char errs[256];
    assert_int_equal(rcl_create(&cl, base, &rc, errs, sizeof(errs)), 0);
    rcl_wait cw = {0};
    assert_int_equal(rcl_connect(cl, rcl_cb, &cw), 0);
    while (!cw.done)
        event_base_loop(base, EVLOOP_ONCE);
    assert_int_equal(cw.code, 0);
    memset(back, 0, size);
    rcl_object obj = {bucket, "wt/big.bin", version, size};
    rcl_wait rw = {0};
    assert_int_equal(rcl_read(cl, &obj, 0, size, back, NULL, rcl_cb, &rw), 0);
    while (!rw.done)
        event_base_loop(base, EVLOOP_ONCE);
    if (rw.code)
        fprintf(stderr, "read: %s\n", rw.msg);
    assert_int_equal(rw.code, 0);
    assert_memory_equal(back, data, size);
    assert_int_equal(h_s3model_count(model, "GET", NULL), 0);
    rcl_stats st;
    rcl_stats_get(cl, &st);
    assert_int_equal(st.from_s3, 0);
    rcl_destroy(&cl);
    event_base_loop(base, EVLOOP_NONBLOCK);
    free(back);
    free(data);
    stop_clean(&n);
}

static void test_tenants(void **state)
{
    (void)state;
    char tpath[600];
    h_env_path(env, tpath, sizeof(tpath), "tenants.conf");
    FILE *f = fopen(tpath, "w");
    assert_non_null(f);
    fprintf(f, "[tenant alpha]\ntoken = alpha-token-0123456789\n"
               "allow = s3://ringcache-test/alpha/\n");
    fclose(f);
    t_node n;
    const char *extra[] = {"--tenants", tpath, NULL};
    t_node_start(env, &n, "tn", h_s3model_endpoint(model), extra);
    char etag[S3_ETAG_MAX];
    put_direct("beta/secret", "shh", 3, etag);
    put_direct("alpha/ok", "fine", 4, etag);
    assert_int_equal(h_s3model_reset(model), 0);

    cc_conn *c = t_conn(base, &n, "alpha-token-0123456789");
    char buf[16];
    cc_result r = t_get(base, c, bucket, "beta/secret", "x", 3, 0, buf, sizeof(buf));
    assert_int_equal(r.code, -EREMOTEIO);
    assert_int_equal(r.rcp_code, RCP_E_FORBIDDEN);
    assert_non_null(strstr(r.message, "alpha"));
    assert_int_equal(h_s3model_stat(model, "requests"), 0); /* refused before S3 */
    r = t_get(base, c, bucket, "alpha/ok", etag, 4, 0, buf, sizeof(buf));
    assert_int_equal(r.code, 0);
    assert_memory_equal(buf, "fine", 4);
    assert_string_equal(cc_conn_hello(c)->tenant.p, "alpha");
    cc_conn_destroy(&c);

    /* a wrong token is refused at HELLO with a clear message */
    c = t_conn(base, &n, "not-a-token-at-all-xx");
    r = t_get(base, c, bucket, "alpha/ok", etag, 4, 0, buf, sizeof(buf));
    assert_int_equal(r.code, -EREMOTEIO);
    assert_int_equal(r.rcp_code, RCP_E_UNAUTHORIZED);
    assert_non_null(strstr(r.message, "token"));
    assert_null(strstr(r.message, "not-a-token")); /* never echoed */
    cc_conn_destroy(&c);
    event_base_loop(base, EVLOOP_NONBLOCK);
    stop_clean(&n);
}

/* ---- raw bytes --------------------------------------------------------------- */

static void test_bad_input_keeps_serving(void **state)
{
    (void)state;
    t_node n;
    t_node_start(env, &n, "bad", h_s3model_endpoint(model), NULL);
    char etag[S3_ETAG_MAX];
    put_direct("bad/obj", "hello world", 11, etag);
    uint8_t body[4096];
    rcp_header h;

    /* a corrupt header: one ERROR frame, then the connection closes */
    int fd = t_raw_connect(n.port);
    assert_int_equal(send(fd, "GARBAGE-GARBAGE-GARBAGE", 23, MSG_NOSIGNAL), 23);
    assert_int_equal(t_raw_recv_frame(fd, &h, body, sizeof(body)), 0);
    assert_int_equal(h.op, RCP_OP_ERROR);
    rcp_error e;
    assert_int_equal(rcp_parse_error(body, h.len, &e), 0);
    assert_int_equal(e.code, RCP_E_PROTOCOL);
    assert_int_equal(recv(fd, body, 1, 0), 0); /* closed */
    close(fd);

    /* an unknown opcode, a request before HELLO, a body that does not parse:
     * ERROR frames, and the connection stays usable */
    fd = t_raw_connect(n.port);
    t_raw_send(fd, RCP_OP_PING, 5, NULL, 0);
    assert_int_equal(t_raw_recv_frame(fd, &h, body, sizeof(body)), 0);
    assert_int_equal(h.op, RCP_OP_ERROR);
    assert_int_equal(rcp_parse_error(body, h.len, &e), 0);
    assert_int_equal(e.code, RCP_E_UNAUTHORIZED);
    t_raw_hello(fd, NULL);
    t_raw_send(fd, 99, 6, "xyz", 3);
    assert_int_equal(t_raw_recv_frame(fd, &h, body, sizeof(body)), 0);
    assert_int_equal(h.op, RCP_OP_ERROR);
    assert_int_equal(h.id, 6);
    assert_int_equal(rcp_parse_error(body, h.len, &e), 0);
    assert_int_equal(e.code, RCP_E_UNKNOWN_OP);
    t_raw_send(fd, RCP_OP_GET, 7, "\x01\x02", 2);
    assert_int_equal(t_raw_recv_frame(fd, &h, body, sizeof(body)), 0);
    assert_int_equal(rcp_parse_error(body, h.len, &e), 0);
    assert_int_equal(e.code, RCP_E_BAD_REQUEST);
    t_raw_send(fd, RCP_OP_PING, 8, NULL, 0);
    assert_int_equal(t_raw_recv_frame(fd, &h, body, sizeof(body)), 0);
    assert_int_equal(h.op, RCP_OP_PING);
    assert_int_equal(h.id, 8);
    /* a body longer than the limit: closed */
    uint8_t big[RCP_HEADER_SIZE];
    rcp_header hd = {RCP_OP_GET, 0, 9, 100u << 20};
    rcp_header_encode(&hd, big);
    assert_int_equal(send(fd, big, sizeof(big), MSG_NOSIGNAL), (ssize_t)sizeof(big));
    assert_int_equal(t_raw_recv_frame(fd, &h, body, sizeof(body)), 0);
    assert_int_equal(rcp_parse_error(body, h.len, &e), 0);
    assert_int_equal(e.code, RCP_E_PROTOCOL);
    close(fd);

    /* a client that vanishes in the middle of a frame and of a request */
    for (int i = 0; i < 20; i++) {
        fd = t_raw_connect(n.port);
        t_raw_hello(fd, NULL);
        uint8_t gb[512];
        rcp_get_req g = {{rcp_s(bucket), rcp_s("bad/obj"), rcp_s(etag), 11}, 0, 0, 0, 0};
        int k = rcp_encode_get_req(&g, gb, sizeof(gb));
        t_raw_send(fd, RCP_OP_GET, 1, gb, (size_t)k);
        uint8_t half[RCP_HEADER_SIZE];
        rcp_header hh = {RCP_OP_GET, 0, 2, 500};
        rcp_header_encode(&hh, half);
        send(fd, half, sizeof(half), MSG_NOSIGNAL);
        send(fd, gb, 10, MSG_NOSIGNAL);
        close(fd);
    }
    /* everyone else is still served */
    cc_conn *c = t_conn(base, &n, NULL);
    char buf[16];
    cc_result r = t_get(base, c, bucket, "bad/obj", etag, 11, 0, buf, sizeof(buf));
    if (r.code != 0)
        fprintf(stderr, "the GET after the vanished clients: %s (node's code %d)\n", r.message,
                (int)r.rcp_code);
    assert_int_equal(r.code, 0);
    assert_memory_equal(buf, "hello world", 11);
    assert_true(t_node_metric(&n, "ringcached_protocol_errors_total") >= 2);
    cc_conn_destroy(&c);
    event_base_loop(base, EVLOOP_NONBLOCK);
    stop_clean(&n);
}

static void test_pipelined_client_that_never_reads(void **state)
{
    (void)state;
    t_node n;
    t_node_start(env, &n, "bp", h_s3model_endpoint(model), NULL);
    size_t size = 1u << 20;
    unsigned char *data = t_alloc_data(size, 6);
    char etag[S3_ETAG_MAX];
    put_direct("bp/obj", data, size, etag);
    /* warm it */
    cc_conn *c = t_conn(base, &n, NULL);
    unsigned char *buf = malloc(size);
    assert_int_equal(t_get(base, c, bucket, "bp/obj", etag, size, 0, buf, size).code, 0);
    cc_conn_destroy(&c);
    event_base_loop(base, EVLOOP_NONBLOCK);
    int64_t rss0 = t_node_rss_kib(&n);

    int fd = t_raw_connect(n.port);
    t_raw_hello(fd, NULL);
    uint8_t gb[512];
    rcp_get_req g = {{rcp_s(bucket), rcp_s("bp/obj"), rcp_s(etag), size}, 0, 0, 0, 0};
    int k = rcp_encode_get_req(&g, gb, sizeof(gb));
    /* 10,000 GETs of 1 MiB each (10 GiB of answers), never read: the node must
     * stop reading this connection instead of buffering */
    struct timeval tv = {0, 200000};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int sent = 0;
    for (uint32_t i = 1; i <= 10000; i++) {
        uint8_t frame[RCP_HEADER_SIZE + 512];
        rcp_header hd = {RCP_OP_GET, 0, i, (uint32_t)k};
        rcp_header_encode(&hd, frame);
        memcpy(frame + RCP_HEADER_SIZE, gb, (size_t)k);
        ssize_t w = send(fd, frame, RCP_HEADER_SIZE + (size_t)k, MSG_NOSIGNAL);
        if (w < 0)
            break; /* the socket buffers are full: the node stopped reading */
        sent++;
    }
    sleep(1);
    int64_t rss1 = t_node_rss_kib(&n);
    fprintf(stderr, "pipelined %d GETs without reading: node RSS %lld -> %lld KiB\n", sent,
            (long long)rss0, (long long)rss1);
    /* bound: max-buffered (8 MiB) + socket buffers + a constant; far below the
     * gigabytes the answers would take */
    assert_true(rss1 - rss0 < 64 * 1024);
    /* the node still serves others meanwhile */
    c = t_conn(base, &n, NULL);
    assert_int_equal(t_get(base, c, bucket, "bp/obj", etag, size, 0, buf, size).code, 0);
    assert_memory_equal(buf, data, size);
    cc_conn_destroy(&c);
    event_base_loop(base, EVLOOP_NONBLOCK);
    close(fd);
    free(buf);
    free(data);
    stop_clean(&n);
}

/* ---- TLS ---------------------------------------------------------------------- */

static cc_conn *tls_conn(const t_node *n, const char *ca)
{
    cc_conn *c = NULL;
    cc_config cc = {"127.0.0.1", n->port, NULL, 0, "tls-test", 2000, 30000, true, ca, NULL};
    assert_int_equal(cc_conn_create(&c, base, &cc), 0);
    return c;
}

static void test_tls(void **state)
{
    (void)state;
    char cert[600], key[600], other_cert[600], other_key[600];
    h_env_path(env, cert, sizeof(cert), "node.crt");
    h_env_path(env, key, sizeof(key), "node.key");
    h_env_path(env, other_cert, sizeof(other_cert), "other.crt");
    h_env_path(env, other_key, sizeof(other_key), "other.key");
    assert_int_equal(h_make_cert(cert, key), 0);
    assert_int_equal(h_make_cert(other_cert, other_key), 0);
    t_node n;
    const char *extra[] = {"--tls-cert", cert, "--tls-key", key, NULL};
    t_node_start(env, &n, "tls", h_s3model_endpoint(model), extra);
    size_t size = (1u << 20) + 7;
    unsigned char *data = t_alloc_data(size, 8);
    char etag[S3_ETAG_MAX];
    put_direct("tls/obj", data, size, etag);

    /* the right CA: blocks flow, byte for byte */
    cc_conn *c = tls_conn(&n, cert);
    unsigned char *buf = malloc(1u << 20);
    for (uint64_t b = 0; b < 2; b++) {
        cc_result r = t_get(base, c, bucket, "tls/obj", etag, size, b, buf, 1u << 20);
        if (r.code)
            fprintf(stderr, "TLS GET: %s\n", r.message);
        assert_int_equal(r.code, 0);
        assert_memory_equal(buf, data + b * (1u << 20), r.bytes);
    }
    cc_conn_destroy(&c);

    /* a client trusting another CA: a clear error, not a hang */
    c = tls_conn(&n, other_cert);
    cc_result r = t_get(base, c, bucket, "tls/obj", etag, size, 0, buf, 1u << 20);
    fprintf(stderr, "wrong CA: %s\n", r.message);
    assert_int_equal(r.code, -EPROTO);
    assert_non_null(strstr(r.message, "TLS"));
    assert_non_null(strstr(r.message, "certificate verify failed"));
    cc_conn_destroy(&c);

    /* a plaintext client on the TLS port fails, it does not get data */
    c = t_conn(base, &n, NULL);
    r = t_get(base, c, bucket, "tls/obj", etag, size, 0, buf, 1u << 20);
    assert_true(r.code < 0);
    cc_conn_destroy(&c);
    event_base_loop(base, EVLOOP_NONBLOCK);

    /* the admin port speaks HTTPS with the same certificate: curl --cacert */
    char url[128], cmd[1400];
    snprintf(url, sizeof(url), "https://127.0.0.1:%d/healthz", n.admin_port);
    snprintf(cmd, sizeof(cmd), "curl -sS --cacert %s %s", cert, url);
    FILE *p = popen(cmd, "r");
    char out[64] = "";
    assert_non_null(p);
    size_t k = fread(out, 1, sizeof(out) - 1, p);
    out[k] = '\0';
    assert_int_equal(pclose(p), 0);
    assert_string_equal(out, "ok\n");
    snprintf(cmd, sizeof(cmd), "curl -sS --cacert %s %s 2>/dev/null", other_cert, url);
    p = popen(cmd, "r");
    k = fread(out, 1, sizeof(out) - 1, p);
    assert_int_not_equal(pclose(p), 0); /* curl refuses the certificate */
    free(buf);
    free(data);
    stop_clean(&n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_through_and_warm),
        cmocka_unit_test(test_read_through_sendfile),
        cmocka_unit_test(test_single_flight),
        cmocka_unit_test(test_version_changed),
        cmocka_unit_test(test_write_through_then_read_costs_no_get),
        cmocka_unit_test(test_tenants),
        cmocka_unit_test(test_bad_input_keeps_serving),
        cmocka_unit_test(test_pipelined_client_that_never_reads),
        cmocka_unit_test(test_tls),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
