/* SPDX-License-Identifier: Apache-2.0
 *
 * rc_client.c: libringcache (ringcache.h). One I/O thread owns an event loop
 * with the cluster (cluster.h: membership, ring, node connections) and the S3
 * client; reader threads serve hits from the page cache (pagecache.h) without
 * touching the loop, and hand misses to the I/O thread as items on a queue
 * (mutex + eventfd), then sleep on a condition variable of their batch.
 *
 *   reader thread                         I/O thread (event loop)
 *   rc_pread                               |
 *    pc_fetch NOWAIT per block             |
 *      HIT -> copy                         |
 *      FILL/UNCACHED -> item --queue-----> rc_io_pump: rcl_read(one block)
 *      being filled -> later, blocking     |  node fault on every owner ->
 *    read-ahead items (no wait) --queue->  |  S3 ranged GET, If-Match + ETag
 *    sleep on batch.cond  <--signal------ rc_item_finish
 *    complete pages, copy out              |  (read-ahead: completes the page)
 *
 * Calls that are not block reads (connect, HEAD, PUT, WARM, STATS) go the
 * same way as rc_call records run on the loop.
 */
#include "ringcache.h"

#include "blockkey.h"
#include "cluster.h"
#include "syncconn.h"
#include "pagecache.h"

#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define RC_CHUNK_MAX 64        /* blocks one pread handles at once */
#define RC_STREAMS 8           /* sequential streams tracked per handle */
#define RC_META_BUCKETS 1024
#define RC_META_MAX 65536      /* entries before the metadata cache is cleared */
#define RC_DEFAULT_BLOCK (1u << 20)
#define RC_PUT_MAX (5ull << 30)
#define RC_DEFAULT_HEDGE_MS 500

/* ---- types ---------------------------------------------------------------------- */

/* The identity a handle is pinned to; shared with read-ahead items in flight. */
typedef struct rc_obj {
    atomic_int refs;
    atomic_bool stale;
    char bucket[64];
    char key[1025];
    char version[RC_VERSION_MAX];
    uint64_t size;
} rc_obj;

typedef struct rc_stream {
    uint64_t next_off;     /* where the next read of this stream starts */
    uint64_t ra_next;      /* first block not yet read ahead */
    uint64_t used;         /* tick of last use, for replacement */
    uint32_t seq;          /* consecutive reads so far */
    uint32_t window;       /* read-ahead blocks; grows while the stream stalls */
    bool live;
} rc_stream;

struct rc_handle {
    rc_client *c;
    rc_obj *obj;
    pthread_mutex_t lock;  /* streams, err */
    rc_stream streams[RC_STREAMS];
    uint64_t tick;
    char err[RC_ERR_MAX];
};

/* What a reader waits on: items of one pread. */
typedef struct rc_batch {
    pthread_cond_t cond;
    int pending;           /* under c->qlock */
    int code;              /* first error */
    char msg[RC_ERR_MAX];
} rc_batch;

enum rc_item_kind {
    RC_ITEM_PAGE,    /* whole block into a page the reader fills (PC_FILL) */
    RC_ITEM_DIRECT,  /* a range straight into the reader's buffer */
    RC_ITEM_RA,      /* read-ahead: the I/O thread completes and releases the page */
    RC_ITEM_PROBE,   /* warm --wait: one byte, nodes only */
};

typedef struct rc_item {
    struct rc_item *next;
    rc_client *c;
    rc_batch *batch;       /* NULL for read-ahead */
    rc_obj *obj;           /* RC_ITEM_RA holds a reference */
    enum rc_item_kind kind;
    uint64_t block;
    uint32_t in_off, in_len;
    uint8_t *dst;
    pc_page *page;
    int result;            /* bytes or -errno, set on the I/O thread */
    uint64_t buf_off;      /* RC_ITEM_PAGE: where the reader copies to */
    uint32_t copy_off, copy_len;
    bool to_s3;            /* the owner said its own S3 failed (reader's connection) */
} rc_item;

typedef struct rc_call rc_call;
typedef void (*rc_call_fn)(rc_client *c, rc_call *call);

typedef struct rc_node_line {
    struct rc_node_line *next;
    char id[128], addr[300];
    int code;
    char *text;
} rc_node_line;

struct rc_call {
    rc_call *next;
    rc_client *c;
    rc_call_fn run;
    pthread_cond_t cond;
    bool done;             /* under c->qlock */
    int code;
    char msg[RC_ERR_MAX];
    /* arguments and results */
    const char *bucket, *key;
    uint64_t size;
    char version[RC_VERSION_MAX];
    rc_read_at_fn read_at;
    void *read_arg;
    uint64_t put_off;
    uint8_t *put_buf;
    rc_obj *obj;
    uint64_t count;
    rc_node_line *lines, **lines_tail;
    int failed_nodes;
};

typedef struct rc_meta {
    struct rc_meta *next;
    char *bucket, *key;
    uint64_t size;
    char version[RC_VERSION_MAX];
    int64_t expires_ms;
} rc_meta;

/* Page buffers: one reservation of the page cache's capacity (huge pages
 * asked for), cut into page-size slots; a freed slot goes on a free list and
 * is handed out again already faulted in. Anything else (the page cache's
 * metadata) comes from posix_memalign. */
typedef struct rc_arena {
    pthread_mutex_t lock;
    uint8_t *map;          /* NULL: no arena, every buffer from posix_memalign */
    size_t map_len;
    uint8_t *start;        /* map aligned to 2 MiB */
    size_t slot, nslots, carved;
    void *free_head;       /* freed slots, linked through their first word */
} rc_arena;

#define RC_SPOOL_NODES 64 /* node addresses with idle blocking connections */
#define RC_SPOOL_KEEP 8   /* idle blocking connections kept per node */

typedef struct rc_spool {
    char host[300];
    int port;
    sc_conn *idle[RC_SPOOL_KEEP];
    int n;
} rc_spool;

struct rc_client {
    rc_config cfg;
    char members[4096];
    char token[4097];
    char tls_ca[4096];
    char dns_server[256];
    char connect_err[512]; /* why the last connect to the nodes failed ("" if it did not) */
    uint32_t bs;
    int window;            /* read-ahead blocks a stream starts with */
    int window_max;        /* ... and grows to while it keeps stalling */
    int chunk;
    uint32_t partial_max;
    char tenant[257];
    pc_cache *pc;
    rc_arena arena;

    /* the I/O thread and what it owns */
    pthread_t io;
    bool io_started;
    struct event_base *base;
    struct event *wake_ev;
    int efd;
    rcl_cluster *cl;
    s3_client *s3;
    char s3_err[256];
    bool connected;        /* a node answered HELLO with our block size */
    bool connecting;
    rc_call *connect_call; /* rc_create waiting for the first connect */
    int64_t next_probe_ms;
    int inflight, ra_inflight;
    bool pumping;

    /* the queue between readers and the I/O thread */
    pthread_mutex_t qlock;
    rc_item *dq_head, *dq_tail;  /* demand */
    rc_item *rq_head, *rq_tail;  /* read-ahead */
    rc_call *cq_head, *cq_tail;
    atomic_bool stop;

    pthread_mutex_t mlock;
    rc_meta *meta[RC_META_BUCKETS];
    size_t n_meta;

    atomic_size_t n_members;
    struct {
        atomic_uint_fast64_t preads, hits, misses, stalls, waits, readahead_fetches,
            partial_fetches, node_blocks, failovers, fallbacks, head_fallbacks, stale,
            meta_hits, bytes, inline_reads, hedges, hedge_wins, upstream_fallbacks,
            node_bytes, s3_bytes;
        atomic_uint_fast64_t inline_hedges; /* given up on the reader's connection */
    } st;

    /* Blocking connections for small reads done on the reader's thread
     * (syncconn.h), idle ones kept per node address; under slock. */
    bool inline_ok;
    _Atomic int64_t inline_pause_until_ms; /* after a failed connect: the I/O thread's way */
    pthread_mutex_t slock;
    rc_spool spools[RC_SPOOL_NODES];
    int n_spools;
};

static int64_t rc_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t rc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#define RC_COUNT(c, f, n) atomic_fetch_add_explicit(&(c)->st.f, (n), memory_order_relaxed)

static void rc_obj_unref(rc_obj **op)
{
    rc_obj *o = *op;
    *op = NULL;
    if (o && atomic_fetch_sub(&o->refs, 1) == 1)
        free(o);
}

/* ---- page buffers --------------------------------------------------------------------- */

#define RC_HUGE (2u << 20)
/* batches of at most this many bytes are polled for before sleeping (spin_us) */
#define RC_SPIN_MAX_BYTES (256u << 10)

