/* SPDX-License-Identifier: Apache-2.0
 *
 * s3_bench.c: measures the S3 client against peers in the same run, on loopback:
 *  1. GET of one large object (default 512 MiB) through the S3 model at its
 *     defaults (30 ms first byte, 100 MiB/s per connection): parallel ranged
 *     requests vs one stream, interleaved, median of the repetitions.
 *  2. 2000 random 64 KiB ranged GETs on kept-alive connections straight to
 *     s3rver, in interleaved batches with the curl tool doing the same ranges
 *     to the same server: p50 and p99 of each, and their ratios.
 *  3. The S3 model's own ceiling and overhead (bench/s3model/s3model_bench).
 * The last line is the summary the foundation issue asks for:
 *   s3: parallel_vs_single=<x> p50_vs_curl=<y> p99_vs_curl=<z> model_ceiling_mib_s=<m>
 * Usage: s3_bench [--size-mib N] [--reps N] [--ranges N] [--parallel N]
 * Needs $RINGCACHE_BUILD_DIR and the npm tools (see scripts/bench-s3.sh).
 */
#include "harness.h"
#include "s3.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../bench.h"
#include "../bench_s3.h"

static const char *bucket = H_S3_DEFAULT_BUCKET;

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void fill(unsigned char *p, size_t n, uint64_t seed)
{
    uint64_t x = seed | 1;
    for (size_t i = 0; i < n; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t k = n - i < 8 ? n - i : 8;
        memcpy(p + i, &x, k);
    }
}

/* ---- 1: parallel vs single stream through the model --------------------- */

static double timed_get(s3_sync *s, const char *key, uint64_t size, int parallel,
                        unsigned char *buf)
{
    s3_error err;
    s3_sync_get_args ga = {.bucket = bucket,
                           .key = key,
                           .fd = -1,
                           .buf = buf,
                           .cap = size,
                           .parallel = parallel,
                           .part_size = 8u << 20};
    int64_t t0 = now_us();
    int64_t n = s3_sync_get(s, &ga, &err);
    int64_t t1 = now_us();
    if (n != (int64_t)size) {
        fprintf(stderr, "s3_bench: GET failed: %s\n", err.message);
        exit(1);
    }
    return (double)(t1 - t0) / 1e6;
}

/* ---- 2: 64 KiB ranges, ours vs curl ------------------------------------- */

typedef struct {
    int done;
    s3_error err;
} wait_t;

static void get_cb(const s3_error *err, const s3_get_result *res, void *arg)
{
    (void)res;
    wait_t *w = arg;
    w->err = *err;
    w->done = 1;
}

/* One batch of curl: a config file with one URL + range per request, all on one
 * kept-alive connection (curl reuses it across --next groups); time_total of
 * each transfer printed by -w. */
static int curl_batch(h_env *env, const char *endpoint, const char *key, const uint64_t *offs,
                      int n, double *lat_ms)
{
    char cfgp[4096], outp[4096];
    h_env_path(env, cfgp, sizeof(cfgp), "curl.cfg");
    h_env_path(env, outp, sizeof(outp), "curl.out");
    FILE *f = fopen(cfgp, "w");
    if (!f)
        return -errno;
    for (int i = 0; i < n; i++) {
        if (i)
            fprintf(f, "next\n");
        fprintf(f,
                "url = \"%s/%s/%s\"\nrange = \"%llu-%llu\"\noutput = \"/dev/null\"\n"
                "silent\nwrite-out = \"%%{time_total}\\n\"\n",
                endpoint, bucket, key, (unsigned long long)offs[i],
                (unsigned long long)(offs[i] + 65535));
    }
    fclose(f);
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1);
        execlp("curl", "curl", "-K", cfgp, (char *)NULL);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return -EIO;
    f = fopen(outp, "r");
    int k = 0;
    double t;
    while (k < n && f && fscanf(f, "%lf", &t) == 1)
        lat_ms[k++] = t * 1000.0;
    if (f)
        fclose(f);
    return k == n ? 0 : -EIO;
}

