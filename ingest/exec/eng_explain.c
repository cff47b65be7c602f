/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_explain.c: EXPLAIN [PLAN] and EXPLAIN SYNTAX. EXPLAIN SYNTAX prints
 * the statement as the parser understood it (sql_stmt_text: every clause on
 * its own line, expressions in full parentheses), which runs again as the
 * same query. EXPLAIN prints the plan's stages from the output down to the
 * sources, one per line, as ClickHouse's does: the projection, LIMIT,
 * sorting, HAVING, aggregation, WHERE, each join with the size of its right
 * side, and the source with its files, the work units left after pruning
 * by WHERE, the units pruned, the columns read and the threads. To know
 * what pruning leaves, the sources are opened and planned (files listed,
 * Parquet footers read) and the queries a plan reads from (subqueries in
 * FROM, WITH, a join's right side) are run into memory; nothing else is
 * read.
 */
#include "exec_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct xlines {
    char **v;
    int n, cap;
    bool oom;
} xlines;

static void xadd(xlines *x, int indent, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void xadd(xlines *x, int indent, const char *fmt, ...)
{
    if (x->oom)
        return;
    if (x->n == x->cap) {
        int cap = x->cap ? x->cap * 2 : 16;
        char **v = realloc(x->v, sizeof(char *) * (size_t)cap);
        if (!v) {
            x->oom = true;
            return;
        }
        x->v = v;
        x->cap = cap;
    }
    char body[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof(body), fmt, ap);
    va_end(ap);
    size_t n = (size_t)indent * 2 + strlen(body) + 1;
    char *line = malloc(n);
    if (!line) {
        x->oom = true;
        return;
    }
    memset(line, ' ', (size_t)indent * 2);
    memcpy(line + (size_t)indent * 2, body, strlen(body) + 1);
    x->v[x->n++] = line;
}

static void xfree(xlines *x)
{
    for (int i = 0; i < x->n; i++)
        free(x->v[i]);
    free(x->v);
}

/* Names of a list of expressions, comma-separated, into buf. */
static void names_of(sql_node *const *e, int n, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < n && o + 4 < cap; i++) {
        if (i)
            o += (size_t)snprintf(buf + o, cap - o, ", ");
        if (o < cap)
            o += sql_node_name(e[i], buf + o, cap - o);
        if (o >= cap)
            o = cap - 1;
    }
}

static const char *join_kind(sql_join_kind k)
{
    switch (k) {
    case SQL_JOIN_INNER: return "INNER";
    case SQL_JOIN_LEFT: return "LEFT";
    case SQL_JOIN_RIGHT: return "RIGHT";
    case SQL_JOIN_FULL: return "FULL";
    case SQL_JOIN_CROSS: return "CROSS";
    }
    return "?";
}

/* The base source of a FROM, as written. */
static void from_name(const sql_stmt *st, char *buf, size_t cap)
{
    if (st->from_sub) {
        snprintf(buf, cap, "a subquery%s%s (run first, into memory)", st->from_alias ? " AS " : "",
                 st->from_alias ? st->from_alias : "");
    } else if (st->from_fn) {
        /* the first argument only: the others may hold credentials */
        char args[1024] = "";
        if (st->n_from_args)
            sql_node_name(st->from_args[0], args, sizeof(args));
        snprintf(buf, cap, "%s(%s%s)", st->from_fn, args, st->n_from_args > 1 ? ", ..." : "");
    } else if (st->table) {
        snprintf(buf, cap, "%s%s%s%s", st->table_db ? st->table_db : "", st->table_db ? "." : "",
                 st->table, st->final ? " FINAL" : "");
    } else {
        snprintf(buf, cap, "nothing");
    }
}

static int explain_stmt(equery *q, const sql_stmt *st, xlines *x, int ind, char *err,
                        size_t errlen);

