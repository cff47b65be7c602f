/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_compose.c: queries whose rows come from other queries. A subquery in
 * FROM, a WITH name AS (SELECT ...) that FROM names, the branches of UNION
 * ALL, the right side of a JOIN and the list of IN (SELECT ...) are each run
 * as a query of their own whose sink keeps its result in memory (a mem
 * table, charged to the outer query's max_memory_usage); the outer query then
 * reads that table through a source like any other (units of 65536 rows, on
 * its workers). A WITH query is run once per statement however often it is
 * named; ClickHouse's WITH expr AS name is the binder's (a name for an
 * expression).
 *
 *   outer query --FROM (SELECT ..)--> eng__materialize --child query--> mem sink
 *        ^                                                                |
 *        '------------ mem source (units of rows) <---- eng_memtab <------'
 */
#include "exec_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MEM_UNIT_ROWS 65536u

void eng__memtab_free(eng_mem *m, eng_memtab *t)
{
    if (!t)
        return;
    rtab_free(m, &t->rows);
    for (int k = 0; k < t->n_names; k++)
        free(t->names[k]);
    free(t->names);
    memset(t, 0, sizeof(*t));
}

/* ---- the sink that keeps a result ---------------------------------------------- */

typedef struct mem_sink {
    eng_sink base;
    eng_mem *mem;
    eng_memtab *into;
} mem_sink;

static int ms_begin(eng_sink *s, const char *const *names, const ex_type *types, int n_cols,
                    char *err, size_t errlen)
{
    mem_sink *m = (mem_sink *)s;
    eng_memtab *t = m->into;
    t->names = calloc((size_t)n_cols + 1, sizeof(char *));
    if (!t->names || rtab_init(m->mem, &t->rows, types, n_cols) < 0)
        goto oom;
    t->n_names = n_cols;
    for (int k = 0; k < n_cols; k++)
        if (!(t->names[k] = strdup(names[k])))
            goto oom;
    return 0;
oom:
    return em_oom(m->mem, err, errlen);
}

static int ms_write(eng_sink *s, const eng_block *b, char *err, size_t errlen)
{
    mem_sink *m = (mem_sink *)s;
    if (rtab_append(m->mem, &m->into->rows, b->cols, b->n_rows) < 0)
        return em_oom(m->mem, err, errlen);
    return 0;
}

static int ms_end(eng_sink *s, char *err, size_t errlen)
{
    (void)s;
    (void)err;
    (void)errlen;
    return 0;
}

static void ms_destroy(eng_sink *s)
{
    free(s);
}

static const eng_sink_ops ms_ops = {ms_begin, ms_write, ms_end, ms_destroy};

/* ---- the source that reads one ------------------------------------------------- */

typedef struct mem_source {
    eng_source base;
    const eng_memtab *t;
    eng_memtab own; /* when the source owns its table */
    bool owns;
    eng_mem *mem; /* own's tracker */
    eng_scan_stats *stats;
    const eng_plan *plan;
    _Atomic int *stop;
} mem_source;

static int mem_plan(eng_source *s, const eng_plan *p, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    mem_source *m = (mem_source *)s;
    m->plan = p;
    uint32_t n = m->t->rows.n;
    return (int)((n + MEM_UNIT_ROWS - 1) / MEM_UNIT_ROWS);
}

static int mem_reader_create(eng_source *s, eng_reader **out)
{
    (void)s;
    *out = NULL;
    return 0;
}

static void mem_reader_destroy(eng_source *s, eng_reader *r)
{
    (void)s;
    (void)r;
}

static void mem_nop(eng_source *s)
{
    (void)s;
}

static int mem_read(eng_source *s, eng_reader *r, int u, eng_scan_fn fn, void *arg, char *err,
                    size_t errlen)
{
    (void)r;
    (void)err;
    (void)errlen;
    mem_source *m = (mem_source *)s;
    const eng_plan *p = m->plan;
    uint32_t off = (uint32_t)u * MEM_UNIT_ROWS, n = m->t->rows.n - off;
    if (n > MEM_UNIT_ROWS)
        n = MEM_UNIT_ROWS;
    ex_vec *cols = calloc((size_t)p->n_need + 1, sizeof(ex_vec));
    if (!cols)
        return -ENOMEM;
    for (int k = 0; k < p->n_need; k++)
        ex_vec_view(&m->t->rows.c[p->need[k]], off, n, &cols[k]);
    atomic_fetch_add_explicit(&m->stats->rows_read, n, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->stats->units_read, 1, memory_order_relaxed);
    int rc = n ? fn(arg, cols, n) : 0;
    free(cols);
    return rc;
}

static void mem_destroy(eng_source *s)
{
    mem_source *m = (mem_source *)s;
    if (m->owns)
        eng__memtab_free(m->mem, &m->own);
    eng_schema_free(&m->base.schema);
    free(m);
}

static const eng_source_ops mem_ops = {mem_plan, mem_reader_create, mem_reader_destroy,
                                       mem_nop,  mem_read,          mem_nop,
                                       mem_nop,  mem_destroy,       NULL};

/* A source over t: borrowed (t outlives it) or, with take, moved into it. */
static int mem_source_open(equery *q, eng_memtab *t, bool take, eng_source **out, char *err,
                           size_t errlen)
{
    mem_source *m = calloc(1, sizeof(*m));
    if (!m || !(m->base.schema.cols = calloc((size_t)t->n_names + 1, sizeof(eng_col)))) {
        free(m);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    m->base.ops = &mem_ops;
    m->mem = &q->mem;
    m->stats = &q->stats;
    m->stop = &q->stop;
    for (int k = 0; k < t->n_names; k++) {
        m->base.schema.cols[k].name = strdup(t->names[k]);
        m->base.schema.cols[k].t = t->rows.c[k].t;
        m->base.schema.n = k + 1;
        if (!m->base.schema.cols[k].name) {
            mem_destroy(&m->base);
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
    }
    if (take) {
        m->own = *t;
        memset(t, 0, sizeof(*t));
        m->owns = true;
        m->t = &m->own;
    } else {
        m->t = t;
    }
    *out = &m->base;
    return 0;
}

/* ---- running a query into memory ---------------------------------------------- */

/* ClickHouse's common type of a UNION ALL column: the same kind (widest
 * bits, Nullable when one is), integers and floats to Float64, signed and
 * unsigned to Int64, NULL to the other. false: none. */
static bool union_type(ex_type a, ex_type b, ex_type *out)
{
    if (a.kind == EX_NOTHING || b.kind == EX_NOTHING) {
        *out = a.kind == EX_NOTHING ? b : a;
        out->nullable = true;
        return true;
    }
    bool nul = a.nullable || b.nullable;
    if (a.kind == b.kind) {
        *out = a;
        if (b.bits > a.bits)
            out->bits = b.bits;
        if (b.scale > a.scale)
            out->scale = b.scale;
        out->nullable = nul;
        return true;
    }
    if (ex_is_num(a.kind) && ex_is_num(b.kind)) {
        if (a.kind == EX_FLOAT || b.kind == EX_FLOAT)
            *out = (ex_type){.kind = EX_FLOAT, .bits = 64};
        else
            *out = (ex_type){.kind = EX_INT, .bits = 64};
        out->nullable = nul;
        return true;
    }
    if ((a.kind == EX_DATE && b.kind == EX_DATETIME) ||
        (a.kind == EX_DATETIME && b.kind == EX_DATE)) {
        return false; /* stored differently; CAST one side */
    }
    return false;
}

equery *eng__query_child(equery *q)
{
    equery *c = eng__query_create(q->ctx);
    if (!c)
        return NULL;
    c->set = q->set;
    c->mem.limit = q->mem.limit;
    c->scope_up = q->scope_here ? q->scope_here : q->scope_up;
    c->depth = q->depth + 1;
    return c;
}

/* The child query of q that runs one SELECT (no UNION) into t, on tracker m. */
static int run_branch(equery *q, const sql_stmt *st, eng_mem *m, eng_memtab *t, char *err,
                      size_t errlen)
{
    equery *c = eng__query_child(q);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int rc = 0;
    if (c->depth > 64) {
        snprintf(err, errlen, "line %d, column %d: subqueries nested more than 64 deep", st->line,
                 st->col);
        rc = -EINVAL;
    }
    c->stage = ENG_STAGE_SETTINGS;
    if (rc == 0)
        rc = eng_settings_apply(st, &c->set, err, errlen);
    if (rc == 0) {
        c->mem.limit = c->set.max_memory_usage;
        mem_sink *ms = calloc(1, sizeof(*ms));
        if (!ms) {
            snprintf(err, errlen, "out of memory");
            rc = -ENOMEM;
        } else {
            ms->base.ops = &ms_ops;
            ms->mem = m;
            ms->into = t;
            c->given_sink = &ms->base;
        }
    }
    if (rc == 0)
        c->stage = ENG_STAGE_SOURCE;
    if (rc == 0 && eng__has_window(st)) {
        rc = eng__run_window(c, st, ENG_FMT_NULL, err, errlen);
    } else {
        if (rc == 0)
            rc = eng__stmt_source(c, st, err, errlen);
        if (rc == 0) {
            c->stage = ENG_STAGE_BIND;
            rc = eng__run_select(c, st, ENG_FMT_NULL, err, errlen);
        }
    }
    if (rc == 0 && !t->names) {
        /* the child ended without beginning its sink: no rows and no columns */
        snprintf(err, errlen, "line %d, column %d: the subquery gave no columns", st->line,
                 st->col);
        rc = -EINVAL;
    }
    atomic_fetch_add(&q->stats.rows_read, atomic_load(&c->stats.rows_read));
    atomic_fetch_add(&q->stats.bytes_read, atomic_load(&c->stats.bytes_read));
    atomic_fetch_add(&q->stats.units_read, atomic_load(&c->stats.units_read));
    atomic_fetch_add(&q->stats.units_pruned, atomic_load(&c->stats.units_pruned));
    int64_t pk = atomic_load(&c->mem.peak);
    if (pk > atomic_load(&q->child_peak))
        atomic_store(&q->child_peak, pk);
    if (rc < 0)
        q->stage = c->stage; /* the failure is the subquery's (eng_error_classify) */
    eng__query_free(c);
    return rc;
}

int eng__materialize(equery *q, const sql_stmt *st, eng_mem *m, eng_memtab *out, char *err,
                     size_t errlen)
{
    memset(out, 0, sizeof(*out));
    int rc = run_branch(q, st, m, out, err, errlen);
    for (const sql_stmt *b = st->union_all; rc == 0 && b; b = b->union_all) {
        eng_memtab bt;
        memset(&bt, 0, sizeof(bt));
        rc = run_branch(q, b, m, &bt, err, errlen);
        if (rc == 0 && bt.n_names != out->n_names) {
            snprintf(err, errlen,
                     "line %d, column %d: the SELECTs of UNION ALL must have as many columns: "
                     "this one has %d, the first %d",
                     b->line, b->col, bt.n_names, out->n_names);
            rc = -EINVAL;
        }
        ex_type *ty = rc == 0 ? calloc((size_t)out->n_names + 1, sizeof(ex_type)) : NULL;
        if (rc == 0 && !ty) {
            snprintf(err, errlen, "out of memory");
            rc = -ENOMEM;
        }
        bool same = true;
        for (int k = 0; rc == 0 && k < out->n_names; k++) {
            ex_type a = out->rows.c[k].t, bb = bt.rows.c[k].t;
            if (!union_type(a, bb, &ty[k])) {
                char n1[64], n2[64];
                ex_type_name(&a, n1, sizeof(n1));
                ex_type_name(&bb, n2, sizeof(n2));
                snprintf(err, errlen,
                         "line %d, column %d: column %d of UNION ALL is %s in the first SELECT "
                         "and %s here, which have no common type: CAST one of them",
                         b->line, b->col, k + 1, n1, n2);
                rc = -EINVAL;
            }
            same &= memcmp(&ty[k], &a, sizeof(a)) == 0;
        }
        if (rc == 0 && !same) {
            /* convert what came so far to the common types */
            rtab nt;
            if (rtab_init(m, &nt, ty, out->n_names) < 0 || rtab_reserve(m, &nt, out->rows.n) < 0)
                rc = -ENOMEM;
            for (uint32_t r = 0; rc == 0 && r < out->rows.n; r++) {
                for (int k = 0; k < out->n_names && rc == 0; k++)
                    rc = rtab_put(m, &nt, k, &out->rows.c[k], r);
                nt.n++;
            }
            if (rc == 0) {
                rtab_free(m, &out->rows);
                out->rows = nt;
            } else {
                rtab_free(m, &nt);
            }
        }
        if (rc == 0 && rtab_append(m, &out->rows, bt.rows.c, bt.rows.n) < 0)
            rc = -ENOMEM;
        if (rc == -ENOMEM)
            em_oom(m, err, errlen);
        free(ty);
        eng__memtab_free(m, &bt);
    }
    if (rc < 0)
        eng__memtab_free(m, out);
    return rc;
}

/* ---- WITH name AS (SELECT ...) ------------------------------------------------- */

int eng__scope_init(equery *q, const sql_stmt *st)
{
    if (st->n_with == 0)
        return 0;
    /* a UNION ALL's first branch (or a window statement's inner query)
     * carries the WITH of the statement whose scope is already up: its
     * queries run once, there */
    for (const eng_scope *u = q->scope_up; u; u = u->up)
        if (u->st->with == st->with)
            return 0;
    eng_scope *s = calloc(1, sizeof(*s));
    if (!s || !(s->tabs = calloc((size_t)st->n_with, sizeof(eng_memtab))) ||
        !(s->done = calloc((size_t)st->n_with, sizeof(bool)))) {
        if (s)
            free(s->tabs);
        free(s);
        return -ENOMEM;
    }
    s->st = st;
    s->up = q->scope_up;
    s->mem = &q->mem;
    q->scope_here = s;
    return 0;
}

void eng__scope_free(equery *q)
{
    eng_scope *s = q->scope_here;
    if (!s)
        return;
    for (int i = 0; i < s->st->n_with; i++)
        eng__memtab_free(s->mem, &s->tabs[i]);
    free(s->tabs);
    free(s->done);
    free(s);
    q->scope_here = NULL;
}

/* The WITH query FROM's name means, run once (in the scope that defines it),
 * or NULL (*rc 0: the name is not a WITH query). */
static eng_memtab *scope_find(equery *q, const char *name, int *rc, char *err, size_t errlen)
{
    *rc = 0;
    for (eng_scope *s = q->scope_here ? q->scope_here : q->scope_up; s; s = s->up) {
        for (int i = 0; i < s->st->n_with; i++) {
            const sql_with *w = &s->st->with[i];
            if (!w->sub || strcmp(w->name, name) != 0)
                continue;
            if (s->busy & (1ull << (i & 63))) {
                snprintf(err, errlen,
                         "line %d, column %d: WITH %s refers to itself, which is "
                         "not supported (recursive WITH)",
                         w->line, w->col, name);
                *rc = -EINVAL;
                return NULL;
            }
            if (!s->done[i]) {
                /* its own query sees the WITH names before it */
                s->busy |= 1ull << (i & 63);
                *rc = eng__materialize(q, w->sub, s->mem, &s->tabs[i], err, errlen);
                s->busy &= ~(1ull << (i & 63));
                if (*rc < 0)
                    return NULL;
                s->done[i] = true;
            }
            return &s->tabs[i];
        }
    }
    return NULL;
}

/* ---- FROM of a composed query ------------------------------------------------- */

int eng__compose_source(equery *q, const sql_stmt *st, bool *done, char *err, size_t errlen)
{
    *done = true;
    if (st->from_sub) {
        eng_memtab t;
        int rc = eng__materialize(q, st->from_sub, &q->mem, &t, err, errlen);
        if (rc < 0)
            return rc;
        rc = mem_source_open(q, &t, true, &q->src, err, errlen);
        if (rc < 0)
            eng__memtab_free(&q->mem, &t);
        return rc;
    }
    if (!st->from_fn && st->table && !st->table_db) {
        int rc;
        eng_memtab *t = scope_find(q, st->table, &rc, err, errlen);
        if (rc < 0)
            return rc;
        if (t)
            return mem_source_open(q, t, false, &q->src, err, errlen);
    }
    *done = false;
    return 0;
}

/* The binder's hook: a subquery's first column. */
int eng__subquery_hook(void *arg, const sql_stmt *sub, ex_vec *col, uint32_t *rows, int *n_cols,
                       char *err, size_t errlen)
{
    equery *q = arg;
    eng_memtab t;
    int rc = eng__materialize(q, sub, &q->mem, &t, err, errlen);
    if (rc < 0)
        return rc;
    *n_cols = t.n_names;
    *rows = t.rows.n;
    memset(col, 0, sizeof(*col));
    if (t.n_names > 0) {
        *col = t.rows.c[0];
        col->n = t.rows.n;
        memset(&t.rows.c[0], 0, sizeof(ex_vec));
    }
    eng__memtab_free(&q->mem, &t);
    return 0;
}

/* A SELECT ... UNION ALL SELECT ... at the top: the branches' rows, in turn,
 * to the statement's sink. */
int eng__run_union(equery *q, const sql_stmt *st, eng_format fmt, char *err, size_t errlen)
{
    eng_memtab t;
    int rc = eng__materialize(q, st, &q->mem, &t, err, errlen);
    if (rc < 0)
        return rc;
    ex_type *ty = calloc((size_t)t.n_names + 1, sizeof(ex_type));
    if (!ty) {
        eng__memtab_free(&q->mem, &t);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (int k = 0; k < t.n_names; k++)
        ty[k] = t.rows.c[k].t;
    q->rtypes = ty;
    rc = eng__stmt_output(q, fmt, (const char *const *)t.names, ty, t.n_names, err, errlen);
    if (rc == 0)
        rc = eng__out_table(&q->out, &t.rows, err, errlen);
    if (rc == 0) {
        eng_sink_stats ss = {eng__now_s() - q->t0, atomic_load(&q->stats.rows_read),
                             atomic_load(&q->stats.bytes_read)};
        rc = eng__out_end(&q->out, &ss, err, errlen);
    }
    /* the output keeps pointers to the names until the query is freed */
    q->keep = t;
    return rc;
}
