/* SPDX-License-Identifier: Apache-2.0
 *
 * ringcache.h: libringcache, the compute-side client. It reads S3 objects
 * through a cluster of cache nodes (ringcached) into a RAM page cache, so the
 * threads of a query read what they need from several nodes at once:
 *
 *   rc_config cfg;  rc_config_init(&cfg);  rc_config_from_env(&cfg, err, n);
 *   rc_client *c;   rc_create(&c, &cfg, err, n);
 *   rc_handle *h;   rc_open(c, "bucket", "key", &h, err, n); HEAD, pinned version
 *   rc_pread(h, buf, len, off);                            any thread, any time
 *   rc_close(&h);   rc_destroy(&c);
 *
 * A handle is pinned to the (version, size) a HEAD saw (kept in a metadata
 * cache for metadata_ttl_ms; a write-through rc_put() replaces the entry at
 * once, so a writer reads its own write). Every byte a handle returns is of
 * that version: when a node or S3 says the object changed, the read and every
 * later one on the handle fail with -ESTALE, and the caller re-opens.
 *
 * Reads: rc_pread() cuts the range into blocks (one size per cluster, from the
 * nodes' HELLO), copies what the page cache has and sends the rest to the
 * blocks' owners on the ring, pipelined, several nodes at once. A node that
 * fails is marked down for down_ms (then probed by the next request) and its
 * blocks go to the next owner; with every owner down the block is read from S3
 * directly (ranged GET with If-Match, ETag compared), unless cache_only. A
 * node that answers that its own S3 access failed (its endpoint or
 * credentials wrong, or S3 down for it) serves what it has, and the blocks it
 * could not fill are read from S3 directly, unless cache_only. A node that has
 * sent nothing for hedge_ms on a connection with a request outstanding, and
 * then does not answer a PING within 2 x hedge_ms (stopped, stalled; a node
 * filling from a slow S3 answers it), is marked down and the request also
 * goes to the next owner (S3 directly when none is left); the first answer
 * wins (hedging; same pinned version, same bytes).
 * The first failure of each node is told to node_warn, once, in a sentence.
 * Sequential readers get read-ahead (a window of blocks, at low priority in the
 * page cache); scattered reads get none, and a small scattered read of a block
 * that is not cached fetches only its range (not the whole block).
 *
 * Threads: one rc_client owns one I/O thread running an event loop (the
 * cluster connections, the S3 client, the membership source). Reader threads
 * hit the page cache directly and hand misses to the I/O thread (a queue and an
 * eventfd), then wait for their blocks (polling for up to spin_us when the
 * read is small, then on a condition variable). A small scattered read (a
 * range of one or two blocks, not cached) is sent by the reader itself on a
 * blocking connection of its own to the owner (small_reads_inline), which
 * saves the two hand-offs; anything but a clean answer takes the I/O
 * thread's path, which knows failover, S3 and "version changed".
 *
 * Why this shape: hits never cross threads (a page cache hit is a shard lock
 * and a memcpy on the reader's own thread); one loop multiplexes every node
 * connection and the S3 client, so a reader's misses of many blocks go out
 * together, pipelined to several nodes over a pool of connections each. What
 * that measured against one S3 stream and nginx's slice cache is in
 * bench/README.md ("The client's shape").
 *
 * Thread-safety: rc_open, rc_pread, rc_close, rc_put*, rc_warm, rc_list,
 * rc_node_stats, rc_stats_get and the accessors may be called from any number
 * of threads at once (up to max_threads readers are what the read-ahead bound
 * assumes; more work, with less read-ahead room each). rc_create and
 * rc_destroy must not race with any other call on the same client, and every
 * handle must be closed before rc_destroy. One handle may be used by several
 * threads at once. Callbacks run on the thread that made the call, except
 * rc_put_stream's read_at, which the I/O thread calls while it sends, and
 * node_warn (the I/O thread or a reader's).
 *
 * Ownership: the caller owns the rc_client and every rc_handle it opened
 * (free with rc_destroy / rc_close); strings passed in are borrowed (copied
 * when kept). Errors are -errno; functions that take an err buffer put a
 * sentence there naming the object and the cause.
 */
