/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_fetch.h: the prefetcher (ef_, eng_fetch.c): download threads that fetch
 * a query's work units ahead of its workers, within a byte budget charged to
 * the query's memory. It knows nothing of formats: the caller's ops say what a
 * unit costs and how it is fetched.
 *
 * Thread-safety: ef_take / ef_release / ef_stop / ef_buf_* from any worker
 * or download thread; ef_create / ef_destroy / ef_stats from the thread that
 * owns the prefetcher. No globals: every query has its own (a shelf of spare
 * buffers is the caller's, given to ef_create_shelved).
 */
#ifndef RINGCACHE_ENG_FETCH_H
#define RINGCACHE_ENG_FETCH_H

#include "eng_types.h"
#include "rangesrc.h"

/* ---- downloads ahead of the workers (eng_fetch.c) ---------------------------- */
/* Workers take work units in plan order (an atomic counter); the prefetcher's
 * download threads fetch the units after the one last taken, in the same
 * order, up to `window` units ahead of the workers (enough to hide a
 * request's latency; more would only hold memory) and while at most `budget`
 * bytes are in flight or waiting, each charged
 * to the query's memory (em_reserve, keeping half the limit free for the
 * workers: a prefetch never fails a query, it is simply not made). A job is
 * one unit, or several consecutive units whose bytes one request brings (a
 * small file read whole). A worker that reaches a unit either takes its bytes
 * (waiting while they are in flight) or, when no download has started it,
 * marks it its own and fetches it itself, so nothing waits for a budget held
 * by units behind it. Stop (LIMIT, an error, the end) lets requests in flight
 * finish, then frees everything not taken.
 *
 *   units:  0 1 2 | 3 4 5 6 | 7 8 ...
 *           taken | fetched or in flight (<= budget) | not yet
 *
 * Thread-safety: ef_take / ef_release / ef_stop from any worker; one mutex
 * and one condition variable. The ops run on download threads, with the
 * prefetcher's mutex held for `size` (keep it quick; it may take locks that
 * are never held around ef_* calls) and without it for `fetch`. */
typedef struct ef_blob {
    int rc;           /* 0, or why the fetch failed (the worker fetches itself) */
    uint8_t *buf;     /* from ef_buf_get: the bytes */
    uint64_t bytes;   /* how many (what is charged to the query) */
    uint64_t cap;     /* size of buf */
    bool whole;       /* buf is the whole object: its byte k at buf[k] */
    rs_range *ranges; /* !whole: the ranges fetched (buf pointing into buf) */
    size_t n;
    const void *tag; /* what the ranges were planned on (the pq_file) */
    int refs;        /* units holding it (the prefetcher's) */
} ef_blob;

typedef struct ef ef;
typedef struct ef_ops {
    /* Bytes the job starting at unit u would fetch and, in *span (>= 1,
     * preset 1), how many units from u it covers; allow_span false asks for u
     * alone. < 0: do not prefetch u. */
    int64_t (*size)(void *arg, int u, bool allow_span, int *span);
    /* Fetches that job into b (buf from ef_buf_get(p, ...), bytes, whole or
     * ranges, tag; rc on failure, buf then NULL). */
    void (*fetch)(void *arg, ef *p, int u, int span, ef_blob *b);
} ef_ops;

/* threads download threads (capped at 64), fetching at most `window` units
 * past the furthest one a worker has taken, and at most `budget` bytes; 0
 * threads, window or budget: *out NULL (every ef_* call accepts NULL). 0 or
 * -ENOMEM. */
int ef_create(ef **out, const ef_ops *ops, void *arg, int n_units, int threads, int window,
              uint64_t budget, eng_mem *mem);

/* A shelf of buffers kept between prefetchers (a server's queries, one after
 * another): what a prefetcher's pool holds when it is destroyed goes on the
 * shelf, up to max_bytes, and the next prefetcher takes its buffers from it
 * before mapping new ones, so a hot query pays no page faults for them.
 * Thread-safe; it must outlive every prefetcher given it. 0 or -ENOMEM. */
typedef struct ef_shelf ef_shelf;
int ef_shelf_create(ef_shelf **out, uint64_t max_bytes);
/* Unmaps what it holds; accepts NULL; sets *s to NULL. */
void ef_shelf_destroy(ef_shelf **s);
/* Bytes on the shelf now. */
uint64_t ef_shelf_bytes(ef_shelf *s);
/* ef_create with a shelf (NULL: none, as ef_create). */
int ef_create_shelved(ef **out, const ef_ops *ops, void *arg, int n_units, int threads, int window,
                      uint64_t budget, eng_mem *mem, ef_shelf *shelf);
/* 1: *b holds unit u's bytes (ef_release it when done); 0: no download
 * started it and none will: fetch it yourself. Waits while it is in flight. */
int ef_take(ef *p, int u, ef_blob **b);
void ef_release(ef *p, ef_blob **b);
void ef_stop(ef *p);
/* Stops, joins the download threads, frees what no worker took. */
void ef_destroy(ef **p);
/* Buffers of blobs: mapped, not malloc'ed (through malloc they would stay in
 * the download threads' arenas, adding to the process's peak RSS), and kept
 * in a small pool for the next job (a fresh mapping costs a page fault and a
 * zeroed page per 4 KiB or 2 MiB); bench/README.md has what each saved. ef_buf_get: a buffer of at least n bytes (*cap its size), or
 * NULL when out of memory; ef_buf_put returns it (NULL accepted). */
uint8_t *ef_buf_get(ef *p, uint64_t n, uint64_t *cap);
void ef_buf_put(ef *p, uint8_t *buf, uint64_t cap);
/* Counters: jobs fetched ahead, units taken from them, peak bytes held. */
void ef_stats(ef *p, uint64_t *jobs, uint64_t *hits, uint64_t *peak);

#endif /* RINGCACHE_ENG_FETCH_H */
