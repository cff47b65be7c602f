/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_server.c: the server object (srv.h): it composes the event loop and
 * the HTTP listener, the users, the one cache client every query shares, the
 * query threads, and the state queries share: the registry of running
 * queries (system.processes, KILL QUERY, max_concurrent_queries), sessions
 * (USE and SET for a session_id), the query log (system.query_log, a ring),
 * the metrics. A ticker on the loop every 50 ms sends progress headers,
 * enforces max_execution_time and expires sessions.
 *
 * The cache client is held by reference: a query takes the current one and
 * gives it back at its end; SYSTEM DROP PAGE CACHE makes a new client (an
 * empty page cache) for the queries that start next, and the old one is
 * destroyed by its last query. So no query ever loses its client mid-read.
 */
#include "srv_int.h"

#include "config.h"

#include "eng_fetch.h"
#include "merge.h"
#include "rs_rc.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double srv_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int64_t srv_wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- metrics ----------------------------------------------------------------------- */

static const met_def srv_metric_defs[SRV_M_N] = {
    [SRV_M_QUERIES] = {"ringcache_server_queries_total", "queries run (finished or failed)",
                       MET_COUNTER, NULL},
    [SRV_M_FAILED] = {"ringcache_server_queries_failed_total", "queries that failed", MET_COUNTER,
                      NULL},
    [SRV_M_SELECTS] = {"ringcache_server_select_queries_total",
                       "queries with a result (SELECT, SHOW, DESCRIBE, EXISTS)", MET_COUNTER, NULL},
    [SRV_M_INSERTS] = {"ringcache_server_insert_queries_total", "INSERT queries", MET_COUNTER,
                       NULL},
    [SRV_M_RUNNING] = {"ringcache_server_queries_running", "queries running now", MET_GAUGE, NULL},
    [SRV_M_REQUESTS] = {"ringcache_server_http_requests_total",
                        "HTTP requests (queries, /ping, /metrics)", MET_COUNTER, NULL},
    [SRV_M_READ_ROWS] = {"ringcache_server_read_rows_total", "rows the queries read", MET_COUNTER,
                         NULL},
    [SRV_M_READ_BYTES] = {"ringcache_server_read_bytes_total",
                          "uncompressed bytes the queries read", MET_COUNTER, NULL},
    [SRV_M_RESULT_BYTES] = {"ringcache_server_result_bytes_total",
                            "bytes of results sent (before compression)", MET_COUNTER, NULL},
    [SRV_M_WRITTEN_ROWS] = {"ringcache_server_written_rows_total", "rows inserted", MET_COUNTER,
                            NULL},
    [SRV_M_MEMORY] = {"ringcache_server_memory_bytes", "bytes the running queries hold (tracked)",
                      MET_GAUGE, NULL},
    [SRV_M_CACHE_HITS] = {"ringcache_server_page_cache_hits_total",
                          "blocks served from the page cache", MET_COUNTER, NULL},
    [SRV_M_CACHE_MISSES] = {"ringcache_server_page_cache_misses_total",
                            "blocks the page cache had to fetch", MET_COUNTER, NULL},
    [SRV_M_NODE_BYTES] = {"ringcache_server_read_bytes_by_source_total",
                          "bytes read into the page cache, by source", MET_COUNTER,
                          "source=\"cache_nodes\""},
    [SRV_M_S3_BYTES] = {"ringcache_server_read_bytes_by_source_total",
                        "bytes read into the page cache, by source", MET_COUNTER, "source=\"s3\""},
    [SRV_M_PAGE_HIT_RATIO] = {"ringcache_server_page_cache_hit_ratio",
                              "page cache hits over hits and misses since start", MET_GAUGE, NULL},
    [SRV_M_REJECTED] = {"ringcache_server_queries_rejected_total",
                        "queries refused over max_concurrent_queries", MET_COUNTER, NULL},
    [SRV_M_CANCELLED] = {"ringcache_server_queries_cancelled_total",
                         "queries cancelled (client gone, KILL QUERY, max_execution_time)",
                         MET_COUNTER, NULL},
    [SRV_M_CACHE_DROPS] = {"ringcache_server_page_cache_drops_total", "SYSTEM DROP PAGE CACHE",
                           MET_COUNTER, NULL},
    [SRV_M_MERGES] = {"ringcache_server_merges_total", "table merges the background pool committed",
                      MET_COUNTER, NULL},
    [SRV_M_MERGE_ERRORS] = {"ringcache_server_background_failures_total",
                            "rounds of background work that failed", MET_COUNTER, NULL},
    [SRV_M_MERGES_SKIPPED] = {"ringcache_server_merges_skipped_for_memory_total",
                              "table merges not started: over --merge-memory", MET_COUNTER, NULL},
    [SRV_M_QLOG_FLUSHED] = {"ringcache_server_query_log_flushed_rows_total",
                            "system.query_log rows written to the warehouse's table", MET_COUNTER,
                            NULL},
    [SRV_M_QLOG_FLUSH_FAILURES] = {"ringcache_server_query_log_flush_failures_total",
                                   "flushes of system.query_log to the warehouse that failed",
                                   MET_COUNTER, NULL},
    [SRV_M_QLOG_LOST] = {"ringcache_server_query_log_lost_rows_total",
                         "system.query_log rows dropped from memory before they were flushed "
                         "(raise --query-log-size)",
                         MET_COUNTER, NULL},
    [SRV_M_QUERY_US] = {"ringcache_server_query_seconds", "time from a query's request to its end",
                        MET_HISTOGRAM, NULL},
};

