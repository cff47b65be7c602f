/* SPDX-License-Identifier: Apache-2.0
 *
 * node_conn.c: one client connection of ringcached: reading frames (proto.h),
 * checking them, dispatching them, and sending answers. Answers wait in a send
 * queue and go out one chunk at a time, round robin, only while the socket's
 * output buffer is below two chunks, so a large block never holds up a small
 * one and memory per connection stays bounded: the node stops reading a
 * connection that has max-outstanding requests in flight or max-buffered bytes
 * of answers queued or admitted (back-pressure: a GET's bytes count from the
 * moment it is admitted, while the store reads or S3 fills them), and data is sent by reference from the
 * store's or the fill's buffer, never copied.
 */
#include "node_int.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct node_send node_send;
struct node_send {
    node_send *next;
    uint32_t id;
    uint8_t op;
    uint8_t head[RCP_GET_RESP_HEAD_SIZE];
    size_t head_len;
    const uint8_t *p;
    size_t len, off;
    bs_buf *bs;                  /* the send's own reference, or NULL */
    node_buf *nb;
    uint64_t t0_us;              /* for the latency histogram (0: none) */
};

struct node_conn {
    node_worker *w;
    node_conn *prev, *next;
    uint64_t serial;
    struct bufferevent *bev;
    int refs;                    /* 1 while open + async operations holding it */
    bool closed, close_after_flush, hello, peer, paused;
    bool put_hold;               /* a write-through PUT asked to stop reading */
    bool loopback;               /* the client is on this host */
    int64_t last_ms;             /* last byte read or written (idle timeout) */
    int64_t wait_since_ms;       /* waiting for the rest of a frame since (0: not) */
    const ten_tenant *tenant;
    char tenant_name[257];
    node_req *reqs;
    size_t n_reqs;
    node_send *sq_head, *sq_tail;
    size_t sq_bytes;
    size_t reserved;             /* answers admitted and not queued yet (reads, fills) */
    uint32_t max_body;
};

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int64_t now_ms(void) { return (int64_t)(now_us() / 1000u); }

node_worker *node__conn_worker(node_conn *c) { return c->w; }
const ten_tenant *node__conn_tenant(node_conn *c) { return c->tenant; }

static void conn_unref(node_conn *c);
static void conn_close(node_conn *c);
static void conn_pump(node_conn *c);
static void conn_process(node_conn *c);

/* ---- requests ------------------------------------------------------------- */

static node_req *req_new(node_conn *c, uint32_t id, uint8_t op)
{
    node_req *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->c = c;
    r->id = id;
    r->op = op;
    r->t0_us = now_us();
    r->next = c->reqs;
    if (c->reqs)
        c->reqs->prev = r;
    c->reqs = r;
    c->n_reqs++;
    c->refs++;
    return r;
}

static node_req *req_find(node_conn *c, uint32_t id)
{
    for (node_req *r = c->reqs; r; r = r->next)
        if (r->id == id && !r->cancelled)
            return r;
    return NULL;
}

/* The request is answered (or abandoned): unlink and free it. */
void node__req_done(node_req *r)
{
    node_conn *c = r->c;
    if (r->prev)
        r->prev->next = r->next;
    else if (c->reqs == r)
        c->reqs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    c->n_reqs--;
    c->reserved -= r->reserved;
    free(r->warm);
    if (r->put)
        node__put_abort(r);
    free(r);
    if (!c->closed && c->paused)
        conn_process(c); /* room for more requests */
    conn_unref(c);
}

/* ---- answers ---------------------------------------------------------------- */

static void write_header(node_conn *c, uint8_t op, uint16_t flags, uint32_t id, size_t len)
{
    uint8_t h[RCP_HEADER_SIZE];
    rcp_header hd = {op, (uint16_t)(flags | RCP_F_RESPONSE), id, (uint32_t)len};
    rcp_header_encode(&hd, h);
    evbuffer_add(bufferevent_get_output(c->bev), h, sizeof(h));
}

void node__answer_body(node_conn *c, uint8_t op, uint32_t id, const void *body, size_t len)
{
    if (c->closed)
        return;
    write_header(c, op, 0, id, len);
    if (len)
        evbuffer_add(bufferevent_get_output(c->bev), body, len);
}

void node__answer_error(node_conn *c, uint32_t id, int code, const char *fmt, ...)
{
    if (c->closed)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    uint8_t body[1100];
    rcp_error e = {(uint16_t)code, rcp_s(msg)};
    int n = rcp_encode_error(&e, body, sizeof(body));
    if (n < 0)
        return;
    node__answer_body(c, RCP_OP_ERROR, id, body, (size_t)n);
    node__count(c->w, NM_ERRORS_SENT, 1);
    if (code == RCP_E_FORBIDDEN || code == RCP_E_UNAUTHORIZED)
        node__count(c->w, NM_FORBIDDEN, 1);
}

static void chunk_unref_bs(const void *data, size_t len, void *extra)
{
    (void)data;
    (void)len;
    bs_buf *b = extra;
    bs_buf_unref(&b);
}

static void chunk_unref_nb(const void *data, size_t len, void *extra)
{
    (void)data;
    (void)len;
    node_buf_unref(extra);
}

static void send_free(node_send *s)
{
    bs_buf_unref(&s->bs);
    node_buf_unref(s->nb);
    free(s);
}

