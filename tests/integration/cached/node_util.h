/* SPDX-License-Identifier: Apache-2.0
 *
 * node_util.h: starting ringcached nodes for integration tests (through the
 * harness, so they are stopped and their folders removed whatever happens),
 * reading their Prometheus counters, and running cacheconn requests to
 * completion on a private loop. Single-threaded, like the tests.
 */
#ifndef RINGCACHE_NODE_UTIL_H
#define RINGCACHE_NODE_UTIL_H

#include "cacheconn.h"
#include "harness.h"

#include <stdint.h>

typedef struct t_node {
    h_proc *proc;
    int port;
    int admin_port;
    int s3api_port; /* with --s3-api-port in extra: the port it bound, else 0 */
    char name[32];
    char dir[512];
} t_node;

/* Starts ringcached named `name` with its own data folder in env, S3 at
 * s3_endpoint (S3RVER credentials), 127.0.0.1 ports chosen by the node; extra
 * is a NULL-terminated list of more flags (may be NULL; with --s3-api-port,
 * the port file of the S3 API is added and read into s3api_port). Skips the
 * test when the binary is not built. */
void t_node_start(h_env *env, t_node *n, const char *name, const char *s3_endpoint,
                  const char *const *extra);

/* The same, returning instead of exiting when the node does not come up:
 * 0, or the error of h_proc_start (-ECHILD: it exited first, e.g. a --port
 * given in extra was taken meanwhile by another test). */
int t_node_try_start(h_env *env, t_node *n, const char *name, const char *s3_endpoint,
                     const char *const *extra);

/* The same, run through the command wrap (NULL-terminated, e.g. {"prlimit",
 * "--nofile=128:128", NULL}: it must exec the node, keeping its pid). */
int t_node_try_start_wrapped(h_env *env, t_node *n, const char *name, const char *s3_endpoint,
                             const char *const *extra, const char *const *wrap);

/* A counter or gauge from /metrics (the first line that starts with `metric`
 * followed by a space or '{'). -1 when absent. */
int64_t t_node_metric(const t_node *n, const char *metric);

/* Resident memory of the node's process in KiB (VmRSS). */
int64_t t_node_rss_kib(const t_node *n);

/* Blocking helpers: a connection on the caller's base, and one request run to
 * its end. */
cc_conn *t_conn(struct event_base *base, const t_node *n, const char *token);
/* One request run to its end: w is given as the callback's argument with
 * t_done, rc is what starting the request returned. */
typedef struct t_wait {
    int done;
    cc_result res;
} t_wait;
void t_done(const cc_result *r, void *arg);
cc_result t_wait_run(struct event_base *base, t_wait *w, int rc);
cc_result t_get(struct event_base *base, cc_conn *c, const char *bucket, const char *key,
                const char *version, uint64_t size, uint64_t block, void *buf, size_t cap);

/* Raw protocol bytes, for hostile and malformed input: a blocking connection
 * to 127.0.0.1:port with a 5 s receive timeout (the process exits if it
 * cannot); one frame sent (exits unless sent whole); one frame received into body (cap
 * bytes): 0, -1 on EOF or a timeout, -2 on a bad header or a body over cap;
 * HELLO with token (NULL: none), exiting unless answered by HELLO. */
int t_raw_connect(int port);
void t_raw_send(int fd, uint8_t op, uint32_t id, const void *body, size_t len);
int t_raw_recv_frame(int fd, rcp_header *h, uint8_t *body, size_t cap);
void t_raw_hello(int fd, const char *token);

#endif
