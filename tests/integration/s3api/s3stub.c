/* SPDX-License-Identifier: Apache-2.0
 *
 * s3stub.c: the in-memory S3 of s3stub.h. One request's life: headers ->
 * s3a_route_parse -> s3a_verify -> (body: aws-chunked decoder or raw, with
 * SHA-256 / Content-MD5 / x-amz-checksum-* computed as it streams) -> the
 * operation on the in-memory store -> an answer written with s3a_xml_*.
 */
#include "s3stub.h"

#include "httpd.h"
#include "s3a_auth.h"
#include "s3a_checksum.h"
#include "s3a_chunked.h"
#include "s3a_route.h"
#include "s3a_xml.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <openssl/evp.h>

#define MAX_BODY    (64u << 20)
#define MAX_HEADERS 128

typedef struct obj {
    struct obj *next;
    char *key;
    unsigned char *data;
    size_t len;
    char etag[48];
    int64_t mtime_ms;
} obj;

typedef struct part {
    unsigned char *data;
    size_t len;
    char etag[33];
} part;

typedef struct upload {
    struct upload *next;
    char id[32];
    char *key;
    part *parts; /* by number, 1..10000 */
} upload;

struct s3stub {
    pthread_t th;
    struct event_base *base;
    httpd_server *srv;
    s3a_verifier *v;
    char bucket[64], akid[128], secret[128];
    SSL_CTX *tls;
    int port, rc;
    bool ready;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    obj *objs; /* sorted by key */
    upload *ups;
    unsigned seq;
    s3stub_counts c;
};

typedef struct rq {
    s3stub *s;
    httpd_req *req;
    s3a_route route;
    bool routed;
    s3a_auth auth;
    s3a_header hdr[MAX_HEADERS];
    size_t nh;
    s3a_buf body;
    s3a_chunked *dec;
    EVP_MD_CTX *sha;
    s3a_checksum md5, hck;
    s3a_ck_alg hck_alg;
    const char *hck_val;
    bool failed;
    s3a_error err;
    char id[17];
} rq;

static const char *hdr(const rq *r, const char *name)
{
    return s3a_header_get(r->hdr, r->nh, name);
}

static void md5_hex(const void *d, size_t n, char out[33])
{
    unsigned char m[16];
    unsigned int ml;
    EVP_Digest(d, n, m, &ml, EVP_md5(), NULL);
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", m[i]);
}

