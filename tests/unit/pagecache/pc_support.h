/* SPDX-License-Identifier: Apache-2.0
 *
 * Test support for the page cache, shared by the unit tests and by
 * bench/pagecache: an allocator that counts live bytes (and can be told to
 * fail), a per-key page pattern to detect a page served with the wrong
 * bytes, and the trace driver behind the scan-resistance figures, so the
 * test that asserts the figure and the bench that prints it run the same
 * trace.
 *
 * Thread-safety: pc_counting_alloc/free are thread-safe (atomics); the
 * pattern helpers are pure; each trace run owns its cache and is
 * single-threaded.
 */
#ifndef RINGCACHE_PC_SUPPORT_H
#define RINGCACHE_PC_SUPPORT_H

#include "pagecache.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- counting allocator -------------------------------------------------- */

struct pc_counting_alloc {
    atomic_size_t live;     /* bytes currently allocated */
    atomic_size_t peak;     /* highest value of live */
    atomic_long fail_after; /* < 0: never fail; else allocations left */
    atomic_size_t nallocs;  /* successful allocations */
};

/* Zeroes the counters; fail_after = -1 (never fail). */
void pc_counting_init(struct pc_counting_alloc *a);
/* pc_alloc_fn / pc_free_fn over posix_memalign/free; ctx is a
 * struct pc_counting_alloc *. */
void *pc_counting_alloc(void *ctx, size_t align, size_t size);
void pc_counting_free(void *ctx, void *ptr, size_t size);

/* ---- page pattern -------------------------------------------------------- */

/* Writes len bytes at buf that only key produces. */
void pc_pattern_fill(void *buf, size_t len, const pc_key *key);
/* True when len bytes at buf are key's pattern. */
bool pc_pattern_check(const void *buf, size_t len, const pc_key *key);

/* ---- scan-resistance trace ----------------------------------------------- */

/* A hot set read repeatedly while a one-shot scan runs:
 *   1. warm: warm_passes passes over the hot set (hot_fraction * capacity
 *      pages), each in a fresh random order;
 *   2. measure: scan_multiple * capacity distinct scan pages, read in order;
 *      after every scan_per_hot scan reads, one read of a hot page chosen
 *      uniformly at random. Hot reads here are what the hit ratio counts.
 * Every read is a pc_fetch(); a PC_FILL is filled with the pattern and
 * completed at once, so the cache sees the trace a single reader makes. */
struct pc_trace_config {
    pc_policy policy;
    size_t capacity_pages;
    size_t page_size;     /* bytes; the policy does not care, keep it small */
    unsigned shards;      /* 0: the cache's automatic choice */
    double hot_fraction;  /* of capacity, e.g. 0.25 */
    double scan_multiple; /* of capacity, e.g. 10 */
    unsigned scan_per_hot;
    unsigned warm_passes;
    unsigned scan_flags; /* pc_fetch() flags for scan reads (0 or ONCE) */
    uint64_t seed;
};

struct pc_trace_result {
    uint64_t hot_reads; /* during the scan */
    uint64_t hot_hits;
    uint64_t scan_reads;
    double hot_hit_ratio;
    pc_stats stats; /* the cache's counters at the end */
};

/* The acceptance trace: hot 25% of capacity, scan 10x capacity,
 * 4 scan reads per hot read, 3 warm passes, no hints, 4096 pages of 64 B
 * with the automatic shard count. */
void pc_trace_default(struct pc_trace_config *cfg, pc_policy policy);

/* Runs the trace on a new cache. Returns 0 or the -errno of pc_create() or
 * of an unexpected pc_fetch() result. */
int pc_trace_hot_under_scan(const struct pc_trace_config *cfg, struct pc_trace_result *out);

/* Hit ratio of nreads reads of keys drawn from a Zipf(alpha) distribution
 * over keyspace keys (rank 0 most popular, ranks shuffled onto keys), on a
 * cache of capacity_pages pages; the first nreads/10 reads warm the cache and
 * are not counted. Returns 0 or -errno; *ratio receives the figure. */
int pc_trace_zipf(pc_policy policy, size_t capacity_pages, size_t keyspace, double alpha,
                  size_t nreads, uint64_t seed, double *ratio);

/* xorshift64* PRNG; state must not be 0. */
uint64_t pc_rand_next(uint64_t *state);

#endif /* RINGCACHE_PC_SUPPORT_H */
