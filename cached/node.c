/* SPDX-License-Identifier: Apache-2.0
 *
 * node.c: ringcached's configuration table, its lifecycle (open the store,
 * bind, run the workers, drain on SIGTERM), the worker threads with their
 * mailboxes, and the fill table: the read-through path that makes one S3 GET
 * per block however many requests, connections and threads ask for it.
 *
 * A fill lives in the table from the first miss until its block is on disk
 * and indexed; a request that arrives in between (the data came back, the
 * write is in progress) is served from the fill's buffer. Waiters are told
 * through their worker's mailbox, so a fill running on worker A answers
 * requests of worker B on B's thread.
 */
#include "node_int.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

/* ---- configuration ---------------------------------------------------------- */

#define O(field) offsetof(node_conf, field), sizeof(((node_conf *)0)->field)

const cfg_opt node_opts[] = {
    {"listen", CFG_STR, NULL, "address of the protocol port (default: 0.0.0.0 with --tenants or --allow-anonymous, else 127.0.0.1)", O(listen), 0, 0, false, false},
    {"port", CFG_INT, "7070", "protocol port (0: any free port, see --port-file)", O(port), 0, 65535, false, false},
    {"port-file", CFG_STR, NULL, "write the bound protocol port here (for tests and scripts)", O(port_file), 0, 0, false, false},
    {"admin-listen", CFG_STR, "0.0.0.0", "address of the admin HTTP port", O(admin_listen), 0, 0, false, false},
    {"admin-port", CFG_INT, "9070", "admin HTTP port: /metrics /healthz /readyz /config (0: any free port)", O(admin_port), 0, 65535, false, false},
    {"admin-port-file", CFG_STR, NULL, "write the bound admin port here", O(admin_port_file), 0, 0, false, false},
    {"threads", CFG_INT, "0", "worker threads, each with its own event loop (0: one per core)", O(threads), 0, 256, false, false},
    {"data-dir", CFG_STR, NULL, "folder for the block store (data file, index)", O(data_dir), 0, 0, false, true},
    {"ssd-capacity", CFG_SIZE, "10GiB", "bytes of SSD the store may use (hard limit)", O(ssd_capacity), 1 << 20, INT64_MAX, false, false},
    {"ram-capacity", CFG_SIZE, "1GiB", "bytes of the RAM tier in front of the SSD (0: off)", O(ram_capacity), 0, INT64_MAX, false, false},
    {"block-size", CFG_SIZE, "1MiB", "block size, one per cluster (power of two)", O(block_size), 4096, 64 << 20, false, false},
    {"region-size", CFG_SIZE, "64MiB", "eviction unit on disk (multiple of the block size)", O(region_size), 1 << 20, 1LL << 32, false, false},
    {"io", CFG_STR, "auto", "disk I/O: auto (io_uring, else threads), io_uring, threads", O(io), 0, 0, false, false},
    {"no-sync", CFG_BOOL, "false", "skip fsyncs: survives a kill, not a power loss (tests, benchmarks)", O(no_sync), 0, 0, false, false},
    {"strict-store", CFG_BOOL, "false", "refuse to start on a damaged data folder (superblock, index, data file, or another block size or capacity); by default it is set aside into DIR/quarantine-TIME/ and the node starts empty", O(strict_store), 0, 0, false, false},
    {"s3-endpoint", CFG_STR, NULL, "S3 endpoint URL (default: AWS_ENDPOINT_URL, else AWS for the region)", O(s3_endpoint), 0, 0, false, false},
    {"s3-region", CFG_STR, NULL, "S3 region (default: AWS_REGION, else us-east-1)", O(s3_region), 0, 0, false, false},
    {"s3-access-key", CFG_STR, NULL, "S3 access key for fills (default: the AWS environment)", O(s3_access_key), 0, 0, true, false},
    {"s3-secret-key", CFG_STR, NULL, "S3 secret key for fills (default: the AWS environment)", O(s3_secret_key), 0, 0, true, false},
    {"s3-connections", CFG_INT, "32", "S3 connections per worker thread", O(s3_connections), 1, 1024, false, false},
    {"members", CFG_STR, NULL, "cluster members: id=host:port,... | file:PATH | dns:NAME[:PORT] (write-through placement)", O(members), 0, 0, false, false},
    {"node-id", CFG_STR, NULL, "this node's member id (default: the host name)", O(node_id), 0, 0, false, false},
    {"tenants", CFG_STR, NULL, "tenants file (tokens, allowed buckets/prefixes, credentials); empty: open", O(tenants), 0, 0, false, false},
    {"allow-anonymous", CFG_BOOL, "false", "without --tenants, serve clients of other hosts too (anyone who reaches the port reads what the node's S3 credentials can)", O(allow_anonymous), 0, 0, false, false},
    {"peer-token", CFG_STR, NULL, "token cache nodes use with each other (PUT_BLOCK)", O(peer_token), 0, 0, true, false},
    {"peer-token-file", CFG_STR, NULL, "read --peer-token from this file (first line), e.g. a mounted Secret", O(peer_token_file), 0, 0, false, false},
    {"tls-cert", CFG_STR, NULL, "PEM certificate chain: TLS on the protocol and admin ports", O(tls_cert), 0, 0, false, false},
    {"tls-key", CFG_STR, NULL, "PEM private key of --tls-cert", O(tls_key), 0, 0, false, false},
    {"tls-ca", CFG_STR, NULL, "PEM CAs this node trusts when it connects to its peers over TLS", O(tls_ca), 0, 0, false, false},
    {"fill-deadline", CFG_MS, "20s", "a fill from S3 that takes longer fails (shorter than clients' timeout)", O(fill_deadline_ms), 100, 3600000, false, false},
    {"max-outstanding", CFG_INT, "64", "requests in flight per connection (announced in HELLO)", O(max_outstanding), 1, 4096, false, false},
    {"max-buffered", CFG_SIZE, "8MiB", "answer bytes queued per connection before it stops reading", O(max_buffered), 64 << 10, 1LL << 31, false, false},
    {"chunk-size", CFG_SIZE, "256KiB", "answers go out in chunks of this size, interleaved", O(chunk_size), 4096, 16 << 20, false, false},
    {"part-size", CFG_SIZE, "8MiB", "multipart part size for write-through PUTs", O(part_size), 5 << 20, 5LL << 30, false, false},
    {"drain-timeout", CFG_MS, "10s", "on SIGTERM, time given to in-flight requests", O(drain_timeout_ms), 0, 600000, false, false},
    {"max-fills", CFG_INT, "256", "fills from S3 in flight on this node; a GET past it is answered busy, WARM takes at most half", O(max_fills), 2, 65536, false, false},
    {"max-warm-blocks", CFG_INT, "1024", "blocks one WARM request may name", O(max_warm_blocks), 1, 65536, false, false},
    {"max-connections", CFG_INT, "0", "connections open at once; more are answered busy and closed (0: the descriptor limit less a reserve, at most 10000)", O(max_connections), 0, 1000000, false, false},
    {"frame-timeout", CFG_MS, "10s", "a frame (and HELLO, after connecting) must arrive whole within this, or the connection is closed", O(frame_timeout_ms), 100, 3600000, false, false},
    {"idle-timeout", CFG_MS, "0", "close a connection with nothing in flight after this long (0: never)", O(idle_timeout_ms), 0, 86400000, false, false},
    {"log-level", CFG_STR, "info", "error, warn, info or debug", O(log_level), 0, 0, false, false},
};
const size_t node_n_opts = sizeof(node_opts) / sizeof(node_opts[0]);

