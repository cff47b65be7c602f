/* SPDX-License-Identifier: Apache-2.0
 *
 * node_metrics.c: the node's table of metrics (served on the admin port's
 * /metrics and by the STATS operation) and the counting helpers the other
 * files of the node use: counters and the latency histogram per worker
 * thread, gauges shared, and the block store's figures read at render time.
 * Beside them, the process as Prometheus' client libraries name it
 * (process_cpu_seconds_total, process_resident_memory_bytes,
 * process_open_fds, process_max_fds, process_start_time_seconds, read from
 * /proc/self at render time), the node's uptime and ringcached_build_info.
 */
#include "node_int.h"
#include "errf.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <event2/event.h>
#include <openssl/crypto.h>

static const met_def node_metric_defs[NM__COUNT] = {
    [NM_REQUESTS] = {"ringcached_requests_total", "protocol requests received", MET_COUNTER, NULL},
    [NM_GET] = {"ringcached_get_requests_total", "GET requests", MET_COUNTER, NULL},
    [NM_HITS] = {"ringcached_hits_total", "GETs served from the store (RAM or SSD)", MET_COUNTER,
                 NULL},
    [NM_MISSES] = {"ringcached_misses_total", "GETs the store did not have", MET_COUNTER, NULL},
    [NM_FILLS] = {"ringcached_s3_get_requests_total", "fills started: one ranged S3 GET per block",
                  MET_COUNTER, NULL},
    [NM_FILL_WAITS] = {"ringcached_singleflight_waits_total",
                       "requests that waited for a fill another request started", MET_COUNTER,
                       NULL},
    [NM_FILL_FROM_BUFFER] = {"ringcached_fill_buffer_hits_total",
                             "requests served from a fill's buffer before it was indexed",
                             MET_COUNTER, NULL},
    [NM_S3_GET_BYTES] = {"ringcached_s3_get_bytes_total", "bytes read from S3 by fills",
                         MET_COUNTER, NULL},
    [NM_S3_ERRORS] = {"ringcached_s3_errors_total", "fills and S3 calls that failed", MET_COUNTER,
                      NULL},
    [NM_VERSION_CHANGED] = {"ringcached_version_changed_total",
                            "answers 'version changed' (the object is not the version asked for)",
                            MET_COUNTER, NULL},
    [NM_BYTES_SERVED] = {"ringcached_bytes_served_total", "data bytes sent in GET answers",
                         MET_COUNTER, NULL},
    [NM_CONNECTIONS] = {"ringcached_connections_total", "connections accepted", MET_COUNTER, NULL},
    [NM_CONNECTIONS_OPEN] = {"ringcached_connections_open", "connections open now", MET_GAUGE,
                             NULL},
    [NM_ERRORS_SENT] = {"ringcached_error_answers_total", "ERROR frames sent", MET_COUNTER, NULL},
    [NM_PROTOCOL_ERRORS] = {"ringcached_protocol_errors_total",
                            "connections closed for corrupt framing", MET_COUNTER, NULL},
    [NM_CANCELS] = {"ringcached_cancels_total", "requests cancelled by their client", MET_COUNTER,
                    NULL},
    [NM_FORBIDDEN] = {"ringcached_forbidden_total",
                      "requests refused: outside the tenant's prefixes or a bad token", MET_COUNTER,
                      NULL},
    [NM_PUTS] = {"ringcached_puts_total", "write-through PUTs completed", MET_COUNTER, NULL},
    [NM_PUT_BYTES] = {"ringcached_put_bytes_total", "bytes written through to S3", MET_COUNTER,
                      NULL},
    [NM_PUT_BLOCKS_SENT] = {"ringcached_put_blocks_sent_total",
                            "blocks sent to their owner after a write-through PUT", MET_COUNTER,
                            NULL},
    [NM_PUT_BLOCKS_RECEIVED] = {"ringcached_put_blocks_received_total",
                                "PUT_BLOCK requests indexed", MET_COUNTER, NULL},
    [NM_WARM_BLOCKS] = {"ringcached_warm_blocks_total", "blocks asked for by WARM", MET_COUNTER,
                        NULL},
    [NM_FILL_TIMEOUTS] = {"ringcached_fill_timeouts_total", "fills that missed the fill deadline",
                          MET_COUNTER, NULL},
    [NM_LATENCY] = {"ringcached_request_seconds", "GET latency from request to last byte queued",
                    MET_HISTOGRAM, NULL},
    [NM_CONN_REFUSED] = {"ringcached_connections_refused_total",
                         "connections answered busy and closed at --max-connections", MET_COUNTER,
                         NULL},
    [NM_ACCEPT_ERRORS] = {"ringcached_accept_errors_total",
                          "accepts that failed for lack of file descriptors (accepting pauses)",
                          MET_COUNTER, NULL},
    [NM_CONN_TIMEOUTS] = {"ringcached_connections_timed_out_total",
                          "connections closed by the frame or idle timeout", MET_COUNTER, NULL},
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
    G_RAM_HITS,
    G_RAM_MISSES,
    G_SSD_HITS,
    G_SSD_MISSES,
    G_EVICTIONS,
    G_REINSERT,
    G_REINSERT_SKIP,
    G_CHECKSUM,
    G_IOERR,
    G_INFLIGHT,
    G_SSD_USED,
    G_SSD_CAP,
    G_RAM_USED,
    G_RAM_CAP,
    G_BLOCKS,
    G_BYTES,
    G__COUNT
} node_gauge;

