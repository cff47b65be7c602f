/* SPDX-License-Identifier: Apache-2.0
 *
 * rc_int.h: what the files of libringcache (ringcache.h) share. One rc_client
 * owns an I/O thread running an event loop with the cluster (cluster.h) and
 * the S3 client; reader threads serve hits from the page cache (pagecache.h)
 * without touching the loop, and hand misses to the I/O thread as block items
 * on a queue (qlock + an eventfd), then wait on their batch.
 *
 *   reader thread                         I/O thread (event loop)
 *   rc_pread (rc_read.c)                   |  (rc_io.c)
 *    pc_fetch NOWAIT per block             |
 *      HIT -> copy                         |
 *      FILL/UNCACHED -> item --queue-----> rc__io_pump: rcl_read(one block)
 *      being filled -> later, blocking     |  node fault on every owner ->
 *    read-ahead items (no wait) --queue->  |  S3 ranged GET, If-Match + ETag
 *    wait for batch.pending == 0 <-signal- rc__item_finish
 *    complete pages, copy out              |  (read-ahead: completes the page)
 *
 * Calls that are not block reads (connect, HEAD, PUT, WARM, STATS) are typed
 * requests (rc_req.c) sharing one header, RC_REQ_FIELDS, as libuv's requests
 * share UV_REQ_FIELDS: the queue and the wait know only the header; each
 * type carries its own arguments and results.
 *
 * The other parts: the metadata cache (rc_meta.c), the page arena
 * (rc_arena.c), and configuration, create and destroy (rc_client.c). The
 * blocking connections of small reads come from a pool beside the blocking
 * connection itself (syncconn.h).
 *
 * Locks, and what each one covers (nothing else is touched under it, and what
 * it covers is touched only under it unless said otherwise):
 *   c->qlock       the two block queues, the request queue, every batch's
 *                  pending count (changed under it, also read without it by a
 *                  polling reader: an atomic), and every request's done flag
 *   c->meta.lock   the metadata cache's table and count
 *   h->lock        a handle's streams, tick and error sentence
 *   c->arena.lock  the arena's free list and carve mark
 *   the pool's own lock (syncconn.h) for idle blocking connections
 * Fields the I/O thread alone writes after rc_create (connected, connecting,
 * inflight, ra_inflight, pumping, next_probe_ms, connect_err) are read by it
 * alone. Fields set in rc_create before any reader runs (cfg, bs, tenant,
 * window, chunk, partial_max, cache_scans, pc, cl, inline_ok) are read-only
 * afterwards.
 * Counters are C11 atomics, relaxed.
 */
#ifndef RINGCACHE_RC_INT_H
#define RINGCACHE_RC_INT_H

#include "ringcache.h"

#include "blockkey.h"
#include "cluster.h"
#include "pagecache.h"
#include "syncconn.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define RC_CHUNK_MAX        64 /* blocks one pread handles at once */
#define RC_STREAMS          8  /* sequential streams tracked per handle */
#define RC_META_BUCKETS     1024
#define RC_META_MAX         65536 /* entries before the metadata cache is cleared */
#define RC_DEFAULT_BLOCK    (1u << 20)
#define RC_PUT_MAX          (5ull << 30)
#define RC_DEFAULT_HEDGE_MS 500
/* batches of at most this many bytes are polled for before sleeping (spin_us) */
#define RC_SPIN_MAX_BYTES (256u << 10)

/* A version as the client keeps it: the normalised ETag and its NUL. The
 * public RC_VERSION_MAX (ringcache.h) holds one too. */
#define RC_VERSION_CAP (BKEY_VERSION_MAX + 1)
_Static_assert(RC_VERSION_MAX >= RC_VERSION_CAP, "RC_VERSION_MAX holds a version");

/* ---- objects and handles ---------------------------------------------------------- */

/* The identity a handle is pinned to (tenant unused: the nodes' is the
 * client's); shared with read-ahead items in flight. */
