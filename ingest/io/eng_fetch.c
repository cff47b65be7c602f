/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_fetch.c: the prefetcher (eng_fetch.h, "downloads ahead of the workers"):
 * download threads that fetch the work units after the ones the workers have
 * taken, in plan order, within a byte budget charged to the query's memory,
 * and hand the bytes to the worker that reaches the unit. It knows nothing of
 * formats: what a unit's job costs and how it is fetched are the caller's ops.
 *
 * Unit states, all under one mutex:
 *
 *   EMPTY --download claims--> FETCHING --done--> READY --ef_take--> TAKEN
 *     '----ef_take (no download started it)----------------------> OWN
 *
 * A download claims the first EMPTY unit at or after its cursor only when the
 * bytes held (in flight + ready) leave room for it, or when nothing is held;
 * a worker never waits for room, only for a unit already in flight, so the
 * budget cannot deadlock against units the workers have yet to reach.
 */
#include "eng_fetch.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define EF_MAX_THREADS 64
#define EF_POOL_MAX    16          /* buffers kept for reuse */
#define EF_BUF_ROUND   (64u << 10) /* sizes rounded up, so buffers fit more jobs */

typedef struct ef__pooled {
    uint8_t *buf;
    uint64_t cap;
} ef__pooled;

enum { EF_EMPTY = 0, EF_FETCHING, EF_READY, EF_TAKEN, EF_OWN };

#define EF_SHELF_MAX 64 /* buffers on a shelf */

struct ef_shelf {
    pthread_mutex_t mu;
    ef__pooled b[EF_SHELF_MAX];
    int n;
    uint64_t bytes, max_bytes;
};

int ef_shelf_create(ef_shelf **out, uint64_t max_bytes)
{
    *out = calloc(1, sizeof(**out));
    if (!*out)
        return -ENOMEM;
    pthread_mutex_init(&(*out)->mu, NULL);
    (*out)->max_bytes = max_bytes;
    return 0;
}

void ef_shelf_destroy(ef_shelf **ps)
{
    if (!ps || !*ps)
        return;
    ef_shelf *s = *ps;
    for (int i = 0; i < s->n; i++)
        munmap(s->b[i].buf, (size_t)s->b[i].cap);
    pthread_mutex_destroy(&s->mu);
    free(s);
    *ps = NULL;
}

uint64_t ef_shelf_bytes(ef_shelf *s)
{
    pthread_mutex_lock(&s->mu);
    uint64_t b = s->bytes;
    pthread_mutex_unlock(&s->mu);
    return b;
}

/* The smallest buffer of at least n bytes on the shelf, or NULL. */
static uint8_t *shelf_take(ef_shelf *s, uint64_t n, uint64_t *cap)
{
    pthread_mutex_lock(&s->mu);
    int best = -1;
    for (int i = 0; i < s->n; i++)
        if (s->b[i].cap >= n && (best < 0 || s->b[i].cap < s->b[best].cap))
            best = i;
    uint8_t *buf = NULL;
    if (best >= 0) {
        buf = s->b[best].buf;
        *cap = s->b[best].cap;
        s->bytes -= s->b[best].cap;
        s->b[best] = s->b[--s->n];
    }
    pthread_mutex_unlock(&s->mu);
    return buf;
}

/* Keeps buf when there is room, else unmaps it. */
static void shelf_put(ef_shelf *s, uint8_t *buf, uint64_t cap)
{
    if (s) {
        pthread_mutex_lock(&s->mu);
        bool room = s->n < EF_SHELF_MAX && s->bytes + cap <= s->max_bytes;
        if (room) {
            s->b[s->n++] = (ef__pooled){buf, cap};
            s->bytes += cap;
        }
        pthread_mutex_unlock(&s->mu);
        if (room)
            return;
    }
    munmap(buf, (size_t)cap);
}

struct ef {
    ef_shelf *shelf; /* spare buffers between prefetchers, or NULL */
    ef_ops ops;
    void *arg;
    eng_mem *mem;
    int n_units;
    uint8_t *state;
    ef_blob **blob;
    int cursor; /* every unit before it is claimed or not prefetched */
    int taken;  /* highest unit a worker has reached (-1: none) */
    int window; /* units ahead of it that may be fetched */
    uint64_t budget, held;
    uint64_t jobs, hits, peak;
    bool stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th[EF_MAX_THREADS];
    int n_th;
    ef__pooled pool[EF_POOL_MAX];
    int n_pool;
    uint64_t pool_bytes;
};

