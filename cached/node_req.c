/* SPDX-License-Identifier: Apache-2.0
 *
 * node_req.c: the life of a request on a cache node (node_req.h): whom it may
 * touch, what it names, where its bytes come from and where a write-through's
 * blocks go. The front end that framed the request hears only through its
 * sink.
 *
 *   GET        tenancy -> bounds -> admit -> store read --hit--> piece
 *                                                 |miss
 *                                                 v
 *                                   fill (node_fill.h: one S3 GET per block,
 *                                   whoever else waits) --mailbox--> piece
 *   HEAD       tenancy -> S3 HEAD -> answer
 *   WARM       tenancy -> S3 HEAD (the real size and version) -> fills
 *              for the blocks not stored, under half of --max-fills -> answer
 *   PUT        tenancy -> staging file + node_upload (S3) -> S3's ETag ->
 *              each block to its ring owner (the store here, or PUT_BLOCK to
 *              the owner) -> answer
 *   PUT_BLOCK  peer check -> tenancy -> bounds -> store write -> answer
 *
 * A request waiting for a fill is in its worker's table under its serial:
 * the fill's message (posted to the worker's mailbox from whichever thread
 * ran the fill) finds it there, or finds nothing when it was cancelled
 * meanwhile.
 */
#include "node_req.h"

#include "node_int.h"
#include "node_upload.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WAIT_BUCKETS       1024 /* the worker's table of requests waiting for a fill */
#define PLACE_MAX_INFLIGHT 8    /* blocks of one write-through being placed at once */

/* ---- pieces ---------------------------------------------------------------------- */

void node_piece_ref(const node_piece *p)
{
    if (p->bs)
        bs_buf_ref(p->bs);
    if (p->nb)
        node_buf_ref(p->nb);
}

void node_piece_unref(const node_piece *p)
{
    bs_buf *b = p->bs;
    bs_buf_unref(&b);
    node_buf_unref(p->nb);
}

/* ---- the table of waiting requests ------------------------------------------------ */

int node_reqs_setup(node_worker *w)
{
    w->waiting = calloc(WAIT_BUCKETS, sizeof(*w->waiting));
    return w->waiting ? 0 : -ENOMEM;
}

void node_reqs_teardown(node_worker *w)
{
    free(w->waiting);
    w->waiting = NULL;
}

static void wait_insert(node_req *r)
{
    node_req **b = &r->w->waiting[r->serial % WAIT_BUCKETS];
    r->wnext = *b;
    *b = r;
}

static void wait_remove(node_req *r)
{
    node_req **pp = &r->w->waiting[r->serial % WAIT_BUCKETS];
    while (*pp && *pp != r)
        pp = &(*pp)->wnext;
    if (*pp)
        *pp = r->wnext;
    r->wnext = NULL;
}

static node_req *wait_find(node_worker *w, uint64_t serial)
{
    if (!w->waiting)
        return NULL;
    node_req *r = w->waiting[serial % WAIT_BUCKETS];
    while (r && r->serial != serial)
        r = r->wnext;
    return r;
}

/* ---- the sink ---------------------------------------------------------------------- */

static void req_init(node_req *r, node_worker *w, const node_caller *who, const node_sink *sink)
{
    memset(r, 0, sizeof(*r));
    r->w = w;
    r->sink = *sink;
    r->who = *who;
    r->serial = ++w->next_req_serial;
}

/* The request is over: nothing of it is touched after done(). */
static void req_end(node_req *r)
{
    if (r->state == NR_FILL_WAIT)
        wait_remove(r);
    r->state = NR_IDLE;
    free(r->warm);
    r->warm = NULL;
    r->sink.ops->done(r->sink.arg);
}

static void req_answer(node_req *r, const node_answer *a)
{
    if (!r->cancelled)
        r->sink.ops->answer(r->sink.arg, a);
    req_end(r);
}

static void req_piece(node_req *r, const node_piece *p)
{
    if (!r->cancelled)
        r->sink.ops->piece(r->sink.arg, p);
    req_end(r);
}

