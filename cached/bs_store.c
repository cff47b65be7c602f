/* SPDX-License-Identifier: Apache-2.0
 *
 * bs_store.c: opening and closing the block store (composing the folder
 * checks, the index load, the store and evictor threads and the I/O backend in
 * that order, and tearing them down in reverse), the choice of I/O mode, the
 * counters, and the map-only queries.
 */
#include "blockstore_int.h"
#include "errf.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void bs__log(bs_store *s, int level, const char *fmt, ...)
{
    if (!s || !s->cfg.log)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    s->cfg.log(s->cfg.log_ctx, level, msg);
}

const char *bs_io_mode_name(bs_io_mode mode)
{
    switch (mode) {
    case BS_IO_AUTO: return "auto";
    case BS_IO_URING: return "io_uring";
    case BS_IO_THREADS: return "threads";
    }
    return NULL;
}

const char *bs_evict_policy_name(bs_evict_policy policy)
{
    switch (policy) {
    case BS_EVICT_FIFO: return "fifo";
    case BS_EVICT_LRU: return "lru";
    }
    return NULL;
}

static int check_config(bs_store *s, const bs_config *cfg, char *err, size_t errlen)
{
    if (!cfg->dir || !*cfg->dir || strlen(cfg->dir) >= sizeof(s->dir) - 64) {
        errf_set(err, errlen,
                 "no data folder given, or its path is too long (set the data folder)");
        return -EINVAL;
    }
    s->block_size = cfg->block_size ? cfg->block_size : BS_DEFAULT_BLOCK_SIZE;
    s->region_size = cfg->region_size ? cfg->region_size : BS_DEFAULT_REGION_SIZE;
    if (s->block_size % BS_ALIGN || s->block_size > 256u * 1024 * 1024) {
        errf_set(err, errlen,
                 "block size %u is not a multiple of %u bytes up to 256 MiB (use e.g. 1MiB)",
                 s->block_size, BS_ALIGN);
        return -EINVAL;
    }
    if (s->region_size % s->block_size || s->region_size > (1u << 31)) {
        errf_set(
            err, errlen,
            "region size %u is not a multiple of the block size %u up to 2 GiB (use e.g. 64MiB)",
            s->region_size, s->block_size);
        return -EINVAL;
    }
    if ((unsigned)cfg->io_mode > BS_IO_THREADS || (unsigned)cfg->evict > BS_EVICT_LRU) {
        errf_set(err, errlen, "unknown I/O mode or eviction policy");
        return -EINVAL;
    }
    uint64_t n = cfg->ssd_bytes / s->region_size;
    if (n < BS_MIN_REGIONS || n > UINT32_MAX / 2) {
        errf_set(
            err, errlen,
            "SSD capacity %llu bytes is %llu regions of %u bytes; the store needs at least %u (raise the capacity or lower the region size)",
            (unsigned long long)cfg->ssd_bytes, (unsigned long long)n, s->region_size,
            BS_MIN_REGIONS);
        return -EINVAL;
    }
    s->nregions = (uint32_t)n;
    return 0;
}

/* One attempt at opening; *out is set only on success. lock_fd (-1: none) is
 * the folder's lock when the caller holds it already: the store takes it
 * (closed with the store, or here on failure). */
static int open_once(bs_store **out, const bs_config *cfg, int lock_fd, char *err, size_t errlen)
{
    bs_store *s = calloc(1, sizeof(*s));
    if (!s) {
        if (lock_fd >= 0)
            close(lock_fd);
        return -ENOMEM;
    }
    s->data_fd = -1;
    s->lock_fd = lock_fd;
    s->cfg = *cfg;
    pthread_mutex_init(&s->workers_lock, NULL);
    int rc = check_config(s, cfg, err, errlen);
    if (rc < 0)
        goto fail;
    snprintf(s->dir, sizeof(s->dir), "%s", cfg->dir);
    s->cfg.dir = s->dir;
    atomic_init(&s->clock, 0);

    /* I/O mode first: a refusal should come before anything touches disk. */
    if (cfg->io_mode != BS_IO_THREADS) {
        unsigned entries = cfg->ring_entries ? cfg->ring_entries : 128;
        int u = bs__uring_probe(entries);
        if (u == 0) {
            s->uring = true;
        } else if (cfg->io_mode == BS_IO_URING) {
            errf_set(
                err, errlen,
                "io_uring cannot be set up here: %s (allow io_uring_setup in the seccomp profile, or use the thread-pool I/O mode)",
                strerror(-u));
            rc = -ENOSYS;
            goto fail;
        } else {
            bs__log(
                s, BS_LOG_WARN,
                "msg=\"io_uring cannot be set up (%s): using a pool of %u I/O threads instead; allow io_uring_setup in the seccomp profile for io_uring\"",
                strerror(-u), cfg->io_threads ? cfg->io_threads : 4);
        }
    }

    if ((rc = bs__map_init(s)) < 0 || (rc = bs__regions_init(s)) < 0 ||
        (rc = bs__bufs_init(s)) < 0) {
        errf_set(err, errlen, "out of memory setting up the block store");
        goto fail;
    }
    if ((rc = bs__super_setup(s, err, errlen)) < 0)
        goto fail;
    char ixpath[4200];
    snprintf(ixpath, sizeof(ixpath), "%s/index", s->dir);
    if ((rc = bs__index_open(&s->ix, ixpath, !cfg->no_sync, s, err, errlen)) < 0)
        goto fail;
    if ((rc = bs__index_load(s->ix, bs__load_entry, s)) < 0) {
        if (rc == -EUCLEAN)
            errf_set(
                err, errlen,
                "the block index in %s is damaged (see the log; empty the folder to start over)",
                ixpath);
        else
            errf_set(
                err, errlen,
                "cannot read the block index in %s (see the log; empty the folder to start over)",
                ixpath);
        goto fail;
    }
    bs__regions_after_load(s);
    if ((rc = bs__index_start(s->ix)) < 0 || (rc = bs__evictor_start(s)) < 0) {
        errf_set(err, errlen, "cannot start the block store's threads: %s", strerror(-rc));
        goto fail;
    }
    if (!s->uring &&
        (rc = bs__pool_create(&s->pool, s, cfg->io_threads ? cfg->io_threads : 4)) < 0) {
        errf_set(err, errlen, "cannot start the I/O threads: %s", strerror(-rc));
        goto fail;
    }
    *out = s;
    return 0;

fail:
    bs_close(&s);
    return rc;
}

