/* SPDX-License-Identifier: Apache-2.0
 *
 * test_s3_sigv4.c: Signature V4 against the worked examples AWS publishes for
 * S3 ("Signature Calculations for the Authorization Header: Transferring
 * Payload in a Single Chunk": GET Object with a Range, GET Bucket lifecycle,
 * GET Bucket (List Objects), PUT Object), each checked at all three stages
 * (canonical request, string to sign, signature); plus RFC 3986 encoding and
 * canonical query and header edge cases.
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

#include "s3_int.h"

#define AK        "AKIAIOSFODNN7EXAMPLE"
#define SK        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define HOST      "examplebucket.s3.amazonaws.com"
#define DATE      "20130524T000000Z"
#define SCOPE     "20130524/us-east-1/s3/aws4_request"

static s3__sign_input example_input(const char *method, const char *uri, const s3__kv *q, size_t nq,
                                    const s3__kv *h, size_t nh, const char *payload)
{
    s3__sign_input in = {
        .method = method,
        .canonical_uri = uri,
        .query = q,
        .n_query = nq,
        .headers = h,
        .n_headers = nh,
        .payload_hash = payload,
        .amz_date = DATE,
        .region = "us-east-1",
        .service = "s3",
        .access_key = AK,
        .secret_key = SK,
    };
    return in;
}

static void check_sts(const s3__sign_output *out, const char *cr_hash)
{
    char want[256];
    snprintf(want, sizeof want, "AWS4-HMAC-SHA256\n" DATE "\n" SCOPE "\n%s", cr_hash);
    assert_string_equal(out->string_to_sign, want);
}

static void test_get_object_range(void **state)
{
    (void)state;
    /* Given in mixed case and out of order: the signer lower-cases and sorts. */
    const s3__kv h[] = {
        {"x-amz-date", DATE},
        {"Range", "bytes=0-9"},
        {"Host", HOST},
        {"x-amz-content-sha256", EMPTY_SHA},
    };
    s3__sign_input in = example_input("GET", "/test.txt", NULL, 0, h, 4, EMPTY_SHA);
    s3__sign_output out;
    assert_int_equal(s3__sigv4_sign(&in, &out), 0);
    assert_string_equal(out.canonical_request,
                        "GET\n/test.txt\n\n"
                        "host:" HOST "\n"
                        "range:bytes=0-9\n"
                        "x-amz-content-sha256:" EMPTY_SHA "\n"
                        "x-amz-date:" DATE "\n\n"
                        "host;range;x-amz-content-sha256;x-amz-date\n" EMPTY_SHA);
    check_sts(&out, "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
    assert_string_equal(out.signature,
                        "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
    assert_string_equal(out.signed_headers, "host;range;x-amz-content-sha256;x-amz-date");
    assert_string_equal(
        out.authorization,
        "AWS4-HMAC-SHA256 Credential=" AK "/" SCOPE
        ", SignedHeaders=host;range;x-amz-content-sha256;x-amz-date"
        ", Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
    s3__sign_output_free(&out);
    assert_null(out.authorization);
}

static void test_put_object(void **state)
{
    (void)state;
    const char *body = "Welcome to Amazon S3.";
    char hash[65];
    s3__sha256_hex(body, strlen(body), hash);
    assert_string_equal(hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
    char *uri = s3__uri_encode("/test$file.text", strlen("/test$file.text"), true);
    assert_non_null(uri);
    assert_string_equal(uri, "/test%24file.text");
    const s3__kv h[] = {
        {"Host", HOST},
        {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
        {"x-amz-date", DATE},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
        {"x-amz-content-sha256", hash},
    };
    s3__sign_input in = example_input("PUT", uri, NULL, 0, h, 5, hash);
    s3__sign_output out;
    assert_int_equal(s3__sigv4_sign(&in, &out), 0);
    assert_string_equal(
        out.canonical_request,
        "PUT\n/test%24file.text\n\n"
        "date:Fri, 24 May 2013 00:00:00 GMT\n"
        "host:" HOST "\n"
        "x-amz-content-sha256:44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072\n"
        "x-amz-date:" DATE "\n"
        "x-amz-storage-class:REDUCED_REDUNDANCY\n\n"
        "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class\n"
        "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
    check_sts(&out, "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d");
    assert_string_equal(out.signature,
                        "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
    s3__sign_output_free(&out);
    free(uri);
}

static const s3__kv base_headers[] = {
    {"Host", HOST},
    {"x-amz-date", DATE},
    {"x-amz-content-sha256", EMPTY_SHA},
};

static void test_get_lifecycle(void **state)
{
    (void)state;
    const s3__kv q[] = {{"lifecycle", ""}};
    s3__sign_input in = example_input("GET", "/", q, 1, base_headers, 3, EMPTY_SHA);
    s3__sign_output out;
    assert_int_equal(s3__sigv4_sign(&in, &out), 0);
    assert_string_equal(out.canonical_request, "GET\n/\nlifecycle=\n"
                                               "host:" HOST "\n"
                                               "x-amz-content-sha256:" EMPTY_SHA "\n"
                                               "x-amz-date:" DATE "\n\n"
                                               "host;x-amz-content-sha256;x-amz-date\n" EMPTY_SHA);
    check_sts(&out, "9766c798316ff2757b517bc739a67f6213b4ab36dd5da2f94eaebf79c77395ca");
    assert_string_equal(out.signature,
                        "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
    s3__sign_output_free(&out);
}

static void test_list_objects(void **state)
{
    (void)state;
    /* Out of order on purpose: the canonical query sorts them. */
    const s3__kv q[] = {{"prefix", "J"}, {"max-keys", "2"}};
    s3__sign_input in = example_input("GET", "/", q, 2, base_headers, 3, EMPTY_SHA);
    s3__sign_output out;
    assert_int_equal(s3__sigv4_sign(&in, &out), 0);
    assert_string_equal(out.canonical_request, "GET\n/\nmax-keys=2&prefix=J\n"
                                               "host:" HOST "\n"
                                               "x-amz-content-sha256:" EMPTY_SHA "\n"
                                               "x-amz-date:" DATE "\n\n"
                                               "host;x-amz-content-sha256;x-amz-date\n" EMPTY_SHA);
    check_sts(&out, "df57d21db20da04d7fa30298dd4488ba3a2b47ca3a489c74750e0f1e7df1b9b7");
    assert_string_equal(out.signature,
                        "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
    s3__sign_output_free(&out);
}

static void test_unsigned_payload(void **state)
{
    (void)state;
    const s3__kv h[] = {
        {"Host", HOST},
        {"x-amz-date", DATE},
        {"x-amz-content-sha256", "UNSIGNED-PAYLOAD"},
    };
    s3__sign_input in = example_input("GET", "/test.txt", NULL, 0, h, 3, "UNSIGNED-PAYLOAD");
    s3__sign_output out;
    assert_int_equal(s3__sigv4_sign(&in, &out), 0);
    size_t n = strlen(out.canonical_request);
    assert_true(n > 17);
    assert_string_equal(out.canonical_request + n - 17, "\nUNSIGNED-PAYLOAD");
    assert_string_equal(out.signed_headers, "host;x-amz-content-sha256;x-amz-date");
    assert_int_equal(strlen(out.signature), 64);
    /* The secret changes the signature, and nothing in the output holds it. */
    char sig1[65];
    memcpy(sig1, out.signature, 65);
    assert_null(strstr(out.authorization, SK));
    assert_null(strstr(out.canonical_request, SK));
    s3__sign_output_free(&out);
    in.secret_key = "another-secret";
    assert_int_equal(s3__sigv4_sign(&in, &out), 0);
    assert_string_not_equal(out.signature, sig1);
    s3__sign_output_free(&out);
}

static void test_session_token_header(void **state)
{
    (void)state;
    const s3__kv h[] = {
        {"Host", "h"},
        {"X-Amz-Security-Token", "tok/en+=="},
        {"x-amz-date", DATE},
    };
    s3__sign_input in = example_input("HEAD", "/b/k", NULL, 0, h, 3, EMPTY_SHA);
    s3__sign_output out;
    assert_int_equal(s3__sigv4_sign(&in, &out), 0);
    assert_string_equal(out.signed_headers, "host;x-amz-date;x-amz-security-token");
    assert_non_null(strstr(out.canonical_request, "\nx-amz-security-token:tok/en+==\n"));
    s3__sign_output_free(&out);
}

static void test_header_trim_and_fold(void **state)
{
    (void)state;
    const s3__kv h[] = {
        {"HOST", "  h  "},          {"X-Amz-Meta-A", "  a   b \t c  "}, {"x-amz-date", DATE},
        {"X-Amz-Meta-A", "second"}, {"x-amz-meta-empty", "   "},
    };
    s3__sign_input in = example_input("GET", "/", NULL, 0, h, 5, EMPTY_SHA);
    s3__sign_output out;
    assert_int_equal(s3__sigv4_sign(&in, &out), 0);
    assert_string_equal(out.canonical_request,
                        "GET\n/\n\n"
                        "host:h\n"
                        "x-amz-date:" DATE "\n"
                        "x-amz-meta-a:a b c,second\n"
                        "x-amz-meta-empty:\n\n"
                        "host;x-amz-date;x-amz-meta-a;x-amz-meta-empty\n" EMPTY_SHA);
    s3__sign_output_free(&out);
}

/* AWS's worked key derivation (IAM "Examples of how to derive a signing key"),
 * and signing with a derived key gives what signing with the secret does. */
static void test_signing_key_and_sign_with_key(void **state)
{
    (void)state;
    unsigned char k[32];
    assert_int_equal(s3__sigv4_signing_key("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20120215",
                                           "us-east-1", "iam", k),
                     0);
    char hex[65];
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", k[i]);
    assert_string_equal(hex, "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
    assert_int_equal(s3__sigv4_signing_key(NULL, "20120215", "us-east-1", "iam", k), -EINVAL);

    assert_int_equal(s3__sigv4_signing_key(SK, "20130524", "us-east-1", "s3", k), 0);
    s3__sign_input in = example_input("GET", "/", NULL, 0, base_headers, 3, EMPTY_SHA);
    const s3__kv q[] = {{"lifecycle", ""}};
    in.query = q;
    in.n_query = 1;
    in.secret_key = NULL; /* not needed with a key */
    s3__sign_output out;
    assert_int_equal(s3__sigv4_sign_with_key(&in, k, &out), 0);
    assert_string_equal(out.signature,
                        "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
    s3__sign_output_free(&out);
    /* the signature step alone over that string to sign */
    const char *sts = "AWS4-HMAC-SHA256\n" DATE "\n" SCOPE "\n"
                      "9766c798316ff2757b517bc739a67f6213b4ab36dd5da2f94eaebf79c77395ca";
    assert_int_equal(s3__sigv4_hmac_hex(k, sts, strlen(sts), hex), 0);
    assert_string_equal(hex, "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

static void test_sign_bad_input(void **state)
{
    (void)state;
    s3__sign_input in = example_input("GET", "/", NULL, 0, base_headers, 3, EMPTY_SHA);
    s3__sign_output out;
    in.amz_date = "20130524";
    assert_int_equal(s3__sigv4_sign(&in, &out), -EINVAL);
    in.amz_date = DATE;
    in.secret_key = NULL;
    assert_int_equal(s3__sigv4_sign(&in, &out), -EINVAL);
    in.secret_key = SK;
    in.n_query = 2; /* with no array */
    assert_int_equal(s3__sigv4_sign(&in, &out), -EINVAL);
    assert_int_equal(s3__sigv4_sign(NULL, &out), -EINVAL);
}

static void check_enc(const char *in, bool keep_slash, const char *want)
{
    char *s = s3__uri_encode(in, strlen(in), keep_slash);
    assert_non_null(s);
    assert_string_equal(s, want);
    free(s);
}

static void test_uri_encode(void **state)
{
    (void)state;
    check_enc("", false, "");
    check_enc("AZaz09-._~", false, "AZaz09-._~");
    check_enc("a b", false, "a%20b");
    check_enc("a+b=c&d", false, "a%2Bb%3Dc%26d");
    check_enc("dir/sub/file", true, "dir/sub/file");
    check_enc("dir/sub/file", false, "dir%2Fsub%2Ffile");
    check_enc("caf\xc3\xa9 \xe2\x82\xac", true, "caf%C3%A9%20%E2%82%AC");
    check_enc("100%*!'()", false, "100%25%2A%21%27%28%29");
    check_enc("\x01\x7f\xff", false, "%01%7F%FF");
    /* a key as the path: '#' and '?' would end it, '%' would be decoded */
    check_enc("src/#/a?b%2e c", true, "src/%23/a%3Fb%252e%20c");
    /* An embedded NUL counts when the length says so. */
    char *s = s3__uri_encode("a\0b", 3, false);
    assert_string_equal(s, "a%00b");
    free(s);
}

static void check_query(const s3__kv *q, size_t n, const char *want)
{
    char *s = s3__canonical_query(q, n);
    assert_non_null(s);
    assert_string_equal(s, want);
    free(s);
}

static void test_canonical_query(void **state)
{
    (void)state;
    check_query(NULL, 0, "");
    const s3__kv uploads[] = {{"uploads", ""}};
    check_query(uploads, 1, "uploads=");
    const s3__kv del[] = {{"delete", NULL}};
    check_query(del, 1, "delete=");
    /* Equal names sort by value. */
    const s3__kv eq[] = {{"a", "2"}, {"b", ""}, {"a", "1"}, {"A", "z"}};
    check_query(eq, 4, "A=z&a=1&a=2&b=");
    /* Values and names are encoded, '/' included, spaces as %20 never '+'. */
    const s3__kv list[] = {
        {"prefix", "dir/a b+c"},
        {"list-type", "2"},
        {"continuation-token", "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM="},
        {"delimiter", "/"},
    };
    check_query(list, 4,
                "continuation-token=1ueGcxLPRx1Tr%2FXYExHnhbYLgveDs2J%2Fwm36Hy4vbOwM%3D&"
                "delimiter=%2F&list-type=2&prefix=dir%2Fa%20b%2Bc");
    /* Sorted by the encoded name: "a%20b" < "a%2Bb" < "a-b" < "a~b". */
    const s3__kv enc[] = {{"a~b", "4"}, {"a+b", "2"}, {"a-b", "3"}, {"a b", "1"}};
    check_query(enc, 4, "a%20b=1&a%2Bb=2&a-b=3&a~b=4");
    const s3__kv parts[] = {{"uploadId", "x~y"}, {"partNumber", "10"}};
    check_query(parts, 2, "partNumber=10&uploadId=x~y");
}

static void test_sha256_and_date(void **state)
{
    (void)state;
    char h[65];
    s3__sha256_hex("", 0, h);
    assert_string_equal(h, EMPTY_SHA);
    s3__sha256_hex("abc", 3, h);
    assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    char d[17];
    s3__amz_date(1369353600, d);
    assert_string_equal(d, DATE);
    s3__amz_date(0, d);
    assert_string_equal(d, "19700101T000000Z");
    s3__amz_date(951782400 + 86399, d); /* 2000-02-29, a leap day */
    assert_string_equal(d, "20000229T235959Z");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_object_range),
        cmocka_unit_test(test_put_object),
        cmocka_unit_test(test_get_lifecycle),
        cmocka_unit_test(test_list_objects),
        cmocka_unit_test(test_unsigned_payload),
        cmocka_unit_test(test_session_token_header),
        cmocka_unit_test(test_header_trim_and_fold),
        cmocka_unit_test(test_signing_key_and_sign_with_key),
        cmocka_unit_test(test_sign_bad_input),
        cmocka_unit_test(test_uri_encode),
        cmocka_unit_test(test_canonical_query),
        cmocka_unit_test(test_sha256_and_date),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
