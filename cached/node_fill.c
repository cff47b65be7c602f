/* SPDX-License-Identifier: Apache-2.0
 *
 * node_fill.c: the fill table of node_fill.h. A hash table of fills under one
 * mutex; a fill holds references from the table, its S3 GET and its store
 * write, and is freed when the last one goes. Its waiters are a list; each
 * is told once, by a message to its worker's mailbox, when the fill's data is
 * whole (a reference to its buffer), when it fails (the code and sentence of
 * the failure) or when its deadline passes.
 */
#include "node_fill.h"
#include "node_int.h"

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node_fills {
    node *n;
    pthread_mutex_t lock;
    node_fill **table;
    size_t buckets;
    size_t active;
};

typedef struct node_waiter node_waiter;
struct node_waiter {
    node_waiter *next;
    unsigned worker;
    uint64_t serial; /* the waiting request's, on its worker */
    uint32_t off, len;
    bool creator; /* this request started the fill */
};

enum { FILL_RUNNING, FILL_DONE, FILL_FAILED };

struct node_fill {
    node_fill *hnext;
    bkey key;
    int ref; /* table + in-flight S3 + write; under the lock */
    int state;
    bool in_table;
    node *n;
    node_worker *owner;
    node_buf *buf;
    uint32_t block_len;
    node_waiter *waiters;
    struct event *deadline;
    bkey_object obj; /* a copy, for the S3 GET and the store write */
    uint64_t index;
    uint32_t got;     /* bytes S3 delivered into buf */
    bool had_waiters; /* a GET asked (not only a WARM) */
    bool finished;    /* its part of the S3 GET is over (done or failed) */
    /* a run: one S3 GET for this block and the ones after it. The first fill
     * (the GET's) links the others in block order; rx is the one receiving
     * S3's bytes now. Each fill of a run is its own table entry, so each
     * block is still filled once however many ask. */
    node_fill *run_next;
    node_fill *rx;
    uint64_t run_len; /* the first fill: the bytes of the whole run */
    int rcp_code;
    char message[2048];
};

static size_t fill_bucket(const node_fills *t, bkey k)
{
    return (size_t)(k.lo ^ k.hi) % t->buckets;
}

static void fill_unref_locked(node_fill *f)
{
    if (--f->ref > 0)
        return;
    node_buf_unref(f->buf);
    if (f->deadline)
        event_free(f->deadline);
    node_waiter *w = f->waiters;
    while (w) {
        node_waiter *nx = w->next;
        free(w);
        w = nx;
    }
    free(f);
}

/* Take f out of the table; true when it was there (its reference is then the
 * caller's to drop). */
static bool fill_remove_locked(node_fills *t, node_fill *f)
{
    if (!f->in_table)
        return false;
    node_fill **pp = &t->table[fill_bucket(t, f->key)];
    while (*pp && *pp != f)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = f->hnext;
    f->in_table = false;
    t->active--;
    return true;
}

/* Tell every waiter (under the lock). */
static void fill_notify_locked(node_fill *f)
{
    node *n = f->n;
    node_waiter *w = f->waiters;
    f->waiters = NULL;
    while (w) {
        node_waiter *nx = w->next;
        node_msg *m = calloc(1, sizeof(*m));
        if (m) {
            m->req_serial = w->serial;
            if (f->state == FILL_DONE) {
                node_buf_ref(f->buf);
                m->buf = f->buf;
                m->off = w->off;
                m->len = w->len;
                m->source = w->creator ? RCP_SRC_S3 : RCP_SRC_FILL_WAIT;
            } else {
                m->rcp_code = f->rcp_code;
                snprintf(m->message, sizeof(m->message), "%.255s", f->message);
            }
            node__post(&n->workers[w->worker], m);
        }
        free(w);
        w = nx;
    }
}

static void fill_stored(void *arg, int rc)
{
    node_fill *f = arg;
    node *n = f->n;
    if (rc < 0)
        node_log(NODE_LOG_WARN, "msg=\"block not stored\" bucket=%s key=\"%s\" block=%llu err=%d",
                 f->obj.bucket, f->obj.key, (unsigned long long)f->index, rc);
    pthread_mutex_lock(&n->fills->lock);
    /* indexed (or failed): later requests use the store. Drop the table's
     * reference (if still there) and the write's in one step. */
    if (fill_remove_locked(n->fills, f))
        f->ref--; /* the write's reference keeps f alive here */
    fill_unref_locked(f);
    pthread_mutex_unlock(&n->fills->lock);
}

/* f's part of the S3 GET is over: its bytes are whole (err->code 0) or it
 * failed; its waiters are told and a whole block is stored. The GET's
 * reference to f is not dropped here (fill_got does, for the run). */
