/* SPDX-License-Identifier: Apache-2.0
 *
 * colbatch.h: the columnar batch, the one in-memory shape of data inside the
 * engine. Every reader (Parquet, CSV, NDJSON, table parts) produces cb_batch
 * objects; every operator (filter, aggregate, sort, insert) consumes them. A
 * batch is a set of equally long columns; a column is one logical type with a
 * flat buffer of values, an optional validity bitmap and, for strings and
 * binaries, either offsets into a byte buffer or a shared dictionary plus one
 * index per row (so a GROUP BY can hash small integers instead of strings, and
 * a part writer can store the dictionary once).
 *
 * Thread-safety: a cb_column or cb_batch is not synchronised; one thread at a
 * time mutates it. Once built, a column is read-only by convention, and any
 * number of threads may read it at once. cb_column_ref()/cb_column_unref() are
 * atomic, so a dictionary (itself a cb_column) may be shared by columns that
 * live on different threads. cb_type_name() and the other pure helpers are
 * reentrant.
 *
 * Ownership:
 *  - cb_column_create() returns a column with a reference count of 1;
 *    cb_column_unref() frees it (and its buffers) when the count drops to 0.
 *    cb_column_destroy(&c) is cb_column_unref() plus setting the pointer to NULL.
 *  - A column owns every buffer it points to (values, validity, offsets, data,
 *    indices) and holds one reference on its dictionary.
 *  - A cb_batch owns one reference on each of its columns; cb_batch_destroy()
 *    drops them. Taking a column out of a batch for longer: cb_column_ref() it.
 *
 * Memory layout of one column of n rows:
 *
 *   validity  [ceil(n/8) bytes] bit i (LSB first) set = row i is not null;
 *             NULL when the column has no null at all (null_count == 0)
 *   fixed-width types:
 *     values  [n * cb_type_width(type)] little-endian machine values; the
 *             bytes at a null row are zero
 *   CB_STRING / CB_BINARY, plain (dict == NULL):
 *     offsets [n + 1] uint32; row i is data[offsets[i] .. offsets[i+1]);
 *             a null row is empty; offsets[0] == 0
 *     data    [offsets[n]] bytes
 *   CB_STRING / CB_BINARY, dictionary-encoded (dict != NULL):
 *     dict    a plain CB_STRING/CB_BINARY column without nulls (shared)
 *     indices [n] uint32, each < dict->n; 0 at a null row
 */
#ifndef RINGCACHE_COLBATCH_H
#define RINGCACHE_COLBATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Logical types. The storage of each is fixed (see cb_type_width). */
typedef enum cb_type {
    CB_BOOL = 1,  /* uint8_t, 0 or 1 */
    CB_INT8,      /* int8_t */
    CB_INT16,     /* int16_t */
    CB_INT32,     /* int32_t */
    CB_INT64,     /* int64_t */
    CB_UINT8,     /* uint8_t */
    CB_UINT16,    /* uint16_t */
    CB_UINT32,    /* uint32_t */
    CB_UINT64,    /* uint64_t */
    CB_FLOAT,     /* float */
    CB_DOUBLE,    /* double */
    CB_DATE,      /* int32_t days since 1970-01-01 */
    CB_TIME,      /* int64_t since midnight, in info.unit */
    CB_TIMESTAMP, /* int64_t since 1970-01-01 00:00:00, in info.unit */
    CB_DECIMAL,   /* int64_t (precision <= 18) or cb_i128 (19..38), scaled by 10^scale */
    CB_STRING,    /* UTF-8 bytes (not validated), offsets or dictionary */
    CB_BINARY,    /* bytes, offsets or dictionary */
    CB_LIST,      /* an Array per row: its elements encoded as eng_types.h's ex_arr_*
                   * in plain offsets + data; the element type is info.elem (with
                   * unit, utc, precision and scale), Nullable when elem_null */
} cb_type;

/* Unit of CB_TIME and CB_TIMESTAMP. */
typedef enum cb_unit {
    CB_UNIT_NONE = 0,
    CB_UNIT_MS = 1,
    CB_UNIT_US = 2,
    CB_UNIT_NS = 3,
} cb_unit;

/* A 128-bit two's-complement integer (wide decimals), little-endian halves. */
typedef struct cb_i128 {
    uint64_t lo;
    int64_t hi;
} cb_i128;