/* ClickHouse codes counted apart in ringcache_server_query_failures_total. */
static const int counted_codes[] = {
    ENG_E_SYNTAX_ERROR,
    ENG_E_UNKNOWN_TABLE,
    ENG_E_UNKNOWN_IDENTIFIER,
    ENG_E_UNKNOWN_FUNCTION,
    ENG_E_UNKNOWN_SETTING,
    ENG_E_MEMORY_LIMIT_EXCEEDED,
    ENG_E_TIMEOUT_EXCEEDED,
    ENG_E_QUERY_WAS_CANCELLED,
    ENG_E_TOO_MANY_SIMULTANEOUS_QUERIES,
    ENG_E_AUTHENTICATION_FAILED,
    ENG_E_READONLY,
    ENG_E_S3_ERROR,
    ENG_E_BAD_ARGUMENTS,
    ENG_E_NOT_IMPLEMENTED,
    0 /* others */,
};
#define N_COUNTED (sizeof(counted_codes) / sizeof(counted_codes[0]))

static int metrics_setup(srv *s)
{
    if (met_create(&s->met, 1) < 0)
        return -ENOMEM;
    int b = met_register(s->met, srv_metric_defs, SRV_M_N);
    if (b < 0)
        return b;
    s->m_base = b;
    met_def codes[N_COUNTED];
    char labels[N_COUNTED][64];
    for (size_t i = 0; i < N_COUNTED; i++) {
        if (counted_codes[i])
            snprintf(labels[i], sizeof(labels[i]), "code=\"%d\",name=\"%s\"", counted_codes[i],
                     eng_error_name(counted_codes[i]));
        else
            snprintf(labels[i], sizeof(labels[i]), "code=\"other\",name=\"other\"");
        codes[i] = (met_def){"ringcache_server_query_failures_total",
                             "failed queries by ClickHouse error code", MET_COUNTER, labels[i]};
    }
    b = met_register(s->met, codes, N_COUNTED);
    if (b < 0)
        return b;
    s->m_code_base = b;
    return 0;
}

void srv_count(srv *s, int m, uint64_t v)
{
    if (s->met)
        met_add(s->met, met_shared_slot(s->met), s->m_base + m, v);
}

static void count_failure(srv *s, int code)
{
    size_t k = N_COUNTED - 1;
    for (size_t i = 0; i + 1 < N_COUNTED; i++)
        if (counted_codes[i] == code)
            k = i;
    met_add(s->met, met_shared_slot(s->met), s->m_code_base + (int)k, 1);
}

void srv_count_failure(srv *s, int code)
{
    if (s->met)
        count_failure(s, code);
}

/* ---- the cache client ---------------------------------------------------------------- */

static int cache_new(srv *s, srv_cache **out, char *err, size_t errlen)
{
    srv_cache *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    rc_config rcfg;
    rc_config_init(&rcfg);
    rcfg.members = s->conf.cache[0] ? s->conf.cache : NULL;
    int rc = rc_config_from_env(&rcfg, err, errlen);
    if (rc == 0) {
        rcfg.s3 = s->s3;
        rcfg.page_cache_bytes = (size_t)s->conf.page_cache;
        if (s->conf.max_threads > 0)
            rcfg.max_threads = (int)s->conf.max_threads;
        rcfg.prefault = s->conf.prefault || rcfg.prefault;
        /* every query shares the page cache: what one scans, the next reads
         * from RAM */
        rcfg.cache_scans = true;
        rc = rc_create(&c->rc, &rcfg, err, errlen);
    }
    if (rc == 0 && (rc = tb_cat_create(&c->cat, 0)) < 0) {
        snprintf(err, errlen, "out of memory");
        rc_destroy(&c->rc);
    }
    if (rc < 0) {
        free(c);
        return rc;
    }
    c->refs = 1;
    *out = c;
    return 0;
}

static void cache_release_locked(srv *s, srv_cache *c, srv_cache **dead)
{
    (void)s;
    if (--c->refs == 0)
        *dead = c;
}

static void cache_free(srv_cache *c)
{
    if (!c)
        return;
    tb_cat_destroy(&c->cat); /* its parts' handles first */
    rc_destroy(&c->rc);
    free(c);
}

srv_cache *srv_cache_get(srv *s)
{
    pthread_mutex_lock(&s->mu);
    srv_cache *c = s->cache;
    c->refs++;
    pthread_mutex_unlock(&s->mu);
    return c;
}

/* Counters of clients that are gone, so that the totals never go back. */
static rc_stats g_retired;
static pthread_mutex_t g_retired_mu = PTHREAD_MUTEX_INITIALIZER;

static void retire_stats(srv_cache *c)
{
    rc_stats st;
    rc_stats_get(c->rc, &st);
    pthread_mutex_lock(&g_retired_mu);
    uint64_t *a = (uint64_t *)&g_retired;
    const uint64_t *b = (const uint64_t *)&st;
    for (size_t i = 0; i < sizeof(rc_stats) / sizeof(uint64_t); i++)
        a[i] += b[i];
    pthread_mutex_unlock(&g_retired_mu);
}

