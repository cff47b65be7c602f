/* SPDX-License-Identifier: Apache-2.0
 *
 * cacheconn.c: a pipelined client connection to a cache node (cacheconn.h).
 * Requests live in a slot table; a request id is (generation << 12 | slot), so
 * a late answer to a request that timed out or was cancelled (its slot reused
 * by then) is recognised and dropped. Requests wait in a queue until HELLO has
 * been answered and while the node's announced outstanding limit is reached.
 *
 * Receiving. Over plaintext the connection reads its socket itself (the
 * bufferevent only writes and connects): when a GET answer chunk's header has
 * arrived, the rest of its body is read with readv() straight into the
 * caller's buffer, and only what follows it (the next headers, a few KiB)
 * lands in a staging area and an evbuffer. Going through libevent's input
 * buffer instead costs a second copy of every byte (socket -> evbuffer ->
 * buffer) and, with large reads, fresh evbuffer chains to fault in; on
 * loopback that halved what one client thread could take in (cached_bench,
 * warm RAM tier over 4 connections: about 1.1 GiB/s before, 2.0-2.4 after):
 *
 *   readv(fd, [ rest of the chunk body -> r->buf + bytes ][ stage (8 KiB) ])
 *                                                             |
 *                         headers, small answers, the start of the next body
 *
 * Over TLS the bytes must be decrypted into some buffer first, so the
 * bufferevent reads and whole frames are copied out of its input buffer.
 */
#include "cacheconn.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/util.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define CC_SLOTS     4096u
#define CC_SLOT_MASK (CC_SLOTS - 1)
#define CC_PUT_CHUNK (256u * 1024)
#define CC_OUT_HIGH  (2u * 1024 * 1024)
/* Bytes read past a chunk body per readv: enough for the next headers and a
 * small answer, little enough that copying them out costs next to nothing. */
#define CC_STAGE (8u * 1024)
/* Bytes one read callback takes from the socket before it lets the loop run
 * other connections (the event is level-triggered: it comes back). */
#define CC_RX_BUDGET (2u * 1024 * 1024)
/* The most bytes the socket is asked to gather (SO_RCVLOWAT) before it says
 * it is readable, while the rest of a frame is known to be on its way: a
 * whole chunk body of a node's answer (256 KiB by default) and the next
 * header. */
#define CC_LOWAT_MAX (1024u * 1024)

typedef struct cc_req cc_req;
struct cc_req {
    cc_conn *c;
    cc_req *next; /* in the pending queue */
    uint32_t id;
    uint8_t op;
    cc_done_fn done;
    void *arg;
    uint8_t *body; /* the request's body, sent when it leaves the queue */
    size_t body_len;
    bool sent;         /* out of the queue and on the wire (a PING or STATS has
                                   no body, so a NULL body does not say it) */
    const void *extra; /* PUT_BLOCK data, appended after body */
    size_t extra_len;
    void *buf; /* GET */
    size_t cap;
    bool head_seen;
    uint32_t want;
    cc_read_fn read_fn; /* PUT */
    void *read_arg;
    uint64_t put_size, put_sent;
    bool put_done;
    bool cancelled;
    struct event *timer;
    cc_result res;
    char *text; /* STATS */
    size_t text_len;
};

struct cc_conn {
    struct event_base *base;
    struct bufferevent *bev;
    struct event *connect_timer;
    cc_config cfg;
    char host[256];
    char tls_ca[512];
    char tls_name[256]; /* name verified (and sent as SNI); "" = host */
    SSL_CTX *ssl_ctx;
    char token[RCP_MAX_STRING + 1];
    char name[64];
    bool ready, broken, connected;
    int64_t last_rx_ms; /* CLOCK_MONOTONIC of the last bytes received (or of
                                   the creation): how long the node has been silent */
    int busy;           /* > 0 while callbacks run from our events */
    bool zombie;        /* destroyed while busy: free when not */
    rcp_hello_resp hello;
    char node_id[RCP_MAX_NAME + 1], tenant[BKEY_TENANT_MAX + 1];
    cc_req *slots[CC_SLOTS];
    uint32_t gen;
    size_t outstanding; /* sent, not answered */
    size_t in_slots;
    cc_req *pend_head, *pend_tail;
    cc_req *put_active; /* the PUT whose data is being streamed */
    /* plaintext receive path (see the top of the file) */
    bool own_rx; /* we read the socket, not the bufferevent */
    struct event *rx_ev;
    struct evbuffer *rx; /* read, not parsed yet */
    size_t rx_need;      /* bytes the frame at the front of rx still lacks */
    cc_req *rx_req;      /* whose buffer the chunk body goes to; NULL: discard */
    uint8_t *rx_dst;
    size_t rx_left;     /* chunk body bytes still to come from the socket */
    bool rx_more;       /* that chunk is not the answer's last */
    int rx_lowat;       /* the socket's SO_RCVLOWAT now (1: the default) */
    int rx_queued_seen; /* bytes below it at the last cc_conn_last_rx_ms */
    uint8_t stage[CC_STAGE];
};

static void cc_fail_all(cc_conn *c, int code, int rcp_code, const char *msg);
static void cc_flush(cc_conn *c);

static int64_t cc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
static void cc_pump_put(cc_conn *c);

/* ---- requests ------------------------------------------------------------- */

static void cc_req_free(cc_req *r)
{
    if (r->timer)
        event_free(r->timer);
    free(r->body);
    free(r->text);
    free(r);
}

