/* SPDX-License-Identifier: Apache-2.0
 *
 * test_s3a_checksum.c: the upload checksums (cached/s3api/s3a_checksum.h):
 * each algorithm's check value over "123456789", the values the SDKs send
 * for "hello world" (observed from awscli and the JS SDK), AWS's CRC-32C of
 * the streaming example's 66560 bytes, the same digest however the input is
 * split, and the verdicts on what a client sends (BadDigest, InvalidDigest,
 * InvalidRequest).
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

#include "s3a_checksum.h"

static void digest_b64(s3a_ck_alg alg, const void *d, size_t n, size_t piece,
                       char out[S3A_CK_B64_MAX])
{
    s3a_checksum c;
    assert_int_equal(s3a_checksum_init(&c, alg), 0);
    const unsigned char *p = d;
    for (size_t off = 0; off < n; off += piece)
        s3a_checksum_update(&c, p + off, n - off < piece ? n - off : piece);
    unsigned char dig[S3A_CK_DIGEST_MAX];
    size_t dl = s3a_checksum_final(&c, dig);
    assert_int_equal(dl, s3a_checksum_size(alg));
    s3a_b64_encode(dig, dl, out);
    s3a_checksum_deinit(&c);
}

static uint64_t digest_u64(s3a_ck_alg alg, const char *s)
{
    s3a_checksum c;
    assert_int_equal(s3a_checksum_init(&c, alg), 0);
    s3a_checksum_update(&c, s, strlen(s));
    unsigned char dig[S3A_CK_DIGEST_MAX];
    size_t n = s3a_checksum_final(&c, dig);
    s3a_checksum_deinit(&c);
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | dig[i];
    return v;
}

static void test_check_values(void **state)
{
    (void)state;
    assert_int_equal(digest_u64(S3A_CK_CRC32, "123456789"), 0xCBF43926u);
    assert_int_equal(digest_u64(S3A_CK_CRC32C, "123456789"), 0xE3069283u);
    assert_true(digest_u64(S3A_CK_CRC64NVME, "123456789") == 0xAE8B14860A799888ull);
    char b[S3A_CK_B64_MAX];
    digest_b64(S3A_CK_CRC32, "hello world", 11, 11, b);
    assert_string_equal(b, "DUoRhQ==");
    digest_b64(S3A_CK_SHA256, "abc", 3, 3, b);
    assert_string_equal(b, "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
    digest_b64(S3A_CK_SHA1, "abc", 3, 3, b);
    assert_string_equal(b, "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=");
    digest_b64(S3A_CK_MD5, "", 0, 1, b);
    assert_string_equal(b, "1B2M2Y8AsgTpgAmY7PhCfg==");
    /* AWS's signed-trailer example: 66560 bytes of 'a' */
    char *a = malloc(66560);
    memset(a, 'a', 66560);
    digest_b64(S3A_CK_CRC32C, a, 66560, 66560, b);
    assert_string_equal(b, "sOO8/Q==");
    free(a);
    assert_int_equal(s3a_checksum_init(&(s3a_checksum){0}, S3A_CK_NONE), -EINVAL);
}

static void test_split_invariant(void **state)
{
    (void)state;
    size_t n = 100003;
    unsigned char *d = malloc(n);
    for (size_t i = 0; i < n; i++)
        d[i] = (unsigned char)(i * 7 + (i >> 9));
    s3a_ck_alg algs[] = {S3A_CK_CRC32, S3A_CK_CRC32C, S3A_CK_CRC64NVME,
                         S3A_CK_SHA1,  S3A_CK_SHA256, S3A_CK_MD5};
    size_t pieces[] = {1, 3, 7, 8, 9, 4096, 65536};
    for (size_t a = 0; a < sizeof algs / sizeof algs[0]; a++) {
        char whole[S3A_CK_B64_MAX], part[S3A_CK_B64_MAX];
        digest_b64(algs[a], d, n, n, whole);
        for (size_t p = 0; p < sizeof pieces / sizeof pieces[0]; p++) {
            digest_b64(algs[a], d, n, pieces[p], part);
            assert_string_equal(part, whole);
        }
    }
    free(d);
}