static int g_log_level = NODE_LOG_INFO;

void node_log(int level, const char *fmt, ...)
{
    if (level > g_log_level)
        return;
    static const char *names[] = {"error", "warn", "info", "debug"};
    char line[2048];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof(line), "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, names[level]);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}

int node_conf_load(node_conf *conf, int argc, char **argv)
{
    char err[512];
    memset(conf, 0, sizeof(*conf));
    int rc = cfg_load(node_opts, node_n_opts, conf, argc, argv, err, sizeof(err));
    if (rc == 1) {
        cfg_help(node_opts, node_n_opts,
                 "ringcached --data-dir DIR [--config FILE] [--key value ...]\n"
                 "The ringcache cache node: keeps blocks of S3 objects on local SSD and serves\n"
                 "them to compute nodes (read-through, write-through). Every option is also a\n"
                 "`key = value` line of the --config file.",
                 stdout);
        return 1;
    }
    if (rc < 0) {
        fprintf(stderr, "ringcached: %s\n", err);
        return -EINVAL;
    }
    static const char *levels[] = {"error", "warn", "info", "debug"};
    g_log_level = -1;
    for (int i = 0; i < 4; i++)
        if (strcmp(conf->log_level, levels[i]) == 0)
            g_log_level = i;
    if (g_log_level < 0) {
        fprintf(stderr, "ringcached: --log-level must be error, warn, info or debug, not '%s'\n",
                conf->log_level);
        return -EINVAL;
    }
    if (conf->block_size & (conf->block_size - 1)) {
        fprintf(stderr, "ringcached: --block-size must be a power of two (e.g. 1MiB), not %lld\n",
                (long long)conf->block_size);
        return -EINVAL;
    }
    if (strcmp(conf->io, "auto") && strcmp(conf->io, "io_uring") && strcmp(conf->io, "threads")) {
        fprintf(stderr, "ringcached: --io must be auto, io_uring or threads, not '%s'\n", conf->io);
        return -EINVAL;
    }
    if (conf->peer_token_file[0]) {
        if (conf->peer_token[0]) {
            fprintf(stderr, "ringcached: give --peer-token or --peer-token-file, not both\n");
            return -EINVAL;
        }
        FILE *f = fopen(conf->peer_token_file, "r");
        if (!f || !fgets(conf->peer_token, sizeof(conf->peer_token), f)) {
            fprintf(stderr, "ringcached: cannot read --peer-token-file %s: %s\n",
                    conf->peer_token_file, f ? "it is empty" : strerror(errno));
            if (f)
                fclose(f);
            return -EINVAL;
        }
        fclose(f);
        conf->peer_token[strcspn(conf->peer_token, "\r\n")] = '\0';
        if (!conf->peer_token[0]) {
            fprintf(stderr, "ringcached: --peer-token-file %s has an empty first line\n",
                    conf->peer_token_file);
            return -EINVAL;
        }
    }
    if (!conf->node_id[0] && gethostname(conf->node_id, sizeof(conf->node_id) - 1) != 0)
        snprintf(conf->node_id, sizeof(conf->node_id), "ringcached");
    return 0;
}

/* ---- buffers -------------------------------------------------------------- */

node_buf *node_buf_new(size_t len)
{
    node_buf *b = malloc(sizeof(*b) + (len ? len : 1));
    if (!b)
        return NULL;
    atomic_init(&b->ref, 1);
    b->len = len;
    return b;
}

void node_buf_ref(node_buf *b) { atomic_fetch_add_explicit(&b->ref, 1, memory_order_relaxed); }

void node_buf_unref(node_buf *b)
{
    if (b && atomic_fetch_sub_explicit(&b->ref, 1, memory_order_acq_rel) == 1)
        free(b);
}

/* ---- metrics ------------------------------------------------------------- */

static const met_def node_metric_defs[NM__COUNT] = {
    [NM_REQUESTS] = {"ringcached_requests_total", "protocol requests received", MET_COUNTER, NULL},
    [NM_GET] = {"ringcached_get_requests_total", "GET requests", MET_COUNTER, NULL},
    [NM_HITS] = {"ringcached_hits_total", "GETs served from the store (RAM or SSD)", MET_COUNTER, NULL},
    [NM_MISSES] = {"ringcached_misses_total", "GETs the store did not have", MET_COUNTER, NULL},
    [NM_FILLS] = {"ringcached_s3_get_requests_total", "fills started: one ranged S3 GET per block", MET_COUNTER, NULL},
    [NM_FILL_WAITS] = {"ringcached_singleflight_waits_total", "requests that waited for a fill another request started", MET_COUNTER, NULL},
    [NM_FILL_FROM_BUFFER] = {"ringcached_fill_buffer_hits_total", "requests served from a fill's buffer before it was indexed", MET_COUNTER, NULL},
    [NM_S3_GET_BYTES] = {"ringcached_s3_get_bytes_total", "bytes read from S3 by fills", MET_COUNTER, NULL},
    [NM_S3_ERRORS] = {"ringcached_s3_errors_total", "fills and S3 calls that failed", MET_COUNTER, NULL},
    [NM_VERSION_CHANGED] = {"ringcached_version_changed_total", "answers 'version changed' (the object is not the version asked for)", MET_COUNTER, NULL},
    [NM_BYTES_SERVED] = {"ringcached_bytes_served_total", "data bytes sent in GET answers", MET_COUNTER, NULL},
    [NM_CONNECTIONS] = {"ringcached_connections_total", "connections accepted", MET_COUNTER, NULL},
    [NM_CONNECTIONS_OPEN] = {"ringcached_connections_open", "connections open now", MET_GAUGE, NULL},
    [NM_ERRORS_SENT] = {"ringcached_error_answers_total", "ERROR frames sent", MET_COUNTER, NULL},
    [NM_PROTOCOL_ERRORS] = {"ringcached_protocol_errors_total", "connections closed for corrupt framing", MET_COUNTER, NULL},
    [NM_CANCELS] = {"ringcached_cancels_total", "requests cancelled by their client", MET_COUNTER, NULL},
    [NM_FORBIDDEN] = {"ringcached_forbidden_total", "requests refused: outside the tenant's prefixes or a bad token", MET_COUNTER, NULL},
    [NM_PUTS] = {"ringcached_puts_total", "write-through PUTs completed", MET_COUNTER, NULL},
    [NM_PUT_BYTES] = {"ringcached_put_bytes_total", "bytes written through to S3", MET_COUNTER, NULL},
    [NM_PUT_BLOCKS_SENT] = {"ringcached_put_blocks_sent_total", "blocks sent to their owner after a write-through PUT", MET_COUNTER, NULL},
    [NM_PUT_BLOCKS_RECEIVED] = {"ringcached_put_blocks_received_total", "PUT_BLOCK requests indexed", MET_COUNTER, NULL},
    [NM_WARM_BLOCKS] = {"ringcached_warm_blocks_total", "blocks asked for by WARM", MET_COUNTER, NULL},
    [NM_FILL_TIMEOUTS] = {"ringcached_fill_timeouts_total", "fills that missed the fill deadline", MET_COUNTER, NULL},
    [NM_LATENCY] = {"ringcached_request_seconds", "GET latency from request to last byte queued", MET_HISTOGRAM, NULL},
    [NM_CONN_REFUSED] = {"ringcached_connections_refused_total", "connections answered busy and closed at --max-connections", MET_COUNTER, NULL},
    [NM_ACCEPT_ERRORS] = {"ringcached_accept_errors_total", "accepts that failed for lack of file descriptors (accepting pauses)", MET_COUNTER, NULL},
    [NM_CONN_TIMEOUTS] = {"ringcached_connections_timed_out_total", "connections closed by the frame or idle timeout", MET_COUNTER, NULL},
};


void node__count(node_worker *w, int metric, uint64_t v)
{
    met_add(w->n->metrics, w->idx, w->n->metric_base + metric, v);
}

void node__gauge_add(node_worker *w, int metric, int64_t delta)
{
    met_gauge_add(w->n->metrics, w->n->metric_base + metric, delta);
}

void node__latency(node_worker *w, uint64_t us)
{
    met_observe_us(w->n->metrics, w->idx, w->n->metric_base + NM_LATENCY, us);
}

typedef enum {
    G_RAM_HITS, G_RAM_MISSES, G_SSD_HITS, G_SSD_MISSES, G_EVICTIONS, G_REINSERT, G_REINSERT_SKIP, G_CHECKSUM,
    G_IOERR, G_INFLIGHT, G_SSD_USED, G_SSD_CAP, G_RAM_USED, G_RAM_CAP, G_BLOCKS, G_BYTES,
    G__COUNT
} node_gauge;

/* The block store's running totals (counters, read at render time) and its
 * levels (gauges). */
static const met_def node_gauge_defs[G__COUNT] = {
    [G_RAM_HITS] = {"ringcached_tier_hits_total", "store hits per tier", MET_COUNTER, "tier=\"ram\""},
    [G_RAM_MISSES] = {"ringcached_tier_misses_total", "store misses per tier", MET_COUNTER, "tier=\"ram\""},
    [G_SSD_HITS] = {"ringcached_tier_hits_total", "store hits per tier", MET_COUNTER, "tier=\"ssd\""},
    [G_SSD_MISSES] = {"ringcached_tier_misses_total", "store misses per tier", MET_COUNTER, "tier=\"ssd\""},
    [G_EVICTIONS] = {"ringcached_evictions_total", "regions evicted from the SSD", MET_COUNTER, NULL},
    [G_REINSERT] = {"ringcached_reinsertions_total", "hot blocks kept when their region was evicted", MET_COUNTER, NULL},
    [G_REINSERT_SKIP] = {"ringcached_reinsertions_skipped_total", "hot blocks dropped at eviction for lack of a free region to copy them into", MET_COUNTER, NULL},
    [G_CHECKSUM] = {"ringcached_checksum_failures_total", "blocks whose bytes failed their checksum (dropped, refilled)", MET_COUNTER, NULL},
    [G_IOERR] = {"ringcached_io_errors_total", "disk reads and writes that failed", MET_COUNTER, NULL},
    [G_INFLIGHT] = {"ringcached_io_inflight", "disk I/O submitted and not completed", MET_GAUGE, NULL},
    [G_SSD_USED] = {"ringcached_capacity_used_bytes", "bytes used per tier", MET_GAUGE, "tier=\"ssd\""},
    [G_SSD_CAP] = {"ringcached_capacity_bytes", "capacity per tier", MET_GAUGE, "tier=\"ssd\""},
    [G_RAM_USED] = {"ringcached_capacity_used_bytes", "bytes used per tier", MET_GAUGE, "tier=\"ram\""},
    [G_RAM_CAP] = {"ringcached_capacity_bytes", "capacity per tier", MET_GAUGE, "tier=\"ram\""},
    [G_BLOCKS] = {"ringcached_blocks_stored", "blocks in the store", MET_GAUGE, NULL},
    [G_BYTES] = {"ringcached_bytes_stored", "logical bytes in the store", MET_GAUGE, NULL},
};

typedef struct gauge_arg {
    node *n;
    node_gauge g;
} gauge_arg;

static int64_t node_gauge_fn(void *arg)
{
    gauge_arg *ga = arg;
    bs_stats st;
    bs_stats_get(ga->n->store, &st);
    switch (ga->g) {
    case G_RAM_HITS: return (int64_t)st.ram_hits;
    case G_RAM_MISSES: return (int64_t)st.ram_misses;
    case G_SSD_HITS: return (int64_t)st.ssd_hits;
    case G_SSD_MISSES: return (int64_t)st.ssd_misses;
    case G_EVICTIONS: return (int64_t)st.evictions;
    case G_REINSERT: return (int64_t)st.reinsertions;
    case G_REINSERT_SKIP: return (int64_t)st.reinsert_skipped;
    case G_CHECKSUM: return (int64_t)st.checksum_failures;
    case G_IOERR: return (int64_t)st.io_errors;
    case G_INFLIGHT: return (int64_t)st.inflight;
    case G_SSD_USED: return (int64_t)st.ssd_used;
    case G_SSD_CAP: return (int64_t)st.ssd_capacity;
    case G_RAM_USED: return (int64_t)st.ram_bytes;
    case G_RAM_CAP: return (int64_t)st.ram_capacity;
    case G_BLOCKS: return (int64_t)st.blocks_stored;
    case G_BYTES: return (int64_t)st.bytes_stored;
    default: return 0;
    }
}


/* ---- the fill table ---------------------------------------------------------- */

typedef struct node_waiter node_waiter;
struct node_waiter {
    node_waiter *next;
    unsigned worker;
    uint64_t conn_serial;
    uint32_t req_id;
    uint32_t off, len;
    bool creator;                /* this request started the fill */
};

enum { FILL_RUNNING, FILL_DONE, FILL_FAILED };

struct node_fill {
    node_fill *hnext;
    bkey key;
    int ref;                     /* table + in-flight S3 + write; under fill_lock */
    int state;
    bool in_table;
    node *n;
    node_worker *owner;
    node_buf *buf;
    uint32_t block_len;
    node_waiter *waiters;
    struct event *deadline;
    /* identity copies for the S3 GET and the store write */
    char tenant[257], bucket[64], key_s[1025], version[129];
    uint64_t object_size, index;
    uint32_t got;                /* bytes S3 delivered into buf */
    bool had_waiters;            /* a GET asked (not only a WARM) */
    int rcp_code;
    char message[2048];
};

static size_t fill_bucket(const node *n, bkey k) { return (size_t)(k.lo ^ k.hi) % n->fill_buckets; }

static void fill_unref_locked(node *n, node_fill *f)
{
    if (--f->ref > 0)
        return;
    node_buf_unref(f->buf);
    if (f->deadline)
        event_free(f->deadline);
    node_waiter *w = f->waiters;
    while (w) {
        node_waiter *nx = w->next;
        free(w);
        w = nx;
    }
    free(f);
}

/* Take f out of the table; true when it was there (its reference is then the
 * caller's to drop). */
static bool fill_remove_locked(node *n, node_fill *f)
{
    if (!f->in_table)
        return false;
    node_fill **pp = &n->fill_table[fill_bucket(n, f->key)];
    while (*pp && *pp != f)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = f->hnext;
    f->in_table = false;
    n->fills_active--;
    return true;
}


/* Tell every waiter (under fill_lock). */
static void fill_notify_locked(node_fill *f)
{
    node *n = f->n;
    node_waiter *w = f->waiters;
    f->waiters = NULL;
    while (w) {
        node_waiter *nx = w->next;
        node_msg *m = calloc(1, sizeof(*m));
        if (m) {
            m->conn_serial = w->conn_serial;
            m->req_id = w->req_id;
            if (f->state == FILL_DONE) {
                node_buf_ref(f->buf);
                m->buf = f->buf;
                m->off = w->off;
                m->len = w->len;
                m->source = w->creator ? RCP_SRC_S3 : RCP_SRC_FILL_WAIT;
            } else {
                m->rcp_code = f->rcp_code;
                snprintf(m->message, sizeof(m->message), "%.255s", f->message);
            }
            node__post(&n->workers[w->worker], m);
        }
        free(w);
        w = nx;
    }
}

static void fill_stored(void *arg, int rc)
{
    node_fill *f = arg;
    node *n = f->n;
    if (rc < 0)
        node_log(NODE_LOG_WARN, "msg=\"block not stored\" bucket=%s key=\"%s\" block=%llu err=%d",
                 f->bucket, f->key_s, (unsigned long long)f->index, rc);
    pthread_mutex_lock(&n->fill_lock);
    /* indexed (or failed): later requests use the store. Drop the table's
     * reference (if still there) and the write's in one step. */
    if (fill_remove_locked(n, f))
        f->ref--; /* the write's reference keeps f alive here */
    fill_unref_locked(n, f);
    pthread_mutex_unlock(&n->fill_lock);
}

static void fill_got(const s3_error *err, const s3_get_result *res, void *arg)
{
    node_fill *f = arg;
    node *n = f->n;
    node_worker *w = f->owner;
    if (err->code == 0 && res->bytes != f->block_len) {
        /* the object is not the size the client pinned: another version */
        s3_error e2 = *err;
        e2.code = -ESTALE;
        snprintf(e2.message, sizeof(e2.message),
                 "s3://%s/%.300s is %llu bytes, not the %llu the request was pinned to",
                 f->bucket, f->key_s, (unsigned long long)res->object_size,
                 (unsigned long long)f->object_size);
        fill_got(&e2, res, arg);
        return;
    }
    if (err->code && err->http_status == 416) {
        /* a range inside the pinned size is outside the object now: it is
         * another, shorter version (servers that ignore If-Match say so) */
        s3_error e2 = *err;
        e2.code = -ESTALE;
        e2.http_status = 412;
        snprintf(e2.message, sizeof(e2.message),
                 "s3://%s/%.300s is shorter than the %llu bytes the request was pinned to "
                 "(it changed)", f->bucket, f->key_s, (unsigned long long)f->object_size);
        fill_got(&e2, res, arg);
        return;
    }
    if (err->code == 0)
        node__count(w, NM_S3_GET_BYTES, res->bytes);
    else if (err->code != -ECANCELED)
        node__count(w, err->code == -ESTALE ? NM_VERSION_CHANGED : NM_S3_ERRORS, 1);
    pthread_mutex_lock(&n->fill_lock);
    bool store = false;
    if (f->state == FILL_RUNNING) {
        if (err->code == 0) {
            f->state = FILL_DONE;
            store = true;
        } else {
            f->state = FILL_FAILED;
            f->rcp_code = err->code == -ESTALE    ? RCP_E_VERSION_CHANGED
                          : err->code == -ENOENT  ? RCP_E_NOT_FOUND
                          : err->code == -ECANCELED ? RCP_E_BUSY
                                                   : RCP_E_UPSTREAM;
            if (f->rcp_code == RCP_E_UPSTREAM)
                node__upstream_message(n, err->message, f->message, sizeof(f->message));
            else
                snprintf(f->message, sizeof(f->message), "%s", err->message);
            /* out of the table: the next request tries again. The S3 GET's
             * reference (dropped below) keeps f alive until then. */
            if (fill_remove_locked(n, f))
                f->ref--;
        }
        if (f->deadline)
            evtimer_del(f->deadline);
        fill_notify_locked(f);
    } else if (err->code == 0) {
        store = true; /* timed out for its waiters, but the data is good: keep it */
    }
    if (store)
        f->ref++; /* the write's */
    pthread_mutex_unlock(&n->fill_lock);

    if (store && w->bs) {
        bkey_id id;
        bkey_id_init(&id, f->tenant, f->bucket, f->key_s, f->version, f->object_size, f->index);
        if (bs_write(w->bs, &id, f->buf->data, f->block_len, fill_stored, f) < 0)
            fill_stored(f, -EIO);
    } else if (store) {
        fill_stored(f, -ESHUTDOWN);
    }
    pthread_mutex_lock(&n->fill_lock);
    fill_unref_locked(n, f); /* the S3 GET's reference */
    pthread_mutex_unlock(&n->fill_lock);
}

void node__upstream_message(const node *n, const char *s3_message, char *out, size_t cap)
{
    /* the S3 client's last hint speaks to a client's environment
     * ("; is the S3 endpoint up? (set AWS_ENDPOINT_URL)"): not this node's */
    char m[512];
    snprintf(m, sizeof(m), "%s", s3_message);
    char *semi = strrchr(m, ';'), *colon = strstr(m, ": check ");
    char *hint = semi && (!colon || semi > colon) ? semi : colon;
    if (hint && strstr(hint, "AWS_"))
        *hint = '\0';
    snprintf(out, cap, "cache node %s's S3 access failed (check its --s3-endpoint and "
             "credentials): %s", n->conf.node_id, m);
}

static void fill_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    node_fill *f = arg;
    node *n = f->n;
    pthread_mutex_lock(&n->fill_lock);
    if (f->state == FILL_RUNNING) {
        f->state = FILL_FAILED;
        f->rcp_code = RCP_E_TIMEOUT;
        snprintf(f->message, sizeof(f->message),
                 "fill of s3://%s/%s block %llu from S3 took longer than %lld ms", f->bucket,
                 f->key_s, (unsigned long long)f->index, (long long)n->conf.fill_deadline_ms);
        fill_notify_locked(f);
        node__count(f->owner, NM_FILL_TIMEOUTS, 1);
        /* the S3 GET still holds a reference: f outlives this */
        if (fill_remove_locked(n, f))
            f->ref--;
    }
    pthread_mutex_unlock(&n->fill_lock);
}