void srv_cache_put(srv *s, srv_cache *c)
{
    if (!c)
        return;
    srv_cache *dead = NULL;
    pthread_mutex_lock(&s->mu);
    cache_release_locked(s, c, &dead);
    pthread_mutex_unlock(&s->mu);
    if (dead) {
        retire_stats(dead);
        cache_free(dead);
    }
}

int srv_cache_drop(srv *s, char *err, size_t errlen)
{
    srv_cache *fresh;
    int rc = cache_new(s, &fresh, err, errlen);
    if (rc < 0)
        return rc;
    srv_cache *dead = NULL;
    pthread_mutex_lock(&s->mu);
    srv_cache *old = s->cache;
    s->cache = fresh;
    cache_release_locked(s, old, &dead);
    pthread_mutex_unlock(&s->mu);
    if (dead) {
        retire_stats(dead);
        cache_free(dead);
    }
    srv_count(s, SRV_M_CACHE_DROPS, 1);
    return 0;
}

void srv_cache_stats(srv *s, rc_stats *out)
{
    srv_cache *c = srv_cache_get(s);
    rc_stats_get(c->rc, out);
    pthread_mutex_lock(&g_retired_mu);
    uint64_t *a = (uint64_t *)out;
    const uint64_t *b = (const uint64_t *)&g_retired;
    for (size_t i = 0; i < sizeof(rc_stats) / sizeof(uint64_t); i++)
        a[i] += b[i];
    pthread_mutex_unlock(&g_retired_mu);
    srv_cache_put(s, c);
}

/* ---- the registry ---------------------------------------------------------------------- */

int srv_register(srv *s, srv_query *q, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->mu);
    for (srv_query *r = s->running; r; r = r->next)
        if (strcmp(r->id, q->id) == 0) {
            pthread_mutex_unlock(&s->mu);
            snprintf(err, errlen, "Query with id = %s is already running", q->id);
            return ENG_E_QUERY_WITH_SAME_ID_IS_ALREADY_RUNNING;
        }
    if (s->n_running >= s->conf.max_concurrent_queries) {
        pthread_mutex_unlock(&s->mu);
        snprintf(err, errlen, "Too many simultaneous queries. Maximum: %lld",
                 (long long)s->conf.max_concurrent_queries);
        srv_count(s, SRV_M_REJECTED, 1);
        return ENG_E_TOO_MANY_SIMULTANEOUS_QUERIES;
    }
    q->next = s->running;
    q->prev = NULL;
    if (s->running)
        s->running->prev = q;
    s->running = q;
    s->n_running++;
    q->slot = true;
    pthread_mutex_unlock(&s->mu);
    met_gauge_add(s->met, s->m_base + SRV_M_RUNNING, 1);
    return 0;
}

void srv_unregister(srv *s, srv_query *q)
{
    pthread_mutex_lock(&s->mu);
    if (q->slot) {
        if (q->prev)
            q->prev->next = q->next;
        else
            s->running = q->next;
        if (q->next)
            q->next->prev = q->prev;
        q->next = q->prev = NULL;
        s->n_running--;
        q->slot = false;
        met_gauge_add(s->met, s->m_base + SRV_M_RUNNING, -1);
    }
    pthread_mutex_unlock(&s->mu);
}

int srv_kill(srv *s, const char *id)
{
    int found = 0;
    pthread_mutex_lock(&s->mu);
    for (srv_query *r = s->running; r; r = r->next)
        if (strcmp(r->id, id) == 0) {
            int z = SRV_CANCEL_NONE;
            atomic_compare_exchange_strong(&r->cancel_why, &z, SRV_CANCEL_KILL);
            atomic_store(&r->cancel, 1);
            pthread_mutex_lock(&r->mu);
            pthread_cond_broadcast(&r->cv);
            pthread_mutex_unlock(&r->mu);
            found = 1;
        }
    pthread_mutex_unlock(&s->mu);
    return found;
}

/* ---- query threads --------------------------------------------------------------------- */

