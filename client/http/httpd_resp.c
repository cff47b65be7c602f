/* SPDX-License-Identifier: Apache-2.0
 *
 * httpd_resp.c: what a handler sees of a request (accessors, the body's
 * switches) and the response it writes: head, body with Content-Length or
 * chunked framing, the writable callback's bookkeeping, and the answers the
 * server gives by itself. Nothing here calls a handler's callback: state
 * changes kick the connection, which acts on them on the next loop turn.
 *
 *   HTTP/1.1 200 OK\r\n                       status line
 *   Date: Tue, 01 Dec 2026 20:41:29 GMT\r\n   always
 *   Server: ringcache\r\n                     unless server_name is ""
 *   <the handler's headers>\r\n
 *   Content-Length: N\r\n  or  Transfer-Encoding: chunked\r\n
 *   Connection: close\r\n                     on the connection's last answer
 *   \r\n
 *   <body: N bytes, or "<hex>\r\n<bytes>\r\n" ... "0\r\n\r\n">
 */
#include "httpd_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

/* ---- the request ---------------------------------------------------------- */

const char *httpd_req_method(const httpd_req *req)
{
    return req->method;
}

const char *httpd_req_target(const httpd_req *req)
{
    return req->target;
}

const char *httpd_req_path(const httpd_req *req)
{
    return req->path;
}

const char *httpd_req_query(const httpd_req *req)
{
    return req->query;
}

bool httpd_req_has_query(const httpd_req *req)
{
    return req->has_query;
}

int httpd_req_http_minor(const httpd_req *req)
{
    return req->minor;
}

const char *httpd_req_header(const httpd_req *req, const char *name)
{
    const httpd_conn *c = req->conn;
    for (int i = 0; i < c->nhdrs; i++)
        if (strcasecmp(c->hbuf + c->hdrs[i].name, name) == 0)
            return c->hbuf + c->hdrs[i].value;
    return NULL;
}

int httpd_req_header_count(const httpd_req *req)
{
    return req->conn->nhdrs;
}

int httpd_req_header_at(const httpd_req *req, int i, const char **name, const char **value)
{
    const httpd_conn *c = req->conn;
    if (i < 0 || i >= c->nhdrs)
        return -ERANGE;
    if (name)
        *name = c->hbuf + c->hdrs[i].name;
    if (value)
        *value = c->hbuf + c->hdrs[i].value;
    return 0;
}

int64_t httpd_req_content_length(const httpd_req *req)
{
    return req->content_length;
}

const struct sockaddr *httpd_req_peer(const httpd_req *req, socklen_t *len)
{
    if (len)
        *len = req->conn->peer_len;
    return (const struct sockaddr *)&req->conn->peer;
}

bool httpd_req_is_tls(const httpd_req *req)
{
    return req->conn->tls;
}

httpd_server *httpd_req_server(const httpd_req *req)
{
    return req->conn->srv;
}

static bool gone(const httpd_req *req)
{
    return req->conn->dead || req->conn->abort_pending || !req->active;
}

int httpd_req_read_body(httpd_req *req, httpd_body_fn on_data, httpd_body_end_fn on_end, void *arg)
{
    if (gone(req) || req->ended)
        return -EPIPE;
    if (req->body_wanted)
        return -EALREADY;
    req->on_data = on_data;
    req->on_end = on_end;
    req->body_arg = arg;
    req->body_wanted = true;
    req->skip_body = false;
    if (req->expect_continue && !req->started) {
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        bufferevent_write(req->conn->bev, cont, sizeof cont - 1);
        httpd__count_status(req->conn->srv, 100);
    }
    req->expect_continue = false;
    httpd__conn_kick(req->conn);
    return 0;
}

void httpd_req_pause_body(httpd_req *req)
{
    req->body_paused = true;
}

void httpd_req_resume_body(httpd_req *req)
{
    if (!req->body_paused)
        return;
    req->body_paused = false;
    if (!gone(req))
        httpd__conn_kick(req->conn);
}

void httpd_req_on_done(httpd_req *req, httpd_done_fn fn, void *arg)
{
    req->on_done = fn;
    req->done_arg = arg;
}

