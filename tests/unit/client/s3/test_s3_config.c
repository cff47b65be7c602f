/* SPDX-License-Identifier: Apache-2.0
 *
 * test_s3_config.c: s3_config_init's defaults and s3_config_from_env reading
 * the AWS environment and shared files the way the AWS CLI does. Each test
 * gets a fresh temporary HOME and a clean AWS_* environment (setenv in this
 * process), writes the files it needs, and removes them afterwards.
 */
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

#include "s3_int.h"

static const char *aws_vars[] = {
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",       "AWS_SESSION_TOKEN", "AWS_PROFILE",
    "AWS_REGION",        "AWS_DEFAULT_REGION",          "AWS_ENDPOINT_URL",  "AWS_ENDPOINT_URL_S3",
    "AWS_CA_BUNDLE",     "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
};

typedef struct fixture {
    char home[256];
    char aws[300];
    char cred[320];
    char conf[320];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (f == NULL)
        return -1;
    snprintf(f->home, sizeof f->home, "/tmp/ringcache-s3cfg-XXXXXX");
    if (mkdtemp(f->home) == NULL)
        return -1;
    snprintf(f->aws, sizeof f->aws, "%s/.aws", f->home);
    snprintf(f->cred, sizeof f->cred, "%s/credentials", f->aws);
    snprintf(f->conf, sizeof f->conf, "%s/config", f->aws);
    if (mkdir(f->aws, 0700) != 0)
        return -1;
    for (size_t i = 0; i < sizeof aws_vars / sizeof aws_vars[0]; i++)
        unsetenv(aws_vars[i]);
    setenv("HOME", f->home, 1);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    unlink(f->cred);
    unlink(f->conf);
    char other[400];
    snprintf(other, sizeof other, "%s/other-credentials", f->home);
    unlink(other);
    rmdir(f->aws);
    rmdir(f->home);
    free(f);
    return 0;
}

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    assert_int_equal(fputs(text, fp) >= 0, 1);
    assert_int_equal(fclose(fp), 0);
}

static int load(s3_config *c, char *err, size_t errlen)
{
    s3_config_init(c);
    return s3_config_from_env(c, err, errlen);
}

static void test_defaults(void **state)
{
    (void)state;
    s3_config c;
    memset(&c, 0x7f, sizeof c);
    s3_config_init(&c);
    assert_string_equal(c.endpoint, "");
    assert_string_equal(c.region, "us-east-1");
    assert_string_equal(c.access_key, "");
    assert_string_equal(c.secret_key, "");
    assert_string_equal(c.session_token, "");
    assert_string_equal(c.ca_bundle, "");
    assert_false(c.anonymous);
    assert_false(c.path_style);
    assert_true(c.verify_tls);
    assert_int_equal(c.connect_timeout_ms, 3000);
    assert_int_equal(c.request_timeout_ms, 30000);
    assert_int_equal(c.max_attempts, 5);
    assert_int_equal(c.retry_base_ms, 100);
    assert_int_equal(c.retry_cap_ms, 5000);
    assert_int_equal(c.retry_budget_ms, 60000);
    assert_int_equal(c.max_connections, 64);
}

