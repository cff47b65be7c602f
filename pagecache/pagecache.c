/* SPDX-License-Identifier: Apache-2.0
 *
 * pagecache core: creation and teardown, sharding, the per-shard hash table of
 * preallocated page descriptors, pinning, single-flight fills and the
 * counters. Which page to evict is the policy's business (policy_*.c).
 *
 * A shard is a fixed array of page descriptors ("slots"), one per page the
 * shard may hold, a hash table over them and a free list. A slot keeps its
 * buffer for life: evicting a page hands its slot, buffer included, to the new
 * key, so after warm-up the miss path allocates nothing and the number of
 * buffers can never pass the number of slots (= capacity / page_size).
 */
#include "pagecache_int.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct pc_cache {
    size_t page_size;
    size_t npages;
    unsigned nshards;
    pc_policy policy;
    const struct pc_policy_ops *ops;
    pc_alloc_fn alloc_fn;
    pc_free_fn free_fn;
    void *alloc_ctx;
    size_t overhead;
    size_t buf_align;
    struct pc_shard *shards;
};

/* ---- allocation ---------------------------------------------------------- */

static void *pc__default_alloc(void *ctx, size_t align, size_t size)
{
    (void)ctx;
    void *p = NULL;
    if (posix_memalign(&p, align, size) != 0)
        return NULL;
    return p;
}

static void pc__default_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    (void)size;
    free(ptr);
}

static size_t pc__round_up(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

/* Metadata allocation at create: zeroed, counted in the overhead. */
static void *pc__meta_alloc(pc_cache *c, size_t size)
{
    size = pc__round_up(size ? size : 1, 64);
    void *p = c->alloc_fn(c->alloc_ctx, 64, size);
    if (p) {
        memset(p, 0, size);
        c->overhead += size;
    }
    return p;
}

static void pc__meta_free(pc_cache *c, void *p, size_t size)
{
    if (p)
        c->free_fn(c->alloc_ctx, p, pc__round_up(size ? size : 1, 64));
}

/* ---- hashing ------------------------------------------------------------- */

/* Keys are XXH3-128 output in production, but tests and tools use small or
 * structured integers: finalise each half on its own (murmur3's fmix64) so no
 * simple relation between hi and lo makes keys collide. */
static inline uint64_t pc__fmix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ull;
    x ^= x >> 33;
    return x;
}

static inline uint64_t pc__mix(const pc_key *k)
{
    return pc__fmix64(k->hi ^ pc__fmix64(k->lo + 0x9E3779B97F4A7C15ull));
}

static inline struct pc_shard *pc__shard_of(pc_cache *c, uint64_t h)
{
    /* Lemire's multiply-shift range reduction on the high half; buckets use
     * the low bits, so the two choices are independent. */
    uint64_t i = ((h >> 32) * (uint64_t)c->nshards) >> 32;
    return &c->shards[i];
}

static inline bool pc__key_eq(const pc_key *a, const pc_key *b)
{
    return a->hi == b->hi && a->lo == b->lo;
}

static struct pc_page *pc__table_find(struct pc_shard *s, const pc_key *key, uint64_t h)
{
    for (struct pc_page *p = s->buckets[h & s->bucket_mask]; p; p = p->hnext)
        if (p->hash == h && pc__key_eq(&p->key, key))
            return p;
    return NULL;
}

static void pc__table_insert(struct pc_shard *s, struct pc_page *p)
{
    struct pc_page **b = &s->buckets[p->hash & s->bucket_mask];
    p->hnext = *b;
    *b = p;
}

static void pc__table_remove(struct pc_shard *s, struct pc_page *p)
{
    struct pc_page **pp = &s->buckets[p->hash & s->bucket_mask];
    while (*pp != p) {
        assert(*pp != NULL);
        pp = &(*pp)->hnext;
    }
    *pp = p->hnext;
    p->hnext = NULL;
}

/* ---- queues -------------------------------------------------------------- */

