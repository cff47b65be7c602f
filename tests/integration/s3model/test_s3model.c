/* SPDX-License-Identifier: Apache-2.0
 *
 * Integration tests of the S3 model (bench/s3model) in front of a real s3rver:
 * latency and bandwidth are applied (lower bounds only: a request through a
 * 200 ms model cannot take less than 200 ms), counts by method and object are
 * exact, faults (503 SlowDown, reset, stall) fire N times then stop, malformed
 * requests get 400 while the model keeps serving, keep-alive and pipelined
 * requests are framed right, large bodies pass byte-exact both ways, an
 * unreachable upstream gives 502, and the model exits 0 on SIGTERM.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

#define BUCKET H_S3_DEFAULT_BUCKET

typedef struct fixture {
    h_env *env;
    h_s3 *s3;
} fixture;

static int group_setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    if (f == NULL || h_env_create(&f->env, "s3model_it") != 0)
        return -1;
    int rc = h_s3_start(f->env, &f->s3, NULL);
    if (rc == -ENOPKG) {
        h_env_destroy(&f->env);
        h_skip(h_last_error());
    }
    if (rc != 0)
        return -1;
    *state = f;
    return 0;
}

static int group_teardown(void **state)
{
    fixture *f = *state;
    int st = h_proc_stop(h_s3_proc(f->s3), 5000);
    h_env_destroy(&f->env);
    free(f);
    return st == 0 ? 0 : -1;
}

static h_s3model *start_model(fixture *f, int latency_ms, int bw)
{
    h_s3model *m = NULL;
    int rc = h_s3model_start(f->env, &m, h_s3_port(f->s3), latency_ms, bw);
    if (rc != 0)
        fail_msg("cannot start s3model: %s", h_last_error());
    return m;
}

static void stop_model(h_s3model *m)
{
    assert_int_equal(h_proc_stop(h_s3model_proc(m), 10000), 0);
}

static void fill(char *p, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (char)x;
    }
}

/* PUT directly to s3rver (not through the model). */
static void put_direct(fixture *f, const char *key, const char *data, size_t len)
{
    char url[512];
    snprintf(url, sizeof(url), "%s/%s/%s", h_s3_endpoint(f->s3), BUCKET, key);
    h_http_req req = {.method = "PUT", .url = url, .body = data, .body_len = len};
    assert_int_equal(h_http(&req, NULL), 200);
}

static int req_via(const h_s3model *m, const char *method, const char *key, h_http_resp *resp)
{
    char url[512];
    snprintf(url, sizeof(url), "%s/%s/%s", h_s3model_endpoint(m), BUCKET, key);
    h_http_req req = {.method = method, .url = url};
    return h_http(&req, resp);
}

static void test_latency_lower_bound(void **state)
{
    fixture *f = *state;
    put_direct(f, "lat", "hello", 5);
    h_s3model *m = start_model(f, 200, 0);
    for (int i = 0; i < 2; i++) {
        int64_t t0 = h_now_ms();
        h_http_resp r;
        assert_int_equal(req_via(m, "GET", "lat", &r), 200);
        int64_t el = h_now_ms() - t0;
        assert_int_equal(r.body_len, 5);
        assert_memory_equal(r.body, "hello", 5);
        h_http_resp_deinit(&r);
        assert_true(el >= 200);
    }
    /* Run-time change through the admin port. */
    assert_int_equal(h_s3model_config(m, 350, -1), 0);
    int64_t t0 = h_now_ms();
    assert_int_equal(req_via(m, "HEAD", "lat", NULL), 200);
    assert_true(h_now_ms() - t0 >= 350);
    stop_model(m);
}

