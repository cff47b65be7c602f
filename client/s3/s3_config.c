/* SPDX-License-Identifier: Apache-2.0
 *
 * s3_config.c: S3 client configuration the way the AWS tools find it. Defaults
 * first (s3_config_init), then the environment and the AWS shared files on top
 * (s3_config_from_env), in the AWS CLI's order of precedence:
 *
 *   credentials  AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN)
 *                else [PROFILE] of AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials)
 *                else [profile PROFILE] of AWS_CONFIG_FILE (~/.aws/config)
 *   region       AWS_REGION, AWS_DEFAULT_REGION, then `region` in the config file
 *   endpoint     AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, then `endpoint_url` in
 *                the config file; a custom endpoint turns path-style on
 *   CA bundle    AWS_CA_BUNDLE, then `ca_bundle` in the config file
 *
 * PROFILE is AWS_PROFILE, else "default". A missing file is not an error; a
 * profile named in AWS_PROFILE that is in neither file is. Error sentences name
 * the variable, file or profile and the fix, and never contain a secret value.
 */
#include "s3_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void s3_config_init(s3_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->region, sizeof cfg->region, "%s", "us-east-1");
    cfg->verify_tls = true;
    cfg->connect_timeout_ms = 3000;
    cfg->request_timeout_ms = 30000;
    cfg->max_attempts = 5;
    cfg->retry_base_ms = 100;
    cfg->retry_cap_ms = 5000;
    cfg->retry_budget_ms = 60000;
    cfg->max_connections = 64;
}

/* The settings one profile gives, from one file. Values are heap copies so a
 * long session token fits; `found` says whether the section exists. */
typedef struct profile {
    bool found;
    char *access_key;
    char *secret_key;
    char *session_token;
    char *region;
    char *endpoint_url;
    char *ca_bundle;
} profile;

static void profile_free(profile *p)
{
    free(p->access_key);
    if (p->secret_key) {
        memset(p->secret_key, 0, strlen(p->secret_key));
        free(p->secret_key);
    }
    free(p->session_token);
    free(p->region);
    free(p->endpoint_url);
    free(p->ca_bundle);
    memset(p, 0, sizeof *p);
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

static int set_str(char **dst, const char *v)
{
    char *d = strdup(v);
    if (d == NULL)
        return -ENOMEM;
    free(*dst);
    *dst = d;
    return 0;
}

/* Is this "[...]" header the profile's section? The credentials file names
 * sections by the profile alone; the config file says "profile NAME", except
 * for "default" (which "profile default" also names). */
static bool section_matches(const char *sec, const char *name, bool config_style)
{
    if (!config_style)
        return strcmp(sec, name) == 0;
    if (strcmp(name, "default") == 0 && strcmp(sec, "default") == 0)
        return true;
    if (strncmp(sec, "profile", 7) != 0 || (sec[7] != ' ' && sec[7] != '\t'))
        return false;
    const char *p = sec + 7;
    while (*p == ' ' || *p == '\t')
        p++;
    return strcmp(p, name) == 0;
}

/* Read section `name` of the INI file at `path` into `out`. A missing file
 * gives 0 with out->found false; other read errors are reported. */
static int read_profile(const char *path, const char *name, bool config_style, profile *out,
                        char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        if (errno == ENOENT || errno == ENOTDIR)
            return 0;
        snprintf(err, errlen,
                 "cannot read AWS file %s: %s (fix its permissions or point %s "
                 "elsewhere)",
                 path, strerror(errno),
                 config_style ? "AWS_CONFIG_FILE" : "AWS_SHARED_CREDENTIALS_FILE");
        return -EINVAL;
    }
    char *line = NULL;
    size_t cap = 0;
    bool in_section = false;
    int rc = 0;
    while (rc == 0 && getline(&line, &cap, f) >= 0) {
        char *s = trim(line);
        if (*s == '\0' || *s == '#' || *s == ';')
            continue;
        if (*s == '[') {
            char *close = strrchr(s, ']');
            if (close == NULL) {
                in_section = false;
                continue;
            }
            *close = '\0';
            char *sec = trim(s + 1);
            in_section = section_matches(sec, name, config_style);
            if (in_section)
                out->found = true;
            continue;
        }
        if (!in_section)
            continue;
        char *eq = strchr(s, '=');
        if (eq == NULL)
            continue; /* nested sub-sections ("s3 =" then indented keys) fall here too */
        *eq = '\0';
        char *k = trim(s);
        char *v = trim(eq + 1);
        if (strcmp(k, "aws_access_key_id") == 0)
            rc = set_str(&out->access_key, v);
        else if (strcmp(k, "aws_secret_access_key") == 0)
            rc = set_str(&out->secret_key, v);
        else if (strcmp(k, "aws_session_token") == 0)
            rc = set_str(&out->session_token, v);
        else if (strcmp(k, "region") == 0)
            rc = set_str(&out->region, v);
        else if (strcmp(k, "endpoint_url") == 0)
            rc = set_str(&out->endpoint_url, v);
        else if (strcmp(k, "ca_bundle") == 0)
            rc = set_str(&out->ca_bundle, v);
    }
    if (line) {
        memset(line, 0, cap); /* it may have held a secret */
        free(line);
    }
    fclose(f);
    if (rc < 0)
        snprintf(err, errlen, "out of memory while reading AWS file %s", path);
    return rc;
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

/* Copy a value into a fixed config field; `what` names where it came from. */
static int put(char *dst, size_t cap, const char *v, const char *what, char *err, size_t errlen)
{
    size_t n = strlen(v);
    if (n + 1 > cap) {
        snprintf(err, errlen,
                 "%s is %zu bytes long, more than the %zu this client accepts; "
                 "check its value",
                 what, n, cap - 1);
        return -EINVAL;
    }
    memcpy(dst, v, n + 1);
    return 0;
}

static int put_endpoint(s3_config *cfg, const char *v, const char *what, char *err, size_t errlen)
{
    if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0) {
        snprintf(err, errlen,
                 "%s must start with http:// or https:// (for example "
                 "http://127.0.0.1:9000); fix its value",
                 what);
        return -EINVAL;
    }
    int rc = put(cfg->endpoint, sizeof cfg->endpoint, v, what, err, errlen);
    if (rc == 0) {
        /* Buckets on a custom endpoint are rarely DNS names under it. */
        cfg->path_style = true;
        /* "http://h:9000/" and "http://h:9000" are the same endpoint. */
        size_t n = strlen(cfg->endpoint);
        while (n > 0 && cfg->endpoint[n - 1] == '/')
            cfg->endpoint[--n] = '\0';
    }
    return rc;
}

