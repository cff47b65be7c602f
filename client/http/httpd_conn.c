/* SPDX-License-Identifier: Apache-2.0
 *
 * httpd_conn.c: one HTTP/1.1 connection: bytes from the bufferevent through
 * http_parser, the phases of httpd_int.h, the handler's callbacks, timers,
 * the close (with lingering, so a client still sending a body it was refused
 * reads the refusal rather than a reset).
 *
 * Re-entrancy: every libevent callback here enters the connection (depth++)
 * and leaves it (depth--, free if it died meanwhile). The handler's callbacks
 * run only from these entries; the httpd_* calls a handler makes only change
 * state and kick the connection's work event, which runs conn_process on the
 * next loop turn. So no handler callback ever runs inside an httpd_* call.
 */
#include "httpd_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

enum timer_kind { T_NONE, T_IDLE, T_HEAD, T_BODY, T_LINGER };

static void conn_process(httpd_conn *c);
static void conn_free(httpd_conn *c);
static void begin_close(httpd_conn *c, bool linger);

static void enter(httpd_conn *c)
{
    c->depth++;
}

static void leave(httpd_conn *c)
{
    if (--c->depth == 0 && c->dead)
        conn_free(c);
}

static void set_timer(httpd_conn *c, enum timer_kind k)
{
    if ((int)k == c->timer_kind && k != T_BODY)
        return;
    c->timer_kind = (int)k;
    const httpd_config *cfg = &c->srv->cfg;
    int ms = -1;
    switch (k) {
    case T_IDLE: ms = cfg->idle_timeout_ms; break;
    case T_HEAD: ms = cfg->header_timeout_ms; break;
    case T_BODY: ms = cfg->body_timeout_ms; break;
    case T_LINGER: ms = cfg->linger_ms; break;
    case T_NONE: break;
    }
    if (ms < 0) {
        evtimer_del(c->timer);
        return;
    }
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(c->timer, &tv);
}

void httpd__conn_kick(httpd_conn *c)
{
    if (!c->dead)
        event_active(c->work, EV_TIMEOUT, 0);
}

/* ---- the head buffer ----------------------------------------------------- */

/* Makes room for n more bytes (and a NUL). The head is bounded: at most
 * max_header_bytes, a NUL per string, and the split copies of path and query. */
static int hbuf_reserve(httpd_conn *c, size_t n)
{
    if (c->hlen + n + 1 <= c->hcap)
        return 0;
    const httpd_config *cfg = &c->srv->cfg;
    size_t limit = cfg->max_header_bytes + 2 * (size_t)cfg->max_headers + cfg->max_url_bytes + 16;
    if (c->hlen + n + 1 > limit)
        return -1;
    size_t cap = c->hcap ? c->hcap : 1024;
    while (cap < c->hlen + n + 1)
        cap *= 2;
    if (cap > limit)
        cap = limit;
    char *b = realloc(c->hbuf, cap);
    if (b == NULL)
        return -1;
    c->hbuf = b;
    c->hcap = cap;
    return 0;
}

/* Appends d[0..n); d must not point into the head buffer (it may move). */
static int hbuf_put(httpd_conn *c, const char *d, size_t n)
{
    if (hbuf_reserve(c, n) < 0)
        return -1;
    memcpy(c->hbuf + c->hlen, d, n);
    c->hlen += n;
    return 0;
}

enum { HS_URL, HS_FIELD, HS_VALUE };

static int head_state(const httpd_conn *c)
{
    if (c->nhdrs == 0)
        return HS_URL;
    return c->in_value ? HS_VALUE : HS_FIELD;
}

/* Counts bytes of URL, names and values (the parser's own separators and
 * our NULs do not count) against max_header_bytes. */
static int too_big(httpd_conn *c, size_t more)
{
    c->head_raw += more;
    if (c->head_raw > c->srv->cfg.max_header_bytes) {
        c->head_error = 431;
        return -1;
    }
    return 0;
}

/* ---- parser callbacks ---------------------------------------------------- */

