/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_types.c: the engine's value layer: the memory tracker behind
 * max_memory_usage, engine types and their ClickHouse names, vectors (built
 * from batch columns without copying where the layouts agree), value
 * formatting as ClickHouse prints it, civil-date arithmetic (UTC), and the
 * "did you mean" suggestion used by every name lookup.
 */
#include "eng_types.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <malloc.h>
#include <sys/mman.h>

/* ---- memory --------------------------------------------------------------- */

/* Blocks of EM_BIG bytes and more (group tables, index slots, result
 * columns) are mapped directly and grown with mremap. Through malloc they
 * would land on the heap once the scan's freed buffers have raised glibc's
 * dynamic mmap threshold, where every doubling copies and leaves a hole
 * (bench/README.md, engine, has the figure). Mapped,
 * growing moves page tables instead of bytes, and pages never touched (the
 * unused tail of a doubled array) cost nothing.
 *
 * What a block is charged is what it really takes, so that the peak is
 * close to the memory the query touches: a heap block its whole chunk
 * (malloc_usable_size and the chunk's size word, not the bytes asked for:
 * small blocks are rounded up); a mapped block its pages, all of them once
 * written (em_alloc, em_realloc), or, for an array that grows by doubling
 * (em_grow), only the part its owner says is in use (em_use): the doubled
 * tail stays unwritten, and untouched pages are not memory.
 *
 *   block:  | size (8) | charged (8) | the caller's bytes ...
 *            <---- EM_HDR ---------->
 * The size says which kind a block is; charged is what em_free gives back. */
#define EM_BIG        (1u << 20)
#define EM_HDR        16
#define EM_CHUNK_WORD 8 /* glibc's size word in front of each heap chunk */

static bool em_add(eng_mem *m, int64_t n)
{
    if (!m)
        return true;
    int64_t now = atomic_fetch_add_explicit(&m->cur, n, memory_order_relaxed) + n;
    if (n > 0 && m->limit > 0 && now > m->limit) {
        atomic_fetch_sub_explicit(&m->cur, n, memory_order_relaxed);
        /* the total this attempt would have made, taken now: by the time the
           error is worded the query has let go of much of what it held */
        int64_t z = 0;
        if (atomic_compare_exchange_strong(&m->failed_at, &z, n))
            atomic_store(&m->failed_total, now);
        return false;
    }
    if (m->parent && !em_add(m->parent, n)) {
        /* the server's limit: this query's allocation fails, the parent
         * remembers nothing (other queries go on) */
        atomic_fetch_sub_explicit(&m->cur, n, memory_order_relaxed);
        int64_t z = 0;
        if (atomic_compare_exchange_strong(&m->failed_at, &z, n))
            atomic_store(&m->failed_parent, 1);
        atomic_store(&m->parent->failed_at, 0);
        return false;
    }
    int64_t p = atomic_load_explicit(&m->peak, memory_order_relaxed);
    while (now > p && !atomic_compare_exchange_weak(&m->peak, &p, now))
        ;
    return true;
}

bool em_account(eng_mem *m, int64_t delta)
{
    return em_add(m, delta);
}

/* A correction of what was charged, never refused (the allocation is made). */
static void em_account_over(eng_mem *m, int64_t delta)
{
    if (m)
        em_reserve(m, delta, -1);
}

/* em_reserve on m alone. */
static bool em_reserve_one(eng_mem *m, int64_t n, int64_t keep_free)
{
    if (n > 0 && m->limit > 0 && keep_free >= 0) {
        int64_t cur = atomic_load_explicit(&m->cur, memory_order_relaxed);
        do {
            if (cur + n > m->limit - keep_free)
                return false;
        } while (!atomic_compare_exchange_weak_explicit(
            &m->cur, &cur, cur + n, memory_order_relaxed, memory_order_relaxed));
        int64_t now = cur + n, p = atomic_load_explicit(&m->peak, memory_order_relaxed);
        while (now > p && !atomic_compare_exchange_weak(&m->peak, &p, now))
            ;
        return true;
    }
    int64_t now = atomic_fetch_add_explicit(&m->cur, n, memory_order_relaxed) + n;
    int64_t p = atomic_load_explicit(&m->peak, memory_order_relaxed);
    while (n > 0 && now > p && !atomic_compare_exchange_weak(&m->peak, &p, now))
        ;
    return true;
}

