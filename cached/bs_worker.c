/* SPDX-License-Identifier: Apache-2.0
 *
 * bs_worker.c: a worker is one event loop's view of the store. It owns an
 * eventfd registered with the loop as a persistent read event (the io_uring's
 * completion eventfd, also written by I/O pool threads and by the evictor when
 * a parked write may retry) and a manually activated "kick" event that flushes
 * prepared I/O once per loop turn and runs completions that need no I/O (a
 * miss, a RAM hit), so no callback ever runs inside bs_read() or bs_write().
 *
 * The read and write state machines live here; the backends (bs_uring.c,
 * bs_threads.c) only move bytes.
 */
#include "blockstore_int.h"

#include <assert.h>
#include <errno.h>
#include <event2/event.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

static void process(bs_worker *w);

static void on_efd(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    uint64_t v;
    /* Non-blocking; EAGAIN just means someone else drained it. */
    if (read(fd, &v, sizeof(v)) < 0) {
    }
    process(arg);
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    bs_worker *w = arg;
    w->kicked = false;
    process(w);
}

static void kick(bs_worker *w)
{
    if (!w->kicked && !w->detaching) {
        w->kicked = true;
        event_active(w->ev_kick, 0, 0);
    }
}

void bs__inbox_push(bs_worker *w, bs_op *op)
{
    pthread_mutex_lock(&w->inbox_lock);
    op->next = w->inbox;
    w->inbox = op;
    pthread_mutex_unlock(&w->inbox_lock);
    uint64_t one = 1;
    if (write(w->efd, &one, sizeof(one)) < 0) {
        /* The counter cannot overflow in practice; the loop reads it. */
    }
}

static bs_op *op_get(bs_worker *w)
{
    bs_op *op = w->free_ops;
    if (op)
        w->free_ops = op->next;
    else if (!(op = malloc(sizeof(*op))))
        return NULL;
    memset(op, 0, sizeof(*op));
    op->w = w;
    return op;
}

static void op_put(bs_worker *w, bs_op *op)
{
    op->next = w->free_ops;
    w->free_ops = op;
}

static void defer(bs_worker *w, bs_op *op, int rc)
{
    op->early = rc;
    op->next = NULL;
    if (w->deferred_tail)
        w->deferred_tail->next = op;
    else
        w->deferred = op;
    w->deferred_tail = op;
    kick(w);
}

/* ---- completion ----------------------------------------------------------- */

static void finish_read(bs_worker *w, bs_op *op, int rc)
{
    bs_read_fn fn = op->rdone;
    void *arg = op->arg;
    bs_buf *buf = op->buf;
    op->buf = NULL;
    if (rc < 0)
        bs_buf_unref(&buf);
    op_put(w, op);
    fn(arg, rc, rc >= 0 ? buf : NULL);
}

static void finish_write(bs_worker *w, bs_op *op, int rc)
{
    bs_write_fn fn = op->wdone;
    void *arg = op->arg;
    bs_buf_unref(&op->buf);
    op_put(w, op);
    fn(arg, rc);
}

/* Ends an op that did no I/O, or whose I/O was never started. */
static void cancel_op(bs_worker *w, bs_op *op, int rc)
{
    bs_store *s = w->s;
    if (op->page)
        pc_fill_complete(s->ram, op->page, rc);
    op->page = NULL;
    if (op->kind == BS_OP_READ) {
        if (op->e) {
            bs__region_unread(s, op->e->region);
            bs__entry_unref(op->e);
            op->e = NULL;
        }
        finish_read(w, op, rc);
    } else {
        if (op->reserved)
            bs__write_done(s, op->e, false);
        bs__entry_unref(op->e);
        op->e = NULL;
        finish_write(w, op, rc);
    }
}