static void http_date(int64_t ms, char out[40])
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char mons[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(out, 40, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday % 7], tm.tm_mday,
             mons[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- answers ---------------------------------------------------------------- */

static void common(rq *r)
{
    httpd_resp_add_header(r->req, "x-amz-request-id", r->id);
    httpd_resp_add_header(r->req, "x-amz-id-2", "c3R1Yg==");
}

static void send_xml(rq *r, int status, s3a_buf *b)
{
    httpd_resp_set_status(r->req, status);
    common(r);
    httpd_resp_add_header(r->req, "Content-Type", "application/xml");
    httpd_resp_start(r->req, (int64_t)b->len);
    httpd_resp_write(r->req, b->p, b->len);
    httpd_resp_end(r->req);
    s3a_buf_free(b);
}

static void send_empty(rq *r, int status)
{
    httpd_resp_set_status(r->req, status);
    common(r);
    httpd_resp_end(r->req);
}

static void send_error(rq *r, const s3a_error *e)
{
    if (e->code && strcmp(e->code, "BadDigest") == 0)
        atomic_fetch_add(&r->s->c.bad_digest, 1);
    if (strcmp(httpd_req_method(r->req), "HEAD") == 0) {
        httpd_resp_set_status(r->req, e->status);
        common(r);
        httpd_resp_add_header(r->req, "x-amz-error-code", e->code);
        httpd_resp_end(r->req);
        return;
    }
    s3a_buf b = {0};
    s3a_xml_error(&b, e, r->routed && r->route.bucket[0] ? r->route.bucket : NULL,
                  r->routed ? r->route.key : NULL, httpd_req_path(r->req), r->id, "c3R1Yg==");
    send_xml(r, e->status, &b);
}

static void fail(rq *r, int status, const char *code, const char *msg)
{
    s3a_error e = {0};
    s3a_error_set(&e, status, code, "%s", msg);
    send_error(r, &e);
    s3a_error_deinit(&e);
}

/* ---- the store ---------------------------------------------------------------- */

static obj *find(s3stub *s, const char *key)
{
    for (obj *o = s->objs; o; o = o->next)
        if (strcmp(o->key, key) == 0)
            return o;
    return NULL;
}

static void drop(s3stub *s, const char *key)
{
    for (obj **p = &s->objs; *p; p = &(*p)->next) {
        if (strcmp((*p)->key, key) == 0) {
            obj *o = *p;
            *p = o->next;
            free(o->key);
            free(o->data);
            free(o);
            return;
        }
    }
}

/* Takes data (malloc'd). */
static obj *store(s3stub *s, const char *key, unsigned char *data, size_t len, const char *etag)
{
    drop(s, key);
    obj *o = calloc(1, sizeof *o);
    o->key = strdup(key);
    o->data = data;
    o->len = len;
    o->mtime_ms = now_ms() / 1000 * 1000;
    if (etag)
        snprintf(o->etag, sizeof o->etag, "%s", etag);
    else
        md5_hex(data, len, o->etag);
    obj **p = &s->objs;
    while (*p && strcmp((*p)->key, key) < 0)
        p = &(*p)->next;
    o->next = *p;
    *p = o;
    return o;
}

static upload *find_upload(s3stub *s, const char *id, const char *key)
{
    for (upload *u = s->ups; u; u = u->next)
        if (id && strcmp(u->id, id) == 0 && strcmp(u->key, key) == 0)
            return u;
    return NULL;
}

static void free_upload(s3stub *s, upload *u)
{
    for (upload **p = &s->ups; *p; p = &(*p)->next) {
        if (*p == u) {
            *p = u->next;
            break;
        }
    }
    for (int i = 0; i <= 10000; i++)
        free(u->parts[i].data);
    free(u->parts);
    free(u->key);
    free(u);
}

/* ---- operations ------------------------------------------------------------------- */

static void list(rq *r, bool v2)
{
    s3stub *s = r->s;
    const char *prefix = s3a_route_param(&r->route, "prefix");
    const char *delim = s3a_route_param(&r->route, "delimiter");
    const char *mk = s3a_route_param(&r->route, "max-keys");
    const char *enc = s3a_route_param(&r->route, "encoding-type");
    const char *start = v2 ? s3a_route_param(&r->route, "continuation-token") : NULL;
    if (v2 && start == NULL)
        start = s3a_route_param(&r->route, "start-after");
    if (!v2)
        start = s3a_route_param(&r->route, "marker");
    if (prefix == NULL)
        prefix = "";
    if (delim && delim[0] == '\0')
        delim = NULL;
    if (enc && strcmp(enc, "url") != 0) {
        fail(r, 400, "InvalidArgument", "Invalid Encoding Method specified in Request");
        return;
    }
    int max = mk ? atoi(mk) : 1000;
    if (max < 0 || max > 1000)
        max = 1000;
    s3a_xml_object objs[1000];
    char *pfx[1000];
    size_t no = 0, np = 0;
    bool truncated = false;
    const char *last = NULL;
    size_t plen = strlen(prefix);
    for (obj *o = s->objs; o; o = o->next) {
        if (strncmp(o->key, prefix, plen) != 0)
            continue;
        if (start && strcmp(o->key, start) <= 0)
            continue;
        char *cp = NULL;
        if (delim) {
            const char *d = strstr(o->key + plen, delim);
            if (d) {
                size_t n = (size_t)(d - o->key) + strlen(delim);
                if (start && strncmp(o->key, start, n) == 0 && strlen(start) == n)
                    continue; /* the prefix the last page ended on */
                if (np > 0 && strncmp(pfx[np - 1], o->key, n) == 0 && strlen(pfx[np - 1]) == n)
                    continue;
                cp = strndup(o->key, n);
            }
        }
        if ((int)(no + np) >= max) {
            truncated = true;
            free(cp);
            break;
        }
        if (cp) {
            pfx[np++] = cp;
            last = cp;
        } else {
            objs[no++] = (s3a_xml_object){o->key, (int64_t)o->len, o->mtime_ms, o->etag, NULL};
            last = o->key;
        }
    }
    s3a_xml_owner owner = {"stub", "stub"};
    s3a_xml_list l = {.v2 = v2,
                      .bucket = s->bucket,
                      .prefix = prefix,
                      .delimiter = delim,
                      .max_keys = max,
                      .truncated = truncated,
                      .url_encode = enc != NULL,
                      .objects = objs,
                      .n_objects = no,
                      .prefixes = (const char *const *)pfx,
                      .n_prefixes = np,
                      .owner = &owner};
    if (v2) {
        l.continuation_token = s3a_route_param(&r->route, "continuation-token");
        l.start_after = s3a_route_param(&r->route, "start-after");
        l.next_continuation_token = last;
        l.fetch_owner = s3a_route_param(&r->route, "fetch-owner") != NULL;
    } else {
        l.marker = start;
        l.next_marker = delim ? last : NULL;
    }
    s3a_buf b = {0};
    s3a_xml_list_objects(&b, &l);
    for (size_t i = 0; i < np; i++)
        free(pfx[i]);
    send_xml(r, 200, &b);
}

static void get_object(rq *r, bool head)
{
    obj *o = find(r->s, r->route.key);
    if (o == NULL) {
        fail(r, 404, "NoSuchKey", "The specified key does not exist.");
        return;
    }
    uint64_t first = 0, last = o->len ? o->len - 1 : 0;
    bool ranged = false;
    const char *range = hdr(r, "range");
    if (range && strncmp(range, "bytes=", 6) == 0 && range[6] != '-') {
        char *end;
        first = strtoull(range + 6, &end, 10);
        if (*end == '-') {
            if (end[1] != '\0') {
                uint64_t l = strtoull(end + 1, NULL, 10);
                last = l < last ? l : last;
            }
            ranged = true;
        }
        if (first >= o->len) {
            s3a_error e = {0};
            s3a_error_set(&e, 416, "InvalidRange", "The requested range is not satisfiable");
            send_error(r, &e);
            s3a_error_deinit(&e);
            return;
        }
    }
    char q[60], d[40], cr[80];
    snprintf(q, sizeof q, "\"%s\"", o->etag);
    http_date(o->mtime_ms, d);
    httpd_resp_set_status(r->req, ranged ? 206 : 200);
    common(r);
    httpd_resp_add_header(r->req, "ETag", q);
    httpd_resp_add_header(r->req, "Last-Modified", d);
    httpd_resp_add_header(r->req, "Accept-Ranges", "bytes");
    httpd_resp_add_header(r->req, "Content-Type", "binary/octet-stream");
    if (ranged) {
        snprintf(cr, sizeof cr, "bytes %llu-%llu/%zu", (unsigned long long)first,
                 (unsigned long long)last, o->len);
        httpd_resp_add_header(r->req, "Content-Range", cr);
    }
    size_t n = o->len ? (size_t)(last - first + 1) : 0;
    httpd_resp_start(r->req, (int64_t)n);
    if (!head)
        httpd_resp_write(r->req, o->data + first, n);
    httpd_resp_end(r->req);
}

static void put_done(rq *r, const char *etag)
{
    char q[60];
    snprintf(q, sizeof q, "\"%s\"", etag);
    httpd_resp_set_status(r->req, 200);
    common(r);
    httpd_resp_add_header(r->req, "ETag", q);
    if (r->hck_alg != S3A_CK_NONE && r->hck_val)
        httpd_resp_add_header(r->req, s3a_checksum_header(r->hck_alg), r->hck_val);
    httpd_resp_end(r->req);
}

/* The request's XML body read as kind; NULL after answering the error. */
static s3a_xmlbody *xml_body(rq *r, s3a_xmlbody_kind kind)
{
    s3a_xmlbody *x;
    s3a_error e = {0};
    if (s3a_xmlbody_create(&x, kind, 0) < 0) {
        fail(r, 500, "InternalError", "out of memory");
        return NULL;
    }
    int rc = s3a_xmlbody_feed(x, r->body.p, r->body.len, &e);
    if (rc == 0)
        rc = s3a_xmlbody_finish(x, &e);
    if (rc < 0) {
        send_error(r, &e);
        s3a_error_deinit(&e);
        s3a_xmlbody_destroy(&x);
    }
    return x;
}

static void complete(rq *r)
{
    s3stub *s = r->s;
    upload *u = find_upload(s, r->route.upload_id, r->route.key);
    if (u == NULL) {
        fail(r, 404, "NoSuchUpload",
             "The specified upload does not exist. The upload ID may "
             "be invalid, or the upload may have been aborted or "
             "completed.");
        return;
    }
    s3a_xmlbody *x = xml_body(r, S3A_BODY_COMPLETE_MPU);
    if (x == NULL)
        return;
    size_t n;
    const s3a_body_part *p = s3a_xmlbody_parts(x, &n);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        part *pt = &u->parts[p[i].number];
        if (pt->data == NULL && pt->len == 0 && pt->etag[0] == '\0') {
            fail(r, 400, "InvalidPart", "One or more of the specified parts could not be found.");
            s3a_xmlbody_destroy(&x);
            return;
        }
        if (strcmp(pt->etag, p[i].etag) != 0) {
            fail(r, 400, "InvalidPart", "the specified entity tag does not match the part's");
            s3a_xmlbody_destroy(&x);
            return;
        }
        total += pt->len;
    }
    unsigned char *all = malloc(total ? total : 1);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_md5(), NULL);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        part *pt = &u->parts[p[i].number];
        memcpy(all + off, pt->data, pt->len);
        off += pt->len;
        unsigned char raw[16];
        for (int k = 0; k < 16; k++) {
            unsigned int v;
            sscanf(pt->etag + 2 * k, "%2x", &v);
            raw[k] = (unsigned char)v;
        }
        EVP_DigestUpdate(md, raw, 16);
    }
    unsigned char m[16];
    unsigned int ml;
    EVP_DigestFinal_ex(md, m, &ml);
    EVP_MD_CTX_free(md);
    char etag[48];
    for (int k = 0; k < 16; k++)
        snprintf(etag + 2 * k, 3, "%02x", m[k]);
    snprintf(etag + 32, sizeof etag - 32, "-%zu", n);
    store(s, r->route.key, all, total, etag);
    char loc[256];
    snprintf(loc, sizeof loc, "http://127.0.0.1/%s/%s", s->bucket, r->route.key);
    s3a_buf b = {0};
    s3a_xml_complete_mpu(&b, loc, s->bucket, r->route.key, etag, NULL, NULL, NULL);
    s3a_xmlbody_destroy(&x);
    free_upload(s, u);
    atomic_fetch_add(&s->c.completed_uploads, 1);
    send_xml(r, 200, &b);
}

