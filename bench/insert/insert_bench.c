/* SPDX-License-Identifier: Apache-2.0
 *
 * insert_bench.c: the INSERT ladder of ClickHouse's S3 insert guide ("Optimizing
 * for S3 insert and read performance"), on Stack-Overflow-shaped posts Parquet
 * (bench/engine/bench_gen.mjs) kept on the harness S3 server behind the S3 model,
 * into a MergeTree table whose parts go to the same S3. Rungs 1-5 run the way a
 * user runs one insert: `ringcache query --endpoint ... --warehouse s3://.../wh/`
 * processes.
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
 * Rungs 6-10 run on three `ringcache server` processes, the cluster `default`,
 * each reaching S3 through its own link (bench/netproxy: --latency-us one way,
 * --bandwidth-mib of S3's answers, 10 MiB/s by default), their tables in a
 * warehouse of their own; the statement is POSTed to the first. The link is
 * what each server has of its own here: the three share this machine's
 * cores, where the guide's nodes have 8 vCPUs each. So the default cap is
 * low enough that one server is bound by its link (about a third of a core
 * busy), and three servers' work fits in two cores: the comparison is then
 * of scale-out, not of how the cores are shared (with 100 MiB/s a single
 * server is bound by its core, and three servers only split two):
 *
 *   6 one server    rung 2's INSERT with s3() on the first server alone (through
 *                   its link: the peer of the three)
 *   7 3 servers     INSERT INTO posts SELECT * FROM s3Cluster('default', glob)
 *                   SETTINGS parallel_distributed_insert_select = 0, the tuned
 *                   settings (the initiator inserts every row)
 *   8 pdis = 2      the same with parallel_distributed_insert_select = 2 (each
 *                   server inserts its units)
 *   9 no dedup      and insert_deduplicate = 0
 *  10 no optimize   and optimize_on_insert = 0
 *
 * Each row: a fresh table per run, the median time of --runs, rows/s, MB/s
 * (uncompressed bytes read, as ClickHouse counts them), the tracked peak
 * memory ("Peak memory usage" of the CLI's summary, as the guide quotes it; on
 * the servers the largest of any one server's, from system.query_log), parts
 * created per million rows, and the active part count after merges settle
 * (OPTIMIZE TABLE, one merge each, until the count stops falling; bounded).
 * After every run the table must hold exactly the generated rows (and the
 * servers' summary must say as many written), or the bench stops. The servers
 * drop their page caches before each run (each CLI run starts cold). The
 * guide's own figures (59.82M rows on 8-vCPU / 32 GiB nodes) are printed beside
 * ours as ratios to its own first row: ours to ours, theirs to theirs; the
 * shape is what compares.
 *
 *   insert_bench [--scale tiny|small|medium|large|NAME] [--rows N] [--runs R]
 *                [--peak BYTES] [--latency-us U] [--bandwidth-mib B]
 *                [--no-cluster] [--out DIR]
 *
 * Scales: tiny 200k rows, small (the default) 1M, medium 4M, large the guide's
 * 59.82M; --rows overrides (its count names the results). Writes
 * DIR/insert-SCALE.md and DIR/insert-SCALE.png (the ladder's speed, ours and
 * the guide's, each relative to its first row). The last line is
 *
 *   insert: tuned_vs_default=<a> pdis2_3_vs_1=<b> nodedup_vs_tuned=<c>
 *           mem_vs_formula=<d> pdis2_vs_pdis0=<e>
 *
 * a: default's time over tuned's; b: one server's time (rung 6) over three
 * servers' with pdis = 2 (rung 8); c: tuned's time over no dedup's; d: the
 * tuned insert's peak over the formula's peak; e: rung 7's time over rung 8's.
 * b and e are na with --no-cluster.
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
    long long written; /* rows, from a server's summary; -1: not given */
    char out[4096];
} stmt_out;

