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
    uint64_t rows;             /* rows handed to the sink */
} eng_output;

typedef struct equery {
    const eng_ctx *ctx;
    eng_mem mem;
    eng_settings set;
    eng_source *src;
    eng_plan plan;
    ex_type *rtypes;           /* the columns of result tables: outs..., order keys... */
    /* output: rows stream to it from the workers (no aggregate, no ORDER BY;
     * OFFSET and LIMIT applied under out_mu as the rows arrive), or the
     * finished table goes to it at the end */
    eng_output out;
    FILE *outfile;             /* INTO OUTFILE's file, closed after the statement */
    bool outfile_stdout;       /* ... AND STDOUT: the rows go to both */
    eng_writer tee[2];         /* with AND STDOUT: the file's writer and the output's */
    bool stream;
    pthread_mutex_t out_mu;
    uint64_t out_skip;         /* rows of OFFSET still to skip */
    uint64_t out_left;         /* rows LIMIT still lets through (UINT64_MAX: no LIMIT) */
    bool progress_shown;       /* the progress line is on the terminal (under out_mu) */
    /* units */
    int n_units;
    _Atomic int next_unit;
    _Atomic int units_done;
    eng_scan_stats stats;
    _Atomic int stop;
    _Atomic int64_t rows_emitted; /* LIMIT without ORDER BY: early stop */
    eng_fail fail;             /* the first worker's error */
    double t0;
    int64_t start_ms;          /* wall clock at the start (now()) */
    eng_stage stage;           /* where a failure happens (eng_error_classify) */
    eng_sink *given_sink;      /* INSERT: the part sink the result goes to (taken) */
    uint64_t rows_written;     /* INSERT: rows written to the table */
} equery;

typedef struct worker {
    equery *q;
    agg_tab *agg;
    rtab res;
    uint32_t *sel;
    uint32_t sel_cap;
    eng_reader *rd;           /* the source's state for this worker */
    char err[ENG_MSG_MAX];
} worker;

/* The stages eng_table.c uses: a query of its own (free with eng__query_free),
 * its settings and output format, its FROM, a SELECT with its result to
 * q->given_sink when set, and a result of string columns. */
equery *eng__query_create(const eng_ctx *ctx);
void eng__query_free(equery *q);
int eng__stmt_settings(equery *q, const sql_stmt *st, eng_format *ofmt, char *err,
                       size_t errlen);
int eng__stmt_source(equery *q, const sql_stmt *st, char *err, size_t errlen);
int eng__run_select(equery *q, const sql_stmt *st, eng_format fmt, char *err, size_t errlen);
int eng__out_strings(equery *q, eng_format fmt, const char *const *names, int n_cols,
                     const char *const *cells, uint32_t n_rows, char *err, size_t errlen);
/* A table statement (CREATE, DROP, TRUNCATE, OPTIMIZE, INSERT, SHOW TABLES),
 * or DESCRIBE of a table. */
bool eng__is_table_stmt(const sql_stmt *st);
int eng__run_table_stmt(equery *q, const sql_stmt *st, eng_format fmt, char *err,
                        size_t errlen);

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
