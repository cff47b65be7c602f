/* SPDX-License-Identifier: Apache-2.0
 *
 * test_table_commit.c: the commit log of a table (ingest/table/table.h) against
 * the harness S3 server: create and open (and a store without conditional
 * writes refused), inserts and pinned snapshots, checkpoints (the log opens
 * with the versions before the newest checkpoint deleted), deduplication of
 * block ids within the window, a merge that loses its input to a racing
 * merge, a commit whose answer was lost but that landed (told apart from a
 * lost race by the writer id), and the cleanup of removed and orphan parts.
 */
#include "merge.h"
#include "tb_int.h"
#include "tt_util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

static h_env *env;
static h_s3 *s3, *s3_plain;

static int setup(void **state)
{
    (void)state;
    if (h_env_create(&env, "test_table_commit") < 0)
        return -1;
    h_s3_opts o = {0};
    int rc = h_s3_start(env, &s3, &o);
    if (rc == -ENOPKG)
        h_skip(h_last_error());
    h_s3_opts p = {.name = "s3plain", .no_conditional_writes = 1};
    if (rc < 0 || h_s3_start(env, &s3_plain, &p) < 0)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    int a = h_proc_stop(h_s3_proc(s3), 5000), b = h_proc_stop(h_s3_proc(s3_plain), 5000);
    h_env_destroy(&env);
    return (a == 0 || a == 143) && (b == 0 || b == 143) ? 0 : -1;
}

/* A new table at root, opened (checkpoint_interval 0: the default). */
static tb_table *open_new_ck(const char *root, tb_table_opts *o, uint32_t checkpoint_interval)
{
    tt_opts(o, h_s3_endpoint(s3), root, true);
    o->checkpoint_interval = checkpoint_interval;
    tb_schema sc = tt_schema(false);
    char err[512];
    if (tb_table_create(o, &sc, err, sizeof(err)) < 0)
        fail_msg("create: %s", err);
    tb_table *t;
    if (tb_table_open(&t, o, err, sizeof(err)) < 0)
        fail_msg("open: %s", err);
    return t;
}

static tb_table *open_new(const char *root, tb_table_opts *o)
{
    return open_new_ck(root, o, 0);
}

/* Opens the table of o and checks its version, parts, rows and the sum of
 * their ids (0 + 1 + ... + rows - 1). */
static void check_open(const tb_table_opts *o, uint64_t version, size_t parts, uint64_t rows)
{
    char err[512];
    tb_table *t;
    if (tb_table_open(&t, o, err, sizeof(err)) < 0)
        fail_msg("open: %s", err);
    assert_int_equal(tb_table_version(t), version);
    tb_snapshot *s;
    assert_int_equal(tb_table_snapshot(t, &s, err, sizeof(err)), 0);
    assert_int_equal(s->n_parts, parts);
    uint64_t got, sum, x;
    assert_int_equal(tt_read_all(t, s, &got, &sum, &x, err, sizeof(err)), 0);
    assert_int_equal(got, rows);
    assert_int_equal(sum, rows * (rows - 1) / 2);
    tb_snapshot_destroy(&s);
    tb_table_destroy(&t);
}

static int insert(tb_table *t, uint64_t first, uint32_t n, const char *block, char *name,
                  tb_commit_result *res)
{
    tb_part_add add;
    char err[512];
    if (tt_write_part(t, "all", first, 1, n, 0, name, &add, err, sizeof(err)) < 0)
        fail_msg("write part: %s", err);
    add.block_id = block;
    uint8_t dup = 0;
    tb_commit c = {.kind = TB_COMMIT_INSERT, .add = &add, .n_add = 1, .dup_out = &dup};
    int rc = tb_commit_run(t, &c, res, err, sizeof(err));
    if (rc < 0)
        fail_msg("commit: %s", err);
    return dup;
}

/* A new table at root of `parts` parts of `rows` rows each (ids 0, 1, ...),
 * one commit each: its last version is `parts`. */
static void fill_new(const char *root, tb_table_opts *o, uint32_t checkpoint_interval, int parts,
                     uint32_t rows)
{
    tb_table *t = open_new_ck(root, o, checkpoint_interval);
    char name[TB_NAME_MAX];
    tb_commit_result r;
    for (int i = 0; i < parts; i++)
        insert(t, (uint64_t)i * rows, rows, NULL, name, &r);
    assert_int_equal(r.version, (uint64_t)parts);
    tb_table_destroy(&t);
}

