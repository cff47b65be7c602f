/* SPDX-License-Identifier: Apache-2.0
 *
 * test_engine_dist.c: the scheduler of distributed units (dist_plan.h) over
 * made-up units, and the bounded reader of eng_wire.h: pre-assignment by
 * rendezvous hashing is stable and moves only a lost server's files; a
 * server takes its own queue first and steals only after the grace, from the
 * tail of the longest queue; a lost or stalled server's units go to the
 * others and each unit's first result is the only one that counts; counts
 * the bytes left cannot hold are refused before allocation. Also the SQL
 * face: s3Cluster's arguments and its cluster's lookup, the distributed
 * settings, and system.clusters from the clusters the process knows.
 */
#include "dist_cluster.h"
#include "dist_plan.h"
#include "eng.h"
#include "eng_wire.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static const char *const servers[] = {"10.0.0.1:8123", "10.0.0.2:8123", "10.0.0.3:8123"};

static void make_units(dist_units *us, int n)
{
    us->u = calloc((size_t)n, sizeof(dist_unit));
    assert_non_null(us->u);
    us->n = n;
    for (int i = 0; i < n; i++) {
        char p[64];
        snprintf(p, sizeof(p), "posts/part-%03d.parquet", i);
        us->u[i].path = strdup(p);
        us->u[i].rg_begin = us->u[i].rg_end = -1;
        us->u[i].bytes = 1000;
    }
}

static void test_rendezvous_is_stable_and_moves_only_the_lost(void **state)
{
    (void)state;
    dist_units us;
    make_units(&us, 300);
    int per[3] = {0}, moved = 0;
    bool live[3] = {true, false, true};
    for (int i = 0; i < us.n; i++) {
        int h = dist_rendezvous(servers, NULL, 3, us.u[i].path);
        assert_int_equal(h, dist_rendezvous(servers, NULL, 3, us.u[i].path));
        per[h]++;
        int h2 = dist_rendezvous(servers, live, 3, us.u[i].path);
        assert_int_not_equal(h2, 1);
        if (h != 1)
            assert_int_equal(h2, h); /* only server 1's files move */
        else
            moved++;
    }
    for (int s = 0; s < 3; s++)
        assert_true(per[s] > 60); /* about a third each */
    assert_int_equal(moved, per[1]);
    dist_units_free(&us);
}

static void test_own_queue_first_then_steal_after_grace(void **state)
{
    (void)state;
    dist_units us;
    make_units(&us, 30);
    dist_sched *s;
    assert_int_equal(dist_sched_create(&s, &us, servers, 3, 100), 0);
    /* server 0 drains its own queue: every unit it gets is its own */
    int own = 0;
    for (int u = 0; u < us.n; u++)
        own += dist_sched_home(s, u) == 0;
    assert_true(own > 0);
    for (int k = 0; k < own; k++) {
        int u = dist_sched_next(s, 0, 1000);
        assert_true(u >= 0);
        assert_int_equal(dist_sched_home(s, u), 0);
        assert_true(dist_sched_complete(s, u, 0));
    }
    /* empty: it waits for the grace before it steals */
    assert_int_equal(dist_sched_next(s, 0, 1000), DIST_SCHED_WAIT);
    assert_int_equal(dist_sched_next(s, 0, 1099), DIST_SCHED_WAIT);
    int q1 = 0, q2 = 0;
    for (int u = 0; u < us.n; u++) {
        q1 += dist_sched_home(s, u) == 1;
        q2 += dist_sched_home(s, u) == 2;
    }
    int stolen = dist_sched_next(s, 0, 1100);
    assert_true(stolen >= 0);
    /* from the longest queue, and from its tail: the last unit of that server */
    int victim = q1 >= q2 ? 1 : 2, last = -1;
    for (int u = 0; u < us.n; u++)
        if (dist_sched_home(s, u) == victim)
            last = u;
    assert_int_equal(stolen, last);
    /* a result from a server that does not hold the unit does not count */
    assert_false(dist_sched_complete(s, stolen, victim));
    assert_true(dist_sched_complete(s, stolen, 0));
    assert_false(dist_sched_complete(s, stolen, 0)); /* counted once */
    dist_sched_destroy(&s);
    dist_units_free(&us);
}

/* A batch: the rest from the server's own queue only, its result counted
 * all or none (a server lost with a batch in flight counts none of it). */
