/* SPDX-License-Identifier: Apache-2.0
 *
 * node_upload.c: the streamed S3 upload of node_upload.h. The object's bytes
 * gather into a part (or the whole object when it fits one); a full part is
 * sent, or queued while the multipart upload's id has not come back; S3's
 * acknowledgements release the writer's pause and, once every part is in,
 * the upload is completed. The upload holds a reference for its owner and one
 * per S3 call in flight, and is freed when the last goes: a failure or an
 * abort never leaves a callback of S3 pointing at freed memory.
 */
#include "node_upload.h"

#include "blockkey.h"
#include "node.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UPLOAD_MAX_PARTS          10000
#define UPLOAD_MAX_PARTS_INFLIGHT 4

struct node_upload {
    s3_client *s3;
    char bucket[BKEY_BUCKET_MAX + 1], key[BKEY_KEY_MAX + 1];
    uint64_t size, part_size, received;
    node_upload_pause_fn pause;
    node_upload_done_fn done;
    void *arg;
    int refs;   /* the owner's (until done or abort) + S3 calls in flight */
    bool owned; /* the owner still listens */
    bool multipart, completing, acked, failed;
    char *upload_id;
    uint8_t *part; /* the part (or whole object) being filled */
    size_t part_len;
    int parts_total, parts_sent, parts_inflight, parts_ok;
    char **etags;
    uint8_t **queued; /* full parts waiting for the upload id */
    size_t *queued_len;
    int n_queued;
    bool if_none_match; /* the write's condition (PUT, or the Complete) */
    char if_match[S3_ETAG_MAX];
};

static void upload_unref(node_upload *u)
{
    if (--u->refs > 0)
        return;
    free(u->upload_id);
    free(u->part);
    for (int i = 0; u->etags && i < u->parts_total; i++)
        free(u->etags[i]);
    free(u->etags);
    for (int i = 0; i < u->n_queued; i++)
        free(u->queued[i]);
    free(u->queued);
    free(u->queued_len);
    free(u);
}

/* Tell the owner (once) and drop its reference. */
static void upload_finish(node_upload *u, const s3_error *err, const char *etag)
{
    if (!u->owned)
        return;
    u->owned = false;
    u->done(u->arg, err, etag);
    upload_unref(u);
}

static void abort_done(const s3_error *err, void *arg)
{
    node_upload *u = arg;
    if (err->code)
        node_log(NODE_LOG_WARN,
                 "msg=\"multipart upload not aborted\" bucket=%s key=\"%s\" err=\"%s\"", u->bucket,
                 u->key, err->message);
    upload_unref(u);
}

static void send_abort(node_upload *u)
{
    u->refs++;
    if (s3_mpu_abort(u->s3, u->bucket, u->key, u->upload_id, abort_done, u) < 0)
        u->refs--;
}

static void upload_fail(node_upload *u, int code, const char *msg)
{
    if (u->failed)
        return;
    u->failed = true;
    if (u->upload_id && !u->acked)
        send_abort(u);
    s3_error e = {0};
    e.code = code;
    snprintf(e.message, sizeof(e.message), "%s", msg);
    upload_finish(u, &e, NULL);
}

static void upload_pause(node_upload *u, bool pause)
{
    if (u->owned && u->pause)
        u->pause(u->arg, pause);
}

/* ---- S3's answers ------------------------------------------------------------ */

static void acked(node_upload *u, const s3_error *err, const char *etag)
{
    if (err->code)
        upload_fail(u, err->code, err->message);
    else if (!u->failed) {
        u->acked = true;
        upload_finish(u, err, etag ? etag : "");
    }
}

static void single_done(const s3_error *err, const char *etag, void *arg)
{
    node_upload *u = arg;
    free(u->part);
    u->part = NULL;
    acked(u, err, etag);
    upload_unref(u);
}

static void complete_done(const s3_error *err, const char *etag, void *arg)
{
    node_upload *u = arg;
    acked(u, err, etag);
    upload_unref(u);
}

static void maybe_complete(node_upload *u)
{
    if (u->failed || u->completing || u->received != u->size || u->parts_inflight || u->n_queued ||
        u->parts_ok != u->parts_total || !u->upload_id)
        return;
    u->completing = true;
    u->refs++;
    s3_write_cond cond = {u->if_none_match, u->if_match[0] ? u->if_match : NULL};
    if (s3_mpu_complete_cond(u->s3, u->bucket, u->key, u->upload_id, (const char *const *)u->etags,
                             u->parts_total, &cond, complete_done, u) < 0) {
        u->refs--;
        upload_fail(u, -EIO, "cannot complete the multipart upload");
    }
}

typedef struct part_op {
    node_upload *u;
    int number;
    uint8_t *data;
} part_op;

static void part_done(const s3_error *err, const char *etag, void *arg)
{
    part_op *op = arg;
    node_upload *u = op->u;
    u->parts_inflight--;
    free(op->data);
    if (err->code) {
        upload_fail(u, err->code, err->message);
    } else if (!u->failed) {
        u->etags[op->number - 1] = strdup(etag ? etag : "");
        u->parts_ok++;
        if (u->parts_inflight < UPLOAD_MAX_PARTS_INFLIGHT)
            upload_pause(u, false);
        maybe_complete(u);
    }
    free(op);
    upload_unref(u);
}

