/* SPDX-License-Identifier: Apache-2.0
 *
 * test_dist_query.c: the initiator of a distributed query (dist_query.h)
 * over the real S3 server (harness), with gen.mjs's Parquet and CSV files
 * uploaded to it, and a transport that runs each unit in this process as a
 * worker server would (its own eng_ctx with the unit), scripted to fail:
 * every DuckDB-oracle query rewritten to s3Cluster('test', ...) equals the
 * single run of s3(); a server that dies mid-query (ten scripted points),
 * one that stalls past the deadline, and servers down at the start
 * (skip_unavailable_shards) still give the right answer with every unit
 * counted once; with every server dead the query fails naming each. Skips
 * (77) without node, @duckdb/node-api or s3rver.
 */
#include "dist_query.h"
#include "duck_compare.h"
#include "eng.h"
#include "s3_test_util.h"

#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <cmocka.h>

static h_env *env;
static h_s3 *s3;
static s3_config cfg;
static char dir[4096];
static const char *bucket = H_S3_DEFAULT_BUCKET;

static const char *const members[] = {"127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9003"};
static const eng_cluster cluster = {.name = "test", .members = members, .n_members = 3, .local = 0};

/* ---- S3 access for the engine ---- */

static eng_ctx base_ctx(FILE *out)
{
    return (eng_ctx){.out = out,
                     .format = ENG_FMT_TSV,
                     .max_threads = 2,
                     .list_s3 = rs_s3_list,
                     .s3_impl = &cfg,
                     .open_s3 = rs_s3_open_key,
                     .clusters = &cluster,
                     .n_clusters = 1};
}

/* ---- the transport: units run here, scripted to fail ---- */

typedef struct script {
    _Atomic int ran[3]; /* units each server started */
    int die_after[3];   /* after this many units the server is dead (-1: never) */
    int stall_at[3];    /* its unit number k stalls until cancelled (-1: never) */
    bool down[3];       /* down at the start (ping fails) */
    int kill_at;        /* the server running the query's unit number k dies then (-1: none) */
    _Atomic int handed; /* units handed to any server so far */
    _Atomic int killed; /* the server that died that way + 1 (0: none) */
    _Atomic int cancelled;
    int batch; /* dist_opts.batch (0: the initiator's choice) */
} script;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int t_run_unit(void *arg, int server, const char *member, const char *sql, size_t len,
                      const eng_unit *u, const uint32_t *unit_ids, int n_units,
                      const _Atomic int *stop, ew_buf *out, char *err, size_t errlen)
{
    script *sc = arg;
    int k = atomic_fetch_add(&sc->ran[server], 1);
    if (atomic_fetch_add(&sc->handed, 1) == sc->kill_at)
        atomic_store(&sc->killed, server + 1);
    if (sc->down[server] || (sc->die_after[server] >= 0 && k >= sc->die_after[server]) ||
        atomic_load(&sc->killed) == server + 1) {
        snprintf(err, errlen, "connection to %s reset", member);
        return -ECONNRESET;
    }
    if (k == sc->stall_at[server]) {
        for (int i = 0; i < 60000 / 5 && !atomic_load(stop); i++)
            sleep_ms(5);
        atomic_fetch_add(&sc->cancelled, 1);
        snprintf(err, errlen, "cancelled");
        return -ECANCELED;
    }
    eng_ctx ctx = base_ctx(NULL);
    ctx.max_threads = 1;
    ctx.unit = u;
    ctx.n_unit = n_units;
    eng_pstate *ps;
    int rc = eng_pstate_open(&ctx, sql, len, &ps, err, errlen);
    if (rc == 0)
        rc = eng_pstate_run(ps, err, errlen);
    if (rc == 0)
        rc = dist_state_encode(ps, unit_ids[0], out);
    eng_pstate_destroy(&ps);
    return rc;
}

