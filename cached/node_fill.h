/* SPDX-License-Identifier: Apache-2.0
 *
 * node_fill.h: the fill table of a cache node, the read-through path that
 * makes one S3 GET per block however many requests, connections and threads
 * ask for it (single flight).
 *
 * A fill lives in the table from the first miss until its block is on disk
 * and indexed; a request that arrives in between (the data came back, the
 * write is in progress) is served from the fill's buffer. A fill has a
 * deadline (--fill-deadline): past it, its waiters are answered "timeout".
 * A fill that timed out, or whose every waiter left (cancelled, connection
 * closed), stops its S3 GET at the next bytes; data that did arrive whole is
 * still stored. At most --max-fills fills run at once (-EBUSY past it).
 *
 * Waiters are told through their worker's mailbox (node_int.h: a node_msg
 * with the waiter's serial, a reference to the fill's buffer or an error code
 * and sentence, for node_req_deliver), so a fill running on worker A answers
 * requests of worker B on B's thread.
 *
 * Thread-safety: node_fill_join, node_fill_leave and node_fill_active from
 * any worker thread at once (the table is one mutex). A fill's S3 GET, its
 * deadline timer and its store write run on the worker that started it.
 * node_fills_setup / node_fills_teardown from the thread that creates and
 * destroys the node, when no worker runs.
 */
#ifndef RINGCACHE_NODE_FILL_H
#define RINGCACHE_NODE_FILL_H

#include "blockkey.h"
#include "tenants.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct node node;
typedef struct node_worker node_worker;
typedef struct node_fills node_fills;
typedef struct node_fill node_fill;

/* The table of node n (its limits and deadline from n's config). Returns 0
 * or -ENOMEM. */
int node_fills_setup(node_fills **out, node *n);
/* Frees the table and the fills still in it (none runs once the workers have
 * stopped). Accepts NULL and *t == NULL; sets *t to NULL. */
void node_fills_teardown(node_fills **t);

typedef struct node_fill_args {
    const ten_tenant *tenant; /* whose S3 credentials fill (NULL: the node's) */
    const bkey_id *id;        /* borrowed for the call */
    uint32_t block_len;
    uint64_t waiter;   /* the serial of the request waiting on the joining
                                      worker (node_req.h); 0: nobody (WARM) */
    uint32_t off, len; /* slice of the block the waiter wants */
    bool force;        /* start a fill even if the store has the block now */
    uint32_t run;      /* blocks from this one on the caller asks of this node
                          next (0, 1: this one): a new fill takes the ones
                          after it that neither run nor are stored, up to the
                          first that does, into the same S3 GET (a ranged GET
                          of the run; each block still its own fill) */
} node_fill_args;

/* Join (or start, on worker w) the fill of block a->id. The answer arrives
 * through w's mailbox, never from inside this call. *joined is the fill
 * waited on (for node_fill_leave), or NULL when nobody waits or the answer
 * was posted from the fill's buffer at once. Returns 0; -EAGAIN when no fill
 * runs and the store has the block after all (a fill finished between the
 * caller's store miss and now: read the store again, unless a->force);
 * -EBUSY at --max-fills; -ENOMEM. */
int node_fill_join(node_worker *w, const node_fill_args *a, node_fill **joined);

/* Remove a waiter (request cancelled or connection closed); nothing when the
 * fill has already told it. */
void node_fill_leave(node_fills *t, node_fill *f, unsigned worker, uint64_t waiter);

/* Fills in the table now. */
size_t node_fill_active(node_fills *t);

#endif /* RINGCACHE_NODE_FILL_H */
