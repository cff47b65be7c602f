/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_types.h: the engine's value layer (eng_types.c): the memory tracker
 * behind max_memory_usage (em_), engine types and vectors (ex_), the schema of
 * a source (eng_schema), value formatting as ClickHouse prints it, civil
 * dates, and the "did you mean" suggestion every name lookup uses.
 *
 * Thread-safety: the memory tracker is atomic and shared by every thread of a
 * query; a vector belongs to one thread at a time (read-only vectors may be
 * read by many); every other function is reentrant.
 */
#ifndef RINGCACHE_ENG_TYPES_H
#define RINGCACHE_ENG_TYPES_H

#include "colbatch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The size of the engine's error sentences (err buffers). */
#define ENG_MSG_MAX 1024

/* ---- the first failure of several threads ---------------------------------- */

/* Where the threads of one query (or one phase of it) leave their error: the
 * first one stays, with its sentence. Thread-safe (a mutex); rc is also
 * readable without it once the threads have been joined. */
typedef struct eng_fail {
    pthread_mutex_t mu;
    _Atomic int rc; /* 0, or the first failure's -errno */
    char msg[ENG_MSG_MAX];
} eng_fail;

void eng_fail_init(eng_fail *f);
void eng_fail_deinit(eng_fail *f);
/* Keeps rc and msg when nothing failed before; true when it did keep them. */
bool eng_fail_set(eng_fail *f, int rc, const char *msg);

/* ---- memory --------------------------------------------------------------- */

typedef struct eng_mem eng_mem;
struct eng_mem {
    _Atomic int64_t cur, peak;
    int64_t limit;                /* 0: none */
    _Atomic int64_t failed_at;    /* the size of the allocation that crossed the limit */
    _Atomic int64_t failed_total; /* what the query would have reached with it */
    /* A tracker this one's bytes also count in (a server's, for
     * max_server_memory_usage; NULL: none). An allocation that would take the
     * parent over its limit fails here, in the query that asked for it. */
    eng_mem *parent;
    _Atomic int failed_parent; /* the failure was the parent's limit */
};

/* Allocations charged to the tracker for what they really take (a heap
 * block its chunk, a mapped block its pages): NULL when that would cross the
 * limit (failed_at, failed_total say by how much) or malloc fails. */
void *em_alloc(eng_mem *m, size_t n);
void *em_calloc(eng_mem *m, size_t n);
void *em_realloc(eng_mem *m, void *p, size_t n);
void em_free(eng_mem *m, void *p);
/* A growable array: em_realloc to n bytes, but a block of 1 MiB and more is
 * charged only for what em_use says is in use (its pages past that are
 * never written, so they are not memory); smaller ones are charged whole.
 * em_use raises the block's charge to its first `used` bytes (never lowers
 * it): false when that crosses the limit. The owner calls it before writing
 * past what it said before, in steps (each call is cheap, not free).
 * em_size is the block's size in bytes (0 for NULL). */
void *em_grow(eng_mem *m, void *p, size_t n);
bool em_use(eng_mem *m, void *p, size_t used);
size_t em_size(const void *p);
/* Accounts memory allocated elsewhere (Parquet batches): false when over. */
bool em_account(eng_mem *m, int64_t delta);
/* For optional memory (bytes fetched ahead): adds n when the query stays at
 * least keep_free below its limit (any n when keep_free < 0 or there is no
 * limit; a negative n always), without recording a failure: false when not. */
bool em_reserve(eng_mem *m, int64_t n, int64_t keep_free);
/* "memory limit (max_memory_usage) exceeded: ..." */
void em_error(eng_mem *m, char *err, size_t errlen);
/* An allocation failed: em_error's sentence when m's limit was crossed,
 * else "out of memory". Returns -ENOMEM. */
int em_oom(eng_mem *m, char *err, size_t errlen);

/* ---- types ---------------------------------------------------------------- */

typedef enum ex_kind {
    EX_NOTHING = 0, /* the type of NULL */
    EX_BOOL,        /* int64 storage, prints true/false */
    EX_INT,         /* int64 */
    EX_UINT,        /* uint64 in the int64 storage */
    EX_FLOAT,       /* double */
    EX_STRING,
    EX_DATE,     /* int64 days since 1970-01-01 */
    EX_DATETIME, /* int64 in 10^-scale seconds since the epoch (UTC) */
    EX_DECIMAL,  /* int64 scaled by 10^scale: Decimal(prec, scale), exact */
    EX_ARRAY,    /* Array(T): the string storage holding each row's elements
                  * encoded as below (ex_arr_*) */
} ex_kind;

