/* SPDX-License-Identifier: Apache-2.0
 *
 * part.h: the data part of a table, ONE immutable object holding a sorted run
 * of rows: every column's stream of checksummed compressed blocks cut at
 * granule boundaries, the marks that find a granule inside each stream, the
 * sparse primary index, min/max of the partition columns, and a footer with
 * the directory of it all, written last. The writer takes cb_batch objects
 * (sorted by the ORDER BY key, or sorts them itself) and hands the object's
 * bytes to a callback in order, so a big part streams to S3 in bounded memory;
 * the reader fetches the footer with one tail read, then only the blocks of
 * the columns and granules asked for, and decodes them into cb_batch columns.
 * tp_prune() turns a condition on the key into the granule ranges that may
 * match.
 *
 * Layout (little-endian throughout; every offset is from the object's start):
 *
 *   0        +------------------------------------------------------------+
 *            | head: "RCPART\r\n" (8) | u32 format version = 1 | u32 0      |
 *   16       +------------------------------------------------------------+
 *            | stripe 0: col 0 blocks | col 1 blocks | ... | col n-1 blocks |
 *            | stripe 1: col 0 blocks | col 1 blocks | ...                 |
 *            | ...   (a block: codec output of one encoded run of rows)     |
 *   F        +------------------------------------------------------------+
 *            | footer (footer_len bytes)                                   |
 *            |  u64 rows | u32 granularity | u32 granules | u32 columns      |
 *            |  u32 key columns | u32 partition (min/max) columns | u32 0     |
 *            |  per column:                                                 |
 *            |    u16 name length, name | u8 type, unit, utc, precision,    |
 *            |    scale, nullable, codec, codec level | u32 blocks           |
 *            |    block[blocks]: u64 offset | u32 compressed | u32 raw       |
 *            |                   u32 rows | u8 codec | u8 encoding | u16 0  |
 *            |                   u64 XXH3-64 of the compressed bytes        |
 *            |    mark[granules]: u32 block | u32 row inside that block      |
 *            |  u16 key column[key columns]                                 |
 *            |  per key column: granules + 1 values (the first row of each  |
 *            |    granule, then the part's last row)                        |
 *            |  per partition column: u16 column, min value, max value      |
 *            |  (a value: fixed-width bytes, or u32 length + bytes)         |
 *   F+len    +------------------------------------------------------------+
 *            | tail: u32 footer_len | u32 format version = 1 |              |
 *            |       u64 XXH3-64 of the footer | "RCPEND\r\n" (8)           |
 *   size     +------------------------------------------------------------+
 *
 * A granule is index_granularity rows (the last may be shorter). A block
 * holds the rows of one column from one granule boundary on, and is cut at
 * the first granule boundary past min_block_bytes of encoded data, or inside
 * a granule at max_block_bytes (so a granule of long strings spans several
 * blocks): a mark is therefore (block, row inside the block), the row form of
 * ClickHouse's "offset inside the decompressed block", which keeps every
 * block decodable on its own. An encoded block is:
 *
 *   u8 has_nulls | [validity bitmap, ceil(rows/8), bit set = not null]
 *   encoding 0 (fixed width): rows x width values
 *   encoding 1 (plain bytes): u32 length[rows] | the bytes
 *   encoding 2 (dictionary):  u32 entries | u32 length[entries] | the bytes |
 *                             u8 index width (1, 2 or 4) | index[rows]
 *
 * Strings take a dictionary per block when it is smaller than plain by a
 * quarter. Blocks of all columns are held back until stripe_bytes of them are
 * compressed, then written column by column, so a column's blocks lie in long
 * contiguous runs (one ranged read each) while the writer's memory stays
 * bounded. A block whose codec output is not smaller than its input is stored
 * with codec none. The footer is written last, so a torn upload has no valid
 * tail; its checksum and every block's are verified before use.
 *
 * Thread-safety: a tp_writer is used by one thread at a time. A tp_reader is
 * immutable after tp_reader_open(): tp_reader_read() and tp_prune() may be
 * called from any number of threads at once (the range source must allow it,
 * as every rangesrc.h source does). Nothing here has globals.
 *
 * Errors: -errno with a sentence in err (err may be NULL; errlen 0 then):
 * -EINVAL for a bad argument or input that does not fit the columns (named,
 * with the row), -EBADMSG for a damaged part (the sentence names the part,
 * the column and the block), -ENOMEM, -E2BIG past the format's limits, and
 * whatever the write callback or the range source returned.
 */
#ifndef RINGCACHE_TABLE_PART_H
#define RINGCACHE_TABLE_PART_H

#include "colbatch.h"
#include "rangesrc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TP_FORMAT_VERSION      1
#define TP_DEFAULT_GRANULARITY 8192
#define TP_DEFAULT_MIN_BLOCK   (64u << 10)
#define TP_DEFAULT_MAX_BLOCK   (1u << 20)
#define TP_DEFAULT_STRIPE      (8u << 20)
#define TP_TAIL_SIZE           24
#define TP_MAX_COLUMNS         4096

