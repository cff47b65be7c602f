/* SPDX-License-Identifier: Apache-2.0
 *
 * cluster.c: reads and writes through a cluster of cache nodes (cluster.h).
 * Each read keeps up to `parallel` block requests in flight over the members'
 * pipelined connections; a block whose owner fails is asked of the next owner
 * on the ring, and the failed member is skipped for down_ms. Nodes are kept in
 * a table that only grows (one entry per id and address ever seen), so a
 * request in flight may hold a node pointer across a ring change.
 *
 * A block request is one rcl_read_op with up to two tries in flight: the
 * first owner's, and after hedge_ms of silence on its connection the next
 * owner's (rcl_hop_timer_cb). The first success decides the op and cancels the
 * other try; the op is freed when both have called back, and after it is
 * decided a try's callback touches nothing but the op.
 */
#include "cluster.h"

#include "blockkey.h"
#include "membership.h"
#include "ring.h"

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RCL_MAX_OWNERS 3
#define RCL_MAX_CONNS  16

typedef struct rcl_node {
    char id[128];
    char addr[300];
    char host[256];
    char tls_name[256]; /* the name the member was resolved from ("": host) */
    int port;
    cc_conn *conns[RCL_MAX_CONNS]; /* the pool: conns_per_node pipelined connections,
                                      opened lazily, used in turn */
    unsigned next_conn;
    _Atomic int64_t down_until_ms; /* read by rcl_route from other threads */
    atomic_bool told;              /* on_node has been called for it */
    /* Is a silent node alive? A PING on a connection of its own (never behind
     * requests waiting for fills, nor a full pipeline): a node filling from a
     * slow S3 answers at once, a stopped one does not (rcl_hop_timer_cb). */
    cc_conn *probe;
    bool probing; /* a PING out on it */
    int64_t probe_sent_ms, alive_ms;
} rcl_node;

typedef struct rcl_connect_state rcl_connect_state;
typedef struct rcl_put_op rcl_put_op;

struct rcl_cluster {
    struct event_base *base;
    rcl_config cfg;
    char token[RCP_MAX_STRING + 1];
    struct membership *ms;
    struct ring *ring;     /* the ring in use (a reference) */
    rcl_node **ring_nodes; /* ring member index -> node */
    size_t n_ring;
    rcl_node **all; /* every node ever seen; freed at destroy */
    size_t n_all, cap_all;
    char tenant[BKEY_TENANT_MAX + 1];
    uint32_t block_size;
    bool have_hello;
    bool destroying;
    /* rcl_route's view, for other threads: the ring in use, its node map,
     * the tenant, have_hello and block_size are changed (on the loop) only
     * under route_lock; the loop reads them without it, other threads only
     * under it */
    pthread_mutex_t route_lock;
    rcl_connect_state *waiting; /* rcl_connect waiting for a first ring */
    rcl_put_op *puts;           /* PUTs in flight, each on its own connection */
    struct event *wait_timer;
    rcl_stats stats;
};

struct rcl_put_op {
    rcl_put_op *next, *prev; /* the cluster's PUTs in flight */
    rcl_cluster *c;
    rcl_node *node;
    cc_conn *conn;
    rcl_put_fn done;
    void *arg;
};

static int64_t rcl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A node's down mark is read by rcl_route and written by rcl_node_report on
 * other threads than the loop: C11 atomics, every access explicit. */
static bool rcl_is_down(const rcl_node *n)
{
    return atomic_load(&n->down_until_ms) > rcl_now_ms();
}

static void rcl_clear_down(rcl_node *n)
{
    atomic_store(&n->down_until_ms, 0);
}

static void rcl_learn_hello(rcl_cluster *c, cc_conn *conn)
{
    const rcp_hello_resp *h = cc_conn_hello(conn);
    if (c->have_hello || !h->block_size)
        return;
    pthread_mutex_lock(&c->route_lock);
    rcp_str_copy(h->tenant, c->tenant, sizeof(c->tenant));
    if (!c->block_size)
        c->block_size = h->block_size;
    c->have_hello = true;
    pthread_mutex_unlock(&c->route_lock);
}

/* The next connection of n's pool, in turn (each one is pipelined; several
 * spread a client's requests over the node's worker threads, one event loop
 * per connection there). A broken one is replaced; none while n is down. */
static cc_conn *rcl_conn(rcl_cluster *c, rcl_node *n)
{
    cc_conn **slot = &n->conns[n->next_conn++ % (unsigned)c->cfg.conns_per_node];
    if (*slot && cc_conn_broken(*slot))
        cc_conn_destroy(slot);
    if (*slot)
        return *slot;
    if (rcl_is_down(n))
        return NULL;
    cc_config cc = {n->host,
                    n->port,
                    c->token[0] ? c->token : NULL,
                    c->cfg.block_size,
                    "ringcache",
                    c->cfg.connect_timeout_ms,
                    c->cfg.request_timeout_ms,
                    c->cfg.tls,
                    c->cfg.tls_ca,
                    n->tls_name};
    if (cc_conn_create(slot, c->base, &cc) < 0)
        return NULL;
    return *slot;
}

/* Tells on_node about n, the first time only (any thread). */
static void rcl_tell(rcl_cluster *c, rcl_node *n, rcl_node_event what, const char *why)
{
    if (c->cfg.on_node && !atomic_exchange(&n->told, true))
        c->cfg.on_node(n->id, n->addr, what, why && why[0] ? why : "it failed", c->cfg.on_node_arg);
}

/* On the loop (counts it). */
static void rcl_mark_down(rcl_cluster *c, rcl_node *n, rcl_node_event what, const char *why)
{
    atomic_store(&n->down_until_ms, rcl_now_ms() + c->cfg.down_ms);
    c->stats.node_failures++;
    rcl_tell(c, n, what, why);
}

static bool rcl_node_fault(const cc_result *r)
{
    if (r->code == -EREMOTEIO)
        return r->rcp_code == RCP_E_BUSY || r->rcp_code == RCP_E_TIMEOUT ||
               r->rcp_code == RCP_E_INTERNAL || r->rcp_code == RCP_E_PROTOCOL ||
               r->rcp_code == RCP_E_UNAUTHORIZED || r->rcp_code == RCP_E_VERSION;
    return r->code != 0 && r->code != -ECANCELED && r->code != -ENOBUFS;
}

static bool rcl_upstream(const cc_result *r)
{
    return r->code == -EREMOTEIO && r->rcp_code == RCP_E_UPSTREAM;
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
    case RCP_E_UPSTREAM: return -EREMOTEIO;
    default: return -EIO;
    }
}

