/* SPDX-License-Identifier: Apache-2.0
 *
 * pagecache_bench: what the page cache costs on its hit path and what its
 * policies buy under a scan, measured side by side in one run.
 *
 *   1. Hit throughput: read 1 MiB pages through pc_fetch/memcpy/pc_release
 *      against a plain memcpy of the same bytes (the same page buffers) into
 *      the same destination. Passes alternate order; the figure is the median
 *      of per-repeat ratios.
 *   2. Latency of a 64 KiB hit (fetch, copy 64 KiB out of a 1 MiB page,
 *      release) with 1 and 2 threads, beside the same copies without the
 *      cache (memcpy alone: what this shared 2-core VM's scheduler adds);
 *      runs rotate order; the figure is the median of per-repeat p99s.
 *   3. Policies: the scan-resistance trace of tests/unit/pagecache (hot set
 *      25% of capacity, one-shot scan of 10x capacity; the same code, so the
 *      same figures the test asserts), at several scan intensities and seeds;
 *      Zipf hit ratios; and the cost of a bare hit (no copy) per policy.
 *
 * Usage: pagecache_bench [--quick]. The last line is
 *   pagecache: hit_vs_memcpy=<x> hot_hits_under_scan=<h>
 *              lru_hot_hits_under_scan=<l> p99_64k_hit_us=<p>
 * (one line), where <h> is the default policy's figure, <l> LRU's, and <p>
 * the worse of the 1- and 2-thread p99s.
 */
#include "pagecache.h"
#include "pc_support.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../bench.h"

#define MIB (1024u * 1024u)

static volatile uint64_t sink;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "pagecache_bench: %s failed: %s\n", what, strerror(-rc));
    exit(1);
}

/* A cache of npages 1 MiB pages, every page filled with its pattern. */
static pc_cache *filled_cache(size_t npages, pc_policy policy)
{
    pc_cache *c = NULL;
    pc_config cfg = {.capacity_bytes = npages * MIB, .page_size = MIB, .policy = policy};
    int rc = pc_create(&c, &cfg);
    if (rc < 0)
        die("pc_create", rc);
    for (size_t i = 0; i < npages; i++) {
        pc_key k = {42, i};
        pc_page *p = NULL;
        rc = pc_fetch(c, &k, 0, &p);
        if (rc != PC_FILL)
            die("initial fill", rc < 0 ? rc : -EPROTO);
        pc_pattern_fill(pc_page_data(p), MIB, &k);
        pc_fill_complete(c, p, MIB);
        pc_release(c, &p);
    }
    return c;
}

/* ---- 1. hit throughput vs memcpy ----------------------------------------- */

struct thr_result {
    double ratio, cache_gibs, memcpy_gibs;
};

static struct thr_result bench_hit_vs_memcpy(unsigned reps)
{
    enum { NPAGES = 64 }; /* 64 MiB: well past this machine's caches */
    pc_cache *c = filled_cache(NPAGES, PC_POLICY_DEFAULT);
    const void *src[NPAGES];
    pc_page *held[NPAGES];
    for (size_t i = 0; i < NPAGES; i++) {
        if (pc_fetch(c, &(pc_key){42, i}, 0, &held[i]) != PC_HIT)
            die("pin for baseline", -EPROTO);
        src[i] = pc_page_data(held[i]);
    }
    unsigned char *dst = aligned_alloc(4096, MIB);
    if (!dst)
        die("aligned_alloc", -ENOMEM);
    memset(dst, 0, MIB);
    double *ratio = calloc(reps, sizeof(double));
    double *gc = calloc(reps, sizeof(double));
    double *gm = calloc(reps, sizeof(double));
    for (unsigned r = 0; r < reps + 1; r++) { /* repeat 0 warms up */
        uint64_t t_cache = 0, t_memcpy = 0;
        for (int half = 0; half < 2; half++) {
            bool cache_now = (half == 0) == (r % 2 == 0);
            uint64_t t0 = now_ns();
            if (cache_now) {
                for (size_t i = 0; i < NPAGES; i++) {
                    pc_page *p = NULL;
                    if (pc_fetch(c, &(pc_key){42, i}, 0, &p) != PC_HIT)
                        die("hit", -EPROTO);
                    memcpy(dst, pc_page_data(p), pc_page_len(p));
                    pc_release(c, &p);
                    sink += dst[i];
                }
                t_cache = now_ns() - t0;
            } else {
                for (size_t i = 0; i < NPAGES; i++) {
                    memcpy(dst, src[i], MIB);
                    sink += dst[i];
                }
                t_memcpy = now_ns() - t0;
            }
        }
        if (r == 0)
            continue;
        ratio[r - 1] = (double)t_memcpy / (double)t_cache;
        gc[r - 1] = (double)NPAGES / 1024.0 / ((double)t_cache / 1e9);
        gm[r - 1] = (double)NPAGES / 1024.0 / ((double)t_memcpy / 1e9);
    }
    struct thr_result res = {median(ratio, reps), median(gc, reps), median(gm, reps)};
    for (size_t i = 0; i < NPAGES; i++)
        pc_release(c, &held[i]);
    free(ratio);
    free(gc);
    free(gm);
    free(dst);
    pc_destroy(&c);
    return res;
}

