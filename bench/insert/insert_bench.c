/* SPDX-License-Identifier: Apache-2.0
 *
 * insert_bench.c: the INSERT ladder of ClickHouse's S3 insert guide ("Optimizing
 * for S3 insert and read performance"), on Stack-Overflow-shaped posts Parquet
 * (bench/engine/bench_gen.mjs) kept on the harness S3 server behind the S3 model,
 * into a MergeTree table whose parts go to the same S3, run the way a user runs
 * it: `ringcache query --endpoint ... --warehouse s3://.../wh/` processes.
 *
 *   1 default       INSERT INTO posts SELECT * FROM s3('s3://BUCKET/posts/posts_N.parquet' glob)
 *   2 tuned         SETTINGS min_insert_block_size_rows = 0, max_insert_threads = T,
 *                   min_insert_block_size_bytes = peak / (3 x T), T = half the
 *                   cores (at least 1), peak = --peak (default 2 GiB): the guide's
 *                   formula, printed
 *   3 more threads  the same with T = the cores (the guide: a node twice the size)
 *   4 no dedup      the tuned settings with insert_deduplicate = 0
 *   5 no optimize   and optimize_on_insert = 0
 *
 * Each row: a fresh table, the median time of --runs, rows/s, MB/s (uncompressed
 * bytes read, as ClickHouse counts them), the tracked peak memory the summary
 * prints ("Peak memory usage", as the guide quotes it), parts created per million
 * rows, and the active part count after merges settle (OPTIMIZE TABLE, one
 * merge each, until the count stops falling; bounded). The guide's own figures
 * (59.82M rows on 8-vCPU / 32 GiB nodes) are printed beside ours as ratios to
 * its own first row: ours to ours, theirs to theirs; the shape is what
 * compares. The guide's three-server rows (s3Cluster with
 * parallel_distributed_insert_select = 2) need `ringcache server` processes:
 * bench/cluster/cluster_bench.mjs measures them (insert_pdis2_speedup), here
 * pdis2_3_vs_1 is na and the bench says where to look.
 *
 *   insert_bench [--rows N] [--runs R] [--peak BYTES] [--scale NAME] [--out DIR]
 *
 * Writes DIR/insert-NAME.md and DIR/insert-NAME.png (the ladder's rows/s, ours
 * and the guide's, each relative to its first row). The last line is
 *
 *   insert: tuned_vs_default=<a> pdis2_3_vs_1=<b> nodedup_vs_tuned=<c>
 *           mem_vs_formula=<d>
 *
 * a: default's time over tuned's; b: na (see above); c: tuned's time over no
 * dedup's; d: the tuned insert's peak over the formula's peak.
 */
#include "harness.h"
#include "s3.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../bench.h"
#include "../bench_s3.h"
#include "../bench_posts.h"

static h_env *env;
static char dir[4096], cli[1024], endpoint[256];
static int runs = 3;

static _Noreturn void die(const char *msg)
{
    fprintf(stderr, "insert_bench: %s\n", msg);
    h_env_destroy(&env);
    exit(1);
}

typedef struct stmt_out {
    double seconds;
    double peak;       /* bytes, from the summary */
    double bytes_read; /* from the summary, decimal units */
    char out[4096];
} stmt_out;

/* The rung's SETTINGS clause ("" for the defaults). */
static void rung_settings(char *buf, size_t cap, int threads, unsigned long long block,
                          bool no_dedup, bool no_optimize)
{
    if (!threads) {
        buf[0] = 0;
        return;
    }
    snprintf(buf, cap,
             "min_insert_block_size_rows = 0, max_insert_threads = %d, "
             "min_insert_block_size_bytes = %llu%s%s",
             threads, block, no_dedup ? ", insert_deduplicate = 0" : "",
             no_optimize ? ", optimize_on_insert = 0" : "");
}

static double unit_value(const char *p, const char *const units[], const double mult[], int n)
{
    char *end;
    double v = strtod(p, &end);
    while (*end == ' ')
        end++;
    for (int i = n - 1; i >= 0; i--)
        if (strncmp(end, units[i], strlen(units[i])) == 0)
            return v * mult[i];
    return v;
}

