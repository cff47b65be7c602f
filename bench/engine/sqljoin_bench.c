/* SPDX-License-Identifier: Apache-2.0
 *
 * sqljoin_bench.c: joins, windows, WITH and IN (SELECT ...) of the engine
 * (ingest/exec/eng.h) against DuckDB, in one run, on the same Parquet files
 * and threads. sqljoin_gen.mjs writes a fact table (--fact rows, default
 * 20M) and a dimension (--dim rows, default 1M) and measures DuckDB's CPU
 * per run and memory; this program then runs the same queries in-process
 * (output format Null) at 1 and 2 threads, in turns with DuckDB (each of
 * --runs turns: ours, then one run on a fresh DuckDB instance,
 * sqljoin_gen.mjs --time), the ratio of the medians:
 *
 *   join    SELECT count(), sum(f.v), sum(d.w) FROM fact AS f JOIN dim AS d
 *           ON f.k = d.k                           (the right side in memory)
 *   window  SELECT max(rn), count() FROM (SELECT row_number() OVER
 *           (PARTITION BY k ORDER BY t) AS rn FROM fact)
 *   cte     WITH a AS (SELECT k, sum(v) AS s FROM fact GROUP BY k)
 *           SELECT count(), sum(s) FROM a UNION ALL SELECT max(s), min(s) FROM a
 *   in      SELECT count(), sum(v) FROM fact WHERE t IN (SELECT t FROM fact
 *           WHERE id < min(1M, fact / 4))          (up to 1M values)
 *   memory  the join at 2 threads: peak RSS minus RSS after start-up, each
 *           side measured first thing after its start-up (VmHWM reset
 *           through /proc/self/clear_refs)
 *
 *   sqljoin_bench [--fact N] [--dim N] [--runs R]
 *
 * The last line is
 *   sqljoin: join_vs_duckdb=<a> window_vs_duckdb=<b> in_subquery_vs_duckdb=<c>
 *            mem_vs_duckdb=<d> cte_vs_duckdb=<e>
 * (2 threads; speed ratios above 1 mean faster than DuckDB, memory below 1
 * means less; the 1-thread figures are in the table above it). The temp
 * folder is removed at the end.
 */
#include "eng.h"
#include "harness.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "engine_bench_util.h"

static h_env *env;
static char dir[4096];
static int runs = 3;

static _Noreturn void die(const char *msg)
{
    fprintf(stderr, "sqljoin_bench: %s\n", msg);
    h_env_destroy(&env);
    exit(1);
}

static double run_query(const eng_ctx *base, const char *sql, int threads)
{
    double t = eb_run(base, sql, threads, NULL);
    if (t < 0)
        die("a benchmark query failed");
    return t;
}

/* The CPU-seconds this process spends per run of sql (at 1 thread: the
 * engine's cost, whatever else the machine runs). */
static double cpu_per_run(const eng_ctx *ctx, const char *sql)
{
    int n = runs > 16 ? 16 : runs;
    double c0 = bench_cpu_self_s();
    for (int i = 0; i < n; i++)
        run_query(ctx, sql, 1);
    return (bench_cpu_self_s() - c0) / n;
}

static double duck_value(const char *name)
{
    double v = eb_duck_value(dir, name);
    if (v < 0)
        die("sqljoin_gen.mjs wrote no duckdb.txt, or it lacks a measurement");
    return v;
}

