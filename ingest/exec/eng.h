/* SPDX-License-Identifier: Apache-2.0
 *
 * eng.h: the scan engine's public face: run SQL statements (sql/sql.h) over
 * Parquet / CSV / TSV / JSONEachRow files from local folders or S3 and hand
 * each result to a sink (sink/eng_sink.h: an output format by default), with
 * ClickHouse's semantics. A statement goes through these stages:
 *
 *   parse (sql/)  ->  source (source/: the FROM table function: glob -> files
 *   -> work units, Parquet row groups or text files)  ->  bind (plan/)
 *   ->  execute (exec/eng_worker.c: max_threads workers; per unit: scan only
 *       the columns the query needs, row groups pruned by WHERE; filter;
 *       partial aggregate | projection (+ top-N) per worker)
 *   ->  result (exec/eng_result.c: merge -> HAVING -> ORDER BY (heap when
 *       LIMIT) -> LIMIT/OFFSET; without GROUP BY / ORDER BY the rows stream
 *       straight from the workers)
 *   ->  sink (one block at a time)
 *
 * Table statements (exec/eng_table.c): CREATE TABLE / DROP / TRUNCATE /
 * OPTIMIZE / SHOW TABLES against ctx->warehouse; INSERT INTO t SELECT runs
 * the SELECT with a part writer as its sink (sink/eng_part_sink.h), INSERT
 * ... VALUES and ... FORMAT feed the same sink; the parts are committed to
 * the table's log in one version at the end, so a failed INSERT commits
 * nothing.
 *
 * Blocks between operators are cb_batch (core/colbatch.h) at the source and
 * engine vectors (core/eng_types.h: typed, a null byte per row, strings plain
 * or dictionary + indices) inside.
 *
 * Owns: nothing between calls. eng_run keeps no global state: a process may
 * run any number of statements at once (a server's queries), each with its
 * own memory tracker, settings, source, workers and sink.
 *
 * Thread-safety: eng_run() may be called from several threads at once, with
 * the same or different eng_ctx (it only reads it). Inside a statement the
 * engine starts max_threads workers of its own and joins them before it
 * returns. The S3 callbacks of eng_ctx (open_s3, list_s3) are called from
 * those workers and from download threads concurrently and must be
 * thread-safe; a sink (and a writer) is called by one thread at a time.
 */
#ifndef RINGCACHE_ENG_H
#define RINGCACHE_ENG_H

#include "eng_error.h"
#include "eng_sink.h"
#include "eng_source.h"
#include "rangesrc.h"
#include "warehouse.h"

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

/* A table named in FROM ([db.]name, not a table function) that is not one of
 * the engine's own (system.one, system.numbers, system.zeros): the server's
 * system tables, a warehouse's tables. db is never NULL (ctx->database or
 * "default" when the query names none). 0 with *out, -ENOENT when there is
 * no such table (err untouched: the engine says so as ClickHouse does), or
 * -errno with a sentence in err. Called on the statement's thread. */
typedef int (*eng_open_table_fn)(void *arg, const char *db, const char *name,
                                 const eng_scan_env *env, eng_source **out, char *err,
                                 size_t errlen);

/* A setting of a statement's SETTINGS clause, offered before the engine looks
 * at it: 0 when the caller takes it (its own settings, such as a server's
 * max_execution_time; value is the literal's text), -ENOENT to leave it to the
 * engine, another -errno with a sentence in err to refuse it. */
typedef int (*eng_setting_fn)(void *arg, const char *name, const char *value, char *err,
                              size_t errlen);

/* A running statement's counters, for whoever watches it from another thread
 * (a server's system.processes and progress headers): relaxed atomics,
 * updated every 100 ms while the workers run and when the statement ends. */
typedef struct eng_live {
    _Atomic uint64_t rows_read, bytes_read;
    _Atomic uint64_t result_rows;
    _Atomic int64_t memory, peak_memory;
} eng_live;

/* Reads up to len bytes of an INSERT's data into buf: the bytes read, 0 at
 * the end, or -errno. */
typedef int64_t (*eng_input_fn)(void *arg, void *buf, size_t len);

