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
 *            --write(block)*------->      (format sinks: TSV, CSV, JSON...,
 *            --stats(counters)----->       Pretty..., Vertical, Markdown,
 *            --end()--------------->       Values, Null; sink_*.c)
 *
 * Formats, byte for byte as ClickHouse writes them with its default settings:
 *  - TabSeparated[WithNames[AndTypes]] (\N for NULL, backslash escapes),
 *    TabSeparatedRaw (no escapes); CSV[WithNames[AndTypes]] (strings and
 *    dates double-quoted, \N for NULL)   (sink_text.c)
 *  - JSON, JSONCompact, JSONStrings (the document: meta, data, rows,
 *    statistics, tab-indented), JSONEachRow, JSONStringsEachRow,
 *    JSONCompactEachRow[WithNames[AndTypes]], JSONCompactStringsEachRow:
 *    64-bit integers quoted (output_format_json_quote_64bit_integers=1),
 *    Decimals not (output_format_json_quote_decimals=0), nan/inf as null, '/' escaped as \/ (sink_json.c)
 *  - Pretty, PrettyCompact, PrettySpace: box drawing (or spaces), numbers
 *    right-aligned, NULL as ᴺᵁᴸᴸ, at most 10000 rows like
 *    output_format_pretty_max_rows: they keep those rows to measure their
 *    columns, and count the rest (sink_pretty.c)
 *  - Vertical, Markdown, Values (sink_rows.c), Null.
 *  - Parquet: a row group at a time, the footer at the end, over
 *    format/parquet's writer (sink_parquet.c).
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
    ENG_FMT_TSV_WITH_NAMES_AND_TYPES,
    ENG_FMT_TSV_RAW,
    ENG_FMT_CSV_WITH_NAMES_AND_TYPES,
    ENG_FMT_JSON,
    ENG_FMT_JSON_COMPACT,
    ENG_FMT_JSON_STRINGS,
    ENG_FMT_JSON_STRINGS_EACH_ROW,
    ENG_FMT_JSON_COMPACT_EACH_ROW,
    ENG_FMT_JSON_COMPACT_EACH_ROW_WITH_NAMES,
    ENG_FMT_JSON_COMPACT_EACH_ROW_WITH_NAMES_AND_TYPES,
    ENG_FMT_JSON_COMPACT_STRINGS_EACH_ROW,
    ENG_FMT_PRETTY,
    ENG_FMT_PRETTY_SPACE,
    ENG_FMT_VERTICAL,
    ENG_FMT_MARKDOWN,
    ENG_FMT_VALUES,
    ENG_FMT_PARQUET,
} eng_format;

/* "TSV" / "TabSeparated" / "CSV" / "JSONEachRow" / ... -> format, or -EINVAL.
 * Names are matched as ClickHouse matches them: exactly, or case-insensitively
 * when no exact match exists. */
int eng_format_parse(const char *name);
/* The format's ClickHouse name ("TabSeparated", "JSON", ...; static). */
const char *eng_format_name(eng_format fmt);
/* "PrettyCompact, TabSeparated, ..., Null": every output format, for the
 * sentences that list them (static). */
const char *eng_format_list(void);

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

/* What the query read, told to a sink just before end (the JSON formats'
 * "statistics"). */
typedef struct eng_sink_stats {
    double elapsed_s;
    uint64_t rows_read, bytes_read;
} eng_sink_stats;

/* Each returns 0 or -errno with a sentence in err (-EIO: the writer failed,
 * with its reason). begin comes first and once; write any number of times;
 * end once, last; destroy always (also without end, after an error: then
 * nothing more is written). */
typedef struct eng_sink_ops {
    int (*begin)(eng_sink *s, const char *const *names, const ex_type *types, int n_cols, char *err,
                 size_t errlen);
    int (*write)(eng_sink *s, const eng_block *b, char *err, size_t errlen);
    int (*end)(eng_sink *s, char *err, size_t errlen);
    void (*destroy)(eng_sink *s);
} eng_sink_ops;

/* Every sink starts with this (implementations embed it first). stats, when
 * set, is told what the query read once, right before end (the JSON formats
 * write it as "statistics"); a sink allocated zeroed has none. */
struct eng_sink {
    const eng_sink_ops *ops;
    void (*stats)(eng_sink *s, const eng_sink_stats *st);
};

/* The sink of an output format, writing to w (copied). 0, -EINVAL (not a
 * format) or -ENOMEM. */
int eng_sink_format_create(eng_sink **out, eng_format fmt, const eng_writer *w);
/* ops->destroy; accepts NULL and sets *s to NULL. */
void eng_sink_destroy(eng_sink **s);

#endif /* RINGCACHE_ENG_SINK_H */