typedef struct rc_obj {
    atomic_int refs;
    atomic_bool stale;
    bkey_object id;
} rc_obj;

void rc__obj_unref(rc_obj **op);

typedef struct rc_stream {
    uint64_t next_off; /* where the next read of this stream starts */
    uint64_t ra_next;  /* first block not yet read ahead */
    uint64_t used;     /* tick of last use, for replacement */
    uint32_t seq;      /* consecutive reads so far */
    uint32_t window;   /* read-ahead blocks; grows while the stream stalls */
    bool live;
} rc_stream;

struct rc_handle {
    rc_client *c;
    rc_obj *obj;
    pthread_mutex_t lock; /* streams, tick, err */
    rc_stream streams[RC_STREAMS];
    uint64_t tick;
    char err[RC_ERR_MAX];
};

/* ---- block items ------------------------------------------------------------------- */

/* What a reader waits on: the items of one pread chunk. */
typedef struct rc_batch {
    pthread_cond_t cond;
    atomic_int pending; /* items not finished: changed under c->qlock (the
                              waiter sleeps on cond under it), read without it
                              by a polling reader */
    int code;           /* first error, under c->qlock until pending is 0 */
    char msg[RC_ERR_MAX];
} rc_batch;

enum rc_item_kind {
    RC_ITEM_PAGE,   /* whole block into a page the reader fills (PC_FILL) */
    RC_ITEM_DIRECT, /* a range straight into the reader's buffer */
    RC_ITEM_RA,     /* read-ahead: the I/O thread completes and releases the page */
    RC_ITEM_PROBE,  /* warm --wait: one byte, nodes only */
};

typedef struct rc_item {
    struct rc_item *next;
    rc_client *c;
    rc_batch *batch; /* NULL for read-ahead */
    rc_obj *obj;     /* RC_ITEM_RA holds a reference */
    enum rc_item_kind kind;
    uint64_t block;
    uint32_t in_off, in_len;
    uint8_t *dst;
    pc_page *page;
    int result;       /* bytes or -errno, set on the I/O thread */
    uint64_t buf_off; /* RC_ITEM_PAGE: where the reader copies to */
    uint32_t copy_off, copy_len;
    bool to_s3; /* the owner said its own S3 failed (reader's connection) */
} rc_item;

/* ---- typed requests ------------------------------------------------------------------ */

typedef enum rc_req_type {
    RC_REQ_CONNECT = 1,
    RC_REQ_HEAD,
    RC_REQ_PUT,
    RC_REQ_WARM,
    RC_REQ_STATS,
} rc_req_type;

/* The header every request starts with: the queue's link, its type (which
 * says which struct it is and what the I/O thread runs), and how it ends. */
#define RC_REQ_FIELDS                                                                              \
    struct rc_req *next; /* in c's request queue */                                                \
    rc_client *c;                                                                                  \
    rc_req_type type;                                                                              \
    pthread_cond_t cond;                                                                           \
    bool done;            /* under c->qlock */                                                     \
    int code;             /* 0 or -errno, valid once done */                                       \
    char msg[RC_ERR_MAX]; /* the sentence when code < 0 */

typedef struct rc_req {
    RC_REQ_FIELDS
} rc_req;

typedef struct rc_connect_req {
    RC_REQ_FIELDS
} rc_connect_req;

typedef struct rc_head_req {
    RC_REQ_FIELDS
    const char *bucket, *key;     /* borrowed for the call */
    uint64_t size;                /* results */
    char version[RC_VERSION_MAX]; /* as S3 or the node said it: checked where kept */
} rc_head_req;

typedef struct rc_put_req {
    RC_REQ_FIELDS
    const char *bucket, *key; /* borrowed for the call */
    uint64_t size;
    rc_read_at_fn read_at;
    void *read_arg;
    uint64_t off;                 /* bytes handed to the node so far */
    uint8_t *gathered;            /* a direct PUT to S3: the whole object */
    char version[RC_VERSION_MAX]; /* result, as S3 or the node said it */
} rc_put_req;