uint8_t *ef_buf_get(ef *p, uint64_t n, uint64_t *cap)
{
    *cap = 0;
    if (n > SIZE_MAX / 2)
        return NULL;
    pthread_mutex_lock(&p->mu);
    int best = -1;
    for (int i = 0; i < p->n_pool; i++)
        if (p->pool[i].cap >= n && (best < 0 || p->pool[i].cap < p->pool[best].cap))
            best = i;
    if (best >= 0) {
        uint8_t *b = p->pool[best].buf;
        *cap = p->pool[best].cap;
        p->pool_bytes -= p->pool[best].cap;
        p->pool[best] = p->pool[--p->n_pool];
        pthread_mutex_unlock(&p->mu);
        return b;
    }
    pthread_mutex_unlock(&p->mu);
    uint64_t c = (n + EF_BUF_ROUND - 1) / EF_BUF_ROUND * EF_BUF_ROUND;
    if (c == 0)
        c = EF_BUF_ROUND;
    uint8_t *kept = p->shelf ? shelf_take(p->shelf, c, cap) : NULL;
    if (kept)
        return kept;
    void *m = mmap(NULL, (size_t)c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    *cap = c;
    return m;
}

/* Keeps buf for reuse when the pool has room (in count and in bytes: never
 * more than the budget); else returns what to unmap. Called with p->mu held. */
static ef__pooled ef__pool_put_locked(ef *p, uint8_t *buf, uint64_t cap)
{
    ef__pooled out = {buf, cap};
    if (p->n_pool < EF_POOL_MAX && p->pool_bytes + cap <= p->budget) {
        p->pool[p->n_pool++] = out;
        p->pool_bytes += cap;
        out.buf = NULL;
    }
    return out;
}

void ef_buf_put(ef *p, uint8_t *buf, uint64_t cap)
{
    if (!buf)
        return;
    pthread_mutex_lock(&p->mu);
    ef__pooled out = ef__pool_put_locked(p, buf, cap);
    pthread_mutex_unlock(&p->mu);
    if (out.buf)
        shelf_put(p->shelf, out.buf, out.cap);
}

/* Called with p->mu held. */
static void ef__free_blob_locked(ef *p, ef_blob *b)
{
    if (!b)
        return;
    if (b->buf) {
        ef__pooled out = ef__pool_put_locked(p, b->buf, b->cap);
        if (out.buf) /* the shelf's lock is taken inside p->mu, never the other way */
            shelf_put(p->shelf, out.buf, out.cap);
    }
    free(b->ranges);
    free(b);
}

static void ef__free_blob(ef_blob *b)
{
    if (!b)
        return;
    if (b->buf)
        munmap(b->buf, (size_t)b->cap);
    free(b->ranges);
    free(b);
}

/* Drops one unit's hold on b; the last one frees it. Called with p->mu held. */
static void ef__unref_locked(ef *p, ef_blob *b)
{
    if (--b->refs > 0)
        return;
    p->held -= b->bytes;
    em_reserve(p->mem, -(int64_t)b->bytes, -1);
    ef__free_blob_locked(p, b);
    pthread_cond_broadcast(&p->cv);
}

static void *ef__main(void *arg)
{
    ef *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        while (p->cursor < p->n_units && p->state[p->cursor] != EF_EMPTY)
            p->cursor++;
        if (p->cursor >= p->n_units)
            break;
        int u = p->cursor, span = 1;
        if (u > p->taken + p->window) {
            pthread_cond_wait(&p->cv, &p->mu); /* far enough ahead for now */
            continue;
        }
        int64_t sz = p->ops.size(p->arg, u, true, &span);
        if (sz < 0) {
            p->cursor++; /* not prefetched: its worker fetches it */
            continue;
        }
        if (span < 1 || u + span > p->n_units)
            span = 1;
        for (int k = 1; k < span; k++)
            if (p->state[u + k] != EF_EMPTY) {
                span = 1;
                sz = p->ops.size(p->arg, u, false, &span);
                span = 1;
                break;
            }
        if (sz < 0) {
            p->cursor++;
            continue;
        }
        /* Room: within the budget (one job may always be held, however large),
         * and within half the query's memory limit. */
        if ((p->held > 0 && p->held + (uint64_t)sz > p->budget) ||
            !em_reserve(p->mem, sz, p->mem && p->mem->limit > 0 ? p->mem->limit / 2 : -1)) {
            if (p->held == 0 && p->mem && p->mem->limit > 0) {
                p->cursor++; /* it will never fit: leave it to its worker */
                continue;
            }
            pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        for (int k = 0; k < span; k++)
            p->state[u + k] = EF_FETCHING;
        p->cursor = u + span;
        p->held += (uint64_t)sz;
        pthread_mutex_unlock(&p->mu);

        ef_blob *b = calloc(1, sizeof(*b));
        if (b)
            p->ops.fetch(p->arg, p, u, span, b);

        pthread_mutex_lock(&p->mu);
        /* charge what was really fetched, not the estimate */
        int64_t real = b ? (int64_t)b->bytes : 0;
        em_reserve(p->mem, real - sz, -1);
        p->held = p->held - (uint64_t)sz + (uint64_t)real;
        if (p->held > p->peak)
            p->peak = p->held;
        p->jobs++;
        if (b)
            b->refs = span;
        for (int k = 0; k < span; k++) {
            p->state[u + k] = EF_READY;
            p->blob[u + k] = b;
        }
        if (!b)
            for (int k = 0; k < span; k++)
                p->state[u + k] = EF_OWN; /* out of memory: the workers fetch them */
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int ef_create(ef **out, const ef_ops *ops, void *arg, int n_units, int threads, int window,
              uint64_t budget, eng_mem *mem)
{
    return ef_create_shelved(out, ops, arg, n_units, threads, window, budget, mem, NULL);
}

int ef_create_shelved(ef **out, const ef_ops *ops, void *arg, int n_units, int threads, int window,
                      uint64_t budget, eng_mem *mem, ef_shelf *shelf)
{
    *out = NULL;
    if (threads <= 0 || budget == 0 || n_units <= 0 || window <= 0)
        return 0;
    if (threads > EF_MAX_THREADS)
        threads = EF_MAX_THREADS;
    if (threads > n_units)
        threads = n_units;
    ef *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->state = calloc((size_t)n_units, 1);
    p->blob = calloc((size_t)n_units, sizeof(ef_blob *));
    if (!p->state || !p->blob) {
        free(p->state);
        free(p->blob);
        free(p);
        return -ENOMEM;
    }
    p->ops = *ops;
    p->shelf = shelf;
    p->arg = arg;
    p->mem = mem;
    p->n_units = n_units;
    p->budget = budget;
    p->taken = -1;
    p->window = window;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    for (int i = 0; i < threads; i++)
        if (pthread_create(&p->th[p->n_th], NULL, ef__main, p) == 0)
            p->n_th++;
    *out = p;
    return 0;
}

int ef_take(ef *p, int u, ef_blob **b)
{
    *b = NULL;
    if (!p || u < 0 || u >= p->n_units)
        return 0;
    pthread_mutex_lock(&p->mu);
    if (u > p->taken)
        p->taken = u;
    while (p->state[u] == EF_FETCHING)
        pthread_cond_wait(&p->cv, &p->mu);
    int rc = 0;
    if (p->state[u] == EF_READY) {
        p->state[u] = EF_TAKEN;
        *b = p->blob[u];
        p->blob[u] = NULL;
        p->hits++;
        rc = 1;
    } else if (p->state[u] == EF_EMPTY) {
        p->state[u] = EF_OWN;
    }
    /* the window moved: a download waiting for room may look again */
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return rc;
}

void ef_release(ef *p, ef_blob **b)
{
    if (!b || !*b)
        return;
    if (!p) {
        ef__free_blob(*b);
        *b = NULL;
        return;
    }
    pthread_mutex_lock(&p->mu);
    ef__unref_locked(p, *b);
    pthread_mutex_unlock(&p->mu);
    *b = NULL;
}

void ef_stop(ef *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void ef_stats(ef *p, uint64_t *jobs, uint64_t *hits, uint64_t *peak)
{
    *jobs = *hits = *peak = 0;
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    *jobs = p->jobs;
    *hits = p->hits;
    *peak = p->peak;
    pthread_mutex_unlock(&p->mu);
}

void ef_destroy(ef **pp)
{
    if (!pp || !*pp)
        return;
    ef *p = *pp;
    ef_stop(p);
    for (int i = 0; i < p->n_th; i++)
        pthread_join(p->th[i], NULL);
    pthread_mutex_lock(&p->mu);
    for (int u = 0; u < p->n_units; u++)
        if (p->state[u] == EF_READY && p->blob[u]) {
            ef__unref_locked(p, p->blob[u]);
            p->blob[u] = NULL;
        }
    for (int i = 0; i < p->n_pool; i++)
        shelf_put(p->shelf, p->pool[i].buf, p->pool[i].cap);
    p->n_pool = 0;
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->state);
    free(p->blob);
    free(p);
    *pp = NULL;
}
