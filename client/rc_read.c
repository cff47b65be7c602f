/* SPDX-License-Identifier: Apache-2.0
 *
 * rc_read.c: libringcache's reads (rc_pread, rc_pread_flags). A read is cut
 * into chunks of at most c->chunk blocks, and each chunk is planned block by
 * block against the page cache:
 *
 *   pass 0, every block:  pc_fetch NOWAIT
 *     HIT            copy out, release
 *     being filled   by another reader or read-ahead: deferred to pass 1
 *     FILL           an item fetching the whole block into the page
 *     UNCACHED       an item fetching the range straight into the caller's buffer
 *     small partial  (a scattered read, or a scan's first or last block, not
 *                    cached) the same, without taking a page
 *     scan block     (RC_READ_SCAN, not cached) the same: read once, it needs
 *                    no page, and lands in the caller's buffer with one copy;
 *                    with cache_scans it fills a page read once (PC_FETCH_ONCE)
 *   send             the items of the pass go to the I/O thread, or a small
 *                    scattered read's ranges to their owner on this thread's
 *                    blocking connection; wait; complete pages; copy out
 *   pass 1, deferred:    pc_fetch waiting for the other fill, then as above
 *
 * Sequential streams (up to RC_STREAMS per handle) get read-ahead: the blocks
 * after the read, queued without waiting, as low-priority pages that the I/O
 * thread completes. A stream that still had to wait doubles its window, up
 * to window_max.
 */
#include "rc_int.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pc_key rc__key(const rc_client *c, const rc_obj *o, uint64_t b)
{
    bkey_id id;
    bkey_object_block(&o->id, b, &id);
    id.tenant = c->tenant; /* the nodes', as placement uses it */
    id.tenant_len = strlen(c->tenant);
    bkey k = bkey_of(&id);
    return (pc_key){k.hi, k.lo};
}

bool rc__seen_again(rc_client *c, const pc_key *k, uint64_t from, uint64_t len)
{
    if (!c->seen)
        return false;
    uint64_t h = k->hi ^ (k->lo * 0x9E3779B97F4A7C15ull);
    h ^= (from << 32 | len) * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    uint64_t epoch = atomic_load_explicit(&c->epoch, memory_order_relaxed) & 0xffff;
    uint64_t mine = (h << 16) | epoch;
    _Atomic uint64_t *slot = &c->seen[h & c->seen_mask];
    uint64_t was = atomic_load_explicit(slot, memory_order_relaxed);
    if (was && (was >> 16) == (h & (UINT64_MAX >> 16)) && (was & 0xffff) != epoch)
        return true; /* an earlier query's */
    if (was != mine)
        atomic_store_explicit(slot, mine, memory_order_relaxed);
    return false;
}

void rc_query_begin(rc_client *c)
{
    atomic_fetch_add_explicit(&c->epoch, 1, memory_order_relaxed);
}

/* ---- streams and read-ahead -------------------------------------------------------------- */

/* The stream this read continues, or a new one in place of the least
 * recently used; under h->lock. */
static rc_stream *rc_stream_find_locked(rc_handle *h, uint64_t off)
{
    for (int i = 0; i < RC_STREAMS; i++)
        if (h->streams[i].live && h->streams[i].next_off == off) {
            h->streams[i].seq++;
            return &h->streams[i];
        }
    rc_stream *s = &h->streams[0];
    for (int i = 0; i < RC_STREAMS; i++) {
        if (!h->streams[i].live)
            return &h->streams[i];
        if (h->streams[i].used < s->used)
            s = &h->streams[i];
    }
    return s;
}

/* Records this read in the handle's streams; says whether it continues one
 * (sequential) and which blocks to read ahead ([*ra_from, *ra_to], empty when
 * from > to). */
