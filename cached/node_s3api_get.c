/* SPDX-License-Identifier: Apache-2.0
 *
 * node_s3api_get.c: GetObject and HeadObject on the S3 API (node_s3api.h).
 *
 *   version   the object's size, ETag and Last-Modified: the version cache
 *             (GetObject), else S3's HEAD (node_req_head, the tenant's
 *             credentials; HeadObject always), which refreshes the cache
 *   decide    conditionals, then Range (s3a_get.h): 304, 412, 416, or the
 *             bytes [first, last]
 *   blocks    the blocks covering them, the one being sent and up to
 *             --s3-api-readahead bytes ahead of it at once, each from
 *             its first owner on the ring that is not marked down: this
 *             node's store or fill (node_req_get), or the owner over the
 *             protocol (a GET for the tenant, with the peer token); an owner
 *             that fails is marked down and the next asked; when none is
 *             left, this node reads the block through (a fill from S3, the
 *             blocks it owns next in one ranged GET, in runs short enough
 *             that several GETs of S3 run at once); a node at --max-fills
 *             reads it from S3 without keeping it
 *   ahead     the blocks past the one being sent count against the node's
 *             --s3-api-readahead-max while they are fetched or wait, and
 *             are asked for only while fewer than half of --max-fills run:
 *             past either a GET asks only for the block it sends next. A GET that
 *             goes on from where an earlier one of the same version ended
 *             (a client reading range after range, as awscli's parts) also
 *             fetches the blocks past its range, as far as the read-ahead
 *             reaches, into the cache of their owners, and drops them: the
 *             next range finds them stored or filling
 *   answer    once the first block is here: the head (the origin's ETag and
 *             Last-Modified), then each block in order as it comes and as
 *             the client takes the bytes: a block is asked for only when the
 *             window has room, and the window moves only as the HTTP output
 *             drains, so a slow client holds at most the window and the
 *             output buffer
 *
 * Every block is asked for under the version of the head (the fill's
 * If-Match and the comparison of S3's ETag), so an object replaced in the
 * middle makes a block fail with "version changed": the answer is then cut
 * (the client sees a short body), never finished with another version's
 * bytes. Before anything is sent, the version is forgotten and asked again
 * once instead.
 */
#include "node_s3api.h"

#include "ring.h"
#include "s3a_get.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SLOTS     1024 /* blocks asked for or waiting to be sent, per GET */
#define PEER_DOWN_MS  5000 /* an owner that failed is not asked for this long */
#define MAX_OWNERS    3
#define FILL_RUN      8 /* blocks one fill from S3 may take (one ranged GET) */
#define FILL_PARALLEL 4 /* the ranged GETs of S3 one GET's blocks are spread over */

enum { S_FREE, S_FETCH, S_READY };
enum { F_NONE, F_LOCAL, F_PEER, F_S3 };

typedef struct ns3_slot {
    ns3_get *g;
    int state, kind;
    uint64_t index;
    uint32_t off, len;
    int owner; /* the next owner to try */
    bool tried_local, ram;
    bool ahead; /* its bytes are taken from the node's read-ahead */
    /* what came */
    const uint8_t *data;
    bs_buf *bs;
    node_buf *nb;
    int source;
    int code; /* RCP_E_* of a failure, 0 */
    char msg[256];
    /* what runs */
    node_req lr; /* F_LOCAL */
    cc_conn *cc; /* F_PEER */
    uint32_t cc_id;
    size_t peer;
} ns3_slot;

struct ns3_get {
    ns3_req *r;
    bool head, retried, started, ended, cut, pumping, again;
    bkey_object obj;
    ns3_meta meta;
    node_req hr;
    bool hr_active, head_ok;
    s3a_get_plan plan;
    uint64_t first_block, last_block, next_fetch, next_write;
    uint64_t fetch_last; /* last_block, or past it for a sequential reader */
    uint32_t run_cap;    /* the most blocks one fill from S3 takes */
    int inflight;
    uint32_t n_slots; /* the window: 1 + the read-ahead's blocks */
    ns3_slot slots[];
};

