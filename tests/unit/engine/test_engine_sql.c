/* SPDX-License-Identifier: Apache-2.0
 *
 * test_engine_sql.c: the parser (precedence, ClickHouse names of
 * expressions, clauses, errors at line and column), binding and evaluation of
 * expressions over a small in-memory schema (three-valued logic, LIKE, dates,
 * banker's rounding, substring in bytes, implicit date casts, suggestions),
 * value formatting, and the CSV / TSV / JSONEachRow readers (inference,
 * header detection, quoting, errors naming the line).
 */
#include "eng_plan.h"
#include "eng_text.h"

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

static sql_stmt *parse_ok(const char *sql)
{
    sql_stmt *s;
    char err[SQL_MSG_MAX];
    int rc = sql_parse(sql, strlen(sql), &s, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "%s: %s\n", sql, err);
    assert_int_equal(rc, 0);
    return s;
}

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
    sql_stmt *s = parse_ok(
        "select a as x, count(*) from s3('s3://b/k/*.parquet', 'Parquet') t where a > 1 "
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
    parse_err("SELECT a FROM t", "tables are not supported yet");
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

/* ---- binding + evaluation over a tiny schema ---- */

static eng_schema schema;

static int schema_setup(void **state)
{
    (void)state;
    static const struct { const char *n; ex_type t; } cols[] = {
        {"i", {.kind = EX_INT, .bits = 64, .nullable = true}},
        {"s", {.kind = EX_STRING, .nullable = true}},
        {"d", {.kind = EX_DATE, .bits = 32}},
        {"f", {.kind = EX_FLOAT, .bits = 64}},
        {"OwnerDisplayName", {.kind = EX_STRING}},
    };
    schema.n = 5;
    schema.cols = calloc(5, sizeof(eng_col));
    for (int k = 0; k < 5; k++) {
        schema.cols[k].name = strdup(cols[k].n);
        schema.cols[k].t = cols[k].t;
    }
    return 0;
}

static int schema_teardown(void **state)
{
    (void)state;
    eng_schema_free(&schema);
    return 0;
}

/* Rows: i = {1, NULL, -7}, s = {'Hello', NULL, 'wörld'}, d = 2020-02-29 + r,
 * f = {2.5, 3.5, -0.125}. Evaluates `expr` and returns its TSV texts joined
 * by '|'. */
static void eval_rows(const char *expr, char *out, size_t cap)
{
    char sql[512], err[512] = "";
    snprintf(sql, sizeof(sql), "SELECT %s FROM file('x')", expr);
    sql_stmt *s = parse_ok(sql);
    eng_mem mem = {0};
    eng_plan p;
    int rc = eng_bind(&mem, s, &schema, &p, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "%s: %s\n", expr, err);
    assert_int_equal(rc, 0);
    ex_vec in[8];
    memset(in, 0, sizeof(in));
    for (int k = 0; k < p.n_need; k++) {
        const eng_col *c = &schema.cols[p.need[k]];
        ex_type t = c->t;
        t.nullable = true;
        assert_int_equal(ex_vec_alloc(&mem, &in[k], t, 3), 0);
        in[k].t = c->t;
        for (uint32_t r = 0; r < 3; r++) {
            switch (c->t.kind) {
            case EX_INT: in[k].i[r] = r == 0 ? 1 : -7; in[k].nulls[r] = r == 1; break;
            case EX_FLOAT: in[k].d[r] = r == 0 ? 2.5 : r == 1 ? 3.5 : -0.125; break;
            case EX_DATE: in[k].i[r] = ex_days_from_civil(2020, 2, 29) + r; break;
            default: {
                const char *v = c->name[0] == 's' ? (r == 0 ? "Hello" : r == 1 ? "" : "wörld")
                                                  : (r == 2 ? "anon" : "Bob");
                in[k].nulls[r] = c->name[0] == 's' && r == 1;
                assert_int_equal(ex_vec_str_put(&mem, &in[k], r, v, strlen(v)), 0);
            }
            }
        }
    }
    ex_ectx ec = {&mem, err, sizeof(err)};
    ex_vec v;
    rc = bx_eval(&ec, p.outs[0].e, in, NULL, 3, &v);
    if (rc < 0)
        fprintf(stderr, "%s: %s\n", expr, err);
    assert_int_equal(rc, 0);
    size_t o = 0;
    out[0] = 0;
    for (uint32_t r = 0; r < 3; r++) {
        char b[128];
        const uint8_t *sp;
        size_t l = ex_null(&v, r) ? (size_t)snprintf(b, sizeof(b), "\\N")
                                  : ex_fmt_value(&v, r, b, sizeof(b), &sp);
        if (!ex_null(&v, r) && sp) {
            o += (size_t)snprintf(out + o, cap - o, "%s%.*s", r ? "|" : "", (int)l, (const char *)sp);
        } else {
            o += (size_t)snprintf(out + o, cap - o, "%s%s", r ? "|" : "", b);
        }
    }
    ex_vec_clear(&mem, &v);
    for (int k = 0; k < p.n_need; k++)
        ex_vec_clear(&mem, &in[k]);
    eng_plan_free(&mem, &p);
    sql_stmt_destroy(&s);
    assert_int_equal(atomic_load(&mem.cur), 0); /* every tracked byte given back */
}

static void expect(const char *expr, const char *want)
{
    char got[1024];
    eval_rows(expr, got, sizeof(got));
    if (strcmp(got, want) != 0)
        fprintf(stderr, "%s: got %s, want %s\n", expr, got, want);
    assert_string_equal(got, want);
}

static void test_eval_semantics(void **state)
{
    (void)state;
    expect("i + 1", "2|\\N|-6");
    expect("i / 2", "0.5|\\N|-3.5");
    expect("i % 4", "1|\\N|-3");
    expect("i > 0 AND s = 'Hello'", "1|\\N|0");
    expect("i IS NULL OR i < 0", "0|1|1");
    expect("NULL AND 0", "0|0|0");
    expect("s LIKE 'H_llo'", "1|\\N|0");
    expect("s ILIKE '%LLO'", "1|\\N|0");
    expect("s LIKE 'w_rld'", "0|\\N|1");          /* _ is one UTF-8 character */
    expect("length(s)", "5|\\N|6");               /* bytes, as ClickHouse */
    expect("substring(s, 2, 3)", "ell|\\N|\xc3\xb6r");
    expect("substring(s, -2)", "lo|\\N|ld");
    expect("upper(s)", "HELLO|\\N|W\xc3\xb6RLD");  /* ASCII only, as upper() */
    expect("position(s, 'l')", "3|\\N|5");
    expect("concat(s, '-', i)", "Hello-1|\\N|w\xc3\xb6rld--7");
    expect("coalesce(i, 42)", "1|42|-7");
    expect("if(i > 0, 'p', 'n')", "p|n|n");        /* a NULL condition is false */
    expect("multiIf(i = 1, 'one', i = -7, 'minus seven', 'other')", "one|other|minus seven");
    expect("CASE i WHEN 1 THEN 'a' ELSE 'b' END", "a|b|b");
    expect("round(f)", "2|4|-0");                   /* banker's rounding */
    expect("round(f, 2)", "2.5|3.5|-0.12");
    expect("abs(i)", "1|\\N|7");
    expect("d", "2020-02-29|2020-03-01|2020-03-02");
    expect("toYear(d) * 100 + toMonth(d)", "202002|202003|202003");
    expect("toStartOfMonth(d)", "2020-02-01|2020-03-01|2020-03-01");
    expect("dateDiff('month', toDate('2019-12-31'), d)", "2|3|3");
    expect("d >= '2020-03-01'", "0|1|1");           /* a string literal as a date */
    expect("d + 1", "2020-03-01|2020-03-02|2020-03-03");
    expect("toStartOfDay(d)", "2020-02-29 00:00:00|2020-03-01 00:00:00|2020-03-02 00:00:00");
    expect("CAST('2021-05-06' AS Date)", "2021-05-06|2021-05-06|2021-05-06");
    expect("OwnerDisplayName NOT IN ('', 'anon')", "1|1|0");
    expect("i IN (1, 2)", "1|\\N|0");
    expect("i BETWEEN -10 AND 0", "0|\\N|1");
    expect("1 / 3", "0.3333333333333333|0.3333333333333333|0.3333333333333333");
    expect("f * 4", "10|14|-0.5");
}

static void bind_err(const char *sql, const char *want)
{
    sql_stmt *s = parse_ok(sql);
    eng_mem mem = {0};
    eng_plan p;
    char err[512] = "";
    assert_int_equal(eng_bind(&mem, s, &schema, &p, err, sizeof(err)), -EINVAL);
    if (!strstr(err, want))
        fprintf(stderr, "error '%s' lacks '%s'\n", err, want);
    assert_non_null(strstr(err, want));
    sql_stmt_destroy(&s);
}

static void test_bind_errors(void **state)
{
    (void)state;
    bind_err("SELECT OwnerDisplayNam FROM file('x')",
             "line 1, column 8: unknown column 'OwnerDisplayNam', did you mean 'OwnerDisplayName'?");
    bind_err("SELECT lenght(s) FROM file('x')", "unknown function 'lenght', did you mean 'length'?");
    bind_err("SELECT i FROM file('x') WHERE count() > 1", "not allowed in WHERE");
    bind_err("SELECT i, count() FROM file('x')", "not under an aggregate function");
    bind_err("SELECT s + 1 FROM file('x')", "illegal types");
    bind_err("SELECT i FROM file('x') WHERE s = 1", "cannot compare");
    bind_err("SELECT CAST(i AS Int33) FROM file('x')", "unknown type 'Int33'");
    bind_err("SELECT sum(s) FROM file('x')", "sum()");
    bind_err("SELECT i FROM file('x') GROUP BY 3", "position 3 is out of range");
}

static void test_double_format(void **state)
{
    (void)state;
    char b[64];
    static const struct { double d; const char *s; } t[] = {
        {0.1, "0.1"}, {1.0 / 3, "0.3333333333333333"}, {100, "100"}, {1e21, "1e+21"},
        {1e-8, "1e-8"}, {-2.5e-7, "-0.00000025"}, {123456789012345680.0, "123456789012345680"},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        ex_fmt_double(t[i].d, b, sizeof(b));
        assert_string_equal(b, t[i].s);
    }
}

/* ---- text readers ---- */

typedef struct collect {
    char text[4096];
    size_t o;
    uint32_t rows;
} collect;

static int collect_fn(ex_vec *cols, int ncols, uint32_t n, void *arg)
{
    collect *c = arg;
    for (uint32_t r = 0; r < n; r++) {
        for (int k = 0; k < ncols; k++) {
            char b[96];
            const uint8_t *sp;
            size_t l = ex_null(&cols[k], r) ? (size_t)snprintf(b, sizeof(b), "\\N")
                                            : ex_fmt_value(&cols[k], r, b, sizeof(b), &sp);
            const char *p = !ex_null(&cols[k], r) && sp ? (const char *)sp : b;
            c->o += (size_t)snprintf(c->text + c->o, sizeof(c->text) - c->o, "%s%.*s",
                                     k ? "," : "", (int)l, p);
        }
        c->o += (size_t)snprintf(c->text + c->o, sizeof(c->text) - c->o, ";");
    }
    c->rows += n;
    for (int k = 0; k < ncols; k++)
        ex_vec_clear(NULL, &cols[k]);
    return 0;
}

static void read_text(tx_format f, const char *text, const char *types, const char *rows)
{
    eng_schema s;
    char err[512] = "";
    int rc = tx_infer(f, "t.txt", text, strlen(text), &s, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    char got[1024] = "";
    size_t o = 0;
    int want[32];
    for (int k = 0; k < s.n; k++) {
        char tn[64];
        ex_type_name(&s.cols[k].t, tn, sizeof(tn));
        o += (size_t)snprintf(got + o, sizeof(got) - o, "%s%s %s", k ? ", " : "", s.cols[k].name, tn);
        want[k] = k;
    }
    assert_string_equal(got, types);
    collect c = {0};
    rc = tx_parse(NULL, f, "t.txt", text, strlen(text), &s, want, s.n, 2, collect_fn, &c, err,
                  sizeof(err));
    if (rc < 0)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    assert_string_equal(c.text, rows);
    eng_schema_free(&s);
}

static void read_err(tx_format f, const char *text, const char *want)
{
    eng_schema s;
    char err[512] = "";
    int rc = tx_infer(f, "bad.txt", text, strlen(text), &s, err, sizeof(err));
    if (rc == 0) {
        int w[32];
        for (int k = 0; k < s.n; k++)
            w[k] = k;
        collect c = {0};
        rc = tx_parse(NULL, f, "bad.txt", text, strlen(text), &s, w, s.n, 100, collect_fn, &c,
                      err, sizeof(err));
        eng_schema_free(&s);
    }
    assert_int_equal(rc, -EBADMSG);
    if (!strstr(err, want))
        fprintf(stderr, "error '%s' lacks '%s'\n", err, want);
    assert_non_null(strstr(err, want));
}

static void test_text_readers(void **state)
{
    (void)state;
    /* header detected: first row all strings, the rest typed */
    read_text(TX_CSV, "id,name,day\n1,\"a,b\",2020-01-02\n2,,2021-03-04\n-3,\"q\"\"\",\n",
              "id Nullable(Int64), name Nullable(String), day Nullable(Date)",
              "1,a,b,2020-01-02;2,\\N,2021-03-04;-3,q\",\\N;");
    /* no header: c1, c2 */
    read_text(TX_CSV, "1,2.5\n2,x\n", "c1 Nullable(Int64), c2 Nullable(String)", "1,2.5;2,x;");
    read_text(TX_TSV_NAMES, "a\tb\n1\tx\\ty\n\\N\t2024-01-01 10:00:00\n",
              "a Nullable(Int64), b Nullable(String)", "1,x\ty;\\N,2024-01-01 10:00:00;");
    read_text(TX_JSON_EACH_ROW, "{\"a\": 1, \"b\": \"x\\n\"}\n{\"b\": null, \"a\": 2.5, \"c\": true}\n",
              "a Nullable(Float64), b Nullable(String), c Nullable(Bool)", "1,x\n,\\N;2.5,\\N,true;");
    read_err(TX_CSV, "a,b\n1,\"open\n2,3\n", "bad.txt, line 2: unterminated quoted field");
    read_err(TX_CSV, "a,b\n1,\"x\"y\n", "after a closing quote");
    read_err(TX_JSON_EACH_ROW, "{\"a\": 1}\n{\"a\": [1]}\n", "line 2");
    read_err(TX_JSON_EACH_ROW, "{\"a\": 1}\nnot json\n", "line 2");
    read_err(TX_CSV_NAMES, "", "empty");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parser_precedence_and_names),
        cmocka_unit_test(test_parser_clauses),
        cmocka_unit_test(test_parser_errors_have_line_and_column),
        cmocka_unit_test(test_eval_semantics),
        cmocka_unit_test(test_bind_errors),
        cmocka_unit_test(test_double_format),
        cmocka_unit_test(test_text_readers),
    };
    return cmocka_run_group_tests(tests, schema_setup, schema_teardown);
}
