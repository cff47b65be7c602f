/* SPDX-License-Identifier: Apache-2.0
 *
 * test_s3api_clients.c: the S3 API's pieces (cached/s3api/) and the HTTP core
 * (client/http/) against clients nobody here wrote: Debian's awscli 2.9 and
 * boto3 1.26 talk to s3stub.c (routing, SigV4/SigV2 verification,
 * aws-chunked decoding, checksums, XML, all live) over HTTP and HTTPS. Each
 * client's own success is the first check; the stub's counters then prove
 * the path each one took (Content-MD5 and payload SHA-256 checked, 100
 * Continue, multipart completed, SigV2 and SigV4 presigned URLs, the
 * STREAMING-UNSIGNED-PAYLOAD-TRAILER uploads with each checksum), so a client
 * quietly falling back to something simpler fails the test.
 *
 * Skipped (77) when /usr/bin/aws or Debian's python3-boto3 is missing
 * (scripts/setup.sh installs both).
 */
#include "harness.h"
#include "s3a_checksum.h"
#include "s3stub.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <openssl/ssl.h>

#define BUCKET "stub-bucket"
#define AKID   "AKIDSTUBTEST"
#define SECRET "stub/secret+key=="

static h_env *env;
static char cert[1024], key[1024];
static SSL_CTX *tls;

static int setup(void **state)
{
    (void)state;
    if (access("/usr/bin/aws", X_OK) != 0)
        h_skip("/usr/bin/aws (Debian's awscli) is not installed; scripts/setup.sh installs it");
    if (system("/usr/bin/python3 -c 'import boto3' >/dev/null 2>&1") != 0)
        h_skip("Debian's python3-boto3 is not installed; scripts/setup.sh installs it");
    if (h_env_create(&env, "test_s3api_clients") < 0)
        return -1;
    if (h_env_path(env, cert, sizeof cert, "cert.pem") < 0 ||
        h_env_path(env, key, sizeof key, "key.pem") < 0 || h_make_cert(cert, key) < 0)
        return -1;
    tls = SSL_CTX_new(TLS_server_method());
    if (tls == NULL || SSL_CTX_use_certificate_chain_file(tls, cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(tls, key, SSL_FILETYPE_PEM) != 1)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    SSL_CTX_free(tls);
    h_env_destroy(&env);
    return 0;
}

static void write_file(const char *name, size_t n, char path[1024])
{
    assert_int_equal(h_env_path(env, path, 1024, name), 0);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        fputc((int)(x & 0xff), f);
    }
    fclose(f);
}

static bool same_files(const char *a, const char *b)
{
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
    return system(cmd) == 0;
}

/* Runs awscli with the stub's credentials (or another secret). */
static void aws(h_run_result *r, const char *endpoint, const char *secret, const char *const *args)
{
    const char *argv[32] = {"/usr/bin/aws", "--endpoint-url", endpoint};
    int n = 3;
    if (strncmp(endpoint, "https", 5) == 0) {
        argv[n++] = "--ca-bundle";
        argv[n++] = cert;
    }
    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    char sk[200];
    snprintf(sk, sizeof sk, "AWS_SECRET_ACCESS_KEY=%s", secret ? secret : SECRET);
    const char *set[] = {"AWS_ACCESS_KEY_ID=" AKID,
                         sk,
                         "AWS_DEFAULT_REGION=us-east-1",
                         "AWS_PAGER=",
                         "AWS_EC2_METADATA_DISABLED=true",
                         "AWS_PROFILE",
                         "AWS_SESSION_TOKEN",
                         NULL};
    assert_int_equal(h_run(env, r, argv, set), 0);
    if (r->status != 0)
        fprintf(stderr, "aws %s %s: exit %d\n%s\n", args[0], args[1] ? args[1] : "", r->status,
                r->err);
}

