/* SPDX-License-Identifier: Apache-2.0
 *
 * rc_client.c: libringcache (ringcache.h): its configuration, rc_create and
 * rc_destroy, opening objects, listing, counters. The rest lives beside it
 * (rc_int.h says which file holds what): reads in rc_read.c, the I/O thread
 * in rc_io.c, the calls it runs for other threads in rc_req.c, the metadata
 * cache in rc_meta.c, page buffers in rc_arena.c.
 */
#include "rc_int.h"

#include <errno.h>
#include <event2/event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <unistd.h>

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
                         "1 to back the page cache with memory at start, 0 or unset not to", err,
                         errlen);
    if (rc == 0)
        rc = rc_env_bool("RINGCACHE_CACHE_SCANS", &cfg->cache_scans,
                         "1 to keep what scans read in the page cache, 0 or unset not to", err,
                         errlen);
    if (rc == 0)
        rc = rc_env_bool("RINGCACHE_HUGE_PAGES", &cfg->huge_pages,
                         "1 to back the page cache with huge pages where the kernel allows, "
                         "0 or unset for 4 KiB pages",
                         err, errlen);
    if (rc < 0)
        return rc;
    const char *hedge = getenv("RINGCACHE_HEDGE_MS");
    if (hedge && hedge[0]) {
        char *end = NULL;
        long v = strtol(hedge, &end, 10);
        if (*end || v < 0 || v > 600000) {
            snprintf(err, errlen,
                     "RINGCACHE_HEDGE_MS='%s' is not a number of milliseconds "
                     "from 0 to 600000 (0 turns hedging off)",
                     hedge);
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

/* ---- open, close --------------------------------------------------------------------------- */

static int open_id(rc_client *c, const char *bucket, const char *key, const uint64_t *known_size,
                   const char *known_version, rc_handle **out, char *err, size_t errlen);

int rc_open(rc_client *c, const char *bucket, const char *key, rc_handle **out, char *err,
            size_t errlen)
{
    return open_id(c, bucket, key, NULL, NULL, out, err, errlen);
}

int rc_open_known(rc_client *c, const char *bucket, const char *key, uint64_t size,
                  const char *version, rc_handle **out, char *err, size_t errlen)
{
    if (!version || !version[0] || strlen(version) > BKEY_VERSION_MAX)
        return open_id(c, bucket, key, NULL, NULL, out, err, errlen);
    return open_id(c, bucket, key, &size, version, out, err, errlen);
}

/* rc_open; with known_size set, the version and size are the caller's (no
 * HEAD, nothing asked of the metadata cache). */
static int open_id(rc_client *c, const char *bucket, const char *key, const uint64_t *known_size,
                   const char *known_version, rc_handle **out, char *err, size_t errlen)
{
    char scratch[RC_ERR_MAX];
    if (!err) {
        err = scratch;
        errlen = sizeof(scratch);
    }
    *out = NULL;
    rc_obj *o = calloc(1, sizeof(*o));
    rc_handle *h = calloc(1, sizeof(*h));
    if (!o || !h) {
        free(o);
        free(h);
        snprintf(err, errlen, "out of memory opening s3://%s/%s", bucket ? bucket : "",
                 key ? key : "");
        return -ENOMEM;
    }
    if (!bucket || !key || !bucket[0] || !key[0] ||
        bkey_object_init(&o->id, NULL, bucket, key, NULL, 0) < 0) {
        snprintf(err, errlen,
                 "cannot open s3://%s/%s: the bucket or key is empty or too long "
                 "(at most %d and %d bytes)",
                 bucket ? bucket : "", key ? key : "", BKEY_BUCKET_MAX, BKEY_KEY_MAX);
        free(o);
        free(h);
        return -EINVAL;
    }
    atomic_init(&o->refs, 1);
    atomic_init(&o->stale, false);
    if (known_size) {
        o->id.size = *known_size;
        bkey_field_set(o->id.version, sizeof(o->id.version), known_version, strlen(known_version));
    } else if (rc__meta_get(&c->meta, bucket, key, &o->id.size, o->id.version)) {
        RC_COUNT(c, meta_hits, 1);
    } else {
        rc_head_req req = {.bucket = bucket, .key = key};
        int rc = rc__req_run(c, (rc_req *)&req, RC_REQ_HEAD);
        if (rc < 0) {
            snprintf(err, errlen, "%s", req.msg);
            free(o);
            free(h);
            return rc;
        }
        o->id.size = req.size;
        if (bkey_field_set(o->id.version, sizeof(o->id.version), req.version, strlen(req.version)) <
            0) {
            snprintf(err, errlen,
                     "cannot open s3://%s/%s: its version (ETag) is longer than "
                     "the %d bytes a version may have",
                     bucket, key, BKEY_VERSION_MAX);
            free(o);
            free(h);
            return -EIO;
        }
        rc__meta_put(&c->meta, bucket, key, o->id.size, o->id.version);
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
    rc__obj_unref(&h->obj);
    pthread_mutex_destroy(&h->lock);
    free(h);
    *hp = NULL;
}

uint64_t rc_size(const rc_handle *h)
{
    return h->obj->id.size;
}
const char *rc_version(const rc_handle *h)
{
    return h->obj->id.version;
}

void rc_last_error(rc_handle *h, char *out, size_t cap)
{
    pthread_mutex_lock(&h->lock);
    snprintf(out, cap, "%s", h->err);
    pthread_mutex_unlock(&h->lock);
}

/* ---- list, stats --------------------------------------------------------------------------------- */

int rc_list(rc_client *c, const char *bucket, const char *pattern, s3_object_fn fn, void *arg,
            char *err, size_t errlen)
{
    if (c->cfg.cache_only) {
        if (err)
            snprintf(err, errlen,
                     "cannot list s3://%s/%s: a listing comes from S3 itself, and "
                     "cache_only says this process does not call S3 (the cache nodes keep "
                     "blocks, not listings)",
                     bucket, pattern ? pattern : "");
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
    RC_LOAD(scan_direct);
    RC_LOAD(repeat_fills);
#undef RC_LOAD
}

uint32_t rc_block_size(const rc_client *c)
{
    return c->bs;
}
const char *rc_tenant(const rc_client *c)
{
    return c->tenant;
}
int rc_window(const rc_client *c)
{
    return c->window;
}
size_t rc_members(rc_client *c)
{
    return atomic_load(&c->n_members);
}

/* A node's first failure, in a sentence for node_warn. */
static void rc_node_event(const char *id, const char *addr, rcl_node_event what, const char *why,
                          void *arg)
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
        snprintf(s, sizeof(s), "%s%s", why, direct ? " (or S3 directly when none is up)" : "");
        break;
    default:
        snprintf(s, sizeof(s),
                 "cache node %s (%s) is not used for now: %s; its blocks go to "
                 "the next owner%s",
                 id, addr, why, direct ? ", or S3 directly when none is up" : "");
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

/* ---- create, destroy ------------------------------------------------------------------ */

static int rc_fail(rc_client **cp, char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

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

/* Copies the borrowed strings of cfg into c, checks them and clamps the
 * numbers: 0 or -EINVAL with the sentence in err. */
static int rc_take_config(rc_client *c, const rc_config *cfg, char *err, size_t errlen)
{
    rc_config *k = &c->cfg;
    *k = *cfg;
    if ((cfg->members && strlen(cfg->members) >= sizeof(c->members))) {
        snprintf(err, errlen, "the member list is longer than %zu bytes", sizeof(c->members) - 1);
        return -EINVAL;
    }
    if ((cfg->tls_ca && strlen(cfg->tls_ca) >= sizeof(c->tls_ca)) ||
        (cfg->dns_server && strlen(cfg->dns_server) >= sizeof(c->dns_server))) {
        snprintf(err, errlen,
                 "the CA file name or the DNS server is too long (at most %zu and "
                 "%zu bytes)",
                 sizeof(c->tls_ca) - 1, sizeof(c->dns_server) - 1);
        return -EINVAL;
    }
    snprintf(c->members, sizeof(c->members), "%s", cfg->members ? cfg->members : "");
    snprintf(c->token, sizeof(c->token), "%s", cfg->token ? cfg->token : "");
    snprintf(c->tls_ca, sizeof(c->tls_ca), "%s", cfg->tls_ca ? cfg->tls_ca : "");
    snprintf(c->dns_server, sizeof(c->dns_server), "%s", cfg->dns_server ? cfg->dns_server : "");
    k->members = c->members;
    k->token = c->token[0] ? c->token : NULL;
    k->tls_ca = c->tls_ca[0] ? c->tls_ca : NULL;
    k->dns_server = c->dns_server[0] ? c->dns_server : NULL;
    if (k->tls_ca && !k->tls) {
        snprintf(err, errlen,
                 "a CA file for the cache nodes (%s) is given but TLS is off (set "
                 "tls, RINGCACHE_CACHE_TLS=1 or --cache-tls)",
                 k->tls_ca);
        return -EINVAL;
    }
    if (k->block_size && (k->block_size & (k->block_size - 1))) {
        snprintf(err, errlen,
                 "block size %u is not a power of two (leave it 0 to take the "
                 "nodes')",
                 k->block_size);
        return -EINVAL;
    }
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
    return 0;
}

/* The I/O thread's loop with its wake-up event, the cluster (when there are
 * members) and the S3 client: 0 or -errno with the sentence in err. */
static int rc_setup_loop(rc_client *c, char *err, size_t errlen)
{
    rc_config *k = &c->cfg;
    c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    c->base = event_base_new();
    if (c->efd >= 0 && c->base)
        c->wake_ev = event_new(c->base, c->efd, EV_READ | EV_PERSIST, rc__io_wake, c);
    if (!c->wake_ev || event_add(c->wake_ev, NULL) < 0) {
        snprintf(err, errlen, "cannot set up the I/O thread's event loop");
        return -ENOMEM;
    }
    if (c->members[0]) {
        rcl_config rcfg = {.members = c->members,
                           .token = k->token,
                           .block_size = k->block_size,
                           .parallel = 1,
                           .connect_timeout_ms = k->connect_timeout_ms,
                           .request_timeout_ms = k->timeout_ms,
                           .down_ms = k->down_ms,
                           .hedge_ms = k->hedge_ms,
                           .no_fill = k->no_fill,
                           .on_node = rc_node_event,
                           .on_node_arg = c,
                           .tls = k->tls,
                           .tls_ca = k->tls_ca,
                           .conns_per_node = k->connections_per_node,
                           .dns_server = k->dns_server,
                           .dns_interval_ms = k->dns_interval_ms,
                           .on_ring = rc_ring_changed,
                           .on_ring_arg = c};
        char why[512];
        int rc = rcl_create(&c->cl, c->base, &rcfg, why, sizeof(why));
        if (rc < 0) {
            snprintf(err, errlen, "cache members '%s': %s", c->members, why);
            return rc;
        }
        atomic_store(&c->n_members, rcl_member_count(c->cl));
    }
    int rc = s3_client_create(&c->s3, &k->s3, c->base);
    if (rc < 0) {
        snprintf(c->s3_err, sizeof(c->s3_err), "%s (check the S3 endpoint)", strerror(-rc));
        if (!c->cl) {
            snprintf(err, errlen, "no cache members and no S3 client: %s", c->s3_err);
            return rc;
        }
    }
    return 0;
}

/* Once the block size is known: the page cache on its arena, the read-ahead
 * windows, the chunk size, the pool of blocking connections. */
static int rc_setup_cache(rc_client *c, char *err, size_t errlen)
{
    rc_config *k = &c->cfg;
    if (k->page_cache_bytes < c->bs) {
        snprintf(err, errlen, "page cache of %zu bytes is smaller than one block (%u bytes)",
                 k->page_cache_bytes, c->bs);
        return -EINVAL;
    }
    /* with prefault the first touch is paid here, once: huge pages then make
     * every hit's copy cheaper (fewer TLB misses) */
    rc__arena_init(&c->arena, k->page_cache_bytes, c->bs, k->prefault,
                   k->huge_pages || k->prefault);
    pc_config pcc = {.capacity_bytes = k->page_cache_bytes,
                     .page_size = c->bs,
                     .alloc_fn = rc__arena_alloc,
                     .free_fn = rc__arena_free,
                     .alloc_ctx = &c->arena};
    int rc = pc_create(&c->pc, &pcc);
    if (rc < 0) {
        snprintf(err, errlen, "cannot create a page cache of %zu bytes: %s", k->page_cache_bytes,
                 strerror(-rc));
        return rc;
    }
    c->window = rc_readahead_window(k, c->bs);
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
    c->cache_scans = k->cache_scans;
    if (c->cache_scans) {
        /* 16 small reads per page of the page cache: one is remembered
         * about as long as a page read once stays */
        uint64_t n = 4096;
        while (n < 16 * (uint64_t)pages && n < (1u << 22))
            n <<= 1;
        c->seen = calloc(n, sizeof(*c->seen));
        if (!c->seen) {
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        c->seen_mask = n - 1;
    }
    c->inline_ok = k->small_reads_inline && !k->tls && c->cl;
    if (c->inline_ok) {
        /* a node silent for hedge_ms gives up a small read on the reader's
         * connection: the I/O thread's way then asks the next owner */
        int silence_ms =
            k->hedge_ms > 0 && k->hedge_ms < k->timeout_ms ? k->hedge_ms : k->timeout_ms;
        sc_pool_config pc = {.token = k->token,
                             .block_size = c->bs,
                             .connect_timeout_ms = k->connect_timeout_ms,
                             .timeout_ms = silence_ms,
                             .spin_us = k->spin_us};
        if (sc_pool_create(&c->pool, &pc) < 0)
            c->inline_ok = false; /* the I/O thread's way serves them all */
    }
    return 0;
}

int rc_create(rc_client **out, const rc_config *cfg, char *err, size_t errlen)
{
    char scratch[RC_ERR_MAX];
    if (!err) {
        err = scratch;
        errlen = sizeof(scratch);
    }
    *out = NULL;
    rc_client *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->efd = -1;
    pthread_mutex_init(&c->qlock, NULL);
    rc__meta_init(&c->meta, cfg->metadata_ttl_ms);
    int rc = rc_take_config(c, cfg, err, errlen);
    if (rc == 0)
        rc = rc_setup_loop(c, err, errlen);
    if (rc < 0)
        return rc_fail(&c, NULL, 0, rc, NULL);
    c->bs = c->cfg.block_size;
    if (pthread_create(&c->io, NULL, rc__io_main, c) != 0)
        return rc_fail(&c, err, errlen, -EAGAIN, "cannot start the I/O thread");
    c->io_started = true;
    rc_connect_req req = {.code = 0};
    rc = rc__req_run(c, (rc_req *)&req, RC_REQ_CONNECT);
    if (rc == -EACCES)
        return rc_fail(&c, err, errlen, rc, "the cache nodes refused: %s (check the token)",
                       req.msg);
    /* no node answered: reads go to S3 until a probe finds one */
    if (!c->bs)
        c->bs = RC_DEFAULT_BLOCK;
    rc = rc_setup_cache(c, err, errlen);
    if (rc < 0)
        return rc_fail(&c, NULL, 0, rc, NULL);
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
        rc__wake(c);
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
    free((void *)c->seen);
    rc__arena_deinit(&c->arena);
    rc__meta_deinit(&c->meta);
    sc_pool_destroy(&c->pool);
    pthread_mutex_destroy(&c->qlock);
    free(c);
    *cp = NULL;
}
