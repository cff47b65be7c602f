/* SPDX-License-Identifier: Apache-2.0
 *
 * httpd_test_util.c: the server thread, the test handler's routes and the raw
 * client of httpd_test_util.h.
 */
#include "httpd_test_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <openssl/evp.h>

static void die(const char *what)
{
    fprintf(stderr, "httpd test: %s\n", what);
    abort();
}

/* ---- the handler ------------------------------------------------------------ */

typedef struct rq {
    ts_server *ts;
    httpd_req *req;
    EVP_MD_CTX *md;
    uint64_t got;
    struct event *timer;
    /* /big */
    uint64_t total, sent;
    bool chunked, ref;
    unsigned char piece[64 * 1024];
} rq;

static uint64_t query_u64(const char *q, const char *name, uint64_t def)
{
    size_t n = strlen(name);
    for (const char *p = q; p && *p;) {
        if (strncmp(p, name, n) == 0 && p[n] == '=')
            return strtoull(p + n + 1, NULL, 10);
        p = strchr(p, '&');
        if (p)
            p++;
    }
    return def;
}

static void rq_free(rq *x)
{
    if (x->timer)
        event_free(x->timer);
    if (x->md)
        EVP_MD_CTX_free(x->md);
    free(x);
}

static void on_done(httpd_req *req, int status, void *arg)
{
    (void)req;
    rq *x = arg;
    atomic_store(&x->ts->last_done_status, status);
    if (status == 0)
        atomic_fetch_add(&x->ts->done_ok, 1);
    else
        atomic_fetch_add(&x->ts->done_err, 1);
    rq_free(x);
}

static void echo_data(httpd_req *req, const void *d, size_t n, void *arg);

static void resume_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    rq *x = arg;
    httpd_req_resume_body(x->req);
}

static void echo_data(httpd_req *req, const void *d, size_t n, void *arg)
{
    rq *x = arg;
    EVP_DigestUpdate(x->md, d, n);
    x->got += n;
    atomic_fetch_add(&x->ts->body_bytes, (long long)n);
    if (x->timer != NULL) {
        httpd_req_pause_body(req);
        struct timeval tv = {0, 2000};
        evtimer_add(x->timer, &tv);
    }
}

static void echo_end(httpd_req *req, int status, void *arg)
{
    rq *x = arg;
    atomic_store(&x->ts->last_body_end, status);
    if (status != 0) {
        atomic_fetch_add(&x->ts->body_end_err, 1);
        if (status == -ETIMEDOUT)
            httpd_resp_send(req, 408, "text/plain", "body timeout\n", 13);
        else if (status == -EPROTO)
            httpd_resp_send(req, 400, "text/plain", "bad body\n", 9);
        return;
    }
    atomic_fetch_add(&x->ts->body_end_ok, 1);
    unsigned char md[32];
    unsigned int ml = 0;
    EVP_DigestFinal_ex(x->md, md, &ml);
    char out[128];
    int k = snprintf(out, sizeof out, "%llu ", (unsigned long long)x->got);
    for (int i = 0; i < 32; i++)
        k += snprintf(out + k, sizeof out - (size_t)k, "%02x", md[i]);
    out[k++] = '\n';
    httpd_resp_send(req, 200, "text/plain", out, (size_t)k);
}

static void big_fill(httpd_req *req, void *arg)
{
    rq *x = arg;
    if (arg != NULL && x->sent > 0)
        atomic_fetch_add(&x->ts->writable_calls, 1);
    while (x->sent < x->total && httpd_resp_room(req) > 0) {
        size_t n = sizeof x->piece;
        if (x->total - x->sent < n)
            n = (size_t)(x->total - x->sent);
        for (size_t i = 0; i < n; i++)
            x->piece[i] = ts_pattern(x->sent + i);
        if (httpd_resp_write(req, x->piece, n) < 0)
            return;
        x->sent += n;
    }
    if (x->sent == x->total)
        httpd_resp_end(req);
}

static void file_piece_done(void *arg)
{
    ts_server *ts = arg;
    atomic_fetch_add(&ts->file_refs_done, 1);
    atomic_fetch_sub(&ts->file_refs_out, 1);
}

