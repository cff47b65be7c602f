/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_sink.c: what the format sinks share (eng_sink.h, sink_int.h): the
 * format names, the stdio writer, the output buffer, and the constructor that
 * picks a format's sink.
 */
#include "sink_int.h"

#include <errno.h>
#include <stdio.h>
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
        {"Parquet", ENG_FMT_PARQUET},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (strcasecmp(name, t[i].n) == 0)
            return t[i].f;
    return -EINVAL;
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

/* ---- sinks ---------------------------------------------------------------------- */

int eng_sink_format_create(eng_sink **out, eng_format fmt, const eng_writer *w)
{
    *out = NULL;
    switch (fmt) {
    case ENG_FMT_PRETTY_COMPACT:
        return sk__pretty_create(out, w);
    case ENG_FMT_TSV: case ENG_FMT_TSV_WITH_NAMES: case ENG_FMT_CSV: case ENG_FMT_CSV_WITH_NAMES:
    case ENG_FMT_JSON_EACH_ROW: case ENG_FMT_NULL:
        return sk__text_create(out, fmt, w);
    case ENG_FMT_PARQUET:
        return sk__parquet_create(out, w);
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
