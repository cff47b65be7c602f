/* SPDX-License-Identifier: Apache-2.0
 *
 * src_table.c: a MergeTree table as a source (FROM t, FROM db.t, FROM t
 * FINAL). Opening reads the table's log and pins its latest version: the
 * query sees the parts of that version and no other, whatever commits
 * meanwhile (removed parts stay readable for old_parts_lifetime). After
 * binding, every active part's footer is opened (in parallel, through the
 * caller's S3 access: the cache client when there is one), the part is
 * skipped when the min/max of its partition columns cannot meet WHERE, and
 * the granules that the sparse primary index cannot rule out (=, IN, <, <=,
 * >, >=, BETWEEN and their AND / OR on the ORDER BY columns) are cut into work
 * units of up to UNIT_GRANULES granules. A unit reads only the columns the
 * query needs, and only the blocks of its granules (part.h). The prefetcher
 * (eng_fetch.h) downloads the units after the ones the workers hold, each
 * unit's column runs in one request with touching runs coalesced, so a
 * worker finds its blocks in memory instead of waiting for each request.
 *
 * FINAL on a ReplacingMergeTree: one unit per partition, its parts merged
 * by the k-way merge (merge.h) into a part in memory, which is then read: of
 * rows with equal sorting keys the one with the greatest version (the last
 * inserted among equals) is seen. On a MergeTree, FINAL changes nothing.
 */
#include "src_int.h"
#include "src_int_table.h"

#include "eng_fetch.h"
#include "eng_tdef.h"
#include "merge.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNIT_GRANULES 16
#define BATCH_ROWS    65536

typedef struct tpart {
    const tb_part *p;
    rs_source *src;
    tp_reader *rd;
    tb_part_ref *ref; /* src and rd are the catalog's (kept across queries) */
    uint32_t *colmap; /* scan slot -> part column */
} tpart;

typedef struct tunit {
    uint32_t part;   /* FINAL: the first part of the partition */
    uint32_t g0, g1; /* FINAL: g0 = number of parts */
} tunit;

typedef struct src_table {
    eng_source base;
    eng_scan_env env;
    char db[TB_WH_NAME_MAX], name[TB_WH_NAME_MAX];
    tb_table *t;
    tb_snapshot *snap;
    bool final, replacing;
    const eng_plan *plan;
    tpart *parts;
    size_t n_parts;
    tunit *units;
    int n_units;
    ef *pf; /* reading ahead (NULL: none) */
    _Atomic size_t next_open;
    eng_fail fail;
    /* sorting key expressions (their values are stored columns): bound over
     * the schema, for pruning by a WHERE on them or on their column */
    struct tkey {
        int col;      /* the stored column of its value */
        sql_stmt *st; /* SELECT (expr) FROM t */
        eng_plan plan;
        bool bound;
        int mono_col; /* f(col) with f non-decreasing (toDate, toYYYYMM, ...): col, else -1 */
    } * keys;
    int n_keys;
    eng_mem kmem;
} src_table;

/* ---- opening parts --------------------------------------------------------------- */

static int open_part(src_table *s, tpart *tp, char *err, size_t errlen)
{
    int rc;
    if (s->env.wh->cat)
        rc = tb_cat_part_open_known(s->env.wh->cat, s->t, tp->p, &tp->ref, &tp->src, &tp->rd, err,
                                    errlen); /* the warehouse's part I/O */
    else if (tb_part_known(s->t, tp->p))     /* its size and version in the log: no HEAD */
        rc = tb_part_open_known(s->t, tp->p, &tp->src, &tp->rd, err, errlen);
    else if (s->env.open_s3)
        rc = tb_part_open_via(s->t, tp->p->name, s->env.open_s3, s->env.s3_impl, &tp->src, &tp->rd,
                              err, errlen);
    else
        rc = tb_part_open(s->t, tp->p->name, &tp->src, &tp->rd, err, errlen);
    if (rc < 0)
        return rc;
    const eng_plan *p = s->plan;
    tp->colmap = calloc((size_t)p->n_need + 1, sizeof(uint32_t));
    if (!tp->colmap)
        return -ENOMEM;
    const tp_part_meta *m = tp_reader_meta(tp->rd);
    for (int k = 0; k < p->n_need; k++) {
        const eng_col *c = &s->base.schema.cols[p->need[k]];
        int i = tp_reader_column(tp->rd, c->name);
        if (i < 0 || m->cols[i].info.type != c->cb.type || m->cols[i].info.unit != c->cb.unit ||
            m->cols[i].info.scale != c->cb.scale || m->cols[i].info.elem != c->cb.elem ||
            m->cols[i].info.elem_null != c->cb.elem_null) {
            snprintf(err, errlen,
                     "part %s of table %s.%s does not hold column %s as the table declares it: "
                     "the part is damaged or from another table",
                     tp->p->name, s->db, s->name, c->name);
            return -EBADMSG;
        }
        tp->colmap[k] = (uint32_t)i;
    }
    return 0;
}

