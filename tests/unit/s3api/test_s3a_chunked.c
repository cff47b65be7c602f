/* SPDX-License-Identifier: Apache-2.0
 *
 * test_s3a_chunked.c: the aws-chunked decoder (cached/s3api/s3a_chunked.h)
 * on AWS's two published streaming examples (signed chunks; signed chunks
 * with a signed CRC-32C trailer), each fed whole, byte by byte and in odd
 * pieces; the unsigned-trailer form the JS SDK sends (with and without a
 * checksum); and every refusal: a tampered chunk, chunk signature or
 * trailer, a wrong checksum, a short or long body against
 * x-amz-decoded-content-length, truncation, bad framing, an unannounced
 * trailer, bytes after the end, an oversized chunk.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "s3_sigv4.h"
#include "s3a_chunked.h"

#define SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

typedef struct sink {
    char *p;
    size_t len;
} sink;

static void collect(void *arg, const void *d, size_t n)
{
    sink *s = arg;
    s->p = realloc(s->p, s->len + n + 1);
    memcpy(s->p + s->len, d, n);
    s->len += n;
}

static s3a_auth aws_auth(const char *seed)
{
    s3a_auth a;
    memset(&a, 0, sizeof a);
    a.kind = S3A_AUTH_SIGV4;
    snprintf(a.seed_signature, sizeof a.seed_signature, "%s", seed);
    snprintf(a.amz_date, sizeof a.amz_date, "20130524T000000Z");
    snprintf(a.scope, sizeof a.scope, "20130524/us-east-1/s3/aws4_request");
    assert_int_equal(s3__sigv4_signing_key(SK, "20130524", "us-east-1", "s3", a.signing_key), 0);
    return a;
}

/* Decodes body in pieces of `piece` bytes (0: whole); returns the first error
 * (feed or finish), the decoded bytes in *out. */
static int decode(const s3a_chunked_config *cfg, const char *body, size_t len, size_t piece,
                  sink *out, s3a_error *e)
{
    s3a_chunked *d;
    int rc = s3a_chunked_create(&d, cfg, e);
    if (rc < 0)
        return rc;
    memset(out, 0, sizeof *out);
    for (size_t off = 0; off < len && rc == 0;) {
        size_t n = piece == 0 || len - off < piece ? len - off : piece;
        rc = s3a_chunked_feed(d, body + off, n, collect, out, e);
        off += n;
    }
    if (rc == 0)
        rc = s3a_chunked_finish(d, e);
    if (rc == 0)
        assert_int_equal(s3a_chunked_decoded(d), out->len);
    s3a_chunked_destroy(&d);
    assert_null(d);
    return rc;
}

static char *aws_body(bool trailer, size_t *len)
{
    char *a = malloc(65536);
    memset(a, 'a', 65536);
    s3a_buf b = {0};
    if (!trailer) {
        s3a_buf_adds(
            &b,
            "10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\n");
        s3a_buf_add(&b, a, 65536);
        s3a_buf_adds(
            &b,
            "\r\n400;chunk-signature=0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n");
        s3a_buf_add(&b, a, 1024);
        s3a_buf_adds(
            &b,
            "\r\n0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n\r\n");
    } else {
        s3a_buf_adds(
            &b,
            "10000;chunk-signature=b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2\r\n");
        s3a_buf_add(&b, a, 65536);
        s3a_buf_adds(
            &b,
            "\r\n400;chunk-signature=1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7\r\n");
        s3a_buf_add(&b, a, 1024);
        s3a_buf_adds(
            &b,
            "\r\n0;chunk-signature=2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992\r\n"
            "x-amz-checksum-crc32c:sOO8/Q==\r\n"
            "x-amz-trailer-signature:d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n\r\n");
    }
    free(a);
    *len = b.len;
    return b.p;
}

static bool all_a(const sink *s, size_t n)
{
    if (s->len != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s->p[i] != 'a')
            return false;
    return true;
}

