/* SPDX-License-Identifier: Apache-2.0
 *
 * src_s3.c: the s3() table function: s3('s3://bucket/glob' [, 'Format']) over
 * the objects of a bucket, listed and opened through the caller's S3 access
 * (S3 directly or the cache client, eng_scan_env). Credentials in the call
 * are refused rather than ignored. The objects are scanned by src_files.c.
 * A distributed query's worker, given one unit, opens that object by its key
 * instead of listing the glob.
 */
#include "src_int.h"

#include "s3.h"

#include <errno.h>
#include <stdio.h>

static int s3_key_cb(const char *key, uint64_t size, void *arg)
{
    return src__flist_add(arg, key, size);
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
    if (env->unit) {
        /* a distributed query's unit: its one object, opened by its key (no
         * listing: the initiator expanded the glob) */
        rs_source *one;
        rc = env->open_s3(env->s3_impl, bucket, env->unit->path, &one, err, errlen);
        if (rc == 0) {
            rc = src__flist_add(&fl, env->unit->path, rs_size(one));
            rs_destroy(&one);
        }
    } else {
        rc = env->list_s3(env->s3_impl, bucket, glob, s3_key_cb, &fl, err, errlen);
    }
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
