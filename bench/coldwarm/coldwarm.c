/* SPDX-License-Identifier: Apache-2.0
 *
 * coldwarm.c: the cold-versus-warm benchmark, the five set-ups of ClickHouse's
 * distributed-cache post on one machine, with its peers in the same run:
 *   peer  S3 directly (through the S3 model: 30 ms first byte, 100 MiB/s per
 *         connection) and an nginx slice cache in front of the same S3
 *   1     data on local disk, read directly (shared-nothing baseline)
 *   2     one compute node with a cache node of its own (no LAN hop)
 *   3     distributed cache, first load: compute node 1, three cold nodes
 *   4     distributed cache, second compute node: new process, nodes warm
 *   5     six compute nodes at once: nodes warm, and again with them cold
 * Each compute node is a coldwarm_reader process; in 3-5 it reaches the cache
 * nodes through its own netproxy (LAN latency, a bandwidth cap X per compute
 * node, X chosen so 6X <= half the loopback ceiling measured by iperf3 -P 4 in
 * this run). Workloads: a full scan (every byte, checked against its XXH64)
 * and 2000 scattered 64 KiB reads. S3 requests and bytes are counted at the S3
 * model; CPU is summed over the readers and the cache nodes (or nginx's
 * workers), as CPU-seconds per GiB read; for six compute nodes at once, the
 * aggregate bytes per CPU-second of the whole system (readers + nodes) are
 * compared with one compute node's (set-up 4): near 1, the design scales
 * with the cores it is given. With RINGCACHE_BENCH_PERF=DIR the hot scans and
 * the scattered reads of nginx and of set-up 4 are recorded by perf
 * (bench_profile.h). The scattered reads' cells also give the reader's CPU
 * per read.
 * The engine's seed query (top-5 OwnerDisplayName by count, over a
 * Stack-Overflow-shaped Parquet dataset written by bench/engine/bench_gen.mjs)
 * runs as a third workload through `ringcache query` in set-ups 1-4 and
 * against S3 directly; its result must be the same in every set-up.
 * The post's own workload, a MergeTree table queried through `ringcache
 * server` processes in the same five set-ups, runs last as coldwarm_table.mjs
 * (its comment says how) on this run's S3 model and link cap.
 *
 *   coldwarm [--scale tiny|small|medium|large] [--threads N] [--latency-us U]
 *            [--bandwidth-mib X] [--out DIR] [--no-table | --table-only] [--plain-reads]
 *            [--help]
 *
 * Prints a Markdown table, writes it and a PNG plot (gnuplot) to DIR
 * (default: bench/results), and ends with
 *   coldwarm-table: second_node_vs_first=.. hot_server_vs_local=..
 *   scattered_p50_ms_second_node=.. six_servers_s3_gets_per_block=..
 *   coldwarm-query: ...
 *   coldwarm: dc_second_node_vs_cold=<x> six_nodes_aggregate_vs_one=<y>
 *   hot_vs_direct_s3=<z> s3_gets_six_cold_per_block=<n>
 *   six_nodes_cpu_efficiency=<e> hot_cpu_per_gib_vs_nginx=<c>
 */
#include "harness.h"
#include "s3.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>
#include "../bench.h"
#include "../bench_profile.h"

#define MAX_COMPUTE 6
#define N_NODES     3

static h_env *env;
static h_s3 *s3;
static h_s3model *model;
static const char *bucket = "ringcache-bench";
static int threads = 4, latency_us = 200, scattered_reads = 2000;
static double bw_mib, link_mib;
static char list_path[700], data_dir[700];
static uint64_t dataset_bytes, dataset_blocks;
static int node_gen;
static bool plain_reads; /* --plain-reads: the readers' scans through rc_pread */

static void die(const char *what)
{
    fprintf(stderr, "coldwarm: %s\n", what);
    exit(1);
}

static double t_start;

/* Progress on stderr: what runs now and how long the run has taken. */
static void stage(const char *what);

static void stage(const char *what)
{
    fprintf(stderr, "coldwarm: [%5.1f s] %s\n", bench_now_s() - t_start, what);
}

/* ---- processes ----------------------------------------------------------------- */

typedef struct {
    h_proc *proc;
    int port;
    char id[32];
} node_t;

static void start_node(node_t *n, const char *id)
{
    char cap[32], name[64];
    /* room for the whole dataset on any one node, plus regions to evict into;
     * the store preallocates it, so no more than that */
    snprintf(cap, sizeof(cap), "%lluMiB",
             (unsigned long long)((dataset_bytes >> 20) + (dataset_bytes >> 21) + 512));
    snprintf(n->id, sizeof(n->id), "%s", id);
    snprintf(name, sizeof(name), "%s-g%d", id, node_gen);
    h_node_opts o = {.name = name,
                     .id = id,
                     .s3_endpoint = h_s3model_endpoint(model),
                     .ssd = cap,
                     .ram = "512MiB",
                     .threads = 2,
                     .log_level = "warn"};
    h_node hn;
    if (h_node_start(env, &hn, &o) < 0)
        die(h_last_error());
    n->proc = hn.proc;
    n->port = hn.port;
}

static void start_cluster(node_t *nodes)
{
    node_gen++;
    for (int i = 0; i < N_NODES; i++) {
        char id[32];
        snprintf(id, sizeof(id), "ringcache-%d", i);
        start_node(&nodes[i], id);
    }
}

static void stop_cluster(node_t *nodes, int n)
{
    for (int i = 0; i < n; i++)
        if (h_proc_stop(nodes[i].proc, 15000) != 0)
            die("a cache node did not exit cleanly");
}

static double nodes_cpu(const node_t *nodes, int n)
{
    double t = 0;
    for (int i = 0; i < n; i++)
        t += h_pid_cpu_s(h_proc_pid(nodes[i].proc));
    return t;
}

