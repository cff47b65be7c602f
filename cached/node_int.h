/* SPDX-License-Identifier: Apache-2.0
 *
 * node_int.h: what the files of ringcached share and nothing else uses: the
 * node and worker structs, buffers, mailbox messages, metric indices, and
 * the entry points between the files:
 *
 *   node.c          the lifecycle: module setups and teardowns, run, stop
 *   node_conf.c     the options, the log
 *   node_metrics.c  the metric tables, the process metrics
 *   node_worker.c   worker threads: loops, listeners, mailboxes, drain
 *   node_conn.c     the ringcache protocol's front end (frames only)
 *   node_req.c      the request lifecycle (node_req.h), write-through placement
 *   node_fill.c     the fill table (node_fill.h)
 *   node_upload.c   one object streamed to S3 (node_upload.h)
 *
 * Threads: each worker thread owns its event loop, its connections, its
 * requests, its store worker, its S3 clients and its peer connections;
 * nothing of a worker is touched by another thread except its mailbox (mutex
 * + an event activated across threads). The fill table is shared (one
 * mutex). Counters go through metrics.h (per-thread slots).
 */
#ifndef RINGCACHE_NODE_INT_H
#define RINGCACHE_NODE_INT_H

#include "admin.h"
#include "blockkey.h"
#include "blockstore.h"
#include "cacheconn.h"
#include "dlist.h"
#include "membership.h"
#include "metrics.h"
#include "node.h"
#include "node_fill.h"
#include "node_req.h"
#include "proto.h"
#include "s3.h"
#include "tenants.h"

#include <pthread.h>
#include <stdatomic.h>

struct event_base;
struct event;
struct evconnlistener;
struct bufferevent;

typedef struct node_conn node_conn;

/* A reference-counted buffer (fill data, staged blocks). */
typedef struct node_buf {
    atomic_int ref;
    size_t len;
    uint8_t data[];
} node_buf;
node_buf *node_buf_new(size_t len);
void node_buf_ref(node_buf *b);
void node_buf_unref(node_buf *b);

/* Metric indices (node_metrics.c registers the table). */
enum node_metric {
    NM_REQUESTS,
    NM_GET,
    NM_HITS,
    NM_MISSES,
    NM_FILLS,
    NM_FILL_WAITS,
    NM_FILL_FROM_BUFFER,
    NM_S3_GET_BYTES,
    NM_S3_ERRORS,
    NM_VERSION_CHANGED,
    NM_BYTES_SERVED,
    NM_CONNECTIONS,
    NM_CONNECTIONS_OPEN,
    NM_ERRORS_SENT,
    NM_PROTOCOL_ERRORS,
    NM_CANCELS,
    NM_FORBIDDEN,
    NM_PUTS,
    NM_PUT_BYTES,
    NM_PUT_BLOCKS_SENT,
    NM_PUT_BLOCKS_RECEIVED,
    NM_WARM_BLOCKS,
    NM_FILL_TIMEOUTS,
    NM_LATENCY,
    NM_CONN_REFUSED,
    NM_ACCEPT_ERRORS,
    NM_CONN_TIMEOUTS,
    NM__COUNT
};

/* A message posted to a worker's mailbox from another thread. */
typedef struct node_msg node_msg;
struct node_msg {
    node_msg *next;
    uint64_t req_serial; /* the request's on the worker (node_req.h) */
    int rcp_code;        /* 0: data */
    char message[256];
    node_buf *buf;     /* a reference, or NULL */
    uint8_t source;    /* RCP_SRC_S3: this request's own fill; RCP_SRC_FILL_WAIT:
                                 another request's fill or its buffer */
    uint32_t off, len; /* the slice of buf to send */
};

struct node_worker {
    node *n;
    unsigned idx;
    pthread_t thread;
    struct event_base *base;
    struct evconnlistener *listener;
    bs_worker *bs;
    s3_client *s3;         /* with the node's credentials */
    s3_client **tenant_s3; /* one per tenant with its own credentials */
    struct event *mailbox_ev;
    pthread_mutex_t mb_lock;
    node_msg *mb_head, *mb_tail;
    dlist conns;              /* open connections of this worker (node_conn.c) */
    uint64_t next_serial;     /* of connections */
    uint64_t next_req_serial; /* of requests (node_req.h) */
    node_req **waiting;       /* requests waiting for a fill, by serial (node_req.c) */
    cc_conn **peers;          /* per ring member index: connection for PUT_BLOCK */
    size_t n_peers;
    struct event *stop_ev;
    struct event *drain_timer; /* after SIGTERM: polls until idle or the deadline */
    int64_t drain_deadline_ms;
    struct event *sweep_timer;   /* closes connections past the frame or idle timeout */
    struct event *accept_timer;  /* accepting again after running out of descriptors */
    bool accept_paused;          /* out of descriptors: not accepting */
    struct httpd_server *s3api;  /* the S3 API's server on this loop, or NULL */
    struct s3a_verifier *s3auth; /* its signature checks (with tenants) */
    bool s3api_drained;          /* after SIGTERM: its connections are gone */
    uint64_t s3api_seq;          /* request ids */
    int s3api_ahead;             /* fetches past GETs' ranges still running */
    int64_t *peer_down_ms;       /* per ring member index: not asked before (S3 API) */
    size_t n_peer_down;
};