/* Finish r: remove it from its slot, run the callback, free it. */
static void cc_finish(cc_req *r, int code, int rcp_code, const char *msg)
{
    cc_conn *c = r->c;
    uint32_t slot = r->id & CC_SLOT_MASK;
    if (c->slots[slot] == r) {
        c->slots[slot] = NULL;
        c->in_slots--;
    }
    if (c->put_active == r)
        c->put_active = NULL;
    if (c->rx_req == r) {
        /* timed out or cancelled in the middle of a chunk: the caller may
         * free its buffer once told, so the rest of the chunk is discarded
         * (and no more of the answer may come: the node was told) */
        c->rx_req = NULL;
        c->rx_dst = NULL;
        c->rx_more = false;
    }
    r->res.code = code;
    r->res.rcp_code = rcp_code;
    if (msg)
        snprintf(r->res.message, sizeof(r->res.message), "%.255s", msg);
    r->res.text = r->text;
    r->res.text_len = r->text_len;
    c->busy++;
    r->done(&r->res, r->arg);
    c->busy--;
    cc_req_free(r);
}

static void cc_on_req_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    cc_req *r = arg;
    cc_conn *c = r->c;
    bool sent = r->sent;
    if (sent && r->cancelled) {
        c->outstanding--; /* cc_cancel told the node already */
    } else if (sent && !c->broken && c->bev) {
        uint8_t b[RCP_HEADER_SIZE + 4];
        rcp_header h = {RCP_OP_CANCEL, 0, 0, 4};
        rcp_header_encode(&h, b);
        rcp_encode_cancel_req(r->id, b + RCP_HEADER_SIZE, 4);
        bufferevent_write(c->bev, b, sizeof(b));
        c->outstanding--;
    } else {
        /* still queued: unlink it */
        cc_req **pp = &c->pend_head;
        while (*pp && *pp != r)
            pp = &(*pp)->next;
        if (*pp) {
            *pp = r->next;
            if (c->pend_tail == r) {
                c->pend_tail = NULL;
                for (cc_req *q = c->pend_head; q; q = q->next)
                    c->pend_tail = q;
            }
        }
    }
    char msg[640];
    if (r->cancelled)
        snprintf(msg, sizeof(msg), "%s cancelled", rcp_op_name(r->op));
    else
        snprintf(msg, sizeof(msg), "%s to %s:%d got no answer within %d ms", rcp_op_name(r->op),
                 c->host, c->cfg.port, c->cfg.request_timeout_ms);
    c->busy++;
    cc_finish(r, r->cancelled ? -ECANCELED : -ETIMEDOUT, 0, msg);
    c->busy--;
    cc_flush(c);
}

static int cc_submit(cc_conn *c, uint8_t op, uint8_t *body, size_t body_len, cc_done_fn done,
                     void *arg, cc_req **out)
{
    if (c->broken) {
        free(body);
        return -EPIPE;
    }
    if (c->in_slots >= CC_SLOTS - 1) {
        free(body);
        return -EAGAIN;
    }
    cc_req *r = calloc(1, sizeof(*r));
    if (!r) {
        free(body);
        return -ENOMEM;
    }
    r->c = c;
    r->op = op;
    r->done = done;
    r->arg = arg;
    r->body = body;
    r->body_len = body_len;
    uint32_t slot = 0;
    for (uint32_t k = 0; k < CC_SLOTS; k++) {
        c->gen++;
        slot = c->gen & CC_SLOT_MASK;
        if (slot != 0 && !c->slots[slot])
            break;
    }
    r->id = ((c->gen >> 12) << 12 | slot) & 0x7fffffffu;
    if (r->id == 0)
        r->id = slot;
    c->slots[slot] = r;
    c->in_slots++;
    r->timer = evtimer_new(c->base, cc_on_req_timeout, r);
    if (!r->timer) {
        c->slots[slot] = NULL;
        c->in_slots--;
        cc_req_free(r);
        return -ENOMEM;
    }
    struct timeval tv = {c->cfg.request_timeout_ms / 1000,
                         (c->cfg.request_timeout_ms % 1000) * 1000};
    evtimer_add(r->timer, &tv);
    if (c->pend_tail)
        c->pend_tail->next = r;
    else
        c->pend_head = r;
    c->pend_tail = r;
    if (out)
        *out = r;
    /* not flushed here: the caller fills the request's data first, then
     * calls cc_flush (a PUT_BLOCK or a PUT must not leave without its data) */
    return 0;
}

static void cc_write_frame(cc_conn *c, uint8_t op, uint16_t flags, uint32_t id, const void *body,
                           size_t len, const void *extra, size_t extra_len)
{
    uint8_t h[RCP_HEADER_SIZE];
    rcp_header hd = {op, flags, id, (uint32_t)(len + extra_len)};
    rcp_header_encode(&hd, h);
    struct evbuffer *out = bufferevent_get_output(c->bev);
    evbuffer_add(out, h, sizeof(h));
    if (len)
        evbuffer_add(out, body, len);
    if (extra_len)
        evbuffer_add(out, extra, extra_len);
}

/* Send queued requests while the node's outstanding limit allows. */
static void cc_flush(cc_conn *c)
{
    if (!c->ready || c->broken)
        return;
    size_t limit = c->hello.max_outstanding ? c->hello.max_outstanding : 64;
    while (c->pend_head && c->outstanding < limit) {
        cc_req *r = c->pend_head;
        if (r->op == RCP_OP_PUT && c->put_active)
            break; /* one streamed PUT at a time keeps its data frames contiguous */
        c->pend_head = r->next;
        if (!c->pend_head)
            c->pend_tail = NULL;
        r->next = NULL;
        cc_write_frame(c, r->op, 0, r->id, r->body, r->body_len, r->extra, r->extra_len);
        free(r->body);
        r->body = NULL;
        r->sent = true;
        c->outstanding++;
        if (r->op == RCP_OP_PUT) {
            c->put_active = r;
            cc_pump_put(c);
        }
    }
}

