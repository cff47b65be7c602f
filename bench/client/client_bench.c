/* SPDX-License-Identifier: Apache-2.0
 *
 * client_bench.c: libringcache measured side by side with its peers, in one
 * run, on one machine: a real s3rver behind the S3 model at its defaults (30 ms
 * first byte, 100 MiB/s per connection), three real ringcached nodes, and
 * Debian's nginx as a slice cache (slice 1m) in front of the same model.
 *
 *   single   one GET of the whole object through the model (one stream)
 *   cold     the object read through the nodes, nodes and page cache empty
 *   warm     again, a new client (empty page cache), nodes warm; median of 3
 *   Every client is made with prefault (its page cache backed by memory in
 *   rc_create, untimed), as a long-lived compute node's is; the peers read
 *   into memory already touched too. On this VM first touch is expensive (the
 *   host maps guest memory lazily: about 1 CPU-s per GiB), so one warm read by
 *   a client without prefault is printed beside, for the record.
 *   nginx    the object through nginx warm, as many requests in flight as
 *            the client keeps (16 MiB preads + the read-ahead window = 32)
 *   scattered 2000 random 64 KiB reads, warm nodes, empty page cache,
 *            interleaved one by one with the same read through nginx warm
 *   hits     a hot re-read in one process: the first 256 MiB read once, then
 *            again (every block a page-cache hit), against memcpy of the same
 *            bytes into the same buffer; medians of 5, interleaved
 * CPU-seconds per GiB are the client's and the nodes' (or nginx's workers')
 * together, summed over the warm runs.
 *
 * Ratios follow bench/README.md: speeds are ours over the peer's (above 1 is
 * better; the goals are cold >= 2, warm >= 5, warm vs nginx >= 1), the p99 is
 * ours over nginx's (below 1 is better; the goal is <= 1). The last line is
 *   client: cold_vs_single_stream=A warm_vs_single_stream=B warm_vs_nginx=C
 *           scattered_p99_vs_nginx=D cpu_per_gib_vs_nginx=E hit_vs_memcpy=F
 *   (one line; `na` when not measured; the goals for the last two are E <= 1
 *   and F >= 0.8)
 * With RINGCACHE_BENCH_PERF=DIR the first warm run of ours and of nginx are
 * recorded by perf (warm-ours.data: this process and the nodes; warm-nginx:
 * this process and nginx's workers); under callgrind (--collect-atstart=no)
 * the same two phases and the hits are dumped apart (bench_profile.h).
 *
 * Run: RINGCACHE_BUILD_DIR=build RINGCACHE_SOURCE_DIR=. \
 *      RINGCACHE_NODE_MODULES=./node_modules build/bench/client/client_bench [--size-mib N]
 */
#include "node_util.h"
#include "ringcache.h"
#include "s3_test_util.h"

#include <event2/event.h>

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "../bench.h"
#include "../bench_profile.h"

#define KEY  "bench/object.bin"
#define RUNS 3

static size_t pread_size = 16u << 20;
static int ra_blocks = 16;
static int block_mib = 1;
static int ram_mib = 1024; /* the nodes' default RAM tier */

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        fprintf(stderr, "client_bench: cannot find a free port: %s\n", strerror(errno));
        exit(1);
    }
    close(fd);
    return ntohs(a.sin_port);
}

/* CPU seconds of this process (the client's threads, or the peer's client). */
static double self_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double median3(double *v)
{
    qsort(v, RUNS, sizeof(*v), bench_cmp_double);
    return v[RUNS / 2];
}

static double nodes_cpu_s(const pid_t *pids)
{
    return h_pid_cpu_s(pids[0]) + h_pid_cpu_s(pids[1]) + h_pid_cpu_s(pids[2]);
}

/* The processes a warm read of ours runs in: this one and the nodes. */
static pid_t work_pids[4];

/* A new client of the bench's shape (one reader thread, a 512 MiB page
 * cache) and a handle on the object; exits on failure. */
