/* SPDX-License-Identifier: Apache-2.0
 *
 * src_s3.c: the s3() table function over the objects of a bucket:
 *
 *   s3(url [, format [, structure [, compression]]])
 *
 * the URL as src_s3url.c reads it (s3://bucket/glob, or AWS's https URLs,
 * virtual-hosted or path style), listed and opened through the caller's S3
 * access (S3 directly or the cache client, eng_scan_env). Credentials in the
 * call are refused rather than ignored. The objects are scanned by
 * src_files.c.
 */
#include "src_int.h"

#include "eng_text.h"
#include "s3.h"

#include <errno.h>
#include <stdio.h>
#include <strings.h>

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
    /* s3(url, format, ...) or the credentials forms s3(url, key, secret, ...) */
    src_fargs a = {0};
    const sql_node *a1 = c->n_args >= 2 ? c->args[1] : NULL;
    bool fmt_next = !a1 || (a1->kind == SQL_STRING && a1->s &&
                            (strcasecmp(a1->s, "auto") == 0 || tx_format_of_arg(a1->s) >= 0));
    if (c->n_args >= 3 && !fmt_next) {
        snprintf(err, errlen, "line %d, column %d: credentials in s3() are not supported: set "
                              "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY instead",
                 c->line, c->col);
        return -EINVAL;
    }
    if ((rc = src__tail_args(c, 1, &a, err, errlen)) < 0)
        return rc;
    if (!env->list_s3 || !env->open_s3) {
        snprintf(err, errlen, "s3() is not available here (no S3 client configured)");
        return -ENOTSUP;
    }
    src_s3_url u;
    char why[512];
    if (src__s3_url_parse(path, &u, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "line %d, column %d: %s", c->line, c->col, why);
        return -EINVAL;
    }
    if (u.kind == SRC_URL_ENDPOINT) {
        snprintf(err, errlen, "line %d, column %d: s3() reads through its configured S3 endpoint "
                 "only: write s3://%s/%s and set the endpoint (--endpoint or AWS_ENDPOINT_URL "
                 "to %s)", c->line, c->col, u.bucket, u.key, u.endpoint);
        return -ENOTSUP;
    }
    /* an AWS URL names its region; the query's S3 access answers for its own
     * (a bucket elsewhere fails with S3's sentence naming the region) */
    flist fl = {0};
    rc = env->list_s3(env->s3_impl, u.bucket, u.key, s3_key_cb, &fl, err, errlen);
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
    return src__files_open_args(out, env, c, path, &fl, true, u.bucket, &a, err, errlen);
}
