/* SPDX-License-Identifier: Apache-2.0
 *
 * node_int.h: internals shared by the files of ringcached (node.c: lifecycle,
 * workers, fills; node_conn.c: connections and the protocol; node_put.c:
 * write-through). Not for other modules.
 *
 * Threads: each worker thread owns its event loop, its connections, its store
 * worker, its S3 clients and its peer connections; nothing of a worker is
 * touched by another thread except its mailbox (mutex + an event activated
 * across threads). The fill table is shared (one mutex). Counters go through
 * metrics.h (per-thread slots).
 */
#ifndef RINGCACHE_NODE_INT_H
#define RINGCACHE_NODE_INT_H

#include "admin.h"
#include "blockkey.h"
#include "blockstore.h"
#include "cacheconn.h"
#include "membership.h"
#include "metrics.h"
#include "node.h"
#include "proto.h"
#include "s3.h"
#include "tenants.h"

#include <pthread.h>
#include <stdatomic.h>

struct event_base;
struct event;
struct evconnlistener;
struct bufferevent;

typedef struct node_worker node_worker;
typedef struct node_conn node_conn;
typedef struct node_req node_req;
typedef struct node_fill node_fill;
typedef struct node_put node_put;

/* A reference-counted buffer (fill data, staged blocks). */
typedef struct node_buf {
    atomic_int ref;
    size_t len;
    uint8_t data[];
} node_buf;
node_buf *node_buf_new(size_t len);
void node_buf_ref(node_buf *b);
void node_buf_unref(node_buf *b);

/* Metric indices (node.c registers the table). */
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
    uint64_t conn_serial;
    uint32_t req_id;
    int rcp_code;             /* 0: data */
    char message[256];
    node_buf *buf;            /* a reference, or NULL */
    uint8_t source;           /* RCP_SRC_S3: this request's own fill; RCP_SRC_FILL_WAIT:
                                 another request's fill or its buffer */
    uint32_t off, len;        /* the slice of buf to send */
};

struct node_worker {
    node *n;
    unsigned idx;
    pthread_t thread;
    struct event_base *base;
    struct evconnlistener *listener;
    bs_worker *bs;
    s3_client *s3;                 /* with the node's credentials */
    s3_client **tenant_s3;         /* one per tenant with its own credentials */
    struct event *mailbox_ev;
    pthread_mutex_t mb_lock;
    node_msg *mb_head, *mb_tail;
    node_conn *conns;              /* open connections of this worker */
    uint64_t next_serial;
    cc_conn **peers;               /* per ring member index: connection for PUT_BLOCK */
    size_t n_peers;
    struct event *stop_ev;
    struct event *drain_timer;     /* after SIGTERM: polls until idle or the deadline */
    int64_t drain_deadline_ms;
    struct event *sweep_timer;     /* closes connections past the frame or idle timeout */
    struct event *accept_timer;    /* accepting again after running out of descriptors */
    bool accept_paused;            /* out of descriptors: not accepting */
};

struct node {
    node_conf conf;
    bs_store *store;
    met_registry *metrics;
    adm_server *admin;
    ten_set *tenants;
    struct membership *members;
    struct event_base *main_base;   /* membership re-resolution, signals */
    node_worker *workers;
    unsigned n_workers;
    int listen_fd;                  /* the first listener (others reuse the port) */
    struct ssl_ctx_st *ssl_ctx;     /* TLS on the protocol port, or NULL */
    int port;
    s3_config s3cfg;
    atomic_bool stopping;
    atomic_bool reload_asked;
    pthread_mutex_t fill_lock;
    node_fill **fill_table;
    size_t fill_buckets;
    size_t fills_active;
    atomic_int conns_open;          /* every worker's connections */
    int max_connections;            /* effective --max-connections */
    _Atomic int64_t accept_log_ms;  /* last "out of descriptors" log line */
    atomic_llong accept_log_skipped;    int log_level;
    int metric_base;                /* index of this node's metric table (metrics.h) */
    struct gauge_arg *gauge_args;   /* one per store gauge, arguments of their callbacks */
};

