/* SPDX-License-Identifier: Apache-2.0
 *
 * The S3 model's data path: one upstream connection per client connection
 * (so the bandwidth cap is per connection, as with S3), requests handled one at
 * a time per connection in order (request N+1 is parsed only after response N
 * has been forwarded), each delayed by the first-byte latency before it is
 * forwarded, response bytes released by a token bucket. Only framing is parsed
 * (s3m_http.c); bytes are moved between evbuffers without copying.
 *
 *   client --cli--> [Q_HEAD -> fault? -> Q_DELAY -> forward head -> Q_BODY] --up--> S3
 *   client <--cli-- [R_HEAD -> R_HEAD_FWD -> R_BODY, token bucket]         <--up-- S3
 *
 * Back-pressure: no input buffer grows past its read high watermark (libevent
 * stops reading), and no bytes are moved into an output buffer that holds more
 * than S3M_HIGH; the write callbacks resume the moves.
 * Thread-safety: none (one event loop).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "s3m_http.h"
#include "s3m_int.h"

#define S3M_HIGH           (1024 * 1024) /* most bytes queued in an output buffer */
#define S3M_READ_HIGH      (1024 * 1024) /* read high watermark of every input */
#define S3M_IO_CHUNK       (256 * 1024)  /* largest single read/write */
#define S3M_MIN_QUANTUM    1024          /* smallest release of the token bucket */
#define S3M_REFILL_QUANTUM 16384         /* bytes waited for when the bucket is empty */

typedef enum { Q_HEAD, Q_DELAY, Q_BODY, Q_WAIT, Q_CLOSING } q_state;
typedef enum { R_IDLE, R_HEAD, R_HEAD_FWD, R_BODY } r_state;

typedef struct s3m_conn {
    s3m_proxy *px;
    struct s3m_conn *prev, *next;
    struct bufferevent *cli, *up;
    struct event *delay_ev, *bw_ev;
    q_state q;
    r_state r;
    char method[S3M_MAX_METHOD + 1];
    size_t head_len;
    s3m_body q_body;
    uint64_t q_left;
    s3m_chunked q_chunk;
    int q_conn_close;
    s3m_body r_body;
    uint64_t r_left;
    s3m_chunked r_chunk;
    size_t r_head_left;
    int r_interim;
    int r_close;
    int r_started; /* some bytes of the current response went to the client */
    int up_eof;
    double tokens;
    uint64_t tok_ns;
} s3m_conn;

static uint64_t s3m_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void s3m_conn_free(s3m_conn *c)
{
    s3m_proxy *px = c->px;
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        px->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    px->live--;
    if (c->cli != NULL)
        bufferevent_free(c->cli);
    if (c->up != NULL)
        bufferevent_free(c->up);
    event_free(c->delay_ev);
    event_free(c->bw_ev);
    free(c);
}

void s3m__conn_close_all(s3m_proxy *px)
{
    while (px->conns != NULL)
        s3m_conn_free(px->conns);
}

static void s3m_up_free(s3m_conn *c)
{
    if (c->up != NULL)
        bufferevent_free(c->up);
    c->up = NULL;
    c->up_eof = 0;
}

/* Stops reading, drops the upstream, frees the connection once the client's
 * output has drained. Returns -1: the caller must not touch c afterwards
 * (it may already be freed). */
static int s3m_close_after_flush(s3m_conn *c)
{
    c->q = Q_CLOSING;
    s3m_up_free(c);
    event_del(c->delay_ev);
    event_del(c->bw_ev);
    bufferevent_disable(c->cli, EV_READ);
    if (evbuffer_get_length(bufferevent_get_output(c->cli)) == 0) {
        s3m_conn_free(c);
        return -1;
    }
    bufferevent_setwatermark(c->cli, EV_WRITE, 0, 0);
    return -1;
}

/* Closes the client connection with a TCP RST (SO_LINGER 0). Returns -1. */
static int s3m_reset(s3m_conn *c)
{
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    evutil_socket_t fd = bufferevent_getfd(c->cli);
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    s3m_conn_free(c);
    return -1;
}

