/* SPDX-License-Identifier: Apache-2.0
 *
 * rc_req.c: libringcache's calls that are not block reads, as typed requests
 * (rc_int.h, RC_REQ_FIELDS): the caller's thread fills a request of its type
 * on its stack, queues it for the I/O thread and sleeps until it is done;
 * the I/O thread starts it by type and finishes it from whatever callback
 * ends it. connect (rc_create's first HELLO), HEAD (rc_open's miss), PUT
 * (write-through, or straight to S3 when no node takes it), WARM and STATS.
 */
#include "rc_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the queue -------------------------------------------------------------------- */

int rc__req_run(rc_client *c, rc_req *req, rc_req_type type)
{
    req->c = c;
    req->type = type;
    req->next = NULL;
    req->done = false;
    req->code = 0;
    req->msg[0] = '\0';
    pthread_cond_init(&req->cond, NULL);
    pthread_mutex_lock(&c->qlock);
    if (c->cq_tail)
        c->cq_tail->next = req;
    else
        c->cq_head = req;
    c->cq_tail = req;
    pthread_mutex_unlock(&c->qlock);
    rc__wake(c);
    pthread_mutex_lock(&c->qlock);
    while (!req->done)
        pthread_cond_wait(&req->cond, &c->qlock);
    pthread_mutex_unlock(&c->qlock);
    pthread_cond_destroy(&req->cond);
    return req->code;
}

void rc__req_finish(rc_req *req, int code, const char *msg)
{
    rc_client *c = req->c;
    req->code = code;
    if (code < 0)
        snprintf(req->msg, sizeof(req->msg), "%s", msg && msg[0] ? msg : strerror(-code));
    pthread_mutex_lock(&c->qlock);
    req->done = true;
    pthread_cond_signal(&req->cond);
    pthread_mutex_unlock(&c->qlock);
}

/* ---- connect ----------------------------------------------------------------------- */

void rc__connect_done(int code, const char *msg, void *arg)
{
    rc_client *c = arg;
    c->connecting = false;
    if (atomic_load(&c->stop) || !c->cl) {
        c->connected = false;
    } else if (code == 0) {
        uint32_t nbs = rcl_block_size(c->cl);
        if (c->bs == 0 || nbs == c->bs) {
            if (c->bs == 0) /* only while rc_create waits: readers read bs */
                c->bs = nbs;
            c->connected = true;
        } else {
            code = -EPROTO; /* nodes with another block size than the pages in use */
            msg = "the cache nodes use another block size than this client's page cache";
        }
        atomic_store(&c->n_members, rcl_member_count(c->cl));
    }
    if (code < 0)
        c->next_probe_ms = rc__now_ms() + c->cfg.down_ms;
    snprintf(c->connect_err, sizeof(c->connect_err), "%s", code < 0 && msg ? msg : "");
    if (c->connect_req) {
        rc_connect_req *req = c->connect_req;
        c->connect_req = NULL;
        if (code == 0)
            snprintf(c->tenant, sizeof(c->tenant), "%s", rcl_tenant(c->cl));
        rc__req_finish((rc_req *)req, code, msg);
    }
}

static void rc_connect_start(rc_client *c, rc_connect_req *req)
{
    if (!c->cl) {
        rc__req_finish((rc_req *)req, 0, NULL);
        return;
    }
    c->connect_req = req;
    c->connecting = true;
    int rc = rcl_connect(c->cl, rc__connect_done, c);
    if (rc < 0) {
        c->connect_req = NULL;
        c->connecting = false;
        rc__req_finish((rc_req *)req, rc, "cannot start connecting to the cache nodes");
    }
}

/* ---- HEAD ---------------------------------------------------------------------------- */

static void rc_head_s3_done(const s3_error *err, const s3_object_info *info, void *arg)
{
    rc_head_req *req = arg;
    if (err->code) {
        rc__req_finish((rc_req *)req, err->code, err->message);
        return;
    }
    req->size = info->size;
    snprintf(req->version, sizeof(req->version), "%s", info->etag);
    rc__req_finish((rc_req *)req, 0, NULL);
}

/* why: the node's words when it answered that its own S3 failed (code
 * -EREMOTEIO), else NULL (no node answered). */