static void rc_arena_init(rc_arena *a, size_t capacity, size_t slot, bool prefault)
{
    memset(a, 0, sizeof(*a));
    size_t nslots = capacity / slot;
    if (nslots == 0 || slot % 4096 != 0)
        return;
    size_t len = nslots * slot + RC_HUGE;
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED)
        return; /* posix_memalign serves every buffer */
    uintptr_t start = ((uintptr_t)m + RC_HUGE - 1) & ~(uintptr_t)(RC_HUGE - 1);
    /* one fault per 2 MiB instead of one per 4 KiB where the kernel allows */
    (void)madvise((void *)start, nslots * slot, MADV_HUGEPAGE);
    if (prefault) {
#ifdef MADV_POPULATE_WRITE
        if (madvise((void *)start, nslots * slot, MADV_POPULATE_WRITE) != 0)
#endif
            for (size_t off = 0; off < nslots * slot; off += 4096)
                ((volatile uint8_t *)start)[off] = 0;
    }
    pthread_mutex_init(&a->lock, NULL);
    a->map = m;
    a->map_len = len;
    a->start = (uint8_t *)start;
    a->slot = slot;
    a->nslots = nslots;
}

static void rc_arena_deinit(rc_arena *a)
{
    if (!a->map)
        return;
    munmap(a->map, a->map_len);
    pthread_mutex_destroy(&a->lock);
    memset(a, 0, sizeof(*a));
}

static bool rc_arena_owns(const rc_arena *a, const void *p)
{
    const uint8_t *b = p;
    return a->map && b >= a->start && b < a->start + a->nslots * a->slot;
}

static void *rc_arena_alloc(void *ctx, size_t align, size_t size)
{
    rc_arena *a = ctx;
    if (a->map && size == a->slot && align <= 4096) {
        void *p = NULL;
        pthread_mutex_lock(&a->lock);
        if (a->free_head) {
            p = a->free_head;
            a->free_head = *(void **)p;
        } else if (a->carved < a->nslots) {
            p = a->start + a->carved++ * a->slot;
        }
        pthread_mutex_unlock(&a->lock);
        if (p)
            return p;
    }
    void *p = NULL;
    return posix_memalign(&p, align, size) == 0 ? p : NULL;
}

static void rc_arena_free(void *ctx, void *ptr, size_t size)
{
    rc_arena *a = ctx;
    (void)size;
    if (!ptr)
        return;
    if (!rc_arena_owns(a, ptr)) {
        free(ptr);
        return;
    }
    pthread_mutex_lock(&a->lock);
    *(void **)ptr = a->free_head;
    a->free_head = ptr;
    pthread_mutex_unlock(&a->lock);
}

/* ---- config ------------------------------------------------------------------------ */

void rc_config_init(rc_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    s3_config_init(&cfg->s3);
    cfg->page_cache_bytes = 512u << 20;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->max_threads = n > 0 ? (int)n : 1;
    cfg->readahead_blocks = 16;
    cfg->metadata_ttl_ms = 5000;
    cfg->timeout_ms = 30000;
    cfg->connect_timeout_ms = 2000;
    cfg->down_ms = 5000;
    cfg->max_inflight = 96;
    cfg->partial_read_max = UINT32_MAX; /* resolved to block size / 4 at create */
    cfg->spin_us = 200;
    cfg->small_reads_inline = true;
    cfg->connections_per_node = RCL_DEFAULT_CONNS;
    cfg->hedge_ms = RC_DEFAULT_HEDGE_MS;
}

/* A yes/no environment variable into *out (left alone when unset or empty). */
static int rc_env_bool(const char *name, bool *out, const char *hint, char *err, size_t errlen)
{
    const char *v = getenv(name);
    if (!v || !v[0])
        return 0;
    if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
        !strcasecmp(v, "on")) {
        *out = true;
    } else if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") ||
               !strcasecmp(v, "off")) {
        *out = false;
    } else {
        snprintf(err, errlen, "%s='%s' is not a yes or no (set it to %s)", name, v, hint);
        return -EINVAL;
    }
    return 0;
}

int rc_config_from_env(rc_config *cfg, char *err, size_t errlen)
{
    if (!cfg->members)
        cfg->members = getenv("RINGCACHE_CACHE");
    if (!cfg->token)
        cfg->token = getenv("RINGCACHE_TOKEN");
    int rc = rc_env_bool("RINGCACHE_CACHE_TLS", &cfg->tls,
                         "1 for TLS to the cache nodes, 0 or unset for plain TCP", err, errlen);
    if (rc == 0)
        rc = rc_env_bool("RINGCACHE_PREFAULT", &cfg->prefault,
                         "1 to back the page cache with memory at start, 0 or unset not to",
                         err, errlen);
    if (rc < 0)
        return rc;
    const char *hedge = getenv("RINGCACHE_HEDGE_MS");
    if (hedge && hedge[0]) {
        char *end = NULL;
        long v = strtol(hedge, &end, 10);
        if (*end || v < 0 || v > 600000) {
            snprintf(err, errlen, "RINGCACHE_HEDGE_MS='%s' is not a number of milliseconds "
                     "from 0 to 600000 (0 turns hedging off)", hedge);
            return -EINVAL;
        }
        cfg->hedge_ms = (int)v;
    }
    if (!cfg->tls_ca)
        cfg->tls_ca = getenv("RINGCACHE_CACHE_TLS_CA");
    if (!cfg->dns_server)
        cfg->dns_server = getenv("RINGCACHE_DNS_SERVER");
    return s3_config_from_env(&cfg->s3, err, errlen);
}

int rc_readahead_window(const rc_config *cfg, uint32_t block_size)
{
    uint64_t bs = block_size ? block_size : (cfg->block_size ? cfg->block_size : RC_DEFAULT_BLOCK);
    uint64_t pages = cfg->page_cache_bytes / bs;
    uint64_t readers = cfg->max_threads > 0 ? (uint64_t)cfg->max_threads : 1;
    uint64_t bound = pages / (4 * readers);
    int w = cfg->readahead_blocks > 0 ? cfg->readahead_blocks : 0;
    return (uint64_t)w < bound ? w : (int)bound;
}

/* ---- metadata cache -------------------------------------------------------------------- */

static size_t rc_meta_slot(const char *bucket, const char *key)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = bucket; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    h = (h ^ '/') * 1099511628211ull;
    for (const char *p = key; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    return (size_t)(h % RC_META_BUCKETS);
}

static rc_meta **rc_meta_find_locked(rc_client *c, const char *bucket, const char *key)
{
    rc_meta **pp = &c->meta[rc_meta_slot(bucket, key)];
    for (; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->bucket, bucket) == 0 && strcmp((*pp)->key, key) == 0)
            return pp;
    return pp;
}

static void rc_meta_free(rc_meta *m)
{
    free(m->bucket);
    free(m->key);
    free(m);
}

static void rc_meta_clear_locked(rc_client *c)
{
    for (size_t i = 0; i < RC_META_BUCKETS; i++) {
        while (c->meta[i]) {
            rc_meta *m = c->meta[i];
            c->meta[i] = m->next;
            rc_meta_free(m);
        }
    }
    c->n_meta = 0;
}

static bool rc_meta_get(rc_client *c, const char *bucket, const char *key, uint64_t *size,
                        char *version)
{
    bool hit = false;
    pthread_mutex_lock(&c->mlock);
    rc_meta **pp = rc_meta_find_locked(c, bucket, key);
    if (*pp) {
        if ((*pp)->expires_ms > rc_now_ms()) {
            *size = (*pp)->size;
            memcpy(version, (*pp)->version, RC_VERSION_MAX);
            hit = true;
        } else {
            rc_meta *m = *pp;
            *pp = m->next;
            rc_meta_free(m);
            c->n_meta--;
        }
    }
    pthread_mutex_unlock(&c->mlock);
    return hit;
}

static void rc_meta_put(rc_client *c, const char *bucket, const char *key, uint64_t size,
                        const char *version)
{
    if (c->cfg.metadata_ttl_ms <= 0)
        return;
    pthread_mutex_lock(&c->mlock);
    rc_meta **pp = rc_meta_find_locked(c, bucket, key);
    rc_meta *m = *pp;
    if (!m) {
        if (c->n_meta >= RC_META_MAX) {
            rc_meta_clear_locked(c);
            pp = rc_meta_find_locked(c, bucket, key);
        }
        m = calloc(1, sizeof(*m));
        if (m) {
            m->bucket = strdup(bucket);
            m->key = strdup(key);
        }
        if (!m || !m->bucket || !m->key) {
            if (m)
                rc_meta_free(m);
            pthread_mutex_unlock(&c->mlock);
            return; /* only a cache: a failed insert costs a HEAD later */
        }
        *pp = m;
        c->n_meta++;
    }
    m->size = size;
    snprintf(m->version, sizeof(m->version), "%s", version);
    m->expires_ms = rc_now_ms() + c->cfg.metadata_ttl_ms;
    pthread_mutex_unlock(&c->mlock);
}

/* Drops the entry if it still names `version` (a read found it stale). */
static void rc_meta_drop(rc_client *c, const char *bucket, const char *key, const char *version)
{
    pthread_mutex_lock(&c->mlock);
    rc_meta **pp = rc_meta_find_locked(c, bucket, key);
    if (*pp && strcmp((*pp)->version, version) == 0) {
        rc_meta *m = *pp;
        *pp = m->next;
        rc_meta_free(m);
        c->n_meta--;
    }
    pthread_mutex_unlock(&c->mlock);
}

/* ---- the queue ------------------------------------------------------------------------ */

