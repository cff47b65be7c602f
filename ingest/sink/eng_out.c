/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_out.c: ClickHouse's output formats for a result table: PrettyCompact
 * (box drawing, numbers right-aligned, NULL as ᴺᵁᴸᴸ, at most 10000 rows like
 * output_format_pretty_max_rows), TabSeparated[WithNames] (\N for NULL,
 * backslash escapes), CSV[WithNames] (strings and dates double-quoted, \N for
 * NULL), JSONEachRow (64-bit integers quoted, as
 * output_format_json_quote_64bit_integers=1 does; nan/inf as null) and Null.
 */
#include "eng_out.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int eng_format_parse(const char *name)
{
    static const struct { const char *n; eng_format f; } t[] = {
        {"PrettyCompact", ENG_FMT_PRETTY_COMPACT}, {"Pretty", ENG_FMT_PRETTY_COMPACT},
        {"TSV", ENG_FMT_TSV}, {"TabSeparated", ENG_FMT_TSV},
        {"TSVWithNames", ENG_FMT_TSV_WITH_NAMES}, {"TabSeparatedWithNames", ENG_FMT_TSV_WITH_NAMES},
        {"CSV", ENG_FMT_CSV}, {"CSVWithNames", ENG_FMT_CSV_WITH_NAMES},
        {"JSONEachRow", ENG_FMT_JSON_EACH_ROW}, {"NDJSON", ENG_FMT_JSON_EACH_ROW},
        {"JSONLines", ENG_FMT_JSON_EACH_ROW}, {"Null", ENG_FMT_NULL},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (strcasecmp(name, t[i].n) == 0)
            return t[i].f;
    return -EINVAL;
}

static bool is_numeric(const ex_vec *v)
{
    return v->t.kind == EX_INT || v->t.kind == EX_UINT || v->t.kind == EX_FLOAT;
}

static void tsv_escape(FILE *f, const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '\t': fputs("\\t", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\0': fputs("\\0", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        default: fputc(s[i], f);
        }
    }
}

static void csv_quote(FILE *f, const uint8_t *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            fputc('"', f);
        fputc(s[i], f);
    }
    fputc('"', f);
}

static void json_str(FILE *f, const uint8_t *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        switch (c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        default:
            if (c < 0x20)
                fprintf(f, "\\u%04x", c);
            else
                fputc(c, f);
        }
    }
    fputc('"', f);
}

static const uint8_t *cell(const ex_vec *v, uint32_t r, char *buf, size_t cap, size_t *len)
{
    const uint8_t *sp;
    size_t n = ex_fmt_value(v, r, buf, cap, &sp);
    *len = n;
    return sp ? sp : (const uint8_t *)buf;
}

static size_t disp_width(const uint8_t *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        w += (s[i] & 0xc0) != 0x80;
    return w;
}

static void repeat(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fputs(s, f);
}

#define PRETTY_MAX_ROWS 10000

static void write_pretty(FILE *f, const eng_out_table *t)
{
    uint32_t rows = t->n_rows > PRETTY_MAX_ROWS ? PRETTY_MAX_ROWS : t->n_rows;
    size_t *w = calloc((size_t)t->n_cols + 1, sizeof(size_t));
    if (!w)
        return;
    char buf[128];
    for (int k = 0; k < t->n_cols; k++) {
        w[k] = disp_width((const uint8_t *)t->names[k], strlen(t->names[k]));
        for (uint32_t r = 0; r < rows; r++) {
            size_t l;
            size_t dw = 4;
            if (!ex_null(&t->cols[k], r)) {
                const uint8_t *s = cell(&t->cols[k], r, buf, sizeof(buf), &l);
                dw = disp_width(s, l);
            }
            if (dw > w[k])
                w[k] = dw;
        }
    }
    /* header */
    fputs("┌", f);
    for (int k = 0; k < t->n_cols; k++) {
        size_t nl = disp_width((const uint8_t *)t->names[k], strlen(t->names[k]));
        fputs("─", f);
        if (is_numeric(&t->cols[k]))
            repeat(f, "─", w[k] - nl);
        fputs(t->names[k], f);
        if (!is_numeric(&t->cols[k]))
            repeat(f, "─", w[k] - nl);
        fputs("─", f);
        fputs(k + 1 < t->n_cols ? "┬" : "┐\n", f);
    }
    for (uint32_t r = 0; r < rows; r++) {
        fputs("│", f);
        for (int k = 0; k < t->n_cols; k++) {
            size_t l, dw;
            const uint8_t *s;
            if (ex_null(&t->cols[k], r)) {
                s = (const uint8_t *)"ᴺᵁᴸᴸ";
                l = strlen("ᴺᵁᴸᴸ");
                dw = 4;
            } else {
                s = cell(&t->cols[k], r, buf, sizeof(buf), &l);
                dw = disp_width(s, l);
            }
            fputc(' ', f);
            if (is_numeric(&t->cols[k]))
                repeat(f, " ", w[k] - dw);
            fwrite(s, 1, l, f);
            if (!is_numeric(&t->cols[k]))
                repeat(f, " ", w[k] - dw);
            fputs(" │", f);
        }
        fputc('\n', f);
    }
    fputs("└", f);
    for (int k = 0; k < t->n_cols; k++) {
        repeat(f, "─", w[k] + 2);
        fputs(k + 1 < t->n_cols ? "┴" : "┘\n", f);
    }
    if (t->n_rows > rows)
        fprintf(f, "  Showed first %u.\n", rows);
    free(w);
}

