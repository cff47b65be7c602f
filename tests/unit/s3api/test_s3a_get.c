/* SPDX-License-Identifier: Apache-2.0
 *
 * test_s3a_get.c: what GetObject answers before a byte is read
 * (cached/s3api/s3a_get.h): each Range form S3 takes (and the ones it ignores
 * or refuses with 416), each conditional in S3's order, with the cases S3
 * documents where one condition overrides another, and ETag lists.
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

#include "s3a_get.h"

#define ETAG "0123456789abcdef0123456789abcdef"
#define T0   1700000000 /* Tue, 14 Nov 2023 22:13:20 GMT */

static s3a_get_plan decide(uint64_t size, const s3a_get_headers *h)
{
    s3a_get_object o = {"\"" ETAG "\"", T0, size};
    s3a_get_plan p;
    s3a_get_decide(&o, h, &p);
    return p;
}

static void test_ranges(void **state)
{
    (void)state;
    const struct {
        const char *range;
        uint64_t size;
        int status;
        uint64_t first, last;
    } cases[] = {
        {NULL, 1000, 200, 0, 999},
        {"bytes=0-99", 1000, 206, 0, 99},
        {"bytes=100-199", 1000, 206, 100, 199},
        {"bytes=900-5000", 1000, 206, 900, 999},                /* clamped */
        {"bytes=16777216-", 20000000, 206, 16777216, 19999999}, /* awscli's last part */
        {"bytes=-100", 1000, 206, 900, 999},                    /* the last 100 */
        {"bytes=-5000", 1000, 206, 0, 999},                     /* more than the size */
        {"bytes=999-999", 1000, 206, 999, 999},
        {"bytes=1000-", 1000, 416, 0, 0}, /* past the end */
        {"bytes=5-2", 1000, 416, 0, 0},   /* last before first */
        {"bytes=-0", 1000, 416, 0, 0},
        {"bytes=0-", 0, 416, 0, 0},           /* an empty object */
        {"bytes=0-1,5-6", 1000, 200, 0, 999}, /* several: the whole object */
        {"items=0-5", 1000, 200, 0, 999},     /* another unit: ignored */
        {"bytes=abc", 1000, 200, 0, 999},
        {"bytes=-", 1000, 200, 0, 999},
        {"bytes=99999999999999999999999-", 1000, 200, 0, 999}, /* does not fit: ignored */
        {"bytes=0-99999999999999999999999", 1000, 206, 0, 999},
        {NULL, 0, 200, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        s3a_get_headers h = {.range = cases[i].range};
        s3a_get_plan p = decide(cases[i].size, &h);
        if (p.status != cases[i].status)
            fail_msg("case %zu (%s): status %d, want %d", i, cases[i].range, p.status,
                     cases[i].status);
        if (p.status == 200 || p.status == 206) {
            assert_int_equal(p.first, cases[i].first);
            assert_int_equal(p.last, cases[i].last);
            assert_int_equal(p.count, cases[i].size ? cases[i].last - cases[i].first + 1 : 0);
        }
    }
}

static void test_conditionals(void **state)
{
    (void)state;
    char before[30], after[30];
    s3a_http_date(T0 - 60, before);
    s3a_http_date(T0 + 60, after);
    assert_string_equal(after, "Tue, 14 Nov 2023 22:14:20 GMT");
    const struct {
        s3a_get_headers h;
        int status;
        const char *condition;
    } cases[] = {
        {{.if_match = "\"" ETAG "\""}, 200, NULL},
        {{.if_match = ETAG}, 200, NULL},
        {{.if_match = "W/\"" ETAG "\""}, 200, NULL},
        {{.if_match = "\"other\", \"" ETAG "\""}, 200, NULL},
        {{.if_match = "*"}, 200, NULL},
        {{.if_match = "\"other\""}, 412, "If-Match"},
        {{.if_unmodified_since = before}, 412, "If-Unmodified-Since"},
        {{.if_unmodified_since = after}, 200, NULL},
        /* If-Match true wins over a failing If-Unmodified-Since */
        {{.if_match = ETAG, .if_unmodified_since = before}, 200, NULL},
        {{.if_none_match = "\"" ETAG "\""}, 304, NULL},
        {{.if_none_match = "*"}, 304, NULL},
        {{.if_none_match = "\"other\""}, 200, NULL},
        {{.if_modified_since = after}, 304, NULL},
        {{.if_modified_since = before}, 200, NULL},
        /* If-None-Match not matching: If-Modified-Since is not looked at */
        {{.if_none_match = "\"other\"", .if_modified_since = after}, 200, NULL},
        /* 412 before 304 */
        {{.if_match = "\"other\"", .if_none_match = ETAG}, 412, "If-Match"},
        /* a date that does not parse is ignored */
        {{.if_modified_since = "yesterday"}, 200, NULL},
        {{.if_unmodified_since = "Mon, 99 Foo 2023"}, 200, NULL},
        /* conditionals before Range */
        {{.if_none_match = ETAG, .range = "bytes=5000-"}, 304, NULL},
        {{.if_match = ETAG, .range = "bytes=5000-"}, 416, NULL},
        {{.if_match = ETAG, .range = "bytes=1-2"}, 206, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        s3a_get_plan p = decide(1000, &cases[i].h);
        if (p.status != cases[i].status)
            fail_msg("case %zu: status %d, want %d", i, p.status, cases[i].status);
        if (cases[i].condition)
            assert_string_equal(p.condition, cases[i].condition);
    }
}

static void test_etag_lists(void **state)
{
    (void)state;
    assert_true(s3a_etag_list_matches("\"a\",\"b\"", "b"));
    assert_true(s3a_etag_list_matches(" \"a\" , W/\"b\" ", "\"b\""));
    assert_true(s3a_etag_list_matches("\"a-3\"", "a-3"));
    assert_false(s3a_etag_list_matches("\"a\"", "ab"));
    assert_false(s3a_etag_list_matches("", "a"));
    assert_false(s3a_etag_list_matches(",,,", "a"));
    assert_false(s3a_etag_list_matches(NULL, "a"));
    assert_false(s3a_etag_list_matches("\"a,b\"", "a"));
    assert_true(s3a_etag_list_matches("\"a,b\"", "a,b"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_conditionals),
        cmocka_unit_test(test_etag_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
