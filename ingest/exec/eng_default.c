/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_default.c: the DEFAULT expressions of a table's columns. CREATE TABLE
 * checks them (each binds over the table's columns, has no aggregate, and no
 * column's default leads back to itself); an INSERT fills them, as a sink in
 * front of the part sink:
 *
 *   - a column the INSERT leaves out (a column list without it, INSERT ...
 *     SELECT of fewer columns) gets its expression, computed from the row;
 *   - a column it gives, not Nullable, gets its expression where the value is
 *     NULL (a JSONEachRow row without the key, NULL in VALUES), as
 *     ClickHouse's input_format_null_as_default does;
 *   - a Nullable column it gives gets its expression where a JSONEachRow row
 *     left the key out (the reader marks that NULL EX_NULL_ABSENT), and keeps
 *     an explicit null, as ClickHouse's input_format_defaults_for_omitted_fields
 *     does.
 *
 * The expression sees every column of the table by name, in the table's
 * types: a given column cast to its type, a filled one with its default (in
 * dependency order), one left out without a default with its type's zero. A
 * given column is handed on as it came (the part sink converts it, naming
 * the column and row of a bad value) except where a default replaced a NULL.
 *
 * Thread-safety: a sink is used by one thread at a time.
 */
#include "exec_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RAW    "__ringcache_raw"
#define ABSENT "__ringcache_absent" /* 1 where the raw column's NULL is EX_NULL_ABSENT */

/* One column's engine type (its declared Date is 16-bit). */
static ex_type col_type(const eng_tdef *d, uint32_t i)
{
    const tp_column_def *c = &d->schema.cols[i];
    ex_type t = ex_type_of_column(&c->info, c->nullable);
    if (d->date16 && d->date16[i])
        t.bits = 16;
    return t;
}

/* The table's columns as a schema, plus the raw input column and whether
 * its row was absent (virtual: n and n + 1). */
static int dschema(const eng_tdef *d, ex_type raw, eng_schema *s)
{
    uint32_t n = d->schema.n_cols;
    memset(s, 0, sizeof(*s));
    if (!(s->cols = calloc(n + 3, sizeof(eng_col))))
        return -ENOMEM;
    for (uint32_t i = 0; i <= n + 1; i++) {
        eng_col *c = &s->cols[i];
        c->name = strdup(i < n ? d->schema.cols[i].name : i == n ? RAW : ABSENT);
        c->t = i < n ? col_type(d, i) : i == n ? raw : (ex_type){.kind = EX_UINT, .bits = 8};
        if (i < n)
            c->cb = d->schema.cols[i].info;
        c->virt = i >= n;
        s->n = (int)i + 1;
        if (!c->name)
            return -ENOMEM;
    }
    return 0;
}

typedef struct dplan {
    eng_schema schema;
    sql_stmt *stmt;
    eng_plan plan;
    bool bound;
} dplan;

static void dplan_free(eng_mem *m, dplan *p)
{
    if (p->bound)
        eng_plan_free(m, &p->plan);
    sql_stmt_destroy(&p->stmt);
    eng_schema_free(&p->schema);
    memset(p, 0, sizeof(*p));
}

/* Binds SELECT <text> FROM t over the table's columns and a raw column of
 * type raw. 0 or -EINVAL with the reason in msg. */
static int dplan_bind(eng_mem *m, const eng_tdef *d, ex_type raw, const char *text, dplan *p,
                      char *msg, size_t msglen)
{
    memset(p, 0, sizeof(*p));
    int rc = dschema(d, raw, &p->schema);
    size_t n = strlen(text) + 32;
    char *sql = rc == 0 ? malloc(n) : NULL;
    if (!sql) {
        snprintf(msg, msglen, "out of memory");
        return -ENOMEM;
    }
    snprintf(sql, n, "SELECT %s FROM t", text);
    rc = sql_parse(sql, strlen(sql), &p->stmt, msg, msglen);
    free(sql);
    if (rc == 0 && (p->stmt->n_items != 1 || p->stmt->where))
        rc = -EINVAL, snprintf(msg, msglen, "it is not one expression");
    if (rc == 0 && (rc = eng_bind(m, p->stmt, &p->schema, &p->plan, msg, msglen)) == 0)
        p->bound = true;
    if (rc == 0 && (p->plan.aggregate || p->plan.n_outs != 1))
        rc = -EINVAL, snprintf(msg, msglen, "it has an aggregate function");
    return rc;
}

/* The engine's name of column i's type, Nullable or not. */
static void tname(const eng_tdef *d, uint32_t i, bool nullable, char *buf, size_t cap)
{
    ex_type t = col_type(d, i);
    t.nullable = nullable;
    ex_type_name(&t, buf, cap);
}

/* ---- CREATE TABLE ------------------------------------------------------------------- */

/* Depth-first search for a cycle through column i's default (state: 0 new,
 * 1 on the path, 2 done). */
static int cycle_from(const eng_tdef *d, int **deps, int *ndeps, uint8_t *state, uint32_t i)
{
    if (state[i] == 1)
        return (int)i;
    if (state[i] == 2)
        return -1;
    state[i] = 1;
    for (int k = 0; k < ndeps[i]; k++) {
        int c = cycle_from(d, deps, ndeps, state, (uint32_t)deps[i][k]);
        if (c >= 0)
            return c;
    }
    state[i] = 2;
    return -1;
}

int eng__default_check(eng_mem *m, const eng_tdef *d, char *err, size_t errlen)
{
    uint32_t n = d->schema.n_cols;
    if (!d->defaults)
        return 0;
    int **deps = calloc(n + 1, sizeof(int *));
    int *ndeps = calloc(n + 1, sizeof(int));
    uint8_t *state = calloc(n + 1, 1);
    int rc = deps && ndeps && state ? 0 : -ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        if (!d->defaults[i])
            continue;
        char msg[ENG_MSG_MAX];
        dplan p;
        rc = dplan_bind(m, d, (ex_type){.kind = EX_NOTHING}, d->defaults[i], &p, msg, sizeof(msg));
        for (int k = 0; rc == 0 && k < p.plan.n_need; k++)
            if (p.plan.need[k] >= (int)n)
                rc = -EINVAL, snprintf(msg, sizeof(msg), "unknown identifier %s",
                                       p.plan.need[k] == (int)n ? RAW : ABSENT);
        if (rc == 0 && !(deps[i] = calloc((size_t)p.plan.n_need + 1, sizeof(int))))
            rc = -ENOMEM;
        for (int k = 0; rc == 0 && k < p.plan.n_need; k++)
            deps[i][ndeps[i]++] = p.plan.need[k];
        dplan_free(m, &p);
        const char *u = strstr(msg, "unknown column '");
        if (rc < 0 && rc != -ENOMEM && u) {
            u += strlen("unknown column '");
            snprintf(err, errlen,
                     "DEFAULT %s of column %s names column %.*s, which the table does not have",
                     d->defaults[i], d->schema.cols[i].name, (int)strcspn(u, "'"), u);
        } else if (rc < 0 && rc != -ENOMEM) {
            snprintf(err, errlen, "DEFAULT %s of column %s cannot be used: %s", d->defaults[i],
                     d->schema.cols[i].name, msg);
        }
    }
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        int c = cycle_from(d, deps, ndeps, state, i);
        if (c >= 0) {
            snprintf(err, errlen,
                     "the DEFAULT of column %s depends on itself through the defaults of the "
                     "table's columns (CYCLIC_ALIASES): break the cycle",
                     d->schema.cols[c].name);
            rc = -EINVAL;
        }
    }
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    for (uint32_t i = 0; deps && i < n; i++)
        free(deps[i]);
    free(deps);
    free(ndeps);
    free(state);
    return rc;
}

