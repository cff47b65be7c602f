/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_out.h: the output sink of a SELECT (eng_out.c): a finished result table
 * written in one of ClickHouse's output formats. An INSERT will add a second
 * sink (a part writer) with the same input. Internal to the engine.
 * Thread-safety: reentrant; one call writes one table to one FILE.
 */
#ifndef RINGCACHE_ENG_OUT_H
#define RINGCACHE_ENG_OUT_H

#include "eng_types.h"

#include <stdio.h>

typedef enum eng_format {
    ENG_FMT_PRETTY_COMPACT = 1,
    ENG_FMT_TSV,
    ENG_FMT_TSV_WITH_NAMES,
    ENG_FMT_CSV,
    ENG_FMT_CSV_WITH_NAMES,
    ENG_FMT_JSON_EACH_ROW,
    ENG_FMT_NULL,
} eng_format;

/* "TSV" / "TabSeparated" / "CSV" / "JSONEachRow" / ... -> format, or -EINVAL. */
int eng_format_parse(const char *name);

typedef struct eng_out_table {
    const ex_vec *cols;      /* n_cols vectors of n_rows rows */
    int n_cols;
    uint32_t n_rows;
    const char *const *names;
} eng_out_table;

/* 0, or -EIO with a sentence in err when the stream fails. */
int eng_out_write(FILE *f, eng_format fmt, const eng_out_table *t, char *err, size_t errlen);

#endif /* RINGCACHE_ENG_OUT_H */
