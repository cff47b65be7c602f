/* SPDX-License-Identifier: Apache-2.0
 *
 * parquet_int.h: internals shared by the pq_*.c files of the Parquet reader:
 * the Thrift compact-protocol cursor, the decoded footer (FileMetaData and
 * what hangs off it), page headers, the encodings, the codecs and the column
 * chunk decoder. Exposed to unit tests and fuzz targets, not to the engine.
 *
 * Thread-safety: everything here is reentrant; no globals.
 */
#ifndef RINGCACHE_PARQUET_INT_H
#define RINGCACHE_PARQUET_INT_H

#include "parquet.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Thrift compact protocol --------------------------------------------- */

enum {
    PQ__T_STOP = 0,
    PQ__T_TRUE = 1,
    PQ__T_FALSE = 2,
    PQ__T_I8 = 3,
    PQ__T_I16 = 4,
    PQ__T_I32 = 5,
    PQ__T_I64 = 6,
    PQ__T_DOUBLE = 7,
    PQ__T_BINARY = 8,
    PQ__T_LIST = 9,
    PQ__T_SET = 10,
    PQ__T_MAP = 11,
    PQ__T_STRUCT = 12,
};

#define PQ__THRIFT_MAX_DEPTH 64

/* A read cursor. Reading past the end or a malformed value sets `bad` (with a
 * reason) and moves p to end, so loops terminate; check bad once at the end. */
typedef struct pq__tc {
    const uint8_t *p, *end;
    int depth;
    bool bad;
    const char *why; /* static string: what was malformed */
} pq__tc;

void pq__tc_init(pq__tc *c, const uint8_t *p, size_t len);
void pq__tc_fail(pq__tc *c, const char *why);
uint64_t pq__tc_varint(pq__tc *c);
int32_t pq__tc_i32(pq__tc *c);
int64_t pq__tc_i64(pq__tc *c);
/* Next field of a struct: false at STOP (or when bad). *type is the compact
 * type; booleans carry their value in it (PQ__T_TRUE / PQ__T_FALSE). */
bool pq__tc_field(pq__tc *c, int16_t *last_id, int16_t *id, uint8_t *type);
/* Borrowed bytes of a binary/string (inside the cursor's buffer). */
const uint8_t *pq__tc_binary(pq__tc *c, uint32_t *len);
/* List or set header: element type and count (count bounded by bytes left). */
uint32_t pq__tc_list(pq__tc *c, uint8_t *elem_type);
/* Reads a bool field value from its type nibble, or a list element byte. */
bool pq__tc_bool(pq__tc *c, uint8_t type);
/* Skips a value of the given type (recursively, depth-limited). */
void pq__tc_skip(pq__tc *c, uint8_t type);

/* ---- The footer ----------------------------------------------------------- */

enum { PQ__REQUIRED = 0, PQ__OPTIONAL = 1, PQ__REPEATED = 2 };

/* LogicalType union members we use (parquet.thrift field ids). */
enum {
    PQ__LT_NONE = 0,
    PQ__LT_STRING = 1,
    PQ__LT_MAP = 2,
    PQ__LT_LIST = 3,
    PQ__LT_ENUM = 4,
    PQ__LT_DECIMAL = 5,
    PQ__LT_DATE = 6,
    PQ__LT_TIME = 7,
    PQ__LT_TIMESTAMP = 8,
    PQ__LT_INTEGER = 10,
    PQ__LT_UNKNOWN = 11,
    PQ__LT_JSON = 12,
    PQ__LT_BSON = 13,
    PQ__LT_UUID = 14,
    PQ__LT_FLOAT16 = 15,
};

/* ConvertedType (legacy). */
enum {
    PQ__CT_UTF8 = 0,
    PQ__CT_MAP = 1,
    PQ__CT_MAP_KEY_VALUE = 2,
    PQ__CT_LIST = 3,
    PQ__CT_ENUM = 4,
    PQ__CT_DECIMAL = 5,
    PQ__CT_DATE = 6,
    PQ__CT_TIME_MILLIS = 7,
    PQ__CT_TIME_MICROS = 8,
    PQ__CT_TIMESTAMP_MILLIS = 9,
    PQ__CT_TIMESTAMP_MICROS = 10,
    PQ__CT_UINT_8 = 11,
    PQ__CT_UINT_16 = 12,
    PQ__CT_UINT_32 = 13,
    PQ__CT_UINT_64 = 14,
    PQ__CT_INT_8 = 15,
    PQ__CT_INT_16 = 16,
    PQ__CT_INT_32 = 17,
    PQ__CT_INT_64 = 18,
    PQ__CT_JSON = 19,
    PQ__CT_BSON = 20,
    PQ__CT_INTERVAL = 21,
};