static void *open_main(void *arg)
{
    src_table *s = arg;
    char err[ENG_MSG_MAX];
    for (;;) {
        size_t i = atomic_fetch_add(&s->next_open, 1);
        if (i >= s->n_parts || atomic_load(&s->fail.rc) || atomic_load(s->env.stop))
            break;
        err[0] = 0;
        int rc = open_part(s, &s->parts[i], err, sizeof(err));
        if (rc < 0) {
            if (!err[0])
                snprintf(err, sizeof(err), "cannot open part %s: %s", s->parts[i].p->name,
                         strerror(-rc));
            eng_fail_set(&s->fail, rc, err);
            break;
        }
    }
    return NULL;
}

/* ---- pruning: the WHERE tree to a condition on the key ----------------------------- */

typedef struct carena {
    tp_cond **conds;
    size_t n, cap;
    cb_column **cols;
    size_t nc, ccap;
    const tp_cond ***kids;
    size_t nk, kcap;
} carena;

static void *arena_keep(void ***arr, size_t *n, size_t *cap, void *p)
{
    if (!p)
        return NULL;
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        void **np = realloc(*arr, c * sizeof(void *));
        if (!np) {
            free(p);
            return NULL;
        }
        *arr = np;
        *cap = c;
    }
    (*arr)[(*n)++] = p;
    return p;
}

static void arena_free(carena *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->conds[i]);
    for (size_t i = 0; i < a->nc; i++)
        cb_column_unref(a->cols[i]);
    for (size_t i = 0; i < a->nk; i++)
        free((void *)a->kids[i]);
    free(a->conds);
    free(a->cols);
    free(a->kids);
    memset(a, 0, sizeof(*a));
}

/* A value of the key column's type from a constant; false when not exact. */
static bool put_value(cb_column *c, uint32_t row, const ex_type *ct, int64_t i, double d,
                      const uint8_t *sp, uint32_t len, const ex_type *colt)
{
    const cb_typeinfo *ti = &c->info;
    size_t w = cb_type_width(ti);
    if (!w) {
        if (ct->kind != EX_STRING)
            return false;
        if (cb_column_reserve_data(c, c->offsets[row] + (size_t)len + 1) < 0)
            return false;
        if (len)
            memcpy(c->data + c->offsets[row], sp, len);
        c->offsets[row + 1] = c->offsets[row] + len;
        return true;
    }
    (void)d;
    ex_type tt = *ct;
    if (ct->kind == EX_STRING && (colt->kind == EX_DATE || colt->kind == EX_DATETIME)) {
        /* a date or time written as a string */
        int seen;
        if (colt->kind == EX_DATE
                ? !ex_parse_date((const char *)sp, len, &i)
                : !ex_parse_datetime((const char *)sp, len, colt->scale, &i, &seen))
            return false;
        tt = *colt;
        ct = &tt;
    }
    if (ct->kind == EX_DATETIME && colt->kind == EX_DATETIME && ct->scale < colt->scale) {
        for (int k = ct->scale; k < colt->scale; k++) {
            if (i > INT64_MAX / 10 || i < INT64_MIN / 10)
                return false;
            i *= 10;
        }
        tt = *colt;
        ct = &tt;
    }
    if (ct->kind == EX_STRING || ct->kind == EX_FLOAT || ti->type == CB_FLOAT ||
        ti->type == CB_DOUBLE || ti->type == CB_DECIMAL)
        return false;
    if ((colt->kind == EX_DATE) != (ct->kind == EX_DATE) ||
        (colt->kind == EX_DATETIME) != (ct->kind == EX_DATETIME) ||
        (colt->kind == EX_DATETIME && colt->scale != ct->scale))
        return false;
    if (ct->kind == EX_UINT && i < 0 && colt->kind != EX_UINT)
        return false;
    uint8_t *p = (uint8_t *)c->values + (size_t)row * w;
    switch (ti->type) {
    case CB_BOOL:
    case CB_UINT8:
        if ((uint64_t)i > 255)
            return false;
        *p = (uint8_t)i;
        return true;
    case CB_INT8:
        if (i < -128 || i > 127)
            return false;
        *(int8_t *)p = (int8_t)i;
        return true;
    case CB_INT16:
        if (i < -32768 || i > 32767)
            return false;
        {
            int16_t x = (int16_t)i;
            memcpy(p, &x, 2);
        }
        return true;
    case CB_UINT16:
        if (i < 0 || i > 65535)
            return false;
        {
            uint16_t x = (uint16_t)i;
            memcpy(p, &x, 2);
        }
        return true;
    case CB_INT32:
    case CB_DATE:
        if (i < INT32_MIN || i > INT32_MAX)
            return false;
        {
            int32_t x = (int32_t)i;
            memcpy(p, &x, 4);
        }
        return true;
    case CB_UINT32:
        if (i < 0 || i > (int64_t)UINT32_MAX)
            return false;
        {
            uint32_t x = (uint32_t)i;
            memcpy(p, &x, 4);
        }
        return true;
    case CB_UINT64:
        if (ct->kind == EX_INT && i < 0)
            return false;
        memcpy(p, &i, 8);
        return true;
    default: memcpy(p, &i, 8); return true;
    }
}

/* Whether query expression a (its columns scan slots of aneed) is key
 * expression b (columns of bneed): the same tree over the same columns. */
