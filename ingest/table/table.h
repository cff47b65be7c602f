/* SPDX-License-Identifier: Apache-2.0
 *
 * table.h: a MergeTree table kept entirely on S3: immutable part objects
 * (part.h) and the commit log that says which of them make up the table.
 * Every compute node pointed at the same root sees the same table; nothing is
 * kept locally, and no coordination service is needed: S3's conditional
 * writes (If-None-Match: *) pick one winner for each version.
 *
 * Objects under the table's root (keys relative to it):
 *
 *   _log/00000000000000000000.json             version 0: CREATE (schema)
 *   _log/00000000000000000001.json             version 1: parts added/removed,
 *   ...                                          dedup block ids, writer id
 *   _log/00000000000000000010.checkpoint.json  the whole state after version 10
 *   _log/_last_checkpoint                      {"version": 10}: a hint, may lag
 *   data/<partition>_<32 hex>.part             one part object (part.h)
 *   _probe/<32 hex>                            transient: the conditional-write probe
 *
 * Versions are immutable JSON objects (easy to inspect with any S3 tool; a few
 * hundred bytes per insert, so a binary form would save nothing that matters),
 * each written once with If-None-Match: *. Opening a table reads the
 * _last_checkpoint hint, lists _log/ once from that version on (start-after),
 * reads the newest checkpoint in that listing and the versions after it. A
 * checkpoint is written (If-None-Match: *, best effort) after every
 * checkpoint_interval-th version by the writer that committed it.
 *
 * Commit: read the latest version v, write v + 1 with If-None-Match: *; a 412
 * means someone else took v + 1 -- unless the object there carries this
 * commit's writer id (a random 128-bit id per attempt), which happens when an
 * earlier attempt timed out but landed: that is success, not a lost race.
 * The loser re-reads the log and redoes only the commit (its part objects are
 * already written), up to commit_retries times with jittered backoff.
 *
 * Deduplication: an insert's parts carry block ids (the partition plus a
 * 128-bit hash of the block's data, or of insert_deduplication_token and the
 * block's sequence number: tb_block_id()); the last dedup_window ids younger
 * than dedup_window_seconds live in the log. An added part whose block id is
 * known is dropped from the commit (the caller deletes its object); a commit
 * whose every part is known writes nothing and succeeds.
 *
 * Merges replace their inputs with their output in one version; if a racing
 * commit removed an input the merge's commit fails with -ESTALE (the caller
 * deletes the merged object). Removed parts stay readable for
 * old_parts_lifetime seconds (pinned snapshots may still read them); then
 * tb_cleanup() deletes them and records that in the log.
 *
 * Block numbers: an inserted part gets the number of the version that
 * commits it as min_block = max_block; a merged part covers its inputs'
 * range at level max(input levels) + 1. So within a partition parts never
 * overlap and sort by min_block in insert order.
 *
 * Thread-safety: a tb_table is used by one thread at a time (it owns an event
 * loop and an S3 client). A tb_snapshot is immutable: any number of threads
 * may read one at once. A tb_upload has its own S3 connection: uploads may run
 * on other threads than their table, one thread per upload. tb_block_id() and
 * the tb_schema helpers are pure.
 *
 * Errors: -errno with a sentence in err (err may be NULL): -EEXIST (the table
 * exists), -ENOENT (no such table), -ENOTSUP (the store ignores conditional
 * writes: refused, never trusted), -ESTALE (a merge whose input is gone),
 * -EBUSY (commit retries exhausted), -EBADMSG (a damaged log object, named),
 * -EINVAL, -ENOMEM, and the S3 client's codes.
 */
#ifndef RINGCACHE_TABLE_TABLE_H
#define RINGCACHE_TABLE_TABLE_H

#include "part.h"
#include "s3.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TB_LOG_FORMAT                   1
#define TB_DEFAULT_CHECKPOINT_INTERVAL  10
#define TB_DEFAULT_COMMIT_RETRIES       30
#define TB_DEFAULT_DEDUP_WINDOW         10000
#define TB_DEFAULT_DEDUP_WINDOW_SECONDS 3600
#define TB_DEFAULT_OLD_PARTS_LIFETIME   480
#define TB_NAME_MAX                     128 /* part names, partition ids, block ids */

