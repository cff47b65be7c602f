/* SPDX-License-Identifier: Apache-2.0
 *
 * pagecache internals shared by the core (pagecache.c) and the eviction
 * policies (policy_lru.c, policy_s3fifo.c): the page descriptor, the shard, the
 * intrusive queues, and the policy operations table. Everything here is called
 * with the shard's mutex held (the _locked convention is implied throughout).
 */
#ifndef RINGCACHE_PAGECACHE_INT_H
#define RINGCACHE_PAGECACHE_INT_H

#include "pagecache.h"

#include <pthread.h>
#include <stdint.h>

enum pc__state {
    PC__FREE = 0, /* on the shard's free list */
    PC__FILLING,  /* in the table and a queue; the filler holds a pin */
    PC__READY,    /* in the table and a queue; data valid */
    PC__FAILED,   /* out of table and queues; freed when the last pin goes */
};

/* Page flags (pc_page.flags). */
enum {
    PC__F_ONCE = 1u << 0, /* only ever read one-shot so far */
    PC__F_RA = 1u << 1,   /* read-ahead, not yet used by a demand read */
};

/* Which queue a page sits in (pc_page.queue); LRU uses only Q_SMALL. */
enum { PC__Q_NONE = 0, PC__Q_SMALL = 1, PC__Q_MAIN = 2 };

struct pc_shard;

struct pc_page {
    pc_key key;
    uint64_t hash;         /* pc__mix(key) */
    struct pc_page *hnext; /* hash chain, or free list */
    struct pc_page *prev;  /* queue, towards the head */
    struct pc_page *next;  /* queue, towards the tail */
    unsigned char *buf;    /* page_size bytes once allocated; owned */
    struct pc_shard *shard;
    size_t len; /* valid bytes when READY */
    uint32_t pins;
    uint32_t waiters; /* threads sleeping on this page's fill */
    int err;          /* the -errno of a FAILED fill */
    uint8_t state;    /* enum pc__state */
    uint8_t queue;    /* PC__Q_* */
    uint8_t freq;     /* S3-FIFO: hits, capped at 3 */
    uint8_t flags;    /* PC__F_* */
};

/* Doubly linked list, head = newest, tail = next to leave. */
struct pc_queue {
    struct pc_page *head;
    struct pc_page *tail;
    uint32_t len;
};

/* One ghost entry: the fingerprint of a key dropped from the small FIFO, and
 * the ghost clock when it was dropped. */
struct pc_ghost_entry {
    uint64_t fp;
    uint64_t seq;
};

#define PC__GHOST_WAYS 8u

/* Cache-line aligned so two shards' locks never share a line. */
struct pc_shard {
    _Alignas(64) pthread_mutex_t lock;
    pthread_cond_t filled; /* broadcast when a fill completes */
    struct pc_page **buckets;
    uint32_t bucket_mask;
    uint32_t nslots; /* pages this shard may hold */
    uint32_t nalloc; /* slots whose buffer is allocated */
    uint32_t npinned;
    uint32_t ncached; /* FILLING + READY */
    struct pc_page *slots;
    struct pc_page *free_list;
    struct pc_queue small; /* LRU: the one list; S3-FIFO: the small FIFO */
    struct pc_queue main;  /* S3-FIFO: the main FIFO */
    uint32_t small_target; /* S3-FIFO: small FIFO share of nslots */
    uint32_t ghost_nbuckets;
    uint64_t ghost_cap; /* entries older than this many drops are gone */
    uint64_t ghost_clock;
    struct pc_ghost_entry *ghost;
    /* counters, under lock */
    uint64_t hits, misses, fills, fill_errors, waits, evictions, uncached;
    uint64_t readahead_fills, readahead_unused;
};

/* Eviction policy operations; all called with the shard lock held. */
struct pc_policy_ops {
    /* Puts a newly filling page (pinned) into the policy's queues. flags are
     * the pc_fetch() flags. */
    void (*insert)(struct pc_shard *s, struct pc_page *p, unsigned flags);
    /* A demand access to a page (READY, or just filled for a waiter). */
    void (*hit)(struct pc_shard *s, struct pc_page *p, unsigned flags);
    /* Picks an unpinned READY page, takes it out of its queue and returns it,
     * or NULL when every page is pinned. */
    struct pc_page *(*evict)(struct pc_shard *s);
    /* Takes a page out of its queue (a failed fill). */
    void (*remove)(struct pc_shard *s, struct pc_page *p);
};

extern const struct pc_policy_ops pc__lru_ops;
extern const struct pc_policy_ops pc__s3fifo_ops;

/* Queue helpers (pagecache.c). */
void pc__q_push_head(struct pc_queue *q, struct pc_page *p);
void pc__q_push_tail(struct pc_queue *q, struct pc_page *p);
void pc__q_remove(struct pc_queue *q, struct pc_page *p);

/* S3-FIFO ghost table sizing (policy_s3fifo.c), used by pc_create(). */
uint32_t pc__s3fifo_ghost_buckets(uint32_t ghost_cap);

#endif /* RINGCACHE_PAGECACHE_INT_H */
