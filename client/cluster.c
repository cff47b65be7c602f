/* SPDX-License-Identifier: Apache-2.0
 *
 * cluster.c: reads and writes through a cluster of cache nodes (cluster.h).
 * Each read keeps up to `parallel` block requests in flight over the members'
 * pipelined connections; a block whose owner fails is asked of the next owner
 * on the ring, and the failed member is skipped for down_ms.
 */
#include "cluster.h"

#include "blockkey.h"
#include "membership.h"
#include "ring.h"

#include <errno.h>
#include <event2/event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RCL_MAX_OWNERS 3

typedef struct rcl_node {
    char id[128];
    char addr[300];
    char host[256];
    int port;
    cc_conn *conn;
    int64_t down_until_ms;
} rcl_node;

struct rcl_cluster {
    struct event_base *base;
    rcl_config cfg;
    char token[RCP_MAX_STRING + 1];
    struct ring *ring;
    rcl_node *nodes;
    size_t n_nodes;
    char tenant[257];
    uint32_t block_size;
    bool have_hello;
    bool destroying;
    rcl_stats stats;
};

static int64_t rcl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void rcl_learn_hello(rcl_cluster *c, cc_conn *conn)
{
    const rcp_hello_resp *h = cc_conn_hello(conn);
    if (c->have_hello || !h->block_size)
        return;
    rcp_str_copy(h->tenant, c->tenant, sizeof(c->tenant));
    if (!c->block_size)
        c->block_size = h->block_size;
    c->have_hello = true;
}

static cc_conn *rcl_conn(rcl_cluster *c, size_t i)
{
    rcl_node *n = &c->nodes[i];
    if (n->conn && cc_conn_broken(n->conn))
        cc_conn_destroy(&n->conn);
    if (n->conn)
        return n->conn;
    if (n->down_until_ms > rcl_now_ms())
        return NULL;
    cc_config cc = {n->host, n->port, c->token[0] ? c->token : NULL, c->cfg.block_size,
                    "ringcache", c->cfg.connect_timeout_ms, c->cfg.request_timeout_ms};
    if (cc_conn_create(&n->conn, c->base, &cc) < 0)
        return NULL;
    return n->conn;
}

static void rcl_mark_down(rcl_cluster *c, size_t i)
{
    c->nodes[i].down_until_ms = rcl_now_ms() + c->cfg.down_ms;
    c->stats.node_failures++;
}

static bool rcl_node_fault(const cc_result *r)
{
    if (r->code == -EREMOTEIO)
        return r->rcp_code == RCP_E_BUSY || r->rcp_code == RCP_E_TIMEOUT ||
               r->rcp_code == RCP_E_INTERNAL || r->rcp_code == RCP_E_PROTOCOL;
    return r->code != 0 && r->code != -ECANCELED && r->code != -ENOBUFS;
}

static int rcl_remote_errno(const cc_result *r)
{
    if (r->code != -EREMOTEIO)
        return r->code;
    switch (r->rcp_code) {
    case RCP_E_VERSION_CHANGED: return -ESTALE;
    case RCP_E_NOT_FOUND: return -ENOENT;
    case RCP_E_FORBIDDEN:
    case RCP_E_UNAUTHORIZED: return -EACCES;
    case RCP_E_NOT_CACHED: return -ENODATA;
    default: return -EIO;
    }
}