/* The block store's running totals (counters, read at render time) and its
 * levels (gauges). */
static const met_def node_gauge_defs[G__COUNT] = {
    [G_RAM_HITS] = {"ringcached_tier_hits_total", "store hits per tier", MET_COUNTER,
                    "tier=\"ram\""},
    [G_RAM_MISSES] = {"ringcached_tier_misses_total", "store misses per tier", MET_COUNTER,
                      "tier=\"ram\""},
    [G_SSD_HITS] = {"ringcached_tier_hits_total", "store hits per tier", MET_COUNTER,
                    "tier=\"ssd\""},
    [G_SSD_MISSES] = {"ringcached_tier_misses_total", "store misses per tier", MET_COUNTER,
                      "tier=\"ssd\""},
    [G_EVICTIONS] = {"ringcached_evictions_total", "regions evicted from the SSD", MET_COUNTER,
                     NULL},
    [G_REINSERT] = {"ringcached_reinsertions_total",
                    "hot blocks kept when their region was evicted", MET_COUNTER, NULL},
    [G_REINSERT_SKIP] =
        {"ringcached_reinsertions_skipped_total",
         "hot blocks dropped at eviction for lack of a free region to copy them into", MET_COUNTER,
         NULL},
    [G_CHECKSUM] = {"ringcached_checksum_failures_total",
                    "blocks whose bytes failed their checksum (dropped, refilled)", MET_COUNTER,
                    NULL},
    [G_IOERR] = {"ringcached_io_errors_total", "disk reads and writes that failed", MET_COUNTER,
                 NULL},
    [G_INFLIGHT] = {"ringcached_io_inflight", "disk I/O submitted and not completed", MET_GAUGE,
                    NULL},
    [G_SSD_USED] = {"ringcached_capacity_used_bytes", "bytes used per tier", MET_GAUGE,
                    "tier=\"ssd\""},
    [G_SSD_CAP] = {"ringcached_capacity_bytes", "capacity per tier", MET_GAUGE, "tier=\"ssd\""},
    [G_RAM_USED] = {"ringcached_capacity_used_bytes", "bytes used per tier", MET_GAUGE,
                    "tier=\"ram\""},
    [G_RAM_CAP] = {"ringcached_capacity_bytes", "capacity per tier", MET_GAUGE, "tier=\"ram\""},
    [G_BLOCKS] = {"ringcached_blocks_stored", "blocks in the store", MET_GAUGE, NULL},
    [G_BYTES] = {"ringcached_bytes_stored", "logical bytes in the store", MET_GAUGE, NULL},
};