static void test_bandwidth_lower_bound(void **state)
{
    fixture *f = *state;
    enum { N = 4 * 1024 * 1024 };
    char *data = malloc(N);
    assert_non_null(data);
    fill(data, N, 7);
    put_direct(f, "bw", data, N);
    /* 10 MiB/s: 4 MiB cannot arrive in less than 0.4 s minus one burst. */
    h_s3model *m = start_model(f, 0, 10);
    int64_t t0 = h_now_ms();
    h_http_resp r;
    assert_int_equal(req_via(m, "GET", "bw", &r), 200);
    int64_t el = h_now_ms() - t0;
    assert_int_equal(r.body_len, N);
    assert_memory_equal(r.body, data, N);
    h_http_resp_deinit(&r);
    assert_true(el >= 390);
    free(data);
    stop_model(m);
}

static void test_counts_by_method_and_object(void **state)
{
    fixture *f = *state;
    h_s3model *m = start_model(f, 0, 0);
    char url[512];
    snprintf(url, sizeof(url), "%s/%s/cnt/a", h_s3model_endpoint(m), BUCKET);
    h_http_req put = {.method = "PUT", .url = url, .body = "abc", .body_len = 3};
    assert_int_equal(h_http(&put, NULL), 200);
    assert_int_equal(req_via(m, "GET", "cnt/a", NULL), 200);
    assert_int_equal(req_via(m, "GET", "cnt/a", NULL), 200);
    assert_int_equal(req_via(m, "HEAD", "cnt/a", NULL), 200);
    assert_int_equal(req_via(m, "GET", "cnt/missing", NULL), 404);
    assert_int_equal(req_via(m, "DELETE", "cnt/missing", NULL), 204);
    snprintf(url, sizeof(url), "%s/%s?list-type=2&prefix=cnt/", h_s3model_endpoint(m), BUCKET);
    assert_int_equal(h_http_get(url, NULL), 200);

    assert_int_equal(h_s3model_count(m, NULL, NULL), 7);
    assert_int_equal(h_s3model_count(m, "GET", NULL), 4);
    assert_int_equal(h_s3model_count(m, "PUT", NULL), 1);
    assert_int_equal(h_s3model_count(m, "HEAD", NULL), 1);
    assert_int_equal(h_s3model_count(m, "DELETE", NULL), 1);
    assert_int_equal(h_s3model_count(m, "GET", "/" BUCKET "/cnt/a"), 2);
    assert_int_equal(h_s3model_count(m, NULL, "/" BUCKET "/cnt/a"), 4);
    assert_int_equal(h_s3model_count(m, NULL, "/" BUCKET "/cnt/missing"), 2);
    /* The list request counts under the bucket path, without its query. */
    assert_int_equal(h_s3model_count(m, "GET", "/" BUCKET), 1);
    assert_int_equal(h_s3model_count(m, "GET", "/" BUCKET "/cnt/none"), 0);
    assert_int_equal(h_s3model_stat(m, "requests"), 7);
    assert_true(h_s3model_stat(m, "bytes_out") > 0);
    assert_true(h_s3model_stat(m, "bytes_in") > 3);
    assert_int_equal(h_s3model_stat(m, "no_such_stat"), -ENOENT);
    char *json;
    assert_int_equal(h_s3model_counts_json(m, &json), 0);
    assert_non_null(strstr(json, "\"/" BUCKET "/cnt/a\":{\"GET\":2,\"HEAD\":1,\"PUT\":1}"));
    assert_non_null(strstr(json, "\"requests\":7"));
    free(json);

    assert_int_equal(h_s3model_reset(m), 0);
    assert_int_equal(h_s3model_count(m, NULL, NULL), 0);
    assert_int_equal(h_s3model_count(m, "GET", "/" BUCKET "/cnt/a"), 0);
    assert_int_equal(req_via(m, "GET", "cnt/a", NULL), 200);
    assert_int_equal(h_s3model_count(m, "GET", "/" BUCKET "/cnt/a"), 1);
    stop_model(m);
}