static int64_t head(const char *key)
{
    s3_config cfg;
    tb_table_opts o;
    tt_opts(&o, h_s3_endpoint(s3), "x", false);
    cfg = o.s3;
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &cfg), 0);
    s3_object_info info;
    s3_error e;
    int rc = s3_sync_head(s, H_S3_DEFAULT_BUCKET, key, &info, &e);
    s3_sync_destroy(&s);
    return rc < 0 ? rc : (int64_t)info.size;
}

static void del(const char *key)
{
    tb_table_opts o;
    tt_opts(&o, h_s3_endpoint(s3), "x", false);
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &o.s3), 0);
    s3_error e;
    assert_int_equal(s3_sync_delete(s, H_S3_DEFAULT_BUCKET, key, &e), 0);
    s3_sync_destroy(&s);
}

static void test_create_open_refuse(void **state)
{
    (void)state;
    tb_table_opts o;
    tb_table *t = open_new("wh/default/t1", &o);
    assert_int_equal(tb_table_version(t), 0);
    tb_table_destroy(&t);
    char err[512];
    tb_schema sc = tt_schema(false);
    assert_int_equal(tb_table_create(&o, &sc, err, sizeof(err)), -EEXIST);
    assert_non_null(strstr(err, "exists already"));
    tb_table_opts m;
    tt_opts(&m, h_s3_endpoint(s3), "wh/default/missing", false);
    assert_int_equal(tb_table_open(&t, &m, err, sizeof(err)), -ENOENT);
    assert_non_null(strstr(err, "no table at s3://ringcache-test/wh/default/missing"));
    /* a store that ignores If-None-Match is refused, for writing and creating */
    tb_table_opts p;
    tt_opts(&p, h_s3_endpoint(s3_plain), "wh/default/t1", true);
    assert_int_equal(tb_table_create(&p, &sc, err, sizeof(err)), -ENOTSUP);
    assert_non_null(strstr(err, h_s3_endpoint(s3_plain)));
    assert_non_null(strstr(err, "does not honour conditional writes"));
    assert_int_equal(tb_table_open(&t, &p, err, sizeof(err)), -ENOTSUP);
}

static void test_insert_and_pinned_snapshot(void **state)
{
    (void)state;
    tb_table_opts o;
    tb_table *t = open_new("wh/default/t2", &o);
    char name[TB_NAME_MAX];
    tb_commit_result r;
    insert(t, 0, 5000, NULL, name, &r);
    assert_int_equal(r.version, 1);
    assert_int_equal(r.n_added, 1);
    tb_snapshot *pinned;
    char err[512];
    assert_int_equal(tb_table_snapshot(t, &pinned, err, sizeof(err)), 0);
    insert(t, 5000, 3000, NULL, name, &r);
    insert(t, 8000, 70000, NULL, name, &r);
    assert_int_equal(r.version, 3);
    /* another handle sees all three, read back whole */
    tb_table *t2;
    assert_int_equal(tb_table_open(&t2, &o, err, sizeof(err)), 0);
    tb_snapshot *now;
    assert_int_equal(tb_table_snapshot(t2, &now, err, sizeof(err)), 0);
    assert_int_equal(now->version, 3);
    assert_int_equal(now->n_parts, 3);
    assert_int_equal(now->parts[2].min_block, 3);
    uint64_t rows, sum, x;
    assert_int_equal(tt_read_all(t2, now, &rows, &sum, &x, err, sizeof(err)), 0);
    assert_int_equal(rows, 78000);
    assert_int_equal(sum, 78000ull * 77999 / 2);
    /* the pinned snapshot still says version 1 */
    assert_int_equal(pinned->version, 1);
    assert_int_equal(pinned->n_parts, 1);
    assert_int_equal(tt_read_all(t2, pinned, &rows, &sum, &x, err, sizeof(err)), 0);
    assert_int_equal(rows, 5000);
    tb_snapshot_destroy(&pinned);
    tb_snapshot_destroy(&now);
    tb_table_destroy(&t2);
    tb_table_destroy(&t);
}

