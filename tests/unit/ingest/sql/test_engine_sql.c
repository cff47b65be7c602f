/* SPDX-License-Identifier: Apache-2.0
 *
 * test_engine_sql.c: the parser (sql.h): precedence, ClickHouse names of
 * expressions, clauses, errors at line and column, nesting bounded.
 */
#include "sql.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "parse_ok.h"

static void parse_err(const char *sql, const char *want)
{
    sql_stmt *s;
    char err[SQL_MSG_MAX] = "";
    assert_int_equal(sql_parse(sql, strlen(sql), &s, err, sizeof(err)), -EINVAL);
    assert_null(s);
    if (!strstr(err, want))
        fprintf(stderr, "error '%s' lacks '%s'\n", err, want);
    assert_non_null(strstr(err, want));
}

static void name_of(const char *expr, const char *want)
{
    char sql[512], got[256];
    snprintf(sql, sizeof(sql), "SELECT %s FROM file('x')", expr);
    sql_stmt *s = parse_ok(sql);
    sql_node_name(s->items[0].expr, got, sizeof(got));
    assert_string_equal(got, want);
    sql_stmt_destroy(&s);
    assert_null(s);
}

static void test_parser_precedence_and_names(void **state)
{
    (void)state;
    name_of("a + b * 2", "plus(a, multiply(b, 2))");
    name_of("(a + b) * 2", "multiply(plus(a, b), 2)");
    name_of("NOT a = 1 AND b OR c", "or(and(not(equals(a, 1)), b), c)");
    name_of("x NOT IN ('', 'anon')", "notIn(x, ('', 'anon'))");
    name_of("count()", "count()");
    name_of("-3", "-3");
    name_of("-a", "negate(a)");
    name_of("a::String", "CAST(a, 'String')");
    name_of("CAST(a AS Nullable(Int32))", "CAST(a, 'Nullable(Int32)')");
    name_of("t LIKE 'a%' ", "like(t, 'a%')");
    name_of("t NOT ILIKE 'a%'", "notILike(t, 'a%')");
    name_of("x IS NOT NULL", "isNotNull(x)");
    name_of("'it''s'", "'it\\'s'");
    name_of("a || b", "concat(a, b)");
}

static void test_parser_clauses(void **state)
{
    (void)state;
    sql_stmt *s =
        parse_ok("select a as x, count(*) from s3('s3://b/k/*.parquet', 'Parquet') t where a > 1 "
                 "group by 1 having count() > 2 order by x desc nulls first, 2 limit 5 offset 10 "
                 "settings max_threads = 2, max_memory_usage = 1000000 format JSONEachRow;");
    assert_int_equal(s->kind, SQL_SELECT);
    assert_int_equal(s->n_items, 2);
    assert_string_equal(s->items[0].alias, "x");
    assert_string_equal(s->from_fn, "s3");
    assert_int_equal(s->n_from_args, 2);
    assert_non_null(s->where);
    assert_int_equal(s->n_group_by, 1);
    assert_non_null(s->having);
    assert_int_equal(s->n_order_by, 2);
    assert_true(s->order_by[0].desc);
    assert_int_equal(s->order_by[0].nulls, 1);
    assert_true(s->has_limit);
    assert_int_equal(s->limit, 5);
    assert_int_equal(s->offset, 10);
    assert_int_equal(s->n_settings, 2);
    assert_string_equal(s->format, "JSONEachRow");
    sql_stmt_destroy(&s);
    s = parse_ok("SELECT a FROM file('f') LIMIT 3, 7");
    assert_int_equal(s->offset, 3);
    assert_int_equal(s->limit, 7);
    sql_stmt_destroy(&s);
    s = parse_ok("DESCRIBE file('x.csv')");
    assert_int_equal(s->kind, SQL_DESCRIBE);
    sql_stmt_destroy(&s);
    sql_stmt **many;
    char err[SQL_MSG_MAX];
    const char *script = "SELECT 1 FROM file('a');\n-- comment\n;SELECT 2 FROM file('b') /* x */;";
    assert_int_equal(sql_parse_script(script, strlen(script), &many, err, sizeof(err)), 2);
    sql_script_free(&many, 2);
    assert_null(many);
}

