/* SPDX-License-Identifier: Apache-2.0
 *
 * test_httpd.c: the HTTP/1.1 server core (client/http/httpd.h) over real
 * sockets on 127.0.0.1: curl for conformance (keep-alive reuse, chunked
 * upload, 100-continue, a rate-limited client reading 64 MiB, TLS) and raw
 * sockets for what curl will not do (pipelining, a client that vanishes
 * mid-body, limits, timeouts, the connection cap, HTTP/1.0, HEAD, a cut
 * answer, drain). Each test starts its own server on its own thread.
 */
#include "harness.h"
#include "httpd_test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include <event2/event.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

static h_env *env;

static int setup(void **state)
{
    (void)state;
    return h_env_create(&env, "test_httpd");
}

static int teardown(void **state)
{
    (void)state;
    h_env_destroy(&env);
    return 0;
}

static void url(char *buf, size_t cap, const char *scheme, int port, const char *path)
{
    snprintf(buf, cap, "%s://127.0.0.1:%d%s", scheme, port, path);
}

static void sha_hex(const void *d, size_t n, char out[65])
{
    unsigned char md[32];
    unsigned int ml;
    EVP_Digest(d, n, md, &ml, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* A file of n pseudo-random bytes in the env folder; its sha256 in hex. */
static void make_file(const char *name, size_t n, char path[1024], char hex[65])
{
    assert_int_equal(h_env_path(env, path, 1024, name), 0);
    unsigned char *b = malloc(n);
    assert_non_null(b);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b[i] = (unsigned char)x;
    }
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
    sha_hex(b, n, hex);
    free(b);
}

/* ---- curl ------------------------------------------------------------------- */

/* Reads the next answer on rd and checks its status (0: any) and its body
 * (NULL: any). */
static void expect_answer(tc_reader *rd, int status, const char *body)
{
    tc_resp r;
    assert_int_equal(tc_read(rd, &r, false), 0);
    if (status)
        assert_int_equal(r.status, status);
    if (body)
        assert_string_equal(r.body, body);
    tc_resp_free(&r);
}

/* One request on a new connection, its answer checked as by expect_answer. */
static void expect_one(int port, const char *raw, int status, const char *body)
{
    int fd = tc_connect(port);
    tc_sends(fd, raw);
    tc_reader *rd = tc_reader_create(fd);
    expect_answer(rd, status, body);
    tc_reader_destroy(&rd);
    close(fd);
}

static void test_keepalive_reuse(void **state)
{
    (void)state;
    ts_server ts;
    ts_start(&ts, NULL);
    char u[128];
    url(u, sizeof u, "http", ts.port, "/hello");
    h_run_result r;
    const char *argv[] = {"/usr/bin/curl", "-sv", u, u, u, NULL};
    assert_int_equal(h_run(env, &r, argv, NULL), 0);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "hello\nhello\nhello\n");
    assert_non_null(strstr(r.err, "Re-using existing connection"));
    httpd_stats st;
    ts_stats(&ts, &st);
    assert_int_equal(st.conns_accepted, 1);
    assert_int_equal(st.requests, 3);
    assert_int_equal(st.status[200 - HTTPD_STATUS_MIN], 3);
    ts_stop(&ts);
}

static void test_chunked_upload(void **state)
{
    (void)state;
    ts_server ts;
    ts_start(&ts, NULL);
    char path[1024], hex[65], want[128], u[128], data[1100];
    make_file("up.bin", 3u << 20, path, hex);
    snprintf(want, sizeof want, "%u %s\n", 3u << 20, hex);
    snprintf(data, sizeof data, "@%s", path);
    const char *routes[] = {"/echo", "/slowecho"};
    for (int i = 0; i < 2; i++) {
        url(u, sizeof u, "http", ts.port, routes[i]);
        h_run_result r;
        const char *argv[] = {"/usr/bin/curl", "-sS", "-H", "Transfer-Encoding: chunked",
                              "--data-binary", data,  u,    NULL};
        assert_int_equal(h_run(env, &r, argv, NULL), 0);
        assert_int_equal(r.status, 0);
        assert_string_equal(r.out, want);
    }
    /* and with Content-Length, the body larger than the input buffer */
    url(u, sizeof u, "http", ts.port, "/slowecho");
    h_run_result r;
    const char *argv[] = {"/usr/bin/curl", "-sS", "--data-binary", data, u, NULL};
    assert_int_equal(h_run(env, &r, argv, NULL), 0);
    assert_string_equal(r.out, want);
    ts_stop(&ts);
}