/* ---- INSERT ------------------------------------------------------------------------- */

int eng__default_map(const eng_tdef *d, const int *col_of, int n_in, int **col_of2, int *n_in2,
                     bool *needed)
{
    uint32_t n = d->schema.n_cols;
    *needed = false;
    *col_of2 = calloc(n + 1, sizeof(int));
    if (!*col_of2)
        return -ENOMEM;
    int k = n_in;
    for (uint32_t i = 0; i < n; i++) {
        (*col_of2)[i] = col_of[i];
        if (!d->defaults || !d->defaults[i])
            continue;
        if (col_of[i] < 0)
            (*col_of2)[i] = k++;
        *needed = true; /* left out, NULLs of a column that is not Nullable, or
                           JSONEachRow rows without the key */
    }
    *n_in2 = k;
    return 0;
}

typedef struct dcol {
    dplan full;     /* the column's value in its type (bound when wanted) */
    dplan out;      /* a given column: NULLs replaced by the default, in its input type */
    bool want_full; /* another default reads it, or it is filled */
    bool has_out;
    bool absent_only; /* out replaces absent rows only: a block without one
                         passes as it came */
    ex_vec v;         /* this block's full value */
    bool done;
} dcol;

typedef struct dsink {
    eng_sink base;
    eng_sink *inner; /* owned: the part sink */
    eng_mem *mem;
    const eng_tdef *d;
    const int *col_of; /* per table column: its input column, or -1 */
    const int *col_of2;
    int n_in, n_in2;
    ex_type *in_types;
    dcol *c;
    ex_vec *outv;
    const eng_block *blk; /* during write */
} dsink;

