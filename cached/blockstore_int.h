/* SPDX-License-Identifier: Apache-2.0
 *
 * blockstore internals shared by the cached/bs_*.c files (and by the unit
 * tests and the benchmark, which poke at locations and the index directly).
 *
 * LOCK ORDER (never take an earlier one while holding a later one):
 *   alloc lock (regions, their entry lists, waiters)
 *     -> map shard lock (hash chains)
 *       -> index queue lock (so the order of puts and deletes of one key in
 *          the queue is the order of its map changes)
 *   The buffer pool lock and a worker's inbox lock are leaves.
 */
#ifndef RINGCACHE_BLOCKSTORE_INT_H
#define RINGCACHE_BLOCKSTORE_INT_H

#include "blockstore.h"
#include "pagecache.h"

#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>

#define BS_MAP_SHARDS 64u
/* The evictor works while fewer regions than this are free (bs_region.c). */
#define BS_FREE_RESERVE   2u
#define BS_FORMAT_VERSION 1u
#define BS_ALIGN          4096u /* block placement; >= the disk's O_DIRECT alignment */

/* ---- entries and the map (bs_map.c) --------------------------------------- */

/* One stored block. Immutable after creation except the links (under the
 * locks named) and the counters. Reference counted: the map holds one, the
 * region's list one, each read in flight one. */
typedef struct bs_entry {
    struct bs_entry *hnext;         /* map chain (shard lock) */
    struct bs_entry *rprev, *rnext; /* region list (alloc lock) */
    _Atomic uint32_t refs;
    _Atomic uint32_t hits; /* since written or re-inserted */
    bool on_list;          /* in its region's list (alloc lock) */
    bool in_map;           /* the map's entry for its key (shard lock) */
    bkey key;
    uint64_t seq;              /* its region's sequence when written */
    uint32_t region, off, len; /* off: byte offset inside the region */
    uint16_t ncs;
    uint16_t idlen;
    uint8_t *id;   /* encoded identity, idlen bytes */
    uint64_t cs[]; /* one XXH3 per 64 KiB chunk */
} bs_entry;

typedef struct bs_shard {
    pthread_mutex_t lock;
    bs_entry **buckets;
    size_t nbuckets, count;
    uint64_t bytes;
} bs_shard;

/* Encodes the identity as blockkey.c hashes it (length-prefixed fields).
 * Returns the length, or -ENAMETOOLONG above cap. */
int bs__id_encode(const bkey_id *id, uint8_t *out, size_t cap);
/* Decodes it back; pointers into buf. 0 or -EINVAL. */
int bs__id_decode(const uint8_t *buf, size_t len, bkey_id *id);

bs_entry *bs__entry_new(bkey key, const uint8_t *id, size_t idlen, uint32_t len);
void bs__entry_ref(bs_entry *e);
void bs__entry_unref(bs_entry *e);
/* Checksum of chunk i of a block (len bytes at p). */
uint64_t bs__chunk_sum(bkey key, uint32_t i, const void *p, size_t len);
uint16_t bs__nchunks(uint32_t len);

/*
 * INDEX ENTRY (RocksDB value; the key is the 16-byte block key, hi then lo,
 * big-endian, so keys sort like the hex form):
 *
 *   0        1        2                4                8
 *   +--------+--------+----------------+----------------+----------------+
 *   | ver=1  | flags  | nchecksums u16 | region u32     | region seq u64 |
 *   +--------+--------+----------------+----------------+----------------+
 *   16               20               24               28               32
 *   | offset in      | logical length | identity bytes | reserved (0)   |
 *   | region u32     | u32            | u32            |                |
 *   +----------------+----------------+----------------+----------------+
 *   32: nchecksums x u64 XXH3 (chunk i seeded by the key and i)
 *   then the identity: u32 len|tenant|u32 len|bucket|u32 len|key|
 *                      u32 len|version|u64 object size|u64 block index
 *   All integers little-endian.
 */
#define BS_IXHDR 32u
size_t bs__entry_encode_len(const bs_entry *e);
void bs__entry_encode(const bs_entry *e, uint8_t *out);
/* Parses a value; NULL if malformed. */
bs_entry *bs__entry_decode(bkey key, const uint8_t *val, size_t len);
void bs__key_encode(bkey k, uint8_t out[16]);
bkey bs__key_decode(const uint8_t in[16]);

int bs__map_init(bs_store *s);
void bs__map_deinit(bs_store *s);
bs_shard *bs__shard_of(bs_store *s, bkey k);
/* Under the shard lock. */
bs_entry *bs__map_find_locked(bs_shard *sh, bkey k);
/* Inserts e (taking the map's reference from the caller); returns the entry it
 * replaced (whose map reference now belongs to the caller) or NULL. */
