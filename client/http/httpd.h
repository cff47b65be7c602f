/* SPDX-License-Identifier: Apache-2.0
 *
 * httpd.h: an HTTP/1.1 server core on libevent bufferevents, for the servers
 * that must stream: the cache node's S3 API (a 100 MiB PutObject in, a 1 GiB
 * GetObject out) and the compute server's ClickHouse HTTP interface (an INSERT
 * body in, a result set out). libevent's evhttp buffers request bodies whole,
 * which these cannot afford.
 *
 * Why it lives in client/: both cached/ (the node) and ingest/ (the compute
 * server) use it, and client/ is the layer both already depend on; nothing in
 * it knows about S3, the cache or the engine. It depends on libevent, OpenSSL
 * and Debian's libhttp-parser (nodejs/http-parser 2.9: request line, headers
 * and chunked decoding as a streaming state machine; it refuses Content-Length
 * together with Transfer-Encoding and any Transfer-Encoding that does not end
 * in chunked, the two request-smuggling shapes).
 *
 * What it does, per connection:
 *  - request line and headers parsed with limits: URL bytes (414), header
 *    bytes and header count (431), malformed (400), HTTP/2+ (505), a missing
 *    Host on HTTP/1.1 (400), CONNECT (501), an Expect other than 100-continue
 *    (417); each answered by the server itself, then the connection closes;
 *  - request bodies (Content-Length or chunked) handed to the handler in
 *    pieces as they arrive; the handler may pause and resume, and while it is
 *    paused the server stops reading the socket (back-pressure: at most
 *    in_buffer_bytes wait in memory);
 *  - Expect: 100-continue: "100 Continue" is sent when the handler asks for
 *    the body; a handler that answers without asking gets its final answer
 *    sent and the body is never read (the connection then closes);
 *  - keep-alive and pipelining: requests on one connection are handled one at
 *    a time, in order; the next one is parsed once the previous response has
 *    ended, and not while the output holds out_high_bytes or more (a client
 *    that pipelines and never reads costs a bounded amount of memory);
 *  - responses with Content-Length or chunked (or close-delimited for an
 *    HTTP/1.0 client), streamed: the handler writes while httpd_resp_room()
 *    says there is room and is called back when the output drains;
 *  - HEAD (the handler answers as for GET; the body is dropped, the headers
 *    kept), 204/304/1xx without a body, Connection: close either way;
 *  - timeouts: idle between requests, the whole request head, no body
 *    progress, no write progress; a connection cap answered with 503;
 *    graceful drain; TLS through bufferevent_openssl; counters.
 *
 * Threads: one server per event loop. Every function here must be called on
 * the thread that runs the server's event_base, except httpd_server_stats(),
 * which any thread may call at any time. Several loops serve one port with
 * reuse_port (one server each) or by each taking a listening socket.
 *
 * Callbacks (the handler, body, writable and done callbacks) all run on the
 * loop thread, and NEVER from inside an httpd_* call: a function below that
 * makes something happen (end a response, resume a body, register a callback)
 * only schedules it for the next loop turn. So a handler may call any httpd_*
 * function from any of its callbacks, or from its own events on that loop,
 * without being re-entered.
 *
 * Lifetime of a request: the httpd_req pointer handed to the handler is valid
 * until its done callback has returned (httpd_req_on_done), which happens
 * exactly once per request handed to the handler: with 0 after the response
 * has ended (all of it queued for the socket), or with a negative errno when
 * the request ends otherwise (-ECONNRESET the client went away, -ETIMEDOUT a
 * timeout closed the connection, -ECANCELED the server was stopped). A handler
 * that keeps asynchronous work for a request must cancel it there. A request
 * without a done callback is simply forgotten at that point. A client that
 * closes its end while a request is in flight aborts it (-ECONNRESET), as
 * nginx does ("client prematurely closed connection").
 */
#ifndef RINGCACHE_HTTPD_H
#define RINGCACHE_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

struct event_base;
struct evbuffer;
typedef struct ssl_ctx_st SSL_CTX;

typedef struct httpd_server httpd_server;
typedef struct httpd_req httpd_req;

/* ---- the handler's callbacks --------------------------------------------- */

/* A request whose head (line and headers) is complete and valid. The handler
 * answers now or later (from the same loop): read the body
 * (httpd_req_read_body) and/or respond (httpd_resp_*). */
typedef void (*httpd_handler_fn)(httpd_req *req, void *arg);

/* A piece of the request body (decoded from chunked if it was). The bytes are
 * the server's: copy what you keep. Pause inside it to stop the next piece. */
typedef void (*httpd_body_fn)(httpd_req *req, const void *data, size_t len, void *arg);

