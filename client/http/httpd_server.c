/* SPDX-License-Identifier: Apache-2.0
 *
 * httpd_server.c: the server around the connections: the configuration and
 * its limits, the listener (bind, accept, a pause when the process runs out
 * of descriptors), the connection cap (connections over it are still read up
 * to their first head and answered 503, a few at a time, so the client learns
 * why; beyond that they are closed at once), TLS, the drain, the counters and
 * the cached Date header.
 */
#include "httpd_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/ssl.h>

#define HTTPD_PARSER_HEADER_CAP (80 * 1024) /* http_parser's HTTP_MAX_HEADER_SIZE */
#define HTTPD_REJECT_MAX        64          /* over-cap connections answered at once */

void httpd_config_init(httpd_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->listen_fd = -1;
}

static int fill_defaults(httpd_config *c, char *err, size_t errlen)
{
#define DEF(f, v)                                                                                  \
    if (c->f == 0)                                                                                 \
    c->f = (v)
    DEF(backlog, 1024);
    DEF(max_url_bytes, 8 * 1024);
    DEF(max_header_bytes, 32 * 1024);
    DEF(max_headers, 100);
    DEF(in_buffer_bytes, 256 * 1024);
    DEF(out_high_bytes, 1024 * 1024);
    DEF(out_low_bytes, c->out_high_bytes / 4);
    DEF(max_discard_bytes, 1024 * 1024);
    DEF(max_conns, 10000);
    DEF(idle_timeout_ms, 60000);
    DEF(header_timeout_ms, 30000);
    DEF(body_timeout_ms, 60000);
    DEF(write_timeout_ms, 60000);
    DEF(linger_ms, 2000);
#undef DEF
    const char *bad = NULL;
    if (c->handler == NULL)
        bad = "a request handler is required";
    else if (c->max_header_bytes > HTTPD_PARSER_HEADER_CAP)
        bad = "max_header_bytes is above 80 KiB, the HTTP parser's own cap";
    else if (c->max_url_bytes > c->max_header_bytes)
        bad = "max_url_bytes must not be larger than max_header_bytes";
    else if (c->max_headers < 1 || c->max_headers > 10000)
        bad = "max_headers must be between 1 and 10000";
    else if (c->out_low_bytes >= c->out_high_bytes)
        bad = "out_low_bytes must be below out_high_bytes";
    else if (c->max_conns < 1)
        bad = "max_conns must be at least 1";
    else if (c->in_buffer_bytes < 1024)
        bad = "in_buffer_bytes must be at least 1 KiB";
    if (bad != NULL) {
        if (err && errlen)
            snprintf(err, errlen, "HTTP server: %s", bad);
        return -EINVAL;
    }
    return 0;
}

/* ---- the Date header ------------------------------------------------------- */

const char *httpd__date(httpd_server *srv)
{
    time_t now = time(NULL);
    if (now != srv->date_t) {
        static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
        static const char mons[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
        struct tm tm;
        gmtime_r(&now, &tm);
        snprintf(srv->date, sizeof srv->date, "%s, %02d %s %04d %02d:%02d:%02d GMT",
                 days[tm.tm_wday % 7], tm.tm_mday, mons[tm.tm_mon % 12], tm.tm_year + 1900,
                 tm.tm_hour, tm.tm_min, tm.tm_sec);
        srv->date_t = now;
    }
    return srv->date;
}

/* ---- connections ------------------------------------------------------------- */

static int serve_fd(httpd_server *srv, int fd, const struct sockaddr *sa, socklen_t salen)
{
    bool reject = srv->nconns >= srv->cfg.max_conns;
    if (reject && srv->nreject >= HTTPD_REJECT_MAX) {
        HTTPD__ADD(srv, conns_rejected, 1);
        close(fd);
        return -EAGAIN;
    }
    evutil_make_socket_nonblocking(fd);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct bufferevent *bev;
    if (srv->cfg.tls != NULL) {
        SSL *ssl = SSL_new(srv->cfg.tls);
        if (ssl == NULL) {
            close(fd);
            HTTPD__ADD(srv, tls_errors, 1);
            return -ENOMEM;
        }
        bev = bufferevent_openssl_socket_new(srv->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                             BEV_OPT_CLOSE_ON_FREE);
        if (bev != NULL)
            bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
        else
            SSL_free(ssl);
    } else {
        bev = bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE);
    }
    if (bev == NULL) {
        close(fd);
        return -ENOMEM;
    }
    return httpd__conn_create(srv, bev, sa, salen, srv->cfg.tls != NULL, reject);
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg)
{
    (void)l;
    httpd_server *srv = arg;
    serve_fd(srv, fd, sa, (socklen_t)salen);
}