static void pump(ns3_get *g);
static void slot_next(ns3_slot *s);
static void get_begin(ns3_get *g);
static bool is_down(const node_worker *w, size_t idx);

/* ---- the slots' buffers ---------------------------------------------------------- */

static void slot_release(ns3_slot *s)
{
    if (s->ahead) {
        ns3_ra_release(s->g->r->w->n, s->len);
        s->ahead = false;
    }
    bs_buf_unref(&s->bs);
    node_buf_unref(s->nb);
    s->nb = NULL;
    s->data = NULL;
    s->state = S_FREE;
    s->kind = F_NONE;
}

static void cleanup_bs(const void *data, size_t len, void *arg)
{
    (void)data, (void)len;
    bs_buf *b = arg;
    bs_buf_unref(&b);
}

static void cleanup_nb(const void *data, size_t len, void *arg)
{
    (void)data, (void)len;
    node_buf_unref(arg);
}

static void cleanup_bs_file(void *arg)
{
    bs_buf *b = arg;
    bs_buf_unref(&b);
}

/* A block's bytes into the answer: a RAM-tier hit as a piece of the tier's
 * file (sendfile on a plain connection: no copy on the node) when --sendfile
 * says so for this client, else by reference. On success the answer owns the slot's reference. */
static int write_slot(ns3_req *r, ns3_slot *s)
{
    int fd;
    uint64_t off;
    if (s->bs && node__sendfile_to(&r->w->n->conf, r->who.loopback) &&
        bs_buf_file(s->bs, s->data, &fd, &off) == 0)
        return httpd_resp_write_file_ref(r->h, fd, (int64_t)off, s->len, cleanup_bs_file, s->bs);
    return s->bs ? httpd_resp_write_ref(r->h, s->data, s->len, cleanup_bs, s->bs)
                 : httpd_resp_write_ref(r->h, s->data, s->len, cleanup_nb, s->nb);
}

/* ---- a block's fetch ended ------------------------------------------------------------ */

/* The version named is not S3's any more, or the object is gone: nothing
 * sent yet, ask for the version again (once); else cut the answer. */
static void version_lost(ns3_get *g, const char *why)
{
    ns3_req *r = g->r;
    ns3_meta_forget(r->w->n, g->obj.tenant, g->obj.bucket, g->obj.key);
    if (!r->h || g->cut)
        return;
    if (!g->started && !g->retried && g->inflight == 0) {
        g->retried = true;
        for (uint32_t i = 0; i < g->n_slots; i++)
            slot_release(&g->slots[i]);
        get_begin(g);
        return;
    }
    if (!g->started) {
        g->cut = true; /* the retry waits for the fetches still running */
        ns3_fail(r, 503, "SlowDown",
                 "Please reduce your request rate. (s3://%s/%s changed "
                 "while it was read: %s)",
                 g->obj.bucket, g->obj.key, why);
        return;
    }
    node_log(NODE_LOG_INFO,
             "msg=\"S3 API GET cut: the object changed while it was sent\" "
             "bucket=%s key=\"%s\" version=%s why=\"%s\"",
             g->obj.bucket, g->obj.key, g->obj.version, why);
    g->cut = true;
    httpd_resp_abort(r->h);
}

/* A failure no other source can mend: an error answer, or the answer cut. */
static void get_failed(ns3_get *g, int code, const char *msg)
{
    ns3_req *r = g->r;
    if (!r->h || g->cut)
        return;
    g->cut = true;
    if (!g->started) {
        ns3_fail_rcp(r, code, msg);
        return;
    }
    node_log(NODE_LOG_WARN,
             "msg=\"S3 API GET cut: a block could not be read\" bucket=%s "
             "key=\"%s\" err=\"%s\"",
             g->obj.bucket, g->obj.key, msg);
    httpd_resp_abort(r->h);
}