/* S3 delivers a fill's bytes here (the S3 client's thread is the owner's).
 * A fill that timed out, or whose every waiter left, stops its S3 request
 * at the next bytes instead of downloading a block nobody waits for. */
static int fill_data(const void *data, size_t len, void *arg)
{
    node_fill *f = arg;
    node *n = f->n;
    pthread_mutex_lock(&n->fill_lock);
    bool abandoned = f->state != FILL_RUNNING || (f->had_waiters && !f->waiters);
    pthread_mutex_unlock(&n->fill_lock);
    if (abandoned)
        return -ECANCELED;
    if (len > f->block_len - f->got)
        return -EMSGSIZE;
    memcpy(f->buf->data + f->got, data, len);
    f->got += (uint32_t)len;
    return 0;
}

size_t node__fills_active(node *n)
{
    pthread_mutex_lock(&n->fill_lock);
    size_t k = n->fills_active;
    pthread_mutex_unlock(&n->fill_lock);
    return k;
}

static int str_copy(char *dst, size_t cap, const char *src, size_t len)
{
    if (len + 1 > cap)
        return -ENAMETOOLONG;
    memcpy(dst, src, len);
    dst[len] = '\0';
    return 0;
}

int node__fill_join(node_worker *w, const node_fill_args *a, node_fill **joined)
{
    node *n = w->n;
    bkey k = bkey_of(a->id);
    node_waiter *wt = NULL;
    if (a->conn_serial) {
        wt = calloc(1, sizeof(*wt));
        if (!wt)
            return -ENOMEM;
        wt->worker = w->idx;
        wt->conn_serial = a->conn_serial;
        wt->req_id = a->req_id;
        wt->off = a->off;
        wt->len = a->len;
    }
    pthread_mutex_lock(&n->fill_lock);
    node_fill *f = n->fill_table[fill_bucket(n, k)];
    while (f && !bkey_equal(f->key, k))
        f = f->hnext;
    if (f) {
        if (f->state == FILL_DONE) {
            /* the data is here, the write is not done: serve from the buffer */
            if (wt) {
                node_msg *m = calloc(1, sizeof(*m));
                if (m) {
                    node_buf_ref(f->buf);
                    m->buf = f->buf;
                    m->conn_serial = wt->conn_serial;
                    m->req_id = wt->req_id;
                    m->off = wt->off;
                    m->len = wt->len;
                    m->source = RCP_SRC_FILL_WAIT;
                    node__post(w, m);
                }
                free(wt);
                node__count(w, NM_FILL_FROM_BUFFER, 1);
            }
            pthread_mutex_unlock(&n->fill_lock);
            *joined = NULL;
            return 0;
        }
        if (wt) {
            wt->next = f->waiters;
            f->waiters = wt;
            node__count(w, NM_FILL_WAITS, 1);
        }
        pthread_mutex_unlock(&n->fill_lock);
        *joined = wt ? f : NULL;
        return 0;
    }
    /* No fill runs. The caller's store lookup missed, but a fill may have
     * finished (written and indexed) since: then the store has it, and a new
     * S3 GET would be a second one for the block. */
    if (!a->force && bs_contains(n->store, a->id)) {
        pthread_mutex_unlock(&n->fill_lock);
        free(wt);
        return -EAGAIN;
    }
    if (n->fills_active >= (size_t)n->conf.max_fills) {
        pthread_mutex_unlock(&n->fill_lock);
        free(wt);
        return -EBUSY;
    }
    /* a new fill, run on this worker */
    f = calloc(1, sizeof(*f));
    if (!f) {
        pthread_mutex_unlock(&n->fill_lock);
        free(wt);
        return -ENOMEM;
    }
    f->n = n;
    f->owner = w;
    f->key = k;
    f->block_len = a->block_len;
    f->object_size = a->id->object_size;
    f->index = a->id->index;
    f->buf = node_buf_new(a->block_len);
    f->deadline = evtimer_new(w->base, fill_deadline_cb, f);
    if (!f->buf || !f->deadline ||
        str_copy(f->tenant, sizeof(f->tenant), a->id->tenant, a->id->tenant_len) ||
        str_copy(f->bucket, sizeof(f->bucket), a->id->bucket, a->id->bucket_len) ||
        str_copy(f->key_s, sizeof(f->key_s), a->id->key, a->id->key_len) ||
        str_copy(f->version, sizeof(f->version), a->id->version, a->id->version_len)) {
        pthread_mutex_unlock(&n->fill_lock);
        node_buf_unref(f->buf);
        if (f->deadline)
            event_free(f->deadline);
        free(f);
        free(wt);
        return -ENOMEM;
    }
    if (wt)
        wt->creator = true;
    f->waiters = wt;
    f->had_waiters = wt != NULL;
    f->ref = 2; /* the table and the S3 GET */
    f->in_table = true;
    size_t b = fill_bucket(n, k);
    f->hnext = n->fill_table[b];
    n->fill_table[b] = f;
    n->fills_active++;
    pthread_mutex_unlock(&n->fill_lock);

    node__count(w, NM_FILLS, 1);
    uint64_t start = a->id->index * (uint64_t)n->conf.block_size;
    s3_get_args ga = {.bucket = f->bucket, .key = f->key_s, .offset = start,
                      .length = f->block_len, .if_match = f->version[0] ? f->version : NULL,
                      .on_data = fill_data, .data_arg = f};
    struct timeval tv = {n->conf.fill_deadline_ms / 1000, (n->conf.fill_deadline_ms % 1000) * 1000};
    evtimer_add(f->deadline, &tv);
    int rc = s3_get(node__s3_for(w, a->tenant), &ga, fill_got, f);
    if (rc < 0) {
        s3_error e = {0};
        e.code = rc;
        snprintf(e.message, sizeof(e.message), "cannot start the S3 GET for s3://%s/%.300s: %s",
                 f->bucket, f->key_s, strerror(-rc));
        /* fill_got runs the failure path: waiters told, table entry removed */
        s3_get_result res = {0};
        fill_got(&e, &res, f);
    }
    *joined = wt ? f : NULL;
    return 0;
}