int rcl_create(rcl_cluster **out, struct event_base *base, const rcl_config *cfg, char *err,
               size_t errlen)
{
    rcl_cluster *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->base = base;
    c->cfg = *cfg;
    snprintf(c->token, sizeof(c->token), "%s", cfg->token ? cfg->token : "");
    c->cfg.token = NULL;
    c->cfg.members = NULL;
    if (c->cfg.parallel <= 0)
        c->cfg.parallel = 16;
    if (c->cfg.connect_timeout_ms <= 0)
        c->cfg.connect_timeout_ms = 2000;
    if (c->cfg.request_timeout_ms <= 0)
        c->cfg.request_timeout_ms = 30000;
    if (c->cfg.down_ms <= 0)
        c->cfg.down_ms = 5000;
    c->block_size = cfg->block_size;
    struct membership_list ml;
    const char *m = cfg->members ? cfg->members : "";
    int rc = membership_parse_list(m, strlen(m), MEMBERSHIP_DEFAULT_PORT, &ml, err, errlen);
    if (rc < 0) {
        free(c);
        return rc;
    }
    c->nodes = calloc(ml.n, sizeof(*c->nodes));
    rc = c->nodes ? ring_create(&c->ring, ml.members, ml.n, NULL, err, errlen) : -ENOMEM;
    if (rc < 0) {
        membership_list_deinit(&ml);
        free(c->nodes);
        free(c);
        return rc;
    }
    c->n_nodes = ring_member_count(c->ring);
    for (size_t i = 0; i < c->n_nodes; i++) {
        const struct ring_member *rm = ring_member_at(c->ring, i);
        rcl_node *n = &c->nodes[i];
        snprintf(n->id, sizeof(n->id), "%s", rm->id);
        snprintf(n->addr, sizeof(n->addr), "%s", rm->addr);
        const char *colon = strrchr(rm->addr, ':');
        size_t hl = colon ? (size_t)(colon - rm->addr) : strlen(rm->addr);
        if (hl >= sizeof(n->host))
            hl = sizeof(n->host) - 1;
        memcpy(n->host, rm->addr, hl);
        n->host[hl] = '\0';
        if (n->host[0] == '[' && hl > 2) {
            memmove(n->host, n->host + 1, hl - 2);
            n->host[hl - 2] = '\0';
        }
        n->port = colon ? atoi(colon + 1) : (int)MEMBERSHIP_DEFAULT_PORT;
    }
    membership_list_deinit(&ml);
    *out = c;
    return 0;
}

void rcl_destroy(rcl_cluster **cp)
{
    if (!cp || !*cp)
        return;
    rcl_cluster *c = *cp;
    c->destroying = true;
    for (size_t i = 0; i < c->n_nodes; i++)
        cc_conn_destroy(&c->nodes[i].conn);
    ring_unref(&c->ring);
    free(c->nodes);
    free(c);
    *cp = NULL;
}

const char *rcl_tenant(const rcl_cluster *c) { return c->tenant; }
uint32_t rcl_block_size(const rcl_cluster *c) { return c->block_size; }
void rcl_stats_get(const rcl_cluster *c, rcl_stats *out) { *out = c->stats; }

/* ---- connect -------------------------------------------------------------- */

typedef struct {
    rcl_cluster *c;
    size_t node;
    struct rcl_connect_state *st;
} rcl_ping;

typedef struct rcl_connect_state {
    rcl_done_fn done;
    void *arg;
    size_t pending;
    bool told;
    char last[256];
} rcl_connect_state;

static void rcl_ping_done(const cc_result *res, void *arg)
{
    rcl_ping *p = arg;
    rcl_connect_state *st = p->st;
    rcl_cluster *c = p->c;
    if (res->code == 0) {
        rcl_learn_hello(c, c->nodes[p->node].conn);
        if (!st->told) {
            st->told = true;
            st->done(0, NULL, st->arg);
        }
    } else {
        snprintf(st->last, sizeof(st->last), "%s", res->message);
        if (res->code != -ECANCELED && res->code != -EREMOTEIO)
            rcl_mark_down(c, p->node);
    }
    if (--st->pending == 0) {
        if (!st->told) {
            st->told = true;
            char msg[400];
            snprintf(msg, sizeof(msg), "no cache node answered: %s", st->last);
            st->done(res->code == -EREMOTEIO ? -EACCES : -ECONNREFUSED, msg, st->arg);
        }
        free(st);
    }
    free(p);
}

int rcl_connect(rcl_cluster *c, rcl_done_fn done, void *arg)
{
    rcl_connect_state *st = calloc(1, sizeof(*st));
    if (!st)
        return -ENOMEM;
    st->done = done;
    st->arg = arg;
    snprintf(st->last, sizeof(st->last), "no members");
    for (size_t i = 0; i < c->n_nodes; i++) {
        cc_conn *conn = rcl_conn(c, i);
        rcl_ping *p = calloc(1, sizeof(*p));
        if (!conn || !p) {
            free(p);
            continue;
        }
        p->c = c;
        p->node = i;
        p->st = st;
        if (cc_ping(conn, rcl_ping_done, p) == 0)
            st->pending++;
        else
            free(p);
    }
    if (st->pending == 0) {
        free(st);
        return -ECONNREFUSED;
    }
    return 0;
}

