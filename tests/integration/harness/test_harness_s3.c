/* SPDX-License-Identifier: Apache-2.0
 *
 * Self-tests of the harness's S3 servers: s3rver 3 and @20minutes/s3rver 5 start
 * on a free loopback port with their buckets, an object PUT through libcurl reads
 * back byte-exact, ListObjectsV2 pagination works (the legacy-provider fix), v5
 * rejects a wrong secret with 403 and accepts the right one, custom credentials
 * replace the default, and both exit 0 on SIGTERM. Conditional writes answer as
 * AWS S3 does on both versions (If-None-Match: * and If-Match on PutObject and
 * CompleteMultipartUpload: 412, 404 for If-Match on a missing key; of writers
 * racing for a new key exactly one wins), and --no-conditional-writes ignores
 * them. Skips (77) without node.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "harness.h"

static void put_get_roundtrip(const h_s3 *s3, const char *bucket)
{
    enum { N = 3 * 1024 * 1024 + 17 };
    char *data = malloc(N);
    assert_non_null(data);
    for (size_t i = 0; i < N; i++)
        data[i] = (char)(i * 2654435761u >> 13);
    char url[512];
    snprintf(url, sizeof(url), "%s/%s/dir/obj.bin", h_s3_endpoint(s3), bucket);
    h_http_req put = {.method = "PUT", .url = url, .body = data, .body_len = N};
    h_http_resp resp;
    assert_int_equal(h_http(&put, &resp), 200);
    h_http_resp_deinit(&resp);

    assert_int_equal(h_http_get(url, &resp), 200);
    assert_int_equal(resp.body_len, N);
    assert_memory_equal(resp.body, data, N);
    char etag[128];
    assert_true(h_http_header(&resp, "ETag", etag, sizeof(etag)) > 2);
    h_http_resp_deinit(&resp);

    /* A ranged GET. */
    const char *range[] = {"Range: bytes=100-199", NULL};
    h_http_req get = {.method = "GET", .url = url, .headers = range};
    assert_int_equal(h_http(&get, &resp), 206);
    assert_int_equal(resp.body_len, 100);
    assert_memory_equal(resp.body, data + 100, 100);
    h_http_resp_deinit(&resp);
    free(data);

    /* A missing key is a 404 with an S3 error body. */
    snprintf(url, sizeof(url), "%s/%s/no-such-key", h_s3_endpoint(s3), bucket);
    assert_int_equal(h_http_get(url, &resp), 404);
    assert_non_null(strstr(resp.body, "NoSuchKey"));
    h_http_resp_deinit(&resp);
}

static void list_paginates(const h_s3 *s3, const char *bucket)
{
    char url[2048];
    for (int i = 0; i < 3; i++) {
        snprintf(url, sizeof(url), "%s/%s/page/k%d", h_s3_endpoint(s3), bucket, i);
        h_http_req put = {.method = "PUT", .url = url, .body = "x", .body_len = 1};
        assert_int_equal(h_http(&put, NULL), 200);
    }
    snprintf(url, sizeof(url), "%s/%s?list-type=2&prefix=page/&max-keys=2", h_s3_endpoint(s3),
             bucket);
    h_http_resp resp;
    assert_int_equal(h_http_get(url, &resp), 200);
    assert_non_null(strstr(resp.body, "<IsTruncated>true</IsTruncated>"));
    const char *tok = strstr(resp.body, "<NextContinuationToken>");
    assert_non_null(tok);
    tok += strlen("<NextContinuationToken>");
    const char *end = strstr(tok, "</NextContinuationToken>");
    assert_non_null(end);
    char token[512];
    snprintf(token, sizeof(token), "%.*s", (int)(end - tok), tok);
    h_http_resp_deinit(&resp);
    /* Token is base64: escape + / = for the query. */
    char esc[1024] = "";
    for (const char *p = token; *p != '\0'; p++) {
        char e[4] = {*p, 0};
        if (*p == '+' || *p == '/' || *p == '=')
            snprintf(e, sizeof(e), "%%%02X", (unsigned char)*p);
        strcat(esc, e);
    }
    snprintf(url, sizeof(url), "%s/%s?list-type=2&prefix=page/&max-keys=2&continuation-token=%s",
             h_s3_endpoint(s3), bucket, esc);
    assert_int_equal(h_http_get(url, &resp), 200);
    assert_non_null(strstr(resp.body, "page/k2"));
    assert_null(strstr(resp.body, "page/k0"));
    h_http_resp_deinit(&resp);
}

