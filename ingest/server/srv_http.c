/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_http.c: the event loop's side of ClickHouse's HTTP interface.
 *
 * Routes: GET/HEAD /ping and /replicas_status (and / without a query) answer
 * "Ok.\n"; /metrics is Prometheus text; OPTIONS is a CORS preflight; / runs
 * a query; anything else is 404.
 *
 * A query request, in order (each step's failure is ClickHouse's error, with
 * its code, name and HTTP status):
 *   1. URL parameters (srv_params.c); the query id (query_id, else
 *      X-ClickHouse-Query-Id, else a new UUID);
 *   2. who: X-ClickHouse-User/Key, Basic, or user/password (one of them);
 *   3. settings: the defaults, the user's profile, the session's SETs, GET
 *      implying readonly=2, then every parameter that is not the interface's
 *      own; the database (X-ClickHouse-Database over database=), the default
 *      format (X-ClickHouse-Format over default_format=);
 *   4. the text: query= and, for POST, the body after a line feed; an INSERT's
 *      data is what follows its FORMAT clause, streamed to the query while it
 *      runs (other bodies are read whole, up to max_query_size);
 *   5. a query thread runs it (srv_query.c) while the loop forwards what it
 *      writes.
 *
 * The answer: bytes are held until http_response_buffer_size (1 MiB when 0)
 * or the end (wait_end_of_query), so that an early error still gets its
 * status; then the head goes out (X-ClickHouse-Query-Id, -Format, -Timezone,
 * -Server-Display-Name, -Summary, Keep-Alive) and the body streams chunked,
 * compressed when asked, at the pace the client reads (the thread waits
 * while 4 MiB are queued). An error after the head is written at the end of
 * the body, as ClickHouse does. With send_progress_in_http_headers the head
 * is flushed early and an X-ClickHouse-Progress header follows every
 * http_headers_progress_interval_ms until the first bytes. A client that
 * goes away cancels its query.
 */
#include "srv_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

/* ---- errors ------------------------------------------------------------------------ */

int srv_http_status(int code)
{
    switch (code) {
    case ENG_E_REQUIRED_PASSWORD: return 401;
    case ENG_E_UNKNOWN_USER:
    case ENG_E_WRONG_PASSWORD:
    case ENG_E_AUTHENTICATION_FAILED:
    case ENG_E_ACCESS_DENIED:
    case ENG_E_IP_ADDRESS_NOT_ALLOWED: return 403;
    case ENG_E_BAD_ARGUMENTS:
    case ENG_E_CANNOT_PARSE_TEXT:
    case ENG_E_CANNOT_PARSE_INPUT_ASSERTION_FAILED:
    case ENG_E_SYNTAX_ERROR:
    case ENG_E_INCORRECT_DATA:
    case ENG_E_TYPE_MISMATCH: return 400;
    case ENG_E_UNKNOWN_TABLE:
    case ENG_E_UNKNOWN_FUNCTION:
    case ENG_E_UNKNOWN_IDENTIFIER:
    case ENG_E_UNKNOWN_TYPE:
    case ENG_E_UNKNOWN_DATABASE:
    case ENG_E_UNKNOWN_SETTING:
    case ENG_E_UNKNOWN_FORMAT: return 404;
    case ENG_E_QUERY_IS_TOO_LARGE: return 413;
    case ENG_E_NOT_IMPLEMENTED: return 501;
    case ENG_E_SOCKET_TIMEOUT:
    case ENG_E_CANNOT_OPEN_FILE: return 503;
    case ENG_E_HTTP_LENGTH_REQUIRED: return 411;
    case ENG_E_TIMEOUT_EXCEEDED: return 408;
    default: return 500;
    }
}

size_t srv_exception_text(char *buf, size_t cap, int code, const char *msg)
{
    size_t ml = msg ? strlen(msg) : 0;
    while (ml && (msg[ml - 1] == '\n' || msg[ml - 1] == ' '))
        ml--;
    bool dot = ml && msg[ml - 1] == '.';
    int n = snprintf(buf, cap, "Code: %d. DB::Exception: %.*s%s (%s) (version %s)\n", code, (int)ml,
                     msg ? msg : "", dot ? "" : ".", eng_error_name(code), SRV_VERSION_TEXT);
    return n < 0 ? 0 : (size_t)n >= cap ? cap - 1 : (size_t)n;
}

/* ---- small answers -------------------------------------------------------------------- */

static void common_headers(srv *s, httpd_req *req)
{
    char ka[48];
    snprintf(ka, sizeof(ka), "timeout=%lld", (long long)(s->conf.keep_alive_timeout_ms / 1000));
    httpd_resp_add_header(req, "Keep-Alive", ka);
    httpd_resp_add_header(req, "X-ClickHouse-Server-Display-Name", s->display_name);
    httpd_resp_add_header(req, "Access-Control-Expose-Headers",
                          "X-ClickHouse-Query-Id,X-ClickHouse-Summary,X-ClickHouse-Server-"
                          "Display-Name,X-ClickHouse-Format,X-ClickHouse-Timezone,X-ClickHouse-"
                          "Exception-Code");
}

static void answer_ok(srv *s, httpd_req *req)
{
    common_headers(s, req);
    httpd_resp_send(req, 200, "text/html; charset=UTF-8", "Ok.\n", 4);
}

/* An error before any byte of the answer: its status, its code header, the
 * text as the body. */
static void answer_error(srv *s, httpd_req *req, const char *query_id, int code, const char *msg)
{
    char text[ENG_MSG_MAX + 256], num[16];
    size_t n = srv_exception_text(text, sizeof(text), code, msg);
    snprintf(num, sizeof(num), "%d", code);
    common_headers(s, req);
    if (query_id && query_id[0])
        httpd_resp_add_header(req, "X-ClickHouse-Query-Id", query_id);
    httpd_resp_add_header(req, "X-ClickHouse-Timezone", "UTC");
    httpd_resp_add_header(req, "X-ClickHouse-Exception-Code", num);
    if (code == ENG_E_REQUIRED_PASSWORD)
        httpd_resp_add_header(req, "WWW-Authenticate",
                              "Basic realm=\"ClickHouse server HTTP API\"");
    httpd_resp_send(req, srv_http_status(code), "text/plain; charset=UTF-8", text, n);
}