static int t_ping(void *arg, int server, const char *member, char *err, size_t errlen)
{
    script *sc = arg;
    if (sc->down[server]) {
        snprintf(err, errlen, "connection to %s refused", member);
        return -ECONNREFUSED;
    }
    return 0;
}

static void script_init(script *sc)
{
    memset(sc, 0, sizeof(*sc));
    for (int i = 0; i < 3; i++)
        sc->die_after[i] = sc->stall_at[i] = -1;
    sc->kill_at = -1;
}

/* ---- runs ---- */

static int run_single(const char *sql, char **out, char *err, size_t errlen)
{
    size_t len = 0;
    FILE *f = open_memstream(out, &len);
    assert_non_null(f);
    eng_ctx ctx = base_ctx(f);
    int rc = eng_run(&ctx, sql, strlen(sql), NULL, NULL, err, errlen);
    fclose(f);
    return rc;
}

static int run_cluster(const char *sql, script *sc, uint64_t deadline_ms, char **out,
                       dist_report *rep, eng_result *res, char *err, size_t errlen)
{
    size_t len = 0;
    FILE *f = open_memstream(out, &len);
    assert_non_null(f);
    eng_ctx ctx = base_ctx(f);
    dist_transport tr = {t_run_unit, t_ping, sc};
    /* small ranges, so the 7 row groups of posts.parquet spread */
    dist_opts o = {.split_bytes = 1, .grace_ms = 5, .deadline_ms = deadline_ms, .batch = sc->batch};
    int rc = dist_query_run(&ctx, sql, strlen(sql), &tr, &o, res, rep, err, errlen);
    fclose(f);
    return rc;
}

/* sql with file('DIR/x') made s3Cluster('test', 's3://bucket/x') (or s3(...)). */
static char *rewrite(const char *sql, bool to_cluster)
{
    char from[4200], to[256];
    snprintf(from, sizeof(from), "file('%s/", dir);
    snprintf(to, sizeof(to), "%s('%ss3://%s/", to_cluster ? "s3Cluster" : "s3",
             to_cluster ? "test', '" : "", bucket);
    size_t cap = strlen(sql) * 2 + 1024, o = 0;
    char *r = malloc(cap);
    assert_non_null(r);
    for (const char *p = sql; *p;) {
        if (strncmp(p, from, strlen(from)) == 0) {
            o += (size_t)snprintf(r + o, cap - o, "%s", to);
            p += strlen(from);
        } else {
            r[o++] = *p++;
        }
    }
    r[o] = 0;
    return r;
}

static void upload_dir(const char *d, const char *prefix)
{
    DIR *dd = opendir(d);
    assert_non_null(dd);
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &cfg), 0);
    for (struct dirent *e; (e = readdir(dd));) {
        if (e->d_name[0] == '.')
            continue;
        char p[8192], key[8192];
        snprintf(p, sizeof(p), "%s/%s", d, e->d_name);
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        snprintf(key, sizeof(key), "%s%s", prefix, e->d_name);
        if (S_ISDIR(st.st_mode)) {
            strcat(key, "/");
            upload_dir(p, key);
            continue;
        }
        char *data = dc_slurp(p);
        assert_non_null(data);
        s3_sync_put_args a = {
            .bucket = bucket, .key = key, .fd = -1, .data = data, .size = (uint64_t)st.st_size};
        s3_error er = {0};
        assert_int_equal(s3_sync_put(s, &a, NULL, &er), 0);
        free(data);
    }
    s3_sync_destroy(&s);
    closedir(dd);
}

static int setup(void **state)
{
    (void)state;
    if (dc_setup(&env, "test_dist_query", dir, sizeof(dir)) < 0)
        return -1;
    s3 = t_start_s3(env, 3);
    t_s3_config(&cfg, h_s3_endpoint(s3), NULL, NULL);
    upload_dir(dir, "");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (s3)
        assert_int_equal(h_proc_stop(h_s3_proc(s3), 5000), 0);
    h_env_destroy(&env);
    return 0;
}

