/* SPDX-License-Identifier: Apache-2.0
 *
 * s3a.h: what the pieces of the cache node's S3 API share (cached/s3api/):
 * a growable buffer the XML writers fill, the S3 error an answer is made of
 * (status, code, sentence, the extra elements S3 puts in <Error>), a view of
 * a request's head that does not depend on the HTTP server, and percent
 * decoding.
 *
 * The pieces (s3a_auth.h: SigV4 / SigV2 verification; s3a_chunked.h:
 * aws-chunked bodies; s3a_checksum.h: the checksums S3 clients send;
 * s3a_route.h: method + host + path + query -> operation; s3a_xml.h: the XML
 * answers and the request bodies) know nothing of the node, its store or the
 * network: they are pure functions of their input, fuzzed, and unit-tested
 * on their own. The node's request path composes them.
 *
 * Thread-safety: everything in this header is reentrant; objects (a buffer,
 * an error) belong to their caller.
 */
#ifndef RINGCACHE_S3A_H
#define RINGCACHE_S3A_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* S3's limits on names: a bucket name's characters, a key's UTF-8 bytes. */
#define S3A_BUCKET_MAX 63
#define S3A_KEY_MAX    1024

/* ---- a growable buffer ------------------------------------------------------ */

/* Zero-initialise ({0}); a failed allocation sticks (oom) and later adds do
 * nothing, so a writer checks once at the end. p is NUL-terminated when
 * len > 0. Free with s3a_buf_free. */
typedef struct s3a_buf {
    char *p;
    size_t len, cap;
    bool oom;
} s3a_buf;

void s3a_buf_add(s3a_buf *b, const void *data, size_t len);
void s3a_buf_adds(s3a_buf *b, const char *s);
__attribute__((format(printf, 2, 3))) void s3a_buf_printf(s3a_buf *b, const char *fmt, ...);
void s3a_buf_free(s3a_buf *b);

/* ---- an S3 error ------------------------------------------------------------ */

#define S3A_ERR_EXTRA_MAX 6

/* What an S3 error answer says: the HTTP status, S3's code ("NoSuchKey"), a
 * sentence (S3's own text where clients know it, ours naming the thing and
 * the fix otherwise), and extra elements (<Key>, <BucketName>,
 * <StringToSign>, ...), their values copied. Initialise with {0}; release
 * with s3a_error_deinit. */
typedef struct s3a_error {
    int status;
    const char *code; /* static string; NULL: no error */
    char message[512];
    int n_extra;
    struct {
        const char *name; /* static string */
        char *value;      /* malloc'd */
    } extra[S3A_ERR_EXTRA_MAX];
} s3a_error;

/* Sets status, code and the sentence (replacing an earlier error and its
 * extras). Returns -EACCES for 401/403, -ENOENT for 404, -EINVAL for other
 * 4xx, -ENOTSUP for 501, -EIO otherwise: what the functions that fill an
 * error return. e may be NULL (then only the return value). */
__attribute__((format(printf, 4, 5))) int s3a_error_set(s3a_error *e, int status, const char *code,
                                                        const char *fmt, ...);
/* Adds an extra element (value[0..len) copied; silently dropped past
 * S3A_ERR_EXTRA_MAX or on ENOMEM). */
void s3a_error_extra(s3a_error *e, const char *name, const char *value, size_t len);
void s3a_error_deinit(s3a_error *e);

/* ---- a request, as the pieces see it -------------------------------------- */

typedef struct s3a_header {
    const char *name; /* any case, as sent */
    const char *value;
} s3a_header;

/* The first header of that name (case-insensitive) or NULL. */
const char *s3a_header_get(const s3a_header *h, size_t n, const char *name);

/* ---- percent decoding ------------------------------------------------------- */

/* Decodes %XX escapes of in[0..len) into out (room for len + 1 bytes;
 * NUL-terminated). '+' stays '+' (S3 paths and queries are not form
 * encoded). Returns the decoded length, or -EINVAL for a bad escape or an
 * escaped NUL (%00), which no S3 name may hold. */
ssize_t s3a_pct_decode(const char *in, size_t len, char *out);
/* The value of a hex digit (either case), or -1. */
int s3a_hex_digit(char c);
/* The same into a malloc'd string; NULL with *rc -EINVAL or -ENOMEM. */
char *s3a_pct_decode_dup(const char *in, size_t len, int *rc);

/* ---- the query string ----------------------------------------------------- */

/* One item of a raw query, split on '&' then the first '=', both sides
 * decoded. has_eq tells "uploads" from "uploads=" (SigV2 signs them apart). */
typedef struct s3a_qparam {
    char *name;
    char *value; /* "" when there was no '=' */
    bool has_eq;
} s3a_qparam;

typedef struct s3a_query {
    s3a_qparam *p;
    size_t n;
} s3a_query;

/* Splits and decodes raw (NULL or "" gives no items; empty items are
 * skipped). 0, -EINVAL for a bad %-escape (nothing to free), -ENOMEM. */
int s3a_query_parse(const char *raw, s3a_query *out);
/* The first item of that name (case-sensitive, as S3), or NULL. */
const s3a_qparam *s3a_query_find(const s3a_query *q, const char *name);
/* Its value, or NULL when absent. */
const char *s3a_query_get(const s3a_query *q, const char *name);
void s3a_query_free(s3a_query *q);

/* ---- times ------------------------------------------------------------------ */

/* "20130524T000000Z" -> unix seconds; -1 when it is not that shape. */
int64_t s3a_parse_amz_date(const char *s);
/* RFC 1123 "Sun, 06 Nov 1994 08:49:37 GMT" -> unix seconds; -1 otherwise. */
int64_t s3a_parse_http_date(const char *s);
/* "2024-01-01T00:00:00.000Z" (XML dates; the fraction optional) -> unix
 * seconds, or -1. */
int64_t s3a_parse_iso8601(const char *s);
/* "2024-01-01T00:00:00.000Z" for unix milliseconds into out[25]. */
void s3a_iso8601_ms(int64_t unix_ms, char out[25]);

#ifdef __cplusplus
}
#endif
#endif /* RINGCACHE_S3A_H */