static void open_client(const char *members, const s3_config *s3, bool prefault, rc_client **c,
                        rc_handle **h)
{
    rc_config cfg;
    rc_config_init(&cfg);
    cfg.members = members;
    cfg.s3 = *s3;
    cfg.page_cache_bytes = 512u << 20;
    cfg.max_threads = 1;
    cfg.readahead_blocks = ra_blocks;
    cfg.prefault = prefault;
    char err[RC_ERR_MAX];
    if (rc_create(c, &cfg, err, sizeof(err)) < 0 ||
        rc_open(*c, H_S3_DEFAULT_BUCKET, KEY, h, err, sizeof(err)) < 0) {
        fprintf(stderr, "client_bench: %s\n", err);
        exit(1);
    }
}

/* Reads the object whole through a new client (empty page cache): the
 * seconds the reads took. cpu (may be NULL) gets the CPU-seconds this process
 * and the nodes spent meanwhile (not making or freeing the client: a
 * long-lived compute node does that once). phase (may be NULL) names the
 * reads for the profilers (bench_profile.h). */
static double read_through(const char *members, const s3_config *s3, const unsigned char *want,
                           size_t size, unsigned char *buf, rc_stats *st, bool prefault,
                           const char *phase, double *cpu)
{
    rc_client *c;
    rc_handle *h;
    char err[RC_ERR_MAX];
    open_client(members, s3, prefault, &c, &h);
    const size_t step = pread_size;
    /* the reads go into buf (size bytes, touched) and are checked against
     * S3's bytes after them, outside the time and the CPU measured, as the
     * peer's are (rr_read) */
    double t = 0;
    pid_t perf = phase ? bench_perf_start(phase, work_pids, 4) : 0;
    if (phase)
        bench_callgrind_on();
    double cpu0 = self_cpu_s() + nodes_cpu_s(work_pids + 1);
    for (size_t off = 0; off < size; off += step) {
        double t0 = bench_now_s();
        size_t len = size - off < step ? size - off : step;
        int64_t n = rc_pread(h, buf + off, len, off);
        t += bench_now_s() - t0;
        if (n != (int64_t)len) {
            rc_last_error(h, err, sizeof(err));
            fprintf(stderr, "client_bench: pread: %s\n", n < 0 ? err : "short");
            exit(1);
        }
    }
    if (cpu)
        *cpu = self_cpu_s() + nodes_cpu_s(work_pids + 1) - cpu0;
    if (phase)
        bench_callgrind_off(phase);
    bench_perf_stop(perf);
    if (memcmp(buf, want, size) != 0) {
        fprintf(stderr, "client_bench: the bytes read differ from S3's\n");
        exit(1);
    }
    memset(buf, 0, 4096); /* the next read must write them again */
    rc_stats_get(c, st);
    rc_close(&h);
    rc_destroy(&c);
    return t;
}

/* A hot re-read in one process: [0, bytes) read once through a new client,
 * then RUNS + 2 more times (every block a page-cache hit), interleaved with
 * memcpy of the same bytes (from a copy already in memory) into the same
 * buffer: the median speeds of each, in MiB/s. */
static void hot_reread(const char *members, const s3_config *s3, const unsigned char *want,
                       size_t bytes, double *hit_mib_s, double *memcpy_mib_s)
{
    rc_client *c;
    rc_handle *h;
    open_client(members, s3, true, &c, &h);
    const size_t step = pread_size;
    unsigned char *buf = malloc(step);
    unsigned char *src = malloc(bytes);
    memcpy(src, want, bytes); /* a copy of the bytes in memory this process touched */
    memset(buf, 0, step);
    for (size_t off = 0; off < bytes; off += step) /* fills the page cache */
        if (rc_pread(h, buf, step, off) != (int64_t)step) {
            fprintf(stderr, "client_bench: the first read of the hot range failed\n");
            exit(1);
        }
    enum { N = RUNS + 2 };
    double hit[N], cp[N];
    for (int r = 0; r < N; r++) {
        if (r == 1)
            bench_callgrind_on();
        double t0 = bench_now_s();
        for (size_t off = 0; off < bytes; off += step)
            if (rc_pread(h, buf, step, off) != (int64_t)step) {
                fprintf(stderr, "client_bench: a hot re-read failed\n");
                exit(1);
            }
        hit[r] = (double)(bytes >> 20) / (bench_now_s() - t0);
        if (r == 1)
            bench_callgrind_off("hits");
        if (memcmp(buf, want + bytes - step, step) != 0) {
            fprintf(stderr, "client_bench: a hot re-read gave other bytes\n");
            exit(1);
        }
        t0 = bench_now_s();
        for (size_t off = 0; off < bytes; off += step)
            memcpy(buf, src + off, step);
        cp[r] = (double)(bytes >> 20) / (bench_now_s() - t0);
    }
    rc_stats st;
    rc_stats_get(c, &st);
    if (st.misses > bytes / rc_block_size(c)) {
        fprintf(stderr,
                "client_bench: the hot re-reads missed the page cache (%" PRIu64 " misses)\n",
                st.misses);
        exit(1);
    }
    *hit_mib_s = bench_median(hit, N);
    *memcpy_mib_s = bench_median(cp, N);
    free(src);
    free(buf);
    rc_close(&h);
    rc_destroy(&c);
}

