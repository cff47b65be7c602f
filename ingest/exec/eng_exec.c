/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_exec.c: runs a statement. The FROM clause's table function opens a
 * source through the registry (source/eng_source.h), which finds the data and
 * its schema; the plan is bound against that schema, then max_threads
 * workers run the source's work units, pulled from an atomic counter. Each
 * unit hands blocks of scan vectors to its worker, which filters them (in
 * slices small enough for the L2 cache) and either folds them into its own
 * aggregation table or appends projected rows to its own result table (cut
 * to the top N by a heap when ORDER BY has a LIMIT). At the end the tables
 * are merged, HAVING / ORDER BY / LIMIT applied, and the rows go to the sink
 * (an output format, sink/eng_sink.h). Without GROUP BY and ORDER BY the
 * rows go to the sink as the workers produce them, in bounded memory.
 */
#include "exec_int.h"

#include <fcntl.h>
#include <strings.h>

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* ---- statement ------------------------------------------------------------------- */

/* The sink of the statement's format: the caller's, or the format's own on
 * the caller's writer (else its FILE). */
static int open_sink(const eng_ctx *ctx, eng_format fmt, eng_sink **out, char *err, size_t errlen)
{
    if (ctx->open_sink)
        return ctx->open_sink(ctx->sink_arg, fmt, out, err, errlen);
    eng_writer w;
    if (ctx->writer)
        w = *ctx->writer;
    else
        eng_writer_stdio(&w, ctx->out);
    int rc = eng_sink_format_create(out, fmt, &w);
    if (rc < 0)
        snprintf(err, errlen, "out of memory");
    return rc;
}

/* INTO OUTFILE ... AND STDOUT: every byte to the file and to the output
 * (arg: the query's tee[2]). */
static int tee_write(void *arg, const void *buf, size_t len)
{
    eng_writer *t = arg;
    int rc = t[0].write(t[0].arg, buf, len);
    return rc < 0 ? rc : t[1].write(t[1].arg, buf, len);
}

static int tee_flush(void *arg)
{
    eng_writer *t = arg;
    int rc = t[0].flush ? t[0].flush(t[0].arg) : 0;
    int rc2 = t[1].flush ? t[1].flush(t[1].arg) : 0;
    return rc < 0 ? rc : rc2;
}

/* The sink of the statement's output: INTO OUTFILE's file (and the output
 * too with AND STDOUT), else open_sink. */
static int open_out_sink(equery *q, eng_format fmt, eng_sink **out, char *err, size_t errlen)
{
    if (!q->outfile)
        return open_sink(q->ctx, fmt, out, err, errlen);
    eng_writer w;
    eng_writer_stdio(&w, q->outfile);
    if (q->outfile_stdout) {
        q->tee[0] = w;
        if (q->ctx->writer)
            q->tee[1] = *q->ctx->writer;
        else
            eng_writer_stdio(&q->tee[1], q->ctx->out);
        w = (eng_writer){tee_write, tee_flush, q->tee};
    }
    int rc = eng_sink_format_create(out, fmt, &w);
    if (rc < 0)
        snprintf(err, errlen, "out of memory");
    return rc;
}

/* The format INTO OUTFILE's name implies when there is no FORMAT clause, as
 * ClickHouse's client infers it (TabSeparated when the name says nothing). */
static eng_format outfile_format(const char *path)
{
    static const struct {
        const char *ext;
        const char *fmt;
    } tab[] = {
        {".tsv", "TabSeparated"}, {".tab", "TabSeparated"},   {".csv", "CSV"},
        {".json", "JSONEachRow"}, {".ndjson", "JSONEachRow"}, {".jsonl", "JSONEachRow"},
        {".parquet", "Parquet"},
    };
    size_t n = strlen(path);
    for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
        size_t k = strlen(tab[i].ext);
        int f;
        if (n > k && strcasecmp(path + n - k, tab[i].ext) == 0 &&
            (f = eng_format_parse(tab[i].fmt)) > 0)
            return (eng_format)f;
    }
    return ENG_FMT_TSV;
}

