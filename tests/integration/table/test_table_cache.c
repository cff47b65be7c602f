/* SPDX-License-Identifier: Apache-2.0
 *
 * test_table_cache.c: reading a table's parts through the cache: real s3rver
 * behind the S3 model (which counts GETs), three real ringcached nodes, the
 * part opened with tb_part_open_via() over rs_rc_open(). The rows read back
 * equal what was inserted, a pruned read (one column, a few granules) reads
 * right, and a second reader of the same part costs S3 no GET: the blocks
 * come from the nodes.
 */
#include "client_test_util.h"
#include "rs_rc.h"
#include "tt_util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static t_cluster tc;

static int setup(void **state)
{
    (void)state;
    t_cluster_start(&tc, "test_table_cache", NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    t_cluster_stop(&tc);
    return 0;
}

static int open_rc(void *arg, const char *bucket, const char *key, rs_source **out, char *err,
                   size_t errlen)
{
    return rs_rc_open(out, arg, bucket, key, err, errlen);
}

static uint64_t read_ids(const tb_table *t, rc_client *c, const char *name, uint32_t g0,
                         uint32_t g1, uint64_t *rows)
{
    rs_source *src;
    tp_reader *r;
    char err[512];
    if (tb_part_open_via(t, name, open_rc, c, &src, &r, err, sizeof(err)) < 0)
        fail_msg("open through the cache: %s", err);
    if (g1 == 0)
        g1 = tp_reader_meta(r)->granules;
    uint32_t col = 0;
    cb_batch *b;
    if (tp_reader_read(r, &col, 1, g0, g1, &b, err, sizeof(err)) < 0)
        fail_msg("read through the cache: %s", err);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < b->n_rows; i++)
        sum += ((const uint64_t *)b->cols[0]->values)[i];
    *rows = b->n_rows;
    cb_batch_destroy(&b);
    tp_reader_destroy(&r);
    rs_destroy(&src);
    return sum;
}

static void test_read_parts_through_the_cache(void **state)
{
    (void)state;
    tb_table_opts o;
    tt_opts(&o, h_s3_endpoint(tc.s3), "wh/default/cached", true);
    tb_schema sc = tt_schema(false);
    char err[512];
    assert_int_equal(tb_table_create(&o, &sc, err, sizeof(err)), 0);
    tb_table *t;
    assert_int_equal(tb_table_open(&t, &o, err, sizeof(err)), 0);
    char name[TB_NAME_MAX];
    tb_part_add add;
    const uint32_t n = 300000;
    assert_int_equal(tt_write_part(t, "all", 0, 1, n, 0, name, &add, err, sizeof(err)), 0);
    tb_commit c = {.kind = TB_COMMIT_INSERT, .add = &add, .n_add = 1};
    assert_int_equal(tb_commit_run(t, &c, NULL, err, sizeof(err)), 0);
    char key[512];
    tb_part_key(t, name, key, sizeof(key));

    rc_config cfg;
    t_rc_config(&tc, &cfg);
    rc_client *rc;
    assert_int_equal(rc_create(&rc, &cfg, err, sizeof(err)), 0);
    assert_int_equal(h_s3model_reset(tc.model), 0);
    uint64_t rows;
    assert_true(read_ids(t, rc, name, 0, 0, &rows) == (uint64_t)n * (n - 1) / 2);
    assert_int_equal(rows, n);
    int64_t first = t_s3_gets(&tc, key);
    assert_true(first >= 1);
    /* granules 3..5 of the ids only: ids 3072..6143 */
    assert_true(read_ids(t, rc, name, 3, 6, &rows) == (uint64_t)(3072 + 6143) * 3072 / 2);
    assert_int_equal(rows, 3072);
    /* a second client (an empty page cache): the nodes serve every block */
    rc_client *rc2;
    assert_int_equal(rc_create(&rc2, &cfg, err, sizeof(err)), 0);
    assert_true(read_ids(t, rc2, name, 0, 0, &rows) == (uint64_t)n * (n - 1) / 2);
    assert_int_equal(t_s3_gets(&tc, key), first);
    rc_destroy(&rc2);
    rc_destroy(&rc);
    tb_table_destroy(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_parts_through_the_cache),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