static void test_aws_signed(void **state)
{
    (void)state;
    size_t len;
    char *body = aws_body(false, &len);
    assert_int_equal(len, 66824); /* the example's Content-Length */
    s3a_auth a = aws_auth("4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
    s3a_chunked_config cfg = {
        .payload = S3A_PAYLOAD_STREAMING_SIGNED, .auth = &a, .decoded_length = 66560};
    s3a_error e = {0};
    size_t pieces[] = {0, 1, 7, 85, 4096, 65537};
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
        sink s;
        assert_int_equal(decode(&cfg, body, len, pieces[i], &s, &e), 0);
        assert_true(all_a(&s, 66560));
        free(s.p);
    }
    /* one byte of data changed: its chunk's signature fails */
    body[100] = 'b';
    sink s;
    assert_int_equal(decode(&cfg, body, len, 0, &s, &e), -EACCES);
    assert_string_equal(e.code, "SignatureDoesNotMatch");
    free(s.p);
    body[100] = 'a';
    /* a seed from another request: the first chunk fails */
    s3a_auth other = aws_auth("0000000000000000000000000000000000000000000000000000000000000000");
    cfg.auth = &other;
    assert_int_equal(decode(&cfg, body, len, 0, &s, &e), -EACCES);
    free(s.p);
    cfg.auth = &a;
    /* the final chunk cut off: incomplete */
    assert_int_equal(decode(&cfg, body, len - 90, 0, &s, &e), -EINVAL);
    assert_string_equal(e.code, "IncompleteBody");
    free(s.p);
    /* the right bytes, but a declared length that disagrees */
    cfg.decoded_length = 66561;
    assert_int_equal(decode(&cfg, body, len, 0, &s, &e), -EINVAL);
    assert_string_equal(e.code, "IncompleteBody");
    free(s.p);
    cfg.decoded_length = 1000;
    assert_int_equal(decode(&cfg, body, len, 0, &s, &e), -EINVAL);
    assert_string_equal(e.code, "IncompleteBody");
    free(s.p);
    s3a_error_deinit(&e);
    free(body);
}

static void test_aws_signed_trailer(void **state)
{
    (void)state;
    size_t len;
    char *body = aws_body(true, &len);
    assert_int_equal(len, 66946);
    s3a_auth a = aws_auth("106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e");
    s3a_chunked_config cfg = {.payload = S3A_PAYLOAD_STREAMING_SIGNED_TRAILER,
                              .auth = &a,
                              .trailer = "x-amz-checksum-crc32c",
                              .decoded_length = 66560};
    s3a_error e = {0};
    size_t pieces[] = {0, 1, 13, 4096};
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
        sink s;
        assert_int_equal(decode(&cfg, body, len, pieces[i], &s, &e), 0);
        assert_true(all_a(&s, 66560));
        free(s.p);
    }
    s3a_chunked *d;
    assert_int_equal(s3a_chunked_create(&d, &cfg, &e), 0);
    assert_int_equal(s3a_chunked_feed(d, body, len, NULL, NULL, &e), 0);
    assert_int_equal(s3a_chunked_finish(d, &e), 0);
    char b64[S3A_CK_B64_MAX];
    assert_int_equal(s3a_chunked_checksum(d, b64), S3A_CK_CRC32C);
    assert_string_equal(b64, "sOO8/Q==");
    s3a_chunked_destroy(&d);

    /* the checksum changed: the trailer signature no longer holds */
    char *p = strstr(body + 66000, "sOO8/Q==");
    p[0] = 'A';
    sink s;
    assert_int_equal(decode(&cfg, body, len, 0, &s, &e), -EACCES);
    assert_string_equal(e.code, "SignatureDoesNotMatch");
    free(s.p);
    p[0] = 's';
    /* the trailer signature line removed */
    char *t = strstr(body + 66000, "x-amz-trailer-signature");
    size_t cut = (size_t)(t - body);
    char *b2 = malloc(cut + 2);
    memcpy(b2, body, cut);
    memcpy(b2 + cut, "\r\n", 2);
    assert_int_equal(decode(&cfg, b2, cut + 2, 0, &s, &e), -EACCES);
    free(s.p);
    free(b2);
    s3a_error_deinit(&e);
    free(body);
}