static bool rc_stream_update(rc_handle *h, uint64_t off, uint64_t len, uint64_t *ra_from,
                             uint64_t *ra_to, int *slot)
{
    rc_client *c = h->c;
    uint64_t bs = c->bs;
    uint64_t nblocks = bkey_block_count(h->obj->id.size, bs);
    *ra_from = 1;
    *ra_to = 0;
    pthread_mutex_lock(&h->lock);
    h->tick++;
    rc_stream *s = rc_stream_find_locked(h, off);
    if (!s->live || s->next_off != off) {
        memset(s, 0, sizeof(*s));
        s->live = true;
        s->window = (uint32_t)c->window;
    }
    *slot = (int)(s - h->streams);
    s->next_off = off + len;
    s->used = h->tick;
    bool seq = s->seq >= 1;
    if (seq && c->window > 0) {
        uint64_t last = (off + len - 1) / bs;
        uint64_t target = last + (uint64_t)s->window;
        if (target > nblocks - 1)
            target = nblocks - 1;
        uint64_t from = s->ra_next > last + 1 ? s->ra_next : last + 1;
        if (from <= target) {
            *ra_from = from;
            *ra_to = target;
            s->ra_next = target + 1;
        }
    }
    pthread_mutex_unlock(&h->lock);
    return seq;
}

/* A sequential read of the stream in slot that ended at end had to wait for
 * blocks: the window is too shallow for this cluster's latency; double it (up
 * to window_max) so more fills run at once across the nodes. */
static void rc_stream_grow(rc_handle *h, int slot, uint64_t end)
{
    rc_client *c = h->c;
    pthread_mutex_lock(&h->lock);
    rc_stream *s = &h->streams[slot];
    if (s->live && s->next_off == end && s->window < (uint32_t)c->window_max) {
        uint32_t w = s->window * 2;
        s->window = w < (uint32_t)c->window_max ? w : (uint32_t)c->window_max;
    }
    pthread_mutex_unlock(&h->lock);
}

static void rc_readahead(rc_client *c, rc_obj *o, uint64_t from, uint64_t to)
{
    rc_item *head = NULL, *tail = NULL;
    for (uint64_t b = from; b <= to; b++) {
        pc_key key = rc__key(c, o, b);
        pc_page *pg = NULL;
        int r = pc_fetch(c->pc, &key, PC_FETCH_READAHEAD, &pg);
        if (r == -ENOSPC)
            break;
        if (r != PC_FILL)
            continue; /* cached or being filled already */
        rc_item *it = calloc(1, sizeof(*it));
        if (!it) {
            pc_fill_complete(c->pc, pg, -ENOMEM);
            pc_release(c->pc, &pg);
            break;
        }
        it->c = c;
        it->kind = RC_ITEM_RA;
        atomic_fetch_add(&o->refs, 1);
        it->obj = o;
        it->block = b;
        it->in_len = (uint32_t)bkey_block_len(o->id.size, c->bs, b);
        it->page = pg;
        it->dst = pc_page_data(pg);
        if (tail)
            tail->next = it;
        else
            head = it;
        tail = it;
        RC_COUNT(c, readahead_fetches, 1);
    }
    rc__submit(c, head, tail, true, NULL, 0);
}

/* ---- small reads on the reader's own connection ------------------------------------------- */

/* A small direct read done on this thread over a blocking connection to the
 * block's first owner that is up: no hand-off to the I/O thread and back.
 * 0 when the bytes are in place; anything else (no route yet, the node
 * failed or answered an error, such as "version changed") returns -1 and the
 * caller sends the item through the I/O thread, which handles every case. */
static int rc_read_inline(rc_client *c, rc_item *it)
{
    const bkey_object *o = &it->obj->id;
    rcl_object ro = {o->bucket, o->key, o->version, o->size};
    rcl_target t;
    if (!c->cl || atomic_load(&c->inline_pause_until_ms) > rc__now_ms() ||
        rcl_route(c->cl, &ro, it->block, &t) < 0)
        return -1;
    sc_conn *sc = NULL;
    char err[512];
    if (sc_pool_get(c->pool, t.host, t.port, &sc, err, sizeof(err)) < 0) {
        /* a node that is down or refuses: not again for every read */
        atomic_store(&c->inline_pause_until_ms, rc__now_ms() + c->cfg.down_ms);
        rcl_node_report(c->cl, &t, RCL_NODE_DOWN, err);
        return -1;
    }
    rcp_get_req g = {.obj = {rcp_s(o->bucket), rcp_s(o->key), rcp_s(o->version), o->size},
                     .block = it->block,
                     .offset = it->in_off,
                     .length = it->in_len,
                     .flags = c->cfg.no_fill ? (uint32_t)RCP_GET_CACHE_ONLY : 0u};
    int node_err = 0;
    char msg[256] = "";
    int rc = sc_get(sc, &g, it->dst, it->in_len, &node_err, msg, sizeof(msg));
    sc_pool_put(c->pool, t.host, t.port, &sc);
    if (rc == -ETIMEDOUT && c->cfg.hedge_ms > 0) {
        /* silent for hedge_ms: the I/O thread's way asks again and, if the
         * node does not answer a PING either, hedges (a fill from a slow S3
         * is no failure: the node is not marked down from here) */
        RC_COUNT(c, inline_hedges, 1);
    } else if (rc == -EREMOTEIO && node_err == RCP_E_UPSTREAM) {
        rcl_node_report(c->cl, &t, RCL_NODE_UPSTREAM, msg);
        it->to_s3 = !c->cfg.cache_only; /* else the I/O thread's way fails it in words */
    }
    if (rc < 0)
        return -1;
    RC_COUNT(c, node_blocks, 1);
    RC_COUNT(c, node_bytes, it->in_len);
    RC_COUNT(c, inline_reads, 1);
    return 0;
}