void pc__q_push_head(struct pc_queue *q, struct pc_page *p)
{
    p->prev = NULL;
    p->next = q->head;
    if (q->head)
        q->head->prev = p;
    else
        q->tail = p;
    q->head = p;
    q->len++;
}

void pc__q_push_tail(struct pc_queue *q, struct pc_page *p)
{
    p->next = NULL;
    p->prev = q->tail;
    if (q->tail)
        q->tail->next = p;
    else
        q->head = p;
    q->tail = p;
    q->len++;
}

void pc__q_remove(struct pc_queue *q, struct pc_page *p)
{
    assert(q->len > 0);
    if (p->prev)
        p->prev->next = p->next;
    else
        q->head = p->next;
    if (p->next)
        p->next->prev = p->prev;
    else
        q->tail = p->prev;
    p->prev = p->next = NULL;
    q->len--;
}

/* ---- create / destroy ---------------------------------------------------- */

static void pc__free_all(pc_cache *c, unsigned ninit)
{
    if (c->shards) {
        for (unsigned i = 0; i < c->nshards; i++) {
            struct pc_shard *s = &c->shards[i];
            if (s->slots) {
                for (uint32_t j = 0; j < s->nslots; j++) {
                    assert(s->slots[j].pins == 0);
                    if (s->slots[j].buf)
                        c->free_fn(c->alloc_ctx, s->slots[j].buf, c->page_size);
                }
            }
            pc__meta_free(c, s->slots, sizeof(struct pc_page) * s->nslots);
            pc__meta_free(c, s->buckets, sizeof(struct pc_page *) * (s->bucket_mask + 1u));
            pc__meta_free(c, s->ghost,
                          sizeof(struct pc_ghost_entry) * PC__GHOST_WAYS * s->ghost_nbuckets);
            if (i < ninit) {
                pthread_cond_destroy(&s->filled);
                pthread_mutex_destroy(&s->lock);
            }
        }
        pc__meta_free(c, c->shards, sizeof(struct pc_shard) * c->nshards);
    }
    pc_free_fn free_fn = c->free_fn;
    void *ctx = c->alloc_ctx;
    free_fn(ctx, c, pc__round_up(sizeof(*c), 64));
}

