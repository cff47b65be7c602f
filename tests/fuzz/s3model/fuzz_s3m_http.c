/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target for the S3 model's HTTP framing (bench/s3model/s3m_http.c):
 * request heads, response heads, and chunked bodies fed whole and in pieces.
 * Besides memory errors (ASan/UBSan), it checks the parsers' contracts: a head
 * length never exceeds the input, the request target lies inside the input,
 * and a chunked scan gives the same boundary however the bytes are split.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "s3m_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Always on, unlike assert (the fuzz build is RelWithDebInfo, with NDEBUG). */
#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if (!(x))                                                                                  \
            abort();                                                                               \
    } while (0)

/* Scans buf in pieces of the given sizes; returns the body end or -1. */
static ssize_t scan_split(const char *buf, size_t len, const uint8_t *cuts, size_t ncuts)
{
    s3m_chunked c;
    s3m_chunked_init(&c);
    size_t pos = 0, k = 0;
    int done = 0;
    while (pos < len && !done) {
        size_t piece = ncuts > 0 ? (size_t)cuts[k++ % ncuts] % 17 + 1 : len - pos;
        if (piece > len - pos)
            piece = len - pos;
        ssize_t got = s3m_chunked_scan(&c, buf + pos, piece, &done);
        if (got < 0)
            return -1;
        CHECK((size_t)got <= piece);
        CHECK(done || (size_t)got == piece);
        pos += (size_t)got;
    }
    return done ? (ssize_t)pos : -2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    s3m_req req;
    int rc = s3m_parse_request(buf, size, &req);
    CHECK(rc <= (int)size);
    if (rc > 0) {
        CHECK(req.target >= buf && req.target + req.target_len <= buf + rc);
        CHECK(req.path_len <= req.target_len);
        CHECK(req.method[0] != '\0');
        if (req.body == S3M_BODY_CHUNKED) {
            const char *body = buf + rc;
            size_t blen = size - (size_t)rc;
            ssize_t whole = scan_split(body, blen, NULL, 0);
            ssize_t split = scan_split(body, blen, data, size < 32 ? size : 32);
            CHECK(whole == split);
        }
    }
    s3m_resp resp;
    const char *method = size > 0 && (data[0] & 1) ? "HEAD" : "GET";
    rc = s3m_parse_response(buf, size, method, &resp);
    CHECK(rc <= (int)size);
    if (rc > 0) {
        CHECK(resp.status >= 100 && resp.status <= 999);
        if (strcmp(method, "HEAD") == 0)
            CHECK(resp.body == S3M_BODY_NONE);
    }
    /* The whole input as a chunked body, whole and split. */
    ssize_t whole = scan_split(buf, size, NULL, 0);
    ssize_t split = scan_split(buf, size, data, size < 16 ? size : 16);
    CHECK(whole == split);
    return 0;
}
