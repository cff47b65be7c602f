/* SPDX-License-Identifier: Apache-2.0
 *
 * engine_bench_util.h: what the engine's benches (engine_bench, sqljoin_bench)
 * share: running a query in-process with the Null format and reading the
 * timings their DuckDB half wrote. Single-threaded callers.
 */
#ifndef RINGCACHE_ENGINE_BENCH_UTIL_H
#define RINGCACHE_ENGINE_BENCH_UTIL_H

#include "eng.h"
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

#endif /* RINGCACHE_ENGINE_BENCH_UTIL_H */