/* Whether every column e reads is one of the source's n needed columns (not
 * a slot past them, as ARRAY JOIN's element is). */
static bool cols_in_range(const bx *e, int n, int depth)
{
    if (depth > 30)
        return false;
    if (e->op == BX_COL)
        return e->col >= 0 && e->col < n;
    for (int i = 0; i < e->na; i++)
        if (!cols_in_range(e->a[i], n, depth + 1))
            return false;
    return true;
}

static bool same_expr(const bx *a, const int *aneed, const bx *b, const int *bneed, int depth)
{
    if (a->op != b->op || a->t.kind != b->t.kind || depth > 30)
        return false;
    if (a->op == BX_COL)
        return aneed[a->col] == bneed[b->col];
    if (a->op == BX_CONST) {
        char x[128], y[128];
        const uint8_t *xs = NULL, *ys = NULL;
        size_t xn = ex_fmt_value(&a->cval, 0, x, sizeof(x), &xs);
        size_t yn = ex_fmt_value(&b->cval, 0, y, sizeof(y), &ys);
        return ex_null(&a->cval, 0) == ex_null(&b->cval, 0) && xn == yn &&
               memcmp(xs ? (const char *)xs : x, ys ? (const char *)ys : y, xn) == 0;
    }
    if (a->fn != b->fn || a->na != b->na || a->negated != b->negated || a->unit != b->unit ||
        a->n_in || b->n_in)
        return false;
    for (int i = 0; i < a->na; i++)
        if (!same_expr(a->a[i], aneed, b->a[i], bneed, depth + 1))
            return false;
    return true;
}

/* f(col) for an f that never decreases as its argument grows, over a Date
 * or DateTime column: toDate, toYear, toYYYYMM(DD(hhmmss)), toStartOf*. */
static int mono_column(const bx *e, const int *need, const eng_schema *sc)
{
    if (e->op != BX_FUNC || e->na != 1 || e->a[0]->op != BX_COL)
        return -1;
    bool mono = e->fn == F_TODATE || e->fn == F_TOYEAR || e->fn == F_TOSTARTOFMONTH ||
                e->fn == F_TOSTARTOFDAY || e->fn == F_TOSTARTOF ||
                (e->fn == F_DATEPART && (e->unit == BX_P_YYYYMM || e->unit == BX_P_YYYYMMDD ||
                                         e->unit == BX_P_YYYYMMDDHHMMSS));
    int c = need[e->a[0]->col];
    uint8_t k = sc->cols[c].t.kind;
    return mono && (k == EX_DATE || k == EX_DATETIME) && !sc->cols[c].t.nullable ? c : -1;
}

static void keys_free(src_table *s)
{
    for (int i = 0; i < s->n_keys; i++) {
        if (s->keys[i].bound)
            eng_plan_free(&s->kmem, &s->keys[i].plan);
        sql_stmt_destroy(&s->keys[i].st);
    }
    free(s->keys);
    s->keys = NULL;
    s->n_keys = 0;
}

/* Binds the table's sorting key expressions (best effort: one that does not
 * bind is only not used for pruning). */
static void keys_bind(src_table *s, const eng_tdef *def)
{
    const tb_schema *ts = &def->schema;
    if (!(s->keys = calloc(ts->n_key + 1, sizeof(*s->keys))))
        return;
    for (uint32_t k = 0; k < ts->n_key; k++) {
        uint32_t c = ts->key_cols[k];
        if (!eng_tdef_hidden(ts->cols[c].name) || !def->defaults || !def->defaults[c])
            continue;
        struct tkey *tk = &s->keys[s->n_keys];
        size_t n = strlen(def->defaults[c]) + 32;
        char *sql = malloc(n), msg[ENG_MSG_MAX];
        if (!sql)
            return;
        snprintf(sql, n, "SELECT (%s) FROM t", def->defaults[c]);
        int rc = sql_parse(sql, strlen(sql), &tk->st, msg, sizeof(msg));
        free(sql);
        if (rc == 0 && tk->st->n_items == 1 &&
            eng_bind(&s->kmem, tk->st, &s->base.schema, &tk->plan, msg, sizeof(msg)) == 0) {
            tk->bound = true;
            tk->col = (int)c;
            tk->mono_col = mono_column(tk->plan.outs[0].e, tk->plan.need, &s->base.schema);
            s->n_keys++;
        } else {
            sql_stmt_destroy(&tk->st);
        }
    }
}

/* v[row] = f(the constant) of key expression tk, in its stored column's
 * type; false when it cannot be computed exactly. */
static bool put_mapped(const src_table *s, const struct tkey *tk, cb_column *v, uint32_t row,
                       const ex_type *ct, int64_t i, double d, const uint8_t *sp, uint32_t len)
{
    const eng_col *src = &s->base.schema.cols[tk->mono_col];
    const eng_col *dst = &s->base.schema.cols[tk->col];
    cb_column *one;
    if (cb_column_create(&one, &src->cb, NULL, 1) < 0)
        return false;
    bool ok = put_value(one, 0, ct, i, d, sp, len, &src->t);
    one->n = 1;
    ex_vec in = {0}, out = {0};
    char err[256];
    eng_mem mem = {0}; /* for this one value */
    ex_ectx ec = {&mem, err, sizeof(err)};
    if (ok)
        ok = ex_vec_from_column(&mem, one, &in) == 0 &&
             bx_eval(&ec, tk->plan.outs[0].e, &in, NULL, 1, &out) == 0 && !ex_null(&out, 0) &&
             out.t.kind != EX_STRING && out.t.kind != EX_FLOAT &&
             put_value(v, row, &out.t, out.i[ex_row(&out, 0)], 0, NULL, 0, &dst->t);
    ex_vec_clear(&mem, &out);
    ex_vec_clear(&mem, &in);
    cb_column_unref(one);
    return ok;
}