void node__fill_leave(node *n, node_fill *f, uint64_t conn_serial, uint32_t req_id)
{
    pthread_mutex_lock(&n->fill_lock);
    /* f may already have notified (its waiters list emptied): then nothing to do */
    node_waiter **pp = &f->waiters;
    while (*pp && !((*pp)->conn_serial == conn_serial && (*pp)->req_id == req_id))
        pp = &(*pp)->next;
    if (*pp) {
        node_waiter *w = *pp;
        *pp = w->next;
        free(w);
    }
    pthread_mutex_unlock(&n->fill_lock);
}

/* ---- workers --------------------------------------------------------------- */

void node__post(node_worker *w, node_msg *m)
{
    m->next = NULL;
    pthread_mutex_lock(&w->mb_lock);
    if (w->mb_tail)
        w->mb_tail->next = m;
    else
        w->mb_head = m;
    w->mb_tail = m;
    pthread_mutex_unlock(&w->mb_lock);
    event_active(w->mailbox_ev, EV_READ, 0);
}

static void worker_mailbox_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    node_worker *w = arg;
    pthread_mutex_lock(&w->mb_lock);
    node_msg *m = w->mb_head;
    w->mb_head = w->mb_tail = NULL;
    pthread_mutex_unlock(&w->mb_lock);
    while (m) {
        node_msg *nx = m->next;
        node__deliver(w, m); /* takes ownership */
        m = nx;
    }
}