bool em_reserve(eng_mem *m, int64_t n, int64_t keep_free)
{
    if (!m)
        return true;
    if (m->parent && !em_reserve_one(m->parent, n, keep_free))
        return false;
    if (!em_reserve_one(m, n, keep_free)) {
        if (m->parent)
            em_reserve_one(m->parent, -n, -1);
        return false;
    }
    return true;
}

static void *em_map(size_t n)
{
    void *p = mmap(NULL, n + EM_HDR, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static size_t hdr_size(const uint8_t *b)
{
    size_t n;
    memcpy(&n, b, sizeof(n));
    return n;
}

static int64_t hdr_charged(const uint8_t *b)
{
    int64_t c;
    memcpy(&c, b + 8, sizeof(c));
    return c;
}

static void hdr_set(uint8_t *b, size_t n, int64_t charged)
{
    memcpy(b, &n, sizeof(n));
    memcpy(b + 8, &charged, sizeof(charged));
}

/* What a heap block of the caller's n bytes takes: its chunk. */
static int64_t heap_cost(const uint8_t *b)
{
    return (int64_t)(malloc_usable_size((void *)b) + EM_CHUNK_WORD);
}

void *em_alloc(eng_mem *m, size_t n)
{
    int64_t est = (int64_t)(n + EM_HDR);
    if (!em_add(m, est))
        return NULL;
    uint8_t *p = n >= EM_BIG ? em_map(n) : malloc(n + EM_HDR);
    if (!p) {
        em_add(m, -est);
        return NULL;
    }
    int64_t cost = n >= EM_BIG ? est : heap_cost(p);
    if (cost != est)
        em_account_over(m, cost - est);
    hdr_set(p, n, cost);
    return p + EM_HDR;
}

/* A zeroed mapping is backed before it is used: the callers (hash tables)
 * read a slot before they write it, and a fresh page read first is the
 * shared zero page, so its write faults again and replaces it, a TLB
 * shootdown of every thread of the process (an IPI per page, the most of
 * a two-thread count(DISTINCT)'s time). Backed at once, by a write per page
 * where MADV_POPULATE_WRITE is missing. (Huge pages were tried: the kernel's
 * compaction and zeroing of them cost more system time than the fewer TLB
 * misses saved, 0.3-1.6 s more on a 20M-row count(DISTINCT).) */
static void em_back(uint8_t *b, size_t len)
{
#ifdef MADV_POPULATE_WRITE
    if (madvise(b, len, MADV_POPULATE_WRITE) == 0)
        return;
#endif
    for (size_t o = 0; o < len; o += 4096)
        ((volatile uint8_t *)b)[o] = 0;
}

void *em_calloc(eng_mem *m, size_t n)
{
    uint8_t *p = em_alloc(m, n);
    if (p && n < EM_BIG)
        memset(p, 0, n);
    else if (p) /* fresh mappings are zero */
        em_back(p - EM_HDR, n + EM_HDR);
    return p;
}

void em_free(eng_mem *m, void *p)
{
    if (!p)
        return;
    uint8_t *b = (uint8_t *)p - EM_HDR;
    size_t n = hdr_size(b);
    em_add(m, -hdr_charged(b));
    if (n >= EM_BIG)
        munmap(b, n + EM_HDR);
    else
        free(b);
}

/* ThreadSanitizer does not see mremap (its runtime has no interceptor for
 * it): a range that mremap moved a block away from keeps that block's
 * access history, and when another thread's block is later moved there,
 * its first write reads as a race with the first owner. Under TSan a big
 * block grows by a new mapping, a copy and munmap, which it does see. */
#if defined(__SANITIZE_THREAD__)
#define EM_MREMAP 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define EM_MREMAP 0
#endif
#endif
#ifndef EM_MREMAP
#define EM_MREMAP 1
#endif

/* em_realloc and em_grow: the block resized to n; a mapped result is charged
 * `want` bytes (with the header) when want >= 0, else what it was charged
 * before (a heap block's bytes moved into a mapping were written: charged). */
static void *em_resize(eng_mem *m, void *p, size_t n, int64_t want)
{
    if (!p) {
        if (want >= 0 || n < EM_BIG)
            return em_alloc(m, n);
        /* a new growable mapping: only its header is written so far */
        if (!em_add(m, EM_HDR))
            return NULL;
        uint8_t *nb = em_map(n);
        if (!nb) {
            em_add(m, -EM_HDR);
            return NULL;
        }
        hdr_set(nb, n, EM_HDR);
        return nb + EM_HDR;
    }
    uint8_t *b = (uint8_t *)p - EM_HDR;
    size_t old = hdr_size(b);
    int64_t was = hdr_charged(b);
    /* what the result will be charged: known now for a mapping, estimated
       for the heap (corrected once malloc says) */
    int64_t will = n >= EM_BIG ? (want >= 0 ? want : was) : (int64_t)(n + EM_HDR);
    if (n >= EM_BIG && will > (int64_t)(n + EM_HDR))
        will = (int64_t)(n + EM_HDR);
    if (n >= EM_BIG && will < was && old < EM_BIG)
        will = was; /* the heap bytes copied in are written */
    int64_t added = will > was ? will - was : 0;
    if (added && !em_add(m, added))
        return NULL;
    uint8_t *nb;
    if (old >= EM_BIG && n >= EM_BIG && EM_MREMAP) {
        nb = mremap(b, old + EM_HDR, n + EM_HDR, MREMAP_MAYMOVE);
        if (nb == MAP_FAILED)
            nb = NULL;
    } else if (old < EM_BIG && n < EM_BIG) {
        nb = realloc(b, n + EM_HDR);
    } else {
        /* crossing EM_BIG (or a mapping under TSan): a new block */
        nb = n >= EM_BIG ? em_map(n) : malloc(n + EM_HDR);
        if (nb) {
            memcpy(nb + EM_HDR, b + EM_HDR, n < old ? n : old);
            if (old >= EM_BIG)
                munmap(b, old + EM_HDR);
            else
                free(b);
        }
    }
    if (!nb) {
        em_add(m, -added);
        return NULL;
    }
    if (n < EM_BIG)
        will = heap_cost(nb);
    int64_t rest = will - was - added; /* an estimate corrected, or a block that shrank */
    if (rest > 0)
        em_account_over(m, rest);
    else if (rest < 0)
        em_add(m, rest);
    hdr_set(nb, n, will);
    return nb + EM_HDR;
}

void *em_realloc(eng_mem *m, void *p, size_t n)
{
    return em_resize(m, p, n, (int64_t)(n + EM_HDR));
}

void *em_grow(eng_mem *m, void *p, size_t n)
{
    return em_resize(m, p, n, -1);
}

bool em_use(eng_mem *m, void *p, size_t used)
{
    if (!p)
        return true;
    uint8_t *b = (uint8_t *)p - EM_HDR;
    size_t n = hdr_size(b);
    if (n < EM_BIG)
        return true; /* heap blocks are charged whole */
    int64_t want = (int64_t)((used < n ? used : n) + EM_HDR);
    int64_t was = hdr_charged(b);
    if (want <= was)
        return true;
    if (!em_add(m, want - was))
        return false;
    hdr_set(b, n, want);
    return true;
}

size_t em_size(const void *p)
{
    return p ? hdr_size((const uint8_t *)p - EM_HDR) : 0;
}

static void fmt_bytes(double b, char *buf, size_t cap)
{
    static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int k = 0;
    while (b >= 1024 && k < 4) {
        b /= 1024;
        k++;
    }
    snprintf(buf, cap, "%.2f %s", b, u[k]);
}

int em_oom(eng_mem *m, char *err, size_t errlen)
{
    if (m && atomic_load(&m->failed_at))
        em_error(m, err, errlen);
    else
        snprintf(err, errlen, "out of memory");
    return -ENOMEM;
}

void em_error(eng_mem *m, char *err, size_t errlen)
{
    char a[32], b[32], c[32];
    int64_t at = atomic_load(&m->failed_at);
    if (atomic_load(&m->failed_parent) && m->parent) {
        fmt_bytes((double)(atomic_load(&m->parent->cur) + at), a, sizeof(a));
        fmt_bytes((double)at, b, sizeof(b));
        fmt_bytes((double)m->parent->limit, c, sizeof(c));
        snprintf(err, errlen,
                 "memory limit (total) exceeded: would use %s (attempt to allocate a chunk of "
                 "%s), maximum: %s; this query was stopped so that the others go on (the "
                 "server's max_server_memory_usage; this query used %lld bytes)",
                 a, b, c, (long long)atomic_load(&m->cur));
        return;
    }
    int64_t total = atomic_load(&m->failed_total);
    int64_t would = total ? total : atomic_load(&m->cur) + at;
    fmt_bytes((double)would, a, sizeof(a));
    fmt_bytes((double)at, b, sizeof(b));
    fmt_bytes((double)m->limit, c, sizeof(c));
    if (strcmp(a, c) == 0) { /* "would use 1.91 MiB, maximum: 1.91 MiB": say the bytes */
        snprintf(a, sizeof(a), "%lld bytes", (long long)would);
        snprintf(c, sizeof(c), "%lld bytes", (long long)m->limit);
    }
    snprintf(err, errlen,
             "memory limit (for query) exceeded: would use %s (attempt to allocate a chunk of "
             "%s), maximum: %s; raise it with SETTINGS max_memory_usage = N, or make the query "
             "need less (fewer groups, a LIMIT with ORDER BY, fewer max_threads)",
             a, b, c);
}

/* ---- types ---------------------------------------------------------------- */

void ex_type_name(const ex_type *t, char *buf, size_t cap)
{
    char inner[64];
    if (t->kind == EX_ARRAY) {
        ex_type e = ex_arr_elem(t);
        char en[128];
        if (e.kind == EX_NOTHING && !t->enull)
            snprintf(en, sizeof(en), "Nothing"); /* [] */
        else
            ex_type_name(&e, en, sizeof(en));
        snprintf(buf, cap, "Array(%s)", en);
        return;
    }
    switch (t->kind) {
    case EX_NOTHING: snprintf(buf, cap, "Nullable(Nothing)"); return;
    case EX_BOOL: snprintf(inner, sizeof(inner), "Bool"); break;
    case EX_INT: snprintf(inner, sizeof(inner), "Int%d", t->bits ? t->bits : 64); break;
    case EX_UINT: snprintf(inner, sizeof(inner), "UInt%d", t->bits ? t->bits : 64); break;
    case EX_FLOAT: snprintf(inner, sizeof(inner), "Float%d", t->bits == 32 ? 32 : 64); break;
    case EX_STRING: snprintf(inner, sizeof(inner), "String"); break;
    case EX_DATE: snprintf(inner, sizeof(inner), t->bits == 32 ? "Date32" : "Date"); break;
    case EX_DATETIME:
        if (t->scale)
            snprintf(inner, sizeof(inner), t->utc ? "DateTime64(%d, 'UTC')" : "DateTime64(%d)",
                     t->scale);
        else
            snprintf(inner, sizeof(inner), "DateTime");
        break;
    case EX_DECIMAL: snprintf(inner, sizeof(inner), "Decimal(%d, %d)", t->prec, t->scale); break;
    default: snprintf(inner, sizeof(inner), "?"); break;
    }
    if (t->nullable)
        snprintf(buf, cap, "Nullable(%s)", inner);
    else
        snprintf(buf, cap, "%s", inner);
}

ex_type ex_type_of_column(const cb_typeinfo *ti, bool nullable)
{
    ex_type t = {.nullable = nullable};
    switch (ti->type) {
    case CB_BOOL: t.kind = EX_BOOL; break;
    case CB_INT8:
        t.kind = EX_INT;
        t.bits = 8;
        break;
    case CB_INT16:
        t.kind = EX_INT;
        t.bits = 16;
        break;
    case CB_INT32:
        t.kind = EX_INT;
        t.bits = 32;
        break;
    case CB_INT64:
    case CB_TIME:
        t.kind = EX_INT;
        t.bits = 64;
        break;
    case CB_UINT8:
        t.kind = EX_UINT;
        t.bits = 8;
        break;
    case CB_UINT16:
        t.kind = EX_UINT;
        t.bits = 16;
        break;
    case CB_UINT32:
        t.kind = EX_UINT;
        t.bits = 32;
        break;
    case CB_UINT64:
        t.kind = EX_UINT;
        t.bits = 64;
        break;
    case CB_FLOAT:
        t.kind = EX_FLOAT;
        t.bits = 32;
        break;
    case CB_DOUBLE:
        t.kind = EX_FLOAT;
        t.bits = 64;
        break;
    case CB_DECIMAL: t = ex_decimal_type(ti->precision, ti->scale, nullable); break;
    case CB_DATE:
        t.kind = EX_DATE;
        t.bits = 32;
        break;
    case CB_TIMESTAMP:
        t.kind = EX_DATETIME;
        t.scale = ti->unit == CB_UNIT_MS   ? 3
                  : ti->unit == CB_UNIT_US ? 6
                  : ti->unit == CB_UNIT_NS ? 9
                                           : 0;
        t.utc = ti->utc;
        break;
    case CB_STRING:
    case CB_BINARY: t.kind = EX_STRING; break;
    case CB_LIST: {
        cb_typeinfo ei = *ti;
        ei.type = ti->elem == CB_LIST ? CB_BINARY : ti->elem;
        return ex_arr_of(ex_type_of_column(&ei, ti->elem_null));
    }
    }
    return t;
}

/* ---- vectors -------------------------------------------------------------- */

void ex_vec_clear(eng_mem *m, ex_vec *v)
{
    if (v->own & EXO_I)
        em_free(m, v->i);
    if (v->own & EXO_D)
        em_free(m, v->d);
    if (v->own & EXO_OFF)
        em_free(m, v->off);
    if (v->own & EXO_DATA)
        em_free(m, v->data);
    if (v->own & EXO_IDX)
        em_free(m, v->idx);
    if (v->own & EXO_NULLS)
        em_free(m, v->nulls);
    memset(v, 0, sizeof(*v));
}

int ex_vec_alloc(eng_mem *m, ex_vec *v, ex_type t, uint32_t n)
{
    memset(v, 0, sizeof(*v));
    v->t = t;
    v->n = n;
    size_t cnt = n ? n : 1;
    if (t.kind == EX_FLOAT) {
        if (!(v->d = em_alloc(m, cnt * sizeof(double))))
            return -ENOMEM;
        v->own |= EXO_D;
    } else if (ex_is_bytes(t.kind)) {
        if (!(v->off = em_alloc(m, (cnt + 1) * sizeof(uint32_t))))
            return -ENOMEM;
        v->off[0] = 0;
        v->own |= EXO_OFF;
    } else if (t.kind != EX_NOTHING) {
        if (!(v->i = em_alloc(m, cnt * sizeof(int64_t))))
            return -ENOMEM;
        v->own |= EXO_I;
    }
    if (t.nullable || t.kind == EX_NOTHING) {
        if (!(v->nulls = em_calloc(m, cnt))) {
            ex_vec_clear(m, v);
            return -ENOMEM;
        }
        v->own |= EXO_NULLS;
    }
    return 0;
}

/* Appends row r's bytes (rows must be put in order 0, 1, ...). */
int ex_vec_str_put(eng_mem *m, ex_vec *v, uint32_t r, const void *s, size_t len)
{
    size_t need = (size_t)v->off[r] + len;
    if (need > UINT32_MAX)
        return -E2BIG;
    if (need > v->data_cap) {
        /* data_cap is what may be written: the block doubles as it fills, and
           is charged a step (a 32nd of it) ahead of the bytes written */
        size_t size = em_size(v->data);
        if (need > size) {
            size_t cap = size ? size * 2 : 256;
            while (cap < need)
                cap *= 2;
            uint8_t *d = em_grow(m, v->data, cap);
            if (!d)
                return -ENOMEM;
            v->data = d;
            v->own |= EXO_DATA;
            size = cap;
        }
        size_t use = need + size / 32;
        if (use > size)
            use = size;
        if (!em_use(m, v->data, use))
            return -ENOMEM;
        v->data_cap = use;
    }
    if (len)
        memcpy(v->data + v->off[r], s, len);
    v->off[r + 1] = (uint32_t)need;
    return 0;
}

int ex_vec_from_column(eng_mem *m, const cb_column *c, ex_vec *v)
{
    memset(v, 0, sizeof(*v));
    v->t = ex_type_of_column(&c->info, c->null_count > 0);
    v->n = c->n;
    uint32_t n = c->n;
    size_t cnt = n ? n : 1;
    switch (c->info.type) {
    case CB_INT64:
    case CB_UINT64:
    case CB_TIME:
    case CB_TIMESTAMP: v->i = (int64_t *)c->values; break;
    case CB_DOUBLE: v->d = (double *)c->values; break;
    case CB_FLOAT: {
        if (!(v->d = em_alloc(m, cnt * sizeof(double))))
            return -ENOMEM;
        v->own |= EXO_D;
        const float *f = c->values;
        for (uint32_t r = 0; r < n; r++)
            v->d[r] = f[r];
        break;
    }
    case CB_DECIMAL: {
        if (c->info.precision <= 18) {
            v->i = (int64_t *)c->values;
            break;
        }
        /* wider decimals: exact while each value fits 64 bits (a NULL's slot may hold anything) */
        if (c->info.scale > 18)
            return -ERANGE;
        if (!(v->i = em_alloc(m, cnt * sizeof(int64_t))))
            return -ENOMEM;
        v->own |= EXO_I;
        const cb_i128 *x = c->values;
        for (uint32_t r = 0; r < n; r++) {
            bool valid = !c->validity || (c->validity[r >> 3] & (1u << (r & 7)));
            int64_t lo = (int64_t)x[r].lo;
            if (valid && x[r].hi != (lo < 0 ? -1 : 0)) {
                ex_vec_clear(m, v);
                return -ERANGE;
            }
            v->i[r] = valid ? lo : 0;
        }
        break;
    }
    case CB_STRING:
    case CB_BINARY:
    case CB_LIST:
        if (c->dict) {
            v->dict = c->dict;
            v->idx = c->indices;
        } else {
            v->off = c->offsets;
            v->data = c->data;
        }
        break;
    default: {
        if (!(v->i = em_alloc(m, cnt * sizeof(int64_t))))
            return -ENOMEM;
        v->own |= EXO_I;
        switch (c->info.type) {
        case CB_BOOL:
        case CB_UINT8:
            for (uint32_t r = 0; r < n; r++)
                v->i[r] = ((const uint8_t *)c->values)[r];
            break;
        case CB_INT8:
            for (uint32_t r = 0; r < n; r++)
                v->i[r] = ((const int8_t *)c->values)[r];
            break;
        case CB_INT16:
            for (uint32_t r = 0; r < n; r++)
                v->i[r] = ((const int16_t *)c->values)[r];
            break;
        case CB_UINT16:
            for (uint32_t r = 0; r < n; r++)
                v->i[r] = ((const uint16_t *)c->values)[r];
            break;
        case CB_INT32:
        case CB_DATE:
            for (uint32_t r = 0; r < n; r++)
                v->i[r] = ((const int32_t *)c->values)[r];
            break;
        case CB_UINT32:
            for (uint32_t r = 0; r < n; r++)
                v->i[r] = ((const uint32_t *)c->values)[r];
            break;
        default: ex_vec_clear(m, v); return -ENOTSUP;
        }
    }
    }
    if (c->null_count > 0 && c->validity) {
        if (!(v->nulls = em_alloc(m, cnt))) {
            ex_vec_clear(m, v);
            return -ENOMEM;
        }
        v->own |= EXO_NULLS;
        for (uint32_t r = 0; r < n; r++)
            v->nulls[r] = !(c->validity[r >> 3] & (1u << (r & 7)));
    }
    return 0;
}

/* ---- dates ---------------------------------------------------------------- */

/* Howard Hinnant's days_from_civil / civil_from_days algorithms (public
 * domain descriptions; written here from the published math). */
int64_t ex_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

void ex_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t yy = (int64_t)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = yy + (*m <= 2);
}

static bool digits(const char *s, size_t n, int64_t *out)
{
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return n > 0;
}

bool ex_parse_date(const char *s, size_t n, int64_t *days)
{
    int64_t y, m, d;
    if (n != 10 || s[4] != '-' || s[7] != '-' || !digits(s, 4, &y) || !digits(s + 5, 2, &m) ||
        !digits(s + 8, 2, &d) || m < 1 || m > 12 || d < 1 || d > 31)
        return false;
    *days = ex_days_from_civil(y, (unsigned)m, (unsigned)d);
    return true;
}

bool ex_parse_datetime(const char *s, size_t n, int scale, int64_t *out, int *scale_seen)
{
    int64_t days, hh, mm, ss;
    if (n < 19 || !ex_parse_date(s, 10, &days) || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' ||
        s[16] != ':' || !digits(s + 11, 2, &hh) || !digits(s + 14, 2, &mm) ||
        !digits(s + 17, 2, &ss) || hh > 23 || mm > 59 || ss > 60)
        return false;
    int64_t frac = 0;
    int fd = 0;
    size_t p = 19;
    if (p < n && s[p] == '.') {
        p++;
        while (p < n && isdigit((unsigned char)s[p])) {
            if (fd < 9) {
                frac = frac * 10 + (s[p] - '0');
                fd++;
            }
            p++;
        }
        if (fd == 0)
            return false;
    }
    if (p < n && s[p] == 'Z')
        p++;
    if (p != n)
        return false;
    int64_t v = days * 86400 + hh * 3600 + mm * 60 + ss;
    /* DateTime64(9) covers only about 1677..2262: refuse what overflows */
    for (int k = 0; k < scale; k++)
        if (__builtin_mul_overflow(v, 10, &v))
            return false;
    int64_t f = frac;
    for (int k = fd; k < scale; k++)
        f *= 10;
    for (int k = scale; k < fd; k++)
        f /= 10;
    if (__builtin_add_overflow(v, f, out))
        return false;
    if (scale_seen)
        *scale_seen = fd;
    return true;
}

/* ---- formatting ----------------------------------------------------------- */

size_t ex_fmt_double(double d, char *buf, size_t cap)
{
    if (isnan(d))
        return (size_t)snprintf(buf, cap, "nan");
    if (isinf(d))
        return (size_t)snprintf(buf, cap, d < 0 ? "-inf" : "inf");
    if (d == 0)
        return (size_t)snprintf(buf, cap, signbit(d) ? "-0" : "0");
    char e[40];
    int p;
    for (p = 1; p <= 17; p++) {
        snprintf(e, sizeof(e), "%.*e", p - 1, d);
        if (strtod(e, NULL) == d)
            break;
    }
    /* e: [-]D.DDDe[+-]XX -> digits and exponent */
    char dig[24];
    int nd = 0;
    const char *q = e;
    bool neg = false;
    if (*q == '-') {
        neg = true;
        q++;
    }
    for (; *q && *q != 'e'; q++)
        if (isdigit((unsigned char)*q))
            dig[nd++] = *q;
    int ex = atoi(q + 1);
    while (nd > 1 && dig[nd - 1] == '0')
        nd--;
    char out[64];
    size_t o = 0;
    if (neg)
        out[o++] = '-';
    if (ex >= 21 || ex < -7) {
        out[o++] = dig[0];
        if (nd > 1) {
            out[o++] = '.';
            for (int i = 1; i < nd; i++)
                out[o++] = dig[i];
        }
        o += (size_t)snprintf(out + o, sizeof(out) - o, "e%s%d", ex < 0 ? "-" : "+",
                              ex < 0 ? -ex : ex);
    } else if (ex >= 0) {
        for (int i = 0; i <= ex; i++)
            out[o++] = i < nd ? dig[i] : '0';
        if (nd > ex + 1) {
            out[o++] = '.';
            for (int i = ex + 1; i < nd; i++)
                out[o++] = dig[i];
        }
    } else {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = 0; i < -ex - 1; i++)
            out[o++] = '0';
        for (int i = 0; i < nd; i++)
            out[o++] = dig[i];
    }
    out[o] = 0;
    return (size_t)snprintf(buf, cap, "%s", out);
}