static int on_message_begin(http_parser *p)
{
    httpd_conn *c = p->data;
    c->hlen = 0;
    c->head_raw = 0;
    c->nhdrs = 0;
    c->in_value = false;
    c->url_len = 0;
    c->trailer_bytes = 0;
    c->in_trailers = false;
    c->head_error = 0;
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
    httpd_conn *c = p->data;
    c->url_len += len;
    if (c->url_len > c->srv->cfg.max_url_bytes) {
        c->head_error = 414;
        return -1;
    }
    if (too_big(c, len) < 0 || hbuf_put(c, at, len) < 0)
        return c->head_error = c->head_error ? c->head_error : 431, -1;
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
    httpd_conn *c = p->data;
    if (c->in_trailers) {
        c->trailer_bytes += len;
        return c->trailer_bytes > c->srv->cfg.max_header_bytes ? -1 : 0;
    }
    int hs = head_state(c);
    if (hs != HS_FIELD) {
        /* a new header: end the URL or the previous value */
        if (c->nhdrs >= c->srv->cfg.max_headers) {
            c->head_error = 431;
            return -1;
        }
        if (hbuf_put(c, "", 1) < 0)
            return c->head_error = 431, -1;
        c->hdrs[c->nhdrs].name = (uint32_t)c->hlen;
        c->hdrs[c->nhdrs].value = 0;
        c->nhdrs++;
        c->in_value = false;
    }
    if (too_big(c, len) < 0 || hbuf_put(c, at, len) < 0)
        return c->head_error = 431, -1;
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
    httpd_conn *c = p->data;
    if (c->in_trailers) {
        c->trailer_bytes += len;
        return c->trailer_bytes > c->srv->cfg.max_header_bytes ? -1 : 0;
    }
    if (head_state(c) == HS_FIELD) {
        if (hbuf_put(c, "", 1) < 0)
            return c->head_error = 431, -1;
        c->hdrs[c->nhdrs - 1].value = (uint32_t)c->hlen;
        c->in_value = true;
    }
    if (too_big(c, len) < 0 || hbuf_put(c, at, len) < 0)
        return c->head_error = 431, -1;
    return 0;
}

static int on_headers_complete(http_parser *p)
{
    httpd_conn *c = p->data;
    int hs = head_state(c);
    if (hs == HS_FIELD) {
        /* a name without a value cannot come out of the parser; be safe */
        if (hbuf_put(c, "", 1) < 0)
            return c->head_error = 431, -1;
        c->hdrs[c->nhdrs - 1].value = (uint32_t)c->hlen;
        c->in_value = true;
    }
    if (hbuf_put(c, "", 1) < 0)
        return c->head_error = 431, -1;
    c->in_trailers = true;
    c->pause = PAUSE_HEAD;
    http_parser_pause(p, 1);
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    httpd_conn *c = p->data;
    httpd_req *r = &c->req;
    if (c->discarding || !r->body_wanted || r->ended) {
        c->discarded += len;
        if (c->discarded > c->srv->cfg.max_discard_bytes) {
            c->discard_overflow = true;
            return -1;
        }
        return 0;
    }
    if (r->on_data != NULL)
        r->on_data(r, at, len, r->body_arg);
    if (c->dead || c->abort_pending || r->body_paused) {
        c->pause = PAUSE_BODY;
        http_parser_pause(p, 1);
    }
    return 0;
}

static int on_message_complete(http_parser *p)
{
    httpd_conn *c = p->data;
    c->pause = PAUSE_MESSAGE;
    http_parser_pause(p, 1);
    return 0;
}

void httpd__conn_settings(http_parser_settings *s)
{
    http_parser_settings_init(s);
    s->on_message_begin = on_message_begin;
    s->on_url = on_url;
    s->on_header_field = on_header_field;
    s->on_header_value = on_header_value;
    s->on_headers_complete = on_headers_complete;
    s->on_body = on_body;
    s->on_message_complete = on_message_complete;
}

/* ---- the head, checked and handed over ----------------------------------- */

static void trim_value(char *v)
{
    size_t n = strlen(v);
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        v[--n] = '\0';
}

/* Splits the target into NUL-terminated path and query (appended to the head
 * buffer). Returns 0 or -1 for a target that is not origin-, absolute- or
 * asterisk-form. */
