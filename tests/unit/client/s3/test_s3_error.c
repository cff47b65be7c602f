/* SPDX-License-Identifier: Apache-2.0
 *
 * test_s3_error.c: the sentences and codes of s3__error_fill. Each status and
 * transport failure maps to its documented -errno and to a one-line sentence
 * naming the operation, the object, the cause and the fix; text from the
 * network is flattened, long inputs stay within S3_MSG_MAX, and a password in
 * the endpoint URL never shows.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "s3_int.h"

static s3_error fill(const char *op, int status, int terr, const char *tmsg, const char *code,
                     const char *smsg, int attempts)
{
    s3_error e;
    memset(&e, 0x5a, sizeof e);
    e.attempts = attempts;
    s3__error_fill(&e, op, "bucket", "key", status, terr, tmsg, code, smsg, "http://127.0.0.1:1");
    assert_int_equal(e.attempts, attempts);
    assert_true(strlen(e.message) < S3_MSG_MAX);
    assert_null(strchr(e.message, '\n'));
    return e;
}

static void test_success(void **state)
{
    (void)state;
    s3_error e = fill("GET", 206, 0, NULL, NULL, NULL, 1);
    assert_int_equal(e.code, 0);
    assert_int_equal(e.http_status, 206);
    assert_string_equal(e.message, "");
    assert_string_equal(e.s3_code, "");
}

static void test_403(void **state)
{
    (void)state;
    s3_error e = fill("GET", 403, 0, NULL, "SignatureDoesNotMatch", "The request signature...", 1);
    assert_int_equal(e.code, -EACCES);
    assert_string_equal(e.s3_code, "SignatureDoesNotMatch");
    assert_string_equal(e.message,
                        "GET s3://bucket/key: access denied (403 SignatureDoesNotMatch): the "
                        "signature does not match; check AWS_SECRET_ACCESS_KEY and the region");
    e = fill("HEAD", 403, 0, NULL, NULL, NULL, 1); /* HEAD has no body, so no code */
    assert_int_equal(e.code, -EACCES);
    assert_non_null(strstr(e.message, "HEAD s3://bucket/key: access denied (403): check the "
                                      "credentials"));
    e = fill("GET", 403, 0, NULL, "InvalidAccessKeyId", NULL, 1);
    assert_non_null(strstr(e.message, "AWS_ACCESS_KEY_ID"));
    e = fill("GET", 403, 0, NULL, "RequestTimeTooSkewed", NULL, 1);
    assert_non_null(strstr(e.message, "clock"));
    e = fill("GET", 400, 0, NULL, "ExpiredToken", NULL, 1);
    assert_int_equal(e.code, -EACCES);
    assert_non_null(strstr(e.message, "AWS_SESSION_TOKEN"));
}

static void test_404_412(void **state)
{
    (void)state;
    s3_error e = fill("HEAD", 404, 0, NULL, "NoSuchKey", NULL, 1);
    assert_int_equal(e.code, -ENOENT);
    assert_string_equal(e.message, "HEAD s3://bucket/key: no such key or bucket (404 NoSuchKey)");
    e = fill("HEAD", 404, 0, NULL, NULL, NULL, 1);
    assert_string_equal(e.message, "HEAD s3://bucket/key: no such key or bucket (404)");
    e = fill("LIST", 404, 0, NULL, "NoSuchBucket", NULL, 1);
    assert_int_equal(e.code, -ENOENT);
    assert_non_null(strstr(e.message, "no such bucket (404 NoSuchBucket); check the bucket"));
    e = fill("GET", 412, 0, NULL, "PreconditionFailed", NULL, 1);
    assert_int_equal(e.code, -ESTALE);
    assert_string_equal(e.message, "GET s3://bucket/key: the object changed since it was "
                                   "opened (412 PreconditionFailed); re-open it");
    e = fill("GET", 412, 0, NULL, NULL, NULL, 1);
    assert_int_equal(e.code, -ESTALE);
    assert_non_null(strstr(e.message, "(412 PreconditionFailed)"));
}