/* ---- 2. 64 KiB hit latency ----------------------------------------------- */

enum { LAT_PAGES = 64, LAT_READ = 64 * 1024 };

struct lat_thread {
    pthread_t tid;
    pc_cache *cache;
    const void *const *src; /* non-NULL: baseline, copy from src[page] */
    pthread_barrier_t *start;
    uint64_t seed;
    size_t ops;
    uint64_t *ns; /* ops samples */
    int err;
};

static void *lat_main(void *arg)
{
    struct lat_thread *t = arg;
    unsigned char *dst = aligned_alloc(4096, LAT_READ);
    if (!dst) {
        t->err = -ENOMEM;
        return NULL;
    }
    memset(dst, 0, LAT_READ);
    uint64_t rng = t->seed;
    pthread_barrier_wait(t->start);
    for (size_t i = 0; i < t->ops; i++) {
        uint64_t r = pc_rand_next(&rng);
        pc_key k = {42, r % LAT_PAGES};
        size_t off = ((r >> 32) % (MIB / LAT_READ)) * LAT_READ;
        uint64_t t0 = now_ns();
        if (t->src) {
            memcpy(dst, (const unsigned char *)t->src[k.lo] + off, LAT_READ);
        } else {
            pc_page *p = NULL;
            if (pc_fetch(t->cache, &k, 0, &p) != PC_HIT) {
                t->err = -EPROTO;
                break;
            }
            memcpy(dst, (const unsigned char *)pc_page_data(p) + off, LAT_READ);
            pc_release(t->cache, &p);
        }
        t->ns[i] = now_ns() - t0;
        sink += dst[r & (LAT_READ - 1)];
    }
    free(dst);
    return NULL;
}

/* p50 and p99 in microseconds of one run with nthreads threads; with src,
 * the same copies without the cache. */
static void lat_run(pc_cache *c, const void *const *src, unsigned nthreads, size_t ops,
                    uint64_t seed, double *p50, double *p99)
{
    struct lat_thread t[2];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, nthreads);
    uint64_t *all = malloc(sizeof(uint64_t) * ops * nthreads);
    if (!all)
        die("malloc", -ENOMEM);
    for (unsigned i = 0; i < nthreads; i++) {
        t[i] = (struct lat_thread){.cache = c,
                                   .src = src,
                                   .start = &start,
                                   .seed = seed + i * 7919,
                                   .ops = ops,
                                   .ns = all + i * ops};
        pthread_create(&t[i].tid, NULL, lat_main, &t[i]);
    }
    for (unsigned i = 0; i < nthreads; i++) {
        pthread_join(t[i].tid, NULL);
        if (t[i].err)
            die("latency run", t[i].err);
    }
    pthread_barrier_destroy(&start);
    size_t n = ops * nthreads;
    qsort(all, n, sizeof(*all), cmp_u64);
    *p50 = (double)all[n / 2] / 1000.0;
    *p99 = (double)all[(size_t)((double)n * 0.99)] / 1000.0;
    free(all);
}

struct lat_result {
    /* [0]: 1 thread, [1]: 2 threads; base: memcpy alone, same reads */
    double p50[2], p99[2], base_p50[2], base_p99[2];
};

