/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_agg.c: hash aggregation. Each worker owns an agg_tab: an open-addressing
 * index from the serialized GROUP BY key to a group id, and per aggregate a
 * column of states indexed by group id. A dictionary-encoded single string
 * key is mapped per dictionary entry (each entry the rows use hashed once per
 * dictionary, i.e. per row group, however the rows are sliced), then per row
 * by its index. Tables of several workers merge by key;
 * the result is a block of vectors: keys..., aggregates....
 *
 * Key serialization, per key column:
 *   [1 byte: 1 NULL, 0 value] then, for a value: 8 bytes (int64 / double
 *   bits) or [4-byte length][bytes] for strings; the last column's string
 *   has no length (the key's length implies it), so a one-string key is
 *   [0][bytes].
 *
 * Layout (one table per worker):
 *
 *   slots[mask + 1]  uint64: (hash >> 32) << 32 | (gid + 1); 0 empty; a
 *                    key's home slot is the low bits of the hash's top 32
 *                    (those stored); partitions take its topmost bits
 *   rec[cap]         per group, 16 bytes:
 *                    +----------------------+--------------+--------+
 *                    | key[0..8)            | key[8..12)   | len u32|
 *                    +----------------------+--------------+--------+
 *                    the key itself when it is at most 12 bytes (zero-
 *                    padded), else the first word is its offset in kbuf
 *
 * so a hit touches the slot and one record: two cache lines, and keys of up
 * to 12 bytes (a name, an integer) compare as two words. The slot keeps the
 * hash's top 32 bits, and they are all a lookup needs: growing the index
 * moves the slots by their own words, without reading a key (a merge walks
 * the source's groups in order and hashes their keys: in the slots' order
 * each would miss the cache on the source's side). With 2^b slots the
 * probe's 32-bit check has 32 - b bits the home did not already match (14
 * at 256k slots). Rows are
 * looked up a chunk at a time: keys serialized and hashed first, then probed
 * with the slot of a row a few ahead prefetched (and its record a little
 * later), so the cache misses of consecutive rows overlap instead of queuing.
 * A new group's states are set when it is inserted, so grown arrays are not
 * cleared and their untouched pages cost no memory.
 */
#include "eng_agg.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

/* Rows serialized and hashed before they are probed. */
#define AGG_CHUNK 2048
/* How far ahead the probe loop prefetches a slot, and a record. */
#define AGG_PF_SLOT 16
#define AGG_PF_REC  8

typedef struct uset {
    uint64_t *v; /* 0 = empty; value 0 stored as a flag */
    uint32_t n, mask;
    uint8_t shift; /* 64 - log2(mask + 1): a value's home is in its top bits */
    bool has_zero;
} uset;

/* The values quantile keeps: int64 or double bits (by the argument's kind). */
typedef struct qbuf {
    int64_t *v;
    uint32_t n, cap;
} qbuf;

/* groupArray, groupUniqArray, topK: the values as encoded Array elements of
 * the argument's type (eng_types.h), element k at b[off[k] .. off[k + 1]);
 * for groupUniqArray and topK a hash index of them (slot: k + 1, 0 empty)
 * and, for topK, each value's count. */
typedef struct vlist {
    uint8_t *b;
    size_t n, cap;
    uint32_t *off; /* cnt + 1 entries */
    uint32_t cnt, ecap;
    uint64_t *hits;
    uint32_t *slot;
    uint32_t mask;
} vlist;

typedef struct agg_col {
    int64_t *i;    /* sum int/uint, min/max/any int-like */
    double *d;     /* sum/avg float, min/max/any float; var/corr: mean (of x) */
    uint64_t *cnt; /* count, avg, var, corr */
    uint8_t *seen;
    uint8_t **s;            /* min/max/any strings (owned, 4-byte length prefix) */
    bool ovf;               /* a Decimal sum went past 64 bits */
    uset **u;               /* uniq: value hashes; -Distinct: the values' bits */
    double *m2;             /* var: the sum of squared deviations; corr: of x */
    double *my, *m2y, *cxy; /* corr: mean of y, its squared deviations, co-moment */
    qbuf **q;               /* quantile */
    int64_t *ki;            /* argMin/argMax: the key (int-like, or double bits) */
    uint8_t **ks;           /* argMin/argMax: a string key */
    vlist **vl;             /* groupArray, groupUniqArray, topK */
} agg_col;

#define AGG_INLINE 12

/* How many rows ahead the state updates of GROUP BY prefetch their group's
 * state (tables of many groups miss the cache on every row). */
#define AGG_PF_STATE 16

typedef struct grec {
    uint64_t k0;  /* len <= AGG_INLINE: key bytes 0..8; else offset in kbuf */
    uint32_t k1;  /* len <= AGG_INLINE: key bytes 8..12 (zero-padded) */
    uint32_t len; /* key bytes */
} grec;

struct i1e {
    int64_t k;
    uint32_t g;
};

struct agg_tab {
    eng_mem *mem;
    const eng_plan *p;
    uint32_t n, cap;  /* groups */
    uint32_t want;    /* agg_tab_reserve's groups: the arrays' first size */
    uint32_t charged; /* groups the per-group arrays are charged for (em_use) */
    uint64_t *slots;  /* (hash >> 32) << 32 | (gid + 1); 0 empty */
    uint32_t mask;
    grec *rec;     /* per group */
    uint8_t *kbuf; /* keys longer than 16 bytes */
    size_t klen, kcap, kcharged;
    agg_col *ac;
    /* scratch */
    uint8_t *scratch; /* serialized keys of a chunk (or of a dictionary) */
    size_t scratch_cap;
    uint32_t *ko, *kls; /* per key in scratch: offset, length */
    uint64_t *hs;       /* per key in scratch: hash */
    uint32_t kcap_rows;
    uint32_t *gids;
    uint32_t gids_cap;
    ex_bytes elem;  /* one value encoded as an Array element (vlist) */
    uint32_t *dmap; /* dictionary entry -> group, AGG_UNMAPPED until seen */
    uint32_t dmap_cap;
    cb_column *dmap_dict; /* the dictionary dmap is for (one reference) */
    /* one integer key: a map from the key's value to its group in front of
     * the table (no serializing, no XXH3, one cache miss a row where the
     * table takes two: its slot, then the group's key); groups are still
     * made by the table, so the map only remembers. Dropped past AGG_I1_MAX
     * groups (the table alone then) */
    struct i1e *i1; /* key and gid + 1 (0: empty) in one slot: one miss a row */
    uint32_t i1_mask, i1_n;
    bool i1_off;
    /* agg_tab_decode_merge: per group, the number of the last state that
     * touched it; a one-group table a state is read into before it merges */
    uint32_t *stamp;
    uint32_t stamp_cap, stamp_now;
    agg_tab *one;
};

#define AGG_I1_MAX (1u << 21)

#define AGG_UNMAPPED UINT32_MAX

static int tab_oom(agg_tab *t, char *err, size_t errlen)
{
    if (t->mem && atomic_load(&t->mem->failed_at))
        em_error(t->mem, err, errlen);
    else
        snprintf(err, errlen, "out of memory in GROUP BY");
    return -ENOMEM;
}

int agg_tab_create(agg_tab **out, eng_mem *m, const eng_plan *p)
{
    agg_tab *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->mem = m;
    t->p = p;
    t->ac = calloc((size_t)p->n_aggs + 1, sizeof(agg_col));
    t->mask = 1023;
    t->slots = em_calloc(m, (t->mask + 1) * sizeof(uint64_t));
    if (!t->ac || !t->slots) {
        agg_tab_destroy(&t);
        return -ENOMEM;
    }
    *out = t;
    return 0;
}

static void uset_free(eng_mem *m, uset *s)
{
    if (!s)
        return;
    em_free(m, s->v);
    em_free(m, s);
}

static void vlist_free(eng_mem *m, vlist *l)
{
    if (!l)
        return;
    em_free(m, l->b);
    em_free(m, l->off);
    em_free(m, l->hits);
    em_free(m, l->slot);
    em_free(m, l);
}

void agg_tab_destroy(agg_tab **tp)
{
    if (!tp || !*tp)
        return;
    agg_tab *t = *tp;
    eng_mem *m = t->mem;
    em_free(t->mem, t->i1);
    for (int a = 0; t->ac && a < t->p->n_aggs; a++) {
        agg_col *c = &t->ac[a];
        em_free(m, c->i);
        em_free(m, c->d);
        em_free(m, c->cnt);
        em_free(m, c->seen);
        if (c->s)
            for (uint32_t g = 0; g < t->n; g++)
                em_free(m, c->s[g]);
        em_free(m, c->s);
        if (c->u)
            for (uint32_t g = 0; g < t->n; g++)
                uset_free(m, c->u[g]);
        em_free(m, c->u);
        em_free(m, c->m2);
        em_free(m, c->my);
        em_free(m, c->m2y);
        em_free(m, c->cxy);
        if (c->q)
            for (uint32_t g = 0; g < t->n; g++)
                if (c->q[g]) {
                    em_free(m, c->q[g]->v);
                    em_free(m, c->q[g]);
                }
        em_free(m, c->q);
        em_free(m, c->ki);
        if (c->ks)
            for (uint32_t g = 0; g < t->n; g++)
                em_free(m, c->ks[g]);
        em_free(m, c->ks);
        if (c->vl)
            for (uint32_t g = 0; g < t->n; g++)
                vlist_free(m, c->vl[g]);
        em_free(m, c->vl);
    }
    ex_bytes_free(&t->elem);
    em_free(m, t->stamp);
    agg_tab_destroy(&t->one);
    free(t->ac);
    em_free(m, t->slots);
    em_free(m, t->rec);
    em_free(m, t->kbuf);
    free(t->scratch);
    free(t->ko);
    free(t->kls);
    free(t->hs);
    free(t->gids);
    free(t->dmap);
    cb_column_unref(t->dmap_dict);
    free(t);
    *tp = NULL;
}

uint32_t agg_tab_groups(const agg_tab *t)
{
    return t->n;
}

/* Charges the per-group arrays for groups up to rows (em_use: the doubled
 * tails are not written until groups come). */
static int charge_groups(agg_tab *t, uint32_t rows)
{
    eng_mem *m = t->mem;
    bool ok = em_use(m, t->rec, (size_t)rows * sizeof(grec));
    for (int a = 0; a < t->p->n_aggs && ok; a++) {
        agg_col *c = &t->ac[a];
        ok = em_use(m, c->seen, rows) && em_use(m, c->i, (size_t)rows * 8) &&
             em_use(m, c->d, (size_t)rows * 8) && em_use(m, c->cnt, (size_t)rows * 8) &&
             em_use(m, c->s, (size_t)rows * sizeof(uint8_t *)) &&
             em_use(m, c->u, (size_t)rows * sizeof(uset *)) && em_use(m, c->m2, (size_t)rows * 8) &&
             em_use(m, c->my, (size_t)rows * 8) && em_use(m, c->m2y, (size_t)rows * 8) &&
             em_use(m, c->cxy, (size_t)rows * 8) &&
             em_use(m, c->q, (size_t)rows * sizeof(qbuf *)) && em_use(m, c->ki, (size_t)rows * 8) &&
             em_use(m, c->ks, (size_t)rows * sizeof(uint8_t *)) &&
             em_use(m, c->vl, (size_t)rows * sizeof(vlist *));
    }
    if (!ok)
        return -ENOMEM;
    t->charged = rows;
    return 0;
}

/* Room and charge for group t->n: the arrays double when full; they are
 * charged a step ahead (a 32nd of their size), so a charge costs little and
 * the untouched rest of a doubled array is not counted. */
static int room_for_group(agg_tab *t)
{
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 256;
        if (cap < t->want)
            cap = t->want; /* grown once to the size foretold (mapped: untouched is free) */
        eng_mem *m = t->mem;
#define GROW(ptr, sz)                                                                              \
    do {                                                                                           \
        void *np = em_grow(m, ptr, (size_t)cap * (sz));                                            \
        if (!np)                                                                                   \
            return -ENOMEM;                                                                        \
        ptr = np;                                                                                  \
    } while (0)
        GROW(t->rec, sizeof(grec));
        for (int a = 0; a < t->p->n_aggs; a++) {
            const eng_agg *ag = &t->p->aggs[a];
            agg_col *c = &t->ac[a];
            GROW(c->seen, 1);
            if (ag->distinct) {
                GROW(c->u, sizeof(uset *));
                continue;
            }
            switch (ag->fn) {
            case AG_COUNT: GROW(c->cnt, 8); break;
            case AG_QUANTILE:
            case AG_QUANTILE_EXACT: GROW(c->q, sizeof(qbuf *)); break;
            case AG_VAR_POP:
            case AG_VAR_SAMP:
            case AG_STDDEV_POP:
            case AG_STDDEV_SAMP:
                GROW(c->cnt, 8);
                GROW(c->d, 8);
                GROW(c->m2, 8);
                break;
            case AG_CORR:
                GROW(c->cnt, 8);
                GROW(c->d, 8);
                GROW(c->m2, 8);
                GROW(c->my, 8);
                GROW(c->m2y, 8);
                GROW(c->cxy, 8);
                break;
            case AG_ARGMIN:
            case AG_ARGMAX:
                if (ex_is_bytes(ag->arg2->t.kind))
                    GROW(c->ks, sizeof(uint8_t *));
                else
                    GROW(c->ki, 8);
                if (ex_is_bytes(ag->t.kind))
                    GROW(c->s, sizeof(uint8_t *));
                else if (ag->t.kind == EX_FLOAT)
                    GROW(c->d, 8);
                else
                    GROW(c->i, 8);
                break;
            case AG_AVG:
                GROW(c->cnt, 8);
                GROW(c->d, 8);
                GROW(c->i, 8);
                break;
            case AG_UNIQ: GROW(c->u, sizeof(uset *)); break;
            case AG_GROUPARRAY:
            case AG_GROUPUNIQ:
            case AG_TOPK: GROW(c->vl, sizeof(vlist *)); break;
            default:
                if (ex_is_bytes(ag->t.kind))
                    GROW(c->s, sizeof(uint8_t *));
                else if (ag->t.kind == EX_FLOAT)
                    GROW(c->d, 8);
                else
                    GROW(c->i, 8);
            }
        }
#undef GROW
        t->cap = cap;
    }
    uint32_t step = t->cap / 32 > 256 ? t->cap / 32 : 256;
    uint32_t rows = t->cap - t->n > step ? t->n + step : t->cap;
    return charge_groups(t, rows);
}

/* The key bytes of a group (an inline key starts the record: k0 then k1). */
static inline const uint8_t *key_of(const agg_tab *t, const grec *r)
{
    return r->len <= AGG_INLINE ? (const uint8_t *)&r->k0 : t->kbuf + r->k0;
}

static uint64_t rec_hash(const agg_tab *t, const grec *r)
{
    return XXH3_64bits(key_of(t, r), r->len);
}

/* The home slot of hash (or slot word) h: the low bits of its top 32, so
 * that a partition (agg_part_of: the topmost bits) spreads over all of a
 * table's slots. */
static inline uint32_t slot_home(const agg_tab *t, uint64_t h)
{
    return (uint32_t)(h >> 32) & t->mask;
}

