/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_sink.h: where a statement's result goes. A sink is told the result's
 * columns once (begin), then consumes result blocks one at a time (write) and
 * is told the result is whole (end); it never sees the whole result at once,
 * so a large SELECT streams through it in bounded memory. Every output format
 * is a sink writing bytes to an eng_writer (a stdio stream for the CLI, a
 * chunked HTTP response for a server); a part writer (INSERT INTO a table) is
 * a sink of another kind, taking the same blocks.
 *
 *   executor --begin(names, types)--> sink --bytes--> eng_writer
 *            --write(block)*------->      (format sinks: TSV, CSV, JSONEachRow,
 *            --end()--------------->       PrettyCompact, Null; sink_*.c)
 *
 * Formats: TabSeparated[WithNames] (\N for NULL, backslash escapes),
 * CSV[WithNames] (strings and dates double-quoted, \N for NULL), JSONEachRow
 * (64-bit integers quoted, as output_format_json_quote_64bit_integers=1 does;
 * nan/inf as null), PrettyCompact (box drawing, numbers right-aligned, NULL
 * as ᴺᵁᴸᴸ, at most 10000 rows like output_format_pretty_max_rows: it keeps
 * those rows to measure its columns, and counts the rest), Null, and Parquet
 * (sink_parquet.c: a row group at a time, the footer at the end).
 *
 * Ownership: a format sink copies its eng_writer; what the writer writes to
 * must outlive the sink. Blocks are lent for the call; begin's names and
 * types are copied.
 * Thread-safety: a sink is used by one thread at a time (the executor
 * serialises its workers' blocks); sinks share nothing, so any number of
 * queries may write to sinks of their own at once.
 */
#ifndef RINGCACHE_ENG_SINK_H
#define RINGCACHE_ENG_SINK_H

#include "eng_types.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum eng_format {
    ENG_FMT_PRETTY_COMPACT = 1,
    ENG_FMT_TSV,
    ENG_FMT_TSV_WITH_NAMES,
    ENG_FMT_CSV,
    ENG_FMT_CSV_WITH_NAMES,
    ENG_FMT_JSON_EACH_ROW,
    ENG_FMT_NULL,
    ENG_FMT_PARQUET,
} eng_format;

/* "TSV" / "TabSeparated" / "CSV" / "JSONEachRow" / ... -> format, or -EINVAL. */
int eng_format_parse(const char *name);

/* Where bytes go. write takes all of buf or fails: 0 or -errno. flush (may
 * be NULL) pushes what the writer holds: 0 or -errno. */
typedef int (*eng_write_fn)(void *arg, const void *buf, size_t len);
typedef int (*eng_flush_fn)(void *arg);
typedef struct eng_writer {
    eng_write_fn write;
    eng_flush_fn flush;
    void *arg;
} eng_writer;

/* A writer onto a stdio stream (fwrite; flush is fflush, and reports an error
 * the stream has met). */
void eng_writer_stdio(eng_writer *w, FILE *f);

/* Rows of a result: n_cols vectors of n_rows rows each (a constant vector has
 * one row and stands for all). */
typedef struct eng_block {
    const ex_vec *cols;
    int n_cols;
    uint32_t n_rows;
} eng_block;

typedef struct eng_sink eng_sink;

/* Each returns 0 or -errno with a sentence in err (-EIO: the writer failed,
 * with its reason). begin comes first and once; write any number of times;
 * end once, last; destroy always (also without end, after an error: then
 * nothing more is written). */
typedef struct eng_sink_ops {
    int (*begin)(eng_sink *s, const char *const *names, const ex_type *types, int n_cols,
                 char *err, size_t errlen);
    int (*write)(eng_sink *s, const eng_block *b, char *err, size_t errlen);
    int (*end)(eng_sink *s, char *err, size_t errlen);
    void (*destroy)(eng_sink *s);
} eng_sink_ops;

/* Every sink starts with this (implementations embed it first). */
struct eng_sink {
    const eng_sink_ops *ops;
};

/* The sink of an output format, writing to w (copied). 0, -EINVAL (not a
 * format) or -ENOMEM. */
int eng_sink_format_create(eng_sink **out, eng_format fmt, const eng_writer *w);
/* ops->destroy; accepts NULL and sets *s to NULL. */
void eng_sink_destroy(eng_sink **s);

#endif /* RINGCACHE_ENG_SINK_H */