static void test_batch_own_queue_all_or_none(void **state)
{
    (void)state;
    dist_units us;
    make_units(&us, 30);
    dist_sched *s;
    assert_int_equal(dist_sched_create(&s, &us, servers, 3, 100), 0);
    int b[4];
    for (int k = 0; k < 4; k++) {
        b[k] = dist_sched_next_own(s, 1, 1000);
        assert_true(b[k] >= 0);
        assert_int_equal(dist_sched_home(s, b[k]), 1);
    }
    assert_true(dist_sched_complete_n(s, b, 2, 1));
    assert_false(dist_sched_complete_n(s, b, 2, 1)); /* counted once */
    /* a batch with a unit already done elsewhere counts none of it */
    assert_true(dist_sched_complete(s, b[3], 1));
    assert_false(dist_sched_complete_n(s, b + 2, 2, 1));
    assert_true(dist_sched_complete(s, b[2], 1));
    /* server 2's batch in flight when it is lost: none of it counts */
    int c[2];
    c[0] = dist_sched_next_own(s, 2, 1000);
    c[1] = dist_sched_next_own(s, 2, 1000);
    assert_true(c[0] >= 0 && c[1] >= 0);
    assert_true(dist_sched_lose(s, 2) > 0);
    assert_false(dist_sched_complete_n(s, c, 2, 2));
    /* a lost server's own queue gives nothing */
    assert_int_equal(dist_sched_next_own(s, 2, 1000), DIST_SCHED_WAIT);
    /* an empty own queue never steals, though server 1's still has units */
    int got = 0;
    while (got <= us.n && dist_sched_next_own(s, 0, 1000) >= 0)
        got++;
    assert_true(got > 0 && got < us.n);
    assert_int_equal(dist_sched_next_own(s, 0, 999999), DIST_SCHED_WAIT);
    assert_true(dist_sched_next_own(s, 1, 1000) >= 0);
    dist_sched_destroy(&s);
    dist_units_free(&us);
}

/* Runs every unit to the end, servers taking turns; returns results that
 * counted. */
static int drain(dist_sched *s, int n_servers, uint64_t now)
{
    int counted = 0;
    for (int round = 0; round < 10000 && !dist_sched_done(s); round++) {
        for (int srv = 0; srv < n_servers; srv++) {
            int u = dist_sched_next(s, srv, now);
            if (u >= 0)
                counted += dist_sched_complete(s, u, srv);
        }
        now++;
    }
    return counted;
}

static void test_lost_server_units_go_to_others_counted_once(void **state)
{
    (void)state;
    dist_units us;
    make_units(&us, 40);
    dist_sched *s;
    assert_int_equal(dist_sched_create(&s, &us, servers, 3, 0), 0);
    /* server 1 finishes one unit, takes another, then dies */
    int a = dist_sched_next(s, 1, 1), b = dist_sched_next(s, 1, 1);
    assert_true(a >= 0 && b >= 0);
    assert_true(dist_sched_complete(s, a, 1));
    int q1 = 0;
    for (int u = 0; u < us.n; u++)
        q1 += dist_sched_home(s, u) == 1;
    assert_int_equal(dist_sched_lose(s, 1), q1 - 1); /* its queue and its unit in flight */
    assert_int_equal(dist_sched_live(s), 2);
    assert_int_equal(dist_sched_next(s, 1, 2), DIST_SCHED_LOST);
    assert_false(dist_sched_complete(s, b, 1)); /* its late result is dropped */
    int counted = drain(s, 3, 3);
    assert_true(dist_sched_done(s));
    assert_int_equal(counted + 1, us.n); /* a counted once, the rest by the others */
    assert_int_equal(dist_sched_count(s, 1), 1);
    assert_int_equal(dist_sched_count(s, 0) + dist_sched_count(s, 2), us.n - 1);
    assert_int_equal(dist_sched_next(s, 0, 4), DIST_SCHED_DONE);
    dist_sched_destroy(&s);
    dist_units_free(&us);
}

static void test_stalled_server_is_given_up(void **state)
{
    (void)state;
    dist_units us;
    make_units(&us, 12);
    dist_sched *s;
    assert_int_equal(dist_sched_create(&s, &us, servers, 3, 0), 0);
    int u = dist_sched_next(s, 2, 100);
    assert_true(u >= 0);
    assert_int_equal(dist_sched_expire(s, 5000, 10000), 0); /* within the deadline */
    assert_int_equal(dist_sched_expire(s, 10101, 10000), 1);
    assert_int_equal(dist_sched_live(s), 2);
    assert_false(dist_sched_complete(s, u, 2));
    assert_int_equal(drain(s, 3, 10200), us.n);
    /* every server lost: nothing is handed out, the query cannot finish */
    dist_sched *t;
    assert_int_equal(dist_sched_create(&t, &us, servers, 3, 0), 0);
    for (int srv = 0; srv < 3; srv++)
        dist_sched_lose(t, srv);
    assert_int_equal(dist_sched_live(t), 0);
    assert_false(dist_sched_done(t));
    for (int srv = 0; srv < 3; srv++)
        assert_int_equal(dist_sched_next(t, srv, 1), DIST_SCHED_LOST);
    dist_sched_destroy(&t);
    dist_sched_destroy(&s);
    dist_units_free(&us);
}

