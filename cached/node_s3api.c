/* SPDX-License-Identifier: Apache-2.0
 *
 * node_s3api.c: the S3 API's front end (node_s3api.h): one HTTP server per
 * worker loop on --s3-api-port (SO_REUSEPORT, as the protocol port), TLS
 * with the node's certificate. One request's head goes
 *
 *   headers -> s3a_route_parse -> s3a_verify (tenants' S3 API keys; without
 *   tenants the node serves anyone who reaches it, as the protocol port does)
 *   -> the tenant (a public one for anonymous requests) -> the operation
 *
 * and its answer, whatever it is, is counted by operation and status. The
 * body reader undoes aws-chunked framing and checks what the client signed
 * or summed (x-amz-content-sha256, Content-MD5, x-amz-checksum-*) as the
 * bytes stream, so an operation hears "ok" only for a body S3 would take.
 */
#include "node_s3api.h"
#include "errf.h"

#include <errno.h>
#include <event2/buffer.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- small things --------------------------------------------------------- */

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int64_t ns3_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *ns3_header(const ns3_req *r, const char *name)
{
    return s3a_header_get(r->hdr, r->nh, name);
}

/* ---- metrics ----------------------------------------------------------------- */

static const int status_codes[] = {200, 204, 206, 304, 400, 403, 404, 405,
                                   409, 411, 412, 416, 500, 501, 503};
#define N_CODES (sizeof(status_codes) / sizeof(status_codes[0]) + 1) /* + "other" */
#define N_OPS   ((int)S3A_OP__COUNT)
static const char *const source_names[NS3_SRC__COUNT] = {"ram", "ssd", "peer", "s3"};
enum { CK_SHA256, CK_MD5, CK_HEADER, CK_TRAILER, CK__COUNT };
static const char *const check_names[CK__COUNT] = {"payload_sha256", "content_md5",
                                                   "checksum_header", "checksum_trailer"};

/* Layout of the S3 API's metrics from n->s3api_metric_base: requests by
 * (op, code), then one latency histogram per op, then bytes by source. */
static int metric_requests(const node *n, int op, int status)
{
    size_t c = N_CODES - 1;
    for (size_t i = 0; i + 1 < N_CODES; i++)
        if (status_codes[i] == status)
            c = i;
    return n->s3api_metric_base + op * (int)N_CODES + (int)c;
}

static int metric_latency(const node *n, int op)
{
    return n->s3api_metric_base + N_OPS * (int)N_CODES + op;
}

void ns3_count_bytes(node_worker *w, int source, uint64_t bytes)
{
    node *n = w->n;
    met_add(n->metrics, w->idx, n->s3api_metric_base + N_OPS * (int)N_CODES + N_OPS + source,
            bytes);
}

static void count_check(node_worker *w, int check)
{
    node *n = w->n;
    met_add(n->metrics, w->idx,
            n->s3api_metric_base + N_OPS * (int)N_CODES + N_OPS + NS3_SRC__COUNT + check, 1);
}

/* After the checks: the read-ahead's bytes, the bytes it holds, their peak. */
static int metric_readahead(const node *n)
{
    return n->s3api_metric_base + N_OPS * (int)N_CODES + N_OPS + NS3_SRC__COUNT + CK__COUNT;
}

void ns3_count_readahead(node_worker *w, uint64_t bytes)
{
    met_add(w->n->metrics, w->idx, metric_readahead(w->n), bytes);
}

static int64_t gauge_ra_inflight(void *arg)
{
    return ns3_ra_inflight(arg);
}

static int64_t gauge_ra_peak(void *arg)
{
    return ns3_ra_peak(arg);
}

