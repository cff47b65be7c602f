/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_system.c: the server's system tables, each made from the server's
 * state when a query names it (a snapshot: eng_source_rows_create), with
 * ClickHouse's column names (types where the engine has no exact one:
 * ClickHouse's Enum8, IPv6 and Map columns are String here):
 *
 *   system.query_log   the query log ring: QueryStart, QueryFinish,
 *                      ExceptionBeforeStart, ExceptionWhileProcessing rows;
 *                      with --warehouse also flushed (every
 *                      query_log_flush_interval, SYSTEM FLUSH LOGS, at exit)
 *                      into the warehouse's MergeTree table
 *                      system.query_log that the servers of the warehouse
 *                      share: a SELECT reads that table's snapshot and the
 *                      ring's rows not yet flushed, each row once;
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

#include "eng_fetch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    {"server_address", T_STR},
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
#define N_QLOG_COLS ((int)(sizeof(qlog_cols) / sizeof(qlog_cols[0])))

bool srv_qlog_stored(const srv *s)
{
    return s->wh_set && s->conf.query_log_flush;
}

/* "host:port" of this server (server_address). */
static void server_address(srv *s, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s:%d", s->display_name, srv_port(s));
}

/* The rows of the ring (every one, or only those not flushed) into r; *max_seq
 * gets the last one's seq. Caller holds s->mu. */
static int qlog_rows_locked(srv *s, bool unflushed, rows *r, uint64_t *max_seq)
{
    static const char *const types[] = {"", "QueryStart", "QueryFinish", "ExceptionBeforeStart",
                                        "ExceptionWhileProcessing"};
    uint32_t n = 0;
    for (size_t i = 0; i < s->qlog_n; i++)
        n += !unflushed || !s->qlog[(s->qlog_head + i) % s->qlog_cap].flushed;
    if (rows_init(r, qlog_cols, N_QLOG_COLS, n) < 0)
        return -ENOMEM;
    char addr[300];
    server_address(s, addr, sizeof(addr));
    uint32_t i = 0;
    for (size_t j = 0; j < s->qlog_n && !r->oom; j++) {
        const srv_qlog *e = &s->qlog[(s->qlog_head + j) % s->qlog_cap];
        if (unflushed && e->flushed)
            continue;
        if (max_seq)
            *max_seq = e->seq;
        int k = 0;
        put_s(r, k++, i, s->display_name);
        put_s(r, k++, i, addr);
        put_s(r, k++, i, types[e->type]);
        put_i(r, k++, i, e->event_time_us / 1000000 / 86400);
        put_i(r, k++, i, e->event_time_us / 1000000);
        put_i(r, k++, i, e->event_time_us);
        put_i(r, k++, i, e->start_time_us / 1000000);
        put_i(r, k++, i, e->start_time_us);
        put_i(r, k++, i, (int64_t)e->duration_ms);
        put_i(r, k++, i, (int64_t)e->read_rows);
        put_i(r, k++, i, (int64_t)e->read_bytes);
        put_i(r, k++, i, (int64_t)e->written_rows);
        put_i(r, k++, i, (int64_t)e->written_bytes);
        put_i(r, k++, i, (int64_t)e->result_rows);
        put_i(r, k++, i, (int64_t)e->result_bytes);
        put_i(r, k++, i, e->memory_usage);
        put_s(r, k++, i, e->database);
        put_s(r, k++, i, e->query);
        put_s(r, k++, i, e->kind);
        put_i(r, k++, i, e->exception_code);
        put_s(r, k++, i, e->exception_code ? e->exception : "");
        put_i(r, k++, i, e->initial);
        put_s(r, k++, i, e->user);
        put_s(r, k++, i, e->query_id);
        put_s(r, k++, i, e->address);
        put_s(r, k++, i, e->initial_query_id);
        put_i(r, k++, i, 2);
        put_i(r, k++, i, e->http_method);
        put_s(r, k++, i, e->settings);
        put_s(r, k++, i, e->log_comment);
        put_s(r, k++, i, e->cluster_shares ? e->cluster_shares : "");
        i++;
    }
    return 0;
}

