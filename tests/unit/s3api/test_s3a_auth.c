/* SPDX-License-Identifier: Apache-2.0
 *
 * test_s3a_auth.c: the S3 API's signature verification (cached/s3api/
 * s3a_auth.h) against AWS's published examples (the four "Authorization
 * header" examples, the presigned-URL example, the streaming examples' seed
 * requests, the SigV2 query-string example), and each refusal S3 gives:
 * wrong secret, unknown key, clock skew, expired and early presigned URLs,
 * bad parameters, unsorted or incomplete SignedHeaders, a tampered header, a
 * strict region, two mechanisms at once, SigV2 and SigV4a headers; the
 * signing-key cache across a secret change.
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

#include "s3_sigv4.h"
#include "s3a_auth.h"

#define AK        "AKIAIOSFODNN7EXAMPLE"
#define SK        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define HOST      "examplebucket.s3.amazonaws.com"
#define DATE      "20130524T000000Z"
#define T0        1369353600 /* 2013-05-24T00:00:00Z */
#define CRED      "Credential=" AK "/20130524/us-east-1/s3/aws4_request"

static const char *current_secret = SK;
static int lookups;

static int lookup(void *arg, const char *akid, char *secret, size_t cap, void **principal)
{
    lookups++;
    if (strcmp(akid, AK) != 0)
        return -ENOENT;
    snprintf(secret, cap, "%s", current_secret);
    *principal = arg;
    return 0;
}

static int tenant_marker;

static s3a_verifier *make(bool strict, const char *region)
{
    s3a_auth_config cfg = {
        .secret = lookup, .secret_arg = &tenant_marker, .region = region, .strict_region = strict};
    s3a_verifier *v;
    assert_int_equal(s3a_verifier_create(&v, &cfg), 0);
    return v;
}

static int run(s3a_verifier *v, const char *method, const char *path, const char *query,
               const s3a_header *h, size_t nh, int64_t now, s3a_auth *a, s3a_error *e)
{
    s3a_request r = {.method = method, .path = path, .query = query, .headers = h, .n_headers = nh};
    return s3a_verify(v, &r, now, a, e);
}

static const char *extra(const s3a_error *e, const char *name)
{
    for (int i = 0; i < e->n_extra; i++)
        if (strcmp(e->extra[i].name, name) == 0)
            return e->extra[i].value;
    return NULL;
}

/* ---- AWS's examples ----------------------------------------------------------- */

static const s3a_header get_range[] = {
    {"Host", HOST},
    {"Range", "bytes=0-9"},
    {"x-amz-content-sha256", EMPTY_SHA},
    {"x-amz-date", DATE},
    {"Authorization", "AWS4-HMAC-SHA256 " CRED ",SignedHeaders=host;range;x-amz-content-sha256;"
                      "x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd9"
                      "1039c6036bdb41"},
};