/* The log line of a quarantine, through cfg's sink (the store that found the
 * damage is closed by then). */
static void log_quarantine(const bs_config *cfg, const char *qdir, const char *reason)
{
    if (!cfg->log)
        return;
    char line[6400];
    char why[1000];
    size_t k = 0;
    for (const char *p = reason; *p && k + 2 < sizeof(why); p++) {
        if (*p == '"' || *p == '\\')
            why[k++] = '\\';
        why[k++] = *p == '\n' ? ' ' : *p;
    }
    why[k] = '\0';
    snprintf(
        line, sizeof(line),
        "msg=\"block store damaged: set aside, starting empty (blocks are refilled from S3)\" dir=%s quarantine=%s reason=\"%s\"",
        cfg->dir, qdir, why);
    cfg->log(cfg->log_ctx, BS_LOG_WARN, line);
}

int bs_open(bs_store **out, const bs_config *cfg, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!out || !cfg) {
        errf_set(err, errlen, "bs_open needs a config");
        return -EINVAL;
    }
    *out = NULL;
    char why[1024] = "";
    bs_store *s = NULL;
    int rc = open_once(&s, cfg, -1, why, sizeof(why));
    bool damaged = rc == -EMEDIUMTYPE || rc == -EUCLEAN;
    if (damaged && !cfg->strict) {
        /* A cache that cannot trust its folder starts over rather than stay
         * down; the damaged parts are kept aside for a post-mortem. The lock
         * is taken again for the move: no other store may be in between. */
        int lock_fd = -1;
        char qdir[4200];
        rc = bs__lock_folder(cfg->dir, &lock_fd, err, errlen);
        if (rc == 0)
            rc = bs__quarantine(cfg->dir, why, qdir, sizeof(qdir), err, errlen);
        if (rc == 0) {
            log_quarantine(cfg, qdir, why);
            rc = open_once(&s, cfg, lock_fd, err, errlen);
            lock_fd = -1; /* the store's now */
            if (rc == 0)
                s->quarantined = 1;
        }
        if (lock_fd >= 0)
            close(lock_fd);
    } else if (rc < 0 && err) {
        snprintf(err, errlen, "%s", why);
    }
    if (rc < 0)
        return rc;
    bs_stats st;
    bs_stats_get(s, &st);
    bs__log(
        s, BS_LOG_INFO,
        "msg=\"block store open\" dir=%s blocks=%llu bytes=%llu regions=%u region_size=%u block_size=%u io=%s evict=%s reinsert=%d ram_bytes=%llu dio_align=%u",
        s->dir, (unsigned long long)st.blocks_stored, (unsigned long long)st.bytes_stored,
        s->nregions, s->region_size, s->block_size, s->uring ? "io_uring" : "threads",
        bs_evict_policy_name(cfg->evict), cfg->reinsert ? 1 : 0, (unsigned long long)cfg->ram_bytes,
        s->dio_align);
    *out = s;
    return 0;
}

void bs_close(bs_store **ps)
{
    bs_store *s = ps ? *ps : NULL;
    if (!s)
        return;
    assert(!s->workers && "detach every worker before bs_close");
    s->closing = true;
    bs__evictor_stop(s);
    bs__index_close(&s->ix); /* writes and syncs what is queued */
    bs__pool_destroy(&s->pool);
    if (s->data_fd >= 0)
        close(s->data_fd);
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    bs__regions_deinit(s);
    if (s->shards[0].buckets)
        bs__map_deinit(s);
    bs__bufs_deinit(s);
    pthread_mutex_destroy(&s->workers_lock);
    free(s);
    *ps = NULL;
}