static void test_unsigned_trailer(void **state)
{
    (void)state;
    s3a_chunked_config cfg = {.payload = S3A_PAYLOAD_STREAMING_UNSIGNED_TRAILER,
                              .trailer = "x-amz-checksum-crc32",
                              .decoded_length = 11};
    s3a_error e = {0};
    sink s;
    const char *good = "6\r\nhello \r\n5\r\nworld\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n";
    for (size_t piece = 0; piece < 9; piece++) {
        assert_int_equal(decode(&cfg, good, strlen(good), piece, &s, &e), 0);
        assert_int_equal(s.len, 11);
        assert_memory_equal(s.p, "hello world", 11);
        free(s.p);
    }
    /* hex in upper case too; no declared length (a stream of unknown size) */
    cfg.decoded_length = -1;
    const char *upper = "B\r\nhello world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n";
    assert_int_equal(decode(&cfg, upper, strlen(upper), 0, &s, &e), 0);
    free(s.p);
    const char *wrong = "B\r\nhello world\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n";
    assert_int_equal(decode(&cfg, wrong, strlen(wrong), 0, &s, &e), -EINVAL);
    assert_string_equal(e.code, "BadDigest");
    free(s.p);
    const char *missing = "B\r\nhello world\r\n0\r\n\r\n";
    assert_int_equal(decode(&cfg, missing, strlen(missing), 0, &s, &e), -EINVAL);
    assert_non_null(strstr(e.message, "ended without it"));
    free(s.p);
    const char *other = "B\r\nhello world\r\n0\r\nx-amz-meta-x:1\r\n\r\n";
    assert_int_equal(decode(&cfg, other, strlen(other), 0, &s, &e), -EINVAL);
    assert_non_null(strstr(e.message, "not announced"));
    free(s.p);
    /* the JS SDK without a checksum: nothing after "0\r\n" */
    s3a_chunked_config js = {.payload = S3A_PAYLOAD_STREAMING_UNSIGNED_TRAILER,
                             .decoded_length = 11};
    const char *bare = "B\r\nhello world\r\n0\r\n";
    assert_int_equal(decode(&js, bare, strlen(bare), 0, &s, &e), 0);
    free(s.p);
    /* ...but one that stops in the middle is incomplete */
    assert_int_equal(decode(&js, bare, 10, 0, &s, &e), -EINVAL);
    assert_string_equal(e.code, "IncompleteBody");
    free(s.p);
    s3a_error_deinit(&e);
}

static void test_framing_refused(void **state)
{
    (void)state;
    s3a_chunked_config cfg = {.payload = S3A_PAYLOAD_STREAMING_UNSIGNED_TRAILER,
                              .decoded_length = -1,
                              .max_chunk_bytes = 1024};
    s3a_error e = {0};
    sink s;
    const struct {
        const char *body;
        const char *msg;
    } bad[] = {
        {"zz\r\n", "start with its size"},
        {"5\r\nhello\r\n0\r\n\r\nmore", "after the end"},
        {"5\r\nhelloXX0\r\n\r\n", "followed by CRLF"},
        {"5\nhello\r\n", "end in CRLF"},
        {"5;chunk-signature=00\r\nhello\r\n", "only the size"},
        {"1000000000000000\r\n", "15 hex digits"},
        {"401\r\n", "larger than this server accepts"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(decode(&cfg, bad[i].body, strlen(bad[i].body), 0, &s, &e), -EINVAL);
        assert_non_null(strstr(e.message, bad[i].msg));
        free(s.p);
    }
    /* a line that never ends */
    char *long_line = malloc(5000);
    memset(long_line, '1', 5000);
    assert_int_equal(decode(&cfg, long_line, 5000, 0, &s, &e), -EINVAL);
    free(s.p);
    free(long_line);
    /* signed chunks need a signed request; a trailer must be a checksum */
    s3a_chunked *d;
    s3a_chunked_config sc = {.payload = S3A_PAYLOAD_STREAMING_SIGNED};
    assert_int_equal(s3a_chunked_create(&d, &sc, &e), -EINVAL);
    s3a_chunked_config tc = {.payload = S3A_PAYLOAD_STREAMING_UNSIGNED_TRAILER,
                             .trailer = "x-amz-meta-foo"};
    assert_int_equal(s3a_chunked_create(&d, &tc, &e), -EINVAL);
    s3a_chunked_config pc = {.payload = S3A_PAYLOAD_SHA256};
    assert_int_equal(s3a_chunked_create(&d, &pc, &e), -EINVAL);
    assert_string_equal(e.code, "InvalidArgument");
    s3a_error_deinit(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aws_signed),
        cmocka_unit_test(test_aws_signed_trailer),
        cmocka_unit_test(test_unsigned_trailer),
        cmocka_unit_test(test_framing_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
