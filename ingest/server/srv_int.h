/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_int.h: the compute server's internals, shared by its files:
 *
 *   srv_server.c    the server object: the cache client (swapped whole by
 *                   SYSTEM DROP PAGE CACHE), the registry of running queries,
 *                   the query threads, sessions, the query log, the ticker
 *   srv_http.c      the event loop's side of a request: routes, parameters,
 *                   authentication, settings, the body, the answer (head,
 *                   progress, chunks, compression, errors)
 *   srv_query.c     a query thread's side: statements, eng_run, KILL, USE, SET
 *   srv_insert.c    INSERT ... FORMAT: the body's rows to a table's sink
 *   srv_s3.c        a query's S3 access: the cache client, or S3 directly
 *                   with the credentials given to s3()
 *   srv_system.c    system.query_log, processes, settings, metrics, events,
 *                   databases
 *   srv_settings.c  the settings a request may set, their defaults and checks
 *   srv_params.c    URL parameters, {name:Type} query parameters (pure)
 *   srv_users.c     the users file and authentication
 *   srv_compress.c  gzip / deflate / zstd of answers and request bodies
 *   srv_pool.c      the bounded background pool (merges)
 *   srv_conf.c      the options table; srv_log.c logs; srv_main.c main
 *
 * Threads: the event loop (main thread) owns every httpd_req and the
 * sessions' timers; query threads run one query each; the background pool
 * runs merges. A query (srv_query) is shared by its loop side and its thread:
 * the fields under "bridge" are guarded by its mutex, the rest is written
 * before the thread starts or read-only. Server-wide state (registry,
 * sessions, query log, cache client) is under srv.mu unless said otherwise.
 */
#ifndef RINGCACHE_SRV_INT_H
#define RINGCACHE_SRV_INT_H

#include "dist_cluster.h"
#include "eng.h"
#include "httpd.h"
#include "metrics.h"
#include "ringcache.h"
#include "srv.h"
#include "srv_params.h"
#include "warehouse.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

struct event;
struct event_base;
struct evbuffer;

/* ---- logs (srv_log.c) -------------------------------------------------------------- */

enum { SRV_LOG_ERROR, SRV_LOG_WARN, SRV_LOG_INFO, SRV_LOG_DEBUG };
/* One logfmt line on stderr: ts=... level=... then fmt's key=value pairs. */
void srv_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* error, warn, info, debug: 0 or -EINVAL. */
int srv_log_set_level(const char *name);
bool srv_log_enabled(int level);
/* s as a logfmt value: "..." with \" \\ \n escaped, cut to cap. */
void srv_log_quote(char *buf, size_t cap, const char *s, size_t len);

/* ---- errors (srv_http.c) --------------------------------------------------------- */

/* The version the answers name ("(version 25.8.1.1)"). */
#define SRV_VERSION_TEXT ENG_CLICKHOUSE_VERSION
/* HTTP status of a ClickHouse error code, as ClickHouse maps them. */
int srv_http_status(int code);
/* "Code: N. DB::Exception: msg. (NAME) (version V)\n"; returns its length. */
size_t srv_exception_text(char *buf, size_t cap, int code, const char *msg);

/* ---- settings (srv_settings.c) ----------------------------------------------------- */

#define SRV_SET_MAX   40 /* entries of the settings table */
#define SRV_SET_EXTRA 16 /* engine settings the table does not list */

/* A query's settings: the server's own, and the engine's (eng). */
typedef struct srv_qset {
    eng_settings eng;
    uint64_t readonly;
    double max_execution_time; /* seconds, 0: none */
    bool send_progress_in_http_headers;
    uint64_t http_headers_progress_interval_ms;
    bool http_wait_end_of_query;
    uint64_t http_response_buffer_size;
    bool enable_http_compression;
    uint64_t http_zlib_compression_level;
    bool add_http_cors_header;
    uint64_t max_query_size;
    bool log_queries;
    char log_comment[256];
    bool cancel_http_readonly_queries_on_client_close;
    uint64_t max_result_rows; /* 0: none */
    bool output_format_write_statistics;
    bool changed[SRV_SET_MAX]; /* by table index */
    /* settings the engine knows and the table does not (eng_settings_apply) */
    struct {
        char name[64];
        char value[128];
    } extra[SRV_SET_EXTRA];
    int n_extra;
} srv_qset;