/* A type with its parameters. Zero-initialise, then set what applies. */
typedef struct cb_typeinfo {
    cb_type type;
    cb_unit unit;      /* CB_TIME, CB_TIMESTAMP */
    bool utc;          /* CB_TIME, CB_TIMESTAMP: adjusted to UTC */
    uint8_t precision; /* CB_DECIMAL: 1..38 */
    uint8_t scale;     /* CB_DECIMAL: 0..precision */
    cb_type elem;      /* CB_LIST: the element's type (never CB_LIST) */
    bool elem_null;    /* CB_LIST: the elements may be NULL */
} cb_typeinfo;

typedef struct cb_column cb_column;
struct cb_column {
    cb_typeinfo info;
    char *name; /* owned; may be NULL (dictionaries, temporaries) */
    uint32_t n; /* rows */
    uint32_t null_count;
    uint8_t *validity; /* NULL when null_count == 0 */
    void *values;      /* fixed-width types */
    uint32_t *offsets; /* plain strings/binaries: n + 1 entries */
    uint8_t *data;     /* plain strings/binaries: offsets[n] bytes */
    size_t data_cap;   /* allocated size of data (builders grow it) */
    cb_column *dict;   /* dictionary-encoded strings/binaries: one reference */
    uint32_t *indices; /* dictionary-encoded: n entries */
    atomic_uint refs;
};

typedef struct cb_batch {
    uint32_t n_rows;
    uint32_t n_cols;
    cb_column **cols; /* n_cols references, each with n == n_rows */
} cb_batch;

/* Bytes per value in `values` for a fixed-width type; 0 for CB_STRING,
 * CB_BINARY and CB_LIST. A CB_DECIMAL is 8 bytes up to precision 18, else 16. */
size_t cb_type_width(const cb_typeinfo *info);

/* "int64", "string", "timestamp", ... (static storage). */
const char *cb_type_name(cb_type t);

/* Creates an empty column of n rows of `info`, named `name` (copied; may be
 * NULL). Fixed-width types get zeroed values; strings/binaries get n + 1 zero
 * offsets and no data. No validity bitmap (call cb_column_alloc_validity).
 * Returns 0, -EINVAL (unknown type, bad decimal precision) or -ENOMEM; *out is
 * NULL on error. */
int cb_column_create(cb_column **out, const cb_typeinfo *info, const char *name, uint32_t n);

/* Gives a column a validity bitmap with every row valid. 0 or -ENOMEM. */
int cb_column_alloc_validity(cb_column *c);

/* Makes sure data can hold `need` bytes (grows geometrically). 0, -E2BIG past
 * UINT32_MAX bytes (offsets are 32-bit), or -ENOMEM. */
int cb_column_reserve_data(cb_column *c, size_t need);

/* Reference counting (atomic). unref of NULL does nothing. */
cb_column *cb_column_ref(cb_column *c);
void cb_column_unref(cb_column *c);
/* cb_column_unref(*c), then *c = NULL. Accepts NULL and *c == NULL. */
void cb_column_destroy(cb_column **c);

static inline bool cb_column_is_null(const cb_column *c, uint32_t row)
{
    return c->validity && !(c->validity[row >> 3] & (1u << (row & 7)));
}

/* Bytes of row `row` of a string/binary column, plain or dictionary-encoded
 * (borrowed from the column; NULL with *len 0 at a null row). */
const uint8_t *cb_column_bytes(const cb_column *c, uint32_t row, size_t *len);

/* Replaces the dictionary + indices of a string/binary column by plain offsets
 * and data (for consumers that want one shape). Does nothing to a plain column.
 * 0, -E2BIG or -ENOMEM (the column is unchanged on error). */
int cb_column_materialize(cb_column *c);

/* Creates a batch of n_cols columns, all NULL, for n_rows rows. 0 or -ENOMEM. */
int cb_batch_create(cb_batch **out, uint32_t n_rows, uint32_t n_cols);
/* Drops the batch's column references and frees it; sets *b to NULL. Accepts
 * NULL. */
void cb_batch_destroy(cb_batch **b);

/* The memory a batch's buffers take (their heap chunks, dictionaries
 * included once per column that holds one), for a query's memory tracker. */
size_t cb_batch_mem(const cb_batch *b);

#endif /* RINGCACHE_COLBATCH_H */
