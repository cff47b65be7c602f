/* SPDX-License-Identifier: Apache-2.0
 *
 * tables_bench.c: MergeTree tables end to end against DuckDB, in one run.
 * bench/engine/bench_gen.mjs writes the Stack-Overflow-shaped posts as four
 * Parquet files; bench_duck.mjs times DuckDB's CREATE TABLE AS SELECT from
 * them into a DuckDB file (1 and 2 threads) and the seed query on that table.
 * Here, against the harness S3 server (s3rver behind the S3 model, which
 * counts GETs) and three ringcached nodes on this machine:
 *
 *   insert   INSERT INTO posts SELECT * FROM file('.../posts_*.parquet')
 *            with max_insert_threads = max_threads = 1, then 2 (parts PUT
 *            straight to S3; min_insert_block_size_rows = 0,
 *            min_insert_block_size_bytes = 64 MiB), median of RUNS, a fresh
 *            table each; rows/s per core printed beside ClickHouse's S3
 *            guide (465k rows/s tuned on 8 vCPUs: about 58k per vCPU)
 *   memory   the 2-thread insert's tracked peak over the formula's budget
 *            3 x max_insert_threads x min_insert_block_size_bytes
 *   gets     the same data inserted through the cache (write-through); then
 *            a process-fresh client's first full scan: S3 GETs counted (the
 *            log's, and none of a part object)
 *   scan     the seed query on that table through the warm nodes, 2 threads,
 *            against DuckDB's table, the two in turns, the ratio of the
 *            medians: scan_first is each side's first query in a fresh
 *            process (our page cache empty, the nodes warm; DuckDB's buffer
 *            pool empty, its file in the OS page cache), scan its second
 *            (as in a long-lived process: our page cache, the table's state
 *            and part footers kept, one List of its log, the GROUP BY's
 *            sizes from the run before; DuckDB's buffer pool warm); the
 *            second run without those sizes is printed beside it. The
 *            bench's process keeps the sizes across its fresh clients, as a
 *            server keeps them across queries, so from the second round
 *            scan_first has them too: a new process's first query does not
 *   point    SELECT * FROM posts WHERE Id IN (3 values): rows read (in
 *            granules of 8192) per value, and its latency through the nodes
 *
 *   tables_bench [--rows N] [--runs R]
 *
 * One line: tables: insert_1t_vs_duckdb=.. insert_2t_vs_duckdb=..
 *   insert_mem_vs_budget=.. scan_vs_duckdb=.. scan_first_vs_duckdb=..
 *   point_granules_per_value=..
 *   s3_gets_after_insert=..
 */
#include "eng.h"
#include "harness.h"
#include "ringcache.h"
#include "rs_rc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../bench.h"
#include "../bench_s3.h"
#include "../bench_profile.h"

#define BLOCK_BYTES (64ull << 20)

static h_env *env;
static char dir[4096];
static int runs = 3;

static _Noreturn void die(const char *msg)
{
    fprintf(stderr, "tables_bench: %s\n", msg);
    h_env_destroy(&env);
    exit(1);
}

static double duck_value(const char *txt, const char *key)
{
    const char *p = strstr(txt, key);
    return p ? strtod(p + strlen(key) + 1, NULL) : -1;
}

/* DuckDB's seed query on its table, a fresh instance's first run in *first
 * and its second returned (bench_duck.mjs --seed): called in turns with ours,
 * so that both ratios' sides see the same moments' load. */
static double duck_seed(const char *duckjs, double *first)
{
    char *argv[] = {"node", (char *)duckjs, dir, "--seed", NULL};
    h_proc *p;
    if (h_proc_start(env, &p, "duck-seed", argv, NULL, NULL, 0) < 0 || h_proc_wait(p, 600000) != 0)
        die("bench_duck.mjs --seed failed");
    char path[4300], txt[256] = "";
    snprintf(path, sizeof(path), "%s/duck_seed.txt", dir);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(txt, 1, sizeof(txt) - 1, f) : 0;
    if (f)
        fclose(f);
    txt[n] = 0;
    double v = duck_value(txt, "seed_2t");
    *first = duck_value(txt, "seed_first_2t");
    if (v <= 0 || *first <= 0)
        die("bench_duck.mjs --seed wrote no time");
    return v;
}

