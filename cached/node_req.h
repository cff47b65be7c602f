/* SPDX-License-Identifier: Apache-2.0
 *
 * node_req.h: the life of a request on a cache node, apart from how it was
 * framed: the interface every front end calls, the ringcache protocol
 * (node_conn.c) today and an HTTP front end (the S3 API) alike, as memcached
 * keeps its protocol code over its storage layer.
 *
 *   front ends   node_conn.c: frames <-> calls     an HTTP front end (S3 API)
 *                    | node_req_get/head/put/put_data/warm/store_block/cancel
 *                    v                                   ^ node_sink: admit, piece,
 *   lifecycle    node_req.c: tenancy and key checks,     | answer, error, pause, done
 *                block-number bounds, store read, fill, answer; write-through:
 *                the upload to S3, then each block placed on its ring owner
 *                    |               |                 |                |
 *   below        blockstore.h    node_fill.h       node_upload.h    cacheconn.h
 *                (RAM + SSD)     (single-flight    (one object      (PUT_BLOCK to
 *                                 fills from S3)    streamed to S3)  the owner), ring
 *
 * A front end embeds a node_req in its own per-request struct (no malloc of
 * the lifecycle's on the hot path), starts it with one of the calls below on
 * the worker that owns the request's connection, and learns what happens
 * through its node_sink. Every started request ends with exactly one done();
 * before it, for a request that is answered: admit() (GET: the data bytes
 * coming, to count against the front end's buffer from now), then piece()
 * (GET), answer() (HEAD, PUT, WARM, PUT_BLOCK) or error(code, sentence). The
 * error codes are the node's vocabulary, the wire's RCP_E_* (proto.h):
 * RCP_E_FORBIDDEN, RCP_E_NOT_FOUND, RCP_E_VERSION_CHANGED, RCP_E_BUSY, ...; an
 * HTTP front end maps them to statuses. A sentence names the object and, where
 * there is one, the fix.
 *
 * Back-pressure: a GET answers one block (or a range in it) as one piece held
 * by reference (the store's or the fill's buffer, never copied); a reader of
 * many blocks asks for them one by one, as its client takes the bytes, so the
 * lifecycle never produces data nobody asked for. A PUT's data comes from the
 * front end with node_req_put_data; pause(true) asks it to stop reading its
 * client while S3 has parts in flight, pause(false) to go on, and done() ends
 * a pause as well.
 *
 * The sink may be called from inside the call that starts a request (a
 * refusal is answered at once) and from inside node_req_cancel (done() of a
 * request with nothing in flight): a front end must not touch its request
 * after done().
 *
 * Thread-safety: a request belongs to the worker it was started on: every
 * call here and every sink callback runs on that worker's thread.
 */
#ifndef RINGCACHE_NODE_REQ_H
#define RINGCACHE_NODE_REQ_H

#include "blockkey.h"
#include "blockstore.h"
#include "s3.h"
#include "tenants.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct node_worker node_worker;
typedef struct node_buf node_buf;
typedef struct node_fill node_fill;
typedef struct node_put node_put;
typedef struct node_req node_req;

/* Who asks. */
typedef struct node_caller {
    const ten_tenant *tenant; /* the tenant its token named; NULL on a node without tenants,
                                 and for a peer */
    bool peer;                /* it said the peer token: a cache node of the cluster */
    bool loopback;            /* it is on this host */
} node_caller;

/* A piece of a GET's data. Borrowed for the call; node_piece_ref keeps the
 * bytes for longer (a send queue), node_piece_unref lets them go. */
typedef struct node_piece {
    const uint8_t *data;
    size_t len;
    uint8_t source; /* RCP_SRC_SSD (the store, RAM or SSD), RCP_SRC_S3 (this
                                 request's fill), RCP_SRC_FILL_WAIT (another's fill) */
    bs_buf *bs;     /* the buffer holding data: the store's, or */
    node_buf *nb;   /* the fill's */
} node_piece;
void node_piece_ref(const node_piece *p);
void node_piece_unref(const node_piece *p);