/* The fetch of s ended (s->state READY, or s->code set): go on. */
static void slot_ended(ns3_slot *s)
{
    ns3_get *g = s->g;
    g->inflight--;
    if (s->index > g->last_block)
        g->r->w->s3api_ahead--;
    if (!g->r->h || g->cut || (s->state == S_READY && s->index > g->last_block)) {
        slot_release(s); /* past the answer: in the owner's cache now */
    } else if (s->index > g->last_block && s->state != S_READY) {
        slot_release(s); /* a read ahead that failed costs the answer nothing */
    } else if (s->state != S_READY) {
        int code = s->code;
        if (code == RCP_E_VERSION_CHANGED || code == RCP_E_NOT_FOUND) {
            slot_release(s);
            version_lost(g, s->msg);
        } else if (code == RCP_E_BUSY && s->kind == F_LOCAL) {
            if (!g->started && s->index == g->next_write) {
                get_failed(g, RCP_E_BUSY, s->msg); /* SlowDown: the client retries */
            } else {
                s->kind = F_S3; /* mid-answer: S3 directly, not kept */
                slot_next(s);
            }
        } else if (s->kind == F_PEER || (code == RCP_E_BUSY && s->kind != F_S3)) {
            slot_next(s); /* the next owner, or this node */
        } else {
            get_failed(g, code, s->msg);
        }
    }
    pump(g);
    ns3_unref(g->r);
}

/* ---- this node: the lifecycle ---------------------------------------------------------- */

static void local_piece(void *arg, const node_piece *p)
{
    ns3_slot *s = arg;
    node_piece_ref(p);
    s->data = p->data;
    s->bs = p->bs;
    s->nb = p->nb;
    s->source = p->source == RCP_SRC_SSD ? (s->ram ? NS3_SRC_RAM : NS3_SRC_SSD) : NS3_SRC_S3;
    s->state = S_READY;
}

static void local_error(void *arg, int code, const char *sentence)
{
    ns3_slot *s = arg;
    s->code = code;
    snprintf(s->msg, sizeof(s->msg), "%s", sentence);
}

static void local_done(void *arg)
{
    slot_ended(arg);
}

static void local_answer(void *arg, const node_answer *a)
{
    (void)arg, (void)a;
}

static const node_sink_ops local_ops = {NULL,        local_piece, local_answer,
                                        local_error, NULL,        local_done};

/* Whether this node is the first owner of block index not marked down (or
 * there is no ring). */
static bool local_first(ns3_get *g, const struct ring *ring, uint64_t index)
{
    if (!ring)
        return true;
    node_worker *w = g->r->w;
    bkey_id id;
    bkey_object_block(&g->obj, index, &id);
    uint8_t rk[16];
    bkey_ring_key(bkey_of(&id), rk);
    const struct ring_member *owners[MAX_OWNERS];
    int k = ring_lookup(ring, rk, sizeof(rk), owners, MAX_OWNERS);
    for (int i = 0; i < k; i++) {
        if (strcmp(owners[i]->id, w->n->conf.node_id) == 0)
            return true;
        if (!is_down(w, ring_member_index(ring, owners[i])))
            return false;
    }
    return false;
}

/* The blocks from s's on (at most FILL_RUN, none past the answer's last)
 * this GET will ask of this node: s's, and the next ones this node owns
 * first, so a fill from S3 takes them in one ranged GET. */
static uint32_t local_run(ns3_slot *s)
{
    ns3_get *g = s->g;
    node *n = g->r->w->n;
    struct ring *ring = n->members ? membership_ring(n->members) : NULL;
    uint32_t run = 1;
    while (run < g->run_cap && s->index + run <= g->fetch_last &&
           local_first(g, ring, s->index + run))
        run++;
    if (ring)
        ring_unref(&ring);
    return run;
}