typedef enum tp_codec {
    TP_CODEC_NONE = 0,
    TP_CODEC_LZ4 = 1,  /* the default */
    TP_CODEC_ZSTD = 2, /* level in tp_column_def.level (0: 1) */
} tp_codec;

/* One column of a part. name is borrowed for the call it is passed to. */
typedef struct tp_column_def {
    const char *name;
    cb_typeinfo info;
    bool nullable;
    tp_codec codec;
    int level;
} tp_column_def;

/* ------------------------------------------------------------------------ */
/* Writer                                                                    */
/* ------------------------------------------------------------------------ */

/* The object's bytes, in order. Returns 0 or -errno (which stops the writer
 * and comes back from the call that wrote). */
typedef int (*tp_write_fn)(void *arg, const void *data, size_t len);

typedef struct tp_writer_opts {
    const char *part_name;     /* for messages; copied */
    const tp_column_def *cols; /* copied */
    uint32_t n_cols;
    const uint32_t *key_cols; /* ORDER BY, as indices into cols; copied */
    uint32_t n_key;
    const uint32_t *minmax_cols; /* partition columns (min/max kept); copied */
    uint32_t n_minmax;
    uint32_t index_granularity; /* 0: 8192 */
    size_t min_block_bytes;     /* 0: 64 KiB */
    size_t max_block_bytes;     /* 0: 1 MiB */
    size_t stripe_bytes;        /* 0: 8 MiB; SIZE_MAX: one run per column */
    bool input_sorted;          /* batches come in key order (checked); else
                                     the writer keeps them and sorts at finish */
    tp_write_fn write;          /* NULL: keep the object in memory */
    void *write_arg;
} tp_writer_opts;

/* What a finished part holds (for the commit log and system.parts). */
typedef struct tp_part_info {
    uint64_t rows;
    uint32_t granules;
    uint64_t bytes;              /* the object's size */
    uint64_t compressed_bytes;   /* of all blocks */
    uint64_t uncompressed_bytes; /* encoded, before the codec */
    uint8_t data_hash[16];       /* XXH3-128 over every encoded block: equal
                                     data with equal settings, equal hash */
} tp_part_info;

typedef struct tp_writer tp_writer;

/* Creates a writer. Key columns must not be nullable; every type of
 * colbatch.h is accepted. 0, -EINVAL or -ENOMEM (err says which column). The
 * head is handed to write at the first tp_writer_add() or at finish. */
int tp_writer_create(tp_writer **out, const tp_writer_opts *o, char *err, size_t errlen);

/* Adds rows. b's columns match opts.cols by position (same type, unit,
 * precision and scale; strings may be plain or dictionary-encoded); b is
 * borrowed for the call. A NULL in a column that is not nullable, or (with
 * input_sorted) a row before the previous one in key order, is -EINVAL naming
 * the column and the row; the writer is unusable after any error. */
int tp_writer_add(tp_writer *w, const cb_batch *b, char *err, size_t errlen);

/* Flushes everything and writes the footer and tail. With write == NULL,
 * *buf and *len receive the object (malloc'd; the caller frees it); else they may
 * be NULL. info may be NULL. A part of zero rows is -EINVAL. */
int tp_writer_finish(tp_writer *w, tp_part_info *info, void **buf, size_t *len, char *err,
                     size_t errlen);

/* Bytes the writer holds now (buffers, pending blocks, index): for memory
 * accounting. */
size_t tp_writer_memory(const tp_writer *w);

/* Frees the writer (finished or not). Accepts NULL; sets *w to NULL. */
void tp_writer_destroy(tp_writer **w);

/* ------------------------------------------------------------------------ */
/* Reader                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct tp_reader tp_reader;

/* What the footer says (borrowed from the reader). */
typedef struct tp_part_meta {
    uint64_t rows;
    uint32_t granularity;
    uint32_t granules;
    uint32_t n_cols;
    const tp_column_def *cols; /* names owned by the reader */
    uint32_t n_key;
    const uint32_t *key_cols;
    const cb_column *const *index; /* per key column: granules + 1 values */
    uint32_t n_minmax;
    const uint32_t *minmax_cols;
    const cb_column *const *minmax; /* per partition column k: minmax[2k] (the min)
                                         and minmax[2k + 1] (the max), one value each,
                                         both NULL when the column held only NULLs */
} tp_part_meta;

/* Opens a part: one tail read of up to 64 KiB (and one more read when the
 * footer is larger), footer checksum and structure checked. src is borrowed
 * and must outlive the reader; part_name (copied) names the part in errors.
 * 0, -EBADMSG (not a part, damaged, truncated, a newer format version),
 * -ENOMEM, or the source's error. */
