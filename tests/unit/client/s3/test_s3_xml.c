/* SPDX-License-Identifier: Apache-2.0
 *
 * test_s3_xml.c: the expat parsers of S3's answers and the body of
 * CompleteMultipartUpload. Valid pages (objects, common prefixes, truncation,
 * escaped keys and ETags, url encoding), Error documents, multipart answers
 * including S3's 200-with-<Error>; and malformed or hostile documents
 * (truncated, wrong root, deep nesting, DOCTYPE/entities, oversize fields,
 * too many objects, non-XML, empty), each -EPROTO with a sentence. Run under
 * ASan to show nothing leaks on any path.
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

#define NS "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""

static int parse_list(const char *xml, s3_list_page *pg, char *err, size_t errlen)
{
    return s3__xml_parse_list(xml, strlen(xml), pg, err, errlen);
}

static void test_list_page(void **state)
{
    (void)state;
    const char *xml =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<ListBucketResult " NS ">\n"
        "  <Name>bucket</Name><Prefix>data/</Prefix><KeyCount>3</KeyCount>\n"
        "  <MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated>\n"
        "  <Contents>\n"
        "    <Key>data/a&amp;b.parquet</Key>\n"
        "    <LastModified>2009-10-12T17:50:30.000Z</LastModified>\n"
        "    <ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag>\n"
        "    <Size>434234</Size>\n"
        "    <StorageClass>STANDARD</StorageClass>\n"
        "    <Owner><ID>x</ID><DisplayName>y</DisplayName></Owner>\n"
        "  </Contents>\n"
        "  <Contents><Key>data/caf\xc3\xa9 &lt;1&gt;</Key><Size>0</Size>"
        "<ETag>\"d41d8cd98f00b204e9800998ecf8427e-2\"</ETag>"
        "<LastModified>2024-02-29T23:59:59+01:00</LastModified></Contents>\n"
        "  <Contents><Key>data/big</Key><Size>18446744073709551615</Size>"
        "<LastModified>not a date</LastModified></Contents>\n"
        "  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>\n"
        "</ListBucketResult>";
    s3_list_page pg;
    char err[256] = "";
    assert_int_equal(parse_list(xml, &pg, err, sizeof err), 0);
    assert_int_equal(pg.n_objects, 3);
    assert_string_equal(pg.objects[0].key, "data/a&b.parquet");
    assert_int_equal(pg.objects[0].size, 434234);
    assert_string_equal(pg.objects[0].etag, "fba9dede5f27731c9771645a39863328");
    assert_int_equal(pg.objects[0].last_modified, 1255369830);
    assert_string_equal(pg.objects[1].key, "data/caf\xc3\xa9 <1>");
    assert_int_equal(pg.objects[1].size, 0);
    assert_string_equal(pg.objects[1].etag, "d41d8cd98f00b204e9800998ecf8427e-2");
    assert_int_equal(pg.objects[1].last_modified, 1709251199 - 3600);
    assert_true(pg.objects[2].size == UINT64_MAX);
    assert_string_equal(pg.objects[2].etag, "");
    assert_int_equal(pg.objects[2].last_modified, 0);
    assert_int_equal(pg.n_prefixes, 0);
    assert_true(pg.truncated);
    assert_string_equal(pg.next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
    s3__list_page_free(&pg);
    assert_null(pg.objects);
    assert_int_equal(pg.n_objects, 0);
}

static void test_list_prefixes(void **state)
{
    (void)state;
    const char *xml =
        "<ListBucketResult " NS "><Name>b</Name><Prefix></Prefix><Delimiter>/</Delimiter>"
        "<IsTruncated>false</IsTruncated>"
        "<Contents><Key>top.csv</Key><Size>5</Size><ETag>\"e\"</ETag></Contents>"
        "<CommonPrefixes><Prefix>photos/</Prefix></CommonPrefixes>"
        "<CommonPrefixes><Prefix>videos/2024/</Prefix></CommonPrefixes>"
        "</ListBucketResult>";
    s3_list_page pg;
    char err[256];
    assert_int_equal(parse_list(xml, &pg, err, sizeof err), 0);
    assert_int_equal(pg.n_objects, 1);
    assert_string_equal(pg.objects[0].key, "top.csv");
    assert_int_equal(pg.n_prefixes, 2);
    assert_string_equal(pg.prefixes[0], "photos/");
    assert_string_equal(pg.prefixes[1], "videos/2024/");
    assert_false(pg.truncated);
    assert_null(pg.next_token);
    s3__list_page_free(&pg);
}

static void test_list_empty_and_prefixed(void **state)
{
    (void)state;
    s3_list_page pg;
    char err[256];
    assert_int_equal(parse_list("<ListBucketResult/>", &pg, err, sizeof err), 0);
    assert_int_equal(pg.n_objects, 0);
    assert_false(pg.truncated);
    s3__list_page_free(&pg);
    /* A namespace prefix on every element reads the same. */
    const char *xml = "<s3:ListBucketResult xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                      "<s3:Contents><s3:Key>k</s3:Key><s3:Size>7</s3:Size></s3:Contents>"
                      "</s3:ListBucketResult>";
    assert_int_equal(parse_list(xml, &pg, err, sizeof err), 0);
    assert_int_equal(pg.n_objects, 1);
    assert_string_equal(pg.objects[0].key, "k");
    assert_int_equal(pg.objects[0].size, 7);
    s3__list_page_free(&pg);
}

