/* SPDX-License-Identifier: Apache-2.0
 *
 * node_put.c: write-through. A PUT's data streams into S3 (one PUT up to the
 * part size, else a multipart upload with parts in flight, the connection
 * paused while too many are) and, at the same time, into an unlinked staging
 * file in the data folder (so nothing is left behind by a crash). Only after S3
 * has acknowledged, and returned the new version (ETag), is each block read
 * back from staging and sent to its owner on the ring: indexed here when this
 * node owns it, else by PUT_BLOCK to the owner. The PUT is answered when every
 * block has been placed. If S3 fails, the client gets S3's error and nothing is
 * cached; a block that cannot be placed is logged and counted (S3 has the
 * object; the cache is only missing it).
 */
#include "node_int.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PUT_MAX_PARTS_INFLIGHT 4
#define PUT_MAX_BLOCKS_INFLIGHT 8

struct node_put {
    node_req *r;                 /* NULL once the request is gone */
    node_conn *c;
    node_worker *w;
    uint32_t id;
    int refs;                    /* the request + S3 calls + block placements */
    bkey_object obj;             /* version: S3's ETag, once it has answered */
    uint64_t received;
    uint64_t part_size;
    int staging_fd;
    const ten_tenant *tenant_ref; /* whose S3 credentials write */
    /* S3 */
    bool multipart, creating, completing, done_s3, failed, answered;
    char *upload_id;
    uint8_t *part;               /* the part (or whole object) being filled */
    size_t part_len;
    int parts_total, parts_sent, parts_inflight, parts_ok;
    char **etags;
    uint8_t **queued;            /* full parts waiting for the upload id */
    size_t *queued_len;
    int n_queued;
    char etag[S3_ETAG_MAX];
    /* placement */
    uint64_t next_block, blocks, blocks_inflight, blocks_done;
};

static void put_unref(node_put *p)
{
    if (--p->refs > 0)
        return;
    if (p->staging_fd >= 0)
        close(p->staging_fd);
    free(p->upload_id);
    free(p->part);
    for (int i = 0; p->etags && i < p->parts_total; i++)
        free(p->etags[i]);
    free(p->etags);
    for (int i = 0; i < p->n_queued; i++)
        free(p->queued[i]);
    free(p->queued);
    free(p->queued_len);
    free(p);
}

static void put_answer_error(node_put *p, int code, const char *msg)
{
    if (p->answered)
        return;
    p->answered = true;
    p->failed = true;
    if (p->r) {
        node_req *r = p->r;
        node__answer_error(p->c, p->id, code, "%s", msg);
        p->r = NULL;
        r->put = NULL;
        node__conn_pause(p->c, false);
        node__req_done(r);
        put_unref(p); /* the request's reference */
    }
}

static void abort_done(const s3_error *err, void *arg)
{
    node_put *p = arg;
    if (err->code)
        node_log(NODE_LOG_WARN, "msg=\"multipart upload not aborted\" bucket=%s key=\"%s\" err=\"%s\"",
                 p->obj.bucket, p->obj.key, err->message);
    put_unref(p);
}

static void put_fail(node_put *p, int code, const char *msg)
{
    node_log(NODE_LOG_WARN, "msg=\"write-through failed\" bucket=%s key=\"%s\" err=\"%s\"",
             p->obj.bucket, p->obj.key, msg);
    node__count(p->w, NM_S3_ERRORS, 1);
    bool had_failed = p->failed;
    put_answer_error(p, code, msg);
    p->failed = true;
    if (!had_failed && p->upload_id && !p->done_s3) {
        p->refs++;
        if (s3_mpu_abort(node__s3_for(p->w, p->tenant_ref), p->obj.bucket, p->obj.key, p->upload_id, abort_done,
                         p) < 0)
            p->refs--;
    }
}

static int s3_code_to_rcp(int code)
{
    return code == -EACCES ? RCP_E_FORBIDDEN : code == -ENOENT ? RCP_E_NOT_FOUND : RCP_E_S3;
}

/* ---- placing the blocks after S3 acknowledged -------------------------------- */

static void place_next(node_put *p);

