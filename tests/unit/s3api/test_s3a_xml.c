/* SPDX-License-Identifier: Apache-2.0
 *
 * test_s3a_xml.c: the S3 API's XML (cached/s3api/s3a_xml.h). Each answer is
 * compared with the document S3 writes (element names and order, the
 * namespace on result roots, quoted ETags, milliseconds, an empty
 * LocationConstraint for us-east-1, encoding-type=url) and parsed with expat
 * to be well-formed. The request bodies as awscli and the JS SDK send them
 * (no declaration / a declaration and &quot;-escaped ETags with checksums;
 * Quiet after the objects), whole and byte by byte, and every refusal.
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

#include <expat.h>

#include "s3a_xml.h"

#define DECL "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define NS   "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""
#define T1   1704067200123LL /* 2024-01-01T00:00:00.123Z */

static void well_formed(const s3a_buf *b)
{
    XML_Parser p = XML_ParserCreate(NULL);
    int ok = XML_Parse(p, b->p, (int)b->len, 1);
    if (ok != XML_STATUS_OK)
        fprintf(stderr, "not well-formed: %s\n%s\n", XML_ErrorString(XML_GetErrorCode(p)), b->p);
    assert_int_equal(ok, XML_STATUS_OK);
    XML_ParserFree(p);
}

static void test_error(void **state)
{
    (void)state;
    s3a_error e = {0};
    s3a_error_set(&e, 404, "NoSuchKey", "The specified key does not exist.");
    s3a_buf b = {0};
    assert_int_equal(s3a_xml_error(&b, &e, "bkt", "a<b>&\"c\"", NULL, "4442587FB7D0A2F9", "h2"), 0);
    assert_string_equal(b.p,
                        DECL "<Error><Code>NoSuchKey</Code><Message>The specified key does "
                             "not exist.</Message><Key>a&lt;b&gt;&amp;&quot;c&quot;</Key>"
                             "<BucketName>bkt</BucketName><RequestId>4442587FB7D0A2F9</RequestId>"
                             "<HostId>h2</HostId></Error>");
    well_formed(&b);
    s3a_buf_free(&b);
    s3a_error_set(&e, 403, "RequestTimeTooSkewed", "too large");
    s3a_error_extra(&e, "MaxAllowedSkewMilliseconds", "900000", 6);
    assert_int_equal(s3a_xml_error(&b, &e, NULL, NULL, "/bkt/k", "R", "H"), 0);
    assert_non_null(strstr(b.p, "<MaxAllowedSkewMilliseconds>900000</MaxAllowedSkewMilliseconds>"
                                "<Resource>/bkt/k</Resource>"));
    well_formed(&b);
    s3a_buf_free(&b);
    s3a_error_deinit(&e);
}

static void test_list_v2(void **state)
{
    (void)state;
    const s3a_xml_object objs[] = {
        {"a b+c/d&e", 123, T1, "abc", NULL},
        {"ctl\x01z", 0, 0, "\"q\"", "STANDARD_IA"},
    };
    const char *pfx[] = {"p/sub dir/"};
    s3a_xml_list l = {.v2 = true,
                      .bucket = "bkt",
                      .prefix = "p/",
                      .delimiter = "/",
                      .max_keys = 1000,
                      .truncated = true,
                      .url_encode = true,
                      .continuation_token = "c1",
                      .next_continuation_token = "c2",
                      .objects = objs,
                      .n_objects = 2,
                      .prefixes = pfx,
                      .n_prefixes = 1};
    s3a_buf b = {0};
    assert_int_equal(s3a_xml_list_objects(&b, &l), 0);
    assert_string_equal(b.p, DECL
                        "<ListBucketResult " NS "><Name>bkt</Name><Prefix>p/</Prefix>"
                        "<ContinuationToken>c1</ContinuationToken>"
                        "<NextContinuationToken>c2</NextContinuationToken><KeyCount>3</KeyCount>"
                        "<MaxKeys>1000</MaxKeys><Delimiter>/</Delimiter>"
                        "<IsTruncated>true</IsTruncated>"
                        "<Contents><Key>a%20b%2Bc/d%26e</Key>"
                        "<LastModified>2024-01-01T00:00:00.123Z</LastModified>"
                        "<ETag>&quot;abc&quot;</ETag><Size>123</Size>"
                        "<StorageClass>STANDARD</StorageClass></Contents>"
                        "<Contents><Key>ctl%01z</Key>"
                        "<LastModified>1970-01-01T00:00:00.000Z</LastModified>"
                        "<ETag>&quot;q&quot;</ETag><Size>0</Size>"
                        "<StorageClass>STANDARD_IA</StorageClass></Contents>"
                        "<CommonPrefixes><Prefix>p/sub%20dir/</Prefix></CommonPrefixes>"
                        "<EncodingType>url</EncodingType></ListBucketResult>");
    well_formed(&b);
    s3a_buf_free(&b);
    /* not truncated: no next token; not encoded: no EncodingType; fetch-owner */
    s3a_xml_owner o = {"id1", "me"};
    l.truncated = false;
    l.url_encode = false;
    l.fetch_owner = true;
    l.owner = &o;
    l.n_objects = 1;
    assert_int_equal(s3a_xml_list_objects(&b, &l), 0);
    assert_null(strstr(b.p, "NextContinuationToken"));
    assert_null(strstr(b.p, "EncodingType"));
    assert_non_null(strstr(b.p, "<Key>a b+c/d&amp;e</Key>"));
    assert_non_null(strstr(b.p, "<Owner><ID>id1</ID><DisplayName>me</DisplayName></Owner>"));
    well_formed(&b);
    s3a_buf_free(&b);
}