static size_t fmt_float32(float f, char *buf, size_t cap)
{
    if (isnan(f) || isinf(f) || f == 0)
        return ex_fmt_double(f, buf, cap);
    /* shortest decimal that reads back as the same float */
    for (int p = 1; p <= 9; p++) {
        char e[40];
        snprintf(e, sizeof(e), "%.*e", p - 1, (double)f);
        if (strtof(e, NULL) == f)
            return ex_fmt_double(strtod(e, NULL), buf, cap);
    }
    return ex_fmt_double(f, buf, cap);
}

size_t ex_fmt_value(const ex_vec *v, uint32_t r, char *buf, size_t cap, const uint8_t **sp)
{
    *sp = NULL;
    uint32_t k = ex_row(v, r);
    switch (v->t.kind) {
    case EX_NOTHING: return (size_t)snprintf(buf, cap, "\\N");
    case EX_BOOL: return (size_t)snprintf(buf, cap, "%s", v->i[k] ? "true" : "false");
    case EX_INT: return (size_t)snprintf(buf, cap, "%lld", (long long)v->i[k]);
    case EX_UINT: return (size_t)snprintf(buf, cap, "%llu", (unsigned long long)v->i[k]);
    case EX_FLOAT:
        if (v->t.bits == 32)
            return fmt_float32((float)v->d[k], buf, cap);
        return ex_fmt_double(v->d[k], buf, cap);
    case EX_STRING: {
        uint32_t len;
        *sp = ex_str(v, r, &len);
        return len;
    }
    case EX_DATE: {
        int64_t y;
        unsigned m, d;
        ex_civil_from_days(v->i[k], &y, &m, &d);
        return (size_t)snprintf(buf, cap, "%04lld-%02u-%02u", (long long)y, m, d);
    }
    case EX_DATETIME: {
        int64_t x = v->i[k], p = 1;
        for (int q = 0; q < v->t.scale; q++)
            p *= 10;
        int64_t s = x / p, f = x % p;
        if (f < 0) {
            f += p;
            s--;
        }
        int64_t days = s / 86400, sod = s % 86400;
        if (sod < 0) {
            sod += 86400;
            days--;
        }
        int64_t y;
        unsigned m, d;
        ex_civil_from_days(days, &y, &m, &d);
        size_t n = (size_t)snprintf(buf, cap, "%04lld-%02u-%02u %02d:%02d:%02d", (long long)y, m, d,
                                    (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60));
        if (v->t.scale && n < cap)
            n += (size_t)snprintf(buf + n, cap - n, ".%0*lld", v->t.scale, (long long)f);
        return n;
    }
    case EX_DECIMAL: return ex_fmt_decimal(v->i[k], v->t.scale, buf, cap);
    case EX_ARRAY: {
        /* the text, cut at cap (the sinks print whole arrays: sk_cell) */
        uint32_t len;
        const uint8_t *p = ex_str(v, r, &len);
        ex_bytes t = {0};
        size_t n = 0;
        if (ex_arr_text(&v->t, p, len, false, &t) == 0 && cap) {
            n = t.n < cap - 1 ? t.n : cap - 1;
            memcpy(buf, t.p, n);
            buf[n] = 0;
        }
        ex_bytes_free(&t);
        return n;
    }
    }
    return 0;
}

