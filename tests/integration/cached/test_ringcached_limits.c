/* SPDX-License-Identifier: Apache-2.0
 *
 * test_ringcached_limits.c: the cache node under hostile clients, each case a
 * real node behind the S3 model (which counts every S3 request):
 *  - block numbers past the object's end (2^44, 2^63: i * block_size wraps)
 *    are refused by GET, WARM and PUT_BLOCK, and nothing is stored or fetched;
 *  - a tenant allowed s3://bucket/src/ cannot leave it by dot segments
 *    (src/../wt/k01, src/./../x, src/#/../../x, %2e%2e...) against either
 *    s3rver: refused before any S3 request, by HEAD, GET, WARM and PUT;
 *  - PUT_BLOCK needs the peer token whenever one is set (a node with a peer
 *    token and no tenants took chosen bytes from anyone, and served them);
 *  - protected mode: without tenants the node listens on loopback only, and
 *    refuses a non-loopback --listen unless --allow-anonymous;
 *  - memory before HELLO: 500 connections each declaring a 1.1 MB HELLO and
 *    sending all but one byte; the frame and idle timeouts; --max-connections;
 *  - out of file descriptors (a node under prlimit --nofile=128 and 344
 *    connections): accepting pauses, the log stays short, CPU stays low;
 *  - one WARM cannot take the node down: 65,536 blocks are refused, a made-up
 *    64 GiB version starts nothing (HEAD first), fills in flight stay under
 *    --max-fills while another client's GETs are answered, and SIGTERM with
 *    fills in flight exits 0 within the drain timeout;
 *  - a GET cancelled while its fill runs, a write-through cancelled or cut off
 *    in its data, a PUT S3 refuses: each ends alone, uploads are aborted;
 *  - max-buffered is the bound: 20 connections pipelining GETs of SSD blocks
 *    and never reading cost about 20 x max-buffered, not 20 x 64 blocks;
 *  - every metric whose name ends in _total is declared a counter (the
 *    store's checksum failures were a gauge).
 */
#include "node_util.h"
#include "s3_test_util.h"

#include <errno.h>
#include <stdbool.h>
#include <event2/event.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

static h_env *env;
static h_s3 *s3;
static h_s3model *model;
static s3_config direct;
static const char *bucket = H_S3_DEFAULT_BUCKET;
static struct event_base *base;

static int setup(void **state)
{
    (void)state;
    if (h_env_create(&env, "test_ringcached_limits") < 0)
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

static void put_direct(const char *key, const void *data, size_t len, char etag[S3_ETAG_MAX])
{
    assert_int_equal(t_put_object(&direct, bucket, key, data, len, etag), 0);
}

static void stop_clean(t_node *n)
{
    assert_int_equal(h_proc_stop(n->proc, 15000), 0);
}

typedef struct {
    const char *data;
    size_t size, off;
} src_buf;

static int64_t src_read(void *buf, size_t cap, void *arg)
{
    src_buf *s = arg;
    size_t k = s->size - s->off < cap ? s->size - s->off : cap;
    memcpy(buf, s->data + s->off, k);
    s->off += k;
    return (int64_t)k;
}

/* ---- block numbers past the end ------------------------------------------ */

static void test_block_numbers_past_the_end(void **state)
{
    (void)state;
    t_node n;
    t_node_start(env, &n, "wrap", h_s3model_endpoint(model), NULL);
    size_t size = 5u << 20; /* five 1 MiB blocks */
    unsigned char *data = t_alloc_data(size, 71);
    char etag[S3_ETAG_MAX];
    put_direct("wrap/obj", data, size, etag);
    assert_int_equal(h_s3model_reset(model), 0);
    cc_conn *c = t_conn(base, &n, NULL);
    unsigned char *buf = malloc(1u << 20);
    /* 2^44 and 2^63 times 1 MiB wrap to 0; 2^44 + 2 to block 2 */
    const uint64_t bad[] = {5, 1ull << 44, (1ull << 44) + 2, 1ull << 63, UINT64_MAX};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cc_result r = t_get(base, c, bucket, "wrap/obj", etag, size, bad[i], buf, 1u << 20);
        fprintf(stderr, "GET block %llu: code %d rcp %d bytes %u: %s\n", (unsigned long long)bad[i],
                r.code, r.rcp_code, r.bytes, r.message);
        assert_int_equal(r.code, -EREMOTEIO);
        assert_int_equal(r.rcp_code, RCP_E_BAD_REQUEST);
    }
    /* WARM of the same blocks starts nothing */
    rcp_object obj = {rcp_s(bucket), rcp_s("wrap/obj"), rcp_s(etag), size};
    t_wait w = {0};
    cc_result r = t_wait_run(base, &w, cc_warm(c, &obj, bad, 5, t_done, &w));
    assert_int_equal(r.code, 0);
    assert_int_equal(r.count, 0);
    /* PUT_BLOCK of block 2^44 with block 0's length is refused */
    rcp_put_block_req pb = {rcp_s(""), obj, 1ull << 44, data, 1u << 20};
    memset(&w, 0, sizeof(w));
    r = t_wait_run(base, &w, cc_put_block(c, &pb, t_done, &w));
    fprintf(stderr, "PUT_BLOCK block 2^44: code %d rcp %d: %s\n", r.code, r.rcp_code, r.message);
    assert_int_equal(r.code, -EREMOTEIO);
    assert_int_equal(r.rcp_code, RCP_E_BAD_REQUEST);
    event_base_loop(base, EVLOOP_NONBLOCK);
    sleep(1); /* a wrongly started fill would have reached S3 by now */
    assert_int_equal(h_s3model_count(model, "GET", NULL), 0);
    assert_int_equal(t_node_metric(&n, "ringcached_blocks_stored"), 0);
    /* the real blocks still read right */
    r = t_get(base, c, bucket, "wrap/obj", etag, size, 4, buf, 1u << 20);
    assert_int_equal(r.code, 0);
    assert_memory_equal(buf, data + (4u << 20), 1u << 20);
    cc_conn_destroy(&c);
    event_base_loop(base, EVLOOP_NONBLOCK);
    free(buf);
    free(data);
    stop_clean(&n);
}