static void s3m_xml_escape(struct evbuffer *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '&': evbuffer_add(out, "&amp;", 5); break;
        case '<': evbuffer_add(out, "&lt;", 4); break;
        case '>': evbuffer_add(out, "&gt;", 4); break;
        case '"': evbuffer_add(out, "&quot;", 6); break;
        case '\'': evbuffer_add(out, "&apos;", 6); break;
        default: evbuffer_add(out, s + i, 1); break;
        }
    }
}

/* Writes a complete S3-style error answer to the client. */
static void s3m_send_error(s3m_conn *c, int status, const char *reason, const char *code,
                           const char *message, const char *resource, size_t resource_len,
                           int close)
{
    struct evbuffer *body = evbuffer_new();
    if (body == NULL)
        return;
    evbuffer_add_printf(body,
                        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code>"
                        "<Message>%s</Message><Resource>",
                        code, message);
    s3m_xml_escape(body, resource, resource_len);
    evbuffer_add_printf(body, "</Resource><RequestId>s3model-%llu</RequestId></Error>",
                        (unsigned long long)c->px->stats.requests);
    size_t blen = evbuffer_get_length(body);
    struct evbuffer *out = bufferevent_get_output(c->cli);
    size_t before = evbuffer_get_length(out);
    evbuffer_add_printf(out,
                        "HTTP/1.1 %d %s\r\nContent-Type: application/xml\r\n"
                        "Content-Length: %zu\r\nx-amz-request-id: s3model-%llu\r\n"
                        "Server: s3model\r\nConnection: %s\r\n\r\n",
                        status, reason, blen, (unsigned long long)c->px->stats.requests,
                        close ? "close" : "keep-alive");
    if (strcmp(c->method, "HEAD") != 0)
        evbuffer_add_buffer(out, body);
    c->px->stats.bytes_out += evbuffer_get_length(out) - before;
    evbuffer_free(body);
}

static int s3m_bad_request(s3m_conn *c, int err)
{
    c->px->stats.bad_requests++;
    c->method[0] = '\0';
    s3m_send_error(c, 400, "Bad Request", "BadRequest",
                   err == -EMSGSIZE ? "Request head too large." : "Malformed HTTP request.", "", 0,
                   1);
    return s3m_close_after_flush(c);
}

/* The upstream failed mid-request: a 502 if the client has seen nothing of
 * the answer yet, then close. Returns -1. */
static int s3m_upstream_failed(s3m_conn *c, const char *why)
{
    c->px->stats.upstream_errors++;
    s3m__log("warn", "msg=\"upstream failed\" reason=\"%s\" method=%s", why, c->method);
    if (!c->r_started)
        s3m_send_error(c, 502, "Bad Gateway", "BadGateway",
                       "The S3 model could not reach the upstream S3 server.", "", 0, 1);
    return s3m_close_after_flush(c);
}

static void s3m_on_up_read(struct bufferevent *bev, void *arg);
static void s3m_on_up_write(struct bufferevent *bev, void *arg);
static void s3m_on_up_event(struct bufferevent *bev, short what, void *arg);