/* Answer an error (code, sentence) and end the request. */
__attribute__((format(printf, 3, 4))) static void req_fail(node_req *r, int code, const char *fmt,
                                                           ...)
{
    if (!r->cancelled) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (code == RCP_E_FORBIDDEN)
            node__count(r->w, NM_FORBIDDEN, 1);
        r->sink.ops->error(r->sink.arg, code, msg);
    }
    req_end(r);
}

/* An S3 failure's code on the wire: a write's condition that did not hold
 * (S3's 412) is the version the writer named not being there. */
static int s3_code(int err)
{
    return err == -ENOENT                     ? RCP_E_NOT_FOUND
           : err == -EACCES                   ? RCP_E_FORBIDDEN
           : err == -EEXIST || err == -ESTALE ? RCP_E_VERSION_CHANGED
                                              : RCP_E_S3;
}

void node__upstream_message(const node *n, const char *s3_message, char *out, size_t cap)
{
    /* the S3 client's last hint speaks to a client's environment
     * ("; is the S3 endpoint up? (set AWS_ENDPOINT_URL)"): not this node's */
    char m[512];
    snprintf(m, sizeof(m), "%s", s3_message);
    char *semi = strrchr(m, ';'), *colon = strstr(m, ": check ");
    char *hint = semi && (!colon || semi > colon) ? semi : colon;
    if (hint && strstr(hint, "AWS_"))
        *hint = '\0';
    snprintf(out, cap,
             "cache node %s's S3 access failed (check its --s3-endpoint and "
             "credentials): %s",
             n->conf.node_id, m);
}

/* The tenant's access check, at every entry a key comes in by: false after
 * answering FORBIDDEN. With tenants, a key must also pass s3_key_check (no
 * dot segments, however spelled): a prefix check of "src/../x" would let a
 * tenant of "src/" read "x" behind a server that resolves dots. */
static bool access_ok(node_req *r, const char *verb, const char *bucket, const char *key)
{
    if (!r->w->n->tenants)
        return true;
    char why[300];
    if (s3_key_check(key, strlen(key), why, sizeof(why)) < 0) {
        req_fail(r, RCP_E_FORBIDDEN, "s3://%s/%s: %s", bucket, key, why);
        return false;
    }
    const ten_tenant *t = r->who.tenant;
    if (r->who.peer || (t && ten_allows(t, bucket, strlen(bucket), key, strlen(key))))
        return true;
    req_fail(r, RCP_E_FORBIDDEN, "tenant %s may not %s s3://%s/%s (outside its buckets/prefixes)",
             t ? ten_name(t) : "", verb, bucket, key);
    return false;
}

/* The object as the caller names it: its tenant is the caller's. */
static void req_object(node_req *r, const bkey_object *obj)
{
    r->obj = *obj;
    const ten_tenant *t = r->who.tenant;
    snprintf(r->obj.tenant, sizeof(r->obj.tenant), "%s", t ? ten_name(t) : "");
}

/* ---- GET ----------------------------------------------------------------------------- */

static void get_from_fill(node_req *r);

static void store_read_done(void *arg, int rc, bs_buf *buf)
{
    node_req *r = arg;
    if (r->cancelled) {
        bs_buf_unref(&buf);
        req_end(r);
        return;
    }
    if (rc >= 0) {
        node__count(r->w, NM_HITS, 1);
        node_piece p = {bs_buf_data(buf), (size_t)rc, RCP_SRC_SSD, buf, NULL};
        req_piece(r, &p);
        bs_buf_unref(&buf);
        return;
    }
    if (!r->reread)
        node__count(r->w, NM_MISSES, 1);
    if (r->flags & RCP_GET_CACHE_ONLY) {
        req_fail(r, RCP_E_NOT_CACHED, "s3://%s/%s block %llu is not cached here", r->obj.bucket,
                 r->obj.key, (unsigned long long)r->block);
        return;
    }
    get_from_fill(r);
}

