/* SPDX-License-Identifier: Apache-2.0
 *
 * test_engine_text.c: the CSV / TSV / JSONEachRow readers (eng_text.h):
 * inference, header detection, quoting, JSON's \u escapes, errors naming
 * the line.
 */
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
            c->o += (size_t)snprintf(c->text + c->o, sizeof(c->text) - c->o, "%s%.*s", k ? "," : "",
                                     (int)l, p);
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
        o += (size_t)snprintf(got + o, sizeof(got) - o, "%s%s %s", k ? ", " : "", s.cols[k].name,
                              tn);
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
        rc = tx_parse(NULL, f, "bad.txt", text, strlen(text), &s, w, s.n, 100, collect_fn, &c, err,
                      sizeof(err));
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
    read_text(
        TX_JSON_EACH_ROW, "{\"a\": 1, \"b\": \"x\\n\"}\n{\"b\": null, \"a\": 2.5, \"c\": true}\n",
        "a Nullable(Float64), b Nullable(String), c Nullable(Bool)", "1,x\n,\\N;2.5,\\N,true;");
    /* \u escapes: one to three UTF-8 bytes, a surrogate pair as one code
     * point (Python's json.dumps writes an emoji so), a lone surrogate as
     * U+FFFD, fewer than four hex digits as the letter */
    read_text(TX_JSON_EACH_ROW,
              "{\"s\": \"\\u0041\\u00e9\\u20ac\\ud83d\\ude00.\"}\n{\"s\": \"\\udc00\\u12\"}\n",
              "s Nullable(String)", "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80.;\xef\xbf\xbdu12;");
    read_err(TX_CSV, "a,b\n1,\"open\n2,3\n", "bad.txt, line 2: unterminated quoted field");
    read_err(TX_CSV, "a,b\n1,\"x\"y\n", "after a closing quote");
    /* an array value is its text (an Array column of a table parses it) */
    read_text(TX_JSON_EACH_ROW, "{\"a\": [1, \"x]\\\"\", [2]]}\n{\"a\": []}\n",
              "a Nullable(String)", "[1, \"x]\\\"\", [2]];[];");
    read_err(TX_JSON_EACH_ROW, "{\"a\": 1}\n{\"a\": {\"b\": 1}}\n",
             "line 2: the value of \"a\" is a nested object");
    read_err(TX_JSON_EACH_ROW, "{\"a\": 1}\n{\"a\": [1, 2}\n",
             "line 2: the array value of \"a\" is not closed");
    read_err(TX_JSON_EACH_ROW, "{\"a\": 1}\nnot json\n", "line 2");
    read_err(TX_CSV_NAMES, "", "empty");
}

/* tx_parse of text with schema s reading columns want (n of them): its error. */
static void parse_err(tx_format f, const char *text, const eng_schema *s, const int *want, int n,
                      const char *expect)
{
    char err[512] = "";
    collect c = {0};
    int rc = tx_parse(NULL, f, "t.csv", text, strlen(text), s, want, n, 100, collect_fn, &c, err,
                      sizeof(err));
    assert_int_equal(rc, -EBADMSG);
    if (!strstr(err, expect))
        fprintf(stderr, "error '%s' lacks '%s'\n", err, expect);
    assert_non_null(strstr(err, expect));
}

/* A row with more or fewer fields than the header is the same error whatever
 * the query reads (no column, one before it, all), and inference never makes
 * a column up from it. */
static void check_width(tx_format f, const char *good, const char *bad_row, long line, int nf,
                        int want_nf, const char *against)
{
    char text[256], expect[160];
    snprintf(text, sizeof(text), "%s%s", good, bad_row);
    snprintf(expect, sizeof(expect), "t.csv, line %ld: the row has %d fields, the %s %d", line, nf,
             against, want_nf);
    eng_schema s;
    char err[512] = "";
    /* inference over the whole text meets the bad row: an error, no new column */
    assert_int_equal(tx_infer(f, "t.csv", text, strlen(text), &s, err, sizeof(err)), -EBADMSG);
    if (!strstr(err, expect))
        fprintf(stderr, "error '%s' lacks '%s'\n", err, expect);
    assert_non_null(strstr(err, expect));
    /* the schema of the good rows, then a scan of the whole text (a bad row
     * past the rows inference reads) */
    assert_int_equal(tx_infer(f, "t.csv", good, strlen(good), &s, err, sizeof(err)), 0);
    assert_int_equal(s.n, want_nf);
    const int all[] = {0, 1, 2}, first[] = {0}, last[] = {2};
    parse_err(f, text, &s, NULL, 0, expect);
    parse_err(f, text, &s, first, 1, expect);
    parse_err(f, text, &s, last, 1, expect);
    parse_err(f, text, &s, all, 3, expect);
    eng_schema_free(&s);
}

static void test_rows_of_the_wrong_width(void **state)
{
    (void)state;
    check_width(TX_CSV, "a,b,c\n1,x,2\n", "3,z,4,5\n", 3, 4, 3, "header");
    check_width(TX_CSV_NAMES, "a,b,c\n1,x,2\n", "3,z,4,5\n", 3, 4, 3, "header");
    check_width(TX_CSV, "a,b,c\n1,x,2\n", "3,z\n", 3, 2, 3, "header");
    check_width(TX_CSV, "1,x,2\n5,y,6\n", "3,z,4,5\n", 3, 4, 3, "first row");
    check_width(TX_TSV, "a\tb\tc\n1\tx\t2\n", "3\tz\t4\t5\n", 3, 4, 3, "header");
    check_width(TX_TSV_NAMES, "a\tb\tc\n1\tx\t2\n", "3\tz\n", 3, 2, 3, "header");
    check_width(TX_TSV, "1\tx\t2\n", "3\tz\t4\t5\n", 2, 4, 3, "first row");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_readers),
        cmocka_unit_test(test_rows_of_the_wrong_width),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