/* GET of [off, off+len) through an S3 endpoint with `parallel` streams. */
static double s3_read(s3_sync *s, uint64_t off, uint64_t len, void *buf, int parallel,
                      uint64_t part)
{
    s3_error err;
    s3_sync_get_args ga = {.bucket = H_S3_DEFAULT_BUCKET,
                           .key = KEY,
                           .offset = off,
                           .length = len,
                           .fd = -1,
                           .buf = buf,
                           .cap = len,
                           .parallel = parallel,
                           .part_size = part};
    double t0 = bench_now_s();
    int64_t n = s3_sync_get(s, &ga, &err);
    double t = bench_now_s() - t0;
    if (n != (int64_t)len) {
        fprintf(stderr, "client_bench: GET %" PRIu64 "+%" PRIu64 ": %s\n", off, len,
                n < 0 ? err.message : "short");
        return -1;
    }
    return t;
}

/* Ranged GETs on a kept-alive async S3 client (no HEAD first: nginx's slice
 * module answers a HEAD with 500). */
typedef struct {
    struct event_base *base;
    s3_client *c;
} rr_client;

typedef struct {
    rr_client *rc;
    uint64_t next, end, part, off0;
    unsigned char *buf;
    int inflight, parallel, failed;
} rr_state;

static void rr_launch(rr_state *st);

static void rr_done(const s3_error *err, const s3_get_result *res, void *arg)
{
    rr_state *st = arg;
    st->inflight--;
    if (err->code) {
        if (!st->failed)
            fprintf(stderr, "client_bench: ranged GET: %s\n", err->message);
        st->failed = 1;
    }
    (void)res;
    rr_launch(st);
}

static void rr_launch(rr_state *st)
{
    while (!st->failed && st->inflight < st->parallel && st->next < st->end) {
        uint64_t len = st->end - st->next < st->part ? st->end - st->next : st->part;
        s3_get_args a = {.bucket = H_S3_DEFAULT_BUCKET,
                         .key = KEY,
                         .offset = st->next,
                         .length = len,
                         .buf = st->buf + (st->next - st->off0),
                         .cap = len};
        if (s3_get(st->rc->c, &a, rr_done, st) < 0) {
            st->failed = 1;
            break;
        }
        st->next += len;
        st->inflight++;
    }
}

static double rr_read(rr_client *rc, uint64_t off, uint64_t len, void *buf, int parallel,
                      uint64_t part)
{
    rr_state st = {rc, off, off + len, part, off, buf, 0, parallel, 0};
    double t0 = bench_now_s();
    rr_launch(&st);
    while (st.inflight > 0)
        event_base_loop(rc->base, EVLOOP_ONCE);
    double t = bench_now_s() - t0;
    return st.failed ? -1 : t;
}

