/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_eval_fn.c: the scalar functions beyond the operators (eng_eval.c
 * dispatches here): math (intDiv, pow, log, sqrt, floor/ceil/trunc with a
 * precision), strings (replaceAll, the regular-expression functions over
 * POSIX extended expressions, trim*, reverse, empty), formatReadable*,
 * xxHash64 and sipHash64, and dates (toStartOf*, toYYYYMM and the parts,
 * dateAdd/dateSub and INTERVAL arithmetic, formatDateTime,
 * parseDateTimeBestEffort), assumeNotNull. Semantics are ClickHouse's: NULL
 * in, NULL out; dates are UTC.
 */
#include "expr_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

static int fn_err(ex_ectx *c, const char *msg)
{
    if (c->err && c->errlen)
        snprintf(c->err, c->errlen, "%s", msg);
    return -EINVAL;
}

static inline bool is_null(const ex_vec *out, uint32_t r)
{
    return out->nulls && out->nulls[r];
}

static inline int64_t ival(const ex_vec *v, uint32_t r)
{
    r = ex_row(v, r);
    if (v->t.kind == EX_FLOAT)
        return v->d ? (int64_t)v->d[r] : 0;
    return v->i ? v->i[r] : 0;
}

/* ---- math ------------------------------------------------------------------ */

static int eval_math2(ex_ectx *c, const bx *e, ex_vec *a, int na, uint32_t n, ex_vec *out)
{
    if (bx_out_new(c, out, e->t, n, a, na) < 0)
        return -ENOMEM;
    int64_t places = e->fn >= F_FLOOR && na > 1 ? ival(&a[1], 0) : 0;
    for (uint32_t r = 0; r < n; r++) {
        if (is_null(out, r)) {
            if (out->d)
                out->d[r] = 0;
            else
                out->i[r] = 0;
            continue;
        }
        double x = ex_f(&a[0], r);
        switch (e->fn) {
        case F_INTDIV: {
            if (a[0].t.kind == EX_FLOAT || a[1].t.kind == EX_FLOAT) {
                double y = ex_f(&a[1], r);
                if (y == 0 || !isfinite(x / y))
                    return fn_err(c, "division by zero in intDiv");
                out->i[r] = (int64_t)trunc(x / y);
                break;
            }
            int64_t p = ival(&a[0], r), q = ival(&a[1], r);
            if (q == 0)
                return fn_err(c, "division by zero in intDiv");
            if (e->t.kind == EX_UINT)
                out->i[r] = (int64_t)((uint64_t)p / (uint64_t)q);
            else
                out->i[r] = q == -1 ? (int64_t)(0 - (uint64_t)p) : p / q;
            break;
        }
        case F_POW: out->d[r] = pow(x, ex_f(&a[1], r)); break;
        case F_LOG: out->d[r] = log(x); break;
        case F_LOG2: out->d[r] = log2(x); break;
        case F_LOG10: out->d[r] = log10(x); break;
        case F_EXP: out->d[r] = exp(x); break;
        case F_SQRT: out->d[r] = sqrt(x); break;
        case F_FLOOR:
        case F_CEIL:
        case F_TRUNC: {
            double (*f)(double) = e->fn == F_FLOOR ? floor : e->fn == F_CEIL ? ceil : trunc;
            if (e->t.kind == EX_FLOAT) {
                if (places == 0) {
                    out->d[r] = f(x);
                } else if (places > 0 && places < 300) {
                    double p = pow(10, (double)places), y = f(x * p) / p;
                    out->d[r] = isfinite(y) ? y : x;
                } else if (places < 0 && places > -300) {
                    double p = pow(10, (double)-places);
                    out->d[r] = f(x / p) * p;
                } else {
                    out->d[r] = places > 0 ? x : 0;
                }
                break;
            }
            int64_t v = ival(&a[0], r);
            if (places >= 0) {
                out->i[r] = v;
            } else if (places < -18) {
                out->i[r] = 0;
            } else {
                int64_t p = 1;
                for (int64_t k = 0; k < -places; k++)
                    p *= 10;
                int64_t q = v / p, rem = v % p;
                if (e->fn == F_FLOOR && rem < 0)
                    q--;
                else if (e->fn == F_CEIL && rem > 0)
                    q++;
                out->i[r] = q * p;
            }
            break;
        }
        default: break;
        }
    }
    return 0;
}

/* ---- strings ----------------------------------------------------------------- */

/* A growing byte buffer for building one string. */
typedef struct sbuf {
    uint8_t *p;
    size_t len, cap;
} sbuf;

static bool sb_add(sbuf *b, const void *s, size_t n)
{
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 64;
        while (nc < b->len + n)
            nc *= 2;
        uint8_t *np = realloc(b->p, nc);
        if (!np)
            return false;
        b->p = np;
        b->cap = nc;
    }
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    return true;
}