static void test_checkpoints(void **state)
{
    (void)state;
    tb_table_opts o;
    fill_new("wh/default/ck", &o, 0, 25, 10);
    tb_table *t;
    assert_true(head("wh/default/ck/_log/00000000000000000010.checkpoint.json") > 0);
    assert_true(head("wh/default/ck/_log/00000000000000000020.checkpoint.json") > 0);
    assert_int_equal(head("wh/default/ck/_log/00000000000000000015.checkpoint.json"), -ENOENT);
    /* open needs only checkpoint 20 and the versions after it */
    char key[128];
    for (int v = 0; v < 20; v++) {
        snprintf(key, sizeof(key), "wh/default/ck/_log/%020d.json", v);
        del(key);
    }
    check_open(&o, 25, 25, 250);
    char err[512];
    /* without the hint the listing finds the newest checkpoint itself */
    del("wh/default/ck/_log/_last_checkpoint");
    assert_int_equal(tb_table_open(&t, &o, err, sizeof(err)), 0);
    assert_int_equal(tb_table_version(t), 25);
    tb_table_destroy(&t);
}

static void put_obj(const char *key, const char *body)
{
    tb_table_opts o;
    tt_opts(&o, h_s3_endpoint(s3), "x", false);
    s3_sync *s;
    assert_int_equal(s3_sync_create(&s, &o.s3), 0);
    s3_error e;
    s3_sync_put_args a = {.bucket = H_S3_DEFAULT_BUCKET, .key = key, .fd = -1, .data = body,
                          .size = strlen(body)};
    assert_int_equal(s3_sync_put(s, &a, NULL, &e), 0);
    s3_sync_destroy(&s);
}

/* The log's objects are fetched in batches: a log longer than a batch (no
 * checkpoints) opens to its last version; a damaged or missing version, or a
 * damaged checkpoint, fails the open with an error that names it. */
static void test_log_batches(void **state)
{
    (void)state;
    tb_table_opts o;
    fill_new("wh/default/lb", &o, 1000, 70, 3);
    tb_table *t;
    char err[512];
    assert_int_equal(head("wh/default/lb/_log/00000000000000000010.checkpoint.json"), -ENOENT);
    check_open(&o, 70, 70, 210);

    put_obj("wh/default/lb/_log/00000000000000000040.json", "{\"version\": 40, \"bad\"");
    assert_true(tb_table_open(&t, &o, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "_log/00000000000000000040.json is damaged"));
    del("wh/default/lb/_log/00000000000000000040.json");
    assert_true(tb_table_open(&t, &o, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "misses version 40"));

    /* a damaged checkpoint, read in the same round trip as the versions after it */
    tb_table_opts oc;
    fill_new("wh/default/lbc", &oc, 0, 12, 2);
    assert_true(head("wh/default/lbc/_log/00000000000000000010.checkpoint.json") > 0);
    check_open(&oc, 12, 12, 24);
    put_obj("wh/default/lbc/_log/00000000000000000010.checkpoint.json", "[]");
    assert_true(tb_table_open(&t, &oc, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "checkpoint s3://"));
    assert_non_null(strstr(err, "00000000000000000010.checkpoint.json is damaged"));
}

