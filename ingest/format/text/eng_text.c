/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_text.c: the text readers: CSV and TSV (plain, with ClickHouse's header
 * detection, and *WithNames) and JSONEachRow, with schema inference from the
 * first 25000 rows (Int64, Float64, Bool, Date, DateTime, String; every column
 * Nullable, as ClickHouse infers them), gzip and zstd by extension. Input is
 * untrusted: every error is a sentence naming the file, the line and, where
 * known, the column and the value; nothing here aborts on bad bytes.
 *
 * Field rules: CSV fields may be double-quoted ("" is a quote inside); an
 * empty unquoted field and \N are NULL; TSV fields use backslash escapes and
 * \N for NULL; an empty TSV field is '' for strings and NULL otherwise.
 */
#include "eng_text.h"
#include "jsonu.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>
#include <zstd.h>

#define TX_INFER_ROWS 25000

/* ---- format names ---------------------------------------------------------- */

static bool ends_with(const char *s, size_t n, const char *suf)
{
    size_t k = strlen(suf);
    return n >= k && strncasecmp(s + n - k, suf, k) == 0;
}

int tx_format_of_name(const char *name)
{
    size_t n = strlen(name);
    if (ends_with(name, n, ".gz"))
        n -= 3;
    else if (ends_with(name, n, ".zst"))
        n -= 4;
    else if (ends_with(name, n, ".zstd"))
        n -= 5;
    if (ends_with(name, n, ".parquet") || ends_with(name, n, ".pq"))
        return 0;
    if (ends_with(name, n, ".csv"))
        return TX_CSV;
    if (ends_with(name, n, ".tsv") || ends_with(name, n, ".tab"))
        return TX_TSV;
    if (ends_with(name, n, ".ndjson") || ends_with(name, n, ".jsonl") ||
        ends_with(name, n, ".json"))
        return TX_JSON_EACH_ROW;
    return -ENOENT;
}