static void fetch_local(ns3_slot *s)
{
    ns3_get *g = s->g;
    ns3_req *r = g->r;
    s->kind = F_LOCAL;
    s->tried_local = true;
    bkey_id id;
    bkey_object_block(&g->obj, s->index, &id);
    bs_info info;
    s->ram = bs_lookup(r->w->n->store, &id, &info) == 0 && info.in_ram;
    uint32_t run = s->ram ? 1 : local_run(s);
    node_req_get_run(&s->lr, r->w, &r->who, &g->obj, s->index, s->off, s->len, run,
                     &(node_sink){&local_ops, s});
}

/* ---- S3 directly (this node is at --max-fills) ------------------------------------------ */

static void s3_done(const s3_error *err, const s3_get_result *res, void *arg)
{
    ns3_slot *s = arg;
    if (!err->code && res->bytes == s->len) {
        s->data = s->nb->data;
        s->source = NS3_SRC_S3;
        s->state = S_READY;
    } else {
        s->code = err->code == -ESTALE || err->code == -ENOENT ? RCP_E_VERSION_CHANGED
                  : err->code                                  ? RCP_E_S3
                                                               : RCP_E_INTERNAL;
        node__upstream_message(s->g->r->w->n, err->code ? err->message : "a short answer", s->msg,
                               sizeof(s->msg));
        node_buf_unref(s->nb);
        s->nb = NULL;
    }
    slot_ended(s);
}

static void fetch_s3(ns3_slot *s)
{
    ns3_get *g = s->g;
    uint64_t bsz = (uint64_t)g->r->w->n->conf.block_size;
    s->nb = node_buf_new(s->len);
    s3_get_args a = {.bucket = g->obj.bucket,
                     .key = g->obj.key,
                     .offset = s->index * bsz + s->off,
                     .length = s->len,
                     .if_match = g->obj.version,
                     .buf = s->nb ? s->nb->data : NULL,
                     .cap = s->len};
    int rc = s->nb ? s3_get(g->r->s3, &a, s3_done, s) : -ENOMEM;
    if (rc < 0) {
        s3_error e = {0};
        e.code = rc;
        snprintf(e.message, sizeof(e.message), "cannot ask S3: %s", strerror(-rc));
        s3_get_result res = {0};
        s3_done(&e, &res, s);
    }
}

/* ---- an owner over the protocol ---------------------------------------------------------- */

static void mark_down(node_worker *w, size_t idx)
{
    if (w->n_peer_down <= idx) {
        int64_t *nd = realloc(w->peer_down_ms, (idx + 1) * sizeof(*nd));
        if (!nd)
            return;
        for (size_t i = w->n_peer_down; i <= idx; i++)
            nd[i] = 0;
        w->peer_down_ms = nd;
        w->n_peer_down = idx + 1;
    }
    w->peer_down_ms[idx] = ns3_now_ms() + PEER_DOWN_MS;
}

static bool is_down(const node_worker *w, size_t idx)
{
    return idx < w->n_peer_down && ns3_now_ms() < w->peer_down_ms[idx];
}

static void peer_done(const cc_result *res, void *arg)
{
    ns3_slot *s = arg;
    node_worker *w = s->g->r->w;
    s->cc = NULL;
    if (res->code == 0 && res->bytes == s->len) {
        s->data = s->nb->data;
        s->source = NS3_SRC_PEER;
        s->state = S_READY;
    } else {
        node_buf_unref(s->nb);
        s->nb = NULL;
        s->code = res->code == -EREMOTEIO ? res->rcp_code : RCP_E_INTERNAL;
        snprintf(s->msg, sizeof(s->msg), "%s", res->message);
        if (res->code != -EREMOTEIO && res->code != -ECANCELED) {
            /* the connection failed: the owner is not asked for a while */
            mark_down(w, s->peer);
            node_log(NODE_LOG_DEBUG,
                     "msg=\"S3 API: an owner failed, the next one is asked\" "
                     "err=\"%s\"",
                     res->message);
        } else if (res->code == -EREMOTEIO && res->rcp_code != RCP_E_VERSION_CHANGED &&
                   res->rcp_code != RCP_E_NOT_FOUND) {
            s->code = RCP_E_BUSY; /* the owner could not: another source can */
        }
    }
    slot_ended(s);
}

