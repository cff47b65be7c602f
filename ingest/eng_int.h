/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_int.h: internals shared by the engine's files (eng_*.c): the memory
 * tracker, engine types and vectors, bound expressions, the text readers and
 * the pieces of the plan.
 *
 * Plan shape (one struct per query, eng_plan, built by eng_bind.c):
 *
 *   eng_plan
 *    |- source     files (expanded glob), format, schema (eng_col[])
 *    |- scan       needed source columns, pq_pred[] for pruning
 *    |- where      bx tree over source columns (or NULL)
 *    |- keys[]     bx trees over source columns (GROUP BY)
 *    |- aggs[]     eng_agg: function + bx argument over source columns
 *    |- outs[]     bx trees over the post-aggregation block
 *    |             (columns: keys..., aggs...) or over source columns
 *    |- having     bx over the post-aggregation block
 *    |- order[]    bx over the same block as outs, + direction, nulls
 *    '- limit, offset, settings
 *
 * INSERT later: the same SELECT plan feeds a sink that cuts the result into
 * parts; the sink interface (eng_sink) is what the output formats implement
 * today.
 *
 * Thread-safety: a bound plan is read-only while workers run; each worker owns
 * its vectors, hash tables and result tables; the memory tracker is atomic.
 */
#ifndef RINGCACHE_ENG_INT_H
#define RINGCACHE_ENG_INT_H

#include "colbatch.h"
#include "eng.h"
#include "parquet.h"
#include "sql.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- memory --------------------------------------------------------------- */

typedef struct eng_mem {
    _Atomic int64_t cur, peak;
    int64_t limit;             /* 0: none */
    _Atomic int64_t failed_at; /* the size of the allocation that crossed the limit */
} eng_mem;

void *em_alloc(eng_mem *m, size_t n);
void *em_calloc(eng_mem *m, size_t n);
void *em_realloc(eng_mem *m, void *p, size_t n);
void em_free(eng_mem *m, void *p);
/* Accounts memory allocated elsewhere (Parquet batches): false when over. */
bool em_account(eng_mem *m, int64_t delta);
/* For optional memory (bytes fetched ahead): adds n when the query stays at
 * least keep_free below its limit (any n when keep_free < 0 or there is no
 * limit; a negative n always), without recording a failure: false when not. */
bool em_reserve(eng_mem *m, int64_t n, int64_t keep_free);
/* "memory limit (max_memory_usage) exceeded: ..." */
void em_error(eng_mem *m, char *err, size_t errlen);

/* ---- types ---------------------------------------------------------------- */

typedef enum ex_kind {
    EX_NOTHING = 0, /* the type of NULL */
    EX_BOOL,        /* int64 storage, prints true/false */
    EX_INT,         /* int64 */
    EX_UINT,        /* uint64 in the int64 storage */
    EX_FLOAT,       /* double */
    EX_STRING,
    EX_DATE,        /* int64 days since 1970-01-01 */
    EX_DATETIME,    /* int64 in 10^-scale seconds since the epoch (UTC) */
} ex_kind;

typedef struct ex_type {
    uint8_t kind;
    bool nullable;
    uint8_t scale;   /* EX_DATETIME: 0 DateTime, 3/6/9 DateTime64 */
    uint8_t bits;    /* EX_INT/EX_UINT/EX_FLOAT: 8..64 for the name; Date32: 32 */
    bool utc;        /* DateTime64(s, 'UTC') */
    bool decimal;    /* read from a decimal column (shown as Float64) */
} ex_type;

/* ClickHouse's name of a type: "Nullable(Int64)", "DateTime64(6)", ... */
void ex_type_name(const ex_type *t, char *buf, size_t cap);
static inline bool ex_is_num(uint8_t k)
{
    return k == EX_BOOL || k == EX_INT || k == EX_UINT || k == EX_FLOAT;
}