static void test_expect_continue_curl(void **state)
{
    (void)state;
    ts_server ts;
    ts_start(&ts, NULL);
    char path[1024], hex[65], want[128], u[128], data[1100];
    make_file("exp.bin", 2u << 20, path, hex);
    snprintf(want, sizeof want, "%u %s\n", 2u << 20, hex);
    snprintf(data, sizeof data, "@%s", path);
    url(u, sizeof u, "http", ts.port, "/echo");
    h_run_result r;
    /* --expect100-timeout 30: if no 100 came, curl would wait 30 s and the
     * verbose log would not show it */
    const char *argv[] = {"/usr/bin/curl",
                          "-sSv",
                          "--expect100-timeout",
                          "30",
                          "-H",
                          "Expect: 100-continue",
                          "--data-binary",
                          data,
                          u,
                          NULL};
    assert_int_equal(h_run(env, &r, argv, NULL), 0);
    assert_string_equal(r.out, want);
    assert_non_null(strstr(r.err, "HTTP/1.1 100 Continue"));
    ts_stop(&ts);
}

static void test_slow_client_bounded(void **state)
{
    (void)state;
    httpd_config cfg;
    httpd_config_init(&cfg);
    cfg.out_high_bytes = 512 * 1024;
    cfg.out_low_bytes = 128 * 1024;
    ts_server ts;
    ts_start(&ts, &cfg);
    const uint64_t total = 64ull << 20;
    char u[128], out[1024];
    snprintf(u, sizeof u, "http://127.0.0.1:%d/big?bytes=%llu", ts.port, (unsigned long long)total);
    assert_int_equal(h_env_path(env, out, sizeof out, "big.out"), 0);
    h_run_result r;
    const char *argv[] = {"/usr/bin/curl", "-sS", "--limit-rate", "48M", "-o", out, u, NULL};
    assert_int_equal(h_run(env, &r, argv, NULL), 0);
    assert_int_equal(r.status, 0);
    /* every byte right */
    FILE *f = fopen(out, "rb");
    assert_non_null(f);
    unsigned char b[65536];
    uint64_t off = 0;
    size_t n;
    bool ok = true;
    while ((n = fread(b, 1, sizeof b, f)) > 0) {
        for (size_t i = 0; i < n && ok; i++)
            ok = b[i] == ts_pattern(off + i);
        off += n;
    }
    fclose(f);
    assert_true(ok);
    assert_int_equal(off, total);
    httpd_stats st;
    ts_stats(&ts, &st);
    /* the handler stopped at the high mark and waited for the writable
     * callback: the server never held more than the mark and one piece */
    assert_true(atomic_load(&ts.writable_calls) > 10);
    assert_true(st.out_peak_bytes <= cfg.out_high_bytes + 64 * 1024 + 256);
    assert_true(st.bytes_out > total);
    ts_stop(&ts);
}

static void test_chunked_response_curl(void **state)
{
    (void)state;
    ts_server ts;
    ts_start(&ts, NULL);
    char u[128];
    snprintf(u, sizeof u, "http://127.0.0.1:%d/big?bytes=3000000&chunked=1", ts.port);
    h_run_result r;
    const char *argv[] = {"/usr/bin/curl",           "-sS", "-D", "-", "-o", "/dev/null", "-w",
                          "size=%{size_download}\n", u,     NULL};
    assert_int_equal(h_run(env, &r, argv, NULL), 0);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "Transfer-Encoding: chunked"));
    assert_non_null(strstr(r.out, "size=3000000"));
    ts_stop(&ts);
}

static SSL_CTX *server_tls(const char *cert, const char *key)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    assert_non_null(ctx);
    assert_int_equal(SSL_CTX_use_certificate_chain_file(ctx, cert), 1);
    assert_int_equal(SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM), 1);
    return ctx;
}

