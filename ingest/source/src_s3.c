/* SPDX-License-Identifier: Apache-2.0
 *
 * src_s3.c: the s3() table function: s3('s3://bucket/glob' [, 'Format']) over
 * the objects of a bucket, listed and opened through the caller's S3 access
 * (S3 directly or the cache client, eng_scan_env). Credentials in the call
 * are refused rather than ignored. The objects are scanned by src_files.c.
 *
 * As in ClickHouse, the path may also be an endpoint's URL,
 * s3('http://host:port/bucket/glob'): the objects are then listed and read
 * from that endpoint (path style) with the credentials of the AWS
 * environment, whatever the caller's S3 access is: a cache node's S3 API, a
 * MinIO, another region's S3.
 */
#include "src_int.h"

#include "rangesrc.h"
#include "s3.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int s3_key_cb(const char *key, uint64_t size, void *arg)
{
    return src__flist_add(arg, key, size);
}

/* ---- s3('http://host:port/bucket/glob') ----------------------------------------- */

static int url_open(void *impl, const char *bucket, const char *key, rs_source **out, char *err,
                    size_t errlen)
{
    return rs_s3_open(out, impl, bucket, key, err, errlen);
}

static int url_key(const s3_object_info *info, void *arg)
{
    return src__flist_add(arg, info->key, info->size);
}

/* Splits "http[s]://host[:port]/bucket/glob" into the endpoint (cfg) and the
 * rest; 0, or -EINVAL with a sentence. */
static int url_split(const char *url, s3_config *cfg, char *bucket, size_t bcap, char *glob,
                     size_t gcap, char *err, size_t errlen)
{
    const char *host = strstr(url, "://") + 3;
    const char *slash = strchr(host, '/');
    char s3url[4200];
    if (!slash || slash == host || (size_t)(slash - url) >= sizeof(cfg->endpoint) ||
        snprintf(s3url, sizeof(s3url), "s3://%s", slash + 1) >= (int)sizeof(s3url) ||
        s3_url_parse(s3url, bucket, bcap, glob, gcap) < 0) {
        snprintf(err, errlen, "bad S3 URL '%s': write http://host:port/bucket/path/glob (the "
                              "endpoint, then the bucket and the glob, path style)",
                 url);
        return -EINVAL;
    }
    s3_config_init(cfg);
    int rc = s3_config_from_env(cfg, err, errlen);
    if (rc < 0)
        return rc;
    snprintf(cfg->endpoint, sizeof(cfg->endpoint), "%.*s", (int)(slash - url), url);
    cfg->path_style = true;
    if (!cfg->access_key[0])
        cfg->anonymous = true;
    return 0;
}

static int url_open_source(const eng_tf_call *c, const eng_scan_env *env, eng_source **out,
                           const char *path, const char *fmtarg, char *err, size_t errlen)
{
    s3_config *cfg = malloc(sizeof(*cfg));
    char bucket[64], glob[2048];
    if (!cfg) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int rc = url_split(path, cfg, bucket, sizeof(bucket), glob, sizeof(glob), err, errlen);
    s3_sync *sync = NULL;
    flist fl = {0};
    if (rc == 0 && (rc = s3_sync_create(&sync, cfg)) < 0)
        snprintf(err, errlen, "cannot start the S3 client for %s: %s", cfg->endpoint,
                 strerror(-rc));
    if (rc == 0) {
        s3_error e = {0};
        rc = s3_sync_glob(sync, bucket, glob, url_key, &fl, &e);
        if (rc < 0)
            snprintf(err, errlen, "cannot list %s: %s", path,
                     e.message[0] ? e.message : strerror(-rc));
        else if (fl.n == 0 && (rc = -ENOENT))
            snprintf(err, errlen, "no objects match '%s' (check the bucket, the prefix and the "
                                  "glob)", path);
    }
    s3_sync_destroy(&sync);
    if (rc < 0) {
        src__flist_free(&fl);
        free(cfg);
        return rc;
    }
    eng_scan_env e2 = *env;
    e2.list_s3 = NULL;
    e2.open_s3 = url_open;
    e2.s3_impl = cfg;
    rc = src__files_open(out, &e2, c, path, &fl, true, bucket, fmtarg, err, errlen);
    if (rc < 0)
        free(cfg);
    else
        src__files_adopt(*out, cfg);
    return rc;
}

int src__s3_open(const eng_tf_call *c, const eng_scan_env *env, eng_source **out, char *err,
                 size_t errlen)
{
    const char *path, *fmtarg;
    int rc = src__path_args(c, 4, "s3://bucket/data/*.parquet", &path, &fmtarg, err, errlen);
    if (rc < 0)
        return rc;
    if (c->n_args == 3) {
        snprintf(err, errlen, "line %d, column %d: credentials in s3() are not supported: set "
                              "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY instead",
                 c->line, c->col);
        return -EINVAL;
    }
    if (strncmp(path, "http://", 7) == 0 || strncmp(path, "https://", 8) == 0)
        return url_open_source(c, env, out, path, fmtarg, err, errlen);
    if (!env->list_s3 || !env->open_s3) {
        snprintf(err, errlen, "s3() is not available here (no S3 client configured)");
        return -ENOTSUP;
    }
    char bucket[64], glob[2048];
    if (s3_url_parse(path, bucket, sizeof(bucket), glob, sizeof(glob)) < 0) {
        snprintf(err, errlen, "bad S3 URL '%s': write s3://bucket/path/glob", path);
        return -EINVAL;
    }
    flist fl = {0};
    rc = env->list_s3(env->s3_impl, bucket, glob, s3_key_cb, &fl, err, errlen);
    if (rc == 0 && fl.n == 0) {
        snprintf(err, errlen, "no objects match '%s' (check the bucket, the prefix and the "
                              "glob)",
                 path);
        rc = -ENOENT;
    }
    if (rc < 0) {
        src__flist_free(&fl);
        return rc;
    }
    return src__files_open(out, env, c, path, &fl, true, bucket, fmtarg, err, errlen);
}