/* A netproxy in front of the nodes for compute node `c`: members string out. */
static h_proc *start_proxy(const node_t *nodes, int c, char *members, size_t cap)
{
    char bin[1024], pf[700], name[32];
    if (h_build_path(bin, sizeof(bin), "bench/netproxy/netproxy") < 0)
        die("netproxy is not built");
    snprintf(name, sizeof(name), "proxy%d-g%d", c, node_gen);
    char file[64];
    snprintf(file, sizeof(file), "%s.ports", name);
    h_env_path(env, pf, sizeof(pf), file);
    char tgt[N_NODES][32], lat[16], bw[16];
    snprintf(lat, sizeof(lat), "%d", latency_us);
    snprintf(bw, sizeof(bw), "%.0f", bw_mib);
    const char *argv[32];
    int k = 0;
    argv[k++] = bin;
    for (int i = 0; i < N_NODES; i++) {
        snprintf(tgt[i], sizeof(tgt[i]), "127.0.0.1:%d", nodes[i].port);
        argv[k++] = "--target";
        argv[k++] = tgt[i];
    }
    const char *rest[] = {"--port-file", pf, "--latency-us", lat, "--bandwidth-mib", bw, NULL};
    for (int i = 0; rest[i]; i++)
        argv[k++] = rest[i];
    argv[k] = NULL;
    h_proc *p;
    /* the port file holds several lines; the harness reads the first and
     * connect-checks it */
    if (h_proc_start(env, &p, name, (char *const *)argv, NULL, pf, 0) < 0)
        die(h_last_error());
    FILE *f = fopen(pf, "r");
    members[0] = '\0';
    for (int i = 0; i < N_NODES; i++) {
        int port = 0;
        if (!f || fscanf(f, "%d", &port) != 1)
            die("netproxy wrote no ports");
        size_t l = strlen(members);
        snprintf(members + l, cap - l, "%s%s=127.0.0.1:%d", i ? "," : "", nodes[i].id, port);
    }
    fclose(f);
    return p;
}

typedef struct {
    double seconds, cpu_s, p50, p99;
    uint64_t bytes;
} result_t;

typedef struct {
    h_proc *proc;
} reader_t;

static void start_reader(reader_t *r, const char *name, const char *source, const char *arg,
                         const char *workload)
{
    char bin[1024], th[16];
    if (h_build_path(bin, sizeof(bin), "bench/coldwarm/coldwarm_reader") < 0)
        die("coldwarm_reader is not built");
    snprintf(th, sizeof(th), "%d", threads);
    const char *opt = !strcmp(source, "cache")   ? "--cache"
                      : !strcmp(source, "local") ? "--dir"
                      : !strcmp(source, "http")  ? "--url-base"
                                                 : NULL;
    const char *argv[24];
    int k = 0;
    argv[k++] = bin;
    argv[k++] = "--source";
    argv[k++] = source;
    argv[k++] = "--list";
    argv[k++] = list_path;
    argv[k++] = "--bucket";
    argv[k++] = bucket;
    argv[k++] = "--workload";
    argv[k++] = workload;
    argv[k++] = "--threads";
    argv[k++] = th;
    char nr[16];
    snprintf(nr, sizeof(nr), "%d", scattered_reads);
    argv[k++] = "--reads";
    argv[k++] = nr;
    if (opt) {
        argv[k++] = opt;
        argv[k++] = arg;
    }
    if (plain_reads)
        argv[k++] = "--plain-reads";
    argv[k] = NULL;
    char ep[300];
    snprintf(ep, sizeof(ep), "AWS_ENDPOINT_URL=%s", h_s3model_endpoint(model));
    char *envx[] = {"AWS_ACCESS_KEY_ID=S3RVER", "AWS_SECRET_ACCESS_KEY=S3RVER",
                    "AWS_REGION=us-east-1", ep, NULL};
    if (h_proc_start(env, &r->proc, name, (char *const *)argv, envx, NULL, 0) < 0)
        die(h_last_error());
}

static void wait_reader(reader_t *r, result_t *out)
{
    int st = h_proc_wait(r->proc, -1);
    FILE *f = fopen(h_proc_log_path(r->proc), "r");
    char line[512];
    memset(out, 0, sizeof(*out));
    bool got = false;
    while (f && fgets(line, sizeof(line), f)) {
        unsigned long long e = 0;
        if (sscanf(line,
                   "result bytes=%" SCNu64 " seconds=%lf cpu_s=%lf p50_ms=%lf p99_ms=%lf "
                   "errors=%llu",
                   &out->bytes, &out->seconds, &out->cpu_s, &out->p50, &out->p99, &e) == 6)
            got = e == 0;
    }
    if (f)
        fclose(f);
    if (st != 0 || !got) {
        h_proc_print_log_tail(r->proc, 20);
        die("a reader failed (its log is above)");
    }
}

static result_t run_one(const char *name, const char *source, const char *arg, const char *workload)
{
    reader_t r;
    result_t res;
    start_reader(&r, name, source, arg, workload);
    wait_reader(&r, &res);
    return res;
}

/* run_one, recorded by perf (RINGCACHE_BENCH_PERF) with the processes that
 * serve it (pids[0..n): the nodes, or nginx's workers) as phase `name`. */
static result_t run_one_profiled(const char *name, const char *source, const char *arg,
                                 const char *workload, const pid_t *pids, int n)
{
    reader_t r;
    result_t res;
    start_reader(&r, name, source, arg, workload);
    pid_t all[16];
    int k = 0;
    all[k++] = h_proc_pid(r.proc);
    for (int i = 0; i < n && k < 16; i++)
        all[k++] = pids[i];
    pid_t perf = bench_perf_start(name, all, k);
    wait_reader(&r, &res);
    bench_perf_stop(perf);
    return res;
}

static int node_pids(const node_t *nodes, int n, pid_t *out)
{
    for (int i = 0; i < n; i++)
        out[i] = h_proc_pid(nodes[i].proc);
    return n;
}

/* ---- data ----------------------------------------------------------------------- */

/* A blocking S3 client straight to the S3 server (not through the model, so
 * uploads are neither delayed nor counted). */
static s3_sync *s3_uploader(void)
{
    s3_config c;
    s3_config_init(&c);
    snprintf(c.endpoint, sizeof(c.endpoint), "%s", h_s3_endpoint(s3));
    snprintf(c.access_key, sizeof(c.access_key), "S3RVER");
    snprintf(c.secret_key, sizeof(c.secret_key), "S3RVER");
    c.path_style = true;
    s3_sync *sy;
    if (s3_sync_create(&sy, &c) < 0)
        die("cannot create the S3 client");
    return sy;
}

