/* SPDX-License-Identifier: Apache-2.0
 *
 * ex_decimal.c: Decimal(P, S) values as the engine holds them: an int64
 * scaled by 10^S (18 digits at most). Parsing and printing as ClickHouse does
 * (excess fraction digits are truncated, not rounded; no trailing zeros in
 * the output, output_format_decimal_trailing_zeros = 0), changing a scale
 * with overflow checks, and the result types of ClickHouse's decimal
 * arithmetic and aggregates.
 */
#include "eng_types.h"

#include <stdio.h>
#include <string.h>

static const int64_t p10[19] = {1LL,
                                10LL,
                                100LL,
                                1000LL,
                                10000LL,
                                100000LL,
                                1000000LL,
                                10000000LL,
                                100000000LL,
                                1000000000LL,
                                10000000000LL,
                                100000000000LL,
                                1000000000000LL,
                                10000000000000LL,
                                100000000000000LL,
                                1000000000000000LL,
                                10000000000000000LL,
                                100000000000000000LL,
                                1000000000000000000LL};

int64_t ex_pow10(int k)
{
    return k <= 0 ? 1 : k > 18 ? p10[18] : p10[k];
}

ex_type ex_decimal_type(int prec, int scale, bool nullable)
{
    if (prec < 1)
        prec = 1;
    if (prec > 38)
        prec = 38;
    if (scale > 18)
        scale = 18;
    if (scale > prec)
        scale = prec;
    return (ex_type){.kind = EX_DECIMAL,
                     .prec = (uint8_t)prec,
                     .scale = (uint8_t)(scale < 0 ? 0 : scale),
                     .nullable = nullable};
}

/* ClickHouse stores Decimal(P, S) in 32, 64, 128 or 256 bits, and its
 * arithmetic names the result by the widest storage of the operands:
 * Decimal(9, S), Decimal(18, S) or Decimal(38, S). */
int ex_decimal_width_prec(int prec)
{
    return prec <= 9 ? 9 : prec <= 18 ? 18 : 38;
}

size_t ex_fmt_decimal(int64_t v, int scale, char *buf, size_t cap)
{
    char tmp[48];
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    uint64_t p = (uint64_t)ex_pow10(scale);
    uint64_t ip = u / p, fp = u % p;
    int n = snprintf(tmp, sizeof(tmp), "%s%llu", v < 0 ? "-" : "", (unsigned long long)ip);
    if (fp && scale > 0) {
        char f[24];
        int fl = scale > 18 ? 18 : scale;
        for (int k = fl - 1; k >= 0; k--, fp /= 10)
            f[k] = (char)('0' + fp % 10);
        while (fl > 0 && f[fl - 1] == '0')
            fl--;
        n += snprintf(tmp + n, sizeof(tmp) - (size_t)n, ".%.*s", fl, f);
    }
    return (size_t)snprintf(buf, cap, "%s", tmp) < cap ? (size_t)n : (cap ? cap - 1 : 0);
}

bool ex_parse_decimal(const uint8_t *s, size_t n, int scale, int64_t *out)
{
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    while (n > i && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    bool neg = false;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    uint64_t v = 0;
    int digits = 0, frac = -1, seen = 0;
    for (; i < n; i++) {
        if (s[i] == '.' && frac < 0) {
            frac = 0;
            continue;
        }
        if (s[i] < '0' || s[i] > '9')
            return false;
        seen++;
        if (frac >= 0 && frac >= scale)
            continue; /* truncated, as ClickHouse does */
        if (digits || s[i] != '0')
            if (++digits > 18)
                return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
        if (frac >= 0)
            frac++;
    }
    if (!seen)
        return false;
    for (int f = frac < 0 ? 0 : frac; f < scale; f++) {
        if (v > (uint64_t)INT64_MAX / 10)
            return false;
        v *= 10;
    }
    if (v > (uint64_t)INT64_MAX)
        return false;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

bool ex_decimal_rescale(int64_t v, int from, int to, int64_t *out)
{
    if (to == from) {
        *out = v;
        return true;
    }
    if (to < from) {
        *out = v / ex_pow10(from - to); /* toward zero, as ClickHouse truncates */
        return true;
    }
    return !__builtin_mul_overflow(v, ex_pow10(to - from), out);
}

bool ex_decimal_fits(int64_t v, int prec)
{
    if (prec >= 18)
        return true;
    int64_t lim = ex_pow10(prec);
    return v < lim && v > -lim;
}