#ifndef RINGCACHE_H
#define RINGCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "s3.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RC_VERSION_MAX 130  /* a normalised ETag, NUL included */
#define RC_ERR_MAX     2048 /* enough for every error sentence */

typedef struct rc_client rc_client;
typedef struct rc_handle rc_handle;

typedef struct rc_config {
    /* Cache members: "id=host:port,...", "host:port,...", file:PATH or
     * dns:NAME[:PORT] (SRV of a headless Service; a fully qualified name).
     * NULL or "": no cache tier, S3 only (rc_config_from_env fills it from
     * RINGCACHE_CACHE). Borrowed until rc_create returns. */
    const char *members;
    const char *token;         /* tenant token (RINGCACHE_TOKEN); NULL: none */
    s3_config s3;              /* S3 settings for HEAD/GET/PUT fallbacks and rc_list */
    size_t page_cache_bytes;   /* RAM for pages; default 512 MiB */
    uint32_t block_size;       /* 0 (default): the nodes' (HELLO); 1 MiB if none answers */
    int max_threads;           /* reader threads sharing the client; default: cores */
    int readahead_blocks;      /* window for sequential readers; default 16; 0: off.
                                   A stream that still waits for blocks doubles its
                                   window, up to 4x, within page cache pages /
                                   (4 x max_threads) */
    int metadata_ttl_ms;       /* how long a HEAD is trusted; default 5000 */
    int timeout_ms;            /* a node request with no answer fails; default 30000
                                   (longer than the nodes' fill deadline, 20 s) */
    int connect_timeout_ms;    /* default 2000 */
    int down_ms;               /* a failed node is skipped this long; default 5000 */
    int max_inflight;          /* block requests the I/O thread keeps in flight; default 96 */
    int connections_per_node;  /* kept-alive pipelined connections to each node, used in
                                   turn (a node serves each on one of its worker threads);
                                   default 4, at most 16 */
    uint32_t partial_read_max; /* a scattered read needing at most this many bytes of an
                                   uncached block fetches only them (no page); default
                                   block size / 4; 0: always whole blocks */
    int spin_us;               /* a reader waiting for a small read (<= 256 KiB to fetch)
                                   polls for it this long, yielding its core, before it
                                   sleeps: one wake-up less on a round trip of tens of
                                   microseconds; default 200; 0: sleep at once. It polls
                                   only while small reads have been answered within this
                                   (behind a slower link it sleeps at once) */
    bool small_reads_inline;   /* a small scattered read (one block's range of at most
                                   partial_read_max) is sent by the reader's own thread
                                   over a blocking connection to the owner (kept per node,
                                   up to 8 idle), not handed to the I/O thread and back;
                                   anything but a clean answer goes the I/O thread's way.
                                   Default true; not with tls */
    bool cache_only;           /* this process never calls S3 itself: HEAD, GET, PUT and
                                   rc_list only through the nodes (which fill from S3 as
                                   usual); when no node can answer, or a node's own S3
                                   access failed, the call fails (-EHOSTDOWN, -EREMOTEIO)
                                   instead of asking S3 (a compute node with no S3
                                   credentials or route, or no direct S3 cost allowed) */
    bool no_fill;              /* ask the nodes not to fill from S3: a block they do not
                                   have is read from S3 directly, or fails with -ENODATA
                                   under cache_only (checking that a warm holds an object,
                                   or a read that must not cost the nodes' S3 anything) */
    int hedge_ms;              /* a request to a node that has sent nothing for this
                                   long, and then does not answer a PING within twice as
                                   long, is also sent to the next owner (and the node is
                                   marked down): a stopped node costs about 3x this, not
                                   timeout_ms; default 500 (RINGCACHE_HEDGE_MS); 0: off.
                                   A small read on the reader's own connection gives up
                                   after this much silence and takes the I/O thread's way */
    bool prefault;             /* back the whole page cache with memory in rc_create
                                   (RINGCACHE_PREFAULT=1), as memcached -L does: a
                                   long-lived compute node pays the first-touch page
                                   faults at start-up instead of in its first reads
                                   (costly on VMs whose memory the host maps lazily).
                                   rc_create takes longer; RSS is the page cache at once */
    bool cache_scans;          /* RC_READ_SCAN reads keep what they fetch in the page
                                   cache (as pages read once, the first to go), so a
                                   long-lived process answers the same scan again from
                                   RAM (a compute server: RINGCACHE_CACHE_SCANS=1). Off
                                   by default: a scan's whole blocks then land straight
                                   in the caller's buffer, one copy less per byte, and
                                   nothing of it is kept */
    bool huge_pages;           /* back the page cache with transparent huge pages where
                                   the kernel allows (RINGCACHE_HUGE_PAGES=1): one page
                                   fault per 2 MiB instead of per 4 KiB, fewer TLB
                                   misses (hits copy 15-30% faster). On with prefault
                                   (paid once, in rc_create); otherwise off by default: on
                                   VMs that back their memory lazily a huge page's first
                                   touch costs several times the CPU of 512 small ones */
    /* TLS to the cache nodes (ringcached --tls-cert): every node's certificate is
     * verified against tls_ca. A member from a static list is verified by the host
     * it is given as (an IP against the certificate's IP addresses, a name against
     * its DNS names); a member found through dns: by its SRV target's name (e.g.
     * ringcache-0.ringcache-headless.ns.svc.cluster.local), which is what a
     * certificate shared by the pods can carry (*.ringcache-headless.ns.svc...),
     * while the connection goes to the target's address. A node that fails the
     * handshake is down for the client; with cache_only the error of rc_open
     * names the failure (e.g. "certificate verify failed: hostname mismatch"). */
    bool tls;           /* RINGCACHE_CACHE_TLS=1 */
    const char *tls_ca; /* PEM file of the CAs that signed the nodes' certificates
                                   (RINGCACHE_CACHE_TLS_CA); NULL: the system's. Needs tls.
                                   Borrowed until rc_create returns */
    /* dns: members: the DNS server to ask ("IP" or "IP:PORT", e.g.
     * "10.96.0.10:53"; RINGCACHE_DNS_SERVER) instead of /etc/resolv.conf's, for a
     * resolver on another port or a cluster DNS that the compute node does not use.
     * NULL: /etc/resolv.conf. Ignored by static lists and files. Borrowed until
     * rc_create returns. */
    const char *dns_server;
    unsigned dns_interval_ms; /* dns: how often the name is re-resolved (a change
                                   rebuilds the ring: rc_members follows); 0: 10000 */
    /* Told once per node, the first time it fails or its S3 does: a sentence
     * naming the node (id and address) and why (connection refused, timed out,
     * TLS, token refused, closed, sent nothing for hedge_ms, its own S3 access
     * failed) and where its blocks go instead. Called on the I/O thread or a
     * reader's thread, never with a lock of the client held; must be quick and
     * thread-safe (a CLI prints it to stderr). NULL: not told. */
    void (*node_warn)(const char *sentence, void *arg);
    void *node_warn_arg;
} rc_config;