static void *query_thread(void *arg)
{
    srv *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->jobs && !s->stop_threads)
            pthread_cond_wait(&s->cv, &s->mu);
        if (!s->jobs)
            break;
        srv_job *j = s->jobs;
        s->jobs = j->next;
        if (!s->jobs)
            s->jobs_tail = NULL;
        s->n_jobs--;
        s->idle_threads--;
        pthread_mutex_unlock(&s->mu);
        srv_query_run(j->q); /* drops the thread's reference at its end */
        free(j);
        pthread_mutex_lock(&s->mu);
        s->idle_threads++;
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int srv_submit(srv *s, srv_query *q)
{
    srv_job *j = calloc(1, sizeof(*j));
    if (!j)
        return -ENOMEM;
    j->q = q;
    pthread_mutex_lock(&s->mu);
    /* a thread for every queued job: an idle thread may not have taken the
     * jobs queued before this one yet */
    if (s->idle_threads <= s->n_jobs && s->n_threads < s->conf.max_concurrent_queries + 2) {
        if (pthread_create(&s->threads[s->n_threads], NULL, query_thread, s) == 0) {
            s->n_threads++;
            s->idle_threads++;
        } else if (s->n_threads == 0) {
            pthread_mutex_unlock(&s->mu);
            free(j);
            return -EAGAIN;
        }
    }
    if (s->jobs_tail)
        s->jobs_tail->next = j;
    else
        s->jobs = j;
    s->jobs_tail = j;
    s->n_jobs++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* ---- the query log ------------------------------------------------------------------------ */

static void qlog_clear(srv_qlog *e)
{
    free(e->query);
    free(e->query_id);
    free(e->initial_query_id);
    free(e->user);
    free(e->database);
    free(e->exception);
    free(e->settings);
    free(e->address);
    free(e->kind);
    free(e->log_comment);
    free(e->cluster_shares);
    memset(e, 0, sizeof(*e));
}

typedef struct set_acc {
    FILE *f;
    int n;
} set_acc;

static void add_changed(void *arg, const char *name, const char *value, bool changed,
                        const char *type, const char *def, const char *desc)
{
    (void)type, (void)def, (void)desc;
    set_acc *a = arg;
    if (changed)
        fprintf(a->f, "%s%s=%s", a->n++ ? "," : "", name, value);
}

/* "name=value,..." of the settings the query changed. */
static char *changed_settings(const srv_qset *set)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    set_acc a = {f, 0};
    srv_qset_each(set, add_changed, &a);
    fclose(f);
    return out;
}

void srv_qlog_add(srv *s, const srv_query *q, srv_qtype type, const char *exception, int code)
{
    if (!q->set.log_queries)
        return;
    srv_qlog e = {0};
    e.type = type;
    e.event_time_us = srv_wall_us();
    e.start_time_us = q->start_us;
    double el = srv_now() - q->t0;
    e.duration_ms = type == SRV_QT_START ? 0 : (uint64_t)(el * 1000);
    if (type != SRV_QT_START) {
        e.read_rows = atomic_load(&((srv_query *)q)->live.rows_read);
        e.read_bytes = atomic_load(&((srv_query *)q)->live.bytes_read);
        e.written_rows = atomic_load(&((srv_query *)q)->written_rows);
        e.written_bytes = atomic_load(&((srv_query *)q)->written_bytes);
        e.result_rows = atomic_load(&q->result_rows);
        e.result_bytes = q->out_total;
        e.memory_usage = atomic_load(&((srv_query *)q)->live.peak_memory);
    }
    e.exception_code = code;
    e.http_method = q->http_method;
    e.query = srv_mask_secrets(q->text ? q->text : "",
                               q->text ? (q->data_off ? q->data_off : q->text_len) : 0);
    e.query_id = strdup(q->id);
    e.initial = !q->dist_unit;
    e.user = strdup(q->user);
    e.database = strdup(q->database);
    e.exception = strdup(exception ? exception : "");
    e.settings = changed_settings(&q->set);
    e.address = strdup(q->address);
    e.kind = strdup(q->kind);
    e.log_comment = strdup(q->set.log_comment);
    e.initial_query_id = strdup(q->initial_id[0] ? q->initial_id : q->id);
    e.cluster_shares = strdup(q->dist_shares && type != SRV_QT_START ? q->dist_shares : "");
    if (!e.query || !e.query_id || !e.user || !e.database || !e.exception || !e.settings ||
        !e.address || !e.kind || !e.log_comment || !e.initial_query_id || !e.cluster_shares) {
        qlog_clear(&e);
        return;
    }
    pthread_mutex_lock(&s->mu);
    e.seq = ++s->qlog_seq;
    size_t slot = (s->qlog_head + s->qlog_n) % s->qlog_cap;
    if (s->qlog_n == s->qlog_cap) {
        slot = s->qlog_head;
        if (!s->qlog[slot].flushed && srv_qlog_stored(s))
            s->qlog_lost++; /* the flushes fail or lag: said by the next one */
        qlog_clear(&s->qlog[slot]);
        s->qlog_head = (s->qlog_head + 1) % s->qlog_cap;
    } else {
        s->qlog_n++;
    }
    s->qlog[slot] = e;
    pthread_mutex_unlock(&s->mu);
    if (type == SRV_QT_FINISH || type == SRV_QT_EXC_WHILE || type == SRV_QT_EXC_BEFORE) {
        srv_count(s, SRV_M_QUERIES, 1);
        srv_count(s, SRV_M_READ_ROWS, e.read_rows);
        srv_count(s, SRV_M_READ_BYTES, e.read_bytes);
        srv_count(s, SRV_M_RESULT_BYTES, e.result_bytes);
        srv_count(s, SRV_M_WRITTEN_ROWS, e.written_rows);
        met_observe_us(s->met, met_shared_slot(s->met), s->m_base + SRV_M_QUERY_US,
                       (uint64_t)(el * 1e6));
        if (code) {
            srv_count(s, SRV_M_FAILED, 1);
            count_failure(s, code);
        }
    }
}

/* ---- sessions ------------------------------------------------------------------------------ */

