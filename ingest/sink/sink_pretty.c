/* SPDX-License-Identifier: Apache-2.0
 *
 * sink_pretty.c: the Pretty formats (eng_sink.h): one table, numbers
 * right-aligned, NULL as ᴺᵁᴸᴸ. A column is as wide as its widest value, so the
 * sink keeps the text of the rows it shows, at most 10000 like
 * output_format_pretty_max_rows, and counts the rest for "Showed first N.";
 * it draws the table at end. An empty result draws nothing.
 *
 *   PrettyCompact      Pretty              PrettySpace
 *   ┌─a─┬─b─┐          ┏━━━┳━━━┓            a   b
 *   │ 1 │ x │          ┃ a ┃ b ┃
 *   │ 2 │ y │          ┡━━━╇━━━┩            1   x
 *   └───┴───┘          │ 1 │ x │            2   y
 *                      ├───┼───┤
 *                      │ 2 │ y │
 *                      └───┴───┘
 */
#include "sink_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRETTY_MAX_ROWS 10000

typedef struct pretty_sink {
    eng_sink base;
    eng_format fmt;
    sk_buf b;
    char **names;
    ex_type *types;
    int n_cols;
    uint64_t n_rows; /* every row written */
    uint32_t kept;   /* rows whose text is kept (<= PRETTY_MAX_ROWS) */
    uint8_t *text;   /* the kept cells' bytes, row by row */
    size_t text_n, text_cap;
    size_t *cell;  /* kept * n_cols + 1 offsets into text */
    uint8_t *null; /* kept * n_cols flags */
    size_t cells_cap;
} pretty_sink;

static bool is_numeric(const ex_type *t)
{
    return t->kind == EX_INT || t->kind == EX_UINT || t->kind == EX_FLOAT || t->kind == EX_DECIMAL;
}

static size_t disp_width(const uint8_t *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        w += (s[i] & 0xc0) != 0x80;
    return w;
}

static void repeat(sk_buf *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sk_puts(f, s);
}

static int pretty_begin(eng_sink *sk, const char *const *names, const ex_type *types, int n_cols,
                        char *err, size_t errlen)
{
    pretty_sink *s = (pretty_sink *)sk;
    s->names = sk_names_copy(names, n_cols);
    s->types = calloc((size_t)n_cols + 1, sizeof(ex_type));
    s->cell = malloc(sizeof(size_t));
    if (!s->names || !s->types || !s->cell) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    s->n_cols = n_cols;
    memcpy(s->types, types, sizeof(ex_type) * (size_t)n_cols);
    s->cell[0] = 0;
    return 0;
}

/* Appends one kept cell's bytes. */
static int keep(pretty_sink *s, const uint8_t *p, size_t n)
{
    if (s->text_n + n > s->text_cap) {
        size_t cap = s->text_cap ? s->text_cap * 2 : 4096;
        while (cap < s->text_n + n)
            cap *= 2;
        uint8_t *t = realloc(s->text, cap);
        if (!t)
            return -ENOMEM;
        s->text = t;
        s->text_cap = cap;
    }
    memcpy(s->text + s->text_n, p, n);
    s->text_n += n;
    return 0;
}

