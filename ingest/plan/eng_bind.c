/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_bind.c: from a parsed SELECT and a file schema to a plan (eng_plan):
 * aliases expanded (ClickHouse lets WHERE, GROUP BY, HAVING and ORDER BY use
 * the SELECT list's aliases, and GROUP BY / ORDER BY positions), names
 * resolved with "did you mean" suggestions, types inferred with ClickHouse's
 * rules (comparisons are UInt8, '/' is Float64, sum of Int* is Int64, avg is
 * Float64, count is UInt64), implicit casts inserted (a date column against a
 * string literal compares as dates), aggregates collected and deduplicated,
 * the columns the scan needs listed, and the WHERE conjuncts of the shape
 * `column OP constant` turned into Parquet row-group pruning predicates.
 */
#include "eng_plan.h"
#include "eng_tdef.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

typedef struct binder {
    eng_mem *mem;
    const sql_stmt *st;
    const eng_schema *sc;
    const eng_bind_env *env; /* the query's context and how subqueries run; may be NULL */
    eng_plan *p;
    char *err;
    size_t errlen;
    int rc;
    /* expanded ASTs */
    sql_node **gkeys;
    int n_gkeys;
    const char *alias_stack[64];
    int alias_depth;
    bool in_agg;
    /* the SELECT list, * and aliases expanded (for GROUP BY / ORDER BY positions) */
    sql_node **items;
    int n_items;
    /* ARRAY JOIN: the name the element goes by, or the arrayJoin(...) call
     * whose value it is; a reference binds to slot AJ_SLOT until the end */
    const char *aj_name;
    const sql_node *aj_call;
} binder;

/* The element of ARRAY JOIN while binding (moved to slot n_need at the end). */
#define AJ_SLOT (1 << 30)

static int berr(binder *b, const sql_node *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int berr(binder *b, const sql_node *at, const char *fmt, ...)
{
    if (b->rc)
        return b->rc;
    b->rc = -EINVAL;
    if (!b->err || !b->errlen)
        return b->rc;
    int k = at ? snprintf(b->err, b->errlen, "line %d, column %d: ", at->line, at->col) : 0;
    if (k < 0 || (size_t)k >= b->errlen)
        return b->rc;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->err + k, b->errlen - (size_t)k, fmt, ap);
    va_end(ap);
    return b->rc;
}

static int boom(binder *b)
{
    if (!b->rc) {
        b->rc = -ENOMEM;
        if (b->err && b->errlen)
            snprintf(b->err, b->errlen, "out of memory while planning the query");
    }
    return b->rc;
}

/* ---- types ---------------------------------------------------------------- */

/* Decimal(P, S), Decimal(P), Decimal, Decimal32/64/128(S): ClickHouse's
 * spellings (Decimal alone is Decimal(10, 0)). */
static int parse_decimal_type(const char *buf, ex_type *out)
{
    unsigned p = 10, s = 0;
    int end = -1;
    const char *a = buf + 7;
    if (*a == 0 && strncasecmp(buf, "Decimal", 7) == 0) {
        end = 0;
    } else if (sscanf(a, "(%u, %u)%n", &p, &s, &end) == 2 ||
               sscanf(a, "(%u,%u)%n", &p, &s, &end) == 2 ||
               (s = 0, sscanf(a, "(%u)%n", &p, &end) == 1)) {
        a += end;
        end = *a ? -1 : 0;
    } else if (strncasecmp(buf, "Decimal", 7) == 0 && sscanf(a, "%u(%u)%n", &p, &s, &end) == 2 &&
               !a[end] && (p == 32 || p == 64 || p == 128)) {
        p = p == 32 ? 9 : p == 64 ? 18 : 38;
        end = 0;
    }
    if (end < 0 || p < 1 || p > 38 || s > p || s > 18)
        return -EINVAL;
    *out = ex_decimal_type((int)p, (int)s, false);
    return 0;
}

int eng_parse_type(const char *name, ex_type *out)
{
    memset(out, 0, sizeof(*out));
    char buf[128];
    size_t n = strlen(name);
    if (n >= sizeof(buf))
        return -EINVAL;
    memcpy(buf, name, n + 1);
    if (strncasecmp(buf, "Nullable(", 9) == 0 && buf[n - 1] == ')') {
        buf[n - 1] = 0;
        int rc = eng_parse_type(buf + 9, out);
        out->nullable = true;
        return rc;
    }
    static const struct {
        const char *n;
        uint8_t k, bits;
    } tab[] = {
        {"Int8", EX_INT, 8},
        {"Int16", EX_INT, 16},
        {"Int32", EX_INT, 32},
        {"Int64", EX_INT, 64},
        {"UInt8", EX_UINT, 8},
        {"UInt16", EX_UINT, 16},
        {"UInt32", EX_UINT, 32},
        {"UInt64", EX_UINT, 64},
        {"Float32", EX_FLOAT, 32},
        {"Float64", EX_FLOAT, 64},
        {"String", EX_STRING, 0},
        {"Date", EX_DATE, 16},
        {"Date32", EX_DATE, 32},
        {"DateTime", EX_DATETIME, 0},
        {"Bool", EX_BOOL, 0},
        {"Boolean", EX_BOOL, 0},
        /* SQL-standard aliases ClickHouse accepts */
        {"TINYINT", EX_INT, 8},
        {"SMALLINT", EX_INT, 16},
        {"INT", EX_INT, 32},
        {"INTEGER", EX_INT, 32},
        {"BIGINT", EX_INT, 64},
        {"FLOAT", EX_FLOAT, 32},
        {"DOUBLE", EX_FLOAT, 64},
        {"REAL", EX_FLOAT, 32},
        {"VARCHAR", EX_STRING, 0},
        {"TEXT", EX_STRING, 0},
        {"CHAR", EX_STRING, 0},
        {"TIMESTAMP", EX_DATETIME, 0},
    };
    for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
        bool ci = tab[i].n[1] >= 'A' && tab[i].n[1] <= 'Z'; /* SQL aliases: any case */
        if (ci ? strcasecmp(buf, tab[i].n) == 0 : strcmp(buf, tab[i].n) == 0) {
            out->kind = tab[i].k;
            out->bits = tab[i].bits;
            return 0;
        }
    }
    int sc;
    char tz[64];
    if (strncasecmp(buf, "Decimal", 7) == 0 || strncasecmp(buf, "Numeric", 7) == 0)
        return parse_decimal_type(buf, out);
    if (sscanf(buf, "DateTime64(%d)", &sc) == 1 ||
        sscanf(buf, "DateTime64(%d, %63[^)])", &sc, tz) == 2) {
        if (sc < 0 || sc > 9)
            return -EINVAL;
        out->kind = EX_DATETIME;
        out->scale = (uint8_t)sc;
        return 0;
    }
    return -EINVAL;
}

static const char *const type_names[] = {"Int8",   "Int16",    "Int32",  "Int64",    "UInt8",
                                         "UInt16", "UInt32",   "UInt64", "Float32",  "Float64",
                                         "String", "Date",     "Date32", "DateTime", "DateTime64",
                                         "Bool",   "Nullable", "Decimal"};

static ex_type t_u8(void)
{
    return (ex_type){.kind = EX_UINT, .bits = 8};
}

/* The decimal digits of an integer type's largest value. */
static int int_digits(ex_type t)
{
    return t.kind == EX_BOOL ? 1 : t.bits == 8 ? 3 : t.bits == 16 ? 5 : t.bits == 32 ? 10 : 19;
}

/* Whether an Array type is that of the empty literal [] (Array(Nothing)),
 * whose rows are valid arrays of any element type. */
static bool arr_is_empty_type(ex_type a)
{
    return a.kind == EX_ARRAY && a.depth == 1 && a.elem == EX_NOTHING && !a.enull;
}

static bool supertype(ex_type a, ex_type b, ex_type *out);

/* The common type of two Array types: Array(the supertype of the elements),
 * or the other when one is []. */
static bool arr_supertype(ex_type a, ex_type b, ex_type *out)
{
    if (a.kind != EX_ARRAY || b.kind != EX_ARRAY)
        return false;
    if (arr_is_empty_type(a) || arr_is_empty_type(b)) {
        *out = arr_is_empty_type(a) ? b : a;
        return true;
    }
    if (a.depth != b.depth)
        return false;
    ex_type et;
    if (!supertype(ex_arr_elem(&a), ex_arr_elem(&b), &et))
        return false;
    if (et.kind == EX_NOTHING) {
        *out = a;
        return true;
    }
    *out = ex_arr_of(et);
    return true;
}

/* Whether values of Array types a and b have the same bytes (b can be
 * retyped as a without re-encoding). */
static bool arr_same_bytes(ex_type a, ex_type b)
{
    if (arr_is_empty_type(b))
        return true;
    bool ia = a.elem == EX_INT || a.elem == EX_UINT, ib = b.elem == EX_INT || b.elem == EX_UINT;
    return a.depth == b.depth && a.enull == b.enull && a.scale == b.scale &&
           (a.elem == b.elem || (ia && ib));
}

/* The common type of a and b for if/multiIf/coalesce/IN; false if none. */
static bool supertype(ex_type a, ex_type b, ex_type *out)
{
    if (a.kind == EX_ARRAY || b.kind == EX_ARRAY)
        return arr_supertype(a, b, out);
    bool nul = a.nullable || b.nullable || a.kind == EX_NOTHING || b.kind == EX_NOTHING;
    bool da = a.kind == EX_DECIMAL, db = b.kind == EX_DECIMAL;
    if (a.kind == EX_NOTHING) {
        *out = b;
    } else if ((da || db) && b.kind != EX_NOTHING) {
        /* Decimal with Decimal or an integer: the larger scale and integer part */
        uint8_t ka = da ? a.kind : a.kind == EX_FLOAT ? EX_FLOAT : ex_is_num(a.kind) ? EX_INT : 0;
        uint8_t kb = db ? b.kind : b.kind == EX_FLOAT ? EX_FLOAT : ex_is_num(b.kind) ? EX_INT : 0;
        if (!ka || !kb)
            return false;
        if (ka == EX_FLOAT || kb == EX_FLOAT) {
            *out = (ex_type){.kind = EX_FLOAT, .bits = 64};
        } else {
            int sa = da ? a.scale : 0, sb = db ? b.scale : 0;
            int ia = da ? a.prec - a.scale : int_digits(a),
                ib = db ? b.prec - b.scale : int_digits(b);
            int s = sa > sb ? sa : sb, i = ia > ib ? ia : ib;
            if (s > 18)
                return false;
            *out = ex_decimal_type(i + s > 38 ? 38 : i + s, s, false);
        }
    } else if (b.kind == EX_NOTHING || (a.kind == b.kind && a.scale == b.scale)) {
        *out = a;
        if (a.kind == b.kind && b.bits > a.bits)
            out->bits = b.bits;
    } else if (ex_is_num(a.kind) && ex_is_num(b.kind)) {
        *out = (ex_type){.kind = a.kind == EX_FLOAT || b.kind == EX_FLOAT ? EX_FLOAT : EX_INT,
                         .bits = 64};
    } else if ((a.kind == EX_DATE || a.kind == EX_DATETIME) &&
               (b.kind == EX_DATE || b.kind == EX_DATETIME)) {
        *out = (ex_type){.kind = EX_DATETIME, .scale = a.scale > b.scale ? a.scale : b.scale};
    } else {
        return false;
    }
    out->nullable = nul && out->kind != EX_NOTHING;
    if (out->kind == EX_NOTHING)
        out->nullable = true;
    return true;
}

/* ---- bx helpers -------------------------------------------------------------- */

static bx *bx_new(binder *b, bx_op op)
{
    bx *e = calloc(1, sizeof(*e));
    if (!e)
        boom(b);
    else
        e->op = op;
    return e;
}

static bx *bx_fn_new(binder *b, bx_fn fn, ex_type t, bx **args, int n)
{
    bx *e = bx_new(b, BX_FUNC);
    if (!e) {
        for (int i = 0; i < n; i++)
            bx_free(b->mem, args[i]);
        return NULL;
    }
    e->fn = fn;
    e->t = t;
    if (n) {
        e->a = malloc(sizeof(bx *) * (size_t)n);
        if (!e->a) {
            for (int i = 0; i < n; i++)
                bx_free(b->mem, args[i]);
            free(e);
            boom(b);
            return NULL;
        }
        memcpy(e->a, args, sizeof(bx *) * (size_t)n);
    }
    e->na = n;
    return e;
}

static bx *const_new(binder *b, ex_type t)
{
    bx *e = bx_new(b, BX_CONST);
    if (!e)
        return NULL;
    ex_type tt = t;
    if (ex_vec_alloc(b->mem, &e->cval, tt, 1) < 0) {
        free(e);
        boom(b);
        return NULL;
    }
    e->cval.is_const = true;
    e->t = t;
    if (t.kind == EX_NOTHING)
        e->cval.nulls[0] = 1;
    return e;
}

/* Evaluates a constant subtree now (so later code sees a BX_CONST). */
static bx *fold(binder *b, bx *e)
{
    if (!e || e->op != BX_FUNC)
        return e;
    for (int i = 0; i < e->na; i++)
        if (e->a[i]->op != BX_CONST)
            return e;
    ex_ectx c = {b->mem, b->err, b->errlen};
    ex_vec v;
    int rc = bx_eval(&c, e, NULL, NULL, 1, &v);
    if (rc < 0) {
        b->rc = rc;
        bx_free(b->mem, e);
        return NULL;
    }
    bx *k = bx_new(b, BX_CONST);
    if (!k) {
        ex_vec_clear(b->mem, &v);
        bx_free(b->mem, e);
        return NULL;
    }
    k->t = e->t;
    /* own a copy of the single value */
    if (ex_vec_alloc(b->mem, &k->cval, (ex_type){.kind = v.t.kind, .nullable = true}, 1) < 0) {
        ex_vec_clear(b->mem, &v);
        bx_free(b->mem, e);
        free(k);
        boom(b);
        return NULL;
    }
    k->cval.t = e->t;
    k->cval.is_const = true;
    k->cval.nulls[0] = ex_null(&v, 0);
    if (v.t.kind == EX_FLOAT)
        k->cval.d[0] = v.d[0];
    else if (ex_is_bytes(v.t.kind)) {
        uint32_t l;
        const uint8_t *s = ex_str(&v, 0, &l);
        if (ex_vec_str_put(b->mem, &k->cval, 0, s, l) < 0)
            boom(b);
    } else if (v.t.kind != EX_NOTHING)
        k->cval.i[0] = v.i[0];
    ex_vec_clear(b->mem, &v);
    bx_free(b->mem, e);
    return k;
}

static bx *cast_to(binder *b, bx *e, ex_type t)
{
    if (!e)
        return NULL;
    if ((e->t.kind == EX_ARRAY || t.kind == EX_ARRAY) &&
        !(e->t.kind == EX_ARRAY && t.kind == EX_STRING)) {
        /* arrays of one encoding (or []) are the same bytes: retyped; others are
         * re-encoded element by element (F_ARR_CAST); an Array to a String is
         * its text (F_CAST) */
        ex_type st;
        if (e->t.kind != EX_ARRAY || t.kind != EX_ARRAY || !arr_supertype(e->t, t, &st) ||
            !arr_same_bytes(t, st)) {
            char x[128], y[128];
            ex_type_name(&e->t, x, sizeof(x));
            ex_type_name(&t, y, sizeof(y));
            berr(b, NULL, "cannot convert %s to %s: CAST the elements", x, y);
            bx_free(b->mem, e);
            return NULL;
        }
        if (arr_same_bytes(t, e->t)) {
            e->t = t;
            if (e->op == BX_CONST)
                e->cval.t = t;
            return e;
        }
        bx *a[1] = {e};
        return fold(b, bx_fn_new(b, F_ARR_CAST, t, a, 1));
    }
    if (e->t.kind == t.kind && e->t.scale == t.scale && e->t.nullable == t.nullable)
        return e;
    if (e->t.kind == EX_NOTHING && e->op == BX_CONST) {
        /* a NULL of type t: a vector with t's buffers, its one row NULL */
        ex_type nt = t;
        nt.nullable = true;
        bx *k = const_new(b, nt);
        if (k)
            k->cval.nulls[0] = 1;
        bx_free(b->mem, e);
        return k;
    }
    if (e->t.kind == EX_NOTHING) {
        e->t = t;
        e->t.nullable = true;
        e->cval.t = e->t;
        return e;
    }
    ex_type tt = t;
    tt.nullable = e->t.nullable || t.nullable;
    bx *a[1] = {e};
    return fold(b, bx_fn_new(b, F_CAST, tt, a, 1));
}

/* ---- aliases ---------------------------------------------------------------- */

/* The expression a name stands for: a SELECT alias, else WITH expr AS name. */
static const sql_node *find_alias(binder *b, const char *name)
{
    for (int i = 0; i < b->st->n_items; i++)
        if (b->st->items[i].alias && strcmp(b->st->items[i].alias, name) == 0)
            return b->st->items[i].expr;
    for (int i = 0; i < b->st->n_with; i++)
        if (b->st->with[i].expr && strcmp(b->st->with[i].name, name) == 0)
            return b->st->with[i].expr;
    return NULL;
}

static int find_column(const eng_schema *sc, const char *name)
{
    for (int i = 0; i < sc->n; i++)
        if (strcmp(sc->cols[i].name, name) == 0)
            return i;
    return -1;
}

/* A column reference's schema column: t.x is the column named "t.x" (a
 * joined table's column whose name the left side has too), else x. */
static int resolve_column(const eng_schema *sc, const sql_node *n)
{
    if (n->qual) {
        char q[512];
        snprintf(q, sizeof(q), "%s.%s", n->qual, n->s);
        int c = find_column(sc, q);
        if (c >= 0)
            return c;
    }
    return find_column(sc, n->s);
}

/* A clone of n with select aliases substituted (cycle-safe: inside an alias's
 * own expression its name means the column). */