static void read_done(bs_worker *w, bs_op *op, int res)
{
    bs_store *s = w->s;
    bs_entry *e = op->e;
    int rc;
    if (res != (int)op->io_len) {
        bs__inc(&w->st.io_errors, 1);
        bs__inc(&w->st.ssd_misses, 1);
        rc = -EIO;
    } else {
        rc = (int)op->len;
        uint32_t c0 = op->io_base / BS_CHUNK_SIZE;
        uint32_t c1 = (uint32_t)((op->off + op->len - 1) / BS_CHUNK_SIZE);
        for (uint32_t i = c0; i <= c1; i++) {
            uint32_t clen = e->len - i * BS_CHUNK_SIZE;
            if (clen > BS_CHUNK_SIZE)
                clen = BS_CHUNK_SIZE;
            const uint8_t *p = op->iomem + ((size_t)i * BS_CHUNK_SIZE - op->io_base);
            if (bs__chunk_sum(e->key, i, p, clen) != e->cs[i]) {
                rc = -EBADMSG;
                break;
            }
        }
        if (rc == -EBADMSG) {
            /* Corrupt bytes are never returned; the block is dropped so the
             * next ask is a plain miss that refills it. */
            bs__inc(&w->st.checksum_failures, 1);
            bs__inc(&w->st.ssd_misses, 1);
            bs__drop(s, e);
        } else {
            bs__inc(&w->st.ssd_hits, 1);
        }
    }
    if (op->page) {
        pc_fill_complete(s->ram, op->page, rc >= 0 ? (ssize_t)e->len : rc);
        op->page = NULL;
    }
    bs__region_unread(s, e->region);
    bs__entry_unref(e);
    op->e = NULL;
    if (rc >= 0) {
        op->buf->data = op->iomem + (op->off - op->io_base);
        op->buf->len = op->len;
    }
    finish_read(w, op, rc);
}

static void write_done(bs_worker *w, bs_op *op, int res)
{
    bs_store *s = w->s;
    bs_entry *e = op->e;
    bool ok = res == (int)op->io_len;
    op->e = NULL;
    op->reserved = false;
    bs__write_done(s, e, ok); /* ok: the map took our reference */
    if (!ok) {
        bs__entry_unref(e);
        bs__inc(&w->st.io_errors, 1);
        bs__inc(&w->st.write_errors, 1);
    } else {
        bs__inc(&w->st.writes, 1);
        bs__inc(&w->st.write_bytes, op->len);
    }
    if (op->page) {
        pc_fill_complete(s->ram, op->page, ok ? (ssize_t)op->len : -EIO);
        op->page = NULL;
    }
    finish_write(w, op, ok ? 0 : -EIO);
}

void bs__op_io_done(bs_worker *w, bs_op *op, int res)
{
    bs_store *s = w->s;
    atomic_fetch_sub_explicit(&w->st.inflight, 1, memory_order_relaxed);
    if (s->cfg.io_hook) {
        int h = s->cfg.io_hook(s->cfg.io_hook_ctx, op->kind == BS_OP_WRITE, op->e->region,
                               op->file_off, op->io_len);
        if (h < 0)
            res = h;
    }
    if (op->kind == BS_OP_READ)
        read_done(w, op, res);
    else
        write_done(w, op, res);
}

static void start_io(bs_worker *w, bs_op *op)
{
    atomic_fetch_add_explicit(&w->st.inflight, 1, memory_order_relaxed);
    bs__io_submit(w, op);
    kick(w);
}

static void submit_write(bs_worker *w, bs_op *op)
{
    op->reserved = true;
    op->file_off = bs__file_off(w->s, op->e->region, op->e->off);
    start_io(w, op);
}

void bs__op_retry(bs_worker *w, bs_op *op)
{
    op->retry = false;
    if (w->detaching) {
        cancel_op(w, op, -ECANCELED);
        return;
    }
    if (bs__alloc(w->s, op->io_len, op->e, op) == 0)
        submit_write(w, op);
}

/* ---- the loop ------------------------------------------------------------- */

static void drain_inbox(bs_worker *w)
{
    pthread_mutex_lock(&w->inbox_lock);
    bs_op *list = w->inbox;
    w->inbox = NULL;
    pthread_mutex_unlock(&w->inbox_lock);
    /* Pushed LIFO; complete in arrival order. */
    bs_op *rev = NULL;
    while (list) {
        bs_op *n = list->next;
        list->next = rev;
        rev = list;
        list = n;
    }
    while (rev) {
        bs_op *op = rev;
        rev = op->next;
        op->next = NULL;
        if (op->retry) {
            bs__op_retry(w, op);
        } else {
            w->tp_out--;
            bs__op_io_done(w, op, op->res);
        }
    }
}