/* Codecs and encodings. */
enum {
    PQ__CODEC_UNCOMPRESSED = 0,
    PQ__CODEC_SNAPPY = 1,
    PQ__CODEC_GZIP = 2,
    PQ__CODEC_LZO = 3,
    PQ__CODEC_BROTLI = 4,
    PQ__CODEC_LZ4 = 5,
    PQ__CODEC_ZSTD = 6,
    PQ__CODEC_LZ4_RAW = 7,
};
enum {
    PQ__ENC_PLAIN = 0,
    PQ__ENC_PLAIN_DICTIONARY = 2,
    PQ__ENC_RLE = 3,
    PQ__ENC_BIT_PACKED = 4,
    PQ__ENC_DELTA_BINARY_PACKED = 5,
    PQ__ENC_DELTA_LENGTH_BYTE_ARRAY = 6,
    PQ__ENC_DELTA_BYTE_ARRAY = 7,
    PQ__ENC_RLE_DICTIONARY = 8,
    PQ__ENC_BYTE_STREAM_SPLIT = 9,
};

typedef struct pq__bytes {
    const uint8_t *p; /* borrowed from the footer buffer; NULL when absent */
    uint32_t len;
} pq__bytes;

typedef struct pq__schema_el {
    char *name;   /* owned, NUL-terminated */
    int32_t type; /* -1 for groups */
    int32_t type_length;
    int32_t repetition; /* -1 when absent (the root) */
    int32_t num_children;
    int32_t converted_type; /* -1 when absent */
    int32_t scale, precision;
    int lt;      /* PQ__LT_* */
    int lt_unit; /* TIME/TIMESTAMP: cb_unit */
    bool lt_utc;
    int lt_bits; /* INTEGER */
    bool lt_signed;
    int32_t lt_scale, lt_precision;
} pq__schema_el;

typedef struct pq__stats_raw {
    pq__bytes min, max, min_value, max_value;
    bool has_null_count;
    int64_t null_count;
} pq__stats_raw;

typedef struct pq__chunk_meta {
    int32_t type;
    int32_t codec;
    int64_t num_values;
    int64_t total_uncompressed_size;
    int64_t total_compressed_size;
    int64_t data_page_offset;
    int64_t dictionary_page_offset; /* -1 when absent */
    bool has_meta;
    bool external;     /* file_path set: the chunk lives in another file */
    pq__bytes path0;   /* first element of path_in_schema */
    uint32_t path_len; /* elements in path_in_schema */
    pq__stats_raw stats;
} pq__chunk_meta;

typedef struct pq__row_group {
    int64_t num_rows;
    uint32_t n_cols;
    pq__chunk_meta *cols;
} pq__row_group;

typedef struct pq__meta {
    int32_t version;
    int64_t num_rows;
    uint32_t n_schema;
    pq__schema_el *schema;
    uint32_t n_rgs;
    pq__row_group *rgs;
    char *created_by; /* owned; NULL when absent */
} pq__meta;

/* Decodes FileMetaData from buf (which must outlive *out: statistics point
 * into it). 0, -EBADMSG (err gets what is wrong, without the file name) or
 * -ENOMEM. */
int pq__meta_parse(const uint8_t *buf, size_t len, pq__meta **out, char *err, size_t errlen);
void pq__meta_free(pq__meta **m);

/* ---- Page headers --------------------------------------------------------- */

enum { PQ__PAGE_DATA = 0, PQ__PAGE_INDEX = 1, PQ__PAGE_DICT = 2, PQ__PAGE_DATA_V2 = 3 };

typedef struct pq__page_header {
    int32_t type;
    int32_t uncompressed_size;
    int32_t compressed_size;
    int32_t num_values; /* data v1/v2, dictionary */
    int32_t encoding;
    int32_t def_encoding;     /* v1 */
    int32_t num_nulls;        /* v2 */
    int32_t num_rows;         /* v2 */
    int32_t def_len, rep_len; /* v2 */
    bool is_compressed;       /* v2; default true */
    bool has_data, has_dict, has_v2;
} pq__page_header;

/* Decodes a PageHeader; returns the bytes it took or -EBADMSG. */
int pq__page_header_parse(const uint8_t *buf, size_t len, pq__page_header *h, const char **why);

/* ---- Encodings ------------------------------------------------------------ */

/* LSB-first bit unpacking of count values of `width` bits (0..32 / 0..64)
 * from in (in_len bytes; missing bytes read as 0 only if the caller allowed it
 * by checking the length first). */
void pq__unpack32(const uint8_t *in, size_t in_len, int width, uint32_t *out, size_t count);

