/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_part_sink.h: the sink of INSERT INTO a MergeTree table (sink_part.c).
 * It takes result blocks as any sink does, converts each value to its
 * column's type as ClickHouse's INSERT does (an impossible conversion is an
 * error naming the column and the row), squashes the rows into insert blocks
 * of min_insert_block_size_rows / _bytes (whichever comes first; 0 turns a
 * threshold off, both 0: every incoming block is one), and hands each block
 * to one of max_insert_threads writer threads, which split it by partition,
 * sort each piece by ORDER BY (ReplacingMergeTree with optimize_on_insert:
 * keeping the last row of each key, by the version column when there is one),
 * and write one part per piece to S3 (table.h's uploads; through the cache
 * when the table's tb_io says so). Nothing is committed here: after end() the
 * caller commits the parts (eng_part_sink_parts) in one log version, or, after
 * a failure, deletes their objects (eng_part_sink_discard).
 *
 * Memory: rows held are charged to the query's tracker as they are squashed
 * and while their block is written; at most max_insert_threads blocks are
 * being written while the next is squashed. A block is held once while its
 * part is encoded (its rows go to the writer sorted, in runs of about 1 MiB,
 * not as a whole sorted copy) and is freed before the part is uploaded, so
 * the query's peak stays under 3 x max_insert_threads x
 * min_insert_block_size_bytes whatever the timing of the uploads.
 *
 * Thread-safety: the sink is used by one thread at a time (as every sink);
 * its writer threads are its own and are joined by end() and destroy.
 */
#ifndef RINGCACHE_ENG_PART_SINK_H
#define RINGCACHE_ENG_PART_SINK_H

#include "eng_sink.h"
#include "table.h"

#include <stdbool.h>
#include <stdint.h>

/* Partition ids of the rows of b (the table's columns, in table order):
 * row_part[r] is an index into *ids (malloc'd strings, *n_ids of them,
 * the caller frees both). 0 or -errno with a sentence in err. */
typedef int (*eng_partition_fn)(void *arg, const cb_batch *b, uint32_t *row_part, char ***ids,
                                uint32_t *n_ids, char *err, size_t errlen);

typedef struct eng_part_sink_opts {
    const tb_table *table;            /* where parts are uploaded (borrowed) */
    const tb_schema *schema;          /* the table's columns, keys, engine (borrowed) */
    const uint32_t *fixed;            /* per table column: FixedString's N, else 0 (may be NULL) */
    const bool *date16;               /* per table column: Date, not Date32 (may be NULL) */
    const char *const *types;         /* per table column: its declared type, for messages */
    const int *col_of;                /* per table column: the input column it takes, or -1
                                     for its default (0, '', NULL when Nullable) */
    int n_in;                         /* input columns the INSERT takes */
    const char *db_name, *table_name; /* for messages */
    eng_mem *mem;                     /* the query's tracker */
    uint64_t min_rows, min_bytes;
    int threads;                /* max_insert_threads (>= 1) */
    uint64_t max_uploads;       /* parts uploading at once; 0: threads */
    bool replacing;             /* ReplacingMergeTree's rule on each block */
    bool dedup;                 /* block ids for deduplication */
    const char *token;          /* insert_deduplication_token, or NULL */
    eng_partition_fn partition; /* NULL: one partition, "all" */
    void *partition_arg;
    const uint32_t *minmax_cols; /* the partition expression's columns (min/max kept) */
    uint32_t n_minmax;
} eng_part_sink_opts;

/* 0, or -ENOMEM. o and what it points to must outlive the sink. */
int eng_part_sink_create(eng_sink **out, const eng_part_sink_opts *o, char *err, size_t errlen);

/* After end(): the parts written (names, partitions, block ids point into the
 * sink), in block order. */
void eng_part_sink_parts(eng_sink *s, const tb_part_add **adds, size_t *n);
/* Rows taken. */
uint64_t eng_part_sink_rows(const eng_sink *s);
/* Deletes the objects of the parts written (after a failure, or the
 * duplicates a commit dropped: flags[i] set, or every part when flags is
 * NULL). Waits for the writer threads first. */
void eng_part_sink_discard(eng_sink *s, tb_table *t, const uint8_t *flags);

#endif /* RINGCACHE_ENG_PART_SINK_H */