/* Defaults, no environment (s3 gets s3_config_init). */
void rc_config_init(rc_config *cfg);

/* Applies the environment: RINGCACHE_CACHE (members, when cfg->members is
 * NULL), RINGCACHE_TOKEN (when cfg->token is NULL), RINGCACHE_CACHE_TLS (1,
 * true, yes, on or 0, false, no, off: sets tls), RINGCACHE_CACHE_TLS_CA (when
 * cfg->tls_ca is NULL), RINGCACHE_DNS_SERVER (when cfg->dns_server is NULL),
 * RINGCACHE_HEDGE_MS (milliseconds, 0: off), and the AWS variables and files
 * into cfg->s3 (s3_config_from_env). The strings point into the environment.
 * 0 or -EINVAL with a sentence in err. */
int rc_config_from_env(rc_config *cfg, char *err, size_t errlen);

/* The read-ahead window rc_create will use, in blocks of block_size (or 1 MiB
 * when 0): min(readahead_blocks, page cache pages / (4 x max_threads)). Pure. */
int rc_readahead_window(const rc_config *cfg, uint32_t block_size);

/* Starts the I/O thread, the membership source and the S3 client, and says
 * HELLO to the nodes (waiting up to the connect timeout). Nodes that do not
 * answer are not an error (reads go to S3 until a probe finds one), a token
 * every node refuses is (-EACCES). -EINVAL for a bad config (a sentence in err
 * names the field: also a CA file that cannot be loaded, tls_ca without tls, a
 * dns_server that is not an address), -ENOMEM. */
