/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_system.c: the server's system tables, each made from the server's
 * state when a query names it (a snapshot: eng_source_rows_create), with
 * ClickHouse's column names (types where the engine has no exact one:
 * ClickHouse's Enum8, IPv6 and Map columns are String here):
 *
 *   system.query_log   the query log ring: QueryStart, QueryFinish,
 *                      ExceptionBeforeStart, ExceptionWhileProcessing rows;
 *                      an s3Cluster query's initiator row has one column of
 *                      its own, cluster_shares ("member=ROWS/BYTES,...":
 *                      what each server read; ClickHouse has no such
 *                      column, its workers' rows say it)
 *   system.processes   the queries running now
 *   system.settings    the settings of this query: name, value, changed, ...
 *   system.metrics     values now: Query, MemoryTracking, ...
 *   system.events      counters since start: Query, FailedQuery, page cache
 *                      hits and misses, bytes from cache nodes and from S3
 *   system.databases   default, system and the warehouse's databases
 *   system.tables      the system tables, when there is no warehouse
 *
 * system.one, system.numbers and system.zeros are the engine's, and so are
 * the warehouse's tables and its system.tables, system.columns and
 * system.parts (eng_ctx.warehouse).
 */
#include "srv_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct colspec {
    const char *name;
    ex_type t;
} colspec;

#define T_STR                                                                                      \
    {                                                                                              \
        .kind = EX_STRING                                                                          \
    }
#define T_U8                                                                                       \
    {                                                                                              \
        .kind = EX_UINT, .bits = 8                                                                 \
    }
#define T_U16                                                                                      \
    {                                                                                              \
        .kind = EX_UINT, .bits = 16                                                                \
    }
#define T_U64                                                                                      \
    {                                                                                              \
        .kind = EX_UINT, .bits = 64                                                                \
    }
#define T_I32                                                                                      \
    {                                                                                              \
        .kind = EX_INT, .bits = 32                                                                 \
    }
#define T_I64                                                                                      \
    {                                                                                              \
        .kind = EX_INT, .bits = 64                                                                 \
    }
#define T_F64                                                                                      \
    {                                                                                              \
        .kind = EX_FLOAT, .bits = 64                                                               \
    }
#define T_DATE                                                                                     \
    {                                                                                              \
        .kind = EX_DATE, .bits = 16                                                                \
    }
#define T_DT                                                                                       \
    {                                                                                              \
        .kind = EX_DATETIME                                                                        \
    }
#define T_DT6                                                                                      \
    {                                                                                              \
        .kind = EX_DATETIME, .scale = 6                                                            \
    }

/* Rows being made: n rows, filled in order. */
typedef struct rows {
    eng_schema sc;
    ex_vec *v;
    int nc;
    uint32_t n;
    bool oom;
} rows;

static int rows_init(rows *r, const colspec *cs, int nc, uint32_t n)
{
    memset(r, 0, sizeof(*r));
    r->sc.cols = calloc((size_t)nc, sizeof(eng_col));
    r->v = calloc((size_t)nc, sizeof(ex_vec));
    if (!r->sc.cols || !r->v) {
        free(r->sc.cols);
        free(r->v);
        return -ENOMEM;
    }
    r->nc = r->sc.n = nc;
    r->n = n;
    for (int k = 0; k < nc; k++) {
        r->sc.cols[k].name = strdup(cs[k].name);
        r->sc.cols[k].t = cs[k].t;
        if (!r->sc.cols[k].name || ex_vec_alloc(NULL, &r->v[k], cs[k].t, n) < 0)
            r->oom = true;
    }
    return 0;
}

static void rows_free(rows *r)
{
    for (int k = 0; k < r->nc; k++)
        ex_vec_clear(NULL, &r->v[k]);
    free(r->v);
    eng_schema_free(&r->sc);
}

static void put_s(rows *r, int k, uint32_t row, const char *s)
{
    if (!r->oom && ex_vec_str_put(NULL, &r->v[k], row, s ? s : "", s ? strlen(s) : 0) < 0)
        r->oom = true;
}

static void put_i(rows *r, int k, uint32_t row, int64_t x)
{
    if (r->v[k].i)
        r->v[k].i[row] = x;
}

static void put_f(rows *r, int k, uint32_t row, double x)
{
    if (r->v[k].d)
        r->v[k].d[row] = x;
}

