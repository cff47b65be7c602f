/* SPDX-License-Identifier: Apache-2.0
 *
 * rtab.c: the result table (rtab.h): columns allocated through the query's
 * memory tracker, doubled as rows arrive and charged for the rows written
 * (em_grow, em_use); strings copied into the column.
 */
#include "rtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int rtab_init(eng_mem *m, rtab *t, const ex_type *types, int nc)
{
    memset(t, 0, sizeof(*t));
    t->c = calloc((size_t)nc + 1, sizeof(ex_vec));
    if (!t->c)
        return -ENOMEM;
    t->nc = nc;
    for (int k = 0; k < nc; k++) {
        ex_type ty = types[k];
        ty.nullable = true; /* always keep a null map; cheap and simple */
        if (ex_vec_alloc(m, &t->c[k], ty, 0) < 0)
            return -ENOMEM;
        t->c[k].t = types[k];
        if (t->c[k].t.kind == EX_NOTHING)
            t->c[k].t.nullable = true;
    }
    t->cap = 1;
    return 0;
}

void rtab_free(eng_mem *m, rtab *t)
{
    for (int k = 0; k < t->nc; k++)
        ex_vec_clear(m, &t->c[k]);
    free(t->c);
    memset(t, 0, sizeof(*t));
}

int rtab_reserve(eng_mem *m, rtab *t, uint32_t need)
{
    if (need > t->cap) {
        uint32_t cap = t->cap * 2;
        while (cap < need)
            cap *= 2;
        for (int k = 0; k < t->nc; k++) {
            ex_vec *v = &t->c[k];
            void *p;
            if (v->t.kind == EX_FLOAT) {
                if (!(p = em_grow(m, v->d, (size_t)cap * 8)))
                    return -ENOMEM;
                v->d = p;
            } else if (ex_is_bytes(v->t.kind)) {
                if (!(p = em_grow(m, v->off, ((size_t)cap + 1) * 4)))
                    return -ENOMEM;
                v->off = p;
            } else if (v->t.kind != EX_NOTHING) {
                if (!(p = em_grow(m, v->i, (size_t)cap * 8)))
                    return -ENOMEM;
                v->i = p;
            }
            if (!(p = em_grow(m, v->nulls, cap)))
                return -ENOMEM;
            v->nulls = p;
        }
        t->cap = cap;
    }
    /* charged for the rows about to be written, not the doubled capacity */
    for (int k = 0; k < t->nc; k++) {
        ex_vec *v = &t->c[k];
        if (!em_use(m, v->d, (size_t)need * 8) || !em_use(m, v->i, (size_t)need * 8) ||
            !em_use(m, v->off, ((size_t)need + 1) * 4) || !em_use(m, v->nulls, need))
            return -ENOMEM;
    }
    return 0;
}

/* Appends row r of v to column k (row t->n). */
int rtab_put(eng_mem *m, rtab *t, int k, const ex_vec *v, uint32_t r)
{
    ex_vec *c = &t->c[k];
    uint32_t at = t->n;
    bool nul = ex_null(v, r);
    c->nulls[at] = nul;
    if (ex_is_bytes(c->t.kind)) {
        uint32_t l = 0;
        const uint8_t *s = nul ? (const uint8_t *)"" : ex_str(v, r, &l);
        return ex_vec_str_put(m, c, at, s, l);
    }
    if (c->t.kind == EX_FLOAT)
        c->d[at] = nul ? 0 : ex_f(v, r);
    else if (c->t.kind != EX_NOTHING)
        c->i[at] = nul || v->t.kind == EX_NOTHING ? 0 : v->i[ex_row(v, r)];
    return 0;
}

/* Rows [0, n) of v after column k's rows: rtab_put's values (a NULL row's
 * value 0), a whole run at a time when the column and v keep the same
 * numbers. */
static int append_col(eng_mem *m, rtab *t, int k, const ex_vec *v, uint32_t n)
{
    ex_vec *c = &t->c[k];
    uint32_t at = t->n;
    bool same = !v->is_const && v->t.kind == c->t.kind && !ex_is_bytes(c->t.kind) &&
                c->t.kind != EX_NOTHING && (c->t.kind != EX_FLOAT ? !!v->i : !!v->d);
    if (!same) {
        /* other kinds and strings: row by row */
        for (uint32_t r = 0; r < n; r++) {
            t->n = at + r;
            if (rtab_put(m, t, k, v, r) < 0) {
                t->n = at;
                return -ENOMEM;
            }
        }
        t->n = at;
        return 0;
    }
    int64_t *dst = c->t.kind == EX_FLOAT ? (int64_t *)(void *)(c->d + at) : c->i + at;
    const int64_t *src = c->t.kind == EX_FLOAT ? (const int64_t *)(const void *)v->d : v->i;
    if (!v->nulls) {
        memcpy(dst, src, (size_t)n * 8);
        memset(c->nulls + at, 0, n);
        return 0;
    }
    memcpy(c->nulls + at, v->nulls, n);
    for (uint32_t r = 0; r < n; r++)
        dst[r] = v->nulls[r] ? 0 : src[r];
    return 0;
}

int rtab_append(eng_mem *m, rtab *t, const ex_vec *vals, uint32_t n)
{
    if (rtab_reserve(m, t, t->n + n) < 0)
        return -ENOMEM;
    for (int k = 0; k < t->nc; k++)
        if (append_col(m, t, k, &vals[k], n) < 0)
            return -ENOMEM;
    t->n += n;
    return 0;
}