/* The defaults, from the server's options. */
void srv_qset_init(srv_qset *q, const srv_conf *conf);
/* The engine's settings of q (its extras applied by the engine). 0 or a code
 * with a sentence. */
int srv_qset_engine(const srv_qset *q, eng_settings *out, char *err, size_t errlen);
/* Sets name = value (text as in a URL). 0, or a ClickHouse code with a
 * sentence: UNKNOWN_SETTING (with a suggestion), INVALID_SETTING_VALUE,
 * READONLY (readonly 1 forbids every change; 2 forbids changing readonly). */
int srv_qset_apply(srv_qset *q, const char *name, const char *value, char *err, size_t errlen);
/* Whether the server's table has the name (not the engine's extras). */
bool srv_qset_owns(const char *name);
/* Each setting (system.settings): name, current value, changed, type,
 * default, description. */
typedef void (*srv_set_row_fn)(void *arg, const char *name, const char *value, bool changed,
                               const char *type, const char *def, const char *desc);
void srv_qset_each(const srv_qset *q, srv_set_row_fn fn, void *arg);
/* A setting's current value as text; -ENOENT. */
int srv_qset_get(const srv_qset *q, const char *name, char *buf, size_t cap);

/* ---- users (srv_users.c) -------------------------------------------------------- */

typedef struct srv_net {
    int family; /* AF_INET / AF_INET6 */
    uint8_t addr[16];
    int prefix;
} srv_net;

typedef struct srv_user {
    char name[64];
    bool has_password;
    uint8_t sha256[32];
    srv_net *nets; /* where it may connect from */
    int n_nets;
    int readonly;              /* -1: not set */
    int64_t max_memory_usage;  /* -1: not set */
    double max_execution_time; /* < 0: not set */
    char database[128];        /* its default database ("" : default) */
} srv_user;

typedef struct srv_users srv_users;

/* The users file (path NULL or "": only `default`, password-less, from
 * loopback). 0 or -errno with a sentence naming path:line. */
int srv_users_load(srv_users **out, const char *path, char *err, size_t errlen);
int srv_users_parse(srv_users **out, const char *text, size_t len, const char *source, char *err,
                    size_t errlen);
void srv_users_destroy(srv_users **u);
/* Who the credentials name: 0 with *out, or a ClickHouse code
 * (AUTHENTICATION_FAILED, REQUIRED_PASSWORD) with a sentence. */
int srv_users_auth(const srv_users *u, const char *name, const char *password,
                   bool credentials_given, const struct sockaddr *peer, const srv_user **out,
                   char *err, size_t errlen);
/* Settings of the user's profile onto q. */
void srv_user_profile(const srv_user *u, srv_qset *q);
/* Whether an address is inside a network. */
bool srv_net_contains(const srv_net *n, const struct sockaddr *sa);
int srv_net_parse(const char *text, srv_net *out);

/* ---- compression (srv_compress.c) --------------------------------------------------- */

typedef enum srv_codec {
    SRV_CODEC_NONE = 0,
    SRV_CODEC_GZIP,
    SRV_CODEC_DEFLATE,
    SRV_CODEC_ZSTD
} srv_codec;
/* The codec an Accept-Encoding allows, best first (gzip, deflate, zstd), or
 * NONE. */
srv_codec srv_codec_accept(const char *accept_encoding);
/* A Content-Encoding's codec: NONE for identity or absent, -1 unknown. */
int srv_codec_of(const char *content_encoding);
const char *srv_codec_name(srv_codec c);

