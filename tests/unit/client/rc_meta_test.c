/* SPDX-License-Identifier: Apache-2.0
 *
 * rc_meta_test.c: libringcache's metadata cache (rc_int.h, rc__meta_*): an
 * entry is served until its TTL, replaced by a newer put, dropped only when
 * it still names the version a read found stale, and neither an over-long
 * version nor anything at all with a TTL of 0 is kept.
 */
#include "rc_int.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

static void test_put_get_drop(void **state)
{
    (void)state;
    rc_meta_cache m;
    rc__meta_init(&m, 60000);
    uint64_t size = 0;
    char v[RC_VERSION_CAP];
    assert_false(rc__meta_get(&m, "bucket", "a/b", &size, v));
    rc__meta_put(&m, "bucket", "a/b", 100, "v1");
    rc__meta_put(&m, "bucket-a", "b", 7, "other"); /* another object entirely */
    assert_true(rc__meta_get(&m, "bucket", "a/b", &size, v));
    assert_int_equal(size, 100);
    assert_string_equal(v, "v1");
    rc__meta_put(&m, "bucket", "a/b", 200, "v2"); /* a write-through PUT */
    assert_true(rc__meta_get(&m, "bucket", "a/b", &size, v));
    assert_int_equal(size, 200);
    assert_string_equal(v, "v2");
    rc__meta_drop(&m, "bucket", "a/b", "v1"); /* a stale read of the old version */
    assert_true(rc__meta_get(&m, "bucket", "a/b", &size, v));
    rc__meta_drop(&m, "bucket", "a/b", "v2");
    assert_false(rc__meta_get(&m, "bucket", "a/b", &size, v));
    assert_true(rc__meta_get(&m, "bucket-a", "b", &size, v));
    assert_string_equal(v, "other");
    char longv[RC_VERSION_MAX];
    memset(longv, 'e', sizeof(longv) - 1);
    longv[sizeof(longv) - 1] = '\0'; /* BKEY_VERSION_MAX + 1 characters */
    rc__meta_put(&m, "bucket", "long", 1, longv);
    assert_false(rc__meta_get(&m, "bucket", "long", &size, v));
    rc__meta_deinit(&m);
}

static void test_ttl(void **state)
{
    (void)state;
    rc_meta_cache m;
    uint64_t size = 0;
    char v[RC_VERSION_CAP];
    rc__meta_init(&m, 0);
    rc__meta_put(&m, "bucket", "k", 1, "v");
    assert_false(rc__meta_get(&m, "bucket", "k", &size, v));
    rc__meta_deinit(&m);
    rc__meta_init(&m, 1);
    rc__meta_put(&m, "bucket", "k", 1, "v");
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL); /* well past 1 ms */
    assert_false(rc__meta_get(&m, "bucket", "k", &size, v));
    rc__meta_deinit(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_drop),
        cmocka_unit_test(test_ttl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
