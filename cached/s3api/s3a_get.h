/* SPDX-License-Identifier: Apache-2.0
 *
 * s3a_get.h: what a GetObject or HeadObject answers before any byte is read,
 * as S3 decides it: the conditional headers against the object's ETag and
 * Last-Modified (304, 412), then the Range header against its size (206,
 * 416, or the whole object).
 *
 * Conditionals, in the order S3 documents (RFC 7232 section 6):
 *   1. If-Match present and false: 412. If true, step 2 is skipped.
 *   2. If-Unmodified-Since and the object is newer: 412.
 *   3. If-None-Match present and matching: 304. If present and not
 *      matching, step 4 is skipped.
 *   4. If-Modified-Since and the object is not newer: 304.
 * ETags compare without quotes and W/ (a comma-separated list; "*" matches
 * any object); dates in whole seconds; a date that does not parse is ignored.
 *
 * Range: "bytes=a-b" (b clamped to the last byte), "bytes=a-", "bytes=-n"
 * (the last n bytes; more than the size is the whole object). A first byte
 * at or past the end, a last byte before the first, or "bytes=-0" is 416. A
 * header that is not one range of bytes (several ranges, another unit,
 * garbage) is ignored, as S3 does: the whole object, 200.
 *
 * Thread-safety: pure. Fuzzed (tests/fuzz/s3api/fuzz_s3a_get.c).
 */
#ifndef RINGCACHE_S3A_GET_H
#define RINGCACHE_S3A_GET_H

#include "s3a.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The object's side of the comparison. */
typedef struct s3a_get_object {
    const char *etag;      /* bare or quoted */
    int64_t last_modified; /* unix seconds */
    uint64_t size;
} s3a_get_object;

/* The request's side: header values, NULL when absent. */
typedef struct s3a_get_headers {
    const char *if_match, *if_none_match, *if_modified_since, *if_unmodified_since;
    const char *range;
} s3a_get_headers;

typedef struct s3a_get_plan {
    int status;            /* 200, 206, 304, 412 or 416 */
    uint64_t first, last;  /* 200/206: the bytes to send, inclusive
                                          (a 0-byte object: first 0, last 0, count 0) */
    uint64_t count;        /* bytes to send */
    const char *condition; /* 412: the header that failed */
} s3a_get_plan;

/* Decides the answer. Never fails: every input gives a status. */
void s3a_get_decide(const s3a_get_object *obj, const s3a_get_headers *h, s3a_get_plan *out);

/* true when the ETag list `list` (a header value) names etag (or is "*"). */
bool s3a_etag_list_matches(const char *list, const char *etag);

/* "Sun, 06 Nov 1994 08:49:37 GMT" for unix seconds into out[30]. */
void s3a_http_date(int64_t unix_s, char out[30]);

#ifdef __cplusplus
}
#endif
#endif /* RINGCACHE_S3A_GET_H */