/* ---- nodes and the ring ------------------------------------------------------ */

static rcl_node *rcl_node_get(rcl_cluster *c, const struct ring_member *m)
{
    const char *id = m->id, *addr = m->addr, *name = m->host ? m->host : "";
    for (size_t i = 0; i < c->n_all; i++)
        if (strcmp(c->all[i]->id, id) == 0 && strcmp(c->all[i]->addr, addr) == 0 &&
            strcmp(c->all[i]->tls_name, name) == 0)
            return c->all[i];
    if (c->n_all == c->cap_all) {
        size_t cap = c->cap_all ? c->cap_all * 2 : 8;
        rcl_node **a = realloc(c->all, cap * sizeof(*a));
        if (!a)
            return NULL;
        c->all = a;
        c->cap_all = cap;
    }
    rcl_node *n = calloc(1, sizeof(*n));
    if (!n)
        return NULL;
    snprintf(n->id, sizeof(n->id), "%s", id);
    snprintf(n->addr, sizeof(n->addr), "%s", addr);
    snprintf(n->tls_name, sizeof(n->tls_name), "%s", name);
    const char *colon = strrchr(addr, ':');
    size_t hl = colon ? (size_t)(colon - addr) : strlen(addr);
    if (hl >= sizeof(n->host))
        hl = sizeof(n->host) - 1;
    memcpy(n->host, addr, hl);
    n->host[hl] = '\0';
    if (n->host[0] == '[' && hl > 2) {
        memmove(n->host, n->host + 1, hl - 2);
        n->host[hl - 2] = '\0';
    }
    n->port = colon ? atoi(colon + 1) : (int)MEMBERSHIP_DEFAULT_PORT;
    c->all[c->n_all++] = n;
    return n;
}

static void rcl_connect_run(rcl_cluster *c, rcl_connect_state *st);

/* Makes `ring` (borrowed) the ring in use. -ENOMEM leaves the old one. */
static int rcl_adopt(rcl_cluster *c, struct ring *ring)
{
    size_t n = ring_member_count(ring);
    rcl_node **map = calloc(n ? n : 1, sizeof(*map));
    if (!map)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const struct ring_member *m = ring_member_at(ring, i);
        map[i] = rcl_node_get(c, m);
        if (!map[i]) {
            free(map);
            return -ENOMEM;
        }
    }
    if (c->ring)
        c->stats.ring_changes++;
    pthread_mutex_lock(&c->route_lock);
    ring_unref(&c->ring);
    c->ring = ring_ref(ring);
    free(c->ring_nodes);
    c->ring_nodes = map;
    c->n_ring = n;
    pthread_mutex_unlock(&c->route_lock);
    return 0;
}

static void rcl_on_change(void *arg, struct ring *ring)
{
    rcl_cluster *c = arg;
    if (c->destroying || rcl_adopt(c, ring) < 0)
        return;
    if (c->cfg.on_ring)
        c->cfg.on_ring(c->n_ring, c->cfg.on_ring_arg);
    if (c->waiting) {
        rcl_connect_state *st = c->waiting;
        c->waiting = NULL;
        if (c->wait_timer)
            event_del(c->wait_timer);
        rcl_connect_run(c, st);
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
    pthread_mutex_init(&c->route_lock, NULL);
    snprintf(c->token, sizeof(c->token), "%s", cfg->token ? cfg->token : "");
    c->cfg.token = NULL;
    c->cfg.members = NULL;
    if (c->cfg.parallel <= 0)
        c->cfg.parallel = 16;
    if (c->cfg.conns_per_node <= 0)
        c->cfg.conns_per_node = RCL_DEFAULT_CONNS;
    if (c->cfg.conns_per_node > RCL_MAX_CONNS)
        c->cfg.conns_per_node = RCL_MAX_CONNS;
    if (c->cfg.connect_timeout_ms <= 0)
        c->cfg.connect_timeout_ms = 2000;
    if (c->cfg.request_timeout_ms <= 0)
        c->cfg.request_timeout_ms = 30000;
    if (c->cfg.down_ms <= 0)
        c->cfg.down_ms = 5000;
    if (c->cfg.hedge_ms < 0)
        c->cfg.hedge_ms = 0;
    c->block_size = cfg->block_size;
    c->cfg.dns_server = NULL; /* borrowed for this call */
    if (cfg->tls) {
        int rc = cc_tls_check_ca(cfg->tls_ca, err, errlen);
        if (rc < 0) {
            pthread_mutex_destroy(&c->route_lock);
            free(c);
            return rc;
        }
    }
    struct membership_options mo = {0};
    mo.base = base;
    mo.dns = cfg->dns;
    mo.nameserver = cfg->dns_server;
    mo.interval_ms = cfg->dns_interval_ms;
    mo.on_change = rcl_on_change;
    mo.change_arg = c;
    const char *m = cfg->members ? cfg->members : "";
    int rc = membership_create(&c->ms, m, &mo, err, errlen);
    if (rc < 0) {
        pthread_mutex_destroy(&c->route_lock);
        free(c);
        return rc;
    }
    struct ring *r = membership_ring(c->ms);
    if (r) {
        rc = rcl_adopt(c, r);
        ring_unref(&r);
        if (rc < 0) {
            snprintf(err, errlen, "out of memory building the member table of %s", m);
            rcl_destroy(&c);
            return rc;
        }
    }
    *out = c;
    return 0;
}

void rcl_destroy(rcl_cluster **cp)
{
    if (!cp || !*cp)
        return;
    rcl_cluster *c = *cp;
    c->destroying = true;
    membership_destroy(&c->ms);
    if (c->wait_timer)
        event_free(c->wait_timer);
    if (c->waiting) {
        rcl_connect_state *st = c->waiting;
        c->waiting = NULL;
        rcl_connect_run(c, st); /* no ring: fails at once */
    }
    while (c->puts) {
        cc_conn *conn = c->puts->conn; /* its callback frees the op */
        c->puts->conn = NULL;
        cc_conn_destroy(&conn);
    }
    for (size_t i = 0; i < c->n_all; i++) {
        for (int k = 0; k < RCL_MAX_CONNS; k++)
            cc_conn_destroy(&c->all[i]->conns[k]);
        cc_conn_destroy(&c->all[i]->probe); /* its callback only touches the node */
        free(c->all[i]);
    }
    free(c->all);
    free(c->ring_nodes);
    ring_unref(&c->ring);
    pthread_mutex_destroy(&c->route_lock);
    free(c);
    *cp = NULL;
}

const char *rcl_tenant(const rcl_cluster *c)
{
    return c->tenant;
}
uint32_t rcl_block_size(const rcl_cluster *c)
{
    return c->block_size;
}
void rcl_stats_get(const rcl_cluster *c, rcl_stats *out)
{
    *out = c->stats;
}
size_t rcl_member_count(const rcl_cluster *c)
{
    return c->n_ring;
}

size_t rcl_members_up(const rcl_cluster *c)
{
    int64_t now = rcl_now_ms();
    size_t up = 0;
    for (size_t i = 0; i < c->n_ring; i++)
        if (atomic_load(&c->ring_nodes[i]->down_until_ms) <= now)
            up++;
    return up;
}

void rcl_reset_down(rcl_cluster *c)
{
    for (size_t i = 0; i < c->n_all; i++)
        rcl_clear_down(c->all[i]);
}

/* ---- connect -------------------------------------------------------------- */

typedef struct {
    rcl_cluster *c;
    rcl_node *node;
    cc_conn *conn; /* the connection pinged (alive while it answers) */
    rcl_connect_state *st;
} rcl_ping;

struct rcl_connect_state {
    rcl_done_fn done;
    void *arg;
    size_t pending;
    bool told;
    bool refused;
    char last[256];
};

static void rcl_ping_done(const cc_result *res, void *arg)
{
    rcl_ping *p = arg;
    rcl_connect_state *st = p->st;
    rcl_cluster *c = p->c;
    if (res->code == 0) {
        rcl_learn_hello(c, p->conn);
        if (!st->told) {
            st->told = true;
            st->done(0, NULL, st->arg);
        }
    } else {
        snprintf(st->last, sizeof(st->last), "%s", res->message);
        if (res->code == -EREMOTEIO)
            st->refused = true;
        if (res->code != -ECANCELED && !c->destroying)
            rcl_mark_down(c, p->node, RCL_NODE_DOWN, res->message);
    }
    if (--st->pending == 0) {
        if (!st->told) {
            st->told = true;
            char msg[400];
            snprintf(msg, sizeof(msg), "no cache node answered: %s", st->last);
            st->done(st->refused ? -EACCES : -EHOSTDOWN, msg, st->arg);
        }
        free(st);
    }
    free(p);
}

static void rcl_connect_fail_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rcl_connect_state *st = arg;
    char msg[400];
    snprintf(msg, sizeof(msg), "no cache node answered: %s", st->last);
    st->done(-EHOSTDOWN, msg, st->arg);
    free(st);
}