static int pretty_write(eng_sink *sk, const eng_block *t, char *err, size_t errlen)
{
    pretty_sink *s = (pretty_sink *)sk;
    char buf[128];
    uint32_t take = 0;
    if (s->kept < PRETTY_MAX_ROWS)
        take = t->n_rows < PRETTY_MAX_ROWS - s->kept ? t->n_rows : PRETTY_MAX_ROWS - s->kept;
    size_t need = ((size_t)s->kept + take) * (size_t)s->n_cols;
    if (need + 1 > s->cells_cap) {
        size_t cap = s->cells_cap ? s->cells_cap : 64;
        while (cap < need + 1)
            cap *= 2;
        size_t *c = realloc(s->cell, cap * sizeof(size_t));
        if (c)
            s->cell = c;
        uint8_t *nl = c ? realloc(s->null, cap) : NULL;
        if (!nl) {
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        s->null = nl;
        s->cells_cap = cap;
    }
    for (uint32_t r = 0; r < take; r++) {
        for (int k = 0; k < s->n_cols; k++) {
            size_t c = (size_t)s->kept * (size_t)s->n_cols + (size_t)k;
            bool nul = ex_null(&t->cols[k], r);
            s->null[c] = nul;
            if (!nul) {
                size_t l;
                const uint8_t *p = sk_cell(&s->b, &t->cols[k], r, buf, sizeof(buf), &l);
                if (keep(s, p, l) < 0) {
                    snprintf(err, errlen, "out of memory");
                    return -ENOMEM;
                }
            }
            s->cell[c + 1] = s->text_n;
        }
        s->kept++;
    }
    s->n_rows += t->n_rows;
    return 0;
}

/* The text of kept cell c (NULL: ᴺᵁᴸᴸ) and its display width. */
static const uint8_t *cell_text(const pretty_sink *s, size_t c, size_t *len, size_t *width)
{
    if (s->null[c]) {
        *len = strlen("ᴺᵁᴸᴸ");
        *width = 4;
        return (const uint8_t *)"ᴺᵁᴸᴸ";
    }
    *len = s->cell[c + 1] - s->cell[c];
    *width = disp_width(s->text + s->cell[c], *len);
    return s->text + s->cell[c];
}

/* A cell padded to w: numbers to the right, the rest to the left. */
static void padded(sk_buf *f, const ex_type *t, const uint8_t *p, size_t l, size_t dw, size_t w)
{
    if (is_numeric(t))
        repeat(f, " ", w - dw);
    sk_write(f, p, l);
    if (!is_numeric(t))
        repeat(f, " ", w - dw);
}

/* A rule across the table: left, fill, crossing, right. */
static void rule(sk_buf *f, const size_t *w, int nc, const char *l, const char *fill, const char *x,
                 const char *r)
{
    sk_puts(f, l);
    for (int k = 0; k < nc; k++) {
        repeat(f, fill, w[k] + 2);
        sk_puts(f, k + 1 < nc ? x : r);
    }
    sk_putc(f, '\n');
}

/* Row r of the kept rows between light rules: "│ a │ b │". */
static void data_row(pretty_sink *s, const size_t *w, uint32_t r)
{
    sk_buf *f = &s->b;
    int nc = s->n_cols;
    sk_puts(f, "│");
    for (int k = 0; k < nc; k++) {
        size_t l, dw;
        const uint8_t *p = cell_text(s, (size_t)r * (size_t)nc + (size_t)k, &l, &dw);
        sk_putc(f, ' ');
        padded(f, &s->types[k], p, l, dw, w[k]);
        sk_puts(f, " │");
    }
    sk_putc(f, '\n');
}

static void draw_compact(pretty_sink *s, const size_t *w)
{
    sk_buf *f = &s->b;
    int nc = s->n_cols;
    sk_puts(f, "┌");
    for (int k = 0; k < nc; k++) {
        size_t nl = disp_width((const uint8_t *)s->names[k], strlen(s->names[k]));
        sk_puts(f, "─");
        if (is_numeric(&s->types[k]))
            repeat(f, "─", w[k] - nl);
        sk_puts(f, s->names[k]);
        if (!is_numeric(&s->types[k]))
            repeat(f, "─", w[k] - nl);
        sk_puts(f, "─");
        sk_puts(f, k + 1 < nc ? "┬" : "┐\n");
    }
    for (uint32_t r = 0; r < s->kept; r++)
        data_row(s, w, r);
    rule(f, w, nc, "└", "─", "┴", "┘");
}

static void draw_full(pretty_sink *s, const size_t *w)
{
    sk_buf *f = &s->b;
    int nc = s->n_cols;
    rule(f, w, nc, "┏", "━", "┳", "┓");
    sk_puts(f, "┃");
    for (int k = 0; k < nc; k++) {
        const uint8_t *n = (const uint8_t *)s->names[k];
        sk_putc(f, ' ');
        padded(f, &s->types[k], n, strlen(s->names[k]), disp_width(n, strlen(s->names[k])), w[k]);
        sk_puts(f, " ┃");
    }
    sk_putc(f, '\n');
    rule(f, w, nc, "┡", "━", "╇", "┩");
    for (uint32_t r = 0; r < s->kept; r++) {
        if (r)
            rule(f, w, nc, "├", "─", "┼", "┤");
        data_row(s, w, r);
    }
    rule(f, w, nc, "└", "─", "┴", "┘");
}

static void draw_space(pretty_sink *s, const size_t *w)
{
    sk_buf *f = &s->b;
    int nc = s->n_cols;
    for (int k = 0; k < nc; k++) {
        const uint8_t *n = (const uint8_t *)s->names[k];
        sk_puts(f, k ? "   " : " ");
        padded(f, &s->types[k], n, strlen(s->names[k]), disp_width(n, strlen(s->names[k])), w[k]);
    }
    sk_puts(f, "\n\n");
    for (uint32_t r = 0; r < s->kept; r++) {
        for (int k = 0; k < nc; k++) {
            size_t l, dw;
            const uint8_t *p = cell_text(s, (size_t)r * (size_t)nc + (size_t)k, &l, &dw);
            sk_puts(f, k ? "   " : " ");
            padded(f, &s->types[k], p, l, dw, w[k]);
        }
        sk_putc(f, '\n');
    }
}

static int pretty_end(eng_sink *sk, char *err, size_t errlen)
{
    pretty_sink *s = (pretty_sink *)sk;
    sk_buf *f = &s->b;
    int nc = s->n_cols;
    if (s->n_rows) {
        size_t *w = calloc((size_t)nc + 1, sizeof(size_t));
        if (!w) {
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        for (int k = 0; k < nc; k++) {
            w[k] = disp_width((const uint8_t *)s->names[k], strlen(s->names[k]));
            for (uint32_t r = 0; r < s->kept; r++) {
                size_t l, dw;
                cell_text(s, (size_t)r * (size_t)nc + (size_t)k, &l, &dw);
                if (dw > w[k])
                    w[k] = dw;
            }
        }
        if (s->fmt == ENG_FMT_PRETTY)
            draw_full(s, w);
        else if (s->fmt == ENG_FMT_PRETTY_SPACE)
            draw_space(s, w);
        else
            draw_compact(s, w);
        if (s->n_rows > s->kept) {
            char line[64];
            snprintf(line, sizeof(line), "  Showed first %u.\n", s->kept);
            sk_puts(f, line);
        }
        free(w);
    }
    int rc = sk_buf_finish(f);
    return rc < 0 ? sk_error(rc, err, errlen) : 0;
}

static void pretty_destroy(eng_sink *sk)
{
    pretty_sink *s = (pretty_sink *)sk;
    sk_buf_deinit(&s->b);
    sk_names_free(s->names, s->n_cols);
    free(s->types);
    free(s->text);
    free(s->cell);
    free(s->null);
    free(s);
}

static const eng_sink_ops pretty_ops = {pretty_begin, pretty_write, pretty_end, pretty_destroy};

int sk__pretty_create(eng_sink **out, eng_format fmt, const eng_writer *w)
{
    pretty_sink *s = calloc(1, sizeof(*s));
    if (!s || sk_buf_init(&s->b, w) < 0) {
        free(s);
        return -ENOMEM;
    }
    s->base.ops = &pretty_ops;
    s->fmt = fmt;
    *out = &s->base;
    return 0;
}