static void rc_wake(rc_client *c)
{
    uint64_t one = 1;
    ssize_t n = write(c->efd, &one, sizeof(one));
    (void)n; /* EAGAIN: the counter is already non-zero, the loop will wake */
}

/* Queues items (a NULL-terminated chain) of one kind. */
static void rc_submit(rc_client *c, rc_item *head, rc_item *tail, bool readahead,
                      rc_batch *batch, int count)
{
    if (!head)
        return;
    pthread_mutex_lock(&c->qlock);
    if (batch)
        batch->pending += count;
    rc_item **qh = readahead ? &c->rq_head : &c->dq_head;
    rc_item **qt = readahead ? &c->rq_tail : &c->dq_tail;
    if (*qt)
        (*qt)->next = head;
    else
        *qh = head;
    *qt = tail;
    pthread_mutex_unlock(&c->qlock);
    rc_wake(c);
}

/* Runs call on the I/O thread and waits for it. */
static int rc_call_run(rc_client *c, rc_call *call)
{
    call->c = c;
    pthread_cond_init(&call->cond, NULL);
    call->done = false;
    call->next = NULL;
    pthread_mutex_lock(&c->qlock);
    if (c->cq_tail)
        c->cq_tail->next = call;
    else
        c->cq_head = call;
    c->cq_tail = call;
    pthread_mutex_unlock(&c->qlock);
    rc_wake(c);
    pthread_mutex_lock(&c->qlock);
    while (!call->done)
        pthread_cond_wait(&call->cond, &c->qlock);
    pthread_mutex_unlock(&c->qlock);
    pthread_cond_destroy(&call->cond);
    return call->code;
}

/* I/O thread: the call is over. */
static void rc_call_finish(rc_client *c, rc_call *call, int code, const char *msg)
{
    call->code = code;
    if (code < 0)
        snprintf(call->msg, sizeof(call->msg), "%s", msg && msg[0] ? msg : strerror(-code));
    pthread_mutex_lock(&c->qlock);
    call->done = true;
    pthread_cond_signal(&call->cond);
    pthread_mutex_unlock(&c->qlock);
}

/* ---- block items on the I/O thread ------------------------------------------------------ */

static void rc_io_pump(rc_client *c);

static void rc_item_finish(rc_item *it, int result, const char *msg)
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
        rc_obj_unref(&it->obj);
        free(it);
    } else {
        rc_batch *b = it->batch;
        pthread_mutex_lock(&c->qlock);
        if (result < 0 && !b->code) {
            b->code = result;
            snprintf(b->msg, sizeof(b->msg), "%s", msg && msg[0] ? msg : strerror(-result));
        }
        if (__atomic_sub_fetch(&b->pending, 1, __ATOMIC_RELEASE) == 0)
            pthread_cond_signal(&b->cond);
        pthread_mutex_unlock(&c->qlock);
    }
    if (atomic_load(&c->stop) && c->inflight == 0)
        event_base_loopbreak(c->base);
    else if (!c->pumping)
        rc_io_pump(c);
}

static void rc_item_s3_done(const s3_error *err, const s3_get_result *res, void *arg)
{
    rc_item *it = arg;
    rc_obj *o = it->obj;
    char msg[RC_ERR_MAX];
    if (err->code && err->http_status == 416) {
        /* a range inside the pinned size is outside the object now: another,
         * shorter version (a server that ignores If-Match says so) */
        snprintf(msg, sizeof(msg), "s3://%s/%s changed: it is shorter than the %" PRIu64
                 " bytes the handle is pinned to (re-open it)", o->bucket, o->key, o->size);
        rc_item_finish(it, -ESTALE, msg);
        return;
    }
    if (err->code) {
        rc_item_finish(it, err->code, err->message);
        return;
    }
    if (strcmp(res->etag, o->version) != 0) {
        snprintf(msg, sizeof(msg), "s3://%s/%s changed: version %.64s, the handle is pinned to "
                 "%.64s (re-open it)", o->bucket, o->key, res->etag, o->version);
        rc_item_finish(it, -ESTALE, msg);
        return;
    }
    if (res->bytes != it->in_len) {
        snprintf(msg, sizeof(msg), "S3 sent %" PRIu64 " bytes of s3://%s/%s block %" PRIu64
                 ", not %u", res->bytes, o->bucket, o->key, it->block, it->in_len);
        rc_item_finish(it, -EIO, msg);
        return;
    }
    RC_COUNT(it->c, fallbacks, 1);
    RC_COUNT(it->c, s3_bytes, it->in_len);
    rc_item_finish(it, (int)it->in_len, NULL);
}

/* The nodes cannot give the block (code: -EHOSTDOWN none is up, -EREMOTEIO
 * the owner's own S3 failed, -ENODATA no_fill and not cached; why: their
 * words, or NULL): S3 directly, unless this process may not call S3. */
static void rc_item_to_s3(rc_item *it, int code, const char *why)
{
    rc_client *c = it->c;
    rc_obj *o = it->obj;
    char msg[RC_ERR_MAX];
    if (c->cfg.cache_only || it->kind == RC_ITEM_PROBE) {
        if (why && why[0])
            snprintf(msg, sizeof(msg), "%s%s", why,
                     c->cfg.cache_only ? " (cache_only: S3 is not read directly)" : "");
        else
            snprintf(msg, sizeof(msg), "no cache node owning s3://%s/%s block %" PRIu64
                     " is up%s", o->bucket, o->key, it->block,
                     c->cfg.cache_only ? " (cache_only: S3 is not read directly)" : "");
        rc_item_finish(it, code, msg);
        return;
    }
    if (code == -EREMOTEIO)
        RC_COUNT(c, upstream_fallbacks, 1);
    if (!c->s3) {
        snprintf(msg, sizeof(msg), "every cache node is down and the S3 client could not be "
                 "set up: %s", c->s3_err);
        rc_item_finish(it, -EIO, msg);
        return;
    }
    s3_get_args a = {.bucket = o->bucket, .key = o->key,
                     .offset = it->block * c->bs + it->in_off, .length = it->in_len,
                     .if_match = o->version, .buf = it->dst, .cap = it->in_len};
    int rc = s3_get(c->s3, &a, rc_item_s3_done, it);
    if (rc < 0) {
        snprintf(msg, sizeof(msg), "cannot send a GET of s3://%s/%s to S3: %s", o->bucket,
                 o->key, strerror(-rc));
        rc_item_finish(it, rc, msg);
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
        rc_item_finish(it, (int)it->in_len, NULL);
    } else if ((code == -EHOSTDOWN || code == -EREMOTEIO || code == -ENODATA) &&
               !atomic_load(&c->stop)) {
        rc_item_to_s3(it, code, code == -EHOSTDOWN ? NULL : msg);
    } else {
        rc_item_finish(it, code, msg);
    }
}

static void rc_connect_done(int code, const char *msg, void *arg);

static void rc_maybe_probe(rc_client *c)
{
    if (!c->cl || c->connected || c->connecting || rc_now_ms() < c->next_probe_ms)
        return;
    c->connecting = true;
    rcl_reset_down(c->cl);
    if (rcl_connect(c->cl, rc_connect_done, c) < 0) {
        c->connecting = false;
        c->next_probe_ms = rc_now_ms() + c->cfg.down_ms;
    }
}

static void rc_item_start(rc_item *it)
{
    rc_client *c = it->c;
    if (it->to_s3) { /* the owner told the reader's connection its S3 failed */
        rc_item_to_s3(it, -EREMOTEIO, NULL);
        return;
    }
    rc_maybe_probe(c);
    if (c->connected) {
        rc_obj *o = it->obj;
        rcl_object ro = {o->bucket, o->key, o->version, o->size};
        int rc = rcl_read(c->cl, &ro, it->block * c->bs + it->in_off, it->in_len, it->dst, NULL,
                          rc_item_node_done, it);
        if (rc == 0)
            return;
    }
    rc_item_to_s3(it, -EHOSTDOWN, NULL);
}

static void rc_io_pump(rc_client *c)
{
    c->pumping = true;
    for (;;) {
        rc_item *it = NULL;
        pthread_mutex_lock(&c->qlock);
        if (c->inflight < c->cfg.max_inflight && c->dq_head) {
            it = c->dq_head;
            c->dq_head = it->next;
            if (!c->dq_head)
                c->dq_tail = NULL;
        } else if (c->inflight < c->cfg.max_inflight && c->rq_head &&
                   c->ra_inflight < c->cfg.max_inflight / 2) {
            it = c->rq_head;
            c->rq_head = it->next;
            if (!c->rq_head)
                c->rq_tail = NULL;
            c->ra_inflight++;
        }
        pthread_mutex_unlock(&c->qlock);
        if (!it)
            break;
        it->next = NULL;
        c->inflight++;
        if (atomic_load(&c->stop))
            rc_item_finish(it, -ECANCELED, "the client is shutting down");
        else
            rc_item_start(it);
    }
    c->pumping = false;
}

