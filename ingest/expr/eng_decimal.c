/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_decimal.c: Decimal(P, S) arithmetic, comparisons and conversions as
 * ClickHouse defines them (its "Decimal" page): add and subtract give scale
 * max(S1, S2), multiply S1 + S2, divide S1; an integer operand counts as
 * scale 0; excess fraction digits are discarded, not rounded; overflow and
 * division by zero are errors (decimal_check_overflow), never a wrapped
 * value. round() on a Decimal rounds half away from zero. Values are int64
 * scaled by 10^S; results are computed in 128 bits and must fit their type.
 */
#include "expr_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>

typedef __int128 i128;

static int dec_err(ex_ectx *c, int rc, const char *what, ex_type t)
{
    char tn[64];
    ex_type_name(&t, tn, sizeof(tn));
    if (c->err && c->errlen)
        snprintf(c->err, c->errlen, "%s", what);
    if (rc == -ERANGE && c->err && c->errlen)
        snprintf(c->err, c->errlen, "%s does not fit %s (DECIMAL_OVERFLOW)%s", what, tn,
                 t.prec > 18 ? ": this engine holds Decimal values in 64 bits (18 digits)" : "");
    return rc;
}

/* Row r of an operand: its raw value and scale (integers have scale 0). */
static i128 raw(const ex_vec *v, uint32_t r, int *scale)
{
    uint32_t k = ex_row(v, r);
    *scale = v->t.kind == EX_DECIMAL ? v->t.scale : 0;
    if (!v->i)
        return 0;
    if (v->t.kind == EX_UINT)
        return (i128)(uint64_t)v->i[k];
    return v->i[k];
}

static i128 up(i128 x, int k)
{
    while (k-- > 0)
        x *= 10;
    return x;
}

/* Whether x fits the storage of a Decimal of precision prec (32 bits up
 * to 9 digits, else the engine's 64). */
static bool fits(i128 x, int prec)
{
    if (prec <= 9)
        return x >= INT32_MIN && x <= INT32_MAX;
    return x >= INT64_MIN && x <= INT64_MAX;
}

int bx__dec_arith(ex_ectx *c, const bx *e, const ex_vec *a, uint32_t n, ex_vec *out)
{
    int s = e->t.scale;
    for (uint32_t r = 0; r < n; r++) {
        if (out->nulls && out->nulls[r]) {
            out->i[r] = 0;
            continue;
        }
        int sx, sy = 0;
        i128 x = raw(&a[0], r, &sx), y = 0, v = 0;
        if (e->fn != F_NEG && e->fn != F_ABS && e->fn != F_ROUND)
            y = raw(&a[1], r, &sy);
        switch (e->fn) {
        case F_ADD: v = up(x, s - sx) + up(y, s - sy); break;
        case F_SUB: v = up(x, s - sx) - up(y, s - sy); break;
        case F_MUL: v = up(x * y, s - sx - sy); break;
        case F_DIV:
            if (y == 0)
                return dec_err(c, -EDOM,
                               "division by zero: guard the divisor, e.g. "
                               "if(b = 0, NULL, a / b)",
                               e->t);
            /* x / 10^sx / (y / 10^sy) at scale s = sx: x * 10^sy / y */
            v = up(x, sy + s - sx) / y;
            break;
        case F_MOD:
            if (y == 0)
                return dec_err(c, -EDOM,
                               "division by zero in modulo (%): guard the divisor, "
                               "e.g. if(b = 0, NULL, a % b)",
                               e->t);
            v = up(x, s - sx) % up(y, s - sy);
            break;
        case F_NEG: v = -up(x, s - sx); break;
        case F_ABS:
            v = up(x, s - sx);
            v = v < 0 ? -v : v;
            break;
        case F_ROUND: {
            /* round(x, places): the scale stays, digits below 10^-places go */
            int64_t places = a[1].i && e->na > 1 ? a[1].i[0] : 0;
            v = x;
            if (places < sx) {
                int drop = sx - (int)(places < -18 ? -18 : places);
                if (drop > 36) {
                    v = 0;
                    break;
                }
                i128 p = up(1, drop), q = v / p, rem = v % p;
                if (rem * 2 >= p)
                    q++;
                else if (rem * 2 <= -p)
                    q--;
                v = q * p;
            }
            break;
        }
        default: break;
        }
        if (!fits(v, e->t.prec))
            return dec_err(c, -ERANGE, "the result of a Decimal operation", e->t);
        out->i[r] = (int64_t)v;
    }
    return 0;
}