/* Starts nginx as a slice cache in front of the model; 0 on success. */
static int start_nginx(h_env *env, int upstream_port, int *port_out, h_proc **proc_out)
{
    const char *bin = "/usr/sbin/nginx";
    if (access(bin, X_OK) != 0) {
        fprintf(stderr, "client_bench: nginx is not installed (apt-get install nginx)\n");
        return -ENOENT;
    }
    char dir[1024], conf[1100];
    h_env_path(env, dir, sizeof(dir), "nginx");
    char cmd[2200];
    snprintf(cmd, sizeof(cmd), "mkdir -p %s/cache %s/tmp", dir, dir);
    if (system(cmd) != 0)
        return -EIO;
    int port = free_port();
    if ((size_t)snprintf(conf, sizeof(conf), "%s/nginx.conf", dir) >= sizeof(conf))
        return -ENAMETOOLONG;
    FILE *f = fopen(conf, "w");
    if (!f)
        return -errno;
    /* as root, workers would run as nobody and could not write the cache
     * inside the (0700) test folder */
    if (geteuid() == 0)
        fprintf(f, "user root;\n");
    fprintf(f,
            "daemon off;\nworker_processes 2;\npid %s/nginx.pid;\nerror_log %s/error.log warn;\n"
            "events { worker_connections 1024; }\n"
            "http {\n"
            "  access_log off;\n"
            "  client_body_temp_path %s/tmp/body; proxy_temp_path %s/tmp/proxy;\n"
            "  fastcgi_temp_path %s/tmp/fcgi; uwsgi_temp_path %s/tmp/uwsgi;\n"
            "  scgi_temp_path %s/tmp/scgi;\n"
            "  proxy_cache_path %s/cache levels=1:2 keys_zone=rc:64m max_size=8g "
            "inactive=1h use_temp_path=off;\n"
            "  upstream s3 { server 127.0.0.1:%d; keepalive 64; }\n"
            "  server {\n"
            "    listen 127.0.0.1:%d;\n"
            "    location / {\n"
            "      slice 1m;\n"
            "      proxy_cache rc;\n"
            "      proxy_cache_key $uri$is_args$args$slice_range;\n"
            "      proxy_set_header Range $slice_range;\n"
            "      proxy_cache_valid 200 206 1h;\n"
            "      proxy_cache_lock on;\n"
            "      proxy_http_version 1.1;\n"
            "      proxy_set_header Connection \"\";\n"
            "      proxy_set_header Host 127.0.0.1:%d;\n"
            "      proxy_pass http://s3;\n"
            "    }\n"
            "  }\n"
            "}\n",
            dir, dir, dir, dir, dir, dir, dir, dir, upstream_port, port, upstream_port);
    fclose(f);
    char *argv[] = {(char *)bin, "-p", dir, "-c", conf, "-e", "stderr", NULL};
    h_proc *p;
    int rc = h_proc_start(env, &p, "nginx", argv, NULL, NULL, 0);
    if (rc < 0)
        return rc;
    for (int i = 0; i < 100; i++) {
        int fd = h_tcp_connect(port, 200);
        if (fd >= 0) {
            close(fd);
            *port_out = port;
            *proc_out = p;
            return 0;
        }
        usleep(50000);
    }
    h_proc_print_log_tail(p, 20);
    return -ETIMEDOUT;
}