/* ---- the response head ------------------------------------------------------ */

int httpd_resp_set_status(httpd_req *req, int status)
{
    if (req->started || req->head_open)
        return -EALREADY;
    if (status < 100 || status > 599 || status == 100 || status == 101)
        return -EINVAL;
    req->status = status;
    return 0;
}

static bool is_tchar(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

int httpd_resp_add_header(httpd_req *req, const char *name, const char *value)
{
    if (req->started)
        return -EALREADY;
    if (name == NULL || value == NULL || name[0] == '\0')
        return -EINVAL;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (!is_tchar(*p))
            return -EINVAL;
    for (const char *p = value; *p; p++)
        if (*p == '\r' || *p == '\n')
            return -EINVAL;
    if (strcasecmp(name, "content-length") == 0 || strcasecmp(name, "transfer-encoding") == 0)
        return -EINVAL;
    if (strcasecmp(name, "connection") == 0) {
        if (strcasecmp(value, "close") != 0)
            return -EINVAL;
        req->close_after = true;
        return 0;
    }
    if (evbuffer_add_printf(req->head, "%s: %s\r\n", name, value) < 0)
        return -ENOMEM;
    return 0;
}

static const char *reason(int status)
{
    const char *s = http_status_str((enum http_status)status);
    return s && strcmp(s, "<unknown>") != 0 ? s : "Status";
}

void httpd__count_status(httpd_server *srv, int status)
{
    if (status >= HTTPD_STATUS_MIN && status <= HTTPD_STATUS_MAX)
        HTTPD__ADD(srv, status[status - HTTPD_STATUS_MIN], 1);
}

void httpd__note_out(httpd_conn *c)
{
    size_t n = evbuffer_get_length(bufferevent_get_output(c->bev));
    if (n > HTTPD__GET(c->srv, out_peak_bytes))
        HTTPD__SET(c->srv, out_peak_bytes, n);
    if (n >= c->srv->cfg.out_high_bytes)
        c->req.writable_blocked = true;
}

static void put_u64(char *buf, size_t cap, uint64_t v, int base, size_t *len)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v % (unsigned)base];
        v /= (unsigned)base;
    } while (v);
    for (size_t i = 0; i < n && i < cap; i++)
        buf[i] = tmp[n - 1 - i];
    *len = n;
}

/* "HTTP/1.1 200 OK", Date and Server. */
static void status_line(httpd_req *req)
{
    httpd_server *s = req->conn->srv;
    struct evbuffer *out = bufferevent_get_output(req->conn->bev);
    char line[256];
    int n = snprintf(line, sizeof line, "HTTP/1.1 %d %s\r\nDate: %s\r\n", req->status,
                     reason(req->status), httpd__date(s));
    evbuffer_add(out, line, (size_t)n);
    if (s->cfg.server_name[0] != '\0')
        evbuffer_add_printf(out, "Server: %s\r\n", s->cfg.server_name);
}