/* The answer of a request that has no data. */
typedef struct node_answer {
    uint64_t size;         /* HEAD: the object's size; PUT: the bytes written */
    const char *etag;      /* HEAD, PUT: the object's version (normalised ETag) */
    int64_t last_modified; /* HEAD: Unix seconds, 0 if unknown */
    uint32_t queued;       /* WARM: fills started */
} node_answer;

typedef struct node_sink_ops {
    void (*admit)(void *arg, size_t bytes);          /* GET: may be NULL */
    void (*piece)(void *arg, const node_piece *p);   /* GET */
    void (*answer)(void *arg, const node_answer *a); /* HEAD, PUT, WARM, PUT_BLOCK */
    void (*error)(void *arg, int code, const char *sentence);
    void (*pause)(void *arg, bool pause); /* PUT: may be NULL */
    void (*done)(void *arg);              /* the last call, always */
} node_sink_ops;

typedef struct node_sink {
    const node_sink_ops *ops;
    void *arg;
} node_sink;

/* The lifecycle's part of a request, embedded in the front end's struct.
 * Fields are node_req.c's. */
enum node_req_state { NR_IDLE, NR_STORE_READ, NR_FILL_WAIT, NR_S3, NR_PUT, NR_STORE_WRITE };
struct node_req {
    node_worker *w;
    node_sink sink;
    node_caller who;
    bkey_object obj; /* the object, its tenant the caller's */
    uint64_t serial; /* its name on its worker (fill waiters, mailbox) */
    node_req *wnext; /* in the worker's table of requests waiting for a fill */
    int state;
    bool cancelled;
    node_fill *fill; /* NR_FILL_WAIT: the fill waited on, or NULL */
    uint64_t block;
    uint32_t off, len, flags, block_len;
    bool reread;    /* the store was asked again after a fill finished */
    uint32_t run;   /* GET: the blocks from this one on the caller asks next */
    uint64_t *warm; /* WARM: the blocks named, until S3's HEAD answers */
    uint32_t n_warm;
    node_put *put; /* PUT: the write-through, until it answers */
};

/* GET block `block` of obj (its tenant is the caller's), bytes [off, off+len)
 * of the block (len 0: to its end); flags RCP_GET_* (RCP_GET_CACHE_ONLY: no
 * fill, RCP_E_NOT_CACHED). Refused at once: a key outside the caller's
 * tenancy or with a dot segment (RCP_E_FORBIDDEN), a block or range outside
 * the object (RCP_E_BAD_REQUEST). Else admit(len), then the store, else the
 * fill (one S3 GET per block, RCP_E_BUSY at --max-fills), then piece() or
 * error(). */
void node_req_get(node_req *r, node_worker *w, const node_caller *who, const bkey_object *obj,
                  uint64_t block, uint32_t off, uint32_t len, uint32_t flags,
                  const node_sink *sink);

/* node_req_get of block `block` for a caller that asks this node for the
 * run - 1 blocks after it next (a sequential read): a fill it starts takes
 * those that are neither filling nor stored into the same ranged S3 GET
 * (node_fill_args.run). */
void node_req_get_run(node_req *r, node_worker *w, const node_caller *who, const bkey_object *obj,
                      uint64_t block, uint32_t off, uint32_t len, uint32_t run,
                      const node_sink *sink);

/* Size, version and modification time of bucket/key, asked of S3 with the
 * caller's tenant's credentials: answer() or error(). */
void node_req_head(node_req *r, node_worker *w, const node_caller *who, const char *bucket,
                   const char *key, const node_sink *sink);

/* Write-through of obj->size bytes to bucket/key (obj's version is ignored):
 * the data follows with node_req_put_data. It streams into S3 (one PUT up to
 * --part-size, else a multipart upload) and into a staging file; once S3 has
 * acknowledged it, each block is placed on its ring owner (stored here, or
 * sent by PUT_BLOCK), then answer() with S3's ETag. S3's failure: error()
 * with S3's sentence, nothing cached. */
