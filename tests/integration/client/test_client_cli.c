/* SPDX-License-Identifier: Apache-2.0
 *
 * test_client_cli.c: the `ringcache` CLI through the cache tier (--cache,
 * which runs on libringcache) against three real ringcached nodes and a real
 * S3 behind the S3 model:
 *  - put (write-through), head, get -o, cat, ls and stats --raw with --cache;
 *  - stats: a table per node in member order and a total, its figures the
 *    nodes' own, checked after known traffic;
 *  - warm s3://bucket/glob loads every matching object into the nodes (one S3
 *    GET per block, counted at the model) without sending data to the CLI,
 *    and a cat afterwards costs S3 nothing;
 *  - --help of warm and cat; warm without --cache is a usage error;
 *  - a query with --cache ends its summary with the bytes the nodes answered
 *    and the bytes read from S3 directly.
 */
#include "client_test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

static t_cluster tc;
static char cli[4096];

typedef h_run_result run_result;

static void run(run_result *r, const char *const *args)
{
    t_run_cli(&tc, r, cli, NULL, args);
}

static int setup(void **state)
{
    (void)state;
    t_cluster_start(&tc, "test_client_cli", NULL);
    if (h_build_path(cli, sizeof(cli), H_RINGCACHE_CLI) < 0)
        h_skip("the ringcache CLI is not built");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    t_cluster_stop(&tc);
    return 0;
}

static void test_put_head_get_cat_ls_stats(void **state)
{
    (void)state;
    size_t size = (3u << 20) + 5;
    unsigned char *data = t_alloc_data(size, 61);
    char src[4096], out[4096];
    h_env_path(tc.env, src, sizeof(src), "src.bin");
    h_env_path(tc.env, out, sizeof(out), "out.bin");
    FILE *f = fopen(src, "wb");
    assert_int_equal(fwrite(data, 1, size, f), size);
    fclose(f);
    run_result *r = malloc(sizeof(*r));
    const char *url = "s3://ringcache-test/cli/a.bin";
    run(r, (const char *[]){"put", src, url, "--cache", tc.members, NULL});
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "etag="));
    run(r, (const char *[]){"head", url, "--cache", tc.members, NULL});
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "size: 3145733"));
    run(r, (const char *[]){"get", url, "-o", out, "--cache", tc.members, NULL});
    assert_int_equal(r->status, 0);
    t_file_equals(out, data, size);
    run(r, (const char *[]){"cat", url, "--cache", tc.members, NULL});
    assert_int_equal(r->status, 0);
    t_file_equals(r->out_path, data, size);
    run(r, (const char *[]){"cat", url, "--range", "100-199", "--cache", tc.members, NULL});
    assert_int_equal(r->status, 0);
    t_file_equals(r->out_path, data + 100, 100);
    run(r, (const char *[]){"ls", "s3://ringcache-test/cli/*.bin", "--cache", tc.members, NULL});
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, url));
    run(r, (const char *[]){"stats", "--raw", "--cache", tc.members, NULL});
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "== n0"));
    assert_non_null(strstr(r->out, "== n2"));
    assert_non_null(strstr(r->out, "ringcached_requests_total"));
    assert_true(strstr(r->out, "== n0") < strstr(r->out, "== n1"));
    assert_true(strstr(r->out, "== n1") < strstr(r->out, "== n2"));
    /* a missing key: one sentence, exit 1 */
    run(r, (const char *[]){"cat", "s3://ringcache-test/cli/none", "--cache", tc.members, NULL});
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "cli/none"));
    free(r);
    free(data);
}

