/* SPDX-License-Identifier: Apache-2.0
 *
 * The ring itself: validation and id-ordering of the member list, the
 * rendezvous score, the slot table build, and lookups. See ring.h for the
 * algorithm and why it was chosen.
 */
#include "ring.h"
#include "errf.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

struct ring {
    atomic_uint refs;
    unsigned bits;
    bool weighted;
    uint32_t n;
    struct ring_member *m; /* sorted by id; strings point into `strings` */
    uint64_t *seed;        /* XXH3-64 of each id: the member's score seed */
    double *inv_weight;    /* 1 / weight, weighted rings only */
    uint32_t *slots;       /* slots owned per member */
    /* 2^bits member indices: one byte each when the ring has at most 256
	 * members (half the cache footprint on the lookup path), else two. */
    union {
        uint8_t *narrow;
        uint16_t *wide;
        void *any;
    } table;
    size_t entry_size;
    char *strings;
    size_t strings_len;
};

/* The per-(member, slot) score; larger wins. Equal-weight rings compare the raw
 * XXH3; weighted rings map ln(u)/w (always < 0) to an order-preserving integer
 * (for negative doubles a larger value has a smaller bit pattern, so invert). */
/* flatten: inline XXH3 into the loops (len 8 then folds to one short path). */
#define RING__FLATTEN __attribute__((flatten))

static inline void ring__slot_bytes(unsigned char le[8], uint64_t slot)
{
    /* little-endian on every host, so every platform scores alike */
    for (int b = 0; b < 8; b++)
        le[b] = (unsigned char)(slot >> (8 * b));
}

static inline uint64_t ring__score(const struct ring *r, uint32_t i, const unsigned char le[8])
{
    uint64_t h = XXH3_64bits_withSeed(le, 8, r->seed[i]);
    if (!r->weighted)
        return h;
    double u = ((double)(h >> 11) + 0.5) * 0x1p-53;
    double v = log(u) * r->inv_weight[i];
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return ~bits;
}

static int ring__cmp_id(const void *a, const void *b)
{
    const struct ring_member *x = a, *y = b;
    return strcmp(x->id, y->id);
}

uint64_t ring_hash_key(const void *key, size_t key_len)
{
    return XXH3_64bits(key, key_len);
}

static int ring__validate(const struct ring_member *members, size_t n,
                          const struct ring_options *opts, unsigned *bits, char *why,
                          size_t why_len)
{
    if (members == NULL || n == 0) {
        errf_set(why, why_len, "the member list is empty (give at least one member)");
        return -EINVAL;
    }
    if (n > RING_MEMBERS_MAX) {
        errf_set(why, why_len,
                 "%zu members is more than the ring supports "
                 "(at most %u)",
                 n, RING_MEMBERS_MAX);
        return -E2BIG;
    }
    *bits = (opts && opts->table_bits) ? opts->table_bits : RING_TABLE_BITS_DEFAULT;
    if (*bits < RING_TABLE_BITS_MIN || *bits > RING_TABLE_BITS_MAX) {
        errf_set(why, why_len, "table_bits %u is out of range (use %u..%u)", *bits,
                 RING_TABLE_BITS_MIN, RING_TABLE_BITS_MAX);
        return -EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        const struct ring_member *m = &members[i];
        if (m->id == NULL || m->id[0] == '\0') {
            errf_set(why, why_len,
                     "member %zu (address %s) has an empty id "
                     "(give every member a stable id)",
                     i, m->addr ? m->addr : "(none)");
            return -EINVAL;
        }
        if (m->addr == NULL || m->addr[0] == '\0') {
            errf_set(why, why_len,
                     "member %s has no address "
                     "(give it as id=host:port)",
                     m->id);
            return -EINVAL;
        }
        if (m->weight > RING_WEIGHT_MAX) {
            errf_set(why, why_len,
                     "member %s has weight %u, over the "
                     "maximum %u (scale the weights down)",
                     m->id, m->weight, RING_WEIGHT_MAX);
            return -EINVAL;
        }
    }
    return 0;
}