static void put_finish(node_put *p)
{
    if (p->answered)
        return;
    p->answered = true;
    node__count(p->w, NM_PUTS, 1);
    node__count(p->w, NM_PUT_BYTES, p->obj.size);
    if (p->r) {
        node_req *r = p->r;
        uint8_t b[256];
        rcp_put_resp pr = {rcp_s(p->etag), p->obj.size};
        int k = rcp_encode_put_resp(&pr, b, sizeof(b));
        if (k > 0)
            node__answer_body(p->c, RCP_OP_PUT, p->id, b, (size_t)k);
        p->r = NULL;
        r->put = NULL;
        node__req_done(r);
        put_unref(p);
    }
}

typedef struct {
    node_put *p;
    node_buf *buf;
    uint64_t index;
} place_op;

static void place_done(node_put *p, place_op *op, int rc, const char *where)
{
    if (rc < 0)
        node_log(NODE_LOG_WARN,
                 "msg=\"block not placed after write-through\" bucket=%s key=\"%s\" block=%llu "
                 "owner=%s err=\"%s\"",
                 p->obj.bucket, p->obj.key, (unsigned long long)op->index, where, strerror(-rc));
    node_buf_unref(op->buf);
    free(op);
    p->blocks_inflight--;
    p->blocks_done++;
    place_next(p);
    put_unref(p);
}

static void local_written(void *arg, int rc)
{
    place_op *op = arg;
    place_done(op->p, op, rc, "self");
}

static void peer_written(const cc_result *res, void *arg)
{
    place_op *op = arg;
    if (!res->code)
        node__count(op->p->w, NM_PUT_BLOCKS_SENT, 1);
    else
        node_log(NODE_LOG_WARN, "msg=\"PUT_BLOCK failed\" err=\"%s\"", res->message);
    place_done(op->p, op, res->code, "peer");
}

static cc_conn *peer_conn(node_worker *w, const struct ring *ring, const struct ring_member *m)
{
    size_t idx = ring_member_index(ring, m);
    size_t count = ring_member_count(ring);
    if (w->n_peers < count) {
        cc_conn **np = realloc(w->peers, count * sizeof(*np));
        if (!np)
            return NULL;
        for (size_t i = w->n_peers; i < count; i++)
            np[i] = NULL;
        w->peers = np;
        w->n_peers = count;
    }
    if (w->peers[idx] && cc_conn_broken(w->peers[idx]))
        cc_conn_destroy(&w->peers[idx]);
    if (!w->peers[idx]) {
        char host[256];
        const char *addr = m->addr;
        const char *colon = strrchr(addr, ':');
        if (!colon || (size_t)(colon - addr) >= sizeof(host))
            return NULL;
        memcpy(host, addr, (size_t)(colon - addr));
        host[colon - addr] = '\0';
        if (host[0] == '[') { /* [v6]:port */
            memmove(host, host + 1, strlen(host));
            host[strlen(host) - 1] = '\0';
        }
        cc_config cc = {host, atoi(colon + 1), w->n->conf.peer_token,
                        (uint32_t)w->n->conf.block_size, w->n->conf.node_id, 2000, 30000,
                        w->n->ssl_ctx != NULL,
                        w->n->conf.tls_ca[0] ? w->n->conf.tls_ca : NULL,
                        m->host /* a dns: member: verify its SRV target's name */};
        if (cc_conn_create(&w->peers[idx], w->base, &cc) < 0)
            return NULL;
    }
    return w->peers[idx];
}

