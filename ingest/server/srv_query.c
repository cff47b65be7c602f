/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_query.c: a query thread's side of a request (srv_int.h): the text with
 * its {name:Type} parameters substituted; the statements the server answers
 * itself (sql_admin.h: SHOW DATABASES / TABLES / PROCESSLIST and EXISTS as
 * SELECTs over system tables; USE and SET in the session; KILL QUERY; SYSTEM
 * DROP PAGE CACHE); INSERT ... FORMAT (srv_insert.c); everything else through
 * eng_run with the query's own eng_ctx: its settings, its cancel flag, its
 * memory tracker under the server's, the shared cache client, the server's
 * system tables.
 *
 * What the engine writes goes through the writer below into the query's
 * bridge buffer (compressed when the answer is): the loop takes it from
 * there. The writer waits while 4 MiB are queued (the client reads slowly)
 * and fails once the client is gone or the query is cancelled, which stops
 * the engine. Readonly (1, or 2 for a GET) lets only reading statements run.
 */
#include "srv_int.h"

#include "sql_admin.h"

#include <ctype.h>
#include <errno.h>
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define OUT_HIGH (4u << 20)

/* ---- the answer's writer -------------------------------------------------------------- */

static uint64_t commit_at(const srv_query *q)
{
    if (q->set.http_wait_end_of_query)
        return UINT64_MAX;
    return q->set.http_response_buffer_size ? q->set.http_response_buffer_size : 1u << 20;
}

static int query_write(void *arg, const void *buf, size_t len)
{
    srv_query *q = arg;
    pthread_mutex_lock(&q->mu);
    int rc = 0;
    if (q->gone)
        rc = -EPIPE;
    else if (atomic_load(&q->cancel))
        rc = -ECANCELED;
    else if (q->enc)
        rc = srv_zstream_feed(q->enc, buf, len, q->out, true, false);
    else if (evbuffer_add(q->out, buf, len) < 0)
        rc = -ENOMEM;
    if (rc == 0) {
        q->out_total += len;
        if (!q->commit && q->out_total >= commit_at(q))
            q->commit = true;
        if (q->commit)
            srv_query_wake_locked(q);
        while (q->commit && evbuffer_get_length(q->out) > OUT_HIGH && !q->gone &&
               !atomic_load(&q->cancel)) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 200 * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&q->cv, &q->mu, &ts);
        }
        if (q->gone)
            rc = -EPIPE;
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

void srv_query_writer(srv_query *q, eng_writer *w)
{
    *w = (eng_writer){query_write, NULL, q};
}

void srv_query_finish(srv_query *q, int code, const char *msg)
{
    pthread_mutex_lock(&q->mu);
    if (code && q->commit && !q->gone) {
        /* the head is (or will be) 200: the error ends the body, as ClickHouse writes it */
        char text[ENG_MSG_MAX + 256];
        size_t n = srv_exception_text(text, sizeof(text), code, msg);
        if (q->enc)
            srv_zstream_feed(q->enc, text, n, q->out, true, false);
        else
            evbuffer_add(q->out, text, n);
    }
    if (code && !q->commit)
        evbuffer_drain(q->out, evbuffer_get_length(q->out));
    if (q->enc && (q->commit || !code))
        srv_zstream_feed(q->enc, NULL, 0, q->out, false, true);
    q->err_code = code;
    free(q->err_msg);
    q->err_msg = code ? strdup(msg ? msg : "") : NULL;
    q->done = true;
    q->refs--; /* the thread's: the loop holds the last one */
    srv_query_wake_locked(q);
    pthread_mutex_unlock(&q->mu);
}

ssize_t srv_query_read_body(srv_query *q, void *buf, size_t n, char *err, size_t errlen)
{
    pthread_mutex_lock(&q->mu);
    ssize_t got = 0;
    for (;;) {
        size_t have = q->in ? evbuffer_get_length(q->in) : 0;
        if (have) {
            got = (ssize_t)evbuffer_remove(q->in, buf, n);
            if (q->in_paused && have - (size_t)got < (1u << 20))
                srv_query_wake_locked(q);
            break;
        }
        if (atomic_load(&q->cancel)) {
            got = -ECANCELED;
            snprintf(err, errlen, "the query was cancelled");
            break;
        }
        if (q->in_eof) {
            got = q->in_err < 0 ? q->in_err : 0;
            if (got == -EFBIG)
                snprintf(err, errlen, "the request body is larger than max-body-size");
            else if (got < 0)
                snprintf(err, errlen, "the request body is cut or malformed (%s)",
                         strerror((int)-got));
            break;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200 * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&q->cv, &q->mu, &ts);
    }
    pthread_mutex_unlock(&q->mu);
    return got;
}

