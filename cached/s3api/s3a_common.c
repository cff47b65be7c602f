/* SPDX-License-Identifier: Apache-2.0
 *
 * s3a_common.c: the small things every S3 API piece uses (s3a.h): the buffer,
 * the error, header lookup, percent decoding, the three date forms S3 speaks
 * (ISO 8601 basic in signatures, RFC 1123 in headers, ISO 8601 with
 * milliseconds in XML).
 */
#include "s3a.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- buffer ------------------------------------------------------------------ */

static bool buf_grow(s3a_buf *b, size_t more)
{
    if (b->oom)
        return false;
    if (b->len + more + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 512;
    while (cap < b->len + more + 1) {
        if (cap > SIZE_MAX / 2) {
            b->oom = true;
            return false;
        }
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (p == NULL) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void s3a_buf_add(s3a_buf *b, const void *data, size_t len)
{
    if (!buf_grow(b, len))
        return;
    if (len)
        memcpy(b->p + b->len, data, len);
    b->len += len;
    b->p[b->len] = '\0';
}

void s3a_buf_adds(s3a_buf *b, const char *s)
{
    s3a_buf_add(b, s, strlen(s));
}

void s3a_buf_printf(s3a_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[256];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = true;
        return;
    }
    if ((size_t)n < sizeof tmp) {
        s3a_buf_add(b, tmp, (size_t)n);
        return;
    }
    if (!buf_grow(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void s3a_buf_free(s3a_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ---- errors ------------------------------------------------------------------ */

static void drop_extras(s3a_error *e)
{
    for (int i = 0; i < e->n_extra; i++)
        free(e->extra[i].value);
    e->n_extra = 0;
}

int s3a_error_set(s3a_error *e, int status, const char *code, const char *fmt, ...)
{
    if (e != NULL) {
        drop_extras(e);
        e->status = status;
        e->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->message, sizeof e->message, fmt, ap);
        va_end(ap);
    }
    if (status == 401 || status == 403)
        return -EACCES;
    if (status == 404)
        return -ENOENT;
    if (status == 501)
        return -ENOTSUP;
    if (status >= 400 && status < 500)
        return -EINVAL;
    return -EIO;
}

void s3a_error_extra(s3a_error *e, const char *name, const char *value, size_t len)
{
    if (e == NULL || e->n_extra >= S3A_ERR_EXTRA_MAX)
        return;
    char *v = malloc(len + 1);
    if (v == NULL)
        return;
    memcpy(v, value, len);
    v[len] = '\0';
    e->extra[e->n_extra].name = name;
    e->extra[e->n_extra].value = v;
    e->n_extra++;
}

void s3a_error_deinit(s3a_error *e)
{
    if (e == NULL)
        return;
    drop_extras(e);
    memset(e, 0, sizeof *e);
}

/* ---- headers and escapes -------------------------------------------------------- */

const char *s3a_header_get(const s3a_header *h, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (h[i].name != NULL && strcasecmp(h[i].name, name) == 0)
            return h[i].value ? h[i].value : "";
    return NULL;
}

int s3a_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

ssize_t s3a_pct_decode(const char *in, size_t len, char *out)
{
    size_t w = 0;
    for (size_t i = 0; i < len; i++) {
        if (in[i] != '%') {
            if (in[i] == '\0')
                return -EINVAL;
            out[w++] = in[i];
            continue;
        }
        if (i + 2 >= len)
            return -EINVAL;
        int hi = s3a_hex_digit(in[i + 1]), lo = s3a_hex_digit(in[i + 2]);
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
            return -EINVAL;
        out[w++] = (char)(hi * 16 + lo);
        i += 2;
    }
    out[w] = '\0';
    return (ssize_t)w;
}

/* ---- the query ---------------------------------------------------------------------- */

void s3a_query_free(s3a_query *q)
{
    for (size_t i = 0; i < q->n; i++) {
        free(q->p[i].name);
        free(q->p[i].value);
    }
    free(q->p);
    q->p = NULL;
    q->n = 0;
}

char *s3a_pct_decode_dup(const char *s, size_t n, int *rc)
{
    char *d = malloc(n + 1);
    if (d == NULL) {
        *rc = -ENOMEM;
        return NULL;
    }
    if (s3a_pct_decode(s, n, d) < 0) {
        free(d);
        *rc = -EINVAL;
        return NULL;
    }
    return d;
}

int s3a_query_parse(const char *raw, s3a_query *out)
{
    out->p = NULL;
    out->n = 0;
    if (raw == NULL || raw[0] == '\0')
        return 0;
    size_t cap = 1;
    for (const char *c = raw; *c; c++)
        cap += *c == '&';
    out->p = calloc(cap, sizeof *out->p);
    if (out->p == NULL)
        return -ENOMEM;
    const char *p = raw;
    int rc = 0;
    while (*p) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        if (len > 0) {
            const char *eq = memchr(p, '=', len);
            size_t nl = eq ? (size_t)(eq - p) : len;
            char *name = s3a_pct_decode_dup(p, nl, &rc);
            char *val =
                name ? s3a_pct_decode_dup(eq ? eq + 1 : "", eq ? len - nl - 1 : 0, &rc) : NULL;
            if (name == NULL || val == NULL) {
                free(name);
                s3a_query_free(out);
                return rc;
            }
            out->p[out->n].name = name;
            out->p[out->n].value = val;
            out->p[out->n].has_eq = eq != NULL;
            out->n++;
        }
        p += len;
        if (*p == '&')
            p++;
    }
    return 0;
}

const s3a_qparam *s3a_query_find(const s3a_query *q, const char *name)
{
    for (size_t i = 0; i < q->n; i++)
        if (strcmp(q->p[i].name, name) == 0)
            return &q->p[i];
    return NULL;
}

const char *s3a_query_get(const s3a_query *q, const char *name)
{
    const s3a_qparam *p = s3a_query_find(q, name);
    return p ? p->value : NULL;
}

/* ---- dates ------------------------------------------------------------------------ */

static int digits(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

static int64_t from_fields(int Y, int M, int D, int h, int m, int s)
{
    if (Y < 1970 || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || s > 60)
        return -1;
    struct tm tm = {0};
    tm.tm_year = Y - 1900;
    tm.tm_mon = M - 1;
    tm.tm_mday = D;
    tm.tm_hour = h;
    tm.tm_min = m;
    tm.tm_sec = s;
    time_t t = timegm(&tm);
    /* timegm normalises 31 February into March: refuse it */
    if (t == (time_t)-1 || tm.tm_mday != D || tm.tm_mon != M - 1)
        return -1;
    return (int64_t)t;
}

int64_t s3a_parse_amz_date(const char *s)
{
    if (s == NULL || strlen(s) != 16 || s[8] != 'T' || s[15] != 'Z')
        return -1;
    int Y = digits(s, 4), M = digits(s + 4, 2), D = digits(s + 6, 2);
    int h = digits(s + 9, 2), m = digits(s + 11, 2), sec = digits(s + 13, 2);
    if (Y < 0 || M < 0 || D < 0 || h < 0 || m < 0 || sec < 0)
        return -1;
    return from_fields(Y, M, D, h, m, sec);
}

int64_t s3a_parse_http_date(const char *s)
{
    static const char mons[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    /* "Sun, 06 Nov 1994 08:49:37 GMT" */
    if (s == NULL || strlen(s) != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' ||
        s[16] != ' ' || s[19] != ':' || s[22] != ':' || s[25] != ' ' || strcmp(s + 26, "GMT") != 0)
        return -1;
    int M = -1;
    for (int i = 0; i < 12; i++)
        if (strncmp(s + 8, mons[i], 3) == 0)
            M = i + 1;
    int D = digits(s + 5, 2), Y = digits(s + 12, 4);
    int h = digits(s + 17, 2), m = digits(s + 20, 2), sec = digits(s + 23, 2);
    if (M < 0 || D < 0 || Y < 0 || h < 0 || m < 0 || sec < 0)
        return -1;
    return from_fields(Y, M, D, h, m, sec);
}

int64_t s3a_parse_iso8601(const char *s)
{
    /* "2024-01-01T00:00:00.000Z", the fraction optional */
    if (s == NULL || strlen(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
        s[16] != ':')
        return -1;
    int Y = digits(s, 4), M = digits(s + 5, 2), D = digits(s + 8, 2);
    int h = digits(s + 11, 2), m = digits(s + 14, 2), sec = digits(s + 17, 2);
    if (Y < 0 || M < 0 || D < 0 || h < 0 || m < 0 || sec < 0)
        return -1;
    return from_fields(Y, M, D, h, m, sec);
}

void s3a_iso8601_ms(int64_t unix_ms, char out[25])
{
    int64_t ms = unix_ms % 1000;
    time_t t = (time_t)(unix_ms / 1000);
    if (ms < 0) {
        ms += 1000;
        t -= 1;
    }
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL || tm.tm_year + 1900 > 9999 || tm.tm_year < 0) {
        memcpy(out, "1970-01-01T00:00:00.000Z", 25);
        return;
    }
    /* every field is in range here: written digit by digit */
    const int f[7] = {tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                      tm.tm_min,         tm.tm_sec,     (int)ms};
    const int w[7] = {4, 2, 2, 2, 2, 2, 3};
    const char sep[7] = {'-', '-', 'T', ':', ':', '.', 'Z'};
    char *p = out;
    for (int i = 0; i < 7; i++) {
        for (int d = w[i] - 1, v = f[i]; d >= 0; d--, v /= 10)
            p[d] = (char)('0' + v % 10);
        p += w[i];
        *p++ = sep[i];
    }
    *p = '\0';
}
