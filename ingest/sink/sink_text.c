/* SPDX-License-Identifier: Apache-2.0
 *
 * sink_text.c: the delimited row formats of eng_sink.h, written a block at a
 * time as the blocks arrive: TabSeparated[WithNames[AndTypes]] (\N for NULL,
 * backslash escapes), TabSeparatedRaw (no escapes), CSV[WithNames[AndTypes]]
 * (strings and dates double-quoted, \N for NULL) and Null. The header lines
 * of *WithNames and *WithNamesAndTypes are written at begin; each block's
 * bytes go to the writer when the block is done, so the sink holds at most
 * one buffer.
 */
#include "sink_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct text_sink {
    eng_sink base;
    eng_format fmt;
    sk_buf b;
} text_sink;

static bool is_csv(eng_format f)
{
    return f == ENG_FMT_CSV || f == ENG_FMT_CSV_WITH_NAMES || f == ENG_FMT_CSV_WITH_NAMES_AND_TYPES;
}

/* One header line: names or type names, escaped as the format escapes. */
static void header_line(text_sink *s, const char *const *cells, int n)
{
    sk_buf *f = &s->b;
    for (int k = 0; k < n; k++) {
        if (k)
            sk_putc(f, is_csv(s->fmt) ? ',' : '\t');
        if (is_csv(s->fmt))
            sk_csv_quote(f, (const uint8_t *)cells[k], strlen(cells[k]));
        else
            sk_tsv_escape(f, (const uint8_t *)cells[k], strlen(cells[k]));
    }
    sk_putc(f, '\n');
}

static int text_begin(eng_sink *sk, const char *const *names, const ex_type *types, int n_cols,
                      char *err, size_t errlen)
{
    text_sink *s = (text_sink *)sk;
    bool with_names = s->fmt == ENG_FMT_TSV_WITH_NAMES || s->fmt == ENG_FMT_CSV_WITH_NAMES ||
                      s->fmt == ENG_FMT_TSV_WITH_NAMES_AND_TYPES ||
                      s->fmt == ENG_FMT_CSV_WITH_NAMES_AND_TYPES;
    bool with_types =
        s->fmt == ENG_FMT_TSV_WITH_NAMES_AND_TYPES || s->fmt == ENG_FMT_CSV_WITH_NAMES_AND_TYPES;
    if (with_names)
        header_line(s, names, n_cols);
    if (with_types) {
        char **tn = calloc((size_t)n_cols + 1, sizeof(char *));
        for (int k = 0; tn && k < n_cols; k++) {
            char b[96];
            sk_type_name(&types[k], b, sizeof(b));
            if (!(tn[k] = strdup(b))) {
                sk_names_free(tn, k);
                tn = NULL;
            }
        }
        if (!tn) {
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        header_line(s, (const char *const *)tn, n_cols);
        sk_names_free(tn, n_cols);
    }
    return 0;
}

static void write_tsv(sk_buf *f, const eng_block *t, bool raw)
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
            const uint8_t *s = sk_cell(f, &t->cols[k], r, buf, sizeof(buf), &l);
            if (raw || t->cols[k].t.kind == EX_ARRAY) /* an array's text is escaped */
                sk_write(f, s, l);
            else
                sk_tsv_escape(f, s, l);
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
            const uint8_t *s = sk_cell(f, v, r, buf, sizeof(buf), &l);
            if (v->t.kind == EX_STRING || v->t.kind == EX_DATE || v->t.kind == EX_DATETIME ||
                v->t.kind == EX_ARRAY)
                sk_csv_quote(f, s, l);
            else
                sk_write(f, s, l);
        }
        sk_putc(f, '\n');
    }
}

static int text_write(eng_sink *sk, const eng_block *t, char *err, size_t errlen)
{
    text_sink *s = (text_sink *)sk;
    if (s->fmt == ENG_FMT_NULL)
        return 0;
    if (is_csv(s->fmt))
        write_csv(&s->b, t);
    else
        write_tsv(&s->b, t, s->fmt == ENG_FMT_TSV_RAW);
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