static void test_warm_then_cat(void **state)
{
    (void)state;
    size_t a = (5u << 20) + 1, b = 3u << 20;
    unsigned char *da = t_alloc_data(a, 62), *db = t_alloc_data(b, 63);
    t_put_direct(&tc, "warm/x/a.bin", da, a, NULL);
    t_put_direct(&tc, "warm/x/b.bin", db, b, NULL);
    t_put_direct(&tc, "warm/y/c.bin", db, b, NULL); /* not matched by the glob */
    assert_int_equal(h_s3model_reset(tc.model), 0);
    int64_t served0 = 0;
    for (int i = 0; i < T_NODES; i++)
        served0 += t_node_metric(&tc.nodes[i], "ringcached_bytes_served_total");
    run_result *r = malloc(sizeof(*r));
    run(r,
        (const char *[]){"warm", "s3://ringcache-test/warm/x/*.bin", "--cache", tc.members, NULL});
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "warmed 2 objects"));
    assert_non_null(strstr(r->err, "warm/x/a.bin")); /* progress, one line per object */
    assert_int_equal(t_s3_gets(&tc, "warm/x/a.bin"), 6);
    assert_int_equal(t_s3_gets(&tc, "warm/x/b.bin"), 3);
    assert_int_equal(t_s3_gets(&tc, "warm/y/c.bin"), 0);
    /* no object data went to the CLI: one byte per block (9), for --wait */
    int64_t served = 0;
    for (int i = 0; i < T_NODES; i++)
        served += t_node_metric(&tc.nodes[i], "ringcached_bytes_served_total");
    assert_true(served - served0 <= 9);
    run(r,
        (const char *[]){"cat", "s3://ringcache-test/warm/x/a.bin", "--cache", tc.members, NULL});
    assert_int_equal(r->status, 0);
    t_file_equals(r->out_path, da, a);
    assert_int_equal(t_s3_gets(&tc, "warm/x/a.bin"), 6); /* all from the nodes */
    int64_t served_after = 0;
    for (int i = 0; i < T_NODES; i++)
        served_after += t_node_metric(&tc.nodes[i], "ringcached_bytes_served_total");
    assert_true(served_after - served >= (int64_t)a);
    run(r, (const char *[]){"warm", "--help", NULL});
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "usage: ringcache warm"));
    run(r, (const char *[]){"cat", "--help", NULL});
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "usage: ringcache cat"));
    run(r, (const char *[]){"warm", "s3://ringcache-test/warm/*", NULL});
    assert_int_equal(r->status, 2);
    assert_non_null(strstr(r->err, "--cache"));
    free(r);
    free(da);
    free(db);
}

/* The bytes of the "Read through the cache" line of r's summary: from the
 * nodes and from S3 directly (as printed: powers of 1000). */
static void cache_line(const run_result *r, double *node, double *s3)
{
    const char *l = strstr(r->err, "Read through the cache: ");
    if (!l)
        fprintf(stderr, "no cache line in: %s\n", r->err);
    assert_non_null(l);
    char nu[8], su[8];
    assert_int_equal(sscanf(l, "Read through the cache: %lf %7s from cache nodes, %lf %7s from S3",
                            node, nu, s3, su),
                     4);
    const char *const units[] = {"B", "KB", "MB", "GB"};
    double scale = 1;
    for (int i = 0; i < 4; i++, scale *= 1000) {
        if (!strcmp(nu, units[i]))
            *node *= scale;
        if (!strncmp(su, units[i], strlen(units[i])) &&
            (su[strlen(units[i])] == 0 || su[strlen(units[i])] == ','))
            *s3 *= scale;
    }
}

/* A query with --cache says where its bytes came from: the nodes, or S3
 * directly when the nodes cannot be used (a typo'd port), so a cache that is
 * not used does not go unnoticed. */