static void place_next(node_put *p)
{
    node *n = p->w->n;
    uint64_t bsz = (uint64_t)n->conf.block_size;
    while (p->blocks_inflight < PUT_MAX_BLOCKS_INFLIGHT && p->next_block < p->blocks) {
        uint64_t i = p->next_block++;
        uint64_t len = bkey_block_len(p->obj.size, bsz, i);
        place_op *op = calloc(1, sizeof(*op));
        node_buf *buf = node_buf_new(len);
        if (!op || !buf) {
            free(op);
            node_buf_unref(buf);
            p->blocks_done++;
            continue;
        }
        op->p = p;
        op->buf = buf;
        op->index = i;
        ssize_t got = pread(p->staging_fd, buf->data, len, (off_t)(i * bsz));
        if (got != (ssize_t)len) {
            node_log(NODE_LOG_WARN, "msg=\"staged block unreadable\" key=\"%s\" block=%llu",
                     p->obj.key, (unsigned long long)i);
            node_buf_unref(buf);
            free(op);
            p->blocks_done++;
            continue;
        }
        bkey_id id;
        bkey_object_block(&p->obj, i, &id);
        p->blocks_inflight++;
        p->refs++;
        struct ring *ring = n->members ? membership_ring(n->members) : NULL;
        const struct ring_member *owner = NULL;
        if (ring) {
            uint8_t rk[16];
            bkey_ring_key(bkey_of(&id), rk);
            if (ring_lookup(ring, rk, sizeof(rk), &owner, 1) < 1)
                owner = NULL;
        }
        int rc;
        if (!owner || strcmp(owner->id, n->conf.node_id) == 0) {
            rc = p->w->bs ? bs_write(p->w->bs, &id, buf->data, len, local_written, op)
                          : -ESHUTDOWN;
            if (rc < 0)
                local_written(op, rc);
        } else {
            cc_conn *pc = peer_conn(p->w, ring, owner);
            rcp_put_block_req pb = {rcp_s(p->obj.tenant),
                                    {rcp_s(p->obj.bucket), rcp_s(p->obj.key),
                                     rcp_s(p->obj.version), p->obj.size},
                                    i, buf->data, (uint32_t)len};
            rc = pc ? cc_put_block(pc, &pb, peer_written, op) : -ECONNREFUSED;
            if (rc < 0) {
                cc_result res = {0};
                res.code = rc;
                snprintf(res.message, sizeof(res.message), "cannot reach %s at %s", owner->id,
                         owner->addr);
                peer_written(&res, op);
            }
        }
        if (ring)
            ring_unref(&ring);
    }
    if (p->blocks_done == p->blocks && p->blocks_inflight == 0)
        put_finish(p);
}

static void s3_acknowledged(node_put *p, const char *etag)
{
    p->done_s3 = true;
    snprintf(p->etag, sizeof(p->etag), "%s", etag ? etag : "");
    p->blocks = bkey_block_count(p->obj.size, (uint64_t)p->w->n->conf.block_size);
    /* a version longer than a block identity holds cannot be asked for: S3
     * has the object, the cache just does not keep it */
    if (p->blocks == 0 || !p->etag[0] ||
        bkey_field_set(p->obj.version, sizeof(p->obj.version), p->etag, strlen(p->etag)) < 0) {
        put_finish(p);
        return;
    }
    place_next(p);
}

/* ---- S3 ------------------------------------------------------------------------ */

static void single_done(const s3_error *err, const char *etag, void *arg)
{
    node_put *p = arg;
    free(p->part);
    p->part = NULL;
    if (err->code)
        put_fail(p, s3_code_to_rcp(err->code), err->message);
    else if (!p->failed)
        s3_acknowledged(p, etag);
    put_unref(p);
}

static void complete_done(const s3_error *err, const char *etag, void *arg)
{
    node_put *p = arg;
    if (err->code)
        put_fail(p, s3_code_to_rcp(err->code), err->message);
    else if (!p->failed)
        s3_acknowledged(p, etag);
    put_unref(p);
}

static void maybe_complete(node_put *p)
{
    if (p->failed || p->completing || p->received != p->obj.size || p->parts_inflight ||
        p->n_queued || p->parts_ok != p->parts_total || !p->upload_id)
        return;
    p->completing = true;
    p->refs++;
    if (s3_mpu_complete(node__s3_for(p->w, p->tenant_ref), p->obj.bucket, p->obj.key, p->upload_id,
                        (const char *const *)p->etags, p->parts_total, complete_done, p) < 0) {
        p->refs--;
        put_fail(p, RCP_E_S3, "cannot complete the multipart upload");
    }
}

typedef struct {
    node_put *p;
    int number;
    uint8_t *data;
} part_op;