RING__FLATTEN static void ring__build_table(struct ring *r)
{
    uint32_t size = UINT32_C(1) << r->bits;
    for (uint32_t s = 0; s < size; s++) {
        unsigned char le[8];
        ring__slot_bytes(le, s);
        uint32_t best = 0;
        uint64_t best_score = ring__score(r, 0, le);
        for (uint32_t i = 1; i < r->n; i++) {
            uint64_t sc = ring__score(r, i, le);
            /* strictly greater: ties stay with the lower id */
            if (sc > best_score) {
                best_score = sc;
                best = i;
            }
        }
        if (r->entry_size == 1)
            r->table.narrow[s] = (uint8_t)best;
        else
            r->table.wide[s] = (uint16_t)best;
        r->slots[best]++;
    }
}

struct ring__seed_idx {
    uint64_t seed;
    uint32_t idx;
};

static int ring__cmp_seed(const void *a, const void *b)
{
    const struct ring__seed_idx *x = a, *y = b;
    return x->seed < y->seed ? -1 : x->seed > y->seed;
}

static int ring__check_seeds(const struct ring *r, char *why, size_t why_len)
{
    struct ring__seed_idx *v = malloc(r->n * sizeof *v);
    if (v == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < r->n; i++)
        v[i] = (struct ring__seed_idx){r->seed[i], i};
    qsort(v, r->n, sizeof *v, ring__cmp_seed);
    int rc = 0;
    for (uint32_t i = 1; i < r->n && rc == 0; i++)
        if (v[i].seed == v[i - 1].seed) {
            errf_set(why, why_len,
                     "member ids %s and %s hash alike "
                     "(rename one)",
                     r->m[v[i - 1].idx].id, r->m[v[i].idx].id);
            rc = -EINVAL;
        }
    free(v);
    return rc;
}

int ring_create(struct ring **out, const struct ring_member *members, size_t n,
                const struct ring_options *opts, char *why, size_t why_len)
{
    unsigned bits;
    int rc = ring__validate(members, n, opts, &bits, why, why_len);
    if (rc < 0)
        return rc;

    struct ring *r = calloc(1, sizeof *r);
    if (r == NULL)
        goto nomem;
    atomic_init(&r->refs, 1);
    r->bits = bits;
    r->n = (uint32_t)n;
    for (size_t i = 0; i < n; i++)
        r->strings_len += strlen(members[i].id) + 1 + strlen(members[i].addr) + 1 +
                          (members[i].host ? strlen(members[i].host) + 1 : 0);
    r->m = calloc(n, sizeof *r->m);
    r->seed = calloc(n, sizeof *r->seed);
    r->slots = calloc(n, sizeof *r->slots);
    r->strings = malloc(r->strings_len);
    r->entry_size = n <= 256 ? 1 : 2;
    r->table.any = malloc(r->entry_size << bits);
    if (!r->m || !r->seed || !r->slots || !r->strings || !r->table.any)
        goto nomem;

    char *p = r->strings;
    for (size_t i = 0; i < n; i++) {
        size_t il = strlen(members[i].id) + 1, al = strlen(members[i].addr) + 1;
        memcpy(p, members[i].id, il);
        r->m[i].id = p;
        p += il;
        memcpy(p, members[i].addr, al);
        r->m[i].addr = p;
        p += al;
        if (members[i].host && members[i].host[0]) {
            size_t hl = strlen(members[i].host) + 1;
            memcpy(p, members[i].host, hl);
            r->m[i].host = p;
            p += hl;
        }
        r->m[i].weight = members[i].weight ? members[i].weight : 1;
    }
    qsort(r->m, n, sizeof *r->m, ring__cmp_id);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(r->m[i - 1].id, r->m[i].id) == 0) {
            errf_set(why, why_len,
                     "member id %s appears twice (ids must be "
                     "unique: remove or rename one)",
                     r->m[i].id);
            rc = -EINVAL;
            goto fail;
        }
        r->seed[i] = XXH3_64bits(r->m[i].id, strlen(r->m[i].id));
        if (r->m[i].weight != r->m[0].weight)
            r->weighted = true;
    }
    /* Two ids with the same 64-bit seed would score identically everywhere and
	 * one would never own anything: refuse rather than place silently wrong. */
    rc = ring__check_seeds(r, why, why_len);
    if (rc < 0)
        goto fail;
    if (r->weighted) {
        r->inv_weight = calloc(n, sizeof *r->inv_weight);
        if (r->inv_weight == NULL)
            goto nomem;
        for (size_t i = 0; i < n; i++)
            r->inv_weight[i] = 1.0 / (double)r->m[i].weight;
    }
    ring__build_table(r);
    *out = r;
    return 0;