static sql_node *expand(binder *b, const sql_node *n)
{
    if (b->rc)
        return NULL;
    if (n->kind == SQL_COLUMN) {
        const sql_node *it = n->qual ? NULL : find_alias(b, n->s);
        bool cyc = false;
        for (int i = 0; i < b->alias_depth; i++)
            cyc |= strcmp(b->alias_stack[i], n->s) == 0;
        if (it && !cyc && b->alias_depth < 64) {
            b->alias_stack[b->alias_depth++] = n->s;
            sql_node *r = expand(b, it);
            b->alias_depth--;
            return r;
        }
    }
    sql_node *c = malloc(sizeof(*c));
    if (!c) {
        boom(b);
        return NULL;
    }
    *c = *n;
    c->s = NULL;
    c->args = NULL;
    c->nargs = 0;
    c->sub_borrowed = n->sub != NULL;
    c->win_borrowed = n->win != NULL;
    c->qual = NULL;
    c->params = NULL;
    c->nparams = 0;
    if (n->nparams) { /* parameters are literals: no aliases inside */
        if (!(c->params = calloc((size_t)n->nparams, sizeof(*c->params)))) {
            free(c);
            boom(b);
            return NULL;
        }
        for (int i = 0; i < n->nparams; i++) {
            c->params[i] = sql_node_clone(n->params[i]);
            c->nparams = i + 1;
            if (!c->params[i]) {
                sql_node_free(c);
                boom(b);
                return NULL;
            }
        }
    }
    if ((n->s && !(c->s = malloc(n->slen + 1))) || (n->qual && !(c->qual = strdup(n->qual)))) {
        sql_node_free(c);
        boom(b);
        return NULL;
    }
    if (n->s)
        memcpy(c->s, n->s, n->slen + 1);
    if (n->nargs) {
        if (!(c->args = calloc((size_t)n->nargs, sizeof(*c->args)))) {
            sql_node_free(c);
            boom(b);
            return NULL;
        }
        for (int i = 0; i < n->nargs; i++) {
            c->args[i] = expand(b, n->args[i]);
            c->nargs = i + 1;
            if (!c->args[i]) {
                sql_node_free(c);
                return NULL;
            }
        }
    }
    return c;
}

/* GROUP BY / ORDER BY position -> the select item's expression. */
static sql_node *expand_pos(binder *b, const sql_node *n)
{
    if (n->kind == SQL_INT && !n->negated) {
        if (n->u < 1 || n->u > (uint64_t)b->n_items) {
            berr(b, n, "position %llu is out of range: the SELECT list has %d expressions",
                 (unsigned long long)n->u, b->n_items);
            return NULL;
        }
        sql_node *c = sql_node_clone(b->items[n->u - 1]); /* expanded already */
        if (!c)
            boom(b);
        return c;
    }
    return expand(b, n);
}

/* ---- functions -------------------------------------------------------------- */

static const struct fn_def {
    const char *name;
    int fn;
    int min, max;
    bool agg;
} fns[] = {
    {"count", AG_COUNT, 0, 1, true},
    {"sum", AG_SUM, 1, 1, true},
    {"avg", AG_AVG, 1, 1, true},
    {"min", AG_MIN, 1, 1, true},
    {"max", AG_MAX, 1, 1, true},
    {"uniqExact", AG_UNIQ, 1, 1, true},
    {"uniq", AG_UNIQ, 1, 1, true},
    {"any", AG_ANY, 1, 1, true},
    {"any_value", AG_ANY, 1, 1, true},
    {"anyLast", AG_ANYLAST, 1, 1, true},
    {"last_value", AG_ANYLAST, 1, 1, true},
    {"quantile", AG_QUANTILE, 1, 1, true},
    {"median", AG_QUANTILE, 1, 1, true},
    {"quantileExact", AG_QUANTILE_EXACT, 1, 1, true},
    {"medianExact", AG_QUANTILE_EXACT, 1, 1, true},
    {"varPop", AG_VAR_POP, 1, 1, true},
    {"var_pop", AG_VAR_POP, 1, 1, true},
    {"varSamp", AG_VAR_SAMP, 1, 1, true},
    {"var_samp", AG_VAR_SAMP, 1, 1, true},
    {"stddevPop", AG_STDDEV_POP, 1, 1, true},
    {"stddev_pop", AG_STDDEV_POP, 1, 1, true},
    {"stddevSamp", AG_STDDEV_SAMP, 1, 1, true},
    {"stddev_samp", AG_STDDEV_SAMP, 1, 1, true},
    {"corr", AG_CORR, 2, 2, true},
    {"argMin", AG_ARGMIN, 2, 2, true},
    {"argMax", AG_ARGMAX, 2, 2, true},
    {"groupArray", AG_GROUPARRAY, 1, 1, true},
    {"groupUniqArray", AG_GROUPUNIQ, 1, 1, true},
    {"topK", AG_TOPK, 1, 1, true},
    {"if", F_IF, 3, 3, false},
    {"multiIf", F_MULTIIF, 3, 255, false},
    {"coalesce", F_COALESCE, 1, 255, false},
    {"length", F_LENGTH, 1, 1, false},
    {"lower", F_LOWER, 1, 1, false},
    {"upper", F_UPPER, 1, 1, false},
    {"substring", F_SUBSTRING, 2, 3, false},
    {"substr", F_SUBSTRING, 2, 3, false},
    {"concat", F_CONCAT, 1, 255, false},
    {"startsWith", F_STARTSWITH, 2, 2, false},
    {"endsWith", F_ENDSWITH, 2, 2, false},
    {"position", F_POSITION, 2, 2, false},
    {"toYear", F_TOYEAR, 1, 1, false},
    {"toMonth", F_TOMONTH, 1, 1, false},
    {"toDate", F_TODATE, 1, 1, false},
    {"toStartOfMonth", F_TOSTARTOFMONTH, 1, 1, false},
    {"toStartOfDay", F_TOSTARTOFDAY, 1, 1, false},
    {"dateDiff", F_DATEDIFF, 3, 3, false},
    {"date_diff", F_DATEDIFF, 3, 3, false},
    {"round", F_ROUND, 1, 2, false},
    {"abs", F_ABS, 1, 1, false},
    {"intDiv", F_INTDIV, 2, 2, false},
    {"pow", F_POW, 2, 2, false},
    {"power", F_POW, 2, 2, false},
    {"log", F_LOG, 1, 1, false},
    {"ln", F_LOG, 1, 1, false},
    {"log2", F_LOG2, 1, 1, false},
    {"log10", F_LOG10, 1, 1, false},
    {"exp", F_EXP, 1, 1, false},
    {"sqrt", F_SQRT, 1, 1, false},
    {"floor", F_FLOOR, 1, 2, false},
    {"ceil", F_CEIL, 1, 2, false},
    {"ceiling", F_CEIL, 1, 2, false},
    {"trunc", F_TRUNC, 1, 2, false},
    {"truncate", F_TRUNC, 1, 2, false},
    {"replaceAll", F_REPLACEALL, 3, 3, false},
    {"replace", F_REPLACEALL, 3, 3, false},
    {"replaceOne", F_REPLACEONE, 3, 3, false},
    {"replaceRegexpAll", F_REPLACEREGEXPALL, 3, 3, false},
    {"replaceRegexpOne", F_REPLACEREGEXPONE, 3, 3, false},
    {"match", F_MATCH, 2, 2, false},
    {"extract", F_EXTRACT, 2, 2, false},
    {"trim", F_TRIMBOTH, 1, 1, false},
    {"trimBoth", F_TRIMBOTH, 1, 1, false},
    {"trimLeft", F_TRIMLEFT, 1, 1, false},
    {"trimRight", F_TRIMRIGHT, 1, 1, false},
    {"reverse", F_REVERSE, 1, 1, false},
    {"array", F_ARRAY, 0, 255, false},
    {"has", F_HAS, 2, 2, false},
    {"arrayElement", F_ELEMENT, 2, 2, false},
    {"splitByChar", F_SPLITBYCHAR, 2, 2, false},
    {"splitByString", F_SPLITBYSTRING, 2, 2, false},
    {"empty", F_EMPTY, 1, 1, false},
    {"notEmpty", F_NOTEMPTY, 1, 1, false},
    {"formatReadableSize", F_FMT_SIZE, 1, 1, false},
    {"formatReadableQuantity", F_FMT_QUANTITY, 1, 1, false},
    {"formatReadableTimeDelta", F_FMT_TIMEDELTA, 1, 1, false},
    {"xxHash64", F_XXHASH64, 1, 1, false},
    {"sipHash64", F_SIPHASH64, 1, 1, false},
    {"cityHash64", F_CITYHASH64, 1, 1, false},
    {"toStartOfSecond", F_TOSTARTOF, 1, 1, false},
    {"toStartOfMinute", F_TOSTARTOF, 1, 1, false},
    {"toStartOfFiveMinutes", F_TOSTARTOF, 1, 1, false},
    {"toStartOfTenMinutes", F_TOSTARTOF, 1, 1, false},
    {"toStartOfFifteenMinutes", F_TOSTARTOF, 1, 1, false},
    {"toStartOfHour", F_TOSTARTOF, 1, 1, false},
    {"toStartOfWeek", F_TOSTARTOF, 1, 1, false},
    {"toMonday", F_TOSTARTOF, 1, 1, false},
    {"toStartOfQuarter", F_TOSTARTOF, 1, 1, false},
    {"toStartOfYear", F_TOSTARTOF, 1, 1, false},
    {"toYYYYMM", F_DATEPART, 1, 1, false},
    {"toYYYYMMDD", F_DATEPART, 1, 1, false},
    {"toYYYYMMDDhhmmss", F_DATEPART, 1, 1, false},
    {"toDayOfWeek", F_DATEPART, 1, 1, false},
    {"toDayOfMonth", F_DATEPART, 1, 1, false},
    {"toDayOfYear", F_DATEPART, 1, 1, false},
    {"toHour", F_DATEPART, 1, 1, false},
    {"toMinute", F_DATEPART, 1, 1, false},
    {"toSecond", F_DATEPART, 1, 1, false},
    {"toQuarter", F_DATEPART, 1, 1, false},
    {"dateAdd", F_DATEADD, 3, 3, false},
    {"date_add", F_DATEADD, 3, 3, false},
    {"dateSub", F_DATEADD, 3, 3, false},
    {"date_sub", F_DATEADD, 3, 3, false},
    {"addSeconds", F_DATEADD, 2, 2, false},
    {"addMinutes", F_DATEADD, 2, 2, false},
    {"addHours", F_DATEADD, 2, 2, false},
    {"addDays", F_DATEADD, 2, 2, false},
    {"addWeeks", F_DATEADD, 2, 2, false},
    {"addMonths", F_DATEADD, 2, 2, false},
    {"addQuarters", F_DATEADD, 2, 2, false},
    {"addYears", F_DATEADD, 2, 2, false},
    {"subtractSeconds", F_DATEADD, 2, 2, false},
    {"subtractMinutes", F_DATEADD, 2, 2, false},
    {"subtractHours", F_DATEADD, 2, 2, false},
    {"subtractDays", F_DATEADD, 2, 2, false},
    {"subtractWeeks", F_DATEADD, 2, 2, false},
    {"subtractMonths", F_DATEADD, 2, 2, false},
    {"subtractQuarters", F_DATEADD, 2, 2, false},
    {"subtractYears", F_DATEADD, 2, 2, false},
    {"formatDateTime", F_FORMATDATETIME, 2, 2, false},
    {"parseDateTimeBestEffort", F_PARSEDATETIME, 1, 1, false},
    {"parseDateTimeBestEffortOrNull", F_PARSEDATETIME, 1, 1, false},
    {"parseDateTimeBestEffortOrZero", F_PARSEDATETIME, 1, 1, false},
    {"assumeNotNull", F_ASSUMENOTNULL, 1, 1, false},
    {"ifNull", F_COALESCE, 2, 2, false},
    /* the operators under their function names */
    {"plus", F_ADD, 2, 2, false},
    {"minus", F_SUB, 2, 2, false},
    {"multiply", F_MUL, 2, 2, false},
    {"divide", F_DIV, 2, 2, false},
    {"modulo", F_MOD, 2, 2, false},
    {"negate", F_NEG, 1, 1, false},
    {"equals", F_EQ, 2, 2, false},
    {"notEquals", F_NE, 2, 2, false},
    {"less", F_LT, 2, 2, false},
    {"lessOrEquals", F_LE, 2, 2, false},
    {"greater", F_GT, 2, 2, false},
    {"greaterOrEquals", F_GE, 2, 2, false},
    {"and", F_AND, 2, 255, false},
    {"or", F_OR, 2, 255, false},
    {"not", F_NOT, 1, 1, false},
    {"isNull", F_ISNULL, 1, 1, false},
    {"isNotNull", F_ISNOTNULL, 1, 1, false},
    {"like", F_LIKE, 2, 2, false},
    {"ilike", F_ILIKE, 2, 2, false},
};

/* The unit or mode of the functions that share an evaluation:
 * F_TOSTARTOF / F_DATEPART / F_DATEADD (negative: from the first argument,
 * -2 subtracting; 100 + unit: subtracting) and F_PARSEDATETIME (1 OrNull, 2 OrZero). */
static const struct {
    const char *name;
    int unit;
} fn_units[] = {
    {"toStartOfSecond", BX_U_SECOND},
    {"toStartOfMinute", BX_U_MINUTE},
    {"toStartOfFiveMinutes", BX_U_MIN5},
    {"toStartOfTenMinutes", BX_U_MIN10},
    {"toStartOfFifteenMinutes", BX_U_MIN15},
    {"toStartOfHour", BX_U_HOUR},
    {"toStartOfWeek", BX_U_WEEK},
    {"toMonday", BX_U_MONDAY},
    {"toStartOfQuarter", BX_U_QUARTER},
    {"toStartOfYear", BX_U_YEAR},
    {"toYYYYMM", BX_P_YYYYMM},
    {"toYYYYMMDD", BX_P_YYYYMMDD},
    {"toYYYYMMDDhhmmss", BX_P_YYYYMMDDHHMMSS},
    {"toDayOfWeek", BX_P_DAYOFWEEK},
    {"toDayOfMonth", BX_P_DAYOFMONTH},
    {"toDayOfYear", BX_P_DAYOFYEAR},
    {"toHour", BX_P_HOUR},
    {"toMinute", BX_P_MINUTE},
    {"toSecond", BX_P_SECOND},
    {"toQuarter", BX_P_QUARTER},
    {"dateAdd", -1},
    {"date_add", -1},
    {"dateSub", -2},
    {"date_sub", -2},
    {"addSeconds", BX_U_SECOND},
    {"addMinutes", BX_U_MINUTE},
    {"addHours", BX_U_HOUR},
    {"addDays", BX_U_DAY},
    {"addWeeks", BX_U_WEEK},
    {"addMonths", BX_U_MONTH},
    {"addQuarters", BX_U_QUARTER},
    {"addYears", BX_U_YEAR},
    {"subtractSeconds", 100 + BX_U_SECOND},
    {"subtractMinutes", 100 + BX_U_MINUTE},
    {"subtractHours", 100 + BX_U_HOUR},
    {"subtractDays", 100 + BX_U_DAY},
    {"subtractWeeks", 100 + BX_U_WEEK},
    {"subtractMonths", 100 + BX_U_MONTH},
    {"subtractQuarters", 100 + BX_U_QUARTER},
    {"subtractYears", 100 + BX_U_YEAR},
    {"parseDateTimeBestEffortOrNull", 1},
    {"parseDateTimeBestEffortOrZero", 2},
};

static int fn_unit(const char *name)
{
    for (size_t i = 0; i < sizeof(fn_units) / sizeof(fn_units[0]); i++)
        if (strcasecmp(fn_units[i].name, name) == 0)
            return fn_units[i].unit;
    return 0;
}

static const struct fn_def *find_fn(const char *name)
{
    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
        if (strcasecmp(fns[i].name, name) == 0)
            return &fns[i];
    return NULL;
}

/* An aggregate call with its combinators: f, fIf, fDistinct, fDistinctIf. */
typedef struct agg_call {
    const struct fn_def *d;
    bool cond, distinct;
} agg_call;

static bool resolve_agg(const char *name, agg_call *out)
{
    memset(out, 0, sizeof(*out));
    const struct fn_def *d = find_fn(name);
    if (d)
        return d->agg && (out->d = d);
    size_t l = strlen(name);
    char base[96];
    if (l > 2 && l < sizeof(base) && strcmp(name + l - 2, "If") == 0) {
        memcpy(base, name, l - 2);
        base[l - 2] = 0;
        if (!resolve_agg(base, out) || out->cond)
            return false;
        out->cond = true;
        return true;
    }
    if (l > 8 && l < sizeof(base) && strcmp(name + l - 8, "Distinct") == 0) {
        memcpy(base, name, l - 8);
        base[l - 8] = 0;
        if (!(d = find_fn(base)) || !d->agg)
            return false;
        out->d = d;
        out->distinct = true;
        return true;
    }
    return false;
}

static bool is_agg_call(const sql_node *n)
{
    agg_call c;
    return n->kind == SQL_FUNC && resolve_agg(n->s, &c);
}

/* ---- binding ------------------------------------------------------------------ */

typedef enum { MODE_PRE, MODE_POST } bmode;

static bx *bind(binder *b, const sql_node *n, bmode mode);

static bx *aj_ref(binder *b)
{
    bx *e = bx_new(b, BX_COL);
    if (!e)
        return NULL;
    e->col = AJ_SLOT;
    e->t = ex_arr_elem(&b->p->ajoin->t);
    return e;
}

static bx *col_ref(binder *b, const sql_node *n)
{
    if (b->aj_name && n->kind == SQL_COLUMN && strcmp(n->s, b->aj_name) == 0)
        return aj_ref(b);
    int c = resolve_column(b->sc, n);
    if (c < 0) {
        const char **cands = malloc(sizeof(char *) * (size_t)(b->sc->n + b->st->n_items + 1));
        int nc = 0;
        if (cands) {
            for (int i = 0; i < b->sc->n; i++)
                cands[nc++] = b->sc->cols[i].name;
            for (int i = 0; i < b->st->n_items; i++)
                if (b->st->items[i].alias)
                    cands[nc++] = b->st->items[i].alias;
        }
        const char *s = cands ? eng_suggest(n->s, cands, nc) : NULL;
        if (s)
            berr(b, n, "unknown column '%s', did you mean '%s'?", n->s, s);
        else
            berr(b, n, "unknown column '%s': the file has %d columns (DESCRIBE lists them)", n->s,
                 b->sc->n);
        free(cands);
        return NULL;
    }
    if (b->sc->cols[c].nested) {
        berr(b, n,
             "column '%s' is %s, which is not supported yet (leave it out of the query: the "
             "other columns can be read; SELECT * EXCEPT (%s) reads them all)",
             b->sc->cols[c].name, b->sc->cols[c].nested, b->sc->cols[c].name);
        return NULL;
    }
    int slot = -1;
    for (int k = 0; k < b->p->n_need; k++)
        if (b->p->need[k] == c)
            slot = k;
    if (slot < 0) {
        int *nn = realloc(b->p->need, sizeof(int) * (size_t)(b->p->n_need + 1));
        if (!nn) {
            boom(b);
            return NULL;
        }
        b->p->need = nn;
        slot = b->p->n_need++;
        nn[slot] = c;
    }
    bx *e = bx_new(b, BX_COL);
    if (!e)
        return NULL;
    e->col = slot;
    e->t = b->sc->cols[c].t;
    return e;
}