/* The size of a pattern once regcomp has expanded its bounded repetitions,
 * in atoms: regcomp copies the atom or group before {m,n} max(m,n) times, so
 * nested repetitions multiply (a 30-byte pattern can ask for gigabytes). */
static double regex_expanded_atoms(const char *re, size_t n)
{
    enum { DEPTH = 64 };
    double size[DEPTH + 1] = {0}; /* atoms so far in each open group */
    double last[DEPTH + 1] = {0}; /* the atom or group a repetition would copy */
    int d = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = re[i];
        if (ch == '(') {
            if (d == DEPTH)
                return INFINITY;
            size[++d] = 0;
            last[d] = 0;
            continue;
        }
        if (ch == ')' && d > 0) {
            double g = size[d--];
            size[d] += g;
            last[d] = g;
            continue;
        }
        if (ch == '{') {
            long hi = 0;
            size_t k = i + 1;
            for (; k < n && re[k] != '}'; k++)
                if (isdigit((unsigned char)re[k])) {
                    long v = strtol(re + k, NULL, 10);
                    if (v > hi)
                        hi = v;
                    while (k + 1 < n && isdigit((unsigned char)re[k + 1]))
                        k++;
                }
            if (hi > 1000)
                return INFINITY;
            /* "{m,}" is m copies and a star: one more copy either way */
            size[d] += last[d] * (double)hi;
            last[d] *= (double)(hi + 1);
            i = k < n ? k : n;
            continue;
        }
        if (ch == '+') { /* a+ is a a* */
            size[d] += last[d];
            last[d] *= 2;
            continue;
        }
        if (ch == '*' || ch == '?' || ch == '|')
            continue;
        if (ch == '[') { /* a bracket expression is one atom */
            size_t k = i + 1;
            if (k < n && re[k] == '^')
                k++;
            if (k < n && re[k] == ']')
                k++;
            for (; k < n && re[k] != ']'; k++)
                if (re[k] == '[' && k + 1 < n &&
                    (re[k + 1] == ':' || re[k + 1] == '.' || re[k + 1] == '=')) {
                    char close = re[k + 1];
                    for (k += 2; k + 1 < n && !(re[k] == close && re[k + 1] == ']'); k++)
                        ;
                    k++;
                }
            i = k < n ? k : n;
        } else if (ch == '\\' && i + 1 < n) {
            i++;
        }
        size[d] += 1;
        last[d] = 1;
    }
    double total = 0;
    for (int k = 0; k <= d; k++)
        total += size[k];
    return total;
}

bool bx_regex_bounded(const char *re)
{
    size_t n = strlen(re);
    return n <= BX_REGEX_MAX_BYTES && regex_expanded_atoms(re, n) <= BX_REGEX_MAX_ATOMS;
}

/* The constant pattern of a regular-expression function, compiled. */
static int compile_const(ex_ectx *c, const bx *e, const ex_vec *pat, regex_t *re, bool nosub)
{
    if (!pat->is_const && e->a[1]->op != BX_CONST)
        return fn_err(c, "the regular expression of a function must be a constant string");
    uint32_t l;
    const uint8_t *s = ex_str(pat, 0, &l);
    char *z = malloc((size_t)l + 1);
    if (!z)
        return bx_oom(c);
    memcpy(z, s, l);
    z[l] = 0;
    if (!bx_regex_bounded(z)) {
        if (c->err && c->errlen)
            snprintf(c->err, c->errlen,
                     "the regular expression '%.64s' is too large: " BX_REGEX_LIMITS, z);
        free(z);
        return -EINVAL;
    }
    int rc = regcomp(re, z, REG_EXTENDED | (nosub ? REG_NOSUB : 0));
    if (rc) {
        char m[160];
        regerror(rc, re, m, sizeof(m));
        if (c->err && c->errlen)
            snprintf(c->err, c->errlen, "bad regular expression '%.64s': %s", z, m);
        free(z);
        return -EINVAL;
    }
    free(z);
    return 0;
}

/* The replacement of replaceRegexp*: \0..\9 are the groups of match m. */
static bool put_repl(sbuf *b, const uint8_t *s, const regmatch_t *m, const uint8_t *rp, uint32_t rl)
{
    for (uint32_t k = 0; k < rl; k++) {
        if (rp[k] == '\\' && k + 1 < rl && rp[k + 1] >= '0' && rp[k + 1] <= '9') {
            int g = rp[++k] - '0';
            if (m[g].rm_so >= 0 && !sb_add(b, s + m[g].rm_so, (size_t)(m[g].rm_eo - m[g].rm_so)))
                return false;
        } else if (rp[k] == '\\' && k + 1 < rl && rp[k + 1] == '\\') {
            if (!sb_add(b, "\\", 1))
                return false;
            k++;
        } else if (!sb_add(b, &rp[k], 1)) {
            return false;
        }
    }
    return true;
}