static void test_503_injection(void **state)
{
    fixture *f = *state;
    put_direct(f, "f503", "data", 4);
    put_direct(f, "other", "o", 1);
    h_s3model *m = start_model(f, 0, 0);
    assert_int_equal(h_s3model_fault(m, "503", 2, "GET", "f503", 0), 0);
    /* Not matching (other key, other method) passes. */
    assert_int_equal(req_via(m, "GET", "other", NULL), 200);
    assert_int_equal(req_via(m, "HEAD", "f503", NULL), 200);
    for (int i = 0; i < 2; i++) {
        h_http_resp r;
        assert_int_equal(req_via(m, "GET", "f503", &r), 503);
        assert_non_null(strstr(r.body, "<Code>SlowDown</Code>"));
        assert_non_null(strstr(r.body, "<Resource>/" BUCKET "/f503</Resource>"));
        char ct[64];
        assert_true(h_http_header(&r, "Content-Type", ct, sizeof(ct)) > 0);
        assert_string_equal(ct, "application/xml");
        h_http_resp_deinit(&r);
    }
    h_http_resp r;
    assert_int_equal(req_via(m, "GET", "f503", &r), 200);
    assert_int_equal(r.body_len, 4);
    h_http_resp_deinit(&r);
    assert_int_equal(h_s3model_stat(m, "faults_503"), 2);
    /* A 503 for a PUT with a body closes that connection; the model goes on. */
    assert_int_equal(h_s3model_fault(m, "503", 1, "PUT", NULL, 0), 0);
    char url[512];
    snprintf(url, sizeof(url), "%s/%s/f503put", h_s3model_endpoint(m), BUCKET);
    h_http_req put = {.method = "PUT", .url = url, .body = "xyz", .body_len = 3};
    assert_int_equal(h_http(&put, NULL), 503);
    assert_int_equal(h_http(&put, NULL), 200);
    stop_model(m);
}

static int raw_connect(const h_s3model *m)
{
    int fd = h_tcp_connect(h_s3model_port(m), 2000);
    assert_true(fd >= 0);
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        assert_true(w > 0);
        p += w;
        n -= (size_t)w;
    }
}

/* Reads one response with a Content-Length body (or none for HEAD/204);
 * returns the status, body into body. Bytes of later responses stay in rd. */
typedef struct reader {
    int fd;
    char buf[1 << 16];
    size_t len;
} reader;

static int read_response(reader *rd, char *body, size_t cap, size_t *body_len)
{
    char *end;
    for (;;) {
        rd->buf[rd->len] = '\0';
        end = strstr(rd->buf, "\r\n\r\n");
        if (end != NULL)
            break;
        ssize_t n = recv(rd->fd, rd->buf + rd->len, sizeof(rd->buf) - 1 - rd->len, 0);
        if (n <= 0)
            return n == 0 ? -ECONNRESET : -errno;
        rd->len += (size_t)n;
    }
    int status = 0;
    if (sscanf(rd->buf, "HTTP/1.1 %d", &status) != 1)
        return -EPROTO;
    size_t head = (size_t)(end - rd->buf) + 4;
    size_t clen = 0;
    for (char *p = rd->buf; p < end; p = strstr(p, "\r\n") + 2) {
        if (strncasecmp(p, "Content-Length:", 15) == 0)
            clen = (size_t)strtoull(p + 15, NULL, 10);
    }
    assert_true(clen <= cap);
    size_t have = rd->len - head;
    while (have < clen) {
        ssize_t n = recv(rd->fd, rd->buf + rd->len, sizeof(rd->buf) - 1 - rd->len, 0);
        assert_true(n > 0);
        rd->len += (size_t)n;
        have += (size_t)n;
    }
    memcpy(body, rd->buf + head, clen);
    *body_len = clen;
    memmove(rd->buf, rd->buf + head + clen, rd->len - head - clen);
    rd->len -= head + clen;
    return status;
}