/* ---- dot segments ---------------------------------------------------------- */

static void escape_against(int version)
{
    char name[32];
    snprintf(name, sizeof(name), "s3rver-v%d", version);
    h_s3_opts o = {.version = version, .name = name};
    h_s3 *srv = NULL;
    int rc = h_s3_start(env, &srv, &o);
    if (rc == -ENOPKG) {
        fprintf(stderr, "s3rver %d is not installed: %s\n", version, h_last_error());
        return;
    }
    assert_int_equal(rc, 0);
    s3_config cfg;
    t_s3_config(&cfg, h_s3_endpoint(srv), NULL, NULL);
    s3_sync *sy;
    assert_int_equal(s3_sync_create(&sy, &cfg), 0);
    s3_error err;
    char etag[S3_ETAG_MAX], etag_src[S3_ETAG_MAX];
    s3_sync_put_args pa = {
        .bucket = bucket, .key = "wt/k01", .fd = -1, .data = "SECRET-wt", .size = 9};
    assert_int_equal(s3_sync_put(sy, &pa, etag, &err), 0);
    pa.key = "src/k00";
    pa.data = "public-src";
    pa.size = 10;
    assert_int_equal(s3_sync_put(sy, &pa, etag_src, &err), 0);
    /* what the server does with the dots when asked directly */
    char got[64] = "";
    s3_sync_get_args ga = {
        .bucket = bucket, .key = "src/../wt/k01", .fd = -1, .buf = got, .cap = sizeof(got) - 1};
    int64_t k = s3_sync_get(sy, &ga, &err);
    fprintf(stderr, "s3rver %d, GET src/../wt/k01 straight from S3: %lld bytes%s\n", version,
            (long long)k, k == 9 && memcmp(got, "SECRET-wt", 9) == 0 ? " (wt/k01's)" : "");
    s3_sync_destroy(&sy);

    char tpath[600];
    h_env_path(env, tpath, sizeof(tpath), "tenants-src.conf");
    FILE *f = fopen(tpath, "w");
    assert_non_null(f);
    fprintf(f, "[tenant src]\ntoken = src-token-0123456789\nallow = s3://%s/src/\n", bucket);
    fclose(f);
    t_node n;
    const char *extra[] = {"--tenants", tpath, NULL};
    char nname[32];
    snprintf(nname, sizeof(nname), "esc-v%d", version);
    t_node_start(env, &n, nname, h_s3_endpoint(srv), extra);
    cc_conn *c = t_conn(base, &n, "src-token-0123456789");
    const char *keys[] = {"src/../wt/k01",     "src/./../wt/k01",      "src/#/../../wt/k01",
                          "src/%2e%2e/wt/k01", "src/%2E%2e/wt/k01",    "src/.%2e/wt/k01",
                          "src/..%2Fwt/k01",   "src/%252e%252e/wt/k01"};
    char buf[64];
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        t_wait w = {0};
        cc_result r = t_wait_run(base, &w, cc_head(c, bucket, keys[i], t_done, &w));
        fprintf(stderr, "s3rver %d, HEAD %s as tenant src: code %d rcp %d size %llu: %s\n", version,
                keys[i], r.code, r.rcp_code, (unsigned long long)r.size, r.message);
        assert_int_equal(r.code, -EREMOTEIO);
        assert_int_equal(r.rcp_code, RCP_E_FORBIDDEN);
        r = t_get(base, c, bucket, keys[i], etag, 9, 0, buf, sizeof(buf));
        assert_int_equal(r.rcp_code, RCP_E_FORBIDDEN);
        assert_non_null(strstr(r.message, "segment"));
        rcp_object obj = {rcp_s(bucket), rcp_s(keys[i]), rcp_s(etag), 9};
        uint64_t b0 = 0;
        memset(&w, 0, sizeof(w));
        r = t_wait_run(base, &w, cc_warm(c, &obj, &b0, 1, t_done, &w));
        assert_int_equal(r.rcp_code, RCP_E_FORBIDDEN);
    }
    /* a write to an escaping key is refused too */
    src_buf sb = {"overwrite", 9, 0};
    t_wait w = {0};
    cc_result r =
        t_wait_run(base, &w, cc_put(c, bucket, "src/../wt/k01", 9, src_read, &sb, t_done, &w));
    assert_int_equal(r.rcp_code, RCP_E_FORBIDDEN);
    /* what the tenant may read still reads */
    r = t_get(base, c, bucket, "src/k00", etag_src, 10, 0, buf, sizeof(buf));
    assert_int_equal(r.code, 0);
    assert_memory_equal(buf, "public-src", 10);
    assert_int_equal(t_node_metric(&n, "ringcached_s3_get_requests_total"), 1);
    cc_conn_destroy(&c);
    event_base_loop(base, EVLOOP_NONBLOCK);
    stop_clean(&n);
    assert_int_equal(h_proc_stop(h_s3_proc(srv), 5000), 0);
}

