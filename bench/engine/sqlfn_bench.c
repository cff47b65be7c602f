/* SPDX-License-Identifier: Apache-2.0
 *
 * sqlfn_bench.c: the functions ClickHouse users type every day, the engine
 * against DuckDB in one run on the same files and threads. sqlfn_gen.mjs
 * writes ROWS rows (default 20M) in two Parquet files; this program runs the
 * same queries in-process (output format Null) and in DuckDB (a fresh
 * instance a turn, sqlfn_gen.mjs --time) in turns, the median of --runs
 * turns each, at 1 and 2 threads:
 *
 *   distinct  SELECT count(DISTINCT S)      S: about 0.8 * ROWS distinct strings
 *   quantile  SELECT median(V)              every value kept (DuckDB quantile_cont)
 *   if        SELECT K, sumIf(V, C > 50), countIf(C < 10) GROUP BY K (1000 groups)
 *   decimal   SELECT sum(Amount)            a Decimal(18, 2) column of as many rows
 *             in two more files (exact in both)
 *   groupby   SELECT count(), sum(c), max(s) FROM (SELECT G, count() AS c,
 *             sum(V) AS s ... GROUP BY G)  G: up to 1M distinct BIGINTs in
 *             random order (hash aggregation of many groups)
 *   memory    `distinct` at 2 threads: peak RSS minus RSS after start-up, each
 *             side first thing after its start-up
 *
 *   sqlfn_bench [--rows N] [--runs R]
 *
 * The last line is
 *   sqlfn: distinct_vs_duckdb=<a> quantile_vs_duckdb=<b> if_vs_duckdb=<c>
 *          decimal_vs_duckdb=<d> mem_vs_duckdb=<e> groupby_vs_duckdb=<f>
 * speeds at 2 threads (above 1: faster than DuckDB), memory below 1 means
 * less; `na` when a figure could not be measured, with the reason on stderr.
 */
#include "eng.h"
#include "harness.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine_bench_util.h"

static h_env *env;
static int runs = 3;

static _Noreturn void die(const char *msg)
{
    fprintf(stderr, "sqlfn_bench: %s\n", msg);
    h_env_destroy(&env);
    exit(1);
}

static char script[4096];

/* Figure `name` of the file sqlfn_gen.mjs wrote in the bench's folder. */
static double gen_figure(const char *file, const char *name)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", h_env_dir(env), file);
    double v = bench_file_figure(path, name);
    if (v < 0) {
        fprintf(stderr, "sqlfn_bench: %s has no '%s'\n", path, name);
        die("sqlfn_gen.mjs left a measurement out");
    }
    return v;
}

int main(int argc, char **argv)
{
    eng_tune_malloc(); /* as the CLI and the server run */
    long long rows = 20000000;
    for (int i = 1; i < argc; i += 2) {
        bool has_value = i + 1 < argc;
        if (has_value && strcmp(argv[i], "--rows") == 0) {
            rows = atoll(argv[i + 1]);
        } else if (has_value && strcmp(argv[i], "--runs") == 0) {
            runs = atoi(argv[i + 1]);
        } else {
            fprintf(stderr, "usage: sqlfn_bench [--rows N] [--runs R]\n");
            return 2;
        }
    }
    if (rows < 1000 || runs < 1)
        die("--rows >= 1000 and --runs >= 1");
    if (h_env_create(&env, "sqlfn_bench") < 0)
        return 1;
    char rs[32];
    if (h_source_path(script, sizeof(script), "bench/engine/sqlfn_gen.mjs") < 0)
        die("cannot find bench/engine/sqlfn_gen.mjs (set RINGCACHE_SOURCE_DIR)");
    snprintf(rs, sizeof(rs), "%lld", rows);
    double t0 = bench_now_s();
    if (eb_node(env, script, (char *[]){(char *)h_env_dir(env), rs, NULL}, 1200000) < 0)
        die("sqlfn_gen.mjs could not write the data");
    fprintf(stderr, "data and DuckDB's memory: %.1f s\n", bench_now_s() - t0);

    char g[4300], q[5][8192];
    snprintf(g, sizeof(g), "file('%s/data/fn_*.parquet')", h_env_dir(env));
    snprintf(q[0], sizeof(q[0]), "SELECT count(DISTINCT S) FROM %s", g);
    snprintf(q[1], sizeof(q[1]), "SELECT median(V) FROM %s", g);
    snprintf(q[2], sizeof(q[2]), "SELECT K, sumIf(V, C > 50), countIf(C < 10) FROM %s GROUP BY K",
             g);
    snprintf(q[3], sizeof(q[3]), "SELECT sum(Amount) FROM file('%s/data/dec_*.parquet')",
             h_env_dir(env));
    snprintf(q[4], sizeof(q[4]),
             "SELECT count(), sum(c), max(s) FROM (SELECT G, count() AS c, sum(V) AS s FROM %s "
             "GROUP BY G)",
             g);
    static const char *const names[] = {"distinct", "quantile", "if", "decimal", "groupby"};
    FILE *devnull = fopen("/dev/null", "w");
    if (!devnull)
        die("cannot open /dev/null");
    eng_ctx ctx = {.out = devnull};

    /* memory first, right after start-up */
    FILE *cr = fopen("/proc/self/clear_refs", "w");
    if (cr) {
        fputs("5", cr);
        fclose(cr);
    }
    long long base = bench_status_bytes("VmRSS");
    if (eb_run(&ctx, q[0], 2, NULL) < 0)
        die("a benchmark query failed");
    double mem_ours = (double)(bench_status_bytes("VmHWM") - base),
           mem_duck = gen_figure("duckdb.txt", "mem_distinct_2t");

    double ratio[5] = {0};
    for (int k = 0; k < 5; k++) {
        for (int th = 1; th <= 2; th++) {
            double ours, theirs;
            if (eb_medians_in_turns(env, script, h_env_dir(env), &ctx, q[k], names[k], th, runs,
                                    &ours, &theirs) < 0)
                die("a benchmark query or DuckDB's turn failed");
            fprintf(stderr, "%-8s %d thread%s: engine %.3f s  duckdb %.3f s  (%.2fx)\n", names[k],
                    th, th == 1 ? " " : "s", ours, theirs, theirs / ours);
            if (th == 2)
                ratio[k] = theirs / ours;
        }
    }
    fprintf(stderr,
            "peak memory (RSS over start-up), distinct at 2 threads: engine %.1f MiB  "
            "duckdb %.1f MiB\n",
            mem_ours / 1048576.0, mem_duck / 1048576.0);
    fclose(devnull);
    h_env_destroy(&env);
    char mem[32] = "na";
    if (mem_ours > 0 && mem_duck > 0)
        snprintf(mem, sizeof(mem), "%.2f", mem_ours / mem_duck);
    printf("%s\n", BENCH_RATIO_CONVENTION);
    printf("sqlfn: distinct_vs_duckdb=%.2f quantile_vs_duckdb=%.2f if_vs_duckdb=%.2f "
           "decimal_vs_duckdb=%.2f mem_vs_duckdb=%s groupby_vs_duckdb=%.2f\n",
           ratio[0], ratio[1], ratio[2], ratio[3], mem, ratio[4]);
    return 0;
}