static struct lat_result bench_latency(unsigned reps, size_t ops)
{
    pc_cache *c = filled_cache(LAT_PAGES, PC_POLICY_DEFAULT);
    const void *src[LAT_PAGES];
    pc_page *held[LAT_PAGES];
    for (size_t i = 0; i < LAT_PAGES; i++) {
        if (pc_fetch(c, &(pc_key){42, i}, 0, &held[i]) != PC_HIT)
            die("pin for baseline", -EPROTO);
        src[i] = pc_page_data(held[i]);
    }
    /* v[mode][threads-1][rep], mode 0 cache, 1 baseline */
    double *p50[2][2], *p99[2][2];
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < 2; k++) {
            p50[m][k] = calloc(reps, sizeof(double));
            p99[m][k] = calloc(reps, sizeof(double));
        }
    double w50, w99;
    lat_run(c, NULL, 1, ops / 4, 1, &w50, &w99); /* warm-up */
    for (unsigned r = 0; r < reps; r++) {
        /* Four runs per repeat, rotating which goes first. */
        for (unsigned j = 0; j < 4; j++) {
            unsigned x = (j + r) % 4, m = x / 2, k = x % 2;
            lat_run(c, m ? src : NULL, k + 1, ops, 1000 + r, &p50[m][k][r], &p99[m][k][r]);
        }
    }
    struct lat_result res;
    for (int k = 0; k < 2; k++) {
        res.p50[k] = median(p50[0][k], reps);
        res.p99[k] = median(p99[0][k], reps);
        res.base_p50[k] = median(p50[1][k], reps);
        res.base_p99[k] = median(p99[1][k], reps);
    }
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < 2; k++) {
            free(p50[m][k]);
            free(p99[m][k]);
        }
    for (size_t i = 0; i < LAT_PAGES; i++)
        pc_release(c, &held[i]);
    pc_destroy(&c);
    return res;
}

/* ---- 3. policies --------------------------------------------------------- */

static double scan_figure(pc_policy policy, unsigned scan_per_hot, unsigned scan_flags,
                          unsigned seeds)
{
    double v[16];
    for (unsigned s = 0; s < seeds && s < 16; s++) {
        struct pc_trace_config cfg;
        pc_trace_default(&cfg, policy);
        cfg.scan_per_hot = scan_per_hot;
        cfg.scan_flags = scan_flags;
        cfg.seed = 0x5eed + s;
        struct pc_trace_result res;
        int rc = pc_trace_hot_under_scan(&cfg, &res);
        if (rc < 0)
            die("trace", rc);
        v[s] = res.hot_hit_ratio;
    }
    return median(v, seeds < 16 ? seeds : 16);
}

static double zipf_figure(pc_policy policy, double alpha, size_t reads)
{
    double ratio;
    int rc = pc_trace_zipf(policy, 4096, 40960, alpha, reads, 77, &ratio);
    if (rc < 0)
        die("zipf trace", rc);
    return ratio;
}

struct bare_thread {
    pthread_t tid;
    pc_cache *cache;
    const uint64_t *keys; /* resident keys' lo halves */
    size_t ops, nkeys;
    uint64_t seed;
    int err;
};

static void *bare_main(void *arg)
{
    struct bare_thread *t = arg;
    uint64_t rng = t->seed;
    for (size_t i = 0; i < t->ops; i++) {
        pc_page *p = NULL;
        pc_key k = {5, t->keys[pc_rand_next(&rng) % t->nkeys]};
        if (pc_fetch(t->cache, &k, 0, &p) != PC_HIT) {
            t->err = -EPROTO;
            break;
        }
        sink += *(const unsigned char *)pc_page_data(p);
        pc_release(t->cache, &p);
    }
    return NULL;
}

/* Million bare hits per second (fetch, read a byte, release), 2 threads, over
 * the pages that stay resident after 4096 fills of a 4096-page cache of 64 B
 * pages (shards are not perfectly even, so a few keys were evicted). */
static double bare_hits(pc_policy policy, size_t ops)
{
    enum { NP = 4096 };
    pc_cache *c = NULL;
    pc_config cfg = {.capacity_bytes = NP * 64, .page_size = 64, .policy = policy};
    int rc = pc_create(&c, &cfg);
    if (rc < 0)
        die("pc_create", rc);
    for (size_t i = 0; i < NP; i++) {
        pc_page *p = NULL;
        if (pc_fetch(c, &(pc_key){5, i}, 0, &p) != PC_FILL)
            die("fill", -EPROTO);
        pc_fill_complete(c, p, 64);
        pc_release(c, &p);
    }
    static uint64_t keys[NP];
    size_t nkeys = 0;
    for (size_t i = 0; i < NP; i++)
        if (pc_contains(c, &(pc_key){5, i}))
            keys[nkeys++] = i;
    struct bare_thread t[2];
    uint64_t t0 = now_ns();
    for (int i = 0; i < 2; i++) {
        t[i] = (struct bare_thread){
            .cache = c, .keys = keys, .ops = ops, .nkeys = nkeys, .seed = 99 + (uint64_t)i};
        pthread_create(&t[i].tid, NULL, bare_main, &t[i]);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i].tid, NULL);
        if (t[i].err)
            die("bare hits", t[i].err);
    }
    double mops = (double)(2 * ops) / ((double)(now_ns() - t0) / 1e3);
    pc_destroy(&c);
    return mops;
}