typedef struct rc_warm_req {
    RC_REQ_FIELDS
    rc_obj *obj;      /* borrowed for the call */
    uint64_t started; /* result: blocks the nodes took */
} rc_warm_req;

typedef struct rc_node_line {
    struct rc_node_line *next;
    char *id, *addr, *text;
    int code;
} rc_node_line;

typedef struct rc_stats_req {
    RC_REQ_FIELDS
    rc_node_line *lines, **tail; /* result: one per member */
} rc_stats_req;

/* Runs req (of req->type, its header zeroed by the caller) on the I/O thread
 * and waits for it: its code. */
int rc__req_run(rc_client *c, rc_req *req, rc_req_type type);
/* I/O thread: req is over (msg NULL: strerror of code). */
void rc__req_finish(rc_req *req, int code, const char *msg);
/* I/O thread: starts a request taken from the queue. */
void rc__req_start(rc_req *req);
/* I/O thread: the first connect finished (rc_create's request, if any). */
void rc__connect_done(int code, const char *msg, void *arg);

/* ---- the metadata cache -------------------------------------------------------------- */

typedef struct rc_meta rc_meta;

typedef struct rc_meta_cache {
    pthread_mutex_t lock;
    int ttl_ms; /* <= 0: nothing is kept */
    rc_meta *slots[RC_META_BUCKETS];
    size_t n;
} rc_meta_cache;

void rc__meta_init(rc_meta_cache *m, int ttl_ms);
void rc__meta_deinit(rc_meta_cache *m);
/* A fresh entry's size and version (RC_VERSION_CAP bytes); false when none. */
bool rc__meta_get(rc_meta_cache *m, const char *bucket, const char *key, uint64_t *size,
                  char *version);
/* Keeps (or replaces) the entry; a version longer than BKEY_VERSION_MAX is
 * not kept (it could not be pinned). */
void rc__meta_put(rc_meta_cache *m, const char *bucket, const char *key, uint64_t size,
                  const char *version);
/* Drops the entry if it still names `version` (a read found it stale). */
void rc__meta_drop(rc_meta_cache *m, const char *bucket, const char *key, const char *version);

/* ---- the page arena -------------------------------------------------------------------- */

/* Page buffers: one reservation of the page cache's capacity (huge pages
 * asked for), cut into page-size slots; a freed slot goes on a free list and
 * is handed out again already faulted in. Anything else (the page cache's
 * metadata) comes from posix_memalign. */
typedef struct rc_arena {
    pthread_mutex_t lock;
    uint8_t *map; /* NULL: no arena, every buffer from posix_memalign */
    size_t map_len;
    uint8_t *start; /* map aligned to 2 MiB */
    size_t slot, nslots;
    size_t carved;   /* under lock */
    void *free_head; /* under lock: freed slots, linked through their first word */
} rc_arena;

/* prefault: back it at once; huge: advise it for huge pages. */
void rc__arena_init(rc_arena *a, size_t capacity, size_t slot, bool prefault, bool huge);
void rc__arena_deinit(rc_arena *a);
/* pc_alloc_fn / pc_free_fn over an rc_arena (ctx). */
void *rc__arena_alloc(void *ctx, size_t align, size_t size);
void rc__arena_free(void *ctx, void *ptr, size_t size);

/* ---- the client -------------------------------------------------------------------------- */

struct rc_client {
    rc_config cfg;
    char members[4096];
    char token[RCP_MAX_STRING + 1];
    char tls_ca[4096];
    char dns_server[256];
    uint32_t bs;
    int window;     /* read-ahead blocks a stream starts with */
    int window_max; /* ... and grows to while it keeps stalling */
    int chunk;
    uint32_t partial_max;
    bool cache_scans; /* rc_config.cache_scans */
    /* with cache_scans: the small parts of blocks that scans read, a hash
     * each in a direct-mapped table (a lost entry costs one more small read),
     * atomics: any reader thread records and asks (rc__seen_again) */
    _Atomic uint64_t *seen; /* hash << 16 | the query's epoch */
    uint64_t seen_mask;
    _Atomic uint32_t epoch; /* rc_query_begin */
    char tenant[BKEY_TENANT_MAX + 1];
    pc_cache *pc;
    rc_arena arena;
    rc_meta_cache meta;