nomem:
    errf_set(why, why_len, "out of memory building a ring of %zu members", n);
    rc = -ENOMEM;
fail:
    ring_destroy(&r);
    return rc;
}

struct ring *ring_ref(struct ring *r)
{
    atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
    return r;
}

void ring_unref(struct ring **rp)
{
    if (rp == NULL || *rp == NULL)
        return;
    struct ring *r = *rp;
    *rp = NULL;
    if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) != 1)
        return;
    free(r->m);
    free(r->seed);
    free(r->inv_weight);
    free(r->slots);
    free(r->table.any);
    free(r->strings);
    free(r);
}

void ring_destroy(struct ring **r)
{
    ring_unref(r);
}

RING__FLATTEN int ring_lookup_hash(const struct ring *r, uint64_t hash,
                                   const struct ring_member **owners, size_t n)
{
    if (n == 0)
        return -EINVAL;
    uint32_t slot = (uint32_t)(hash >> (64 - r->bits));
    if (n == 1) {
        uint32_t i = r->entry_size == 1 ? r->table.narrow[slot] : r->table.wide[slot];
        owners[0] = &r->m[i];
        return 1;
    }
    if (n > r->n)
        n = r->n;
    if (n > RING_OWNERS_MAX)
        n = RING_OWNERS_MAX;
    /* Keep the best n (score, index) pairs in order: insertion into a short
	 * sorted array, the same "greater score, else lower index" rule as the
	 * table build, so owners[0] is always table[slot]. Members arrive in index
	 * order, so "strictly greater" implements the tie rule. */
    struct {
        uint64_t score;
        uint32_t idx;
    } best[RING_OWNERS_MAX];
    size_t have = 0;
    unsigned char le[8];
    ring__slot_bytes(le, slot);
    for (uint32_t i = 0; i < r->n; i++) {
        uint64_t sc = ring__score(r, i, le);
        size_t pos;
        if (have < n)
            pos = have++;
        else if (sc > best[n - 1].score)
            pos = n - 1;
        else
            continue;
        while (pos > 0 && sc > best[pos - 1].score) {
            best[pos] = best[pos - 1];
            pos--;
        }
        best[pos].score = sc;
        best[pos].idx = i;
    }
    for (size_t k = 0; k < have; k++)
        owners[k] = &r->m[best[k].idx];
    return (int)have;
}

RING__FLATTEN int ring_lookup(const struct ring *r, const void *key, size_t key_len,
                              const struct ring_member **owners, size_t n)
{
    return ring_lookup_hash(r, XXH3_64bits(key, key_len), owners, n);
}

size_t ring_member_count(const struct ring *r)
{
    return r->n;
}

const struct ring_member *ring_member_at(const struct ring *r, size_t i)
{
    return i < r->n ? &r->m[i] : NULL;
}

size_t ring_member_index(const struct ring *r, const struct ring_member *m)
{
    return (size_t)(m - r->m);
}

int ring_find(const struct ring *r, const char *id)
{
    struct ring_member key = {.id = id};
    const struct ring_member *m = bsearch(&key, r->m, r->n, sizeof *r->m, ring__cmp_id);
    return m ? (int)(m - r->m) : -ENOENT;
}

uint32_t ring_member_slots(const struct ring *r, size_t i)
{
    return i < r->n ? r->slots[i] : 0;
}

uint32_t ring_slots(const struct ring *r)
{
    return UINT32_C(1) << r->bits;
}

size_t ring_memory(const struct ring *r)
{
    size_t per = sizeof *r->m + sizeof *r->seed + sizeof *r->slots +
                 (r->weighted ? sizeof *r->inv_weight : 0);
    return sizeof *r + (r->entry_size << r->bits) + r->n * per + r->strings_len;
}
