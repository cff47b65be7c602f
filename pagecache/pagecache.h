/* SPDX-License-Identifier: Apache-2.0
 *
 * pagecache: the compute node's userspace page cache. Fixed-size pages of S3
 * blocks, kept in RAM under a hard byte cap, keyed by the 128-bit block key the
 * client computes (XXH3-128 over the block identity). No network, no logging,
 * no globals; pthreads and C11 atomics only.
 *
 * Thread-safety: everything here is thread-safe except pc_create() and
 * pc_destroy(), which must not race with any other call on the same cache.
 * Any number of threads may fetch, fill, release, query and read counters at
 * once. The cache is split into shards by key; each shard has its own mutex,
 * so there is no global lock on the hit path (a hit takes one shard lock for a
 * hash lookup, a pin and a policy update of O(1), then copies outside the
 * lock). A page handle (pc_page) may be passed between threads; its data may be
 * read by any thread while the handle is held.
 *
 * LIFECYCLE OF A READ
 *
 *   pc_fetch(key) --PC_HIT------> page pinned, data valid ------------------+
 *                 --PC_FILL-----> page pinned, empty: caller writes          |
 *                                 pc_page_data(), then pc_fill_complete()    |
 *                                 with the length or a -errno ---------------+-> pc_release()
 *                 --PC_UNCACHED-> no page: every page of the shard is pinned;
 *                                 the caller reads into its own buffer, now
 *                 --other threads asking for a page being filled sleep until
 *                   pc_fill_complete(), then get PC_HIT or the fill's -errno
 *
 * A missing page is filled once however many threads ask: the first gets
 * PC_FILL, the others wait (unless PC_FETCH_NOWAIT). A failed fill (or one
 * abandoned by releasing the page uncompleted) wakes all of them with the
 * error and leaves nothing cached, so the next fetch retries.
 *
 * MEMORY
 *   Page buffers are allocated on first use and then reused, never freed
 *   before pc_destroy(); at most capacity_bytes / page_size of them exist, so
 *   page buffers never exceed capacity_bytes. Everything else (page
 *   descriptors, hash buckets, the policy's ghost table, shard structs) is
 *   allocated once in pc_create() and never grows. That fixed overhead is
 *   pc_overhead_bytes(); it is at most
 *       PC_OVERHEAD_PER_PAGE * (capacity_bytes / page_size)
 *     + PC_OVERHEAD_PER_SHARD * shards + PC_OVERHEAD_FIXED
 *   (measured: about 131 bytes per page with S3-FIFO, 101 with LRU, so
 *   131 KiB per GiB of 1 MiB pages, 0.013%). So the bytes this cache holds
 *   from its allocator are never more than capacity_bytes +
 *   pc_overhead_bytes(); tests assert both bounds with a counting allocator.
 *
 * POLICIES (chosen at create; see bench/pagecache for the figures)
 *   PC_POLICY_S3FIFO (the default): a small FIFO (10% of each shard) that new
 *     pages enter, a main FIFO with reinsertion (CLOCK, 2-bit frequency) for
 *     pages hit while in the small FIFO, and a ghost table of keys recently
 *     dropped from the small FIFO, which admits them straight into main on
 *     their next miss (Yang et al., "FIFO queues are all you need for cache
 *     eviction", SOSP 2023). A scan that reads each page once never reaches
 *     main, so the hot set survives it without any hint from the caller.
 *     A hit bumps a 2-bit counter; it moves nothing.
 *   PC_POLICY_LRU: classic LRU, the baseline; a scan of more than the
 *     capacity evicts the hot set unless the caller marks it PC_FETCH_ONCE.
 *   Why S3-FIFO: a one-shot scan does not evict the hot set without a hint,
 *   it beats LRU on Zipf-shaped hits, and a hit moves nothing (the shard
 *   mutex, not the policy, bounds bare hits). The figures, and why SLRU and
 *   W-TinyLFU were not built, are in bench/README.md ("The page cache's
 *   policy").
 *
 * HINTS
 *   PC_FETCH_READAHEAD pages enter at low priority. S3-FIFO: the small FIFO,
 *   dropped before any page of main. LRU: the head (a read-ahead page must
 *   live until its reader comes), then the cold end once used by a
 *   PC_FETCH_ONCE read. Their first demand hit counts as their first access,
 *   not as a re-use. PC_FETCH_ONCE (a scan) never raises a page's priority; a
 *   page filled by a one-shot read goes where it is dropped first (S3-FIFO:
 *   it never leaves the small FIFO for main, and leaves no ghost; LRU: the
 *   cold end). Keep read-ahead windows under about a tenth of the capacity,
 *   or S3-FIFO drops read-ahead pages before their use (counted in
 *   readahead_unused).
 *   Caveat: several hits on one page within one logical read (a scan reading
 *   a 1 MiB page in 64 KiB pieces) count as re-use unless marked PC_FETCH_ONCE.
 */
