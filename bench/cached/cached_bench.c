/* SPDX-License-Identifier: Apache-2.0
 *
 * cached_bench.c: ringcached measured against its peers in one run, on
 * loopback, interleaved, medians:
 *  - warm 1 MiB blocks from the RAM tier over 4 connections vs `iperf3 -P 4`
 *    (the loopback ceiling), and the node's CPU-seconds per GiB served;
 *  - cold: a 512 MiB object through one node, S3 behind the S3 model at its
 *    defaults (30 ms, 100 MiB/s per connection), vs a single-stream GET of it
 *    through the same model, and beside what the same S3 gives 32 ranged
 *    1 MiB GETs in flight (the ceiling of any cold read on this machine);
 *  - warm from SSD with the RAM tier off vs the block store's own read
 *    throughput of the same blocks (the store opened in this process after the
 *    node stopped);
 *  - nginx slice cache (Debian nginx, slice 1m, proxy_cache, proxy_cache_lock
 *    on) in front of the same S3 model: warm throughput with the same client
 *    concurrency, p99 of 2000 random 64 KiB reads interleaved with ours, and
 *    nginx's CPU-seconds per GiB;
 *  - the node's resident memory at rest and under load against its RAM tier.
 * The last line:
 *   cached: ram_vs_iperf=<a> ssd_vs_store=<b> cold_vs_single_stream=<c>
 *   warm_vs_nginx=<d> p99_vs_nginx=<e> cpu_s_per_gib_vs_nginx=<f>
 *   rss_over_ram_tier_mib=<g>
 * Usage: cached_bench [--size-mib N (512)] [--reps N (3)] [--ranges N (2000)]
 */
#include "blockkey.h"
#include "blockstore.h"
#include "cacheconn.h"
#include "harness.h"
#include "s3.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <event2/event.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "../bench.h"
#include "../bench_curl.h"
#include "../bench_s3.h"

static const char *bucket = H_S3_DEFAULT_BUCKET;
static const char *okey = "bench/obj.bin";
static h_env *env;

static void die(const char *what)
{
    fprintf(stderr, "cached_bench: %s\n", what);
    exit(1);
}

/* ---- a node ----------------------------------------------------------------- */

/* The bench's one node (id bench-0) on the data folder every start shares. */
static void node_start(h_node *n, const char *name, const char *s3_endpoint, const char *ram,
                       const char *const *extra)
{
    char dir[PATH_MAX];
    h_env_path(env, dir, sizeof(dir), "node-data");
    h_node_opts o = {.name = name,
                     .id = "bench-0",
                     .dir = dir,
                     .s3_endpoint = s3_endpoint,
                     .ssd = "2GiB",
                     .ram = ram,
                     .threads = 2,
                     .log_level = "warn",
                     .extra = extra};
    if (h_node_start(env, n, &o) < 0)
        die(h_last_error());
}

/* ---- our load: K connections, D block GETs in flight each -------------------- */

typedef struct load load;
typedef struct {
    load *l;
    cc_conn *c;
    uint8_t *buf;
} load_conn;

struct load {
    struct event_base *base;
    load_conn *conns;
    int k, depth;
    uint64_t size, blocks, next, done_blocks, target;
    uint64_t bytes;
    int inflight;
    int failed;
    uint64_t rnd;
    bool random64k;
    char version[130];
};

static void load_issue(load_conn *lc);

static void load_done(const cc_result *r, void *arg)
{
    load_conn *lc = arg;
    load *l = lc->l;
    l->inflight--;
    if (r->code) {
        fprintf(stderr, "cached_bench: GET failed: %s\n", r->message);
        l->failed = 1;
        return;
    }
    l->bytes += r->bytes;
    l->done_blocks++;
    load_issue(lc);
}