static void fill_finish(node_fill *f, const s3_error *err)
{
    node *n = f->n;
    node_worker *w = f->owner;
    f->finished = true;
    if (err->code != 0 && err->code != -ECANCELED)
        node__count(w, err->code == -ESTALE ? NM_VERSION_CHANGED : NM_S3_ERRORS, 1);
    pthread_mutex_lock(&n->fills->lock);
    bool store = false;
    if (f->state == FILL_RUNNING) {
        if (err->code == 0) {
            f->state = FILL_DONE;
            store = true;
        } else {
            f->state = FILL_FAILED;
            f->rcp_code = err->code == -ESTALE      ? RCP_E_VERSION_CHANGED
                          : err->code == -ENOENT    ? RCP_E_NOT_FOUND
                          : err->code == -ECANCELED ? RCP_E_BUSY
                                                    : RCP_E_UPSTREAM;
            if (f->rcp_code == RCP_E_UPSTREAM)
                node__upstream_message(n, err->message, f->message, sizeof(f->message));
            else
                snprintf(f->message, sizeof(f->message), "%s", err->message);
            /* out of the table: the next request tries again. The S3 GET's
             * reference (dropped by fill_got) keeps f alive until then. */
            if (fill_remove_locked(n->fills, f))
                f->ref--;
        }
        if (f->deadline)
            evtimer_del(f->deadline);
        fill_notify_locked(f);
    } else if (err->code == 0) {
        store = true; /* timed out for its waiters, but the data is good: keep it */
    }
    if (store)
        f->ref++; /* the write's */
    pthread_mutex_unlock(&n->fills->lock);

    if (store && w->bs) {
        bkey_id id;
        bkey_object_block(&f->obj, f->index, &id);
        if (bs_write(w->bs, &id, f->buf->data, f->block_len, fill_stored, f) < 0)
            fill_stored(f, -EIO);
    } else if (store) {
        fill_stored(f, -ESHUTDOWN);
    }
}

/* The S3 GET of a run ended: the fills whose bytes did not all come fail
 * with its error (or as another version, when S3 answered short). */
static void fill_got(const s3_error *err, const s3_get_result *res, void *arg)
{
    node_fill *lead = arg;
    node *n = lead->n;
    s3_error e = *err;
    if (err->code == 0 && res->bytes != lead->run_len) {
        /* the object is not the size the client pinned: another version */
        e.code = -ESTALE;
        snprintf(e.message, sizeof(e.message),
                 "s3://%s/%.300s is %llu bytes, not the %llu the request was pinned to",
                 lead->obj.bucket, lead->obj.key, (unsigned long long)res->object_size,
                 (unsigned long long)lead->obj.size);
    } else if (err->code && err->http_status == 416) {
        /* a range inside the pinned size is outside the object now: it is
         * another, shorter version (servers that ignore If-Match say so) */
        e.code = -ESTALE;
        e.http_status = 412;
        snprintf(e.message, sizeof(e.message),
                 "s3://%s/%.300s is shorter than the %llu bytes the request was pinned to "
                 "(it changed)",
                 lead->obj.bucket, lead->obj.key, (unsigned long long)lead->obj.size);
    }
    if (e.code == 0)
        node__count(lead->owner, NM_S3_GET_BYTES, res->bytes);
    for (node_fill *f = lead; f; f = f->run_next)
        if (!f->finished)
            fill_finish(f, &e);
    pthread_mutex_lock(&n->fills->lock);
    for (node_fill *f = lead, *next; f; f = next) {
        next = f->run_next;
        fill_unref_locked(f); /* the S3 GET's reference */
    }
    pthread_mutex_unlock(&n->fills->lock);
}

static void fill_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    node_fill *f = arg;
    node *n = f->n;
    pthread_mutex_lock(&n->fills->lock);
    if (f->state == FILL_RUNNING) {
        f->state = FILL_FAILED;
        f->rcp_code = RCP_E_TIMEOUT;
        snprintf(f->message, sizeof(f->message),
                 "fill of s3://%s/%s block %llu from S3 took longer than %lld ms", f->obj.bucket,
                 f->obj.key, (unsigned long long)f->index, (long long)n->conf.fill_deadline_ms);
        fill_notify_locked(f);
        node__count(f->owner, NM_FILL_TIMEOUTS, 1);
        /* the S3 GET still holds a reference: f outlives this */
        if (fill_remove_locked(n->fills, f))
            f->ref--;
    }
    pthread_mutex_unlock(&n->fills->lock);
}

/* Nobody waits for f or any fill after it in its run (under the lock). */
static bool run_abandoned_locked(const node_fill *f)
{
    if (f->state == FILL_RUNNING && !(f->had_waiters && !f->waiters))
        return false;
    for (const node_fill *g = f->run_next; g; g = g->run_next)
        if (g->state == FILL_RUNNING && (g->waiters || !g->had_waiters))
            return false;
    return true;
}