static void test_list_url_encoded(void **state)
{
    (void)state;
    const char *xml = "<ListBucketResult><EncodingType>url</EncodingType>"
                      "<Contents><Key>dir/a+b%2Bc%01%C3%A9</Key><Size>1</Size></Contents>"
                      "<CommonPrefixes><Prefix>p%2Fq/</Prefix></CommonPrefixes>"
                      "</ListBucketResult>";
    s3_list_page pg;
    char err[256];
    assert_int_equal(parse_list(xml, &pg, err, sizeof err), 0);
    assert_string_equal(pg.objects[0].key, "dir/a b+c\x01\xc3\xa9");
    assert_string_equal(pg.prefixes[0], "p/q/");
    s3__list_page_free(&pg);
    const char *bad = "<ListBucketResult><EncodingType>url</EncodingType>"
                      "<Contents><Key>a%zz</Key><Size>1</Size></Contents></ListBucketResult>";
    assert_int_equal(parse_list(bad, &pg, err, sizeof err), -EPROTO);
    assert_non_null(strstr(err, "bad %-escape"));
}

static void expect_list_eproto(const char *xml, size_t len, const char *needle)
{
    s3_list_page pg;
    char err[256] = "";
    int rc = s3__xml_parse_list(xml, len, &pg, err, sizeof err);
    if (rc != -EPROTO)
        fail_msg("expected -EPROTO, got %d for: %.80s", rc, xml ? xml : "(null)");
    assert_null(pg.objects);
    assert_null(pg.prefixes);
    assert_null(pg.next_token);
    assert_int_equal(pg.n_objects, 0);
    if (strstr(err, needle) == NULL)
        fail_msg("error '%s' lacks '%s'", err, needle);
}

static void test_list_malformed(void **state)
{
    (void)state;
#define BAD(xml, needle) expect_list_eproto(xml, strlen(xml), needle)
    BAD("", "is empty");
    BAD("   \n ", "is empty");
    BAD("<ListBucketResult><Contents><Key>a</Key><Size>1</Size></Contents>",
        "malformed XML in the ListObjectsV2 answer at line 1");
    BAD("<ListBucketResult><Contents><Key>a</Key><Size>1</Size></Contents></ListBucketResul",
        "malformed XML");
    BAD("<ListBucketResult><Contents><Key>a</Size></Contents></ListBucketResult>",
        "mismatched tag");
    BAD("not xml at all", "malformed XML");
    BAD("{\"json\": true}", "malformed XML");
    BAD("<html><body>502 Bad Gateway</body></html>", "is not a <ListBucketResult> document");
    BAD("<Error><Code>AccessDenied</Code></Error>", "is an S3 <Error> document");
    BAD("<ListBucketResult/><ListBucketResult/>", "junk after document element");
    BAD("<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>",
        "without a <Key>");
    BAD("<ListBucketResult><Contents><Key></Key><Size>1</Size></Contents></ListBucketResult>",
        "without a <Key>");
    BAD("<ListBucketResult><Contents><Key>a</Key></Contents></ListBucketResult>",
        "without a <Size>");
    BAD("<ListBucketResult><Contents><Key>a</Key><Size>-1</Size></Contents></ListBucketResult>",
        "<Size> that is not a number");
    BAD("<ListBucketResult><Contents><Key>a</Key><Size>18446744073709551616</Size></Contents>"
        "</ListBucketResult>",
        "<Size> that is not a number");
    BAD("<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>",
        "neither true nor false");
    BAD("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
        "no <NextContinuationToken>");
    BAD("<!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;&lol;\">]>"
        "<ListBucketResult><Contents><Key>&lol2;</Key><Size>1</Size></Contents>"
        "</ListBucketResult>",
        "has a DOCTYPE");
    BAD("<!DOCTYPE x SYSTEM \"file:///etc/passwd\"><ListBucketResult/>", "has a DOCTYPE");
    BAD("<ListBucketResult><Contents><Key>&undefined;</Key><Size>1</Size></Contents>"
        "</ListBucketResult>",
        "undefined entity");
    /* An embedded NUL is not XML. */
    expect_list_eproto("<ListBucketResult>\0</ListBucketResult>", 38, "malformed XML");
    expect_list_eproto(NULL, 0, "is empty");
#undef BAD
}