/* Queue the data answer of a GET: head + [p, p+len) of bs or nb (the send
 * takes its own reference). */
static void answer_data(node_req *r, uint8_t source, const uint8_t *p, size_t len, bs_buf *bs,
                        node_buf *nb)
{
    node_conn *c = r->c;
    node_send *s = calloc(1, sizeof(*s));
    if (!s) {
        node__answer_error(c, r->id, RCP_E_INTERNAL, "out of memory");
        node__req_done(r);
        return;
    }
    s->id = r->id;
    s->op = RCP_OP_GET;
    rcp_get_resp_head gh = {(uint32_t)len, source};
    s->head_len = (size_t)rcp_encode_get_resp_head(&gh, s->head, sizeof(s->head));
    s->p = p;
    s->len = len;
    if (bs) {
        bs_buf_ref(bs);
        s->bs = bs;
    }
    if (nb) {
        node_buf_ref(nb);
        s->nb = nb;
    }
    s->t0_us = r->t0_us;
    if (c->sq_tail)
        c->sq_tail->next = s;
    else
        c->sq_head = s;
    c->sq_tail = s;
    c->sq_bytes += len;
    node__count(c->w, NM_BYTES_SERVED, len);
    node__req_done(r); /* the request is answered; the send queue owns the bytes */
    conn_pump(c);
}

/* Move chunks from the send queue to the socket while it holds less than four
 * chunks: enough for large writes, little enough to interleave answers. */
static void conn_pump(node_conn *c)
{
    if (c->closed)
        return;
    node *n = c->w->n;
    size_t chunk = (size_t)n->conf.chunk_size;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    while (c->sq_head && evbuffer_get_length(out) < 4 * chunk) {
        node_send *s = c->sq_head;
        c->sq_head = s->next;
        if (!c->sq_head)
            c->sq_tail = NULL;
        s->next = NULL;
        size_t k = s->len - s->off < chunk ? s->len - s->off : chunk;
        bool more = s->off + k < s->len;
        size_t head = s->off == 0 ? s->head_len : 0;
        write_header(c, s->op, more ? RCP_F_MORE : 0, s->id, head + k);
        if (head)
            evbuffer_add(out, s->head, head);
        if (k) {
            if (s->bs) {
                bs_buf_ref(s->bs);
                evbuffer_add_reference(out, s->p + s->off, k, chunk_unref_bs, s->bs);
            } else if (s->nb) {
                node_buf_ref(s->nb);
                evbuffer_add_reference(out, s->p + s->off, k, chunk_unref_nb, s->nb);
            } else {
                evbuffer_add(out, s->p + s->off, k);
            }
        }
        s->off += k;
        c->sq_bytes -= k;
        if (more) {
            if (c->sq_tail)
                c->sq_tail->next = s;
            else
                c->sq_head = s;
            c->sq_tail = s;
        } else {
            if (s->t0_us)
                node__latency(c->w, now_us() - s->t0_us);
            send_free(s);
        }
    }
}

/* ---- GET -------------------------------------------------------------------- */

static void get_from_fill(node_req *r);

static void store_read_done(void *arg, int rc, bs_buf *buf)
{
    node_req *r = arg;
    node_conn *c = r->c;
    if (r->cancelled || c->closed) {
        bs_buf_unref(&buf);
        node__req_done(r);
        return;
    }
    if (rc >= 0) {
        node__count(c->w, NM_HITS, 1);
        answer_data(r, RCP_SRC_SSD, bs_buf_data(buf), (size_t)rc, buf, NULL);
        bs_buf_unref(&buf);
        return;
    }
    if (!r->reread)
        node__count(c->w, NM_MISSES, 1);
    if (r->flags & RCP_GET_CACHE_ONLY) {
        node__answer_error(c, r->id, RCP_E_NOT_CACHED, "s3://%s/%s block %llu is not cached here",
                           r->bucket, r->key, (unsigned long long)r->block);
        node__req_done(r);
        return;
    }
    get_from_fill(r);
}

static void req_identity(node_req *r, bkey_id *id)
{
    bkey_id_init(id, r->c->tenant_name, r->bucket, r->key, r->version, r->size, r->block);
}

static void get_from_fill(node_req *r)
{
    node_conn *c = r->c;
    bkey_id id;
    req_identity(r, &id);
    node_fill_args fa = {c->tenant, &id, r->block_len, c->serial, r->id, r->off, r->len,
                         r->reread};
    r->state = R_FILL_WAIT;
    int rc = node__fill_join(c->w, &fa, &r->fill);
    if (rc == -EAGAIN) {
        /* a fill finished meanwhile: the store has it now (asked once more) */
        r->reread = true;
        r->state = R_STORE_READ;
        rc = bs_read(c->w->bs, &id, r->off, r->len, store_read_done, r);
        if (rc < 0)
            store_read_done(r, rc, NULL);
        return;
    }
    if (rc == -EBUSY) {
        node__answer_error(c, r->id, RCP_E_BUSY,
                           "s3://%s/%s block %llu: this node has %lld fills from S3 in flight "
                           "(--max-fills): read it from S3 or try again",
                           r->bucket, r->key, (unsigned long long)r->block,
                           (long long)c->w->n->conf.max_fills);
        node__req_done(r);
    } else if (rc < 0) {
        node__answer_error(c, r->id, RCP_E_INTERNAL, "cannot start a fill: %s", strerror(-rc));
        node__req_done(r);
    }
    /* the answer comes through the mailbox (node__deliver) */
}