int main(int argc, char **argv)
{
    int size_mib = 512, reps = 3, n_ranges = 2000, parallel = 16;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--size-mib") && i + 1 < argc)
            size_mib = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ranges") && i + 1 < argc)
            n_ranges = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--parallel") && i + 1 < argc)
            parallel = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: s3_bench [--size-mib N (512)] [--reps N (3)] "
                            "[--ranges N (2000)] [--parallel N (16)]\n");
            return 2;
        }
    }
    if (size_mib < 1 || reps < 1 || n_ranges < 100 || parallel < 2) {
        fprintf(stderr, "s3_bench: --size-mib >= 1, --reps >= 1, --ranges >= 100, "
                        "--parallel >= 2\n");
        return 2;
    }

    h_env *env;
    if (h_env_create(&env, "s3_bench") < 0)
        return 1;
    h_s3 *s3;
    h_s3_opts o = {.version = 3};
    int rc = h_s3_start(env, &s3, &o);
    if (rc < 0) {
        fprintf(stderr, "s3_bench: cannot start s3rver: %s\n", h_last_error());
        return 1;
    }
    h_s3model *model;
    rc = h_s3model_start(env, &model, h_s3_port(s3), 30, 100);
    if (rc < 0) {
        fprintf(stderr, "s3_bench: cannot start the S3 model: %s\n", h_last_error());
        return 1;
    }

    s3_config direct_cfg, model_cfg;
    bench_s3_config(&direct_cfg, h_s3_endpoint(s3));
    bench_s3_config(&model_cfg, h_s3model_endpoint(model));
    s3_sync *direct, *via;
    if (s3_sync_create(&direct, &direct_cfg) < 0 || s3_sync_create(&via, &model_cfg) < 0)
        return 1;

    /* the object */
    uint64_t size = (uint64_t)size_mib << 20;
    unsigned char *data = malloc(size), *buf = malloc(size);
    if (!data || !buf) {
        fprintf(stderr, "s3_bench: cannot allocate 2 x %d MiB\n", size_mib);
        return 1;
    }
    fill(data, size, 1234);
    s3_error err;
    s3_sync_put_args pa = {.bucket = bucket,
                           .key = "bench/big.bin",
                           .fd = -1,
                           .data = data,
                           .size = size,
                           .part_size = 16u << 20,
                           .parallel = 4};
    fprintf(stderr, "uploading %d MiB ...\n", size_mib);
    if (s3_sync_put(direct, &pa, NULL, &err) < 0) {
        fprintf(stderr, "s3_bench: upload failed: %s\n", err.message);
        return 1;
    }

    /* 1: interleaved single / parallel through the model */
    double *t_single = calloc((size_t)reps, sizeof(double));
    double *t_par = calloc((size_t)reps, sizeof(double));
    for (int r = 0; r < reps; r++) {
        t_single[r] = timed_get(via, "bench/big.bin", size, 1, buf);
        if (memcmp(buf, data, size) != 0) {
            fprintf(stderr, "s3_bench: single-stream GET returned wrong bytes\n");
            return 1;
        }
        t_par[r] = timed_get(via, "bench/big.bin", size, parallel, buf);
        if (memcmp(buf, data, size) != 0) {
            fprintf(stderr, "s3_bench: parallel GET returned wrong bytes\n");
            return 1;
        }
        fprintf(stderr, "rep %d: single %.2f s (%.0f MiB/s), parallel x%d %.2f s (%.0f MiB/s)\n",
                r + 1, t_single[r], size_mib / t_single[r], parallel, t_par[r],
                size_mib / t_par[r]);
    }
    double med_single = bench_pct(t_single, (size_t)reps, 0.5);
    double med_par = bench_pct(t_par, (size_t)reps, 0.5);

    /* 2: 64 KiB random ranges, ours vs curl, on the same server (direct s3rver),
     * over the first 64 MiB of the object (all of it when smaller) */
    const uint64_t range_obj = size < (64u << 20) ? size : 64u << 20;
    pa.key = "bench/ranges.bin";
    pa.size = range_obj;
    if (s3_sync_put(direct, &pa, NULL, &err) < 0) {
        fprintf(stderr, "s3_bench: upload failed: %s\n", err.message);
        return 1;
    }
    uint64_t *offs = malloc(sizeof(uint64_t) * (size_t)n_ranges);
    double *ours = malloc(sizeof(double) * (size_t)n_ranges);
    double *theirs = malloc(sizeof(double) * (size_t)n_ranges);
    bench_range_offsets(offs, n_ranges, range_obj, 88172645463325252ull);
    struct event_base *base = event_base_new();
    s3_client *c;
    if (s3_client_create(&c, &direct_cfg, base) < 0)
        return 1;
    const int batch = 100;
    unsigned char *rb = malloc(65536);
    for (int b0 = 0; b0 < n_ranges; b0 += batch) {
        int n = n_ranges - b0 < batch ? n_ranges - b0 : batch;
        for (int i = b0; i < b0 + n; i++) {
            wait_t w = {0};
            s3_get_args ga = {.bucket = bucket,
                              .key = "bench/ranges.bin",
                              .offset = offs[i],
                              .length = 65536,
                              .buf = rb,
                              .cap = 65536};
            int64_t t0 = now_us();
            if (s3_get(c, &ga, get_cb, &w) < 0)
                return 1;
            while (!w.done)
                event_base_loop(base, EVLOOP_ONCE);
            ours[i] = (double)(now_us() - t0) / 1000.0;
            if (w.err.code || memcmp(rb, data + offs[i], 65536) != 0) {
                fprintf(stderr, "s3_bench: range GET failed or wrong: %s\n", w.err.message);
                return 1;
            }
        }
        if (curl_batch(env, h_s3_endpoint(s3), "bench/ranges.bin", offs + b0, n, theirs + b0) < 0) {
            fprintf(stderr, "s3_bench: the curl tool failed (is curl installed?)\n");
            return 1;
        }
    }
    s3_client_destroy(&c);
    event_base_free(base);
    double o50 = bench_pct(ours, (size_t)n_ranges, 0.5),
           o99 = bench_pct(ours, (size_t)n_ranges, 0.99);
    double c50 = bench_pct(theirs, (size_t)n_ranges, 0.5),
           c99 = bench_pct(theirs, (size_t)n_ranges, 0.99);

    s3_sync_destroy(&direct);
    s3_sync_destroy(&via);
    h_proc_stop(h_s3model_proc(model), 5000);
    h_proc_stop(h_s3_proc(s3), 5000);
    h_env_destroy(&env);

    /* 3: the model's ceiling, from its own bench (run after ours: no overlap) */
    double ceiling = -1, overhead = -1;
    char mb[4096];
    if (h_build_path(mb, sizeof(mb), "bench/s3model/s3model_bench") == 0) {
        char cmd[4200];
        snprintf(cmd, sizeof(cmd), "%s 2>&1", mb);
        FILE *p = popen(cmd, "r");
        char line[1024];
        while (p && fgets(line, sizeof(line), p)) {
            fputs(line, stdout);
            const char *k = strstr(line, "s3model: ");
            if (k) {
                const char *a = strstr(k, "ceiling_mib_s=");
                const char *b = strstr(k, "overhead_vs_direct=");
                if (a)
                    ceiling = atof(a + 14);
                if (b)
                    overhead = atof(b + 19);
            }
        }
        if (p)
            pclose(p);
    }

    printf("\n| measure | ours | peer | ratio |\n|---|---|---|---|\n");
    printf("| GET %d MiB via S3 model (30 ms, 100 MiB/s/conn), median of %d | parallel x%d: "
           "%.2f s (%.0f MiB/s) | single stream: %.2f s (%.0f MiB/s) | %.2fx |\n",
           size_mib, reps, parallel, med_par, size_mib / med_par, med_single, size_mib / med_single,
           med_single / med_par);
    printf(
        "| 64 KiB range GET p50, %d requests, direct s3rver | %.2f ms | curl %.2f ms | %.2fx |\n",
        n_ranges, o50, c50, o50 / c50);
    printf("| 64 KiB range GET p99 | %.2f ms | curl %.2f ms | %.2fx |\n", o99, c99, o99 / c99);
    printf("| S3 model ceiling (no delay, no cap) | %.0f MiB/s | | overhead vs direct s3rver "
           "%.2fx |\n",
           ceiling, overhead);
    printf("%s\n", BENCH_RATIO_CONVENTION);
    printf("s3: parallel_vs_single=%.2f p50_vs_curl=%.2f p99_vs_curl=%.2f "
           "model_ceiling_mib_s=%.0f\n",
           med_single / med_par, o50 / c50, o99 / c99, ceiling);
    free(data);
    free(buf);
    free(rb);
    free(offs);
    free(ours);
    free(theirs);
    free(t_single);
    free(t_par);
    return 0;
}