static int s3m_up_connect(s3m_conn *c)
{
    c->up = bufferevent_socket_new(c->px->base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (c->up == NULL)
        return -ENOMEM;
    c->up_eof = 0;
    bufferevent_setcb(c->up, s3m_on_up_read, s3m_on_up_write, s3m_on_up_event, c);
    bufferevent_setwatermark(c->up, EV_READ, 0, S3M_READ_HIGH);
    bufferevent_setwatermark(c->up, EV_WRITE, S3M_HIGH / 2, 0);
    bufferevent_set_max_single_read(c->up, S3M_IO_CHUNK);
    bufferevent_set_max_single_write(c->up, S3M_IO_CHUNK);
    bufferevent_enable(c->up, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(c->up, (struct sockaddr *)&c->px->cfg.upstream,
                                   sizeof(c->px->cfg.upstream)) != 0) {
        s3m_up_free(c);
        return -ECONNREFUSED;
    }
    return 0;
}

static int s3m_q_drive(s3m_conn *c);
static int s3m_r_drive(s3m_conn *c);

/* Sends the parsed head upstream and sets up the body's framing. */
static int s3m_start_forward(s3m_conn *c, const s3m_req *req)
{
    if (c->up == NULL && s3m_up_connect(c) != 0)
        return s3m_upstream_failed(c, "cannot create the upstream connection");
    struct evbuffer *in = bufferevent_get_input(c->cli);
    evbuffer_remove_buffer(in, bufferevent_get_output(c->up), c->head_len);
    c->px->stats.bytes_in += c->head_len;
    c->q_body = req->body;
    c->q_left = req->content_length;
    s3m_chunked_init(&c->q_chunk);
    c->q = req->body == S3M_BODY_NONE ? Q_WAIT : Q_BODY;
    c->r = R_HEAD;
    c->r_started = 0;
    return 0;
}

static void s3m_on_delay(evutil_socket_t fd, short what, void *arg)
{
    s3m_conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(c->cli);
    /* Re-parse the head (it stayed at the front of the input) for its framing. */
    s3m_req req;
    unsigned char *p = evbuffer_pullup(in, (ev_ssize_t)c->head_len);
    if (p == NULL || s3m_parse_request((const char *)p, c->head_len, &req) != (int)c->head_len) {
        s3m_bad_request(c, -EBADMSG);
        return;
    }
    if (s3m_start_forward(c, &req) < 0)
        return;
    s3m_q_drive(c);
}

/* One request head is complete at the front of the input: count it, apply a
 * fault or the latency, forward it. */
static int s3m_handle_request(s3m_conn *c, const s3m_req *req)
{
    s3m_proxy *px = c->px;
    memcpy(c->method, req->method, sizeof(c->method));
    c->q_conn_close = req->conn_close;
    s3m__stats_count(&px->stats, req->method, req->target, req->path_len);
    int stall_ms = 0;
    s3m_fault_kind fault =
        s3m__fault_take(px, req->method, req->target, req->target_len, &stall_ms);
    if (fault == S3M_FAULT_RESET)
        return s3m_reset(c);
    if (fault == S3M_FAULT_503) {
        /* With a body still to come, answer and close instead of reading it. */
        int close = req->conn_close || req->body != S3M_BODY_NONE;
        s3m_send_error(c, 503, "Slow Down", "SlowDown", "Please reduce your request rate.",
                       req->target, req->path_len, close);
        evbuffer_drain(bufferevent_get_input(c->cli), c->head_len);
        px->stats.bytes_in += c->head_len;
        if (close)
            return s3m_close_after_flush(c);
        return 0; /* stays Q_HEAD */
    }
    int delay_ms = px->cfg.latency_ms + (fault == S3M_FAULT_STALL ? stall_ms : 0);
    if (delay_ms > 0) {
        struct timeval tv = {.tv_sec = delay_ms / 1000, .tv_usec = (delay_ms % 1000) * 1000};
        c->q = Q_DELAY;
        evtimer_add(c->delay_ev, &tv);
        return 0;
    }
    return s3m_start_forward(c, req);
}

/* Moves request body bytes upstream as far as framing and room allow. */
static int s3m_pump_body(s3m_conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->cli);
    struct evbuffer *out = bufferevent_get_output(c->up);
    while (c->q == Q_BODY) {
        size_t queued = evbuffer_get_length(out);
        size_t avail = evbuffer_get_length(in);
        if (queued >= S3M_HIGH || avail == 0)
            return 0;
        size_t n = avail < S3M_HIGH - queued ? avail : S3M_HIGH - queued;
        int done = 0;
        if (c->q_body == S3M_BODY_LENGTH) {
            if ((uint64_t)n > c->q_left)
                n = (size_t)c->q_left;
            c->q_left -= n;
            done = c->q_left == 0;
        } else {
            struct evbuffer_iovec vec[16];
            int nv = evbuffer_peek(in, (ev_ssize_t)n, NULL, vec, 16);
            size_t m = 0;
            for (int i = 0; i < nv && m < n && !done; i++) {
                size_t seg = vec[i].iov_len < n - m ? vec[i].iov_len : n - m;
                ssize_t k = s3m_chunked_scan(&c->q_chunk, vec[i].iov_base, seg, &done);
                if (k < 0)
                    return s3m_bad_request(c, -EBADMSG);
                m += (size_t)k;
            }
            n = m;
        }
        evbuffer_remove_buffer(in, out, n);
        c->px->stats.bytes_in += n;
        if (done)
            c->q = Q_WAIT;
    }
    return 0;
}