int srv_session_acquire(srv *s, const char *id, const char *user, const char *timeout, bool check,
                        srv_session **out, char *err, size_t errlen)
{
    *out = NULL;
    double tmo = (double)s->conf.session_timeout_ms / 1000.0;
    if (timeout) {
        char *end;
        long v = strtol(timeout, &end, 10);
        if (!*timeout || *end || v < 0 || v > 3600) {
            snprintf(err, errlen, "Invalid session timeout: '%.32s' (give 0 to 3600 seconds)",
                     timeout);
            return ENG_E_INVALID_SESSION_TIMEOUT;
        }
        tmo = (double)v;
    }
    if (strlen(id) >= sizeof(((srv_session *)0)->id)) {
        snprintf(err, errlen, "the session_id is longer than 127 bytes");
        return ENG_E_BAD_ARGUMENTS;
    }
    pthread_mutex_lock(&s->mu);
    srv_session *ss = s->sessions;
    while (ss && (strcmp(ss->id, id) != 0 || strcmp(ss->user, user) != 0))
        ss = ss->next;
    if (!ss && check) {
        pthread_mutex_unlock(&s->mu);
        snprintf(err, errlen, "Session %s not found (it expired or never existed)", id);
        return ENG_E_SESSION_NOT_FOUND;
    }
    if (ss && ss->busy) {
        pthread_mutex_unlock(&s->mu);
        snprintf(err, errlen, "Session %s is locked by a concurrent client", id);
        return ENG_E_SESSION_IS_LOCKED;
    }
    if (!ss) {
        ss = calloc(1, sizeof(*ss));
        if (!ss) {
            pthread_mutex_unlock(&s->mu);
            snprintf(err, errlen, "out of memory");
            return ENG_E_MEMORY_LIMIT_EXCEEDED;
        }
        snprintf(ss->id, sizeof(ss->id), "%s", id);
        snprintf(ss->user, sizeof(ss->user), "%s", user);
        ss->next = s->sessions;
        s->sessions = ss;
    }
    ss->busy = true;
    ss->timeout_s = tmo;
    ss->expires = srv_now() + tmo;
    pthread_mutex_unlock(&s->mu);
    *out = ss;
    return 0;
}

void srv_session_release(srv *s, srv_session *ss, bool close)
{
    if (!ss)
        return;
    pthread_mutex_lock(&s->mu);
    ss->busy = false;
    ss->expires = close ? 0 : srv_now() + ss->timeout_s;
    pthread_mutex_unlock(&s->mu);
}

static void sessions_expire(srv *s, double now)
{
    pthread_mutex_lock(&s->mu);
    for (srv_session **pp = &s->sessions; *pp;) {
        srv_session *ss = *pp;
        if (!ss->busy && ss->expires <= now) {
            *pp = ss->next;
            free(ss);
        } else {
            pp = &ss->next;
        }
    }
    pthread_mutex_unlock(&s->mu);
}

/* ---- databases ------------------------------------------------------------------------------ */

typedef struct db_walk {
    void (*fn)(const char *name, void *arg);
    void *arg;
    char last[TB_WH_NAME_MAX];
} db_walk;

static int db_of_table(const char *db, const char *table, void *arg)
{
    (void)table;
    db_walk *w = arg;
    /* default and system are there without tables (system.query_log may be in the warehouse) */
    if (strcmp(db, w->last) != 0 && strcmp(db, "default") != 0 && strcmp(db, "system") != 0) {
        snprintf(w->last, sizeof(w->last), "%s", db);
        w->fn(db, w->arg);
    }
    return 0;
}

void srv_databases(srv *s, void (*fn)(const char *name, void *arg), void *arg)
{
    if (!s->wh_set)
        return;
    db_walk w = {fn, arg, ""};
    char err[256];
    if (tb_wh_list(&s->wh, NULL, db_of_table, &w, err, sizeof(err)) < 0)
        srv_log(SRV_LOG_WARN, "msg=\"cannot list the warehouse's databases\" error=\"%s\"", err);
}

typedef struct db_find {
    const char *name;
    bool found;
} db_find;

static void db_match(const char *name, void *arg)
{
    db_find *f = arg;
    if (strcmp(name, f->name) == 0)
        f->found = true;
}

bool srv_database_exists(srv *s, const char *name)
{
    if (strcmp(name, "default") == 0 || strcmp(name, "system") == 0)
        return true;
    db_find f = {name, false};
    srv_databases(s, db_match, &f);
    return f.found;
}

/* ---- life ------------------------------------------------------------------------------------ */

static void ticker_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    srv *s = arg;
    double now = srv_now();
    srv_http_tick(s, now);
    static double last_sweep;
    if (now - last_sweep > 1.0) {
        sessions_expire(s, now);
        last_sweep = now;
    }
    met_set(s->met, s->m_base + SRV_M_MEMORY, atomic_load(&s->mem.cur));
}

static int write_port_file(const char *path, int port, char *err, size_t errlen)
{
    char tmp[1100];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f) != 0 || rename(tmp, path) < 0) {
        snprintf(err, errlen, "cannot write the port file %s: %s (check --port-file)", path,
                 strerror(errno));
        return -errno;
    }
    return 0;
}

static int tls_setup(srv *s, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        snprintf(err, errlen, "cannot start TLS: out of memory");
        return -ENOMEM;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(ctx, s->conf.tls_cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, s->conf.tls_key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        char e[256];
        ERR_error_string_n(ERR_get_error(), e, sizeof(e));
        snprintf(err, errlen, "cannot load --tls-cert %s / --tls-key %s: %s", s->conf.tls_cert,
                 s->conf.tls_key, e);
        SSL_CTX_free(ctx);
        return -EINVAL;
    }
    s->tls = ctx;
    return 0;
}