static void accept_resume_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    httpd_server *srv = arg;
    if (srv->lev != NULL && !srv->draining)
        evconnlistener_enable(srv->lev);
}

static void accept_error_cb(struct evconnlistener *l, void *arg)
{
    httpd_server *srv = arg;
    HTTPD__ADD(srv, accept_errors, 1);
    int e = EVUTIL_SOCKET_ERROR();
    if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
        /* out of descriptors: accepting again at once would spin */
        evconnlistener_disable(l);
        struct timeval tv = {0, 100 * 1000};
        evtimer_add(srv->accept_resume, &tv);
    }
}

int httpd_server_adopt(httpd_server *srv, int fd)
{
    if (srv->draining) {
        close(fd);
        return -ESHUTDOWN;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0)
        sl = 0;
    return serve_fd(srv, fd, sl ? (struct sockaddr *)&ss : NULL, sl);
}

void httpd__server_conn_gone(httpd_server *srv, httpd_conn *c)
{
    (void)c;
    if (srv->draining && srv->conns == NULL && srv->drained != NULL)
        event_active(srv->drain_done, EV_TIMEOUT, 0);
}

/* ---- create / destroy ---------------------------------------------------------- */

static int listen_on(httpd_server *srv, char *err, size_t errlen)
{
    const httpd_config *c = &srv->cfg;
    unsigned flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE;
    if (c->reuse_port)
        flags |= LEV_OPT_REUSEABLE_PORT;
    if (c->listen_fd >= 0) {
        evutil_make_socket_nonblocking(c->listen_fd);
        srv->lev = evconnlistener_new(srv->base, accept_cb, srv, flags, c->backlog, c->listen_fd);
    } else {
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof ss);
        int sl;
        char spec[300];
        const char *host = c->host ? c->host : "127.0.0.1";
        snprintf(spec, sizeof spec, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, c->port);
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        if (c->port > 65535) {
            sl = 0;
        } else if (evutil_inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
            s4->sin_family = AF_INET;
            s4->sin_port = htons((uint16_t)c->port);
            sl = sizeof *s4;
        } else if (evutil_inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
            s6->sin6_family = AF_INET6;
            s6->sin6_port = htons((uint16_t)c->port);
            sl = sizeof *s6;
        } else {
            sl = 0;
        }
        if (sl == 0) {
            if (err && errlen)
                snprintf(err, errlen,
                         "HTTP server: cannot listen on %s: not an IP address and port (give "
                         "an IPv4 or IPv6 address and a port up to 65535)",
                         spec);
            return -EINVAL;
        }
        srv->lev = evconnlistener_new_bind(srv->base, accept_cb, srv, flags, c->backlog,
                                           (struct sockaddr *)&ss, sl);
        if (srv->lev == NULL) {
            int e = errno ? errno : EADDRNOTAVAIL;
            if (err && errlen)
                snprintf(err, errlen,
                         "HTTP server: cannot listen on %s: %s (choose another "
                         "port or stop what holds it)",
                         spec, strerror(e));
            return -e;
        }
    }
    if (srv->lev == NULL) {
        if (err && errlen)
            snprintf(err, errlen, "HTTP server: cannot listen on the descriptor given");
        return -EINVAL;
    }
    evconnlistener_set_error_cb(srv->lev, accept_error_cb);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(evconnlistener_get_fd(srv->lev), (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET)
            srv->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        else if (ss.ss_family == AF_INET6)
            srv->port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    return 0;
}

static void drain_timer_cb(evutil_socket_t fd, short what, void *arg);
static void drain_done_cb(evutil_socket_t fd, short what, void *arg);

