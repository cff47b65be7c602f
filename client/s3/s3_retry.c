/* SPDX-License-Identifier: Apache-2.0
 *
 * s3_retry.c: the retry policy of the S3 client. Which attempts are worth
 * repeating (server errors, throttling, resets, timeouts; never a plain 4xx,
 * which would fail the same way again) and how long to wait before the next
 * one: exponential backoff with "full jitter" (a uniform draw between zero and
 * the exponential bound), which spreads a crowd of clients hit by the same
 * 503 SlowDown instead of having them retry in lock-step. The random state is
 * the caller's (one per client), so this file has no globals.
 */
#include "s3_int.h"

#include <errno.h>
#include <string.h>

static bool code_is(const char *code, const char *want)
{
    return code != NULL && strcmp(code, want) == 0;
}

bool s3__retry_should(const s3__attempt *a)
{
    if (a == NULL)
        return false;
    if (a->transport_err != 0) {
        switch (a->transport_err) {
        case -ECONNRESET:
        case -ECONNABORTED:
        case -ECONNREFUSED:
        case -ETIMEDOUT:
        case -EPIPE: /* the body ended before Content-Length: a truncated answer */
        case -EAGAIN:
        case -ENOTCONN:
        case -ENETDOWN:
        case -ENETUNREACH:
        case -EHOSTUNREACH: return true;
        default:
            /* -ECANCELED, -ENOMEM, -EINVAL, TLS certificate failures, ...:
             * the same attempt would fail the same way. */
            return false;
        }
    }
    int s = a->http_status;
    /* Throttling and transient server-side codes, whatever the status says
     * (S3 may answer 200 with <Error><Code>InternalError</Code> to a
     * CompleteMultipartUpload, and 400 RequestTimeout to a slow upload). */
    if (code_is(a->s3_code, "SlowDown") || code_is(a->s3_code, "InternalError") ||
        code_is(a->s3_code, "ServiceUnavailable") || code_is(a->s3_code, "RequestTimeout") ||
        code_is(a->s3_code, "Throttling") || code_is(a->s3_code, "ThrottlingException") ||
        code_is(a->s3_code, "RequestLimitExceeded") ||
        code_is(a->s3_code, "ConditionalRequestConflict"))
        return true;
    if (s == 408 || s == 429)
        return true;
    if (s >= 500 && s <= 599)
        return s != 501; /* 501 NotImplemented will not change on retry */
    return false;
}

/* xorshift64* (Vigna): tiny, fast, good enough for spreading sleeps. */
static uint64_t next_rand(uint64_t *s)
{
    uint64_t x = *s;
    if (x == 0)
        x = 0x9E3779B97F4A7C15ull; /* xorshift never leaves 0 */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

int s3__retry_delay_ms(int attempt, int base_ms, int cap_ms, uint64_t *rng)
{
    if (base_ms <= 0 || cap_ms <= 0 || rng == NULL)
        return 0;
    if (attempt < 1)
        attempt = 1;
    /* min(cap, base * 2^(attempt-1)) without overflowing. */
    int64_t bound = base_ms;
    for (int i = 1; i < attempt && bound < cap_ms; i++)
        bound *= 2;
    if (bound > cap_ms)
        bound = cap_ms;
    return (int)((next_rand(rng) >> 11) % (uint64_t)(bound + 1));
}
