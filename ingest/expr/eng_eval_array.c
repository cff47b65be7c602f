/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_eval_array.c: the Array functions over vectors (F_ARRAY .. F_ARR_CAST,
 * expr_int.h): building arrays from their elements, has, arr[i], length,
 * empty / notEmpty, splitByChar / splitByString, equality, and re-encoding
 * an array as a wider Array type. An Array row is
 * its encoded elements in the string storage (ex_arr_*, eng_types.h); the
 * binder has cast the arguments so that elements are already of the array's
 * element type. Reentrant.
 */
#include "expr_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int put_row(ex_ectx *c, ex_vec *out, uint32_t r, const ex_bytes *b)
{
    int rc = ex_vec_str_put(c->mem, out, r, b->p ? b->p : (const uint8_t *)"", b->n);
    if (rc == -E2BIG) {
        if (c->err && c->errlen)
            snprintf(c->err, c->errlen, "an Array result is larger than 4 GiB in one block");
        return rc;
    }
    return rc < 0 ? bx_oom(c) : 0;
}

static int eval_make(ex_ectx *c, const bx *e, ex_vec *a, int na, uint32_t n, ex_vec *out)
{
    if (bx_out_new(c, out, e->t, n, NULL, 0) < 0)
        return -ENOMEM;
    ex_type et = ex_arr_elem(&e->t);
    ex_bytes b = {0};
    int rc = 0;
    for (uint32_t r = 0; r < n && rc == 0; r++) {
        b.n = 0;
        size_t at;
        rc = ex_arr_begin(&b, &at);
        for (int i = 0; i < na && rc == 0; i++) {
            ex_arr_val v;
            ex_arr_val_of(&a[i], r, &v);
            rc = ex_arr_put(&b, &et, &v);
        }
        if (rc == 0) {
            ex_arr_end(&b, at, (uint32_t)na);
            rc = put_row(c, out, r, &b);
        } else {
            rc = bx_oom(c);
        }
    }
    ex_bytes_free(&b);
    return rc;
}

/* Whether element v (of type et) equals row r of x (not NULL). The binder
 * made them comparable: both numbers, both strings, or one temporal kind. */
static bool elem_eq(const ex_type *et, const ex_arr_val *v, const ex_vec *x, uint32_t r)
{
    if (ex_is_bytes(et->kind)) {
        uint32_t l;
        const uint8_t *s = ex_str(x, r, &l);
        return l == v->len && (l == 0 || memcmp(s, v->s, l) == 0);
    }
    if (et->kind == EX_FLOAT || x->t.kind == EX_FLOAT) {
        double d = et->kind == EX_FLOAT  ? v->d
                   : et->kind == EX_UINT ? (double)(uint64_t)v->i
                                         : (double)v->i;
        return d == ex_f(x, r);
    }
    int64_t xi = x->i ? x->i[ex_row(x, r)] : 0;
    if (et->kind == EX_DECIMAL || x->t.kind == EX_DECIMAL) {
        int es = et->kind == EX_DECIMAL ? et->scale : 0, xs = x->t.kind == EX_DECIMAL ? x->t.scale : 0;
        int64_t p, q;
        int s = es > xs ? es : xs;
        if (!ex_decimal_rescale(v->i, es, s, &p) || !ex_decimal_rescale(xi, xs, s, &q))
            return false;
        return p == q;
    }
    if ((et->kind == EX_UINT) != (x->t.kind == EX_UINT) && (v->i < 0 || xi < 0))
        return false; /* a UInt64 past INT64_MAX never equals a signed value */
    return v->i == xi;
}

static int eval_has(ex_ectx *c, const bx *e, ex_vec *a, uint32_t n, ex_vec *out)
{
    if (bx_out_new(c, out, e->t, n, NULL, 0) < 0)
        return -ENOMEM;
    for (uint32_t r = 0; r < n; r++) {
        uint32_t len;
        const uint8_t *p = ex_str(&a[0], r, &len);
        ex_arr_it it;
        ex_arr_open(&it, &a[0].t, p, len);
        bool xnull = ex_null(&a[1], r), found = false;
        ex_arr_val v;
        while (!found && ex_arr_next(&it, &v))
            found = v.null ? xnull : !xnull && elem_eq(&it.et, &v, &a[1], r);
        out->i[r] = found;
    }
    return 0;
}