static int metrics_setup(node *n)
{
    size_t total = (size_t)N_OPS * N_CODES + (size_t)N_OPS + NS3_SRC__COUNT + CK__COUNT + 3;
    met_def *defs = calloc(total, sizeof(*defs));
    char(*labels)[64] = calloc(total, sizeof(*labels));
    if (!defs || !labels) {
        free(defs);
        free(labels);
        return -ENOMEM;
    }
    size_t k = 0;
    for (int op = 0; op < N_OPS; op++)
        for (size_t c = 0; c < N_CODES; c++, k++) {
            if (c + 1 < N_CODES)
                snprintf(labels[k], sizeof(labels[k]), "op=\"%s\",code=\"%d\"",
                         s3a_op_name((s3a_op)op), status_codes[c]);
            else
                snprintf(labels[k], sizeof(labels[k]), "op=\"%s\",code=\"other\"",
                         s3a_op_name((s3a_op)op));
            defs[k] = (met_def){"ringcached_s3api_requests_total",
                                "S3 API requests answered, by operation and HTTP status",
                                MET_COUNTER, labels[k]};
        }
    for (int op = 0; op < N_OPS; op++, k++) {
        snprintf(labels[k], sizeof(labels[k]), "op=\"%s\"", s3a_op_name((s3a_op)op));
        defs[k] = (met_def){"ringcached_s3api_request_seconds",
                            "S3 API latency from the request's head to the answer's end, by "
                            "operation",
                            MET_HISTOGRAM, labels[k]};
    }
    for (int s = 0; s < NS3_SRC__COUNT; s++, k++) {
        snprintf(labels[k], sizeof(labels[k]), "source=\"%s\"", source_names[s]);
        defs[k] = (met_def){"ringcached_s3api_bytes_served_total",
                            "object bytes the S3 API sent, by where they came from (this node's "
                            "RAM tier or SSD, a peer that owns the block, S3)",
                            MET_COUNTER, labels[k]};
    }
    for (int c = 0; c < CK__COUNT; c++, k++) {
        snprintf(labels[k], sizeof(labels[k]), "check=\"%s\"", check_names[c]);
        defs[k] = (met_def){"ringcached_s3api_body_checks_total",
                            "request bodies whose digest matched what the client sent "
                            "(x-amz-content-sha256, Content-MD5, an x-amz-checksum-* header, "
                            "an aws-chunked trailer)",
                            MET_COUNTER, labels[k]};
    }
    defs[k++] = (met_def){"ringcached_s3api_readahead_bytes_total",
                          "object bytes GetObject asked for ahead of the block it was sending "
                          "(--s3-api-readahead)",
                          MET_COUNTER, NULL};
    defs[k++] = (met_def){"ringcached_s3api_readahead_inflight_bytes",
                          "read-ahead bytes GetObject requests hold now, fetching or waiting to "
                          "be sent (at most --s3-api-readahead-max)",
                          MET_GAUGE, NULL};
    defs[k++] =
        (met_def){"ringcached_s3api_readahead_peak_bytes",
                  "the most read-ahead bytes GetObject requests held at once", MET_GAUGE, NULL};
    int rc = met_register(n->metrics, defs, total);
    free(defs);
    free(labels);
    if (rc < 0)
        return rc;
    n->s3api_metric_base = rc;
    met_set_fn(n->metrics, metric_readahead(n) + 1, gauge_ra_inflight, n);
    met_set_fn(n->metrics, metric_readahead(n) + 2, gauge_ra_peak, n);
    return 0;
}

/* ---- references -------------------------------------------------------------- */

void ns3_ref(ns3_req *r)
{
    r->refs++;
}

void ns3_unref(ns3_req *r)
{
    if (--r->refs > 0)
        return;
    if (r->op_free)
        r->op_free(r);
    s3a_route_deinit(&r->route);
    s3a_chunked_destroy(&r->dec);
    if (r->sha)
        EVP_MD_CTX_free(r->sha);
    s3a_checksum_deinit(&r->md5);
    s3a_checksum_deinit(&r->ck);
    s3a_error_deinit(&r->err);
    OPENSSL_cleanse(r->auth.signing_key, sizeof(r->auth.signing_key));
    free(r);
}

/* ---- answers ------------------------------------------------------------------- */

void ns3_common_headers(ns3_req *r)
{
    httpd_resp_add_header(r->h, "x-amz-request-id", r->id);
    httpd_resp_add_header(r->h, "x-amz-id-2", r->w->n->conf.node_id);
    if (atomic_load(&r->w->n->stopping))
        httpd_resp_add_header(r->h, "Connection", "close");
}

static bool can_answer(ns3_req *r)
{
    return r->h && !r->answered;
}

void ns3_send_xml(ns3_req *r, int status, s3a_buf *b)
{
    if (!can_answer(r)) {
        s3a_buf_free(b);
        return;
    }
    if (b->oom) {
        s3a_buf_free(b);
        ns3_fail(r, 500, "InternalError",
                 "We encountered an internal error (out of memory). "
                 "Please try again.");
        return;
    }
    r->answered = true;
    r->status = status;
    httpd_resp_set_status(r->h, status);
    ns3_common_headers(r);
    httpd_resp_add_header(r->h, "Content-Type", "application/xml");
    httpd_resp_start(r->h, (int64_t)b->len);
    httpd_resp_write(r->h, b->p, b->len);
    httpd_resp_end(r->h);
    s3a_buf_free(b);
}

void ns3_send_empty(ns3_req *r, int status)
{
    if (!can_answer(r))
        return;
    r->answered = true;
    r->status = status;
    httpd_resp_set_status(r->h, status);
    ns3_common_headers(r);
    httpd_resp_end(r->h);
}

void ns3_send_error(ns3_req *r, const s3a_error *e)
{
    if (!can_answer(r))
        return;
    int status = e->status ? e->status : 500;
    const char *code = e->code ? e->code : "InternalError";
    if (strcmp(httpd_req_method(r->h), "HEAD") == 0) {
        r->answered = true;
        r->status = status;
        httpd_resp_set_status(r->h, status);
        ns3_common_headers(r);
        httpd_resp_add_header(r->h, "x-amz-error-code", code);
        httpd_resp_end(r->h);
        return;
    }
    s3a_buf b = {0};
    bool obj = r->routed && r->route.key;
    s3a_xml_error(&b, e, r->routed && r->route.bucket[0] ? r->route.bucket : NULL,
                  obj ? r->route.key : NULL, httpd_req_path(r->h), r->id, r->w->n->conf.node_id);
    ns3_send_xml(r, status, &b);
}