int tx_format_of_arg(const char *f)
{
    static const struct {
        const char *n;
        int k;
    } t[] = {
        {"Parquet", 0},
        {"CSV", TX_CSV},
        {"CSVWithNames", TX_CSV_NAMES},
        {"TSV", TX_TSV},
        {"TabSeparated", TX_TSV},
        {"TSVWithNames", TX_TSV_NAMES},
        {"TabSeparatedWithNames", TX_TSV_NAMES},
        {"JSONEachRow", TX_JSON_EACH_ROW},
        {"NDJSON", TX_JSON_EACH_ROW},
        {"JSONLines", TX_JSON_EACH_ROW},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (strcasecmp(f, t[i].n) == 0)
            return t[i].k;
    return -EINVAL;
}

/* ---- decompression ---------------------------------------------------------- */

int tx_codec_of_arg(const char *s)
{
    static const struct {
        const char *n;
        tx_codec c;
    } t[] = {
        {"auto", TX_CODEC_AUTO}, {"none", TX_CODEC_NONE},    {"gzip", TX_CODEC_GZIP},
        {"gz", TX_CODEC_GZIP},   {"deflate", TX_CODEC_GZIP}, {"zstd", TX_CODEC_ZSTD},
        {"zst", TX_CODEC_ZSTD},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (strcasecmp(s, t[i].n) == 0)
            return (int)t[i].c;
    return -ENOENT;
}

int tx_decompress(const char *name, const uint8_t *in, size_t len, uint8_t **out, size_t *outlen,
                  char *err, size_t errlen)
{
    return tx_decompress_as(TX_CODEC_AUTO, name, in, len, out, outlen, err, errlen);
}

int tx_decompress_as(tx_codec codec, const char *name, const uint8_t *in, size_t len, uint8_t **out,
                     size_t *outlen, char *err, size_t errlen)
{
    size_t n = strlen(name);
    bool gz = ends_with(name, n, ".gz"),
         zs = ends_with(name, n, ".zst") || ends_with(name, n, ".zstd");
    if (codec != TX_CODEC_AUTO) {
        gz = codec == TX_CODEC_GZIP;
        zs = codec == TX_CODEC_ZSTD;
    }
    size_t cap = gz || zs ? len * 4 + 1024 : len + 1;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        snprintf(err, errlen, "out of memory reading %s", name);
        return -ENOMEM;
    }
    if (!gz && !zs) {
        memcpy(buf, in, len);
        buf[len] = 0;
        *out = buf;
        *outlen = len;
        return 0;
    }
    size_t o = 0;
    if (gz) {
        z_stream z;
        memset(&z, 0, sizeof(z));
        if (inflateInit2(&z, 15 + 32) != Z_OK) {
            free(buf);
            snprintf(err, errlen, "cannot start gzip for %s", name);
            return -ENOMEM;
        }
        z.next_in = (Bytef *)in;
        z.avail_in = (uInt)(len > UINT32_MAX ? UINT32_MAX : len);
        size_t fed = z.avail_in;
        for (;;) {
            if (o + 1 >= cap) {
                size_t nc = cap * 2;
                uint8_t *nb = realloc(buf, nc);
                if (!nb) {
                    inflateEnd(&z);
                    free(buf);
                    snprintf(err, errlen, "out of memory decompressing %s", name);
                    return -ENOMEM;
                }
                buf = nb;
                cap = nc;
            }
            z.next_out = buf + o;
            size_t room = cap - o - 1;
            z.avail_out = (uInt)(room > UINT32_MAX ? UINT32_MAX : room);
            uInt before = z.avail_out;
            int zr = inflate(&z, Z_NO_FLUSH);
            o += before - z.avail_out;
            if (z.avail_in == 0 && fed < len) {
                size_t more = len - fed;
                z.next_in = (Bytef *)(in + fed);
                z.avail_in = (uInt)(more > UINT32_MAX ? UINT32_MAX : more);
                fed += z.avail_in;
            }
            if (zr == Z_STREAM_END) {
                if (z.avail_in == 0)
                    break;
                inflateReset(&z); /* another gzip member */
                continue;
            }
            if (zr == Z_BUF_ERROR && z.avail_in == 0) {
                inflateEnd(&z);
                free(buf);
                snprintf(err, errlen, "%s is truncated: the gzip stream ends early", name);
                return -EBADMSG;
            }
            if (zr != Z_OK && zr != Z_BUF_ERROR) {
                inflateEnd(&z);
                free(buf);
                snprintf(err, errlen, "%s is not valid gzip: %s", name, z.msg ? z.msg : "bad data");
                return -EBADMSG;
            }
        }
        inflateEnd(&z);
    } else {
        ZSTD_DStream *d = ZSTD_createDStream();
        if (!d) {
            free(buf);
            return -ENOMEM;
        }
        ZSTD_initDStream(d);
        ZSTD_inBuffer ib = {in, len, 0};
        size_t last = 1;
        while (ib.pos < ib.size || last != 0) {
            if (o + 1 >= cap) {
                size_t nc = cap * 2;
                uint8_t *nb = realloc(buf, nc);
                if (!nb) {
                    ZSTD_freeDStream(d);
                    free(buf);
                    snprintf(err, errlen, "out of memory decompressing %s", name);
                    return -ENOMEM;
                }
                buf = nb;
                cap = nc;
            }
            ZSTD_outBuffer ob = {buf + o, cap - o - 1, 0};
            size_t before = ib.pos;
            last = ZSTD_decompressStream(d, &ob, &ib);
            o += ob.pos;
            if (ZSTD_isError(last)) {
                ZSTD_freeDStream(d);
                free(buf);
                snprintf(err, errlen, "%s is not valid zstd: %s", name, ZSTD_getErrorName(last));
                return -EBADMSG;
            }
            if (ib.pos == ib.size && ob.pos == 0 && before == ib.pos && last != 0) {
                ZSTD_freeDStream(d);
                free(buf);
                snprintf(err, errlen, "%s is truncated: the zstd frame ends early", name);
                return -EBADMSG;
            }
        }
        ZSTD_freeDStream(d);
    }
    buf[o] = 0;
    *out = buf;
    *outlen = o;
    return 0;
}

/* ---- tokenizing ------------------------------------------------------------------ */

typedef struct field {
    const char *p; /* raw bytes (inside quotes for quoted CSV) */
    size_t len;
    bool quoted;
    bool escaped; /* needs unescaping ("" in CSV, \x in TSV) */
    bool null;
} field;

typedef struct lexer {
    tx_format f;
    const char *name;
    const char *s;
    size_t n, pos;
    long line;
    char *err;
    size_t errlen;
    field *fl;
    int nf, capf;
} lexer;

static int lx_err(lexer *l, long line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int lx_err(lexer *l, long line, const char *fmt, ...)
{
    int k = snprintf(l->err, l->errlen, "%s, line %ld: ", l->name, line);
    if (k > 0 && (size_t)k < l->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(l->err + k, l->errlen - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return -EBADMSG;
}

/* A row whose field count is not the file's: the same sentence wherever it
 * is found (schema inference, any column selection of a scan). */
static int bad_width(lexer *l, long line, int nf, int want, bool header)
{
    bool csv = l->f == TX_CSV || l->f == TX_CSV_NAMES;
    return lx_err(l, line,
                  "the row has %d field%s, the %s %d: every row needs the same number "
                  "of fields (%s)",
                  nf, nf == 1 ? "" : "s", header ? "header" : "first row", want,
                  csv ? "a comma inside a value must be in double quotes"
                      : "a tab inside a value must be written \\t");
}

static int push_field(lexer *l, field fd)
{
    if (l->nf == l->capf) {
        int cap = l->capf ? l->capf * 2 : 16;
        if (cap > 100000)
            return lx_err(l, l->line, "more than 100000 fields in one row: is the format right?");
        field *nf = realloc(l->fl, sizeof(field) * (size_t)cap);
        if (!nf)
            return -ENOMEM;
        l->fl = nf;
        l->capf = cap;
    }
    l->fl[l->nf++] = fd;
    return 0;
}

/* Reads the next CSV/TSV record into l->fl. 1 a record, 0 at the end. */
static int next_record(lexer *l)
{
    l->nf = 0;
    /* skip empty lines at the end */
    while (l->pos < l->n && (l->s[l->pos] == '\n' || l->s[l->pos] == '\r')) {
        size_t p = l->pos;
        while (p < l->n && (l->s[p] == '\r' || l->s[p] == '\n'))
            p++;
        if (p >= l->n) {
            l->pos = l->n;
            return 0;
        }
        break;
    }
    if (l->pos >= l->n)
        return 0;
    bool csv = l->f == TX_CSV || l->f == TX_CSV_NAMES;
    char delim = csv ? ',' : '\t';
    for (;;) {
        field fd = {0};
        long start_line = l->line;
        if (csv && l->pos < l->n && l->s[l->pos] == '"') {
            size_t p = l->pos + 1;
            fd.quoted = true;
            for (;;) {
                if (p >= l->n)
                    return lx_err(l, start_line,
                                  "unterminated quoted field (a '\"' opens it and "
                                  "none closes it): fix the quoting");
                if (l->s[p] == '"') {
                    if (p + 1 < l->n && l->s[p + 1] == '"') {
                        fd.escaped = true;
                        p += 2;
                        continue;
                    }
                    break;
                }
                if (l->s[p] == '\n')
                    l->line++;
                p++;
            }
            fd.p = l->s + l->pos + 1;
            fd.len = p - l->pos - 1;
            l->pos = p + 1;
            if (l->pos < l->n && l->s[l->pos] != delim && l->s[l->pos] != '\n' &&
                l->s[l->pos] != '\r')
                return lx_err(l, l->line,
                              "unexpected '%c' after a closing quote in field %d: "
                              "quote the whole field and double inner quotes",
                              l->s[l->pos], l->nf + 1);
        } else {
            size_t p = l->pos;
            while (p < l->n && l->s[p] != delim && l->s[p] != '\n') {
                if (!csv && l->s[p] == '\\' && p + 1 < l->n) {
                    fd.escaped = true;
                    p++;
                }
                p++;
            }
            size_t e = p;
            if (e > l->pos && l->s[e - 1] == '\r' && (e >= l->n || l->s[e] == '\n'))
                e--;
            fd.p = l->s + l->pos;
            fd.len = e - l->pos;
            l->pos = p;
            if (fd.len == 2 && fd.p[0] == '\\' && fd.p[1] == 'N')
                fd.null = true;
            if (csv && fd.len == 0)
                fd.null = true;
        }
        int rc = push_field(l, fd);
        if (rc < 0)
            return rc;
        if (l->pos < l->n && l->s[l->pos] == delim) {
            l->pos++;
            continue;
        }
        if (l->pos < l->n && l->s[l->pos] == '\r')
            l->pos++;
        if (l->pos < l->n && l->s[l->pos] == '\n') {
            l->pos++;
            l->line++;
        }
        return 1;
    }
}

/* Unescapes a field into buf (cap >= len). Returns the length. */
static size_t unescape(const lexer *l, const field *fd, char *buf)
{
    size_t o = 0;
    bool csv = l->f == TX_CSV || l->f == TX_CSV_NAMES;
    for (size_t i = 0; i < fd->len; i++) {
        char c = fd->p[i];
        if (csv && c == '"' && i + 1 < fd->len && fd->p[i + 1] == '"') {
            buf[o++] = '"';
            i++;
        } else if (!csv && c == '\\' && i + 1 < fd->len) {
            char e = fd->p[++i];
            switch (e) {
            case 't': buf[o++] = '\t'; break;
            case 'n': buf[o++] = '\n'; break;
            case 'r': buf[o++] = '\r'; break;
            case '0': buf[o++] = '\0'; break;
            case 'b': buf[o++] = '\b'; break;
            case 'f': buf[o++] = '\f'; break;
            default: buf[o++] = e; break;
            }
        } else {
            buf[o++] = c;
        }
    }
    return o;
}

/* ---- JSON ---------------------------------------------------------------------- */

typedef struct jval {
    char key[256];
    int kind;      /* 0 null, 1 number, 2 string, 3 bool */
    const char *p; /* number text / string raw (between quotes) */
    size_t len;
    bool escaped;
    bool is_float;
    bool b;
} jval;

static void skip_ws(lexer *l)
{
    while (l->pos < l->n) {
        char c = l->s[l->pos];
        if (c == '\n')
            l->line++;
        else if (c != ' ' && c != '\t' && c != '\r')
            break;
        l->pos++;
    }
}

static int json_string(lexer *l, const char **p, size_t *len, bool *escaped)
{
    if (l->pos >= l->n || l->s[l->pos] != '"')
        return lx_err(l, l->line, "expected a '\"' to start a JSON string");
    size_t q = l->pos + 1;
    *escaped = false;
    while (q < l->n && l->s[q] != '"') {
        if (l->s[q] == '\\') {
            *escaped = true;
            q++;
        }
        if (q < l->n && l->s[q] == '\n')
            return lx_err(l, l->line, "a newline inside a JSON string: escape it as \\n");
        q++;
    }
    if (q >= l->n)
        return lx_err(l, l->line, "unterminated JSON string");
    *p = l->s + l->pos + 1;
    *len = q - l->pos - 1;
    l->pos = q + 1;
    return 0;
}

static size_t json_unescape(const char *p, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] != '\\' || i + 1 >= len) {
            out[o++] = p[i];
            continue;
        }
        char e = p[++i];
        switch (e) {
        case 'n': out[o++] = '\n'; break;
        case 't': out[o++] = '\t'; break;
        case 'r': out[o++] = '\r'; break;
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'u': {
            uint8_t u[4];
            size_t ul, used = jsonu_decode(p + i + 1, len - i - 1, u, &ul);
            if (!used) { /* not four hex digits: the letter, as any other escape */
                out[o++] = e;
                break;
            }
            i += used;
            for (size_t k = 0; k < ul; k++)
                out[o++] = (char)u[k];
            break;
        }
        default: out[o++] = e; break;
        }
    }
    return o;
}

/* Reads one {"k": v, ...} object. 1 an object (values in *vals), 0 at the end. */
static int next_object(lexer *l, jval **vals, int *nv, int *capv)
{
    *nv = 0;
    skip_ws(l);
    while (l->pos < l->n && (l->s[l->pos] == ',' || l->s[l->pos] == '[' || l->s[l->pos] == ']')) {
        l->pos++;
        skip_ws(l);
    }
    if (l->pos >= l->n)
        return 0;
    long line = l->line;
    if (l->s[l->pos] != '{')
        return lx_err(l, line, "expected a JSON object '{...}' per row, found '%c'", l->s[l->pos]);
    l->pos++;
    skip_ws(l);
    if (l->pos < l->n && l->s[l->pos] == '}') {
        l->pos++;
        return 1;
    }
    for (;;) {
        skip_ws(l);
        const char *kp;
        size_t kl;
        bool kesc;
        int rc = json_string(l, &kp, &kl, &kesc);
        if (rc < 0)
            return rc;
        if (*nv == *capv) {
            int cap = *capv ? *capv * 2 : 16;
            if (cap > 100000)
                return lx_err(l, line, "more than 100000 keys in one object");
            jval *nvv = realloc(*vals, sizeof(jval) * (size_t)cap);
            if (!nvv)
                return -ENOMEM;
            *vals = nvv;
            *capv = cap;
        }
        jval *v = &(*vals)[*nv];
        memset(v, 0, sizeof(*v));
        if (kl >= sizeof(v->key))
            return lx_err(l, line, "a key longer than %zu bytes", sizeof(v->key) - 1);
        size_t ukl = kesc ? json_unescape(kp, kl, v->key) : (memcpy(v->key, kp, kl), kl);
        v->key[ukl] = 0;
        skip_ws(l);
        if (l->pos >= l->n || l->s[l->pos] != ':')
            return lx_err(l, l->line, "expected ':' after the key \"%s\"", v->key);
        l->pos++;
        skip_ws(l);
        if (l->pos >= l->n)
            return lx_err(l, l->line, "the object ends after the key \"%s\"", v->key);
        char c = l->s[l->pos];
        if (c == '"') {
            v->kind = 2;
            if ((rc = json_string(l, &v->p, &v->len, &v->escaped)) < 0)
                return rc;
        } else if (c == '[') {
            /* an array: its text, which an Array column parses */
            size_t q = l->pos;
            int depth = 0;
            bool in_str = false;
            for (; q < l->n; q++) {
                char ch = l->s[q];
                if (in_str) {
                    if (ch == '\\')
                        q++;
                    else if (ch == '"')
                        in_str = false;
                } else if (ch == '"') {
                    in_str = true;
                } else if (ch == '[') {
                    depth++;
                } else if (ch == ']' && --depth == 0) {
                    break;
                } else if (ch == '{' || ch == '\n') {
                    break;
                }
            }
            if (q >= l->n || l->s[q] != ']')
                return lx_err(l, l->line,
                              "the array value of \"%s\" is not closed on its line, or holds an "
                              "object (arrays of numbers, strings, booleans and null are "
                              "supported)",
                              v->key);
            v->kind = 2;
            v->p = l->s + l->pos;
            v->len = q + 1 - l->pos;
            v->escaped = false;
            l->pos = q + 1;
        } else if (c == '{') {
            return lx_err(l, l->line,
                          "the value of \"%s\" is a nested object: only flat objects "
                          "(numbers, strings, arrays, booleans, null) are supported",
                          v->key);
        } else if (strncmp(l->s + l->pos, "null", l->n - l->pos < 4 ? l->n - l->pos : 4) == 0 &&
                   l->n - l->pos >= 4) {
            v->kind = 0;
            l->pos += 4;
        } else if (l->n - l->pos >= 4 && strncmp(l->s + l->pos, "true", 4) == 0) {
            v->kind = 3;
            v->b = true;
            l->pos += 4;
        } else if (l->n - l->pos >= 5 && strncmp(l->s + l->pos, "false", 5) == 0) {
            v->kind = 3;
            l->pos += 5;
        } else if (c == '-' || isdigit((unsigned char)c)) {
            size_t q = l->pos;
            if (l->s[q] == '-')
                q++;
            while (q < l->n &&
                   (isdigit((unsigned char)l->s[q]) || l->s[q] == '.' || l->s[q] == 'e' ||
                    l->s[q] == 'E' || l->s[q] == '+' || l->s[q] == '-')) {
                if (!isdigit((unsigned char)l->s[q]))
                    v->is_float = true;
                q++;
            }
            v->kind = 1;
            v->p = l->s + l->pos;
            v->len = q - l->pos;
            l->pos = q;
        } else {
            return lx_err(l, l->line, "bad JSON value for \"%s\" starting with '%c'", v->key, c);
        }
        (*nv)++;
        skip_ws(l);
        if (l->pos < l->n && l->s[l->pos] == ',') {
            l->pos++;
            continue;
        }
        if (l->pos < l->n && l->s[l->pos] == '}') {
            l->pos++;
            return 1;
        }
        return lx_err(l, l->line, "expected ',' or '}' in the JSON object");
    }
}

/* ---- inference ---------------------------------------------------------------- */

enum { K_NONE = 0, K_BOOL, K_INT, K_FLOAT, K_DATE, K_DATETIME, K_STRING };

static int classify(const char *s, size_t n, int *scale)
{
    if (n == 0)
        return K_STRING;
    if ((n == 4 && strncasecmp(s, "true", 4) == 0) || (n == 5 && strncasecmp(s, "false", 5) == 0))
        return K_BOOL;
    char buf[64];
    if (n < sizeof(buf)) {
        memcpy(buf, s, n);
        buf[n] = 0;
        char *end;
        errno = 0;
        (void)strtoll(buf, &end, 10);
        if (!*end && errno == 0 &&
            (isdigit((unsigned char)buf[0]) || ((buf[0] == '-' || buf[0] == '+') && n > 1)))
            return K_INT;
        (void)strtod(buf, &end);
        if (!*end &&
            (isdigit((unsigned char)buf[0]) || buf[0] == '-' || buf[0] == '+' || buf[0] == '.') &&
            strpbrk(buf, "0123456789"))
            return K_FLOAT;
    }
    int64_t v;
    if (ex_parse_date(s, n, &v))
        return K_DATE;
    int sc = 0;
    if (ex_parse_datetime(s, n, 0, &v, &sc)) {
        if (sc > *scale)
            *scale = sc;
        return K_DATETIME;
    }
    return K_STRING;
}

static int merge_kind(int a, int b)
{
    if (a == K_NONE)
        return b;
    if (b == K_NONE || a == b)
        return a;
    if ((a == K_INT && b == K_FLOAT) || (a == K_FLOAT && b == K_INT))
        return K_FLOAT;
    if ((a == K_DATE && b == K_DATETIME) || (a == K_DATETIME && b == K_DATE))
        return K_DATETIME;
    return K_STRING;
}

static ex_type type_of_kind(int k, int scale)
{
    ex_type t = {.nullable = true};
    switch (k) {
    case K_BOOL: t.kind = EX_BOOL; break;
    case K_INT:
        t.kind = EX_INT;
        t.bits = 64;
        break;
    case K_FLOAT:
        t.kind = EX_FLOAT;
        t.bits = 64;
        break;
    case K_DATE:
        t.kind = EX_DATE;
        t.bits = 16;
        break;
    case K_DATETIME:
        t.kind = EX_DATETIME;
        t.scale = scale ? 9 : 0;
        break;
    default: t.kind = EX_STRING; break;
    }
    return t;
}

/* Grows the per-column inference state from `from` columns to `to`, the new
 * ones knowing nothing yet (K_NONE, scale 0). 0 or -ENOMEM (what was there
 * stays valid and is still the caller's to free). */
static int grow_kinds(int **kinds, int **scales, int from, int to)
{
    int *nkd = realloc(*kinds, sizeof(int) * (size_t)to);
    if (nkd)
        *kinds = nkd;
    int *nsc = realloc(*scales, sizeof(int) * (size_t)to);
    if (nsc)
        *scales = nsc;
    if (!nkd || !nsc)
        return -ENOMEM;
    for (int i = from; i < to; i++)
        nkd[i] = K_NONE, nsc[i] = 0;
    return 0;
}

static int add_col(eng_schema *s, const char *name, size_t nl)
{
    eng_col *nc = realloc(s->cols, sizeof(eng_col) * (size_t)(s->n + 1));
    if (!nc)
        return -ENOMEM;
    s->cols = nc;
    memset(&nc[s->n], 0, sizeof(eng_col));
    if (!(nc[s->n].name = strndup(name, nl)))
        return -ENOMEM;
    s->n++;
    return 0;
}

int tx_infer(tx_format f, const char *name, const char *text, size_t len, eng_schema *out,
             char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    lexer l = {.f = f, .name = name, .s = text, .n = len, .line = 1, .err = err, .errlen = errlen};
    int *kinds = NULL, *scales = NULL;
    int nk = 0, rc = 0;
    char *ub = NULL;
    if (f == TX_JSON_EACH_ROW) {
        jval *vals = NULL;
        int nv = 0, capv = 0, rows = 0;
        while (rows < TX_INFER_ROWS && (rc = next_object(&l, &vals, &nv, &capv)) == 1) {
            rows++;
            for (int i = 0; i < nv; i++) {
                int c = -1;
                for (int k = 0; k < out->n; k++)
                    if (strcmp(out->cols[k].name, vals[i].key) == 0)
                        c = k;
                if (c < 0) {
                    if ((rc = add_col(out, vals[i].key, strlen(vals[i].key))) < 0 ||
                        (rc = grow_kinds(&kinds, &scales, out->n - 1, out->n)) < 0)
                        break;
                    c = out->n - 1;
                }
                int k = K_NONE;
                if (vals[i].kind == 1)
                    k = vals[i].is_float ? K_FLOAT : K_INT;
                else if (vals[i].kind == 3)
                    k = K_BOOL;
                else if (vals[i].kind == 2) {
                    k = vals[i].escaped ? K_STRING : classify(vals[i].p, vals[i].len, &scales[c]);
                    if (k != K_DATE && k != K_DATETIME)
                        k = K_STRING; /* a JSON string stays a String unless it is a date */
                }
                kinds[c] = merge_kind(kinds[c], k);
            }
            if (rc < 0)
                break;
        }
        free(vals);
        if (rc >= 0 && out->n == 0) {
            snprintf(err, errlen, "%s has no JSON objects to infer a schema from (is it empty?)",
                     name);
            rc = -EBADMSG;
        }
        nk = out->n;
    } else {
        bool names = f == TX_CSV_NAMES || f == TX_TSV_NAMES;
        field *hdr = NULL;
        int nh = 0;
        int rows = 0;
        char **first = NULL; /* the first record's values, for header detection */
        bool first_all_str = true;
        long line = l.line, bad_line = 0;
        int bad_nf = 0;
        while (rows <= TX_INFER_ROWS && (rc = next_record(&l)) == 1) {
            if (rows > 0 && l.nf != nh) {
                /* never a column made up from a bad row: an error, worded
                   once the header is told from the data */
                bad_line = line;
                bad_nf = l.nf;
                break;
            }
            line = l.line;
            if (rows == 0) {
                nh = l.nf;
                hdr = malloc(sizeof(field) * (size_t)nh);
                first = calloc((size_t)nh, sizeof(char *));
                kinds = calloc((size_t)nh, sizeof(int));
                scales = calloc((size_t)nh, sizeof(int));
                if (!hdr || !first || !kinds || !scales) {
                    free(hdr);
                    free(first);
                    hdr = NULL;
                    first = NULL;
                    rc = -ENOMEM;
                    break;
                }
                nk = nh;
                for (int i = 0; i < nh; i++) {
                    size_t cap = l.fl[i].len + 1;
                    first[i] = malloc(cap);
                    if (!first[i]) {
                        rc = -ENOMEM;
                        break;
                    }
                    size_t ul = unescape(&l, &l.fl[i], first[i]);
                    first[i][ul] = 0;
                    int sc = 0;
                    int k = l.fl[i].null ? K_NONE : classify(first[i], ul, &sc);
                    if (k != K_STRING)
                        first_all_str = false;
                }
                if (rc < 0)
                    break;
                rows++;
                if (names)
                    continue;
                /* values of the first record are classified below like the others
                   unless it turns out to be a header */
            } else {
                rows++;
            }
            if (rows == 1)
                continue; /* the first record is folded in after header detection */
            for (int i = 0; i < l.nf; i++) {
                if (l.fl[i].null)
                    continue;
                size_t cap = l.fl[i].len + 1;
                char *b2 = realloc(ub, cap);
                if (!b2) {
                    rc = -ENOMEM;
                    break;
                }
                ub = b2;
                size_t ul = unescape(&l, &l.fl[i], ub);
                int k = classify(ub, ul, &scales[i]);
                if (ul == 0 && f != TX_CSV && f != TX_CSV_NAMES)
                    k = K_NONE; /* empty TSV field: no information */
                kinds[i] = merge_kind(kinds[i], k);
            }
            if (rc < 0)
                break;
        }
        if (rc >= 0 && rows == 0) {
            snprintf(err, errlen, "%s is empty: there is nothing to infer a schema from", name);
            rc = -EBADMSG;
        }
        bool is_header = names;
        if (rc >= 0 && names && bad_line)
            rc = bad_width(&l, bad_line, bad_nf, nh, true);
        if (rc >= 0 && !names && first) {
            /* ClickHouse's header detection: the first row is all strings while the
               rest holds some non-string column */
            bool other = false;
            for (int i = 0; i < nk; i++)
                other |= kinds[i] != K_STRING && kinds[i] != K_NONE;
            is_header = first_all_str && other && rows > 1;
            if (bad_line)
                rc = bad_width(&l, bad_line, bad_nf, nh, is_header);
            if (!is_header)
                for (int i = 0; i < nh; i++) {
                    int sc = 0;
                    size_t ul = strlen(first[i]);
                    int k = hdr ? classify(first[i], ul, &sc) : K_STRING;
                    if (ul == 0)
                        k = K_NONE;
                    if (sc > scales[i])
                        scales[i] = sc;
                    kinds[i] = merge_kind(kinds[i], k);
                }
        }
        for (int i = 0; rc >= 0 && i < nk; i++) {
            char nb[32];
            if (is_header && i < nh && first[i][0])
                rc = add_col(out, first[i], strlen(first[i]));
            else {
                snprintf(nb, sizeof(nb), "c%d", i + 1);
                rc = add_col(out, nb, strlen(nb));
            }
        }
        if (first)
            for (int i = 0; i < nh; i++)
                free(first[i]);
        free(first);
        free(hdr);
    }
    if (rc >= 0)
        for (int i = 0; i < out->n && i < nk; i++)
            out->cols[i].t = type_of_kind(kinds[i], scales[i]);
    free(kinds);
    free(scales);
    free(ub);
    free(l.fl);
    if (rc < 0) {
        if (rc == -ENOMEM)
            snprintf(err, errlen, "out of memory inferring the schema of %s", name);
        eng_schema_free(out);
        return rc;
    }
    /* a header without a data row: Strings */
    for (int i = 0; i < out->n; i++)
        if (out->cols[i].t.kind == 0)
            out->cols[i].t = type_of_kind(K_STRING, 0);
    return 0;
}

/* ---- parsing into vectors -------------------------------------------------------- */

typedef struct builder {
    eng_mem *m;
    ex_vec *v;
    int nv;
    uint32_t rows, cap;
} builder;

static int bl_start(builder *b, const eng_schema *s, const int *want, int nwant, uint32_t cap)
{
    b->rows = 0;
    b->cap = cap;
    for (int k = 0; k < nwant; k++) {
        ex_type t = s->cols[want[k]].t;
        t.nullable = true;
        if (ex_vec_alloc(b->m, &b->v[k], t, cap) < 0)
            return -ENOMEM;
        b->v[k].t = s->cols[want[k]].t;
        b->v[k].n = 0;
    }
    return 0;
}

/* Stores value text (already unescaped) into vector k at row r. */
static int put_text(builder *b, lexer *l, const eng_schema *s, int col, int k, uint32_t r,
                    const char *p, size_t n, bool null, long line)
{
    ex_vec *v = &b->v[k];
    v->nulls[r] = null;
    if (v->t.kind == EX_STRING)
        return ex_vec_str_put(b->m, v, r, null ? "" : p, null ? 0 : n);
    if (null) {
        if (v->t.kind == EX_FLOAT)
            v->d[r] = 0;
        else
            v->i[r] = 0;
        return 0;
    }
    char buf[96];
    bool ok = n < sizeof(buf);
    if (ok) {
        memcpy(buf, p, n);
        buf[n] = 0;
        char *end;
        errno = 0;
        switch (v->t.kind) {
        case EX_INT:
            v->i[r] = strtoll(buf, &end, 10);
            ok = n && !*end && !errno;
            break;
        case EX_UINT:
            v->i[r] = (int64_t)strtoull(buf, &end, 10);
            ok = n && !*end && !errno && buf[0] != '-';
            break;
        case EX_DECIMAL:
            ok = ex_parse_decimal((const uint8_t *)buf, n, v->t.scale, &v->i[r]) &&
                 ex_decimal_fits(v->i[r], v->t.prec);
            break;
        case EX_FLOAT:
            v->d[r] = strtod(buf, &end);
            ok = n && !*end;
            break;
        case EX_BOOL:
            ok = strcasecmp(buf, "true") == 0 || strcasecmp(buf, "false") == 0 ||
                 strcmp(buf, "1") == 0 || strcmp(buf, "0") == 0;
            v->i[r] = strcasecmp(buf, "true") == 0 || strcmp(buf, "1") == 0;
            break;
        case EX_DATE: ok = ex_parse_date(buf, n, &v->i[r]); break;
        case EX_DATETIME:
            ok = ex_parse_datetime(buf, n, v->t.scale, &v->i[r], NULL);
            if (!ok && ex_parse_date(buf, n, &v->i[r])) {
                int64_t p10 = 1;
                for (int q = 0; q < v->t.scale; q++)
                    p10 *= 10;
                ok = !__builtin_mul_overflow(v->i[r], 86400 * p10, &v->i[r]);
            }
            break;
        default: ok = false;
        }
    }
    if (!ok) {
        char tn[64];
        ex_type_name(&v->t, tn, sizeof(tn));
        if (s->given)
            return lx_err(l, line,
                          "cannot parse '%.*s' as %s for column '%s' (the type the "
                          "structure argument gives: fix the value or the structure)",
                          (int)(n > 60 ? 60 : n), p, tn, s->cols[col].name);
        return lx_err(l, line,
                      "cannot parse '%.*s' as %s for column '%s' (the type was inferred "
                      "from the first rows; CAST it as String, or fix the value)",
                      (int)(n > 60 ? 60 : n), p, tn, s->cols[col].name);
    }
    return 0;
}

int tx_parse(eng_mem *m, tx_format f, const char *name, const char *text, size_t len,
             const eng_schema *s, const int *want, int nwant, uint32_t batch_rows, tx_batch_fn fn,
             void *arg, char *err, size_t errlen)
{
    lexer l = {.f = f, .name = name, .s = text, .n = len, .line = 1, .err = err, .errlen = errlen};
    int allw[1];
    (void)allw;
    builder b = {.m = m, .nv = nwant};
    b.v = calloc((size_t)nwant + 1, sizeof(ex_vec));
    int *pos = calloc((size_t)nwant + 1, sizeof(int)); /* field index per wanted column */
    char *ub = NULL;
    size_t ubcap = 0;
    jval *vals = NULL;
    int nv = 0, capv = 0;
    int rc = 0;
    if (!b.v || !pos) {
        rc = -ENOMEM;
        goto out;
    }
    for (int k = 0; k < nwant; k++)
        pos[k] = want[k];
    int width = 0; /* fields every row has: the header's, else the schema's
                             (its file columns: virtual ones come after them) */
    for (int i = 0; i < s->n; i++)
        width += !s->cols[i].virt;
    bool has_hdr = false;
    if (f == TX_CSV_NAMES || f == TX_TSV_NAMES || f == TX_CSV || f == TX_TSV) {
        /* header: *WithNames always; plain formats when the schema was read from
           one (names that are not c1, c2, ...) */
        has_hdr = f == TX_CSV_NAMES || f == TX_TSV_NAMES;
        if (!has_hdr && s->n > 0 && !s->given) {
            char c1[16];
            snprintf(c1, sizeof(c1), "c1");
            has_hdr = strcmp(s->cols[0].name, c1) != 0;
        }
        if (has_hdr) {
            rc = next_record(&l);
            if (rc < 0)
                goto out;
            if (rc == 0) {
                rc = 0;
                goto out;
            }
            width = l.nf;
            for (int k = 0; k < nwant; k++) {
                const char *cn = s->cols[want[k]].name;
                pos[k] = -1;
                for (int i = 0; i < l.nf; i++) {
                    if (l.fl[i].len + 1 > ubcap) {
                        free(ub);
                        ubcap = l.fl[i].len * 2 + 64;
                        if (!(ub = malloc(ubcap))) {
                            rc = -ENOMEM;
                            goto out;
                        }
                    }
                    size_t ul = unescape(&l, &l.fl[i], ub);
                    if (ul == strlen(cn) && memcmp(ub, cn, ul) == 0) {
                        pos[k] = i;
                        break;
                    }
                }
                if (pos[k] < 0) {
                    rc = lx_err(&l, 1,
                                "column '%s' is missing from the header (the schema, "
                                "read from the first file, has it; every file must "
                                "have the columns the query reads)",
                                cn);
                    goto out;
                }
            }
        }
    }
    if ((rc = bl_start(&b, s, want, nwant, batch_rows)) < 0)
        goto out;
    for (;;) {
        long line = l.line;
        int got;
        if (f == TX_JSON_EACH_ROW)
            got = next_object(&l, &vals, &nv, &capv);
        else
            got = next_record(&l);
        if (got < 0) {
            rc = got;
            goto out;
        }
        if (got == 0)
            break;
        if (f != TX_JSON_EACH_ROW && l.nf != width) {
            rc = bad_width(&l, line, l.nf, width, has_hdr);
            goto out;
        }
        uint32_t r = b.rows;
        for (int k = 0; k < nwant && rc == 0; k++) {
            const char *p = "";
            size_t n = 0;
            bool null = true, absent = f == TX_JSON_EACH_ROW;
            if (f == TX_JSON_EACH_ROW) {
                const char *cn = s->cols[want[k]].name;
                for (int i = 0; i < nv; i++)
                    if (strcmp(vals[i].key, cn) == 0) {
                        const jval *v = &vals[i];
                        absent = false;
                        null = v->kind == 0;
                        if (v->kind == 3) {
                            p = v->b ? "true" : "false";
                            n = strlen(p);
                            if (b.v[k].t.kind == EX_INT || b.v[k].t.kind == EX_FLOAT) {
                                p = v->b ? "1" : "0";
                                n = 1;
                            }
                        } else if (v->kind == 2 && v->escaped) {
                            if (v->len + 1 > ubcap) {
                                free(ub);
                                ubcap = v->len * 2 + 64;
                                if (!(ub = malloc(ubcap))) {
                                    rc = -ENOMEM;
                                    break;
                                }
                            }
                            n = json_unescape(v->p, v->len, ub);
                            p = ub;
                        } else if (v->kind) {
                            p = v->p;
                            n = v->len;
                        }
                        break;
                    }
            } else {
                const field *fd = &l.fl[pos[k]];
                null = fd->null;
                if (!null && b.v[k].t.kind != EX_STRING && fd->len == 0)
                    null = true;
                if (fd->escaped) {
                    if (fd->len + 1 > ubcap) {
                        free(ub);
                        ubcap = fd->len * 2 + 64;
                        if (!(ub = malloc(ubcap))) {
                            rc = -ENOMEM;
                            break;
                        }
                    }
                    n = unescape(&l, fd, ub);
                    p = ub;
                } else {
                    p = fd->p;
                    n = fd->len;
                }
            }
            if (rc == 0)
                rc = put_text(&b, &l, s, want[k], k, r, p, n, null, line);
            if (rc == 0 && absent && s->mark_absent && b.v[k].nulls)
                b.v[k].nulls[r] = EX_NULL_ABSENT;
        }
        if (rc < 0)
            goto out;
        b.rows++;
        if (b.rows == b.cap) {
            for (int k = 0; k < nwant; k++)
                b.v[k].n = b.rows;
            rc = fn(b.v, nwant, b.rows, arg);
            memset(b.v, 0, sizeof(ex_vec) * (size_t)nwant);
            if (rc < 0)
                goto out;
            if ((rc = bl_start(&b, s, want, nwant, batch_rows)) < 0)
                goto out;
        }
    }
    if (b.rows > 0 || nwant == 0) {
        for (int k = 0; k < nwant; k++)
            b.v[k].n = b.rows;
        if (b.rows > 0) {
            rc = fn(b.v, nwant, b.rows, arg);
            memset(b.v, 0, sizeof(ex_vec) * (size_t)nwant);
        }
    }
out:
    if (b.v) {
        for (int k = 0; k < nwant; k++)
            ex_vec_clear(m, &b.v[k]);
        free(b.v);
    }
    free(pos);
    free(ub);
    free(vals);
    free(l.fl);
    if (rc == -ENOMEM && !(m && atomic_load(&m->failed_at)))
        snprintf(err, errlen, "out of memory reading %s", name);
    else if (rc == -ENOMEM)
        em_error(m, err, errlen);
    return rc < 0 ? rc : 0;
}