/* Marks column i and what its value reads as wanted, binding their plans. */
static int want(dsink *s, uint32_t i, int depth, char *err, size_t errlen)
{
    const eng_tdef *d = s->d;
    dcol *c = &s->c[i];
    if (c->want_full)
        return 0;
    if (depth > (int)d->schema.n_cols + 1) {
        snprintf(err, errlen,
                 "the DEFAULT expressions of the table depend on each other in a "
                 "cycle");
        return -EINVAL;
    }
    c->want_full = true;
    const tp_column_def *cd = &d->schema.cols[i];
    const char *dx = d->defaults ? d->defaults[i] : NULL;
    int ci = s->col_of[i];
    ex_type raw = ci >= 0 ? s->in_types[ci] : (ex_type){.kind = EX_NOTHING};
    char t[96], tn[96], text[4096];
    tname(d, i, cd->nullable, t, sizeof(t));
    tname(d, i, true, tn, sizeof(tn));
    if (cd->info.type == CB_LIST) /* an Array: the part sink converts its elements */
        snprintf(text, sizeof(text), "%s", ci >= 0 ? RAW : dx ? dx : "[]");
    else if (ci < 0 && dx)
        snprintf(text, sizeof(text), "CAST((%s) AS %s)", dx, t);
    else if (ci >= 0 && dx && !cd->nullable && raw.nullable)
        snprintf(text, sizeof(text), "CAST(ifNull(CAST(" RAW " AS %s), CAST((%s) AS %s)) AS %s)",
                 tn, dx, t, t);
    else if (ci >= 0 && dx && raw.nullable)
        snprintf(text, sizeof(text), "if(" ABSENT ", CAST((%s) AS %s), CAST(" RAW " AS %s))", dx, t,
                 t);
    else if (ci >= 0)
        snprintf(text, sizeof(text), "CAST(" RAW " AS %s)", t);
    else if (cd->nullable)
        snprintf(text, sizeof(text), "CAST(NULL AS %s)", t);
    else if (col_type(d, i).kind == EX_STRING)
        snprintf(text, sizeof(text), "CAST('' AS %s)", t);
    else
        snprintf(text, sizeof(text), "CAST(0 AS %s)", t);
    char msg[ENG_MSG_MAX];
    int rc = dplan_bind(s->mem, d, raw, text, &c->full, msg, sizeof(msg));
    if (rc < 0) {
        snprintf(err, errlen, "column %s%s%s cannot be filled: %s", cd->name, dx ? " DEFAULT " : "",
                 dx ? dx : "", msg);
        return rc;
    }
    for (int k = 0; rc == 0 && k < c->full.plan.n_need; k++)
        if (c->full.plan.need[k] < (int)d->schema.n_cols)
            rc = want(s, (uint32_t)c->full.plan.need[k], depth + 1, err, errlen);
    return rc;
}