static void file_fill(httpd_req *req, void *arg)
{
    rq *x = arg;
    while (x->sent < x->total && httpd_resp_room(req) > 0) {
        size_t n = sizeof x->piece;
        if (x->total - x->sent < n)
            n = (size_t)(x->total - x->sent);
        int rc;
        if (x->ref) {
            atomic_fetch_add(&x->ts->file_refs_out, 1);
            rc = httpd_resp_write_file_ref(req, x->ts->file_fd, (int64_t)x->sent, n,
                                           file_piece_done, x->ts);
        } else {
            rc = httpd_resp_write_file(req, x->ts->file_fd, (int64_t)x->sent, n);
        }
        if (rc < 0)
            return;
        x->sent += n;
    }
    if (x->sent == x->total)
        httpd_resp_end(req);
}

static void async_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    rq *x = arg;
    httpd_resp_send(x->req, 200, "text/plain", "async\n", 6);
}

/* /early: the late header and the body, after the head was flushed. */
static void early_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    rq *x = arg;
    httpd_resp_add_header(x->req, "X-Late", "2");
    httpd_resp_start(x->req, -1);
    httpd_resp_write(x->req, "late\n", 5);
    httpd_resp_end(x->req);
}

static void handler(httpd_req *req, void *arg)
{
    ts_server *ts = arg;
    atomic_fetch_add(&ts->requests, 1);
    rq *x = calloc(1, sizeof *x);
    if (x == NULL)
        die("out of memory");
    x->ts = ts;
    x->req = req;
    httpd_req_on_done(req, on_done, x);
    const char *path = httpd_req_path(req);
    const char *q = httpd_req_query(req);
    if (strcmp(path, "/hello") == 0) {
        httpd_resp_send(req, 200, "text/plain", "hello\n", 6);
    } else if (strcmp(path, "/echo") == 0 || strcmp(path, "/slowecho") == 0) {
        x->md = EVP_MD_CTX_new();
        EVP_DigestInit_ex(x->md, EVP_sha256(), NULL);
        if (strcmp(path, "/slowecho") == 0)
            x->timer = evtimer_new(ts->base, resume_cb, x);
        httpd_req_read_body(req, echo_data, echo_end, x);
    } else if (strcmp(path, "/deny") == 0) {
        httpd_resp_send(req, 403, "text/plain", "denied\n", 7);
    } else if (strcmp(path, "/big") == 0) {
        x->total = query_u64(q, "bytes", 1000);
        x->chunked = query_u64(q, "chunked", 0) != 0;
        httpd_resp_add_header(req, "Content-Type", "application/octet-stream");
        httpd_resp_start(req, x->chunked ? -1 : (int64_t)x->total);
        if (strcmp(httpd_req_method(req), "HEAD") == 0) {
            httpd_resp_end(req);
            return;
        }
        httpd_resp_on_writable(req, big_fill, x);
    } else if (strcmp(path, "/file") == 0) {
        x->total = (uint64_t)ts->file_len;
        x->ref = query_u64(q, "ref", 0) != 0;
        httpd_resp_start(req, query_u64(q, "chunked", 0) ? -1 : ts->file_len);
        httpd_resp_on_writable(req, file_fill, x);
    } else if (strcmp(path, "/async") == 0) {
        x->timer = evtimer_new(ts->base, async_cb, x);
        uint64_t ms = query_u64(q, "ms", 50);
        struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
        evtimer_add(x->timer, &tv);
    } else if (strcmp(path, "/early") == 0) {
        httpd_resp_set_status(req, 202);
        httpd_resp_add_header(req, "X-Early", "1");
        httpd_resp_flush_head(req);
        if (httpd_resp_set_status(req, 500) != -EALREADY)
            die("the status changed after the head was flushed");
        x->timer = evtimer_new(ts->base, early_cb, x);
        uint64_t ms = query_u64(q, "ms", 300);
        struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
        evtimer_add(x->timer, &tv);
    } else if (strcmp(path, "/abort") == 0) {
        httpd_resp_start(req, -1);
        memset(x->piece, 'a', 1000);
        httpd_resp_write(req, x->piece, 1000);
        httpd_resp_abort(req);
    } else {
        httpd_resp_send(req, 404, "text/plain", "no such route\n", 14);
    }
}

/* ---- the server thread --------------------------------------------------------- */

static void *server_main(void *arg)
{
    ts_server *ts = arg;
    int rc = httpd_server_create(&ts->srv, ts->base, &ts->cfg, ts->err, sizeof ts->err);
    pthread_mutex_lock(&ts->mu);
    ts->create_rc = rc;
    ts->port = rc == 0 ? httpd_server_port(ts->srv) : 0;
    ts->ready = true;
    pthread_cond_broadcast(&ts->cv);
    pthread_mutex_unlock(&ts->mu);
    if (rc < 0)
        return NULL;
    event_base_loop(ts->base, EVLOOP_NO_EXIT_ON_EMPTY);
    httpd_server_destroy(&ts->srv);
    return NULL;
}

