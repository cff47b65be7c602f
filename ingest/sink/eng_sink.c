/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_sink.c: what the format sinks share (eng_sink.h, sink_int.h): the
 * format names, the stdio writer, the output buffer, the escapes of the text
 * formats, and the constructor that picks a format's sink.
 */
#include "sink_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Every output format: its ClickHouse name first, then its aliases. */
static const struct {
    const char *n;
    eng_format f;
} fmt_names[] = {
    {"PrettyCompact", ENG_FMT_PRETTY_COMPACT},
    {"TabSeparated", ENG_FMT_TSV},
    {"TabSeparatedWithNames", ENG_FMT_TSV_WITH_NAMES},
    {"TabSeparatedWithNamesAndTypes", ENG_FMT_TSV_WITH_NAMES_AND_TYPES},
    {"TabSeparatedRaw", ENG_FMT_TSV_RAW},
    {"CSV", ENG_FMT_CSV},
    {"CSVWithNames", ENG_FMT_CSV_WITH_NAMES},
    {"CSVWithNamesAndTypes", ENG_FMT_CSV_WITH_NAMES_AND_TYPES},
    {"JSON", ENG_FMT_JSON},
    {"JSONCompact", ENG_FMT_JSON_COMPACT},
    {"JSONStrings", ENG_FMT_JSON_STRINGS},
    {"JSONEachRow", ENG_FMT_JSON_EACH_ROW},
    {"JSONStringsEachRow", ENG_FMT_JSON_STRINGS_EACH_ROW},
    {"JSONCompactEachRow", ENG_FMT_JSON_COMPACT_EACH_ROW},
    {"JSONCompactEachRowWithNames", ENG_FMT_JSON_COMPACT_EACH_ROW_WITH_NAMES},
    {"JSONCompactEachRowWithNamesAndTypes", ENG_FMT_JSON_COMPACT_EACH_ROW_WITH_NAMES_AND_TYPES},
    {"JSONCompactStringsEachRow", ENG_FMT_JSON_COMPACT_STRINGS_EACH_ROW},
    {"Pretty", ENG_FMT_PRETTY},
    {"PrettySpace", ENG_FMT_PRETTY_SPACE},
    {"Vertical", ENG_FMT_VERTICAL},
    {"Markdown", ENG_FMT_MARKDOWN},
    {"Values", ENG_FMT_VALUES},
    {"Null", ENG_FMT_NULL},
    {"Parquet", ENG_FMT_PARQUET},
    /* aliases */
    {"TSV", ENG_FMT_TSV},
    {"TSVWithNames", ENG_FMT_TSV_WITH_NAMES},
    {"TSVWithNamesAndTypes", ENG_FMT_TSV_WITH_NAMES_AND_TYPES},
    {"TSVRaw", ENG_FMT_TSV_RAW},
    {"Raw", ENG_FMT_TSV_RAW},
    {"NDJSON", ENG_FMT_JSON_EACH_ROW},
    {"JSONLines", ENG_FMT_JSON_EACH_ROW},
    {"PrettyCompactMonoBlock", ENG_FMT_PRETTY_COMPACT},
    {"PrettyNoEscapes", ENG_FMT_PRETTY},
    {"PrettyCompactNoEscapes", ENG_FMT_PRETTY_COMPACT},
    {"PrettySpaceNoEscapes", ENG_FMT_PRETTY_SPACE},
    {"PrettyMonoBlock", ENG_FMT_PRETTY},
    {"MD", ENG_FMT_MARKDOWN},
};

#define N_FMT_NAMES (sizeof(fmt_names) / sizeof(fmt_names[0]))

int eng_format_parse(const char *name)
{
    for (size_t i = 0; i < N_FMT_NAMES; i++)
        if (strcmp(name, fmt_names[i].n) == 0)
            return fmt_names[i].f;
    for (size_t i = 0; i < N_FMT_NAMES; i++)
        if (strcasecmp(name, fmt_names[i].n) == 0)
            return fmt_names[i].f;
    return -EINVAL;
}

const char *eng_format_name(eng_format fmt)
{
    for (size_t i = 0; i < N_FMT_NAMES; i++)
        if (fmt_names[i].f == fmt)
            return fmt_names[i].n;
    return "?";
}

