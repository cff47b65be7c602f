/* SPDX-License-Identifier: Apache-2.0
 *
 * s3a_checksum.c: the upload checksums of s3a_checksum.h. CRC-32 is zlib's;
 * CRC-32C uses the SSE4.2 crc32 instruction when the CPU has it (8 bytes per
 * instruction) and a byte table otherwise; CRC-64/NVME is sliced by 8 over
 * tables built once. The hashes are OpenSSL's EVP digests.
 */
#include "s3a_checksum.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>
#include <zlib.h>

/* ---- tables ------------------------------------------------------------------ */

#define CRC32C_POLY    0x82F63B78u           /* reflected Castagnoli */
#define CRC64NVME_POLY 0x9A6C9329AC4BC9B5ull /* reflected 0xAD93D23594C93659 */

static uint32_t crc32c_table[256];
static uint64_t crc64_table[8][256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void build_tables(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crc32c_table[i] = c;
        uint64_t d = i;
        for (int k = 0; k < 8; k++)
            d = d & 1 ? (d >> 1) ^ CRC64NVME_POLY : d >> 1;
        crc64_table[0][i] = d;
    }
    for (int t = 1; t < 8; t++)
        for (int i = 0; i < 256; i++)
            crc64_table[t][i] =
                (crc64_table[t - 1][i] >> 8) ^ crc64_table[0][crc64_table[t - 1][i] & 0xff];
}

/* ---- CRC-32C ------------------------------------------------------------------ */

static uint32_t crc32c_sw(uint32_t crc, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        crc = (crc >> 8) ^ crc32c_table[(crc ^ p[i]) & 0xff];
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const unsigned char *p,
                                                            size_t n)
{
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--)
        c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32;
}

static bool have_sse42(void)
{
    static _Atomic int cached = -1;
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("sse4.2") ? 1 : 0;
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v == 1;
}
#endif

static uint32_t crc32c_update(uint32_t crc, const unsigned char *p, size_t n)
{
#if defined(__x86_64__)
    if (have_sse42())
        return crc32c_hw(crc, p, n);
#endif
    return crc32c_sw(crc, p, n);
}

/* ---- CRC-64/NVME ------------------------------------------------------------------ */

static uint64_t crc64_update(uint64_t crc, const unsigned char *p, size_t n)
{
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
        w = __builtin_bswap64(w);
#endif
        crc ^= w;
        crc = crc64_table[7][crc & 0xff] ^ crc64_table[6][(crc >> 8) & 0xff] ^
              crc64_table[5][(crc >> 16) & 0xff] ^ crc64_table[4][(crc >> 24) & 0xff] ^
              crc64_table[3][(crc >> 32) & 0xff] ^ crc64_table[2][(crc >> 40) & 0xff] ^
              crc64_table[1][(crc >> 48) & 0xff] ^ crc64_table[0][crc >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = (crc >> 8) ^ crc64_table[0][(crc ^ *p++) & 0xff];
    return crc;
}

/* ---- the object ------------------------------------------------------------------ */

static const EVP_MD *md_of(s3a_ck_alg alg)
{
    switch (alg) {
    case S3A_CK_SHA1: return EVP_sha1();
    case S3A_CK_SHA256: return EVP_sha256();
    case S3A_CK_MD5: return EVP_md5();
    default: return NULL;
    }
}

int s3a_checksum_init(s3a_checksum *c, s3a_ck_alg alg)
{
    memset(c, 0, sizeof *c);
    if (alg <= S3A_CK_NONE || alg > S3A_CK_MD5)
        return -EINVAL;
    pthread_once(&tables_once, build_tables);
    c->alg = alg;
    switch (alg) {
    case S3A_CK_CRC32: c->crc = crc32_z(0, Z_NULL, 0); break;
    case S3A_CK_CRC32C: c->crc = 0xFFFFFFFFu; break;
    case S3A_CK_CRC64NVME: c->crc = ~0ull; break;
    default: {
        EVP_MD_CTX *m = EVP_MD_CTX_new();
        if (m == NULL || EVP_DigestInit_ex(m, md_of(alg), NULL) != 1) {
            EVP_MD_CTX_free(m);
            c->alg = S3A_CK_NONE;
            return -ENOMEM;
        }
        c->md = m;
    }
    }
    return 0;
}

void s3a_checksum_update(s3a_checksum *c, const void *data, size_t len)
{
    if (len == 0)
        return;
    switch (c->alg) {
    case S3A_CK_CRC32: c->crc = crc32_z((uLong)c->crc, data, len); break;
    case S3A_CK_CRC32C: c->crc = crc32c_update((uint32_t)c->crc, data, len); break;
    case S3A_CK_CRC64NVME: c->crc = crc64_update(c->crc, data, len); break;
    case S3A_CK_NONE: break;
    default: EVP_DigestUpdate(c->md, data, len); break;
    }
}

static void put_be(unsigned char *out, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
}

size_t s3a_checksum_final(s3a_checksum *c, unsigned char out[S3A_CK_DIGEST_MAX])
{
    unsigned int n = 0;
    switch (c->alg) {
    case S3A_CK_CRC32: put_be(out, c->crc & 0xFFFFFFFFu, 4); return 4;
    case S3A_CK_CRC32C: put_be(out, ~c->crc & 0xFFFFFFFFu, 4); return 4;
    case S3A_CK_CRC64NVME: put_be(out, ~c->crc, 8); return 8;
    case S3A_CK_NONE: return 0;
    default:
        if (EVP_DigestFinal_ex(c->md, out, &n) != 1)
            return 0;
        return n;
    }
}

void s3a_checksum_deinit(s3a_checksum *c)
{
    if (c->md)
        EVP_MD_CTX_free(c->md);
    memset(c, 0, sizeof *c);
}

/* ---- names ------------------------------------------------------------------ */

static const struct {
    s3a_ck_alg alg;
    const char *header, *label;
    size_t size;
} names[] = {
    {S3A_CK_CRC32, "x-amz-checksum-crc32", "CRC32", 4},
    {S3A_CK_CRC32C, "x-amz-checksum-crc32c", "CRC32C", 4},
    {S3A_CK_CRC64NVME, "x-amz-checksum-crc64nvme", "CRC64NVME", 8},
    {S3A_CK_SHA1, "x-amz-checksum-sha1", "SHA1", 20},
    {S3A_CK_SHA256, "x-amz-checksum-sha256", "SHA256", 32},
    {S3A_CK_MD5, "content-md5", "MD5", 16},
};

s3a_ck_alg s3a_checksum_by_header(const char *name)
{
    for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(name, names[i].header) == 0)
            return names[i].alg;
    return S3A_CK_NONE;
}