void ts_start(ts_server *ts, const httpd_config *cfg)
{
    ts_start_file(ts, cfg, -1, 0);
}

void ts_start_file(ts_server *ts, const httpd_config *cfg, int fd, int64_t len)
{
    static bool threads_on;
    if (!threads_on) {
        evthread_use_pthreads();
        threads_on = true;
    }
    memset(ts, 0, sizeof *ts);
    ts->file_fd = fd;
    ts->file_len = len;
    if (cfg)
        ts->cfg = *cfg;
    else
        httpd_config_init(&ts->cfg);
    ts->cfg.handler = handler;
    ts->cfg.handler_arg = ts;
    pthread_mutex_init(&ts->mu, NULL);
    pthread_cond_init(&ts->cv, NULL);
    ts->base = event_base_new();
    if (ts->base == NULL)
        die("event_base_new failed");
    pthread_create(&ts->th, NULL, server_main, ts);
    pthread_mutex_lock(&ts->mu);
    while (!ts->ready)
        pthread_cond_wait(&ts->cv, &ts->mu);
    pthread_mutex_unlock(&ts->mu);
    if (ts->create_rc < 0) {
        fprintf(stderr, "httpd test: server did not start: %s\n", ts->err);
        abort();
    }
}

typedef struct call_ctx {
    ts_server *ts;
    void (*fn)(ts_server *);
    bool done;
} call_ctx;

static void call_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    call_ctx *c = arg;
    c->fn(c->ts);
    pthread_mutex_lock(&c->ts->mu);
    c->done = true;
    pthread_cond_broadcast(&c->ts->cv);
    pthread_mutex_unlock(&c->ts->mu);
}

void ts_call(ts_server *ts, void (*fn)(ts_server *))
{
    call_ctx c = {ts, fn, false};
    event_base_once(ts->base, -1, EV_TIMEOUT, call_cb, &c, NULL);
    pthread_mutex_lock(&ts->mu);
    while (!c.done)
        pthread_cond_wait(&ts->cv, &ts->mu);
    pthread_mutex_unlock(&ts->mu);
}

static void break_loop(ts_server *ts)
{
    event_base_loopbreak(ts->base);
}

void ts_stop(ts_server *ts)
{
    ts_call(ts, break_loop);
    pthread_join(ts->th, NULL);
    event_base_free(ts->base);
    pthread_mutex_destroy(&ts->mu);
    pthread_cond_destroy(&ts->cv);
}

void ts_stats(ts_server *ts, httpd_stats *st)
{
    httpd_server_stats(ts->srv, st);
}

int ts_wait_atomic(atomic_int *v, int want)
{
    int seen = 0;
    for (int i = 0; i < 2000; i++) {
        seen = atomic_load(v);
        if (seen >= want)
            break;
        usleep(10000);
    }
    return seen;
}

/* ---- the raw client ------------------------------------------------------------- */

int tc_connect(int port)
{
    return tc_connect_rcvbuf(port, 0);
}

int tc_connect_rcvbuf(int port, int rcvbuf)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die("socket failed");
    if (rcvbuf > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
        die("connect to the test server failed");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

void tc_send(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* the server closed: the test's reads say so */
        p += n;
        len -= (size_t)n;
    }
}

void tc_sends(int fd, const char *s)
{
    tc_send(fd, s, strlen(s));
}

struct tc_reader {
    int fd;
    char buf[256 * 1024];
    size_t len;
    http_parser p;
    tc_resp *cur;
    char field[64];
    int want; /* which header the next value belongs to */
    bool head;
};

tc_reader *tc_reader_create(int fd)
{
    tc_reader *r = calloc(1, sizeof *r);
    if (r == NULL)
        die("out of memory");
    r->fd = fd;
    return r;
}

void tc_reader_destroy(tc_reader **r)
{
    free(*r);
    *r = NULL;
}

static int rd_field(http_parser *p, const char *at, size_t n)
{
    tc_reader *r = p->data;
    size_t k = strlen(r->field);
    if (r->want != 0)
        k = 0, r->field[0] = '\0', r->want = 0;
    if (k + n < sizeof r->field) {
        memcpy(r->field + k, at, n);
        r->field[k + n] = '\0';
    }
    return 0;
}

