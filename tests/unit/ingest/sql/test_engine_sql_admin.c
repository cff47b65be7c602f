/* SPDX-License-Identifier: Apache-2.0
 *
 * test_engine_sql_admin.c: the statements a server answers itself
 * (sql_admin.h): SHOW DATABASES / TABLES / PROCESSLIST, EXISTS, USE, SET,
 * KILL QUERY, SYSTEM, with FORMAT and a trailing ';'; a text that is none of
 * them is left alone (0); one that starts as one but does not parse is an
 * error at its line and column.
 */
#include "sql_admin.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

static sql_admin a;

static int parse(const char *sql, char *err)
{
    err[0] = 0;
    return sql_admin_parse(sql, strlen(sql), &a, err, 256);
}

static void test_statements(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(parse("SHOW DATABASES", err), 1);
    assert_int_equal(a.kind, SQL_ADMIN_SHOW_DATABASES);
    assert_string_equal(a.format, "");
    assert_int_equal(parse("show databases like 'd%' format JSON;", err), 1);
    assert_true(a.has_like);
    assert_string_equal(a.like, "d%");
    assert_string_equal(a.format, "JSON");
    assert_int_equal(parse("SHOW TABLES FROM system", err), 1);
    assert_int_equal(a.kind, SQL_ADMIN_SHOW_TABLES);
    assert_string_equal(a.db, "system");
    assert_int_equal(parse("-- probe\nSHOW PROCESSLIST", err), 1);
    assert_int_equal(a.kind, SQL_ADMIN_SHOW_PROCESSLIST);
    assert_int_equal(parse("EXISTS TABLE `my db`.t FORMAT TSV", err), 1);
    assert_int_equal(a.kind, SQL_ADMIN_EXISTS);
    assert_string_equal(a.db, "my db");
    assert_string_equal(a.name, "t");
    assert_int_equal(parse("EXISTS t", err), 1);
    assert_string_equal(a.db, "");
    assert_string_equal(a.name, "t");
    assert_int_equal(parse("EXISTS DATABASE system", err), 1);
    assert_true(a.exists_database);
    assert_int_equal(parse("USE db2", err), 1);
    assert_int_equal(a.kind, SQL_ADMIN_USE);
    assert_string_equal(a.name, "db2");
    assert_int_equal(
        parse("SET max_threads = 2, log_comment = 'a''b', max_execution_time = -1", err), 1);
    assert_int_equal(a.kind, SQL_ADMIN_SET);
    assert_int_equal(a.n_sets, 3);
    assert_string_equal(a.sets[0].name, "max_threads");
    assert_string_equal(a.sets[0].value, "2");
    assert_string_equal(a.sets[1].value, "a'b");
    assert_string_equal(a.sets[2].value, "-1");
    assert_int_equal(parse("KILL QUERY WHERE query_id = 'q-1' SYNC", err), 1);
    assert_int_equal(a.kind, SQL_ADMIN_KILL_QUERY);
    assert_string_equal(a.query_id, "q-1");
    assert_true(a.sync);
    assert_int_equal(parse("system drop page cache", err), 1);
    assert_int_equal(a.kind, SQL_ADMIN_SYSTEM);
    assert_string_equal(a.system, "DROP PAGE CACHE");
}

static void test_others_and_errors(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(parse("SELECT 1", err), 0);
    assert_int_equal(parse("SHOW CREATE TABLE t", err), 0);
    assert_int_equal(parse("INSERT INTO t FORMAT TSV", err), 0);
    assert_int_equal(parse("", err), 0);
    assert_int_equal(parse("KILL QUERY WHERE user = 'x'", err), -EINVAL);
    assert_non_null(strstr(err, "line 1, column 18"));
    assert_non_null(strstr(err, "query_id"));
    assert_int_equal(parse("SHOW DATABASES extra", err), -EINVAL);
    assert_non_null(strstr(err, "the end of the query"));
    assert_int_equal(parse("SET x", err), -EINVAL);
    assert_non_null(strstr(err, "'='"));
    assert_int_equal(parse("USE 'db", err), -EINVAL);
    assert_non_null(strstr(err, "unterminated"));
    assert_int_equal(parse("SET a = b", err), -EINVAL); /* a bare word is no value */
    /* a name longer than its field is refused, not cut */
    char longname[300];
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = 0;
    char sql[400];
    snprintf(sql, sizeof(sql), "USE %s", longname);
    assert_int_equal(parse(sql, err), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_statements),
        cmocka_unit_test(test_others_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