int eng_out_write(FILE *f, eng_format fmt, const eng_out_table *t, char *err, size_t errlen)
{
    char buf[128];
    switch (fmt) {
    case ENG_FMT_NULL:
        break;
    case ENG_FMT_PRETTY_COMPACT:
        if (t->n_rows)
            write_pretty(f, t);
        break;
    case ENG_FMT_TSV: case ENG_FMT_TSV_WITH_NAMES:
        if (fmt == ENG_FMT_TSV_WITH_NAMES) {
            for (int k = 0; k < t->n_cols; k++) {
                if (k)
                    fputc('\t', f);
                tsv_escape(f, (const uint8_t *)t->names[k], strlen(t->names[k]));
            }
            fputc('\n', f);
        }
        for (uint32_t r = 0; r < t->n_rows; r++) {
            for (int k = 0; k < t->n_cols; k++) {
                if (k)
                    fputc('\t', f);
                if (ex_null(&t->cols[k], r)) {
                    fputs("\\N", f);
                    continue;
                }
                size_t l;
                const uint8_t *s = cell(&t->cols[k], r, buf, sizeof(buf), &l);
                tsv_escape(f, s, l);
            }
            fputc('\n', f);
        }
        break;
    case ENG_FMT_CSV: case ENG_FMT_CSV_WITH_NAMES:
        if (fmt == ENG_FMT_CSV_WITH_NAMES) {
            for (int k = 0; k < t->n_cols; k++) {
                if (k)
                    fputc(',', f);
                csv_quote(f, (const uint8_t *)t->names[k], strlen(t->names[k]));
            }
            fputc('\n', f);
        }
        for (uint32_t r = 0; r < t->n_rows; r++) {
            for (int k = 0; k < t->n_cols; k++) {
                if (k)
                    fputc(',', f);
                const ex_vec *v = &t->cols[k];
                if (ex_null(v, r)) {
                    fputs("\\N", f);
                    continue;
                }
                size_t l;
                const uint8_t *s = cell(v, r, buf, sizeof(buf), &l);
                if (v->t.kind == EX_STRING || v->t.kind == EX_DATE || v->t.kind == EX_DATETIME)
                    csv_quote(f, s, l);
                else
                    fwrite(s, 1, l, f);
            }
            fputc('\n', f);
        }
        break;
    case ENG_FMT_JSON_EACH_ROW:
        for (uint32_t r = 0; r < t->n_rows; r++) {
            fputc('{', f);
            for (int k = 0; k < t->n_cols; k++) {
                if (k)
                    fputc(',', f);
                json_str(f, (const uint8_t *)t->names[k], strlen(t->names[k]));
                fputc(':', f);
                const ex_vec *v = &t->cols[k];
                if (ex_null(v, r)) {
                    fputs("null", f);
                    continue;
                }
                size_t l;
                const uint8_t *s = cell(v, r, buf, sizeof(buf), &l);
                bool quote = v->t.kind == EX_STRING || v->t.kind == EX_DATE ||
                             v->t.kind == EX_DATETIME ||
                             ((v->t.kind == EX_INT || v->t.kind == EX_UINT) &&
                              (v->t.bits == 0 || v->t.bits == 64));
                if (v->t.kind == EX_FLOAT && !isfinite(v->d[ex_row(v, r)]))
                    fputs("null", f);
                else if (quote)
                    json_str(f, s, l);
                else
                    fwrite(s, 1, l, f);
            }
            fputs("}\n", f);
        }
        break;
    }
    if (fflush(f) != 0 || ferror(f)) {
        snprintf(err, errlen, "cannot write the result: %s (is the output closed or the disk full?)",
                 strerror(errno));
        return -EIO;
    }
    return 0;
}