/* Asks owner m of the ring for s's block: 0, or < 0 when it cannot be asked. */
static int fetch_peer(ns3_slot *s, const struct ring *ring, const struct ring_member *m)
{
    ns3_get *g = s->g;
    node_worker *w = g->r->w;
    cc_conn *cc = node__peer_conn(w, ring, m);
    if (!cc)
        return -ECONNREFUSED;
    s->nb = node_buf_new(s->len);
    if (!s->nb)
        return -ENOMEM;
    rcp_get_req q = {
        .obj = {rcp_s(g->obj.bucket), rcp_s(g->obj.key), rcp_s(g->obj.version), g->obj.size},
        .block = s->index,
        .offset = s->off,
        .length = s->len,
        .flags = 0};
    const char *tenant = w->n->tenants ? g->obj.tenant : NULL;
    s->kind = F_PEER;
    s->peer = ring_member_index(ring, m);
    int rc = cc_get_tenant(cc, &q, tenant, s->nb->data, s->len, peer_done, s, &s->cc_id);
    if (rc < 0) {
        node_buf_unref(s->nb);
        s->nb = NULL;
        return rc;
    }
    s->cc = cc;
    return 0;
}

/* ---- choosing where a block comes from --------------------------------------------------- */

/* Starts (or goes on with) the fetch of s: the next owner not tried and not
 * down, this node when it is the owner or none is left. */
static void slot_next(ns3_slot *s)
{
    ns3_get *g = s->g;
    ns3_req *r = g->r;
    node *n = r->w->n;
    s->code = 0;
    s->msg[0] = '\0';
    s->state = S_FETCH;
    g->inflight++;
    ns3_ref(r);
    if (s->kind == F_S3) {
        fetch_s3(s);
        return;
    }
    struct ring *ring = n->members ? membership_ring(n->members) : NULL;
    if (ring) {
        bkey_id id;
        bkey_object_block(&g->obj, s->index, &id);
        uint8_t rk[16];
        bkey_ring_key(bkey_of(&id), rk);
        const struct ring_member *owners[MAX_OWNERS];
        int k = ring_lookup(ring, rk, sizeof(rk), owners, MAX_OWNERS);
        while (s->owner < k) {
            const struct ring_member *m = owners[s->owner++];
            if (strcmp(m->id, n->conf.node_id) == 0) {
                if (s->tried_local)
                    continue;
                ring_unref(&ring);
                fetch_local(s);
                return;
            }
            if (is_down(r->w, ring_member_index(ring, m)))
                continue;
            if (fetch_peer(s, ring, m) == 0) {
                ring_unref(&ring);
                return;
            }
            mark_down(r->w, ring_member_index(ring, m));
        }
        ring_unref(&ring);
    }
    if (!s->tried_local) {
        fetch_local(s); /* no owner left: read through here */
        return;
    }
    /* every source tried */
    g->inflight--;
    if (s->index > g->last_block) { /* a read ahead: nothing lost */
        r->w->s3api_ahead--;
        slot_release(s);
        ns3_unref(r);
        return;
    }
    ns3_unref(r);
    slot_release(s);
    get_failed(g, s->code ? s->code : RCP_E_INTERNAL,
               s->msg[0] ? s->msg : "no owner of the block could serve it");
}

/* Starts the fetch of block index: false when it is ahead of the block being
 * sent and the node's read-ahead has no room for it. */