static bx *literal(binder *b, const sql_node *n)
{
    bx *e;
    switch (n->kind) {
    case SQL_NULL: return const_new(b, (ex_type){.kind = EX_NOTHING, .nullable = true});
    case SQL_BOOL:
        if ((e = const_new(b, (ex_type){.kind = EX_BOOL})))
            e->cval.i[0] = n->i;
        return e;
    case SQL_INT: {
        /* ClickHouse's type of an integer literal: the narrowest that holds
         * it, unsigned unless negative (SELECT 1 is UInt8, -1 is Int8) */
        uint8_t bits;
        if (!n->negated) {
            uint64_t u = n->u;
            bits = u <= UINT8_MAX ? 8 : u <= UINT16_MAX ? 16 : u <= UINT32_MAX ? 32 : 64;
            if ((e = const_new(b, (ex_type){.kind = EX_UINT, .bits = bits})))
                e->cval.i[0] = (int64_t)u;
            return e;
        }
        int64_t i = n->i;
        bits = i >= INT8_MIN ? 8 : i >= INT16_MIN ? 16 : i >= INT32_MIN ? 32 : 64;
        if ((e = const_new(b, (ex_type){.kind = EX_INT, .bits = bits})))
            e->cval.i[0] = i;
        return e;
    }
    case SQL_FLOAT:
        if ((e = const_new(b, (ex_type){.kind = EX_FLOAT, .bits = 64})))
            e->cval.d[0] = n->d;
        return e;
    case SQL_STRING:
        if ((e = const_new(b, (ex_type){.kind = EX_STRING})) &&
            ex_vec_str_put(b->mem, &e->cval, 0, n->s, n->slen) < 0) {
            bx_free(b->mem, e);
            boom(b);
            return NULL;
        }
        return e;
    default: return NULL;
    }
}

static bool is_temporal(uint8_t k)
{
    return k == EX_DATE || k == EX_DATETIME;
}

static void type_str(const ex_type *t, char *buf, size_t cap)
{
    ex_type_name(t, buf, cap);
}

/* CAST(x AS n->s) that cannot be: the sentence names both types and why; x
 * is freed. NULL. */
static bx *cast_refused(binder *b, const sql_node *n, bx *x, const char *why)
{
    char tn[128];
    type_str(&x->t, tn, sizeof(tn));
    bx_free(b->mem, x);
    berr(b, n, "CAST of %s to %s is not supported (%s)", tn, n->s, why);
    return NULL;
}

/* Makes the two operands of a comparison comparable (string constants against
 * dates become dates; Date against DateTime becomes DateTime). */
static bool unify_cmp(binder *b, const sql_node *at, bx **x, bx **y)
{
    ex_type tx = (*x)->t, ty = (*y)->t;
    if (tx.kind == EX_NOTHING || ty.kind == EX_NOTHING)
        return true;
    if (is_temporal(tx.kind) && ty.kind == EX_STRING) {
        ex_type t = tx;
        t.nullable = false;
        *y = cast_to(b, *y, t);
        return *y != NULL;
    }
    if (is_temporal(ty.kind) && tx.kind == EX_STRING) {
        ex_type t = ty;
        t.nullable = false;
        *x = cast_to(b, *x, t);
        return *x != NULL;
    }
    if (is_temporal(tx.kind) && is_temporal(ty.kind)) {
        if (tx.kind == ty.kind && tx.scale == ty.scale)
            return true;
        ex_type t = {.kind = EX_DATETIME, .scale = tx.scale > ty.scale ? tx.scale : ty.scale};
        t.nullable = tx.nullable;
        *x = cast_to(b, *x, t);
        t.nullable = ty.nullable;
        *y = cast_to(b, *y, t);
        return *x && *y;
    }
    /* a date against a number: the number as the date's type (days, or
     * seconds for DateTime), as ClickHouse compares now() > 0 */
    bool nx = tx.kind == EX_INT || tx.kind == EX_UINT, ny = ty.kind == EX_INT || ty.kind == EX_UINT;
    if (is_temporal(tx.kind) && ny) {
        ex_type t = tx;
        t.nullable = ty.nullable;
        *y = cast_to(b, *y, t);
        return *y != NULL;
    }
    if (is_temporal(ty.kind) && nx) {
        ex_type t = ty;
        t.nullable = tx.nullable;
        *x = cast_to(b, *x, t);
        return *x != NULL;
    }
    bool sx = tx.kind == EX_STRING, sy = ty.kind == EX_STRING;
    if (sx != sy || (is_temporal(tx.kind) != is_temporal(ty.kind) && !(sx || sy))) {
        char a[64], c[64];
        type_str(&tx, a, sizeof(a));
        type_str(&ty, c, sizeof(c));
        berr(b, at, "cannot compare %s with %s: convert one side with CAST", a, c);
        return false;
    }
    return true;
}

static int date_unit(const char *s)
{
    static const struct {
        const char *n;
        int u;
    } u[] = {
        {"second", 0},  {"seconds", 0},  {"ss", 0},    {"s", 0},      {"minute", 1}, {"minutes", 1},
        {"mi", 1},      {"n", 1},        {"hour", 2},  {"hours", 2},  {"hh", 2},     {"h", 2},
        {"day", 3},     {"days", 3},     {"dd", 3},    {"d", 3},      {"week", 4},   {"weeks", 4},
        {"wk", 4},      {"ww", 4},       {"month", 5}, {"months", 5}, {"mm", 5},     {"m", 5},
        {"quarter", 6}, {"quarters", 6}, {"qq", 6},    {"q", 6},      {"year", 7},   {"years", 7},
        {"yyyy", 7},    {"yy", 7},
    };
    for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
        if (strcasecmp(s, u[i].n) == 0)
            return u[i].u;
    return -1;
}

/* The level of quantile(level)(x) / median: a constant in [0, 1]. */
static bool agg_level(binder *b, const sql_node *n, const struct fn_def *d, double *level)
{
    *level = 0.5;
    bool quant = d->fn == AG_QUANTILE || d->fn == AG_QUANTILE_EXACT;
    bool median = strncasecmp(d->name, "median", 6) == 0;
    if (n->nparams == 0)
        return true;
    if (!quant || median || n->nparams > 1) {
        berr(b, n, "aggregate function %s takes %s", n->s,
             quant && !median ? "one parameter, the level: quantile(0.9)(x)" : "no parameters");
        return false;
    }
    const sql_node *v = n->params[0];
    double x = v->kind == SQL_INT     ? (v->negated ? (double)v->i : (double)v->u)
               : v->kind == SQL_FLOAT ? v->d
                                      : -1;
    if ((v->kind != SQL_INT && v->kind != SQL_FLOAT) || !(x >= 0 && x <= 1)) {
        berr(b, v, "the level of %s must be a number from 0 to 1, as in quantile(0.9)(x)", n->s);
        return false;
    }
    *level = x;
    return true;
}

static bool agg_numeric(binder *b, const sql_node *n, const bx *arg)
{
    if (arg && (ex_is_num(arg->t.kind) || arg->t.kind == EX_DECIMAL || arg->t.kind == EX_NOTHING))
        return true;
    char tn[64] = "nothing";
    if (arg)
        type_str(&arg->t, tn, sizeof(tn));
    berr(b, n, "illegal type %s of the argument of %s(): it needs a number", tn, n->s);
    return false;
}

static bx *bind_agg(binder *b, const sql_node *n, const agg_call *call)
{
    const struct fn_def *d = call->d;
    if (b->in_agg) {
        berr(b, n,
             "aggregate function %s() is found inside another aggregate function: "
             "move it out or use a subquery-free form",
             n->s);
        return NULL;
    }
    eng_plan *p = b->p;
    /* same call seen before: share it */
    int idx = -1;
    for (int i = 0; i < p->n_aggs; i++)
        if (sql_node_equal(p->aggs[i].node, n))
            idx = i;
    if (idx < 0) {
        int na = n->nargs - (call->cond ? 1 : 0);
        if (d->fn == AG_COUNT && na == 1 && n->args[0]->kind == SQL_STAR)
            na = 0;
        if (na < d->min || na > d->max || (call->cond && n->nargs < 1)) {
            int want = d->max + (call->cond ? 1 : 0);
            berr(b, n, "aggregate function %s takes %s%d argument%s, not %d", n->s,
                 d->min != d->max ? "up to " : "", want, want == 1 ? "" : "s", n->nargs);
            return NULL;
        }
        eng_agg ag = {.fn = (eng_agg_fn)d->fn, .distinct = call->distinct};
        bool listed = d->fn == AG_GROUPARRAY || d->fn == AG_GROUPUNIQ || d->fn == AG_TOPK;
        if (listed) {
            /* groupArray(N)(x), groupUniqArray(N)(x): at most N; topK(N)(x): N, 10 by default */
            ag.limit = d->fn == AG_TOPK ? 10 : 0;
            if (n->nparams > 1) {
                berr(b, n, "aggregate function %s takes one parameter, the count: %s(10)(x)", n->s,
                     d->name);
                return NULL;
            }
            if (n->nparams == 1) {
                const sql_node *v = n->params[0];
                if (v->kind != SQL_INT || v->negated || v->u == 0 || v->u > 0xffffff) {
                    berr(b, v, "the parameter of %s must be a positive integer (at most 16777215)",
                         d->name);
                    return NULL;
                }
                ag.limit = (uint32_t)v->u;
            }
            if (call->distinct) {
                berr(b, n, "the Distinct combinator of %s is not supported%s", d->name,
                     d->fn == AG_GROUPARRAY ? ": groupUniqArray keeps each value once" : "");
                return NULL;
            }
        } else if (!agg_level(b, n, d, &ag.level))
            return NULL;
        if (call->distinct) {
            if (d->fn == AG_COUNT) {
                if (na == 0) {
                    berr(b, n, "%s needs an argument", n->s);
                    return NULL;
                }
                ag.fn = AG_UNIQ;
                ag.distinct = false;
            } else if (d->fn == AG_MIN || d->fn == AG_MAX || d->fn == AG_ANY ||
                       d->fn == AG_ANYLAST || d->fn == AG_UNIQ) {
                ag.distinct = false; /* the same answer */
            } else if (d->fn != AG_SUM && d->fn != AG_AVG) {
                berr(b, n,
                     "the Distinct combinator of %s is not supported: it applies to "
                     "count, sum, avg, min, max, any and anyLast",
                     d->name);
                return NULL;
            }
        }
        b->in_agg = true;
        if (na >= 1)
            ag.arg = bind(b, n->args[0], MODE_PRE);
        if (na >= 2 && !b->rc)
            ag.arg2 = bind(b, n->args[1], MODE_PRE);
        if (call->cond && !b->rc) {
            ag.cond = bind(b, n->args[n->nargs - 1], MODE_PRE);
            if (ag.cond && (ag.cond->t.kind == EX_STRING || is_temporal(ag.cond->t.kind))) {
                char tn[64];
                type_str(&ag.cond->t, tn, sizeof(tn));
                berr(b, n->args[n->nargs - 1],
                     "the condition of %s must be a number or a "
                     "comparison, not %s",
                     n->s, tn);
            }
        }
        b->in_agg = false;
        if (b->rc)
            goto fail;
        if ((ag.arg && ag.arg->t.kind == EX_ARRAY &&
             !(listed || ag.fn == AG_COUNT || ag.fn == AG_UNIQ || ag.fn == AG_ANY ||
               ag.fn == AG_ANYLAST || ag.fn == AG_ARGMIN || ag.fn == AG_ARGMAX)) ||
            (ag.arg2 && ag.arg2->t.kind == EX_ARRAY)) {
            char tn[128];
            type_str(ag.arg2 && ag.arg2->t.kind == EX_ARRAY ? &ag.arg2->t : &ag.arg->t, tn,
                     sizeof(tn));
            berr(b, n, "aggregate function %s does not take an Array (%s)", n->s, tn);
            goto fail;
        }
        bx *arg = ag.arg;
        ex_type t = {0};
        bool nul = arg && (arg->t.nullable || arg->t.kind == EX_NOTHING);
        if (ag.arg2 && (ag.arg2->t.nullable || ag.arg2->t.kind == EX_NOTHING))
            nul = true;
        switch (ag.fn) {
        case AG_COUNT:
        case AG_UNIQ: t = (ex_type){.kind = EX_UINT, .bits = 64}; break;
        case AG_SUM:
            if (arg && arg->t.kind == EX_DECIMAL) {
                /* ClickHouse: the sum of any Decimal is Decimal128 of the same scale */
                t = ex_decimal_type(38, arg->t.scale, arg->t.nullable);
                break;
            }
            if (!agg_numeric(b, n, arg))
                goto fail;
            t.kind = arg->t.kind == EX_FLOAT ? EX_FLOAT : arg->t.kind == EX_UINT ? EX_UINT : EX_INT;
            t.bits = 64;
            t.nullable = arg->t.nullable;
            break;
        case AG_AVG:
        case AG_QUANTILE:
        case AG_VAR_POP:
        case AG_VAR_SAMP:
        case AG_STDDEV_POP:
        case AG_STDDEV_SAMP:
        case AG_CORR:
            if (!agg_numeric(b, n, arg) || (ag.arg2 && !agg_numeric(b, n, ag.arg2)))
                goto fail;
            t = (ex_type){.kind = EX_FLOAT, .bits = 64, .nullable = nul};
            break;
        case AG_QUANTILE_EXACT:
            if (!agg_numeric(b, n, arg))
                goto fail;
            t = arg->t;
            if (t.kind == EX_BOOL)
                t = (ex_type){.kind = EX_UINT, .bits = 8, .nullable = t.nullable};
            break;
        case AG_GROUPARRAY:
        case AG_GROUPUNIQ:
        case AG_TOPK: {
            ex_type et = arg->t;
            et.nullable = false; /* NULLs are skipped */
            if (et.kind == EX_ARRAY && et.depth >= 2) {
                berr(b, n,
                     "%s of an Array of Arrays: arrays nested more than two deep are not "
                     "supported",
                     n->s);
                goto fail;
            }
            if (et.kind == EX_NOTHING) {
                t = (ex_type){.kind = EX_ARRAY, .elem = EX_NOTHING, .depth = 1};
                break;
            }
            t = ex_arr_of(et);
            break;
        }
        default: t = arg->t; break;
        }
        ag.t = t;
        if (ag.fn == AG_COUNT && arg && arg->t.kind == EX_NOTHING) {
            /* count(NULL) is 0: keep a never-true argument */
            bx_free(b->mem, ag.arg);
            ag.arg = const_new(b, (ex_type){.kind = EX_NOTHING, .nullable = true});
        }
        eng_agg *na2 = realloc(p->aggs, sizeof(*na2) * (size_t)(p->n_aggs + 1));
        if (!na2) {
            boom(b);
            goto fail;
        }
        p->aggs = na2;
        idx = p->n_aggs++;
        ag.node = sql_node_clone(n);
        p->aggs[idx] = ag;
        if (!p->aggs[idx].node) {
            boom(b);
            return NULL;
        }
        goto found;
    fail:
        bx_free(b->mem, ag.arg);
        bx_free(b->mem, ag.arg2);
        bx_free(b->mem, ag.cond);
        return NULL;
    }
found:;
    bx *e = bx_new(b, BX_COL);
    if (!e)
        return NULL;
    e->col = b->n_gkeys + idx;
    e->t = p->aggs[idx].t;
    return e;
}

/* A date argument: a string becomes a DateTime; false (with the error) when
 * it is not a date. */
static bool date_arg(binder *b, const sql_node *n, bx **a, int i)
{
    if (a[i]->t.kind == EX_STRING)
        a[i] = cast_to(b, a[i], (ex_type){.kind = EX_DATETIME, .nullable = a[i]->t.nullable});
    if (!a[i])
        return false;
    if (!is_temporal(a[i]->t.kind) && a[i]->t.kind != EX_NOTHING) {
        char tn[64];
        type_str(&a[i]->t, tn, sizeof(tn));
        berr(b, n, "illegal type %s of argument %d of %s: it needs a Date or DateTime", tn, i + 1,
             n->s);
        return false;
    }
    return true;
}

static bool num_arg(binder *b, const sql_node *n, bx **a, int i, bool integer)
{
    ex_type t = a[i]->t;
    if (t.kind == EX_NOTHING || (ex_is_num(t.kind) && !(integer && t.kind == EX_FLOAT)))
        return true;
    char tn[64];
    type_str(&t, tn, sizeof(tn));
    berr(b, n, "illegal type %s of argument %d of %s: it needs %s", tn, i + 1, n->s,
         integer ? "an integer" : "a number");
    return false;
}

static bool str_arg(binder *b, const sql_node *n, bx **a, int i, bool constant)
{
    ex_type t = a[i]->t;
    if (constant && (a[i]->op != BX_CONST || t.kind != EX_STRING)) {
        berr(b, n, "argument %d of %s must be a constant string", i + 1, n->s);
        return false;
    }
    if (t.kind == EX_STRING || t.kind == EX_NOTHING)
        return true;
    char tn[64];
    type_str(&t, tn, sizeof(tn));
    berr(b, n, "illegal type %s of argument %d of %s: it needs a String", tn, i + 1, n->s);
    return false;
}

/* The result type of a date moved by a unit: a Date stays a Date for days
 * and longer, a DateTime keeps its scale. */
static ex_type date_add_type(const bx *d, int unit, bool nullable)
{
    ex_type t = d->t;
    if (t.kind == EX_DATE && unit < BX_U_DAY)
        t = (ex_type){.kind = EX_DATETIME};
    t.nullable = nullable;
    return t;
}

