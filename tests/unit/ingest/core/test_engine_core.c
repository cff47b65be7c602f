/* SPDX-License-Identifier: Apache-2.0
 *
 * test_engine_core.c: the value layer (eng_types.h): doubles formatted as
 * ClickHouse prints them; the memory limit's error gives the total the query
 * would have reached.
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

/* The query held 30 MB, then asked for 40 MB more under a 50 MB limit: the
 * error says 70 MB (with the tracker's headers), also after it let go of the
 * 30 MB, as a query does before the error is worded. */
static void test_memory_error_gives_the_attempted_total(void **state)
{
    (void)state;
    eng_mem m = {.limit = 50000000};
    void *a = em_alloc(&m, 30000000);
    assert_non_null(a);
    assert_null(em_alloc(&m, 40000000));
    em_free(&m, a);
    assert_int_equal(atomic_load(&m.cur), 0);
    char err[512];
    em_error(&m, err, sizeof(err));
    /* 30000016 + 40000016 bytes = 66.76 MiB; the limit is 47.68 MiB */
    if (!strstr(err, "would use 66.76 MiB"))
        fprintf(stderr, "%s\n", err);
    assert_non_null(strstr(err, "would use 66.76 MiB (attempt to allocate a chunk of 38.15 MiB)"));
    assert_non_null(strstr(err, "maximum: 47.68 MiB"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_double_format),
        cmocka_unit_test(test_memory_error_gives_the_attempted_total),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
