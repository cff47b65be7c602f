/* SPDX-License-Identifier: Apache-2.0
 *
 * ex_array.c: Array(T) values (eng_types.h): each row of an Array vector is
 * its elements encoded in the string storage, canonically, so that equal
 * arrays are equal bytes (GROUP BY, DISTINCT, uniq and the wire format then
 * treat them as strings). This file reads and writes that encoding and
 * prints an array as ClickHouse does: [1,2], ['a','b'], [[1],[]], NULL.
 */
#include "eng_types.h"
#include "bufgrow.h"
#include "jsonu.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ex_type ex_arr_elem(const ex_type *t)
{
    ex_type e = *t;
    if (t->depth > 1) {
        e.depth = (uint8_t)(t->depth - 1);
        e.kind = EX_ARRAY;
        e.nullable = false;
        return e;
    }
    e.kind = t->elem;
    e.nullable = t->enull || t->elem == EX_NOTHING;
    e.elem = 0;
    e.depth = 0;
    e.enull = false;
    return e;
}

ex_type ex_arr_of(ex_type e)
{
    ex_type t = e;
    if (e.kind == EX_ARRAY) {
        t.depth = (uint8_t)(e.depth + 1);
        return t;
    }
    t.kind = EX_ARRAY;
    t.elem = e.kind;
    t.enull = e.nullable || e.kind == EX_NOTHING;
    t.nullable = false;
    t.depth = 1;
    return t;
}

int ex_bytes_put(ex_bytes *b, const void *s, size_t n)
{
    if (b->n + n > UINT32_MAX)
        return -E2BIG;
    if (b->n + n > b->cap && bufgrow(&b->p, &b->cap, b->n + n, 64) < 0)
        return -ENOMEM;
    if (n)
        memcpy(b->p + b->n, s, n);
    b->n += n;
    return 0;
}