/* Stream the active PUT's data while the output buffer has room. */
static void cc_pump_put(cc_conn *c)
{
    cc_req *r = c->put_active;
    if (!r || r->put_done || c->broken)
        return;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    static uint8_t chunk[CC_PUT_CHUNK];
    while (evbuffer_get_length(out) < CC_OUT_HIGH) {
        uint64_t left = r->put_size - r->put_sent;
        size_t want = left < CC_PUT_CHUNK ? (size_t)left : CC_PUT_CHUNK;
        int64_t n = want ? r->read_fn(chunk, want, r->read_arg) : 0;
        if (n < 0 || (n == 0 && left > 0)) {
            /* the source failed: the stream cannot be finished, close */
            char msg[640];
            snprintf(msg, sizeof(msg), "PUT: the data source failed after %llu of %llu bytes",
                     (unsigned long long)r->put_sent, (unsigned long long)r->put_size);
            cc_fail_all(c, n < 0 ? (int)n : -EIO, 0, msg);
            return;
        }
        r->put_sent += (uint64_t)n;
        bool last = r->put_sent == r->put_size;
        cc_write_frame(c, RCP_OP_PUT_DATA, last ? 0 : RCP_F_MORE, r->id, chunk, (size_t)n, NULL, 0);
        if (last) {
            r->put_done = true;
            c->put_active = NULL;
            cc_flush(c);
            return;
        }
    }
}

/* ---- connection events ------------------------------------------------------ */

static void cc_fail_all(cc_conn *c, int code, int rcp_code, const char *msg)
{
    c->broken = true;
    c->ready = false;
    c->put_active = NULL;
    if (c->rx_ev) {
        event_free(c->rx_ev); /* before the bufferevent closes the socket */
        c->rx_ev = NULL;
    }
    c->rx_left = 0;
    if (c->bev) {
        bufferevent_free(c->bev);
        c->bev = NULL;
    }
    c->busy++;
    while (c->pend_head) {
        cc_req *r = c->pend_head;
        c->pend_head = r->next;
        cc_finish(r, code, rcp_code, msg);
    }
    c->pend_tail = NULL;
    for (uint32_t i = 0; i < CC_SLOTS; i++)
        if (c->slots[i])
            cc_finish(c->slots[i], code, rcp_code, msg);
    c->busy--;
    c->outstanding = 0;
}

static void cc_send_hello(cc_conn *c)
{
    uint8_t b[RCP_MAX_HELLO_BODY];
    rcp_hello_req h = {RCP_VERSION, RCP_VERSION, rcp_s(c->token), c->cfg.block_size,
                       rcp_s(c->name)};
    int n = rcp_encode_hello_req(&h, b, sizeof(b));
    if (n < 0) {
        cc_fail_all(c, -EINVAL, 0, "the token is too long");
        return;
    }
    cc_write_frame(c, RCP_OP_HELLO, 0, 0, b, (size_t)n, NULL, 0);
}

/* The body of a GET answer chunk is all in the caller's buffer. */
static int cc_get_body_done(cc_conn *c, cc_req *r, bool more)
{
    if (more)
        return 0;
    c->outstanding--;
    if (r->res.bytes != r->want)
        return -EPROTO;
    cc_finish(r, 0, 0, NULL);
    return 0;
}

/* A chunk of GET answer r: its header is consumed, `avail` (<= h->len) bytes
 * of its body are at the front of in. Consumes them: the answer head (first
 * chunk), then data into the caller's buffer. Whatever the chunk lacks is
 * left in c->rx_left for the socket to deliver straight into the buffer (own
 * receive path only; otherwise avail == h->len). 0, or -EPROTO. */
static int cc_get_chunk(cc_conn *c, const rcp_header *h, cc_req *r, struct evbuffer *in,
                        size_t avail)
{
    bool more = h->flags & RCP_F_MORE;
    size_t len = h->len;
    if (!r->head_seen) {
        uint8_t hb[RCP_GET_RESP_HEAD_SIZE];
        rcp_get_resp_head gh;
        if (len < RCP_GET_RESP_HEAD_SIZE || avail < RCP_GET_RESP_HEAD_SIZE)
            return -EPROTO; /* callers give at least the head */
        evbuffer_remove(in, hb, sizeof(hb));
        len -= sizeof(hb);
        avail -= sizeof(hb);
        if (rcp_parse_get_resp_head(hb, sizeof(hb), &gh) < 0)
            return -EPROTO;
        r->head_seen = true;
        r->want = gh.length;
        r->res.source = gh.source;
        if (gh.length > r->cap) {
            evbuffer_drain(in, avail);
            c->rx_req = NULL; /* the rest of the chunk, if any, is discarded */
            c->rx_dst = NULL;
            c->rx_left = len - avail;
            c->rx_more = false;
            c->outstanding--;
            if (more)
                cc_cancel(c, r->id);
            cc_finish(r, -ENOBUFS, 0, "the answer is larger than the buffer");
            return 0;
        }
    }
    if (r->res.bytes + len > r->want)
        return -EPROTO;
    uint8_t *dst = (uint8_t *)r->buf + r->res.bytes;
    evbuffer_remove(in, dst, avail);
    r->res.bytes += (uint32_t)avail;
    if (avail < len) {
        c->rx_req = r;
        c->rx_dst = dst + avail;
        c->rx_left = len - avail;
        c->rx_more = more;
        return 0;
    }
    return cc_get_body_done(c, r, more);
}