static uint32_t pc__pow2_at_least(uint32_t n)
{
    uint32_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

static int pc__shard_init(pc_cache *c, struct pc_shard *s, uint32_t nslots)
{
    s->nslots = nslots;
    s->slots = pc__meta_alloc(c, sizeof(struct pc_page) * nslots);
    if (!s->slots)
        return -ENOMEM;
    uint32_t nb = pc__pow2_at_least(nslots);
    s->bucket_mask = nb - 1;
    s->buckets = pc__meta_alloc(c, sizeof(struct pc_page *) * nb);
    if (!s->buckets)
        return -ENOMEM;
    for (uint32_t j = nslots; j-- > 0;) {
        s->slots[j].shard = s;
        s->slots[j].hnext = s->free_list;
        s->free_list = &s->slots[j];
    }
    /* S3-FIFO: the small FIFO holds 10% of the shard (at least one page); the
     * ghost remembers as many keys as main holds (the paper's sizing). */
    s->small_target = nslots / 10 ? nslots / 10 : 1;
    if (c->policy == PC_POLICY_S3FIFO) {
        s->ghost_cap = nslots > s->small_target ? nslots - s->small_target : 1;
        s->ghost_nbuckets = pc__s3fifo_ghost_buckets((uint32_t)s->ghost_cap);
        s->ghost =
            pc__meta_alloc(c, sizeof(struct pc_ghost_entry) * PC__GHOST_WAYS * s->ghost_nbuckets);
        if (!s->ghost)
            return -ENOMEM;
    }
    return 0;
}

int pc_create(pc_cache **out, const pc_config *cfg)
{
    if (!out)
        return -EINVAL;
    *out = NULL;
    if (!cfg || cfg->page_size == 0 || cfg->page_size % 64 != 0 ||
        cfg->capacity_bytes < cfg->page_size)
        return -EINVAL;
    if ((cfg->alloc_fn == NULL) != (cfg->free_fn == NULL))
        return -EINVAL;
    pc_policy policy = cfg->policy == PC_POLICY_DEFAULT ? PC_POLICY_S3FIFO : cfg->policy;
    if (policy != PC_POLICY_LRU && policy != PC_POLICY_S3FIFO)
        return -EINVAL;
    size_t npages = cfg->capacity_bytes / cfg->page_size;
    if (npages > UINT32_MAX)
        return -EINVAL;
    unsigned nshards = cfg->shards;
    if (nshards == 0) {
        size_t n = npages / 64;
        nshards = n < 1 ? 1 : n > 64 ? 64 : (unsigned)n;
    }
    if (nshards > npages || nshards > PC_MAX_SHARDS)
        return -EINVAL;

    pc_alloc_fn alloc_fn = cfg->alloc_fn ? cfg->alloc_fn : pc__default_alloc;
    pc_free_fn free_fn = cfg->free_fn ? cfg->free_fn : pc__default_free;
    size_t csize = pc__round_up(sizeof(pc_cache), 64);
    pc_cache *c = alloc_fn(cfg->alloc_ctx, 64, csize);
    if (!c)
        return -ENOMEM;
    memset(c, 0, sizeof(*c));
    c->page_size = cfg->page_size;
    c->npages = npages;
    c->nshards = nshards;
    c->policy = policy;
    c->ops = policy == PC_POLICY_LRU ? &pc__lru_ops : &pc__s3fifo_ops;
    c->alloc_fn = alloc_fn;
    c->free_fn = free_fn;
    c->alloc_ctx = cfg->alloc_ctx;
    c->overhead = csize;
    /* Page-aligned buffers when pages are whole pages: memcpy and any later
     * O_DIRECT use like that; 64 (a cache line) otherwise. */
    c->buf_align = cfg->page_size % 4096 == 0 ? 4096 : 64;

    c->shards = pc__meta_alloc(c, sizeof(struct pc_shard) * nshards);
    if (!c->shards) {
        pc__free_all(c, 0);
        return -ENOMEM;
    }
    unsigned ninit = 0;
    for (; ninit < nshards; ninit++) {
        struct pc_shard *s = &c->shards[ninit];
        uint32_t nslots = (uint32_t)(npages / nshards + (ninit < npages % nshards ? 1 : 0));
        int rc = pc__shard_init(c, s, nslots);
        if (rc == 0 && pthread_mutex_init(&s->lock, NULL) != 0)
            rc = -ENOMEM;
        if (rc == 0 && pthread_cond_init(&s->filled, NULL) != 0) {
            pthread_mutex_destroy(&s->lock);
            rc = -ENOMEM;
        }
        if (rc < 0) {
            pc__free_all(c, ninit);
            return rc;
        }
    }
    assert(c->overhead <=
           PC_OVERHEAD_PER_PAGE * npages + PC_OVERHEAD_PER_SHARD * nshards + PC_OVERHEAD_FIXED);
    *out = c;
    return 0;
}

void pc_destroy(pc_cache **cache)
{
    if (!cache || !*cache)
        return;
    pc_cache *c = *cache;
    pc__free_all(c, c->nshards);
    *cache = NULL;
}

/* ---- pins ---------------------------------------------------------------- */

static inline void pc__pin_locked(struct pc_shard *s, struct pc_page *p)
{
    if (p->pins++ == 0)
        s->npinned++;
}

static inline void pc__unpin_locked(struct pc_shard *s, struct pc_page *p)
{
    assert(p->pins > 0);
    if (--p->pins > 0)
        return;
    s->npinned--;
    if (p->state == PC__FAILED) {
        p->state = PC__FREE;
        p->hnext = s->free_list;
        s->free_list = p;
    }
}

/* A fill ends in error: the page leaves the table and its queue now (the
 * next fetch starts afresh), waiters wake with err, and the slot returns to
 * the free list when the last pin goes. */
static void pc__fail_locked(pc_cache *c, struct pc_shard *s, struct pc_page *p, int err)
{
    p->err = err;
    p->state = PC__FAILED;
    pc__table_remove(s, p);
    c->ops->remove(s, p);
    s->ncached--;
    s->fill_errors++;
    if (p->waiters > 0)
        pthread_cond_broadcast(&s->filled);
}

/* A slot for a new page: a free one, else the policy's victim. */
static struct pc_page *pc__take_slot_locked(pc_cache *c, struct pc_shard *s)
{
    struct pc_page *p = s->free_list;
    if (p) {
        s->free_list = p->hnext;
        p->hnext = NULL;
        return p;
    }
    p = c->ops->evict(s);
    if (!p)
        return NULL;
    assert(p->state == PC__READY && p->pins == 0 && p->queue == PC__Q_NONE);
    pc__table_remove(s, p);
    s->ncached--;
    s->evictions++;
    if (p->flags & PC__F_RA)
        s->readahead_unused++;
    return p;
}

/* ---- fetch / fill / release ---------------------------------------------- */

#define PC__FETCH_ALL (PC_FETCH_ONCE | PC_FETCH_READAHEAD | PC_FETCH_NOWAIT)

int pc_fetch(pc_cache *c, const pc_key *key, unsigned flags, pc_page **page)
{
    if (page)
        *page = NULL;
    if (!c || !key || !page || (flags & ~(unsigned)PC__FETCH_ALL))
        return -EINVAL;
    const bool ra = flags & PC_FETCH_READAHEAD;
    uint64_t h = pc__mix(key);
    struct pc_shard *s = pc__shard_of(c, h);

    pthread_mutex_lock(&s->lock);
    struct pc_page *p = pc__table_find(s, key, h);
    if (p) {
        if (ra) {
            pthread_mutex_unlock(&s->lock);
            return -EEXIST;
        }
        if (p->state == PC__READY) {
            pc__pin_locked(s, p);
            s->hits++;
            c->ops->hit(s, p, flags);
            pthread_mutex_unlock(&s->lock);
            *page = p;
            return PC_HIT;
        }
        assert(p->state == PC__FILLING);
        if (flags & PC_FETCH_NOWAIT) {
            pthread_mutex_unlock(&s->lock);
            return -EAGAIN;
        }
        /* The pin keeps the descriptor ours while we sleep, even if the fill
         * fails and the page leaves the table. */
        pc__pin_locked(s, p);
        s->waits++;
        p->waiters++;
        while (p->state == PC__FILLING)
            pthread_cond_wait(&s->filled, &s->lock);
        p->waiters--;
        if (p->state == PC__READY) {
            c->ops->hit(s, p, flags);
            pthread_mutex_unlock(&s->lock);
            *page = p;
            return PC_HIT;
        }
        assert(p->state == PC__FAILED);
        int err = p->err;
        pc__unpin_locked(s, p);
        pthread_mutex_unlock(&s->lock);
        return err;
    }

    if (!ra)
        s->misses++;
    p = pc__take_slot_locked(c, s);
    if (!p) {
        if (!ra)
            s->uncached++;
        pthread_mutex_unlock(&s->lock);
        return ra ? -ENOSPC : PC_UNCACHED;
    }
    p->key = *key;
    p->hash = h;
    p->state = PC__FILLING;
    p->len = 0;
    p->err = 0;
    p->freq = 0;
    p->flags = 0;
    p->waiters = 0;
    pc__pin_locked(s, p);
    pc__table_insert(s, p);
    c->ops->insert(s, p, flags);
    s->ncached++;
    s->fills++;
    if (ra)
        s->readahead_fills++;
    const bool need_buf = p->buf == NULL;
    if (need_buf)
        s->nalloc++; /* counted before the allocation: never under-reported */
    pthread_mutex_unlock(&s->lock);

    if (need_buf) {
        /* Outside the lock: a large allocation may mmap. Only this thread
         * touches p->buf until pc_fill_complete() publishes it. */
        p->buf = c->alloc_fn(c->alloc_ctx, c->buf_align, c->page_size);
        if (!p->buf) {
            pthread_mutex_lock(&s->lock);
            s->nalloc--;
            pthread_mutex_unlock(&s->lock);
            int rc = pc_fill_complete(c, p, -ENOMEM);
            assert(rc == 0);
            (void)rc;
            pc_release(c, &p);
            return -ENOMEM;
        }
    }
    *page = p;
    return PC_FILL;
}

int pc_fill_complete(pc_cache *c, pc_page *p, ssize_t result)
{
    if (!c || !p || (result > 0 && (size_t)result > c->page_size))
        return -EINVAL;
    struct pc_shard *s = p->shard;
    pthread_mutex_lock(&s->lock);
    if (p->state != PC__FILLING || p->pins == 0) {
        pthread_mutex_unlock(&s->lock);
        return -EINVAL;
    }
    if (result >= 0) {
        p->len = (size_t)result;
        p->state = PC__READY;
        if (p->waiters > 0)
            pthread_cond_broadcast(&s->filled);
    } else {
        /* Keep the error an int -errno even if the caller passed something
         * wider. */
        pc__fail_locked(c, s, p, result < -4095 ? -EIO : (int)result);
    }
    pthread_mutex_unlock(&s->lock);
    return 0;
}

void pc_release(pc_cache *c, pc_page **page)
{
    if (!c || !page || !*page)
        return;
    struct pc_page *p = *page;
    struct pc_shard *s = p->shard;
    pthread_mutex_lock(&s->lock);
    /* Only the filler holds a handle to a page being filled: releasing it
     * abandons the fill. */
    if (p->state == PC__FILLING)
        pc__fail_locked(c, s, p, -ECANCELED);
    pc__unpin_locked(s, p);
    pthread_mutex_unlock(&s->lock);
    *page = NULL;
}

void *pc_page_data(const pc_page *p)
{
    return p->buf;
}

size_t pc_page_len(const pc_page *p)
{
    return p->len;
}

pc_key pc_page_key(const pc_page *p)
{
    return p->key;
}

bool pc_contains(pc_cache *c, const pc_key *key)
{
    if (!c || !key)
        return false;
    uint64_t h = pc__mix(key);
    struct pc_shard *s = pc__shard_of(c, h);
    pthread_mutex_lock(&s->lock);
    struct pc_page *p = pc__table_find(s, key, h);
    bool found = p && p->state == PC__READY;
    pthread_mutex_unlock(&s->lock);
    return found;
}

void pc_stats_get(pc_cache *c, pc_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof(*out));
    if (!c)
        return;
    for (unsigned i = 0; i < c->nshards; i++) {
        struct pc_shard *s = &c->shards[i];
        pthread_mutex_lock(&s->lock);
        out->hits += s->hits;
        out->misses += s->misses;
        out->fills += s->fills;
        out->fill_errors += s->fill_errors;
        out->waits += s->waits;
        out->evictions += s->evictions;
        out->uncached += s->uncached;
        out->readahead_fills += s->readahead_fills;
        out->readahead_unused += s->readahead_unused;
        out->pages_cached += s->ncached;
        out->pages_pinned += s->npinned;
        out->bytes_resident += (uint64_t)s->nalloc * c->page_size;
        pthread_mutex_unlock(&s->lock);
    }
}

size_t pc_page_size(const pc_cache *c)
{
    return c->page_size;
}

size_t pc_capacity_pages(const pc_cache *c)
{
    return c->npages;
}

unsigned pc_shards(const pc_cache *c)
{
    return c->nshards;
}

pc_policy pc_policy_of(const pc_cache *c)
{
    return c->policy;
}

size_t pc_overhead_bytes(const pc_cache *c)
{
    return c->overhead;
}

const char *pc_policy_name(pc_policy policy)
{
    switch (policy) {
    case PC_POLICY_DEFAULT:
    case PC_POLICY_S3FIFO: return "s3fifo";
    case PC_POLICY_LRU: return "lru";
    }
    return NULL;
}