static int eval_element(ex_ectx *c, const bx *e, ex_vec *a, uint32_t n, ex_vec *out)
{
    ex_type t = e->t;
    if (ex_vec_alloc(c->mem, out, t, n) < 0)
        return bx_oom(c);
    static const uint8_t empty[4] = {0};
    for (uint32_t r = 0; r < n; r++) {
        uint32_t len;
        const uint8_t *p = ex_str(&a[0], r, &len);
        ex_arr_it it;
        ex_arr_open(&it, &a[0].t, p, len);
        int64_t i = ex_null(&a[1], r) ? 0 : a[1].i[ex_row(&a[1], r)];
        if (a[1].t.kind == EX_UINT && i < 0)
            i = 0; /* past INT64_MAX: out of range */
        int64_t k = i > 0 ? i - 1 : (int64_t)it.count + i; /* 0: out of range */
        ex_arr_val v = {.null = true};
        bool hit = i != 0 && k >= 0 && k < (int64_t)it.count;
        for (int64_t j = 0; hit && j <= k; j++)
            if (!ex_arr_next(&it, &v))
                hit = false;
        if (!hit) {
            /* out of range: the element type's default (NULL when Nullable) */
            memset(&v, 0, sizeof(v));
            v.null = t.nullable;
            if (t.kind == EX_ARRAY) {
                v.s = empty;
                v.len = 4;
            }
        }
        if (v.null && out->nulls)
            out->nulls[r] = 1;
        if (ex_is_bytes(t.kind)) {
            int rc = ex_vec_str_put(c->mem, out, r, v.null ? (const uint8_t *)"" : v.s,
                                    v.null ? 0 : v.len);
            if (rc < 0)
                return bx_oom(c);
        } else if (t.kind == EX_FLOAT) {
            out->d[r] = v.null ? 0 : v.d;
        } else if (t.kind != EX_NOTHING) {
            out->i[r] = v.null ? 0 : v.i;
        }
    }
    return 0;
}

static int eval_count(ex_ectx *c, const bx *e, ex_vec *a, uint32_t n, ex_vec *out)
{
    if (bx_out_new(c, out, e->t, n, NULL, 0) < 0)
        return -ENOMEM;
    for (uint32_t r = 0; r < n; r++) {
        uint32_t len;
        const uint8_t *p = ex_str(&a[0], r, &len);
        uint32_t k = ex_arr_count(p, len);
        out->i[r] = e->fn == F_ARR_LENGTH ? (int64_t)k : e->fn == F_ARR_EMPTY ? k == 0 : k != 0;
    }
    return 0;
}

static int eval_split(ex_ectx *c, const bx *e, ex_vec *a, uint32_t n, ex_vec *out)
{
    if (bx_out_new(c, out, e->t, n, NULL, 0) < 0)
        return -ENOMEM;
    uint32_t sl;
    const uint8_t *sep = ex_str(&a[0], 0, &sl);
    ex_type et = ex_arr_elem(&e->t);
    ex_bytes b = {0};
    int rc = 0;
    for (uint32_t r = 0; r < n && rc == 0; r++) {
        uint32_t l;
        const uint8_t *s = ex_str(&a[1], r, &l);
        b.n = 0;
        size_t at;
        uint32_t cnt = 0;
        rc = ex_arr_begin(&b, &at);
        ex_arr_val v = {0};
        if (sl == 0) {
            /* splitByString('', s): each byte (none for '') */
            for (uint32_t i = 0; i < l && rc == 0; i++, cnt++) {
                v.s = s + i;
                v.len = 1;
                rc = ex_arr_put(&b, &et, &v);
            }
        } else {
            uint32_t start = 0;
            for (uint32_t i = 0; rc == 0;) {
                bool at_sep = i + sl <= l && memcmp(s + i, sep, sl) == 0;
                if (at_sep || i >= l) {
                    v.s = s + start;
                    v.len = (i < l ? i : l) - start;
                    rc = ex_arr_put(&b, &et, &v);
                    cnt++;
                    if (!at_sep)
                        break;
                    i += sl;
                    start = i;
                    continue;
                }
                i++;
            }
        }
        if (rc == 0) {
            ex_arr_end(&b, at, cnt);
            rc = put_row(c, out, r, &b);
        } else {
            rc = bx_oom(c);
        }
    }
    ex_bytes_free(&b);
    return rc;
}