/* ---- head ----------------------------------------------------------------- */

typedef struct {
    rcl_cluster *c;
    size_t next;            /* next node to try */
    char bucket[64], key[1025];
    rcl_head_fn done;
    void *arg;
} rcl_head_op;

static void rcl_head_try(rcl_head_op *op);

static void rcl_head_done(const cc_result *res, void *arg)
{
    rcl_head_op *op = arg;
    if (rcl_node_fault(res) && !op->c->destroying) {
        rcl_mark_down(op->c, op->next - 1);
        rcl_head_try(op);
        return;
    }
    op->done(rcl_remote_errno(res), res->code ? res->message : NULL, res->size, res->version,
             op->arg);
    free(op);
}

static void rcl_head_try(rcl_head_op *op)
{
    rcl_cluster *c = op->c;
    while (op->next < c->n_nodes) {
        size_t i = op->next++;
        cc_conn *conn = rcl_conn(c, i);
        if (conn && cc_head(conn, op->bucket, op->key, rcl_head_done, op) == 0)
            return;
    }
    op->done(-ECONNREFUSED, "no cache node could be reached for HEAD", 0, "", op->arg);
    free(op);
}

int rcl_head(rcl_cluster *c, const char *bucket, const char *key, rcl_head_fn done, void *arg)
{
    rcl_head_op *op = calloc(1, sizeof(*op));
    if (!op)
        return -ENOMEM;
    op->c = c;
    snprintf(op->bucket, sizeof(op->bucket), "%s", bucket);
    snprintf(op->key, sizeof(op->key), "%s", key);
    op->done = done;
    op->arg = arg;
    op->next = 0;
    rcl_head_try(op);
    return 0;
}

/* ---- read ------------------------------------------------------------------- */

typedef struct rcl_read_op rcl_read_op;
typedef struct {
    rcl_cluster *c;
    char bucket[64], key[1025], version[129];
    uint64_t size;
    uint64_t off, len;
    uint8_t *buf;
    uint64_t next_block, last_block;
    int inflight;
    uint64_t done_bytes;
    int failed;
    char msg[2600];
    rcl_progress_fn progress;
    rcl_done_fn done;
    void *arg;
} rcl_read_state;

struct rcl_read_op {
    rcl_read_state *rd;
    uint64_t block;
    uint32_t in_off, in_len;     /* range inside the block */
    uint64_t buf_off;
    size_t owners[RCL_MAX_OWNERS];
    int n_owners, attempt;
};

static void rcl_read_launch(rcl_read_state *rd);
static void rcl_read_send(rcl_read_op *op);

static void rcl_read_finish_if_done(rcl_read_state *rd)
{
    if (rd->inflight > 0)
        return;
    if (!rd->failed && rd->next_block <= rd->last_block)
        return;
    rd->done(rd->failed, rd->failed ? rd->msg : NULL, rd->arg);
    free(rd);
}

static void rcl_read_block_done(const cc_result *res, void *arg)
{
    rcl_read_op *op = arg;
    rcl_read_state *rd = op->rd;
    rcl_cluster *c = rd->c;
    if (res->code == 0) {
        c->stats.blocks++;
        c->stats.bytes += res->bytes;
        if (res->source == RCP_SRC_S3)
            c->stats.from_s3++;
        rd->done_bytes += res->bytes;
        if (rd->progress)
            rd->progress(rd->done_bytes, rd->len, rd->arg);
    } else if (rcl_node_fault(res) && !c->destroying && !rd->failed) {
        rcl_mark_down(c, op->owners[op->attempt]);
        op->attempt++;
        c->stats.failovers++;
        snprintf(rd->msg, sizeof(rd->msg), "%s", res->message);
        rcl_read_send(op); /* the next owner */
        return;
    } else if (!rd->failed) {
        rd->failed = rcl_remote_errno(res);
        if (!rd->failed)
            rd->failed = -EIO;
        snprintf(rd->msg, sizeof(rd->msg), "s3://%s/%s block %llu: %s", rd->bucket, rd->key,
                 (unsigned long long)op->block, res->message);
    }
    rd->inflight--;
    free(op);
    if (!rd->failed && !c->destroying)
        rcl_read_launch(rd);
    rcl_read_finish_if_done(rd);
}