const char *eng_format_list(void)
{
    return "PrettyCompact, Pretty, PrettySpace, TabSeparated (TSV), TabSeparatedWithNames, "
           "TabSeparatedWithNamesAndTypes, TabSeparatedRaw, CSV, CSVWithNames, "
           "CSVWithNamesAndTypes, JSON, JSONCompact, JSONStrings, JSONEachRow, "
           "JSONStringsEachRow, JSONCompactEachRow, JSONCompactEachRowWithNames, "
           "JSONCompactEachRowWithNamesAndTypes, JSONCompactStringsEachRow, Vertical, Markdown, "
           "Values, Null or Parquet";
}

/* ---- the stdio writer ------------------------------------------------------- */

static int stdio_write(void *arg, const void *buf, size_t len)
{
    if (len && fwrite(buf, 1, len, arg) != len)
        return errno ? -errno : -EIO;
    return 0;
}

static int stdio_flush(void *arg)
{
    FILE *f = arg;
    if (fflush(f) != 0 || ferror(f))
        return errno ? -errno : -EIO;
    return 0;
}

void eng_writer_stdio(eng_writer *w, FILE *f)
{
    *w = (eng_writer){stdio_write, stdio_flush, f};
}

/* ---- the output buffer -------------------------------------------------------- */

int sk_buf_init(sk_buf *b, const eng_writer *w)
{
    memset(b, 0, sizeof(*b));
    b->w = *w;
    if (!(b->p = malloc(SK_BUF_BYTES)))
        return -ENOMEM;
    b->cap = SK_BUF_BYTES;
    return 0;
}

void sk_buf_deinit(sk_buf *b)
{
    ex_bytes_free(&b->arr);
    free(b->p);
    memset(b, 0, sizeof(*b));
}

int sk_buf_flush(sk_buf *b)
{
    if (b->n && !b->rc)
        b->rc = b->w.write(b->w.arg, b->p, b->n);
    b->n = 0;
    return b->rc;
}

int sk_buf_finish(sk_buf *b)
{
    sk_buf_flush(b);
    if (!b->rc && b->w.flush)
        b->rc = b->w.flush(b->w.arg);
    return b->rc;
}

void sk_write(sk_buf *b, const void *s, size_t n)
{
    const uint8_t *p = s;
    while (n) {
        if (b->n == b->cap)
            sk_buf_flush(b);
        size_t k = b->cap - b->n < n ? b->cap - b->n : n;
        memcpy(b->p + b->n, p, k);
        b->n += k;
        p += k;
        n -= k;
    }
}

int sk_error(int rc, char *err, size_t errlen)
{
    snprintf(err, errlen, "cannot write the result: %s (is the output closed or the disk full?)",
             strerror(-rc));
    return -EIO;
}

char **sk_names_copy(const char *const *names, int n)
{
    char **c = calloc((size_t)n + 1, sizeof(char *));
    for (int k = 0; c && k < n; k++)
        if (!(c[k] = strdup(names[k]))) {
            sk_names_free(c, k);
            return NULL;
        }
    return c;
}

void sk_names_free(char **names, int n)
{
    if (!names)
        return;
    for (int k = 0; k < n; k++)
        free(names[k]);
    free(names);
}

/* ---- escapes -------------------------------------------------------------------- */

void sk_tsv_escape(sk_buf *f, const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '\t': sk_puts(f, "\\t"); break;
        case '\n': sk_puts(f, "\\n"); break;
        case '\r': sk_puts(f, "\\r"); break;
        case '\\': sk_puts(f, "\\\\"); break;
        case '\'': sk_puts(f, "\\'"); break; /* as ClickHouse's writeEscapedString */
        case '\0': sk_puts(f, "\\0"); break;
        case '\b': sk_puts(f, "\\b"); break;
        case '\f': sk_puts(f, "\\f"); break;
        default: sk_putc(f, (char)s[i]);
        }
    }
}

void sk_csv_quote(sk_buf *f, const uint8_t *s, size_t n)
{
    sk_putc(f, '"');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            sk_putc(f, '"');
        sk_putc(f, (char)s[i]);
    }
    sk_putc(f, '"');
}

