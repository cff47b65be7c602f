/* SPDX-License-Identifier: Apache-2.0
 *
 * Just enough HTTP/1.1 for the S3 model proxy to find message boundaries: a
 * request head parser, a response head parser and a chunked-body scanner. They
 * never allocate, never read outside the given bytes, and keep no hidden state
 * (the chunked scanner's state is the caller's struct), so they are pure
 * functions over bytes from the network and the fuzz target calls them directly.
 *
 * Thread-safety: all functions are reentrant; distinct structs may be used from
 * distinct threads.
 */
#ifndef RINGCACHE_S3M_HTTP_H
#define RINGCACHE_S3M_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Largest request or response head (request line + headers) accepted. */
#define S3M_MAX_HEAD (64 * 1024)
/* Most header lines in one head. */
#define S3M_MAX_HEADERS 128
/* Longest method token kept. */
#define S3M_MAX_METHOD 15

typedef enum s3m_body {
    S3M_BODY_NONE = 0,    /* no body */
    S3M_BODY_LENGTH,      /* Content-Length bytes */
    S3M_BODY_CHUNKED,     /* Transfer-Encoding: chunked */
    S3M_BODY_UNTIL_CLOSE, /* responses only: body ends when the server closes */
} s3m_body;

typedef struct s3m_req {
    char method[S3M_MAX_METHOD + 1];
    const char *target; /* request-target, points into the parsed buffer */
    size_t target_len;
    size_t path_len;         /* target up to '?' (the object path) */
    int http_minor;          /* HTTP/1.<minor>, 0 or 1 */
    s3m_body body;           /* NONE or LENGTH or CHUNKED */
    uint64_t content_length; /* when body == S3M_BODY_LENGTH */
    int conn_close;          /* Connection: close, or HTTP/1.0 without keep-alive */
    int expect_continue;     /* Expect: 100-continue */
} s3m_req;

typedef struct s3m_resp {
    int status; /* 100..999 */
    int http_minor;
    s3m_body body;
    uint64_t content_length;
    int conn_close;
} s3m_resp;

/* Parses one request head at buf[0, len). Returns the length of the head
 * (> 0, including the blank line) once complete, 0 if more bytes are needed,
 * -EBADMSG if the bytes are not a valid request head (bad request line, bad
 * header line, bad or conflicting Content-Length, Transfer-Encoding other than
 * chunked, both Content-Length and Transfer-Encoding, folded headers), or
 * -EMSGSIZE if the head exceeds S3M_MAX_HEAD or S3M_MAX_HEADERS. Only origin-form
 * targets ("/...") are accepted. out->target points into buf. */
int s3m_parse_request(const char *buf, size_t len, s3m_req *out);

/* Parses one response head, for a request of method req_method (a HEAD answer
 * has no body whatever its headers say). Same returns as s3m_parse_request.
 * 1xx, 204 and 304 answers have no body; an answer without framing headers is
 * S3M_BODY_UNTIL_CLOSE. */
int s3m_parse_response(const char *buf, size_t len, const char *req_method, s3m_resp *out);

/* State of a chunked-body scanner; zero it (or call s3m_chunked_init) per body. */
typedef struct s3m_chunked {
    int state;
    int digits;
    uint64_t left; /* data bytes left in the current chunk */
    size_t line;   /* bytes seen on the current extension/trailer line */
} s3m_chunked;

void s3m_chunked_init(s3m_chunked *c);

/* Scans data[0, len) as the continuation of a chunked body. Returns how many of
 * these bytes belong to the body (<= len; fewer only when the body ends inside
 * data, and then *done is set to 1), or -EBADMSG if the framing is invalid
 * (bad size line, size over 2^62, missing CRLF after data, extension or trailer
 * line over S3M_MAX_HEAD). Once *done, further calls return 0. */
ssize_t s3m_chunked_scan(s3m_chunked *c, const char *data, size_t len, int *done);

#endif /* RINGCACHE_S3M_HTTP_H */