/* Moves the index to nm + 1 slots (a power of two) by the slots' own words:
 * no key is read, and a slot's entry moves to its home or that plus the old
 * size, two runs in order. */
static int rehash_to(agg_tab *t, uint32_t nm)
{
    uint64_t *ns = em_calloc(t->mem, (size_t)(nm + 1) * sizeof(uint64_t));
    if (!ns)
        return -ENOMEM;
    for (uint64_t k = 0; k <= t->mask; k++) {
        uint64_t e = t->slots[k];
        if (!e)
            continue;
        uint32_t i = (uint32_t)(e >> 32) & nm;
        while (ns[i])
            i = (i + 1) & nm;
        ns[i] = e;
    }
    em_free(t->mem, t->slots);
    t->slots = ns;
    t->mask = nm;
    return 0;
}

static int rehash(agg_tab *t)
{
    return rehash_to(t, (t->mask + 1) * 2 - 1);
}

int agg_tab_reserve(agg_tab *t, uint32_t groups)
{
    uint64_t size = (uint64_t)t->mask + 1;
    while ((uint64_t)groups * 4 > size * 3)
        size *= 2;
    if (size > (1ull << 32))
        return -ENOMEM;
    int rc = size == (uint64_t)t->mask + 1 ? 0 : rehash_to(t, (uint32_t)(size - 1));
    if (rc == 0 && groups > t->want)
        t->want = groups;
    return rc;
}

/* Empty states for new group g. */
static void group_init(agg_tab *t, uint32_t g)
{
    for (int a = 0; a < t->p->n_aggs; a++) {
        agg_col *c = &t->ac[a];
        c->seen[g] = 0;
        if (c->i)
            c->i[g] = 0;
        if (c->d)
            c->d[g] = 0;
        if (c->cnt)
            c->cnt[g] = 0;
        if (c->s)
            c->s[g] = NULL;
        if (c->u)
            c->u[g] = NULL;
        if (c->m2)
            c->m2[g] = 0;
        if (c->my) {
            c->my[g] = 0;
            c->m2y[g] = 0;
            c->cxy[g] = 0;
        }
        if (c->q)
            c->q[g] = NULL;
        if (c->ki)
            c->ki[g] = 0;
        if (c->ks)
            c->ks[g] = NULL;
        if (c->vl)
            c->vl[g] = NULL;
    }
}

/* The group of key bytes k (inserting it); -ENOMEM. When kl <= AGG_INLINE,
 * k must have 12 readable bytes, zero past kl (the rows' keys in scratch
 * do). The probe compares the slot's stored hash bits first, so a miss
 * touches one cache line. */
static int64_t lookup_p(agg_tab *t, const uint8_t *k, uint32_t kl, uint64_t h)
{
    uint32_t s = slot_home(t, h);
    uint64_t hi = h & 0xffffffff00000000ull;
    uint64_t w0 = 0;
    uint32_t w1 = 0;
    if (kl <= AGG_INLINE) {
        memcpy(&w0, k, 8);
        memcpy(&w1, k + 8, 4);
    }
    for (;;) {
        uint64_t e = t->slots[s];
        if (!e)
            break;
        if ((e & 0xffffffff00000000ull) == hi) {
            uint32_t g = (uint32_t)e - 1;
            const grec *r = &t->rec[g];
            if (r->len == kl && (kl <= AGG_INLINE ? r->k0 == w0 && r->k1 == w1
                                                  : memcmp(t->kbuf + r->k0, k, kl) == 0))
                return g;
        }
        s = (s + 1) & t->mask;
    }
    if (t->n == t->charged && room_for_group(t) < 0)
        return -ENOMEM;
    uint32_t g = t->n;
    grec *r = &t->rec[g];
    r->len = kl;
    if (kl <= AGG_INLINE) {
        r->k0 = w0;
        r->k1 = w1;
    } else {
        if (t->klen + kl > t->kcharged) {
            if (t->klen + kl > t->kcap) {
                size_t nc = t->kcap ? t->kcap * 2 : 4096;
                while (nc < t->klen + kl)
                    nc *= 2;
                uint8_t *nb = em_grow(t->mem, t->kbuf, nc);
                if (!nb)
                    return -ENOMEM;
                t->kbuf = nb;
                t->kcap = nc;
            }
            /* charged a step (a 32nd) ahead of the keys written, as the arrays */
            size_t want = t->klen + kl + t->kcap / 32;
            if (want > t->kcap)
                want = t->kcap;
            if (!em_use(t->mem, t->kbuf, want))
                return -ENOMEM;
            t->kcharged = want;
        }
        memcpy(t->kbuf + t->klen, k, kl);
        r->k0 = t->klen;
        t->klen += kl;
    }
    group_init(t, g);
    t->n++;
    t->slots[s] = hi | (uint64_t)(g + 1);
    /* linear probing with 32 hash bits in the slot stays short up to 3/4 */
    if ((uint64_t)t->n * 4 > (uint64_t)(t->mask + 1) * 3 && rehash(t) < 0)
        return -ENOMEM;
    return g;
}

/* lookup_p for a key that may not be padded. */
static int64_t lookup_h(agg_tab *t, const uint8_t *k, uint32_t kl, uint64_t h)
{
    if (kl > AGG_INLINE)
        return lookup_p(t, k, kl, h);
    uint8_t pk[16] = {0};
    for (uint32_t i = 0; i < kl; i++)
        pk[i] = k[i];
    return lookup_p(t, pk, kl, h);
}

static size_t key_put(uint8_t *o, const ex_vec *v, uint32_t r, bool last)
{
    if (ex_null(v, r)) {
        o[0] = 1;
        return 1;
    }
    o[0] = 0;
    if (ex_is_bytes(v->t.kind)) {
        uint32_t l;
        const uint8_t *s = ex_str(v, r, &l);
        if (last) {
            if (l)
                memcpy(o + 1, s, l);
            return 1 + l;
        }
        memcpy(o + 1, &l, 4);
        if (l)
            memcpy(o + 5, s, l);
        return 5 + l;
    }
    if (v->t.kind == EX_FLOAT) {
        double d = ex_f(v, r);
        if (d == 0)
            d = 0; /* -0 and 0 are one group */
        memcpy(o + 1, &d, 8);
    } else {
        memcpy(o + 1, &v->i[ex_row(v, r)], 8);
    }
    return 9;
}

static size_t key_size(const ex_vec *v, uint32_t r)
{
    if (ex_is_bytes(v->t.kind) && !ex_null(v, r)) {
        uint32_t l;
        ex_str(v, r, &l);
        return 5 + l;
    }
    return 9;
}

static int ensure(void **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 256;
    while (nc < need)
        nc *= 2;
    void *np = realloc(*p, nc);
    if (!np)
        return -ENOMEM;
    *p = np;
    *cap = nc;
    return 0;
}

static int64_t lookup(agg_tab *t, const uint8_t *k, uint32_t kl)
{
    return lookup_h(t, k, kl, XXH3_64bits(k, kl));
}

/* Room for m keys of `bytes` serialized bytes in scratch (each key takes at
 * least 16 bytes there, zero-padded, for lookup_p). 0 or -ENOMEM. */
static int keys_reserve(agg_tab *t, uint32_t m, size_t bytes)
{
    if (m > t->kcap_rows) {
        uint32_t nc = m < 256 ? 256 : m;
        uint32_t *ko = realloc(t->ko, sizeof(uint32_t) * nc);
        if (ko)
            t->ko = ko;
        uint32_t *kl = realloc(t->kls, sizeof(uint32_t) * nc);
        if (kl)
            t->kls = kl;
        uint64_t *hs = realloc(t->hs, sizeof(uint64_t) * nc);
        if (hs)
            t->hs = hs;
        if (!ko || !kl || !hs)
            return -ENOMEM;
        t->kcap_rows = nc;
    }
    if (bytes > UINT32_MAX)
        return -ENOMEM;
    return ensure((void **)&t->scratch, &t->scratch_cap, bytes + (size_t)m * 16 + 16);
}

/* Probes the m keys in scratch (ko, kls, hs) into out: the slot of key j +
 * AGG_PF_SLOT is prefetched, then the record its slot points at once key j +
 * AGG_PF_REC comes near, so the misses overlap. 0 or -ENOMEM. */
static int probe_keys(agg_tab *t, uint32_t m, uint32_t *out)
{
    const uint64_t *hs = t->hs;
    for (uint32_t j = 0; j < m; j++) {
        if (j + AGG_PF_SLOT < m)
            __builtin_prefetch(&t->slots[slot_home(t, hs[j + AGG_PF_SLOT])]);
        if (j + AGG_PF_REC < m) {
            uint64_t h = hs[j + AGG_PF_REC], e = t->slots[slot_home(t, h)];
            if (e && ((e ^ h) >> 32) == 0)
                __builtin_prefetch(&t->rec[(uint32_t)e - 1]);
        }
        int64_t g = lookup_p(t, t->scratch + t->ko[j], t->kls[j], hs[j]);
        if (g < 0)
            return -ENOMEM;
        out[j] = (uint32_t)g;
    }
    return 0;
}

/* Maps the dictionary entries the rows use that have no group yet: their
 * keys are serialized and hashed, then probed together. dmap stays valid for
 * the slices that follow as long as they share the dictionary, so a
 * dictionary is hashed once per row group however the rows are sliced. */
static int dict_groups(agg_tab *t, const cb_column *d, const uint32_t *idx, const uint32_t *sel,
                       uint32_t n, const uint8_t *nulls)
{
    if (d != t->dmap_dict) {
        if (d->n > t->dmap_cap) {
            free(t->dmap);
            t->dmap_cap = 0;
            if (!(t->dmap = malloc(sizeof(uint32_t) * d->n)))
                return -ENOMEM;
            t->dmap_cap = d->n;
        }
        memset(t->dmap, 0xff, sizeof(uint32_t) * d->n);
        cb_column_unref(t->dmap_dict);
        t->dmap_dict = cb_column_ref((cb_column *)d);
    }
    uint32_t *list = NULL, *gids = NULL, m = 0, lcap = 0;
    size_t need = 0;
    int rc = 0;
    for (uint32_t r = 0; r < n; r++) {
        uint32_t x = sel ? sel[r] : r;
        if (nulls && nulls[x])
            continue;
        uint32_t k = idx[x];
        if (t->dmap[k] != AGG_UNMAPPED)
            continue;
        if (m == lcap) {
            lcap = lcap ? lcap * 2 : 1024;
            uint32_t *nl = realloc(list, sizeof(uint32_t) * lcap);
            if (!nl) {
                rc = -ENOMEM;
                goto out;
            }
            list = nl;
        }
        t->dmap[k] = AGG_UNMAPPED - 1; /* listed */
        list[m++] = k;
        need += 1 + (size_t)(d->offsets[k + 1] - d->offsets[k]);
    }
    if (m == 0)
        goto out;
    if (keys_reserve(t, m, need) < 0 || !(gids = malloc(sizeof(uint32_t) * m))) {
        rc = -ENOMEM;
        goto out;
    }
    /* serialized keys back to back: [0][bytes], each padded to 16 */
    size_t o = 0;
    for (uint32_t j = 0; j < m; j++) {
        uint32_t k = list[j], l = d->offsets[k + 1] - d->offsets[k];
        uint8_t *p = t->scratch + o;
        memset(p, 0, 16);
        if (l)
            memcpy(p + 1, d->data + d->offsets[k], l);
        t->ko[j] = (uint32_t)o;
        t->kls[j] = l + 1;
        o += l + 1 > 16 ? l + 1 : 16;
    }
    for (uint32_t j = 0; j < m; j++)
        t->hs[j] = XXH3_64bits(t->scratch + t->ko[j], t->kls[j]);
    if ((rc = probe_keys(t, m, gids)) == 0)
        for (uint32_t j = 0; j < m; j++)
            t->dmap[list[j]] = gids[j];
out:
    if (rc < 0)
        for (uint32_t j = 0; j < m; j++)
            t->dmap[list[j]] = AGG_UNMAPPED;
    free(list);
    free(gids);
    return rc;
}

/* ---- uniq sets ---- */

/* A value's home slot: the top bits of the value times an odd constant
 * (Fibonacci hashing), so -Distinct's raw integers spread as well as uniq's
 * hashes, and the homes of a table split into ranges by their top bits
 * (agg_sets_part's partitions). */
#define USET_MIX 0x9E3779B97F4A7C15ull

static inline uint32_t uset_home(const uset *s, uint64_t h)
{
    return (uint32_t)((h * USET_MIX) >> s->shift);
}

static uint8_t uset_shift(uint32_t mask)
{
    return (uint8_t)(64 - __builtin_popcount(mask));
}

