/* SPDX-License-Identifier: Apache-2.0
 *
 * s3a_route.c: method + Host + path + query -> S3 operation (s3a_route.h).
 * The table of the header is the code below: first where the bucket comes
 * from (Host or first path segment), then which level (service, bucket,
 * object), then the method and the sub-resources present.
 */
#include "s3a_route.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const op_names[S3A_OP__COUNT] = {
    [S3A_OP_NONE] = "Unknown",
    [S3A_OP_LIST_BUCKETS] = "ListBuckets",
    [S3A_OP_HEAD_BUCKET] = "HeadBucket",
    [S3A_OP_CREATE_BUCKET] = "CreateBucket",
    [S3A_OP_DELETE_BUCKET] = "DeleteBucket",
    [S3A_OP_GET_BUCKET_LOCATION] = "GetBucketLocation",
    [S3A_OP_LIST_OBJECTS] = "ListObjects",
    [S3A_OP_LIST_OBJECTS_V2] = "ListObjectsV2",
    [S3A_OP_LIST_MULTIPART_UPLOADS] = "ListMultipartUploads",
    [S3A_OP_DELETE_OBJECTS] = "DeleteObjects",
    [S3A_OP_GET_OBJECT] = "GetObject",
    [S3A_OP_HEAD_OBJECT] = "HeadObject",
    [S3A_OP_PUT_OBJECT] = "PutObject",
    [S3A_OP_COPY_OBJECT] = "CopyObject",
    [S3A_OP_DELETE_OBJECT] = "DeleteObject",
    [S3A_OP_CREATE_MULTIPART_UPLOAD] = "CreateMultipartUpload",
    [S3A_OP_UPLOAD_PART] = "UploadPart",
    [S3A_OP_UPLOAD_PART_COPY] = "UploadPartCopy",
    [S3A_OP_COMPLETE_MULTIPART_UPLOAD] = "CompleteMultipartUpload",
    [S3A_OP_ABORT_MULTIPART_UPLOAD] = "AbortMultipartUpload",
    [S3A_OP_LIST_PARTS] = "ListParts",
};

const char *s3a_op_name(s3a_op op)
{
    return op > S3A_OP_NONE && op < S3A_OP__COUNT ? op_names[op] : "Unknown";
}

/* Sub-resources S3 has and this API does not serve. */
static const char *const unsupported[] = {
    "accelerate",
    "acl",
    "analytics",
    "attributes",
    "cors",
    "encryption",
    "intelligent-tiering",
    "inventory",
    "legal-hold",
    "lifecycle",
    "logging",
    "metrics",
    "notification",
    "object-lock",
    "ownershipControls",
    "policy",
    "policyStatus",
    "publicAccessBlock",
    "replication",
    "requestPayment",
    "restore",
    "retention",
    "select",
    "tagging",
    "torrent",
    "versionId",
    "versioning",
    "versions",
    "website",
};

static const char *unsupported_param(const s3a_query *q)
{
    for (size_t i = 0; i < q->n; i++)
        for (size_t k = 0; k < sizeof unsupported / sizeof unsupported[0]; k++)
            if (strcmp(q->p[i].name, unsupported[k]) == 0)
                return unsupported[k];
    return NULL;
}

bool s3a_bucket_name_valid(const char *s, size_t n)
{
    if (n < 3 || n > S3A_BUCKET_MAX)
        return false;
    bool all_ip = true;
    int dots = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && c != '.' && c != '-')
            return false;
        if ((i == 0 || i == n - 1) && !alnum)
            return false;
        if (c == '.' && s[i + 1] == '.')
            return false;
        if (c == '.')
            dots++;
        else if (!(c >= '0' && c <= '9'))
            all_ip = false;
    }
    return !(all_ip && dots == 3);
}