int httpd_resp_start(httpd_req *req, int64_t content_length)
{
    if (gone(req))
        return -EPIPE;
    if (req->started)
        return -EALREADY;
    if (content_length < -1)
        return -EINVAL;
    httpd_conn *c = req->conn;
    httpd_server *s = c->srv;
    int st = req->status;
    req->started = true;
    req->no_body = req->is_head || st < 200 || st == 204 || st == 304;
    req->resp_len = content_length;

    /* A body the handler did not ask for: a client waiting on 100-continue
     * never sends it; a chunked one or one longer than we skip would hold
     * the connection: both make this the last answer. */
    if (req->has_body && !req->body_wanted && !req->body_done) {
        uint64_t left = (uint64_t)req->content_length;
        if (req->expect_continue) {
            req->skip_body = true;
            req->close_after = true;
        } else if (req->content_length < 0 || left > s->cfg.max_discard_bytes) {
            req->close_after = true;
        }
        req->expect_continue = false;
    }
    if (s->draining || c->close_after)
        req->close_after = true;

    struct evbuffer *out = bufferevent_get_output(c->bev);
    if (!req->head_open)
        status_line(req);
    evbuffer_add_buffer(out, req->head);

    bool bodyless_status = st < 200 || st == 204 || st == 304;
    if (bodyless_status) {
        req->framing = FR_NONE;
    } else if (content_length >= 0) {
        req->framing = req->is_head ? FR_NONE : FR_LENGTH;
        char num[24];
        size_t nl;
        put_u64(num, sizeof num, (uint64_t)content_length, 10, &nl);
        evbuffer_add(out, "Content-Length: ", 16);
        evbuffer_add(out, num, nl);
        evbuffer_add(out, "\r\n", 2);
    } else if (req->is_head) {
        req->framing = FR_NONE;
    } else if (req->minor >= 1) {
        req->framing = FR_CHUNKED;
        evbuffer_add(out, "Transfer-Encoding: chunked\r\n", 28);
    } else {
        req->framing = FR_CLOSE;
        req->close_after = true;
    }
    if (req->close_after)
        evbuffer_add(out, "Connection: close\r\n\r\n", 21);
    else if (req->minor == 0)
        evbuffer_add(out, "Connection: keep-alive\r\n\r\n", 26);
    else
        evbuffer_add(out, "\r\n", 2);
    if (!req->head_open)
        httpd__count_status(s, st);
    req->head_open = false;
    httpd__note_out(c);
    return 0;
}

int httpd_resp_flush_head(httpd_req *req)
{
    if (gone(req))
        return -EPIPE;
    if (req->started)
        return -EALREADY;
    httpd_conn *c = req->conn;
    if (!req->head_open) {
        status_line(req);
        httpd__count_status(c->srv, req->status);
        req->head_open = true;
    }
    evbuffer_add_buffer(bufferevent_get_output(c->bev), req->head);
    httpd__note_out(c);
    return 0;
}

/* ---- the response body ------------------------------------------------------- */

/* Checks a write of len bytes: 1 to drop it (no body is sent), 0 to send it,
 * or -errno. */
static int body_check(httpd_req *req, size_t len)
{
    if (gone(req))
        return -EPIPE;
    if (!req->started || req->ended)
        return -EINVAL;
    if (req->framing == FR_LENGTH && req->resp_sent + len > (uint64_t)req->resp_len)
        return -EMSGSIZE;
    if (req->framing == FR_NONE || len == 0)
        return 1;
    return 0;
}

static void chunk_head(struct evbuffer *out, size_t len)
{
    char h[24];
    size_t n;
    put_u64(h, sizeof h - 2, len, 16, &n);
    h[n] = '\r';
    h[n + 1] = '\n';
    evbuffer_add(out, h, n + 2);
}

/* Queues len body bytes that add() puts into the output, framed as the
 * response says (a chunk head and CRLF around them when chunked). */
typedef int (*add_fn)(struct evbuffer *out, void *ctx);

static int queue(httpd_req *req, size_t len, add_fn add, void *ctx)
{
    struct evbuffer *out = bufferevent_get_output(req->conn->bev);
    if (req->framing == FR_CHUNKED)
        chunk_head(out, len);
    int rc = add(out, ctx);
    if (rc < 0)
        return rc;
    if (req->framing == FR_CHUNKED)
        evbuffer_add(out, "\r\n", 2);
    req->resp_sent += len;
    httpd__note_out(req->conn);
    return 0;
}

typedef struct bytes {
    const void *data;
    size_t len;
    httpd_ref_cleanup_fn cleanup;
    void *arg;
} bytes;

static int add_copy(struct evbuffer *out, void *ctx)
{
    bytes *b = ctx;
    return evbuffer_add(out, b->data, b->len) < 0 ? -ENOMEM : 0;
}

int httpd_resp_write(httpd_req *req, const void *data, size_t len)
{
    int rc = body_check(req, len);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    bytes b = {data, len, NULL, NULL};
    return queue(req, len, add_copy, &b);
}

typedef struct ref_ctx {
    httpd_ref_cleanup_fn fn;
    void *arg;
} ref_ctx;

