/* SPDX-License-Identifier: Apache-2.0
 *
 * node_worker.c: the node's worker threads. Each has its own event loop, its
 * listener on the protocol port (SO_REUSEPORT: one socket per worker on the
 * same port), its store worker, its S3 clients (the node's and one per
 * tenant with its own credentials) and its mailbox, the one way other
 * threads reach it. Accepting (with --max-connections and the pause when
 * descriptors run out), the sweep of frame and idle timeouts, and the drain
 * after SIGTERM run here; the connections themselves are node_conn.c's.
 */
#include "node_int.h"
#include "node_s3api.h"
#include "errf.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

/* ---- buffers ------------------------------------------------------------------- */

node_buf *node_buf_new(size_t len)
{
    node_buf *b = malloc(sizeof(*b) + (len ? len : 1));
    if (!b)
        return NULL;
    atomic_init(&b->ref, 1);
    b->len = len;
    return b;
}

void node_buf_ref(node_buf *b)
{
    atomic_fetch_add_explicit(&b->ref, 1, memory_order_relaxed);
}

void node_buf_unref(node_buf *b)
{
    if (b && atomic_fetch_sub_explicit(&b->ref, 1, memory_order_acq_rel) == 1)
        free(b);
}

/* ---- mailboxes and S3 clients ------------------------------------------------ */

void node__post(node_worker *w, node_msg *m)
{
    m->next = NULL;
    pthread_mutex_lock(&w->mb_lock);
    if (w->mb_tail)
        w->mb_tail->next = m;
    else
        w->mb_head = m;
    w->mb_tail = m;
    pthread_mutex_unlock(&w->mb_lock);
    event_active(w->mailbox_ev, EV_READ, 0);
}

static void worker_mailbox_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    node_worker *w = arg;
    pthread_mutex_lock(&w->mb_lock);
    node_msg *m = w->mb_head;
    w->mb_head = w->mb_tail = NULL;
    pthread_mutex_unlock(&w->mb_lock);
    while (m) {
        node_msg *nx = m->next;
        node_req_deliver(w, m); /* takes ownership */
        m = nx;
    }
}

s3_client *node__s3_for(node_worker *w, const ten_tenant *t)
{
    node *n = w->n;
    if (t && n->tenants && ten_access_key(t)) {
        size_t cnt = ten_count(n->tenants);
        for (size_t i = 0; i < cnt; i++) {
            if (ten_at(n->tenants, i) != t)
                continue;
            if (!w->tenant_s3[i]) {
                s3_config c = n->s3cfg;
                snprintf(c.access_key, sizeof(c.access_key), "%s", ten_access_key(t));
                snprintf(c.secret_key, sizeof(c.secret_key), "%s",
                         ten_secret_key(t) ? ten_secret_key(t) : "");
                snprintf(c.session_token, sizeof(c.session_token), "%s",
                         ten_session_token(t) ? ten_session_token(t) : "");
                if (s3_client_create(&w->tenant_s3[i], &c, w->base) < 0)
                    return w->s3;
            }
            return w->tenant_s3[i];
        }
    }
    return w->s3;
}

static void listener_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                        int salen, void *arg)
{
    (void)l;
    (void)sa;
    (void)salen;
    node_worker *w = arg;
    node *n = w->n;
    if (atomic_load(&n->stopping)) {
        close(fd);
        return;
    }
    if (atomic_load(&n->conns_open) >= n->max_connections) {
        /* one ERROR frame (plain text only: a TLS client gets the close) */
        node__count(w, NM_CONN_REFUSED, 1);
        if (!n->ssl_ctx) {
            char msg[200];
            snprintf(msg, sizeof(msg),
                     "this node has its %d connections open (--max-connections): use another "
                     "node or try again",
                     n->max_connections);
            uint8_t frame[RCP_HEADER_SIZE + 256];
            rcp_error e = {RCP_E_BUSY, rcp_s(msg)};
            int k = rcp_encode_error(&e, frame + RCP_HEADER_SIZE, sizeof(frame) - RCP_HEADER_SIZE);
            if (k > 0) {
                rcp_header h = {RCP_OP_ERROR, RCP_F_RESPONSE, 0, (uint32_t)k};
                rcp_header_encode(&h, frame);
                ssize_t wr =
                    send(fd, frame, RCP_HEADER_SIZE + (size_t)k, MSG_NOSIGNAL | MSG_DONTWAIT);
                (void)wr;
            }
        }
        close(fd);
        return;
    }
    node__accept(w, fd);
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void accept_resume_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    node_worker *w = arg;
    if (w->accept_paused && !atomic_load(&w->n->stopping)) {
        w->accept_paused = false;
        evconnlistener_enable(w->listener);
    }
}

