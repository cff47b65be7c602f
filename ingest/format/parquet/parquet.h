/* SPDX-License-Identifier: Apache-2.0
 *
 * parquet.h: the native Parquet reader (and, at the end, a writer). Opens a file through a byte-range
 * source (rangesrc.h) with one speculative tail read for the footer, decodes
 * the Thrift footer by hand, maps the schema's flat fields (OPTIONAL and REQUIRED
 * leaves) and LISTs of them (CB_LIST) to engine types (colbatch.h; other nested
 * fields, MAP and groups, are listed but refused by name when read, so a file's
 * other columns stay readable), prunes row groups by min_value/max_value statistics for the
 * predicates a caller passes down, and reads only the requested column chunks,
 * by byte range, with nearby ranges coalesced and all ranges of a row group in
 * flight at once. Output: one cb_batch per row group.
 *
 * Supported: data pages v1 and v2, dictionary pages; encodings PLAIN,
 * RLE/bit-packed hybrid, BIT_PACKED (levels), PLAIN_DICTIONARY, RLE_DICTIONARY,
 * DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY,
 * BYTE_STREAM_SPLIT; codecs UNCOMPRESSED, SNAPPY, GZIP (multi-member), ZSTD,
 * LZ4_RAW and Hadoop-framed LZ4; BOOLEAN, INT32/INT64 of every logical width
 * signed and unsigned, FLOAT, DOUBLE, FLOAT16, BYTE_ARRAY and
 * FIXED_LEN_BYTE_ARRAY (strings by LogicalType or ConvertedType, binaries,
 * decimals), DATE, TIME, TIMESTAMP (ms, us, ns), INT96 (as ns timestamps),
 * DECIMAL (INT32, INT64, FLBA, BYTE_ARRAY; up to 38 digits).
 *
 * Errors: every function returns >= 0 or -errno; a failed pq_file_open() writes
 * a sentence naming the file (and column, row group, page) and what is wrong
 * into err; a failed reader call leaves it in pq_reader_error(). -EBADMSG means
 * malformed Parquet, -ENOTSUP a valid file using something this reader does not
 * decode; errors of the source (-ESTALE above all) pass through unchanged.
 *
 * Thread-safety: a pq_file is immutable after pq_file_open(); any number of
 * threads may call the pq_file_* accessors and create readers on it at once
 * (the source must then be thread-safe, as rangesrc.h's are). A pq_reader
 * belongs to one thread at a time. Batches returned are independent of the
 * reader (they may outlive it and move between threads).
 */
#ifndef RINGCACHE_PARQUET_H
#define RINGCACHE_PARQUET_H

#include "colbatch.h"
#include "rangesrc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PQ_MSG_MAX 512

typedef struct pq_file pq_file;
typedef struct pq_reader pq_reader;

/* Parquet physical types (parquet.thrift `Type`). */
typedef enum pq_physical {
    PQ_BOOLEAN = 0,
    PQ_INT32 = 1,
    PQ_INT64 = 2,
    PQ_INT96 = 3,
    PQ_FLOAT = 4,
    PQ_DOUBLE = 5,
    PQ_BYTE_ARRAY = 6,
    PQ_FIXED_LEN_BYTE_ARRAY = 7,
} pq_physical;

/* A top-level field of the schema. A nested one (LIST, MAP, group, repeated
 * field) is listed with `nested` saying what it is; it cannot be read (the
 * reader refuses it by name), but the file's other columns can. */
typedef struct pq_column_info {
    const char *name; /* borrowed from the file */
    cb_typeinfo type; /* what batches carry (zero when nested) */
    pq_physical physical;
    int32_t type_length; /* FIXED_LEN_BYTE_ARRAY width */
    bool nullable;       /* OPTIONAL */
    const char *nested;  /* NULL, or "a Parquet MAP (a Map)", ... (static) */
    int leaf, n_leaves;  /* its column chunks in a row group */
    /* a LIST of a primitive (type CB_LIST; physical and type_length are the
     * element's): the definition level from which an entry is an element
     * (below it the list is empty, or NULL, which reads as empty as in
     * ClickHouse) and the element's own maximum */
    uint8_t def_elem, max_def;
} pq_column_info;

typedef struct pq_open_opts {
    uint64_t footer_read; /* speculative tail read; 0: 512 KiB */
    uint64_t max_footer;  /* refuse larger footers; 0: 256 MiB */
} pq_open_opts;