static int rows_source(rows *r, const eng_scan_env *env, eng_source **out, char *err, size_t errlen)
{
    if (r->oom) {
        rows_free(r);
        snprintf(err, errlen, "out of memory making a system table");
        return -ENOMEM;
    }
    return eng_source_rows_create(out, env, &r->sc, r->v, r->n, err, errlen);
}

/* ---- system.query_log -------------------------------------------------------------- */

static const colspec qlog_cols[] = {
    {"hostname", T_STR},
    {"type", T_STR},
    {"event_date", T_DATE},
    {"event_time", T_DT},
    {"event_time_microseconds", T_DT6},
    {"query_start_time", T_DT},
    {"query_start_time_microseconds", T_DT6},
    {"query_duration_ms", T_U64},
    {"read_rows", T_U64},
    {"read_bytes", T_U64},
    {"written_rows", T_U64},
    {"written_bytes", T_U64},
    {"result_rows", T_U64},
    {"result_bytes", T_U64},
    {"memory_usage", T_U64},
    {"current_database", T_STR},
    {"query", T_STR},
    {"query_kind", T_STR},
    {"exception_code", T_I32},
    {"exception", T_STR},
    {"is_initial_query", T_U8},
    {"user", T_STR},
    {"query_id", T_STR},
    {"address", T_STR},
    {"initial_query_id", T_STR},
    {"interface", T_U8},
    {"http_method", T_U8},
    {"Settings", T_STR},
    {"log_comment", T_STR},
    {"cluster_shares", T_STR},
};

static int query_log(srv *s, const eng_scan_env *env, eng_source **out, char *err, size_t errlen)
{
    static const char *const types[] = {"", "QueryStart", "QueryFinish", "ExceptionBeforeStart",
                                        "ExceptionWhileProcessing"};
    rows r;
    int nc = (int)(sizeof(qlog_cols) / sizeof(qlog_cols[0]));
    pthread_mutex_lock(&s->mu);
    uint32_t n = (uint32_t)s->qlog_n;
    if (rows_init(&r, qlog_cols, nc, n) < 0) {
        pthread_mutex_unlock(&s->mu);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < n && !r.oom; i++) {
        const srv_qlog *e = &s->qlog[(s->qlog_head + i) % s->qlog_cap];
        int k = 0;
        put_s(&r, k++, i, s->display_name);
        put_s(&r, k++, i, types[e->type]);
        put_i(&r, k++, i, e->event_time_us / 1000000 / 86400);
        put_i(&r, k++, i, e->event_time_us / 1000000);
        put_i(&r, k++, i, e->event_time_us);
        put_i(&r, k++, i, e->start_time_us / 1000000);
        put_i(&r, k++, i, e->start_time_us);
        put_i(&r, k++, i, (int64_t)e->duration_ms);
        put_i(&r, k++, i, (int64_t)e->read_rows);
        put_i(&r, k++, i, (int64_t)e->read_bytes);
        put_i(&r, k++, i, (int64_t)e->written_rows);
        put_i(&r, k++, i, (int64_t)e->written_bytes);
        put_i(&r, k++, i, (int64_t)e->result_rows);
        put_i(&r, k++, i, (int64_t)e->result_bytes);
        put_i(&r, k++, i, e->memory_usage);
        put_s(&r, k++, i, e->database);
        put_s(&r, k++, i, e->query);
        put_s(&r, k++, i, e->kind);
        put_i(&r, k++, i, e->exception_code);
        put_s(&r, k++, i, e->exception_code ? e->exception : "");
        put_i(&r, k++, i, e->initial);
        put_s(&r, k++, i, e->user);
        put_s(&r, k++, i, e->query_id);
        put_s(&r, k++, i, e->address);
        put_s(&r, k++, i, e->initial_query_id);
        put_i(&r, k++, i, 2);
        put_i(&r, k++, i, e->http_method);
        put_s(&r, k++, i, e->settings);
        put_s(&r, k++, i, e->log_comment);
        put_s(&r, k++, i, e->cluster_shares);
    }
    pthread_mutex_unlock(&s->mu);
    return rows_source(&r, env, out, err, errlen);
}

/* ---- system.processes -------------------------------------------------------------- */