/* accept() failed. Out of descriptors (EMFILE, ENFILE, ENOBUFS, ENOMEM): the
 * pending connection stays in the backlog and the listener would wake at
 * once, forever; so stop accepting until a connection of this worker closes
 * or 100 ms pass (memcached does the same), count it, and log at most one
 * line per 10 s. */
static void listener_error_cb(struct evconnlistener *l, void *arg)
{
    node_worker *w = arg;
    node *n = w->n;
    int e = EVUTIL_SOCKET_ERROR();
    node__count(w, NM_ACCEPT_ERRORS, 1);
    if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
        evconnlistener_disable(l);
        w->accept_paused = true;
        struct timeval tv = {0, 100000};
        evtimer_add(w->accept_timer, &tv);
    }
    int64_t now = mono_ms(), last = atomic_load(&n->accept_log_ms);
    if (now - last >= 10000 && atomic_compare_exchange_strong(&n->accept_log_ms, &last, now)) {
        long long skipped = atomic_exchange(&n->accept_log_skipped, 0);
        node_log(NODE_LOG_WARN,
                 "msg=\"cannot accept a connection: %s (accepting pauses until one closes; "
                 "raise the descriptor limit, ulimit -n, or lower --max-connections)\" "
                 "connections=%d not_logged=%lld",
                 strerror(e), atomic_load(&n->conns_open), skipped);
    } else {
        atomic_fetch_add(&n->accept_log_skipped, 1);
    }
}

static void worker_sweep_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    node__sweep(arg, mono_ms());
}

static void worker_drain_check(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    node_worker *w = arg;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    if (!w->drain_deadline_ms)
        w->drain_deadline_ms = now + w->n->conf.drain_timeout_ms;
    size_t busy = node__conn_count(w) + node__s3api_busy(w);
    if (busy == 0 || now >= w->drain_deadline_ms) {
        if (busy)
            node_log(NODE_LOG_WARN, "msg=\"drain deadline passed\" worker=%u connections=%zu",
                     w->idx, busy);
        node__close_all(w);
        event_base_loopexit(w->base, NULL);
        return;
    }
    struct timeval tv = {0, 50000};
    evtimer_add(w->drain_timer, &tv);
}

static void worker_stop_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    node_worker *w = arg;
    if (w->listener)
        evconnlistener_disable(w->listener);
    if (w->accept_timer)
        evtimer_del(w->accept_timer);
    node__s3api_stop(w);
    w->drain_timer = evtimer_new(w->base, worker_drain_check, w);
    worker_drain_check(-1, 0, w);
}

static void *worker_main(void *arg)
{
    node_worker *w = arg;
    event_base_dispatch(w->base);
    /* drained: release what lives on this thread */
    node__s3api_exit(w);
    for (size_t i = 0; i < w->n_peers; i++)
        cc_conn_destroy(&w->peers[i]);
    event_base_loop(w->base, EVLOOP_NONBLOCK);
    bs_worker_detach(&w->bs);
    s3_client_destroy(&w->s3);
    if (w->n->tenants)
        for (size_t i = 0; i < ten_count(w->n->tenants); i++)
            s3_client_destroy(&w->tenant_s3[i]);
    if (w->drain_timer)
        event_free(w->drain_timer);
    w->drain_timer = NULL;
    return NULL;
}

/* ---- setup and teardown --------------------------------------------------------- */

static int bind_listener(const char *addr, int port, int *fd_out, int *port_out)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    socklen_t sl;
    if (strchr(addr, ':')) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1)
            return -EINVAL;
        sl = sizeof(*s6);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, addr, &s4->sin_addr) != 1)
            return -EINVAL;
        sl = sizeof(*s4);
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, 1024) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    if (port == 0) {
        getsockname(fd, (struct sockaddr *)&ss, &sl);
        port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                              : ((struct sockaddr_in *)&ss)->sin_port);
    }
    *fd_out = fd;
    *port_out = port;
    return 0;
}