static int cond_put(const char *url, const char *cond, const char *body)
{
    const char *hdrs[] = {cond, NULL};
    h_http_req put = {.method = "PUT",
                      .url = url,
                      .body = body,
                      .body_len = strlen(body),
                      .headers = cond != NULL ? hdrs : NULL};
    h_http_resp resp;
    int st = h_http(&put, &resp);
    if (st == 412)
        assert_non_null(strstr(resp.body, "PreconditionFailed"));
    if (st == 404)
        assert_non_null(strstr(resp.body, "NoSuchKey"));
    h_http_resp_deinit(&resp);
    return st;
}

static void get_body(const char *url, const char *want)
{
    h_http_resp resp;
    assert_int_equal(h_http_get(url, &resp), 200);
    assert_int_equal(resp.body_len, strlen(want));
    assert_memory_equal(resp.body, want, strlen(want));
    h_http_resp_deinit(&resp);
}

static void etag_of(const char *url, char *etag, size_t len)
{
    h_http_resp resp;
    assert_int_equal(h_http_get(url, &resp), 200);
    assert_true(h_http_header(&resp, "ETag", etag, len) > 2);
    h_http_resp_deinit(&resp);
}

typedef struct racer {
    const char *url;
    char body[32];
    int status;
} racer;

static void *race_put(void *arg)
{
    racer *r = arg;
    r->status = cond_put(r->url, "If-None-Match: *", r->body);
    return NULL;
}

/* Multipart upload of one part with an optional condition on Complete. */
static int multipart_put(const char *url, const char *cond, const char *body)
{
    char u[1024];
    snprintf(u, sizeof(u), "%s?uploads", url);
    h_http_req init = {.method = "POST", .url = u};
    h_http_resp resp;
    assert_int_equal(h_http(&init, &resp), 200);
    const char *a = strstr(resp.body, "<UploadId>");
    assert_non_null(a);
    a += strlen("<UploadId>");
    const char *b = strstr(a, "</UploadId>");
    assert_non_null(b);
    char id[256];
    snprintf(id, sizeof(id), "%.*s", (int)(b - a), a);
    h_http_resp_deinit(&resp);

    snprintf(u, sizeof(u), "%s?partNumber=1&uploadId=%s", url, id);
    h_http_req part = {.method = "PUT", .url = u, .body = body, .body_len = strlen(body)};
    assert_int_equal(h_http(&part, &resp), 200);
    char etag[128];
    assert_true(h_http_header(&resp, "ETag", etag, sizeof(etag)) > 2);
    h_http_resp_deinit(&resp);

    char xml[512];
    snprintf(xml, sizeof(xml),
             "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>"
             "</CompleteMultipartUpload>",
             etag);
    snprintf(u, sizeof(u), "%s?uploadId=%s", url, id);
    const char *hdrs[] = {cond, NULL};
    h_http_req done = {.method = "POST",
                       .url = u,
                       .body = xml,
                       .body_len = strlen(xml),
                       .headers = cond != NULL ? hdrs : NULL};
    int st = h_http(&done, &resp);
    if (st == 412)
        assert_non_null(strstr(resp.body, "PreconditionFailed"));
    h_http_resp_deinit(&resp);
    return st;
}