/* The warehouse's system.query_log (a) followed by the rows in memory (b):
 * one source whose units are a's then b's. b's columns are a's first ones
 * (a may add virtual columns after them), so a plan's columns are the same
 * in both. */
typedef struct cat_source {
    eng_source base; /* b's schema, borrowed */
    eng_source *a, *b;
    int na;
} cat_source;

struct eng_reader {
    eng_reader *ra, *rb;
};

static int cat_plan(eng_source *s, const eng_plan *p, char *err, size_t errlen)
{
    cat_source *c = (cat_source *)s;
    int na = c->a->ops->plan(c->a, p, err, errlen);
    if (na < 0)
        return na;
    int nb = c->b->ops->plan(c->b, p, err, errlen);
    if (nb < 0)
        return nb;
    c->na = na;
    return na + nb;
}

static int cat_reader_create(eng_source *s, eng_reader **out)
{
    cat_source *c = (cat_source *)s;
    eng_reader *r = calloc(1, sizeof(*r));
    int rc = r ? c->a->ops->reader_create(c->a, &r->ra) : -ENOMEM;
    if (rc == 0)
        rc = c->b->ops->reader_create(c->b, &r->rb);
    if (rc < 0 && r) {
        if (r->ra)
            c->a->ops->reader_destroy(c->a, r->ra);
        free(r);
        r = NULL;
    }
    *out = r;
    return rc;
}

static void cat_reader_destroy(eng_source *s, eng_reader *r)
{
    cat_source *c = (cat_source *)s;
    if (!r)
        return;
    c->a->ops->reader_destroy(c->a, r->ra);
    c->b->ops->reader_destroy(c->b, r->rb);
    free(r);
}

static void cat_start(eng_source *s)
{
    cat_source *c = (cat_source *)s;
    c->a->ops->start(c->a);
    c->b->ops->start(c->b);
}

static int cat_read(eng_source *s, eng_reader *r, int u, eng_scan_fn fn, void *arg, char *err,
                    size_t errlen)
{
    cat_source *c = (cat_source *)s;
    if (u < c->na)
        return c->a->ops->read(c->a, r->ra, u, fn, arg, err, errlen);
    return c->b->ops->read(c->b, r->rb, u - c->na, fn, arg, err, errlen);
}

static void cat_stop(eng_source *s)
{
    cat_source *c = (cat_source *)s;
    c->a->ops->stop(c->a);
    c->b->ops->stop(c->b);
}

static void cat_finish(eng_source *s)
{
    cat_source *c = (cat_source *)s;
    c->a->ops->finish(c->a);
    c->b->ops->finish(c->b);
}

static void cat_destroy(eng_source *s)
{
    cat_source *c = (cat_source *)s;
    eng_source_destroy(&c->a);
    eng_source_destroy(&c->b);
    free(c);
}

static const eng_source_ops cat_ops = {
    .plan = cat_plan,
    .reader_create = cat_reader_create,
    .reader_destroy = cat_reader_destroy,
    .start = cat_start,
    .read = cat_read,
    .stop = cat_stop,
    .finish = cat_finish,
    .destroy = cat_destroy,
};

/* The first of b's columns that a's columns do not begin with (name and
 * type), or -1 when they all match. */
static int other_column(const eng_schema *a, const eng_schema *b)
{
    for (int k = 0; k < b->n; k++) {
        const eng_col *m = &b->cols[k];
        const eng_col *t = k < a->n ? &a->cols[k] : NULL;
        if (!t || t->virt || strcmp(t->name, m->name) != 0 || t->t.kind != m->t.kind ||
            t->t.nullable != m->t.nullable || t->t.scale != m->t.scale ||
            (ex_is_num(m->t.kind) && t->t.bits != m->t.bits))
            return k;
    }
    return -1;
}