void ns3_fail(ns3_req *r, int status, const char *code, const char *fmt, ...)
{
    s3a_error e = {0};
    char msg[sizeof(e.message)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    s3a_error_set(&e, status, code, "%s", msg);
    ns3_send_error(r, &e);
    s3a_error_deinit(&e);
}

void ns3_fail_rcp(ns3_req *r, int rcp_code, const char *sentence)
{
    bool obj = r->routed && r->route.key;
    switch (rcp_code) {
    case RCP_E_FORBIDDEN: ns3_fail(r, 403, "AccessDenied", "Access Denied (%s)", sentence); break;
    case RCP_E_NOT_FOUND:
        if (obj)
            ns3_fail(r, 404, "NoSuchKey", "The specified key does not exist.");
        else
            ns3_fail(r, 404, "NoSuchBucket", "The specified bucket does not exist");
        break;
    case RCP_E_VERSION_CHANGED:
        ns3_fail(r, 412, "PreconditionFailed",
                 "At least one of the pre-conditions you specified did not hold");
        break;
    case RCP_E_BUSY:
    case RCP_E_TIMEOUT:
        ns3_fail(r, 503, "SlowDown", "Please reduce your request rate. (%s)", sentence);
        break;
    case RCP_E_BAD_REQUEST: ns3_fail(r, 400, "InvalidRequest", "%s", sentence); break;
    case RCP_E_TOO_LARGE:
        ns3_fail(r, 400, "EntityTooLarge",
                 "Your proposed upload exceeds the maximum allowed object size. (%s)", sentence);
        break;
    case RCP_E_S3:
    case RCP_E_UPSTREAM: ns3_fail(r, 503, "ServiceUnavailable", "%s", sentence); break;
    default:
        ns3_fail(r, 500, "InternalError",
                 "We encountered an internal error (%s). Please try "
                 "again.",
                 sentence);
        break;
    }
}

void ns3_fail_s3(ns3_req *r, const s3_error *e)
{
    if (e->http_status >= 400 && e->s3_code[0]) {
        /* S3 answered: its status and code, our sentence */
        ns3_fail(r, e->http_status, e->s3_code, "%s", e->message);
    } else if (e->code == -ENOENT) {
        ns3_fail_rcp(r, RCP_E_NOT_FOUND, e->message);
    } else if (e->code == -EACCES) {
        ns3_fail(r, 403, "AccessDenied", "Access Denied (%s)", e->message);
    } else if (e->code == -EEXIST || e->code == -ESTALE) {
        ns3_fail_rcp(r, RCP_E_VERSION_CHANGED, e->message);
    } else {
        char m[640];
        node__upstream_message(r->w->n, e->message, m, sizeof(m));
        ns3_fail(r, 503, "ServiceUnavailable", "%s", m);
    }
}

/* The tenancy check of ns3_allowed, without an answer: NULL when allowed,
 * else why not (into why). */
static const char *refusal(const ns3_req *r, const char *bucket, const char *key, bool prefix,
                           char *why, size_t cap)
{
    node *n = r->w->n;
    if (!n->tenants)
        return NULL;
    const ten_tenant *t = r->who.tenant;
    char kwhy[300];
    if (key && key[0] && s3_key_check(key, strlen(key), kwhy, sizeof(kwhy)) < 0) {
        snprintf(why, cap, "s3://%s/%s: %s", bucket, key, kwhy);
        return why;
    }
    bool ok = t && (key ? ten_allows(t, bucket, strlen(bucket), key, strlen(key))
                        : ten_allows_bucket(t, bucket, strlen(bucket)));
    if (ok)
        return NULL;
    snprintf(why, cap, "tenant %s may not reach s3://%s/%s%s: outside its buckets/prefixes",
             t ? ten_name(t) : "(anonymous)", bucket, key ? key : "",
             prefix ? " (a listing's prefix)" : "");
    return why;
}

bool ns3_may(ns3_req *r, const char *bucket, const char *key)
{
    char why[600];
    if (!refusal(r, bucket, key, false, why, sizeof(why)))
        return true;
    node__count(r->w, NM_FORBIDDEN, 1);
    return false;
}

bool ns3_allowed(ns3_req *r, const char *bucket, const char *key, bool prefix)
{
    char why[600];
    if (!refusal(r, bucket, key, prefix, why, sizeof(why)))
        return true;
    node__count(r->w, NM_FORBIDDEN, 1);
    ns3_fail(r, 403, "AccessDenied", "Access Denied (%s)", why);
    return false;
}

const char *ns3_xml_element(const char *p, const char *end, const char *tag, size_t *len)
{
    char open[40], close[40];
    snprintf(open, sizeof(open), "<%s>", tag);
    snprintf(close, sizeof(close), "</%s>", tag);
    size_t ol = strlen(open), cl = strlen(close);
    const char *a = p;
    for (;;) {
        if (a >= end || (size_t)(end - a) < ol)
            return NULL;
        a = memchr(a, '<', (size_t)(end - a));
        if (!a || (size_t)(end - a) < ol)
            return NULL;
        if (memcmp(a, open, ol) == 0)
            break;
        a++;
    }
    a += ol;
    for (const char *b = a; (size_t)(end - b) >= cl; b++) {
        if (memcmp(b, close, cl) == 0) {
            *len = (size_t)(b - a);
            return a;
        }
    }
    return NULL;
}

/* Its own answers' body (503 over the connection cap, 400, 408, ...) as S3's
 * XML: a client over the cap sees SlowDown and retries. */
static const char *error_body(int status, const char *message, struct evbuffer *body, void *arg)
{
    (void)arg;
    const char *code = status == 503   ? "SlowDown"
                       : status == 408 ? "RequestTimeout"
                       : status == 414 ? "KeyTooLongError"
                       : status == 431 ? "RequestHeaderSectionTooLarge"
                       : status == 501 ? "NotImplemented"
                       : status == 505 ? "HttpVersionNotSupported"
                                       : "InvalidRequest";
    s3a_error e = {0};
    s3a_error_set(&e, status, code, "%s",
                  status == 503 ? "Please reduce your request rate." : message);
    s3a_buf b = {0};
    s3a_xml_error(&b, &e, NULL, NULL, NULL, "0000000000000000", "");
    if (!b.oom && b.len)
        evbuffer_add(body, b.p, b.len);
    s3a_buf_free(&b);
    s3a_error_deinit(&e);
    return "application/xml";
}

/* ---- the body ---------------------------------------------------------------------- */

int64_t ns3_body_length(const ns3_req *r)
{
    if (ns3_body_chunked(r)) {
        const char *d = ns3_header(r, "x-amz-decoded-content-length");
        char *end;
        long long v = d ? strtoll(d, &end, 10) : -1;
        return d && *d && !*end && v >= 0 ? v : -1;
    }
    return httpd_req_content_length(r->h);
}

bool ns3_body_chunked(const ns3_req *r)
{
    s3a_payload p = r->auth.payload;
    return p == S3A_PAYLOAD_STREAMING_SIGNED || p == S3A_PAYLOAD_STREAMING_SIGNED_TRAILER ||
           p == S3A_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
}

bool ns3_body_checksum(const ns3_req *r, const char **header, char b64[S3A_CK_B64_MAX])
{
    if (r->dec) {
        s3a_ck_alg a = s3a_chunked_checksum(r->dec, b64);
        if (a != S3A_CK_NONE) {
            *header = s3a_checksum_header(a);
            return true;
        }
    }
    if (r->ck_alg != S3A_CK_NONE && r->ck_value && strlen(r->ck_value) < S3A_CK_B64_MAX) {
        *header = s3a_checksum_header(r->ck_alg);
        snprintf(b64, S3A_CK_B64_MAX, "%s", r->ck_value);
        return true;
    }
    return false;
}

static void decoded(void *arg, const void *data, size_t len)
{
    ns3_req *r = arg;
    if (r->body_failed)
        return;
    r->body_bytes += len;
    if (r->body_bytes > r->body_max) {
        r->body_failed = true;
        s3a_error_set(&r->err, 400, "EntityTooLarge",
                      "Your proposed upload exceeds the maximum allowed size (%llu bytes here).",
                      (unsigned long long)r->body_max);
        return;
    }
    if (r->md5.alg)
        s3a_checksum_update(&r->md5, data, len);
    if (r->ck.alg)
        s3a_checksum_update(&r->ck, data, len);
    if (len)
        r->on_data(r, data, len);
}

/* The operation hears the body's end once: at its real end, or at the first
 * byte that cannot be right (answered at once, as S3 does, the rest unread). */
static void body_over(ns3_req *r, bool ok)
{
    if (r->body_over)
        return;
    r->body_over = true;
    r->on_end(r, ok);
}

static void body_data(httpd_req *h, const void *data, size_t len, void *arg)
{
    (void)h;
    ns3_req *r = arg;
    if (r->body_failed)
        return;
    if (r->dec) {
        if (s3a_chunked_feed(r->dec, data, len, decoded, r, &r->err) < 0)
            r->body_failed = true;
    } else {
        if (r->sha)
            EVP_DigestUpdate(r->sha, data, len);
        decoded(r, data, len);
    }
    if (r->body_failed)
        body_over(r, false);
}

/* Every digest the client gave, against what came. */
static bool body_verify(ns3_req *r)
{
    s3a_error *e = &r->err;
    if (r->dec && s3a_chunked_finish(r->dec, e) < 0)
        return false;
    char b64[S3A_CK_B64_MAX];
    if (r->dec && s3a_chunked_checksum(r->dec, b64) != S3A_CK_NONE)
        count_check(r->w, CK_TRAILER);
    if (r->sha) {
        unsigned char h[32];
        unsigned int hl = 0;
        EVP_DigestFinal_ex(r->sha, h, &hl);
        if (s3a_payload_sha256_verify(h, r->auth.payload_sha256, e) < 0)
            return false;
        count_check(r->w, CK_SHA256);
    }
    if (r->md5.alg) {
        unsigned char d[S3A_CK_DIGEST_MAX];
        s3a_checksum_final(&r->md5, d);
        if (s3a_checksum_verify(S3A_CK_MD5, d, ns3_header(r, "content-md5"), e) < 0)
            return false;
        count_check(r->w, CK_MD5);
    }
    if (r->ck.alg) {
        unsigned char d[S3A_CK_DIGEST_MAX];
        s3a_checksum_final(&r->ck, d);
        if (s3a_checksum_verify(r->ck_alg, d, r->ck_value, e) < 0)
            return false;
        count_check(r->w, CK_HEADER);
    }
    return true;
}

static void body_end(httpd_req *h, int status, void *arg)
{
    (void)h;
    ns3_req *r = arg;
    if (r->body_over)
        return;
    if (status == -ECONNRESET || status == -ECANCELED || !r->h) {
        body_over(r, false); /* nobody to answer: the operation lets go */
        return;
    }
    if (!r->body_failed && status < 0) {
        r->body_failed = true;
        if (status == -ETIMEDOUT)
            s3a_error_set(&r->err, 400, "RequestTimeout",
                          "Your socket connection to the server was not read from or written "
                          "to within the timeout period.");
        else
            s3a_error_set(&r->err, 400, "IncompleteBody",
                          "You did not provide the number of bytes specified by the "
                          "Content-Length HTTP header (or the chunked framing is malformed).");
    }
    if (!r->body_failed) {
        int64_t want = ns3_body_length(r);
        if (want >= 0 && (uint64_t)want != r->body_bytes) {
            r->body_failed = true;
            s3a_error_set(&r->err, 400, "IncompleteBody",
                          "You did not provide the number of bytes specified by the "
                          "Content-Length HTTP header.");
        }
    }
    body_over(r, !r->body_failed && body_verify(r));
}

void ns3_read_body(ns3_req *r, uint64_t max, ns3_data_fn on_data, ns3_end_fn on_end)
{
    r->on_data = on_data;
    r->on_end = on_end;
    r->body_max = max;
    if (ns3_body_chunked(r)) {
        s3a_chunked_config cc = {.payload = r->auth.payload,
                                 .auth = &r->auth,
                                 .trailer = ns3_header(r, "x-amz-trailer"),
                                 .decoded_length = ns3_body_length(r)};
        if (s3a_chunked_create(&r->dec, &cc, &r->err) < 0)
            r->body_failed = true;
    } else if (r->auth.payload == S3A_PAYLOAD_SHA256) {
        r->sha = EVP_MD_CTX_new();
        if (!r->sha || EVP_DigestInit_ex(r->sha, EVP_sha256(), NULL) != 1) {
            r->body_failed = true;
            s3a_error_set(&r->err, 500, "InternalError", "out of memory");
        }
    }
    if (ns3_header(r, "content-md5"))
        s3a_checksum_init(&r->md5, S3A_CK_MD5);
    for (size_t i = 0; i < r->nh; i++) {
        s3a_ck_alg a = s3a_checksum_by_header(r->hdr[i].name);
        if (a == S3A_CK_NONE || a == S3A_CK_MD5)
            continue;
        if (r->ck_alg != S3A_CK_NONE) {
            r->body_failed = true;
            s3a_error_set(&r->err, 400, "InvalidRequest",
                          "Expecting a single x-amz-checksum- header. Multiple checksum Types "
                          "are not allowed.");
            break;
        }
        r->ck_alg = a;
        r->ck_value = r->hdr[i].value;
        s3a_checksum_init(&r->ck, a);
    }
    if (r->body_failed) {
        /* answered at once: the body is never read */
        body_over(r, false);
        return;
    }
    if (httpd_req_read_body(r->h, body_data, body_end, r) < 0) {
        r->body_failed = true;
        s3a_error_set(&r->err, 400, "IncompleteBody", "The request body could not be read.");
        body_over(r, false);
    }
}

void ns3_pause_body(ns3_req *r, bool pause)
{
    if (!r->h)
        return;
    if (pause)
        httpd_req_pause_body(r->h);
    else
        httpd_req_resume_body(r->h);
}

/* ---- one request's head ----------------------------------------------------------------- */

static int secret_of(void *arg, const char *access_key, char *secret, size_t cap, void **principal)
{
    node *n = arg;
    const ten_tenant *t = ten_find_s3api_key(n->tenants, access_key);
    if (!t || !ten_s3api_secret(t))
        return -ENOENT;
    snprintf(secret, cap, "%s", ten_s3api_secret(t));
    *principal = (void *)t;
    return 0;
}

/* Operations that change nothing: the only ones anonymous requests may make. */
static bool is_read(s3a_op op)
{
    switch (op) {
    case S3A_OP_HEAD_BUCKET:
    case S3A_OP_GET_BUCKET_LOCATION:
    case S3A_OP_LIST_OBJECTS:
    case S3A_OP_LIST_OBJECTS_V2:
    case S3A_OP_GET_OBJECT:
    case S3A_OP_HEAD_OBJECT: return true;
    default: return false;
    }
}

/* A public tenant that may reach bucket/key (or the bucket), for an anonymous
 * request. */
static const ten_tenant *public_tenant(const node *n, const s3a_route *rt)
{
    for (size_t i = 0; i < ten_count(n->tenants); i++) {
        const ten_tenant *t = ten_at(n->tenants, i);
        if (!ten_public(t) || !rt->bucket[0])
            continue;
        const char *key = rt->key ? rt->key : s3a_route_param(rt, "prefix");
        if (key ? ten_allows(t, rt->bucket, strlen(rt->bucket), key, strlen(key))
                : ten_allows_bucket(t, rt->bucket, strlen(rt->bucket)))
            return t;
    }
    return NULL;
}

/* The body's framing on a node that checks no signature: what
 * x-amz-content-sha256 says, as S3 reads it. */
static int open_payload(ns3_req *r)
{
    const char *v = ns3_header(r, "x-amz-content-sha256");
    r->auth.payload = S3A_PAYLOAD_UNSIGNED;
    if (!v)
        return 0;
    if (strcmp(v, "STREAMING-UNSIGNED-PAYLOAD-TRAILER") == 0) {
        r->auth.payload = S3A_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
    } else if (strncmp(v, "STREAMING-", 10) == 0) {
        return s3a_error_set(&r->err, 501, "NotImplemented",
                             "%s uploads carry chunk signatures this node cannot check without "
                             "the signer's secret: give the node a tenants file with S3 API "
                             "keys, or upload with UNSIGNED-PAYLOAD or "
                             "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
                             v);
    } else if (strlen(v) == 64 && strspn(v, "0123456789abcdef") == 64) {
        r->auth.payload = S3A_PAYLOAD_SHA256;
        memcpy(r->auth.payload_sha256, v, 65);
    }
    return 0;
}

static void dispatch(ns3_req *r)
{
    s3a_route *rt = &r->route;
    node *n = r->w->n;
    if (rt->op != S3A_OP_LIST_BUCKETS && n->tenants &&
        !ten_allows_bucket(r->who.tenant, rt->bucket, strlen(rt->bucket))) {
        ns3_allowed(r, rt->bucket, rt->key, false); /* answers AccessDenied */
        return;
    }
    switch (rt->op) {
    case S3A_OP_LIST_BUCKETS: ns3_list_buckets(r); break;
    case S3A_OP_HEAD_BUCKET: ns3_head_bucket(r); break;
    case S3A_OP_GET_BUCKET_LOCATION: {
        s3a_buf b = {0};
        s3a_xml_location(&b, n->conf.s3_api_region);
        ns3_send_xml(r, 200, &b);
        break;
    }
    case S3A_OP_LIST_OBJECTS:
    case S3A_OP_LIST_OBJECTS_V2:
    case S3A_OP_LIST_MULTIPART_UPLOADS:
    case S3A_OP_LIST_PARTS: ns3_list(r); break;
    case S3A_OP_GET_OBJECT: ns3_get_object(r, false); break;
    case S3A_OP_HEAD_OBJECT: ns3_get_object(r, true); break;
    case S3A_OP_PUT_OBJECT: ns3_put_object(r); break;
    case S3A_OP_COPY_OBJECT: ns3_copy_object(r); break;
    case S3A_OP_DELETE_OBJECT: ns3_delete_object(r); break;
    case S3A_OP_DELETE_OBJECTS: ns3_delete_objects(r); break;
    case S3A_OP_CREATE_MULTIPART_UPLOAD: ns3_create_upload(r); break;
    case S3A_OP_UPLOAD_PART: ns3_upload_part(r); break;
    case S3A_OP_COMPLETE_MULTIPART_UPLOAD: ns3_complete_upload(r); break;
    case S3A_OP_ABORT_MULTIPART_UPLOAD: ns3_abort_upload(r); break;
    case S3A_OP_CREATE_BUCKET:
    case S3A_OP_DELETE_BUCKET:
        ns3_fail(r, 501, "NotImplemented",
                 "%s is not served through the cache: create and delete buckets in S3 itself",
                 s3a_op_name(rt->op));
        break;
    case S3A_OP_UPLOAD_PART_COPY:
        ns3_fail(r, 501, "NotImplemented",
                 "UploadPartCopy is not served through the cache: copy with CopyObject, or "
                 "upload the part's bytes");
        break;
    default: ns3_fail(r, 501, "NotImplemented", "This operation is not implemented."); break;
    }
}

static void req_done(httpd_req *h, int status, void *arg)
{
    (void)status;
    ns3_req *r = arg;
    node_worker *w = r->w;
    node *n = w->n;
    int op = r->routed ? (int)r->route.op : S3A_OP_NONE;
    int code = r->answered ? r->status : status == 0 ? 200 : 499;
    (void)h;
    met_add(n->metrics, w->idx, metric_requests(n, op, code), 1);
    met_observe_us(n->metrics, w->idx, metric_latency(n, op), now_us() - r->t0_us);
    r->h = NULL;
    if (r->op_done)
        r->op_done(r);
    ns3_unref(r);
}

static void handler(httpd_req *h, void *arg)
{
    node_worker *w = arg;
    node *n = w->n;
    ns3_req *r = calloc(1, sizeof(*r));
    if (!r) {
        httpd_resp_send(h, 503, "text/plain", "out of memory\n", 14);
        return;
    }
    r->w = w;
    r->h = h;
    r->refs = 1;
    r->t0_us = now_us();
    snprintf(r->id, sizeof(r->id), "%02X%014llX", w->idx & 0xff,
             (unsigned long long)(++w->s3api_seq & 0xFFFFFFFFFFFFFFull));
    httpd_req_on_done(h, req_done, r);
    int nh = httpd_req_header_count(h);
    for (int i = 0; i < nh && r->nh < NS3_MAX_HEADERS; i++, r->nh++)
        httpd_req_header_at(h, i, &r->hdr[r->nh].name, &r->hdr[r->nh].value);
    if (nh > NS3_MAX_HEADERS) {
        ns3_fail(r, 400, "InvalidRequest", "The request has more than %d headers.",
                 NS3_MAX_HEADERS);
        return;
    }
    s3a_route_config rc = {(const char *const *)n->s3api_domains, n->n_s3api_domains};
    int rcode = s3a_route_parse(&rc, httpd_req_method(h), ns3_header(r, "host"), httpd_req_path(h),
                                httpd_req_query(h), ns3_header(r, "x-amz-copy-source") != NULL,
                                &r->route, &r->err);
    r->routed = rcode == 0;
    if (rcode < 0) {
        ns3_send_error(r, &r->err);
        return;
    }
    if (atomic_load(&n->stopping)) {
        ns3_fail(r, 503, "SlowDown",
                 "Please reduce your request rate. (cache node %s is "
                 "shutting down: use another)",
                 n->conf.node_id);
        return;
    }
    if (n->tenants) {
        s3a_request sr = {.method = httpd_req_method(h),
                          .path = httpd_req_path(h),
                          .query = httpd_req_query(h),
                          .headers = r->hdr,
                          .n_headers = r->nh,
                          .vhost_bucket = r->route.virtual_host ? r->route.bucket : NULL};
        if (s3a_verify(w->s3auth, &sr, (int64_t)time(NULL), &r->auth, &r->err) < 0) {
            node__count(w, NM_FORBIDDEN, 1);
            ns3_send_error(r, &r->err);
            return;
        }
        if (r->auth.kind == S3A_AUTH_ANONYMOUS) {
            r->who.tenant = is_read(r->route.op) ? public_tenant(n, &r->route) : NULL;
            if (!r->who.tenant) {
                node__count(w, NM_FORBIDDEN, 1);
                ns3_fail(r, 403, "AccessDenied",
                         "Access Denied (anonymous requests are served only for reads of "
                         "tenants configured public; sign the request with a tenant's S3 API "
                         "keys)");
                return;
            }
            if (open_payload(r) < 0) { /* its body's framing, as on an open node */
                ns3_send_error(r, &r->err);
                return;
            }
        } else {
            r->who.tenant = r->auth.principal;
        }
    } else if (open_payload(r) < 0) {
        ns3_send_error(r, &r->err);
        return;
    }
    const struct sockaddr *sa = httpd_req_peer(h, NULL);
    r->who.loopback = sa && ten_addr_is_loopback(sa);
    r->s3 = node__s3_for(w, r->who.tenant);
    dispatch(r);
}

/* ---- the listeners ---------------------------------------------------------------- */

static void drained(httpd_server *srv, void *arg)
{
    (void)srv;
    node_worker *w = arg;
    w->s3api_drained = true;
}

void node__s3api_stop(node_worker *w)
{
    if (!w->s3api || w->s3api_drained)
        return;
    if (httpd_server_drain(w->s3api, (int)w->n->conf.drain_timeout_ms, drained, w) < 0)
        w->s3api_drained = true;
}

bool node__s3api_busy(node_worker *w)
{
    return (w->s3api && !w->s3api_drained) || w->s3api_ahead > 0;
}

void node__s3api_exit(node_worker *w)
{
    httpd_server_destroy(&w->s3api);
}

int node_s3api_setup(node *n, char *err, size_t errlen)
{
    node_conf *conf = &n->conf;
    n->s3api_port = -1;
    if (conf->s3_api_port < 0)
        return 0;
    /* protected mode, as the protocol port's */
    bool protected_mode = !n->tenants && !conf->allow_anonymous;
    if (!conf->s3_api_listen[0]) {
        snprintf(conf->s3_api_listen, sizeof(conf->s3_api_listen), "%s",
                 protected_mode ? "127.0.0.1" : "0.0.0.0");
    } else if (protected_mode && !ten_addr_text_is_loopback(conf->s3_api_listen)) {
        errf_set(err, errlen,
                 "--s3-api-listen %s without --tenants would let any host that reaches the port "
                 "read and write whatever this node's S3 credentials can: give --tenants FILE "
                 "(with S3 API keys), or --allow-anonymous to serve anonymous clients on "
                 "purpose, or listen on 127.0.0.1",
                 conf->s3_api_listen);
        return -EINVAL;
    }
    if (n->tenants) {
        bool any = false;
        for (size_t i = 0; i < ten_count(n->tenants); i++)
            any |= ten_s3api_secret(ten_at(n->tenants, i)) || ten_public(ten_at(n->tenants, i));
        if (!any)
            node_log(NODE_LOG_WARN,
                     "msg=\"the S3 API is on but no tenant has S3 API keys or is public: every "
                     "request will be refused\" fix=\"add s3api_access_key_id and "
                     "s3api_secret_access_key to a tenant of %s\"",
                     conf->tenants);
    }
    /* virtual-hosted style: the domains, comma-separated */
    if (conf->s3_api_domain[0]) {
        char *copy = strdup(conf->s3_api_domain);
        if (!copy)
            return -ENOMEM;
        for (char *save = NULL, *t = strtok_r(copy, ", ", &save); t;
             t = strtok_r(NULL, ", ", &save)) {
            char **nd = realloc(n->s3api_domains, (n->n_s3api_domains + 1) * sizeof(*nd));
            if (!nd || !(nd[n->n_s3api_domains] = strdup(t))) {
                if (nd)
                    n->s3api_domains = nd;
                free(copy);
                return -ENOMEM;
            }
            n->s3api_domains = nd;
            n->n_s3api_domains++;
        }
        free(copy);
    }
    int rc = metrics_setup(n);
    if (rc < 0 || (rc = ns3_meta_setup(n)) < 0) {
        errf_set(err, errlen, "cannot set up the S3 API: %s", strerror(-rc));
        return rc;
    }
    int port = (int)conf->s3_api_port;
    for (unsigned i = 0; i < n->n_workers; i++) {
        node_worker *w = &n->workers[i];
        if (n->tenants) {
            s3a_auth_config ac = {
                .secret = secret_of, .secret_arg = n, .region = conf->s3_api_region};
            if ((rc = s3a_verifier_create(&w->s3auth, &ac)) < 0) {
                errf_set(err, errlen, "cannot set up the S3 API's signature checks: %s",
                         rc == -EINVAL ? "--s3-api-region is empty or too long" : strerror(-rc));
                return rc;
            }
        }
        httpd_config hc;
        httpd_config_init(&hc);
        hc.host = conf->s3_api_listen;
        hc.port = port;
        hc.reuse_port = true;
        hc.tls = n->ssl_ctx;
        hc.handler = handler;
        hc.handler_arg = w;
        hc.error_body = error_body;
        hc.server_name = "ringcache";
        hc.max_conns = n->max_connections;
        hc.idle_timeout_ms = conf->idle_timeout_ms > 0 ? (int)conf->idle_timeout_ms : 0;
        char why[512] = "";
        rc = httpd_server_create(&w->s3api, w->base, &hc, why, sizeof(why));
        if (rc < 0) {
            if (rc == -EADDRINUSE)
                errf_set(err, errlen,
                         "the S3 API port %s:%d is in use (set --s3-api-port, or "
                         "0 for any)",
                         conf->s3_api_listen, port);
            else
                errf_set(err, errlen,
                         "cannot serve the S3 API on %s:%d: %s (check "
                         "--s3-api-listen and --s3-api-port)",
                         conf->s3_api_listen, port, why[0] ? why : strerror(-rc));
            return rc;
        }
        port = httpd_server_port(w->s3api);
    }
    n->s3api_port = port;
    if (conf->s3_api_port_file[0] &&
        (rc = cfg_write_port_file(conf->s3_api_port_file, port, "S3 API port file",
                                  "--s3-api-port-file", err, errlen)) < 0)
        return rc;
    node_log(NODE_LOG_INFO, "msg=\"S3 API listening\" listen=%s port=%d tls=%s auth=%s region=%s",
             conf->s3_api_listen, port, n->ssl_ctx ? "on" : "off",
             n->tenants       ? "tenants"
             : protected_mode ? "open (loopback only)"
                              : "anonymous",
             conf->s3_api_region);
    return 0;
}

void node_s3api_teardown(node *n)
{
    for (unsigned i = 0; n->workers && i < n->n_workers; i++) {
        httpd_server_destroy(&n->workers[i].s3api);
        s3a_verifier_destroy(&n->workers[i].s3auth);
    }
    ns3_meta_teardown(n);
    for (size_t i = 0; i < n->n_s3api_domains; i++)
        free(n->s3api_domains[i]);
    free(n->s3api_domains);
    n->s3api_domains = NULL;
    n->n_s3api_domains = 0;
}
