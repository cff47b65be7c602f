/* SPDX-License-Identifier: Apache-2.0
 *
 * table_bench.c: write and read throughput of a table part (ingest/table/
 * part.h) per core against DuckDB writing and reading its own table file,
 * from the same data, in one run. bench/engine/bench_gen.mjs writes the
 * Stack-Overflow-shaped posts as Parquet; this program decodes them into
 * engine batches once (not timed), then, one thread, RUNS times: writes one
 * part (ORDER BY Id, LZ4, 8192-row granules) to a local file through the
 * streaming writer, and reads it back whole (every column, 16 granules per
 * call, summing the numbers and the strings' lengths so nothing is skipped).
 * bench_duck.mjs does the same with DuckDB (CREATE TABLE AS from an
 * in-memory table into a database file plus CHECKPOINT; a fresh instance
 * summing every column), one thread. MB are of the decoded input (fixed
 * widths plus string bytes), the same figure for both sides.
 *
 *   table_bench [--rows N] [--runs R] [--keep]
 *
 * Prints the medians, then one line:
 *   table: write_mb_s=.. read_mb_s=.. write_vs_duckdb=.. read_vs_duckdb=..
 *          compression_ratio=.. size_vs_duckdb=..
 * (write/read_vs_duckdb: speeds, above 1 is faster; size_vs_duckdb: our part
 * over DuckDB's file, below 1 is smaller). Data lives in a temp folder
 * removed at the end.
 */
#include "harness.h"
#include "parquet.h"
#include "part.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../bench.h"

static int fd_write(void *arg, const void *data, size_t len)
{
    int fd = *(int *)arg;
    const char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0)
            return -errno;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int run_node(h_env *env, const char *name, char *const argv[])
{
    h_proc *p;
    if (h_proc_start(env, &p, name, argv, NULL, NULL, 0) < 0)
        return 1;
    int st = h_proc_wait(p, 1800000);
    if (st != 0) {
        h_proc_print_log_tail(p, 20);
        fprintf(stderr, "%s failed with status %d%s\n", argv[1], st,
                st == 77 ? " (skipped: npm packages missing)" : "");
    }
    return st;
}

static double duck_value(const char *txt, const char *key)
{
    const char *p = strstr(txt, key);
    return p ? strtod(p + strlen(key) + 1, NULL) : -1;
}

