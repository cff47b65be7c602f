/* SPDX-License-Identifier: Apache-2.0
 *
 * test_log.c: the pure pieces of the commit log (ingest/table/tb_int.h): the
 * JSON parser on good and bad input, a version and a checkpoint written and
 * read back equal, applying versions (removals of active parts only, the
 * version order, the dedup window by count and by age), and block ids.
 */
#include "tb_int.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static void test_json(void **state)
{
    (void)state;
    tj_val v;
    char err[256];
    const char *good = " {\"a\":[1,-2,9223372036854775807,-9223372036854775808,1.5,1e3],"
                       "\"s\":\"x\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\",\"t\":true,"
                       "\"f\":false,\"n\":null,\"o\":{}} ";
    assert_int_equal(tj_parse(good, strlen(good), &v, err, sizeof(err)), 0);
    const tj_val *a = tj_get(&v, "a");
    assert_non_null(a);
    assert_int_equal(a->n, 6);
    assert_int_equal(a->items[1].i, -2);
    assert_true(a->items[2].i == INT64_MAX);
    assert_true(a->items[3].i == INT64_MIN);
    assert_int_equal(a->items[4].kind, TJ_NUM);
    assert_int_equal(a->items[5].kind, TJ_NUM);
    const tj_val *s = tj_get(&v, "s");
    assert_string_equal(s->s, "x\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80");
    assert_true(tj_get(&v, "t")->b);
    assert_int_equal(tj_get(&v, "n")->kind, TJ_NULL);
    assert_null(tj_get(&v, "missing"));
    tj_free(&v);
    const char *bad[] = {"",    "{",   "[1,]",  "{\"a\"}", "{\"a\":1,}",  "01",
                         "-",   "1.",  "1e",    "\"\\x\"", "\"\\ud800\"", "\"\\udc00\"",
                         "\"a", "tru", "[1] 2", "{1:2}",   "\"\x01\"",    "9223372036854775808x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = 0;
        if (tj_parse(bad[i], strlen(bad[i]), &v, err, sizeof(err)) != -EBADMSG)
            fail_msg("accepted bad JSON #%zu: %s", i, bad[i]);
        assert_non_null(strstr(err, "bad JSON at byte"));
    }
    /* nesting is bounded */
    char deep[200];
    memset(deep, '[', sizeof(deep));
    assert_int_equal(tj_parse(deep, sizeof(deep), &v, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "deeper"));
}

static tb_schema schema2(void)
{
    static tp_column_def cols[3];
    static uint32_t key[1] = {0};
    cols[0] = (tp_column_def){.name = "id", .info = {.type = CB_UINT32}, .codec = TP_CODEC_LZ4};
    cols[1] = (tp_column_def){.name = "ts",
                              .info = {.type = CB_TIMESTAMP, .unit = CB_UNIT_MS, .utc = true},
                              .codec = TP_CODEC_ZSTD,
                              .level = 3};
    cols[2] = (tp_column_def){.name = "body\"x", .info = {.type = CB_STRING}, .nullable = true};
    tb_schema s = {.n_cols = 3,
                   .cols = cols,
                   .n_key = 1,
                   .key_cols = key,
                   .partition_by = "toYear(ts)",
                   .engine = "ReplacingMergeTree",
                   .version_col = 1,
                   .index_granularity = 8192,
                   .schema_version = 1};
    return s;
}

static tb__version v0(void)
{
    tb__version v = {0};
    v.version = 0;
    memcpy(v.writer, "0123456789abcdef0123456789abcdef", 33);
    v.time_ms = 1000;
    v.kind = 0;
    v.schema_version = 1;
    v.has_schema = true;
    v.schema = schema2();
    return v;
}

static void parse_back(const tb__version *v, tb__version *out)
{
    tp__bytes b = {0};
    assert_int_equal(tb__version_write(v, &b), 0);
    char err[256];
    if (tb__version_parse((const char *)b.p, b.len, out, err, sizeof(err)) < 0)
        fail_msg("%s in %.*s", err, (int)b.len, b.p);
    free(b.p);
}