/* Opens a Parquet file on `src` (borrowed; it must outlive the pq_file).
 * Reads the tail (one range; a second one only when the footer is larger than
 * the tail read), checks the magic, decodes the footer and the schema. opts may
 * be NULL. Returns 0, -EBADMSG (malformed), -ENOTSUP (nested schema, unknown
 * physical type), -ENOMEM, or an error of the source; err (may be NULL) gets a
 * sentence naming the file. */
int pq_file_open(pq_file **out, rs_source *src, const pq_open_opts *opts, char *err, size_t errlen);
void pq_file_destroy(pq_file **f);

const char *pq_file_name(const pq_file *f);
int64_t pq_file_num_rows(const pq_file *f);
int pq_file_num_row_groups(const pq_file *f);
int64_t pq_file_row_group_rows(const pq_file *f, int rg);
int pq_file_num_columns(const pq_file *f);
const pq_column_info *pq_file_column(const pq_file *f, int col);
/* Index of the column named `name` (exact match), or -ENOENT. */
int pq_file_find_column(const pq_file *f, const char *name);
const char *pq_file_created_by(const pq_file *f); /* "" when absent */

/* Statistics of one column chunk, as engine values. A bound is present only
 * when the writer gave a trustworthy one: min_value/max_value, or the legacy
 * min/max only for signed integers, floats, dates and timestamps (legacy
 * string and unsigned bounds are in signed byte order and ignored). */
typedef struct pq_value {
    int64_t i;            /* ints, bool, date, time, timestamp, decimal <= 18 digits */
    uint64_t u;           /* unsigned ints */
    double d;             /* float, double */
    cb_i128 i128;         /* decimal 19..38 digits */
    const uint8_t *bytes; /* strings, binaries (borrowed) */
    size_t len;
} pq_value;

typedef struct pq_stats {
    bool has_min, has_max, has_null_count;
    pq_value min, max; /* borrowed from the file */
    int64_t null_count;
    int64_t num_values; /* values in the chunk, nulls included */
} pq_stats;
/* 0, or -ERANGE for a bad index. */
int pq_file_stats(const pq_file *f, int rg, int col, pq_stats *out);

/* A predicate on one column for row-group pruning: `column OP value`, where
 * value is in the column's engine type (pq_value field as in pq_stats). A row
 * group is skipped only when its statistics prove no row can match. */
typedef enum pq_op { PQ_EQ, PQ_LT, PQ_LE, PQ_GT, PQ_GE, PQ_IS_NULL, PQ_NOT_NULL } pq_op;
typedef struct pq_pred {
    int column;
    pq_op op;
    pq_value value; /* borrowed until pq_reader_create returns */
} pq_pred;

/* Whether row group rg may hold rows matching ALL of preds (1) or certainly
 * holds none (0); -ERANGE for a bad column or row group. */
int pq_file_row_group_may_match(const pq_file *f, int rg, const pq_pred *preds, size_t n);

typedef struct pq_read_opts {
    const int *columns; /* leaf indices to read, in batch order; NULL: all */
    size_t n_columns;
    const pq_pred *preds; /* for pruning; may be NULL */
    size_t n_preds;
    int rg_begin, rg_end;    /* row-group window [begin, end); both 0: all (for
                                splitting a file across threads) */
    uint64_t coalesce_gap;   /* merge ranges with gaps up to this; 0: 1 MiB */
    uint64_t coalesce_max;   /* never merge past this size; 0: 64 MiB */
    bool keep_dictionary;    /* string columns stay dictionary-encoded when every
                                page of a chunk is (default true through
                                pq_read_opts_init); false: always plain */
    uint64_t max_page_bytes; /* refuse pages that inflate past this; 0: 1 GiB */
    /* Where the bytes of a row group come from; NULL: the file's source, into
     * a buffer the reader keeps. See pq_fetch_fn. */
    struct pq_fetcher *fetcher;
} pq_read_opts;

/* Supplies the bytes of the coalesced ranges of row group rg (as
 * pq_row_group_ranges computes them, bufs NULL) in place of the source: sets
 * every ranges[i].buf to ranges[i].length bytes of the file at
 * ranges[i].offset that stay valid until pq_reader_next returns (bytes fetched
 * ahead, or the hook's own buffer filled with rs_read_ranges). Returns 0 or
 * -errno with a sentence in err; -ESTALE passes through unchanged. Called on
 * the reader's thread. */
typedef int (*pq_fetch_fn)(void *arg, const pq_file *f, int rg, rs_range *ranges, size_t n,
                           char *err, size_t errlen);
