/* SPDX-License-Identifier: Apache-2.0
 *
 * cluster.h: reading and writing through a cluster of cache nodes on one event
 * loop. The members (a static list for now) form the ring (ring.h); a read of
 * a byte range is cut into blocks, each block asked of its owner on the ring
 * over a pipelined connection (cacheconn.h), several nodes at once; a node that
 * refuses, drops the connection or misses the deadline is marked down for a
 * while and the block is asked of the next owner. Block keys (and so placement)
 * include the tenant the nodes named in HELLO, exactly as the nodes compute
 * them.
 *
 * Thread-safety: an rcl_cluster belongs to the loop it was created on; call it
 * from that loop's thread only. Callbacks run on the loop, never from inside
 * the submitting call.
 */
#ifndef RINGCACHE_CLUSTER_H
#define RINGCACHE_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cacheconn.h"

struct event_base;

typedef struct rcl_cluster rcl_cluster;

typedef struct rcl_config {
    const char *members;        /* "id=host:port,..." or "host:port,..." */
    const char *token;          /* tenant token, NULL: none */
    uint32_t block_size;        /* 0: what the first node says in HELLO */
    int parallel;               /* block requests in flight per read; 0: 16 */
    int connect_timeout_ms;     /* 0: 2000 */
    int request_timeout_ms;     /* 0: 30000 (longer than the nodes' fill deadline) */
    int down_ms;                /* how long a failed node is skipped; 0: 5000 */
    bool cache_only;            /* ask nodes not to fill from S3 */
} rcl_config;

typedef struct rcl_object {
    const char *bucket;
    const char *key;
    const char *version;        /* normalised ETag the read is pinned to */
    uint64_t size;
} rcl_object;

typedef struct rcl_stats {
    uint64_t blocks;            /* block requests answered */
    uint64_t failovers;         /* blocks asked of a next owner after a failure */
    uint64_t node_failures;     /* connections that failed */
    uint64_t from_s3;           /* blocks the nodes filled from S3 */
    uint64_t bytes;
} rcl_stats;

/* Parses the members and builds the ring. Connections open lazily. 0, or
 * -EINVAL with a sentence in err. */
int rcl_create(rcl_cluster **out, struct event_base *base, const rcl_config *cfg, char *err,
               size_t errlen);
/* Fails what is in flight with -ECANCELED (callbacks run before it returns). */
void rcl_destroy(rcl_cluster **c);

/* Connects to every member and calls done once one has answered HELLO (code
 * 0) or all have failed (code < 0, msg says why). */
typedef void (*rcl_done_fn)(int code, const char *msg, void *arg);
int rcl_connect(rcl_cluster *c, rcl_done_fn done, void *arg);

/* The tenant the nodes named, and the block size (valid after rcl_connect). */
const char *rcl_tenant(const rcl_cluster *c);
uint32_t rcl_block_size(const rcl_cluster *c);

/* HEAD through a live node: size and version. */
typedef void (*rcl_head_fn)(int code, const char *msg, uint64_t size, const char *version,
                            void *arg);
int rcl_head(rcl_cluster *c, const char *bucket, const char *key, rcl_head_fn done, void *arg);

/* Read [off, off+len) of obj into buf. progress (may be NULL) is told the bytes
 * done. code: 0, -ESTALE (the object is not the version pinned), -ENOENT,
 * -EACCES, -EIO (every owner of a block failed), -ECANCELED. */
typedef void (*rcl_progress_fn)(uint64_t done, uint64_t total, void *arg);
int rcl_read(rcl_cluster *c, const rcl_object *obj, uint64_t off, uint64_t len, void *buf,
             rcl_progress_fn progress, rcl_done_fn done, void *arg);

/* Write-through PUT through a live node; version is S3's new ETag. */
typedef void (*rcl_put_fn)(int code, const char *msg, const char *version, void *arg);
int rcl_put(rcl_cluster *c, const char *bucket, const char *key, uint64_t size,
            cc_read_fn read_fn, void *read_arg, rcl_put_fn done, void *arg);

/* STATS of every member: fn once per member (text NULL when it failed), then
 * done. */
typedef void (*rcl_node_text_fn)(const char *member_id, const char *addr, int code,
                                 const char *text, void *arg);
int rcl_stats_all(rcl_cluster *c, rcl_node_text_fn fn, rcl_done_fn done, void *arg);

void rcl_stats_get(const rcl_cluster *c, rcl_stats *out);

#endif /* RINGCACHE_CLUSTER_H */
