/* SPDX-License-Identifier: Apache-2.0
 *
 * bs_region.c: the space allocator and the evictor. The data file is cut into
 * regions; one region at a time is open and every worker appends into it, so
 * the disk sees large sequential writes. A full region is sealed. When fewer
 * than BS_FREE_RESERVE regions are free, the evictor thread frees a whole
 * sealed region: FIFO (oldest sequence) or LRU (oldest hit), optionally
 * copying its hot blocks forward into the open region first (CacheLib Navy's
 * hit-based reinsertion). A region is handed out again only after
 *   1. its blocks are out of the map (no new read can find them),
 *   2. their index deletes are durable (a restart cannot find them either),
 *   3. its reader count is zero (no read still uses its bytes).
 * Writers never fail for lack of space: they park as waiters and go back to
 * their worker's loop when a region is freed.
 */
#include "blockstore_int.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NO_REGION UINT32_MAX

int bs__regions_init(bs_store *s)
{
    s->regions = calloc(s->nregions, sizeof(*s->regions));
    if (!s->regions)
        return -ENOMEM;
    for (uint32_t i = 0; i < s->nregions; i++) {
        atomic_init(&s->regions[i].readers, 0);
        atomic_init(&s->regions[i].last_hit, 0);
    }
    pthread_mutex_init(&s->alloc_lock, NULL);
    pthread_cond_init(&s->alloc_cond, NULL);
    s->open_region = NO_REGION;
    s->next_seq = 1;
    return 0;
}

void bs__regions_deinit(bs_store *s)
{
    if (!s->regions)
        return;
    for (uint32_t i = 0; i < s->nregions; i++) {
        bs_entry *e = s->regions[i].head;
        while (e) {
            bs_entry *n = e->rnext;
            e->on_list = false;
            bs__entry_unref(e);
            e = n;
        }
    }
    free(s->regions);
    s->regions = NULL;
    pthread_mutex_destroy(&s->alloc_lock);
    pthread_cond_destroy(&s->alloc_cond);
}

static void list_add_locked(bs_region *r, bs_entry *e)
{
    e->rprev = NULL;
    e->rnext = r->head;
    if (r->head)
        r->head->rprev = e;
    r->head = e;
    e->on_list = true;
    r->nentries++;
}

static void list_del_locked(bs_region *r, bs_entry *e)
{
    if (e->rprev)
        e->rprev->rnext = e->rnext;
    else
        r->head = e->rnext;
    if (e->rnext)
        e->rnext->rprev = e->rprev;
    e->rprev = e->rnext = NULL;
    e->on_list = false;
    r->nentries--;
}

/* Loading: the index entry e (one reference) goes into the map and its
 * region's list. Malformed locations are dropped from the index. */
int bs__load_entry(void *ctx, bs_entry *e)
{
    bs_store *s = ctx;
    uint64_t alen = bs__round_up(e->len, BS_ALIGN);
    if (e->region >= s->nregions || e->off % BS_ALIGN || e->len > s->block_size ||
        e->off + alen > s->region_size) {
        bs__index_del(s->ix, e->key);
        bs__entry_unref(e);
        return 0;
    }
    bs_region *r = &s->regions[e->region];
    if (e->seq > r->seq)
        r->seq = e->seq;
    if (e->seq >= s->next_seq)
        s->next_seq = e->seq + 1;
    bs_shard *sh = bs__shard_of(s, e->key);
    bs_entry *old = bs__map_put_locked(sh, e);
    assert(!old); /* keys are unique in RocksDB */
    (void)old;
    bs__entry_ref(e);
    list_add_locked(r, e);
    return 0;
}

void bs__regions_after_load(bs_store *s)
{
    pthread_mutex_lock(&s->alloc_lock);
    for (uint32_t i = 0; i < s->nregions; i++) {
        bs_region *r = &s->regions[i];
        /* Entries of an older fill of this region cannot be: its deletes were
         * durable before it was rewritten. Drop them if they are anyway. */
        for (bs_entry *e = r->head, *n; e; e = n) {
            n = e->rnext;
            if (e->seq == r->seq)
                continue;
            bs_shard *sh = bs__shard_of(s, e->key);
            if (bs__map_del_locked(sh, e)) {
                bs__index_del(s->ix, e->key);
                bs__entry_unref(e);
            }
            list_del_locked(r, e);
            bs__entry_unref(e);
        }
        /* Sealed, whatever its fill: the region open at a crash may hold
         * bytes after its last indexed block that nothing describes. */
        if (r->nentries) {
            r->state = BS_R_SEALED;
            r->used = s->region_size;
            s->ssd_used += s->region_size;
        } else {
            r->state = BS_R_FREE;
            r->seq = 0;
            s->nfree++;
        }
    }
    pthread_mutex_unlock(&s->alloc_lock);
}

