/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_conf.c: the options of `ringcache server`, one table (cached/config.h)
 * that drives the flags, the --config file's keys, --help and the effective
 * config, as ringcached's does. Every option is both: `--http-port 8123` on
 * the command line is the line `http-port = 8123` in the file.
 */
#include "srv_int.h"

#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define O(field) offsetof(srv_conf, field), sizeof(((srv_conf *)0)->field)

static const cfg_opt srv_opts[] = {
    {"listen", CFG_STR, "127.0.0.1",
     "address of the HTTP port (0.0.0.0: every interface; other hosts need a users file, see --users)",
     O(listen), 0, 0, false, false},
    {"http-port", CFG_INT, "8123",
     "ClickHouse's HTTP interface: queries, /ping, /metrics (0: any free port, see --port-file)",
     O(http_port), 0, 65535, false, false},
    {"port", CFG_INT, "-1", "the same as --http-port (tests: --port 0 --port-file F)", O(port), -1,
     65535, false, false},
    {"port-file", CFG_STR, NULL, "write the bound HTTP port here (for tests and scripts)",
     O(port_file), 0, 0, false, false},
    {"cache", CFG_STR, NULL,
     "cache nodes: host:port,... | dns:NAME[:PORT] | file:PATH (default: RINGCACHE_CACHE; none: S3 directly, through the page cache)",
     O(cache), 0, 0, false, false},
    {"warehouse", CFG_STR, NULL,
     "s3://bucket/prefix/ of the tables (MergeTree parts and logs on S3)", O(warehouse), 0, 0,
     false, false},
    {"page-cache", CFG_SIZE, "512MiB", "RAM of the page cache every query shares", O(page_cache),
     1 << 20, INT64_MAX, false, false},
    {"prefault", CFG_BOOL, "false",
     "back the page cache with memory at start-up (a long-lived server on a VM)", O(prefault), 0, 0,
     false, false},
    {"s3-endpoint", CFG_STR, NULL,
     "S3 endpoint URL (default: AWS_ENDPOINT_URL, else AWS for the region)", O(s3_endpoint), 0, 0,
     false, false},
    {"s3-region", CFG_STR, NULL, "S3 region (default: AWS_REGION, else us-east-1)", O(s3_region), 0,
     0, false, false},
    {"max-threads", CFG_INT, "0", "default of the max_threads setting (0: one per core)",
     O(max_threads), 0, 1024, false, false},
    {"max-concurrent-queries", CFG_INT, "100",
     "queries running at once; more fail with TOO_MANY_SIMULTANEOUS_QUERIES",
     O(max_concurrent_queries), 1, 10000, false, false},
    {"max-server-memory-usage", CFG_SIZE, "0",
     "bytes all queries and background merges together may use; the query that would cross it fails with MEMORY_LIMIT_EXCEEDED (0: no limit; the page cache is --page-cache)",
     O(max_server_memory_usage), 0, INT64_MAX, false, false},
    {"max-memory-usage", CFG_SIZE, "0",
     "default of the max_memory_usage setting, per query (0: none)", O(max_memory_usage), 0,
     INT64_MAX, false, false},
    {"max-execution-time", CFG_MS, "0", "default of the max_execution_time setting (0: none)",
     O(max_execution_time_ms), 0, 86400000LL * 365, false, false},
    {"users", CFG_STR, NULL,
     "users file: names, password digests, networks, profiles (without one: only `default`, no password, from this host)",
     O(users), 0, 0, false, false},
    {"query-log-size", CFG_INT, "10000",
     "rows system.query_log keeps in memory (the oldest go first, flushed or not)",
     O(query_log_size), 16, 10000000, false, false},
    {"query-log-flush", CFG_BOOL, "true",
     "with --warehouse: write system.query_log's rows to the warehouse's MergeTree table system.query_log, which every server of that warehouse shares (hostname and server_address tell them apart), so they outlive restarts; SELECT FROM system.query_log reads that table and the rows not yet written, each row once",
     O(query_log_flush), 0, 0, false, false},
    {"query-log-flush-interval", CFG_MS, "7500ms",
     "how often system.query_log's new rows are written to the warehouse (SYSTEM FLUSH LOGS: now); a failed write is logged and retried, the rows stay in memory meanwhile",
     O(query_log_flush_interval_ms), 100, 3600000, false, false},
    {"max-query-size", CFG_SIZE, "256KiB",
     "default of the max_query_size setting: bytes of a query's text", O(max_query_size), 1024,
     1LL << 30, false, false},
    {"max-body-size", CFG_SIZE, "1GiB", "bytes of one request's body (an INSERT's data); more: 413",
     O(max_body_size), 1 << 20, INT64_MAX, false, false},
    {"max-connections", CFG_INT, "1000", "client connections open at once; more are answered 503",
     O(max_connections), 1, 100000, false, false},
    {"keep-alive-timeout", CFG_MS, "30s",
     "an idle keep-alive connection is closed after this (sent as Keep-Alive: timeout=N)",
     O(keep_alive_timeout_ms), 3000, 3600000, false, false},
    {"request-timeout", CFG_MS, "60s",
     "a request's head, each piece of its body and each write of its answer must make progress within this (else 408, or the connection closes)",
     O(request_timeout_ms), 100, 3600000, false, false},
    {"drain-timeout", CFG_MS, "30s",
     "on SIGTERM, time given to running queries before they are cancelled", O(drain_timeout_ms), 0,
     3600000, false, false},
    {"session-timeout", CFG_MS, "60s",
     "a session_id's settings and database live this long after its last query, unless session_timeout says otherwise (at most 1 h)",
     O(session_timeout_ms), 1000, 3600000, false, false},
    {"background-pool-size", CFG_INT, "2", "threads of the background pool (table merges)",
     O(background_pool_size), 1, 64, false, false},
    {"background-merges", CFG_BOOL, "true",
     "merge the warehouse's table parts and delete old ones in the background (with --warehouse)",
     O(background_merges), 0, 0, false, false},
    {"merge-memory", CFG_SIZE, "0",
     "bytes the background merges together may hold (ClickHouse's merges_mutations_memory_usage_soft_limit); a merge that would not fit is not started, one that crosses it stops; either way its parts stay as they were (0: no limit of their own; merges count in --max-server-memory-usage too)",
     O(merge_memory), 0, INT64_MAX, false, false},
    {"merge-interval", CFG_MS, "10s", "a background thread looks for merges this often",
     O(merge_interval_ms), 100, 3600000, false, false},
    {"table-refresh-interval", CFG_MS, "1s",
     "a SELECT reads a table as this server last found it in the table's log on S3, when that was less than this ago, without asking S3 again: what other servers commit shows within this, what this server commits at once (select_sequential_consistency = 1 asks S3 for one query; 0: every query asks)",
     O(table_refresh_ms), 0, 3600000, false, false},
    {"tls-cert", CFG_STR, NULL, "PEM certificate chain: HTTPS on the HTTP port", O(tls_cert), 0, 0,
     false, false},
    {"tls-key", CFG_STR, NULL, "PEM private key of --tls-cert", O(tls_key), 0, 0, false, false},
    {"display-name", CFG_STR, NULL, "X-ClickHouse-Server-Display-Name (default: the host name)",
     O(display_name), 0, 0, false, false},
    {"cluster", CFG_STR, NULL,
     "clusters of compute servers for s3Cluster(): NAME=host:port,host:port (each member by its HTTP address) or NAME=dns:SRV-NAME; several separated by ';'",
     O(cluster), 0, 0, false, false},
    {"cluster-secret", CFG_STR, NULL,
     "the secret the servers of a cluster share: work units are taken only from a server that sends it (required with --cluster, and on every worker)",
     O(cluster_secret), 0, 0, true, false},
    {"cluster-secret-file", CFG_STR, NULL,
     "read --cluster-secret from this file (its first line), e.g. a mounted Secret",
     O(cluster_secret_file), 0, 0, false, false},
    {"cluster-dns-interval-ms", CFG_INT, "10000",
     "how often a NAME=dns:SRV-NAME cluster's name is resolved again (servers that joined or left; the DNS server is RINGCACHE_DNS_SERVER's, else /etc/resolv.conf's)",
     O(cluster_dns_interval_ms), 100, 3600000, false, false},
    {"cluster-tls-ca", CFG_STR, NULL,
     "with --tls-cert the servers of a cluster talk HTTPS to each other and verify each member's certificate (its host:port name) against this PEM CA bundle (default: the system's CAs)",
     O(cluster_tls_ca), 0, 0, false, false},
    {"log-level", CFG_STR, "info", "error, warn, info or debug", O(log_level), 0, 0, false, false},
};

