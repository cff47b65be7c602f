/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_table.c: the table statements against the warehouse (eng_ctx's
 * tb_wh): CREATE TABLE [AS SELECT], DROP TABLE, TRUNCATE TABLE, OPTIMIZE
 * TABLE [FINAL] (merges, merge.h), SHOW TABLES, and INSERT INTO t: its rows
 * (a SELECT run with the part sink as its output, VALUES, or FORMAT's data)
 * go through the part sink (sink/eng_part_sink.h), which writes the parts;
 * then they are committed in one log version, their duplicates dropped by
 * their block ids. A failure anywhere before the commit deletes the parts
 * written and commits nothing.
 */
#include "exec_int.h"

#include "eng_part_sink.h"
#include "eng_tdef.h"
#include "eng_text.h"
#include "merge.h"
#include "parquet.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <xxhash.h>

bool eng__is_table_stmt(const sql_stmt *st)
{
    return st->kind == SQL_CREATE_TABLE || st->kind == SQL_DROP_TABLE ||
           st->kind == SQL_TRUNCATE_TABLE || st->kind == SQL_OPTIMIZE_TABLE ||
           st->kind == SQL_INSERT || st->kind == SQL_SHOW_TABLES;
}

static const char *db_of(const equery *q, const sql_stmt *st)
{
    return st->table_db ? st->table_db : q->ctx->database ? q->ctx->database : TB_WH_DEFAULT_DB;
}

static int need_wh(const equery *q, const char *what, char *err, size_t errlen)
{
    if (q->ctx->warehouse)
        return 0;
    snprintf(err, errlen,
             "%s needs a warehouse for its tables: pass --warehouse "
             "s3://bucket/prefix/ (or set RINGCACHE_WAREHOUSE)",
             what);
    return -EINVAL;
}

static int not_system(const char *db, const char *what, char *err, size_t errlen)
{
    if (strcasecmp(db, "system") != 0)
        return 0;
    snprintf(err, errlen, "%s: the system database is read-only", what);
    return -EACCES;
}

/* ---- the partition expression ----------------------------------------------------- */

typedef struct part_expr {
    eng_schema schema; /* the table's columns (engine types) */
    sql_stmt *stmt;    /* SELECT (<expr>) FROM t */
    eng_plan plan;
    eng_mem *mem;
    uint32_t *minmax; /* the schema columns it reads */
    uint32_t n_minmax;
    bool bound;
} part_expr;

static void part_expr_free(part_expr *pe)
{
    if (pe->bound)
        eng_plan_free(pe->mem, &pe->plan);
    sql_stmt_destroy(&pe->stmt);
    eng_schema_free(&pe->schema);
    free(pe->minmax);
    memset(pe, 0, sizeof(*pe));
}

static int part_expr_bind(part_expr *pe, eng_mem *m, const tb_schema *ts, char *err, size_t errlen)
{
    memset(pe, 0, sizeof(*pe));
    pe->mem = m;
    pe->schema.cols = calloc(ts->n_cols + 1, sizeof(eng_col));
    if (!pe->schema.cols)
        return -ENOMEM;
    for (uint32_t i = 0; i < ts->n_cols; i++) {
        pe->schema.cols[i].name = strdup(ts->cols[i].name);
        pe->schema.cols[i].cb = ts->cols[i].info;
        pe->schema.cols[i].t = ex_type_of_column(&ts->cols[i].info, ts->cols[i].nullable);
        pe->schema.n = (int)i + 1;
        if (!pe->schema.cols[i].name)
            return -ENOMEM;
    }
    size_t n = strlen(ts->partition_by) + 32;
    char *sql = malloc(n);
    if (!sql)
        return -ENOMEM;
    snprintf(sql, n, "SELECT (%s) FROM t", ts->partition_by);
    char msg[ENG_MSG_MAX];
    int rc = sql_parse(sql, strlen(sql), &pe->stmt, msg, sizeof(msg));
    free(sql);
    if (rc == 0 && pe->stmt->n_items != 1)
        rc = -EINVAL, snprintf(msg, sizeof(msg), "it is not one expression");
    if (rc == 0 && (rc = eng_bind(m, pe->stmt, &pe->schema, &pe->plan, msg, sizeof(msg))) == 0)
        pe->bound = true;
    if (rc == 0 && pe->plan.aggregate)
        rc = -EINVAL, snprintf(msg, sizeof(msg), "it has an aggregate function");
    if (rc < 0) {
        snprintf(err, errlen, "PARTITION BY %s cannot be used: %s", ts->partition_by, msg);
        return rc;
    }
    pe->minmax = calloc((size_t)pe->plan.n_need + 1, sizeof(uint32_t));
    if (!pe->minmax)
        return -ENOMEM;
    for (int k = 0; k < pe->plan.n_need; k++)
        pe->minmax[k] = (uint32_t)pe->plan.need[k];
    pe->n_minmax = (uint32_t)pe->plan.n_need;
    return 0;
}

/* A partition id of [A-Za-z0-9_-]: the value as ClickHouse writes it (a date
 * as YYYYMMDD), or a hash of it when it has other characters. */
static void partition_id(const ex_vec *v, uint32_t r, char *out, size_t cap)
{
    char buf[128];
    const uint8_t *sp = NULL;
    size_t n;
    if (ex_null(v, r)) {
        snprintf(out, cap, "null");
        return;
    }
    if (v->t.kind == EX_DATE) {
        int64_t y;
        unsigned mo, d;
        ex_civil_from_days(v->i[ex_row(v, r)], &y, &mo, &d);
        snprintf(out, cap, "%04lld%02u%02u", (long long)y, mo, d);
        return;
    }
    if (v->t.kind == EX_DATETIME || v->t.kind == EX_INT || v->t.kind == EX_UINT ||
        v->t.kind == EX_BOOL) {
        if (v->t.kind == EX_UINT)
            snprintf(out, cap, "%llu", (unsigned long long)v->i[ex_row(v, r)]);
        else
            snprintf(out, cap, "%lld", (long long)v->i[ex_row(v, r)]);
        return;
    }
    n = ex_fmt_value(v, r, buf, sizeof(buf), &sp);
    const uint8_t *p = sp ? sp : (const uint8_t *)buf;
    bool plain = n > 0 && n < 64;
    for (size_t i = 0; i < n && plain; i++)
        plain = (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
                (p[i] >= '0' && p[i] <= '9') || p[i] == '_' || p[i] == '-';
    if (plain && n + 1 <= cap) {
        memcpy(out, p, n);
        out[n] = 0;
        return;
    }
    XXH128_hash_t h = XXH3_128bits(p, n);
    snprintf(out, cap, "%016llx%016llx", (unsigned long long)h.high64, (unsigned long long)h.low64);
}

static int partition_cb(void *arg, const cb_batch *b, uint32_t *row_part, char ***ids,
                        uint32_t *n_ids, char *err, size_t errlen)
{
    part_expr *pe = arg;
    const eng_plan *p = &pe->plan;
    *ids = NULL;
    *n_ids = 0;
    ex_vec *in = calloc((size_t)p->n_need + 1, sizeof(ex_vec));
    if (!in)
        return -ENOMEM;
    int rc = 0;
    for (int k = 0; k < p->n_need && rc == 0; k++)
        rc = ex_vec_from_column(pe->mem, b->cols[p->need[k]], &in[k]);
    ex_vec out = {0};
    ex_ectx ec = {pe->mem, err, errlen};
    if (rc == 0)
        rc = bx_eval(&ec, p->outs[0].e, in, NULL, b->n_rows, &out);
    uint32_t cap = 0;
    char prev[TB_NAME_MAX] = "", cur[TB_NAME_MAX];
    uint32_t prev_i = 0;
    for (uint32_t r = 0; rc == 0 && r < b->n_rows; r++) {
        partition_id(&out, r, cur, sizeof(cur));
        if (r > 0 && strcmp(cur, prev) == 0) {
            row_part[r] = prev_i;
            continue;
        }
        uint32_t i = 0;
        while (i < *n_ids && strcmp((*ids)[i], cur) != 0)
            i++;
        if (i == *n_ids) {
            if (*n_ids > 65536) {
                snprintf(err, errlen,
                         "an insert block spans more than 65536 partitions "
                         "(max_partitions_per_insert_block): choose a coarser "
                         "PARTITION BY");
                rc = -EINVAL;
                break;
            }
            if (*n_ids == cap) {
                cap = cap ? cap * 2 : 8;
                char **np = realloc(*ids, cap * sizeof(char *));
                if (!np) {
                    rc = -ENOMEM;
                    break;
                }
                *ids = np;
            }
            if (!((*ids)[*n_ids] = strdup(cur))) {
                rc = -ENOMEM;
                break;
            }
            (*n_ids)++;
        }
        row_part[r] = i;
        prev_i = i;
        memcpy(prev, cur, sizeof(prev));
    }
    ex_vec_clear(pe->mem, &out);
    for (int k = 0; k < p->n_need; k++)
        ex_vec_clear(pe->mem, &in[k]);
    free(in);
    if (rc < 0 && !err[0])
        snprintf(err, errlen, "out of memory computing the partitions");
    return rc;
}

/* ---- CREATE / DROP / TRUNCATE / OPTIMIZE / SHOW ------------------------------------ */

static int run_insert_into(equery *q, const sql_stmt *st, const char *db, const char *name,
                           char *err, size_t errlen);

/* CREATE TABLE ... AS SELECT without columns: the SELECT's names and types. */

/* The SELECT of CREATE TABLE ... AS and INSERT ... SELECT: one SELECT
 * (subqueries, WITH and joins inside are fine). */
static int table_select_supported(const sql_stmt *sel, char *err, size_t errlen)
{
    if (sel->union_all) {
        snprintf(err, errlen,
                 "line %d, column %d: UNION ALL is not supported in INSERT ... "
                 "SELECT or CREATE TABLE ... AS SELECT: insert each SELECT on its own, "
                 "or wrap them: SELECT * FROM (... UNION ALL ...)",
                 sel->union_all->line, sel->union_all->col);
        return -EINVAL;
    }
    if (eng__has_window(sel) || sel->explain) {
        snprintf(err, errlen,
                 "line %d, column %d: %s is not supported in INSERT ... SELECT or "
                 "CREATE TABLE ... AS SELECT: wrap the SELECT, SELECT * FROM (...)",
                 sel->line, sel->col, sel->explain ? "EXPLAIN" : "a window function");
        return -EINVAL;
    }
    return 0;
}
static int ctas_columns(equery *q, const sql_stmt *st, const char *db, eng_tdef *def, char *err,
                        size_t errlen)
{
    const sql_stmt *sel = st->create->as_select;
    equery *q2 = eng__query_create(q->ctx);
    if (!q2) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    eng_format fmt;
    int rc = eng__stmt_settings(q2, sel, &fmt, err, errlen);
    if (rc == 0)
        rc = table_select_supported(sel, err, errlen);
    if (rc == 0)
        rc = eng__stmt_source(q2, sel, err, errlen);
    if (rc == 0)
        rc = eng_bind(&q2->mem, sel, &q2->src->schema, &q2->plan, err, errlen);
    int n = rc == 0 ? q2->plan.n_outs : 0;
    sql_column_def *cols = calloc((size_t)n + 1, sizeof(sql_column_def));
    char(*types)[64] = calloc((size_t)n + 1, 64);
    if (rc == 0 && (!cols || !types))
        rc = -ENOMEM;
    for (int k = 0; rc == 0 && k < n; k++) {
        ex_type t = q2->plan.outs[k].e->t;
        if (t.kind == EX_NOTHING)
            t = (ex_type){.kind = EX_STRING, .nullable = true};
        if (t.kind == EX_DATETIME && t.scale != 0 && t.scale != 3 && t.scale != 6 && t.scale != 9)
            t.scale = 9;
        ex_type_name(&t, types[k], 64);
        cols[k] = (sql_column_def){
            .name = q2->plan.outs[k].name, .type = types[k], .line = sel->line, .col = sel->col};
    }
    if (rc == 0) {
        sql_table_def d2 = *st->create;
        d2.cols = cols;
        d2.n_cols = n;
        sql_stmt s2 = *st;
        s2.create = &d2;
        rc = eng_tdef_from_create(&s2, db, def, err, errlen);
    }
    free(cols);
    free(types);
    eng__query_free(q2);
    return rc;
}

static int run_create(equery *q, const sql_stmt *st, char *err, size_t errlen)
{
    const char *db = db_of(q, st);
    int rc = need_wh(q, "CREATE TABLE", err, errlen);
    if (rc == 0 && !q->ctx->system_writable)
        rc = not_system(db, "CREATE TABLE", err, errlen);
    if (rc < 0)
        return rc;
    eng_tdef def;
    if (st->create->as_select && st->create->n_cols == 0)
        rc = ctas_columns(q, st, db, &def, err, errlen);
    else
        rc = eng_tdef_from_create(st, db, &def, err, errlen);
    if (rc < 0)
        return rc;
    if ((rc = eng__default_check(&q->mem, &def, err, errlen)) < 0) {
        eng_tdef_free(&def);
        return rc;
    }
    if (def.schema.partition_by) {
        part_expr pe;
        rc = part_expr_bind(&pe, &q->mem, &def.schema, err, errlen);
        part_expr_free(&pe);
        if (rc < 0) {
            eng_tdef_free(&def);
            return rc;
        }
    }
    char root[700];
    if ((rc = tb_wh_root(q->ctx->warehouse, db, st->table, root, sizeof(root), err, errlen)) < 0) {
        eng_tdef_free(&def);
        return rc;
    }
    tb_table_opts o;
    tb_wh_opts(q->ctx->warehouse, root, true, &o);
    char msg[ENG_MSG_MAX];
    rc = tb_table_create(&o, &def.schema, msg, sizeof(msg));
    eng_tdef_free(&def);
    if (rc == -EEXIST) {
        if (st->if_not_exists)
            return 0;
        snprintf(err, errlen,
                 "table %s.%s already exists (TABLE_ALREADY_EXISTS): drop it "
                 "first, or write CREATE TABLE IF NOT EXISTS",
                 db, st->table);
        return rc;
    }
    if (rc < 0) {
        snprintf(err, errlen, "cannot create table %s.%s: %s", db, st->table, msg);
        return rc;
    }
    if (st->create->as_select)
        return run_insert_into(q, st, db, st->table, err, errlen);
    return 0;
}

static int run_drop(equery *q, const sql_stmt *st, char *err, size_t errlen)
{
    const char *db = db_of(q, st);
    int rc = need_wh(q, "DROP TABLE", err, errlen);
    if (rc == 0)
        rc = not_system(db, "DROP TABLE", err, errlen);
    if (rc == 0)
        rc = tb_wh_drop(q->ctx->warehouse, db, st->table, err, errlen);
    if (rc == -ENOENT && st->if_exists)
        return 0;
    return rc;
}

static int run_truncate(equery *q, const sql_stmt *st, char *err, size_t errlen)
{
    const char *db = db_of(q, st);
    int rc = need_wh(q, "TRUNCATE TABLE", err, errlen);
    if (rc == 0)
        rc = not_system(db, "TRUNCATE TABLE", err, errlen);
    if (rc < 0)
        return rc;
    tb_table *t;
    rc = tb_wh_open(q->ctx->warehouse, db, st->table, true, &t, err, errlen);
    if (rc == -ENOENT && st->if_exists)
        return 0;
    if (rc < 0)
        return rc;
    tb_commit c = {.kind = TB_COMMIT_TRUNCATE};
    rc = tb_commit_run(t, &c, NULL, err, errlen);
    tb_table_destroy(&t);
    return rc;
}

static int run_optimize(equery *q, const sql_stmt *st, char *err, size_t errlen)
{
    const char *db = db_of(q, st);
    int rc = need_wh(q, "OPTIMIZE TABLE", err, errlen);
    if (rc == 0)
        rc = not_system(db, "OPTIMIZE TABLE", err, errlen);
    if (rc < 0)
        return rc;
    tb_table *t;
    if ((rc = tb_wh_open(q->ctx->warehouse, db, st->table, true, &t, err, errlen)) < 0)
        return rc;
    tb_snapshot *snap = NULL;
    eng_tdef def;
    rc = tb_table_snapshot(t, &snap, err, errlen);
    if (rc == 0)
        rc = eng_tdef_from_schema(&snap->schema, &def, err, errlen);
    tb_snapshot_destroy(&snap);
    if (rc < 0) {
        tb_table_destroy(&t);
        return rc;
    }
    tm_settings ms;
    tm_settings_init(&ms);
    ms.max_parts_to_merge = (uint32_t)def.set.max_parts_to_merge_at_once;
    ms.max_bytes_to_merge = def.set.max_bytes_to_merge_at_max_space_in_pool;
    eng_tdef_free(&def);
    int stale = 0;
    for (int round = 0; round < 100000; round++) {
        tm_result res;
        rc = tm_run(t, &ms, st->optimize_final, &res, err, errlen);
        if (rc == -ESTALE && ++stale < 5)
            continue; /* a racing merge took an input: select again */
        if (rc < 0 || !res.merged || !st->optimize_final)
            break;
    }
    tb_table_destroy(&t);
    return rc;
}

/* SQL LIKE with % and _ (no escapes). */
static bool like(const char *s, const char *p)
{
    if (!*p)
        return !*s;
    if (*p == '%') {
        for (const char *x = s;; x++) {
            if (like(x, p + 1))
                return true;
            if (!*x)
                return false;
        }
    }
    return *s && (*p == '_' || *p == *s) && like(s + 1, p + 1);
}

typedef struct names_acc {
    char **v;
    uint32_t n, cap;
    const char *like;
} names_acc;

static int name_cb(const char *db, const char *table, void *arg)
{
    (void)db;
    names_acc *a = arg;
    if (a->like && !like(table, a->like))
        return 0;
    if (a->n == a->cap) {
        uint32_t cap = a->cap ? a->cap * 2 : 16;
        char **p = realloc(a->v, cap * sizeof(char *));
        if (!p)
            return -ENOMEM;
        a->v = p;
        a->cap = cap;
    }
    if (!(a->v[a->n] = strdup(table)))
        return -ENOMEM;
    a->n++;
    return 0;
}

static int run_show_tables(equery *q, const sql_stmt *st, eng_format fmt, char *err, size_t errlen)
{
    const char *db = st->table_db       ? st->table_db
                     : q->ctx->database ? q->ctx->database
                                        : TB_WH_DEFAULT_DB;
    names_acc a = {.like = st->like};
    int rc = 0;
    if (strcasecmp(db, "system") == 0) {
        static const char *sys[] = {"columns", "parts", "tables"};
        for (int i = 0; i < 3 && rc == 0; i++)
            rc = name_cb(db, sys[i], &a);
    } else if (q->ctx->warehouse) {
        rc = tb_wh_list(q->ctx->warehouse, db, name_cb, &a, err, errlen);
    }
    static const char *names[] = {"name"};
    if (rc == 0)
        rc = eng__out_strings(q, fmt, names, 1, (const char *const *)a.v, a.n, err, errlen);
    else if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    for (uint32_t i = 0; i < a.n; i++)
        free(a.v[i]);
    free(a.v);
    return rc;
}

/* ---- INSERT ------------------------------------------------------------------------- */

typedef struct insert_job {
    equery *q;
    const char *db, *name;
    tb_table *t;
    tb_snapshot *snap;
    eng_tdef def;
    bool have_def;
    part_expr pe;
    bool have_pe;
    eng_insert_settings is;
    int *col_of;       /* per table column: its input column, or -1 */
    int n_in;          /* input columns */
    uint32_t *in_cols; /* per input column: its table column */
    eng_sink *sink;
    eng_sink *part; /* the part sink inside sink when DEFAULTs fill columns, else NULL */
    int *col_of2;   /* the part sink's column map then */
    eng_mem *mem;   /* the tracker the sink charges */
    char *utok;     /* a distributed INSERT's unit: its block ids' token */
} insert_job;

static void ij_free(insert_job *j)
{
    eng_sink_destroy(&j->sink);
    if (j->have_pe)
        part_expr_free(&j->pe);
    if (j->have_def)
        eng_tdef_free(&j->def);
    tb_snapshot_destroy(&j->snap);
    tb_table_destroy(&j->t);
    free(j->col_of);
    free(j->col_of2);
    free(j->in_cols);
    free(j->utok);
}

/* The part sink of what the INSERT writes to. */
static eng_sink *part_of(const insert_job *j, eng_sink *s)
{
    return j->part && s ? j->part : s;
}

/* The columns an INSERT gives: its list, or every column. */
static int map_columns(insert_job *j, const sql_insert *in, char *err, size_t errlen)
{
    const tb_schema *ts = &j->def.schema;
    j->col_of = calloc(ts->n_cols + 1, sizeof(int));
    int visible = 0; /* the declared columns: key expressions' are filled, never given */
    for (uint32_t i = 0; i < ts->n_cols; i++)
        visible += !eng_tdef_hidden(ts->cols[i].name);
    int n = in && in->n_cols ? in->n_cols : visible;
    j->in_cols = calloc((size_t)n + 1, sizeof(uint32_t));
    if (!j->col_of || !j->in_cols)
        return -ENOMEM;
    for (uint32_t i = 0, k = 0; i < ts->n_cols; i++) {
        bool implicit = !(in && in->n_cols) && !eng_tdef_hidden(ts->cols[i].name);
        j->col_of[i] = implicit ? (int)k : -1;
        if (implicit)
            j->in_cols[k++] = i;
    }
    j->n_in = n;
    for (int k = 0; k < n; k++) {
        if (!(in && in->n_cols))
            continue;
        int found = -1;
        for (uint32_t i = 0; i < ts->n_cols; i++)
            if (strcmp(ts->cols[i].name, in->cols[k]) == 0 && !eng_tdef_hidden(ts->cols[i].name))
                found = (int)i;
        if (found < 0) {
            const char **names = calloc(ts->n_cols + 1, sizeof(char *));
            for (uint32_t i = 0; names && i < ts->n_cols; i++)
                names[i] = ts->cols[i].name;
            const char *sg = names ? eng_suggest(in->cols[k], names, (int)ts->n_cols) : NULL;
            snprintf(err, errlen, "table %s.%s has no column %s (NO_SUCH_COLUMN_IN_TABLE)%s%s%s",
                     j->db, j->name, in->cols[k], sg ? ": did you mean " : "", sg ? sg : "",
                     sg ? "?" : "");
            free(names);
            return -EINVAL;
        }
        if (j->col_of[found] >= 0) {
            snprintf(err, errlen, "column %s is listed twice in the INSERT", in->cols[k]);
            return -EINVAL;
        }
        j->col_of[found] = k;
        j->in_cols[k] = (uint32_t)found;
    }
    return 0;
}

/* TOO_MANY_PARTS: refuse past parts_to_throw_insert, delay past
 * parts_to_delay_insert (as ClickHouse does, up to max_delay_to_insert). */
static int parts_check(insert_job *j, char *err, size_t errlen)
{
    const tb_snapshot *s = j->snap;
    size_t best = 0;
    uint64_t bytes = 0;
    for (size_t i = 0; i < s->n_parts;) {
        size_t k = i;
        uint64_t b = 0;
        while (k < s->n_parts && !strcmp(s->parts[k].partition, s->parts[i].partition))
            b += s->parts[k++].bytes;
        if (k - i > best) {
            best = k - i;
            bytes = b;
        }
        i = k;
    }
    const eng_insert_settings *is = &j->is;
    if (is->parts_to_throw_insert && best >= is->parts_to_throw_insert) {
        double avg = best ? (double)bytes / (double)best / 1048576.0 : 0;
        snprintf(err, errlen,
                 "Too many parts (%zu with average size of %.2f MiB) in table '%s.%s'. Merges "
                 "are processing significantly slower than inserts (TOO_MANY_PARTS): run "
                 "OPTIMIZE TABLE %s, insert bigger blocks (min_insert_block_size_rows / _bytes), "
                 "or raise parts_to_throw_insert",
                 best, avg, j->db, j->name, j->name);
        return -EAGAIN;
    }
    if (is->parts_to_delay_insert && best >= is->parts_to_delay_insert &&
        is->parts_to_throw_insert > is->parts_to_delay_insert) {
        double frac = (double)(best - is->parts_to_delay_insert + 1) /
                      (double)(is->parts_to_throw_insert - is->parts_to_delay_insert);
        double ms = 1000.0 * (double)is->max_delay_to_insert * (frac > 1 ? 1 : frac);
        struct timespec ts = {(time_t)(ms / 1000), (long)((int64_t)ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static int ij_open(insert_job *j, equery *q, const sql_stmt *st, const char *db, const char *name,
                   char *err, size_t errlen)
{
    memset(j, 0, sizeof(*j));
    j->q = q;
    j->db = db;
    j->name = name;
    j->mem = &q->mem;
    int rc = need_wh(q, "INSERT", err, errlen);
    if (rc == 0 && !q->ctx->system_writable)
        rc = not_system(db, "INSERT", err, errlen);
    if (rc == 0)
        rc = tb_wh_open(q->ctx->warehouse, db, name, true, &j->t, err, errlen);
    if (rc == 0)
        rc = tb_table_snapshot(j->t, &j->snap, err, errlen);
    if (rc == 0 && (rc = eng_tdef_from_schema(&j->snap->schema, &j->def, err, errlen)) == 0)
        j->have_def = true;
    if (rc < 0)
        return rc;
    rc = eng_insert_settings_apply(st, &j->def.set, &j->is, err, errlen);
    const sql_stmt *inner = st->kind == SQL_INSERT && st->insert->select ? st->insert->select
                            : st->kind == SQL_CREATE_TABLE               ? st->create->as_select
                                                                         : NULL;
    if (rc == 0 && inner) {
        eng_insert_settings outer = j->is;
        rc = eng_insert_settings_apply(inner, &j->def.set, &j->is, err, errlen);
        /* the INSERT's own SETTINGS (before SELECT) stand unless the SELECT's name them */
        for (int i = 0; rc == 0 && i < st->n_settings; i++)
            if (eng_insert_setting_known(st->settings[i].name)) {
                bool again = false;
                for (int k = 0; k < inner->n_settings; k++)
                    again |= !strcmp(inner->settings[k].name, st->settings[i].name);
                if (!again) {
                    j->is = outer;
                    rc = eng_insert_settings_apply(inner, &j->def.set, &j->is, err, errlen);
                    break;
                }
            }
    }
    if (rc == 0 && j->def.schema.partition_by &&
        (rc = part_expr_bind(&j->pe, j->mem, &j->def.schema, err, errlen)) == 0)
        j->have_pe = true;
    if (rc == 0)
        rc = parts_check(j, err, errlen);
    if (rc == 0)
        rc = map_columns(j, st->kind == SQL_INSERT ? st->insert : NULL, err, errlen);
    return rc;
}

static int ij_sink(insert_job *j, eng_mem *mem, char *err, size_t errlen)
{
    j->mem = mem;
    if (j->have_pe)
        j->pe.mem = mem;
    const tb_schema *ts = &j->def.schema;
    bool replacing = ts->engine && !strcmp(ts->engine, "ReplacingMergeTree");
    const eng_ctx *ctx = j->q->ctx;
    if (ctx->unit_name && !j->utok) {
        const char *base = j->is.insert_deduplication_token[0] ? j->is.insert_deduplication_token
                           : ctx->unit_query                   ? ctx->unit_query
                                                               : "";
        size_t n = strlen(base) + strlen(ctx->unit_name) + 2;
        if (!(j->utok = malloc(n))) {
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        snprintf(j->utok, n, "%s/%s", base, ctx->unit_name);
    }
    int n_in2 = j->n_in;
    bool dflt = false;
    free(j->col_of2);
    j->col_of2 = NULL;
    j->part = NULL;
    if (eng__default_map(&j->def, j->col_of, j->n_in, &j->col_of2, &n_in2, &dflt) < 0) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    eng_part_sink_opts o = {.table = j->t,
                            .schema = ts,
                            .fixed = j->def.fixed,
                            .date16 = j->def.date16,
                            .types = (const char *const *)j->def.types,
                            .col_of = dflt ? j->col_of2 : j->col_of,
                            .n_in = dflt ? n_in2 : j->n_in,
                            .mem = mem,
                            .min_rows = j->is.min_insert_block_size_rows,
                            .min_bytes = j->is.min_insert_block_size_bytes,
                            .threads = j->is.max_insert_threads,
                            .max_uploads = j->is.max_insert_delayed_streams_for_parallel_write,
                            .replacing = replacing && j->is.optimize_on_insert,
                            .dedup = j->is.insert_deduplicate,
                            .token = j->utok ? j->utok : j->is.insert_deduplication_token,
                            .partition = j->have_pe ? partition_cb : NULL,
                            .partition_arg = &j->pe,
                            .minmax_cols = j->have_pe ? j->pe.minmax : NULL,
                            .n_minmax = j->have_pe ? j->pe.n_minmax : 0,
                            .table_name = j->name,
                            .db_name = j->db};
    int rc = eng_part_sink_create(&j->sink, &o, err, errlen);
    if (rc < 0 || !dflt)
        return rc;
    eng_sink *ds;
    if (eng__default_sink_create(&ds, j->sink, mem, &j->def, j->col_of, j->n_in, j->col_of2,
                                 n_in2) < 0) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM; /* j->sink is still the part sink: ij_free destroys it */
    }
    j->part = j->sink;
    j->sink = ds;
    return 0;
}

/* Commits what the sink wrote (after its end): one version, duplicates dropped. */
static int ij_commit(insert_job *j, eng_sink *sink, char *err, size_t errlen)
{
    sink = part_of(j, sink);
    const tb_part_add *adds;
    size_t n;
    eng_part_sink_parts(sink, &adds, &n);
    j->q->rows_written = eng_part_sink_rows(sink);
    if (n == 0)
        return 0;
    uint8_t *dup = calloc(n + 1, 1);
    if (!dup) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    tb_commit c = {.kind = TB_COMMIT_INSERT,
                   .add = adds,
                   .n_add = n,
                   .dup_out = dup,
                   .whole = j->utok && j->is.insert_deduplicate};
    tb_commit_result res;
    int rc = tb_commit_run(j->t, &c, &res, err, errlen);
    if (rc == 0) {
        /* a block dropped as a duplicate is not written (ClickHouse's
         * written_rows of a deduplicated insert is 0) */
        for (size_t i = 0; i < n; i++) {
            if (!dup[i]) {
                j->q->bytes_written += adds[i].uncompressed_bytes;
                continue;
            }
            uint64_t r = adds[i].rows < j->q->rows_written ? adds[i].rows : j->q->rows_written;
            j->q->rows_written -= r;
            j->q->rows_dropped += r;
        }
        eng_part_sink_discard(sink, j->t, dup); /* the duplicates' objects */
    }
    free(dup);
    return rc;
}

/* The data of INSERT ... FORMAT: after the statement, else the caller's. */
static int insert_data(equery *q, const sql_insert *in, const char **data, size_t *len,
                       char **owned, char *err, size_t errlen)
{
    *owned = NULL;
    if (in->data_len) {
        *data = in->data;
        *len = in->data_len;
        return 0;
    }
    const eng_ctx *ctx = q->ctx;
    if (ctx->input) {
        *data = ctx->input;
        *len = ctx->input_len;
        return 0;
    }
    if (!ctx->input_read) {
        *data = "";
        *len = 0;
        return 0;
    }
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    for (;;) {
        if (!b) {
            snprintf(err, errlen, "out of memory reading the INSERT's data");
            return -ENOMEM;
        }
        if (n == cap) {
            if (!em_account(&q->mem, (int64_t)cap)) {
                free(b);
                em_error(&q->mem, err, errlen);
                return -ENOMEM;
            }
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                b = NULL;
                continue;
            }
            b = nb;
            cap *= 2;
        }
        int64_t got = ctx->input_read(ctx->input_arg, b + n, cap - n);
        if (got < 0) {
            free(b);
            snprintf(err, errlen, "cannot read the INSERT's data: %s", strerror((int)-got));
            return (int)got;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    *owned = b;
    *data = b;
    *len = n;
    return 0;
}

typedef struct feed_arg {
    eng_sink *sink;
    eng_mem *mem;
    char *err;
    size_t errlen;
} feed_arg;

/* tx_parse's batches to the sink (the vectors are ours to clear). */
static int feed_text(ex_vec *cols, int ncols, uint32_t nrows, void *arg)
{
    feed_arg *f = arg;
    eng_block b = {cols, ncols, nrows};
    int rc = f->sink->ops->write(f->sink, &b, f->err, f->errlen);
    for (int k = 0; k < ncols; k++)
        ex_vec_clear(f->mem, &cols[k]);
    return rc;
}

static int sink_begin(insert_job *j, const ex_type *types, char *err, size_t errlen)
{
    const char **names = calloc((size_t)j->n_in + 1, sizeof(char *));
    if (!names)
        return -ENOMEM;
    for (int k = 0; k < j->n_in; k++)
        names[k] = j->def.schema.cols[j->in_cols[k]].name;
    int rc = j->sink->ops->begin(j->sink, names, types, j->n_in, err, errlen);
    free(names);
    return rc;
}

/* *WithNames without a column list: the header's columns, by name. */
static int header_columns(insert_job *j, char delim, const char *data, size_t len, char *err,
                          size_t errlen)
{
    sql_insert li = {0};
    char *names[TP_MAX_COLUMNS];
    int n = 0, rc = 0;
    size_t i = 0;
    while (i <= len && n < TP_MAX_COLUMNS && rc == 0) {
        char buf[256];
        size_t o = 0;
        bool q = i < len && data[i] == '"' && delim == ',';
        if (q)
            i++;
        for (; i < len; i++) {
            char c = data[i];
            if (q && c == '"') {
                if (i + 1 < len && data[i + 1] == '"') {
                    i++;
                } else {
                    q = false;
                    continue;
                }
            } else if (!q && (c == delim || c == '\n' || c == '\r')) {
                break;
            }
            if (o + 1 < sizeof(buf))
                buf[o++] = c;
        }
        buf[o] = 0;
        if (!(names[n] = strdup(buf)))
            rc = -ENOMEM;
        else
            n++;
        if (i >= len || data[i] != delim)
            break;
        i++;
    }
    if (rc == 0) {
        li.cols = names;
        li.n_cols = n;
        free(j->col_of);
        free(j->in_cols);
        j->col_of = NULL;
        j->in_cols = NULL;
        rc = map_columns(j, &li, err, errlen);
    }
    for (int k = 0; k < n; k++)
        free(names[k]);
    return rc;
}

/* INSERT ... FORMAT <text format or Parquet>. */
static int insert_format(insert_job *j, const sql_insert *in, int fmt, const char *data, size_t len,
                         char *err, size_t errlen)
{
    equery *q = j->q;
    int rc = 0;
    const tb_schema *ts = &j->def.schema;
    ex_type *types = calloc((size_t)j->n_in + 1, sizeof(ex_type));
    eng_schema sc = {.cols = calloc((size_t)j->n_in + 1, sizeof(eng_col)), .n = j->n_in};
    sc.mark_absent = true; /* JSONEachRow: the DEFAULT of a Nullable column it leaves out */
    int *want = calloc((size_t)j->n_in + 1, sizeof(int));
    rc = types && sc.cols && want ? 0 : -ENOMEM;
    for (int k = 0; k < j->n_in && rc == 0; k++) {
        const tp_column_def *c = &ts->cols[j->in_cols[k]];
        /* text values as strings: the sink converts them, naming column and row */
        types[k] = (ex_type){.kind = EX_STRING, .nullable = true};
        char cn[16];
        snprintf(cn, sizeof(cn), "c%d", k + 1);
        bool named = fmt != TX_CSV && fmt != TX_TSV;
        sc.cols[k].name = strdup(named ? c->name : cn);
        sc.cols[k].t = types[k];
        sc.cols[k].cb = c->info;
        want[k] = k;
        if (!sc.cols[k].name)
            rc = -ENOMEM;
    }
    char name[300];
    snprintf(name, sizeof(name), "the INSERT's %s data", in->format);
    if (rc == 0 && fmt != 0 && (rc = sink_begin(j, types, err, errlen)) == 0) {
        feed_arg fa = {j->sink, &q->mem, err, errlen};
        rc = tx_parse(&q->mem, (tx_format)fmt, name, data, len, &sc, want, j->n_in, 65536,
                      feed_text, &fa, err, errlen);
    }
    if (rc == 0 && fmt == 0) {
        /* Parquet: columns by name */
        rs_source *src = NULL;
        pq_file *pf = NULL;
        int *colmap = calloc((size_t)j->n_in + 1, sizeof(int));
        rc = colmap ? tp_mem_source_create(&src, data, len, name) : -ENOMEM;
        if (rc == 0)
            rc = pq_file_open(&pf, src, NULL, err, errlen);
        for (int k = 0; rc == 0 && k < j->n_in; k++) {
            const char *cn = ts->cols[j->in_cols[k]].name;
            int i = pq_file_find_column(pf, cn);
            if (i < 0) {
                snprintf(err, errlen,
                         "column %s of table %s.%s is missing from the Parquet "
                         "data (NO_SUCH_COLUMN_IN_TABLE)",
                         cn, j->db, j->name);
                rc = -EINVAL;
                break;
            }
            colmap[k] = i;
            const pq_column_info *ci = pq_file_column(pf, i);
            types[k] = ex_type_of_column(&ci->type, ci->nullable);
        }
        if (rc == 0)
            rc = sink_begin(j, types, err, errlen);
        pq_reader *pr = NULL;
        if (rc == 0) {
            pq_read_opts o;
            pq_read_opts_init(&o);
            o.columns = colmap;
            o.n_columns = (size_t)j->n_in;
            rc = pq_reader_create(&pr, pf, &o, err, errlen);
        }
        cb_batch *bt = NULL;
        while (rc == 0 && (rc = pq_reader_next(pr, &bt)) == 1) {
            ex_vec *v = calloc(bt->n_cols + 1, sizeof(ex_vec));
            rc = v ? 0 : -ENOMEM;
            for (uint32_t k = 0; k < bt->n_cols && rc == 0; k++)
                rc = ex_vec_from_column(&q->mem, bt->cols[k], &v[k]);
            if (rc == 0) {
                eng_block b = {v, (int)bt->n_cols, bt->n_rows};
                rc = j->sink->ops->write(j->sink, &b, err, errlen);
            }
            for (uint32_t k = 0; v && k < bt->n_cols; k++)
                ex_vec_clear(&q->mem, &v[k]);
            free(v);
            cb_batch_destroy(&bt);
        }
        if (rc < 0 && pr && !err[0])
            snprintf(err, errlen, "%s", pq_reader_error(pr));
        pq_reader_destroy(&pr);
        pq_file_destroy(&pf);
        rs_destroy(&src);
        free(colmap);
    }
    if (rc == 0)
        rc = j->sink->ops->end(j->sink, err, errlen);
    free(types);
    free(want);
    eng_schema_free(&sc);
    return rc;
}

/* A VALUES expression's text: literals as written, others evaluated. */
static int value_text(equery *q, const sql_node *e, char *buf, size_t cap, const char **out,
                      size_t *len, bool *null, char *err, size_t errlen)
{
    *null = false;
    bool neg = e->kind == SQL_UNARY && e->op == SQL_OP_NEG && e->args[0]->kind != SQL_UNARY;
    const sql_node *x = neg ? e->args[0] : e;
    switch (x->kind) {
    case SQL_NULL:
        *null = true;
        *out = "";
        *len = 0;
        return 0;
    case SQL_STRING:
        if (neg)
            break;
        *out = x->s;
        *len = x->slen;
        return 0;
    case SQL_INT:
        if (x->negated) /* a negative literal: i holds it */
            *len = (size_t)snprintf(buf, cap, "%lld", neg ? -(long long)x->i : (long long)x->i);
        else
            *len = (size_t)snprintf(buf, cap, "%s%llu", neg ? "-" : "", (unsigned long long)x->u);
        *out = buf;
        return 0;
    case SQL_FLOAT:
        *len = (size_t)snprintf(buf, cap, "%.17g", neg ? -x->d : x->d);
        *out = buf;
        return 0;
    case SQL_BOOL:
        if (neg)
            break;
        *out = x->i ? "true" : "false";
        *len = strlen(*out);
        return 0;
    default: break;
    }
    /* an expression: SELECT it */
    sql_stmt st = {.kind = SQL_SELECT};
    sql_select_item it = {.expr = (sql_node *)e};
    st.items = &it;
    st.n_items = 1;
    eng_schema none = {0};
    eng_plan p;
    int rc = eng_bind(&q->mem, &st, &none, &p, err, errlen);
    if (rc < 0)
        return rc;
    ex_vec v = {0};
    ex_ectx ec = {&q->mem, err, errlen};
    rc = bx_eval(&ec, p.outs[0].e, NULL, NULL, 1, &v);
    if (rc == 0) {
        if (ex_null(&v, 0)) {
            *null = true;
            *out = "";
            *len = 0;
        } else {
            const uint8_t *sp = NULL;
            *len = ex_fmt_value(&v, 0, buf, cap, &sp);
            if (sp) {
                if (*len >= cap)
                    *len = cap - 1;
                memmove(buf, sp, *len);
            }
            *out = buf;
        }
    }
    ex_vec_clear(&q->mem, &v);
    eng_plan_free(&q->mem, &p);
    return rc;
}

static int insert_values(insert_job *j, const sql_insert *in, char *err, size_t errlen)
{
    equery *q = j->q;
    if (in->width != j->n_in) {
        snprintf(err, errlen,
                 "VALUES has %d values per row but the INSERT takes %d columns "
                 "(NUMBER_OF_COLUMNS_DOESNT_MATCH)",
                 in->width, j->n_in);
        return -EINVAL;
    }
    ex_type *types = calloc((size_t)j->n_in + 1, sizeof(ex_type));
    if (!types)
        return -ENOMEM;
    for (int k = 0; k < j->n_in; k++)
        types[k] = (ex_type){.kind = EX_STRING, .nullable = true};
    int rc = sink_begin(j, types, err, errlen);
    const uint32_t chunk = 65536;
    ex_vec *v = calloc((size_t)j->n_in + 1, sizeof(ex_vec));
    if (!v)
        rc = -ENOMEM;
    for (int r0 = 0; rc == 0 && r0 < in->n_rows; r0 += (int)chunk) {
        uint32_t n = (uint32_t)(in->n_rows - r0) < chunk ? (uint32_t)(in->n_rows - r0) : chunk;
        for (int k = 0; k < j->n_in && rc == 0; k++)
            rc = ex_vec_alloc(&q->mem, &v[k], types[k], n);
        for (uint32_t r = 0; r < n && rc == 0; r++)
            for (int k = 0; k < j->n_in && rc == 0; k++) {
                char buf[256];
                const char *s;
                size_t len;
                bool null;
                rc =
                    value_text(q, in->values[(size_t)(r0 + (int)r) * (size_t)in->width + (size_t)k],
                               buf, sizeof(buf), &s, &len, &null, err, errlen);
                if (rc == 0) {
                    v[k].nulls[r] = null;
                    rc = ex_vec_str_put(&q->mem, &v[k], r, s, len);
                }
            }
        if (rc == 0) {
            eng_block b = {v, j->n_in, n};
            rc = j->sink->ops->write(j->sink, &b, err, errlen);
        }
        for (int k = 0; k < j->n_in; k++)
            ex_vec_clear(&q->mem, &v[k]);
    }
    free(v);
    free(types);
    if (rc == -ENOMEM && !err[0])
        snprintf(err, errlen, "out of memory");
    if (rc == 0)
        rc = j->sink->ops->end(j->sink, err, errlen);
    return rc;
}

/* INSERT ... SELECT (and CREATE TABLE ... AS SELECT): the SELECT runs as a
 * query of its own, its result going to the part sink. */
static int insert_select(insert_job *j, const sql_stmt *outer, const sql_stmt *sel, char *err,
                         size_t errlen)
{
    equery *q2 = eng__query_create(j->q->ctx);
    if (!q2) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    eng_format fmt;
    int rc = eng__stmt_settings(q2, sel, &fmt, err, errlen);
    if (rc == 0 && outer->n_settings) {
        rc = eng_settings_apply(outer, &q2->set, err, errlen);
        q2->mem.limit = q2->set.max_memory_usage;
    }
    if (rc == 0)
        rc = table_select_supported(sel, err, errlen);
    if (rc == 0)
        rc = eng__stmt_source(q2, sel, err, errlen);
    if (rc == 0)
        rc = ij_sink(j, &q2->mem, err, errlen);
    eng_sink *sink = j->sink;
    if (rc == 0) {
        q2->given_sink = j->sink;
        j->sink = NULL;
        rc = eng__run_select(q2, sel, fmt, err, errlen);
    }
    if (q2->out.sink)
        sink = q2->out.sink;
    if (rc == 0 && !q2->out.begun) {
        /* no rows: the sink still ends */
    }
    if (rc == 0)
        rc = ij_commit(j, sink, err, errlen);
    if (rc < 0 && sink)
        eng_part_sink_discard(part_of(j, sink), j->t, NULL);
    j->q->mem.peak = j->q->mem.peak > q2->mem.peak ? j->q->mem.peak : atomic_load(&q2->mem.peak);
    j->q->stats.rows_read = atomic_load(&q2->stats.rows_read);
    j->q->stats.bytes_read = atomic_load(&q2->stats.bytes_read);
    eng__query_free(q2);
    return rc;
}

static int run_insert_into(equery *q, const sql_stmt *st, const char *db, const char *name,
                           char *err, size_t errlen)
{
    insert_job j;
    int rc = ij_open(&j, q, st, db, name, err, errlen);
    const sql_stmt *sel = st->kind == SQL_CREATE_TABLE ? st->create->as_select : st->insert->select;
    if (rc == 0 && sel) {
        rc = insert_select(&j, st, sel, err, errlen);
    } else if (rc == 0) {
        const sql_insert *in = st->insert;
        const char *data = "";
        size_t len = 0;
        char *owned = NULL;
        int fmt = in->format ? tx_format_of_arg(in->format) : 0;
        if (in->format && fmt < 0) {
            snprintf(err, errlen,
                     "unknown input format '%s' (use JSONEachRow, CSV, "
                     "CSVWithNames, TSV, TabSeparatedWithNames or Parquet)",
                     in->format);
            rc = -EINVAL;
        }
        if (rc == 0 && in->format)
            rc = insert_data(q, in, &data, &len, &owned, err, errlen);
        if (rc == 0 && in->format && (fmt == TX_CSV_NAMES || fmt == TX_TSV_NAMES) && !in->n_cols)
            rc = header_columns(&j, fmt == TX_CSV_NAMES ? ',' : '\t', data, len, err, errlen);
        if (rc == 0)
            rc = ij_sink(&j, &q->mem, err, errlen);
        if (rc == 0)
            rc = in->format ? insert_format(&j, in, fmt, data, len, err, errlen)
                            : insert_values(&j, in, err, errlen);
        free(owned);
        if (rc == 0)
            rc = ij_commit(&j, j.sink, err, errlen);
        if (rc < 0 && j.sink)
            eng_part_sink_discard(part_of(&j, j.sink), j.t, NULL);
    }
    ij_free(&j);
    if (rc == -ENOMEM && strstr(err, "memory limit") && !strstr(err, "MEMORY_LIMIT_EXCEEDED")) {
        size_t l = strlen(err);
        snprintf(err + l, errlen > l ? errlen - l : 0,
                 " (MEMORY_LIMIT_EXCEEDED); nothing of this INSERT was committed");
    }
    return rc;
}

int eng__run_table_stmt(equery *q, const sql_stmt *st, eng_format fmt, char *err, size_t errlen)
{
    switch (st->kind) {
    case SQL_CREATE_TABLE: return run_create(q, st, err, errlen);
    case SQL_DROP_TABLE: return run_drop(q, st, err, errlen);
    case SQL_TRUNCATE_TABLE: return run_truncate(q, st, err, errlen);
    case SQL_OPTIMIZE_TABLE: return run_optimize(q, st, err, errlen);
    case SQL_SHOW_TABLES: return run_show_tables(q, st, fmt, err, errlen);
    case SQL_INSERT: return run_insert_into(q, st, db_of(q, st), st->table, err, errlen);
    default: snprintf(err, errlen, "not a table statement"); return -EINVAL;
    }
}