static const char *seed_sql(char *buf, size_t cap)
{
    snprintf(buf, cap,
             "SELECT OwnerDisplayName, count() AS num_posts, avg(Score), uniqExact(PostTypeId) "
             "FROM s3Cluster('test', 's3://%s/posts.parquet') WHERE OwnerDisplayName NOT IN "
             "('', 'anon') GROUP BY OwnerDisplayName ORDER BY num_posts DESC, OwnerDisplayName "
             "LIMIT 5",
             bucket);
    return buf;
}

static void test_s3cluster_queries_equal_single_server(void **state)
{
    (void)state;
    char *cases = dc_cases(dir);
    int n = 0, failed = 0, skipped = 0, not_dist = 0;
    for (char *line = strtok(cases, "\n"); line; line = strtok(NULL, "\n")) {
        dc_case c;
        dc_case_parse(line, &c);
        const char *name = c.name, *flags = c.flags;
        char *sq = rewrite(c.sql, false), *cq = rewrite(c.sql, true);
        char *single = NULL, *got = NULL, err[ENG_MSG_MAX];
        if (strcmp(sq, c.sql) == 0 || run_single(sq, &single, err, sizeof(err)) < 0) {
            skipped++; /* not over one of the files (or not readable through s3()) */
        } else {
            script sc;
            script_init(&sc);
            dist_report rep;
            eng_result res;
            int rc = run_cluster(cq, &sc, 60000, &got, &rep, &res, err, sizeof(err));
            if (rc == -ENOTSUP) {
                /* s3Cluster below the top (a subquery in FROM): not
                 * distributed, the caller runs it alone */
                fprintf(stderr, "%s: not distributed (%s)\n", name, err);
                not_dist++;
                n--;
            } else if (rc < 0) {
                fprintf(stderr, "%s: s3Cluster failed: %s\n  %s\n", name, err, cq);
                failed++;
            } else if (!dc_same_result(name, got, single, strcmp(flags, "sorted") == 0)) {
                fprintf(stderr, "  query: %s\n", cq);
                failed++;
            }
            n++;
        }
        free(single);
        free(got);
        free(sq);
        free(cq);
    }
    free(cases);
    fprintf(stderr,
            "%d queries through s3Cluster over 3 servers, %d mismatches, %d not over "
            "the files, %d not distributed\n",
            n, failed, skipped, not_dist);
    assert_true(not_dist <= 2); /* a subquery's s3Cluster only */
    assert_true(n >= 30);
    assert_int_equal(failed, 0);
}