/* ---- planning a chunk ----------------------------------------------------------------------- */

/* One chunk of a read: blocks [b0, b1] of the range [off, off + len) that
 * lands at buf; the items it sends and the blocks it defers to pass 1. */
typedef struct rc_plan {
    rc_handle *h;
    uint8_t *buf;
    uint64_t off, len;
    bool seq, scan;
    bool stalled; /* an item had to be sent */
    bool waited;  /* a block was being filled by another */
    rc_batch batch;
    rc_item items[RC_CHUNK_MAX];
    int n;
    uint64_t deferred[RC_CHUNK_MAX];
    int nd;
} rc_plan;

/* Plans block b in pass 0 or 1: copies a hit, defers a block being filled
 * (pass 0), or adds an item to fetch it. false when the read must stop
 * (the object changed: plan->batch has the error). */
static bool rc_plan_block(rc_plan *p, uint64_t b, int pass)
{
    rc_client *c = p->h->c;
    rc_obj *o = p->h->obj;
    uint64_t bs = c->bs;
    uint64_t blen = bkey_block_len(o->id.size, bs, b);
    uint64_t bstart = b * bs;
    uint64_t from = p->off > bstart ? p->off - bstart : 0;
    uint64_t to = p->off + p->len < bstart + blen ? p->off + p->len - bstart : blen;
    uint64_t dst_off = bstart + from - p->off;
    pc_key key = rc__key(c, o, b);
    /* a scan's first and last blocks fetch only the bytes it wants, whatever
     * their size: it reads them once and its next range starts elsewhere; its
     * whole blocks, read once too, land straight in buf: no page to fill and
     * copy out (one copy of every byte less) */
    bool scan_direct = p->scan && !c->cache_scans; /* else the scan fills pages */
    /* a small part of a block fetches only its bytes. When a scan that keeps
     * what it reads (cache_scans) read the same bytes of this block in an
     * earlier query, they are wanted again and again (the same query run
     * again, a granule every query needs): the read fills the block's page.
     * (A repeat within one query does not count: a scattered query's
     * granules may share a compressed block that it reads once per granule,
     * and filling whole pages for them would cost it the link.) */
    bool partial = pass == 0 && to - from < blen &&
                   (scan_direct || (!p->seq && c->partial_max && to - from <= c->partial_max));
    bool repeat = partial && !scan_direct && p->scan && rc__seen_again(c, &key, from, to - from);
    if (repeat)
        partial = false;
    bool direct = pass == 0 && (partial || scan_direct);
    int r = PC_UNCACHED;
    pc_page *pg = NULL;
    if (!(direct && !pc_contains(c->pc, &key))) {
        unsigned flags = (pass == 0 ? PC_FETCH_NOWAIT : 0) | (p->scan ? PC_FETCH_ONCE : 0);
        for (int attempt = 0; attempt < 3; attempt++) {
            r = pc_fetch(c->pc, &key, flags, &pg);
            if (r >= 0 || r == -EAGAIN || r == -ESTALE)
                break;
            /* another's fill failed (it may have been cancelled): again */
        }
        if (pass == 1 && r >= 0)
            RC_COUNT(c, waits, r == PC_HIT ? 1 : 0);
    } else if (partial) {
        RC_COUNT(c, partial_fetches, 1);
    } else {
        RC_COUNT(c, scan_direct, 1);
    }
    if (r == PC_HIT) {
        if (pass == 0)
            RC_COUNT(c, hits, 1);
        memcpy(p->buf + dst_off, (uint8_t *)pc_page_data(pg) + from, to - from);
        pc_release(c->pc, &pg);
        return true;
    }
    if (r == -EAGAIN) {
        p->waited = true;
        RC_COUNT(c, misses, 1);
        p->deferred[p->nd++] = b;
        return true;
    }
    if (r == -ESTALE) {
        p->batch.code = -ESTALE;
        snprintf(p->batch.msg, sizeof(p->batch.msg),
                 "s3://%s/%s changed since it was opened "
                 "(re-open it)",
                 o->id.bucket, o->id.key);
        return false;
    }
    if (pass == 0)
        RC_COUNT(c, misses, 1);
    rc_item *it = &p->items[p->n++];
    memset(it, 0, sizeof(*it));
    it->c = c;
    it->batch = &p->batch;
    it->obj = o;
    it->block = b;
    if (r == PC_FILL) {
        if (repeat)
            RC_COUNT(c, repeat_fills, 1);
        it->kind = RC_ITEM_PAGE;
        it->page = pg;
        it->dst = pc_page_data(pg);
        it->in_len = (uint32_t)blen;
        it->buf_off = dst_off;
        it->copy_off = (uint32_t)from;
        it->copy_len = (uint32_t)(to - from);
    } else { /* uncached, or the page cache failed: straight into buf */
        it->kind = RC_ITEM_DIRECT;
        it->dst = p->buf + dst_off;
        it->in_off = (uint32_t)from;
        it->in_len = (uint32_t)(to - from);
    }
    return true;
}