static void conditional_writes(const h_s3 *s3)
{
    char url[512], etag[128], cond[200];
    snprintf(url, sizeof(url), "%s/%s/cond/k", h_s3_endpoint(s3), H_S3_DEFAULT_BUCKET);

    /* If-None-Match: * creates once, then refuses, and leaves the first bytes. */
    assert_int_equal(cond_put(url, "If-None-Match: *", "first"), 200);
    assert_int_equal(cond_put(url, "If-None-Match: *", "second"), 412);
    get_body(url, "first");

    /* If-Match: the current ETag replaces; a stale one is refused. */
    etag_of(url, etag, sizeof(etag));
    snprintf(cond, sizeof(cond), "If-Match: %s", etag);
    assert_int_equal(cond_put(url, cond, "third"), 200);
    get_body(url, "third");
    assert_int_equal(cond_put(url, cond, "fourth"), 412);
    get_body(url, "third");

    /* If-Match on a key that does not exist: 404 NoSuchKey, nothing written. */
    char missing[512];
    snprintf(missing, sizeof(missing), "%s/%s/cond/missing", h_s3_endpoint(s3),
             H_S3_DEFAULT_BUCKET);
    assert_int_equal(cond_put(missing, cond, "x"), 404);
    h_http_resp resp;
    assert_int_equal(h_http_get(missing, &resp), 404);
    h_http_resp_deinit(&resp);

    /* CompleteMultipartUpload honours If-None-Match: * too. */
    char mp[512];
    snprintf(mp, sizeof(mp), "%s/%s/cond/mp", h_s3_endpoint(s3), H_S3_DEFAULT_BUCKET);
    assert_int_equal(multipart_put(mp, "If-None-Match: *", "multi-1"), 200);
    assert_int_equal(multipart_put(mp, "If-None-Match: *", "multi-2"), 412);
    get_body(mp, "multi-1");

    /* Eight writers race for one new key: exactly one wins, its bytes stay. */
    enum { N = 8 };
    char raced[512];
    snprintf(raced, sizeof(raced), "%s/%s/cond/raced", h_s3_endpoint(s3), H_S3_DEFAULT_BUCKET);
    racer r[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        r[i].url = raced;
        snprintf(r[i].body, sizeof(r[i].body), "writer-%d", i);
        assert_int_equal(pthread_create(&th[i], NULL, race_put, &r[i]), 0);
    }
    int won = -1, wins = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        if (r[i].status == 200) {
            wins++;
            won = i;
        } else {
            assert_int_equal(r[i].status, 412);
        }
    }
    assert_int_equal(wins, 1);
    get_body(raced, r[won].body);

    /* Unconditional PUTs still overwrite. */
    assert_int_equal(cond_put(url, NULL, "plain"), 200);
    get_body(url, "plain");
}

static void test_conditional_writes(void **state)
{
    (void)state;
    for (int v = 3; v <= 5; v += 2) {
        h_env *env;
        assert_int_equal(h_env_create(&env, "h_s3_cond"), 0);
        h_s3_opts o = {.version = v};
        h_s3 *s3;
        assert_int_equal(h_s3_start(env, &s3, &o), 0);
        conditional_writes(s3);
        assert_int_equal(h_proc_stop(h_s3_proc(s3), 5000), 0);
        h_env_destroy(&env);
    }
}

static void test_conditional_writes_off(void **state)
{
    (void)state;
    h_env *env;
    assert_int_equal(h_env_create(&env, "h_s3_nocond"), 0);
    h_s3_opts o = {.version = 3, .no_conditional_writes = 1};
    h_s3 *s3;
    assert_int_equal(h_s3_start(env, &s3, &o), 0);
    char url[512];
    snprintf(url, sizeof(url), "%s/%s/nocond/k", h_s3_endpoint(s3), H_S3_DEFAULT_BUCKET);
    assert_int_equal(cond_put(url, "If-None-Match: *", "first"), 200);
    assert_int_equal(cond_put(url, "If-None-Match: *", "second"), 200);
    get_body(url, "second");
    assert_int_equal(h_proc_stop(h_s3_proc(s3), 5000), 0);
    h_env_destroy(&env);
}

static void test_s3rver_v3(void **state)
{
    (void)state;
    h_env *env;
    assert_int_equal(h_env_create(&env, "h_s3rver_v3"), 0);
    const char *buckets[] = {"bucket-one", "bucket-two", NULL};
    h_s3_opts o = {.version = 3, .buckets = buckets};
    h_s3 *s3;
    assert_int_equal(h_s3_start(env, &s3, &o), 0);
    char want[64];
    snprintf(want, sizeof(want), "http://127.0.0.1:%d", h_s3_port(s3));
    assert_string_equal(h_s3_endpoint(s3), want);
    put_get_roundtrip(s3, "bucket-one");
    put_get_roundtrip(s3, "bucket-two");
    list_paginates(s3, "bucket-one");
    /* The data lives inside the test folder. */
    struct stat st;
    assert_int_equal(stat(h_s3_data_dir(s3), &st), 0);
    assert_int_equal(strncmp(h_s3_data_dir(s3), h_env_dir(env), strlen(h_env_dir(env))), 0);
    assert_int_equal(h_proc_stop(h_s3_proc(s3), 5000), 0);
    h_env_destroy(&env);
}