static bool slot_start(ns3_get *g, uint64_t index)
{
    ns3_slot *s = &g->slots[index % g->n_slots];
    node_worker *w = g->r->w;
    uint64_t bsz = (uint64_t)w->n->conf.block_size;
    uint64_t bstart = index * bsz;
    uint64_t blen = bkey_block_len(g->obj.size, bsz, index);
    uint64_t from = g->plan.first > bstart ? g->plan.first - bstart : 0;
    uint64_t to = index > g->last_block              ? blen
                  : g->plan.last < bstart + blen - 1 ? g->plan.last - bstart + 1
                                                     : blen;
    bool ahead = index > g->next_write;
    /* ahead only while half of --max-fills is left to the blocks being sent
     * (past it they would be answered busy), and within the node's bound */
    if (ahead && (node_fill_active(w->n->fills) >= (size_t)w->n->conf.max_fills / 2 ||
                  !ns3_ra_reserve(w->n, to - from)))
        return false;
    memset(s, 0, offsetof(ns3_slot, lr));
    s->g = g;
    s->index = index;
    s->off = (uint32_t)from;
    s->len = (uint32_t)(to - from);
    s->ahead = ahead;
    if (ahead)
        ns3_count_readahead(w, s->len);
    if (index > g->last_block)
        w->s3api_ahead++; /* the drain waits for it: it outlives the answer */
    slot_next(s);
    return true;
}

/* ---- the answer ---------------------------------------------------------------------------- */

static void writable(httpd_req *h, void *arg)
{
    (void)h;
    pump(arg);
}

static void add_object_headers(ns3_req *r, const ns3_get *g)
{
    char etag[S3_ETAG_MAX + 2], date[30];
    snprintf(etag, sizeof(etag), "\"%s\"", g->meta.etag);
    httpd_resp_add_header(r->h, "ETag", etag);
    if (g->meta.last_modified > 0) {
        s3a_http_date(g->meta.last_modified, date);
        httpd_resp_add_header(r->h, "Last-Modified", date);
    }
}

/* The head of a 200 / 206. */
static void start_answer(ns3_get *g)
{
    ns3_req *r = g->r;
    g->started = true;
    r->answered = true;
    r->status = g->plan.status;
    httpd_resp_set_status(r->h, g->plan.status);
    ns3_common_headers(r);
    add_object_headers(r, g);
    httpd_resp_add_header(r->h, "Accept-Ranges", "bytes");
    static const char *const overrides[][2] = {
        {"response-content-type", "Content-Type"},
        {"response-content-language", "Content-Language"},
        {"response-expires", "Expires"},
        {"response-cache-control", "Cache-Control"},
        {"response-content-disposition", "Content-Disposition"},
        {"response-content-encoding", "Content-Encoding"},
    };
    const char *ctype = "binary/octet-stream";
    for (size_t i = 0; i < sizeof(overrides) / sizeof(overrides[0]); i++) {
        const char *v = s3a_route_param(&r->route, overrides[i][0]);
        if (v && i == 0)
            ctype = v;
        else if (v && v[0])
            httpd_resp_add_header(r->h, overrides[i][1], v);
    }
    httpd_resp_add_header(r->h, "Content-Type", ctype);
    if (g->plan.status == 206) {
        char cr[96];
        snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", (unsigned long long)g->plan.first,
                 (unsigned long long)g->plan.last, (unsigned long long)g->meta.size);
        httpd_resp_add_header(r->h, "Content-Range", cr);
    }
    httpd_resp_start(r->h, (int64_t)g->plan.count);
    if (!g->head && g->plan.count)
        httpd_resp_on_writable(r->h, writable, g);
}

static void pump(ns3_get *g)
{
    if (g->pumping) {
        g->again = true;
        return;
    }
    g->pumping = true;
    ns3_req *r = g->r;
    do {
        g->again = false;
        if (!r->h || g->cut || g->ended)
            break;
        while (g->next_write <= g->last_block) {
            ns3_slot *s = &g->slots[g->next_write % g->n_slots];
            if (s->state != S_READY || s->index != g->next_write)
                break;
            if (!g->started)
                start_answer(g);
            if (httpd_resp_room(r->h) == 0)
                break; /* the writable callback comes back */
            int rc = write_slot(r, s);
            if (rc < 0)
                break;
            ns3_count_bytes(r->w, s->source, s->len);
            node__count(r->w, NM_BYTES_SERVED, s->len);
            s->bs = NULL; /* the answer owns the reference now */
            s->nb = NULL;
            slot_release(s);
            g->next_write++;
        }
        if (!r->h || g->cut)
            break;
        while (g->next_fetch <= g->fetch_last && g->next_fetch - g->next_write < g->n_slots &&
               !g->cut && slot_start(g, g->next_fetch))
            g->next_fetch++;
        if (g->next_write > g->last_block && g->started && !g->ended) {
            g->ended = true;
            httpd_resp_end(r->h);
        }
    } while (g->again);
    g->pumping = false;
}

