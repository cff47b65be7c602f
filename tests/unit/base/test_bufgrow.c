/* SPDX-License-Identifier: Apache-2.0
 *
 * test_bufgrow.c: a byte buffer's growth (base/bufgrow.h): from the first
 * size, doubling until the need fits, nothing done when it fits already, the
 * bytes kept, and a need past SIZE_MAX refused with the buffer untouched.
 */
#include "bufgrow.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static void test_doubles(void **state)
{
    (void)state;
    uint8_t *p = NULL;
    size_t cap = 0;
    assert_int_equal(bufgrow(&p, &cap, 0, 64), 0);
    assert_null(p);
    assert_int_equal(cap, 0);
    assert_int_equal(bufgrow(&p, &cap, 1, 64), 0);
    assert_non_null(p);
    assert_int_equal(cap, 64);
    memset(p, 7, 64);
    assert_int_equal(bufgrow(&p, &cap, 64, 64), 0);
    assert_int_equal(cap, 64);
    assert_int_equal(bufgrow(&p, &cap, 65, 64), 0);
    assert_int_equal(cap, 128);
    assert_int_equal(bufgrow(&p, &cap, 1000, 64), 0);
    assert_int_equal(cap, 1024);
    for (int i = 0; i < 64; i++)
        assert_int_equal(p[i], 7);
    free(p);
    p = NULL;
    cap = 0;
    assert_int_equal(bufgrow(&p, &cap, 300, 256), 0);
    assert_int_equal(cap, 512);
    free(p);
}

static void test_too_large(void **state)
{
    (void)state;
    uint8_t *p = NULL;
    size_t cap = 0;
    assert_int_equal(bufgrow(&p, &cap, 16, 16), 0);
    uint8_t *was = p;
    assert_int_equal(bufgrow(&p, &cap, SIZE_MAX, 16), -ENOMEM);
    assert_ptr_equal(p, was);
    assert_int_equal(cap, 16);
    assert_int_equal(bufgrow(&p, &cap, SIZE_MAX / 2 + 2, 16), -ENOMEM);
    assert_int_equal(cap, 16);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_doubles),
        cmocka_unit_test(test_too_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