void node_req_put(node_req *r, node_worker *w, const node_caller *who, const bkey_object *obj,
                  const node_sink *sink);
/* The same with a condition on the write (S3's conditional PUT: cond copied,
 * NULL: none), sent with the PUT or the multipart upload's Complete: when it
 * does not hold (S3's 412), error(RCP_E_VERSION_CHANGED) and nothing is
 * cached; an object missing for If-Match is RCP_E_NOT_FOUND. */
void node_req_put_cond(node_req *r, node_worker *w, const node_caller *who, const bkey_object *obj,
                       const s3_write_cond *cond, const node_sink *sink);

/* The next len bytes of the PUT's data; last on its final piece. Data past
 * the announced size, or an end before it, fails the PUT (RCP_E_BAD_REQUEST).
 * Ignored once the PUT has been answered. */
void node_req_put_data(node_req *r, const uint8_t *data, size_t len, bool last);

/* Places the blocks of obj (its version the one S3 gave it, its tenant the
 * caller's), which S3 already has, on their ring owners, as a PUT does after
 * S3's answer: block i's bytes come from read(arg, i, buf, len), which
 * returns 0, or -ENOENT for a block it does not have (left to fills).
 * release(arg) (may be NULL) runs once no block is being read any more,
 * also when the request is refused or cancelled. Then answer() with obj's
 * version. For objects written through another path (S3's multipart upload
 * driven by the client, whose parts this node kept). */
typedef int (*node_place_read_fn)(void *arg, uint64_t index, uint8_t *buf, size_t len);
void node_req_place(node_req *r, node_worker *w, const node_caller *who, const bkey_object *obj,
                    node_place_read_fn read, void (*release)(void *arg), void *arg,
                    const node_sink *sink);

/* A peer's DROP: every block of obj (obj->tenant the one the peer names)
 * this node holds is removed, then answer(). Only cache nodes may send it,
 * as for PUT_BLOCK. */
void node_req_drop(node_req *r, node_worker *w, const node_caller *who, const bkey_object *obj,
                   const node_sink *sink);

/* Fill n blocks of obj into the cache in the background, block i being
 * block_at(src, i) (read during the call only, after the limit is checked):
 * the object's real size and version first (a HEAD: RCP_E_VERSION_CHANGED
 * when they are not obj's), then one fill per block not stored yet while
 * fills stay under half of --max-fills; answer() with the number started.
 * More than --max-warm-blocks blocks: RCP_E_TOO_LARGE. */
typedef uint64_t (*node_block_at_fn)(const void *src, uint32_t i);
void node_req_warm(node_req *r, node_worker *w, const node_caller *who, const bkey_object *obj,
                   uint32_t n, node_block_at_fn block_at, const void *src, const node_sink *sink);

/* A peer's block to index: block `block` of obj (obj->tenant is the one the
 * peer names), data[0..len) copied. Only cache nodes may send it: the peer
 * token whenever one is set; without one, nobody on a node with tenants and
 * this host only on an open node. answer() once stored, or error(). */
void node_req_store_block(node_req *r, node_worker *w, const node_caller *who,
                          const bkey_object *obj, uint64_t block, const void *data, size_t len,
                          const node_sink *sink);

/* The front end no longer wants the answer (its client cancelled or went
 * away): no sink call but done() from now; done() comes once what is in
 * flight for it has ended (a store read, an S3 call), maybe inside this call.
 * A fill it waits for goes on for its other waiters; a PUT not yet
 * acknowledged by S3 is aborted there. */
void node_req_cancel(node_req *r);

/* ---- for the node's own files ---- */
struct node_msg;
/* A fill's message to a request of worker w (its mailbox, on w's thread). */
void node_req_deliver(node_worker *w, struct node_msg *m);
/* The table of waiting requests of a worker: set up with the worker, torn
 * down after its thread has stopped. */
int node_reqs_setup(node_worker *w);
void node_reqs_teardown(node_worker *w);

#endif /* RINGCACHE_NODE_REQ_H */
