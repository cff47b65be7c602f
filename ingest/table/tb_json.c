/* SPDX-License-Identifier: Apache-2.0
 *
 * tb_json.c: the small JSON DOM the commit log is read with, and the few
 * writers it is written with. The parser reads objects that came back from
 * S3, so it trusts nothing: depth and size are bounded, every string escape
 * is checked, and it never reads past the buffer (fuzzed:
 * tests/fuzz/table_log). Recursive descent, one malloc per array or object.
 */
#include "errf.h"
#include "jsonu.h"
#include "tb_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *p;
    size_t len, at;
    char *err;
    size_t errlen;
} jp;

static int jerr(jp *j, const char *what)
{
    return errf_fail(j->err, j->errlen, -EBADMSG, "bad JSON at byte %zu: %s", j->at, what);
}

static void ws(jp *j)
{
    while (j->at < j->len && (j->p[j->at] == ' ' || j->p[j->at] == '\t' || j->p[j->at] == '\n' ||
                              j->p[j->at] == '\r'))
        j->at++;
}

void tj_free(tj_val *v)
{
    if (!v)
        return;
    free(v->s);
    for (size_t i = 0; i < v->n; i++) {
        if (v->items)
            tj_free(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    memset(v, 0, sizeof(*v));
}

static int hex4(jp *j, uint32_t *out)
{
    if (j->len - j->at < 4)
        return jerr(j, "a \\u escape is cut short");
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = j->p[j->at++];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else
            return jerr(j, "a \\u escape holds a non-hex digit");
    }
    *out = v;
    return 0;
}

static int parse_string(jp *j, char **out, size_t *out_len)
{
    j->at++; /* the opening quote */
    tp__bytes b = {0};
    int rc = 0;
    for (;;) {
        if (j->at >= j->len) {
            rc = jerr(j, "a string is not closed");
            break;
        }
        unsigned char c = (unsigned char)j->p[j->at++];
        if (c == '"')
            break;
        if (c < 0x20) {
            rc = jerr(j, "a control character inside a string");
            break;
        }
        if (c != '\\') {
            if ((rc = tp__bytes_u8(&b, c)) < 0)
                break;
            continue;
        }
        if (j->at >= j->len) {
            rc = jerr(j, "an escape is cut short");
            break;
        }
        char e = j->p[j->at++];
        char lit = 0;
        switch (e) {
        case '"': lit = '"'; break;
        case '\\': lit = '\\'; break;
        case '/': lit = '/'; break;
        case 'b': lit = '\b'; break;
        case 'f': lit = '\f'; break;
        case 'n': lit = '\n'; break;
        case 'r': lit = '\r'; break;
        case 't': lit = '\t'; break;
        case 'u': {
            uint32_t cp;
            if ((rc = hex4(j, &cp)) < 0)
                break;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                uint32_t lo;
                if (j->len - j->at < 2 || j->p[j->at] != '\\' || j->p[j->at + 1] != 'u') {
                    rc = jerr(j, "a high surrogate without its low half");
                    break;
                }
                j->at += 2;
                if ((rc = hex4(j, &lo)) < 0)
                    break;
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    rc = jerr(j, "a high surrogate without its low half");
                    break;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                rc = jerr(j, "a lone low surrogate");
                break;
            }
            uint8_t u[4];
            size_t n = jsonu_utf8(cp, u);
            rc = tp__bytes_add(&b, u, n);
            break;
        }
        default: rc = jerr(j, "an unknown escape"); break;
        }
        if (rc < 0)
            break;
        if (e != 'u' && (rc = tp__bytes_u8(&b, (uint8_t)lit)) < 0)
            break;
    }
    if (!rc)
        rc = tp__bytes_u8(&b, 0);
    if (rc < 0) {
        free(b.p);
        return rc;
    }
    *out = (char *)b.p;
    *out_len = b.len - 1;
    return 0;
}

static int parse_value(jp *j, tj_val *v, int depth);

static int parse_number(jp *j, tj_val *v)
{
    size_t start = j->at;
    bool neg = false, frac = false;
    if (j->p[j->at] == '-') {
        neg = true;
        j->at++;
    }
    if (j->at >= j->len || j->p[j->at] < '0' || j->p[j->at] > '9')
        return jerr(j, "a number without digits");
    if (j->p[j->at] == '0' && j->at + 1 < j->len && j->p[j->at + 1] >= '0' &&
        j->p[j->at + 1] <= '9')
        return jerr(j, "a number with a leading zero");
    uint64_t mag = 0;
    bool over = false;
    while (j->at < j->len && j->p[j->at] >= '0' && j->p[j->at] <= '9') {
        unsigned d = (unsigned)(j->p[j->at++] - '0');
        if (mag > (UINT64_MAX - d) / 10)
            over = true;
        else
            mag = mag * 10 + d;
    }
    if (j->at < j->len && j->p[j->at] == '.') {
        frac = true;
        j->at++;
        size_t d0 = j->at;
        while (j->at < j->len && j->p[j->at] >= '0' && j->p[j->at] <= '9')
            j->at++;
        if (j->at == d0)
            return jerr(j, "a fraction without digits");
    }
    if (j->at < j->len && (j->p[j->at] == 'e' || j->p[j->at] == 'E')) {
        frac = true;
        j->at++;
        if (j->at < j->len && (j->p[j->at] == '+' || j->p[j->at] == '-'))
            j->at++;
        size_t d0 = j->at;
        while (j->at < j->len && j->p[j->at] >= '0' && j->p[j->at] <= '9')
            j->at++;
        if (j->at == d0)
            return jerr(j, "an exponent without digits");
    }
    (void)start;
    if (frac || over || (!neg && mag > (uint64_t)INT64_MAX) ||
        (neg && mag > (uint64_t)INT64_MAX + 1)) {
        v->kind = TJ_NUM;
        return 0;
    }
    v->kind = TJ_INT;
    v->i = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
    return 0;
}