static int split_target(httpd_conn *c, uint32_t *path_off, uint32_t *query_off, bool *has_q)
{
    const char *t = c->hbuf;
    size_t n = strlen(t);
    size_t ps = 0, pe, qs = 0, qe = 0;
    *has_q = false;
    if (n == 1 && t[0] == '*') {
        pe = 1;
    } else {
        if (t[0] != '/') {
            size_t skip;
            if (strncasecmp(t, "http://", 7) == 0)
                skip = 7;
            else if (strncasecmp(t, "https://", 8) == 0)
                skip = 8;
            else
                return -1;
            const char *slash = strpbrk(t + skip, "/?#");
            ps = slash ? (size_t)(slash - t) : n;
        }
        pe = ps;
        while (pe < n && t[pe] != '?' && t[pe] != '#')
            pe++;
        if (pe < n && t[pe] == '?') {
            *has_q = true;
            qs = pe + 1;
            qe = qs;
            while (qe < n && t[qe] != '#')
                qe++;
        }
    }
    /* the copies go after everything else; reserve first, so that the
     * buffer does not move under its own bytes */
    bool empty_path = pe == ps || t[ps] == '?' || t[ps] == '#';
    size_t plen = empty_path ? 1 : pe - ps;
    size_t qlen = *has_q ? qe - qs : 0;
    if (hbuf_reserve(c, plen + qlen + 2) < 0)
        return -2;
    char *b = c->hbuf;
    size_t off_path = c->hlen;
    memmove(b + c->hlen, empty_path ? "/" : b + ps, plen);
    c->hlen += plen;
    b[c->hlen++] = '\0';
    size_t off_query = c->hlen;
    memmove(b + c->hlen, b + qs, qlen);
    c->hlen += qlen;
    b[c->hlen++] = '\0';
    *path_off = (uint32_t)off_path;
    *query_off = (uint32_t)off_query;
    return 0;
}

static const char *find_header(const httpd_conn *c, const char *name, int *count)
{
    const char *first = NULL;
    int k = 0;
    for (int i = 0; i < c->nhdrs; i++) {
        if (strcasecmp(c->hbuf + c->hdrs[i].name, name) == 0) {
            if (first == NULL)
                first = c->hbuf + c->hdrs[i].value;
            k++;
        }
    }
    if (count)
        *count = k;
    return first;
}

static void head_complete(httpd_conn *c)
{
    httpd_server *s = c->srv;
    http_parser *p = &c->parser;
    httpd_req *r = &c->req;
    HTTPD__ADD(s, requests, 1);
    char msg[160];

    for (int i = 0; i < c->nhdrs; i++)
        trim_value(c->hbuf + c->hdrs[i].value);

    if (p->http_major != 1) {
        snprintf(msg, sizeof msg, "HTTP/%u.%u is not supported by this server; use HTTP/1.1",
                 p->http_major, p->http_minor);
        HTTPD__ADD(s, parse_errors, 1);
        httpd__error_reply(c, 505, msg);
        return;
    }
    if (p->method == HTTP_CONNECT) {
        HTTPD__ADD(s, parse_errors, 1);
        httpd__error_reply(c, 501, "CONNECT is not supported by this server (it is not a proxy)");
        return;
    }
    uint32_t po, qo;
    bool has_q;
    int rc = split_target(c, &po, &qo, &has_q);
    if (rc < 0 || (strcmp(c->hbuf, "*") == 0 && p->method != HTTP_OPTIONS)) {
        HTTPD__ADD(s, parse_errors, 1);
        httpd__error_reply(c, rc == -2 ? 431 : 400,
                           rc == -2 ? "the request head is larger than this server's limit"
                                    : "the request target must be a path starting with '/'");
        return;
    }
    int nhost = 0;
    find_header(c, "host", &nhost);
    if ((p->http_minor >= 1 && nhost == 0) || nhost > 1) {
        HTTPD__ADD(s, parse_errors, 1);
        httpd__error_reply(c, 400,
                           nhost ? "the request has more than one Host header"
                                 : "an HTTP/1.1 request needs a Host header");
        return;
    }
    const char *expect = find_header(c, "expect", NULL);
    if (expect != NULL && strcasecmp(expect, "100-continue") != 0) {
        snprintf(msg, sizeof msg, "Expect: %.60s is not supported; only 100-continue is", expect);
        HTTPD__ADD(s, parse_errors, 1);
        httpd__error_reply(c, 417, msg);
        return;
    }
    if (c->reject) {
        HTTPD__ADD(s, conns_rejected, 1);
        snprintf(msg, sizeof msg, "the server is at its limit of %d connections; retry in a moment",
                 s->cfg.max_conns);
        httpd__error_reply(c, 503, msg);
        return;
    }

    r->method = http_method_str((enum http_method)p->method);
    r->target = c->hbuf;
    r->path = c->hbuf + po;
    r->query = c->hbuf + qo;
    r->has_query = has_q;
    r->minor = p->http_minor;
    r->is_head = p->method == HTTP_HEAD;
    if (p->flags & F_CHUNKED) {
        r->content_length = -1;
        r->has_body = true;
    } else if (p->content_length == ULLONG_MAX || p->content_length == 0) {
        r->content_length = 0;
    } else {
        r->content_length = (int64_t)p->content_length;
        r->has_body = true;
    }
    r->expect_continue = expect != NULL && p->http_minor >= 1 && r->has_body;
    r->status = 200;
    r->close_after = !http_should_keep_alive(p) || p->upgrade || c->close_after || s->draining;
    r->active = true;
    c->phase = PH_REQ;
    set_timer(c, T_NONE);
    s->cfg.handler(r, s->cfg.handler_arg);
}

