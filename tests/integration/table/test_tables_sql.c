/* SPDX-License-Identifier: Apache-2.0
 *
 * test_tables_sql.c: MergeTree tables as a user types them, through
 * eng_run() against the harness S3 server: CREATE / SHOW TABLES / DESCRIBE /
 * system tables / DROP / TRUNCATE; INSERT ... VALUES and ... FORMAT (the
 * data after the statement, and from the caller's buffer); ClickHouse's
 * conversions, and an impossible one naming column and row with nothing
 * committed; deduplication (a retried INSERT, insert_deduplication_token,
 * insert_deduplicate = 0); OPTIMIZE [FINAL]; ReplacingMergeTree with
 * optimize_on_insert and FINAL; TOO_MANY_PARTS; max_memory_usage; a missing
 * table, a column-count mismatch, a ragged CSV; a store without conditional
 * writes refused at the first write; the insert's tracked peak against
 * 3 x max_insert_threads x min_insert_block_size_bytes.
 */
#include "eng.h"
#include "harness.h"
#include "s3_test_util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static h_env *env;
static h_s3 *s3, *s3_plain;
static tb_wh wh, wh_plain;

static void wh_at(tb_wh *w, const h_s3 *s, const char *url)
{
    s3_config cfg;
    t_s3_config(&cfg, h_s3_endpoint(s), NULL, NULL);
    char err[256];
    assert_int_equal(tb_wh_init(w, url, &cfg, err, sizeof(err)), 0);
}

static int setup(void **state)
{
    (void)state;
    if (h_env_create(&env, "test_tables_sql") < 0)
        return -1;
    int rc = h_s3_start(env, &s3, NULL);
    if (rc == -ENOPKG)
        h_skip(h_last_error());
    if (rc < 0)
        return -1;
    h_s3_opts o = {.name = "s3plain", .no_conditional_writes = 1};
    if (h_s3_start(env, &s3_plain, &o) < 0)
        return -1;
    wh_at(&wh, s3, "s3://" H_S3_DEFAULT_BUCKET "/wh/");
    wh_at(&wh_plain, s3_plain, "s3://" H_S3_DEFAULT_BUCKET "/wh/");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    h_env_destroy(&env);
    return 0;
}

static const void *g_input;
static size_t g_input_len;

/* Runs sql against the warehouse: rc; the TSV output in *out (malloc'ed). */
static int run_at(const tb_wh *w, const char *sql, char **out, char *err, size_t errlen,
                  eng_result *res)
{
    size_t len = 0;
    FILE *f = open_memstream(out, &len);
    assert_non_null(f);
    eng_ctx ctx = {.out = f,
                   .format = ENG_FMT_TSV,
                   .max_threads = 2,
                   .warehouse = w,
                   .input = g_input,
                   .input_len = g_input_len};
    int rc = eng_run(&ctx, sql, strlen(sql), NULL, res, err, errlen);
    fclose(f);
    return rc;
}