static void test_list_v1(void **state)
{
    (void)state;
    const s3a_xml_object objs[] = {{"k1", 5, T1, "e1", NULL}};
    s3a_xml_list l = {.bucket = "bkt",
                      .max_keys = 2,
                      .truncated = true,
                      .next_marker = "k1",
                      .objects = objs,
                      .n_objects = 1};
    s3a_buf b = {0};
    assert_int_equal(s3a_xml_list_objects(&b, &l), 0);
    assert_string_equal(b.p, DECL
                        "<ListBucketResult " NS "><Name>bkt</Name><Prefix></Prefix>"
                        "<Marker></Marker><NextMarker>k1</NextMarker><MaxKeys>2</MaxKeys>"
                        "<IsTruncated>true</IsTruncated><Contents><Key>k1</Key>"
                        "<LastModified>2024-01-01T00:00:00.123Z</LastModified>"
                        "<ETag>&quot;e1&quot;</ETag><Size>5</Size><Owner><ID></ID>"
                        "<DisplayName></DisplayName></Owner><StorageClass>STANDARD</StorageClass>"
                        "</Contents></ListBucketResult>");
    well_formed(&b);
    s3a_buf_free(&b);
}

static void test_small_answers(void **state)
{
    (void)state;
    s3a_buf b = {0};
    s3a_xml_owner o = {"i", "n"};
    s3a_xml_bucket bk[] = {{"b1", T1}, {"b2", 0}};
    assert_int_equal(s3a_xml_list_buckets(&b, &o, bk, 2), 0);
    assert_string_equal(b.p, DECL
                        "<ListAllMyBucketsResult " NS "><Owner><ID>i</ID><DisplayName>"
                        "n</DisplayName></Owner><Buckets><Bucket><Name>b1</Name><CreationDate>"
                        "2024-01-01T00:00:00.123Z</CreationDate></Bucket><Bucket><Name>b2</Name>"
                        "<CreationDate>1970-01-01T00:00:00.000Z</CreationDate></Bucket></Buckets>"
                        "</ListAllMyBucketsResult>");
    well_formed(&b);
    s3a_buf_free(&b);

    assert_int_equal(s3a_xml_location(&b, "us-east-1"), 0);
    assert_string_equal(b.p, DECL "<LocationConstraint " NS "/>");
    s3a_buf_free(&b);
    assert_int_equal(s3a_xml_location(&b, "eu-west-1"), 0);
    assert_string_equal(b.p, DECL "<LocationConstraint " NS ">eu-west-1</LocationConstraint>");
    well_formed(&b);
    s3a_buf_free(&b);

    assert_int_equal(s3a_xml_initiate_mpu(&b, "bkt", "a&b", "UP1"), 0);
    assert_string_equal(b.p, DECL "<InitiateMultipartUploadResult " NS "><Bucket>bkt</Bucket>"
                                  "<Key>a&amp;b</Key><UploadId>UP1</UploadId>"
                                  "</InitiateMultipartUploadResult>");
    s3a_buf_free(&b);

    assert_int_equal(s3a_xml_complete_mpu(&b, "http://h/bkt/k", "bkt", "k", "md5-3", "CRC32",
                                          "AAAAAA==-3", "COMPOSITE"),
                     0);
    assert_string_equal(b.p, DECL
                        "<CompleteMultipartUploadResult " NS "><Location>http://h/bkt/k"
                        "</Location><Bucket>bkt</Bucket><Key>k</Key><ETag>&quot;md5-3&quot;"
                        "</ETag><ChecksumCRC32>AAAAAA==-3</ChecksumCRC32><ChecksumType>COMPOSITE"
                        "</ChecksumType></CompleteMultipartUploadResult>");
    well_formed(&b);
    s3a_buf_free(&b);

    s3a_xml_part parts[] = {{1, T1, "e1", 5242880}, {2, T1, "e2", 7}};
    s3a_xml_parts lp = {.bucket = "bkt",
                        .key = "k",
                        .upload_id = "U",
                        .owner = &o,
                        .next_part_number_marker = 2,
                        .max_parts = 1000,
                        .parts = parts,
                        .n_parts = 2};
    assert_int_equal(s3a_xml_list_parts(&b, &lp), 0);
    assert_non_null(strstr(b.p, "<ListPartsResult " NS "><Bucket>bkt</Bucket><Key>k</Key>"
                                "<UploadId>U</UploadId><Initiator><ID>i</ID>"));
    assert_non_null(strstr(b.p, "<PartNumberMarker>0</PartNumberMarker><NextPartNumberMarker>2"
                                "</NextPartNumberMarker><MaxParts>1000</MaxParts><IsTruncated>"
                                "false</IsTruncated><Part><PartNumber>1</PartNumber>"));
    assert_non_null(strstr(b.p, "<ETag>&quot;e2&quot;</ETag><Size>7</Size></Part>"));
    well_formed(&b);
    s3a_buf_free(&b);

    s3a_xml_deleted del[] = {{"a", NULL, NULL}, {"b", "AccessDenied", "Access Denied"}};
    assert_int_equal(s3a_xml_delete_result(&b, del, 2, false), 0);
    assert_string_equal(b.p,
                        DECL "<DeleteResult " NS "><Deleted><Key>a</Key></Deleted><Error>"
                             "<Key>b</Key><Code>AccessDenied</Code><Message>Access Denied</Message>"
                             "</Error></DeleteResult>");
    s3a_buf_free(&b);
    assert_int_equal(s3a_xml_delete_result(&b, del, 1, true), 0);
    assert_string_equal(b.p, DECL "<DeleteResult " NS "></DeleteResult>");
    well_formed(&b);
    s3a_buf_free(&b);

    assert_int_equal(s3a_xml_copy_result(&b, false, "e", T1), 0);
    assert_string_equal(b.p, DECL "<CopyObjectResult " NS "><LastModified>2024-01-01T00:00:00.123Z"
                                  "</LastModified><ETag>&quot;e&quot;</ETag></CopyObjectResult>");
    s3a_buf_free(&b);
    assert_int_equal(s3a_xml_copy_result(&b, true, "e", T1), 0);
    assert_non_null(strstr(b.p, "<CopyPartResult " NS ">"));
    well_formed(&b);
    s3a_buf_free(&b);
}

