/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_eval.c: evaluation of bound expressions (bx) over vectors, a column at a
 * time. Inputs are full-length vectors (views of a block's columns); a
 * selection vector picks the rows a filter kept, so later expressions touch
 * only those. Dictionary-encoded strings stay encoded through column
 * references, and predicates on them (=, IN, LIKE, startsWith, ...) are
 * computed once per dictionary entry and then looked up per row.
 *
 * Semantics are ClickHouse's: comparisons and predicates return UInt8 (0/1),
 * NULL in, NULL out, except AND/OR (three-valued: NULL AND 0 is 0), isNull,
 * if/multiIf (a NULL condition is false) and coalesce; integer arithmetic
 * wraps; '/' is always Float64; '%' and integer division by zero are errors;
 * round() rounds half to even on floats (banker's), as ClickHouse does.
 */
#include "eng_expr.h"
#include "expr_int.h"
#include "errf.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int eval_err(ex_ectx *c, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int eval_err(ex_ectx *c, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    errf_vset(c->err, c->errlen, fmt, ap);
    va_end(ap);
    return rc;
}

static int oom(ex_ectx *c)
{
    if (c->mem && atomic_load(&c->mem->failed_at))
        em_error(c->mem, c->err, c->errlen);
    else
        eval_err(c, -ENOMEM, "out of memory while evaluating an expression");
    return -ENOMEM;
}

void bx_free(eng_mem *m, bx *e)
{
    if (!e)
        return;
    for (int i = 0; i < e->na; i++)
        bx_free(m, e->a[i]);
    free(e->a);
    ex_vec_clear(m, &e->cval);
    free(e->in_i);
    free(e->in_set);
    free(e->in_d);
    if (e->in_s)
        for (int i = 0; i < e->n_in; i++)
            free(e->in_s[i]);
    free(e->in_s);
    free(e->in_len);
    free(e);
}

static bool in_sorted_s(const bx *e, const uint8_t *s, uint32_t l);

static inline int64_t iv(const ex_vec *v, uint32_t r)
{
    r = ex_row(v, r);
    if (v->t.kind == EX_FLOAT)
        return v->d ? (int64_t)v->d[r] : 0;
    if (v->t.kind == EX_DECIMAL)
        return v->i ? v->i[r] / ex_pow10(v->t.scale) : 0; /* the integer part */
    return v->i ? v->i[r] : 0; /* a NULL-typed vector has no values (every row is NULL) */
}

static inline bool truthy(const ex_vec *v, uint32_t r)
{
    if (ex_null(v, r))
        return false;
    if (v->t.kind == EX_FLOAT)
        return v->d && v->d[ex_row(v, r)] != 0;
    return v->i && v->i[ex_row(v, r)] != 0;
}

/* out->nulls |= a's nulls (allocates when needed). */
static int merge_nulls(ex_ectx *c, ex_vec *out, const ex_vec *a, uint32_t n)
{
    if (a->t.kind != EX_NOTHING && !a->nulls)
        return 0;
    if (!out->nulls) {
        if (!(out->nulls = em_calloc(c->mem, n ? n : 1)))
            return oom(c);
        out->own |= EXO_NULLS;
    }
    if (a->t.kind == EX_NOTHING) {
        memset(out->nulls, 1, n);
        return 0;
    }
    if (a->is_const) {
        if (a->nulls[0])
            memset(out->nulls, 1, n);
        return 0;
    }
    for (uint32_t r = 0; r < n; r++)
        out->nulls[r] |= a->nulls[r];
    return 0;
}

/* A fresh output of type t for n rows with nulls merged from the args. */
static int out_new(ex_ectx *c, ex_vec *out, ex_type t, uint32_t n, ex_vec *a, int na)
{
    ex_type tt = t;
    tt.nullable = false;
    if (ex_vec_alloc(c->mem, out, tt, n) < 0)
        return oom(c);
    out->t = t;
    for (int j = 0; j < na; j++)
        if (merge_nulls(c, out, &a[j], n) < 0)
            return -ENOMEM;
    return 0;
}

int bx_out_new(ex_ectx *c, ex_vec *out, ex_type t, uint32_t n, ex_vec *a, int na)
{
    return out_new(c, out, t, n, a, na);
}

int bx_oom(ex_ectx *c)
{
    return oom(c);
}

/* ---- column references ---------------------------------------------------- */

static int gather(ex_ectx *c, const ex_vec *src, const uint32_t *sel, uint32_t n, ex_vec *out)
{
    memset(out, 0, sizeof(*out));
    out->t = src->t;
    out->n = n;
    if (src->is_const || !sel) {
        *out = *src;
        out->own = 0;
        if (!src->is_const)
            out->n = n;
        return 0;
    }
    size_t cnt = n ? n : 1;
    if (src->nulls) {
        if (!(out->nulls = em_alloc(c->mem, cnt)))
            return oom(c);
        out->own |= EXO_NULLS;
        for (uint32_t r = 0; r < n; r++)
            out->nulls[r] = src->nulls[sel[r]];
    }
    if (src->t.kind == EX_FLOAT) {
        if (!(out->d = em_alloc(c->mem, cnt * 8)))
            return oom(c);
        out->own |= EXO_D;
        for (uint32_t r = 0; r < n; r++)
            out->d[r] = src->d[sel[r]];
    } else if (ex_is_bytes(src->t.kind)) {
        if (src->dict) {
            out->dict = src->dict;
            if (!(out->idx = em_alloc(c->mem, cnt * 4)))
                return oom(c);
            out->own |= EXO_IDX;
            for (uint32_t r = 0; r < n; r++)
                out->idx[r] = src->idx[sel[r]];
        } else {
            if (!(out->off = em_alloc(c->mem, (cnt + 1) * 4)))
                return oom(c);
            out->own |= EXO_OFF;
            size_t tot = 0;
            for (uint32_t r = 0; r < n; r++)
                tot += src->off[sel[r] + 1] - src->off[sel[r]];
            if (!(out->data = em_alloc(c->mem, tot ? tot : 1)))
                return oom(c);
            out->own |= EXO_DATA;
            out->data_cap = tot ? tot : 1;
            uint32_t o = 0;
            out->off[0] = 0;
            for (uint32_t r = 0; r < n; r++) {
                uint32_t b = src->off[sel[r]], l = src->off[sel[r] + 1] - b;
                if (l)
                    memcpy(out->data + o, src->data + b, l);
                o += l;
                out->off[r + 1] = o;
            }
        }
    } else if (src->t.kind != EX_NOTHING) {
        if (!(out->i = em_alloc(c->mem, cnt * 8)))
            return oom(c);
        out->own |= EXO_I;
        for (uint32_t r = 0; r < n; r++)
            out->i[r] = src->i[sel[r]];
    }
    return 0;
}

uint32_t bx_select(const ex_vec *b, const uint32_t *insel, uint32_t n, uint32_t *sel)
{
    uint32_t k = 0;
    if (b->is_const) {
        if (!truthy(b, 0))
            return 0;
        for (uint32_t r = 0; r < n; r++)
            sel[r] = insel ? insel[r] : r;
        return n;
    }
    if (b->t.kind != EX_FLOAT && !b->nulls) {
        for (uint32_t r = 0; r < n; r++) {
            sel[k] = insel ? insel[r] : r;
            k += b->i[r] != 0;
        }
        return k;
    }
    for (uint32_t r = 0; r < n; r++)
        if (truthy(b, r))
            sel[k++] = insel ? insel[r] : r;
    return k;
}

/* ---- string predicates ------------------------------------------------------ */

static size_t utf8_len(uint8_t c)
{
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0)
        return 2;
    if ((c & 0xf0) == 0xe0)
        return 3;
    if ((c & 0xf8) == 0xf0)
        return 4;
    return 1;
}

