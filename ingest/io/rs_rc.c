/* SPDX-License-Identifier: Apache-2.0
 *
 * rs_rc.c: the cache client as a byte-range source (rs_rc.h). Each range is
 * read with rc_pread_flags(RC_READ_SCAN) until it is whole; a short object is an error that says
 * so, never a silently short range.
 */
#include "rs_rc.h"

#include "ringcache.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rs_rc {
    rc_handle *h;
} rs_rc;

static int rs_rc_read(void *impl, const rs_range *r, size_t n, char *err, size_t errlen)
{
    rs_rc *s = impl;
    for (size_t i = 0; i < n; i++) {
        uint64_t done = 0;
        while (done < r[i].length) {
            /* the engine fetches each range once and prefetches by itself */
            int64_t got = rc_pread_flags(s->h, (uint8_t *)r[i].buf + done, r[i].length - done,
                                         r[i].offset + done, RC_READ_SCAN);
            if (got < 0) {
                char m[RC_ERR_MAX];
                rc_last_error(s->h, m, sizeof(m));
                snprintf(err, errlen, "%s", m[0] ? m : strerror((int)-got));
                return (int)got;
            }
            if (got == 0) {
                snprintf(err, errlen,
                         "the object ended before byte %llu (it is shorter than its listed size)",
                         (unsigned long long)(r[i].offset + done));
                return -EIO;
            }
            done += (uint64_t)got;
        }
    }
    return 0;
}

static void rs_rc_destroy(void *impl)
{
    rs_rc *s = impl;
    rc_close(&s->h);
    free(s);
}

static int open_as(rs_source **out, struct rc_client *c, const char *bucket, const char *key,
                   const uint64_t *size, const char *version, char *err, size_t errlen)
{
    rs_rc *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    int rc = size ? rc_open_known(c, bucket, key, *size, version, &s->h, err, errlen)
                  : rc_open(c, bucket, key, &s->h, err, errlen);
    if (rc < 0) {
        free(s);
        return rc;
    }
    char name[1200];
    snprintf(name, sizeof(name), "s3://%s/%s", bucket, key);
    rs_ops ops = {rs_rc_read, rs_rc_destroy};
    /* on failure rs_source_create frees s through rs_rc_destroy itself */
    rc = rs_source_create(out, &ops, s, name, rc_size(s->h), rc_version(s->h));
    if (rc < 0)
        snprintf(err, errlen, "out of memory opening %s", name);
    return rc;
}

int rs_rc_open(rs_source **out, struct rc_client *c, const char *bucket, const char *key, char *err,
               size_t errlen)
{
    return open_as(out, c, bucket, key, NULL, NULL, err, errlen);
}

int rs_rc_open_known_key(void *impl, const char *bucket, const char *key, uint64_t size,
                         const char *version, rs_source **out, char *err, size_t errlen)
{
    return open_as(out, impl, bucket, key, &size, version, err, errlen);
}

/* ---- the cache client as an object store ------------------------------------------- */

int rs_rc_list(void *impl, const char *bucket, const char *glob, eng_key_fn fn, void *arg,
               char *err, size_t errlen)
{
    rs_key_ctx g = {fn, arg, 0};
    int rc = rc_list(impl, bucket, glob, rs_key_cb, &g, err, errlen);
    return g.rc < 0 ? g.rc : rc;
}

int rs_rc_open_key(void *impl, const char *bucket, const char *key, rs_source **out, char *err,
                   size_t errlen)
{
    return rs_rc_open(out, impl, bucket, key, err, errlen);
}

int rs_rc_put_key(void *impl, const char *bucket, const char *key, const void *data, size_t len,
                  char *err, size_t errlen)
{
    return rc_put(impl, bucket, key, data, len, NULL, err, errlen);
}

int rs_rc_put_key_v(void *impl, const char *bucket, const char *key, const void *data, size_t len,
                    char *version, char *err, size_t errlen)
{
    return rc_put(impl, bucket, key, data, len, version, err, errlen);
}