static int uset_new(eng_mem *m, uset **sp)
{
    uset *s = em_calloc(m, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->mask = 7;
    s->shift = uset_shift(7);
    if (!(s->v = em_calloc(m, 8 * sizeof(uint64_t)))) {
        em_free(m, s);
        return -ENOMEM;
    }
    *sp = s;
    return 0;
}

/* Rebuilds s with mask nm (the old table read in order, so the new one is
 * written nearly in order too: homes keep their order as the table grows). */
static int uset_grow(eng_mem *m, uset *s, uint32_t nm)
{
    uint64_t *nv = em_calloc(m, (size_t)(nm + 1) * 8);
    if (!nv)
        return -ENOMEM;
    uint8_t sh = uset_shift(nm);
    for (uint32_t k = 0; k <= s->mask; k++)
        if (s->v[k]) {
            uint32_t j = (uint32_t)((s->v[k] * USET_MIX) >> sh);
            while (nv[j])
                j = (j + 1) & nm;
            nv[j] = s->v[k];
        }
    em_free(m, s->v);
    s->v = nv;
    s->mask = nm;
    s->shift = sh;
    return 0;
}

/* Room for `more` new values without growing: the table is kept at most
 * half full. */
static int uset_reserve(eng_mem *m, uset **sp, uint32_t more)
{
    if (!*sp && uset_new(m, sp) < 0)
        return -ENOMEM;
    uset *s = *sp;
    uint64_t need = ((uint64_t)s->n + more) * 2;
    if (need <= s->mask)
        return 0;
    uint64_t nm = (uint64_t)s->mask + 1;
    while (nm - 1 < need)
        nm *= 2;
    if (nm > (1ull << 32))
        return -ENOMEM;
    return uset_grow(m, s, (uint32_t)(nm - 1));
}

/* Puts h (not 0) into s, which has room (uset_reserve). */
static inline void uset_put(uset *s, uint64_t h)
{
    uint32_t i = uset_home(s, h);
    while (s->v[i]) {
        if (s->v[i] == h)
            return;
        i = (i + 1) & s->mask;
    }
    s->v[i] = h;
    s->n++;
}

static int uset_add(eng_mem *m, uset **sp, uint64_t h)
{
    if (!*sp && uset_new(m, sp) < 0)
        return -ENOMEM;
    uset *s = *sp;
    if (h == 0) {
        s->has_zero = true;
        return 0;
    }
    uset_put(s, h);
    if (s->n * 2 > s->mask)
        return uset_grow(m, s, (s->mask + 1) * 2 - 1);
    return 0;
}

/* How far ahead a batch of insertions prefetches the slot of a value. */
#define USET_PF 16

/* Puts n hashes into *sp: room made once, then each value's slot fetched
 * USET_PF values before it is probed, so the cache misses of a large set
 * overlap instead of queuing. */
static int uset_add_many(eng_mem *m, uset **sp, const uint64_t *h, uint32_t n)
{
    if (uset_reserve(m, sp, n) < 0)
        return -ENOMEM;
    uset *s = *sp;
    for (uint32_t k = 0; k < n; k++) {
        if (k + USET_PF < n)
            __builtin_prefetch(&s->v[uset_home(s, h[k + USET_PF])], 1);
        if (h[k])
            uset_put(s, h[k]);
        else
            s->has_zero = true;
    }
    return 0;
}

/* Adds the values of *srcp into *dstp; the larger set takes the other's
 * values (the two may be swapped: both belong to the same memory). */
static int uset_merge(eng_mem *m, uset **dstp, uset **srcp)
{
    if (!*srcp)
        return 0;
    if (!*dstp || (*dstp)->n < (*srcp)->n) {
        uset *x = *dstp;
        *dstp = *srcp;
        *srcp = x;
        if (!*srcp)
            return 0;
    }
    uset *d = *dstp, *s = *srcp;
    d->has_zero |= s->has_zero;
    /* grown as the union grows (not for the sum of both sizes: the union
     * is often much smaller, and the table's memory is the peak's) */
    for (uint32_t k = 0; k <= s->mask; k++)
        if (s->v[k]) {
            uset_put(d, s->v[k]);
            if (d->n * 2 > d->mask && uset_grow(m, d, (d->mask + 1) * 2 - 1) < 0)
                return -ENOMEM;
        }
    return 0;
}

/* ---- the one group's large sets, merged by threads ---- */

/* Below this many values in an aggregate's sets (summed over the tables),
 * one thread merges them (agg_tab_merge) sooner than threads start. */
#define USET_PAR_MIN 65536u
/* Partitions of the merged table: ranges of its slots by the top bits of
 * the values' homes; thread `part` of nparts takes ranges r with
 * r % nparts == part. */
#define USET_RANGE_BITS 6
#define USET_BATCH      64

typedef struct sets_part {
    uint64_t *defer; /* values whose probe reached the end of their range */
    size_t cap;      /* defer's bytes */
    uint32_t nd;
    uint32_t added;
    int rc;
} sets_part;

typedef struct sets_agg {
    int a;
    uset *dst;
    int in;           /* dst is table `in`'s own set (not read as a source), or -1 */
    sets_part *parts; /* nparts */
} sets_agg;

struct agg_sets {
    agg_tab **tabs;
    int n;
    uint32_t nparts;
    int nagg;
    sets_agg *ag;
};

static uset *one_set(agg_tab *t, int a)
{
    return t->n > 0 && t->ac[a].u ? t->ac[a].u[0] : NULL;
}

void agg_sets_free(agg_sets **smp)
{
    agg_sets *sm = *smp;
    if (!sm)
        return;
    eng_mem *m = sm->tabs[0]->mem;
    for (int k = 0; k < sm->nagg; k++) {
        if (sm->ag[k].in < 0)
            uset_free(m, sm->ag[k].dst);
        for (uint32_t j = 0; sm->ag[k].parts && j < sm->nparts; j++)
            free(sm->ag[k].parts[j].defer);
        free(sm->ag[k].parts);
    }
    free(sm->ag);
    free(sm);
    *smp = NULL;
}

int agg_sets_begin(agg_sets **out, agg_tab **tabs, int n, uint32_t nparts, char *err, size_t errlen)
{
    *out = NULL;
    const eng_plan *p = tabs[0]->p;
    if (p->n_keys != 0 || n < 2 || nparts < 2 || tabs[0]->n == 0)
        return 0;
    agg_sets *sm = calloc(1, sizeof(*sm));
    if (!sm || !(sm->ag = calloc((size_t)p->n_aggs + 1, sizeof(sets_agg)))) {
        free(sm);
        return tab_oom(tabs[0], err, errlen);
    }
    sm->tabs = tabs;
    sm->n = n;
    sm->nparts = nparts;
    for (int a = 0; a < p->n_aggs; a++) {
        const eng_agg *ag = &p->aggs[a];
        if (!ag->distinct && ag->fn != AG_UNIQ)
            continue;
        uint64_t sum = 0;
        int big = -1;
        for (int i = 0; i < n; i++) {
            uset *u = one_set(tabs[i], a);
            sum += u ? u->n : 0;
            if (u && (big < 0 || u->n > one_set(tabs[big], a)->n))
                big = i;
        }
        if (sum < USET_PAR_MIN)
            continue;
        sets_agg *e = &sm->ag[sm->nagg++];
        e->a = a;
        e->in = -1;
        if (!(e->parts = calloc(nparts, sizeof(sets_part)))) {
            agg_sets_free(&sm);
            return tab_oom(tabs[0], err, errlen);
        }
        /* the largest set takes the others' values in place when it has
         * room for every value distinct, at most three quarters full (the
         * union is often smaller; the set grows past that on its own) */
        uset *b = one_set(tabs[big], a);
        if (sum * 4 <= ((uint64_t)b->mask + 1) * 3 && b->mask + 1 >= (1u << 16)) {
            e->dst = b;
            e->in = big;
            continue;
        }
        uint64_t size = 1u << 16;
        while (size * 3 < sum * 4)
            size *= 2;
        if (size > (1ull << 32) || !(e->dst = em_calloc(tabs[0]->mem, sizeof(uset))) ||
            !(e->dst->v = em_calloc(tabs[0]->mem, size * 8))) {
            agg_sets_free(&sm);
            return tab_oom(tabs[0], err, errlen);
        }
        e->dst->mask = (uint32_t)(size - 1);
        e->dst->shift = uset_shift(e->dst->mask);
    }
    if (sm->nagg == 0) {
        agg_sets_free(&sm);
        return 0;
    }
    *out = sm;
    return 0;
}

static int defer_put(sets_part *pt, uint64_t h)
{
    if (ensure((void **)&pt->defer, &pt->cap, ((size_t)pt->nd + 1) * 8) < 0)
        return -ENOMEM;
    pt->defer[pt->nd++] = h;
    return 0;
}

/* Puts b[0..m) (their homes in hm) into d, probing no further than the end
 * of each one's range (past it, the value waits in pt->defer). */
static int sets_put_batch(uset *d, sets_part *pt, const uint64_t *b, const uint32_t *hm, uint32_t m,
                          uint32_t rmask)
{
    for (uint32_t k = 0; k < m; k++) {
        uint64_t h = b[k];
        uint32_t i = hm[k];
        for (;;) {
            uint64_t x = d->v[i];
            if (x == 0) {
                d->v[i] = h;
                pt->added++;
                break;
            }
            if (x == h)
                break;
            if ((++i & rmask) == 0) {
                if (defer_put(pt, h) < 0)
                    return -ENOMEM;
                break;
            }
        }
    }
    return 0;
}

void agg_sets_part(agg_sets *sm, uint32_t part)
{
    for (int k = 0; k < sm->nagg; k++) {
        sets_agg *e = &sm->ag[k];
        sets_part *pt = &e->parts[part];
        uset *d = e->dst;
        uint32_t rmask = (d->mask >> USET_RANGE_BITS); /* slots per range - 1 */
        uint64_t b[USET_BATCH], mine = 0;
        uint32_t hm[USET_BATCH], m = 0;
        for (uint32_t r = part; r < (1u << USET_RANGE_BITS); r += sm->nparts)
            mine |= 1ull << r;
        for (int i = 0; i < sm->n && pt->rc == 0; i++) {
            const uset *s = i == e->in ? NULL : one_set(sm->tabs[i], e->a);
            for (uint32_t j = 0; s && j <= s->mask && pt->rc == 0; j++) {
                uint64_t h = s->v[j];
                if (!h)
                    continue;
                uint64_t x = h * USET_MIX;
                if (!(mine >> (x >> (64 - USET_RANGE_BITS)) & 1))
                    continue;
                b[m] = h;
                hm[m] = (uint32_t)(x >> d->shift);
                __builtin_prefetch(&d->v[hm[m]], 1);
                if (++m == USET_BATCH) {
                    pt->rc = sets_put_batch(d, pt, b, hm, m, rmask);
                    m = 0;
                }
            }
        }
        if (pt->rc == 0 && m)
            pt->rc = sets_put_batch(d, pt, b, hm, m, rmask);
    }
}

int agg_sets_end(agg_sets **smp, char *err, size_t errlen)
{
    agg_sets *sm = *smp;
    agg_tab *t0 = sm->tabs[0];
    int rc = 0;
    for (int k = 0; k < sm->nagg && rc == 0; k++) {
        sets_agg *e = &sm->ag[k];
        uset *d = e->dst;
        for (uint32_t j = 0; j < sm->nparts; j++) {
            if (e->parts[j].rc < 0)
                rc = -ENOMEM;
            d->n += e->parts[j].added;
        }
        /* the values that waited: each probes on from its home, past its
         * range's end, now that no thread writes */
        for (uint32_t j = 0; j < sm->nparts && rc == 0; j++)
            for (uint32_t q = 0; q < e->parts[j].nd; q++)
                uset_put(d, e->parts[j].defer[q]);
        if (rc < 0)
            break;
        for (int i = 0; i < sm->n; i++) {
            uset *u = one_set(sm->tabs[i], e->a);
            if (!u)
                continue;
            d->has_zero |= u->has_zero;
            if (u != d)
                uset_free(t0->mem, u);
            sm->tabs[i]->ac[e->a].u[0] = NULL;
        }
        t0->ac[e->a].u[0] = d;
        e->dst = NULL;
        e->in = -1;
    }
    agg_sets_free(smp);
    return rc < 0 ? tab_oom(t0, err, errlen) : 0;
}

static uint64_t val_hash(const ex_vec *v, uint32_t r)
{
    if (ex_is_bytes(v->t.kind)) {
        uint32_t l;
        const uint8_t *s = ex_str(v, r, &l);
        return XXH3_64bits(s, l);
    }
    if (v->t.kind == EX_FLOAT) {
        double d = ex_f(v, r);
        if (d == 0)
            d = 0;
        return XXH3_64bits(&d, 8);
    }
    return XXH3_64bits(&v->i[ex_row(v, r)], 8);
}

/* ---- updates ---- */

static int str_set(eng_mem *m, uint8_t **slot, const uint8_t *s, uint32_t l)
{
    uint8_t *n = em_alloc(m, (size_t)l + 4);
    if (!n)
        return -ENOMEM;
    memcpy(n, &l, 4);
    if (l)
        memcpy(n + 4, s, l);
    em_free(m, *slot);
    *slot = n;
    return 0;
}

static int scmp(const uint8_t *a, uint32_t al, const uint8_t *b, uint32_t bl)
{
    uint32_t mn = al < bl ? al : bl;
    int c = mn ? memcmp(a, b, mn) : 0;
    return c ? c : (al < bl ? -1 : al > bl);
}

/* Keeps row r of v as the value of state g (min, max, any, anyLast, argMin, argMax). */
static int keep_value(agg_tab *t, agg_col *c, const eng_agg *ag, uint32_t g, const ex_vec *v,
                      uint32_t r)
{
    if (ex_is_bytes(ag->t.kind)) {
        uint32_t l;
        const uint8_t *s = ex_str(v, r, &l);
        return str_set(t->mem, &c->s[g], s, l);
    }
    if (ag->t.kind == EX_FLOAT)
        c->d[g] = ex_f(v, r);
    else
        c->i[g] = v->i[ex_row(v, r)];
    return 0;
}

/* Folds value row r of v into state g of aggregate a. */
static int update_one(agg_tab *t, int a, uint32_t g, const ex_vec *v, uint32_t r)
{
    const eng_agg *ag = &t->p->aggs[a];
    agg_col *c = &t->ac[a];
    if (ag->fn == AG_COUNT) {
        if (!v || !ex_null(v, r))
            c->cnt[g]++;
        return 0;
    }
    if (ex_null(v, r))
        return 0;
    switch (ag->fn) {
    case AG_SUM:
        if (ag->t.kind == EX_FLOAT)
            c->d[g] += ex_f(v, r);
        else if (ag->t.kind == EX_DECIMAL)
            c->ovf |= __builtin_add_overflow(c->i[g], v->i[ex_row(v, r)], &c->i[g]);
        else
            c->i[g] = (int64_t)((uint64_t)c->i[g] + (uint64_t)(v->t.kind == EX_FLOAT
                                                                   ? (int64_t)v->d[ex_row(v, r)]
                                                                   : v->i[ex_row(v, r)]));
        break;
    case AG_AVG:
        if (v->t.kind == EX_FLOAT)
            c->d[g] += v->d[ex_row(v, r)];
        else if (v->t.kind == EX_UINT)
            c->d[g] += (double)(uint64_t)v->i[ex_row(v, r)];
        else if (v->t.kind == EX_DECIMAL) {
            /* exact in i while it fits; what would overflow moves to d */
            int64_t x = v->i[ex_row(v, r)], s;
            if (__builtin_add_overflow(c->i[g], x, &s)) {
                c->d[g] += (double)c->i[g];
                s = x;
            }
            c->i[g] = s;
        } else
            c->i[g] += v->i[ex_row(v, r)];
        c->cnt[g]++;
        break;
    case AG_UNIQ:
        if (uset_add(t->mem, &c->u[g], val_hash(v, r)) < 0)
            return -ENOMEM;
        break;
    case AG_MIN:
    case AG_MAX:
    case AG_ANY: {
        bool take = !c->seen[g];
        if (!take && ag->fn != AG_ANY) {
            int cmpv;
            if (ex_is_bytes(ag->t.kind)) {
                uint32_t l, ol;
                const uint8_t *s = ex_str(v, r, &l);
                memcpy(&ol, c->s[g], 4);
                cmpv = scmp(s, l, c->s[g] + 4, ol);
            } else if (ag->t.kind == EX_FLOAT) {
                double x = ex_f(v, r), y = c->d[g];
                cmpv = x < y ? -1 : x > y;
            } else if (ag->t.kind == EX_UINT) {
                uint64_t x = (uint64_t)v->i[ex_row(v, r)], y = (uint64_t)c->i[g];
                cmpv = x < y ? -1 : x > y;
            } else {
                int64_t x = v->i[ex_row(v, r)], y = c->i[g];
                cmpv = x < y ? -1 : x > y;
            }
            take = ag->fn == AG_MIN ? cmpv < 0 : cmpv > 0;
        }
        if (take && keep_value(t, c, ag, g, v, r) < 0)
            return -ENOMEM;
        break;
    }
    default: break;
    }
    c->seen[g] = 1;
    return 0;
}

/* ---- the aggregates beyond the first seven, and the combinators ---- */

/* Whether aggregate a goes through update_generic (a condition, distinct
 * values, two arguments, or a state other than the seven first ones). */
static bool agg_generic(const eng_agg *ag)
{
    return ag->cond || ag->distinct || ag->arg2 || ag->fn >= AG_ANYLAST;
}

/* The 8 bytes a value is kept as: int64, or double bits (-0 as 0). */
static inline uint64_t val_bits(const ex_vec *v, uint32_t r)
{
    if (v->t.kind == EX_FLOAT) {
        double d = ex_f(v, r);
        if (d == 0)
            d = 0;
        uint64_t u;
        memcpy(&u, &d, 8);
        return u;
    }
    return (uint64_t)v->i[ex_row(v, r)];
}

static int qbuf_push(eng_mem *m, qbuf **qp, int64_t x)
{
    qbuf *q = *qp;
    if (!q) {
        if (!(q = em_calloc(m, sizeof(*q))))
            return -ENOMEM;
        *qp = q;
    }
    if (q->n == q->cap) {
        uint32_t nc = q->cap ? q->cap * 2 : 16;
        int64_t *nv = em_realloc(m, q->v, (size_t)nc * 8);
        if (!nv)
            return -ENOMEM;
        q->v = nv;
        q->cap = nc;
    }
    q->v[q->n++] = x;
    return 0;
}

/* ---- groupArray, groupUniqArray, topK ---- */

static uint64_t vl_hash(const uint8_t *p, uint32_t n)
{
    return XXH3_64bits(p, n) | 1;
}

/* The index of value (p, n) in l (with an index), or -1. */
static int64_t vl_find(const vlist *l, const uint8_t *p, uint32_t n, uint64_t h)
{
    if (!l->slot)
        return -1;
    for (uint32_t s = (uint32_t)h & l->mask;; s = (s + 1) & l->mask) {
        uint32_t k = l->slot[s];
        if (!k)
            return -1;
        k--;
        uint32_t kl = l->off[k + 1] - l->off[k];
        if (kl == n && memcmp(l->b + l->off[k], p, n) == 0)
            return k;
    }
}

static int vl_index_put(eng_mem *m, vlist *l, uint32_t k, uint64_t h)
{
    if (!l->slot || (uint64_t)(l->cnt + 1) * 2 > (uint64_t)l->mask + 1) {
        uint32_t nm = l->slot ? l->mask * 2 + 1 : 15;
        uint32_t *ns = em_calloc(m, ((size_t)nm + 1) * 4);
        if (!ns)
            return -ENOMEM;
        for (uint32_t j = 0; j < l->cnt; j++) {
            if (j == k)
                continue;
            uint64_t hj = vl_hash(l->b + l->off[j], l->off[j + 1] - l->off[j]);
            uint32_t s = (uint32_t)hj & nm;
            while (ns[s])
                s = (s + 1) & nm;
            ns[s] = j + 1;
        }
        em_free(m, l->slot);
        l->slot = ns;
        l->mask = nm;
    }
    uint32_t s = (uint32_t)h & l->mask;
    while (l->slot[s])
        s = (s + 1) & l->mask;
    l->slot[s] = k + 1;
    return 0;
}

/* Appends value (p, n) as element cnt of *lp (created on first use). */
static int vl_append(eng_mem *m, vlist **lp, const uint8_t *p, uint32_t n, bool counts)
{
    vlist *l = *lp;
    if (!l) {
        if (!(l = em_calloc(m, sizeof(*l))))
            return -ENOMEM;
        *lp = l;
    }
    if (l->n + n > UINT32_MAX)
        return -E2BIG;
    if (l->n + n > l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        while (nc < l->n + n)
            nc *= 2;
        uint8_t *nb = em_realloc(m, l->b, nc);
        if (!nb)
            return -ENOMEM;
        l->b = nb;
        l->cap = nc;
    }
    if (l->cnt + 1 >= l->ecap) {
        uint32_t nc = l->ecap ? l->ecap * 2 : 16;
        uint32_t *no = em_realloc(m, l->off, ((size_t)nc + 1) * 4);
        if (!no)
            return -ENOMEM;
        l->off = no;
        if (counts) {
            uint64_t *nh = em_realloc(m, l->hits, (size_t)nc * 8);
            if (!nh)
                return -ENOMEM;
            l->hits = nh;
        }
        l->ecap = nc;
    }
    if (l->cnt == 0)
        l->off[0] = 0;
    memcpy(l->b + l->n, p, n);
    l->n += n;
    if (counts)
        l->hits[l->cnt] = 0;
    l->off[++l->cnt] = (uint32_t)l->n;
    return 0;
}

/* Adds one value (p, n) seen `times` times to state lp of aggregate ag. */
static int vl_add(eng_mem *m, const eng_agg *ag, vlist **lp, const uint8_t *p, uint32_t n,
                  uint64_t times)
{
    vlist *l = *lp;
    if (ag->fn == AG_GROUPARRAY) {
        if (ag->limit && l && l->cnt >= ag->limit)
            return 0;
        return vl_append(m, lp, p, n, false);
    }
    uint64_t h = vl_hash(p, n);
    int64_t k = l ? vl_find(l, p, n, h) : -1;
    if (k < 0) {
        if (ag->fn == AG_GROUPUNIQ && ag->limit && l && l->cnt >= ag->limit)
            return 0;
        int rc = vl_append(m, lp, p, n, ag->fn == AG_TOPK);
        l = *lp;
        if (rc < 0 || (rc = vl_index_put(m, l, l->cnt - 1, h)) < 0)
            return rc;
        k = l->cnt - 1;
    }
    if (ag->fn == AG_TOPK)
        l->hits[k] += times;
    return 0;
}

/* Row r of v (not NULL) into state g of aggregate ag. */
static int vl_update(agg_tab *t, const eng_agg *ag, agg_col *c, uint32_t g, const ex_vec *v,
                     uint32_t r)
{
    ex_type et = v->t;
    et.nullable = false;
    ex_arr_val x;
    ex_arr_val_of(v, r, &x);
    t->elem.n = 0;
    if (ex_arr_put(&t->elem, &et, &x) < 0)
        return -ENOMEM;
    return vl_add(t->mem, ag, &c->vl[g], t->elem.p, (uint32_t)t->elem.n, 1);
}

/* topK's order: the larger count first, then the smaller value (bytes), so
 * that ties come out the same however the rows were split between threads. */
static int tk_cmp(const void *x, const void *y, void *arg)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    const vlist *l = arg;
    if (l->hits[a] != l->hits[b])
        return l->hits[a] > l->hits[b] ? -1 : 1;
    uint32_t la = l->off[a + 1] - l->off[a], lb = l->off[b + 1] - l->off[b];
    uint32_t mn = la < lb ? la : lb;
    int k = mn ? memcmp(l->b + l->off[a], l->b + l->off[b], mn) : 0;
    if (k)
        return k;
    return la < lb ? -1 : la > lb;
}