static void test_wire_reader_bounds_counts_before_allocation(void **state)
{
    (void)state;
    ew_buf w;
    ew_init(&w, 16);
    ew_u32(&w, 1000000); /* a count of a million 8-byte values */
    ew_u64(&w, 7);
    assert_int_equal(w.err, 0);
    er_buf r;
    er_init(&r, w.p, w.n);
    assert_int_equal(er_count(&r, 8, UINT32_MAX), 0);
    assert_int_equal(r.err, -EBADMSG);
    er_init(&r, w.p, w.n);
    uint32_t l;
    assert_null(er_bytes(&r, 100, &l)); /* a length above its bound */
    assert_int_equal(r.err, -EBADMSG);
    /* the writer's cap */
    ew_u64(&w, 1);
    assert_int_equal(w.err, -E2BIG);
    ew_free(&w);
    ew_init(&w, 0);
    ew_bytes(&w, "abc", 3);
    ew_f64(&w, -2.5);
    er_init(&r, w.p, w.n);
    const uint8_t *p = er_bytes(&r, 3, &l);
    assert_non_null(p);
    assert_int_equal(l, 3);
    assert_memory_equal(p, "abc", 3);
    assert_true(er_f64(&r) == -2.5);
    assert_int_equal(er_left(&r), 0);
    assert_int_equal(er_u8(&r), 0);
    assert_int_equal(r.err, -EBADMSG); /* past the end */
    ew_free(&w);
}

static const char *const members[] = {"127.0.0.1:8123", "[::1]:8124", "compute-2.svc:8125"};
static const uint32_t errors[] = {0, 3, 0};
static const eng_cluster clusters[] = {
    {.name = "default", .members = members, .n_members = 3, .local = 0, .errors = errors},
    {.name = "solo", .members = members + 2, .n_members = 1, .local = -1},
};

/* Runs sql with the clusters above and TSV output; rc, *out (malloc'ed), err. */
static int run(const char *sql, char **out, char *err, size_t errlen)
{
    size_t len = 0;
    FILE *f = open_memstream(out, &len);
    assert_non_null(f);
    eng_ctx ctx = {
        .out = f, .format = ENG_FMT_TSV, .max_threads = 1, .clusters = clusters, .n_clusters = 2};
    int rc = eng_run(&ctx, sql, strlen(sql), NULL, NULL, err, errlen);
    fclose(f);
    return rc;
}

static void expect_error(const char *sql, const char *a, const char *b)
{
    char *out = NULL, err[ENG_MSG_MAX] = "";
    int rc = run(sql, &out, err, sizeof(err));
    free(out);
    if (rc >= 0 || !strstr(err, a) || (b && !strstr(err, b)))
        fprintf(stderr, "%s\n  gave %d: %s\n", sql, rc, err);
    assert_true(rc < 0);
    assert_non_null(strstr(err, a));
    if (b)
        assert_non_null(strstr(err, b));
}

static void test_system_clusters_lists_every_member(void **state)
{
    (void)state;
    char *out = NULL, err[ENG_MSG_MAX];
    assert_int_equal(run("SELECT cluster, shard_num, replica_num, host_name, port, is_local, "
                         "errors_count FROM system.clusters ORDER BY cluster, shard_num",
                         &out, err, sizeof(err)),
                     0);
    assert_string_equal(out, "default\t1\t1\t127.0.0.1\t8123\t1\t0\n"
                             "default\t2\t1\t::1\t8124\t0\t3\n"
                             "default\t3\t1\tcompute-2.svc\t8125\t0\t0\n"
                             "solo\t1\t1\tcompute-2.svc\t8125\t0\t0\n");
    free(out);
}