/* Type rules of the functions of eng_eval_fn.c. Takes a[]. */
static bx *bind_fn_more(binder *b, const sql_node *n, int fn, bx **a, int na)
{
    int unit = fn_unit(n->s);
    bool anynull = false;
    for (int i = 0; i < na; i++)
        anynull |= a[i]->t.nullable || a[i]->t.kind == EX_NOTHING;
    ex_type t = {0};
    bool neg = false;
    switch (fn) {
    case F_INTDIV:
        if (!num_arg(b, n, a, 0, false) || !num_arg(b, n, a, 1, false))
            goto fail;
        t = (ex_type){.kind = a[0]->t.kind == EX_UINT && a[1]->t.kind == EX_UINT ? EX_UINT : EX_INT,
                      .bits = 64};
        break;
    case F_POW:
    case F_LOG:
    case F_LOG2:
    case F_LOG10:
    case F_EXP:
    case F_SQRT:
        for (int i = 0; i < na; i++)
            if (!num_arg(b, n, a, i, false))
                goto fail;
        t = (ex_type){.kind = EX_FLOAT, .bits = 64};
        break;
    case F_FLOOR:
    case F_CEIL:
    case F_TRUNC:
        if (!num_arg(b, n, a, 0, false))
            goto fail;
        if (na > 1 &&
            (a[1]->op != BX_CONST || !ex_is_num(a[1]->t.kind) || a[1]->t.kind == EX_FLOAT)) {
            berr(b, n, "the second argument of %s must be a constant integer (the precision)",
                 n->s);
            goto fail;
        }
        t = a[0]->t;
        if (t.kind == EX_BOOL || t.kind == EX_NOTHING)
            t = (ex_type){.kind = EX_UINT, .bits = 8};
        break;
    case F_REPLACEALL:
    case F_REPLACEONE:
        for (int i = 0; i < 3; i++)
            if (!str_arg(b, n, a, i, false))
                goto fail;
        t = (ex_type){.kind = EX_STRING};
        break;
    case F_REPLACEREGEXPALL:
    case F_REPLACEREGEXPONE:
    case F_MATCH:
    case F_EXTRACT:
        if (!str_arg(b, n, a, 0, false) || !str_arg(b, n, a, 1, true) ||
            (na > 2 && !str_arg(b, n, a, 2, false)))
            goto fail;
        t = fn == F_MATCH ? t_u8() : (ex_type){.kind = EX_STRING};
        break;
    case F_TRIMBOTH:
    case F_TRIMLEFT:
    case F_TRIMRIGHT:
    case F_REVERSE:
    case F_EMPTY:
    case F_NOTEMPTY:
    case F_XXHASH64:
    case F_SIPHASH64:
    case F_CITYHASH64:
        if (!str_arg(b, n, a, 0, false))
            goto fail;
        t = fn == F_EMPTY || fn == F_NOTEMPTY ? t_u8()
            : fn == F_XXHASH64 || fn == F_SIPHASH64 || fn == F_CITYHASH64
                ? (ex_type){.kind = EX_UINT, .bits = 64}
                : (ex_type){.kind = EX_STRING};
        break;
    case F_FMT_SIZE:
    case F_FMT_QUANTITY:
    case F_FMT_TIMEDELTA:
        if (!num_arg(b, n, a, 0, false))
            goto fail;
        t = (ex_type){.kind = EX_STRING};
        break;
    case F_TOSTARTOF:
        if (!date_arg(b, n, a, 0))
            goto fail;
        if (unit == BX_U_WEEK || unit == BX_U_MONDAY || unit == BX_U_QUARTER || unit == BX_U_YEAR)
            t = (ex_type){.kind = EX_DATE, .bits = 16};
        else
            t = (ex_type){.kind = EX_DATETIME,
                          .scale = a[0]->t.kind == EX_DATETIME ? a[0]->t.scale : 0};
        break;
    case F_DATEPART:
        if (!date_arg(b, n, a, 0))
            goto fail;
        t = (ex_type){.kind = EX_UINT,
                      .bits = unit == BX_P_YYYYMMDDHHMMSS                    ? 64
                              : unit == BX_P_YYYYMM || unit == BX_P_YYYYMMDD ? 32
                              : unit == BX_P_DAYOFYEAR                       ? 16
                                                                             : 8};
        break;
    case F_DATEADD: {
        /* addDays(d, n) / subtractDays(d, n): the amount first, as dateAdd has it */
        bx *x = a[0];
        a[0] = a[1];
        a[1] = x;
        neg = unit >= 100;
        unit %= 100;
        if (!num_arg(b, n, a, 0, true) || !date_arg(b, n, a, 1))
            goto fail;
        t = date_add_type(a[1], unit, false);
        break;
    }
    case F_FORMATDATETIME:
        if (!date_arg(b, n, a, 0) || !str_arg(b, n, a, 1, true))
            goto fail;
        t = (ex_type){.kind = EX_STRING};
        break;
    case F_PARSEDATETIME:
        if (!str_arg(b, n, a, 0, false))
            goto fail;
        t = (ex_type){.kind = EX_DATETIME};
        anynull |= unit == 1;
        break;
    case F_ASSUMENOTNULL:
        if (a[0]->t.kind == EX_NOTHING) {
            berr(b, n, "assumeNotNull(NULL) has no type: CAST the NULL to one");
            goto fail;
        }
        t = a[0]->t;
        anynull = false;
        break;
    default: berr(b, n, "internal: function %s has no type rule", n->s); goto fail;
    }
    t.nullable = anynull;
    bx *e = bx_fn_new(b, (bx_fn)fn, t, a, na);
    if (e) {
        e->unit = unit;
        e->negated = neg;
    }
    return fold(b, e);
fail:
    for (int i = 0; i < na; i++)
        bx_free(b->mem, a[i]);
    return NULL;
}

/* ---- arrays ------------------------------------------------------------------ */

/* The element type of an array literal: the supertype of its elements. */
static bool arr_elem_type(binder *b, const sql_node *n, bx **a, int na, ex_type *out)
{
    ex_type st = {.kind = EX_NOTHING, .nullable = true};
    for (int i = 0; i < na; i++) {
        ex_type nt;
        if (i == 0) {
            st = a[0]->t;
            continue;
        }
        if (!supertype(st, a[i]->t, &nt)) {
            char x[128], y[128];
            type_str(&st, x, sizeof(x));
            type_str(&a[i]->t, y, sizeof(y));
            berr(b, n,
                 "there is no supertype for the elements %s and %s of an array: CAST them to "
                 "one type",
                 x, y);
            return false;
        }
        st = nt;
    }
    if (st.kind == EX_ARRAY && st.depth >= 2) {
        berr(b, n, "arrays nested more than two deep are not supported");
        return false;
    }
    *out = st;
    return true;
}

/* Whether a value of type x can be looked up among elements of type et
 * (has, IN): numbers with numbers, strings with strings, one temporal kind. */
static bool arr_comparable(ex_type et, ex_type x)
{
    if (x.kind == EX_NOTHING || et.kind == EX_NOTHING)
        return true;
    if (ex_is_num(et.kind) || et.kind == EX_DECIMAL)
        return ex_is_num(x.kind) || x.kind == EX_DECIMAL;
    return et.kind == x.kind && et.scale == x.scale;
}

static bx *bind_array_fn(binder *b, const sql_node *n, int fn, bx **a, int na)
{
    ex_type t = {0};
    char t0[128] = "";
    if (na)
        type_str(&a[0]->t, t0, sizeof(t0));
    const char *name = n->s ? n->s : "this operator";
    if (fn != F_ARRAY && fn != F_SPLITBYCHAR && fn != F_SPLITBYSTRING && a[0]->t.kind != EX_ARRAY) {
        berr(b, n, "illegal type %s of the first argument of %s: it needs an Array", t0, name);
        goto fail;
    }
    switch (fn) {
    case F_ARRAY: {
        if (na == 0) {
            t = (ex_type){.kind = EX_ARRAY, .elem = EX_NOTHING, .depth = 1};
            break;
        }
        ex_type et;
        if (!arr_elem_type(b, n, a, na, &et))
            goto fail;
        for (int i = 0; i < na; i++) {
            if (a[i]->t.kind == EX_NOTHING)
                continue; /* a NULL */
            if (a[i]->t.kind == EX_ARRAY) {
                if (!(a[i] = cast_to(b, a[i], et)))
                    goto fail;
                continue;
            }
            if (a[i]->t.kind != et.kind || a[i]->t.scale != et.scale) {
                ex_type ct = et;
                ct.nullable = a[i]->t.nullable;
                if (!(a[i] = cast_to(b, a[i], ct)))
                    goto fail;
            }
        }
        t = ex_arr_of(et);
        break;
    }
    case F_HAS: {
        ex_type et = ex_arr_elem(&a[0]->t);
        if (is_temporal(et.kind) && a[1]->t.kind == EX_STRING) {
            ex_type ct = et;
            ct.nullable = a[1]->t.nullable;
            if (!(a[1] = cast_to(b, a[1], ct)))
                goto fail;
        }
        if (a[1]->t.kind == EX_ARRAY || !arr_comparable(et, a[1]->t)) {
            char y[128];
            type_str(&a[1]->t, y, sizeof(y));
            berr(b, n, "has(%s, %s): the value must be of the array's element type", t0, y);
            goto fail;
        }
        t = t_u8();
        break;
    }
    case F_ELEMENT:
        if (!ex_is_num(a[1]->t.kind) || a[1]->t.kind == EX_FLOAT || a[1]->t.kind == EX_BOOL) {
            if (a[1]->t.kind != EX_NOTHING) {
                berr(b, n, "the index of %s[...] must be an integer", t0);
                goto fail;
            }
        }
        t = ex_arr_elem(&a[0]->t);
        if (a[1]->t.kind == EX_NOTHING || a[1]->t.nullable)
            t.nullable = true; /* arr[NULL] is NULL */
        if (t.kind == EX_ARRAY)
            t.nullable = false;
        break;
    case F_LENGTH: t = (ex_type){.kind = EX_UINT, .bits = 64}; break;
    case F_EMPTY:
    case F_NOTEMPTY: t = t_u8(); break;
    case F_EQ:
    case F_NE: {
        ex_type st;
        if (a[1]->t.kind != EX_ARRAY || !arr_supertype(a[0]->t, a[1]->t, &st)) {
            char y[128];
            type_str(&a[1]->t, y, sizeof(y));
            berr(b, n, "cannot compare %s with %s: compare arrays of one element type", t0, y);
            goto fail;
        }
        for (int i = 0; i < 2; i++)
            if (!(a[i] = cast_to(b, a[i], st)))
                goto fail;
        bx *r = bx_fn_new(b, F_ARR_EQ, t_u8(), a, 2);
        if (r)
            r->negated = fn == F_NE;
        return fold(b, r);
    }
    case F_SPLITBYCHAR:
    case F_SPLITBYSTRING: {
        if (a[0]->op != BX_CONST || a[0]->t.kind != EX_STRING || ex_null(&a[0]->cval, 0)) {
            berr(b, n, "the separator of %s must be a constant String", name);
            goto fail;
        }
        uint32_t l;
        (void)ex_str(&a[0]->cval, 0, &l);
        if (fn == F_SPLITBYCHAR && l != 1) {
            berr(b, n,
                 "the separator of splitByChar must be exactly one character (%u given): use "
                 "splitByString",
                 l);
            goto fail;
        }
        if (a[1]->t.kind != EX_STRING) {
            char y[128];
            type_str(&a[1]->t, y, sizeof(y));
            berr(b, n, "illegal type %s of the second argument of %s: it needs a String", y, name);
            goto fail;
        }
        if (a[1]->t.nullable) {
            berr(b, n,
                 "%s of a Nullable(String): an Array cannot be inside Nullable (write "
                 "%s(sep, ifNull(s, '')) or assumeNotNull(s))",
                 name, name);
            goto fail;
        }
        t = ex_arr_of((ex_type){.kind = EX_STRING});
        break;
    }
    default: berr(b, n, "%s does not take an Array", name); goto fail;
    }
    if (fn == F_LENGTH)
        fn = F_ARR_LENGTH;
    else if (fn == F_EMPTY)
        fn = F_ARR_EMPTY;
    else if (fn == F_NOTEMPTY)
        fn = F_ARR_NOTEMPTY;
    return fold(b, bx_fn_new(b, (bx_fn)fn, t, a, na));
fail:
    for (int i = 0; i < na; i++)
        bx_free(b->mem, a[i]);
    return NULL;
}