static void ref_done(const void *data, size_t len, void *arg)
{
    ref_ctx *r = arg;
    if (r->fn)
        r->fn(data, len, r->arg);
    free(r);
}

static int add_ref(struct evbuffer *out, void *ctx)
{
    bytes *b = ctx;
    /* no cleanup: nothing to allocate per write */
    ref_ctx *r = NULL;
    if (b->cleanup != NULL) {
        r = malloc(sizeof *r);
        if (r == NULL)
            return -ENOMEM;
        r->fn = b->cleanup;
        r->arg = b->arg;
    }
    if (evbuffer_add_reference(out, b->data, b->len, r ? ref_done : NULL, r) < 0) {
        free(r);
        return -ENOMEM;
    }
    return 0;
}

int httpd_resp_write_ref(httpd_req *req, const void *data, size_t len, httpd_ref_cleanup_fn cleanup,
                         void *arg)
{
    int rc = body_check(req, len);
    if (rc != 0) {
        if (rc > 0 && cleanup)
            cleanup(data, len, arg);
        return rc < 0 ? rc : 0;
    }
    bytes b = {data, len, cleanup, arg};
    return queue(req, len, add_ref, &b);
}

static int add_buffer(struct evbuffer *out, void *ctx)
{
    return evbuffer_add_buffer(out, ctx) < 0 ? -ENOMEM : 0;
}

int httpd_resp_write_buffer(httpd_req *req, struct evbuffer *buf)
{
    size_t len = evbuffer_get_length(buf);
    int rc = body_check(req, len);
    if (rc != 0) {
        if (rc > 0)
            evbuffer_drain(buf, len);
        return rc < 0 ? rc : 0;
    }
    return queue(req, len, add_buffer, buf);
}

static int add_segment(struct evbuffer *out, void *ctx)
{
    struct evbuffer_file_segment *seg = ctx;
    return evbuffer_add_file_segment(out, seg, 0, -1) < 0 ? -ENOMEM : 0;
}

int httpd_resp_write_file(httpd_req *req, int fd, int64_t offset, size_t len)
{
    int rc = body_check(req, len);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    if (offset < 0)
        return -EINVAL;
    /* libevent closes the segment's descriptor once its bytes are out: give
     * it a copy */
    int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (d < 0)
        return -errno;
    struct evbuffer_file_segment *seg =
        evbuffer_file_segment_new(d, offset, (ev_off_t)len, EVBUF_FS_CLOSE_ON_FREE);
    if (seg == NULL) {
        close(d);
        return -ENOMEM;
    }
    rc = queue(req, len, add_segment, seg);
    evbuffer_file_segment_free(seg); /* the buffer holds its own reference */
    return rc;
}

typedef struct file_ref {
    httpd_file_cleanup_fn fn;
    void *arg;
} file_ref;

static void file_ref_done(const struct evbuffer_file_segment *seg, int flags, void *arg)
{
    (void)seg, (void)flags;
    file_ref *f = arg;
    f->fn(f->arg);
    free(f);
}

int httpd_resp_write_file_ref(httpd_req *req, int fd, int64_t offset, size_t len,
                              httpd_file_cleanup_fn cleanup, void *arg)
{
    if (offset < 0)
        return -EINVAL;
    int rc = body_check(req, len);
    if (rc != 0) {
        if (rc > 0)
            cleanup(arg);
        return rc < 0 ? rc : 0;
    }
    file_ref *f = malloc(sizeof *f);
    struct evbuffer_file_segment *seg =
        f ? evbuffer_file_segment_new(fd, offset, (ev_off_t)len, EVBUF_FS_DISABLE_LOCKING) : NULL;
    if (seg == NULL) {
        free(f);
        return -ENOMEM;
    }
    rc = queue(req, len, add_segment, seg);
    if (rc == 0) {
        /* from now on the bytes are the buffer's: cleanup once they are out */
        *f = (file_ref){cleanup, arg};
        evbuffer_file_segment_add_cleanup_cb(seg, file_ref_done, f);
    } else {
        free(f);
    }
    evbuffer_file_segment_free(seg); /* the buffer holds its own reference */
    return rc;
}