static void test_parser_errors_have_line_and_column(void **state)
{
    (void)state;
    parse_err("SELECT a FROM file('x') WHER a > 1", "line 1, column 30");
    parse_err("SELECT a,\n  b +\nFROM file('x')", "line 3, column 1");
    parse_err("SELECT 'abc FROM file('x')", "line 1, column");
    parse_err("SELECT a FROM system.", "a table name after '.'");
    parse_err("SELECT a FROM t FINAL,", "expected");
    parse_err("CREATE TABLE t (a UInt8 MATERIALIZED 1) ENGINE = MergeTree ORDER BY a",
              "MATERIALIZED expressions are not supported");
    parse_err("CREATE TABLE t (a UInt8 ALIAS 1) ENGINE = MergeTree ORDER BY a",
              "ALIAS expressions are not supported");
    parse_err("CREATE TABLE t (a DEFAULT 1) ENGINE = MergeTree ORDER BY a",
              "needs its type before DEFAULT");
    parse_err("INSERT INTO t VALUES (1, 2), (3)", "row 2 of VALUES has 1 values");
    parse_err("INSERT INTO t", "SELECT, VALUES or FORMAT");
    parse_err("DROP TABLE IF t", "EXISTS");
    parse_err("SELECT a FROM file('x') LIMIT", "a row count after LIMIT");
    parse_err("SELECT ((((a FROM file('x')", "expected ')'");
    parse_err("SELECT a FROM file('x') ORDER BY a NULLS MIDDLE", "FIRST or LAST");
    parse_err("SELECT #", "unexpected character '#'");
    parse_err("", "empty");
    /* deep nesting is refused, not a stack overflow */
    char deep[5000];
    size_t o = 0;
    o += (size_t)snprintf(deep, sizeof(deep), "SELECT ");
    for (int i = 0; i < 1000; i++)
        deep[o++] = '(';
    deep[o] = 0;
    parse_err(deep, "nested too deeply");
}

/* SELECT without FROM reads system.one; FROM [db.]table names a table. */
static void test_parser_from_table_or_nothing(void **state)
{
    (void)state;
    sql_stmt *s = parse_ok("SELECT 1, version()");
    assert_null(s->from_fn);
    assert_null(s->table);
    assert_int_equal(s->n_items, 2);
    sql_stmt_destroy(&s);
    s = parse_ok("SELECT 'ping' FORMAT JSON");
    assert_null(s->table);
    assert_string_equal(s->format, "JSON");
    sql_stmt_destroy(&s);
    /* SETTINGS before FORMAT, after it, or both */
    s = parse_ok("SELECT 1 SETTINGS max_threads = 1 FORMAT Null SETTINGS max_block_size = 10");
    assert_string_equal(s->format, "Null");
    assert_int_equal(s->n_settings, 2);
    assert_string_equal(s->settings[1].name, "max_block_size");
    sql_stmt_destroy(&s);
    parse_err("SELECT 1 FORMAT Null SETTINGS", "a setting name");
    s = parse_ok("SELECT name FROM system.query_log AS q WHERE 1 LIMIT 2");
    assert_null(s->from_fn);
    assert_string_equal(s->table_db, "system");
    assert_string_equal(s->table, "query_log");
    assert_true(s->has_limit);
    sql_stmt_destroy(&s);
    s = parse_ok("SELECT * FROM `my db`.`t 1`");
    assert_string_equal(s->table_db, "my db");
    assert_string_equal(s->table, "t 1");
    sql_stmt_destroy(&s);
    s = parse_ok("SELECT * FROM hits h ORDER BY 1");
    assert_null(s->table_db);
    assert_string_equal(s->table, "hits");
    assert_int_equal(s->n_order_by, 1);
    sql_stmt_destroy(&s);
    s = parse_ok("SELECT number FROM numbers(10)");
    assert_string_equal(s->from_fn, "numbers");
    assert_int_equal(s->n_from_args, 1);
    sql_stmt_destroy(&s);
    parse_err("SELECT 1 2", "expected");
}

