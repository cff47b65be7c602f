/* SPDX-License-Identifier: Apache-2.0
 *
 * s3a_auth.h: who signed an S3 request, checked as S3 checks it:
 *
 *  - SigV4 in the Authorization header (every SDK, awscli, boto3): canonical
 *    request, string to sign and signature computed by the S3 client's own
 *    code (client/s3/s3_sigv4.h) from what the client sent, and compared in
 *    constant time; the clock within max_skew_s (S3: 15 minutes);
 *  - SigV4 in the query (presigned URLs: X-Amz-Expires, at most a week);
 *  - SigV2 in the query (boto3's default generate_presigned_url in
 *    us-east-1: AWSAccessKeyId, Expires, Signature = base64 HMAC-SHA1);
 *  - no authentication at all: anonymous, for the caller to allow or not.
 *
 * The signing key (four HMACs) is cached per (access key, day, region) and
 * re-derived when the secret changes. A request's canonical form follows
 * what awscli, boto3 and the JS SDK send and sign, captured from them:
 * the path is decoded then re-encoded once (S3 does not double-encode), a
 * query parameter without '=' is "name=", repeated headers are joined with
 * ',', the client's SignedHeaders list is used as given (it must be lower
 * case and sorted, as SigV4 says).
 *
 * Thread-safety: a verifier is not thread-safe (its key cache): one per event
 * loop. s3a_verify never blocks (the secret lookup is the caller's and must
 * not either).
 */
#ifndef RINGCACHE_S3A_AUTH_H
#define RINGCACHE_S3A_AUTH_H

#include "s3a.h"

#ifdef __cplusplus
extern "C" {
#endif

#define S3A_ACCESS_KEY_MAX 128
#define S3A_SECRET_MAX     128
#define S3A_SCOPE_MAX      128

/* The secret of an access key id: 0 with secret (NUL-terminated) and
 * *principal (the caller's pointer for this key, e.g. its tenant) filled, or
 * -ENOENT for a key it does not know. */
typedef int (*s3a_secret_fn)(void *arg, const char *access_key, char *secret, size_t cap,
                             void **principal);

typedef struct s3a_auth_config {
    s3a_secret_fn secret; /* required */
    void *secret_arg;
    const char *region; /* the server's region; NULL: "us-east-1" */
    bool strict_region; /* refuse a scope for another region
                                          (AuthorizationHeaderMalformed); off: any
                                          region the client signed for is used */
    int max_skew_s;     /* 0: 900 */
    bool no_sigv2;      /* refuse SigV2 presigned URLs */
} s3a_auth_config;

typedef enum s3a_auth_kind {
    S3A_AUTH_ANONYMOUS,
    S3A_AUTH_SIGV4,
    S3A_AUTH_SIGV4_QUERY,
    S3A_AUTH_SIGV2_QUERY,
} s3a_auth_kind;

/* How the body is protected (x-amz-content-sha256). */
typedef enum s3a_payload {
    S3A_PAYLOAD_UNSIGNED,         /* UNSIGNED-PAYLOAD, presigned, SigV2, anonymous */
    S3A_PAYLOAD_SHA256,           /* payload_sha256: check it against the body */
    S3A_PAYLOAD_STREAMING_SIGNED, /* aws-chunked, chunk signatures (s3a_chunked.h) */
    S3A_PAYLOAD_STREAMING_SIGNED_TRAILER,
    S3A_PAYLOAD_STREAMING_UNSIGNED_TRAILER,
} s3a_payload;

/* What a verified request carries. For the signed streaming payloads it holds
 * what the chunk signatures are checked with; the signing key is a secret's
 * derivative: do not log the struct. */
typedef struct s3a_auth {
    s3a_auth_kind kind;
    char access_key[S3A_ACCESS_KEY_MAX];
    void *principal;
    s3a_payload payload;
    char payload_sha256[65];
    char seed_signature[65];
    char amz_date[17];
    char scope[S3A_SCOPE_MAX]; /* 20130524/us-east-1/s3/aws4_request */
    unsigned char signing_key[32];
} s3a_auth;

/* The parts of a request a signature covers. */
typedef struct s3a_request {
    const char *method;
    const char *path;          /* raw, as sent: "/bkt/a%20b" */
    const char *query;         /* raw, after '?'; "" or NULL when none */
    const s3a_header *headers; /* in arrival order */
    size_t n_headers;
    const char *vhost_bucket; /* the bucket named by the Host (virtual-
                                          hosted style), else NULL: SigV2 signs it */
} s3a_request;

typedef struct s3a_verifier s3a_verifier;

/* 0, -EINVAL (no secret function), -ENOMEM. */
int s3a_verifier_create(s3a_verifier **out, const s3a_auth_config *cfg);
void s3a_verifier_destroy(s3a_verifier **v);

/* Verifies req at unix time now. 0: *auth says who (S3A_AUTH_ANONYMOUS when
 * the request carries no credentials at all). < 0: refused, with *err
 * filled as S3 would answer: 400 AuthorizationHeaderMalformed /
 * AuthorizationQueryParametersError / InvalidRequest / InvalidArgument, 403
 * InvalidAccessKeyId / SignatureDoesNotMatch (with StringToSign and
 * CanonicalRequest, as S3 gives them) / RequestTimeTooSkewed / AccessDenied
 * (expired or not yet valid presigned URLs), 501 NotImplemented (SigV4a).
 * The return value is s3a_error_set's. err must be zeroed or deinit'ed. */
int s3a_verify(s3a_verifier *v, const s3a_request *req, int64_t now, s3a_auth *auth,
               s3a_error *err);

#ifdef __cplusplus
}
#endif
#endif /* RINGCACHE_S3A_AUTH_H */