static void rc_head_to_s3(rc_client *c, rc_head_req *req, int code, const char *why)
{
    char msg[RC_ERR_MAX];
    if (c->cfg.cache_only) {
        if (why)
            snprintf(msg, sizeof(msg),
                     "HEAD s3://%s/%s: %s (cache_only: S3 is not asked "
                     "directly)",
                     req->bucket, req->key, why);
        else
            snprintf(msg, sizeof(msg),
                     "no cache node answered the HEAD of s3://%s/%s "
                     "(cache_only: S3 is not asked directly)%s%s",
                     req->bucket, req->key, c->connect_err[0] ? "; " : "", c->connect_err);
        rc__req_finish((rc_req *)req, code, msg);
        return;
    }
    if (!c->s3) {
        snprintf(msg, sizeof(msg),
                 "cannot HEAD s3://%s/%s: no cache node answered and the S3 "
                 "client could not be set up (%s)",
                 req->bucket, req->key, c->s3_err);
        rc__req_finish((rc_req *)req, -EIO, msg);
        return;
    }
    RC_COUNT(c, head_fallbacks, 1);
    int rc = s3_head(c->s3, req->bucket, req->key, rc_head_s3_done, req);
    if (rc < 0)
        rc__req_finish((rc_req *)req, rc, "cannot send a HEAD to S3");
}

static void rc_head_node_done(int code, const char *msg, uint64_t size, const char *version,
                              void *arg)
{
    rc_head_req *req = arg;
    if ((code == -EHOSTDOWN || code == -EREMOTEIO) && !atomic_load(&req->c->stop)) {
        rc_head_to_s3(req->c, req, code, code == -EREMOTEIO ? msg : NULL);
        return;
    }
    req->size = size;
    snprintf(req->version, sizeof(req->version), "%s", version ? version : "");
    rc__req_finish((rc_req *)req, code, msg);
}

static void rc_head_start(rc_client *c, rc_head_req *req)
{
    rc__maybe_probe(c);
    if (c->connected && rcl_head(c->cl, req->bucket, req->key, rc_head_node_done, req) == 0)
        return;
    rc_head_to_s3(c, req, -EHOSTDOWN, NULL);
}

/* ---- PUT ------------------------------------------------------------------------------- */

static int64_t rc_put_read(void *buf, size_t cap, void *arg)
{
    rc_put_req *req = arg;
    if (req->off >= req->size)
        return 0;
    uint64_t n = req->size - req->off < cap ? req->size - req->off : cap;
    int64_t r = req->read_at(req->read_arg, buf, (size_t)n, req->off);
    if (r == 0)
        return -EIO; /* the source ended before `size` bytes */
    if (r > 0)
        req->off += (uint64_t)r;
    return r;
}

static void rc_put_s3_done(const s3_error *err, const char *etag, void *arg)
{
    rc_put_req *req = arg;
    free(req->gathered);
    req->gathered = NULL;
    if (err->code) {
        rc__req_finish((rc_req *)req, err->code, err->message);
        return;
    }
    snprintf(req->version, sizeof(req->version), "%s", etag ? etag : "");
    rc__req_finish((rc_req *)req, 0, NULL);
}

/* Reads the whole object from read_at into req->gathered: 0, or the call is
 * finished with the error. */
static int rc_put_gather(rc_put_req *req)
{
    char msg[RC_ERR_MAX];
    req->gathered = malloc(req->size ? req->size : 1);
    if (!req->gathered) {
        rc__req_finish((rc_req *)req, -ENOMEM, "out of memory gathering a PUT for S3");
        return -ENOMEM;
    }
    for (uint64_t off = 0; off < req->size;) {
        int64_t r =
            req->read_at(req->read_arg, req->gathered + off, (size_t)(req->size - off), off);
        if (r <= 0) {
            free(req->gathered);
            req->gathered = NULL;
            snprintf(msg, sizeof(msg),
                     "the data of s3://%s/%s could not be read at offset %" PRIu64, req->bucket,
                     req->key, off);
            rc__req_finish((rc_req *)req, r < 0 ? (int)r : -EIO, msg);
            return -EIO;
        }
        off += (uint64_t)r;
    }
    return 0;
}

static void rc_put_to_s3(rc_client *c, rc_put_req *req)
{
    char msg[RC_ERR_MAX];
    if (c->cfg.cache_only || !c->s3 || req->size > RC_PUT_MAX) {
        snprintf(msg, sizeof(msg), "no cache node took the PUT of s3://%s/%s%s", req->bucket,
                 req->key,
                 c->cfg.cache_only ? " (cache_only: S3 is not written directly)"
                 : !c->s3          ? " and the S3 client could not be set up"
                                   : " and it is larger than 5 GiB, the most a direct PUT sends");
        rc__req_finish((rc_req *)req, c->cfg.cache_only ? -EHOSTDOWN : -EIO, msg);
        return;
    }
    if (rc_put_gather(req) < 0)
        return;
    RC_COUNT(c, head_fallbacks, 1);
    int rc =
        s3_put(c->s3, req->bucket, req->key, req->gathered, (size_t)req->size, rc_put_s3_done, req);
    if (rc < 0) {
        free(req->gathered);
        req->gathered = NULL;
        rc__req_finish((rc_req *)req, rc, "cannot send a PUT to S3");
    }
}