void node__deliver(node_worker *w, node_msg *m)
{
    node_conn *c = NULL;
    for (node_conn *k = w->conns; k; k = k->next)
        if (k->serial == m->conn_serial) {
            c = k;
            break;
        }
    node_req *r = c && !c->closed ? req_find(c, m->req_id) : NULL;
    if (r && r->state == R_FILL_WAIT) {
        r->fill = NULL;
        if (m->buf) {
            uint32_t len = m->len ? m->len : (uint32_t)(m->buf->len - m->off);
            answer_data(r, m->source ? m->source : RCP_SRC_S3, m->buf->data + m->off, len, NULL,
                        m->buf);
        } else {
            node__answer_error(c, r->id, m->rcp_code ? m->rcp_code : RCP_E_INTERNAL, "%s",
                               m->message);
            node__req_done(r);
        }
    }
    node_buf_unref(m->buf);
    free(m);
}

static int parse_object(node_req *r, const rcp_object *o)
{
    if (rcp_str_copy(o->bucket, r->bucket, sizeof(r->bucket)) < 0 ||
        rcp_str_copy(o->key, r->key, sizeof(r->key)) < 0 ||
        rcp_str_copy(o->version, r->version, sizeof(r->version)) < 0)
        return -EBADMSG;
    r->size = o->size;
    return 0;
}

/* The tenant's access check, at every entry a key comes in by: false after
 * answering FORBIDDEN. With tenants, a key must also pass s3_key_check (no
 * dot segments, however spelled): a prefix check of "src/../x" would let a
 * tenant of "src/" read "x" behind a server that resolves dots. */
static bool access_ok(node_conn *c, uint32_t id, const char *verb, const char *bucket,
                      const char *key)
{
    if (!c->w->n->tenants)
        return true;
    char why[300];
    if (s3_key_check(key, strlen(key), why, sizeof(why)) < 0) {
        node__answer_error(c, id, RCP_E_FORBIDDEN, "s3://%s/%s: %s", bucket, key, why);
        return false;
    }
    if (c->peer || (c->tenant && ten_allows(c->tenant, bucket, strlen(bucket), key, strlen(key))))
        return true;
    node__answer_error(c, id, RCP_E_FORBIDDEN,
                       "tenant %s may not %s s3://%s/%s (outside its buckets/prefixes)",
                       c->tenant_name, verb, bucket, key);
    return false;
}

static void do_get(node_conn *c, uint32_t id, const uint8_t *body, size_t len)
{
    node *n = c->w->n;
    node__count(c->w, NM_GET, 1);
    rcp_get_req g;
    if (rcp_parse_get_req(body, len, &g) < 0) {
        node__answer_error(c, id, RCP_E_BAD_REQUEST, "GET: the request does not parse");
        return;
    }
    node_req *r = req_new(c, id, RCP_OP_GET);
    if (!r) {
        node__answer_error(c, id, RCP_E_INTERNAL, "out of memory");
        return;
    }
    if (parse_object(r, &g.obj) < 0) {
        node__answer_error(c, id, RCP_E_BAD_REQUEST, "GET: a field is too long or holds a NUL byte");
        node__req_done(r);
        return;
    }
    if (!access_ok(c, id, "read", r->bucket, r->key)) {
        node__req_done(r);
        return;
    }
    uint64_t bsz = (uint64_t)n->conf.block_size;
    uint64_t blen = bkey_block_len(g.obj.size, bsz, g.block);
    if (blen == 0 || g.offset >= blen || (uint64_t)g.offset + g.length > blen) {
        node__answer_error(c, id, RCP_E_BAD_REQUEST,
                           "GET s3://%s/%s: block %llu range %u+%u is outside the object of %llu "
                           "bytes in %llu-byte blocks",
                           r->bucket, r->key, (unsigned long long)g.block, g.offset, g.length,
                           (unsigned long long)g.obj.size, (unsigned long long)bsz);
        node__req_done(r);
        return;
    }
    r->block = g.block;
    r->off = g.offset;
    r->len = g.length ? g.length : (uint32_t)(blen - g.offset);
    r->flags = g.flags;
    r->block_len = (uint32_t)blen;
    /* the answer's bytes count against max-buffered from now on: a store
     * read's or a fill's buffer is memory as much as a queued answer */
    r->reserved = r->len;
    c->reserved += r->len;
    bkey_id bid;
    req_identity(r, &bid);
    r->state = R_STORE_READ;
    int rc = bs_read(c->w->bs, &bid, r->off, r->len, store_read_done, r);
    if (rc < 0) /* the store refused the read: treat it as a miss */
        store_read_done(r, rc, NULL);
}

/* ---- other operations ----------------------------------------------------- */