/* The result of state l of aggregate ag, as row g of Array vector v. */
static int vl_finish(agg_tab *t, const eng_agg *ag, const vlist *l, ex_vec *v, uint32_t g)
{
    ex_bytes *o = &t->elem;
    o->n = 0;
    size_t at;
    if (ex_arr_begin(o, &at) < 0)
        return -ENOMEM;
    uint32_t cnt = l ? l->cnt : 0;
    if (ag->fn == AG_TOPK && l) {
        uint32_t *ord = malloc(((size_t)cnt + 1) * 4);
        if (!ord)
            return -ENOMEM;
        for (uint32_t k = 0; k < cnt; k++)
            ord[k] = k;
        qsort_r(ord, cnt, 4, tk_cmp, (void *)l);
        if (cnt > ag->limit)
            cnt = ag->limit;
        int rc = 0;
        for (uint32_t k = 0; k < cnt && rc == 0; k++)
            rc = ex_bytes_put(o, l->b + l->off[ord[k]], l->off[ord[k] + 1] - l->off[ord[k]]);
        free(ord);
        if (rc < 0)
            return rc;
    } else if (l && ex_bytes_put(o, l->b, l->n) < 0) {
        return -ENOMEM;
    }
    ex_arr_end(o, at, cnt);
    v->nulls[g] = 0;
    return ex_vec_str_put(t->mem, v, g, o->p, o->n);
}

/* Compares keys of argMin/argMax: row r of v against the kept key of g. */
static int key_cmp(const agg_col *c, uint32_t g, const ex_vec *v, uint32_t r)
{
    if (ex_is_bytes(v->t.kind)) {
        uint32_t l, ol;
        const uint8_t *s = ex_str(v, r, &l);
        memcpy(&ol, c->ks[g], 4);
        return scmp(s, l, c->ks[g] + 4, ol);
    }
    if (v->t.kind == EX_FLOAT) {
        double x = ex_f(v, r), y;
        memcpy(&y, &c->ki[g], 8);
        return x < y ? -1 : x > y;
    }
    if (v->t.kind == EX_UINT) {
        uint64_t x = (uint64_t)v->i[ex_row(v, r)], y = (uint64_t)c->ki[g];
        return x < y ? -1 : x > y;
    }
    int64_t x = v->i[ex_row(v, r)], y = c->ki[g];
    return x < y ? -1 : x > y;
}

/* Folds row r (v, and v2 for two arguments) into state g of a generic
 * aggregate a. Rows with a NULL argument are skipped, as ClickHouse skips
 * them. */
static int update_ext(agg_tab *t, int a, uint32_t g, const ex_vec *v, const ex_vec *v2, uint32_t r)
{
    const eng_agg *ag = &t->p->aggs[a];
    agg_col *c = &t->ac[a];
    if (ex_null(v, r) || (v2 && ex_null(v2, r)))
        return 0;
    if (ag->distinct) {
        if (uset_add(t->mem, &c->u[g], val_bits(v, r)) < 0)
            return -ENOMEM;
        c->seen[g] = 1;
        return 0;
    }
    switch (ag->fn) {
    case AG_ANYLAST:
        if (keep_value(t, c, ag, g, v, r) < 0)
            return -ENOMEM;
        break;
    case AG_GROUPARRAY:
    case AG_GROUPUNIQ:
    case AG_TOPK: {
        int rc = vl_update(t, ag, c, g, v, r);
        if (rc < 0)
            return rc;
        break;
    }
    case AG_QUANTILE:
    case AG_QUANTILE_EXACT: {
        int64_t x;
        if (ag->fn == AG_QUANTILE) {
            double d = ex_f(v, r);
            memcpy(&x, &d, 8);
        } else if (v->t.kind == EX_FLOAT) {
            double d = ex_f(v, r);
            memcpy(&x, &d, 8);
        } else {
            x = v->i[ex_row(v, r)];
        }
        if (qbuf_push(t->mem, &c->q[g], x) < 0)
            return -ENOMEM;
        break;
    }
    case AG_VAR_POP:
    case AG_VAR_SAMP:
    case AG_STDDEV_POP:
    case AG_STDDEV_SAMP: {
        double x = ex_f(v, r), n1 = (double)++c->cnt[g];
        double delta = x - c->d[g];
        c->d[g] += delta / n1;
        c->m2[g] += delta * (x - c->d[g]);
        break;
    }
    case AG_CORR: {
        double x = ex_f(v, r), y = ex_f(v2, r), n1 = (double)++c->cnt[g];
        double dx = x - c->d[g];
        c->d[g] += dx / n1;
        double dy = y - c->my[g];
        c->my[g] += dy / n1;
        c->m2[g] += dx * (x - c->d[g]);
        c->m2y[g] += dy * (y - c->my[g]);
        c->cxy[g] += dx * (y - c->my[g]);
        break;
    }
    case AG_ARGMIN:
    case AG_ARGMAX: {
        bool take = !c->seen[g];
        if (!take) {
            int k = key_cmp(c, g, v2, r);
            take = ag->fn == AG_ARGMIN ? k < 0 : k > 0;
        }
        if (!take)
            break;
        if (ex_is_bytes(v2->t.kind)) {
            uint32_t l;
            const uint8_t *s = ex_str(v2, r, &l);
            if (str_set(t->mem, &c->ks[g], s, l) < 0)
                return -ENOMEM;
        } else {
            c->ki[g] = (int64_t)val_bits(v2, r);
        }
        if (keep_value(t, c, ag, g, v, r) < 0)
            return -ENOMEM;
        break;
    }
    default: return update_one(t, a, g, v, r);
    }
    c->seen[g] = 1;
    return 0;
}

static inline bool cond_true(const ex_vec *v, uint32_t r)
{
    if (ex_null(v, r))
        return false;
    if (v->t.kind == EX_FLOAT)
        return v->d[ex_row(v, r)] != 0;
    return v->i[ex_row(v, r)] != 0;
}

/* countIf(c) and sumIf(x, c) of a non-NULL x under a condition without
 * NULLs, in tight loops (the condition's 0/1 as a mask): true when done. */
static bool cond_fast(agg_tab *t, int a, const ex_vec *cv, const ex_vec *v, uint32_t n,
                      const uint32_t *gid)
{
    const eng_agg *ag = &t->p->aggs[a];
    agg_col *c = &t->ac[a];
    const int64_t *m = cv->i;
    if (ag->fn == AG_COUNT && !v) {
        if (gid) {
            for (uint32_t r = 0; r < n; r++) {
                c->cnt[gid[r]] += m[r] != 0;
                c->seen[gid[r]] = 1;
            }
        } else {
            uint64_t k = 0;
            for (uint32_t r = 0; r < n; r++)
                k += m[r] != 0;
            c->cnt[0] += k;
            c->seen[0] = 1;
        }
        return true;
    }
    if (ag->fn != AG_SUM || ag->distinct || !v || v->nulls || v->is_const ||
        v->t.kind == EX_NOTHING || (ag->t.kind == EX_FLOAT) != (v->t.kind == EX_FLOAT))
        return false;
    if (ag->t.kind == EX_FLOAT) {
        const double *x = v->d;
        for (uint32_t r = 0; r < n; r++) {
            uint32_t g = gid ? gid[r] : 0;
            bool on = m[r] != 0;
            c->d[g] += on ? x[r] : 0.0;
            c->seen[g] |= on;
        }
    } else {
        const int64_t *x = v->i;
        for (uint32_t r = 0; r < n; r++) {
            uint32_t g = gid ? gid[r] : 0;
            bool on = m[r] != 0;
            c->i[g] = (int64_t)((uint64_t)c->i[g] + (on ? (uint64_t)x[r] : 0));
            c->seen[g] |= on;
        }
    }
    return true;
}

/* Folds n rows into a generic aggregate; gid NULL: the one group 0. */
static int update_generic(agg_tab *t, ex_ectx *ec, int a, const ex_vec *in, const uint32_t *sel,
                          uint32_t n, const uint32_t *gid)
{
    const eng_agg *ag = &t->p->aggs[a];
    agg_col *c = &t->ac[a];
    ex_vec cv = {0}, v = {0}, v2 = {0};
    int rc = 0;
    if (ag->cond && (rc = bx_eval(ec, ag->cond, in, sel, n, &cv)) < 0)
        return rc;
    if (ag->arg && (rc = bx_eval(ec, ag->arg, in, sel, n, &v)) < 0)
        goto out;
    if (ag->arg2 && (rc = bx_eval(ec, ag->arg2, in, sel, n, &v2)) < 0)
        goto out;
    bool old = !ag->distinct && ag->fn < AG_ANYLAST;
    if (ag->cond && !cv.nulls && !cv.is_const && cv.i && cv.t.kind != EX_FLOAT &&
        cond_fast(t, a, &cv, ag->arg ? &v : NULL, n, gid)) {
        n = 0; /* folded */
    }
    for (uint32_t r = 0; r < n && rc == 0; r++) {
        if (ag->cond && !cond_true(&cv, r))
            continue;
        uint32_t g = gid ? gid[r] : 0;
        if (!ag->arg) {
            c->cnt[g]++;
            c->seen[g] = 1;
        } else if (old) {
            rc = update_one(t, a, g, &v, r);
        } else {
            rc = update_ext(t, a, g, &v, ag->arg2 ? &v2 : NULL, r);
        }
    }
    if (rc == -ENOMEM)
        rc = tab_oom(t, ec->err, ec->errlen);
out:
    ex_vec_clear(ec->mem, &cv);
    ex_vec_clear(ec->mem, &v);
    ex_vec_clear(ec->mem, &v2);
    return rc;
}

