/* SPDX-License-Identifier: Apache-2.0
 *
 * parquet_bench.c: decode throughput of the native Parquet reader (ingest/
 * parquet.h) against DuckDB on the same files, in one run. bench_gen.mjs
 * writes the files with DuckDB (snappy and zstd; a random int64 column, a
 * low-cardinality string column, a high-cardinality string column) and times
 * DuckDB, one thread, decoding each column alone (SELECT sum(i64) for the
 * integers, min(col) for the strings: the cheapest aggregates that make it
 * decode every value; min(i64) is answered from statistics and sum(string)
 * does not exist). This program then reads each column alone, whole, one
 * thread, from the same local files (warm page cache, median of the same
 * number of runs), into engine batches (strings stay dictionary-encoded when
 * every page is, as the engine reads them).
 *
 *   parquet_bench [--rows N] [--runs R] [--keep]
 *
 * Prints rows/s per codec and column, then one line (over both codecs: total
 * rows over total median time, each side):
 *   parquet: int_vs_duckdb=<a> lowcard_str_vs_duckdb=<b> highcard_str_vs_duckdb=<c>
 * above 1 means faster than DuckDB. Data (about 0.5 GiB at 8M rows) lives in
 * a temp folder removed at the end.
 */
#include "harness.h"
#include "parquet.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../bench.h"

/* Reads one column of path whole; returns seconds, or < 0 on error. */
static double read_column(const char *path, const char *col, int64_t *rows)
{
    char err[PQ_MSG_MAX];
    rs_source *src;
    pq_file *f;
    double t0 = bench_now_s();
    if (rs_file_open(&src, path, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    if (pq_file_open(&f, src, NULL, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s\n", err);
        rs_destroy(&src);
        return -1;
    }
    int c = pq_file_find_column(f, col);
    pq_read_opts o;
    pq_read_opts_init(&o);
    o.columns = &c;
    o.n_columns = 1;
    pq_reader *r;
    if (c < 0 || pq_reader_create(&r, f, &o, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s: no column %s\n", path, col);
        pq_file_destroy(&f);
        rs_destroy(&src);
        return -1;
    }
    cb_batch *b;
    int rc;
    int64_t n = 0;
    while ((rc = pq_reader_next(r, &b)) > 0) {
        n += b->n_rows;
        cb_batch_destroy(&b);
    }
    double t = bench_now_s() - t0;
    if (rc < 0)
        fprintf(stderr, "%s\n", pq_reader_error(r));
    pq_reader_destroy(&r);
    pq_file_destroy(&f);
    rs_destroy(&src);
    *rows = n;
    return rc < 0 ? -1 : t;
}

/* The DuckDB time for (codec, column) from duckdb.json (a flat list). */
static double duck_seconds(const char *json, const char *codec, const char *col)
{
    char key[128];
    snprintf(key, sizeof(key), "{\"codec\":\"%s\",\"column\":\"%s\"", codec, col);
    const char *p = strstr(json, key);
    if (!p)
        return -1;
    p = strstr(p, "\"seconds\":");
    return p ? strtod(p + 10, NULL) : -1;
}

int main(int argc, char **argv)
{
    long rows = 8000000;
    int runs = 3, keep = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
            rows = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--keep") == 0)
            keep = 1;
        else {
            fprintf(stderr, "usage: %s [--rows N] [--runs R] [--keep]\n", argv[0]);
            return 2;
        }
    }
    if (runs < 1 || runs > 50 || rows < 1000) {
        fprintf(stderr, "--runs must be 1..50 and --rows at least 1000\n");
        return 2;
    }
    if (keep)
        setenv("RINGCACHE_TEST_KEEP", "1", 1);
    h_env *env;
    if (h_env_create(&env, "parquet_bench") < 0)
        return 1;
    char script[4096], dir[4096], rows_s[32], runs_s[16];
    if (h_source_path(script, sizeof(script), "bench/parquet/bench_gen.mjs") < 0) {
        fprintf(stderr, "cannot find bench/parquet/bench_gen.mjs (set RINGCACHE_SOURCE_DIR)\n");
        return 1;
    }
    snprintf(dir, sizeof(dir), "%s", h_env_dir(env));
    snprintf(rows_s, sizeof(rows_s), "%ld", rows);
    snprintf(runs_s, sizeof(runs_s), "%d", runs);
    char *gargv[] = {"node", script, dir, rows_s, runs_s, NULL};
    h_proc *p;
    fprintf(stderr, "writing %ld rows with DuckDB (snappy, zstd) and timing it in %s ...\n", rows,
            dir);
    if (h_proc_start(env, &p, "duckdb", gargv, NULL, NULL, 0) < 0)
        return 1;
    int st = h_proc_wait(p, 600000);
    if (st != 0) {
        h_proc_print_log_tail(p, 20);
        fprintf(stderr, "bench_gen.mjs failed with status %d%s\n", st,
                st == 77 ? " (skipped: npm packages missing)" : "");
        h_env_destroy(&env);
        return st == 77 ? 77 : 1;
    }
    char jpath[4200];
    snprintf(jpath, sizeof(jpath), "%s/duckdb.json", dir);
    FILE *fp = fopen(jpath, "r");
    char json[8192] = "";
    if (!fp || fread(json, 1, sizeof(json) - 1, fp) == 0) {
        fprintf(stderr, "cannot read %s\n", jpath);
        return 1;
    }
    fclose(fp);

    static const char *codecs[] = {"snappy", "zstd"};
    static const char *cols[] = {"i64", "s_low", "s_high"};
    double ours_t[3] = {0}, duck_t[3] = {0};
    int64_t total_rows[3] = {0};
    printf("%-7s %-7s %14s %14s %8s\n", "codec", "column", "ours rows/s", "duckdb rows/s", "ratio");
    for (int ci = 0; ci < 2; ci++) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s.parquet", dir, codecs[ci]);
        for (int k = 0; k < 3; k++) {
            double t[51];
            int64_t n = 0;
            if (read_column(path, cols[k], &n) < 0) /* warm-up, as DuckDB's first run */
                return 1;
            for (int r = 0; r < runs; r++) {
                t[r] = read_column(path, cols[k], &n);
                if (t[r] < 0)
                    return 1;
            }
            qsort(t, (size_t)runs, sizeof(double), bench_cmp_double);
            double ours = t[runs / 2], duck = duck_seconds(json, codecs[ci], cols[k]);
            if (duck <= 0 || n != rows) {
                fprintf(stderr, "no DuckDB time for %s/%s, or %lld rows read of %ld\n", codecs[ci],
                        cols[k], (long long)n, rows);
                return 1;
            }
            printf("%-7s %-7s %14.0f %14.0f %8.2f\n", codecs[ci], cols[k], (double)n / ours,
                   (double)n / duck, duck / ours);
            ours_t[k] += ours;
            duck_t[k] += duck;
            total_rows[k] += n;
        }
    }
    h_env_destroy(&env);
    printf("%s\n", BENCH_RATIO_CONVENTION);
    printf("parquet: int_vs_duckdb=%.2f lowcard_str_vs_duckdb=%.2f highcard_str_vs_duckdb=%.2f\n",
           duck_t[0] / ours_t[0], duck_t[1] / ours_t[1], duck_t[2] / ours_t[2]);
    return 0;
}
