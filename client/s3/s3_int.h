/* SPDX-License-Identifier: Apache-2.0
 *
 * s3_int.h: internals shared by the files of the S3 module (client/s3/s3_*.c).
 * Not installed, not for other modules. Everything declared here is pure and
 * reentrant (no globals, no I/O) unless a comment says otherwise, so each piece
 * is unit-tested on its own: SigV4 signing and URI encoding (s3_sigv4.h), the XML answers,
 * the retry policy, and the sentences errors are reported with.
 */
#ifndef RINGCACHE_S3_INT_H
#define RINGCACHE_S3_INT_H

#include "s3.h"
#include "s3_sigv4.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- XML answers (expat) ------------------------------------------------ */
/* Each parser returns 0, or -EPROTO with a sentence in err for malformed or
 * unexpected XML (-ENOMEM when memory runs out); never crashes on any input
 * (fuzzed). Input is hostile: a DOCTYPE is refused (no entities), nesting is
 * capped at 32, leading white space is skipped (S3 sends some ahead of a
 * CompleteMultipartUpload answer), element names match by local name. err may
 * be NULL. */

/* ListObjectsV2Result -> page (all fields malloc'd; free with s3__list_page_free).
 * Each <Contents> needs a non-empty <Key> (at most 1024 bytes) and a <Size>;
 * ETags are normalised; LastModified that cannot be read is 0; with
 * <EncodingType>url keys and prefixes are decoded; at most 10000 objects and
 * 10000 prefixes; IsTruncated true without NextContinuationToken is -EPROTO
 * (it would loop). On error the page is empty (nothing to free). */
int s3__xml_parse_list(const char *xml, size_t len, s3_list_page *page, char *err, size_t errlen);
void s3__list_page_free(s3_list_page *page);

/* <Error><Code>..</Code><Message>..</Message></Error>. Returns 0 when it is an
 * Error document (code/message filled, possibly empty, cut to their caps),
 * -ENOENT when the document is well-formed but not an Error, -EPROTO when
 * malformed. code/message are "" on any error; either may be NULL. */
int s3__xml_parse_error(const char *xml, size_t len, char *code, size_t code_cap, char *message,
                        size_t message_cap);

/* InitiateMultipartUploadResult -> UploadId (malloc'd into *upload_id, NULL on
 * error; an <Error> document or a missing/empty UploadId is -EPROTO). */
int s3__xml_parse_mpu_initiate(const char *xml, size_t len, char **upload_id, char *err,
                               size_t errlen);

/* CompleteMultipartUploadResult -> normalised ETag. S3 may answer 200 with an
 * <Error> body here: that returns -EIO with "Code: Message" in err (call
 * s3__xml_parse_error on the same body for the two apart, e.g. to retry an
 * InternalError). etag is "" on any error. */
int s3__xml_parse_mpu_complete(const char *xml, size_t len, char etag[S3_ETAG_MAX], char *err,
                               size_t errlen);

/* <CompleteMultipartUpload> body for parts 1..n with their ETags (normalised,
 * then quoted in the body as S3 expects, XML-escaped). malloc'd; NULL when
 * n_parts is outside 1..10000, an ETag is NULL or too long, or on ENOMEM. */
char *s3__xml_build_mpu_complete(const char *const *part_etags, int n_parts);

/* ---- Retry policy ------------------------------------------------------- */

/* What happened on one attempt: the HTTP status (0 when no response) and the
 * transport error as -errno (0 when the exchange completed). */
typedef struct s3__attempt {
    int http_status;
    int transport_err;   /* -ECONNRESET, -ETIMEDOUT, -ECONNREFUSED, ... */
    const char *s3_code; /* "SlowDown", or NULL */
} s3__attempt;

/* true when the attempt may be retried: 5xx but 501, 503 SlowDown, 429, 408,
 * the S3 codes SlowDown / InternalError / ServiceUnavailable / RequestTimeout /
 * Throttling / ConditionalRequestConflict (409) whatever the status (200 + <Error> on CompleteMultipartUpload,
 * 400 RequestTimeout), and transport errors -ECONNRESET, -ECONNABORTED,
 * -ECONNREFUSED, -ETIMEDOUT, -EPIPE (report a truncated body, libcurl's
 * CURLE_PARTIAL_FILE, as -EPIPE), -EAGAIN, -ENOTCONN, -ENETDOWN, -ENETUNREACH,
 * -EHOSTUNREACH; never another 4xx, -ECANCELED, -ENOMEM or -EPROTO. When
 * transport_err is set it decides, whatever http_status says. */
bool s3__retry_should(const s3__attempt *a);

/* Full-jitter backoff before attempt number `attempt` (1 = first retry):
 * uniform in [0, min(cap_ms, base_ms * 2^(attempt-1))]. `rng` is the caller's
 * state (xorshift64*; any seed, 0 included), advanced. 0 when base_ms or
 * cap_ms <= 0 or rng is NULL. */
int s3__retry_delay_ms(int attempt, int base_ms, int cap_ms, uint64_t *rng);

/* ---- Error sentences ---------------------------------------------------- */

/* Fill `e` for a failed request: code from the status or transport error
 * (404 -> -ENOENT "no such key or bucket", 403 -> -EACCES "access denied" with a
 * hint about credentials or the signature, 412 -> -ESTALE "the object changed",
 * 408 and transport timeouts -> -ETIMEDOUT, refused -> -ECONNREFUSED, reset /
 * -EPIPE -> -ECONNRESET, -ECANCELED, -EPROTO kept; 400 ExpiredToken /
 * AuthorizationHeaderMalformed -> -EACCES; other statuses and transport errors
 * -> -EIO), and a message naming the operation, s3://bucket/key, the cause and
 * a fix. A 2xx with no transport error and no s3_code is success: code 0,
 * empty message; a 2xx WITH an s3_code (an <Error> body on a 200) is -EIO.
 * transport_err, when non-zero, decides over http_status. transport_msg is
 * libcurl's text (strerror when NULL). e->attempts is READ, not written: set it
 * first, and "after N attempts" is said when it is > 1. endpoint may be NULL or
 * "" (AWS); any user:password@ in it is left out. Never puts credentials in the
 * message; network text is flattened to one line; fits S3_MSG_MAX. */
void s3__error_fill(s3_error *e, const char *op, const char *bucket, const char *key,
                    int http_status, int transport_err, const char *transport_msg,
                    const char *s3_code, const char *s3_message, const char *endpoint);

#endif /* RINGCACHE_S3_INT_H */
