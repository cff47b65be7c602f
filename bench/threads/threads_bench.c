/* SPDX-License-Identifier: Apache-2.0
 *
 * threads_bench.c: the max_threads sweep of ClickHouse's memory article, ours
 * beside DuckDB's at the same thread counts, in one run, on the same files:
 *
 *   seed     SELECT OwnerDisplayName, count() ... GROUP BY OwnerDisplayName
 *            ORDER BY num_posts DESC LIMIT 5 over a Stack-Overflow-shaped posts
 *            dataset (bench/engine/bench_gen.mjs)
 *   groupby  SELECT county, town, district, avg(price) AS avg_price ... GROUP BY
 *            county, town, district ORDER BY avg_price DESC LIMIT 5 over a
 *            UK-price-paid-shaped table (threads_duck.mjs gen)
 *
 * For every thread count (--threads, default 1,2,4,8,16) and query: the median
 * time of --runs warm runs (the engine in this process; DuckDB in one node
 * process per point, after one warm-up run there too), and the peak memory of
 * one run as peak RSS minus RSS after start-up (ours: in a child forked from
 * this process before it ran any query; DuckDB: a fresh node process), so each
 * side is measured from the same clean start.
 *
 *   threads_bench [--rows N] [--runs R] [--threads LIST] [--scale NAME] [--out DIR]
 *
 * Writes DIR/threads-NAME.md (the table) and DIR/threads-NAME.png (time and
 * memory against threads on two axes, gnuplot), DIR default bench/results,
 * NAME default the row count ("4M"). The last line is
 *
 *   threads: speedup_2_vs_1=<a> mem_2_vs_1=<b> vs_duckdb_2t=<c> seed_speedup_2_vs_1=<d>
 *            seed_vs_duckdb_2t=<e>
 *
 * a, b, c for the GROUP BY of the article: a = time at 1 thread / time at 2, b =
 * peak at 2 / peak at 1, c = DuckDB's time at 2 threads / ours; d, e the same
 * for the seed query. On a 2-core machine thread counts above 2 only show
 * what more threads cost in memory, not what they would gain.
 */
#include "eng.h"
#include "harness.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../bench.h"
#include "../bench_posts.h"

#define MAX_T 8

static h_env *env;
static char dir[4096];
static int runs = 3;

static _Noreturn void die(const char *msg)
{
    fprintf(stderr, "threads_bench: %s\n", msg);
    h_env_destroy(&env);
    exit(1);
}

static double run_once(const char *sql, int threads)
{
    static FILE *devnull;
    if (!devnull)
        devnull = fopen("/dev/null", "w");
    eng_ctx ctx = {.out = devnull, .max_threads = threads, .format = ENG_FMT_NULL};
    char err[ENG_MSG_MAX];
    eng_result res;
    double t0 = bench_now_s();
    if (eng_run(&ctx, sql, strlen(sql), NULL, &res, err, sizeof(err)) < 0) {
        fprintf(stderr, "threads_bench: the query failed: %s\n  %s\n", err, sql);
        die("a benchmark query failed");
    }
    return bench_now_s() - t0;
}

/* Peak RSS over start-up of one run, in a child forked before any query ran
 * here, so every thread count starts from the same memory. */
