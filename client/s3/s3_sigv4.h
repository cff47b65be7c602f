/* SPDX-License-Identifier: Apache-2.0
 *
 * s3_sigv4.h: AWS Signature Version 4, the one implementation of each of its
 * steps (URI encoding, canonical query, canonical request, string to sign,
 * signing key, signature), shared by the S3 client, which signs, and the
 * cache node's S3 API (cached/s3api/), which verifies what clients signed by
 * computing the same thing and comparing. Not installed.
 *
 * Everything here is pure and reentrant: no globals, no I/O, nothing but
 * malloc and OpenSSL; any thread may call any function at any time.
 */
#ifndef RINGCACHE_S3_SIGV4_H
#define RINGCACHE_S3_SIGV4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- URI encoding (RFC 3986, as SigV4 wants it) ------------------------- */

/* Percent-encode everything but A-Z a-z 0-9 - . _ ~ (and '/' when keep_slash),
 * upper-case hex. Returns a malloc'd string (caller frees) or NULL on ENOMEM. */
char *s3__uri_encode(const char *in, size_t len, bool keep_slash);

/* ---- Signature V4 ------------------------------------------------------- */

typedef struct s3__kv {
    const char *name;
    const char *value;
} s3__kv;

typedef struct s3__sign_input {
    const char *method;        /* "GET" */
    const char *canonical_uri; /* already URI-encoded path, "/bucket/key" */
    const s3__kv *query;       /* raw (not encoded) names and values, any order */
    size_t n_query;
    const s3__kv *headers; /* every header to sign, any order and case;
                                    must include host and x-amz-date */
    size_t n_headers;
    const char *payload_hash; /* hex SHA-256 or "UNSIGNED-PAYLOAD" */
    const char *amz_date;     /* "20130524T000000Z" */
    const char *region;
    const char *service; /* "s3" */
    const char *access_key;
    const char *secret_key;
} s3__sign_input;

typedef struct s3__sign_output {
    char *canonical_request; /* malloc'd, for tests and debugging */
    char *string_to_sign;    /* malloc'd */
    char *signed_headers;    /* malloc'd, "host;x-amz-date" */
    char signature[65];      /* hex */
    char *authorization;     /* malloc'd value of the Authorization header */
} s3__sign_output;

/* Sign a request. Header names are lower-cased and values trimmed (sequential
 * spaces folded) as SigV4 says; a name given twice becomes one line with the
 * values joined by ',' in the order given. Query parameters are encoded and
 * sorted (a NULL value is the empty value). Returns 0, -EINVAL (a NULL field,
 * amz_date not 16 characters) or -ENOMEM; on error *out holds nothing to free.
 * Free a success with s3__sign_output_free. */
int s3__sigv4_sign(const s3__sign_input *in, s3__sign_output *out);
void s3__sign_output_free(s3__sign_output *out);

/* Build the canonical query string (encoded, sorted by name then value) from
 * raw pairs; malloc'd, "" when n == 0. Used for the URL too, so what is signed
 * is exactly what is sent. */
char *s3__canonical_query(const s3__kv *query, size_t n);

/* Hex SHA-256 of a buffer into out[65]. */
void s3__sha256_hex(const void *data, size_t len, char out[65]);

/* "20130524T000000Z" for a unix time (UTC). out must hold 17 bytes. */
void s3__amz_date(int64_t unix_seconds, char out[17]);

/* The signing key: HMAC chain over "AWS4" + secret, date (yyyymmdd), region,
 * service, "aws4_request". 0, -EINVAL (a NULL argument) or -ENOMEM. A
 * verifier caches it per (key id, day, region). */
int s3__sigv4_signing_key(const char *secret, const char *date8, const char *region,
                          const char *service, unsigned char key[32]);

/* s3__sigv4_sign with a signing key already derived (from
 * s3__sigv4_signing_key for in->amz_date's day, in->region and in->service):
 * in->secret_key is not used and may be NULL. Same results and errors. */
int s3__sigv4_sign_with_key(const s3__sign_input *in, const unsigned char key[32],
                            s3__sign_output *out);

/* Lower-case hex of HMAC-SHA256(key, msg[0..len)) into out[65]: the
 * signature step, for strings to sign built elsewhere (aws-chunked chunk and
 * trailer signatures). 0 or -ENOMEM. */
int s3__sigv4_hmac_hex(const unsigned char key[32], const char *msg, size_t len, char out[65]);

#endif /* RINGCACHE_S3_SIGV4_H */