static void load_issue(load_conn *lc)
{
    load *l = lc->l;
    if (l->failed || l->next >= l->target)
        return;
    uint64_t b = l->next++ % l->blocks;
    rcp_get_req g = {{rcp_s(bucket), rcp_s(okey), rcp_s(l->version), l->size}, b, 0, 0, 0};
    if (cc_get(lc->c, &g, lc->buf, 1u << 20, load_done, lc, NULL) == 0)
        l->inflight++;
    else
        l->failed = 1;
}

/* Reads `target` blocks over k connections; returns seconds. */
static const char *g_tls_ca; /* set: load_run speaks TLS with this CA */

static double load_run(int port, const char *version, uint64_t size, uint64_t target, int k,
                       int depth)
{
    load l = {0};
    l.base = event_base_new();
    l.k = k;
    l.depth = depth;
    l.size = size;
    l.blocks = bkey_block_count(size, 1u << 20);
    l.target = target;
    snprintf(l.version, sizeof(l.version), "%s", version);
    l.conns = calloc((size_t)k, sizeof(*l.conns));
    for (int i = 0; i < k; i++) {
        cc_config cc = {"127.0.0.1",      port,     NULL, 0, "bench", 2000, 60000,
                        g_tls_ca != NULL, g_tls_ca, NULL};
        l.conns[i].l = &l;
        l.conns[i].buf = malloc((size_t)depth << 20);
        if (cc_conn_create(&l.conns[i].c, l.base, &cc) < 0)
            die("cannot connect to the node");
    }
    double t0 = bench_now_s();
    for (int d = 0; d < depth; d++)
        for (int i = 0; i < k; i++)
            load_issue(&l.conns[i]);
    while (l.inflight > 0 && !l.failed)
        event_base_loop(l.base, EVLOOP_ONCE);
    double t = bench_now_s() - t0;
    if (l.failed)
        die("a GET through the node failed");
    for (int i = 0; i < k; i++) {
        cc_conn_destroy(&l.conns[i].c);
        free(l.conns[i].buf);
    }
    event_base_loop(l.base, EVLOOP_NONBLOCK);
    free(l.conns);
    event_base_free(l.base);
    return t;
}

typedef struct {
    int done;
    cc_result r;
} one_wait;

static void one_cb(const cc_result *r, void *arg)
{
    one_wait *w = arg;
    w->r = *r;
    w->done = 1;
}

/* 64 KiB random reads, one at a time, latency each (ms). */
static void ours_random(int port, const char *version, uint64_t size, const uint64_t *offs, int n,
                        double *lat)
{
    struct event_base *base = event_base_new();
    cc_conn *c;
    cc_config cc = {"127.0.0.1", port, NULL, 0, "bench", 2000, 60000, false, NULL, NULL};
    if (cc_conn_create(&c, base, &cc) < 0)
        die("cannot connect");
    uint8_t *buf = malloc(65536);
    for (int i = 0; i < n; i++) {
        one_wait w = {0};
        uint64_t b = offs[i] >> 20;
        uint32_t in = (uint32_t)(offs[i] & ((1u << 20) - 1));
        uint32_t len = 65536;
        if (in + len > (1u << 20))
            in = (1u << 20) - len;
        rcp_get_req g = {{rcp_s(bucket), rcp_s(okey), rcp_s(version), size}, b, in, len, 0};
        double t0 = bench_now_s();
        if (cc_get(c, &g, buf, 65536, one_cb, &w, NULL) < 0)
            die("cc_get");
        while (!w.done)
            event_base_loop(base, EVLOOP_ONCE);
        lat[i] = (bench_now_s() - t0) * 1000;
        if (w.r.code)
            die("random GET failed");
    }
    free(buf);
    cc_conn_destroy(&c);
    event_base_loop(base, EVLOOP_NONBLOCK);
    event_base_free(base);
}

/* ---- nginx -------------------------------------------------------------------- */