int main(int argc, char **argv)
{
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    if (argc > 1 && !quick) {
        fprintf(stderr, "usage: pagecache_bench [--quick]\n");
        return 2;
    }
    unsigned reps = quick ? 5 : 15;
    size_t lat_ops = quick ? 5000 : 20000;
    unsigned seeds = quick ? 1 : 3;
    const char *def = pc_policy_name(PC_POLICY_DEFAULT);

    printf("pagecache_bench: %u repeats, medians; default policy %s\n\n", reps, def);

    struct thr_result thr = bench_hit_vs_memcpy(reps);
    printf("## hit path, 1 MiB pages (64 MiB working set)\n\n");
    printf("| what | GiB/s |\n|---|---|\n");
    printf("| fetch + memcpy + release | %.2f |\n", thr.cache_gibs);
    printf("| memcpy of the same bytes | %.2f |\n", thr.memcpy_gibs);
    printf("| ratio (median of per-repeat ratios) | %.3f |\n\n", thr.ratio);

    struct lat_result lat = bench_latency(quick ? 3 : 5, lat_ops);
    printf("## 64 KiB hit latency (fetch + 64 KiB copy + release), us\n\n");
    printf(
        "| threads | p50 | p99 | memcpy alone p50 | memcpy alone p99 |\n|---|---|---|---|---|\n");
    for (int k = 0; k < 2; k++)
        printf("| %d | %.2f | %.2f | %.2f | %.2f |\n", k + 1, lat.p50[k], lat.p99[k],
               lat.base_p50[k], lat.base_p99[k]);
    printf("\n");

    printf("## scan resistance: hot hits while a one-shot scan of 10x capacity runs\n");
    printf("(hot set 25%% of 4096 pages read uniformly; median of %u seeds)\n\n", seeds);
    printf(
        "| scan reads per hot read | s3fifo | lru | lru, scan marked ONCE |\n|---|---|---|---|\n");
    const unsigned per_hot[] = {1, 4, 16};
    double h_def = 0, h_lru = 0;
    for (size_t i = 0; i < 3; i++) {
        double s = scan_figure(PC_POLICY_S3FIFO, per_hot[i], 0, seeds);
        double l = scan_figure(PC_POLICY_LRU, per_hot[i], 0, seeds);
        double lo = scan_figure(PC_POLICY_LRU, per_hot[i], PC_FETCH_ONCE, seeds);
        printf("| %u%s | %.4f | %.4f | %.4f |\n", per_hot[i],
               per_hot[i] == 4 ? " (acceptance)" : "", s, l, lo);
        if (per_hot[i] == 4) {
            h_def = scan_figure(PC_POLICY_DEFAULT, 4, 0, seeds);
            h_lru = l;
        }
    }
    size_t zreads = quick ? 200000 : 1000000;
    printf("\n## Zipf hit ratio (4096-page cache, 40960 keys, %zu reads)\n\n", zreads);
    printf("| alpha | s3fifo | lru |\n|---|---|---|\n");
    const double alphas[] = {0.7, 0.9, 1.1};
    for (size_t i = 0; i < 3; i++)
        printf("| %.1f | %.4f | %.4f |\n", alphas[i],
               zipf_figure(PC_POLICY_S3FIFO, alphas[i], zreads),
               zipf_figure(PC_POLICY_LRU, alphas[i], zreads));

    size_t bops = quick ? 200000 : 1000000;
    double bs[5], bl[5];
    unsigned breps = quick ? 3 : 5;
    for (unsigned r = 0; r < breps; r++) {
        if (r % 2) {
            bl[r] = bare_hits(PC_POLICY_LRU, bops);
            bs[r] = bare_hits(PC_POLICY_S3FIFO, bops);
        } else {
            bs[r] = bare_hits(PC_POLICY_S3FIFO, bops);
            bl[r] = bare_hits(PC_POLICY_LRU, bops);
        }
    }
    printf("\n## bare hits (fetch + release, 2 threads, 64 B pages), M/s\n\n");
    printf("| s3fifo | lru |\n|---|---|\n| %.2f | %.2f |\n\n", median(bs, breps),
           median(bl, breps));

    double p99 = lat.p99[0] > lat.p99[1] ? lat.p99[0] : lat.p99[1];
    printf("%s\n", BENCH_RATIO_CONVENTION);
    printf("pagecache: hit_vs_memcpy=%.2f hot_hits_under_scan=%.3f lru_hot_hits_under_scan=%.3f "
           "p99_64k_hit_us=%.1f\n",
           thr.ratio, h_def, h_lru, p99);
    return 0;
}