static void get_from_fill(node_req *r)
{
    bkey_id id;
    bkey_object_block(&r->obj, r->block, &id);
    node_fill_args fa = {r->who.tenant, &id,    r->block_len, r->serial,
                         r->off,        r->len, r->reread,    r->run};
    /* in the table before the join: the fill may answer from its buffer at once */
    r->state = NR_FILL_WAIT;
    wait_insert(r);
    int rc = node_fill_join(r->w, &fa, &r->fill);
    if (rc == 0)
        return; /* the answer comes through the mailbox (node_req_deliver) */
    wait_remove(r);
    r->state = NR_IDLE;
    if (rc == -EAGAIN) {
        /* a fill finished meanwhile: the store has it now (asked once more) */
        r->reread = true;
        r->state = NR_STORE_READ;
        rc = bs_read(r->w->bs, &id, r->off, r->len, store_read_done, r);
        if (rc < 0)
            store_read_done(r, rc, NULL);
    } else if (rc == -EBUSY) {
        req_fail(r, RCP_E_BUSY,
                 "s3://%s/%s block %llu: this node has %lld fills from S3 in flight "
                 "(--max-fills): read it from S3 or try again",
                 r->obj.bucket, r->obj.key, (unsigned long long)r->block,
                 (long long)r->w->n->conf.max_fills);
    } else {
        req_fail(r, RCP_E_INTERNAL, "cannot start a fill: %s", strerror(-rc));
    }
}

void node_req_deliver(node_worker *w, node_msg *m)
{
    node_req *r = wait_find(w, m->req_serial);
    if (r && r->state == NR_FILL_WAIT) {
        r->fill = NULL;
        if (m->buf) {
            uint32_t len = m->len ? m->len : (uint32_t)(m->buf->len - m->off);
            node_piece p = {m->buf->data + m->off, len, m->source ? m->source : RCP_SRC_S3, NULL,
                            m->buf};
            req_piece(r, &p);
        } else {
            req_fail(r, m->rcp_code ? m->rcp_code : RCP_E_INTERNAL, "%s", m->message);
        }
    }
    node_buf_unref(m->buf);
    free(m);
}

static void req_get(node_req *r, node_worker *w, const node_caller *who, const bkey_object *obj,
                    uint64_t block, uint32_t off, uint32_t len, uint32_t flags, uint32_t run,
                    const node_sink *sink)
{
    req_init(r, w, who, sink);
    r->run = run;
    node__count(w, NM_GET, 1);
    req_object(r, obj);
    if (!access_ok(r, "read", r->obj.bucket, r->obj.key))
        return;
    uint64_t bsz = (uint64_t)w->n->conf.block_size;
    uint64_t blen = bkey_block_len(r->obj.size, bsz, block);
    if (blen == 0 || off >= blen || (uint64_t)off + len > blen) {
        req_fail(r, RCP_E_BAD_REQUEST,
                 "GET s3://%s/%s: block %llu range %u+%u is outside the object of %llu bytes in "
                 "%llu-byte blocks",
                 r->obj.bucket, r->obj.key, (unsigned long long)block, off, len,
                 (unsigned long long)r->obj.size, (unsigned long long)bsz);
        return;
    }
    r->block = block;
    r->off = off;
    r->len = len ? len : (uint32_t)(blen - off);
    r->flags = flags;
    r->block_len = (uint32_t)blen;
    /* the answer's bytes count against the front end's buffer from now on: a
     * store read's or a fill's buffer is memory as much as a queued answer */
    if (r->sink.ops->admit)
        r->sink.ops->admit(r->sink.arg, r->len);
    bkey_id bid;
    bkey_object_block(&r->obj, r->block, &bid);
    r->state = NR_STORE_READ;
    int rc = bs_read(w->bs, &bid, r->off, r->len, store_read_done, r);
    if (rc < 0) /* the store refused the read: treat it as a miss */
        store_read_done(r, rc, NULL);
}