#ifndef RINGCACHE_PAGECACHE_H
#define RINGCACHE_PAGECACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Fixed overhead bounds (bytes requested from the allocator at pc_create()). */
#define PC_OVERHEAD_PER_PAGE  160u
#define PC_OVERHEAD_PER_SHARD 1024u
#define PC_OVERHEAD_FIXED     4096u

/* Most shards a cache will use; the automatic choice keeps >= 64 pages each. */
#define PC_MAX_SHARDS 256u

/* A block key: XXH3-128 of the block identity, as two 64-bit halves. */
typedef struct pc_key {
    uint64_t hi;
    uint64_t lo;
} pc_key;

typedef enum pc_policy {
    PC_POLICY_DEFAULT = 0, /* the shipped winner: PC_POLICY_S3FIFO */
    PC_POLICY_LRU = 1,
    PC_POLICY_S3FIFO = 2,
} pc_policy;

/* Flags for pc_fetch(), OR-ed. */
enum {
    /* A one-shot read (a scan): never raises the page's priority; a page it
     * fills is dropped first. */
    PC_FETCH_ONCE = 1u << 0,
    /* Start a fill ahead of use: returns PC_FILL or -EEXIST / -ENOSPC, never
     * waits, never PC_HIT or PC_UNCACHED; the page enters at low priority. */
    PC_FETCH_READAHEAD = 1u << 1,
    /* Do not sleep on another thread's fill: return -EAGAIN instead. */
    PC_FETCH_NOWAIT = 1u << 2,
};

/* pc_fetch() results (>= 0). */
enum {
    PC_HIT = 0,      /* *page is pinned and holds valid data */
    PC_FILL = 1,     /* *page is pinned and empty: fill it, then complete it */
    PC_UNCACHED = 2, /* *page is NULL: every page is pinned, read uncached */
};

/* Allocator hooks (tests count bytes and inject failures). align is a power
 * of two >= sizeof(void *); size is a multiple of align. Return NULL when out
 * of memory. Called from the thread that calls pc_create() or pc_fetch(),
 * without any cache lock held; must be thread-safe. */
typedef void *(*pc_alloc_fn)(void *ctx, size_t align, size_t size);
typedef void (*pc_free_fn)(void *ctx, void *ptr, size_t size);

typedef struct pc_config {
    size_t capacity_bytes; /* cap on page buffers, >= page_size */
    size_t page_size;      /* bytes per page: a multiple of 64, > 0 */
    unsigned shards;       /* 0: automatic (>= 64 pages per shard, <= 64) */
    pc_policy policy;      /* PC_POLICY_DEFAULT: the shipped winner */
    pc_alloc_fn alloc_fn;  /* NULL (with free_fn NULL): posix_memalign/free */
    pc_free_fn free_fn;
    void *alloc_ctx;
} pc_config;

/* Counters, summed over shards on read. Every pc_fetch() without
 * PC_FETCH_READAHEAD counts in exactly one of hits, waits, misses, except
 * those that return -EINVAL or -EAGAIN, which count nowhere. */
typedef struct pc_stats {
    uint64_t hits;             /* served from a page already filled */
    uint64_t misses;           /* no page: fill started or uncached */
    uint64_t fills;            /* PC_FILL handed out (demand + read-ahead) */
    uint64_t fill_errors;      /* fills that failed or were abandoned */
    uint64_t waits;            /* fetches that slept on another's fill */
    uint64_t evictions;        /* pages dropped to make room */
    uint64_t uncached;         /* misses with every page pinned */
    uint64_t readahead_fills;  /* fills started by PC_FETCH_READAHEAD */
    uint64_t readahead_unused; /* read-ahead pages evicted before any use */
    uint64_t pages_cached;     /* pages in the cache (filled or filling) */
    uint64_t pages_pinned;     /* pages with at least one pin */
    uint64_t bytes_resident;   /* page buffers allocated, <= capacity */
} pc_stats;

typedef struct pc_cache pc_cache;
typedef struct pc_page pc_page;