int srv_create(srv **out, const srv_conf *conf, char *err, size_t errlen)
{
    *out = NULL;
    srv *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    s->conf = *conf;
    s->t_start = srv_now();
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_mutex_init(&s->qlog_flush_mu, NULL);
    pthread_cond_init(&s->qlog_cv, NULL);
    s->mem.limit = conf->max_server_memory_usage;
    s->merge_mem.limit = conf->merge_memory;
    s->merge_mem.parent = &s->mem;
    if (conf->display_name[0])
        snprintf(s->display_name, sizeof(s->display_name), "%s", conf->display_name);
    else if (gethostname(s->display_name, sizeof(s->display_name) - 1) < 0)
        snprintf(s->display_name, sizeof(s->display_name), "localhost");
    int rc = 0;
    s->qlog_cap = (size_t)conf->query_log_size;
    s->threads = calloc((size_t)conf->max_concurrent_queries + 2, sizeof(pthread_t));
    s->qlog = calloc(s->qlog_cap, sizeof(srv_qlog));
    if (!s->threads || !s->qlog || metrics_setup(s) < 0) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
        goto fail;
    }
    evthread_use_pthreads();
    if (!(s->base = event_base_new())) {
        snprintf(err, errlen, "cannot create the event loop");
        rc = -ENOMEM;
        goto fail;
    }
    if ((rc = srv_users_load(&s->users, conf->users, err, errlen)) < 0)
        goto fail;
    s3_config_init(&s->s3);
    if ((rc = s3_config_from_env(&s->s3, err, errlen)) < 0)
        goto fail;
    if (conf->s3_endpoint[0]) {
        snprintf(s->s3.endpoint, sizeof(s->s3.endpoint), "%s", conf->s3_endpoint);
        s->s3.path_style = true;
    }
    if (conf->s3_region[0])
        snprintf(s->s3.region, sizeof(s->s3.region), "%s", conf->s3_region);
    if (!s->s3.access_key[0])
        s->s3.anonymous = true;
    if (conf->warehouse[0]) {
        if ((rc = tb_wh_init(&s->wh, conf->warehouse, &s->s3, err, errlen)) < 0)
            goto fail;
        s->wh_set = true;
        s->merging = calloc((size_t)conf->background_pool_size, sizeof(s->merging[0]));
        if (!s->merging) {
            snprintf(err, errlen, "out of memory");
            rc = -ENOMEM;
            goto fail;
        }
    }
    /* a hot query's download buffers come from here, not from fresh mappings */
    if ((rc = ef_shelf_create(&s->shelf, SRV_SHELF_BYTES)) < 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    char e2[RC_ERR_MAX];
    if ((rc = cache_new(s, &s->cache, e2, sizeof(e2))) < 0) {
        snprintf(err, errlen, "cannot start the cache client: %s", e2);
        goto fail;
    }
    if (conf->tls_cert[0] && (rc = tls_setup(s, err, errlen)) < 0)
        goto fail;
    httpd_config hc;
    httpd_config_init(&hc);
    hc.host = conf->listen;
    hc.port = (int)conf->http_port;
    hc.handler = srv_http_handler;
    hc.handler_arg = s;
    hc.tls = s->tls;
    hc.max_url_bytes = 64 << 10;
    hc.max_header_bytes = 80 << 10;
    hc.max_conns = (int)conf->max_connections;
    hc.idle_timeout_ms = (int)conf->keep_alive_timeout_ms;
    hc.header_timeout_ms = (int)conf->request_timeout_ms;
    hc.body_timeout_ms = (int)conf->request_timeout_ms;
    hc.write_timeout_ms = (int)conf->request_timeout_ms;
    hc.in_buffer_bytes = 1 << 20;
    hc.out_high_bytes = 4 << 20;
    hc.out_low_bytes = 1 << 20;
    hc.max_discard_bytes = 8 << 20;
    if ((rc = httpd_server_create(&s->http, s->base, &hc, err, errlen)) < 0)
        goto fail;
    if (conf->port_file[0] &&
        (rc = write_port_file(conf->port_file, httpd_server_port(s->http), err, errlen)) < 0)
        goto fail;
    if (s->conf.cluster_secret_file[0]) {
        if (s->conf.cluster_secret[0]) {
            snprintf(err, errlen, "give --cluster-secret or --cluster-secret-file, not both");
            rc = -EINVAL;
            goto fail;
        }
        if ((rc = cfg_read_secret_line(s->conf.cluster_secret_file, "cluster secret file",
                                       "--cluster-secret-file", s->conf.cluster_secret,
                                       sizeof(s->conf.cluster_secret), err, errlen)) < 0)
            goto fail;
    }
    if (s->conf.cluster_tls_ca[0]) {
        if (!s->conf.tls_cert[0]) {
            snprintf(err, errlen,
                     "--cluster-tls-ca verifies the members' HTTPS, which a cluster talks only "
                     "when its servers serve it: give --tls-cert and --tls-key too");
            rc = -EINVAL;
            goto fail;
        }
        if (access(s->conf.cluster_tls_ca, R_OK) < 0) {
            rc = -errno;
            snprintf(err, errlen, "cannot read --cluster-tls-ca %s: %s (give a PEM CA bundle)",
                     s->conf.cluster_tls_ca, strerror(errno));
            goto fail;
        }
    }
    if (conf->cluster[0]) {
        /* the member that is this server: its listen address and bound port */
        if ((rc = srv_clusters_start(s, httpd_server_port(s->http), err, errlen)) < 0)
            goto fail;
        if (!s->conf.cluster_secret[0]) {
            snprintf(
                err, errlen,
                "--cluster needs --cluster-secret (or --cluster-secret-file): the servers of a cluster "
                "take work units only from servers that hold it");
            rc = -EINVAL;
            goto fail;
        }
    }
    s->ticker = event_new(s->base, -1, EV_PERSIST, ticker_cb, s);
    struct timeval tick = {0, 50000};
    if (!s->ticker || event_add(s->ticker, &tick) < 0) {
        snprintf(err, errlen, "cannot start the ticker");
        rc = -ENOMEM;
        goto fail;
    }
    if (!conf->users[0] && strcmp(conf->listen, "127.0.0.1") != 0 &&
        strcmp(conf->listen, "::1") != 0 && strcmp(conf->listen, "localhost") != 0)
        srv_log(SRV_LOG_WARN,
                "msg=\"listening on %s without a users file: the default user is served from "
                "this host only; give --users to let other hosts in\"",
                conf->listen);
    srv_log(SRV_LOG_INFO,
            "msg=\"serving ClickHouse's HTTP interface\" listen=%s port=%d cache=\"%s\" "
            "page_cache=%lld warehouse=\"%s\" max_concurrent_queries=%lld",
            conf->listen, httpd_server_port(s->http), conf->cache[0] ? conf->cache : "S3 directly",
            (long long)conf->page_cache, conf->warehouse, (long long)conf->max_concurrent_queries);
    *out = s;
    return 0;
fail:
    srv_destroy(&s);
    return rc < 0 ? rc : -EINVAL;
}