static void rcl_connect_run(rcl_cluster *c, rcl_connect_state *st)
{
    for (size_t i = 0; i < c->n_ring; i++) {
        rcl_node *n = c->ring_nodes[i];
        rcl_clear_down(n); /* connecting is an explicit probe of every member */
        cc_conn *conn = rcl_conn(c, n);
        rcl_ping *p = calloc(1, sizeof(*p));
        if (!conn || !p) {
            free(p);
            continue;
        }
        p->c = c;
        p->node = n;
        p->conn = conn;
        p->st = st;
        if (cc_ping(conn, rcl_ping_done, p) == 0)
            st->pending++;
        else
            free(p);
    }
    if (st->pending == 0) {
        if (c->destroying) {
            st->done(-ECANCELED, "the cluster is being destroyed", st->arg);
            free(st);
            return;
        }
        if (c->n_ring == 0)
            snprintf(st->last, sizeof(st->last), "the member source has no members yet");
        struct timeval tv = {0, 0};
        if (event_base_once(c->base, -1, EV_TIMEOUT, rcl_connect_fail_cb, st, &tv) < 0) {
            st->done(-ENOMEM, "out of memory", st->arg);
            free(st);
        }
    }
}

static void rcl_wait_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rcl_cluster *c = arg;
    if (!c->waiting)
        return;
    rcl_connect_state *st = c->waiting;
    c->waiting = NULL;
    snprintf(st->last, sizeof(st->last),
             "%s resolved to no member in time (is the name "
             "fully qualified, with SRV records?)",
             membership_spec(c->ms));
    rcl_connect_run(c, st);
}

int rcl_connect(rcl_cluster *c, rcl_done_fn done, void *arg)
{
    rcl_connect_state *st = calloc(1, sizeof(*st));
    if (!st)
        return -ENOMEM;
    st->done = done;
    st->arg = arg;
    snprintf(st->last, sizeof(st->last), "no members");
    if (c->n_ring == 0 && !c->waiting) {
        /* a dns: source still resolving: connect when the first ring comes */
        if (!c->wait_timer)
            c->wait_timer = evtimer_new(c->base, rcl_wait_timeout, c);
        if (!c->wait_timer) {
            free(st);
            return -ENOMEM;
        }
        int ms = c->cfg.connect_timeout_ms > 5000 ? c->cfg.connect_timeout_ms : 5000;
        struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
        evtimer_add(c->wait_timer, &tv);
        c->waiting = st;
        return 0;
    }
    rcl_connect_run(c, st);
    return 0;
}

/* ---- hedged operations: tries and the silence timer --------------------------- */

typedef struct rcl_hop rcl_hop;

/* One request of an operation, to one node. */
typedef struct rcl_try {
    rcl_hop *hop;
    rcl_node *node;
    cc_conn *conn;
    uint32_t id;
    bool live;  /* sent, not called back yet */
    bool hedge; /* sent because the other one was silent */
} rcl_try;

/* What reads and HEADs share: up to two tries in flight, a timer that sends
 * the second when the first's node has been silent for hedge_ms, and the
 * op's life (freed by free_fn once decided and both tries called back). */
struct rcl_hop {
    rcl_cluster *c;
    rcl_try tries[2];
    int live;
    bool decided;
    struct event *timer;
    int64_t sent_ms;             /* when the newest try went out */
    bool (*hedge)(rcl_hop *hop); /* send a try to the next candidate */
    void (*free_fn)(rcl_hop *hop);
};

static void rcl_hop_timer_cb(evutil_socket_t fd, short what, void *arg);

static void rcl_hop_arm(rcl_hop *hop, int ms)
{
    rcl_cluster *c = hop->c;
    if (c->cfg.hedge_ms <= 0 || hop->live != 1)
        return;
    if (!hop->timer)
        hop->timer = evtimer_new(c->base, rcl_hop_timer_cb, hop);
    if (!hop->timer)
        return; /* no hedging for this one: it still times out */
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(hop->timer, &tv);
}

/* A free slot of hop, or NULL when both tries are in flight. */
static rcl_try *rcl_hop_slot(rcl_hop *hop)
{
    for (int k = 0; k < 2; k++)
        if (!hop->tries[k].live)
            return &hop->tries[k];
    return NULL;
}