static void test_awscli(void **state)
{
    (void)state;
    s3stub *s, *st;
    assert_int_equal(s3stub_start(&s, BUCKET, AKID, SECRET, NULL), 0);
    assert_int_equal(s3stub_start(&st, BUCKET, AKID, SECRET, tls), 0);
    s3stub_counts *c = s3stub_counts_of(s);
    char ep[64], eps[64], small[1024], big[1024], back[1024], part[1024];
    snprintf(ep, sizeof ep, "http://127.0.0.1:%d", s3stub_port(s));
    snprintf(eps, sizeof eps, "https://127.0.0.1:%d", s3stub_port(st));
    write_file("small.txt", 1024, small);
    write_file("big.bin", 20u << 20, big);
    assert_int_equal(h_env_path(env, back, sizeof back, "big.back"), 0);
    assert_int_equal(h_env_path(env, part, sizeof part, "part.bin"), 0);
    h_run_result r;

    /* a key that needs encoding, then a 20 MB multipart upload */
    aws(&r, ep, NULL,
        (const char *[]){"s3", "cp", small, "s3://" BUCKET "/dir/a b/c+d~e!.txt", NULL});
    assert_int_equal(r.status, 0);
    aws(&r, ep, NULL, (const char *[]){"s3", "cp", big, "s3://" BUCKET "/big.bin", NULL});
    assert_int_equal(r.status, 0);
    assert_true(atomic_load(&c->completed_uploads) >= 1);
    assert_true(atomic_load(&c->content_md5_checked) >= 4);
    assert_true(atomic_load(&c->payload_sha256_checked) >= 4);
    assert_true(atomic_load(&c->continue_sent) >= 4);

    /* paginated, url-encoded listing */
    aws(&r, ep, NULL,
        (const char *[]){"s3", "ls", "s3://" BUCKET, "--recursive", "--page-size", "1", NULL});
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, " 20971520 big.bin"));
    assert_non_null(strstr(r.out, "     1024 dir/a b/c+d~e!.txt"));
    aws(&r, ep, NULL, (const char *[]){"s3", "ls", "s3://" BUCKET "/dir/", NULL});
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "PRE a b/"));

    /* downloads: ranged parts in parallel, and one range */
    aws(&r, ep, NULL, (const char *[]){"s3", "cp", "s3://" BUCKET "/big.bin", back, NULL});
    assert_int_equal(r.status, 0);
    assert_true(same_files(big, back));
    aws(&r, ep, NULL,
        (const char *[]){"s3api", "get-object", "--bucket", BUCKET, "--key", "big.bin", "--range",
                         "bytes=100-199", part, NULL});
    assert_int_equal(r.status, 0);
    struct stat sb;
    assert_int_equal(stat(part, &sb), 0);
    assert_int_equal(sb.st_size, 100);
    aws(&r, ep, NULL,
        (const char *[]){"s3api", "head-object", "--bucket", BUCKET, "--key", "big.bin", NULL});
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\"ContentLength\": 20971520"));
    assert_non_null(strstr(r.out, "-3\\\"")); /* a multipart ETag */
    aws(&r, ep, NULL, (const char *[]){"s3api", "get-bucket-location", "--bucket", BUCKET, NULL});
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\"LocationConstraint\": null"));
    aws(&r, ep, NULL, (const char *[]){"s3", "ls", NULL});
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, BUCKET));

    /* presigned (SigV4), fetched by curl; then one that has expired */
    aws(&r, ep, NULL,
        (const char *[]){"s3", "presign", "s3://" BUCKET "/dir/a b/c+d~e!.txt", "--expires-in",
                         "600", NULL});
    assert_int_equal(r.status, 0);
    static char url[sizeof r.out];
    memcpy(url, r.out, sizeof r.out);
    url[strcspn(url, "\n")] = '\0';
    h_run_result cr;
    char out[1024];
    assert_int_equal(h_env_path(env, out, sizeof out, "presigned.out"), 0);
    const char *curl[] = {"/usr/bin/curl", "-sS", "-f", "-o", out, url, NULL};
    assert_int_equal(h_run(env, &cr, curl, NULL), 0);
    assert_int_equal(cr.status, 0);
    assert_true(same_files(small, out));
    assert_true(atomic_load(&c->sigv4_query) >= 1);
    aws(&r, ep, NULL,
        (const char *[]){"s3", "presign", "s3://" BUCKET "/big.bin", "--expires-in", "1", NULL});
    memcpy(url, r.out, sizeof r.out);
    url[strcspn(url, "\n")] = '\0';
    sleep(2); /* let it expire: its signature says one second */
    const char *curl2[] = {"/usr/bin/curl", "-sS", url, NULL};
    assert_int_equal(h_run(env, &cr, curl2, NULL), 0);
    assert_non_null(
        strstr(cr.out, "<Code>AccessDenied</Code><Message>Request has expired</Message>"));

    /* a wrong secret */
    aws(&r, ep, "not-the-secret", (const char *[]){"s3", "ls", "s3://" BUCKET, NULL});
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "SignatureDoesNotMatch"));
    assert_true(atomic_load(&c->refused_auth) >= 1);

    /* delete, then the object is gone */
    aws(&r, ep, NULL, (const char *[]){"s3", "rm", "s3://" BUCKET "/big.bin", NULL});
    assert_int_equal(r.status, 0);
    aws(&r, ep, NULL,
        (const char *[]){"s3api", "head-object", "--bucket", BUCKET, "--key", "big.bin", NULL});
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "404"));

    /* over TLS awscli signs UNSIGNED-PAYLOAD */
    int before = atomic_load(&s3stub_counts_of(st)->sigv4);
    aws(&r, eps, NULL, (const char *[]){"s3", "cp", small, "s3://" BUCKET "/tls.txt", NULL});
    assert_int_equal(r.status, 0);
    aws(&r, eps, NULL, (const char *[]){"s3", "cp", "s3://" BUCKET "/tls.txt", back, NULL});
    assert_int_equal(r.status, 0);
    assert_true(same_files(small, back));
    assert_true(atomic_load(&s3stub_counts_of(st)->sigv4) >= before + 2);
    assert_int_equal(atomic_load(&s3stub_counts_of(st)->payload_sha256_checked), 0);

    assert_int_equal(atomic_load(&c->anonymous), 0);
    assert_int_equal(atomic_load(&c->bad_digest), 0);
    s3stub_stop(&s);
    s3stub_stop(&st);
}