static const char *method_not_allowed(s3a_error *err, const char *method, const char *what)
{
    s3a_error_set(err, 405, "MethodNotAllowed",
                  "The specified method is not allowed against this resource.");
    s3a_error_extra(err, "Method", method, strlen(method));
    s3a_error_extra(err, "ResourceType", what, strlen(what));
    return NULL;
}

/* The bucket's operation, or 0 with err set. */
static s3a_op bucket_op(const char *m, const s3a_route *r, s3a_error *err)
{
    const s3a_query *q = &r->query;
    const char *bad = unsupported_param(q);
    if (bad != NULL) {
        s3a_error_set(err, 501, "NotImplemented",
                      "The bucket sub-resource '%s' is not supported by this S3 endpoint", bad);
        return S3A_OP_NONE;
    }
    if (strcmp(m, "GET") == 0) {
        if (s3a_query_find(q, "location"))
            return S3A_OP_GET_BUCKET_LOCATION;
        if (s3a_query_find(q, "uploads"))
            return S3A_OP_LIST_MULTIPART_UPLOADS;
        const char *lt = s3a_query_get(q, "list-type");
        if (lt != NULL) {
            if (strcmp(lt, "2") != 0) {
                s3a_error_set(err, 400, "InvalidArgument",
                              "Invalid List Type specified in Request: list-type must be 2");
                s3a_error_extra(err, "ArgumentName", "list-type", 9);
                s3a_error_extra(err, "ArgumentValue", lt, strlen(lt));
                return S3A_OP_NONE;
            }
            return S3A_OP_LIST_OBJECTS_V2;
        }
        return S3A_OP_LIST_OBJECTS;
    }
    if (strcmp(m, "HEAD") == 0)
        return S3A_OP_HEAD_BUCKET;
    if (strcmp(m, "PUT") == 0)
        return S3A_OP_CREATE_BUCKET;
    if (strcmp(m, "DELETE") == 0)
        return S3A_OP_DELETE_BUCKET;
    if (strcmp(m, "POST") == 0) {
        if (s3a_query_find(q, "delete"))
            return S3A_OP_DELETE_OBJECTS;
        s3a_error_set(err, 501, "NotImplemented",
                      "POST uploads from browser forms are not supported by this S3 endpoint; "
                      "use PUT");
        return S3A_OP_NONE;
    }
    method_not_allowed(err, m, "BUCKET");
    return S3A_OP_NONE;
}

static int part_number(const char *v, s3a_error *err)
{
    char *end = NULL;
    long n = v && *v ? strtol(v, &end, 10) : 0;
    if (v == NULL || *v == '\0' || *end != '\0' || n < 1 || n > 10000) {
        s3a_error_set(err, 400, "InvalidArgument",
                      "Part number must be an integer between 1 and 10000, inclusive");
        s3a_error_extra(err, "ArgumentName", "partNumber", 10);
        if (v)
            s3a_error_extra(err, "ArgumentValue", v, strlen(v));
        return -1;
    }
    return (int)n;
}