static bx *bind_fn(binder *b, const sql_node *n, bmode mode, int fn, bx **a, int na)
{
    ex_type t = {0};
    bool anynull = false;
    for (int i = 0; i < na; i++)
        anynull |= a[i]->t.nullable || a[i]->t.kind == EX_NOTHING;
    char t0[64] = "";
    if (na)
        type_str(&a[0]->t, t0, sizeof(t0));
    if (fn >= F_ARRAY ||
        (na && a[0]->t.kind == EX_ARRAY &&
         (fn == F_LENGTH || fn == F_EMPTY || fn == F_NOTEMPTY || fn == F_EQ || fn == F_NE)))
        return bind_array_fn(b, n, fn, a, na);
    for (int i = 0; i < na; i++)
        if (a[i]->t.kind == EX_ARRAY && fn != F_ISNULL && fn != F_ISNOTNULL && fn != F_IF &&
            fn != F_MULTIIF && fn != F_COALESCE) {
            char tn[128];
            type_str(&a[i]->t, tn, sizeof(tn));
            berr(b, n, "%s%s does not take an Array: argument %d is %s", n->s ? "function " : "",
                 n->s ? n->s : "this operator", i + 1, tn);
            goto fail;
        }
    switch (fn) {
    case F_ADD:
    case F_SUB:
    case F_MUL:
    case F_DIV:
    case F_MOD: {
        ex_type x = a[0]->t, y = a[1]->t;
        if (x.kind == EX_NOTHING || y.kind == EX_NOTHING) {
            t = (ex_type){.kind = EX_NOTHING, .nullable = true};
            break;
        }
        if ((fn == F_ADD || fn == F_SUB) && is_temporal(x.kind) && ex_is_num(y.kind) &&
            y.kind != EX_FLOAT) {
            t = x;
        } else if (fn == F_ADD && is_temporal(y.kind) && ex_is_num(x.kind) && x.kind != EX_FLOAT) {
            bx *s = a[0];
            a[0] = a[1];
            a[1] = s;
            t = y;
        } else if (fn == F_SUB && is_temporal(x.kind) && x.kind == y.kind && x.scale == y.scale) {
            t = (ex_type){.kind = EX_INT, .bits = 64};
        } else if (x.kind == EX_DECIMAL || y.kind == EX_DECIMAL) {
            char why[160];
            if (!bx_dec_result_type((bx_fn)fn, x, y, &t, why, sizeof(why))) {
                char t1[64];
                type_str(&y, t1, sizeof(t1));
                berr(b, n, "illegal types %s and %s of arguments of an arithmetic operator: %s", t0,
                     t1, why);
                goto fail;
            }
        } else if (ex_is_num(x.kind) && ex_is_num(y.kind)) {
            if (fn == F_DIV || x.kind == EX_FLOAT || y.kind == EX_FLOAT)
                t = (ex_type){.kind = EX_FLOAT, .bits = 64};
            else if (x.kind == EX_UINT && y.kind == EX_UINT && fn != F_SUB)
                t = (ex_type){.kind = EX_UINT, .bits = 64};
            else
                t = (ex_type){.kind = EX_INT, .bits = 64};
        } else {
            char t1[64];
            type_str(&y, t1, sizeof(t1));
            berr(b, n, "illegal types %s and %s of arguments of an arithmetic operator", t0, t1);
            goto fail;
        }
        t.nullable = anynull;
        break;
    }
    case F_NEG:
        if (a[0]->t.kind == EX_DECIMAL) {
            t = a[0]->t;
            break;
        }
        if (!ex_is_num(a[0]->t.kind) && a[0]->t.kind != EX_NOTHING) {
            berr(b, n, "illegal type %s of the argument of negate", t0);
            goto fail;
        }
        t = (ex_type){
            .kind = a[0]->t.kind == EX_FLOAT ? EX_FLOAT : EX_INT, .bits = 64, .nullable = anynull};
        break;
    case F_EQ:
    case F_NE:
    case F_LT:
    case F_LE:
    case F_GT:
    case F_GE:
        if (!unify_cmp(b, n, &a[0], &a[1]))
            goto fail_nofree;
        t = t_u8();
        t.nullable = a[0]->t.nullable || a[1]->t.nullable || a[0]->t.kind == EX_NOTHING ||
                     a[1]->t.kind == EX_NOTHING;
        break;
    case F_AND:
    case F_OR:
    case F_NOT:
        for (int i = 0; i < na; i++)
            if (a[i]->t.kind == EX_STRING || is_temporal(a[i]->t.kind)) {
                char tn[64];
                type_str(&a[i]->t, tn, sizeof(tn));
                berr(b, n,
                     "illegal type %s of an argument of a logical operator: it needs a "
                     "number or a condition",
                     tn);
                goto fail;
            }
        t = t_u8();
        t.nullable = anynull;
        break;
    case F_ISNULL:
    case F_ISNOTNULL: t = t_u8(); break;
    case F_LIKE:
    case F_ILIKE:
    case F_STARTSWITH:
    case F_ENDSWITH:
    case F_POSITION:
        for (int i = 0; i < 2; i++)
            if (a[i]->t.kind != EX_STRING && a[i]->t.kind != EX_NOTHING) {
                char tn[64];
                type_str(&a[i]->t, tn, sizeof(tn));
                berr(b, n, "illegal type %s of argument %d of %s: it needs a String", tn, i + 1,
                     fn == F_POSITION     ? "position"
                     : fn == F_STARTSWITH ? "startsWith"
                     : fn == F_ENDSWITH   ? "endsWith"
                                          : "LIKE");
                goto fail;
            }
        t = fn == F_POSITION ? (ex_type){.kind = EX_UINT, .bits = 64} : t_u8();
        t.nullable = anynull;
        break;
    case F_LENGTH:
    case F_LOWER:
    case F_UPPER:
    case F_SUBSTRING:
        if (a[0]->t.kind != EX_STRING && a[0]->t.kind != EX_NOTHING) {
            berr(b, n, "illegal type %s of the first argument of %s: it needs a String", t0, n->s);
            goto fail;
        }
        for (int i = 1; i < na; i++)
            if (!ex_is_num(a[i]->t.kind) || a[i]->t.kind == EX_FLOAT) {
                berr(b, n, "argument %d of %s must be an integer", i + 1, n->s);
                goto fail;
            }
        t = fn == F_LENGTH ? (ex_type){.kind = EX_UINT, .bits = 64} : (ex_type){.kind = EX_STRING};
        t.nullable = anynull;
        break;
    case F_CONCAT: t = (ex_type){.kind = EX_STRING, .nullable = anynull}; break;
    case F_TOYEAR:
    case F_TOMONTH:
    case F_TODATE:
    case F_TOSTARTOFMONTH:
    case F_TOSTARTOFDAY:
        if (a[0]->t.kind == EX_STRING)
            a[0] = cast_to(b, a[0], (ex_type){.kind = EX_DATETIME, .nullable = a[0]->t.nullable});
        if (!a[0])
            goto fail;
        if (!is_temporal(a[0]->t.kind) && !(fn == F_TODATE && ex_is_num(a[0]->t.kind)) &&
            a[0]->t.kind != EX_NOTHING) {
            berr(b, n, "illegal type %s of the argument of %s: it needs a Date or DateTime", t0,
                 n->s);
            goto fail;
        }
        switch (fn) {
        case F_TOYEAR: t = (ex_type){.kind = EX_UINT, .bits = 16}; break;
        case F_TOMONTH: t = (ex_type){.kind = EX_UINT, .bits = 8}; break;
        case F_TOSTARTOFDAY:
            t = (ex_type){.kind = EX_DATETIME,
                          .scale = a[0]->t.kind == EX_DATETIME ? a[0]->t.scale : 0};
            break;
        default: t = (ex_type){.kind = EX_DATE, .bits = 16}; break;
        }
        t.nullable = anynull;
        break;
    case F_DATEDIFF: {
        if (a[0]->op != BX_CONST || a[0]->t.kind != EX_STRING) {
            berr(b, n, "the first argument of dateDiff must be a unit as a string, like 'day'");
            goto fail;
        }
        uint32_t l;
        const uint8_t *s = ex_str(&a[0]->cval, 0, &l);
        char u[32];
        snprintf(u, sizeof(u), "%.*s", (int)(l < 31 ? l : 31), (const char *)s);
        int unit = date_unit(u);
        if (unit < 0) {
            berr(b, n,
                 "unknown unit '%s' of dateDiff: use second, minute, hour, day, week, "
                 "month, quarter or year",
                 u);
            goto fail;
        }
        for (int i = 1; i < 3; i++) {
            if (a[i]->t.kind == EX_STRING)
                a[i] =
                    cast_to(b, a[i], (ex_type){.kind = EX_DATETIME, .nullable = a[i]->t.nullable});
            if (!a[i])
                goto fail;
            if (!is_temporal(a[i]->t.kind) && a[i]->t.kind != EX_NOTHING) {
                char tn[64];
                type_str(&a[i]->t, tn, sizeof(tn));
                berr(b, n,
                     "illegal type %s of argument %d of dateDiff: it needs a Date or DateTime", tn,
                     i + 1);
                goto fail;
            }
        }
        anynull = a[1]->t.nullable || a[2]->t.nullable || a[1]->t.kind == EX_NOTHING ||
                  a[2]->t.kind == EX_NOTHING;
        t = (ex_type){.kind = EX_INT, .bits = 64, .nullable = anynull};
        bx *e = bx_fn_new(b, F_DATEDIFF, t, a, na);
        if (e)
            e->unit = unit;
        return fold(b, e);
    }
    case F_ROUND:
    case F_ABS:
        if (!ex_is_num(a[0]->t.kind) && a[0]->t.kind != EX_NOTHING && a[0]->t.kind != EX_DECIMAL) {
            berr(b, n, "illegal type %s of the argument of %s: it needs a number", t0, n->s);
            goto fail;
        }
        if (na > 1 &&
            (a[1]->op != BX_CONST || !ex_is_num(a[1]->t.kind) || a[1]->t.kind == EX_FLOAT)) {
            berr(b, n, "the second argument of round must be a constant integer");
            goto fail;
        }
        t = a[0]->t;
        if (t.kind == EX_BOOL)
            t.kind = EX_UINT;
        if (fn == F_ABS && t.kind == EX_INT)
            t.kind = EX_UINT;
        t.nullable = a[0]->t.nullable;
        break;
    case F_IF:
    case F_MULTIIF:
    case F_COALESCE: {
        if (fn == F_MULTIIF && na % 2 == 0) {
            berr(b, n, "multiIf needs an odd number of arguments: cond1, then1, ..., else");
            goto fail;
        }
        ex_type st = {.kind = EX_NOTHING, .nullable = true};
        bool first = true;
        for (int i = 0; i < na; i++) {
            bool is_val = fn == F_COALESCE || i % 2 == 1 || i == na - 1;
            if (!is_val)
                continue;
            ex_type nt;
            if (first) {
                st = a[i]->t;
                first = false;
            } else if (!supertype(st, a[i]->t, &nt)) {
                char x[64], y[64];
                type_str(&st, x, sizeof(x));
                type_str(&a[i]->t, y, sizeof(y));
                berr(b, n,
                     "there is no supertype for types %s and %s of the branches of %s: "
                     "CAST them to one type",
                     x, y, n->s ? n->s : "CASE");
                goto fail;
            } else {
                st = nt;
            }
        }
        if (fn == F_COALESCE) {
            bool all_nullable = true;
            for (int i = 0; i < na; i++)
                all_nullable &= a[i]->t.nullable || a[i]->t.kind == EX_NOTHING;
            st.nullable = all_nullable;
        }
        for (int i = 0; i < na; i++) {
            bool is_val = fn == F_COALESCE || i % 2 == 1 || i == na - 1;
            if (is_val && st.kind != EX_NOTHING) {
                ex_type ct = st;
                ct.nullable = a[i]->t.nullable || a[i]->t.kind == EX_NOTHING;
                a[i] = cast_to(b, a[i], ct);
                if (!a[i])
                    goto fail;
            } else if (!is_val && (a[i]->t.kind == EX_STRING || is_temporal(a[i]->t.kind))) {
                berr(b, n, "the condition of %s must be a number or a comparison",
                     n->s ? n->s : "CASE");
                goto fail;
            }
        }
        t = st;
        if (fn == F_IF)
            fn = F_MULTIIF;
        break;
    }
    default:
        if (fn >= F_INTDIV)
            return bind_fn_more(b, n, fn, a, na);
        break;
    }
    (void)mode;
    return fold(b, bx_fn_new(b, (bx_fn)fn, t, a, na));
fail:
fail_nofree:
    for (int i = 0; i < na; i++)
        bx_free(b->mem, a[i]);
    return NULL;
}

static bx *in_subquery(binder *b, const sql_node *sub, bx *e);

static bx *bind_in(binder *b, const sql_node *n, bmode mode)
{
    bx *x = bind(b, n->args[0], mode);
    if (!x)
        return NULL;
    if (x->t.kind == EX_ARRAY) {
        bx_free(b->mem, x);
        berr(b, n, "an Array on the left of IN is not supported: use has(arr, x)");
        return NULL;
    }
    bx *e = bx_new(b, BX_FUNC);
    if (!e) {
        bx_free(b->mem, x);
        return NULL;
    }
    e->fn = F_IN;
    e->negated = n->negated;
    e->t = t_u8();
    e->t.nullable = x->t.nullable || x->t.kind == EX_NOTHING;
    e->a = malloc(sizeof(bx *));
    if (!e->a) {
        bx_free(b->mem, x);
        free(e);
        boom(b);
        return NULL;
    }
    e->a[0] = x;
    e->na = 1;
    if (n->nargs == 2 && n->args[1]->kind == SQL_SUBQUERY)
        return in_subquery(b, n->args[1], e);
    int cnt = n->nargs - 1;
    e->in_i = calloc((size_t)cnt + 1, sizeof(int64_t));
    e->in_d = calloc((size_t)cnt + 1, sizeof(double));
    e->in_s = calloc((size_t)cnt + 1, sizeof(char *));
    e->in_len = calloc((size_t)cnt + 1, sizeof(uint32_t));
    if (!e->in_i || !e->in_d || !e->in_s || !e->in_len) {
        bx_free(b->mem, e);
        boom(b);
        return NULL;
    }
    ex_type xt = x->t;
    xt.nullable = false;
    for (int i = 0; i < cnt; i++) {
        const sql_node *it = n->args[i + 1];
        bx *v = bind(b, it, mode);
        if (!v) {
            bx_free(b->mem, e);
            return NULL;
        }
        if (v->op != BX_CONST) {
            bx_free(b->mem, v);
            bx_free(b->mem, e);
            berr(b, it, "the list of IN must hold constants");
            return NULL;
        }
        if (v->t.kind == EX_NOTHING) {
            e->in_has_null = true;
            bx_free(b->mem, v);
            continue;
        }
        if (xt.kind == EX_DECIMAL && (v->t.kind != EX_DECIMAL || v->t.scale != xt.scale) &&
            v->t.kind != EX_STRING) {
            /* the list at the Decimal's scale; a value with more digits can match no row */
            double want = ex_f(&v->cval, 0);
            bool fl = v->t.kind == EX_FLOAT;
            if (!(v = cast_to(b, v, xt))) {
                bx_free(b->mem, e);
                return NULL;
            }
            if (fl && ex_f(&v->cval, 0) != want)
                v->cval.i[0] = INT64_MIN;
        } else if (xt.kind != EX_NOTHING && v->t.kind != xt.kind) {
            if ((xt.kind == EX_STRING) != (v->t.kind == EX_STRING) && !is_temporal(xt.kind)) {
                char a1[64], a2[64];
                type_str(&x->t, a1, sizeof(a1));
                type_str(&v->t, a2, sizeof(a2));
                bx_free(b->mem, v);
                bx_free(b->mem, e);
                berr(b, it, "cannot compare %s with %s in IN: convert one side with CAST", a1, a2);
                return NULL;
            }
            if (!(xt.kind == EX_FLOAT || v->t.kind == EX_FLOAT) || is_temporal(xt.kind) ||
                xt.kind == EX_FLOAT) {
                ex_type ct = xt.kind == EX_BOOL ? (ex_type){.kind = EX_INT, .bits = 64} : xt;
                if (!(v = cast_to(b, v, ct))) {
                    bx_free(b->mem, e);
                    return NULL;
                }
            }
        }
        if (v->t.kind == EX_STRING) {
            uint32_t l;
            const uint8_t *s = ex_str(&v->cval, 0, &l);
            e->in_s[e->n_in] = malloc(l + 1);
            if (!e->in_s[e->n_in]) {
                bx_free(b->mem, v);
                bx_free(b->mem, e);
                boom(b);
                return NULL;
            }
            if (l)
                memcpy(e->in_s[e->n_in], s, l);
            e->in_len[e->n_in] = l;
        } else {
            e->in_d[e->n_in] = ex_f(&v->cval, 0);
            e->in_i[e->n_in] = v->t.kind == EX_FLOAT ? (int64_t)v->cval.d[0] : v->cval.i[0];
            if (v->t.kind == EX_FLOAT && xt.kind != EX_FLOAT &&
                v->cval.d[0] != floor(v->cval.d[0])) {
                /* 1.5 can never equal an integer column */
                e->in_i[e->n_in] = INT64_MIN;
            }
        }
        e->n_in++;
        bx_free(b->mem, v);
    }
    if (xt.kind == EX_FLOAT)
        for (int i = 0; i < e->n_in; i++)
            e->in_d[i] = e->in_d[i];
    bx_in_index(e);
    return fold(b, e);
}

/* Runs a subquery through the caller's hook: its one column in *col. */
static int run_subquery(binder *b, const sql_node *n, ex_vec *col, uint32_t *rows)
{
    if (!b->env || !b->env->subquery) {
        berr(b, n, "subqueries are not supported here");
        return -EINVAL;
    }
    int nc = 0;
    int rc = b->env->subquery(b->env->arg, n->sub, col, rows, &nc, b->err, b->errlen);
    if (rc < 0) {
        b->rc = rc;
        return rc;
    }
    if (nc != 1) {
        ex_vec_clear(b->mem, col);
        berr(b, n, "a subquery used as a value or in IN must return one column, not %d", nc);
        return -EINVAL;
    }
    return 0;
}

/* (SELECT ...) as a value: its one row (none: NULL, as ClickHouse does). */
static bx *bind_scalar_subquery(binder *b, const sql_node *n)
{
    ex_vec v;
    uint32_t rows;
    if (run_subquery(b, n, &v, &rows) < 0)
        return NULL;
    if (rows > 1) {
        ex_vec_clear(b->mem, &v);
        berr(b, n,
             "the scalar subquery returned %u rows; it must return one (add LIMIT 1 or "
             "an aggregate)",
             rows);
        return NULL;
    }
    ex_type t = v.t;
    if (rows == 0)
        t.nullable = true;
    bx *k = const_new(b, t);
    if (!k) {
        ex_vec_clear(b->mem, &v);
        return NULL;
    }
    if (rows == 0 || ex_null(&v, 0)) {
        k->cval.nulls[0] = 1;
    } else if (t.kind == EX_FLOAT) {
        k->cval.d[0] = ex_f(&v, 0);
    } else if (t.kind == EX_STRING) {
        uint32_t l;
        const uint8_t *s = ex_str(&v, 0, &l);
        if (ex_vec_str_put(b->mem, &k->cval, 0, s, l) < 0)
            boom(b);
    } else if (t.kind != EX_NOTHING) {
        k->cval.i[0] = v.i[ex_row(&v, 0)];
    }
    ex_vec_clear(b->mem, &v);
    if (b->rc) {
        bx_free(b->mem, k);
        return NULL;
    }
    return k;
}

/* IN (SELECT ...): the subquery's column as the list, converted to the
 * operand's type (e holds the operand). */
static bx *in_subquery(binder *b, const sql_node *sub, bx *e)
{
    ex_vec v;
    uint32_t rows;
    if (run_subquery(b, sub, &v, &rows) < 0) {
        bx_free(b->mem, e);
        return NULL;
    }
    ex_type xt = e->a[0]->t;
    bool xs = xt.kind == EX_STRING, vs = v.t.kind == EX_STRING;
    if (xt.kind != EX_NOTHING && v.t.kind != EX_NOTHING && xs != vs) {
        char a1[64], a2[64];
        type_str(&xt, a1, sizeof(a1));
        type_str(&v.t, a2, sizeof(a2));
        ex_vec_clear(b->mem, &v);
        bx_free(b->mem, e);
        berr(b, sub, "cannot compare %s with the subquery's %s in IN: convert one side with CAST",
             a1, a2);
        return NULL;
    }
    e->in_i = calloc((size_t)rows + 1, sizeof(int64_t));
    e->in_d = calloc((size_t)rows + 1, sizeof(double));
    e->in_s = calloc((size_t)rows + 1, sizeof(char *));
    e->in_len = calloc((size_t)rows + 1, sizeof(uint32_t));
    if (!e->in_i || !e->in_d || !e->in_s || !e->in_len) {
        ex_vec_clear(b->mem, &v);
        bx_free(b->mem, e);
        boom(b);
        return NULL;
    }
    bool xf = xt.kind == EX_FLOAT;
    for (uint32_t r = 0; r < rows; r++) {
        if (ex_null(&v, r)) {
            e->in_has_null = true;
            continue;
        }
        int k = e->n_in;
        if (vs) {
            uint32_t l;
            const uint8_t *s = ex_str(&v, r, &l);
            if (!(e->in_s[k] = malloc(l + 1))) {
                ex_vec_clear(b->mem, &v);
                bx_free(b->mem, e);
                boom(b);
                return NULL;
            }
            if (l)
                memcpy(e->in_s[k], s, l);
            e->in_len[k] = l;
        } else {
            double d = ex_f(&v, r);
            e->in_d[k] = d;
            if (v.t.kind == EX_FLOAT)
                e->in_i[k] = !xf && d != floor(d) ? INT64_MIN : (int64_t)d;
            else
                e->in_i[k] = v.i[ex_row(&v, r)];
        }
        e->n_in++;
    }
    ex_vec_clear(b->mem, &v);
    bx_in_index(e);
    return e;
}

/* A string constant. */
static bx *const_str(binder *b, const char *v)
{
    bx *e = const_new(b, (ex_type){.kind = EX_STRING});
    if (e && ex_vec_str_put(b->mem, &e->cval, 0, v, strlen(v)) < 0) {
        bx_free(b->mem, e);
        boom(b);
        return NULL;
    }
    return e;
}

/* The functions of the query's context, constants for the whole query (as in
 * ClickHouse, now() is the query's start): version(), now(), today(),
 * timezone(), currentDatabase(), currentUser(), hostName(). NULL (no error)
 * when n is none of them. */
static bx *bind_context_fn(binder *b, const sql_node *n)
{
    static const char *const ctx_fns[] = {"version",        "now",
                                          "today",          "timezone",
                                          "timeZone",       "serverTimezone",
                                          "serverTimeZone", "currentDatabase",
                                          "database",       "currentUser",
                                          "user",           "hostName",
                                          "hostname"};
    int k = -1;
    for (int i = 0; i < (int)(sizeof(ctx_fns) / sizeof(ctx_fns[0])); i++)
        if (strcmp(n->s, ctx_fns[i]) == 0 || (i >= 7 && strcasecmp(n->s, ctx_fns[i]) == 0))
            k = i;
    if (k < 0)
        return NULL;
    const eng_bind_env *env = b->env;
    int64_t now_ms = env && env->now_ms ? env->now_ms : (int64_t)time(NULL) * 1000;
    bx *e;
    switch (k) {
    case 0: return const_str(b, ENG_CLICKHOUSE_VERSION);
    case 1:
        if ((e = const_new(b, (ex_type){.kind = EX_DATETIME})))
            e->cval.i[0] = now_ms / 1000;
        return e;
    case 2:
        if ((e = const_new(b, (ex_type){.kind = EX_DATE, .bits = 16})))
            e->cval.i[0] = now_ms / 1000 / 86400;
        return e;
    case 3:
    case 4:
    case 5:
    case 6: return const_str(b, "UTC");
    case 7:
    case 8: return const_str(b, env && env->database ? env->database : "default");
    case 9:
    case 10: return const_str(b, env && env->user ? env->user : "default");
    default: {
        char h[256] = "localhost";
        gethostname(h, sizeof(h) - 1);
        h[sizeof(h) - 1] = 0;
        return const_str(b, h);
    }
    }
}

