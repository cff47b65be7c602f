/* SPDX-License-Identifier: Apache-2.0
 *
 * node_metrics.c: the node's table of metrics (served on the admin port's
 * /metrics and by the STATS operation) and the counting helpers the other
 * files of the node use: counters and the latency histogram per worker
 * thread, gauges shared, and the block store's figures read at render time.
 */
#include "node_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

int node_metrics_setup(node *n, char *err, size_t errlen)
{
    int rc = met_create(&n->metrics, n->n_workers);
    if (rc >= 0)
        rc = met_register(n->metrics, node_metric_defs, NM__COUNT);
    if (rc >= 0) {
        n->metric_base = rc;
        rc = met_register(n->metrics, node_gauge_defs, G__COUNT);
    }
    int gbase = rc;
    if (rc >= 0) {
        n->gauge_args = calloc(G__COUNT, sizeof(*n->gauge_args));
        rc = n->gauge_args ? 0 : -ENOMEM;
    }
    for (int g = 0; rc >= 0 && g < G__COUNT; g++) {
        n->gauge_args[g] = (gauge_arg){n, (node_gauge)g};
        rc = met_set_fn(n->metrics, gbase + g, node_gauge_fn, &n->gauge_args[g]);
    }
    if (rc < 0)
        cfg_errf(err, errlen, "cannot set up the node's metrics: %s", strerror(-rc));
    return rc < 0 ? rc : 0;
}

void node_metrics_teardown(node *n)
{
    met_destroy(&n->metrics);
    free(n->gauge_args);
    n->gauge_args = NULL;
}