typedef struct srv_zstream srv_zstream;
/* A compressor (compress) or decompressor. level: gzip 1..9, zstd 1..19. */
int srv_zstream_create(srv_zstream **out, srv_codec c, bool compress, int level);
/* Feeds n bytes; output appended to out. finish: the end of the input (a
 * compressor writes its trailer; a decompressor checks the stream is whole).
 * flush (compressors): makes what was fed decodable now. 0, -EBADMSG (bad
 * input), -EFBIG (a decompressor's output over max_out in total), -ENOMEM. */
int srv_zstream_feed(srv_zstream *z, const void *in, size_t n, struct evbuffer *out, bool flush,
                     bool finish);
void srv_zstream_set_max_out(srv_zstream *z, uint64_t max_out);
void srv_zstream_destroy(srv_zstream **z);

/* ---- the query log and the registry --------------------------------------------------- */

typedef enum srv_qtype {
    SRV_QT_START = 1,
    SRV_QT_FINISH,
    SRV_QT_EXC_BEFORE,
    SRV_QT_EXC_WHILE,
} srv_qtype;

/* One row of system.query_log (copied strings). */
typedef struct srv_qlog {
    srv_qtype type;
    int64_t event_time_us; /* wall clock */
    int64_t start_time_us;
    uint64_t duration_ms;
    uint64_t read_rows, read_bytes, written_rows, written_bytes, result_rows, result_bytes;
    int64_t memory_usage;
    int exception_code;
    char *query, *query_id, *user, *database, *exception, *settings, *address, *kind, *log_comment;
    char *initial_query_id; /* the initiator's for a cluster's work unit, else query_id */
    bool initial;           /* not a cluster's work unit */
    char *cluster_shares;   /* a distributed query's "member=rows/bytes,...", else "" */
    int http_method;
    uint64_t seq; /* 1, 2, ... in the order rows were added */
    bool flushed; /* in the warehouse's system.query_log */
} srv_qlog;

typedef enum srv_cancel_why {
    SRV_CANCEL_NONE = 0,
    SRV_CANCEL_CLIENT,
    SRV_CANCEL_KILL,
    SRV_CANCEL_TIMEOUT,
    SRV_CANCEL_SHUTDOWN,
} srv_cancel_why;

typedef struct srv_session srv_session;
typedef struct srv_cache srv_cache;

/* A query's S3 access (srv_s3.c): the eng_ctx list_s3 / open_s3 / s3_as
 * over it. Both borrowed for the query's life. */
typedef struct srv_s3io {
    rc_client *rc;        /* the cache client (the query's reference) */
    const s3_config *cfg; /* the server's S3 settings (srv.s3) */
} srv_s3io;
int srv_s3_list(void *impl, const char *bucket, const char *glob, eng_key_fn fn, void *arg,
                char *err, size_t errlen);
int srv_s3_open(void *impl, const char *bucket, const char *key, rs_source **out, char *err,
                size_t errlen);
/* s3(url, key, secret [, token]) and s3(url, NOSIGN): S3 directly with those
 * credentials and the server's endpoint and settings (eng_s3_as_fn). */
int srv_s3_as(void *impl, const eng_s3_creds *creds, eng_s3_access *out, char *err, size_t errlen);
typedef struct srv_query srv_query;
typedef struct srv_pool srv_pool;

