/* SPDX-License-Identifier: Apache-2.0
 *
 * node_conf.c: ringcached's options (one table: the config file, the flags,
 * --help and /config), the checks across options that the table cannot
 * express, and the node's log: logfmt lines handed to the caller's sink.
 */
#include "node_int.h"
#include "errf.h"
#include "logfmt.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the options ------------------------------------------------------------- */

#define O(field) offsetof(node_conf, field), sizeof(((node_conf *)0)->field)

const cfg_opt node_opts[] = {
    {"listen", CFG_STR, NULL,
     "address of the protocol port (default: 0.0.0.0 with --tenants or --allow-anonymous, else 127.0.0.1)",
     O(listen), 0, 0, false, false},
    {"port", CFG_INT, "7070", "protocol port (0: any free port, see --port-file)", O(port), 0,
     65535, false, false},
    {"port-file", CFG_STR, NULL, "write the bound protocol port here (for tests and scripts)",
     O(port_file), 0, 0, false, false},
    {"admin-listen", CFG_STR, "0.0.0.0", "address of the admin HTTP port", O(admin_listen), 0, 0,
     false, false},
    {"admin-port", CFG_INT, "9070",
     "admin HTTP port: /metrics /healthz /readyz /config (0: any free port)", O(admin_port), 0,
     65535, false, false},
    {"admin-port-file", CFG_STR, NULL, "write the bound admin port here", O(admin_port_file), 0, 0,
     false, false},
    {"threads", CFG_INT, "0", "worker threads, each with its own event loop (0: one per core)",
     O(threads), 0, 256, false, false},
    {"data-dir", CFG_STR, NULL, "folder for the block store (data file, index)", O(data_dir), 0, 0,
     false, true},
    {"ssd-capacity", CFG_SIZE, "10GiB", "bytes of SSD the store may use (hard limit)",
     O(ssd_capacity), 1 << 20, INT64_MAX, false, false},
    {"ram-capacity", CFG_SIZE, "1GiB", "bytes of the RAM tier in front of the SSD (0: off)",
     O(ram_capacity), 0, INT64_MAX, false, false},
    {"block-size", CFG_SIZE, "1MiB", "block size, one per cluster (power of two)", O(block_size),
     4096, 64 << 20, false, false},
    {"region-size", CFG_SIZE, "64MiB", "eviction unit on disk (multiple of the block size)",
     O(region_size), 1 << 20, 1LL << 32, false, false},
    {"io", CFG_STR, "auto", "disk I/O: auto (io_uring, else threads), io_uring, threads", O(io), 0,
     0, false, false},
    {"no-sync", CFG_BOOL, "false",
     "skip fsyncs: survives a kill, not a power loss (tests, benchmarks)", O(no_sync), 0, 0, false,
     false},
    {"strict-store", CFG_BOOL, "false",
     "refuse to start on a damaged data folder (superblock, index, data file, or another block size or capacity); by default it is set aside into DIR/quarantine-TIME/ and the node starts empty",
     O(strict_store), 0, 0, false, false},
    {"s3-endpoint", CFG_STR, NULL,
     "S3 endpoint URL (default: AWS_ENDPOINT_URL, else AWS for the region)", O(s3_endpoint), 0, 0,
     false, false},
    {"s3-region", CFG_STR, NULL, "S3 region (default: AWS_REGION, else us-east-1)", O(s3_region), 0,
     0, false, false},
    {"s3-access-key", CFG_STR, NULL, "S3 access key for fills (default: the AWS environment)",
     O(s3_access_key), 0, 0, true, false},
    {"s3-secret-key", CFG_STR, NULL, "S3 secret key for fills (default: the AWS environment)",
     O(s3_secret_key), 0, 0, true, false},
    {"s3-connections", CFG_INT, "32", "S3 connections per worker thread", O(s3_connections), 1,
     1024, false, false},
    {"members", CFG_STR, NULL,
     "cluster members: id=host:port,... | file:PATH | dns:NAME[:PORT] (write-through placement)",
     O(members), 0, 0, false, false},
    {"node-id", CFG_STR, NULL, "this node's member id (default: the host name)", O(node_id), 0, 0,
     false, false},
    {"tenants", CFG_STR, NULL,
     "tenants file (tokens, allowed buckets/prefixes, credentials); empty: open", O(tenants), 0, 0,
     false, false},
    {"allow-anonymous", CFG_BOOL, "false",
     "without --tenants, serve clients of other hosts too (anyone who reaches the port reads what the node's S3 credentials can)",
     O(allow_anonymous), 0, 0, false, false},
    {"peer-token", CFG_STR, NULL, "token cache nodes use with each other (PUT_BLOCK)",
     O(peer_token), 0, 0, true, false},
    {"peer-token-file", CFG_STR, NULL,
     "read --peer-token from this file (first line), e.g. a mounted Secret", O(peer_token_file), 0,
     0, false, false},
    {"tls-cert", CFG_STR, NULL, "PEM certificate chain: TLS on the protocol and admin ports",
     O(tls_cert), 0, 0, false, false},
    {"tls-key", CFG_STR, NULL, "PEM private key of --tls-cert", O(tls_key), 0, 0, false, false},
    {"tls-ca", CFG_STR, NULL, "PEM CAs this node trusts when it connects to its peers over TLS",
     O(tls_ca), 0, 0, false, false},
    {"fill-deadline", CFG_MS, "20s",
     "a fill from S3 that takes longer fails (shorter than clients' timeout)", O(fill_deadline_ms),
     100, 3600000, false, false},
    {"max-outstanding", CFG_INT, "64", "requests in flight per connection (announced in HELLO)",
     O(max_outstanding), 1, 4096, false, false},
    {"max-buffered", CFG_SIZE, "8MiB", "answer bytes queued per connection before it stops reading",
     O(max_buffered), 64 << 10, 1LL << 31, false, false},
    {"chunk-size", CFG_SIZE, "256KiB", "answers go out in chunks of this size, interleaved",
     O(chunk_size), 4096, 16 << 20, false, false},
    {"sendfile", CFG_STR, "remote",
     "send RAM-tier hits with sendfile() from the tier's pages, no copy on the node: to clients on other hosts (remote), to all (always), never (to this host's clients a copy costs less CPU in all)",
     O(sendfile), 0, 0, false, false},
    {"part-size", CFG_SIZE, "8MiB", "multipart part size for write-through PUTs", O(part_size),
     5 << 20, 5LL << 30, false, false},
    {"drain-timeout", CFG_MS, "10s", "on SIGTERM, time given to in-flight requests",
     O(drain_timeout_ms), 0, 600000, false, false},
    {"max-fills", CFG_INT, "256",
     "fills from S3 in flight on this node; a GET past it is answered busy, WARM takes at most half",
     O(max_fills), 2, 65536, false, false},
    {"max-warm-blocks", CFG_INT, "1024", "blocks one WARM request may name", O(max_warm_blocks), 1,
     65536, false, false},
    {"max-connections", CFG_INT, "0",
     "connections open at once; more are answered busy and closed (0: the descriptor limit less a reserve, at most 10000)",
     O(max_connections), 0, 1000000, false, false},
    {"frame-timeout", CFG_MS, "10s",
     "a frame (and HELLO, after connecting) must arrive whole within this, or the connection is closed",
     O(frame_timeout_ms), 100, 3600000, false, false},
    {"idle-timeout", CFG_MS, "0",
     "close a connection with nothing in flight after this long (0: never)", O(idle_timeout_ms), 0,
     86400000, false, false},
    {"log-level", CFG_STR, "info", "error, warn, info or debug", O(log_level), 0, 0, false, false},
    {"s3-api-port", CFG_INT, "-1",
     "S3 API port: awscli, boto3, Spark and any S3 client read and write through the cache here (-1: off; 0: any free port, see --s3-api-port-file)",
     O(s3_api_port), -1, 65535, false, false},
    {"s3-api-listen", CFG_STR, NULL,
     "address of the S3 API port (default: as --listen, 0.0.0.0 with --tenants or --allow-anonymous, else 127.0.0.1)",
     O(s3_api_listen), 0, 0, false, false},
    {"s3-api-port-file", CFG_STR, NULL, "write the bound S3 API port here", O(s3_api_port_file), 0,
     0, false, false},
    {"s3-api-region", CFG_STR, "us-east-1",
     "the region the S3 API names in GetBucketLocation and HeadBucket (clients may sign for any region)",
     O(s3_api_region), 0, 0, false, false},
    {"s3-api-domain", CFG_STR, NULL,
     "domains of virtual-hosted-style S3 API requests (http://BUCKET.DOMAIN/key), comma-separated; path style always works",
     O(s3_api_domain), 0, 0, false, false},
    {"s3-api-meta-ttl", CFG_MS, "5s",
     "how long the S3 API trusts an object's size and version (ETag) from S3's HEAD before asking S3 again (0: every request); writes through this node forget it at once",
     O(s3_api_meta_ttl_ms), 0, 86400000, false, false},
    {"s3-api-staging-max", CFG_SIZE, "4GiB",
     "bytes of multipart upload parts kept in the data folder until CompleteMultipartUpload, whose blocks are then placed from them (0: none; past it, a part's blocks are filled on first read)",
     O(s3_api_staging_max), 0, INT64_MAX, false, false},
    {"s3-api-readahead", CFG_SIZE, "16MiB",
     "bytes one GetObject fetches ahead of the block it sends (from this node's store, the owners or S3, several at once); a client reading an object range after range also gets the blocks past its range fetched (0: none ahead)",
     O(s3_api_readahead), 0, 1LL << 40, false, false},
    {"s3-api-readahead-max", CFG_SIZE, "256MiB",
     "bytes every GetObject of this node together fetches ahead of what it sends; past it each fetches only the block it sends next",
     O(s3_api_readahead_max), 0, INT64_MAX, false, false},
};
const size_t node_n_opts = sizeof(node_opts) / sizeof(node_opts[0]);