static void rc_put_node_done(int code, const char *msg, const char *version, void *arg)
{
    rc_put_req *req = arg;
    if (code == -EHOSTDOWN && !atomic_load(&req->c->stop)) {
        rc_put_to_s3(req->c, req); /* read_at starts again from 0 */
        return;
    }
    snprintf(req->version, sizeof(req->version), "%s", version ? version : "");
    rc__req_finish((rc_req *)req, code, msg);
}

static void rc_put_start(rc_client *c, rc_put_req *req)
{
    rc__maybe_probe(c);
    req->off = 0;
    if (c->connected && rcl_put(c->cl, req->bucket, req->key, req->size, rc_put_read, req,
                                rc_put_node_done, req) == 0)
        return;
    rc_put_to_s3(c, req);
}

int rc_put_stream(rc_client *c, const char *bucket, const char *key, uint64_t size,
                  rc_read_at_fn read_at, void *arg, char *version_out, char *err, size_t errlen)
{
    rc_put_req req = {
        .bucket = bucket, .key = key, .size = size, .read_at = read_at, .read_arg = arg};
    int rc = rc__req_run(c, (rc_req *)&req, RC_REQ_PUT);
    if (rc < 0) {
        if (err)
            snprintf(err, errlen, "%s", req.msg);
        return rc;
    }
    rc__meta_put(&c->meta, bucket, key, size, req.version); /* read-your-writes */
    if (version_out)
        snprintf(version_out, RC_VERSION_MAX, "%s", req.version);
    return 0;
}

typedef struct {
    const uint8_t *data;
    size_t len;
} rc_buf_src;

static int64_t rc_buf_read_at(void *arg, void *buf, size_t len, uint64_t off)
{
    rc_buf_src *s = arg;
    if (off >= s->len)
        return 0;
    size_t n = s->len - off < len ? s->len - (size_t)off : len;
    memcpy(buf, s->data + off, n);
    return (int64_t)n;
}

int rc_put(rc_client *c, const char *bucket, const char *key, const void *data, size_t len,
           char *version_out, char *err, size_t errlen)
{
    rc_buf_src s = {data, len};
    return rc_put_stream(c, bucket, key, len, rc_buf_read_at, &s, version_out, err, errlen);
}

/* ---- WARM ------------------------------------------------------------------------------ */

static void rc_warm_done(int code, const char *msg, uint64_t started, void *arg)
{
    rc_warm_req *req = arg;
    req->started = started;
    rc__req_finish((rc_req *)req, code, msg);
}

static void rc_warm_start(rc_client *c, rc_warm_req *req)
{
    char msg[RC_ERR_MAX];
    const bkey_object *o = &req->obj->id;
    rc__maybe_probe(c);
    if (!c->connected) {
        snprintf(msg, sizeof(msg), "cannot warm s3://%s/%s: no cache node is up%s", o->bucket,
                 o->key, c->cl ? "" : " (no members configured)");
        rc__req_finish((rc_req *)req, -EHOSTDOWN, msg);
        return;
    }
    rcl_object ro = {o->bucket, o->key, o->version, o->size};
    int rc = rcl_warm(c->cl, &ro, rc_warm_done, req);
    if (rc < 0)
        rc__req_finish((rc_req *)req, rc, "cannot send WARM");
}

/* warm --wait: a one-byte GET of each block's end joins the node's fill, so
 * the wave is done when every block is stored; progress every 200 ms. */
static int rc_warm_wait(rc_client *c, rc_obj *o, uint64_t nb, rc_progress_fn progress, void *arg,
                        char *err, size_t errlen)
{
    enum { WAVE = 256 };
    rc_item *items = calloc(WAVE, sizeof(*items));
    uint8_t *bytes = malloc(WAVE);
    if (!items || !bytes) {
        free(items);
        free(bytes);
        snprintf(err, errlen, "out of memory waiting for the warm of s3://%s/%s", o->id.bucket,
                 o->id.key);
        return -ENOMEM;
    }
    rc_batch batch = {.code = 0};
    atomic_init(&batch.pending, 0);
    pthread_cond_init(&batch.cond, NULL);
    int64_t last = 0;
    for (uint64_t b0 = 0; b0 < nb && !batch.code; b0 += WAVE) {
        int n = (int)(nb - b0 < WAVE ? nb - b0 : WAVE);
        for (int i = 0; i < n; i++) {
            rc_item *it = &items[i];
            memset(it, 0, sizeof(*it));
            it->c = c;
            it->batch = &batch;
            it->obj = o;
            it->kind = RC_ITEM_PROBE;
            it->block = b0 + (uint64_t)i;
            it->in_off = (uint32_t)(bkey_block_len(o->id.size, c->bs, it->block) - 1);
            it->in_len = 1;
            it->dst = &bytes[i];
            it->next = i + 1 < n ? &items[i + 1] : NULL;
        }
        rc__submit(c, &items[0], &items[n - 1], false, &batch, n);
        pthread_mutex_lock(&c->qlock);
        while (atomic_load(&batch.pending) > 0) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 200 * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&batch.cond, &c->qlock, &ts);
            uint64_t done = b0 + (uint64_t)(n - atomic_load(&batch.pending));
            pthread_mutex_unlock(&c->qlock);
            if (progress && rc__now_ms() - last >= 200) {
                progress(done, nb, arg);
                last = rc__now_ms();
            }
            pthread_mutex_lock(&c->qlock);
        }
        pthread_mutex_unlock(&c->qlock);
    }
    pthread_cond_destroy(&batch.cond);
    free(items);
    free(bytes);
    if (batch.code < 0) {
        snprintf(err, errlen, "%s", batch.msg);
        return batch.code;
    }
    return 0;
}

