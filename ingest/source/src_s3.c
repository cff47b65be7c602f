/* SPDX-License-Identifier: Apache-2.0
 *
 * src_s3.c: the s3() table function over the objects of a bucket, with the
 * arguments ClickHouse gives it:
 *
 *   s3(url [, format [, structure [, compression]]])        the query's S3 access
 *   s3(url, NOSIGN [, format [, structure [, compression]]]) unsigned (public buckets)
 *   s3(url, key, secret [, session_token] [, format [, structure [, compression]]])
 *
 * The URL as src_s3url.c reads it: s3://bucket/glob, or AWS's https URLs,
 * virtual-hosted or path style. The objects are listed and opened through
 * the caller's S3 access (S3 directly or the cache client, eng_scan_env); a
 * source that names its own credentials gets an access of its own from
 * env->s3_as, never the query's, so a key given in the query is used for
 * that source or the query fails. The argument after the secret is the
 * format when it names one, else the session token (as ClickHouse decides).
 * What follows the credentials is read by src_args.c; the objects are
 * scanned by src_files.c.
 *
 * As in ClickHouse, the URL may also be an endpoint's,
 * s3('http://host:port/bucket/glob'): the objects are then listed and read
 * from that endpoint (path style) with the credentials the call names, else
 * those of the AWS environment, whatever the caller's S3 access is: a cache
 * node's S3 API, a MinIO, another region's S3.
 *
 * A distributed query's worker, given one unit, opens that object by its key
 * instead of listing the glob.
 */
#include "src_int.h"

#include "eng_text.h"
#include "rangesrc.h"
#include "s3.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int s3_key_cb(const char *key, uint64_t size, void *arg)
{
    return src__flist_add(arg, key, size);
}

/* NOSIGN as ClickHouse takes it: a bare word or a string, any case. */
static bool is_nosign(const sql_node *n)
{
    return (n->kind == SQL_COLUMN || n->kind == SQL_STRING) && n->s &&
           strcasecmp(n->s, "NOSIGN") == 0;
}

/* A word that can only be meant as a format name (letters and digits, short):
 * never taken for a session token, which has other characters. */
static bool looks_like_format(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 40)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]))
            return false;
    return true;
}

static int bad_args(const eng_tf_call *c, char *err, size_t errlen)
{
    snprintf(err, errlen,
             "line %d, column %d: s3() takes a URL, then NOSIGN or a key and a secret (and a "
             "session token) if the bucket needs them, then an optional format, structure and "
             "compression, all as strings: s3('s3://bucket/*.parquet' [, NOSIGN | , 'KEY', "
             "'SECRET' [, 'SESSION_TOKEN']] [, 'Parquet' [, 'a Int64, b String' [, 'gzip']]])",
             c->line, c->col);
    return -EINVAL;
}

/* A format argument: a format's name, or 'auto'. */
static bool is_format_arg(const char *s)
{
    return strcasecmp(s, "auto") == 0 || tx_format_of_arg(s) >= 0;
}

/* Splits the arguments: the URL, the credentials (creds->nosign, or the
 * key/secret/token; *has_creds) and what follows them (fa: the format,
 * structure and compression, NULL when absent). */
