/* SPDX-License-Identifier: Apache-2.0
 *
 * s3api_bench.c: a cache node's S3 API (--s3-api-port) measured against its
 * peers in one run, on loopback, S3 (s3rver) behind the S3 model at its
 * defaults (30 ms first byte, 100 MiB/s per connection), the same client for
 * every side:
 *  - cold: Debian's awscli (`aws s3 cp`, its own parallelism: 8 MiB parts, 10
 *    in flight) copies a 512 MiB object through a fresh node vs straight from
 *    the S3 model, interleaved (direct, a fresh node, direct, ...), medians
 *    (and, for the table, once through a cold nginx slice cache);
 *  - warm: the same copy through the warm node vs through nginx's warm slice
 *    cache (Debian nginx, slice 1m, proxy_cache_lock on, in front of the same
 *    model), interleaved, medians; the servers' CPU-seconds per GiB over those
 *    copies (the node's process, nginx's process group);
 *  - 2000 random 64 KiB ranged GETs on one kept-alive connection (libcurl),
 *    both warm, interleaved in batches of 100: p50 and p99.
 * The object is put by the same awscli straight to s3rver. The node runs
 * without tenants (loopback only: no signature checks); awscli reads and
 * writes files in /dev/shm so the disk is not what is timed. The last line:
 *   s3api: warm_vs_nginx=<a> cold_vs_direct=<b> p99_vs_nginx=<c>
 *   cpu_per_gib_vs_nginx=<d>
 * Usage: s3api_bench [--size-mib N (512)] [--reps N (3): cold and warm copies of each side]
 *                    [--ranges N (2000)]
 *                    [--sendfile 0|1|2 (the node's --sendfile: 0 remote, the
 *                    default, 1 always, 2 never; awscli is on the node's host)]
 */
#include "harness.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../bench.h"
#include "../bench_curl.h"
#include "../bench_profile.h"

static const char *bucket = H_S3_DEFAULT_BUCKET;
static const char *okey = "bench/s3api.bin";
static h_env *env;
static char out_path[256], in_path[256];

static void die(const char *what)
{
    fprintf(stderr, "s3api_bench: %s\n", what);
    if (out_path[0])
        unlink(out_path);
    if (in_path[0])
        unlink(in_path);
    exit(1);
}

/* Seconds for `aws s3 cp` against endpoint: "get" the object into out_path
 * (dies unless it has size bytes), or "cp" the file `from` up to it. */
static double aws(const char *endpoint, const char *what, const char *from, uint64_t size)
{
    static h_run_result r;
    char obj[256];
    snprintf(obj, sizeof(obj), "s3://%s/%s", bucket, okey);
    bool get = !strcmp(what, "get");
    const char *argv[] = {
        "/usr/bin/aws",   "--endpoint-url",     endpoint, "s3", "cp", "--only-show-errors",
        get ? obj : from, get ? out_path : obj, NULL};
    const char *envs[] = {"AWS_ACCESS_KEY_ID=S3RVER",
                          "AWS_SECRET_ACCESS_KEY=S3RVER",
                          "AWS_DEFAULT_REGION=us-east-1",
                          "AWS_EC2_METADATA_DISABLED=true",
                          "AWS_PAGER=",
                          NULL};
    unlink(out_path);
    double t0 = bench_now_s();
    if (h_run(env, &r, argv, envs) < 0)
        die("cannot run /usr/bin/aws");
    double t = bench_now_s() - t0;
    struct stat st;
    if (r.status != 0 || (get && (stat(out_path, &st) != 0 || (uint64_t)st.st_size != size))) {
        fprintf(stderr, "s3api_bench: aws s3 cp via %s: status %d: %s\n", endpoint, r.status,
                r.err);
        die("the copy failed");
    }
    unlink(out_path);
    return t;
}

/* n 64 KiB ranged GETs of url at offs on one kept-alive connection; each
 * latency in ms into lat. */