/* SELECT ... INTO OUTFILE 'path' [AND STDOUT] [APPEND | TRUNCATE]: opens the
 * file (refusing one that exists unless APPEND or TRUNCATE says what to do
 * with it, as ClickHouse does; a file it creates is removed again if the
 * query fails) and picks the format from the name when the
 * statement has no FORMAT. */
static int stmt_outfile(equery *q, const sql_stmt *st, eng_format *ofmt, char *err, size_t errlen)
{
    if (!st->outfile)
        return 0;
    if (!q->ctx->allow_outfile) {
        snprintf(err, errlen,
                 "line %d, column %d: INTO OUTFILE is not allowed here: it writes "
                 "a file where the query runs; run the query with ringcache query, or "
                 "save the answer on your side",
                 st->outfile_line, st->outfile_col);
        return -EPERM;
    }
    if (!st->format)
        *ofmt = outfile_format(st->outfile);
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC;
    flags |= st->outfile_mode == SQL_OUTFILE_APPEND     ? O_APPEND
             : st->outfile_mode == SQL_OUTFILE_TRUNCATE ? O_TRUNC
                                                        : O_EXCL;
    int fd = open(st->outfile, flags, 0644);
    if (fd < 0) {
        int e = errno;
        if (e == EEXIST)
            snprintf(err, errlen,
                     "INTO OUTFILE: the file %s exists: add APPEND or TRUNCATE "
                     "after INTO OUTFILE '%s' to say what to do with it",
                     st->outfile, st->outfile);
        else
            snprintf(err, errlen, "INTO OUTFILE: cannot open %s: %s", st->outfile, strerror(e));
        return -e;
    }
    if (!(q->outfile = fdopen(fd, st->outfile_mode == SQL_OUTFILE_APPEND ? "ab" : "wb"))) {
        close(fd);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    q->outfile_stdout = st->outfile_stdout;
    q->outfile_created = st->outfile_mode != SQL_OUTFILE_APPEND &&
                         st->outfile_mode != SQL_OUTFILE_TRUNCATE;
    return 0;
}

/* Closes INTO OUTFILE's file: 0, or -EIO with the reason when the bytes did
 * not all reach it. */
static int close_outfile(equery *q, const sql_stmt *st, char *err, size_t errlen)
{
    if (!q->outfile)
        return 0;
    int bad = ferror(q->outfile);
    int rc = fclose(q->outfile);
    q->outfile = NULL;
    if (bad || rc != 0) {
        snprintf(err, errlen, "INTO OUTFILE: writing %s failed: %s", st->outfile,
                 strerror(errno ? errno : EIO));
        return -EIO;
    }
    return 0;
}

void eng__query_free(equery *q)
{
    if (q->outfile)
        fclose(q->outfile);
    eng_sink_destroy(&q->out.sink);
    free((void *)q->out.names);
    free((void *)q->out.types);
    free(q->rtypes);
    eng_plan_free(&q->mem, &q->plan);
    eng_source_destroy(&q->src);
    eng_sink_destroy(&q->given_sink);
    eng__scope_free(q);
    eng__memtab_free(&q->mem, &q->keep);
    pthread_mutex_destroy(&q->out_mu);
    eng_fail_deinit(&q->fail);
    free(q);
}

equery *eng__query_create(const eng_ctx *ctx)
{
    equery *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    eng_fail_init(&q->fail);
    pthread_mutex_init(&q->out_mu, NULL);
    q->ctx = ctx;
    q->mem.parent = ctx->mem_parent;
    q->t0 = eng__now_s();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    q->start_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    return q;
}

/* The SETTINGS clause without the settings the caller takes (ctx->setting):
 * a shallow copy of st whose settings array is *kept (free it). */
static int stmt_own_settings(const eng_ctx *ctx, const sql_stmt *st, sql_stmt *copy,
                             sql_setting **kept, char *err, size_t errlen)
{
    *copy = *st;
    *kept = NULL;
    if (!ctx->setting || st->n_settings == 0)
        return 0;
    *kept = calloc((size_t)st->n_settings, sizeof(sql_setting));
    if (!*kept) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    copy->settings = *kept;
    copy->n_settings = 0;
    for (int i = 0; i < st->n_settings; i++) {
        const sql_setting *x = &st->settings[i];
        char val[256];
        const sql_node *v = x->value;
        if (v->kind == SQL_STRING)
            snprintf(val, sizeof(val), "%.*s", (int)v->slen, v->s);
        else if (v->kind == SQL_INT && v->negated)
            snprintf(val, sizeof(val), "%lld", (long long)v->i);
        else if (v->kind == SQL_INT)
            snprintf(val, sizeof(val), "%llu", (unsigned long long)v->u);
        else if (v->kind == SQL_FLOAT)
            snprintf(val, sizeof(val), "%g", v->d);
        else if (v->kind == SQL_BOOL)
            snprintf(val, sizeof(val), "%d", (int)v->i);
        else
            val[0] = 0;
        int rc = ctx->setting(ctx->setting_arg, x->name, val, err, errlen);
        if (rc == -ENOENT)
            copy->settings[copy->n_settings++] = *x;
        else if (rc < 0)
            return rc;
    }
    return 0;
}

/* SETTINGS over the defaults, and the output format. */
int eng__stmt_settings(equery *q, const sql_stmt *st, eng_format *ofmt, char *err, size_t errlen)
{
    const eng_ctx *ctx = q->ctx;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (ctx->settings) {
        q->set = *ctx->settings;
        if (q->set.max_threads <= 0)
            q->set.max_threads = ctx->max_threads;
    } else {
        q->set.max_threads = ctx->max_threads;
        q->set.max_download_threads = 4;
        q->set.max_download_buffer_size = 10ull << 20;
    }
    if (q->set.max_threads <= 0)
        q->set.max_threads = (int)(cores > 0 ? cores : 1);
    sql_stmt own;
    sql_setting *kept;
    int rc = stmt_own_settings(ctx, st, &own, &kept, err, errlen);
    if (rc == 0)
        rc = eng_settings_apply(&own, &q->set, err, errlen);
    free(kept);
    if (rc < 0)
        return rc;
    if (q->set.max_threads <= 0)
        q->set.max_threads = (int)(cores > 0 ? cores : 1);
    q->mem.limit = q->set.max_memory_usage;
    *ofmt = ctx->format ? ctx->format : ENG_FMT_TSV;
    if (st->format) {
        int f = eng_format_parse(st->format);
        if (f < 0) {
            snprintf(err, errlen, "unknown output format '%s' (use %s)", st->format,
                     eng_format_list());
            return -EINVAL;
        }
        *ofmt = (eng_format)f;
    }
    return 0;
}

static int from_source(equery *q, const sql_stmt *st, char *err, size_t errlen);

/* FROM [db.]table: in system, the engine's own tables (one, numbers, zeros),
 * then the caller's (a server's processes, query_log, ...), then the
 * warehouse's (tables, columns, parts); elsewhere the caller's, then the
 * warehouse's tables. */
static int stmt_table(equery *q, const sql_stmt *st, const eng_scan_env *env, char *err,
                      size_t errlen)
{
    const eng_ctx *ctx = q->ctx;
    const char *db = st->table_db ? st->table_db : ctx->database ? ctx->database : "default";
    int rc = -ENOENT;
    if (strcmp(db, "system") == 0)
        rc = eng_system_table_open(st->table, env, &q->src, err, errlen);
    if (rc == -ENOENT && strcmp(db, "system") == 0 && strcasecmp(st->table, "clusters") == 0) {
        /* the clusters the process knows (eng_ctx.clusters), with or without a warehouse */
        eng_table_ref t = {db, st->table, false, st->table_line, st->table_col};
        rc = eng_source_open_table(&t, env, &q->src, err, errlen);
    }
    if (rc == -ENOENT && ctx->open_table)
        rc = ctx->open_table(ctx->table_arg, db, st->table, env, &q->src, err, errlen);
    if (rc == -ENOENT && ctx->warehouse) {
        eng_table_ref t = {db, st->table, st->final, st->table_line, st->table_col};
        rc = eng_source_open_table(&t, env, &q->src, err, errlen);
        if (rc == -ENOENT && (strcmp(db, "system") != 0 || !ctx->open_table))
            return rc; /* the warehouse's sentence */
    }
    if (rc == -ENOENT)
        snprintf(err, errlen, "line %d, column %d: table %s.%s does not exist", st->table_line,
                 st->table_col, db, st->table);
    return rc;
}

/* FROM: the table function's source, or the table's, or a subquery's, or
 * system.one (no FROM), with its schema; each JOIN wraps it in a join source. */
int eng__stmt_source(equery *q, const sql_stmt *st, char *err, size_t errlen)
{
    int rc = from_source(q, st, err, errlen);
    for (int i = 0; rc == 0 && i < st->n_joins; i++)
        rc = eng__join_wrap(q, st, &st->joins[i], err, errlen);
    return rc;
}

static int from_source(equery *q, const sql_stmt *st, char *err, size_t errlen)
{
    const eng_ctx *ctx = q->ctx;
    eng_scan_env env = {&q->mem,   &q->set,       ctx->list_s3,    ctx->open_s3,     ctx->s3_impl,
                        &q->stats, &q->stop,      ctx->s3_as,      ctx->warehouse,   ctx->database,
                        ctx->unit, ctx->clusters, ctx->n_clusters, ctx->fetch_shelf, ctx->n_unit};
    if (!q->scope_here && eng__scope_init(q, st) < 0) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    bool done;
    int rc = eng__compose_source(q, st, &done, err, errlen);
    if (rc < 0 || done)
        return rc;
    if (!st->from_fn && !st->table)
        return eng_system_table_open("one", &env, &q->src, err, errlen);
    if (!st->from_fn)
        return stmt_table(q, st, &env, err, errlen);
    eng_tf_call call = {st->from_fn, st->from_args, st->n_from_args, st->from_line, st->from_col};
    return eng_source_open(&call, &env, &q->src, err, errlen);
}

/* The output's sink and columns (the output owns its arrays; the names are
 * borrowed from the plan or static). */
int eng__stmt_output(equery *q, eng_format fmt, const char *const *names, const ex_type *types,
                     int n_cols, char *err, size_t errlen)
{
    const char **nm = calloc((size_t)n_cols + 1, sizeof(char *));
    ex_type *ty = calloc((size_t)n_cols + 1, sizeof(ex_type));
    q->out.names = nm;
    q->out.types = ty;
    q->out.n_cols = n_cols;
    if (!nm || !ty) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (int k = 0; k < n_cols; k++) {
        nm[k] = names[k];
        ty[k] = types[k];
    }
    if (q->given_sink) {
        q->out.sink = q->given_sink;
        q->given_sink = NULL;
        return 0;
    }
    return open_out_sink(q, fmt, &q->out.sink, err, errlen);
}

int eng__out_strings(equery *q, eng_format fmt, const char *const *names, int n_cols,
                     const char *const *cells, uint32_t n_rows, char *err, size_t errlen)
{
    ex_type *ts = calloc((size_t)n_cols + 1, sizeof(ex_type));
    rtab t = {0};
    int rc = ts ? 0 : -ENOMEM;
    for (int k = 0; k < n_cols && ts; k++)
        ts[k] = (ex_type){.kind = EX_STRING};
    if (rc == 0 &&
        (rtab_init(&q->mem, &t, ts, n_cols) < 0 || rtab_reserve(&q->mem, &t, n_rows) < 0))
        rc = -ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < n_rows; i++) {
        for (int k = 0; k < n_cols; k++) {
            const char *v = cells[(size_t)i * (size_t)n_cols + (size_t)k];
            t.c[k].nulls[t.n] = 0;
            if (ex_vec_str_put(&q->mem, &t.c[k], t.n, v ? v : "", v ? strlen(v) : 0) < 0)
                rc = -ENOMEM;
        }
        t.n++;
    }
    if (rc < 0)
        snprintf(err, errlen, "out of memory");
    if (rc == 0)
        rc = eng__stmt_output(q, fmt, names, ts, n_cols, err, errlen);
    if (rc == 0)
        rc = eng__out_table(&q->out, &t, err, errlen);
    if (rc == 0) {
        eng_sink_stats ss = {eng__now_s() - q->t0, 0, 0};
        rc = eng__out_end(&q->out, &ss, err, errlen);
    }
    rtab_free(&q->mem, &t);
    free(ts);
    return rc;
}