static void head_done(const s3_error *err, const s3_object_info *info, void *arg)
{
    node_req *r = arg;
    node_conn *c = r->c;
    if (!r->cancelled && !c->closed) {
        if (err->code == -ENOENT) {
            node__count(c->w, NM_S3_ERRORS, 1);
            node__answer_error(c, r->id, RCP_E_NOT_FOUND, "%s", err->message);
        } else if (err->code) {
            node__count(c->w, NM_S3_ERRORS, 1);
            char m[640];
            node__upstream_message(c->w->n, err->message, m, sizeof(m));
            node__answer_error(c, r->id, RCP_E_UPSTREAM, "%s", m);
        } else {
            uint8_t b[256];
            rcp_head_resp h = {info->size, rcp_s(info->etag), info->last_modified};
            int k = rcp_encode_head_resp(&h, b, sizeof(b));
            if (k > 0)
                node__answer_body(c, RCP_OP_HEAD, r->id, b, (size_t)k);
        }
    }
    node__req_done(r);
}

static void do_head(node_conn *c, uint32_t id, const uint8_t *body, size_t len)
{
    rcp_head_req h;
    if (rcp_parse_head_req(body, len, &h) < 0) {
        node__answer_error(c, id, RCP_E_BAD_REQUEST, "HEAD: the request does not parse");
        return;
    }
    node_req *r = req_new(c, id, RCP_OP_HEAD);
    if (!r)
        return;
    if (rcp_str_copy(h.bucket, r->bucket, sizeof(r->bucket)) < 0 ||
        rcp_str_copy(h.key, r->key, sizeof(r->key)) < 0) {
        node__answer_error(c, id, RCP_E_BAD_REQUEST, "HEAD: a field is too long or holds a NUL byte");
        node__req_done(r);
        return;
    }
    if (!access_ok(c, id, "read", r->bucket, r->key)) {
        node__req_done(r);
        return;
    }
    r->state = R_S3;
    int rc = s3_head(node__s3_for(c->w, c->tenant), r->bucket, r->key, head_done, r);
    if (rc < 0) {
        node__answer_error(c, id, RCP_E_S3, "HEAD s3://%s/%s: %s", r->bucket, r->key,
                           strerror(-rc));
        node__req_done(r);
    }
}

static void put_block_done(void *arg, int rc)
{
    node_req *r = arg;
    node_conn *c = r->c;
    if (!r->cancelled && !c->closed) {
        if (rc < 0)
            node__answer_error(c, r->id, RCP_E_INTERNAL, "the block could not be stored: %s",
                               strerror(-rc));
        else {
            node__count(c->w, NM_PUT_BLOCKS_RECEIVED, 1);
            node__answer_body(c, RCP_OP_PUT_BLOCK, r->id, NULL, 0);
        }
    }
    node__req_done(r);
}

static void do_put_block(node_conn *c, uint32_t id, const uint8_t *body, size_t len)
{
    node *n = c->w->n;
    /* PUT_BLOCK stores bytes under any object's identity: only cache nodes
     * may send it. With a peer token, that is whoever said it in HELLO; with
     * tenants but no token, nobody; on an open node, this host only. */
    if (n->conf.peer_token[0] ? !c->peer : (n->tenants || !c->loopback)) {
        node__answer_error(c, id, RCP_E_FORBIDDEN,
                           n->conf.peer_token[0]
                               ? "PUT_BLOCK is for cache nodes: connect with the peer token"
                           : n->tenants
                               ? "PUT_BLOCK is for cache nodes: give every node the same "
                                 "--peer-token"
                               : "PUT_BLOCK from another host needs the peer token: give every "
                                 "node the same --peer-token");
        return;
    }
    rcp_put_block_req pb;
    if (rcp_parse_put_block_req(body, len, &pb) < 0) {
        node__answer_error(c, id, RCP_E_BAD_REQUEST, "PUT_BLOCK: the request does not parse");
        return;
    }
    node_req *r = req_new(c, id, RCP_OP_PUT_BLOCK);
    if (!r)
        return;
    char tenant[257];
    if (parse_object(r, &pb.obj) < 0 || rcp_str_copy(pb.tenant, tenant, sizeof(tenant)) < 0) {
        node__answer_error(c, id, RCP_E_BAD_REQUEST, "PUT_BLOCK: a field is too long or holds a NUL byte");
        node__req_done(r);
        return;
    }
    if (!access_ok(c, id, "write", r->bucket, r->key)) {
        node__req_done(r);
        return;
    }
    uint64_t blen = bkey_block_len(pb.obj.size, (uint64_t)n->conf.block_size, pb.block);
    if (blen == 0 || blen != pb.data_len) {
        node__answer_error(c, id, RCP_E_BAD_REQUEST,
                           "PUT_BLOCK: block %llu of a %llu-byte object is %llu bytes, not %u",
                           (unsigned long long)pb.block, (unsigned long long)pb.obj.size,
                           (unsigned long long)blen, pb.data_len);
        node__req_done(r);
        return;
    }
    bkey_id bid;
    bkey_id_init(&bid, tenant, r->bucket, r->key, r->version, r->size, pb.block);
    r->state = R_STORE_WRITE;
    int rc = bs_write(c->w->bs, &bid, pb.data, pb.data_len, put_block_done, r);
    if (rc < 0)
        put_block_done(r, rc);
}

/* WARM: the object's real size and version come from a HEAD first (a WARM
 * naming a made-up 64 GiB version starts nothing), then one fill per block
 * not stored yet, while the node has room (WARM takes at most half of
 * --max-fills, so GETs always find some). */