/* t was sent on conn as request id. */
static void rcl_hop_sent(rcl_hop *hop, rcl_try *t, rcl_node *n, cc_conn *conn, uint32_t id,
                         bool hedge)
{
    t->hop = hop;
    t->node = n;
    t->conn = conn;
    t->id = id;
    t->live = true;
    t->hedge = hedge;
    hop->live++;
    hop->sent_ms = rcl_now_ms();
    rcl_hop_arm(hop, hop->c->cfg.hedge_ms);
}

/* The first thing a try's callback does. True when the op was decided before
 * (the callback then only frees the op if it was the last try). */
static bool rcl_hop_called(rcl_try *t)
{
    rcl_hop *hop = t->hop;
    t->live = false;
    hop->live--;
    if (!hop->decided)
        return false;
    if (hop->live == 0)
        hop->free_fn(hop);
    return true;
}

/* The op has its outcome: the other try is cancelled (its callback comes
 * later, from the loop; none of its bytes reach the buffer from now on). */
static void rcl_hop_decide(rcl_hop *hop)
{
    hop->decided = true;
    if (hop->timer)
        evtimer_del(hop->timer);
    for (int k = 0; k < 2; k++)
        if (hop->tries[k].live)
            cc_cancel(hop->tries[k].conn, hop->tries[k].id);
}

/* After the decision and the last callback: free when nothing is in flight. */
static void rcl_hop_release(rcl_hop *hop)
{
    if (hop->live == 0)
        hop->free_fn(hop);
}

static void rcl_hop_deinit(rcl_hop *hop)
{
    if (hop->timer)
        event_free(hop->timer);
    hop->timer = NULL;
}

static void rcl_probe_done(const cc_result *res, void *arg)
{
    rcl_node *n = arg;
    n->probing = false;
    if (res->code == 0)
        n->alive_ms = rcl_now_ms();
}

/* Sends n a PING on its probe connection unless one is out. */
static void rcl_probe(rcl_cluster *c, rcl_node *n)
{
    if (n->probing)
        return;
    if (n->probe && cc_conn_broken(n->probe))
        cc_conn_destroy(&n->probe);
    if (!n->probe) {
        cc_config cc = {n->host,
                        n->port,
                        c->token[0] ? c->token : NULL,
                        c->cfg.block_size,
                        "ringcache-probe",
                        c->cfg.connect_timeout_ms,
                        c->cfg.request_timeout_ms,
                        c->cfg.tls,
                        c->cfg.tls_ca,
                        n->tls_name};
        if (cc_conn_create(&n->probe, c->base, &cc) < 0)
            return;
    }
    if (cc_ping(n->probe, rcl_probe_done, n) == 0) {
        n->probing = true;
        n->probe_sent_ms = rcl_now_ms();
    }
}

/* The try in flight has had no byte on its connection for hedge_ms: if its
 * node has sent nothing on any other connection of ours lately and does not
 * answer a PING within 2 x hedge_ms either (a new connection's HELLO and a
 * loaded machine's scheduling included), it is stopped or stalled, not
 * filling from a slow S3 (which is no failure): hedge. */
static void rcl_hop_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rcl_hop *hop = arg;
    rcl_cluster *c = hop->c;
    if (hop->decided || hop->live != 1 || c->destroying)
        return;
    rcl_try *t = hop->tries[0].live ? &hop->tries[0] : &hop->tries[1];
    rcl_node *n = t->node;
    int h = c->cfg.hedge_ms;
    int64_t now = rcl_now_ms();
    int64_t heard = cc_conn_last_rx_ms(t->conn);
    if (heard < hop->sent_ms)
        heard = hop->sent_ms;
    int64_t silent = now - heard;
    if (silent < h) { /* the node talks on this connection: look again later */
        rcl_hop_arm(hop, (int)(h - silent));
        return;
    }
    for (int k = 0; k < RCL_MAX_CONNS; k++) /* or on another one: it runs */
        if (n->conns[k] && cc_conn_last_rx_ms(n->conns[k]) > n->alive_ms)
            n->alive_ms = cc_conn_last_rx_ms(n->conns[k]);
    if (n->alive_ms > now - h) { /* it sent something lately: busy, not stopped */
        rcl_hop_arm(hop, (int)(n->alive_ms + h - now));
        return;
    }
    if (!n->probing) {
        rcl_probe(c, n);
        rcl_hop_arm(hop, 2 * h);
        return;
    }
    if (now - n->probe_sent_ms < 2 * h) { /* a busy node may take a while to answer */
        rcl_hop_arm(hop, (int)(n->probe_sent_ms + 2 * h - now));
        return;
    }
    char why[700];
    snprintf(why, sizeof(why),
             "cache node %s (%s) sent nothing for %lld ms and did not "
             "answer a PING within %d ms (stopped or stalled): its requests also go to the "
             "next owner",
             n->id, n->addr, (long long)silent, 2 * h);
    rcl_mark_down(c, t->node, RCL_NODE_SLOW, why);
    if (hop->hedge(hop))
        c->stats.hedges++;
}

/* ---- head ----------------------------------------------------------------- */

typedef struct {
    rcl_hop hop;     /* first: the tries point at it */
    size_t next;     /* next ring position to try */
    bkey_object obj; /* bucket and key */
    rcl_head_fn done;
    void *arg;
} rcl_head_op;

static void rcl_head_free(rcl_hop *hop)
{
    rcl_hop_deinit(hop);
    free(hop);
}

static void rcl_head_done(const cc_result *res, void *arg);

/* A HEAD to the next ring member that is up (every member once); false when
 * none is left. */
static bool rcl_head_send(rcl_head_op *op, bool hedge)
{
    rcl_cluster *c = op->hop.c;
    rcl_try *t = rcl_hop_slot(&op->hop);
    while (t && op->next < c->n_ring) {
        rcl_node *n = c->ring_nodes[op->next++];
        cc_conn *conn = rcl_is_down(n) ? NULL : rcl_conn(c, n);
        uint32_t id = 0;
        if (conn && cc_head_id(conn, op->obj.bucket, op->obj.key, rcl_head_done, t, &id) == 0) {
            rcl_hop_sent(&op->hop, t, n, conn, id, hedge);
            return true;
        }
    }
    return false;
}

static void rcl_head_finish(rcl_head_op *op, int code, const char *msg, uint64_t size,
                            const char *version);

