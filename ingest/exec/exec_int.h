/* SPDX-License-Identifier: Apache-2.0
 *
 * exec_int.h: internals shared by the executor's files: the running
 * statement (equery), a worker, and the stages' entry points. eng_exec.c
 * drives a statement; eng_worker.c runs the workers over the source's units;
 * eng_result.c orders and cuts result tables; eng_progress.c draws progress
 * and the summary.
 *
 * Thread-safety: an equery is shared by its workers: its counters, stop flag
 * and memory tracker are atomic, its first error is in fail, the rest is
 * set before the workers start and read-only while they run. A worker belongs
 * to its thread.
 */
#ifndef RINGCACHE_EXEC_INT_H
#define RINGCACHE_EXEC_INT_H

#include "eng.h"
#include "eng_agg.h"
#include "eng_plan.h"
#include "eng_source.h"
#include "eng_tdef.h"
#include "rtab.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* The statement's output: its sink, begun with the result's columns when the
 * first rows (or the end) arrive, so a statement that fails before it has
 * rows sends nothing. */
typedef struct eng_output {
    eng_sink *sink;
    const char *const *names;
    const ex_type *types;
    int n_cols;
    bool begun;
    uint64_t rows; /* rows handed to the sink */
} eng_output;

/* A query's result kept in memory (eng_compose.c): a subquery's, a WITH
 * query's, a UNION ALL's, a JOIN's right side. */
typedef struct eng_memtab {
    char **names;
    int n_names;
    rtab rows;
} eng_memtab;

/* The WITH queries of one statement, each run the first time FROM names it;
 * up: the enclosing statement's. */
typedef struct eng_scope {
    const sql_stmt *st;
    eng_memtab *tabs; /* st->n_with; done[i]: tabs[i] holds the rows */
    bool *done;
    uint64_t busy; /* being run (a WITH that names itself) */
    struct eng_scope *up;
    eng_mem *mem; /* the defining query's tracker */
} eng_scope;

/* A GROUP BY's sizes when it last ran (eng_aggstats.c): the largest
 * worker's table's groups, the merged table's (0: not known), its workers. */
typedef struct eng_agg_size {
    uint32_t worker_max;
    uint32_t total;
    uint32_t workers; /* how many workers that run had */
} eng_agg_size;

typedef struct equery {
    const eng_ctx *ctx;
    eng_mem mem;
    eng_settings set;
    eng_source *src;
    eng_plan plan;
    ex_type *rtypes; /* the columns of result tables: outs..., order keys... */
    /* output: rows stream to it from the workers (no aggregate, no ORDER BY;
     * OFFSET and LIMIT applied under out_mu as the rows arrive), or the
     * finished table goes to it at the end */
    eng_output out;
    FILE *outfile;        /* INTO OUTFILE's file, closed after the statement */
    bool outfile_stdout;  /* ... AND STDOUT: the rows go to both */
    bool outfile_created; /* the statement made the file: removed if it fails */
    eng_writer tee[2];    /* with AND STDOUT: the file's writer and the output's */
    bool stream;
    pthread_mutex_t out_mu;
    uint64_t out_skip;   /* rows of OFFSET still to skip */
    uint64_t out_left;   /* rows LIMIT still lets through (UINT64_MAX: no LIMIT) */
    bool progress_shown; /* the progress line is on the terminal (under out_mu) */
    /* units */
    int n_units;
    _Atomic int next_unit;
    _Atomic int units_done;
    eng_scan_stats stats;
    _Atomic int stop;
    _Atomic int64_t rows_emitted; /* LIMIT without ORDER BY: early stop */
    eng_fail fail;                /* the first worker's error */
    double t0;
    int64_t start_ms;     /* wall clock at the start (now()) */
    eng_stage stage;      /* where a failure happens (eng_error_classify) */
    eng_sink *given_sink; /* INSERT, a subquery: the sink the result goes to (taken) */
    /* composition (eng_compose.c) */
    eng_scope *scope_here;      /* this statement's WITH queries, or NULL */
    eng_scope *scope_up;        /* the enclosing statement's */
    int depth;                  /* subquery nesting */
    _Atomic int64_t child_peak; /* the largest peak of the queries run for this one */
    eng_memtab keep;            /* a UNION ALL's result, until the query ends */
    uint64_t rows_written;      /* INSERT: rows written to the table */
    uint64_t bytes_written;     /* INSERT: their uncompressed bytes */
    uint64_t rows_dropped;      /* INSERT: rows of blocks dropped as duplicates */
    /* GROUP BY: the statement's shape (0: its sizes are not kept), and its
     * sizes the last time (agg_hint_ok) */
    uint64_t agg_stats_key;
    eng_agg_size agg_hint;
    bool agg_hint_ok;
    uint64_t agg_preallocated; /* groups reserved by the hint */
} equery;