static void rcl_read_send(rcl_read_op *op)
{
    rcl_read_state *rd = op->rd;
    rcl_cluster *c = rd->c;
    while (op->attempt < op->n_owners) {
        size_t ni = op->owners[op->attempt];
        cc_conn *conn = rcl_conn(c, ni);
        if (conn) {
            rcp_get_req g = {{rcp_s(rd->bucket), rcp_s(rd->key), rcp_s(rd->version), rd->size},
                             op->block, op->in_off, op->in_len,
                             c->cfg.cache_only ? (uint32_t)RCP_GET_CACHE_ONLY : 0u};
            if (cc_get(conn, &g, rd->buf + op->buf_off, op->in_len, rcl_read_block_done, op,
                       NULL) == 0)
                return;
        }
        op->attempt++;
        if (op->attempt < op->n_owners)
            c->stats.failovers++;
    }
    if (!rd->failed) {
        rd->failed = -EIO;
        char last[256];
        snprintf(last, sizeof(last), "%.255s", rd->msg[0] ? rd->msg : "no connection");
        snprintf(rd->msg, sizeof(rd->msg),
                 "every cache node owning s3://%s/%s block %llu failed (last: %s)", rd->bucket,
                 rd->key, (unsigned long long)op->block, last);
    }
    rd->inflight--;
    free(op);
    rcl_read_finish_if_done(rd);
}

static void rcl_read_launch(rcl_read_state *rd)
{
    rcl_cluster *c = rd->c;
    uint64_t bs = c->block_size;
    while (!rd->failed && rd->inflight < c->cfg.parallel && rd->next_block <= rd->last_block) {
        uint64_t b = rd->next_block++;
        rcl_read_op *op = calloc(1, sizeof(*op));
        if (!op) {
            rd->failed = -ENOMEM;
            snprintf(rd->msg, sizeof(rd->msg), "out of memory");
            break;
        }
        op->rd = rd;
        op->block = b;
        uint64_t bstart = b * bs;
        uint64_t blen = bkey_block_len(rd->size, bs, b);
        uint64_t from = rd->off > bstart ? rd->off - bstart : 0;
        uint64_t to = rd->off + rd->len < bstart + blen ? rd->off + rd->len - bstart : blen;
        op->in_off = (uint32_t)from;
        op->in_len = (uint32_t)(to - from);
        op->buf_off = bstart + from - rd->off;
        bkey_id id;
        bkey_id_init(&id, c->tenant, rd->bucket, rd->key, rd->version, rd->size, b);
        uint8_t rk[16];
        bkey_ring_key(bkey_of(&id), rk);
        const struct ring_member *owners[RCL_MAX_OWNERS];
        int n = ring_lookup(c->ring, rk, sizeof(rk), owners, RCL_MAX_OWNERS);
        for (int k = 0; k < n; k++)
            op->owners[k] = ring_member_index(c->ring, owners[k]);
        op->n_owners = n > 0 ? n : 0;
        rd->inflight++;
        rcl_read_send(op);
    }
}

static void rcl_read_empty(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rcl_read_state *rd = arg;
    rd->inflight = 0;
    rcl_read_finish_if_done(rd);
}

int rcl_read(rcl_cluster *c, const rcl_object *obj, uint64_t off, uint64_t len, void *buf,
             rcl_progress_fn progress, rcl_done_fn done, void *arg)
{
    if (!c->block_size || !c->have_hello)
        return -ENOTCONN; /* rcl_connect first */
    if (off > obj->size || len > obj->size - off)
        return -EINVAL;
    rcl_read_state *rd = calloc(1, sizeof(*rd));
    if (!rd)
        return -ENOMEM;
    rd->c = c;
    snprintf(rd->bucket, sizeof(rd->bucket), "%s", obj->bucket);
    snprintf(rd->key, sizeof(rd->key), "%s", obj->key);
    snprintf(rd->version, sizeof(rd->version), "%s", obj->version ? obj->version : "");
    rd->size = obj->size;
    rd->off = off;
    rd->len = len;
    rd->buf = buf;
    rd->progress = progress;
    rd->done = done;
    rd->arg = arg;
    if (len == 0) {
        /* nothing to read: finish from the loop, never inside this call */
        rd->next_block = 1;
        rd->last_block = 0;
        rd->inflight = 1;
        struct timeval tv = {0, 0};
        if (event_base_once(c->base, -1, EV_TIMEOUT, rcl_read_empty, rd, &tv) < 0) {
            free(rd);
            return -ENOMEM;
        }
        return 0;
    }
    rd->next_block = off / c->block_size;
    rd->last_block = (off + len - 1) / c->block_size;
    rcl_read_launch(rd);
    return 0;
}