static void test_s3cluster_arguments_and_settings(void **state)
{
    (void)state;
    expect_error("SELECT count() FROM s3Cluster('nope', 's3://bucket/x/*.parquet')",
                 "cluster 'nope' is not configured", "system.clusters");
    expect_error("SELECT count() FROM s3Cluster('s3://bucket/x/*.parquet')",
                 "s3Cluster takes the cluster's name and an S3 URL", NULL);
    expect_error("SELECT count() FROM s3Cluster(default, 's3://bucket/x/*.parquet')",
                 "s3Cluster takes the cluster's name", NULL);
    /* a known cluster goes on to s3()'s arguments and S3 access */
    expect_error("SELECT count() FROM s3Cluster('default', 's3://bucket/x/*.parquet', 'k', '')",
                 "s3()'s secret is empty", NULL);
    expect_error("SELECT count() FROM s3Cluster('default', 's3://bucket/x/*.parquet')",
                 "no S3 client configured", NULL);
    expect_error("SELECT 1 FROM system.clusters SETTINGS parallel_distributed_insert_select = 3",
                 "parallel_distributed_insert_select is 0 (this server inserts), 1 or 2", NULL);
    expect_error("SELECT 1 FROM system.clusters SETTINGS skip_unavailable_shards = 2",
                 "skip_unavailable_shards is 0 or 1", NULL);
    expect_error("SELECT 1 FROM system.clusters SETTINGS parallel_distributed_insert_selct = 2",
                 "did you mean 'parallel_distributed_insert_select'?", NULL);
    char *out = NULL, err[ENG_MSG_MAX];
    assert_int_equal(run("SELECT count() FROM system.clusters SETTINGS "
                         "parallel_distributed_insert_select = 2, skip_unavailable_shards = true",
                         &out, err, sizeof(err)),
                     0);
    assert_string_equal(out, "4\n");
    free(out);
    out = NULL;
    assert_int_equal(run("SELECT count() FROM system.clusters SETTINGS "
                         "parallel_distributed_insert_select = 0, skip_unavailable_shards = true",
                         &out, err, sizeof(err)),
                     0);
    assert_string_equal(out, "4\n");
    free(out);
}

static void test_cluster_option_grammar(void **state)
{
    (void)state;
    dist_clusters cs;
    char err[512];
    assert_int_equal(dist_clusters_parse(&cs,
                                         " default = 10.0.0.1:8123, [::1]:8124 ,h:9;"
                                         "svc=dns:compute.ns.svc.cluster.local",
                                         "[::1]:8124", err, sizeof(err)),
                     0);
    assert_int_equal(cs.n, 2);
    assert_string_equal(cs.c[0].name, "default");
    assert_int_equal(cs.c[0].n_members, 3);
    assert_string_equal(cs.c[0].members[1], "[::1]:8124");
    assert_int_equal(cs.c[0].local, 1);
    assert_string_equal(cs.c[1].dns, "compute.ns.svc.cluster.local");
    assert_int_equal(cs.c[1].local, -1);
    dist_clusters_free(&cs);
    static const struct {
        const char *spec, *needle;
    } bad[] = {
        {"default", "has no '='"},
        {"default=", "has no members"},
        {"de fault=h:1", "not a cluster name"},
        {"a=h:1;a=h:2", "given twice"},
        {"a=h:1,h:1", "member h:1 is given twice"},
        {"a=h", "is not host:port"},
        {"a=h:0", "is not host:port"},
        {"a=h:70000", "is not host:port"},
        {"a=dns:", "is not a DNS name"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = 0;
        assert_int_equal(dist_clusters_parse(&cs, bad[i].spec, NULL, err, sizeof(err)), -EINVAL);
        if (!strstr(err, bad[i].needle))
            fprintf(stderr, "%s: %s\n", bad[i].spec, err);
        assert_non_null(strstr(err, bad[i].needle));
    }
    assert_int_equal(dist_clusters_parse(&cs, "", NULL, err, sizeof(err)), 0);
    assert_int_equal(cs.n, 0);
    dist_clusters_free(&cs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rendezvous_is_stable_and_moves_only_the_lost),
        cmocka_unit_test(test_own_queue_first_then_steal_after_grace),
        cmocka_unit_test(test_batch_own_queue_all_or_none),
        cmocka_unit_test(test_lost_server_units_go_to_others_counted_once),
        cmocka_unit_test(test_stalled_server_is_given_up),
        cmocka_unit_test(test_wire_reader_bounds_counts_before_allocation),
        cmocka_unit_test(test_system_clusters_lists_every_member),
        cmocka_unit_test(test_s3cluster_arguments_and_settings),
        cmocka_unit_test(test_cluster_option_grammar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