/* A request that runs a query. */
struct srv_query {
    srv *s;
    srv_query *prev, *next; /* the registry (srv.mu) */
    /* identity, set by the loop before the thread starts */
    char id[128];
    char user[64];
    char database[128];
    char address[64]; /* the client's IP */
    uint16_t port;
    int http_method; /* 1 GET, 2 POST */
    char *text;      /* the query text (query param + body part) */
    size_t text_len;
    size_t data_off;    /* INSERT: where the data starts in text */
    bool insert_stream; /* INSERT: more data follows from the body */
    srv_qset set;
    eng_format format; /* default format */
    bool format_given; /* default_format / X-ClickHouse-Format */
    srv_session *session;
    bool close_session;
    srv_codec resp_codec; /* answers compressed so */
    double t0;            /* monotonic start */
    int64_t start_us;     /* wall clock start */
    srv_cache *cache;     /* borrowed reference */
    srv_s3io s3io;        /* the engine's S3 access over cache */
    tb_wh wh;             /* the server's, parts through this cache client */
    /* what the engine updates, read by system.processes and progress */
    eng_live live;
    _Atomic int cancel;
    _Atomic int cancel_why;
    _Atomic uint64_t written_rows, written_bytes;
    char kind[16];     /* Select, Insert, ... (the query thread, under
                                          srv.mu: system.processes reads it) */
    bool logged_start; /* QueryStart is in the log (the thread, then done) */
    /* bridge: under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct evbuffer *out; /* answer bytes not yet handed to httpd */
    uint64_t out_total;   /* answer bytes produced (result_bytes) */
    bool commit;          /* the head may go (enough bytes, or done) */
    bool done;            /* the thread is finished */
    bool gone;            /* the client is gone or the request is over */
    bool has_output;      /* the statement had a result (X-ClickHouse-Format) */
    eng_format out_format;
    int err_code; /* the failure, once done */
    char *err_msg;
    _Atomic uint64_t result_rows; /* written by the query thread, read by progress */
    struct evbuffer *in; /* INSERT body bytes not yet read */
    bool in_eof;
    int in_err;
    bool in_paused;
    srv_zstream *enc; /* the answer's compressor (the thread) */
    /* the loop's side */
    char *qparam;                /* query= (owned), until the text is whole */
    char *dist_unit;             /* X-RingCache-Unit of a cluster's work unit (owned) */
    char *dist_shares;           /* an initiator's: what each member read (owned, query_log) */
    char initial_id[128];        /* a work unit's: its initiator's query id; else "" */
    bool dist_auth;              /* it came with the cluster secret */
    srv_params params;           /* the param_* of the URL (owned) */
    bool launched;               /* a thread has it (srv_submit succeeded) */
    bool finalized;              /* logged and unregistered */
    bool resp_ended;             /* httpd_resp_end (or the error answer) done */
    bool close_after;            /* Connection: close */
    _Atomic int64_t deadline_us; /* monotonic; 0: none (the thread may move it) */
    httpd_req *req;
    struct event *wake; /* event_active from the thread */
    srv_zstream *dec;   /* the request body's decompressor */
    bool started;       /* the head is sent */
    bool head_open;     /* flushed with progress headers, not ended */
    double next_progress;
    bool slot; /* counted in max_concurrent_queries */
    int refs;  /* loop + thread (under mu) */
};

/* ---- the server (srv_server.c) -------------------------------------------------------- */

struct srv_cache {
    rc_client *rc;
    tb_cat *cat; /* tables' states and open parts (the parts are rc's) */
    int refs;    /* queries using it + 1 while current */
};

struct srv_session {
    srv_session *next;
    char id[128];
    char user[64];
    char database[128];
    srv_qset set; /* settings SET in the session */
    bool has_set;
    double expires; /* monotonic */
    double timeout_s;
    bool busy; /* a query uses it */
};

typedef struct srv_job {
    struct srv_job *next;
    srv_query *q;
} srv_job;

/* Bytes of idle prefetch buffers the server keeps for the next queries. */
#define SRV_SHELF_BYTES (256u << 20)