/* What the store's opening did, counted once at start. */
static const met_def node_store_defs[] = {
    {"ringcached_store_quarantines_total",
     "damaged data folders set aside at start (the store then started empty)", MET_COUNTER, NULL},
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

/* ---- the process -------------------------------------------------------------- */

typedef enum { P_CPU, P_RSS, P_OPEN_FDS, P_MAX_FDS, P_START, P_UPTIME, P__COUNT } node_proc;

static const met_def node_proc_defs[P__COUNT] = {
    [P_CPU] = {"process_cpu_seconds_total", "user and system CPU time of the process, in seconds",
               MET_COUNTER, NULL},
    [P_RSS] = {"process_resident_memory_bytes", "resident memory of the process", MET_GAUGE, NULL},
    [P_OPEN_FDS] = {"process_open_fds", "file descriptors the process has open", MET_GAUGE, NULL},
    [P_MAX_FDS] = {"process_max_fds", "the process's limit of open file descriptors (ulimit -n)",
                   MET_GAUGE, NULL},
    [P_START] = {"process_start_time_seconds",
                 "when the process started, in seconds since the Unix epoch", MET_GAUGE, NULL},
    [P_UPTIME] = {"ringcached_uptime_seconds", "seconds since the node started", MET_GAUGE, NULL},
};
/* what each value counts: 1/scale of the unit its name says */
static const uint32_t node_proc_scale[P__COUNT] = {
    [P_CPU] = 1000000,
    [P_START] = 1000,
    [P_UPTIME] = 1000,
};

/* /proc/self/stat: the fields after the command (in parentheses, which may
 * hold spaces and parentheses of its own) are numbered from 3 (state). */
static int proc_self_stat(unsigned long long *utime, unsigned long long *stime,
                          unsigned long long *starttime, long long *rss_pages)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return -errno;
    size_t k = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[k] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return -EINVAL;
    unsigned long long field[25] = {0};
    int i = 3;
    for (p++; i < 25 && *p; i++) {
        while (*p == ' ')
            p++;
        char *end;
        field[i] = strtoull(p, &end, 10);
        if (end == p) /* the state letter */
            while (*end && *end != ' ')
                end++;
        p = end;
    }
    if (i < 25)
        return -EINVAL;
    *utime = field[14];
    *stime = field[15];
    *starttime = field[22];
    *rss_pages = (long long)field[24];
    return 0;
}

/* The boot time (seconds since the epoch) from /proc/stat's btime line. */
static long long boot_time_s(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    char line[256];
    long long bt = -1;
    while (bt < 0 && fgets(line, sizeof(line), f))
        if (sscanf(line, "btime %lld", &bt) != 1)
            bt = -1;
    fclose(f);
    return bt;
}

static int64_t open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    int64_t k = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            k++;
    closedir(d);
    return k > 0 ? k - 1 : 0; /* less the one reading the folder */
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct proc_arg {
    node *n;
    node_proc p;
} proc_arg;

static int64_t node_proc_fn(void *arg)
{
    proc_arg *pa = arg;
    unsigned long long ut = 0, st = 0, start = 0;
    long long rss = 0;
    long tick = sysconf(_SC_CLK_TCK);
    struct rlimit rl;
    switch (pa->p) {
    case P_CPU:
        if (proc_self_stat(&ut, &st, &start, &rss) < 0 || tick <= 0)
            return 0;
        return (int64_t)((ut + st) * 1000000ull / (unsigned long long)tick);
    case P_RSS:
        if (proc_self_stat(&ut, &st, &start, &rss) < 0)
            return 0;
        return rss * (int64_t)sysconf(_SC_PAGESIZE);
    case P_OPEN_FDS: return open_fds();
    case P_MAX_FDS:
        if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
            return 0;
        return (int64_t)rl.rlim_cur;
    case P_START: return pa->n->start_ms;
    case P_UPTIME: return mono_ms() - pa->n->start_mono_ms;
    default: return 0;
    }
}

/* When the process started (ms since the epoch): its start in clock ticks
 * after boot, plus the boot time; the node's own start when /proc says
 * nothing. */