/* Runs sql; its seconds, the result in *res; dies on failure. */
static double run(const eng_ctx *ctx0, const char *sql, int threads, eng_result *res, char **out)
{
    eng_ctx ctx = *ctx0;
    ctx.max_threads = threads;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = out ? open_memstream(&buf, &len) : fopen("/dev/null", "w");
    ctx.out = f;
    char err[ENG_MSG_MAX];
    eng_result r;
    double t = bench_now_s();
    int rc = eng_run(&ctx, sql, strlen(sql), NULL, &r, err, sizeof(err));
    t = bench_now_s() - t;
    fclose(f);
    if (rc < 0) {
        fprintf(stderr, "tables_bench: %s\n  %s\n", err, sql);
        die("a statement failed");
    }
    if (res)
        *res = r;
    if (out)
        *out = buf;
    return t;
}

int main(int argc, char **argv)
{
    eng_tune_malloc(); /* as the CLI and the server run */
    long long rows = 1000000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
            rows = atoll(argv[++i]);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: tables_bench [--rows N] [--runs R]\n");
            return 2;
        }
    }
    if (rows < 10000 || runs < 1 || runs > 15)
        die("--rows >= 10000 and --runs 1..15");
    if (h_env_create(&env, "tables_bench") < 0)
        return 1;
    snprintf(dir, sizeof(dir), "%s", h_env_dir(env));
    char gen[4096], duckjs[4096], rs[32], rn[32];
    if (h_source_path(gen, sizeof(gen), "bench/engine/bench_gen.mjs") < 0 ||
        h_source_path(duckjs, sizeof(duckjs), "bench/tables/bench_duck.mjs") < 0)
        die("cannot find the bench scripts (set RINGCACHE_SOURCE_DIR)");
    snprintf(rs, sizeof(rs), "%lld", rows);
    snprintf(rn, sizeof(rn), "%d", runs);
    char *gargv[] = {"node", gen, dir, rs, "0", NULL};
    char *dargv[] = {"node", duckjs, dir, rn, NULL};
    h_proc *p;
    double t0 = bench_now_s();
    if (h_proc_start(env, &p, "gen", gargv, NULL, NULL, 0) < 0 || h_proc_wait(p, 1800000) != 0)
        die("bench_gen.mjs failed (node and @duckdb/node-api are needed)");
    if (h_proc_start(env, &p, "duck", dargv, NULL, NULL, 0) < 0 || h_proc_wait(p, 1800000) != 0)
        die("bench_duck.mjs failed");
    h_proc_print_log_tail(p, 6);
    fprintf(stderr, "data and DuckDB timings: %.1f s\n", bench_now_s() - t0);
    char path[4300], duck[2048] = "";
    snprintf(path, sizeof(path), "%s/duck_tables.txt", dir);
    FILE *df = fopen(path, "r");
    if (!df)
        die("no DuckDB timings");
    size_t dn = fread(duck, 1, sizeof(duck) - 1, df);
    duck[dn] = 0;
    fclose(df);

    /* S3, the model in front of it, three nodes filling through the model */
    char bin[1024];
    if (h_build_path(bin, sizeof(bin), H_RINGCACHED) < 0 || access(bin, X_OK) != 0)
        die("ringcached is not built");
    h_s3 *s3;
    h_s3model *model;
    if (h_s3_start(env, &s3, NULL) < 0)
        die("cannot start the S3 server");
    if (h_s3model_start(env, &model, h_s3_port(s3), 0, 0) < 0)
        die("cannot start the S3 model (build the s3model target)");
    /* the nodes must know each other to place written blocks on their owners:
     * their ports are picked first */
    char members[512] = "";
    int ports[3];
    for (int i = 0; i < 3; i++) {
        ports[i] = h_free_port();
        if (ports[i] <= 0)
            die("no free port for a cache node");
        char id[32];
        snprintf(id, sizeof(id), "ringcache-%d", i);
        h_members_add(members, sizeof(members), id, ports[i]);
    }
    for (int i = 0; i < 3; i++) {
        char d[4200], id[32];
        snprintf(id, sizeof(id), "ringcache-%d", i);
        snprintf(d, sizeof(d), "%s/node%d", dir, i);
        h_node_opts o = {.name = id,
                         .dir = d,
                         .s3_endpoint = h_s3model_endpoint(model),
                         .ssd = "8GiB",
                         .ram = "256MiB",
                         .port = ports[i],
                         .members = members,
                         .threads = 2,
                         .log_level = "warn"};
        h_node node;
        if (h_node_start(env, &node, &o) < 0)
            die("a cache node did not start");
    }
    s3_config cfg;
    bench_s3_config(&cfg, h_s3model_endpoint(model));
    tb_wh wh;
    char err[ENG_MSG_MAX];
    if (tb_wh_init(&wh, "s3://ringcache-test/wh/", &cfg, err, sizeof(err)) < 0)
        die(err);
    eng_ctx direct = {.format = ENG_FMT_TSV, .warehouse = &wh};

    const char *cols = "(Id Int64, PostTypeId Int32, CreationDate DateTime64(6), "
                       "Score Int32, ViewCount Nullable(Int32), OwnerUserId Nullable(Int64), "
                       "OwnerDisplayName String, Tags String, Title String, Body String) "
                       "ENGINE = MergeTree ORDER BY Id";
    char sql[8192];
    double ti[2][16];
    double peak2 = 0;
    for (int th = 1; th <= 2; th++)
        for (int r = 0; r < runs; r++) {
            run(&direct, "DROP TABLE IF EXISTS posts", 1, NULL, NULL);
            snprintf(sql, sizeof(sql), "CREATE TABLE posts %s", cols);
            run(&direct, sql, 1, NULL, NULL);
            snprintf(sql, sizeof(sql),
                     "INSERT INTO posts SELECT * FROM file('%s/data/posts_*.parquet') SETTINGS "
                     "max_insert_threads = %d, max_threads = %d, min_insert_block_size_rows = 0, "
                     "min_insert_block_size_bytes = %llu",
                     dir, th, th, BLOCK_BYTES);
            eng_result res;
            ti[th - 1][r] = run(&direct, sql, th, &res, NULL);
            if (res.rows_read != (uint64_t)rows)
                die("the insert did not take every row");
            if (th == 2 && (double)res.peak_memory > peak2)
                peak2 = (double)res.peak_memory;
        }
    double i1 = bench_median(ti[0], runs), i2 = bench_median(ti[1], runs);
    double d1 = duck_value(duck, "ctas_1t"), d2 = duck_value(duck, "ctas_2t");
    fprintf(stderr,
            "insert 1 thread : %.2f s, %.0f rows/s per core (DuckDB CTAS %.2f s, %.0f)\n"
            "insert 2 threads: %.2f s, %.0f rows/s per core (DuckDB CTAS %.2f s, %.0f)\n"
            "  (ClickHouse's S3 guide: about 58k rows/s per vCPU at best)\n"
            "insert peak (2 threads): %.1f MiB, budget 3 x 2 x %llu MiB = %llu MiB\n",
            i1, (double)rows / i1, d1, (double)rows / d1, i2, (double)rows / i2 / 2, d2,
            (double)rows / d2 / 2, peak2 / 1048576.0, BLOCK_BYTES >> 20, (6 * BLOCK_BYTES) >> 20);

    /* through the cache: write-through insert, then a fresh client's first scan */
    rc_config rcfg;
    rc_config_init(&rcfg);
    rcfg.members = members;
    rcfg.s3 = cfg;
    rcfg.max_threads = 2;
    rc_client *rc;
    if (rc_create(&rc, &rcfg, err, sizeof(err)) < 0)
        die(err);
    tb_wh whc = wh;
    whc.io = (tb_io){.open = rs_rc_open_key, .open_arg = rc, .put = rs_rc_put_key, .put_arg = rc};
    eng_ctx cached = {
        .format = ENG_FMT_TSV, .warehouse = &whc, .open_s3 = rs_rc_open_key, .s3_impl = rc};
    run(&direct, "DROP TABLE IF EXISTS posts", 1, NULL, NULL);
    snprintf(sql, sizeof(sql), "CREATE TABLE posts %s", cols);
    run(&direct, sql, 1, NULL, NULL);
    snprintf(sql, sizeof(sql),
             "INSERT INTO posts SELECT * FROM file('%s/data/posts_*.parquet') SETTINGS "
             "max_insert_threads = 2, min_insert_block_size_rows = 0, "
             "min_insert_block_size_bytes = %llu",
             dir, BLOCK_BYTES);
    double tc = run(&cached, sql, 2, NULL, NULL);
    rc_destroy(&rc);
    char *names = NULL;
    run(&direct, "SELECT name FROM system.parts WHERE table = 'posts' AND active", 1, NULL, &names);
    if (rc_create(&rc, &rcfg, err, sizeof(err)) < 0)
        die(err);
    whc.io.open_arg = whc.io.put_arg = rc;
    cached.s3_impl = rc;
    if (h_s3model_reset(model) < 0)
        die("cannot reset the S3 model's counters");
    run(&cached, "SELECT count(), sum(length(Body)), sum(Score) FROM posts", 2, NULL, NULL);
    int64_t gets = h_s3model_count(model, "GET", NULL), part_gets = 0;
    int n_parts = 0;
    for (char *l = strtok(names, "\n"); l; l = strtok(NULL, "\n")) {
        char key[400];
        snprintf(key, sizeof(key), "/ringcache-test/wh/default/posts/data/%.150s.part", l);
        part_gets += h_s3model_count(model, "GET", key);
        n_parts++;
    }
    free(names);
    rc_destroy(&rc);
    fprintf(stderr,
            "write-through insert (2 threads): %.2f s, %d parts; the first full scan "
            "after it: %lld S3 GETs, %lld of them of part objects\n",
            tc, n_parts, (long long)gets, (long long)part_gets);

    /* the seed and the point query through the warm nodes, a fresh client each run */
    char seed[] = "SELECT OwnerDisplayName, count() AS num_posts FROM posts WHERE "
                  "OwnerDisplayName NOT IN ('', 'anon') GROUP BY OwnerDisplayName ORDER BY "
                  "num_posts DESC LIMIT 5";
    char point[512];
    snprintf(point, sizeof(point), "SELECT * FROM posts WHERE Id IN (%lld, %lld, %lld)", rows / 7,
             rows / 2, rows - 3);
    double ts[16], tsf[16], tp[16], tds[16], tdsf[16], tsn[16];
    /* the same without the sizes the process keeps from the last run (a
       new process's first GROUP BY), for the line after the ratios */
    char seed_nostats[600];
    snprintf(seed_nostats, sizeof(seed_nostats),
             "%s SETTINGS collect_hash_table_stats_during_aggregation = 0", seed);
    eng_result pres = {0};
    for (int r = 0; r < runs; r++) {
        rcfg.prefault = true;
        rcfg.cache_scans = true; /* as the CLI and the server run: the second scan from RAM */
        if (rc_create(&rc, &rcfg, err, sizeof(err)) < 0)
            die(err);
        whc.io.open_arg = whc.io.put_arg = rc;
        cached.s3_impl = rc;
        tb_cat *cat; /* the table's state and footers between queries, as the server keeps */
        if (tb_cat_create(&cat, 0) < 0)
            die("out of memory");
        whc.cat = cat;
        /* each a query of its own to the cache client, as the server says */
        rc_query_begin(rc);
        tsf[r] = run(&cached, seed, 2, NULL, NULL);
        rc_query_begin(rc);
        ts[r] = run(&cached, seed, 2, NULL, NULL);
        rc_query_begin(rc);
        tsn[r] = run(&cached, seed_nostats, 2, NULL, NULL);
        rc_query_begin(rc);
        tp[r] = run(&cached, point, 2, &pres, NULL);
        if (r == 0) { /* the warm seed query, many times over, for the profilers */
            pid_t self = getpid();
            pid_t perf = bench_perf_start("seed-warm", &self, 1);
            bool profiled = perf > 0 || getenv("RINGCACHE_BENCH_CALLGRIND");
            bench_callgrind_on();
            double tl = 0;
            for (int k = 0; k < (profiled ? 40 : 0); k++) {
                rc_query_begin(rc);
                tl += run(&cached, seed, 2, NULL, NULL);
            }
            if (profiled)
                fprintf(stderr, "profiled: the warm seed query 40 times, %.3f s\n", tl);
            bench_callgrind_off("seed-warm");
            bench_perf_stop(perf);
        }
        whc.cat = NULL;
        tb_cat_destroy(&cat);
        rc_destroy(&rc);
        tds[r] = duck_seed(duckjs, &tdsf[r]);
    }
    double s = bench_median(ts, runs), pt = bench_median(tp, runs), ds = bench_median(tds, runs);
    double sf = bench_median(tsf, runs), dsf = bench_median(tdsf, runs);
    double granules = (double)pres.rows_read / 8192.0 / 3.0;
    fprintf(stderr,
            "seed on the table (2 threads, warm nodes), first run of a fresh client: %.3f s "
            "(DuckDB's table, a fresh instance: %.3f s); second run: %.3f s (DuckDB %.3f s); "
            "without the GROUP BY's sizes kept from the last run: %.3f s\n"
            "point query (Id IN 3 values): %.1f ms, %llu rows read = %.2f granules per value\n",
            sf, dsf, s, ds, bench_median(tsn, runs), pt * 1e3, (unsigned long long)pres.rows_read,
            granules);
    h_env_destroy(&env);
    printf("%s\n", BENCH_RATIO_CONVENTION);
    printf("tables: insert_1t_vs_duckdb=%.2f insert_2t_vs_duckdb=%.2f insert_mem_vs_budget=%.2f "
           "scan_vs_duckdb=%.2f scan_first_vs_duckdb=%.2f point_granules_per_value=%.2f "
           "s3_gets_after_insert=%lld\n",
           d1 / i1, d2 / i2, peak2 / (double)(6 * BLOCK_BYTES), ds / s, dsf / sf, granules,
           (long long)gets);
    return 0;
}