bs_entry *bs__map_put_locked(bs_shard *sh, bs_entry *e);
/* Removes e if it is the map's entry for its key; true if it was. The map's
 * reference then belongs to the caller. */
bool bs__map_del_locked(bs_shard *sh, bs_entry *e);
/* Finds id's entry and takes a reference (and, for reads, a region reader
 * count). NULL when absent or another identity. */
bs_entry *bs__map_get(bs_store *s, bkey k, const uint8_t *id, size_t idlen, bool reader);
/* Calls fn for every entry (tests, benchmark); fn runs under a shard lock. */
void bs__map_foreach(bs_store *s, void (*fn)(void *ctx, const bs_entry *e), void *ctx);

/* ---- regions and the allocator (bs_region.c) ------------------------------ */

enum { BS_R_FREE = 0, BS_R_OPEN, BS_R_SEALED, BS_R_EVICTING };

typedef struct bs_region {
    int state;                 /* alloc lock */
    uint64_t seq;              /* alloc lock; set when opened */
    uint32_t used;             /* bytes reserved (alloc lock) */
    uint32_t pending;          /* writes reserved, not completed (alloc lock) */
    uint32_t nentries;         /* alloc lock */
    bs_entry *head;            /* entry list (alloc lock) */
    _Atomic uint32_t readers;  /* reads in flight on its bytes */
    _Atomic uint64_t last_hit; /* store clock at the last hit (LRU) */
} bs_region;

struct bs_op;

int bs__regions_init(bs_store *s);
void bs__regions_deinit(bs_store *s);
/* After the index load: regions with entries sealed, the rest free. */
void bs__regions_after_load(bs_store *s);
/* Reserves alen bytes for op's write. 0: e->region, e->off, e->seq set.
 * -EAGAIN: op was parked as a waiter and goes back to its worker's inbox when
 * a region is freed. */
int bs__alloc(bs_store *s, uint32_t alen, bs_entry *e, struct bs_op *op);
/* A write finished: success inserts e in the map and region list and queues
 * the index put; failure only releases the reservation. */
void bs__write_done(bs_store *s, bs_entry *e, bool ok);
/* Drops e if it is still the map's entry (checksum failure, bs_remove). */
bool bs__drop(bs_store *s, bs_entry *e);
/* Starts/stops the evictor thread. */
int bs__evictor_start(bs_store *s);
void bs__evictor_stop(bs_store *s);
/* Takes w's parked writes out of the waiters (detach). */
struct bs_op *bs__waiters_take(bs_store *s, struct bs_worker *w);
/* Index load callback: e (one reference) into the map and its region. */
int bs__load_entry(void *ctx, bs_entry *e);
void bs__region_unread(bs_store *s, uint32_t region);

/* ---- index: RocksDB and the store thread (bs_index.c) --------------------- */

typedef struct bs_index bs_index;
typedef struct bs_ixop bs_ixop;

/* -EUCLEAN when RocksDB reports the index corrupt (or its files missing),
 * -EIO for other failures. */
int bs__index_open(bs_index **out, const char *path, bool sync, bs_store *s, char *err,
                   size_t errlen);
void bs__index_close(bs_index **ix);
/* Removes an index folder (a fresh store over a half-made one). 0 or -EIO. */
int bs__index_destroy(const char *path);
/* Loads every entry, calling fn (at open, before any thread runs). -EUCLEAN
 * when RocksDB finds the index corrupt while reading it. */
int bs__index_load(bs_index *ix, int (*fn)(void *ctx, bs_entry *e), void *ctx);
/* Queues (copied). Under the key's shard lock for ordering. -ENOMEM. */
int bs__index_put(bs_index *ix, const bs_entry *e);
int bs__index_del(bs_index *ix, bkey k);
/* Waits until every op queued before it is written (and synced). */
int bs__index_barrier(bs_index *ix);
/* Synchronous bulk put, bypassing the queue (benchmark set-up). */
int bs__index_put_direct(bs_index *ix, bs_entry *const *e, size_t n);
/* Flushes memtables and compacts; total bytes of the index folder. */
int64_t bs__index_compact_size(bs_index *ix);
/* Starts/stops the store thread. */
int bs__index_start(bs_index *ix);
void bs__index_stop(bs_index *ix);

/* ---- buffers and the RAM tier (bs_ram.c) ---------------------------------- */

struct bs_buf {
    _Atomic uint32_t refs;
    bs_store *s;
    uint8_t *mem;        /* aligned, block_size bytes (pool) or a page */
    pc_page *page;       /* RAM-tier page pinned by this buffer, or NULL */
    const uint8_t *data; /* the hit's bytes */
    size_t len;
    struct bs_buf *next; /* pool free list */
};

