/* SPDX-License-Identifier: Apache-2.0
 *
 * test_query_cli.c: `ringcache query` as a user runs it, against
 * @20minutes/s3rver 5, which checks SigV4 signatures (a wrong secret is a 403
 * SignatureDoesNotMatch), with the process's AWS environment set to a key the
 * server does not take:
 *  - s3(url, 'KEY', 'SECRET' [, 'TOKEN'] [, 'Format']) reads with those
 *    credentials; a wrong secret fails with the same 403 sentence as
 *    `ringcache ls` gives for it; s3(url, NOSIGN) sends unsigned requests;
 *  - and with --cache too: such a source is read from S3 directly, never
 *    served by cache nodes that fill with other credentials (the nodes here
 *    are unreachable);
 *  - one credential chain: without credentials query fails as ls does (never
 *    anonymous unless --no-sign-request), --profile for both;
 *  - one set of connection options: query takes --token, --cache-tls,
 *    --cache-tls-ca, --cache-only, --region, --no-sign-request, ... and every
 *    command's --help lists them with their variables; --page-cache 1x is
 *    refused; a bad bucket name says which of S3's rules it breaks.
 * Skips (77) without node or the npm package.
 */
#include "harness.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#define KEY    "AKQUERYTEST"
#define SECRET "query-test-secret"

static h_env *env;
static h_s3 *s3;
static char cli[4096];

/* Runs the CLI with args (NULL-terminated, without the program) against the
 * test's S3 server, with the AWS environment given (NULL-terminated
 * "NAME=VALUE" / "NAME" entries after the endpoint). */
static void run_env(h_run_result *r, const char *const *set, const char *const *args)
{
    const char *argv[40];
    int n = 0;
    argv[n++] = cli;
    for (int i = 0; args[i] && n < 39; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    char ep[300];
    snprintf(ep, sizeof(ep), "AWS_ENDPOINT_URL=%s", h_s3_endpoint(s3));
    const char *all[24];
    int k = 0;
    all[k++] = ep;
    all[k++] = "AWS_PROFILE";
    all[k++] = "AWS_SESSION_TOKEN";
    all[k++] = "RINGCACHE_CACHE";
    all[k++] = "AWS_REGION=us-east-1";
    for (int i = 0; set && set[i] && k < 23; i++)
        all[k++] = set[i];
    all[k] = NULL;
    assert_int_equal(h_run(env, r, argv, all), 0);
}

/* The process's own credentials: a key the server knows with a wrong secret. */
static const char *const wrong_env[] = {"AWS_ACCESS_KEY_ID=" KEY,
                                        "AWS_SECRET_ACCESS_KEY=not-the-secret", NULL};
static const char *const right_env[] = {"AWS_ACCESS_KEY_ID=" KEY, "AWS_SECRET_ACCESS_KEY=" SECRET,
                                        NULL};

static void query(h_run_result *r, const char *const *set, const char *sql)
{
    run_env(r, set, (const char *[]){"query", "--format", "TSV", sql, NULL});
}

static int setup(void **state)
{
    (void)state;
    if (h_env_create(&env, "test_query_cli") < 0)
        return -1;
    if (h_build_path(cli, sizeof(cli), H_RINGCACHE_CLI) < 0)
        h_skip("the ringcache CLI is not built");
    h_s3_opts o = {.version = 5, .access_key = KEY, .secret_key = SECRET};
    int rc = h_s3_start(env, &s3, &o);
    if (rc == -ENOPKG)
        h_skip(h_last_error());
    assert_int_equal(rc, 0);
    char path[4096];
    h_env_path(env, path, sizeof(path), "t.csv");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("a,b\n1,x\n2,y\n3,z\n", f);
    fclose(f);
    h_run_result *r = malloc(sizeof(*r));
    run_env(r, right_env, (const char *[]){"put", path, "s3://ringcache-test/q/t.csv", NULL});
    assert_int_equal(r->status, 0);
    free(r);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (s3)
        assert_int_equal(h_proc_stop(h_s3_proc(s3), 5000), 0);
    h_env_destroy(&env);
    return 0;
}

static void test_credentials_in_s3(void **state)
{
    (void)state;
    h_run_result *r = malloc(sizeof(*r));
    /* the process's own (wrong) credentials fail, as ls does */
    query(r, wrong_env, "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv')");
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "403 SignatureDoesNotMatch"));
    /* the key and secret given to s3() are used for that source */
    query(r, wrong_env,
          "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', '" KEY "', '" SECRET "')");
    assert_int_equal(r->status, 0);
    assert_string_equal(r->out, "6\n");
    query(r, wrong_env,
          "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', '" KEY "', '" SECRET
          "', 'CSVWithNames')");
    assert_int_equal(r->status, 0);
    assert_string_equal(r->out, "6\n");
    /* a session token (s3rver ignores it; the form must parse and sign) */
    query(r, wrong_env,
          "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', '" KEY "', '" SECRET
          "', 'FwoGZXIvYXdzEJr//token=', 'CSVWithNames')");
    assert_int_equal(r->status, 0);
    assert_string_equal(r->out, "6\n");

    /* an unknown key in s3() fails, the advice naming it */
    query(r, right_env,
          "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', 'WRONG', "
          "'WRONG', 'CSVWithNames')");
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "403 InvalidAccessKeyId"));
    assert_non_null(strstr(r->err, "check the access key given to s3()"));
    assert_null(strstr(r->err, "AWS_ACCESS_KEY_ID"));

    /* a wrong secret in s3() fails with the sentence ls gives for a wrong secret,
     * even when the process's own credentials are right */
    query(r, right_env,
          "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', '" KEY "', "
          "'wrong-secret', 'CSVWithNames')");
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "403 SignatureDoesNotMatch"));
    /* its advice is about the secret given to s3(), not the environment's */
    assert_non_null(strstr(r->err, "check the secret given to s3()"));
    assert_null(strstr(r->err, "AWS_SECRET_ACCESS_KEY"));
    char ls_err[8192];
    run_env(r,
            (const char *[]){"AWS_ACCESS_KEY_ID=" KEY, "AWS_SECRET_ACCESS_KEY=wrong-secret", NULL},
            (const char *[]){"ls", "s3://ringcache-test/q/", NULL});
    assert_int_equal(r->status, 1);
    snprintf(ls_err, sizeof(ls_err), "%s", r->err);
    const char *what = strstr(ls_err, "access denied");
    assert_non_null(what);
    char sentence[200];
    snprintf(sentence, sizeof(sentence), "%.60s", what);
    query(r, right_env,
          "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', '" KEY "', "
          "'wrong-secret')");
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, sentence));

    /* NOSIGN: unsigned requests (s3rver takes them), whatever the environment */
    query(r, wrong_env, "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', NOSIGN)");
    assert_int_equal(r->status, 0);
    assert_string_equal(r->out, "6\n");
    query(r, wrong_env,
          "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', 'nosign', "
          "'CSVWithNames')");
    assert_int_equal(r->status, 0);
    assert_string_equal(r->out, "6\n");

    /* forms that cannot be meant: a misspelt format is not taken for a token */
    query(r, right_env,
          "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', '" KEY "', '" SECRET
          "', 'CSVWithNamez')");
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "unknown input format 'CSVWithNamez'"));
    query(r, right_env, "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', '', '" SECRET "')");
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "access key is empty"));
    free(r);
}