struct node {
    node_conf conf;
    bs_store *store;
    met_registry *metrics;
    adm_server *admin;
    ten_set *tenants;
    struct membership *members;
    struct event_base *main_base; /* membership re-resolution, signals */
    node_worker *workers;
    unsigned n_workers;
    unsigned n_running;         /* worker threads started (node_run) */
    size_t n_setup;             /* modules set up (node.c), torn down in reverse */
    struct ssl_ctx_st *ssl_ctx; /* TLS on the protocol port, or NULL */
    int port;
    s3_config s3cfg;
    atomic_bool stopping;
    node_fills *fills;             /* the fill table (node_fill.h) */
    atomic_int conns_open;         /* every worker's connections */
    int max_connections;           /* effective --max-connections */
    _Atomic int64_t accept_log_ms; /* last "out of descriptors" log line */
    atomic_llong accept_log_skipped;
    int metric_base;              /* index of this node's metric table (metrics.h) */
    struct gauge_arg *gauge_args; /* one per store gauge, arguments of their callbacks */
    struct proc_arg *proc_args;   /* one per process metric, the same */
    int64_t start_ms;             /* the process's start, ms since the epoch */
    int64_t start_mono_ms;        /* the node's start, CLOCK_MONOTONIC ms */
    int s3api_port;               /* the S3 API's port, -1: off */
    int s3api_metric_base;        /* its metrics (node_s3api.c) */
    char **s3api_domains;         /* --s3-api-domain, split */
    size_t n_s3api_domains;
    struct ns3_tables *s3tables; /* its version cache and staged uploads (node_s3api_meta.c) */
};

/* ---- node_conf.c ---- */
/* The level named ("error", "warn", "info", "debug"), or -EINVAL. */
int node_log_level_of(const char *name);
/* Lines above this level are dropped (before the threads start). */
void node_log_set_level(int level);
/* Whether RAM-tier hits go to a client with sendfile() (--sendfile): to one on
 * this host (loopback) the kernel hands the tier's pages to a process that
 * copies them out anyway, and a copy into the socket costs less in all
 * (bench/README.md); to one on another host the NIC sends the pages. */
bool node__sendfile_to(const node_conf *conf, bool loopback);

/* ---- node_metrics.c ---- */
int node_metrics_setup(node *n, char *err, size_t errlen);
void node_metrics_teardown(node *n);
void node__count(node_worker *w, int metric, uint64_t v);
void node__latency(node_worker *w, uint64_t us);
void node__gauge_add(node_worker *w, int metric, int64_t delta);

/* ---- node_worker.c ---- */
/* Loops, listeners (binding the port), store workers, S3 clients; n->port. */
int node_workers_setup(node *n, char *err, size_t errlen);
void node_workers_teardown(node *n);
int node_workers_start(node *n); /* the threads; -EAGAIN if one did not start */
void node_workers_stop(node *n); /* any thread: each worker drains and exits its loop */
void node_workers_join(node *n);
void node__post(node_worker *w, node_msg *m); /* any thread; takes ownership of m */
s3_client *node__s3_for(node_worker *w, const ten_tenant *t);

/* ---- node_req.c ---- */
/* The worker's connection to ring member m (PUT_BLOCK, a peer's block, DROP),
 * made with the peer token on first use and again after it broke; NULL when
 * it cannot be made. */
struct ring;
struct ring_member;
cc_conn *node__peer_conn(node_worker *w, const struct ring *ring, const struct ring_member *m);
/* Removes from the store every block of obj this node holds: the count. */
uint64_t node__drop_object(node_worker *w, const bkey_object *obj);
/* The message of an RCP_E_UPSTREAM answer: this node failed to reach S3, in
 * S3's words (without the hints about a client's AWS_* variables), with the
 * node's settings to check. */
void node__upstream_message(const node *n, const char *s3_message, char *out, size_t cap);

/* ---- node_conn.c: the ringcache protocol's front end ---- */
void node__accept(node_worker *w, int fd);
void node__close_all(node_worker *w);
void node__sweep(node_worker *w, int64_t now_ms); /* frame and idle timeouts */
size_t node__conn_count(node_worker *w);

#endif /* RINGCACHE_NODE_INT_H */