static void make_dataset(int files, int file_mib)
{
    h_env_path(env, data_dir, sizeof(data_dir), "data");
    h_env_path(env, list_path, sizeof(list_path), "objects.txt");
    mkdir(data_dir, 0755);
    char sub[760];
    snprintf(sub, sizeof(sub), "%s/cw", data_dir);
    mkdir(sub, 0755);
    s3_sync *sy = s3_uploader();
    FILE *lf = fopen(list_path, "w");
    size_t size = (size_t)file_mib << 20;
    uint8_t *buf = malloc(size);
    for (int i = 0; i < files; i++) {
        uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
        for (size_t k = 0; k < size; k += 8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            memcpy(buf + k, &x, 8);
        }
        char key[64], path[900];
        snprintf(key, sizeof(key), "cw/part-%03d.bin", i);
        snprintf(path, sizeof(path), "%s/%s", data_dir, key);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(buf, 1, size, f) != size || fclose(f) != 0)
            die("cannot write the local copy of the dataset");
        s3_error err;
        s3_sync_put_args pa = {.bucket = bucket,
                               .key = key,
                               .fd = -1,
                               .data = buf,
                               .size = size,
                               .part_size = 16u << 20,
                               .parallel = 4};
        if (s3_sync_put(sy, &pa, NULL, &err) < 0)
            die(err.message);
        fprintf(lf, "%s %zu %016" PRIx64 "\n", key, size, (uint64_t)XXH64(buf, size, 0));
        fprintf(stderr, "\rdataset: %d/%d objects", i + 1, files);
    }
    fprintf(stderr, "\n");
    fclose(lf);
    free(buf);
    s3_sync_destroy(&sy);
    dataset_bytes = (uint64_t)files * size;
    dataset_blocks = (uint64_t)files * (uint64_t)file_mib;
}

/* ---- main ------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    result_t cold, hot, scattered;
    bool has_cold, has_hot, has_scattered;
    uint64_t s3_gets, s3_bytes; /* during the cold scan */
    double extra_cpu;           /* nodes / nginx during the hot scan */
} row_t;

static double mib_s(const result_t *r)
{
    return r->seconds > 0 ? (double)r->bytes / 1048576.0 / r->seconds : 0;
}

static void s3_counts(uint64_t *gets, uint64_t *bytes)
{
    int64_t g = h_s3model_count(model, "GET", NULL), b = h_s3model_stat(model, "bytes_out");
    *gets = g > 0 ? (uint64_t)g : 0;
    *bytes = b > 0 ? (uint64_t)b : 0;
}

/* ---- the engine's seed query ------------------------------------------------------ */

static char posts_dir[700];
static long long posts_rows;

/* Writes the posts dataset with DuckDB (bench_gen.mjs) and puts its four
 * Parquet files into the bucket under posts/. */
static void make_posts(long long rows)
{
    posts_rows = rows;
    h_env_path(env, posts_dir, sizeof(posts_dir), "posts");
    char script[1024], rs[32];
    if (h_source_path(script, sizeof(script), "bench/engine/bench_gen.mjs") < 0)
        die("cannot find bench/engine/bench_gen.mjs (set RINGCACHE_SOURCE_DIR)");
    snprintf(rs, sizeof(rs), "%lld", rows);
    char *gargv[] = {"node", script, posts_dir, rs, "0", NULL};
    h_proc *p;
    if (h_proc_start(env, &p, "posts-gen", gargv, NULL, NULL, 0) < 0)
        die("cannot start node for bench_gen.mjs");
    if (h_proc_wait(p, 600000) != 0) {
        h_proc_print_log_tail(p, 20);
        die("bench_gen.mjs failed (see its log above; npm ci installs @duckdb/node-api)");
    }
    s3_sync *sy = s3_uploader();
    /* twice: posts/ for the seed query, colscan/ for the full-column scan, so
     * that each query's first run finds the cache cold for it */
    for (int i = 0; i < 8; i++) {
        char key[64], path[900];
        snprintf(key, sizeof(key), "%s/posts_%d.parquet", i < 4 ? "posts" : "colscan", i % 4);
        snprintf(path, sizeof(path), "%s/data/posts_%d.parquet", posts_dir, i % 4);
        int fd = open(path, O_RDONLY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0)
            die("bench_gen.mjs wrote no posts_N.parquet");
        s3_error err;
        s3_sync_put_args pa = {.bucket = bucket,
                               .key = key,
                               .fd = fd,
                               .size = (uint64_t)st.st_size,
                               .part_size = 16u << 20,
                               .parallel = 4};
        if (s3_sync_put(sy, &pa, NULL, &err) < 0)
            die(err.message);
        close(fd);
    }
    s3_sync_destroy(&sy);
}

typedef struct {
    bool ok;
    double seconds, cpu_s;
    uint64_t s3_gets;
    char rows[2048]; /* the result, TSV */
} qres_t;

typedef struct {
    const char *name;
    qres_t cold, hot;   /* the seed query */
    qres_t ccold, chot; /* the full-column scan */
    bool has_cold, has_hot;
} qrow_t;

static qres_t run_query(const char *where, const char *members, bool colscan);

/* Runs the seed query and the column scan, cold (when asked) then hot. */
static void run_queries(qrow_t *q, const char *where, const char *members, bool cold, bool hot)
{
    if (cold) {
        q->cold = run_query(where, members, false);
        q->ccold = run_query(where, members, true);
        q->has_cold = true;
    }
    if (hot) {
        q->hot = run_query(where, members, false);
        q->chot = run_query(where, members, true);
        q->has_hot = true;
    }
}

/* Runs a query in a new `ringcache query` process: the seed query (colscan
 * false) or a full-column scan of Body, the largest column (colscan true);
 * from the local files (where "local"), through the cache nodes (members),
 * or from S3 directly (members NULL). Wall time and CPU of the process; the
 * S3 GETs the model counted meanwhile. */
