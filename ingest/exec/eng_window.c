/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_window.c: window functions, f(...) OVER ([PARTITION BY ...] [ORDER BY
 * ...] [ROWS BETWEEN ... AND ...]) as whole items of the SELECT list. The
 * statement runs in two steps: its FROM, WHERE, GROUP BY and HAVING with the
 * other items and every window's arguments, partition and order keys as
 * columns, into memory (eng_compose.c's materialisation); then each window
 * sorts the rows' positions by its partition and order keys and walks each
 * partition once, and the statement's ORDER BY and LIMIT cut the result.
 *
 * Functions: row_number, rank, dense_rank (over the partition); count, sum,
 * avg, min, max over the frame (ROWS frames; without one ClickHouse's
 * default: with ORDER BY from the partition's start to the current row's last
 * peer, without it the whole partition); lag / lead (SQL's, over the
 * partition) and lagInFrame / leadInFrame (ClickHouse's, inside the frame),
 * with an offset (1) and a default (the type's default, NULL for Nullable).
 */
#include "exec_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum {
    WF_ROW_NUMBER = 1,
    WF_RANK,
    WF_DENSE_RANK,
    WF_COUNT,
    WF_SUM,
    WF_AVG,
    WF_MIN,
    WF_MAX,
    WF_LAG,
    WF_LEAD,
    WF_LAG_FRAME,
    WF_LEAD_FRAME,
};

static const struct {
    const char *name;
    int fn, min, max;
} wfns[] = {
    {"row_number", WF_ROW_NUMBER, 0, 0},
    {"rank", WF_RANK, 0, 0},
    {"dense_rank", WF_DENSE_RANK, 0, 0},
    {"count", WF_COUNT, 0, 1},
    {"sum", WF_SUM, 1, 1},
    {"avg", WF_AVG, 1, 1},
    {"min", WF_MIN, 1, 1},
    {"max", WF_MAX, 1, 1},
    {"lag", WF_LAG, 1, 3},
    {"lead", WF_LEAD, 1, 3},
    {"lagInFrame", WF_LAG_FRAME, 1, 3},
    {"leadInFrame", WF_LEAD_FRAME, 1, 3},
};

/* One window item: its function and where its columns are in the
 * materialised table. */
typedef struct witem {
    const sql_node *n;
    int fn;
    int item;          /* its SELECT item */
    int arg0, n_args;  /* columns of its arguments */
    int part0, n_part; /* of PARTITION BY */
    int ord0, n_ord;   /* of ORDER BY */
    ex_vec res;
} witem;

bool eng__has_window(const sql_stmt *st)
{
    for (int i = 0; i < st->n_items; i++)
        if (st->items[i].expr->kind == SQL_FUNC && st->items[i].expr->win)
            return true;
    return false;
}

static bool nested_window(const sql_node *n, int depth)
{
    if (!n || depth > 300)
        return false;
    if (n->win)
        return true;
    for (int i = 0; i < n->nargs; i++)
        if (nested_window(n->args[i], depth + 1))
            return true;
    return false;
}

/* ---- sorting by partition and order keys ---------------------------------------- */

typedef struct wsort {
    const rtab *t;
    const witem *w;
    const sql_window *win;
    eng_mem *m;
    int nthreads;
} wsort;

static int cmp_val(const ex_vec *v, uint32_t a, uint32_t b, bool desc, bool nulls_first)
{
    int ra = ex_null(v, a) ? 2 : (v->t.kind == EX_FLOAT && isnan(v->d[a])) ? 1 : 0;
    int rb = ex_null(v, b) ? 2 : (v->t.kind == EX_FLOAT && isnan(v->d[b])) ? 1 : 0;
    if (ra != rb) {
        int c = ra < rb ? -1 : 1;
        return nulls_first ? -c : c;
    }
    if (ra)
        return 0;
    int c = rtab_cmp_values(v, a, b);
    return desc ? -c : c;
}

static int cmp_part(const wsort *s, uint32_t a, uint32_t b)
{
    for (int k = 0; k < s->w->n_part; k++) {
        int c = cmp_val(&s->t->c[s->w->part0 + k], a, b, false, false);
        if (c)
            return c;
    }
    return 0;
}

static int cmp_ord(const wsort *s, uint32_t a, uint32_t b)
{
    for (int k = 0; k < s->w->n_ord; k++) {
        const sql_order_item *o = &s->win->order[k];
        int c = cmp_val(&s->t->c[s->w->ord0 + k], a, b, o->desc, o->nulls == 1);
        if (c)
            return c;
    }
    return 0;
}

static int wcmp(const void *x, const void *y, void *arg)
{
    const wsort *s = arg;
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    int c = cmp_part(s, a, b);
    if (!c)
        c = cmp_ord(s, a, b);
    return c ? c : (a < b ? -1 : a > b);
}

/* One partition key and one order key, both integers (the common shape,
 * PARTITION BY k ORDER BY t): sorted as one 64-bit word each when their
 * spans fit (sort_packed, below), else as pkeys by a radix sort of their
 * bytes; anything else through wcmp. */
typedef struct pkey {
    int64_t p, o;
    uint32_t r;
    uint8_t pn, on; /* 1: NULL (sorts last, or first for the order key's NULLS FIRST) */
} pkey;

static bool int_key(const ex_vec *v)
{
    return v->t.kind == EX_INT || v->t.kind == EX_DATE || v->t.kind == EX_DATETIME ||
           v->t.kind == EX_BOOL;
}

/* The radix key of a value: its bits with the sign flipped, so unsigned
 * order is signed order; inverted for DESC. */
static inline uint64_t rkey(int64_t v, bool desc)
{
    uint64_t u = (uint64_t)v ^ (1ull << 63);
    return desc ? ~u : u;
}

/* Digit d of an item's sort key: 0-7 the order key's bytes (least
 * significant first), 8-15 the partition key's, 16 the order key's NULL
 * placement, 17 the partition key's NULL flag (NULL partitions last). */
static inline unsigned digit(const pkey *e, int d, bool desc, bool nulls_first)
{
    if (d < 8)
        return (unsigned)(rkey(e->o, desc) >> (8 * d)) & 0xff;
    if (d < 16)
        return (unsigned)(rkey(e->p, false) >> (8 * (d - 8))) & 0xff;
    if (d == 16)
        return nulls_first ? !e->on : e->on;
    return e->pn;
}

/* Sorts k[0..n) by (partition NULL last, partition, order NULL placement,
 * order, row) with a least-significant-digit radix sort, skipping every digit
 * all items share: the keys are usually narrow (a partition key of a few
 * hundred thousand values is three bytes wide). Stable passes over items in
 * row order keep ties in row order. Returns the buffer holding the result
 * (k or tmp). */
static pkey *pkey_radix(pkey *k, pkey *tmp, uint32_t n, bool desc, bool nulls_first)
{
    enum { DIGITS = 18 };
    uint32_t(*cnt)[256] = calloc(DIGITS, sizeof(*cnt));
    if (!cnt)
        return NULL;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t o = rkey(k[i].o, desc), p = rkey(k[i].p, false);
        for (int b = 0; b < 8; b++) {
            cnt[b][(o >> (8 * b)) & 0xff]++;
            cnt[8 + b][(p >> (8 * b)) & 0xff]++;
        }
        cnt[16][nulls_first ? !k[i].on : k[i].on]++;
        cnt[17][k[i].pn]++;
    }
    /* least significant first: the order key, its NULL placement, then the
     * partition key and its NULL flag */
    static const int pass[DIGITS] = {0, 1, 2, 3, 4, 5, 6, 7, 16, 8, 9, 10, 11, 12, 13, 14, 15, 17};
    pkey *src = k, *dst = tmp;
    for (int pi = 0; pi < DIGITS; pi++) {
        int d = pass[pi];
        uint32_t *c = cnt[d];
        bool one = false;
        for (int b = 0; b < 256; b++)
            if (c[b] == n) {
                one = true;
                break;
            }
        if (one)
            continue;
        uint32_t at = 0;
        for (int b = 0; b < 256; b++) {
            uint32_t m = c[b];
            c[b] = at;
            at += m;
        }
        for (uint32_t i = 0; i < n; i++)
            dst[c[digit(&src[i], d, desc, nulls_first)]++] = src[i];
        pkey *t = src;
        src = dst;
        dst = t;
    }
    free(cnt);
    return src;
}

/* ---- one integer partition key and order key packed in 64 bits ---------- */

/* When the spans of both keys (max - min) and their NULL flags fit in 64
 * bits, a row's sort key is one word: partition NULL flag, partition key
 * minus its minimum, the order key's NULL placement, the order key from its
 * minimum (from its maximum for DESC). The rows are sorted as (key, row)
 * pairs by an 11-bit radix: first by the key's top digit into buckets (one
 * stable pass), then each bucket by the rest with least-significant-digit
 * passes, the buckets shared by nthreads threads. */
typedef struct __attribute__((packed)) kr {
    uint64_t k;
    uint32_t r;
} kr; /* 12 bytes, not 16: the two arrays of pairs are the sort's memory */

enum { KR_BITS = 11, KR_RADIX = 1 << KR_BITS };

typedef struct kr_job {
    kr *a, *b; /* the pairs after the bucket pass, and room of the same size */
    const uint32_t *start; /* KR_RADIX + 1 bucket bounds */
    int low_digits;        /* digits below the top one */
    _Atomic uint32_t *next_bucket;
    bool fail;
} kr_job;

/* Sorts a[lo..hi) by its low `digits` 11-bit digits, b as room; the result
 * ends in a. Digits every pair shares are skipped. */
static bool kr_lsd(kr *a, kr *b, uint32_t lo, uint32_t hi, int digits)
{
    uint32_t n = hi - lo;
    if (n < 2 || digits == 0)
        return true;
    if (n <= 64) { /* insertion sort: stable, and cheaper for few pairs */
        for (uint32_t i = lo + 1; i < hi; i++) {
            kr x = a[i];
            uint64_t mk = x.k & ((1ull << (KR_BITS * digits)) - 1);
            uint32_t j = i;
            while (j > lo && (a[j - 1].k & ((1ull << (KR_BITS * digits)) - 1)) > mk) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = x;
        }
        return true;
    }
    uint32_t (*cnt)[KR_RADIX] = calloc((size_t)digits, sizeof(*cnt));
    if (!cnt)
        return false;
    for (uint32_t i = lo; i < hi; i++)
        for (int d = 0; d < digits; d++)
            cnt[d][(a[i].k >> (KR_BITS * d)) & (KR_RADIX - 1)]++;
    kr *src = a, *dst = b;
    for (int d = 0; d < digits; d++) {
        uint32_t *c = cnt[d], at = lo;
        if (c[(src[lo].k >> (KR_BITS * d)) & (KR_RADIX - 1)] == n)
            continue; /* one value of this digit */
        for (int v = 0; v < KR_RADIX; v++) {
            uint32_t m = c[v];
            c[v] = at;
            at += m;
        }
        for (uint32_t i = lo; i < hi; i++)
            dst[c[(src[i].k >> (KR_BITS * d)) & (KR_RADIX - 1)]++] = src[i];
        kr *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a + lo, src + lo, sizeof(kr) * n);
    free(cnt);
    return true;
}

static void *kr_main(void *arg)
{
    kr_job *j = arg;
    for (;;) {
        uint32_t bk = atomic_fetch_add(j->next_bucket, 1);
        if (bk >= KR_RADIX)
            break;
        if (!kr_lsd(j->a, j->b, j->start[bk], j->start[bk + 1], j->low_digits))
            j->fail = true;
    }
    return NULL;
}

/* Widens [*mn, *mx] to row i's value, or notes its NULL. */
static inline void span_add(const ex_vec *v, uint32_t i, int64_t *mn, int64_t *mx, bool *null)
{
    if (ex_null(v, i)) {
        *null = true;
        return;
    }
    int64_t x = v->i[ex_row(v, i)];
    *mn = x < *mn ? x : *mn;
    *mx = x > *mx ? x : *mx;
}

static int bits_of(uint64_t span)
{
    return span ? 64 - __builtin_clzll(span) : 0;
}

/* The packed sort (see above): false when the keys do not fit or memory
 * runs out (the caller sorts another way). */
static bool sort_packed(const wsort *so, uint32_t *pos, uint8_t *brk, uint32_t n)
{
    const witem *w = so->w;
    const rtab *t = so->t;
    if (w->n_part > 1 || w->n_ord > 1 || (w->n_part && !int_key(&t->c[w->part0])) ||
        (w->n_ord && !int_key(&t->c[w->ord0])) || n < 2)
        return false;
    const ex_vec *pv = w->n_part ? &t->c[w->part0] : NULL;
    const ex_vec *ov = w->n_ord ? &t->c[w->ord0] : NULL;
    bool desc = ov && so->win->order[0].desc, nfirst = ov && so->win->order[0].nulls == 1;
    int64_t pmin = INT64_MAX, pmax = INT64_MIN, omin = INT64_MAX, omax = INT64_MIN;
    bool pnull = false, onull = false;
    for (uint32_t i = 0; i < n; i++) {
        if (pv)
            span_add(pv, i, &pmin, &pmax, &pnull);
        if (ov)
            span_add(ov, i, &omin, &omax, &onull);
    }
    int pb = pmin <= pmax ? bits_of((uint64_t)pmax - (uint64_t)pmin) : 0;
    int ob = omin <= omax ? bits_of((uint64_t)omax - (uint64_t)omin) : 0;
    int onb = onull ? 1 : 0, pnb = pnull ? 1 : 0;
    int ord_bits = ob + onb, total = pnb + pb + ord_bits;
    if (total > 63)
        return false;
    kr *a = em_alloc(so->m, sizeof(kr) * (size_t)n), *b = em_alloc(so->m, sizeof(kr) * (size_t)n);
    uint32_t *start = calloc(KR_RADIX + 1, sizeof(uint32_t));
    if (!a || !b || !start) {
        em_free(so->m, a);
        em_free(so->m, b);
        free(start);
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t k = 0;
        if (pv) {
            bool nu = ex_null(pv, i);
            uint64_t x = nu ? 0 : (uint64_t)pv->i[ex_row(pv, i)] - (uint64_t)pmin;
            k = ((uint64_t)nu << pb | x) << ord_bits;
        }
        if (ov) {
            bool nu = ex_null(ov, i);
            uint64_t x = 0;
            if (!nu)
                x = desc ? (uint64_t)omax - (uint64_t)ov->i[ex_row(ov, i)]
                         : (uint64_t)ov->i[ex_row(ov, i)] - (uint64_t)omin;
            uint64_t nb = onb ? (uint64_t)(nfirst ? !nu : nu) : 0;
            k |= nb << ob | x;
        }
        a[i] = (kr){k, i};
    }
    int digits = (total + KR_BITS - 1) / KR_BITS;
    bool ok = true;
    if (digits > 0) {
        /* the top digit: a stable pass into buckets */
        int top = KR_BITS * (digits - 1);
        for (uint32_t i = 0; i < n; i++)
            start[(a[i].k >> top) & (KR_RADIX - 1)]++;
        uint32_t at = 0;
        for (int v = 0; v <= KR_RADIX; v++) {
            uint32_t m = v < KR_RADIX ? start[v] : 0;
            start[v] = at;
            at += m;
        }
        uint32_t *fill = malloc(sizeof(uint32_t) * KR_RADIX);
        ok = fill != NULL;
        if (ok) {
            memcpy(fill, start, sizeof(uint32_t) * KR_RADIX);
            for (uint32_t i = 0; i < n; i++)
                b[fill[(a[i].k >> top) & (KR_RADIX - 1)]++] = a[i];
            free(fill);
            _Atomic uint32_t next = 0;
            kr_job job = {.a = b, .b = a, .start = start, .low_digits = digits - 1,
                          .next_bucket = &next};
            int nth = so->nthreads > 1 && n >= (1u << 15) ? so->nthreads : 1;
            if (nth > 16)
                nth = 16;
            kr_job jobs[16];
            for (int k = 0; k < nth; k++)
                jobs[k] = job;
            ok = eng__fan_out(kr_main, jobs, sizeof(jobs[0]), nth) == 0;
            for (int k = 0; k < nth; k++)
                ok &= !jobs[k].fail;
            kr *tmp = a; /* the sorted pairs are in b */
            a = b;
            b = tmp;
        }
    }
    if (ok) {
        uint64_t pmask = ~0ull << ord_bits;
        for (uint32_t i = 0; i < n; i++) {
            pos[i] = a[i].r;
            bool np = i == 0 || ((a[i].k ^ a[i - 1].k) & pmask) != 0;
            bool no = np || a[i].k != a[i - 1].k;
            brk[i] = (uint8_t)((np ? 1 : 0) | (no ? 2 : 0));
        }
    }
    em_free(so->m, a);
    em_free(so->m, b);
    free(start);
    return ok;
}

/* brk[p]: bit 0, sorted position p starts a partition; bit 1, a peer group
 * (its order keys differ from p - 1's, or it starts a partition). */
static void sort_positions(const wsort *so, uint32_t *pos, uint8_t *brk, uint32_t n)
{
    const witem *w = so->w;
    const rtab *t = so->t;
    if (sort_packed(so, pos, brk, n))
        return;
    if (w->n_part <= 1 && w->n_ord <= 1 && (!w->n_part || int_key(&t->c[w->part0])) &&
        (!w->n_ord || int_key(&t->c[w->ord0]))) {
        pkey *k = malloc(sizeof(pkey) * ((size_t)n + 1));
        pkey *tmp = k ? malloc(sizeof(pkey) * ((size_t)n + 1)) : NULL;
        if (k && tmp) {
            const ex_vec *pv = w->n_part ? &t->c[w->part0] : NULL;
            const ex_vec *ov = w->n_ord ? &t->c[w->ord0] : NULL;
            for (uint32_t i = 0; i < n; i++) {
                k[i].r = i;
                k[i].pn = pv && ex_null(pv, i);
                k[i].p = pv && !k[i].pn ? pv->i[ex_row(pv, i)] : 0;
                k[i].on = ov && ex_null(ov, i);
                k[i].o = ov && !k[i].on ? ov->i[ex_row(ov, i)] : 0;
            }
            pkey *s = pkey_radix(k, tmp, n, ov && so->win->order[0].desc,
                                 ov && so->win->order[0].nulls == 1);
            for (uint32_t i = 0; s && i < n; i++) {
                pos[i] = s[i].r;
                bool np = i == 0 || s[i].pn != s[i - 1].pn || (!s[i].pn && s[i].p != s[i - 1].p);
                bool no = np || s[i].on != s[i - 1].on || (!s[i].on && s[i].o != s[i - 1].o);
                brk[i] = (uint8_t)((np ? 1 : 0) | (no ? 2 : 0));
            }
            free(k);
            free(tmp);
            if (s)
                return;
        } else {
            free(k);
        }
    }
    for (uint32_t i = 0; i < n; i++)
        pos[i] = i;
    qsort_r(pos, n, sizeof(uint32_t), wcmp, (void *)so);
    for (uint32_t i = 0; i < n; i++) {
        bool np = i == 0 || cmp_part(so, pos[i - 1], pos[i]) != 0;
        bool no = np || cmp_ord(so, pos[i - 1], pos[i]) != 0;
        brk[i] = (uint8_t)((np ? 1 : 0) | (no ? 2 : 0));
    }
}

/* ---- one window ------------------------------------------------------------------ */

static ex_type result_type(const witem *w, const rtab *t)
{
    ex_type at = w->n_args ? t->c[w->arg0].t : (ex_type){.kind = EX_UINT, .bits = 64};
    switch (w->fn) {
    case WF_ROW_NUMBER:
    case WF_RANK:
    case WF_DENSE_RANK:
    case WF_COUNT: return (ex_type){.kind = EX_UINT, .bits = 64};
    case WF_SUM:
        if (at.kind == EX_FLOAT)
            return (ex_type){.kind = EX_FLOAT, .bits = 64, .nullable = at.nullable};
        if (at.kind == EX_UINT)
            return (ex_type){.kind = EX_UINT, .bits = 64, .nullable = at.nullable};
        return (ex_type){.kind = EX_INT, .bits = 64, .nullable = at.nullable};
    case WF_AVG: return (ex_type){.kind = EX_FLOAT, .bits = 64, .nullable = at.nullable};
    default: return at;
    }
}

/* Row r of src into row i of out (out's type; NULL or the default when
 * src is NULL or r is past the end). */
static int put_cell(eng_mem *m, ex_vec *out, uint32_t i, const ex_vec *src, int64_t r)
{
    bool nul = r < 0 || ex_null(src, (uint32_t)r);
    out->nulls[i] = nul && out->t.nullable;
    if (ex_is_bytes(out->t.kind)) {
        uint32_t l = 0;
        const uint8_t *s = (const uint8_t *)"";
        if (!nul)
            s = ex_str(src, (uint32_t)r, &l);
        return ex_vec_str_put(m, out, i, s, l);
    }
    if (out->t.kind == EX_FLOAT)
        out->d[i] = nul ? 0 : ex_f(src, (uint32_t)r);
    else if (out->t.kind != EX_NOTHING)
        out->i[i] = nul || src->t.kind == EX_NOTHING ? 0 : src->i[ex_row(src, (uint32_t)r)];
    return 0;
}

/* The frame of sorted position p in the partition [ps, pe): [*fs, *fe). */
static void frame_of(const sql_window *win, uint32_t ps, uint32_t pe, uint32_t p, uint32_t peer_end,
                     int64_t *fs, int64_t *fe)
{
    if (!win->has_frame) {
        *fs = ps;
        *fe = win->n_order ? peer_end : pe;
        return;
    }
    int64_t s = ps, e = pe;
    switch (win->start) {
    case SQL_FB_UNBOUNDED_PRECEDING: s = ps; break;
    case SQL_FB_PRECEDING: s = (int64_t)p - win->start_n; break;
    case SQL_FB_CURRENT: s = p; break;
    case SQL_FB_FOLLOWING: s = (int64_t)p + win->start_n; break;
    case SQL_FB_UNBOUNDED_FOLLOWING: s = pe; break;
    }
    switch (win->end) {
    case SQL_FB_UNBOUNDED_PRECEDING: e = ps; break;
    case SQL_FB_PRECEDING: e = (int64_t)p - win->end_n + 1; break;
    case SQL_FB_CURRENT: e = (int64_t)p + 1; break;
    case SQL_FB_FOLLOWING: e = (int64_t)p + win->end_n + 1; break;
    case SQL_FB_UNBOUNDED_FOLLOWING: e = pe; break;
    }
    if (s < ps)
        s = ps;
    if (e > pe)
        e = pe;
    if (e < s)
        e = s;
    *fs = s;
    *fe = e;
}

static int64_t arg_int(const ex_vec *v, uint32_t r, int64_t dflt)
{
    if (ex_null(v, r))
        return dflt;
    return v->t.kind == EX_FLOAT ? (int64_t)ex_f(v, r) : v->i[ex_row(v, r)];
}

/* w's result, a row per row of t: in t's order, or, with keep, in the
 * window's sorted order (result row p is t's row (*keep)[p]; *keep is the
 * caller's to free). */
static int compute(eng_mem *m, witem *w, const rtab *t, int nthreads, uint32_t **keep, char *err,
                   size_t errlen)
{
    const sql_window *win = w->n->win;
    uint32_t n = t->n;
    ex_type rt = result_type(w, t);
    ex_type at = rt;
    at.nullable = true;
    uint32_t *pos = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    uint8_t *brk = malloc((size_t)n + 1);
    /* prefix sums: only the frame aggregates over an argument read them */
    const ex_vec *a0 = w->n_args ? &t->c[w->arg0] : NULL;
    bool sums = a0 && (w->fn == WF_SUM || w->fn == WF_AVG || w->fn == WF_COUNT);
    size_t ns = sums ? (size_t)n + 1 : 1;
    double *ps_d = malloc(sizeof(double) * ns);
    int64_t *ps_i = malloc(sizeof(int64_t) * ns);
    uint32_t *ps_c = malloc(sizeof(uint32_t) * ns);
    /* strings go in row order: results are first kept per row, then put */
    int64_t *src_row = ex_is_bytes(rt.kind) ? malloc(sizeof(int64_t) * ((size_t)n + 1)) : NULL;
    int rc = 0;
    if (!pos || !brk || !ps_d || !ps_i || !ps_c || (ex_is_bytes(rt.kind) && !src_row)) {
        rc = -ENOMEM;
        goto out;
    }
    wsort so = {t, w, win, m, nthreads};
    sort_positions(&so, pos, brk, n);
    /* the result after the sort, whose room is freed by then */
    if (ex_vec_alloc(m, &w->res, at, n) < 0) {
        rc = -ENOMEM;
        goto out;
    }
    w->res.t = rt;
    if (ex_is_bytes(rt.kind) && n)
        for (uint32_t i = 0; i <= n; i++)
            w->res.off[i] = 0;
    bool af = a0 && a0->t.kind == EX_FLOAT;
    for (uint32_t ps = 0; ps < n && rc == 0;) {
        uint32_t pe = ps + 1;
        while (pe < n && !(brk[pe] & 1))
            pe++;
        /* prefix sums of the argument over the partition */
        if (sums) {
            ps_d[ps] = 0;
            ps_i[ps] = 0;
            ps_c[ps] = 0;
            double sd = 0;
            int64_t si = 0;
            uint32_t sc = 0;
            for (uint32_t p = ps; p < pe; p++) {
                uint32_t r = pos[p];
                if (!ex_null(a0, r)) {
                    sc++;
                    if (af || w->fn == WF_AVG)
                        sd += ex_f(a0, r);
                    if (!af)
                        si = (int64_t)((uint64_t)si + (uint64_t)a0->i[ex_row(a0, r)]);
                }
                ps_d[p + 1] = sd;
                ps_i[p + 1] = si;
                ps_c[p + 1] = sc;
            }
        }
        uint32_t peer_start = ps, rank = 0, dense = 0;
        uint32_t peer_end = ps;
        for (uint32_t p = ps; p < pe && rc == 0; p++) {
            /* r: t's row (the arguments'); wr: the result's */
            uint32_t r = pos[p], wr = keep ? p : r;
            if (p == ps || (brk[p] & 2)) {
                peer_start = p;
                dense++;
                rank = p - ps + 1;
                peer_end = p + 1;
                while (peer_end < pe && !(brk[peer_end] & 2))
                    peer_end++;
            }
            int64_t fs, fe;
            frame_of(win, ps, pe, p, peer_end, &fs, &fe);
            (void)peer_start;
            ex_vec *o = &w->res;
            switch (w->fn) {
            case WF_ROW_NUMBER:
                o->i[wr] = (int64_t)(p - ps + 1);
                o->nulls[wr] = 0;
                break;
            case WF_RANK:
                o->i[wr] = rank;
                o->nulls[wr] = 0;
                break;
            case WF_DENSE_RANK:
                o->i[wr] = dense;
                o->nulls[wr] = 0;
                break;
            case WF_COUNT:
                o->nulls[wr] = 0;
                o->i[wr] = a0 ? (int64_t)(ps_c[fe] - ps_c[fs]) : fe - fs;
                break;
            case WF_SUM:
            case WF_AVG: {
                uint32_t c = ps_c[fe] - ps_c[fs];
                bool nul = c == 0 && a0->t.nullable;
                o->nulls[wr] = nul;
                if (w->fn == WF_AVG)
                    o->d[wr] = c ? (ps_d[fe] - ps_d[fs]) / c : NAN;
                else if (af)
                    o->d[wr] = ps_d[fe] - ps_d[fs];
                else
                    o->i[wr] = (int64_t)((uint64_t)ps_i[fe] - (uint64_t)ps_i[fs]);
                break;
            }
            case WF_MIN:
            case WF_MAX: {
                int64_t best = -1;
                for (int64_t x = fs; x < fe; x++) {
                    uint32_t xr = pos[x];
                    if (ex_null(a0, xr))
                        continue;
                    if (best < 0) {
                        best = xr;
                        continue;
                    }
                    int c = cmp_val(a0, xr, (uint32_t)best, false, false);
                    if ((w->fn == WF_MIN && c < 0) || (w->fn == WF_MAX && c > 0))
                        best = xr;
                }
                if (src_row)
                    src_row[wr] = best;
                else
                    rc = put_cell(m, o, wr, a0, best);
                break;
            }
            default: { /* lag, lead, lagInFrame, leadInFrame */
                int64_t off = w->n_args > 1 ? arg_int(&t->c[w->arg0 + 1], r, 1) : 1;
                bool back = w->fn == WF_LAG || w->fn == WF_LAG_FRAME;
                int64_t tp = back ? (int64_t)p - off : (int64_t)p + off;
                bool in =
                    w->fn == WF_LAG || w->fn == WF_LEAD ? tp >= ps && tp < pe : tp >= fs && tp < fe;
                int64_t from = in ? (int64_t)pos[tp] : -1;
                const ex_vec *src = a0;
                if (!in && w->n_args > 2) {
                    src = &t->c[w->arg0 + 2];
                    from = r;
                }
                if (src_row) {
                    /* the default's column is not the argument's: kept as -2 - r */
                    src_row[wr] = src == a0 ? from : -2 - (int64_t)r;
                } else {
                    rc = put_cell(m, o, wr, src, from);
                }
                break;
            }
            }
        }
        ps = pe;
    }
    for (uint32_t r = 0; src_row && rc == 0 && r < n; r++) {
        int64_t from = src_row[r];
        if (from <= -2)
            rc = put_cell(m, &w->res, r, &t->c[w->arg0 + 2], -2 - from);
        else
            rc = put_cell(m, &w->res, r, a0, from);
    }
out:
    if (keep && rc == 0) {
        *keep = pos;
        pos = NULL;
    }
    free(pos);
    free(brk);
    free(ps_d);
    free(ps_i);
    free(ps_c);
    free(src_row);
    if (rc < 0)
        goto oom;
    return 0;
oom:
    return em_oom(m, err, errlen);
}

/* ---- the statement ------------------------------------------------------------- */

typedef struct inner {
    sql_stmt st;    /* borrows the outer statement's nodes */
    char **aliases; /* the hidden columns' names (owned) */
    int n_aliases;
} inner;

static int add_item(inner *in, sql_node *e, char kind, int a, int b)
{
    sql_select_item *it = realloc(in->st.items, sizeof(*it) * (size_t)(in->st.n_items + 1));
    char **al = realloc(in->aliases, sizeof(char *) * (size_t)(in->n_aliases + 1));
    if (it)
        in->st.items = it;
    if (al)
        in->aliases = al;
    if (!it || !al)
        return -ENOMEM;
    char *name = NULL;
    if (kind) {
        char buf[64];
        snprintf(buf, sizeof(buf), "__w%c%d_%d", kind, a, b);
        if (!(name = strdup(buf)))
            return -ENOMEM;
        in->aliases[in->n_aliases++] = name;
    }
    memset(&it[in->st.n_items], 0, sizeof(*it));
    it[in->st.n_items].expr = e;
    it[in->st.n_items].alias = name;
    in->st.n_items++;
    return in->st.n_items - 1;
}

static void inner_free(inner *in)
{
    free(in->st.items);
    for (int i = 0; i < in->n_aliases; i++)
        free(in->aliases[i]);
    free(in->aliases);
}

int eng__run_window(equery *q, const sql_stmt *st, eng_format fmt, char *err, size_t errlen)
{
    int nw = 0;
    for (int i = 0; i < st->n_items; i++) {
        const sql_node *e = st->items[i].expr;
        if (e->kind == SQL_FUNC && e->win) {
            nw++;
            for (int k = 0; k < e->nargs; k++)
                if (nested_window(e->args[k], 0)) {
                    snprintf(err, errlen, "line %d, column %d: window functions cannot be nested",
                             e->args[k]->line, e->args[k]->col);
                    return -EINVAL;
                }
        } else if (nested_window(e, 0)) {
            snprintf(err, errlen,
                     "line %d, column %d: a window function must be a whole item "
                     "of the SELECT list (compute with it in an outer query)",
                     e->line, e->col);
            return -EINVAL;
        }
    }
    if (st->distinct || st->n_limit_by) {
        snprintf(err, errlen,
                 "line %d, column %d: %s with window functions is not supported: "
                 "apply it in an outer query",
                 st->line, st->col, st->distinct ? "SELECT DISTINCT" : "LIMIT BY");
        return -ENOTSUP;
    }
    int n_wide = 0;
    bool modified = false;
    for (int i = 0; i < st->n_items; i++) {
        const sql_select_item *it = &st->items[i];
        bool wide = it->expr->kind == SQL_STAR || it->expr->kind == SQL_COLUMNS;
        n_wide += wide;
        modified |= wide && (it->expr->kind == SQL_COLUMNS || it->n_except || it->n_replace);
    }
    if (n_wide > 1 && modified) {
        snprintf(err, errlen,
                 "line %d, column %d: window functions beside more than one * or "
                 "COLUMNS(...) of different widths are not supported: name the "
                 "columns",
                 st->line, st->col);
        return -ENOTSUP;
    }
    witem *ws = calloc((size_t)nw + 1, sizeof(witem));
    int *ord_col = calloc((size_t)st->n_order_by + 1, sizeof(int));
    inner in;
    memset(&in, 0, sizeof(in));
    in.st = *st;
    in.st.items = NULL;
    in.st.n_items = 0;
    in.st.order_by = NULL;
    in.st.n_order_by = 0;
    in.st.has_limit = false;
    in.st.limit = in.st.offset = 0;
    in.st.format = NULL;
    in.st.union_all = NULL;
    in.st.explain = SQL_EXPLAIN_NONE;
    eng_memtab mt;
    memset(&mt, 0, sizeof(mt));
    rtab fin;
    memset(&fin, 0, sizeof(fin));
    int rc = ws && ord_col ? 0 : -ENOMEM;
    int n_plain = 0;
    /* the other items first, then each window's columns, then ORDER BY's */
    for (int i = 0; rc == 0 && i < st->n_items; i++) {
        const sql_select_item *it = &st->items[i];
        if (it->expr->kind == SQL_FUNC && it->expr->win)
            continue;
        int k = add_item(&in, it->expr, 0, 0, 0);
        if (k < 0) {
            rc = k;
        } else {
            sql_select_item *ii = &in.st.items[k];
            ii->alias = it->alias;
            ii->except = it->except; /* * EXCEPT / REPLACE: the inner query expands them */
            ii->n_except = it->n_except;
            ii->replace = it->replace;
            ii->n_replace = it->n_replace;
        }
        n_plain++;
    }
    int w = 0;
    for (int i = 0; rc == 0 && i < st->n_items; i++) {
        const sql_node *e = st->items[i].expr;
        if (!(e->kind == SQL_FUNC && e->win))
            continue;
        witem *wi = &ws[w];
        wi->n = e;
        wi->item = i;
        for (size_t f = 0; f < sizeof(wfns) / sizeof(wfns[0]); f++)
            if (strcasecmp(e->s, wfns[f].name) == 0) {
                wi->fn = wfns[f].fn;
                if (e->nargs < wfns[f].min || e->nargs > wfns[f].max) {
                    snprintf(err, errlen,
                             "line %d, column %d: window function %s takes %d to "
                             "%d arguments, not %d",
                             e->line, e->col, wfns[f].name, wfns[f].min, wfns[f].max, e->nargs);
                    rc = -EINVAL;
                }
            }
        if (rc == 0 && !wi->fn) {
            snprintf(err, errlen,
                     "line %d, column %d: %s() is not supported as a window function "
                     "(use row_number, rank, dense_rank, count, sum, avg, min, max, "
                     "lag, lead, lagInFrame or leadInFrame)",
                     e->line, e->col, e->s);
            rc = -EINVAL;
        }
        if (rc == 0 && e->nargs == 1 && e->args[0]->kind == SQL_STAR)
            wi->n_args = 0; /* count(*) */
        else
            wi->n_args = e->nargs;
        wi->arg0 = in.st.n_items;
        for (int k = 0; rc == 0 && k < wi->n_args; k++)
            if ((rc = add_item(&in, e->args[k], 'a', w, k)) > 0)
                rc = 0;
        wi->part0 = in.st.n_items;
        wi->n_part = e->win->n_partition;
        for (int k = 0; rc == 0 && k < wi->n_part; k++)
            if ((rc = add_item(&in, e->win->partition[k], 'p', w, k)) > 0)
                rc = 0;
        wi->ord0 = in.st.n_items;
        wi->n_ord = e->win->n_order;
        for (int k = 0; rc == 0 && k < wi->n_ord; k++)
            if ((rc = add_item(&in, e->win->order[k].expr, 'o', w, k)) > 0)
                rc = 0;
        w++;
    }
    /* ORDER BY: a window item's alias or position (-1 - item), else a column */
    for (int k = 0; rc == 0 && k < st->n_order_by; k++) {
        const sql_node *e = st->order_by[k].expr;
        ord_col[k] = INT32_MIN;
        if (e->kind == SQL_INT && !e->negated && e->u >= 1 && e->u <= (uint64_t)st->n_items) {
            ord_col[k] = -1 - (int)(e->u - 1);
            continue;
        }
        for (int i = 0; i < st->n_items && e->kind == SQL_COLUMN && !e->qual; i++)
            if (st->items[i].alias && strcmp(st->items[i].alias, e->s) == 0)
                ord_col[k] = -1 - i;
        if (ord_col[k] != INT32_MIN)
            continue;
        int c = add_item(&in, (sql_node *)e, 's', k, 0);
        if (c < 0)
            rc = c;
        else
            ord_col[k] = c;
    }
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    if (rc == 0)
        rc = eng__materialize(q, &in.st, &q->mem, &mt, err, errlen);
    /* without ORDER BY the rows come in the first window's order, as
     * ClickHouse's come out of its sort: that window's results are written
     * in turn, the other columns taken through its positions */
    uint32_t *pos0 = NULL;
    bool sorted_out = st->n_order_by == 0;
    for (int i = 0; rc == 0 && i < nw; i++)
        rc = compute(&q->mem, &ws[i], &mt.rows, q->set.max_threads,
                     i == 0 && sorted_out ? &pos0 : NULL, err, errlen);
    /* the result: the items in order (a star's columns in a row), then ORDER BY's keys */
    int plain_cols = rc == 0 ? mt.n_names - in.n_aliases : 0;
    int n_star = 0;
    for (int i = 0; i < st->n_items; i++)
        n_star += st->items[i].expr->kind == SQL_STAR || st->items[i].expr->kind == SQL_COLUMNS;
    int star_w = n_star ? (plain_cols - (n_plain - n_star)) / n_star : 0;
    int n_out = plain_cols + nw;
    int *src_col = calloc((size_t)n_out + (size_t)st->n_order_by + 1,
                          sizeof(int));                           /* >= 0: mt; < 0: -1 - window */
    int *item_col = calloc((size_t)st->n_items + 1, sizeof(int)); /* an item's first output */
    char **names = calloc((size_t)n_out + 1, sizeof(char *));
    ex_type *types = calloc((size_t)n_out + (size_t)st->n_order_by + 1, sizeof(ex_type));
    if (rc == 0 && (!src_col || !item_col || !names || !types)) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
    }
    for (int i = 0, o = 0, c = 0, wk = 0; rc == 0 && i < st->n_items; i++) {
        const sql_node *e = st->items[i].expr;
        item_col[i] = o;
        if (e->kind == SQL_FUNC && e->win) {
            src_col[o] = -1 - wk;
            types[o] = ws[wk].res.t;
            char nm[256];
            if (st->items[i].alias)
                snprintf(nm, sizeof(nm), "%s", st->items[i].alias);
            else
                sql_node_name(e, nm, sizeof(nm));
            names[o++] = strdup(nm);
            wk++;
            continue;
        }
        int width = e->kind == SQL_STAR || e->kind == SQL_COLUMNS ? star_w : 1;
        for (int x = 0; x < width; x++, c++) {
            src_col[o] = c;
            types[o] = mt.rows.c[c].t;
            names[o++] = strdup(mt.names[c]);
        }
    }
    for (int o = 0; rc == 0 && o < n_out; o++)
        if (!names[o]) {
            snprintf(err, errlen, "out of memory");
            rc = -ENOMEM;
        }
    for (int k = 0; rc == 0 && k < st->n_order_by; k++) {
        int oc = ord_col[k];
        int s = oc >= 0 ? oc : src_col[item_col[-1 - oc]];
        src_col[n_out + k] = s;
        types[n_out + k] = s >= 0 ? mt.rows.c[s].t : ws[-1 - s].res.t;
    }
    /* the windows' own columns (arguments, partition and order keys) are
     * done with once every window is computed: freed before the result is
     * built, unless the result shows them too */
    if (rc == 0) {
        bool *used = calloc((size_t)mt.rows.nc + 1, sizeof(bool));
        for (int k = 0; used && k < n_out + st->n_order_by; k++)
            if (src_col[k] >= 0)
                used[src_col[k]] = true;
        for (int c = 0; used && c < mt.rows.nc; c++)
            if (!used[c])
                ex_vec_clear(&q->mem, &mt.rows.c[c]);
        free(used);
    }
    if (rc == 0 && (rtab_init(&q->mem, &fin, types, n_out + st->n_order_by) < 0 ||
                    rtab_reserve(&q->mem, &fin, mt.rows.n) < 0))
        rc = -ENOMEM;
    /* a column at a time; the first window's result, already in the
     * output's order, is moved */
    for (int k = 0; rc == 0 && k < fin.nc; k++) {
        int s = src_col[k];
        if (pos0 && s == -1) {
            ex_vec tmp = fin.c[k];
            fin.c[k] = ws[0].res;
            ws[0].res = tmp;
            continue;
        }
        const ex_vec *v = s >= 0 ? &mt.rows.c[s] : &ws[-1 - s].res;
        for (uint32_t r = 0; rc == 0 && r < mt.rows.n; r++) {
            fin.n = r;
            rc = rtab_put(&q->mem, &fin, k, v, pos0 ? pos0[r] : r);
        }
    }
    fin.n = rc == 0 ? mt.rows.n : 0;
    free(pos0);
    eng_order *ords = calloc((size_t)st->n_order_by + 1, sizeof(eng_order));
    if (rc == 0 && !ords)
        rc = -ENOMEM;
    if (rc == 0) {
        eng_plan fp;
        memset(&fp, 0, sizeof(fp));
        for (int k = 0; k < st->n_order_by; k++) {
            ords[k].desc = st->order_by[k].desc;
            ords[k].nulls_first = st->order_by[k].nulls == 1;
        }
        fp.order = ords;
        fp.n_order = st->n_order_by;
        fp.has_limit = st->has_limit;
        fp.limit = st->limit;
        fp.offset = st->offset;
        rc = eng__order_and_cut(&q->mem, &fin, &fp, n_out, true);
    }
    if (rc == -ENOMEM) {
        if (atomic_load(&q->mem.failed_at))
            em_error(&q->mem, err, errlen);
        else if (!err[0])
            snprintf(err, errlen, "out of memory");
    }
    if (rc == 0) {
        q->keep.names = names;
        q->keep.n_names = n_out;
        names = NULL;
        q->rtypes = types;
        types = NULL;
        rc = eng__stmt_output(q, fmt, (const char *const *)q->keep.names, q->rtypes, n_out, err,
                              errlen);
    }
    if (rc == 0)
        rc = eng__out_table(&q->out, &fin, err, errlen);
    if (rc == 0) {
        eng_sink_stats ss = {eng__now_s() - q->t0, atomic_load(&q->stats.rows_read),
                             atomic_load(&q->stats.bytes_read)};
        rc = eng__out_end(&q->out, &ss, err, errlen);
    }
    free(ords);
    rtab_free(&q->mem, &fin);
    for (int i = 0; ws && i < nw; i++)
        ex_vec_clear(&q->mem, &ws[i].res);
    if (names)
        for (int o = 0; o < n_out; o++)
            free(names[o]);
    free(names);
    free(types);
    free(src_col);
    free(item_col);
    free(ws);
    free(ord_col);
    eng__memtab_free(&q->mem, &mt);
    inner_free(&in);
    return rc;
}