static void test_dedup(void **state)
{
    (void)state;
    tb_table_opts o;
    tt_opts(&o, h_s3_endpoint(s3), "wh/default/dd", true);
    tb_schema sc = tt_schema(false);
    char err[512];
    assert_int_equal(tb_table_create(&o, &sc, err, sizeof(err)), 0);
    o.dedup_window = 3;
    tb_table *t;
    assert_int_equal(tb_table_open(&t, &o, err, sizeof(err)), 0);
    char name[TB_NAME_MAX];
    tb_commit_result r;
    assert_int_equal(insert(t, 0, 100, "all_b1", name, &r), 0);
    assert_int_equal(r.version, 1);
    /* the same block again: nothing written, success */
    assert_int_equal(insert(t, 0, 100, "all_b1", name, &r), 1);
    assert_int_equal(r.version, 1);
    assert_int_equal(r.n_added, 0);
    assert_int_equal(r.attempts, 0);
    /* two parts, one known: only the new one lands */
    tb_part_add add[2];
    char n1[TB_NAME_MAX], n2[TB_NAME_MAX];
    assert_int_equal(tt_write_part(t, "all", 0, 1, 100, 0, n1, &add[0], err, sizeof(err)), 0);
    assert_int_equal(tt_write_part(t, "all", 100, 1, 100, 0, n2, &add[1], err, sizeof(err)), 0);
    add[0].block_id = "all_b1";
    add[1].block_id = "all_b2";
    uint8_t dup[2];
    tb_commit c = {.kind = TB_COMMIT_INSERT, .add = add, .n_add = 2, .dup_out = dup};
    assert_int_equal(tb_commit_run(t, &c, &r, err, sizeof(err)), 0);
    assert_int_equal(r.n_added, 1);
    assert_int_equal(dup[0], 1);
    assert_int_equal(dup[1], 0);
    /* the window holds 3 ids: after b3, b4, b1 is forgotten and lands again */
    insert(t, 200, 10, "all_b3", name, &r);
    insert(t, 300, 10, "all_b4", name, &r);
    assert_int_equal(insert(t, 0, 100, "all_b1", name, &r), 0);
    assert_int_equal(r.n_added, 1);
    /* another process sees the same window */
    tb_table *t2;
    assert_int_equal(tb_table_open(&t2, &o, err, sizeof(err)), 0);
    assert_int_equal(insert(t2, 300, 10, "all_b4", name, &r), 1);
    tb_table_destroy(&t2);
    tb_table_destroy(&t);
}

static void test_merge_loses_input(void **state)
{
    (void)state;
    tb_table_opts o;
    tb_table *t1 = open_new("wh/default/mg", &o);
    char a[TB_NAME_MAX], b[TB_NAME_MAX], m[TB_NAME_MAX];
    tb_commit_result r;
    insert(t1, 0, 100, NULL, a, &r);
    insert(t1, 100, 100, NULL, b, &r);
    char err[512];
    tb_table *t2;
    assert_int_equal(tb_table_open(&t2, &o, err, sizeof(err)), 0);
    const char *inputs[] = {a, b};
    tb_part_add out;
    assert_int_equal(tt_write_part(t2, "all", 0, 1, 200, 0, m, &out, err, sizeof(err)), 0);
    out.level = 1;
    out.min_block = 1;
    out.max_block = 2;
    tb_commit c = {
        .kind = TB_COMMIT_MERGE, .add = &out, .n_add = 1, .remove = inputs, .n_remove = 2};
    assert_int_equal(tb_commit_run(t2, &c, &r, err, sizeof(err)), 0);
    assert_int_equal(r.version, 3);
    /* t1 has not seen it and merges the same inputs: refused */
    char m2[TB_NAME_MAX];
    tb_part_add out2;
    assert_int_equal(tt_write_part(t1, "all", 0, 1, 200, 0, m2, &out2, err, sizeof(err)), 0);
    out2.level = 1;
    out2.min_block = 1;
    out2.max_block = 2;
    c.add = &out2;
    assert_int_equal(tb_commit_run(t1, &c, &r, err, sizeof(err)), -ESTALE);
    assert_non_null(strstr(err, "no longer active"));
    assert_int_equal(tb_part_delete(t1, m2, err, sizeof(err)), 0);
    tb_snapshot *s;
    assert_int_equal(tb_table_snapshot(t1, &s, err, sizeof(err)), 0);
    assert_int_equal(s->version, 3);
    assert_int_equal(s->n_parts, 1);
    assert_string_equal(s->parts[0].name, m);
    assert_int_equal(s->parts[0].level, 1);
    assert_int_equal(s->n_removed, 2);
    tb_snapshot_destroy(&s);
    tb_table_destroy(&t1);
    tb_table_destroy(&t2);
}

typedef struct {
    int calls;
    int fake; /* what the first PUT reports */
} hook_state;

static int lose_answer(void *arg, const char *key, int rc)
{
    (void)key;
    hook_state *h = arg;
    if (h->calls++ == 0 && rc == 0)
        return h->fake;
    return rc;
}