static void test_killed_and_stalled_workers_still_answer(void **state)
{
    (void)state;
    char sql[2048], err[ENG_MSG_MAX];
    seed_sql(sql, sizeof(sql));
    char *want = NULL;
    char *ssql = rewrite(sql, false);
    /* the same query on one server: s3() */
    char *one = strstr(sql, "s3Cluster('test', ");
    assert_non_null(one);
    char single_sql[2048];
    snprintf(single_sql, sizeof(single_sql), "%.*ss3(%s", (int)(one - sql), sql,
             one + strlen("s3Cluster('test', "));
    free(ssql);
    assert_int_equal(run_single(single_sql, &want, err, sizeof(err)), 0);
    int ok = 0, killed = 0;
    uint64_t rows_single = 0;
    {
        eng_result r;
        char *o = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&o, &len);
        eng_ctx ctx = base_ctx(f);
        assert_int_equal(eng_run(&ctx, single_sql, strlen(single_sql), NULL, &r, err, sizeof(err)),
                         0);
        fclose(f);
        free(o);
        rows_single = r.rows_read;
    }
    /* ten scripted deaths: the server that is handed the query's request
     * number i % 4 dies then (its earlier results counted, that request's
     * units and its queue go to the others); requests of up to two units
     * (7 units: 4 requests at least), so a death loses a whole batch,
     * counted all or none */
    for (int i = 0; i < 10; i++) {
        script sc;
        script_init(&sc);
        sc.kill_at = i % 4;
        sc.batch = 2;
        char *got = NULL;
        dist_report rep;
        eng_result res;
        int rc = run_cluster(sql, &sc, 60000, &got, &rep, &res, err, sizeof(err));
        if (rc < 0)
            fprintf(stderr, "kill %d: %s\n", i, err);
        assert_int_equal(rc, 0);
        char *w = strdup(want);
        if (dc_same_result("killed worker", got, w, false))
            ok++;
        free(w);
        free(got);
        int dead = atomic_load(&sc.killed) - 1;
        assert_true(dead >= 0);
        for (int s = 0; s < 3; s++)
            assert_int_equal(rep.lost[s], s == dead);
        killed++;
        int sum = 0;
        for (int s = 0; s < 3; s++)
            sum += rep.units_run[s];
        assert_int_equal(sum, rep.units);             /* every unit once */
        assert_int_equal(res.rows_read, rows_single); /* read rows counted once */
    }
    fprintf(stderr, "killed_worker_ok=%d/10 (%d of them lost a server mid-query)\n", ok, killed);
    assert_int_equal(ok, 10);
    assert_int_equal(killed, 10);
    /* a stall past the deadline: its unit goes elsewhere, its call is cancelled */
    script sc;
    script_init(&sc);
    sc.stall_at[1] = 0;
    char *got = NULL;
    dist_report rep;
    eng_result res;
    /* a deadline far above any unit's time, even under a sanitizer */
    assert_int_equal(run_cluster(sql, &sc, 10000, &got, &rep, &res, err, sizeof(err)), 0);
    assert_true(rep.lost[1]);
    assert_int_equal(atomic_load(&sc.cancelled), 1);
    char *w = strdup(want);
    assert_true(dc_same_result("stalled worker", got, w, false));
    free(w);
    free(got);
    free(want);
}

static void test_unavailable_servers(void **state)
{
    (void)state;
    char sql[2048], err[ENG_MSG_MAX];
    seed_sql(sql, sizeof(sql));
    script sc;
    script_init(&sc);
    sc.down[2] = true;
    char *got = NULL;
    dist_report rep;
    eng_result res;
    assert_int_equal(run_cluster(sql, &sc, 60000, &got, &rep, &res, err, sizeof(err)),
                     -EHOSTUNREACH);
    assert_non_null(strstr(err, "127.0.0.1:9003"));
    assert_non_null(strstr(err, "skip_unavailable_shards"));
    free(got);
    char sql2[2200];
    snprintf(sql2, sizeof(sql2), "%s SETTINGS skip_unavailable_shards = 1", sql);
    script_init(&sc);
    sc.down[2] = true;
    got = NULL;
    assert_int_equal(run_cluster(sql2, &sc, 60000, &got, &rep, &res, err, sizeof(err)), 0);
    assert_true(rep.skipped[2]);
    assert_int_equal(rep.units_run[2], 0);
    assert_int_equal(rep.units_run[0] + rep.units_run[1], rep.units);
    free(got);
    /* every server dies: the query fails naming each */
    script_init(&sc);
    for (int i = 0; i < 3; i++)
        sc.die_after[i] = i == 0 ? 1 : 0;
    got = NULL;
    assert_int_equal(run_cluster(sql, &sc, 60000, &got, &rep, &res, err, sizeof(err)),
                     -EHOSTUNREACH);
    for (int i = 0; i < 3; i++)
        assert_non_null(strstr(err, members[i]));
    assert_non_null(strstr(err, "every server of cluster 'test' failed"));
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_s3cluster_queries_equal_single_server),
        cmocka_unit_test(test_killed_and_stalled_workers_still_answer),
        cmocka_unit_test(test_unavailable_servers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
