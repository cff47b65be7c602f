/* SPDX-License-Identifier: Apache-2.0
 *
 * test_engine_serving.c: what a server asks of the engine (eng_ctx's server
 * fields, eng_result.code): SELECT without FROM and the functions of the
 * query's context (version(), currentDatabase(), currentUser()) with
 * ClickHouse's literal types; numbers(), zeros() and system.numbers; every
 * failure carries ClickHouse's error code (syntax, unknown column, function,
 * setting, format, table, table function); tables of the caller's
 * (open_table) over rows in memory; a statement cancelled from another
 * thread stops with QUERY_WAS_CANCELLED; a server-wide memory tracker fails
 * the query that crosses it and gets all its bytes back; the caller takes
 * its own settings from SETTINGS; the live counters follow the query.
 * Label `threads`: the cancel comes from another thread (TSan in CI).
 */
#include "eng.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

typedef struct capture {
    char p[1 << 16];
    size_t n;
} capture;

static int cap_write(void *arg, const void *buf, size_t len)
{
    capture *c = arg;
    if (c->n + len >= sizeof(c->p))
        return -ENOSPC;
    memcpy(c->p + c->n, buf, len);
    c->n += len;
    c->p[c->n] = 0;
    return 0;
}

typedef struct outcome {
    capture c;
    eng_result res;
    char err[ENG_MSG_MAX];
    int rc;
} outcome;

static outcome *run(const char *sql, const eng_ctx *base)
{
    outcome *o = calloc(1, sizeof(*o));
    assert_non_null(o);
    eng_writer w = {cap_write, NULL, &o->c};
    eng_ctx ctx = base ? *base : (eng_ctx){0};
    ctx.writer = &w;
    if (!ctx.format)
        ctx.format = ENG_FMT_TSV;
    if (ctx.max_threads == 0)
        ctx.max_threads = 2;
    o->rc = eng_run(&ctx, sql, strlen(sql), NULL, &o->res, o->err, sizeof(o->err));
    return o;
}

static void expect_text(const char *sql, const eng_ctx *ctx, const char *want)
{
    outcome *o = run(sql, ctx);
    if (o->rc != 0 || strcmp(o->c.p, want) != 0)
        fprintf(stderr, "%s: rc %d (%s), got '%s', want '%s'\n", sql, o->rc, o->err, o->c.p, want);
    assert_int_equal(o->rc, 0);
    assert_int_equal(o->res.code, 0);
    assert_string_equal(o->c.p, want);
    free(o);
}

static void expect_code(const char *sql, const eng_ctx *ctx, int code, const char *words)
{
    outcome *o = run(sql, ctx);
    if (o->res.code != code || !strstr(o->err, words))
        fprintf(stderr, "%s: code %d (%s), err '%s'\n", sql, o->res.code,
                eng_error_name(o->res.code), o->err);
    assert_true(o->rc < 0);
    assert_int_equal(o->res.code, code);
    assert_non_null(strstr(o->err, words));
    free(o);
}

static void test_select_without_from(void **state)
{
    (void)state;
    eng_ctx ctx = {.database = "db1", .user = "alice"};
    expect_text("SELECT 1, 'ping', version(), currentDatabase(), currentUser()", &ctx,
                "1\tping\t" ENG_CLICKHOUSE_VERSION "\tdb1\talice\n");
    expect_text("SELECT timezone(), today() = toDate(now())", NULL, "UTC\t1\n");
    /* literals typed as ClickHouse types them: the narrowest that holds them */
    expect_text("SELECT 1, 300, 70000, 5000000000, -1, -200 FORMAT TSVWithNamesAndTypes", NULL,
                "1\t300\t70000\t5000000000\t-1\t-200\n"
                "UInt8\tUInt16\tUInt32\tUInt64\tInt8\tInt16\n"
                "1\t300\t70000\t5000000000\t-1\t-200\n");
    expect_text("SELECT 1 FORMAT JSONEachRow", NULL, "{\"1\":1}\n");
    expect_text("SELECT dummy FROM system.one", NULL, "0\n");
}

static void test_numbers_and_zeros(void **state)
{
    (void)state;
    expect_text("SELECT count(), sum(number), min(number), max(number) FROM numbers(200000)", NULL,
                "200000\t19999900000\t0\t199999\n");
    expect_text("SELECT number FROM numbers(5, 3)", NULL, "5\n6\n7\n");
    expect_text("SELECT count(), sum(zero) FROM zeros(70000)", NULL, "70000\t0\n");
    outcome *o = run("SELECT number FROM system.numbers LIMIT 5", NULL);
    assert_int_equal(o->rc, 0);
    assert_int_equal(o->res.rows_out, 5);
    free(o);
    expect_text("SELECT number * 2 AS d FROM numbers(10) WHERE number % 3 = 0 ORDER BY d DESC",
                NULL, "18\n12\n6\n0\n");
    expect_code("SELECT * FROM numbers('x')", NULL, ENG_E_BAD_ARGUMENTS, "non-negative integer");
}