static char *repeat(const char *head, const char *unit, size_t n, const char *tail)
{
    size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
    char *s = malloc(hl + ul * n + tl + 1);
    assert_non_null(s);
    memcpy(s, head, hl);
    for (size_t i = 0; i < n; i++)
        memcpy(s + hl + i * ul, unit, ul);
    memcpy(s + hl + n * ul, tail, tl + 1);
    return s;
}

static void test_list_bounds(void **state)
{
    (void)state;
    /* Nesting: 100000 levels deep is refused at 32, without recursion. */
    char *deep = repeat("<ListBucketResult>", "<a>", 100000, "");
    expect_list_eproto(deep, strlen(deep), "deeper than 32 levels");
    free(deep);
    /* A key of 1024 bytes is fine, 1025 is not; 5000 stops while reading. */
    char *k1024 = repeat("<ListBucketResult><Contents><Key>", "k", 1024,
                         "</Key><Size>1</Size></Contents></ListBucketResult>");
    s3_list_page pg;
    char err[256];
    assert_int_equal(parse_list(k1024, &pg, err, sizeof err), 0);
    assert_int_equal(strlen(pg.objects[0].key), 1024);
    s3__list_page_free(&pg);
    free(k1024);
    char *k1025 = repeat("<ListBucketResult><Contents><Key>", "k", 1025,
                         "</Key><Size>1</Size></Contents></ListBucketResult>");
    expect_list_eproto(k1025, strlen(k1025), "longer than S3's 1024 bytes");
    free(k1025);
    char *k5000 = repeat("<ListBucketResult><Contents><Key>", "k", 5000,
                         "</Key><Size>1</Size></Contents></ListBucketResult>");
    expect_list_eproto(k5000, strlen(k5000), "<Key> in the ListObjectsV2 answer is longer than");
    free(k5000);
    /* 10000 objects per page at most. */
    char *many = repeat("<ListBucketResult>", "<Contents><Key>k</Key><Size>1</Size></Contents>",
                        10001, "</ListBucketResult>");
    expect_list_eproto(many, strlen(many), "more than 10000 objects");
    many[strlen(many) - strlen("<Contents><Key>k</Key><Size>1</Size></Contents>") -
         strlen("</ListBucketResult>")] = '\0';
    strcat(many, "</ListBucketResult>");
    assert_int_equal(parse_list(many, &pg, err, sizeof err), 0);
    assert_int_equal(pg.n_objects, 10000);
    s3__list_page_free(&pg);
    free(many);
    /* A long ETag. */
    char *etag = repeat("<ListBucketResult><Contents><Key>k</Key><Size>1</Size><ETag>", "e", 200,
                        "</ETag></Contents></ListBucketResult>");
    expect_list_eproto(etag, strlen(etag), "<ETag> longer than 129 bytes");
    free(etag);
    /* Large text in elements we do not read costs nothing and is fine. */
    char *ignored = repeat("<ListBucketResult><Name>", "n", 100000, "</Name></ListBucketResult>");
    assert_int_equal(parse_list(ignored, &pg, err, sizeof err), 0);
    s3__list_page_free(&pg);
    free(ignored);
}