static void rc_io_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    rc_client *c = arg;
    uint64_t v;
    ssize_t n = read(fd, &v, sizeof(v));
    (void)n;
    for (;;) {
        pthread_mutex_lock(&c->qlock);
        rc_call *call = c->cq_head;
        if (call) {
            c->cq_head = call->next;
            if (!c->cq_head)
                c->cq_tail = NULL;
        }
        bool stop = atomic_load(&c->stop);
        pthread_mutex_unlock(&c->qlock);
        if (!call) {
            if (stop && c->inflight == 0)
                event_base_loopbreak(c->base);
            break;
        }
        call->run(c, call);
    }
    rc_io_pump(c);
}

/* ---- connect ---------------------------------------------------------------------------- */

static void rc_connect_done(int code, const char *msg, void *arg)
{
    rc_client *c = arg;
    c->connecting = false;
    if (atomic_load(&c->stop) || !c->cl) {
        c->connected = false;
    } else if (code == 0) {
        uint32_t nbs = rcl_block_size(c->cl);
        if (c->bs == 0 || nbs == c->bs) {
            c->bs = nbs;
            c->connected = true;
        } else {
            code = -EPROTO; /* nodes with another block size than the pages in use */
            msg = "the cache nodes use another block size than this client's page cache";
        }
        atomic_store(&c->n_members, rcl_member_count(c->cl));
    }
    if (code < 0)
        c->next_probe_ms = rc_now_ms() + c->cfg.down_ms;
    snprintf(c->connect_err, sizeof(c->connect_err), "%s", code < 0 && msg ? msg : "");
    if (c->connect_call) {
        rc_call *call = c->connect_call;
        c->connect_call = NULL;
        if (code == 0)
            snprintf(c->tenant, sizeof(c->tenant), "%s", rcl_tenant(c->cl));
        rc_call_finish(c, call, code, msg);
    }
}

static void rc_call_connect(rc_client *c, rc_call *call)
{
    if (!c->cl) {
        rc_call_finish(c, call, 0, NULL);
        return;
    }
    c->connect_call = call;
    c->connecting = true;
    int rc = rcl_connect(c->cl, rc_connect_done, c);
    if (rc < 0) {
        c->connect_call = NULL;
        c->connecting = false;
        rc_call_finish(c, call, rc, "cannot start connecting to the cache nodes");
    }
}

/* ---- HEAD -------------------------------------------------------------------------------- */

static void rc_head_s3_done(const s3_error *err, const s3_object_info *info, void *arg)
{
    rc_call *call = arg;
    if (err->code) {
        rc_call_finish(call->c, call, err->code, err->message);
        return;
    }
    call->size = info->size;
    snprintf(call->version, sizeof(call->version), "%s", info->etag);
    rc_call_finish(call->c, call, 0, NULL);
}

/* why: the node's words when it answered that its own S3 failed (code
 * -EREMOTEIO), else NULL (no node answered). */
static void rc_head_to_s3(rc_client *c, rc_call *call, int code, const char *why)
{
    char msg[RC_ERR_MAX];
    if (c->cfg.cache_only) {
        if (why)
            snprintf(msg, sizeof(msg), "HEAD s3://%s/%s: %s (cache_only: S3 is not asked "
                     "directly)", call->bucket, call->key, why);
        else
            snprintf(msg, sizeof(msg), "no cache node answered the HEAD of s3://%s/%s "
                     "(cache_only: S3 is not asked directly)%s%s", call->bucket, call->key,
                     c->connect_err[0] ? "; " : "", c->connect_err);
        rc_call_finish(c, call, code, msg);
        return;
    }
    if (!c->s3) {
        snprintf(msg, sizeof(msg), "cannot HEAD s3://%s/%s: no cache node answered and the S3 "
                 "client could not be set up (%s)", call->bucket, call->key, c->s3_err);
        rc_call_finish(c, call, -EIO, msg);
        return;
    }
    RC_COUNT(c, head_fallbacks, 1);
    int rc = s3_head(c->s3, call->bucket, call->key, rc_head_s3_done, call);
    if (rc < 0)
        rc_call_finish(c, call, rc, "cannot send a HEAD to S3");
}

static void rc_head_node_done(int code, const char *msg, uint64_t size, const char *version,
                              void *arg)
{
    rc_call *call = arg;
    if ((code == -EHOSTDOWN || code == -EREMOTEIO) && !atomic_load(&call->c->stop)) {
        rc_head_to_s3(call->c, call, code, code == -EREMOTEIO ? msg : NULL);
        return;
    }
    call->size = size;
    snprintf(call->version, sizeof(call->version), "%s", version ? version : "");
    rc_call_finish(call->c, call, code, msg);
}

static void rc_call_head(rc_client *c, rc_call *call)
{
    rc_maybe_probe(c);
    if (c->connected && rcl_head(c->cl, call->bucket, call->key, rc_head_node_done, call) == 0)
        return;
    rc_head_to_s3(c, call, -EHOSTDOWN, NULL);
}

/* ---- open, close --------------------------------------------------------------------------- */

int rc_open(rc_client *c, const char *bucket, const char *key, rc_handle **out, char *err,
            size_t errlen)
{
    char scratch[RC_ERR_MAX];
    if (!err) {
        err = scratch;
        errlen = sizeof(scratch);
    }
    *out = NULL;
    if (!bucket || !key || !bucket[0] || !key[0] || strlen(bucket) >= 64 || strlen(key) >= 1025) {
        snprintf(err, errlen, "cannot open s3://%s/%s: the bucket or key is empty or too long",
                 bucket ? bucket : "", key ? key : "");
        return -EINVAL;
    }
    rc_obj *o = calloc(1, sizeof(*o));
    rc_handle *h = calloc(1, sizeof(*h));
    if (!o || !h) {
        free(o);
        free(h);
        snprintf(err, errlen, "out of memory opening s3://%s/%s", bucket, key);
        return -ENOMEM;
    }
    atomic_init(&o->refs, 1);
    atomic_init(&o->stale, false);
    snprintf(o->bucket, sizeof(o->bucket), "%s", bucket);
    snprintf(o->key, sizeof(o->key), "%s", key);
    if (rc_meta_get(c, bucket, key, &o->size, o->version)) {
        RC_COUNT(c, meta_hits, 1);
    } else {
        rc_call call = {.run = rc_call_head, .bucket = bucket, .key = key};
        int rc = rc_call_run(c, &call);
        if (rc < 0) {
            snprintf(err, errlen, "%s", call.msg);
            free(o);
            free(h);
            return rc;
        }
        o->size = call.size;
        snprintf(o->version, sizeof(o->version), "%s", call.version);
        rc_meta_put(c, bucket, key, o->size, o->version);
    }
    h->c = c;
    h->obj = o;
    pthread_mutex_init(&h->lock, NULL);
    *out = h;
    return 0;
}

void rc_close(rc_handle **hp)
{
    if (!hp || !*hp)
        return;
    rc_handle *h = *hp;
    rc_obj_unref(&h->obj);
    pthread_mutex_destroy(&h->lock);
    free(h);
    *hp = NULL;
}

uint64_t rc_size(const rc_handle *h) { return h->obj->size; }
const char *rc_version(const rc_handle *h) { return h->obj->version; }

void rc_last_error(rc_handle *h, char *out, size_t cap)
{
    pthread_mutex_lock(&h->lock);
    snprintf(out, cap, "%s", h->err);
    pthread_mutex_unlock(&h->lock);
}

/* ---- pread ---------------------------------------------------------------------------------- */

static pc_key rc_key(const rc_client *c, const rc_obj *o, uint64_t b)
{
    bkey_id id;
    bkey_id_init(&id, c->tenant, o->bucket, o->key, o->version, o->size, b);
    bkey k = bkey_of(&id);
    return (pc_key){k.hi, k.lo};
}

/* Records this read in the handle's streams; says whether it continues one
 * (sequential) and which blocks to read ahead ([*ra_from, *ra_to], empty when
 * from > to). */
static bool rc_stream_update(rc_handle *h, uint64_t off, uint64_t len, uint64_t *ra_from,
                             uint64_t *ra_to, int *slot)
{
    rc_client *c = h->c;
    uint64_t bs = c->bs;
    uint64_t nblocks = bkey_block_count(h->obj->size, bs);
    *ra_from = 1;
    *ra_to = 0;
    pthread_mutex_lock(&h->lock);
    h->tick++;
    rc_stream *s = NULL;
    for (int i = 0; i < RC_STREAMS; i++)
        if (h->streams[i].live && h->streams[i].next_off == off) {
            s = &h->streams[i];
            s->seq++;
            break;
        }
    if (!s) {
        s = &h->streams[0];
        for (int i = 0; i < RC_STREAMS; i++) {
            if (!h->streams[i].live) {
                s = &h->streams[i];
                break;
            }
            if (h->streams[i].used < s->used)
                s = &h->streams[i];
        }
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
        pc_key key = rc_key(c, o, b);
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
        it->in_len = (uint32_t)bkey_block_len(o->size, c->bs, b);
        it->page = pg;
        it->dst = pc_page_data(pg);
        if (tail)
            tail->next = it;
        else
            head = it;
        tail = it;
        RC_COUNT(c, readahead_fetches, 1);
    }
    rc_submit(c, head, tail, true, NULL, 0);
}

