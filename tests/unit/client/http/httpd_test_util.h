/* SPDX-License-Identifier: Apache-2.0
 *
 * httpd_test_util.h: what the HTTP server core's tests share: a server
 * (client/http/httpd.h) on an event loop of its own thread with the test
 * handler below, a raw-socket client that reads answers with http_parser in
 * response mode (so pipelined answers are split exactly), and the handler's
 * observations, read by the test thread through atomics.
 *
 * The test handler's routes (path, query):
 *   /hello                      200 "hello\n"
 *   /echo                       reads the body; 200 "<bytes> <sha256 hex>\n"
 *   /slowecho                   the same, pausing the body after each piece and
 *                               resuming it 2 ms later from a timer
 *   /deny                       403 without reading the body
 *   /big?bytes=N[&chunked=1]    N bytes of pattern(i), written in 64 KiB pieces
 *                               while httpd_resp_room() allows, then from the
 *                               writable callback
 *   /async?ms=N                 200 "async\n" N ms later (from a timer)
 *   /abort                      a chunked answer cut after 1000 bytes
 *   /early?ms=N                 202 with X-Early: 1 flushed at once
 *                               (httpd_resp_flush_head), then N ms later
 *                               X-Late: 2 and a chunked "late\n"
 *   /file[?chunked=1][&ref=1]   the file ts->file_fd whole, in 64 KiB pieces
 *                               with httpd_resp_write_file (ref=1:
 *                               httpd_resp_write_file_ref, each piece's
 *                               cleanup counted in file_refs_*)
 * anything else is 404.
 *
 * Thread-safety: ts_start/ts_stop/ts_call from the test's main thread; the
 * handler runs on the server thread.
 */
#ifndef RINGCACHE_TESTS_HTTPD_TEST_UTIL_H
#define RINGCACHE_TESTS_HTTPD_TEST_UTIL_H

#include "httpd.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;

typedef struct ts_server {
    pthread_t th;
    struct event_base *base;
    httpd_server *srv;
    httpd_config cfg;
    int port;
    int create_rc;
    char err[256];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool ready;
    /* what the handler saw */
    atomic_int requests;
    atomic_int done_ok, done_err, last_done_status;
    atomic_int body_end_ok, body_end_err, last_body_end;
    atomic_llong body_bytes;   /* body bytes delivered to handlers */
    atomic_int writable_calls; /* /big's writable callbacks */
    atomic_int drained;        /* the drain callback ran */
    atomic_int file_refs_out;  /* /file?ref=1 pieces queued, cleanup not run yet */
    atomic_int file_refs_done; /* their cleanups that ran */
    int file_fd;               /* served by /file; set before ts_start */
    int64_t file_len;
} ts_server;

/* Starts a server with cfg (handler and host filled in here; NULL cfg: the
 * defaults). Fails the test on error. */
void ts_start(ts_server *ts, const httpd_config *cfg);
/* The same, serving fd (file_len bytes) at /file. */
void ts_start_file(ts_server *ts, const httpd_config *cfg, int fd, int64_t len);
/* Stops the loop and destroys the server. */
void ts_stop(ts_server *ts);
/* Runs fn(ts) on the server's loop thread and waits for it. */
void ts_call(ts_server *ts, void (*fn)(ts_server *ts));
void ts_stats(ts_server *ts, httpd_stats *st);

/* The byte at offset i of /big's body. */
static inline unsigned char ts_pattern(uint64_t i)
{
    return (unsigned char)((i * 131u + (i >> 12)) & 0xff);
}

/* ---- a raw client -------------------------------------------------------- */

int tc_connect(int port);
/* The same with a small receive buffer (set before connecting). */
int tc_connect_rcvbuf(int port, int rcvbuf);
void tc_send(int fd, const void *data, size_t len);
void tc_sends(int fd, const char *s);

typedef struct tc_resp {
    int status;
    int minor;
    char content_length[32];
    char connection[32];
    char transfer_encoding[32];
    char retry_after[16];
    char *body;
    size_t body_len;
    bool complete;
} tc_resp;

/* A reader of answers on one connection; keeps bytes that follow one answer
 * for the next. */
typedef struct tc_reader tc_reader;
tc_reader *tc_reader_create(int fd);
void tc_reader_destroy(tc_reader **r);
/* Reads one answer (a HEAD's if head is true). 0, or -ECONNRESET when the
 * connection closed first (r->complete false), -ETIMEDOUT after 20 s. */
int tc_read(tc_reader *r, tc_resp *resp, bool head);
void tc_resp_free(tc_resp *resp);
/* Raw bytes up to and including the first "\r\n\r\n" (an interim answer). */
int tc_read_head_raw(tc_reader *r, char *buf, size_t cap);
/* 0 once the peer has closed (reading what is left), -ETIMEDOUT if not in 20 s. */
int tc_wait_closed(int fd);

/* Waits (bounded, 20 s) until *v >= want; returns the value seen. */
int ts_wait_atomic(atomic_int *v, int want);

#endif