static void run_deferred(bs_worker *w)
{
    bs_op *list = w->deferred;
    w->deferred = w->deferred_tail = NULL;
    while (list) {
        bs_op *op = list;
        list = op->next;
        int rc = op->early;
        if (op->kind == BS_OP_READ && rc >= 0)
            finish_read(w, op, rc);
        else
            cancel_op(w, op, rc);
    }
}

void bs__op_cancel(bs_worker *w, bs_op *op, int rc)
{
    atomic_fetch_sub_explicit(&w->st.inflight, 1, memory_order_relaxed);
    cancel_op(w, op, rc);
}

void bs__io_poll(bs_worker *w)
{
    if (w->uring)
        bs__uring_reap(w);
    drain_inbox(w);
}

void bs__io_flush(bs_worker *w)
{
    if (w->uring)
        bs__uring_flush(w);
    else
        bs__pool_flush(w);
}

void bs__io_submit(bs_worker *w, bs_op *op)
{
    if (w->uring) {
        bs__uring_submit(w, op);
    } else {
        op->next = NULL;
        if (w->tp_tail)
            w->tp_tail->next = op;
        else
            w->tp_head = op;
        w->tp_tail = op;
    }
}

static void process(bs_worker *w)
{
    bs__io_flush(w);
    bs__io_poll(w);
    run_deferred(w);
    /* Completions above may have prepared more I/O: submit it this turn. */
    bs__io_flush(w);
}

/* ---- reads and writes ----------------------------------------------------- */

int bs_read(bs_worker *w, const bkey_id *id, uint64_t off, uint64_t len, bs_read_fn done, void *arg)
{
    if (!w || !id || !done)
        return -EINVAL;
    bs_store *s = w->s;
    if (w->detaching)
        return -ESHUTDOWN;
    uint64_t blen = bkey_block_len(id->object_size, s->block_size, id->index);
    if (blen == 0 || off >= blen)
        return -EINVAL;
    if (len == 0)
        len = blen - off;
    if (len > blen - off)
        return -EINVAL;
    uint8_t idb[BS_MAX_IDENTITY];
    int idlen = bs__id_encode(id, idb, sizeof(idb));
    if (idlen < 0)
        return idlen;
    bs_op *op = op_get(w);
    if (!op)
        return -ENOMEM;
    op->kind = BS_OP_READ;
    op->rdone = done;
    op->arg = arg;
    op->off = off;
    op->len = len;

    bkey k = bkey_of(id);
    bs_entry *e = bs__map_get(s, k, idb, (size_t)idlen, true);
    if (!e) {
        if (s->ram)
            bs__inc(&w->st.ram_misses, 1);
        bs__inc(&w->st.ssd_misses, 1);
        defer(w, op, -ENOENT);
        return 0;
    }
    op->e = e;
    atomic_fetch_add_explicit(&e->hits, 1, memory_order_relaxed);
    atomic_store_explicit(&s->regions[e->region].last_hit,
                          atomic_fetch_add_explicit(&s->clock, 1, memory_order_relaxed) + 1,
                          memory_order_relaxed);

    if (s->ram) {
        pc_key pk = {k.hi, k.lo};
        pc_page *pg = NULL;
        int r = -1;
        bool whole = off == 0 && len == e->len;
        /* A partial read fills nothing: asking for a page would evict one. */
        if (whole || pc_contains(s->ram, &pk))
            r = pc_fetch(s->ram, &pk, PC_FETCH_NOWAIT, &pg);
        if (r == PC_HIT && pc_page_len(pg) == e->len) {
            bs_buf *b = bs__buf_page(s, pg);
            if (b) {
                b->data = (const uint8_t *)pc_page_data(pg) + off;
                b->len = len;
                op->buf = b;
                bs__inc(&w->st.ram_hits, 1);
                bs__region_unread(s, e->region);
                bs__entry_unref(e);
                op->e = NULL;
                defer(w, op, (int)len);
                return 0;
            }
        }
        if (r == PC_FILL && whole) {
            bs__ram_fresh(s, pg);
            op->page = pg;
        } else if (pg) {
            pc_release(s->ram, &pg);
        }
        bs__inc(&w->st.ram_misses, 1);
    }

    /* Whole 64 KiB chunks, so each can be verified; a short last block is
     * padded on disk up to BS_ALIGN. */
    uint32_t c0 = (uint32_t)(off / BS_CHUNK_SIZE);
    uint32_t c1 = (uint32_t)((off + len - 1) / BS_CHUNK_SIZE);
    uint64_t io_end = (uint64_t)(c1 + 1) * BS_CHUNK_SIZE;
    uint64_t padded = bs__round_up(e->len, BS_ALIGN);
    if (io_end > padded)
        io_end = padded;
    op->io_base = c0 * BS_CHUNK_SIZE;
    op->io_len = (uint32_t)(io_end - op->io_base);
    op->file_off = bs__file_off(s, e->region, e->off) + op->io_base;
    op->buf = op->page ? bs__buf_page(s, op->page) : bs__buf_get(s);
    if (!op->buf) {
        if (op->page)
            pc_fill_complete(s->ram, op->page, -ENOMEM);
        pc_release(s->ram, &op->page);
        bs__region_unread(s, e->region);
        bs__entry_unref(e);
        op_put(w, op);
        return -ENOMEM;
    }
    op->iomem = op->page ? pc_page_data(op->page) : op->buf->mem;
    /* The buffer now owns the page's pin; op->page only marks the fill. */
    start_io(w, op);
    return 0;
}