static double our_mem(const char *sql, int threads)
{
    int fds[2];
    if (pipe(fds) < 0)
        die("pipe failed");
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        die("fork failed");
    if (pid == 0) {
        close(fds[0]);
        FILE *cr = fopen("/proc/self/clear_refs", "w");
        if (cr) {
            fputs("5", cr);
            fclose(cr);
        }
        long long base = bench_status_bytes("VmRSS");
        run_once(sql, threads);
        long long v = bench_status_bytes("VmHWM") - base;
        ssize_t w = write(fds[1], &v, sizeof(v));
        _exit(w == (ssize_t)sizeof(v) ? 0 : 1);
    }
    close(fds[1]);
    long long v = -1;
    ssize_t r = read(fds[0], &v, sizeof(v));
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    if (r != (ssize_t)sizeof(v) || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("the memory run's child failed");
    return (double)v;
}

/* Runs threads_duck.mjs and returns the number after `key` on its output. */
static double duck(const char *key, const char *const args[])
{
    char script[4096];
    if (h_source_path(script, sizeof(script), "bench/threads/threads_duck.mjs") < 0)
        die("cannot find bench/threads/threads_duck.mjs (set RINGCACHE_SOURCE_DIR)");
    const char *argv[13] = {"/usr/bin/env", "node", script};
    int n = 3;
    for (int i = 0; args[i] && n < 12; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    h_run_result *r = calloc(1, sizeof(*r));
    if (!r)
        die("out of memory");
    if (h_run(env, r, argv, NULL) < 0 || r->status != 0) {
        fprintf(stderr, "threads_bench: threads_duck.mjs %s failed (status %d): %s\n", args[0],
                r->status, r->err);
        if (r->status == 77)
            exit(77);
        die("DuckDB's side failed");
    }
    const char *p = strstr(r->out, key);
    double v = p ? atof(p + strlen(key)) : -1;
    free(r);
    if (v < 0)
        die("threads_duck.mjs printed no figure");
    return v;
}

typedef struct point {
    double ours_s, duck_s, ours_mem, duck_mem;
} point;

int main(int argc, char **argv)
{
    long long rows = 4000000;
    const char *tlist = "1,2,4,8,16", *scale = NULL, *out_dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
            rows = atoll(argv[++i]);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            tlist = argv[++i];
        else if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc)
            scale = argv[++i];
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out_dir = argv[++i];
        else {
            fprintf(stderr, "usage: threads_bench [--rows N] [--runs R] [--threads 1,2,4,8,16] "
                            "[--scale NAME] [--out DIR]\n");
            return 2;
        }
    }
    if (rows < 1000 || runs < 1)
        die("--rows >= 1000 and --runs >= 1");
    int tv[MAX_T], nt = 0;
    for (const char *p = tlist; *p && nt < MAX_T;) {
        char *end;
        long t = strtol(p, &end, 10);
        if (end == p || t < 1 || t > 256)
            die("--threads takes a comma-separated list of counts from 1 to 256");
        tv[nt++] = (int)t;
        p = *end == ',' ? end + 1 : end;
    }
    int i1 = -1, i2 = -1;
    for (int i = 0; i < nt; i++) {
        if (tv[i] == 1)
            i1 = i;
        if (tv[i] == 2)
            i2 = i;
    }
    if (i1 < 0 || i2 < 0)
        die("--threads must include 1 and 2 (the summary compares them)");
    char scale_buf[32];
    if (!scale) {
        bench_scale_name(rows, scale_buf, sizeof(scale_buf));
        scale = scale_buf;
    }
    char out_buf[4096];
    if (!out_dir) {
        if (h_source_path(out_buf, sizeof(out_buf), "bench/results") < 0)
            die("cannot find bench/results (set RINGCACHE_SOURCE_DIR or pass --out)");
        out_dir = out_buf;
    }
    if (h_env_create(&env, "threads_bench") < 0)
        return 1;
    snprintf(dir, sizeof(dir), "%s", h_env_dir(env));

    char rs[32];
    snprintf(rs, sizeof(rs), "%lld", rows);
    double t0 = bench_now_s();
    {
        int g = bench_gen_posts(env, dir, rows);
        if (g == 77)
            exit(77);
        if (g < 0)
            die("bench_gen.mjs failed to write the posts dataset");
        const char *a[] = {"gen", dir, rs, NULL};
        duck("", a);
    }
    fprintf(stderr, "threads_bench: %lld rows of each dataset written in %.1f s\n", rows,
            bench_now_s() - t0);

    enum { Q_SEED, Q_GROUPBY, NQ };
    const char *qname[NQ] = {"seed", "groupby"};
    char ours[NQ][8192], theirs[NQ][8192];
    snprintf(ours[Q_SEED], sizeof(ours[0]),
             "SELECT OwnerDisplayName, count() AS num_posts FROM file('%s/data/posts_*.parquet') "
             "WHERE OwnerDisplayName NOT IN ('', 'anon') GROUP BY OwnerDisplayName ORDER BY "
             "num_posts DESC LIMIT 5",
             dir);
    snprintf(theirs[Q_SEED], sizeof(theirs[0]),
             "SELECT OwnerDisplayName, count(*) AS num_posts FROM '%s/data/posts_*.parquet' "
             "WHERE OwnerDisplayName NOT IN ('', 'anon') GROUP BY OwnerDisplayName ORDER BY "
             "num_posts DESC LIMIT 5",
             dir);
    snprintf(ours[Q_GROUPBY], sizeof(ours[0]),
             "SELECT county, town, district, avg(price) AS avg_price FROM "
             "file('%s/data/uk_*.parquet') GROUP BY county, town, district ORDER BY avg_price "
             "DESC LIMIT 5",
             dir);
    snprintf(theirs[Q_GROUPBY], sizeof(theirs[0]),
             "SELECT county, town, district, avg(price) AS avg_price FROM "
             "'%s/data/uk_*.parquet' GROUP BY county, town, district ORDER BY avg_price "
             "DESC LIMIT 5",
             dir);

    point pt[NQ][MAX_T];
    /* memory first: our children fork from a process that has run no query */
    for (int q = 0; q < NQ; q++)
        for (int i = 0; i < nt; i++) {
            char ts[16];
            snprintf(ts, sizeof(ts), "%d", tv[i]);
            pt[q][i].ours_mem = our_mem(ours[q], tv[i]);
            const char *a[] = {"mem", dir, ts, theirs[q], NULL};
            pt[q][i].duck_mem = duck("mem ", a);
        }
    for (int q = 0; q < NQ; q++)
        for (int i = 0; i < nt; i++) {
            char ts[16], rn[16];
            snprintf(ts, sizeof(ts), "%d", tv[i]);
            snprintf(rn, sizeof(rn), "%d", runs);
            run_once(ours[q], tv[i]); /* warm-up, as DuckDB's side gets */
            double t[32];
            int n = runs > 32 ? 32 : runs;
            for (int r = 0; r < n; r++)
                t[r] = run_once(ours[q], tv[i]);
            pt[q][i].ours_s = bench_median(t, n);
            const char *a[] = {"time", dir, ts, rn, theirs[q], NULL};
            pt[q][i].duck_s = duck("seconds ", a);
            fprintf(stderr, "%-8s %2d threads: ours %.3f s %.1f MiB, DuckDB %.3f s %.1f MiB\n",
                    qname[q], tv[i], pt[q][i].ours_s, pt[q][i].ours_mem / 1048576.0,
                    pt[q][i].duck_s, pt[q][i].duck_mem / 1048576.0);
        }

    char table[8192];
    size_t o = (size_t)snprintf(table, sizeof(table),
                                "| query | max_threads | ours (s) | DuckDB (s) | ours peak (MiB) "
                                "| DuckDB peak (MiB) |\n|---|---:|---:|---:|---:|---:|\n");
    for (int q = 0; q < NQ; q++)
        for (int i = 0; i < nt && o < sizeof(table); i++)
            o += (size_t)snprintf(table + o, sizeof(table) - o,
                                  "| %s | %d | %.3f | %.3f | %.1f | %.1f |\n", qname[q], tv[i],
                                  pt[q][i].ours_s, pt[q][i].duck_s, pt[q][i].ours_mem / 1048576.0,
                                  pt[q][i].duck_mem / 1048576.0);
    printf("\n%s", table);
    point *g1 = &pt[Q_GROUPBY][i1], *g2 = &pt[Q_GROUPBY][i2];
    point *s1 = &pt[Q_SEED][i1], *s2 = &pt[Q_SEED][i2];
    char line[512];
    snprintf(line, sizeof(line),
             "threads: speedup_2_vs_1=%.2f mem_2_vs_1=%.2f vs_duckdb_2t=%.2f "
             "seed_speedup_2_vs_1=%.2f seed_vs_duckdb_2t=%.2f",
             g1->ours_s / g2->ours_s, g1->ours_mem > 0 ? g2->ours_mem / g1->ours_mem : 0,
             g2->duck_s / g2->ours_s, s1->ours_s / s2->ours_s, s2->duck_s / s2->ours_s);

    char path[4300], dat[4300], gp[4300], png[4300];
    mkdir(out_dir, 0755);
    snprintf(path, sizeof(path), "%s/threads-%s.md", out_dir, scale);
    snprintf(dat, sizeof(dat), "%s/threads-%s.dat", out_dir, scale);
    snprintf(gp, sizeof(gp), "%s/threads-%s.gp", out_dir, scale);
    snprintf(png, sizeof(png), "%s/threads-%s.png", out_dir, scale);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f,
                "# max_threads sweep, %lld rows per dataset\n\n"
                "Time is the median of %d warm runs; peak is peak RSS minus RSS after "
                "start-up of one run from a fresh start (both sides).\n\n%s\n%s\n",
                rows, runs, table, line);
        fclose(f);
    }
    f = fopen(dat, "w");
    if (f) {
        for (int q = 0; q < NQ; q++) {
            for (int i = 0; i < nt; i++)
                fprintf(f, "%d %.4f %.4f %.2f %.2f\n", tv[i], pt[q][i].ours_s, pt[q][i].duck_s,
                        pt[q][i].ours_mem / 1048576.0, pt[q][i].duck_mem / 1048576.0);
            fprintf(f, "\n\n");
        }
        fclose(f);
        f = fopen(gp, "w");
        if (f) {
            fprintf(f,
                    "set terminal png size 1200,480\nset output '%s'\n"
                    "set multiplot layout 1,2\nset logscale x 2\nset xlabel 'max\\_threads'\n"
                    "set ylabel 'seconds'\nset y2label 'peak memory (MiB)'\nset ytics nomirror\n"
                    "set y2tics\nset yrange [0:*]\nset y2range [0:*]\nset key below\n",
                    png);
            for (int q = 0; q < NQ; q++)
                fprintf(f,
                        "set title '%s, %lld rows'\n"
                        "plot '%s' index %d using 1:2 with linespoints title 'ours time', "
                        "'' index %d using 1:3 with linespoints title 'DuckDB time', "
                        "'' index %d using 1:4 axes x1y2 with linespoints dt 2 title 'ours peak', "
                        "'' index %d using 1:5 axes x1y2 with linespoints dt 2 title 'DuckDB "
                        "peak'\n",
                        qname[q], rows, dat, q, q, q, q);
            fprintf(f, "unset multiplot\n");
            fclose(f);
            bench_gnuplot("threads_bench", gp);
        }
        remove(dat);
    }
    printf("\nwritten: %s, %s\n", path, png);
    h_env_destroy(&env);
    printf("%s\n%s\n", BENCH_RATIO_CONVENTION, line);
    return 0;
}
