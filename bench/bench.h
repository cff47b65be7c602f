/* SPDX-License-Identifier: Apache-2.0
 *
 * bench.h: what every benchmark prints above its one-line summary, so a reader of
 * any `NAME: a_vs_b=...` line knows which way is better. The convention itself is
 * written out in bench/README.md. Also the small helpers a bench's timing needs.
 */
#ifndef RINGCACHE_BENCH_H
#define RINGCACHE_BENCH_H

#define BENCH_RATIO_CONVENTION                                                                     \
    "(ratios: a_vs_b is ours over the peer's, measured side by side in this run; a speed "         \
    "(a bare name: throughput, or 1/time) above 1 is better, a cost (a name with p50, "            \
    "p99, cpu, mem, rss, overhead or a unit) below 1 is better)"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Seconds of CLOCK_MONOTONIC. */
static inline double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0..n), n >= 1 (v is sorted in place). */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The p-quantile (0 < p <= 1) of v[0..n), n >= 1, nearest rank (v is sorted
 * in place). */
static inline double bench_pct(double *v, size_t n, double p)
{
    qsort(v, n, sizeof *v, bench_cmp_double);
    double r = p * (double)n;
    size_t i = (size_t)r;
    if ((double)i < r)
        i++; /* the rank, ceil(p * n) */
    i = i ? i - 1 : 0;
    return v[i < n ? i : n - 1];
}

/* n offsets of 64 KiB ranges inside [0, span), span > 64 KiB: a xorshift
 * sequence from seed (non-zero), the same in every run. */
static inline void bench_range_offsets(uint64_t *offs, int n, uint64_t span, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        offs[i] = x % (span - 65536);
    }
}

/* Integer options "--NAME N": names[i] (without the dashes) fills vals[i],
 * which holds its default; usage is printed with each default. 0, or 2 (the
 * exit code) after an unknown option or a missing value. */
static inline int bench_int_opts(int argc, char **argv, const char *prog, int n,
                                 const char *const *names, int *vals)
{
    for (int i = 1; i < argc; i++) {
        int k = -1;
        for (int j = 0; j < n; j++)
            if (argv[i][0] == '-' && argv[i][1] == '-' && !strcmp(argv[i] + 2, names[j]))
                k = j;
        if (k < 0 || i + 1 >= argc) {
            fprintf(stderr, "usage: %s", prog);
            for (int j = 0; j < n; j++)
                fprintf(stderr, " [--%s N (%d)]", names[j], vals[j]);
            fprintf(stderr, "\n");
            return 2;
        }
        vals[k] = atoi(argv[++i]);
    }
    return 0;
}

/* A line "key: N kB" of /proc/self/status (VmRSS, VmHWM) in bytes; 0 when absent. */
static inline long long bench_status_bytes(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    char line[256];
    long long v = 0;
    size_t kl = strlen(key);
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, key, kl) == 0 && line[kl] == ':')
            v = atoll(line + kl + 1) * 1024;
    fclose(f);
    return v;
}

/* The figure of a "name value" line of the file at path (a peer's timings),
 * or -1 when the file or the line is missing. */
static inline double bench_file_figure(const char *path, const char *name)
{
    char line[256];
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    double v = -1;
    size_t nl = strlen(name);
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, name, nl) == 0 && line[nl] == ' ')
            v = atof(line + nl + 1);
    fclose(f);
    return v;
}

/* Resets VmHWM to the current RSS (/proc/self/clear_refs; old kernels keep
 * the peak since start). */
static inline void bench_hwm_reset(void)
{
    FILE *cr = fopen("/proc/self/clear_refs", "w");
    if (cr) {
        fputs("5", cr);
        fclose(cr);
    }
}

/* The scale name of a results file for `rows` rows ("4M", or the count). */
static inline void bench_scale_name(long long rows, char *buf, size_t cap)
{
    if (rows % 1000000 == 0)
        snprintf(buf, cap, "%lldM", rows / 1000000);
    else
        snprintf(buf, cap, "%lld", rows);
}

/* Runs gnuplot on the script gp (then removes it); says so on stderr, naming
 * the bench, when gnuplot fails or is missing. */
static inline void bench_gnuplot(const char *bench, const char *gp)
{
    char cmd[8800];
    snprintf(cmd, sizeof(cmd), "gnuplot '%.8000s' 2>/dev/null", gp);
    if (system(cmd) != 0)
        fprintf(stderr, "%s: gnuplot failed or is missing: no PNG\n", bench);
    remove(gp);
}

#endif /* RINGCACHE_BENCH_H */