static void test_dot_segments_do_not_escape(void **state)
{
    (void)state;
    escape_against(3);
    escape_against(5);
}

/* ---- PUT_BLOCK and the peer token ------------------------------------------ */

static char *read_log(const t_node *n)
{
    FILE *f = fopen(h_proc_log_path(n->proc), "r");
    assert_non_null(f);
    static char text[1 << 16];
    size_t k = fread(text, 1, sizeof(text) - 1, f);
    text[k] = '\0';
    fclose(f);
    return text;
}

static cc_result put_block(cc_conn *c, const rcp_object *obj, uint64_t block, const void *data,
                           uint32_t len)
{
    rcp_put_block_req pb = {rcp_s(""), *obj, block, data, len};
    t_wait w = {0};
    return t_wait_run(base, &w, cc_put_block(c, &pb, t_done, &w));
}

static void test_put_block_needs_the_peer_token(void **state)
{
    (void)state;
    t_node n;
    const char *extra[] = {"--peer-token", "peer-secret-0123456789", NULL};
    t_node_start(env, &n, "poison", h_s3model_endpoint(model), extra);
    size_t size = 100000;
    unsigned char *data = t_alloc_data(size, 72), *evil = t_alloc_data(size, 73);
    char etag[S3_ETAG_MAX];
    put_direct("poison/obj", data, size, etag);
    rcp_object obj = {rcp_s(bucket), rcp_s("poison/obj"), rcp_s(etag), size};
    /* no token, and a wrong one: refused, nothing stored */
    const char *tokens[] = {NULL, "peer-secret-0123456788", "peer-secret-01234567890"};
    for (size_t i = 0; i < 3; i++) {
        cc_conn *c = t_conn(base, &n, tokens[i]);
        cc_result r = put_block(c, &obj, 0, evil, (uint32_t)size);
        fprintf(stderr, "PUT_BLOCK with token %s: code %d rcp %d: %s\n",
                tokens[i] ? tokens[i] : "(none)", r.code, r.rcp_code, r.message);
        assert_int_equal(r.code, -EREMOTEIO);
        assert_int_equal(r.rcp_code, RCP_E_FORBIDDEN);
        assert_non_null(strstr(r.message, "peer token"));
        cc_conn_destroy(&c);
        event_base_loop(base, EVLOOP_NONBLOCK);
    }
    assert_int_equal(t_node_metric(&n, "ringcached_blocks_stored"), 0);
    /* readers get S3's bytes */
    cc_conn *c = t_conn(base, &n, NULL);
    unsigned char *buf = malloc(size);
    cc_result r = t_get(base, c, bucket, "poison/obj", etag, size, 0, buf, size);
    assert_int_equal(r.code, 0);
    assert_memory_equal(buf, data, size);
    cc_conn_destroy(&c);
    /* the peer token is taken */
    c = t_conn(base, &n, "peer-secret-0123456789");
    rcp_object obj2 = {rcp_s(bucket), rcp_s("poison/other"), rcp_s("v1"), size};
    r = put_block(c, &obj2, 0, data, (uint32_t)size);
    assert_int_equal(r.code, 0);
    cc_conn_destroy(&c);
    event_base_loop(base, EVLOOP_NONBLOCK);
    free(buf);
    free(data);
    free(evil);
    stop_clean(&n);
}

static void test_protected_mode(void **state)
{
    (void)state;
    t_node n;
    /* no --listen, no tenants: loopback only, said at start-up */
    const char *dflt[] = {"--listen", "", NULL};
    t_node_start(env, &n, "prot", h_s3model_endpoint(model), dflt);
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/config", n.admin_port);
    h_http_resp hr = {0};
    assert_int_equal(h_http_get(url, &hr), 200);
    assert_non_null(strstr(hr.body, "listen = 127.0.0.1\n"));
    h_http_resp_deinit(&hr);
    assert_non_null(strstr(read_log(&n), "protected mode"));
    stop_clean(&n);

    /* an explicit 0.0.0.0 without tenants: refused with the fix */
    const char *open_listen[] = {"--listen", "0.0.0.0", NULL};
    assert_true(t_node_try_start(env, &n, "prot-open", h_s3model_endpoint(model), open_listen) < 0);
    char path[600];
    h_env_path(env, path, sizeof(path), "prot-open.log");
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char text[4096];
    size_t k = fread(text, 1, sizeof(text) - 1, f);
    text[k] = '\0';
    fclose(f);
    fprintf(stderr, "--listen 0.0.0.0: %s", text);
    assert_non_null(strstr(text, "--allow-anonymous"));
    assert_non_null(strstr(text, "--tenants"));

    /* --allow-anonymous: every address, said as a warning */
    const char *anon[] = {"--listen", "", "--allow-anonymous", NULL};
    t_node_start(env, &n, "prot-anon", h_s3model_endpoint(model), anon);
    memset(&hr, 0, sizeof(hr));
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/config", n.admin_port);
    assert_int_equal(h_http_get(url, &hr), 200);
    assert_non_null(strstr(hr.body, "listen = 0.0.0.0\n"));
    h_http_resp_deinit(&hr);
    assert_non_null(strstr(read_log(&n), "anonymous clients allowed"));
    stop_clean(&n);
}