int64_t rc_warm(rc_client *c, const char *bucket, const char *key, bool wait,
                rc_progress_fn progress, void *arg, char *err, size_t errlen)
{
    char scratch[RC_ERR_MAX];
    if (!err) {
        err = scratch;
        errlen = sizeof(scratch);
    }
    rc_handle *h;
    int rc = rc_open(c, bucket, key, &h, err, errlen);
    if (rc < 0)
        return rc;
    rc_obj *o = h->obj;
    uint64_t nb = bkey_block_count(o->id.size, c->bs);
    rc_warm_req req = {.obj = o};
    rc = rc__req_run(c, (rc_req *)&req, RC_REQ_WARM);
    if (rc < 0) {
        snprintf(err, errlen, "%s", req.msg);
        rc_close(&h);
        return rc;
    }
    if (wait && nb) {
        rc = rc_warm_wait(c, o, nb, progress, arg, err, errlen);
        if (rc < 0) {
            rc_close(&h);
            return rc;
        }
    }
    if (progress)
        progress(nb, nb, arg);
    rc_close(&h);
    return (int64_t)nb;
}

/* ---- STATS ------------------------------------------------------------------------------ */

static void rc_stats_line(const char *id, const char *addr, int code, const char *text, void *arg)
{
    rc_stats_req *req = arg;
    rc_node_line *l = calloc(1, sizeof(*l));
    if (!l)
        return;
    l->id = strdup(id);
    l->addr = strdup(addr);
    l->text = text ? strdup(text) : NULL;
    l->code = code;
    if (!l->id || !l->addr || (text && !l->text)) {
        free(l->id);
        free(l->addr);
        free(l->text);
        free(l);
        return;
    }
    *req->tail = l;
    req->tail = &l->next;
}

static void rc_stats_done(int code, const char *msg, void *arg)
{
    rc__req_finish(arg, code, msg);
}

static void rc_stats_start(rc_client *c, rc_stats_req *req)
{
    req->tail = &req->lines;
    if (!c->cl) {
        rc__req_finish((rc_req *)req, -EINVAL, "no cache members are configured");
        return;
    }
    int rc = rcl_stats_all(c->cl, rc_stats_line, rc_stats_done, req);
    if (rc < 0)
        rc__req_finish((rc_req *)req, rc, "out of memory");
}

int rc_node_stats(rc_client *c, rc_node_text_fn fn, void *arg)
{
    rc_stats_req req = {.lines = NULL};
    int rc = rc__req_run(c, (rc_req *)&req, RC_REQ_STATS);
    int failed = 0;
    while (req.lines) {
        rc_node_line *l = req.lines;
        req.lines = l->next;
        if (l->code < 0)
            failed++;
        fn(l->id, l->addr, l->code, l->text, arg);
        free(l->id);
        free(l->addr);
        free(l->text);
        free(l);
    }
    return rc < 0 ? rc : failed;
}

/* ---- dispatch ------------------------------------------------------------------------------ */

void rc__req_start(rc_req *req)
{
    rc_client *c = req->c;
    switch (req->type) {
    case RC_REQ_CONNECT: rc_connect_start(c, (rc_connect_req *)req); break;
    case RC_REQ_HEAD: rc_head_start(c, (rc_head_req *)req); break;
    case RC_REQ_PUT: rc_put_start(c, (rc_put_req *)req); break;
    case RC_REQ_WARM: rc_warm_start(c, (rc_warm_req *)req); break;
    case RC_REQ_STATS: rc_stats_start(c, (rc_stats_req *)req); break;
    default: rc__req_finish(req, -EINVAL, "unknown request type"); break;
    }
}