/* A request refused before its query starts (a bad login, an unknown
 * setting or format, a body too large, ...): no query_log row, but counted by
 * its code in ringcache_server_query_failures_total as the queries' failures
 * are. */
static void refuse(srv *s, httpd_req *req, const char *query_id, int code, const char *msg)
{
    srv_count_failure(s, code);
    answer_error(s, req, query_id, code, msg);
}

static void answer_metrics(srv *s, httpd_req *req)
{
    rc_stats st;
    srv_cache_stats(s, &st);
    char *text;
    size_t len;
    /* the cache client's totals, as counters that never go back */
    met_set(s->met, s->m_base + SRV_M_PAGE_HIT_RATIO,
            st.hits + st.misses ? (int64_t)(st.hits * 1000 / (st.hits + st.misses)) : 0);
    if (met_render(s->met, &text, &len) < 0) {
        httpd_resp_send(req, 500, "text/plain", "out of memory\n", 14);
        return;
    }
    /* libringcache's counters are kept there; append them (running totals) */
    char extra[2048];
    int k = snprintf(
        extra, sizeof(extra),
        "# HELP ringcache_server_page_cache_blocks_total page cache blocks by outcome\n"
        "# TYPE ringcache_server_page_cache_blocks_total counter\n"
        "ringcache_server_page_cache_blocks_total{result=\"hit\"} %llu\n"
        "ringcache_server_page_cache_blocks_total{result=\"miss\"} %llu\n"
        "# HELP ringcache_server_bytes_from_total bytes read into the page cache, by source\n"
        "# TYPE ringcache_server_bytes_from_total counter\n"
        "ringcache_server_bytes_from_total{source=\"cache_nodes\"} %llu\n"
        "ringcache_server_bytes_from_total{source=\"s3\"} %llu\n",
        (unsigned long long)st.hits, (unsigned long long)st.misses,
        (unsigned long long)st.node_bytes, (unsigned long long)st.s3_bytes);
    struct evbuffer *b = evbuffer_new();
    if (!b) {
        free(text);
        httpd_resp_send(req, 500, "text/plain", "out of memory\n", 14);
        return;
    }
    evbuffer_add(b, text, len);
    evbuffer_add(b, extra, (size_t)k);
    free(text);
    httpd_resp_set_status(req, 200);
    httpd_resp_add_header(req, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    httpd_resp_start(req, (int64_t)evbuffer_get_length(b));
    httpd_resp_write_buffer(req, b);
    httpd_resp_end(req);
    evbuffer_free(b);
}

/* ---- who ------------------------------------------------------------------------------- */

/* The credentials of the request: user, password, and whether any were sent.
 * 0, or a code with a sentence (two ways at once, a scheme not Basic). */
static int credentials(httpd_req *req, const srv_params *p, char *user, size_t ucap, char *pass,
                       size_t pcap, bool *given, char *err, size_t errlen)
{
    const char *hu = httpd_req_header(req, "X-ClickHouse-User");
    const char *hk = httpd_req_header(req, "X-ClickHouse-Key");
    const char *auth = httpd_req_header(req, "Authorization");
    const char *pu = srv_params_last(p, "user");
    const char *pp = srv_params_last(p, "password");
    int ways = (hu || hk) + (auth != NULL) + (pu || pp);
    user[0] = pass[0] = 0;
    *given = ways > 0;
    if (ways > 1) {
        snprintf(err, errlen,
                 "Invalid authentication: it is not allowed to use %s simultaneously: send the "
                 "credentials one way",
                 (hu || hk) && auth ? "X-ClickHouse HTTP headers and Authorization HTTP header"
                 : auth             ? "Authorization HTTP header and authentication via parameters"
                                    : "X-ClickHouse HTTP headers and authentication via "
                                      "parameters");
        return ENG_E_AUTHENTICATION_FAILED;
    }
    if (hu || hk) {
        snprintf(user, ucap, "%s", hu ? hu : "default");
        snprintf(pass, pcap, "%s", hk ? hk : "");
        return 0;
    }
    if (pu || pp) {
        snprintf(user, ucap, "%s", pu ? pu : "default");
        snprintf(pass, pcap, "%s", pp ? pp : "");
        return 0;
    }
    if (!auth)
        return 0;
    if (strncasecmp(auth, "Basic ", 6) != 0) {
        const char *sp = strchr(auth, ' ');
        snprintf(err, errlen,
                 "Invalid authentication: '%.*s' HTTP Authorization scheme is not "
                 "supported (use Basic)",
                 sp ? (int)(sp - auth) : 16, auth);
        return ENG_E_AUTHENTICATION_FAILED;
    }
    const char *b64 = auth + 6;
    while (*b64 == ' ')
        b64++;
    size_t bl = strlen(b64);
    unsigned char dec[512];
    if (bl == 0 || bl % 4 || bl > 4 * (sizeof(dec) / 3) - 4) {
        snprintf(err, errlen, "Invalid authentication: the Basic credentials are not base64");
        return ENG_E_AUTHENTICATION_FAILED;
    }
    int dl = EVP_DecodeBlock(dec, (const unsigned char *)b64, (int)bl);
    if (dl < 0) {
        snprintf(err, errlen, "Invalid authentication: the Basic credentials are not base64");
        return ENG_E_AUTHENTICATION_FAILED;
    }
    for (size_t i = bl; i > 0 && b64[i - 1] == '='; i--)
        dl--;
    dec[dl] = 0;
    char *colon = memchr(dec, ':', (size_t)dl);
    if (!colon || memchr(dec, 0, (size_t)dl)) {
        snprintf(err, errlen,
                 "Invalid authentication: the Basic credentials are not user:password");
        return ENG_E_AUTHENTICATION_FAILED;
    }
    *colon = 0;
    snprintf(user, ucap, "%s", dec[0] ? (char *)dec : "default");
    snprintf(pass, pcap, "%s", colon + 1);
    explicit_bzero(dec, sizeof(dec));
    return 0;
}

static void new_uuid(char out[37])
{
    uint8_t b[16];
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
        for (size_t i = 0; i < sizeof(b); i++)
            b[i] = (uint8_t)rand();
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

/* ---- the query's object ------------------------------------------------------------------ */

void srv_query_ref(srv_query *q)
{
    pthread_mutex_lock(&q->mu);
    q->refs++;
    pthread_mutex_unlock(&q->mu);
}

static void query_free(srv_query *q)
{
    srv_cache_put(q->s, q->cache);
    if (q->wake)
        event_free(q->wake);
    if (q->out)
        evbuffer_free(q->out);
    if (q->in)
        evbuffer_free(q->in);
    srv_zstream_destroy(&q->enc);
    srv_zstream_destroy(&q->dec);
    free(q->text);
    free(q->qparam);
    free(q->dist_unit);
    free(q->dist_shares);
    srv_params_free(&q->params);
    free(q->err_msg);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    free(q);
}

void srv_query_unref(srv_query *q)
{
    pthread_mutex_lock(&q->mu);
    int left = --q->refs;
    pthread_mutex_unlock(&q->mu);
    if (left == 0)
        query_free(q);
}

void srv_query_wake_locked(srv_query *q)
{
    if (q->wake)
        event_active(q->wake, EV_READ, 0);
}

/* ---- the answer ---------------------------------------------------------------------------- */

static const char *content_type(eng_format f)
{
    switch (f) {
    case ENG_FMT_TSV:
    case ENG_FMT_TSV_WITH_NAMES:
    case ENG_FMT_TSV_WITH_NAMES_AND_TYPES:
    case ENG_FMT_TSV_RAW: return "text/tab-separated-values; charset=UTF-8";
    case ENG_FMT_CSV: return "text/csv; charset=UTF-8; header=absent";
    case ENG_FMT_CSV_WITH_NAMES:
    case ENG_FMT_CSV_WITH_NAMES_AND_TYPES: return "text/csv; charset=UTF-8; header=present";
    case ENG_FMT_JSON:
    case ENG_FMT_JSON_COMPACT:
    case ENG_FMT_JSON_STRINGS:
    case ENG_FMT_JSON_EACH_ROW:
    case ENG_FMT_JSON_STRINGS_EACH_ROW:
    case ENG_FMT_JSON_COMPACT_EACH_ROW:
    case ENG_FMT_JSON_COMPACT_EACH_ROW_WITH_NAMES:
    case ENG_FMT_JSON_COMPACT_EACH_ROW_WITH_NAMES_AND_TYPES:
    case ENG_FMT_JSON_COMPACT_STRINGS_EACH_ROW: return "application/json; charset=UTF-8";
    case ENG_FMT_MARKDOWN: return "text/markdown; charset=UTF-8";
    case ENG_FMT_PARQUET: return "application/octet-stream";
    default: return "text/plain; charset=UTF-8";
    }
}

/* {"read_rows":"..",...}: every value a decimal string, in ClickHouse's order.
 * The caller holds q->mu. */
static void summary_json(srv_query *q, char *buf, size_t cap)
{
    uint64_t rr = atomic_load(&q->live.rows_read);
    snprintf(buf, cap,
             "{\"read_rows\":\"%llu\",\"read_bytes\":\"%llu\",\"written_rows\":\"%llu\","
             "\"written_bytes\":\"%llu\",\"total_rows_to_read\":\"%llu\",\"result_rows\":\"%llu\","
             "\"result_bytes\":\"%llu\",\"elapsed_ns\":\"%llu\",\"memory_usage\":\"%lld\"}",
             (unsigned long long)rr, (unsigned long long)atomic_load(&q->live.bytes_read),
             (unsigned long long)atomic_load(&q->written_rows),
             (unsigned long long)atomic_load(&q->written_bytes), (unsigned long long)rr,
             (unsigned long long)atomic_load(&q->result_rows), (unsigned long long)q->out_total,
             (unsigned long long)((srv_now() - q->t0) * 1e9),
             (long long)atomic_load(&q->live.peak_memory));
}

/* The success head. Caller holds q->mu. */
static void send_head(srv_query *q)
{
    httpd_req *req = q->req;
    srv *s = q->s;
    if (!q->head_open)
        common_headers(s, req);
    char sum[512];
    if (q->has_output) {
        httpd_resp_add_header(req, "Content-Type", content_type(q->out_format));
        httpd_resp_add_header(req, "X-ClickHouse-Format", eng_format_name(q->out_format));
    } else {
        httpd_resp_add_header(req, "Content-Type", "text/plain; charset=UTF-8");
    }
    if (!q->head_open) {
        httpd_resp_add_header(req, "X-ClickHouse-Query-Id", q->id);
        httpd_resp_add_header(req, "X-ClickHouse-Timezone", "UTC");
    }
    if (q->resp_codec != SRV_CODEC_NONE && q->has_output)
        httpd_resp_add_header(req, "Content-Encoding", srv_codec_name(q->resp_codec));
    if (q->set.add_http_cors_header)
        httpd_resp_add_header(req, "Access-Control-Allow-Origin", "*");
    if (q->close_after)
        httpd_resp_add_header(req, "Connection", "close");
    summary_json(q, sum, sizeof(sum));
    httpd_resp_add_header(req, "X-ClickHouse-Summary", sum);
    httpd_resp_start(req, -1);
    q->started = true;
    q->head_open = false;
}

/* The failure head (nothing sent yet, or only a flushed head). */
static void send_error_locked(srv_query *q)
{
    httpd_req *req = q->req;
    srv *s = q->s;
    char text[ENG_MSG_MAX + 256], num[16], sum[512];
    size_t n = srv_exception_text(text, sizeof(text), q->err_code, q->err_msg);
    snprintf(num, sizeof(num), "%d", q->err_code);
    if (!q->head_open) {
        common_headers(s, req);
        httpd_resp_set_status(req, srv_http_status(q->err_code));
        httpd_resp_add_header(req, "X-ClickHouse-Query-Id", q->id);
        httpd_resp_add_header(req, "X-ClickHouse-Timezone", "UTC");
        if (q->set.add_http_cors_header)
            httpd_resp_add_header(req, "Access-Control-Allow-Origin", "*");
    }
    httpd_resp_add_header(req, "Content-Type", "text/plain; charset=UTF-8");
    httpd_resp_add_header(req, "X-ClickHouse-Exception-Code", num);
    summary_json(q, sum, sizeof(sum));
    httpd_resp_add_header(req, "X-ClickHouse-Summary", sum);
    httpd_resp_start(req, (int64_t)n);
    httpd_resp_write(req, text, n);
    httpd_resp_end(req);
    q->started = true;
    q->head_open = false;
    q->resp_ended = true;
}

static void forward(httpd_req *req, void *arg);

/* Moves what the thread wrote to the answer, as far as httpd takes it. The
 * caller holds q->mu. */
static void pump_locked(srv_query *q)
{
    if (!q->req || q->resp_ended)
        return;
    if (!q->started) {
        if (!q->commit && !q->done)
            return;
        if (q->done && q->err_code && !q->commit) {
            send_error_locked(q);
            return;
        }
        send_head(q);
        httpd_resp_on_writable(q->req, forward, q);
    }
    size_t room = httpd_resp_room(q->req);
    size_t have = evbuffer_get_length(q->out);
    if (have && room) {
        if (have <= room) {
            httpd_resp_write_buffer(q->req, q->out);
        } else {
            struct evbuffer *part = evbuffer_new();
            if (part) {
                evbuffer_remove_buffer(q->out, part, room);
                httpd_resp_write_buffer(q->req, part);
                evbuffer_free(part);
            }
        }
        pthread_cond_broadcast(&q->cv); /* room for the thread again */
    }
    if (q->done && evbuffer_get_length(q->out) == 0) {
        httpd_resp_end(q->req);
        q->resp_ended = true;
    }
}

static void forward(httpd_req *req, void *arg)
{
    (void)req;
    srv_query *q = arg;
    pthread_mutex_lock(&q->mu);
    pump_locked(q);
    pthread_mutex_unlock(&q->mu);
}

/* The query's end, once, on the loop: the log, the registry, the session. */
static void finalize(srv_query *q)
{
    srv *s = q->s;
    if (q->finalized)
        return;
    q->finalized = true;
    srv_qlog_add(s, q,
                 !q->err_code      ? SRV_QT_FINISH
                 : q->logged_start ? SRV_QT_EXC_WHILE
                                   : SRV_QT_EXC_BEFORE,
                 q->err_msg, q->err_code);
    if (q->err_code && q->err_code != ENG_E_QUERY_WAS_CANCELLED)
        srv_log(SRV_LOG_INFO, "msg=\"query failed\" query_id=%s code=%d name=%s", q->id,
                q->err_code, eng_error_name(q->err_code));
    else if (srv_log_enabled(SRV_LOG_DEBUG))
        srv_log(SRV_LOG_DEBUG, "msg=\"query done\" query_id=%s code=%d elapsed_ms=%.1f", q->id,
                q->err_code, (srv_now() - q->t0) * 1000);
    if (atomic_load(&q->cancel))
        srv_count(s, SRV_M_CANCELLED, 1);
    if (strcmp(q->kind, "Insert") == 0)
        srv_count(s, SRV_M_INSERTS, 1);
    else if (q->has_output)
        srv_count(s, SRV_M_SELECTS, 1);
    srv_unregister(s, q);
    srv_session_release(s, q->session, q->close_session);
    q->session = NULL;
}

static void wake_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    srv_query *q = arg;
    pthread_mutex_lock(&q->mu);
    bool done = q->done;
    pump_locked(q);
    /* the body: resume it once the thread has read enough */
    if (q->req && q->in_paused && q->in && evbuffer_get_length(q->in) < (1u << 20)) {
        q->in_paused = false;
        httpd_req_resume_body(q->req);
    }
    bool release = done && !q->req && !q->finalized;
    pthread_mutex_unlock(&q->mu);
    if (done)
        finalize(q);
    if (release)
        srv_query_unref(q); /* the loop's reference: the request was over already */
}

static void req_done(httpd_req *req, int status, void *arg)
{
    (void)req;
    srv_query *q = arg;
    pthread_mutex_lock(&q->mu);
    q->req = NULL;
    q->gone = true;
    bool done = q->done;
    if (!done && status < 0) {
        int z = SRV_CANCEL_NONE;
        atomic_compare_exchange_strong(
            &q->cancel_why, &z, status == -ECANCELED ? SRV_CANCEL_SHUTDOWN : SRV_CANCEL_CLIENT);
        atomic_store(&q->cancel, 1);
        if (!q->in_eof) {
            q->in_eof = true;
            q->in_err = -ECONNRESET;
        }
    }
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    if (done) {
        finalize(q);
        srv_query_unref(q);
    }
    /* else: wake_cb releases the loop's reference when the thread is done */
}

void srv_http_tick(srv *s, double now)
{
    pthread_mutex_lock(&s->mu);
    for (srv_query *q = s->running; q; q = q->next) {
        int64_t dl = atomic_load(&q->deadline_us);
        if (dl > 0 && now * 1e6 >= (double)dl && !atomic_load(&q->cancel)) {
            int z = SRV_CANCEL_NONE;
            atomic_compare_exchange_strong(&q->cancel_why, &z, SRV_CANCEL_TIMEOUT);
            atomic_store(&q->cancel, 1);
            pthread_mutex_lock(&q->mu);
            pthread_cond_broadcast(&q->cv);
            pthread_mutex_unlock(&q->mu);
        }
        if (!q->set.send_progress_in_http_headers || now < q->next_progress)
            continue;
        pthread_mutex_lock(&q->mu);
        if (q->req && !q->started && !q->done) {
            char prog[512];
            summary_json(q, prog, sizeof(prog));
            if (!q->head_open) {
                common_headers(s, q->req);
                httpd_resp_add_header(q->req, "X-ClickHouse-Query-Id", q->id);
                httpd_resp_add_header(q->req, "X-ClickHouse-Timezone", "UTC");
            }
            httpd_resp_add_header(q->req, "X-ClickHouse-Progress", prog);
            if (httpd_resp_flush_head(q->req) == 0)
                q->head_open = true;
        }
        pthread_mutex_unlock(&q->mu);
        q->next_progress = now + (double)q->set.http_headers_progress_interval_ms / 1000.0;
    }
    pthread_mutex_unlock(&s->mu);
}

/* ---- the request body ------------------------------------------------------------------------ */

typedef struct body_state {
    srv_query *q;
    struct evbuffer *pending; /* the text's part of the body, until dispatch */
    const char *query_param;
    bool dispatched;
    uint64_t body_bytes;
} body_state;

static void start_query(srv_query *q);

static void buf_free(struct evbuffer *b)
{
    if (b)
        evbuffer_free(b);
}

/* Fails a query that has not started: its answer and its log row. */
static void fail_before_start(srv_query *q, int code, const char *msg)
{
    srv_qlog_add(q->s, q, SRV_QT_EXC_BEFORE, msg, code);
    if (q->req)
        answer_error(q->s, q->req, q->id, code, msg);
}

/* Appends the text so far: query= "\n" body-so-far. */
static int text_of(body_state *b, char **out, size_t *len)
{
    size_t ql = b->query_param ? strlen(b->query_param) : 0;
    size_t bl = b->pending ? evbuffer_get_length(b->pending) : 0;
    char *t = malloc(ql + 1 + bl + 1);
    if (!t)
        return -ENOMEM;
    size_t o = 0;
    if (ql) {
        memcpy(t, b->query_param, ql);
        o = ql;
        if (bl || b->body_bytes)
            t[o++] = '\n';
    }
    if (bl)
        evbuffer_copyout(b->pending, t + o, bl);
    o += bl;
    t[o] = 0;
    *out = t;
    *len = o;
    return 0;
}

/* Decides, from the text so far, whether to start now: an INSERT whose head is
 * whole starts with its data streaming; end: the body is whole. 1 started, 0
 * wait, < 0 failed (answered). */
static int maybe_dispatch(body_state *b, bool end)
{
    srv_query *q = b->q;
    char *t;
    size_t len;
    if (text_of(b, &t, &len) < 0) {
        b->dispatched = true;
        fail_before_start(q, ENG_E_MEMORY_LIMIT_EXCEEDED, "out of memory reading the query");
        return -ENOMEM;
    }
    srv_insert_head h;
    size_t off = 0;
    char err[ENG_MSG_MAX];
    int ins = srv_insert_parse_whole(t, len, end, &h, &off, err, sizeof(err));
    if (ins == 1 && !h.select) {
        /* the head is the query; the rest is data, streamed */
        pthread_mutex_lock(&q->mu);
        q->in = evbuffer_new();
        if (q->in && off < len)
            evbuffer_add(q->in, t + off, len - off);
        q->in_eof = end;
        q->insert_stream = true;
        pthread_mutex_unlock(&q->mu);
        q->text = t;
        q->text_len = off;
        q->data_off = off;
        b->dispatched = true;
        start_query(q);
        return 1;
    }
    if (ins == -EINVAL) {
        free(t);
        b->dispatched = true;
        fail_before_start(q, ENG_E_SYNTAX_ERROR, err);
        return -EINVAL;
    }
    if (len > q->set.max_query_size) {
        free(t);
        b->dispatched = true;
        char m[200];
        snprintf(m, sizeof(m),
                 "Max query size exceeded: the query's text is longer than max_query_size "
                 "(%llu bytes); send data with INSERT ... FORMAT or raise max_query_size",
                 (unsigned long long)q->set.max_query_size);
        fail_before_start(q, ENG_E_QUERY_IS_TOO_LARGE, m);
        return -E2BIG;
    }
    if (!end) {
        free(t);
        return 0;
    }
    q->text = t;
    q->text_len = len;
    b->dispatched = true;
    start_query(q);
    return 1;
}

static void body_data(httpd_req *req, const void *data, size_t len, void *arg)
{
    body_state *b = arg;
    srv_query *q = b->q;
    if (b->dispatched && !q->insert_stream)
        return;
    struct evbuffer *dst;
    struct evbuffer *tmp = NULL;
    if (q->dec) {
        tmp = evbuffer_new();
        int rc = tmp ? srv_zstream_feed(q->dec, data, len, tmp, false, false) : -ENOMEM;
        if (rc < 0) {
            buf_free(tmp);
            if (!b->dispatched) {
                b->dispatched = true;
                httpd_req_pause_body(req);
                fail_before_start(
                    q, rc == -EFBIG ? ENG_E_QUERY_IS_TOO_LARGE : ENG_E_CANNOT_READ_ALL_DATA,
                    rc == -EFBIG ? "the decompressed body is larger than "
                                   "max-body-size"
                                 : "the request body is not valid for its "
                                   "Content-Encoding");
            } else {
                pthread_mutex_lock(&q->mu);
                q->in_eof = true;
                q->in_err = rc == -EFBIG ? -EFBIG : -EBADMSG;
                pthread_cond_broadcast(&q->cv);
                pthread_mutex_unlock(&q->mu);
            }
            return;
        }
    }
    b->body_bytes += len;
    if (b->body_bytes > (uint64_t)q->s->conf.max_body_size) {
        char m[160];
        snprintf(m, sizeof(m), "the request body is larger than max-body-size (%lld bytes)",
                 (long long)q->s->conf.max_body_size);
        if (!b->dispatched) {
            b->dispatched = true;
            httpd_req_pause_body(req);
            fail_before_start(q, ENG_E_QUERY_IS_TOO_LARGE, m);
        } else {
            pthread_mutex_lock(&q->mu);
            q->in_eof = true;
            q->in_err = -EFBIG;
            pthread_cond_broadcast(&q->cv);
            pthread_mutex_unlock(&q->mu);
        }
        buf_free(tmp);
        return;
    }
    if (!b->dispatched) {
        dst = b->pending;
        if (tmp)
            evbuffer_add_buffer(dst, tmp);
        else
            evbuffer_add(dst, data, len);
        buf_free(tmp);
        maybe_dispatch(b, false);
        return;
    }
    pthread_mutex_lock(&q->mu);
    if (tmp)
        evbuffer_add_buffer(q->in, tmp);
    else
        evbuffer_add(q->in, data, len);
    if (evbuffer_get_length(q->in) > (4u << 20) && !q->in_paused) {
        q->in_paused = true;
        httpd_req_pause_body(req);
    }
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    buf_free(tmp);
}

static void body_end(httpd_req *req, int status, void *arg)
{
    (void)req;
    body_state *b = arg;
    srv_query *q = b->q;
    if (status == 0 && q->dec) {
        struct evbuffer *tmp = evbuffer_new();
        int rc = tmp ? srv_zstream_feed(q->dec, NULL, 0, tmp, false, true) : -ENOMEM;
        if (rc == 0) {
            if (!b->dispatched)
                evbuffer_add_buffer(b->pending, tmp);
            else if (q->insert_stream) {
                pthread_mutex_lock(&q->mu);
                evbuffer_add_buffer(q->in, tmp);
                pthread_mutex_unlock(&q->mu);
            }
        } else {
            status = -EBADMSG;
        }
        if (tmp)
            buf_free(tmp);
    }
    if (!b->dispatched) {
        if (status == 0)
            maybe_dispatch(b, true);
        else if (q->req)
            fail_before_start(q, ENG_E_CANNOT_READ_ALL_DATA,
                              status == -ETIMEDOUT ? "the request body stopped arriving"
                                                   : "the request body is cut or malformed");
        b->dispatched = true;
    } else if (q->insert_stream) {
        pthread_mutex_lock(&q->mu);
        if (!q->in_eof) {
            q->in_eof = true;
            q->in_err = status;
        }
        pthread_cond_broadcast(&q->cv);
        pthread_mutex_unlock(&q->mu);
    }
    if (b->pending)
        evbuffer_free(b->pending);
    b->pending = NULL;
    /* the body state lives until the request is over (see req_done_body) */
}

/* ---- starting a query --------------------------------------------------------------------------- */

/* Registers and runs q; on failure answers it. */
static void start_query(srv_query *q)
{
    srv *s = q->s;
    char err[ENG_MSG_MAX];
    int code = srv_register(s, q, err, sizeof(err));
    if (code) {
        fail_before_start(q, code, err);
        return;
    }
    q->cache = srv_cache_get(s);
    double now = srv_now();
    if (q->set.max_execution_time > 0)
        atomic_store(&q->deadline_us, (int64_t)((q->t0 + q->set.max_execution_time) * 1e6));
    q->next_progress = now + (double)q->set.http_headers_progress_interval_ms / 1000.0;
    q->wake = event_new(s->base, -1, 0, wake_cb, q);
    if (!q->wake) {
        srv_unregister(s, q);
        fail_before_start(q, ENG_E_MEMORY_LIMIT_EXCEEDED, "out of memory starting the query");
        return;
    }
    srv_query_ref(q); /* the thread's: it drops it in srv_query_finish */
    if (srv_submit(s, q) < 0) {
        srv_query_unref(q);
        srv_unregister(s, q);
        fail_before_start(q, ENG_E_STD_EXCEPTION, "cannot start a query thread");
        return;
    }
    q->launched = true;
}

/* The request's end for a query that uses a body state. */
typedef struct req_ctx {
    srv_query *q;
    body_state body;
    bool has_body;
} req_ctx;

static void req_ctx_done(httpd_req *req, int status, void *arg)
{
    req_ctx *c = arg;
    srv_query *q = c->q;
    if (c->body.pending)
        evbuffer_free(c->body.pending);
    bool running = q->launched;
    free(c);
    if (running)
        req_done(req, status, q);
    else
        srv_query_unref(q); /* it never started: only the loop held it */
}

static srv_query *query_new(srv *s, httpd_req *req)
{
    srv_query *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    q->s = s;
    q->req = req;
    q->refs = 1;
    q->t0 = srv_now();
    q->start_us = srv_wall_us();
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    q->out = evbuffer_new();
    if (!q->out) {
        pthread_mutex_destroy(&q->mu);
        pthread_cond_destroy(&q->cv);
        free(q);
        return NULL;
    }
    socklen_t sl;
    const struct sockaddr *sa = httpd_req_peer(req, &sl);
    if (sa && sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, q->address,
                  sizeof(q->address));
        q->port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
    } else if (sa && sa->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, q->address,
                  sizeof(q->address));
        q->port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
    }
    snprintf(q->kind, sizeof(q->kind), "Select");
    return q;
}

