/* SPDX-License-Identifier: Apache-2.0
 *
 * s3a_route.h: which S3 operation a request is, from its method, Host, path
 * and query, in path-style (http://host/bucket/key) or virtual-hosted style
 * (http://bucket.domain/key, for the domains configured):
 *
 *   GET /                      ListBuckets
 *   GET|HEAD|PUT|DELETE bucket GetBucketLocation (?location), ListObjectsV2
 *                              (?list-type=2), ListMultipartUploads (?uploads),
 *                              ListObjects; HeadBucket; CreateBucket; DeleteBucket
 *   POST bucket?delete         DeleteObjects
 *   GET|HEAD key               GetObject, HeadObject, ListParts (?uploadId)
 *   PUT key                    PutObject, CopyObject (x-amz-copy-source),
 *                              UploadPart(Copy) (?partNumber&uploadId)
 *   POST key                   CreateMultipartUpload (?uploads),
 *                              CompleteMultipartUpload (?uploadId)
 *   DELETE key                 DeleteObject, AbortMultipartUpload (?uploadId)
 *
 * "/bkt" and "/bkt/" are both the bucket (awscli sends the first, the JS SDK
 * the second). Query parameters that only sign or tag the request (x-id from
 * the JS SDK, X-Amz-*, SigV2's three) are ignored; a sub-resource this API
 * does not serve (acl, tagging, versioning, lifecycle, ...) is 501
 * NotImplemented naming it; a method a resource does not take is 405.
 *
 * Thread-safety: pure; a route belongs to its caller. Fuzzed
 * (tests/fuzz/s3api/fuzz_s3a_route.c).
 */
#ifndef RINGCACHE_S3A_ROUTE_H
#define RINGCACHE_S3A_ROUTE_H

#include "s3a.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum s3a_op {
    S3A_OP_NONE = 0,
    S3A_OP_LIST_BUCKETS,
    S3A_OP_HEAD_BUCKET,
    S3A_OP_CREATE_BUCKET,
    S3A_OP_DELETE_BUCKET,
    S3A_OP_GET_BUCKET_LOCATION,
    S3A_OP_LIST_OBJECTS,
    S3A_OP_LIST_OBJECTS_V2,
    S3A_OP_LIST_MULTIPART_UPLOADS,
    S3A_OP_DELETE_OBJECTS,
    S3A_OP_GET_OBJECT,
    S3A_OP_HEAD_OBJECT,
    S3A_OP_PUT_OBJECT,
    S3A_OP_COPY_OBJECT,
    S3A_OP_DELETE_OBJECT,
    S3A_OP_CREATE_MULTIPART_UPLOAD,
    S3A_OP_UPLOAD_PART,
    S3A_OP_UPLOAD_PART_COPY,
    S3A_OP_COMPLETE_MULTIPART_UPLOAD,
    S3A_OP_ABORT_MULTIPART_UPLOAD,
    S3A_OP_LIST_PARTS,
    S3A_OP__COUNT
} s3a_op;

/* "GetObject", as S3 names it (metrics labels); "Unknown" out of range. */
const char *s3a_op_name(s3a_op op);

typedef struct s3a_route_config {
    const char *const *domains; /* virtual-host domains, e.g. "s3.example.com" */
    size_t n_domains;
} s3a_route_config;

typedef struct s3a_route {
    s3a_op op;
    bool virtual_host;               /* the bucket came from the Host */
    char bucket[S3A_BUCKET_MAX + 1]; /* "" for ListBuckets */
    char *key;                       /* decoded, malloc'd; NULL for bucket and
                                          service operations */
    size_t key_len;
    s3a_query query;       /* every parameter, decoded */
    int part_number;       /* UploadPart(Copy): 1..10000 */
    const char *upload_id; /* in query: multipart operations */
} s3a_route;

/* Routes a request. host: the Host header (with or without :port; NULL is
 * path-style); path and query raw as sent; has_copy_source: the request
 * carries x-amz-copy-source. 0 with *out filled (free with
 * s3a_route_deinit, also on error); < 0 with err: 400 InvalidURI (bad
 * escape), InvalidBucketName, KeyTooLongError, InvalidArgument (list-type,
 * partNumber), InvalidRequest; 405 MethodNotAllowed; 501 NotImplemented. */
int s3a_route_parse(const s3a_route_config *cfg, const char *method, const char *host,
                    const char *path, const char *query, bool has_copy_source, s3a_route *out,
                    s3a_error *err);
void s3a_route_deinit(s3a_route *r);

/* A parameter's decoded value ("" when sent without '='), NULL when absent. */
const char *s3a_route_param(const s3a_route *r, const char *name);

/* S3's bucket naming rules: 3-63 characters of a-z 0-9 . -, starting and
 * ending with a letter or digit, no "..", not an IPv4 address. */
bool s3a_bucket_name_valid(const char *name, size_t len);

/* x-amz-copy-source "[/]bucket/key[?versionId=v]": percent-decoded ('+'
 * stays '+', as S3 reads it), into bucket and a malloc'd *key (and
 * *version_id, NULL without). 0, or < 0 with 400 InvalidArgument "Copy
 * Source must mention the source bucket and key: sourcebucket/sourcekey". */
int s3a_copy_source_parse(const char *value, char bucket[S3A_BUCKET_MAX + 1], char **key,
                          char **version_id, s3a_error *err);

#ifdef __cplusplus
}
#endif
#endif /* RINGCACHE_S3A_ROUTE_H */
