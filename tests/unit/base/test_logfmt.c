/* SPDX-License-Identifier: Apache-2.0
 *
 * test_logfmt.c: the log line (base/logfmt.h): a UTC timestamp to the
 * millisecond and the level name before the event's text, truncation to the
 * buffer, and the four level names both ways.
 */
#include "logfmt.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

static void line(char *buf, size_t cap, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void line(char *buf, size_t cap, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    logfmt_vline(buf, cap, level, fmt, ap);
    va_end(ap);
}

static void test_shape(void **state)
{
    (void)state;
    char buf[256];
    line(buf, sizeof buf, LOGFMT_WARN, "msg=\"%s\" n=%d", "slow fill", 3);
    int y, mo, d, h, mi, s, ms, used = 0;
    char level[16];
    assert_int_equal(sscanf(buf, "ts=%4d-%2d-%2dT%2d:%2d:%2d.%3dZ level=%15s %n", &y, &mo, &d, &h,
                            &mi, &s, &ms, level, &used),
                     8);
    assert_true(y >= 2024 && mo >= 1 && mo <= 12 && d >= 1 && d <= 31);
    assert_true(h <= 23 && mi <= 59 && s <= 60 && ms <= 999);
    assert_string_equal(level, "warn");
    assert_int_equal(strlen("ts=2026-01-02T03:04:05.678Z level=warn "), (size_t)used);
    assert_string_equal(buf + used, "msg=\"slow fill\" n=3");
}

static void test_truncates(void **state)
{
    (void)state;
    char buf[48];
    line(buf, sizeof buf, LOGFMT_DEBUG, "msg=\"%s\"", "a message longer than what is left");
    assert_int_equal(strlen(buf), sizeof buf - 1);
    assert_memory_equal(buf + 28, "level=debug msg=\"a ", 19);
    char tiny[10];
    line(tiny, sizeof tiny, LOGFMT_INFO, "msg=x");
    assert_memory_equal(tiny, "ts=20", 5);
    assert_int_equal(strlen(tiny), sizeof tiny - 1);
}

static void test_levels(void **state)
{
    (void)state;
    const char *names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++) {
        assert_string_equal(logfmt_level_name(i), names[i]);
        assert_int_equal(logfmt_level_of(names[i]), i);
    }
    assert_null(logfmt_level_name(-1));
    assert_null(logfmt_level_name(4));
    assert_int_equal(logfmt_level_of("warning"), -EINVAL);
    assert_int_equal(logfmt_level_of("INFO"), -EINVAL);
    assert_int_equal(logfmt_level_of(""), -EINVAL);
    char buf[128];
    line(buf, sizeof buf, 9, "msg=x");
    assert_non_null(strstr(buf, " level=unknown msg=x"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shape),
        cmocka_unit_test(test_truncates),
        cmocka_unit_test(test_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