int httpd_server_create(httpd_server **out, struct event_base *base, const httpd_config *cfg,
                        char *err, size_t errlen)
{
    *out = NULL;
    if (base == NULL || cfg == NULL)
        return -EINVAL;
    httpd_server *srv = calloc(1, sizeof *srv);
    if (srv == NULL)
        return -ENOMEM;
    srv->base = base;
    srv->cfg = *cfg;
    int rc = fill_defaults(&srv->cfg, err, errlen);
    if (rc < 0) {
        free(srv);
        return rc;
    }
    srv->host_copy = cfg->host ? strdup(cfg->host) : NULL;
    srv->server_name_copy = strdup(cfg->server_name ? cfg->server_name : "ringcache");
    srv->cfg.host = srv->host_copy;
    srv->cfg.server_name = srv->server_name_copy;
    srv->accept_resume = evtimer_new(base, accept_resume_cb, srv);
    srv->drain_timer = evtimer_new(base, drain_timer_cb, srv);
    srv->drain_done = event_new(base, -1, 0, drain_done_cb, srv);
    httpd__conn_settings(&srv->settings);
    if ((cfg->host && !srv->host_copy) || !srv->server_name_copy || !srv->accept_resume ||
        !srv->drain_timer || !srv->drain_done) {
        httpd_server_destroy(&srv);
        return -ENOMEM;
    }
    if (cfg->listen_fd >= 0 || cfg->port >= 0) {
        rc = listen_on(srv, err, errlen);
        if (rc < 0) {
            httpd_server_destroy(&srv);
            return rc;
        }
    }
    *out = srv;
    return 0;
}

void httpd_server_destroy(httpd_server **psrv)
{
    if (psrv == NULL || *psrv == NULL)
        return;
    httpd_server *srv = *psrv;
    *psrv = NULL;
    if (srv->lev)
        evconnlistener_free(srv->lev);
    srv->drained = NULL;
    while (srv->conns != NULL) {
        httpd_conn *c = srv->conns;
        if (c->dead) {
            /* freed by the callback it is dying in; cannot happen from the
             * loop's top level, where destroy is called */
            srv->conns = c->next;
            continue;
        }
        httpd__conn_abort(c, -ECANCELED);
    }
    if (srv->accept_resume)
        event_free(srv->accept_resume);
    if (srv->drain_timer)
        event_free(srv->drain_timer);
    if (srv->drain_done)
        event_free(srv->drain_done);
    free(srv->host_copy);
    free(srv->server_name_copy);
    free(srv);
}

int httpd_server_port(const httpd_server *srv)
{
    return srv->port;
}

/* ---- drain ------------------------------------------------------------------- */

static void drain_done_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    httpd_server *srv = arg;
    evtimer_del(srv->drain_timer);
    httpd_drained_fn fn = srv->drained;
    srv->drained = NULL;
    if (fn != NULL)
        fn(srv, srv->drained_arg);
}

static void drain_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    httpd_server *srv = arg;
    /* the deadline: what is still running is cut */
    for (httpd_conn *c = srv->conns, *next; c != NULL; c = next) {
        next = c->next;
        httpd__conn_abort(c, -ECANCELED);
    }
    event_active(srv->drain_done, EV_TIMEOUT, 0);
}

int httpd_server_drain(httpd_server *srv, int deadline_ms, httpd_drained_fn done, void *arg)
{
    if (srv->draining)
        return -EALREADY;
    srv->draining = true;
    srv->drained = done;
    srv->drained_arg = arg;
    if (srv->lev)
        evconnlistener_disable(srv->lev);
    evtimer_del(srv->accept_resume);
    for (httpd_conn *c = srv->conns, *next; c != NULL; c = next) {
        next = c->next;
        httpd__conn_drain(c);
    }
    if (srv->conns == NULL) {
        event_active(srv->drain_done, EV_TIMEOUT, 0);
    } else if (deadline_ms >= 0) {
        struct timeval tv = {deadline_ms / 1000, (deadline_ms % 1000) * 1000};
        evtimer_add(srv->drain_timer, &tv);
    }
    return 0;
}

/* ---- counters ------------------------------------------------------------------- */

void httpd_server_stats(const httpd_server *srv, httpd_stats *out)
{
    uint64_t v[sizeof *out / sizeof(uint64_t)];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        v[i] = atomic_load_explicit(&srv->st[i], memory_order_relaxed);
    memcpy(out, v, sizeof *out);
}