static void delete_objects(rq *r)
{
    s3a_xmlbody *x = xml_body(r, S3A_BODY_DELETE);
    if (x == NULL)
        return;
    size_t n;
    bool quiet;
    const s3a_body_object *o = s3a_xmlbody_objects(x, &n, &quiet);
    s3a_xml_deleted *d = calloc(n, sizeof *d);
    for (size_t i = 0; i < n; i++) {
        drop(r->s, o[i].key);
        d[i].key = o[i].key;
    }
    s3a_buf b = {0};
    s3a_xml_delete_result(&b, d, n, quiet);
    free(d);
    s3a_xmlbody_destroy(&x);
    send_xml(r, 200, &b);
}

static void execute(rq *r)
{
    s3stub *s = r->s;
    s3a_route *rt = &r->route;
    if (rt->op == S3A_OP_LIST_BUCKETS) {
        s3a_xml_owner o = {"stub", "stub"};
        s3a_xml_bucket b1 = {s->bucket, 1700000000000LL};
        s3a_buf b = {0};
        s3a_xml_list_buckets(&b, &o, &b1, 1);
        send_xml(r, 200, &b);
        return;
    }
    if (strcmp(rt->bucket, s->bucket) != 0) {
        s3a_error e = {0};
        s3a_error_set(&e, 404, "NoSuchBucket", "The specified bucket does not exist");
        send_error(r, &e);
        s3a_error_deinit(&e);
        return;
    }
    s3a_buf b = {0};
    switch (rt->op) {
    case S3A_OP_HEAD_BUCKET:
        httpd_resp_add_header(r->req, "x-amz-bucket-region", "us-east-1");
        send_empty(r, 200);
        return;
    case S3A_OP_GET_BUCKET_LOCATION:
        s3a_xml_location(&b, "us-east-1");
        send_xml(r, 200, &b);
        return;
    case S3A_OP_LIST_OBJECTS_V2: list(r, true); return;
    case S3A_OP_LIST_OBJECTS: list(r, false); return;
    case S3A_OP_GET_OBJECT: get_object(r, false); return;
    case S3A_OP_HEAD_OBJECT: get_object(r, true); return;
    case S3A_OP_PUT_OBJECT: {
        unsigned char *data = (unsigned char *)r->body.p;
        size_t len = r->body.len;
        r->body.p = NULL;
        r->body.len = r->body.cap = 0;
        obj *o = store(s, rt->key, data ? data : calloc(1, 1), len, NULL);
        put_done(r, o->etag);
        return;
    }
    case S3A_OP_COPY_OBJECT: {
        char sb[S3A_BUCKET_MAX + 1];
        char *sk, *vid;
        s3a_error e = {0};
        if (s3a_copy_source_parse(hdr(r, "x-amz-copy-source"), sb, &sk, &vid, &e) < 0) {
            send_error(r, &e);
            s3a_error_deinit(&e);
            return;
        }
        obj *src = find(s, sk);
        free(sk);
        free(vid);
        if (src == NULL || strcmp(sb, s->bucket) != 0) {
            fail(r, 404, "NoSuchKey", "The specified key does not exist.");
            return;
        }
        unsigned char *copy = malloc(src->len ? src->len : 1);
        memcpy(copy, src->data, src->len);
        obj *o = store(s, rt->key, copy, src->len, NULL);
        s3a_xml_copy_result(&b, false, o->etag, o->mtime_ms);
        send_xml(r, 200, &b);
        return;
    }
    case S3A_OP_DELETE_OBJECT:
        drop(s, rt->key);
        send_empty(r, 204);
        return;
    case S3A_OP_DELETE_OBJECTS: delete_objects(r); return;
    case S3A_OP_CREATE_MULTIPART_UPLOAD: {
        upload *u = calloc(1, sizeof *u);
        u->parts = calloc(10001, sizeof *u->parts);
        u->key = strdup(rt->key);
        snprintf(u->id, sizeof u->id, "UP%u", ++s->seq);
        u->next = s->ups;
        s->ups = u;
        s3a_xml_initiate_mpu(&b, s->bucket, rt->key, u->id);
        send_xml(r, 200, &b);
        return;
    }
    case S3A_OP_UPLOAD_PART: {
        upload *u = find_upload(s, rt->upload_id, rt->key);
        if (u == NULL) {
            fail(r, 404, "NoSuchUpload", "The specified upload does not exist.");
            return;
        }
        part *p = &u->parts[rt->part_number];
        free(p->data);
        p->data = (unsigned char *)r->body.p;
        p->len = r->body.len;
        r->body.p = NULL;
        r->body.len = r->body.cap = 0;
        md5_hex(p->data ? (void *)p->data : (void *)"", p->len, p->etag);
        put_done(r, p->etag);
        return;
    }
    case S3A_OP_COMPLETE_MULTIPART_UPLOAD: complete(r); return;
    case S3A_OP_ABORT_MULTIPART_UPLOAD: {
        upload *u = find_upload(s, rt->upload_id, rt->key);
        if (u == NULL) {
            fail(r, 404, "NoSuchUpload", "The specified upload does not exist.");
            return;
        }
        free_upload(s, u);
        send_empty(r, 204);
        return;
    }
    default: fail(r, 501, "NotImplemented", "The stub does not serve this operation."); return;
    }
}