static void test_nothing_set(void **state)
{
    (void)state;
    s3_config c;
    char err[512] = "x";
    assert_int_equal(load(&c, err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_string_equal(c.access_key, "");
    assert_string_equal(c.region, "us-east-1");
    assert_false(c.path_style);
}

static void test_env_credentials(void **state)
{
    (void)state;
    setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
    setenv("AWS_SESSION_TOKEN", "envtoken", 1);
    setenv("AWS_DEFAULT_REGION", "eu-west-1", 1);
    s3_config c;
    char err[512];
    assert_int_equal(load(&c, err, sizeof err), 0);
    assert_string_equal(c.access_key, "AKIDENV");
    assert_string_equal(c.secret_key, "envsecret");
    assert_string_equal(c.session_token, "envtoken");
    assert_string_equal(c.region, "eu-west-1");
    setenv("AWS_REGION", "ap-south-1", 1); /* AWS_REGION wins over AWS_DEFAULT_REGION */
    assert_int_equal(load(&c, err, sizeof err), 0);
    assert_string_equal(c.region, "ap-south-1");
}

static void test_env_partial(void **state)
{
    (void)state;
    setenv("AWS_SECRET_ACCESS_KEY", "topsecretvalue", 1);
    s3_config c;
    char err[512];
    assert_int_equal(load(&c, err, sizeof err), -EINVAL);
    assert_string_equal(err, "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not; "
                             "set both or neither");
    assert_null(strstr(err, "topsecretvalue"));
}

static void test_default_profile_file(void **state)
{
    fixture *f = *state;
    write_file(f->cred, "# comment\n"
                        "[other]\naws_access_key_id = AKIDOTHER\naws_secret_access_key = o\n\n"
                        "[default]\n"
                        "  aws_access_key_id   =  AKIDDEF  \r\n"
                        "aws_secret_access_key=defsecret\n"
                        "; another comment\n");
    write_file(f->conf, "[default]\nregion = us-west-2\n[profile other]\nregion = eu-north-1\n");
    s3_config c;
    char err[512];
    assert_int_equal(load(&c, err, sizeof err), 0);
    assert_string_equal(c.access_key, "AKIDDEF");
    assert_string_equal(c.secret_key, "defsecret");
    assert_string_equal(c.session_token, "");
    assert_string_equal(c.region, "us-west-2");
}

static void test_named_profile(void **state)
{
    fixture *f = *state;
    char path[400];
    snprintf(path, sizeof path, "%s/other-credentials", f->home);
    write_file(path, "[default]\naws_access_key_id=AKIDDEF\naws_secret_access_key=d\n"
                     "[dev]\naws_access_key_id=AKIDDEV\naws_secret_access_key=devsecret\n"
                     "aws_session_token=devtoken\n");
    write_file(f->conf, "[default]\nregion = us-west-2\n"
                        "[profile dev]\nregion = eu-central-1\n"
                        "endpoint_url = http://127.0.0.1:9000/\n");
    setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
    setenv("AWS_PROFILE", "dev", 1);
    s3_config c;
    char err[512];
    assert_int_equal(load(&c, err, sizeof err), 0);
    assert_string_equal(c.access_key, "AKIDDEV");
    assert_string_equal(c.secret_key, "devsecret");
    assert_string_equal(c.session_token, "devtoken");
    assert_string_equal(c.region, "eu-central-1");
    assert_string_equal(c.endpoint, "http://127.0.0.1:9000");
    assert_true(c.path_style);
}

static void test_missing_profile(void **state)
{
    fixture *f = *state;
    write_file(f->cred, "[default]\naws_access_key_id=AKIDDEF\naws_secret_access_key=d\n");
    setenv("AWS_PROFILE", "prod", 1);
    s3_config c;
    char err[512];
    assert_int_equal(load(&c, err, sizeof err), -EINVAL);
    char want[900];
    snprintf(want, sizeof want,
             "AWS profile 'prod' (from AWS_PROFILE) is in neither %s nor %s; "
             "add a [prod] section or unset AWS_PROFILE",
             f->cred, f->conf);
    assert_string_equal(err, want);
    /* A profile that exists only in the config file is a profile. */
    write_file(f->conf, "[profile prod]\nregion = sa-east-1\n");
    assert_int_equal(load(&c, err, sizeof err), 0);
    assert_string_equal(c.region, "sa-east-1");
    assert_string_equal(c.access_key, "");
}

static void test_env_overrides_file(void **state)
{
    fixture *f = *state;
    write_file(f->cred, "[default]\naws_access_key_id=AKIDFILE\naws_secret_access_key=filesecret\n"
                        "aws_session_token=filetoken\n");
    write_file(f->conf, "[default]\nregion=us-west-2\nendpoint_url=http://file:1\n"
                        "ca_bundle=/file/ca.pem\n");
    setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
    setenv("AWS_REGION", "eu-west-3", 1);
    setenv("AWS_ENDPOINT_URL", "https://minio.local:9000", 1);
    setenv("AWS_CA_BUNDLE", "/env/ca.pem", 1);
    s3_config c;
    char err[512];
    assert_int_equal(load(&c, err, sizeof err), 0);
    assert_string_equal(c.access_key, "AKIDENV");
    assert_string_equal(c.secret_key, "envsecret");
    assert_string_equal(c.session_token, ""); /* the file's token is not mixed in */
    assert_string_equal(c.region, "eu-west-3");
    assert_string_equal(c.endpoint, "https://minio.local:9000");
    assert_string_equal(c.ca_bundle, "/env/ca.pem");
    assert_true(c.path_style);
    setenv("AWS_ENDPOINT_URL_S3", "http://s3only:1", 1);
    assert_int_equal(load(&c, err, sizeof err), 0);
    assert_string_equal(c.endpoint, "http://s3only:1");
    unsetenv("AWS_ENDPOINT_URL_S3");
    unsetenv("AWS_ENDPOINT_URL");
    unsetenv("AWS_CA_BUNDLE");
    assert_int_equal(load(&c, err, sizeof err), 0);
    assert_string_equal(c.endpoint, "http://file:1");
    assert_string_equal(c.ca_bundle, "/file/ca.pem");
}

static void test_bad_values(void **state)
{
    fixture *f = *state;
    s3_config c;
    char err[512];
    setenv("AWS_ENDPOINT_URL", "127.0.0.1:9000", 1);
    assert_int_equal(load(&c, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "AWS_ENDPOINT_URL must start with http:// or https://"));
    unsetenv("AWS_ENDPOINT_URL");

    /* A secret too long for the config: the error names it, never shows it. */
    char longsecret[300];
    memset(longsecret, 'S', sizeof longsecret - 1);
    longsecret[sizeof longsecret - 1] = '\0';
    setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
    setenv("AWS_SECRET_ACCESS_KEY", longsecret, 1);
    assert_int_equal(load(&c, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "AWS_SECRET_ACCESS_KEY is 299 bytes long"));
    assert_null(strstr(err, "SSSS"));
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");

    /* A profile with a key id and no secret. */
    write_file(f->cred, "[default]\naws_access_key_id=AKIDONLY\n");
    assert_int_equal(load(&c, err, sizeof err), -EINVAL);
    char want[700];
    snprintf(want, sizeof want,
             "AWS profile 'default' in %s has aws_access_key_id but not "
             "aws_secret_access_key; add the missing line",
             f->cred);
    assert_string_equal(err, want);

    /* A NULL error buffer is allowed. */
    assert_int_equal(load(&c, NULL, 0), -EINVAL);
}

static void test_config_file_credentials(void **state)
{
    fixture *f = *state;
    /* No credentials file: the config file's profile may carry the keys. */
    write_file(f->conf, "[profile ci]\naws_access_key_id = AKIDCONF\n"
                        "aws_secret_access_key = confsecret\nregion = us-east-2\n");
    setenv("AWS_PROFILE", "ci", 1);
    s3_config c;
    char err[512];
    assert_int_equal(load(&c, err, sizeof err), 0);
    assert_string_equal(c.access_key, "AKIDCONF");
    assert_string_equal(c.secret_key, "confsecret");
    assert_string_equal(c.region, "us-east-2");
    assert_false(c.path_style);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nothing_set, setup, teardown),
        cmocka_unit_test_setup_teardown(test_env_credentials, setup, teardown),
        cmocka_unit_test_setup_teardown(test_env_partial, setup, teardown),
        cmocka_unit_test_setup_teardown(test_default_profile_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_named_profile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_profile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_env_overrides_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_file_credentials, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
