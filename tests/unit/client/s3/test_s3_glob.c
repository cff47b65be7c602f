/* SPDX-License-Identifier: Apache-2.0
 *
 * test_s3_glob.c: key globs with ClickHouse's s3() meanings: each wildcard
 * form, alternatives (with wildcards and empty ones), integer ranges with and
 * without zero-padding, descending ranges, the listing prefix, bad patterns,
 * and patterns that make a backtracking matcher take exponential time (they
 * finish here in a blink; a regression would hit the ctest timeout).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "s3_int.h"

typedef struct row {
    const char *key;
    bool match;
} row;

static void check(const char *pattern, const row *rows, size_t n)
{
    s3_glob *g = NULL;
    int rc = s3_glob_create(&g, pattern);
    if (rc != 0)
        fail_msg("'%s' did not compile: %d", pattern, rc);
    for (size_t i = 0; i < n; i++)
        if (s3_glob_match(g, rows[i].key) != rows[i].match)
            fail_msg("'%s' vs '%s': expected %s", pattern, rows[i].key,
                     rows[i].match ? "match" : "no match");
    s3_glob_destroy(&g);
    assert_null(g);
}

#define CHECK(p, ...)                                                                              \
    do {                                                                                           \
        const row r_[] = {__VA_ARGS__};                                                            \
        check(p, r_, sizeof r_ / sizeof r_[0]);                                                    \
    } while (0)

static void test_star(void **state)
{
    (void)state;
    CHECK("dir/*.parquet", {"dir/a.parquet", true}, {"dir/.parquet", true},
          {"dir/a.b.parquet", true}, {"dir/sub/a.parquet", false}, {"dir/a.csv", false},
          {"dir/a.parquet.tmp", false}, {"other/a.parquet", false});
    CHECK("*", {"", true}, {"abc", true}, {"a/b", false});
    CHECK("*/*", {"a/b", true}, {"/", true}, {"a/b/c", false}, {"ab", false});
    CHECK("a*b*c", {"abc", true}, {"aXbYc", true}, {"abbbc", true}, {"acb", false},
          {"ab/c", false});
}

static void test_double_star(void **state)
{
    (void)state;
    CHECK("dir/**.parquet", {"dir/a.parquet", true}, {"dir/x/y/z.parquet", true},
          {"dir/.parquet", true}, {"dir/x/y/z.csv", false}, {"dirx/a.parquet", false});
    CHECK("**", {"", true}, {"a/b/c", true}, {"/", true});
    CHECK("a/**/b", {"a/x/b", true}, {"a/x/y/b", true}, {"a//b", true}, {"a/b", false});
    CHECK("***", {"a/b", true}); /* three or more stars mean ** */
}

static void test_question(void **state)
{
    (void)state;
    CHECK("file?.csv", {"file1.csv", true}, {"filex.csv", true}, {"file.csv", false},
          {"file12.csv", false}, {"file/.csv", false},
          {"file\xc3\xa9.csv", true},     /* one two-byte character */
          {"file\xe2\x82\xac.csv", true}, /* one three-byte character */
          {"file\xc3\xa9\xc3\xa9.csv", false});
    CHECK("??", {"ab", true}, {"a", false}, {"abc", false}, {"\xc3\xa9x", true});
}

static void test_alternatives(void **state)
{
    (void)state;
    CHECK("data/{x,yy,zzz}/f", {"data/x/f", true}, {"data/yy/f", true}, {"data/zzz/f", true},
          {"data/y/f", false}, {"data/xyy/f", false}, {"data//f", false});
    CHECK("f{,.gz}", {"f", true}, {"f.gz", true}, {"f.g", false});
    CHECK("x{,}y", {"xy", true}, {"x,y", false}); /* only empty alternatives */
    CHECK("{,}", {"", true}, {"a", false});
    CHECK("{*.csv,*.tsv}", {"a.csv", true}, {"b.tsv", true}, {"a.json", false}, {"d/a.csv", false});
    CHECK("{a/**,b?}", {"a/x/y", true}, {"bz", true}, {"b", false}, {"b/", false});
    CHECK("{abc}", {"abc", true}, {"ab", false});
    CHECK("x{a,b}{c,d}y", {"xacy", true}, {"xbdy", true}, {"xaby", false});
    CHECK("a}b", {"a}b", true}); /* a lone '}' is a literal */
}

static void test_ranges(void **state)
{
    (void)state;
    CHECK("part-{1..10}.csv", {"part-1.csv", true}, {"part-10.csv", true}, {"part-5.csv", true},
          {"part-0.csv", false}, {"part-11.csv", false}, {"part-01.csv", false},
          {"part-.csv", false}, {"part-1a.csv", false});
    CHECK("f{001..010}", {"f001", true}, {"f010", true}, {"f005", true}, {"f1", false},
          {"f0010", false}, {"f011", false}, {"f000", false});
    CHECK("f{01..120}", {"f001", true}, {"f120", true}, {"f01", false}, {"f121", false});
    CHECK("f{0..3}", {"f0", true}, {"f3", true}, {"f00", false}, {"f4", false});
    /* Descending: the same set as ascending. */
    CHECK("f{10..1}", {"f1", true}, {"f10", true}, {"f7", true}, {"f0", false}, {"f11", false});
    /* Digits after the range: every split is tried. */
    CHECK("{1..10}5", {"15", true}, {"105", true}, {"55", true}, {"1005", false}, {"5", false});
    CHECK("{0..999999999999999999}", {"123456789012345678", true}, {"0", true},
          {"1234567890123456789", false});
}