/* ---- bodies ----------------------------------------------------------------------- */

static void decoded(void *arg, const void *d, size_t n)
{
    rq *r = arg;
    s3a_buf_add(&r->body, d, n);
    if (r->md5.alg)
        s3a_checksum_update(&r->md5, d, n);
    if (r->hck.alg)
        s3a_checksum_update(&r->hck, d, n);
}

static void on_data(httpd_req *req, const void *d, size_t n, void *arg)
{
    (void)req;
    rq *r = arg;
    if (r->failed)
        return;
    if (r->body.len + n > MAX_BODY) {
        r->failed = true;
        s3a_error_set(&r->err, 400, "EntityTooLarge",
                      "Your proposed upload exceeds the maximum allowed object size.");
        return;
    }
    if (r->dec) {
        if (s3a_chunked_feed(r->dec, d, n, decoded, r, &r->err) < 0)
            r->failed = true;
        return;
    }
    if (r->sha)
        EVP_DigestUpdate(r->sha, d, n);
    decoded(r, d, n);
}

static bool check_digests(rq *r)
{
    s3stub_counts *c = &r->s->c;
    s3a_error *e = &r->err;
    if (r->dec) {
        if (s3a_chunked_finish(r->dec, e) < 0)
            return false;
        char b64[S3A_CK_B64_MAX];
        s3a_ck_alg alg = s3a_chunked_checksum(r->dec, b64);
        if (alg != S3A_CK_NONE)
            atomic_fetch_add(&c->trailer_checksum[alg], 1);
        if (r->auth.payload == S3A_PAYLOAD_STREAMING_UNSIGNED_TRAILER)
            atomic_fetch_add(&c->chunked_unsigned_trailer, 1);
        else
            atomic_fetch_add(&c->chunked_signed, 1);
    }
    if (r->sha) {
        unsigned char h[32];
        unsigned int hl;
        EVP_DigestFinal_ex(r->sha, h, &hl);
        if (s3a_payload_sha256_verify(h, r->auth.payload_sha256, e) < 0)
            return false;
        atomic_fetch_add(&c->payload_sha256_checked, 1);
    }
    if (r->md5.alg) {
        unsigned char dig[S3A_CK_DIGEST_MAX];
        s3a_checksum_final(&r->md5, dig);
        if (s3a_checksum_verify(S3A_CK_MD5, dig, hdr(r, "content-md5"), e) < 0)
            return false;
        atomic_fetch_add(&c->content_md5_checked, 1);
    }
    if (r->hck.alg) {
        unsigned char dig[S3A_CK_DIGEST_MAX];
        s3a_checksum_final(&r->hck, dig);
        if (s3a_checksum_verify(r->hck_alg, dig, r->hck_val, e) < 0)
            return false;
        atomic_fetch_add(&c->header_checksum[r->hck_alg], 1);
    }
    return true;
}