/* The table's schema as CREATE TABLE gave it. */
typedef struct tb_schema {
    uint32_t n_cols;
    tp_column_def *cols; /* names owned */
    uint32_t n_key;
    uint32_t *key_cols;  /* ORDER BY, indices into cols */
    char *partition_by;  /* the expression's text, or NULL (one partition) */
    char *engine;        /* "MergeTree" or "ReplacingMergeTree" */
    int32_t version_col; /* ReplacingMergeTree(ver): index, or -1 */
    uint32_t index_granularity;
    uint64_t schema_version; /* 1 at CREATE */
    char *ddl;               /* the CREATE TABLE statement as the engine keeps it
                                   (declared types, settings), or NULL */
} tb_schema;

/* Deep copy (dst is overwritten) and free. 0 or -ENOMEM. */
int tb_schema_copy(tb_schema *dst, const tb_schema *src);
void tb_schema_deinit(tb_schema *s);

/* One part as the log records it. */
typedef struct tb_part {
    char *name;      /* "<partition>_<32 hex>": object data/<name>.part */
    char *partition; /* partition id: [A-Za-z0-9_-], 1..63 bytes */
    uint64_t rows, bytes;
    uint64_t min_block, max_block;
    uint32_t level;
    int64_t created_ms; /* time of the version that added it */
    int64_t removed_ms; /* removed parts: time of the version that removed it */
    char *etag;         /* the object's version (ETag) as its writer got it, or NULL */
    uint32_t granules;  /* 0 when the writer did not record these three */
    uint64_t compressed_bytes, uncompressed_bytes;
} tb_part;

typedef struct tb_dedup_id {
    char *id; /* "<partition>_<32 hex>" */
    int64_t time_ms;
} tb_dedup_id;

/* A pinned version of the table: immutable, owned by whoever got it. */
typedef struct tb_snapshot {
    uint64_t version;
    int64_t time_ms;
    tb_schema schema;
    tb_part *parts; /* active, sorted by (partition, min_block) */
    size_t n_parts;
    tb_part *removed; /* removed, objects not yet deleted */
    size_t n_removed;
    tb_dedup_id *dedup; /* oldest first */
    size_t n_dedup;
} tb_snapshot;

void tb_snapshot_destroy(tb_snapshot **s);
/* The active part named `name`, or NULL. */
const tb_part *tb_snapshot_part(const tb_snapshot *s, const char *name);

typedef int64_t (*tb_clock_fn)(void *arg); /* unix milliseconds */

typedef struct tb_table_opts {
    s3_config s3;                  /* copied */
    const char *bucket;            /* copied */
    const char *root;              /* "warehouse/default/posts" (copied; no trailing '/') */
    bool writer;                   /* probe the store's conditional writes at open */
    uint32_t checkpoint_interval;  /* 0: 10 */
    uint32_t commit_retries;       /* 0: 30 */
    uint32_t dedup_window;         /* 0: 10000 block ids */
    uint32_t dedup_window_seconds; /* 0: 3600 */
    uint32_t old_parts_lifetime;   /* seconds; 0: 480 */
    tb_clock_fn clock;             /* NULL: the real clock (tests move time) */
    void *clock_arg;
} tb_table_opts;

typedef struct tb_table tb_table;

/* Writes version 0 of a new table (with If-None-Match: *, so of two creators
 * one wins; the other gets -EEXIST, as does creating a table that exists).
 * Probes the store first (see tb_table_open). */
int tb_table_create(const tb_table_opts *o, const tb_schema *schema, char *err, size_t errlen);

/* Opens a table: reads the log to its latest version. With o->writer the
 * store is probed first: a probe object written twice with If-None-Match: *
 * must fail the second time, else -ENOTSUP ("the store ... does not honour
 * conditional writes"). -ENOENT when there is no version 0. */
int tb_table_open(tb_table **out, const tb_table_opts *o, char *err, size_t errlen);
void tb_table_destroy(tb_table **t);

/* Catches up with the log (one List, then a GET per new version). */
int tb_table_refresh(tb_table *t, char *err, size_t errlen);
/* A copy of the latest state known (refresh first for the newest). */
int tb_table_snapshot(tb_table *t, tb_snapshot **out, char *err, size_t errlen);
uint64_t tb_table_version(const tb_table *t);