/* RLE / bit-packed hybrid: decodes exactly n values of bit_width (0..32) into
 * out. Returns bytes consumed, or -EBADMSG (runs past the data, bad width). */
int64_t pq__rle_decode(const uint8_t *p, size_t len, int bit_width, uint32_t *out, size_t n);
/* Same for levels of width <= 8 into bytes. */
int64_t pq__rle_decode8(const uint8_t *p, size_t len, int bit_width, uint8_t *out, size_t n);
/* Whether the first n values of a hybrid of width 1 are all 1 in repeated
 * runs alone (a page's definition levels with no NULL, as writers put them):
 * false for anything else, a bit-packed run or bytes that do not parse
 * included, which the caller then decodes. */
bool pq__rle_all_ones(const uint8_t *p, size_t len, size_t n);

/* DELTA_BINARY_PACKED: decodes up to cap values into out (as 64-bit; INT32
 * callers truncate), sets *count to the number the header announces (which
 * must be <= cap). Returns bytes consumed or -EBADMSG. */
int64_t pq__delta_decode(const uint8_t *p, size_t len, int64_t *out, size_t cap, size_t *count);

/* ---- Codecs --------------------------------------------------------------- */

/* Decompresses src into dst of exactly dst_len bytes. 0, -ENOTSUP (LZO,
 * BROTLI, unknown), or -EBADMSG (corrupt or a size that does not match; *why
 * says which). */
int pq__decompress(int codec, const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                   const char **why);
const char *pq__codec_name(int codec);
const char *pq__encoding_name(int enc);

/* ---- Column chunks -------------------------------------------------------- */

/* What the chunk decoder needs to know about one column. */
typedef struct pq__coldesc {
    const char *file; /* for messages */
    const char *name;
    int rg; /* row group, for messages */
    pq_physical physical;
    int32_t type_length;
    cb_typeinfo type;
    bool nullable; /* max definition level 1 (else 0) */
    /* a LIST's leaf: max_rep 1 and max_def its definition levels (up to 3);
     * num_rows is then the chunk's entries (num_values), and the levels of
     * every entry land in the scratch's reps / defs. 0: a flat column. */
    uint8_t max_rep, max_def;
    int32_t codec;
    int64_t num_values; /* from ColumnMetaData */
    uint32_t num_rows;  /* of the row group */
    bool keep_dictionary;
    uint64_t max_page_bytes; /* refuse larger uncompressed pages; 0: 1 GiB */
    size_t size_hint;        /* bytes the chunk inflates to (a reservation hint,
                                already bounded by the caller); 0: none */
} pq__coldesc;

/* Scratch buffers of the chunk decoder, kept across chunks by a reader so
 * large buffers are not allocated (and page-faulted in) again for every row
 * group. Zero-initialise; free with pq__scratch_deinit. */
typedef struct pq__scratch {
    uint8_t *page_buf;
    size_t page_cap;
    uint8_t *levels;
    size_t levels_cap;
    uint32_t *idx;
    size_t idx_cap;
    uint8_t *tmp; /* staging: unsplit streams, delta values */
    size_t tmp_cap;
    uint8_t *cur; /* DELTA_BYTE_ARRAY: the previous value */
    size_t cur_cap;
    uint8_t *reps, *defs; /* a LIST leaf's levels, one per entry */
    size_t reps_cap, defs_cap;
} pq__scratch;
void pq__scratch_deinit(pq__scratch *s);

/* Decodes one column chunk (its bytes from the dictionary page, or the first
 * data page, to the end) into a column of d->num_rows rows. 0 or -errno
 * (-EBADMSG, -ENOTSUP, -ENOMEM) with a sentence naming the file, column, row
 * group and page in err. */
int pq__decode_chunk(const pq__coldesc *d, const uint8_t *buf, size_t len, cb_column **out,
                     char *err, size_t errlen);
/* The same with the caller's scratch buffers (s may be NULL). */
int pq__decode_chunk_with(const pq__coldesc *d, const uint8_t *buf, size_t len, pq__scratch *s,
                          cb_column **out, char *err, size_t errlen);

/* Maps a schema leaf to an engine type. 0 or -ENOTSUP (*why says what). */
int pq__map_type(const pq__schema_el *el, cb_typeinfo *out, const char **why);

/* Accessors the reader (pq_reader.c) uses on a pq_file (pq_file.c). */
rs_source *pq__file_source(const pq_file *f);
const pq__chunk_meta *pq__file_chunk(const pq_file *f, int rg, int col);

/* Converts an INT96 (nanoseconds of day, Julian day) to ns since the epoch. */
int64_t pq__int96_to_ns(const uint8_t *p);

/* Half-precision float to float. */
float pq__half_to_float(uint16_t h);

#endif /* RINGCACHE_PARQUET_INT_H */