/* Waits for the batch's items. A small batch (a scattered read) usually
 * completes within one round trip to a node, a few tens of microseconds: the
 * reader first polls for up to spin_us, yielding its core between checks (the
 * I/O thread or a node on this machine may need it), and sleeps on the
 * condition only after that, which saves a wake-up on the common path. */
static void rc_wait_batch(rc_client *c, rc_batch *b, bool small)
{
    if (small && c->cfg.spin_us > 0) {
        int64_t until = rc_now_us() + c->cfg.spin_us;
        while (__atomic_load_n(&b->pending, __ATOMIC_ACQUIRE) > 0 && rc_now_us() < until)
            sched_yield();
    }
    pthread_mutex_lock(&c->qlock);
    while (b->pending > 0)
        pthread_cond_wait(&b->cond, &c->qlock);
    pthread_mutex_unlock(&c->qlock);
}

/* Completes the pages of the items [0, n) and copies them out. */
static void rc_complete_items(rc_client *c, rc_item *items, int n, uint8_t *buf)
{
    for (int i = 0; i < n; i++) {
        rc_item *it = &items[i];
        if (it->kind != RC_ITEM_PAGE)
            continue;
        if (it->result >= 0) {
            pc_fill_complete(c->pc, it->page, it->result);
            memcpy(buf + it->buf_off, (uint8_t *)pc_page_data(it->page) + it->copy_off,
                   it->copy_len);
        } else {
            pc_fill_complete(c->pc, it->page, it->result);
        }
        pc_release(c->pc, &it->page);
    }
}

/* An idle blocking connection to host:port, or a new one; NULL on failure. */
static sc_conn *rc_sconn_get(rc_client *c, const rcl_target *t)
{
    sc_conn *sc = NULL;
    pthread_mutex_lock(&c->slock);
    for (int i = 0; i < c->n_spools; i++) {
        rc_spool *p = &c->spools[i];
        if (p->port == t->port && strcmp(p->host, t->host) == 0) {
            if (p->n > 0)
                sc = p->idle[--p->n];
            break;
        }
    }
    pthread_mutex_unlock(&c->slock);
    if (sc)
        return sc;
    char err[512];
    /* a node silent for hedge_ms gives up the read here: the I/O thread's
     * way then asks the next owner */
    int silence_ms = c->cfg.hedge_ms > 0 && c->cfg.hedge_ms < c->cfg.timeout_ms
                         ? c->cfg.hedge_ms : c->cfg.timeout_ms;
    if (sc_open(&sc, t->host, t->port, c->cfg.token, c->bs, c->cfg.connect_timeout_ms,
                silence_ms, c->cfg.spin_us, err, sizeof(err)) < 0) {
        /* a node that is down or refuses: not again for every read */
        atomic_store(&c->inline_pause_until_ms, rc_now_ms() + c->cfg.down_ms);
        rcl_node_report(c->cl, t, RCL_NODE_DOWN, err);
        return NULL;
    }
    return sc;
}

/* Keeps sc for the next small read to host:port (or closes it). */
static void rc_sconn_put(rc_client *c, const rcl_target *t, sc_conn *sc)
{
    if (!sc_usable(sc)) {
        sc_close(&sc);
        return;
    }
    pthread_mutex_lock(&c->slock);
    rc_spool *p = NULL;
    for (int i = 0; i < c->n_spools && !p; i++)
        if (c->spools[i].port == t->port && strcmp(c->spools[i].host, t->host) == 0)
            p = &c->spools[i];
    if (!p && c->n_spools < RC_SPOOL_NODES) {
        p = &c->spools[c->n_spools++];
        snprintf(p->host, sizeof(p->host), "%s", t->host);
        p->port = t->port;
        p->n = 0;
    }
    if (p && p->n < RC_SPOOL_KEEP) {
        p->idle[p->n++] = sc;
        sc = NULL;
    }
    pthread_mutex_unlock(&c->slock);
    sc_close(&sc);
}

/* A small direct read done on this thread over a blocking connection to the
 * block's first owner that is up: no hand-off to the I/O thread and back.
 * 0 when the bytes are in place; anything else (no route yet, the node
 * failed or answered an error, such as "version changed") returns -1 and the
 * caller sends the item through the I/O thread, which handles every case. */
static int rc_read_inline(rc_client *c, rc_item *it)
{
    rc_obj *o = it->obj;
    rcl_object ro = {o->bucket, o->key, o->version, o->size};
    rcl_target t;
    if (!c->cl || atomic_load(&c->inline_pause_until_ms) > rc_now_ms() ||
        rcl_route(c->cl, &ro, it->block, &t) < 0)
        return -1;
    sc_conn *sc = rc_sconn_get(c, &t);
    if (!sc)
        return -1;
    rcp_get_req g = {.obj = {rcp_s(o->bucket), rcp_s(o->key), rcp_s(o->version), o->size},
                     .block = it->block, .offset = it->in_off, .length = it->in_len,
                     .flags = c->cfg.no_fill ? (uint32_t)RCP_GET_CACHE_ONLY : 0u};
    int node_err = 0;
    char msg[256] = "";
    int rc = sc_get(sc, &g, it->dst, it->in_len, &node_err, msg, sizeof(msg));
    rc_sconn_put(c, &t, sc);
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

/* Reads blocks [b0, b1] (at most RC_CHUNK_MAX) of the range [off, off+len). */
static int rc_read_chunk(rc_handle *h, uint8_t *buf, uint64_t off, uint64_t len, uint64_t b0,
                         uint64_t b1, bool seq, bool scan, bool *stalled, bool *waited)
{
    rc_client *c = h->c;
    rc_obj *o = h->obj;
    uint64_t bs = c->bs;
    rc_item items[RC_CHUNK_MAX];
    uint64_t deferred[RC_CHUNK_MAX];
    int n = 0, nd = 0;
    rc_batch batch = {.pending = 0, .code = 0};
    pthread_cond_init(&batch.cond, NULL);

    for (int pass = 0; pass < 2; pass++) {
        int first = n;
        uint64_t nb = pass == 0 ? b1 - b0 + 1 : (uint64_t)nd;
        for (uint64_t i = 0; i < nb; i++) {
            uint64_t b = pass == 0 ? b0 + i : deferred[i];
            uint64_t blen = bkey_block_len(o->size, bs, b);
            uint64_t bstart = b * bs;
            uint64_t from = off > bstart ? off - bstart : 0;
            uint64_t to = off + len < bstart + blen ? off + len - bstart : blen;
            uint64_t dst_off = bstart + from - off;
            pc_key key = rc_key(c, o, b);
            rc_item *it = &items[n];
            memset(it, 0, sizeof(*it));
            it->c = c;
            it->batch = &batch;
            it->obj = o;
            it->block = b;
            /* a scan's first and last blocks fetch only the bytes it wants, whatever
             * their size: it reads them once and its next range starts elsewhere */
            bool partial = pass == 0 && to - from < blen &&
                           (scan || (!seq && c->partial_max && to - from <= c->partial_max));
            int r = PC_UNCACHED;
            pc_page *pg = NULL;
            if (!(partial && !pc_contains(c->pc, &key))) {
                for (int attempt = 0; attempt < 3; attempt++) {
                    r = pc_fetch(c->pc, &key,
                                 (pass == 0 ? PC_FETCH_NOWAIT : 0) | (scan ? PC_FETCH_ONCE : 0),
                                 &pg);
                    if (r >= 0 || r == -EAGAIN || r == -ESTALE)
                        break;
                    /* another's fill failed (it may have been cancelled): again */
                }
                if (pass == 1 && r >= 0)
                    RC_COUNT(c, waits, r == PC_HIT ? 1 : 0);
            } else {
                RC_COUNT(c, partial_fetches, 1);
            }
            if (r == PC_HIT) {
                if (pass == 0)
                    RC_COUNT(c, hits, 1);
                memcpy(buf + dst_off, (uint8_t *)pc_page_data(pg) + from, to - from);
                pc_release(c->pc, &pg);
                continue;
            }
            if (r == -EAGAIN) {
                *waited = true;
                RC_COUNT(c, misses, 1);
                deferred[nd++] = b;
                continue;
            }
            if (r == -ESTALE) {
                batch.code = -ESTALE;
                snprintf(batch.msg, sizeof(batch.msg), "s3://%s/%s changed since it was opened "
                         "(re-open it)", o->bucket, o->key);
                break;
            }
            if (pass == 0)
                RC_COUNT(c, misses, 1);
            if (r == PC_FILL) {
                it->kind = RC_ITEM_PAGE;
                it->page = pg;
                it->dst = pc_page_data(pg);
                it->in_off = 0;
                it->in_len = (uint32_t)blen;
                it->buf_off = dst_off;
                it->copy_off = (uint32_t)from;
                it->copy_len = (uint32_t)(to - from);
            } else { /* uncached, or the page cache failed: straight into buf */
                it->kind = RC_ITEM_DIRECT;
                it->dst = buf + dst_off;
                it->in_off = (uint32_t)from;
                it->in_len = (uint32_t)(to - from);
            }
            if (n > first)
                items[n - 1].next = it;
            n++;
        }
        if (n > first) {
            *stalled = true;
            uint64_t bytes = 0;
            for (int i = first; i < n; i++)
                bytes += items[i].in_len;
            /* a small scattered read (its ranges straight into buf, one or two
             * blocks) is done on this thread; what that cannot do goes through
             * the I/O thread */
            rc_item *head = &items[first], *tail = &items[n - 1];
            int count = n - first;
            bool direct = c->inline_ok && bytes <= RC_SPIN_MAX_BYTES;
            for (int i = first; i < n && direct; i++)
                direct = items[i].kind == RC_ITEM_DIRECT;
            if (direct) {
                head = tail = NULL;
                count = 0;
                for (int i = first; i < n; i++) {
                    items[i].next = NULL;
                    if (rc_read_inline(c, &items[i]) == 0)
                        continue;
                    if (tail)
                        tail->next = &items[i];
                    else
                        head = &items[i];
                    tail = &items[i];
                    count++;
                }
            }
            if (count > 0) {
                rc_submit(c, head, tail, false, &batch, count);
                rc_wait_batch(c, &batch, bytes <= RC_SPIN_MAX_BYTES);
                rc_complete_items(c, items + first, n - first, buf);
            }
        }
        if (batch.code || nd == 0)
            break;
        /* pass 1 waits for pages others are filling; this thread holds no pin now */
    }
    int rc = batch.code;
    if (rc < 0) {
        pthread_mutex_lock(&h->lock);
        snprintf(h->err, sizeof(h->err), "%s", batch.msg);
        pthread_mutex_unlock(&h->lock);
    }
    pthread_cond_destroy(&batch.cond);
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
                 o->bucket, o->key);
        pthread_mutex_unlock(&h->lock);
        return -ESTALE;
    }
    RC_COUNT(c, preads, 1);
    if (off >= o->size || len == 0)
        return 0;
    if (len > o->size - off)
        len = (size_t)(o->size - off);
    uint64_t bs = c->bs;
    uint64_t b0 = off / bs, b1 = (off + len - 1) / bs;
    uint64_t ra_from = 1, ra_to = 0;
    int slot = 0;
    bool scan = flags & RC_READ_SCAN;
    bool seq = !scan && rc_stream_update(h, off, len, &ra_from, &ra_to, &slot);
    if (ra_from <= ra_to)
        rc_readahead(c, o, ra_from, ra_to);
    bool stalled = false, waited = false;
    int rc = 0;
    for (uint64_t cb = b0; cb <= b1 && rc == 0; cb += (uint64_t)c->chunk) {
        uint64_t ce = cb + (uint64_t)c->chunk - 1 < b1 ? cb + (uint64_t)c->chunk - 1 : b1;
        rc = rc_read_chunk(h, buf, off, len, cb, ce, seq, scan, &stalled, &waited);
    }
    if (seq && (stalled || waited))
        rc_stream_grow(h, slot, off + len);
    if (stalled)
        RC_COUNT(c, stalls, 1);
    if (rc == -ESTALE) {
        atomic_store(&o->stale, true);
        RC_COUNT(c, stale, 1);
        rc_meta_drop(c, o->bucket, o->key, o->version);
    }
    if (rc < 0)
        return rc;
    RC_COUNT(c, bytes, len);
    return (int64_t)len;
}

