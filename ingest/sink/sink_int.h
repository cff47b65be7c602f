/* SPDX-License-Identifier: Apache-2.0
 *
 * sink_int.h: internals shared by the format sinks (sink_*.c): the output
 * buffer every format writes through (sk_buf: bytes gathered here and handed
 * to the writer in large pieces, so a format writes a character at a time
 * without a call per character), the text of one value, the escapes of the
 * text formats, and each format family's constructor.
 *
 * Thread-safety: a buffer belongs to its sink.
 */
#ifndef RINGCACHE_SINK_INT_H
#define RINGCACHE_SINK_INT_H

#include "eng_sink.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SK_BUF_BYTES (64u << 10)

typedef struct sk_buf {
    eng_writer w;
    uint8_t *p;
    size_t n, cap;
    int rc;       /* the writer's first error; later bytes are dropped */
    ex_bytes arr; /* the text of the last Array cell (sk_cell) */
} sk_buf;

/* 0 or -ENOMEM. */
int sk_buf_init(sk_buf *b, const eng_writer *w);
void sk_buf_deinit(sk_buf *b);
/* Hands the bytes held to the writer: 0 or the writer's first error. */
int sk_buf_flush(sk_buf *b);
/* sk_buf_flush, then the writer's flush. */
int sk_buf_finish(sk_buf *b);
void sk_write(sk_buf *b, const void *s, size_t n);
/* The sentence for a writer's error rc: -EIO with it in err. */
int sk_error(int rc, char *err, size_t errlen);

static inline void sk_putc(sk_buf *b, char c)
{
    if (b->n == b->cap)
        sk_buf_flush(b);
    b->p[b->n++] = (uint8_t)c;
}

static inline void sk_puts(sk_buf *b, const char *s)
{
    sk_write(b, s, strlen(s));
}

/* The text of row r of v as ClickHouse's TSV prints it (unescaped): its bytes
 * and length (pointing into buf, >= 64 bytes, into the vector, or for an
 * Array, whose text is already escaped as ClickHouse writes arrays, into b's
 * scratch until the next call). */
static inline const uint8_t *sk_cell(sk_buf *b, const ex_vec *v, uint32_t r, char *buf,
                                     size_t cap, size_t *len)
{
    const uint8_t *sp;
    if (v->t.kind == EX_ARRAY) {
        uint32_t l;
        const uint8_t *p = ex_str(v, r, &l);
        b->arr.n = 0;
        if (ex_arr_text(&v->t, p, l, false, &b->arr) < 0)
            b->arr.n = 0; /* out of memory: an empty cell */
        *len = b->arr.n;
        return b->arr.p ? b->arr.p : (const uint8_t *)"";
    }
    size_t n = ex_fmt_value(v, r, buf, cap, &sp);
    *len = n;
    return sp ? sp : (const uint8_t *)buf;
}

/* Escapes shared by the formats: TSV's backslash escapes; CSV's double
 * quotes ("" inside); a JSON string as ClickHouse writes it (\/ for '/',
 * \u00XX for control bytes, \u2028 and \u2029). */
void sk_tsv_escape(sk_buf *b, const uint8_t *s, size_t n);
void sk_csv_quote(sk_buf *b, const uint8_t *s, size_t n);
void sk_json_str(sk_buf *b, const uint8_t *s, size_t n);
/* Row r of v as a JSON value: null; true/false; 64-bit integers quoted
 * (output_format_json_quote_64bit_integers=1), narrower ones bare; nan and
 * inf as null; strings, dates and times quoted. as_string: every value but
 * NULL as a string (the *Strings formats). */
void sk_json_value(sk_buf *b, const ex_vec *v, uint32_t r, bool as_string);
/* ClickHouse's name of a type ("Nullable(Int64)"). */
void sk_type_name(const ex_type *t, char *buf, size_t cap);

/* Copies n names (for begin). NULL when out of memory. */
char **sk_names_copy(const char *const *names, int n);
void sk_names_free(char **names, int n);

/* The constructors of the format families (eng_sink_format_create picks). */
int sk__text_create(eng_sink **out, eng_format fmt, const eng_writer *w);
int sk__json_create(eng_sink **out, eng_format fmt, const eng_writer *w);
int sk__pretty_create(eng_sink **out, eng_format fmt, const eng_writer *w);
int sk__rows_create(eng_sink **out, eng_format fmt, const eng_writer *w);
int sk__parquet_create(eng_sink **out, const eng_writer *w);

#endif /* RINGCACHE_SINK_INT_H */