/* Steps 1-4 of the file's comment. */
static void query_request(srv *s, httpd_req *req, srv_params *p)
{
    srv_query *q = query_new(s, req);
    req_ctx *c = q ? calloc(1, sizeof(*c)) : NULL;
    if (!c) {
        if (q)
            srv_query_unref(q);
        refuse(s, req, NULL, ENG_E_MEMORY_LIMIT_EXCEEDED, "out of memory");
        return;
    }
    c->q = q;
    httpd_req_on_done(req, req_ctx_done, c);
    const char *method = httpd_req_method(req);
    q->http_method = strcmp(method, "POST") == 0 ? 2 : 1;
    /* the query parameters, for the thread */
    for (int i = 0; i < p->n; i++) {
        if (strncmp(p->kv[i].name, "param_", 6) != 0)
            continue;
        srv_params *qp = &q->params;
        if (qp->n == qp->cap) {
            int cap = qp->cap ? qp->cap * 2 : 8;
            srv_kv *kv = realloc(qp->kv, sizeof(srv_kv) * (size_t)cap);
            if (!kv)
                break;
            qp->kv = kv;
            qp->cap = cap;
        }
        char *nm = strdup(p->kv[i].name), *vl = strdup(p->kv[i].value);
        if (!nm || !vl) {
            free(nm);
            free(vl);
            break;
        }
        qp->kv[qp->n++] = (srv_kv){nm, vl};
    }
    /* the query id */
    const char *qid = srv_params_last(p, "query_id");
    if (!qid || !qid[0])
        qid = httpd_req_header(req, "X-ClickHouse-Query-Id");
    if (qid && qid[0])
        snprintf(q->id, sizeof(q->id), "%s", qid);
    else
        new_uuid(q->id);
    char err[ENG_MSG_MAX];
    /* who */
    char user[520], pass[520];
    bool given;
    int code =
        credentials(req, p, user, sizeof(user), pass, sizeof(pass), &given, err, sizeof(err));
    const srv_user *u = NULL;
    socklen_t sl;
    const struct sockaddr *peer = httpd_req_peer(req, &sl);
    if (!code)
        code = srv_users_auth(s->users, user, pass, given, peer, &u, err, sizeof(err));
    explicit_bzero(pass, sizeof(pass));
    if (code) {
        refuse(s, req, q->id, code, err);
        return;
    }
    snprintf(q->user, sizeof(q->user), "%s", u->name);
    /* settings: defaults, the profile, the session, GET's readonly, the URL */
    srv_qset_init(&q->set, &s->conf);
    srv_user_profile(u, &q->set);
    const char *sid = srv_params_last(p, "session_id");
    if (sid && sid[0]) {
        const char *chk = srv_params_last(p, "session_check");
        code = srv_session_acquire(s, sid, q->user, srv_params_last(p, "session_timeout"),
                                   chk && strcmp(chk, "1") == 0, &q->session, err, sizeof(err));
        if (code) {
            refuse(s, req, q->id, code, err);
            return;
        }
        const char *cl = srv_params_last(p, "close_session");
        q->close_session = cl && strcmp(cl, "1") == 0;
        pthread_mutex_lock(&s->mu);
        if (q->session->has_set)
            q->set = q->session->set;
        if (q->session->database[0])
            snprintf(q->database, sizeof(q->database), "%s", q->session->database);
        pthread_mutex_unlock(&s->mu);
    }
    if (q->http_method == 1 && q->set.readonly == 0)
        q->set.readonly = 2;
    for (int i = 0; i < p->n; i++) {
        if (srv_param_is_reserved(p->kv[i].name))
            continue;
        code = srv_qset_apply(&q->set, p->kv[i].name, p->kv[i].value, err, sizeof(err));
        if (code) {
            refuse(s, req, q->id, code, err);
            return;
        }
    }
    const char *bs = srv_params_last(p, "buffer_size");
    if (bs &&
        (code = srv_qset_apply(&q->set, "http_response_buffer_size", bs, err, sizeof(err))) != 0) {
        refuse(s, req, q->id, code, err);
        return;
    }
    const char *we = srv_params_last(p, "wait_end_of_query");
    if (we && strcmp(we, "1") == 0)
        q->set.http_wait_end_of_query = true;
    const char *cmp = srv_params_last(p, "compress");
    const char *dcmp = srv_params_last(p, "decompress");
    if ((cmp && strcmp(cmp, "1") == 0) || (dcmp && strcmp(dcmp, "1") == 0)) {
        refuse(s, req, q->id, ENG_E_NOT_IMPLEMENTED,
                     "ClickHouse's native block compression (compress=1, decompress=1) is not "
                     "supported: use enable_http_compression=1 with Accept-Encoding, and "
                     "Content-Encoding for request bodies");
        return;
    }
    /* the database */
    const char *db = httpd_req_header(req, "X-ClickHouse-Database");
    if (!db || !db[0])
        db = srv_params_last(p, "database");
    if (db && db[0])
        snprintf(q->database, sizeof(q->database), "%s", db);
    if (!q->database[0])
        snprintf(q->database, sizeof(q->database), "%s", u->database[0] ? u->database : "default");
    if (!srv_database_exists(s, q->database)) {
        snprintf(err, sizeof(err), "Database %s does not exist", q->database);
        refuse(s, req, q->id, ENG_E_UNKNOWN_DATABASE, err);
        return;
    }
    /* the default format */
    const char *fmt = httpd_req_header(req, "X-ClickHouse-Format");
    if (!fmt || !fmt[0])
        fmt = srv_params_last(p, "default_format");
    q->format = ENG_FMT_TSV;
    if (fmt && fmt[0]) {
        int f = eng_format_parse(fmt);
        if (f < 0) {
            snprintf(err, sizeof(err), "Unknown format %.64s (use %s)", fmt, eng_format_list());
            refuse(s, req, q->id, ENG_E_UNKNOWN_FORMAT, err);
            return;
        }
        q->format = (eng_format)f;
        q->format_given = true;
    }
    /* a cluster's work unit: taken only with the cluster's secret */
    const char *du = httpd_req_header(req, "X-RingCache-Unit");
    if (du) {
        const char *sec = httpd_req_header(req, "X-RingCache-Cluster-Secret");
        const char *mine = s->conf.cluster_secret;
        size_t ls = sec ? strlen(sec) : 0, lm = strlen(mine);
        unsigned diff = (unsigned)(ls ^ lm);
        for (size_t i = 0; i < ls && i < lm; i++)
            diff |= (unsigned)(sec[i] ^ mine[i]);
        q->dist_auth = lm > 0 && diff == 0;
        const char *iq = httpd_req_header(req, "X-RingCache-Initial-Query-Id");
        if (q->dist_auth && iq)
            snprintf(q->initial_id, sizeof(q->initial_id), "%s", iq);
        if (!(q->dist_unit = strdup(du))) {
            refuse(s, req, q->id, ENG_E_STD_EXCEPTION, "out of memory");
            return;
        }
    }
    /* compression of the answer */
    if (q->set.enable_http_compression)
        q->resp_codec = srv_codec_accept(httpd_req_header(req, "Accept-Encoding"));
    /* the text */
    const char *query = srv_params_last(p, "query");
    bool post = q->http_method == 2;
    int64_t cl = httpd_req_content_length(req);
    bool has_body = post && cl != 0;
    if (!has_body) {
        if (!query || !query[0]) {
            refuse(s, req, q->id, ENG_E_SYNTAX_ERROR, "Empty query");
            return;
        }
        c->body.q = q;
        c->body.query_param = query;
        maybe_dispatch(&c->body, true);
        return;
    }
    int codec = srv_codec_of(httpd_req_header(req, "Content-Encoding"));
    if (codec < 0) {
        snprintf(err, sizeof(err),
                 "Unknown Content-Encoding '%.32s' of the request body (use "
                 "gzip, deflate or zstd)",
                 httpd_req_header(req, "Content-Encoding"));
        refuse(s, req, q->id, ENG_E_UNKNOWN_COMPRESSION_METHOD, err);
        return;
    }
    if (codec != SRV_CODEC_NONE) {
        if (srv_zstream_create(&q->dec, (srv_codec)codec, false, 0) < 0) {
            refuse(s, req, q->id, ENG_E_MEMORY_LIMIT_EXCEEDED, "out of memory");
            return;
        }
        srv_zstream_set_max_out(q->dec, (uint64_t)s->conf.max_body_size);
    }
    if (cl > s->conf.max_body_size) {
        snprintf(err, sizeof(err), "the request body is larger than max-body-size (%lld bytes)",
                 (long long)s->conf.max_body_size);
        refuse(s, req, q->id, ENG_E_QUERY_IS_TOO_LARGE, err);
        return;
    }
    c->body.q = q;
    c->body.pending = evbuffer_new();
    /* the query parameter must outlive the URL's parameters */
    c->body.query_param = NULL;
    if (query && query[0]) {
        q->qparam = strdup(query);
        c->body.query_param = q->qparam;
    }
    if (!c->body.pending || (query && query[0] && !q->qparam)) {
        refuse(s, req, q->id, ENG_E_MEMORY_LIMIT_EXCEEDED, "out of memory");
        return;
    }
    c->has_body = true;
    httpd_req_read_body(req, body_data, body_end, &c->body);
}