/* One whole frame is at the front of in (header + body). Consumes it. */
static int cc_on_frame(cc_conn *c, const rcp_header *h, struct evbuffer *in)
{
    evbuffer_drain(in, RCP_HEADER_SIZE);
    if (!(h->flags & RCP_F_RESPONSE)) {
        evbuffer_drain(in, h->len);
        return -EPROTO;
    }
    if (h->id == 0) { /* HELLO answer, or an error about the connection */
        uint8_t *body = evbuffer_pullup(in, h->len);
        if (h->op == RCP_OP_HELLO) {
            rcp_hello_resp hr;
            if (rcp_parse_hello_resp(body, h->len, &hr) < 0 || hr.version != RCP_VERSION) {
                evbuffer_drain(in, h->len);
                return -EPROTO;
            }
            rcp_str_copy(hr.node_id, c->node_id, sizeof(c->node_id));
            rcp_str_copy(hr.tenant, c->tenant, sizeof(c->tenant));
            c->hello = hr;
            c->hello.node_id = rcp_s(c->node_id);
            c->hello.tenant = rcp_s(c->tenant);
            evbuffer_drain(in, h->len);
            if (c->cfg.block_size && hr.block_size != c->cfg.block_size) {
                char msg[640];
                snprintf(msg, sizeof(msg),
                         "cache node %s:%d uses %u-byte blocks, this client %u: use one block "
                         "size per cluster",
                         c->host, c->cfg.port, hr.block_size, c->cfg.block_size);
                cc_fail_all(c, -EREMOTEIO, RCP_E_BAD_REQUEST, msg);
                return 1;
            }
            c->ready = true;
            cc_flush(c);
            return 0;
        }
        rcp_error e;
        char msg[640] = "the node closed the connection";
        int code = RCP_E_PROTOCOL;
        if (h->op == RCP_OP_ERROR && rcp_parse_error(body, h->len, &e) == 0) {
            code = e.code;
            snprintf(msg, sizeof(msg), "%s:%d: %.*s", c->host, c->cfg.port, e.message.len,
                     e.message.p);
        }
        evbuffer_drain(in, h->len);
        cc_fail_all(c, -EREMOTEIO, code, msg); /* everything fails with the node's words */
        return 1;
    }
    uint32_t slot = h->id & CC_SLOT_MASK;
    cc_req *r = c->slots[slot];
    if (!r || r->id != h->id || !r->sent ||
        r->cancelled) { /* timed out, cancelled, or never sent */
        evbuffer_drain(in, h->len);
        return 0;
    }
    bool more = h->flags & RCP_F_MORE;
    if (h->op == RCP_OP_ERROR) {
        uint8_t *body = evbuffer_pullup(in, h->len);
        rcp_error e;
        if (rcp_parse_error(body, h->len, &e) < 0) {
            evbuffer_drain(in, h->len);
            return -EPROTO;
        }
        char msg[640];
        snprintf(msg, sizeof(msg), "%.*s", e.message.len, e.message.p);
        evbuffer_drain(in, h->len);
        c->outstanding--;
        cc_finish(r, e.code == RCP_E_CANCELED ? -ECANCELED : -EREMOTEIO, e.code, msg);
        return 0;
    }
    if (h->op != r->op) {
        evbuffer_drain(in, h->len);
        return -EPROTO;
    }
    if (r->op == RCP_OP_GET)
        return cc_get_chunk(c, h, r, in, h->len);
    uint8_t *body = evbuffer_pullup(in, h->len);
    int rc = 0;
    switch (r->op) {
    case RCP_OP_HEAD: {
        rcp_head_resp hr;
        rc = rcp_parse_head_resp(body, h->len, &hr);
        if (!rc) {
            r->res.size = hr.size;
            rcp_str_copy(hr.version, r->res.version, sizeof(r->res.version));
        }
        break;
    }
    case RCP_OP_PUT: {
        rcp_put_resp pr;
        rc = rcp_parse_put_resp(body, h->len, &pr);
        if (!rc) {
            r->res.size = pr.size;
            rcp_str_copy(pr.version, r->res.version, sizeof(r->res.version));
        }
        break;
    }
    case RCP_OP_STATS: {
        char *t = realloc(r->text, r->text_len + h->len + 1);
        if (!t) {
            rc = -ENOMEM;
            break;
        }
        memcpy(t + r->text_len, body, h->len);
        r->text = t;
        r->text_len += h->len;
        t[r->text_len] = '\0';
        break;
    }
    case RCP_OP_WARM:
        if (h->len == 4)
            r->res.count = (uint32_t)body[0] | (uint32_t)body[1] << 8 | (uint32_t)body[2] << 16 |
                           (uint32_t)body[3] << 24;
        break;
    default: break; /* PING, PUT_BLOCK: an empty body */
    }
    evbuffer_drain(in, h->len);
    if (rc < 0)
        return -EPROTO;
    if (!more) {
        c->outstanding--;
        cc_finish(r, 0, 0, NULL);
    }
    return 0;
}

static void cc_maybe_free(cc_conn *c);

static void cc_fail_protocol(cc_conn *c, const rcp_header *h)
{
    char msg[640];
    snprintf(msg, sizeof(msg), "cache node %s:%d broke the protocol (%s answer)", c->host,
             c->cfg.port, rcp_op_name(h->op));
    cc_fail_all(c, -EPROTO, 0, msg);
}

/* The live GET a chunk with this header belongs to, or NULL (timed out,
 * cancelled, or not a GET answer). */
static cc_req *cc_get_target(cc_conn *c, const rcp_header *h)
{
    if (!(h->flags & RCP_F_RESPONSE) || h->op != RCP_OP_GET || h->id == 0)
        return NULL;
    cc_req *r = c->slots[h->id & CC_SLOT_MASK];
    if (!r || r->id != h->id || !r->sent || r->cancelled || r->op != RCP_OP_GET)
        return NULL;
    return r;
}

/* Handles the frames at the front of in. On our own receive path a GET chunk
 * whose body is still arriving is started as soon as its header (and, in the
 * first chunk, the answer head) is here: the rest then comes straight from the
 * socket into the caller's buffer. Stops at an incomplete frame (c->rx_need:
 * the bytes it lacks), at a chunk body still to come, or when the connection
 * failed. */
