/* SPDX-License-Identifier: Apache-2.0
 *
 * tp_int.h: internals shared by the part files (tp_*.c): a growable column
 * (tp__colbuf) the writer, the reader and the merge fill row by row, value
 * comparison in key order, the encoding of one block, and the footer's
 * in-memory form with its parser (fuzzed: tests/fuzz/table_footer) and its
 * serialiser. Pure functions: no I/O, no globals.
 */
#ifndef RINGCACHE_TABLE_TP_INT_H
#define RINGCACHE_TABLE_TP_INT_H

#include "part.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TP__HEAD_MAGIC    "RCPART\r\n"
#define TP__TAIL_MAGIC    "RCPEND\r\n"
#define TP__HEAD_SIZE     16
#define TP__MAX_RAW_BLOCK (256u << 20) /* a decoded block at most */
#define TP__MAX_NAME      1024

enum { TP__ENC_FIXED = 0, TP__ENC_PLAIN = 1, TP__ENC_DICT = 2 };

/* ---- growable column ---------------------------------------------------- */

typedef struct tp__colbuf {
    cb_typeinfo info;
    size_t width; /* 0 for strings/binaries */
    uint32_t n, cap;
    uint8_t *values; /* cap * width */
    uint8_t *valid;  /* one byte per row (1 = not null), NULL until a null */
    uint32_t nulls;
    uint32_t *offsets; /* cap + 1 (strings) */
    uint8_t *data;
    size_t data_len, data_cap;
} tp__colbuf;

void tp__colbuf_init(tp__colbuf *b, const cb_typeinfo *info);
void tp__colbuf_deinit(tp__colbuf *b);
void tp__colbuf_clear(tp__colbuf *b); /* n = 0, buffers kept */
int tp__colbuf_reserve(tp__colbuf *b, uint32_t rows);
/* Appends rows [row, row + n) of src (same type). 0, -ENOMEM or -E2BIG. */
int tp__colbuf_append(tp__colbuf *b, const cb_column *src, uint32_t row, uint32_t n);
/* Appends one row of another colbuf. */
int tp__colbuf_append_buf(tp__colbuf *b, const tp__colbuf *src, uint32_t row);
int tp__colbuf_append_null(tp__colbuf *b);
int tp__colbuf_append_bytes(tp__colbuf *b, const void *p, size_t len);
int tp__colbuf_append_fixed(tp__colbuf *b, const void *p);
/* Encoded size estimate of the rows held (what a block of them costs). */
size_t tp__colbuf_raw_size(const tp__colbuf *b);
/* A new cb_column (copies; a validity bitmap only when there are nulls). */
int tp__colbuf_to_column(const tp__colbuf *b, const char *name, cb_column **out);
/* The same without copying: the buffers move into the column and b is left
 * empty (reusable). */
int tp__colbuf_take_column(tp__colbuf *b, const char *name, cb_column **out);
size_t tp__colbuf_memory(const tp__colbuf *b);

static inline bool tp__colbuf_is_null(const tp__colbuf *b, uint32_t row)
{
    return b->valid && !b->valid[row];
}

/* ---- comparison in key order -------------------------------------------- */

/* <0, 0, >0 for row i of a vs row j of b (same type, non-null rows). Floats:
 * NaN after every number, -0 == 0. Strings: bytes, then length. */
int tp__cmp_col(const cb_column *a, uint32_t i, const cb_column *b, uint32_t j);
int tp__cmp_buf(const tp__colbuf *a, uint32_t i, const tp__colbuf *b, uint32_t j);
int tp__cmp_buf_col(const tp__colbuf *a, uint32_t i, const cb_column *b, uint32_t j);
/* Pointer to the fixed-width value / the bytes of row i. */
const void *tp__col_fixed(const cb_column *c, uint32_t i);
int tp__cmp_fixed(const cb_typeinfo *info, const void *a, const void *b);
int tp__cmp_bytes(const uint8_t *a, size_t al, const uint8_t *b, size_t bl);

/* ---- blocks -------------------------------------------------------------- */

/* Encodes every row of b as one block (see part.h): *enc gets the encoding,
 * out/out_len a malloc'd buffer. 0, -ENOMEM or -E2BIG. */
int tp__block_encode(const tp__colbuf *b, bool allow_dict, uint8_t *enc, uint8_t **out,
                     size_t *out_len);

/* Decodes rows [lo, hi) of an encoded block of `rows` rows into out (appended;
 * out->info is the column's type). Checks every length against raw_len and
 * every dictionary index against the dictionary: -EBADMSG with a sentence in
 * err (no part/column names: the caller adds them). */