/* The request side's state machine. Returns -1 if c was freed. */
static int s3m_q_drive(s3m_conn *c)
{
    for (;;) {
        switch (c->q) {
        case Q_HEAD: {
            if (c->r != R_IDLE)
                return 0;
            struct evbuffer *in = bufferevent_get_input(c->cli);
            size_t len = evbuffer_get_length(in);
            if (len == 0)
                return 0;
            size_t lim = len < S3M_MAX_HEAD ? len : S3M_MAX_HEAD;
            unsigned char *p = evbuffer_pullup(in, (ev_ssize_t)lim);
            s3m_req req;
            int rc = s3m_parse_request((const char *)p, lim, &req);
            if (rc < 0)
                return s3m_bad_request(c, rc);
            if (rc == 0)
                return 0;
            c->head_len = (size_t)rc;
            if (s3m_handle_request(c, &req) < 0)
                return -1;
            break;
        }
        case Q_DELAY: return 0;
        case Q_BODY:
            if (s3m_pump_body(c) < 0)
                return -1;
            if (c->q == Q_BODY)
                return 0;
            break;
        case Q_WAIT:
            if (c->r != R_IDLE)
                return 0;
            c->q = Q_HEAD;
            break;
        case Q_CLOSING: return 0;
        }
    }
}

/* How many of want bytes the token bucket releases now; 0 arms the refill
 * timer. The caller subtracts what it moves from c->tokens. */
static size_t s3m_quota(s3m_conn *c, size_t want)
{
    int mib = c->px->cfg.bandwidth_mib;
    if (mib <= 0)
        return want;
    double rate = (double)mib * 1048576.0; /* bytes per second */
    uint64_t now = s3m_mono_ns();
    c->tokens += (double)(now - c->tok_ns) * rate / 1e9;
    c->tok_ns = now;
    double burst = rate / 1000.0 > S3M_REFILL_QUANTUM ? rate / 1000.0 : S3M_REFILL_QUANTUM;
    if (c->tokens > burst)
        c->tokens = burst;
    size_t min_release = want < S3M_MIN_QUANTUM ? want : S3M_MIN_QUANTUM;
    if (c->tokens >= (double)min_release)
        return (double)want < c->tokens ? want : (size_t)c->tokens;
    size_t target = want < S3M_REFILL_QUANTUM ? want : S3M_REFILL_QUANTUM;
    double wait_s = ((double)target - c->tokens) / rate;
    struct timeval tv = {.tv_sec = (time_t)wait_s,
                         .tv_usec = (suseconds_t)((wait_s - (double)(time_t)wait_s) * 1e6) + 1};
    if (!evtimer_pending(c->bw_ev, NULL))
        evtimer_add(c->bw_ev, &tv);
    return 0;
}

static void s3m_on_bw(evutil_socket_t fd, short what, void *arg)
{
    s3m_r_drive(arg);
}

static void s3m_move_out(s3m_conn *c, size_t n)
{
    evbuffer_remove_buffer(bufferevent_get_input(c->up), bufferevent_get_output(c->cli), n);
    c->px->stats.bytes_out += n;
    c->r_started = 1;
    if (c->px->cfg.bandwidth_mib > 0)
        c->tokens -= (double)n;
}

static int s3m_resp_done(s3m_conn *c)
{
    c->r = R_IDLE;
    if (c->r_close || c->r_body == S3M_BODY_UNTIL_CLOSE || c->q_conn_close)
        return s3m_close_after_flush(c);
    if (c->up_eof && evbuffer_get_length(bufferevent_get_input(c->up)) == 0)
        s3m_up_free(c); /* reconnect on the next request */
    return s3m_q_drive(c);
}