int bx__dec_cmp(const ex_vec *x, const ex_vec *y, uint32_t r)
{
    int sx, sy;
    i128 a = raw(x, r, &sx), b = raw(y, r, &sy);
    int s = sx > sy ? sx : sy;
    a = up(a, s - sx);
    b = up(b, s - sy);
    return a < b ? -1 : a > b;
}

int bx__dec_from(ex_ectx *c, ex_type t, const ex_vec *x, uint32_t r, int64_t *out)
{
    uint32_t k = ex_row(x, r);
    i128 v;
    if (x->t.kind == EX_FLOAT) {
        double d = x->d[k] * (double)ex_pow10(t.scale);
        if (!isfinite(d) || fabs(d) >= 9.2e18)
            return dec_err(c, -ERANGE, "a Float64 value converted to Decimal", t);
        /* the digits discarded, as ClickHouse does; a product one ulp below an
         * integer (1.15 * 100 = 114.999...) is that integer, the number typed */
        double tr = trunc(d), nr = nearbyint(d);
        v = (i128)(fabs(nr - d) < 1e-9 * fmax(1, fabs(d)) ? nr : tr);
    } else if (x->t.kind == EX_DATE || x->t.kind == EX_DATETIME) {
        double d = ex_f(x, r);
        v = up((i128)trunc(d), t.scale);
    } else {
        int s;
        v = raw(x, r, &s);
        if (s > t.scale) {
            i128 p = up(1, s - t.scale);
            v /= p;
        } else {
            v = up(v, t.scale - s);
        }
    }
    if (v > INT64_MAX || v < INT64_MIN || !ex_decimal_fits((int64_t)v, t.prec))
        return dec_err(c, -ERANGE, "a value converted to Decimal", t);
    *out = (int64_t)v;
    return 0;
}

bool bx_dec_result_type(bx_fn fn, ex_type x, ex_type y, ex_type *out, char *why, size_t wlen)
{
    bool dx = x.kind == EX_DECIMAL, dy = y.kind == EX_DECIMAL;
    if (fn == F_NEG || fn == F_ABS || fn == F_ROUND) {
        *out = x;
        return true;
    }
    if (x.kind == EX_FLOAT || y.kind == EX_FLOAT) {
        /* ClickHouse refuses Decimal with Float; the engine answers in Float64 */
        *out = (ex_type){.kind = EX_FLOAT, .bits = 64};
        return true;
    }
    bool ix = x.kind == EX_INT || x.kind == EX_UINT || x.kind == EX_BOOL;
    bool iy = y.kind == EX_INT || y.kind == EX_UINT || y.kind == EX_BOOL;
    if (!(dx || ix) || !(dy || iy)) {
        snprintf(why, wlen, "arithmetic on a Decimal needs a Decimal, an integer or a Float");
        return false;
    }
    int sx = dx ? x.scale : 0, sy = dy ? y.scale : 0;
    /* the widest storage of the Decimal operands; an integer takes the other's */
    int px = dx ? ex_decimal_width_prec(x.prec) : 0, py = dy ? ex_decimal_width_prec(y.prec) : 0;
    int prec = px > py ? px : py;
    int s;
    switch (fn) {
    case F_MUL: s = sx + sy; break;
    case F_DIV: s = sx; break;
    default: s = sx > sy ? sx : sy; break;
    }
    if (s > 18) {
        snprintf(why, wlen,
                 "the result would have scale %d: this engine holds Decimal values "
                 "in 64 bits (scale 18 at most); CAST an operand to a smaller scale",
                 s);
        return false;
    }
    *out = ex_decimal_type(prec, s, false);
    return true;
}