static void test_names(void **state)
{
    (void)state;
    assert_int_equal(s3a_checksum_by_header("X-Amz-Checksum-CRC32C"), S3A_CK_CRC32C);
    assert_int_equal(s3a_checksum_by_header("x-amz-checksum-crc64nvme"), S3A_CK_CRC64NVME);
    assert_int_equal(s3a_checksum_by_header("x-amz-checksum-md5"), S3A_CK_NONE);
    assert_int_equal(s3a_checksum_by_label("sha256"), S3A_CK_SHA256);
    assert_string_equal(s3a_checksum_header(S3A_CK_SHA1), "x-amz-checksum-sha1");
    assert_string_equal(s3a_checksum_label(S3A_CK_CRC32), "CRC32");
}

static void test_verify(void **state)
{
    (void)state;
    unsigned char dig[4] = {0x0d, 0x4a, 0x11, 0x85}; /* crc32("hello world") */
    s3a_error e = {0};
    assert_int_equal(s3a_checksum_verify(S3A_CK_CRC32, dig, "DUoRhQ==", &e), 0);
    assert_int_equal(s3a_checksum_verify(S3A_CK_CRC32, dig, "DUoRhA==", &e), -EINVAL);
    assert_string_equal(e.code, "BadDigest");
    assert_string_equal(e.message,
                        "The CRC32 you specified did not match the calculated checksum.");
    assert_int_equal(s3a_checksum_verify(S3A_CK_CRC32, dig, "DUoRhQ", &e), -EINVAL);
    assert_string_equal(e.code, "InvalidRequest");
    assert_int_equal(s3a_checksum_verify(S3A_CK_CRC32, dig, "DU*RhQ==", &e), -EINVAL);
    assert_string_equal(e.code, "InvalidRequest");
    unsigned char md5[16] = {0};
    assert_int_equal(s3a_checksum_verify(S3A_CK_MD5, md5, "not base64", &e), -EINVAL);
    assert_string_equal(e.code, "InvalidDigest");
    assert_int_equal(s3a_checksum_verify(S3A_CK_MD5, md5, "1B2M2Y8AsgTpgAmY7PhCfg==", &e), -EINVAL);
    assert_string_equal(e.code, "BadDigest");
    assert_string_equal(e.message, "The Content-MD5 you specified did not match what we received.");
    s3a_error_deinit(&e);
}

/* x-amz-content-sha256 against the body's digest: SHA-256 of "" */
static void test_payload_sha256(void **state)
{
    (void)state;
    static const char empty[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    s3a_checksum c;
    assert_int_equal(s3a_checksum_init(&c, S3A_CK_SHA256), 0);
    unsigned char d[S3A_CK_DIGEST_MAX];
    assert_int_equal(s3a_checksum_final(&c, d), 32);
    s3a_checksum_deinit(&c);
    s3a_error e = {0};
    assert_int_equal(s3a_payload_sha256_verify(d, empty, &e), 0);
    assert_null(e.code);
    char wrong[65];
    memcpy(wrong, empty, sizeof(wrong));
    wrong[63] = '4';
    assert_int_equal(s3a_payload_sha256_verify(d, wrong, &e), -EINVAL);
    assert_int_equal(e.status, 400);
    assert_string_equal(e.code, "XAmzContentSHA256Mismatch");
    assert_int_equal(s3a_payload_sha256_verify(d, NULL, &e), -EINVAL);
    s3a_error_deinit(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_values),   cmocka_unit_test(test_split_invariant),
        cmocka_unit_test(test_names),          cmocka_unit_test(test_verify),
        cmocka_unit_test(test_payload_sha256),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