/* ---- the body ------------------------------------------------------------ */

static bool body_flowing(const httpd_conn *c)
{
    const httpd_req *r = &c->req;
    return c->phase == PH_REQ && r->body_wanted && !r->body_paused && !r->body_done && !r->ended;
}

static void body_end(httpd_conn *c, int status)
{
    httpd_req *r = &c->req;
    r->body_done = true;
    if (r->active && r->body_wanted && !r->body_end_called && !r->ended) {
        r->body_end_called = true;
        if (r->on_end != NULL)
            r->on_end(r, status, r->body_arg);
    }
}

/* ---- the end of a request ------------------------------------------------ */

static void finish_request(httpd_conn *c)
{
    httpd_req *r = &c->req;
    bool close = r->close_after || c->close_after;
    bool unread = r->skip_body || !r->body_done;
    r->active = false;
    if (r->on_done != NULL)
        r->on_done(r, 0, r->done_arg);
    if (c->dead)
        return;
    httpd__req_reset(c);
    c->discarding = false;
    c->discarded = 0;
    if (close) {
        begin_close(c, unread);
        return;
    }
    c->phase = PH_IDLE;
    set_timer(c, T_IDLE);
}

/* ---- closing --------------------------------------------------------------- */

static void close_now(httpd_conn *c)
{
    int fd = bufferevent_getfd(c->bev);
    if (c->linger && !c->tls && fd >= 0 && c->srv->cfg.linger_ms > 0 && !c->peer_eof) {
        shutdown(fd, SHUT_WR);
        c->lingering = true;
        bufferevent_disable(c->bev, EV_WRITE);
        bufferevent_setwatermark(c->bev, EV_READ, 0, 0);
        bufferevent_enable(c->bev, EV_READ);
        evbuffer_drain(bufferevent_get_input(c->bev),
                       evbuffer_get_length(bufferevent_get_input(c->bev)));
        set_timer(c, T_LINGER);
        return;
    }
    httpd__conn_abort(c, 0);
}

static void begin_close(httpd_conn *c, bool linger)
{
    c->phase = PH_CLOSING;
    c->linger = c->linger || linger;
    set_timer(c, T_NONE);
    bufferevent_disable(c->bev, EV_READ);
    if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
        close_now(c);
}

/* ---- processing ------------------------------------------------------------ */

/* The sentence of a head the parser refused. */
static void head_refused(httpd_conn *c, enum http_errno e)
{
    httpd_server *s = c->srv;
    const httpd_config *cfg = &s->cfg;
    char msg[200];
    int st = c->head_error;
    if (st == 0)
        st = e == HPE_HEADER_OVERFLOW ? 431 : 400;
    if (st == 414)
        snprintf(msg, sizeof msg, "the request URL is longer than %zu bytes, this server's limit",
                 cfg->max_url_bytes);
    else if (st == 431 && c->nhdrs >= cfg->max_headers)
        snprintf(msg, sizeof msg, "the request has more than %d headers, this server's limit",
                 cfg->max_headers);
    else if (st == 431)
        snprintf(msg, sizeof msg,
                 "the request line and headers are larger than %zu bytes, this server's limit",
                 cfg->max_header_bytes);
    else
        snprintf(msg, sizeof msg, "malformed HTTP request: %s", http_errno_description(e));
    HTTPD__ADD(s, requests, 1);
    HTTPD__ADD(s, parse_errors, 1);
    httpd__error_reply(c, st, msg);
}