/* A vector of n values. Strings are plain (off[n+1] + data) or dictionary
 * (dict column + idx[n]). A constant vector has n == 1 and is_const. nulls is
 * a byte per row (1 = NULL), or NULL when no row is null. `own` says which
 * buffers the vector frees (ex_vec_clear). */
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
    if (v->t.kind == EX_DATETIME && v->t.scale) {
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
ex_type ex_type_of_column(const cb_typeinfo *ti, bool nullable);
/* Formats one value as text the way ClickHouse's TSV does (unescaped; for
 * strings the bytes). Returns the length; buf >= 64 bytes for non-strings. */
size_t ex_fmt_value(const ex_vec *v, uint32_t r, char *buf, size_t cap, const uint8_t **sp);
size_t ex_fmt_double(double d, char *buf, size_t cap);

/* Dates (UTC, proleptic Gregorian). */
int64_t ex_days_from_civil(int64_t y, unsigned m, unsigned d);
void ex_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d);
/* Parses 'YYYY-MM-DD' (whole string): days; 'YYYY-MM-DD hh:mm:ss[.fff...]':
 * value in 10^-scale s. true on success. */
bool ex_parse_date(const char *s, size_t n, int64_t *days);
bool ex_parse_datetime(const char *s, size_t n, int scale, int64_t *out, int *scale_seen);

/* ---- bound expressions ----------------------------------------------------- */

typedef enum bx_fn {
    F_ADD = 1, F_SUB, F_MUL, F_DIV, F_MOD, F_NEG,
    F_EQ, F_NE, F_LT, F_LE, F_GT, F_GE,
    F_AND, F_OR, F_NOT, F_IN, F_LIKE, F_ILIKE, F_ISNULL, F_ISNOTNULL,
    F_IF, F_MULTIIF, F_COALESCE, F_CAST,
    F_LENGTH, F_LOWER, F_UPPER, F_SUBSTRING, F_CONCAT, F_STARTSWITH, F_ENDSWITH, F_POSITION,
    F_TOYEAR, F_TOMONTH, F_TODATE, F_TOSTARTOFMONTH, F_TOSTARTOFDAY, F_DATEDIFF,
    F_ROUND, F_ABS,
} bx_fn;

typedef enum bx_op { BX_COL = 1, BX_CONST, BX_FUNC } bx_op;

typedef struct bx bx;
struct bx {
    bx_op op;
    ex_type t;
    bx_fn fn;
    int col;            /* BX_COL: index into the input vectors */
    ex_vec cval;        /* BX_CONST: a constant vector (n 1) */
    bool negated;       /* F_IN, F_LIKE */
    int unit;           /* F_DATEDIFF: 0 s,1 min,2 h,3 day,4 week,5 month,6 quarter,7 year */
    bx **a;
    int na;
    /* F_IN: the list, converted to the operand's type */
    int64_t *in_i;
    double *in_d;
    char **in_s;
    uint32_t *in_len;
    int n_in;
    bool in_has_null;
};

typedef struct ex_ectx {
    eng_mem *mem;
    char *err;
    size_t errlen;
} ex_ectx;

/* Evaluates e over n rows of the inputs (selected by sel when not NULL) into
 * out (a fresh vector of n rows, or a constant). 0 or -errno (err filled). */
int bx_eval(ex_ectx *c, const bx *e, const ex_vec *in, const uint32_t *sel, uint32_t n,
            ex_vec *out);
void bx_free(eng_mem *m, bx *e);
/* Fills sel with the rows where the boolean vector is true (not NULL, != 0);
 * returns their count. */
uint32_t bx_select(const ex_vec *b, const uint32_t *insel, uint32_t n, uint32_t *sel);

/* ---- aggregates ------------------------------------------------------------ */

typedef enum eng_agg_fn {
    AG_COUNT = 1, AG_SUM, AG_AVG, AG_MIN, AG_MAX, AG_UNIQ, AG_ANY,
} eng_agg_fn;

typedef struct eng_agg {
    eng_agg_fn fn;
    bx *arg;            /* NULL for count() */
    ex_type t;          /* result type */
    sql_node *node;     /* the AST it came from (for dedup) */
} eng_agg;

/* ---- text readers ----------------------------------------------------------- */

typedef enum tx_format {
    TX_CSV = 1, TX_CSV_NAMES, TX_TSV, TX_TSV_NAMES, TX_JSON_EACH_ROW,
} tx_format;