int main(int argc, char **argv)
{
    size_t mib = 1024;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--size-mib") == 0 && i + 1 < argc)
            mib = (size_t)atoi(argv[++i]);
        else if (strcmp(argv[i], "--pread-mib") == 0 && i + 1 < argc)
            pread_size = (size_t)atoi(argv[++i]) << 20;
        else if (strcmp(argv[i], "--readahead") == 0 && i + 1 < argc)
            ra_blocks = atoi(argv[++i]);
        else if (strcmp(argv[i], "--block-mib") == 0 && i + 1 < argc)
            block_mib = atoi(argv[++i]);
        else if (strcmp(argv[i], "--node-ram-mib") == 0 && i + 1 < argc)
            ram_mib = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: client_bench [--size-mib N (1024)] [--pread-mib N (16)] "
                            "[--readahead BLOCKS (16)] [--block-mib N (1)]\n"
                            "       [--node-ram-mib N (1024)]\n");
            return 2;
        }
    }
    size_t size = mib << 20;
    h_env *env;
    if (h_env_create(&env, "client_bench") < 0)
        return 1;
    h_s3 *s3 = t_start_s3(env, 3);
    h_s3model *model;
    if (h_s3model_start(env, &model, h_s3_port(s3), 30, 100) < 0) {
        fprintf(stderr, "client_bench: cannot start the S3 model: %s\n", h_last_error());
        return 1;
    }
    s3_config direct, via_model;
    t_s3_config(&direct, h_s3_endpoint(s3), NULL, NULL);
    t_s3_config(&via_model, h_s3model_endpoint(model), NULL, NULL);
    char members[512];
    t_node nodes[3];
    int ports[3];
    size_t off = 0;
    for (int i = 0; i < 3; i++) {
        ports[i] = free_port();
        off += (size_t)snprintf(members + off, sizeof(members) - off, "%sn%d=127.0.0.1:%d",
                                i ? "," : "", i, ports[i]);
    }
    for (int i = 0; i < 3; i++) {
        char nm[8], port[16], bs[16], ram[16];
        snprintf(ram, sizeof(ram), "%dMiB", ram_mib);
        snprintf(nm, sizeof(nm), "n%d", i);
        snprintf(port, sizeof(port), "%d", ports[i]);
        snprintf(bs, sizeof(bs), "%dMiB", block_mib);
        const char *extra[] = {"--port",
                               port,
                               "--members",
                               members,
                               "--ssd-capacity",
                               "4GiB",
                               "--block-size",
                               bs,
                               "--region-size",
                               "64MiB",
                               "--ram-capacity",
                               ram,
                               NULL};
        t_node_start(env, &nodes[i], nm, h_s3model_endpoint(model), extra);
    }
    pid_t node_pids[3];
    for (int i = 0; i < 3; i++)
        node_pids[i] = h_proc_pid(nodes[i].proc);
    work_pids[0] = getpid();
    memcpy(work_pids + 1, node_pids, sizeof(node_pids));
    unsigned char *data = t_alloc_data(size, 77);
    {
        s3_sync *s;
        s3_error err;
        char etag[S3_ETAG_MAX];
        s3_sync_create(&s, &direct);
        s3_sync_put_args pa = {.bucket = H_S3_DEFAULT_BUCKET,
                               .key = KEY,
                               .fd = -1,
                               .data = data,
                               .size = size,
                               .part_size = 64u << 20,
                               .parallel = 4};
        if (s3_sync_put(s, &pa, etag, &err) < 0) {
            fprintf(stderr, "client_bench: put: %s\n", err.message);
            return 1;
        }
        s3_sync_destroy(&s);
    }
    printf("client_bench: %zu MiB object, S3 model 30 ms + 100 MiB/s per connection, "
           "3 ringcached nodes (%d MiB blocks, RAM tier %d MiB each, SSD behind), %zu MiB "
           "preads, read-ahead %d blocks\n",
           mib, block_mib, ram_mib, pread_size >> 20, ra_blocks);

    /* single stream through the model, into memory already touched (as every
     * reader below reads into touched memory) */
    unsigned char *buf = malloc(size);
    memset(buf, 0, size);
    s3_sync *sm;
    s3_sync_create(&sm, &via_model);
    double t_single = s3_read(sm, 0, size, buf, 1, size);
    s3_sync_destroy(&sm);
    printf("single-stream GET:   %7.2f s  %7.1f MiB/s\n", t_single, (double)mib / t_single);

    /* what any client gets from this S3 with 32 ranged GETs in flight */
    rr_client pm = {event_base_new(), NULL};
    s3_client_create(&pm.c, &via_model, pm.base);
    double t_par = rr_read(&pm, 0, size, buf, 32, 1u << 20);
    s3_client_destroy(&pm.c);
    event_base_free(pm.base);
    printf("32 x 1 MiB GETs:     %7.2f s  %7.1f MiB/s  (this S3's ceiling for ranged reads)\n",
           t_par, (double)mib / t_par);

    rc_stats st;
    double c0 = self_cpu_s(), n0 = nodes_cpu_s(node_pids);
    double t_cold = read_through(members, &via_model, data, size, buf, &st, true, NULL, NULL);
    double cold_self = self_cpu_s() - c0, cold_nodes = nodes_cpu_s(node_pids) - n0;
    printf("cold via 3 nodes:    %7.2f s  %7.1f MiB/s  (stalls %" PRIu64 ", read-ahead %" PRIu64
           "; CPU-s/GiB client %.2f + nodes %.2f)\n",
           t_cold, (double)mib / t_cold, st.stalls, st.readahead_fetches,
           cold_self * 1024 / (double)mib, cold_nodes * 1024 / (double)mib);

    int nginx_port = 0;
    h_proc *ngx = NULL;
    bool nginx = start_nginx(env, h_s3model_port(model), &nginx_port, &ngx) == 0;
    s3_config via_nginx;
    rr_client sn_ = {0}, *sn = &sn_;
    if (nginx) {
        char ep[64];
        snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", nginx_port);
        t_s3_config(&via_nginx, ep, NULL, NULL);
        via_nginx.max_connections = 64;
        sn->base = event_base_new();
        s3_client_create(&sn->c, &via_nginx, sn->base);
        double t = rr_read(sn, 0, size, buf, 32, 1u << 20); /* fill nginx's cache */
        if (t < 0 || memcmp(buf, data, size) != 0) {
            fprintf(stderr, "client_bench: nginx gave wrong bytes; leaving it out\n");
            nginx = false;
        } else {
            printf("nginx cold fill:     %7.2f s  %7.1f MiB/s  (32 slices in flight)\n", t,
                   (double)mib / t);
        }
    }

    double warm[RUNS], ng[RUNS], cpu_warm = 0, cpu_ng = 0;
    for (int r = 0; r < RUNS; r++) {
        double cpu = 0;
        warm[r] = read_through(members, &via_model, data, size, buf, &st, true,
                               r == 0 ? "warm-ours" : NULL, &cpu);
        cpu_warm += cpu;
        if (nginx) {
            memset(buf, 0, 4096);
            pid_t ngx_pids[8] = {getpid()};
            int np = 1 + bench_children(h_proc_pid(ngx), ngx_pids + 1, 7);
            pid_t perf = r == 0 ? bench_perf_start("warm-nginx", ngx_pids, np) : 0;
            if (r == 0)
                bench_callgrind_on();
            double s0 = self_cpu_s(), m0 = h_pgrp_cpu_s(h_proc_pid(ngx));
            ng[r] = rr_read(sn, 0, size, buf, 32, 1u << 20);
            cpu_ng += self_cpu_s() - s0 + h_pgrp_cpu_s(h_proc_pid(ngx)) - m0;
            if (r == 0)
                bench_callgrind_off("warm-nginx");
            bench_perf_stop(perf);
            if (ng[r] < 0 || memcmp(buf, data, size) != 0)
                nginx = false;
        }
    }
    double t_warm = median3(warm);
    /* for the record: a new process whose page cache is not backed yet pays
     * the first-touch faults inside its reads */
    double c1 = self_cpu_s();
    double t_fresh = read_through(members, &via_model, data, size, buf, &st, false, NULL, NULL);
    c1 = self_cpu_s() - c1;
    printf("warm via 3 nodes:    %7.2f s  %7.1f MiB/s  (median of %d, empty page cache; "
           "CPU-s/GiB client + nodes %.2f)\n",
           t_warm, (double)mib / t_warm, RUNS, cpu_warm * 1024 / ((double)mib * RUNS));
    printf("warm, no prefault:   %7.2f s  %7.1f MiB/s  (a new process touching its page cache "
           "for the first time; CPU-s/GiB client %.2f)\n",
           t_fresh, (double)mib / t_fresh, c1 * 1024 / (double)mib);
    double t_ng = nginx ? median3(ng) : 0;
    if (nginx)
        printf("nginx warm:          %7.2f s  %7.1f MiB/s  (median of %d; CPU-s/GiB client + "
               "nginx %.2f)\n",
               t_ng, (double)mib / t_ng, RUNS, cpu_ng * 1024 / ((double)mib * RUNS));

    /* hits: a hot re-read in one process, against memcpy */
    double hit_mib_s = 0, memcpy_mib_s = 0;
    size_t hot = size < (256u << 20) ? size : (256u << 20);
    hot_reread(members, &via_model, data, hot, &hit_mib_s, &memcpy_mib_s);
    printf("page-cache hits:     %7.1f MiB/s  (a hot re-read of %zu MiB in one process; "
           "memcpy of the same bytes %.1f MiB/s; medians of %d)\n",
           hit_mib_s, hot >> 20, memcpy_mib_s, RUNS + 2);

    /* scattered: 2000 random 64 KiB reads, interleaved with nginx */
    enum { N = 2000, LEN = 64 << 10 };
    double *lat = calloc(N, sizeof(double)), *lat_ng = calloc(N, sizeof(double));
    rc_config cfg;
    rc_config_init(&cfg);
    cfg.members = members;
    cfg.s3 = via_model;
    cfg.max_threads = 1;
    rc_client *c;
    rc_handle *h;
    char err[RC_ERR_MAX];
    if (rc_create(&c, &cfg, err, sizeof(err)) < 0 ||
        rc_open(c, H_S3_DEFAULT_BUCKET, KEY, &h, err, sizeof(err)) < 0) {
        fprintf(stderr, "client_bench: %s\n", err);
        return 1;
    }
    uint64_t x = 4242;
    for (int i = 0; i < N; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t o = (x >> 7) % (size - LEN);
        double t0 = bench_now_s();
        if (rc_pread(h, buf, LEN, o) != LEN || memcmp(buf, data + o, LEN) != 0) {
            fprintf(stderr, "client_bench: scattered read at %" PRIu64 " failed\n", o);
            return 1;
        }
        lat[i] = bench_now_s() - t0;
        if (nginx) {
            lat_ng[i] = rr_read(sn, o, LEN, buf + LEN, 1, LEN);
            if (lat_ng[i] < 0 || memcmp(buf + LEN, data + o, LEN) != 0)
                nginx = false;
        }
    }
    rc_stats_get(c, &st);
    rc_close(&h);
    rc_destroy(&c);
    double p50 = bench_pct(lat, N, 0.50) * 1e6, p99 = bench_pct(lat, N, 0.99) * 1e6;
    printf("scattered 64 KiB:    p50 %6.0f us  p99 %6.0f us  (ranges fetched %" PRIu64 ", %" PRIu64
           " on the reader's thread; read-ahead %" PRIu64 ")\n",
           p50, p99, st.partial_fetches, st.inline_reads, st.readahead_fetches);
    double np50 = 0, np99 = 0;
    if (nginx) {
        np50 = bench_pct(lat_ng, N, 0.50) * 1e6;
        np99 = bench_pct(lat_ng, N, 0.99) * 1e6;
        printf("nginx scattered:     p50 %6.0f us  p99 %6.0f us\n", np50, np99);
    }
    s3_client_destroy(&sn->c);
    if (sn->base)
        event_base_free(sn->base);
    for (int i = 0; i < 3; i++)
        h_proc_stop(nodes[i].proc, 15000);
    h_env_destroy(&env);
    free(lat);
    free(lat_ng);
    free(buf);
    free(data);

    char c_s[32], w_s[32], n_s[32], d_s[32], cpu_s[32], hit_s[32];
    snprintf(hit_s, sizeof(hit_s), "%.2f", hit_mib_s / memcpy_mib_s);
    snprintf(c_s, sizeof(c_s), "%.2f", t_single / t_cold);
    snprintf(w_s, sizeof(w_s), "%.2f", t_single / t_warm);
    if (nginx) {
        snprintf(n_s, sizeof(n_s), "%.2f", t_ng / t_warm);
        snprintf(d_s, sizeof(d_s), "%.2f", p99 / np99);
        snprintf(cpu_s, sizeof(cpu_s), "%.2f", cpu_warm / cpu_ng);
    } else {
        snprintf(n_s, sizeof(n_s), "na");
        snprintf(d_s, sizeof(d_s), "na");
        snprintf(cpu_s, sizeof(cpu_s), "na");
    }
    printf("%s\n", BENCH_RATIO_CONVENTION);
    printf("client: cold_vs_single_stream=%s warm_vs_single_stream=%s warm_vs_nginx=%s "
           "scattered_p99_vs_nginx=%s cpu_per_gib_vs_nginx=%s hit_vs_memcpy=%s\n",
           c_s, w_s, n_s, d_s, cpu_s, hit_s);
    return 0;
}
