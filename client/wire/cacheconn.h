/* SPDX-License-Identifier: Apache-2.0
 *
 * cacheconn.h: one client connection to a cache node (ringcached), speaking the
 * wire protocol of proto.h on the caller's libevent loop. It connects, says
 * HELLO (token, block size), then pipelines requests: each gets an id, answers
 * come back in any order and are matched by id; a GET answer arriving in chunks
 * is reassembled into the caller's buffer. Every request has a deadline; a
 * request that misses it fails with -ETIMEDOUT and a CANCEL is sent for it.
 * Used by the CLI, by cache nodes talking to each other (PUT_BLOCK), and by the
 * compute-side library.
 *
 * Thread-safety: a cc_conn belongs to the loop it was created on; call it only
 * from that loop's thread. Callbacks run on that loop, never from inside the
 * call that submitted the request.
 */
#ifndef RINGCACHE_CACHECONN_H
#define RINGCACHE_CACHECONN_H

#include "proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;

typedef struct cc_conn cc_conn;

typedef struct cc_config {
    const char *host; /* numeric IPv4/IPv6 address or a name */
    int port;
    const char *token;       /* tenant (or peer) token; NULL: none */
    uint32_t block_size;     /* what the client assumes; 0: take the node's */
    const char *client_name; /* for the node's logs */
    int connect_timeout_ms;  /* default 2000 */
    int request_timeout_ms;  /* default 30000: longer than the node's fill deadline */
    bool tls;                /* TLS to the node (its --tls-cert) */
    const char *tls_ca;      /* PEM file of CAs to verify the node; NULL: the system's */
    const char *tls_name;    /* the name the node's certificate must carry, also sent
                                   as SNI, while `host` (an IP) is dialled: e.g. the SRV
                                   target a dns: member came from. NULL or "": `host`
                                   itself (an IP is matched against the certificate's
                                   IP addresses, a name against its DNS names) */
} cc_config;

/* What a request ended with. code is 0 or -errno: -ECONNREFUSED/-ECONNRESET/
 * -EPIPE (the connection failed: try another node), -ETIMEDOUT, -ECANCELED,
 * -EREMOTEIO (the node answered an ERROR frame: rcp_code and message say
 * which), -EPROTO (the node broke the protocol), -ENOBUFS (answer larger than
 * the buffer). */
typedef struct cc_result {
    int code;
    int rcp_code; /* enum rcp_err when code == -EREMOTEIO */
    char message[256];
    uint32_t bytes;                     /* GET: data bytes placed in the buffer */
    uint8_t source;                     /* GET: enum rcp_source */
    uint64_t size;                      /* HEAD/PUT: object size */
    char version[BKEY_VERSION_MAX + 1]; /* HEAD/PUT: normalised ETag */
    uint32_t count;                     /* WARM: fills the node started */
    char *text;                         /* STATS: the text (valid during the callback) */
    size_t text_len;
} cc_result;

typedef void (*cc_done_fn)(const cc_result *res, void *arg);

/* Start connecting. The connection is usable at once: requests wait for HELLO.
 * Returns 0 or -errno (-EINVAL for a bad address or, with tls, a CA file that
 * cannot be loaded). A failed TLS handshake fails the requests with -EPROTO and
 * a message that names the node, the name verified and OpenSSL's reason (e.g.
 * "certificate verify failed: hostname mismatch"). */
int cc_conn_create(cc_conn **out, struct event_base *base, const cc_config *cfg);

/* Checks that `ca_file` (NULL: the system's CAs) can be loaded as PEM CAs, so a
 * bad path is a configuration error at start, not a failure on every
 * connection. 0, or -EINVAL with a sentence naming the file and the fix in err.
 * Any thread. */
int cc_tls_check_ca(const char *ca_file, char *err, size_t errlen);

/* Fail every outstanding request with -ECANCELED (callbacks run before this
 * returns) and free. Accepts NULL; sets *c to NULL. */
void cc_conn_destroy(cc_conn **c);

/* true once the connection has failed (every later request fails at once). */
bool cc_conn_broken(const cc_conn *c);
/* CLOCK_MONOTONIC milliseconds when bytes last came from the node (the
 * connection's creation before any did): a node that has sent nothing on it
 * for a while is stopped or overloaded, whatever is outstanding. Bytes the
 * socket holds below its low-water mark count once more of them are there
 * than at the last look. */
int64_t cc_conn_last_rx_ms(cc_conn *c);
/* The node's HELLO answer (zeroed until it came). */
const rcp_hello_resp *cc_conn_hello(const cc_conn *c);
size_t cc_conn_outstanding(const cc_conn *c);

/* GET a block or a range of it into buf (cap bytes). *id_out (may be NULL) is
 * the request id, for cc_cancel. 0 or -errno (-EAGAIN at the outstanding limit,
 * -EPIPE when the connection is broken). */
int cc_get(cc_conn *c, const rcp_get_req *req, void *buf, size_t cap, cc_done_fn done, void *arg,
           uint32_t *id_out);
/* The same for a cache node reading a block of tenant `tenant` from its owner
 * (RCP_GET_TENANT: the connection must have said the peer token). NULL: as
 * cc_get. */
int cc_get_tenant(cc_conn *c, const rcp_get_req *req, const char *tenant, void *buf, size_t cap,
                  cc_done_fn done, void *arg, uint32_t *id_out);
int cc_head(cc_conn *c, const char *bucket, const char *key, cc_done_fn done, void *arg);
/* The same, with the request id (for cc_cancel) in *id_out. */
int cc_head_id(cc_conn *c, const char *bucket, const char *key, cc_done_fn done, void *arg,
               uint32_t *id_out);
/* PUT_BLOCK: data (borrowed until done) is the whole block. */
int cc_put_block(cc_conn *c, const rcp_put_block_req *req, cc_done_fn done, void *arg);
/* DROP (node to node, the peer token): the node removes the blocks of
 * req->obj of tenant req->tenant it holds. */
int cc_drop(cc_conn *c, const rcp_drop_req *req, cc_done_fn done, void *arg);
/* Write-through PUT of `size` bytes produced by read_fn (called when the
 * connection has room; returns bytes written into buf, 0 at the end, < 0 to
 * abort). */
typedef int64_t (*cc_read_fn)(void *buf, size_t cap, void *arg);
int cc_put(cc_conn *c, const char *bucket, const char *key, uint64_t size, cc_read_fn read_fn,
           void *read_arg, cc_done_fn done, void *arg);
int cc_warm(cc_conn *c, const rcp_object *obj, const uint64_t *blocks, uint32_t n, cc_done_fn done,
            void *arg);
int cc_stats(cc_conn *c, cc_done_fn done, void *arg);
int cc_ping(cc_conn *c, cc_done_fn done, void *arg);
/* Cancel request id: its callback fires with -ECANCELED. 0 or -ENOENT. */
int cc_cancel(cc_conn *c, uint32_t id);

#endif /* RINGCACHE_CACHECONN_H */