/* The response side's state machine. Returns -1 if c was freed. */
static int s3m_r_drive(s3m_conn *c)
{
    for (;;) {
        if (c->q == Q_CLOSING)
            return 0;
        if (evbuffer_get_length(bufferevent_get_output(c->cli)) >= S3M_HIGH)
            return 0;
        struct evbuffer *in = c->up != NULL ? bufferevent_get_input(c->up) : NULL;
        size_t avail = in != NULL ? evbuffer_get_length(in) : 0;
        switch (c->r) {
        case R_IDLE:
            if (avail > 0) {
                s3m__log("warn",
                         "msg=\"upstream sent bytes outside a response; dropping it\" "
                         "bytes=%zu",
                         avail);
                s3m_up_free(c);
            }
            return 0;
        case R_HEAD: {
            if (avail == 0) {
                if (c->up_eof || c->up == NULL)
                    return s3m_upstream_failed(c, "closed before answering");
                return 0;
            }
            size_t lim = avail < S3M_MAX_HEAD ? avail : S3M_MAX_HEAD;
            unsigned char *p = evbuffer_pullup(in, (ev_ssize_t)lim);
            s3m_resp resp;
            int rc = s3m_parse_response((const char *)p, lim, c->method, &resp);
            if (rc < 0)
                return s3m_upstream_failed(c, "malformed response head");
            if (rc == 0) {
                if (c->up_eof)
                    return s3m_upstream_failed(c, "closed inside a response head");
                return 0;
            }
            c->r_head_left = (size_t)rc;
            c->r_interim = resp.status < 200;
            c->r_body = resp.body;
            c->r_left = resp.content_length;
            c->r_close = resp.conn_close;
            s3m_chunked_init(&c->r_chunk);
            if (!c->r_started) {
                /* A fresh token bucket per response: no burst carried over idle time. */
                c->tokens = 0;
                c->tok_ns = s3m_mono_ns();
            }
            c->r = R_HEAD_FWD;
            break;
        }
        case R_HEAD_FWD: {
            size_t k = s3m_quota(c, c->r_head_left);
            if (k == 0)
                return 0;
            s3m_move_out(c, k);
            c->r_head_left -= k;
            if (c->r_head_left > 0)
                break;
            if (c->r_interim)
                c->r = R_HEAD;
            else if (c->r_body == S3M_BODY_NONE)
                return s3m_resp_done(c);
            else
                c->r = R_BODY;
            break;
        }
        case R_BODY: {
            if (avail == 0) {
                if (c->up_eof && c->r_body == S3M_BODY_UNTIL_CLOSE)
                    return s3m_resp_done(c);
                if (c->up_eof || c->up == NULL)
                    return s3m_upstream_failed(c, "closed inside a response body");
                return 0;
            }
            size_t room = S3M_HIGH - evbuffer_get_length(bufferevent_get_output(c->cli));
            size_t k = s3m_quota(c, avail < room ? avail : room);
            if (k == 0)
                return 0;
            int done = 0;
            if (c->r_body == S3M_BODY_LENGTH) {
                if ((uint64_t)k > c->r_left)
                    k = (size_t)c->r_left;
                c->r_left -= k;
                done = c->r_left == 0;
            } else if (c->r_body == S3M_BODY_CHUNKED) {
                struct evbuffer_iovec vec[16];
                int nv = evbuffer_peek(in, (ev_ssize_t)k, NULL, vec, 16);
                size_t m = 0;
                for (int i = 0; i < nv && m < k && !done; i++) {
                    size_t seg = vec[i].iov_len < k - m ? vec[i].iov_len : k - m;
                    ssize_t got = s3m_chunked_scan(&c->r_chunk, vec[i].iov_base, seg, &done);
                    if (got < 0)
                        return s3m_upstream_failed(c, "malformed chunked response body");
                    m += (size_t)got;
                }
                k = m;
            }
            s3m_move_out(c, k);
            if (done)
                return s3m_resp_done(c);
            break;
        }
        }
    }
}

static void s3m_on_cli_read(struct bufferevent *bev, void *arg)
{
    s3m_q_drive(arg);
}

