/* SPDX-License-Identifier: Apache-2.0
 *
 * syncconn.h: one blocking connection to a cache node, for a reader thread
 * that wants a small range now (rc_client's fast path for scattered reads).
 * The pipelined, event-driven connection (cacheconn.h) lives on the client's
 * I/O thread, so every read through it costs two hand-offs between threads;
 * on a connection of its own the reader sends the GET and receives the answer
 * straight into its buffer, as a blocking HTTP client would.
 *
 * One request at a time: HELLO once at open, then GETs, each answer read to
 * its end before the next request. Plain TCP only (a TLS cluster uses the
 * I/O thread). Any failure leaves the connection unusable: close it; the
 * caller falls back to the I/O thread, which knows about failover.
 *
 * The pool (syncpool.c) keeps idle connections per node address for the
 * next small read to the same node, so a reader connects once per node, not
 * once per read.
 *
 * Thread-safety: a connection is used by one thread at a time (the pool hands
 * it out); the functions keep no global state. The pool's functions may be
 * called from any number of threads at once (one mutex, held only to take or
 * put an idle connection: connecting and reading happen outside it).
 */
#ifndef RINGCACHE_SYNCCONN_H
#define RINGCACHE_SYNCCONN_H

#include <stdbool.h>
#include <stdint.h>

#include "proto.h"

typedef struct sc_conn sc_conn;

/* Connects to host:port (an address or a name), within connect_timeout_ms,
 * and says HELLO with token (NULL: none) and block_size (0: the node's).
 * Every later send and receive gives up after timeout_ms; after sending a
 * GET the caller polls for the answer for up to spin_us (0: never), yielding
 * its core, before it blocks in recv, but only while the answers come within
 * spin_us (a smoothed wait of the last ones): on a link where they take
 * longer it sleeps at once. 0, or -errno with
 * a sentence in err: -ETIMEDOUT, -ECONNREFUSED, -EACCES (the node refused
 * the token), -EPROTO (a bad answer). */
int sc_open(sc_conn **out, const char *host, int port, const char *token, uint32_t block_size,
            int connect_timeout_ms, int timeout_ms, int spin_us, char *err, size_t errlen);

/* Sends req and reads its answer: exactly len bytes into buf. 0 on success;
 * -EREMOTEIO when the node answered with an ERROR frame (its code in
 * *node_err, e.g. RCP_E_VERSION_CHANGED, its message in msg: msglen bytes,
 * may be 0; the connection stays usable); any other -errno (-ETIMEDOUT: the
 * node sent nothing for timeout_ms; -ECONNRESET, -EPROTO, -EMSGSIZE): the
 * connection is broken (sc_usable says false). */
int sc_get(sc_conn *c, const rcp_get_req *req, void *buf, uint32_t len, int *node_err, char *msg,
           size_t msglen);

/* A connection over fd (already connected, HELLO done or not needed), polling
 * as sc_open's spin_us says: for tests and the fuzz target, which play the
 * node on the other end of a socketpair. Takes fd (closed by sc_close). 0 or
 * -ENOMEM. */
int sc_from_fd(sc_conn **out, int fd, uint32_t max_body, int spin_us);

/* GETs that polled for their answer (the others slept at once). */
uint64_t sc_spins(const sc_conn *c);

/* False after a failure that lost the framing or the socket. */
bool sc_usable(const sc_conn *c);

/* Closes and frees; accepts NULL; sets *c to NULL. */
void sc_close(sc_conn **c);

/* ---- the pool ---------------------------------------------------------------- */

typedef struct sc_pool sc_pool;

typedef struct sc_pool_config {
    const char *token;   /* copied; NULL: none */
    uint32_t block_size; /* as sc_open */
    int connect_timeout_ms, timeout_ms, spin_us;
    int max_nodes;     /* node addresses with idle connections kept; 0: 64 */
    int keep_per_node; /* idle connections kept per address; 0: 8 */
} sc_pool_config;

/* 0, -ENOMEM. */
int sc_pool_create(sc_pool **out, const sc_pool_config *cfg);
/* Closes every idle connection and frees; accepts NULL; sets *p to NULL.
 * Every connection handed out must have been put back (or closed). */
void sc_pool_destroy(sc_pool **p);

/* An idle connection to host:port, or a new one (sc_open with the pool's
 * settings, on the calling thread): 0 and *out, or sc_open's -errno with its
 * sentence in err. */
int sc_pool_get(sc_pool *p, const char *host, int port, sc_conn **out, char *err, size_t errlen);
/* Gives *c back (taken: *c becomes NULL): kept idle for host:port when it is
 * still usable and there is room, closed otherwise. */
void sc_pool_put(sc_pool *p, const char *host, int port, sc_conn **c);

#endif /* RINGCACHE_SYNCCONN_H */