/* Creates a cache. *out receives it; the caller owns it and frees it with
 * pc_destroy(). cfg is borrowed (copied). Allocates all metadata now (see
 * MEMORY above); page buffers come later, on first use.
 * Errors: -EINVAL (NULL argument, page_size 0 or not a multiple of 64,
 * capacity below one page, unknown policy, shards above the page count or
 * PC_MAX_SHARDS, only one allocator hook set), -ENOMEM.
 * Not thread-safe with respect to the cache being created. */
int pc_create(pc_cache **out, const pc_config *cfg);

/* Frees the cache and every page buffer; *cache becomes NULL. Accepts NULL
 * and a pointer to NULL. Every page must have been released (asserted).
 * Must not race with any other call on the cache. */
void pc_destroy(pc_cache **cache);

/* Looks up key and pins its page. key is borrowed.
 * Returns:
 *   PC_HIT       *page pinned, pc_page_len() bytes valid; read, then release.
 *   PC_FILL      *page pinned and the caller is its only filler: write up to
 *                pc_page_size() bytes at pc_page_data(), call
 *                pc_fill_complete(), then pc_release(). Other threads asking
 *                for the key sleep until then, so a filler must not fetch the
 *                same key again before completing it.
 *   PC_UNCACHED  *page = NULL: no page could be freed (every page of the
 *                key's shard is pinned or being filled); nothing was waited
 *                for; read into your own buffer.
 *   -errno       *page = NULL: the error another thread's fill completed with
 *                (this thread slept on it); -EAGAIN with PC_FETCH_NOWAIT when
 *                the page is being filled; -EEXIST with PC_FETCH_READAHEAD
 *                when the page is cached or being filled; -ENOSPC with
 *                PC_FETCH_READAHEAD when nothing can be evicted; -ENOMEM when
 *                a page buffer cannot be allocated (the page is dropped and
 *                any waiters get -ENOMEM too); -EINVAL on a NULL argument or
 *                an unknown flag.
 * Sleeps only to wait for another thread's fill of the same key, and never
 * with PC_FETCH_NOWAIT or PC_FETCH_READAHEAD. Thread-safe. */
int pc_fetch(pc_cache *cache, const pc_key *key, unsigned flags, pc_page **page);

/* Completes the fill of a page the caller got with PC_FILL. result >= 0 is
 * the number of valid bytes written (<= pc_page_size(); a short last block is
 * fine); result < 0 is a -errno: the page is dropped and every waiter gets
 * result. Either way the caller still holds its pin and must pc_release().
 * Errors: -EINVAL (NULL, result above the page size, page not being filled);
 * the page is then unchanged. Wakes waiters synchronously. Thread-safe. */
int pc_fill_complete(pc_cache *cache, pc_page *page, ssize_t result);

/* Unpins a page got from pc_fetch(); *page becomes NULL. Accepts NULL and a
 * pointer to NULL. Releasing a page whose fill was not completed abandons the
 * fill: as pc_fill_complete(-ECANCELED), so its waiters wake with
 * -ECANCELED. Wakes waiters synchronously. Never fails, never sleeps except
 * on the shard mutex. Thread-safe. */
void pc_release(pc_cache *cache, pc_page **page);

/* The page's buffer: pc_page_size() bytes, writable by the filler until
 * pc_fill_complete(), then read-only. Valid while the page is pinned. */
void *pc_page_data(const pc_page *page);

/* Valid bytes in a filled page (0 while filling). Valid while pinned. */
size_t pc_page_len(const pc_page *page);

/* The page's key. Valid while pinned. */
pc_key pc_page_key(const pc_page *page);

/* True when key has a filled page. Does not pin, does not count as an access,
 * does not touch the counters: the answer may be stale at once. Thread-safe. */
bool pc_contains(pc_cache *cache, const pc_key *key);

/* Sums every shard's counters into *out (each shard read under its lock, so
 * the sum is not one atomic snapshot). Thread-safe. */
void pc_stats_get(pc_cache *cache, pc_stats *out);

/* Accessors fixed at create. Thread-safe. */
size_t pc_page_size(const pc_cache *cache);
size_t pc_capacity_pages(const pc_cache *cache); /* capacity / page_size */
unsigned pc_shards(const pc_cache *cache);
pc_policy pc_policy_of(const pc_cache *cache);   /* never PC_POLICY_DEFAULT */
size_t pc_overhead_bytes(const pc_cache *cache); /* the fixed overhead, exact */

/* "lru", "s3fifo", or NULL for an unknown value; PC_POLICY_DEFAULT gives the
 * winner's name. */
const char *pc_policy_name(pc_policy policy);

#ifdef __cplusplus
}
#endif

#endif /* RINGCACHE_PAGECACHE_H */
