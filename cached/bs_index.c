/* SPDX-License-Identifier: Apache-2.0
 *
 * bs_index.c: RocksDB, the index of record, and the store thread that writes
 * it. The only file that includes rocksdb/c.h: every RocksDB error string is
 * logged, freed and turned into -EIO here.
 *
 * Puts and deletes are queued by the map's writers (under the key's shard
 * lock, so the queue order of one key is its map order) and written by the
 * store thread in batches: one WriteBatch per wake-up, however many entries
 * arrived meanwhile, so an index write costs no RocksDB call on an event loop
 * and no WAL sync per block. Before a batch with puts, the data file is
 * fdatasync'ed: an entry reaches the index only after its bytes are durable.
 * Hits write nothing here: recency lives in RAM.
 */
#include "blockstore_int.h"
#include "errf.h"

#include <errno.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

enum { IX_PUT = 1, IX_DEL, IX_BARRIER };

struct bs_ixop {
    struct bs_ixop *next;
    int kind;
    uint8_t key[16];
    uint8_t *val;
    size_t vlen;
    /* barrier */
    bool done;
    int rc;
};

struct bs_index {
    bs_store *s;
    char path[4200];
    bool sync;
    rocksdb_t *db;
    rocksdb_options_t *opts;
    rocksdb_writeoptions_t *wopts;
    rocksdb_readoptions_t *ropts;

    pthread_mutex_t lock;
    pthread_cond_t cond; /* store thread: work; barriers: done */
    bs_ixop *head, *tail;
    bool stop, running;
    pthread_t thread;
};

/* What a RocksDB error means here: -EUCLEAN when the index is damaged (a
 * checksum or format RocksDB rejects, or a file it names gone), which a cache
 * starts over from; -EIO for anything else (the disk, a lock, the options). */
static int ix_code(const char *errptr)
{
    if (strncmp(errptr, "Corruption", 10) == 0)
        return -EUCLEAN;
    if (strncmp(errptr, "IO error", 8) == 0 && strstr(errptr, "No such file or directory"))
        return -EUCLEAN;
    return -EIO;
}

/* The one conversion of a RocksDB error: log it, free it, -EIO or -EUCLEAN. */
static int ix_err(bs_index *ix, const char *what, char *errptr)
{
    if (!errptr)
        return 0;
    if (ix->s)
        bs__log(ix->s, BS_LOG_ERROR, "msg=\"index %s failed: %s\" path=%s", what, errptr, ix->path);
    int rc = ix_code(errptr);
    rocksdb_free(errptr);
    return rc;
}

int bs__index_open(bs_index **out, const char *path, bool sync, bs_store *s, char *err,
                   size_t errlen)
{
    *out = NULL;
    bs_index *ix = calloc(1, sizeof(*ix));
    if (!ix)
        return -ENOMEM;
    ix->s = s;
    ix->sync = sync;
    snprintf(ix->path, sizeof(ix->path), "%s", path);
    pthread_mutex_init(&ix->lock, NULL);
    pthread_cond_init(&ix->cond, NULL);

    ix->opts = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(ix->opts, 1);
    /* Values are mostly checksums (random bytes): compression buys little. */
    rocksdb_options_set_compression(ix->opts, rocksdb_no_compression);
    rocksdb_options_set_max_background_jobs(ix->opts, 2);
    rocksdb_options_set_keep_log_file_num(ix->opts, 2);
    rocksdb_options_set_info_log_level(ix->opts, 2 /* WARN */);
    ix->wopts = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(ix->wopts, sync ? 1 : 0);
    ix->ropts = rocksdb_readoptions_create();
    rocksdb_readoptions_set_fill_cache(ix->ropts, 0);

    char *e = NULL;
    ix->db = rocksdb_open(ix->opts, path, &e);
    if (e) {
        int rc = ix_code(e);
        errf_set(err, errlen, "cannot open the block index %s: %s (%s)", path, e,
                 rc == -EUCLEAN ? "the index is damaged; empty the data folder to start over"
                                : "check the disk and that no other process uses the folder");
        rocksdb_free(e);
        bs__index_close(&ix);
        return rc;
    }
    *out = ix;
    return 0;
}

void bs__index_close(bs_index **pix)
{
    bs_index *ix = pix ? *pix : NULL;
    if (!ix)
        return;
    bs__index_stop(ix);
    if (ix->db)
        rocksdb_close(ix->db);
    if (ix->opts)
        rocksdb_options_destroy(ix->opts);
    if (ix->wopts)
        rocksdb_writeoptions_destroy(ix->wopts);
    if (ix->ropts)
        rocksdb_readoptions_destroy(ix->ropts);
    pthread_mutex_destroy(&ix->lock);
    pthread_cond_destroy(&ix->cond);
    free(ix);
    *pix = NULL;
}