void node_req_get(node_req *r, node_worker *w, const node_caller *who, const bkey_object *obj,
                  uint64_t block, uint32_t off, uint32_t len, uint32_t flags, const node_sink *sink)
{
    req_get(r, w, who, obj, block, off, len, flags, 0, sink);
}

void node_req_get_run(node_req *r, node_worker *w, const node_caller *who, const bkey_object *obj,
                      uint64_t block, uint32_t off, uint32_t len, uint32_t run,
                      const node_sink *sink)
{
    req_get(r, w, who, obj, block, off, len, 0, run, sink);
}

/* ---- HEAD ----------------------------------------------------------------------------- */

static void head_done(const s3_error *err, const s3_object_info *info, void *arg)
{
    node_req *r = arg;
    if (r->cancelled) {
        req_end(r);
    } else if (err->code == -ENOENT) {
        node__count(r->w, NM_S3_ERRORS, 1);
        req_fail(r, RCP_E_NOT_FOUND, "%s", err->message);
    } else if (err->code) {
        node__count(r->w, NM_S3_ERRORS, 1);
        char m[640];
        node__upstream_message(r->w->n, err->message, m, sizeof(m));
        req_fail(r, RCP_E_UPSTREAM, "%s", m);
    } else {
        node_answer a = {
            .size = info->size, .etag = info->etag, .last_modified = info->last_modified};
        req_answer(r, &a);
    }
}

void node_req_head(node_req *r, node_worker *w, const node_caller *who, const char *bucket,
                   const char *key, const node_sink *sink)
{
    req_init(r, w, who, sink);
    if (bkey_object_init(&r->obj, "", bucket, key, "", 0) < 0) {
        req_fail(r, RCP_E_BAD_REQUEST, "HEAD: the bucket or the key is too long");
        return;
    }
    if (!access_ok(r, "read", r->obj.bucket, r->obj.key))
        return;
    r->state = NR_S3;
    int rc = s3_head(node__s3_for(w, who->tenant), r->obj.bucket, r->obj.key, head_done, r);
    if (rc < 0) {
        r->state = NR_IDLE;
        req_fail(r, RCP_E_S3, "HEAD s3://%s/%s: %s", r->obj.bucket, r->obj.key, strerror(-rc));
    }
}

/* ---- PUT_BLOCK, DROP ----------------------------------------------------------------------- */

/* PUT_BLOCK and DROP act on any object's identity: only cache nodes may send
 * them. With a peer token, that is whoever said it in HELLO; with tenants but
 * no token, nobody; on an open node, this host only. false after answering
 * FORBIDDEN. */
static bool peer_ok(node_req *r, const char *op)
{
    node *n = r->w->n;
    const node_caller *who = &r->who;
    if (n->conf.peer_token[0] ? who->peer : (!n->tenants && who->loopback))
        return true;
    req_fail(r, RCP_E_FORBIDDEN,
             n->conf.peer_token[0] ? "%s is for cache nodes: connect with the peer token"
             : n->tenants          ? "%s is for cache nodes: give every node the same --peer-token"
                          : "%s from another host needs the peer token: give every node the "
                            "same --peer-token",
             op);
    return false;
}

static void store_block_done(void *arg, int rc)
{
    node_req *r = arg;
    if (r->cancelled) {
        req_end(r);
    } else if (rc < 0) {
        req_fail(r, RCP_E_INTERNAL, "the block could not be stored: %s", strerror(-rc));
    } else {
        node__count(r->w, NM_PUT_BLOCKS_RECEIVED, 1);
        node_answer a = {0};
        req_answer(r, &a);
    }
}