/* ---- PUT ------------------------------------------------------------------------------------ */

static int64_t rc_put_read(void *buf, size_t cap, void *arg)
{
    rc_call *call = arg;
    if (call->put_off >= call->size)
        return 0;
    uint64_t n = call->size - call->put_off < cap ? call->size - call->put_off : cap;
    int64_t r = call->read_at(call->read_arg, buf, (size_t)n, call->put_off);
    if (r == 0)
        return -EIO; /* the source ended before `size` bytes */
    if (r > 0)
        call->put_off += (uint64_t)r;
    return r;
}

static void rc_put_s3_done(const s3_error *err, const char *etag, void *arg)
{
    rc_call *call = arg;
    free(call->put_buf);
    call->put_buf = NULL;
    if (err->code) {
        rc_call_finish(call->c, call, err->code, err->message);
        return;
    }
    snprintf(call->version, sizeof(call->version), "%s", etag ? etag : "");
    rc_call_finish(call->c, call, 0, NULL);
}

static void rc_put_to_s3(rc_client *c, rc_call *call)
{
    char msg[RC_ERR_MAX];
    if (c->cfg.cache_only || !c->s3 || call->size > RC_PUT_MAX) {
        snprintf(msg, sizeof(msg), "no cache node took the PUT of s3://%s/%s%s", call->bucket,
                 call->key,
                 c->cfg.cache_only ? " (cache_only: S3 is not written directly)"
                 : !c->s3 ? " and the S3 client could not be set up"
                          : " and it is larger than 5 GiB, the most a direct PUT sends");
        rc_call_finish(c, call, c->cfg.cache_only ? -EHOSTDOWN : -EIO, msg);
        return;
    }
    call->put_buf = malloc(call->size ? call->size : 1);
    if (!call->put_buf) {
        rc_call_finish(c, call, -ENOMEM, "out of memory gathering a PUT for S3");
        return;
    }
    for (uint64_t off = 0; off < call->size;) {
        int64_t r = call->read_at(call->read_arg, call->put_buf + off,
                                  (size_t)(call->size - off), off);
        if (r <= 0) {
            free(call->put_buf);
            call->put_buf = NULL;
            snprintf(msg, sizeof(msg), "the data of s3://%s/%s could not be read at offset %"
                     PRIu64, call->bucket, call->key, off);
            rc_call_finish(c, call, r < 0 ? (int)r : -EIO, msg);
            return;
        }
        off += (uint64_t)r;
    }
    RC_COUNT(c, head_fallbacks, 1);
    int rc = s3_put(c->s3, call->bucket, call->key, call->put_buf, (size_t)call->size,
                    rc_put_s3_done, call);
    if (rc < 0) {
        free(call->put_buf);
        call->put_buf = NULL;
        rc_call_finish(c, call, rc, "cannot send a PUT to S3");
    }
}

static void rc_put_node_done(int code, const char *msg, const char *version, void *arg)
{
    rc_call *call = arg;
    if (code == -EHOSTDOWN && !atomic_load(&call->c->stop)) {
        rc_put_to_s3(call->c, call); /* read_at starts again from 0 */
        return;
    }
    snprintf(call->version, sizeof(call->version), "%s", version ? version : "");
    rc_call_finish(call->c, call, code, msg);
}

static void rc_call_put(rc_client *c, rc_call *call)
{
    rc_maybe_probe(c);
    call->put_off = 0;
    if (c->connected && rcl_put(c->cl, call->bucket, call->key, call->size, rc_put_read, call,
                                rc_put_node_done, call) == 0)
        return;
    rc_put_to_s3(c, call);
}

int rc_put_stream(rc_client *c, const char *bucket, const char *key, uint64_t size,
                  rc_read_at_fn read_at, void *arg, char *version_out, char *err,
                  size_t errlen)
{
    rc_call call = {.run = rc_call_put, .bucket = bucket, .key = key, .size = size,
                    .read_at = read_at, .read_arg = arg};
    int rc = rc_call_run(c, &call);
    if (rc < 0) {
        if (err)
            snprintf(err, errlen, "%s", call.msg);
        return rc;
    }
    rc_meta_put(c, bucket, key, size, call.version); /* read-your-writes */
    if (version_out)
        snprintf(version_out, RC_VERSION_MAX, "%s", call.version);
    return 0;
}

typedef struct {
    const uint8_t *data;
    size_t len;
} rc_buf_src;

static int64_t rc_buf_read_at(void *arg, void *buf, size_t len, uint64_t off)
{
    rc_buf_src *s = arg;
    if (off >= s->len)
        return 0;
    size_t n = s->len - off < len ? s->len - (size_t)off : len;
    memcpy(buf, s->data + off, n);
    return (int64_t)n;
}

int rc_put(rc_client *c, const char *bucket, const char *key, const void *data, size_t len,
           char *version_out, char *err, size_t errlen)
{
    rc_buf_src s = {data, len};
    return rc_put_stream(c, bucket, key, len, rc_buf_read_at, &s, version_out, err, errlen);
}

/* ---- WARM -------------------------------------------------------------------------------------- */

static void rc_warm_done(int code, const char *msg, uint64_t started, void *arg)
{
    rc_call *call = arg;
    call->count = started;
    rc_call_finish(call->c, call, code, msg);
}

static void rc_call_warm(rc_client *c, rc_call *call)
{
    char msg[RC_ERR_MAX];
    rc_maybe_probe(c);
    if (!c->connected) {
        snprintf(msg, sizeof(msg), "cannot warm s3://%s/%s: no cache node is up%s",
                 call->obj->bucket, call->obj->key, c->cl ? "" : " (no members configured)");
        rc_call_finish(c, call, -EHOSTDOWN, msg);
        return;
    }
    rcl_object ro = {call->obj->bucket, call->obj->key, call->obj->version, call->obj->size};
    int rc = rcl_warm(c->cl, &ro, rc_warm_done, call);
    if (rc < 0)
        rc_call_finish(c, call, rc, "cannot send WARM");
}