/* Binds text as the plan that replaces given column i (of input type in)
 * on its way to the part sink, and marks what it reads as wanted; *out_type
 * gets its type. */
static int bind_out(dsink *s, uint32_t i, ex_type in, const char *text, ex_type *out_type,
                    char *err, size_t errlen)
{
    const eng_tdef *d = s->d;
    char msg[ENG_MSG_MAX];
    int rc = dplan_bind(s->mem, d, in, text, &s->c[i].out, msg, sizeof(msg));
    if (rc < 0)
        snprintf(err, errlen, "column %s DEFAULT %s cannot be filled: %s", d->schema.cols[i].name,
                 d->defaults[i], msg);
    s->c[i].has_out = rc == 0;
    for (int k = 0; rc == 0 && k < s->c[i].out.plan.n_need; k++)
        if (s->c[i].out.plan.need[k] < (int)d->schema.n_cols)
            rc = want(s, (uint32_t)s->c[i].out.plan.need[k], 0, err, errlen);
    if (rc == 0)
        *out_type = s->c[i].out.plan.outs[0].e->t;
    return rc;
}

static bool same_type(ex_type a, ex_type b)
{
    return a.kind == b.kind && a.nullable == b.nullable && a.scale == b.scale && a.bits == b.bits &&
           a.utc == b.utc && a.prec == b.prec && a.elem == b.elem && a.depth == b.depth &&
           a.enull == b.enull;
}

/* Whether a row of v was left out by its input (EX_NULL_ABSENT). */
static bool has_absent(const ex_vec *v, uint32_t n)
{
    return v->nulls && memchr(v->nulls, EX_NULL_ABSENT, v->is_const ? 1 : n) != NULL;
}