void node_req_store_block(node_req *r, node_worker *w, const node_caller *who,
                          const bkey_object *obj, uint64_t block, const void *data, size_t len,
                          const node_sink *sink)
{
    req_init(r, w, who, sink);
    node *n = w->n;
    if (!peer_ok(r, "PUT_BLOCK"))
        return;
    r->obj = *obj; /* the tenant is the one the peer names */
    if (!access_ok(r, "write", r->obj.bucket, r->obj.key))
        return;
    uint64_t blen = bkey_block_len(r->obj.size, (uint64_t)n->conf.block_size, block);
    if (blen == 0 || blen != len) {
        req_fail(r, RCP_E_BAD_REQUEST,
                 "PUT_BLOCK: block %llu of a %llu-byte object is %llu bytes, not %zu",
                 (unsigned long long)block, (unsigned long long)r->obj.size,
                 (unsigned long long)blen, len);
        return;
    }
    bkey_id bid;
    bkey_object_block(&r->obj, block, &bid);
    r->state = NR_STORE_WRITE;
    int rc = bs_write(w->bs, &bid, data, len, store_block_done, r);
    if (rc < 0)
        store_block_done(r, rc);
}

uint64_t node__drop_object(node_worker *w, const bkey_object *obj)
{
    uint64_t n_blocks = bkey_block_count(obj->size, (uint64_t)w->n->conf.block_size), dropped = 0;
    for (uint64_t i = 0; i < n_blocks; i++) {
        bkey_id id;
        bkey_object_block(obj, i, &id);
        dropped += bs_remove(w->n->store, &id) == 0;
    }
    return dropped;
}

void node_req_drop(node_req *r, node_worker *w, const node_caller *who, const bkey_object *obj,
                   const node_sink *sink)
{
    req_init(r, w, who, sink);
    if (!peer_ok(r, "DROP"))
        return;
    r->obj = *obj; /* the tenant is the one the peer names */
    node__drop_object(w, &r->obj);
    node_answer a = {0};
    req_answer(r, &a);
}

/* ---- WARM ------------------------------------------------------------------------------- */

/* The object's real size and version come from a HEAD first (a WARM naming a
 * made-up 64 GiB version starts nothing), then one fill per block not stored
 * yet, while the node has room (WARM takes at most half of --max-fills, so
 * GETs always find some). */
static void warm_head_done(const s3_error *err, const s3_object_info *info, void *arg)
{
    node_req *r = arg;
    node *n = r->w->n;
    if (r->cancelled) {
        req_end(r);
        return;
    }
    if (err->code) {
        node__count(r->w, NM_S3_ERRORS, 1);
        req_fail(r, s3_code(err->code), "WARM: %s", err->message);
        return;
    }
    if (info->size != r->obj.size ||
        (r->obj.version[0] && strcmp(info->etag, r->obj.version) != 0)) {
        node__count(r->w, NM_VERSION_CHANGED, 1);
        req_fail(r, RCP_E_VERSION_CHANGED,
                 "WARM: s3://%s/%s is %llu bytes with version %s, not the %llu bytes of version "
                 "%s the request named",
                 r->obj.bucket, r->obj.key, (unsigned long long)info->size, info->etag,
                 (unsigned long long)r->obj.size, r->obj.version[0] ? r->obj.version : "(any)");
        return;
    }
    uint32_t queued = 0;
    size_t budget = (size_t)n->conf.max_fills / 2;
    for (uint32_t i = 0; i < r->n_warm; i++) {
        uint64_t blen = bkey_block_len(info->size, (uint64_t)n->conf.block_size, r->warm[i]);
        if (!blen)
            continue;
        bkey_id bid;
        bkey_object_block(&r->obj, r->warm[i], &bid);
        if (bs_contains(n->store, &bid))
            continue;
        if (node_fill_active(n->fills) >= budget)
            break; /* the rest is left for a later WARM, or the first GET */
        node_fill_args fa = {r->who.tenant, &bid, (uint32_t)blen, 0, 0, 0, false, 0};
        node_fill *f;
        if (node_fill_join(r->w, &fa, &f) == 0)
            queued++;
    }
    node_answer a = {.queued = queued};
    req_answer(r, &a);
}