/* keypos[schema column] = position in the key (or -1). NULL: match anything. */
static const tp_cond *to_cond(carena *a, const src_table *s, const int *keypos, const bx *e,
                              int depth)
{
    if (!e || e->op != BX_FUNC || depth > 60)
        return NULL;
    const eng_plan *p = s->plan;
    if (e->fn == F_AND || e->fn == F_OR) {
        const tp_cond **kids = calloc((size_t)e->na + 1, sizeof(tp_cond *));
        if (!arena_keep((void ***)&a->kids, &a->nk, &a->kcap, (void *)kids))
            return NULL;
        uint32_t nk = 0;
        for (int i = 0; i < e->na; i++) {
            const tp_cond *k = to_cond(a, s, keypos, e->a[i], depth + 1);
            if (!k && e->fn == F_OR)
                return NULL;
            if (k)
                kids[nk++] = k;
        }
        if (nk == 0)
            return NULL;
        if (nk == 1)
            return kids[0];
        tp_cond *c = arena_keep((void ***)&a->conds, &a->n, &a->cap, calloc(1, sizeof(tp_cond)));
        if (!c)
            return NULL;
        c->op = e->fn == F_AND ? TP_COND_AND : TP_COND_OR;
        c->kids = kids;
        c->n_kids = nk;
        return c;
    }
    static const tp_cond_op ops[] = {[F_EQ] = TP_COND_EQ,
                                     [F_LT] = TP_COND_LT,
                                     [F_LE] = TP_COND_LE,
                                     [F_GT] = TP_COND_GT,
                                     [F_GE] = TP_COND_GE};
    static const tp_cond_op flip[] = {[TP_COND_EQ] = TP_COND_EQ,
                                      [TP_COND_LT] = TP_COND_GT,
                                      [TP_COND_LE] = TP_COND_GE,
                                      [TP_COND_GT] = TP_COND_LT,
                                      [TP_COND_GE] = TP_COND_LE};
    const bx *col = NULL, *k = NULL;
    tp_cond_op op;
    if (e->fn == F_IN && !e->negated) {
        col = e->a[0];
        op = TP_COND_IN;
    } else if (e->fn == F_EQ || e->fn == F_LT || e->fn == F_LE || e->fn == F_GT || e->fn == F_GE) {
        if (e->a[1]->op == BX_CONST && e->a[0]->op != BX_CONST) {
            col = e->a[0];
            k = e->a[1];
            op = ops[e->fn];
        } else if (e->a[0]->op == BX_CONST && e->a[1]->op != BX_CONST) {
            col = e->a[1];
            k = e->a[0];
            op = flip[ops[e->fn]];
        } else {
            return NULL;
        }
    } else {
        return NULL;
    }
    /* the key column it constrains: a column, a key expression (its stored
     * value), or a column under a key expression f(col) that never decreases:
     * col = c gives f(col) = f(c), col < c or <= c gives f(col) <= f(c), col >
     * c or >= c gives f(col) >= f(c) */
    int sc = -1;
    const struct tkey *mono = NULL;
    /* a slot past the source's columns (ARRAY JOIN's element) prunes nothing */
    if (!cols_in_range(col, p->n_need, 0))
        return NULL;
    if (col->op == BX_COL) {
        sc = p->need[col->col];
    } else {
        for (int i = 0; i < s->n_keys && sc < 0; i++)
            if (same_expr(col, p->need, s->keys[i].plan.outs[0].e, s->keys[i].plan.need, 0))
                sc = s->keys[i].col;
    }
    if (sc < 0)
        return NULL;
    if (keypos[sc] < 0 && col->op == BX_COL)
        for (int i = 0; i < s->n_keys && !mono; i++)
            if (s->keys[i].mono_col == sc && keypos[s->keys[i].col] >= 0)
                mono = &s->keys[i];
    if (mono) {
        sc = mono->col;
        if (op == TP_COND_LT)
            op = TP_COND_LE;
        else if (op == TP_COND_GT)
            op = TP_COND_GE;
    }
    if (keypos[sc] < 0)
        return NULL;
    const eng_col *ec = &s->base.schema.cols[sc];
    uint32_t n = op == TP_COND_IN ? (uint32_t)e->n_in : 1;
    cb_column *v;
    if (cb_column_create(&v, &ec->cb, NULL, n) < 0)
        return NULL;
    if (!arena_keep((void ***)&a->cols, &a->nc, &a->ccap, v)) {
        cb_column_unref(v);
        return NULL;
    }
    uint32_t m = 0;
    if (op == TP_COND_IN) {
        ex_type it = col->t;
        it.nullable = false;
        for (int i = 0; i < e->n_in; i++) {
            if (it.kind != EX_STRING && it.kind != EX_FLOAT && e->in_i[i] == INT64_MIN)
                continue; /* can never match */
            if (!(mono ? put_mapped(s, mono, v, m, &it, e->in_i[i], e->in_d[i],
                                    (const uint8_t *)e->in_s[i], e->in_len[i])
                       : put_value(v, m, &it, e->in_i[i], e->in_d[i], (const uint8_t *)e->in_s[i],
                                   e->in_len[i], &ec->t)))
                return NULL;
            m++;
        }
        v->n = m;
        if (m == 0) {
            /* nothing can match: an empty IN */
        }
    } else {
        if (ex_null(&k->cval, 0))
            return NULL;
        uint32_t len = 0;
        const uint8_t *sp = k->t.kind == EX_STRING ? ex_str(&k->cval, 0, &len) : NULL;
        int64_t iv = k->t.kind == EX_FLOAT || k->t.kind == EX_STRING ? 0 : k->cval.i[0];
        if (!(mono ? put_mapped(s, mono, v, 0, &k->t, iv, 0, sp, len)
                   : put_value(v, 0, &k->t, iv, 0, sp, len, &ec->t)))
            return NULL;
        m = 1;
    }
    tp_cond *c = arena_keep((void ***)&a->conds, &a->n, &a->cap, calloc(1, sizeof(tp_cond)));
    if (!c)
        return NULL;
    c->op = op;
    c->key_pos = (uint32_t)keypos[sc];
    c->values = v;
    return c;
}