int bs__bufs_init(bs_store *s);
void bs__bufs_deinit(bs_store *s);
/* A pool buffer (block_size bytes, aligned), refs = 1. NULL when out of memory. */
bs_buf *bs__buf_get(bs_store *s);
/* A buffer wrapping a pinned page (the buffer owns the pin), refs = 1. */
bs_buf *bs__buf_page(bs_store *s, pc_page *page);
/* A RAM-tier page about to be filled (PC_FILL): if its buffer was sent from
 * the file, its old pages are dropped from the file first, so bytes still
 * queued in a socket keep the old contents and the fill writes new pages. */
void bs__ram_fresh(bs_store *s, pc_page *page);

/* ---- superblock, folder and O_DIRECT checks (bs_super.c) ------------------ */

/* Checks the folder, locks it (s->lock_fd; -EBUSY when another store holds
 * it), creates or verifies the superblock, opens (creating and preallocating)
 * the data file with O_DIRECT. -EMEDIUMTYPE: damaged or made otherwise. */
int bs__super_setup(bs_store *s, char *err, size_t errlen);
/* flock(LOCK_EX | LOCK_NB) of <dir>/lock into *fd: 0, -EBUSY (held by another
 * store) or -errno, with a sentence in err. */
int bs__lock_folder(const char *dir, int *fd, char *err, size_t errlen);
/* Sets the store files of dir aside (see bs_open): the superblock and the
 * index into a new <dir>/quarantine-<UTC time>[-n]/ with `reason` written in
 * it, the data file removed, older quarantine folders beyond
 * BS_QUARANTINE_KEEP removed. The caller holds the folder's lock. Its name
 * goes to qdir. 0, or -errno with a sentence in err. */
int bs__quarantine(const char *dir, const char *reason, char *qdir, size_t qlen, char *err,
                   size_t errlen);

/* ---- workers, operations and the I/O backends (bs_worker.c, bs_uring.c,
 *      bs_threads.c) ------------------------------------------------------- */

enum { BS_OP_READ = 1, BS_OP_WRITE };

typedef struct bs_op {
    struct bs_op *next;
    struct bs_worker *w;
    int kind;
    bs_entry *e;       /* read: referenced; write: new, not yet in the map */
    bs_buf *buf;       /* I/O buffer */
    uint64_t file_off; /* of the I/O */
    uint32_t io_len;
    uint32_t io_base;  /* read: offset inside the block of the I/O */
    uint64_t off, len; /* read: requested range */
    int res;           /* I/O result */
    uint8_t *iomem;    /* I/O target/source (aligned) */
    pc_page *page;     /* RAM-tier page being filled by this op */
    bool reserved;     /* write: space reserved in a region */
    bool retry;        /* back from the allocator's waiters */
    int early;         /* deferred: completes without I/O with this */
    bs_read_fn rdone;
    bs_write_fn wdone;
    void *arg;
} bs_op;

typedef struct bs_pool bs_pool;

/* Per-worker counters: written by the worker only, read by bs_stats_get. */
typedef struct bs_wstats {
    _Atomic uint64_t ram_hits, ram_misses, ssd_hits, ssd_misses;
    _Atomic uint64_t writes, write_bytes, write_errors, checksum_failures, io_errors;
    _Atomic uint64_t inflight;
} bs_wstats;

typedef struct bs_worker {
    bs_store *s;
    struct event_base *base;
    struct event *ev_efd;  /* the eventfd: CQEs and the inbox */
    struct event *ev_kick; /* activated by hand: flush and deferred */
    int efd;
    bool kicked;
    bool detaching;
    bool uring;
    struct io_uring ring;
    unsigned sq_pending; /* SQEs prepared, not submitted */
    unsigned in_kernel;  /* SQEs submitted, CQE not reaped */
    unsigned cq_cap;
    bs_op *backlog, *backlog_tail; /* waiting for room in the CQ */
    bs_op *tp_head, *tp_tail;      /* thread mode: to hand to the pool */
    unsigned tp_out;               /* thread mode: handed, not completed */
    pthread_mutex_t inbox_lock;
    bs_op *inbox;                    /* completed by pool threads, or waiters */
    bs_op *deferred, *deferred_tail; /* ready to complete on the next turn */
    bs_op *free_ops;
    unsigned waiting; /* ops parked in the allocator's waiters */
    bs_wstats st;
    struct bs_worker *next; /* store's worker list (workers lock) */
} bs_worker;