/* ---- the log ------------------------------------------------------------------- */

/* Set before the node starts its threads (node_log_to, node_log_set_level),
 * read by every thread after. */
static node_log_fn g_log_fn;
static void *g_log_arg;
static int g_log_level = NODE_LOG_INFO;
void node_log_to(node_log_fn fn, void *arg)
{
    g_log_fn = fn;
    g_log_arg = arg;
}

int node_log_level_of(const char *name)
{
    return logfmt_level_of(name);
}

void node_log_set_level(int level)
{
    g_log_level = level;
}

void node_log(int level, const char *fmt, ...)
{
    if (level > g_log_level || !g_log_fn)
        return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    logfmt_vline(line, sizeof line, level, fmt, ap);
    va_end(ap);
    g_log_fn(g_log_arg, level, line);
}

/* ---- loading ------------------------------------------------------------------ */

void node_conf_help(FILE *f)
{
    cfg_help(node_opts, node_n_opts,
             "ringcached --data-dir DIR [--config FILE] [--key value ...]\n"
             "       ringcached --version\n"
             "The ringcache cache node: keeps blocks of S3 objects on local SSD and serves\n"
             "them to compute nodes (read-through, write-through). Every option is also a\n"
             "`key = value` line of the --config file.",
             f);
}

/* The first line of --peer-token-file (a mounted Secret ends it with a
 * newline or not). */
