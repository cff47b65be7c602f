/* SPDX-License-Identifier: Apache-2.0
 *
 * engine_bench.c: the scan engine (ingest/exec/eng.h) against DuckDB, in one run,
 * on the same files and threads. bench_gen.mjs writes a Stack-Overflow-shaped
 * dataset (default 20M rows in four Parquet files, two snappy and two zstd,
 * about 1 GiB) into a temp folder and times DuckDB; this program then runs
 * the same queries in-process (median of --runs, output format Null):
 *
 *   seed    SELECT OwnerDisplayName, count() AS num_posts FROM ... WHERE
 *           OwnerDisplayName NOT IN ('', 'anon') GROUP BY OwnerDisplayName
 *           ORDER BY num_posts DESC LIMIT 5        (1 and 2 threads)
 *   sum     SELECT sum(Score), count() FROM ...    (2 threads)
 *   pruned  a 200k-row Id range of the sorted Id column (row groups pruned)
 *   memory  the seed at 2 threads: peak RSS minus RSS after start-up, each
 *           side measured first thing after its start-up (VmHWM reset through
 *           /proc/self/clear_refs)
 *   cached  the seed (2 threads) from s3() through three warm ringcached
 *           nodes with an empty page cache (a fresh client per run), against
 *           the same query on the local files at the same thread count, the
 *           two interleaved run by run (so both medians see the same machine
 *           load): cached_vs_local = local seconds / cached seconds
 *
 *   engine_bench [--rows N] [--runs R] [--no-cache] [--data DIR]
 *
 * --data DIR keeps the dataset and DuckDB's timings in DIR (created when
 * missing) and reuses them when DIR/duckdb.txt exists, so that builds can be
 * compared side by side without regenerating 1 GiB (pass the same --rows);
 * the ratios then compare against DuckDB's timings of the run that wrote DIR.
 *
 * The last line is
 *   engine: seed_1t_vs_duckdb=<a> seed_2t_vs_duckdb=<b> mem_vs_duckdb=<c>
 *           sum_vs_duckdb=<d> pruned_vs_duckdb=<e> cached_vs_local=<f>
 * (one line; speed ratios above 1 mean faster than DuckDB, memory below 1 means
 * less; `na` when a part could not run, with the reason on stderr). The temp
 * folder is removed at the end (DIR of --data is kept).
 */
#include "eng.h"
#include "harness.h"
#include "s3.h"

#include "rs_rc.h"
#include "ringcache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "engine_bench_util.h"
#include "../bench_posts.h"
#include "../bench_s3.h"

static h_env *env;
static char dir[4096];
static int runs = 3;

static _Noreturn void die(const char *msg)
{
    fprintf(stderr, "engine_bench: %s\n", msg);
    h_env_destroy(&env);
    exit(1);
}

static double run_query(const eng_ctx *base, const char *sql, int threads, uint64_t *rows)
{
    double t = eb_run(base, sql, threads, rows);
    if (t < 0)
        die("a benchmark query failed");
    return t;
}

static double median(const eng_ctx *ctx, const char *sql, int threads)
{
    double t[16];
    int n = runs > 16 ? 16 : runs;
    for (int i = 0; i < n; i++)
        t[i] = run_query(ctx, sql, threads, NULL);
    qsort(t, (size_t)n, sizeof(double), bench_cmp_double);
    return t[n / 2];
}

static double duck_value(const char *name)
{
    double v = eb_duck_value(dir, name);
    if (v < 0)
        die("bench_gen.mjs wrote no duckdb.txt, or it lacks a measurement");
    return v;
}

/* ---- the cached path: s3rver + three ringcached nodes ---- */