static void test_tls(void **state)
{
    (void)state;
    char cert[1024], key[1024];
    assert_int_equal(h_env_path(env, cert, sizeof cert, "cert.pem"), 0);
    assert_int_equal(h_env_path(env, key, sizeof key, "key.pem"), 0);
    assert_int_equal(h_make_cert(cert, key), 0);
    SSL_CTX *ctx = server_tls(cert, key);
    httpd_config cfg;
    httpd_config_init(&cfg);
    cfg.tls = ctx;
    ts_server ts;
    ts_start(&ts, &cfg);
    char path[1024], hex[65], want[128], u1[128], u2[128], data[1100];
    make_file("tls.bin", 1u << 20, path, hex);
    snprintf(want, sizeof want, "hello\n%u %s\n", 1u << 20, hex);
    snprintf(data, sizeof data, "@%s", path);
    url(u1, sizeof u1, "https", ts.port, "/hello");
    url(u2, sizeof u2, "https", ts.port, "/echo");
    h_run_result r;
    const char *argv[] = {"/usr/bin/curl", "-sSv", "--cacert", cert, u1,
                          "--data-binary", data,   u2,         NULL};
    assert_int_equal(h_run(env, &r, argv, NULL), 0);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, want);
    assert_non_null(strstr(r.err, "Re-using existing connection"));
    /* plain HTTP to a TLS port: a failed handshake, counted */
    int fd = tc_connect(ts.port);
    tc_sends(fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(tc_wait_closed(fd), 0);
    close(fd);
    httpd_stats st;
    for (int i = 0; i < 500; i++) {
        ts_stats(&ts, &st);
        if (st.tls_errors > 0)
            break;
        usleep(10000);
    }
    assert_true(st.tls_errors >= 1);
    ts_stop(&ts);
    SSL_CTX_free(ctx);
}

/* A file served with httpd_resp_write_file: sendfile on plain TCP, read and
 * copied under TLS; sized and chunked; the bytes equal the file's. The same
 * with httpd_resp_write_file_ref (the descriptor not duplicated): every
 * piece's cleanup runs once its bytes are out. */
static void test_write_file(void **state)
{
    (void)state;
    char path[1024], hex[65];
    make_file("served.bin", 3000001, path, hex);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    char cert[1024], key[1024];
    assert_int_equal(h_env_path(env, cert, sizeof cert, "fcert.pem"), 0);
    assert_int_equal(h_env_path(env, key, sizeof key, "fkey.pem"), 0);
    assert_int_equal(h_make_cert(cert, key), 0);
    SSL_CTX *ctx = server_tls(cert, key);
    for (int tls = 0; tls < 2; tls++) {
        httpd_config cfg;
        httpd_config_init(&cfg);
        cfg.tls = tls ? ctx : NULL;
        ts_server ts;
        ts_start_file(&ts, &cfg, fd, 3000001);
        for (int v = 0; v < 4; v++) {
            int chunked = v & 1, ref = v >> 1;
            char u[128], out[1024];
            snprintf(u, sizeof u, "%s://127.0.0.1:%d/file?chunked=%d&ref=%d",
                     tls ? "https" : "http", ts.port, chunked, ref);
            assert_int_equal(h_env_path(env, out, sizeof out, "served.out"), 0);
            h_run_result r;
            const char *argv[] = {"/usr/bin/curl", "-sS", "--cacert", cert, "-o", out, u, NULL};
            assert_int_equal(h_run(env, &r, argv, NULL), 0);
            assert_int_equal(r.status, 0);
            const char *cmp[] = {"/usr/bin/cmp", path, out, NULL};
            assert_int_equal(h_run(env, &r, cmp, NULL), 0);
            assert_int_equal(r.status, 0);
            for (int i = 0; i < 200 && atomic_load(&ts.file_refs_out) != 0; i++)
                usleep(10000);
            assert_int_equal(atomic_load(&ts.file_refs_out), 0);
        }
        /* 3000001 bytes in 64 KiB pieces, twice (sized and chunked) */
        assert_int_equal(atomic_load(&ts.file_refs_done), 2 * ((3000001 + 65535) / 65536));
        ts_stop(&ts);
    }
    SSL_CTX_free(ctx);
    close(fd);
}

/* ---- raw sockets ------------------------------------------------------------- */