/* ---- the engine ------------------------------------------------------------------------ */

static int open_sink(void *arg, eng_format fmt, eng_sink **out, char *err, size_t errlen)
{
    srv_query *q = arg;
    eng_writer w;
    srv_query_writer(q, &w);
    int rc = eng_sink_format_create(out, fmt, &w);
    if (rc < 0) {
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    if (!q->set.output_format_write_statistics)
        (*out)->stats = NULL;
    pthread_mutex_lock(&q->mu);
    q->has_output = true;
    q->out_format = fmt;
    if (q->resp_codec != SRV_CODEC_NONE && !q->enc &&
        srv_zstream_create(&q->enc, q->resp_codec, true, (int)q->set.http_zlib_compression_level) <
            0)
        rc = -ENOMEM;
    pthread_mutex_unlock(&q->mu);
    if (rc < 0) {
        eng_sink_destroy(out);
        snprintf(err, errlen, "out of memory");
    }
    return rc;
}

/* SETTINGS of the statement that are the server's. */
static int take_setting(void *arg, const char *name, const char *value, char *err, size_t errlen)
{
    srv_query *q = arg;
    if (!srv_qset_owns(name))
        return -ENOENT;
    uint64_t ro = q->set.readonly;
    q->set.readonly = 0; /* a statement's own SETTINGS are allowed as in ClickHouse */
    int code = srv_qset_apply(&q->set, name, value, err, errlen);
    q->set.readonly = ro;
    if (code)
        return -EINVAL;
    if (strcmp(name, "max_execution_time") == 0)
        atomic_store(&q->deadline_us, q->set.max_execution_time > 0
                                          ? (int64_t)((q->t0 + q->set.max_execution_time) * 1e6)
                                          : 0);
    return 0;
}

/* Why a cancelled query stopped, as ClickHouse says it. */
static int cancelled(srv_query *q, char *err, size_t errlen)
{
    switch (atomic_load(&q->cancel_why)) {
    case SRV_CANCEL_TIMEOUT:
        snprintf(err, errlen, "Timeout exceeded: elapsed %.3f seconds, maximum: %g",
                 srv_now() - q->t0, q->set.max_execution_time);
        return ENG_E_TIMEOUT_EXCEEDED;
    case SRV_CANCEL_SHUTDOWN:
        snprintf(err, errlen, "Query was cancelled: the server is shutting down");
        return ENG_E_QUERY_WAS_CANCELLED;
    case SRV_CANCEL_CLIENT:
        snprintf(err, errlen, "Query was cancelled: the client went away");
        return ENG_E_QUERY_WAS_CANCELLED;
    default: snprintf(err, errlen, "Query was cancelled"); return ENG_E_QUERY_WAS_CANCELLED;
    }
}

/* The INSERT's data (eng_ctx.input_read): the body as it arrives. */
static int64_t input_read(void *arg, void *buf, size_t len)
{
    srv_query *q = arg;
    char e[256];
    ssize_t n = srv_query_read_body(q, buf, len, e, sizeof(e));
    if (n > 0)
        atomic_fetch_add(&q->written_bytes, (uint64_t)n);
    return n;
}

int srv_run_engine(srv_query *q, const char *sql, size_t len, bool input, char *err, size_t errlen)
{
    return srv_run_engine_input(q, sql, len, input ? input_read : NULL, q, err, errlen);
}

static int run_with_clusters(srv_query *q, eng_ctx *ctx, const char *sql, size_t len, char *err,
                             size_t errlen);

int srv_run_engine_input(srv_query *q, const char *sql, size_t len, eng_input_fn read,
                         void *read_arg, char *err, size_t errlen)
{
    srv *s = q->s;
    eng_settings es;
    int code = srv_qset_engine(&q->set, &es, err, errlen);
    if (code)
        return code;
    eng_ctx ctx = {0};
    ctx.open_sink = open_sink;
    ctx.sink_arg = q;
    ctx.format = q->format;
    ctx.max_threads = (int)s->conf.max_threads;
    ctx.settings = &es;
    ctx.setting = take_setting;
    ctx.setting_arg = q;
    ctx.database = q->database;
    ctx.user = q->user;
    ctx.open_table = srv_open_table;
    ctx.table_arg = q;
    ctx.cancel = &q->cancel;
    ctx.mem_parent = &s->mem;
    ctx.live = &q->live;
    ctx.fetch_shelf = s->shelf;
    q->s3io = (srv_s3io){q->cache->rc, &s->s3};
    if (q->cache->rc)
        rc_query_begin(q->cache->rc);
    ctx.list_s3 = srv_s3_list;
    ctx.open_s3 = srv_s3_open;
    ctx.s3_impl = &q->s3io;
    ctx.s3_as = srv_s3_as;
    if (s->wh_set) {
        srv_wh_for(s, q->cache, &q->wh);
        ctx.warehouse = &q->wh;
    }
    ctx.input_read = read;
    ctx.input_arg = read_arg;
    srv_clset *cl = srv_clusters_get(s);
    const dist_clusters *cs = srv_clset_clusters(cl);
    if (cs) {
        ctx.clusters = cs->c;
        ctx.n_clusters = cs->n;
    }
    int rc = run_with_clusters(q, &ctx, sql, len, err, errlen);
    srv_clusters_put(cl);
    return rc;
}

/* The statement with ctx's clusters (held by the caller for the run). */
static int run_with_clusters(srv_query *q, eng_ctx *ctx, const char *sql, size_t len, char *err,
                             size_t errlen)
{
    if (q->dist_unit)
        return srv_dist_run_unit(q, ctx, sql, len, err, errlen);
    eng_result res;
    int rc = -ENOTSUP;
    if (ctx->n_clusters && strcasestr(sql, "s3Cluster")) {
        rc = srv_dist_run_query(q, ctx, sql, len, &res, err, errlen);
        if (rc != -ENOTSUP) {
            atomic_store(&q->result_rows, res.rows_out);
            return rc;
        }
    }
    rc = eng_run(ctx, sql, len, NULL, &res, err, errlen);
    atomic_store(&q->result_rows, res.rows_out);
    atomic_store(&q->written_rows, res.rows_written);
    if (rc == 0)
        return 0;
    if (atomic_load(&q->cancel))
        return cancelled(q, err, errlen);
    return res.code ? res.code : ENG_E_STD_EXCEPTION;
}

/* ---- statement kinds ---------------------------------------------------------------------- */

/* The first word of the text, upper-cased into w. */
static void first_word(const char *t, size_t len, char *w, size_t cap)
{
    size_t i = 0, o = 0;
    for (;;) {
        while (i < len && isspace((unsigned char)t[i]))
            i++;
        if (i + 1 < len && t[i] == '-' && t[i + 1] == '-') {
            while (i < len && t[i] != '\n')
                i++;
            continue;
        }
        if (i + 1 < len && t[i] == '/' && t[i + 1] == '*') {
            i += 2;
            while (i + 1 < len && !(t[i] == '*' && t[i + 1] == '/'))
                i++;
            i += 2;
            continue;
        }
        if (i < len && t[i] == '(') { /* (SELECT ...) */
            i++;
            continue;
        }
        break;
    }
    while (i < len && o + 1 < cap && (isalpha((unsigned char)t[i]) || t[i] == '_'))
        w[o++] = (char)toupper((unsigned char)t[i++]);
    w[o] = 0;
}

/* The kind for system.query_log ("Select", "Insert", ...). */
static void set_kind(srv_query *q, const char *w)
{
    static const struct {
        const char *w, *kind;
    } tab[] = {
        {"SELECT", "Select"},   {"WITH", "Select"},       {"INSERT", "Insert"},
        {"CREATE", "Create"},   {"DROP", "Drop"},         {"ALTER", "Alter"},
        {"SHOW", "Show"},       {"DESCRIBE", "Describe"}, {"DESC", "Describe"},
        {"EXISTS", "Exists"},   {"SET", "Set"},           {"USE", "Use"},
        {"KILL", "KillQuery"},  {"SYSTEM", "System"},     {"OPTIMIZE", "Optimize"},
        {"EXPLAIN", "Explain"},
    };
    const char *kind = "Other";
    for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
        if (strcmp(w, tab[i].w) == 0)
            kind = tab[i].kind;
    /* system.processes reads it under the server's lock */
    pthread_mutex_lock(&q->s->mu);
    snprintf(q->kind, sizeof(q->kind), "%s", kind);
    pthread_mutex_unlock(&q->s->mu);
}

/* Statements that change something: refused in readonly mode. A word that
 * is no statement at all goes on to the parser, which says so. */
static bool writing(const char *w)
{
    static const char *const tab[] = {"INSERT",   "CREATE", "DROP",   "ALTER",  "OPTIMIZE",
                                      "TRUNCATE", "RENAME", "KILL",   "SYSTEM", "DELETE",
                                      "UPDATE",   "ATTACH", "DETACH", "GRANT",  "REVOKE"};
    for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
        if (strcmp(w, tab[i]) == 0)
            return true;
    return false;
}

static int readonly_error(char *err, size_t errlen)
{
    snprintf(err, errlen,
             "Cannot execute query in readonly mode. For queries over HTTP, "
             "method GET implies readonly. You should use method POST for "
             "modifying queries");
    return ENG_E_READONLY;
}

/* A quoted SQL string of s into b. */
static void sql_quote(char *b, size_t cap, const char *s)
{
    size_t o = 0;
    if (cap < 3)
        return;
    b[o++] = '\'';
    for (; *s && o + 3 < cap; s++) {
        if (*s == '\'' || *s == '\\')
            b[o++] = '\\';
        b[o++] = *s;
    }
    b[o++] = '\'';
    b[o] = 0;
}

/* Whether [db.]name opens as a table. */
static bool table_exists(srv_query *q, const char *db, const char *name)
{
    eng_mem mem = {0};
    eng_scan_stats st = {0};
    _Atomic int stop = 0;
    eng_settings es = q->set.eng;
    tb_wh wh;
    if (q->s->wh_set)
        srv_wh_for(q->s, q->cache, &wh);
    eng_scan_env env = {
        &mem,        &es,  NULL, NULL, NULL, &st, &stop, NULL, q->s->wh_set ? &wh : NULL,
        q->database, NULL, NULL, 0,    NULL, 0};
    eng_source *src = NULL;
    char err[ENG_MSG_MAX];
    int rc = -ENOENT;
    if (strcmp(db, "system") == 0)
        rc = eng_system_table_open(name, &env, &src, err, sizeof(err));
    if (rc == -ENOENT)
        rc = srv_open_table(q, db, name, &env, &src, err, sizeof(err));
    if (rc == -ENOENT && q->s->wh_set) {
        eng_table_ref t = {db, name, false, 1, 1};
        rc = eng_source_open_table(&t, &env, &src, err, sizeof(err));
    }
    eng_source_destroy(&src);
    return rc == 0;
}

/* Applies SET's settings to the query and its session. */
static int run_set(srv_query *q, const sql_admin *a, char *err, size_t errlen)
{
    if (q->set.readonly == 1) {
        snprintf(err, errlen, "Cannot modify '%s' setting in readonly mode", a->sets[0].name);
        return ENG_E_READONLY;
    }
    for (int i = 0; i < a->n_sets; i++) {
        int code = srv_qset_apply(&q->set, a->sets[i].name, a->sets[i].value, err, errlen);
        if (code)
            return code;
    }
    if (q->session) {
        pthread_mutex_lock(&q->s->mu);
        q->session->set = q->set;
        if (q->http_method == 1 && q->session->set.readonly == 2)
            q->session->set.readonly = 0; /* GET's readonly is the request's, not the session's */
        q->session->has_set = true;
        pthread_mutex_unlock(&q->s->mu);
    }
    return 0;
}

static int run_kill(srv_query *q, const sql_admin *a, char *err, size_t errlen)
{
    char id[300], sql[700];
    sql_quote(id, sizeof(id), a->query_id);
    snprintf(sql, sizeof(sql),
             "SELECT '%s' AS kill_status, query_id, user, query FROM system.processes WHERE "
             "query_id = %s%s%s",
             a->sync ? "finished" : "waiting", id, a->format[0] ? " FORMAT " : "", a->format);
    /* the rows name what is there now: take them before the kill */
    int code = srv_run_engine(q, sql, strlen(sql), false, err, errlen);
    if (code)
        return code;
    srv_kill(q->s, a->query_id);
    if (a->sync) {
        /* until it has stopped, at most 30 s */
        double until = srv_now() + 30;
        for (;;) {
            bool running = false;
            pthread_mutex_lock(&q->s->mu);
            for (srv_query *r = q->s->running; r; r = r->next)
                running |= r != q && strcmp(r->id, a->query_id) == 0;
            pthread_mutex_unlock(&q->s->mu);
            if (!running || srv_now() > until)
                break;
            struct timespec ts = {0, 10 * 1000000};
            nanosleep(&ts, NULL);
        }
    }
    return 0;
}

/* The statements sql_admin.h names: 0 or a code. */
static int run_admin(srv_query *q, const sql_admin *a, char *err, size_t errlen)
{
    char sql[2048], pat[600] = "", db[300];
    const char *fmt = a->format[0] ? " FORMAT " : "";
    if (a->has_like) {
        char lq[560];
        sql_quote(lq, sizeof(lq), a->like);
        snprintf(pat, sizeof(pat), " AND name LIKE %s", lq);
    }
    switch (a->kind) {
    case SQL_ADMIN_SHOW_DATABASES:
        snprintf(sql, sizeof(sql), "SELECT name FROM system.databases WHERE 1%s ORDER BY name%s%s",
                 pat, fmt, a->format);
        return srv_run_engine(q, sql, strlen(sql), false, err, errlen);
    case SQL_ADMIN_SHOW_TABLES:
        sql_quote(db, sizeof(db), a->db[0] ? a->db : q->database);
        if (!srv_database_exists(q->s, a->db[0] ? a->db : q->database)) {
            snprintf(err, errlen, "Database %s does not exist", a->db[0] ? a->db : q->database);
            return ENG_E_UNKNOWN_DATABASE;
        }
        snprintf(sql, sizeof(sql),
                 "SELECT name FROM system.tables WHERE database = %s%s ORDER BY name%s%s", db, pat,
                 fmt, a->format);
        return srv_run_engine(q, sql, strlen(sql), false, err, errlen);
    case SQL_ADMIN_SHOW_PROCESSLIST:
        snprintf(sql, sizeof(sql), "SELECT * FROM system.processes%s%s", fmt, a->format);
        return srv_run_engine(q, sql, strlen(sql), false, err, errlen);
    case SQL_ADMIN_EXISTS: {
        bool yes = a->exists_database ? srv_database_exists(q->s, a->name)
                                      : table_exists(q, a->db[0] ? a->db : q->database, a->name);
        snprintf(sql, sizeof(sql), "SELECT %s AS result%s%s", yes ? "1" : "0", fmt, a->format);
        return srv_run_engine(q, sql, strlen(sql), false, err, errlen);
    }
    case SQL_ADMIN_USE:
        if (!srv_database_exists(q->s, a->name)) {
            snprintf(err, errlen, "Database %s does not exist", a->name);
            return ENG_E_UNKNOWN_DATABASE;
        }
        pthread_mutex_lock(&q->s->mu); /* system.processes reads q->database */
        snprintf(q->database, sizeof(q->database), "%s", a->name);
        if (q->session)
            snprintf(q->session->database, sizeof(q->session->database), "%s", a->name);
        pthread_mutex_unlock(&q->s->mu);
        return 0;
    case SQL_ADMIN_SET: return run_set(q, a, err, errlen);
    case SQL_ADMIN_KILL_QUERY:
        if (q->set.readonly)
            return readonly_error(err, errlen);
        return run_kill(q, a, err, errlen);
    case SQL_ADMIN_SYSTEM:
        if (q->set.readonly)
            return readonly_error(err, errlen);
        if (strcmp(a->system, "DROP PAGE CACHE") == 0 ||
            strcmp(a->system, "DROP FILESYSTEM CACHE") == 0) {
            char e2[RC_ERR_MAX];
            int rc = srv_cache_drop(q->s, e2, sizeof(e2));
            if (rc < 0) {
                snprintf(err, errlen, "cannot start a new cache client: %.900s", e2);
                return ENG_E_STD_EXCEPTION;
            }
            srv_log(SRV_LOG_INFO, "msg=\"page cache dropped\" query_id=%s", q->id);
            return 0;
        }
        if (strcmp(a->system, "FLUSH LOGS") == 0) {
            /* the warehouse's system.query_log gets the rows so far (none to
             * write without one: the log is in memory) */
            char e2[ENG_MSG_MAX];
            if (srv_qlog_flush(q->s, e2, sizeof(e2)) < 0) {
                snprintf(err, errlen, "cannot flush system.query_log: %.900s", e2);
                return ENG_E_STD_EXCEPTION;
            }
            return 0;
        }
        snprintf(err, errlen,
                 "SYSTEM %s is not supported (this server has SYSTEM DROP PAGE "
                 "CACHE and SYSTEM FLUSH LOGS)",
                 a->system);
        return ENG_E_NOT_IMPLEMENTED;
    default: break;
    }
    snprintf(err, errlen, "unsupported statement");
    return ENG_E_NOT_IMPLEMENTED;
}

/* One statement only, as over ClickHouse's HTTP: 0 or SYNTAX_ERROR. */
static int one_statement(const char *sql, size_t len, char *err, size_t errlen)
{
    sql_stmt **st;
    int n = sql_parse_script(sql, len, &st, err, errlen);
    if (n < 0)
        return n == -ENOMEM ? ENG_E_MEMORY_LIMIT_EXCEEDED : ENG_E_SYNTAX_ERROR;
    sql_script_free(&st, n);
    if (n == 0) {
        snprintf(err, errlen, "Empty query");
        return ENG_E_SYNTAX_ERROR;
    }
    if (n > 1) {
        snprintf(err, errlen,
                 "Syntax error (Multi-statements are not allowed): send one "
                 "statement per request");
        return ENG_E_SYNTAX_ERROR;
    }
    return 0;
}

static int run_text(srv_query *q, char *err, size_t errlen)
{
    char w[32];
    /* INSERT ... FORMAT: the data follows */
    if (q->insert_stream) {
        srv_insert_head h;
        size_t off;
        set_kind(q, "INSERT");
        if (q->set.readonly)
            return readonly_error(err, errlen);
        int rc = srv_insert_parse(q->text, q->text_len, &h, &off, err, errlen);
        if (rc != 1)
            return ENG_E_SYNTAX_ERROR;
        srv_query_started(q);
        return srv_insert_run(q, &h, q->text, q->text_len, err, errlen);
    }
    char *sql = NULL;
    size_t len = 0;
    int code = srv_params_substitute(q->text, q->text_len, &q->params, &sql, &len, err, errlen);
    if (code)
        return code;
    first_word(sql, len, w, sizeof(w));
    set_kind(q, w);
    sql_admin a;
    int ad = sql_admin_parse(sql, len, &a, err, errlen);
    if (ad < 0) {
        free(sql);
        return ENG_E_SYNTAX_ERROR;
    }
    if (ad == 1) {
        srv_query_started(q);
        if (q->set.readonly == 1 && a.kind == SQL_ADMIN_SET) {
            free(sql);
            return readonly_error(err, errlen);
        }
        code = run_admin(q, &a, err, errlen);
        free(sql);
        return code;
    }
    if (q->set.readonly && writing(w)) {
        free(sql);
        return readonly_error(err, errlen);
    }
    if (strcmp(w, "INSERT") == 0) {
        /* INSERT with its data in the query text (a GET, or no body) */
        srv_insert_head h;
        size_t off;
        int rc = srv_insert_parse(sql, len, &h, &off, err, errlen);
        if (rc == 1 && !h.select) {
            pthread_mutex_lock(&q->mu);
            q->in = evbuffer_new();
            if (q->in && off < len)
                evbuffer_add(q->in, sql + off, len - off);
            q->in_eof = true;
            pthread_mutex_unlock(&q->mu);
            srv_query_started(q);
            code = srv_insert_run(q, &h, sql, off, err, errlen);
            free(sql);
            return code;
        }
        if (rc == -EINVAL || rc == -EAGAIN) {
            free(sql);
            return ENG_E_SYNTAX_ERROR;
        }
    }
    code = one_statement(sql, len, err, errlen);
    if (!code) {
        srv_query_started(q);
        code = srv_run_engine(q, sql, len, false, err, errlen);
    }
    free(sql);
    return code;
}

void srv_query_started(srv_query *q)
{
    srv_qlog_add(q->s, q, SRV_QT_START, NULL, 0);
    q->logged_start = true;
}

void srv_query_run(srv_query *q)
{
    char err[ENG_MSG_MAX] = "";
    int code = run_text(q, err, sizeof(err));
    if (code == 0 && atomic_load(&q->cancel))
        code = cancelled(q, err, sizeof(err));
    srv_query_finish(q, code, err);
}