/* ---- suggestions ---------------------------------------------------------- */

static int dl_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > 64 || m > 64)
        return 1000;
    int d[65][65];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            int v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 &&
                tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == tolower((unsigned char)b[j - 1]) &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[n][m];
}

const char *eng_suggest(const char *name, const char *const *cands, int n)
{
    const char *best = NULL;
    int bd = 1 << 30;
    size_t ln = strlen(name);
    for (int i = 0; i < n; i++) {
        int dd = dl_distance(name, cands[i]);
        if (dd < bd) {
            bd = dd;
            best = cands[i];
        }
    }
    /* close: at most a third of the name's length (at least 1, at most 3);
     * a case-only difference always counts */
    int lim = (int)(ln / 3);
    if (lim < 1)
        lim = 1;
    if (lim > 3)
        lim = 3;
    if (best && bd <= lim)
        return best;
    return NULL;
}

/* ---- schemas ---------------------------------------------------------------- */

void eng_schema_free(eng_schema *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->cols[i].name);
    free(s->cols);
    s->cols = NULL;
    s->n = 0;
}

/* ---- views and failures ---------------------------------------------------------- */

void ex_vec_view(const ex_vec *v, uint32_t off, uint32_t n, ex_vec *out)
{
    *out = *v;
    out->own = 0;
    if (v->is_const)
        return;
    out->n = n;
    if (v->i)
        out->i = v->i + off;
    if (v->d)
        out->d = v->d + off;
    if (v->off)
        out->off = v->off + off;
    if (v->idx)
        out->idx = v->idx + off;
    if (v->nulls)
        out->nulls = v->nulls + off;
}