static void test_pipelining_in_order(void **state)
{
    (void)state;
    ts_server ts;
    ts_start(&ts, NULL);
    int fd = tc_connect(ts.port);
    /* the second answer is slow, the fourth has a body: all come in order */
    tc_sends(fd, "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"
                 "GET /async?ms=150 HTTP/1.1\r\nHost: t\r\n\r\n"
                 "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"
                 "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nabcde"
                 "GET /nope HTTP/1.1\r\nHost: t\r\n\r\n");
    tc_reader *rd = tc_reader_create(fd);
    expect_answer(rd, 200, "hello\n");
    expect_answer(rd, 0, "async\n");
    expect_answer(rd, 0, "hello\n");
    char want[128], hex[65];
    sha_hex("abcde", 5, hex);
    snprintf(want, sizeof want, "5 %s\n", hex);
    expect_answer(rd, 0, want);
    expect_answer(rd, 404, NULL);
    tc_reader_destroy(&rd);
    close(fd);
    httpd_stats st;
    ts_stats(&ts, &st);
    assert_int_equal(st.conns_accepted, 1);
    ts_stop(&ts);
}

static void test_pipelined_never_read_bounded(void **state)
{
    (void)state;
    httpd_config cfg;
    httpd_config_init(&cfg);
    cfg.out_high_bytes = 256 * 1024;
    cfg.out_low_bytes = 64 * 1024;
    cfg.in_buffer_bytes = 64 * 1024;
    ts_server ts;
    ts_start(&ts, &cfg);
    int fd = tc_connect_rcvbuf(ts.port, 16 * 1024);
    /* 10,000 pipelined requests for 100 KB each, none of the answers read */
    char req[128];
    int n = snprintf(req, sizeof req, "GET /big?bytes=100000 HTTP/1.1\r\nHost: t\r\n\r\n");
    char *all = malloc((size_t)n * 10000);
    assert_non_null(all);
    for (int i = 0; i < 10000; i++)
        memcpy(all + (size_t)i * (size_t)n, req, (size_t)n);
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    size_t off = 0, total = (size_t)n * 10000;
    for (int i = 0; i < 200 && off < total; i++) {
        ssize_t k = send(fd, all + off, total - off, MSG_NOSIGNAL);
        if (k > 0)
            off += (size_t)k;
        else
            usleep(10000);
    }
    free(all);
    /* the server stops taking requests once its output is full: wait until
     * the count settles (bounded), then it must be a small part of them (the
     * kernel's socket buffers hold a few answers, ours one or two) */
    int seen = -1;
    for (int i = 0; i < 100; i++) {
        usleep(100000);
        int now = atomic_load(&ts.requests);
        if (now == seen)
            break;
        seen = now;
    }
    assert_true(seen > 0);
    assert_true(seen < 1000);
    httpd_stats st;
    ts_stats(&ts, &st);
    assert_true(st.out_peak_bytes <= cfg.out_high_bytes + 100000 + 1024);
    close(fd);
    /* the server goes on serving others */
    expect_one(ts.port, "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n", 200, NULL);
    ts_stop(&ts);
}