static void test_failures_carry_clickhouse_codes(void **state)
{
    (void)state;
    expect_code("SELEC 1", NULL, ENG_E_SYNTAX_ERROR, "line 1, column 1");
    expect_code("SELECT nope FROM numbers(1)", NULL, ENG_E_UNKNOWN_IDENTIFIER, "unknown column");
    expect_code("SELECT nofn(1)", NULL, ENG_E_UNKNOWN_FUNCTION, "unknown function");
    expect_code("SELECT 1 SETTINGS max_thread = 1", NULL, ENG_E_UNKNOWN_SETTING, "max_threads");
    expect_code("SELECT 1 FORMAT Nope", NULL, ENG_E_UNKNOWN_FORMAT, "unknown output format");
    expect_code("SELECT * FROM nope", NULL, ENG_E_UNKNOWN_TABLE,
                "table default.nope does not exist");
    expect_code("SELECT * FROM system.nope", NULL, ENG_E_UNKNOWN_TABLE, "system.nope");
    expect_code("SELECT * FROM nofn(1)", NULL, ENG_E_UNKNOWN_FUNCTION, "unknown table function");
    expect_code("SELECT 'a' + 1", NULL, ENG_E_ILLEGAL_TYPE_OF_ARGUMENT, "illegal types");
    expect_code("SELECT length()", NULL, ENG_E_NUMBER_OF_ARGUMENTS_DOESNT_MATCH, "takes");
    assert_string_equal(eng_error_name(ENG_E_SYNTAX_ERROR), "SYNTAX_ERROR");
    assert_string_equal(eng_error_name(ENG_E_MEMORY_LIMIT_EXCEEDED), "MEMORY_LIMIT_EXCEEDED");
    assert_string_equal(eng_error_name(123456), "UNKNOWN_EXCEPTION");
}

/* A caller's table "db1.people": two rows of (name String, age UInt8). */
static int open_people(void *arg, const char *db, const char *name, const eng_scan_env *env,
                       eng_source **out, char *err, size_t errlen)
{
    int *calls = arg;
    (*calls)++;
    if (strcmp(db, "db1") != 0 || strcmp(name, "people") != 0)
        return -ENOENT;
    eng_schema sc = {.cols = calloc(2, sizeof(eng_col)), .n = 2};
    sc.cols[0] = (eng_col){.name = strdup("name"), .t = {.kind = EX_STRING}};
    sc.cols[1] = (eng_col){.name = strdup("age"), .t = {.kind = EX_UINT, .bits = 8}};
    ex_vec *v = calloc(2, sizeof(ex_vec));
    assert_int_equal(ex_vec_alloc(NULL, &v[0], sc.cols[0].t, 2), 0);
    assert_int_equal(ex_vec_alloc(NULL, &v[1], sc.cols[1].t, 2), 0);
    assert_int_equal(ex_vec_str_put(NULL, &v[0], 0, "ann", 3), 0);
    assert_int_equal(ex_vec_str_put(NULL, &v[0], 1, "bob", 3), 0);
    v[1].i[0] = 30;
    v[1].i[1] = 40;
    return eng_source_rows_create(out, env, &sc, v, 2, err, errlen);
}

static void test_tables_of_the_caller(void **state)
{
    (void)state;
    int calls = 0;
    eng_ctx ctx = {.database = "db1", .open_table = open_people, .table_arg = &calls};
    expect_text("SELECT name, age + 1 FROM people WHERE age > 35", &ctx, "bob\t41\n");
    expect_text("SELECT count() FROM db1.people", &ctx, "2\n");
    expect_text("DESCRIBE people", &ctx, "name\tString\t\t\t\t\t\nage\tUInt8\t\t\t\t\t\n");
    expect_code("SELECT * FROM db2.people", &ctx, ENG_E_UNKNOWN_TABLE,
                "table db2.people does not exist");
    assert_int_equal(calls, 4);
    /* system.one and friends are the engine's: the caller is not asked */
    expect_text("SELECT count() FROM system.one", &ctx, "1\n");
    assert_int_equal(calls, 4);
}

typedef struct canceller {
    _Atomic int *flag;
    int delay_ms;
} canceller;