/* Feeds one contiguous piece of input to the parser and acts on why it
 * stopped. Returns false when processing must stop for now. */
static bool feed(httpd_conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    struct evbuffer_iovec v;
    if (evbuffer_peek(in, -1, NULL, &v, 1) < 1 || v.iov_len == 0)
        return false;
    c->pause = PAUSE_NONE;
    size_t used = http_parser_execute(&c->parser, &c->srv->settings, v.iov_base, v.iov_len);
    enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);
    evbuffer_drain(in, used);
    if (c->dead)
        return false;
    if (e == HPE_PAUSED) {
        http_parser_pause(&c->parser, 0);
        switch (c->pause) {
        case PAUSE_HEAD: head_complete(c); break;
        case PAUSE_MESSAGE:
            if (c->phase == PH_REQ) {
                c->discarding = false;
                body_end(c, 0);
            }
            break;
        case PAUSE_BODY:
        case PAUSE_NONE: break;
        }
        return !c->dead;
    }
    if (e != HPE_OK) {
        if (c->phase != PH_REQ) {
            head_refused(c, e);
        } else if (c->discarding || !c->req.body_wanted || c->req.ended) {
            /* the rest of an unread body: too long, or malformed */
            c->req.body_done = true;
            c->req.close_after = true;
            c->linger = true;
        } else {
            c->req.close_after = true;
            c->linger = true;
            body_end(c, -EPROTO);
        }
        return false;
    }
    if (used < v.iov_len) {
        /* an upgrade: the rest is not HTTP; this request is the last */
        c->close_after = true;
        evbuffer_drain(in, evbuffer_get_length(in));
        return false;
    }
    return true;
}

static void conn_process(httpd_conn *c)
{
    httpd_server *s = c->srv;
    struct evbuffer *in = bufferevent_get_input(c->bev);
    struct evbuffer *out = bufferevent_get_output(c->bev);
    for (int guard = 0; guard < 1 << 20; guard++) {
        if (c->dead || c->phase == PH_CLOSING || c->abort_pending)
            break;
        httpd_req *r = &c->req;
        if (c->phase == PH_REQ) {
            if (r->active && r->writable_kick && !r->ended) {
                r->writable_kick = false;
                if (r->on_writable != NULL)
                    r->on_writable(r, r->writable_arg);
                continue;
            }
            if (r->ended && (r->body_done || r->skip_body)) {
                finish_request(c);
                continue;
            }
            if (r->ended) {
                c->discarding = true;
            } else if (!body_flowing(c)) {
                break;
            }
            if (evbuffer_get_length(in) == 0)
                break;
            if (!feed(c))
                break;
            continue;
        }
        /* IDLE or HEAD: the next request, unless the output is still full */
        if (evbuffer_get_length(out) >= s->cfg.out_high_bytes) {
            c->wait_out = true;
            break;
        }
        if (evbuffer_get_length(in) == 0)
            break;
        if (c->phase == PH_IDLE) {
            c->phase = PH_HEAD;
            set_timer(c, T_HEAD);
        }
        if (!feed(c))
            break;
    }
    if (c->dead)
        return;
    /* the body timer runs while the body flows, from its last byte */
    if (body_flowing(c))
        set_timer(c, T_BODY);
    else if (c->phase == PH_REQ && c->timer_kind == T_BODY)
        set_timer(c, T_NONE);
}

/* ---- libevent callbacks ---------------------------------------------------- */

static void read_cb(struct bufferevent *bev, void *arg)
{
    httpd_conn *c = arg;
    (void)bev;
    enter(c);
    if (c->lingering)
        evbuffer_drain(bufferevent_get_input(c->bev),
                       evbuffer_get_length(bufferevent_get_input(c->bev)));
    else if (c->phase != PH_CLOSING)
        conn_process(c);
    leave(c);
}

static void write_cb(struct bufferevent *bev, void *arg)
{
    httpd_conn *c = arg;
    enter(c);
    size_t left = evbuffer_get_length(bufferevent_get_output(bev));
    if (c->phase == PH_CLOSING) {
        if (left == 0 && !c->lingering)
            close_now(c);
    } else {
        httpd_req *r = &c->req;
        if (r->active && r->started && !r->ended && r->writable_blocked &&
            left <= c->srv->cfg.out_low_bytes) {
            r->writable_blocked = false;
            if (r->on_writable != NULL)
                r->on_writable(r, r->writable_arg);
        }
        if (!c->dead && c->wait_out && left <= c->srv->cfg.out_low_bytes) {
            c->wait_out = false;
            conn_process(c);
        }
    }
    leave(c);
}