/* One SELECT of q's (q opens its source). */
static int explain_one(equery *q, const sql_stmt *st, xlines *x, int ind, char *err, size_t errlen)
{
    bool win = eng__has_window(st);
    int rc = eng__stmt_source(q, st, err, errlen);
    if (rc < 0)
        return rc;
    const eng_plan *p = &q->plan;
    int units = 0;
    if (win) {
        int nw = 0;
        char fns[1024] = "";
        size_t o = 0;
        for (int i = 0; i < st->n_items; i++)
            if (st->items[i].expr->kind == SQL_FUNC && st->items[i].expr->win) {
                if (nw++ && o + 2 < sizeof(fns))
                    o += (size_t)snprintf(fns + o, sizeof(fns) - o, ", ");
                if (o < sizeof(fns))
                    o += sql_node_name(st->items[i].expr, fns + o, sizeof(fns) - o);
                if (o >= sizeof(fns))
                    o = sizeof(fns) - 1;
            }
        if (st->has_limit)
            xadd(x, ind++, "Limit (%lld, offset %lld)", (long long)st->limit,
                 (long long)st->offset);
        if (st->n_order_by)
            xadd(x, ind++, "Sorting (ORDER BY of the statement, after the windows)");
        xadd(x, ind++,
             "Window (%d function%s: %s; each sorts the rows by its PARTITION BY and "
             "ORDER BY and walks its partitions)",
             nw, nw == 1 ? "" : "s", fns);
        xadd(x, ind++, "Materialize (the rows with the windows' arguments and keys, in memory)");
        if (st->n_group_by || st->having)
            xadd(x, ind++, "Aggregating (GROUP BY / HAVING as below a plain SELECT)");
        if (st->where) {
            char w[1024];
            sql_node_name(st->where, w, sizeof(w));
            xadd(x, ind++, "Filter (WHERE %s)", w);
        }
    } else {
        eng_bind_env benv = {q->ctx->database, q->ctx->user, q->start_ms, eng__subquery_hook, q};
        eng_stage at = q->stage;
        q->stage = ENG_STAGE_BIND;
        rc = eng_bind_ex(&q->mem, st, &q->src->schema, &benv, &q->plan, err, errlen);
        if (rc < 0)
            return rc;
        q->stage = at;
        rc = q->src->ops->plan(q->src, p, err, errlen);
        if (rc < 0)
            return rc;
        units = rc;
        char buf[1024];
        size_t o = 0;
        buf[0] = 0;
        for (int k = 0; k < p->n_outs && o + 4 < sizeof(buf); k++)
            o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s", k ? ", " : "", p->outs[k].name);
        xadd(x, ind++, "Expression (SELECT %s)", buf);
        if (p->has_limit)
            xadd(x, ind++, "Limit (%lld, offset %lld%s)", (long long)p->limit, (long long)p->offset,
                 p->n_order ? "" : "; the workers stop once enough rows came");
        if (p->n_order) {
            o = 0;
            buf[0] = 0;
            for (int k = 0; k < st->n_order_by && o + 4 < sizeof(buf); k++) {
                if (k)
                    o += (size_t)snprintf(buf + o, sizeof(buf) - o, ", ");
                if (o < sizeof(buf))
                    o += sql_node_name(st->order_by[k].expr, buf + o, sizeof(buf) - o);
                if (o >= sizeof(buf))
                    o = sizeof(buf) - 1;
                o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s",
                                      st->order_by[k].desc ? " DESC" : "");
                if (o >= sizeof(buf))
                    o = sizeof(buf) - 1;
            }
            xadd(x, ind++, "Sorting (ORDER BY %s%s)", buf,
                 p->has_limit ? "; each worker keeps its top rows in a heap, merged" : "");
        }
        if (st->having) {
            sql_node_name(st->having, buf, sizeof(buf));
            xadd(x, ind++, "Filter (HAVING %s)", buf);
        }
        if (p->aggregate) {
            names_of(st->group_by, st->n_group_by, buf, sizeof(buf));
            char ag[1024];
            o = 0;
            ag[0] = 0;
            for (int k = 0; k < p->n_aggs && o + 4 < sizeof(ag); k++) {
                if (k)
                    o += (size_t)snprintf(ag + o, sizeof(ag) - o, ", ");
                if (o < sizeof(ag))
                    o += sql_node_name(p->aggs[k].node, ag + o, sizeof(ag) - o);
                if (o >= sizeof(ag))
                    o = sizeof(ag) - 1;
            }
            if (st->n_group_by)
                xadd(x, ind++, "Aggregating (GROUP BY %s: %s; a hash table per worker, merged)",
                     buf, ag);
            else
                xadd(x, ind++, "Aggregating (%s: one row; a partial state per worker, merged)", ag);
        }
        if (st->where) {
            sql_node_name(st->where, buf, sizeof(buf));
            xadd(x, ind++, "Filter (WHERE %s; %d prunable condition%s on the source's statistics)",
                 buf, p->n_prune, p->n_prune == 1 ? "" : "s");
        }
    }
    /* the joins, outermost first, then the base source */
    const eng_source *s = q->src;
    eng_join_info ji;
    int jn = st->n_joins;
    while (eng__join_info(s, &ji)) {
        jn--;
        const sql_join *j = &st->joins[jn];
        char rn[1024];
        from_name(j->right, rn, sizeof(rn));
        xadd(x, ind, "Join (%s%s%s, %s join on %d key%s; join_use_nulls = %d)",
             ji.any ? "ANY " : "", join_kind(ji.kind), ji.kind == SQL_JOIN_CROSS ? "" : " JOIN",
             ji.dense ? "direct" : "hash", ji.n_keys, ji.n_keys == 1 ? "" : "s",
             ji.use_nulls ? 1 : 0);
        char cols[1024];
        size_t cl = 0;
        cols[0] = 0;
        for (int c = 0; c < ji.n_right && cl + 1 < sizeof(cols); c++) {
            int w =
                snprintf(cols + cl, sizeof(cols) - cl, "%s%s", c ? ", " : "", ji.right_names[c]);
            cl = w < 0 ? sizeof(cols) : cl + (size_t)w;
        }
        char how[128];
        if (ji.dense)
            snprintf(how, sizeof(how),
                     "indexed by its key, whose values span %" PRId64 "..%" PRId64, ji.dmin,
                     ji.dmax);
        else
            snprintf(how, sizeof(how), "with its hash table");
        xadd(x, ind + 1,
             "Right side: %s%s%s: %u rows in memory (columns %s) %s, built before the left side "
             "is read",
             rn, j->right->from_alias && !j->right->from_sub ? " AS " : "",
             j->right->from_alias && !j->right->from_sub ? j->right->from_alias : "", ji.right_rows,
             cols, how);
        if (ji.kind == SQL_JOIN_RIGHT || ji.kind == SQL_JOIN_FULL)
            xadd(x, ind + 1, "Then: the right rows nothing matched, after every left unit");
        xadd(x, ind + 1, "Left side (probed in parallel, %d units):", ji.left_units);
        ind += 2;
        s = ji.left;
    }
    char fn[1200];
    from_name(st, fn, sizeof(fn));
    char cols[1024] = "";
    if (!win && st->n_joins == 0) {
        size_t o = 0;
        for (int k = 0; k < p->n_need && o + 4 < sizeof(cols); k++)
            o += (size_t)snprintf(cols + o, sizeof(cols) - o, "%s%s", k ? ", " : "",
                                  s->schema.cols[p->need[k]].name);
    }
    if (win) {
        xadd(x, ind, "ReadFrom %s: %llu file%s", fn, (unsigned long long)s->files,
             s->files == 1 ? "" : "s");
    } else {
        xadd(x, ind,
             "ReadFrom %s: %llu file%s; %d unit%s to read (Parquet row groups, text "
             "files, granules or blocks of rows), %llu pruned by WHERE%s%s",
             fn, (unsigned long long)s->files, s->files == 1 ? "" : "s", units,
             units == 1 ? "" : "s", (unsigned long long)atomic_load(&q->stats.units_pruned),
             cols[0] ? "; columns " : "", cols);
        int workers = q->set.max_threads < units ? q->set.max_threads : units;
        xadd(x, ind,
             "Threads: max_threads = %d, %d worker%s over the units; "
             "max_download_threads = %d",
             q->set.max_threads, workers, workers == 1 ? "" : "s", q->set.max_download_threads);
    }
    return 0;
}