typedef struct eng_schema eng_schema;
void eng_schema_free(eng_schema *s);
/* Infers the schema from the first rows of text (up to 25000 rows, like
 * ClickHouse). name names the file in errors. 0, -EBADMSG (err: file, line,
 * what), -ENOMEM. */
int tx_infer(tx_format f, const char *name, const char *text, size_t len, eng_schema *out,
             char *err, size_t errlen);

/* Parses the whole text into batches of up to batch_rows rows, reading only
 * the columns `want` (indices into schema, -1 ends; NULL: all) into vectors
 * in `want` order, calling fn for each batch (the vectors are the callee's to
 * clear). 0, the callback's error, -EBADMSG (err: file, line, column, value),
 * -ENOMEM. */
typedef int (*tx_batch_fn)(ex_vec *cols, int ncols, uint32_t nrows, void *arg);
int tx_parse(eng_mem *m, tx_format f, const char *name, const char *text, size_t len,
             const eng_schema *s, const int *want, int nwant, uint32_t batch_rows,
             tx_batch_fn fn, void *arg, char *err, size_t errlen);

/* Decompresses by extension (.gz, .zst) or copies: *out malloc'ed. 0 or -errno. */
int tx_decompress(const char *name, const uint8_t *in, size_t len, uint8_t **out,
                  size_t *outlen, char *err, size_t errlen);

/* Format from a file name's extension (.parquet, .csv, .tsv, .ndjson/.jsonl/
 * .json), looking through .gz/.zst: 0 Parquet, TX_* for text, -ENOENT. */
int tx_format_of_name(const char *name);
/* From a ClickHouse format name ("Parquet", "CSVWithNames", ...): same codes. */
int tx_format_of_arg(const char *fmt);


/* ---- downloads ahead of the workers (eng_fetch.c) ---------------------------- */
/* Workers take work units in plan order (an atomic counter); the prefetcher's
 * download threads fetch the units after the one last taken, in the same
 * order, up to `window` units ahead of the workers (enough to hide a
 * request's latency; more would only hold memory) and while at most `budget`
 * bytes are in flight or waiting, each charged
 * to the query's memory (em_reserve, keeping half the limit free for the
 * workers: a prefetch never fails a query, it is simply not made). A job is
 * one unit, or several consecutive units whose bytes one request brings (a
 * small file read whole). A worker that reaches a unit either takes its bytes
 * (waiting while they are in flight) or, when no download has started it,
 * marks it its own and fetches it itself, so nothing waits for a budget held
 * by units behind it. Stop (LIMIT, an error, the end) lets requests in flight
 * finish, then frees everything not taken.
 *
 *   units:  0 1 2 | 3 4 5 6 | 7 8 ...
 *           taken | fetched or in flight (<= budget) | not yet
 *
 * Thread-safety: ef_take / ef_release / ef_stop from any worker; one mutex
 * and one condition variable. The ops run on download threads, with the
 * prefetcher's mutex held for `size` (keep it quick; it may take locks that
 * are never held around ef_* calls) and without it for `fetch`. */
typedef struct ef_blob {
    int rc;                 /* 0, or why the fetch failed (the worker fetches itself) */
    uint8_t *buf;           /* from ef_buf_get: the bytes */
    uint64_t bytes;         /* how many (what is charged to the query) */
    uint64_t cap;           /* size of buf */
    bool whole;             /* buf is the whole object: its byte k at buf[k] */
    rs_range *ranges;       /* !whole: the ranges fetched (buf pointing into buf) */
    size_t n;
    const void *tag;        /* what the ranges were planned on (the pq_file) */
    int refs;               /* units holding it (the prefetcher's) */
} ef_blob;

typedef struct ef ef;
typedef struct ef_ops {
    /* Bytes the job starting at unit u would fetch and, in *span (>= 1,
     * preset 1), how many units from u it covers; allow_span false asks for u
     * alone. < 0: do not prefetch u. */
    int64_t (*size)(void *arg, int u, bool allow_span, int *span);
    /* Fetches that job into b (buf from ef_buf_get(p, ...), bytes, whole or
     * ranges, tag; rc on failure, buf then NULL). */
    void (*fetch)(void *arg, ef *p, int u, int span, ef_blob *b);
} ef_ops;