/* The object key of a part (root/data/<name>.part). -ENOSPC if cap is short. */
int tb_part_key(const tb_table *t, const char *name, char *buf, size_t cap);
const char *tb_table_bucket(const tb_table *t);
const s3_config *tb_table_s3(const tb_table *t);

/* The dedup block id of an insert block: "<partition>_<32 hex>" of XXH3-128
 * over data_hash (16 bytes), or, when token is set, over token, '_' and seq.
 * out holds TB_NAME_MAX. */
void tb_block_id(const char *partition, const uint8_t data_hash[16], const char *token,
                 uint64_t seq, char out[TB_NAME_MAX]);

/* ---- committing ------------------------------------------------------------ */

typedef enum tb_commit_kind {
    TB_COMMIT_INSERT = 1, /* add parts (block ids deduplicated) */
    TB_COMMIT_MERGE,      /* add one part, remove its inputs */
    TB_COMMIT_PURGE,      /* forget removed parts whose objects are gone */
    TB_COMMIT_TRUNCATE,   /* remove every active part (TRUNCATE TABLE) */
} tb_commit_kind;

typedef struct tb_part_add {
    const char *name; /* from tb_upload_name() */
    const char *partition;
    uint64_t rows, bytes;
    uint32_t level;                /* merges */
    uint64_t min_block, max_block; /* merges; inserts get the commit's version */
    const char *block_id;          /* inserts: dedup id, or NULL for none */
    uint32_t granules;             /* optional (0: not recorded): for system.parts */
    uint64_t compressed_bytes, uncompressed_bytes;
    const char *etag; /* optional (NULL or ""): the object's version, tb_upload_etag() */
} tb_part_add;

typedef struct tb_commit {
    tb_commit_kind kind;
    const tb_part_add *add;
    size_t n_add;
    const char *const *remove; /* merges: the inputs, each must be active */
    size_t n_remove;
    const char *const *purge; /* purges: removed parts to forget */
    size_t n_purge;
    uint8_t *dup_out; /* may be NULL; else n_add flags: 1 = dropped as a
                                   duplicate (delete that object) */
    /* an insert that is one piece (a distributed INSERT's work unit, its
     * block ids from one token): when any of its block ids is known, every
     * part is dropped as a duplicate (the piece landed before, whole, and a
     * rerun may cut its blocks differently) */
    bool whole;
} tb_commit;

typedef struct tb_commit_result {
    uint64_t version;          /* written, or the latest when nothing was */
    size_t n_added;            /* parts the version added (0: all duplicates) */
    int attempts;              /* conditional PUTs sent */
    bool landed_after_timeout; /* an attempt's 412 was our own earlier write */
} tb_commit_result;

/* Commits (protocol above). res may be NULL. 0, -ESTALE (a merge input is no
 * longer active), -EBUSY (retries exhausted), -EINVAL (a bad request: names,
 * a remove in an insert, ...), or an S3 error. */
int tb_commit_run(tb_table *t, const tb_commit *c, tb_commit_result *res, char *err, size_t errlen);

/* ---- uploading a part ---------------------------------------------------------- */

/* Streams one part object to S3 in bounded memory: bytes given to
 * tb_upload_write (a tp_write_fn: pass the upload as write_arg) are sent in
 * part_size pieces of a multipart upload once they exceed one piece, else in
 * one PUT at finish; either way with If-None-Match: *. With the table's
 * tb_io put (tb_table_set_io), a part of up to put_max bytes is gathered and
 * handed to put at finish instead (its name is random: no condition is
 * needed). */
typedef struct tb_upload tb_upload;
/* part_size 0: 8 MiB (at least 5 MiB). The name is "<partition>_<random>". */
int tb_upload_create(tb_upload **out, const tb_table *t, const char *partition, size_t part_size,
                     char *err, size_t errlen);
const char *tb_upload_name(const tb_upload *u);
int tb_upload_write(void *u, const void *data, size_t len);
/* Completes the object. size_out may be NULL. */
int tb_upload_finish(tb_upload *u, uint64_t *size_out, char *err, size_t errlen);
/* Aborts an unfinished upload (nothing is left behind), frees it. */
void tb_upload_destroy(tb_upload **u);
/* The version (ETag) the finished object got, when the put told it (tb_io's
 * put_v), else "". */