/* Runs one statement through the CLI; dies when it fails. */
static void query(const char *sql, stmt_out *o)
{
    const char *argv[] = {
        cli,        "query", "--endpoint",    endpoint, "--warehouse", "s3://ringcache-test/wh/",
        "--format", "TSV",   "--no-progress", sql,      NULL};
    const char *envs[] = {"AWS_ACCESS_KEY_ID=S3RVER", "AWS_SECRET_ACCESS_KEY=S3RVER",
                          "AWS_REGION=us-east-1", NULL};
    h_run_result *r = calloc(1, sizeof(*r));
    if (!r)
        die("out of memory");
    double t = bench_now_s();
    int rc = h_run(env, r, argv, envs);
    t = bench_now_s() - t;
    if (rc < 0 || r->status != 0) {
        fprintf(stderr, "insert_bench: ringcache query failed (status %d): %s\n  %s\n", r->status,
                r->err, sql);
        die("a statement failed");
    }
    if (o) {
        o->seconds = t;
        const char *p = strstr(r->err, "Peak memory usage: ");
        static const char *const bu[] = {"B", "KiB", "MiB", "GiB", "TiB"};
        static const double bm[] = {1, 1024.0, 1048576.0, 1073741824.0, 1099511627776.0};
        o->peak = p ? unit_value(p + 19, bu, bm, 5) : 0;
        p = strstr(r->err, " rows, ");
        static const char *const du[] = {"B", "KB", "MB", "GB", "TB"};
        static const double dm[] = {1, 1e3, 1e6, 1e9, 1e12};
        o->bytes_read = p ? unit_value(p + 7, du, dm, 5) : 0;
        size_t n = strnlen(r->out, sizeof(o->out) - 1);
        memcpy(o->out, r->out, n);
        o->out[n] = 0;
    }
    free(r);
}

static long long count_of(const char *sql)
{
    stmt_out o;
    query(sql, &o);
    return atoll(o.out);
}

typedef struct rung {
    const char *name;
    int threads; /* max_insert_threads; 0: ClickHouse's defaults */
    bool no_dedup, no_optimize;
    double guide_s; /* the guide's seconds for this rung; 0: none */
    double secs, peak, mb_s, parts_per_m, settled;
} rung;

