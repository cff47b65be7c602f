/* SPDX-License-Identifier: Apache-2.0
 *
 * eng.h: the scan engine's public face: run one SQL statement (sql.h) over
 * Parquet / CSV / TSV / JSONEachRow files from local folders or S3 and write
 * its result in a ClickHouse output format, with ClickHouse's semantics.
 *
 * The plan, for SELECT now and INSERT later (eng_int.h has the details):
 *
 *   source (glob -> files -> work units: Parquet row groups, text files)
 *     -> scan (only the columns the query needs, row groups pruned by WHERE)
 *     -> filter (WHERE, a selection vector over the block)
 *     -> partial aggregate per worker  |  projection (+ top-N) per worker
 *     -> merge -> HAVING -> ORDER BY (heap when LIMIT) -> LIMIT/OFFSET
 *     -> sink: an output format today; a table-part writer for INSERT later
 *
 * Blocks between operators are cb_batch (colbatch.h) at the source and
 * eng vectors (typed, a null byte per row, strings plain or dictionary +
 * indices) inside; a sink consumes result blocks one at a time, so INSERT
 * INTO t SELECT plugs a part writer in where the formatter is.
 *
 * Thread-safety: eng_run() may be called from several threads at once with
 * different eng_ctx; one eng_ctx serves one call at a time. Inside a query the
 * engine starts max_threads workers of its own and joins them before it
 * returns. The source callbacks of eng_ctx (open_s3, list_s3) are called from
 * those workers concurrently and must be thread-safe.
 */
#ifndef RINGCACHE_ENG_H
#define RINGCACHE_ENG_H

#include "eng_sink.h"
#include "rangesrc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Makes the sink a statement's result goes to, given the statement's output
 * format (its FORMAT clause, else eng_ctx.format): called once per statement
 * that has a result, before any of its rows exist. 0 or -errno with a
 * sentence in err. The engine destroys the sink after the statement. */
typedef int (*eng_open_sink_fn)(void *arg, eng_format fmt, eng_sink **out, char *err,
                                size_t errlen);

typedef struct eng_ctx {
    eng_list_fn list_s3;       /* NULL: s3() fails with a sentence saying why */
    eng_open_fn open_s3;
    void *s3_impl;
    FILE *out;                 /* result bytes (borrowed), when writer is NULL */
    const eng_writer *writer;  /* where result bytes go (borrowed); NULL: out */
    eng_open_sink_fn open_sink; /* NULL: the format's sink on writer / out */
    void *sink_arg;
    eng_format format;         /* when the query has no FORMAT clause */
    FILE *progress;            /* a progress line every 100 ms; NULL: none */
    int max_threads;           /* default for the setting; 0: the cores */
} eng_ctx;

/* What a finished query did (for the summary line). */
typedef struct eng_result {
    uint64_t rows_out;         /* rows written */
    uint64_t rows_read;        /* rows that came out of the readers */
    uint64_t bytes_read;       /* their uncompressed bytes */
    uint64_t files, row_groups, row_groups_pruned;
    int64_t peak_memory;       /* tracked bytes */
    double elapsed_s;
} eng_result;

/* Runs `sql` (one or more statements separated by ';') against ctx, writing
 * each result to ctx->out and, after each statement, the ClickHouse-style
 * summary to `summary` (may be NULL). Returns 0 or -errno with a sentence in
 * err (the SQL place "line L, column C: ..." for errors in the query, the file
 * and place for errors in the data). res (may be NULL) gets the last
 * statement's counters. */
int eng_run(const eng_ctx *ctx, const char *sql, size_t len, FILE *summary, eng_result *res,
            char *err, size_t errlen);

/* Writes "N rows in set. Elapsed: X sec. Processed R rows, B (r rows/s., b/s.)\n
 * Peak memory usage: M." to f. */
void eng_print_summary(FILE *f, const eng_result *r);

#endif /* RINGCACHE_ENG_H */