void node_req_warm(node_req *r, node_worker *w, const node_caller *who, const bkey_object *obj,
                   uint32_t n_blocks, node_block_at_fn block_at, const void *src,
                   const node_sink *sink)
{
    req_init(r, w, who, sink);
    node *n = w->n;
    node__count(w, NM_WARM_BLOCKS, n_blocks);
    if (n_blocks > (uint32_t)n->conf.max_warm_blocks) {
        req_fail(r, RCP_E_TOO_LARGE,
                 "WARM names %u blocks, over this node's %lld (--max-warm-blocks): send them in "
                 "several requests",
                 n_blocks, (long long)n->conf.max_warm_blocks);
        return;
    }
    req_object(r, obj);
    if (!access_ok(r, "read", r->obj.bucket, r->obj.key))
        return;
    r->warm = malloc((n_blocks ? n_blocks : 1) * sizeof(uint64_t));
    if (!r->warm) {
        req_fail(r, RCP_E_INTERNAL, "out of memory");
        return;
    }
    r->n_warm = n_blocks;
    for (uint32_t i = 0; i < n_blocks; i++)
        r->warm[i] = block_at(src, i);
    r->state = NR_S3;
    int rc = s3_head(node__s3_for(w, who->tenant), r->obj.bucket, r->obj.key, warm_head_done, r);
    if (rc < 0) {
        r->state = NR_IDLE;
        req_fail(r, RCP_E_S3, "WARM: cannot ask S3 for s3://%s/%s: %s", r->obj.bucket, r->obj.key,
                 strerror(-rc));
    }
}

/* ---- PUT: write-through ------------------------------------------------------------------ */

/* A PUT's data streams into S3 (node_upload.h) and, at the same time, into
 * an unlinked staging file in the data folder (so nothing is left behind by
 * a crash). Only after S3 has acknowledged, and returned the new version
 * (ETag), is each block read back from staging and sent to its owner on the
 * ring: indexed here when this node owns it, else by PUT_BLOCK to the owner.
 * The PUT is answered when every block has been placed. If S3 fails, the
 * client gets S3's error and nothing is cached; a block that cannot be placed
 * is logged and counted (S3 has the object; the cache is only missing it). */
struct node_put {
    node_req *r; /* NULL once the request is gone */
    node_worker *w;
    int refs;        /* the request's, the upload's, one per block being placed */
    bkey_object obj; /* version: S3's ETag, once it has answered */
    int staging_fd;  /* -1: the blocks come from read (node_req_place) */
    node_place_read_fn read;
    void (*read_release)(void *arg);
    void *read_arg;
    node_upload *up; /* until it is done, or given up */
    uint64_t received;
    bool paused; /* the front end was asked to stop sending */
    char etag[S3_ETAG_MAX];
    uint64_t next_block, blocks, blocks_inflight, blocks_done;
};

/* Drops n references at once. */
static void put_release(node_put *p, int n)
{
    p->refs -= n;
    if (n == 0 || p->refs > 0)
        return;
    if (p->staging_fd >= 0)
        close(p->staging_fd);
    if (p->read_release)
        p->read_release(p->read_arg);
    free(p);
}

/* The request leaves the write-through (answered, or gone). Its done() ends
 * a pause it asked for: no pause(false) here, whose front end could read
 * (and act on) more of its client's frames in the middle of this. */
static node_req *put_detach(node_put *p)
{
    node_req *r = p->r;
    p->r = NULL;
    if (r)
        r->put = NULL;
    p->paused = false;
    return r;
}

static void put_fail(node_put *p, int code, const char *msg)
{
    node_log(NODE_LOG_WARN, "msg=\"write-through failed\" bucket=%s key=\"%s\" err=\"%s\"",
             p->obj.bucket, p->obj.key, msg);
    node__count(p->w, NM_S3_ERRORS, 1);
    node_upload *up = p->up;
    p->up = NULL;
    node_req *r = put_detach(p);
    if (up)
        node_upload_abort(up);
    if (r)
        req_fail(r, code, "%s", msg);
    put_release(p, (up != NULL) + (r != NULL)); /* the upload's, the request's */
}