static void test_landed_vs_lost_race(void **state)
{
    (void)state;
    tb_table_opts o;
    tb_table *t1 = open_new("wh/default/race", &o);
    char err[512], name[TB_NAME_MAX];
    tb_commit_result r;
    /* the PUT landed but its answer was lost (a timeout, or the client's own
     * retry answered 412): the writer id says it is ours */
    int fakes[] = {-ETIMEDOUT, -EEXIST};
    for (int i = 0; i < 2; i++) {
        hook_state h = {0, fakes[i]};
        tb__table_set_put_hook(t1, lose_answer, &h);
        uint64_t before = tb_table_version(t1);
        insert(t1, (uint64_t)i * 100, 100, NULL, name, &r);
        assert_true(r.landed_after_timeout);
        assert_int_equal(r.version, before + 1);
        assert_int_equal(r.n_added, 1);
        tb__table_set_put_hook(t1, NULL, NULL);
    }
    /* a real lost race: t2 takes the version t1 aims for */
    tb_table *t2;
    assert_int_equal(tb_table_open(&t2, &o, err, sizeof(err)), 0);
    insert(t2, 1000, 10, NULL, name, &r);
    assert_int_equal(r.version, 3);
    uint64_t v1 = tb_table_version(t1);
    assert_int_equal(v1, 2); /* stale on purpose */
    tb_part_add add;
    assert_int_equal(tt_write_part(t1, "all", 2000, 1, 10, 0, name, &add, err, sizeof(err)), 0);
    tb_commit c = {.kind = TB_COMMIT_INSERT, .add = &add, .n_add = 1};
    assert_int_equal(tb_commit_run(t1, &c, &r, err, sizeof(err)), 0);
    assert_int_equal(r.version, 4);
    assert_false(r.landed_after_timeout);
    tb_snapshot *s;
    assert_int_equal(tb_table_refresh(t2, err, sizeof(err)), 0);
    assert_int_equal(tb_table_snapshot(t2, &s, err, sizeof(err)), 0);
    assert_int_equal(s->n_parts, 4);
    tb_snapshot_destroy(&s);
    tb_table_destroy(&t2);
    tb_table_destroy(&t1);
}

static int64_t g_offset_ms;
static int64_t fake_clock(void *arg)
{
    (void)arg;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + g_offset_ms;
}

static void test_cleanup(void **state)
{
    (void)state;
    tb_table_opts o;
    tt_opts(&o, h_s3_endpoint(s3), "wh/default/cl", true);
    tb_schema sc = tt_schema(false);
    char err[512];
    assert_int_equal(tb_table_create(&o, &sc, err, sizeof(err)), 0);
    o.clock = fake_clock;
    g_offset_ms = 0;
    tb_table *t;
    assert_int_equal(tb_table_open(&t, &o, err, sizeof(err)), 0);
    char a[TB_NAME_MAX], b[TB_NAME_MAX], m[TB_NAME_MAX], orphan[TB_NAME_MAX];
    tb_commit_result r;
    insert(t, 0, 10, NULL, a, &r);
    insert(t, 10, 10, NULL, b, &r);
    tb_part_add out, lost;
    assert_int_equal(tt_write_part(t, "all", 0, 1, 20, 0, m, &out, err, sizeof(err)), 0);
    out.level = 1;
    out.min_block = 1;
    out.max_block = 2;
    const char *in[] = {a, b};
    tb_commit c = {.kind = TB_COMMIT_MERGE, .add = &out, .n_add = 1, .remove = in, .n_remove = 2};
    assert_int_equal(tb_commit_run(t, &c, &r, err, sizeof(err)), 0);
    /* an upload whose writer died before the commit */
    assert_int_equal(tt_write_part(t, "all", 0, 1, 5, 0, orphan, &lost, err, sizeof(err)), 0);
    char ka[256], kb[256], km[256], ko[256];
    tb_part_key(t, a, ka, sizeof(ka));
    tb_part_key(t, b, kb, sizeof(kb));
    tb_part_key(t, m, km, sizeof(km));
    tb_part_key(t, orphan, ko, sizeof(ko));
    tb_cleanup_result cr;
    assert_int_equal(tb_cleanup(t, true, &cr, err, sizeof(err)), 0);
    assert_int_equal(cr.deleted, 0); /* readers may still hold them */
    assert_int_equal(cr.orphans, 0);
    assert_true(head(ka) > 0);
    g_offset_ms = 481 * 1000;
    assert_int_equal(tb_cleanup(t, true, &cr, err, sizeof(err)), 0);
    assert_int_equal(cr.deleted, 2);
    assert_int_equal(cr.orphans, 1);
    assert_int_equal(cr.version, 4);
    assert_int_equal(head(ka), -ENOENT);
    assert_int_equal(head(kb), -ENOENT);
    assert_int_equal(head(ko), -ENOENT);
    assert_true(head(km) > 0);
    tb_snapshot *s;
    assert_int_equal(tb_table_snapshot(t, &s, err, sizeof(err)), 0);
    assert_int_equal(s->n_removed, 0);
    assert_int_equal(s->n_parts, 1);
    tb_snapshot_destroy(&s);
    /* nothing left to do */
    assert_int_equal(tb_cleanup(t, true, &cr, err, sizeof(err)), 0);
    assert_int_equal(cr.deleted + cr.orphans, 0);
    tb_table_destroy(&t);
}