static int ds_begin(eng_sink *b, const char *const *names, const ex_type *types, int n_cols,
                    char *err, size_t errlen)
{
    dsink *s = (dsink *)b;
    const eng_tdef *d = s->d;
    uint32_t n = d->schema.n_cols;
    if (n_cols != s->n_in) /* the part sink words it */
        return s->inner->ops->begin(s->inner, names, types, n_cols, err, errlen);
    s->in_types = calloc((size_t)n_cols + 1, sizeof(ex_type));
    s->c = calloc(n + 1, sizeof(dcol));
    s->outv = calloc((size_t)s->n_in2 + 1, sizeof(ex_vec));
    ex_type *types2 = calloc((size_t)s->n_in2 + 1, sizeof(ex_type));
    const char **names2 = calloc((size_t)s->n_in2 + 1, sizeof(char *));
    int rc = s->in_types && s->c && s->outv && types2 && names2 ? 0 : -ENOMEM;
    if (rc == 0) {
        memcpy(s->in_types, types, sizeof(ex_type) * (size_t)n_cols);
        memcpy(types2, types, sizeof(ex_type) * (size_t)n_cols);
        for (int k = 0; k < n_cols; k++)
            names2[k] = names[k];
    }
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        const char *dx = d->defaults ? d->defaults[i] : NULL;
        int ci = s->col_of[i];
        if (!dx)
            continue;
        if (ci < 0) { /* left out: filled */
            rc = want(s, i, 0, err, errlen);
            if (rc == 0) {
                types2[s->col_of2[i]] = s->c[i].full.plan.outs[0].e->t;
                names2[s->col_of2[i]] = d->schema.cols[i].name;
            }
        } else if (!d->schema.cols[i].nullable && types[ci].nullable) {
            /* given: its NULLs get the default, in the input's type */
            ex_type r = types[ci];
            r.nullable = false;
            char rn[96], t[96], text[4096];
            ex_type_name(&r, rn, sizeof(rn));
            tname(d, i, false, t, sizeof(t));
            if (d->schema.cols[i].info.type == CB_LIST) /* text of arrays, or NULL */
                snprintf(text, sizeof(text),
                         r.kind == EX_NOTHING  ? "(%s)"
                         : r.kind == EX_STRING ? "ifNull(" RAW ", toString(%s))"
                                               : RAW "%.0s",
                         dx);
            else if (r.kind == EX_NOTHING) /* a column of NULLs only */
                snprintf(text, sizeof(text), "CAST((%s) AS %s)", dx, t);
            else if (r.kind == EX_STRING)
                snprintf(text, sizeof(text), "ifNull(" RAW ", toString(CAST((%s) AS %s)))", dx, t);
            else
                snprintf(text, sizeof(text), "ifNull(" RAW ", CAST(CAST((%s) AS %s) AS %s))", dx, t,
                         rn);
            rc = bind_out(s, i, types[ci], text, &types2[ci], err, errlen);
        } else if (types[ci].nullable && types[ci].kind != EX_NOTHING &&
                   d->schema.cols[i].info.type != CB_LIST) {
            /* given, Nullable: rows that left it out get the default, in the
             * input's type; an explicit null stays */
            ex_type r = types[ci];
            char rn[96], t[96], text[4096];
            ex_type_name(&r, rn, sizeof(rn));
            tname(d, i, true, t, sizeof(t));
            if (r.kind == EX_STRING)
                snprintf(text, sizeof(text), "if(" ABSENT ", toString(CAST((%s) AS %s)), " RAW ")",
                         dx, t);
            else
                snprintf(text, sizeof(text),
                         "if(" ABSENT ", CAST(CAST((%s) AS %s) AS %s), " RAW ")", dx, t, rn);
            rc = bind_out(s, i, types[ci], text, &types2[ci], err, errlen);
            s->c[i].absent_only = rc == 0 && same_type(types2[ci], types[ci]);
        }
    }
    if (rc == 0)
        rc = s->inner->ops->begin(s->inner, names2, types2, s->n_in2, err, errlen);
    else if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    free(types2);
    free(names2);
    return rc;
}

static int eval_full(dsink *s, uint32_t i, char *err, size_t errlen);

/* Evaluates plan p of column i over this block. */
static int eval_plan(dsink *s, uint32_t i, const dplan *p, ex_vec *out, char *err, size_t errlen)
{
    uint32_t n = s->d->schema.n_cols;
    ex_vec *in = calloc((size_t)p->plan.n_need + 1, sizeof(ex_vec));
    if (!in)
        return -ENOMEM;
    int rc = 0;
    for (int k = 0; rc == 0 && k < p->plan.n_need; k++) {
        int c = p->plan.need[k];
        if (c == (int)n) {
            in[k] = s->blk->cols[s->col_of[i]]; /* borrowed: never cleared here */
            in[k].own = 0;
        } else if (c == (int)n + 1) {
            const ex_vec *raw = &s->blk->cols[s->col_of[i]];
            uint32_t rows = s->blk->n_rows;
            rc = ex_vec_alloc(s->mem, &in[k], (ex_type){.kind = EX_UINT, .bits = 8}, rows);
            for (uint32_t r = 0; rc == 0 && r < rows; r++)
                in[k].i[r] = raw->nulls && raw->nulls[ex_row(raw, r)] == EX_NULL_ABSENT;
        } else if ((rc = eval_full(s, (uint32_t)c, err, errlen)) == 0) {
            in[k] = s->c[c].v;
            in[k].own = 0;
        }
    }
    ex_ectx ec = {s->mem, err, errlen};
    if (rc == 0)
        rc = bx_eval(&ec, p->plan.outs[0].e, in, NULL, s->blk->n_rows, out);
    for (int k = 0; k < p->plan.n_need; k++)
        if (p->plan.need[k] == (int)n + 1)
            ex_vec_clear(s->mem, &in[k]);
    free(in);
    return rc;
}