int bs_write(bs_worker *w, const bkey_id *id, const void *data, size_t len, bs_write_fn done,
             void *arg)
{
    if (!w || !id || !done || !data)
        return -EINVAL;
    bs_store *s = w->s;
    if (w->detaching)
        return -ESHUTDOWN;
    if (len == 0 || len != bkey_block_len(id->object_size, s->block_size, id->index))
        return -EINVAL;
    uint8_t idb[BS_MAX_IDENTITY];
    int idlen = bs__id_encode(id, idb, sizeof(idb));
    if (idlen < 0)
        return idlen;
    bkey k = bkey_of(id);
    bs_entry *e = bs__entry_new(k, idb, (size_t)idlen, (uint32_t)len);
    bs_op *op = e ? op_get(w) : NULL;
    if (!op) {
        free(e);
        return -ENOMEM;
    }
    op->kind = BS_OP_WRITE;
    op->wdone = done;
    op->arg = arg;
    op->e = e;
    op->len = len;
    op->io_len = (uint32_t)bs__round_up(len, BS_ALIGN);

    if (s->ram) {
        /* The written bytes enter the RAM tier (S3-FIFO's small queue) by
         * being written from a page: no second copy. */
        pc_key pk = {k.hi, k.lo};
        pc_page *pg = NULL;
        if (pc_fetch(s->ram, &pk, PC_FETCH_NOWAIT, &pg) == PC_FILL) {
            bs__ram_fresh(s, pg);
            op->page = pg;
        } else
            pc_release(s->ram, &pg);
    }
    op->buf = op->page ? bs__buf_page(s, op->page) : bs__buf_get(s);
    if (!op->buf) {
        if (op->page)
            pc_fill_complete(s->ram, op->page, -ENOMEM);
        pc_release(s->ram, &op->page);
        op_put(w, op);
        free(e);
        return -ENOMEM;
    }
    op->iomem = op->page ? pc_page_data(op->page) : op->buf->mem;
    memcpy(op->iomem, data, len);
    memset(op->iomem + len, 0, op->io_len - len);
    for (uint32_t i = 0; i < e->ncs; i++) {
        size_t clen = len - (size_t)i * BS_CHUNK_SIZE;
        if (clen > BS_CHUNK_SIZE)
            clen = BS_CHUNK_SIZE;
        e->cs[i] = bs__chunk_sum(k, i, op->iomem + (size_t)i * BS_CHUNK_SIZE, clen);
    }
    if (bs__alloc(s, op->io_len, e, op) == 0)
        submit_write(w, op);
    /* else parked: it comes back through the inbox (bs__op_retry) */
    return 0;
}

/* ---- attach and detach ---------------------------------------------------- */