static int eval_strfn(ex_ectx *c, const bx *e, ex_vec *a, int na, uint32_t n, ex_vec *out)
{
    if (bx_out_new(c, out, e->t, n, a, na) < 0)
        return -ENOMEM;
    bool rx = e->fn == F_REPLACEREGEXPALL || e->fn == F_REPLACEREGEXPONE || e->fn == F_MATCH ||
              e->fn == F_EXTRACT;
    regex_t re;
    int rc = 0;
    if (rx && (rc = compile_const(c, e, &a[1], &re, e->fn == F_MATCH)) < 0)
        return rc;
    sbuf b = {0};
    char tmp[16];
    for (uint32_t r = 0; r < n && rc == 0; r++) {
        bool string_out = e->t.kind == EX_STRING;
        if (is_null(out, r)) {
            if (string_out)
                rc = ex_vec_str_put(c->mem, out, r, "", 0);
            else
                out->i[r] = 0;
            continue;
        }
        uint32_t l;
        const uint8_t *s = ex_str(&a[0], r, &l);
        b.len = 0;
        bool ok = true;
        switch (e->fn) {
        case F_REPLACEALL:
        case F_REPLACEONE: {
            uint32_t fl, tl;
            const uint8_t *f = ex_str(&a[1], r, &fl), *to = ex_str(&a[2], r, &tl);
            uint32_t k = 0;
            bool once = false;
            while (ok && k < l) {
                const uint8_t *hit = fl && !once ? memmem(s + k, l - k, f, fl) : NULL;
                if (!hit) {
                    ok = sb_add(&b, s + k, l - k);
                    break;
                }
                ok = sb_add(&b, s + k, (size_t)(hit - (s + k))) && sb_add(&b, to, tl);
                k = (uint32_t)(hit - s) + fl;
                once = e->fn == F_REPLACEONE;
                if (once && ok && k < l) {
                    ok = sb_add(&b, s + k, l - k);
                    break;
                }
            }
            break;
        }
        case F_REPLACEREGEXPALL:
        case F_REPLACEREGEXPONE:
        case F_MATCH:
        case F_EXTRACT: {
            /* regexec wants a NUL-terminated subject */
            char *z = malloc((size_t)l + 1);
            if (!z) {
                ok = false;
                break;
            }
            memcpy(z, s, l);
            z[l] = 0;
            regmatch_t m[10];
            if (e->fn == F_MATCH) {
                out->i[r] = regexec(&re, z, 0, NULL, 0) == 0;
                free(z);
                continue;
            }
            if (e->fn == F_EXTRACT) {
                const char *hs = "";
                size_t hl = 0;
                if (regexec(&re, z, 10, m, 0) == 0) {
                    int g = re.re_nsub >= 1 && m[1].rm_so >= 0 ? 1 : 0;
                    hs = z + m[g].rm_so;
                    hl = (size_t)(m[g].rm_eo - m[g].rm_so);
                }
                rc = ex_vec_str_put(c->mem, out, r, hs, hl);
                free(z);
                continue;
            }
            uint32_t rl;
            const uint8_t *rp = ex_str(&a[2], r, &rl);
            size_t k = 0;
            int flags = 0;
            while (ok && k <= l && regexec(&re, z + k, 10, m, flags) == 0) {
                ok = sb_add(&b, z + k, (size_t)m[0].rm_so) &&
                     put_repl(&b, (const uint8_t *)z + k, m, rp, rl);
                size_t adv = (size_t)m[0].rm_eo;
                if (m[0].rm_eo == m[0].rm_so) { /* an empty match: keep one byte and go on */
                    if (ok && k + adv < l)
                        ok = sb_add(&b, z + k + adv, 1);
                    adv++;
                }
                k += adv;
                flags = REG_NOTBOL;
                if (e->fn == F_REPLACEREGEXPONE)
                    break;
            }
            if (ok && k < l)
                ok = sb_add(&b, z + k, l - k);
            free(z);
            break;
        }
        case F_TRIMBOTH:
        case F_TRIMLEFT:
        case F_TRIMRIGHT: {
            uint32_t lo = 0, hi = l;
            if (e->fn != F_TRIMRIGHT)
                while (lo < hi && s[lo] == ' ')
                    lo++;
            if (e->fn != F_TRIMLEFT)
                while (hi > lo && s[hi - 1] == ' ')
                    hi--;
            ok = sb_add(&b, s + lo, hi - lo);
            break;
        }
        case F_REVERSE:
            for (uint32_t k = l; ok && k > 0; k--)
                ok = sb_add(&b, &s[k - 1], 1);
            break;
        case F_EMPTY: out->i[r] = l == 0; continue;
        case F_NOTEMPTY: out->i[r] = l != 0; continue;
        case F_XXHASH64: out->i[r] = (int64_t)XXH64(s, l, 0); continue;
        case F_CITYHASH64: out->i[r] = (int64_t)bx_cityhash64(s, l); continue;
        default: break;
        }
        (void)tmp;
        if (!ok) {
            rc = bx_oom(c);
            break;
        }
        rc = ex_vec_str_put(c->mem, out, r, b.p ? b.p : (const uint8_t *)"", b.len);
    }
    if (rx)
        regfree(&re);
    free(b.p);
    if (rc == -ENOMEM)
        return bx_oom(c);
    return rc;
}