int rc_create(rc_client **out, const rc_config *cfg, char *err, size_t errlen);

/* Stops the I/O thread (requests in flight fail with -ECANCELED) and frees
 * everything. Every handle must be closed. Accepts NULL; sets *c to NULL. */
void rc_destroy(rc_client **c);

/* Opens bucket/key: the version and size from the metadata cache, or a HEAD
 * through a node (S3 directly when every node is down). 0, -ENOENT, -EACCES,
 * -EHOSTDOWN (cache_only and no node answered), -EREMOTEIO (cache_only and the
 * node's own S3 access failed), -EIO (err has the sentence; err may be NULL). */
int rc_open(rc_client *c, const char *bucket, const char *key, rc_handle **out, char *err,
            size_t errlen);

/* rc_open of an object whose size and version the caller knows (an
 * immutable object named by a manifest, with the version a write-through PUT
 * gave it): no HEAD. An empty version: rc_open. Same results. */
int rc_open_known(rc_client *c, const char *bucket, const char *key, uint64_t size,
                  const char *version, rc_handle **out, char *err, size_t errlen);

/* Frees a handle (read-ahead in flight for it finishes on its own). Accepts
 * NULL; sets *h to NULL. */
void rc_close(rc_handle **h);

uint64_t rc_size(const rc_handle *h);
const char *rc_version(const rc_handle *h);

/* Reads up to len bytes at off into buf: the bytes read (short only at the
 * end of the object, 0 at or past it), or -ESTALE (the object changed: this
 * handle is dead, re-open), -EHOSTDOWN (cache_only and no node has the
 * block's owner up), -EREMOTEIO (cache_only and the owner's own S3 access
 * failed), -ENODATA (no_fill, cache_only and the block is not cached),
 * -ENOENT (deleted since the open), -EACCES, -EIO (S3 failed), -ECANCELED
 * (rc_destroy). Blocks the calling thread until done. */
int64_t rc_pread(rc_handle *h, void *buf, size_t len, uint64_t off);

/* rc_pread with flags. RC_READ_SCAN: the caller reads these bytes once and
 * schedules its own prefetch (a scan engine reading a column chunk): no
 * read-ahead; blocks the page cache has are copied from it, the others are
 * fetched straight into buf (no page: nothing of the hot set is displaced,
 * and each byte is copied once, from the socket), and the partial first and
 * last blocks fetch only the bytes asked for, not the whole block. With
 * rc_config.cache_scans the blocks are fetched into pages read once instead,
 * and kept. */
#define RC_READ_SCAN 1u
int64_t rc_pread_flags(rc_handle *h, void *buf, size_t len, uint64_t off, unsigned flags);

/* The error sentence of the last failed rc_pread on this handle (any thread;
 * a copy into out). */
void rc_last_error(rc_handle *h, char *out, size_t cap);

/* Write-through PUT of size bytes that read_at produces (called on the I/O
 * thread, maybe twice for a byte range when a node fails and S3 takes over;
 * returns bytes placed in buf, < 0 to abort). Through a node; when every node
 * is down, straight to S3 (the bytes are gathered in RAM: at most 5 GiB).
 * The metadata cache gets the new version at once. version_out
 * (RC_VERSION_MAX, may be NULL) receives it. 0 or -errno (sentence in err). */
typedef int64_t (*rc_read_at_fn)(void *arg, void *buf, size_t len, uint64_t off);
int rc_put_stream(rc_client *c, const char *bucket, const char *key, uint64_t size,
                  rc_read_at_fn read_at, void *arg, char *version_out, char *err, size_t errlen);
/* The same from a buffer (borrowed for the call). */
int rc_put(rc_client *c, const char *bucket, const char *key, const void *data, size_t len,
           char *version_out, char *err, size_t errlen);