static void warm_head_done(const s3_error *err, const s3_object_info *info, void *arg)
{
    node_req *r = arg;
    node_conn *c = r->c;
    node *n = c->w->n;
    if (r->cancelled || c->closed) {
        node__req_done(r);
        return;
    }
    if (err->code) {
        node__count(c->w, NM_S3_ERRORS, 1);
        node__answer_error(c, r->id,
                           err->code == -ENOENT   ? RCP_E_NOT_FOUND
                           : err->code == -EACCES ? RCP_E_FORBIDDEN
                                                  : RCP_E_S3,
                           "WARM: %s", err->message);
        node__req_done(r);
        return;
    }
    if (info->size != r->size || (r->version[0] && strcmp(info->etag, r->version) != 0)) {
        node__count(c->w, NM_VERSION_CHANGED, 1);
        node__answer_error(c, r->id, RCP_E_VERSION_CHANGED,
                           "WARM: s3://%s/%s is %llu bytes with version %s, not the %llu bytes "
                           "of version %s the request named",
                           r->bucket, r->key, (unsigned long long)info->size, info->etag,
                           (unsigned long long)r->size, r->version[0] ? r->version : "(any)");
        node__req_done(r);
        return;
    }
    uint32_t queued = 0;
    size_t budget = (size_t)n->conf.max_fills / 2;
    for (uint32_t i = 0; i < r->n_warm; i++) {
        uint64_t blen = bkey_block_len(info->size, (uint64_t)n->conf.block_size, r->warm[i]);
        if (!blen)
            continue;
        bkey_id bid;
        bkey_id_init(&bid, c->tenant_name, r->bucket, r->key, r->version, r->size, r->warm[i]);
        if (bs_contains(n->store, &bid))
            continue;
        if (node__fills_active(n) >= budget)
            break; /* the rest is left for a later WARM, or the first GET */
        node_fill_args fa = {c->tenant, &bid, (uint32_t)blen, 0, 0, 0, 0, false};
        node_fill *f;
        if (node__fill_join(c->w, &fa, &f) == 0)
            queued++;
    }
    uint8_t b[4] = {(uint8_t)queued, (uint8_t)(queued >> 8), (uint8_t)(queued >> 16),
                    (uint8_t)(queued >> 24)};
    node__answer_body(c, RCP_OP_WARM, r->id, b, sizeof(b));
    node__req_done(r);
}

static void do_warm(node_conn *c, uint32_t id, const uint8_t *body, size_t len)
{
    node *n = c->w->n;
    rcp_warm_req wr;
    if (rcp_parse_warm_req(body, len, &wr) < 0) {
        node__answer_error(c, id, RCP_E_BAD_REQUEST, "WARM: the request does not parse");
        return;
    }
    node__count(c->w, NM_WARM_BLOCKS, wr.n_blocks);
    if (wr.n_blocks > (uint32_t)n->conf.max_warm_blocks) {
        node__answer_error(c, id, RCP_E_TOO_LARGE,
                           "WARM names %u blocks, over this node's %lld (--max-warm-blocks): "
                           "send them in several requests",
                           wr.n_blocks, (long long)n->conf.max_warm_blocks);
        return;
    }
    node_req *r = req_new(c, id, RCP_OP_WARM);
    if (!r)
        return;
    if (parse_object(r, &wr.obj) < 0) {
        node__answer_error(c, id, RCP_E_BAD_REQUEST,
                           "WARM: a field is too long or holds a NUL byte");
        node__req_done(r);
        return;
    }
    if (!access_ok(c, id, "read", r->bucket, r->key)) {
        node__req_done(r);
        return;
    }
    r->warm = malloc((wr.n_blocks ? wr.n_blocks : 1) * sizeof(uint64_t));
    if (!r->warm) {
        node__answer_error(c, id, RCP_E_INTERNAL, "out of memory");
        node__req_done(r);
        return;
    }
    r->n_warm = wr.n_blocks;
    for (uint32_t i = 0; i < wr.n_blocks; i++)
        r->warm[i] = rcp_warm_block(&wr, i);
    r->state = R_S3;
    int rc = s3_head(node__s3_for(c->w, c->tenant), r->bucket, r->key, warm_head_done, r);
    if (rc < 0) {
        node__answer_error(c, id, RCP_E_S3, "WARM: cannot ask S3 for s3://%s/%s: %s", r->bucket,
                           r->key, strerror(-rc));
        node__req_done(r);
    }
}

static void do_stats(node_conn *c, uint32_t id)
{
    char *text = NULL;
    size_t len = 0;
    if (met_render(c->w->n->metrics, &text, &len) < 0) {
        node__answer_error(c, id, RCP_E_INTERNAL, "cannot render the counters");
        return;
    }
    size_t chunk = 256 * 1024;
    size_t off = 0;
    do {
        size_t k = len - off < chunk ? len - off : chunk;
        bool more = off + k < len;
        write_header(c, RCP_OP_STATS, more ? RCP_F_MORE : 0, id, k);
        evbuffer_add(bufferevent_get_output(c->bev), text + off, k);
        off += k;
    } while (off < len);
    free(text);
}