static const colspec proc_cols[] = {
    {"is_initial_query", T_U8},
    {"user", T_STR},
    {"query_id", T_STR},
    {"address", T_STR},
    {"port", T_U16},
    {"initial_user", T_STR},
    {"initial_query_id", T_STR},
    {"interface", T_U8},
    {"http_method", T_U8},
    {"elapsed", T_F64},
    {"is_cancelled", T_U8},
    {"read_rows", T_U64},
    {"read_bytes", T_U64},
    {"total_rows_approx", T_U64},
    {"written_rows", T_U64},
    {"written_bytes", T_U64},
    {"memory_usage", T_I64},
    {"peak_memory_usage", T_I64},
    {"query", T_STR},
    {"query_kind", T_STR},
    {"current_database", T_STR},
};

static int processes(srv *s, const eng_scan_env *env, eng_source **out, char *err, size_t errlen)
{
    rows r;
    int nc = (int)(sizeof(proc_cols) / sizeof(proc_cols[0]));
    pthread_mutex_lock(&s->mu);
    uint32_t n = 0;
    for (srv_query *q = s->running; q; q = q->next)
        n++;
    if (rows_init(&r, proc_cols, nc, n) < 0) {
        pthread_mutex_unlock(&s->mu);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    double now = srv_now();
    uint32_t i = 0;
    for (srv_query *q = s->running; q && !r.oom; q = q->next, i++) {
        int k = 0;
        put_i(&r, k++, i, !q->dist_unit);
        put_s(&r, k++, i, q->user);
        put_s(&r, k++, i, q->id);
        put_s(&r, k++, i, q->address);
        put_i(&r, k++, i, q->port);
        put_s(&r, k++, i, q->user);
        put_s(&r, k++, i, q->initial_id[0] ? q->initial_id : q->id);
        put_i(&r, k++, i, 2);
        put_i(&r, k++, i, q->http_method);
        put_f(&r, k++, i, now - q->t0);
        put_i(&r, k++, i, atomic_load(&q->cancel));
        put_i(&r, k++, i, (int64_t)atomic_load(&q->live.rows_read));
        put_i(&r, k++, i, (int64_t)atomic_load(&q->live.bytes_read));
        put_i(&r, k++, i, (int64_t)atomic_load(&q->live.rows_read));
        put_i(&r, k++, i, (int64_t)atomic_load(&q->written_rows));
        put_i(&r, k++, i, (int64_t)atomic_load(&q->written_bytes));
        put_i(&r, k++, i, atomic_load(&q->live.memory));
        put_i(&r, k++, i, atomic_load(&q->live.peak_memory));
        char text[4096];
        size_t tl = q->text ? (q->data_off ? q->data_off : q->text_len) : 0;
        char *masked = srv_mask_secrets(q->text ? q->text : "", tl);
        snprintf(text, sizeof(text), "%s", masked ? masked : "");
        free(masked);
        put_s(&r, k++, i, text);
        put_s(&r, k++, i, q->kind);
        put_s(&r, k++, i, q->database);
    }
    pthread_mutex_unlock(&s->mu);
    return rows_source(&r, env, out, err, errlen);
}

/* ---- system.settings ------------------------------------------------------------------ */

static const colspec set_cols[] = {
    {"name", T_STR}, {"value", T_STR},   {"changed", T_U8},  {"description", T_STR},
    {"type", T_STR}, {"default", T_STR}, {"readonly", T_U8},
};

typedef struct set_fill {
    rows *r;
    uint32_t i;
    bool count_only;
    int readonly;
} set_fill;

static void set_row(void *arg, const char *name, const char *value, bool changed, const char *type,
                    const char *def, const char *desc)
{
    set_fill *f = arg;
    if (!f->count_only) {
        put_s(f->r, 0, f->i, name);
        put_s(f->r, 1, f->i, value);
        put_i(f->r, 2, f->i, changed);
        put_s(f->r, 3, f->i, desc);
        put_s(f->r, 4, f->i, type);
        put_s(f->r, 5, f->i, def);
        put_i(f->r, 6, f->i,
              f->readonly == 1 || (f->readonly == 2 && strcmp(name, "readonly") == 0));
    }
    f->i++;
}

static int settings(srv_query *q, const eng_scan_env *env, eng_source **out, char *err,
                    size_t errlen)
{
    set_fill f = {NULL, 0, true, (int)q->set.readonly};
    srv_qset_each(&q->set, set_row, &f);
    rows r;
    if (rows_init(&r, set_cols, (int)(sizeof(set_cols) / sizeof(set_cols[0])), f.i) < 0) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    f = (set_fill){&r, 0, false, (int)q->set.readonly};
    srv_qset_each(&q->set, set_row, &f);
    return rows_source(&r, env, out, err, errlen);
}

/* ---- system.metrics and system.events ---------------------------------------------------- */

typedef struct kv_row {
    const char *name;
    int64_t value;
    const char *desc;
} kv_row;

static int kv_table(const char *key, const kv_row *kv, int n, const eng_scan_env *env,
                    eng_source **out, char *err, size_t errlen)
{
    colspec cs[] = {{key, T_I64}, {"value", T_I64}, {"description", T_STR}};
    cs[0].t = (ex_type)T_STR;
    bool events = strcmp(key, "event") == 0;
    if (events)
        cs[1].t = (ex_type)T_U64;
    rows r;
    if (rows_init(&r, cs, 3, (uint32_t)n) < 0) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (int i = 0; i < n; i++) {
        put_s(&r, 0, (uint32_t)i, kv[i].name);
        put_i(&r, 1, (uint32_t)i, kv[i].value);
        put_s(&r, 2, (uint32_t)i, kv[i].desc);
    }
    return rows_source(&r, env, out, err, errlen);
}

static int metrics(srv *s, const eng_scan_env *env, eng_source **out, char *err, size_t errlen)
{
    httpd_stats hs;
    httpd_server_stats(s->http, &hs);
    pthread_mutex_lock(&s->mu);
    int running = s->n_running, sessions = 0, threads = s->n_threads;
    for (srv_session *ss = s->sessions; ss; ss = ss->next)
        sessions++;
    pthread_mutex_unlock(&s->mu);
    kv_row kv[] = {
        {"Query", running, "Number of executing queries"},
        {"HTTPConnection", (int64_t)hs.conns_open, "Number of connections to the HTTP server"},
        {"MemoryTracking", atomic_load(&s->mem.cur),
         "Bytes the running queries hold (max_server_memory_usage counts these)"},
        {"PageCacheBytes", s->conf.page_cache, "Bytes of RAM the page cache may hold"},
        {"HTTPSessions", sessions, "Sessions (session_id) alive"},
        {"QueryThreads", threads, "Threads that run queries"},
        {"Uptime", (int64_t)(srv_now() - s->t_start), "Seconds since the server started"},
    };
    return kv_table("metric", kv, (int)(sizeof(kv) / sizeof(kv[0])), env, out, err, errlen);
}

static int events(srv *s, const eng_scan_env *env, eng_source **out, char *err, size_t errlen)
{
    rc_stats st;
    srv_cache_stats(s, &st);
    int b = s->m_base;
    uint64_t runs = 0, fails = 0;
    srv_pool_stats(s->bg, &runs, &fails);
    kv_row kv[] = {
        {"Query", (int64_t)met_get(s->met, b + SRV_M_QUERIES), "Queries run"},
        {"SelectQuery", (int64_t)met_get(s->met, b + SRV_M_SELECTS), "Queries with a result"},
        {"InsertQuery", (int64_t)met_get(s->met, b + SRV_M_INSERTS), "INSERT queries"},
        {"FailedQuery", (int64_t)met_get(s->met, b + SRV_M_FAILED), "Queries that failed"},
        {"CancelledQuery", (int64_t)met_get(s->met, b + SRV_M_CANCELLED),
         "Queries cancelled (client gone, KILL QUERY, max_execution_time)"},
        {"RejectedQuery", (int64_t)met_get(s->met, b + SRV_M_REJECTED),
         "Queries refused over max_concurrent_queries"},
        {"SelectedRows", (int64_t)met_get(s->met, b + SRV_M_READ_ROWS), "Rows read"},
        {"SelectedBytes", (int64_t)met_get(s->met, b + SRV_M_READ_BYTES), "Bytes read"},
        {"InsertedRows", (int64_t)met_get(s->met, b + SRV_M_WRITTEN_ROWS), "Rows inserted"},
        {"PageCacheHits", (int64_t)st.hits, "Blocks served from the page cache (RAM)"},
        {"PageCacheMisses", (int64_t)st.misses, "Blocks the page cache had to fetch"},
        {"PageCacheReadBytes", (int64_t)st.bytes, "Bytes returned by the page cache's reads"},
        {"CacheNodeReadBytes", (int64_t)st.node_bytes, "Bytes read from the cache nodes"},
        {"S3ReadBytes", (int64_t)st.s3_bytes,
         "Bytes read from S3 directly (no node could serve them)"},
        {"CacheNodeFailovers", (int64_t)st.failovers,
         "Blocks asked of a next owner after a node failed"},
        {"S3Fallbacks", (int64_t)st.fallbacks, "Block reads that went to S3 directly"},
        {"PageCacheDrops", (int64_t)met_get(s->met, b + SRV_M_CACHE_DROPS),
         "SYSTEM DROP PAGE CACHE"},
        {"BackgroundRuns", (int64_t)runs, "Rounds of background work (merges)"},
        {"BackgroundFailures", (int64_t)fails, "Rounds of background work that failed"},
    };
    return kv_table("event", kv, (int)(sizeof(kv) / sizeof(kv[0])), env, out, err, errlen);
}

/* ---- system.databases and system.tables ------------------------------------------------- */

typedef struct db_list {
    char names[64][128];
    int n;
} db_list;

static void db_add(const char *name, void *arg)
{
    db_list *l = arg;
    if (l->n < 64)
        snprintf(l->names[l->n++], sizeof(l->names[0]), "%s", name);
}

static int databases(srv *s, const eng_scan_env *env, eng_source **out, char *err, size_t errlen)
{
    db_list l = {0};
    db_add("default", &l);
    db_add("system", &l);
    srv_databases(s, db_add, &l);
    static const colspec cs[] = {
        {"name", T_STR}, {"engine", T_STR},      {"data_path", T_STR}, {"metadata_path", T_STR},
        {"uuid", T_STR}, {"engine_full", T_STR}, {"comment", T_STR}};
    rows r;
    if (rows_init(&r, cs, 7, (uint32_t)l.n) < 0) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (int i = 0; i < l.n; i++) {
        const char *engine = strcmp(l.names[i], "system") == 0 ? "Memory" : "Atomic";
        put_s(&r, 0, (uint32_t)i, l.names[i]);
        put_s(&r, 1, (uint32_t)i, engine);
        put_s(&r, 2, (uint32_t)i, strcmp(l.names[i], "system") == 0 ? "" : s->conf.warehouse);
        put_s(&r, 3, (uint32_t)i, "");
        put_s(&r, 4, (uint32_t)i, "00000000-0000-0000-0000-000000000000");
        put_s(&r, 5, (uint32_t)i, engine);
        put_s(&r, 6, (uint32_t)i, "");
    }
    return rows_source(&r, env, out, err, errlen);
}

static const char *const system_names[] = {"databases", "events",    "metrics",   "numbers",
                                           "one",       "processes", "query_log", "settings",
                                           "tables",    "zeros"};

static int tables(const eng_scan_env *env, eng_source **out, char *err, size_t errlen)
{
    static const colspec cs[] = {
        {"database", T_STR}, {"name", T_STR}, {"engine", T_STR}, {"is_temporary", T_U8}};
    int n = (int)(sizeof(system_names) / sizeof(system_names[0]));
    rows r;
    if (rows_init(&r, cs, 4, (uint32_t)n) < 0) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (int i = 0; i < n; i++) {
        put_s(&r, 0, (uint32_t)i, "system");
        put_s(&r, 1, (uint32_t)i, system_names[i]);
        put_s(&r, 2, (uint32_t)i, "SystemTable");
        put_i(&r, 3, (uint32_t)i, 0);
    }
    return rows_source(&r, env, out, err, errlen);
}

int srv_open_table(void *arg, const char *db, const char *name, const eng_scan_env *env,
                   eng_source **out, char *err, size_t errlen)
{
    srv_query *q = arg;
    srv *s = q->s;
    if (strcmp(db, "system") == 0) {
        if (strcmp(name, "query_log") == 0)
            return query_log(s, env, out, err, errlen);
        if (strcmp(name, "processes") == 0)
            return processes(s, env, out, err, errlen);
        if (strcmp(name, "settings") == 0)
            return settings(q, env, out, err, errlen);
        if (strcmp(name, "metrics") == 0)
            return metrics(s, env, out, err, errlen);
        if (strcmp(name, "events") == 0)
            return events(s, env, out, err, errlen);
        if (strcmp(name, "databases") == 0)
            return databases(s, env, out, err, errlen);
        /* system.tables, columns, parts: the warehouse's (the engine's) */
        if (strcmp(name, "tables") == 0 && !s->wh_set)
            return tables(env, out, err, errlen);
        return -ENOENT;
    }
    return -ENOENT; /* the warehouse's tables: the engine's */
}