static void random_gets(const char *url, const uint64_t *offs, int n, double *lat)
{
    CURL *e = curl_easy_init();
    curl_easy_setopt(e, CURLOPT_URL, url);
    for (int i = 0; i < n; i++)
        if ((lat[i] = bench_curl_range64k(e, offs[i], "s3api_bench")) < 0) {
            fprintf(stderr, "s3api_bench: the GET was of %s\n", url);
            die("a ranged GET failed");
        }
    curl_easy_cleanup(e);
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"size-mib", "reps", "ranges", "sendfile"};
    int opt[4] = {512, 3, 2000, 0};
    if (bench_int_opts(argc, argv, "s3api_bench", 4, names, opt))
        return 2;
    int size_mib = opt[0], reps = opt[1], n_ranges = opt[2];
    const char *sendfile_mode = opt[3] == 1 ? "always" : opt[3] == 2 ? "never" : "remote";
    if (size_mib < 16 || reps < 1 || n_ranges < 100)
        die("--size-mib >= 16, --reps >= 1, --ranges >= 100");
    if (access("/usr/bin/aws", X_OK) != 0)
        die("/usr/bin/aws (Debian's awscli) is not installed: apt-get install awscli");
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_ALL);
    if (h_env_create(&env, "s3api_bench") < 0)
        return 1;
    snprintf(out_path, sizeof(out_path), "/dev/shm/s3api_bench.%d.out", (int)getpid());
    h_s3 *s3;
    h_s3_opts so = {.version = 3};
    if (h_s3_start(env, &s3, &so) < 0)
        die(h_last_error());
    h_s3model *model;
    if (h_s3model_start(env, &model, h_s3_port(s3), 30, 100) < 0)
        die(h_last_error());

    /* the object, put straight into S3 by awscli too */
    uint64_t size = (uint64_t)size_mib << 20;
    snprintf(in_path, sizeof(in_path), "/dev/shm/s3api_bench.%d.in", (int)getpid());
    FILE *in = fopen(in_path, "w");
    if (!in)
        die("cannot write the object's file in /dev/shm");
    for (uint64_t i = 0; i < size; i += 8) {
        uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull;
        fwrite(&x, 8, 1, in);
    }
    if (fclose(in) != 0)
        die("cannot write the object's file in /dev/shm");
    fprintf(stderr, "uploading %d MiB ...\n", size_mib);
    aws(h_s3_endpoint(s3), "cp", in_path, 0);
    unlink(in_path);

    /* cold, interleaved: straight from the model, then through a fresh node
     * (one RAM tier over the object, the S3 API on a free port; the last one
     * stays for the warm copies), reps times; then nginx once */
    char ram[32];
    snprintf(ram, sizeof(ram), "%dMiB", size_mib + 256);
    const char *const s3api_flag[] = {"--s3-api-port", "0", "--sendfile", sendfile_mode, NULL};
    double *t_directs = calloc((size_t)reps, sizeof(double));
    double *t_colds = calloc((size_t)reps, sizeof(double));
    char path[256];
    snprintf(path, sizeof(path), "/%s/%s", bucket, okey);
    int64_t cold_gets = 0;
    h_proc *node = NULL;
    char ep_node[64];
    for (int r = 0; r < reps; r++) {
        t_directs[r] = aws(h_s3model_endpoint(model), "get", NULL, size);
        if (node && h_proc_stop(node, 15000) != 0)
            fprintf(stderr, "s3api_bench: the node did not exit cleanly (see its log)\n");
        char dir[PATH_MAX], name[32];
        snprintf(name, sizeof(name), "node-data-%d", r);
        h_env_path(env, dir, sizeof(dir), name);
        h_node_opts no = {.name = "node",
                          .id = "bench-0",
                          .dir = dir,
                          .s3_endpoint = h_s3model_endpoint(model),
                          .ssd = "2GiB",
                          .ram = ram,
                          .threads = 2,
                          .log_level = "warn",
                          .extra = s3api_flag};
        h_node hn;
        if (h_node_start(env, &hn, &no) < 0)
            die(h_last_error());
        node = hn.proc;
        snprintf(ep_node, sizeof(ep_node), "http://127.0.0.1:%d", hn.s3api_port);
        h_s3model_reset(model);
        t_colds[r] = aws(ep_node, "get", NULL, size);
        if (r == 0)
            cold_gets = h_s3model_count(model, "GET", path);
        fprintf(stderr,
                "cold %d: direct to S3 through the model %.2f s, through a fresh node %.2f s\n",
                r + 1, t_directs[r], t_colds[r]);
    }
    double t_direct = bench_pct(t_directs, (size_t)reps, 0.5);
    double t_cold = bench_pct(t_colds, (size_t)reps, 0.5);
    h_proc *ngx;
    int nport;
    if (h_nginx_start(env, &ngx, h_s3model_port(model), &nport) < 0)
        die("cannot start nginx (apt-get install nginx)");
    char ep_ngx[64];
    snprintf(ep_ngx, sizeof(ep_ngx), "http://127.0.0.1:%d", nport);
    double t_ngx_cold = aws(ep_ngx, "get", NULL, size);
    fprintf(stderr, "cold, through nginx: %.2f s\n", t_ngx_cold);

    /* warm, interleaved; the servers' CPU over the warm copies */
    double *t_ours = calloc((size_t)reps, sizeof(double));
    double *t_ng = calloc((size_t)reps, sizeof(double));
    double cpu_ours = 0, cpu_ng = 0;
    for (int r = 0; r < reps; r++) {
        /* RINGCACHE_BENCH_PERF=DIR: the node's first warm copy, perf-recorded */
        pid_t np = h_proc_pid(node);
        pid_t perf = r == 0 ? bench_perf_start("s3api-warm-node", &np, 1) : 0;
        double c0 = h_pid_cpu_s(h_proc_pid(node));
        t_ours[r] = aws(ep_node, "get", NULL, size);
        cpu_ours += h_pid_cpu_s(h_proc_pid(node)) - c0;
        bench_perf_stop(perf);
        c0 = h_pgrp_cpu_s(h_proc_pid(ngx));
        t_ng[r] = aws(ep_ngx, "get", NULL, size);
        cpu_ng += h_pgrp_cpu_s(h_proc_pid(ngx)) - c0;
        fprintf(stderr, "rep %d: warm through the node %.2f s, through nginx %.2f s\n", r + 1,
                t_ours[r], t_ng[r]);
    }
    double gib = (double)reps * (double)size / (1u << 30);
    double mib = (double)size / (1u << 20);
    double warm_ours = mib / bench_pct(t_ours, (size_t)reps, 0.5);
    double warm_ng = mib / bench_pct(t_ng, (size_t)reps, 0.5);

    /* random 64 KiB ranges, both warm, interleaved in batches of 100 */
    uint64_t *offs = malloc(sizeof(uint64_t) * (size_t)n_ranges);
    double *lo = malloc(sizeof(double) * (size_t)n_ranges);
    double *ln = malloc(sizeof(double) * (size_t)n_ranges);
    bench_range_offsets(offs, n_ranges, size, 0x853c49e6748fea9bull);
    char url_node[256], url_ngx[256];
    snprintf(url_node, sizeof(url_node), "%s/%s/%s", ep_node, bucket, okey);
    snprintf(url_ngx, sizeof(url_ngx), "%s/%s/%s", ep_ngx, bucket, okey);
    for (int b0 = 0; b0 < n_ranges; b0 += 100) {
        int k = n_ranges - b0 < 100 ? n_ranges - b0 : 100;
        random_gets(url_node, offs + b0, k, lo + b0);
        random_gets(url_ngx, offs + b0, k, ln + b0);
    }
    double p50_o = bench_pct(lo, (size_t)n_ranges, 0.5),
           p99_o = bench_pct(lo, (size_t)n_ranges, 0.99);
    double p50_n = bench_pct(ln, (size_t)n_ranges, 0.5),
           p99_n = bench_pct(ln, (size_t)n_ranges, 0.99);

    if (h_proc_stop(node, 15000) != 0)
        fprintf(stderr, "s3api_bench: the node did not exit cleanly (see its log)\n");
    h_proc_stop(ngx, 5000);

    printf("| measure | the node's S3 API | peer, same run | ratio |\n|---|---|---|---|\n");
    printf("| cold `aws s3 cp` of %d MiB, median of %d | %.2f s (%" PRId64 " S3 GETs) | direct "
           "to S3 through the model: %.2f s; nginx cold (once): %.2f s | %.2fx faster |\n",
           size_mib, reps, t_cold, cold_gets, t_direct, t_ngx_cold, t_direct / t_cold);
    printf("| warm `aws s3 cp`, median of %d | %.0f MiB/s | nginx slice cache: %.0f MiB/s | "
           "%.2f |\n",
           reps, warm_ours, warm_ng, warm_ours / warm_ng);
    /* CPU time comes in clock ticks: too small a run measures none for nginx */
    char cpu_ratio[32] = "na";
    if (cpu_ng > 0)
        snprintf(cpu_ratio, sizeof(cpu_ratio), "%.2f", cpu_ours / cpu_ng);
    else
        fprintf(stderr, "s3api_bench: nginx used no measurable CPU: cpu_per_gib_vs_nginx is na "
                        "(give a larger --size-mib)\n");
    printf("| server CPU-seconds per GiB, warm copies | %.3f | nginx: %.3f | %s |\n",
           cpu_ours / gib, cpu_ng / gib, cpu_ratio);
    printf("| %d random 64 KiB GETs, p50 / p99 | %.3f / %.3f ms | nginx: %.3f / %.3f ms | "
           "p99 %.2f |\n",
           n_ranges, p50_o, p99_o, p50_n, p99_n, p99_o / p99_n);
    printf("%s\n", BENCH_RATIO_CONVENTION);
    printf("s3api: warm_vs_nginx=%.2f cold_vs_direct=%.2f p99_vs_nginx=%.2f "
           "cpu_per_gib_vs_nginx=%s\n",
           warm_ours / warm_ng, t_direct / t_cold, p99_o / p99_n, cpu_ratio);
    free(offs);
    free(lo);
    free(ln);
    free(t_ours);
    free(t_ng);
    free(t_directs);
    free(t_colds);
    h_env_destroy(&env);
    curl_global_cleanup();
    return 0;
}