static void test_merges_on_s3(void **state)
{
    (void)state;
    for (int replacing = 0; replacing < 2; replacing++) {
        tb_table_opts o;
        const char *root = replacing ? "wh/default/rmt" : "wh/default/mt";
        tt_opts(&o, h_s3_endpoint(s3), root, true);
        tb_schema sc = tt_schema(replacing);
        char err[512];
        assert_int_equal(tb_table_create(&o, &sc, err, sizeof(err)), 0);
        tb_table *t;
        assert_int_equal(tb_table_open(&t, &o, err, sizeof(err)), 0);
        /* 15 inserts of 1000 ids; with replacing, ids repeat across inserts */
        char name[TB_NAME_MAX];
        tb_commit_result r;
        for (int i = 0; i < 15; i++) {
            tb_part_add add;
            uint64_t first = replacing ? (uint64_t)(i % 3) * 500 : (uint64_t)i * 1000;
            assert_int_equal(
                tt_write_part(t, "all", first, 1, 1000, i * 10000, name, &add, err, sizeof(err)),
                0);
            tb_commit c = {.kind = TB_COMMIT_INSERT, .add = &add, .n_add = 1};
            assert_int_equal(tb_commit_run(t, &c, &r, err, sizeof(err)), 0);
        }
        tm_settings ms;
        tm_settings_init(&ms);
        tm_result mr;
        int merges = 0;
        for (int i = 0; i < 50; i++) {
            if (tm_run(t, &ms, false, &mr, err, sizeof(err)) < 0)
                fail_msg("merge: %s", err);
            if (!mr.merged)
                break;
            merges++;
            assert_true(mr.n_inputs >= 2);
        }
        assert_true(merges >= 1);
        tb_snapshot *s;
        assert_int_equal(tb_table_snapshot(t, &s, err, sizeof(err)), 0);
        assert_true(s->n_parts < 15);
        uint64_t rows, sum, x;
        assert_int_equal(tt_read_all(t, s, &rows, &sum, &x, err, sizeof(err)), 0);
        if (!replacing) {
            assert_int_equal(rows, 15000);
            assert_int_equal(sum, 15000ull * 14999 / 2);
        }
        tb_snapshot_destroy(&s);
        /* OPTIMIZE FINAL: one part */
        for (int i = 0; i < 10; i++) {
            assert_int_equal(tm_run(t, &ms, true, &mr, err, sizeof(err)), 0);
            if (!mr.merged)
                break;
        }
        assert_int_equal(tb_table_snapshot(t, &s, err, sizeof(err)), 0);
        assert_int_equal(s->n_parts, 1);
        assert_true(s->parts[0].level >= 1);
        assert_int_equal(s->parts[0].min_block, 1);
        assert_int_equal(s->parts[0].max_block, 15);
        assert_int_equal(tt_read_all(t, s, &rows, &sum, &x, err, sizeof(err)), 0);
        if (replacing) {
            assert_int_equal(rows, 2000); /* ids 0..1999, each once */
            assert_int_equal(sum, 2000ull * 1999 / 2);
        } else {
            assert_int_equal(rows, 15000);
        }
        tb_snapshot_destroy(&s);
        tb_table_destroy(&t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_open_refuse),
        cmocka_unit_test(test_insert_and_pinned_snapshot),
        cmocka_unit_test(test_checkpoints),
        cmocka_unit_test(test_log_batches),
        cmocka_unit_test(test_dedup),
        cmocka_unit_test(test_merge_loses_input),
        cmocka_unit_test(test_landed_vs_lost_race),
        cmocka_unit_test(test_cleanup),
        cmocka_unit_test(test_merges_on_s3),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
