/* SPDX-License-Identifier: Apache-2.0
 *
 * node_conn.c: the ringcache protocol's front end: one client connection of
 * ringcached. It only frames: it reads frames (proto.h), checks and parses
 * them, hands each request to the request lifecycle (node_req.h) with a sink
 * that turns what comes back into frames, and keeps the connection's limits
 * and timeouts (HELLO first, --max-outstanding, --max-buffered, the frame
 * and idle timeouts). HELLO, STATS, PING and CANCEL are the protocol's own.
 *
 * Answers wait in a send queue and go out one chunk at a time, round robin,
 * only while the socket's output buffer is below two chunks, so a large
 * block never holds up a small one and memory per connection stays bounded:
 * the connection stops reading when it has max-outstanding requests in
 * flight or max-buffered bytes of answers queued or admitted (back-pressure:
 * a GET's bytes count from the moment the lifecycle admits it, while the
 * store reads or S3 fills them), and data is sent by reference from the
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
typedef struct conn_req conn_req;

/* A request of this connection: its frame's id and the lifecycle's part. */
struct conn_req {
    node_req req; /* first: the lifecycle's (node_req.h) */
    node_conn *c;
    dlist_node link; /* in its connection's requests */
    uint32_t id;
    uint8_t op;
    bool cancelled;    /* CANCEL answered, or the connection closed */
    bool hold;         /* it asked the connection to stop reading (PUT) */
    uint32_t reserved; /* answer bytes counted against max-buffered */
    uint64_t t0_us;
};

struct node_send {
    node_send *next;
    uint32_t id;
    uint8_t op;
    uint8_t head[RCP_GET_RESP_HEAD_SIZE];
    size_t head_len;
    const uint8_t *p;
    size_t len, off;
    bs_buf *bs; /* the send's own reference, or NULL */
    node_buf *nb;
    uint64_t t0_us; /* for the latency histogram (0: none) */
};

struct node_conn {
    node_worker *w;
    dlist_node link; /* in its worker's connections */
    uint64_t serial;
    struct bufferevent *bev;
    int refs; /* 1 while open + async operations holding it */
    bool closed, close_after_flush, hello, peer, paused;
    bool put_hold;         /* a write-through PUT asked to stop reading */
    bool loopback;         /* the client is on this host */
    bool file_sends;       /* plaintext, --sendfile: RAM-tier hits go out with sendfile() */
    int64_t last_ms;       /* last byte read or written (idle timeout) */
    int64_t wait_since_ms; /* waiting for the rest of a frame since (0: not) */
    const ten_tenant *tenant;
    char tenant_name[BKEY_TENANT_MAX + 1];
    dlist reqs; /* its requests in flight (conn_req) */
    node_send *sq_head, *sq_tail;
    size_t sq_bytes;
    size_t reserved; /* answers admitted and not queued yet (reads, fills) */
    uint32_t max_body;
};

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int64_t now_ms(void)
{
    return (int64_t)(now_us() / 1000u);
}

static void conn_unref(node_conn *c);
static void conn_close(node_conn *c);
static void conn_pump(node_conn *c);
static void conn_process(node_conn *c);
static const node_sink_ops conn_sink_ops;
__attribute__((format(printf, 4, 5))) static void answer_error(node_conn *c, uint32_t id, int code,
                                                               const char *fmt, ...);

/* ---- requests ------------------------------------------------------------- */

/* A request of this connection (NULL after answering "out of memory"). */
static conn_req *req_new(node_conn *c, uint32_t id, uint8_t op)
{
    conn_req *r = calloc(1, sizeof(*r));
    if (!r) {
        answer_error(c, id, RCP_E_INTERNAL, "out of memory");
        return NULL;
    }
    r->c = c;
    r->id = id;
    r->op = op;
    r->t0_us = now_us();
    dlist_push_front(&c->reqs, &r->link);
    c->refs++;
    return r;
}

