/* SPDX-License-Identifier: Apache-2.0
 *
 * test_s3a_route.c: the S3 request router (cached/s3api/s3a_route.h) on the
 * requests awscli 2.9, boto3 and the JS SDK send (their observed wire forms:
 * "/bkt" vs "/bkt/", "?uploads" vs "?uploads=", x-id, unsorted parameters,
 * encoded keys), virtual-hosted addressing under a configured domain, and
 * each refusal (unsupported sub-resources, wrong methods, bad bucket names,
 * long keys, bad escapes, bad part numbers); x-amz-copy-source parsing.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "s3a_route.h"

static const char *const domains[] = {"s3.example.com", "localhost"};
static const s3a_route_config cfg = {.domains = domains, .n_domains = 2};

typedef struct rcase {
    const char *method, *host, *path, *query;
    bool copy;
    s3a_op op;
    const char *bucket, *key;
} rcase;

static void test_operations(void **state)
{
    (void)state;
    const rcase cases[] = {
        {"GET", "127.0.0.1:9000", "/", "", false, S3A_OP_LIST_BUCKETS, "", NULL},
        {"GET", "127.0.0.1:9000", "/", "x-id=ListBuckets", false, S3A_OP_LIST_BUCKETS, "", NULL},
        {"GET", "h", "/bkt", "list-type=2&prefix=&encoding-type=url", false, S3A_OP_LIST_OBJECTS_V2,
         "bkt", NULL},
        {"GET", "h", "/bkt/", "delimiter=%2F&list-type=2&max-keys=10&prefix=p%2F", false,
         S3A_OP_LIST_OBJECTS_V2, "bkt", NULL},
        {"GET", "h", "/bkt", "location", false, S3A_OP_GET_BUCKET_LOCATION, "bkt", NULL},
        {"GET", "h", "/bkt", "uploads", false, S3A_OP_LIST_MULTIPART_UPLOADS, "bkt", NULL},
        {"GET", "h", "/bkt/", "marker=m", false, S3A_OP_LIST_OBJECTS, "bkt", NULL},
        {"GET", "h", "/bkt", "prefix=p%2F&delimiter=%2F&encoding-type=url", false,
         S3A_OP_LIST_OBJECTS, "bkt", NULL},
        {"HEAD", "h", "/bkt/", "", false, S3A_OP_HEAD_BUCKET, "bkt", NULL},
        {"PUT", "h", "/bkt", "", false, S3A_OP_CREATE_BUCKET, "bkt", NULL},
        {"DELETE", "h", "/bkt", "", false, S3A_OP_DELETE_BUCKET, "bkt", NULL},
        {"POST", "h", "/bkt", "delete", false, S3A_OP_DELETE_OBJECTS, "bkt", NULL},
        {"POST", "h", "/bkt/", "delete=", false, S3A_OP_DELETE_OBJECTS, "bkt", NULL},
        {"GET", "h", "/bkt/k", "x-id=GetObject", false, S3A_OP_GET_OBJECT, "bkt", "k"},
        {"HEAD", "h", "/bkt/k", "", false, S3A_OP_HEAD_OBJECT, "bkt", "k"},
        {"PUT", "h", "/bkt/k", "x-id=PutObject", false, S3A_OP_PUT_OBJECT, "bkt", "k"},
        {"PUT", "h", "/bkt/k", "", true, S3A_OP_COPY_OBJECT, "bkt", "k"},
        {"PUT", "h", "/bkt/k", "uploadId=UPID&partNumber=3", false, S3A_OP_UPLOAD_PART, "bkt", "k"},
        {"PUT", "h", "/bkt/k", "partNumber=3&uploadId=UPID&x-id=UploadPart", true,
         S3A_OP_UPLOAD_PART_COPY, "bkt", "k"},
        {"POST", "h", "/bkt/k", "uploads", false, S3A_OP_CREATE_MULTIPART_UPLOAD, "bkt", "k"},
        {"POST", "h", "/bkt/k", "uploads=&x-id=CreateMultipartUpload", false,
         S3A_OP_CREATE_MULTIPART_UPLOAD, "bkt", "k"},
        {"POST", "h", "/bkt/k", "uploadId=UPID", false, S3A_OP_COMPLETE_MULTIPART_UPLOAD, "bkt",
         "k"},
        {"DELETE", "h", "/bkt/k", "uploadId=UPID", false, S3A_OP_ABORT_MULTIPART_UPLOAD, "bkt",
         "k"},
        {"DELETE", "h", "/bkt/k", "", false, S3A_OP_DELETE_OBJECT, "bkt", "k"},
        {"GET", "h", "/bkt/k", "uploadId=UPID&max-parts=10", false, S3A_OP_LIST_PARTS, "bkt", "k"},
        /* keys as awscli and the JS SDK encode them */
        {"GET", "h", "/bkt/a%20b/c%2Bd~e%21.txt", "", false, S3A_OP_GET_OBJECT, "bkt",
         "a b/c+d~e!.txt"},
        {"PUT", "h", "/bkt/a%20b/k%2B1", "x-id=PutObject", false, S3A_OP_PUT_OBJECT, "bkt",
         "a b/k+1"},
        {"GET", "h", "/bkt/dir/", "", false, S3A_OP_GET_OBJECT, "bkt", "dir/"},
        {"GET", "h", "/bkt//double", "", false, S3A_OP_GET_OBJECT, "bkt", "/double"},
        {"GET", "h", "/bkt/caf%C3%A9", "", false, S3A_OP_GET_OBJECT, "bkt", "caf\xc3\xa9"},
        /* presigned URLs: their parameters sign, they do not route */
        {"GET", "h", "/bkt/k", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=00", false,
         S3A_OP_GET_OBJECT, "bkt", "k"},
        {"GET", "h", "/bkt/k", "AWSAccessKeyId=a&Signature=b&Expires=1", false, S3A_OP_GET_OBJECT,
         "bkt", "k"},
        /* virtual-hosted under a configured domain, path-style otherwise */
        {"GET", "bkt.s3.example.com:9000", "/key/x", "", false, S3A_OP_GET_OBJECT, "bkt", "key/x"},
        {"GET", "my.bucket.s3.example.com", "/", "list-type=2", false, S3A_OP_LIST_OBJECTS_V2,
         "my.bucket", NULL},
        {"GET", "BKT.S3.EXAMPLE.COM", "/k", "", false, S3A_OP_NONE, NULL, NULL},
        {"GET", "s3.example.com", "/bkt/key", "", false, S3A_OP_GET_OBJECT, "bkt", "key"},
        {"GET", "bkt.localhost:1234", "", "", false, S3A_OP_LIST_OBJECTS, "bkt", NULL},
        {"GET", "127.0.0.1:9000", "/bkt/key", "", false, S3A_OP_GET_OBJECT, "bkt", "key"},
        {"GET", NULL, "/bkt/key", "", false, S3A_OP_GET_OBJECT, "bkt", "key"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const rcase *c = &cases[i];
        s3a_route r;
        s3a_error e = {0};
        int rc = s3a_route_parse(&cfg, c->method, c->host, c->path, c->query, c->copy, &r, &e);
        if (c->op == S3A_OP_NONE) {
            /* upper case in a bucket name: invalid */
            assert_int_equal(rc, -EINVAL);
            assert_string_equal(e.code, "InvalidBucketName");
        } else {
            if (rc != 0)
                fprintf(stderr, "case %zu: %s %s?%s: %s\n", i, c->method, c->path, c->query,
                        e.message);
            assert_int_equal(rc, 0);
            assert_int_equal(r.op, c->op);
            assert_string_equal(r.bucket, c->bucket);
            if (c->key == NULL)
                assert_null(r.key);
            else
                assert_string_equal(r.key, c->key);
        }
        s3a_route_deinit(&r);
        s3a_error_deinit(&e);
    }
}