static int rd_value(http_parser *p, const char *at, size_t n)
{
    tc_reader *r = p->data;
    r->want = 1;
    char *dst = NULL;
    size_t cap = 0;
    if (strcasecmp(r->field, "content-length") == 0)
        dst = r->cur->content_length, cap = sizeof r->cur->content_length;
    else if (strcasecmp(r->field, "connection") == 0)
        dst = r->cur->connection, cap = sizeof r->cur->connection;
    else if (strcasecmp(r->field, "transfer-encoding") == 0)
        dst = r->cur->transfer_encoding, cap = sizeof r->cur->transfer_encoding;
    else if (strcasecmp(r->field, "retry-after") == 0)
        dst = r->cur->retry_after, cap = sizeof r->cur->retry_after;
    if (dst != NULL) {
        size_t k = strlen(dst);
        if (k + n < cap) {
            memcpy(dst + k, at, n);
            dst[k + n] = '\0';
        }
    }
    return 0;
}

static int rd_headers_done(http_parser *p)
{
    tc_reader *r = p->data;
    r->cur->status = p->status_code;
    r->cur->minor = p->http_minor;
    return r->head ? 1 : 0;
}

static int rd_body(http_parser *p, const char *at, size_t n)
{
    tc_reader *r = p->data;
    tc_resp *x = r->cur;
    char *b = realloc(x->body, x->body_len + n + 1);
    if (b == NULL)
        die("out of memory");
    memcpy(b + x->body_len, at, n);
    x->body = b;
    x->body_len += n;
    x->body[x->body_len] = '\0';
    return 0;
}

static int rd_done(http_parser *p)
{
    tc_reader *r = p->data;
    r->cur->complete = true;
    http_parser_pause(p, 1);
    return 0;
}

static int fill(tc_reader *r)
{
    struct pollfd pf = {.fd = r->fd, .events = POLLIN};
    int pr = poll(&pf, 1, 20000);
    if (pr == 0)
        return -ETIMEDOUT;
    ssize_t n = recv(r->fd, r->buf + r->len, sizeof r->buf - r->len, 0);
    if (n <= 0)
        return -ECONNRESET;
    r->len += (size_t)n;
    return 0;
}

int tc_read(tc_reader *r, tc_resp *resp, bool head)
{
    static http_parser_settings s;
    http_parser_settings_init(&s);
    s.on_header_field = rd_field;
    s.on_header_value = rd_value;
    s.on_headers_complete = rd_headers_done;
    s.on_body = rd_body;
    s.on_message_complete = rd_done;
    memset(resp, 0, sizeof *resp);
    http_parser_init(&r->p, HTTP_RESPONSE);
    r->p.data = r;
    r->cur = resp;
    r->head = head;
    r->field[0] = '\0';
    r->want = 0;
    for (;;) {
        if (r->len > 0) {
            size_t used = http_parser_execute(&r->p, &s, r->buf, r->len);
            memmove(r->buf, r->buf + used, r->len - used);
            r->len -= used;
            if (resp->complete)
                return 0;
            if (HTTP_PARSER_ERRNO(&r->p) != HPE_OK) {
                fprintf(stderr, "httpd test: bad answer: %s\n",
                        http_errno_description(HTTP_PARSER_ERRNO(&r->p)));
                return -EPROTO;
            }
        }
        int rc = fill(r);
        if (rc == -ECONNRESET) {
            /* a close-delimited body ends here */
            http_parser_execute(&r->p, &s, NULL, 0);
            return resp->complete ? 0 : -ECONNRESET;
        }
        if (rc < 0)
            return rc;
    }
}

int tc_read_head_raw(tc_reader *r, char *buf, size_t cap)
{
    for (;;) {
        char *end = r->len ? memmem(r->buf, r->len, "\r\n\r\n", 4) : NULL;
        if (end != NULL) {
            size_t n = (size_t)(end - r->buf) + 4;
            size_t k = n < cap - 1 ? n : cap - 1;
            memcpy(buf, r->buf, k);
            buf[k] = '\0';
            memmove(r->buf, r->buf + n, r->len - n);
            r->len -= n;
            return 0;
        }
        int rc = fill(r);
        if (rc < 0)
            return rc;
    }
}

void tc_resp_free(tc_resp *resp)
{
    free(resp->body);
    resp->body = NULL;
}

int tc_wait_closed(int fd)
{
    char b[65536];
    for (int i = 0; i < 10000; i++) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, 20000) <= 0)
            return -ETIMEDOUT;
        ssize_t n = recv(fd, b, sizeof b, 0);
        if (n <= 0)
            return 0;
    }
    return -ETIMEDOUT;
}