typedef struct ex_type {
    uint8_t kind;
    bool nullable;
    uint8_t scale; /* EX_DATETIME: 0 DateTime, 3/6/9 DateTime64; EX_DECIMAL: 0..18 */
    uint8_t bits;  /* EX_INT/EX_UINT/EX_FLOAT: 8..64 for the name; Date32: 32 */
    bool utc;      /* DateTime64(s, 'UTC') */
    uint8_t prec;  /* EX_DECIMAL: 1..38 digits as named; values always fit 18 digits
                      * (int64), wider ones are refused with a sentence */
    /* EX_ARRAY: Array(...(Array(T))) `depth` deep (1 or 2); T is `elem` (an
     * ex_kind, never EX_ARRAY) with scale, bits, utc and prec above, and
     * Nullable(T) when enull. An Array is never Nullable itself (nullable is
     * false), as in ClickHouse. */
    uint8_t elem;
    uint8_t depth;
    bool enull;
} ex_type;

/* ClickHouse's name of a type: "Nullable(Int64)", "DateTime64(6)", ... */
void ex_type_name(const ex_type *t, char *buf, size_t cap);
/* Whether values of kind k live in the string storage (off/data or dict/idx). */
static inline bool ex_is_bytes(uint8_t k)
{
    return k == EX_STRING || k == EX_ARRAY;
}
static inline bool ex_is_num(uint8_t k)
{
    return k == EX_BOOL || k == EX_INT || k == EX_UINT || k == EX_FLOAT;
}

/* A vector of n values. Strings are plain (off[n+1] + data) or dictionary
 * (dict column + idx[n]). A constant vector has n == 1 and is_const. nulls is
 * a byte per row (1 = NULL; EX_NULL_ABSENT = NULL because the row did not
 * give the column at all, a JSONEachRow object without the key, which only
 * an INSERT's DEFAULT filling reads as such), or NULL when no row is null.
 * `own` says which buffers the vector frees (ex_vec_clear). */
#define EX_NULL_ABSENT 2

typedef struct ex_vec {
    ex_type t;
    uint32_t n;
    bool is_const;
    uint8_t own;
    int64_t *i;
    double *d;
    uint32_t *off;
    uint8_t *data;
    size_t data_cap;
    const cb_column *dict;
    uint32_t *idx;
    uint8_t *nulls;
} ex_vec;

enum { EXO_I = 1, EXO_D = 2, EXO_OFF = 4, EXO_DATA = 8, EXO_IDX = 16, EXO_NULLS = 32 };

void ex_vec_clear(eng_mem *m, ex_vec *v);
static inline uint32_t ex_row(const ex_vec *v, uint32_t r)
{
    return v->is_const ? 0 : r;
}
static inline bool ex_null(const ex_vec *v, uint32_t r)
{
    return v->t.kind == EX_NOTHING || (v->nulls && v->nulls[ex_row(v, r)]);
}
static inline const uint8_t *ex_str(const ex_vec *v, uint32_t r, uint32_t *len)
{
    r = ex_row(v, r);
    if (!v->dict && !v->off) { /* a NULL-typed vector: no strings, every row is NULL */
        *len = 0;
        return (const uint8_t *)"";
    }
    if (v->dict) {
        uint32_t k = v->idx[r];
        *len = v->dict->offsets[k + 1] - v->dict->offsets[k];
        return v->dict->data ? v->dict->data + v->dict->offsets[k] : (const uint8_t *)"";
    }
    *len = v->off[r + 1] - v->off[r];
    /* no data buffer: every string of the vector is empty */
    return v->data ? v->data + v->off[r] : (const uint8_t *)"";
}
static inline double ex_f(const ex_vec *v, uint32_t r)
{
    r = ex_row(v, r);
    if (!v->i && !v->d)
        return 0; /* a NULL-typed vector: no values, every row is NULL */
    if (v->t.kind == EX_FLOAT)
        return v->d[r];
    if (v->t.kind == EX_UINT)
        return (double)(uint64_t)v->i[r];
    if ((v->t.kind == EX_DATETIME || v->t.kind == EX_DECIMAL) && v->t.scale) {
        double s = 1;
        for (int k = 0; k < v->t.scale; k++)
            s *= 10;
        return (double)v->i[r] / s;
    }
    return (double)v->i[r];
}