static int signed_get(const char *url, const char *userpwd)
{
    const char *hdrs[] = {"x-amz-content-sha256: UNSIGNED-PAYLOAD", NULL};
    h_http_req req = {.method = "GET",
                      .url = url,
                      .headers = hdrs,
                      .aws_sigv4 = "aws:amz:us-east-1:s3",
                      .userpwd = userpwd};
    h_http_resp resp;
    int st = h_http(&req, &resp);
    if (st == 403)
        assert_true(strstr(resp.body, "SignatureDoesNotMatch") != NULL ||
                    strstr(resp.body, "InvalidAccessKeyId") != NULL);
    h_http_resp_deinit(&resp);
    return st;
}

static void test_s3rver_v5_sigv4(void **state)
{
    (void)state;
    h_env *env;
    assert_int_equal(h_env_create(&env, "h_s3rver_v5"), 0);
    h_s3_opts o = {.version = 5};
    h_s3 *s3;
    assert_int_equal(h_s3_start(env, &s3, &o), 0);
    put_get_roundtrip(s3, H_S3_DEFAULT_BUCKET);
    list_paginates(s3, H_S3_DEFAULT_BUCKET);
    char url[512];
    snprintf(url, sizeof(url), "%s/%s/dir/obj.bin", h_s3_endpoint(s3), H_S3_DEFAULT_BUCKET);
    assert_int_equal(signed_get(url, "S3RVER:S3RVER"), 200);
    assert_int_equal(signed_get(url, "S3RVER:wrong-secret"), 403);
    assert_int_equal(h_proc_stop(h_s3_proc(s3), 5000), 0);
    h_env_destroy(&env);
}

static void test_custom_credentials(void **state)
{
    (void)state;
    h_env *env;
    assert_int_equal(h_env_create(&env, "h_s3rver_creds"), 0);
    h_s3_opts o = {
        .version = 5, .access_key = "AKIDRINGCACHE", .secret_key = "s3cr3t", .name = "s3creds"};
    h_s3 *s3;
    assert_int_equal(h_s3_start(env, &s3, &o), 0);
    char url[512];
    snprintf(url, sizeof(url), "%s/%s/k", h_s3_endpoint(s3), H_S3_DEFAULT_BUCKET);
    h_http_req put = {.method = "PUT", .url = url, .body = "v", .body_len = 1};
    assert_int_equal(h_http(&put, NULL), 200);
    assert_int_equal(signed_get(url, "AKIDRINGCACHE:s3cr3t"), 200);
    assert_int_equal(signed_get(url, "S3RVER:S3RVER"), 403);
    /* h_env_destroy stops it (no explicit stop here). */
    pid_t pid = h_proc_pid(h_s3_proc(s3));
    h_env_destroy(&env);
    assert_int_equal(kill(pid, 0), -1);
}

int main(void)
{
    /* Probe once: skip the whole binary (77) when node or the npm tools are missing. */
    h_env *env;
    if (h_env_create(&env, "h_s3_probe") != 0)
        return 1;
    h_s3 *s3;
    int rc = h_s3_start(env, &s3, NULL);
    if (rc == -ENOPKG) {
        h_env_destroy(&env);
        h_skip(h_last_error());
    }
    if (rc == 0 && h_proc_stop(h_s3_proc(s3), 5000) != 0)
        rc = -EIO;
    h_env_destroy(&env);
    if (rc != 0) {
        fprintf(stderr, "cannot start s3rver: %s\n", h_last_error());
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_s3rver_v3),
        cmocka_unit_test(test_s3rver_v5_sigv4),
        cmocka_unit_test(test_custom_credentials),
        cmocka_unit_test(test_conditional_writes),
        cmocka_unit_test(test_conditional_writes_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