/* The end of the body: 0 when it is complete, -ECONNRESET when the client went
 * away mid-body, -ETIMEDOUT when no byte came for body_timeout_ms, -EPROTO for
 * malformed chunked framing. After an error the handler may still answer (a
 * 400 or 408: the connection closes afterwards) unless the client is gone, in
 * which case the done callback follows. */
typedef void (*httpd_body_end_fn)(httpd_req *req, int status, void *arg);

/* The response may take more bytes (see httpd_resp_on_writable). */
typedef void (*httpd_writable_fn)(httpd_req *req, void *arg);

/* The request is over (see the lifetime rules above). req is still readable
 * inside this call, not after. */
typedef void (*httpd_done_fn)(httpd_req *req, int status, void *arg);

/* Body of an answer the server gives by itself (400, 408, 414, 417, 431, 501,
 * 503, 505): write it into body and return its Content-Type, or return NULL
 * for the default (text/plain, the sentence `message` and a newline). Lets the
 * S3 API answer its over-capacity 503 as an S3 SlowDown error. */
typedef const char *(*httpd_error_body_fn)(int status, const char *message, struct evbuffer *body,
                                           void *arg);

/* ---- configuration -------------------------------------------------------- */

typedef struct httpd_config {
    /* Where to listen. listen_fd >= 0: a bound, listening socket that the
     * server takes over (and closes at destroy); otherwise bind host:port
     * (port 0: any, read it back with httpd_server_port). port < 0 and
     * listen_fd < 0: no listener (connections come from httpd_server_adopt). */
    const char *host; /* NULL: "127.0.0.1" */
    int port;
    int listen_fd;   /* -1 unless used */
    bool reuse_port; /* SO_REUSEPORT, for one server per loop */
    int backlog;     /* 0: 1024 */

    SSL_CTX *tls; /* borrowed, outlives the server; NULL: plain */

    httpd_handler_fn handler; /* required */
    void *handler_arg;
    httpd_error_body_fn error_body; /* NULL: plain text */
    void *error_body_arg;
    const char *server_name; /* Server header; NULL: "ringcache", "": none */

    /* Limits of the request head; 0 takes the default. */
    size_t max_url_bytes;    /* 8 KiB; longer: 414 */
    size_t max_header_bytes; /* 32 KiB (request line + headers, at most
                                          80 KiB: the parser's own cap); more: 431 */
    int max_headers;         /* 100; more: 431 */

    /* Buffers; 0 takes the default. */
    size_t in_buffer_bytes;   /* 256 KiB read ahead at most per connection */
    size_t out_high_bytes;    /* 1 MiB: httpd_resp_room() is 0 from here */
    size_t out_low_bytes;     /* 256 KiB: the writable callback fires here */
    size_t max_discard_bytes; /* 1 MiB of an unread body skipped to keep the
                                          connection; a longer rest closes it */

    /* Connections. */
    int max_conns; /* 0: 10000; over it: 503 and close */

    /* Timeouts in milliseconds; 0 takes the default, < 0 turns it off. */
    int idle_timeout_ms;   /* 60 s between requests */
    int header_timeout_ms; /* 30 s from a request's first byte to its
                                          last header byte: 408 */
    int body_timeout_ms;   /* 60 s without a body byte (while the
                                          handler wants the body) */
    int write_timeout_ms;  /* 60 s without write progress */
    int linger_ms;         /* 2 s of reading what a client still sends
                                          after a final answer, before the close,
                                          so that it sees the answer, not a reset */
} httpd_config;

/* Fills cfg with the defaults (port 0, listen_fd -1, everything else 0). */
void httpd_config_init(httpd_config *cfg);

/* ---- the server ----------------------------------------------------------- */

/* Creates a server on base (borrowed; must outlive the server) and starts
 * listening. Returns 0, or -EINVAL (no handler, a limit out of range with a
 * sentence in err), -EADDRINUSE / -EACCES / other -errno of bind or listen
 * (with a sentence), -ENOMEM. err may be NULL. */
int httpd_server_create(httpd_server **out, struct event_base *base, const httpd_config *cfg,
                        char *err, size_t errlen);

/* Stops at once: closes the listener and every connection; each request in
 * flight gets its body end (-ECANCELED, if it was reading) and done
 * (-ECANCELED) callbacks, synchronously, from inside this call (the one
 * exception to the rule above). Accepts NULL and *srv == NULL. */
void httpd_server_destroy(httpd_server **srv);

/* The port listened on (0 without a listener). */
int httpd_server_port(const httpd_server *srv);

/* Graceful stop: stop accepting, close idle connections, let each request in
 * flight finish (its response says Connection: close, and the connection
 * closes after it), then call done(arg) once no connection is left, or after
 * deadline_ms (requests still running then are aborted with -ECANCELED).
 * done is called from the loop, never from inside this call. Then destroy the
 * server. -EALREADY if a drain is under way. */
