/* SPDX-License-Identifier: Apache-2.0
 *
 * rs_s3.c: the S3 implementation of the byte-range source (rangesrc.h). A
 * call takes a lane (a private libevent loop and the async S3 client on it),
 * submits all its ranges as ranged GETs pinned to the ETag seen by HEAD at open
 * (If-Match, and the client compares the answer's ETag too), then turns the
 * loop until every one has completed, so many ranges are in flight at once on
 * the lane's pooled connections. Concurrent callers (the engine's download
 * threads reading ahead in one file) each take their own lane, made on first
 * need, up to RS_S3_LANES; past that they wait for one. A lane belongs to the
 * thread that holds it: the client belongs to the loop and the loop to
 * whichever thread runs it.
 */
#include "rangesrc.h"

#include "s3.h"

#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RS_S3_LANES 8

typedef struct rs__lane {
    struct event_base *base;
    s3_client *client;
} rs__lane;

typedef struct rs__s3 {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    s3_config cfg;
    rs__lane lanes[RS_S3_LANES];
    int n_lanes;           /* made so far */
    int free[RS_S3_LANES]; /* indices of lanes nobody holds */
    int n_free;
    char *bucket;
    char *key;
    char etag[S3_ETAG_MAX];
} rs__s3;

typedef struct rs__s3_call {
    size_t pending;
    int rc; /* first error */
    char *err;
    size_t errlen;
    bool head_done;
    s3_object_info head;
} rs__s3_call;

typedef struct rs__s3_get {
    rs__s3_call *call;
    uint64_t want;
    const char *bucket, *key;
} rs__s3_get;

static void rs__s3_destroy(void *impl)
{
    rs__s3 *s = impl;
    if (!s)
        return;
    for (int i = 0; i < s->n_lanes; i++) {
        s3_client_destroy(&s->lanes[i].client);
        if (s->lanes[i].base)
            event_base_free(s->lanes[i].base);
    }
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cv);
    free(s->bucket);
    free(s->key);
    free(s);
}

static void rs__s3_fail(rs__s3_call *c, int code, const char *msg)
{
    if (c->rc == 0) {
        c->rc = code ? code : -EIO;
        snprintf(c->err, c->errlen, "%s", msg);
    }
}

static void rs__s3_get_done(const s3_error *err, const s3_get_result *res, void *arg)
{
    rs__s3_get *g = arg;
    rs__s3_call *c = g->call;
    if (err && err->code && err->http_status == 416) {
        /* Every range lies inside the size pinned at open (rs_read_ranges
         * checks), so "outside the object" means a shorter object took its
         * place: the version changed (a server that checks the range before
         * If-Match answers 416, not 412). */
        char msg[RS_MSG_MAX];
        snprintf(msg, sizeof(msg),
                 "s3://%.100s/%.200s changed since it was opened (it is shorter now: %.150s)",
                 g->bucket, g->key, err->message);
        rs__s3_fail(c, -ESTALE, msg);
    } else if (err && err->code) {
        rs__s3_fail(c, err->code, err->message);
    } else if (!res || res->bytes != g->want) {
        char msg[RS_MSG_MAX];
        snprintf(msg, sizeof(msg), "short read: %" PRIu64 " of %" PRIu64 " bytes arrived",
                 res ? res->bytes : 0, g->want);
        rs__s3_fail(c, -EIO, msg);
    }
    c->pending--;
}

/* A lane of the source's: a free one, a new one while fewer than
 * RS_S3_LANES exist, else waits for one. -1 when a new lane cannot be made
 * and none exists (err filled). */
static int rs__lane_get(rs__s3 *s, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->lock);
    for (;;) {
        if (s->n_free > 0) {
            int l = s->free[--s->n_free];
            pthread_mutex_unlock(&s->lock);
            return l;
        }
        if (s->n_lanes < RS_S3_LANES) {
            rs__lane *ln = &s->lanes[s->n_lanes];
            ln->base = event_base_new();
            int rc = ln->base ? s3_client_create(&ln->client, &s->cfg, ln->base) : -ENOMEM;
            if (rc == 0) {
                int l = s->n_lanes++;
                pthread_mutex_unlock(&s->lock);
                return l;
            }
            if (ln->base)
                event_base_free(ln->base);
            ln->base = NULL;
            if (s->n_lanes == 0) {
                pthread_mutex_unlock(&s->lock);
                snprintf(err, errlen, "s3://%s/%s: cannot create the S3 client: %s", s->bucket,
                         s->key, strerror(-rc));
                return -1;
            }
            /* no more lanes: share the ones there are */
        }
        pthread_cond_wait(&s->cv, &s->lock);
    }
}