struct srv {
    srv_conf conf;
    char display_name[256];
    struct event_base *base;
    httpd_server *http;
    void *tls; /* SSL_CTX */
    struct event *sigs[3];
    struct event *ticker;
    srv_users *users;
    tb_wh wh; /* --warehouse (wh_set): the tables */
    bool wh_set;
    /* background merges: the tables being merged now (one thread per table) */
    char (*merging)[2 * TB_WH_NAME_MAX];
    int n_merging;
    uint64_t merge_cursor;
    s3_config s3;
    eng_mem mem;       /* every query's and merge's bytes (max_server_memory_usage) */
    eng_mem merge_mem; /* the background merges' (merge_memory), under mem */
    double t_start;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    srv_cache *cache;
    struct ef_shelf *shelf; /* prefetch buffers kept between queries (thread-safe) */
    /* --cluster (srv_cluster.c): the set queries see, swapped whole under mu
     * when a dns: name resolves to other members; this server's addresses */
    struct srv_clset *clset;
    struct srv_cldns *cldns;
    int n_cldns;
    char **selves;
    int n_selves;
    srv_query *running;
    int n_running; /* counted in max_concurrent_queries */
    srv_session *sessions;
    srv_qlog *qlog; /* ring of query_log_size rows */
    size_t qlog_cap, qlog_head, qlog_n;
    uint64_t qlog_seq;  /* the last row's seq */
    uint64_t qlog_lost; /* rows that went from the ring before they were flushed */
    /* flushing the query log into the warehouse (srv_system.c): one flush at
     * a time (flush_mu); its INSERT (committing) and a SELECT's reading of the
     * table's snapshot and the unflushed rows (opening) exclude each other,
     * under mu with qlog_cv, so a SELECT sees each row once */
    pthread_mutex_t qlog_flush_mu;
    pthread_cond_t qlog_cv;
    bool qlog_committing;
    int qlog_opening;
    bool qlog_table_ready; /* CREATE TABLE IF NOT EXISTS done (flush_mu) */
    pthread_t qlog_thread;
    bool qlog_thread_on, qlog_stop;
    /* query threads */
    pthread_t *threads;
    int n_threads, idle_threads;
    srv_job *jobs, *jobs_tail;
    int n_jobs; /* queued, not yet taken by a thread */
    bool stop_threads;
    bool stopping;
    bool drained;
    srv_pool *bg;
    /* metrics */
    met_registry *met;
    int m_base;      /* index of the first metric */
    int m_code_base; /* failures by code */
};

/* ---- clusters (srv_cluster.c) ------------------------------------------------------------ */

typedef struct srv_clset srv_clset;
/* Builds the set of --cluster once the HTTP port is bound and starts resolving
 * its dns: clusters on s->base (loop thread). 0 or -errno with err. */
int srv_clusters_start(srv *s, int port, char *err, size_t errlen);
/* Stops the resolution and drops the set (loop thread, after the queries). */
void srv_clusters_stop(srv *s);
/* The current set with a reference (NULL: no --cluster); any thread. */
srv_clset *srv_clusters_get(srv *s);
void srv_clusters_put(srv_clset *c);
const dist_clusters *srv_clset_clusters(const srv_clset *c);

/* Metrics (indices from m_base); counters unless said. */
enum {
    SRV_M_QUERIES,
    SRV_M_FAILED,
    SRV_M_SELECTS,
    SRV_M_INSERTS,
    SRV_M_RUNNING /* gauge */,
    SRV_M_REQUESTS,
    SRV_M_READ_ROWS,
    SRV_M_READ_BYTES,
    SRV_M_RESULT_BYTES,
    SRV_M_WRITTEN_ROWS,
    SRV_M_MEMORY /* gauge */,
    SRV_M_CACHE_HITS /* from rc_stats */,
    SRV_M_CACHE_MISSES,
    SRV_M_NODE_BYTES,
    SRV_M_S3_BYTES,
    SRV_M_PAGE_HIT_RATIO /* gauge, per mille */,
    SRV_M_REJECTED,
    SRV_M_CANCELLED,
    SRV_M_CACHE_DROPS,
    SRV_M_MERGES,
    SRV_M_MERGE_ERRORS,
    SRV_M_MERGES_SKIPPED,
    SRV_M_QLOG_FLUSHED /* rows written to the warehouse's system.query_log */,
    SRV_M_QLOG_FLUSH_FAILURES,
    SRV_M_QLOG_LOST /* rows gone from the ring before they were flushed */,
    SRV_M_QUERY_US /* histogram */,
    SRV_M_N
};
void srv_count(srv *s, int m, uint64_t v);
/* One failure by its ClickHouse code in ringcache_server_query_failures_total
 * (a query's come through its query_log row; a refused request's here). */