int64_t rc_warm(rc_client *c, const char *bucket, const char *key, bool wait,
                rc_progress_fn progress, void *arg, char *err, size_t errlen)
{
    char scratch[RC_ERR_MAX];
    if (!err) {
        err = scratch;
        errlen = sizeof(scratch);
    }
    rc_handle *h;
    int rc = rc_open(c, bucket, key, &h, err, errlen);
    if (rc < 0)
        return rc;
    rc_obj *o = h->obj;
    uint64_t nb = bkey_block_count(o->size, c->bs);
    rc_call call = {.run = rc_call_warm, .obj = o};
    rc = rc_call_run(c, &call);
    if (rc < 0) {
        snprintf(err, errlen, "%s", call.msg);
        rc_close(&h);
        return rc;
    }
    if (wait && nb) {
        /* a one-byte GET of each block's end joins the node's fill: done when stored */
        enum { WAVE = 256 };
        rc_item *items = calloc(WAVE, sizeof(*items));
        uint8_t *bytes = malloc(WAVE);
        if (!items || !bytes) {
            free(items);
            free(bytes);
            rc_close(&h);
            snprintf(err, errlen, "out of memory waiting for the warm of s3://%s/%s", bucket,
                     key);
            return -ENOMEM;
        }
        rc_batch batch = {.pending = 0, .code = 0};
        pthread_cond_init(&batch.cond, NULL);
        int64_t last = 0;
        for (uint64_t b0 = 0; b0 < nb && !batch.code; b0 += WAVE) {
            int n = (int)(nb - b0 < WAVE ? nb - b0 : WAVE);
            for (int i = 0; i < n; i++) {
                rc_item *it = &items[i];
                memset(it, 0, sizeof(*it));
                it->c = c;
                it->batch = &batch;
                it->obj = o;
                it->kind = RC_ITEM_PROBE;
                it->block = b0 + (uint64_t)i;
                it->in_off = (uint32_t)(bkey_block_len(o->size, c->bs, it->block) - 1);
                it->in_len = 1;
                it->dst = &bytes[i];
                it->next = i + 1 < n ? &items[i + 1] : NULL;
            }
            rc_submit(c, &items[0], &items[n - 1], false, &batch, n);
            pthread_mutex_lock(&c->qlock);
            while (batch.pending > 0) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 200 * 1000000L;
                if (ts.tv_nsec >= 1000000000L) {
                    ts.tv_sec++;
                    ts.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&batch.cond, &c->qlock, &ts);
                uint64_t done = b0 + (uint64_t)(n - batch.pending);
                pthread_mutex_unlock(&c->qlock);
                if (progress && rc_now_ms() - last >= 200) {
                    progress(done, nb, arg);
                    last = rc_now_ms();
                }
                pthread_mutex_lock(&c->qlock);
            }
            pthread_mutex_unlock(&c->qlock);
        }
        pthread_cond_destroy(&batch.cond);
        free(items);
        free(bytes);
        if (batch.code < 0) {
            snprintf(err, errlen, "%s", batch.msg);
            rc_close(&h);
            return batch.code;
        }
    }
    if (progress)
        progress(nb, nb, arg);
    rc_close(&h);
    return (int64_t)nb;
}

/* ---- list, stats --------------------------------------------------------------------------------- */

int rc_list(rc_client *c, const char *bucket, const char *pattern, s3_object_fn fn, void *arg,
            char *err, size_t errlen)
{
    if (c->cfg.cache_only) {
        if (err)
            snprintf(err, errlen, "cannot list s3://%s/%s: a listing comes from S3 itself, and "
                     "cache_only says this process does not call S3 (the cache nodes keep "
                     "blocks, not listings)", bucket, pattern ? pattern : "");
        return -EHOSTDOWN;
    }
    s3_sync *s;
    int rc = s3_sync_create(&s, &c->cfg.s3);
    if (rc < 0) {
        if (err)
            snprintf(err, errlen, "cannot set up the S3 client: %s (check the endpoint)",
                     strerror(-rc));
        return rc;
    }
    s3_error e;
    s3_glob *g = NULL;
    bool glob = s3_glob_create(&g, pattern) == 0 && s3_glob_has_wildcards(g);
    s3_glob_destroy(&g);
    rc = glob ? s3_sync_glob(s, bucket, pattern, fn, arg, &e)
              : s3_sync_list(s, bucket, pattern, fn, arg, &e);
    s3_sync_destroy(&s);
    if (rc < 0 && err)
        snprintf(err, errlen, "%s", e.message);
    return rc < 0 ? rc : 0;
}

static void rc_stats_line(const char *id, const char *addr, int code, const char *text,
                          void *arg)
{
    rc_call *call = arg;
    rc_node_line *l = calloc(1, sizeof(*l));
    if (!l)
        return;
    snprintf(l->id, sizeof(l->id), "%s", id);
    snprintf(l->addr, sizeof(l->addr), "%s", addr);
    l->code = code;
    l->text = text ? strdup(text) : NULL;
    *call->lines_tail = l;
    call->lines_tail = &l->next;
}

static void rc_stats_done(int code, const char *msg, void *arg)
{
    rc_call *call = arg;
    rc_call_finish(call->c, call, code, msg);
}

static void rc_call_stats(rc_client *c, rc_call *call)
{
    call->lines_tail = &call->lines;
    if (!c->cl) {
        rc_call_finish(c, call, -EINVAL, "no cache members are configured");
        return;
    }
    int rc = rcl_stats_all(c->cl, rc_stats_line, rc_stats_done, call);
    if (rc < 0)
        rc_call_finish(c, call, rc, "out of memory");
}

int rc_node_stats(rc_client *c, rc_node_text_fn fn, void *arg)
{
    rc_call call = {.run = rc_call_stats};
    int rc = rc_call_run(c, &call);
    int failed = 0;
    while (call.lines) {
        rc_node_line *l = call.lines;
        call.lines = l->next;
        if (l->code < 0)
            failed++;
        fn(l->id, l->addr, l->code, l->text, arg);
        free(l->text);
        free(l);
    }
    return rc < 0 ? rc : failed;
}

void rc_stats_get(rc_client *c, rc_stats *out)
{
#define RC_LOAD(f) out->f = atomic_load_explicit(&c->st.f, memory_order_relaxed)
    RC_LOAD(preads);
    RC_LOAD(hits);
    RC_LOAD(misses);
    RC_LOAD(stalls);
    RC_LOAD(waits);
    RC_LOAD(readahead_fetches);
    RC_LOAD(partial_fetches);
    RC_LOAD(inline_reads);
    RC_LOAD(node_blocks);
    RC_LOAD(failovers);
    RC_LOAD(fallbacks);
    RC_LOAD(head_fallbacks);
    RC_LOAD(stale);
    RC_LOAD(meta_hits);
    RC_LOAD(bytes);
    RC_LOAD(hedges);
    out->hedges += atomic_load_explicit(&c->st.inline_hedges, memory_order_relaxed);
    RC_LOAD(hedge_wins);
    RC_LOAD(upstream_fallbacks);
    RC_LOAD(node_bytes);
    RC_LOAD(s3_bytes);
#undef RC_LOAD
}

uint32_t rc_block_size(const rc_client *c) { return c->bs; }
const char *rc_tenant(const rc_client *c) { return c->tenant; }
int rc_window(const rc_client *c) { return c->window; }
size_t rc_members(rc_client *c) { return atomic_load(&c->n_members); }

/* ---- create, destroy ------------------------------------------------------------------------------ */

static void *rc_io_main(void *arg)
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
    rc_call *k = c->cq_head;
    c->dq_head = c->dq_tail = c->rq_head = c->rq_tail = NULL;
    c->cq_head = c->cq_tail = NULL;
    pthread_mutex_unlock(&c->qlock);
    c->pumping = true; /* finishing must not start anything */
    while (d) {
        rc_item *n = d->next;
        c->inflight++;
        rc_item_finish(d, -ECANCELED, "the client is shutting down");
        d = n;
    }
    while (r) {
        rc_item *n = r->next;
        c->inflight++;
        c->ra_inflight++;
        rc_item_finish(r, -ECANCELED, "the client is shutting down");
        r = n;
    }
    while (k) {
        rc_call *n = k->next;
        rc_call_finish(c, k, -ECANCELED, "the client is shutting down");
        k = n;
    }
    return NULL;
}