/* k connections, each reading 1 MiB ranges in turn: `target` blocks. */
static double nginx_load(int port, uint64_t size, uint64_t target, int k)
{
    CURLM *m = curl_multi_init();
    CURL **h = calloc((size_t)k, sizeof(*h));
    size_t *sk = calloc((size_t)k, sizeof(*sk));
    uint64_t blocks = size >> 20, next = 0;
    char url[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/%s/%s", port, bucket, okey);
    double t0 = bench_now_s();
    for (int i = 0; i < k; i++) {
        h[i] = curl_easy_init();
        curl_easy_setopt(h[i], CURLOPT_URL, url);
        curl_easy_setopt(h[i], CURLOPT_WRITEFUNCTION, bench_curl_count);
        curl_easy_setopt(h[i], CURLOPT_WRITEDATA, &sk[i]);
        char r[64];
        uint64_t b = next++ % blocks;
        snprintf(r, sizeof(r), "%llu-%llu", (unsigned long long)(b << 20),
                 (unsigned long long)((b << 20) + (1u << 20) - 1));
        curl_easy_setopt(h[i], CURLOPT_RANGE, r);
        curl_multi_add_handle(m, h[i]);
    }
    int running = k;
    uint64_t done = 0;
    while (running || done < target) {
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            CURL *e = msg->easy_handle;
            long code = 0;
            curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
            if (msg->data.result != CURLE_OK || code != 206) {
                fprintf(stderr, "cached_bench: nginx answered %ld (%s)\n", code,
                        curl_easy_strerror(msg->data.result));
                die("nginx GET failed (see its error.log in the bench folder)");
            }
            done++;
            curl_multi_remove_handle(m, e);
            if (next < target) {
                char r[64];
                uint64_t b = next++ % blocks;
                snprintf(r, sizeof(r), "%llu-%llu", (unsigned long long)(b << 20),
                         (unsigned long long)((b << 20) + (1u << 20) - 1));
                curl_easy_setopt(e, CURLOPT_RANGE, r);
                curl_multi_add_handle(m, e);
                running++;
            }
        }
        if (done >= target)
            break;
        curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    double t = bench_now_s() - t0;
    for (int i = 0; i < k; i++) {
        curl_multi_remove_handle(m, h[i]);
        curl_easy_cleanup(h[i]);
    }
    curl_multi_cleanup(m);
    free(h);
    free(sk);
    return t;
}

static void nginx_random(int port, const uint64_t *offs, int n, double *lat)
{
    CURL *e = curl_easy_init();
    char url[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/%s/%s", port, bucket, okey);
    curl_easy_setopt(e, CURLOPT_URL, url);
    for (int i = 0; i < n; i++) {
        uint64_t b = offs[i] >> 20;
        uint32_t in = (uint32_t)(offs[i] & ((1u << 20) - 1));
        if (in + 65536 > (1u << 20))
            in = (1u << 20) - 65536;
        if ((lat[i] = bench_curl_range64k(e, (b << 20) + in, "cached_bench")) < 0)
            die("nginx random GET failed");
    }
    curl_easy_cleanup(e);
}

/* ---- what this S3 gives to parallel ranged GETs ----------------------------------- */

/* The cold read through a node is many 1 MiB ranged GETs in flight; on this
 * machine the S3 server and the model share the two cores with the node and
 * the client, so their ceiling for ranged reads (not the single-stream rate) is
 * what a cold read can reach at best. Measured with the same number of GETs in
 * flight as the cold read keeps. */
typedef struct {
    s3_client *c;
    uint8_t *buf;
    uint64_t next, end;
    int inflight, parallel, failed;
} ranged_load;

static void ranged_launch(ranged_load *l);

static void ranged_done(const s3_error *err, const s3_get_result *res, void *arg)
{
    (void)res;
    ranged_load *l = arg;
    l->inflight--;
    if (err->code) {
        fprintf(stderr, "cached_bench: ranged GET: %s\n", err->message);
        l->failed = 1;
    }
    ranged_launch(l);
}

static void ranged_launch(ranged_load *l)
{
    while (!l->failed && l->inflight < l->parallel && l->next < l->end) {
        uint64_t len = l->end - l->next < (1u << 20) ? l->end - l->next : (1u << 20);
        s3_get_args a = {.bucket = bucket,
                         .key = okey,
                         .offset = l->next,
                         .length = len,
                         .buf = l->buf + l->next,
                         .cap = len};
        if (s3_get(l->c, &a, ranged_done, l) < 0) {
            l->failed = 1;
            break;
        }
        l->next += len;
        l->inflight++;
    }
}

/* Seconds for the whole object as `parallel` 1 MiB ranged GETs in flight. */
static double s3_ranged_read(const s3_config *cfg, uint8_t *buf, uint64_t size, int parallel)
{
    struct event_base *base = event_base_new();
    s3_config c2 = *cfg;
    if (c2.max_connections < parallel)
        c2.max_connections = parallel;
    ranged_load l = {NULL, buf, 0, size, 0, parallel, 0};
    if (s3_client_create(&l.c, &c2, base) < 0)
        die("cannot create an S3 client");
    double t0 = bench_now_s();
    ranged_launch(&l);
    while (l.inflight > 0)
        event_base_loop(base, EVLOOP_ONCE);
    double t = bench_now_s() - t0;
    s3_client_destroy(&l.c);
    event_base_free(base);
    if (l.failed)
        die("a ranged GET through the model failed");
    return t;
}

/* ---- the store alone ------------------------------------------------------------ */

typedef struct {
    int inflight;
    uint64_t bytes;
    int failed;
} store_load;

static void store_read_cb(void *arg, int rc, bs_buf *buf)
{
    store_load *s = arg;
    s->inflight--;
    if (rc < 0)
        s->failed = 1;
    else
        s->bytes += (uint64_t)rc;
    bs_buf_unref(&buf);
}

static double store_read_all(const char *dir, const char *version, uint64_t size, double *secs)
{
    bs_config bc = {0};
    bc.dir = dir;
    bc.ssd_bytes = 2ull << 30;
    bc.ram_bytes = 0;
    bc.no_sync = true;
    char err[512];
    bs_store *st;
    if (bs_open(&st, &bc, err, sizeof(err)) < 0)
        die(err);
    struct event_base *base = event_base_new();
    bs_worker *w;
    if (bs_worker_attach(st, base, &w) < 0)
        die("bs_worker_attach");
    store_load sl = {0};
    uint64_t blocks = bkey_block_count(size, 1u << 20), next = 0;
    double t0 = bench_now_s();
    while (next < blocks || sl.inflight) {
        while (next < blocks && sl.inflight < 16) {
            bkey_id id;
            bkey_id_init(&id, "", bucket, okey, version, size, next++);
            if (bs_read(w, &id, 0, 0, store_read_cb, &sl) == 0)
                sl.inflight++;
            else
                sl.failed = 1;
        }
        event_base_loop(base, EVLOOP_ONCE);
    }
    *secs = bench_now_s() - t0;
    bs_worker_detach(&w);
    event_base_free(base);
    bs_close(&st);
    if (sl.failed)
        die("the store could not read every block back");
    return (double)sl.bytes;
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"size-mib", "reps", "ranges"};
    int opt[3] = {512, 3, 2000};
    if (bench_int_opts(argc, argv, "cached_bench", 3, names, opt))
        return 2;
    int size_mib = opt[0], reps = opt[1], n_ranges = opt[2];
    if (size_mib < 16 || reps < 1 || n_ranges < 100)
        die("--size-mib >= 16, --reps >= 1, --ranges >= 100");
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_ALL);
    if (h_env_create(&env, "cached_bench") < 0)
        return 1;
    h_s3 *s3;
    h_s3_opts so = {.version = 3};
    if (h_s3_start(env, &s3, &so) < 0)
        die(h_last_error());
    h_s3model *model;
    if (h_s3model_start(env, &model, h_s3_port(s3), 30, 100) < 0)
        die(h_last_error());

    uint64_t size = (uint64_t)size_mib << 20;
    uint8_t *data = malloc(size);
    for (uint64_t i = 0; i < size; i += 8) {
        uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull;
        memcpy(data + i, &x, 8);
    }
    s3_config dc;
    bench_s3_config(&dc, h_s3_endpoint(s3));
    s3_sync *direct;
    s3_sync_create(&direct, &dc);
    s3_error err;
    char etag[S3_ETAG_MAX];
    s3_sync_put_args pa = {.bucket = bucket,
                           .key = okey,
                           .fd = -1,
                           .data = data,
                           .size = size,
                           .part_size = 16u << 20,
                           .parallel = 4};
    fprintf(stderr, "uploading %d MiB ...\n", size_mib);
    if (s3_sync_put(direct, &pa, etag, &err) < 0)
        die(err.message);

    /* single stream through the model: the peer of the cold read */
    s3_config mc = dc;
    snprintf(mc.endpoint, sizeof(mc.endpoint), "%s", h_s3model_endpoint(model));
    s3_sync *via;
    s3_sync_create(&via, &mc);
    uint8_t *buf = malloc(size);
    s3_sync_get_args ga = {
        .bucket = bucket, .key = okey, .fd = -1, .buf = buf, .cap = size, .parallel = 1};
    double t0 = bench_now_s();
    if (s3_sync_get(via, &ga, &err) != (int64_t)size)
        die(err.message);
    double t_single = bench_now_s() - t0;
    fprintf(stderr, "single-stream GET via the model: %.2f s\n", t_single);
    double t_ranged = s3_ranged_read(&mc, buf, size, 32);
    fprintf(stderr, "32 x 1 MiB ranged GETs via the model: %.2f s\n", t_ranged);

    /* cold through one node, then warm from RAM */
    h_node n;
    char ram[32];
    snprintf(ram, sizeof(ram), "%dMiB", size_mib + 256);
    node_start(&n, "node", h_s3model_endpoint(model), ram, NULL);
    long rss_rest = h_pid_rss_kib(h_proc_pid(n.proc));
    uint64_t blocks = bkey_block_count(size, 1u << 20);
    double t_cold = load_run(n.port, etag, size, blocks, 4, 8);
    fprintf(stderr, "cold through the node: %.2f s\n", t_cold);

    double *t_ram = calloc((size_t)reps, sizeof(double));
    double *t_ip = calloc((size_t)reps, sizeof(double));
    double cpu_ours = 0, gib_ours = 0;
    long rss_load = 0;
    for (int r = 0; r < reps; r++) {
        t_ip[r] = h_iperf_gib_s(env, 4, 3);
        double c0 = h_pid_cpu_s(h_proc_pid(n.proc));
        double t = load_run(n.port, etag, size, blocks * 2, 4, 4);
        cpu_ours += h_pid_cpu_s(h_proc_pid(n.proc)) - c0;
        gib_ours += 2.0 * (double)size / (1u << 30);
        long rss = h_pid_rss_kib(h_proc_pid(n.proc));
        if (rss > rss_load)
            rss_load = rss;
        t_ram[r] = 2.0 * (double)size / (1u << 30) / t;
        fprintf(stderr, "rep %d: iperf3 -P 4 %.2f GiB/s, node RAM tier %.2f GiB/s\n", r + 1,
                t_ip[r], t_ram[r]);
    }
    double ram_gib = bench_pct(t_ram, (size_t)reps, 0.5),
           ip_gib = bench_pct(t_ip, (size_t)reps, 0.5);

    /* random 64 KiB ranges vs nginx, both warm, interleaved in batches */
    int nport;
    double ram_used_mib =
        (double)h_metric(n.admin_port, "ringcached_capacity_used_bytes{tier=\"ram\"}") / 1048576.0;
    h_proc *ngx;
    if (h_nginx_start(env, &ngx, h_s3model_port(model), &nport) < 0)
        die("cannot start nginx (apt-get install nginx)");
    fprintf(stderr, "warming nginx ...\n");
    nginx_load(nport, size, blocks, 4); /* cold fill of its slice cache */
    double *t_ng = calloc((size_t)reps, sizeof(double));
    double cpu_ng = 0, gib_ng = 0;
    for (int r = 0; r < reps; r++) {
        double c0 = h_pgrp_cpu_s(h_proc_pid(ngx));
        double t = nginx_load(nport, size, blocks * 2, 4);
        cpu_ng += h_pgrp_cpu_s(h_proc_pid(ngx)) - c0;
        gib_ng += 2.0 * (double)size / (1u << 30);
        t_ng[r] = 2.0 * (double)size / (1u << 30) / t;
        fprintf(stderr, "rep %d: nginx warm %.2f GiB/s\n", r + 1, t_ng[r]);
    }
    double ng_gib = bench_pct(t_ng, (size_t)reps, 0.5);
    uint64_t *offs = malloc(sizeof(uint64_t) * (size_t)n_ranges);
    bench_range_offsets(offs, n_ranges, size, 88172645463325252ull);
    double *lo = malloc(sizeof(double) * (size_t)n_ranges);
    double *ln = malloc(sizeof(double) * (size_t)n_ranges);
    for (int b0 = 0; b0 < n_ranges; b0 += 100) {
        int k = n_ranges - b0 < 100 ? n_ranges - b0 : 100;
        ours_random(n.port, etag, size, offs + b0, k, lo + b0);
        nginx_random(nport, offs + b0, k, ln + b0);
    }
    double o99 = bench_pct(lo, (size_t)n_ranges, 0.99), n99 = bench_pct(ln, (size_t)n_ranges, 0.99);
    double o50 = bench_pct(lo, (size_t)n_ranges, 0.5), n50 = bench_pct(ln, (size_t)n_ranges, 0.5);
    h_proc_stop(ngx, 5000);

    /* SSD: restart the node with the RAM tier off; then the store alone */
    if (h_proc_stop(n.proc, 15000) != 0)
        die("the node did not exit cleanly");
    h_node n2;
    node_start(&n2, "node-ssd", h_s3model_endpoint(model), "0", NULL);
    double *t_ssd = calloc((size_t)reps, sizeof(double));
    double *t_store = calloc((size_t)reps, sizeof(double));
    for (int r = 0; r < reps; r++) {
        double t = load_run(n2.port, etag, size, blocks, 4, 4);
        t_ssd[r] = (double)size / (1u << 30) / t;
        fprintf(stderr, "rep %d: node from SSD %.2f GiB/s\n", r + 1, t_ssd[r]);
    }
    if (h_proc_stop(n2.proc, 15000) != 0)
        die("the node did not exit cleanly");
    for (int r = 0; r < reps; r++) {
        double secs;
        double bytes = store_read_all(n2.dir, etag, size, &secs);
        t_store[r] = bytes / (1u << 30) / secs;
        fprintf(stderr, "rep %d: block store alone %.2f GiB/s\n", r + 1, t_store[r]);
    }
    double ssd_gib = bench_pct(t_ssd, (size_t)reps, 0.5),
           store_gib = bench_pct(t_store, (size_t)reps, 0.5);

    /* TLS beside plaintext: the same node (RAM tier on), restarted with TLS,
     * interleaved with a plaintext node on the same data */
    char cert[700], key[700];
    h_env_path(env, cert, sizeof(cert), "node.crt");
    h_env_path(env, key, sizeof(key), "node.key");
    if (h_make_cert(cert, key) < 0)
        die("cannot make a TLS certificate");
    const char *tls_args[] = {"--tls-cert", cert, "--tls-key", key, NULL};
    h_node nt;
    node_start(&nt, "node-tls", h_s3model_endpoint(model), ram, tls_args);
    g_tls_ca = cert;
    load_run(nt.port, etag, size, blocks, 4, 4); /* warm its RAM tier */
    double *t_tls = calloc((size_t)reps, sizeof(double));
    for (int r = 0; r < reps; r++) {
        t_tls[r] = (double)size / (1u << 30) / load_run(nt.port, etag, size, blocks, 4, 4);
        fprintf(stderr, "rep %d: RAM tier over TLS %.2f GiB/s\n", r + 1, t_tls[r]);
    }
    g_tls_ca = NULL;
    double tls_gib = bench_pct(t_tls, (size_t)reps, 0.5);
    if (h_proc_stop(nt.proc, 15000) != 0)
        die("the TLS node did not exit cleanly");

    printf("\n| measure | ringcached | peer | ratio |\n|---|---|---|---|\n");
    printf("| warm RAM tier, 1 MiB blocks, 4 connections | %.2f GiB/s | iperf3 -P 4: %.2f GiB/s | "
           "%.2f |\n",
           ram_gib, ip_gib, ram_gib / ip_gib);
    printf(
        "| warm, same client concurrency | %.2f GiB/s | nginx slice cache: %.2f GiB/s | %.2f |\n",
        ram_gib, ng_gib, ram_gib / ng_gib);
    printf("| CPU-seconds per GiB served | %.3f | nginx: %.3f | %.2f |\n", cpu_ours / gib_ours,
           cpu_ng / gib_ng, (cpu_ours / gib_ours) / (cpu_ng / gib_ng));
    printf("| 64 KiB random reads, p50 / p99 (%d) | %.3f / %.3f ms | nginx: %.3f / %.3f ms | "
           "p99 %.2f |\n",
           n_ranges, o50, o99, n50, n99, o99 / n99);
    printf("| cold %d MiB through one node | %.2f s | single-stream GET: %.2f s | %.2fx |\n",
           size_mib, t_cold, t_single, t_single / t_cold);
    printf("| the S3 server's ceiling for ranged reads | | 32 x 1 MiB GETs in flight: %.2f s | "
           "cold at %.2f of it |\n",
           t_ranged, t_ranged / t_cold);
    printf("| warm RAM tier over TLS (same client, 4 connections) | %.2f GiB/s | plaintext: %.2f "
           "GiB/s | %.2f |\n",
           tls_gib, ram_gib, tls_gib / ram_gib);
    printf("| warm from SSD, RAM tier off | %.2f GiB/s | block store alone: %.2f GiB/s | %.2f |\n",
           ssd_gib, store_gib, ssd_gib / store_gib);
    printf("| resident memory (RAM tier %s, %.0f MiB in use) | at rest %.0f MiB, under load %.0f "
           "MiB | | over the tier's bytes: %.0f MiB |\n",
           ram, ram_used_mib, rss_rest / 1024.0, rss_load / 1024.0,
           rss_load / 1024.0 - ram_used_mib);
    printf("%s\n", BENCH_RATIO_CONVENTION);
    printf("cached: ram_vs_iperf=%.2f ssd_vs_store=%.2f cold_vs_single_stream=%.2f "
           "warm_vs_nginx=%.2f p99_vs_nginx=%.2f cpu_s_per_gib_vs_nginx=%.2f "
           "rss_over_ram_tier_mib=%.0f\n",
           ram_gib / ip_gib, ssd_gib / store_gib, t_single / t_cold, ram_gib / ng_gib, o99 / n99,
           (cpu_ours / gib_ours) / (cpu_ng / gib_ng), rss_load / 1024.0 - ram_used_mib);
    s3_sync_destroy(&direct);
    s3_sync_destroy(&via);
    h_env_destroy(&env);
    free(data);
    free(buf);
    return 0;
}