/* CREATE TABLE, INSERT (SELECT, VALUES, FORMAT with its data), FROM a table,
 * the other table statements. */
static void test_parser_table_statements(void **state)
{
    (void)state;
    sql_stmt *s = parse_ok(
        "CREATE TABLE IF NOT EXISTS db.posts (Id UInt32, Body String CODEC(ZSTD(3)), "
        "d DateTime64(3, 'UTC'), v Nullable(Decimal(10, 2))) ENGINE = ReplacingMergeTree(Id) "
        "ORDER BY (d, Id) PARTITION BY toYear(d) PRIMARY KEY d "
        "SETTINGS index_granularity = 1024");
    assert_int_equal(s->kind, SQL_CREATE_TABLE);
    assert_true(s->if_not_exists);
    assert_string_equal(s->table_db, "db");
    assert_string_equal(s->table, "posts");
    const sql_table_def *d = s->create;
    assert_int_equal(d->n_cols, 4);
    assert_string_equal(d->cols[1].codec, "ZSTD(3)");
    assert_string_equal(d->cols[2].type, "DateTime64(3, 'UTC')");
    assert_string_equal(d->cols[3].type, "Nullable(Decimal(10, 2))");
    assert_string_equal(d->engine, "ReplacingMergeTree");
    assert_string_equal(d->engine_arg, "Id");
    assert_int_equal(d->n_order_by, 2);
    assert_string_equal(d->order_by[1], "Id");
    assert_int_equal(d->n_primary_key, 1);
    assert_string_equal(d->partition_text, "toYear(d)");
    assert_int_equal(d->n_settings, 1);
    sql_stmt_destroy(&s);
    /* key expressions keep their text; DEFAULT its expression's */
    s = parse_ok("CREATE TABLE t (a UInt8 DEFAULT 1 + 2 CODEC(ZSTD(1)), d DateTime) ENGINE = "
                 "MergeTree ORDER BY (a, toDate(d)) PRIMARY KEY a");
    d = s->create;
    assert_string_equal(d->cols[0].default_text, "1 + 2");
    assert_string_equal(d->cols[0].codec, "ZSTD(1)");
    assert_null(d->cols[1].default_text);
    assert_int_equal(d->n_order_by, 2);
    assert_string_equal(d->order_by[0], "a");
    assert_string_equal(d->order_by[1], "toDate(d)");
    sql_stmt_destroy(&s);

    s = parse_ok("INSERT INTO t (a, b) SELECT x, y FROM s3('s3://b/*.parquet') "
                 "SETTINGS max_insert_threads = 2");
    assert_int_equal(s->kind, SQL_INSERT);
    assert_int_equal(s->insert->n_cols, 2);
    assert_non_null(s->insert->select);
    assert_int_equal(s->insert->select->n_settings, 1);
    sql_stmt_destroy(&s);

    s = parse_ok("INSERT INTO t VALUES (1, 'a', -2.5), (2, NULL, toDate('2020-01-01'))");
    assert_int_equal(s->insert->n_rows, 2);
    assert_int_equal(s->insert->width, 3);
    sql_stmt_destroy(&s);

    /* the data after FORMAT is the rest of the text, whatever it holds */
    const char *t = "INSERT INTO t FORMAT JSONEachRow\n{\"a\": 1};{\"a\": #}\n";
    sql_stmt **st;
    char err[SQL_MSG_MAX];
    assert_int_equal(sql_parse_script(t, strlen(t), &st, err, sizeof(err)), 1);
    assert_string_equal(st[0]->insert->format, "JSONEachRow");
    assert_string_equal(st[0]->insert->data, "{\"a\": 1};{\"a\": #}\n");
    sql_script_free(&st, 1);

    s = parse_ok("SELECT count() FROM default.t FINAL WHERE a = 1");
    assert_null(s->from_fn);
    assert_string_equal(s->table_db, "default");
    assert_string_equal(s->table, "t");
    assert_true(s->final);
    sql_stmt_destroy(&s);

    s = parse_ok("OPTIMIZE TABLE t FINAL");
    assert_int_equal(s->kind, SQL_OPTIMIZE_TABLE);
    assert_true(s->optimize_final);
    sql_stmt_destroy(&s);
    s = parse_ok("SHOW TABLES FROM db LIKE 'p%'");
    assert_int_equal(s->kind, SQL_SHOW_TABLES);
    assert_string_equal(s->like, "p%");
    sql_stmt_destroy(&s);
    s = parse_ok("DROP TABLE IF EXISTS t");
    assert_true(s->if_exists);
    sql_stmt_destroy(&s);
    s = parse_ok("TRUNCATE TABLE t");
    assert_int_equal(s->kind, SQL_TRUNCATE_TABLE);
    sql_stmt_destroy(&s);
    s = parse_ok("DESCRIBE TABLE t");
    assert_int_equal(s->kind, SQL_DESCRIBE);
    assert_string_equal(s->table, "t");
    sql_stmt_destroy(&s);
}