int main(int argc, char **argv)
{
    long rows = 2000000;
    int runs = 3, keep = 0, opt;
    static const struct option longopts[] = {
        {"rows", required_argument, NULL, 'n'},
        {"runs", required_argument, NULL, 'r'},
        {"keep", no_argument, NULL, 'k'},
        {NULL, 0, NULL, 0},
    };
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (opt == 'n')
            rows = strtol(optarg, NULL, 10);
        else if (opt == 'r')
            runs = atoi(optarg);
        else if (opt == 'k')
            keep = 1;
        else {
            fprintf(stderr, "usage: %s [--rows N] [--runs R] [--keep]\n", argv[0]);
            return 2;
        }
    }
    if (runs < 1 || runs > 20 || rows < 10000) {
        fprintf(stderr, "--runs must be 1..20 and --rows at least 10000\n");
        return 2;
    }
    if (keep)
        setenv("RINGCACHE_TEST_KEEP", "1", 1);
    h_env *env;
    if (h_env_create(&env, "table_bench") < 0)
        return 1;
    char gen[4096], duckjs[4096], dir[4096], rows_s[32], runs_s[16];
    if (h_source_path(gen, sizeof(gen), "bench/engine/bench_gen.mjs") < 0 ||
        h_source_path(duckjs, sizeof(duckjs), "bench/table/bench_duck.mjs") < 0) {
        fprintf(stderr, "cannot find the bench scripts (set RINGCACHE_SOURCE_DIR)\n");
        return 1;
    }
    snprintf(dir, sizeof(dir), "%s", h_env_dir(env));
    snprintf(rows_s, sizeof(rows_s), "%ld", rows);
    snprintf(runs_s, sizeof(runs_s), "%d", runs);
    fprintf(stderr, "writing %ld posts rows as Parquet in %s ...\n", rows, dir);
    char *g1[] = {"node", gen, dir, rows_s, "0", NULL};
    int st = run_node(env, "gen", g1);
    if (st) {
        h_env_destroy(&env);
        return st == 77 ? 77 : 1;
    }
    fprintf(stderr, "timing DuckDB (%d runs, 1 thread) ...\n", runs);
    char *g2[] = {"node", duckjs, dir, runs_s, NULL};
    if ((st = run_node(env, "duck", g2))) {
        h_env_destroy(&env);
        return st == 77 ? 77 : 1;
    }
    char tpath[4200], txt[1024] = "";
    snprintf(tpath, sizeof(tpath), "%s/duck_table.txt", dir);
    FILE *fp = fopen(tpath, "r");
    if (!fp || fread(txt, 1, sizeof(txt) - 1, fp) == 0) {
        fprintf(stderr, "cannot read %s\n", tpath);
        return 1;
    }
    fclose(fp);

    /* decode the Parquet files into batches, once */
    cb_batch **batches = NULL;
    size_t nb = 0, cap = 0;
    uint64_t in_bytes = 0, in_rows = 0;
    char err[512];
    for (int f = 0; f < 4; f++) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/data/posts_%d.parquet", dir, f);
        rs_source *src;
        pq_file *pf;
        pq_reader *r;
        pq_read_opts o;
        pq_read_opts_init(&o);
        if (rs_file_open(&src, path, err, sizeof(err)) < 0 ||
            pq_file_open(&pf, src, NULL, err, sizeof(err)) < 0 ||
            pq_reader_create(&r, pf, &o, err, sizeof(err)) < 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        cb_batch *b;
        int rc;
        while ((rc = pq_reader_next(r, &b)) > 0) {
            if (nb == cap) {
                cap = cap ? cap * 2 : 256;
                batches = realloc(batches, cap * sizeof(*batches));
            }
            batches[nb++] = b;
            in_rows += b->n_rows;
            for (uint32_t c = 0; c < b->n_cols; c++) {
                const cb_column *col = b->cols[c];
                size_t w = cb_type_width(&col->info);
                if (w) {
                    in_bytes += (uint64_t)w * col->n;
                } else {
                    for (uint32_t i = 0; i < col->n; i++) {
                        size_t len;
                        cb_column_bytes(col, i, &len);
                        in_bytes += len;
                    }
                }
            }
        }
        if (rc < 0) {
            fprintf(stderr, "%s\n", pq_reader_error(r));
            return 1;
        }
        pq_reader_destroy(&r);
        pq_file_destroy(&pf);
        rs_destroy(&src);
    }
    if (!nb || in_rows != (uint64_t)rows) {
        fprintf(stderr, "read %llu rows of %ld\n", (unsigned long long)in_rows, rows);
        return 1;
    }
    uint32_t ncols = batches[0]->n_cols;
    tp_column_def *defs = calloc(ncols, sizeof(tp_column_def));
    for (uint32_t c = 0; c < ncols; c++) {
        defs[c].name = batches[0]->cols[c]->name;
        defs[c].info = batches[0]->cols[c]->info;
        defs[c].nullable = strcmp(defs[c].name, "Id") != 0;
        defs[c].codec = TP_CODEC_LZ4;
    }
    uint32_t key = 0;
    char part[4200];
    snprintf(part, sizeof(part), "%s/posts.part", dir);
    double wt[21], rt[21];
    uint64_t part_bytes = 0, check = 0;
    for (int run = 0; run < runs; run++) {
        int fd = open(part, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        tp_writer_opts wo = {.part_name = "posts",
                             .cols = defs,
                             .n_cols = ncols,
                             .key_cols = &key,
                             .n_key = 1,
                             .input_sorted = true,
                             .write = fd_write,
                             .write_arg = &fd};
        tp_writer *w;
        double t0 = bench_now_s();
        if (fd < 0 || tp_writer_create(&w, &wo, err, sizeof(err)) < 0) {
            fprintf(stderr, "%s\n", fd < 0 ? strerror(errno) : err);
            return 1;
        }
        for (size_t i = 0; i < nb; i++)
            if (tp_writer_add(w, batches[i], err, sizeof(err)) < 0) {
                fprintf(stderr, "%s\n", err);
                return 1;
            }
        tp_part_info info;
        if (tp_writer_finish(w, &info, NULL, NULL, err, sizeof(err)) < 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        close(fd);
        wt[run] = bench_now_s() - t0;
        tp_writer_destroy(&w);
        part_bytes = info.bytes;

        rs_source *src;
        tp_reader *r;
        t0 = bench_now_s();
        if (rs_file_open(&src, part, err, sizeof(err)) < 0 ||
            tp_reader_open(&r, src, "posts", err, sizeof(err)) < 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        const tp_part_meta *m = tp_reader_meta(r);
        uint32_t *cols = calloc(ncols, sizeof(uint32_t));
        for (uint32_t c = 0; c < ncols; c++)
            cols[c] = c;
        uint64_t sum = 0, got = 0;
        for (uint32_t g = 0; g < m->granules; g += 16) {
            uint32_t gend = g + 16 < m->granules ? g + 16 : m->granules;
            cb_batch *b;
            if (tp_reader_read(r, cols, ncols, g, gend, &b, err, sizeof(err)) < 0) {
                fprintf(stderr, "%s\n", err);
                return 1;
            }
            for (uint32_t c = 0; c < ncols; c++) {
                const cb_column *col = b->cols[c];
                size_t wdt = cb_type_width(&col->info);
                for (uint32_t i = 0; i < col->n; i++) {
                    if (wdt == 8)
                        sum += ((const uint64_t *)col->values)[i];
                    else if (wdt == 4)
                        sum += ((const uint32_t *)col->values)[i];
                    else if (!wdt) {
                        size_t len;
                        cb_column_bytes(col, i, &len);
                        sum += len;
                    }
                }
            }
            got += b->n_rows;
            cb_batch_destroy(&b);
        }
        rt[run] = bench_now_s() - t0;
        free(cols);
        tp_reader_destroy(&r);
        rs_destroy(&src);
        if (got != in_rows) {
            fprintf(stderr, "read back %llu rows of %llu\n", (unsigned long long)got,
                    (unsigned long long)in_rows);
            return 1;
        }
        check = sum;
    }
    qsort(wt, (size_t)runs, sizeof(double), bench_cmp_double);
    qsort(rt, (size_t)runs, sizeof(double), bench_cmp_double);
    double w = wt[runs / 2], r = rt[runs / 2];
    double dw = duck_value(txt, "write_s"), dr = duck_value(txt, "read_s"),
           dsize = duck_value(txt, "file_bytes");
    double mb = (double)in_bytes / 1e6;
    printf("input: %llu rows, %.1f MB decoded, %zu batches (check %llu)\n",
           (unsigned long long)in_rows, mb, nb, (unsigned long long)check);
    printf("%-8s %12s %12s %14s\n", "", "write MB/s", "read MB/s", "file bytes");
    printf("%-8s %12.1f %12.1f %14llu\n", "part", mb / w, mb / r, (unsigned long long)part_bytes);
    printf("%-8s %12.1f %12.1f %14.0f\n", "duckdb", mb / dw, mb / dr, dsize);
    for (size_t i = 0; i < nb; i++)
        cb_batch_destroy(&batches[i]);
    free(batches);
    free(defs);
    h_env_destroy(&env);
    printf("%s\n", BENCH_RATIO_CONVENTION);
    printf("table: write_mb_s=%.1f read_mb_s=%.1f write_vs_duckdb=%.2f read_vs_duckdb=%.2f "
           "compression_ratio=%.2f size_vs_duckdb=%.2f\n",
           mb / w, mb / r, dw > 0 ? dw / w : 0, dr > 0 ? dr / r : 0,
           (double)in_bytes / (double)part_bytes, dsize > 0 ? (double)part_bytes / dsize : 0);
    return 0;
}