#define N_OPTS (sizeof(srv_opts) / sizeof(srv_opts[0]))

int srv_conf_load(srv_conf *conf, int argc, char **argv)
{
    char err[512];
    memset(conf, 0, sizeof(*conf));
    if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
        printf("ringcache server %s (answers as ClickHouse %s)\n", RINGCACHE_VERSION,
               ENG_CLICKHOUSE_VERSION);
        return 1;
    }
    int rc = cfg_load(srv_opts, N_OPTS, conf, argc, argv, err, sizeof(err));
    if (rc == 1) {
        cfg_help(srv_opts, N_OPTS,
                 "ringcache server [--config FILE] [--key value ...]\n"
                 "       ringcache server --version\n"
                 "The compute node as a server speaking ClickHouse's HTTP interface (port 8123):\n"
                 "any ClickHouse client runs SQL over S3 files and tables through it, and every\n"
                 "query shares one page cache and one cache client. Every option is also a\n"
                 "`key = value` line of the --config file.",
                 stdout);
        return 1;
    }
    if (rc < 0) {
        fprintf(stderr, "ringcache server: %s\n", err);
        return -EINVAL;
    }
    if (conf->port >= 0)
        conf->http_port = conf->port;
    if (srv_log_set_level(conf->log_level) < 0) {
        fprintf(stderr,
                "ringcache server: --log-level takes error, warn, info or debug, not "
                "'%s'\n",
                conf->log_level);
        return -EINVAL;
    }
    if (!conf->tls_cert[0] != !conf->tls_key[0]) {
        fprintf(stderr, "ringcache server: --tls-cert and --tls-key go together: give both for "
                        "HTTPS, or neither\n");
        return -EINVAL;
    }
    return 0;
}