int tp_reader_open(tp_reader **out, rs_source *src, const char *part_name, char *err,
                   size_t errlen);

const tp_part_meta *tp_reader_meta(const tp_reader *r);

/* Rows of granules [g0, g1). */
uint64_t tp_reader_rows(const tp_reader *r, uint32_t g0, uint32_t g1);

/* Index of the column named `name`, or -ENOENT. */
int tp_reader_column(const tp_reader *r, const char *name);

/* Reads columns cols[0..n) (indices into the part's columns, any order,
 * repeats allowed) of granules [g0, g1) into a new batch of those columns in
 * that order (*out, the caller destroys it). Only the blocks those granules
 * touch are fetched, in one rs_read_ranges call, adjacent blocks of a column
 * in one range. A string column read from a single dictionary block comes out
 * dictionary-encoded, else plain. -EINVAL for a bad range or column, -EBADMSG
 * for a block whose checksum or encoding is wrong (naming part, column,
 * block), or the source's error. Thread-safe. */
int tp_reader_read(const tp_reader *r, const uint32_t *cols, uint32_t n, uint32_t g0, uint32_t g1,
                   cb_batch **out, char *err, size_t errlen);

/* For reading ahead: the byte ranges tp_reader_read() of the same columns
 * and granules would fetch, sorted by offset, with ranges that touch (a
 * column's run followed by the next column's in the same stripe) coalesced
 * into one. *ranges (bufs NULL) is the caller's to free; *total their bytes.
 * 0, -EINVAL or -ENOMEM. Thread-safe. */
int tp_reader_ranges(const tp_reader *r, const uint32_t *cols, uint32_t n, uint32_t g0, uint32_t g1,
                     rs_range **ranges, size_t *n_ranges, uint64_t *total, char *err,
                     size_t errlen);

/* tp_reader_read(), taking block bytes from pre[0..n_pre) (ranges sorted by
 * offset, their bufs filled: e.g. tp_reader_ranges() of a span of granules
 * holding [g0, g1), fetched ahead) where they hold them, and fetching only
 * the rest. The bytes are borrowed for the call; checksums are verified as
 * ever. pre NULL: tp_reader_read(). Thread-safe. */
int tp_reader_read_from(const tp_reader *r, const uint32_t *cols, uint32_t n, uint32_t g0,
                        uint32_t g1, const rs_range *pre, size_t n_pre, cb_batch **out, char *err,
                        size_t errlen);

/* Bytes the reader keeps (footer, marks, index). */
size_t tp_reader_memory(const tp_reader *r);

/* A range source over a buffer in memory (borrowed: it must outlive the
 * source), e.g. a part just written with write == NULL. Version "mem". */
int tp_mem_source_create(rs_source **out, const void *buf, size_t len, const char *name);

/* Frees the reader (not its source). Accepts NULL; sets *r to NULL. */
void tp_reader_destroy(tp_reader **r);

/* ------------------------------------------------------------------------ */
/* Primary-index pruning                                                     */
/* ------------------------------------------------------------------------ */

typedef enum tp_cond_op {
    TP_COND_AND = 1,
    TP_COND_OR,
    TP_COND_EQ, /* key = values[0] */
    TP_COND_IN, /* key IN values */
    TP_COND_LT, /* key < values[0] */
    TP_COND_LE,
    TP_COND_GT,
    TP_COND_GE,
} tp_cond_op;

/* A condition tree over the ORDER BY columns. A leaf names a key column by
 * its position in ORDER BY and borrows a column of literal values of that
 * column's type (no NULLs; strings plain or dictionary). AND/OR have kids. */
typedef struct tp_cond tp_cond;
struct tp_cond {
    tp_cond_op op;
    uint32_t key_pos;
    const cb_column *values;
    const tp_cond *const *kids;
    uint32_t n_kids;
};

typedef struct tp_granule_range {
    uint32_t begin, end; /* granules [begin, end) */
} tp_granule_range;

/* The granule ranges of the part that may hold a row matching c (sorted,
 * disjoint, merged; *out malloc'd, NULL with *n 0 when none may match).
 * Never leaves out a matching granule: a leaf on key column k narrows only
 * granules whose first k key columns are constant across the granule, as a
 * sorted key guarantees nothing more. c == NULL matches every granule.
 * 0, -EINVAL (bad tree, type mismatch, nesting over 64) or -ENOMEM. */
int tp_prune(const tp_reader *r, const tp_cond *c, tp_granule_range **out, size_t *n, char *err,
             size_t errlen);

/* The same on a bare index (for tests and for callers that keep indexes):
 * index[k] holds granules + 1 values of key column k. */
int tp_prune_index(const cb_column *const *index, uint32_t n_key, uint32_t granules,
                   const tp_cond *c, tp_granule_range **out, size_t *n, char *err, size_t errlen);

#endif /* RINGCACHE_TABLE_PART_H */