/* Whether sum() of v takes the tight loops of sum_one and sum_groups: a
 * column (not a constant) of the sum's own storage, integer or float. */
static bool sum_fast(const eng_agg *ag, const ex_vec *v)
{
    return ag->fn == AG_SUM && !v->is_const && v->t.kind != EX_NOTHING &&
           (ag->t.kind == EX_FLOAT) == (v->t.kind == EX_FLOAT);
}

/* Adds rows [0, n) of v into the one group's sum (no GROUP BY); nu is v's
 * NULL map or NULL, a constant where it is called, so each call is its own
 * loop without the test: a NULL row adds nothing, and the sum stays NULL
 * while every row is. Floats in four accumulators (their additions do not
 * wait on each other's); integer sums wrap as ClickHouse's Int64 does. */
static inline __attribute__((always_inline)) void sum_one(agg_col *c, ex_kind k, const ex_vec *v,
                                                          uint32_t n, const uint8_t *nu)
{
    uint32_t r = 0, live = 0;
    if (k == EX_FLOAT) {
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (; r + 4 <= n; r += 4) {
            s0 += !nu || !nu[r] ? v->d[r] : 0.0;
            s1 += !nu || !nu[r + 1] ? v->d[r + 1] : 0.0;
            s2 += !nu || !nu[r + 2] ? v->d[r + 2] : 0.0;
            s3 += !nu || !nu[r + 3] ? v->d[r + 3] : 0.0;
            live += nu ? 4u - nu[r] - nu[r + 1] - nu[r + 2] - nu[r + 3] : 4u;
        }
        for (; r < n; r++) {
            s0 += !nu || !nu[r] ? v->d[r] : 0.0;
            live += !nu || !nu[r];
        }
        c->d[0] += (s0 + s1) + (s2 + s3);
    } else if (k == EX_DECIMAL) {
        /* exact in 128 bits through two 64-bit sums that vectorize: each
         * value biased to unsigned (x + 2^63, a NULL row as 0), its low and
         * high 32-bit halves summed apart (n < 2^32 halves cannot overflow
         * 64 bits), the bias taken off at the end */
        uint64_t lo = 0, hi = 0;
        for (; r < n; r++) {
            uint64_t u = (uint64_t)(!nu || !nu[r] ? v->i[r] : 0) ^ 0x8000000000000000ull;
            lo += u & 0xffffffffu;
            hi += u >> 32;
            live += !nu || !nu[r];
        }
        __int128 s0 = ((__int128)hi << 32) + (__int128)lo - ((__int128)n << 63) + c->i[0];
        c->ovf |= s0 > INT64_MAX || s0 < INT64_MIN;
        c->i[0] = (int64_t)s0;
    } else {
        uint64_t s0 = 0;
        for (; r < n; r++) {
            s0 += !nu || !nu[r] ? (uint64_t)v->i[r] : 0;
            live += !nu || !nu[r];
        }
        c->i[0] = (int64_t)((uint64_t)c->i[0] + s0);
    }
    if (live)
        c->seen[0] = 1;
}

/* Adds row r of v into group gid[r]'s sum, for r in [0, n); nu as in
 * sum_one (a NULL row adds nothing and leaves its group unseen). */
static inline __attribute__((always_inline)) void sum_groups(agg_col *c, ex_kind k, const ex_vec *v,
                                                             uint32_t n, const uint32_t *gid,
                                                             const uint8_t *nu)
{
    if (k == EX_FLOAT) {
        for (uint32_t r = 0; r < n; r++) {
            if (r + AGG_PF_STATE < n)
                __builtin_prefetch(&c->d[gid[r + AGG_PF_STATE]], 1);
            c->d[gid[r]] += !nu || !nu[r] ? v->d[r] : 0.0;
            c->seen[gid[r]] |= !nu || !nu[r];
        }
    } else if (k == EX_DECIMAL) {
        bool o = false;
        for (uint32_t r = 0; r < n; r++) {
            o |= __builtin_add_overflow(c->i[gid[r]], !nu || !nu[r] ? v->i[r] : 0, &c->i[gid[r]]);
            c->seen[gid[r]] |= !nu || !nu[r];
        }
        c->ovf |= o;
    } else {
        for (uint32_t r = 0; r < n; r++) {
            if (r + AGG_PF_STATE < n)
                __builtin_prefetch(&c->i[gid[r + AGG_PF_STATE]], 1);
            c->i[gid[r]] =
                (int64_t)((uint64_t)c->i[gid[r]] + (!nu || !nu[r] ? (uint64_t)v->i[r] : 0));
            c->seen[gid[r]] |= !nu || !nu[r];
        }
    }
}

/* uniq of the one group: the values hashed a batch at a time, then put in
 * the set together (uset_add_many). */
static int uniq_rows(agg_tab *t, agg_col *c, const ex_vec *v, uint32_t n)
{
    uint64_t h[1024];
    for (uint32_t r0 = 0; r0 < n; r0 += 1024) {
        uint32_t e = n - r0 < 1024 ? n : r0 + 1024, m = 0;
        for (uint32_t r = r0; r < e; r++)
            if (!ex_null(v, r))
                h[m++] = val_hash(v, r);
        if (m == 0)
            continue;
        if (uset_add_many(t->mem, &c->u[0], h, m) < 0)
            return -ENOMEM;
        c->seen[0] = 1;
    }
    return 0;
}

/* min() and max() of a number column (of the aggregate's own type) fold in
 * a tight loop for the one group, as update_one folds them: the first value
 * that is not NULL, then only one strictly smaller (larger), so a NaN never
 * replaces a value. */
static bool minmax_fast(const eng_agg *ag, const ex_vec *v)
{
    ex_kind k = v->t.kind;
    return (ag->fn == AG_MIN || ag->fn == AG_MAX) && !v->is_const && k == ag->t.kind &&
           (k == EX_FLOAT || k == EX_INT || k == EX_UINT || k == EX_DATE || k == EX_DATETIME ||
            k == EX_DECIMAL || k == EX_BOOL);
}

#define MINMAX_ONE(T, vals, state, better)                                                         \
    do {                                                                                           \
        const T *x = (const T *)(vals);                                                            \
        uint32_t r = 0;                                                                            \
        T best = 0;                                                                                \
        bool have = c->seen[0];                                                                    \
        if (have)                                                                                  \
            best = (T)(state);                                                                     \
        for (; !have && r < n; r++)                                                                \
            if (!nu || !nu[r]) {                                                                   \
                best = x[r];                                                                       \
                have = true;                                                                       \
            }                                                                                      \
        for (; r < n; r++)                                                                         \
            if ((!nu || !nu[r]) && better(x[r], best))                                             \
                best = x[r];                                                                       \
        if (have) {                                                                                \
            state = best;                                                                          \
            c->seen[0] = 1;                                                                        \
        }                                                                                          \
    } while (0)
#define MM_LESS(a, b)    ((a) < (b))
#define MM_GREATER(a, b) ((a) > (b))

static void minmax_one(agg_col *c, const eng_agg *ag, const ex_vec *v, uint32_t n)
{
    const uint8_t *nu = v->nulls;
    bool mn = ag->fn == AG_MIN;
    if (v->t.kind == EX_FLOAT) {
        if (mn)
            MINMAX_ONE(double, v->d, c->d[0], MM_LESS);
        else
            MINMAX_ONE(double, v->d, c->d[0], MM_GREATER);
    } else if (v->t.kind == EX_UINT) {
        uint64_t st = (uint64_t)c->i[0];
        if (mn)
            MINMAX_ONE(uint64_t, v->i, st, MM_LESS);
        else
            MINMAX_ONE(uint64_t, v->i, st, MM_GREATER);
        c->i[0] = (int64_t)st;
    } else {
        if (mn)
            MINMAX_ONE(int64_t, v->i, c->i[0], MM_LESS);
        else
            MINMAX_ONE(int64_t, v->i, c->i[0], MM_GREATER);
    }
}

/* No GROUP BY: one group (0). count() adds n; sum(), min() and max() of a
 * column reduce it in tight loops (sum_one, minmax_one); everything else goes row by row. */
static int update_global(agg_tab *t, ex_ectx *ec, const ex_vec *in, const uint32_t *sel, uint32_t n)
{
    const eng_plan *p = t->p;
    int rc = 0;
    for (int a = 0; a < p->n_aggs && rc == 0; a++) {
        const eng_agg *ag = &p->aggs[a];
        agg_col *c = &t->ac[a];
        if (agg_generic(ag)) {
            rc = update_generic(t, ec, a, in, sel, n, NULL);
            continue;
        }
        if (ag->fn == AG_COUNT && !ag->arg) {
            c->cnt[0] += n;
            c->seen[0] = 1;
            continue;
        }
        ex_vec v;
        if ((rc = bx_eval(ec, ag->arg, in, sel, n, &v)) < 0)
            return rc;
        if (sum_fast(ag, &v)) {
            if (v.nulls)
                sum_one(c, ag->t.kind, &v, n, v.nulls);
            else
                sum_one(c, ag->t.kind, &v, n, NULL);
        } else if (minmax_fast(ag, &v)) {
            minmax_one(c, ag, &v, n);
        } else if (ag->fn == AG_UNIQ) {
            if ((rc = uniq_rows(t, c, &v, n)) < 0)
                rc = tab_oom(t, ec->err, ec->errlen);
        } else {
            for (uint32_t r = 0; r < n && rc == 0; r++)
                rc = update_one(t, a, 0, &v, r);
            if (rc < 0)
                rc = tab_oom(t, ec->err, ec->errlen);
        }
        ex_vec_clear(ec->mem, &v);
    }
    return rc;
}

static inline uint32_t i1_slot(const agg_tab *t, int64_t x)
{
    uint64_t h = (uint64_t)x * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 32) & t->i1_mask;
}

static void i1_drop(agg_tab *t)
{
    em_free(t->mem, t->i1);
    t->i1 = NULL;
    t->i1_off = true;
}

/* The integer-key map at cap slots (a power of two), its entries moved;
 * false (and the map dropped) without memory. */
static bool i1_alloc(agg_tab *t, uint32_t cap)
{
    struct i1e *ne = em_calloc(t->mem, sizeof(struct i1e) * cap);
    if (!ne) {
        i1_drop(t);
        return false;
    }
    struct i1e *old = t->i1;
    uint32_t oc = old ? t->i1_mask + 1 : 0;
    t->i1 = ne;
    t->i1_mask = cap - 1;
    for (uint32_t i = 0; i < oc; i++)
        if (old[i].g) {
            uint32_t sl = i1_slot(t, old[i].k);
            while (ne[sl].g)
                sl = (sl + 1) & t->i1_mask;
            ne[sl] = old[i];
        }
    em_free(t->mem, old);
    return true;
}

/* Remembers key x -> group g in the integer-key map; grows it, or drops it
 * (i1_off) past AGG_I1_MAX groups or without memory. */
static void i1_put(agg_tab *t, int64_t x, uint32_t g)
{
    if (t->i1_off || !t->i1)
        return;
    if ((t->i1_n + 1) * 2 > t->i1_mask + 1) {
        uint32_t cap = (t->i1_mask + 1) * 2;
        if (cap > 2 * AGG_I1_MAX) {
            i1_drop(t);
            return;
        }
        if (!i1_alloc(t, cap))
            return;
    }
    uint32_t sl = i1_slot(t, x);
    while (t->i1[sl].g) {
        if (t->i1[sl].k == x)
            return;
        sl = (sl + 1) & t->i1_mask;
    }
    t->i1[sl].k = x;
    t->i1[sl].g = g + 1;
    t->i1_n++;
}

/* How far ahead i1_groups prefetches a row's slot. */
#define AGG_I1_PF 16

/* The groups of one plain integer key column through the map, AGG_CHUNK
 * rows at a time: the slot of the row AGG_I1_PF ahead is prefetched (a map
 * of many groups is larger than the caches); the values the map lacks (and
 * NULLs) go to the table together, serialized, hashed and probed as other
 * keys are (probe_keys), and the map remembers them. Returns the rows done
 * (n, or fewer when the map was dropped: the rest go through the table) or
 * -ENOMEM. */
static int64_t i1_groups(agg_tab *t, const ex_vec *v, const uint32_t *s0, uint32_t n, uint32_t *gid)
{
    if (!t->i1 && !i1_alloc(t, 1024))
        return 0;
    const int64_t *iv = v->i;
    const uint8_t *nulls = v->nulls;
    uint32_t miss[AGG_CHUNK], mg[AGG_CHUNK];
    for (uint32_t base = 0; base < n; base += AGG_CHUNK) {
        uint32_t e = n - base < AGG_CHUNK ? n : base + AGG_CHUNK, nm = 0;
        for (uint32_t r = base; r < e; r++) {
            if (r + AGG_I1_PF < n) {
                uint32_t y = s0 ? s0[r + AGG_I1_PF] : r + AGG_I1_PF;
                __builtin_prefetch(&t->i1[i1_slot(t, iv[y])]);
            }
            uint32_t x = s0 ? s0[r] : r;
            if (!(nulls && nulls[x])) {
                int64_t k = iv[x];
                uint32_t sl = i1_slot(t, k);
                uint32_t g1;
                while ((g1 = t->i1[sl].g) && t->i1[sl].k != k)
                    sl = (sl + 1) & t->i1_mask;
                if (g1) {
                    gid[r] = g1 - 1;
                    continue;
                }
            }
            miss[nm++] = r;
        }
        if (nm == 0)
            continue;
        if (keys_reserve(t, nm, (size_t)nm * 16) < 0)
            return -ENOMEM;
        for (uint32_t j = 0; j < nm; j++) {
            uint8_t *kp = t->scratch + (size_t)j * 16;
            memset(kp, 0, 16);
            t->ko[j] = j * 16;
            t->kls[j] = (uint32_t)key_put(kp, v, s0 ? s0[miss[j]] : miss[j], true);
        }
        for (uint32_t j = 0; j < nm; j++)
            t->hs[j] = XXH3_64bits(t->scratch + t->ko[j], t->kls[j]);
        if (probe_keys(t, nm, mg) < 0)
            return -ENOMEM;
        for (uint32_t j = 0; j < nm; j++) {
            uint32_t r = miss[j], x = s0 ? s0[r] : r;
            gid[r] = mg[j];
            if (!(nulls && nulls[x]))
                i1_put(t, iv[x], mg[j]);
        }
        if (t->i1_off || !t->i1)
            return e; /* too many groups, or no memory: the rest through the table */
    }
    return n;
}

static bool i1_kind(ex_kind k)
{
    return k == EX_INT || k == EX_UINT || k == EX_DATE || k == EX_DATETIME || k == EX_BOOL;
}