static double cached_seed(const eng_ctx *local, const char *seed_local, const char *seed_s3)
{
    char bin[1024];
    if (h_build_path(bin, sizeof(bin), H_RINGCACHED) < 0 || access(bin, X_OK) != 0) {
        fprintf(stderr, "engine_bench: cached_vs_local=na: ringcached is not built (build the "
                        "ringcached target)\n");
        return -1;
    }
    h_s3 *s3;
    if (h_s3_start(env, &s3, NULL) < 0) {
        fprintf(stderr, "engine_bench: cached_vs_local=na: cannot start the S3 server: %s\n",
                h_last_error());
        return -1;
    }
    char members[512] = "";
    for (int i = 0; i < 3; i++) {
        char d[4200], id[32];
        snprintf(id, sizeof(id), "ringcache-%d", i);
        snprintf(d, sizeof(d), "%s/node%d", h_env_dir(env), i);
        h_node_opts o = {.name = id,
                         .dir = d,
                         .s3_endpoint = h_s3_endpoint(s3),
                         .ssd = "4GiB",
                         .ram = "256MiB",
                         .threads = 2,
                         .log_level = "warn"};
        h_node node;
        if (h_node_start(env, &node, &o) < 0) {
            fprintf(stderr, "engine_bench: cached_vs_local=na: a cache node did not start: %s\n",
                    h_last_error());
            return -1;
        }
        h_members_add(members, sizeof(members), id, node.port);
    }
    /* upload the files */
    s3_config cfg;
    bench_s3_config(&cfg, h_s3_endpoint(s3));
    if (bench_upload_posts(&cfg, dir, "ringcache-test", "posts/") < 0)
        die("cannot upload the dataset to the S3 server");
    double t[16], tl[16];
    uint64_t rows_cached = 0, rows_local = 0;
    int n = runs > 16 ? 16 : runs;
    for (int i = -1; i < n; i++) {
        /* i = -1 warms the cache nodes; every run starts with an empty page cache */
        rc_config rcfg;
        rc_config_init(&rcfg);
        rcfg.members = members;
        rcfg.s3 = cfg;
        rcfg.max_threads = 2;
        /* a long-lived compute node's page cache is backed already (as in the
         * client bench); the local side reads files the OS has cached */
        rcfg.prefault = true;
        rc_client *c;
        char err[RC_ERR_MAX];
        if (rc_create(&c, &rcfg, err, sizeof(err)) < 0) {
            fprintf(stderr, "engine_bench: cached_vs_local=na: %s\n", err);
            return -1;
        }
        eng_ctx ctx = {
            .out = stdout, .list_s3 = rs_rc_list, .open_s3 = rs_rc_open_key, .s3_impl = c};
        double s = run_query(&ctx, seed_s3, 2, &rows_cached);
        rc_destroy(&c);
        if (i >= 0) {
            t[i] = s;
            tl[i] = run_query(local, seed_local, 2, &rows_local);
            if (rows_cached != rows_local) {
                fprintf(stderr,
                        "engine_bench: cached_vs_local=na: the cached run read %llu rows, "
                        "the local one %llu\n",
                        (unsigned long long)rows_cached, (unsigned long long)rows_local);
                return -1;
            }
        } else {
            fprintf(stderr, "cached: warm-up run (cold nodes) %.3f s\n", s);
        }
    }
    qsort(t, (size_t)n, sizeof(double), bench_cmp_double);
    qsort(tl, (size_t)n, sizeof(double), bench_cmp_double);
    fprintf(stderr,
            "cached: seed (2 threads) through 3 warm nodes, empty page cache: %.3f s; "
            "local files, runs interleaved: %.3f s (%llu rows each)\n",
            t[n / 2], tl[n / 2], (unsigned long long)rows_local);
    return tl[n / 2] / t[n / 2];
}

