/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target for the aws-chunked decoder (cached/s3api/s3a_chunked.h).
 * Input: byte 0 picks the form (signed with AWS's example key and seed,
 * signed with a CRC-32C trailer, unsigned with a CRC-32 trailer, unsigned
 * without) and whether x-amz-decoded-content-length is given; byte 1 the
 * piece size; the rest is the body. Besides memory errors it checks the
 * decoder's contract: the verdict, the error code and the decoded bytes are
 * the same fed whole and fed in pieces, and an accepted body decodes to no
 * more bytes than it holds.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3_sigv4.h"
#include "s3a_chunked.h"

#include "../fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct out {
    unsigned char *p;
    size_t len, cap;
} out;

static void collect(void *arg, const void *d, size_t n)
{
    out *o = arg;
    if (o->len + n > o->cap) {
        o->cap = (o->len + n) * 2;
        o->p = realloc(o->p, o->cap);
        CHECK(o->p != NULL);
    }
    memcpy(o->p + o->len, d, n);
    o->len += n;
}

static int run(const s3a_chunked_config *cfg, const uint8_t *body, size_t len, size_t piece, out *o,
               const char **code)
{
    s3a_error e = {0};
    s3a_chunked *d;
    int rc = s3a_chunked_create(&d, cfg, &e);
    CHECK(rc == 0);
    for (size_t off = 0; off < len && rc == 0;) {
        size_t n = piece == 0 || len - off < piece ? len - off : piece;
        rc = s3a_chunked_feed(d, body + off, n, collect, o, &e);
        off += n;
    }
    if (rc == 0)
        rc = s3a_chunked_finish(d, &e);
    if (rc == 0) {
        CHECK(s3a_chunked_decoded(d) == o->len);
        char b64[S3A_CK_B64_MAX];
        (void)s3a_chunked_checksum(d, b64);
    }
    *code = e.code;
    s3a_error_deinit(&e);
    s3a_chunked_destroy(&d);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    static s3a_auth a;
    if (a.kind == S3A_AUTH_ANONYMOUS) {
        a.kind = S3A_AUTH_SIGV4;
        snprintf(a.amz_date, sizeof a.amz_date, "20130524T000000Z");
        snprintf(a.scope, sizeof a.scope, "20130524/us-east-1/s3/aws4_request");
        CHECK(s3__sigv4_signing_key("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "20130524",
                                    "us-east-1", "s3", a.signing_key) == 0);
    }
    static const char *const seeds[2] = {
        "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
        "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e"};
    s3a_chunked_config cfg = {.auth = &a, .decoded_length = -1, .max_chunk_bytes = 1 << 16};
    switch (data[0] & 3) {
    case 0: cfg.payload = S3A_PAYLOAD_STREAMING_SIGNED; break;
    case 1:
        cfg.payload = S3A_PAYLOAD_STREAMING_SIGNED_TRAILER;
        cfg.trailer = "x-amz-checksum-crc32c";
        break;
    case 2:
        cfg.payload = S3A_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
        cfg.trailer = "x-amz-checksum-crc32";
        break;
    default: cfg.payload = S3A_PAYLOAD_STREAMING_UNSIGNED_TRAILER; break;
    }
    snprintf(a.seed_signature, sizeof a.seed_signature, "%s", seeds[(data[0] & 3) == 1]);
    if (data[0] & 4)
        cfg.decoded_length = (int64_t)(data[0] >> 3) * 997;
    size_t piece = data[1];
    const uint8_t *body = data + 2;
    size_t len = size - 2;

    out whole = {0}, parts = {0};
    const char *c1 = NULL, *c2 = NULL;
    int r1 = run(&cfg, body, len, 0, &whole, &c1);
    int r2 = run(&cfg, body, len, piece, &parts, &c2);
    CHECK(r1 == r2);
    CHECK((c1 == NULL) == (c2 == NULL) && (c1 == NULL || strcmp(c1, c2) == 0));
    if (r1 == 0) {
        CHECK(whole.len == parts.len &&
              (whole.len == 0 || memcmp(whole.p, parts.p, whole.len) == 0));
        CHECK(whole.len <= len);
    }
    free(whole.p);
    free(parts.p);
    return 0;
}