size_t httpd_resp_room(const httpd_req *req)
{
    if (req->conn->dead)
        return 0;
    size_t n = evbuffer_get_length(bufferevent_get_output(req->conn->bev));
    size_t high = req->conn->srv->cfg.out_high_bytes;
    return n < high ? high - n : 0;
}

void httpd_resp_on_writable(httpd_req *req, httpd_writable_fn fn, void *arg)
{
    req->on_writable = fn;
    req->writable_arg = arg;
    req->writable_kick = false;
    if (fn == NULL || gone(req))
        return;
    if (httpd_resp_room(req) > 0) {
        req->writable_kick = true;
        httpd__conn_kick(req->conn);
    } else {
        req->writable_blocked = true;
    }
}

int httpd_resp_end(httpd_req *req)
{
    if (gone(req))
        return -EPIPE;
    if (req->ended)
        return -EALREADY;
    if (!req->started) {
        int rc = httpd_resp_start(req, 0);
        if (rc < 0)
            return rc;
    }
    httpd_conn *c = req->conn;
    int rc = 0;
    if (req->framing == FR_CHUNKED) {
        evbuffer_add(bufferevent_get_output(c->bev), "0\r\n\r\n", 5);
    } else if (req->framing == FR_LENGTH && req->resp_sent < (uint64_t)req->resp_len) {
        /* short: the client must not take it for whole, nor read the next
         * answer out of the gap */
        req->close_after = true;
        rc = -EPROTO;
    }
    req->ended = true;
    req->on_writable = NULL;
    httpd__note_out(c);
    httpd__conn_kick(c);
    return rc;
}

void httpd_resp_abort(httpd_req *req)
{
    if (gone(req))
        return;
    req->conn->abort_pending = true;
    httpd__conn_kick(req->conn);
}

int httpd_resp_send(httpd_req *req, int status, const char *content_type, const void *body,
                    size_t len)
{
    int rc = httpd_resp_set_status(req, status);
    if (rc == 0 && content_type != NULL)
        rc = httpd_resp_add_header(req, "Content-Type", content_type);
    if (rc == 0)
        rc = httpd_resp_start(req, (int64_t)len);
    if (rc == 0 && len > 0)
        rc = httpd_resp_write(req, body, len);
    if (rc == 0)
        rc = httpd_resp_end(req);
    return rc;
}

bool httpd_resp_started(const httpd_req *req)
{
    return req->started;
}

/* ---- the server's own answers ----------------------------------------------- */

void httpd__error_reply(httpd_conn *c, int status, const char *message)
{
    httpd_server *s = c->srv;
    struct evbuffer *body = evbuffer_new();
    struct evbuffer *out = bufferevent_get_output(c->bev);
    const char *ctype = NULL;
    if (body != NULL && s->cfg.error_body != NULL)
        ctype = s->cfg.error_body(status, message, body, s->cfg.error_body_arg);
    if (body != NULL && ctype == NULL) {
        evbuffer_drain(body, evbuffer_get_length(body));
        evbuffer_add_printf(body, "%s\n", message);
        ctype = "text/plain; charset=utf-8";
    }
    size_t blen = body ? evbuffer_get_length(body) : 0;
    evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nDate: %s\r\n", status, reason(status),
                        httpd__date(s));
    if (s->cfg.server_name[0] != '\0')
        evbuffer_add_printf(out, "Server: %s\r\n", s->cfg.server_name);
    if (status == 503)
        evbuffer_add(out, "Retry-After: 1\r\n", 16);
    evbuffer_add_printf(out, "Content-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                        ctype ? ctype : "text/plain", blen);
    if (body != NULL) {
        evbuffer_add_buffer(out, body);
        evbuffer_free(body);
    }
    httpd__count_status(s, status);
    c->close_after = true;
    c->linger = true;
    c->phase = PH_CLOSING;
    bufferevent_disable(c->bev, EV_READ);
    httpd__note_out(c);
    /* the write callback closes once it is out (or at once if it already is) */
    if (evbuffer_get_length(out) == 0)
        httpd__conn_abort(c, 0);
}