static void test_params(void **state)
{
    (void)state;
    s3a_route r;
    s3a_error e = {0};
    assert_int_equal(s3a_route_parse(&cfg, "PUT", "h", "/bkt/k", "uploadId=a%2Bb&partNumber=10000",
                                     false, &r, &e),
                     0);
    assert_int_equal(r.part_number, 10000);
    assert_string_equal(r.upload_id, "a+b");
    s3a_route_deinit(&r);
    assert_int_equal(s3a_route_parse(&cfg, "GET", "h", "/bkt",
                                     "list-type=2&prefix=a%20b&"
                                     "continuation-token=tok%3D&fetch-owner",
                                     false, &r, &e),
                     0);
    assert_string_equal(s3a_route_param(&r, "prefix"), "a b");
    assert_string_equal(s3a_route_param(&r, "continuation-token"), "tok=");
    assert_string_equal(s3a_route_param(&r, "fetch-owner"), "");
    assert_null(s3a_route_param(&r, "delimiter"));
    assert_string_equal(s3a_op_name(r.op), "ListObjectsV2");
    s3a_route_deinit(&r);
    assert_string_equal(s3a_op_name(S3A_OP__COUNT), "Unknown");
    s3a_error_deinit(&e);
}

typedef struct ecase {
    const char *method, *path, *query;
    int rc, status;
    const char *code, *msg;
} ecase;