/* ---- put ----------------------------------------------------------------------- */

typedef struct {
    rcl_put_fn done;
    void *arg;
} rcl_put_op;

static void rcl_put_done(const cc_result *res, void *arg)
{
    rcl_put_op *op = arg;
    op->done(rcl_remote_errno(res), res->code ? res->message : NULL, res->version, op->arg);
    free(op);
}

int rcl_put(rcl_cluster *c, const char *bucket, const char *key, uint64_t size,
            cc_read_fn read_fn, void *read_arg, rcl_put_fn done, void *arg)
{
    for (size_t i = 0; i < c->n_nodes; i++) {
        cc_conn *conn = rcl_conn(c, i);
        if (!conn)
            continue;
        rcl_put_op *op = calloc(1, sizeof(*op));
        if (!op)
            return -ENOMEM;
        op->done = done;
        op->arg = arg;
        if (cc_put(conn, bucket, key, size, read_fn, read_arg, rcl_put_done, op) == 0)
            return 0;
        free(op);
    }
    return -ECONNREFUSED;
}

/* ---- stats ----------------------------------------------------------------------- */

typedef struct {
    rcl_cluster *c;
    size_t node;
    struct rcl_stats_state *st;
} rcl_stats_op;

typedef struct rcl_stats_state {
    rcl_node_text_fn fn;
    rcl_done_fn done;
    void *arg;
    size_t pending;
} rcl_stats_state;

static void rcl_stats_done(const cc_result *res, void *arg)
{
    rcl_stats_op *op = arg;
    rcl_stats_state *st = op->st;
    rcl_node *n = &op->c->nodes[op->node];
    st->fn(n->id, n->addr, res->code, res->code ? res->message : res->text, st->arg);
    if (--st->pending == 0) {
        st->done(0, NULL, st->arg);
        free(st);
    }
    free(op);
}

/* A member that could not be asked (or the hold reference, node SIZE_MAX). */
static void rcl_stats_unreachable(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rcl_stats_op *op = arg;
    rcl_stats_state *st = op->st;
    if (op->node != SIZE_MAX) {
        rcl_node *n = &op->c->nodes[op->node];
        st->fn(n->id, n->addr, -ECONNREFUSED, "cannot connect", st->arg);
    }
    if (--st->pending == 0) {
        st->done(0, NULL, st->arg);
        free(st);
    }
    free(op);
}

int rcl_stats_all(rcl_cluster *c, rcl_node_text_fn fn, rcl_done_fn done, void *arg)
{
    rcl_stats_state *st = calloc(1, sizeof(*st));
    if (!st)
        return -ENOMEM;
    st->fn = fn;
    st->done = done;
    st->arg = arg;
    st->pending = 1; /* held until every request is out */
    for (size_t i = 0; i < c->n_nodes; i++) {
        c->nodes[i].down_until_ms = 0; /* ask every member, even one marked down */
        cc_conn *conn = rcl_conn(c, i);
        rcl_stats_op *op = calloc(1, sizeof(*op));
        if (!op)
            break;
        op->c = c;
        op->node = i;
        op->st = st;
        st->pending++;
        if (!conn || cc_stats(conn, rcl_stats_done, op) != 0) {
            struct timeval tv = {0, 0};
            event_base_once(c->base, -1, EV_TIMEOUT, rcl_stats_unreachable, op, &tv);
        }
    }
    struct timeval tv = {0, 0};
    rcl_stats_op *hold = calloc(1, sizeof(*hold));
    if (!hold)
        return -ENOMEM;
    hold->c = c;
    hold->node = SIZE_MAX;
    hold->st = st;
    event_base_once(c->base, -1, EV_TIMEOUT, rcl_stats_unreachable, hold, &tv);
    return 0;
}