/* Adds from's counters to to's. */
void bs__wstats_add(bs_wstats *to, bs_wstats *from);
/* Ends an op that never reached the kernel or the pool (detach). */
void bs__op_cancel(bs_worker *w, bs_op *op, int rc);
/* Backend: start an op's I/O (called on the worker thread). */
void bs__io_submit(bs_worker *w, bs_op *op);
/* Flush prepared I/O (once per loop turn). */
void bs__io_flush(bs_worker *w);
/* Reap completions (uring) and the inbox; completes ops. */
void bs__io_poll(bs_worker *w);
/* Completion of an op's I/O, on the worker thread. */
void bs__op_io_done(bs_worker *w, bs_op *op, int res);
/* An op back from the allocator's waiters: retry its allocation. */
void bs__op_retry(bs_worker *w, bs_op *op);
/* Puts op on w's inbox from any thread and wakes the loop. */
void bs__inbox_push(bs_worker *w, bs_op *op);

int bs__uring_probe(unsigned entries);
int bs__uring_init(bs_worker *w);
void bs__uring_deinit(bs_worker *w);
void bs__uring_submit(bs_worker *w, bs_op *op);
void bs__uring_flush(bs_worker *w);
void bs__uring_reap(bs_worker *w);
/* Detach: cancels and waits for everything in the kernel. */
void bs__uring_drain(bs_worker *w);

int bs__pool_create(bs_pool **out, bs_store *s, unsigned n);
void bs__pool_destroy(bs_pool **p);
/* Hands w's prepared ops to the pool. */
void bs__pool_flush(bs_worker *w);
/* Detach: takes w's not-started ops back out of the queue; returns them. */
bs_op *bs__pool_steal(bs_pool *p, bs_worker *w);
/* Unlinks the ops of w from the singly linked queue *head (caller holds the
 * queue's lock), keeps the others in order and sets *tail to the last of them
 * (NULL when none is left); returns w's ops in their order. */
bs_op *bs__ops_take_worker(bs_op **head, bs_op **tail, const bs_worker *w);

/* ---- the store ------------------------------------------------------------ */

struct bs_store {
    bs_config cfg;
    char dir[4096];
    uint32_t block_size, region_size, dio_align;
    uint32_t nregions;
    uint8_t store_id[16];
    int data_fd;
    int lock_fd; /* flock of <dir>/lock, held while open */
    bool uring;
    bool closing;
    uint64_t quarantined; /* 1: this open set a damaged folder aside */

    bs_shard shards[BS_MAP_SHARDS];
    _Atomic uint64_t clock; /* hits, for region LRU */

    pthread_mutex_t alloc_lock;
    pthread_cond_t alloc_cond; /* evictor: work to do; drains */
    bs_region *regions;
    uint32_t open_region; /* UINT32_MAX: none */
    uint32_t nfree;
    uint64_t next_seq;
    bs_op *waiters, *waiters_tail;
    bool evictor_stop;
    bool evictor_running;
    pthread_t evictor;
    uint64_t ssd_used; /* regions not free * region_size */

    bs_index *ix;
    bs_pool *pool;
    pc_cache *ram;
    /* The RAM tier's page buffers: slots of one memfd mapping, so a hit can
     * be sent from the file (sendfile) without a copy (bs_ram.c). */
    int ram_fd; /* -1: no arena, pages from posix_memalign */
    uint8_t *ram_base;
    uint32_t ram_slots;
    uint32_t *ram_free; /* stack of free slot numbers */
    uint32_t ram_nfree;
    _Atomic uint8_t *ram_lent; /* per slot: sent from the file since its last fill */
    pthread_mutex_t ram_lock;

    bool bufs_ready;
    pthread_mutex_t buf_lock;
    bs_buf *buf_free;
    unsigned buf_nfree;
    _Atomic uint64_t bufs_out; /* bs_bufs not yet released */

    pthread_mutex_t workers_lock;
    bs_worker *workers;
    bs_wstats gone; /* counters of detached workers */

    _Atomic uint64_t evictions, evicted_blocks, reinsertions, reinsert_skipped, write_waits;
    _Atomic uint64_t index_batches, index_puts, index_deletes, index_errors;
    _Atomic uint64_t drop_checksum; /* drops counted by the evictor's reads */

    uint8_t *evict_buf; /* evictor's aligned block buffer */
};

void bs__log(bs_store *s, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static inline uint64_t bs__round_up(uint64_t n, uint64_t a)
{
    return (n + a - 1) / a * a;
}

static inline uint64_t bs__file_off(const bs_store *s, uint32_t region, uint32_t off)
{
    return (uint64_t)region * s->region_size + off;
}

/* Relaxed single-writer counter bump (readers are other threads). */
static inline void bs__inc(_Atomic uint64_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* Where a block lives (tests: corrupt a byte). 0 or -ENOENT. */
int bs__locate(bs_store *s, const bkey_id *id, uint64_t *file_off, uint32_t *len);
/* The data file's path. */
void bs__data_path(const bs_store *s, char *buf, size_t len);

#endif /* RINGCACHE_BLOCKSTORE_INT_H */