static void test_reset_injection(void **state)
{
    fixture *f = *state;
    put_direct(f, "rst", "r", 1);
    h_s3model *m = start_model(f, 0, 0);
    assert_int_equal(h_s3model_fault(m, "reset", 1, NULL, "/rst", 0), 0);
    int fd = raw_connect(m);
    const char req[] = "GET /" BUCKET "/rst HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    send_all(fd, req, sizeof(req) - 1);
    char buf[256];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    assert_int_equal(n, -1);
    assert_int_equal(errno, ECONNRESET);
    close(fd);
    assert_int_equal(h_s3model_stat(m, "faults_reset"), 1);
    /* Through libcurl it is a transport error; armed again for 1. */
    assert_int_equal(h_s3model_fault(m, "reset", 1, "GET", "rst", 0), 0);
    assert_int_equal(req_via(m, "GET", "rst", NULL), -ECONNRESET);
    assert_int_equal(req_via(m, "GET", "rst", NULL), 200);
    stop_model(m);
}

static void test_stall_injection(void **state)
{
    fixture *f = *state;
    put_direct(f, "stall", "s", 1);
    h_s3model *m = start_model(f, 0, 0);
    assert_int_equal(h_s3model_fault(m, "stall", 1, "GET", "stall", 400), 0);
    int64_t t0 = h_now_ms();
    assert_int_equal(req_via(m, "GET", "stall", NULL), 200);
    assert_true(h_now_ms() - t0 >= 400);
    assert_int_equal(h_s3model_stat(m, "faults_stall"), 1);
    assert_int_equal(h_s3model_stat(m, "faults"), 1);
    /* Bad fault requests are refused. */
    assert_true(h_s3model_fault(m, "stall", 1, NULL, NULL, 0) < 0);
    assert_true(h_s3model_fault(m, "explode", 1, NULL, NULL, 0) < 0);
    stop_model(m);
}

static void expect_400_and_close(const h_s3model *m, const char *bytes, size_t len)
{
    int fd = raw_connect(m);
    send_all(fd, bytes, len);
    char buf[4096];
    size_t got = 0;
    for (;;) {
        ssize_t n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
        if (n <= 0)
            break; /* closed (0) or reset after close */
        got += (size_t)n;
    }
    buf[got] = '\0';
    close(fd);
    assert_true(got > 12);
    assert_memory_equal(buf, "HTTP/1.1 400", 12);
    assert_non_null(strstr(buf, "Connection: close"));
}

