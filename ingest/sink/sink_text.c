/* SPDX-License-Identifier: Apache-2.0
 *
 * sink_text.c: the row formats of eng_sink.h, written a block at a time as
 * the blocks arrive: TabSeparated[WithNames] (\N for NULL, backslash
 * escapes), CSV[WithNames] (strings and dates double-quoted, \N for NULL),
 * JSONEachRow (64-bit integers quoted, as
 * output_format_json_quote_64bit_integers=1 does; nan/inf as null) and Null.
 * The header line of *WithNames is written at begin; each block's bytes go to
 * the writer when the block is done, so the sink holds at most one buffer.
 */
#include "sink_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct text_sink {
    eng_sink base;
    eng_format fmt;
    sk_buf b;
    char **names;
    int n_cols;
} text_sink;

static void tsv_escape(sk_buf *f, const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '\t': sk_puts(f, "\\t"); break;
        case '\n': sk_puts(f, "\\n"); break;
        case '\r': sk_puts(f, "\\r"); break;
        case '\\': sk_puts(f, "\\\\"); break;
        case '\0': sk_puts(f, "\\0"); break;
        case '\b': sk_puts(f, "\\b"); break;
        case '\f': sk_puts(f, "\\f"); break;
        default: sk_putc(f, (char)s[i]);
        }
    }
}

static void csv_quote(sk_buf *f, const uint8_t *s, size_t n)
{
    sk_putc(f, '"');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            sk_putc(f, '"');
        sk_putc(f, (char)s[i]);
    }
    sk_putc(f, '"');
}

static void json_str(sk_buf *f, const uint8_t *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    sk_putc(f, '"');
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        switch (c) {
        case '"': sk_puts(f, "\\\""); break;
        case '\\': sk_puts(f, "\\\\"); break;
        case '\n': sk_puts(f, "\\n"); break;
        case '\r': sk_puts(f, "\\r"); break;
        case '\t': sk_puts(f, "\\t"); break;
        case '\b': sk_puts(f, "\\b"); break;
        case '\f': sk_puts(f, "\\f"); break;
        default:
            if (c < 0x20) {
                char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                sk_write(f, u, sizeof(u));
            } else {
                sk_putc(f, (char)c);
            }
        }
    }
    sk_putc(f, '"');
}

static int text_begin(eng_sink *sk, const char *const *names, const ex_type *types, int n_cols,
                      char *err, size_t errlen)
{
    (void)types;
    text_sink *s = (text_sink *)sk;
    if (!(s->names = sk_names_copy(names, n_cols))) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    s->n_cols = n_cols;
    sk_buf *f = &s->b;
    if (s->fmt == ENG_FMT_TSV_WITH_NAMES) {
        for (int k = 0; k < n_cols; k++) {
            if (k)
                sk_putc(f, '\t');
            tsv_escape(f, (const uint8_t *)names[k], strlen(names[k]));
        }
        sk_putc(f, '\n');
    } else if (s->fmt == ENG_FMT_CSV_WITH_NAMES) {
        for (int k = 0; k < n_cols; k++) {
            if (k)
                sk_putc(f, ',');
            csv_quote(f, (const uint8_t *)names[k], strlen(names[k]));
        }
        sk_putc(f, '\n');
    }
    return 0;
}

static void write_tsv(sk_buf *f, const eng_block *t)
{
    char buf[128];
    for (uint32_t r = 0; r < t->n_rows; r++) {
        for (int k = 0; k < t->n_cols; k++) {
            if (k)
                sk_putc(f, '\t');
            if (ex_null(&t->cols[k], r)) {
                sk_puts(f, "\\N");
                continue;
            }
            size_t l;
            const uint8_t *s = sk_cell(&t->cols[k], r, buf, sizeof(buf), &l);
            tsv_escape(f, s, l);
        }
        sk_putc(f, '\n');
    }
}

static void write_csv(sk_buf *f, const eng_block *t)
{
    char buf[128];
    for (uint32_t r = 0; r < t->n_rows; r++) {
        for (int k = 0; k < t->n_cols; k++) {
            if (k)
                sk_putc(f, ',');
            const ex_vec *v = &t->cols[k];
            if (ex_null(v, r)) {
                sk_puts(f, "\\N");
                continue;
            }
            size_t l;
            const uint8_t *s = sk_cell(v, r, buf, sizeof(buf), &l);
            if (v->t.kind == EX_STRING || v->t.kind == EX_DATE || v->t.kind == EX_DATETIME)
                csv_quote(f, s, l);
            else
                sk_write(f, s, l);
        }
        sk_putc(f, '\n');
    }
}

static void write_json(sk_buf *f, const eng_block *t, char *const *names)
{
    char buf[128];
    for (uint32_t r = 0; r < t->n_rows; r++) {
        sk_putc(f, '{');
        for (int k = 0; k < t->n_cols; k++) {
            if (k)
                sk_putc(f, ',');
            json_str(f, (const uint8_t *)names[k], strlen(names[k]));
            sk_putc(f, ':');
            const ex_vec *v = &t->cols[k];
            if (ex_null(v, r)) {
                sk_puts(f, "null");
                continue;
            }
            size_t l;
            const uint8_t *s = sk_cell(v, r, buf, sizeof(buf), &l);
            bool quote = v->t.kind == EX_STRING || v->t.kind == EX_DATE ||
                         v->t.kind == EX_DATETIME ||
                         ((v->t.kind == EX_INT || v->t.kind == EX_UINT) &&
                          (v->t.bits == 0 || v->t.bits == 64));
            if (v->t.kind == EX_FLOAT && !isfinite(v->d[ex_row(v, r)]))
                sk_puts(f, "null");
            else if (quote)
                json_str(f, s, l);
            else
                sk_write(f, s, l);
        }
        sk_puts(f, "}\n");
    }
}

static int text_write(eng_sink *sk, const eng_block *t, char *err, size_t errlen)
{
    text_sink *s = (text_sink *)sk;
    switch (s->fmt) {
    case ENG_FMT_TSV: case ENG_FMT_TSV_WITH_NAMES: write_tsv(&s->b, t); break;
    case ENG_FMT_CSV: case ENG_FMT_CSV_WITH_NAMES: write_csv(&s->b, t); break;
    case ENG_FMT_JSON_EACH_ROW: write_json(&s->b, t, s->names); break;
    default: break;
    }
    int rc = sk_buf_flush(&s->b);
    return rc < 0 ? sk_error(rc, err, errlen) : 0;
}

static int text_end(eng_sink *sk, char *err, size_t errlen)
{
    text_sink *s = (text_sink *)sk;
    int rc = sk_buf_finish(&s->b);
    return rc < 0 ? sk_error(rc, err, errlen) : 0;
}

static void text_destroy(eng_sink *sk)
{
    text_sink *s = (text_sink *)sk;
    sk_buf_deinit(&s->b);
    sk_names_free(s->names, s->n_cols);
    free(s);
}

static const eng_sink_ops text_ops = {text_begin, text_write, text_end, text_destroy};

int sk__text_create(eng_sink **out, eng_format fmt, const eng_writer *w)
{
    text_sink *s = calloc(1, sizeof(*s));
    if (!s || sk_buf_init(&s->b, w) < 0) {
        free(s);
        return -ENOMEM;
    }
    s->base.ops = &text_ops;
    s->fmt = fmt;
    *out = &s->base;
    return 0;
}