/* S3 delivers a run's bytes here (the S3 client's thread is the owner's), in
 * order: each fill of the run takes its block's, and is finished as soon as
 * they are whole, not at the end of the run. A run whose every remaining
 * fill timed out, or lost every waiter, stops its S3 request at the next
 * bytes instead of downloading blocks nobody waits for. */
static int fill_data(const void *data, size_t len, void *arg)
{
    node_fill *lead = arg;
    node *n = lead->n;
    const uint8_t *p = data;
    while (len > 0) {
        node_fill *f = lead->rx;
        if (!f)
            return -EMSGSIZE;
        pthread_mutex_lock(&n->fills->lock);
        bool abandoned = run_abandoned_locked(f);
        /* out of the table at once: a request that comes now starts a fill
         * of its own instead of joining one whose S3 GET is being stopped
         * (it would get that GET's error). The GET's reference keeps them. */
        for (node_fill *g = f; abandoned && g; g = g->run_next)
            if (fill_remove_locked(n->fills, g))
                g->ref--;
        pthread_mutex_unlock(&n->fills->lock);
        if (abandoned)
            return -ECANCELED;
        size_t k = f->block_len - f->got < len ? f->block_len - f->got : len;
        memcpy(f->buf->data + f->got, p, k);
        f->got += (uint32_t)k;
        p += k;
        len -= k;
        if (f->got == f->block_len) {
            lead->rx = f->run_next;
            fill_finish(f, &(s3_error){0});
        }
    }
    return 0;
}

size_t node_fill_active(node_fills *t)
{
    pthread_mutex_lock(&t->lock);
    size_t k = t->active;
    pthread_mutex_unlock(&t->lock);
    return k;
}

/* A new running fill of block id (block_len bytes, table key k), in the table
 * with no waiter, its references the table's and the S3 GET's; NULL when out
 * of memory. Under the lock. */
static node_fill *fill_new_locked(node_worker *w, const bkey_id *id, uint32_t block_len, bkey k)
{
    node *n = w->n;
    node_fills *t = n->fills;
    node_fill *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->n = n;
    f->owner = w;
    f->key = k;
    f->block_len = block_len;
    f->obj.size = id->object_size;
    f->index = id->index;
    f->buf = node_buf_new(block_len);
    f->deadline = evtimer_new(w->base, fill_deadline_cb, f);
    if (!f->buf || !f->deadline ||
        bkey_field_set(f->obj.tenant, sizeof(f->obj.tenant), id->tenant, id->tenant_len) ||
        bkey_field_set(f->obj.bucket, sizeof(f->obj.bucket), id->bucket, id->bucket_len) ||
        bkey_field_set(f->obj.key, sizeof(f->obj.key), id->key, id->key_len) ||
        bkey_field_set(f->obj.version, sizeof(f->obj.version), id->version, id->version_len)) {
        node_buf_unref(f->buf);
        if (f->deadline)
            event_free(f->deadline);
        free(f);
        return NULL;
    }
    f->ref = 2; /* the table and the S3 GET */
    f->in_table = true;
    size_t b = fill_bucket(t, k);
    f->hnext = t->table[b];
    t->table[b] = f;
    t->active++;
    return f;
}