static void cc_parse(cc_conn *c, struct evbuffer *in)
{
    c->rx_need = 0;
    while (!c->broken && c->rx_left == 0) {
        uint8_t hb[RCP_HEADER_SIZE];
        size_t have = evbuffer_get_length(in);
        if (have < RCP_HEADER_SIZE) {
            c->rx_need = RCP_HEADER_SIZE - have;
            break;
        }
        evbuffer_copyout(in, hb, sizeof(hb));
        rcp_header h;
        if (rcp_header_decode(hb, RCP_MAX_FRAME_BODY, &h) < 0) {
            char msg[640];
            snprintf(msg, sizeof(msg), "cache node %s:%d sent a corrupt frame", c->host,
                     c->cfg.port);
            cc_fail_all(c, -EPROTO, 0, msg);
            break;
        }
        size_t avail = have - RCP_HEADER_SIZE;
        int rc = 0;
        if (avail >= h.len) {
            rc = cc_on_frame(c, &h, in);
        } else if (c->own_rx && (h.flags & RCP_F_RESPONSE) && h.op == RCP_OP_GET && h.id != 0) {
            cc_req *r = cc_get_target(c, &h);
            size_t head = r && !r->head_seen ? RCP_GET_RESP_HEAD_SIZE : 0;
            if (head > h.len)
                head = h.len;
            if (avail < head) {
                c->rx_need = head - avail;
                break;
            }
            evbuffer_drain(in, RCP_HEADER_SIZE);
            if (r) {
                rc = cc_get_chunk(c, &h, r, in, avail);
            } else { /* an answer nobody waits for any more: read past it */
                evbuffer_drain(in, avail);
                c->rx_req = NULL;
                c->rx_dst = NULL;
                c->rx_left = h.len - avail;
                c->rx_more = false;
            }
        } else {
            c->rx_need = h.len - avail;
            break;
        }
        if (rc < 0) {
            cc_fail_protocol(c, &h);
            break;
        }
    }
}

/* TLS: the bufferevent reads and decrypts; whole frames are copied out. */
static void cc_on_read(struct bufferevent *bev, void *arg)
{
    cc_conn *c = arg;
    c->busy++;
    c->last_rx_ms = cc_now_ms();
    cc_parse(c, bufferevent_get_input(bev));
    c->busy--;
    cc_maybe_free(c);
}

/* Plaintext, between reads: while the rest of a frame is on its way (a chunk
 * body, or the tail of a header), the socket wakes the loop only once that
 * much has arrived (up to CC_LOWAT_MAX), not for every segment: a link that
 * delivers a block a few KiB at a time (a capped one) costs a wake-up per
 * chunk instead of one per segment. A chunk that is not its answer's last is
 * followed by another frame (the answer's next chunk, or an error): its
 * header is waited for too, so the body and the next header take one
 * wake-up, and nothing waits on a request that could complete. Otherwise, at
 * a frame boundary, it wakes for the first byte again. The bytes waited for
 * are sure to come (a node writes a chunk whole, or closes), and every
 * request keeps its deadline. */
static void cc_rx_lowat(cc_conn *c, evutil_socket_t fd)
{
    size_t need = c->rx_left ? c->rx_left + (c->rx_more ? RCP_HEADER_SIZE : 0) : c->rx_need;
    int want = need > CC_LOWAT_MAX ? (int)CC_LOWAT_MAX : need > 1 ? (int)need : 1;
    if (want == c->rx_lowat || c->broken)
        return;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &want, sizeof(want)) == 0)
        c->rx_lowat = want;
}

/* Plaintext: the socket is readable (the event is level-triggered). */
static void cc_on_rx(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    cc_conn *c = arg;
    c->busy++;
    size_t got = 0;
    while (!c->broken && got < CC_RX_BUDGET) {
        struct iovec iov[2];
        int n = 0;
        size_t body = c->rx_left, want = 0;
        ssize_t k;
        if (body && !c->rx_dst) {
            /* discarding: the stage is scratch, nothing is read past the body */
            body = body < sizeof(c->stage) ? body : sizeof(c->stage);
            iov[n++] = (struct iovec){c->stage, body};
        } else {
            if (body)
                iov[n++] = (struct iovec){c->rx_dst, body};
            iov[n++] = (struct iovec){c->stage, sizeof(c->stage)};
        }
        for (int i = 0; i < n; i++)
            want += iov[i].iov_len;
        if (!body && c->rx_need > sizeof(c->stage)) {
            /* a large answer that is not block data (STATS): into the buffer whole */
            want = c->rx_need < (1u << 20) ? c->rx_need : (1u << 20);
            k = evbuffer_read(c->rx, fd, (int)want);
        } else {
            k = readv(fd, iov, n);
        }
        if (k < 0) {
            int err = errno;
            if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR)
                break;
            char msg[640];
            snprintf(msg, sizeof(msg), "the connection to cache node %s:%d failed: %s", c->host,
                     c->cfg.port, strerror(err));
            cc_fail_all(c, -ECONNRESET, 0, msg);
            break;
        }
        if (k == 0) {
            char msg[640];
            snprintf(msg, sizeof(msg), "cache node %s:%d closed the connection", c->host,
                     c->cfg.port);
            cc_fail_all(c, -ECONNRESET, 0, msg);
            break;
        }
        got += (size_t)k;
        c->last_rx_ms = cc_now_ms();
        c->rx_queued_seen = 0;
        if (!body && c->rx_need > sizeof(c->stage)) {
            cc_parse(c, c->rx); /* evbuffer_read put the bytes in rx */
        } else {
            size_t to_body = (size_t)k < body ? (size_t)k : body;
            size_t extra = (size_t)k - to_body;
            if (to_body) {
                c->rx_left -= to_body;
                if (c->rx_dst) {
                    c->rx_dst += to_body;
                    c->rx_req->res.bytes += (uint32_t)to_body;
                }
                if (c->rx_left == 0) {
                    cc_req *r = c->rx_req;
                    c->rx_req = NULL;
                    c->rx_dst = NULL;
                    if (r && cc_get_body_done(c, r, c->rx_more) < 0) {
                        rcp_header h = {RCP_OP_GET, 0, r->id, 0};
                        cc_fail_protocol(c, &h);
                        break;
                    }
                }
            }
            if (extra)
                evbuffer_add(c->rx, c->stage, extra);
            if (!c->rx_left)
                cc_parse(c, c->rx);
        }
        if ((size_t)k < want)
            break; /* the socket is empty for now */
    }
    if (!c->broken)
        cc_rx_lowat(c, fd);
    c->busy--;
    cc_maybe_free(c);
}

