/* SPDX-License-Identifier: Apache-2.0
 *
 * node.h: ringcached, the cache node, as a library the binary's main() composes
 * (and tests drive). A node owns: the block store (blockstore.h), N worker
 * threads each with its own libevent loop, listener (SO_REUSEPORT on one port),
 * store worker, S3 clients and peer connections; the fill table shared by the
 * workers (one S3 GET per block however many ask: single-flight, node_fill.h);
 * the admin HTTP server (admin.h) with the metrics (metrics.h); the membership
 * and ring (membership.h) used by write-through to find each block's owner; the
 * tenants (tenants.h); the main thread's event loop. Requests go through the
 * request lifecycle (node_req.h) from the protocol's front end (node_conn.c)
 * and, with --s3-api-port, from the S3 API's (node_s3api.h).
 *
 * Thread-safety: node_conf_load, node_log_to, node_create, node_run and
 * node_destroy from one thread (main), in that order; node_stop and
 * node_reload from any thread or a signal-handling loop (they only set a flag
 * and wake the loops); node_log and node_version from any thread.
 */
#ifndef RINGCACHE_NODE_H
#define RINGCACHE_NODE_H

#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct node node;
struct event_base;

/* Every option of ringcached (the cfg table in node_conf.c drives file,
 * flags, --help and /config). */
typedef struct node_conf {
    char listen[64];
    int64_t port;
    char port_file[512];
    char admin_listen[64];
    int64_t admin_port;
    char admin_port_file[512];
    int64_t threads;
    char data_dir[512];
    int64_t ssd_capacity;
    int64_t ram_capacity;
    int64_t block_size;
    int64_t region_size;
    char io[16];
    bool no_sync;
    bool strict_store;
    char s3_endpoint[512];
    char s3_region[64];
    char s3_access_key[128];
    char s3_secret_key[128];
    int64_t s3_connections;
    char members[4096];
    char node_id[128];
    char tenants[512];
    bool allow_anonymous;
    char peer_token[256];
    char peer_token_file[512];
    char tls_cert[512];
    char tls_key[512];
    char tls_ca[512];
    int64_t fill_deadline_ms;
    int64_t max_outstanding;
    int64_t max_buffered;
    int64_t chunk_size;
    char sendfile[16];
    int64_t part_size;
    int64_t drain_timeout_ms;
    int64_t max_connections;
    int64_t max_fills;
    int64_t max_warm_blocks;
    int64_t frame_timeout_ms;
    int64_t idle_timeout_ms;
    char log_level[16];
    int64_t s3_api_port;
    char s3_api_listen[64];
    char s3_api_port_file[512];
    char s3_api_region[64];
    char s3_api_domain[512];
    int64_t s3_api_meta_ttl_ms;
    int64_t s3_api_staging_max;
    int64_t s3_api_readahead;     /* bytes one GET fetches ahead of what it sends */
    int64_t s3_api_readahead_max; /* the same over every GET of the node */
} node_conf;

extern const cfg_opt node_opts[];
extern const size_t node_n_opts;

/* Parses argv into conf (defaults, --config file, flags) and fills what the
 * environment gives (the host name for node-id, the peer token from its
 * file). Returns 0; 1 for --help, 2 for --version first (nothing else is
 * read: print node_conf_help() or node_version()); -EINVAL with one sentence
 * in err naming the option and the fix. */
int node_conf_load(node_conf *conf, int argc, char **argv, char *err, size_t errlen);
void node_conf_help(FILE *f);

/* The version of ringcache this node is ("0.1.0"), as `ringcached --version`
 * and the label of ringcached_build_info say it. */
const char *node_version(void);

/* Sets up every module of the node in order (see node.c): the store opened,
 * the ports bound (the port files written), nothing running yet. Returns 0,
 * or a negative errno with one sentence in err naming the thing and the fix
 * (whatever was set up is torn down again). */
int node_create(node **out, const node_conf *conf, char *err, size_t errlen);

/* Runs the workers and the admin server until node_stop(); then drains:
 * stops accepting, lets in-flight requests finish within drain-timeout, closes
 * the store. Returns 0 on a clean drain. */
int node_run(node *n);

/* Asks a running node to stop (SIGTERM). Async-signal-safe. */
void node_stop(node *n);

/* Asks a running node to re-read its membership (SIGHUP). Async-signal-safe. */
void node_reload(node *n);

/* The main thread's event loop (node_run runs it), for the caller's signal
 * events. */
struct event_base *node_main_base(node *n);

/* Tears down every module in reverse order. Accepts NULL and *n == NULL;
 * sets *n to NULL. */
void node_destroy(node **n);

/* The node's log: one logfmt line per event ("ts=... level=warn msg=..."),
 * handed without its newline to the function given to node_log_to, from any
 * thread (so fn must be thread-safe), when its level is at or below
 * --log-level. Until node_log_to is called, lines go nowhere: the library
 * never writes to a stream of its own. Call node_log_to before node_create. */
enum { NODE_LOG_ERROR = 0, NODE_LOG_WARN = 1, NODE_LOG_INFO = 2, NODE_LOG_DEBUG = 3 };
typedef void (*node_log_fn)(void *arg, int level, const char *line);
void node_log_to(node_log_fn fn, void *arg);
void node_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* RINGCACHE_NODE_H */