static int eval_full(dsink *s, uint32_t i, char *err, size_t errlen)
{
    dcol *c = &s->c[i];
    if (c->done)
        return 0;
    int rc = eval_plan(s, i, &c->full, &c->v, err, errlen);
    c->done = rc == 0;
    return rc;
}

static int ds_write(eng_sink *b, const eng_block *blk, char *err, size_t errlen)
{
    dsink *s = (dsink *)b;
    const eng_tdef *d = s->d;
    uint32_t n = d->schema.n_cols;
    if (!s->c)
        return s->inner->ops->write(s->inner, blk, err, errlen);
    s->blk = blk;
    int rc = 0;
    bool *mine = calloc((size_t)s->n_in2 + 1, sizeof(bool));
    if (!mine)
        return -ENOMEM;
    for (int k = 0; k < blk->n_cols && k < s->n_in2; k++) {
        s->outv[k] = blk->cols[k];
        s->outv[k].own = 0;
    }
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        int ci = s->col_of[i];
        if (s->c[i].has_out && !(s->c[i].absent_only && !has_absent(&blk->cols[ci], blk->n_rows))) {
            memset(&s->outv[ci], 0, sizeof(ex_vec));
            rc = eval_plan(s, i, &s->c[i].out, &s->outv[ci], err, errlen);
            mine[ci] = true;
        } else if (ci < 0 && d->defaults && d->defaults[i]) {
            if ((rc = eval_full(s, i, err, errlen)) == 0) {
                s->outv[s->col_of2[i]] = s->c[i].v;
                s->outv[s->col_of2[i]].own = 0;
            }
        }
    }
    if (rc == 0) {
        eng_block b2 = {s->outv, s->n_in2, blk->n_rows};
        rc = s->inner->ops->write(s->inner, &b2, err, errlen);
    }
    for (int k = 0; k < s->n_in2; k++)
        if (mine[k])
            ex_vec_clear(s->mem, &s->outv[k]);
    for (uint32_t i = 0; i < n; i++)
        if (s->c[i].done) {
            ex_vec_clear(s->mem, &s->c[i].v);
            s->c[i].done = false;
        }
    free(mine);
    s->blk = NULL;
    if (rc == -ENOMEM && !err[0])
        snprintf(err, errlen, "out of memory filling the DEFAULT columns");
    return rc;
}

static int ds_end(eng_sink *b, char *err, size_t errlen)
{
    dsink *s = (dsink *)b;
    return s->inner->ops->end(s->inner, err, errlen);
}

static void ds_destroy(eng_sink *b)
{
    dsink *s = (dsink *)b;
    for (uint32_t i = 0; s->c && i < s->d->schema.n_cols; i++) {
        dplan_free(s->mem, &s->c[i].full);
        dplan_free(s->mem, &s->c[i].out);
        if (s->c[i].done)
            ex_vec_clear(s->mem, &s->c[i].v);
    }
    free(s->c);
    free(s->outv);
    free(s->in_types);
    eng_sink_destroy(&s->inner);
    free(s);
}

static const eng_sink_ops dsink_ops = {ds_begin, ds_write, ds_end, ds_destroy};

int eng__default_sink_create(eng_sink **out, eng_sink *inner, eng_mem *m, const eng_tdef *d,
                             const int *col_of, int n_in, const int *col_of2, int n_in2)
{
    dsink *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->base.ops = &dsink_ops;
    s->inner = inner;
    s->mem = m;
    s->d = d;
    s->col_of = col_of;
    s->col_of2 = col_of2;
    s->n_in = n_in;
    s->n_in2 = n_in2;
    *out = &s->base;
    return 0;
}