static void put_finish(node_put *p)
{
    node__count(p->w, NM_PUTS, 1);
    node__count(p->w, NM_PUT_BYTES, p->obj.size);
    node_req *r = put_detach(p);
    if (r) {
        node_answer a = {.size = p->obj.size, .etag = p->etag};
        req_answer(r, &a);
        put_release(p, 1); /* the request's */
    }
}

static void put_pause(void *arg, bool pause)
{
    node_put *p = arg;
    node_req *r = p->r;
    if (!r || r->cancelled || !r->sink.ops->pause || p->paused == pause)
        return;
    p->paused = pause;
    r->sink.ops->pause(r->sink.arg, pause);
}

static void place_next(node_put *p);

typedef struct place_op {
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
    put_release(p, 1);
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

cc_conn *node__peer_conn(node_worker *w, const struct ring *ring, const struct ring_member *m)
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
        cc_config cc = {host,
                        atoi(colon + 1),
                        w->n->conf.peer_token,
                        (uint32_t)w->n->conf.block_size,
                        w->n->conf.node_id,
                        2000,
                        30000,
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
    while (p->blocks_inflight < PLACE_MAX_INFLIGHT && p->next_block < p->blocks) {
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
        int got = p->read ? p->read(p->read_arg, i, buf->data, len)
                  : pread(p->staging_fd, buf->data, len, (off_t)(i * bsz)) == (ssize_t)len ? 0
                                                                                           : -EIO;
        if (got < 0) {
            if (got != -ENOENT) /* -ENOENT: the reader does not have it (left to fills) */
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
            rc = p->w->bs ? bs_write(p->w->bs, &id, buf->data, len, local_written, op) : -ESHUTDOWN;
            if (rc < 0)
                local_written(op, rc);
        } else {
            cc_conn *pc = node__peer_conn(p->w, ring, owner);
            rcp_put_block_req pb = {
                rcp_s(p->obj.tenant),
                {rcp_s(p->obj.bucket), rcp_s(p->obj.key), rcp_s(p->obj.version), p->obj.size},
                i,
                buf->data,
                (uint32_t)len};
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

static void put_uploaded(void *arg, const s3_error *err, const char *etag)
{
    node_put *p = arg;
    p->up = NULL; /* it frees itself */
    if (err->code) {
        put_fail(p, err->code == -ENOMEM ? RCP_E_INTERNAL : s3_code(err->code), err->message);
    } else {
        snprintf(p->etag, sizeof(p->etag), "%s", etag ? etag : "");
        p->blocks = bkey_block_count(p->obj.size, (uint64_t)p->w->n->conf.block_size);
        /* a version longer than a block identity holds cannot be asked for: S3
         * has the object, the cache just does not keep it */
        if (p->blocks == 0 || !p->etag[0] ||
            bkey_field_set(p->obj.version, sizeof(p->obj.version), p->etag, strlen(p->etag)) < 0)
            put_finish(p);
        else
            place_next(p);
    }
    put_release(p, 1); /* the upload's reference */
}

void node_req_put(node_req *r, node_worker *w, const node_caller *who, const bkey_object *obj,
                  const node_sink *sink)
{
    node_req_put_cond(r, w, who, obj, NULL, sink);
}

void node_req_put_cond(node_req *r, node_worker *w, const node_caller *who, const bkey_object *obj,
                       const s3_write_cond *cond, const node_sink *sink)
{
    req_init(r, w, who, sink);
    node *n = w->n;
    req_object(r, obj);
    r->obj.version[0] = '\0';
    if (!access_ok(r, "write", r->obj.bucket, r->obj.key))
        return;
    node_put *p = calloc(1, sizeof(*p));
    if (!p) {
        req_fail(r, RCP_E_INTERNAL, "out of memory");
        return;
    }
    p->w = w;
    p->obj = r->obj;
    p->refs = 1; /* the request's */
    char path[600];
    snprintf(path, sizeof(path), "%s/staging-XXXXXX", n->conf.data_dir);
    p->staging_fd = mkstemp(path);
    if (p->staging_fd < 0) {
        req_fail(r, RCP_E_INTERNAL, "cannot stage the PUT in %s: %s", n->conf.data_dir,
                 strerror(errno));
        put_release(p, 1);
        return;
    }
    unlink(path); /* nothing is left behind by a crash */
    char why[512];
    int rc = node_upload_start(&p->up, node__s3_for(w, who->tenant), p->obj.bucket, p->obj.key,
                               p->obj.size, (uint64_t)n->conf.part_size, cond, put_pause,
                               put_uploaded, p, why, sizeof(why));
    if (rc < 0) {
        req_fail(r,
                 rc == -EFBIG    ? RCP_E_TOO_LARGE
                 : rc == -ENOMEM ? RCP_E_INTERNAL
                 : rc == -EINVAL ? RCP_E_BAD_REQUEST
                                 : RCP_E_S3,
                 "%s", why);
        put_release(p, 1);
        return;
    }
    p->refs++; /* the upload's, until it is done */
    p->r = r;
    r->put = p;
    r->state = NR_PUT;
}

void node_req_put_data(node_req *r, const uint8_t *data, size_t len, bool last)
{
    node_put *p = r->put;
    if (!p || !p->up)
        return; /* answered, or S3 has it all already */
    if (p->received + len > p->obj.size) {
        put_fail(p, RCP_E_BAD_REQUEST, "the PUT sent more bytes than it announced");
        return;
    }
    if (len && pwrite(p->staging_fd, data, len, (off_t)p->received) != (ssize_t)len) {
        put_fail(p, RCP_E_INTERNAL, "cannot write the staging file (disk full?)");
        return;
    }
    p->received += len;
    if (last && p->received != p->obj.size) {
        put_fail(p, RCP_E_BAD_REQUEST, "the PUT ended before the size it announced");
        return;
    }
    node_upload_write(p->up, data, len, last); /* its failure comes back as put_uploaded */
}

void node_req_place(node_req *r, node_worker *w, const node_caller *who, const bkey_object *obj,
                    node_place_read_fn read, void (*release)(void *arg), void *arg,
                    const node_sink *sink)
{
    req_init(r, w, who, sink);
    req_object(r, obj);
    node_put *p = calloc(1, sizeof(*p));
    if (!p || !access_ok(r, "write", r->obj.bucket, r->obj.key)) {
        if (release)
            release(arg);
        if (!p)
            req_fail(r, RCP_E_INTERNAL, "out of memory");
        free(p);
        return;
    }
    p->w = w;
    p->obj = r->obj;
    p->refs = 1; /* the request's */
    p->staging_fd = -1;
    p->read = read;
    p->read_release = release;
    p->read_arg = arg;
    snprintf(p->etag, sizeof(p->etag), "%s", r->obj.version);
    p->blocks =
        r->obj.version[0] ? bkey_block_count(p->obj.size, (uint64_t)w->n->conf.block_size) : 0;
    p->r = r;
    r->put = p;
    r->state = NR_PUT;
    if (p->blocks == 0)
        put_finish(p);
    else
        place_next(p);
}

/* ---- cancelling ---------------------------------------------------------------------------- */

void node_req_cancel(node_req *r)
{
    if (r->cancelled)
        return;
    r->cancelled = true;
    switch (r->state) {
    case NR_FILL_WAIT:
        if (r->fill)
            node_fill_leave(r->w->n->fills, r->fill, r->w->idx, r->serial);
        req_end(r);
        break;
    case NR_PUT: {
        node_put *p = r->put;
        if (p) {
            node_upload *up = p->up; /* S3 has not acknowledged: nothing of it is kept */
            p->up = NULL;
            put_detach(p); /* blocks already being placed go on */
            if (up)
                node_upload_abort(up);
            put_release(p, (up != NULL) + 1); /* the upload's, the request's */
        }
        req_end(r);
        break;
    }
    case NR_IDLE: req_end(r); break;
    default: break; /* a store read, an S3 call or a write ends later, and the request then */
    }
}