static void do_cancel(node_conn *c, const uint8_t *body, size_t len)
{
    uint32_t target;
    if (rcp_parse_cancel_req(body, len, &target) < 0)
        return; /* CANCEL has no answer of its own */
    node__count(c->w, NM_CANCELS, 1);
    node_req *r = req_find(c, target);
    if (r) {
        r->cancelled = true;
        node__answer_error(c, target, RCP_E_CANCELED, "cancelled");
        if (r->state == R_FILL_WAIT) {
            if (r->fill)
                node__fill_leave(c->w->n, r->fill, c->serial, r->id);
            node__req_done(r);
        } else if (r->state == R_PUT) {
            node__req_done(r);
        }
        /* store reads, S3 calls and writes finish later and free it then */
        return;
    }
    /* maybe it is being sent: drop what is not on the wire yet */
    node_send **pp = &c->sq_head, *prev = NULL;
    while (*pp) {
        node_send *s = *pp;
        if (s->id == target) {
            *pp = s->next;
            if (c->sq_tail == s)
                c->sq_tail = prev;
            c->sq_bytes -= s->len - s->off;
            send_free(s);
            node__answer_error(c, target, RCP_E_CANCELED, "cancelled");
            break;
        }
        prev = s;
        pp = &s->next;
    }
}

static void do_hello(node_conn *c, const uint8_t *body, size_t len)
{
    node *n = c->w->n;
    rcp_hello_req h;
    if (rcp_parse_hello_req(body, len, &h) < 0) {
        node__answer_error(c, 0, RCP_E_BAD_REQUEST, "HELLO does not parse");
        c->close_after_flush = true;
        return;
    }
    if (h.min_version > RCP_VERSION || h.max_version < RCP_VERSION) {
        node__answer_error(c, 0, RCP_E_VERSION,
                           "this node speaks protocol version %d, the client %u..%u", RCP_VERSION,
                           h.min_version, h.max_version);
        c->close_after_flush = true;
        return;
    }
    if (h.block_size && h.block_size != (uint32_t)n->conf.block_size) {
        node__answer_error(c, 0, RCP_E_BAD_REQUEST,
                           "this node stores %lld-byte blocks, the client asked for %u: one "
                           "block size per cluster",
                           (long long)n->conf.block_size, h.block_size);
        c->close_after_flush = true;
        return;
    }
    const char *pt = n->conf.peer_token;
    bool is_peer = ten_token_equal(pt, strlen(pt), h.token.p, h.token.len);
    if (n->tenants && !is_peer) {
        c->tenant = ten_find(n->tenants, h.token.p, h.token.len);
        if (!c->tenant) {
            node__answer_error(c, 0, RCP_E_UNAUTHORIZED,
                               h.token.len ? "the token is not known to this node (check the "
                                             "tenants file and the client's token)"
                                           : "this node needs a tenant token in HELLO (set the "
                                             "client's token)");
            c->close_after_flush = true;
            return;
        }
        snprintf(c->tenant_name, sizeof(c->tenant_name), "%s", ten_name(c->tenant));
    }
    c->peer = is_peer;
    c->hello = true;
    uint8_t b[1024];
    rcp_hello_resp hr = {RCP_VERSION,
                         (uint32_t)n->conf.block_size,
                         (uint32_t)n->conf.max_outstanding,
                         (uint32_t)n->conf.max_buffered,
                         c->max_body,
                         (uint32_t)n->conf.chunk_size,
                         rcp_s(n->conf.node_id),
                         rcp_s(c->tenant_name)};
    int k = rcp_encode_hello_resp(&hr, b, sizeof(b));
    if (k > 0)
        node__answer_body(c, RCP_OP_HELLO, 0, b, (size_t)k);
}

/* ---- the read side ---------------------------------------------------------- */

static void conn_pause(node_conn *c, bool pause)
{
    if (c->closed || pause == c->paused)
        return;
    c->paused = pause;
    if (pause)
        bufferevent_disable(c->bev, EV_READ);
    else
        bufferevent_enable(c->bev, EV_READ);
}

void node__conn_pause(node_conn *c, bool pause)
{
    if (c->closed)
        return;
    c->put_hold = pause;
    if (pause) {
        bufferevent_disable(c->bev, EV_READ);
    } else {
        bufferevent_enable(c->bev, EV_READ);
        c->paused = false;
        conn_process(c); /* frames already buffered */
    }
}