/* Names other dialects use for a function the engine has under ClickHouse's
 * name: the suggestion means the same thing. */
static const char *const fn_synonyms[][2] = {
    {"strlen", "length"},
    {"char_length", "length"},
    {"len", "length"},
    {"lcase", "lower"},
    {"ucase", "upper"},
    {"strpos", "position"},
    {"instr", "position"},
    {"mean", "avg"},
    {"average", "avg"},
    {"stddev", "stddevSamp"},
    {"std", "stddevPop"},
    {"variance", "varSamp"},
    {"percentile_cont", "quantile"},
    {"percentile_disc", "quantileExact"},
    {"count_distinct", "uniqExact"},
    {"approx_count_distinct", "uniq"},
    {"first_value", "any"},
    {"first", "any"},
    {"last", "anyLast"},
    {"arg_min", "argMin"},
    {"arg_max", "argMax"},
    {"ifnull", "ifNull"},
    {"nvl", "ifNull"},
    {"nullif", "nullIf"},
    {"regexp_replace", "replaceRegexpAll"},
    {"regexp_matches", "match"},
    {"regexp_extract", "extract"},
    {"string_split", "splitByChar"},
    {"ltrim", "trimLeft"},
    {"rtrim", "trimRight"},
    {"btrim", "trimBoth"},
    {"power", "pow"},
    {"ln", "log"},
    {"ceiling", "ceil"},
    {"date_add", "dateAdd"},
    {"date_sub", "dateSub"},
    {"starts_with", "startsWith"},
    {"ends_with", "endsWith"},
    {"datediff", "dateDiff"},
    {"str_to_date", "parseDateTimeBestEffort"},
    {"strftime", "formatDateTime"},
    {"date_format", "formatDateTime"},
    {"sha256", NULL},
    {"md5", NULL},
};

/* "unknown function 'f'", with a name that means the same: a synonym of
 * another dialect, or a near spelling of a function of the same family (an
 * aggregate for an aggregate; never the base for a combinator's name, since
 * countIf is not count). */
static const char *const array_fns[] = {
    "quantiles", "quantilesExact", "range",         "arrayMap", "arrayFilter",       "arrayConcat",
    "indexOf",   "arraySort",      "arrayDistinct", "arrayZip", "arrayStringConcat",
};

static void unknown_fn(binder *b, const sql_node *n)
{
    for (size_t i = 0; i < sizeof(array_fns) / sizeof(array_fns[0]); i++)
        if (strcasecmp(n->s, array_fns[i]) == 0) {
            berr(b, n, "%s() is not supported%s", n->s,
                 strncasecmp(n->s, "quantiles", 9) == 0
                     ? ": use quantile(level)(x) once per level"
                     : " (the Array functions there are: has, length, empty, notEmpty, arr[i], "
                       "splitByChar, splitByString, arrayJoin, groupArray, groupUniqArray, topK)");
            return;
        }
    /* a combinator in the wrong case: countif is countIf */
    size_t nl = strlen(n->s);
    static const char *const combs[] = {"If", "Distinct"};
    for (int c = 0; c < 2; c++) {
        size_t cl = strlen(combs[c]);
        char fix[128];
        agg_call call;
        if (nl > cl && nl < sizeof(fix) - 1 && strcasecmp(n->s + nl - cl, combs[c]) == 0) {
            memcpy(fix, n->s, nl - cl);
            fix[nl - cl] = 0;
            const struct fn_def *d = find_fn(fix);
            if (d && d->agg) {
                snprintf(fix, sizeof(fix), "%s%s", d->name, combs[c]);
                if (resolve_agg(fix, &call)) {
                    berr(b, n, "unknown function '%s', did you mean '%s'?", n->s, fix);
                    return;
                }
            }
        }
    }
    for (size_t i = 0; i < sizeof(fn_synonyms) / sizeof(fn_synonyms[0]); i++)
        if (strcasecmp(n->s, fn_synonyms[i][0]) == 0 && fn_synonyms[i][1] &&
            find_fn(fn_synonyms[i][1])) {
            berr(b, n, "unknown function '%s': ClickHouse calls it %s()", n->s, fn_synonyms[i][1]);
            return;
        }
    size_t l = strlen(n->s);
    bool comb = (l > 2 && strcmp(n->s + l - 2, "If") == 0) ||
                (l > 8 && strcmp(n->s + l - 8, "Distinct") == 0);
    const char *cands[sizeof(fns) / sizeof(fns[0])];
    int nc = 0;
    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
        size_t fl = strlen(fns[i].name);
        /* a shorter or longer name by a suffix is another function */
        if ((fl < l && strncasecmp(n->s, fns[i].name, fl) == 0) ||
            (l < fl && strncasecmp(n->s, fns[i].name, l) == 0))
            continue;
        if (!comb)
            cands[nc++] = fns[i].name;
    }
    const char *s = eng_suggest(n->s, cands, nc);
    if (s)
        berr(b, n, "unknown function '%s', did you mean '%s'?", n->s, s);
    else
        berr(b, n,
             "unknown function '%s': the engine does not implement it (the engine's "
             "README lists the functions it has)",
             n->s);
}

/* The unit of dateAdd(unit, ...) and of toIntervalUnit: -1 when none. */
static int node_unit(const sql_node *u)
{
    if (u->kind != SQL_COLUMN && u->kind != SQL_STRING)
        return -1;
    return date_unit(u->s);
}

/* The unit of an INTERVAL (toIntervalDay(n) and the like), or -1. */
static int interval_unit(const sql_node *n)
{
    if (n->kind != SQL_FUNC || n->nargs != 1 || strncasecmp(n->s, "toInterval", 10) != 0)
        return -1;
    return date_unit(n->s + 10);
}

/* date +/- amount units: a DateAdd over bound amount and date. */
static bx *bind_date_add(binder *b, const sql_node *at, int unit, bool neg, const sql_node *amount,
                         const sql_node *date, bmode mode)
{
    bx *a[2] = {bind(b, amount, mode), NULL};
    if (a[0])
        a[1] = bind(b, date, mode);
    if (!a[1]) {
        bx_free(b->mem, a[0]);
        return NULL;
    }
    if (!num_arg(b, at, a, 0, true) || !date_arg(b, at, a, 1)) {
        bx_free(b->mem, a[0]);
        bx_free(b->mem, a[1]);
        return NULL;
    }
    bool nul = a[0]->t.nullable || a[1]->t.nullable || a[0]->t.kind == EX_NOTHING ||
               a[1]->t.kind == EX_NOTHING;
    bx *e = bx_fn_new(b, F_DATEADD, date_add_type(a[1], unit, nul), a, 2);
    if (e) {
        e->unit = unit;
        e->negated = neg;
    }
    return fold(b, e);
}

/* toUnixTimestamp(x [, 'UTC']): the seconds of x as a DateTime (a String is
 * parsed as toDateTime does, a Date is its midnight, a DateTime64 loses its
 * fraction), as UInt32, wrapping as ClickHouse's does outside 1970..2106. */
static bx *bind_unix_timestamp(binder *b, const sql_node *n, bmode mode)
{
    if (n->nargs < 1 || n->nargs > 2) {
        berr(b, n,
             "function toUnixTimestamp takes 1 or 2 arguments (a date and a time zone), "
             "not %d",
             n->nargs);
        return NULL;
    }
    if (n->nargs == 2 && (n->args[1]->kind != SQL_STRING || n->args[1]->slen != 3 ||
                          memcmp(n->args[1]->s, "UTC", 3) != 0)) {
        berr(b, n->args[1], "toUnixTimestamp: time zones other than 'UTC' are not supported");
        return NULL;
    }
    bx *x = bind(b, n->args[0], mode);
    if (!x)
        return NULL;
    uint8_t k = x->t.kind;
    if (k != EX_STRING && k != EX_DATE && k != EX_DATETIME && k != EX_NOTHING) {
        char tn[64];
        ex_type_name(&x->t, tn, sizeof(tn));
        bx_free(b->mem, x);
        berr(b, n->args[0],
             "illegal type %s of the argument of toUnixTimestamp(): it takes a String, a Date "
             "or a DateTime",
             tn);
        return NULL;
    }
    bool nul = x->t.nullable || k == EX_NOTHING;
    bx *a[1] = {x};
    bx *dt = k == EX_DATETIME && x->t.scale == 0
                 ? x
                 : bx_fn_new(b, F_CAST, (ex_type){.kind = EX_DATETIME, .nullable = nul}, a, 1);
    if (!dt)
        return NULL;
    bx *a2[1] = {dt};
    return fold(
        b, bx_fn_new(b, F_CAST, (ex_type){.kind = EX_UINT, .bits = 32, .nullable = nul}, a2, 1));
}

/* Calls that are rewritten rather than bound as written: dateAdd(unit, n,
 * d), date +/- INTERVAL, nullIf, and the conversions toT / toTOrZero /
 * toTOrNull / toDateTime64(x, s) (as CASTs). *handled says whether n was one. */
static bx *bind_special(binder *b, const sql_node *n, bmode mode, bool *handled)
{
    *handled = true;
    if (n->kind == SQL_BINARY && (n->op == SQL_OP_ADD || n->op == SQL_OP_SUB)) {
        int u1 = interval_unit(n->args[1]),
            u0 = n->op == SQL_OP_ADD ? interval_unit(n->args[0]) : -1;
        if (u1 >= 0)
            return bind_date_add(b, n, u1, n->op == SQL_OP_SUB, n->args[1]->args[0], n->args[0],
                                 mode);
        if (u0 >= 0)
            return bind_date_add(b, n, u0, false, n->args[0]->args[0], n->args[1], mode);
        *handled = false;
        return NULL;
    }
    if (n->kind != SQL_FUNC || n->nparams) {
        *handled = false;
        return NULL;
    }
    const struct fn_def *d = find_fn(n->s);
    if (d && d->fn == F_DATEADD && fn_unit(d->name) < 0) {
        int unit = n->nargs == 3 ? node_unit(n->args[0]) : -1;
        if (n->nargs != 3) {
            berr(b, n, "function %s takes 3 arguments (unit, amount, date), not %d", n->s,
                 n->nargs);
            return NULL;
        }
        if (unit < 0) {
            berr(b, n->args[0],
                 "unknown unit of %s: use second, minute, hour, day, week, month, "
                 "quarter or year",
                 n->s);
            return NULL;
        }
        return bind_date_add(b, n, unit, fn_unit(d->name) == -2, n->args[1], n->args[2], mode);
    }
    if (interval_unit(n) >= 0) {
        berr(b, n,
             "an INTERVAL is only supported added to or subtracted from a date, as in "
             "d + INTERVAL 1 DAY");
        return NULL;
    }
    if (strcmp(n->s, "ignore") == 0) {
        /* ignore(...) is 0 whatever its arguments, which are read all the
         * same: `WHERE NOT ignore(*)` scans every column (ClickHouse's idiom
         * for a full read). '*' stands for every column of the source, as in
         * SELECT * (not the virtual _path, _file, ...). */
        for (int i = 0; i < n->nargs; i++) {
            if (n->args[i]->kind == SQL_STAR) {
                for (int c = 0; c < b->sc->n; c++) {
                    if (b->sc->cols[c].virt)
                        continue;
                    sql_node col = {.kind = SQL_COLUMN,
                                    .line = n->line,
                                    .col = n->col,
                                    .s = (char *)b->sc->cols[c].name,
                                    .slen = strlen(b->sc->cols[c].name)};
                    bx *e = col_ref(b, &col);
                    if (!e)
                        return NULL;
                    bx_free(b->mem, e);
                }
                continue;
            }
            bx *e = bind(b, n->args[i], mode);
            if (!e)
                return NULL;
            bx_free(b->mem, e);
        }
        bx *z = const_new(b, t_u8());
        if (z)
            z->cval.i[0] = 0;
        return z;
    }
    if (strcasecmp(n->s, "nullIf") == 0) {
        if (n->nargs != 2) {
            berr(b, n, "function nullIf takes 2 arguments, not %d", n->nargs);
            return NULL;
        }
        /* nullIf(a, b) is if(a = b, NULL, a) */
        sql_node eq = {.kind = SQL_BINARY,
                       .op = SQL_OP_EQ,
                       .line = n->line,
                       .col = n->col,
                       .args = n->args,
                       .nargs = 2};
        sql_node nul = {.kind = SQL_NULL, .line = n->line, .col = n->col};
        sql_node *args[3] = {&eq, &nul, n->args[0]};
        sql_node call = {.kind = SQL_FUNC,
                         .line = n->line,
                         .col = n->col,
                         .s = "nullIf",
                         .slen = 6,
                         .args = args,
                         .nargs = 3};
        bx *a[3] = {bind(b, &eq, mode), NULL, NULL};
        if (a[0] && (a[1] = bind(b, &nul, mode)))
            a[2] = bind(b, n->args[0], mode);
        if (!a[2]) {
            bx_free(b->mem, a[0]);
            bx_free(b->mem, a[1]);
            return NULL;
        }
        return bind_fn(b, &call, mode, F_MULTIIF, a, 3);
    }
    if (strcmp(n->s, "toUnixTimestamp") == 0)
        return bind_unix_timestamp(b, n, mode);
    /* conversions */
    size_t l = strlen(n->s);
    int mode_or = 0;
    char tn[64];
    if (d || l < 3 || l >= sizeof(tn) + 2 || strncmp(n->s, "to", 2) != 0) {
        *handled = false;
        return NULL;
    }
    snprintf(tn, sizeof(tn), "%s", n->s + 2);
    size_t tl = strlen(tn);
    if (tl > 6 && strcmp(tn + tl - 6, "OrZero") == 0) {
        tn[tl - 6] = 0;
        mode_or = 1;
    } else if (tl > 6 && strcmp(tn + tl - 6, "OrNull") == 0) {
        tn[tl - 6] = 0;
        mode_or = 2;
    }
    ex_type t;
    bool dt64 = strcmp(tn, "DateTime64") == 0;
    /* toDecimal32/64/128/256(x, S): Decimal(9/18/38/76, S) */
    int dec_prec = strcmp(tn, "Decimal32") == 0    ? 9
                   : strcmp(tn, "Decimal64") == 0  ? 18
                   : strcmp(tn, "Decimal128") == 0 ? 38
                   : strcmp(tn, "Decimal256") == 0 ? 76
                                                   : 0;
    if (!dt64 && !dec_prec &&
        (eng_parse_type(tn, &t) < 0 || strchr(tn, '(') || tn[0] < 'A' || tn[0] > 'Z')) {
        *handled = false;
        return NULL;
    }
    int want = dt64 || dec_prec ? 2 : 1;
    if (n->nargs != want && !(dt64 && n->nargs == 3)) {
        berr(b, n, "function %s takes %d argument%s, not %d", n->s, want, want == 1 ? "" : "s",
             n->nargs);
        return NULL;
    }
    if (dt64) {
        const sql_node *sc = n->args[1];
        if (sc->kind != SQL_INT || sc->negated || sc->u > 9) {
            berr(b, sc, "the scale of toDateTime64 must be a constant from 0 to 9");
            return NULL;
        }
        t = (ex_type){.kind = EX_DATETIME, .scale = (uint8_t)sc->u};
    }
    if (dec_prec) {
        const sql_node *sc = n->args[1];
        if (dec_prec == 76) {
            berr(b, n,
                 "%s is not supported: this engine holds Decimal values in 64 bits; use "
                 "toDecimal64 or toDecimal128 (values of up to 18 digits)",
                 n->s);
            return NULL;
        }
        if (sc->kind != SQL_INT || sc->negated || sc->u > (uint64_t)dec_prec) {
            berr(b, sc, "the scale of %s must be a constant from 0 to %d", n->s, dec_prec);
            return NULL;
        }
        if (sc->u > 18) {
            berr(b, sc,
                 "a scale of %llu is not supported: this engine holds Decimal values in 64 bits "
                 "(scales of 0 to 18)",
                 (unsigned long long)sc->u);
            return NULL;
        }
        t = ex_decimal_type(dec_prec, (int)sc->u, false);
    }
    bx *x = bind(b, n->args[0], mode);
    if (!x)
        return NULL;
    if (x->t.kind == EX_ARRAY && t.kind != EX_STRING) {
        char xn[128];
        type_str(&x->t, xn, sizeof(xn));
        bx_free(b->mem, x);
        berr(b, n, "%s of an %s is not supported (an Array converts to a String only)", n->s, xn);
        return NULL;
    }
    t.nullable = x->t.nullable || x->t.kind == EX_NOTHING || mode_or == 2;
    if (x->t.kind == EX_NOTHING && !t.nullable) {
        bx_free(b->mem, x);
        berr(b, n, "%s(NULL) has no value: use %sOrNull", n->s, n->s);
        return NULL;
    }
    bx *a[1] = {x};
    bx *e = bx_fn_new(b, F_CAST, t, a, 1);
    if (e)
        e->unit = mode_or;
    return fold(b, e);
}

/* The array of ARRAY JOIN or arrayJoin(): p->ajoin. */
static bool bind_ajoin_array(binder *b, const sql_node *at, const sql_node *arr)
{
    bx *a = bind(b, arr, MODE_PRE);
    if (!a)
        return false;
    if (a->t.kind != EX_ARRAY) {
        char tn[128];
        type_str(&a->t, tn, sizeof(tn));
        bx_free(b->mem, a);
        berr(b, at, "ARRAY JOIN and arrayJoin() take an Array, not %s", tn);
        return false;
    }
    b->p->ajoin = a;
    return true;
}

/* arrayJoin(arr): the rows repeat once per element, the call's value is the
 * element (one arrayJoin per query; the same call may appear more than once). */
static bx *bind_array_join_fn(binder *b, const sql_node *n, bmode mode)
{
    if (n->nargs != 1 || n->nparams) {
        berr(b, n, "function arrayJoin takes 1 argument, not %d", n->nargs);
        return NULL;
    }
    if (b->aj_call && sql_node_equal(b->aj_call, n))
        return aj_ref(b);
    if (b->p->ajoin) {
        berr(b, n,
             b->aj_call ? "a second arrayJoin() is not supported: one array per query level"
                        : "arrayJoin() together with ARRAY JOIN is not supported");
        return NULL;
    }
    if (mode == MODE_POST || b->in_agg) {
        berr(b, n,
             "arrayJoin() is supported in the SELECT list, WHERE and GROUP BY, not inside an "
             "aggregate or after GROUP BY (put it in GROUP BY)");
        return NULL;
    }
    if (!bind_ajoin_array(b, n, n->args[0]))
        return NULL;
    b->aj_call = n;
    return aj_ref(b);
}

