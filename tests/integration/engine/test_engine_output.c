/* SPDX-License-Identifier: Apache-2.0
 *
 * test_engine_output.c: the engine's output written to files and read back.
 * Parquet (FORMAT Parquet and INTO OUTFILE 'x.parquet', the engine's own
 * writer) must be read by DuckDB with the same rows and the types ClickHouse
 * writes: every integer width signed and unsigned, floats, strings with NULLs
 * and empty ones, Bool, Date, DateTime64, Decimal (INT32, INT64 and, for the
 * Decimal(38, S) of sum(), FIXED_LEN_BYTE_ARRAY); no rows, one row, a glob
 * with an empty file, and more rows than one row group holds.
 * SELECT ... INTO OUTFILE 'f' [AND STDOUT] [APPEND | TRUNCATE] [FORMAT F]
 * writes the same bytes the format writes to the output, refuses a file that
 * exists without APPEND or TRUNCATE (as ClickHouse's client does), takes the
 * format from the file's extension, and is refused where the caller does not
 * allow files (a server). out_check.mjs is DuckDB's side (skips, 77, without
 * node or @duckdb/node-api).
 */
#include "duck_compare.h"
#include "eng.h"
#include "harness.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

static h_env *env;
static char dir[4096], script[4096];

static int node(char *const argv[])
{
    h_proc *p;
    int rc = h_proc_start(env, &p, "node", argv, NULL, NULL, 0);
    if (rc == -ENOENT)
        h_skip("node is not installed (it runs the DuckDB side, out_check.mjs)");
    if (rc < 0)
        return rc;
    int st = h_proc_wait(p, 120000);
    if (st == 77) {
        h_proc_print_log_tail(p, 5);
        h_skip("out_check.mjs needs @duckdb/node-api (see its log above)");
    }
    if (st == 127)
        h_skip("node is not installed (it runs the DuckDB side, out_check.mjs)");
    if (st != 0)
        h_proc_print_log_tail(p, 30);
    return st;
}

static int setup(void **state)
{
    (void)state;
    if (h_env_create(&env, "test_engine_output") < 0)
        return -1;
    h_env_path(env, dir, sizeof(dir), "data");
    if (h_source_path(script, sizeof(script), "tests/integration/engine/out_check.mjs") < 0)
        return -1;
    char *argv[] = {"node", script, "gen", dir, NULL};
    return node(argv) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    h_env_destroy(&env);
    return 0;
}