static void dispatch(node_conn *c, const rcp_header *h, const uint8_t *body)
{
    node__count(c->w, NM_REQUESTS, 1);
    if (h->flags & RCP_F_RESPONSE) {
        node__answer_error(c, h->id, RCP_E_BAD_REQUEST, "a client does not send answers");
        return;
    }
    if (!c->hello && h->op != RCP_OP_HELLO) {
        node__answer_error(c, h->id, RCP_E_UNAUTHORIZED, "say HELLO first");
        return;
    }
    if (atomic_load(&c->w->n->stopping) && h->op != RCP_OP_PUT_DATA && h->op != RCP_OP_CANCEL) {
        node__answer_error(c, h->id, RCP_E_BUSY, "the node is shutting down: use another");
        return;
    }
    if (h->op != RCP_OP_PUT_DATA && h->op != RCP_OP_CANCEL && h->op != RCP_OP_HELLO &&
        req_find(c, h->id)) {
        node__answer_error(c, h->id, RCP_E_BAD_REQUEST, "request id %u is already in use", h->id);
        return;
    }
    switch (h->op) {
    case RCP_OP_HELLO:
        if (c->hello)
            node__answer_error(c, 0, RCP_E_BAD_REQUEST, "HELLO was already said");
        else
            do_hello(c, body, h->len);
        break;
    case RCP_OP_GET: do_get(c, h->id, body, h->len); break;
    case RCP_OP_HEAD: do_head(c, h->id, body, h->len); break;
    case RCP_OP_PUT: {
        rcp_put_req p;
        if (rcp_parse_put_req(body, h->len, &p) < 0) {
            node__answer_error(c, h->id, RCP_E_BAD_REQUEST, "PUT: the request does not parse");
            break;
        }
        node_req *r = req_new(c, h->id, RCP_OP_PUT);
        if (!r)
            break;
        if (rcp_str_copy(p.bucket, r->bucket, sizeof(r->bucket)) < 0 ||
            rcp_str_copy(p.key, r->key, sizeof(r->key)) < 0) {
            node__answer_error(c, h->id, RCP_E_BAD_REQUEST, "PUT: a field is too long or holds a NUL byte");
            node__req_done(r);
            break;
        }
        if (!access_ok(c, h->id, "write", r->bucket, r->key)) {
            r->cancelled = true; /* its data frames are dropped */
            node__req_done(r);
            break;
        }
        r->state = R_PUT;
        if (node__put_start(c, r, &p) < 0)
            node__req_done(r);
        break;
    }
    case RCP_OP_PUT_DATA: {
        node_req *r = req_find(c, h->id);
        if (!r || r->op != RCP_OP_PUT || !r->put)
            break; /* data of a refused or cancelled PUT: dropped */
        node__put_data(c, r, body, h->len, !(h->flags & RCP_F_MORE));
        break;
    }
    case RCP_OP_PUT_BLOCK: do_put_block(c, h->id, body, h->len); break;
    case RCP_OP_WARM: do_warm(c, h->id, body, h->len); break;
    case RCP_OP_STATS: do_stats(c, h->id); break;
    case RCP_OP_PING: node__answer_body(c, RCP_OP_PING, h->id, NULL, 0); break;
    case RCP_OP_CANCEL: do_cancel(c, body, h->len); break;
    default:
        node__answer_error(c, h->id, RCP_E_UNKNOWN_OP, "unknown opcode %u", h->op);
        break;
    }
}

/* Read and dispatch every whole frame in the input, within the limits. */
static void conn_process(node_conn *c)
{
    node *n = c->w->n;
    struct evbuffer *in = bufferevent_get_input(c->bev);
    struct evbuffer *out = bufferevent_get_output(c->bev);
    c->refs++;
    while (!c->closed && !c->close_after_flush && !c->put_hold) {
        uint8_t hb[RCP_HEADER_SIZE];
        if (evbuffer_copyout(in, hb, sizeof(hb)) < (ssize_t)sizeof(hb)) {
            conn_pause(c, false);
            break;
        }
        rcp_header h;
        /* before HELLO nothing longer than a HELLO is taken */
        int rc = rcp_header_decode(hb, c->hello ? c->max_body : RCP_MAX_HELLO_BODY, &h);
        /* back-pressure: at the limits, read only what finishes requests (the
         * data of a PUT, CANCEL); resume when answers drain */
        if (rc == 0 && h.op != RCP_OP_PUT_DATA && h.op != RCP_OP_CANCEL &&
            (c->n_reqs >= (size_t)n->conf.max_outstanding ||
             c->sq_bytes + c->reserved + evbuffer_get_length(out) >=
                 (size_t)n->conf.max_buffered)) {
            conn_pause(c, true);
            break;
        }
        if (rc < 0) {
            node__count(c->w, NM_PROTOCOL_ERRORS, 1);
            node__answer_error(c, 0, RCP_E_PROTOCOL,
                               rc == -EMSGSIZE ? "a frame body of %u bytes is over the limit of "
                                                 "%u: closing"
                                               : "corrupt frame header: closing (%u/%u)",
                               h.len, c->hello ? c->max_body : RCP_MAX_HELLO_BODY);
            c->close_after_flush = true;
            bufferevent_disable(c->bev, EV_READ);
            break;
        }
        if (evbuffer_get_length(in) < RCP_HEADER_SIZE + (size_t)h.len) {
            conn_pause(c, false);
            break;
        }
        evbuffer_drain(in, RCP_HEADER_SIZE);
        const uint8_t *body = h.len ? evbuffer_pullup(in, h.len) : (const uint8_t *)"";
        dispatch(c, &h, body);
        if (!c->closed)
            evbuffer_drain(in, h.len);
    }
    if (c->close_after_flush && !c->closed && evbuffer_get_length(out) == 0)
        conn_close(c);
    conn_unref(c);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    (void)bev;
    node_conn *c = arg;
    c->last_ms = now_ms();
    conn_process(c);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    (void)bev;
    node_conn *c = arg;
    c->last_ms = now_ms();
    c->refs++;
    conn_pump(c);
    if (!c->closed && c->close_after_flush &&
        evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
        conn_close(c);
    else if (!c->closed && c->paused)
        conn_process(c);
    conn_unref(c);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    node_conn *c = arg;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        c->refs++;
        conn_close(c);
        conn_unref(c);
    }
}

/* ---- lifecycle ---------------------------------------------------------------- */

