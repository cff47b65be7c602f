/* SPDX-License-Identifier: Apache-2.0
 *
 * blockstore: the cache node's storage. Blocks of S3 objects, keyed by their
 * 128-bit block key (client/wire/blockkey.h) and checked against their full
 * identity, kept on local SSD in one large preallocated file cut into regions,
 * written with O_DIRECT, indexed by RocksDB (the index of record) and an
 * in-memory map loaded from it at open, with an optional RAM tier in front
 * (pagecache/, S3-FIFO). What survives a restart, a kill and a power loss is
 * the section of that name in README.md.
 *
 * OWNS
 *   A bs_store owns its folder's files (superblock, data file, RocksDB index),
 *   the in-memory map, the RAM tier, the space allocator and its store thread
 *   (the index writer, and the I/O threads in BS_IO_THREADS mode). A bs_worker
 *   owns its io_uring (or its queue into the pool) and its operations. A
 *   bs_buf is reference-counted and owned by whoever holds a reference.
 *
 * THREAD-SAFETY
 *   bs_open() and bs_close() must not race with any other call on the store.
 *   Everything taking a bs_store * (bs_contains, bs_lookup, bs_remove,
 *   bs_stats_get, bs_worker_attach) is thread-safe. A bs_worker belongs to the
 *   thread that runs its event loop: bs_read(), bs_write() and
 *   bs_worker_detach() must be called on that thread, and every completion
 *   callback runs on that thread, from that loop, never from inside the call
 *   that submitted it. bs_buf_unref() may be called from any thread.
 *   Shared between workers: the index map (64 shards, one mutex each; a hit
 *   takes one shard lock once) and the space allocator (one mutex, taken once
 *   per write). Per worker: its io_uring (or its queue into the shared I/O
 *   thread pool), its operation free list and its counters.
 *
 * I/O MODES
 *   BS_IO_URING: one io_uring per worker, its eventfd registered with the
 *   worker's event loop as a persistent read event; submissions are batched
 *   once per loop turn. BS_IO_THREADS: a shared pool of I/O threads doing
 *   pread/pwrite, completing through the worker's eventfd. BS_IO_AUTO (the
 *   default): io_uring when a ring can be set up, else the pool (container
 *   runtimes' default seccomp profiles block io_uring), said once in the log.
 *
 * LIFECYCLE OF A BLOCK
 *   bs_write -> copied into an aligned buffer, checksummed (XXH3 per 64 KiB,
 *   seeded by the block key and the chunk number) -> appended to the open
 *   region -> on disk (write completion) -> in the map (readable) and queued
 *   for the index (RocksDB, batched by the store thread; fdatasync of the data
 *   first, so the index never names bytes a power loss could lose) -> callback.
 *   When the disk is full, whole regions are evicted (FIFO or LRU over
 *   regions), hot blocks optionally re-inserted; a region is rewritten only
 *   after its index entries are deleted durably and its in-flight reads ended.
 */
#ifndef RINGCACHE_BLOCKSTORE_H
#define RINGCACHE_BLOCKSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blockkey.h"