static s3a_op object_op(const char *m, s3a_route *r, bool copy, s3a_error *err)
{
    const s3a_query *q = &r->query;
    const char *bad = unsupported_param(q);
    if (bad != NULL) {
        s3a_error_set(err, 501, "NotImplemented",
                      "The object sub-resource '%s' is not supported by this S3 endpoint", bad);
        return S3A_OP_NONE;
    }
    const char *upload = s3a_query_get(q, "uploadId");
    const char *part = s3a_query_get(q, "partNumber");
    r->upload_id = upload;
    if (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0) {
        if (upload != NULL && m[0] == 'G')
            return S3A_OP_LIST_PARTS;
        if (part != NULL) {
            s3a_error_set(err, 501, "NotImplemented",
                          "GetObject by partNumber is not supported by this S3 endpoint; ask "
                          "for a Range");
            return S3A_OP_NONE;
        }
        return m[0] == 'G' ? S3A_OP_GET_OBJECT : S3A_OP_HEAD_OBJECT;
    }
    if (strcmp(m, "PUT") == 0) {
        if (upload != NULL || part != NULL) {
            if (upload == NULL || upload[0] == '\0' || part == NULL) {
                s3a_error_set(err, 400, "InvalidRequest",
                              "UploadPart needs both partNumber and uploadId");
                return S3A_OP_NONE;
            }
            r->part_number = part_number(part, err);
            if (r->part_number < 0)
                return S3A_OP_NONE;
            return copy ? S3A_OP_UPLOAD_PART_COPY : S3A_OP_UPLOAD_PART;
        }
        return copy ? S3A_OP_COPY_OBJECT : S3A_OP_PUT_OBJECT;
    }
    if (strcmp(m, "POST") == 0) {
        if (s3a_query_find(q, "uploads"))
            return S3A_OP_CREATE_MULTIPART_UPLOAD;
        if (upload != NULL)
            return S3A_OP_COMPLETE_MULTIPART_UPLOAD;
        method_not_allowed(err, m, "OBJECT");
        return S3A_OP_NONE;
    }
    if (strcmp(m, "DELETE") == 0)
        return upload != NULL ? S3A_OP_ABORT_MULTIPART_UPLOAD : S3A_OP_DELETE_OBJECT;
    method_not_allowed(err, m, "OBJECT");
    return S3A_OP_NONE;
}

/* The bucket named by the Host under one of the domains, or NULL. */
static const char *vhost_bucket(const s3a_route_config *cfg, const char *host, size_t *len)
{
    if (cfg == NULL || host == NULL)
        return NULL;
    size_t hl = strlen(host);
    const char *colon = host[0] == '[' ? NULL : strrchr(host, ':');
    if (colon != NULL)
        hl = (size_t)(colon - host);
    while (hl > 0 && host[hl - 1] == '.')
        hl--; /* a fully qualified "bucket.domain." */
    for (size_t i = 0; i < cfg->n_domains; i++) {
        const char *d = cfg->domains[i];
        size_t dl = d ? strlen(d) : 0;
        if (dl == 0 || hl <= dl + 1)
            continue;
        if (host[hl - dl - 1] == '.' && strncasecmp(host + hl - dl, d, dl) == 0) {
            *len = hl - dl - 1;
            return host;
        }
    }
    return NULL;
}