/* The version is known: decide, then answer or start the blocks. */
static void get_decide(ns3_get *g)
{
    ns3_req *r = g->r;
    if (bkey_field_set(g->obj.version, sizeof(g->obj.version), g->meta.etag, strlen(g->meta.etag)) <
        0) {
        ns3_fail(r, 500, "InternalError", "the object's ETag is too long to cache it");
        return;
    }
    g->obj.size = g->meta.size;
    s3a_get_object o = {g->meta.etag, g->meta.last_modified, g->meta.size};
    s3a_get_headers gh = {ns3_header(r, "if-match"), ns3_header(r, "if-none-match"),
                          ns3_header(r, "if-modified-since"), ns3_header(r, "if-unmodified-since"),
                          ns3_header(r, "range")};
    s3a_get_decide(&o, &gh, &g->plan);
    switch (g->plan.status) {
    case 304:
        r->answered = true;
        r->status = 304;
        httpd_resp_set_status(r->h, 304);
        ns3_common_headers(r);
        add_object_headers(r, g);
        httpd_resp_end(r->h);
        return;
    case 412: {
        s3a_error e = {0};
        s3a_error_set(&e, 412, "PreconditionFailed",
                      "At least one of the pre-conditions you specified did not hold");
        s3a_error_extra(&e, "Condition", g->plan.condition, strlen(g->plan.condition));
        ns3_send_error(r, &e);
        s3a_error_deinit(&e);
        return;
    }
    case 416: {
        s3a_error e = {0};
        char size[24];
        snprintf(size, sizeof(size), "%llu", (unsigned long long)g->meta.size);
        s3a_error_set(&e, 416, "InvalidRange", "The requested range is not satisfiable");
        const char *range = ns3_header(r, "range");
        s3a_error_extra(&e, "RangeRequested", range, strlen(range));
        s3a_error_extra(&e, "ActualObjectSize", size, strlen(size));
        char cr[40];
        snprintf(cr, sizeof(cr), "bytes */%s", size);
        httpd_resp_add_header(r->h, "Content-Range", cr);
        ns3_send_error(r, &e);
        s3a_error_deinit(&e);
        return;
    }
    default: break;
    }
    if (g->head || g->plan.count == 0) {
        start_answer(g);
        g->ended = true;
        httpd_resp_end(r->h);
        return;
    }
    node *n = r->w->n;
    uint64_t bsz = (uint64_t)n->conf.block_size;
    g->first_block = g->plan.first / bsz;
    g->last_block = g->plan.last / bsz;
    g->next_fetch = g->next_write = g->first_block;
    g->fetch_last = g->last_block;
    uint64_t ahead = (uint64_t)n->conf.s3_api_readahead / bsz;
    if (ahead > g->n_slots - 1u)
        ahead = g->n_slots - 1u;
    uint64_t n_blocks = (g->meta.size + bsz - 1) / bsz;
    if (ns3_seq_note(n, &g->obj, g->first_block, g->last_block) && ahead)
        g->fetch_last = g->last_block + ahead < n_blocks - 1 ? g->last_block + ahead : n_blocks - 1;
    /* the window's blocks in FILL_PARALLEL ranged GETs, each of at most FILL_RUN */
    uint64_t span = g->last_block - g->first_block + 1;
    if (span > ahead + 1)
        span = ahead + 1;
    uint64_t cap = span / FILL_PARALLEL;
    g->run_cap = (uint32_t)(cap < 1 ? 1 : cap > FILL_RUN ? FILL_RUN : cap);
    pump(g);
}