/* a's rows then b's as one source (both taken, also on failure). 0, -ENOMEM,
 * or -EINVAL when a's columns do not begin with b's (*bad: which). */
static int cat_create(eng_source *a, eng_source *b, eng_source **out, int *bad)
{
    *out = NULL;
    *bad = other_column(&a->schema, &b->schema);
    cat_source *c = *bad < 0 ? calloc(1, sizeof(*c)) : NULL;
    if (!c) {
        eng_source_destroy(&a);
        eng_source_destroy(&b);
        return *bad < 0 ? -ENOMEM : -EINVAL;
    }
    c->base.ops = &cat_ops;
    c->base.schema = b->schema;
    c->base.files = a->files;
    c->a = a;
    c->b = b;
    *out = &c->base;
    return 0;
}

static int query_log(srv *s, const eng_scan_env *env, eng_source **out, char *err, size_t errlen)
{
    rows r;
    if (!srv_qlog_stored(s) || !env->wh) {
        pthread_mutex_lock(&s->mu);
        int rc = qlog_rows_locked(s, false, &r, NULL);
        pthread_mutex_unlock(&s->mu);
        if (rc < 0) {
            snprintf(err, errlen, "out of memory");
            return rc;
        }
        return rows_source(&r, env, out, err, errlen);
    }
    /* The table's snapshot and the rows not yet in it, with no flush
     * committing in between (srv_qlog_flush waits for opening == 0): each
     * row once. A flush in progress is waited for. */
    pthread_mutex_lock(&s->mu);
    while (s->qlog_committing)
        pthread_cond_wait(&s->qlog_cv, &s->mu);
    s->qlog_opening++;
    pthread_mutex_unlock(&s->mu);
    eng_source *tab = NULL;
    eng_table_ref t = {"system", "query_log", false, 1, 1};
    char e2[ENG_MSG_MAX] = "";
    int rc = eng_source_open_wh_table(&t, env, &tab, e2, sizeof(e2));
    if (rc == -ENOENT) /* not flushed yet */
        rc = 0;
    pthread_mutex_lock(&s->mu);
    int rr = qlog_rows_locked(s, true, &r, NULL);
    s->qlog_opening--;
    pthread_cond_broadcast(&s->qlog_cv);
    pthread_mutex_unlock(&s->mu);
    if (rc < 0 || rr < 0) {
        if (rr == 0)
            rows_free(&r);
        eng_source_destroy(&tab);
        if (rc < 0)
            snprintf(err, errlen, "reading system.query_log from the warehouse: %s", e2);
        else
            snprintf(err, errlen, "out of memory");
        return rc < 0 ? rc : rr;
    }
    eng_source *mem = NULL;
    if ((rc = rows_source(&r, env, &mem, err, errlen)) < 0) {
        eng_source_destroy(&tab);
        return rc;
    }
    if (!tab) {
        *out = mem;
        return 0;
    }
    int bad;
    rc = cat_create(tab, mem, out, &bad);
    if (rc == -EINVAL)
        snprintf(err, errlen,
                 "the warehouse's system.query_log does not have this server's columns "
                 "(column %d should be %s): a server of another version made it; move it "
                 "away (its folder system/query_log/ under the warehouse) or run the "
                 "server with --no-query-log-flush",
                 bad + 1, qlog_cols[bad].name);
    else if (rc < 0)
        snprintf(err, errlen, "out of memory");
    return rc;
}

/* ---- flushing system.query_log into the warehouse --------------------------------------- */