static int default_path(char *out, size_t cap, const char *env_name, const char *file)
{
    const char *v = env(env_name);
    if (v != NULL)
        return snprintf(out, cap, "%s", v) < (int)cap ? 1 : -ENAMETOOLONG;
    const char *home = env("HOME");
    if (home == NULL)
        return 0;
    return snprintf(out, cap, "%s/.aws/%s", home, file) < (int)cap ? 1 : -ENAMETOOLONG;
}

int s3_config_from_env(s3_config *cfg, char *err, size_t errlen)
{
    char dummy[1];
    if (err == NULL || errlen == 0) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    if (cfg == NULL)
        return -EINVAL;

    const char *prof_name = env("AWS_PROFILE");
    bool named = prof_name != NULL;
    if (!named)
        prof_name = "default";

    char cred_path[1024] = "", conf_path[1024] = "";
    int hc =
        default_path(cred_path, sizeof cred_path, "AWS_SHARED_CREDENTIALS_FILE", "credentials");
    int hf = default_path(conf_path, sizeof conf_path, "AWS_CONFIG_FILE", "config");
    if (hc < 0 || hf < 0) {
        snprintf(err, errlen,
                 "the path of the AWS %s file is too long; set %s to a "
                 "shorter path",
                 hc < 0 ? "credentials" : "config",
                 hc < 0 ? "AWS_SHARED_CREDENTIALS_FILE" : "AWS_CONFIG_FILE");
        return -EINVAL;
    }

    profile cred = {0}, conf = {0};
    int rc = 0;
    if (hc > 0)
        rc = read_profile(cred_path, prof_name, false, &cred, err, errlen);
    if (rc == 0 && hf > 0)
        rc = read_profile(conf_path, prof_name, true, &conf, err, errlen);
    if (rc < 0)
        goto out;

    if (named && !cred.found && !conf.found) {
        snprintf(err, errlen,
                 "AWS profile '%s' (from AWS_PROFILE) is in neither %s nor %s; "
                 "add a [%s] section or unset AWS_PROFILE",
                 prof_name, hc > 0 ? cred_path : "~/.aws/credentials",
                 hf > 0 ? conf_path : "~/.aws/config", prof_name);
        rc = -EINVAL;
        goto out;
    }

    /* Credentials: the environment as a pair, else the profile. */
    const char *ak = env("AWS_ACCESS_KEY_ID");
    const char *sk = env("AWS_SECRET_ACCESS_KEY");
    if ((ak == NULL) != (sk == NULL)) {
        snprintf(err, errlen, "%s is set but %s is not; set both or neither",
                 ak ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                 ak ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
        rc = -EINVAL;
        goto out;
    }
    if (ak != NULL) {
        const char *tok = env("AWS_SESSION_TOKEN");
        if ((rc = put(cfg->access_key, sizeof cfg->access_key, ak, "AWS_ACCESS_KEY_ID", err,
                      errlen)) < 0 ||
            (rc = put(cfg->secret_key, sizeof cfg->secret_key, sk, "AWS_SECRET_ACCESS_KEY", err,
                      errlen)) < 0 ||
            (rc = put(cfg->session_token, sizeof cfg->session_token, tok ? tok : "",
                      "AWS_SESSION_TOKEN", err, errlen)) < 0)
            goto out;
    } else {
        /* The credentials file wins over the config file, as a whole. */
        profile *p = (cred.access_key || cred.secret_key) ? &cred : &conf;
        const char *file = p == &cred ? cred_path : conf_path;
        if ((p->access_key == NULL) != (p->secret_key == NULL)) {
            snprintf(err, errlen,
                     "AWS profile '%s' in %s has %s but not %s; add the missing "
                     "line",
                     prof_name, file, p->access_key ? "aws_access_key_id" : "aws_secret_access_key",
                     p->access_key ? "aws_secret_access_key" : "aws_access_key_id");
            rc = -EINVAL;
            goto out;
        }
        if (p->access_key != NULL) {
            char what[1200];
            snprintf(what, sizeof what, "aws_access_key_id of profile '%s' in %s", prof_name, file);
            if ((rc = put(cfg->access_key, sizeof cfg->access_key, p->access_key, what, err,
                          errlen)) < 0)
                goto out;
            snprintf(what, sizeof what, "aws_secret_access_key of profile '%s' in %s", prof_name,
                     file);
            if ((rc = put(cfg->secret_key, sizeof cfg->secret_key, p->secret_key, what, err,
                          errlen)) < 0)
                goto out;
            snprintf(what, sizeof what, "aws_session_token of profile '%s' in %s", prof_name, file);
            if ((rc = put(cfg->session_token, sizeof cfg->session_token,
                          p->session_token ? p->session_token : "", what, err, errlen)) < 0)
                goto out;
        }
    }

    /* Region. */
    const char *region = env("AWS_REGION");
    const char *region_what = "AWS_REGION";
    if (region == NULL) {
        region = env("AWS_DEFAULT_REGION");
        region_what = "AWS_DEFAULT_REGION";
    }
    if (region == NULL && conf.region != NULL && conf.region[0] != '\0') {
        region = conf.region;
        region_what = "region in the AWS config file";
    }
    if (region != NULL &&
        (rc = put(cfg->region, sizeof cfg->region, region, region_what, err, errlen)) < 0)
        goto out;

    /* Endpoint. */
    const char *ep = env("AWS_ENDPOINT_URL_S3");
    const char *ep_what = "AWS_ENDPOINT_URL_S3";
    if (ep == NULL) {
        ep = env("AWS_ENDPOINT_URL");
        ep_what = "AWS_ENDPOINT_URL";
    }
    if (ep == NULL && conf.endpoint_url != NULL && conf.endpoint_url[0] != '\0') {
        ep = conf.endpoint_url;
        ep_what = "endpoint_url in the AWS config file";
    }
    if (ep != NULL && (rc = put_endpoint(cfg, ep, ep_what, err, errlen)) < 0)
        goto out;

    /* CA bundle. */
    const char *ca = env("AWS_CA_BUNDLE");
    const char *ca_what = "AWS_CA_BUNDLE";
    if (ca == NULL && conf.ca_bundle != NULL && conf.ca_bundle[0] != '\0') {
        ca = conf.ca_bundle;
        ca_what = "ca_bundle in the AWS config file";
    }
    if (ca != NULL &&
        (rc = put(cfg->ca_bundle, sizeof cfg->ca_bundle, ca, ca_what, err, errlen)) < 0)
        goto out;
    rc = 0;
out:
    profile_free(&cred);
    profile_free(&conf);
    return rc;
}