void node__accept(node_worker *w, int fd)
{
    node *n = w->n;
    node_conn *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        return;
    }
    c->w = w;
    c->serial = ++w->next_serial;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    c->loopback = getpeername(fd, (struct sockaddr *)&ss, &sl) == 0 &&
                  ten_addr_is_loopback((struct sockaddr *)&ss);
    c->refs = 1;
    c->max_body = (uint32_t)(n->conf.block_size + 64 * 1024);
    if (c->max_body < (uint32_t)n->conf.chunk_size + 4096)
        c->max_body = (uint32_t)n->conf.chunk_size + 4096;
    if (n->ssl_ctx) {
        SSL *ssl = SSL_new(n->ssl_ctx);
        c->bev = ssl ? bufferevent_openssl_socket_new(w->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                      BEV_OPT_CLOSE_ON_FREE)
                     : NULL;
        if (!c->bev && ssl)
            SSL_free(ssl);
    } else {
        c->bev = bufferevent_socket_new(w->base, fd, BEV_OPT_CLOSE_ON_FREE);
    }
    if (!c->bev) {
        close(fd);
        free(c);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    /* libevent's default of 16 KiB per read/write call would make a 1 MiB
     * block 64 system calls and as many wake-ups */
    bufferevent_set_max_single_read(c->bev, 256 * 1024);
    bufferevent_set_max_single_write(c->bev, 1u << 20);
    bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
    /* the write callback fires when the output falls to two chunks: refill it */
    bufferevent_setwatermark(c->bev, EV_WRITE, 2 * (size_t)n->conf.chunk_size, 0);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
    c->last_ms = now_ms();
    atomic_fetch_add(&n->conns_open, 1);
    node__count(w, NM_CONNECTIONS, 1);
    node__gauge_add(w, NM_CONNECTIONS_OPEN, 1);
}

static void conn_close(node_conn *c)
{
    if (c->closed)
        return;
    c->closed = true;
    node_worker *w = c->w;
    node__gauge_add(w, NM_CONNECTIONS_OPEN, -1);
    atomic_fetch_sub(&w->n->conns_open, 1);
    if (w->accept_paused && !atomic_load(&w->n->stopping)) {
        /* a descriptor is free again: accept the connections waiting */
        w->accept_paused = false;
        evconnlistener_enable(w->listener);
    }
    /* requests: those waiting on something of another thread leave it now;
     * those with an operation of this thread in flight are freed when it ends */
    node_req *r = c->reqs;
    while (r) {
        node_req *nx = r->next;
        r->cancelled = true;
        if (r->state == R_FILL_WAIT) {
            if (r->fill)
                node__fill_leave(w->n, r->fill, c->serial, r->id);
            node__req_done(r);
        } else if (r->state == R_PUT || r->state == R_NEW) {
            node__req_done(r);
        }
        r = nx;
    }
    while (c->sq_head) {
        node_send *s = c->sq_head;
        c->sq_head = s->next;
        send_free(s);
    }
    c->sq_tail = NULL;
    bufferevent_free(c->bev); /* references in its output are released */
    c->bev = NULL;
    if (c->prev)
        c->prev->next = c->next;
    else if (w->conns == c)
        w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    conn_unref(c); /* the open connection's reference */
}

static void conn_unref(node_conn *c)
{
    if (--c->refs == 0)
        free(c);
}

/* Frame timeout: a connection that has not said HELLO, or holds part of a
 * frame it is not paused on, must complete it in time (a client that sends
 * all but one byte of a header or body holds no slot for long). Idle
 * timeout: nothing in flight, nothing buffered, nothing moved. */
void node__sweep(node_worker *w, int64_t now)
{
    node *n = w->n;
    node_conn *c = w->conns;
    while (c) {
        node_conn *nx = c->next;
        if (c->closed || c->close_after_flush) {
            c = nx;
            continue;
        }
        size_t in = evbuffer_get_length(bufferevent_get_input(c->bev));
        size_t out = evbuffer_get_length(bufferevent_get_output(c->bev));
        bool waiting = !c->hello || (in > 0 && !c->paused && !c->put_hold);
        if (!waiting) {
            c->wait_since_ms = 0;
        } else if (!c->wait_since_ms) {
            c->wait_since_ms = c->hello ? now : c->last_ms;
        }
        const char *why = NULL;
        if (waiting && now - c->wait_since_ms >= n->conf.frame_timeout_ms)
            why = c->hello ? "a frame did not arrive whole within --frame-timeout"
                           : "no HELLO within --frame-timeout of connecting";
        else if (n->conf.idle_timeout_ms > 0 && c->hello && !c->n_reqs && !c->sq_head && !in &&
                 !out && now - c->last_ms >= n->conf.idle_timeout_ms)
            why = "idle for --idle-timeout";
        if (why) {
            node__count(w, NM_CONN_TIMEOUTS, 1);
            node_log(NODE_LOG_DEBUG, "msg=\"connection closed: %s\" buffered=%zu", why, in);
            node__answer_error(c, 0, RCP_E_TIMEOUT, "%s: closing", why);
            c->close_after_flush = true;
            bufferevent_disable(c->bev, EV_READ);
            if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
                conn_close(c);
        }
        c = nx;
    }
}

void node__close_all(node_worker *w)
{
    while (w->conns)
        conn_close(w->conns);
}

size_t node__conn_count(node_worker *w)
{
    size_t busy = 0;
    for (node_conn *c = w->conns; c; c = c->next)
        if (c->n_reqs || c->sq_head ||
            (c->bev && evbuffer_get_length(bufferevent_get_output(c->bev))))
            busy++;
    return busy;
}