static inline uint8_t fold(uint8_t c, bool ci)
{
    return ci && c >= 'A' && c <= 'Z' ? (uint8_t)(c + 32) : c;
}

/* LIKE: % any run, _ one UTF-8 character, \ escapes. Greedy with one
 * backtrack point (the last %), O(len(s) * len(p)) at worst. */
static bool like_match(const uint8_t *s, size_t sn, const uint8_t *p, size_t pn, bool ci)
{
    size_t si = 0, pi = 0, star_p = SIZE_MAX, star_s = 0;
    while (si < sn) {
        if (pi < pn && p[pi] == '%') {
            star_p = ++pi;
            star_s = si;
            continue;
        }
        if (pi < pn) {
            if (p[pi] == '_') {
                si += utf8_len(s[si]);
                if (si > sn)
                    si = sn;
                pi++;
                continue;
            }
            uint8_t pc = p[pi];
            size_t adv = 1;
            if (pc == '\\' && pi + 1 < pn) {
                pc = p[pi + 1];
                adv = 2;
            }
            if (fold(pc, ci) == fold(s[si], ci)) {
                si++;
                pi += adv;
                continue;
            }
        }
        if (star_p == SIZE_MAX)
            return false;
        pi = star_p;
        star_s += utf8_len(s[star_s]);
        if (star_s > sn)
            return false;
        si = star_s;
    }
    while (pi < pn && p[pi] == '%')
        pi++;
    return pi == pn;
}

static int cmp_bytes(const uint8_t *a, uint32_t al, const uint8_t *b, uint32_t bl)
{
    uint32_t m = al < bl ? al : bl;
    int c = m ? memcmp(a, b, m) : 0;
    if (c)
        return c;
    return al < bl ? -1 : al > bl;
}

static bool cmp_result(bx_fn fn, int c)
{
    switch (fn) {
    case F_EQ: return c == 0;
    case F_NE: return c != 0;
    case F_LT: return c < 0;
    case F_LE: return c <= 0;
    case F_GT: return c > 0;
    case F_GE: return c >= 0;
    default: return false;
    }
}

/* A predicate of one string argument and constants (evaluated per dictionary
 * entry when the argument is dictionary-encoded). */
static bool str_pred(const bx *e, const ex_vec *a, const uint8_t *s, uint32_t sl)
{
    uint32_t pl;
    const uint8_t *p;
    switch (e->fn) {
    case F_EQ:
    case F_NE:
    case F_LT:
    case F_LE:
    case F_GT:
    case F_GE: p = ex_str(&a[1], 0, &pl); return cmp_result(e->fn, cmp_bytes(s, sl, p, pl));
    case F_IN:
        if (e->in_sorted)
            return in_sorted_s(e, s, sl) != e->negated;
        for (int k = 0; k < e->n_in; k++)
            if (e->in_len[k] == sl && memcmp(e->in_s[k], s, sl) == 0)
                return !e->negated;
        return e->negated;
    case F_LIKE:
    case F_ILIKE:
        p = ex_str(&a[1], 0, &pl);
        return like_match(s, sl, p, pl, e->fn == F_ILIKE) != e->negated;
    case F_STARTSWITH: p = ex_str(&a[1], 0, &pl); return pl <= sl && memcmp(s, p, pl) == 0;
    case F_ENDSWITH: p = ex_str(&a[1], 0, &pl); return pl <= sl && memcmp(s + sl - pl, p, pl) == 0;
    default: return false;
    }
}

static bool all_const_after_first(const ex_vec *a, int na)
{
    for (int j = 1; j < na; j++)
        if (!a[j].is_const || ex_null(&a[j], 0))
            return false;
    return true;
}

static int eval_str_pred(ex_ectx *c, const bx *e, ex_vec *a, int na, uint32_t n, ex_vec *out)
{
    if (out_new(c, out, e->t, n, a, e->fn == F_IN ? 1 : na) < 0)
        return -ENOMEM;
    const ex_vec *s = &a[0];
    if (s->dict && !s->is_const && all_const_after_first(a, na) &&
        s->dict->n <= 2 * (size_t)n + 64) {
        const cb_column *d = s->dict;
        uint8_t *m = em_alloc(c->mem, d->n ? d->n : 1);
        if (!m)
            return oom(c);
        for (uint32_t k = 0; k < d->n; k++)
            m[k] = str_pred(e, a, d->data + d->offsets[k], d->offsets[k + 1] - d->offsets[k]);
        for (uint32_t r = 0; r < n; r++)
            out->i[r] = m[s->idx[r]];
        em_free(c->mem, m);
        return 0;
    }
    if (e->fn == F_IN && !s->dict && !s->is_const && !e->in_sorted) {
        /* plain strings against the list: lengths first, bytes only when one
         * matches (a row rarely has the length of any item) */
        const uint32_t *off = s->off;
        const uint8_t *data = s->data;
        const uint32_t *in_len = e->in_len;
        char *const *in_s = e->in_s;
        int n_in = e->n_in;
        int64_t neg = e->negated, *o = out->i;
        /* bit l: some item is l bytes long (l < 63); bit 63: a longer one.
         * The empty string (often many rows) is decided without a branch. */
        uint64_t lens = 0;
        for (int k = 0; k < n_in; k++)
            lens |= 1ull << (in_len[k] < 63 ? in_len[k] : 63);
        int64_t empty = (int64_t)(lens & 1) ^ neg;
        lens &= ~1ull;
        for (uint32_t r = 0; r < n; r++) {
            uint32_t b = off[r], l = off[r + 1] - b;
            int64_t v = l == 0 ? empty : neg;
            if ((lens >> (l < 63 ? l : 63)) & 1)
                for (int k = 0; k < n_in; k++)
                    if (in_len[k] == l && memcmp(in_s[k], data + b, l) == 0) {
                        v = !neg;
                        break;
                    }
            o[r] = v;
        }
        return 0;
    }
    if (all_const_after_first(a, na) || e->fn == F_IN) {
        for (uint32_t r = 0; r < n; r++) {
            uint32_t l;
            const uint8_t *p = ex_str(s, r, &l);
            out->i[r] = str_pred(e, a, p, l);
        }
        return 0;
    }
    for (uint32_t r = 0; r < n; r++) {
        uint32_t l, pl;
        const uint8_t *x = ex_str(s, r, &l);
        const uint8_t *p = ex_str(&a[1], r, &pl);
        switch (e->fn) {
        case F_LIKE:
        case F_ILIKE: out->i[r] = like_match(x, l, p, pl, e->fn == F_ILIKE) != e->negated; break;
        case F_STARTSWITH: out->i[r] = pl <= l && memcmp(x, p, pl) == 0; break;
        case F_ENDSWITH: out->i[r] = pl <= l && memcmp(x + l - pl, p, pl) == 0; break;
        default: out->i[r] = cmp_result(e->fn, cmp_bytes(x, l, p, pl)); break;
        }
    }
    return 0;
}