typedef void (*httpd_drained_fn)(httpd_server *srv, void *arg);
int httpd_server_drain(httpd_server *srv, int deadline_ms, httpd_drained_fn done, void *arg);

/* Serves a connection accepted by the owner (fd: a connected stream socket,
 * taken over). For an owner that accepts on one thread and spreads
 * connections over loops: call it on this server's loop thread. Counts
 * against max_conns like an accepted one. 0 or -errno (fd closed then). */
int httpd_server_adopt(httpd_server *srv, int fd);

/* Counters, summed over the server's life. Any thread may read them at any
 * time (relaxed atomics: each field is exact, the set is not one snapshot). */
#define HTTPD_STATUS_MIN 100
#define HTTPD_STATUS_MAX 599
typedef struct httpd_stats {
    uint64_t conns_accepted; /* connections served (adopted included) */
    uint64_t conns_rejected; /* answered 503 over max_conns */
    uint64_t conns_open;     /* now */
    uint64_t accept_errors;  /* accept() failures (EMFILE pauses accepting) */
    uint64_t tls_errors;     /* handshakes and TLS sessions that failed */
    uint64_t requests;       /* request heads parsed (handled or refused) */
    uint64_t bytes_in;       /* bytes read from clients (after TLS) */
    uint64_t bytes_out;      /* bytes written to clients (before TLS) */
    uint64_t parse_errors;   /* heads refused: 400, 414, 431, 501, 505, 417 */
    uint64_t timeouts;       /* connections closed by a header, body or
                                          write timeout (idle closes are not counted) */
    uint64_t aborted;        /* requests that ended with done < 0 */
    uint64_t out_peak_bytes; /* the most output one connection held */
    uint64_t status[HTTPD_STATUS_MAX - HTTPD_STATUS_MIN + 1]; /* responses by status */
} httpd_stats;

void httpd_server_stats(const httpd_server *srv, httpd_stats *out);

/* ---- the request ---------------------------------------------------------- */

/* "GET", "PUT", ... (as the parser knows them; others are refused with 400). */
const char *httpd_req_method(const httpd_req *req);
/* The request target as sent, the path part of it (up to '?', not decoded;
 * "/" for an absolute-form target without a path, "*" for OPTIONS *), and the
 * raw query after '?' ("" when there is none; has_query tells "/?" from "/").
 * Each NUL-terminated, borrowed until done. */
const char *httpd_req_target(const httpd_req *req);
const char *httpd_req_path(const httpd_req *req);
const char *httpd_req_query(const httpd_req *req);
bool httpd_req_has_query(const httpd_req *req);
/* 0 for HTTP/1.0, 1 for HTTP/1.1. */
int httpd_req_http_minor(const httpd_req *req);

/* The first header of that name (case-insensitive), or NULL. Borrowed. */
const char *httpd_req_header(const httpd_req *req, const char *name);
/* All headers in arrival order: count, then each (name as sent, value with
 * surrounding blanks trimmed). -ERANGE for an index out of range. */
int httpd_req_header_count(const httpd_req *req);
int httpd_req_header_at(const httpd_req *req, int i, const char **name, const char **value);

/* The body's length from Content-Length, -1 for a chunked body (length
 * unknown), 0 for none. */
int64_t httpd_req_content_length(const httpd_req *req);
/* The client's address, and whether the connection is TLS. */
const struct sockaddr *httpd_req_peer(const httpd_req *req, socklen_t *len);
bool httpd_req_is_tls(const httpd_req *req);
/* The server the request came to. */
httpd_server *httpd_req_server(const httpd_req *req);

/* Start receiving the body: on_data for each piece as it arrives, then
 * on_end once. Sends "100 Continue" first when the client asked for it and no
 * final answer has started. A request without a body gets on_end(0) alone.
 * Callbacks start on the next loop turn. -EALREADY when called twice,
 * -EPIPE once the response has ended or the connection is gone. */
int httpd_req_read_body(httpd_req *req, httpd_body_fn on_data, httpd_body_end_fn on_end, void *arg);
/* Stop / restart delivering the body. While paused, at most in_buffer_bytes
 * wait in memory, then the server stops reading the socket (and the body
 * timeout does not run). Idempotent. */
void httpd_req_pause_body(httpd_req *req);
void httpd_req_resume_body(httpd_req *req);

/* Called once when the request is over; see the lifetime rules. Replaces any
 * earlier registration. */
void httpd_req_on_done(httpd_req *req, httpd_done_fn fn, void *arg);

/* ---- the response --------------------------------------------------------- */