static int eval_eq(ex_ectx *c, const bx *e, ex_vec *a, uint32_t n, ex_vec *out)
{
    if (bx_out_new(c, out, e->t, n, NULL, 0) < 0)
        return -ENOMEM;
    for (uint32_t r = 0; r < n; r++) {
        uint32_t la, lb;
        const uint8_t *pa = ex_str(&a[0], r, &la), *pb = ex_str(&a[1], r, &lb);
        bool eq = la == lb && (la == 0 || memcmp(pa, pb, la) == 0);
        out->i[r] = eq != e->negated;
    }
    return 0;
}

/* The elements of (p, len), of Array type from, appended to o as Array
 * type to (the binder's supertype of from: Nullable, wider numbers). */
static int recode(const ex_type *from, const ex_type *to, const uint8_t *p, uint32_t len,
                  ex_bytes *o)
{
    ex_arr_it it;
    ex_arr_open(&it, from, p, len);
    ex_type et = ex_arr_elem(to);
    size_t at;
    int rc = ex_arr_begin(o, &at);
    ex_arr_val v;
    uint32_t cnt = 0;
    ex_bytes inner = {0};
    while (rc == 0 && ex_arr_next(&it, &v)) {
        cnt++;
        if (!v.null && et.kind == EX_ARRAY) {
            inner.n = 0;
            if ((rc = recode(&it.et, &et, v.s, v.len, &inner)) < 0)
                break;
            v.s = inner.p;
            v.len = (uint32_t)inner.n;
        } else if (!v.null && et.kind == EX_FLOAT && it.et.kind != EX_FLOAT) {
            v.d = it.et.kind == EX_UINT ? (double)(uint64_t)v.i : (double)v.i;
            if (it.et.kind == EX_DECIMAL)
                v.d /= (double)ex_pow10(it.et.scale);
        } else if (!v.null && et.kind == EX_DECIMAL && it.et.kind != EX_DECIMAL) {
            int64_t x = v.i;
            if (!ex_decimal_rescale(x, 0, et.scale, &v.i))
                rc = -ERANGE;
        } else if (!v.null && et.kind == EX_DECIMAL && it.et.scale != et.scale) {
            if (!ex_decimal_rescale(v.i, it.et.scale, et.scale, &v.i))
                rc = -ERANGE;
        }
        if (rc == 0)
            rc = ex_arr_put(o, &et, &v);
    }
    ex_bytes_free(&inner);
    if (rc == 0)
        ex_arr_end(o, at, cnt);
    return rc;
}

static int eval_recode(ex_ectx *c, const bx *e, ex_vec *a, uint32_t n, ex_vec *out)
{
    if (bx_out_new(c, out, e->t, n, NULL, 0) < 0)
        return -ENOMEM;
    ex_bytes b = {0};
    int rc = 0;
    for (uint32_t r = 0; r < n && rc == 0; r++) {
        uint32_t l;
        const uint8_t *p = ex_str(&a[0], r, &l);
        b.n = 0;
        rc = recode(&a[0].t, &e->t, p, l, &b);
        if (rc == -ERANGE) {
            if (c->err && c->errlen)
                snprintf(c->err, c->errlen, "an element of an array does not fit its Decimal type");
        } else if (rc < 0) {
            rc = bx_oom(c);
        } else {
            rc = put_row(c, out, r, &b);
        }
    }
    ex_bytes_free(&b);
    return rc;
}

int bx__eval_array(ex_ectx *c, const bx *e, ex_vec *a, int na, uint32_t n, ex_vec *out)
{
    switch (e->fn) {
    case F_ARRAY: return eval_make(c, e, a, na, n, out);
    case F_HAS: return eval_has(c, e, a, n, out);
    case F_ELEMENT: return eval_element(c, e, a, n, out);
    case F_ARR_LENGTH:
    case F_ARR_EMPTY:
    case F_ARR_NOTEMPTY: return eval_count(c, e, a, n, out);
    case F_SPLITBYCHAR:
    case F_SPLITBYSTRING: return eval_split(c, e, a, n, out);
    case F_ARR_EQ: return eval_eq(c, e, a, n, out);
    case F_ARR_CAST: return eval_recode(c, e, a, n, out);
    default: break;
    }
    if (c->err && c->errlen)
        snprintf(c->err, c->errlen, "internal: array function %d has no evaluation", e->fn);
    return -EINVAL;
}