/* ---- connections ------------------------------------------------------------ */

/* The next frame's error code (or -1 when the connection closed or timed out
 * first), and whether the connection is closed right after it. */
static int next_error(int fd, bool *closed_after)
{
    rcp_header h;
    uint8_t body[2048];
    int rc = t_raw_recv_frame(fd, &h, body, sizeof(body));
    if (rc < 0 || h.op != RCP_OP_ERROR)
        return -1;
    rcp_error e;
    if (rcp_parse_error(body, h.len, &e) < 0)
        return -1;
    fprintf(stderr, "  error %d: %.*s\n", e.code, (int)e.message.len, e.message.p);
    if (closed_after)
        *closed_after = recv(fd, body, 1, 0) == 0;
    return e.code;
}

static void test_memory_before_hello(void **state)
{
    (void)state;
    t_node n;
    const char *extra[] = {"--frame-timeout", "1s", "--idle-timeout", "1s", NULL};
    t_node_start(env, &n, "prehello", h_s3model_endpoint(model), extra);
    int64_t rss0 = t_node_rss_kib(&n);
    enum { N = 500, DECLARED = 1100000 };
    static int fds[N];
    uint8_t *body = calloc(1, DECLARED);
    int64_t t0 = h_now_ms();
    for (int i = 0; i < N; i++) {
        fds[i] = t_raw_connect(n.port);
        struct timeval tv = {0, 200000};
        setsockopt(fds[i], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        uint8_t hb[RCP_HEADER_SIZE];
        rcp_header hd = {RCP_OP_HELLO, 0, 0, DECLARED};
        rcp_header_encode(&hd, hb);
        send(fds[i], hb, sizeof(hb), MSG_NOSIGNAL);
        size_t off = 0;
        while (off < DECLARED - 1) {
            ssize_t k = send(fds[i], body + off, DECLARED - 1 - off, MSG_NOSIGNAL);
            if (k <= 0)
                break; /* the node closed it, or stopped reading */
            off += (size_t)k;
        }
    }
    int64_t rss1 = t_node_rss_kib(&n);
    for (int i = 0; i < N; i++)
        close(fds[i]);
    sleep(1);
    int64_t rss2 = t_node_rss_kib(&n);
    fprintf(stderr,
            "%d connections declaring a %d-byte HELLO, all but one byte sent (%lld ms): node RSS "
            "%lld -> %lld KiB, %lld KiB after they closed\n",
            N, DECLARED, (long long)(h_now_ms() - t0), (long long)rss0, (long long)rss1,
            (long long)rss2);
    free(body);
    assert_true(rss1 - rss0 < 64 * 1024);
    assert_true(rss2 - rss0 < 64 * 1024);

    /* a frame over the HELLO limit before HELLO: refused at its header */
    int fd = t_raw_connect(n.port);
    t_raw_send(fd, RCP_OP_HELLO, 0, NULL, 0); /* a header alone cannot say more */
    close(fd);
    fd = t_raw_connect(n.port);
    uint8_t hb[RCP_HEADER_SIZE];
    rcp_header hd = {RCP_OP_HELLO, 0, 0, RCP_MAX_HELLO_BODY + 1};
    rcp_header_encode(&hd, hb);
    assert_int_equal(send(fd, hb, sizeof(hb), MSG_NOSIGNAL), (ssize_t)sizeof(hb));
    bool closed = false;
    assert_int_equal(next_error(fd, &closed), RCP_E_PROTOCOL);
    assert_true(closed);
    close(fd);
    /* half a header, and no HELLO at all: closed by the frame timeout */
    fd = t_raw_connect(n.port);
    assert_int_equal(send(fd, hb, 10, MSG_NOSIGNAL), 10);
    assert_int_equal(next_error(fd, &closed), RCP_E_TIMEOUT);
    assert_true(closed);
    close(fd);
    fd = t_raw_connect(n.port);
    assert_int_equal(next_error(fd, &closed), RCP_E_TIMEOUT);
    assert_true(closed);
    close(fd);
    /* HELLO, then half a frame: the frame timeout; then nothing: the idle one */
    fd = t_raw_connect(n.port);
    t_raw_hello(fd, NULL);
    rcp_header hg = {RCP_OP_GET, 0, 1, 100};
    rcp_header_encode(&hg, hb);
    assert_int_equal(send(fd, hb, sizeof(hb), MSG_NOSIGNAL), (ssize_t)sizeof(hb));
    assert_int_equal(next_error(fd, &closed), RCP_E_TIMEOUT);
    close(fd);
    fd = t_raw_connect(n.port);
    t_raw_hello(fd, NULL);
    assert_int_equal(next_error(fd, &closed), RCP_E_TIMEOUT);
    assert_true(closed);
    close(fd);
    assert_true(t_node_metric(&n, "ringcached_connections_timed_out_total") >= 4);
    stop_clean(&n);
}

static void test_max_connections(void **state)
{
    (void)state;
    t_node n;
    const char *extra[] = {"--max-connections", "8", "--threads", "2", NULL};
    t_node_start(env, &n, "maxconn", h_s3model_endpoint(model), extra);
    int fds[8];
    for (int i = 0; i < 8; i++) {
        fds[i] = t_raw_connect(n.port);
        t_raw_hello(fds[i], NULL);
    }
    int fd = t_raw_connect(n.port);
    bool closed = false;
    assert_int_equal(next_error(fd, &closed), RCP_E_BUSY);
    assert_true(closed);
    close(fd);
    assert_int_equal(t_node_metric(&n, "ringcached_connections_refused_total"), 1);
    close(fds[0]);
    /* a slot is free again once the node has seen the close */
    int ok = 0;
    for (int tries = 0; tries < 50 && !ok; tries++) {
        usleep(100000);
        fd = t_raw_connect(n.port);
        uint8_t b[512];
        rcp_hello_req hq = {1, 1, rcp_s(""), 0, rcp_s("raw")};
        int k = rcp_encode_hello_req(&hq, b, sizeof(b));
        t_raw_send(fd, RCP_OP_HELLO, 0, b, (size_t)k);
        rcp_header h;
        ok = t_raw_recv_frame(fd, &h, b, sizeof(b)) == 0 && h.op == RCP_OP_HELLO;
        close(fd);
    }
    assert_true(ok);
    for (int i = 1; i < 8; i++)
        close(fds[i]);
    stop_clean(&n);
}

static int count_lines(const char *text, const char *needle)
{
    int k = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p++)
        k++;
    return k;
}