/* Builders used by readers and operators. 0 or -ENOMEM. */
int ex_vec_alloc(eng_mem *m, ex_vec *v, ex_type t, uint32_t n);
int ex_vec_str_put(eng_mem *m, ex_vec *v, uint32_t r, const void *s, size_t len);
/* Makes a vector of n rows from a batch column (zero copy where the layout
 * matches; borrowed buffers stay the column's). */
int ex_vec_from_column(eng_mem *m, const cb_column *c, ex_vec *v);
/* *out views rows [off, off + n) of v: v's buffers, borrowed (v must outlive
 * it; clearing it frees nothing). A constant views itself. */
void ex_vec_view(const ex_vec *v, uint32_t off, uint32_t n, ex_vec *out);
ex_type ex_type_of_column(const cb_typeinfo *ti, bool nullable);
/* Formats one value as text the way ClickHouse's TSV does (unescaped; for
 * strings the bytes). Returns the length; buf >= 64 bytes for non-strings. */
size_t ex_fmt_value(const ex_vec *v, uint32_t r, char *buf, size_t cap, const uint8_t **sp);
size_t ex_fmt_double(double d, char *buf, size_t cap);

/* Decimals (ex_decimal.c): values are int64 scaled by 10^scale. */
int64_t ex_pow10(int k); /* 10^k for k in 0..18 */
ex_type ex_decimal_type(int prec, int scale, bool nullable);
/* 9, 18 or 38: the precision ClickHouse gives results of that storage width. */
int ex_decimal_width_prec(int prec);
/* As ClickHouse prints it: "-12.5" (no trailing zeros), "3". Returns the length. */
size_t ex_fmt_decimal(int64_t v, int scale, char *buf, size_t cap);
/* "-12.345" (spaces around allowed) scaled by 10^scale, excess fraction
 * digits truncated; false when it is not a number or needs more than 18 digits. */
bool ex_parse_decimal(const uint8_t *s, size_t n, int scale, int64_t *out);
/* v at scale `from` to scale `to`: truncated toward zero when to < from;
 * false when it overflows int64. */
bool ex_decimal_rescale(int64_t v, int from, int to, int64_t *out);
/* Whether |v| < 10^prec (always for prec >= 18, the storage's own limit). */
bool ex_decimal_fits(int64_t v, int prec);

/* Dates (UTC, proleptic Gregorian). */
int64_t ex_days_from_civil(int64_t y, unsigned m, unsigned d);
void ex_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d);
/* Parses 'YYYY-MM-DD' (whole string): days; 'YYYY-MM-DD hh:mm:ss[.fff...]':
 * value in 10^-scale s. true on success. */
bool ex_parse_date(const char *s, size_t n, int64_t *days);
bool ex_parse_datetime(const char *s, size_t n, int scale, int64_t *out, int *scale_seen);

/* Whole-string numbers (eng_types.c): an integer, spaces around allowed,
 * up to UInt64 (*neg_ok says it was negative, read as Int64); a float as
 * strtod reads it. false when the whole string is not one. */
bool ex_parse_int(const uint8_t *s, size_t n, int64_t *out, bool *neg_ok);
bool ex_parse_float(const uint8_t *s, size_t n, double *out);
/* v as a value of integer type t (EX_INT / EX_UINT of t->bits), wrapped as
 * ClickHouse's CAST does: CAST(300 AS UInt8) and CAST('300' AS UInt8) are
 * 44. Other types: v. */
int64_t ex_int_wrap(const ex_type *t, int64_t v);

/* ---- arrays (ex_array.c) ---------------------------------------------------- */

/* One row of an Array vector is its elements encoded (canonically: equal
 * arrays have equal bytes, so grouping, DISTINCT and hashing work on the
 * bytes as on strings):
 *
 *   u32 count | element ... (little-endian)
 *   element:  [u8 is_null: when the element type is Nullable]
 *             fixed types (ints, floats, dates, decimals): 8 bytes, the
 *               int64 or double of the scalar storage (0 when NULL)
 *             String, inner Array: u32 length | bytes (length 0 when NULL)
 */
/* The element type of Array type t. */
ex_type ex_arr_elem(const ex_type *t);
/* Array(e) (e a scalar or an Array of depth 1). */
ex_type ex_arr_of(ex_type e);

/* A growable byte buffer (an array's encoding, text). */
typedef struct ex_bytes {
    uint8_t *p;
    size_t n, cap;
} ex_bytes;
int ex_bytes_put(ex_bytes *b, const void *s, size_t n); /* 0 or -ENOMEM/-E2BIG */
void ex_bytes_free(ex_bytes *b);

