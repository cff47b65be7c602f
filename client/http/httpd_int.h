/* SPDX-License-Identifier: Apache-2.0
 *
 * httpd_int.h: what the files of the HTTP server core share (httpd_server.c:
 * listener, connection list, counters, drain; httpd_conn.c: one connection's
 * parser, phases and timers; httpd_resp.c: the request accessors and the
 * response API). Not for other modules; the fuzz target uses
 * httpd__adopt_bev to drive a connection over a bufferevent pair.
 *
 * A connection handles one request at a time. Its phases:
 *
 *   IDLE --first byte--> HEAD --head complete--> REQ --response ended and
 *     ^                   |  (handler called)     |   body read or skipped
 *     |                   | bad head: error        |
 *     +-------------------+------------------------+--> next request (IDLE)
 *                         v                        v
 *                      CLOSING (flush, linger, free) <-- Connection: close
 *
 * The parser (http_parser) is paused at the end of each head and each
 * message, so the bytes of the next pipelined request stay in the input
 * buffer until the current one is over.
 */
#ifndef RINGCACHE_HTTPD_INT_H
#define RINGCACHE_HTTPD_INT_H

#include "httpd.h"

#include <http_parser.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct bufferevent;
struct event;
struct evconnlistener;

typedef struct httpd_conn httpd_conn;

/* One header, as offsets into the connection's head buffer (NUL-terminated). */
typedef struct httpd__hdr {
    uint32_t name, value;
} httpd__hdr;

enum httpd__phase { PH_IDLE, PH_HEAD, PH_REQ, PH_CLOSING };

/* Why the parser paused itself. */
enum httpd__pause { PAUSE_NONE, PAUSE_HEAD, PAUSE_MESSAGE, PAUSE_BODY };

/* Response framing, chosen at start. */
enum httpd__framing { FR_LENGTH, FR_CHUNKED, FR_CLOSE, FR_NONE };

struct httpd_req {
    httpd_conn *conn;
    bool active; /* handed to the handler, done not yet called */

    /* the head, pointing into conn->hbuf */
    const char *method;
    const char *target, *path, *query;
    bool has_query;
    int minor;
    int64_t content_length; /* -1 chunked */
    bool has_body;
    bool is_head;
    bool expect_continue; /* asked, and no 100 nor final answer sent yet */

    /* the body */
    httpd_body_fn on_data;
    httpd_body_end_fn on_end;
    void *body_arg;
    bool body_wanted, body_paused;
    bool body_done; /* message complete (or failed) */
    bool body_end_called;
    bool skip_body; /* never read: the connection closes after */

    /* the response */
    int status;
    struct evbuffer *head; /* headers added so far */
    bool head_open;        /* the status line is sent, the head is not ended */
    bool started, ended, close_after;
    enum httpd__framing framing;
    bool no_body; /* HEAD, 1xx, 204, 304 */
    int64_t resp_len;
    uint64_t resp_sent;
    httpd_writable_fn on_writable;
    void *writable_arg;
    bool writable_blocked, writable_kick;

    httpd_done_fn on_done;
    void *done_arg;
};

struct httpd_conn {
    httpd_server *srv;
    httpd_conn *prev, *next;
    struct bufferevent *bev;
    struct event *work;  /* deferred processing: never re-enter a caller */
    struct event *timer; /* idle / head / body / linger deadline */
    int timer_kind;
    http_parser parser;
    struct sockaddr_storage peer;
    socklen_t peer_len;
    bool tls;
    bool reject; /* over max_conns: answer 503 to the first head */

    /* the head being read */
    char *hbuf;
    size_t hlen, hcap;
    httpd__hdr *hdrs;
    int nhdrs;
    bool in_value; /* the last piece was a header value */
    size_t url_len;
    size_t head_raw; /* URL, name and value bytes so far */
    size_t trailer_bytes;
    bool in_trailers; /* after the head: fields are chunked trailers */
    int head_error;   /* status a callback refused the head with */

    enum httpd__phase phase;
    enum httpd__pause pause;
    bool discarding; /* skipping the rest of an unread body */
    uint64_t discarded;
    bool discard_overflow;
    bool wait_out; /* next request held until the output drains */
    bool peer_eof;
    bool close_after; /* no request after this one */
    bool linger;      /* read and drop input for linger_ms before closing */
    bool lingering;
    bool abort_pending; /* httpd_resp_abort: close on the next turn */
    bool dead;          /* aborted: free when depth drops to 0 */
    int depth;          /* nesting of our own callbacks on the stack */
    httpd_req req;
};

struct httpd_server {
    struct event_base *base;
    httpd_config cfg; /* host and server_name copied */
    char *host_copy, *server_name_copy;
    struct evconnlistener *lev;
    struct event *accept_resume;
    int port;
    httpd_conn *conns;
    int nconns, nreject;
    http_parser_settings settings;
    char date[40];
    time_t date_t;
    bool draining;
    struct event *drain_timer, *drain_done;
    httpd_drained_fn drained;
    void *drained_arg;
    /* httpd_stats as counters: one writer (the loop), relaxed loads anywhere;
     * field f of httpd_stats is st[HTTPD__STAT(f)] */
    _Atomic uint64_t st[sizeof(httpd_stats) / sizeof(uint64_t)];
};

/* Counters: one writer (the loop), readers anywhere. */
#define HTTPD__STAT(field) (offsetof(httpd_stats, field) / sizeof(uint64_t))
#define HTTPD__GET(srv, field)                                                                     \
    atomic_load_explicit(&(srv)->st[HTTPD__STAT(field)], memory_order_relaxed)
#define HTTPD__ADD(srv, field, n)                                                                  \
    atomic_store_explicit(&(srv)->st[HTTPD__STAT(field)], HTTPD__GET(srv, field) + (uint64_t)(n),  \
                          memory_order_relaxed)
#define HTTPD__SET(srv, field, v)                                                                  \
    atomic_store_explicit(&(srv)->st[HTTPD__STAT(field)], (uint64_t)(v), memory_order_relaxed)
void httpd__count_status(httpd_server *srv, int status);
void httpd__note_out(httpd_conn *c);

/* The Date header's value for now (cached per second). */
const char *httpd__date(httpd_server *srv);

/* httpd_conn.c */
int httpd__conn_create(httpd_server *srv, struct bufferevent *bev, const struct sockaddr *peer,
                       socklen_t peer_len, bool tls, bool reject);
/* Closes a connection now: a request in flight ends with err. */
void httpd__conn_abort(httpd_conn *c, int err);
/* Marks the connection's last request; an idle one closes. */
void httpd__conn_drain(httpd_conn *c);
/* Runs the deferred work on the next loop turn. */
void httpd__conn_kick(httpd_conn *c);
void httpd__conn_settings(http_parser_settings *s);
/* Resets the per-request state after a request is over. */
void httpd__req_reset(httpd_conn *c);
/* Called by the conn when a connection is freed. */
void httpd__server_conn_gone(httpd_server *srv, httpd_conn *c);

/* httpd_resp.c */
/* The server's own answer (400, 408, 414, 431, 501, 503, 505, 417): written
 * whole, then the connection closes. */
void httpd__error_reply(httpd_conn *c, int status, const char *message);

/* For the fuzz target: serve a connection over any bufferevent (a pair). */
int httpd__adopt_bev(httpd_server *srv, struct bufferevent *bev);

#endif /* RINGCACHE_HTTPD_INT_H */