/* ---- planning ---------------------------------------------------------------------- */

static int add_unit(src_table *s, uint32_t part, uint32_t g0, uint32_t g1, int *cap)
{
    if (s->n_units == *cap) {
        int c = *cap ? *cap * 2 : 64;
        tunit *u = realloc(s->units, (size_t)c * sizeof(tunit));
        if (!u)
            return -ENOMEM;
        s->units = u;
        *cap = c;
    }
    s->units[s->n_units++] = (tunit){part, g0, g1};
    return 0;
}

/* Whether part tp may hold rows matching WHERE, by its partition columns'
 * min/max. */
static bool part_may_match(const src_table *s, carena *a, const tpart *tp)
{
    const tp_part_meta *m = tp_reader_meta(tp->rd);
    int n = s->base.schema.n;
    int *keypos = malloc(sizeof(int) * (size_t)(n + 1));
    if (!keypos)
        return true;
    bool may = true;
    for (uint32_t j = 0; j < m->n_minmax && may; j++) {
        const cb_column *mn = m->minmax[2 * j], *mx = m->minmax[2 * j + 1];
        if (!mn || !mx)
            continue; /* only NULLs */
        const char *cname = m->cols[m->minmax_cols[j]].name;
        for (int i = 0; i < n; i++)
            keypos[i] = strcmp(s->base.schema.cols[i].name, cname) ? -1 : 0;
        const tp_cond *c = to_cond(a, s, keypos, s->plan->where, 0);
        cb_column *two = NULL;
        if (!c || cb_column_create(&two, &mn->info, NULL, 2) < 0)
            continue;
        size_t w = cb_type_width(&mn->info);
        bool built = true;
        if (w) {
            memcpy(two->values, mn->values, w);
            memcpy((uint8_t *)two->values + w, mx->values, w);
        } else {
            size_t la, lb;
            const uint8_t *pa = cb_column_bytes(mn, 0, &la), *pb = cb_column_bytes(mx, 0, &lb);
            built = cb_column_reserve_data(two, la + lb + 1) == 0;
            if (built) {
                if (la)
                    memcpy(two->data, pa, la);
                if (lb)
                    memcpy(two->data + la, pb, lb);
                two->offsets[1] = (uint32_t)la;
                two->offsets[2] = (uint32_t)(la + lb);
            }
        }
        tp_granule_range *r = NULL;
        size_t nr = 0;
        const cb_column *idx[1] = {two};
        if (built && tp_prune_index(idx, 1, 1, c, &r, &nr, NULL, 0) == 0 && nr == 0)
            may = false;
        free(r);
        cb_column_unref(two);
    }
    free(keypos);
    return may;
}