static void cc_on_write(struct bufferevent *bev, void *arg)
{
    (void)bev;
    cc_conn *c = arg;
    c->busy++;
    cc_pump_put(c);
    c->busy--;
    cc_maybe_free(c);
}

static void cc_on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    cc_conn *c = arg;
    c->busy++;
    if (what & BEV_EVENT_CONNECTED) {
        c->connected = true;
        evtimer_del(c->connect_timer);
        evutil_socket_t fd = bufferevent_getfd(c->bev);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (c->own_rx) {
            c->rx_ev = event_new(c->base, fd, EV_READ | EV_PERSIST, cc_on_rx, c);
            if (!c->rx_ev || event_add(c->rx_ev, NULL) < 0) {
                cc_fail_all(c, -ENOMEM, 0, "out of memory setting up a cache node connection");
                c->busy--;
                cc_maybe_free(c);
                return;
            }
        }
        cc_send_hello(c);
    } else if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        char msg[640];
        int err = EVUTIL_SOCKET_ERROR();
        unsigned long tls_err = c->cfg.tls ? bufferevent_get_openssl_error(c->bev) : 0;
        if (tls_err) {
            char why[256];
            ERR_error_string_n(tls_err, why, sizeof(why));
            /* what the verification objected to (the CA, the name, the dates)
             * comes first: messages are cut at 255 bytes */
            SSL *ssl = bufferevent_openssl_get_ssl(c->bev);
            long vr = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
            if (vr != X509_V_OK)
                snprintf(msg, sizeof(msg),
                         "TLS with cache node %s:%d failed: certificate verify failed: %s "
                         "(its certificate must name %.200s and be signed by the CA file "
                         "given to the client)",
                         c->host, c->cfg.port, X509_verify_cert_error_string(vr),
                         c->tls_name[0] ? c->tls_name : c->host);
            else
                snprintf(msg, sizeof(msg),
                         "TLS with cache node %s:%d failed: %s (check the node's certificate "
                         "and the CA file given to the client)",
                         c->host, c->cfg.port, why);
            cc_fail_all(c, -EPROTO, 0, msg);
            c->busy--;
            cc_maybe_free(c);
            return;
        }
        if (!c->connected)
            snprintf(msg, sizeof(msg), "cannot connect to cache node %s:%d: %s", c->host,
                     c->cfg.port, err ? strerror(err) : "connection failed");
        else
            snprintf(msg, sizeof(msg), "cache node %s:%d closed the connection", c->host,
                     c->cfg.port);
        cc_fail_all(c, c->connected ? -ECONNRESET : -ECONNREFUSED, 0, msg);
    }
    c->busy--;
    cc_maybe_free(c);
}

static void cc_on_connect_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    cc_conn *c = arg;
    if (c->connected)
        return;
    char msg[640];
    snprintf(msg, sizeof(msg), "cannot connect to cache node %s:%d within %d ms", c->host,
             c->cfg.port, c->cfg.connect_timeout_ms);
    c->busy++;
    cc_fail_all(c, -ETIMEDOUT, 0, msg);
    c->busy--;
    cc_maybe_free(c);
}

int cc_conn_create(cc_conn **out, struct event_base *base, const cc_config *cfg)
{
    if (!cfg->host || cfg->port <= 0 || cfg->port > 65535)
        return -EINVAL;
    cc_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->base = base;
    c->cfg = *cfg;
    c->last_rx_ms = cc_now_ms();
    c->rx_lowat = 1;
    snprintf(c->host, sizeof(c->host), "%s", cfg->host);
    snprintf(c->token, sizeof(c->token), "%s", cfg->token ? cfg->token : "");
    snprintf(c->name, sizeof(c->name), "%s", cfg->client_name ? cfg->client_name : "client");
    c->cfg.host = c->host;
    c->cfg.token = c->token;
    c->cfg.client_name = c->name;
    if (c->cfg.connect_timeout_ms <= 0)
        c->cfg.connect_timeout_ms = 2000;
    if (c->cfg.request_timeout_ms <= 0)
        c->cfg.request_timeout_ms = 30000;

    struct sockaddr_storage ss;
    int sslen = sizeof(ss);
    char hp[300];
    if (strchr(c->host, ':'))
        snprintf(hp, sizeof(hp), "[%s]:%d", c->host, cfg->port);
    else
        snprintf(hp, sizeof(hp), "%s:%d", c->host, cfg->port);
    if (evutil_parse_sockaddr_port(hp, (struct sockaddr *)&ss, &sslen) != 0) {
        struct addrinfo hints = {0}, *ai = NULL;
        hints.ai_socktype = SOCK_STREAM;
        char port[8];
        snprintf(port, sizeof(port), "%d", cfg->port);
        if (getaddrinfo(c->host, port, &hints, &ai) != 0 || !ai) {
            free(c);
            return -EHOSTUNREACH;
        }
        memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
        sslen = (int)ai->ai_addrlen;
        freeaddrinfo(ai);
    }
    if (cfg->tls) {
        snprintf(c->tls_ca, sizeof(c->tls_ca), "%s", cfg->tls_ca ? cfg->tls_ca : "");
        c->cfg.tls_ca = c->tls_ca;
        c->ssl_ctx = SSL_CTX_new(TLS_client_method());
        SSL *ssl = c->ssl_ctx ? SSL_new(c->ssl_ctx) : NULL;
        if (!ssl || (c->tls_ca[0] ? SSL_CTX_load_verify_locations(c->ssl_ctx, c->tls_ca, NULL)
                                  : SSL_CTX_set_default_verify_paths(c->ssl_ctx)) != 1) {
            if (ssl)
                SSL_free(ssl);
            SSL_CTX_free(c->ssl_ctx);
            free(c);
            return -EINVAL; /* no usable CA file */
        }
        SSL_set_verify(ssl, SSL_VERIFY_PEER, NULL);
        /* the node's certificate must name the address we dial, or the name it
         * was resolved from (a shared certificate cannot list pod IPs) */
        snprintf(c->tls_name, sizeof(c->tls_name), "%s", cfg->tls_name ? cfg->tls_name : "");
        c->cfg.tls_name = c->tls_name;
        X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
        if (c->tls_name[0]) {
            X509_VERIFY_PARAM_set1_host(vp, c->tls_name, 0);
            SSL_set_tlsext_host_name(ssl, c->tls_name);
        } else if (X509_VERIFY_PARAM_set1_ip_asc(vp, c->host) != 1) {
            X509_VERIFY_PARAM_set1_host(vp, c->host, 0);
            SSL_set_tlsext_host_name(ssl, c->host);
        }
        c->bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                                BEV_OPT_CLOSE_ON_FREE);
    } else {
        c->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    }
    c->connect_timer = evtimer_new(base, cc_on_connect_timeout, c);
    c->own_rx = !cfg->tls;
    c->rx = c->own_rx ? evbuffer_new() : NULL;
    if (!c->bev || !c->connect_timer || (c->own_rx && !c->rx)) {
        if (c->bev)
            bufferevent_free(c->bev);
        if (c->connect_timer)
            event_free(c->connect_timer);
        if (c->rx)
            evbuffer_free(c->rx);
        SSL_CTX_free(c->ssl_ctx);
        free(c);
        return -ENOMEM;
    }
    /* libevent reads and writes 16 KiB per call by default: far too little for
     * 1 MiB blocks (most of the cost would be callbacks) */
    bufferevent_set_max_single_read(c->bev, 1u << 20);
    bufferevent_set_max_single_write(c->bev, 1u << 20);
    bufferevent_setcb(c->bev, cc_on_read, cc_on_write, cc_on_event, c);
    bufferevent_setwatermark(c->bev, EV_WRITE, CC_OUT_HIGH / 2, 0);
    /* plaintext: the bufferevent writes and connects, cc_on_rx reads */
    bufferevent_enable(c->bev, c->own_rx ? EV_WRITE : EV_READ | EV_WRITE);
    struct timeval tv = {c->cfg.connect_timeout_ms / 1000,
                         (c->cfg.connect_timeout_ms % 1000) * 1000};
    evtimer_add(c->connect_timer, &tv);
    if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&ss, sslen) < 0) {
        /* reported through the event callback on the loop */
    }
    *out = c;
    return 0;
}