static void test_query_says_where_bytes_came_from(void **state)
{
    (void)state;
    char csv[64 * 1024];
    size_t o = (size_t)snprintf(csv, sizeof(csv), "a,b\n");
    for (int i = 0; i < 2000; i++)
        o += (size_t)snprintf(csv + o, sizeof(csv) - o, "%d,row-%d\n", i, i);
    t_put_direct(&tc, "q/t.csv", csv, o, NULL);
    const char *sql = "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv')";
    run_result *r = malloc(sizeof(*r));
    run(r, (const char *[]){"query", "--format", "TSV", "--cache", tc.members, sql, NULL});
    assert_int_equal(r->status, 0);
    assert_string_equal(r->out, "1999000\n");
    double node = 0, s3 = 0;
    cache_line(r, &node, &s3);
    /* the figures are printed with 4 digits */
    if (node < 0.99 * (double)o)
        fprintf(stderr, "%s (object %zu bytes)\n", r->err, o);
    assert_true(node >= 0.99 * (double)o);
    assert_true(s3 == 0);
    /* nothing listens on port 1: every byte from S3, and the line says so */
    run(r, (const char *[]){"query", "--format", "TSV", "--cache", "n0=127.0.0.1:1", sql, NULL});
    assert_int_equal(r->status, 0);
    assert_string_equal(r->out, "1999000\n");
    cache_line(r, &node, &s3);
    assert_true(node == 0);
    assert_true(s3 >= 0.99 * (double)o);
    assert_non_null(strstr(r->err, "went to S3: no node could serve them"));
    /* without --cache there is no such line */
    run(r, (const char *[]){"query", "--format", "TSV", sql, NULL});
    assert_int_equal(r->status, 0);
    assert_null(strstr(r->err, "Read through the cache"));
    free(r);
}

/* A row of `ringcache stats`: the counts, as printed. */
typedef struct stats_row {
    char id[32];
    double hit_pct; /* -1: "-" */
    double hits, misses, blocks, fills, s3_err, disk, err;
    char ssd[64];
} stats_row;

/* Reads the row of id (a node, or TOTAL) from the table in out. */
static void stats_row_of(const char *out, const char *id, stats_row *row)
{
    char key[40];
    snprintf(key, sizeof(key), "\n%s ", id);
    const char *l = strstr(out, key);
    if (!l)
        fprintf(stderr, "no row %s in:\n%s\n", id, out);
    assert_non_null(l);
    char addr[64], hit[16];
    int used = 0;
    assert_int_equal(sscanf(l + 1, "%31s %63s %15s %lf %lf %lf %lf %lf %lf %lf %n", row->id, addr,
                            hit, &row->hits, &row->misses, &row->blocks, &row->fills, &row->s3_err,
                            &row->disk, &row->err, &used),
                     10);
    row->hit_pct = strcmp(hit, "-") == 0 ? -1 : strtod(hit, NULL);
    /* S3 BYTES (two words), then "SSD used / capacity" */
    const char *p = l + 1 + used;
    for (int w = 0; w < 2; w++) {
        while (*p && *p != ' ')
            p++;
        while (*p == ' ')
            p++;
    }
    const char *e = strstr(p, "  ");
    assert_non_null(e);
    snprintf(row->ssd, sizeof(row->ssd), "%.*s", (int)(e - p), p);
}

/* A labelled gauge of n's /metrics (t_node_metric takes the first line). */
static double node_gauge(const t_node *n, const char *line_start)
{
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", n->admin_port);
    h_http_resp hr = {0};
    assert_int_equal(h_http_get(url, &hr), 200);
    const char *l = strstr(hr.body, line_start);
    assert_non_null(l);
    double v = strtod(l + strlen(line_start), NULL);
    h_http_resp_deinit(&hr);
    return v;
}

static void bytes_1024(double v, char *buf, size_t cap)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int k = 0;
    while (v >= 1024 && k < 4) {
        v /= 1024;
        k++;
    }
    snprintf(buf, cap, k ? "%.1f %s" : "%.0f %s", v, u[k]);
}

/* `ringcache stats`: a row per node in member order and a total, whose figures
 * are the nodes' own /metrics; after known traffic (a 4-block object read
 * twice through the cache) misses, fills and blocks grow by 4 and hits by 4. */