int srv_port(const srv *s)
{
    return s->http ? httpd_server_port(s->http) : 0;
}

void srv_wh_for(srv *s, srv_cache *c, tb_wh *out)
{
    *out = s->wh;
    rc_client *rc = c ? c->rc : NULL;
    out->cat = c ? c->cat : NULL;
    out->reuse_ms = s->conf.table_refresh_ms;
    if (s->conf.cache[0] && rc) {
        out->io.open = rs_rc_open_key;
        out->io.open_arg = rc;
        out->io.put = rs_rc_put_key;
        out->io.put_v = rs_rc_put_key_v;
        out->io.open_known = rs_rc_open_known_key;
        out->io.put_arg = rc;
    }
}

typedef struct merge_pick {
    srv *s;
    uint64_t n, want;
    char db[TB_WH_NAME_MAX], table[TB_WH_NAME_MAX];
    bool found;
} merge_pick;

static bool merging_locked(srv *s, const char *key)
{
    for (int i = 0; i < s->n_merging; i++)
        if (strcmp(s->merging[i], key) == 0)
            return true;
    return false;
}

/* The want-th table (round robin) that no other thread is merging. */
static int pick_table(const char *db, const char *table, void *arg)
{
    merge_pick *p = arg;
    if (p->n++ < p->want)
        return 0;
    char key[2 * TB_WH_NAME_MAX];
    snprintf(key, sizeof(key), "%s.%s", db, table);
    pthread_mutex_lock(&p->s->mu);
    bool busy =
        merging_locked(p->s, key) || p->s->n_merging >= (int)p->s->conf.background_pool_size;
    if (!busy)
        snprintf(p->s->merging[p->s->n_merging++], sizeof(p->s->merging[0]), "%s", key);
    pthread_mutex_unlock(&p->s->mu);
    if (busy)
        return 0;
    snprintf(p->db, sizeof(p->db), "%s", db);
    snprintf(p->table, sizeof(p->table), "%s", table);
    p->found = true;
    return 1; /* stop */
}

/* One round of a background thread: the next table's best merge (tm_run),
 * then its old parts' deletion (tb_cleanup). */