int node_fill_join(node_worker *w, const node_fill_args *a, node_fill **joined)
{
    node *n = w->n;
    bkey k = bkey_of(a->id);
    node_waiter *wt = NULL;
    if (a->waiter) {
        wt = calloc(1, sizeof(*wt));
        if (!wt)
            return -ENOMEM;
        wt->worker = w->idx;
        wt->serial = a->waiter;
        wt->off = a->off;
        wt->len = a->len;
    }
    pthread_mutex_lock(&n->fills->lock);
    node_fills *t = n->fills;
    node_fill *f = t->table[fill_bucket(t, k)];
    while (f && !bkey_equal(f->key, k))
        f = f->hnext;
    if (f) {
        if (f->state == FILL_DONE) {
            /* the data is here, the write is not done: serve from the buffer */
            if (wt) {
                node_msg *m = calloc(1, sizeof(*m));
                if (m) {
                    node_buf_ref(f->buf);
                    m->buf = f->buf;
                    m->req_serial = wt->serial;
                    m->off = wt->off;
                    m->len = wt->len;
                    m->source = RCP_SRC_FILL_WAIT;
                    node__post(w, m);
                }
                free(wt);
                node__count(w, NM_FILL_FROM_BUFFER, 1);
            }
            pthread_mutex_unlock(&n->fills->lock);
            *joined = NULL;
            return 0;
        }
        if (wt) {
            wt->next = f->waiters;
            f->waiters = wt;
            node__count(w, NM_FILL_WAITS, 1);
        }
        pthread_mutex_unlock(&n->fills->lock);
        *joined = wt ? f : NULL;
        return 0;
    }
    /* No fill runs. The caller's store lookup missed, but a fill may have
     * finished (written and indexed) since: then the store has it, and a new
     * S3 GET would be a second one for the block. */
    if (!a->force && bs_contains(n->store, a->id)) {
        pthread_mutex_unlock(&n->fills->lock);
        free(wt);
        return -EAGAIN;
    }
    if (t->active >= (size_t)n->conf.max_fills) {
        pthread_mutex_unlock(&n->fills->lock);
        free(wt);
        return -EBUSY;
    }
    /* a new fill, run on this worker */
    f = fill_new_locked(w, a->id, a->block_len, k);
    if (!f) {
        pthread_mutex_unlock(&n->fills->lock);
        free(wt);
        return -ENOMEM;
    }
    if (wt)
        wt->creator = true;
    f->waiters = wt;
    f->had_waiters = wt != NULL;
    f->rx = f;
    f->run_len = f->block_len;
    /* the blocks after it the caller will ask for next, in the same S3 GET
     * while none of them runs or is stored */
    uint64_t bsz = (uint64_t)n->conf.block_size;
    node_fill *tail = f;
    bkey_id nid = *a->id;
    for (uint32_t i = 1; i < a->run && t->active < (size_t)n->conf.max_fills; i++) {
        nid.index = a->id->index + i;
        uint64_t blen = bkey_block_len(nid.object_size, bsz, nid.index);
        if (blen == 0)
            break;
        bkey nk = bkey_of(&nid);
        node_fill *g = t->table[fill_bucket(t, nk)];
        while (g && !bkey_equal(g->key, nk))
            g = g->hnext;
        if (g || bs_contains(n->store, &nid))
            break;
        g = fill_new_locked(w, &nid, (uint32_t)blen, nk);
        if (!g)
            break;
        tail->run_next = g;
        tail = g;
        f->run_len += blen;
    }
    pthread_mutex_unlock(&n->fills->lock);

    uint64_t start = a->id->index * bsz;
    s3_get_args ga = {.bucket = f->obj.bucket,
                      .key = f->obj.key,
                      .offset = start,
                      .length = f->run_len,
                      .if_match = f->obj.version[0] ? f->obj.version : NULL,
                      .on_data = fill_data,
                      .data_arg = f};
    struct timeval tv = {n->conf.fill_deadline_ms / 1000, (n->conf.fill_deadline_ms % 1000) * 1000};
    for (node_fill *g = f; g; g = g->run_next) {
        node__count(w, NM_FILLS, 1);
        evtimer_add(g->deadline, &tv);
    }
    int rc = s3_get(node__s3_for(w, a->tenant), &ga, fill_got, f);
    if (rc < 0) {
        s3_error e = {0};
        e.code = rc;
        snprintf(e.message, sizeof(e.message), "cannot start the S3 GET for s3://%s/%.300s: %s",
                 f->obj.bucket, f->obj.key, strerror(-rc));
        /* fill_got runs the failure path: waiters told, table entries removed */
        s3_get_result res = {0};
        fill_got(&e, &res, f);
    }
    *joined = wt ? f : NULL;
    return 0;
}

void node_fill_leave(node_fills *t, node_fill *f, unsigned worker, uint64_t waiter)
{
    pthread_mutex_lock(&t->lock);
    /* f may already have notified (its waiters list emptied): then nothing to do */
    node_waiter **pp = &f->waiters;
    while (*pp && !((*pp)->worker == worker && (*pp)->serial == waiter))
        pp = &(*pp)->next;
    if (*pp) {
        node_waiter *w = *pp;
        *pp = w->next;
        free(w);
    }
    pthread_mutex_unlock(&t->lock);
}

int node_fills_setup(node_fills **out, node *n)
{
    node_fills *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->n = n;
    t->buckets = 4096;
    t->table = calloc(t->buckets, sizeof(*t->table));
    if (!t->table) {
        free(t);
        return -ENOMEM;
    }
    pthread_mutex_init(&t->lock, NULL);
    *out = t;
    return 0;
}

void node_fills_teardown(node_fills **tp)
{
    if (!tp || !*tp)
        return;
    node_fills *t = *tp;
    /* fills still in the table (a fill that never completed) */
    for (size_t b = 0; b < t->buckets; b++) {
        node_fill *f = t->table[b];
        while (f) {
            node_fill *nx = f->hnext;
            f->ref = 1;
            f->in_table = false;
            fill_unref_locked(f);
            f = nx;
        }
    }
    free(t->table);
    pthread_mutex_destroy(&t->lock);
    free(t);
    *tp = NULL;
}