int agg_tab_update(agg_tab *t, ex_ectx *ec, const ex_vec *in, const uint32_t *sel, uint32_t n)
{
    const eng_plan *p = t->p;
    if (n == 0)
        return 0;
    if (n > t->gids_cap) {
        free(t->gids);
        t->gids_cap = n;
        if (!(t->gids = malloc(sizeof(uint32_t) * n)))
            return tab_oom(t, ec->err, ec->errlen);
    }
    uint32_t *gid = t->gids;
    int rc = 0;
    if (p->n_keys == 0) {
        if (t->n == 0) {
            uint8_t z = 0;
            if (lookup(t, &z, 0) < 0)
                return tab_oom(t, ec->err, ec->errlen);
        }
        return update_global(t, ec, in, sel, n);
    } else {
        ex_vec kv[16];
        int nk = p->n_keys;
        if (nk > 16) {
            snprintf(ec->err, ec->errlen, "GROUP BY has %d keys: at most 16 are supported", nk);
            return -ENOTSUP;
        }
        /* a key that is a column is read in place through sel (no gather) */
        const uint32_t *ks[16];
        int done = 0;
        for (; done < nk; done++) {
            const bx *e = p->keys[done];
            if (e->op == BX_COL) {
                kv[done] = in[e->col];
                kv[done].own = 0;
                ks[done] = sel;
            } else if ((rc = bx_eval(ec, e, in, sel, n, &kv[done])) < 0) {
                break;
            } else {
                ks[done] = NULL;
            }
        }
        if (rc == 0 && nk == 1 && kv[0].dict && !kv[0].is_const) {
            /* dictionary: one lookup per distinct entry */
            const cb_column *d = kv[0].dict;
            const uint32_t *idx = kv[0].idx, *s0 = ks[0];
            const uint8_t *nulls = kv[0].nulls;
            rc = dict_groups(t, d, idx, s0, n, nulls);
            for (uint32_t r = 0; r < n && rc == 0; r++) {
                uint32_t x = s0 ? s0[r] : r;
                if (nulls && nulls[x]) {
                    uint8_t z = 1;
                    int64_t g = lookup(t, &z, 1);
                    if (g < 0)
                        rc = -ENOMEM;
                    gid[r] = (uint32_t)g;
                    continue;
                }
                gid[r] = t->dmap[idx[x]];
            }
        } else if (rc == 0) {
            uint32_t from = 0;
            if (nk == 1 && !t->i1_off && i1_kind(kv[0].t.kind) && !kv[0].dict && !kv[0].is_const &&
                kv[0].i) {
                /* one integer key: through the map while it holds */
                int64_t done_rows = i1_groups(t, &kv[0], ks[0], n, gid);
                if (done_rows < 0)
                    rc = (int)done_rows;
                else
                    from = (uint32_t)done_rows;
            }
            /* a chunk at a time: serialize and hash, then probe */
            for (uint32_t base = from; base < n && rc == 0; base += AGG_CHUNK) {
                uint32_t m = n - base < AGG_CHUNK ? n - base : AGG_CHUNK;
                size_t need = 0;
                for (uint32_t r = base; r < base + m; r++)
                    for (int k = 0; k < nk; k++)
                        need += key_size(&kv[k], ks[k] ? ks[k][r] : r);
                if (keys_reserve(t, m, need) < 0) {
                    rc = -ENOMEM;
                    break;
                }
                size_t o = 0;
                if (nk == 1 && ex_is_bytes(kv[0].t.kind) && !kv[0].dict && !kv[0].is_const) {
                    /* one plain string key: key_put without the dispatch */
                    const uint32_t *off = kv[0].off, *s0 = ks[0];
                    const uint8_t *data = kv[0].data, *nulls = kv[0].nulls;
                    for (uint32_t j = 0; j < m; j++) {
                        uint32_t x = s0 ? s0[base + j] : base + j;
                        uint8_t *kp = t->scratch + o;
                        memset(kp, 0, 16);
                        uint32_t l = 1;
                        if (nulls && nulls[x]) {
                            kp[0] = 1;
                        } else {
                            uint32_t b = off[x], sl = off[x + 1] - b;
                            memcpy(kp + 1, data + b, sl);
                            l = 1 + sl;
                        }
                        t->ko[j] = (uint32_t)o;
                        t->kls[j] = l;
                        o += l > 16 ? l : 16;
                    }
                } else {
                    for (uint32_t j = 0; j < m; j++) {
                        uint8_t *kp = t->scratch + o;
                        memset(kp, 0, 16);
                        size_t l = 0;
                        for (int k = 0; k < nk; k++)
                            l += key_put(kp + l, &kv[k], ks[k] ? ks[k][base + j] : base + j,
                                         k == nk - 1);
                        t->ko[j] = (uint32_t)o;
                        t->kls[j] = (uint32_t)l;
                        o += l > 16 ? l : 16;
                    }
                }
                /* hashed in a second pass: reading a key right after its
                 * byte-wise stores would stall on store forwarding */
                for (uint32_t j = 0; j < m; j++)
                    t->hs[j] = XXH3_64bits(t->scratch + t->ko[j], t->kls[j]);
                rc = probe_keys(t, m, gid + base);
            }
        }
        for (int k = 0; k < done; k++)
            ex_vec_clear(ec->mem, &kv[k]);
        if (rc == -ENOMEM)
            return tab_oom(t, ec->err, ec->errlen);
        if (rc < 0)
            return rc;
    }
    for (int a = 0; a < p->n_aggs; a++) {
        const eng_agg *ag = &p->aggs[a];
        agg_col *c = &t->ac[a];
        if (agg_generic(ag)) {
            if ((rc = update_generic(t, ec, a, in, sel, n, gid)) < 0)
                return rc;
            continue;
        }
        if (ag->fn == AG_COUNT && !ag->arg) {
            for (uint32_t r = 0; r < n; r++) {
                if (r + AGG_PF_STATE < n)
                    __builtin_prefetch(&c->cnt[gid[r + AGG_PF_STATE]], 1);
                c->cnt[gid[r]]++;
            }
            if (n)
                c->seen[gid[0]] = 1;
            continue;
        }
        ex_vec v;
        if ((rc = bx_eval(ec, ag->arg, in, sel, n, &v)) < 0)
            return rc;
        /* tight loops for the common cases */
        if (sum_fast(ag, &v)) {
            if (v.nulls)
                sum_groups(c, ag->t.kind, &v, n, gid, v.nulls);
            else
                sum_groups(c, ag->t.kind, &v, n, gid, NULL);
        } else {
            for (uint32_t r = 0; r < n && rc == 0; r++)
                rc = update_one(t, a, gid[r], &v, r);
        }
        ex_vec_clear(ec->mem, &v);
        if (rc < 0)
            return tab_oom(t, ec->err, ec->errlen);
    }
    return 0;
}

/* The value of state sg of src becomes state g's of dst (a string moves). */
static void move_value(agg_tab *dst, const eng_agg *ag, agg_col *d, uint32_t g, agg_col *s,
                       uint32_t sg)
{
    if (ex_is_bytes(ag->t.kind)) {
        em_free(dst->mem, d->s[g]);
        d->s[g] = s->s[sg];
        s->s[sg] = NULL;
    } else if (ag->t.kind == EX_FLOAT) {
        d->d[g] = s->d[sg];
    } else {
        d->i[g] = s->i[sg];
    }
}

/* Merges state sg of src into state g of dst for a generic aggregate a
 * (src's seen[sg] is set). Moments combine by Chan's formulas. */
static int merge_ext(agg_tab *dst, int a, uint32_t g, agg_tab *src, uint32_t sg)
{
    const eng_agg *ag = &dst->p->aggs[a];
    agg_col *d = &dst->ac[a], *s = &src->ac[a];
    if (ag->distinct || ag->fn == AG_UNIQ) {
        return uset_merge(dst->mem, &d->u[g], &s->u[sg]);
    }
    bool first = !d->seen[g];
    switch (ag->fn) {
    case AG_GROUPARRAY:
    case AG_GROUPUNIQ:
    case AG_TOPK: {
        const vlist *l = s->vl[sg];
        for (uint32_t k = 0; l && k < l->cnt; k++) {
            int rc = vl_add(dst->mem, ag, &d->vl[g], l->b + l->off[k], l->off[k + 1] - l->off[k],
                            l->hits ? l->hits[k] : 1);
            if (rc < 0)
                return rc;
        }
        return 0;
    }
    case AG_QUANTILE:
    case AG_QUANTILE_EXACT: {
        qbuf *q = s->q[sg];
        for (uint32_t k = 0; q && k < q->n; k++)
            if (qbuf_push(dst->mem, &d->q[g], q->v[k]) < 0)
                return -ENOMEM;
        return 0;
    }
    case AG_VAR_POP:
    case AG_VAR_SAMP:
    case AG_STDDEV_POP:
    case AG_STDDEV_SAMP:
    case AG_CORR: {
        double na = (double)d->cnt[g], nb = (double)s->cnt[sg], nn = na + nb;
        if (nb == 0)
            return 0;
        double dx = s->d[sg] - d->d[g];
        d->m2[g] += s->m2[sg] + dx * dx * na * nb / nn;
        if (ag->fn == AG_CORR) {
            double dy = s->my[sg] - d->my[g];
            d->m2y[g] += s->m2y[sg] + dy * dy * na * nb / nn;
            d->cxy[g] += s->cxy[sg] + dx * dy * na * nb / nn;
            d->my[g] += dy * nb / nn;
        }
        d->d[g] += dx * nb / nn;
        d->cnt[g] += s->cnt[sg];
        return 0;
    }
    case AG_ARGMIN:
    case AG_ARGMAX: {
        bool take = first;
        if (!take) {
            int k;
            if (ex_is_bytes(ag->arg2->t.kind)) {
                uint32_t l1, l2;
                memcpy(&l1, s->ks[sg], 4);
                memcpy(&l2, d->ks[g], 4);
                k = scmp(s->ks[sg] + 4, l1, d->ks[g] + 4, l2);
            } else if (ag->arg2->t.kind == EX_FLOAT) {
                double x, y;
                memcpy(&x, &s->ki[sg], 8);
                memcpy(&y, &d->ki[g], 8);
                k = x < y ? -1 : x > y;
            } else if (ag->arg2->t.kind == EX_UINT) {
                k = (uint64_t)s->ki[sg] < (uint64_t)d->ki[g]
                        ? -1
                        : (uint64_t)s->ki[sg] > (uint64_t)d->ki[g];
            } else {
                k = s->ki[sg] < d->ki[g] ? -1 : s->ki[sg] > d->ki[g];
            }
            take = ag->fn == AG_ARGMIN ? k < 0 : k > 0;
        }
        if (!take)
            return 0;
        if (ex_is_bytes(ag->arg2->t.kind)) {
            em_free(dst->mem, d->ks[g]);
            d->ks[g] = s->ks[sg];
            s->ks[sg] = NULL;
        } else {
            d->ki[g] = s->ki[sg];
        }
    }
        __attribute__((fallthrough)); /* then the value, as anyLast keeps it */
    case AG_ANYLAST: move_value(dst, ag, d, g, s, sg); return 0;
    default: {
        /* the seven first under -If: the same states as without it */
        return 1;
    }
    }
}

/* Merges aggregate a's state sg of src into state g of dst (src's strings
 * move). 0 or -ENOMEM. */
static int merge_agg(agg_tab *dst, uint32_t g, agg_tab *src, uint32_t sg, int a)
{
    const eng_agg *ag = &dst->p->aggs[a];
    agg_col *d = &dst->ac[a], *s = &src->ac[a];
    if (!s->seen[sg] && ag->fn != AG_COUNT)
        return 0;
    if (agg_generic(ag) && ag->fn != AG_COUNT) {
        int mr = merge_ext(dst, a, g, src, sg);
        if (mr < 0)
            return -ENOMEM;
        if (mr == 0) {
            d->seen[g] |= s->seen[sg];
            return 0;
        }
    }
    switch (ag->fn) {
    case AG_COUNT: d->cnt[g] += s->cnt[sg]; break;
    case AG_SUM:
        if (ag->t.kind == EX_FLOAT)
            d->d[g] += s->d[sg];
        else if (ag->t.kind == EX_DECIMAL)
            d->ovf |= s->ovf | __builtin_add_overflow(d->i[g], s->i[sg], &d->i[g]);
        else
            d->i[g] = (int64_t)((uint64_t)d->i[g] + (uint64_t)s->i[sg]);
        break;
    case AG_AVG:
        d->d[g] += s->d[sg];
        if (ag->arg && ag->arg->t.kind == EX_DECIMAL &&
            __builtin_add_overflow(d->i[g], s->i[sg], &d->i[g])) {
            d->d[g] += (double)d->i[g];
            d->i[g] = s->i[sg];
        } else if (!ag->arg || ag->arg->t.kind != EX_DECIMAL)
            d->i[g] = (int64_t)((uint64_t)d->i[g] + (uint64_t)s->i[sg]); /* wraps, as sum */
        d->cnt[g] += s->cnt[sg];
        break;
    case AG_UNIQ:
        if (uset_merge(dst->mem, &d->u[g], &s->u[sg]) < 0)
            return -ENOMEM;
        break;
    default: {
        bool take = !d->seen[g];
        if (!take && ag->fn != AG_ANY) {
            int cmpv;
            if (ex_is_bytes(ag->t.kind)) {
                uint32_t l1, l2;
                memcpy(&l1, s->s[sg], 4);
                memcpy(&l2, d->s[g], 4);
                cmpv = scmp(s->s[sg] + 4, l1, d->s[g] + 4, l2);
            } else if (ag->t.kind == EX_FLOAT)
                cmpv = s->d[sg] < d->d[g] ? -1 : s->d[sg] > d->d[g];
            else if (ag->t.kind == EX_UINT)
                cmpv = (uint64_t)s->i[sg] < (uint64_t)d->i[g]
                           ? -1
                           : (uint64_t)s->i[sg] > (uint64_t)d->i[g];
            else
                cmpv = s->i[sg] < d->i[g] ? -1 : s->i[sg] > d->i[g];
            take = ag->fn == AG_MIN ? cmpv < 0 : cmpv > 0;
        }
        if (take)
            move_value(dst, ag, d, g, s, sg);
    }
    }
    d->seen[g] |= s->seen[sg];
    return 0;
}

/* Merges group sg of src into group g of dst: 0 or -ENOMEM. */
static int merge_group(agg_tab *dst, agg_tab *src, uint32_t g, uint32_t sg)
{
    for (int a = 0; a < dst->p->n_aggs; a++)
        if (merge_agg(dst, g, src, sg, a) < 0)
            return -ENOMEM;
    return 0;
}

/* Groups merged a chunk at a time: the chunk's keys hashed, then looked up
 * in dst with a slot and a record prefetched ahead (as probe_keys), then
 * the states folded with the destination's states prefetched ahead, so the
 * misses of a large destination overlap. */
#define AGG_MCHUNK 512

static void prefetch_states(const agg_tab *t, uint32_t g)
{
    for (int a = 0; a < t->p->n_aggs; a++) {
        const agg_col *c = &t->ac[a];
        __builtin_prefetch(&c->seen[g], 1);
        if (c->cnt)
            __builtin_prefetch(&c->cnt[g], 1);
        if (c->d)
            __builtin_prefetch(&c->d[g], 1);
        if (c->i)
            __builtin_prefetch(&c->i[g], 1);
    }
}