/* Reading one encoded array: ex_arr_open, then ex_arr_next count times
 * (after the count, ex_arr_next returns false). A malformed encoding reads
 * as fewer elements. */
typedef struct ex_arr_it {
    const uint8_t *p, *end;
    ex_type et; /* the element type */
    uint32_t count, at;
} ex_arr_it;
typedef struct ex_arr_val {
    bool null;
    int64_t i; /* fixed types but floats */
    double d;  /* EX_FLOAT */
    const uint8_t *s; /* String, inner Array: its bytes */
    uint32_t len;
} ex_arr_val;
void ex_arr_open(ex_arr_it *it, const ex_type *arr, const uint8_t *p, uint32_t len);
bool ex_arr_next(ex_arr_it *it, ex_arr_val *v);
/* The count of an encoded array (0 when shorter than 4 bytes). */
uint32_t ex_arr_count(const uint8_t *p, uint32_t len);
/* Appending to an encoding: begin writes a zero count at b->n (remember it
 * as `at`), put one element each (of element type et), end writes the count. */
int ex_arr_begin(ex_bytes *b, size_t *at);
int ex_arr_put(ex_bytes *b, const ex_type *et, const ex_arr_val *v);
void ex_arr_end(ex_bytes *b, size_t at, uint32_t count);
/* Row r of v (any scalar vector, or an Array one) as an element value
 * (borrowed from v). */
void ex_arr_val_of(const ex_vec *v, uint32_t r, ex_arr_val *out);

/* Three-way comparison of two encoded arrays of type arr as ClickHouse orders
 * arrays: element by element (NULL after values), a prefix first. */
int ex_arr_cmp(const ex_type *arr, const uint8_t *a, uint32_t la, const uint8_t *b, uint32_t lb);

/* The text of an array as ClickHouse prints it: [1,2], ['a','b'] with
 * strings, dates and times quoted and escaped (\' and \\), NULL, nested
 * arrays; json: as a JSON array (strings as JSON strings, 64-bit integers
 * quoted as output_format_json_quote_64bit_integers=1 does, nan and inf as
 * null). Appends to out: 0 or -ENOMEM. */
int ex_arr_text(const ex_type *arr, const uint8_t *p, uint32_t len, bool json, ex_bytes *out);
/* Row r of v as an Array of type `to` (one level deep), encoded into *out
 * (emptied first): from an Array of any element type that converts (numbers
 * to numbers, Decimals rescaled, anything to String) or from its text
 * ([1,2], ['a'], ["a"], NULL elements, ClickHouse's and JSON's escapes). 0;
 * -EINVAL with `why` (an element that does not convert, text that does not
 * parse: CANNOT_PARSE_TEXT, a NULL element of a non-Nullable one), -ENOMEM,
 * -E2BIG. tmp (tcap >= 64 bytes) holds an element formatted as text. */
int ex_arr_convert(const ex_vec *v, uint32_t r, const ex_type *to, ex_bytes *out, char *tmp,
                   size_t tcap, char *why, size_t wlen);

/* ---- schemas ---------------------------------------------------------------- */

/* The columns of a source: names and engine types (Parquet: the batch type
 * too). Owned by whoever fills it; eng_schema_free frees the names. */
typedef struct eng_schema eng_schema;
typedef struct eng_col {
    char *name;
    ex_type t;
    cb_typeinfo cb; /* Parquet: the batch type; text: unused */
    bool virt;      /* a virtual column (_path, _file, _size, _time): read by
                          * name only, never by SELECT * or DESCRIBE */
    const char *nested; /* NULL, or what a column the engine cannot read is
                          * ("a Parquet MAP (a Map)", static): naming it fails */
} eng_col;

struct eng_schema {
    eng_col *cols;
    int n;
    bool given; /* the query's structure argument, not the files': plain
                          * CSV and TSV then have no header row */
    bool mark_absent; /* JSONEachRow: a row without a column's key gets
                          * that NULL as EX_NULL_ABSENT, which an INSERT's
                          * DEFAULT tells apart from an explicit null */
};
void eng_schema_free(eng_schema *s);

/* ---- did you mean ----------------------------------------------------------- */
/* The candidate closest to name (Damerau-Levenshtein, case-insensitive),
 * or NULL when none is close. */
const char *eng_suggest(const char *name, const char *const *cands, int n);

#endif /* RINGCACHE_ENG_TYPES_H */
