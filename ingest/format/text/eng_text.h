/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_text.h: the text readers (tx_, eng_text.c): CSV, TSV and JSONEachRow,
 * schema inference, decompression by extension, format names.
 *
 * Thread-safety: reentrant; no globals. A parse calls its batch callback on
 * the calling thread.
 */
#ifndef RINGCACHE_ENG_TEXT_H
#define RINGCACHE_ENG_TEXT_H

#include "eng_types.h"

/* ---- text readers ----------------------------------------------------------- */

typedef enum tx_format {
    TX_CSV = 1,
    TX_CSV_NAMES,
    TX_TSV,
    TX_TSV_NAMES,
    TX_JSON_EACH_ROW,
} tx_format;

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
             const eng_schema *s, const int *want, int nwant, uint32_t batch_rows, tx_batch_fn fn,
             void *arg, char *err, size_t errlen);

/* Decompresses by extension (.gz, .zst) or copies: *out malloc'ed. 0 or -errno. */
int tx_decompress(const char *name, const uint8_t *in, size_t len, uint8_t **out, size_t *outlen,
                  char *err, size_t errlen);
/* A compression named in a query (s3()'s and file()'s compression argument). */
typedef enum tx_codec { TX_CODEC_AUTO = 0, TX_CODEC_NONE, TX_CODEC_GZIP, TX_CODEC_ZSTD } tx_codec;
/* 'auto', 'none', 'gzip' / 'gz' / 'deflate', 'zstd' / 'zst' (any case): the
 * codec, or -ENOENT. */
int tx_codec_of_arg(const char *s);
/* tx_decompress with the codec given (AUTO: by name's extension). */
int tx_decompress_as(tx_codec codec, const char *name, const uint8_t *in, size_t len, uint8_t **out,
                     size_t *outlen, char *err, size_t errlen);

/* Format from a file name's extension (.parquet, .csv, .tsv, .ndjson/.jsonl/
 * .json), looking through .gz/.zst: 0 Parquet, TX_* for text, -ENOENT. */
int tx_format_of_name(const char *name);
/* From a ClickHouse format name ("Parquet", "CSVWithNames", ...): same codes. */
int tx_format_of_arg(const char *fmt);

#endif /* RINGCACHE_ENG_TEXT_H */