static void test_version_roundtrip(void **state)
{
    (void)state;
    tb__version v = v0(), back;
    parse_back(&v, &back);
    assert_true(back.has_schema);
    assert_int_equal(back.schema.n_cols, 3);
    assert_string_equal(back.schema.cols[2].name, "body\"x");
    assert_true(back.schema.cols[2].nullable);
    assert_int_equal(back.schema.cols[1].info.unit, CB_UNIT_MS);
    assert_int_equal(back.schema.cols[1].codec, TP_CODEC_ZSTD);
    assert_int_equal(back.schema.cols[1].level, 3);
    assert_int_equal(back.schema.version_col, 1);
    assert_string_equal(back.schema.partition_by, "toYear(ts)");
    assert_string_equal(back.schema.engine, "ReplacingMergeTree");
    tb__version_free(&back);

    tb_part parts[2] = {
        {.name = "2019_aa",
         .partition = "2019",
         .rows = 10,
         .bytes = 100,
         .min_block = 1,
         .max_block = 1},
        {.name = "2020_bb",
         .partition = "2020",
         .rows = 5,
         .bytes = 50,
         .min_block = 1,
         .max_block = 1},
    };
    char *rem[] = {"2018_cc"};
    tb_dedup_id dd[] = {{"2019_ffee", 1234}};
    tb__version v1 = {.version = 1,
                      .time_ms = 2000,
                      .kind = TB_COMMIT_INSERT,
                      .schema_version = 1,
                      .add = parts,
                      .n_add = 2,
                      .remove = rem,
                      .n_remove = 1,
                      .dedup = dd,
                      .n_dedup = 1};
    memcpy(v1.writer, "ffffffffffffffffffffffffffffffff", 33);
    parse_back(&v1, &back);
    assert_int_equal(back.n_add, 2);
    assert_string_equal(back.add[1].name, "2020_bb");
    assert_int_equal(back.add[0].rows, 10);
    assert_int_equal(back.n_remove, 1);
    assert_int_equal(back.n_dedup, 1);
    assert_int_equal(back.dedup[0].time_ms, 1234);
    assert_string_equal(back.writer, "ffffffffffffffffffffffffffffffff");
    tb__version_free(&back);

    /* damaged versions are refused with a reason */
    const char *bad[] = {
        "{}",
        "{\"format\":2}",
        "{\"format\":1,\"version\":1,\"writer\":\"xyz\",\"time_ms\":1,\"kind\":\"insert\","
        "\"schema_version\":1,\"add\":[],\"remove\":[],\"purge\":[],\"dedup\":[]}",
        "{\"format\":1,\"version\":1,\"writer\":\"0123456789abcdef0123456789abcdef\","
        "\"time_ms\":1,\"kind\":\"insert\",\"schema_version\":1,\"add\":[{\"name\":\"a/b\","
        "\"partition\":\"p\",\"rows\":1,\"bytes\":1,\"min_block\":1,\"max_block\":1,"
        "\"level\":0}],\"remove\":[],\"purge\":[],\"dedup\":[]}",
        "{\"format\":1,\"version\":1,\"writer\":\"0123456789abcdef0123456789abcdef\","
        "\"time_ms\":1,\"kind\":\"insert\",\"schema_version\":1,\"add\":[{\"name\":\"a\","
        "\"partition\":\"p\",\"rows\":1,\"bytes\":1,\"min_block\":5,\"max_block\":4,"
        "\"level\":0}],\"remove\":[],\"purge\":[],\"dedup\":[]}",
        "{\"format\":1,\"version\":3,\"writer\":\"0123456789abcdef0123456789abcdef\","
        "\"time_ms\":1,\"kind\":\"create\",\"schema_version\":1,\"add\":[],\"remove\":[],"
        "\"purge\":[],\"dedup\":[]}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[256] = "";
        if (tb__version_parse(bad[i], strlen(bad[i]), &back, err, sizeof(err)) != -EBADMSG)
            fail_msg("accepted damaged version #%zu", i);
        assert_true(err[0] != 0);
    }
}

static tb__version ins(uint64_t ver, int64_t t, const char *name, const char *block)
{
    static tb_part p[1];
    static tb_dedup_id d[1];
    static char nm[64], bl[64];
    snprintf(nm, sizeof(nm), "%s", name);
    p[0] = (tb_part){
        .name = nm, .partition = "all", .rows = 1, .bytes = 1, .min_block = ver, .max_block = ver};
    tb__version v = {.version = ver,
                     .time_ms = t,
                     .kind = TB_COMMIT_INSERT,
                     .schema_version = 1,
                     .add = p,
                     .n_add = 1};
    if (block) {
        snprintf(bl, sizeof(bl), "%s", block);
        d[0] = (tb_dedup_id){bl, t};
        v.dedup = d;
        v.n_dedup = 1;
    }
    return v;
}

