/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_plan.h: the plan of a SELECT (eng_bind.c): a parsed statement (sql.h)
 * bound against a source's schema.
 *
 * Plan shape (one struct per query, eng_plan):
 *
 *   eng_plan
 *    |- scan       needed source columns, pq_pred[] for pruning
 *    |- where      bx tree over source columns (or NULL)
 *    |- keys[]     bx trees over source columns (GROUP BY)
 *    |- aggs[]     eng_agg: function + bx argument over source columns
 *    |- outs[]     bx trees over the post-aggregation block
 *    |             (columns: keys..., aggs...) or over source columns
 *    |- having     bx over the post-aggregation block
 *    |- order[]    bx over the same block as outs, + direction, nulls
 *    '- limit, offset, prune
 *
 * Thread-safety: a bound plan is read-only while workers run; binding is
 * reentrant (no globals).
 */
#ifndef RINGCACHE_ENG_PLAN_H
#define RINGCACHE_ENG_PLAN_H

#include "eng_expr.h"
#include "parquet.h"
#include "sql.h"

/* ---- aggregates ------------------------------------------------------------ */

typedef enum eng_agg_fn {
    AG_COUNT = 1, AG_SUM, AG_AVG, AG_MIN, AG_MAX, AG_UNIQ, AG_ANY,
} eng_agg_fn;

typedef struct eng_agg {
    eng_agg_fn fn;
    bx *arg;            /* NULL for count() */
    ex_type t;          /* result type */
    sql_node *node;     /* the AST it came from (for dedup) */
} eng_agg;

/* ---- plan ------------------------------------------------------------------ */


typedef struct eng_out {
    bx *e;
    char *name;
} eng_out;

typedef struct eng_order {
    bx *e;
    bool desc;
    bool nulls_first;
} eng_order;

typedef struct eng_prune {
    int col;             /* schema column */
    pq_op op;
    pq_value v;
    char *s;             /* owned bytes for strings */
} eng_prune;

typedef struct eng_settings {
    int max_threads;
    int max_download_threads;
    uint64_t max_download_buffer_size;
    int64_t max_memory_usage;
    bool join_use_nulls;     /* 0 (ClickHouse's default): a missing side's columns
                                hold their type's default, not NULL */
} eng_settings;

typedef struct eng_plan {
    const eng_schema *schema;
    int *need;           /* scan slot k reads schema column need[k] */
    int n_need;
    bx *where;           /* over scan slots; NULL: none */
    bool aggregate;
    bx **keys;           /* over scan slots */
    int n_keys;
    eng_agg *aggs;
    int n_aggs;
    eng_out *outs;       /* over the post block (keys..., aggs...) or scan slots */
    int n_outs;
    bx *having;          /* over the post block */
    eng_order *order;
    int n_order;
    bool has_limit;
    int64_t limit, offset;
    eng_prune *prune;
    int n_prune;
} eng_plan;

/* Binds a SELECT against a schema. 0, or -EINVAL with "line L, column C: ..."
 * (unknown column with a suggestion, wrong types, a column outside GROUP BY).
 * The plan borrows stmt and schema. */
int eng_bind(eng_mem *m, const sql_stmt *stmt, const eng_schema *schema, eng_plan *plan,
             char *err, size_t errlen);
/* How the binder runs a subquery ((SELECT ...) as a value, IN (SELECT ...)):
 * the executor's hook. It runs sub and gives its first column in *col (rows
 * rows, the caller clears it on the binder's tracker) and the number of its
 * columns in *n_cols. 0 or -errno with a sentence in err. */
typedef int (*eng_subquery_fn)(void *arg, const sql_stmt *sub, ex_vec *col, uint32_t *rows,
                               int *n_cols, char *err, size_t errlen);
typedef struct eng_bind_env {
    eng_subquery_fn subquery;
    void *arg;
} eng_bind_env;
/* eng_bind with subqueries run through env (NULL: a subquery is an error). */
int eng_bind_env_run(eng_mem *m, const sql_stmt *stmt, const eng_schema *schema,
                     const eng_bind_env *env, eng_plan *plan, char *err, size_t errlen);
void eng_plan_free(eng_mem *m, eng_plan *plan);
/* Applies SETTINGS (known names only, with suggestions) on top of s. */
int eng_settings_apply(const sql_stmt *stmt, eng_settings *s, char *err, size_t errlen);
/* Parses a ClickHouse type name ("Nullable(Int32)", "DateTime64(3)", ...). */
int eng_parse_type(const char *name, ex_type *out);


#endif /* RINGCACHE_ENG_PLAN_H */