static void part_done(const s3_error *err, const char *etag, void *arg)
{
    part_op *op = arg;
    node_put *p = op->p;
    p->parts_inflight--;
    free(op->data);
    if (err->code) {
        put_fail(p, s3_code_to_rcp(err->code), err->message);
    } else if (!p->failed) {
        p->etags[op->number - 1] = strdup(etag ? etag : "");
        p->parts_ok++;
        if (p->parts_inflight < PUT_MAX_PARTS_INFLIGHT && p->r)
            node__conn_pause(p->c, false);
        maybe_complete(p);
    }
    free(op);
    put_unref(p);
}

static void send_part(node_put *p, uint8_t *data, size_t len)
{
    part_op *op = calloc(1, sizeof(*op));
    if (!op) {
        free(data);
        put_fail(p, RCP_E_INTERNAL, "out of memory");
        return;
    }
    op->p = p;
    op->number = ++p->parts_sent;
    op->data = data;
    p->parts_inflight++;
    p->refs++;
    if (s3_mpu_upload_part(node__s3_for(p->w, p->tenant_ref), p->obj.bucket, p->obj.key, p->upload_id, op->number,
                           data, len, part_done, op) < 0) {
        s3_error e = {0};
        e.code = -EIO;
        snprintf(e.message, sizeof(e.message), "cannot send part %d", op->number);
        part_done(&e, NULL, op);
    }
}

static void created(const s3_error *err, const char *upload_id, void *arg)
{
    node_put *p = arg;
    p->creating = false;
    if (err->code) {
        put_fail(p, s3_code_to_rcp(err->code), err->message);
    } else if (!p->failed) {
        p->upload_id = strdup(upload_id);
        for (int i = 0; i < p->n_queued; i++)
            send_part(p, p->queued[i], p->queued_len[i]);
        p->n_queued = 0;
        maybe_complete(p);
    } else {
        p->upload_id = strdup(upload_id);
        p->failed = false; /* let put_fail send the abort for this upload */
        put_fail(p, RCP_E_S3, "the upload was abandoned");
    }
    put_unref(p);
}

/* A part is full (or the last one): send it, or queue it until the upload id. */
static void part_full(node_put *p)
{
    uint8_t *data = p->part;
    size_t len = p->part_len;
    p->part = NULL;
    p->part_len = 0;
    if (!p->upload_id) {
        p->queued[p->n_queued] = data;
        p->queued_len[p->n_queued] = len;
        p->n_queued++; /* sent in order when the upload id arrives */
    } else {
        send_part(p, data, len);
    }
    if (p->parts_inflight + p->n_queued >= PUT_MAX_PARTS_INFLIGHT && p->r)
        node__conn_pause(p->c, true); /* back-pressure until a part is acknowledged */
}

/* ---- from the connection ------------------------------------------------------ */