static int table_plan(eng_source *b, const eng_plan *p, char *err, size_t errlen)
{
    src_table *s = (src_table *)b;
    s->plan = p;
    if (s->n_parts == 0)
        return 0;
    int nth = s->env.set->max_threads;
    if (nth < s->env.set->max_download_threads)
        nth = s->env.set->max_download_threads;
    if ((size_t)nth > s->n_parts)
        nth = (int)s->n_parts;
    if (nth > 32)
        nth = 32;
    pthread_t th[32];
    int started = 0;
    for (int i = 0; i < nth; i++)
        if (pthread_create(&th[started], NULL, open_main, s) == 0)
            started++;
    if (!started)
        open_main(s);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    int frc = atomic_load(&s->fail.rc);
    if (frc) {
        snprintf(err, errlen, "%s", s->fail.msg);
        return frc;
    }
    int cap = 0;
    if (s->final && s->replacing) {
        for (size_t i = 0; i < s->n_parts;) {
            size_t j = i;
            while (j < s->n_parts && !strcmp(s->parts[j].p->partition, s->parts[i].p->partition))
                j++;
            if (add_unit(s, (uint32_t)i, (uint32_t)(j - i), 0, &cap) < 0)
                return -ENOMEM;
            i = j;
        }
        return s->n_units;
    }
    /* the key's positions by schema column */
    const tb_schema *ts = &s->snap->schema;
    int n = s->base.schema.n;
    int *keypos = malloc(sizeof(int) * (size_t)(n + 1));
    if (!keypos)
        return -ENOMEM;
    for (int i = 0; i < n; i++)
        keypos[i] = -1;
    for (uint32_t k = 0; k < ts->n_key; k++)
        keypos[ts->key_cols[k]] = (int)k;
    carena a = {0};
    const tp_cond *cond = to_cond(&a, s, keypos, p->where, 0);
    int rc = 0;
    for (size_t i = 0; i < s->n_parts && rc == 0; i++) {
        tpart *tp = &s->parts[i];
        const tp_part_meta *m = tp_reader_meta(tp->rd);
        if (p->where && !part_may_match(s, &a, tp)) {
            atomic_fetch_add(&s->env.stats->units_pruned, m->granules);
            continue;
        }
        tp_granule_range *r = NULL;
        size_t nr = 0;
        if (cond && tp_prune(tp->rd, cond, &r, &nr, NULL, 0) < 0) {
            free(r);
            r = NULL;
            cond = NULL; /* a condition the index cannot use: read everything */
        }
        if (!cond) {
            free(r);
            r = malloc(sizeof(*r));
            if (!r) {
                rc = -ENOMEM;
                break;
            }
            r[0] = (tp_granule_range){0, m->granules};
            nr = 1;
        }
        uint32_t kept = 0;
        for (size_t k = 0; k < nr && rc == 0; k++) {
            kept += r[k].end - r[k].begin;
            for (uint32_t g = r[k].begin; g < r[k].end && rc == 0; g += UNIT_GRANULES) {
                uint32_t e = g + UNIT_GRANULES < r[k].end ? g + UNIT_GRANULES : r[k].end;
                rc = add_unit(s, (uint32_t)i, g, e, &cap);
            }
        }
        atomic_fetch_add(&s->env.stats->units_pruned, m->granules - kept);
        free(r);
    }
    arena_free(&a);
    free(keypos);
    if (rc < 0) {
        snprintf(err, errlen, "out of memory planning the read of %s.%s", s->db, s->name);
        return rc;
    }
    return s->n_units;
}

/* ---- reading -------------------------------------------------------------------------- */

/* FINAL: the partition's parts merged into one in memory, then read. */
static int read_final(src_table *s, const tunit *u, eng_scan_fn fn, void *arg, char *err,
                      size_t errlen)
{
    tp_reader **in = calloc(u->g0 + 1, sizeof(tp_reader *));
    if (!in)
        return -ENOMEM;
    for (uint32_t i = 0; i < u->g0; i++)
        in[i] = s->parts[u->part + i].rd;
    const tp_part_meta *m = tp_reader_meta(in[0]);
    tp_writer_opts wo = {.part_name = s->parts[u->part].p->partition,
                         .cols = m->cols,
                         .n_cols = m->n_cols,
                         .key_cols = m->key_cols,
                         .n_key = m->n_key,
                         .index_granularity = m->granularity,
                         .input_sorted = true};
    tp_writer *w = NULL;
    void *buf = NULL;
    size_t len = 0;
    int rc = tp_writer_create(&w, &wo, err, errlen);
    if (rc == 0) {
        tm_merge_opts mo = {.inputs = in,
                            .n_inputs = u->g0,
                            .replacing = true,
                            .version_col = s->snap->schema.version_col,
                            .out = w};
        rc = tm_merge(&mo, NULL, err, errlen);
    }
    if (rc == 0)
        rc = tp_writer_finish(w, NULL, &buf, &len, err, errlen);
    tp_writer_destroy(&w);
    free(in);
    if (rc == -EINVAL && strstr(err, "zero rows"))
        rc = 0, err[0] = 0;
    if (rc < 0 || !buf) {
        free(buf);
        return rc;
    }
    if (!em_account(s->env.mem, (int64_t)len)) {
        free(buf);
        em_error(s->env.mem, err, errlen);
        return -ENOMEM;
    }
    rs_source *src = NULL;
    tp_reader *rd = NULL;
    rc = tp_mem_source_create(&src, buf, len, s->parts[u->part].p->partition);
    if (rc == 0)
        rc = tp_reader_open(&rd, src, "FINAL", err, errlen);
    cb_batch *bt = NULL;
    const tpart *tp = &s->parts[u->part];
    uint32_t g = rc == 0 ? tp_reader_meta(rd)->granules : 0;
    for (uint32_t g0 = 0; rc == 0 && g0 < g && !atomic_load(s->env.stop); g0 += UNIT_GRANULES) {
        uint32_t g1 = g0 + UNIT_GRANULES < g ? g0 + UNIT_GRANULES : g;
        rc = tp_reader_read(rd, tp->colmap, (uint32_t)s->plan->n_need, g0, g1, &bt, err, errlen);
        if (rc == 0)
            rc = src__scan_batch(&s->env, bt, fn, arg, err, errlen);
        cb_batch_destroy(&bt);
    }
    tp_reader_destroy(&rd);
    rs_destroy(&src);
    free(buf);
    em_account(s->env.mem, -(int64_t)len);
    return rc;
}