static void test_credentials_in_s3_with_cache(void **state)
{
    (void)state;
    h_run_result *r = malloc(sizeof(*r));
    /* port 1: nothing listens. A source with its own key is read from S3
     * directly, so the query answers; the query's own source goes through the
     * cache client, which warns about the node. */
    run_env(r, wrong_env,
            (const char *[]){"query", "--format", "TSV", "--cache", "n0=127.0.0.1:1",
                             "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', '" KEY
                             "', '" SECRET "')",
                             NULL});
    assert_int_equal(r->status, 0);
    assert_string_equal(r->out, "6\n");
    run_env(r, wrong_env,
            (const char *[]){"query", "--format", "TSV", "--cache", "n0=127.0.0.1:1",
                             "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', '" KEY "', "
                             "'wrong-secret')",
                             NULL});
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "403 SignatureDoesNotMatch"));
    free(r);
}

/* No credentials anywhere: query fails as ls does, with the same sentence,
 * instead of going anonymous; unsigned only with --no-sign-request. */
static void test_one_credential_chain(void **state)
{
    (void)state;
    h_run_result *r = malloc(sizeof(*r));
    static const char *const none[] = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", NULL};
    const char *sql = "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv')";
    run_env(r, none, (const char *[]){"ls", "s3://ringcache-test/q/", NULL});
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "no S3 credentials were found"));
    char ls_err[8192];
    snprintf(ls_err, sizeof(ls_err), "%s", strstr(r->err, "no S3 credentials"));
    query(r, none, sql);
    assert_int_equal(r->status, 1);
    assert_string_equal(r->out, "");
    assert_non_null(strstr(r->err, ls_err));
    /* asked for: unsigned requests, for both */
    run_env(r, none, (const char *[]){"ls", "s3://ringcache-test/q/", "--no-sign-request", NULL});
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "s3://ringcache-test/q/t.csv"));
    run_env(r, none, (const char *[]){"query", "--format", "TSV", "--no-sign-request", sql, NULL});
    assert_int_equal(r->status, 0);
    assert_string_equal(r->out, "6\n");
    /* --profile: the section of ~/.aws/credentials (HOME is the test's folder) */
    char path[4096];
    h_env_path(env, path, sizeof(path), ".aws");
    assert_int_equal(mkdir(path, 0700), 0);
    h_env_path(env, path, sizeof(path), ".aws/credentials");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("[qp]\naws_access_key_id = " KEY "\naws_secret_access_key = " SECRET "\n", f);
    fclose(f);
    run_env(r, none, (const char *[]){"query", "--format", "TSV", "--profile", "qp", sql, NULL});
    assert_int_equal(r->status, 0);
    assert_string_equal(r->out, "6\n");
    run_env(r, none, (const char *[]){"ls", "--profile=qp", "s3://ringcache-test/q/", NULL});
    assert_int_equal(r->status, 0);
    /* a misspelt --profile is named as the flag it came from, for both */
    run_env(r, none, (const char *[]){"query", "--profile", "qpp", sql, NULL});
    assert_int_equal(r->status, 2);
    assert_non_null(strstr(r->err, "AWS profile 'qpp' (from --profile) is in neither"));
    assert_null(strstr(r->err, "AWS_PROFILE"));
    run_env(r, none, (const char *[]){"ls", "--profile=qpp", "s3://ringcache-test/q/", NULL});
    assert_int_equal(r->status, 2);
    assert_non_null(strstr(r->err, "(from --profile)"));
    assert_int_equal(unlink(path), 0);
    free(r);
}