static void test_out_of_descriptors(void **state)
{
    (void)state;
    t_node n;
    /* more connections allowed than descriptors: accept itself fails */
    const char *extra[] = {"--max-connections", "100000", "--threads", "2",
                           "--s3-connections",  "4",      NULL};
    const char *wrap[] = {"prlimit", "--nofile=128:128", NULL};
    if (t_node_try_start_wrapped(env, &n, "nofd", h_s3model_endpoint(model), extra, wrap) < 0) {
        fprintf(stderr, "cannot start a node under prlimit: %s\n", h_last_error());
        fail();
    }
    enum { N = 344 };
    static int fds[N];
    for (int i = 0; i < N; i++)
        fds[i] = h_tcp_connect(n.port, 2000); /* the backlog takes what accept does not */
    double cpu0 = h_pid_cpu_s(h_proc_pid(n.proc));
    sleep(3);
    double cpu1 = h_pid_cpu_s(h_proc_pid(n.proc));
    int lines = count_lines(read_log(&n), "cannot accept");
    int64_t errors = t_node_metric(&n, "ringcached_accept_errors_total");
    fprintf(stderr,
            "%d connections to a node limited to 128 descriptors: %.2f CPU-seconds in 3 s, %d "
            "log lines, %lld accept errors counted\n",
            N, cpu1 - cpu0, lines, (long long)errors);
    assert_true(errors > 0);
    assert_true(lines >= 1 && lines <= 3);
    assert_true(cpu1 - cpu0 < 1.0);
    for (int i = 0; i < N; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    /* descriptors free again: new clients are served */
    sleep(1);
    cc_conn *c = t_conn(base, &n, NULL);
    t_wait w = {0};
    cc_result r = t_wait_run(base, &w, cc_ping(c, t_done, &w));
    assert_int_equal(r.code, 0);
    cc_conn_destroy(&c);
    event_base_loop(base, EVLOOP_NONBLOCK);
    stop_clean(&n);
}

/* ---- WARM and fills ------------------------------------------------------------ */

static cc_result warm(cc_conn *c, const char *key, const char *version, uint64_t size,
                      uint32_t n_blocks)
{
    uint64_t *blocks = malloc(n_blocks * sizeof(uint64_t));
    for (uint32_t i = 0; i < n_blocks; i++)
        blocks[i] = i;
    rcp_object obj = {rcp_s(bucket), rcp_s(key), rcp_s(version), size};
    t_wait w = {0};
    cc_result r = t_wait_run(base, &w, cc_warm(c, &obj, blocks, n_blocks, t_done, &w));
    free(blocks);
    return r;
}

static void test_warm_cannot_take_the_node_down(void **state)
{
    (void)state;
    t_node n;
    const char *extra[] = {"--max-fills", "8", "--drain-timeout", "1s", "--threads", "2", NULL};
    t_node_start(env, &n, "warm", h_s3model_endpoint(model), extra);
    enum { BLOCKS = 32 };
    size_t size = (size_t)BLOCKS << 20;
    unsigned char *data = t_alloc_data(size, 75);
    char etag[S3_ETAG_MAX], etag2[S3_ETAG_MAX];
    put_direct("warm/obj", data, size, etag);
    put_direct("warm/other", data, 1u << 20, etag2);
    assert_int_equal(h_s3model_reset(model), 0);
    int64_t rss0 = t_node_rss_kib(&n);
    cc_conn *c = t_conn(base, &n, NULL);
    /* 65,536 blocks of a made-up 64 GiB object: refused at once */
    cc_result r = warm(c, "warm/obj", "made-up", 64ull << 30, 65536);
    fprintf(stderr, "WARM of 65,536 blocks: code %d rcp %d: %s\n", r.code, r.rcp_code, r.message);
    assert_int_equal(r.rcp_code, RCP_E_TOO_LARGE);
    /* 1,024 of them: S3's HEAD says the object is not that: nothing starts */
    r = warm(c, "warm/obj", "made-up", 64ull << 30, 1024);
    fprintf(stderr, "WARM of 1,024 blocks of a made-up version: rcp %d: %s\n", r.rcp_code,
            r.message);
    assert_int_equal(r.rcp_code, RCP_E_VERSION_CHANGED);
    assert_int_equal(h_s3model_count(model, "GET", NULL), 0);
    assert_int_equal(t_node_metric(&n, "ringcached_s3_get_requests_total"), 0);

    /* the real object, with S3 slow: WARM takes at most half of --max-fills */
    assert_int_equal(h_s3model_config(model, 1500, -1), 0);
    r = warm(c, "warm/obj", etag, size, BLOCKS);
    fprintf(stderr, "WARM of %d real blocks with --max-fills 8: %u fills started\n", BLOCKS,
            r.count);
    assert_int_equal(r.code, 0);
    assert_true(r.count >= 1 && r.count <= 4);
    /* another client's GET is still answered, and right */
    cc_conn *c2 = t_conn(base, &n, NULL);
    unsigned char *buf = malloc(1u << 20);
    r = t_get(base, c2, bucket, "warm/other", etag2, 1u << 20, 0, buf, 1u << 20);
    assert_int_equal(r.code, 0);
    assert_memory_equal(buf, data, 1u << 20);
    int64_t rss1 = t_node_rss_kib(&n);
    assert_true(rss1 - rss0 < 128 * 1024);
    /* GETs of cold blocks while fills are in flight, then SIGTERM: the drain
     * deadline (1 s) holds though S3 answers in 1.5 s */
    unsigned char *bufs[6];
    t_wait ws[6];
    memset(ws, 0, sizeof(ws));
    for (int i = 0; i < 6; i++) {
        bufs[i] = malloc(1u << 20);
        rcp_get_req g = {{rcp_s(bucket), rcp_s("warm/obj"), rcp_s(etag), size},
                         (uint64_t)(BLOCKS - 1 - i),
                         0,
                         0,
                         0};
        assert_int_equal(cc_get(c2, &g, bufs[i], 1u << 20, t_done, &ws[i], NULL), 0);
    }
    event_base_loop(base, EVLOOP_NONBLOCK);
    usleep(300000);
    int64_t t0 = h_now_ms();
    int status = h_proc_stop(n.proc, 6000);
    fprintf(stderr,
            "SIGTERM with fills in flight, drain timeout 1 s: exit %d after %lld ms; "
            "RSS %lld -> %lld KiB\n",
            status, (long long)(h_now_ms() - t0), (long long)rss0, (long long)rss1);
    assert_int_equal(status, 0);
    assert_int_equal(h_s3model_config(model, 0, -1), 0);
    cc_conn_destroy(&c);
    cc_conn_destroy(&c2);
    event_base_loop(base, EVLOOP_NONBLOCK);
    for (int i = 0; i < 6; i++)
        free(bufs[i]);
    free(buf);
    free(data);
}

/* ---- cancel and close in the middle of a request ------------------------------- */

/* Reads frames until the last one of request id; skips other requests'.
 * Returns its op; *code is an ERROR's code, *bytes the data of a GET answer. */
static uint8_t raw_answer(int fd, uint32_t id, int *code, size_t *bytes)
{
    static uint8_t body[2u << 20];
    *code = 0;
    *bytes = 0;
    bool first = true;
    for (;;) {
        rcp_header h;
        assert_int_equal(t_raw_recv_frame(fd, &h, body, sizeof(body)), 0);
        if (h.id != id)
            continue;
        if (h.op == RCP_OP_ERROR) {
            rcp_error e;
            assert_int_equal(rcp_parse_error(body, h.len, &e), 0);
            fprintf(stderr, "  request %u: error %d: %.*s\n", id, e.code, (int)e.message.len,
                    e.message.p);
            *code = e.code;
            return h.op;
        }
        if (h.op == RCP_OP_GET) {
            *bytes += h.len - (first ? RCP_GET_RESP_HEAD_SIZE : 0);
            first = false;
        }
        if (!(h.flags & RCP_F_MORE))
            return h.op;
    }
}

static void raw_get(int fd, uint32_t id, const char *key, const char *etag, uint64_t size,
                    uint64_t block)
{
    uint8_t b[1200];
    rcp_get_req g = {{rcp_s(bucket), rcp_s(key), rcp_s(etag), size}, block, 0, 0, 0};
    int k = rcp_encode_get_req(&g, b, sizeof(b));
    assert_true(k > 0);
    t_raw_send(fd, RCP_OP_GET, id, b, (size_t)k);
}

static void raw_put(int fd, uint32_t id, const char *bkt, const char *key, uint64_t size)
{
    uint8_t b[1200];
    rcp_put_req pr = {rcp_s(bkt), rcp_s(key), size};
    int k = rcp_encode_put_req(&pr, b, sizeof(b));
    assert_true(k > 0);
    t_raw_send(fd, RCP_OP_PUT, id, b, (size_t)k);
}

static void raw_put_data(int fd, uint32_t id, const void *data, size_t len, bool more)
{
    uint8_t h[RCP_HEADER_SIZE];
    rcp_header hd = {RCP_OP_PUT_DATA, more ? RCP_F_MORE : 0, id, (uint32_t)len};
    rcp_header_encode(&hd, h);
    assert_int_equal(send(fd, h, sizeof(h), MSG_NOSIGNAL), (ssize_t)sizeof(h));
    assert_int_equal(send(fd, data, len, MSG_NOSIGNAL), (ssize_t)len);
}

static void raw_cancel(int fd, uint32_t target)
{
    uint8_t b[8];
    int k = rcp_encode_cancel_req(target, b, sizeof(b));
    t_raw_send(fd, RCP_OP_CANCEL, 0, b, (size_t)k);
}

/* A request cancelled or whose connection closes while it waits for S3
 * ends without harm to the others: a GET cancelled while its fill runs
 * answers CANCELED, and the fill still answers the other GET waiting for it;
 * a write-through PUT cancelled (or its connection closed) in the middle of
 * its data is aborted at S3 (its multipart upload aborted, no object); a PUT
 * S3 refuses answers S3's error and the connection goes on. The node stays
 * up and exits clean (under ASan: no use after free, no leak). */
static void test_cancel_and_close_mid_request(void **state)
{
    (void)state;
    t_node n;
    const char *extra[] = {"--threads", "1", "--part-size", "5MiB", NULL};
    t_node_start(env, &n, "cancel", h_s3model_endpoint(model), extra);
    size_t size = 4u << 20;
    unsigned char *data = t_alloc_data(size, 91);
    char etag[S3_ETAG_MAX];
    put_direct("cancel/obj", data, size, etag);
    assert_int_equal(h_s3model_reset(model), 0);
    assert_int_equal(h_s3model_config(model, 700, -1), 0); /* S3 slow: requests wait */

    /* two GETs of one cold block on two connections; the first is cancelled */
    int a = t_raw_connect(n.port), b = t_raw_connect(n.port);
    t_raw_hello(a, NULL);
    t_raw_hello(b, NULL);
    raw_get(a, 1, "cancel/obj", etag, size, 0);
    usleep(100000);
    raw_get(b, 2, "cancel/obj", etag, size, 0);
    usleep(100000);
    raw_cancel(a, 1);
    int code;
    size_t bytes;
    assert_int_equal(raw_answer(a, 1, &code, &bytes), RCP_OP_ERROR);
    assert_int_equal(code, RCP_E_CANCELED);
    assert_int_equal(raw_answer(b, 2, &code, &bytes), RCP_OP_GET);
    assert_int_equal(bytes, 1u << 20);
    assert_int_equal(h_s3model_count(model, "GET", "/" H_S3_DEFAULT_BUCKET "/cancel/obj"), 1);

    /* a multipart write-through cancelled in its data, another whose
     * connection closes in its data */
    size_t put_size = 12u << 20, piece = 1u << 20;
    raw_put(a, 3, bucket, "cancel/put3", put_size);
    raw_put_data(a, 3, data, piece, true);
    raw_cancel(a, 3);
    assert_int_equal(raw_answer(a, 3, &code, &bytes), RCP_OP_ERROR);
    assert_int_equal(code, RCP_E_CANCELED);
    raw_put(b, 4, bucket, "cancel/put4", put_size);
    raw_put_data(b, 4, data, piece, true);
    usleep(100000);
    close(b);

    /* a PUT S3 refuses (no such bucket): S3's error, and the connection goes on */
    assert_int_equal(h_s3model_config(model, 0, -1), 0);
    raw_put(a, 5, "no-such-bucket-here", "x", 10);
    raw_put_data(a, 5, data, 10, false);
    assert_int_equal(raw_answer(a, 5, &code, &bytes), RCP_OP_ERROR);
    assert_true(code == RCP_E_NOT_FOUND || code == RCP_E_S3);
    t_raw_send(a, RCP_OP_PING, 6, NULL, 0);
    assert_int_equal(raw_answer(a, 6, &code, &bytes), RCP_OP_PING);
    /* the block the cancelled GET asked for was stored by the fill it left */
    raw_get(a, 7, "cancel/obj", etag, size, 0);
    assert_int_equal(raw_answer(a, 7, &code, &bytes), RCP_OP_GET);
    assert_int_equal(bytes, 1u << 20);
    assert_int_equal(h_s3model_count(model, "GET", "/" H_S3_DEFAULT_BUCKET "/cancel/obj"), 1);

    /* both uploads are aborted at S3 once it has said their ids */
    int64_t deadline = h_now_ms() + 10000;
    while (h_s3model_count(model, "DELETE", NULL) < 2 && h_now_ms() < deadline)
        usleep(50000);
    fprintf(stderr, "multipart uploads aborted: %lld\n",
            (long long)h_s3model_count(model, "DELETE", NULL));
    assert_int_equal(h_s3model_count(model, "DELETE", NULL), 2);
    s3_sync *sy;
    assert_int_equal(s3_sync_create(&sy, &direct), 0);
    s3_object_info info;
    s3_error err;
    assert_int_equal(s3_sync_head(sy, bucket, "cancel/put3", &info, &err), -ENOENT);
    assert_int_equal(s3_sync_head(sy, bucket, "cancel/put4", &info, &err), -ENOENT);
    s3_sync_destroy(&sy);
    assert_true(t_node_metric(&n, "ringcached_cancels_total") >= 2);
    close(a);
    free(data);
    stop_clean(&n);
}

/* ---- max-buffered ------------------------------------------------------------ */

static void test_max_buffered_is_the_bound(void **state)
{
    (void)state;
    t_node n;
    /* no RAM tier: every hit is an SSD read into a buffer of its own */
    const char *extra[] = {"--max-buffered", "2MiB", "--ram-capacity", "0", "--threads", "2", NULL};
    t_node_start(env, &n, "maxbuf", h_s3model_endpoint(model), extra);
    enum { BLOCKS = 32, CONNS = 20 };
    size_t size = (size_t)BLOCKS << 20;
    unsigned char *data = t_alloc_data(size, 74);
    char etag[S3_ETAG_MAX];
    put_direct("maxbuf/obj", data, size, etag);
    cc_conn *c = t_conn(base, &n, NULL);
    unsigned char *buf = malloc(1u << 20);
    for (uint64_t b = 0; b < BLOCKS; b++)
        assert_int_equal(t_get(base, c, bucket, "maxbuf/obj", etag, size, b, buf, 1u << 20).code,
                         0);
    cc_conn_destroy(&c);
    event_base_loop(base, EVLOOP_NONBLOCK);
    sleep(1); /* the fills' writes land */
    int64_t rss0 = t_node_rss_kib(&n);
    int fds[CONNS];
    int sent = 0;
    for (int k = 0; k < CONNS; k++) {
        fds[k] = t_raw_connect(n.port);
        int rcv = 4096;
        setsockopt(fds[k], SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
        t_raw_hello(fds[k], NULL);
        struct timeval tv = {0, 100000};
        setsockopt(fds[k], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        for (uint32_t i = 1; i <= 64; i++) {
            uint8_t frame[RCP_HEADER_SIZE + 512];
            rcp_get_req g = {
                {rcp_s(bucket), rcp_s("maxbuf/obj"), rcp_s(etag), size}, (i - 1) % BLOCKS, 0, 0, 0};
            int len = rcp_encode_get_req(&g, frame + RCP_HEADER_SIZE, 512);
            rcp_header hd = {RCP_OP_GET, 0, i, (uint32_t)len};
            rcp_header_encode(&hd, frame);
            if (send(fds[k], frame, RCP_HEADER_SIZE + (size_t)len, MSG_NOSIGNAL) < 0)
                break;
            sent++;
        }
    }
    sleep(2);
    int64_t rss1 = t_node_rss_kib(&n);
    fprintf(stderr,
            "%d connections, %d pipelined 1 MiB GETs never read, max-buffered 2 MiB: node RSS "
            "%lld -> %lld KiB (+%lld MiB)\n",
            CONNS, sent, (long long)rss0, (long long)rss1, (long long)(rss1 - rss0) / 1024);
    /* per connection: max-buffered, one more block admitted at the edge, the
     * chunks in the socket's output: about 4 MiB, far from 64 */
    assert_true(rss1 - rss0 < CONNS * 6 * 1024);
    /* others are still served */
    c = t_conn(base, &n, NULL);
    assert_int_equal(t_get(base, c, bucket, "maxbuf/obj", etag, size, 3, buf, 1u << 20).code, 0);
    assert_memory_equal(buf, data + (3u << 20), 1u << 20);
    cc_conn_destroy(&c);
    event_base_loop(base, EVLOOP_NONBLOCK);
    for (int k = 0; k < CONNS; k++)
        close(fds[k]);
    free(buf);
    free(data);
    stop_clean(&n);
}

/* ---- metric types ---------------------------------------------------------- */

static void test_metric_types(void **state)
{
    (void)state;
    t_node n;
    t_node_start(env, &n, "types", h_s3model_endpoint(model), NULL);
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", n.admin_port);
    h_http_resp r = {0};
    assert_int_equal(h_http_get(url, &r), 200);
    int types = 0, counters = 0;
    bool checksum = false;
    for (const char *l = r.body; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        char name[128], kind[32];
        if (sscanf(l, "# TYPE %127s %31s", name, kind) != 2)
            continue;
        types++;
        size_t nl = strlen(name);
        bool total = nl > 6 && strcmp(name + nl - 6, "_total") == 0;
        if (total && strcmp(kind, "counter") != 0)
            fprintf(stderr, "%s is declared %s\n", name, kind);
        assert_true(!total || strcmp(kind, "counter") == 0);
        counters += strcmp(kind, "counter") == 0;
        checksum |=
            strcmp(name, "ringcached_checksum_failures_total") == 0 && strcmp(kind, "counter") == 0;
    }
    fprintf(stderr, "%d metrics, %d counters\n", types, counters);
    assert_true(checksum);
    h_http_resp_deinit(&r);
    stop_clean(&n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_numbers_past_the_end),
        cmocka_unit_test(test_dot_segments_do_not_escape),
        cmocka_unit_test(test_put_block_needs_the_peer_token),
        cmocka_unit_test(test_protected_mode),
        cmocka_unit_test(test_memory_before_hello),
        cmocka_unit_test(test_max_connections),
        cmocka_unit_test(test_out_of_descriptors),
        cmocka_unit_test(test_warm_cannot_take_the_node_down),
        cmocka_unit_test(test_cancel_and_close_mid_request),
        cmocka_unit_test(test_max_buffered_is_the_bound),
        cmocka_unit_test(test_metric_types),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