static int table_read(eng_source *b, eng_reader *r, int ui, eng_scan_fn fn, void *arg, char *err,
                      size_t errlen)
{
    (void)r;
    src_table *s = (src_table *)b;
    const tunit *u = &s->units[ui];
    int rc;
    if (s->final && s->replacing) {
        rc = read_final(s, u, fn, arg, err, errlen);
    } else {
        /* blocks of about BATCH_ROWS rows, so a worker holds little at a time */
        const tpart *tp = &s->parts[u->part];
        uint32_t gran = tp_reader_meta(tp->rd)->granularity;
        uint32_t step = gran >= BATCH_ROWS ? 1 : BATCH_ROWS / gran;
        rc = 0;
        ef_blob *blob = NULL;
        ef_take(s->pf, ui, &blob);
        const rs_range *pre = blob && blob->rc == 0 ? blob->ranges : NULL;
        size_t n_pre = pre ? blob->n : 0;
        for (uint32_t g = u->g0; rc == 0 && g < u->g1 && !atomic_load(s->env.stop); g += step) {
            uint32_t e = g + step < u->g1 ? g + step : u->g1;
            cb_batch *bt = NULL;
            rc = tp_reader_read_from(tp->rd, tp->colmap, (uint32_t)s->plan->n_need, g, e, pre,
                                     n_pre, &bt, err, errlen);
            if (rc == 0)
                rc = src__scan_batch(&s->env, bt, fn, arg, err, errlen);
            cb_batch_destroy(&bt);
        }
        ef_release(s->pf, &blob);
    }
    if (rc == 0)
        atomic_fetch_add(&s->env.stats->units_read, 1);
    if (rc < 0 && !err[0])
        snprintf(err, errlen, "reading table %s.%s: %s", s->db, s->name, strerror(-rc));
    return rc;
}

/* A worker needs no state of its own: units read through the shared,
 * immutable part readers. */
static int table_reader_create(eng_source *b, eng_reader **out)
{
    (void)b;
    *out = NULL;
    return 0;
}

static void table_reader_destroy(eng_source *b, eng_reader *r)
{
    (void)b;
    (void)r;
}

/* ---- reading ahead ------------------------------------------------------------------ */

static uint64_t pf_budget(const src_table *s)
{
    uint64_t t = (uint64_t)s->env.set->max_download_threads,
             b = s->env.set->max_download_buffer_size;
    return b && t > UINT64_MAX / b ? UINT64_MAX : t * b;
}

static int64_t pf_size(void *arg, int u, bool allow_span, int *span)
{
    (void)allow_span;
    src_table *s = arg;
    const tunit *un = &s->units[u];
    const tpart *tp = &s->parts[un->part];
    *span = 1;
    rs_range *r = NULL;
    size_t n = 0;
    uint64_t total = 0;
    if (tp_reader_ranges(tp->rd, tp->colmap, (uint32_t)s->plan->n_need, un->g0, un->g1, &r, &n,
                         &total, NULL, 0) < 0)
        return -1;
    free(r);
    return total && total <= pf_budget(s) ? (int64_t)total : -1;
}

static void pf_fetch(void *arg, ef *p, int u, int span, ef_blob *b)
{
    (void)span;
    src_table *s = arg;
    const tunit *un = &s->units[u];
    const tpart *tp = &s->parts[un->part];
    char err[ENG_MSG_MAX];
    uint64_t total = 0;
    b->whole = false;
    b->tag = tp->rd;
    b->rc = tp_reader_ranges(tp->rd, tp->colmap, (uint32_t)s->plan->n_need, un->g0, un->g1,
                             &b->ranges, &b->n, &total, err, sizeof(err));
    if (b->rc < 0)
        return;
    b->buf = ef_buf_get(p, total ? total : 1, &b->cap);
    if (!b->buf) {
        b->rc = -ENOMEM;
        return;
    }
    b->bytes = total;
    uint64_t at = 0;
    for (size_t i = 0; i < b->n; i++) {
        b->ranges[i].buf = b->buf + at;
        at += b->ranges[i].length;
    }
    b->rc = rs_read_ranges(tp->src, b->ranges, b->n, err, sizeof(err));
    if (b->rc < 0) { /* the worker reads it again and reports what it meets */
        ef_buf_put(p, b->buf, b->cap);
        b->buf = NULL;
        b->bytes = 0;
    }
}

static void table_start(eng_source *b)
{
    src_table *s = (src_table *)b;
    static const ef_ops ops = {pf_size, pf_fetch};
    /* FINAL merges whole partitions in memory: nothing to read ahead */
    if ((s->final && s->replacing) || s->n_units <= 1 ||
        ef_create_shelved(&s->pf, &ops, s, s->n_units, s->env.set->max_download_threads,
                          s->env.set->max_download_threads, pf_budget(s), s->env.mem,
                          s->env.shelf) < 0)
        s->pf = NULL; /* no reading ahead: the workers fetch everything */
}