/* SipHash-2-4 with the key ClickHouse's sipHash64 uses (zero). */
static uint64_t rotl64(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

#define SIP_ROUND(v0, v1, v2, v3)                                                                  \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = rotl64(v1, 13);                                                                       \
        v1 ^= v0;                                                                                  \
        v0 = rotl64(v0, 32);                                                                       \
        v2 += v3;                                                                                  \
        v3 = rotl64(v3, 16);                                                                       \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = rotl64(v3, 21);                                                                       \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = rotl64(v1, 17);                                                                       \
        v1 ^= v2;                                                                                  \
        v2 = rotl64(v2, 32);                                                                       \
    } while (0)

uint64_t bx_siphash24(uint64_t k0, uint64_t k1, const uint8_t *m, size_t len)
{
    uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
    uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w = 0;
        for (int k = 0; k < 8; k++)
            w |= (uint64_t)m[i + (size_t)k] << (8 * k);
        v3 ^= w;
        SIP_ROUND(v0, v1, v2, v3);
        SIP_ROUND(v0, v1, v2, v3);
        v0 ^= w;
    }
    uint64_t w = (uint64_t)len << 56;
    for (size_t k = 0; i + k < len; k++)
        w |= (uint64_t)m[i + k] << (8 * k);
    v3 ^= w;
    SIP_ROUND(v0, v1, v2, v3);
    SIP_ROUND(v0, v1, v2, v3);
    v0 ^= w;
    v2 ^= 0xff;
    for (int k = 0; k < 4; k++)
        SIP_ROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

/* ---- formatReadable* --------------------------------------------------------- */

/* x in steps of base with units u[0..nu): "183.92 MiB", "10.04 thousand". */
static size_t fmt_scaled(double x, double base, const char *const *u, int nu, char *buf, size_t cap)
{
    int k = 0;
    while (fabs(x) >= base && k < nu - 1) {
        x /= base;
        k++;
    }
    return (size_t)snprintf(buf, cap, "%.2f%s", x, u[k]);
}

static const char *const size_units[] = {" B",   " KiB", " MiB", " GiB", " TiB",
                                         " PiB", " EiB", " ZiB", " YiB"};
static const char *const quantity_units[] = {"",         " thousand", " million",
                                             " billion", " trillion", " quadrillion"};

/* "3 hours, 25 minutes and 45 seconds": years of 365 days, months of 30. */
static size_t fmt_timedelta(double x, char *buf, size_t cap)
{
    static const struct {
        const char *n;
        double s;
    } u[] = {{"year", 365 * 86400.0}, {"month", 30 * 86400.0}, {"day", 86400},
             {"hour", 3600},          {"minute", 60},          {"second", 1}};
    size_t o = 0;
    if (x < 0) {
        o += (size_t)snprintf(buf, cap, "-");
        x = -x;
    }
    int parts[6], np = 0;
    double v[6];
    for (int k = 0; k < 6; k++) {
        v[k] = floor(x / u[k].s);
        x -= v[k] * u[k].s;
        if (v[k] > 0)
            parts[np++] = k;
    }
    if (np == 0)
        return o + (size_t)snprintf(buf + o, cap - o, "0 seconds");
    for (int j = 0; j < np && o < cap; j++) {
        int k = parts[j];
        const char *sep = j == 0 ? "" : j == np - 1 ? " and " : ", ";
        o += (size_t)snprintf(buf + o, cap - o, "%s%.0f %s%s", sep, v[k], u[k].n,
                              v[k] == 1 ? "" : "s");
    }
    return o < cap ? o : cap - 1;
}

static int eval_readable(ex_ectx *c, const bx *e, ex_vec *a, int na, uint32_t n, ex_vec *out)
{
    if (bx_out_new(c, out, e->t, n, a, na) < 0)
        return -ENOMEM;
    for (uint32_t r = 0; r < n; r++) {
        char buf[160];
        size_t l = 0;
        if (!is_null(out, r)) {
            double x = ex_f(&a[0], r);
            if (e->fn == F_FMT_SIZE)
                l = fmt_scaled(x, 1024, size_units, 9, buf, sizeof(buf));
            else if (e->fn == F_FMT_QUANTITY)
                l = fmt_scaled(x, 1000, quantity_units, 6, buf, sizeof(buf));
            else
                l = fmt_timedelta(x, buf, sizeof(buf));
        }
        if (ex_vec_str_put(c->mem, out, r, buf, l) < 0)
            return bx_oom(c);
    }
    return 0;
}