static void test_stats_table(void **state)
{
    (void)state;
    size_t size = (3u << 20) + 17; /* 4 blocks of 1 MiB */
    unsigned char *data = t_alloc_data(size, 64);
    t_put_direct(&tc, "stats/a.bin", data, size, NULL);
    run_result *r = malloc(sizeof(*r));
    run(r, (const char *[]){"stats", "--cache", tc.members, NULL});
    assert_int_equal(r->status, 0);
    stats_row before;
    stats_row_of(r->out, "TOTAL", &before);
    for (int k = 0; k < 2; k++) {
        run(r, (const char *[]){"cat", "s3://ringcache-test/stats/a.bin", "--cache", tc.members,
                                NULL});
        assert_int_equal(r->status, 0);
        t_file_equals(r->out_path, data, size);
    }
    run(r, (const char *[]){"stats", "--cache", tc.members, NULL});
    assert_int_equal(r->status, 0);
    fprintf(stderr, "%s", r->out);
    assert_non_null(strstr(r->out, "NODE"));
    stats_row total, sum = {0};
    stats_row_of(r->out, "TOTAL", &total);
    const char *prev = r->out;
    for (int i = 0; i < T_NODES; i++) {
        stats_row row;
        stats_row_of(r->out, tc.nodes[i].name, &row);
        /* member order */
        char key[40];
        snprintf(key, sizeof(key), "\n%s ", tc.nodes[i].name);
        assert_true(strstr(r->out, key) > prev);
        prev = strstr(r->out, key);
        /* the node's own figures (nothing ran in between but this read) */
        const t_node *n = &tc.nodes[i];
        assert_true(row.hits == (double)t_node_metric(n, "ringcached_hits_total"));
        assert_true(row.misses == (double)t_node_metric(n, "ringcached_misses_total"));
        assert_true(row.blocks == (double)t_node_metric(n, "ringcached_blocks_stored"));
        assert_true(row.fills == (double)t_node_metric(n, "ringcached_s3_get_requests_total"));
        assert_true(row.s3_err == (double)t_node_metric(n, "ringcached_s3_errors_total"));
        char used[24], cap[24], want[64];
        bytes_1024(node_gauge(n, "ringcached_capacity_used_bytes{tier=\"ssd\"} "), used,
                   sizeof(used));
        bytes_1024(node_gauge(n, "ringcached_capacity_bytes{tier=\"ssd\"} "), cap, sizeof(cap));
        snprintf(want, sizeof(want), "%s / %s", used, cap);
        assert_string_equal(row.ssd, want);
        if (row.hits + row.misses > 0) {
            double pct = 100.0 * row.hits / (row.hits + row.misses);
            assert_true(row.hit_pct > pct - 0.06 && row.hit_pct < pct + 0.06);
        }
        sum.hits += row.hits;
        sum.misses += row.misses;
        sum.blocks += row.blocks;
        sum.fills += row.fills;
    }
    assert_true(total.hits == sum.hits && total.misses == sum.misses);
    assert_true(total.blocks == sum.blocks && total.fills == sum.fills);
    assert_non_null(strstr(r->out, "TOTAL      3/3"));
    /* the known traffic: the first read missed 4 blocks and filled them, the
     * second hit them */
    assert_true(total.misses - before.misses == 4);
    assert_true(total.fills - before.fills == 4);
    assert_true(total.blocks - before.blocks == 4);
    assert_true(total.hits - before.hits == 4);
    /* a node that does not answer gets its row, and the total says how many did */
    char members[600];
    snprintf(members, sizeof(members), "%s,zz=127.0.0.1:1", tc.members);
    run(r, (const char *[]){"stats", "--cache", members, NULL});
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->out, "\nzz "));
    assert_non_null(strstr(r->out, "unreachable"));
    assert_non_null(strstr(r->out, "TOTAL      3/4"));
    free(r);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_head_get_cat_ls_stats),
        cmocka_unit_test(test_warm_then_cat),
        cmocka_unit_test(test_query_says_where_bytes_came_from),
        cmocka_unit_test(test_stats_table),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
