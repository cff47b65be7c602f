/* SPDX-License-Identifier: Apache-2.0
 *
 * merge.h: background merges of a table's parts. Three layers:
 *  - tm_select(): the merge selector, a pure function in the spirit of
 *    ClickHouse's SimpleMergeSelector: among contiguous ranges of one
 *    partition's parts (in block order), merge the range whose cost per part
 *    removed is lowest, and only when its biggest part is small enough beside
 *    the whole (sum + n x fixed cost >= base x (max + fixed cost)); the base
 *    is lowered toward 1 as the partition's part count grows (and as the
 *    range grows in size), so a burst of small inserts is merged away quickly.
 *  - tm_merge(): the k-way merge of sorted parts into one writer, streaming
 *    one granule per input at a time (bounded memory), with
 *    ReplacingMergeTree's semantics as an option: of rows with equal sorting
 *    keys keep one, the one with the greatest version column, or the last
 *    inserted when there is no version column (or versions tie).
 *  - tm_run(): one merge of a table end to end: select on a snapshot, read
 *    the inputs from S3, upload the output, commit it as a merge (deleting
 *    the output if a racing commit removed an input).
 *
 * Thread-safety: tm_select and tm_settings_init are pure. tm_merge uses only
 * its arguments (readers may be shared with other threads; the writer is
 * the caller's). tm_run uses the table, so one thread at a time per table.
 */
#ifndef RINGCACHE_TABLE_MERGE_H
#define RINGCACHE_TABLE_MERGE_H

#include "eng_types.h"
#include "part.h"
#include "table.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tm_settings {
    uint64_t max_bytes_to_merge;           /* max_bytes_to_merge_at_max_space_in_pool: 150 GiB */
    uint32_t max_parts_to_merge;           /* max_parts_to_merge_at_once: 100 */
    double base;                           /* 5 */
    uint32_t lower_base_after_parts_start; /* 10 */
    uint32_t lower_base_after_parts_end;   /* 50 */
    uint64_t fixed_cost_bytes;             /* size_fixed_cost_to_add: 5 MiB */
    uint64_t min_size_to_lower_base;       /* 1 MiB */
    uint64_t max_size_to_lower_base;       /* 100 GiB */
    /* The merge's memory tracker (borrowed; NULL: none): what a merge holds
     * (one granule of every input, the output batch) is charged to it. A
     * merge whose estimate (one granule of each input, from the parts'
     * uncompressed sizes) does not fit its limit is not started; one that
     * crosses it while running stops with -ENOMEM. Either way nothing is
     * committed, so the inputs stay as they were. */
    eng_mem *mem;
} tm_settings;

void tm_settings_init(tm_settings *s);

/* A range of parts [begin, end) of the list given. */
typedef struct tm_range {
    size_t begin, end;
    double score; /* lower is better */
} tm_range;

/* Picks the best range of sizes[0..n) (one partition, in block order; skip
 * parts already being merged by passing runs without them). Returns 1 with
 * *out set, or 0 when no range is worth merging (or n < 2). */
int tm_select(const uint64_t *sizes, size_t n, const tm_settings *s, tm_range *out);

/* ---- the merge --------------------------------------------------------------- */

typedef struct tm_merge_opts {
    eng_mem *mem;             /* what the merge holds is charged here; NULL: none */
    tp_reader *const *inputs; /* in block order (oldest first); same columns and key */
    size_t n_inputs;
    bool replacing;      /* ReplacingMergeTree */
    int32_t version_col; /* its version column, or -1 */
    uint32_t batch_rows; /* rows per batch handed to the writer; 0: 8192 */
    tp_writer *out;      /* created with input_sorted and the inputs' columns */
    /* bytes out's sink holds (the part's upload buffer), charged with the
     * rest; NULL: none */
    size_t (*out_held)(const void *arg);
    const void *out_held_arg;
} tm_merge_opts;

typedef struct tm_merge_stats {
    uint64_t rows_in, rows_out;
    size_t peak_batch_bytes; /* input granules + output batch held at once (the
                                tracker also gets the writer's and out_held's) */
} tm_merge_stats;

/* Merges the inputs into o->out (the caller finishes the writer). -EINVAL when
 * the inputs' columns or keys differ, or the errors of the readers and the
 * writer (with their sentences). stats may be NULL. */
int tm_merge(const tm_merge_opts *o, tm_merge_stats *stats, char *err, size_t errlen);

/* ---- one merge of a table ---------------------------------------------------- */

typedef struct tm_result {
    bool merged; /* false: nothing worth merging, or skipped */
    /* not started: the estimate (mem_needed bytes) does not fit the
     * tracker's limit with what it holds now (tm_settings.mem) */
    bool skipped_for_memory;
    uint64_t mem_needed;
    char partition[TB_NAME_MAX];
    size_t n_inputs;
    uint64_t rows_in, rows_out, bytes_out;
    uint64_t version; /* of the merge commit */
} tm_result;

/* Selects on the table's latest state (refreshed first) and merges the best
 * range of any partition. final: merge every partition holding two or more
 * parts into one, whatever the selector says (OPTIMIZE ... FINAL; one
 * partition per call). -ESTALE when a racing commit removed an input (the
 * output object is deleted; try again), else as tm_merge, tb_commit_run.
 * -ENOMEM with a sentence when the merge crossed s->mem's limit. */
int tm_run(tb_table *t, const tm_settings *s, bool final, tm_result *res, char *err, size_t errlen);

#endif /* RINGCACHE_TABLE_MERGE_H */