void ex_bytes_free(ex_bytes *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void wr32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static bool is_var(uint8_t kind)
{
    return kind == EX_STRING || kind == EX_ARRAY;
}

uint32_t ex_arr_count(const uint8_t *p, uint32_t len)
{
    return len >= 4 ? rd32(p) : 0;
}

void ex_arr_open(ex_arr_it *it, const ex_type *arr, const uint8_t *p, uint32_t len)
{
    it->et = ex_arr_elem(arr);
    it->count = ex_arr_count(p, len);
    it->at = 0;
    it->p = len >= 4 ? p + 4 : p;
    it->end = p + len;
}

bool ex_arr_next(ex_arr_it *it, ex_arr_val *v)
{
    memset(v, 0, sizeof(*v));
    if (it->at >= it->count)
        return false;
    if (it->et.nullable) {
        if (it->p >= it->end)
            goto bad;
        v->null = *it->p++ != 0;
    }
    if (it->et.kind == EX_NOTHING) {
        v->null = true;
    } else if (is_var(it->et.kind)) {
        if (it->end - it->p < 4)
            goto bad;
        uint32_t l = rd32(it->p);
        it->p += 4;
        if ((size_t)(it->end - it->p) < l)
            goto bad;
        v->s = it->p;
        v->len = l;
        it->p += l;
    } else {
        if (it->end - it->p < 8)
            goto bad;
        uint64_t x = rd64(it->p);
        it->p += 8;
        if (it->et.kind == EX_FLOAT)
            memcpy(&v->d, &x, 8);
        else
            v->i = (int64_t)x;
    }
    it->at++;
    return true;
bad:
    it->count = it->at;
    return false;
}

int ex_arr_begin(ex_bytes *b, size_t *at)
{
    *at = b->n;
    uint8_t z[4] = {0};
    return ex_bytes_put(b, z, 4);
}

int ex_arr_put(ex_bytes *b, const ex_type *et, const ex_arr_val *v)
{
    int rc = 0;
    if (et->nullable) {
        uint8_t f = v->null ? 1 : 0;
        if ((rc = ex_bytes_put(b, &f, 1)) < 0)
            return rc;
    }
    if (et->kind == EX_NOTHING)
        return 0;
    if (is_var(et->kind)) {
        uint8_t l[4];
        uint32_t n = v->null ? 0 : v->len;
        wr32(l, n);
        if ((rc = ex_bytes_put(b, l, 4)) < 0)
            return rc;
        return ex_bytes_put(b, v->s, n);
    }
    uint64_t x = 0;
    if (!v->null) {
        if (et->kind == EX_FLOAT) {
            double d = v->d == 0 ? 0 : v->d; /* -0.0 and 0.0: one value */
            memcpy(&x, &d, 8);
        } else {
            x = (uint64_t)v->i;
        }
    }
    uint8_t w[8];
    wr32(w, (uint32_t)x);
    wr32(w + 4, (uint32_t)(x >> 32));
    return ex_bytes_put(b, w, 8);
}

void ex_arr_end(ex_bytes *b, size_t at, uint32_t count)
{
    wr32(b->p + at, count);
}

void ex_arr_val_of(const ex_vec *v, uint32_t r, ex_arr_val *out)
{
    memset(out, 0, sizeof(*out));
    if (ex_null(v, r)) {
        out->null = true;
        return;
    }
    if (ex_is_bytes(v->t.kind)) {
        out->s = ex_str(v, r, &out->len);
        return;
    }
    uint32_t k = ex_row(v, r);
    if (v->t.kind == EX_FLOAT)
        out->d = v->d ? v->d[k] : 0;
    else
        out->i = v->i ? v->i[k] : 0;
}

static int cmp_bytes(const uint8_t *a, uint32_t la, const uint8_t *b, uint32_t lb)
{
    uint32_t mn = la < lb ? la : lb;
    int c = mn ? memcmp(a, b, mn) : 0;
    if (c)
        return c < 0 ? -1 : 1;
    return la < lb ? -1 : la > lb;
}

int ex_arr_cmp(const ex_type *arr, const uint8_t *a, uint32_t la, const uint8_t *b, uint32_t lb)
{
    ex_arr_it x, y;
    ex_arr_open(&x, arr, a, la);
    ex_arr_open(&y, arr, b, lb);
    ex_arr_val u, v;
    for (;;) {
        bool hu = ex_arr_next(&x, &u), hv = ex_arr_next(&y, &v);
        if (!hu || !hv)
            return hu ? 1 : hv ? -1 : 0; /* a prefix first */
        int c = 0;
        if (u.null || v.null)
            c = u.null == v.null ? 0 : u.null ? 1 : -1; /* NULL after values */
        else if (x.et.kind == EX_ARRAY)
            c = ex_arr_cmp(&x.et, u.s, u.len, v.s, v.len);
        else if (x.et.kind == EX_STRING)
            c = cmp_bytes(u.s, u.len, v.s, v.len);
        else if (x.et.kind == EX_FLOAT)
            c = u.d < v.d ? -1 : u.d > v.d;
        else if (x.et.kind == EX_UINT)
            c = (uint64_t)u.i < (uint64_t)v.i ? -1 : (uint64_t)u.i > (uint64_t)v.i;
        else
            c = u.i < v.i ? -1 : u.i > v.i;
        if (c)
            return c;
    }
}

/* The quoted text of a String (ClickHouse's writeQuotedString). */
static int put_quoted(ex_bytes *o, const uint8_t *s, size_t n)
{
    int rc = ex_bytes_put(o, "'", 1);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *e = NULL;
        switch (s[i]) {
        case '\'': e = "\\'"; break;
        case '\\': e = "\\\\"; break;
        case '\n': e = "\\n"; break;
        case '\t': e = "\\t"; break;
        case '\r': e = "\\r"; break;
        case '\b': e = "\\b"; break;
        case '\f': e = "\\f"; break;
        case '\0': e = "\\0"; break;
        default: break;
        }
        rc = e ? ex_bytes_put(o, e, 2) : ex_bytes_put(o, &s[i], 1);
    }
    return rc ? rc : ex_bytes_put(o, "'", 1);
}

/* A JSON string as ClickHouse writes one (the sinks' escapes: \/ for '/',
 * \u00XX for control bytes, \u2028 and \u2029). */
static int put_json(ex_bytes *o, const uint8_t *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    int rc = ex_bytes_put(o, "\"", 1);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        uint8_t c = s[i];
        const char *e = NULL;
        switch (c) {
        case '"': e = "\\\""; break;
        case '\\': e = "\\\\"; break;
        case '/': e = "\\/"; break;
        case '\n': e = "\\n"; break;
        case '\r': e = "\\r"; break;
        case '\t': e = "\\t"; break;
        case '\b': e = "\\b"; break;
        case '\f': e = "\\f"; break;
        default: break;
        }
        if (e) {
            rc = ex_bytes_put(o, e, 2);
        } else if (c < 0x20) {
            char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            rc = ex_bytes_put(o, u, 6);
        } else if (c == 0xe2 && i + 2 < n && s[i + 1] == 0x80 &&
                   (s[i + 2] == 0xa8 || s[i + 2] == 0xa9)) {
            rc = ex_bytes_put(o, s[i + 2] == 0xa8 ? "\\u2028" : "\\u2029", 6);
            i += 2;
        } else {
            rc = ex_bytes_put(o, &c, 1);
        }
    }
    return rc ? rc : ex_bytes_put(o, "\"", 1);
}