int cc_tls_check_ca(const char *ca_file, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        snprintf(err, errlen, "cannot set up TLS (out of memory)");
        return -ENOMEM;
    }
    ERR_clear_error();
    int ok = ca_file && ca_file[0] ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL)
                                   : SSL_CTX_set_default_verify_paths(ctx);
    SSL_CTX_free(ctx);
    if (ok == 1)
        return 0;
    char why[256];
    ERR_error_string_n(ERR_get_error(), why, sizeof(why));
    ERR_clear_error();
    if (ca_file && ca_file[0])
        snprintf(err, errlen,
                 "cannot load the CA file %s: %s (give a readable PEM file of "
                 "the CAs that signed the cache nodes' certificates)",
                 ca_file, why);
    else
        snprintf(err, errlen, "cannot load the system's CAs: %s (give a CA file)", why);
    return -EINVAL;
}

static void cc_free(cc_conn *c)
{
    if (c->rx_ev)
        event_free(c->rx_ev);
    if (c->rx)
        evbuffer_free(c->rx);
    if (c->bev)
        bufferevent_free(c->bev);
    if (c->connect_timer)
        event_free(c->connect_timer);
    SSL_CTX_free(c->ssl_ctx);
    free(c);
}

static void cc_maybe_free(cc_conn *c)
{
    if (c->zombie && c->busy == 0)
        cc_free(c);
}

void cc_conn_destroy(cc_conn **cp)
{
    if (!cp || !*cp)
        return;
    cc_conn *c = *cp;
    *cp = NULL;
    if (c->zombie)
        return;
    cc_fail_all(c, -ECANCELED, 0, "cancelled: the connection was closed by its owner");
    c->zombie = true;
    cc_maybe_free(c);
}

bool cc_conn_broken(const cc_conn *c)
{
    return c->broken;
}
int64_t cc_conn_last_rx_ms(cc_conn *c)
{
    /* below SO_RCVLOWAT the loop is not woken for arriving bytes: a node
     * whose chunk trickles in over a slow link is talking all the same */
    int queued = 0;
    evutil_socket_t fd = c->bev ? bufferevent_getfd(c->bev) : -1;
    if (c->rx_lowat > 1 && fd >= 0 && ioctl(fd, FIONREAD, &queued) == 0 &&
        queued > c->rx_queued_seen) {
        c->rx_queued_seen = queued;
        c->last_rx_ms = cc_now_ms();
    }
    return c->last_rx_ms;
}
const rcp_hello_resp *cc_conn_hello(const cc_conn *c)
{
    return &c->hello;
}
size_t cc_conn_outstanding(const cc_conn *c)
{
    return c->in_slots;
}

/* ---- operations ---------------------------------------------------------------- */

static uint8_t *cc_body(size_t cap)
{
    return malloc(cap ? cap : 1);
}

int cc_get(cc_conn *c, const rcp_get_req *req, void *buf, size_t cap, cc_done_fn done, void *arg,
           uint32_t *id_out)
{
    return cc_get_tenant(c, req, NULL, buf, cap, done, arg, id_out);
}

