/* SPDX-License-Identifier: Apache-2.0
 *
 * The S3 model's admin HTTP port (libevent evhttp, 127.0.0.1 only):
 *
 *   GET /counts                          counters as JSON (by method, by object, totals)
 *   GET /count?method=GET&path=/b/k      one count as a number (either filter optional)
 *   GET /stat?name=bytes_out             one named total as a number
 *   GET|POST /reset                      zero every counter
 *   GET /fault?kind=503|reset|stall|none&count=N[&method=M][&path=SUBSTR][&stall_ms=MS]
 *                                        arm a fault for the next N matching requests
 *                                        (none: disarm all)
 *   GET /config[?latency_ms=L][&bandwidth_mib=B]   show or change latency / bandwidth
 *   GET /healthz                         "ok"
 *
 * Thread-safety: none (one event loop).
 */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>

#include "s3m_int.h"

static void s3m_reply(struct evhttp_request *req, int code, const char *reason, const char *ctype,
                      struct evbuffer *body)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", ctype);
    evhttp_send_reply(req, code, reason, body);
}

static void s3m_reply_text(struct evhttp_request *req, int code, const char *reason,
                           const char *text)
{
    struct evbuffer *b = evbuffer_new();
    if (b == NULL) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    evbuffer_add_printf(b, "%s\n", text);
    s3m_reply(req, code, reason, "text/plain", b);
    evbuffer_free(b);
}

static void s3m_reply_u64(struct evhttp_request *req, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
    s3m_reply_text(req, 200, "OK", buf);
}

/* Parses a non-negative int parameter; -1 if absent, -2 if invalid. */
static long s3m_param_int(const struct evkeyvalq *q, const char *name, long max)
{
    const char *v = evhttp_find_header(q, name);
    if (v == NULL)
        return -1;
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || x < 0 || x > max)
        return -2;
    return x;
}

static void s3m_do_fault(s3m_proxy *px, struct evhttp_request *req, const struct evkeyvalq *q)
{
    const char *kind = evhttp_find_header(q, "kind");
    if (kind != NULL && strcmp(kind, "none") == 0) {
        px->nfaults = 0;
        s3m_reply_text(req, 200, "OK", "ok: all faults disarmed");
        return;
    }
    s3m_fault f;
    memset(&f, 0, sizeof(f));
    if (kind == NULL)
        f.kind = S3M_FAULT_NONE;
    else if (strcmp(kind, "503") == 0)
        f.kind = S3M_FAULT_503;
    else if (strcmp(kind, "reset") == 0)
        f.kind = S3M_FAULT_RESET;
    else if (strcmp(kind, "stall") == 0)
        f.kind = S3M_FAULT_STALL;
    long count = s3m_param_int(q, "count", INT_MAX);
    long stall = s3m_param_int(q, "stall_ms", 3600 * 1000);
    const char *method = evhttp_find_header(q, "method");
    const char *path = evhttp_find_header(q, "path");
    if (f.kind == S3M_FAULT_NONE || count == -2 || count == 0 || stall == -2 ||
        (f.kind == S3M_FAULT_STALL && stall <= 0) ||
        (method != NULL && strlen(method) >= sizeof(f.method)) ||
        (path != NULL && strlen(path) >= sizeof(f.substr))) {
        s3m_reply_text(req, 400, "Bad Request",
                       "usage: /fault?kind=503|reset|stall|none&count=N[&method=GET]"
                       "[&path=SUBSTRING][&stall_ms=MS] (stall needs stall_ms > 0)");
        return;
    }
    f.remaining = count < 0 ? 1 : (int)count;
    f.stall_ms = stall < 0 ? 0 : (int)stall;
    if (method != NULL)
        snprintf(f.method, sizeof(f.method), "%s", method);
    if (path != NULL)
        snprintf(f.substr, sizeof(f.substr), "%s", path);
    int rc = s3m__fault_arm(px, &f);
    if (rc < 0) {
        s3m_reply_text(req, 409, "Conflict", "too many armed faults (disarm with kind=none)");
        return;
    }
    s3m__log("info", "msg=\"fault armed\" kind=%s count=%d method=%s path=\"%s\" stall_ms=%d", kind,
             f.remaining, f.method[0] ? f.method : "any", f.substr, f.stall_ms);
    s3m_reply_text(req, 200, "OK", "ok");
}

static void s3m_do_config(s3m_proxy *px, struct evhttp_request *req, const struct evkeyvalq *q)
{
    long lat = s3m_param_int(q, "latency_ms", 3600 * 1000);
    long bw = s3m_param_int(q, "bandwidth_mib", 1024 * 1024);
    if (lat == -2 || bw == -2) {
        s3m_reply_text(req, 400, "Bad Request",
                       "usage: /config[?latency_ms=0..3600000][&bandwidth_mib=0..1048576]");
        return;
    }
    if (lat >= 0)
        px->cfg.latency_ms = (int)lat;
    if (bw >= 0)
        px->cfg.bandwidth_mib = (int)bw;
    if (lat >= 0 || bw >= 0)
        s3m__log("info", "msg=\"config changed\" latency_ms=%d bandwidth_mib=%d",
                 px->cfg.latency_ms, px->cfg.bandwidth_mib);
    struct evbuffer *b = evbuffer_new();
    if (b == NULL) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    evbuffer_add_printf(b, "{\"latency_ms\":%d,\"bandwidth_mib\":%d}\n", px->cfg.latency_ms,
                        px->cfg.bandwidth_mib);
    s3m_reply(req, 200, "OK", "application/json", b);
    evbuffer_free(b);
}