/* The rung's SETTINGS clause ("" for the defaults); pdis < 0: none. */
static void rung_settings(char *buf, size_t cap, int threads, unsigned long long block,
                          bool no_dedup, bool no_optimize, int pdis)
{
    buf[0] = 0;
    if (!threads)
        return;
    char p[64] = "";
    if (pdis >= 0)
        snprintf(p, sizeof(p), "parallel_distributed_insert_select = %d, ", pdis);
    snprintf(buf, cap,
             "%smin_insert_block_size_rows = 0, max_insert_threads = %d, "
             "min_insert_block_size_bytes = %llu%s%s",
             p, threads, block, no_dedup ? ", insert_deduplicate = 0" : "",
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
        o->written = -1;
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

/* ---- the three servers ---- */

#define N_SRV 3
static int srv_port[N_SRV];

/* A number of the X-ClickHouse-Summary JSON ("key":"N"); -1 when missing. */
static long long summary_num(const char *sum, const char *key)
{
    char k[64];
    snprintf(k, sizeof(k), "\"%s\":\"", key);
    const char *p = strstr(sum, k);
    return p ? atoll(p + strlen(k)) : -1;
}

/* POSTs sql to server i (query id qid, NULL: the server's); dies when it
 * fails. */
static void squery(int i, const char *sql, const char *qid, stmt_out *o)
{
    char url[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/?default_format=TSV%s%s", srv_port[i],
             qid ? "&query_id=" : "", qid ? qid : "");
    h_http_req req = {
        .method = "POST", .url = url, .body = sql, .body_len = strlen(sql), .timeout_ms = 7200000};
    h_http_resp resp = {0};
    double t = bench_now_s();
    int st = h_http(&req, &resp);
    t = bench_now_s() - t;
    if (st != 200) {
        fprintf(stderr, "insert_bench: server %d answered %d: %.600s\n  %.300s\n", i, st,
                resp.body ? resp.body : "", sql);
        h_http_resp_deinit(&resp);
        die("a statement failed");
    }
    if (o) {
        char sum[1024] = "";
        h_http_header(&resp, "X-ClickHouse-Summary", sum, sizeof(sum));
        o->seconds = t;
        o->peak = (double)summary_num(sum, "memory_usage");
        o->bytes_read = (double)summary_num(sum, "read_bytes");
        o->written = summary_num(sum, "written_rows");
        snprintf(o->out, sizeof(o->out), "%s", resp.body ? resp.body : "");
    }
    h_http_resp_deinit(&resp);
}

static long long scount(const char *sql)
{
    stmt_out o;
    squery(0, sql, NULL, &o);
    return atoll(o.out);
}

/* Three netproxies in front of the S3 model, one per server, and the three
 * servers behind them as the cluster `default`. */
static void start_servers(int model_port, int latency_us, double bw_mib)
{
    char np[1024];
    if (h_build_path(np, sizeof(np), "bench/netproxy/netproxy") < 0 || access(np, X_OK) != 0)
        die("netproxy is not built (build the netproxy target)");
    char tgt[64], lat[16], bw[32], members[256] = "";
    snprintf(tgt, sizeof(tgt), "127.0.0.1:%d", model_port);
    snprintf(lat, sizeof(lat), "%d", latency_us);
    snprintf(bw, sizeof(bw), "%.0f", bw_mib);
    int link[N_SRV];
    for (int i = 0; i < N_SRV; i++) {
        char name[32], pf[4200];
        snprintf(name, sizeof(name), "link%d", i);
        snprintf(pf, sizeof(pf), "%s/%s.port", dir, name);
        char *const argv[] = {np,  "--target",        tgt, "--port-file", pf, "--latency-us",
                              lat, "--bandwidth-mib", bw,  NULL};
        h_proc *p;
        if (h_proc_start(env, &p, name, argv, NULL, pf, 0) < 0)
            die(h_last_error());
        link[i] = h_proc_port(p);
        srv_port[i] = h_free_port();
        if (srv_port[i] <= 0)
            die("no free port for a server");
        size_t l = strlen(members);
        snprintf(members + l, sizeof(members) - l, "%s127.0.0.1:%d", i ? "," : "", srv_port[i]);
    }
    char cluster[300];
    snprintf(cluster, sizeof(cluster), "default=%s", members);
    char *const envx[] = {"AWS_ACCESS_KEY_ID=S3RVER", "AWS_SECRET_ACCESS_KEY=S3RVER",
                          "AWS_REGION=us-east-1", NULL};
    for (int i = 0; i < N_SRV; i++) {
        char name[32], pf[4200], port[16], s3ep[64];
        snprintf(name, sizeof(name), "server%d", i);
        snprintf(pf, sizeof(pf), "%s/%s.port", dir, name);
        snprintf(port, sizeof(port), "%d", srv_port[i]);
        snprintf(s3ep, sizeof(s3ep), "http://127.0.0.1:%d", link[i]);
        /* merges only when the bench asks (OPTIMIZE), and query_log kept in
         * memory: neither writes to S3 in the middle of a timed insert */
        char *const argv[] = {cli,
                              "server",
                              "--port",
                              port,
                              "--port-file",
                              pf,
                              "--s3-endpoint",
                              s3ep,
                              "--warehouse",
                              "s3://ringcache-test/whc/",
                              "--cluster",
                              cluster,
                              "--cluster-secret",
                              "insert-bench-secret",
                              "--page-cache",
                              "256MiB",
                              "--no-background-merges",
                              "--no-query-log-flush",
                              NULL};
        h_proc *p;
        if (h_proc_start(env, &p, name, argv, envx, pf, 0) < 0)
            die(h_last_error());
    }
}

/* The largest memory_usage of the query qid (or of its units) on any server. */
static double servers_peak(const char *qid)
{
    double pk = 0;
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT max(memory_usage) FROM system.query_log WHERE type = 'QueryFinish' AND "
             "(query_id = '%s' OR initial_query_id = '%s')",
             qid, qid);
    for (int i = 0; i < N_SRV; i++) {
        stmt_out o;
        squery(i, sql, NULL, &o);
        double v = atof(o.out);
        if (v > pk)
            pk = v;
    }
    return pk;
}

typedef struct rung {
    const char *name;
    int threads; /* max_insert_threads; 0: ClickHouse's defaults */
    bool no_dedup, no_optimize;
    int servers;    /* 0: `ringcache query`; 1: s3() on the first server; 3: s3Cluster */
    int pdis;       /* with servers == 3 */
    double guide_s; /* the guide's seconds for this rung; 0: none */
    double secs, peak, mb_s, parts_per_m, settled;
    double t[9], bytes; /* each run's seconds; the bytes read */
    long long parts;    /* active parts after an insert */
    bool done;
} rung;

/* The table must hold exactly the generated rows: else the bench stops. */
static void check_rows(const rung *g, int run, long long n, long long rows, const char *what)
{
    if (n == rows)
        return;
    fprintf(stderr, "insert_bench: %s, run %d: %s %lld rows, the source %lld\n", g->name, run + 1,
            what, n, rows);
    die("an insert lost or duplicated rows");
}

/* Runs rung g's run r into a fresh table; the last run also lets the
 * merges settle and fills the rung's figures. */
static void run_rung(rung *g, int k, int r, long long rows, unsigned long long block,
                     const char *create)
{
    char settings[1024], sql[8192], tname[64], buf[2300];
    bool on_srv = g->servers > 0;
    rung_settings(settings, sizeof(settings), g->threads, block, g->no_dedup, g->no_optimize,
                  g->servers == N_SRV ? g->pdis : -1);
    long long parts = 0, settled = 0;
    /* a table of its own per run: no run's block ids meet another's */
    snprintf(tname, sizeof(tname), "posts_%d_%d", k + 1, r + 1);
    snprintf(buf, sizeof(buf), "DROP TABLE IF EXISTS %s", tname);
    if (on_srv)
        squery(0, buf, NULL, NULL);
    else
        query(buf, NULL);
    snprintf(buf, sizeof(buf), "CREATE TABLE %s %s", tname, create);
    if (on_srv) {
        squery(0, buf, NULL, NULL);
        for (int i = 0; i < N_SRV; i++)
            squery(i, "SYSTEM DROP PAGE CACHE", NULL, NULL);
    } else {
        query(buf, NULL);
    }
    snprintf(sql, sizeof(sql), "INSERT INTO %s SELECT * FROM %s('%sposts/posts_*.parquet')%s%s",
             tname, g->servers == N_SRV ? "s3Cluster" : "s3",
             g->servers == N_SRV ? "default', 's3://ringcache-test/" : "s3://ringcache-test/",
             settings[0] ? " SETTINGS " : "", settings);
    stmt_out o;
    if (on_srv) {
        char qid[64];
        snprintf(qid, sizeof(qid), "insert-bench-%d-%d", k + 1, r + 1);
        squery(0, sql, qid, &o);
        check_rows(g, r, o.written, rows, "the summary says written");
        o.peak = servers_peak(qid);
    } else {
        query(sql, &o);
    }
    g->t[r] = o.seconds;
    if (o.peak > g->peak)
        g->peak = o.peak;
    g->bytes = o.bytes_read;
    snprintf(buf, sizeof(buf), "SELECT count() FROM system.parts WHERE table = '%s' AND active",
             tname);
    parts = on_srv ? scount(buf) : count_of(buf);
    char cnt[128];
    snprintf(cnt, sizeof(cnt), "SELECT count() FROM %s", tname);
    check_rows(g, r, on_srv ? scount(cnt) : count_of(cnt), rows, "the table holds");
    fprintf(stderr, "  %s, run %d: %.2f s, %lld parts\n", g->name, r + 1, o.seconds, parts);
    if (r == runs - 1) {
        /* merges settle: one merge per OPTIMIZE until the count stops falling */
        settled = parts;
        char opt[128];
        snprintf(opt, sizeof(opt), "OPTIMIZE TABLE %s", tname);
        for (int m = 0; m < 64 && settled > 1; m++) {
            if (on_srv)
                squery(0, opt, NULL, NULL);
            else
                query(opt, NULL);
            long long now = on_srv ? scount(buf) : count_of(buf);
            if (now >= settled)
                break;
            settled = now;
        }
        check_rows(g, r, on_srv ? scount(cnt) : count_of(cnt), rows,
                   "after the merges the table holds");
    }
    snprintf(buf, sizeof(buf), "DROP TABLE %s", tname);
    if (on_srv)
        squery(0, buf, NULL, NULL);
    else
        query(buf, NULL);
    g->parts = parts;
    if (r < runs - 1)
        return;
    g->secs = bench_median(g->t, runs);
    g->mb_s = g->bytes / 1e6 / g->secs;
    g->parts_per_m = (double)parts * 1e6 / (double)rows;
    g->settled = (double)settled;
    g->done = true;
}

static void fmt_ratio(char *buf, size_t cap, bool ok, double v)
{
    if (ok)
        snprintf(buf, cap, "%.2f", v);
    else
        snprintf(buf, cap, "na");
}

int main(int argc, char **argv)
{
    long long rows = 0;
    double peak_budget = 2.0 * 1073741824.0, bw_mib = 10;
    int latency_us = 2000;
    bool cluster = true;
    const char *scale = "small", *out_dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
            rows = atoll(argv[++i]);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--peak") == 0 && i + 1 < argc)
            peak_budget = atof(argv[++i]);
        else if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc)
            scale = argv[++i];
        else if (strcmp(argv[i], "--latency-us") == 0 && i + 1 < argc)
            latency_us = atoi(argv[++i]);
        else if (strcmp(argv[i], "--bandwidth-mib") == 0 && i + 1 < argc)
            bw_mib = atof(argv[++i]);
        else if (strcmp(argv[i], "--no-cluster") == 0)
            cluster = false;
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out_dir = argv[++i];
        else {
            fprintf(stderr,
                    "usage: insert_bench [--scale tiny|small|medium|large|NAME (small)] [--rows N] "
                    "[--runs R (3)] [--peak BYTES (2 GiB)] [--latency-us U (2000)] "
                    "[--bandwidth-mib B (10)] [--no-cluster] [--out DIR]\n"
                    "scales: tiny 200000 rows, small 1000000, medium 4000000, large 59820000 "
                    "(the guide's); --rows overrides, and a NAME of its own names the results\n");
            return 2;
        }
    }
    long long preset = !strcmp(scale, "tiny")     ? 200000
                       : !strcmp(scale, "small")  ? 1000000
                       : !strcmp(scale, "medium") ? 4000000
                       : !strcmp(scale, "large")  ? 59820000
                                                  : 0;
    char scale_buf[32], out_buf[4096];
    if (!rows && !preset)
        die("--scale is tiny, small, medium or large (or give --rows)");
    if (rows && preset && rows != preset) {
        bench_scale_name(rows, scale_buf, sizeof(scale_buf));
        scale = scale_buf;
    }
    if (!rows)
        rows = preset;
    if (rows < 10000 || runs < 1 || runs > 9 || peak_budget < 16.0 * 1048576.0)
        die("--rows >= 10000, --runs 1..9 and --peak >= 16 MiB");
    if (latency_us < 0 || bw_mib < 0)
        die("--latency-us and --bandwidth-mib are not negative (0: no cap)");
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
        {.name = "1 default", .pdis = -1, .guide_s = 191.692},
        {.name = "2 tuned (T = half the cores)", .threads = t_half, .pdis = -1, .guide_s = 128.566},
        {.name = "3 T = all the cores (guide: a 2x node)",
         .threads = t_all,
         .pdis = -1,
         .guide_s = 67.294},
        {.name = "4 tuned, insert_deduplicate = 0",
         .threads = t_half,
         .no_dedup = true,
         .pdis = -1},
        {.name = "5 and optimize_on_insert = 0",
         .threads = t_half,
         .no_dedup = true,
         .no_optimize = true,
         .pdis = -1},
        {.name = "6 one server, tuned, s3() (guide: rung 2)",
         .threads = t_half,
         .servers = 1,
         .pdis = -1,
         .guide_s = 128.566},
        {.name = "7 3 servers, s3Cluster, pdis = 0",
         .threads = t_half,
         .servers = N_SRV,
         .pdis = 0,
         .guide_s = 171.202},
        {.name = "8 3 servers, pdis = 2",
         .threads = t_half,
         .servers = N_SRV,
         .pdis = 2,
         .guide_s = 54.571},
        {.name = "9 and insert_deduplicate = 0",
         .threads = t_half,
         .no_dedup = true,
         .servers = N_SRV,
         .pdis = 2,
         .guide_s = 52.992},
        {.name = "10 and optimize_on_insert = 0",
         .threads = t_half,
         .no_dedup = true,
         .no_optimize = true,
         .servers = N_SRV,
         .pdis = 2,
         .guide_s = 49.688},
    };
    int nr = (int)(sizeof(ladder) / sizeof(ladder[0]));
    const char *create =
        "(Id Int64, PostTypeId Int32, CreationDate DateTime64(6), Score Int32, "
        "ViewCount Nullable(Int32), OwnerUserId Nullable(Int64), OwnerDisplayName String, "
        "Tags String, Title String, Body String) ENGINE = MergeTree ORDER BY (PostTypeId, "
        "CreationDate)";
    if (cluster) {
        start_servers(h_s3model_port(model), latency_us, bw_mib);
        fprintf(stderr,
                "three servers, the cluster default, each through its own link to S3 (%d us "
                "one way, %.0f MiB/s)\n",
                latency_us, bw_mib);
    }
    /* the runs interleaved: run r of every rung, then run r + 1 */
    for (int r = 0; r < runs; r++)
        for (int k = 0; k < nr; k++)
            if (!ladder[k].servers || cluster)
                run_rung(&ladder[k], k, r, rows, block, create);
    for (int k = 0; k < nr; k++) {
        rung *g = &ladder[k];
        if (g->done)
            fprintf(stderr,
                    "%-44s %.2f s  %.0f rows/s  %.1f MB/s  peak %.1f MiB  %lld parts "
                    "(%.0f after merges)\n",
                    g->name, g->secs, (double)rows / g->secs, g->mb_s, g->peak / 1048576.0,
                    g->parts, g->settled);
    }

    char table[12288], settings[1024];
    size_t o = (size_t)snprintf(
        table, sizeof(table),
        "| rung | settings | seconds | rows/s | MB/s | peak (MiB) | parts per 1M rows | parts "
        "after merges | ours vs rung 1 | guide's seconds | guide vs its rung 1 | ours vs one server "
        "(rung 6) | guide vs its tuned node (rung 2) |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int k = 0; k < nr && o < sizeof(table); k++) {
        rung *g = &ladder[k];
        if (!g->done)
            continue;
        char gs[32] = "", gr[32] = "", o6[32] = "", g2[32] = "";
        if (g->guide_s > 0) {
            snprintf(gs, sizeof(gs), "%.1f", g->guide_s);
            snprintf(gr, sizeof(gr), "%.2f", ladder[0].guide_s / g->guide_s);
        }
        if (g->servers && ladder[5].done) {
            snprintf(o6, sizeof(o6), "%.2f", ladder[5].secs / g->secs);
            snprintf(g2, sizeof(g2), "%.2f", ladder[1].guide_s / g->guide_s);
        }
        rung_settings(settings, sizeof(settings), g->threads, block, g->no_dedup, g->no_optimize,
                      g->servers == N_SRV ? g->pdis : -1);
        if (!settings[0])
            snprintf(settings, sizeof(settings), "ClickHouse's defaults");
        o += (size_t)snprintf(table + o, sizeof(table) - o,
                              "| %s | %s | %.2f | %.0f | %.1f | %.1f | %.2f | %.0f | %.2f | %s | "
                              "%s | %s | %s |\n",
                              g->name, settings, g->secs, (double)rows / g->secs, g->mb_s,
                              g->peak / 1048576.0, g->parts_per_m, g->settled,
                              ladder[0].secs / g->secs, gs, gr, o6, g2);
    }
    printf("\n%s", table);
    bool c = ladder[7].done;
    char b[32], e[32], links[512];
    fmt_ratio(b, sizeof(b), c, ladder[5].secs / ladder[7].secs);
    fmt_ratio(e, sizeof(e), c, ladder[6].secs / ladder[7].secs);
    if (c)
        snprintf(links, sizeof(links),
                 "Rungs 6-10: three `ringcache server` processes, the cluster `default`, each "
                 "reaching S3 through its own link (%d us one way, %.0f MiB/s), their peak the "
                 "largest of any one server's (system.query_log)",
                 latency_us, bw_mib);
    else
        snprintf(links, sizeof(links),
                 "The three-server rungs were not run (--no-cluster): pdis2_3_vs_1 and "
                 "pdis2_vs_pdis0 are na");
    if (!c)
        fprintf(stderr, "insert_bench: %s\n", links);
    char line[512];
    snprintf(line, sizeof(line),
             "insert: tuned_vs_default=%.2f pdis2_3_vs_1=%s nodedup_vs_tuned=%.2f "
             "mem_vs_formula=%.2f pdis2_vs_pdis0=%s",
             ladder[0].secs / ladder[1].secs, b, ladder[1].secs / ladder[3].secs,
             ladder[1].peak / peak_budget, e);

    char path[4300], dat[4300], gp[4300], png[4300];
    mkdir(out_dir, 0755);
    snprintf(path, sizeof(path), "%s/insert-%s.md", out_dir, scale);
    snprintf(dat, sizeof(dat), "%s/insert-%s.dat", out_dir, scale);
    snprintf(gp, sizeof(gp), "%s/insert-%s.gp", out_dir, scale);
    snprintf(png, sizeof(png), "%s/insert-%s.png", out_dir, scale);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(
            f,
            "# the S3 insert ladder, %lld SO-posts rows (%ld cores here; the guide: 59.82M "
            "rows on 8-vCPU nodes)\n\nmin_insert_block_size_bytes = %.0f / (3 x %d) = %llu. "
            "Time is the median of %d run(s), interleaved (run r of every rung, then r + 1), each into a fresh table, every run checked to "
            "load exactly %lld rows. Rungs 1-5: `ringcache query` processes on the S3 model. "
            "%s.\n\n%s\n%s\n",
            rows, cores, peak_budget, t_half, block, runs, rows, links, table, line);
        fclose(f);
    }
    f = fopen(dat, "w");
    if (f) {
        for (int k = 0; k < nr; k++)
            if (ladder[k].done)
                fprintf(f, "\"%s\" %.3f %.3f\n", ladder[k].name, ladder[0].secs / ladder[k].secs,
                        ladder[k].guide_s > 0 ? ladder[0].guide_s / ladder[k].guide_s : 0);
        fclose(f);
        f = fopen(gp, "w");
        if (f) {
            fprintf(f,
                    "set terminal png size 1400,560\nset output '%s'\n"
                    "set title 'INSERT ladder: speed relative to each side''s default, %lld rows'\n"
                    "set style data histograms\nset style histogram cluster gap 1\n"
                    "set style fill solid 0.8\nset xtics rotate by -25 noenhanced font ',9'\n"
                    "set bmargin 8\nset key top left\nset ylabel 'speed vs rung 1'\n"
                    "set yrange [0:*]\n"
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