static int lit(jp *j, const char *word)
{
    size_t n = strlen(word);
    if (j->len - j->at < n || memcmp(j->p + j->at, word, n) != 0)
        return jerr(j, "an unknown word");
    j->at += n;
    return 0;
}

static int grow(tj_val *v, size_t *cap, bool keys)
{
    if (v->n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 4;
    tj_val *it = realloc(v->items, c * sizeof(tj_val));
    if (!it)
        return -ENOMEM;
    v->items = it;
    if (keys) {
        char **k = realloc(v->keys, c * sizeof(char *));
        if (!k)
            return -ENOMEM;
        v->keys = k;
    }
    *cap = c;
    return 0;
}

/* An object or an array: members until the closing bracket, each a value
 * (objects: a string key and ':' before it), separated by ','. */
static int parse_container(jp *j, tj_val *v, int depth)
{
    bool obj = j->p[j->at] == '{';
    char close = obj ? '}' : ']';
    v->kind = obj ? TJ_OBJ : TJ_ARR;
    j->at++;
    ws(j);
    if (j->at < j->len && j->p[j->at] == close) {
        j->at++;
        return 0;
    }
    size_t cap = 0;
    for (;;) {
        ws(j);
        if (obj && (j->at >= j->len || j->p[j->at] != '"'))
            return jerr(j, "an object key must be a string");
        int rc = grow(v, &cap, obj);
        if (rc < 0)
            return rc;
        size_t kl;
        if (obj && (rc = parse_string(j, &v->keys[v->n], &kl)) < 0)
            return rc;
        memset(&v->items[v->n], 0, sizeof(tj_val));
        v->n++; /* counted before its value, so tj_free frees a half-parsed one */
        if (obj) {
            ws(j);
            if (j->at >= j->len || j->p[j->at] != ':')
                return jerr(j, "a ':' is missing after an object key");
            j->at++;
        }
        if ((rc = parse_value(j, &v->items[v->n - 1], depth + 1)) < 0)
            return rc;
        ws(j);
        if (j->at < j->len && j->p[j->at] == ',') {
            j->at++;
            continue;
        }
        if (j->at < j->len && j->p[j->at] == close) {
            j->at++;
            return 0;
        }
        return jerr(j, obj ? "a ',' or '}' is missing in an object"
                           : "a ',' or ']' is missing in an array");
    }
}

static int parse_value(jp *j, tj_val *v, int depth)
{
    memset(v, 0, sizeof(*v));
    if (depth > TJ_MAX_DEPTH)
        return jerr(j, "nested deeper than 64");
    ws(j);
    if (j->at >= j->len)
        return jerr(j, "a value is missing");
    char c = j->p[j->at];
    switch (c) {
    case '{':
    case '[': return parse_container(j, v, depth);
    case '"': v->kind = TJ_STR; return parse_string(j, &v->s, &v->len);
    case 't':
        v->kind = TJ_BOOL;
        v->b = true;
        return lit(j, "true");
    case 'f': v->kind = TJ_BOOL; return lit(j, "false");
    case 'n': v->kind = TJ_NULL; return lit(j, "null");
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return parse_number(j, v);
        return jerr(j, "an unexpected character");
    }
}

int tj_parse(const char *buf, size_t len, tj_val *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (len > TJ_MAX_INPUT)
        return errf_fail(err, errlen, -EBADMSG, "the JSON is larger than 64 MiB");
    jp j = {buf, len, 0, err, errlen};
    int rc = parse_value(&j, out, 0);
    if (!rc) {
        ws(&j);
        if (j.at != len)
            rc = jerr(&j, "something follows the value");
    }
    if (rc < 0)
        tj_free(out);
    return rc;
}

const tj_val *tj_get(const tj_val *obj, const char *key)
{
    if (!obj || obj->kind != TJ_OBJ)
        return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (strcmp(obj->keys[i], key) == 0)
            return &obj->items[i];
    return NULL;
}

int tj_put_raw(tp__bytes *b, const char *s)
{
    return tp__bytes_add(b, s, strlen(s));
}

int tj_put_i64(tp__bytes *b, int64_t v)
{
    char t[32];
    int n = snprintf(t, sizeof(t), "%lld", (long long)v);
    return tp__bytes_add(b, t, (size_t)n);
}

int tj_put_str(tp__bytes *b, const char *s)
{
    int rc = tp__bytes_u8(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p && !rc; p++) {
        if (*p == '"' || *p == '\\') {
            char e[2] = {'\\', (char)*p};
            rc = tp__bytes_add(b, e, 2);
        } else if (*p < 0x20) {
            char e[8];
            snprintf(e, sizeof(e), "\\u%04x", *p);
            rc = tp__bytes_add(b, e, 6);
        } else {
            rc = tp__bytes_u8(b, *p);
        }
    }
    return rc ? rc : tp__bytes_u8(b, '"');
}
