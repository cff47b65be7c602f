/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_s3.c: a query's S3 access (srv_int.h). Sources read through the
 * server's cache client (the cache nodes, or S3 directly through the page
 * cache without --cache); a source given its own credentials,
 * s3(url, 'KEY', 'SECRET' [, 'TOKEN']) or s3(url, NOSIGN), reads S3 directly
 * with them and the server's endpoint and settings: the cache nodes and the
 * page cache fill with the server's credentials, so serving such a source
 * from them would answer without its key ever being checked. An error of
 * such a source says whose credentials failed (srv_params.h's
 * srv_mask_secrets hides them in the text query_log and processes show).
 */
#include "srv_int.h"

#include "rs_rc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int srv_s3_list(void *impl, const char *bucket, const char *glob, eng_key_fn fn, void *arg,
                char *err, size_t errlen)
{
    const srv_s3io *io = impl;
    return rs_rc_list(io->rc, bucket, glob, fn, arg, err, errlen);
}

int srv_s3_open(void *impl, const char *bucket, const char *key, rs_source **out, char *err,
                size_t errlen)
{
    const srv_s3io *io = impl;
    return rs_rc_open_key(io->rc, bucket, key, out, err, errlen);
}

/* A source's own access: S3 directly with the credentials given to s3(). */
typedef struct own_access {
    s3_config cfg;
    const char *whose; /* how errors name them */
} own_access;

static int own_list(void *impl, const char *bucket, const char *glob, eng_key_fn fn, void *arg,
                    char *err, size_t errlen)
{
    own_access *a = impl;
    return rs_s3_own_error(a->whose, rs_s3_list(&a->cfg, bucket, glob, fn, arg, err, errlen), err,
                           errlen);
}

static int own_open(void *impl, const char *bucket, const char *key, rs_source **out, char *err,
                    size_t errlen)
{
    own_access *a = impl;
    return rs_s3_own_error(a->whose, rs_s3_open_key(&a->cfg, bucket, key, out, err, errlen), err,
                           errlen);
}

static void own_free(void *impl)
{
    own_access *a = impl;
    if (a) {
        memset(a->cfg.secret_key, 0, sizeof(a->cfg.secret_key));
        memset(a->cfg.session_token, 0, sizeof(a->cfg.session_token));
        free(a);
    }
}

int srv_s3_as(void *impl, const eng_s3_creds *cr, eng_s3_access *out, char *err, size_t errlen)
{
    const srv_s3io *io = impl;
    own_access *a = calloc(1, sizeof(*a));
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int rc = rs_s3_own_config(&a->cfg, io->cfg, cr->nosign != 0, cr->access_key, cr->secret_key,
                              cr->session_token, &a->whose, err, errlen);
    if (rc < 0) {
        own_free(a);
        return rc;
    }
    *out = (eng_s3_access){own_list, own_open, a, own_free};
    return 0;
}