static void *cancel_later(void *arg)
{
    canceller *c = arg;
    struct timespec ts = {0, (long)c->delay_ms * 1000000};
    nanosleep(&ts, NULL);
    atomic_store(c->flag, 1);
    return NULL;
}

static void test_cancel_from_another_thread(void **state)
{
    (void)state;
    _Atomic int cancel = 0;
    eng_live live = {0};
    eng_ctx ctx = {.cancel = &cancel, .live = &live};
    canceller c = {&cancel, 200};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, cancel_later, &c), 0);
    /* endless without the cancel */
    outcome *o = run("SELECT count() FROM system.numbers", &ctx);
    pthread_join(th, NULL);
    assert_int_equal(o->rc, -ECANCELED);
    assert_int_equal(o->res.code, ENG_E_QUERY_WAS_CANCELLED);
    assert_non_null(strstr(o->err, "cancelled"));
    assert_true(atomic_load(&live.rows_read) > 0);
    free(o);
    /* a statement that starts cancelled does not run */
    o = run("SELECT number FROM numbers(10)", &ctx);
    assert_int_equal(o->rc, -ECANCELED);
    free(o);
}

static void test_server_memory_limit_fails_the_query(void **state)
{
    (void)state;
    eng_mem server = {.limit = 4 << 20};
    eng_live live = {0};
    eng_ctx ctx = {.mem_parent = &server, .live = &live};
    outcome *o = run("SELECT number, count() FROM numbers(3000000) GROUP BY number", &ctx);
    assert_int_equal(o->rc, -ENOMEM);
    assert_int_equal(o->res.code, ENG_E_MEMORY_LIMIT_EXCEEDED);
    assert_non_null(strstr(o->err, "memory limit (total) exceeded"));
    free(o);
    assert_int_equal(atomic_load(&server.cur), 0); /* every byte came back */
    /* the next query, small, runs */
    expect_text("SELECT count() FROM numbers(1000)", &ctx, "1000\n");
    assert_int_equal(atomic_load(&server.cur), 0);
    assert_true(atomic_load(&server.peak) > 0);
    /* the query's own limit says "for query" */
    expect_code("SELECT number, count() FROM numbers(3000000) GROUP BY number "
                "SETTINGS max_memory_usage = 2000000",
                NULL, ENG_E_MEMORY_LIMIT_EXCEEDED, "memory limit (for query) exceeded");
}

typedef struct seen {
    char names[8][64];
    char values[8][64];
    int n;
} seen;

static int take_setting(void *arg, const char *name, const char *value, char *err, size_t errlen)
{
    seen *s = arg;
    if (strcmp(name, "max_execution_time") != 0 && strcmp(name, "send_progress_in_http_headers"))
        return -ENOENT;
    if (strcmp(value, "bad") == 0) {
        snprintf(err, errlen, "setting %s needs a number", name);
        return -EINVAL;
    }
    snprintf(s->names[s->n], 64, "%s", name);
    snprintf(s->values[s->n], 64, "%s", value);
    s->n++;
    return 0;
}

static void test_the_callers_settings(void **state)
{
    (void)state;
    seen s = {0};
    eng_settings defaults = {
        .max_threads = 1, .max_download_threads = 2, .max_download_buffer_size = 1 << 20};
    eng_live live = {0};
    eng_ctx ctx = {
        .setting = take_setting, .setting_arg = &s, .settings = &defaults, .live = &live};
    expect_text("SELECT count() FROM numbers(100000) SETTINGS max_execution_time = 5, "
                "max_threads = 2, send_progress_in_http_headers = 1",
                &ctx, "100000\n");
    assert_int_equal(s.n, 2);
    assert_string_equal(s.names[0], "max_execution_time");
    assert_string_equal(s.values[0], "5");
    assert_string_equal(s.values[1], "1");
    assert_int_equal(atomic_load(&live.rows_read), 100000);
    assert_int_equal(atomic_load(&live.result_rows), 1);
    expect_code("SELECT 1 SETTINGS max_execution_time = 'bad'", &ctx, ENG_E_INVALID_SETTING_VALUE,
                "needs a number");
    expect_code("SELECT 1 SETTINGS nope = 1", &ctx, ENG_E_UNKNOWN_SETTING, "unknown setting");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_select_without_from),
        cmocka_unit_test(test_numbers_and_zeros),
        cmocka_unit_test(test_failures_carry_clickhouse_codes),
        cmocka_unit_test(test_tables_of_the_caller),
        cmocka_unit_test(test_cancel_from_another_thread),
        cmocka_unit_test(test_server_memory_limit_fails_the_query),
        cmocka_unit_test(test_the_callers_settings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