/* Status (100-599 but 101 and 100; default 200) and headers, before start.
 * The server writes Date, Server, Content-Length / Transfer-Encoding and
 * Connection itself: adding Content-Length, Transfer-Encoding or Connection is
 * -EINVAL, except "Connection: close", which makes this the connection's last
 * response. A name that is not a token or a value with CR, LF or NUL is
 * -EINVAL; after start, -EALREADY. Values are copied. */
int httpd_resp_set_status(httpd_req *req, int status);
int httpd_resp_add_header(httpd_req *req, const char *name, const char *value);

/* Sends the status line and the headers added so far, leaving the head open:
 * headers added later go out at the next flush or at httpd_resp_start, which
 * ends the head. For an answer that takes long to begin, so that the client
 * hears from it (ClickHouse's progress headers); the status can no longer
 * change (set_status is -EALREADY). -EALREADY once started, -EPIPE when the
 * connection is gone. */
int httpd_resp_flush_head(httpd_req *req);

/* Sends the head. content_length >= 0: exactly that many body bytes follow;
 * -1: chunked (close-delimited for an HTTP/1.0 client). For HEAD, 204, 304
 * and 1xx, no body is sent whatever is written. -EALREADY when started, -EPIPE
 * when the connection is gone. */
int httpd_resp_start(httpd_req *req, int64_t content_length);

/* Body bytes. Copied (write), referenced until sent (write_ref: cleanup(data,
 * len, arg) runs once the bytes have left, or are dropped; it may run inside
 * this call when they are dropped at once, e.g. for HEAD), or moved out of
 * buf (write_buffer). Always accepted up to the declared length: the handler
 * keeps memory bounded by writing only while httpd_resp_room() > 0.
 * -EMSGSIZE past the Content-Length (nothing taken), -EPIPE when the
 * connection is gone, -EINVAL before start. */
int httpd_resp_write(httpd_req *req, const void *data, size_t len);
typedef void (*httpd_ref_cleanup_fn)(const void *data, size_t len, void *arg);
int httpd_resp_write_ref(httpd_req *req, const void *data, size_t len, httpd_ref_cleanup_fn cleanup,
                         void *arg);
int httpd_resp_write_buffer(httpd_req *req, struct evbuffer *buf);
/* len bytes of the file fd from offset: sent with sendfile(2) on a plain
 * connection (no copy through user memory), read and copied under TLS. fd is
 * borrowed (duplicated inside; the caller may close it at once). The file
 * must not shrink before the bytes are sent. -errno of dup, else as above. */
int httpd_resp_write_file(httpd_req *req, int fd, int64_t offset, size_t len);
/* The same for a file the caller keeps open, without duplicating fd: it must
 * stay open, and the bytes unchanged, until cleanup(arg) has run, once the
 * bytes have left or been dropped (it may run inside this call when they are
 * dropped at once, e.g. for HEAD). On an error (< 0) it does not run: the
 * caller keeps what arg holds. */
typedef void (*httpd_file_cleanup_fn)(void *arg);
int httpd_resp_write_file_ref(httpd_req *req, int fd, int64_t offset, size_t len,
                              httpd_file_cleanup_fn cleanup, void *arg);

/* Bytes the handler may still queue before the output reaches out_high_bytes
 * (0: wait for the writable callback). */
size_t httpd_resp_room(const httpd_req *req);

/* fn is called (next loop turn) once after registration, then each time the
 * output drains to out_low_bytes after a write left no room, until the
 * response ends; NULL stops it. */
void httpd_resp_on_writable(httpd_req *req, httpd_writable_fn fn, void *arg);

/* Ends the response (unstarted: sends the head with Content-Length: 0 first,
 * so status + headers + end is a whole bodiless answer). With a
 * Content-Length not yet reached this is -EPROTO
 * and the connection closes after what was sent (the client sees a short
 * body). Ending while the body is still being read stops its delivery: the
 * rest is skipped (up to max_discard_bytes, else the connection closes).
 * -EPIPE when the connection is gone. */
int httpd_resp_end(httpd_req *req);

/* Cuts the response: the connection closes now (a chunked body then lacks
 * its last chunk, a sized one is short, so the client knows it is
 * incomplete). For an answer that cannot go on (the object changed
 * mid-stream). The done callback follows with -ECONNRESET. */
void httpd_resp_abort(httpd_req *req);

/* One call for a whole small answer: status, optional Content-Type, body. */
int httpd_resp_send(httpd_req *req, int status, const char *content_type, const void *body,
                    size_t len);

/* Whether the response head has been sent / the response has ended. */
bool httpd_resp_started(const httpd_req *req);

#ifdef __cplusplus
}
#endif
#endif /* RINGCACHE_HTTPD_H */