static void test_refusals(void **state)
{
    (void)state;
    char longkey[1100] = "/bkt/";
    memset(longkey + 5, 'k', 1025);
    longkey[1030] = '\0';
    const ecase cases[] = {
        {"GET", "/bkt", "acl", -ENOTSUP, 501, "NotImplemented", "'acl'"},
        {"PUT", "/bkt/k", "tagging", -ENOTSUP, 501, "NotImplemented", "'tagging'"},
        {"GET", "/bkt/k", "versionId=3", -ENOTSUP, 501, "NotImplemented", "'versionId'"},
        {"GET", "/bkt", "versioning", -ENOTSUP, 501, "NotImplemented", "'versioning'"},
        {"GET", "/bkt/k", "partNumber=1", -ENOTSUP, 501, "NotImplemented", "partNumber"},
        {"POST", "/bkt", "", -ENOTSUP, 501, "NotImplemented", "browser"},
        {"PATCH", "/bkt/k", "", -EINVAL, 405, "MethodNotAllowed", "not allowed"},
        {"POST", "/bkt/k", "", -EINVAL, 405, "MethodNotAllowed", "not allowed"},
        {"PUT", "/", "", -EINVAL, 405, "MethodNotAllowed", "not allowed"},
        {"OPTIONS", "/bkt", "", -EINVAL, 405, "MethodNotAllowed", "not allowed"},
        {"GET", "/ab/k", "", -EINVAL, 400, "InvalidBucketName", "not valid"},
        {"GET", "/Bucket/k", "", -EINVAL, 400, "InvalidBucketName", "not valid"},
        {"GET", "/192.168.1.1/k", "", -EINVAL, 400, "InvalidBucketName", "not valid"},
        {"GET", "/a..b/k", "", -EINVAL, 400, "InvalidBucketName", "not valid"},
        {"GET", "/-abc/k", "", -EINVAL, 400, "InvalidBucketName", "not valid"},
        {"GET", "//k", "", -EINVAL, 400, "InvalidBucketName",
         "not valid"}, /* found by fuzz_s3a_route */
        {"GET", longkey, "", -EINVAL, 400, "KeyTooLongError", "too long"},
        {"GET", "/bkt/%zz", "", -EINVAL, 400, "InvalidURI", "escape"},
        {"GET", "/bkt/a%00b", "", -EINVAL, 400, "InvalidURI", "escape"},
        {"GET", "/bkt", "prefix=%", -EINVAL, 400, "InvalidURI", "escape"},
        {"GET", "bkt", "", -EINVAL, 400, "InvalidURI", "parse"},
        {"GET", "/bkt", "list-type=1", -EINVAL, 400, "InvalidArgument", "list-type"},
        {"PUT", "/bkt/k", "uploadId=U&partNumber=0", -EINVAL, 400, "InvalidArgument",
         "between 1 and 10000"},
        {"PUT", "/bkt/k", "uploadId=U&partNumber=10001", -EINVAL, 400, "InvalidArgument",
         "between"},
        {"PUT", "/bkt/k", "uploadId=U&partNumber=2x", -EINVAL, 400, "InvalidArgument", "between"},
        {"PUT", "/bkt/k", "partNumber=2", -EINVAL, 400, "InvalidRequest", "both"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const ecase *c = &cases[i];
        s3a_route r;
        s3a_error e = {0};
        int rc = s3a_route_parse(&cfg, c->method, "h", c->path, c->query, false, &r, &e);
        if (rc != c->rc || e.code == NULL || strcmp(e.code, c->code) != 0)
            fprintf(stderr, "case %zu: %s %s?%s: rc %d %s\n", i, c->method, c->path, c->query, rc,
                    e.message);
        assert_int_equal(rc, c->rc);
        assert_int_equal(e.status, c->status);
        assert_string_equal(e.code, c->code);
        assert_non_null(strstr(e.message, c->msg));
        s3a_route_deinit(&r);
        s3a_error_deinit(&e);
    }
}

static void test_copy_source(void **state)
{
    (void)state;
    char b[S3A_BUCKET_MAX + 1];
    char *k, *v;
    s3a_error e = {0};
    /* the JS SDK passes it raw, with a space and a '+' */
    assert_int_equal(s3a_copy_source_parse("bkt/src key+1", b, &k, &v, &e), 0);
    assert_string_equal(b, "bkt");
    assert_string_equal(k, "src key+1");
    assert_null(v);
    free(k);
    /* botocore encodes it */
    assert_int_equal(s3a_copy_source_parse("/bkt/a%20b/c?versionId=v%2B1", b, &k, &v, &e), 0);
    assert_string_equal(k, "a b/c");
    assert_string_equal(v, "v+1");
    free(k);
    free(v);
    const char *bad[] = {"nokey", "bkt/", "/", "", "Bad_Bucket/k", "bkt/%zz"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(s3a_copy_source_parse(bad[i], b, &k, &v, &e), -EINVAL);
        assert_non_null(strstr(e.message, "sourcebucket/sourcekey"));
        assert_null(k);
    }
    s3a_error_deinit(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_operations),
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_copy_source),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
