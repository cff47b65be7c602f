/* SPDX-License-Identifier: Apache-2.0
 *
 * rc_io.c: libringcache's I/O thread (rc_int.h). Readers queue block items
 * (demand ahead of read-ahead) and typed requests under qlock and write the
 * eventfd; the loop takes requests first, then starts items while fewer than
 * max_inflight are out (read-ahead at most half of them): each item is one
 * block, or a range of one, asked of the cluster (cluster.h: its owner, then
 * the next ones), and read from S3 directly when no node can give it (a
 * ranged GET with If-Match whose ETag is compared, unless cache_only).
 * Finishing an item completes a read-ahead page on this thread, or counts
 * down its reader's batch and wakes the reader.
 */
#include "rc_int.h"

#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int64_t rc__now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t rc__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rc__obj_unref(rc_obj **op)
{
    rc_obj *o = *op;
    *op = NULL;
    if (o && atomic_fetch_sub(&o->refs, 1) == 1)
        free(o);
}

/* ---- the queue ------------------------------------------------------------------------ */

void rc__wake(rc_client *c)
{
    uint64_t one = 1;
    ssize_t n = write(c->efd, &one, sizeof(one));
    (void)n; /* EAGAIN: the counter is already non-zero, the loop will wake */
}

void rc__submit(rc_client *c, rc_item *head, rc_item *tail, bool readahead, rc_batch *batch,
                int count)
{
    if (!head)
        return;
    pthread_mutex_lock(&c->qlock);
    if (batch)
        atomic_fetch_add(&batch->pending, count);
    rc_item **qh = readahead ? &c->rq_head : &c->dq_head;
    rc_item **qt = readahead ? &c->rq_tail : &c->dq_tail;
    if (*qt)
        (*qt)->next = head;
    else
        *qh = head;
    *qt = tail;
    pthread_mutex_unlock(&c->qlock);
    rc__wake(c);
}

/* ---- block items ---------------------------------------------------------------------- */

void rc__item_finish(rc_item *it, int result, const char *msg)
{
    rc_client *c = it->c;
    it->result = result;
    c->inflight--;
    if (it->kind == RC_ITEM_RA) {
        c->ra_inflight--;
        pc_fill_complete(c->pc, it->page, result);
        pc_release(c->pc, &it->page);
        if (result == -ESTALE)
            atomic_store(&it->obj->stale, true);
        rc__obj_unref(&it->obj);
        free(it);
    } else {
        rc_batch *b = it->batch;
        pthread_mutex_lock(&c->qlock);
        if (result < 0 && !b->code) {
            b->code = result;
            snprintf(b->msg, sizeof(b->msg), "%s", msg && msg[0] ? msg : strerror(-result));
        }
        if (atomic_fetch_sub_explicit(&b->pending, 1, memory_order_release) == 1)
            pthread_cond_signal(&b->cond);
        pthread_mutex_unlock(&c->qlock);
    }
    if (atomic_load(&c->stop) && c->inflight == 0)
        event_base_loopbreak(c->base);
    else if (!c->pumping)
        rc__io_pump(c);
}

static void rc_item_s3_done(const s3_error *err, const s3_get_result *res, void *arg)
{
    rc_item *it = arg;
    const bkey_object *o = &it->obj->id;
    char msg[RC_ERR_MAX];
    if (err->code && err->http_status == 416) {
        /* a range inside the pinned size is outside the object now: another,
         * shorter version (a server that ignores If-Match says so) */
        snprintf(msg, sizeof(msg),
                 "s3://%s/%s changed: it is shorter than the %" PRIu64
                 " bytes the handle is pinned to (re-open it)",
                 o->bucket, o->key, o->size);
        rc__item_finish(it, -ESTALE, msg);
        return;
    }
    if (err->code) {
        rc__item_finish(it, err->code, err->message);
        return;
    }
    if (strcmp(res->etag, o->version) != 0) {
        snprintf(msg, sizeof(msg),
                 "s3://%s/%s changed: version %.64s, the handle is pinned to "
                 "%.64s (re-open it)",
                 o->bucket, o->key, res->etag, o->version);
        rc__item_finish(it, -ESTALE, msg);
        return;
    }
    if (res->bytes != it->in_len) {
        snprintf(msg, sizeof(msg),
                 "S3 sent %" PRIu64 " bytes of s3://%s/%s block %" PRIu64 ", not %u", res->bytes,
                 o->bucket, o->key, it->block, it->in_len);
        rc__item_finish(it, -EIO, msg);
        return;
    }
    RC_COUNT(it->c, fallbacks, 1);
    RC_COUNT(it->c, s3_bytes, it->in_len);
    rc__item_finish(it, (int)it->in_len, NULL);
}