/* Waits for the batch's items. A small batch (a scattered read) usually
 * completes within one round trip to a node, a few tens of microseconds: the
 * reader first polls for up to spin_us, yielding its core between checks (the
 * I/O thread or a node on this machine may need it), and sleeps on the
 * condition only after that, which saves a wake-up on the common path. It
 * polls only while small batches complete within spin_us (c->small_wait_us):
 * behind a far or capped link, where they take longer, polling would only
 * burn the core the I/O thread needs, so the reader sleeps at once. */
static void rc_wait_batch(rc_client *c, rc_batch *b, bool small)
{
    int64_t t0 = small ? rc__now_us() : 0;
    int64_t expect = atomic_load_explicit(&c->small_wait_us, memory_order_relaxed);
    if (small && c->cfg.spin_us > 0 && expect <= c->cfg.spin_us) {
        int64_t until = t0 + c->cfg.spin_us;
        while (atomic_load_explicit(&b->pending, memory_order_acquire) > 0 && rc__now_us() < until)
            sched_yield();
    }
    pthread_mutex_lock(&c->qlock);
    while (atomic_load_explicit(&b->pending, memory_order_relaxed) > 0)
        pthread_cond_wait(&b->cond, &c->qlock);
    pthread_mutex_unlock(&c->qlock);
    if (small) {
        /* readers race to update it: any of their samples will do */
        int64_t sample = rc__now_us() - t0, cap = (int64_t)RC_WAIT_CAP * c->cfg.spin_us;
        if (sample > cap)
            sample = cap;
        atomic_store_explicit(&c->small_wait_us, expect ? (3 * expect + sample) / 4 : sample,
                              memory_order_relaxed);
    }
}

/* Completes the pages of the items [first, n) and copies them out. */
static void rc_plan_complete(rc_plan *p, int first)
{
    rc_client *c = p->h->c;
    for (int i = first; i < p->n; i++) {
        rc_item *it = &p->items[i];
        if (it->kind != RC_ITEM_PAGE)
            continue;
        pc_fill_complete(c->pc, it->page, it->result);
        if (it->result >= 0)
            memcpy(p->buf + it->buf_off, (uint8_t *)pc_page_data(it->page) + it->copy_off,
                   it->copy_len);
        pc_release(c->pc, &it->page);
    }
}

/* Fetches the items [first, n): a small scattered read (its ranges straight
 * into buf, one or two blocks) on this thread first, what that cannot do and
 * everything else through the I/O thread; waits, completes, copies out. */
