/* SPDX-License-Identifier: Apache-2.0
 *
 * test_errf.c: the error sentence (base/errf.h): formatted into the caller's
 * buffer, truncated and NUL-terminated when it is short, nothing written (and
 * no crash) without a buffer, the va_list form the same, and errf_fail
 * returning the caller's code.
 */
#include "errf.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

static void test_formats(void **state)
{
    (void)state;
    char err[64];
    memset(err, 'x', sizeof err);
    errf_set(err, sizeof err, "cannot open %s: %s (%d)", "/data", "Permission denied", 13);
    assert_string_equal(err, "cannot open /data: Permission denied (13)");
}

static void test_truncates(void **state)
{
    (void)state;
    char err[8];
    memset(err, 'x', sizeof err);
    errf_set(err, sizeof err, "%s", "a sentence longer than the buffer");
    assert_string_equal(err, "a sente");
    char one[1] = {'x'};
    errf_set(one, sizeof one, "%s", "anything");
    assert_int_equal(one[0], '\0');
}

static void test_no_buffer(void **state)
{
    (void)state;
    errf_set(NULL, 64, "nothing %s", "written");
    char err[4] = {'k', 'e', 'e', 'p'};
    errf_set(err, 0, "nothing %s", "written");
    assert_memory_equal(err, "keep", 4);
}

static void vset(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void vset(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    errf_vset(err, errlen, fmt, ap);
    va_end(ap);
}

static void test_va_list(void **state)
{
    (void)state;
    char err[32];
    vset(err, sizeof err, "block %u of %s", 7u, "k");
    assert_string_equal(err, "block 7 of k");
    vset(NULL, 0, "block %u", 7u);
    char small[6];
    vset(small, sizeof small, "block %u", 12345u);
    assert_string_equal(small, "block");
}

static void test_fail_returns_rc(void **state)
{
    (void)state;
    char err[32];
    assert_int_equal(errf_fail(err, sizeof err, -22, "bad %s", "frame"), -22);
    assert_string_equal(err, "bad frame");
    assert_int_equal(errf_fail(NULL, 0, -5, "unseen"), -5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formats),   cmocka_unit_test(test_truncates),
        cmocka_unit_test(test_no_buffer), cmocka_unit_test(test_fail_returns_rc),
        cmocka_unit_test(test_va_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