void sk_json_str(sk_buf *f, const uint8_t *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    sk_putc(f, '"');
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        switch (c) {
        case '"': sk_puts(f, "\\\""); break;
        case '\\': sk_puts(f, "\\\\"); break;
        case '/': sk_puts(f, "\\/"); break; /* output_format_json_escape_forward_slashes */
        case '\n': sk_puts(f, "\\n"); break;
        case '\r': sk_puts(f, "\\r"); break;
        case '\t': sk_puts(f, "\\t"); break;
        case '\b': sk_puts(f, "\\b"); break;
        case '\f': sk_puts(f, "\\f"); break;
        default:
            if (c < 0x20) {
                char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                sk_write(f, u, sizeof(u));
            } else if (c == 0xe2 && i + 2 < n && s[i + 1] == 0x80 &&
                       (s[i + 2] == 0xa8 || s[i + 2] == 0xa9)) {
                /* U+2028 / U+2029 break JavaScript string literals */
                sk_puts(f, s[i + 2] == 0xa8 ? "\\u2028" : "\\u2029");
                i += 2;
            } else {
                sk_putc(f, (char)c);
            }
        }
    }
    sk_putc(f, '"');
}

void sk_json_value(sk_buf *f, const ex_vec *v, uint32_t r, bool as_string)
{
    char buf[128];
    if (ex_null(v, r)) {
        sk_puts(f, "null");
        return;
    }
    if (v->t.kind == EX_ARRAY && !as_string) {
        uint32_t al;
        const uint8_t *p = ex_str(v, r, &al);
        f->arr.n = 0;
        if (ex_arr_text(&v->t, p, al, true, &f->arr) < 0)
            f->arr.n = 0;
        if (f->arr.n)
            sk_write(f, f->arr.p, f->arr.n);
        else
            sk_puts(f, "[]");
        return;
    }
    size_t l;
    const uint8_t *s = sk_cell(f, v, r, buf, sizeof(buf), &l);
    if (as_string) {
        sk_json_str(f, s, l);
        return;
    }
    bool quote =
        v->t.kind == EX_STRING || v->t.kind == EX_DATE || v->t.kind == EX_DATETIME ||
        ((v->t.kind == EX_INT || v->t.kind == EX_UINT) && (v->t.bits == 0 || v->t.bits == 64));
    if (v->t.kind == EX_FLOAT && !isfinite(v->d[ex_row(v, r)]))
        sk_puts(f, "null");
    else if (quote)
        sk_json_str(f, s, l);
    else
        sk_write(f, s, l);
}

void sk_type_name(const ex_type *t, char *buf, size_t cap)
{
    ex_type_name(t, buf, cap);
}

/* ---- sinks ---------------------------------------------------------------------- */

int eng_sink_format_create(eng_sink **out, eng_format fmt, const eng_writer *w)
{
    *out = NULL;
    switch (fmt) {
    case ENG_FMT_PRETTY_COMPACT:
    case ENG_FMT_PRETTY:
    case ENG_FMT_PRETTY_SPACE: return sk__pretty_create(out, fmt, w);
    case ENG_FMT_TSV:
    case ENG_FMT_TSV_WITH_NAMES:
    case ENG_FMT_TSV_WITH_NAMES_AND_TYPES:
    case ENG_FMT_TSV_RAW:
    case ENG_FMT_CSV:
    case ENG_FMT_CSV_WITH_NAMES:
    case ENG_FMT_CSV_WITH_NAMES_AND_TYPES:
    case ENG_FMT_NULL: return sk__text_create(out, fmt, w);
    case ENG_FMT_JSON:
    case ENG_FMT_JSON_COMPACT:
    case ENG_FMT_JSON_STRINGS:
    case ENG_FMT_JSON_EACH_ROW:
    case ENG_FMT_JSON_STRINGS_EACH_ROW:
    case ENG_FMT_JSON_COMPACT_EACH_ROW:
    case ENG_FMT_JSON_COMPACT_EACH_ROW_WITH_NAMES:
    case ENG_FMT_JSON_COMPACT_EACH_ROW_WITH_NAMES_AND_TYPES:
    case ENG_FMT_JSON_COMPACT_STRINGS_EACH_ROW: return sk__json_create(out, fmt, w);
    case ENG_FMT_VERTICAL:
    case ENG_FMT_MARKDOWN:
    case ENG_FMT_VALUES: return sk__rows_create(out, fmt, w);
    case ENG_FMT_PARQUET: return sk__parquet_create(out, w);
    }
    return -EINVAL;
}

void eng_sink_destroy(eng_sink **s)
{
    if (!s || !*s)
        return;
    (*s)->ops->destroy(*s);
    *s = NULL;
}