int s3a_route_parse(const s3a_route_config *cfg, const char *method, const char *host,
                    const char *path, const char *query, bool has_copy_source, s3a_route *out,
                    s3a_error *err)
{
    memset(out, 0, sizeof *out);
    if (method == NULL || path == NULL || (path[0] != '/' && path[0] != '\0'))
        return s3a_error_set(err, 400, "InvalidURI", "Couldn't parse the specified URI.");
    int rc = s3a_query_parse(query, &out->query);
    if (rc < 0)
        return rc == -ENOMEM ? rc
                             : s3a_error_set(err, 400, "InvalidURI",
                                             "Couldn't parse the specified URI: a bad "
                                             "%%-escape in the query");
    const char *p = path[0] == '/' ? path + 1 : path;
    size_t blen = 0;
    const char *b = vhost_bucket(cfg, host, &blen);
    const char *rest;
    if (b != NULL) {
        out->virtual_host = true;
        rest = p;
    } else {
        /* path-style: the first segment is the bucket (never encoded in practice,
         * but decode it all the same) */
        const char *slash = strchr(p, '/');
        b = p;
        blen = slash ? (size_t)(slash - p) : strlen(p);
        rest = slash ? slash + 1 : p + blen;
    }
    if (blen == 0 && !out->virtual_host && rest[0] != '\0') {
        /* "//key": a key with no bucket before it */
        rc = s3a_error_set(err, 400, "InvalidBucketName", "The specified bucket is not valid.");
        s3a_error_extra(err, "BucketName", "", 0);
        return rc;
    }
    if (blen > 0) {
        char tmp[3 * S3A_BUCKET_MAX + 1];
        ssize_t n = blen < sizeof tmp ? s3a_pct_decode(b, blen, tmp) : -EINVAL;
        if (n < 0 || !s3a_bucket_name_valid(tmp, (size_t)n)) {
            rc = s3a_error_set(err, 400, "InvalidBucketName", "The specified bucket is not valid.");
            s3a_error_extra(err, "BucketName", b, blen < 200 ? blen : 200);
            return rc;
        }
        memcpy(out->bucket, tmp, (size_t)n + 1);
    }
    size_t klen = strlen(rest);
    if (klen > 0) {
        out->key = s3a_pct_decode_dup(rest, klen, &rc);
        if (out->key == NULL)
            return rc == -ENOMEM ? rc
                                 : s3a_error_set(err, 400, "InvalidURI",
                                                 "Couldn't parse the specified URI: a bad "
                                                 "%%-escape in the key");
        out->key_len = strlen(out->key);
        if (out->key_len > S3A_KEY_MAX)
            return s3a_error_set(err, 400, "KeyTooLongError", "Your key is too long");
    }

    if (out->bucket[0] == '\0') {
        if (strcmp(method, "GET") != 0) {
            method_not_allowed(err, method, "SERVICE");
            return -EINVAL;
        }
        out->op = S3A_OP_LIST_BUCKETS;
        return 0;
    }
    out->op = out->key ? object_op(method, out, has_copy_source, err) : bucket_op(method, out, err);
    if (out->op == S3A_OP_NONE)
        return err && err->status == 501 ? -ENOTSUP : -EINVAL;
    return 0;
}

void s3a_route_deinit(s3a_route *r)
{
    free(r->key);
    s3a_query_free(&r->query);
    memset(r, 0, sizeof *r);
}

const char *s3a_route_param(const s3a_route *r, const char *name)
{
    return s3a_query_get(&r->query, name);
}

int s3a_copy_source_parse(const char *value, char bucket[S3A_BUCKET_MAX + 1], char **key,
                          char **version_id, s3a_error *err)
{
    *key = NULL;
    *version_id = NULL;
    bucket[0] = '\0';
    const char *v = value ? value : "";
    if (*v == '/')
        v++;
    const char *q = strchr(v, '?');
    size_t len = q ? (size_t)(q - v) : strlen(v);
    int rc = 0;
    char *dec = s3a_pct_decode_dup(v, len, &rc);
    if (dec == NULL && rc == -ENOMEM)
        return rc;
    char *slash = dec ? strchr(dec, '/') : NULL;
    if (dec == NULL || slash == NULL || slash == dec || slash[1] == '\0' ||
        !s3a_bucket_name_valid(dec, (size_t)(slash - dec)) || strlen(slash + 1) > S3A_KEY_MAX) {
        free(dec);
        return s3a_error_set(err, 400, "InvalidArgument",
                             "Copy Source must mention the source bucket and key: "
                             "sourcebucket/sourcekey");
    }
    memcpy(bucket, dec, (size_t)(slash - dec));
    bucket[slash - dec] = '\0';
    *key = strdup(slash + 1);
    free(dec);
    if (*key == NULL)
        return -ENOMEM;
    if (q != NULL) {
        s3a_query vq;
        rc = s3a_query_parse(q + 1, &vq);
        if (rc == 0) {
            const char *vid = s3a_query_get(&vq, "versionId");
            if (vid != NULL && (*version_id = strdup(vid)) == NULL)
                rc = -ENOMEM;
            s3a_query_free(&vq);
        }
        if (rc < 0) {
            free(*key);
            *key = NULL;
            return rc == -ENOMEM ? rc
                                 : s3a_error_set(err, 400, "InvalidArgument",
                                                 "Copy Source must mention the source bucket "
                                                 "and key: sourcebucket/sourcekey");
        }
    }
    return 0;
}
