/* SPDX-License-Identifier: Apache-2.0
 *
 * engine_bench_util.h: what the engine's benches (engine_bench, sqlfn_bench,
 * sqljoin_bench) share: running a query in-process with the Null format,
 * reading the timings their DuckDB half wrote, and timing DuckDB in turns
 * with us. Single-threaded callers.
 */
#ifndef RINGCACHE_ENGINE_BENCH_UTIL_H
#define RINGCACHE_ENGINE_BENCH_UTIL_H

#include "eng.h"
#include "harness.h"
#include "../bench.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* The CPU-seconds (user + system) this process has spent, all its threads. */
static inline double bench_cpu_self_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Runs sql at threads threads on a copy of base (format Null): its seconds,
 * or -1 with the error printed; *rows (may be NULL) gets the rows read. */
static inline double eb_run(const eng_ctx *base, const char *sql, int threads, uint64_t *rows)
{
    eng_ctx ctx = *base;
    ctx.max_threads = threads;
    ctx.format = ENG_FMT_NULL;
    char err[ENG_MSG_MAX];
    eng_result res;
    double t0 = bench_now_s();
    if (eng_run(&ctx, sql, strlen(sql), NULL, &res, err, sizeof(err)) < 0) {
        fprintf(stderr, "the query failed: %s\n  %s\n", err, sql);
        return -1;
    }
    if (rows)
        *rows = res.rows_read;
    return bench_now_s() - t0;
}

/* The value of "<name> <value>" in dir/duckdb.txt, or -1 (no file, no line). */
static inline double eb_duck_value(const char *dir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/duckdb.txt", dir);
    return bench_file_figure(path, name);
}

/* ours / peer's into buf ("%.2f"), or "na" when either is missing. */
static inline const char *eb_ratio(double ours, double peer, char *buf, size_t cap)
{
    if (ours > 0 && peer > 0)
        snprintf(buf, cap, "%.2f", ours / peer);
    else
        snprintf(buf, cap, "na");
    return buf;
}

/* Runs `node script args...` (at most 5 args) in env: 0, or -1 with its log's
 * tail printed. */
static inline int eb_node(h_env *env, const char *script, char *const *args, int timeout_ms)
{
    char *argv[8] = {"node", (char *)script};
    for (int i = 0; args[i] && i < 5; i++)
        argv[2 + i] = args[i];
    h_proc *p;
    if (h_proc_start(env, &p, "duck", argv, NULL, NULL, 0) < 0)
        return -1;
    int st = h_proc_wait(p, timeout_ms);
    if (st != 0) {
        h_proc_print_log_tail(p, 20);
        fprintf(stderr, "%s failed (exit %d, its log above)\n", script, st);
        return -1;
    }
    return 0;
}

/* DuckDB timed in turns with the engine, so that both sides of a ratio see
 * the same minutes of a noisy machine: each of `runs` turns (at most 16) runs
 * sql on ctx, then `node script dir --time name threads`, which runs the
 * same query once on a fresh DuckDB instance and writes "name <seconds>" to
 * dir/turn.txt. The medians in *ours and *theirs; 0, or -1 (said why). */
static inline int eb_medians_in_turns(h_env *env, const char *script, const char *dir,
                                      const eng_ctx *ctx, const char *sql, const char *name,
                                      int threads, int runs, double *ours, double *theirs)
{
    double a[16], b[16];
    int n = runs > 16 ? 16 : runs;
    char th[16], path[4300];
    snprintf(th, sizeof(th), "%d", threads);
    snprintf(path, sizeof(path), "%s/turn.txt", dir);
    for (int i = 0; i < n; i++) {
        if ((a[i] = eb_run(ctx, sql, threads, NULL)) < 0)
            return -1;
        if (eb_node(env, script, (char *[]){(char *)dir, "--time", (char *)name, th, NULL},
                    600000) < 0)
            return -1;
        if ((b[i] = bench_file_figure(path, name)) < 0) {
            fprintf(stderr, "%s has no '%s'\n", path, name);
            return -1;
        }
    }
    qsort(a, (size_t)n, sizeof(double), bench_cmp_double);
    qsort(b, (size_t)n, sizeof(double), bench_cmp_double);
    *ours = a[n / 2];
    *theirs = b[n / 2];
    return 0;
}

#endif /* RINGCACHE_ENGINE_BENCH_UTIL_H */