static int explain_stmt(equery *q, const sql_stmt *st, xlines *x, int ind, char *err, size_t errlen)
{
    if (!st->union_all)
        return explain_one(q, st, x, ind, err, errlen);
    int n = 0;
    for (const sql_stmt *b = st; b; b = b->union_all)
        n++;
    xadd(x, ind, "Union (UNION ALL of %d SELECTs, each run in turn into memory, then sent)", n);
    int rc = 0;
    for (const sql_stmt *b = st; b && rc == 0; b = b->union_all) {
        equery *c = eng__query_child(q);
        if (!c) {
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        rc = explain_one(c, b, x, ind + 1, err, errlen);
        eng__query_free(c);
    }
    return rc;
}

int eng__run_explain(equery *q, const sql_stmt *st, eng_format fmt, char *err, size_t errlen)
{
    xlines x = {0};
    int rc = 0;
    if (st->explain == SQL_EXPLAIN_SYNTAX) {
        char *text;
        rc = sql_stmt_text(st, true, &text);
        if (rc < 0) {
            snprintf(err, errlen, "out of memory");
            return rc;
        }
        rc = 0;
        for (char *line = text, *e; line && *line; line = e ? e + 1 : NULL) {
            e = strchr(line, '\n');
            if (e)
                *e = 0;
            xadd(&x, 0, "%s", line);
        }
        free(text);
    } else {
        if (eng__scope_init(q, st) < 0) {
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        rc = explain_stmt(q, st, &x, 0, err, errlen);
    }
    if (rc == 0 && x.oom) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
    }
    static const char *nm[] = {"explain"};
    if (rc == 0)
        rc = eng__out_strings(q, fmt, nm, 1, (const char *const *)x.v, (uint32_t)x.n, err, errlen);
    xfree(&x);
    return rc;
}