/* ClickHouse's name of a column type of qlog_cols. */
static const char *sql_type(const ex_type *t)
{
    switch (t->kind) {
    case EX_STRING: return "String";
    case EX_DATE: return "Date";
    case EX_DATETIME: return t->scale ? "DateTime64(6)" : "DateTime";
    case EX_INT: return t->bits == 32 ? "Int32" : "Int64";
    case EX_UINT: return t->bits == 8 ? "UInt8" : t->bits == 16 ? "UInt16" : "UInt64";
    default: return "String";
    }
}

/* The flush's FROM: the batch of rows (taken by the source, once). */
typedef struct flush_batch {
    rows r;
    bool taken;
} flush_batch;

static int flush_open(void *arg, const char *db, const char *name, const eng_scan_env *env,
                      eng_source **out, char *err, size_t errlen)
{
    flush_batch *b = arg;
    if (!b || strcmp(db, "system") != 0 || strcmp(name, "query_log_batch") != 0 || b->taken)
        return -ENOENT;
    b->taken = true;
    return rows_source(&b->r, env, out, err, errlen);
}

/* Runs one statement of the flush with the server's warehouse. */
static int flush_run(srv *s, flush_batch *b, const char *sql, char *err, size_t errlen)
{
    srv_cache *c = srv_cache_get(s);
    srv_s3io io = {c->rc, &s->s3};
    tb_wh wh;
    srv_wh_for(s, c, &wh);
    eng_ctx ctx = {0};
    ctx.format = ENG_FMT_NULL;
    ctx.max_threads = 1;
    ctx.list_s3 = srv_s3_list;
    ctx.open_s3 = srv_s3_open;
    ctx.s3_impl = &io;
    ctx.mem_parent = &s->mem;
    ctx.warehouse = &wh;
    ctx.system_writable = true;
    ctx.open_table = flush_open;
    ctx.table_arg = b;
    FILE *devnull = fopen("/dev/null", "w");
    ctx.out = devnull;
    int rc = devnull ? eng_run(&ctx, sql, strlen(sql), NULL, NULL, err, errlen) : -errno;
    if (!devnull)
        snprintf(err, errlen, "cannot open /dev/null: %s", strerror(errno));
    else
        fclose(devnull);
    srv_cache_put(s, c);
    return rc;
}

static int flush_create(srv *s, char *err, size_t errlen)
{
    char sql[4096];
    size_t o = (size_t)snprintf(sql, sizeof(sql), "CREATE TABLE IF NOT EXISTS system.query_log (");
    for (int k = 0; k < N_QLOG_COLS; k++)
        o += (size_t)snprintf(sql + o, sizeof(sql) - o, "%s`%s` %s", k ? ", " : "",
                              qlog_cols[k].name, sql_type(&qlog_cols[k].t));
    snprintf(sql + o, sizeof(sql) - o,
             ") ENGINE = MergeTree PARTITION BY toYYYYMM(event_date) "
             "ORDER BY (event_date, event_time)");
    int rc = flush_run(s, NULL, sql, err, errlen);
    if (rc < 0 && strstr(err, "already exists"))
        rc = 0; /* another server made it at the same moment */
    return rc;
}