/* ---- numbers ------------------------------------------------------------- */

static int eval_cmp(ex_ectx *c, const bx *e, ex_vec *a, uint32_t n, ex_vec *out)
{
    if (a[0].t.kind == EX_STRING || a[1].t.kind == EX_STRING) {
        if (a[0].t.kind == EX_STRING && a[1].t.kind == EX_STRING) {
            if (a[0].is_const && !a[1].is_const) {
                /* constant on the left: swap the operands and the operator */
                static const bx_fn flip[] = {[F_EQ] = F_EQ, [F_NE] = F_NE, [F_LT] = F_GT,
                                             [F_LE] = F_GE, [F_GT] = F_LT, [F_GE] = F_LE};
                bx e2 = *e;
                e2.fn = flip[e->fn];
                ex_vec sw[2] = {a[1], a[0]};
                return eval_str_pred(c, &e2, sw, 2, n, out);
            }
            return eval_str_pred(c, e, a, 2, n, out);
        }
        return eval_err(c, -EINVAL, "cannot compare String with a number");
    }
    if (out_new(c, out, e->t, n, a, 2) < 0)
        return -ENOMEM;
    bool fl = a[0].t.kind == EX_FLOAT || a[1].t.kind == EX_FLOAT;
    bool un = a[0].t.kind == EX_UINT && a[1].t.kind == EX_UINT;
    int64_t *o = out->i;
    bool same_dec =
        a[0].t.kind == EX_DECIMAL && a[1].t.kind == EX_DECIMAL && a[0].t.scale == a[1].t.scale;
    if (!fl && (a[0].t.kind == EX_DECIMAL || a[1].t.kind == EX_DECIMAL) &&
        !(same_dec && !a[0].is_const && a[1].is_const)) {
        for (uint32_t r = 0; r < n; r++)
            o[r] = cmp_result(e->fn, bx__dec_cmp(&a[0], &a[1], r));
        return 0;
    }
    if (fl) {
        for (uint32_t r = 0; r < n; r++) {
            double x = ex_f(&a[0], r), y = ex_f(&a[1], r);
            int cr = x < y ? -1 : x > y ? 1 : x == y ? 0 : 2;
            o[r] = cr == 2 ? e->fn == F_NE : cmp_result(e->fn, cr);
        }
        return 0;
    }
    if (!a[0].is_const && a[1].is_const && !un) {
        const int64_t *x = a[0].i;
        int64_t y = a[1].i[0];
        switch (e->fn) {
        case F_EQ:
            for (uint32_t r = 0; r < n; r++)
                o[r] = x[r] == y;
            break;
        case F_NE:
            for (uint32_t r = 0; r < n; r++)
                o[r] = x[r] != y;
            break;
        case F_LT:
            for (uint32_t r = 0; r < n; r++)
                o[r] = x[r] < y;
            break;
        case F_LE:
            for (uint32_t r = 0; r < n; r++)
                o[r] = x[r] <= y;
            break;
        case F_GT:
            for (uint32_t r = 0; r < n; r++)
                o[r] = x[r] > y;
            break;
        case F_GE:
            for (uint32_t r = 0; r < n; r++)
                o[r] = x[r] >= y;
            break;
        default: break;
        }
        return 0;
    }
    for (uint32_t r = 0; r < n; r++) {
        int cr;
        if (un) {
            uint64_t x = (uint64_t)iv(&a[0], r), y = (uint64_t)iv(&a[1], r);
            cr = x < y ? -1 : x > y;
        } else {
            int64_t x = iv(&a[0], r), y = iv(&a[1], r);
            /* a UInt64 above INT64_MAX against a signed value */
            if (a[0].t.kind == EX_UINT && x < 0)
                cr = 1;
            else if (a[1].t.kind == EX_UINT && y < 0)
                cr = -1;
            else
                cr = x < y ? -1 : x > y;
        }
        o[r] = cmp_result(e->fn, cr);
    }
    return 0;
}

