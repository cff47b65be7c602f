/* SPDX-License-Identifier: Apache-2.0
 *
 * Test support for the page cache: counting allocator, page pattern, and the
 * trace driver (see pc_support.h). Used by tests/unit/pagecache and by
 * bench/pagecache, so the figure a test asserts is the figure the bench
 * prints.
 */
#include "pc_support.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- counting allocator -------------------------------------------------- */

void pc_counting_init(struct pc_counting_alloc *a)
{
    atomic_init(&a->live, 0);
    atomic_init(&a->peak, 0);
    atomic_init(&a->fail_after, -1);
    atomic_init(&a->nallocs, 0);
}

void *pc_counting_alloc(void *ctx, size_t align, size_t size)
{
    struct pc_counting_alloc *a = ctx;
    long left = atomic_load(&a->fail_after);
    while (left >= 0) {
        if (left == 0)
            return NULL;
        if (atomic_compare_exchange_weak(&a->fail_after, &left, left - 1))
            break;
    }
    void *p = NULL;
    if (posix_memalign(&p, align, size) != 0)
        return NULL;
    size_t now = atomic_fetch_add(&a->live, size) + size;
    size_t peak = atomic_load(&a->peak);
    while (now > peak && !atomic_compare_exchange_weak(&a->peak, &peak, now)) {
    }
    atomic_fetch_add(&a->nallocs, 1);
    return p;
}

void pc_counting_free(void *ctx, void *ptr, size_t size)
{
    struct pc_counting_alloc *a = ctx;
    atomic_fetch_sub(&a->live, size);
    free(ptr);
}

/* ---- page pattern -------------------------------------------------------- */

static inline uint64_t pattern_word(const pc_key *key, size_t i)
{
    uint64_t x = key->hi * 0x9E3779B97F4A7C15ull ^ key->lo ^ (i * 0xD6E8FEB86659FD93ull);
    x ^= x >> 29;
    return x;
}

void pc_pattern_fill(void *buf, size_t len, const pc_key *key)
{
    unsigned char *b = buf;
    for (size_t i = 0; i * 8 < len; i++) {
        uint64_t w = pattern_word(key, i);
        size_t n = len - i * 8 < 8 ? len - i * 8 : 8;
        memcpy(b + i * 8, &w, n);
    }
}

bool pc_pattern_check(const void *buf, size_t len, const pc_key *key)
{
    const unsigned char *b = buf;
    for (size_t i = 0; i * 8 < len; i++) {
        uint64_t w = pattern_word(key, i);
        size_t n = len - i * 8 < 8 ? len - i * 8 : 8;
        if (memcmp(b + i * 8, &w, n) != 0)
            return false;
    }
    return true;
}

/* ---- traces -------------------------------------------------------------- */

uint64_t pc_rand_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* One read as a single reader does it: a miss is filled at once. */
static int trace_read(pc_cache *c, const pc_key *k, unsigned flags, bool *hit)
{
    pc_page *p = NULL;
    int rc = pc_fetch(c, k, flags, &p);
    *hit = rc == PC_HIT;
    switch (rc) {
    case PC_HIT: pc_release(c, &p); return 0;
    case PC_FILL: {
        size_t len = pc_page_size(c);
        pc_pattern_fill(pc_page_data(p), len, k);
        rc = pc_fill_complete(c, p, (ssize_t)len);
        pc_release(c, &p);
        return rc;
    }
    case PC_UNCACHED: return 0;
    default: return rc < 0 ? rc : -EPROTO;
    }
}

void pc_trace_default(struct pc_trace_config *cfg, pc_policy policy)
{
    *cfg = (struct pc_trace_config){
        .policy = policy,
        .capacity_pages = 4096,
        .page_size = 64,
        .shards = 0,
        .hot_fraction = 0.25,
        .scan_multiple = 10.0,
        .scan_per_hot = 4,
        .warm_passes = 3,
        .scan_flags = 0,
        .seed = 0x5eed,
    };
}