/* As rcl_read_hedge: the next member, or S3 directly when none is left. */
static bool rcl_head_hedge(rcl_hop *hop)
{
    rcl_head_op *op = (rcl_head_op *)hop;
    if (rcl_head_send(op, true))
        return true;
    rcl_head_finish(op, -EHOSTDOWN,
                    "no cache node answered the HEAD in time (the last sent "
                    "nothing for the hedge delay)",
                    0, "");
    return false;
}

static void rcl_head_finish(rcl_head_op *op, int code, const char *msg, uint64_t size,
                            const char *version)
{
    rcl_hop_decide(&op->hop);
    op->done(code, msg, size, version, op->arg);
    rcl_hop_release(&op->hop);
}

static void rcl_head_done(const cc_result *res, void *arg)
{
    rcl_try *t = arg;
    rcl_head_op *op = (rcl_head_op *)t->hop;
    rcl_cluster *c = op->hop.c;
    if (rcl_hop_called(t))
        return;
    if (res->code == 0 || !rcl_node_fault(res) || c->destroying) {
        if (rcl_upstream(res)) {
            c->stats.upstream_failures++;
            rcl_tell(c, t->node, RCL_NODE_UPSTREAM, res->message);
        }
        if (res->code == 0 && t->hedge)
            c->stats.hedge_wins++;
        rcl_head_finish(op, rcl_remote_errno(res), res->code ? res->message : NULL, res->size,
                        res->version);
        return;
    }
    rcl_mark_down(c, t->node, RCL_NODE_DOWN, res->message);
    if (rcl_head_send(op, false) || op->hop.live > 0)
        return; /* the next member, or the other try still out */
    rcl_head_finish(op, -EHOSTDOWN, "no cache node could be reached for HEAD", 0, "");
}

static void rcl_head_start(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rcl_head_op *op = arg;
    if (!rcl_head_send(op, false))
        rcl_head_finish(op, -EHOSTDOWN, "no cache node could be reached for HEAD", 0, "");
}

int rcl_head(rcl_cluster *c, const char *bucket, const char *key, rcl_head_fn done, void *arg)
{
    rcl_head_op *op = calloc(1, sizeof(*op));
    if (!op)
        return -ENOMEM;
    op->hop.c = c;
    op->hop.hedge = rcl_head_hedge;
    op->hop.free_fn = rcl_head_free;
    if (bkey_object_init(&op->obj, NULL, bucket, key, NULL, 0) < 0) {
        free(op);
        return -EINVAL;
    }
    op->done = done;
    op->arg = arg;
    op->next = 0;
    /* from the loop, so done never runs inside this call */
    struct timeval tv = {0, 0};
    if (event_base_once(c->base, -1, EV_TIMEOUT, rcl_head_start, op, &tv) < 0) {
        free(op);
        return -ENOMEM;
    }
    return 0;
}

/* Up to RCL_MAX_OWNERS owners of the block id names (its tenant is set
 * here: the nodes'), in ring order. On the loop, or on another thread under
 * route_lock (rcl_route). */
static int rcl_owners_of(rcl_cluster *c, bkey_id *id, rcl_node **out)
{
    if (!c->ring)
        return 0;
    id->tenant = c->tenant;
    id->tenant_len = strlen(c->tenant);
    uint8_t rk[16];
    bkey_ring_key(bkey_of(id), rk);
    const struct ring_member *owners[RCL_MAX_OWNERS];
    int n = ring_lookup(c->ring, rk, sizeof(rk), owners, RCL_MAX_OWNERS);
    for (int k = 0; k < n; k++)
        out[k] = c->ring_nodes[ring_member_index(c->ring, owners[k])];
    return n > 0 ? n : 0;
}

/* The owners of block b of o. */
static int rcl_owners(rcl_cluster *c, const bkey_object *o, uint64_t b, rcl_node **out)
{
    bkey_id id;
    bkey_object_block(o, b, &id);
    return rcl_owners_of(c, &id, out);
}

int rcl_route(rcl_cluster *c, const rcl_object *obj, uint64_t b, rcl_target *out)
{
    int rc = -EHOSTDOWN;
    pthread_mutex_lock(&c->route_lock);
    if (!c->ring || !c->have_hello) {
        pthread_mutex_unlock(&c->route_lock);
        return -ENOTCONN;
    }
    rcl_node *own[RCL_MAX_OWNERS];
    bkey_id id;
    bkey_id_init(&id, "", obj->bucket, obj->key, obj->version, obj->size, b);
    int n = rcl_owners_of(c, &id, own);
    int64_t now = rcl_now_ms();
    for (int k = 0; k < n; k++) {
        if (atomic_load(&own[k]->down_until_ms) > now)
            continue;
        snprintf(out->id, sizeof(out->id), "%s", own[k]->id);
        snprintf(out->host, sizeof(out->host), "%s", own[k]->host);
        out->port = own[k]->port;
        out->node = own[k];
        rc = 0;
        break;
    }
    pthread_mutex_unlock(&c->route_lock);
    return rc;
}

void rcl_node_report(rcl_cluster *c, const rcl_target *t, rcl_node_event what, const char *why)
{
    rcl_node *n = t->node; /* the table only grows: still there */
    if (!n)
        return;
    if (what != RCL_NODE_UPSTREAM)
        atomic_store(&n->down_until_ms, rcl_now_ms() + c->cfg.down_ms);
    rcl_tell(c, n, what, why);
}

/* ---- read ------------------------------------------------------------------- */

typedef struct rcl_read_op rcl_read_op;
typedef struct {
    rcl_cluster *c;
    bkey_object obj; /* the object, pinned to its version and size */
    uint64_t off, len;
    uint8_t *buf;
    uint64_t next_block, last_block;
    int inflight;   /* ops not decided yet */
    bool launching; /* in rcl_read_launch: rd must outlive it */
    uint64_t done_bytes;
    int failed;
    char msg[2600];
    rcl_progress_fn progress;
    rcl_done_fn done;
    void *arg;
} rcl_read_state;

/* One block of a read. Both tries write the same bytes (same version, same
 * range) into the same place of the buffer; once the op is decided, rd may be
 * gone and only the tries' callbacks still use the op. */
struct rcl_read_op {
    rcl_hop hop; /* first: the tries point at it */
    rcl_read_state *rd;
    uint64_t block;
    uint32_t in_off, in_len; /* range inside the block */
    uint64_t buf_off;
    rcl_node *owners[RCL_MAX_OWNERS];
    int n_owners;
    int next; /* next owner to send to */
};

static void rcl_read_launch(rcl_read_state *rd);
static bool rcl_read_send(rcl_read_op *op, bool hedge);