static void s3m_on_cli_write(struct bufferevent *bev, void *arg)
{
    s3m_conn *c = arg;
    if (c->q == Q_CLOSING) {
        if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
            s3m_conn_free(c);
        return;
    }
    s3m_r_drive(c);
}

static void s3m_on_cli_event(struct bufferevent *bev, short what, void *arg)
{
    /* The client went away (EOF or error): nothing left to deliver. */
    s3m_conn_free(arg);
}

static void s3m_on_up_read(struct bufferevent *bev, void *arg)
{
    s3m_r_drive(arg);
}

static void s3m_on_up_write(struct bufferevent *bev, void *arg)
{
    s3m_q_drive(arg);
}

static void s3m_on_up_event(struct bufferevent *bev, short what, void *arg)
{
    s3m_conn *c = arg;
    if (what & BEV_EVENT_CONNECTED) {
        int one = 1;
        setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        return;
    }
    if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
        return;
    c->up_eof = 1;
    bufferevent_disable(bev, EV_READ | EV_WRITE);
    if (c->r == R_IDLE) {
        /* Idle keep-alive connection closed by the server: reconnect later. If
         * it answered early and a request body was still flowing, that body
         * has nowhere to go: close. */
        if (c->q == Q_BODY || c->q == Q_WAIT)
            s3m_close_after_flush(c);
        else
            s3m_up_free(c);
        return;
    }
    s3m_r_drive(c);
}

static void s3m_on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                          int salen, void *arg)
{
    s3m_proxy *px = arg;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    s3m_conn *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        evutil_closesocket(fd);
        return;
    }
    c->px = px;
    c->cli = bufferevent_socket_new(px->base, fd, BEV_OPT_CLOSE_ON_FREE);
    c->delay_ev = evtimer_new(px->base, s3m_on_delay, c);
    c->bw_ev = evtimer_new(px->base, s3m_on_bw, c);
    if (c->cli == NULL || c->delay_ev == NULL || c->bw_ev == NULL) {
        if (c->cli != NULL)
            bufferevent_free(c->cli);
        else
            evutil_closesocket(fd);
        if (c->delay_ev != NULL)
            event_free(c->delay_ev);
        if (c->bw_ev != NULL)
            event_free(c->bw_ev);
        free(c);
        return;
    }
    c->next = px->conns;
    if (px->conns != NULL)
        px->conns->prev = c;
    px->conns = c;
    px->live++;
    px->stats.connections++;
    bufferevent_setcb(c->cli, s3m_on_cli_read, s3m_on_cli_write, s3m_on_cli_event, c);
    bufferevent_setwatermark(c->cli, EV_READ, 0, S3M_READ_HIGH);
    bufferevent_setwatermark(c->cli, EV_WRITE, S3M_HIGH / 2, 0);
    bufferevent_set_max_single_read(c->cli, S3M_IO_CHUNK);
    bufferevent_set_max_single_write(c->cli, S3M_IO_CHUNK);
    bufferevent_enable(c->cli, EV_READ | EV_WRITE);
}

static void s3m_on_accept_error(struct evconnlistener *l, void *arg)
{
    int err = EVUTIL_SOCKET_ERROR();
    s3m__log("warn", "msg=\"accept failed\" error=\"%s\"", evutil_socket_error_to_string(err));
}

int s3m__conn_listen(s3m_proxy *px)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)px->cfg.port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    px->listener =
        evconnlistener_new_bind(px->base, s3m_on_accept, px,
                                LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
                                1024, (struct sockaddr *)&sa, sizeof(sa));
    if (px->listener == NULL) {
        int err = errno != 0 ? errno : EADDRINUSE;
        s3m__log("error",
                 "msg=\"cannot listen on 127.0.0.1:%d: %s (choose another --port, "
                 "or 0 for any free one)\"",
                 px->cfg.port, strerror(err));
        return -err;
    }
    evconnlistener_set_error_cb(px->listener, s3m_on_accept_error);
    struct sockaddr_in bound;
    socklen_t blen = sizeof(bound);
    getsockname(evconnlistener_get_fd(px->listener), (struct sockaddr *)&bound, &blen);
    px->port = ntohs(bound.sin_port);
    return 0;
}