/* Opens a free region as the open one; false if none is free. */
static bool open_region_locked(bs_store *s)
{
    if (s->nfree == 0)
        return false;
    for (uint32_t i = 0; i < s->nregions; i++) {
        bs_region *r = &s->regions[i];
        if (r->state != BS_R_FREE)
            continue;
        r->state = BS_R_OPEN;
        r->seq = s->next_seq++;
        r->used = 0;
        /* A fresh region counts as just used, later than any hit so far. */
        atomic_store_explicit(&r->last_hit, atomic_fetch_add(&s->clock, 1) + 1,
                              memory_order_relaxed);
        s->nfree--;
        s->ssd_used += s->region_size;
        s->open_region = i;
        return true;
    }
    assert(!"nfree > 0 but no free region");
    return false;
}

/* Reserves alen bytes in the open region, opening a new one if needed. */
static int reserve_locked(bs_store *s, uint32_t alen, uint32_t *region, uint32_t *off)
{
    uint32_t ri = s->open_region;
    if (ri == NO_REGION || s->regions[ri].used + alen > s->region_size) {
        if (ri != NO_REGION) {
            s->regions[ri].state = BS_R_SEALED;
            s->open_region = NO_REGION;
        }
        if (!open_region_locked(s))
            return -EAGAIN;
        ri = s->open_region;
    }
    bs_region *r = &s->regions[ri];
    *region = ri;
    *off = r->used;
    r->used += alen;
    r->pending++;
    return 0;
}

int bs__alloc(bs_store *s, uint32_t alen, bs_entry *e, bs_op *op)
{
    pthread_mutex_lock(&s->alloc_lock);
    int rc = reserve_locked(s, alen, &e->region, &e->off);
    if (rc == 0) {
        e->seq = s->regions[e->region].seq;
    } else {
        op->retry = true; /* set before the evictor can see it */
        op->next = NULL;
        if (s->waiters_tail)
            s->waiters_tail->next = op;
        else
            s->waiters = op;
        s->waiters_tail = op;
        bs__inc(&s->write_waits, 1);
    }
    if (s->nfree < BS_FREE_RESERVE || s->waiters)
        pthread_cond_broadcast(&s->alloc_cond);
    pthread_mutex_unlock(&s->alloc_lock);
    return rc;
}

void bs__write_done(bs_store *s, bs_entry *e, bool ok)
{
    pthread_mutex_lock(&s->alloc_lock);
    bs_region *r = &s->regions[e->region];
    assert(r->pending > 0);
    r->pending--;
    if (ok) {
        bs__entry_ref(e); /* the region list's reference */
        list_add_locked(r, e);
        bs_shard *sh = bs__shard_of(s, e->key);
        pthread_mutex_lock(&sh->lock);
        bs_entry *old = bs__map_put_locked(sh, e); /* takes the caller's reference */
        bs__index_put(s->ix, e);
        pthread_mutex_unlock(&sh->lock);
        if (old) {
            if (old->on_list) {
                list_del_locked(&s->regions[old->region], old);
                bs__entry_unref(old);
            }
            bs__entry_unref(old);
        }
    }
    if (r->pending == 0 && r->state == BS_R_SEALED)
        pthread_cond_broadcast(&s->alloc_cond);
    pthread_mutex_unlock(&s->alloc_lock);
}

bool bs__drop(bs_store *s, bs_entry *e)
{
    pthread_mutex_lock(&s->alloc_lock);
    bs_shard *sh = bs__shard_of(s, e->key);
    pthread_mutex_lock(&sh->lock);
    bool removed = bs__map_del_locked(sh, e);
    if (removed)
        bs__index_del(s->ix, e->key);
    pthread_mutex_unlock(&sh->lock);
    if (removed && e->on_list) {
        list_del_locked(&s->regions[e->region], e);
        bs__entry_unref(e);
    }
    pthread_mutex_unlock(&s->alloc_lock);
    if (removed)
        bs__entry_unref(e);
    return removed;
}