void eng_fail_init(eng_fail *f)
{
    pthread_mutex_init(&f->mu, NULL);
    atomic_init(&f->rc, 0);
    f->msg[0] = 0;
}

void eng_fail_deinit(eng_fail *f)
{
    pthread_mutex_destroy(&f->mu);
}

bool eng_fail_set(eng_fail *f, int rc, const char *msg)
{
    bool first = false;
    pthread_mutex_lock(&f->mu);
    if (!atomic_load(&f->rc)) {
        snprintf(f->msg, sizeof(f->msg), "%s", msg);
        atomic_store(&f->rc, rc);
        first = true;
    }
    pthread_mutex_unlock(&f->mu);
    return first;
}

/* ---- whole-string numbers ------------------------------------------------------ */

bool ex_parse_int(const uint8_t *s, size_t n, int64_t *out, bool *neg_ok)
{
    char b[40];
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (!n || n >= sizeof(b))
        return false;
    memcpy(b, s, n);
    b[n] = 0;
    char *end;
    errno = 0;
    if (b[0] == '-') {
        long long v = strtoll(b, &end, 10);
        *neg_ok = true;
        *out = v;
    } else {
        unsigned long long v = strtoull(b, &end, 10);
        *out = (int64_t)v;
        *neg_ok = false;
    }
    return !errno && *end == 0;
}

bool ex_parse_float(const uint8_t *s, size_t n, double *out)
{
    char b[128];
    if (!n || n >= sizeof(b))
        return false;
    memcpy(b, s, n);
    b[n] = 0;
    char *end;
    *out = strtod(b, &end);
    return end != b && *end == 0;
}

int64_t ex_int_wrap(const ex_type *t, int64_t v)
{
    if ((t->kind != EX_INT && t->kind != EX_UINT) || !t->bits || t->bits >= 64)
        return v;
    uint64_t mask = (1ull << t->bits) - 1, u = (uint64_t)v & mask;
    if (t->kind == EX_INT && (u >> (t->bits - 1)))
        u |= ~mask;
    return (int64_t)u;
}