static bool tls_failure(httpd_conn *c)
{
    if (!c->tls)
        return false;
    bool failed = false;
    unsigned long e;
    while ((e = bufferevent_get_openssl_error(c->bev)) != 0) {
#ifdef SSL_R_UNEXPECTED_EOF_WHILE_READING
        if (ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
            continue;
#endif
        failed = true;
    }
    return failed;
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
    httpd_conn *c = arg;
    (void)bev;
    if (what & BEV_EVENT_CONNECTED)
        return;
    enter(c);
    if (what & BEV_EVENT_TIMEOUT) {
        HTTPD__ADD(c->srv, timeouts, 1);
        httpd__conn_abort(c, -ETIMEDOUT);
    } else if (what & BEV_EVENT_ERROR) {
        if (tls_failure(c))
            HTTPD__ADD(c->srv, tls_errors, 1);
        httpd__conn_abort(c, -ECONNRESET);
    } else if (what & BEV_EVENT_EOF) {
        c->peer_eof = true;
        if (c->lingering) {
            httpd__conn_abort(c, 0);
        } else if (c->phase == PH_CLOSING) {
            if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
                httpd__conn_abort(c, 0);
        } else if (c->phase == PH_IDLE && evbuffer_get_length(bufferevent_get_input(c->bev)) == 0) {
            httpd__conn_abort(c, 0);
        } else {
            /* a request in flight: the client went away (nginx's "client
             * prematurely closed connection") */
            httpd__conn_abort(c, -ECONNRESET);
        }
    }
    leave(c);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
    httpd_conn *c = arg;
    (void)fd, (void)what;
    enter(c);
    enum timer_kind k = (enum timer_kind)c->timer_kind;
    c->timer_kind = T_NONE;
    switch (k) {
    case T_IDLE:
    case T_LINGER: httpd__conn_abort(c, 0); break;
    case T_HEAD: {
        char msg[120];
        snprintf(msg, sizeof msg, "the request head did not arrive within %d ms",
                 c->srv->cfg.header_timeout_ms);
        HTTPD__ADD(c->srv, timeouts, 1);
        HTTPD__ADD(c->srv, requests, 1);
        httpd__error_reply(c, 408, msg);
        break;
    }
    case T_BODY:
        if (body_flowing(c)) {
            HTTPD__ADD(c->srv, timeouts, 1);
            c->req.close_after = true;
            c->linger = true;
            body_end(c, -ETIMEDOUT);
        }
        break;
    case T_NONE: break;
    }
    leave(c);
}

static void work_cb(evutil_socket_t fd, short what, void *arg)
{
    httpd_conn *c = arg;
    (void)fd, (void)what;
    enter(c);
    if (c->abort_pending)
        httpd__conn_abort(c, -ECONNRESET);
    else if (c->phase != PH_CLOSING)
        conn_process(c);
    leave(c);
}

/* ---- create, abort, free ------------------------------------------------- */

static void count_in(struct evbuffer *b, const struct evbuffer_cb_info *info, void *arg)
{
    (void)b;
    httpd_conn *c = arg;
    if (info->n_added)
        HTTPD__ADD(c->srv, bytes_in, info->n_added);
}

static void count_out(struct evbuffer *b, const struct evbuffer_cb_info *info, void *arg)
{
    (void)b;
    httpd_conn *c = arg;
    if (info->n_deleted)
        HTTPD__ADD(c->srv, bytes_out, info->n_deleted);
}

int httpd__conn_create(httpd_server *srv, struct bufferevent *bev, const struct sockaddr *peer,
                       socklen_t peer_len, bool tls, bool reject)
{
    httpd_conn *c = calloc(1, sizeof *c);
    if (c == NULL) {
        bufferevent_free(bev);
        return -ENOMEM;
    }
    c->srv = srv;
    c->bev = bev;
    c->tls = tls;
    c->reject = reject;
    if (peer != NULL && peer_len <= sizeof c->peer) {
        memcpy(&c->peer, peer, peer_len);
        c->peer_len = peer_len;
    }
    c->hdrs = calloc((size_t)srv->cfg.max_headers, sizeof *c->hdrs);
    c->work = event_new(srv->base, -1, 0, work_cb, c);
    c->timer = evtimer_new(srv->base, timer_cb, c);
    c->req.head = evbuffer_new();
    if (c->hdrs == NULL || c->work == NULL || c->timer == NULL || c->req.head == NULL) {
        free(c->hdrs);
        if (c->work)
            event_free(c->work);
        if (c->timer)
            event_free(c->timer);
        if (c->req.head)
            evbuffer_free(c->req.head);
        bufferevent_free(bev);
        free(c);
        return -ENOMEM;
    }
    http_parser_init(&c->parser, HTTP_REQUEST);
    c->parser.data = c;
    c->req.conn = c;
    c->phase = PH_IDLE;

    c->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = c;
    srv->conns = c;
    if (reject)
        srv->nreject++;
    else
        srv->nconns++;
    HTTPD__ADD(srv, conns_accepted, 1);
    HTTPD__SET(srv, conns_open, (uint64_t)(srv->nconns + srv->nreject));

    evbuffer_add_cb(bufferevent_get_input(bev), count_in, c);
    evbuffer_add_cb(bufferevent_get_output(bev), count_out, c);
    bufferevent_setcb(bev, read_cb, write_cb, event_cb, c);
    bufferevent_setwatermark(bev, EV_READ, 0, srv->cfg.in_buffer_bytes);
    bufferevent_setwatermark(bev, EV_WRITE, srv->cfg.out_low_bytes, 0);
    bufferevent_set_max_single_read(bev, 64 * 1024);
    bufferevent_set_max_single_write(bev, 1024 * 1024);
    if (srv->cfg.write_timeout_ms > 0) {
        struct timeval wt = {srv->cfg.write_timeout_ms / 1000,
                             (srv->cfg.write_timeout_ms % 1000) * 1000};
        bufferevent_set_timeouts(bev, NULL, &wt);
    }
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    set_timer(c, T_IDLE);
    if (srv->draining)
        httpd__conn_drain(c);
    return 0;
}

void httpd__conn_abort(httpd_conn *c, int err)
{
    if (c->dead)
        return;
    c->dead = true;
    c->phase = PH_CLOSING;
    bufferevent_disable(c->bev, EV_READ | EV_WRITE);
    bufferevent_setcb(c->bev, NULL, NULL, NULL, NULL);
    evtimer_del(c->timer);
    event_del(c->work);
    httpd_req *r = &c->req;
    if (r->active) {
        int st = err ? err : -ECONNRESET;
        if (r->body_wanted && !r->body_end_called && !r->body_done && !r->ended) {
            r->body_end_called = true;
            r->body_done = true;
            if (r->on_end != NULL)
                r->on_end(r, st, r->body_arg);
        }
        r->active = false;
        HTTPD__ADD(c->srv, aborted, 1);
        if (r->on_done != NULL)
            r->on_done(r, st, r->done_arg);
    }
    if (c->depth == 0)
        conn_free(c);
}

static void conn_free(httpd_conn *c)
{
    httpd_server *srv = c->srv;
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (c->reject)
        srv->nreject--;
    else
        srv->nconns--;
    HTTPD__SET(srv, conns_open, (uint64_t)(srv->nconns + srv->nreject));
    bufferevent_free(c->bev);
    event_free(c->work);
    event_free(c->timer);
    evbuffer_free(c->req.head);
    free(c->hbuf);
    free(c->hdrs);
    free(c);
    httpd__server_conn_gone(srv, NULL);
}

void httpd__conn_drain(httpd_conn *c)
{
    if (c->dead)
        return;
    c->close_after = true;
    if (c->phase == PH_IDLE && evbuffer_get_length(bufferevent_get_input(c->bev)) == 0) {
        enter(c);
        begin_close(c, false);
        leave(c);
    }
}

void httpd__req_reset(httpd_conn *c)
{
    httpd_req *r = &c->req;
    struct evbuffer *head = r->head;
    evbuffer_drain(head, evbuffer_get_length(head));
    memset(r, 0, sizeof *r);
    r->head = head;
    r->conn = c;
}

int httpd__adopt_bev(httpd_server *srv, struct bufferevent *bev)
{
    return httpd__conn_create(srv, bev, NULL, 0, false, false);
}