int srv_qlog_flush(srv *s, char *err, size_t errlen)
{
    if (!srv_qlog_stored(s))
        return 0;
    pthread_mutex_lock(&s->qlog_flush_mu);
    flush_batch b = {0};
    uint64_t max_seq = 0, lost;
    pthread_mutex_lock(&s->mu);
    int rc = qlog_rows_locked(s, true, &b.r, &max_seq);
    lost = s->qlog_lost;
    s->qlog_lost = 0;
    pthread_mutex_unlock(&s->mu);
    if (rc < 0) {
        pthread_mutex_unlock(&s->qlog_flush_mu);
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    srv_count(s, SRV_M_QLOG_LOST, lost);
    if (lost)
        srv_log(SRV_LOG_WARN,
                "msg=\"system.query_log lost rows before they were flushed (the flushes failed or "
                "fell behind; raise --query-log-size)\" rows=%llu",
                (unsigned long long)lost);
    if (b.r.n == 0) {
        rows_free(&b.r);
        pthread_mutex_unlock(&s->qlog_flush_mu);
        return 0;
    }
    if (!s->qlog_table_ready && (rc = flush_create(s, err, errlen)) == 0)
        s->qlog_table_ready = true;
    if (rc == 0) {
        pthread_mutex_lock(&s->mu);
        while (s->qlog_opening > 0)
            pthread_cond_wait(&s->qlog_cv, &s->mu);
        s->qlog_committing = true;
        pthread_mutex_unlock(&s->mu);
        rc = flush_run(s, &b, "INSERT INTO system.query_log SELECT * FROM system.query_log_batch",
                       err, errlen);
        pthread_mutex_lock(&s->mu);
        s->qlog_committing = false;
        /* every unflushed row up to max_seq was in the batch */
        for (size_t i = 0; rc == 0 && i < s->qlog_n; i++) {
            srv_qlog *e = &s->qlog[(s->qlog_head + i) % s->qlog_cap];
            if (e->seq <= max_seq)
                e->flushed = true;
        }
        pthread_cond_broadcast(&s->qlog_cv);
        pthread_mutex_unlock(&s->mu);
        if (rc == -ENOENT) /* dropped behind our back: made again next time */
            s->qlog_table_ready = false;
    }
    srv_count(s, rc == 0 ? SRV_M_QLOG_FLUSHED : SRV_M_QLOG_FLUSH_FAILURES, rc == 0 ? b.r.n : 1);
    if (!b.taken)
        rows_free(&b.r);
    pthread_mutex_unlock(&s->qlog_flush_mu);
    return rc;
}

static void *flusher(void *arg)
{
    srv *s = arg;
    uint64_t fails = 0; /* in a row: logged at the 1st, 2nd, 4th, 8th, ... */
    pthread_mutex_lock(&s->mu);
    while (!s->qlog_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = ts.tv_nsec + (s->conf.query_log_flush_interval_ms % 1000) * 1000000;
        ts.tv_sec += s->conf.query_log_flush_interval_ms / 1000 + ns / 1000000000;
        ts.tv_nsec = ns % 1000000000;
        while (!s->qlog_stop && pthread_cond_timedwait(&s->qlog_cv, &s->mu, &ts) == 0) {
        }
        if (s->qlog_stop)
            break;
        pthread_mutex_unlock(&s->mu);
        char err[ENG_MSG_MAX] = "";
        if (srv_qlog_flush(s, err, sizeof(err)) < 0) {
            fails++;
            if ((fails & (fails - 1)) == 0) {
                char q[1200];
                srv_log_quote(q, sizeof(q), err, strlen(err));
                srv_log(SRV_LOG_WARN,
                        "msg=\"cannot flush system.query_log into the warehouse (its rows stay in "
                        "memory and the next flush tries again; logged again at twice as many "
                        "failures in a row)\" failures=%llu error=%s",
                        (unsigned long long)fails, q);
            }
        } else if (fails) {
            srv_log(SRV_LOG_INFO,
                    "msg=\"system.query_log is flushed into the warehouse again\" "
                    "failed_flushes=%llu",
                    (unsigned long long)fails);
            fails = 0;
        }
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int srv_qlog_flusher_start(srv *s)
{
    s->qlog_stop = false;
    int rc = pthread_create(&s->qlog_thread, NULL, flusher, s);
    if (rc != 0)
        return -rc;
    s->qlog_thread_on = true;
    return 0;
}

void srv_qlog_flusher_stop(srv *s)
{
    if (!s->qlog_thread_on)
        return;
    pthread_mutex_lock(&s->mu);
    s->qlog_stop = true;
    pthread_cond_broadcast(&s->qlog_cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->qlog_thread, NULL);
    s->qlog_thread_on = false;
    char err[ENG_MSG_MAX] = "";
    if (srv_qlog_flush(s, err, sizeof(err)) < 0) {
        char q[1200];
        srv_log_quote(q, sizeof(q), err, strlen(err));
        srv_log(SRV_LOG_WARN,
                "msg=\"cannot flush system.query_log into the warehouse at exit: its last rows are "
                "lost\" error=%s",
                q);
    }
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
        {"PrefetchShelfBytes", (int64_t)ef_shelf_bytes(s->shelf),
         "Bytes of idle download buffers kept for the next queries (not in MemoryTracking)"},
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

static const char *const system_names[] = {"clusters", "databases", "events",    "metrics",
                                           "numbers",  "one",       "processes", "query_log",
                                           "settings", "tables",    "zeros"};

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

/* The warehouse's system.tables (the engine's) then the system tables, with
 * its columns; the warehouse's system.query_log once it is there. */
static int wh_tables(srv *s, const eng_scan_env *env, eng_source **out, char *err, size_t errlen)
{
    static const colspec cs[] = {{"database", T_STR},
                                 {"name", T_STR},
                                 {"engine", T_STR},
                                 {"is_temporary", T_U8},
                                 {"metadata_modification_time", T_DT},
                                 {"create_table_query", T_STR},
                                 {"partition_key", T_STR},
                                 {"sorting_key", T_STR},
                                 {"primary_key", T_STR},
                                 {"total_rows", T_U64},
                                 {"total_bytes", T_U64}};
    eng_source *wt = NULL;
    eng_table_ref t = {"system", "tables", false, 1, 1};
    int rc = eng_source_open_table(&t, env, &wt, err, errlen);
    if (rc < 0)
        return rc;
    bool stored = false;
    if (srv_qlog_stored(s)) {
        tb_table *qt = NULL;
        char e2[256];
        stored = tb_wh_open(env->wh, "system", "query_log", false, &qt, e2, sizeof(e2)) == 0;
        tb_table_destroy(&qt);
    }
    static const char *const engine_own[] = {"columns", "parts"}; /* the warehouse's */
    int n_sys = (int)(sizeof(system_names) / sizeof(system_names[0]));
    rows r;
    if (rows_init(&r, cs, (int)(sizeof(cs) / sizeof(cs[0])), (uint32_t)(n_sys + 2 - stored)) < 0) {
        eng_source_destroy(&wt);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    uint32_t i = 0;
    for (int k = 0; k < n_sys + 2; k++) {
        const char *nm = k < n_sys ? system_names[k] : engine_own[k - n_sys];
        if (stored && strcmp(nm, "query_log") == 0)
            continue; /* the warehouse's row says it */
        put_s(&r, 0, i, "system");
        put_s(&r, 1, i, nm);
        put_s(&r, 2, i, "SystemTable");
        put_i(&r, 3, i, 0);
        put_i(&r, 4, i, 0);
        for (int c = 5; c < 9; c++)
            put_s(&r, c, i, "");
        put_i(&r, 9, i, 0);
        put_i(&r, 10, i, 0);
        i++;
    }
    eng_source *sys = NULL;
    if ((rc = rows_source(&r, env, &sys, err, errlen)) < 0) {
        eng_source_destroy(&wt);
        return rc;
    }
    int bad;
    rc = cat_create(wt, sys, out, &bad);
    if (rc == -EINVAL)
        snprintf(err, errlen, "system.tables: the warehouse's columns differ at %s", cs[bad].name);
    else if (rc < 0)
        snprintf(err, errlen, "out of memory");
    return rc;
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
        /* system.tables, columns, parts: the warehouse's (the engine's), and
         * system.tables also lists the system tables */
        if (strcmp(name, "tables") == 0)
            return s->wh_set && env->wh ? wh_tables(s, env, out, err, errlen)
                                        : tables(env, out, err, errlen);
        return -ENOENT;
    }
    return -ENOENT; /* the warehouse's tables: the engine's */
}