static conn_req *req_find(node_conn *c, uint32_t id)
{
    for (dlist_node *i = dlist_first(&c->reqs); i; i = dlist_next(&c->reqs, i)) {
        conn_req *r = DLIST_ENTRY(i, conn_req, link);
        if (r->id == id && !r->cancelled)
            return r;
    }
    return NULL;
}

/* Who the connection's client is, and where the lifecycle answers request r. */
#define CALLER(c) (&(node_caller){(c)->tenant, (c)->peer, (c)->loopback})
#define SINK(r)   (&(node_sink){&conn_sink_ops, (r)})

/* ---- answers ---------------------------------------------------------------- */

static void write_header(node_conn *c, uint8_t op, uint16_t flags, uint32_t id, size_t len)
{
    uint8_t h[RCP_HEADER_SIZE];
    rcp_header hd = {op, (uint16_t)(flags | RCP_F_RESPONSE), id, (uint32_t)len};
    rcp_header_encode(&hd, h);
    evbuffer_add(bufferevent_get_output(c->bev), h, sizeof(h));
}

static void answer_body(node_conn *c, uint8_t op, uint32_t id, const void *body, size_t len)
{
    if (c->closed)
        return;
    write_header(c, op, 0, id, len);
    if (len)
        evbuffer_add(bufferevent_get_output(c->bev), body, len);
}

static void answer_error(node_conn *c, uint32_t id, int code, const char *fmt, ...)
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
    answer_body(c, RCP_OP_ERROR, id, body, (size_t)n);
    node__count(c->w, NM_ERRORS_SENT, 1);
    if (code == RCP_E_UNAUTHORIZED) /* the lifecycle counts its own refusals */
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

static void seg_unref_bs(const struct evbuffer_file_segment *seg, int flags, void *arg)
{
    (void)seg;
    (void)flags;
    bs_buf *b = arg;
    bs_buf_unref(&b);
}

/* Queues [p, p+k) of b as a piece of the tier's file, sent with sendfile():
 * the socket references the pages instead of copying the bytes. The buffer's
 * reference is dropped once the piece has been written. false: not in a file
 * (a read from SSD), or no memory; the caller copies instead. */
static bool add_from_file(struct evbuffer *out, bs_buf *b, const uint8_t *p, size_t k)
{
    int fd;
    uint64_t off;
    if (bs_buf_file(b, p, &fd, &off) < 0)
        return false;
    struct evbuffer_file_segment *seg = evbuffer_file_segment_new(
        fd, (ev_off_t)off, (ev_off_t)k, EVBUF_FS_DISABLE_MMAP | EVBUF_FS_DISABLE_LOCKING);
    if (!seg)
        return false;
    bs_buf_ref(b);
    evbuffer_file_segment_add_cleanup_cb(seg, seg_unref_bs, b);
    int rc = evbuffer_add_file_segment(out, seg, 0, (ev_off_t)k);
    evbuffer_file_segment_free(seg); /* the buffer's chain holds its own */
    return rc == 0;
}

static void send_free(node_send *s)
{
    bs_buf_unref(&s->bs);
    node_buf_unref(s->nb);
    free(s);
}