void srv_count_failure(srv *s, int code);

/* The current cache client, with a reference (release with srv_cache_put). */
srv_cache *srv_cache_get(srv *s);
void srv_cache_put(srv *s, srv_cache *c);
/* SYSTEM DROP PAGE CACHE: a new client for new queries; the old one goes when
 * its last query ends. 0 or -errno with a sentence. */
int srv_cache_drop(srv *s, char *err, size_t errlen);
/* The sum of rc_stats over the clients. */
void srv_cache_stats(srv *s, rc_stats *out);

/* Registry: adds q (checks the id is free and the slot count). 0, or the
 * ClickHouse code (QUERY_WITH_SAME_ID_IS_ALREADY_RUNNING,
 * TOO_MANY_SIMULTANEOUS_QUERIES) with a sentence. */
int srv_register(srv *s, srv_query *q, char *err, size_t errlen);
void srv_unregister(srv *s, srv_query *q);
/* KILL QUERY: cancels the query of that id; 1 found, 0 not. */
int srv_kill(srv *s, const char *id);
/* Hands q to a query thread. 0 or -errno. */
int srv_submit(srv *s, srv_query *q);
/* Appends a row to the query log (the strings are copied). */
void srv_qlog_add(srv *s, const srv_query *q, srv_qtype type, const char *exception, int code);
/* Sessions: the session of that id (created when absent unless check), its
 * lock taken. 0, or a code: SESSION_NOT_FOUND, SESSION_IS_LOCKED,
 * INVALID_SESSION_TIMEOUT. */
int srv_session_acquire(srv *s, const char *id, const char *user, const char *timeout, bool check,
                        srv_session **out, char *err, size_t errlen);
void srv_session_release(srv *s, srv_session *ss, bool close);
/* The server's warehouse with its parts read and written through c's client
 * (the cache nodes; S3 directly without --cache) and c's catalog into *out. */
void srv_wh_for(srv *s, srv_cache *c, tb_wh *out);
/* Whether a database exists (default, system, the warehouse's). */
bool srv_database_exists(srv *s, const char *name);
/* fn(name) for each database of the warehouse besides default (sorted; a
 * database exists while it holds a table). */
void srv_databases(srv *s, void (*fn)(const char *name, void *arg), void *arg);

/* ---- a query's life (srv_http.c and srv_query.c) ----------------------------------- */

void srv_query_ref(srv_query *q);
void srv_query_unref(srv_query *q);
/* The thread's side: runs the statement (srv_query.c). */
void srv_query_run(srv_query *q);
/* The text parsed: the QueryStart row of the query log. */
void srv_query_started(srv_query *q);
/* The thread has bytes or has finished: wake the loop. Caller holds q->mu. */
void srv_query_wake_locked(srv_query *q);
/* The writer of the answer (the thread). */
void srv_query_writer(srv_query *q, eng_writer *w);

/* ---- distributed execution (srv_dist.c) ------------------------------------------- */

/* Runs q's text as a cluster's work unit (q->dist_unit): its partial state is
 * the answer's body. A ClickHouse error code (0: done) with err. */
int srv_dist_run_unit(srv_query *q, const eng_ctx *ctx, const char *sql, size_t len, char *err,
                      size_t errlen);
/* Runs a SELECT over s3Cluster(...) across its cluster; -ENOTSUP when sql is
 * not one (the caller runs it with eng_run), else a ClickHouse error code (0:
 * done) with err. res gets the counters. */
int srv_dist_run_query(srv_query *q, const eng_ctx *ctx, const char *sql, size_t len,
                       eng_result *res, char *err, size_t errlen);

/* The thread failed or finished: records it and wakes the loop. */
void srv_query_finish(srv_query *q, int code, const char *msg);
/* The INSERT body: reads up to n bytes (blocking); 0 at the end, -errno
 * (the client went away, a bad body). */
