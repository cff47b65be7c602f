/* SPDX-License-Identifier: Apache-2.0
 *
 * sink_rows.c: the formats of eng_sink.h written a row at a time for people
 * and for SQL, as the blocks arrive:
 *
 *   Vertical            Markdown           Values
 *   Row 1:              | a | b |          (1,'x'),(2,'it\'s')
 *   ──────              |-:|:-|
 *   a: 1                | 1 | x |
 *   b: x                | 2 | it's |
 *
 *   Row 2:
 *   ...
 *
 * Vertical aligns the values after the longest name; NULL is ᴺᵁᴸᴸ. Markdown
 * right-aligns number columns (-:) and escapes '|'. Values writes SQL
 * literals (strings and dates quoted with backslash escapes, NULL), rows
 * separated by ',' and no line feed at the end, as ClickHouse does.
 */
#include "sink_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rows_sink {
    eng_sink base;
    eng_format fmt;
    sk_buf b;
    char **names;
    int n_cols;
    size_t name_w; /* Vertical: the widest name */
    uint64_t rows;
} rows_sink;

static size_t disp_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

static bool is_number(const ex_type *t)
{
    return t->kind == EX_INT || t->kind == EX_UINT || t->kind == EX_FLOAT || t->kind == EX_DECIMAL;
}

static int rows_begin(eng_sink *sk, const char *const *names, const ex_type *types, int n_cols,
                      char *err, size_t errlen)
{
    rows_sink *s = (rows_sink *)sk;
    if (!(s->names = sk_names_copy(names, n_cols))) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    s->n_cols = n_cols;
    for (int k = 0; k < n_cols; k++)
        if (disp_width(names[k]) > s->name_w)
            s->name_w = disp_width(names[k]);
    if (s->fmt == ENG_FMT_MARKDOWN) {
        sk_buf *f = &s->b;
        sk_putc(f, '|');
        for (int k = 0; k < n_cols; k++) {
            sk_putc(f, ' ');
            sk_puts(f, names[k]);
            sk_puts(f, " |");
        }
        sk_puts(f, "\n|");
        for (int k = 0; k < n_cols; k++)
            sk_puts(f, is_number(&types[k]) ? "-:|" : ":-|");
        sk_putc(f, '\n');
    }
    return 0;
}

/* A SQL string literal: '...' with backslash escapes. */
static void quoted(sk_buf *f, const uint8_t *p, size_t n)
{
    sk_putc(f, '\'');
    for (size_t i = 0; i < n; i++) {
        switch (p[i]) {
        case '\'': sk_puts(f, "\\'"); break;
        case '\\': sk_puts(f, "\\\\"); break;
        case '\n': sk_puts(f, "\\n"); break;
        case '\t': sk_puts(f, "\\t"); break;
        case '\r': sk_puts(f, "\\r"); break;
        case '\0': sk_puts(f, "\\0"); break;
        case '\b': sk_puts(f, "\\b"); break;
        case '\f': sk_puts(f, "\\f"); break;
        default: sk_putc(f, (char)p[i]);
        }
    }
    sk_putc(f, '\'');
}

static void write_vertical(rows_sink *s, const eng_block *t, uint32_t r)
{
    sk_buf *f = &s->b;
    char head[48], buf[128];
    int hl = snprintf(head, sizeof(head), "%sRow %llu:\n", s->rows ? "\n" : "",
                      (unsigned long long)s->rows + 1);
    sk_write(f, head, (size_t)hl);
    for (size_t i = s->rows ? 2 : 1; i < (size_t)hl; i++)
        sk_puts(f, "─");
    sk_putc(f, '\n');
    for (int k = 0; k < t->n_cols; k++) {
        sk_puts(f, s->names[k]);
        sk_putc(f, ':');
        for (size_t i = disp_width(s->names[k]); i <= s->name_w; i++)
            sk_putc(f, ' ');
        if (ex_null(&t->cols[k], r)) {
            sk_puts(f, "ᴺᵁᴸᴸ");
        } else {
            size_t l;
            const uint8_t *p = sk_cell(f, &t->cols[k], r, buf, sizeof(buf), &l);
            sk_write(f, p, l);
        }
        sk_putc(f, '\n');
    }
}

static void write_markdown(rows_sink *s, const eng_block *t, uint32_t r)
{
    sk_buf *f = &s->b;
    char buf[128];
    sk_putc(f, '|');
    for (int k = 0; k < t->n_cols; k++) {
        sk_putc(f, ' ');
        if (ex_null(&t->cols[k], r)) {
            sk_puts(f, "ᴺᵁᴸᴸ");
        } else {
            size_t l;
            const uint8_t *p = sk_cell(f, &t->cols[k], r, buf, sizeof(buf), &l);
            for (size_t i = 0; i < l; i++) {
                if (p[i] == '|')
                    sk_putc(f, '\\');
                sk_putc(f, (char)p[i]);
            }
        }
        sk_puts(f, " |");
    }
    sk_putc(f, '\n');
}

static void write_values(rows_sink *s, const eng_block *t, uint32_t r)
{
    sk_buf *f = &s->b;
    char buf[128];
    sk_puts(f, s->rows ? ",(" : "(");
    for (int k = 0; k < t->n_cols; k++) {
        const ex_vec *v = &t->cols[k];
        if (k)
            sk_putc(f, ',');
        if (ex_null(v, r)) {
            sk_puts(f, "NULL");
            continue;
        }
        size_t l;
        const uint8_t *p = sk_cell(f, v, r, buf, sizeof(buf), &l);
        if (v->t.kind == EX_STRING || v->t.kind == EX_DATE || v->t.kind == EX_DATETIME)
            quoted(f, p, l);
        else
            sk_write(f, p, l);
    }
    sk_putc(f, ')');
}

static int rows_write(eng_sink *sk, const eng_block *t, char *err, size_t errlen)
{
    rows_sink *s = (rows_sink *)sk;
    for (uint32_t r = 0; r < t->n_rows; r++) {
        if (s->fmt == ENG_FMT_VERTICAL)
            write_vertical(s, t, r);
        else if (s->fmt == ENG_FMT_MARKDOWN)
            write_markdown(s, t, r);
        else
            write_values(s, t, r);
        s->rows++;
    }
    int rc = sk_buf_flush(&s->b);
    return rc < 0 ? sk_error(rc, err, errlen) : 0;
}

static int rows_end(eng_sink *sk, char *err, size_t errlen)
{
    rows_sink *s = (rows_sink *)sk;
    int rc = sk_buf_finish(&s->b);
    return rc < 0 ? sk_error(rc, err, errlen) : 0;
}

static void rows_destroy(eng_sink *sk)
{
    rows_sink *s = (rows_sink *)sk;
    sk_buf_deinit(&s->b);
    sk_names_free(s->names, s->n_cols);
    free(s);
}

static const eng_sink_ops rows_ops = {rows_begin, rows_write, rows_end, rows_destroy};

int sk__rows_create(eng_sink **out, eng_format fmt, const eng_writer *w)
{
    rows_sink *s = calloc(1, sizeof(*s));
    if (!s || sk_buf_init(&s->b, w) < 0) {
        free(s);
        return -ENOMEM;
    }
    s->base.ops = &rows_ops;
    s->fmt = fmt;
    *out = &s->base;
    return 0;
}