/* Subqueries, WITH, UNION ALL, joins, EXPLAIN: the trees they make. */
static void test_parser_composition(void **state)
{
    (void)state;
    sql_stmt *s = parse_ok("SELECT x.a FROM (SELECT a FROM file('f') WHERE a IN (SELECT b FROM t)) "
                           "AS x WHERE x.a > (SELECT max(c) FROM t)");
    assert_non_null(s->from_sub);
    assert_string_equal(s->from_alias, "x");
    assert_int_equal(s->from_sub->where->kind, SQL_IN);
    assert_int_equal(s->from_sub->where->args[1]->kind, SQL_SUBQUERY);
    assert_string_equal(s->items[0].expr->qual, "x");
    assert_string_equal(s->items[0].expr->s, "a");
    assert_int_equal(s->where->args[1]->kind, SQL_SUBQUERY);
    assert_string_equal(s->where->args[1]->sub->table, "t");
    sql_stmt_destroy(&s);

    s = parse_ok("WITH 10 AS lim, c AS (SELECT 1 AS one FROM t) SELECT * FROM c WHERE one < lim");
    assert_int_equal(s->n_with, 2);
    assert_string_equal(s->with[0].name, "lim");
    assert_non_null(s->with[0].expr);
    assert_string_equal(s->with[1].name, "c");
    assert_non_null(s->with[1].sub);
    sql_stmt_destroy(&s);

    s = parse_ok("SELECT a FROM t UNION ALL SELECT b FROM u UNION ALL SELECT c FROM v "
                 "SETTINGS max_threads = 1 FORMAT CSV");
    assert_non_null(s->union_all);
    assert_non_null(s->union_all->union_all);
    assert_int_equal(s->n_settings, 1);
    assert_string_equal(s->format, "CSV");
    assert_null(s->union_all->union_all->format);
    sql_stmt_destroy(&s);

    s = parse_ok("SELECT * FROM t AS a LEFT OUTER JOIN u b ON a.k = b.k AND a.j = b.j "
                 "ANY INNER JOIN (SELECT k FROM v) AS c USING (k) CROSS JOIN w, z AS y "
                 "FULL JOIN q USING k WHERE 1");
    assert_string_equal(s->from_alias, "a");
    assert_int_equal(s->n_joins, 5);
    assert_int_equal(s->joins[0].kind, SQL_JOIN_LEFT);
    assert_false(s->joins[0].any);
    assert_string_equal(s->joins[0].right->table, "u");
    assert_string_equal(s->joins[0].right->from_alias, "b");
    assert_int_equal(s->joins[0].on->op, SQL_OP_AND);
    assert_int_equal(s->joins[1].kind, SQL_JOIN_INNER);
    assert_true(s->joins[1].any);
    assert_non_null(s->joins[1].right->from_sub);
    assert_int_equal(s->joins[1].n_using, 1);
    assert_int_equal(s->joins[2].kind, SQL_JOIN_CROSS);
    assert_int_equal(s->joins[3].kind, SQL_JOIN_CROSS);
    assert_string_equal(s->joins[3].right->from_alias, "y");
    assert_int_equal(s->joins[4].kind, SQL_JOIN_FULL);
    assert_string_equal(s->joins[4].using[0], "k");
    assert_non_null(s->where);
    sql_stmt_destroy(&s);

    s = parse_ok("EXPLAIN SYNTAX SELECT a FROM t");
    assert_int_equal(s->explain, SQL_EXPLAIN_SYNTAX);
    sql_stmt_destroy(&s);
    s = parse_ok("EXPLAIN SELECT a FROM t");
    assert_int_equal(s->explain, SQL_EXPLAIN_PLAN);
    sql_stmt_destroy(&s);

    parse_err("SELECT a FROM (DROP TABLE t)", "SELECT or WITH after '('");
    parse_err("SELECT a FROM t JOIN u", "ON or USING");
    parse_err("SELECT a FROM t SEMI JOIN u ON a = b", "SEMI JOIN is not supported");
    parse_err("SELECT a FROM t UNION SELECT b FROM u", "write UNION ALL");
    parse_err("SELECT a FROM t UNION DISTINCT SELECT b FROM u", "UNION DISTINCT is not supported");
    parse_err("SELECT a FROM (SELECT a FROM t FORMAT CSV)", "a subquery cannot have FORMAT");
    parse_err("WITH x SELECT 1", "AS and a name");
    parse_err("EXPLAIN PIPELINE SELECT a FROM t", "EXPLAIN PIPELINE is not supported");
    parse_err("SELECT a FROM t ANY CROSS JOIN u", "ANY CROSS JOIN is not supported");
    parse_err("SELECT a FROM t\nJOIN u USING (", "line 2, column 15");

    s = parse_ok("SELECT row_number() OVER (PARTITION BY a, b ORDER BY c DESC NULLS FIRST ROWS "
                 "BETWEEN 2 PRECEDING AND UNBOUNDED FOLLOWING) AS rn, sum(x) OVER () FROM t");
    const sql_window *w = s->items[0].expr->win;
    assert_non_null(w);
    assert_int_equal(w->n_partition, 2);
    assert_int_equal(w->n_order, 1);
    assert_true(w->order[0].desc);
    assert_int_equal(w->order[0].nulls, 1);
    assert_true(w->has_frame);
    assert_int_equal(w->start, SQL_FB_PRECEDING);
    assert_int_equal(w->start_n, 2);
    assert_int_equal(w->end, SQL_FB_UNBOUNDED_FOLLOWING);
    assert_string_equal(s->items[0].alias, "rn");
    assert_non_null(s->items[1].expr->win);
    assert_false(s->items[1].expr->win->has_frame);
    char nm[256];
    sql_node_name(s->items[0].expr, nm, sizeof(nm));
    assert_string_equal(nm, "row_number() OVER (PARTITION BY a, b ORDER BY c DESC)");
    sql_stmt_destroy(&s);
    parse_err("SELECT sum(x) OVER (ORDER BY t RANGE UNBOUNDED PRECEDING) FROM t",
              "line 1, column 32: window frames with RANGE are not supported");
    parse_err("SELECT sum(x) OVER (ROWS BETWEEN CURRENT ROW AND 1 PRECEDING) FROM t",
              "the window frame ends before it starts");
    parse_err("SELECT sum(x) OVER w FROM t", "named windows");
}

