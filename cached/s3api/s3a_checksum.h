/* SPDX-License-Identifier: Apache-2.0
 *
 * s3a_checksum.h: the checksums S3 clients send with an upload, computed
 * incrementally as the body streams: x-amz-checksum-crc32 (zlib's CRC-32),
 * -crc32c (Castagnoli; SSE4.2 where the CPU has it), -crc64nvme (the
 * reflected CRC-64/NVME, what current SDKs default to for full-object
 * checksums), -sha1, -sha256 (OpenSSL), and Content-MD5. S3 spells each value
 * as base64 of the digest, big-endian for the CRCs.
 *
 * Check values ("123456789"): CRC-32 0xCBF43926, CRC-32C 0xE3069283,
 * CRC-64/NVME 0xAE8B14860A799888 (tests/unit/s3api/test_s3a_checksum.c).
 *
 * Thread-safety: a checksum object belongs to its caller; the functions are
 * reentrant (the CRC tables are built once, behind pthread_once).
 */
#ifndef RINGCACHE_S3A_CHECKSUM_H
#define RINGCACHE_S3A_CHECKSUM_H

#include "s3a.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum s3a_ck_alg {
    S3A_CK_NONE = 0,
    S3A_CK_CRC32,
    S3A_CK_CRC32C,
    S3A_CK_CRC64NVME,
    S3A_CK_SHA1,
    S3A_CK_SHA256,
    S3A_CK_MD5, /* Content-MD5 and ETags; not an x-amz-checksum */
} s3a_ck_alg;

#define S3A_CK_DIGEST_MAX 32
#define S3A_CK_B64_MAX    48 /* base64 of 32 bytes and a NUL */

typedef struct s3a_checksum {
    s3a_ck_alg alg;
    uint64_t crc;
    void *md; /* OpenSSL's EVP_MD_CTX for the hashes */
} s3a_checksum;

/* 0, -EINVAL (S3A_CK_NONE or out of range), -ENOMEM. */
int s3a_checksum_init(s3a_checksum *c, s3a_ck_alg alg);
void s3a_checksum_update(s3a_checksum *c, const void *data, size_t len);
/* The digest (big-endian for CRCs) into out; returns its length. Once: the
 * object is spent after (deinit it). */
size_t s3a_checksum_final(s3a_checksum *c, unsigned char out[S3A_CK_DIGEST_MAX]);
void s3a_checksum_deinit(s3a_checksum *c);

/* Names: the header ("x-amz-checksum-crc32", any case; "content-md5" for
 * MD5) and the SDK's label ("CRC32", as in x-amz-sdk-checksum-algorithm),
 * both ways. Lookups return S3A_CK_NONE for an unknown name. */
s3a_ck_alg s3a_checksum_by_header(const char *name);
s3a_ck_alg s3a_checksum_by_label(const char *label);
const char *s3a_checksum_header(s3a_ck_alg alg);
const char *s3a_checksum_label(s3a_ck_alg alg);
size_t s3a_checksum_size(s3a_ck_alg alg);

/* Standard base64 of raw[0..n) into out (room for 4 * ((n + 2) / 3) + 1). */
void s3a_b64_encode(const unsigned char *raw, size_t n, char *out);

/* Compares the base64 value a client sent with a digest computed here: 0 when
 * equal; -EINVAL when it is not base64 of a digest of that size (400
 * InvalidDigest for Content-MD5, InvalidRequest otherwise); -EINVAL with
 * 400 BadDigest when it differs ("The CRC32 you specified did not match the
 * calculated checksum.", S3's words). */
int s3a_checksum_verify(s3a_ck_alg alg, const unsigned char *digest, const char *b64,
                        s3a_error *err);

/* Compares a body's SHA-256 with the lowercase hex the client signed as
 * x-amz-content-sha256: 0 when equal, else -EINVAL with 400
 * XAmzContentSHA256Mismatch (S3's words). */
int s3a_payload_sha256_verify(const unsigned char digest[32], const char *hex, s3a_error *err);

#ifdef __cplusplus
}
#endif
#endif /* RINGCACHE_S3A_CHECKSUM_H */