static int eval_arith(ex_ectx *c, const bx *e, ex_vec *a, uint32_t n, ex_vec *out)
{
    if (out_new(c, out, e->t, n, a, e->fn == F_NEG ? 1 : 2) < 0)
        return -ENOMEM;
    if (e->t.kind == EX_NOTHING)
        return 0; /* NULL op anything: every row is NULL, there are no values to write */
    if (e->t.kind == EX_DECIMAL)
        return bx__dec_arith(c, e, a, n, out);
    if (e->fn == F_NEG) {
        for (uint32_t r = 0; r < n; r++) {
            if (e->t.kind == EX_FLOAT)
                out->d[r] = -ex_f(&a[0], r);
            else
                out->i[r] = (int64_t)(0 - (uint64_t)iv(&a[0], r));
        }
        return 0;
    }
    if (e->t.kind == EX_FLOAT) {
        for (uint32_t r = 0; r < n; r++) {
            double x = ex_f(&a[0], r), y = ex_f(&a[1], r);
            switch (e->fn) {
            case F_ADD: out->d[r] = x + y; break;
            case F_SUB: out->d[r] = x - y; break;
            case F_MUL: out->d[r] = x * y; break;
            case F_DIV: out->d[r] = x / y; break;
            case F_MOD: out->d[r] = fmod(x, y); break;
            default: break;
            }
        }
        return 0;
    }
    /* date +- n days, datetime +- n seconds (the integer side is as is) */
    for (uint32_t r = 0; r < n; r++) {
        uint64_t x = (uint64_t)iv(&a[0], r), y = (uint64_t)iv(&a[1], r);
        switch (e->fn) {
        case F_ADD: out->i[r] = (int64_t)(x + y); break;
        case F_SUB: out->i[r] = (int64_t)(x - y); break;
        case F_MUL: out->i[r] = (int64_t)(x * y); break;
        case F_MOD:
            if (out->nulls && out->nulls[r]) {
                out->i[r] = 0;
                break;
            }
            if (y == 0)
                return eval_err(c, -EDOM,
                                "division by zero in modulo (%%): guard the divisor, "
                                "e.g. if(b = 0, NULL, a %% b)");
            if (e->t.kind == EX_UINT)
                out->i[r] = (int64_t)(x % y);
            else if ((int64_t)y == -1)
                out->i[r] = 0;
            else
                out->i[r] = (int64_t)x % (int64_t)y;
            break;
        default: break;
        }
    }
    return 0;
}

static int eval_logic(ex_ectx *c, const bx *e, ex_vec *a, int na, uint32_t n, ex_vec *out)
{
    ex_type t = e->t;
    t.nullable = false;
    if (ex_vec_alloc(c->mem, out, t, n) < 0)
        return oom(c);
    out->t = e->t;
    bool any_null = false;
    for (int j = 0; j < na; j++)
        any_null |= a[j].t.kind == EX_NOTHING || a[j].nulls != NULL;
    if (any_null) {
        if (!(out->nulls = em_calloc(c->mem, n ? n : 1)))
            return oom(c);
        out->own |= EXO_NULLS;
    }
    if (e->fn == F_NOT) {
        for (uint32_t r = 0; r < n; r++) {
            if (ex_null(&a[0], r)) {
                out->nulls[r] = 1;
                out->i[r] = 0;
            } else {
                out->i[r] = !truthy(&a[0], r);
            }
        }
        return 0;
    }
    bool is_and = e->fn == F_AND;
    for (uint32_t r = 0; r < n; r++) {
        bool nul = false, v = is_and;
        for (int j = 0; j < na; j++) {
            if (ex_null(&a[j], r)) {
                nul = true;
                continue;
            }
            bool b = truthy(&a[j], r);
            if (is_and && !b) {
                v = false;
                nul = false;
                break;
            }
            if (!is_and && b) {
                v = true;
                nul = false;
                break;
            }
        }
        out->i[r] = nul ? 0 : v;
        if (nul)
            out->nulls[r] = 1;
    }
    return 0;
}

/* Sorts n 64-bit keys as unsigned by a least-significant-byte radix sort,
 * skipping the bytes every key shares (an IN list of a million values sorts
 * in a few passes). false when the scratch buffer cannot be had. */
static bool sort_u64(uint64_t *a, size_t n)
{
    uint64_t *tmp = malloc(sizeof(uint64_t) * (n ? n : 1));
    size_t(*cnt)[256] = calloc(8, sizeof(*cnt));
    if (!tmp || !cnt) {
        free(tmp);
        free(cnt);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < 8; b++)
            cnt[b][(a[i] >> (8 * b)) & 0xff]++;
    uint64_t *src = a, *dst = tmp;
    for (int b = 0; b < 8; b++) {
        size_t *c = cnt[b], at = 0;
        bool one = false;
        for (int d = 0; d < 256 && !one; d++)
            one = c[d] == n;
        if (one)
            continue;
        for (int d = 0; d < 256; d++) {
            size_t m = c[d];
            c[d] = at;
            at += m;
        }
        for (size_t i = 0; i < n; i++)
            dst[c[(src[i] >> (8 * b)) & 0xff]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, sizeof(uint64_t) * n);
    free(tmp);
    free(cnt);
    return true;
}

/* Signed integers in order: the sign bit flipped makes unsigned order signed. */
static bool sort_i64(int64_t *v, size_t n)
{
    uint64_t *u = (uint64_t *)v;
    for (size_t i = 0; i < n; i++)
        u[i] ^= 1ull << 63;
    bool ok = sort_u64(u, n);
    for (size_t i = 0; i < n; i++)
        u[i] ^= 1ull << 63;
    return ok;
}

/* Doubles in order, NaNs last (a NaN equals nothing, so where it sorts only
 * has to keep the bisection's order): negative values' bits inverted,
 * positive values' sign bit set. */
static bool sort_f64(double *v, size_t n)
{
    uint64_t *u = (uint64_t *)v;
    for (size_t i = 0; i < n; i++) {
        if (isnan(v[i]))
            u[i] = 0x7ff8000000000000ull;
        u[i] = u[i] >> 63 ? ~u[i] : u[i] | 1ull << 63;
    }
    bool ok = sort_u64(u, n);
    for (size_t i = 0; i < n; i++)
        u[i] = u[i] >> 63 ? u[i] & ~(1ull << 63) : ~u[i];
    return ok;
}

typedef struct in_str {
    char *s;
    uint32_t len;
} in_str;

static int cmp_in_str(const void *x, const void *y)
{
    const in_str *a = x, *b = y;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    return a->len ? memcmp(a->s, b->s, a->len) : 0;
}

static inline uint32_t in_slot(const bx *e, int64_t x)
{
    uint64_t h = (uint64_t)x;
    h = (h ^ (h >> 31)) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h ^ (h >> 32)) & e->in_set_mask;
}

static inline bool in_set_has(const bx *e, int64_t x)
{
    if (x == 0)
        return e->in_set_zero;
    for (uint32_t s = in_slot(e, x);; s = (s + 1) & e->in_set_mask) {
        int64_t v = e->in_set[s];
        if (v == x)
            return true;
        if (!v)
            return false;
    }
}