const char *tb_upload_etag(const tb_upload *u);
/* Bytes the upload holds in memory now (what is gathered and not yet sent). */
size_t tb_upload_memory(const void *u);
/* The last error of tb_upload_write (a tp_write_fn returns only a code). */
const char *tb_upload_error(const tb_upload *u);

/* Opens a part of the table for reading straight from S3 (the engine opens
 * through the cache with rs_rc_open() on tb_part_key() instead). *src and
 * *r belong to the caller: destroy r, then src. */
int tb_part_open(const tb_table *t, const char *name, rs_source **src, tp_reader **r, char *err,
                 size_t errlen);

/* The same through any byte-range source the caller opens, e.g. the cache
 * client: open(arg, bucket, key, &src, err, errlen) with rs_rc_open() inside
 * (reads then come from the cache nodes, filled from S3 once). */
typedef int (*tb_source_open_fn)(void *arg, const char *bucket, const char *key, rs_source **out,
                                 char *err, size_t errlen);
int tb_part_open_via(const tb_table *t, const char *name, tb_source_open_fn open, void *arg,
                     rs_source **src, tp_reader **r, char *err, size_t errlen);
/* Whether the table can open part p without asking the store for its size
 * and version (its log entry has its version, the table's part I/O has
 * open_known); then tb_part_open_known does, else it is tb_part_open. */
bool tb_part_known(const tb_table *t, const tb_part *p);
int tb_part_open_known(const tb_table *t, const tb_part *p, rs_source **src, tp_reader **r,
                       char *err, size_t errlen);

/* ---- where part objects go and come from ----------------------------------------- */

/* Writes a whole object (a part) somewhere that places it in S3, e.g. the
 * cache client's write-through PUT. 0 or -errno with a sentence in err. */
typedef int (*tb_put_fn)(void *arg, const char *bucket, const char *key, const void *data,
                         size_t len, char *err, size_t errlen);
/* The same, telling the object's version (ETag) into version (S3_ETAG_MAX). */
typedef int (*tb_put_v_fn)(void *arg, const char *bucket, const char *key, const void *data,
                           size_t len, char *version, char *err, size_t errlen);
/* Opens an object whose size and version are known (no HEAD). */
typedef int (*tb_source_open_known_fn)(void *arg, const char *bucket, const char *key,
                                       uint64_t size, const char *version, rs_source **out,
                                       char *err, size_t errlen);

/* Part I/O of a table other than its own S3 client: with open set,
 * tb_part_open (and so merges) reads parts through it; with put set, an
 * upload gathers the part in memory and hands it to put at finish, up to
 * put_max bytes (0: 256 MiB); a larger part goes on as a multipart upload
 * straight to S3. The log always uses the table's own client (its writes are
 * conditional). */
typedef struct tb_io {
    tb_source_open_fn open;
    void *open_arg;
    tb_put_fn put;
    void *put_arg;
    size_t put_max;
    /* optional: put_v instead of put (with put_arg), so that the log records
     * each part's version; open_known (with open_arg) for parts whose log
     * entry has it, so that opening one asks nothing of the store */
    tb_put_v_fn put_v;
    tb_source_open_known_fn open_known;
} tb_io;

/* Sets the table's part I/O (copied; NULL: its own S3 client). Uploads
 * created afterwards use it. */
void tb_table_set_io(tb_table *t, const tb_io *io);

/* Deletes a part object (a merge that lost, a duplicate). */
int tb_part_delete(tb_table *t, const char *name, char *err, size_t errlen);

/* ---- cleanup -------------------------------------------------------------------- */

typedef struct tb_cleanup_result {
    size_t deleted;   /* removed parts whose objects were deleted */
    size_t orphans;   /* objects no version refers to, deleted */
    uint64_t version; /* the purge version, 0 if none */
} tb_cleanup_result;

/* For a long-lived process, now and then: deletes the objects of parts removed
 * more than old_parts_lifetime ago and commits their purge; with orphans, also
 * lists data/ and deletes part objects that no version refers to and that are
 * older than old_parts_lifetime (uploads of writers that died before their
 * commit). res may be NULL. */
int tb_cleanup(tb_table *t, bool orphans, tb_cleanup_result *res, char *err, size_t errlen);

#endif /* RINGCACHE_TABLE_TABLE_H */
