/* SPDX-License-Identifier: Apache-2.0
 *
 * test_bytesize.c: the one size grammar (base/bytesize.h): every unit and
 * its spellings (all binary), what is refused (junk after the digits, a sign,
 * a fraction, a space, an unknown unit, a value over INT64_MAX) with a
 * sentence that names the value, and the formatter's round trip.
 */
#include "bytesize.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

static void test_units(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        uint64_t want;
    } ok[] = {
        {"0", 0},
        {"4096", 4096},
        {"7b", 7},
        {"7B", 7},
        {"64k", 64ull << 10},
        {"64K", 64ull << 10},
        {"64Ki", 64ull << 10},
        {"64KB", 64ull << 10},
        {"64kib", 64ull << 10},
        {"64KiB", 64ull << 10},
        {"1m", 1ull << 20},
        {"1Mi", 1ull << 20},
        {"1MB", 1ull << 20},
        {"1MiB", 1ull << 20},
        {"2G", 2ull << 30},
        {"2Gi", 2ull << 30},
        {"2GB", 2ull << 30},
        {"2GiB", 2ull << 30},
        {"3t", 3ull << 40},
        {"3TB", 3ull << 40},
        {"3TiB", 3ull << 40},
        {"007MiB", 7ull << 20},
        {"8388607TiB", 8388607ull << 40},
        {"9223372036854775807", 9223372036854775807ull},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v = 12345;
        char err[256] = "";
        int rc = bytesize_parse(ok[i].text, &v, err, sizeof err);
        if (rc != 0 || v != ok[i].want)
            fprintf(stderr, "'%s': rc %d value %llu (%s)\n", ok[i].text, rc, (unsigned long long)v,
                    err);
        assert_int_equal(rc, 0);
        assert_true(v == ok[i].want);
    }
}

static void test_refused(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int rc;
        const char *says; /* in the sentence besides the value itself */
    } bad[] = {
        {"1x", -EINVAL, "'x' is not a unit"},
        {"10XB", -EINVAL, "'XB' is not a unit"},
        {"1MiBB", -EINVAL, "not a unit"},
        {"1 MiB", -EINVAL, "not a unit"},
        {"1.5M", -EINVAL, "whole number"},
        {"1,5M", -EINVAL, "whole number"},
        {"-4096", -EINVAL, "sign"},
        {"+4096", -EINVAL, "sign"},
        {"", -EINVAL, "number of bytes"},
        {"MiB", -EINVAL, "number of bytes"},
        {" 1", -EINVAL, "number of bytes"},
        {"1e6", -EINVAL, "not a unit"},
        {"0x10", -EINVAL, "not a unit"},
        {"1KB2", -EINVAL, "not a unit"},
        {"1PiB", -EINVAL, "not a unit"},
        {"9223372036854775808", -ERANGE, "too large"},
        {"99999999999999999999k", -ERANGE, "too large"},
        {"8388608TiB", -ERANGE, "too large"},
        {"8589934592GiB", -ERANGE, "too large"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 12345;
        char err[256] = "";
        int rc = bytesize_parse(bad[i].text, &v, err, sizeof err);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "'%s'", bad[i].text);
        if (rc != bad[i].rc || !strstr(err, quoted) || !strstr(err, bad[i].says))
            fprintf(stderr, "'%s': rc %d: %s\n", bad[i].text, rc, err);
        assert_int_equal(rc, bad[i].rc);
        assert_true(v == 12345); /* untouched */
        assert_non_null(strstr(err, quoted));
        assert_non_null(strstr(err, bad[i].says));
    }
    /* NULL text and a NULL err buffer are refusals too, not crashes */
    uint64_t v;
    assert_int_equal(bytesize_parse(NULL, &v, NULL, 0), -EINVAL);
    assert_int_equal(bytesize_parse("1x", &v, NULL, 0), -EINVAL);
    /* a long value is cut in the sentence, which still fits */
    char longv[300];
    memset(longv, '7', sizeof longv - 2);
    longv[sizeof longv - 2] = 'x';
    longv[sizeof longv - 1] = '\0';
    char err[200];
    assert_int_equal(bytesize_parse(longv, &v, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "..."));
}

static void test_format_round_trip(void **state)
{
    (void)state;
    static const struct {
        uint64_t v;
        const char *text;
    } cases[] = {
        {0, "0"},
        {1, "1"},
        {4097, "4097"},
        {1024, "1KiB"},
        {1536 << 10, "1536KiB"},
        {1ull << 20, "1MiB"},
        {64ull << 20, "64MiB"},
        {10ull << 30, "10GiB"},
        {1ull << 40, "1TiB"},
        {9223372036854775807ull, "9223372036854775807"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[32];
        bytesize_format(cases[i].v, buf, sizeof buf);
        assert_string_equal(buf, cases[i].text);
        uint64_t back = 0;
        assert_int_equal(bytesize_parse(buf, &back, NULL, 0), 0);
        assert_true(back == cases[i].v);
    }
    char tiny[4];
    bytesize_format(1ull << 20, tiny, sizeof tiny);
    assert_int_equal(strlen(tiny), 3); /* cut, NUL-terminated */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_format_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