void bs_stats_get(bs_store *s, bs_stats *out)
{
    memset(out, 0, sizeof(*out));
    bs_wstats sum;
    memset(&sum, 0, sizeof(sum));
    uint64_t inflight = 0;
    pthread_mutex_lock(&s->workers_lock);
    bs__wstats_add(&sum, &s->gone);
    for (bs_worker *w = s->workers; w; w = w->next) {
        bs__wstats_add(&sum, &w->st);
        inflight += atomic_load_explicit(&w->st.inflight, memory_order_relaxed);
    }
    pthread_mutex_unlock(&s->workers_lock);
    for (unsigned i = 0; i < BS_MAP_SHARDS; i++) {
        pthread_mutex_lock(&s->shards[i].lock);
        out->blocks_stored += s->shards[i].count;
        out->bytes_stored += s->shards[i].bytes;
        pthread_mutex_unlock(&s->shards[i].lock);
    }
    pthread_mutex_lock(&s->alloc_lock);
    out->ssd_used = s->ssd_used;
    out->regions_free = s->nfree;
    pthread_mutex_unlock(&s->alloc_lock);
    out->ssd_capacity = (uint64_t)s->nregions * s->region_size;
    out->regions_total = s->nregions;
    if (s->ram) {
        pc_stats ps;
        pc_stats_get(s->ram, &ps);
        out->ram_capacity = pc_capacity_pages(s->ram) * s->block_size;
        out->ram_bytes = ps.bytes_resident;
    }
    out->ram_hits = atomic_load(&sum.ram_hits);
    out->ram_misses = atomic_load(&sum.ram_misses);
    out->ssd_hits = atomic_load(&sum.ssd_hits);
    out->ssd_misses = atomic_load(&sum.ssd_misses);
    out->writes = atomic_load(&sum.writes);
    out->write_bytes = atomic_load(&sum.write_bytes);
    out->write_errors = atomic_load(&sum.write_errors);
    out->checksum_failures = atomic_load(&sum.checksum_failures) + atomic_load(&s->drop_checksum);
    out->io_errors = atomic_load(&sum.io_errors);
    out->write_waits = atomic_load(&s->write_waits);
    out->evictions = atomic_load(&s->evictions);
    out->evicted_blocks = atomic_load(&s->evicted_blocks);
    out->reinsertions = atomic_load(&s->reinsertions);
    out->reinsert_skipped = atomic_load(&s->reinsert_skipped);
    out->index_batches = atomic_load(&s->index_batches);
    out->index_puts = atomic_load(&s->index_puts);
    out->index_deletes = atomic_load(&s->index_deletes);
    out->index_errors = atomic_load(&s->index_errors);
    out->inflight = inflight;
    out->quarantined = s->quarantined;
    out->io_uring = s->uring;
}

static bs_entry *find(bs_store *s, const bkey_id *id)
{
    uint8_t idb[BS_MAX_IDENTITY];
    int idlen = bs__id_encode(id, idb, sizeof(idb));
    if (idlen < 0)
        return NULL;
    return bs__map_get(s, bkey_of(id), idb, (size_t)idlen, false);
}

bool bs_contains(bs_store *s, const bkey_id *id)
{
    bs_entry *e = s && id ? find(s, id) : NULL;
    bs__entry_unref(e);
    return e != NULL;
}

int bs_lookup(bs_store *s, const bkey_id *id, bs_info *info)
{
    if (!s || !id)
        return -EINVAL;
    bs_entry *e = find(s, id);
    if (!e)
        return -ENOENT;
    if (info) {
        info->len = e->len;
        info->region = e->region;
        info->file_off = bs__file_off(s, e->region, e->off);
        pc_key pk = {e->key.hi, e->key.lo};
        info->in_ram = s->ram && pc_contains(s->ram, &pk);
    }
    bs__entry_unref(e);
    return 0;
}

int bs_remove(bs_store *s, const bkey_id *id)
{
    if (!s || !id)
        return -EINVAL;
    bs_entry *e = find(s, id);
    if (!e)
        return -ENOENT;
    bool removed = bs__drop(s, e);
    bs__entry_unref(e);
    return removed ? 0 : -ENOENT;
}

int bs__locate(bs_store *s, const bkey_id *id, uint64_t *file_off, uint32_t *len)
{
    bs_info info;
    int rc = bs_lookup(s, id, &info);
    if (rc == 0) {
        *file_off = info.file_off;
        *len = info.len;
    }
    return rc;
}

uint32_t bs_block_size(const bs_store *s)
{
    return s->block_size;
}

uint32_t bs_region_size(const bs_store *s)
{
    return s->region_size;
}

bool bs_uses_io_uring(const bs_store *s)
{
    return s->uring;
}