/* ---- request bodies ------------------------------------------------------------ */

static int parse_body(s3a_xmlbody_kind kind, const char *xml, size_t piece, s3a_xmlbody **out,
                      s3a_error *e)
{
    s3a_xmlbody *x;
    assert_int_equal(s3a_xmlbody_create(&x, kind, 0), 0);
    size_t len = strlen(xml);
    int rc = 0;
    for (size_t off = 0; off < len && rc == 0; off += piece ? piece : len)
        rc = s3a_xmlbody_feed(x, xml + off, piece && len - off > piece ? piece : len - off, e);
    if (rc == 0)
        rc = s3a_xmlbody_finish(x, e);
    *out = x;
    return rc;
}

static void test_complete_body(void **state)
{
    (void)state;
    /* awscli: no declaration, quoted ETags */
    const char *cli = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                      "<Part><ETag>\"e1\"</ETag><PartNumber>1</PartNumber></Part>"
                      "<Part><ETag>\"e2\"</ETag><PartNumber>2</PartNumber></Part>"
                      "<Part><ETag>\"e3\"</ETag><PartNumber>3</PartNumber></Part>"
                      "</CompleteMultipartUpload>";
    /* the JS SDK: a declaration, &quot;, per-part checksums, white space */
    const char *js = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><CompleteMultipartUpload "
                     "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n  <Part>"
                     "<ETag>&quot;08b4&quot;</ETag><ChecksumCRC32>+IxKeA==</ChecksumCRC32>"
                     "<PartNumber> 1 </PartNumber></Part><Part><PartNumber>7</PartNumber>"
                     "<ETag>&quot;09c5&quot;</ETag><Unknown>x</Unknown></Part>\n"
                     "</CompleteMultipartUpload>";
    s3a_error e = {0};
    for (size_t piece = 0; piece < 4; piece++) {
        s3a_xmlbody *x;
        assert_int_equal(parse_body(S3A_BODY_COMPLETE_MPU, cli, piece, &x, &e), 0);
        size_t n;
        const s3a_body_part *p = s3a_xmlbody_parts(x, &n);
        assert_int_equal(n, 3);
        assert_int_equal(p[2].number, 3);
        assert_string_equal(p[2].etag, "e3");
        s3a_xmlbody_destroy(&x);
        assert_int_equal(parse_body(S3A_BODY_COMPLETE_MPU, js, piece, &x, &e), 0);
        p = s3a_xmlbody_parts(x, &n);
        assert_int_equal(n, 2);
        assert_int_equal(p[0].number, 1);
        assert_string_equal(p[0].etag, "08b4");
        assert_string_equal(p[0].checksum[0], "+IxKeA==");
        assert_null(p[0].checksum[1]);
        assert_int_equal(p[1].number, 7);
        assert_string_equal(p[1].etag, "09c5");
        s3a_xmlbody_destroy(&x);
        assert_null(x);
    }
    s3a_error_deinit(&e);
}