static qres_t run_query(const char *where, const char *members, bool colscan)
{
    qres_t q;
    memset(&q, 0, sizeof(q));
    char cli[1024], from[1200], sql[2048], ep[300];
    if (h_build_path(cli, sizeof(cli), H_RINGCACHE_CLI) < 0)
        die("the ringcache CLI is not built");
    if (where && !strcmp(where, "local"))
        snprintf(from, sizeof(from), "file('%s/data/posts_*.parquet')", posts_dir);
    else
        snprintf(from, sizeof(from), "s3('s3://%s/%s/*.parquet')", bucket,
                 colscan ? "colscan" : "posts");
    if (colscan)
        snprintf(sql, sizeof(sql),
                 "SELECT sum(length(Body)), count() FROM %s SETTINGS max_threads = %d", from,
                 threads);
    else
        snprintf(sql, sizeof(sql),
                 "SELECT OwnerDisplayName, count() AS num_posts FROM %s WHERE OwnerDisplayName "
                 "NOT IN ('', 'anon') GROUP BY OwnerDisplayName ORDER BY num_posts DESC, "
                 "OwnerDisplayName LIMIT 5 SETTINGS max_threads = %d",
                 from, threads);
    const char *argv[12] = {cli, "query", sql, "--format", "TSV"};
    int k = 5;
    if (members) {
        argv[k++] = "--cache";
        argv[k++] = members;
    }
    argv[k] = NULL;
    snprintf(ep, sizeof(ep), "AWS_ENDPOINT_URL=%s", h_s3model_endpoint(model));
    const char *set[] = {"AWS_PROFILE",
                         "RINGCACHE_CACHE",
                         "AWS_ACCESS_KEY_ID=S3RVER",
                         "AWS_SECRET_ACCESS_KEY=S3RVER",
                         "AWS_REGION=us-east-1",
                         ep,
                         NULL};
    h_s3model_reset(model);
    struct rusage r0, r1;
    getrusage(RUSAGE_CHILDREN, &r0);
    h_run_result *rr = malloc(sizeof(*rr));
    double t0 = bench_now_s();
    if (!rr || h_run(env, rr, argv, set) < 0)
        die("cannot run ringcache query");
    q.seconds = bench_now_s() - t0;
    getrusage(RUSAGE_CHILDREN, &r1);
    q.cpu_s = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec + r1.ru_stime.tv_sec -
                       r0.ru_stime.tv_sec) +
              (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec + r1.ru_stime.tv_usec -
                       r0.ru_stime.tv_usec) /
                  1e6;
    if (rr->status != 0) {
        fprintf(stderr, "coldwarm: ringcache query failed (exit %d): %s\n", rr->status, rr->err);
        die("the seed query failed");
    }
    uint64_t bytes;
    s3_counts(&q.s3_gets, &bytes);
    size_t n = strnlen(rr->out, sizeof(q.rows) - 1); /* 5 short rows: far below the cap */
    memcpy(q.rows, rr->out, n);
    q.rows[n] = '\0';
    free(rr);
    q.ok = true;
    return q;
}

/* ---- the post's table --------------------------------------------------------------- */

/* Runs coldwarm_table.mjs (the MergeTree table workload: its set-ups are its
 * own `ringcache server` processes and cache nodes, on this run's S3 model and
 * link cap) with its progress on stderr; its Markdown (ending with the
 * coldwarm-table line) is returned, malloc'ed, or NULL when it could not run
 * (the reason on stderr). */
