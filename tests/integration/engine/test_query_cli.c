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
 *    are unreachable, and the query succeeds with no word about them).
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
#include <cmocka.h>

#define KEY "AKQUERYTEST"
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
static const char *const right_env[] = {"AWS_ACCESS_KEY_ID=" KEY,
                                        "AWS_SECRET_ACCESS_KEY=" SECRET, NULL};

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
    query(r, wrong_env, "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', '" KEY "', '"
                        SECRET "')");
    assert_int_equal(r->status, 0);
    assert_string_equal(r->out, "6\n");
    query(r, wrong_env, "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', '" KEY "', '"
                        SECRET "', 'CSVWithNames')");
    assert_int_equal(r->status, 0);
    assert_string_equal(r->out, "6\n");
    /* a session token (s3rver ignores it; the form must parse and sign) */
    query(r, wrong_env, "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', '" KEY "', '"
                        SECRET "', 'FwoGZXIvYXdzEJr//token=', 'CSVWithNames')");
    assert_int_equal(r->status, 0);
    assert_string_equal(r->out, "6\n");

    /* a wrong secret in s3() fails with the sentence ls gives for a wrong secret,
     * even when the process's own credentials are right */
    query(r, right_env, "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', '" KEY "', "
                        "'wrong-secret', 'CSVWithNames')");
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "403 SignatureDoesNotMatch"));
    assert_non_null(strstr(r->err, "given to s3()"));
    char ls_err[8192];
    run_env(r, (const char *[]){"AWS_ACCESS_KEY_ID=" KEY, "AWS_SECRET_ACCESS_KEY=wrong-secret",
                                NULL},
            (const char *[]){"ls", "s3://ringcache-test/q/", NULL});
    assert_int_equal(r->status, 1);
    snprintf(ls_err, sizeof(ls_err), "%s", r->err);
    const char *what = strstr(ls_err, "access denied");
    assert_non_null(what);
    char sentence[200];
    snprintf(sentence, sizeof(sentence), "%.60s", what);
    query(r, right_env, "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', '" KEY "', "
                        "'wrong-secret')");
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, sentence));

    /* NOSIGN: unsigned requests (s3rver takes them), whatever the environment */
    query(r, wrong_env, "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', NOSIGN)");
    assert_int_equal(r->status, 0);
    assert_string_equal(r->out, "6\n");
    query(r, wrong_env, "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', 'nosign', "
                        "'CSVWithNames')");
    assert_int_equal(r->status, 0);
    assert_string_equal(r->out, "6\n");

    /* forms that cannot be meant: a misspelt format is not taken for a token */
    query(r, right_env, "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', '" KEY "', '"
                        SECRET "', 'CSVWithNamez')");
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "unknown input format 'CSVWithNamez'"));
    query(r, right_env, "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', '', '"
                        SECRET "')");
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
                             "SELECT sum(a) FROM s3('s3://ringcache-test/q/t.csv', '" KEY "', '"
                             SECRET "')",
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_credentials_in_s3),
        cmocka_unit_test(test_credentials_in_s3_with_cache),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