static void test_prefix(void **state)
{
    (void)state;
    static const struct {
        const char *pattern, *prefix;
        bool wild;
    } t[] = {
        {"dir/sub/*.parquet", "dir/sub/", true},
        {"dir/{a,b}/x", "dir/", true},
        {"dir/file?.csv", "dir/file", true},
        {"logs/{1..9}", "logs/", true},
        {"a/b/c", "a/b/c", false},
        {"a}b", "a}b", false},
        {"**", "", true},
        {"", "", false},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        s3_glob *g = NULL;
        assert_int_equal(s3_glob_create(&g, t[i].pattern), 0);
        assert_string_equal(s3_glob_prefix(g), t[i].prefix);
        assert_int_equal(s3_glob_has_wildcards(g), t[i].wild);
        s3_glob_destroy(&g);
    }
    /* No wildcard: an exact match. */
    CHECK("a/b/c", {"a/b/c", true}, {"a/b/cd", false}, {"a/b", false});
    CHECK("", {"", true}, {"a", false});
}

static void test_bad_patterns(void **state)
{
    (void)state;
    static const char *bad[] = {
        "{1..",     "{",
        "a{b",      "{}",
        "x{}y",     "{a,{b,c}}",
        "{{a}}",    "{1..}",
        "{..2}",    "{a..b}",
        "{-1..3}",  "{1..2..3}",
        "{1...3}",  "{0..9999999999999999999}",
        "{1.5..3}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        s3_glob *g = (s3_glob *)&g; /* not NULL: create must set it to NULL */
        if (s3_glob_create(&g, bad[i]) != -EINVAL)
            fail_msg("'%s' should be refused", bad[i]);
        assert_null(g);
    }
    s3_glob *g = NULL;
    assert_int_equal(s3_glob_create(&g, NULL), -EINVAL);
    assert_int_equal(s3_glob_create(NULL, "a"), -EINVAL);
    char *longp = malloc(5000);
    assert_non_null(longp);
    memset(longp, 'a', 4999);
    longp[4999] = '\0';
    assert_int_equal(s3_glob_create(&g, longp), -EINVAL);
    free(longp);
    /* At most 4096 alternatives in all. */
    char *alts = malloc(2 * 4097 + 3);
    assert_non_null(alts);
    alts[0] = '{';
    for (int i = 0; i < 4097; i++) {
        alts[1 + 2 * i] = 'a';
        alts[2 + 2 * i] = ',';
    }
    alts[2 * 4097] = '}';
    alts[2 * 4097 + 1] = '\0';
    assert_int_equal(s3_glob_create(&g, alts), -EINVAL);
    free(alts);
    s3_glob_destroy(&g);
    s3_glob_destroy(NULL);
    assert_false(s3_glob_match(NULL, "a"));
    assert_string_equal(s3_glob_prefix(NULL), "");
}

static void test_pathological(void **state)
{
    (void)state;
    /* A backtracking matcher tries ~C(1000, 10) splits here. */
    char key[1001];
    memset(key, 'a', 1000);
    key[1000] = '\0';
    s3_glob *g = NULL;
    assert_int_equal(s3_glob_create(&g, "*a*a*a*a*a*a*a*a*a*a*b"), 0);
    for (int i = 0; i < 200; i++)
        assert_false(s3_glob_match(g, key));
    key[999] = 'b';
    assert_true(s3_glob_match(g, key));
    s3_glob_destroy(&g);
    /* The same with ** over slashes, and with alternatives in the loop. */
    for (int i = 0; i < 1000; i++)
        key[i] = i % 2 ? '/' : 'a';
    assert_int_equal(s3_glob_create(&g, "**a**a**a**a**a**a**a**a**b"), 0);
    assert_false(s3_glob_match(g, key));
    s3_glob_destroy(&g);
    assert_int_equal(s3_glob_create(&g, "{*a,**a}{*a,**a}{*a,**a}{*a,**a}{*a,**a}b"), 0);
    assert_false(s3_glob_match(g, key));
    s3_glob_destroy(&g);
    /* A key longer than S3 allows still works (off the stack). */
    char *big = malloc(100001);
    assert_non_null(big);
    memset(big, 'x', 100000);
    big[100000] = '\0';
    assert_int_equal(s3_glob_create(&g, "**x*x"), 0);
    assert_true(s3_glob_match(g, big));
    big[99999] = 'y';
    assert_false(s3_glob_match(g, big));
    s3_glob_destroy(&g);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_star),         cmocka_unit_test(test_double_star),
        cmocka_unit_test(test_question),     cmocka_unit_test(test_alternatives),
        cmocka_unit_test(test_ranges),       cmocka_unit_test(test_prefix),
        cmocka_unit_test(test_bad_patterns), cmocka_unit_test(test_pathological),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