static void rc_plan_send(rc_plan *p, int first)
{
    rc_client *c = p->h->c;
    if (p->n == first)
        return;
    p->stalled = true;
    uint64_t bytes = 0;
    bool direct = c->inline_ok;
    for (int i = first; i < p->n; i++) {
        bytes += p->items[i].in_len;
        direct = direct && p->items[i].kind == RC_ITEM_DIRECT;
    }
    direct = direct && bytes <= RC_SPIN_MAX_BYTES;
    rc_item *head = NULL, *tail = NULL;
    int count = 0;
    for (int i = first; i < p->n; i++) {
        rc_item *it = &p->items[i];
        it->next = NULL;
        if (direct && rc_read_inline(c, it) == 0)
            continue;
        if (tail)
            tail->next = it;
        else
            head = it;
        tail = it;
        count++;
    }
    if (count > 0) {
        rc__submit(c, head, tail, false, &p->batch, count);
        rc_wait_batch(c, &p->batch, bytes <= RC_SPIN_MAX_BYTES);
        rc_plan_complete(p, first);
    }
}

/* Reads blocks [b0, b1] (at most RC_CHUNK_MAX) of p's range: 0 or -errno
 * (the handle's error sentence set). */
static int rc_read_chunk(rc_plan *p, uint64_t b0, uint64_t b1)
{
    p->n = p->nd = 0;
    p->batch.code = 0;
    p->batch.msg[0] = '\0';
    atomic_init(&p->batch.pending, 0);
    pthread_cond_init(&p->batch.cond, NULL);
    for (int pass = 0; pass < 2; pass++) {
        int first = p->n;
        uint64_t nb = pass == 0 ? b1 - b0 + 1 : (uint64_t)p->nd;
        for (uint64_t i = 0; i < nb; i++)
            if (!rc_plan_block(p, pass == 0 ? b0 + i : p->deferred[i], pass))
                break;
        rc_plan_send(p, first); /* also after a stop: the pages planned must complete */
        if (p->batch.code || p->nd == 0)
            break;
        /* pass 1 waits for pages others are filling; this thread holds no pin now */
    }
    pthread_cond_destroy(&p->batch.cond);
    int rc = p->batch.code;
    if (rc < 0) {
        pthread_mutex_lock(&p->h->lock);
        snprintf(p->h->err, sizeof(p->h->err), "%s", p->batch.msg);
        pthread_mutex_unlock(&p->h->lock);
    }
    return rc;
}

int64_t rc_pread(rc_handle *h, void *buf, size_t len, uint64_t off)
{
    return rc_pread_flags(h, buf, len, off, 0);
}

int64_t rc_pread_flags(rc_handle *h, void *buf, size_t len, uint64_t off, unsigned flags)
{
    rc_client *c = h->c;
    rc_obj *o = h->obj;
    if (atomic_load(&o->stale)) {
        pthread_mutex_lock(&h->lock);
        snprintf(h->err, sizeof(h->err), "s3://%s/%s changed since it was opened (re-open it)",
                 o->id.bucket, o->id.key);
        pthread_mutex_unlock(&h->lock);
        return -ESTALE;
    }
    RC_COUNT(c, preads, 1);
    if (off >= o->id.size || len == 0)
        return 0;
    if (len > o->id.size - off)
        len = (size_t)(o->id.size - off);
    uint64_t bs = c->bs;
    uint64_t b0 = off / bs, b1 = (off + len - 1) / bs;
    uint64_t ra_from = 1, ra_to = 0;
    int slot = 0;
    bool scan = flags & RC_READ_SCAN;
    bool seq = !scan && rc_stream_update(h, off, len, &ra_from, &ra_to, &slot);
    if (ra_from <= ra_to)
        rc_readahead(c, o, ra_from, ra_to);
    rc_plan plan, *p = &plan; /* on the stack: no allocation per read */
    p->h = h;
    p->buf = buf;
    p->off = off;
    p->len = len;
    p->seq = seq;
    p->scan = scan;
    p->stalled = p->waited = false;
    int rc = 0;
    uint64_t chunk = (uint64_t)c->chunk;
    for (uint64_t cb = b0; cb <= b1 && rc == 0; cb += chunk)
        rc = rc_read_chunk(p, cb, cb + chunk - 1 < b1 ? cb + chunk - 1 : b1);
    if (seq && (p->stalled || p->waited))
        rc_stream_grow(h, slot, off + len);
    if (p->stalled)
        RC_COUNT(c, stalls, 1);
    if (rc == -ESTALE) {
        atomic_store(&o->stale, true);
        RC_COUNT(c, stale, 1);
        rc__meta_drop(&c->meta, o->id.bucket, o->id.key, o->id.version);
    }
    if (rc < 0)
        return rc;
    RC_COUNT(c, bytes, len);
    return (int64_t)len;
}