int tp__block_decode(const uint8_t *raw, size_t raw_len, uint8_t enc, uint32_t rows, bool nullable,
                     uint32_t lo, uint32_t hi, tp__colbuf *out, char *err, size_t errlen);

/* Decodes a whole dictionary block into a dictionary column (plain strings,
 * no nulls) plus a column of indices over it for rows [lo, hi): *out is a
 * dictionary-encoded cb_column. -ENOTSUP when the block is not a dictionary
 * block, else as tp__block_decode. */
int tp__block_decode_dict(const uint8_t *raw, size_t raw_len, uint32_t rows, bool nullable,
                          const cb_typeinfo *info, const char *name, uint32_t lo, uint32_t hi,
                          cb_column **out, char *err, size_t errlen);

/* Compresses raw with codec (level for ZSTD) into a malloc'd buffer; falls
 * back to TP_CODEC_NONE when that is not smaller (*used says which). */
int tp__compress(tp_codec codec, int level, const uint8_t *raw, size_t raw_len, uint8_t **out,
                 size_t *out_len, uint8_t *used);
/* Decompresses exactly raw_len bytes; -EBADMSG when the data says otherwise. */
int tp__decompress(uint8_t codec, const uint8_t *src, size_t src_len, uint8_t *raw, size_t raw_len);

/* ---- footer --------------------------------------------------------------- */

typedef struct tp__block_ent {
    uint64_t offset;
    uint32_t comp_len, raw_len, rows;
    uint8_t codec, enc;
    uint64_t checksum;
} tp__block_ent;

typedef struct tp__mark {
    uint32_t block, row;
} tp__mark;

typedef struct tp__col_meta {
    tp_column_def def; /* def.name owned */
    uint32_t n_blocks;
    tp__block_ent *blocks;
    tp__mark *marks; /* granules entries */
} tp__col_meta;

typedef struct tp__footer {
    uint64_t rows;
    uint32_t granularity, granules, n_cols, n_key, n_minmax;
    tp__col_meta *cols;
    uint32_t *key_cols;
    cb_column **index; /* n_key columns of granules + 1 values */
    uint32_t *minmax_cols;
    cb_column **minmax; /* 2 * n_minmax: min, max (NULL pair: all null) */
} tp__footer;

/* Parses the footer bytes (without the tail) of an object of object_size
 * bytes whose data area ends at data_end (the footer's offset). Checks
 * everything a reader then relies on: counts against the bytes present,
 * blocks inside the data area and in order, rows adding up, marks pointing
 * inside their blocks and non-decreasing, key and partition columns in range
 * and not nullable keys. -EBADMSG with a sentence, or -ENOMEM. On error *f
 * holds nothing to free. */
int tp__footer_parse(const uint8_t *buf, size_t len, uint64_t data_end, tp__footer *f, char *err,
                     size_t errlen);
void tp__footer_free(tp__footer *f);
/* Serialises a footer (malloc'd). 0, -ENOMEM or -E2BIG. */
int tp__footer_write(const tp__footer *f, uint8_t **out, size_t *out_len);

/* Parses the 24-byte tail: footer length and checksum. -EBADMSG. */
int tp__tail_parse(const uint8_t tail[TP_TAIL_SIZE], uint64_t object_size, uint64_t *footer_len,
                   uint64_t *checksum, char *err, size_t errlen);

/* Little-endian helpers. */
static inline void tp__put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void tp__put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void tp__put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t tp__get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t tp__get32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t tp__get64(const uint8_t *p)
{
    return (uint64_t)tp__get32(p) | ((uint64_t)tp__get32(p + 4) << 32);
}

/* Makes room for one more element in *arr (count n, capacity *cap, elements
 * of size elem; the first allocation holds first). 0 or -ENOMEM. */
int tp__grow(void **arr, uint32_t n, uint32_t *cap, size_t elem, uint32_t first);

/* A growable byte buffer. */
typedef struct tp__bytes {
    uint8_t *p;
    size_t len, cap;
} tp__bytes;
int tp__bytes_reserve(tp__bytes *b, size_t more);
int tp__bytes_add(tp__bytes *b, const void *p, size_t n);
static inline int tp__bytes_u8(tp__bytes *b, uint8_t v)
{
    return tp__bytes_add(b, &v, 1);
}
int tp__bytes_u16(tp__bytes *b, uint16_t v);
int tp__bytes_u32(tp__bytes *b, uint32_t v);
int tp__bytes_u64(tp__bytes *b, uint64_t v);

/* Type check shared by writer and parser: a type colbatch.h knows, with a
 * unit for time types and a valid decimal precision. */
bool tp__type_valid(const cb_typeinfo *info);

#endif /* RINGCACHE_TABLE_TP_INT_H */