typedef struct eng_ctx {
    eng_list_fn list_s3; /* NULL: s3() fails with a sentence saying why */
    eng_open_fn open_s3;
    void *s3_impl;
    eng_s3_as_fn s3_as;         /* a source's own credentials (s3(url, key, secret),
                                  NOSIGN); NULL: such sources fail, saying why */
    FILE *out;                  /* result bytes (borrowed), when writer is NULL */
    const eng_writer *writer;   /* where result bytes go (borrowed); NULL: out */
    eng_open_sink_fn open_sink; /* NULL: the format's sink on writer / out */
    void *sink_arg;
    eng_format format;  /* when the query has no FORMAT clause */
    FILE *progress;     /* a progress line every 100 ms; NULL: none */
    int max_threads;    /* default for the setting; 0: the cores */
    bool allow_outfile; /* SELECT ... INTO OUTFILE may write files where the
                                * engine runs (the CLI: the user's own machine) */
    /* Called after each statement's summary, on the same FILE, to add lines
     * of the caller's (the CLI: where the bytes came from with --cache);
     * NULL: none. On the thread running the statement. */
    void (*summary_more)(void *arg, FILE *f);
    void *summary_arg;
    /* What a server adds (all may be NULL / 0): */
    const eng_settings *settings; /* the query's settings before its SETTINGS
                                     clause (max_threads 0: as above) */
    eng_setting_fn setting;       /* settings of the SETTINGS clause the engine lacks */
    void *setting_arg;
    const char *database;         /* currentDatabase() and unqualified tables; NULL: "default" */
    const char *user;             /* currentUser(); NULL: "default" */
    eng_open_table_fn open_table; /* FROM [db.]name; NULL: only the engine's system tables */
    void *table_arg;
    const _Atomic int *cancel; /* non-zero: stop the statement (-ECANCELED), checked
                                  between blocks and every 100 ms */
    eng_mem *mem_parent;       /* a tracker every query of the process also counts in
                                  (max_server_memory_usage): the query whose allocation
                                  crosses its limit fails, the others go on */
    eng_live *live;            /* counters to keep up to date; NULL: none */
    /* prefetch buffers kept from one query to the next (a server's; borrowed,
     * thread-safe: io/eng_fetch.h); NULL: each query maps its own */
    struct ef_shelf *fetch_shelf;

    /* tables (CREATE TABLE, INSERT, FROM t, system.*): */
    const tb_wh *warehouse; /* where tables live (borrowed); NULL: no tables */
    /* CREATE TABLE and INSERT may name the system database's tables in the
     * warehouse (a server flushing its own system.query_log); users' queries
     * leave it false: the system database is read-only to them */
    bool system_writable;
    /* the data of INSERT ... FORMAT F when none follows the statement: a
     * buffer, else a stream read to its end (a server's request body) */
    const void *input;
    size_t input_len;
    eng_input_fn input_read;
    void *input_arg;
    /* a distributed query's work units (ingest/dist/): the FROM reads only
     * unit[0..n_unit) (n_unit 0 with a unit: that one); NULL: everything */
    const eng_unit *unit;
    int n_unit;
    /* a distributed INSERT's work unit: its name (path and row groups) and
     * the initiator's query id. The unit's block ids then take the token
     * "<insert_deduplication_token, else unit_query>/<unit_name>" and its
     * parts commit as one piece (all dropped when any is a duplicate), so
     * the unit redone on another server commits once, and the statement
     * rerun with the same insert_deduplication_token adds nothing. NULL:
     * not a unit. */
    const char *unit_name, *unit_query;
    /* the clusters of compute servers this process knows (s3Cluster,
     * system.clusters); borrowed */
    const eng_cluster *clusters;
    int n_clusters;
} eng_ctx;

/* What a finished query did (for the summary line). */
typedef struct eng_result {
    uint64_t rows_out;      /* rows written */
    uint64_t rows_read;     /* rows that came out of the readers */
    uint64_t rows_written;  /* INSERT: rows written to the table */
    uint64_t bytes_written; /* INSERT: their uncompressed bytes in the parts */
    uint64_t bytes_read;    /* their uncompressed bytes */
    uint64_t files, row_groups, row_groups_pruned;
    int64_t peak_memory; /* tracked bytes */
    /* GROUP BY: groups its tables were sized for at the start from the last
     * run of the same statement (ClickHouse's
     * AggregationPreallocatedElementsInHashTables) */
    uint64_t agg_preallocated;
    double elapsed_s;
    int code;        /* a failure's ClickHouse error code (eng_error.h), else 0 */
    bool has_output; /* the statement had a result (its sink was opened) */
} eng_result;

/* Runs `sql` (one or more statements separated by ';') against ctx, writing
 * each result to its sink (ctx->open_sink's, else the format's on
 * ctx->writer or ctx->out) and, after each statement, the ClickHouse-style
 * summary to `summary` (may be NULL). Returns 0 or -errno with a sentence in
 * err (the SQL place "line L, column C: ..." for errors in the query, the file
 * and place for errors in the data). res (may be NULL) gets the last
 * statement's counters, also when it failed (then res->code says how, as
 * ClickHouse would). */
int eng_run(const eng_ctx *ctx, const char *sql, size_t len, FILE *summary, eng_result *res,
            char *err, size_t errlen);

/* Process policy for a process that runs queries (the CLI, the server, the
 * engine's benches), called once from main before any thread starts: glibc's
 * malloc keeps freed buffers of up to 32 MiB in its heap (trimmed past 64 MiB
 * free) instead of unmapping each one, so a scan's column buffers are reused,
 * not faulted in and zeroed again for every column chunk (a Decimal sum over
 * 20M rows: system time 0.13 s -> 0.01 s). MALLOC_MMAP_THRESHOLD_ or
 * MALLOC_TRIM_THRESHOLD_ in the environment win. */
void eng_tune_malloc(void);

/* Writes "N rows in set. Elapsed: X sec. Processed R rows, B (r rows/s., b/s.)\n
 * Peak memory usage: M." to f. */
void eng_print_summary(FILE *f, const eng_result *r);

/* Bytes as the summary writes them, in powers of 1000 as ClickHouse does:
 * "512 B", "40.00 MB". Always NUL-terminates when cap > 0. */
void eng_format_bytes(double v, char *buf, size_t cap);

#endif /* RINGCACHE_ENG_H */
