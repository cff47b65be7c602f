/* SPDX-License-Identifier: Apache-2.0
 *
 * test_s3_util.c: ETag normalisation (every spelling HEAD, GET, List and
 * proxies use comes out as the same bare value) and s3:// URL parsing with
 * S3's bucket naming rules.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "s3_int.h"

static void check_etag(const char *in, const char *want)
{
    char out[S3_ETAG_MAX];
    int n = s3_etag_normalize(in, out, sizeof out);
    assert_int_equal(n, (int)strlen(want));
    assert_string_equal(out, want);
}

static void test_etag(void **state)
{
    (void)state;
    check_etag("\"9b2cf535f27731c974343645a3985328\"", "9b2cf535f27731c974343645a3985328");
    check_etag("9b2cf535f27731c974343645a3985328", "9b2cf535f27731c974343645a3985328");
    check_etag("  \"abc-12\"\r\n", "abc-12");
    check_etag("W/\"abc\"", "abc");
    check_etag("w/ \"abc\" ", "abc");
    check_etag("&quot;abc&quot;", "abc");
    check_etag("\"\"", "");
    check_etag("", "");
    check_etag("\"", "");
    check_etag("\"abc", "abc");
    /* Only the outer quotes go. */
    check_etag("\"a\"b\"", "a\"b");
    /* Peeled to the end: normalising twice changes nothing. */
    check_etag("\"abc\"\"", "abc");
    check_etag("W/\"W/abc\"", "abc");
    check_etag("\" \"abc\" \"", "abc");
    check_etag("&quot;\"abc\"&quot;", "abc");
    static const char *odd[] = {"\"abc\"\"",       "W/\"W/x\"",          "\"\"\"",
                                "&quot;&quot;a\"", " w/ &quot;x&quot; ", "\"a\"b\""};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        char once[S3_ETAG_MAX], twice[S3_ETAG_MAX];
        assert_true(s3_etag_normalize(odd[i], once, sizeof once) >= 0);
        assert_true(s3_etag_normalize(once, twice, sizeof twice) >= 0);
        assert_string_equal(once, twice);
    }
    /* In place. */
    char buf[S3_ETAG_MAX] = "\"inplace\"";
    assert_int_equal(s3_etag_normalize(buf, buf, sizeof buf), 7);
    assert_string_equal(buf, "inplace");
}