static uint32_t agg_part_of(uint64_t h, uint32_t nparts)
{
    return (uint32_t)(((h >> 32) * nparts) >> 32);
}

int agg_tab_merge_part(agg_tab *dst, agg_tab *src, uint32_t part, uint32_t nparts, char *err,
                       size_t errlen)
{
    uint64_t hs[AGG_MCHUNK];
    uint32_t gid[AGG_MCHUNK], sgs[AGG_MCHUNK];
    for (uint32_t s0 = 0; s0 < src->n;) {
        uint32_t m = 0;
        for (; s0 < src->n && m < AGG_MCHUNK; s0++) {
            uint64_t h = rec_hash(src, &src->rec[s0]);
            if (nparts > 1 && agg_part_of(h, nparts) != part)
                continue;
            hs[m] = h;
            sgs[m++] = s0;
        }
        for (uint32_t j = 0; j < m; j++) {
            if (j + AGG_PF_SLOT < m)
                __builtin_prefetch(&dst->slots[slot_home(dst, hs[j + AGG_PF_SLOT])]);
            if (j + AGG_PF_REC < m) {
                uint64_t h = hs[j + AGG_PF_REC], e = dst->slots[slot_home(dst, h)];
                if (e && ((e ^ h) >> 32) == 0)
                    __builtin_prefetch(&dst->rec[(uint32_t)e - 1]);
            }
            const grec *sr = &src->rec[sgs[j]];
            int64_t x = lookup_h(dst, key_of(src, sr), sr->len, hs[j]);
            if (x < 0)
                return tab_oom(dst, err, errlen);
            gid[j] = (uint32_t)x;
        }
        for (uint32_t j = 0; j < m; j++) {
            if (j + AGG_PF_REC < m)
                prefetch_states(dst, gid[j + AGG_PF_REC]);
            if (merge_group(dst, src, gid[j], sgs[j]) < 0)
                return tab_oom(dst, err, errlen);
        }
    }
    return 0;
}

int agg_tab_merge(agg_tab *dst, agg_tab *src, char *err, size_t errlen)
{
    return agg_tab_merge_part(dst, src, 0, 1, err, errlen);
}

/* Quickselect: a[k] is the k-th smallest of a[0..n) after it (elements
 * partitioned around it). One per storage: double, int64, uint64. */
#define AGG_SELECT(name, T)                                                                        \
    static void name(T *a, uint32_t n, uint32_t k)                                                 \
    {                                                                                              \
        uint32_t lo = 0, hi = n - 1;                                                               \
        while (lo < hi) {                                                                          \
            T x = a[lo + (hi - lo) / 2];                                                           \
            uint32_t i = lo, j = hi;                                                               \
            while (i <= j) {                                                                       \
                while (a[i] < x)                                                                   \
                    i++;                                                                           \
                while (a[j] > x)                                                                   \
                    j--;                                                                           \
                if (i <= j) {                                                                      \
                    T s = a[i];                                                                    \
                    a[i] = a[j];                                                                   \
                    a[j] = s;                                                                      \
                    i++;                                                                           \
                    if (j == 0)                                                                    \
                        break;                                                                     \
                    j--;                                                                           \
                }                                                                                  \
            }                                                                                      \
            if (k <= j)                                                                            \
                hi = j;                                                                            \
            else if (k >= i)                                                                       \
                lo = i;                                                                            \
            else                                                                                   \
                return;                                                                            \
        }                                                                                          \
    }
AGG_SELECT(select_d, double)
AGG_SELECT(select_i, int64_t)
AGG_SELECT(select_u, uint64_t)
#undef AGG_SELECT

/* The result of quantile (interpolated) or quantileExact for group g: NaN
 * values are dropped first (they have no place in the order). */
static void finish_quantile(const eng_agg *ag, qbuf *q, ex_vec *v, uint32_t g)
{
    uint32_t n = q ? q->n : 0;
    bool fl = ag->fn == AG_QUANTILE || ag->arg->t.kind == EX_FLOAT;
    if (fl && n) {
        double *a = (double *)q->v;
        uint32_t m = 0;
        for (uint32_t k = 0; k < n; k++)
            if (!isnan(a[k]))
                a[m++] = a[k];
        n = m;
    }
    if (n == 0) {
        if (v->t.kind == EX_FLOAT)
            v->d[g] = NAN;
        else
            v->i[g] = 0;
        return;
    }
    if (ag->fn == AG_QUANTILE) {
        double *a = (double *)q->v;
        double idx = ag->level * (double)(n - 1);
        uint32_t lo = (uint32_t)idx;
        if (lo > n - 1)
            lo = n - 1;
        select_d(a, n, lo);
        double x = a[lo], frac = idx - (double)lo;
        if (frac > 0 && lo + 1 < n) {
            double y = a[lo + 1];
            for (uint32_t k = lo + 2; k < n; k++)
                if (a[k] < y)
                    y = a[k];
            x = x * (1 - frac) + y * frac;
        }
        v->d[g] = x;
        return;
    }
    /* ClickHouse's quantileExact: the element at floor(level * n) (the last at level 1) */
    uint32_t k = ag->level < 1 ? (uint32_t)(ag->level * (double)n) : n - 1;
    if (k > n - 1)
        k = n - 1;
    if (fl) {
        select_d((double *)q->v, n, k);
        double x = ((double *)q->v)[k];
        if (v->t.kind == EX_FLOAT)
            v->d[g] = x;
        else
            v->i[g] = (int64_t)x;
    } else if (ag->arg->t.kind == EX_UINT) {
        select_u((uint64_t *)q->v, n, k);
        v->i[g] = q->v[k];
    } else {
        select_i(q->v, n, k);
        v->i[g] = q->v[k];
    }
}

/* The result of a generic aggregate for group g into v (Float64 but for
 * sumDistinct of integers and quantileExact). */
static void finish_ext(agg_tab *t, int a, uint32_t g, ex_vec *v)
{
    const eng_agg *ag = &t->p->aggs[a];
    agg_col *c = &t->ac[a];
    bool seen = c->seen[g];
    v->nulls[g] = ag->t.nullable && !seen;
    if (ag->distinct) {
        /* sum / avg over the distinct values */
        uset *u = c->u[g];
        bool fl = ag->arg->t.kind == EX_FLOAT;
        double sd = 0;
        uint64_t si = 0, cnt = 0;
        for (uint32_t k = 0; u && k <= u->mask; k++)
            if (u->v[k]) {
                if (fl) {
                    double x;
                    memcpy(&x, &u->v[k], 8);
                    sd += x;
                } else if (ag->arg->t.kind == EX_UINT) {
                    sd += (double)u->v[k];
                    si += u->v[k];
                } else {
                    sd += (double)(int64_t)u->v[k];
                    si += u->v[k];
                }
                cnt++;
            }
        if (u && u->has_zero)
            cnt++;
        if (ag->fn == AG_AVG) {
            v->d[g] = cnt ? sd / (double)cnt : NAN;
            if (ag->arg->t.kind == EX_DECIMAL)
                v->d[g] /= (double)ex_pow10(ag->arg->t.scale);
        } else if (v->t.kind == EX_FLOAT)
            v->d[g] = sd;
        else
            v->i[g] = (int64_t)si;
        return;
    }
    double nn = c->cnt ? (double)c->cnt[g] : 0, r = NAN;
    switch (ag->fn) {
    case AG_QUANTILE:
    case AG_QUANTILE_EXACT: finish_quantile(ag, c->q[g], v, g); return;
    case AG_VAR_POP:
    case AG_STDDEV_POP:
        if (nn > 0)
            r = c->m2[g] / nn;
        break;
    case AG_VAR_SAMP:
    case AG_STDDEV_SAMP:
        if (nn > 1)
            r = c->m2[g] / (nn - 1);
        break;
    case AG_CORR:
        if (nn > 1)
            r = c->cxy[g] / sqrt(c->m2[g] * c->m2y[g]);
        break;
    default: break;
    }
    if ((ag->fn == AG_STDDEV_POP || ag->fn == AG_STDDEV_SAMP) && !isnan(r))
        r = sqrt(r < 0 ? 0 : r);
    v->d[g] = r;
}

int agg_tab_finish(agg_tab *t, ex_vec *out, char *err, size_t errlen)
{
    const eng_plan *p = t->p;
    eng_mem *m = t->mem;
    if (p->n_keys == 0 && t->n == 0) {
        /* aggregates without GROUP BY over no rows: one row of empty states */
        uint8_t z = 0;
        if (lookup(t, &z, 0) < 0)
            return tab_oom(t, err, errlen);
    }
    uint32_t n = t->n;
    int ncols = p->n_keys + p->n_aggs;
    for (int k = 0; k < ncols; k++)
        memset(&out[k], 0, sizeof(out[k]));
    for (int k = 0; k < p->n_keys; k++) {
        ex_type ty = p->keys[k]->t;
        ty.nullable = true;
        if (ex_vec_alloc(m, &out[k], ty, n) < 0)
            return tab_oom(t, err, errlen);
        out[k].t = p->keys[k]->t;
        if (out[k].t.kind == EX_NOTHING)
            out[k].t.nullable = true;
    }
    /* decode keys */
    for (uint32_t g = 0; g < n; g++) {
        const uint8_t *kp = key_of(t, &t->rec[g]), *kend = kp + t->rec[g].len;
        for (int k = 0; k < p->n_keys; k++) {
            ex_vec *v = &out[k];
            bool nul = *kp++ == 1;
            v->nulls[g] = nul;
            if (ex_is_bytes(v->t.kind)) {
                uint32_t l = 0;
                if (!nul && k == p->n_keys - 1) {
                    l = (uint32_t)(kend - kp);
                } else if (!nul) {
                    memcpy(&l, kp, 4);
                    kp += 4;
                }
                if (ex_vec_str_put(m, v, g, kp, l) < 0)
                    return tab_oom(t, err, errlen);
                kp += l;
            } else if (!nul) {
                if (v->t.kind == EX_FLOAT)
                    memcpy(&v->d[g], kp, 8);
                else if (v->t.kind != EX_NOTHING)
                    memcpy(&v->i[g], kp, 8);
                kp += 8;
            } else {
                if (v->t.kind == EX_FLOAT)
                    v->d[g] = 0;
                else if (v->t.kind != EX_NOTHING)
                    v->i[g] = 0;
                kp += 8 - 8; /* a NULL key has no payload */
            }
        }
    }
    for (int k = 0; k < p->n_keys; k++)
        if (!out[k].t.nullable && out[k].t.kind != EX_NOTHING) {
            em_free(m, out[k].nulls);
            out[k].nulls = NULL;
            out[k].own &= (uint8_t)~EXO_NULLS;
        }
    for (int a = 0; a < p->n_aggs; a++) {
        const eng_agg *ag = &p->aggs[a];
        agg_col *c = &t->ac[a];
        ex_vec *v = &out[p->n_keys + a];
        if (c->ovf) {
            char nm[128];
            sql_node_name(ag->node, nm, sizeof(nm));
            snprintf(err, errlen,
                     "%s overflows: this engine holds Decimal sums in 64 bits (18 digits), "
                     "where ClickHouse's Decimal128 holds 38; sum fewer rows per group or "
                     "CAST the argument to Float64",
                     nm);
            return -ERANGE;
        }
        ex_type ty = ag->t;
        ty.nullable = true;
        if (ex_vec_alloc(m, v, ty, n) < 0)
            return tab_oom(t, err, errlen);
        v->t = ag->t;
        bool any_null = false;
        for (uint32_t g = 0; g < n; g++) {
            bool seen = c->seen ? c->seen[g] : false;
            if (ag->fn == AG_GROUPARRAY || ag->fn == AG_GROUPUNIQ || ag->fn == AG_TOPK) {
                int rc = vl_finish(t, ag, c->vl[g], v, g);
                if (rc == -E2BIG) {
                    snprintf(err, errlen, "the arrays of %s are larger than 4 GiB",
                             ag->node && ag->node->s ? ag->node->s : "an aggregate");
                    return rc;
                }
                if (rc < 0)
                    return tab_oom(t, err, errlen);
                continue;
            }
            if ((ag->distinct || ag->fn >= AG_ANYLAST) && ag->fn != AG_ANYLAST &&
                ag->fn != AG_ARGMIN && ag->fn != AG_ARGMAX) {
                finish_ext(t, a, g, v);
                any_null |= v->nulls[g];
                continue;
            }
            switch (ag->fn) {
            case AG_COUNT: v->i[g] = (int64_t)c->cnt[g]; break;
            case AG_UNIQ: v->i[g] = c->u[g] ? (int64_t)c->u[g]->n + c->u[g]->has_zero : 0; break;
            case AG_AVG:
                v->d[g] = c->cnt[g] ? (c->d[g] + (double)c->i[g]) / (double)c->cnt[g] : NAN;
                if (ag->arg && ag->arg->t.kind == EX_DECIMAL)
                    v->d[g] /= (double)ex_pow10(ag->arg->t.scale);
                v->nulls[g] = ag->t.nullable && !c->cnt[g];
                break;
            case AG_SUM:
                if (ag->t.kind == EX_FLOAT)
                    v->d[g] = c->d[g];
                else
                    v->i[g] = c->i[g];
                v->nulls[g] = ag->t.nullable && !seen;
                break;
            default:
                v->nulls[g] = ag->t.nullable && !seen;
                if (ex_is_bytes(ag->t.kind)) {
                    uint32_t l = 0;
                    const uint8_t *s = (const uint8_t *)"";
                    if (seen && c->s[g]) {
                        memcpy(&l, c->s[g], 4);
                        s = c->s[g] + 4;
                    }
                    if (ex_vec_str_put(m, v, g, s, l) < 0)
                        return tab_oom(t, err, errlen);
                } else if (ag->t.kind == EX_FLOAT)
                    v->d[g] = seen ? c->d[g] : 0;
                else if (ag->t.kind != EX_NOTHING)
                    v->i[g] = seen ? c->i[g] : 0;
                else
                    v->nulls[g] = 1;
            }
            any_null |= v->nulls[g];
        }
        if (!ag->t.nullable && ag->t.kind != EX_NOTHING) {
            em_free(m, v->nulls);
            v->nulls = NULL;
            v->own &= (uint8_t)~EXO_NULLS;
        }
        (void)any_null;
    }
    return (int)n;
}

/* ---- the wire (dist/dist_state.h draws the layout) ---- */

/* Whether kl bytes at k are a key of the plan's key columns, as key_put
 * writes them (agg_tab_finish decodes keys without checks). */
static bool key_valid(const eng_plan *p, const uint8_t *k, uint32_t kl)
{
    uint32_t o = 0;
    for (int c = 0; c < p->n_keys; c++) {
        if (o >= kl)
            return false;
        uint8_t nul = k[o++];
        if (nul > 1)
            return false;
        if (nul)
            continue;
        if (ex_is_bytes(p->keys[c]->t.kind)) {
            if (c == p->n_keys - 1)
                return true; /* the last string runs to the end */
            if (kl - o < 4)
                return false;
            uint32_t l;
            memcpy(&l, k + o, 4);
            o += 4;
            if (l > kl - o)
                return false;
            o += l;
        } else {
            if (kl - o < 8)
                return false;
            o += 8;
        }
    }
    return o == kl;
}