s3_client *node__s3_for(node_worker *w, const ten_tenant *t)
{
    node *n = w->n;
    if (t && n->tenants && ten_access_key(t)) {
        size_t cnt = ten_count(n->tenants);
        for (size_t i = 0; i < cnt; i++) {
            if (ten_at(n->tenants, i) != t)
                continue;
            if (!w->tenant_s3[i]) {
                s3_config c = n->s3cfg;
                snprintf(c.access_key, sizeof(c.access_key), "%s", ten_access_key(t));
                snprintf(c.secret_key, sizeof(c.secret_key), "%s",
                         ten_secret_key(t) ? ten_secret_key(t) : "");
                snprintf(c.session_token, sizeof(c.session_token), "%s",
                         ten_session_token(t) ? ten_session_token(t) : "");
                if (s3_client_create(&w->tenant_s3[i], &c, w->base) < 0)
                    return w->s3;
            }
            return w->tenant_s3[i];
        }
    }
    return w->s3;
}

static void listener_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                        int salen, void *arg)
{
    (void)l;
    (void)sa;
    (void)salen;
    node_worker *w = arg;
    node *n = w->n;
    if (atomic_load(&n->stopping)) {
        close(fd);
        return;
    }
    if (atomic_load(&n->conns_open) >= n->max_connections) {
        /* one ERROR frame (plain text only: a TLS client gets the close) */
        node__count(w, NM_CONN_REFUSED, 1);
        if (!n->ssl_ctx) {
            char msg[200];
            snprintf(msg, sizeof(msg),
                     "this node has its %d connections open (--max-connections): use another "
                     "node or try again",
                     n->max_connections);
            uint8_t frame[RCP_HEADER_SIZE + 256];
            rcp_error e = {RCP_E_BUSY, rcp_s(msg)};
            int k = rcp_encode_error(&e, frame + RCP_HEADER_SIZE, sizeof(frame) - RCP_HEADER_SIZE);
            if (k > 0) {
                rcp_header h = {RCP_OP_ERROR, RCP_F_RESPONSE, 0, (uint32_t)k};
                rcp_header_encode(&h, frame);
                ssize_t wr = send(fd, frame, RCP_HEADER_SIZE + (size_t)k, MSG_NOSIGNAL | MSG_DONTWAIT);
                (void)wr;
            }
        }
        close(fd);
        return;
    }
    node__accept(w, fd);
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void accept_resume_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    node_worker *w = arg;
    if (w->accept_paused && !atomic_load(&w->n->stopping)) {
        w->accept_paused = false;
        evconnlistener_enable(w->listener);
    }
}