/* ---- the version -------------------------------------------------------------------------- */

static void head_answer(void *arg, const node_answer *a)
{
    ns3_get *g = arg;
    g->meta.size = a->size;
    snprintf(g->meta.etag, sizeof(g->meta.etag), "%s", a->etag ? a->etag : "");
    g->meta.last_modified = a->last_modified;
    ns3_meta_put(g->r->w->n, g->obj.tenant, g->obj.bucket, g->obj.key, &g->meta);
    g->head_ok = true;
}

static void head_error(void *arg, int code, const char *sentence)
{
    ns3_get *g = arg;
    ns3_fail_rcp(g->r, code, sentence);
}

static void head_done(void *arg)
{
    ns3_get *g = arg;
    ns3_req *r = g->r;
    g->hr_active = false;
    if (r->h && !r->answered && g->head_ok)
        get_decide(g);
    ns3_unref(r);
}

static const node_sink_ops head_ops = {NULL, NULL, head_answer, head_error, NULL, head_done};

static void get_begin(ns3_get *g)
{
    ns3_req *r = g->r;
    /* a HeadObject always asks S3 (and refreshes the cache): what it says is all
     * it is for, and a client checks a change (a delete through another node)
     * with it */
    if (!g->head && ns3_meta_get(r->w->n, g->obj.tenant, g->obj.bucket, g->obj.key, &g->meta)) {
        get_decide(g);
        return;
    }
    g->hr_active = true;
    g->head_ok = false;
    ns3_ref(r);
    node_req_head(&g->hr, r->w, &r->who, g->obj.bucket, g->obj.key, &(node_sink){&head_ops, g});
}

/* The HTTP request is over: what runs is cancelled (each ends later, or now). */
static void get_op_done(ns3_req *r)
{
    ns3_get *g = r->get;
    if (g->hr_active)
        node_req_cancel(&g->hr);
    for (uint32_t i = 0; i < g->n_slots; i++) {
        ns3_slot *s = &g->slots[i];
        if (s->state != S_FETCH || (g->ended && !g->cut && s->index > g->last_block))
            continue; /* a read ahead of an answer sent whole goes on into the cache */
        if (s->kind == F_LOCAL)
            node_req_cancel(&s->lr);
        else if (s->kind == F_PEER && s->cc)
            cc_cancel(s->cc, s->cc_id);
    }
}

static void get_op_free(ns3_req *r)
{
    ns3_get *g = r->get;
    for (uint32_t i = 0; i < g->n_slots; i++)
        slot_release(&g->slots[i]);
    free(g);
    r->get = NULL;
}

void ns3_get_object(ns3_req *r, bool head)
{
    if (!ns3_allowed(r, r->route.bucket, r->route.key, false))
        return;
    node *n = r->w->n;
    uint64_t ahead = (uint64_t)n->conf.s3_api_readahead / (uint64_t)n->conf.block_size;
    uint32_t n_slots = ahead + 1 < MAX_SLOTS ? (uint32_t)ahead + 1 : MAX_SLOTS;
    ns3_get *g = calloc(1, sizeof(*g) + n_slots * sizeof(ns3_slot));
    if (!g) {
        ns3_fail(r, 503, "SlowDown", "Please reduce your request rate. (out of memory)");
        return;
    }
    g->r = r;
    g->n_slots = n_slots;
    g->head = head;
    r->get = g;
    r->op_done = get_op_done;
    r->op_free = get_op_free;
    const ten_tenant *t = r->who.tenant;
    if (bkey_object_init(&g->obj, t ? ten_name(t) : "", r->route.bucket, r->route.key, "", 0) < 0) {
        ns3_fail(r, 400, "KeyTooLongError", "Your key is too long");
        return;
    }
    get_begin(g);
}
