/* SPDX-License-Identifier: Apache-2.0
 *
 * srv.h: `ringcache server`, the compute node as a long-lived server that
 * speaks ClickHouse's HTTP interface, so that ClickHouse clients (the
 * official @clickhouse/client, curl, Grafana, JDBC over HTTP) use it
 * unchanged. One process keeps one libringcache client and page cache for
 * every query, so a repeated query is answered from RAM.
 *
 *   clients --HTTP :8123--> event loop (client/http/httpd.h)
 *                             |  /ping /replicas_status /metrics, parse the
 *                             |  request: query, settings, params, auth
 *                             v
 *                           query threads (at most max_concurrent_queries)
 *                             |  eng_run (ingest/exec/eng.h) with the query's
 *                             |  eng_ctx: settings, cancel flag, memory tracker
 *                             |  under the server's, system tables
 *                             v
 *                           the format's sink -> the response (chunked,
 *                             compressed, back-pressured) <- the event loop
 *
 * Tables (MergeTree on S3, ingest/table/) live in the warehouse of
 * --warehouse: queries reach them through eng_ctx.warehouse, their parts
 * read and written through the cache client when there is one, and the
 * background pool (background_pool_size threads) merges them and deletes old
 * parts. Without a warehouse, FROM a table other than system.* is
 * UNKNOWN_TABLE, and so is INSERT INTO it.
 *
 * Thread-safety: srv_create / srv_run / srv_destroy from one thread (main);
 * srv_stop from any thread.
 */
#ifndef RINGCACHE_SRV_H
#define RINGCACHE_SRV_H

#include "eng.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The options (srv_conf.c's table: flags, config-file keys, --help). */
typedef struct srv_conf {
    char listen[256];
    int64_t http_port;
    int64_t port; /* -1: not given (an alias of http-port) */
    char port_file[1024];
    char cache[1024];
    char warehouse[1024];
    int64_t page_cache;
    bool prefault;
    char s3_endpoint[512];
    char s3_region[64];
    int64_t max_threads;
    int64_t max_concurrent_queries;
    int64_t max_server_memory_usage;
    int64_t max_memory_usage;
    int64_t max_execution_time_ms;
    char users[1024];
    int64_t query_log_size;
    bool query_log_flush;                /* into the warehouse's system.query_log */
    int64_t query_log_flush_interval_ms; /* how often */
    int64_t max_query_size;
    int64_t max_body_size;
    int64_t max_connections;
    int64_t keep_alive_timeout_ms;
    int64_t request_timeout_ms;
    int64_t drain_timeout_ms;
    int64_t session_timeout_ms;
    int64_t background_pool_size;
    bool background_merges;
    int64_t merge_interval_ms;
    int64_t table_refresh_ms; /* a SELECT reuses a table's state listed this recently */
    int64_t merge_memory; /* bytes the background merges may hold; 0: none */
    char tls_cert[1024];
    char tls_key[1024];
    char display_name[256];
    char log_level[16];
    char cluster[4096];       /* --cluster NAME=host:port,...[;NAME=...] */
    char cluster_secret[256]; /* --cluster-secret */
    char cluster_secret_file[1024];
    int64_t cluster_dns_interval_ms;
    char cluster_tls_ca[1024]; /* --cluster-tls-ca: CA bundle the members' certificates chain to */
} srv_conf;

/* Loads the options: defaults, --config FILE, then the flags (argv[0] is
 * "server"). 0, 1 when --help or --version was given (printed on stdout), or -EINVAL with
 * the sentence on stderr. */
int srv_conf_load(srv_conf *conf, int argc, char **argv);

typedef struct srv srv;

/* Starts everything but the loop: the cache client, the users, the HTTP
 * listener (the port file is written here), the query and background
 * threads. 0 or -errno with a sentence in err. */
int srv_create(srv **out, const srv_conf *conf, char *err, size_t errlen);
/* Runs the loop until a stop has drained it. 0 after a clean drain. */
int srv_run(srv *s);
/* Stops accepting, lets running queries finish within drain_timeout, then
 * makes srv_run return. Any thread, any number of times. */
void srv_stop(srv *s);
/* Accepts NULL; sets *s to NULL. */
void srv_destroy(srv **s);
int srv_port(const srv *s);

/* `ringcache server`: argv[0] is "server". Exit code: 0 (also after SIGTERM
 * and a clean drain), 1 failed, 2 bad options. */
int srv_main(int argc, char **argv);

#endif /* RINGCACHE_SRV_H */