void bs__region_unread(bs_store *s, uint32_t region)
{
    atomic_fetch_sub_explicit(&s->regions[region].readers, 1, memory_order_acq_rel);
}

bs_op *bs__waiters_take(bs_store *s, bs_worker *w)
{
    pthread_mutex_lock(&s->alloc_lock);
    bs_op *mine = bs__ops_take_worker(&s->waiters, &s->waiters_tail, w);
    pthread_mutex_unlock(&s->alloc_lock);
    return mine;
}

/* ---- the evictor ---------------------------------------------------------- */

static uint32_t pick_victim_locked(bs_store *s)
{
    uint32_t best = NO_REGION;
    for (uint32_t i = 0; i < s->nregions; i++) {
        bs_region *r = &s->regions[i];
        if (r->state != BS_R_SEALED || r->pending)
            continue;
        if (best == NO_REGION) {
            best = i;
            continue;
        }
        bs_region *b = &s->regions[best];
        if (s->cfg.evict == BS_EVICT_LRU) {
            uint64_t lr = atomic_load_explicit(&r->last_hit, memory_order_relaxed);
            uint64_t lb = atomic_load_explicit(&b->last_hit, memory_order_relaxed);
            if (lr < lb || (lr == lb && r->seq < b->seq))
                best = i;
        } else if (r->seq < b->seq) {
            best = i;
        }
    }
    return best;
}

/* Copies a hot block forward into the open region, synchronously on this
 * thread (not an event loop). 0 when the map now points at the copy. */
static int reinsert_one(bs_store *s, bs_entry *e)
{
    uint32_t alen = (uint32_t)bs__round_up(e->len, BS_ALIGN);
    ssize_t n = pread(s->data_fd, s->evict_buf, alen, (off_t)bs__file_off(s, e->region, e->off));
    if (n != (ssize_t)alen)
        return -EIO;
    for (uint32_t i = 0; i < e->ncs; i++) {
        uint32_t clen = e->len - i * BS_CHUNK_SIZE;
        if (clen > BS_CHUNK_SIZE)
            clen = BS_CHUNK_SIZE;
        if (bs__chunk_sum(e->key, i, s->evict_buf + (size_t)i * BS_CHUNK_SIZE, clen) != e->cs[i]) {
            bs__inc(&s->drop_checksum, 1);
            return -EBADMSG;
        }
    }
    uint32_t region, off;
    pthread_mutex_lock(&s->alloc_lock);
    /* Never take the last free region for a copy: writers need it more. */
    int rc = -ENOSPC;
    uint32_t ri = s->open_region;
    if ((ri != NO_REGION && s->regions[ri].used + alen <= s->region_size) || s->nfree > 0)
        rc = reserve_locked(s, alen, &region, &off);
    pthread_mutex_unlock(&s->alloc_lock);
    if (rc < 0)
        return rc;

    bs_entry *ne = bs__entry_new(e->key, e->id, e->idlen, e->len);
    bool wrote = ne && pwrite(s->data_fd, s->evict_buf, alen,
                              (off_t)bs__file_off(s, region, off)) == (ssize_t)alen;
    bool swapped = false;
    pthread_mutex_lock(&s->alloc_lock);
    bs_region *r = &s->regions[region];
    r->pending--;
    if (wrote) {
        memcpy(ne->cs, e->cs, e->ncs * sizeof(uint64_t));
        ne->region = region;
        ne->off = off;
        ne->seq = r->seq;
        bs_shard *sh = bs__shard_of(s, e->key);
        pthread_mutex_lock(&sh->lock);
        if (e->in_map) {
            bs_entry *old = bs__map_put_locked(sh, ne);
            assert(old == e);
            (void)old;
            bs__index_put(s->ix, ne);
            swapped = true;
        }
        pthread_mutex_unlock(&sh->lock);
        if (swapped) {
            bs__entry_ref(ne);
            list_add_locked(r, ne);
            bs__entry_unref(e); /* the map's reference, handed back by the put */
        }
    }
    if (r->pending == 0 && r->state == BS_R_SEALED)
        pthread_cond_broadcast(&s->alloc_cond);
    pthread_mutex_unlock(&s->alloc_lock);
    if (!swapped) {
        free(ne);
        return -EIO;
    }
    bs__inc(&s->reinsertions, 1);
    return 0;
}