int main(int argc, char **argv)
{
    eng_tune_malloc(); /* as the CLI and the server run */
    long long fact = 20000000, dim = 1000000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--fact") == 0 && i + 1 < argc)
            fact = atoll(argv[++i]);
        else if (strcmp(argv[i], "--dim") == 0 && i + 1 < argc)
            dim = atoll(argv[++i]);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: sqljoin_bench [--fact ROWS] [--dim ROWS] [--runs R]\n"
                            "  joins, windows, WITH and IN (SELECT) against DuckDB; defaults "
                            "20000000 x 1000000 rows, 3 runs\n");
            return 2;
        }
    }
    if (fact < 1000 || dim < 10 || runs < 1)
        die("--fact needs >= 1000 rows, --dim >= 10, --runs >= 1");
    if (h_env_create(&env, "sqljoin_bench") < 0)
        die("cannot create a temp folder");
    h_env_path(env, dir, sizeof(dir), "data");
    char script[4096], fs[32], ds[32], rn[32];
    if (h_source_path(script, sizeof(script), "bench/engine/sqljoin_gen.mjs") < 0)
        die("cannot find bench/engine/sqljoin_gen.mjs (set RINGCACHE_SOURCE_DIR)");
    snprintf(fs, sizeof(fs), "%lld", fact);
    snprintf(ds, sizeof(ds), "%lld", dim);
    snprintf(rn, sizeof(rn), "%d", runs);
    char *gargv[] = {"node", script, dir, fs, ds, rn, NULL};
    h_proc *p;
    double t0 = bench_now_s();
    if (h_proc_start(env, &p, "gen", gargv, NULL, NULL, 0) < 0)
        die("cannot start node (sqljoin_gen.mjs)");
    int st = h_proc_wait(p, 1800000);
    if (st != 0) {
        h_proc_print_log_tail(p, 20);
        die(st == 77 ? "sqljoin_gen.mjs needs @duckdb/node-api" : "sqljoin_gen.mjs failed");
    }
    h_proc_print_log_tail(p, 12);
    fprintf(stderr, "data and DuckDB timings: %.1f s\n", bench_now_s() - t0);

    long long in_vals = fact / 4 < 1000000 ? fact / 4 : 1000000;
    char q[4][9000];
    snprintf(q[0], sizeof(q[0]),
             "SELECT count(), sum(f.v), sum(d.w) FROM file('%s/fact.parquet') "
             "AS f JOIN file('%s/dim.parquet') AS d ON f.k = d.k",
             dir, dir);
    snprintf(q[1], sizeof(q[1]),
             "SELECT max(rn), count() FROM (SELECT row_number() OVER "
             "(PARTITION BY k ORDER BY t) AS rn FROM file('%s/fact.parquet'))",
             dir);
    snprintf(q[2], sizeof(q[2]),
             "WITH a AS (SELECT k, sum(v) AS s FROM file('%s/fact.parquet') "
             "GROUP BY k) SELECT count(), sum(s) FROM a UNION ALL SELECT max(s), min(s) FROM a",
             dir);
    snprintf(q[3], sizeof(q[3]),
             "SELECT count(), sum(v) FROM file('%s/fact.parquet') WHERE t IN "
             "(SELECT t FROM file('%s/fact.parquet') WHERE id < %lld)",
             dir, dir, in_vals);
    static const char *names[4] = {"join", "window", "cte", "in"};
    FILE *devnull = fopen("/dev/null", "w");
    eng_ctx ctx = {.out = devnull};

    /* memory first, right after start-up */
    bench_hwm_reset();
    long long base = bench_status_bytes("VmRSS");
    run_query(&ctx, q[0], 2);
    double mem_ours = (double)(bench_status_bytes("VmHWM") - base);

    double ours[4][2], duck[4][2];
    for (int t = 1; t <= 2; t++)
        for (int k = 0; k < 4; k++)
            if (eb_medians_in_turns(env, script, dir, &ctx, q[k], names[k], t, runs,
                                    &ours[k][t - 1], &duck[k][t - 1]) < 0)
                die("a benchmark query or DuckDB's turn failed");
    double cpu_ours[4], cpu_duck[4];
    for (int k = 0; k < 4; k++) {
        char nm[32];
        snprintf(nm, sizeof(nm), "%s_cpu_1t", names[k]);
        cpu_ours[k] = cpu_per_run(&ctx, q[k]);
        cpu_duck[k] = duck_value(nm);
    }
    double dmem = duck_value("mem_join_2t");
    fprintf(stderr, "fact %lld rows, dim %lld rows, IN list %lld values, median of %d runs\n", fact,
            dim, in_vals, runs);
    for (int k = 0; k < 4; k++)
        fprintf(stderr,
                "%-7s 1 thread: engine %.3f s  duckdb %.3f s (%.2fx) | 2 threads: engine "
                "%.3f s  duckdb %.3f s (%.2fx)\n",
                names[k], ours[k][0], duck[k][0], duck[k][0] / ours[k][0], ours[k][1], duck[k][1],
                duck[k][1] / ours[k][1]);
    for (int k = 0; k < 4; k++)
        fprintf(stderr, "%-7s CPU-seconds per run, 1 thread: engine %.3f  duckdb %.3f (%.2fx)\n",
                names[k], cpu_ours[k], cpu_duck[k], cpu_ours[k] / cpu_duck[k]);
    fprintf(stderr,
            "peak memory (RSS over start-up), join 2 threads: engine %.1f MiB  duckdb "
            "%.1f MiB\n",
            mem_ours / 1048576.0, dmem / 1048576.0);
    fclose(devnull);
    h_env_destroy(&env);
    char mem[32];
    eb_ratio(mem_ours, dmem, mem, sizeof(mem));
    printf("%s\n", BENCH_RATIO_CONVENTION);
    printf("sqljoin: join_vs_duckdb=%.2f window_vs_duckdb=%.2f in_subquery_vs_duckdb=%.2f "
           "mem_vs_duckdb=%s cte_vs_duckdb=%.2f\n",
           duck[0][1] / ours[0][1], duck[1][1] / ours[1][1], duck[3][1] / ours[3][1], mem,
           duck[2][1] / ours[2][1]);
    printf("sqljoin-cpu: join_cpu_vs_duckdb=%.2f window_cpu_vs_duckdb=%.2f "
           "in_subquery_cpu_vs_duckdb=%.2f cte_cpu_vs_duckdb=%.2f\n",
           cpu_ours[0] / cpu_duck[0], cpu_ours[1] / cpu_duck[1], cpu_ours[3] / cpu_duck[3],
           cpu_ours[2] / cpu_duck[2]);
    return 0;
}