/* The nodes cannot give the block (code: -EHOSTDOWN none is up, -EREMOTEIO
 * the owner's own S3 failed, -ENODATA no_fill and not cached; why: their
 * words, or NULL): S3 directly, unless this process may not call S3. */
static void rc_item_to_s3(rc_item *it, int code, const char *why)
{
    rc_client *c = it->c;
    const bkey_object *o = &it->obj->id;
    char msg[RC_ERR_MAX];
    if (c->cfg.cache_only || it->kind == RC_ITEM_PROBE) {
        const char *note = c->cfg.cache_only ? " (cache_only: S3 is not read directly)" : "";
        if (why && why[0])
            snprintf(msg, sizeof(msg), "%s%s", why, note);
        else
            snprintf(msg, sizeof(msg), "no cache node owning s3://%s/%s block %" PRIu64 " is up%s",
                     o->bucket, o->key, it->block, note);
        rc__item_finish(it, code, msg);
        return;
    }
    if (code == -EREMOTEIO)
        RC_COUNT(c, upstream_fallbacks, 1);
    if (!c->s3) {
        snprintf(msg, sizeof(msg),
                 "every cache node is down and the S3 client could not be "
                 "set up: %s",
                 c->s3_err);
        rc__item_finish(it, -EIO, msg);
        return;
    }
    s3_get_args a = {.bucket = o->bucket,
                     .key = o->key,
                     .offset = it->block * c->bs + it->in_off,
                     .length = it->in_len,
                     .if_match = o->version,
                     .buf = it->dst,
                     .cap = it->in_len};
    int rc = s3_get(c->s3, &a, rc_item_s3_done, it);
    if (rc < 0) {
        snprintf(msg, sizeof(msg), "cannot send a GET of s3://%s/%s to S3: %s", o->bucket, o->key,
                 strerror(-rc));
        rc__item_finish(it, rc, msg);
    }
}

static void rc_item_node_done(int code, const char *msg, void *arg)
{
    rc_item *it = arg;
    rc_client *c = it->c;
    if (c->cl && !atomic_load(&c->stop)) {
        rcl_stats cs;
        rcl_stats_get(c->cl, &cs);
        atomic_store(&c->st.failovers, cs.failovers);
        atomic_store(&c->st.hedges, cs.hedges);
        atomic_store(&c->st.hedge_wins, cs.hedge_wins);
    }
    if (code == 0) {
        RC_COUNT(c, node_blocks, 1);
        RC_COUNT(c, node_bytes, it->in_len);
        rc__item_finish(it, (int)it->in_len, NULL);
    } else if ((code == -EHOSTDOWN || code == -EREMOTEIO || code == -ENODATA) &&
               !atomic_load(&c->stop)) {
        rc_item_to_s3(it, code, code == -EHOSTDOWN ? NULL : msg);
    } else {
        rc__item_finish(it, code, msg);
    }
}

void rc__maybe_probe(rc_client *c)
{
    if (!c->cl || c->connected || c->connecting || rc__now_ms() < c->next_probe_ms)
        return;
    c->connecting = true;
    rcl_reset_down(c->cl);
    if (rcl_connect(c->cl, rc__connect_done, c) < 0) {
        c->connecting = false;
        c->next_probe_ms = rc__now_ms() + c->cfg.down_ms;
    }
}