#ifdef __cplusplus
extern "C" {
#endif

struct event_base;

typedef struct bs_store bs_store;
typedef struct bs_worker bs_worker;
typedef struct bs_buf bs_buf;

/* Defaults and limits. */
#define BS_DEFAULT_BLOCK_SIZE  (1024u * 1024u)
#define BS_DEFAULT_REGION_SIZE (64u * 1024u * 1024u)
#define BS_CHUNK_SIZE          (64u * 1024u) /* one checksum per chunk */
#define BS_MIN_REGIONS         4u            /* open + being evicted + two sealed */
#define BS_MAX_IDENTITY        4096u         /* encoded identity bytes (bucket+key+...) */

typedef enum bs_io_mode {
    BS_IO_AUTO = 0,    /* io_uring if it can be set up, else threads (logged) */
    BS_IO_URING = 1,   /* io_uring or fail at open */
    BS_IO_THREADS = 2, /* thread pool */
} bs_io_mode;

typedef enum bs_evict_policy {
    BS_EVICT_FIFO = 0, /* oldest region first */
    BS_EVICT_LRU = 1,  /* region with the oldest hit first */
} bs_evict_policy;

enum { BS_LOG_ERROR = 0, BS_LOG_WARN = 1, BS_LOG_INFO = 2, BS_LOG_DEBUG = 3 };

/* Log sink: one line per call (logfmt, no newline). May be called from any
 * thread of the store (open/close caller, store thread, evictor), never with a
 * store lock held. */
typedef void (*bs_log_fn)(void *ctx, int level, const char *msg);

/* Fault injection (tests): called on the worker's thread when an I/O
 * completes, before its result is used. write is 1 for a write; file_off and
 * len locate it in the data file. Return 0 to keep the real result, or a
 * -errno to replace it (the operation then fails as if the disk had). */
typedef int (*bs_io_hook_fn)(void *ctx, int write, uint32_t region, uint64_t file_off, size_t len);

typedef struct bs_config {
    const char *dir;        /* data folder, must exist and be writable */
    uint64_t ssd_bytes;     /* capacity on disk (rounded down to regions) */
    uint64_t ram_bytes;     /* RAM tier capacity; 0 turns the tier off */
    uint32_t block_size;    /* 0: BS_DEFAULT_BLOCK_SIZE; multiple of 4096 */
    uint32_t region_size;   /* 0: BS_DEFAULT_REGION_SIZE; multiple of block_size */
    bs_io_mode io_mode;     /* BS_IO_AUTO by default */
    unsigned io_threads;    /* thread-pool size; 0: 4 */
    unsigned ring_entries;  /* io_uring SQ size per worker; 0: 128 */
    bs_evict_policy evict;  /* BS_EVICT_FIFO by default */
    bool reinsert;          /* re-insert hot blocks of an evicted region */
    unsigned reinsert_hits; /* hits since written that make a block hot; 0: 1 */
    bool no_sync;           /* skip fdatasync and RocksDB WAL sync: survives a
                                 kill, not a power loss (tests, benchmarks) */
    bool sparse;            /* do not preallocate the data file (benchmarks of
                                 the index only; a full disk then fails writes) */
    bool strict;            /* a damaged folder (superblock, index or data file,
                                 or one made with another geometry or format) is
                                 refused at open; by default it is set aside into
                                 <dir>/quarantine-<time>/ and the store starts empty */
    bs_log_fn log;          /* NULL: silent */
    void *log_ctx;
    bs_io_hook_fn io_hook; /* NULL: none */
    void *io_hook_ctx;
} bs_config;

/* Counters. Summed over workers on read; not one atomic snapshot. */
typedef struct bs_stats {
    uint64_t blocks_stored; /* blocks in the map (readable) */
    uint64_t bytes_stored;  /* their logical bytes */
    uint64_t ssd_capacity;  /* regions * region_size */
    uint64_t ssd_used;      /* bytes of regions not free (open, sealed, evicting) */
    uint64_t ram_capacity;
    uint64_t ram_bytes; /* RAM tier page buffers in use */
    uint64_t ram_hits, ram_misses;
    uint64_t ssd_hits, ssd_misses; /* misses: not stored, other version, or a
                                      failed read (checksum, I/O) */
    uint64_t writes, write_bytes, write_errors;
    uint64_t write_waits;       /* writes that waited for a region to be freed */
    uint64_t evictions;         /* regions evicted */
    uint64_t evicted_blocks;    /* blocks dropped by eviction */
    uint64_t reinsertions;      /* blocks copied forward instead of dropped */
    uint64_t reinsert_skipped;  /* hot blocks dropped: no free space for the copy
                                   (the writers had taken every region) */
    uint64_t checksum_failures; /* reads whose bytes did not verify (dropped) */
    uint64_t io_errors;         /* failed reads and writes */
    uint64_t index_batches, index_puts, index_deletes, index_errors;
    uint64_t inflight; /* I/O submitted and not completed, now */
    uint64_t regions_total, regions_free;
    uint64_t quarantined; /* 1 when bs_open set a damaged folder aside */
    bool io_uring;        /* the I/O mode in use */
} bs_stats;

/* Information about a stored block (bs_lookup). */
typedef struct bs_info {
    uint32_t len;      /* logical length */
    uint32_t region;   /* where it lives */
    uint64_t file_off; /* byte offset in the data file */
    bool in_ram;       /* a RAM-tier copy exists (may change at once) */
} bs_info;

/* A read completed. rc >= 0: a hit, rc bytes at bs_buf_data(buf); the callee
 * owns one reference to buf and must bs_buf_unref() it (from any thread, when
 * done sending). rc < 0: a miss, buf is NULL: -ENOENT (not stored, or another
 * version), -EBADMSG (the bytes failed their checksum; the entry is dropped),
 * -EIO (read error; counted), -ECANCELED (the worker is detaching). */
typedef void (*bs_read_fn)(void *arg, int rc, bs_buf *buf);

/* A write completed: 0 (on disk and readable; in the index of record at the
 * store thread's next batch), -EIO (write error; not stored), -ECANCELED
 * (the worker is detaching; not stored). */
typedef void (*bs_write_fn)(void *arg, int rc);

/* Opens (or creates) the store in cfg->dir: superblock, data file, RocksDB
 * index (loaded into the map; nothing of the data file is scanned), store and
 * evictor threads, the I/O thread pool when in thread mode. cfg is copied.
 * Every region that holds blocks is sealed: the region open at a crash is
 * never appended into. The folder is locked (flock of <dir>/lock) while the
 * store is open: a second store on it is refused.
 *
 * A damaged folder (a short or garbled superblock, a corrupt index, a data
 * file of the wrong size, or a folder made with another block size, region
 * size, capacity or format) is, unless cfg->strict, a cache that starts over:
 * the superblock and the index are moved into <dir>/quarantine-<UTC time>/
 * with a file `reason`, the data file is removed (its space is the store's
 * capacity), the newest BS_QUARANTINE_KEEP such folders are kept, a warning
 * naming the cause is logged, bs_stats.quarantined is 1, and the store opens
 * empty.
 *
 * Errors: -EINVAL (bad config), -ENOENT / -ENOTDIR / -EACCES / -EROFS (folder),
 * -EBUSY (another store has the folder open), -EOPNOTSUPP (no O_DIRECT),
 * -ENOSPC (folder smaller than ssd_bytes), with cfg->strict -EMEDIUMTYPE
 * (damaged superblock or data file, another geometry or format) and -EUCLEAN
 * (corrupt index), -ENOSYS (BS_IO_URING asked, io_uring unavailable), -EIO
 * (index), -ENOMEM. On error a sentence naming the thing and the fix is
 * written to err (if errlen > 0) and *out is NULL. */
#define BS_QUARANTINE_KEEP 3
int bs_open(bs_store **out, const bs_config *cfg, char *err, size_t errlen);

/* Stops the store and frees it: every worker must be detached and every
 * bs_buf released (asserted). Waits for the evictor, flushes the index queue
 * (its last batch is written and synced), closes RocksDB and the files. Sets
 * *store to NULL; accepts NULL and a pointer to NULL. */
void bs_close(bs_store **store);

/* Creates a worker bound to base (the calling thread's loop): an io_uring and
 * an eventfd registered as a persistent read event (thread mode: only the
 * eventfd). The store must outlive it. Errors: -EINVAL, -ENOMEM, -errno of
 * io_uring_queue_init / eventfd. Thread-safe (many workers may attach). */
int bs_worker_attach(bs_store *store, struct event_base *base, bs_worker **out);

/* Detaches a worker, on its own thread: operations not yet handed to the
 * kernel or the I/O pool (writes parked for space, a backlog, a pool queue)
 * complete with -ECANCELED; I/O already submitted is waited for (the kernel
 * owns its buffers) and completes with its real result (a finished write is
 * stored). Completions with no I/O (misses, RAM hits) still pending complete
 * as they would have. These callbacks run synchronously inside this call, the
 * one exception to the rule; bs_read/bs_write called from them return
 * -ESHUTDOWN. Frees the worker; *w becomes NULL; accepts NULL. */
void bs_worker_detach(bs_worker **w);

/* Reads [off, off+len) of a block (len 0: to the end of the block). The range
 * must lie inside the block's length as given by id (bkey_block_len). id is
 * borrowed for the call only. Returns 0 when accepted: done(arg, rc, buf) will
 * run later on this worker's loop, exactly once. Returns -EINVAL (bad range,
 * NULL), -ENAMETOOLONG (identity above BS_MAX_IDENTITY) or -ESHUTDOWN without
 * calling done; -ENOMEM if no buffer could be had. A hit from the RAM tier is a reference to its page (no copy);
 * one from SSD verifies only the 64 KiB chunks it touches. */
int bs_read(bs_worker *w, const bkey_id *id, uint64_t off, uint64_t len, bs_read_fn done,
            void *arg);

/* Stores a block. len must equal bkey_block_len(id->object_size, block_size,
 * id->index) (a short last block keeps its length; it is padded on disk). data
 * and id are borrowed for the call only (copied before return). Returns 0 when
 * accepted: done(arg, rc) will run later on this worker's loop, exactly once.
 * Never fails because the disk is full: it waits for eviction. A block already
 * stored under the same identity is replaced. Returns -EINVAL,
 * -ENAMETOOLONG, -ENOMEM or -ESHUTDOWN without calling done. */
int bs_write(bs_worker *w, const bkey_id *id, const void *data, size_t len, bs_write_fn done,
             void *arg);

/* The bytes of a hit and their count. Valid until the last unref. */
const void *bs_buf_data(const bs_buf *buf);
size_t bs_buf_len(const bs_buf *buf);
/* Takes another reference (e.g. one per evbuffer_add_reference). Thread-safe. */
void bs_buf_ref(bs_buf *buf);
/* Drops a reference; *buf becomes NULL; accepts NULL. Thread-safe. */
void bs_buf_unref(bs_buf **buf);
/* Where the bytes at p (inside buf's data) lie in a file, for sendfile(): a
 * RAM-tier hit is a page of the tier's memfd. 0 with *fd (owned by the store,
 * open until bs_close) and *off filled, and the page marked as lent: the
 * kernel may keep references to its memory after the send returns, so the
 * tier never rewrites it in place (it is replaced before its next fill).
 * Keep a reference to buf until the send has taken the bytes. -ENOENT when
 * the bytes are not in a file (a read from SSD, or no RAM tier). Thread-safe. */
int bs_buf_file(bs_buf *buf, const void *p, int *fd, uint64_t *off);

/* True when the map holds the block under this exact identity. RAM map only
 * (no I/O, no RocksDB); the answer may be stale at once. Thread-safe. */
bool bs_contains(bs_store *store, const bkey_id *id);

/* Like bs_contains, and fills *info. 0 or -ENOENT. Thread-safe. */
int bs_lookup(bs_store *store, const bkey_id *id, bs_info *info);

/* Drops a block (map now, index at the next batch). 0 or -ENOENT.
 * Thread-safe; a read already past its lookup still completes. */
int bs_remove(bs_store *store, const bkey_id *id);

/* Sums the counters into *out. Thread-safe. */
void bs_stats_get(bs_store *store, bs_stats *out);

/* Fixed at open. Thread-safe. */
uint32_t bs_block_size(const bs_store *store);
uint32_t bs_region_size(const bs_store *store);
bool bs_uses_io_uring(const bs_store *store);

/* "auto", "io_uring", "threads"; "fifo", "lru"; NULL when unknown. */
const char *bs_io_mode_name(bs_io_mode mode);
const char *bs_evict_policy_name(bs_evict_policy policy);

#ifdef __cplusplus
}
#endif

#endif /* RINGCACHE_BLOCKSTORE_H */