int main(int argc, char **argv)
{
    long long rows = 2000000;
    double peak_budget = 2.0 * 1073741824.0;
    const char *scale = NULL, *out_dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
            rows = atoll(argv[++i]);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--peak") == 0 && i + 1 < argc)
            peak_budget = atof(argv[++i]);
        else if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc)
            scale = argv[++i];
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out_dir = argv[++i];
        else {
            fprintf(stderr, "usage: insert_bench [--rows N] [--runs R] [--peak BYTES] "
                            "[--scale NAME] [--out DIR]\n");
            return 2;
        }
    }
    if (rows < 10000 || runs < 1 || runs > 9 || peak_budget < 16.0 * 1048576.0)
        die("--rows >= 10000, --runs 1..9 and --peak >= 16 MiB");
    char scale_buf[32], out_buf[4096];
    if (!scale) {
        bench_scale_name(rows, scale_buf, sizeof(scale_buf));
        scale = scale_buf;
    }
    if (!out_dir) {
        if (h_source_path(out_buf, sizeof(out_buf), "bench/results") < 0)
            die("cannot find bench/results (set RINGCACHE_SOURCE_DIR or pass --out)");
        out_dir = out_buf;
    }
    if (h_env_create(&env, "insert_bench") < 0)
        return 1;
    snprintf(dir, sizeof(dir), "%s", h_env_dir(env));
    if (h_build_path(cli, sizeof(cli), H_RINGCACHE_CLI) < 0 || access(cli, X_OK) != 0)
        die("ringcache is not built (build the ringcache target)");

    double t0 = bench_now_s();
    int gen_rc = bench_gen_posts(env, dir, rows);
    if (gen_rc == 77)
        exit(77);
    if (gen_rc < 0)
        die("bench_gen.mjs failed to write the posts dataset");
    h_s3 *s3;
    h_s3model *model;
    if (h_s3_start(env, &s3, NULL) < 0)
        die("cannot start the S3 server");
    if (h_s3model_start(env, &model, h_s3_port(s3), 0, 0) < 0)
        die("cannot start the S3 model (build the s3model target)");
    snprintf(endpoint, sizeof(endpoint), "%s", h_s3model_endpoint(model));
    s3_config cfg;
    bench_s3_config(&cfg, endpoint);
    if (bench_upload_posts(&cfg, dir, "ringcache-test", "posts/") < 0)
        die("cannot upload the dataset to the S3 server");
    fprintf(stderr, "insert_bench: %lld rows written and uploaded in %.1f s\n", rows,
            bench_now_s() - t0);

    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int t_half = cores >= 2 ? (int)(cores / 2) : 1, t_all = cores >= 1 ? (int)cores : 1;
    unsigned long long block = (unsigned long long)(peak_budget / (3.0 * t_half));
    fprintf(stderr,
            "the guide's formula: min_insert_block_size_bytes = peak / (3 x max_insert_threads)"
            " = %.0f / (3 x %d) = %llu (peak %.2f GiB; T = half of %ld cores)\n",
            peak_budget, t_half, block, peak_budget / 1073741824.0, cores);
    rung ladder[] = {
        {"1 default", 0, false, false, 191.692, 0, 0, 0, 0, 0},
        {"2 tuned (T = half the cores)", t_half, false, false, 128.566, 0, 0, 0, 0, 0},
        {"3 T = all the cores (guide: a 2x node)", t_all, false, false, 67.294, 0, 0, 0, 0, 0},
        {"4 tuned, insert_deduplicate = 0", t_half, true, false, 0, 0, 0, 0, 0, 0},
        {"5 and optimize_on_insert = 0", t_half, true, true, 0, 0, 0, 0, 0, 0},
    };
    int nr = (int)(sizeof(ladder) / sizeof(ladder[0]));
    const char *cols = "(Id Int64, PostTypeId Int32, CreationDate DateTime64(6), Score Int32, "
                       "ViewCount Nullable(Int32), OwnerUserId Nullable(Int64), "
                       "OwnerDisplayName String, Tags String, Title String, Body String) "
                       "ENGINE = MergeTree ORDER BY (PostTypeId, CreationDate)";
    char sql[8192], settings[1024], create[2048];
    snprintf(create, sizeof(create), "CREATE TABLE posts %s", cols);
    for (int k = 0; k < nr; k++) {
        rung *g = &ladder[k];
        rung_settings(settings, sizeof(settings), g->threads, block, g->no_dedup, g->no_optimize);
        double t[9], pk = 0, bytes = 0;
        long long parts = 0;
        for (int r = 0; r < runs; r++) {
            query("DROP TABLE IF EXISTS posts", NULL);
            query(create, NULL);
            snprintf(sql, sizeof(sql),
                     "INSERT INTO posts SELECT * FROM "
                     "s3('s3://ringcache-test/posts/posts_*.parquet')%s%s",
                     settings[0] ? " SETTINGS " : "", settings);
            stmt_out o;
            query(sql, &o);
            t[r] = o.seconds;
            if (o.peak > pk)
                pk = o.peak;
            bytes = o.bytes_read;
            parts = count_of("SELECT count() FROM system.parts WHERE table = 'posts' AND active");
        }
        long long n = count_of("SELECT count() FROM posts");
        if (n != rows) {
            fprintf(stderr, "insert_bench: %s: the table holds %lld rows, the source %lld\n",
                    g->name, n, rows);
            die("an insert lost or duplicated rows");
        }
        /* merges settle: one merge per OPTIMIZE until the count stops falling */
        long long settled = parts;
        for (int m = 0; m < 64 && settled > 1; m++) {
            query("OPTIMIZE TABLE posts", NULL);
            long long now =
                count_of("SELECT count() FROM system.parts WHERE table = 'posts' AND active");
            if (now >= settled)
                break;
            settled = now;
        }
        g->secs = bench_median(t, runs);
        g->peak = pk;
        g->mb_s = bytes / 1e6 / g->secs;
        g->parts_per_m = (double)parts * 1e6 / (double)rows;
        g->settled = (double)settled;
        fprintf(stderr,
                "%-40s %.2f s  %.0f rows/s  %.1f MB/s  peak %.1f MiB  %lld parts "
                "(%lld after merges)\n",
                g->name, g->secs, (double)rows / g->secs, g->mb_s, pk / 1048576.0, parts, settled);
    }

    char table[8192];
    size_t o = (size_t)snprintf(
        table, sizeof(table),
        "| rung | settings | seconds | rows/s | MB/s | peak (MiB) | parts per 1M rows | parts "
        "after merges | ours vs rung 1 | guide's seconds | guide vs its rung 1 |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int k = 0; k < nr && o < sizeof(table); k++) {
        rung *g = &ladder[k];
        char gs[32] = "", gr[32] = "";
        if (g->guide_s > 0) {
            snprintf(gs, sizeof(gs), "%.1f", g->guide_s);
            snprintf(gr, sizeof(gr), "%.2f", ladder[0].guide_s / g->guide_s);
        }
        rung_settings(settings, sizeof(settings), g->threads, block, g->no_dedup, g->no_optimize);
        if (!settings[0])
            snprintf(settings, sizeof(settings), "ClickHouse's defaults");
        o += (size_t)snprintf(table + o, sizeof(table) - o,
                              "| %s | %s | %.2f | %.0f | %.1f | %.1f | %.2f | %.0f | %.2f | %s | "
                              "%s |\n",
                              g->name, settings, g->secs, (double)rows / g->secs, g->mb_s,
                              g->peak / 1048576.0, g->parts_per_m, g->settled,
                              ladder[0].secs / g->secs, gs, gr);
    }
    printf("\n%s", table);
    const char *pdis_na = "this ladder runs `ringcache query` processes, which have no cluster; "
                          "the three-server rungs (the guide: 171.2 s with "
                          "parallel_distributed_insert_select = 0, 54.6 s with 2) are "
                          "`bash scripts/bench.sh cluster`'s insert_pdis2_speedup";
    fprintf(stderr, "insert_bench: pdis2_3_vs_1=na: %s\n", pdis_na);
    char line[512];
    snprintf(line, sizeof(line),
             "insert: tuned_vs_default=%.2f pdis2_3_vs_1=na nodedup_vs_tuned=%.2f "
             "mem_vs_formula=%.2f",
             ladder[0].secs / ladder[1].secs, ladder[1].secs / ladder[3].secs,
             ladder[1].peak / peak_budget);

    char path[4300], dat[4300], gp[4300], png[4300];
    mkdir(out_dir, 0755);
    snprintf(path, sizeof(path), "%s/insert-%s.md", out_dir, scale);
    snprintf(dat, sizeof(dat), "%s/insert-%s.dat", out_dir, scale);
    snprintf(gp, sizeof(gp), "%s/insert-%s.gp", out_dir, scale);
    snprintf(png, sizeof(png), "%s/insert-%s.png", out_dir, scale);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f,
                "# the S3 insert ladder, %lld SO-posts rows (%ld cores here; the guide: 59.82M "
                "rows on 8-vCPU nodes)\n\nmin_insert_block_size_bytes = %.0f / (3 x %d) = %llu. "
                "Time is the median of %d run(s), each into a fresh table.\n%s.\n\n%s\n%s\n",
                rows, cores, peak_budget, t_half, block, runs, pdis_na, table, line);
        fclose(f);
    }
    f = fopen(dat, "w");
    if (f) {
        for (int k = 0; k < nr; k++)
            fprintf(f, "\"%s\" %.3f %.3f\n", ladder[k].name, ladder[0].secs / ladder[k].secs,
                    ladder[k].guide_s > 0 ? ladder[0].guide_s / ladder[k].guide_s : 0);
        fclose(f);
        f = fopen(gp, "w");
        if (f) {
            fprintf(f,
                    "set terminal png size 1100,500\nset output '%s'\n"
                    "set title 'INSERT ladder: speed relative to each side''s default, %lld rows'\n"
                    "set style data histograms\nset style histogram cluster gap 1\n"
                    "set style fill solid 0.8\nset xtics rotate by -15 noenhanced\n"
                    "set key top left\nset ylabel 'speed vs rung 1'\nset yrange [0:*]\n"
                    "plot '%s' using 2:xtic(1) title 'ours', '' using 3 title 'the guide'\n",
                    png, rows, dat);
            fclose(f);
            bench_gnuplot("insert_bench", gp);
        }
        remove(dat);
    }
    printf("\nwritten: %s, %s\n", path, png);
    h_env_destroy(&env);
    printf("%s\n%s\n", BENCH_RATIO_CONVENTION, line);
    return 0;
}