typedef struct pq_fetcher {
    pq_fetch_fn fetch;
    void *arg;
} pq_fetcher;

/* The ranges pq_reader_next reads for row group rg and the leaf columns cols
 * (n_cols of them), sorted and coalesced with gap and max as in pq_read_opts
 * (0: the defaults), bufs NULL: *out is malloc'ed (*n may be 0), *total their
 * byte count. For a prefetcher that must ask for exactly what the reader will.
 * 0, -ERANGE (bad row group or column), -EBADMSG (a chunk outside the file;
 * err names it), -ENOMEM. */
int pq_row_group_ranges(const pq_file *f, int rg, const int *cols, size_t n_cols, uint64_t gap,
                        uint64_t max, rs_range **out, size_t *n, uint64_t *total, char *err,
                        size_t errlen);
void pq_read_opts_init(pq_read_opts *o);

/* Creates a reader (opts may be NULL: all columns, all row groups). Returns
 * 0, -ERANGE (a column index out of range; err filled), or -ENOMEM. */
int pq_reader_create(pq_reader **out, pq_file *f, const pq_read_opts *opts, char *err,
                     size_t errlen);
void pq_reader_destroy(pq_reader **r);

/* The next row group that survived pruning, as a batch of the requested
 * columns (the caller owns it: cb_batch_destroy). Returns 1 with *out set, 0
 * at the end (*out NULL), or -errno (message in pq_reader_error). */
int pq_reader_next(pq_reader *r, cb_batch **out);
/* Index of the row group the last batch came from (-1 before the first). */
int pq_reader_row_group(const pq_reader *r);
const char *pq_reader_error(const pq_reader *r);
/* The bytes of the buffers a reader keeps between batches (decoding scratch,
 * fetched ranges), for a query's memory tracker. */
size_t pq_reader_mem(const pq_reader *r);

/* Counters of one reader. */
typedef struct pq_reader_stats {
    uint64_t row_groups_read, row_groups_pruned;
    uint64_t ranges_requested; /* column chunks asked for */
    uint64_t ranges_fetched;   /* after coalescing */
    uint64_t bytes_fetched;
} pq_reader_stats;
void pq_reader_stats_get(const pq_reader *r, pq_reader_stats *out);

/* ---- writing (pq_writer.c) ----------------------------------------------------- */

/* The writer: REQUIRED and OPTIONAL columns and lists of them, PLAIN values in
 * ZSTD data pages v1, one row group per pq_writer_row_group call, and the
 * footer at pq_writer_finish; the bytes go out in order through a write
 * callback (a stream: nothing is sought back). A writer belongs to one thread. */
typedef struct pq_writer pq_writer;
/* Takes all of buf or fails: 0 or -errno. */
typedef int (*pq_write_fn)(void *arg, const void *buf, size_t len);
typedef struct pq_wcol {
    const char *name;
    cb_typeinfo type; /* any but CB_TIME; timestamps with a unit */
    bool nullable;    /* OPTIONAL (definition levels), else REQUIRED */
    /* A list column (ClickHouse's Array(T)): a REQUIRED group `name` (LIST)
     * of a repeated group `list` of `element`, whose type is `type`,
     * OPTIONAL when nullable. Its rows are lists of elements. */
    bool list;
} pq_wcol;
/* Rows of one column: values as in a cb_column of its type (cb_type_width
 * bytes each; a NULL row's slot is ignored), offsets/data for strings and
 * binaries, valid one byte per row (0: NULL) or NULL when none is NULL.
 * A list column describes its elements so, and lists[r] .. lists[r + 1]
 * are the elements of row r (n + 1 entries, lists[0] == 0). */
typedef struct pq_wdata {
    const void *values;
    const uint32_t *offsets;
    const uint8_t *data;
    const uint8_t *valid;
    const uint32_t *lists;
} pq_wdata;

/* Writes the magic. 0, -ENOTSUP (a type it does not write; err names the
 * column), -ENOMEM, or the callback's error. */
int pq_writer_create(pq_writer **out, const pq_wcol *cols, int n_cols, pq_write_fn fn, void *arg,
                     char *err, size_t errlen);
/* One row group of n rows (n_cols pq_wdata). 0 or -errno with err filled. */
int pq_writer_row_group(pq_writer *w, const pq_wdata *cols, uint32_t n, char *err, size_t errlen);
/* The footer. 0 or -errno with err filled. */
int pq_writer_finish(pq_writer *w, char *err, size_t errlen);
void pq_writer_destroy(pq_writer **w);

#endif /* RINGCACHE_PARQUET_H */