/* Runs sql, which must succeed; returns its output (caller frees). */
static char *q(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *q(const char *fmt, ...)
{
    char sql[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    char *out = NULL, err[ENG_MSG_MAX];
    int rc = run_at(&wh, sql, &out, err, sizeof(err), NULL);
    if (rc < 0)
        fprintf(stderr, "failed: %s\n  %s\n", err, sql);
    assert_int_equal(rc, 0);
    return out;
}

static void q_is(const char *want, const char *sql)
{
    char *out = q("%s", sql);
    if (strcmp(out, want) != 0)
        fprintf(stderr, "%s\n  gave: [%s]\n  want: [%s]\n", sql, out, want);
    assert_string_equal(out, want);
    free(out);
}

/* sql must fail at warehouse w; every needle must be in the message. */
static void fails_at(const tb_wh *w, const char *sql, ...)
{
    char *out = NULL, err[ENG_MSG_MAX] = "";
    int rc = run_at(w, sql, &out, err, sizeof(err), NULL);
    free(out);
    if (rc >= 0)
        fprintf(stderr, "expected an error from: %s\n", sql);
    assert_true(rc < 0);
    va_list ap;
    va_start(ap, sql);
    for (const char *n; (n = va_arg(ap, const char *));) {
        if (!strstr(err, n))
            fprintf(stderr, "error '%s' lacks '%s'\n", err, n);
        assert_non_null(strstr(err, n));
    }
    va_end(ap);
}
#define fails(...) fails_at(&wh, __VA_ARGS__, NULL)

static void test_ddl_and_catalog(void **state)
{
    (void)state;
    free(q("CREATE TABLE t1 (id UInt32, s LowCardinality(String), d Date, dt DateTime, "
           "d32 Date32, f FixedString(3), dec Decimal(10, 2), b Bool, "
           "n Nullable(Int16) CODEC(ZSTD(3))) ENGINE = MergeTree ORDER BY id "
           "PARTITION BY toYear(d) SETTINGS index_granularity = 128"));
    free(q("CREATE TABLE IF NOT EXISTS t1 (x UInt8) ENGINE = MergeTree ORDER BY x"));
    fails("CREATE TABLE t1 (x UInt8) ENGINE = MergeTree ORDER BY x", "already exists",
          "TABLE_ALREADY_EXISTS");
    fails("CREATE TABLE bad (x UInt8) ENGINE = Log", "engine Log is not supported");
    fails("CREATE TABLE bad (x Map(String, UInt8)) ENGINE = MergeTree ORDER BY tuple()",
          "Map(String, UInt8) is not supported");
    fails("CREATE TABLE bad (x Nullable(UInt8)) ENGINE = MergeTree ORDER BY x",
          "cannot be Nullable");
    fails("CREATE TABLE bad (x UInt8) ENGINE = MergeTree", "needs ORDER BY");
    fails("CREATE TABLE bad (x UInt8) ENGINE = MergeTree ORDER BY y", "column y");
    fails("CREATE TABLE bad (x UInt8) ENGINE = MergeTree ORDER BY x SETTINGS index_granularty = 5",
          "unknown table setting", "index_granularity");
    fails("CREATE TABLE bad (x UInt8) ENGINE = MergeTree ORDER BY x PARTITION BY nosuch(x)",
          "PARTITION BY");
    free(q("CREATE TABLE t2 (k String, v UInt64) ENGINE = ReplacingMergeTree(v) ORDER BY k"));
    q_is("t1\nt2\n", "SHOW TABLES");
    q_is("t2\n", "SHOW TABLES LIKE '%2'");
    q_is("id\tUInt32\t\t\t\t\t\ns\tLowCardinality(String)\t\t\t\t\t\nd\tDate\t\t\t\t\t\n"
         "dt\tDateTime\t\t\t\t\t\nd32\tDate32\t\t\t\t\t\nf\tFixedString(3)\t\t\t\t\t\n"
         "dec\tDecimal(10, 2)\t\t\t\t\t\nb\tBool\t\t\t\t\t\nn\tNullable(Int16)\t\t\t\t\t\n",
         "DESCRIBE t1");
    q_is("default\tt1\tMergeTree\tid\ttoYear(d)\n"
         "default\tt2\tReplacingMergeTree\tk\t\n",
         "SELECT database, name, engine, sorting_key, partition_key FROM system.tables "
         "ORDER BY name");
    q_is("n\tNullable(Int16)\t9\tCODEC(ZSTD(3))\t0\n"
         "d\tDate\t3\t\t1\n",
         "SELECT name, type, position, compression_codec, is_in_partition_key FROM "
         "system.columns WHERE table = 't1' AND name IN ('n', 'd') ORDER BY name DESC");
    /* a column read by a key expression is in that key, as ClickHouse counts it */
    free(q("CREATE TABLE kx (d DateTime, k UInt32, v String) ENGINE = MergeTree "
           "PARTITION BY toYYYYMM(d) ORDER BY (toStartOfHour(d), k) PRIMARY KEY toStartOfHour(d)"));
    q_is("d\t1\t1\t1\nk\t0\t1\t0\nv\t0\t0\t0\n",
         "SELECT name, is_in_partition_key, is_in_sorting_key, is_in_primary_key FROM "
         "system.columns WHERE table = 'kx' ORDER BY position");
    free(q("DROP TABLE kx"));
    /* another process pointed at the same warehouse sees the same tables */
    tb_wh other;
    wh_at(&other, s3, "s3://" H_S3_DEFAULT_BUCKET "/wh/");
    char *out = NULL, err[ENG_MSG_MAX];
    assert_int_equal(run_at(&other, "SHOW TABLES FROM default", &out, err, sizeof(err), NULL), 0);
    assert_string_equal(out, "t1\nt2\n");
    free(out);
    fails("SELECT * FROM nosuch", "table default.nosuch does not exist", "UNKNOWN_TABLE");
    fails("INSERT INTO nosuch VALUES (1)", "does not exist");
    fails("SELECT * FROM system.nosuch",
          "system.tables, system.columns, system.parts and system.clusters");
    free(q("DROP TABLE t2"));
    q_is("t1\n", "SHOW TABLES");
    fails("DROP TABLE t2", "does not exist");
    free(q("DROP TABLE IF EXISTS t2"));
}

static void test_insert_values_format_and_conversions(void **state)
{
    (void)state;
    free(q("INSERT INTO t1 VALUES (3, 'c', '2020-01-02', '2020-01-02 03:04:05', '1950-01-01', "
           "'ab', 12.345, true, -5), (1, 'a', '2021-05-06', 1600000000, '2200-12-31', 'xyz', "
           "-7, 0, NULL)"));
    free(q("INSERT INTO t1 (id, d) VALUES (2, '2020-03-04')"));
    q_is("1\ta\t2021-05-06\t2020-09-13 12:26:40\t2200-12-31\txyz\t-7\tfalse\t\\N\n"
         "2\t\t2020-03-04\t1970-01-01 00:00:00\t1970-01-01\t\\0\\0\\0\t0\tfalse\t\\N\n"
         "3\tc\t2020-01-02\t2020-01-02 03:04:05\t1950-01-01\tab\\0\t12.34\ttrue\t-5\n",
         "SELECT * FROM t1 ORDER BY id");
    /* FORMAT: the data after the statement, and the caller's buffer */
    free(q(
        "INSERT INTO t1 (id, s, d) FORMAT JSONEachRow\n"
        "{\"id\": 10, \"s\": \"j\", \"d\": \"2022-01-01\"}\n{\"id\": 11, \"d\": \"2022-01-02\"}\n"));
    static const char csv[] = "id,d,n\n12,2022-02-02,7\n13,2022-02-03,\\N\n";
    g_input = csv;
    g_input_len = sizeof(csv) - 1;
    free(q("INSERT INTO t1 FORMAT CSVWithNames"));
    static const char tsv[] = "14\tx\t2023-01-01\n";
    g_input = tsv;
    g_input_len = sizeof(tsv) - 1;
    free(q("INSERT INTO t1 (id, s, d) FORMAT TSV"));
    g_input = NULL;
    g_input_len = 0;
    q_is("10\tj\t\\N\n11\t\t\\N\n12\t\t7\n13\t\t\\N\n14\tx\t\\N\n",
         "SELECT id, s, n FROM t1 WHERE id >= 10 ORDER BY id");
    q_is("8\n", "SELECT count() FROM t1");
    /* impossible conversions: an error naming column and row, nothing committed */
    fails("INSERT INTO t1 (id, d) VALUES (20, '2020-01-01'), (21, 'soon')", "row 2",
          "column d (Date)", "soon", "nothing of this INSERT was committed");
    fails("INSERT INTO t1 (id, d, f) VALUES (22, '2020-01-01', 'toolong')", "column f",
          "FixedString(3)");
    fails("INSERT INTO t1 (id, d, dec) VALUES (23, '2020-01-01', 123456789012)", "column dec",
          "DECIMAL_OVERFLOW");
    fails("INSERT INTO t1 (id, d) FORMAT JSONEachRow\n{\"id\": \"x1\", \"d\": \"2020-01-01\"}",
          "column id (UInt32)", "x1");
    fails("INSERT INTO t1 (id, d) FORMAT CSV\n30,2020-01-01\n31\n", "line 2");
    fails("INSERT INTO t1 (id, nosuch) VALUES (1, 2)", "no column nosuch");
    fails("INSERT INTO t1 (id, d) VALUES (1, '2020-01-01', 3)", "NUMBER_OF_COLUMNS_DOESNT_MATCH");
    /* a SELECT without FROM reads system.one: its 2 columns are too few */
    fails("INSERT INTO t1 SELECT 1, 2", "NUMBER_OF_COLUMNS_DOESNT_MATCH");
    fails("INSERT INTO t1 (id, d) SELECT id FROM t1", "NUMBER_OF_COLUMNS_DOESNT_MATCH");
    fails("INSERT INTO t1 (id, d) FORMAT Avro\n", "unknown input format");
    q_is("8\n", "SELECT count() FROM t1");
    /* INSERT SELECT from a table */
    free(q("CREATE TABLE t3 ENGINE = MergeTree ORDER BY id AS SELECT id, s FROM t1 WHERE id < 10"));
    q_is("id\tUInt32\t\t\t\t\t\ns\tString\t\t\t\t\t\n", "DESCRIBE t3");
    q_is("1\ta\n2\t\n3\tc\n", "SELECT * FROM t3 ORDER BY id");
}

/* DEFAULT expressions: filled where an INSERT leaves the column out (a
 * column list, INSERT ... SELECT of fewer columns, a JSONEachRow row without
 * the key, also of a Nullable column) and where a non-Nullable column is
 * given NULL; an expression may
 * read other columns, filled ones too; shown by DESCRIBE and system.columns;
 * bad ones refused at CREATE; MATERIALIZED and ALIAS refused by name. */
static void test_column_defaults(void **state)
{
    (void)state;
    free(q("CREATE TABLE df (k UInt32, a String DEFAULT concat('k', toString(k)), "
           "b UInt64 DEFAULT k * 2 + length(a), d Date DEFAULT toDate('2020-01-02') + k, "
           "n Nullable(Int32), z UInt8 DEFAULT 7 CODEC(ZSTD(1))) ENGINE = MergeTree "
           "ORDER BY (b, k)"));
    free(q("INSERT INTO df (k) VALUES (1), (2)"));
    free(q("INSERT INTO df (k, a, z) VALUES (3, 'xyz', 1), (4, NULL, NULL)"));
    free(
        q("INSERT INTO df FORMAT JSONEachRow\n{\"k\": 5}\n"
          "{\"k\": 6, \"a\": \"yy\", \"n\": 3}\n{\"k\": 7, \"b\": null, \"d\": \"2000-01-01\"}\n"));
    free(q("INSERT INTO df (k, z) SELECT number + 10, 9 FROM numbers(2)"));
    q_is("1\tk1\t4\t2020-01-03\t\\N\t7\n"
         "2\tk2\t6\t2020-01-04\t\\N\t7\n"
         "3\txyz\t9\t2020-01-05\t\\N\t1\n"
         "4\tk4\t10\t2020-01-06\t\\N\t7\n"
         "5\tk5\t12\t2020-01-07\t\\N\t7\n"
         "6\tyy\t14\t2020-01-08\t3\t7\n"
         "7\tk7\t16\t2000-01-01\t\\N\t7\n"
         "10\tk10\t23\t2020-01-12\t\\N\t9\n"
         "11\tk11\t25\t2020-01-13\t\\N\t9\n",
         "SELECT * FROM df ORDER BY k");
    /* the sorting key b was filled before the rows were sorted */
    q_is("4\n6\n9\n", "SELECT b FROM df ORDER BY b LIMIT 3");
    q_is("k\tUInt32\t\t\t\t\t\n"
         "a\tString\tDEFAULT\tconcat(\\'k\\', toString(k))\t\t\t\n"
         "b\tUInt64\tDEFAULT\tk * 2 + length(a)\t\t\t\n"
         "d\tDate\tDEFAULT\ttoDate(\\'2020-01-02\\') + k\t\t\t\n"
         "n\tNullable(Int32)\t\t\t\t\t\n"
         "z\tUInt8\tDEFAULT\t7\t\t\t\n",
         "DESCRIBE df");
    q_is("b\tDEFAULT\tk * 2 + length(a)\nk\t\t\n",
         "SELECT name, default_kind, default_expression FROM system.columns WHERE table = 'df' "
         "AND name IN ('k', 'b') ORDER BY name");
    fails("CREATE TABLE bad (a UInt32 DEFAULT b + 1, b UInt32 DEFAULT a) ENGINE = MergeTree "
          "ORDER BY tuple()",
          "depends on itself", "CYCLIC_ALIASES");
    fails("CREATE TABLE bad (a UInt32 DEFAULT nosuch + 1) ENGINE = MergeTree ORDER BY tuple()",
          "names column nosuch");
    fails("CREATE TABLE bad (a UInt32 DEFAULT sum(a)) ENGINE = MergeTree ORDER BY tuple()",
          "aggregate");
    fails("CREATE TABLE bad (a UInt32 MATERIALIZED 1) ENGINE = MergeTree ORDER BY tuple()",
          "MATERIALIZED expressions are not supported");
    fails("CREATE TABLE bad (a UInt32 ALIAS 1) ENGINE = MergeTree ORDER BY tuple()",
          "ALIAS expressions are not supported");
    fails("CREATE TABLE bad (a DEFAULT 1) ENGINE = MergeTree ORDER BY tuple()",
          "needs its type before DEFAULT");
    /* a bad given value is still named by column and row */
    fails("INSERT INTO df (k, b) VALUES (20, 1), (21, 'x')", "column b", "row 2");
    free(q("DROP TABLE df"));

    /* a Nullable column with a DEFAULT: a JSONEachRow row without the key gets
     * the DEFAULT, an explicit null stays NULL (ClickHouse's
     * input_format_defaults_for_omitted_fields); a default that reads it sees
     * the filled value; VALUES' NULL stays NULL */
    free(q("CREATE TABLE dn (k UInt32, a Nullable(Int32) DEFAULT 7, "
           "s Nullable(String) DEFAULT concat('x', toString(k)), c Int64 DEFAULT ifNull(a, -1) + 1, "
           "t Nullable(DateTime) DEFAULT toDateTime('2021-02-03 04:05:06')) "
           "ENGINE = MergeTree ORDER BY k"));
    free(q("INSERT INTO dn FORMAT JSONEachRow\n{\"k\": 1}\n"
           "{\"k\": 2, \"a\": null, \"s\": null, \"t\": null}\n"
           "{\"k\": 3, \"a\": 5, \"s\": \"z\", \"c\": 40, \"t\": \"2000-01-01 00:00:00\"}\n"
           "{\"k\": 4, \"s\": null}\n"));
    free(q("INSERT INTO dn (k, a, s) VALUES (5, NULL, NULL)"));
    q_is("1\t7\tx1\t8\t2021-02-03 04:05:06\n"
         "2\t\\N\t\\N\t0\t\\N\n"
         "3\t5\tz\t40\t2000-01-01 00:00:00\n"
         "4\t7\t\\N\t8\t2021-02-03 04:05:06\n"
         "5\t\\N\t\\N\t0\t2021-02-03 04:05:06\n",
         "SELECT * FROM dn ORDER BY k");
    free(q("DROP TABLE dn"));
}

/* Array(T) columns: VALUES, INSERT ... SELECT with element conversions,
 * JSONEachRow and TSV text ([..] with JSON's and ClickHouse's quoting, a
 * surrogate pair as one code point, NULL elements), an omitted column as [] and a DEFAULT array; the values
 * survive a merge, read back through has/length/arrayJoin and system.columns
 * names the type; what tables refuse is named. */
static void test_array_columns(void **state)
{
    (void)state;
    free(q("CREATE TABLE ar (k UInt32, tags Array(String), n Array(Nullable(Int64)), "
           "f Array(Float64) DEFAULT [0.5, k], d Array(Date), p Array(Decimal(9, 2))) "
           "ENGINE = MergeTree ORDER BY k"));
    free(q("INSERT INTO ar VALUES (1, ['a', 'b'], [1, NULL], [1], ['2020-01-02'], [1.25])"));
    free(q("INSERT INTO ar (k, tags, n) SELECT number + 10, splitByChar(',', 'x,y'), "
           "[toUInt8(number), NULL] FROM numbers(2)"));
    free(q(
        "INSERT INTO ar FORMAT JSONEachRow\n"
        "{\"k\": 2, \"tags\": [\"q\\\"r\", \"\\u00e9\", \"\\ud83d\\ude00\"], \"n\": [null, -3], \"d\": [\"2021-05-06\"], "
        "\"p\": [2.5, \"3.75\"]}\n{\"k\": 3}\n"));
    free(q("INSERT INTO ar (k, tags, p) FORMAT TSV\n4\t['it\\\\'s','']\t[0.01]\n"));
    const char *want =
        "1\t['a','b']\t[1,NULL]\t[1]\t['2020-01-02']\t[1.25]\n"
        "2\t['q\"r','\xc3\xa9','\xf0\x9f\x98\x80']\t[NULL,-3]\t[0.5,2]\t['2021-05-06']\t[2.5,3.75]\n"
        "3\t[]\t[]\t[0.5,3]\t[]\t[]\n"
        "4\t['it\\'s','']\t[]\t[0.5,4]\t[]\t[0.01]\n"
        "10\t['x','y']\t[0,NULL]\t[0.5,10]\t[]\t[]\n"
        "11\t['x','y']\t[1,NULL]\t[0.5,11]\t[]\t[]\n";
    q_is(want, "SELECT * FROM ar ORDER BY k");
    free(q("OPTIMIZE TABLE ar FINAL"));
    q_is(want, "SELECT * FROM ar ORDER BY k");
    q_is("1\t2\n", "SELECT count(), sum(length(tags)) FROM ar WHERE has(tags, 'b')");
    q_is("x\t2\ny\t2\n",
         "SELECT t, count() FROM ar ARRAY JOIN tags AS t WHERE k >= 10 GROUP BY t ORDER BY t");
    q_is("[0.5,2]\t1\n[1]\t1\n", "SELECT f, count() FROM ar WHERE k < 3 GROUP BY f ORDER BY f");
    q_is("n\tArray(Nullable(Int64))\ntags\tArray(String)\np\tArray(Decimal(9, 2))\n",
         "SELECT name, type FROM system.columns WHERE table = 'ar' AND name IN ('tags', 'n', 'p') "
         "ORDER BY name = 'p', name");
    fails("INSERT INTO ar (k, n) VALUES (5, ['x'])", "column n", "cannot parse the array element");
    fails("INSERT INTO ar (k, tags) VALUES (5, [NULL])", "column tags",
          "elements are not Nullable");
    fails("INSERT INTO ar (k, tags) VALUES (5, 'not an array')", "column tags",
          "cannot parse 'not an array'");
    fails("INSERT INTO ar (k, tags) FORMAT TSV\n5\t['a'\n", "column tags", "cannot parse");
    q_is("6\n", "SELECT count() FROM ar"); /* nothing of the failed INSERTs */
    fails("CREATE TABLE bad (a Array(UInt8)) ENGINE = MergeTree ORDER BY a",
          "arrays cannot be in the sorting key");
    fails("CREATE TABLE bad (a Nullable(Array(UInt8))) ENGINE = MergeTree ORDER BY tuple()",
          "an Array cannot be inside Nullable");
    fails("CREATE TABLE bad (a Array(Array(UInt8))) ENGINE = MergeTree ORDER BY tuple()",
          "nested arrays");
    free(q("DROP TABLE ar"));
}

/* Tables in composed queries: a join of a table with a subquery over it,
 * INSERT ... SELECT from a UNION ALL in a subquery; UNION ALL straight in
 * INSERT ... SELECT is refused by name. */
static void test_tables_in_composed_queries(void **state)
{
    (void)state;
    free(q("CREATE TABLE tc (id UInt32, d Date) ENGINE = MergeTree ORDER BY id"));
    free(q("INSERT INTO tc SELECT * FROM (SELECT 5 AS id, toDate('2020-01-01') AS d FROM t1 "
           "LIMIT 1 UNION ALL SELECT id, d FROM t1 WHERE id < 3)"));
    q_is("1\t1\t2021-05-06\n2\t1\t2020-03-04\n5\t0\t1970-01-01\n",
         "SELECT c.id, b.n, b.d FROM tc AS c LEFT JOIN (SELECT id, count() AS n, any(d) AS d "
         "FROM t1 GROUP BY id) AS b USING (id) ORDER BY c.id");
    fails("INSERT INTO tc SELECT 7, '2020-01-01' FROM t1 LIMIT 1 UNION ALL SELECT 8, "
          "'2020-01-01' FROM t1 LIMIT 1",
          "UNION ALL is not supported in INSERT");
    q_is("3\n", "SELECT count() FROM tc");
    free(q("DROP TABLE tc"));
}

static void test_dedup_truncate_optimize(void **state)
{
    (void)state;
    free(q("CREATE TABLE d (k UInt64, v String) ENGINE = MergeTree ORDER BY k "
           "PARTITION BY k %% 3"));
    const char *ins = "INSERT INTO d VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')";
    free(q("%s", ins));
    free(q("%s", ins)); /* a retry of the same blocks: dropped */
    q_is("4\n", "SELECT count() FROM d");
    free(q("INSERT INTO d SETTINGS insert_deduplicate = 0 VALUES (1, 'a'), (2, 'b'), (3, 'c'), "
           "(4, 'd')"));
    q_is("8\n", "SELECT count() FROM d");
    /* with a token the blocks' ids come from it: other data, same token: dropped */
    free(q("INSERT INTO d SETTINGS insert_deduplication_token = 'tok1' VALUES (7, 'x')"));
    free(q("INSERT INTO d SETTINGS insert_deduplication_token = 'tok1' VALUES (7, 'x')"));
    free(q("INSERT INTO d SETTINGS insert_deduplication_token = 'tok2' VALUES (7, 'x')"));
    q_is("10\n", "SELECT count() FROM d");
    char *out = q("SELECT count() FROM system.parts WHERE table = 'd' AND active");
    int parts = atoi(out);
    free(out);
    assert_int_equal(parts, 8); /* 3 + 3 partitions, one part of each token */
    free(q("OPTIMIZE TABLE d FINAL"));
    q_is("3\t10\n", "SELECT count(), sum(rows) FROM system.parts WHERE table = 'd' AND active");
    /* the guide's own query of its table's size */
    out = q("SELECT formatReadableQuantity(sum(rows)), sum(data_compressed_bytes) > 0 FROM "
            "system.parts WHERE active AND table = 'd'");
    assert_string_equal(out, "10.00\t1\n");
    free(out);
    q_is("1\t3\n", "SELECT min(level), count() FROM system.parts WHERE table = 'd' AND active "
                   "AND level >= 1");
    q_is("8\n", "SELECT count() FROM system.parts WHERE table = 'd' AND NOT active");
    q_is("10\t34\n", "SELECT count(), sum(k) FROM d");
    free(q("TRUNCATE TABLE d"));
    q_is("0\n", "SELECT count() FROM d");
    q_is("0\n", "SELECT count() FROM system.parts WHERE table = 'd' AND active");
}

static void test_replacing_merge_tree(void **state)
{
    (void)state;
    free(q("CREATE TABLE r (k String, ver UInt32, x Int64) ENGINE = ReplacingMergeTree(ver) "
           "ORDER BY k"));
    /* optimize_on_insert: one row per key within the block, the greatest version */
    free(q("INSERT INTO r VALUES ('a', 1, 10), ('b', 5, 20), ('a', 3, 30), ('a', 2, 40)"));
    q_is("a\t3\t30\nb\t5\t20\n", "SELECT * FROM r ORDER BY k");
    free(q("INSERT INTO r SETTINGS optimize_on_insert = 0 VALUES ('b', 4, 50), ('b', 7, 60), "
           "('c', 1, 70), ('c', 1, 80)"));
    q_is("6\n", "SELECT count() FROM r");
    /* FINAL: across parts; equal versions: the last inserted */
    q_is("a\t3\t30\nb\t7\t60\nc\t1\t80\n", "SELECT * FROM r FINAL ORDER BY k");
    q_is("3\t170\n", "SELECT count(), sum(x) FROM r FINAL");
    free(q("OPTIMIZE TABLE r FINAL"));
    q_is("a\t3\t30\nb\t7\t60\nc\t1\t80\n", "SELECT * FROM r ORDER BY k");
}

static void test_limits(void **state)
{
    (void)state;
    free(q(
        "CREATE TABLE m (k UInt64, s String) ENGINE = MergeTree ORDER BY k "
        "SETTINGS parts_to_delay_insert = 2, parts_to_throw_insert = 3, max_delay_to_insert = 0"));
    for (int i = 0; i < 3; i++)
        free(q("INSERT INTO m VALUES (%d, 'x')", i));
    fails("INSERT INTO m VALUES (9, 'y')", "Too many parts (3 with average size of",
          "in table 'default.m'", "Merges are processing significantly slower than inserts",
          "TOO_MANY_PARTS");
    free(q("INSERT INTO m SETTINGS parts_to_throw_insert = 10 VALUES (9, 'y')"));
    q_is("4\n", "SELECT count() FROM m");
    /* max_memory_usage: the insert stops, nothing of it committed */
    free(q("CREATE TABLE big (k UInt64, s String) ENGINE = MergeTree ORDER BY k"));
    fails("INSERT INTO big SELECT k, s FROM m SETTINGS max_memory_usage = 1",
          "MEMORY_LIMIT_EXCEEDED");
    q_is("0\n", "SELECT count() FROM big");
    /* a store that ignores conditional writes is refused at the first write */
    fails_at(&wh_plain, "CREATE TABLE p (k UInt8) ENGINE = MergeTree ORDER BY k",
             "conditional writes", NULL);
}

/* The insert's tracked peak stays within 3 x max_insert_threads x
 * min_insert_block_size_bytes (the S3 guide's sizing formula), and blocks are
 * cut by bytes when min_insert_block_size_rows is 0. */
static void test_insert_memory_budget(void **state)
{
    (void)state;
    free(q("CREATE TABLE src (k UInt64, s String) ENGINE = MergeTree ORDER BY k"));
    size_t cap = 1 << 20, o = 0;
    char *sql = malloc(cap);
    assert_non_null(sql);
    o += (size_t)snprintf(sql, cap, "INSERT INTO src VALUES ");
    for (int i = 0; i < 1000; i++)
        o += (size_t)snprintf(sql + o, cap - o, "%s(%d, '%0100d')", i ? ", " : "", i, i * 7919);
    char *out = NULL, err[ENG_MSG_MAX];
    assert_int_equal(run_at(&wh, sql, &out, err, sizeof(err), NULL), 0);
    free(out);
    free(sql);
    for (int d = 0; d < 9; d++)
        free(q("INSERT INTO src SELECT k + %d, s FROM src", 1000 << d));
    q_is("512000\n", "SELECT count() FROM src");
    free(q("CREATE TABLE dst (k UInt64, s String) ENGINE = MergeTree ORDER BY k"));
    const uint64_t block = 16u << 20;
    eng_result res;
    char ins[512];
    snprintf(ins, sizeof(ins),
             "INSERT INTO dst SELECT * FROM src SETTINGS max_insert_threads = 2, "
             "min_insert_block_size_rows = 0, min_insert_block_size_bytes = %llu",
             (unsigned long long)block);
    out = NULL;
    assert_int_equal(run_at(&wh, ins, &out, err, sizeof(err), &res), 0);
    free(out);
    fprintf(stderr, "insert of 512000 rows: peak %.1f MiB, budget %.1f MiB\n",
            (double)res.peak_memory / 1048576.0, 3.0 * 2 * (double)block / 1048576.0);
    assert_true(res.peak_memory > 0);
    assert_true((uint64_t)res.peak_memory <= 3 * 2 * block);
    q_is("512000\t131071744000\n", "SELECT count(), sum(k) FROM dst");
    out = q("SELECT count() FROM system.parts WHERE table = 'dst' AND active");
    assert_true(atoi(out) >= 3); /* about 57 MB of rows in blocks of 16 MiB */
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ddl_and_catalog),
        cmocka_unit_test(test_insert_values_format_and_conversions),
        cmocka_unit_test(test_tables_in_composed_queries),
        cmocka_unit_test(test_column_defaults),
        cmocka_unit_test(test_array_columns),
        cmocka_unit_test(test_dedup_truncate_optimize),
        cmocka_unit_test(test_replacing_merge_tree),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_insert_memory_budget),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
