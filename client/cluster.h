/* SPDX-License-Identifier: Apache-2.0
 *
 * cluster.h: reading and writing through a cluster of cache nodes on one event
 * loop. The members come from a membership source (membership.h: a static
 * list, file:PATH or dns:NAME[:PORT], re-resolved on its interval) and form the
 * ring (ring.h); a read of a byte range is cut into blocks, each block asked of
 * its owner on the ring over one of a pool of pipelined connections to that
 * node (cacheconn.h; conns_per_node, used in turn), several
 * nodes at once; a node that refuses, drops the connection or misses the
 * deadline is marked down for down_ms and the block is asked of the next owner.
 * After down_ms the next request to the node is the probe: a new connection,
 * marked down again if it fails. A node marked down is skipped even where a
 * connection to it is still open. Block keys (and so placement) include the
 * tenant the nodes named in HELLO, exactly as the nodes compute them.
 *
 * Hedging: a block request (or a HEAD) to a node that has sent nothing on
 * that connection (nor on any other of ours) for hedge_ms, and that then does
 * not answer a PING (on a connection of its own) within 2 x hedge_ms, is also
 * sent to the next
 * owner (S3 directly when there is none: -EHOSTDOWN), the node is marked
 * down, and the first answer wins (the other is cancelled: a CANCEL frame,
 * and none of its bytes reach the buffer after that). A stopped or stalled
 * node then costs about 3 x hedge_ms, not the request timeout. Both requests
 * name the same pinned version and size, so either answer has the same
 * bytes. A node that keeps sending (other answers, chunks of this one) or
 * answers the PING is alive and is not hedged, however slow its fill from
 * S3: a slow fill is no failure.
 *
 * When the ring changes, members that stay keep their connections; members
 * that leave keep theirs until the cluster is destroyed, so requests in flight
 * on them finish normally.
 *
 * Thread-safety: an rcl_cluster belongs to the loop it was created on; call it
 * from that loop's thread only, except rcl_route (any thread). Callbacks run
 * on the loop, never from inside the submitting call.
 */
#ifndef RINGCACHE_CLUSTER_H
#define RINGCACHE_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cacheconn.h"

struct event_base;
struct rcl_node;

typedef struct rcl_cluster rcl_cluster;

/* What made a node worth telling the user about (rcl_config.on_node). */
typedef enum rcl_node_event {
    RCL_NODE_DOWN = 1, /* refused, timed out, closed, TLS or token refused */
    RCL_NODE_SLOW,     /* sent nothing for hedge_ms: requests hedged */
    RCL_NODE_UPSTREAM, /* answered that its own S3 access failed */
} rcl_node_event;

/* The first such event of each node (once per node for the cluster's life):
 * `why` says what happened in a sentence (the node's or the connection's
 * words). On the loop, or on the thread that called rcl_node_report. */
typedef void (*rcl_node_fn)(const char *member_id, const char *addr, rcl_node_event what,
                            const char *why, void *arg);

/* A membership change was adopted: `members` is the new ring's size. On the
 * loop, never from inside rcl_create. */
typedef void (*rcl_ring_fn)(size_t members, void *arg);

#define RCL_DEFAULT_CONNS 4

typedef struct rcl_config {
    const char *members;      /* "id=host:port,...", "host:port,...", file:PATH, dns:NAME[:PORT] */
    const char *token;        /* tenant token, NULL: none */
    uint32_t block_size;      /* 0: what the first node says in HELLO */
    int parallel;             /* block requests in flight per read; 0: 16 */
    int conns_per_node;       /* kept-alive pipelined connections to each node, used
                                   in turn; 0: RCL_DEFAULT_CONNS; at most 16 */
    int connect_timeout_ms;   /* 0: 2000 */
    int request_timeout_ms;   /* 0: 30000 (longer than the nodes' fill deadline) */
    int down_ms;              /* how long a failed node is skipped; 0: 5000 */
    int hedge_ms;             /* a request to a node silent this long, which then
                                   does not answer a PING within twice as long, is also
                                   sent to the next owner; 0: never */
    bool no_fill;             /* ask nodes not to fill from S3 (RCP_GET_CACHE_ONLY): a
                                   block they do not have answers -ENODATA */
    bool tls;                 /* TLS to the nodes; a member found through dns: must
                                   carry its SRV target's name (the name it was resolved
                                   from) in its certificate, any other its address */
    const char *tls_ca;       /* PEM CAs for the nodes' certificates (borrowed for the
                                   cluster's life); NULL: the system's. Checked at create */
    unsigned dns_interval_ms; /* dns: re-resolution interval; 0: membership's default */
    struct evdns_base *dns;   /* dns: resolver (borrowed); NULL: /etc/resolv.conf */
    const char *dns_server;   /* dns: with dns NULL, the one DNS server to ask, "IP" or
                                   "IP:PORT" (borrowed for rcl_create); NULL: resolv.conf */
    rcl_ring_fn on_ring;      /* may be NULL */
    void *on_ring_arg;
    rcl_node_fn on_node; /* may be NULL */
    void *on_node_arg;
} rcl_config;

typedef struct rcl_object {
    const char *bucket;
    const char *key;
    const char *version; /* normalised ETag the read is pinned to */
    uint64_t size;
} rcl_object;