static void rs__lane_put(rs__s3 *s, int l)
{
    pthread_mutex_lock(&s->lock);
    s->free[s->n_free++] = l;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->lock);
}

static int rs__s3_read(void *impl, const rs_range *ranges, size_t n, char *err, size_t errlen)
{
    rs__s3 *s = impl;
    rs__s3_get *gets = calloc(n, sizeof(*gets));
    if (!gets)
        return -ENOMEM;
    rs__s3_call call = {.err = err, .errlen = errlen};
    int l = rs__lane_get(s, err, errlen);
    if (l < 0) {
        free(gets);
        return -ENOMEM;
    }
    rs__lane *ln = &s->lanes[l];
    for (size_t i = 0; i < n; i++) {
        if (ranges[i].length == 0)
            continue;
        gets[i].call = &call;
        gets[i].want = ranges[i].length;
        gets[i].bucket = s->bucket;
        gets[i].key = s->key;
        s3_get_args a = {
            .bucket = s->bucket,
            .key = s->key,
            .offset = ranges[i].offset,
            .length = ranges[i].length,
            .if_match = s->etag[0] ? s->etag : NULL,
            .buf = ranges[i].buf,
            .cap = (size_t)ranges[i].length,
        };
        int rc = s3_get(ln->client, &a, rs__s3_get_done, &gets[i]);
        if (rc < 0) {
            char msg[RS_MSG_MAX];
            snprintf(msg, sizeof(msg), "s3://%s/%s: cannot submit a ranged GET: %s", s->bucket,
                     s->key, strerror(-rc));
            rs__s3_fail(&call, rc, msg);
            break;
        }
        call.pending++;
    }
    while (call.pending > 0)
        event_base_loop(ln->base, EVLOOP_ONCE);
    rs__lane_put(s, l);
    free(gets);
    return call.rc;
}

static void rs__s3_head_done(const s3_error *err, const s3_object_info *info, void *arg)
{
    rs__s3_call *c = arg;
    if (err && err->code)
        rs__s3_fail(c, err->code, err->message);
    else if (info)
        c->head = *info;
    c->head_done = true;
}

int rs_s3_open(rs_source **out, const s3_config *cfg, const char *bucket, const char *key,
               char *err, size_t errlen)
{
    *out = NULL;
    char scratch[RS_MSG_MAX];
    if (!err || !errlen) {
        err = scratch;
        errlen = sizeof(scratch);
    }
    rs__s3 *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->cfg = *cfg;
    s->bucket = strdup(bucket);
    s->key = strdup(key);
    s->lanes[0].base = event_base_new();
    if (!s->bucket || !s->key || !s->lanes[0].base) {
        rs__s3_destroy(s);
        snprintf(err, errlen, "s3://%s/%s: out of memory opening the object", bucket, key);
        return -ENOMEM;
    }
    s->n_lanes = 1; /* lane 0 does the HEAD, then waits free for the first read */
    int rc = s3_client_create(&s->lanes[0].client, cfg, s->lanes[0].base);
    if (rc < 0) {
        snprintf(err, errlen, "s3://%s/%s: cannot create the S3 client: %s (check the endpoint)",
                 bucket, key, strerror(-rc));
        rs__s3_destroy(s);
        return rc;
    }
    rs__s3_call call = {.err = err, .errlen = errlen};
    rc = s3_head(s->lanes[0].client, bucket, key, rs__s3_head_done, &call);
    if (rc < 0) {
        snprintf(err, errlen, "s3://%s/%s: cannot submit HEAD: %s", bucket, key, strerror(-rc));
        rs__s3_destroy(s);
        return rc;
    }
    while (!call.head_done)
        event_base_loop(s->lanes[0].base, EVLOOP_ONCE);
    s->free[s->n_free++] = 0;
    if (call.rc < 0) {
        rc = call.rc;
        rs__s3_destroy(s);
        return rc;
    }
    snprintf(s->etag, sizeof(s->etag), "%s", call.head.etag);
    char name[2048];
    snprintf(name, sizeof(name), "s3://%s/%s", bucket, key);
    static const rs_ops ops = {.read_ranges = rs__s3_read, .destroy = rs__s3_destroy};
    rc = rs_source_create(out, &ops, s, name, call.head.size, call.head.etag);
    if (rc < 0)
        snprintf(err, errlen, "%s: cannot open: %s", name, strerror(-rc));
    return rc;
}