/* AJ_SLOT -> slot, in a tree over scan slots. */
static void aj_fix(bx *e, int slot)
{
    if (!e)
        return;
    if (e->op == BX_COL && e->col == AJ_SLOT)
        e->col = slot;
    for (int i = 0; i < e->na; i++)
        aj_fix(e->a[i], slot);
}

/* Whether every element of an array literal is a literal (no NULL: has()
 * finds NULL elements, where IN never matches NULL). */
static bool all_literals(const sql_node *arr)
{
    for (int i = 0; i < arr->nargs; i++) {
        int k = arr->args[i]->kind;
        if (k != SQL_BOOL && k != SQL_INT && k != SQL_FLOAT && k != SQL_STRING)
            return false;
    }
    return true;
}

/* has([a, b, ...], x) is x IN (a, b, ...). */
static bx *bind_has(binder *b, const sql_node *n, bmode mode)
{
    const sql_node *arr = n->args[0];
    sql_node in = {.kind = SQL_IN, .line = n->line, .col = n->col, .nargs = arr->nargs + 1};
    if (!(in.args = calloc((size_t)in.nargs, sizeof(sql_node *)))) {
        boom(b);
        return NULL;
    }
    in.args[0] = n->args[1];
    for (int i = 0; i < arr->nargs; i++)
        in.args[i + 1] = arr->args[i];
    bx *r = bind_in(b, &in, mode);
    free(in.args);
    return r;
}

/* CAST(x AS Array(T)) of a scalar T (Array is CAST's target only, not a
 * type eng_parse_type knows): x is an Array of one level or its text. */
static bx *bind_cast_array(binder *b, const sql_node *n, bmode mode)
{
    size_t tl = strlen(n->s);
    char inner[128];
    if (tl - 7 >= sizeof(inner) || strncasecmp(n->s + 6, "Array(", 6) == 0) {
        berr(b, n, "CAST to %s is not supported: nested arrays are not", n->s);
        return NULL;
    }
    memcpy(inner, n->s + 6, tl - 7);
    inner[tl - 7] = 0;
    ex_type et;
    if (eng_parse_type(inner, &et) < 0) {
        berr(b, n, "unknown type '%s' in %s", inner, n->s);
        return NULL;
    }
    bx *x = bind(b, n->args[0], mode);
    if (!x)
        return NULL;
    if (x->t.kind == EX_NOTHING) {
        bx_free(b->mem, x);
        berr(b, n, "cannot CAST NULL to %s: an Array is never NULL", n->s);
        return NULL;
    }
    if (!(x->t.kind == EX_STRING || (x->t.kind == EX_ARRAY && x->t.depth == 1)))
        return cast_refused(b, n, x,
                            "an Array comes from an Array or from its text, such as '[1,2]'");
    bx *a[1] = {x};
    return fold(b, bx_fn_new(b, F_CAST, ex_arr_of(et), a, 1));
}

static bx *bind(binder *b, const sql_node *n, bmode mode)
{
    if (b->rc)
        return NULL;
    if (mode == MODE_POST) {
        for (int i = 0; i < b->n_gkeys; i++)
            if (sql_node_equal(b->gkeys[i], n)) {
                bx *e = bx_new(b, BX_COL);
                if (!e)
                    return NULL;
                e->col = i;
                e->t = b->p->keys[i]->t;
                return e;
            }
    }
    switch (n->kind) {
    case SQL_NULL:
    case SQL_BOOL:
    case SQL_INT:
    case SQL_FLOAT:
    case SQL_STRING: return literal(b, n);
    case SQL_STAR: berr(b, n, "'*' is only allowed in count(*) and SELECT *"); return NULL;
    case SQL_COLUMN:
        if (mode == MODE_POST) {
            bool aj = b->aj_name && strcmp(n->s, b->aj_name) == 0;
            if (!aj && resolve_column(b->sc, n) < 0)
                return col_ref(b, n); /* the unknown-column error */
            berr(b, n,
                 "column '%s' is not under an aggregate function and not in the GROUP BY "
                 "keys: add it to GROUP BY or wrap it in any()",
                 n->s);
            return NULL;
        }
        return col_ref(b, n);
    default: break;
    }
    if (n->kind == SQL_FUNC && n->win) {
        berr(b, n,
             "window function %s() OVER (...) is only supported as a whole item of the "
             "SELECT list (compute with it in an outer query)",
             n->s);
        return NULL;
    }
    if (n->kind == SQL_FUNC && n->nargs == 0) {
        bx *c = bind_context_fn(b, n);
        if (c || b->rc)
            return c;
    }
    if (n->kind == SQL_ARRAY) {
        bx **v = calloc((size_t)n->nargs + 1, sizeof(bx *));
        if (!v) {
            boom(b);
            return NULL;
        }
        for (int i = 0; i < n->nargs; i++)
            if (!(v[i] = bind(b, n->args[i], mode))) {
                for (int j = 0; j < i; j++)
                    bx_free(b->mem, v[j]);
                free(v);
                return NULL;
            }
        sql_node fake = *n;
        fake.s = "array";
        bx *r = bind_fn(b, &fake, mode, F_ARRAY, v, n->nargs);
        free(v);
        return r;
    }
    if (n->kind == SQL_COLUMNS) {
        berr(b, n, "COLUMNS('regex') is only allowed in the SELECT list");
        return NULL;
    }
    if (n->kind == SQL_FUNC && strcmp(n->s, "arrayJoin") == 0)
        return bind_array_join_fn(b, n, mode);
    if (n->kind == SQL_FUNC && strcasecmp(n->s, "has") == 0 && n->nargs == 2 &&
        n->args[0]->kind == SQL_ARRAY && all_literals(n->args[0]))
        return bind_has(b, n, mode);
    bool handled = false;
    bx *sp = bind_special(b, n, mode, &handled);
    if (handled)
        return sp;
    if (n->kind == SQL_FUNC) {
        const struct fn_def *d = find_fn(n->s);
        agg_call call;
        if (resolve_agg(n->s, &call)) {
            if (mode == MODE_PRE) {
                if (b->in_agg)
                    return bind_agg(b, n, &call);
                berr(b, n,
                     "aggregate function %s() is not allowed here (WHERE and GROUP BY run "
                     "before aggregation: use HAVING)",
                     n->s);
                return NULL;
            }
            return bind_agg(b, n, &call);
        }
        if (!d) {
            unknown_fn(b, n);
            return NULL;
        }
        if (n->nparams) {
            berr(b, n, "function %s takes no parameters: write %s(args)", d->name, d->name);
            return NULL;
        }
        if (n->nargs < d->min || n->nargs > d->max) {
            if (d->min == d->max)
                berr(b, n, "function %s takes %d argument%s, not %d", d->name, d->min,
                     d->min == 1 ? "" : "s", n->nargs);
            else
                berr(b, n, "function %s takes %d to %d arguments, not %d", d->name, d->min, d->max,
                     n->nargs);
            return NULL;
        }
        bx **a = calloc((size_t)n->nargs + 1, sizeof(bx *));
        if (!a) {
            boom(b);
            return NULL;
        }
        for (int i = 0; i < n->nargs; i++)
            if (!(a[i] = bind(b, n->args[i], mode))) {
                for (int j = 0; j < i; j++)
                    bx_free(b->mem, a[j]);
                free(a);
                return NULL;
            }
        bx *r = bind_fn(b, n, mode, d->fn, a, n->nargs);
        free(a);
        return r;
    }
    if (n->kind == SQL_IN)
        return bind_in(b, n, mode);
    if (n->kind == SQL_SUBQUERY)
        return bind_scalar_subquery(b, n);
    if (n->kind == SQL_CAST) {
        ex_type t;
        size_t tl = strlen(n->s);
        if (tl > 7 && strncasecmp(n->s, "Array(", 6) == 0 && n->s[tl - 1] == ')')
            return bind_cast_array(b, n, mode);
        if (eng_parse_type(n->s, &t) < 0) {
            const char *s =
                eng_suggest(n->s, type_names, (int)(sizeof(type_names) / sizeof(type_names[0])));
            if (s)
                berr(b, n, "unknown type '%s', did you mean '%s'?", n->s, s);
            else
                berr(b, n, "unknown type '%s'", n->s);
            return NULL;
        }
        bx *x = bind(b, n->args[0], mode);
        if (!x)
            return NULL;
        if (x->t.kind == EX_ARRAY && t.kind != EX_STRING)
            return cast_refused(b, n, x, "an Array converts to a String or to an Array(T)");
        if (x->t.kind == EX_NOTHING) {
            if (!t.nullable) {
                bx_free(b->mem, x);
                berr(b, n, "cannot CAST NULL to a non-Nullable type: use Nullable(%s)", n->s);
                return NULL;
            }
        }
        bx *a[1] = {x};
        t.nullable = t.nullable || (x->t.nullable && false);
        if (x->t.nullable)
            t.nullable = true; /* ClickHouse keeps Nullable through CAST */
        return fold(b, bx_fn_new(b, F_CAST, t, a, 1));
    }
    /* operators: rewrite into function binds */
    bx *a[3] = {0};
    int na = n->nargs > 3 ? 3 : n->nargs;
    if (n->kind == SQL_CASE) {
        /* CASE [x] WHEN a THEN b ... ELSE c END -> multiIf(x = a, b, ..., c) */
        int start = n->has_operand ? 1 : 0;
        int pairs = (n->nargs - start - (n->has_else ? 1 : 0)) / 2;
        int cnt = pairs * 2 + 1;
        bx **v = calloc((size_t)cnt, sizeof(bx *));
        if (!v) {
            boom(b);
            return NULL;
        }
        bx *opnd = NULL;
        bool ok = true;
        for (int i = 0; i < pairs && ok; i++) {
            bx *w = bind(b, n->args[start + 2 * i], mode);
            if (w && n->has_operand) {
                if (!opnd)
                    opnd = bind(b, n->args[0], mode);
                bx *ca[2] = {opnd ? bind(b, n->args[0], mode) : NULL, w};
                if (!ca[0]) {
                    bx_free(b->mem, w);
                    w = NULL;
                } else {
                    w = bind_fn(b, n, mode, F_EQ, ca, 2);
                }
            }
            v[2 * i] = w;
            v[2 * i + 1] = w ? bind(b, n->args[start + 2 * i + 1], mode) : NULL;
            ok = v[2 * i] && v[2 * i + 1];
        }
        bx_free(b->mem, opnd);
        if (ok)
            v[cnt - 1] = n->has_else
                             ? bind(b, n->args[n->nargs - 1], mode)
                             : const_new(b, (ex_type){.kind = EX_NOTHING, .nullable = true});
        if (!ok || !v[cnt - 1]) {
            for (int i = 0; i < cnt; i++)
                bx_free(b->mem, v[i]);
            free(v);
            return NULL;
        }
        sql_node fake = *n;
        fake.s = "CASE";
        bx *r = bind_fn(b, &fake, mode, F_MULTIIF, v, cnt);
        free(v);
        return r;
    }
    for (int i = 0; i < na; i++)
        if (!(a[i] = bind(b, n->args[i], mode))) {
            for (int j = 0; j < i; j++)
                bx_free(b->mem, a[j]);
            return NULL;
        }
    switch (n->kind) {
    case SQL_UNARY: return bind_fn(b, n, mode, n->op == SQL_OP_NOT ? F_NOT : F_NEG, a, 1);
    case SQL_BINARY: {
        static const int map[] = {
            [SQL_OP_ADD] = F_ADD, [SQL_OP_SUB] = F_SUB,       [SQL_OP_MUL] = F_MUL,
            [SQL_OP_DIV] = F_DIV, [SQL_OP_MOD] = F_MOD,       [SQL_OP_EQ] = F_EQ,
            [SQL_OP_NE] = F_NE,   [SQL_OP_LT] = F_LT,         [SQL_OP_LE] = F_LE,
            [SQL_OP_GT] = F_GT,   [SQL_OP_GE] = F_GE,         [SQL_OP_AND] = F_AND,
            [SQL_OP_OR] = F_OR,   [SQL_OP_CONCAT] = F_CONCAT,
        };
        return bind_fn(b, n, mode, map[n->op], a, 2);
    }
    case SQL_LIKE: {
        bx *r = bind_fn(b, n, mode, n->op == SQL_OP_LIKE ? F_LIKE : F_ILIKE, a, 2);
        if (r && r->op == BX_FUNC)
            r->negated = n->negated;
        else if (r && n->negated && r->op == BX_CONST && !ex_null(&r->cval, 0))
            r->cval.i[0] = !r->cval.i[0];
        return r;
    }
    case SQL_IS_NULL: return bind_fn(b, n, mode, n->negated ? F_ISNOTNULL : F_ISNULL, a, 1);
    case SQL_BETWEEN: {
        /* x BETWEEN lo AND hi -> x >= lo AND x <= hi (x bound twice) */
        bx *x2 = bind(b, n->args[0], mode);
        if (!x2) {
            for (int i = 0; i < 3; i++)
                bx_free(b->mem, a[i]);
            return NULL;
        }
        bx *l[2] = {a[0], a[1]}, *h[2] = {x2, a[2]};
        bx *ge = bind_fn(b, n, mode, n->negated ? F_LT : F_GE, l, 2);
        bx *le = bind_fn(b, n, mode, n->negated ? F_GT : F_LE, h, 2);
        if (!ge || !le) {
            bx_free(b->mem, ge);
            bx_free(b->mem, le);
            return NULL;
        }
        bx *c[2] = {ge, le};
        return bind_fn(b, n, mode, n->negated ? F_OR : F_AND, c, 2);
    }
    default:
        for (int i = 0; i < na; i++)
            bx_free(b->mem, a[i]);
        berr(b, n, "unsupported expression");
        return NULL;
    }
}

/* ---- pruning ------------------------------------------------------------------ */

static void add_prune(binder *b, const bx *colx, pq_op op, const bx *k)
{
    eng_plan *p = b->p;
    if (colx->col >= p->n_need)
        return; /* ARRAY JOIN's element: not a column of the files */
    int sc = p->need[colx->col];
    const eng_col *col = &b->sc->cols[sc];
    if (col->cb.type == 0)
        return; /* not a Parquet schema */
    eng_prune pr = {.col = sc, .op = op};
    const ex_vec *v = &k->cval;
    if (ex_null(v, 0))
        return;
    switch (col->cb.type) {
    case CB_INT8:
    case CB_INT16:
    case CB_INT32:
    case CB_INT64:
    case CB_DATE:
        if (k->t.kind == EX_FLOAT || k->t.kind == EX_STRING)
            return;
        pr.v.i = v->i[0];
        break;
    case CB_TIMESTAMP:
        if (k->t.kind != EX_DATETIME || k->t.scale != col->t.scale)
            return;
        pr.v.i = v->i[0];
        break;
    case CB_UINT8:
    case CB_UINT16:
    case CB_UINT32:
    case CB_UINT64:
        if (k->t.kind == EX_FLOAT || k->t.kind == EX_STRING || (k->t.kind == EX_INT && v->i[0] < 0))
            return;
        pr.v.u = (uint64_t)v->i[0];
        break;
    case CB_FLOAT:
    case CB_DOUBLE:
        if (!ex_is_num(k->t.kind))
            return;
        pr.v.d = ex_f(v, 0);
        break;
    case CB_STRING:
    case CB_BINARY: {
        if (k->t.kind != EX_STRING)
            return;
        uint32_t l;
        const uint8_t *s = ex_str(v, 0, &l);
        pr.s = malloc(l + 1);
        if (!pr.s)
            return;
        if (l)
            memcpy(pr.s, s, l);
        pr.v.bytes = (const uint8_t *)pr.s;
        pr.v.len = l;
        break;
    }
    default: return;
    }
    eng_prune *np = realloc(p->prune, sizeof(*np) * (size_t)(p->n_prune + 1));
    if (!np) {
        free(pr.s);
        return;
    }
    p->prune = np;
    p->prune[p->n_prune++] = pr;
}

static void collect_prune(binder *b, const bx *e)
{
    if (!e || e->op != BX_FUNC)
        return;
    if (e->fn == F_AND) {
        for (int i = 0; i < e->na; i++)
            collect_prune(b, e->a[i]);
        return;
    }
    if (e->fn == F_ISNULL || e->fn == F_ISNOTNULL) {
        if (e->a[0]->op == BX_COL && e->a[0]->col < b->p->n_need) {
            eng_plan *p = b->p;
            eng_prune *np = realloc(p->prune, sizeof(*np) * (size_t)(p->n_prune + 1));
            if (np) {
                p->prune = np;
                p->prune[p->n_prune++] =
                    (eng_prune){.col = p->need[e->a[0]->col],
                                .op = e->fn == F_ISNULL ? PQ_IS_NULL : PQ_NOT_NULL};
            }
        }
        return;
    }
    static const pq_op ops[] = {
        [F_EQ] = PQ_EQ, [F_LT] = PQ_LT, [F_LE] = PQ_LE, [F_GT] = PQ_GT, [F_GE] = PQ_GE};
    static const pq_op flip[] = {
        [PQ_EQ] = PQ_EQ, [PQ_LT] = PQ_GT, [PQ_LE] = PQ_GE, [PQ_GT] = PQ_LT, [PQ_GE] = PQ_LE};
    if (e->fn != F_EQ && e->fn != F_LT && e->fn != F_LE && e->fn != F_GT && e->fn != F_GE)
        return;
    const bx *x = e->a[0], *y = e->a[1];
    if (x->op == BX_COL && y->op == BX_CONST)
        add_prune(b, x, ops[e->fn], y);
    else if (y->op == BX_COL && x->op == BX_CONST)
        add_prune(b, y, flip[ops[e->fn]], x);
}

/* ---- settings ------------------------------------------------------------------- */