static void on_end(httpd_req *req, int status, void *arg)
{
    (void)req;
    rq *r = arg;
    if (status == -ECONNRESET || status == -ECANCELED)
        return;
    if (status < 0) {
        fail(r, 400, "IncompleteBody", "the request body ended early or was malformed");
        return;
    }
    if (r->failed || !check_digests(r)) {
        send_error(r, &r->err);
        return;
    }
    execute(r);
}

static void start_body(rq *r)
{
    s3a_payload pl = r->auth.payload;
    if (pl == S3A_PAYLOAD_STREAMING_SIGNED || pl == S3A_PAYLOAD_STREAMING_SIGNED_TRAILER ||
        pl == S3A_PAYLOAD_STREAMING_UNSIGNED_TRAILER) {
        const char *dl = hdr(r, "x-amz-decoded-content-length");
        s3a_chunked_config cc = {.payload = pl,
                                 .auth = &r->auth,
                                 .trailer = hdr(r, "x-amz-trailer"),
                                 .decoded_length = dl ? strtoll(dl, NULL, 10) : -1};
        if (s3a_chunked_create(&r->dec, &cc, &r->err) < 0) {
            send_error(r, &r->err);
            return;
        }
    } else if (pl == S3A_PAYLOAD_SHA256) {
        r->sha = EVP_MD_CTX_new();
        EVP_DigestInit_ex(r->sha, EVP_sha256(), NULL);
    }
    if (hdr(r, "content-md5"))
        s3a_checksum_init(&r->md5, S3A_CK_MD5);
    for (size_t i = 0; i < r->nh; i++) {
        s3a_ck_alg a = s3a_checksum_by_header(r->hdr[i].name);
        if (a != S3A_CK_NONE && a != S3A_CK_MD5) {
            r->hck_alg = a;
            r->hck_val = r->hdr[i].value;
            s3a_checksum_init(&r->hck, a);
        }
    }
    if (hdr(r, "expect"))
        atomic_fetch_add(&r->s->c.continue_sent, 1);
    httpd_req_read_body(r->req, on_data, on_end, r);
}