int pc_trace_hot_under_scan(const struct pc_trace_config *cfg, struct pc_trace_result *out)
{
    memset(out, 0, sizeof(*out));
    pc_config pcfg = {
        .capacity_bytes = cfg->capacity_pages * cfg->page_size,
        .page_size = cfg->page_size,
        .shards = cfg->shards,
        .policy = cfg->policy,
    };
    pc_cache *c = NULL;
    int rc = pc_create(&c, &pcfg);
    if (rc < 0)
        return rc;
    size_t nhot = (size_t)(cfg->hot_fraction * (double)cfg->capacity_pages);
    size_t nscan = (size_t)(cfg->scan_multiple * (double)cfg->capacity_pages);
    uint64_t rng = cfg->seed ? cfg->seed : 1;
    uint64_t *order = malloc((nhot ? nhot : 1) * sizeof(*order));
    if (!order) {
        pc_destroy(&c);
        return -ENOMEM;
    }
    bool hit;
    for (unsigned pass = 0; pass < cfg->warm_passes && rc == 0; pass++) {
        for (size_t i = 0; i < nhot; i++)
            order[i] = i;
        for (size_t i = nhot; i > 1; i--) {
            size_t j = pc_rand_next(&rng) % i;
            uint64_t t = order[i - 1];
            order[i - 1] = order[j];
            order[j] = t;
        }
        for (size_t i = 0; i < nhot && rc == 0; i++)
            rc = trace_read(c, &(pc_key){1, order[i]}, 0, &hit);
    }
    for (size_t i = 0; i < nscan && rc == 0; i++) {
        rc = trace_read(c, &(pc_key){2, i}, cfg->scan_flags, &hit);
        out->scan_reads++;
        if (rc == 0 && nhot > 0 && (i + 1) % cfg->scan_per_hot == 0) {
            rc = trace_read(c, &(pc_key){1, pc_rand_next(&rng) % nhot}, 0, &hit);
            out->hot_reads++;
            out->hot_hits += hit;
        }
    }
    out->hot_hit_ratio = out->hot_reads ? (double)out->hot_hits / (double)out->hot_reads : 0.0;
    pc_stats_get(c, &out->stats);
    free(order);
    pc_destroy(&c);
    return rc;
}

int pc_trace_zipf(pc_policy policy, size_t capacity_pages, size_t keyspace, double alpha,
                  size_t nreads, uint64_t seed, double *ratio)
{
    *ratio = 0.0;
    if (keyspace == 0)
        return -EINVAL;
    double *cdf = malloc(keyspace * sizeof(*cdf));
    if (!cdf)
        return -ENOMEM;
    double sum = 0.0;
    for (size_t i = 0; i < keyspace; i++) {
        sum += 1.0 / pow((double)(i + 1), alpha);
        cdf[i] = sum;
    }
    pc_config pcfg = {
        .capacity_bytes = capacity_pages * 64,
        .page_size = 64,
        .policy = policy,
    };
    pc_cache *c = NULL;
    int rc = pc_create(&c, &pcfg);
    if (rc < 0) {
        free(cdf);
        return rc;
    }
    uint64_t rng = seed ? seed : 1;
    size_t warm = nreads / 10, hits = 0, counted = 0;
    for (size_t n = 0; n < nreads && rc == 0; n++) {
        double u = (double)(pc_rand_next(&rng) >> 11) * 0x1.0p-53 * sum;
        size_t lo = 0, hi = keyspace - 1;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (cdf[mid] < u)
                lo = mid + 1;
            else
                hi = mid;
        }
        bool hit;
        rc = trace_read(c, &(pc_key){3, lo}, 0, &hit);
        if (n >= warm) {
            counted++;
            hits += hit;
        }
    }
    *ratio = counted ? (double)hits / (double)counted : 0.0;
    pc_destroy(&c);
    free(cdf);
    return rc;
}