static void test_etag_limits(void **state)
{
    (void)state;
    char out[8];
    assert_int_equal(s3_etag_normalize("\"1234567\"", out, sizeof out), 7);
    assert_int_equal(s3_etag_normalize("\"12345678\"", out, sizeof out), -ENOSPC);
    assert_int_equal(s3_etag_normalize(NULL, out, sizeof out), -EINVAL);
    assert_int_equal(s3_etag_normalize("x", out, 0), -EINVAL);
    char big[S3_ETAG_MAX + 10];
    memset(big, 'e', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char o[S3_ETAG_MAX];
    assert_int_equal(s3_etag_normalize(big, o, sizeof o), -ENOSPC);
}

static void test_key_check(void **state)
{
    (void)state;
    const char *ok[] = {"",
                        "src/k01",
                        "src/.hidden",
                        "src/..x/y",
                        "src/x../y",
                        "src/.../y",
                        "a.b/c..d",
                        "src//x",
                        "%zz/%2",
                        "src/%2ex",
                        "caf\xc3\xa9/\xef\xbc\x8e\xef"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char why[256] = "";
        if (s3_key_check(ok[i], strlen(ok[i]), why, sizeof why) != 0)
            fprintf(stderr, "refused '%s': %s\n", ok[i], why);
        assert_int_equal(s3_key_check(ok[i], strlen(ok[i]), why, sizeof why), 0);
    }
    const char *bad[] = {"src/../wt/k01",
                         "src/./../x",
                         "src/#/../../x",
                         "..",
                         ".",
                         "./x",
                         "src/..",
                         "src/.",
                         "src/%2e%2e/x",
                         "src/%2E%2e/x",
                         "src/.%2E/x",
                         "src/%252e%252e/x",
                         "src%2F..%2Fx",
                         "src\\..\\x",
                         "src/%5C..%5Cx",
                         "src/\xef\xbc\x8e\xef\xbc\x8e/x",
                         "src/\xe2\x80\xa4./x",
                         "src/%2500/x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char why[256] = "";
        if (s3_key_check(bad[i], strlen(bad[i]), why, sizeof why) != -EINVAL)
            fprintf(stderr, "took '%s'\n", bad[i]);
        assert_int_equal(s3_key_check(bad[i], strlen(bad[i]), why, sizeof why), -EINVAL);
        assert_true(strlen(why) > 10);
    }
    /* a NUL inside the length, and a key over 1024 bytes */
    assert_int_equal(s3_key_check("a\0b", 3, NULL, 0), -EINVAL);
    char longkey[1100];
    memset(longkey, 'k', sizeof longkey);
    assert_int_equal(s3_key_check(longkey, 1025, NULL, 0), -EINVAL);
    assert_int_equal(s3_key_check(longkey, 1024, NULL, 0), 0);
    assert_int_equal(s3_key_check(NULL, 0, NULL, 0), 0);
    char why[300];
    assert_int_equal(s3_key_check("src/%2e%2e/x", 12, why, sizeof why), -EINVAL);
    assert_non_null(strstr(why, "'..'"));
}

static void test_url_ok(void **state)
{
    (void)state;
    char b[64], k[1025];
    assert_int_equal(s3_url_parse("s3://my-bucket/dir/a b.parquet", b, sizeof b, k, sizeof k), 0);
    assert_string_equal(b, "my-bucket");
    assert_string_equal(k, "dir/a b.parquet");
    assert_int_equal(s3_url_parse("s3://abc", b, sizeof b, k, sizeof k), 0);
    assert_string_equal(b, "abc");
    assert_string_equal(k, "");
    assert_int_equal(s3_url_parse("s3://abc/", b, sizeof b, k, sizeof k), 0);
    assert_string_equal(k, "");
    assert_int_equal(s3_url_parse("s3://a.b-c.1/x//y/", b, sizeof b, k, sizeof k), 0);
    assert_string_equal(b, "a.b-c.1");
    assert_string_equal(k, "x//y/");
    char name63[80] = "s3://";
    memset(name63 + 5, 'a', 63);
    strcpy(name63 + 68, "/k");
    assert_int_equal(s3_url_parse(name63, b, sizeof b, k, sizeof k), 0);
    assert_int_equal(strlen(b), 63);
}

static void test_url_bad(void **state)
{
    (void)state;
    char b[64], k[1025];
    static const char *bad[] = {
        "http://bucket/key",
        "s3:/bucket/key",
        "S3://bucket/key",
        "bucket/key",
        "s3://",
        "s3:///key",
        "s3://ab/key",
        "s3://Bucket/key",
        "s3://bu_cket/key",
        "s3://-bucket/k",
        "s3://bucket-/k",
        "s3://buc..ket/k",
        "s3://192.168.5.4/k",
        "s3://xn--bucket/k",
        "s3://bucket-s3alias/k",
        "s3://bucket--ol-s3/k",
        "s3://buck et/k",
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (s3_url_parse(bad[i], b, sizeof b, k, sizeof k) != -EINVAL)
            fail_msg("'%s' should be refused", bad[i]);
    char name64[90] = "s3://";
    memset(name64 + 5, 'a', 64);
    strcpy(name64 + 69, "/k");
    assert_int_equal(s3_url_parse(name64, b, sizeof b, k, sizeof k), -EINVAL);
    /* A key longer than S3's 1024 bytes. */
    char longkey[1100] = "s3://bucket/";
    memset(longkey + 12, 'k', 1025);
    longkey[12 + 1025] = '\0';
    assert_int_equal(s3_url_parse(longkey, b, sizeof b, k, sizeof k), -EINVAL);
    /* Buffers too small. */
    char sb[4], sk[4];
    assert_int_equal(s3_url_parse("s3://bucket/k", sb, sizeof sb, k, sizeof k), -ENOSPC);
    assert_int_equal(s3_url_parse("s3://bucket/keys", b, sizeof b, sk, sizeof sk), -ENOSPC);
    assert_int_equal(s3_url_parse("s3://bucket/key", b, sizeof b, sk, sizeof sk), 0);
    assert_int_equal(s3_url_parse(NULL, b, sizeof b, k, sizeof k), -EINVAL);
}

/* Why a URL is refused: the bucket and the rule it breaks, for each rule. */
static void test_url_explain(void **state)
{
    (void)state;
    static const struct {
        const char *url, *why;
    } cases[] = {
        {"s3://Bad_Bucket/x", "'Bad_Bucket' in s3://Bad_Bucket/x is not a valid bucket name: it "
                              "has an upper-case letter, 'B'"},
        {"s3://bu_cket/k", "it has '_', which bucket names cannot hold"},
        {"s3://ab/key", "'ab' in s3://ab/key is not a valid bucket name: it is shorter than 3"},
        {"s3://buc..ket/k", "two dots in a row"},
        {"s3://-bucket/k", "does not start and end with a letter or a digit"},
        {"s3://192.168.5.4/k", "written as an IP address"},
        {"s3://xn--bucket/k", "prefix S3 reserves"},
        {"s3://bucket--ol-s3/k", "suffix S3 reserves"},
        {"s3://buck et/k", "it has a control or non-ASCII byte"},
        {"http://bucket/key", "'http://bucket/key' is not an S3 URL: write s3://bucket/key"},
        {"s3://bucket/key", "s3://bucket/key is a valid S3 URL"},
    };
    char b[64], k[1025];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char why[512];
        s3_url_explain(cases[i].url, why, sizeof why);
        if (!strstr(why, cases[i].why))
            fail_msg("'%s': '%s' lacks '%s'", cases[i].url, why, cases[i].why);
        /* every refused name is explained with S3's rules */
        if (s3_url_parse(cases[i].url, b, sizeof b, k, sizeof k) < 0 &&
            strncmp(cases[i].url, "s3://", 5) == 0)
            assert_non_null(strstr(why, "S3's rules: 3 to 63 characters"));
    }
    char name64[90] = "s3://";
    memset(name64 + 5, 'a', 64);
    strcpy(name64 + 69, "/k");
    char why[512];
    s3_url_explain(name64, why, sizeof why);
    assert_non_null(strstr(why, "longer than 63 characters"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_etag),      cmocka_unit_test(test_etag_limits),
        cmocka_unit_test(test_key_check), cmocka_unit_test(test_url_ok),
        cmocka_unit_test(test_url_bad),   cmocka_unit_test(test_url_explain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