int bs__index_destroy(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return 0;
    rocksdb_options_t *o = rocksdb_options_create();
    char *e = NULL;
    rocksdb_destroy_db(o, path, &e);
    rocksdb_options_destroy(o);
    if (e) {
        rocksdb_free(e);
        return -EIO;
    }
    rmdir(path);
    return 0;
}

int bs__index_load(bs_index *ix, int (*fn)(void *ctx, bs_entry *e), void *ctx)
{
    rocksdb_iterator_t *it = rocksdb_create_iterator(ix->db, ix->ropts);
    int rc = 0;
    uint64_t bad = 0;
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t klen, vlen;
        const char *k = rocksdb_iter_key(it, &klen);
        const char *v = rocksdb_iter_value(it, &vlen);
        bs_entry *e = NULL;
        if (klen == 16)
            e = bs__entry_decode(bs__key_decode((const uint8_t *)k), (const uint8_t *)v, vlen);
        if (!e) {
            /* A value we cannot parse is dropped, never fatal. */
            rocksdb_writebatch_delete(wb, k, klen);
            bad++;
            continue;
        }
        rc = fn(ctx, e);
        if (rc < 0)
            break;
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    if (err && rc == 0)
        rc = ix_err(ix, "load", err);
    else if (err)
        rocksdb_free(err);
    rocksdb_iter_destroy(it);
    if (bad) {
        bs__log(ix->s, BS_LOG_WARN, "msg=\"dropped %llu malformed index entries\"",
                (unsigned long long)bad);
        char *e2 = NULL;
        rocksdb_write(ix->db, ix->wopts, wb, &e2);
        ix_err(ix, "cleanup", e2);
    }
    rocksdb_writebatch_destroy(wb);
    return rc;
}

static int enqueue(bs_index *ix, bs_ixop *op)
{
    pthread_mutex_lock(&ix->lock);
    op->next = NULL;
    if (ix->tail)
        ix->tail->next = op;
    else
        ix->head = op;
    ix->tail = op;
    pthread_cond_broadcast(&ix->cond);
    pthread_mutex_unlock(&ix->lock);
    return 0;
}

int bs__index_put(bs_index *ix, const bs_entry *e)
{
    size_t vlen = bs__entry_encode_len(e);
    bs_ixop *op = malloc(sizeof(*op) + vlen);
    if (!op)
        return -ENOMEM;
    memset(op, 0, sizeof(*op));
    op->kind = IX_PUT;
    bs__key_encode(e->key, op->key);
    op->val = (uint8_t *)(op + 1);
    op->vlen = vlen;
    bs__entry_encode(e, op->val);
    return enqueue(ix, op);
}

int bs__index_del(bs_index *ix, bkey k)
{
    bs_ixop *op = calloc(1, sizeof(*op));
    if (!op)
        return -ENOMEM;
    op->kind = IX_DEL;
    bs__key_encode(k, op->key);
    return enqueue(ix, op);
}

int bs__index_barrier(bs_index *ix)
{
    bs_ixop op;
    memset(&op, 0, sizeof(op));
    op.kind = IX_BARRIER;
    enqueue(ix, &op);
    pthread_mutex_lock(&ix->lock);
    while (!op.done)
        pthread_cond_wait(&ix->cond, &ix->lock);
    pthread_mutex_unlock(&ix->lock);
    return op.rc;
}

/* Writes one batch; returns the error for the barriers in it. */
static int write_batch(bs_index *ix, bs_ixop *list)
{
    bs_store *s = ix->s;
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    unsigned puts = 0, dels = 0;
    for (bs_ixop *op = list; op; op = op->next) {
        if (op->kind == IX_PUT) {
            rocksdb_writebatch_put(wb, (const char *)op->key, 16, (const char *)op->val, op->vlen);
            puts++;
        } else if (op->kind == IX_DEL) {
            rocksdb_writebatch_delete(wb, (const char *)op->key, 16);
            dels++;
        }
    }
    int rc = 0;
    if (puts + dels) {
        /* Data before index: a power loss must not leave the index naming
         * bytes that were still in the disk's volatile cache. */
        if (puts && ix->sync && s->data_fd >= 0 && fdatasync(s->data_fd) != 0) {
            bs__log(s, BS_LOG_ERROR, "msg=\"fdatasync of the data file failed: %s\"",
                    strerror(errno));
            rc = -EIO;
        }
        if (rc == 0) {
            char *e = NULL;
            rocksdb_write(ix->db, ix->wopts, wb, &e);
            rc = ix_err(ix, "write", e);
        }
        bs__inc(&s->index_batches, 1);
        bs__inc(&s->index_puts, puts);
        bs__inc(&s->index_deletes, dels);
        if (rc < 0)
            bs__inc(&s->index_errors, 1);
    }
    rocksdb_writebatch_destroy(wb);
    return rc;
}