/* DuckDB's rows of sql (printed as ClickHouse prints them), malloc'ed. */
static char *duck(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *duck(const char *fmt, ...)
{
    char sql[8192], out[4300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    snprintf(out, sizeof(out), "%s/duck.tsv", dir);
    char *argv[] = {"node", script, "query", out, sql, NULL};
    assert_int_equal(node(argv), 0);
    char *t = dc_slurp(out);
    assert_non_null(t);
    return t;
}

/* Runs sql with the engine (TSV unless it says otherwise) into *out. */
static int run(const char *sql, char **out, char *err, size_t errlen, bool allow_outfile)
{
    size_t len = 0;
    FILE *f = open_memstream(out, &len);
    assert_non_null(f);
    eng_ctx ctx = {
        .out = f, .format = ENG_FMT_TSV, .max_threads = 2, .allow_outfile = allow_outfile};
    int rc = eng_run(&ctx, sql, strlen(sql), NULL, NULL, err, errlen);
    fclose(f);
    return rc;
}

static char *q(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *q(const char *fmt, ...)
{
    char sql[8192], err[ENG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    char *out = NULL;
    int rc = run(sql, &out, err, sizeof(err), true);
    if (rc < 0)
        fprintf(stderr, "the engine failed: %s\n  %s\n", err, sql);
    assert_int_equal(rc, 0);
    return out;
}

static void same(const char *name, char *got, char *want)
{
    bool ok = dc_same_text(name, got, want, false);
    free(got);
    free(want);
    assert_true(ok);
}

/* The source's columns as DuckDB prints what the engine wrote of them. */
#define DUCK_COLS                                                                                  \
    "Id, I8, I16, I32, U8, U16, U32, U64, F64, F32, S, B, strftime(D, '%%Y-%%m-%%d'), "            \
    "strftime(TS::TIMESTAMP, '%%Y-%%m-%%d %%H:%%M:%%S.%%f'), P, Q"

static void test_parquet_reads_back_in_duckdb(void **state)
{
    (void)state;
    /* every type, NULLs, through INTO OUTFILE (the name says Parquet) */
    free(q("SELECT * FROM file('%s/src.parquet') ORDER BY Id INTO OUTFILE '%s/all.parquet'", dir,
           dir));
    same("all", duck("SELECT " DUCK_COLS " FROM '%s/all.parquet' ORDER BY Id", dir),
         q("SELECT * FROM file('%s/src.parquet') ORDER BY Id", dir));
    /* the types ClickHouse writes */
    char *types = duck("SELECT string_agg(column_type, ',' ORDER BY rowid) FROM "
                       "(SELECT row_number() OVER () AS rowid, column_type FROM "
                       "(DESCRIBE SELECT * FROM '%s/all.parquet'))",
                       dir);
    assert_string_equal(types, "BIGINT,TINYINT,SMALLINT,INTEGER,UTINYINT,USMALLINT,UINTEGER,"
                               "UBIGINT,DOUBLE,FLOAT,VARCHAR,BOOLEAN,DATE,TIMESTAMP WITH TIME "
                               "ZONE,DECIMAL(12,2),DECIMAL(5,3)\n");
    free(types);
    /* FORMAT Parquet to the output: the same file */
    char path[4300], err[ENG_MSG_MAX];
    snprintf(path, sizeof(path), "%s/fmt.parquet", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    char sql[8192];
    snprintf(sql, sizeof(sql), "SELECT * FROM file('%s/src.parquet') ORDER BY Id FORMAT Parquet",
             dir);
    eng_ctx ctx = {.out = f, .format = ENG_FMT_TSV, .max_threads = 2};
    assert_int_equal(eng_run(&ctx, sql, strlen(sql), NULL, NULL, err, sizeof(err)), 0);
    assert_int_equal(fclose(f), 0);
    same("format", duck("SELECT " DUCK_COLS " FROM '%s/fmt.parquet' ORDER BY Id", dir),
         q("SELECT * FROM file('%s/src.parquet') ORDER BY Id", dir));
    /* no rows: a file with the schema and no row group */
    free(q("SELECT * FROM file('%s/src.parquet') WHERE Id < 0 INTO OUTFILE '%s/empty.parquet'", dir,
           dir));
    char *e =
        duck("SELECT count(*), (SELECT count(*) FROM (DESCRIBE SELECT * FROM '%s/empty.parquet')) "
             "FROM '%s/empty.parquet'",
             dir, dir);
    assert_string_equal(e, "0\t16\n");
    free(e);
    /* one row */
    free(q("SELECT * FROM file('%s/src.parquet') WHERE Id = 7 INTO OUTFILE '%s/one.parquet'", dir,
           dir));
    same("one", duck("SELECT " DUCK_COLS " FROM '%s/one.parquet'", dir),
         q("SELECT * FROM file('%s/src.parquet') WHERE Id = 7", dir));
    /* a glob with an empty file, and the engine's own reader on what it wrote */
    free(q("SELECT * FROM file('%s/glob/*.parquet') ORDER BY Id INTO OUTFILE '%s/glob.parquet'",
           dir, dir));
    same("glob", duck("SELECT " DUCK_COLS " FROM '%s/glob.parquet' ORDER BY Id", dir),
         q("SELECT * FROM file('%s/glob/*.parquet') ORDER BY Id", dir));
    same("glob_ours", q("SELECT * FROM file('%s/glob.parquet') ORDER BY Id", dir),
         q("SELECT * FROM file('%s/glob/*.parquet') ORDER BY Id", dir));
    /* aggregates: Decimal(38, 2) sums (16-byte FLBA), UInt64 counts */
    free(q("SELECT K, count() AS c, sum(Id) AS s, sum(CAST(Id AS Decimal(18, 2))) AS d FROM "
           "file('%s/big.parquet') GROUP BY K ORDER BY K INTO OUTFILE '%s/agg.parquet'",
           dir, dir));
    same(
        "agg", duck("SELECT K, c, s, d FROM '%s/agg.parquet' ORDER BY K", dir),
        q("SELECT K, count(), sum(Id), sum(CAST(Id AS Decimal(18, 2))) FROM file('%s/big.parquet') "
          "GROUP BY K ORDER BY K",
          dir));
    char *t = duck("SELECT column_type FROM (DESCRIBE SELECT d FROM '%s/agg.parquet')", dir);
    assert_string_equal(t, "DECIMAL(38,2)\n");
    free(t);
    /* 1.2M rows: two row groups */
    free(q("SELECT * FROM file('%s/big.parquet') INTO OUTFILE '%s/big_out.parquet'", dir, dir));
    char *g = duck("SELECT count(*), sum(Id), sum(K), (SELECT count(DISTINCT row_group_id) FROM "
                   "parquet_metadata('%s/big_out.parquet')) FROM '%s/big_out.parquet'",
                   dir, dir);
    assert_string_equal(g, "1200000\t719999400000\t599400000\t2\n");
    free(g);
}

/* Array(T) as a three-level LIST: empty arrays, NULL elements of a
 * Nullable(T) element type, strings, dates, decimals, groupArray's result;
 * DuckDB reads the rows and the element types back, so does our reader, and
 * the levels of a list column cross pages and row groups (1.2M rows). */
static void test_parquet_arrays(void **state)
{
    (void)state;
#define ARRAY_SQL                                                                                  \
    "SELECT Id, if(Id %% 3 = 0, [], [I32, I32 + 1, I32 + 2]) AS a, "                               \
    "splitByChar('_', ifNull(S, '')) AS s, [nullIf(U8, 7), NULL, toUInt8(1)] AS n, "               \
    "[D, D + 1] AS d, [P, P] AS p FROM file('%s/src.parquet')"
    free(q(ARRAY_SQL " ORDER BY Id INTO OUTFILE '%s/arr.parquet'", dir, dir));
    same("arrays",
         duck("SELECT Id, a, s, n, list_transform(d, x -> strftime(x, '%%Y-%%m-%%d')), p "
              "FROM '%s/arr.parquet' ORDER BY Id",
              dir),
         q(ARRAY_SQL " ORDER BY Id", dir));
    char *types = duck("SELECT string_agg(column_type, ',' ORDER BY rowid) FROM "
                       "(SELECT row_number() OVER () AS rowid, column_type FROM "
                       "(DESCRIBE SELECT * FROM '%s/arr.parquet'))",
                       dir);
    assert_string_equal(types, "BIGINT,BIGINT[],VARCHAR[],UTINYINT[],DATE[],DECIMAL(12,2)[]\n");
    free(types);
    same("arrays_ours", q("SELECT * FROM file('%s/arr.parquet') ORDER BY Id", dir),
         q(ARRAY_SQL " ORDER BY Id", dir));
    /* groupArray's result, and lists over two row groups and many pages */
    free(q("SELECT K, groupArray(Id) AS ids FROM (SELECT * FROM file('%s/big.parquet') ORDER BY "
           "Id) GROUP BY K ORDER BY K INTO OUTFILE '%s/garr.parquet'",
           dir, dir));
    char *g = duck(
        "SELECT count(*), sum(len(ids)), sum(list_sum(ids)), min(list_min(ids)), max(list_max(ids)) "
        "FROM '%s/garr.parquet'",
        dir);
    assert_string_equal(g, "1000\t1200000\t719999400000\t0\t1199999\n");
    free(g);
    free(q("SELECT Id, [Id, Id * 2] AS a, if(Id %% 2 = 0, [], ['x']) AS s FROM "
           "file('%s/big.parquet') INTO OUTFILE '%s/big_arr.parquet'",
           dir, dir));
    char *b = duck("SELECT count(*), sum(list_sum(a)), sum(len(s)), (SELECT count(DISTINCT "
                   "row_group_id) FROM parquet_metadata('%s/big_arr.parquet')) FROM "
                   "'%s/big_arr.parquet'",
                   dir, dir);
    assert_string_equal(b, "1200000\t2159998200000\t600000\t2\n");
    free(b);
    char *o =
        q("SELECT count(), sum(a[1] + a[2]), sum(length(s)) FROM file('%s/big_arr.parquet')", dir);
    assert_string_equal(o, "1200000\t2159998200000\t600000\n");
    free(o);
#undef ARRAY_SQL
}

static char *slurp(const char *name)
{
    char path[4300];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    char *t = dc_slurp(path);
    assert_non_null(t);
    return t;
}

static void expect_error(bool allow, const char *needle, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void expect_error(bool allow, const char *needle, const char *fmt, ...)
{
    char sql[8192], err[ENG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    char *out = NULL;
    int rc = run(sql, &out, err, sizeof(err), allow);
    free(out);
    if (rc >= 0 || !strstr(err, needle))
        fprintf(stderr, "expected an error with '%s' from: %s\n  got: %s\n", needle, sql,
                rc < 0 ? err : "success");
    assert_true(rc < 0);
    assert_non_null(strstr(err, needle));
}

static void test_into_outfile(void **state)
{
    (void)state;
    char base[8192];
    snprintf(base, sizeof(base),
             "SELECT Id, S, P FROM file('%s/src.parquet') WHERE Id < 20 ORDER BY Id", dir);
    /* the extension picks CSV; nothing goes to the output */
    char *out = q("%s INTO OUTFILE '%s/a.csv'", base, dir);
    assert_string_equal(out, "");
    free(out);
    char *want = q("%s FORMAT CSV", base);
    char *got = slurp("a.csv");
    assert_string_equal(got, want);
    free(got);
    /* a file that exists: refused without APPEND or TRUNCATE, and left as it was */
    expect_error(true, "add APPEND or TRUNCATE", "%s INTO OUTFILE '%s/a.csv'", base, dir);
    got = slurp("a.csv");
    assert_string_equal(got, want);
    free(got);
    /* APPEND adds, with FORMAT overriding the extension; AND STDOUT writes both */
    char *tsv = q("%s FORMAT TSV", base);
    out = q("%s INTO OUTFILE '%s/a.csv' AND STDOUT APPEND FORMAT TSV", base, dir);
    assert_string_equal(out, tsv);
    free(out);
    got = slurp("a.csv");
    assert_int_equal(strlen(got), strlen(want) + strlen(tsv));
    assert_memory_equal(got, want, strlen(want));
    assert_string_equal(got + strlen(want), tsv);
    free(got);
    /* TRUNCATE replaces; a name that says nothing gets TabSeparated */
    free(q("%s INTO OUTFILE '%s/a.csv' TRUNCATE", base, dir));
    got = slurp("a.csv");
    assert_string_equal(got, want);
    free(got);
    free(q("%s INTO OUTFILE '%s/plain_name'", base, dir));
    got = slurp("plain_name");
    assert_string_equal(got, tsv);
    free(got);
    free(tsv);
    free(want);
    /* refused where files are not allowed, and what is not supported says so */
    expect_error(false, "INTO OUTFILE is not allowed here", "%s INTO OUTFILE '%s/b.csv'", base,
                 dir);
    char b_csv[4300];
    snprintf(b_csv, sizeof(b_csv), "%s/b.csv", dir);
    assert_int_equal(access(b_csv, F_OK), -1);
    expect_error(true, "COMPRESSION is not supported",
                 "%s INTO OUTFILE '%s/c.gz' COMPRESSION 'gzip'", base, dir);
    expect_error(true, "line 1, column", "%s INTO '%s/d.csv'", base, dir);
    expect_error(true, "cannot open", "%s INTO OUTFILE '%s/no/such/dir/x.csv'", base, dir);
    /* a query that fails after the file was opened leaves none behind (it
     * would be empty or half written), and one it truncated stays */
    expect_error(true, "no_such", "SELECT * FROM file('%s/no_such.parquet') INTO OUTFILE '%s/e.csv'",
                 dir, dir);
    char e_csv[4300];
    snprintf(e_csv, sizeof(e_csv), "%s/e.csv", dir);
    assert_int_equal(access(e_csv, F_OK), -1);
    expect_error(true, "no_such",
                 "SELECT * FROM file('%s/no_such.parquet') INTO OUTFILE '%s/a.csv' TRUNCATE", dir,
                 dir);
    char a_csv[4300];
    snprintf(a_csv, sizeof(a_csv), "%s/a.csv", dir);
    assert_int_equal(access(a_csv, F_OK), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parquet_reads_back_in_duckdb),
        cmocka_unit_test(test_parquet_arrays),
        cmocka_unit_test(test_into_outfile),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