void bx_in_index(bx *e)
{
    if (e->n_in < 16 || !e->in_i || !e->in_d || !e->in_s || !e->in_len)
        return;
    /* Each list is looked up only by an operand of its kind (strings by a
     * string, doubles by a Float, integers by the rest); an operand of no
     * known kind keeps all three. Each list is sorted on its own. */
    ex_kind k0 = e->na > 0 && e->a[0] ? e->a[0]->t.kind : EX_NOTHING;
    bool any = k0 == EX_NOTHING;
    if (any || k0 == EX_STRING) {
        in_str *ss = malloc(sizeof(in_str) * (size_t)e->n_in);
        if (!ss)
            return; /* stays a list: slower, still right */
        for (int k = 0; k < e->n_in; k++)
            ss[k] = (in_str){e->in_s[k], e->in_len[k]};
        qsort(ss, (size_t)e->n_in, sizeof(in_str), cmp_in_str);
        for (int k = 0; k < e->n_in; k++) {
            e->in_s[k] = ss[k].s;
            e->in_len[k] = ss[k].len;
        }
        free(ss);
    }
    if ((any || k0 == EX_FLOAT) && !sort_f64(e->in_d, (size_t)e->n_in))
        return;
    if ((any || (k0 != EX_STRING && k0 != EX_FLOAT)) && !sort_i64(e->in_i, (size_t)e->n_in))
        return;
    e->in_sorted = true;
    /* integers also go in a hash set: a probe is one or two cache lines where
     * bisecting a long list misses the cache at every step */
    uint64_t cap = 16;
    while (cap < (uint64_t)e->n_in * 2)
        cap *= 2;
    if (cap > (1ull << 31) || !(e->in_set = calloc(cap, sizeof(int64_t))))
        return;
    e->in_set_mask = (uint32_t)(cap - 1);
    for (int k = 0; k < e->n_in; k++) {
        int64_t x = e->in_i[k];
        if (x == 0) {
            e->in_set_zero = true;
            continue;
        }
        uint32_t s = in_slot(e, x);
        while (e->in_set[s] && e->in_set[s] != x)
            s = (s + 1) & e->in_set_mask;
        e->in_set[s] = x;
    }
}