static int read_peer_token(node_conf *conf, char *err, size_t errlen)
{
    if (conf->peer_token[0]) {
        errf_set(err, errlen, "give --peer-token or --peer-token-file, not both");
        return -EINVAL;
    }
    return cfg_read_secret_line(conf->peer_token_file, "peer token file", "--peer-token-file",
                                conf->peer_token, sizeof(conf->peer_token), err, errlen);
}

int node_conf_load(node_conf *conf, int argc, char **argv, char *err, size_t errlen)
{
    memset(conf, 0, sizeof(*conf));
    if (argc >= 2 && strcmp(argv[1], "--version") == 0)
        return 2;
    int rc = cfg_load(node_opts, node_n_opts, conf, argc, argv, err, errlen);
    if (rc == 1)
        return 1;
    if (rc < 0)
        return -EINVAL;
    if (node_log_level_of(conf->log_level) < 0) {
        errf_set(err, errlen, "--log-level must be error, warn, info or debug, not '%s'",
                 conf->log_level);
        return -EINVAL;
    }
    if (conf->block_size & (conf->block_size - 1)) {
        errf_set(err, errlen, "--block-size must be a power of two (e.g. 1MiB), not %lld",
                 (long long)conf->block_size);
        return -EINVAL;
    }
    if (strcmp(conf->sendfile, "remote") && strcmp(conf->sendfile, "always") &&
        strcmp(conf->sendfile, "never")) {
        errf_set(err, errlen, "--sendfile must be remote, always or never, not '%s'",
                 conf->sendfile);
        return -EINVAL;
    }
    if (strcmp(conf->io, "auto") && strcmp(conf->io, "io_uring") && strcmp(conf->io, "threads")) {
        errf_set(err, errlen, "--io must be auto, io_uring or threads, not '%s'", conf->io);
        return -EINVAL;
    }
    if (conf->peer_token_file[0] && (rc = read_peer_token(conf, err, errlen)) < 0)
        return -EINVAL;
    if (!conf->node_id[0] && gethostname(conf->node_id, sizeof(conf->node_id) - 1) != 0)
        snprintf(conf->node_id, sizeof(conf->node_id), "ringcached");
    return 0;
}

bool node__sendfile_to(const node_conf *conf, bool loopback)
{
    return !strcmp(conf->sendfile, "always") || (!loopback && !strcmp(conf->sendfile, "remote"));
}