int eng_settings_apply(const sql_stmt *st, eng_settings *s, char *err, size_t errlen)
{
    static const char *names[] = {"max_threads",
                                  "max_download_threads",
                                  "max_download_buffer_size",
                                  "max_memory_usage",
                                  "parallel_distributed_insert_select",
                                  "skip_unavailable_shards",
                                  "join_use_nulls",
                                  "select_sequential_consistency",
                                  "collect_hash_table_stats_during_aggregation",
                                  "max_size_to_preallocate_for_aggregation"};
    enum { N_NAMES = sizeof(names) / sizeof(names[0]) };
    for (int i = 0; i < st->n_settings; i++) {
        const sql_setting *x = &st->settings[i];
        int k = -1;
        for (int j = 0; j < N_NAMES; j++)
            if (strcmp(x->name, names[j]) == 0)
                k = j;
        if (k < 0 && eng_insert_setting_known(x->name))
            continue; /* INSERT's own (eng_tdef.h) */
        if (k < 0) {
            const char *sg = eng_suggest(x->name, names, N_NAMES);
            snprintf(err, errlen, "line %d, column %d: unknown setting '%s'%s%s%s", x->line, x->col,
                     x->name,
                     sg ? ", did you mean '"
                        : " (known: max_threads, "
                          "max_download_threads, "
                          "max_download_buffer_size, "
                          "max_memory_usage, "
                          "parallel_distributed_insert_select, "
                          "skip_unavailable_shards, join_use_nulls, "
                          "select_sequential_consistency, "
                          "collect_hash_table_stats_during_aggregation, "
                          "max_size_to_preallocate_for_aggregation)",
                     sg ? sg : "", sg ? "'?" : "");
            return -EINVAL;
        }
        const sql_node *v = x->value;
        uint64_t u;
        if (v->kind == SQL_INT && !v->negated)
            u = v->u;
        else if (v->kind == SQL_BOOL && (k == 5 || k == 6 || k == 7 || k == 8))
            u = v->i != 0;
        else if (v->kind == SQL_STRING && v->s[0] >= '0' && v->s[0] <= '9')
            u = strtoull(v->s, NULL, 10);
        else {
            snprintf(err, errlen, "line %d, column %d: setting %s needs a non-negative integer",
                     v->line, v->col, x->name);
            return -EINVAL;
        }
        switch (k) {
        case 0: s->max_threads = u > 1024 ? 1024 : (int)u; break;
        case 1: s->max_download_threads = u > 1024 ? 1024 : (int)u; break;
        case 2: s->max_download_buffer_size = u; break;
        case 3: s->max_memory_usage = u > INT64_MAX ? INT64_MAX : (int64_t)u; break;
        case 4:
            if (u > 2) {
                snprintf(err, errlen,
                         "line %d, column %d: parallel_distributed_insert_select is 0 (this "
                         "server inserts), 1 or 2 (each server of the s3Cluster inserts its "
                         "share)",
                         v->line, v->col);
                return -EINVAL;
            }
            s->parallel_distributed_insert_select = (int)u;
            break;
        case 5:
            if (u > 1) {
                snprintf(err, errlen, "line %d, column %d: skip_unavailable_shards is 0 or 1",
                         v->line, v->col);
                return -EINVAL;
            }
            s->skip_unavailable_shards = u == 1;
            break;
        case 6: s->join_use_nulls = u != 0; break;
        case 7:
            if (u > 1) {
                snprintf(err, errlen, "line %d, column %d: select_sequential_consistency is 0 or 1",
                         v->line, v->col);
                return -EINVAL;
            }
            s->select_sequential_consistency = u == 1;
            break;
        case 8:
            if (u > 1) {
                snprintf(err, errlen,
                         "line %d, column %d: collect_hash_table_stats_during_aggregation is 0 "
                         "or 1",
                         v->line, v->col);
                return -EINVAL;
            }
            s->hash_stats_off = u == 0;
            break;
        case 9:
            s->prealloc_given = true;
            s->prealloc_max = u;
            break;
        }
    }
    return 0;
}

/* ---- entry ------------------------------------------------------------------------ */

void eng_plan_free(eng_mem *m, eng_plan *p)
{
    free(p->need);
    bx_free(m, p->where);
    bx_free(m, p->ajoin);
    for (int i = 0; i < p->n_keys; i++)
        bx_free(m, p->keys[i]);
    free(p->keys);
    for (int i = 0; i < p->n_aggs; i++) {
        bx_free(m, p->aggs[i].arg);
        bx_free(m, p->aggs[i].arg2);
        bx_free(m, p->aggs[i].cond);
        sql_node_free(p->aggs[i].node);
    }
    free(p->aggs);
    for (int i = 0; i < p->n_outs; i++) {
        bx_free(m, p->outs[i].e);
        free(p->outs[i].name);
    }
    free(p->outs);
    bx_free(m, p->having);
    for (int i = 0; i < p->n_order; i++)
        bx_free(m, p->order[i].e);
    free(p->order);
    for (int i = 0; i < p->n_prune; i++)
        free(p->prune[i].s);
    free(p->prune);
    memset(p, 0, sizeof(*p));
}

static bool has_agg(const sql_node *n)
{
    if (is_agg_call(n))
        return true;
    for (int i = 0; i < n->nargs; i++)
        if (has_agg(n->args[i]))
            return true;
    return false;
}

/* LIMIT n BY keys: the keys after ORDER BY's in order[] (by_only), the
 * LIMIT that follows applied after them (so no stage cuts early). */
static bool bind_limit_by(binder *b, bmode mode)
{
    const sql_stmt *st = b->st;
    eng_plan *p = b->p;
    eng_order *no = realloc(p->order, sizeof(*no) * (size_t)(p->n_order + st->n_limit_by));
    if (!no) {
        boom(b);
        return false;
    }
    p->order = no;
    for (int i = 0; i < st->n_limit_by; i++) {
        sql_node *o = expand_pos(b, st->limit_by[i]);
        if (!o)
            return false;
        bx *e = bind(b, o, mode);
        sql_node_free(o);
        if (!e)
            return false;
        p->order[p->n_order++] = (eng_order){.e = e, .by_only = true};
        p->n_limit_by++;
    }
    p->limit_by_n = st->limit_by_n;
    p->limit_by_offset = st->limit_by_offset;
    p->lb_has_limit = p->has_limit;
    p->lb_limit = p->limit;
    p->lb_offset = p->offset;
    p->has_limit = false;
    p->limit = p->offset = 0;
    return true;
}

/* SELECT DISTINCT a, b: GROUP BY a, b with no aggregates (the output rows
 * are the keys). */
static bool bind_distinct(binder *b, bool aggs, sql_node **items, int n)
{
    const sql_stmt *st = b->st;
    if (aggs) {
        berr(b, st->n_group_by ? st->group_by[0] : items[0],
             "SELECT DISTINCT with GROUP BY or aggregate functions is not supported: the "
             "groups are distinct already, or use uniqExact() for a count");
        return false;
    }
    b->gkeys = calloc((size_t)n + 1, sizeof(sql_node *));
    b->p->keys = calloc((size_t)n + 1, sizeof(bx *));
    if (!b->gkeys || !b->p->keys) {
        boom(b);
        return false;
    }
    if (n > 16) {
        berr(b, items[16], "SELECT DISTINCT of %d expressions: at most 16 are supported", n);
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (!(b->gkeys[i] = sql_node_clone(items[i]))) {
            boom(b);
            return false;
        }
        b->n_gkeys = i + 1;
        if (!(b->p->keys[i] = bind(b, items[i], MODE_PRE)))
            return false;
        b->p->n_keys = i + 1;
    }
    return true;
}

/* Whether a star with a keep list (a JOIN's right side) keeps column cn. */
static bool keep_named(const sql_select_item *it, const char *cn)
{
    for (int e = 0; e < it->n_keep; e++)
        if (strcmp(it->keep[e], cn) == 0)
            return true;
    return false;
}

/* The columns of * or COLUMNS('re') into items[k...] (their names into
 * names[k...]), less EXCEPT's, with REPLACE's expressions in place of the
 * columns they name. Returns the next k. */
static int expand_star(binder *b, const sql_select_item *it, sql_node **items, char **names, int k)
{
    const eng_schema *sc = b->sc;
    regex_t re;
    bool has_re = it->expr->kind == SQL_COLUMNS;
    if (has_re && !bx_regex_bounded(it->expr->s)) {
        berr(b, it->expr, "the regular expression of COLUMNS is too large: " BX_REGEX_LIMITS);
        return k;
    }
    if (has_re) {
        int rc = regcomp(&re, it->expr->s, REG_EXTENDED | REG_NOSUB);
        if (rc) {
            char m[128];
            regerror(rc, &re, m, sizeof(m));
            berr(b, it->expr, "bad regular expression in COLUMNS('%s'): %s", it->expr->s, m);
            return k;
        }
    }
    for (int e = 0; e < it->n_except && !b->rc; e++)
        if (find_column(sc, it->except[e]) < 0)
            berr(b, it->expr, "EXCEPT names column '%s', which the source does not have",
                 it->except[e]);
    for (int r = 0; r < it->n_replace && !b->rc; r++)
        if (find_column(sc, it->replace[r].alias) < 0)
            berr(b, it->replace[r].expr,
                 "REPLACE names column '%s', which the source does not "
                 "have",
                 it->replace[r].alias);
    int first = k;
    /* a JOIN's right side reads the columns the outer query names; at least
     * one (the first), so that it has rows */
    int keep_fallback = -1;
    if (it->keep_set) {
        bool any = false;
        for (int c = 0; c < sc->n && !any; c++)
            if (!sc->cols[c].virt) {
                if (keep_fallback < 0)
                    keep_fallback = c;
                any = keep_named(it, sc->cols[c].name);
            }
        if (any)
            keep_fallback = -1;
    }
    for (int c = 0; c < sc->n && !b->rc; c++) {
        const char *cn = sc->cols[c].name;
        if (sc->cols[c].virt)
            continue; /* _path, _file, ...: by name only, as in ClickHouse */
        bool skip = has_re && regexec(&re, cn, 0, NULL, 0) != 0;
        for (int e = 0; e < it->n_except && !skip; e++)
            skip = strcmp(it->except[e], cn) == 0;
        if (!skip && it->keep_set)
            skip = !keep_named(it, cn) && c != keep_fallback;
        if (skip)
            continue;
        const sql_node *rep = NULL;
        for (int r = 0; r < it->n_replace; r++)
            if (strcmp(it->replace[r].alias, cn) == 0)
                rep = it->replace[r].expr;
        if (rep) {
            b->alias_stack[0] = cn;
            b->alias_depth = 1;
            items[k] = expand(b, rep);
            b->alias_depth = 0;
        } else {
            sql_node tmp = {.kind = SQL_COLUMN,
                            .line = it->expr->line,
                            .col = it->expr->col,
                            .s = (char *)cn,
                            .slen = strlen(cn)};
            items[k] = sql_node_clone(&tmp);
        }
        names[k] = strdup(cn);
        if (!items[k] || !names[k])
            boom(b);
        k++;
    }
    if (has_re)
        regfree(&re);
    if (!b->rc && k == first && has_re)
        berr(b, it->expr, "COLUMNS('%s') matches no column of the source", it->expr->s);
    return k;
}

int eng_bind(eng_mem *m, const sql_stmt *st, const eng_schema *sc, eng_plan *p, char *err,
             size_t errlen)
{
    return eng_bind_ex(m, st, sc, NULL, p, err, errlen);
}

int eng_bind_ex(eng_mem *m, const sql_stmt *st, const eng_schema *sc, const eng_bind_env *env,
                eng_plan *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    p->schema = sc;
    binder b = {.mem = m, .env = env, .st = st, .sc = sc, .p = p, .err = err, .errlen = errlen};
    sql_node **ex_items = NULL;
    int n_items = 0;
    /* SELECT * / COLUMNS('re') -> the columns, less EXCEPT's */
    for (int i = 0; i < st->n_items; i++)
        n_items += st->items[i].expr->kind == SQL_STAR || st->items[i].expr->kind == SQL_COLUMNS
                       ? sc->n
                       : 1;
    ex_items = calloc((size_t)n_items + 1, sizeof(*ex_items));
    char **names = calloc((size_t)n_items + 1, sizeof(char *));
    if (!ex_items || !names) {
        boom(&b);
        goto out;
    }
    int k = 0;
    for (int i = 0; i < st->n_items && !b.rc; i++) {
        const sql_select_item *it = &st->items[i];
        if (it->expr->kind == SQL_STAR || it->expr->kind == SQL_COLUMNS) {
            k = expand_star(&b, it, ex_items, names, k);
            continue;
        }
        if (it->alias) {
            b.alias_stack[0] = it->alias;
            b.alias_depth = 1;
        }
        ex_items[k] = expand(&b, it->expr);
        b.alias_depth = 0;
        char nb[1024];
        if (it->alias)
            names[k] = strdup(it->alias);
        else {
            sql_node_name(it->expr, nb, sizeof(nb));
            names[k] = strdup(nb);
        }
        if (!names[k])
            boom(&b);
        k++;
    }
    n_items = k; /* SELECT * skipped the virtual columns */
    b.items = ex_items;
    b.n_items = n_items;
    if (b.rc)
        goto out;
    /* ARRAY JOIN: the array over the source's columns; then its name is the element */
    if (st->array_join) {
        sql_node at = {.line = st->array_join_line, .col = st->array_join_col};
        if (st->n_joins) {
            berr(&b, &at, "ARRAY JOIN together with JOIN is not supported: join in a subquery");
            goto out;
        }
        if (has_agg(st->array_join)) {
            berr(&b, &at, "aggregate functions are not allowed in ARRAY JOIN");
            goto out;
        }
        if (!bind_ajoin_array(&b, &at, st->array_join))
            goto out;
        p->ajoin_left = st->array_join_left;
        b.aj_name = st->array_join_alias                 ? st->array_join_alias
                    : st->array_join->kind == SQL_COLUMN ? st->array_join->s
                                                         : NULL;
        if (!b.aj_name) {
            berr(&b, &at, "ARRAY JOIN of an expression needs a name: ARRAY JOIN expr AS x");
            goto out;
        }
    }
    /* WHERE */
    if (st->where) {
        sql_node *w = expand(&b, st->where);
        if (w) {
            if (has_agg(w))
                berr(&b, w, "aggregate functions are not allowed in WHERE: use HAVING");
            else
                p->where = bind(&b, w, MODE_PRE);
        }
        sql_node_free(w);
        if (b.rc)
            goto out;
        if (p->where && (p->where->t.kind == EX_STRING || is_temporal(p->where->t.kind))) {
            berr(&b, st->where,
                 "illegal type of the WHERE condition: it must be a number or a "
                 "comparison");
            goto out;
        }
    }
    /* GROUP BY */
    bool aggs = st->n_group_by > 0 || st->having;
    for (int i = 0; i < n_items; i++)
        aggs |= has_agg(ex_items[i]);
    for (int i = 0; i < st->n_order_by; i++) {
        sql_node *o = expand(&b, st->order_by[i].expr);
        if (o)
            aggs |= has_agg(o);
        sql_node_free(o);
    }
    if (st->distinct && !bind_distinct(&b, aggs, ex_items, n_items))
        goto out;
    aggs |= st->distinct;
    p->aggregate = aggs;
    if (st->n_group_by) {
        b.gkeys = calloc((size_t)st->n_group_by, sizeof(sql_node *));
        p->keys = calloc((size_t)st->n_group_by, sizeof(bx *));
        if (!b.gkeys || !p->keys) {
            boom(&b);
            goto out;
        }
        for (int i = 0; i < st->n_group_by; i++) {
            sql_node *g = expand_pos(&b, st->group_by[i]);
            if (!g)
                goto out;
            b.gkeys[b.n_gkeys++] = g;
            if (has_agg(g)) {
                berr(&b, st->group_by[i], "aggregate functions are not allowed in GROUP BY");
                goto out;
            }
            p->keys[i] = bind(&b, g, MODE_PRE);
            if (!p->keys[i])
                goto out;
            p->n_keys = i + 1;
        }
    }
    bmode mode = aggs ? MODE_POST : MODE_PRE;
    p->outs = calloc((size_t)n_items, sizeof(eng_out));
    if (!p->outs) {
        boom(&b);
        goto out;
    }
    for (int i = 0; i < n_items; i++) {
        p->outs[i].e = bind(&b, ex_items[i], mode);
        if (!p->outs[i].e)
            goto out;
        p->outs[i].name = names[i];
        names[i] = NULL;
        p->n_outs = i + 1;
    }
    if (st->having) {
        sql_node *h = expand(&b, st->having);
        if (!h)
            goto out;
        p->having = bind(&b, h, MODE_POST);
        sql_node_free(h);
        if (!p->having)
            goto out;
    }
    if (st->n_order_by) {
        p->order = calloc((size_t)st->n_order_by, sizeof(eng_order));
        if (!p->order) {
            boom(&b);
            goto out;
        }
        for (int i = 0; i < st->n_order_by; i++) {
            sql_node *o = expand_pos(&b, st->order_by[i].expr);
            if (!o)
                goto out;
            p->order[i].e = bind(&b, o, mode);
            sql_node_free(o);
            if (!p->order[i].e)
                goto out;
            p->order[i].desc = st->order_by[i].desc;
            p->order[i].nulls_first = st->order_by[i].nulls == 1;
            p->n_order = i + 1;
        }
    }
    p->has_limit = st->has_limit;
    p->limit = st->limit;
    p->offset = st->offset;
    if (st->n_limit_by && !bind_limit_by(&b, mode))
        goto out;
    if (p->ajoin) {
        /* the element goes after the source's slots */
        aj_fix(p->where, p->n_need);
        for (int i = 0; i < p->n_keys; i++)
            aj_fix(p->keys[i], p->n_need);
        for (int i = 0; i < p->n_aggs; i++) {
            aj_fix(p->aggs[i].arg, p->n_need);
            aj_fix(p->aggs[i].arg2, p->n_need);
            aj_fix(p->aggs[i].cond, p->n_need);
        }
        if (!p->aggregate) {
            for (int i = 0; i < p->n_outs; i++)
                aj_fix(p->outs[i].e, p->n_need);
            for (int i = 0; i < p->n_order; i++)
                aj_fix(p->order[i].e, p->n_need);
        }
    }
    collect_prune(&b, p->where);
out:
    if (ex_items)
        for (int i = 0; i < n_items; i++)
            sql_node_free(ex_items[i]);
    free(ex_items);
    if (names)
        for (int i = 0; i < n_items; i++)
            free(names[i]);
    free(names);
    for (int i = 0; i < b.n_gkeys; i++)
        sql_node_free(b.gkeys[i]);
    free(b.gkeys);
    if (b.rc)
        eng_plan_free(m, p);
    return b.rc;
}