static bool in_sorted_i(const bx *e, int64_t x)
{
    int lo = 0, hi = e->n_in;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (e->in_i[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < e->n_in && e->in_i[lo] == x;
}

static bool in_sorted_d(const bx *e, double x)
{
    int lo = 0, hi = e->n_in;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (e->in_d[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < e->n_in && e->in_d[lo] == x;
}

static bool in_sorted_s(const bx *e, const uint8_t *s, uint32_t l)
{
    in_str key = {(char *)s, l};
    int lo = 0, hi = e->n_in;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        in_str m = {e->in_s[mid], e->in_len[mid]};
        if (cmp_in_str(&m, &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < e->n_in && e->in_len[lo] == l && (l == 0 || memcmp(e->in_s[lo], s, l) == 0);
}

static int eval_in_num(ex_ectx *c, const bx *e, ex_vec *a, uint32_t n, ex_vec *out)
{
    if (out_new(c, out, e->t, n, a, 1) < 0)
        return -ENOMEM;
    bool fl = a[0].t.kind == EX_FLOAT;
    if (e->in_sorted && e->in_set && !fl && !a[0].is_const) {
        /* a long list's set misses the cache at every probe: each row's slot
         * is fetched a few rows ahead, so the misses overlap */
        enum { AHEAD = 16 };
        for (uint32_t r = 0; r < n; r++) {
            if (r + AHEAD < n)
                __builtin_prefetch(&e->in_set[in_slot(e, iv(&a[0], r + AHEAD))]);
            out->i[r] = in_set_has(e, iv(&a[0], r)) != e->negated;
        }
        return 0;
    }
    if (e->in_sorted) {
        for (uint32_t r = 0; r < n; r++) {
            bool found = fl          ? in_sorted_d(e, ex_f(&a[0], r))
                         : e->in_set ? in_set_has(e, iv(&a[0], r))
                                     : in_sorted_i(e, iv(&a[0], r));
            out->i[r] = found != e->negated;
        }
        return 0;
    }
    for (uint32_t r = 0; r < n; r++) {
        bool found = false;
        if (fl) {
            double x = ex_f(&a[0], r);
            for (int k = 0; k < e->n_in && !found; k++)
                found = e->in_d[k] == x;
        } else {
            /* a Decimal's list holds values at its scale */
            int64_t x = a[0].t.kind == EX_DECIMAL ? a[0].i[ex_row(&a[0], r)] : iv(&a[0], r);
            for (int k = 0; k < e->n_in && !found; k++)
                found = e->in_i[k] == x;
        }
        out->i[r] = found != e->negated;
    }
    return 0;
}

/* ---- strings --------------------------------------------------------------- */

/* Text of any value (numbers, dates formatted as ClickHouse prints them). */
static const uint8_t *any_text(const ex_vec *v, uint32_t r, char *buf, size_t cap, uint32_t *len)
{
    if (v->t.kind == EX_STRING)
        return ex_str(v, r, len);
    const uint8_t *sp;
    size_t l = ex_fmt_value(v, r, buf, cap, &sp);
    *len = (uint32_t)l;
    return (const uint8_t *)buf;
}

static int eval_string_fn(ex_ectx *c, const bx *e, ex_vec *a, int na, uint32_t n, ex_vec *out)
{
    if (out_new(c, out, e->t, n, a, na) < 0)
        return -ENOMEM;
    char nb[96];
    uint8_t *tmp = NULL;
    size_t tmpcap = 0;
    int rc = 0;
    for (uint32_t r = 0; r < n && !rc; r++) {
        bool nul = out->nulls && out->nulls[r];
        uint32_t l = 0;
        const uint8_t *s = nul ? (const uint8_t *)"" : ex_str(&a[0], r, &l);
        if (e->fn == F_LENGTH) {
            out->i[r] = nul ? 0 : l;
            continue;
        }
        if (e->fn == F_POSITION) {
            uint32_t pl = 0;
            const uint8_t *p = nul ? s : ex_str(&a[1], r, &pl);
            if (nul)
                out->i[r] = 0;
            else if (pl == 0)
                out->i[r] = 1;
            else {
                const uint8_t *f = memmem(s, l, p, pl);
                out->i[r] = f ? (int64_t)(f - s) + 1 : 0;
            }
            continue;
        }
        if (nul) {
            rc = ex_vec_str_put(c->mem, out, r, "", 0);
            continue;
        }
        switch (e->fn) {
        case F_LOWER:
        case F_UPPER: {
            if (l > tmpcap) {
                free(tmp);
                tmpcap = l * 2 + 16;
                if (!(tmp = malloc(tmpcap))) {
                    rc = oom(c);
                    break;
                }
            }
            for (uint32_t k = 0; k < l; k++)
                tmp[k] = e->fn == F_LOWER ? (uint8_t)tolower(s[k]) : (uint8_t)toupper(s[k]);
            rc = ex_vec_str_put(c->mem, out, r, tmp, l);
            break;
        }
        case F_SUBSTRING: {
            int64_t off = iv(&a[1], r), len = na > 2 ? iv(&a[2], r) : INT64_MAX;
            int64_t b;
            if (off > 0)
                b = off - 1;
            else if (off < 0)
                b = (int64_t)l + off;
            else {
                rc = ex_vec_str_put(c->mem, out, r, "", 0);
                break;
            }
            if (b < 0) {
                if (len != INT64_MAX && len >= 0)
                    len += b;
                b = 0;
            }
            if (b > (int64_t)l)
                b = l;
            int64_t end;
            if (len == INT64_MAX)
                end = l;
            else if (len >= 0)
                end = b + len > (int64_t)l ? (int64_t)l : b + len;
            else
                end = (int64_t)l + len;
            if (end < b)
                end = b;
            rc = ex_vec_str_put(c->mem, out, r, s + b, (size_t)(end - b));
            break;
        }
        case F_CONCAT: {
            size_t tot = 0;
            for (int j = 0; j < na; j++) {
                uint32_t pl;
                any_text(&a[j], r, nb, sizeof(nb), &pl);
                tot += pl;
            }
            if (tot > tmpcap) {
                free(tmp);
                tmpcap = tot * 2 + 16;
                if (!(tmp = malloc(tmpcap))) {
                    rc = oom(c);
                    break;
                }
            }
            size_t o = 0;
            for (int j = 0; j < na; j++) {
                uint32_t pl;
                const uint8_t *p = any_text(&a[j], r, nb, sizeof(nb), &pl);
                if (pl)
                    memcpy(tmp + o, p, pl);
                o += pl;
            }
            rc = ex_vec_str_put(c->mem, out, r, tmp, o);
            break;
        }
        default: rc = eval_err(c, -EINVAL, "internal: string function %d", e->fn); break;
        }
    }
    free(tmp);
    if (rc == -ENOMEM)
        return oom(c);
    return rc;
}

/* ---- dates ----------------------------------------------------------------- */

static int64_t pow10i(int k)
{
    int64_t p = 1;
    while (k-- > 0)
        p *= 10;
    return p;
}

static int64_t floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

/* Seconds since the epoch of a date or datetime value. */
static int64_t secs_of(const ex_vec *v, uint32_t r)
{
    int64_t x = iv(v, r);
    if (v->t.kind == EX_DATE)
        return x * 86400;
    if (v->t.kind == EX_DATETIME)
        return floordiv(x, pow10i(v->t.scale));
    return x;
}

static int64_t days_of(const ex_vec *v, uint32_t r)
{
    if (v->t.kind == EX_DATE)
        return iv(v, r);
    return floordiv(secs_of(v, r), 86400);
}

static int eval_date_fn(ex_ectx *c, const bx *e, ex_vec *a, int na, uint32_t n, ex_vec *out)
{
    int first = e->fn == F_DATEDIFF ? 1 : 0;
    if (out_new(c, out, e->t, n, a + first, na - first) < 0)
        return -ENOMEM;
    for (uint32_t r = 0; r < n; r++) {
        if (out->nulls && out->nulls[r]) {
            out->i[r] = 0;
            continue;
        }
        int64_t y;
        unsigned m, d;
        switch (e->fn) {
        case F_TOYEAR:
            ex_civil_from_days(days_of(&a[0], r), &y, &m, &d);
            out->i[r] = y;
            break;
        case F_TOMONTH:
            ex_civil_from_days(days_of(&a[0], r), &y, &m, &d);
            out->i[r] = m;
            break;
        case F_TODATE:
            if (a[0].t.kind == EX_DATE || a[0].t.kind == EX_DATETIME) {
                out->i[r] = days_of(&a[0], r);
            } else {
                /* a number: days since 1970-01-01, past 65535 a Unix timestamp */
                int64_t v = a[0].t.kind == EX_FLOAT ? (int64_t)ex_f(&a[0], r) : iv(&a[0], r);
                out->i[r] = v > 65535 ? floordiv(v, 86400) : v;
            }
            break;
        case F_TOSTARTOFMONTH:
            ex_civil_from_days(days_of(&a[0], r), &y, &m, &d);
            out->i[r] = ex_days_from_civil(y, m, 1);
            break;
        case F_TOSTARTOFDAY: out->i[r] = days_of(&a[0], r) * 86400 * pow10i(e->t.scale); break;
        case F_DATEDIFF: {
            const ex_vec *x = &a[1], *z = &a[2];
            int64_t v;
            switch (e->unit) {
            case 0: v = secs_of(z, r) - secs_of(x, r); break;
            case 1: v = floordiv(secs_of(z, r), 60) - floordiv(secs_of(x, r), 60); break;
            case 2: v = floordiv(secs_of(z, r), 3600) - floordiv(secs_of(x, r), 3600); break;
            case 3: v = days_of(z, r) - days_of(x, r); break;
            case 4: /* weeks starting on Monday; 1970-01-01 was a Thursday */
                v = floordiv(days_of(z, r) + 3, 7) - floordiv(days_of(x, r) + 3, 7);
                break;
            default: {
                int64_t y1, y2;
                unsigned m1, m2, d1, d2;
                ex_civil_from_days(days_of(x, r), &y1, &m1, &d1);
                ex_civil_from_days(days_of(z, r), &y2, &m2, &d2);
                if (e->unit == 5)
                    v = (y2 * 12 + m2) - (y1 * 12 + m1);
                else if (e->unit == 6)
                    v = (y2 * 4 + (m2 - 1) / 3) - (y1 * 4 + (m1 - 1) / 3);
                else
                    v = y2 - y1;
            }
            }
            out->i[r] = v;
            break;
        }
        default: break;
        }
    }
    return 0;
}

/* ---- casts ----------------------------------------------------------------- */

static int eval_cast(ex_ectx *c, const bx *e, ex_vec *a, uint32_t n, ex_vec *out)
{
    const ex_vec *x = &a[0];
    ex_type t = e->t;
    if (out_new(c, out, t, n, a, 1) < 0)
        return -ENOMEM;
    if (e->unit == 2 && !out->nulls) {
        if (!(out->nulls = em_calloc(c->mem, n ? n : 1)))
            return oom(c);
        out->own |= EXO_NULLS;
    }
    if (!t.nullable && out->nulls) {
        for (uint32_t r = 0; r < n; r++)
            if (out->nulls[r])
                return eval_err(c, -EINVAL,
                                "cannot convert NULL to the non-Nullable type of CAST: use "
                                "Nullable(T) or coalesce()");
    }
    char nb[96];
    int rc = 0;
    if (t.kind == EX_ARRAY) {
        /* CAST(arr or its text AS Array(T)) (a NULL was refused above: an
           Array is never NULL) */
        ex_bytes a1 = {0};
        char tmp[128], why[256] = "";
        for (uint32_t r = 0; r < n && !rc; r++) {
            rc = ex_arr_convert(x, r, &t, &a1, tmp, sizeof(tmp), why, sizeof(why));
            if (rc == 0)
                rc = ex_vec_str_put(c->mem, out, r, a1.p, a1.n);
        }
        ex_bytes_free(&a1);
        if (rc == -EINVAL || (rc == -E2BIG && why[0]))
            return eval_err(c, rc, "CAST: %s", why);
        return rc < 0 ? oom(c) : 0;
    }
    for (uint32_t r = 0; r < n && !rc; r++) {
        bool nul = out->nulls && out->nulls[r];
        if (t.kind == EX_STRING && x->t.kind == EX_ARRAY) {
            /* toString(arr): its text as ClickHouse prints it */
            uint32_t l;
            const uint8_t *p = ex_str(x, r, &l);
            ex_bytes tx = {0};
            rc = ex_arr_text(&x->t, p, l, false, &tx);
            if (rc == 0)
                rc = ex_vec_str_put(c->mem, out, r, tx.p ? tx.p : (const uint8_t *)"", tx.n);
            ex_bytes_free(&tx);
            continue;
        }
        if (t.kind == EX_STRING) {
            uint32_t l = 0;
            const uint8_t *s = nul ? (const uint8_t *)"" : any_text(x, r, nb, sizeof(nb), &l);
            rc = ex_vec_str_put(c->mem, out, r, s, l);
            continue;
        }
        if (nul) {
            if (t.kind == EX_FLOAT)
                out->d[r] = 0;
            else
                out->i[r] = 0;
            continue;
        }
        if (x->t.kind == EX_STRING) {
            uint32_t l;
            const uint8_t *s = ex_str(x, r, &l);
            bool ok;
            int64_t v = 0;
            double d = 0;
            switch (t.kind) {
            case EX_FLOAT:
                ok = ex_parse_float(s, l, &d);
                out->d[r] = d;
                break;
            case EX_DATE:
                ok = ex_parse_date((const char *)s, l, &v);
                out->i[r] = v;
                break;
            case EX_DATETIME:
                ok = ex_parse_datetime((const char *)s, l, t.scale, &v, NULL) ||
                     (ex_parse_date((const char *)s, l, &v) &&
                      !__builtin_mul_overflow(v, 86400 * pow10i(t.scale), &v));
                out->i[r] = v;
                break;
            case EX_BOOL:
                ok = (l == 4 && memcmp(s, "true", 4) == 0) ||
                     (l == 5 && memcmp(s, "false", 5) == 0) ||
                     (l == 1 && (s[0] == '0' || s[0] == '1'));
                out->i[r] = l == 4 || (l == 1 && s[0] == '1');
                break;
            case EX_DECIMAL:
                ok = ex_parse_decimal(s, l, t.scale, &v) && ex_decimal_fits(v, t.prec);
                out->i[r] = v;
                break;
            default:
                ok = ex_parse_int(s, l, &v, &(bool){false});
                out->i[r] = ex_int_wrap(&t, v);
                break;
            }
            if (!ok && e->unit) { /* toTOrZero: 0; toTOrNull: NULL */
                out->i ? (void)(out->i[r] = 0) : (void)(out->d[r] = 0);
                if (e->unit == 2 && out->nulls)
                    out->nulls[r] = 1;
                continue;
            }
            if (!ok) {
                char tn[64];
                ex_type_name(&t, tn, sizeof(tn));
                return eval_err(c, -EINVAL, "cannot parse '%.*s' as %s in CAST",
                                (int)(l > 64 ? 64 : l), (const char *)s, tn);
            }
            continue;
        }
        switch (t.kind) {
        case EX_DECIMAL:
            if ((rc = bx__dec_from(c, t, x, r, &out->i[r])) < 0)
                return rc;
            break;
        case EX_FLOAT:
            out->d[r] = ex_f(x, r);
            if (t.bits == 32)
                out->d[r] = (float)out->d[r];
            break;
        case EX_DATE:
            if (x->t.kind == EX_DATETIME) {
                out->i[r] = days_of(x, r);
            } else {
                /* a number: days since 1970-01-01, or past 65535 (ClickHouse's
                 * rule) a Unix timestamp in seconds */
                int64_t v = x->t.kind == EX_FLOAT ? (int64_t)ex_f(x, r) : iv(x, r);
                out->i[r] = x->t.kind != EX_DATE && v > 65535 ? floordiv(v, 86400) : v;
            }
            break;
        case EX_DATETIME:
            if (x->t.kind == EX_DATE)
                out->i[r] = iv(x, r) * 86400 * pow10i(t.scale);
            else if (x->t.kind == EX_DATETIME) {
                int64_t v = iv(x, r);
                out->i[r] = t.scale >= x->t.scale ? v * pow10i(t.scale - x->t.scale)
                                                  : floordiv(v, pow10i(x->t.scale - t.scale));
            } else
                out->i[r] = (int64_t)(ex_f(x, r) * (double)pow10i(t.scale));
            break;
        case EX_BOOL: out->i[r] = truthy(x, r); break;
        default: {
            int64_t v = x->t.kind == EX_FLOAT ? (int64_t)x->d[ex_row(x, r)] : iv(x, r);
            out->i[r] = ex_int_wrap(&t, v);
        }
        }
    }
    if (rc == -ENOMEM)
        return oom(c);
    return rc;
}

/* ---- if / multiIf / coalesce ------------------------------------------------- */

static void copy_val(ex_vec *out, uint32_t r, const ex_vec *v)
{
    uint32_t k = ex_row(v, r);
    if (out->t.kind == EX_FLOAT)
        out->d[r] = ex_f(v, r);
    else if (v->t.kind == EX_FLOAT)
        out->i[r] = (int64_t)v->d[k];
    else if (v->t.kind != EX_NOTHING)
        out->i[r] = v->i[k];
    if (out->nulls)
        out->nulls[r] = ex_null(v, r);
}

static int eval_choice(ex_ectx *c, const bx *e, ex_vec *a, int na, uint32_t n, ex_vec *out)
{
    ex_type t = e->t;
    bool nullable = t.nullable;
    t.nullable = false;
    if (ex_vec_alloc(c->mem, out, t, n) < 0)
        return oom(c);
    out->t = e->t;
    if (nullable) {
        if (!(out->nulls = em_calloc(c->mem, n ? n : 1)))
            return oom(c);
        out->own |= EXO_NULLS;
    }
    for (uint32_t r = 0; r < n; r++) {
        const ex_vec *pick = NULL;
        if (e->fn == F_COALESCE) {
            pick = &a[na - 1];
            for (int j = 0; j < na; j++)
                if (!ex_null(&a[j], r)) {
                    pick = &a[j];
                    break;
                }
        } else {
            /* if(c, a, b) is multiIf(c, a, b) */
            int j = 0;
            for (; j + 1 < na; j += 2)
                if (truthy(&a[j], r)) {
                    pick = &a[j + 1];
                    break;
                }
            if (!pick)
                pick = &a[na - 1];
        }
        if (ex_is_bytes(out->t.kind)) {
            uint32_t l = 0;
            const uint8_t *s = ex_null(pick, r) ? (const uint8_t *)"" : ex_str(pick, r, &l);
            if (ex_vec_str_put(c->mem, out, r, s, l) < 0)
                return oom(c);
            if (out->nulls)
                out->nulls[r] = ex_null(pick, r);
        } else {
            copy_val(out, r, pick);
        }
    }
    return 0;
}

/* ---- round / abs ------------------------------------------------------------- */

static int eval_math(ex_ectx *c, const bx *e, ex_vec *a, int na, uint32_t n, ex_vec *out)
{
    if (out_new(c, out, e->t, n, a, 1) < 0)
        return -ENOMEM;
    if (e->t.kind == EX_DECIMAL)
        return bx__dec_arith(c, e, a, n, out);
    int64_t places = na > 1 ? iv(&a[1], 0) : 0;
    for (uint32_t r = 0; r < n; r++) {
        if (e->fn == F_ABS) {
            if (e->t.kind == EX_FLOAT)
                out->d[r] = fabs(ex_f(&a[0], r));
            else {
                int64_t v = iv(&a[0], r);
                out->i[r] = a[0].t.kind == EX_UINT || v >= 0 ? v : (int64_t)(0 - (uint64_t)v);
            }
            continue;
        }
        if (e->t.kind == EX_FLOAT) {
            double x = ex_f(&a[0], r);
            if (places == 0)
                out->d[r] = nearbyint(x);
            else if (places > 0 && places < 300) {
                double p = pow(10, (double)places);
                double y = nearbyint(x * p) / p;
                out->d[r] = isfinite(y) ? y : x;
            } else if (places < 0 && places > -300) {
                double p = pow(10, (double)-places);
                out->d[r] = nearbyint(x / p) * p;
            } else
                out->d[r] = x;
            continue;
        }
        int64_t v = iv(&a[0], r);
        if (places >= 0 || places < -18) {
            out->i[r] = places < -18 ? 0 : v;
        } else {
            int64_t p = pow10i((int)-places), q = v / p, rem = v % p;
            /* half away from zero for integers */
            if (rem * 2 >= p)
                q++;
            else if (rem * 2 <= -p)
                q--;
            out->i[r] = q * p;
        }
    }
    return 0;
}

/* ---- dispatch ---------------------------------------------------------------- */

int bx_eval(ex_ectx *c, const bx *e, const ex_vec *in, const uint32_t *sel, uint32_t n, ex_vec *out)
{
    memset(out, 0, sizeof(*out));
    if (e->op == BX_COL)
        return gather(c, &in[e->col], sel, n, out);
    if (e->op == BX_CONST) {
        *out = e->cval;
        out->own = 0;
        return 0;
    }
    ex_vec stack[8];
    ex_vec *a = e->na <= 8 ? stack : calloc((size_t)e->na, sizeof(ex_vec));
    if (!a)
        return oom(c);
    int rc = 0, done = 0;
    bool all_const = true;
    for (; done < e->na; done++) {
        rc = bx_eval(c, e->a[done], in, sel, n, &a[done]);
        if (rc < 0)
            break;
        all_const &= a[done].is_const;
    }
    /* constant folding: every argument constant -> compute one row */
    uint32_t m = all_const && e->na > 0 ? 1 : n;
    if (rc == 0) {
        switch (e->fn) {
        case F_ADD:
        case F_SUB:
        case F_MUL:
        case F_DIV:
        case F_MOD:
        case F_NEG: rc = eval_arith(c, e, a, m, out); break;
        case F_EQ:
        case F_NE:
        case F_LT:
        case F_LE:
        case F_GT:
        case F_GE: rc = eval_cmp(c, e, a, m, out); break;
        case F_AND:
        case F_OR:
        case F_NOT: rc = eval_logic(c, e, a, e->na, m, out); break;
        case F_IN:
            rc = a[0].t.kind == EX_STRING ? eval_str_pred(c, e, a, 1, m, out)
                                          : eval_in_num(c, e, a, m, out);
            break;
        case F_LIKE:
        case F_ILIKE:
        case F_STARTSWITH:
        case F_ENDSWITH: rc = eval_str_pred(c, e, a, e->na, m, out); break;
        case F_ISNULL:
        case F_ISNOTNULL: {
            ex_type t = e->t;
            if (ex_vec_alloc(c->mem, out, t, m) < 0) {
                rc = oom(c);
                break;
            }
            for (uint32_t r = 0; r < m; r++)
                out->i[r] = ex_null(&a[0], r) == (e->fn == F_ISNULL);
            break;
        }
        case F_IF:
        case F_MULTIIF:
        case F_COALESCE: rc = eval_choice(c, e, a, e->na, m, out); break;
        case F_CAST: rc = eval_cast(c, e, a, m, out); break;
        case F_LENGTH:
        case F_LOWER:
        case F_UPPER:
        case F_SUBSTRING:
        case F_CONCAT:
        case F_POSITION: rc = eval_string_fn(c, e, a, e->na, m, out); break;
        case F_TOYEAR:
        case F_TOMONTH:
        case F_TODATE:
        case F_TOSTARTOFMONTH:
        case F_TOSTARTOFDAY:
        case F_DATEDIFF: rc = eval_date_fn(c, e, a, e->na, m, out); break;
        case F_ROUND:
        case F_ABS: rc = eval_math(c, e, a, e->na, m, out); break;
        default: rc = bx_eval_fn(c, e, a, e->na, m, out); break;
        }
    }
    for (int j = 0; j < done; j++)
        ex_vec_clear(c->mem, &a[j]);
    if (a != stack)
        free(a);
    if (rc < 0) {
        ex_vec_clear(c->mem, out);
        return rc;
    }
    out->n = m;
    if (m == 1 && n != 1)
        out->is_const = true;
    else if (all_const && e->na > 0)
        out->is_const = true;
    return 0;
}