typedef struct rcl_stats {
    uint64_t blocks;        /* block requests answered */
    uint64_t failovers;     /* blocks asked of a next owner after a failure */
    uint64_t node_failures; /* connections that failed */
    uint64_t from_s3;       /* blocks the nodes filled from S3 */
    uint64_t bytes;
    uint64_t ring_changes;      /* rings adopted after the first */
    uint64_t hedges;            /* requests also sent to a next owner (hedge_ms) */
    uint64_t hedge_wins;        /* of them, answered by the next owner first */
    uint64_t upstream_failures; /* answers that the node's own S3 access failed */
} rcl_stats;

/* Creates the membership source and the connections' table. A static list or
 * file gives the ring at once; dns: resolves in the background (rcl_connect
 * waits for it). Connections open lazily. 0, or -EINVAL (and others of
 * membership_create) with a sentence in err. */
int rcl_create(rcl_cluster **out, struct event_base *base, const rcl_config *cfg, char *err,
               size_t errlen);
/* Fails what is in flight with -ECANCELED (callbacks run before it returns). */
void rcl_destroy(rcl_cluster **c);

/* Connects to every member and calls done once one has answered HELLO (code
 * 0) or all have failed (code < 0, msg says why: -EHOSTDOWN no node answered,
 * -EACCES a node refused the token). With a dns: source and no ring yet it
 * waits for the first resolution (up to max(connect timeout, 5 s)). */
typedef void (*rcl_done_fn)(int code, const char *msg, void *arg);
int rcl_connect(rcl_cluster *c, rcl_done_fn done, void *arg);

/* The tenant the nodes named, and the block size (valid after rcl_connect). */
const char *rcl_tenant(const rcl_cluster *c);
uint32_t rcl_block_size(const rcl_cluster *c);
/* Members of the current ring (0 before a dns: source resolved). */
size_t rcl_member_count(const rcl_cluster *c);
/* Members of the current ring not marked down right now. */
size_t rcl_members_up(const rcl_cluster *c);
/* Forget every mark: the next request to each node is a probe. */
void rcl_reset_down(rcl_cluster *c);

/* HEAD through a live node: size and version. code -EHOSTDOWN when no node
 * could answer, -EREMOTEIO when the node could not reach its S3 (either way:
 * ask S3 directly), else as rcl_read. Hedged like reads. */
typedef void (*rcl_head_fn)(int code, const char *msg, uint64_t size, const char *version,
                            void *arg);
int rcl_head(rcl_cluster *c, const char *bucket, const char *key, rcl_head_fn done, void *arg);

/* Read [off, off+len) of obj into buf. progress (may be NULL) is told the bytes
 * done. code: 0, -ESTALE (the object is not the version pinned), -ENOENT,
 * -EACCES, -ENODATA (no_fill and a block is not cached), -EHOSTDOWN (every
 * owner of a block failed or is marked down: read S3 directly), -EREMOTEIO
 * (the owner could not read the block from its own S3: read S3 directly; msg
 * names the node and S3's answer), -EIO (the node failed otherwise),
 * -ECANCELED. */
/* Where block b of obj goes now: its first owner on the ring that is not
 * marked down (the same choice rcl_read makes first). Any thread: for a
 * caller with a connection of its own (rc_client's small reads). 0 and *out;
 * -EHOSTDOWN when every owner is down; -ENOTCONN before the first ring and
 * HELLO. */
typedef struct rcl_target {
    char id[128];
    char host[300];
    int port;
    struct rcl_node *node; /* for rcl_node_report */
} rcl_target;
int rcl_route(rcl_cluster *c, const rcl_object *obj, uint64_t b, rcl_target *out);

/* A caller with a connection of its own (rcl_route's) saw the node fail:
 * RCL_NODE_DOWN and RCL_NODE_SLOW mark it down for down_ms, every kind is
 * told to on_node (the first time). Any thread. */
void rcl_node_report(rcl_cluster *c, const rcl_target *t, rcl_node_event what, const char *why);

typedef void (*rcl_progress_fn)(uint64_t done, uint64_t total, void *arg);
int rcl_read(rcl_cluster *c, const rcl_object *obj, uint64_t off, uint64_t len, void *buf,
             rcl_progress_fn progress, rcl_done_fn done, void *arg);

/* Write-through PUT through a live node; version is S3's new ETag. -EHOSTDOWN
 * (returned, or in done when the node failed before answering) means no node
 * took it: S3 directly is the way. */
typedef void (*rcl_put_fn)(int code, const char *msg, const char *version, void *arg);
int rcl_put(rcl_cluster *c, const char *bucket, const char *key, uint64_t size, cc_read_fn read_fn,
            void *read_arg, rcl_put_fn done, void *arg);

/* WARM: asks each block's owner (the next owner when it is down) to fill the
 * blocks of obj from S3 in the background; no data comes back. done gets the
 * number of blocks the nodes accepted (a node skips those it has) or -errno
 * with a message (-EHOSTDOWN: some block found no live owner). */
typedef void (*rcl_warm_fn)(int code, const char *msg, uint64_t started, void *arg);
int rcl_warm(rcl_cluster *c, const rcl_object *obj, rcl_warm_fn done, void *arg);

/* STATS of every member: fn once per member (text NULL when it failed), then
 * done. */
typedef void (*rcl_node_text_fn)(const char *member_id, const char *addr, int code,
                                 const char *text, void *arg);
int rcl_stats_all(rcl_cluster *c, rcl_node_text_fn fn, rcl_done_fn done, void *arg);

void rcl_stats_get(const rcl_cluster *c, rcl_stats *out);

#endif /* RINGCACHE_CLUSTER_H */