/* A request in flight on a connection (node_conn.c, node_put.c). */
enum { R_NEW, R_STORE_READ, R_FILL_WAIT, R_PUT, R_STORE_WRITE, R_S3 };

struct node_req {
    node_conn *c;
    node_req *prev, *next;
    uint32_t id;
    uint8_t op;
    int state;
    bool cancelled;
    node_fill *fill;
    uint64_t t0_us;
    char bucket[64], key[1025], version[129];
    uint64_t size, block;
    uint32_t off, len, flags, block_len;
    bool reread;                   /* the store was asked again after a fill finished */
    uint32_t reserved;             /* answer bytes counted against max-buffered */
    uint64_t *warm;                /* WARM: the blocks named, until S3's HEAD answers */
    uint32_t n_warm;
    node_put *put;
};

/* ---- node.c ---- */
void node__post(node_worker *w, node_msg *m); /* any thread; takes ownership of m */
s3_client *node__s3_for(node_worker *w, const ten_tenant *t);
void node__count(node_worker *w, int metric, uint64_t v);
void node__latency(node_worker *w, uint64_t us);
void node__gauge_add(node_worker *w, int metric, int64_t delta);

/* Join (or start) the fill of block `id` for request `r` on worker `w`. The
 * answer arrives through w's mailbox. Returns 0; -EAGAIN when no fill runs
 * and the store has the block after all (a fill finished between the
 * caller's store miss and now: read the store again, unless a->force); or
 * -errno (answer an error). */
typedef struct node_fill_args {
    const ten_tenant *tenant;
    const bkey_id *id;
    uint32_t block_len;
    uint64_t conn_serial;          /* who waits; 0: nobody (WARM) */
    uint32_t req_id;
    uint32_t off, len;             /* slice of the block the waiter wants */
    bool force;                    /* start a fill even if the store has the block now */
} node_fill_args;
int node__fill_join(node_worker *w, const node_fill_args *a, node_fill **joined);
/* Fills in the table now (any thread). */
size_t node__fills_active(node *n);
/* Remove a waiter (request cancelled or connection closed). */
void node__fill_leave(node *n, node_fill *f, uint64_t conn_serial, uint32_t req_id);

/* ---- node_conn.c ---- */
void node__accept(node_worker *w, int fd);
void node__deliver(node_worker *w, node_msg *m); /* on w's thread */
void node__close_all(node_worker *w);
void node__sweep(node_worker *w, int64_t now_ms); /* frame and idle timeouts */
size_t node__conn_count(node_worker *w);

/* ---- node_put.c ---- */
/* A PUT's head arrived on conn c for request r. */
int node__put_start(node_conn *c, node_req *r, const rcp_put_req *p);
/* A PUT_DATA frame: data (len bytes) for the PUT with this request. */
int node__put_data(node_conn *c, node_req *r, const uint8_t *data, size_t len, bool last);
void node__put_abort(node_req *r);
/* Index a block received by PUT_BLOCK (or staged locally) on this worker. */
int node__store_block(node_worker *w, const bkey_id *id, const void *data, size_t len,
                      bs_write_fn done, void *arg);

/* Answer helpers (node_conn.c) used by node_put.c. */
/* The message of an RCP_E_UPSTREAM answer: this node failed to reach S3, in
 * S3's words (without the hints about a client's AWS_* variables), with the
 * node's settings to check. */
void node__upstream_message(const node *n, const char *s3_message, char *out, size_t cap);
void node__answer_error(node_conn *c, uint32_t id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void node__answer_body(node_conn *c, uint8_t op, uint32_t id, const void *body, size_t len);
void node__req_done(node_req *r);
node_worker *node__conn_worker(node_conn *c);
const ten_tenant *node__conn_tenant(node_conn *c);
void node__conn_pause(node_conn *c, bool pause); /* stop reading (back-pressure) */

#endif /* RINGCACHE_NODE_INT_H */