/* threads download threads (capped at 64), fetching at most `window` units
 * past the furthest one a worker has taken, and at most `budget` bytes; 0
 * threads, window or budget: *out NULL (every ef_* call accepts NULL). 0 or
 * -ENOMEM. */
int ef_create(ef **out, const ef_ops *ops, void *arg, int n_units, int threads, int window,
              uint64_t budget, eng_mem *mem);
/* 1: *b holds unit u's bytes (ef_release it when done); 0: no download
 * started it and none will: fetch it yourself. Waits while it is in flight. */
int ef_take(ef *p, int u, ef_blob **b);
void ef_release(ef *p, ef_blob **b);
void ef_stop(ef *p);
/* Stops, joins the download threads, frees what no worker took. */
void ef_destroy(ef **p);
/* Buffers of blobs: mapped, not malloc'ed (through malloc they would stay in
 * the download threads' arenas, about 10 MiB of peak RSS on the seed query),
 * and kept in a small pool for the next job (a fresh mapping costs a page
 * fault and a zeroed page per 4 KiB or 2 MiB, several percent of the seed
 * query's time). ef_buf_get: a buffer of at least n bytes (*cap its size), or
 * NULL when out of memory; ef_buf_put returns it (NULL accepted). */
uint8_t *ef_buf_get(ef *p, uint64_t n, uint64_t *cap);
void ef_buf_put(ef *p, uint8_t *buf, uint64_t cap);
/* Counters: jobs fetched ahead, units taken from them, peak bytes held. */
void ef_stats(ef *p, uint64_t *jobs, uint64_t *hits, uint64_t *peak);

/* ---- plan ------------------------------------------------------------------ */

typedef struct eng_col {
    char *name;
    ex_type t;
    cb_typeinfo cb;      /* Parquet: the batch type; text: unused */
} eng_col;

struct eng_schema {
    eng_col *cols;
    int n;
};

typedef struct eng_out {
    bx *e;
    char *name;
} eng_out;

typedef struct eng_order {
    bx *e;
    bool desc;
    bool nulls_first;
} eng_order;

typedef struct eng_prune {
    int col;             /* schema column */
    pq_op op;
    pq_value v;
    char *s;             /* owned bytes for strings */
} eng_prune;

typedef struct eng_settings {
    int max_threads;
    int max_download_threads;
    uint64_t max_download_buffer_size;
    int64_t max_memory_usage;
} eng_settings;

typedef struct eng_plan {
    const eng_schema *schema;
    int *need;           /* scan slot k reads schema column need[k] */
    int n_need;
    bx *where;           /* over scan slots; NULL: none */
    bool aggregate;
    bx **keys;           /* over scan slots */
    int n_keys;
    eng_agg *aggs;
    int n_aggs;
    eng_out *outs;       /* over the post block (keys..., aggs...) or scan slots */
    int n_outs;
    bx *having;          /* over the post block */
    eng_order *order;
    int n_order;
    bool has_limit;
    int64_t limit, offset;
    eng_prune *prune;
    int n_prune;
} eng_plan;

/* Binds a SELECT against a schema. 0, or -EINVAL with "line L, column C: ..."
 * (unknown column with a suggestion, wrong types, a column outside GROUP BY).
 * The plan borrows stmt and schema. */
int eng_bind(eng_mem *m, const sql_stmt *stmt, const eng_schema *schema, eng_plan *plan,
             char *err, size_t errlen);
void eng_plan_free(eng_mem *m, eng_plan *plan);
/* Applies SETTINGS (known names only, with suggestions) on top of s. */
int eng_settings_apply(const sql_stmt *stmt, eng_settings *s, char *err, size_t errlen);
/* Parses a ClickHouse type name ("Nullable(Int32)", "DateTime64(3)", ...). */
int eng_parse_type(const char *name, ex_type *out);

/* ---- did you mean ----------------------------------------------------------- */
/* The candidate closest to name (Damerau-Levenshtein, case-insensitive),
 * or NULL when none is close. */
const char *eng_suggest(const char *name, const char *const *cands, int n);

#endif /* RINGCACHE_ENG_INT_H */