/* DISTINCT, combinators, parametric aggregates, * EXCEPT / REPLACE,
 * COLUMNS('re'), array literals: what ClickHouse users type. */
static void test_parser_clickhouse_forms(void **state)
{
    (void)state;
    name_of("count(DISTINCT x)", "uniqExact(x)");
    name_of("sum(DISTINCT x)", "sumDistinct(x)");
    name_of("quantile(0.5)(x)", "quantile(0.5)(x)");
    name_of("quantile(x)", "quantile(x)");
    name_of("sumIf(x, y > 1)", "sumIf(x, greater(y, 1))");
    name_of("x IN [1, 2]", "in(x, (1, 2))");
    name_of("has([1, 2], x)", "has([1, 2], x)");
    name_of("COLUMNS('^a')", "COLUMNS('^a')");
    sql_stmt *s = parse_ok("SELECT DISTINCT a, b FROM file('x')");
    assert_true(s->distinct);
    assert_int_equal(s->n_items, 2);
    sql_stmt_destroy(&s);
    s = parse_ok("SELECT ALL a FROM file('x')");
    assert_false(s->distinct);
    sql_stmt_destroy(&s);
    s = parse_ok("SELECT * EXCEPT (a, b) REPLACE (c + 1 AS c) FROM file('x')");
    assert_int_equal(s->items[0].expr->kind, SQL_STAR);
    assert_int_equal(s->items[0].n_except, 2);
    assert_string_equal(s->items[0].except[1], "b");
    assert_int_equal(s->items[0].n_replace, 1);
    assert_string_equal(s->items[0].replace[0].alias, "c");
    assert_null(s->items[0].alias);
    sql_stmt_destroy(&s);
    s = parse_ok("SELECT COLUMNS('^a') EXCEPT b, x FROM file('x')");
    assert_int_equal(s->items[0].expr->kind, SQL_COLUMNS);
    assert_int_equal(s->items[0].n_except, 1);
    assert_int_equal(s->n_items, 2);
    sql_stmt_destroy(&s);
    s = parse_ok("SELECT columns FROM file('x')"); /* a column named columns */
    assert_int_equal(s->items[0].expr->kind, SQL_COLUMN);
    sql_stmt_destroy(&s);
    s = parse_ok("SELECT a FROM file('x') ORDER BY a LIMIT 1, 2 BY a, b LIMIT 5");
    assert_int_equal(s->n_limit_by, 2);
    assert_int_equal(s->limit_by_offset, 1);
    assert_int_equal(s->limit_by_n, 2);
    assert_true(s->has_limit);
    assert_int_equal(s->limit, 5);
    sql_stmt_destroy(&s);
    s = parse_ok("SELECT a FROM file('x') LIMIT 3 OFFSET 4 BY a");
    assert_int_equal(s->limit_by_n, 3);
    assert_int_equal(s->limit_by_offset, 4);
    assert_false(s->has_limit);
    sql_stmt_destroy(&s);
    s = parse_ok("SELECT a FROM file('x') LIMIT 3 OFFSET 4");
    assert_int_equal(s->n_limit_by, 0);
    assert_int_equal(s->offset, 4);
    sql_stmt_destroy(&s);
    parse_err("SELECT count(DISTINCT) FROM file('x')", "count(DISTINCT) needs an argument");
    parse_err("SELECT quantile(0.5)(0.1)(x) FROM file('x')", "two lists of parameters");
    parse_err("SELECT quantile(0.5)(DISTINCT x) FROM file('x')", "quantileDistinct(params)(args)");
    parse_err("SELECT * EXCEPT (1) FROM file('x')", "a column name after EXCEPT");
    parse_err("SELECT * REPLACE (a + 1 b) FROM file('x')", "expected AS");
    parse_err("SELECT x IN [1, 2 FROM file('x')", "expected ']'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parser_precedence_and_names),
        cmocka_unit_test(test_parser_clauses),
        cmocka_unit_test(test_parser_errors_have_line_and_column),
        cmocka_unit_test(test_parser_from_table_or_nothing),
        cmocka_unit_test(test_parser_table_statements),
        cmocka_unit_test(test_parser_composition),
        cmocka_unit_test(test_parser_clickhouse_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
