/* SPDX-License-Identifier: Apache-2.0
 *
 * test_engine_source.c: the argument parsers of file() and s3()
 * (src_s3url.c, src_args.c): every URL form of the ClickHouse documentation
 * for s3() (virtual-hosted and path-style AWS URLs, with and without a
 * region, the older s3-region form, dualstack, dotted bucket names, China's
 * partition, an endpoint with a port, s3://), percent-decoding of http keys,
 * and what is refused with a sentence; the structure argument; the
 * arguments after the path.
 */
#include "src_int.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

static void url_is(const char *url, int kind, const char *bucket, const char *key,
                   const char *region, const char *endpoint)
{
    src_s3_url u;
    char why[512] = "";
    int rc = src__s3_url_parse(url, &u, why, sizeof(why));
    if (rc != 0)
        fprintf(stderr, "%s: %s\n", url, why);
    assert_int_equal(rc, 0);
    assert_int_equal(u.kind, kind);
    assert_string_equal(u.bucket, bucket);
    assert_string_equal(u.key, key);
    assert_string_equal(u.region, region);
    assert_string_equal(u.endpoint, endpoint);
}

static void url_bad(const char *url, const char *needle)
{
    src_s3_url u;
    char why[512] = "";
    assert_int_equal(src__s3_url_parse(url, &u, why, sizeof(why)), -EINVAL);
    if (!strstr(why, needle))
        fprintf(stderr, "%s: '%s' lacks '%s'\n", url, why, needle);
    assert_non_null(strstr(why, needle));
}

static void test_s3_urls(void **state)
{
    (void)state;
    url_is("s3://bucket/data/*.parquet", SRC_URL_S3, "bucket", "data/*.parquet", "", "");
    url_is("s3://bucket/a%20b.csv", SRC_URL_S3, "bucket", "a%20b.csv", "", "");
    url_is("https://clickhouse-public-datasets.s3.eu-central-1.amazonaws.com/hits/hits_*.parquet",
           SRC_URL_AWS, "clickhouse-public-datasets", "hits/hits_*.parquet", "eu-central-1", "");
    url_is("https://datasets-documentation.s3.amazonaws.com/aapl_stock.csv", SRC_URL_AWS,
           "datasets-documentation", "aapl_stock.csv", "", "");
    url_is("https://my.dotted.bucket.s3-us-west-2.amazonaws.com/x/y.parquet", SRC_URL_AWS,
           "my.dotted.bucket", "x/y.parquet", "us-west-2", "");
    url_is("https://bucket.s3.dualstack.ap-south-1.amazonaws.com/k", SRC_URL_AWS, "bucket", "k",
           "ap-south-1", "");
    url_is("https://s3.us-east-2.amazonaws.com/bucket/dir/file%20name.csv", SRC_URL_AWS, "bucket",
           "dir/file name.csv", "us-east-2", "");
    url_is("https://s3.amazonaws.com/bucket/k{1..3}.tsv", SRC_URL_AWS, "bucket", "k{1..3}.tsv", "",
           "");
    url_is("https://S3-EU-WEST-1.AMAZONAWS.COM/bucket/K.csv", SRC_URL_AWS, "bucket", "K.csv",
           "eu-west-1", "");
    url_is("https://bucket.s3.cn-north-1.amazonaws.com.cn/k", SRC_URL_AWS, "bucket", "k",
           "cn-north-1", "");
    url_is("http://127.0.0.1:9000/bucket/data/*.parquet", SRC_URL_ENDPOINT, "bucket",
           "data/*.parquet", "", "http://127.0.0.1:9000");
    url_is("https://minio.example.com/bucket/k", SRC_URL_ENDPOINT, "bucket", "k", "",
           "https://minio.example.com");
    /* a port on an amazonaws.com name is not AWS's form: an endpoint, path style */
    url_is("https://s3.amazonaws.com:8443/bucket/k", SRC_URL_ENDPOINT, "bucket", "k", "",
           "https://s3.amazonaws.com:8443");
    url_bad("ftp://host/bucket/k", "bad S3 URL");
    url_bad("https://bucket.s3.amazonaws.com/k?versionId=3", "query string");
    url_bad("https://s3.us-east-2.amazonaws.com/", "names no bucket");
    url_bad("http://host:9000/", "names no bucket");
    url_bad("https://s3.amazonaws.com/bucket/a%2", "%-escape");
    url_bad("https://s3.amazonaws.com/bucket/a%00b", "%-escape");
    url_bad("https://s3.amazonaws.com/Bad_Bucket/k",
            "is not a valid bucket name: it has an upper-case letter");
    url_bad("https://user@host/bucket/k", "bad host");
}

static void test_structure(void **state)
{
    (void)state;
    eng_schema s;
    char err[512];
    assert_int_equal(src__structure_parse("id UInt64, `price $` Nullable(Decimal(12, 2)) ,"
                                          "ts DateTime64(3),name String",
                                          &s, err, sizeof(err)),
                     0);
    assert_true(s.given);
    assert_int_equal(s.n, 4);
    assert_string_equal(s.cols[1].name, "price $");
    assert_int_equal(s.cols[1].t.kind, EX_DECIMAL);
    assert_int_equal(s.cols[1].t.prec, 12);
    assert_int_equal(s.cols[1].t.scale, 2);
    assert_true(s.cols[1].t.nullable);
    assert_int_equal(s.cols[2].t.kind, EX_DATETIME);
    assert_int_equal(s.cols[2].t.scale, 3);
    assert_int_equal(s.cols[3].t.kind, EX_STRING);
    eng_schema_free(&s);
    assert_int_equal(src__structure_parse("a Strin", &s, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "unknown type 'Strin' of column 'a'"));
    assert_int_equal(src__structure_parse("a Int8, a Int16", &s, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "named twice"));
    assert_int_equal(src__structure_parse("", &s, err, sizeof(err)), -EINVAL);
    assert_int_equal(src__structure_parse("Int64", &s, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "write 'name Type, name Type'"));
    assert_int_equal(src__structure_parse("`a Int8", &s, err, sizeof(err)), -EINVAL);
    assert_int_equal(src__structure_parse("a Decimal(40, 2)", &s, err, sizeof(err)), -EINVAL);
}

static void test_tail_args(void **state)
{
    (void)state;
    sql_node p = {.kind = SQL_STRING, .s = "x.csv"}, f = {.kind = SQL_STRING, .s = "auto"},
             st = {.kind = SQL_STRING, .s = "a Int64"}, cz = {.kind = SQL_STRING, .s = "AUTO"},
             num = {.kind = SQL_INT, .line = 1, .col = 30};
    sql_node *args[5] = {&p, &f, &st, &cz, &st};
    eng_tf_call c = {"file", args, 4, 1, 1};
    src_fargs a;
    char err[512];
    assert_int_equal(src__tail_args(&c, 1, &a, err, sizeof(err)), 0);
    assert_null(a.format); /* 'auto': by the name */
    assert_string_equal(a.structure, "a Int64");
    assert_null(a.compression);
    c.n_args = 5;
    assert_int_equal(src__tail_args(&c, 1, &a, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "at most a format, a structure and a compression"));
    args[2] = &num;
    c.n_args = 3;
    assert_int_equal(src__tail_args(&c, 1, &a, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "line 1, column 30: the structure of file() must be a string"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_s3_urls),
        cmocka_unit_test(test_structure),
        cmocka_unit_test(test_tail_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