/* ---- dates ------------------------------------------------------------------- */

static int64_t p10(int k)
{
    int64_t p = 1;
    while (k-- > 0)
        p *= 10;
    return p;
}

static int64_t div_floor(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

/* A date or datetime value as seconds since the epoch and the sub-second
 * part in the value's own scale. */
static int64_t secs(const ex_vec *v, uint32_t r, int64_t *frac)
{
    int64_t x = ival(v, r);
    *frac = 0;
    if (v->t.kind == EX_DATE)
        return x * 86400;
    if (v->t.kind == EX_DATETIME && v->t.scale) {
        int64_t p = p10(v->t.scale), s = div_floor(x, p);
        *frac = x - s * p;
        return s;
    }
    return x;
}

/* The result value (in e->t) of seconds s. */
static int64_t from_secs(const ex_type *t, int64_t s)
{
    if (t->kind == EX_DATE)
        return div_floor(s, 86400);
    return (int64_t)((uint64_t)s * (uint64_t)p10(t->scale)); /* wraps, as ClickHouse's */
}

static int64_t add_months(int64_t days, int64_t months)
{
    int64_t y;
    unsigned m, d;
    ex_civil_from_days(days, &y, &m, &d);
    int64_t t = y * 12 + (m - 1) + months;
    int64_t ny = div_floor(t, 12);
    unsigned nm = (unsigned)(t - ny * 12) + 1;
    if (nm < 1 || nm > 12) /* beyond the calendar's range */
        nm = 1;
    static const unsigned mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    unsigned last = mdays[nm - 1];
    if (nm == 2 && ((ny % 4 == 0 && ny % 100 != 0) || ny % 400 == 0))
        last = 29;
    return ex_days_from_civil(ny, nm, d > last ? last : d);
}

static int64_t start_of(int unit, int64_t s)
{
    int64_t days = div_floor(s, 86400), y;
    unsigned m, d;
    switch (unit) {
    case BX_U_SECOND: return s;
    case BX_U_MINUTE: return div_floor(s, 60) * 60;
    case BX_U_MIN5: return div_floor(s, 300) * 300;
    case BX_U_MIN10: return div_floor(s, 600) * 600;
    case BX_U_MIN15: return div_floor(s, 900) * 900;
    case BX_U_HOUR: return div_floor(s, 3600) * 3600;
    case BX_U_DAY: return days * 86400;
    /* 1970-01-01 was a Thursday: Sunday is day 3 before it, Monday day 3 after */
    case BX_U_WEEK: return (div_floor(days + 4, 7) * 7 - 4) * 86400;
    case BX_U_MONDAY: return (div_floor(days + 3, 7) * 7 - 3) * 86400;
    case BX_U_MONTH:
        ex_civil_from_days(days, &y, &m, &d);
        return ex_days_from_civil(y, m, 1) * 86400;
    case BX_U_QUARTER:
        ex_civil_from_days(days, &y, &m, &d);
        return ex_days_from_civil(y, (m - 1) / 3 * 3 + 1, 1) * 86400;
    default: ex_civil_from_days(days, &y, &m, &d); return ex_days_from_civil(y, 1, 1) * 86400;
    }
}

static int64_t date_part(int part, int64_t s)
{
    int64_t days = div_floor(s, 86400), sod = s - days * 86400, y;
    unsigned m, d;
    ex_civil_from_days(days, &y, &m, &d);
    switch (part) {
    case BX_P_YYYYMM: return y * 100 + m;
    case BX_P_YYYYMMDD: return (y * 100 + m) * 100 + d;
    case BX_P_YYYYMMDDHHMMSS:
        return ((y * 100 + m) * 100 + d) * 1000000 + sod / 3600 * 10000 + sod / 60 % 60 * 100 +
               sod % 60;
    case BX_P_DAYOFWEEK: return (days + 3) - div_floor(days + 3, 7) * 7 + 1; /* Monday 1 */
    case BX_P_DAYOFMONTH: return d;
    case BX_P_DAYOFYEAR: return days - ex_days_from_civil(y, 1, 1) + 1;
    case BX_P_HOUR: return sod / 3600;
    case BX_P_MINUTE: return sod / 60 % 60;
    case BX_P_SECOND: return sod % 60;
    default: return (m - 1) / 3 + 1;
    }
}

static const char *const month_names[] = {"January",   "February", "March",    "April",
                                          "May",       "June",     "July",     "August",
                                          "September", "October",  "November", "December"};
static const char *const day_names[] = {"Monday", "Tuesday",  "Wednesday", "Thursday",
                                        "Friday", "Saturday", "Sunday"};

/* ClickHouse's formatDateTime: %Y %y %m %d %e %H %h %I %i %M (month name)
 * %S %s %F %T %D %R %j %u %w %Q %p %a %b %f %%. */
static bool fmt_datetime(sbuf *b, const uint8_t *f, uint32_t fl, int64_t s, int64_t frac, int scale)
{
    int64_t days = div_floor(s, 86400), sod = s - days * 86400, y;
    unsigned m, d;
    ex_civil_from_days(days, &y, &m, &d);
    int dow = (int)date_part(BX_P_DAYOFWEEK, s);
    if (dow < 1 || dow > 7 || m < 1 || m > 12) /* out of the calendar's range */
        dow = 1, m = 1;
    int hh = (int)(sod / 3600), mi = (int)(sod / 60 % 60), ss = (int)(sod % 60);
    int h12 = hh % 12 == 0 ? 12 : hh % 12;
    char t[64];
    for (uint32_t k = 0; k < fl; k++) {
        if (f[k] != '%' || k + 1 == fl) {
            if (!sb_add(b, &f[k], 1))
                return false;
            continue;
        }
        int l = 0;
        switch (f[++k]) {
        case 'Y': l = snprintf(t, sizeof(t), "%04lld", (long long)y); break;
        case 'y': l = snprintf(t, sizeof(t), "%02lld", (long long)(y % 100)); break;
        case 'm': l = snprintf(t, sizeof(t), "%02u", m); break;
        case 'd': l = snprintf(t, sizeof(t), "%02u", d); break;
        case 'e': l = snprintf(t, sizeof(t), "%2u", d); break;
        case 'H': l = snprintf(t, sizeof(t), "%02d", hh); break;
        case 'h':
        case 'I': l = snprintf(t, sizeof(t), "%02d", h12); break;
        case 'i': l = snprintf(t, sizeof(t), "%02d", mi); break;
        case 'M': l = snprintf(t, sizeof(t), "%s", month_names[m - 1]); break;
        case 'S':
        case 's': l = snprintf(t, sizeof(t), "%02d", ss); break;
        case 'F': l = snprintf(t, sizeof(t), "%04lld-%02u-%02u", (long long)y, m, d); break;
        case 'T': l = snprintf(t, sizeof(t), "%02d:%02d:%02d", hh, mi, ss); break;
        case 'D': l = snprintf(t, sizeof(t), "%02u/%02u/%02lld", m, d, (long long)(y % 100)); break;
        case 'R': l = snprintf(t, sizeof(t), "%02d:%02d", hh, mi); break;
        case 'j':
            l = snprintf(t, sizeof(t), "%03lld", (long long)date_part(BX_P_DAYOFYEAR, s));
            break;
        case 'u': l = snprintf(t, sizeof(t), "%d", dow); break;
        case 'w': l = snprintf(t, sizeof(t), "%d", dow % 7); break;
        case 'Q': l = snprintf(t, sizeof(t), "%u", (m - 1) / 3 + 1); break;
        case 'p': l = snprintf(t, sizeof(t), "%s", hh < 12 ? "AM" : "PM"); break;
        case 'a': l = snprintf(t, sizeof(t), "%.3s", day_names[dow - 1]); break;
        case 'b': l = snprintf(t, sizeof(t), "%.3s", month_names[m - 1]); break;
        case 'f':
            l = scale ? snprintf(t, sizeof(t), "%0*lld", scale, (long long)frac)
                      : snprintf(t, sizeof(t), "0");
            break;
        case '%': l = snprintf(t, sizeof(t), "%%"); break;
        default: l = snprintf(t, sizeof(t), "%%%c", f[k]); break;
        }
        if (!sb_add(b, t, (size_t)l))
            return false;
    }
    return true;
}

static int digits(const char *p, int n, int *out)
{
    int v = 0;
    for (int k = 0; k < n; k++) {
        if (!isdigit((unsigned char)p[k]))
            return -1;
        v = v * 10 + (p[k] - '0');
    }
    *out = v;
    return 0;
}

/* parseDateTimeBestEffort's forms: a Unix timestamp; YYYY-MM-DD, YYYY/MM/DD,
 * YYYYMMDD, DD/MM/YYYY, DD.MM.YYYY; then [T or blanks] hh:mm[:ss[.frac]];
 * then Z or +hh[:mm] / -hh[:mm]. Seconds since the epoch (UTC). */
static bool parse_best_effort(const char *s, size_t n, int64_t *out)
{
    char z[96];
    while (n && isspace((unsigned char)*s)) {
        s++;
        n--;
    }
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    if (n == 0 || n >= sizeof(z))
        return false;
    memcpy(z, s, n);
    z[n] = 0;
    size_t k = 0;
    while (k < n && isdigit((unsigned char)z[k]))
        k++;
    if (k == n && n >= 9 && n <= 10) { /* a Unix timestamp */
        *out = strtoll(z, NULL, 10);
        return true;
    }
    int y, mo, d, hh = 0, mi = 0, ss = 0;
    const char *p = z;
    if (k == 8 && digits(p, 4, &y) == 0 && digits(p + 4, 2, &mo) == 0 &&
        digits(p + 6, 2, &d) == 0) {
        p += 8;
    } else if (k == 4 && (z[4] == '-' || z[4] == '/' || z[4] == '.') && digits(p, 4, &y) == 0 &&
               digits(p + 5, 2, &mo) == 0 && p[7] == z[4] && digits(p + 8, 2, &d) == 0) {
        p += 10;
    } else if (k == 2 && (z[2] == '/' || z[2] == '.' || z[2] == '-') && digits(p, 2, &d) == 0 &&
               digits(p + 3, 2, &mo) == 0 && p[5] == z[2] && digits(p + 6, 4, &y) == 0) {
        p += 10;
    } else {
        return false;
    }
    if (mo < 1 || mo > 12 || d < 1 || d > 31)
        return false;
    int64_t off = 0;
    if (*p == 'T' || *p == ' ') {
        while (*p == 'T' || *p == ' ')
            p++;
        if (digits(p, 2, &hh) < 0 || p[2] != ':' || digits(p + 3, 2, &mi) < 0)
            return false;
        p += 5;
        if (*p == ':') {
            if (digits(p + 1, 2, &ss) < 0)
                return false;
            p += 3;
        }
        if (*p == '.' || *p == ',') {
            p++;
            while (isdigit((unsigned char)*p))
                p++;
        }
        if (hh > 23 || mi > 59 || ss > 60)
            return false;
        while (*p == ' ')
            p++;
        if (*p == 'Z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            int oh, om = 0;
            char sign = *p++;
            if (digits(p, 2, &oh) < 0)
                return false;
            p += 2;
            if (*p == ':')
                p++;
            if (isdigit((unsigned char)*p)) {
                if (digits(p, 2, &om) < 0)
                    return false;
                p += 2;
            }
            off = (oh * 3600 + om * 60) * (sign == '+' ? 1 : -1);
        }
    }
    if (*p)
        return false;
    *out =
        ex_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + hh * 3600 + mi * 60 + ss - off;
    return true;
}

static int eval_datefn(ex_ectx *c, const bx *e, ex_vec *a, int na, uint32_t n, ex_vec *out)
{
    if (bx_out_new(c, out, e->t, n, a, na) < 0)
        return -ENOMEM;
    if (e->fn == F_PARSEDATETIME && e->unit == 1 && !out->nulls) {
        if (!(out->nulls = em_calloc(c->mem, n ? n : 1)))
            return bx_oom(c);
        out->own |= EXO_NULLS;
    }
    sbuf b = {0};
    int rc = 0;
    for (uint32_t r = 0; r < n && rc == 0; r++) {
        if (is_null(out, r)) {
            if (e->t.kind == EX_STRING)
                rc = ex_vec_str_put(c->mem, out, r, "", 0);
            else
                out->i[r] = 0;
            continue;
        }
        int64_t frac, s;
        switch (e->fn) {
        case F_TOSTARTOF:
            s = secs(&a[0], r, &frac);
            out->i[r] = from_secs(&e->t, start_of(e->unit, s));
            break;
        case F_DATEPART: out->i[r] = date_part(e->unit, secs(&a[0], r, &frac)); break;
        case F_DATEADD: {
            int64_t k = ival(&a[0], r);
            if (e->negated)
                k = (int64_t)(0 - (uint64_t)k);
            const ex_vec *d = &a[1];
            s = secs(d, r, &frac);
            switch (e->unit) {
            case BX_U_MONTH:
            case BX_U_QUARTER:
            case BX_U_YEAR: {
                int64_t mm = (int64_t)((uint64_t)k * (e->unit == BX_U_MONTH     ? 1u
                                                      : e->unit == BX_U_QUARTER ? 3u
                                                                                : 12u));
                int64_t days = div_floor(s, 86400), sod = s - days * 86400;
                s = add_months(days, mm) * 86400 + sod;
                break;
            }
            default: {
                static const int64_t mul[] = {1, 60, 3600, 86400, 604800};
                s = (int64_t)((uint64_t)s + (uint64_t)k * (uint64_t)mul[e->unit]); /* wraps */
            }
            }
            if (e->t.kind == EX_DATE)
                out->i[r] = div_floor(s, 86400);
            else
                out->i[r] = (int64_t)((uint64_t)s * (uint64_t)p10(e->t.scale) +
                                      (uint64_t)(d->t.kind == EX_DATETIME
                                                     ? frac * p10(e->t.scale - d->t.scale)
                                                     : 0));
            break;
        }
        case F_FORMATDATETIME: {
            uint32_t fl;
            const uint8_t *f = ex_str(&a[1], r, &fl);
            s = secs(&a[0], r, &frac);
            b.len = 0;
            if (!fmt_datetime(&b, f, fl, s, frac, a[0].t.kind == EX_DATETIME ? a[0].t.scale : 0)) {
                rc = -ENOMEM;
                break;
            }
            rc = ex_vec_str_put(c->mem, out, r, b.p ? b.p : (const uint8_t *)"", b.len);
            break;
        }
        case F_PARSEDATETIME: {
            uint32_t l;
            const uint8_t *p = ex_str(&a[0], r, &l);
            if (parse_best_effort((const char *)p, l, &s)) {
                out->i[r] = s;
            } else if (e->unit) {
                out->i[r] = 0;
                if (e->unit == 1)
                    out->nulls[r] = 1;
            } else {
                if (c->err && c->errlen)
                    snprintf(c->err, c->errlen,
                             "cannot parse '%.*s' as a date and time in parseDateTimeBestEffort: "
                             "use parseDateTimeBestEffortOrNull to get NULL instead",
                             (int)(l > 64 ? 64 : l), (const char *)p);
                rc = -EINVAL;
            }
            break;
        }
        default: break;
        }
    }
    free(b.p);
    if (rc == -ENOMEM)
        return bx_oom(c);
    return rc;
}

/* ---- dispatch ------------------------------------------------------------------ */

int bx_eval_fn(ex_ectx *c, const bx *e, ex_vec *a, int na, uint32_t n, ex_vec *out)
{
    switch (e->fn) {
    case F_INTDIV:
    case F_POW:
    case F_LOG:
    case F_LOG2:
    case F_LOG10:
    case F_EXP:
    case F_SQRT:
    case F_FLOOR:
    case F_CEIL:
    case F_TRUNC: return eval_math2(c, e, a, na, n, out);
    case F_REPLACEALL:
    case F_REPLACEONE:
    case F_REPLACEREGEXPALL:
    case F_REPLACEREGEXPONE:
    case F_MATCH:
    case F_EXTRACT:
    case F_TRIMBOTH:
    case F_TRIMLEFT:
    case F_TRIMRIGHT:
    case F_REVERSE:
    case F_EMPTY:
    case F_NOTEMPTY:
    case F_XXHASH64:
    case F_CITYHASH64: return eval_strfn(c, e, a, na, n, out);
    case F_SIPHASH64: {
        if (bx_out_new(c, out, e->t, n, a, na) < 0)
            return -ENOMEM;
        for (uint32_t r = 0; r < n; r++) {
            uint32_t l = 0;
            const uint8_t *s = is_null(out, r) ? (const uint8_t *)"" : ex_str(&a[0], r, &l);
            out->i[r] = (int64_t)bx_siphash24(0, 0, s, l);
        }
        return 0;
    }
    case F_FMT_SIZE:
    case F_FMT_QUANTITY:
    case F_FMT_TIMEDELTA: return eval_readable(c, e, a, na, n, out);
    case F_TOSTARTOF:
    case F_DATEPART:
    case F_DATEADD:
    case F_FORMATDATETIME:
    case F_PARSEDATETIME: return eval_datefn(c, e, a, na, n, out);
    case F_ASSUMENOTNULL: {
        /* the values, without the NULL map (a NULL row reads as its type's default) */
        ex_type t = e->t;
        if (ex_vec_alloc(c->mem, out, t, n) < 0)
            return bx_oom(c);
        for (uint32_t r = 0; r < n; r++) {
            bool nul = ex_null(&a[0], r);
            if (t.kind == EX_STRING) {
                uint32_t l = 0;
                const uint8_t *s = nul ? (const uint8_t *)"" : ex_str(&a[0], r, &l);
                if (ex_vec_str_put(c->mem, out, r, s, l) < 0)
                    return bx_oom(c);
            } else if (t.kind == EX_FLOAT) {
                out->d[r] = nul ? 0 : ex_f(&a[0], r);
            } else {
                out->i[r] = nul ? 0 : ival(&a[0], r);
            }
        }
        return 0;
    }
    case F_ARRAY:
    case F_HAS:
    case F_ELEMENT:
    case F_ARR_LENGTH:
    case F_ARR_EMPTY:
    case F_ARR_NOTEMPTY:
    case F_SPLITBYCHAR:
    case F_SPLITBYSTRING:
    case F_ARR_EQ:
    case F_ARR_CAST: return bx__eval_array(c, e, a, na, n, out);
    default:
        if (c->err && c->errlen)
            snprintf(c->err, c->errlen, "internal: function %d has no evaluation", e->fn);
        return -EINVAL;
    }
}