static int64_t process_start_ms(void)
{
    unsigned long long ut, st, start;
    long long rss;
    long tick = sysconf(_SC_CLK_TCK);
    long long bt = boot_time_s();
    if (proc_self_stat(&ut, &st, &start, &rss) == 0 && bt > 0 && tick > 0)
        return bt * 1000 + (int64_t)(start * 1000ull / (unsigned long long)tick);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the build ------------------------------------------------------------------ */

#ifndef RINGCACHE_VERSION
#error "RINGCACHE_VERSION (the project's version) is set by cached/CMakeLists.txt"
#endif

const char *node_version(void)
{
    return RINGCACHE_VERSION;
}

/* ringcached_build_info{version,compiler,libevent,openssl} 1, as Prometheus
 * exporters do: the labels say what runs, the value is always 1. */
static int register_build_info(node *n)
{
    char labels[512];
    snprintf(labels, sizeof(labels),
             "version=\"%s\",compiler=\"%s\",libevent=\"%s\",openssl=\"%s\"", node_version(),
#if defined(__clang__)
             "clang " __clang_version__,
#elif defined(__GNUC__)
             "gcc " __VERSION__,
#else
             "unknown",
#endif
             event_get_version(), OpenSSL_version(OPENSSL_VERSION_STRING));
    for (char *p = labels; *p; p++) /* label values: no backslash or newline in them */
        if (*p == '\\' || *p == '\n')
            *p = ' ';
    met_def d = {"ringcached_build_info",
                 "the build of ringcached: its version and the libraries it runs with (always 1)",
                 MET_GAUGE, labels};
    int idx = met_register(n->metrics, &d, 1);
    if (idx >= 0)
        met_set(n->metrics, idx, 1);
    return idx < 0 ? idx : 0;
}

/* ---- setup and teardown ------------------------------------------------------------ */

int node_metrics_setup(node *n, char *err, size_t errlen)
{
    n->start_ms = process_start_ms();
    n->start_mono_ms = mono_ms();
    int rc = met_create(&n->metrics, n->n_workers);
    if (rc >= 0)
        rc = met_register(n->metrics, node_metric_defs, NM__COUNT);
    if (rc >= 0) {
        n->metric_base = rc;
        rc = met_register(n->metrics, node_store_defs, 1);
    }
    if (rc >= 0) {
        bs_stats bst;
        bs_stats_get(n->store, &bst);
        if (bst.quarantined)
            met_add(n->metrics, met_shared_slot(n->metrics), rc, bst.quarantined);
        rc = met_register(n->metrics, node_gauge_defs, G__COUNT);
    }
    int gbase = rc;
    if (rc >= 0) {
        n->gauge_args = calloc(G__COUNT, sizeof(*n->gauge_args));
        n->proc_args = calloc(P__COUNT, sizeof(*n->proc_args));
        rc = n->gauge_args && n->proc_args ? 0 : -ENOMEM;
    }
    for (int g = 0; rc >= 0 && g < G__COUNT; g++) {
        n->gauge_args[g] = (gauge_arg){n, (node_gauge)g};
        rc = met_set_fn(n->metrics, gbase + g, node_gauge_fn, &n->gauge_args[g]);
    }
    int pbase = rc >= 0 ? met_register(n->metrics, node_proc_defs, P__COUNT) : rc;
    rc = pbase;
    for (int p = 0; rc >= 0 && p < P__COUNT; p++) {
        n->proc_args[p] = (proc_arg){n, (node_proc)p};
        rc = met_set_fn(n->metrics, pbase + p, node_proc_fn, &n->proc_args[p]);
        if (rc >= 0 && node_proc_scale[p])
            rc = met_set_scale(n->metrics, pbase + p, node_proc_scale[p]);
    }
    if (rc >= 0)
        rc = register_build_info(n);
    if (rc < 0)
        errf_set(err, errlen, "cannot set up the node's metrics: %s", strerror(-rc));
    return rc < 0 ? rc : 0;
}

void node_metrics_teardown(node *n)
{
    met_destroy(&n->metrics);
    free(n->gauge_args);
    n->gauge_args = NULL;
    free(n->proc_args);
    n->proc_args = NULL;
}