static void s3m_on_admin(struct evhttp_request *req, void *arg)
{
    s3m_proxy *px = arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
    const char *query = uri != NULL ? evhttp_uri_get_query(uri) : NULL;
    struct evkeyvalq q;
    TAILQ_INIT(&q);
    if (path == NULL || (query != NULL && evhttp_parse_query_str(query, &q) != 0)) {
        s3m_reply_text(req, 400, "Bad Request", "malformed URI");
        evhttp_clear_headers(&q);
        return;
    }
    if (strcmp(path, "/counts") == 0) {
        struct evbuffer *b = evbuffer_new();
        if (b != NULL) {
            s3m__stats_json(px, b);
            s3m_reply(req, 200, "OK", "application/json", b);
            evbuffer_free(b);
        } else {
            evhttp_send_error(req, 500, "out of memory");
        }
    } else if (strcmp(path, "/count") == 0) {
        s3m_reply_u64(req, s3m__stats_query(&px->stats, evhttp_find_header(&q, "method"),
                                            evhttp_find_header(&q, "path")));
    } else if (strcmp(path, "/stat") == 0) {
        const char *name = evhttp_find_header(&q, "name");
        uint64_t v;
        if (name != NULL && s3m__stats_named(px, name, &v) == 0)
            s3m_reply_u64(req, v);
        else
            s3m_reply_text(req, 404, "Not Found",
                           "unknown stat; names: requests bytes_in bytes_out connections "
                           "live_connections bad_requests upstream_errors faults faults_503 "
                           "faults_reset faults_stall");
    } else if (strcmp(path, "/reset") == 0) {
        s3m__stats_reset(&px->stats);
        s3m_reply_text(req, 200, "OK", "ok");
    } else if (strcmp(path, "/fault") == 0) {
        s3m_do_fault(px, req, &q);
    } else if (strcmp(path, "/config") == 0) {
        s3m_do_config(px, req, &q);
    } else if (strcmp(path, "/healthz") == 0) {
        s3m_reply_text(req, 200, "OK", "ok");
    } else {
        s3m_reply_text(req, 404, "Not Found",
                       "endpoints: /counts /count /stat /reset /fault /config /healthz");
    }
    evhttp_clear_headers(&q);
}

int s3m__admin_setup(s3m_proxy *px)
{
    px->admin = evhttp_new(px->base);
    if (px->admin == NULL)
        return -ENOMEM;
    evhttp_set_allowed_methods(px->admin, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
    evhttp_set_gencb(px->admin, s3m_on_admin, px);
    struct evhttp_bound_socket *bs =
        evhttp_bind_socket_with_handle(px->admin, "127.0.0.1", (ev_uint16_t)px->cfg.admin_port);
    if (bs == NULL) {
        s3m__log("error",
                 "msg=\"cannot listen on 127.0.0.1:%d for admin HTTP (choose another "
                 "--admin-port, or 0 for any free one)\"",
                 px->cfg.admin_port);
        return -EADDRINUSE;
    }
    struct sockaddr_in bound;
    socklen_t blen = sizeof(bound);
    getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&bound, &blen);
    px->admin_port = ntohs(bound.sin_port);
    return 0;
}

void s3m__admin_teardown(s3m_proxy *px)
{
    if (px->admin != NULL)
        evhttp_free(px->admin);
    px->admin = NULL;
}

int s3m_proxy_create(s3m_proxy **out, struct event_base *base, const s3m_config *cfg)
{
    *out = NULL;
    s3m_proxy *px = calloc(1, sizeof(*px));
    if (px == NULL)
        return -ENOMEM;
    px->base = base;
    px->cfg = *cfg;
    int rc = s3m__stats_init(&px->stats);
    if (rc == 0)
        rc = s3m__admin_setup(px);
    if (rc == 0)
        rc = s3m__conn_listen(px);
    if (rc < 0) {
        s3m_proxy_destroy(&px);
        return rc;
    }
    *out = px;
    return 0;
}

void s3m_proxy_destroy(s3m_proxy **pxp)
{
    if (pxp == NULL || *pxp == NULL)
        return;
    s3m_proxy *px = *pxp;
    s3m__conn_close_all(px);
    if (px->listener != NULL)
        evconnlistener_free(px->listener);
    s3m__admin_teardown(px);
    s3m__stats_deinit(&px->stats);
    free(px);
    *pxp = NULL;
}

int s3m_proxy_port(const s3m_proxy *px)
{
    return px->port;
}

int s3m_proxy_admin_port(const s3m_proxy *px)
{
    return px->admin_port;
}