/* DESCRIBE: the source's columns, one row each. */
static int run_describe(equery *q, eng_format fmt, char *err, size_t errlen)
{
    /* name, type, default_type, default_expression, comment, codec_expression, ttl_expression */
    static const char *dn[] = {"name",          "type",
                               "default_type",  "default_expression",
                               "comment",       "codec_expression",
                               "ttl_expression"};
    const eng_schema *schema = &q->src->schema;
    ex_type ts[7];
    for (int k = 0; k < 7; k++)
        ts[k] = (ex_type){.kind = EX_STRING};
    rtab t = {0};
    int rc = 0;
    if (rtab_init(&q->mem, &t, ts, 7) < 0 || rtab_reserve(&q->mem, &t, (uint32_t)schema->n) < 0) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
    }
    for (int i = 0; rc == 0 && i < schema->n; i++) {
        if (schema->cols[i].virt)
            continue;
        if (schema->cols[i].nested) {
            snprintf(err, errlen,
                     "column '%s' is %s, which is not supported yet (the other columns can be "
                     "read: SELECT * EXCEPT (%s))",
                     schema->cols[i].name, schema->cols[i].nested, schema->cols[i].name);
            rc = -ENOTSUP;
            break;
        }
        char tn[256];
        if (q->src->type_names && q->src->type_names[i])
            snprintf(tn, sizeof(tn), "%s", q->src->type_names[i]);
        else
            ex_type_name(&schema->cols[i].t, tn, sizeof(tn));
        const char *dx = q->src->default_exprs ? q->src->default_exprs[i] : NULL;
        const char *vals[7] = {
            schema->cols[i].name, tn, dx ? "DEFAULT" : "", dx ? dx : "", "", "", ""};
        for (int k = 0; k < 7; k++) {
            t.c[k].nulls[t.n] = 0;
            if (ex_vec_str_put(&q->mem, &t.c[k], t.n, vals[k], strlen(vals[k])) < 0)
                rc = -ENOMEM;
        }
        t.n++;
    }
    if (rc == 0)
        rc = eng__stmt_output(q, fmt, dn, ts, 7, err, errlen);
    if (rc == 0)
        rc = eng__out_table(&q->out, &t, err, errlen);
    if (rc == 0) {
        eng_sink_stats ss = {eng__now_s() - q->t0, 0, 0};
        rc = eng__out_end(&q->out, &ss, err, errlen);
    }
    rtab_free(&q->mem, &t);
    return rc;
}