int cc_get_tenant(cc_conn *c, const rcp_get_req *req, const char *tenant, void *buf, size_t cap,
                  cc_done_fn done, void *arg, uint32_t *id_out)
{
    size_t bcap = RCP_GET_TENANT_REQ_MAX;
    uint8_t *b = cc_body(bcap);
    if (!b)
        return -ENOMEM;
    rcp_str t = rcp_s(tenant);
    int n = rcp_encode_get_req_tenant(req, tenant ? &t : NULL, b, bcap);
    if (n < 0) {
        free(b);
        return n;
    }
    cc_req *r;
    int rc = cc_submit(c, RCP_OP_GET, b, (size_t)n, done, arg, &r);
    if (rc < 0)
        return rc;
    r->buf = buf;
    r->cap = cap;
    if (id_out)
        *id_out = r->id;
    cc_flush(c);
    return 0;
}

int cc_head(cc_conn *c, const char *bucket, const char *key, cc_done_fn done, void *arg)
{
    return cc_head_id(c, bucket, key, done, arg, NULL);
}

int cc_head_id(cc_conn *c, const char *bucket, const char *key, cc_done_fn done, void *arg,
               uint32_t *id_out)
{
    size_t bcap = RCP_HEAD_REQ_MAX;
    uint8_t *b = cc_body(bcap);
    if (!b)
        return -ENOMEM;
    rcp_head_req h = {rcp_s(bucket), rcp_s(key)};
    int n = rcp_encode_head_req(&h, b, bcap);
    if (n < 0) {
        free(b);
        return n;
    }
    cc_req *r;
    int rc = cc_submit(c, RCP_OP_HEAD, b, (size_t)n, done, arg, &r);
    if (rc < 0)
        return rc;
    if (id_out)
        *id_out = r->id;
    cc_flush(c);
    return 0;
}

int cc_put_block(cc_conn *c, const rcp_put_block_req *req, cc_done_fn done, void *arg)
{
    size_t bcap = RCP_PUT_BLOCK_REQ_MAX;
    uint8_t *b = cc_body(bcap);
    if (!b)
        return -ENOMEM;
    int n = rcp_encode_put_block_req(req, b, bcap);
    if (n < 0) {
        free(b);
        return n;
    }
    cc_req *r;
    int rc = cc_submit(c, RCP_OP_PUT_BLOCK, b, (size_t)n, done, arg, &r);
    if (rc < 0)
        return rc;
    r->extra = req->data;
    r->extra_len = req->data_len;
    cc_flush(c);
    return 0;
}

int cc_drop(cc_conn *c, const rcp_drop_req *req, cc_done_fn done, void *arg)
{
    size_t bcap = 2 * RCP_MAX_KEY + 512;
    uint8_t *b = cc_body(bcap);
    if (!b)
        return -ENOMEM;
    int n = rcp_encode_drop_req(req, b, bcap);
    if (n < 0) {
        free(b);
        return n;
    }
    cc_req *r;
    int rc = cc_submit(c, RCP_OP_DROP, b, (size_t)n, done, arg, &r);
    if (rc < 0)
        return rc;
    cc_flush(c);
    return 0;
}

int cc_put(cc_conn *c, const char *bucket, const char *key, uint64_t size, cc_read_fn read_fn,
           void *read_arg, cc_done_fn done, void *arg)
{
    size_t bcap = RCP_PUT_REQ_MAX;
    uint8_t *b = cc_body(bcap);
    if (!b)
        return -ENOMEM;
    rcp_put_req p = {rcp_s(bucket), rcp_s(key), size};
    int n = rcp_encode_put_req(&p, b, bcap);
    if (n < 0) {
        free(b);
        return n;
    }
    cc_req *r;
    int rc = cc_submit(c, RCP_OP_PUT, b, (size_t)n, done, arg, &r);
    if (rc < 0)
        return rc;
    r->read_fn = read_fn;
    r->read_arg = read_arg;
    r->put_size = size;
    cc_flush(c);
    return 0;
}

int cc_warm(cc_conn *c, const rcp_object *obj, const uint64_t *blocks, uint32_t n, cc_done_fn done,
            void *arg)
{
    size_t bcap = RCP_WARM_REQ_MAX(n);
    uint8_t *b = cc_body(bcap);
    if (!b)
        return -ENOMEM;
    rcp_warm_req w = {*obj, n, NULL};
    int k = rcp_encode_warm_req(&w, blocks, b, bcap);
    if (k < 0) {
        free(b);
        return k;
    }
    int rc = cc_submit(c, RCP_OP_WARM, b, (size_t)k, done, arg, NULL);
    if (rc == 0)
        cc_flush(c);
    return rc;
}

int cc_stats(cc_conn *c, cc_done_fn done, void *arg)
{
    int rc = cc_submit(c, RCP_OP_STATS, NULL, 0, done, arg, NULL);
    if (rc == 0)
        cc_flush(c);
    return rc;
}

int cc_ping(cc_conn *c, cc_done_fn done, void *arg)
{
    int rc = cc_submit(c, RCP_OP_PING, NULL, 0, done, arg, NULL);
    if (rc == 0)
        cc_flush(c);
    return rc;
}

int cc_cancel(cc_conn *c, uint32_t id)
{
    cc_req *r = c->slots[id & CC_SLOT_MASK];
    if (!r || r->id != id)
        return -ENOENT;
    if (r->cancelled)
        return 0;
    if (r->sent && !c->broken && c->bev) { /* sent: tell the node */
        uint8_t b[RCP_HEADER_SIZE + 4];
        rcp_header h = {RCP_OP_CANCEL, 0, 0, 4};
        rcp_header_encode(&h, b);
        rcp_encode_cancel_req(id, b + RCP_HEADER_SIZE, 4);
        bufferevent_write(c->bev, b, sizeof(b));
    }
    /* finished from the loop (never inside this call); from now on nothing more
     * of its answer lands in the caller's buffer (the rest of a chunk being
     * received is read past), and a late answer for this id is dropped */
    r->cancelled = true;
    if (c->rx_req == r) {
        c->rx_req = NULL;
        c->rx_dst = NULL;
        c->rx_more = false;
    }
    evtimer_del(r->timer);
    event_active(r->timer, EV_TIMEOUT, 0);
    return 0;
}