int ex_arr_text(const ex_type *arr, const uint8_t *p, uint32_t len, bool json, ex_bytes *out)
{
    ex_arr_it it;
    ex_arr_open(&it, arr, p, len);
    int rc = ex_bytes_put(out, "[", 1);
    ex_arr_val v;
    bool first = true;
    while (rc == 0 && ex_arr_next(&it, &v)) {
        if (!first)
            rc = ex_bytes_put(out, ",", 1);
        first = false;
        if (rc)
            break;
        if (v.null) {
            rc = ex_bytes_put(out, json ? "null" : "NULL", 4);
            continue;
        }
        ex_type et = it.et;
        if (et.kind == EX_ARRAY) {
            rc = ex_arr_text(&et, v.s, v.len, json, out);
            continue;
        }
        if (et.kind == EX_STRING) {
            rc = json ? put_json(out, v.s, v.len) : put_quoted(out, v.s, v.len);
            continue;
        }
        /* a scalar: its text through a one-row vector */
        ex_vec one = {.t = et, .n = 1, .i = &v.i, .d = &v.d};
        one.t.nullable = false;
        char buf[128];
        const uint8_t *sp;
        size_t n = ex_fmt_value(&one, 0, buf, sizeof(buf), &sp);
        bool quote = et.kind == EX_DATE || et.kind == EX_DATETIME;
        if (et.kind == EX_FLOAT && json && (v.d != v.d || v.d - v.d != 0))
            rc = ex_bytes_put(out, "null", 4);
        else if (quote || (json && (et.kind == EX_INT || et.kind == EX_UINT) &&
                           (et.bits == 0 || et.bits == 64)))
            rc = json ? put_json(out, (const uint8_t *)buf, n)
                      : put_quoted(out, (const uint8_t *)buf, n);
        else
            rc = ex_bytes_put(out, buf, n);
    }
    return rc ? rc : ex_bytes_put(out, "]", 1);
}

/* ---- conversions (CAST, INSERT into Array columns) ------------------------------ */

static bool kind_int(uint8_t k)
{
    return k == EX_BOOL || k == EX_INT || k == EX_UINT;
}

/* Element x of type se as an element of type te, into *y (its bytes may
 * point into x or into tmp). 0, or -EINVAL with why. */