static void test_transport(void **state)
{
    (void)state;
    s3_error e = fill("GET", 0, -ECONNREFUSED, NULL, NULL, NULL, 1);
    assert_int_equal(e.code, -ECONNREFUSED);
    assert_int_equal(e.http_status, 0);
    assert_string_equal(e.message, "GET s3://bucket/key: cannot connect to http://127.0.0.1:1 "
                                   "(Connection refused); is the S3 endpoint up? (set "
                                   "AWS_ENDPOINT_URL)");
    e = fill("GET", 0, -ETIMEDOUT, "Connection timed out after 3001 milliseconds", NULL, NULL, 5);
    assert_int_equal(e.code, -ETIMEDOUT);
    assert_string_equal(e.message, "GET s3://bucket/key: timed out talking to "
                                   "http://127.0.0.1:1 (Connection timed out after 3001 "
                                   "milliseconds) after 5 attempts; check the network and the "
                                   "endpoint, or raise the timeout");
    e = fill("GET", 200, -EPIPE, "transfer closed with 10 bytes remaining\r\n", NULL, NULL, 5);
    assert_int_equal(e.code, -ECONNRESET);
    assert_non_null(strstr(e.message, "(transfer closed with 10 bytes remaining) after 5"));
    e = fill("GET", 0, -ECANCELED, NULL, NULL, NULL, 1);
    assert_int_equal(e.code, -ECANCELED);
    e = fill("GET", 0, -EHOSTUNREACH, "Could not resolve host: nowhere", NULL, NULL, 1);
    assert_int_equal(e.code, -EIO);
    assert_string_equal(e.message, "GET s3://bucket/key: cannot reach http://127.0.0.1:1 (Could "
                                   "not resolve host: nowhere); check the host name in "
                                   "AWS_ENDPOINT_URL and the network");
    e = fill("GET", 0, -EACCES, "weird", NULL, NULL, 1); /* any other: -EIO */
    assert_int_equal(e.code, -EIO);
    assert_non_null(strstr(e.message, "cannot talk to http://127.0.0.1:1 (weird)"));
    e = fill("LIST", 0, -EPROTO,
             "SSL certificate problem: unable to get local issuer "
             "certificate",
             NULL, NULL, 1);
    assert_int_equal(e.code, -EPROTO);
    assert_non_null(strstr(e.message, "TLS or protocol failure with http://127.0.0.1:1 (SSL "
                                      "certificate problem"));
    assert_non_null(strstr(e.message, "AWS_CA_BUNDLE"));
}

static void test_5xx_and_throttle(void **state)
{
    (void)state;
    s3_error e = fill("GET", 503, 0, NULL, "SlowDown", "Please reduce your request rate.", 5);
    assert_int_equal(e.code, -EIO);
    assert_string_equal(e.message, "GET s3://bucket/key: S3 is throttling requests (503 "
                                   "SlowDown) after 5 attempts; lower the request rate or "
                                   "spread keys over more prefixes");
    e = fill("PUT", 500, 0, NULL, "InternalError", "We encountered an internal error.", 3);
    assert_int_equal(e.code, -EIO);
    assert_string_equal(e.message, "PUT s3://bucket/key: the server failed (500 InternalError): "
                                   "We encountered an internal error. after 3 attempts; try "
                                   "again later");
    e = fill("COMPLETE", 200, 0, NULL, "InternalError", "oops", 1);
    assert_int_equal(e.code, -EIO);
    assert_non_null(strstr(e.message, "S3 answered 200 with an error (InternalError: oops)"));
    e = fill("GET", 408, 0, NULL, NULL, NULL, 2);
    assert_int_equal(e.code, -ETIMEDOUT);
    e = fill("PUT", 400, 0, NULL, "EntityTooLarge", "Your proposed upload exceeds...", 1);
    assert_int_equal(e.code, -EIO);
    assert_non_null(strstr(e.message, "refused (400 EntityTooLarge): Your proposed upload"));
    e = fill("GET", 301, 0, NULL, "PermanentRedirect", NULL, 1);
    assert_non_null(strstr(e.message, "AWS_REGION"));
}

static void test_hostile_inputs(void **state)
{
    (void)state;
    char longkey[1100];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = '\0';
    char longmsg[3000];
    memset(longmsg, 'm', sizeof longmsg - 1);
    longmsg[sizeof longmsg - 1] = '\0';
    s3_error e = {.attempts = 1};
    s3__error_fill(&e, "GET", "bucket", longkey, 500, 0, NULL,
                   "A-very-long-code-that-goes-on-and-on-and-on-and-on-and-on-and-on-and-on",
                   longmsg, "http://user:hunter2@s3.example.com:9000/base?x=secret");
    assert_int_equal(e.code, -EIO);
    assert_true(strlen(e.message) < S3_MSG_MAX);
    assert_true(strlen(e.s3_code) < sizeof e.s3_code);
    assert_non_null(strstr(e.message, "GET s3://bucket/kkk"));
    assert_non_null(strstr(e.message, "...")); /* shortened, visibly */
    /* Control characters from the network do not break the line. */
    s3__error_fill(&e, "GET", "b\nx", "k\r\ney", 0, -ECONNREFUSED, "refused\n\x1b[31m", NULL, NULL,
                   "http://user:hunter2@s3.example.com:9000/base?x=secret");
    assert_null(strchr(e.message, '\n'));
    assert_null(strchr(e.message, '\r'));
    assert_null(strchr(e.message, '\x1b'));
    assert_null(strstr(e.message, "hunter2"));
    assert_null(strstr(e.message, "secret"));
    assert_non_null(strstr(e.message, "http://s3.example.com:9000/base"));
    /* No endpoint configured: AWS itself. */
    s3__error_fill(&e, "GET", "b", "k", 0, -ECONNREFUSED, NULL, NULL, NULL, "");
    assert_non_null(strstr(e.message, "cannot connect to the S3 endpoint"));
    s3__error_fill(NULL, "GET", "b", "k", 500, 0, NULL, NULL, NULL, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_success),          cmocka_unit_test(test_403),
        cmocka_unit_test(test_404_412),          cmocka_unit_test(test_transport),
        cmocka_unit_test(test_5xx_and_throttle), cmocka_unit_test(test_hostile_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