static int rc_fail(rc_client **cp, char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* A node's first failure, in a sentence for node_warn. */
static void rc_node_event(const char *id, const char *addr, rcl_node_event what,
                          const char *why, void *arg)
{
    rc_client *c = arg;
    if (!c->cfg.node_warn)
        return;
    char s[1200];
    bool direct = !c->cfg.cache_only;
    switch (what) {
    case RCL_NODE_UPSTREAM:
        /* the node's words name it and what S3 said */
        snprintf(s, sizeof(s), "%s; blocks it does not have %s", why,
                 direct ? "are read from S3 directly"
                        : "cannot be read (cache_only: this process does not call S3)");
        break;
    case RCL_NODE_SLOW:
        snprintf(s, sizeof(s), "%s%s", why,
                 direct ? " (or S3 directly when none is up)" : "");
        break;
    default:
        snprintf(s, sizeof(s), "cache node %s (%s) is not used for now: %s; its blocks go to "
                 "the next owner%s", id, addr, why,
                 direct ? ", or S3 directly when none is up" : "");
        break;
    }
    c->cfg.node_warn(s, c->cfg.node_warn_arg);
}

/* The cluster adopted a new ring (dns: re-resolution): rc_members follows. */
static void rc_ring_changed(size_t members, void *arg)
{
    rc_client *c = arg;
    atomic_store(&c->n_members, members);
}

#include <stdarg.h>
static int rc_fail(rc_client **cp, char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (err && fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    rc_destroy(cp);
    return rc;
}

int rc_create(rc_client **out, const rc_config *cfg, char *err, size_t errlen)
{
    *out = NULL;
    rc_client *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->efd = -1;
    c->cfg = *cfg;
    pthread_mutex_init(&c->qlock, NULL);
    pthread_mutex_init(&c->mlock, NULL);
    pthread_mutex_init(&c->slock, NULL);
    rc_config *k = &c->cfg;
    snprintf(c->members, sizeof(c->members), "%s", cfg->members ? cfg->members : "");
    snprintf(c->token, sizeof(c->token), "%s", cfg->token ? cfg->token : "");
    k->members = c->members;
    k->token = c->token[0] ? c->token : NULL;
    snprintf(c->tls_ca, sizeof(c->tls_ca), "%s", cfg->tls_ca ? cfg->tls_ca : "");
    snprintf(c->dns_server, sizeof(c->dns_server), "%s", cfg->dns_server ? cfg->dns_server : "");
    k->tls_ca = c->tls_ca[0] ? c->tls_ca : NULL;
    k->dns_server = c->dns_server[0] ? c->dns_server : NULL;
    if (k->tls_ca && !k->tls)
        return rc_fail(&c, err, errlen, -EINVAL,
                       "a CA file for the cache nodes (%s) is given but TLS is off (set tls, "
                       "RINGCACHE_CACHE_TLS=1 or --cache-tls)", k->tls_ca);
    if ((cfg->tls_ca && strlen(cfg->tls_ca) >= sizeof(c->tls_ca)) ||
        (cfg->dns_server && strlen(cfg->dns_server) >= sizeof(c->dns_server)))
        return rc_fail(&c, err, errlen, -EINVAL, "the CA file name or the DNS server is too "
                       "long (at most %zu and %zu bytes)", sizeof(c->tls_ca) - 1,
                       sizeof(c->dns_server) - 1);
    if (k->max_threads <= 0)
        k->max_threads = 1;
    if (k->timeout_ms <= 0)
        k->timeout_ms = 30000;
    if (k->connect_timeout_ms <= 0)
        k->connect_timeout_ms = 2000;
    if (k->down_ms <= 0)
        k->down_ms = 5000;
    if (k->hedge_ms < 0)
        k->hedge_ms = 0;
    if (k->spin_us < 0)
        k->spin_us = 0;
    if (k->spin_us > 10000)
        k->spin_us = 10000; /* past a round trip or two, sleeping is cheaper */
    if (k->max_inflight <= 0)
        k->max_inflight = 96;
    if (k->max_inflight < 2)
        k->max_inflight = 2;
    if (k->block_size && (k->block_size & (k->block_size - 1))) {
        return rc_fail(&c, err, errlen, -EINVAL,
                       "block size %u is not a power of two (leave it 0 to take the nodes')",
                       k->block_size);
    }
    if (cfg->members && strlen(cfg->members) >= sizeof(c->members))
        return rc_fail(&c, err, errlen, -EINVAL, "the member list is longer than %zu bytes",
                       sizeof(c->members) - 1);
    c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    c->base = event_base_new();
    if (c->efd < 0 || !c->base)
        return rc_fail(&c, err, errlen, -ENOMEM, "cannot set up the I/O thread's event loop");
    c->wake_ev = event_new(c->base, c->efd, EV_READ | EV_PERSIST, rc_io_wake, c);
    if (!c->wake_ev || event_add(c->wake_ev, NULL) < 0)
        return rc_fail(&c, err, errlen, -ENOMEM, "cannot set up the I/O thread's event loop");
    if (c->members[0]) {
        rcl_config rcfg = {.members = c->members, .token = k->token,
                           .block_size = k->block_size, .parallel = 1,
                           .connect_timeout_ms = k->connect_timeout_ms,
                           .request_timeout_ms = k->timeout_ms, .down_ms = k->down_ms,
                           .hedge_ms = k->hedge_ms, .no_fill = k->no_fill,
                           .on_node = rc_node_event, .on_node_arg = c,
                           .tls = k->tls, .tls_ca = k->tls_ca,
                           .conns_per_node = k->connections_per_node,
                           .dns_server = k->dns_server, .dns_interval_ms = k->dns_interval_ms,
                           .on_ring = rc_ring_changed, .on_ring_arg = c};
        char why[512];
        int rc = rcl_create(&c->cl, c->base, &rcfg, why, sizeof(why));
        if (rc < 0)
            return rc_fail(&c, err, errlen, rc, "cache members '%s': %s", c->members, why);
        atomic_store(&c->n_members, rcl_member_count(c->cl));
    }
    int rc = s3_client_create(&c->s3, &k->s3, c->base);
    if (rc < 0) {
        snprintf(c->s3_err, sizeof(c->s3_err), "%s (check the S3 endpoint)", strerror(-rc));
        if (!c->cl)
            return rc_fail(&c, err, errlen, rc, "no cache members and no S3 client: %s",
                           c->s3_err);
    }
    c->bs = k->block_size;
    if (pthread_create(&c->io, NULL, rc_io_main, c) != 0)
        return rc_fail(&c, err, errlen, -EAGAIN, "cannot start the I/O thread");
    c->io_started = true;
    rc_call call = {.run = rc_call_connect};
    rc = rc_call_run(c, &call);
    if (rc == -EACCES)
        return rc_fail(&c, err, errlen, rc, "the cache nodes refused: %s (check the token)",
                       call.msg);
    /* no node answered: reads go to S3 until a probe finds one */
    if (!c->bs)
        c->bs = RC_DEFAULT_BLOCK;
    if (k->page_cache_bytes < c->bs)
        return rc_fail(&c, err, errlen, -EINVAL,
                       "page cache of %zu bytes is smaller than one block (%u bytes)",
                       k->page_cache_bytes, c->bs);
    rc_arena_init(&c->arena, k->page_cache_bytes, c->bs, k->prefault);
    pc_config pcc = {.capacity_bytes = k->page_cache_bytes, .page_size = c->bs,
                     .alloc_fn = rc_arena_alloc, .free_fn = rc_arena_free,
                     .alloc_ctx = &c->arena};
    rc = pc_create(&c->pc, &pcc);
    if (rc < 0)
        return rc_fail(&c, err, errlen, rc, "cannot create a page cache of %zu bytes: %s",
                       k->page_cache_bytes, strerror(-rc));
    c->window = rc_readahead_window(k, c->bs);
    c->inline_ok = k->small_reads_inline && !k->tls && c->cl;
    size_t pages = k->page_cache_bytes / c->bs;
    /* a stream that keeps waiting gets up to 4x the window, still within a
     * quarter of the page cache per reader */
    size_t wmax = pages / (4 * (size_t)k->max_threads);
    if (wmax > 4 * (size_t)c->window)
        wmax = 4 * (size_t)c->window;
    c->window_max = wmax > (size_t)c->window ? (int)wmax : c->window;
    size_t chunk = pages / (2 * (size_t)k->max_threads);
    c->chunk = chunk < 1 ? 1 : chunk > RC_CHUNK_MAX ? RC_CHUNK_MAX : (int)chunk;
    c->partial_max = k->partial_read_max == UINT32_MAX ? c->bs / 4 : k->partial_read_max;
    *out = c;
    return 0;
}

void rc_destroy(rc_client **cp)
{
    if (!cp || !*cp)
        return;
    rc_client *c = *cp;
    if (c->io_started) {
        pthread_mutex_lock(&c->qlock);
        atomic_store(&c->stop, true);
        pthread_mutex_unlock(&c->qlock);
        rc_wake(c);
        pthread_join(c->io, NULL);
    } else {
        rcl_destroy(&c->cl);
        s3_client_destroy(&c->s3);
    }
    if (c->wake_ev)
        event_free(c->wake_ev);
    if (c->base)
        event_base_free(c->base);
    if (c->efd >= 0)
        close(c->efd);
    pc_destroy(&c->pc);
    rc_arena_deinit(&c->arena);
    pthread_mutex_lock(&c->mlock);
    rc_meta_clear_locked(c);
    pthread_mutex_unlock(&c->mlock);
    for (int i = 0; i < c->n_spools; i++)
        for (int k = 0; k < c->spools[i].n; k++)
            sc_close(&c->spools[i].idle[k]);
    pthread_mutex_destroy(&c->qlock);
    pthread_mutex_destroy(&c->mlock);
    pthread_mutex_destroy(&c->slock);
    free(c);
    *cp = NULL;
}