s3a_ck_alg s3a_checksum_by_label(const char *label)
{
    for (size_t i = 0; label && i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(label, names[i].label) == 0)
            return names[i].alg;
    return S3A_CK_NONE;
}

const char *s3a_checksum_header(s3a_ck_alg alg)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].alg == alg)
            return names[i].header;
    return NULL;
}

const char *s3a_checksum_label(s3a_ck_alg alg)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].alg == alg)
            return names[i].label;
    return NULL;
}

size_t s3a_checksum_size(s3a_ck_alg alg)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].alg == alg)
            return names[i].size;
    return 0;
}

/* ---- base64 ------------------------------------------------------------------ */

void s3a_b64_encode(const unsigned char *raw, size_t n, char *out)
{
    EVP_EncodeBlock((unsigned char *)out, raw, (int)n);
}

int s3a_checksum_verify(s3a_ck_alg alg, const unsigned char *digest, const char *b64,
                        s3a_error *err)
{
    size_t want = s3a_checksum_size(alg);
    size_t n = b64 ? strlen(b64) : 0;
    unsigned char raw[64];
    bool ok = want > 0 && n == 4 * ((want + 2) / 3);
    for (size_t i = 0; ok && i < n; i++) {
        char ch = b64[i];
        ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
             ch == '+' || ch == '/' || (ch == '=' && i >= n - 2);
    }
    int got = ok ? EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)n) : -1;
    /* EVP_DecodeBlock counts padding as zero bytes */
    if (got < (int)want || (got > (int)want && got - (int)want > 2)) {
        if (alg == S3A_CK_MD5)
            return s3a_error_set(err, 400, "InvalidDigest",
                                 "The Content-MD5 you specified is not valid.");
        return s3a_error_set(err, 400, "InvalidRequest",
                             "Value for %s header is invalid: it must be base64 of %zu bytes",
                             s3a_checksum_header(alg), want);
    }
    if (memcmp(raw, digest, want) != 0) {
        int rc;
        if (alg == S3A_CK_MD5)
            rc = s3a_error_set(err, 400, "BadDigest",
                               "The Content-MD5 you specified did not match what we received.");
        else
            rc = s3a_error_set(err, 400, "BadDigest",
                               "The %s you specified did not match the calculated checksum.",
                               s3a_checksum_label(alg));
        char calc[S3A_CK_B64_MAX];
        s3a_b64_encode(digest, want, calc);
        s3a_error_extra(err, "ExpectedDigest", b64, n);
        s3a_error_extra(err, "CalculatedDigest", calc, strlen(calc));
        return rc;
    }
    return 0;
}

int s3a_payload_sha256_verify(const unsigned char digest[32], const char *hex, s3a_error *err)
{
    char got[65];
    for (int i = 0; i < 32; i++)
        snprintf(got + 2 * i, 3, "%02x", digest[i]);
    if (hex == NULL || strcmp(got, hex) != 0)
        return s3a_error_set(err, 400, "XAmzContentSHA256Mismatch",
                             "The provided 'x-amz-content-sha256' header does not match what "
                             "was computed.");
    return 0;
}