static void test_boto3(void **state)
{
    (void)state;
    s3stub *s, *st;
    assert_int_equal(s3stub_start(&s, BUCKET, AKID, SECRET, NULL), 0);
    assert_int_equal(s3stub_start(&st, BUCKET, AKID, SECRET, tls), 0);
    char ep[64], eps[64], script[1024];
    snprintf(ep, sizeof ep, "http://127.0.0.1:%d", s3stub_port(s));
    snprintf(eps, sizeof eps, "https://127.0.0.1:%d", s3stub_port(st));
    assert_int_equal(
        h_source_path(script, sizeof script, "tests/integration/s3api/boto3_client.py"), 0);
    const char *argv[] = {"/usr/bin/python3", script, ep, eps, cert, AKID, SECRET, BUCKET,
                          h_env_dir(env),     NULL};
    const char *set[] = {"AWS_EC2_METADATA_DISABLED=true", "AWS_PROFILE",
                         "AWS_CONFIG_FILE=/dev/null", "PYTHONDONTWRITEBYTECODE=1", NULL};
    h_run_result r;
    assert_int_equal(h_run(env, &r, argv, set), 0);
    if (r.status != 0)
        fprintf(stderr, "boto3_client.py: exit %d\n%s\n%s\n", r.status, r.out, r.err);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "ok wrong_secret"));

    s3stub_counts *c = s3stub_counts_of(s), *t = s3stub_counts_of(st);
    assert_true(atomic_load(&c->sigv2_query) >= 1);
    assert_true(atomic_load(&c->sigv4_query) >= 1);
    assert_true(atomic_load(&c->header_checksum[S3A_CK_CRC32]) >= 1);
    assert_true(atomic_load(&c->content_md5_checked) >= 1); /* DeleteObjects */
    assert_true(atomic_load(&c->completed_uploads) >= 1);
    /* each checksum came in an aws-chunked trailer over TLS, and was verified */
    assert_true(atomic_load(&t->chunked_unsigned_trailer) >= 4);
    assert_int_equal(atomic_load(&t->trailer_checksum[S3A_CK_CRC32]), 1);
    assert_int_equal(atomic_load(&t->trailer_checksum[S3A_CK_CRC32C]), 1);
    assert_int_equal(atomic_load(&t->trailer_checksum[S3A_CK_SHA1]), 1);
    assert_int_equal(atomic_load(&t->trailer_checksum[S3A_CK_SHA256]), 1);
    assert_int_equal(atomic_load(&c->bad_digest) + atomic_load(&t->bad_digest), 0);
    s3stub_stop(&s);
    s3stub_stop(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_awscli),
        cmocka_unit_test(test_boto3),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
