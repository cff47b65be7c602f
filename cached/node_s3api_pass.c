/* SPDX-License-Identifier: Apache-2.0
 *
 * node_s3api_pass.c: the S3 API's operations that S3 answers as it is
 * (node_s3api.h): the listings (ListObjectsV2, ListObjects, ListParts,
 * ListMultipartUploads) and HeadBucket are sent to S3 with the tenant's
 * credentials and S3's answer relayed, so keys, ETags, LastModified and
 * continuation tokens are S3's own (aws s3 sync compares a listing's
 * LastModified with an object's); a tenant lists only under the prefixes it
 * may read. ListBuckets shows a tenant the buckets its allow lines name.
 */
#include "node_s3api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct s3_call {
    ns3_req *r;
    ns3_s3_fn done;
} s3_call;

static void s3_call_done(const s3_error *err, const s3_response *resp, void *arg)
{
    s3_call *c = arg;
    ns3_req *r = c->r;
    if (r->h)
        c->done(r, err, resp);
    free(c);
    ns3_unref(r);
}

int ns3_s3_request(ns3_req *r, const s3_request_args *a, ns3_s3_fn done)
{
    s3_call *c = malloc(sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->r = r;
    c->done = done;
    ns3_ref(r);
    int rc = s3_request(r->s3, a, s3_call_done, c);
    if (rc < 0) {
        free(c);
        ns3_unref(r);
    }
    return rc;
}

void ns3_relay(ns3_req *r, const s3_error *err, const s3_response *resp)
{
    if (resp->status >= 200 && resp->status < 300 && !resp->s3_code[0]) {
        if (!r->h || r->answered)
            return;
        r->answered = true;
        r->status = resp->status;
        httpd_resp_set_status(r->h, resp->status);
        ns3_common_headers(r);
        if (resp->body_len)
            httpd_resp_add_header(r->h, "Content-Type", "application/xml");
        httpd_resp_start(r->h, (int64_t)resp->body_len);
        httpd_resp_write(r->h, resp->body, resp->body_len);
        httpd_resp_end(r->h);
        return;
    }
    if (resp->status >= 300 && resp->s3_code[0]) {
        ns3_fail(r, resp->status, resp->s3_code, "%s", resp->s3_message);
        return;
    }
    if (resp->status >= 200 && resp->s3_code[0]) { /* a 200 with an <Error> inside */
        ns3_fail(r, 500, resp->s3_code, "%s", resp->s3_message);
        return;
    }
    if (resp->status == 404) {
        ns3_fail_rcp(r, RCP_E_NOT_FOUND, "");
        return;
    }
    ns3_fail_s3(r, err);
}

/* The parameters S3 is asked with: the client's, without those that only
 * signed or tagged its request. */
static size_t forward_query(const ns3_req *r, s3_kv *out, size_t cap)
{
    size_t n = 0;
    const s3a_query *q = &r->route.query;
    for (size_t i = 0; i < q->n && n < cap; i++) {
        const char *name = q->p[i].name;
        if (strcmp(name, "x-id") == 0 || strncmp(name, "X-Amz-", 6) == 0 ||
            strncmp(name, "x-amz-", 6) == 0 || strcmp(name, "AWSAccessKeyId") == 0 ||
            strcmp(name, "Signature") == 0 || strcmp(name, "Expires") == 0)
            continue;
        out[n++] = (s3_kv){name, q->p[i].value};
    }
    return n;
}

static void list_done(ns3_req *r, const s3_error *err, const s3_response *resp)
{
    ns3_relay(r, err, resp);
}

void ns3_list(ns3_req *r)
{
    const s3a_route *rt = &r->route;
    if (rt->op == S3A_OP_LIST_PARTS) {
        if (!ns3_allowed(r, rt->bucket, rt->key, false))
            return;
    } else {
        const char *prefix = s3a_route_param(rt, "prefix");
        if (!ns3_allowed(r, rt->bucket, prefix ? prefix : "", true))
            return;
    }
    s3_kv q[16];
    size_t nq = forward_query(r, q, 16);
    s3_request_args a = {.method = "GET",
                         .bucket = rt->bucket,
                         .key = rt->op == S3A_OP_LIST_PARTS ? rt->key : NULL,
                         .query = q,
                         .n_query = nq};
    int rc = ns3_s3_request(r, &a, list_done);
    if (rc < 0)
        ns3_fail(r, 500, "InternalError", "cannot ask S3: %s", strerror(-rc));
}

/* ---- HeadBucket ------------------------------------------------------------------------- */

static void head_bucket_done(ns3_req *r, const s3_error *err, const s3_response *resp)
{
    if (resp->status == 200) {
        httpd_resp_add_header(r->h, "x-amz-bucket-region", r->w->n->conf.s3_api_region);
        ns3_send_empty(r, 200);
    } else if (resp->status == 404) {
        ns3_fail(r, 404, "NoSuchBucket", "The specified bucket does not exist");
    } else if (resp->status == 403) {
        ns3_fail(r, 403, "AccessDenied", "Access Denied");
    } else {
        ns3_relay(r, err, resp);
    }
}

void ns3_head_bucket(ns3_req *r)
{
    s3_request_args a = {.method = "HEAD", .bucket = r->route.bucket};
    int rc = ns3_s3_request(r, &a, head_bucket_done);
    if (rc < 0)
        ns3_fail(r, 500, "InternalError", "cannot ask S3: %s", strerror(-rc));
}

/* ---- ListBuckets ------------------------------------------------------------------------- */

/* A tenant sees the buckets its allow lines name, with the creation dates S3
 * gives (S3's listing is read for them; buckets S3 does not list for its
 * credentials are not shown). */
static void list_buckets_done(ns3_req *r, const s3_error *err, const s3_response *resp)
{
    const ten_tenant *t = r->who.tenant;
    if (!t || resp->status != 200 || resp->s3_code[0]) {
        ns3_relay(r, err, resp);
        return;
    }
    size_t nb = ten_bucket_count(t), n = 0;
    s3a_xml_bucket *out = calloc(nb ? nb : 1, sizeof(*out));
    char(*names)[S3A_BUCKET_MAX + 1] = calloc(nb ? nb : 1, sizeof(*names));
    if (!out || !names) {
        free(out);
        free(names);
        ns3_fail(r, 500, "InternalError", "out of memory");
        return;
    }
    const char *p = resp->body, *end = resp->body + resp->body_len;
    size_t len;
    const char *bucket;
    while ((bucket = ns3_xml_element(p, end, "Bucket", &len))) {
        const char *bend = bucket + len;
        size_t nl = 0, dl = 0;
        const char *name = ns3_xml_element(bucket, bend, "Name", &nl);
        const char *date = ns3_xml_element(bucket, bend, "CreationDate", &dl);
        p = bend;
        if (!name || nl > S3A_BUCKET_MAX || !ten_allows_bucket(t, name, nl))
            continue;
        bool dup = false;
        for (size_t i = 0; i < n; i++)
            dup |= strlen(names[i]) == nl && memcmp(names[i], name, nl) == 0;
        if (dup || n == nb)
            continue;
        memcpy(names[n], name, nl);
        names[n][nl] = '\0';
        char d[40] = "";
        if (date && dl < sizeof(d))
            memcpy(d, date, dl);
        int64_t created = s3a_parse_iso8601(d); /* S3 always gives one; 1970 if not */
        out[n] = (s3a_xml_bucket){names[n], (created > 0 ? created : 0) * 1000};
        n++;
    }
    s3a_xml_owner owner = {ten_name(t), ten_name(t)};
    s3a_buf b = {0};
    s3a_xml_list_buckets(&b, &owner, out, n);
    free(out);
    free(names);
    ns3_send_xml(r, 200, &b);
}

void ns3_list_buckets(ns3_req *r)
{
    s3_request_args a = {.method = "GET", .bucket = ""};
    int rc = ns3_s3_request(r, &a, list_buckets_done);
    if (rc < 0)
        ns3_fail(r, 500, "InternalError", "cannot ask S3: %s", strerror(-rc));
}