int node__put_start(node_conn *c, node_req *r, const rcp_put_req *req)
{
    node_worker *w = node__conn_worker(c);
    node *n = w->n;
    node_put *p = calloc(1, sizeof(*p));
    if (!p) {
        node__answer_error(c, r->id, RCP_E_INTERNAL, "out of memory");
        return -ENOMEM;
    }
    p->r = r;
    p->c = c;
    p->w = w;
    p->id = r->id;
    p->refs = 1;
    p->obj.size = req->size;
    p->part_size = (uint64_t)n->conf.part_size;
    p->staging_fd = -1;
    /* the request's identity, checked when its head was parsed */
    p->obj = r->obj;
    p->obj.size = req->size;
    p->obj.version[0] = '\0';
    const ten_tenant *t = node__conn_tenant(c);
    snprintf(p->obj.tenant, sizeof(p->obj.tenant), "%s", t ? ten_name(t) : "");
    p->tenant_ref = t;
    char path[600];
    snprintf(path, sizeof(path), "%s/staging-XXXXXX", n->conf.data_dir);
    p->staging_fd = mkstemp(path);
    if (p->staging_fd >= 0)
        unlink(path); /* nothing is left behind by a crash */
    p->multipart = p->obj.size > p->part_size;
    if (p->multipart) {
        p->parts_total = (int)((p->obj.size + p->part_size - 1) / p->part_size);
        if (p->parts_total > 10000) {
            node__answer_error(c, r->id, RCP_E_TOO_LARGE,
                               "PUT of %llu bytes needs more than 10000 parts of %llu bytes "
                               "(raise --part-size)",
                               (unsigned long long)p->obj.size, (unsigned long long)p->part_size);
            free(p);
            return -EFBIG;
        }
        p->etags = calloc((size_t)p->parts_total, sizeof(char *));
        p->queued = calloc((size_t)p->parts_total, sizeof(uint8_t *));
        p->queued_len = calloc((size_t)p->parts_total, sizeof(size_t));
    }
    if (p->staging_fd < 0 || (p->multipart && (!p->etags || !p->queued || !p->queued_len))) {
        node__answer_error(c, r->id, RCP_E_INTERNAL, "cannot stage the PUT in %s: %s",
                           n->conf.data_dir, strerror(errno));
        if (p->staging_fd >= 0)
            close(p->staging_fd);
        free(p->etags);
        free(p->queued);
        free(p->queued_len);
        free(p);
        return -EIO;
    }
    r->put = p;
    if (p->multipart) {
        p->creating = true;
        p->refs++;
        if (s3_mpu_create(node__s3_for(w, t), p->obj.bucket, p->obj.key, created, p) < 0) {
            p->refs--;
            r->put = NULL;
            node__answer_error(c, r->id, RCP_E_S3, "cannot start the multipart upload");
            put_unref(p);
            return -EIO;
        }
    }
    return 0;
}

int node__put_data(node_conn *c, node_req *r, const uint8_t *data, size_t len, bool last)
{
    node_put *p = r->put;
    if (!p || p->failed)
        return 0;
    if (p->received + len > p->obj.size) {
        put_fail(p, RCP_E_BAD_REQUEST, "the PUT sent more bytes than it announced");
        return -EBADMSG;
    }
    if (len && pwrite(p->staging_fd, data, len, (off_t)p->received) != (ssize_t)len) {
        put_fail(p, RCP_E_INTERNAL, "cannot write the staging file (disk full?)");
        return -EIO;
    }
    size_t off = 0;
    while (off < len || (last && !p->multipart && !p->part)) {
        size_t cap = p->multipart ? (size_t)p->part_size : (size_t)p->obj.size;
        if (!p->part) {
            p->part = malloc(cap ? cap : 1);
            p->part_len = 0;
            if (!p->part) {
                put_fail(p, RCP_E_INTERNAL, "out of memory");
                return -ENOMEM;
            }
        }
        size_t k = len - off < cap - p->part_len ? len - off : cap - p->part_len;
        memcpy(p->part + p->part_len, data + off, k);
        p->part_len += k;
        off += k;
        p->received += k;
        if (p->multipart && p->part_len == cap)
            part_full(p);
        if (!len)
            break;
    }
    if (!last)
        return 0;
    if (p->received != p->obj.size) {
        put_fail(p, RCP_E_BAD_REQUEST, "the PUT ended before the size it announced");
        return -EBADMSG;
    }
    if (!p->multipart) {
        p->refs++;
        if (s3_put(node__s3_for(p->w, p->tenant_ref), p->obj.bucket, p->obj.key, p->part, p->part_len, single_done,
                   p) < 0) {
            p->refs--;
            put_fail(p, RCP_E_S3, "cannot send the PUT to S3");
        }
        return 0;
    }
    if (p->part_len)
        part_full(p);
    maybe_complete(p);
    return 0;
}

/* The request went away (connection closed, cancelled): stop. */
void node__put_abort(node_req *r)
{
    node_put *p = r->put;
    r->put = NULL;
    if (!p)
        return;
    p->r = NULL;
    p->answered = true;
    if (!p->done_s3 && !p->failed) {
        p->failed = true;
        if (p->upload_id) {
            p->refs++;
            if (s3_mpu_abort(node__s3_for(p->w, p->tenant_ref), p->obj.bucket, p->obj.key, p->upload_id,
                             abort_done, p) < 0)
                p->refs--;
        }
    }
    put_unref(p);
}