static int conv_elem(const ex_type *se, const ex_type *te, const ex_arr_val *x, ex_arr_val *y,
                     char *tmp, size_t tcap, char *why, size_t wlen)
{
    memset(y, 0, sizeof(*y));
    if (x->null) {
        if (!te->nullable) {
            snprintf(why, wlen,
                     "an array element is NULL and the elements are not Nullable "
                     "(use Array(Nullable(T)))");
            return -EINVAL;
        }
        y->null = true;
        return 0;
    }
    uint8_t sk = se->kind, tk = te->kind;
    const uint8_t *s = x->s;
    uint32_t sl = x->len;
    bool neg;
    int ok = 1;
    switch (tk) {
    case EX_STRING:
        if (sk == EX_STRING) {
            y->s = s;
            y->len = sl;
        } else {
            ex_vec one = {.t = *se, .n = 1};
            int64_t iv = x->i;
            double dv = x->d;
            if (sk == EX_FLOAT)
                one.d = &dv;
            else
                one.i = &iv;
            const uint8_t *sp = NULL;
            size_t l = ex_fmt_value(&one, 0, tmp, tcap, &sp);
            y->s = sp ? sp : (const uint8_t *)tmp;
            y->len = (uint32_t)l;
        }
        return 0;
    case EX_BOOL:
    case EX_INT:
    case EX_UINT:
        if (sk == EX_STRING) {
            ok = (tk == EX_BOOL && sl == 4 && !memcmp(s, "true", 4) && (y->i = 1)) ||
                 (tk == EX_BOOL && sl == 5 && !memcmp(s, "false", 5)) ||
                 ex_parse_int(s, sl, &y->i, &neg);
        } else if (sk == EX_FLOAT) {
            ok = isfinite(x->d) && x->d < 18446744073709551616.0 && x->d > -9223372036854775809.0;
            y->i = x->d < 0 ? (int64_t)x->d : (int64_t)(uint64_t)x->d;
        } else if (sk == EX_DECIMAL || sk == EX_DATETIME) {
            y->i = x->i / ex_pow10(se->scale);
        } else {
            y->i = x->i;
        }
        if (tk == EX_BOOL)
            y->i = y->i != 0;
        else
            y->i = ex_int_wrap(te, y->i);
        break;
    case EX_FLOAT:
        if (sk == EX_STRING)
            ok = ex_parse_float(s, sl, &y->d);
        else if (sk == EX_FLOAT)
            y->d = x->d;
        else if (sk == EX_DECIMAL)
            y->d = (double)x->i / (double)ex_pow10(se->scale);
        else
            y->d = (double)x->i;
        break;
    case EX_DECIMAL:
        if (sk == EX_STRING) {
            ok = ex_parse_decimal(s, sl, te->scale, &y->i);
        } else if (sk == EX_DECIMAL) {
            ok = ex_decimal_rescale(x->i, se->scale, te->scale, &y->i);
        } else if (sk == EX_FLOAT) {
            double v = x->d * (double)ex_pow10(te->scale);
            ok = isfinite(v) && fabs(v) < 9.2e18;
            y->i = ok ? llround(v) : 0;
        } else if (kind_int(sk)) {
            ok = x->i <= INT64_MAX / ex_pow10(te->scale) &&
                 x->i >= -(INT64_MAX / ex_pow10(te->scale));
            y->i = x->i * ex_pow10(te->scale);
        } else {
            ok = 0;
        }
        break;
    case EX_DATE:
        if (sk == EX_STRING) {
            ok = ex_parse_date((const char *)s, sl, &y->i);
        } else if (sk == EX_DATETIME) {
            int64_t t = x->i / ex_pow10(se->scale);
            y->i = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
        } else {
            ok = sk != EX_FLOAT && sk != EX_DECIMAL;
            y->i = x->i;
        }
        break;
    case EX_DATETIME: {
        int sc = te->scale, seen;
        if (sk == EX_STRING) {
            int64_t days;
            if (ex_parse_datetime((const char *)s, sl, sc, &y->i, &seen))
                break;
            ok = ex_parse_date((const char *)s, sl, &days);
            y->i = days * 86400 * ex_pow10(sc);
        } else if (sk == EX_DATETIME) {
            y->i =
                se->scale <= sc ? x->i * ex_pow10(sc - se->scale) : x->i / ex_pow10(se->scale - sc);
        } else if (sk == EX_DATE) {
            y->i = x->i * 86400 * ex_pow10(sc);
        } else {
            ok = kind_int(sk);
            y->i = x->i * ex_pow10(sc);
        }
        break;
    }
    default: ok = 0; break;
    }
    if (!ok) {
        char sn[64], tn[64];
        ex_type_name(se, sn, sizeof(sn));
        ex_type_name(te, tn, sizeof(tn));
        if (sk == EX_STRING)
            snprintf(why, wlen, "cannot parse the array element '%.*s' as %s (CANNOT_PARSE_TEXT)",
                     (int)(sl > 60 ? 60 : sl), (const char *)s, tn);
        else
            snprintf(why, wlen, "an array element of type %s does not convert to %s", sn, tn);
        return -EINVAL;
    }
    return 0;
}

/* One element of an array's text at *pos: NULL, a quoted string ('..' with
 * ClickHouse's escapes, ".." with JSON's) or a bare token (a number, true).
 * Unquoted text and unescaped strings land in *buf. 1 for NULL, 0, or
 * -EINVAL. */