static void test_apply_and_checkpoint(void **state)
{
    (void)state;
    tb_snapshot s = {0};
    char err[256];
    tb__version v = v0();
    assert_int_equal(tb__apply(&s, &v, 3, 3600, err, sizeof(err)), 0);
    /* out of order */
    tb__version x = ins(2, 2000, "p2", NULL);
    assert_int_equal(tb__apply(&s, &x, 3, 3600, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "does not follow"));
    char name[16], block[16];
    for (uint64_t i = 1; i <= 5; i++) {
        snprintf(name, sizeof(name), "p%llu", (unsigned long long)i);
        snprintf(block, sizeof(block), "all_b%llu", (unsigned long long)i);
        x = ins(i, (int64_t)i * 1000, name, block);
        assert_int_equal(tb__apply(&s, &x, 3, 3600, err, sizeof(err)), 0);
    }
    assert_int_equal(s.n_parts, 5);
    /* the window keeps the last 3 ids */
    assert_int_equal(s.n_dedup, 3);
    assert_string_equal(s.dedup[0].id, "all_b3");
    /* and drops ids older than the window's seconds */
    x = ins(6, 3600 * 1000 + 4500, "p6", "all_b6");
    assert_int_equal(tb__apply(&s, &x, 3, 3600, err, sizeof(err)), 0);
    assert_int_equal(s.n_dedup, 2); /* b5 (5 s) and b6 remain: b4 is 4 s + 3600 s old */
    assert_string_equal(s.dedup[0].id, "all_b5");
    /* a merge removes active parts only */
    char *rem[] = {"p1", "p2"};
    tb_part out = {.name = "m12",
                   .partition = "all",
                   .rows = 2,
                   .bytes = 2,
                   .min_block = 1,
                   .max_block = 2,
                   .level = 1};
    tb__version m = {.version = 7,
                     .time_ms = 9000000,
                     .kind = TB_COMMIT_MERGE,
                     .schema_version = 1,
                     .add = &out,
                     .n_add = 1,
                     .remove = rem,
                     .n_remove = 2};
    assert_int_equal(tb__apply(&s, &m, 3, 3600, err, sizeof(err)), 0);
    assert_int_equal(s.n_parts, 5);
    assert_int_equal(s.n_removed, 2);
    assert_string_equal(s.parts[0].name, "m12"); /* sorted by min_block */
    m.version = 8;
    m.add = NULL;
    m.n_add = 0;
    assert_int_equal(tb__apply(&s, &m, 3, 3600, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "not active"));
    assert_int_equal(s.n_parts, 5); /* unchanged by the failed apply */
    /* checkpoint round trip */
    tp__bytes b = {0};
    assert_int_equal(tb__checkpoint_write(&s, &b), 0);
    tb_snapshot c;
    if (tb__checkpoint_parse((const char *)b.p, b.len, &c, err, sizeof(err)) < 0)
        fail_msg("%s", err);
    free(b.p);
    assert_int_equal(c.version, 7);
    assert_int_equal(c.n_parts, s.n_parts);
    assert_int_equal(c.n_removed, 2);
    assert_int_equal(c.removed[0].removed_ms, 9000000);
    assert_int_equal(c.n_dedup, s.n_dedup);
    for (size_t i = 0; i < c.n_parts; i++) {
        assert_string_equal(c.parts[i].name, s.parts[i].name);
        assert_int_equal(c.parts[i].created_ms, s.parts[i].created_ms);
        assert_int_equal(c.parts[i].max_block, s.parts[i].max_block);
    }
    assert_int_equal(c.schema.n_cols, 3);
    /* purge forgets removed parts */
    char *pg[] = {"p1"};
    tb__version p = {.version = 8,
                     .time_ms = 9000001,
                     .kind = TB_COMMIT_PURGE,
                     .schema_version = 1,
                     .purge = pg,
                     .n_purge = 1};
    assert_int_equal(tb__apply(&c, &p, 3, 3600, err, sizeof(err)), 0);
    assert_int_equal(c.n_removed, 1);
    assert_string_equal(c.removed[0].name, "p2");
    tb__snapshot_deinit(&c);
    tb__snapshot_deinit(&s);
}

static void test_block_ids(void **state)
{
    (void)state;
    uint8_t h1[16] = {1}, h2[16] = {2};
    char a[TB_NAME_MAX], b[TB_NAME_MAX], c[TB_NAME_MAX], d[TB_NAME_MAX];
    tb_block_id("2019", h1, NULL, 0, a);
    tb_block_id("2019", h1, NULL, 7, b);
    assert_string_equal(a, b); /* the data decides, not the sequence */
    tb_block_id("2019", h2, NULL, 0, c);
    assert_string_not_equal(a, c);
    assert_int_equal(strlen(a), 4 + 1 + 32);
    assert_true(tb__name_ok(a));
    tb_block_id("2019", h1, "tok", 1, c);
    tb_block_id("2019", h2, "tok", 1, d);
    assert_string_equal(c, d); /* the token decides */
    tb_block_id("2019", h2, "tok", 2, d);
    assert_string_not_equal(c, d);
    tb_block_id("2020", h1, NULL, 0, d);
    assert_string_not_equal(a, d);
    assert_false(tb__name_ok("a/b"));
    assert_false(tb__name_ok(""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_version_roundtrip),
        cmocka_unit_test(test_apply_and_checkpoint),
        cmocka_unit_test(test_block_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