/* Queue the data answer of a GET: head + [p, p+len) of bs or nb (the send
 * takes its own reference). */
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
            if (s->bs && c->file_sends && add_from_file(out, s->bs, s->p + s->off, k)) {
                /* queued from the tier's file */
            } else if (s->bs) {
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

/* ---- the sink: what the lifecycle answers, as frames ----------------------------- */

static void sink_admit(void *arg, size_t bytes)
{
    conn_req *r = arg;
    r->reserved = (uint32_t)bytes;
    r->c->reserved += bytes;
}

/* Queue the data answer of a GET: head + the piece's bytes (the send takes
 * its own reference to the buffer holding them). */
static void sink_piece(void *arg, const node_piece *p)
{
    conn_req *r = arg;
    node_conn *c = r->c;
    if (c->closed)
        return;
    node_send *s = calloc(1, sizeof(*s));
    if (!s) {
        answer_error(c, r->id, RCP_E_INTERNAL, "out of memory");
        return;
    }
    s->id = r->id;
    s->op = RCP_OP_GET;
    rcp_get_resp_head gh = {(uint32_t)p->len, p->source};
    s->head_len = (size_t)rcp_encode_get_resp_head(&gh, s->head, sizeof(s->head));
    s->p = p->data;
    s->len = p->len;
    node_piece_ref(p);
    s->bs = p->bs;
    s->nb = p->nb;
    s->t0_us = r->t0_us;
    if (c->sq_tail)
        c->sq_tail->next = s;
    else
        c->sq_head = s;
    c->sq_tail = s;
    c->sq_bytes += p->len;
    node__count(c->w, NM_BYTES_SERVED, p->len);
}

static void sink_answer(void *arg, const node_answer *a)
{
    conn_req *r = arg;
    uint8_t b[256];
    int k = 0;
    if (r->op == RCP_OP_HEAD) {
        rcp_head_resp h = {a->size, rcp_s(a->etag), a->last_modified};
        k = rcp_encode_head_resp(&h, b, sizeof(b));
    } else if (r->op == RCP_OP_PUT) {
        rcp_put_resp pr = {rcp_s(a->etag), a->size};
        k = rcp_encode_put_resp(&pr, b, sizeof(b));
    } else if (r->op == RCP_OP_WARM) {
        uint32_t q = a->queued;
        b[0] = (uint8_t)q, b[1] = (uint8_t)(q >> 8), b[2] = (uint8_t)(q >> 16);
        b[3] = (uint8_t)(q >> 24);
        k = 4;
    }
    if (k >= 0)
        answer_body(r->c, r->op, r->id, b, (size_t)k);
}

static void sink_error(void *arg, int code, const char *sentence)
{
    conn_req *r = arg;
    answer_error(r->c, r->id, code, "%s", sentence);
}

static void conn_put_hold(node_conn *c, bool hold);

static void sink_pause(void *arg, bool pause)
{
    conn_req *r = arg;
    r->hold = pause;
    conn_put_hold(r->c, pause);
}

/* The request is over: unlink and free it. */
static void sink_done(void *arg)
{
    conn_req *r = arg;
    node_conn *c = r->c;
    dlist_remove(&c->reqs, &r->link);
    c->reserved -= r->reserved;
    bool held = r->hold;
    free(r);
    if (!c->closed) {
        conn_pump(c); /* its answer, if it has one */
        if (held)
            conn_put_hold(c, false); /* reads on, and takes the frames buffered */
        else if (c->paused)
            conn_process(c); /* room for more requests */
    }
    conn_unref(c);
}

static const node_sink_ops conn_sink_ops = {sink_admit, sink_piece, sink_answer,
                                            sink_error, sink_pause, sink_done};

/* ---- the requests' frames -------------------------------------------------------- */

/* The object a frame names; the tenant is the connection's (the lifecycle's
 * business). -EBADMSG: a field too long or with a NUL byte. */
static int parse_object(const rcp_object *o, bkey_object *obj)
{
    memset(obj, 0, sizeof(*obj));
    if (rcp_str_copy(o->bucket, obj->bucket, sizeof(obj->bucket)) < 0 ||
        rcp_str_copy(o->key, obj->key, sizeof(obj->key)) < 0 ||
        rcp_str_copy(o->version, obj->version, sizeof(obj->version)) < 0)
        return -EBADMSG;
    obj->size = o->size;
    return 0;
}

/* true after answering BAD_REQUEST to a frame of op `what` whose body does
 * not parse (parsed < 0) or has a field that does not fit (fields < 0). */
static bool bad_frame(node_conn *c, uint32_t id, const char *what, int parsed, int fields)
{
    if (parsed >= 0 && fields >= 0)
        return false;
    answer_error(c, id, RCP_E_BAD_REQUEST, "%s: %s", what,
                 parsed < 0 ? "the request does not parse"
                            : "a field is too long or holds a NUL byte");
    return true;
}

static void do_get(node_conn *c, uint32_t id, const uint8_t *body, size_t len)
{
    rcp_get_req g;
    rcp_str tenant;
    bkey_object obj;
    int parsed = rcp_parse_get_req_tenant(body, len, &g, &tenant);
    if (bad_frame(c, id, "GET", parsed, parsed < 0 ? 0 : parse_object(&g.obj, &obj))) {
        node__count(c->w, NM_GET, 1); /* a GET the lifecycle never sees counts too */
        return;
    }
    node_caller who = *CALLER(c);
    if (g.flags & RCP_GET_TENANT) {
        /* a node's S3 API reads a tenant's block from its owner: the tenant's
         * key space and credentials, on the peer's word */
        node *n = c->w->n;
        who.tenant = n->tenants ? ten_find_name(n->tenants, tenant.p, tenant.len) : NULL;
        if (!c->peer || (tenant.len && !who.tenant)) {
            node__count(c->w, NM_GET, 1);
            if (c->peer)
                answer_error(c, id, RCP_E_BAD_REQUEST,
                             "GET for tenant %.*s: this node has no such tenant (give every "
                             "node the same tenants file)",
                             (int)tenant.len, tenant.p);
            else
                answer_error(c, id, RCP_E_FORBIDDEN,
                             "GET for a tenant is for cache nodes: connect with the peer token");
            return;
        }
        g.flags &= ~(uint32_t)RCP_GET_TENANT;
    }
    conn_req *r = req_new(c, id, RCP_OP_GET);
    if (r)
        node_req_get(&r->req, c->w, &who, &obj, g.block, g.offset, g.length, g.flags, SINK(r));
}

static void do_drop(node_conn *c, uint32_t id, const uint8_t *body, size_t len)
{
    rcp_drop_req d;
    bkey_object obj;
    int parsed = rcp_parse_drop_req(body, len, &d);
    int fields = parsed < 0 ? 0
                 : parse_object(&d.obj, &obj) < 0
                     ? -EBADMSG
                     : rcp_str_copy(d.tenant, obj.tenant, sizeof(obj.tenant));
    if (bad_frame(c, id, "DROP", parsed, fields))
        return;
    conn_req *r = req_new(c, id, RCP_OP_DROP);
    if (r)
        node_req_drop(&r->req, c->w, CALLER(c), &obj, SINK(r));
}

static void do_head(node_conn *c, uint32_t id, const uint8_t *body, size_t len)
{
    rcp_head_req h;
    char bucket[BKEY_BUCKET_MAX + 1], key[BKEY_KEY_MAX + 1];
    int parsed = rcp_parse_head_req(body, len, &h);
    int fields = parsed < 0 ? 0
                 : rcp_str_copy(h.bucket, bucket, sizeof(bucket)) < 0
                     ? -EBADMSG
                     : rcp_str_copy(h.key, key, sizeof(key));
    if (bad_frame(c, id, "HEAD", parsed, fields))
        return;
    conn_req *r = req_new(c, id, RCP_OP_HEAD);
    if (r)
        node_req_head(&r->req, c->w, CALLER(c), bucket, key, SINK(r));
}

/* A refused PUT's data frames find no request: dropped. */
static void do_put(node_conn *c, uint32_t id, const uint8_t *body, size_t len)
{
    rcp_put_req p;
    bkey_object obj;
    memset(&obj, 0, sizeof(obj));
    int parsed = rcp_parse_put_req(body, len, &p);
    int fields = parsed < 0 ? 0
                 : rcp_str_copy(p.bucket, obj.bucket, sizeof(obj.bucket)) < 0
                     ? -EBADMSG
                     : rcp_str_copy(p.key, obj.key, sizeof(obj.key));
    if (bad_frame(c, id, "PUT", parsed, fields))
        return;
    obj.size = p.size;
    conn_req *r = req_new(c, id, RCP_OP_PUT);
    if (r)
        node_req_put(&r->req, c->w, CALLER(c), &obj, SINK(r));
}

static void do_put_block(node_conn *c, uint32_t id, const uint8_t *body, size_t len)
{
    rcp_put_block_req pb;
    bkey_object obj;
    int parsed = rcp_parse_put_block_req(body, len, &pb);
    int fields = parsed < 0 ? 0
                 : parse_object(&pb.obj, &obj) < 0
                     ? -EBADMSG
                     : rcp_str_copy(pb.tenant, obj.tenant, sizeof(obj.tenant));
    if (bad_frame(c, id, "PUT_BLOCK", parsed, fields))
        return;
    conn_req *r = req_new(c, id, RCP_OP_PUT_BLOCK);
    if (r)
        node_req_store_block(&r->req, c->w, CALLER(c), &obj, pb.block, pb.data, pb.data_len,
                             SINK(r));
}

static uint64_t warm_block_at(const void *src, uint32_t i)
{
    return rcp_warm_block(src, i);
}

static void do_warm(node_conn *c, uint32_t id, const uint8_t *body, size_t len)
{
    rcp_warm_req wr;
    bkey_object obj;
    int parsed = rcp_parse_warm_req(body, len, &wr);
    if (bad_frame(c, id, "WARM", parsed, parsed < 0 ? 0 : parse_object(&wr.obj, &obj)))
        return;
    conn_req *r = req_new(c, id, RCP_OP_WARM);
    if (r)
        node_req_warm(&r->req, c->w, CALLER(c), &obj, wr.n_blocks, warm_block_at, &wr, SINK(r));
}

static void do_stats(node_conn *c, uint32_t id)
{
    char *text = NULL;
    size_t len = 0;
    if (met_render(c->w->n->metrics, &text, &len) < 0) {
        answer_error(c, id, RCP_E_INTERNAL, "cannot render the counters");
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
    conn_req *r = req_find(c, target);
    if (r) {
        r->cancelled = true;
        answer_error(c, target, RCP_E_CANCELED, "cancelled");
        node_req_cancel(&r->req); /* done now, or when its I/O ends */
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
            answer_error(c, target, RCP_E_CANCELED, "cancelled");
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
        answer_error(c, 0, RCP_E_BAD_REQUEST, "HELLO does not parse");
        c->close_after_flush = true;
        return;
    }
    if (h.min_version > RCP_VERSION || h.max_version < RCP_VERSION) {
        answer_error(c, 0, RCP_E_VERSION, "this node speaks protocol version %d, the client %u..%u",
                     RCP_VERSION, h.min_version, h.max_version);
        c->close_after_flush = true;
        return;
    }
    if (h.block_size && h.block_size != (uint32_t)n->conf.block_size) {
        answer_error(c, 0, RCP_E_BAD_REQUEST,
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
            answer_error(c, 0, RCP_E_UNAUTHORIZED,
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
        answer_body(c, RCP_OP_HELLO, 0, b, (size_t)k);
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

/* A write-through asks to stop reading (S3 has parts in flight) or to go on. */
static void conn_put_hold(node_conn *c, bool pause)
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
        answer_error(c, h->id, RCP_E_BAD_REQUEST, "a client does not send answers");
        return;
    }
    if (!c->hello && h->op != RCP_OP_HELLO) {
        answer_error(c, h->id, RCP_E_UNAUTHORIZED, "say HELLO first");
        return;
    }
    if (atomic_load(&c->w->n->stopping) && h->op != RCP_OP_PUT_DATA && h->op != RCP_OP_CANCEL) {
        answer_error(c, h->id, RCP_E_BUSY, "the node is shutting down: use another");
        return;
    }
    if (h->op != RCP_OP_PUT_DATA && h->op != RCP_OP_CANCEL && h->op != RCP_OP_HELLO &&
        req_find(c, h->id)) {
        answer_error(c, h->id, RCP_E_BAD_REQUEST, "request id %u is already in use", h->id);
        return;
    }
    switch (h->op) {
    case RCP_OP_HELLO:
        if (c->hello)
            answer_error(c, 0, RCP_E_BAD_REQUEST, "HELLO was already said");
        else
            do_hello(c, body, h->len);
        break;
    case RCP_OP_GET: do_get(c, h->id, body, h->len); break;
    case RCP_OP_HEAD: do_head(c, h->id, body, h->len); break;
    case RCP_OP_PUT: do_put(c, h->id, body, h->len); break;
    case RCP_OP_PUT_DATA: {
        conn_req *r = req_find(c, h->id);
        if (r && r->op == RCP_OP_PUT) /* else the data of a refused or cancelled PUT: dropped */
            node_req_put_data(&r->req, body, h->len, !(h->flags & RCP_F_MORE));
        break;
    }
    case RCP_OP_PUT_BLOCK: do_put_block(c, h->id, body, h->len); break;
    case RCP_OP_DROP: do_drop(c, h->id, body, h->len); break;
    case RCP_OP_WARM: do_warm(c, h->id, body, h->len); break;
    case RCP_OP_STATS: do_stats(c, h->id); break;
    case RCP_OP_PING: answer_body(c, RCP_OP_PING, h->id, NULL, 0); break;
    case RCP_OP_CANCEL: do_cancel(c, body, h->len); break;
    default: answer_error(c, h->id, RCP_E_UNKNOWN_OP, "unknown opcode %u", h->op); break;
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
            (c->reqs.count >= (size_t)n->conf.max_outstanding ||
             c->sq_bytes + c->reserved + evbuffer_get_length(out) >=
                 (size_t)n->conf.max_buffered)) {
            conn_pause(c, true);
            break;
        }
        if (rc < 0) {
            node__count(c->w, NM_PROTOCOL_ERRORS, 1);
            answer_error(c, 0, RCP_E_PROTOCOL,
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
        c->file_sends = node__sendfile_to(&n->conf, c->loopback);
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
    dlist_init(&c->reqs);
    dlist_push_front(&w->conns, &c->link);
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
    for (dlist_node *i = dlist_first(&c->reqs), *nx; i; i = nx) {
        nx = dlist_next(&c->reqs, i); /* i may be freed by its done() */
        conn_req *r = DLIST_ENTRY(i, conn_req, link);
        r->cancelled = true;
        node_req_cancel(&r->req); /* done now, or when its I/O ends */
    }
    while (c->sq_head) {
        node_send *s = c->sq_head;
        c->sq_head = s->next;
        send_free(s);
    }
    c->sq_tail = NULL;
    bufferevent_free(c->bev); /* references in its output are released */
    c->bev = NULL;
    dlist_remove(&w->conns, &c->link);
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
    for (dlist_node *i = dlist_first(&w->conns), *nx; i; i = nx) {
        nx = dlist_next(&w->conns, i); /* i may close */
        node_conn *c = DLIST_ENTRY(i, node_conn, link);
        if (c->closed || c->close_after_flush)
            continue;
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
        else if (n->conf.idle_timeout_ms > 0 && c->hello && !c->reqs.count && !c->sq_head && !in &&
                 !out && now - c->last_ms >= n->conf.idle_timeout_ms)
            why = "idle for --idle-timeout";
        if (why) {
            node__count(w, NM_CONN_TIMEOUTS, 1);
            node_log(NODE_LOG_DEBUG, "msg=\"connection closed: %s\" buffered=%zu", why, in);
            answer_error(c, 0, RCP_E_TIMEOUT, "%s: closing", why);
            c->close_after_flush = true;
            bufferevent_disable(c->bev, EV_READ);
            if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
                conn_close(c);
        }
    }
}

void node__close_all(node_worker *w)
{
    while (!dlist_empty(&w->conns))
        conn_close(DLIST_ENTRY(dlist_first(&w->conns), node_conn, link));
}

size_t node__conn_count(node_worker *w)
{
    size_t busy = 0;
    for (dlist_node *i = dlist_first(&w->conns); i; i = dlist_next(&w->conns, i)) {
        node_conn *c = DLIST_ENTRY(i, node_conn, link);
        if (c->reqs.count || c->sq_head ||
            (c->bev && evbuffer_get_length(bufferevent_get_output(c->bev))))
            busy++;
    }
    return busy;
}