static char *run_table(long long rows)
{
    char script[1024], md[700], dir[700], rs[32], adm[16], lat[16], bw[16], th[16];
    if (h_source_path(script, sizeof(script), "bench/coldwarm/coldwarm_table.mjs") < 0)
        die("cannot find bench/coldwarm/coldwarm_table.mjs (set RINGCACHE_SOURCE_DIR)");
    h_env_path(env, md, sizeof(md), "table.md");
    h_env_path(env, dir, sizeof(dir), "table");
    snprintf(rs, sizeof(rs), "%lld", rows);
    snprintf(adm, sizeof(adm), "%d", h_s3model_admin_port(model));
    snprintf(lat, sizeof(lat), "%d", latency_us);
    snprintf(bw, sizeof(bw), "%.0f", bw_mib);
    snprintf(th, sizeof(th), "%d", threads < 2 ? threads : 2); /* the machine's cores */
    const char *argv[] = {"node",
                          script,
                          "--rows",
                          rs,
                          "--s3",
                          h_s3model_endpoint(model),
                          "--s3-admin",
                          adm,
                          "--s3-direct",
                          h_s3_endpoint(s3),
                          "--bucket",
                          bucket,
                          "--dir",
                          dir,
                          "--md",
                          md,
                          "--latency-us",
                          lat,
                          "--bandwidth-mib",
                          bw,
                          "--threads",
                          th,
                          NULL};
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        die("cannot fork for node");
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 1); /* the table comes back through the --md file */
        execvp("node", (char *const *)argv);
        fprintf(stderr, "coldwarm: cannot run node: %s\n", strerror(errno));
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "coldwarm: the table workload failed (exit %d; its messages are above)\n",
                WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
        return NULL;
    }
    FILE *f = fopen(md, "r");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n = getdelim(&buf, &cap, '\0', f);
    fclose(f);
    if (n <= 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

int main(int argc, char **argv)
{
    const char *scale = "small", *out_dir = NULL;
    bool with_table = true, table_only = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--scale") && v)
            scale = v, i++;
        else if (!strcmp(a, "--threads") && v)
            threads = atoi(v), i++;
        else if (!strcmp(a, "--latency-us") && v)
            latency_us = atoi(v), i++;
        else if (!strcmp(a, "--bandwidth-mib") && v)
            bw_mib = atof(v), i++;
        else if (!strcmp(a, "--out") && v)
            out_dir = v, i++;
        else if (!strcmp(a, "--plain-reads"))
            plain_reads = true;
        else if (!strcmp(a, "--no-table"))
            with_table = false;
        else if (!strcmp(a, "--table-only"))
            table_only = true;
        else {
            printf(
                "usage: coldwarm [--scale tiny|small|medium|large (small)] [--threads N (4)]\n"
                "                [--latency-us U (200)] [--bandwidth-mib X (measured)]\n"
                "                [--out DIR (bench/results)] [--no-table | --table-only]\n"
                "                [--plain-reads]\n"
                "scales: tiny 4 x 4 MiB, small 8 x 32 MiB, medium 24 x 128 MiB, large 48 x "
                "128 MiB objects;\n"
                "        the seed query's Parquet dataset: 0.2M, 2M, 10M, 20M rows;\n"
                "        scattered 64 KiB reads: 200 at tiny, 2000 at the others;\n"
                "        the post's MergeTree table (Amazon-reviews-shaped, loaded by INSERT):\n"
                "        0.1M, 0.5M, 5M, 20M rows (--no-table leaves it out, --table-only runs it "
                "alone)\n"
                "X, the cap per compute node, defaults to half the loopback ceiling (iperf3 "
                "-P 4, this run) over 6\n"
                "--plain-reads: the compute nodes scan with rc_pread (page cache, read-ahead)\n"
                "        rather than RC_READ_SCAN reads (straight into the reader's buffer)\n");
            return strcmp(a, "--help") == 0 ? 0 : 2;
        }
    }
    int files, file_mib;
    long long qrows, trows;
    if (!strcmp(scale, "tiny")) /* 200 scattered reads: 2000 one at a time at S3's 30 ms
                                   would take a minute alone */
        files = 4, file_mib = 4, qrows = 200000, scattered_reads = 200, trows = 100000;
    else if (!strcmp(scale, "small"))
        files = 8, file_mib = 32, qrows = 2000000, trows = 500000;
    else if (!strcmp(scale, "medium"))
        files = 24, file_mib = 128, qrows = 10000000, trows = 5000000;
    else if (!strcmp(scale, "large"))
        files = 48, file_mib = 128, qrows = 20000000, trows = 20000000;
    else
        die("--scale is tiny, small, medium or large");
    if (threads < 1 || latency_us < 0 || bw_mib < 0)
        die("--threads >= 1, --latency-us >= 0, --bandwidth-mib >= 0");

    if (h_env_create(&env, "coldwarm") < 0)
        return 1;
    const char *buckets[] = {bucket, NULL};
    h_s3_opts so = {.version = 3, .buckets = buckets};
    if (h_s3_start(env, &s3, &so) < 0)
        die(h_last_error());
    if (h_s3model_start(env, &model, h_s3_port(s3), 30, 100) < 0)
        die(h_last_error());
    t_start = bench_now_s();
    stage("measuring the loopback ceiling (iperf3)");
    double ceiling = h_iperf_gib_s(env, 4, 2) * 1024.0;
    if (bw_mib == 0)
        bw_mib = ceiling > 0 ? ceiling / 2 / 6 : 200;
    /* what one compute node's link can really carry here: iperf3 through a
     * netproxy with the same latency and cap (the proxy costs CPU on 2 cores) */
    double link = 0;
    {
        h_proc *srv, *px;
        int ip = h_free_port();
        char bin[1024], pf[700], tgt[32], lat[16], bw[16];
        if (ip > 0 && h_build_path(bin, sizeof(bin), "bench/netproxy/netproxy") == 0) {
            h_env_path(env, pf, sizeof(pf), "link-probe.ports");
            snprintf(tgt, sizeof(tgt), "127.0.0.1:%d", ip);
            snprintf(lat, sizeof(lat), "%d", latency_us);
            snprintf(bw, sizeof(bw), "%.0f", bw_mib);
            const char *pv[] = {bin, "--target",        tgt, "--port-file", pf, "--latency-us",
                                lat, "--bandwidth-mib", bw,  NULL};
            /* the proxy first: its ready probe must not reach iperf3's one session */
            if (h_proc_start(env, &px, "link-probe", (char *const *)pv, NULL, pf, 0) == 0) {
                if (h_iperf_server_start(env, &srv, &ip) == 0) {
                    link = h_iperf_client_gib_s(h_proc_port(px), 4, 2, 1) * 1024.0;
                    h_proc_wait(srv, 3000);
                    h_proc_stop(srv, 2000);
                }
                h_proc_stop(px, 2000);
            }
        }
    }
    link_mib = link;
    fprintf(stderr,
            "loopback ceiling (iperf3 -P 4): %.0f MiB/s; cap per compute node X = %.0f "
            "MiB/s, latency %d us each way; one link through netproxy carries %.0f MiB/s\n",
            ceiling, bw_mib, latency_us, link);
    char dirbuf[1024];
    if (!out_dir) {
        const char *src = getenv("RINGCACHE_SOURCE_DIR");
        snprintf(dirbuf, sizeof(dirbuf), "%s/bench/results", src ? src : ".");
        out_dir = dirbuf;
    }
    if (table_only) {
        stage("the post's table");
        char *tmd = run_table(trows);
        if (!tmd)
            die("the table workload did not run");
        mkdir(out_dir, 0755);
        char tpath[1200];
        snprintf(tpath, sizeof(tpath), "%s/coldwarm-table-%s.md", out_dir, scale);
        FILE *tf = fopen(tpath, "w");
        if (tf) {
            fprintf(tf, "# cold versus warm, the post's table, scale %s\n%s", scale, tmd);
            fclose(tf);
        }
        printf("%s\nwritten: %s\n%s\n", tmd, tpath, BENCH_RATIO_CONVENTION);
        const char *last = strstr(tmd, "coldwarm-table:");
        printf("%s", last ? last : "coldwarm-table: na\n");
        free(tmd);
        h_env_destroy(&env);
        return 0;
    }
    stage("writing the dataset");
    make_dataset(files, file_mib);
    stage("writing the Parquet dataset for the seed query (DuckDB)");
    make_posts(qrows);
    qrow_t qr[6];
    memset(qr, 0, sizeof(qr));
    int nq = 0;

    row_t rows[8];
    memset(rows, 0, sizeof(rows));
    int nr = 0;
    char arg[4096];

    /* peer: S3 directly */
    row_t *r = &rows[nr++];
    stage("S3 directly");
    r->name = "S3 directly (peer)";
    h_s3model_reset(model);
    r->cold = run_one("s3-scan-1", "s3", NULL, "scan");
    s3_counts(&r->s3_gets, &r->s3_bytes);
    r->hot = run_one("s3-scan-2", "s3", NULL, "scan");
    r->scattered = run_one("s3-scattered", "s3", NULL, "scattered");
    r->has_cold = r->has_hot = r->has_scattered = true;
    qr[nq].name = "S3 directly (peer)";
    run_queries(&qr[nq++], NULL, NULL, true, true);

    /* peer: nginx slice cache */
    int nport;
    h_proc *ngx;
    if (h_nginx_start(env, &ngx, h_s3model_port(model), &nport) < 0)
        die("cannot start nginx (apt-get install nginx)");
    snprintf(arg, sizeof(arg), "http://127.0.0.1:%d/%s", nport, bucket);
    r = &rows[nr++];
    stage("nginx slice cache");
    r->name = "nginx slice cache (peer)";
    h_s3model_reset(model);
    r->cold = run_one("nginx-scan-1", "http", arg, "scan");
    s3_counts(&r->s3_gets, &r->s3_bytes);
    pid_t ngx_pids[8];
    int n_ngx = bench_children(h_proc_pid(ngx), ngx_pids, 8);
    double ngx0 = h_pgrp_cpu_s(h_proc_pid(ngx));
    r->hot = run_one_profiled("nginx-scan-2", "http", arg, "scan", ngx_pids, n_ngx);
    r->extra_cpu = h_pgrp_cpu_s(h_proc_pid(ngx)) - ngx0; /* nginx serves it: its CPU counts */
    row_t *ngx_row = r;
    r->scattered = run_one_profiled("nginx-scattered", "http", arg, "scattered", ngx_pids, n_ngx);
    r->has_cold = r->has_hot = r->has_scattered = true;
    h_proc_stop(ngx, 5000);

    /* 1: local disk */
    r = &rows[nr++];
    stage("1 local disk");
    r->name = "1 local disk";
    FILE *dc = fopen("/proc/sys/vm/drop_caches", "w");
    bool dropped = dc && fputs("3\n", dc) >= 0 && fclose(dc) == 0;
    if (!dropped && dc)
        fclose(dc);
    r->cold = run_one("local-scan-1", "local", data_dir, "scan");
    r->hot = run_one("local-scan-2", "local", data_dir, "scan");
    r->scattered = run_one("local-scattered", "local", data_dir, "scattered");
    r->has_cold = dropped;
    r->has_hot = r->has_scattered = true;
    qrow_t *qlocal = &qr[nq++];
    qlocal->name = "1 local disk";
    run_queries(qlocal, "local", NULL, false, true); /* the OS has the files: written just now */

    /* 2: one compute node, its own cache node, no LAN hop */
    node_t solo;
    node_gen++;
    start_node(&solo, "solo");
    snprintf(arg, sizeof(arg), "solo=127.0.0.1:%d", solo.port);
    r = &rows[nr++];
    stage("2 local cache node");
    r->name = "2 local cache node";
    h_s3model_reset(model);
    r->cold = run_one("solo-scan-1", "cache", arg, "scan");
    s3_counts(&r->s3_gets, &r->s3_bytes);
    double c0 = nodes_cpu(&solo, 1);
    r->hot = run_one("solo-scan-2", "cache", arg, "scan");
    r->extra_cpu = nodes_cpu(&solo, 1) - c0;
    r->scattered = run_one("solo-scattered", "cache", arg, "scattered");
    r->has_cold = r->has_hot = r->has_scattered = true;
    qr[nq].name = "2 local cache node";
    run_queries(&qr[nq++], NULL, arg, true, true);
    stop_cluster(&solo, 1);

    /* 3 + 4: the distributed cache, first load then a second compute node */
    node_t nodes[N_NODES];
    start_cluster(nodes);
    char members[MAX_COMPUTE][512];
    h_proc *proxies[MAX_COMPUTE];
    for (int c = 0; c < 2; c++)
        proxies[c] = start_proxy(nodes, c, members[c], sizeof(members[c]));
    r = &rows[nr++];
    stage("3 and 4: distributed cache, first load and second compute node");
    r->name = "3 distributed, first load";
    h_s3model_reset(model);
    c0 = nodes_cpu(nodes, N_NODES);
    r->cold = run_one("dc1-scan", "cache", members[0], "scan");
    r->extra_cpu = nodes_cpu(nodes, N_NODES) - c0;
    s3_counts(&r->s3_gets, &r->s3_bytes);
    r->has_cold = true;
    row_t *first = r;
    r = &rows[nr++];
    r->name = "4 distributed, second node";
    h_s3model_reset(model);
    c0 = nodes_cpu(nodes, N_NODES);
    pid_t npids[N_NODES];
    r->hot = run_one_profiled("dc2-scan", "cache", members[1], "scan", npids,
                              node_pids(nodes, N_NODES, npids));
    r->extra_cpu = nodes_cpu(nodes, N_NODES) - c0;
    s3_counts(&r->s3_gets, &r->s3_bytes);
    r->scattered =
        run_one_profiled("dc2-scattered", "cache", members[1], "scattered", npids, N_NODES);
    r->has_hot = r->has_scattered = true;
    row_t *second = r;
    qrow_t *qfirst = &qr[nq++], *qsecond = &qr[nq++];
    qfirst->name = "3 distributed, first load";
    run_queries(qfirst, NULL, members[0], true, false);
    qsecond->name = "4 distributed, second node";
    run_queries(qsecond, NULL, members[1], false, true);
    for (int i = 0; i < nq; i++) {
        const qres_t *q[4] = {&qr[i].cold, &qr[i].hot, &qr[i].ccold, &qr[i].chot};
        for (int k = 0; k < 4; k++)
            if (q[k]->ok && strcmp(q[k]->rows, (k < 2 ? &qlocal->hot : &qlocal->chot)->rows) != 0) {
                fprintf(stderr,
                        "coldwarm: a query answered differently in '%s':\n%s\n"
                        "than from the local files:\n%s\n",
                        qr[i].name, q[k]->rows, (k < 2 ? &qlocal->hot : &qlocal->chot)->rows);
                die("the queries' results differ between set-ups");
            }
    }

    /* 5: six compute nodes at once, warm */
    stage("5: six compute nodes at once, warm then cold");
    for (int c = 2; c < MAX_COMPUTE; c++)
        proxies[c] = start_proxy(nodes, c, members[c], sizeof(members[c]));
    reader_t rd[MAX_COMPUTE];
    result_t six[MAX_COMPUTE];
    double six_nodes_cpu = nodes_cpu(nodes, N_NODES);
    double t0 = bench_now_s();
    for (int c = 0; c < MAX_COMPUTE; c++) {
        char name[32];
        snprintf(name, sizeof(name), "six-warm-%d", c);
        start_reader(&rd[c], name, "cache", members[c], "scan");
    }
    for (int c = 0; c < MAX_COMPUTE; c++)
        wait_reader(&rd[c], &six[c]);
    double six_warm_s = bench_now_s() - t0;
    six_nodes_cpu = nodes_cpu(nodes, N_NODES) - six_nodes_cpu;
    double six_cpu = six_nodes_cpu, six_bytes_read = 0;
    for (int c = 0; c < MAX_COMPUTE; c++) {
        six_cpu += six[c].cpu_s;
        six_bytes_read += (double)six[c].bytes;
    }
    for (int c = 0; c < MAX_COMPUTE; c++)
        h_proc_stop(proxies[c], 5000);
    stop_cluster(nodes, N_NODES);

    /* 5, cold: a fresh cluster, six at once */
    start_cluster(nodes);
    for (int c = 0; c < MAX_COMPUTE; c++)
        proxies[c] = start_proxy(nodes, c, members[c], sizeof(members[c]));
    h_s3model_reset(model);
    t0 = bench_now_s();
    for (int c = 0; c < MAX_COMPUTE; c++) {
        char name[32];
        snprintf(name, sizeof(name), "six-cold-%d", c);
        start_reader(&rd[c], name, "cache", members[c], "scan");
    }
    result_t six_cold[MAX_COMPUTE];
    for (int c = 0; c < MAX_COMPUTE; c++)
        wait_reader(&rd[c], &six_cold[c]);
    double six_cold_s = bench_now_s() - t0;
    uint64_t six_gets, six_bytes;
    s3_counts(&six_gets, &six_bytes);
    for (int c = 0; c < MAX_COMPUTE; c++)
        h_proc_stop(proxies[c], 5000);
    stop_cluster(nodes, N_NODES);

    char *tmd = NULL;
    if (with_table) {
        stage("the post's table");
        tmd = run_table(trows);
    }

    double agg_warm = 6.0 * (double)dataset_bytes / 1048576.0 / six_warm_s;
    double agg_cold = 6.0 * (double)dataset_bytes / 1048576.0 / six_cold_s;
    double one_warm = mib_s(&second->hot);
    double x_dc = mib_s(&second->hot) / mib_s(&first->cold);
    double y_six = agg_warm / (6.0 * one_warm);
    /* bytes per CPU-second of the whole system, readers + nodes: six compute
     * nodes at once against one (set-up 4's hot scan) */
    double one_cpu = second->hot.cpu_s + second->extra_cpu;
    double e_six = (six_bytes_read / six_cpu) / ((double)second->hot.bytes / one_cpu);
    double ngx_cpu = ngx_row->hot.cpu_s + ngx_row->extra_cpu;
    double c_hot = (one_cpu / (double)second->hot.bytes) / (ngx_cpu / (double)ngx_row->hot.bytes);
    double z_hot = mib_s(&second->hot) / mib_s(&rows[0].cold);
    double n_gets = (double)six_gets / (double)dataset_blocks;

    /* the table */
    char table[16384];
    size_t tl = 0;
    tl += (size_t)snprintf(table + tl, sizeof(table) - tl,
                           "| set-up | cold scan | hot scan | scattered 64 KiB p50 / p99 | S3 GETs "
                           "(MiB) in the cold scan | CPU-s per GiB, hot |\n"
                           "|---|---|---|---|---|---|\n");
    for (int i = 0; i < nr; i++) {
        row_t *w = &rows[i];
        char cold[64] = "-", hot[64] = "-", sc[96] = "-", s3c[64] = "-", cpu[32] = "-";
        if (w->has_cold)
            snprintf(cold, sizeof(cold), "%.2f s, %.0f MiB/s", w->cold.seconds, mib_s(&w->cold));
        if (w->has_hot)
            snprintf(hot, sizeof(hot), "%.2f s, %.0f MiB/s", w->hot.seconds, mib_s(&w->hot));
        if (w->has_scattered)
            snprintf(sc, sizeof(sc), "%.2f / %.2f ms (reader CPU %.0f us a read)", w->scattered.p50,
                     w->scattered.p99, w->scattered.cpu_s * 1e6 / scattered_reads);
        if (w->has_cold || i >= 2)
            snprintf(s3c, sizeof(s3c), "%" PRIu64 " (%.0f)", w->s3_gets,
                     (double)w->s3_bytes / 1048576.0);
        const result_t *h = w->has_hot ? &w->hot : &w->cold;
        if (h->bytes)
            snprintf(cpu, sizeof(cpu), "%.2f",
                     (h->cpu_s + w->extra_cpu) / ((double)h->bytes / (1u << 30)));
        tl += (size_t)snprintf(table + tl, sizeof(table) - tl, "| %s | %s | %s | %s | %s | %s |\n",
                               w->name, cold, hot, sc, s3c, cpu);
    }
    tl += (size_t)snprintf(
        table + tl, sizeof(table) - tl,
        "| 5 six compute nodes at once | %.2f s, %.0f MiB/s aggregate | %.2f s, "
        "%.0f MiB/s aggregate | - | %" PRIu64 " (%.0f) for %" PRIu64 " blocks | %.2f |\n",
        six_cold_s, agg_cold, six_warm_s, agg_warm, six_gets, (double)six_bytes / 1048576.0,
        dataset_blocks, six_cpu / (six_bytes_read / (1u << 30)));
    char qtable[8192];
    size_t ql = 0;
    ql += (size_t)snprintf(qtable + ql, sizeof(qtable) - ql,
                           "\nThe engine's queries (%lld rows of Parquet, %d threads, a new "
                           "`ringcache query` process each run, the same answer in every set-up): "
                           "the seed query (top 5 OwnerDisplayName by count) and a full-column "
                           "scan (`sum(length(Body)), count()`, on a second copy of the files so "
                           "that it starts cold too); S3 GETs include the one LIST:"
                           "\n\n| set-up | seed cold | seed hot | S3 GETs cold / hot | column "
                           "scan cold | column scan hot | CPU-s of the query processes, hot |"
                           "\n|---|---|---|---|---|---|---|\n",
                           posts_rows, threads);
    for (int i = 0; i < nq; i++) {
        char c1[48] = "-", c2[48] = "-", g[64], g1[24] = "-", g2[24] = "-", cpu[32] = "-";
        char s1[48] = "-", s2[48] = "-";
        if (qr[i].has_cold) {
            snprintf(c1, sizeof(c1), "%.3f s", qr[i].cold.seconds);
            snprintf(g1, sizeof(g1), "%" PRIu64, qr[i].cold.s3_gets);
            snprintf(s1, sizeof(s1), "%.3f s", qr[i].ccold.seconds);
        }
        if (qr[i].has_hot) {
            snprintf(c2, sizeof(c2), "%.3f s", qr[i].hot.seconds);
            snprintf(g2, sizeof(g2), "%" PRIu64, qr[i].hot.s3_gets);
            snprintf(s2, sizeof(s2), "%.3f s", qr[i].chot.seconds);
            snprintf(cpu, sizeof(cpu), "%.2f + %.2f", qr[i].hot.cpu_s, qr[i].chot.cpu_s);
        }
        snprintf(g, sizeof(g), "%s / %s", g1, g2);
        ql += (size_t)snprintf(qtable + ql, sizeof(qtable) - ql,
                               "| %s | %s | %s | %s | %s | %s | %s |\n", qr[i].name, c1, c2, g, s1,
                               s2, cpu);
    }
    double q_dc = qfirst->cold.seconds / qsecond->hot.seconds;
    double q_s3 = qr[0].hot.seconds / qsecond->hot.seconds;
    double q_local = qlocal->hot.seconds / qsecond->hot.seconds;
    printf("\ncold-versus-warm, scale %s: %d objects x %d MiB = %" PRIu64 " MiB, %d reader "
           "threads per compute node; S3 behind 30 ms / 100 MiB/s per connection; compute -> "
           "cache links %d us each way, capped at %.0f MiB/s per compute node (loopback ceiling "
           "%.0f MiB/s; one link through netproxy measured %.0f MiB/s with iperf3)%s\n\n%s",
           scale, files, file_mib, dataset_bytes >> 20, threads, latency_us, bw_mib, ceiling,
           link_mib,
           rows[2].has_cold ? "" : "; local-disk cold not measured (cannot drop the page cache)",
           table);
    printf("%s", qtable);

    if (tmd)
        printf("%s", tmd);

    /* files */
    mkdir(out_dir, 0755);
    char path[1200];
    snprintf(path, sizeof(path), "%s/coldwarm-%s.md", out_dir, scale);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "# cold versus warm, scale %s\n\n%s%s%s", scale, table, qtable, tmd ? tmd : "");
        fprintf(f,
                "\ncoldwarm-query: second_node_vs_first_load=%.2f second_node_vs_s3=%.2f "
                "second_node_vs_local=%.2f\n",
                q_dc, q_s3, q_local);
        fprintf(f,
                "\ncoldwarm: dc_second_node_vs_cold=%.2f six_nodes_aggregate_vs_one=%.2f "
                "hot_vs_direct_s3=%.2f s3_gets_six_cold_per_block=%.2f "
                "six_nodes_cpu_efficiency=%.2f hot_cpu_per_gib_vs_nginx=%.2f\n",
                x_dc, y_six, z_hot, n_gets, e_six, c_hot);
        fclose(f);
    }
    char dat[1200], gp[1200], png[1200];
    snprintf(dat, sizeof(dat), "%s/coldwarm-%s.dat", out_dir, scale);
    snprintf(gp, sizeof(gp), "%s/coldwarm-%s.gp", out_dir, scale);
    snprintf(png, sizeof(png), "%s/coldwarm-%s.png", out_dir, scale);
    f = fopen(dat, "w");
    if (f) {
        for (int i = 0; i < nr; i++)
            fprintf(f, "\"%s\" %.1f %.1f\n", rows[i].name,
                    rows[i].has_cold ? mib_s(&rows[i].cold) : 0,
                    rows[i].has_hot ? mib_s(&rows[i].hot) : 0);
        fprintf(f, "\"5 six nodes (aggregate)\" %.1f %.1f\n", agg_cold, agg_warm);
        fclose(f);
        f = fopen(gp, "w");
        fprintf(f,
                "set terminal png size 1100,500\nset output '%s'\n"
                "set title 'cold vs warm scan throughput (MiB/s), scale %s'\n"
                "set style data histograms\nset style histogram cluster gap 1\n"
                "set style fill solid 0.8\nset xtics rotate by -20\nset key top left\n"
                "set ylabel 'MiB/s (log scale)'\nset logscale y\nset yrange [1:*]\n"
                "plot '%s' using 2:xtic(1) title 'cold', '' using 3 title 'hot'\n",
                png, scale, dat);
        fclose(f);
        char cmd[2600];
        snprintf(cmd, sizeof(cmd), "gnuplot %s 2>/dev/null", gp);
        if (system(cmd) != 0)
            fprintf(stderr, "coldwarm: gnuplot failed or is missing: no PNG\n");
        remove(gp);
    }
    printf("\nwritten: %s, %s\n", path, png);
    printf("%s\n", BENCH_RATIO_CONVENTION);
    const char *tlast = tmd ? strstr(tmd, "coldwarm-table:") : NULL;
    if (with_table)
        printf("%s", tlast ? tlast
                           : "coldwarm-table: second_node_vs_first=na hot_server_vs_local=na "
                             "scattered_p50_ms_second_node=na six_servers_s3_gets_per_block=na\n");
    printf("coldwarm-query: second_node_vs_first_load=%.2f second_node_vs_s3=%.2f "
           "second_node_vs_local=%.2f\n",
           q_dc, q_s3, q_local);
    printf("coldwarm: dc_second_node_vs_cold=%.2f six_nodes_aggregate_vs_one=%.2f "
           "hot_vs_direct_s3=%.2f s3_gets_six_cold_per_block=%.2f six_nodes_cpu_efficiency=%.2f "
           "hot_cpu_per_gib_vs_nginx=%.2f\n",
           x_dc, y_six, z_hot, n_gets, e_six, c_hot);
    free(tmd);
    h_env_destroy(&env);
    return 0;
}
