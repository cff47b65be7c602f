/* SPDX-License-Identifier: Apache-2.0
 *
 * s3a_chunked.h: aws-chunked request bodies, decoded as they stream (after
 * the HTTP layer has undone any Transfer-Encoding: chunked), in the three
 * forms S3 accepts:
 *
 *   STREAMING-AWS4-HMAC-SHA256-PAYLOAD (Java SDK v1, minio-go, rclone):
 *     <hex>;chunk-signature=<64 hex>\r\n<data>\r\n ... 0;chunk-signature=<sig>\r\n\r\n
 *     each signature over "AWS4-HMAC-SHA256-PAYLOAD\n<date>\n<scope>\n<previous
 *     signature>\n<sha256 of "">\n<sha256 of data>", the first "previous" being
 *     the request's own signature (the seed);
 *   STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER: the same chunks, then after
 *     the 0-chunk line trailer lines "x-amz-checksum-crc32c:<b64>\r\n",
 *     "x-amz-trailer-signature:<64 hex>\r\n", "\r\n"; the trailer signature over
 *     "AWS4-HMAC-SHA256-TRAILER\n<date>\n<scope>\n<0-chunk signature>\n<sha256
 *     of the trailer lines as name:value\n>";
 *   STREAMING-UNSIGNED-PAYLOAD-TRAILER (current JS SDK and boto3 over TLS):
 *     <hex>\r\n<data>\r\n ... 0\r\n<trailer lines>\r\n (the JS SDK without a
 *     checksum ends right after "0\r\n": accepted).
 *
 * The trailing checksum named by x-amz-trailer is computed over the decoded
 * bytes and compared (BadDigest); the decoded length is checked against
 * x-amz-decoded-content-length when the client sent one (IncompleteBody).
 * Chunk sizes are not policed (S3 wants 8 KiB but the last; clients such as
 * the JS SDK send whatever their stream yields): a chunk may be up to
 * max_chunk_bytes, a chunk or trailer line up to 4 KiB.
 *
 * Decoded bytes are handed out as they arrive, before their chunk's signature
 * can be checked (holding a 16 MiB chunk to check it first would cost 16
 * MiB per upload). So the body is good only once s3a_chunked_finish returns
 * 0: make nothing visible before (write-through completes the upload only
 * after it). Any bad chunk fails the feed that contains its end.
 *
 * Thread-safety: a decoder belongs to its caller. Fuzzed
 * (tests/fuzz/s3api/fuzz_s3a_chunked.c: same result however the bytes are
 * split).
 */
#ifndef RINGCACHE_S3A_CHUNKED_H
#define RINGCACHE_S3A_CHUNKED_H

#include "s3a.h"
#include "s3a_auth.h"
#include "s3a_checksum.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct s3a_chunked_config {
    s3a_payload payload;    /* one of the three STREAMING kinds */
    const s3a_auth *auth;   /* signing key, seed, date, scope (signed kinds) */
    const char *trailer;    /* the x-amz-trailer header, or NULL */
    int64_t decoded_length; /* x-amz-decoded-content-length, -1: not sent */
    size_t max_chunk_bytes; /* 0: 16 MiB */
} s3a_chunked_config;

typedef struct s3a_chunked s3a_chunked;

/* Decoded bytes; they point into the caller's input: copy what is kept. */
typedef void (*s3a_chunk_data_fn)(void *arg, const void *data, size_t len);

/* 0; or < 0 with err (400 InvalidRequest for a payload kind that is not
 * aws-chunked or an x-amz-trailer naming something other than one
 * x-amz-checksum-*; -ENOMEM). */
int s3a_chunked_create(s3a_chunked **out, const s3a_chunked_config *cfg, s3a_error *err);
void s3a_chunked_destroy(s3a_chunked **d);

/* Feeds the next len encoded bytes (any split). 0, or < 0 with err: 400
 * InvalidRequest (malformed framing, naming the byte offset), 400
 * IncompleteBody (more data than x-amz-decoded-content-length), 403
 * SignatureDoesNotMatch (a chunk or the trailer), 400 BadDigest (the trailing
 * checksum). After an error the decoder refuses everything. */
int s3a_chunked_feed(s3a_chunked *d, const void *data, size_t len, s3a_chunk_data_fn out, void *arg,
                     s3a_error *err);

/* The body has ended: 0 when it was whole and valid; 400 IncompleteBody when
 * it stopped early or was shorter than x-amz-decoded-content-length. */
int s3a_chunked_finish(s3a_chunked *d, s3a_error *err);

/* After a successful finish: the decoded length, and the trailing checksum
 * (algorithm, base64 as sent) for the answer to echo; S3A_CK_NONE without. */
uint64_t s3a_chunked_decoded(const s3a_chunked *d);
s3a_ck_alg s3a_chunked_checksum(const s3a_chunked *d, char b64[S3A_CK_B64_MAX]);

#ifdef __cplusplus
}
#endif
#endif /* RINGCACHE_S3A_CHUNKED_H */