static void rc_item_start(rc_item *it)
{
    rc_client *c = it->c;
    if (it->to_s3) { /* the owner told the reader's connection its S3 failed */
        rc_item_to_s3(it, -EREMOTEIO, NULL);
        return;
    }
    rc__maybe_probe(c);
    if (c->connected) {
        const bkey_object *o = &it->obj->id;
        rcl_object ro = {o->bucket, o->key, o->version, o->size};
        int rc = rcl_read(c->cl, &ro, it->block * c->bs + it->in_off, it->in_len, it->dst, NULL,
                          rc_item_node_done, it);
        if (rc == 0)
            return;
    }
    rc_item_to_s3(it, -EHOSTDOWN, NULL);
}

/* The next item to start, under qlock: demand first, read-ahead while it
 * holds at most half of max_inflight. */
static rc_item *rc_next_item_locked(rc_client *c)
{
    rc_item *it = NULL;
    if (c->inflight >= c->cfg.max_inflight)
        return NULL;
    if (c->dq_head) {
        it = c->dq_head;
        c->dq_head = it->next;
        if (!c->dq_head)
            c->dq_tail = NULL;
    } else if (c->rq_head && c->ra_inflight < c->cfg.max_inflight / 2) {
        it = c->rq_head;
        c->rq_head = it->next;
        if (!c->rq_head)
            c->rq_tail = NULL;
        c->ra_inflight++;
    }
    return it;
}

void rc__io_pump(rc_client *c)
{
    c->pumping = true;
    for (;;) {
        pthread_mutex_lock(&c->qlock);
        rc_item *it = rc_next_item_locked(c);
        pthread_mutex_unlock(&c->qlock);
        if (!it)
            break;
        it->next = NULL;
        c->inflight++;
        if (atomic_load(&c->stop))
            rc__item_finish(it, -ECANCELED, "the client is shutting down");
        else
            rc_item_start(it);
    }
    c->pumping = false;
}

void rc__io_wake(int fd, short what, void *arg)
{
    (void)what;
    rc_client *c = arg;
    uint64_t v;
    ssize_t n = read(fd, &v, sizeof(v));
    (void)n;
    for (;;) {
        pthread_mutex_lock(&c->qlock);
        rc_req *req = c->cq_head;
        if (req) {
            c->cq_head = req->next;
            if (!c->cq_head)
                c->cq_tail = NULL;
        }
        bool stop = atomic_load(&c->stop);
        pthread_mutex_unlock(&c->qlock);
        if (!req) {
            if (stop && c->inflight == 0)
                event_base_loopbreak(c->base);
            break;
        }
        rc__req_start(req);
    }
    rc__io_pump(c);
}

void *rc__io_main(void *arg)
{
    rc_client *c = arg;
    event_base_loop(c->base, 0);
    /* stop: nothing is in flight any more (the loop ends only then) */
    rcl_destroy(&c->cl);
    c->connected = false;
    s3_client_destroy(&c->s3);
    event_base_loop(c->base, EVLOOP_NONBLOCK);
    pthread_mutex_lock(&c->qlock);
    rc_item *d = c->dq_head, *r = c->rq_head;
    rc_req *k = c->cq_head;
    c->dq_head = c->dq_tail = c->rq_head = c->rq_tail = NULL;
    c->cq_head = c->cq_tail = NULL;
    pthread_mutex_unlock(&c->qlock);
    c->pumping = true; /* finishing must not start anything */
    while (d) {
        rc_item *n = d->next;
        c->inflight++;
        rc__item_finish(d, -ECANCELED, "the client is shutting down");
        d = n;
    }
    while (r) {
        rc_item *n = r->next;
        c->inflight++;
        c->ra_inflight++;
        rc__item_finish(r, -ECANCELED, "the client is shutting down");
        r = n;
    }
    while (k) {
        rc_req *n = k->next;
        rc__req_finish(k, -ECANCELED, "the client is shutting down");
        k = n;
    }
    return NULL;
}