    /* the I/O thread and what it owns */
    pthread_t io;
    bool io_started;
    struct event_base *base;
    struct event *wake_ev;
    int efd;
    rcl_cluster *cl;
    s3_client *s3;
    char s3_err[256];
    char connect_err[512]; /* why the last connect to the nodes failed ("" if it did not) */
    bool connected;        /* a node answered HELLO with our block size */
    bool connecting;
    rc_connect_req *connect_req; /* rc_create waiting for the first connect */
    int64_t next_probe_ms;
    int inflight, ra_inflight;
    bool pumping;

    /* the queues between readers and the I/O thread, under qlock */
    pthread_mutex_t qlock;
    rc_item *dq_head, *dq_tail; /* demand */
    rc_item *rq_head, *rq_tail; /* read-ahead */
    rc_req *cq_head, *cq_tail;  /* requests */
    atomic_bool stop;

    atomic_size_t n_members;
    struct {
        atomic_uint_fast64_t preads, hits, misses, stalls, waits, readahead_fetches,
            partial_fetches, repeat_fills, node_blocks, failovers, fallbacks, head_fallbacks, stale,
            meta_hits, bytes, inline_reads, hedges, hedge_wins, upstream_fallbacks, node_bytes,
            s3_bytes, scan_direct;
        atomic_uint_fast64_t inline_hedges; /* given up on the reader's connection */
    } st;

    /* Small reads done on the reader's thread over blocking connections
     * (syncconn.h), idle ones kept in the pool. */
    bool inline_ok;
    sc_pool *pool;
    _Atomic int64_t inline_pause_until_ms; /* after a failed connect: the I/O thread's way */
    /* smoothed time a small batch took through the I/O thread (each sample
     * capped at RC_WAIT_CAP spin windows): a reader polls for one only while
     * they come within spin_us (0: none yet) */
    _Atomic int64_t small_wait_us;
};

#define RC_WAIT_CAP 4

#define RC_COUNT(c, f, n) atomic_fetch_add_explicit(&(c)->st.f, (n), memory_order_relaxed)

int64_t rc__now_us(void);
int64_t rc__now_ms(void);

/* Wakes the I/O thread (its eventfd). */
void rc__wake(rc_client *c);
/* Queues block items (a NULL-terminated chain from head to tail): demand or
 * read-ahead; batch (may be NULL) gets count more pending. */
void rc__submit(rc_client *c, rc_item *head, rc_item *tail, bool readahead, rc_batch *batch,
                int count);
/* I/O thread: an item is over (bytes or -errno, msg its sentence). */
void rc__item_finish(rc_item *it, int result, const char *msg);
/* I/O thread: starts queued items while the in-flight bounds allow. */
void rc__io_pump(rc_client *c);
/* I/O thread: probes the nodes again when none answered and down_ms passed. */
void rc__maybe_probe(rc_client *c);
/* The I/O thread's event loop, and its drain at stop. */
void *rc__io_main(void *arg);
/* The eventfd's callback: requests, then items. */
void rc__io_wake(int fd, short what, void *arg);

/* The page cache key of block b of o. */
pc_key rc__key(const rc_client *c, const rc_obj *o, uint64_t b);
/* Whether a scan of an earlier query read these len bytes at from of block k
 * (c->seen), recording them when not. Any thread. */
bool rc__seen_again(rc_client *c, const pc_key *k, uint64_t from, uint64_t len);

#endif /* RINGCACHE_RC_INT_H */