int node_workers_setup(node *n, char *err, size_t errlen)
{
    const node_conf *conf = &n->conf;
    unsigned threads = n->n_workers;
    n->workers = calloc(threads, sizeof(*n->workers));
    if (!n->workers) {
        errf_set(err, errlen, "out of memory setting up %u worker threads", threads);
        return -ENOMEM;
    }
    /* the protocol port: one socket per worker on the same port (SO_REUSEPORT) */
    int port = (int)conf->port;
    int rc;
    for (unsigned i = 0; i < threads; i++) {
        node_worker *w = &n->workers[i];
        w->n = n;
        w->idx = i;
        dlist_init(&w->conns);
        pthread_mutex_init(&w->mb_lock, NULL);
        w->base = event_base_new();
        if (!w->base) {
            errf_set(err, errlen, "cannot set up worker %u: out of memory", i);
            return -ENOMEM;
        }
        int fd = -1;
        rc = bind_listener(conf->listen, port, &fd, &port);
        if (rc < 0) {
            if (rc == -EADDRINUSE)
                errf_set(err, errlen, "port %s:%lld is in use (set --port, or 0 for any)",
                         conf->listen, (long long)conf->port);
            else if (rc == -EINVAL)
                errf_set(err, errlen, "--listen '%s' is not an IP address", conf->listen);
            else
                errf_set(err, errlen, "cannot listen on %s:%d: %s", conf->listen, port,
                         strerror(-rc));
            return rc;
        }
        w->listener = evconnlistener_new(w->base, listener_cb, w, LEV_OPT_CLOSE_ON_FREE, -1, fd);
        w->mailbox_ev = event_new(w->base, -1, EV_PERSIST | EV_READ, worker_mailbox_cb, w);
        w->stop_ev = event_new(w->base, -1, 0, worker_stop_cb, w);
        w->accept_timer = evtimer_new(w->base, accept_resume_cb, w);
        w->sweep_timer = event_new(w->base, -1, EV_PERSIST, worker_sweep_cb, w);
        if (w->listener)
            evconnlistener_set_error_cb(w->listener, listener_error_cb);
        else
            close(fd);
        if (w->sweep_timer) {
            struct timeval tv = {0, 250000};
            event_add(w->sweep_timer, &tv);
        }
        if (n->tenants)
            w->tenant_s3 = calloc(ten_count(n->tenants) + 1, sizeof(s3_client *));
        if (!w->listener || !w->mailbox_ev || !w->stop_ev || !w->accept_timer || !w->sweep_timer ||
            (n->tenants && !w->tenant_s3) || node_reqs_setup(w) < 0) {
            errf_set(err, errlen, "cannot set up worker %u: out of memory", i);
            return -ENOMEM;
        }
        event_add(w->mailbox_ev, NULL);
        if ((rc = bs_worker_attach(n->store, w->base, &w->bs)) < 0 ||
            (rc = s3_client_create(&w->s3, &n->s3cfg, w->base)) < 0) {
            errf_set(err, errlen, "cannot set up worker %u: %s", i, strerror(-rc));
            return rc;
        }
    }
    n->port = port;
    return 0;
}

void node_workers_teardown(node *n)
{
    for (unsigned i = 0; n->workers && i < n->n_workers; i++) {
        node_worker *w = &n->workers[i];
        if (w->listener)
            evconnlistener_free(w->listener);
        if (w->bs)
            bs_worker_detach(&w->bs);
        s3_client_destroy(&w->s3);
        if (w->tenant_s3) {
            for (size_t k = 0; n->tenants && k < ten_count(n->tenants); k++)
                s3_client_destroy(&w->tenant_s3[k]);
            free(w->tenant_s3);
        }
        free(w->peers);
        free(w->peer_down_ms);
        if (w->mailbox_ev) {
            /* messages left: drop their buffers */
            worker_mailbox_cb(-1, 0, w);
            event_free(w->mailbox_ev);
        }
        node_reqs_teardown(w);
        if (w->stop_ev)
            event_free(w->stop_ev);
        if (w->accept_timer)
            event_free(w->accept_timer);
        if (w->sweep_timer)
            event_free(w->sweep_timer);
        if (w->base)
            event_base_free(w->base);
        if (w->n) /* its setup began */
            pthread_mutex_destroy(&w->mb_lock);
    }
    free(n->workers);
    n->workers = NULL;
}

int node_workers_start(node *n)
{
    for (unsigned i = 0; i < n->n_workers; i++)
        if (pthread_create(&n->workers[i].thread, NULL, worker_main, &n->workers[i]) != 0) {
            node_log(NODE_LOG_ERROR, "msg=\"cannot start worker threads\"");
            n->n_running = i;
            return -EAGAIN;
        }
    n->n_running = n->n_workers;
    return 0;
}

void node_workers_stop(node *n)
{
    for (unsigned i = 0; i < n->n_workers; i++)
        event_active(n->workers[i].stop_ev, EV_READ, 0);
}

void node_workers_join(node *n)
{
    for (unsigned i = 0; i < n->n_running; i++)
        pthread_join(n->workers[i].thread, NULL);
    n->n_running = 0;
}