static void rq_done(httpd_req *req, int status, void *arg)
{
    (void)req, (void)status;
    rq *r = arg;
    s3a_route_deinit(&r->route);
    s3a_buf_free(&r->body);
    s3a_chunked_destroy(&r->dec);
    if (r->sha)
        EVP_MD_CTX_free(r->sha);
    s3a_checksum_deinit(&r->md5);
    s3a_checksum_deinit(&r->hck);
    s3a_error_deinit(&r->err);
    free(r);
}

static bool has_body(s3a_op op)
{
    return op == S3A_OP_PUT_OBJECT || op == S3A_OP_UPLOAD_PART ||
           op == S3A_OP_COMPLETE_MULTIPART_UPLOAD || op == S3A_OP_DELETE_OBJECTS;
}

static void handler(httpd_req *req, void *arg)
{
    s3stub *s = arg;
    rq *r = calloc(1, sizeof *r);
    r->s = s;
    r->req = req;
    snprintf(r->id, sizeof r->id, "%016X", ++s->seq);
    httpd_req_on_done(req, rq_done, r);
    atomic_fetch_add(&s->c.requests, 1);
    int n = httpd_req_header_count(req);
    for (int i = 0; i < n && r->nh < MAX_HEADERS; i++, r->nh++)
        httpd_req_header_at(req, i, &r->hdr[r->nh].name, &r->hdr[r->nh].value);

    int rc = s3a_route_parse(NULL, httpd_req_method(req), hdr(r, "host"), httpd_req_path(req),
                             httpd_req_query(req), hdr(r, "x-amz-copy-source") != NULL, &r->route,
                             &r->err);
    r->routed = rc == 0;
    if (rc < 0) {
        send_error(r, &r->err);
        return;
    }
    s3a_request sr = {.method = httpd_req_method(req),
                      .path = httpd_req_path(req),
                      .query = httpd_req_query(req),
                      .headers = r->hdr,
                      .n_headers = r->nh};
    rc = s3a_verify(s->v, &sr, time(NULL), &r->auth, &r->err);
    if (rc < 0) {
        atomic_fetch_add(&s->c.refused_auth, 1);
        send_error(r, &r->err);
        return;
    }
    switch (r->auth.kind) {
    case S3A_AUTH_SIGV4: atomic_fetch_add(&s->c.sigv4, 1); break;
    case S3A_AUTH_SIGV4_QUERY: atomic_fetch_add(&s->c.sigv4_query, 1); break;
    case S3A_AUTH_SIGV2_QUERY: atomic_fetch_add(&s->c.sigv2_query, 1); break;
    case S3A_AUTH_ANONYMOUS:
        atomic_fetch_add(&s->c.anonymous, 1);
        fail(r, 403, "AccessDenied", "Access Denied");
        return;
    }
    if (has_body(r->route.op))
        start_body(r);
    else
        execute(r);
}

