/* SPDX-License-Identifier: Apache-2.0
 *
 * test_jsonu.c: JSON's \u escape (base/jsonu.h): one, two and three UTF-8
 * bytes, a surrogate pair joined into one four-byte code point (what Python's
 * json.dumps writes for an emoji), lone and reversed surrogates replaced with
 * U+FFFD, and fewer than four hex digits refused without reading past n.
 */
#include "jsonu.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

static size_t dec(const char *s, uint8_t out[4], size_t *ol)
{
    return jsonu_decode(s, strlen(s), out, ol);
}

static void test_bmp(void **state)
{
    (void)state;
    uint8_t o[4];
    size_t ol;
    assert_int_equal(dec("0041", o, &ol), 4);
    assert_int_equal(ol, 1);
    assert_int_equal(o[0], 'A');
    assert_int_equal(dec("00e9rest", o, &ol), 4); /* é */
    assert_int_equal(ol, 2);
    assert_memory_equal(o, "\xc3\xa9", 2);
    assert_int_equal(dec("20AC", o, &ol), 4); /* € */
    assert_int_equal(ol, 3);
    assert_memory_equal(o, "\xe2\x82\xac", 3);
    assert_int_equal(dec("0000", o, &ol), 4);
    assert_int_equal(ol, 1);
    assert_int_equal(o[0], 0);
}

static void test_surrogate_pair(void **state)
{
    (void)state;
    uint8_t o[4];
    size_t ol;
    assert_int_equal(dec("d83d\\ude00", o, &ol), 10); /* U+1F600 */
    assert_int_equal(ol, 4);
    assert_memory_equal(o, "\xf0\x9f\x98\x80", 4);
    assert_int_equal(dec("DBFF\\uDFFF", o, &ol), 10); /* U+10FFFF */
    assert_memory_equal(o, "\xf4\x8f\xbf\xbf", 4);
}

static void test_lone_surrogates(void **state)
{
    (void)state;
    uint8_t o[4];
    size_t ol;
    assert_int_equal(dec("d83d", o, &ol), 4); /* high, then the end */
    assert_memory_equal(o, "\xef\xbf\xbd", 3);
    assert_int_equal(dec("d83dx\\ude00", o, &ol), 4); /* high, then not an escape */
    assert_memory_equal(o, "\xef\xbf\xbd", 3);
    assert_int_equal(dec("d83d\\u0041", o, &ol), 4); /* high, then no low: 'A' stays */
    assert_memory_equal(o, "\xef\xbf\xbd", 3);
    assert_int_equal(dec("de00", o, &ol), 4); /* a low alone */
    assert_memory_equal(o, "\xef\xbf\xbd", 3);
}

static void test_malformed(void **state)
{
    (void)state;
    uint8_t o[4] = {9, 9, 9, 9};
    size_t ol = 77;
    assert_int_equal(dec("12", o, &ol), 0);
    assert_int_equal(dec("12g4", o, &ol), 0);
    assert_int_equal(dec("", o, &ol), 0);
    /* n bounds the read: "0041" exists but only 3 bytes are given */
    assert_int_equal(jsonu_decode("0041", 3, o, &ol), 0);
    assert_int_equal(ol, 77);
    assert_int_equal(o[0], 9);
    /* a pair cut by n is a lone high surrogate */
    assert_int_equal(jsonu_decode("d83d\\ude00", 9, o, &ol), 4);
    assert_memory_equal(o, "\xef\xbf\xbd", 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bmp),
        cmocka_unit_test(test_surrogate_pair),
        cmocka_unit_test(test_lone_surrogates),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