/* GROUP BY sizes by statement shape, kept for the whole process
 * (eng_aggstats.c; thread-safe): the bound statement's shape and its last
 * sizes looked up (q->agg_stats_key, agg_hint); a worker's table and the
 * merged table reserved for them; a run's sizes kept for the next. */
#define ENG_AGG_PREALLOC_MAX 100000000ull
void eng__agg_hint_begin(equery *q, const sql_stmt *st);
void eng__agg_hint_worker(equery *q, agg_tab *t, int workers);
void eng__agg_hint_merged(equery *q, agg_tab *dst);
void eng__agg_hint_keep(equery *q, const eng_agg_size *size);

typedef struct worker {
    equery *q;
    agg_tab *agg;
    rtab res;
    uint32_t *sel;
    uint32_t sel_cap;
    eng_reader *rd; /* the source's state for this worker */
    char err[ENG_MSG_MAX];
} worker;

/* The stages eng_table.c uses: a query of its own (free with eng__query_free),
 * its settings and output format, its FROM, a SELECT with its result to
 * q->given_sink when set, and a result of string columns. */
equery *eng__query_create(const eng_ctx *ctx);
void eng__query_free(equery *q);

int eng__stmt_settings(equery *q, const sql_stmt *st, eng_format *ofmt, char *err, size_t errlen);
int eng__stmt_source(equery *q, const sql_stmt *st, char *err, size_t errlen);
int eng__run_select(equery *q, const sql_stmt *st, eng_format fmt, char *err, size_t errlen);
/* The statement's sink and its columns' names and types (copied). */
int eng__stmt_output(equery *q, eng_format fmt, const char *const *names, const ex_type *types,
                     int n_cols, char *err, size_t errlen);
int eng__out_strings(equery *q, eng_format fmt, const char *const *names, int n_cols,
                     const char *const *cells, uint32_t n_rows, char *err, size_t errlen);

/* DEFAULT expressions (eng_default.c). CREATE TABLE: each binds over the
 * table's columns, without aggregates or a cycle. 0 or -EINVAL. */
int eng__default_check(eng_mem *m, const eng_tdef *d, char *err, size_t errlen);
/* INSERT: the part sink's column map (*col_of2, malloc'd: left-out columns
 * with a DEFAULT come after the n_in given ones) and whether defaults apply
 * (*needed). 0 or -ENOMEM. */
int eng__default_map(const eng_tdef *d, const int *col_of, int n_in, int **col_of2, int *n_in2,
                     bool *needed);
/* A sink that fills them in front of inner (which it retains and destroys);
 * d, col_of and col_of2 are borrowed for its life. 0 or -ENOMEM. */
int eng__default_sink_create(eng_sink **out, eng_sink *inner, eng_mem *m, const eng_tdef *d,
                             const int *col_of, int n_in, const int *col_of2, int n_in2);
/* The output's sink and columns (names and types borrowed until the query ends). */
int eng__stmt_output(equery *q, eng_format fmt, const char *const *names, const ex_type *types,
                     int n_cols, char *err, size_t errlen);

/* Composition (eng_compose.c). A query run for q (its settings, its WITH
 * names in sight), or NULL (-ENOMEM); free with eng__query_free. */
equery *eng__query_child(equery *q);
/* Runs st (with its UNION ALL branches) as
 * queries of q's, its rows into *out allocated on m. 0 or -errno (err). */
int eng__materialize(equery *q, const sql_stmt *st, eng_mem *m, eng_memtab *out, char *err,
                     size_t errlen);
void eng__memtab_free(eng_mem *m, eng_memtab *t);
/* The statement's WITH queries (none run yet). 0 or -ENOMEM. */
int eng__scope_init(equery *q, const sql_stmt *st);
void eng__scope_free(equery *q);
/* FROM (SELECT ...) or FROM a WITH name: q->src over its rows, *done set;
 * else *done false (a table or a table function). */
int eng__compose_source(equery *q, const sql_stmt *st, bool *done, char *err, size_t errlen);
/* eng_subquery_fn over q (arg). */
int eng__subquery_hook(void *arg, const sql_stmt *sub, ex_vec *col, uint32_t *rows, int *n_cols,
                       char *err, size_t errlen);
/* Window functions (eng_window.c): whether st's SELECT list has one, and the
 * statement run in its two steps, its result to q's output. */
bool eng__has_window(const sql_stmt *st);
int eng__run_window(equery *q, const sql_stmt *st, eng_format fmt, char *err, size_t errlen);
/* JOIN (eng_join.c): runs the right side into memory, builds its hash table
 * and makes q->src the join of q->src and it. 0 or -errno (err). */