static int text_elem(const uint8_t *s, size_t n, size_t *pos, ex_bytes *buf)
{
    size_t i = *pos;
    buf->n = 0;
    if (i < n && (s[i] == '\'' || s[i] == '"')) {
        uint8_t q = s[i++];
        for (; i < n && s[i] != q; i++) {
            uint8_t c = s[i];
            if (c == '\\' && i + 1 < n) {
                c = s[++i];
                switch (c) {
                case 'n': c = '\n'; break;
                case 't': c = '\t'; break;
                case 'r': c = '\r'; break;
                case 'b': c = '\b'; break;
                case 'f': c = '\f'; break;
                case '0': c = 0; break;
                case 'u': {
                    uint8_t u[4];
                    size_t ul, used = jsonu_decode((const char *)s + i + 1, n - i - 1, u, &ul);
                    if (!used)
                        return -EINVAL;
                    i += used;
                    if (ex_bytes_put(buf, u, ul) < 0)
                        return -ENOMEM;
                    continue;
                }
                default: break; /* \\ \' \" \/ and any other: the character */
                }
            }
            if (ex_bytes_put(buf, &c, 1) < 0)
                return -ENOMEM;
        }
        if (i >= n)
            return -EINVAL;
        *pos = i + 1;
        return 0;
    }
    size_t b = i;
    while (i < n && s[i] != ',' && s[i] != ']' && s[i] != ' ' && s[i] != '\t' && s[i] != '\n')
        i++;
    *pos = i;
    if (i == b)
        return -EINVAL;
    if ((i - b == 4 && (!memcmp(s + b, "NULL", 4) || !memcmp(s + b, "null", 4))))
        return 1;
    return ex_bytes_put(buf, s + b, i - b) < 0 ? -ENOMEM : 0;
}

static size_t skip_ws(const uint8_t *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

int ex_arr_convert(const ex_vec *v, uint32_t r, const ex_type *to, ex_bytes *out, char *tmp,
                   size_t tcap, char *why, size_t wlen)
{
    ex_type te = ex_arr_elem(to);
    out->n = 0;
    size_t cnt_at;
    uint32_t count = 0, l = 0;
    if (to->depth > 1 || (v->t.kind == EX_ARRAY && v->t.depth > 1)) {
        snprintf(why, wlen, "nested arrays do not convert");
        return -EINVAL;
    }
    int rc = ex_arr_begin(out, &cnt_at);
    if (v->t.kind == EX_ARRAY) {
        const uint8_t *p = ex_str(v, r, &l);
        ex_type se = ex_arr_elem(&v->t);
        ex_arr_it it;
        ex_arr_val x, y;
        ex_arr_open(&it, &v->t, p, l);
        while (rc == 0 && ex_arr_next(&it, &x)) {
            if ((rc = conv_elem(&se, &te, &x, &y, tmp, tcap, why, wlen)) == 0)
                rc = ex_arr_put(out, &te, &y);
            count++;
        }
    } else if (v->t.kind == EX_STRING) {
        const uint8_t *s = ex_str(v, r, &l);
        ex_type st = {.kind = EX_STRING};
        ex_bytes buf = {0};
        size_t i = skip_ws(s, l, 0);
        bool bad = i >= l || s[i] != '[';
        i = skip_ws(s, l, i + 1);
        if (!bad && i < l && s[i] == ']') {
            i++;
        } else {
            while (!bad && rc == 0) {
                int er = text_elem(s, l, &i, &buf);
                if (er == -ENOMEM) {
                    rc = er;
                    break;
                }
                bad = er < 0;
                ex_arr_val x = {.null = er == 1, .s = buf.p, .len = (uint32_t)buf.n}, y;
                if (!bad && (rc = conv_elem(&st, &te, &x, &y, tmp, tcap, why, wlen)) == 0)
                    rc = ex_arr_put(out, &te, &y);
                count++;
                i = skip_ws(s, l, i);
                if (!bad && i < l && s[i] == ']') {
                    i++;
                    break;
                }
                bad = bad || i >= l || s[i] != ',';
                i = skip_ws(s, l, i + 1);
            }
        }
        ex_bytes_free(&buf);
        if (!bad && rc == 0 && skip_ws(s, l, i) != l)
            bad = true;
        if (bad && rc == 0) {
            char tn[96];
            ex_type_name(to, tn, sizeof(tn));
            snprintf(why, wlen, "cannot parse '%.*s' as %s (CANNOT_PARSE_TEXT)",
                     (int)(l > 60 ? 60 : l), (const char *)s, tn);
            return -EINVAL;
        }
    } else {
        char sn[64];
        ex_type_name(&v->t, sn, sizeof(sn));
        snprintf(why, wlen, "a %s is not an array", sn);
        return -EINVAL;
    }
    if (rc == -ENOMEM || rc == -E2BIG) {
        snprintf(why, wlen, rc == -E2BIG ? "the array is over 4 GiB" : "out of memory");
        return rc;
    }
    if (rc < 0)
        return rc;
    ex_arr_end(out, cnt_at, count);
    return 0;
}