/* ---- routes -------------------------------------------------------------------------------- */

void srv_http_handler(httpd_req *req, void *arg)
{
    srv *s = arg;
    srv_count(s, SRV_M_REQUESTS, 1);
    const char *path = httpd_req_path(req);
    const char *method = httpd_req_method(req);
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (strcmp(method, "OPTIONS") == 0) {
        httpd_resp_set_status(req, 204);
        httpd_resp_add_header(req, "Access-Control-Allow-Origin", "*");
        httpd_resp_add_header(req, "Access-Control-Allow-Methods", "POST, GET, OPTIONS");
        httpd_resp_add_header(req, "Access-Control-Allow-Headers",
                              "origin, x-requested-with, x-clickhouse-format, x-clickhouse-user, "
                              "x-clickhouse-key, Authorization, Content-Type");
        httpd_resp_add_header(req, "Access-Control-Max-Age", "86400");
        httpd_resp_end(req);
        return;
    }
    if (get && (strcmp(path, "/ping") == 0 || strcmp(path, "/replicas_status") == 0)) {
        answer_ok(s, req);
        return;
    }
    if (get && strcmp(path, "/metrics") == 0) {
        answer_metrics(s, req);
        return;
    }
    if (strcmp(path, "/") != 0) {
        char m[600];
        int n = snprintf(m, sizeof(m),
                         "There is no handle %.200s\n\nUse / or /ping for health checks.\nOr "
                         "/replicas_status for more sophisticated health checks.\n\nSend "
                         "queries from your program with POST method or GET /?query=...\n",
                         path);
        httpd_resp_send(req, 404, "text/plain; charset=UTF-8", m, (size_t)n);
        return;
    }
    if (!get && strcmp(method, "POST") != 0) {
        httpd_resp_add_header(req, "Allow", "GET, HEAD, POST, OPTIONS");
        httpd_resp_send(req, 405, "text/plain; charset=UTF-8",
                        "Use GET or POST for queries, GET for /ping\n", 43);
        return;
    }
    srv_params p;
    char err[ENG_MSG_MAX];
    const char *qs = httpd_req_query(req);
    if (srv_params_parse(&p, qs, strlen(qs), err, sizeof(err)) < 0) {
        srv_params_free(&p);
        refuse(s, req, NULL, ENG_E_BAD_ARGUMENTS, err);
        return;
    }
    const char *query = srv_params_last(&p, "query");
    if (get && (!query || !query[0])) {
        srv_params_free(&p);
        answer_ok(s, req);
        return;
    }
    query_request(s, req, &p);
    srv_params_free(&p);
}