int eng__join_wrap(equery *q, const sql_stmt *outer, const sql_join *jn, char *err, size_t errlen);
/* What EXPLAIN says of a join source (false: s is not one). */
typedef struct eng_join_info {
    sql_join_kind kind;
    bool any, use_nulls;
    uint32_t right_rows;
    const char *const *right_names; /* the columns the right side kept */
    int n_right;
    int n_keys;
    bool dense; /* one integer key indexed directly: its values span dmin..dmax */
    int64_t dmin, dmax;
    const eng_source *left;
    int left_units; /* after plan */
} eng_join_info;
bool eng__join_info(const eng_source *s, eng_join_info *out);
/* EXPLAIN [PLAN] and EXPLAIN SYNTAX (eng_explain.c): the lines as rows of one
 * String column, explain. */
int eng__run_explain(equery *q, const sql_stmt *st, eng_format fmt, char *err, size_t errlen);
/* SELECT ... UNION ALL ...: every branch's rows to the statement's sink. */
int eng__run_union(equery *q, const sql_stmt *st, eng_format fmt, char *err, size_t errlen);

/* A table statement (CREATE, DROP, TRUNCATE, OPTIMIZE, INSERT, SHOW TABLES),
 * or DESCRIBE of a table. */
bool eng__is_table_stmt(const sql_stmt *st);
int eng__run_table_stmt(equery *q, const sql_stmt *st, eng_format fmt, char *err, size_t errlen);

/* Hands n rows (one vector per column) to the sink. 0 or -errno (err). */
int eng__out_rows(eng_output *o, const ex_vec *cols, uint32_t n, char *err, size_t errlen);
/* Hands t's first o->n_columns columns to the sink, in blocks. */
int eng__out_table(eng_output *o, const rtab *t, char *err, size_t errlen);
/* Tells the sink what the query read (st may be NULL), then that the result
 * is whole. */
int eng__out_end(eng_output *o, const eng_sink_stats *st, char *err, size_t errlen);

/* Copies the counters to ctx->live, if the caller watches them. */
void eng__live_update(equery *q);
/* Whether the caller cancelled the statement (ctx->cancel). */
static inline bool eng__cancelled(const equery *q)
{
    return q->ctx->cancel && atomic_load_explicit(q->ctx->cancel, memory_order_relaxed);
}
/* Seconds on the monotonic clock. */
double eng__now_s(void);
/* Columns of a worker's result table: outs..., then ORDER BY keys. */
int eng__n_res_cols(const eng_plan *p);
/* Runs nthreads workers over q's units; the calling thread draws the
 * progress line. The first failure is in q->fail. */
int eng__run_workers(equery *q, worker *ws, int nthreads);
/* Runs fn on each of the n jobs (job_size bytes apart from jobs), n - 1 of
 * them on threads of their own and the first on the caller's (one that
 * cannot start runs on the caller's too), and joins them: 0, or -ENOMEM
 * before anything ran. */
int eng__fan_out(void *(*fn)(void *), void *jobs, size_t job_size, int n);
/* The execute stage: a worker per thread (up to one per unit) with its table
 * and its reader of the source, run over q's units; *ws / *n get the workers,
 * whose tables the result stage takes. 0 or -errno with a sentence in err. */
int eng__execute(equery *q, worker **ws, int *n, char *err, size_t errlen);
void eng__workers_free(equery *q, worker *ws, int n);
/* Streaming: hands the rows of a worker's table to the output, OFFSET
 * skipped and LIMIT cut in arrival order. Any worker; serialised on out_mu. */
int eng__stream_rows(equery *q, const rtab *t, char *err, size_t errlen);
/* The result stage of a materialised result: merges the workers' tables
 * (aggregates: HAVING and the SELECT list over the groups), orders and cuts
 * it, hands it to the output. 0 or -errno with a sentence in err. */
int eng__finish_result(equery *q, worker *ws, int n, char *err, size_t errlen);
/* Orders t by the plan (if it has ORDER BY) and cuts it to [offset, offset +
 * limit) when final is set; else to the first offset+limit rows (a worker's
 * partial top-N). 0 or -ENOMEM. */
int eng__order_and_cut(eng_mem *m, rtab *t, const eng_plan *p, int first_key, bool final);
/* The progress line (clear: erase it), under out_mu. */
void eng__progress_line(equery *q, bool clear);
/* Erases the progress line if it is shown; the caller holds out_mu. */
void eng__progress_clear_locked(equery *q);

#endif /* RINGCACHE_EXEC_INT_H */