static void test_complete_refused(void **state)
{
    (void)state;
    const struct {
        const char *xml;
        const char *code, *msg;
    } bad[] = {
        {"", "MalformedXML", "no <CompleteMultipartUpload>"},
        {"<CompleteMultipartUpload>", "MalformedXML", "not well-formed"},
        {"<CompleteMultipartUpload></CompleteMultipartUpload>", "InvalidRequest",
         "at least one part"},
        {"<Delete><Object><Key>a</Key></Object></Delete>", "MalformedXML", "root is <Delete>"},
        {"<CompleteMultipartUpload><Part><ETag>e</ETag></Part></CompleteMultipartUpload>",
         "MalformedXML", "<PartNumber> and an <ETag>"},
        {"<CompleteMultipartUpload><Part><PartNumber>2</PartNumber><ETag>e</ETag></Part>"
         "<Part><PartNumber>1</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>",
         "InvalidPartOrder", "ascending"},
        {"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>e</ETag></Part>"
         "<Part><PartNumber>1</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>",
         "InvalidPartOrder", "ascending"},
        {"<CompleteMultipartUpload><Part><PartNumber>0</PartNumber><ETag>e</ETag></Part>"
         "</CompleteMultipartUpload>",
         "InvalidArgument", "between 1 and 10000"},
        {"<CompleteMultipartUpload><Part><PartNumber>1x</PartNumber><ETag>e</ETag></Part>"
         "</CompleteMultipartUpload>",
         "InvalidArgument", "between 1 and 10000"},
        {"<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY a \"aaaa\">]><CompleteMultipartUpload/>",
         "MalformedXML", "DOCTYPE"},
        {"<CompleteMultipartUpload><a><b><c><d><e><f><g><h><i><j><k><l><m><n><o><p><q>",
         "MalformedXML", "deeper"},
        {"<CompleteMultipartUpload></CompleteMultipartUpload><x/>", "MalformedXML",
         "not well-formed"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        s3a_xmlbody *x;
        s3a_error e = {0};
        int rc = parse_body(S3A_BODY_COMPLETE_MPU, bad[i].xml, 0, &x, &e);
        if (rc != -EINVAL || strcmp(e.code, bad[i].code) != 0 || !strstr(e.message, bad[i].msg))
            fprintf(stderr, "case %zu: %d %s %s\n", i, rc, e.code ? e.code : "-", e.message);
        assert_int_equal(rc, -EINVAL);
        assert_int_equal(e.status, 400);
        assert_string_equal(e.code, bad[i].code);
        assert_non_null(strstr(e.message, bad[i].msg));
        size_t n;
        s3a_xmlbody_parts(x, &n);
        assert_int_equal(n, 0);
        s3a_xmlbody_destroy(&x);
        s3a_error_deinit(&e);
    }
    /* too large a body */
    s3a_xmlbody *x;
    s3a_error e = {0};
    assert_int_equal(s3a_xmlbody_create(&x, S3A_BODY_COMPLETE_MPU, 64), 0);
    char big[100];
    memset(big, ' ', sizeof big);
    assert_int_equal(s3a_xmlbody_feed(x, big, sizeof big, &e), -EINVAL);
    assert_non_null(strstr(e.message, "larger than 64 bytes"));
    s3a_xmlbody_destroy(&x);
    s3a_error_deinit(&e);
}

/* The dates S3's XML carries read back: what s3a_iso8601_ms writes, S3's
 * own forms with and without the fraction, and what is not a date. */
static void test_iso8601_read(void **state)
{
    (void)state;
    char d[25];
    s3a_iso8601_ms(T1, d);
    assert_int_equal(s3a_parse_iso8601(d), T1 / 1000);
    assert_int_equal(s3a_parse_iso8601("2024-01-01T00:00:00Z"), 1704067200);
    assert_int_equal(s3a_parse_iso8601("2009-10-12T17:50:30.000Z"), 1255369830);
    assert_int_equal(s3a_parse_iso8601("2024-02-30T00:00:00.000Z"), -1);
    assert_int_equal(s3a_parse_iso8601("2024-01-01 00:00:00.000Z"), -1);
    assert_int_equal(s3a_parse_iso8601("2024-01-01T0"), -1);
    assert_int_equal(s3a_parse_iso8601(""), -1);
    assert_int_equal(s3a_parse_iso8601(NULL), -1);
}

static void test_delete_body(void **state)
{
    (void)state;
    const char *xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Delete xmlns=\"http://s3."
                      "amazonaws.com/doc/2006-03-01/\"><Object><Key>a &amp; b </Key></Object>"
                      "<Object><Key>dir/k</Key><VersionId>v1</VersionId></Object>"
                      "<Quiet>true</Quiet></Delete>";
    s3a_error e = {0};
    for (size_t piece = 0; piece < 3; piece++) {
        s3a_xmlbody *x;
        assert_int_equal(parse_body(S3A_BODY_DELETE, xml, piece, &x, &e), 0);
        size_t n;
        bool quiet = false;
        const s3a_body_object *o = s3a_xmlbody_objects(x, &n, &quiet);
        assert_int_equal(n, 2);
        assert_true(quiet);
        assert_string_equal(o[0].key, "a & b ");
        assert_null(o[0].version_id);
        assert_string_equal(o[1].version_id, "v1");
        s3a_xmlbody_destroy(&x);
    }
    /* 1001 objects */
    s3a_buf b = {0};
    s3a_buf_adds(&b, "<Delete>");
    for (int i = 0; i < 1001; i++)
        s3a_buf_printf(&b, "<Object><Key>k%d</Key></Object>", i);
    s3a_buf_adds(&b, "</Delete>");
    s3a_xmlbody *x;
    assert_int_equal(parse_body(S3A_BODY_DELETE, b.p, 0, &x, &e), -EINVAL);
    assert_non_null(strstr(e.message, "at most 1000"));
    s3a_xmlbody_destroy(&x);
    s3a_buf_free(&b);
    const struct {
        const char *xml, *code, *msg;
    } bad[] = {
        {"<Delete></Delete>", "MalformedXML", "at least one <Object>"},
        {"<Delete><Object><VersionId>1</VersionId></Object></Delete>", "MalformedXML",
         "needs a <Key>"},
        {"<Delete><Object><Key>a</Key></Object><Quiet>yes</Quiet></Delete>", "MalformedXML",
         "true or false"},
        {"<Delete><Object><Key>a</Key><Key>b</Key></Object></Delete>", "MalformedXML", "twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse_body(S3A_BODY_DELETE, bad[i].xml, 0, &x, &e), -EINVAL);
        assert_string_equal(e.code, bad[i].code);
        assert_non_null(strstr(e.message, bad[i].msg));
        s3a_xmlbody_destroy(&x);
    }
    /* a key longer than S3 allows */
    s3a_buf_adds(&b, "<Delete><Object><Key>");
    for (int i = 0; i < 1025; i++)
        s3a_buf_add(&b, "k", 1);
    s3a_buf_adds(&b, "</Key></Object></Delete>");
    assert_int_equal(parse_body(S3A_BODY_DELETE, b.p, 0, &x, &e), -EINVAL);
    assert_string_equal(e.code, "KeyTooLongError");
    s3a_xmlbody_destroy(&x);
    s3a_buf_free(&b);
    s3a_error_deinit(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error),         cmocka_unit_test(test_list_v2),
        cmocka_unit_test(test_list_v1),       cmocka_unit_test(test_small_answers),
        cmocka_unit_test(test_complete_body), cmocka_unit_test(test_complete_refused),
        cmocka_unit_test(test_delete_body),   cmocka_unit_test(test_iso8601_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