static void test_error_doc(void **state)
{
    (void)state;
    const char *xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>"
                      "<Code>NoSuchKey</Code><Message>The resource you requested does not "
                      "exist</Message><Resource>/mybucket/myfoto.jpg</Resource>"
                      "<RequestId>4442587FB7D0A2F9</RequestId></Error>";
    char code[64], msg[256];
    assert_int_equal(s3__xml_parse_error(xml, strlen(xml), code, sizeof code, msg, sizeof msg), 0);
    assert_string_equal(code, "NoSuchKey");
    assert_string_equal(msg, "The resource you requested does not exist");
    /* Small buffers truncate. */
    char c4[4], m8[8];
    assert_int_equal(s3__xml_parse_error(xml, strlen(xml), c4, sizeof c4, m8, sizeof m8), 0);
    assert_string_equal(c4, "NoS");
    assert_string_equal(m8, "The res");
    /* An Error with no Code or Message is still an Error. */
    assert_int_equal(s3__xml_parse_error("<Error/>", 8, code, sizeof code, msg, sizeof msg), 0);
    assert_string_equal(code, "");
    assert_string_equal(msg, "");
    /* A huge message is cut, not refused. */
    char *huge = repeat("<Error><Code>SlowDown</Code><Message>", "m", 100000, "</Message></Error>");
    assert_int_equal(s3__xml_parse_error(huge, strlen(huge), code, sizeof code, msg, sizeof msg),
                     0);
    assert_string_equal(code, "SlowDown");
    assert_int_equal(strlen(msg), 255);
    free(huge);
    /* Well-formed but not an Error; malformed. */
    const char *other = "<ListBucketResult/>";
    assert_int_equal(s3__xml_parse_error(other, strlen(other), code, sizeof code, msg, sizeof msg),
                     -ENOENT);
    const char *bad = "<Error><Code>x</Code>";
    assert_int_equal(s3__xml_parse_error(bad, strlen(bad), code, sizeof code, msg, sizeof msg),
                     -EPROTO);
    assert_int_equal(s3__xml_parse_error("", 0, code, sizeof code, msg, sizeof msg), -EPROTO);
    assert_int_equal(s3__xml_parse_error("<html>", 6, NULL, 0, NULL, 0), -EPROTO);
}

static void test_mpu_initiate(void **state)
{
    (void)state;
    const char *xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                      "<InitiateMultipartUploadResult " NS "><Bucket>example-bucket</Bucket>"
                      "<Key>example-object</Key><UploadId>VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3"
                      "ZpZS5tMnRzIHVwbG9hZA</UploadId></InitiateMultipartUploadResult>";
    char *id = NULL;
    char err[256];
    assert_int_equal(s3__xml_parse_mpu_initiate(xml, strlen(xml), &id, err, sizeof err), 0);
    assert_string_equal(id, "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA");
    free(id);
    const char *none = "<InitiateMultipartUploadResult><Bucket>b</Bucket>"
                       "</InitiateMultipartUploadResult>";
    assert_int_equal(s3__xml_parse_mpu_initiate(none, strlen(none), &id, err, sizeof err), -EPROTO);
    assert_null(id);
    assert_non_null(strstr(err, "has no <UploadId>"));
    const char *e = "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>";
    assert_int_equal(s3__xml_parse_mpu_initiate(e, strlen(e), &id, err, sizeof err), -EPROTO);
    assert_null(id);
    assert_non_null(strstr(err, "AccessDenied: Access Denied"));
    const char *wrong = "<CompleteMultipartUploadResult><UploadId>x</UploadId>"
                        "</CompleteMultipartUploadResult>";
    assert_int_equal(s3__xml_parse_mpu_initiate(wrong, strlen(wrong), &id, err, sizeof err),
                     -EPROTO);
    assert_null(id);
    const char *trunc = "<InitiateMultipartUploadResult><UploadId>abc";
    assert_int_equal(s3__xml_parse_mpu_initiate(trunc, strlen(trunc), &id, err, sizeof err),
                     -EPROTO);
    assert_null(id);
}

