/* SPDX-License-Identifier: Apache-2.0
 *
 * The S3 model: an HTTP/1.1 proxy on 127.0.0.1 in front of an S3 server (s3rver
 * on loopback) that makes it behave like S3 seen from inside a region: a
 * first-byte latency per request, a bandwidth cap per connection, counters of
 * requests by method and object, and faults on demand (503 SlowDown, connection
 * reset, stall), all driven over a small admin HTTP port.
 *
 * Thread-safety: none. A proxy lives on one event loop and every call must come
 * from that loop's thread.
 */
#ifndef RINGCACHE_S3MODEL_H
#define RINGCACHE_S3MODEL_H

#include <netinet/in.h>

struct event_base;

typedef struct s3m_config {
    struct sockaddr_in upstream; /* the S3 server */
    int port;                    /* data port on 127.0.0.1; 0 = any free one */
    int admin_port;              /* admin HTTP port on 127.0.0.1; 0 = any free one */
    int latency_ms;              /* first-byte latency per request; 0 = none */
    int bandwidth_mib;           /* response MiB/s per connection; 0 = unlimited */
} s3m_config;

typedef struct s3m_proxy s3m_proxy;

/* Binds both ports and registers their events on base (retains nothing else of
 * the caller's). -errno if a bind fails (the message is logged), -ENOMEM. */
int s3m_proxy_create(s3m_proxy **out, struct event_base *base, const s3m_config *cfg);

/* Closes every connection (upstream ones too) and both listeners, frees
 * everything, sets *px to NULL. Accepts NULL. */
void s3m_proxy_destroy(s3m_proxy **px);

/* The bound ports. */
int s3m_proxy_port(const s3m_proxy *px);
int s3m_proxy_admin_port(const s3m_proxy *px);

#endif /* RINGCACHE_S3MODEL_H */