/* Loads bucket/key into the cache tier (protocol WARM to each block's owner);
 * nothing comes to the client. With wait, returns only when every block is on
 * its node (a one-byte GET per block joins the fill), telling progress (may be
 * NULL; on this thread, every 200 ms and at the end) the blocks done. Returns
 * the object's block count or -errno (sentence in err). */
typedef void (*rc_progress_fn)(uint64_t done, uint64_t total, void *arg);
int64_t rc_warm(rc_client *c, const char *bucket, const char *key, bool wait,
                rc_progress_fn progress, void *arg, char *err, size_t errlen);

/* Lists bucket under a prefix, or a glob (s3_glob_create's grammar), from S3
 * (the cache tier has no listing). fn as in s3_sync_list. 0 or -errno;
 * -EHOSTDOWN with cache_only (a listing needs S3 itself). */
int rc_list(rc_client *c, const char *bucket, const char *pattern, s3_object_fn fn, void *arg,
            char *err, size_t errlen);

/* Every node's counters (Prometheus text): fn once per member (text NULL and
 * code < 0 when unreachable), on the calling thread. 0, or the number of
 * nodes that failed. */
typedef void (*rc_node_text_fn)(const char *member_id, const char *addr, int code, const char *text,
                                void *arg);
int rc_node_stats(rc_client *c, rc_node_text_fn fn, void *arg);

typedef struct rc_stats {
    uint64_t preads;
    uint64_t hits;               /* blocks served from the page cache */
    uint64_t misses;             /* blocks a read had to fetch or wait for */
    uint64_t stalls;             /* preads that had to start a fetch themselves */
    uint64_t waits;              /* blocks a read waited for (another's or read-ahead fill) */
    uint64_t readahead_fetches;  /* blocks fetched ahead of use */
    uint64_t partial_fetches;    /* scattered reads and RC_READ_SCAN edges fetched as a
                                   range, no page */
    uint64_t node_blocks;        /* block requests answered by nodes */
    uint64_t inline_reads;       /* of them, small reads done on the reader's thread */
    uint64_t failovers;          /* blocks asked of a next owner after a node failed */
    uint64_t hedges;             /* requests also sent to a next owner because the node
                                   had sent nothing for hedge_ms nor answered a PING, plus
                                   small reads given up on the reader's connection after
                                   hedge_ms of silence */
    uint64_t hedge_wins;         /* of them, answered by the next owner first */
    uint64_t fallbacks;          /* block reads that went to S3 directly */
    uint64_t upstream_fallbacks; /* of them, because the node's own S3 access failed */
    uint64_t head_fallbacks;     /* HEADs and PUTs that went to S3 directly */
    uint64_t stale;              /* reads that found the version changed */
    uint64_t meta_hits;          /* rc_open served by the metadata cache */
    uint64_t bytes;              /* bytes returned by rc_pread */
    uint64_t node_bytes;         /* bytes of block reads the cache nodes answered */
    uint64_t s3_bytes;           /* bytes of block reads from S3 directly (fallbacks) */
    uint64_t scan_direct;        /* whole blocks of RC_READ_SCAN reads fetched straight
                                   into the caller's buffer (no page) */
    uint64_t repeat_fills;       /* pages filled because a later query read the same
                                   small part of the block again (cache_scans) */
} rc_stats;

void rc_stats_get(rc_client *c, rc_stats *out);

/* Tells the client that a new query (or statement) starts. With
 * cache_scans, the small part of a block that a scan reads is fetched alone;
 * when a later query reads the same bytes again, that read fills the whole
 * block's page instead, and the page answers from then on (a repeat within
 * one query is no reason: one query's granules may share a block without
 * being wanted again). Without these calls no small part has its block kept.
 * Thread-safe. */
void rc_query_begin(rc_client *c);

/* Block size in use, tenant the nodes named ("" when none answered), the
 * effective read-ahead window, and members of the ring now (a dns: source's
 * re-resolution that changes the ring changes it). */
uint32_t rc_block_size(const rc_client *c);
const char *rc_tenant(const rc_client *c);
int rc_window(const rc_client *c);
size_t rc_members(rc_client *c);

#ifdef __cplusplus
}
#endif

#endif /* RINGCACHE_H */