static void send_part(node_upload *u, uint8_t *data, size_t len)
{
    part_op *op = calloc(1, sizeof(*op));
    if (!op) {
        free(data);
        upload_fail(u, -ENOMEM, "out of memory");
        return;
    }
    op->u = u;
    op->number = ++u->parts_sent;
    op->data = data;
    u->parts_inflight++;
    u->refs++;
    if (s3_mpu_upload_part(u->s3, u->bucket, u->key, u->upload_id, op->number, data, len, part_done,
                           op) < 0) {
        s3_error e = {0};
        e.code = -EIO;
        snprintf(e.message, sizeof(e.message), "cannot send part %d", op->number);
        part_done(&e, NULL, op);
    }
}

static void created(const s3_error *err, const char *upload_id, void *arg)
{
    node_upload *u = arg;
    if (err->code) {
        upload_fail(u, err->code, err->message);
    } else if (!u->failed) {
        u->upload_id = strdup(upload_id);
        for (int i = 0; i < u->n_queued; i++)
            send_part(u, u->queued[i], u->queued_len[i]);
        u->n_queued = 0;
        maybe_complete(u);
    } else {
        /* given up before S3 said the id: abort the upload it made */
        u->upload_id = strdup(upload_id);
        if (u->upload_id)
            send_abort(u);
    }
    upload_unref(u);
}

/* A part is full (or the last one): send it, or queue it until the upload id. */
static void part_full(node_upload *u)
{
    uint8_t *data = u->part;
    size_t len = u->part_len;
    u->part = NULL;
    u->part_len = 0;
    if (!u->upload_id) {
        u->queued[u->n_queued] = data;
        u->queued_len[u->n_queued] = len;
        u->n_queued++; /* sent in order when the upload id arrives */
    } else {
        send_part(u, data, len);
    }
    if (u->parts_inflight + u->n_queued >= UPLOAD_MAX_PARTS_INFLIGHT)
        upload_pause(u, true); /* back-pressure until a part is acknowledged */
}

/* ---- the owner's calls --------------------------------------------------------- */

int node_upload_start(node_upload **out, s3_client *s3, const char *bucket, const char *key,
                      uint64_t size, uint64_t part_size, const s3_write_cond *cond,
                      node_upload_pause_fn pause, node_upload_done_fn done, void *arg, char *err,
                      size_t errlen)
{
    *out = NULL;
    node_upload *u = calloc(1, sizeof(*u));
    if (!u) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    u->s3 = s3;
    snprintf(u->bucket, sizeof(u->bucket), "%s", bucket);
    snprintf(u->key, sizeof(u->key), "%s", key);
    u->size = size;
    u->part_size = part_size;
    u->pause = pause;
    u->done = done;
    u->arg = arg;
    u->refs = 1;
    u->multipart = size > part_size;
    if (cond) {
        u->if_none_match = cond->if_none_match;
        if (cond->if_match &&
            s3_etag_normalize(cond->if_match, u->if_match, sizeof(u->if_match)) <= 0) {
            snprintf(err, errlen, "the If-Match ETag is empty or too long");
            free(u);
            return -EINVAL;
        }
    }
    if (u->multipart) {
        uint64_t parts = (size + part_size - 1) / part_size;
        if (parts > UPLOAD_MAX_PARTS) {
            snprintf(err, errlen,
                     "PUT of %llu bytes needs more than %d parts of %llu bytes (raise "
                     "--part-size)",
                     (unsigned long long)size, UPLOAD_MAX_PARTS, (unsigned long long)part_size);
            free(u);
            return -EFBIG;
        }
        u->parts_total = (int)parts;
        u->etags = calloc((size_t)u->parts_total, sizeof(char *));
        u->queued = calloc((size_t)u->parts_total, sizeof(uint8_t *));
        u->queued_len = calloc((size_t)u->parts_total, sizeof(size_t));
        if (!u->etags || !u->queued || !u->queued_len) {
            upload_unref(u);
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        u->refs++;
        if (s3_mpu_create(s3, u->bucket, u->key, created, u) < 0) {
            upload_unref(u);
            upload_unref(u);
            snprintf(err, errlen, "cannot start the multipart upload");
            return -EIO;
        }
    }
    u->owned = true;
    *out = u;
    return 0;
}

void node_upload_write(node_upload *u, const uint8_t *data, size_t len, bool last)
{
    if (u->failed || !u->owned)
        return;
    size_t off = 0;
    while (off < len || (last && !u->multipart && !u->part)) {
        size_t cap = u->multipart ? (size_t)u->part_size : (size_t)u->size;
        if (!u->part) {
            u->part = malloc(cap ? cap : 1);
            u->part_len = 0;
            if (!u->part) {
                upload_fail(u, -ENOMEM, "out of memory");
                return;
            }
        }
        size_t k = len - off < cap - u->part_len ? len - off : cap - u->part_len;
        memcpy(u->part + u->part_len, data + off, k);
        u->part_len += k;
        off += k;
        u->received += k;
        if (u->multipart && u->part_len == cap)
            part_full(u);
        if (!len)
            break;
    }
    if (!last || u->failed)
        return;
    if (!u->multipart) {
        u->refs++;
        s3_write_cond cond = {u->if_none_match, u->if_match[0] ? u->if_match : NULL};
        if (s3_put_cond(u->s3, u->bucket, u->key, u->part, u->part_len, &cond, single_done, u) <
            0) {
            u->refs--;
            upload_fail(u, -EIO, "cannot send the PUT to S3");
        }
        return;
    }
    if (u->part_len)
        part_full(u);
    maybe_complete(u);
}

void node_upload_abort(node_upload *u)
{
    if (!u || !u->owned)
        return;
    u->owned = false;
    if (!u->acked && !u->failed) {
        u->failed = true;
        if (u->upload_id)
            send_abort(u);
    }
    upload_unref(u);
}