/* Keeps only rows idx[0..n) in that order. */
int rtab_take(eng_mem *m, rtab *t, const uint32_t *idx, uint32_t n)
{
    rtab nt;
    ex_type *ty = calloc((size_t)t->nc + 1, sizeof(ex_type));
    if (!ty)
        return -ENOMEM;
    for (int k = 0; k < t->nc; k++)
        ty[k] = t->c[k].t;
    int rc = rtab_init(m, &nt, ty, t->nc);
    free(ty);
    if (rc < 0 || rtab_reserve(m, &nt, n) < 0) {
        rtab_free(m, &nt);
        return -ENOMEM;
    }
    for (uint32_t r = 0; r < n; r++) {
        for (int k = 0; k < t->nc; k++)
            if (rtab_put(m, &nt, k, &t->c[k], idx[r]) < 0) {
                rtab_free(m, &nt);
                return -ENOMEM;
            }
        nt.n++;
    }
    rtab_free(m, t);
    *t = nt;
    return 0;
}

/* ---- the wire (dist/dist_state.h draws the layout) ---- */

static void type_put(ew_buf *b, const ex_type *t)
{
    uint8_t x[6] = {t->kind, t->nullable, t->scale, t->bits, t->utc, t->prec};
    ew_raw(b, x, 6);
    if (t->kind == EX_ARRAY) { /* an Array's element: 3 bytes more */
        uint8_t y[3] = {t->elem, t->depth, t->enull};
        ew_raw(b, y, 3);
    }
}

int rtab_encode(const rtab *t, ew_buf *b)
{
    ew_u32(b, (uint32_t)t->nc);
    for (int k = 0; k < t->nc; k++)
        type_put(b, &t->c[k].t);
    ew_u32(b, t->n);
    for (int k = 0; k < t->nc; k++) {
        const ex_vec *v = &t->c[k];
        ew_raw(b, v->nulls, t->n);
        for (uint32_t r = 0; r < t->n; r++) {
            if (ex_is_bytes(v->t.kind)) {
                uint32_t l;
                const uint8_t *s = ex_str(v, r, &l);
                ew_bytes(b, s, l);
            } else if (v->t.kind == EX_FLOAT) {
                ew_f64(b, v->d[r]);
            } else if (v->t.kind != EX_NOTHING) {
                ew_u64(b, (uint64_t)v->i[r]);
            }
        }
    }
    return b->err;
}

int rtab_decode_append(eng_mem *m, rtab *t, er_buf *r)
{
    uint32_t nc = er_u32(r);
    if (r->err || nc != (uint32_t)t->nc)
        return er_fail(r);
    for (int k = 0; k < t->nc; k++) {
        const uint8_t *x = er_raw(r, 6);
        const ex_type *w = &t->c[k].t;
        if (!x || x[0] != w->kind || x[1] != w->nullable || x[2] != w->scale || x[3] != w->bits ||
            x[4] != w->utc || x[5] != w->prec)
            return er_fail(r);
        if (w->kind == EX_ARRAY) {
            const uint8_t *y = er_raw(r, 3);
            if (!y || y[0] != w->elem || y[1] != w->depth || y[2] != w->enull)
                return er_fail(r);
        }
    }
    /* each row is at least its null byte in every column */
    uint32_t n = er_count(r, nc ? nc : 1, UINT32_MAX / 2 - t->n);
    if (r->err)
        return -EBADMSG;
    if (rtab_reserve(m, t, t->n + n) < 0)
        return -ENOMEM;
    uint32_t at = t->n;
    for (int k = 0; k < t->nc; k++) {
        ex_vec *v = &t->c[k];
        const uint8_t *nl = er_raw(r, n);
        if (!nl)
            return -EBADMSG;
        for (uint32_t i = 0; i < n; i++) {
            if (nl[i] > 1)
                return er_fail(r);
            v->nulls[at + i] = nl[i];
            if (ex_is_bytes(v->t.kind)) {
                uint32_t l;
                const uint8_t *s = er_bytes(r, (uint32_t)er_left(r), &l);
                if (!s || ex_vec_str_put(m, v, at + i, s, l) < 0)
                    return s ? -ENOMEM : -EBADMSG;
            } else if (v->t.kind == EX_FLOAT) {
                v->d[at + i] = er_f64(r);
            } else if (v->t.kind != EX_NOTHING) {
                v->i[at + i] = (int64_t)er_u64(r);
            }
            if (r->err)
                return -EBADMSG;
        }
    }
    t->n = at + n;
    return 0;
}

int rtab_cmp_values(const ex_vec *v, uint32_t a, uint32_t b)
{
    switch (v->t.kind) {
    case EX_STRING: {
        uint32_t la, lb;
        const uint8_t *x = ex_str(v, a, &la), *y = ex_str(v, b, &lb);
        uint32_t mn = la < lb ? la : lb;
        int c = mn ? memcmp(x, y, mn) : 0;
        if (!c)
            c = la < lb ? -1 : la > lb;
        return c < 0 ? -1 : c > 0;
    }
    case EX_ARRAY: {
        uint32_t la, lb;
        const uint8_t *x = ex_str(v, a, &la), *y = ex_str(v, b, &lb);
        return ex_arr_cmp(&v->t, x, la, y, lb);
    }
    case EX_NOTHING: return 0;
    default: break;
    }
    a = ex_row(v, a); /* a constant vector (an ORDER BY 7) holds one value */
    b = ex_row(v, b);
    switch (v->t.kind) {
    case EX_FLOAT: return v->d[a] < v->d[b] ? -1 : v->d[a] > v->d[b];
    case EX_UINT:
        return (uint64_t)v->i[a] < (uint64_t)v->i[b] ? -1 : (uint64_t)v->i[a] > (uint64_t)v->i[b];
    default: return v->i[a] < v->i[b] ? -1 : v->i[a] > v->i[b];
    }
}