static void *store_thread(void *arg)
{
    bs_index *ix = arg;
    pthread_mutex_lock(&ix->lock);
    for (;;) {
        while (!ix->head && !ix->stop)
            pthread_cond_wait(&ix->cond, &ix->lock);
        if (!ix->head && ix->stop)
            break;
        bs_ixop *list = ix->head;
        ix->head = ix->tail = NULL;
        pthread_mutex_unlock(&ix->lock);

        int rc = write_batch(ix, list);

        pthread_mutex_lock(&ix->lock);
        bool woke = false;
        for (bs_ixop *op = list, *n; op; op = n) {
            n = op->next;
            if (op->kind == IX_BARRIER) {
                op->rc = rc;
                op->done = true; /* the waiter owns op: touch it no more */
                woke = true;
            } else {
                free(op);
            }
        }
        if (woke)
            pthread_cond_broadcast(&ix->cond);
    }
    pthread_mutex_unlock(&ix->lock);
    return NULL;
}

int bs__index_start(bs_index *ix)
{
    ix->stop = false;
    int rc = pthread_create(&ix->thread, NULL, store_thread, ix);
    if (rc)
        return -rc;
    ix->running = true;
    return 0;
}

void bs__index_stop(bs_index *ix)
{
    if (!ix->running) {
        /* Never started: drop what was queued (open failed half-way). */
        for (bs_ixop *op = ix->head, *n; op; op = n) {
            n = op->next;
            if (op->kind != IX_BARRIER)
                free(op);
        }
        ix->head = ix->tail = NULL;
        return;
    }
    pthread_mutex_lock(&ix->lock);
    ix->stop = true;
    pthread_cond_broadcast(&ix->cond);
    pthread_mutex_unlock(&ix->lock);
    pthread_join(ix->thread, NULL);
    ix->running = false;
    if (ix->db) {
        rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
        rocksdb_flushoptions_set_wait(fo, 1);
        char *e = NULL;
        rocksdb_flush(ix->db, fo, &e);
        ix_err(ix, "flush", e);
        rocksdb_flushoptions_destroy(fo);
    }
}

int bs__index_put_direct(bs_index *ix, bs_entry *const *e, size_t n)
{
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    uint8_t k[16];
    uint8_t *val = malloc(BS_IXHDR + 8 * 65536 + BS_MAX_IDENTITY);
    if (!val) {
        rocksdb_writebatch_destroy(wb);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        bs__key_encode(e[i]->key, k);
        bs__entry_encode(e[i], val);
        rocksdb_writebatch_put(wb, (const char *)k, 16, (const char *)val,
                               bs__entry_encode_len(e[i]));
    }
    free(val);
    char *err = NULL;
    rocksdb_write(ix->db, ix->wopts, wb, &err);
    rocksdb_writebatch_destroy(wb);
    return ix_err(ix, "bulk write", err);
}

static int64_t dir_bytes(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return -errno;
    int64_t total = 0;
    struct dirent *de;
    char p[4400];
    while ((de = readdir(d))) {
        struct stat st;
        snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
        size_t n = strlen(de->d_name);
        /* The tables are the index at rest; the WAL is empty after a flush. */
        if (n > 4 && strcmp(de->d_name + n - 4, ".sst") == 0 && stat(p, &st) == 0 &&
            S_ISREG(st.st_mode))
            total += (int64_t)st.st_size;
    }
    closedir(d);
    return total;
}

int64_t bs__index_compact_size(bs_index *ix)
{
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    char *e = NULL;
    rocksdb_flush(ix->db, fo, &e);
    rocksdb_flushoptions_destroy(fo);
    if (ix_err(ix, "flush", e) < 0)
        return -EIO;
    rocksdb_compact_range(ix->db, NULL, 0, NULL, 0);
    return dir_bytes(ix->path);
}