static void rcl_read_finish_if_done(rcl_read_state *rd)
{
    if (rd->inflight > 0 || rd->launching)
        return;
    if (!rd->failed && rd->next_block <= rd->last_block)
        return;
    rd->done(rd->failed, rd->failed ? rd->msg : NULL, rd->arg);
    free(rd);
}

static void rcl_read_op_free(rcl_hop *hop)
{
    rcl_hop_deinit(hop);
    free(hop);
}

/* The block's outcome (code 0 or the read's error, msg set by the caller):
 * the read goes on without this op. */
static void rcl_read_decided(rcl_read_op *op)
{
    rcl_read_state *rd = op->rd;
    rcl_cluster *c = rd->c;
    rcl_hop_decide(&op->hop);
    op->rd = NULL;
    rd->inflight--;
    if (!rd->failed && !c->destroying)
        rcl_read_launch(rd); /* it finishes the read when nothing is left */
    else
        rcl_read_finish_if_done(rd);
    rcl_hop_release(&op->hop);
}

static void rcl_read_fail(rcl_read_op *op, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void rcl_read_fail(rcl_read_op *op, int code, const char *fmt, ...)
{
    rcl_read_state *rd = op->rd;
    if (!rd->failed) {
        rd->failed = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(rd->msg, sizeof(rd->msg), fmt, ap);
        va_end(ap);
    }
    rcl_read_decided(op);
}

static void rcl_read_block_done(const cc_result *res, void *arg)
{
    rcl_try *t = arg;
    rcl_read_op *op = (rcl_read_op *)t->hop;
    if (rcl_hop_called(t))
        return; /* the other try won, or the read failed without it */
    rcl_read_state *rd = op->rd;
    rcl_cluster *c = rd->c;
    if (res->code == 0) {
        c->stats.blocks++;
        c->stats.bytes += res->bytes;
        if (res->source == RCP_SRC_S3)
            c->stats.from_s3++;
        if (t->hedge)
            c->stats.hedge_wins++;
        rd->done_bytes += res->bytes;
        if (rd->progress)
            rd->progress(rd->done_bytes, rd->len, rd->arg);
        rcl_read_decided(op);
        return;
    }
    if (rd->failed || c->destroying) {
        rcl_read_decided(op);
        return;
    }
    if (rcl_node_fault(res)) {
        rcl_mark_down(c, t->node, RCL_NODE_DOWN, res->message);
        snprintf(rd->msg, sizeof(rd->msg), "%s", res->message);
        if (rcl_read_send(op, false) || op->hop.live > 0)
            return; /* the next owner, or the other try still out */
        char last[256];
        snprintf(last, sizeof(last), "%.255s", rd->msg);
        rcl_read_fail(op, -EHOSTDOWN,
                      "every cache node owning s3://%s/%s block %llu failed (last: %s)",
                      rd->obj.bucket, rd->obj.key, (unsigned long long)op->block, last);
        return;
    }
    if (rcl_upstream(res)) {
        c->stats.upstream_failures++;
        rcl_tell(c, t->node, RCL_NODE_UPSTREAM, res->message);
        rcl_read_fail(op, -EREMOTEIO, "%s", res->message);
        return;
    }
    int code = rcl_remote_errno(res);
    rcl_read_fail(op, code ? code : -EIO, "s3://%s/%s block %llu: %s", rd->obj.bucket, rd->obj.key,
                  (unsigned long long)op->block, res->message);
}

/* Sends the block to the next owner that is up, into a free try; false when
 * no owner is left (or both tries are out). */
static bool rcl_read_send(rcl_read_op *op, bool hedge)
{
    rcl_read_state *rd = op->rd;
    rcl_cluster *c = rd->c;
    rcl_try *t = rcl_hop_slot(&op->hop);
    while (t && op->next < op->n_owners) {
        rcl_node *n = op->owners[op->next++];
        cc_conn *conn = rcl_is_down(n) ? NULL : rcl_conn(c, n);
        uint32_t id = 0;
        rcp_get_req g = {
            {rcp_s(rd->obj.bucket), rcp_s(rd->obj.key), rcp_s(rd->obj.version), rd->obj.size},
            op->block,
            op->in_off,
            op->in_len,
            c->cfg.no_fill ? (uint32_t)RCP_GET_CACHE_ONLY : 0u};
        if (conn &&
            cc_get(conn, &g, rd->buf + op->buf_off, op->in_len, rcl_read_block_done, t, &id) == 0) {
            rcl_hop_sent(&op->hop, t, n, conn, id, hedge);
            if (!hedge && op->next > 1)
                c->stats.failovers++; /* not its first owner: that one failed or is down */
            return true;
        }
    }
    return false;
}

/* The owner has been silent for hedge_ms (and is marked down now): the next
 * owner too, or, when there is none, the block fails as if every owner were
 * down (the caller reads S3) rather than wait for the request timeout. */
static bool rcl_read_hedge(rcl_hop *hop)
{
    rcl_read_op *op = (rcl_read_op *)hop;
    if (rcl_read_send(op, true))
        return true;
    rcl_read_state *rd = op->rd;
    rcl_read_fail(op, -EHOSTDOWN,
                  "every cache node owning s3://%s/%s block %llu is down or "
                  "silent (the last sent nothing for %d ms)",
                  rd->obj.bucket, rd->obj.key, (unsigned long long)op->block, hop->c->cfg.hedge_ms);
    return false;
}

/* Starts blocks up to `parallel` in flight, then finishes the read if
 * nothing is left (rd may be gone when it returns). A block whose owners
 * are all down fails at once: the read must outlive that, hence launching. */
static void rcl_read_launch(rcl_read_state *rd)
{
    rcl_cluster *c = rd->c;
    uint64_t bs = c->block_size;
    if (rd->launching)
        return; /* called back from inside itself: the outer loop goes on */
    rd->launching = true;
    while (!rd->failed && rd->inflight < c->cfg.parallel && rd->next_block <= rd->last_block) {
        uint64_t b = rd->next_block++;
        rcl_read_op *op = calloc(1, sizeof(*op));
        if (!op) {
            rd->failed = -ENOMEM;
            snprintf(rd->msg, sizeof(rd->msg), "out of memory");
            break;
        }
        op->hop.c = c;
        op->hop.hedge = rcl_read_hedge;
        op->hop.free_fn = rcl_read_op_free;
        op->rd = rd;
        op->block = b;
        uint64_t bstart = b * bs;
        uint64_t blen = bkey_block_len(rd->obj.size, bs, b);
        uint64_t from = rd->off > bstart ? rd->off - bstart : 0;
        uint64_t to = rd->off + rd->len < bstart + blen ? rd->off + rd->len - bstart : blen;
        op->in_off = (uint32_t)from;
        op->in_len = (uint32_t)(to - from);
        op->buf_off = bstart + from - rd->off;
        op->n_owners = rcl_owners(c, &rd->obj, b, op->owners);
        rd->inflight++;
        if (!rcl_read_send(op, false)) {
            char last[256];
            snprintf(last, sizeof(last), "%.255s", rd->msg[0] ? rd->msg : "marked down");
            rcl_read_fail(op, -EHOSTDOWN,
                          "every cache node owning s3://%s/%s block %llu failed (last: %s)",
                          rd->obj.bucket, rd->obj.key, (unsigned long long)b, last);
        }
    }
    rd->launching = false;
    rcl_read_finish_if_done(rd);
}

static void rcl_read_start(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rcl_read_state *rd = arg;
    rd->inflight--;
    rcl_read_launch(rd); /* nothing to launch when len is 0: it finishes */
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
    if (bkey_object_init(&rd->obj, NULL, obj->bucket, obj->key, obj->version, obj->size) < 0) {
        free(rd);
        return -EINVAL; /* a name over its limit (blockkey.h) */
    }
    rd->off = off;
    rd->len = len;
    rd->buf = buf;
    rd->progress = progress;
    rd->done = done;
    rd->arg = arg;
    if (len == 0) {
        rd->next_block = 1;
        rd->last_block = 0;
    } else {
        rd->next_block = off / c->block_size;
        rd->last_block = (off + len - 1) / c->block_size;
    }
    /* start from the loop, so done never runs inside this call (a read whose
     * owners are all marked down would otherwise finish synchronously) */
    rd->inflight = 1;
    struct timeval tv = {0, 0};
    if (event_base_once(c->base, -1, EV_TIMEOUT, rcl_read_start, rd, &tv) < 0) {
        free(rd);
        return -ENOMEM;
    }
    return 0;
}

/* ---- put ----------------------------------------------------------------------- */

/* Each PUT gets a connection of its own: its data frames then never queue
 * behind (or hold up) block GETs, and the request is submitted before the
 * connection is ready, so cacheconn reads the data source only after cc_put
 * has set it up (cc_put on a ready connection starts streaming from inside
 * cc_submit, before the source is attached). */

static void rcl_put_free(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rcl_put_op *op = arg;
    cc_conn_destroy(&op->conn);
    free(op);
}

static void rcl_put_done(const cc_result *res, void *arg)
{
    rcl_put_op *op = arg;
    int code = rcl_remote_errno(res);
    if (rcl_node_fault(res) && res->code != -EREMOTEIO) {
        rcl_mark_down(op->c, op->node, RCL_NODE_DOWN, res->message);
        code = -EHOSTDOWN;
    }
    rcl_cluster *c = op->c;
    if (op->prev)
        op->prev->next = op->next;
    else
        c->puts = op->next;
    if (op->next)
        op->next->prev = op->prev;
    op->done(code, res->code ? res->message : NULL, res->version, op->arg);
    /* the connection is freed from the loop, not inside its own callback; when
     * the cluster is being destroyed, rcl_destroy is freeing it right now */
    struct timeval tv = {0, 0};
    if (c->destroying || event_base_once(c->base, -1, EV_TIMEOUT, rcl_put_free, op, &tv) < 0) {
        op->conn = NULL;
        free(op);
    }
}

int rcl_put(rcl_cluster *c, const char *bucket, const char *key, uint64_t size, cc_read_fn read_fn,
            void *read_arg, rcl_put_fn done, void *arg)
{
    int64_t now = rcl_now_ms();
    for (size_t i = 0; i < c->n_ring; i++) {
        rcl_node *n = c->ring_nodes[i];
        if (atomic_load(&n->down_until_ms) > now)
            continue;
        rcl_put_op *op = calloc(1, sizeof(*op));
        if (!op)
            return -ENOMEM;
        cc_config cc = {n->host,
                        n->port,
                        c->token[0] ? c->token : NULL,
                        c->cfg.block_size,
                        "ringcache-put",
                        c->cfg.connect_timeout_ms,
                        c->cfg.request_timeout_ms,
                        c->cfg.tls,
                        c->cfg.tls_ca,
                        n->tls_name};
        if (cc_conn_create(&op->conn, c->base, &cc) < 0) {
            free(op);
            continue;
        }
        op->c = c;
        op->node = n;
        op->done = done;
        op->arg = arg;
        if (cc_put(op->conn, bucket, key, size, read_fn, read_arg, rcl_put_done, op) == 0) {
            op->next = c->puts;
            if (c->puts)
                c->puts->prev = op;
            c->puts = op;
            return 0;
        }
        cc_conn_destroy(&op->conn);
        free(op);
    }
    return -EHOSTDOWN;
}

/* ---- warm ----------------------------------------------------------------------- */

typedef struct rcl_warm_state rcl_warm_state;
typedef struct {
    rcl_warm_state *st;
    rcl_node *node;
    uint64_t *blocks;
    uint32_t n;
} rcl_warm_req;

struct rcl_warm_state {
    rcl_cluster *c;
    bkey_object obj; /* the object, pinned to its version and size */
    size_t pending;
    uint64_t started;
    int failed;
    char msg[2600];
    rcl_warm_fn done;
    void *arg;
};

static void rcl_warm_finish(rcl_warm_state *st)
{
    if (st->pending)
        return;
    st->done(st->failed, st->failed ? st->msg : NULL, st->started, st->arg);
    free(st);
}

static void rcl_warm_dispatch(rcl_warm_state *st, const uint64_t *blocks, size_t n);

static void rcl_warm_done(const cc_result *res, void *arg)
{
    rcl_warm_req *w = arg;
    rcl_warm_state *st = w->st;
    rcl_cluster *c = st->c;
    if (res->code == 0) {
        st->started += w->n; /* blocks a node took (cacheconn drops its count) */
    } else if (rcl_node_fault(res) && !c->destroying) {
        rcl_mark_down(c, w->node, RCL_NODE_DOWN, res->message);
        c->stats.failovers++;
        rcl_warm_dispatch(st, w->blocks, w->n); /* next owners */
    } else if (!st->failed) {
        st->failed = rcl_remote_errno(res);
        snprintf(st->msg, sizeof(st->msg), "WARM s3://%s/%s on %s: %s", st->obj.bucket, st->obj.key,
                 w->node->id, res->message);
    }
    st->pending--;
    free(w->blocks);
    free(w);
    rcl_warm_finish(st);
}

/* Groups blocks by their first live owner and sends one WARM per owner (in
 * pieces of at most RCP_MAX_WARM_BLOCKS). */
static void rcl_warm_dispatch(rcl_warm_state *st, const uint64_t *blocks, size_t n)
{
    rcl_cluster *c = st->c;
    rcl_node **pick = calloc(n ? n : 1, sizeof(*pick));
    if (!pick) {
        st->failed = -ENOMEM;
        snprintf(st->msg, sizeof(st->msg), "out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        rcl_node *own[RCL_MAX_OWNERS];
        int no = rcl_owners(c, &st->obj, blocks[i], own);
        for (int k = 0; k < no && !pick[i]; k++)
            if (rcl_conn(c, own[k]))
                pick[i] = own[k];
        if (!pick[i] && !st->failed) {
            st->failed = -EHOSTDOWN;
            snprintf(st->msg, sizeof(st->msg),
                     "every cache node owning s3://%s/%s block %llu is down", st->obj.bucket,
                     st->obj.key, (unsigned long long)blocks[i]);
        }
    }
    for (size_t i = 0; i < n; i++) {
        rcl_node *node = pick[i];
        if (!node)
            continue;
        /* gather this node's blocks from i on */
        uint64_t *mine = malloc(n * sizeof(*mine));
        size_t m = 0;
        if (!mine) {
            st->failed = -ENOMEM;
            break;
        }
        for (size_t j = i; j < n; j++)
            if (pick[j] == node) {
                mine[m++] = blocks[j];
                pick[j] = NULL;
            }
        for (size_t from = 0; from < m; from += RCP_MAX_WARM_BLOCKS) {
            size_t k = m - from < RCP_MAX_WARM_BLOCKS ? m - from : RCP_MAX_WARM_BLOCKS;
            rcl_warm_req *w = calloc(1, sizeof(*w));
            uint64_t *part = malloc(k * sizeof(*part));
            if (!w || !part) {
                free(w);
                free(part);
                st->failed = -ENOMEM;
                break;
            }
            memcpy(part, mine + from, k * sizeof(*part));
            w->st = st;
            w->node = node;
            w->blocks = part;
            w->n = (uint32_t)k;
            rcp_object o = {rcp_s(st->obj.bucket), rcp_s(st->obj.key), rcp_s(st->obj.version),
                            st->obj.size};
            cc_conn *conn = rcl_conn(c, node);
            if (!conn || cc_warm(conn, &o, part, w->n, rcl_warm_done, w) != 0) {
                free(part);
                free(w);
                if (!st->failed) {
                    st->failed = -EHOSTDOWN;
                    snprintf(st->msg, sizeof(st->msg), "cannot send WARM to %s", node->id);
                }
                continue;
            }
            st->pending++;
        }
        free(mine);
    }
    free(pick);
}

static void rcl_warm_start(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rcl_warm_state *st = arg;
    uint64_t bs = st->c->block_size;
    uint64_t nb = bkey_block_count(st->obj.size, bs);
    uint64_t *all = malloc((nb ? nb : 1) * sizeof(*all));
    if (!all) {
        st->failed = -ENOMEM;
        snprintf(st->msg, sizeof(st->msg), "out of memory");
    } else {
        for (uint64_t b = 0; b < nb; b++)
            all[b] = b;
        rcl_warm_dispatch(st, all, nb);
        free(all);
    }
    st->pending--;
    rcl_warm_finish(st);
}

int rcl_warm(rcl_cluster *c, const rcl_object *obj, rcl_warm_fn done, void *arg)
{
    if (!c->block_size || !c->have_hello)
        return -ENOTCONN;
    rcl_warm_state *st = calloc(1, sizeof(*st));
    if (!st)
        return -ENOMEM;
    st->c = c;
    if (bkey_object_init(&st->obj, NULL, obj->bucket, obj->key, obj->version, obj->size) < 0) {
        free(st);
        return -EINVAL; /* a name over its limit (blockkey.h) */
    }
    st->done = done;
    st->arg = arg;
    st->pending = 1; /* held until the loop dispatches */
    struct timeval tv = {0, 0};
    if (event_base_once(c->base, -1, EV_TIMEOUT, rcl_warm_start, st, &tv) < 0) {
        free(st);
        return -ENOMEM;
    }
    return 0;
}

/* ---- stats ----------------------------------------------------------------------- */

typedef struct {
    rcl_cluster *c;
    rcl_node *node; /* NULL: the hold reference */
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
    rcl_node *n = op->node;
    st->fn(n->id, n->addr, res->code, res->code ? res->message : res->text, st->arg);
    if (--st->pending == 0) {
        st->done(0, NULL, st->arg);
        free(st);
    }
    free(op);
}

/* A member that could not be asked (or the hold reference, node NULL). */
static void rcl_stats_unreachable(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rcl_stats_op *op = arg;
    rcl_stats_state *st = op->st;
    if (op->node)
        st->fn(op->node->id, op->node->addr, -ECONNREFUSED, "cannot connect", st->arg);
    if (--st->pending == 0) {
        st->done(0, NULL, st->arg);
        free(st);
    }
    free(op);
}

int rcl_stats_all(rcl_cluster *c, rcl_node_text_fn fn, rcl_done_fn done, void *arg)
{
    rcl_stats_state *st = calloc(1, sizeof(*st));
    rcl_stats_op *hold = calloc(1, sizeof(*hold));
    if (!st || !hold) {
        free(st);
        free(hold);
        return -ENOMEM;
    }
    st->fn = fn;
    st->done = done;
    st->arg = arg;
    st->pending = 1; /* held until every request is out */
    for (size_t i = 0; i < c->n_ring; i++) {
        rcl_node *n = c->ring_nodes[i];
        rcl_clear_down(n); /* ask every member, even one marked down */
        cc_conn *conn = rcl_conn(c, n);
        rcl_stats_op *op = calloc(1, sizeof(*op));
        if (!op)
            break;
        op->c = c;
        op->node = n;
        op->st = st;
        st->pending++;
        if (!conn || cc_stats(conn, rcl_stats_done, op) != 0) {
            struct timeval tv = {0, 0};
            event_base_once(c->base, -1, EV_TIMEOUT, rcl_stats_unreachable, op, &tv);
        }
    }
    struct timeval tv = {0, 0};
    hold->c = c;
    hold->node = NULL;
    hold->st = st;
    event_base_once(c->base, -1, EV_TIMEOUT, rcl_stats_unreachable, hold, &tv);
    return 0;
}
