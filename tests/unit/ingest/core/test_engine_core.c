/* SPDX-License-Identifier: Apache-2.0
 *
 * test_engine_core.c: the value layer (eng_types.h): doubles formatted as
 * ClickHouse prints them.
 */
#include "eng_types.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_double_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