/* accept() failed. Out of descriptors (EMFILE, ENFILE, ENOBUFS, ENOMEM): the
 * pending connection stays in the backlog and the listener would wake at
 * once, forever; so stop accepting until a connection of this worker closes
 * or 100 ms pass (memcached does the same), count it, and log at most one
 * line per 10 s. */
static void listener_error_cb(struct evconnlistener *l, void *arg)
{
    node_worker *w = arg;
    node *n = w->n;
    int e = EVUTIL_SOCKET_ERROR();
    node__count(w, NM_ACCEPT_ERRORS, 1);
    if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
        evconnlistener_disable(l);
        w->accept_paused = true;
        struct timeval tv = {0, 100000};
        evtimer_add(w->accept_timer, &tv);
    }
    int64_t now = mono_ms(), last = atomic_load(&n->accept_log_ms);
    if (now - last >= 10000 && atomic_compare_exchange_strong(&n->accept_log_ms, &last, now)) {
        long long skipped = atomic_exchange(&n->accept_log_skipped, 0);
        node_log(NODE_LOG_WARN,
                 "msg=\"cannot accept a connection: %s (accepting pauses until one closes; "
                 "raise the descriptor limit, ulimit -n, or lower --max-connections)\" "
                 "connections=%d not_logged=%lld",
                 strerror(e), atomic_load(&n->conns_open), skipped);
    } else {
        atomic_fetch_add(&n->accept_log_skipped, 1);
    }
}

static void worker_sweep_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    node__sweep(arg, mono_ms());
}


static void worker_drain_check(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    node_worker *w = arg;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    if (!w->drain_deadline_ms)
        w->drain_deadline_ms = now + w->n->conf.drain_timeout_ms;
    size_t busy = node__conn_count(w);
    if (busy == 0 || now >= w->drain_deadline_ms) {
        if (busy)
            node_log(NODE_LOG_WARN, "msg=\"drain deadline passed\" worker=%u connections=%zu",
                     w->idx, busy);
        node__close_all(w);
        event_base_loopexit(w->base, NULL);
        return;
    }
    struct timeval tv = {0, 50000};
    evtimer_add(w->drain_timer, &tv);
}

static void worker_stop_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    node_worker *w = arg;
    if (w->listener)
        evconnlistener_disable(w->listener);
    if (w->accept_timer)
        evtimer_del(w->accept_timer);
    w->drain_timer = evtimer_new(w->base, worker_drain_check, w);
    worker_drain_check(-1, 0, w);
}

static void *worker_main(void *arg)
{
    node_worker *w = arg;
    event_base_dispatch(w->base);
    /* drained: release what lives on this thread */
    for (size_t i = 0; i < w->n_peers; i++)
        cc_conn_destroy(&w->peers[i]);
    event_base_loop(w->base, EVLOOP_NONBLOCK);
    bs_worker_detach(&w->bs);
    s3_client_destroy(&w->s3);
    if (w->n->tenants)
        for (size_t i = 0; i < ten_count(w->n->tenants); i++)
            s3_client_destroy(&w->tenant_s3[i]);
    if (w->drain_timer)
        event_free(w->drain_timer);
    w->drain_timer = NULL;
    return NULL;
}

/* ---- lifecycle -------------------------------------------------------------- */

static void bs_log_cb(void *ctx, int level, const char *msg)
{
    (void)ctx;
    node_log(level <= BS_LOG_ERROR ? NODE_LOG_ERROR
             : level == BS_LOG_WARN ? NODE_LOG_WARN
             : level == BS_LOG_INFO ? NODE_LOG_INFO
                                    : NODE_LOG_DEBUG,
             "module=store %s", msg);
}

static void membership_log_cb(void *arg, enum membership_level level, const char *line)
{
    (void)arg;
    node_log(level == MEMBERSHIP_ERROR  ? NODE_LOG_ERROR
             : level == MEMBERSHIP_WARN ? NODE_LOG_WARN
             : level == MEMBERSHIP_INFO ? NODE_LOG_INFO
                                        : NODE_LOG_DEBUG,
             "module=membership %s", line);
}

static int config_text_cb(void *arg, char **out, size_t *len)
{
    node *n = arg;
    size_t cap = 64 * 1024;
    char *buf = malloc(cap);
    if (!buf)
        return -ENOMEM;
    int k = cfg_format(node_opts, node_n_opts, &n->conf, buf, cap);
    if (k < 0) {
        free(buf);
        return k;
    }
    *out = buf;
    *len = (size_t)k;
    return 0;
}

static int write_port_file(const char *path, int port)
{
    char tmp[1024];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -errno;
    fprintf(f, "%d\n", port);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        return -errno;
    return 0;
}

static int bind_listener(const char *addr, int port, int *fd_out, int *port_out)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    socklen_t sl;
    if (strchr(addr, ':')) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1)
            return -EINVAL;
        sl = sizeof(*s6);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, addr, &s4->sin_addr) != 1)
            return -EINVAL;
        sl = sizeof(*s4);
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, 1024) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    if (port == 0) {
        getsockname(fd, (struct sockaddr *)&ss, &sl);
        port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                              : ((struct sockaddr_in *)&ss)->sin_port);
    }
    *fd_out = fd;
    *port_out = port;
    return 0;
}