static int merge_task(void *arg, char *err, size_t errlen)
{
    srv *s = arg;
    pthread_mutex_lock(&s->mu);
    merge_pick p = {s, 0, s->merge_cursor++, "", "", false};
    pthread_mutex_unlock(&s->mu);
    int rc = tb_wh_list(&s->wh, NULL, pick_table, &p, err, errlen);
    if (rc >= 0 && !p.found && p.n > 0) { /* past the end: from the first */
        pthread_mutex_lock(&s->mu);
        s->merge_cursor = 1;
        pthread_mutex_unlock(&s->mu);
        p.n = 0;
        p.want = 0;
        rc = tb_wh_list(&s->wh, NULL, pick_table, &p, err, errlen);
    }
    if (rc < 0 || !p.found)
        return rc < 0 ? rc : 0;
    srv_cache *c = srv_cache_get(s);
    tb_wh wh;
    srv_wh_for(s, c, &wh);
    tb_table *t = NULL;
    rc = tb_wh_open(&wh, p.db, p.table, true, &t, err, errlen);
    tm_result res = {0};
    if (rc == 0) {
        tm_settings ts;
        tm_settings_init(&ts);
        ts.mem = &s->merge_mem;
        rc = tm_run(t, &ts, false, &res, err, errlen);
        if (rc == -ESTALE)
            rc = 0; /* a racing commit: the next round looks again */
    }
    if (rc == 0 && res.skipped_for_memory) {
        srv_count(s, SRV_M_MERGES_SKIPPED, 1);
        srv_log(SRV_LOG_WARN,
                "msg=\"merge not started: it needs more memory than the background merges may "
                "hold (raise --merge-memory)\" table=%s.%s partition=\"%s\" parts=%zu "
                "needs=%llu merging_now=%lld merge_memory=%lld",
                p.db, p.table, res.partition, res.n_inputs, (unsigned long long)res.mem_needed,
                (long long)atomic_load(&s->merge_mem.cur), (long long)s->merge_mem.limit);
    }
    if (rc == 0 && res.merged) {
        srv_count(s, SRV_M_MERGES, 1);
        srv_log(SRV_LOG_INFO, "msg=\"merged\" table=%s.%s partition=\"%s\" parts=%zu rows=%llu",
                p.db, p.table, res.partition, res.n_inputs, (unsigned long long)res.rows_out);
    }
    if (rc == 0)
        rc = tb_cleanup(t, false, NULL, err, errlen);
    if (rc < 0) { /* the pool logs it */
        srv_count(s, SRV_M_MERGE_ERRORS, 1);
        char e2[512];
        snprintf(e2, sizeof(e2), "%s", err);
        snprintf(err, errlen, "merging table %s.%s: %s%s", p.db, p.table, e2,
                 rc == -ENOMEM ? " (raise --merge-memory or --max-server-memory-usage)" : "");
    }
    tb_table_destroy(&t);
    srv_cache_put(s, c);
    char key[2 * TB_WH_NAME_MAX];
    snprintf(key, sizeof(key), "%s.%s", p.db, p.table);
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->n_merging; i++)
        if (strcmp(s->merging[i], key) == 0) {
            memcpy(s->merging[i], s->merging[--s->n_merging], sizeof(s->merging[0]));
            break;
        }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int srv_run(srv *s)
{
    if (s->conf.background_merges && s->wh_set &&
        srv_pool_start(&s->bg, (int)s->conf.background_pool_size, (int)s->conf.merge_interval_ms,
                       merge_task, s) < 0)
        srv_log(SRV_LOG_ERROR, "msg=\"cannot start the background pool\"");
    if (srv_qlog_stored(s) && srv_qlog_flusher_start(s) < 0)
        srv_log(SRV_LOG_ERROR, "msg=\"cannot start the thread that flushes system.query_log\"");
    event_base_dispatch(s->base);
    srv_pool_stop(&s->bg);
    srv_qlog_flusher_stop(s);
    return s->drained ? 0 : 1;
}

static void drained_cb(httpd_server *h, void *arg)
{
    (void)h;
    srv *s = arg;
    s->drained = true;
    srv_log(SRV_LOG_INFO, "msg=\"drained: every connection is closed\"");
    event_base_loopexit(s->base, NULL);
}

static void stop_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    srv *s = arg;
    if (s->stopping)
        return;
    s->stopping = true;
    srv_log(SRV_LOG_INFO, "msg=\"draining\" running_queries=%d drain_timeout_ms=%lld", s->n_running,
            (long long)s->conf.drain_timeout_ms);
    if (httpd_server_drain(s->http, (int)s->conf.drain_timeout_ms, drained_cb, s) < 0)
        event_base_loopexit(s->base, NULL);
}

void srv_stop(srv *s)
{
    event_base_once(s->base, -1, EV_TIMEOUT, stop_cb, s, NULL);
}

void srv_destroy(srv **ps)
{
    if (!ps || !*ps)
        return;
    srv *s = *ps;
    srv_pool_stop(&s->bg);
    srv_qlog_flusher_stop(s);
    httpd_server_destroy(&s->http);
    pthread_mutex_lock(&s->mu);
    s->stop_threads = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->n_threads; i++)
        pthread_join(s->threads[i], NULL);
    /* the loop's last callbacks (a finished query's wake) */
    if (s->base)
        event_base_loop(s->base, EVLOOP_NONBLOCK);
    if (s->ticker)
        event_free(s->ticker);
    if (s->cache)
        srv_cache_put(s, s->cache);
    while (s->sessions) {
        srv_session *n = s->sessions->next;
        free(s->sessions);
        s->sessions = n;
    }
    for (size_t i = 0; s->qlog && i < s->qlog_cap; i++)
        qlog_clear(&s->qlog[i]);
    free(s->qlog);
    free(s->threads);
    free(s->merging);
    srv_users_destroy(&s->users);
    srv_clusters_stop(s);
    if (s->tls)
        SSL_CTX_free(s->tls);
    if (s->base)
        event_base_free(s->base);
    met_destroy(&s->met);
    ef_shelf_destroy(&s->shelf);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->qlog_flush_mu);
    pthread_cond_destroy(&s->qlog_cv);
    free(s);
    *ps = NULL;
}