/* ---- S3 as an object store (rangesrc.h) ------------------------------------------ */

int rs_key_cb(const s3_object_info *info, void *arg)
{
    rs_key_ctx *g = arg;
    int rc = g->fn(info->key, info->size, g->arg);
    if (rc < 0) {
        g->rc = rc;
        return rc;
    }
    return 0;
}

int rs_s3_list(void *impl, const char *bucket, const char *glob, eng_key_fn fn, void *arg,
               char *err, size_t errlen)
{
    s3_sync *s;
    int rc = s3_sync_create(&s, impl);
    if (rc < 0) {
        snprintf(err, errlen, "cannot start the S3 client: %s", strerror(-rc));
        return rc;
    }
    rs_key_ctx g = {fn, arg, 0};
    s3_error e = {0};
    rc = s3_sync_glob(s, bucket, glob, rs_key_cb, &g, &e);
    s3_sync_destroy(&s);
    if (g.rc < 0)
        rc = g.rc;
    if (rc < 0)
        snprintf(err, errlen, "cannot list s3://%s/%s: %s", bucket, glob,
                 e.message[0] ? e.message : strerror(-rc));
    return rc < 0 ? rc : 0;
}

int rs_s3_open_key(void *impl, const char *bucket, const char *key, rs_source **out, char *err,
                   size_t errlen)
{
    return rs_s3_open(out, impl, bucket, key, err, errlen);
}

int rs_s3_own_error(const char *whose, int rc, char *err, size_t errlen)
{
    static const struct {
        const char *env, *own;
    } advice[] = {
        {"; check AWS_ACCESS_KEY_ID or AWS_PROFILE", "; check the access key given to s3()"},
        {"; check AWS_SECRET_ACCESS_KEY and the region",
         "; check the secret given to s3() and the region"},
    };
    if (rc >= 0 || errlen < 2)
        return rc;
    char *m = strdup(err);
    if (!m)
        return rc;
    for (size_t i = 0; i < sizeof(advice) / sizeof(advice[0]); i++) {
        char *at = strstr(m, advice[i].env);
        if (at) {
            *at = 0;
            snprintf(err, errlen, "%s%s%s", m, advice[i].own, at + strlen(advice[i].env));
            free(m);
            return rc;
        }
    }
    snprintf(err, errlen, "%s (%s)", m, whose);
    free(m);
    return rc;
}

int rs_s3_own_config(s3_config *out, const s3_config *base, bool nosign, const char *key,
                     const char *secret, const char *token, const char **whose, char *err,
                     size_t errlen)
{
    const char *tok = token ? token : "";
    *out = *base;
    memset(out->access_key, 0, sizeof(out->access_key));
    memset(out->secret_key, 0, sizeof(out->secret_key));
    memset(out->session_token, 0, sizeof(out->session_token));
    out->anonymous = nosign;
    *whose =
        nosign ? "unsigned: NOSIGN was given to s3()" : "with the key and secret given to s3()";
    if (nosign)
        return 0;
    const char *too_long = strlen(key) >= sizeof(out->access_key)      ? "access key"
                           : strlen(secret) >= sizeof(out->secret_key) ? "secret"
                           : strlen(tok) >= sizeof(out->session_token) ? "session token"
                                                                       : NULL;
    if (too_long) {
        snprintf(err, errlen, "the %s given to s3() is longer than an S3 config holds", too_long);
        return -EINVAL;
    }
    snprintf(out->access_key, sizeof(out->access_key), "%s", key);
    snprintf(out->secret_key, sizeof(out->secret_key), "%s", secret);
    snprintf(out->session_token, sizeof(out->session_token), "%s", tok);
    return 0;
}