static void test_malformed_gets_400(void **state)
{
    fixture *f = *state;
    put_direct(f, "ok", "fine", 4);
    h_s3model *m = start_model(f, 0, 0);
    static const char *const bad[] = {
        "GARBAGE\r\n\r\n",
        "GET /x HTTP/2.0\r\n\r\n",
        "GET x HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET /x HTTP/1.1\nHost: a\n\n",
        "PUT /x HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
        "PUT /x HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "PUT /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        "GET /x HTTP/1.1\r\n folded: header\r\n\r\n",
        "GET /x HTTP/1.1\r\nBad Header: v\r\n\r\n",
        "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_400_and_close(m, bad[i], strlen(bad[i]));
    /* A head larger than the limit. */
    size_t big = 70 * 1024;
    char *huge = malloc(big);
    assert_non_null(huge);
    memcpy(huge, "GET /x HTTP/1.1\r\nX-Big: ", 24);
    memset(huge + 24, 'a', big - 24);
    expect_400_and_close(m, huge, big);
    free(huge);
    /* Bad chunked framing after a good head: the request is cut off. */
    assert_int_equal(h_s3model_stat(m, "bad_requests"), 11);
    h_http_resp r;
    assert_int_equal(req_via(m, "GET", "ok", &r), 200);
    assert_int_equal(r.body_len, 4);
    h_http_resp_deinit(&r);
    stop_model(m);
}

static void test_keepalive_and_pipelining(void **state)
{
    fixture *f = *state;
    put_direct(f, "ka1", "first-object", 12);
    put_direct(f, "ka2", "second", 6);
    h_s3model *m = start_model(f, 50, 0);
    /* The harness's ready-check connect counted as a connection: start from 0. */
    assert_int_equal(h_s3model_reset(m), 0);
    reader *rd = calloc(1, sizeof(*rd));
    assert_non_null(rd);
    rd->fd = raw_connect(m);
    const char r1[] = "GET /" BUCKET "/ka1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    const char r2[] = "GET /" BUCKET "/ka2 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    const char h2[] = "HEAD /" BUCKET "/ka2 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    char body[4096];
    size_t blen;
    /* Sequential on one connection. */
    send_all(rd->fd, r1, sizeof(r1) - 1);
    assert_int_equal(read_response(rd, body, sizeof(body), &blen), 200);
    assert_int_equal(blen, 12);
    assert_memory_equal(body, "first-object", 12);
    send_all(rd->fd, r2, sizeof(r2) - 1);
    assert_int_equal(read_response(rd, body, sizeof(body), &blen), 200);
    assert_memory_equal(body, "second", 6);
    /* Pipelined: three at once, answers in order; a 503 in the middle stays in
     * its place. */
    assert_int_equal(h_s3model_fault(m, "503", 1, "GET", "ka2", 0), 0);
    char all[512];
    int n = snprintf(all, sizeof(all), "%s%s%s%s", r2, r1, h2, r1);
    send_all(rd->fd, all, (size_t)n);
    assert_int_equal(read_response(rd, body, sizeof(body), &blen), 503);
    assert_int_equal(read_response(rd, body, sizeof(body), &blen), 200);
    assert_memory_equal(body, "first-object", 12);
    /* HEAD: Content-Length 6 but no body; our reader must not wait for one. */
    {
        char *end;
        for (;;) {
            rd->buf[rd->len] = '\0';
            if ((end = strstr(rd->buf, "\r\n\r\n")) != NULL)
                break;
            ssize_t k = recv(rd->fd, rd->buf + rd->len, sizeof(rd->buf) - 1 - rd->len, 0);
            assert_true(k > 0);
            rd->len += (size_t)k;
        }
        assert_memory_equal(rd->buf, "HTTP/1.1 200", 12);
        size_t head = (size_t)(end - rd->buf) + 4;
        memmove(rd->buf, rd->buf + head, rd->len - head);
        rd->len -= head;
    }
    assert_int_equal(read_response(rd, body, sizeof(body), &blen), 200);
    assert_memory_equal(body, "first-object", 12);
    close(rd->fd);
    free(rd);
    assert_int_equal(h_s3model_stat(m, "connections"), 1);
    stop_model(m);
}

static void test_chunked_request_framing(void **state)
{
    fixture *f = *state;
    put_direct(f, "after", "after-chunked", 13);
    h_s3model *m = start_model(f, 0, 0);
    reader *rd = calloc(1, sizeof(*rd));
    assert_non_null(rd);
    rd->fd = raw_connect(m);
    /* Whatever s3rver says about a chunked PUT, the model must frame it and
     * serve the next request on the same connection. */
    const char put[] = "PUT /" BUCKET "/chunked HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       "Transfer-Encoding: chunked\r\n\r\n"
                       "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n";
    const char get[] = "GET /" BUCKET "/after HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    send_all(rd->fd, put, sizeof(put) - 1);
    char body[4096];
    size_t blen;
    int st = read_response(rd, body, sizeof(body), &blen);
    assert_true(st >= 200);
    send_all(rd->fd, get, sizeof(get) - 1);
    assert_int_equal(read_response(rd, body, sizeof(body), &blen), 200);
    assert_memory_equal(body, "after-chunked", 13);
    close(rd->fd);
    free(rd);
    assert_int_equal(h_s3model_count(m, "PUT", "/" BUCKET "/chunked"), 1);
    stop_model(m);
}

static void test_large_object_byte_exact(void **state)
{
    fixture *f = *state;
    enum { N = 32 * 1024 * 1024 };
    char *data = malloc(N);
    assert_non_null(data);
    fill(data, N, 32);
    /* Default bandwidth cap (100 MiB/s) so the token bucket carries it. */
    h_s3model *m = start_model(f, 0, 100);
    char url[512];
    snprintf(url, sizeof(url), "%s/%s/big", h_s3model_endpoint(m), BUCKET);
    h_http_req put = {.method = "PUT", .url = url, .body = data, .body_len = N};
    assert_int_equal(h_http(&put, NULL), 200);
    h_http_resp r;
    assert_int_equal(h_http_get(url, &r), 200);
    assert_int_equal(r.body_len, N);
    assert_memory_equal(r.body, data, N);
    h_http_resp_deinit(&r);
    /* A range in the middle. */
    const char *range[] = {"Range: bytes=20000000-20065535", NULL};
    h_http_req get = {.method = "GET", .url = url, .headers = range};
    assert_int_equal(h_http(&get, &r), 206);
    assert_int_equal(r.body_len, 65536);
    assert_memory_equal(r.body, data + 20000000, 65536);
    h_http_resp_deinit(&r);
    assert_true(h_s3model_stat(m, "bytes_in") >= N);
    assert_true(h_s3model_stat(m, "bytes_out") >= N + 65536);
    free(data);
    stop_model(m);
}

static void test_upstream_down_gives_502(void **state)
{
    fixture *f = *state;
    /* A port nobody listens on: bind one, note it, close it. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    socklen_t slen = sizeof(sa);
    getsockname(fd, (struct sockaddr *)&sa, &slen);
    close(fd);
    h_s3model *m = NULL;
    assert_int_equal(h_s3model_start(f->env, &m, ntohs(sa.sin_port), 0, 0), 0);
    h_http_resp r;
    assert_int_equal(req_via(m, "GET", "x", &r), 502);
    assert_non_null(strstr(r.body, "BadGateway"));
    h_http_resp_deinit(&r);
    assert_int_equal(h_s3model_stat(m, "upstream_errors"), 1);
    stop_model(m);
}

static void test_flags(void **state)
{
    fixture *f = *state;
    char bin[4096];
    assert_int_equal(h_build_path(bin, sizeof(bin), "bench/s3model/s3model"), 0);
    char *const help[] = {bin, "--help", NULL};
    char *const bad[] = {bin, "--upstream", "127.0.0.1:1", "--latency-ms", "soon", NULL};
    char *const unknown[] = {bin, "--upstream", "127.0.0.1:1", "--frobnicate", "1", NULL};
    h_proc *p;
    assert_int_equal(h_proc_start(f->env, &p, "s3model-help", help, NULL, NULL, 0), 0);
    assert_int_equal(h_proc_wait(p, 10000), 0);
    assert_int_equal(h_proc_start(f->env, &p, "s3model-bad", bad, NULL, NULL, 0), 0);
    assert_int_equal(h_proc_wait(p, 10000), 2);
    assert_int_equal(h_proc_start(f->env, &p, "s3model-unknown", unknown, NULL, NULL, 0), 0);
    assert_int_equal(h_proc_wait(p, 10000), 2);
    /* Logs say what and where. */
    const char *files[] = {"s3model-help.log", "s3model-bad.log", "s3model-unknown.log"};
    const char *want[] = {"--bandwidth-mib N", "--latency-ms must be an integer", "--frobnicate"};
    for (int i = 0; i < 3; i++) {
        char path[4096], text[8192];
        assert_int_equal(h_env_path(f->env, path, sizeof(path), files[i]), 0);
        FILE *fp = fopen(path, "r");
        assert_non_null(fp);
        size_t n = fread(text, 1, sizeof(text) - 1, fp);
        fclose(fp);
        text[n] = '\0';
        assert_non_null(strstr(text, want[i]));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_latency_lower_bound),
        cmocka_unit_test(test_bandwidth_lower_bound),
        cmocka_unit_test(test_counts_by_method_and_object),
        cmocka_unit_test(test_503_injection),
        cmocka_unit_test(test_reset_injection),
        cmocka_unit_test(test_stall_injection),
        cmocka_unit_test(test_malformed_gets_400),
        cmocka_unit_test(test_keepalive_and_pipelining),
        cmocka_unit_test(test_chunked_request_framing),
        cmocka_unit_test(test_large_object_byte_exact),
        cmocka_unit_test(test_upstream_down_gives_502),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
