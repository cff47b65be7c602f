/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target for the HTTP server core's request path (client/http/):
 * arbitrary bytes go into a real connection over a bufferevent pair, in
 * pieces whose sizes come from the input, to a handler that reads bodies
 * (pausing and resuming), answers with Content-Length or chunked, late from
 * another event, or cuts its answer, as the path's first letter says.
 * Besides memory errors (ASan/UBSan), it checks what the server promises:
 * every byte it writes parses as a sequence of HTTP responses, no more
 * answers than requests (plus one refusal), every request handed to the
 * handler ends with exactly one done callback, and no connection is left
 * once the client side is closed.
 *
 * Input: byte 0 picks the piece size (1..64, or all at once for 0), the rest
 * is what the client sends.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <http_parser.h>

#include "httpd_int.h"

#include "../fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct event_base *base;
static httpd_server *srv;
static int handed, done_calls, live;
static bool saw_head;

typedef struct fz_req {
    httpd_req *req;
    struct event *ev;
    int mode;
    uint64_t got;
} fz_req;

static void fz_done(httpd_req *req, int status, void *arg)
{
    (void)req, (void)status;
    fz_req *x = arg;
    done_calls++;
    live--;
    if (x->ev)
        event_free(x->ev);
    free(x);
}

static void answer(fz_req *x)
{
    char body[300];
    memset(body, 'z', sizeof body);
    switch (x->mode % 4) {
    case 0: httpd_resp_send(x->req, 200, "text/plain", body, (size_t)(x->got % sizeof body)); break;
    case 1:
        httpd_resp_start(x->req, -1);
        httpd_resp_write(x->req, body, 7);
        httpd_resp_write(x->req, body, 0);
        httpd_resp_write(x->req, body, 100);
        httpd_resp_end(x->req);
        break;
    case 2:
        httpd_resp_set_status(x->req, 204);
        httpd_resp_end(x->req);
        break;
    default:
        httpd_resp_start(x->req, 50);
        httpd_resp_write(x->req, body, 10);
        httpd_resp_abort(x->req);
        break;
    }
}

static void later_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    fz_req *x = arg;
    if (x->mode & 8)
        httpd_req_resume_body(x->req);
    else
        answer(x);
}

static void fz_data(httpd_req *req, const void *d, size_t n, void *arg)
{
    (void)d;
    fz_req *x = arg;
    x->got += n;
    if ((x->mode & 8) && x->ev) {
        httpd_req_pause_body(req);
        event_active(x->ev, EV_TIMEOUT, 0);
    }
}

static void fz_end(httpd_req *req, int status, void *arg)
{
    (void)req;
    fz_req *x = arg;
    if (status == 0 || status == -EPROTO || status == -ETIMEDOUT) {
        x->mode &= ~8;
        answer(x);
    }
}

static void fz_handler(httpd_req *req, void *arg)
{
    (void)arg;
    handed++;
    live++;
    fz_req *x = calloc(1, sizeof *x);
    CHECK(x != NULL);
    x->req = req;
    const char *p = httpd_req_path(req);
    x->mode = (unsigned char)p[p[0] == '/' ? 1 : 0];
    httpd_req_on_done(req, fz_done, x);
    /* touch what a handler reads */
    for (int i = 0; i < httpd_req_header_count(req); i++) {
        const char *n, *v;
        CHECK(httpd_req_header_at(req, i, &n, &v) == 0);
        CHECK(n != NULL && v != NULL);
    }
    (void)httpd_req_header(req, "content-type");
    (void)httpd_req_query(req);
    if (x->mode & 16) {
        x->ev = event_new(base, -1, 0, later_cb, x);
        CHECK(x->ev != NULL);
    }
    if (x->mode & 32) {
        httpd_req_read_body(req, fz_data, fz_end, x);
    } else if (x->ev) {
        event_active(x->ev, EV_TIMEOUT, 0);
    } else {
        answer(x);
    }
}

static int resp_complete(http_parser *p)
{
    (*(int *)p->data)++;
    return 0;
}

static void setup(void)
{
    base = event_base_new();
    CHECK(base != NULL);
    httpd_config cfg;
    httpd_config_init(&cfg);
    cfg.port = -1;
    cfg.handler = fz_handler;
    cfg.max_header_bytes = 2048;
    cfg.max_url_bytes = 512;
    cfg.max_headers = 16;
    cfg.in_buffer_bytes = 4096;
    cfg.out_high_bytes = 8192;
    cfg.out_low_bytes = 1024;
    cfg.max_discard_bytes = 512;
    CHECK(httpd_server_create(&srv, base, &cfg, NULL, 0) == 0);
}

static void spin(int turns)
{
    for (int i = 0; i < turns; i++)
        event_base_loop(base, EVLOOP_NONBLOCK);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (base == NULL)
        setup();
    if (size < 1 || size > 65536)
        return 0;
    size_t piece = data[0] % 65;
    data++, size--;
    saw_head = memmem(data, size, "HEAD", 4) != NULL;
    handed = done_calls = 0;

    struct bufferevent *pair[2];
    CHECK(bufferevent_pair_new(base, 0, pair) == 0);
    CHECK(httpd__adopt_bev(srv, pair[1]) == 0);
    bufferevent_enable(pair[0], EV_READ | EV_WRITE);
    struct evbuffer *got = evbuffer_new();
    CHECK(got != NULL);
    size_t off = 0;
    while (off < size) {
        size_t n = piece == 0 ? size - off : piece;
        if (n > size - off)
            n = size - off;
        bufferevent_write(pair[0], data + off, n);
        off += n;
        spin(4);
        evbuffer_add_buffer(got, bufferevent_get_input(pair[0]));
    }
    spin(64);
    evbuffer_add_buffer(got, bufferevent_get_input(pair[0]));
    /* the client closes: a pair tells its partner only when flushed so */
    bufferevent_flush(pair[0], EV_WRITE, BEV_FINISHED);
    bufferevent_free(pair[0]);
    spin(16);

    /* everything answered or aborted, nothing left behind */
    CHECK(done_calls == handed);
    CHECK(live == 0);
    httpd_stats st;
    httpd_server_stats(srv, &st);
    CHECK(st.conns_open == 0);

    /* what the server wrote is HTTP, one answer per request at most */
    if (!saw_head) {
        http_parser p;
        http_parser_settings s;
        http_parser_settings_init(&s);
        s.on_message_complete = resp_complete;
        int answers = 0;
        http_parser_init(&p, HTTP_RESPONSE);
        p.data = &answers;
        size_t len = evbuffer_get_length(got);
        unsigned char *out = evbuffer_pullup(got, -1);
        size_t used = http_parser_execute(&p, &s, (const char *)out, len);
        enum http_errno e = HTTP_PARSER_ERRNO(&p);
        /* a cut answer (abort) may end the stream early; bytes after the last
         * complete answer must still be the start of one */
        CHECK(e == HPE_OK || e == HPE_INVALID_EOF_STATE);
        CHECK(used == len);
        CHECK(answers <= 2 * handed + 1); /* a 100 Continue each, one refusal */
    }
    evbuffer_free(got);
    return 0;
}