/* ---- the thread -------------------------------------------------------------------- */

static int lookup(void *arg, const char *akid, char *secret, size_t cap, void **principal)
{
    s3stub *s = arg;
    if (strcmp(akid, s->akid) != 0)
        return -ENOENT;
    snprintf(secret, cap, "%s", s->secret);
    *principal = s;
    return 0;
}

static void *serve(void *arg)
{
    s3stub *s = arg;
    httpd_config cfg;
    httpd_config_init(&cfg);
    cfg.handler = handler;
    cfg.handler_arg = s;
    cfg.tls = s->tls;
    int rc = httpd_server_create(&s->srv, s->base, &cfg, NULL, 0);
    pthread_mutex_lock(&s->mu);
    s->rc = rc;
    s->port = rc == 0 ? httpd_server_port(s->srv) : 0;
    s->ready = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (rc == 0)
        event_base_loop(s->base, EVLOOP_NO_EXIT_ON_EMPTY);
    httpd_server_destroy(&s->srv);
    return NULL;
}

int s3stub_start(s3stub **out, const char *bucket, const char *access_key, const char *secret,
                 SSL_CTX *tls)
{
    static bool threads;
    if (!threads) {
        evthread_use_pthreads();
        threads = true;
    }
    s3stub *s = calloc(1, sizeof *s);
    if (s == NULL)
        return -ENOMEM;
    snprintf(s->bucket, sizeof s->bucket, "%s", bucket);
    snprintf(s->akid, sizeof s->akid, "%s", access_key);
    snprintf(s->secret, sizeof s->secret, "%s", secret);
    s->tls = tls;
    s3a_auth_config ac = {.secret = lookup, .secret_arg = s};
    s3a_verifier_create(&s->v, &ac);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->base = event_base_new();
    pthread_create(&s->th, NULL, serve, s);
    pthread_mutex_lock(&s->mu);
    while (!s->ready)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    if (s->rc < 0) {
        int rc = s->rc;
        s3stub_stop(&s);
        return rc;
    }
    *out = s;
    return 0;
}

static void stop_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    event_base_loopbreak(arg);
}

void s3stub_stop(s3stub **ps)
{
    if (ps == NULL || *ps == NULL)
        return;
    s3stub *s = *ps;
    *ps = NULL;
    event_base_once(s->base, -1, EV_TIMEOUT, stop_cb, s->base, NULL);
    pthread_join(s->th, NULL);
    event_base_free(s->base);
    while (s->objs)
        drop(s, s->objs->key);
    while (s->ups)
        free_upload(s, s->ups);
    s3a_verifier_destroy(&s->v);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

int s3stub_port(const s3stub *s)
{
    return s->port;
}

s3stub_counts *s3stub_counts_of(s3stub *s)
{
    return &s->c;
}