static int s3_args(const eng_tf_call *c, const char **url, eng_s3_creds *creds, bool *has_creds,
                   src_fargs *fa, char *err, size_t errlen)
{
    memset(creds, 0, sizeof(*creds));
    memset(fa, 0, sizeof(*fa));
    *has_creds = false;
    sql_node *const *a = c->args;
    int n = c->n_args;
    if (n < 1 || n > 7 || a[0]->kind != SQL_STRING)
        return bad_args(c, err, errlen);
    *url = a[0]->s;
    int first = 1; /* the first argument after the credentials */
    if (n > 1 && is_nosign(a[1])) {
        creds->nosign = 1;
        *has_creds = true;
        first = 2;
    }
    for (int k = first; k < n; k++)
        if (a[k]->kind != SQL_STRING)
            return bad_args(c, err, errlen);
    if (!creds->nosign && n >= 3 && !is_format_arg(a[1]->s)) {
        creds->access_key = a[1]->s;
        creds->secret_key = a[2]->s;
        *has_creds = true;
        first = 3;
        int rest = n - 3;
        if (rest >= 1) {
            /* a session token, unless a format comes right after the secret;
               with four more it must be the token */
            const char *x = a[3]->s;
            if (rest == 1 && !is_format_arg(x) && looks_like_format(x)) {
                snprintf(err, errlen,
                         "unknown input format '%s' (use Parquet, CSV, CSVWithNames, TSV, "
                         "TSVWithNames or JSONEachRow)",
                         x);
                return -EINVAL;
            }
            if (rest == 4 || !is_format_arg(x)) {
                creds->session_token = x;
                first = 4;
            }
        }
        if (!creds->access_key[0] || !creds->secret_key[0]) {
            snprintf(err, errlen,
                     "line %d, column %d: s3()'s %s is empty: give both the access key and the "
                     "secret, or NOSIGN for a public bucket",
                     c->line, c->col, !creds->access_key[0] ? "access key" : "secret");
            return -EINVAL;
        }
    }
    return src__tail_args(c, first, fa, err, errlen);
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

/* The S3 settings of an endpoint URL (u: SRC_URL_ENDPOINT): the endpoint,
 * path style, and the call's credentials, else the AWS environment's; 0, or
 * -errno with a sentence. */
static int url_config(const src_s3_url *u, const eng_s3_creds *creds, s3_config *cfg, char *err,
                      size_t errlen)
{
    s3_config_init(cfg);
    int rc = s3_config_from_env(cfg, err, errlen);
    if (rc < 0)
        return rc;
    if (strlen(u->endpoint) >= sizeof(cfg->endpoint)) {
        snprintf(err, errlen, "the endpoint %s is too long", u->endpoint);
        return -EINVAL;
    }
    snprintf(cfg->endpoint, sizeof(cfg->endpoint), "%s", u->endpoint);
    cfg->path_style = true;
    if (creds && creds->nosign) {
        cfg->access_key[0] = cfg->secret_key[0] = cfg->session_token[0] = 0;
    } else if (creds) {
        if (strlen(creds->access_key) >= sizeof(cfg->access_key) ||
            strlen(creds->secret_key) >= sizeof(cfg->secret_key) ||
            (creds->session_token && strlen(creds->session_token) >= sizeof(cfg->session_token))) {
            snprintf(err, errlen, "the credentials given to s3() for %s are too long",
                     cfg->endpoint);
            return -EINVAL;
        }
        snprintf(cfg->access_key, sizeof(cfg->access_key), "%s", creds->access_key);
        snprintf(cfg->secret_key, sizeof(cfg->secret_key), "%s", creds->secret_key);
        snprintf(cfg->session_token, sizeof(cfg->session_token), "%s",
                 creds->session_token ? creds->session_token : "");
    }
    if (!cfg->access_key[0])
        cfg->anonymous = true;
    return 0;
}

static int url_open_source(const eng_tf_call *c, const eng_scan_env *env, eng_source **out,
                           const char *path, const src_s3_url *u, const eng_s3_creds *creds,
                           const src_fargs *fa, char *err, size_t errlen)
{
    s3_config *cfg = malloc(sizeof(*cfg));
    if (!cfg) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int rc = url_config(u, creds, cfg, err, errlen);
    s3_sync *sync = NULL;
    flist fl = {0};
    if (rc == 0 && (rc = s3_sync_create(&sync, cfg)) < 0)
        snprintf(err, errlen, "cannot start the S3 client for %s: %s", cfg->endpoint,
                 strerror(-rc));
    if (rc == 0 && env->unit) {
        /* a distributed query's units: their objects, each opened by its key */
        for (int k = 0; k < eng_scan_units(env) && rc == 0; k++) {
            const char *key = env->unit[k].path;
            if (src__unit_seen(env, k))
                continue;
            rs_source *one;
            rc = url_open(cfg, u->bucket, key, &one, err, errlen);
            if (rc == 0) {
                rc = src__flist_add(&fl, key, rs_size(one));
                rs_destroy(&one);
            }
        }
    } else if (rc == 0) {
        s3_error e = {0};
        rc = s3_sync_glob(sync, u->bucket, u->key, url_key, &fl, &e);
        if (rc < 0)
            snprintf(err, errlen, "cannot list %s: %s", path,
                     e.message[0] ? e.message : strerror(-rc));
        else if (fl.n == 0 && (rc = -ENOENT))
            snprintf(err, errlen,
                     "no objects match '%s' (check the bucket, the prefix and the "
                     "glob)",
                     path);
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
    rc = src__files_open_args(out, &e2, c, path, &fl, true, u->bucket, fa, err, errlen);
    if (rc < 0) {
        free(cfg);
    } else {
        eng_s3_access acc = {.open = url_open, .impl = cfg, .destroy = free};
        src__files_adopt(*out, &acc);
    }
    return rc;
}

int src__s3_open(const eng_tf_call *c, const eng_scan_env *env, eng_source **out, char *err,
                 size_t errlen)
{
    const char *path;
    eng_s3_creds creds;
    bool has_creds;
    src_fargs fa;
    int rc = s3_args(c, &path, &creds, &has_creds, &fa, err, errlen);
    if (rc < 0)
        return rc;
    src_s3_url u;
    char why[512];
    if (src__s3_url_parse(path, &u, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "line %d, column %d: %s", c->line, c->col, why);
        return -EINVAL;
    }
    if (u.kind == SRC_URL_ENDPOINT)
        return url_open_source(c, env, out, path, &u, has_creds ? &creds : NULL, &fa, err, errlen);
    if (!env->list_s3 || !env->open_s3) {
        snprintf(err, errlen, "s3() is not available here (no S3 client configured)");
        return -ENOTSUP;
    }
    /* an AWS URL names its region; the query's S3 access answers for its own
     * (a bucket elsewhere fails with S3's sentence naming the region) */
    eng_scan_env own = *env;
    eng_s3_access acc = {0};
    if (has_creds) {
        if (!env->s3_as) {
            snprintf(err, errlen,
                     "line %d, column %d: credentials in s3() (a key and secret, or NOSIGN) are "
                     "not available here: this program gives every source the same S3 access",
                     c->line, c->col);
            return -ENOTSUP;
        }
        if ((rc = env->s3_as(env->s3_impl, &creds, &acc, err, errlen)) < 0)
            return rc;
        own.list_s3 = acc.list;
        own.open_s3 = acc.open;
        own.s3_impl = acc.impl;
    }
    flist fl = {0};
    if (env->unit) {
        /* a distributed query's units: their objects, each opened by its key
         * (no listing: the initiator expanded the glob) */
        rc = 0;
        for (int k = 0; k < eng_scan_units(env) && rc == 0; k++) {
            const char *key = env->unit[k].path;
            if (src__unit_seen(env, k))
                continue;
            rs_source *one;
            rc = own.open_s3(own.s3_impl, u.bucket, key, &one, err, errlen);
            if (rc == 0) {
                rc = src__flist_add(&fl, key, rs_size(one));
                rs_destroy(&one);
            }
        }
    } else {
        rc = own.list_s3(own.s3_impl, u.bucket, u.key, s3_key_cb, &fl, err, errlen);
    }
    if (rc == 0 && fl.n == 0) {
        snprintf(err, errlen,
                 "no objects match '%s' (check the bucket, the prefix and the "
                 "glob)",
                 path);
        rc = -ENOENT;
    }
    if (rc == 0)
        rc = src__files_open_args(out, &own, c, path, &fl, true, u.bucket, &fa, err, errlen);
    else
        src__flist_free(&fl);
    if (rc == 0 && has_creds)
        src__files_adopt(*out, &acc);
    else if (acc.destroy)
        acc.destroy(acc.impl);
    return rc;
}