ssize_t srv_query_read_body(srv_query *q, void *buf, size_t n, char *err, size_t errlen);

/* The HTTP handler (srv_http.c). */
void srv_http_handler(httpd_req *req, void *arg);
/* Ticker work on the loop: progress headers, deadlines (srv_http.c). */
void srv_http_tick(srv *s, double now);

/* ---- system tables (srv_system.c) -------------------------------------------------- */

/* Whether system.query_log is flushed into the warehouse. */
bool srv_qlog_stored(const srv *s);
/* Writes the query log's unflushed rows into the warehouse's
 * system.query_log (creating it), then marks them flushed; one at a time.
 * 0 (also: nothing to write, or no flushing) or -errno with a sentence. Any
 * thread but the loop's. */
int srv_qlog_flush(srv *s, char *err, size_t errlen);
/* The thread flushing every query_log_flush_interval (srv_qlog_stored only). */
int srv_qlog_flusher_start(srv *s);
/* Stops it and flushes once more (the rows of a server that stops). */
void srv_qlog_flusher_stop(srv *s);

/* eng_ctx.open_table for a query: system.* of the server, then the tables
 * provider. arg is the srv_query. */
int srv_open_table(void *arg, const char *db, const char *name, const eng_scan_env *env,
                   eng_source **out, char *err, size_t errlen);

/* ---- INSERT (srv_insert.c) --------------------------------------------------------- */

/* INSERT INTO [db.]t [(cols)] FORMAT name: the head of text (after comments
 * and blanks). 1 when it is an INSERT (fields filled; *data_off: where the
 * data starts), 0 when it is not an INSERT, -EINVAL (an INSERT that does
 * not parse: sentence). */
typedef struct srv_insert_head {
    char db[128], table[128];
    char cols[64][128];
    int n_cols;
    char format[64];
    bool select; /* INSERT ... SELECT or VALUES: the data is in
                                          the statement (the engine parses it whole) */
} srv_insert_head;
int srv_insert_parse(const char *text, size_t len, srv_insert_head *h, size_t *data_off, char *err,
                     size_t errlen);
/* The same on a text that may still grow (whole false: the body is still
 * arriving): -EAGAIN when the head may go on past the text's end. */
int srv_insert_parse_whole(const char *text, size_t len, bool whole, srv_insert_head *h,
                           size_t *data_off, char *err, size_t errlen);
/* Runs an INSERT on the query thread (sql: the statement, its data in q->in
 * when it is INSERT ... FORMAT): 0 or a code with a sentence. */
int srv_insert_run(srv_query *q, const srv_insert_head *h, const char *sql, size_t len, char *err,
                   size_t errlen);
/* Runs sql through the engine with the query's context (input: the INSERT's
 * data from q->in): 0 or a ClickHouse code with a sentence (srv_query.c). */
int srv_run_engine(srv_query *q, const char *sql, size_t len, bool input, char *err, size_t errlen);
/* The same with the INSERT's data from read(read_arg, ...) (NULL: none). */
int srv_run_engine_input(srv_query *q, const char *sql, size_t len, eng_input_fn read,
                         void *read_arg, char *err, size_t errlen);

/* ---- background pool (srv_pool.c) --------------------------------------------------- */

/* A bounded pool of n threads running fn(arg) every interval_ms (merges),
 * stopped promptly by srv_pool_stop. */
typedef int (*srv_task_fn)(void *arg, char *err, size_t errlen);
int srv_pool_start(srv_pool **out, int n, int interval_ms, srv_task_fn fn, void *arg);
/* Asks the threads to stop and joins them (a task in progress finishes
 * first). Accepts NULL; sets *p to NULL. */
void srv_pool_stop(srv_pool **p);
/* Rounds run and failed. */
void srv_pool_stats(srv_pool *p, uint64_t *runs, uint64_t *failures);

double srv_now(void);
int64_t srv_wall_us(void);

#endif /* RINGCACHE_SRV_INT_H */