static void test_aws_header_examples(void **state)
{
    (void)state;
    s3a_verifier *v = make(false, NULL);
    s3a_auth a;
    s3a_error e = {0};
    assert_int_equal(run(v, "GET", "/test.txt", "", get_range, 5, T0, &a, &e), 0);
    assert_int_equal(a.kind, S3A_AUTH_SIGV4);
    assert_string_equal(a.access_key, AK);
    assert_ptr_equal(a.principal, &tenant_marker);
    assert_int_equal(a.payload, S3A_PAYLOAD_SHA256);
    assert_string_equal(a.payload_sha256, EMPTY_SHA);
    assert_string_equal(a.scope, "20130524/us-east-1/s3/aws4_request");

    /* PUT with a Date header beside x-amz-date, a key that needs encoding */
    const s3a_header put[] = {
        {"Host", HOST},
        {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
        {"x-amz-date", DATE},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
        {"x-amz-content-sha256",
         "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"},
        {"Content-Length", "21"},
        {"Authorization", "AWS4-HMAC-SHA256 " CRED ",SignedHeaders=date;host;x-amz-content-sha256;"
                          "x-amz-date;x-amz-storage-class,Signature=98ad721746da40c64f1a55b78f14c2"
                          "38d841ea1380cd77a1b5971af0ece108bd"},
    };
    assert_int_equal(run(v, "PUT", "/test%24file.text", "", put, 7, T0, &a, &e), 0);
    /* the same key sent unencoded canonicalises the same */
    assert_int_equal(run(v, "PUT", "/test$file.text", "", put, 7, T0, &a, &e), 0);

    const s3a_header base[] = {
        {"Host", HOST},
        {"x-amz-date", DATE},
        {"x-amz-content-sha256", EMPTY_SHA},
        {"Authorization", "AWS4-HMAC-SHA256 " CRED ", SignedHeaders=host;x-amz-content-sha256;"
                          "x-amz-date, Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91"
                          "ac7a200a0136783543"},
    };
    /* a parameter without '=' is "lifecycle=" */
    assert_int_equal(run(v, "GET", "/", "lifecycle", base, 4, T0, &a, &e), 0);
    assert_int_equal(run(v, "GET", "/", "lifecycle=", base, 4, T0, &a, &e), 0);
    const s3a_header list[] = {
        base[0],
        base[1],
        base[2],
        {"Authorization", "AWS4-HMAC-SHA256 " CRED ",SignedHeaders=host;x-amz-content-sha256;"
                          "x-amz-date,Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db667"
                          "0ed5711ef69dc6f7"},
    };
    /* sent unsorted, as awscli does */
    assert_int_equal(run(v, "GET", "/", "prefix=J&max-keys=2", list, 4, T0, &a, &e), 0);
    assert_null(e.code);
    s3a_verifier_destroy(&v);
    assert_null(v);
}

static void test_aws_streaming_seeds(void **state)
{
    (void)state;
    s3a_verifier *v = make(false, NULL);
    s3a_auth a;
    s3a_error e = {0};
    const s3a_header h[] = {
        {"Host", "s3.amazonaws.com"},
        {"x-amz-date", DATE},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
        {"Authorization", "AWS4-HMAC-SHA256 " CRED ",SignedHeaders=content-encoding;content-length;"
                          "host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;"
                          "x-amz-storage-class,Signature=4f232c4386841ef735655705268965c44a0e469"
                          "0baa4adea153f7db9fa80a0a9"},
        {"x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"},
        {"Content-Encoding", "aws-chunked"},
        {"x-amz-decoded-content-length", "66560"},
        {"Content-Length", "66824"},
    };
    assert_int_equal(run(v, "PUT", "/examplebucket/chunkObject.txt", "", h, 8, T0, &a, &e), 0);
    assert_int_equal(a.payload, S3A_PAYLOAD_STREAMING_SIGNED);
    assert_string_equal(a.seed_signature,
                        "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
    assert_string_equal(a.amz_date, DATE);
    unsigned char want[32];
    assert_int_equal(s3__sigv4_signing_key(SK, "20130524", "us-east-1", "s3", want), 0);
    assert_memory_equal(a.signing_key, want, 32);

    const s3a_header t[] = {
        {"Host", "s3.amazonaws.com"},
        {"x-amz-date", DATE},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
        {"x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"},
        {"Content-Encoding", "aws-chunked"},
        {"x-amz-decoded-content-length", "66560"},
        {"x-amz-trailer", "x-amz-checksum-crc32c"},
        {"Content-Length", "66946"},
        {"Authorization", "AWS4-HMAC-SHA256 " CRED ",SignedHeaders=content-encoding;host;"
                          "x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;"
                          "x-amz-storage-class;x-amz-trailer,Signature=106e2a8a18243abcf3753988"
                          "2f36619c00e2dfc72633413f02d3b74544bfeb8e"},
    };
    assert_int_equal(run(v, "PUT", "/examplebucket/chunkObject.txt", "", t, 9, T0, &a, &e), 0);
    assert_int_equal(a.payload, S3A_PAYLOAD_STREAMING_SIGNED_TRAILER);
    s3a_verifier_destroy(&v);
}

#define PRESIGN_Q                                                                                  \
    "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK "%2F20130524%2Fus-east-1%2Fs3%2F"      \
    "aws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"        \
    "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"

static void test_aws_presigned(void **state)
{
    (void)state;
    s3a_verifier *v = make(false, NULL);
    s3a_auth a;
    s3a_error e = {0};
    const s3a_header h[] = {{"Host", HOST}};
    /* valid for a day: at any time in it, skew does not matter */
    assert_int_equal(run(v, "GET", "/test.txt", PRESIGN_Q, h, 1, T0 + 86000, &a, &e), 0);
    assert_int_equal(a.kind, S3A_AUTH_SIGV4_QUERY);
    assert_int_equal(a.payload, S3A_PAYLOAD_UNSIGNED);
    /* a day and a second later: expired, with S3's extra elements */
    assert_int_equal(run(v, "GET", "/test.txt", PRESIGN_Q, h, 1, T0 + 86401, &a, &e), -EACCES);
    assert_string_equal(e.code, "AccessDenied");
    assert_string_equal(e.message, "Request has expired");
    assert_string_equal(extra(&e, "X-Amz-Expires"), "86400");
    assert_string_equal(extra(&e, "Expires"), "2013-05-25T00:00:00Z");
    /* not valid yet: an hour before its date */
    assert_int_equal(run(v, "GET", "/test.txt", PRESIGN_Q, h, 1, T0 - 3600, &a, &e), -EACCES);
    assert_string_equal(e.message, "Request is not valid yet");
    /* another path */
    assert_int_equal(run(v, "GET", "/test2.txt", PRESIGN_Q, h, 1, T0, &a, &e), -EACCES);
    assert_string_equal(e.code, "SignatureDoesNotMatch");
    /* a parameter added after signing */
    assert_int_equal(run(v, "GET", "/test.txt", PRESIGN_Q "&x=1", h, 1, T0, &a, &e), -EACCES);
    assert_string_equal(e.code, "SignatureDoesNotMatch");
    s3a_error_deinit(&e);

    struct {
        const char *q;
        const char *msg;
    } bad[] = {
        {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=00", "requires the X-Amz-Algorithm"},
        {"X-Amz-Algorithm=AWS4-HMAC-SHA1&X-Amz-Credential=a%2F20130524%2Fus-east-1%2Fs3%2F"
         "aws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=1&X-Amz-SignedHeaders=host&"
         "X-Amz-Signature=00",
         "only supports"},
        {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=a%2F20130524%2Fus-east-1%2Fs3%2F"
         "aws4_request&X-Amz-Date=2013-05-24&X-Amz-Expires=1&X-Amz-SignedHeaders=host&"
         "X-Amz-Signature=00",
         "ISO8601"},
        {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=a%2F20130524%2Fus-east-1%2Fs3%2F"
         "aws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=soon&X-Amz-SignedHeaders=host&"
         "X-Amz-Signature=00",
         "should be a number"},
        {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=a%2F20130524%2Fus-east-1%2Fs3%2F"
         "aws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=604801&X-Amz-SignedHeaders=host&"
         "X-Amz-Signature=00",
         "less than a week"},
        {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=a%2F20130524%2Fus-east-1%2Fec2%2F"
         "aws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=1&X-Amz-SignedHeaders=host&"
         "X-Amz-Signature=00",
         "/s3/aws4_request"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(run(v, "GET", "/k", bad[i].q, h, 1, T0, &a, &e), -EINVAL);
        assert_string_equal(e.code, "AuthorizationQueryParametersError");
        assert_non_null(strstr(e.message, bad[i].msg));
        s3a_error_deinit(&e);
    }
    s3a_verifier_destroy(&v);
}

/* AWS's query-string example for Signature Version 2 (virtual-hosted). */
static void test_sigv2_query(void **state)
{
    (void)state;
    s3a_verifier *v = make(false, NULL);
    s3a_auth a;
    s3a_error e = {0};
    const s3a_header h[] = {{"Host", "awsexamplebucket1.s3.us-west-1.amazonaws.com"}};
    const char *q =
        "AWSAccessKeyId=" AK "&Expires=1175139620&Signature=1No4mq5ETf02z8aet9voy6gui6E%3D";
    s3a_request r = {.method = "GET",
                     .path = "/photos/puppy.jpg",
                     .query = q,
                     .headers = h,
                     .n_headers = 1,
                     .vhost_bucket = "awsexamplebucket1"};
    assert_int_equal(s3a_verify(v, &r, 1175139000, &a, &e), 0);
    assert_int_equal(a.kind, S3A_AUTH_SIGV2_QUERY);
    assert_string_equal(a.access_key, AK);
    /* the same URL once Expires has passed */
    assert_int_equal(s3a_verify(v, &r, 1175139621, &a, &e), -EACCES);
    assert_string_equal(e.message, "Request has expired");
    assert_string_equal(extra(&e, "Expires"), "2007-03-29T03:40:20Z");
    /* path-style: the bucket is in the path; a wrong signature names the string signed */
    r.vhost_bucket = NULL;
    assert_int_equal(s3a_verify(v, &r, 1175139000, &a, &e), -EACCES);
    assert_string_equal(e.code, "SignatureDoesNotMatch");
    assert_string_equal(extra(&e, "StringToSign"), "GET\n\n\n1175139620\n/photos/puppy.jpg");
    /* turned off */
    s3a_auth_config cfg = {.secret = lookup, .no_sigv2 = true};
    s3a_verifier *off;
    assert_int_equal(s3a_verifier_create(&off, &cfg), 0);
    r.vhost_bucket = "awsexamplebucket1";
    assert_int_equal(s3a_verify(off, &r, 1175139000, &a, &e), -EINVAL);
    assert_non_null(strstr(e.message, "signature_version='s3v4'"));
    s3a_error_deinit(&e);
    s3a_verifier_destroy(&off);
    s3a_verifier_destroy(&v);
}

/* ---- refusals --------------------------------------------------------------------- */

/* get_range with one header changed. */
static void with(s3a_header *h, const char *name, const char *value)
{
    memcpy(h, get_range, sizeof get_range);
    for (int i = 0; i < 5; i++)
        if (strcmp(h[i].name, name) == 0)
            h[i].value = value;
}

static void test_refusals(void **state)
{
    (void)state;
    s3a_verifier *v = make(false, NULL);
    s3a_auth a;
    s3a_error e = {0};
    s3a_header h[5];

    current_secret = "not-the-secret";
    assert_int_equal(run(v, "GET", "/test.txt", "", get_range, 5, T0, &a, &e), -EACCES);
    assert_string_equal(e.code, "SignatureDoesNotMatch");
    assert_int_equal(e.status, 403);
    assert_non_null(strstr(extra(&e, "CanonicalRequest"), "range:bytes=0-9\n"));
    assert_non_null(strstr(extra(&e, "StringToSign"), "AWS4-HMAC-SHA256\n" DATE "\n"));
    assert_null(strstr(extra(&e, "CanonicalRequest"), "not-the-secret"));
    current_secret = SK;

    with(h, "Range", "bytes=0-10");
    assert_int_equal(run(v, "GET", "/test.txt", "", h, 5, T0, &a, &e), -EACCES);
    assert_string_equal(e.code, "SignatureDoesNotMatch");

    with(h, "Authorization",
         "AWS4-HMAC-SHA256 Credential=NOBODY/20130524/us-east-1/s3/"
         "aws4_request,SignedHeaders=host;range;x-amz-content-sha256;"
         "x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170"
         "aba48dd91039c6036bdb41");
    assert_int_equal(run(v, "GET", "/test.txt", "", h, 5, T0, &a, &e), -EACCES);
    assert_string_equal(e.code, "InvalidAccessKeyId");
    assert_string_equal(extra(&e, "AWSAccessKeyId"), "NOBODY");

    /* 14 minutes off is fine, 16 is not */
    assert_int_equal(run(v, "GET", "/test.txt", "", get_range, 5, T0 + 14 * 60, &a, &e), 0);
    assert_int_equal(run(v, "GET", "/test.txt", "", get_range, 5, T0 - 16 * 60, &a, &e), -EACCES);
    assert_string_equal(e.code, "RequestTimeTooSkewed");
    assert_string_equal(extra(&e, "MaxAllowedSkewMilliseconds"), "900000");
    assert_string_equal(extra(&e, "RequestTime"), DATE);

    with(h, "Authorization",
         "AWS4-HMAC-SHA256 " CRED ",SignedHeaders=range;host;"
         "x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35"
         "b5d6ed310bd44f0170aba48dd91039c6036bdb41");
    assert_int_equal(run(v, "GET", "/test.txt", "", h, 5, T0, &a, &e), -EACCES);
    assert_string_equal(e.code, "SignatureDoesNotMatch");

    with(h, "Authorization",
         "AWS4-HMAC-SHA256 " CRED ",SignedHeaders=host;if-match;range;"
         "x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35"
         "b5d6ed310bd44f0170aba48dd91039c6036bdb41");
    assert_int_equal(run(v, "GET", "/test.txt", "", h, 5, T0, &a, &e), -EACCES);
    assert_non_null(strstr(e.message, "'if-match' is not in the request"));

    with(h, "Authorization",
         "AWS4-HMAC-SHA256 " CRED ",SignedHeaders=range;x-amz-content-sha256;"
         "x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba4"
         "8dd91039c6036bdb41");
    assert_int_equal(run(v, "GET", "/test.txt", "", h, 5, T0, &a, &e), -EACCES);
    assert_non_null(strstr(e.message, "host header to be signed"));

    with(h, "Authorization", "AWS4-HMAC-SHA256 " CRED ",Signature=f0e8");
    assert_int_equal(run(v, "GET", "/test.txt", "", h, 5, T0, &a, &e), -EINVAL);
    assert_string_equal(e.code, "AuthorizationHeaderMalformed");

    with(h, "Authorization",
         "AWS4-HMAC-SHA256 Credential=" AK "/20130525/us-east-1/s3/"
         "aws4_request,SignedHeaders=host,Signature=00");
    assert_int_equal(run(v, "GET", "/test.txt", "", h, 5, T0, &a, &e), -EINVAL);
    assert_non_null(strstr(e.message, "Invalid credential date"));

    with(h, "x-amz-date", "yesterday");
    assert_int_equal(run(v, "GET", "/test.txt", "", h, 5, T0, &a, &e), -EACCES);
    assert_non_null(strstr(e.message, "valid Date or x-amz-date"));

    with(h, "x-amz-content-sha256", "SOMETHING");
    assert_int_equal(run(v, "GET", "/test.txt", "", h, 5, T0, &a, &e), -EINVAL);
    assert_string_equal(e.code, "InvalidArgument");

    with(h, "Authorization", "AWS AKID:c2lnbmF0dXJl");
    assert_int_equal(run(v, "GET", "/test.txt", "", h, 5, T0, &a, &e), -EINVAL);
    assert_non_null(strstr(e.message, "Signature Version 4"));
    with(h, "Authorization", "AWS4-ECDSA-P256-SHA256 Credential=x");
    assert_int_equal(run(v, "GET", "/test.txt", "", h, 5, T0, &a, &e), -ENOTSUP);
    assert_int_equal(e.status, 501);
    with(h, "Authorization", "Bearer xyz");
    assert_int_equal(run(v, "GET", "/test.txt", "", h, 5, T0, &a, &e), -EINVAL);
    assert_string_equal(e.code, "InvalidRequest");

    assert_int_equal(run(v, "GET", "/test.txt", PRESIGN_Q, get_range, 5, T0, &a, &e), -EINVAL);
    assert_non_null(strstr(e.message, "Only one auth mechanism"));

    assert_int_equal(run(v, "GET", "/test.txt", "a=%zz", get_range, 5, T0, &a, &e), -EINVAL);
    assert_string_equal(e.code, "InvalidURI");
    assert_int_equal(run(v, "GET", "/te%00st.txt", "", get_range, 5, T0, &a, &e), -EINVAL);
    assert_string_equal(e.code, "InvalidURI");

    /* no credentials at all: anonymous, the caller decides */
    const s3a_header anon[] = {{"Host", HOST}};
    assert_int_equal(run(v, "GET", "/test.txt", "", anon, 1, T0, &a, &e), 0);
    assert_int_equal(a.kind, S3A_AUTH_ANONYMOUS);
    s3a_error_deinit(&e);
    s3a_verifier_destroy(&v);
}

static void test_region(void **state)
{
    (void)state;
    s3a_auth a;
    s3a_error e = {0};
    s3a_verifier *v = make(true, "eu-west-1");
    assert_int_equal(run(v, "GET", "/test.txt", "", get_range, 5, T0, &a, &e), -EINVAL);
    assert_string_equal(e.code, "AuthorizationHeaderMalformed");
    assert_string_equal(extra(&e, "Region"), "eu-west-1");
    s3a_verifier_destroy(&v);
    /* lenient (the default): the client's region is used */
    v = make(false, "eu-west-1");
    assert_int_equal(run(v, "GET", "/test.txt", "", get_range, 5, T0, &a, &e), 0);
    s3a_error_deinit(&e);
    s3a_verifier_destroy(&v);
}

/* A request signed by the client's signer with secret `sk`. */
static char *signed_auth(const char *sk)
{
    const s3__kv h[] = {
        {"host", "h:9000"}, {"x-amz-date", DATE}, {"x-amz-content-sha256", EMPTY_SHA}};
    s3__sign_input in = {.method = "GET",
                         .canonical_uri = "/b/k",
                         .headers = h,
                         .n_headers = 3,
                         .payload_hash = EMPTY_SHA,
                         .amz_date = DATE,
                         .region = "us-east-1",
                         .service = "s3",
                         .access_key = AK,
                         .secret_key = sk};
    s3__sign_output o;
    assert_int_equal(s3__sigv4_sign(&in, &o), 0);
    char *r = strdup(o.authorization);
    s3__sign_output_free(&o);
    return r;
}

static void test_key_cache_follows_secret(void **state)
{
    (void)state;
    s3a_verifier *v = make(false, NULL);
    s3a_auth a;
    s3a_error e = {0};
    char *auth_a = signed_auth("secret-A"), *auth_b = signed_auth("secret-B");
    s3a_header h[] = {{"Host", "h:9000"},
                      {"x-amz-date", DATE},
                      {"x-amz-content-sha256", EMPTY_SHA},
                      {"Authorization", auth_a}};
    current_secret = "secret-A";
    for (int i = 0; i < 3; i++)
        assert_int_equal(run(v, "GET", "/b/k", "", h, 4, T0, &a, &e), 0);
    /* the tenant's secret changes: the old signature must fail, the new pass */
    current_secret = "secret-B";
    assert_int_equal(run(v, "GET", "/b/k", "", h, 4, T0, &a, &e), -EACCES);
    h[3].value = auth_b;
    assert_int_equal(run(v, "GET", "/b/k", "", h, 4, T0, &a, &e), 0);
    current_secret = SK;
    free(auth_a);
    free(auth_b);
    s3a_error_deinit(&e);
    s3a_verifier_destroy(&v);
}

static void test_missing_payload_header(void **state)
{
    (void)state;
    s3a_verifier *v = make(false, NULL);
    s3a_auth a;
    s3a_error e = {0};
    /* curl --aws-sigv4 sends no x-amz-content-sha256: fine without a body */
    const s3__kv sh[] = {{"host", "h"}, {"x-amz-date", DATE}};
    s3__sign_input in = {.method = "GET",
                         .canonical_uri = "/b/k",
                         .headers = sh,
                         .n_headers = 2,
                         .payload_hash = EMPTY_SHA,
                         .amz_date = DATE,
                         .region = "us-east-1",
                         .service = "s3",
                         .access_key = AK,
                         .secret_key = SK};
    s3__sign_output o;
    assert_int_equal(s3__sigv4_sign(&in, &o), 0);
    s3a_header h[] = {{"host", "h"},
                      {"x-amz-date", DATE},
                      {"Authorization", o.authorization},
                      {"Content-Length", "5"}};
    assert_int_equal(run(v, "GET", "/b/k", "", h, 3, T0, &a, &e), 0);
    assert_int_equal(run(v, "GET", "/b/k", "", h, 4, T0, &a, &e), -EINVAL);
    assert_non_null(strstr(e.message, "x-amz-content-sha256"));
    s3__sign_output_free(&o);
    s3a_error_deinit(&e);
    s3a_verifier_destroy(&v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aws_header_examples),
        cmocka_unit_test(test_aws_streaming_seeds),
        cmocka_unit_test(test_aws_presigned),
        cmocka_unit_test(test_sigv2_query),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_region),
        cmocka_unit_test(test_key_cache_follows_secret),
        cmocka_unit_test(test_missing_payload_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