static void test_expect_continue_raw(void **state)
{
    (void)state;
    ts_server ts;
    ts_start(&ts, NULL);
    /* accepted: 100 first, then the body, then the answer */
    int fd = tc_connect(ts.port);
    tc_sends(fd, "PUT /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n"
                 "Expect: 100-continue\r\n\r\n");
    tc_reader *rd = tc_reader_create(fd);
    char head[256];
    assert_int_equal(tc_read_head_raw(rd, head, sizeof head), 0);
    assert_string_equal(head, "HTTP/1.1 100 Continue\r\n\r\n");
    tc_sends(fd, "abcd");
    tc_resp r;
    assert_int_equal(tc_read(rd, &r, false), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(strncmp(r.body, "4 ", 2), 0);
    tc_resp_free(&r);
    tc_reader_destroy(&rd);
    close(fd);

    /* refused: the final answer without reading the body, then the close */
    fd = tc_connect(ts.port);
    tc_sends(fd, "PUT /deny HTTP/1.1\r\nHost: t\r\nContent-Length: 104857600\r\n"
                 "Expect: 100-continue\r\n\r\n");
    rd = tc_reader_create(fd);
    assert_int_equal(tc_read(rd, &r, false), 0);
    assert_int_equal(r.status, 403);
    assert_string_equal(r.connection, "close");
    tc_resp_free(&r);
    assert_int_equal(tc_wait_closed(fd), 0);
    tc_reader_destroy(&rd);
    close(fd);
    assert_int_equal(atomic_load(&ts.body_bytes), 4);
    httpd_stats st;
    ts_stats(&ts, &st);
    assert_int_equal(st.status[100 - HTTPD_STATUS_MIN], 1);
    ts_stop(&ts);
}

static void test_unread_body_skipped(void **state)
{
    (void)state;
    ts_server ts;
    ts_start(&ts, NULL);
    int fd = tc_connect(ts.port);
    /* a small refused body is skipped: the next request is answered on the
     * same connection */
    tc_sends(fd, "POST /deny HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n0123456789"
                 "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    tc_reader *rd = tc_reader_create(fd);
    tc_resp r;
    assert_int_equal(tc_read(rd, &r, false), 0);
    assert_int_equal(r.status, 403);
    assert_string_equal(r.connection, "");
    tc_resp_free(&r);
    expect_answer(rd, 0, "hello\n");
    tc_reader_destroy(&rd);
    close(fd);
    ts_stop(&ts);
}

static void test_client_vanishes_mid_body(void **state)
{
    (void)state;
    ts_server ts;
    ts_start(&ts, NULL);
    int fd = tc_connect(ts.port);
    tc_sends(fd, "PUT /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1048576\r\n\r\n");
    char chunk[100000];
    memset(chunk, 'x', sizeof chunk);
    tc_send(fd, chunk, sizeof chunk);
    /* wait until the handler has some of it, then vanish */
    for (int i = 0; i < 2000 && atomic_load(&ts.body_bytes) < 1000; i++)
        usleep(1000);
    close(fd);
    assert_int_equal(ts_wait_atomic(&ts.done_err, 1), 1);
    assert_int_equal(atomic_load(&ts.last_done_status), -ECONNRESET);
    assert_int_equal(atomic_load(&ts.last_body_end), -ECONNRESET);
    assert_int_equal(atomic_load(&ts.body_end_ok), 0);
    httpd_stats st;
    ts_stats(&ts, &st);
    assert_int_equal(st.aborted, 1);
    /* and the server is fine */
    expect_one(ts.port, "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n", 200, NULL);
    ts_stop(&ts);
}

/* One request on a new connection; returns the status (the connection must
 * close after it when want_close). */
static int one_status(int port, const char *raw, bool want_close)
{
    int fd = tc_connect(port);
    tc_sends(fd, raw);
    tc_reader *rd = tc_reader_create(fd);
    tc_resp r;
    int rc = tc_read(rd, &r, false);
    int st = rc == 0 ? r.status : rc;
    if (rc == 0 && want_close) {
        assert_string_equal(r.connection, "close");
        assert_int_equal(tc_wait_closed(fd), 0);
    }
    tc_resp_free(&r);
    tc_reader_destroy(&rd);
    close(fd);
    return st;
}

static void test_head_limits(void **state)
{
    (void)state;
    httpd_config cfg;
    httpd_config_init(&cfg);
    cfg.max_url_bytes = 1024;
    cfg.max_header_bytes = 4096;
    cfg.max_headers = 20;
    ts_server ts;
    ts_start(&ts, &cfg);
    char raw[8192];
    char big[3000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    snprintf(raw, sizeof raw, "GET /%s HTTP/1.1\r\nHost: t\r\n\r\n", big);
    assert_int_equal(one_status(ts.port, raw, true), 414);
    snprintf(raw, sizeof raw, "GET / HTTP/1.1\r\nHost: t\r\nX-A: %s\r\nX-B: %s\r\n\r\n", big, big);
    assert_int_equal(one_status(ts.port, raw, true), 431);
    int k = snprintf(raw, sizeof raw, "GET / HTTP/1.1\r\nHost: t\r\n");
    for (int i = 0; i < 25; i++)
        k += snprintf(raw + k, sizeof raw - (size_t)k, "X-%d: v\r\n", i);
    snprintf(raw + k, sizeof raw - (size_t)k, "\r\n");
    assert_int_equal(one_status(ts.port, raw, true), 431);
    assert_int_equal(one_status(ts.port, "GARBAGE\r\n\r\n", true), 400);
    assert_int_equal(one_status(ts.port, "GET / HTTP/2.0\r\nHost: t\r\n\r\n", true), 505);
    assert_int_equal(one_status(ts.port, "GET /hello HTTP/1.1\r\n\r\n", true), 400);
    assert_int_equal(one_status(ts.port, "GET /hello HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", true),
                     400);
    assert_int_equal(one_status(ts.port,
                                "PUT /echo HTTP/1.1\r\nHost: t\r\nExpect: magic\r\n"
                                "Content-Length: 1\r\n\r\nx",
                                true),
                     417);
    assert_int_equal(one_status(ts.port, "CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n", true), 501);
    assert_int_equal(one_status(ts.port,
                                "POST /echo HTTP/1.1\r\nHost: t\r\n"
                                "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
                                "0\r\n\r\n",
                                true),
                     400);
    /* a malformed chunked body reaches the handler as -EPROTO */
    assert_int_equal(one_status(ts.port,
                                "POST /echo HTTP/1.1\r\nHost: t\r\n"
                                "Transfer-Encoding: chunked\r\n\r\nzz\r\n",
                                true),
                     400);
    assert_int_equal(atomic_load(&ts.last_body_end), -EPROTO);
    /* at the limits exactly: fine */
    memset(big, 'b', 1000);
    big[1000] = '\0';
    snprintf(raw, sizeof raw, "GET /hello?%s HTTP/1.1\r\nHost: t\r\n\r\n", big);
    assert_int_equal(one_status(ts.port, raw, false), 200);
    /* absolute-form targets are served by their path */
    assert_int_equal(
        one_status(ts.port, "GET http://example/hello HTTP/1.1\r\nHost: t\r\n\r\n", false), 200);
    httpd_stats st;
    ts_stats(&ts, &st);
    assert_int_equal(st.parse_errors, 10);
    assert_int_equal(st.status[431 - HTTPD_STATUS_MIN], 2);
    ts_stop(&ts);
}

static void test_head_and_http10(void **state)
{
    (void)state;
    ts_server ts;
    ts_start(&ts, NULL);
    int fd = tc_connect(ts.port);
    tc_sends(fd, "HEAD /big?bytes=1000 HTTP/1.1\r\nHost: t\r\n\r\n"
                 "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    tc_reader *rd = tc_reader_create(fd);
    tc_resp r;
    assert_int_equal(tc_read(rd, &r, true), 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.content_length, "1000");
    assert_int_equal(r.body_len, 0);
    tc_resp_free(&r);
    expect_answer(rd, 0, "hello\n");
    tc_reader_destroy(&rd);
    close(fd);

    /* HTTP/1.0: closes after the answer; a body of unknown length is
     * close-delimited, never chunked */
    fd = tc_connect(ts.port);
    tc_sends(fd, "GET /big?bytes=5000&chunked=1 HTTP/1.0\r\n\r\n");
    rd = tc_reader_create(fd);
    assert_int_equal(tc_read(rd, &r, false), 0);
    assert_int_equal(r.body_len, 5000);
    assert_string_equal(r.transfer_encoding, "");
    assert_string_equal(r.connection, "close");
    tc_resp_free(&r);
    tc_reader_destroy(&rd);
    close(fd);
    /* HTTP/1.0 with keep-alive asked */
    fd = tc_connect(ts.port);
    tc_sends(fd, "GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
                 "GET /hello HTTP/1.0\r\n\r\n");
    rd = tc_reader_create(fd);
    assert_int_equal(tc_read(rd, &r, false), 0);
    assert_string_equal(r.connection, "keep-alive");
    tc_resp_free(&r);
    assert_int_equal(tc_read(rd, &r, false), 0);
    assert_string_equal(r.connection, "close");
    tc_resp_free(&r);
    assert_int_equal(tc_wait_closed(fd), 0);
    tc_reader_destroy(&rd);
    close(fd);
    /* Connection: close from an HTTP/1.1 client */
    assert_int_equal(
        one_status(ts.port, "GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", true),
        200);
    ts_stop(&ts);
}

/* A flushed head reaches the client before the handler has finished it;
 * later headers and the body follow in the same answer. */
static void test_flush_head_early(void **state)
{
    (void)state;
    ts_server ts;
    ts_start(&ts, NULL);
    int fd = tc_connect(ts.port);
    tc_sends(fd, "GET /early?ms=400 HTTP/1.1\r\nHost: x\r\n\r\n");
    char buf[4096];
    size_t n = 0;
    int64_t t0 = h_now_ms();
    while (!memmem(buf, n, "X-Early: 1\r\n", 12) && h_now_ms() - t0 < 20000) {
        ssize_t k = recv(fd, buf + n, sizeof buf - n - 1, 0);
        assert_true(k > 0);
        n += (size_t)k;
    }
    buf[n] = 0;
    assert_non_null(strstr(buf, "HTTP/1.1 202 Accepted\r\n"));
    assert_null(strstr(buf, "\r\n\r\n")); /* the head is still open */
    assert_null(strstr(buf, "X-Late"));
    close(fd);
    /* the whole answer, as a client reads it */
    tc_resp resp;
    fd = tc_connect(ts.port);
    tc_reader *r = tc_reader_create(fd);
    tc_sends(fd, "GET /early?ms=10 HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(tc_read(r, &resp, false), 0);
    assert_int_equal(resp.status, 202);
    assert_string_equal(resp.transfer_encoding, "chunked");
    assert_int_equal(resp.body_len, 5);
    assert_memory_equal(resp.body, "late\n", 5);
    tc_resp_free(&resp);
    tc_reader_destroy(&r);
    close(fd);
    ts_stop(&ts);
}

static void test_abort_cuts_answer(void **state)
{
    (void)state;
    ts_server ts;
    ts_start(&ts, NULL);
    int fd = tc_connect(ts.port);
    tc_sends(fd, "GET /abort HTTP/1.1\r\nHost: t\r\n\r\n");
    tc_reader *rd = tc_reader_create(fd);
    tc_resp r;
    /* the chunked body lacks its last chunk: the reader sees the close */
    assert_int_equal(tc_read(rd, &r, false), -ECONNRESET);
    assert_false(r.complete);
    tc_resp_free(&r);
    tc_reader_destroy(&rd);
    close(fd);
    assert_int_equal(ts_wait_atomic(&ts.done_err, 1), 1);
    assert_int_equal(atomic_load(&ts.last_done_status), -ECONNRESET);
    ts_stop(&ts);
}

static void test_timeouts(void **state)
{
    (void)state;
    httpd_config cfg;
    httpd_config_init(&cfg);
    cfg.idle_timeout_ms = 200;
    cfg.header_timeout_ms = 300;
    cfg.body_timeout_ms = 300;
    ts_server ts;
    ts_start(&ts, &cfg);
    /* idle: closed without a word */
    int fd = tc_connect(ts.port);
    char b[16];
    assert_int_equal(tc_wait_closed(fd), 0);
    assert_int_equal(recv(fd, b, sizeof b, 0), 0);
    close(fd);
    /* a head that never ends: 408 */
    expect_one(ts.port, "GET /hello HTTP/1.1\r\nHost: t\r\n", 408, NULL);
    /* a body that stops: the handler hears -ETIMEDOUT and answers 408 */
    fd = tc_connect(ts.port);
    tc_sends(fd, "PUT /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n0123456789");
    tc_reader *rd = tc_reader_create(fd);
    tc_resp r;
    assert_int_equal(tc_read(rd, &r, false), 0);
    assert_int_equal(r.status, 408);
    assert_string_equal(r.connection, "close");
    tc_resp_free(&r);
    tc_reader_destroy(&rd);
    close(fd);
    assert_int_equal(atomic_load(&ts.last_body_end), -ETIMEDOUT);
    httpd_stats st;
    ts_stats(&ts, &st);
    assert_int_equal(st.timeouts, 2);
    ts_stop(&ts);
}

static void test_max_conns(void **state)
{
    (void)state;
    httpd_config cfg;
    httpd_config_init(&cfg);
    cfg.max_conns = 2;
    ts_server ts;
    ts_start(&ts, &cfg);
    int a = tc_connect(ts.port), b = tc_connect(ts.port);
    httpd_stats st;
    for (int i = 0; i < 500; i++) {
        ts_stats(&ts, &st);
        if (st.conns_open == 2)
            break;
        usleep(10000);
    }
    assert_int_equal(st.conns_open, 2);
    int c = tc_connect(ts.port);
    tc_sends(c, "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    tc_reader *rd = tc_reader_create(c);
    tc_resp r;
    assert_int_equal(tc_read(rd, &r, false), 0);
    assert_int_equal(r.status, 503);
    assert_string_equal(r.retry_after, "1");
    assert_non_null(strstr(r.body, "limit of 2 connections"));
    tc_resp_free(&r);
    tc_reader_destroy(&rd);
    assert_int_equal(tc_wait_closed(c), 0);
    close(c);
    /* the two admitted ones are served */
    tc_sends(a, "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    rd = tc_reader_create(a);
    expect_answer(rd, 200, NULL);
    tc_reader_destroy(&rd);
    close(a);
    close(b);
    ts_stats(&ts, &st);
    assert_int_equal(st.conns_rejected, 1);
    assert_int_equal(atomic_load(&ts.requests), 1);
    ts_stop(&ts);
}

static void drained_cb(httpd_server *srv, void *arg)
{
    (void)srv;
    ts_server *ts = arg;
    atomic_store(&ts->drained, 1);
}

/* These run on the server's thread: no cmocka assertion there. */
static void start_drain(ts_server *ts)
{
    if (httpd_server_drain(ts->srv, 10000, drained_cb, ts) != 0)
        abort();
}

static void test_drain(void **state)
{
    (void)state;
    ts_server ts;
    ts_start(&ts, NULL);
    int idle = tc_connect(ts.port);
    int busy = tc_connect(ts.port);
    tc_sends(busy, "GET /async?ms=300 HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(ts_wait_atomic(&ts.requests, 1), 1);
    ts_call(&ts, start_drain);
    /* the idle one is closed, the busy one answered with Connection: close */
    assert_int_equal(tc_wait_closed(idle), 0);
    tc_reader *rd = tc_reader_create(busy);
    tc_resp r;
    assert_int_equal(tc_read(rd, &r, false), 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.connection, "close");
    tc_resp_free(&r);
    tc_reader_destroy(&rd);
    assert_int_equal(tc_wait_closed(busy), 0);
    assert_int_equal(ts_wait_atomic(&ts.drained, 1), 1);
    assert_int_equal(atomic_load(&ts.done_ok), 1);
    close(idle);
    close(busy);
    ts_stop(&ts);
}

static void drain_short(ts_server *ts)
{
    if (httpd_server_drain(ts->srv, 100, drained_cb, ts) != 0)
        abort();
}

static void test_drain_deadline(void **state)
{
    (void)state;
    ts_server ts;
    ts_start(&ts, NULL);
    int busy = tc_connect(ts.port);
    tc_sends(busy, "GET /async?ms=5000 HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(ts_wait_atomic(&ts.requests, 1), 1);
    ts_call(&ts, drain_short);
    assert_int_equal(ts_wait_atomic(&ts.drained, 1), 1);
    assert_int_equal(atomic_load(&ts.last_done_status), -ECANCELED);
    assert_int_equal(tc_wait_closed(busy), 0);
    close(busy);
    ts_stop(&ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keepalive_reuse),
        cmocka_unit_test(test_chunked_upload),
        cmocka_unit_test(test_expect_continue_curl),
        cmocka_unit_test(test_slow_client_bounded),
        cmocka_unit_test(test_chunked_response_curl),
        cmocka_unit_test(test_tls),
        cmocka_unit_test(test_write_file),
        cmocka_unit_test(test_pipelining_in_order),
        cmocka_unit_test(test_pipelined_never_read_bounded),
        cmocka_unit_test(test_expect_continue_raw),
        cmocka_unit_test(test_unread_body_skipped),
        cmocka_unit_test(test_client_vanishes_mid_body),
        cmocka_unit_test(test_head_limits),
        cmocka_unit_test(test_head_and_http10),
        cmocka_unit_test(test_flush_head_early),
        cmocka_unit_test(test_abort_cuts_answer),
        cmocka_unit_test(test_timeouts),
        cmocka_unit_test(test_max_conns),
        cmocka_unit_test(test_drain),
        cmocka_unit_test(test_drain_deadline),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