int node_create(node **out, const node_conf *conf)
{
    evthread_use_pthreads();
    node *n = calloc(1, sizeof(*n));
    if (!n)
        return -ENOMEM;
    n->conf = *conf;
    n->listen_fd = -1;
    pthread_mutex_init(&n->fill_lock, NULL);
    n->fill_buckets = 4096;
    n->fill_table = calloc(n->fill_buckets, sizeof(*n->fill_table));
    char err[512];
    int rc;

    /* S3 settings: the AWS environment, then the flags */
    s3_config_init(&n->s3cfg);
    if (s3_config_from_env(&n->s3cfg, err, sizeof(err)) < 0) {
        node_log(NODE_LOG_ERROR, "msg=\"%s\"", err);
        node_destroy(&n);
        return -EINVAL;
    }
    if (conf->s3_endpoint[0]) {
        snprintf(n->s3cfg.endpoint, sizeof(n->s3cfg.endpoint), "%s", conf->s3_endpoint);
        n->s3cfg.path_style = true;
    }
    if (conf->s3_region[0])
        snprintf(n->s3cfg.region, sizeof(n->s3cfg.region), "%s", conf->s3_region);
    if (conf->s3_access_key[0])
        snprintf(n->s3cfg.access_key, sizeof(n->s3cfg.access_key), "%s", conf->s3_access_key);
    if (conf->s3_secret_key[0])
        snprintf(n->s3cfg.secret_key, sizeof(n->s3cfg.secret_key), "%s", conf->s3_secret_key);
    n->s3cfg.max_connections = (int)conf->s3_connections;
    /* a fill's own S3 retries must fit inside the fill deadline */
    n->s3cfg.retry_budget_ms = (int)conf->fill_deadline_ms;
    if (!n->s3cfg.endpoint[0] && !conf->s3_region[0] && !getenv("AWS_REGION") &&
        !getenv("AWS_DEFAULT_REGION")) {
        fprintf(stderr, "ringcached: no S3 endpoint: set --s3-endpoint (or AWS_ENDPOINT_URL) "
                        "for an S3-compatible store, or --s3-region (or AWS_REGION) for AWS\n");
        node_destroy(&n);
        return -EINVAL;
    }

    if (conf->tenants[0]) {
        if ((rc = ten_load(&n->tenants, conf->tenants, err, sizeof(err))) < 0) {
            fprintf(stderr, "ringcached: %s\n", err);
            node_destroy(&n);
            return rc;
        }
    }

    /* protected mode: a node without tenants answers anyone who reaches it
     * with the node's own S3 credentials, so it serves loopback only unless
     * told otherwise */
    bool protected_mode = !n->tenants && !conf->allow_anonymous;
    if (!n->conf.listen[0]) {
        snprintf(n->conf.listen, sizeof(n->conf.listen), "%s",
                 protected_mode ? "127.0.0.1" : "0.0.0.0");
    } else if (protected_mode && !ten_addr_text_is_loopback(n->conf.listen)) {
        fprintf(stderr,
                "ringcached: --listen %s without --tenants would let any host that reaches the "
                "port read whatever this node's S3 credentials can read: give --tenants FILE, "
                "or --allow-anonymous to serve anonymous clients on purpose, or listen on "
                "127.0.0.1\n",
                n->conf.listen);
        node_destroy(&n);
        return -EINVAL;
    }
    conf = &n->conf;
    if (protected_mode)
        node_log(NODE_LOG_INFO,
                 "msg=\"protected mode: no --tenants, so only clients on this host are served\" "
                 "listen=%s fix=\"give --tenants FILE, or --allow-anonymous to serve other "
                 "hosts\"",
                 conf->listen);
    else if (!n->tenants)
        node_log(NODE_LOG_WARN,
                 "msg=\"anonymous clients allowed (--allow-anonymous): anyone who reaches the "
                 "port reads what this node's S3 credentials can\" listen=%s",
                 conf->listen);

    /* connections: what the descriptor limit allows, less a reserve for the
     * store, S3 and peer connections, the admin port and accept itself */
    struct rlimit rl;
    long long fd_room = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                            ? (long long)rl.rlim_cur - 64 - 2 * conf->s3_connections
                            : 10000;
    if (conf->max_connections > 0) {
        n->max_connections = (int)conf->max_connections;
        if (conf->max_connections > fd_room)
            node_log(NODE_LOG_WARN,
                     "msg=\"--max-connections %lld is more than the descriptor limit leaves "
                     "room for (about %lld): raise ulimit -n, or accepting will pause when it "
                     "runs out\"",
                     (long long)conf->max_connections, fd_room);
    } else {
        n->max_connections = (int)(fd_room > 10000 ? 10000 : fd_room < 16 ? 16 : fd_room);
    }

    unsigned threads = conf->threads > 0 ? (unsigned)conf->threads
                                         : (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    if (threads < 1)
        threads = 1;
    n->n_workers = threads;

    bs_config bc = {0};
    bc.dir = conf->data_dir;
    bc.ssd_bytes = (uint64_t)conf->ssd_capacity;
    bc.ram_bytes = (uint64_t)conf->ram_capacity;
    bc.block_size = (uint32_t)conf->block_size;
    bc.region_size = (uint32_t)conf->region_size;
    bc.io_mode = !strcmp(conf->io, "io_uring") ? BS_IO_URING
                 : !strcmp(conf->io, "threads") ? BS_IO_THREADS
                                                : BS_IO_AUTO;
    bc.no_sync = conf->no_sync;
    bc.strict = conf->strict_store;
    bc.log = bs_log_cb;
    if ((rc = bs_open(&n->store, &bc, err, sizeof(err))) < 0) {
        bool damaged = rc == -EMEDIUMTYPE || rc == -EUCLEAN;
        fprintf(stderr, "ringcached: %s%s\n", err,
                damaged ? "; --strict-store is set: without it the node sets the damaged "
                          "folder aside and starts empty" : "");
        node_destroy(&n);
        return rc;
    }

    if ((rc = met_create(&n->metrics, threads)) < 0 ||
        (rc = met_register(n->metrics, node_metric_defs, NM__COUNT)) < 0) {
        node_destroy(&n);
        return rc < 0 ? rc : -ENOMEM;
    }
    n->metric_base = rc;
    static const met_def store_defs[] = {
        {"ringcached_store_quarantines_total", "damaged data folders set aside at start (the store then started empty)", MET_COUNTER, NULL},
    };
    int qbase = met_register(n->metrics, store_defs, 1);
    bs_stats bst;
    bs_stats_get(n->store, &bst);
    if (qbase >= 0 && bst.quarantined)
        met_add(n->metrics, met_shared_slot(n->metrics), qbase, bst.quarantined);
    int gbase = met_register(n->metrics, node_gauge_defs, G__COUNT);
    n->gauge_args = calloc(G__COUNT, sizeof(*n->gauge_args));
    if (gbase >= 0 && n->gauge_args)
        for (int g = 0; g < G__COUNT; g++) {
            n->gauge_args[g] = (gauge_arg){n, (node_gauge)g};
            met_set_fn(n->metrics, gbase + g, node_gauge_fn, &n->gauge_args[g]);
        }

    /* the protocol port: one socket per worker on the same port (SO_REUSEPORT) */
    n->workers = calloc(threads, sizeof(*n->workers));
    if (!n->workers) {
        node_destroy(&n);
        return -ENOMEM;
    }
    int port = (int)conf->port;
    for (unsigned i = 0; i < threads; i++) {
        node_worker *w = &n->workers[i];
        w->n = n;
        w->idx = i;
        pthread_mutex_init(&w->mb_lock, NULL);
        w->base = event_base_new();
        if (!w->base) {
            node_destroy(&n);
            return -ENOMEM;
        }
        int fd = -1;
        rc = bind_listener(conf->listen, port, &fd, &port);
        if (rc < 0) {
            if (rc == -EADDRINUSE)
                fprintf(stderr, "ringcached: port %s:%lld is in use (set --port, or 0 for any)\n",
                        conf->listen, (long long)conf->port);
            else if (rc == -EINVAL)
                fprintf(stderr, "ringcached: --listen '%s' is not an IP address\n", conf->listen);
            else
                fprintf(stderr, "ringcached: cannot listen on %s:%d: %s\n", conf->listen, port,
                        strerror(-rc));
            node_destroy(&n);
            return rc;
        }
        w->listener = evconnlistener_new(w->base, listener_cb, w, LEV_OPT_CLOSE_ON_FREE, -1, fd);
        w->mailbox_ev = event_new(w->base, -1, EV_PERSIST | EV_READ, worker_mailbox_cb, w);
        w->stop_ev = event_new(w->base, -1, 0, worker_stop_cb, w);
        w->accept_timer = evtimer_new(w->base, accept_resume_cb, w);
        w->sweep_timer = event_new(w->base, -1, EV_PERSIST, worker_sweep_cb, w);
        if (w->listener)
            evconnlistener_set_error_cb(w->listener, listener_error_cb);
        if (w->sweep_timer) {
            struct timeval tv = {0, 250000};
            event_add(w->sweep_timer, &tv);
        }
        if (n->tenants)
            w->tenant_s3 = calloc(ten_count(n->tenants) + 1, sizeof(s3_client *));
        if (!w->listener || !w->mailbox_ev || !w->stop_ev || !w->accept_timer || !w->sweep_timer ||
            (n->tenants && !w->tenant_s3)) {
            node_destroy(&n);
            return -ENOMEM;
        }
        event_add(w->mailbox_ev, NULL);
        if ((rc = bs_worker_attach(n->store, w->base, &w->bs)) < 0 ||
            (rc = s3_client_create(&w->s3, &n->s3cfg, w->base)) < 0) {
            fprintf(stderr, "ringcached: cannot set up worker %u: %s\n", i, strerror(-rc));
            node_destroy(&n);
            return rc;
        }
    }
    n->port = port;

    n->main_base = event_base_new();
    if (conf->members[0]) {
        struct membership_options mo = {0};
        mo.base = n->main_base;
        mo.log = membership_log_cb;
        if ((rc = membership_create(&n->members, conf->members, &mo, err, sizeof(err))) < 0) {
            fprintf(stderr, "ringcached: --members: %s\n", err);
            node_destroy(&n);
            return rc;
        }
    }

    if (conf->tls_cert[0] || conf->tls_key[0]) {
        if (!conf->tls_cert[0] || !conf->tls_key[0]) {
            fprintf(stderr, "ringcached: TLS needs both --tls-cert and --tls-key\n");
            node_destroy(&n);
            return -EINVAL;
        }
        n->ssl_ctx = SSL_CTX_new(TLS_server_method());
        if (!n->ssl_ctx ||
            SSL_CTX_use_certificate_chain_file(n->ssl_ctx, conf->tls_cert) != 1 ||
            SSL_CTX_use_PrivateKey_file(n->ssl_ctx, conf->tls_key, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(n->ssl_ctx) != 1) {
            char why[256];
            ERR_error_string_n(ERR_get_error(), why, sizeof(why));
            fprintf(stderr,
                    "ringcached: cannot load the TLS certificate %s / key %s: %s (check the files "
                    "and that the key matches the certificate)\n",
                    conf->tls_cert, conf->tls_key, why);
            node_destroy(&n);
            return -EINVAL;
        }
        SSL_CTX_set_min_proto_version(n->ssl_ctx, TLS1_2_VERSION);
    }
    adm_config ac = {conf->admin_listen, (int)conf->admin_port,
                     conf->admin_port_file[0] ? conf->admin_port_file : NULL,
                     conf->tls_cert[0] ? conf->tls_cert : NULL,
                     conf->tls_key[0] ? conf->tls_key : NULL};
    if ((rc = adm_start(&n->admin, &ac, n->metrics, config_text_cb, n, err, sizeof(err))) < 0) {
        fprintf(stderr, "ringcached: %s\n", err);
        node_destroy(&n);
        return rc;
    }
    if (conf->port_file[0] && (rc = write_port_file(conf->port_file, port)) < 0) {
        fprintf(stderr, "ringcached: cannot write --port-file %s: %s\n", conf->port_file,
                strerror(-rc));
        node_destroy(&n);
        return rc;
    }
    bs_stats st;
    bs_stats_get(n->store, &st);
    node_log(NODE_LOG_INFO,
             "msg=\"ringcached ready\" node=%s listen=%s port=%d admin_port=%d tls=%s threads=%u "
             "io=%s max_connections=%d blocks=%llu ssd_capacity=%llu ram_capacity=%llu",
             conf->node_id, conf->listen, port, adm_port(n->admin), n->ssl_ctx ? "on" : "off", threads,
             st.io_uring ? "io_uring" : "threads", n->max_connections,
             (unsigned long long)st.blocks_stored,
             (unsigned long long)st.ssd_capacity, (unsigned long long)st.ram_capacity);
    *out = n;
    return 0;
}

void node_stop(node *n)
{
    if (atomic_exchange(&n->stopping, true))
        return;
    adm_set_ready(n->admin, false);
    adm_set_not_ready_reason(n->admin, "draining");
    for (unsigned i = 0; i < n->n_workers; i++)
        event_active(n->workers[i].stop_ev, EV_READ, 0);
    event_base_loopbreak(n->main_base);
}

void node_reload(node *n)
{
    if (n->members) {
        int rc = membership_reload(n->members);
        node_log(rc < 0 ? NODE_LOG_WARN : NODE_LOG_INFO,
                 "msg=\"membership reloaded\" spec=\"%s\" rc=%d", membership_spec(n->members), rc);
    }
}

int node_run(node *n)
{
    for (unsigned i = 0; i < n->n_workers; i++)
        if (pthread_create(&n->workers[i].thread, NULL, worker_main, &n->workers[i]) != 0) {
            node_log(NODE_LOG_ERROR, "msg=\"cannot start worker threads\"");
            n->n_workers = i;
            node_stop(n);
            break;
        }
    adm_set_ready(n->admin, true);
    /* the main loop: membership re-resolution and the signal events of main.c */
    while (!atomic_load(&n->stopping))
        event_base_loop(n->main_base, EVLOOP_ONCE);
    for (unsigned i = 0; i < n->n_workers; i++)
        pthread_join(n->workers[i].thread, NULL);
    node_log(NODE_LOG_INFO, "msg=\"drained\"");
    return 0;
}

struct event_base *node_main_base(node *n);
struct event_base *node_main_base(node *n) { return n->main_base; }

void node_destroy(node **np)
{
    if (!np || !*np)
        return;
    node *n = *np;
    adm_stop(&n->admin);
    membership_destroy(&n->members);
    if (n->main_base)
        event_base_loop(n->main_base, EVLOOP_NONBLOCK);
    for (unsigned i = 0; n->workers && i < n->n_workers; i++) {
        node_worker *w = &n->workers[i];
        if (w->listener)
            evconnlistener_free(w->listener);
        if (w->bs)
            bs_worker_detach(&w->bs);
        s3_client_destroy(&w->s3);
        if (w->tenant_s3) {
            for (size_t k = 0; n->tenants && k < ten_count(n->tenants); k++)
                s3_client_destroy(&w->tenant_s3[k]);
            free(w->tenant_s3);
        }
        free(w->peers);
        if (w->mailbox_ev) {
            /* messages left: drop their buffers */
            worker_mailbox_cb(-1, 0, w);
            event_free(w->mailbox_ev);
        }
        if (w->stop_ev)
            event_free(w->stop_ev);
        if (w->accept_timer)
            event_free(w->accept_timer);
        if (w->sweep_timer)
            event_free(w->sweep_timer);
        if (w->base)
            event_base_free(w->base);
        pthread_mutex_destroy(&w->mb_lock);
    }
    free(n->workers);
    /* fills still in the table (a fill that never completed) */
    for (size_t b = 0; n->fill_table && b < n->fill_buckets; b++) {
        node_fill *f = n->fill_table[b];
        while (f) {
            node_fill *nx = f->hnext;
            f->ref = 1;
            f->in_table = false;
            fill_unref_locked(n, f);
            f = nx;
        }
    }
    free(n->fill_table);
    bs_close(&n->store);
    SSL_CTX_free(n->ssl_ctx);
    met_destroy(&n->metrics);
    free(n->gauge_args);
    ten_destroy(&n->tenants);
    if (n->main_base)
        event_base_free(n->main_base);
    pthread_mutex_destroy(&n->fill_lock);
    free(n);
    *np = NULL;
}