/* SELECT: bind -> the source's units -> execute (workers) -> result -> sink.
 * Without GROUP BY and ORDER BY the rows stream to the sink as the workers
 * produce them (bounded memory however large the result); otherwise the
 * result is finished first: aggregates are merged, ORDER BY with a LIMIT
 * keeps the top rows per worker, ORDER BY without one holds every row. */
int eng__run_select(equery *q, const sql_stmt *st, eng_format fmt, char *err, size_t errlen)
{
    const eng_plan *p = &q->plan;
    eng_bind_env benv = {q->ctx->database, q->ctx->user, q->start_ms, eng__subquery_hook, q};
    int rc = eng_bind_ex(&q->mem, st, &q->src->schema, &benv, &q->plan, err, errlen);
    if (rc < 0)
        return rc;
    q->stage = ENG_STAGE_EXEC;
    rc = q->src->ops->plan(q->src, p, err, errlen);
    if (rc < 0)
        return rc;
    q->n_units = rc;
    int nrc = eng__n_res_cols(p);
    const char **names = calloc((size_t)p->n_outs + 1, sizeof(char *));
    q->rtypes = calloc((size_t)nrc + 1, sizeof(ex_type));
    if (!names || !q->rtypes) {
        free(names);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (int k = 0; k < nrc; k++)
        q->rtypes[k] = k < p->n_outs ? p->outs[k].e->t : p->order[k - p->n_outs].e->t;
    for (int k = 0; k < p->n_outs; k++)
        names[k] = p->outs[k].name;
    rc = eng__stmt_output(q, fmt, names, q->rtypes, p->n_outs, err, errlen);
    free(names);
    if (rc < 0)
        return rc;
    q->stream = !p->aggregate && p->n_order == 0;
    eng__agg_hint_begin(q, st);
    q->out_skip = p->offset > 0 ? (uint64_t)p->offset : 0;
    q->out_left = p->has_limit ? (uint64_t)p->limit : UINT64_MAX;
    worker *ws;
    int nthreads;
    rc = eng__execute(q, &ws, &nthreads, err, errlen);
    if (rc == 0 && !q->stream)
        rc = eng__finish_result(q, ws, nthreads, err, errlen);
    eng__workers_free(q, ws, nthreads);
    if (rc == 0) {
        eng_sink_stats ss = {eng__now_s() - q->t0, atomic_load(&q->stats.rows_read),
                             atomic_load(&q->stats.bytes_read)};
        rc = eng__out_end(&q->out, &ss, err, errlen);
    }
    return rc;
}

/* Copies the statement's counters to ctx->live (the server's watchers). */
void eng__live_update(equery *q)
{
    eng_live *l = q->ctx->live;
    if (!l)
        return;
    atomic_store_explicit(&l->rows_read, atomic_load(&q->stats.rows_read), memory_order_relaxed);
    atomic_store_explicit(&l->bytes_read, atomic_load(&q->stats.bytes_read), memory_order_relaxed);
    pthread_mutex_lock(&q->out_mu);
    uint64_t rows = q->out.rows;
    pthread_mutex_unlock(&q->out_mu);
    atomic_store_explicit(&l->result_rows, rows, memory_order_relaxed);
    atomic_store_explicit(&l->memory, atomic_load(&q->mem.cur), memory_order_relaxed);
    atomic_store_explicit(&l->peak_memory, atomic_load(&q->mem.peak), memory_order_relaxed);
}

/* One statement, parsed: settings -> source -> DESCRIBE or SELECT ->
 * summary. */
static int run_stmt(const eng_ctx *ctx, const sql_stmt *st, FILE *summary, eng_result *res,
                    char *err, size_t errlen)
{
    equery *q = eng__query_create(ctx);
    if (!q) {
        snprintf(err, errlen, "out of memory");
        if (res)
            *res = (eng_result){.code = ENG_E_MEMORY_LIMIT_EXCEEDED};
        return -ENOMEM;
    }
    eng_format ofmt;
    q->stage = ENG_STAGE_SETTINGS;
    int rc = eng__stmt_settings(q, st, &ofmt, err, errlen);
    if (rc == 0)
        rc = stmt_outfile(q, st, &ofmt, err, errlen);
    bool table = rc == 0 && eng__is_table_stmt(st);
    bool expl = rc == 0 && !table && st->kind == SQL_SELECT && st->explain;
    bool uni = rc == 0 && !table && !expl && st->kind == SQL_SELECT && st->union_all;
    bool win = rc == 0 && !table && !uni && !expl && st->kind == SQL_SELECT && eng__has_window(st);
    if (uni && eng__scope_init(q, st) < 0) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
    }
    if (rc == 0 && !table && !uni && !win && !expl) {
        q->stage = ENG_STAGE_SOURCE;
        rc = eng__stmt_source(q, st, err, errlen);
    }
    if (rc == 0 && table) {
        q->stage = ENG_STAGE_EXEC;
        rc = eng__run_table_stmt(q, st, ofmt, err, errlen);
    } else if (rc == 0 && (expl || uni || win)) {
        /* these run their parts as queries of their own (eng_compose.c),
         * which set the stage of a failure */
        q->stage = ENG_STAGE_SOURCE;
        rc = expl  ? eng__run_explain(q, st, ofmt, err, errlen)
             : uni ? eng__run_union(q, st, ofmt, err, errlen)
                   : eng__run_window(q, st, ofmt, err, errlen);
    } else if (rc == 0) {
        q->stage = st->kind == SQL_DESCRIBE ? ENG_STAGE_EXEC : ENG_STAGE_BIND;
        rc = st->kind == SQL_DESCRIBE ? run_describe(q, ofmt, err, errlen)
                                      : eng__run_select(q, st, ofmt, err, errlen);
    }
    if (rc == 0)
        rc = close_outfile(q, st, err, errlen);
    if (rc < 0 && q->outfile_created) {
        /* a file this query made holds no half answer: a failed query
         * leaves no file behind, so running it again needs no TRUNCATE */
        if (q->outfile)
            fclose(q->outfile);
        q->outfile = NULL;
        unlink(st->outfile);
    }
    if (rc < 0 && ctx->cancel && atomic_load(ctx->cancel)) {
        rc = -ECANCELED;
        snprintf(err, errlen, "the query was cancelled");
    }
    eng_result r = {0};
    r.files = q->src ? q->src->files : 0;
    r.rows_out = q->out.rows;
    r.rows_read = atomic_load(&q->stats.rows_read);
    r.bytes_read = atomic_load(&q->stats.bytes_read);
    r.row_groups = atomic_load(&q->stats.units_read);
    r.row_groups_pruned = atomic_load(&q->stats.units_pruned);
    /* the queries run for this one (subqueries, WITH, a join's right side)
     * held their working memory apart; their rows are in q's */
    r.peak_memory = atomic_load(&q->mem.peak) + atomic_load(&q->child_peak);
    r.elapsed_s = eng__now_s() - q->t0;
    r.has_output = q->out.sink != NULL;
    r.rows_written = q->rows_written;
    r.bytes_written = q->bytes_written;
    r.agg_preallocated = q->agg_preallocated;
    if (table && q->rows_written + q->rows_dropped)
        r.rows_read = q->rows_written + q->rows_dropped;
    if (rc < 0)
        r.code = eng_error_classify(q->stage, rc, err);
    eng__live_update(q);
    if (rc == 0 && summary) {
        eng_print_summary(summary, &r);
        if (ctx->summary_more)
            ctx->summary_more(ctx->summary_arg, summary);
    }
    if (res)
        *res = r;
    eng__query_free(q);
    return rc;
}

void eng_tune_malloc(void)
{
    if (!getenv("MALLOC_MMAP_THRESHOLD_"))
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
    if (!getenv("MALLOC_TRIM_THRESHOLD_"))
        mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

int eng_run(const eng_ctx *ctx, const char *sql, size_t len, FILE *summary, eng_result *res,
            char *err, size_t errlen)
{
    sql_stmt **st;
    int n = sql_parse_script(sql, len, &st, err, errlen);
    if (n <= 0 && res)
        *res =
            (eng_result){.code = n == -ENOMEM ? ENG_E_MEMORY_LIMIT_EXCEEDED : ENG_E_SYNTAX_ERROR};
    if (n < 0)
        return n;
    if (n == 0) {
        snprintf(err, errlen,
                 "the query is empty: write a SELECT, INSERT, CREATE TABLE or "
                 "DESCRIBE statement");
        return -EINVAL;
    }
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = run_stmt(ctx, st[i], summary, res, err, errlen);
    sql_script_free(&st, n);
    return rc;
}