int bs_worker_attach(bs_store *s, struct event_base *base, bs_worker **out)
{
    if (!s || !base || !out)
        return -EINVAL;
    *out = NULL;
    bs_worker *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->s = s;
    w->base = base;
    w->uring = s->uring;
    pthread_mutex_init(&w->inbox_lock, NULL);
    w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    int rc = w->efd < 0 ? -errno : 0;
    if (rc == 0 && w->uring)
        rc = bs__uring_init(w);
    if (rc == 0) {
        w->ev_efd = event_new(base, w->efd, EV_READ | EV_PERSIST, on_efd, w);
        w->ev_kick = event_new(base, -1, 0, on_kick, w);
        if (!w->ev_efd || !w->ev_kick || event_add(w->ev_efd, NULL) != 0)
            rc = -ENOMEM;
    }
    if (rc < 0) {
        if (w->ev_efd)
            event_free(w->ev_efd);
        if (w->ev_kick)
            event_free(w->ev_kick);
        if (w->uring && w->cq_cap)
            bs__uring_deinit(w);
        if (w->efd >= 0)
            close(w->efd);
        pthread_mutex_destroy(&w->inbox_lock);
        free(w);
        return rc;
    }
    pthread_mutex_lock(&s->workers_lock);
    w->next = s->workers;
    s->workers = w;
    pthread_mutex_unlock(&s->workers_lock);
    *out = w;
    return 0;
}

static void add_stats(bs_wstats *to, bs_wstats *from)
{
    bs__inc(&to->ram_hits, atomic_load(&from->ram_hits));
    bs__inc(&to->ram_misses, atomic_load(&from->ram_misses));
    bs__inc(&to->ssd_hits, atomic_load(&from->ssd_hits));
    bs__inc(&to->ssd_misses, atomic_load(&from->ssd_misses));
    bs__inc(&to->writes, atomic_load(&from->writes));
    bs__inc(&to->write_bytes, atomic_load(&from->write_bytes));
    bs__inc(&to->write_errors, atomic_load(&from->write_errors));
    bs__inc(&to->checksum_failures, atomic_load(&from->checksum_failures));
    bs__inc(&to->io_errors, atomic_load(&from->io_errors));
}

void bs_worker_detach(bs_worker **pw)
{
    bs_worker *w = pw ? *pw : NULL;
    if (!w)
        return;
    bs_store *s = w->s;
    w->detaching = true;
    /* Not started: parked writes, I/O not yet handed to the kernel/pool. */
    bs_op *parked = bs__waiters_take(s, w);
    while (parked) {
        bs_op *n = parked->next;
        parked->retry = false;
        cancel_op(w, parked, -ECANCELED);
        parked = n;
    }
    if (w->uring) {
        bs__uring_drain(w); /* waits for the kernel; completes with results */
    } else {
        bs_op *mine = w->tp_head;
        w->tp_head = w->tp_tail = NULL;
        bs_op *stolen = bs__pool_steal(s->pool, w);
        for (bs_op *op = mine, *n; op; op = n) {
            n = op->next;
            atomic_fetch_sub_explicit(&w->st.inflight, 1, memory_order_relaxed);
            cancel_op(w, op, -ECANCELED);
        }
        for (bs_op *op = stolen, *n; op; op = n) {
            n = op->next;
            w->tp_out--;
            atomic_fetch_sub_explicit(&w->st.inflight, 1, memory_order_relaxed);
            cancel_op(w, op, -ECANCELED);
        }
        while (w->tp_out > 0) {
            struct pollfd p = {.fd = w->efd, .events = POLLIN};
            poll(&p, 1, 100);
            uint64_t v;
            if (read(w->efd, &v, sizeof(v)) < 0) {
            }
            drain_inbox(w);
        }
    }
    drain_inbox(w);
    run_deferred(w);
    assert(!w->deferred && !w->inbox);

    event_free(w->ev_efd);
    event_free(w->ev_kick);
    if (w->uring)
        bs__uring_deinit(w);
    close(w->efd);
    pthread_mutex_destroy(&w->inbox_lock);
    while (w->free_ops) {
        bs_op *n = w->free_ops->next;
        free(w->free_ops);
        w->free_ops = n;
    }
    pthread_mutex_lock(&s->workers_lock);
    for (bs_worker **pp = &s->workers; *pp; pp = &(*pp)->next) {
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    }
    add_stats(&s->gone, &w->st);
    pthread_mutex_unlock(&s->workers_lock);
    free(w);
    *pw = NULL;
}

void bs__wstats_add(bs_wstats *to, bs_wstats *from)
{
    add_stats(to, from);
}