static void table_stop(eng_source *b)
{
    ef_stop(((src_table *)b)->pf);
}

static void table_finish(eng_source *b)
{
    ef_destroy(&((src_table *)b)->pf);
}

static void table_destroy(eng_source *b)
{
    src_table *s = (src_table *)b;
    ef_destroy(&s->pf);
    for (size_t i = 0; i < s->n_parts; i++) {
        if (s->parts[i].ref) {
            tb_part_release(&s->parts[i].ref);
        } else {
            tp_reader_destroy(&s->parts[i].rd);
            rs_destroy(&s->parts[i].src);
        }
        free(s->parts[i].colmap);
    }
    free(s->parts);
    free(s->units);
    if (s->base.type_names)
        for (int i = 0; i < s->base.schema.n; i++)
            free(s->base.type_names[i]);
    free(s->base.type_names);
    if (s->base.default_exprs)
        for (int i = 0; i < s->base.schema.n; i++)
            free(s->base.default_exprs[i]);
    free(s->base.default_exprs);
    eng_schema_free(&s->base.schema);
    keys_free(s);
    tb_snapshot_destroy(&s->snap);
    tb_table_destroy(&s->t);
    eng_fail_deinit(&s->fail);
    free(s);
}

static const eng_source_ops table_ops = {
    .plan = table_plan,
    .reader_create = table_reader_create,
    .reader_destroy = table_reader_destroy,
    .start = table_start,
    .read = table_read,
    .stop = table_stop,
    .finish = table_finish,
    .destroy = table_destroy,
};

int src__table_open(const eng_table_ref *ref, const eng_scan_env *env, eng_source **out, char *err,
                    size_t errlen)
{
    *out = NULL;
    if (!env->wh) {
        snprintf(err, errlen,
                 "line %d, column %d: table %s: no warehouse is configured: pass "
                 "--warehouse s3://bucket/prefix/ (or set RINGCACHE_WAREHOUSE), or "
                 "read files with s3('s3://bucket/glob') or file('path/glob')",
                 ref->line, ref->col, ref->name);
        return -EINVAL;
    }
    src_table *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    s->base.ops = &table_ops;
    s->env = *env;
    eng_fail_init(&s->fail);
    const char *db = ref->db ? ref->db : env->database ? env->database : TB_WH_DEFAULT_DB;
    snprintf(s->db, sizeof(s->db), "%s", db);
    snprintf(s->name, sizeof(s->name), "%s", ref->name);
    tb_wh rw;
    src__wh_read(env, &rw);
    int rc = tb_wh_open(&rw, db, ref->name, false, &s->t, err, errlen);
    if (rc == 0)
        rc = tb_table_snapshot(s->t, &s->snap, err, errlen);
    if (rc < 0)
        goto fail;
    const tb_schema *ts = &s->snap->schema;
    s->replacing = ts->engine && strcmp(ts->engine, "ReplacingMergeTree") == 0;
    s->final = ref->final;
    eng_tdef def;
    char msg[ENG_MSG_MAX];
    if ((rc = eng_tdef_from_schema(ts, &def, msg, sizeof(msg))) < 0) {
        snprintf(err, errlen, "table %s.%s: %s", s->db, s->name, msg);
        goto fail;
    }
    s->base.schema.cols = calloc(ts->n_cols + 1, sizeof(eng_col));
    s->base.type_names = calloc(ts->n_cols + 1, sizeof(char *));
    s->base.default_exprs = calloc(ts->n_cols + 1, sizeof(char *));
    rc = s->base.schema.cols && s->base.type_names && s->base.default_exprs ? 0 : -ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < ts->n_cols; i++) {
        eng_col *c = &s->base.schema.cols[i];
        c->name = strdup(ts->cols[i].name);
        c->virt = eng_tdef_hidden(ts->cols[i].name); /* a key expression's value */
        c->cb = ts->cols[i].info;
        c->t = ex_type_of_column(&ts->cols[i].info, ts->cols[i].nullable);
        if (def.date16 && def.date16[i])
            c->t.bits = 16;
        s->base.type_names[i] = strdup(def.types[i]);
        if (def.defaults && def.defaults[i] &&
            !(s->base.default_exprs[i] = strdup(def.defaults[i])))
            rc = -ENOMEM;
        s->base.schema.n = (int)i + 1;
        if (!c->name || !s->base.type_names[i])
            rc = -ENOMEM;
    }
    if (rc == 0)
        keys_bind(s, &def);
    eng_tdef_free(&def);
    if (rc < 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    s->n_parts = s->snap->n_parts;
    s->parts = calloc(s->n_parts + 1, sizeof(tpart));
    if (!s->parts) {
        rc = -ENOMEM;
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < s->n_parts; i++)
        s->parts[i].p = &s->snap->parts[i];
    s->base.files = s->n_parts;
    *out = &s->base;
    return 0;
fail:
    table_destroy(&s->base);
    return rc;
}