/* query takes the connection options every command takes, and every
 * command's --help lists them with their variables. */
static void test_one_set_of_options(void **state)
{
    (void)state;
    h_run_result *r = malloc(sizeof(*r));
    const char *sql = "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv')";
    /* port 1: the node is down, the bytes come from S3 */
    run_env(r, right_env,
            (const char *[]){"query", "--format", "TSV", "--cache", "n0=127.0.0.1:1", "--token",
                             "tenant-token", "--region", "us-east-1", "--hedge-ms", "100",
                             "--no-fill", sql, NULL});
    assert_int_equal(r->status, 0);
    assert_string_equal(r->out, "6\n");
    assert_non_null(strstr(r->err, "warning: cache node n0 (127.0.0.1:1) is not used"));
    run_env(r, right_env,
            (const char *[]){"query", "--format", "TSV", "--cache", "n0=127.0.0.1:1",
                             "--cache-only",
                             "SELECT sum(a) FROM s3('s3://ringcache-test/q/"
                             "t.csv')",
                             NULL});
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "cache_only"));
    run_env(r, right_env,
            (const char *[]){"query", "--cache", "n0=127.0.0.1:1", "--cache-tls-ca",
                             "/nonexistent/ca.pem", sql, NULL});
    assert_int_equal(r->status, 2);
    assert_non_null(strstr(r->err, "/nonexistent/ca.pem"));
    run_env(r, right_env,
            (const char *[]){"query", "--format", "TSV", "--cache", "n0=127.0.0.1:1", "--cache-tls",
                             sql, NULL});
    assert_int_equal(r->status, 0);
    /* one size parser: junk is refused, not read as its digits */
    run_env(r, right_env, (const char *[]){"query", "--page-cache", "1x", sql, NULL});
    assert_int_equal(r->status, 2);
    assert_non_null(strstr(r->err, "--page-cache: '1x' is not a size"));
    /* every command lists every connection option, with its variable */
    static const char *const cmds[] = {"ls", "head",  "get",  "cat",  "put",
                                       "rm", "stats", "warm", "query"};
    static const char *const want[] = {"--endpoint",
                                       "--region",
                                       "--profile",
                                       "--no-sign-request",
                                       "--cache MEMBERS",
                                       "--token",
                                       "--cache-tls ",
                                       "--cache-tls-ca",
                                       "--cache-only",
                                       "--no-fill",
                                       "RINGCACHE_CACHE)",
                                       "RINGCACHE_TOKEN",
                                       "RINGCACHE_CACHE_TLS=1",
                                       "RINGCACHE_CACHE_TLS_CA",
                                       "AWS_ACCESS_KEY_ID",
                                       "AWS_PROFILE"};
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        run_env(r, right_env, (const char *[]){cmds[c], "--help", NULL});
        assert_int_equal(r->status, 0);
        for (size_t w = 0; w < sizeof want / sizeof want[0]; w++)
            if (!strstr(r->out, want[w]))
                fail_msg("ringcache %s --help lacks '%s'", cmds[c], want[w]);
    }
    free(r);
}

/* A bucket name S3 refuses: the sentence says which rule, wherever a bucket
 * is parsed. */
static void test_bad_bucket_names(void **state)
{
    (void)state;
    h_run_result *r = malloc(sizeof(*r));
    const char *why = "'Bad_Bucket' in s3://Bad_Bucket/x is not a valid bucket name: it has an "
                      "upper-case letter";
    run_env(r, right_env, (const char *[]){"ls", "s3://Bad_Bucket/x", NULL});
    assert_int_equal(r->status, 2);
    assert_non_null(strstr(r->err, why));
    assert_non_null(strstr(r->err, "S3's rules: 3 to 63 characters"));
    run_env(r, right_env, (const char *[]){"cat", "s3://Bad_Bucket/x", NULL});
    assert_int_equal(r->status, 2);
    assert_non_null(strstr(r->err, why));
    query(r, right_env, "SELECT * FROM s3('s3://Bad_Bucket/x')");
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, why));
    assert_non_null(strstr(r->err, "line 1, column 15"));
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_credentials_in_s3),
        cmocka_unit_test(test_credentials_in_s3_with_cache),
        cmocka_unit_test(test_one_credential_chain),
        cmocka_unit_test(test_one_set_of_options),
        cmocka_unit_test(test_bad_bucket_names),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
