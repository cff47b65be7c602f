/* SPDX-License-Identifier: Apache-2.0
 *
 * test_s3_retry.c: the retry policy. A table of attempts and whether each may
 * be retried (server errors, throttling, resets, timeouts yes; other 4xx and
 * local failures no), and the full-jitter delay: always within
 * [0, min(cap, base * 2^(n-1))], spread over that range, and driven only by
 * the caller's random state.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "s3_int.h"

static void test_classification(void **state)
{
    (void)state;
    static const struct {
        int status, terr;
        const char *code;
        bool retry;
    } t[] = {
        {500, 0, "InternalError", true},
        {500, 0, NULL, true},
        {502, 0, NULL, true},
        {503, 0, "SlowDown", true},
        {503, 0, NULL, true},
        {504, 0, NULL, true},
        {501, 0, "NotImplemented", false},
        {429, 0, NULL, true},
        {408, 0, NULL, true},
        {400, 0, "RequestTimeout", true},
        {200, 0, "InternalError", true}, /* CompleteMultipartUpload's 200 + <Error> */
        {400, 0, "InvalidArgument", false},
        {400, 0, NULL, false},
        {403, 0, "SignatureDoesNotMatch", false},
        {403, 0, "AccessDenied", false},
        {404, 0, "NoSuchKey", false},
        {409, 0, NULL, false},
        {409, 0, "ConditionalRequestConflict", true}, /* a racing conditional write */
        {409, 0, "BucketAlreadyExists", false},
        {412, 0, "PreconditionFailed", false},
        {416, 0, "InvalidRange", false},
        {200, 0, NULL, false},
        {206, 0, NULL, false},
        {0, -ECONNRESET, NULL, true},
        {0, -ETIMEDOUT, NULL, true},
        {0, -ECONNREFUSED, NULL, true},
        {0, -EPIPE, NULL, true},
        {200, -EPIPE, NULL, true}, /* body truncated after a 200 */
        {0, -EHOSTUNREACH, NULL, true},
        {0, -ECANCELED, NULL, false},
        {0, -ENOMEM, NULL, false},
        {0, -EINVAL, NULL, false},
        {0, -EPROTO, NULL, false},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        s3__attempt a = {t[i].status, t[i].terr, t[i].code};
        if (s3__retry_should(&a) != t[i].retry)
            fail_msg("row %zu: status %d terr %d code %s: expected retry=%d", i, t[i].status,
                     t[i].terr, t[i].code ? t[i].code : "-", t[i].retry);
    }
    assert_false(s3__retry_should(NULL));
}

static void test_delay_bounds(void **state)
{
    (void)state;
    uint64_t rng = 12345;
    const int base = 100, cap = 5000;
    for (int attempt = 1; attempt <= 40; attempt++) {
        long bound = base;
        for (int i = 1; i < attempt && bound < cap; i++)
            bound *= 2;
        if (bound > cap)
            bound = cap;
        int max_seen = 0;
        for (int i = 0; i < 2000; i++) {
            int d = s3__retry_delay_ms(attempt, base, cap, &rng);
            assert_in_range(d, 0, bound);
            if (d > max_seen)
                max_seen = d;
        }
        /* 2000 uniform draws reach the top tenth of the range. */
        assert_true(max_seen >= bound * 9 / 10);
    }
    /* Huge attempt numbers do not overflow. */
    for (int i = 0; i < 100; i++)
        assert_in_range(s3__retry_delay_ms(1 << 30, base, cap, &rng), 0, cap);
}

static void test_delay_distribution(void **state)
{
    (void)state;
    uint64_t rng = 1;
    int buckets[10] = {0};
    const int n = 20000;
    for (int i = 0; i < n; i++) {
        int d = s3__retry_delay_ms(4, 100, 5000, &rng); /* uniform over [0, 800] */
        buckets[d * 10 / 801]++;
    }
    for (int b = 0; b < 10; b++)
        assert_in_range(buckets[b], n / 10 * 8 / 10, n / 10 * 12 / 10);
}

static void test_delay_state(void **state)
{
    (void)state;
    /* The caller's state decides: same seed, same sequence; zero is usable. */
    uint64_t a = 42, b = 42, z = 0;
    int distinct = 0, last = -1;
    for (int i = 0; i < 100; i++) {
        int x = s3__retry_delay_ms(6, 100, 5000, &a);
        assert_int_equal(x, s3__retry_delay_ms(6, 100, 5000, &b));
        int y = s3__retry_delay_ms(6, 100, 5000, &z);
        distinct += y != last;
        last = y;
    }
    assert_true(distinct > 50);
    assert_int_not_equal(z, 0);
    assert_int_equal(s3__retry_delay_ms(3, 0, 5000, &a), 0);
    assert_int_equal(s3__retry_delay_ms(3, 100, 0, &a), 0);
    assert_int_equal(s3__retry_delay_ms(3, 100, 5000, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classification),
        cmocka_unit_test(test_delay_bounds),
        cmocka_unit_test(test_delay_distribution),
        cmocka_unit_test(test_delay_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