static void evict_region(bs_store *s, uint32_t vi, bs_entry *list)
{
    bs_region *v = &s->regions[vi];
    uint64_t budget = s->cfg.reinsert ? s->region_size / 2 : 0;
    uint32_t min_hits = s->cfg.reinsert_hits ? s->cfg.reinsert_hits : 1;
    for (bs_entry *e = list; e; e = e->rnext) {
        uint32_t alen = (uint32_t)bs__round_up(e->len, BS_ALIGN);
        if (budget >= alen && atomic_load_explicit(&e->hits, memory_order_relaxed) >= min_hits) {
            int rc = reinsert_one(s, e);
            if (rc == 0) {
                budget -= alen;
                continue;
            }
            if (rc == -ENOSPC) /* writers used every region first: best effort */
                bs__inc(&s->reinsert_skipped, 1);
        }
        bs_shard *sh = bs__shard_of(s, e->key);
        pthread_mutex_lock(&sh->lock);
        bool removed = bs__map_del_locked(sh, e);
        if (removed) {
            bs__index_del(s->ix, e->key);
            bs__inc(&s->evicted_blocks, 1); /* counted as it leaves the map */
        }
        pthread_mutex_unlock(&sh->lock);
        if (removed)
            bs__entry_unref(e);
    }
    /* 2: durable deletes (and the copies' puts) before the bytes go. */
    bs__index_barrier(s->ix);
    /* 3: reads still using the region's bytes. They end with their I/O (a
     * hit's bytes live in a buffer, not in the region), so this is short;
     * polling keeps the read path free of a lock and a signal. */
    while (atomic_load_explicit(&v->readers, memory_order_acquire) != 0) {
        struct timespec ts = {0, 100 * 1000};
        nanosleep(&ts, NULL);
    }
    for (bs_entry *e = list, *n; e; e = n) {
        n = e->rnext;
        e->rnext = e->rprev = NULL;
        bs__entry_unref(e); /* the list's reference */
    }
}

static void *evictor_main(void *arg)
{
    bs_store *s = arg;
    pthread_mutex_lock(&s->alloc_lock);
    while (!s->evictor_stop) {
        if (s->nfree >= BS_FREE_RESERVE && !s->waiters) {
            pthread_cond_wait(&s->alloc_cond, &s->alloc_lock);
            continue;
        }
        uint32_t vi = pick_victim_locked(s);
        if (vi == NO_REGION) {
            /* Every sealed region still has writes in flight: their
             * completion (bs__write_done) wakes us. */
            pthread_cond_wait(&s->alloc_cond, &s->alloc_lock);
            continue;
        }
        bs_region *v = &s->regions[vi];
        v->state = BS_R_EVICTING;
        bs_entry *list = v->head;
        for (bs_entry *e = list; e; e = e->rnext)
            e->on_list = false; /* the list's references move to `list` */
        v->head = NULL;
        v->nentries = 0;
        pthread_mutex_unlock(&s->alloc_lock);

        evict_region(s, vi, list);

        pthread_mutex_lock(&s->alloc_lock);
        v->state = BS_R_FREE;
        v->used = 0;
        v->seq = 0;
        s->nfree++;
        s->ssd_used -= s->region_size;
        bs__inc(&s->evictions, 1);
        /* Every parked writer retries on its own loop. */
        bs_op *w = s->waiters;
        s->waiters = s->waiters_tail = NULL;
        while (w) {
            bs_op *n = w->next;
            bs__inbox_push(w->w, w);
            w = n;
        }
    }
    pthread_mutex_unlock(&s->alloc_lock);
    return NULL;
}

int bs__evictor_start(bs_store *s)
{
    s->evict_buf = NULL;
    if (posix_memalign((void **)&s->evict_buf, BS_ALIGN, s->block_size) != 0)
        return -ENOMEM;
    s->evictor_stop = false;
    int rc = pthread_create(&s->evictor, NULL, evictor_main, s);
    if (rc) {
        free(s->evict_buf);
        s->evict_buf = NULL;
        return -rc;
    }
    s->evictor_running = true;
    return 0;
}

void bs__evictor_stop(bs_store *s)
{
    if (s->evictor_running) {
        pthread_mutex_lock(&s->alloc_lock);
        s->evictor_stop = true;
        pthread_cond_broadcast(&s->alloc_cond);
        pthread_mutex_unlock(&s->alloc_lock);
        pthread_join(s->evictor, NULL);
        s->evictor_running = false;
    }
    free(s->evict_buf);
    s->evict_buf = NULL;
}
