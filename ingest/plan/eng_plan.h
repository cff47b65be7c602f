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
    AG_COUNT = 1,
    AG_SUM,
    AG_AVG,
    AG_MIN,
    AG_MAX,
    AG_UNIQ,
    AG_ANY,
    AG_ANYLAST,
    AG_QUANTILE,       /* every value kept; linear interpolation at level * (n - 1) */
    AG_QUANTILE_EXACT, /* every value kept; the value at index floor(level * n) */
    AG_VAR_POP,
    AG_VAR_SAMP,
    AG_STDDEV_POP,
    AG_STDDEV_SAMP, /* Welford's moments */
    AG_CORR,        /* arg and arg2: Pearson's coefficient */
    AG_ARGMIN,
    AG_ARGMAX,      /* arg at the least / greatest arg2 */
    AG_GROUPARRAY,  /* the values in the order read (limit: at most that many) */
    AG_GROUPUNIQ,   /* each distinct value once (limit: at most that many) */
    AG_TOPK,        /* the `limit` most frequent values, by exact counts */
} eng_agg_fn;

typedef struct eng_agg {
    eng_agg_fn fn;
    bx *arg;        /* NULL for count() */
    ex_type t;      /* result type */
    sql_node *node; /* the AST it came from (for dedup) */
    bx *arg2;       /* the second argument (corr, argMin, argMax), or NULL */
    bx *cond;       /* the -If combinator's condition, or NULL */
    bool distinct;  /* the -Distinct combinator: each distinct value once */
    double level;   /* quantile's level, 0..1 */
    uint32_t limit; /* groupArray(N), groupUniqArray(N): 0 none; topK(N): N (10 by default) */
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
    bool by_only; /* a LIMIT BY key (after the sort keys): carried, not sorted on */
} eng_order;

typedef struct eng_prune {
    int col; /* schema column */
    pq_op op;
    pq_value v;
    char *s; /* owned bytes for strings */
} eng_prune;

typedef struct eng_settings {
    int max_threads;
    int max_download_threads;
    uint64_t max_download_buffer_size;
    int64_t max_memory_usage;
    /* INSERT ... SELECT over s3Cluster: 0 the initiator inserts what the
     * source reads, 1 or 2 each server of the cluster inserts its units
     * (for cluster table functions ClickHouse runs 1 as 2) */
    int parallel_distributed_insert_select;
    bool skip_unavailable_shards; /* servers down at the start are left out */
    bool join_use_nulls;          /* 0 (ClickHouse's default): a missing side's columns
                                hold their type's default, not NULL */
    /* 1: a table's log is listed before the query reads it, even where the
     * process keeps a state listed a moment ago (tb_wh.reuse_ms) */
    bool select_sequential_consistency;
    /* GROUP BY: collect_hash_table_stats_during_aggregation = 0 (a run
     * neither reads nor keeps its shape's sizes), and
     * max_size_to_preallocate_for_aggregation when given (groups reserved
     * in all the workers' tables; not given: ENG_AGG_PREALLOC_MAX) */
    bool hash_stats_off;
    bool prealloc_given;
    uint64_t prealloc_max;
} eng_settings;

typedef struct eng_plan {
    const eng_schema *schema;
    int *need; /* scan slot k reads schema column need[k] */
    int n_need;
    /* ARRAY JOIN arr / arrayJoin(arr): over scan slots; each row of a block
     * becomes one row per element of arr, the element in slot n_need (after
     * the source's slots), before WHERE. ajoin_left: an empty array keeps its
     * row, with the element type's default. NULL: none. */
    bx *ajoin;
    bool ajoin_left;
    bx *where; /* over scan slots; NULL: none */
    bool aggregate;
    bx **keys; /* over scan slots */
    int n_keys;
    eng_agg *aggs;
    int n_aggs;
    eng_out *outs; /* over the post block (keys..., aggs...) or scan slots */
    int n_outs;
    bx *having; /* over the post block */
    eng_order *order;
    int n_order;
    bool has_limit;
    int64_t limit, offset;
    /* LIMIT BY: the last n_limit_by entries of order[] are its keys; the rows
     * of each key past limit_by_offset + limit_by_n are dropped after ORDER BY.
     * With LIMIT BY, has_limit is false and the LIMIT after it is here. */
    int n_limit_by;
    int64_t limit_by_n, limit_by_offset;
    bool lb_has_limit;
    int64_t lb_limit, lb_offset;
    eng_prune *prune;
    int n_prune;
} eng_plan;

/* The version ClickHouse clients see in version(): they compare major.minor
 * for features, so it names the ClickHouse release whose behaviour the engine
 * follows. */
#define ENG_CLICKHOUSE_VERSION "25.8.1.1"

/* How the binder runs a subquery ((SELECT ...) as a value, IN (SELECT ...)):
 * the executor's hook. It runs sub and gives its first column in *col (rows
 * rows, the caller clears it on the binder's tracker) and the number of its
 * columns in *n_cols. 0 or -errno with a sentence in err. */
typedef int (*eng_subquery_fn)(void *arg, const sql_stmt *sub, ex_vec *col, uint32_t *rows,
                               int *n_cols, char *err, size_t errlen);

/* What the binder takes from the query's context (eng_bind_ex): what its
 * functions answer, and how subqueries run. */
typedef struct eng_bind_env {
    const char *database;     /* currentDatabase(); NULL: "default" */
    const char *user;         /* currentUser(); NULL: "default" */
    int64_t now_ms;           /* now() and today(): the query's start; 0: the clock */
    eng_subquery_fn subquery; /* NULL: a subquery is an error */
    void *arg;                /* subquery's first argument */
} eng_bind_env;

/* Binds a SELECT against a schema. 0, or -EINVAL with "line L, column C: ..."
 * (unknown column with a suggestion, wrong types, a column outside GROUP BY).
 * The plan borrows stmt and schema. */
int eng_bind(eng_mem *m, const sql_stmt *stmt, const eng_schema *schema, eng_plan *plan, char *err,
             size_t errlen);
/* eng_bind with the query's context and subqueries run through env (env may
 * be NULL: the context's defaults, and a subquery is an error). */
int eng_bind_ex(eng_mem *m, const sql_stmt *stmt, const eng_schema *schema, const eng_bind_env *env,
                eng_plan *plan, char *err, size_t errlen);
void eng_plan_free(eng_mem *m, eng_plan *plan);
/* Applies SETTINGS (known names only, with suggestions) on top of s. */
int eng_settings_apply(const sql_stmt *stmt, eng_settings *s, char *err, size_t errlen);
/* Parses a ClickHouse type name ("Nullable(Int32)", "DateTime64(3)", ...). */
int eng_parse_type(const char *name, ex_type *out);

#endif /* RINGCACHE_ENG_PLAN_H */