int main(int argc, char **argv)
{
    eng_tune_malloc(); /* as the CLI and the server run */
    long long rows = 20000000;
    bool cache = true;
    const char *data = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
            rows = atoll(argv[++i]);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--no-cache") == 0)
            cache = false;
        else if (strcmp(argv[i], "--data") == 0 && i + 1 < argc)
            data = argv[++i];
        else {
            fprintf(stderr,
                    "usage: engine_bench [--rows N] [--runs R] [--no-cache] [--data DIR]\n");
            return 2;
        }
    }
    if (rows < 1000 || runs < 1)
        die("--rows >= 1000 and --runs >= 1");
    if (h_env_create(&env, "engine_bench") < 0)
        return 1;
    snprintf(dir, sizeof(dir), "%s", data ? data : h_env_dir(env));
    char done[4200];
    snprintf(done, sizeof(done), "%s/duckdb.txt", dir);
    if (data)
        mkdir(data, 0755);
    bool reuse = data && access(done, R_OK) == 0;
    char script[4096], rs[32], rn[32];
    if (h_source_path(script, sizeof(script), "bench/engine/bench_gen.mjs") < 0)
        die("cannot find bench/engine/bench_gen.mjs (set RINGCACHE_SOURCE_DIR)");
    snprintf(rs, sizeof(rs), "%lld", rows);
    snprintf(rn, sizeof(rn), "%d", runs);
    char *gargv[] = {"node", script, dir, rs, rn, NULL};
    h_proc *p;
    double t0 = bench_now_s();
    if (reuse) {
        fprintf(stderr, "reusing the dataset and DuckDB timings in %s\n", dir);
    } else {
        if (h_proc_start(env, &p, "gen", gargv, NULL, NULL, 0) < 0)
            die("cannot start node (bench_gen.mjs)");
        int st = h_proc_wait(p, 600000);
        if (st != 0) {
            h_proc_print_log_tail(p, 20);
            die("bench_gen.mjs failed (see its log above)");
        }
        h_proc_print_log_tail(p, 10);
        fprintf(stderr, "data and DuckDB timings: %.1f s\n", bench_now_s() - t0);
    }

    char glob[4300], seed[8192], sum[8192], pruned[8192];
    snprintf(glob, sizeof(glob), "file('%s/data/posts_*.parquet')", dir);
    snprintf(seed, sizeof(seed),
             "SELECT OwnerDisplayName, count() AS num_posts FROM %s WHERE OwnerDisplayName NOT "
             "IN ('', 'anon') GROUP BY OwnerDisplayName ORDER BY num_posts DESC LIMIT 5",
             glob);
    snprintf(sum, sizeof(sum), "SELECT sum(Score), count() FROM %s", glob);
    long long lo = (long long)(rows * 0.3);
    snprintf(pruned, sizeof(pruned),
             "SELECT count(), sum(Score) FROM %s WHERE Id >= %lld AND Id < %lld", glob, lo,
             lo + 200000);
    FILE *devnull = fopen("/dev/null", "w");
    eng_ctx ctx = {.out = devnull};

    /* memory first, right after start-up */
    bench_hwm_reset();
    long long base = bench_status_bytes("VmRSS");
    uint64_t nrows = 0;
    run_query(&ctx, seed, 2, &nrows);
    double mem_ours = (double)(bench_status_bytes("VmHWM") - base);

    double s1 = median(&ctx, seed, 1), s2 = median(&ctx, seed, 2);
    double su = median(&ctx, sum, 2), pr = median(&ctx, pruned, 2);
    double d1 = duck_value("seed_1t"), d2 = duck_value("seed_2t"), dsu = duck_value("sum_2t"),
           dpr = duck_value("pruned_2t"), dmem = duck_value("mem_seed_2t");
    fprintf(stderr,
            "rows %llu\n"
            "seed 1 thread : engine %.3f s (%.1fM rows/s)  duckdb %.3f s (%.1fM rows/s)\n"
            "seed 2 threads: engine %.3f s (%.1fM rows/s)  duckdb %.3f s (%.1fM rows/s)\n"
            "sum  2 threads: engine %.3f s  duckdb %.3f s\n"
            "pruned 2 thr. : engine %.3f s  duckdb %.3f s\n"
            "peak memory (RSS over start-up), seed 2 threads: engine %.1f MiB  duckdb %.1f MiB\n",
            (unsigned long long)nrows, s1, nrows / s1 / 1e6, d1, nrows / d1 / 1e6, s2,
            nrows / s2 / 1e6, d2, nrows / d2 / 1e6, su, dsu, pr, dpr, mem_ours / 1048576.0,
            dmem / 1048576.0);
    char cached[32] = "na";
    if (cache) {
        char seed_s3[1024];
        snprintf(seed_s3, sizeof(seed_s3),
                 "SELECT OwnerDisplayName, count() AS num_posts FROM "
                 "s3('s3://ringcache-test/posts/posts_*.parquet') WHERE OwnerDisplayName NOT IN "
                 "('', 'anon') GROUP BY OwnerDisplayName ORDER BY num_posts DESC LIMIT 5");
        double c = cached_seed(&ctx, seed, seed_s3);
        if (c > 0)
            snprintf(cached, sizeof(cached), "%.2f", c);
    } else {
        fprintf(stderr, "engine_bench: cached_vs_local=na: --no-cache\n");
    }
    fclose(devnull);
    h_env_destroy(&env);
    char mem[32];
    eb_ratio(mem_ours, dmem, mem, sizeof(mem));
    printf("%s\n", BENCH_RATIO_CONVENTION);
    printf("engine: seed_1t_vs_duckdb=%.2f seed_2t_vs_duckdb=%.2f mem_vs_duckdb=%s "
           "sum_vs_duckdb=%.2f pruned_vs_duckdb=%.2f cached_vs_local=%s\n",
           d1 / s1, d2 / s2, mem, dsu / su, dpr / pr, cached);
    return 0;
}
