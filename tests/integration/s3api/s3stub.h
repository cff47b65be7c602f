/* SPDX-License-Identifier: Apache-2.0
 *
 * s3stub.h: a small in-memory S3 made of the S3 API's pieces (cached/s3api/)
 * on the HTTP server core (client/http/), for testing those pieces against
 * real clients (awscli, boto3): every request is routed, its signature
 * verified, its body decoded (aws-chunked too) and checked (SHA-256,
 * Content-MD5, x-amz-checksum-*), and answered with the pieces' XML. It is
 * not the node's S3 API (no cache, no S3 behind): objects live in memory.
 *
 * Operations: ListBuckets, HeadBucket, GetBucketLocation, ListObjectsV2,
 * ListObjects, PutObject, GetObject (Range), HeadObject, DeleteObject,
 * DeleteObjects, CopyObject, Create/UploadPart/Complete/Abort multipart.
 * One bucket exists; one access key.
 *
 * Threads: the stub serves from a thread of its own; start and stop from the
 * test's thread; the counters may be read at any time.
 */
#ifndef RINGCACHE_TESTS_S3STUB_H
#define RINGCACHE_TESTS_S3STUB_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct ssl_ctx_st SSL_CTX;
typedef struct s3stub s3stub;

/* What the stub saw, by kind. */
typedef struct s3stub_counts {
    atomic_int requests;
    atomic_int sigv4, sigv4_query, sigv2_query, anonymous;
    atomic_int refused_auth; /* SignatureDoesNotMatch, InvalidAccessKeyId, ... */
    atomic_int payload_sha256_checked;
    atomic_int content_md5_checked;
    atomic_int chunked_unsigned_trailer;
    atomic_int chunked_signed;
    atomic_int trailer_checksum[8]; /* by s3a_ck_alg: verified trailing checksums */
    atomic_int header_checksum[8];  /* by s3a_ck_alg: verified x-amz-checksum-* headers */
    atomic_int continue_sent;       /* bodies read after Expect: 100-continue */
    atomic_int completed_uploads;
    atomic_int bad_digest;
} s3stub_counts;

/* Starts on 127.0.0.1 (a free port) with one bucket and one key pair; tls
 * (borrowed, may be NULL) for HTTPS. 0 or -errno. */
int s3stub_start(s3stub **out, const char *bucket, const char *access_key, const char *secret,
                 SSL_CTX *tls);
void s3stub_stop(s3stub **s);
int s3stub_port(const s3stub *s);
s3stub_counts *s3stub_counts_of(s3stub *s);

#endif
