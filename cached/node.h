/* SPDX-License-Identifier: Apache-2.0
 *
 * node.h: ringcached, the cache node, as a library the binary's main() composes
 * (and tests drive). A node owns: the block store (blockstore.h), N worker
 * threads each with its own libevent loop, listener (SO_REUSEPORT on one port),
 * store worker, S3 clients and peer connections; the fill table shared by the
 * workers (one S3 GET per block however many ask: single-flight); the admin
 * HTTP server (admin.h) with the metrics (metrics.h); the membership and ring
 * (membership.h) used by write-through to find each block's owner; the tenants
 * (tenants.h).
 *
 * Thread-safety: node_create/node_run/node_destroy from one thread (main);
 * node_stop from any thread or a signal-handling loop (it only sets a flag and
 * wakes the workers).
 */
#ifndef RINGCACHE_NODE_H
#define RINGCACHE_NODE_H

#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct node node;

/* Every option of ringcached (the cfg table in node.c drives file, flags,
 * --help and /config). */
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
    int64_t part_size;
    int64_t drain_timeout_ms;
    int64_t max_connections;
    int64_t max_fills;
    int64_t max_warm_blocks;
    int64_t frame_timeout_ms;
    int64_t idle_timeout_ms;
    char log_level[16];
} node_conf;

extern const cfg_opt node_opts[];
extern const size_t node_n_opts;

/* Parses argv into conf (defaults, --config file, flags) and fills what the
 * environment gives (AWS_* for S3, the host name for node-id). Returns 0, 1 for
 * --help (already printed), or -EINVAL after printing the error. */
int node_conf_load(node_conf *conf, int argc, char **argv);

/* Opens the store, binds the ports (writing the port files), starts nothing
 * yet. Errors are printed as sentences; returns 0 or -errno. */
int node_create(node **out, const node_conf *conf);

/* Runs the workers and the admin server until node_stop(); then drains:
 * stops accepting, lets in-flight requests finish within drain-timeout, closes
 * the store. Returns 0 on a clean drain. */
int node_run(node *n);

/* Asks a running node to stop (SIGTERM). Async-signal-safe. */
void node_stop(node *n);

/* Asks a running node to re-read its membership (SIGHUP). Async-signal-safe. */
void node_reload(node *n);

void node_destroy(node **n);

/* logfmt line at a level ("error", "warn", "info", "debug") to stderr. */
void node_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
enum { NODE_LOG_ERROR = 0, NODE_LOG_WARN = 1, NODE_LOG_INFO = 2, NODE_LOG_DEBUG = 3 };

#endif /* RINGCACHE_NODE_H */