/* A kept value (min, max, any, anyLast, argMin/argMax's value): a string
 * with its length, a double, or the int64. */
static void enc_value(ew_buf *b, const eng_agg *ag, const agg_col *c, uint32_t g)
{
    if (ex_is_bytes(ag->t.kind)) {
        uint32_t l = 0;
        if (c->s[g])
            memcpy(&l, c->s[g], 4);
        ew_bytes(b, c->s[g] ? c->s[g] + 4 : NULL, l);
    } else if (ag->t.kind == EX_FLOAT) {
        ew_f64(b, c->d[g]);
    } else {
        ew_u64(b, (uint64_t)c->i[g]);
    }
}

/* A set of 64-bit values (uniq's hashes, -Distinct's value bits). */
static void enc_set(ew_buf *b, const uset *u)
{
    ew_u8(b, u && u->has_zero);
    ew_u32(b, u ? u->n : 0);
    for (uint32_t k = 0; u && k <= u->mask; k++)
        if (u->v[k])
            ew_u64(b, u->v[k]);
}

int agg_tab_encode(const agg_tab *t, ew_buf *b)
{
    const eng_plan *p = t->p;
    ew_u32(b, t->n);
    for (uint32_t g = 0; g < t->n; g++) {
        const grec *r = &t->rec[g];
        ew_bytes(b, key_of(t, r), r->len);
        for (int a = 0; a < p->n_aggs; a++) {
            const eng_agg *ag = &p->aggs[a];
            const agg_col *c = &t->ac[a];
            ew_u8(b, c->seen[g]);
            if (ag->distinct) {
                enc_set(b, c->u[g]);
                continue;
            }
            switch (ag->fn) {
            case AG_COUNT: ew_u64(b, c->cnt[g]); break;
            case AG_AVG:
                ew_f64(b, c->d[g]);
                ew_u64(b, (uint64_t)c->i[g]);
                ew_u64(b, c->cnt[g]);
                break;
            case AG_UNIQ: enc_set(b, c->u[g]); break;
            case AG_GROUPARRAY:
            case AG_GROUPUNIQ:
            case AG_TOPK: {
                const vlist *l = c->vl[g];
                ew_u32(b, l ? l->cnt : 0);
                for (uint32_t k = 0; l && k < l->cnt; k++) {
                    uint32_t kl = l->off[k + 1] - l->off[k];
                    ew_u32(b, kl);
                    ew_raw(b, l->b + l->off[k], kl);
                    if (ag->fn == AG_TOPK)
                        ew_u64(b, l->hits[k]);
                }
                break;
            }
            case AG_QUANTILE:
            case AG_QUANTILE_EXACT: {
                const qbuf *q = c->q[g];
                ew_u32(b, q ? q->n : 0);
                for (uint32_t k = 0; q && k < q->n; k++)
                    ew_u64(b, (uint64_t)q->v[k]);
                break;
            }
            case AG_VAR_POP:
            case AG_VAR_SAMP:
            case AG_STDDEV_POP:
            case AG_STDDEV_SAMP:
            case AG_CORR:
                ew_u64(b, c->cnt[g]);
                ew_f64(b, c->d[g]);
                ew_f64(b, c->m2[g]);
                if (ag->fn == AG_CORR) {
                    ew_f64(b, c->my[g]);
                    ew_f64(b, c->m2y[g]);
                    ew_f64(b, c->cxy[g]);
                }
                break;
            case AG_ARGMIN:
            case AG_ARGMAX:
                if (!c->seen[g])
                    break; /* no key and no value yet */
                if (ex_is_bytes(ag->arg2->t.kind)) {
                    uint32_t l = 0;
                    if (c->ks[g])
                        memcpy(&l, c->ks[g], 4);
                    ew_bytes(b, c->ks[g] ? c->ks[g] + 4 : NULL, l);
                } else {
                    ew_u64(b, (uint64_t)c->ki[g]);
                }
                enc_value(b, ag, c, g);
                break;
            default:
                if (ag->fn != AG_SUM && !c->seen[g])
                    break; /* min/max/any/anyLast without a value: no payload */
                enc_value(b, ag, c, g);
            }
        }
    }
    return b->err;
}

static int wire_bad(er_buf *r, char *err, size_t errlen, const char *what)
{
    er_fail(r);
    snprintf(err, errlen,
             "a partial aggregate state is malformed (%s): the sending server "
             "runs another version or the bytes were damaged",
             what);
    return -EBADMSG;
}

/* Reads a kept value enc_value wrote into state g: 0, -EBADMSG (r->err
 * set) or -ENOMEM. */
static int dec_value(agg_tab *t, const eng_agg *ag, agg_col *c, uint32_t g, er_buf *r)
{
    if (ex_is_bytes(ag->t.kind)) {
        uint32_t l;
        const uint8_t *s = er_bytes(r, (uint32_t)er_left(r), &l);
        if (!s)
            return er_fail(r);
        return str_set(t->mem, &c->s[g], s, l) < 0 ? -ENOMEM : 0;
    }
    if (ag->t.kind == EX_FLOAT)
        c->d[g] = er_f64(r);
    else
        c->i[g] = (int64_t)er_u64(r);
    return 0;
}

/* Reads a set enc_set wrote into *sp: 0, -EBADMSG (r->err set) or -ENOMEM. */
static int dec_set(agg_tab *t, uset **sp, er_buf *r)
{
    uint8_t hz = er_u8(r);
    uint32_t m = er_count(r, 8, UINT32_MAX / 4);
    if (r->err || hz > 1)
        return er_fail(r);
    if (hz && uset_add(t->mem, sp, 0) < 0)
        return -ENOMEM;
    for (uint32_t j = 0; j < m; j++) {
        uint64_t h = er_u64(r);
        if (h == 0 || r->err)
            return er_fail(r);
        if (uset_add(t->mem, sp, h) < 0)
            return -ENOMEM;
    }
    if (*sp && (*sp)->n != m)
        return er_fail(r); /* a value sent twice */
    return 0;
}

/* Reads aggregate a's state (after its seen flag) into the empty state g
 * of t. 0, -EBADMSG or -ENOMEM with a sentence in err. */
static int dec_state(agg_tab *t, int a, uint32_t g, uint8_t seen, er_buf *r, char *err,
                     size_t errlen)
{
    const eng_agg *ag = &t->p->aggs[a];
    agg_col *c = &t->ac[a];
    c->seen[g] = seen;
    if (ag->distinct) {
        if (dec_set(t, &c->u[g], r) < 0)
            return r->err ? wire_bad(r, err, errlen, "distinct set") : tab_oom(t, err, errlen);
        return 0;
    }
    switch (ag->fn) {
    case AG_COUNT: c->cnt[g] = er_u64(r); break;
    case AG_AVG:
        c->d[g] = er_f64(r);
        c->i[g] = (int64_t)er_u64(r);
        c->cnt[g] = er_u64(r);
        break;
    case AG_UNIQ:
        if (dec_set(t, &c->u[g], r) < 0)
            return r->err ? wire_bad(r, err, errlen, "uniq set") : tab_oom(t, err, errlen);
        break;
    case AG_GROUPARRAY:
    case AG_GROUPUNIQ:
    case AG_TOPK: {
        /* each value is at least its 4-byte length (and a topK count) */
        uint32_t m = er_count(r, ag->fn == AG_TOPK ? 12 : 4, UINT32_MAX / 16);
        if (r->err)
            return wire_bad(r, err, errlen, "array aggregate values");
        for (uint32_t q = 0; q < m; q++) {
            uint32_t l;
            const uint8_t *vp = er_bytes(r, (uint32_t)er_left(r), &l);
            uint64_t times = ag->fn == AG_TOPK ? er_u64(r) : 1;
            if (!vp || r->err)
                return wire_bad(r, err, errlen, "array aggregate values");
            int rc = vl_add(t->mem, ag, &c->vl[g], vp, l, times);
            if (rc < 0)
                return tab_oom(t, err, errlen);
        }
        if (m && !seen)
            return wire_bad(r, err, errlen, "array aggregate values without a seen flag");
        break;
    }
    case AG_QUANTILE:
    case AG_QUANTILE_EXACT: {
        uint32_t m = er_count(r, 8, UINT32_MAX / 8);
        if (r->err)
            return wire_bad(r, err, errlen, "quantile values");
        for (uint32_t q = 0; q < m; q++)
            if (qbuf_push(t->mem, &c->q[g], (int64_t)er_u64(r)) < 0)
                return tab_oom(t, err, errlen);
        if (m && !seen)
            return wire_bad(r, err, errlen, "quantile values without a seen flag");
        break;
    }
    case AG_VAR_POP:
    case AG_VAR_SAMP:
    case AG_STDDEV_POP:
    case AG_STDDEV_SAMP:
    case AG_CORR:
        c->cnt[g] = er_u64(r);
        c->d[g] = er_f64(r);
        c->m2[g] = er_f64(r);
        if (ag->fn == AG_CORR) {
            c->my[g] = er_f64(r);
            c->m2y[g] = er_f64(r);
            c->cxy[g] = er_f64(r);
        }
        if (!r->err && (c->cnt[g] > 0) != (seen != 0))
            return wire_bad(r, err, errlen, "moments");
        break;
    case AG_ARGMIN:
    case AG_ARGMAX:
        if (!seen)
            break;
        if (ex_is_bytes(ag->arg2->t.kind)) {
            uint32_t l;
            const uint8_t *ks = er_bytes(r, (uint32_t)er_left(r), &l);
            if (!ks)
                return wire_bad(r, err, errlen, "argMin/argMax key");
            if (str_set(t->mem, &c->ks[g], ks, l) < 0)
                return tab_oom(t, err, errlen);
        } else {
            c->ki[g] = (int64_t)er_u64(r);
        }
        if (dec_value(t, ag, c, g, r) < 0)
            return r->err ? wire_bad(r, err, errlen, "string state") : tab_oom(t, err, errlen);
        break;
    default:
        if (ag->fn != AG_SUM && !seen)
            break;
        if (dec_value(t, ag, c, g, r) < 0)
            return r->err ? wire_bad(r, err, errlen, "string state") : tab_oom(t, err, errlen);
    }
    if (r->err)
        return wire_bad(r, err, errlen, "truncated state");
    return 0;
}

/* Frees what state g of aggregate a owns and empties it. */
static void clear_state(agg_tab *t, int a, uint32_t g)
{
    eng_mem *m = t->mem;
    agg_col *c = &t->ac[a];
    c->seen[g] = 0;
    if (c->i)
        c->i[g] = 0;
    if (c->d)
        c->d[g] = 0;
    if (c->cnt)
        c->cnt[g] = 0;
    if (c->s) {
        em_free(m, c->s[g]);
        c->s[g] = NULL;
    }
    if (c->u) {
        uset_free(m, c->u[g]);
        c->u[g] = NULL;
    }
    if (c->m2)
        c->m2[g] = 0;
    if (c->my) {
        c->my[g] = 0;
        c->m2y[g] = 0;
        c->cxy[g] = 0;
    }
    if (c->q) {
        if (c->q[g]) {
            em_free(m, c->q[g]->v);
            em_free(m, c->q[g]);
        }
        c->q[g] = NULL;
    }
    if (c->ki)
        c->ki[g] = 0;
    if (c->ks) {
        em_free(m, c->ks[g]);
        c->ks[g] = NULL;
    }
    if (c->vl) {
        vlist_free(m, c->vl[g]);
        c->vl[g] = NULL;
    }
}

/* Adds a state from the wire into group g, which has one: the sums and
 * counts add in place; any other state is read into the one group of
 * t->one, merged as agg_tab_merge does, and cleared there. */
static int dec_merge_state(agg_tab *t, int a, uint32_t g, uint8_t seen, er_buf *r, char *err,
                           size_t errlen)
{
    const eng_agg *ag = &t->p->aggs[a];
    agg_col *c = &t->ac[a];
    if (!ag->distinct && !agg_generic(ag) &&
        (ag->fn == AG_COUNT || (ag->fn == AG_SUM && ag->t.kind != EX_DECIMAL))) {
        if (ag->fn == AG_COUNT) {
            c->cnt[g] += er_u64(r);
        } else if (ag->t.kind == EX_FLOAT) {
            double x = er_f64(r);
            if (seen)
                c->d[g] += x;
        } else {
            uint64_t x = er_u64(r);
            if (seen)
                c->i[g] = (int64_t)((uint64_t)c->i[g] + x);
        }
        if (r->err)
            return wire_bad(r, err, errlen, "truncated state");
        c->seen[g] |= seen;
        return 0;
    }
    if (!t->one) {
        uint8_t z = 0;
        if (agg_tab_create(&t->one, t->mem, t->p) < 0 || lookup(t->one, &z, 0) < 0)
            return tab_oom(t, err, errlen);
    }
    int rc = dec_state(t->one, a, 0, seen, r, err, errlen);
    if (rc == 0 && merge_agg(t, g, t->one, 0, a) < 0)
        rc = tab_oom(t, err, errlen);
    clear_state(t->one, a, 0);
    return rc;
}

int agg_tab_decode_merge(agg_tab *t, er_buf *r, char *err, size_t errlen)
{
    const eng_plan *p = t->p;
    /* a group is at least its key length and a seen byte per aggregate */
    uint32_t n = er_count(r, 4 + (size_t)p->n_aggs, UINT32_MAX / 2);
    if (r->err)
        return wire_bad(r, err, errlen, "group count");
    if (p->n_keys == 0 && n > 1)
        return wire_bad(r, err, errlen, "several groups without GROUP BY");
    /* the groups this state touched carry its number, so one sent twice
     * is refused */
    if (++t->stamp_now == 0) {
        memset(t->stamp, 0, (size_t)t->stamp_cap * sizeof(uint32_t));
        t->stamp_now = 1;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t kl;
        const uint8_t *k = er_bytes(r, (uint32_t)er_left(r), &kl);
        if (!k)
            return wire_bad(r, err, errlen, "group key");
        if (p->n_keys ? !key_valid(p, k, kl) : kl != 0)
            return wire_bad(r, err, errlen, "group key");
        uint32_t before = t->n;
        int64_t x = lookup(t, k, kl);
        if (x < 0)
            return tab_oom(t, err, errlen);
        uint32_t g = (uint32_t)x;
        if (g >= t->stamp_cap) {
            uint32_t nc = t->cap > g ? t->cap : g + 1;
            uint32_t *ns = em_realloc(t->mem, t->stamp, (size_t)nc * sizeof(uint32_t));
            if (!ns)
                return tab_oom(t, err, errlen);
            memset(ns + t->stamp_cap, 0, (size_t)(nc - t->stamp_cap) * sizeof(uint32_t));
            t->stamp = ns;
            t->stamp_cap = nc;
        }
        if (t->stamp[g] == t->stamp_now)
            return wire_bad(r, err, errlen, "a group sent twice");
        t->stamp[g] = t->stamp_now;
        bool fresh = t->n != before;
        for (int a = 0; a < p->n_aggs; a++) {
            uint8_t seen = er_u8(r);
            if (r->err)
                return wire_bad(r, err, errlen, "truncated state");
            if (seen > 1)
                return wire_bad(r, err, errlen, "seen flag");
            int rc = fresh ? dec_state(t, a, g, seen, r, err, errlen)
                           : dec_merge_state(t, a, g, seen, r, err, errlen);
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}