static void test_mpu_complete(void **state)
{
    (void)state;
    /* S3 may send white space ahead of the answer while it works. */
    const char *xml = "\n   \n<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                      "<CompleteMultipartUploadResult " NS ">"
                      "<Location>http://Example-Bucket.s3.amazonaws.com/Example-Object</Location>"
                      "<Bucket>Example-Bucket</Bucket><Key>Example-Object</Key>"
                      "<ETag>\"3858f62230ac3c915f300c664312c11f-9\"</ETag>"
                      "</CompleteMultipartUploadResult>";
    char etag[S3_ETAG_MAX];
    char err[256];
    assert_int_equal(s3__xml_parse_mpu_complete(xml, strlen(xml), etag, err, sizeof err), 0);
    assert_string_equal(etag, "3858f62230ac3c915f300c664312c11f-9");
    /* 200 with an <Error> body. */
    const char *e200 = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\n<Error>"
                       "<Code>InternalError</Code><Message>We encountered an internal error. "
                       "Please try again.</Message><RequestId>656c76696e6727732072657175657374"
                       "</RequestId></Error>";
    assert_int_equal(s3__xml_parse_mpu_complete(e200, strlen(e200), etag, err, sizeof err), -EIO);
    assert_string_equal(err, "InternalError: We encountered an internal error. Please try again.");
    assert_string_equal(etag, "");
    const char *none = "<CompleteMultipartUploadResult><Key>k</Key>"
                       "</CompleteMultipartUploadResult>";
    assert_int_equal(s3__xml_parse_mpu_complete(none, strlen(none), etag, err, sizeof err),
                     -EPROTO);
    const char *trunc = "<CompleteMultipartUploadResult><ETag>\"abc\"</ETag>";
    assert_int_equal(s3__xml_parse_mpu_complete(trunc, strlen(trunc), etag, err, sizeof err),
                     -EPROTO);
    const char *wrong = "<InitiateMultipartUploadResult><ETag>x</ETag>"
                        "</InitiateMultipartUploadResult>";
    assert_int_equal(s3__xml_parse_mpu_complete(wrong, strlen(wrong), etag, err, sizeof err),
                     -EPROTO);
    assert_int_equal(s3__xml_parse_mpu_complete("", 0, etag, err, sizeof err), -EPROTO);
}

static void test_build_complete(void **state)
{
    (void)state;
    const char *etags[] = {"\"a54357aff0632cce46d942af68356b38\"",
                           "0c78aef83f66abc1fa1e8477f296d394", "W/\"x&y<z>\""};
    char *body = s3__xml_build_mpu_complete(etags, 3);
    assert_non_null(body);
    assert_string_equal(
        body, "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
              "<Part><PartNumber>1</PartNumber>"
              "<ETag>\"a54357aff0632cce46d942af68356b38\"</ETag></Part>"
              "<Part><PartNumber>2</PartNumber>"
              "<ETag>\"0c78aef83f66abc1fa1e8477f296d394\"</ETag></Part>"
              "<Part><PartNumber>3</PartNumber>"
              "<ETag>\"x&amp;y&lt;z&gt;\"</ETag></Part>"
              "</CompleteMultipartUpload>");
    free(body);
    assert_null(s3__xml_build_mpu_complete(etags, 0));
    assert_null(s3__xml_build_mpu_complete(etags, 10001));
    assert_null(s3__xml_build_mpu_complete(NULL, 1));
    const char *withnull[] = {"a", NULL};
    assert_null(s3__xml_build_mpu_complete(withnull, 2));
    /* 10000 parts, the most S3 allows, with ETags as long as allowed. */
    char big[S3_ETAG_MAX];
    memset(big, '&', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    const char **many = malloc(10000 * sizeof *many);
    assert_non_null(many);
    for (int i = 0; i < 10000; i++)
        many[i] = big;
    body = s3__xml_build_mpu_complete(many, 10000);
    assert_non_null(body);
    assert_non_null(strstr(body, "<Part><PartNumber>10000</PartNumber>"));
    free(body);
    free(many);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_page),
        cmocka_unit_test(test_list_prefixes),
        cmocka_unit_test(test_list_empty_and_prefixed),
        cmocka_unit_test(test_list_url_encoded),
        cmocka_unit_test(test_list_malformed),
        cmocka_unit_test(test_list_bounds),
        cmocka_unit_test(test_error_doc),
        cmocka_unit_test(test_mpu_initiate),
        cmocka_unit_test(test_mpu_complete),
        cmocka_unit_test(test_build_complete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
