/* SPDX-License-Identifier: Apache-2.0
 *
 * admin.c: the admin HTTP server of admin.h. The listening socket is made
 * here (not by evhttp_bind_socket) so a port in use is reported as such; it is
 * then handed to evhttp, which owns it. The loop thread is stopped through a
 * pipe watched by the loop itself, so the event_base needs no locking and the
 * module needs no global libevent threading setup. TLS, when configured, is a
 * bufferevent_openssl per connection over one SSL_CTX.
 */
#include "admin.h"
#include "config.h"
#include "errf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#define ADM_REASON_MAX 200
#define ADM_TIMEOUT_S  30

struct adm_server {
    struct event_base *base;
    struct evhttp *http;
    struct event *wake;
    int wake_fd[2];
    pthread_t thread;
    bool thread_started;
    int port;
    SSL_CTX *ssl;
    met_registry *metrics;
    adm_text_fn config_text;
    void *config_arg;
    atomic_bool ready;
    pthread_mutex_t lock; /* reason */
    char reason[ADM_REASON_MAX + 1];
};

/* ---- requests ----------------------------------------------------------- */

/* Sends body (len bytes) with the given status; for HEAD only the headers, with
 * the Content-Length the GET would have. */
static void reply(struct evhttp_request *req, int code, const char *reason, const char *ctype,
                  const char *body, size_t len)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", ctype);
    evhttp_add_header(h, "Cache-Control", "no-store");
    struct evbuffer *buf = evbuffer_new();
    if (buf == NULL) {
        evhttp_send_error(req, 500, "Internal Server Error");
        return;
    }
    if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
        char cl[24];
        snprintf(cl, sizeof cl, "%zu", len);
        evhttp_add_header(h, "Content-Length", cl);
    } else if (len > 0 && evbuffer_add(buf, body, len) != 0) {
        evbuffer_free(buf);
        evhttp_send_error(req, 500, "Internal Server Error");
        return;
    }
    evhttp_send_reply(req, code, reason, buf);
    evbuffer_free(buf);
}

static void reply_text(struct evhttp_request *req, int code, const char *reason, const char *text)
{
    reply(req, code, reason, "text/plain; charset=utf-8", text, strlen(text));
}

static void serve_metrics(adm_server *a, struct evhttp_request *req)
{
    static const char ctype[] = "text/plain; version=0.0.4; charset=utf-8";
    if (a->metrics == NULL) {
        reply(req, 200, "OK", ctype, "", 0);
        return;
    }
    char *text = NULL;
    size_t len = 0;
    if (met_render(a->metrics, &text, &len) != 0) {
        reply_text(req, 500, "Internal Server Error", "cannot render the metrics: out of memory\n");
        return;
    }
    reply(req, 200, "OK", ctype, text, len);
    free(text);
}

static void serve_config(adm_server *a, struct evhttp_request *req)
{
    if (a->config_text == NULL) {
        reply_text(req, 404, "Not Found", "this server publishes no config\n");
        return;
    }
    char *text = NULL;
    size_t len = 0;
    int rc = a->config_text(a->config_arg, &text, &len);
    if (rc != 0) {
        char msg[128];
        snprintf(msg, sizeof msg, "cannot format the config: %s\n", strerror(-rc));
        reply_text(req, 500, "Internal Server Error", msg);
        free(text);
        return;
    }
    reply(req, 200, "OK", "text/plain; charset=utf-8", text, len);
    free(text);
}

static void serve_readyz(adm_server *a, struct evhttp_request *req)
{
    if (atomic_load(&a->ready)) {
        reply_text(req, 200, "OK", "ready\n");
        return;
    }
    char msg[ADM_REASON_MAX + 32];
    pthread_mutex_lock(&a->lock);
    snprintf(msg, sizeof msg, "not ready: %s\n", a->reason);
    pthread_mutex_unlock(&a->lock);
    reply_text(req, 503, "Service Unavailable", msg);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    adm_server *a = arg;
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
        reply_text(req, 405, "Method Not Allowed", "method not allowed: use GET or HEAD\n");
        return;
    }
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
    if (path == NULL)
        path = "";
    if (strcmp(path, "/metrics") == 0)
        serve_metrics(a, req);
    else if (strcmp(path, "/healthz") == 0)
        reply_text(req, 200, "OK", "ok\n");
    else if (strcmp(path, "/readyz") == 0)
        serve_readyz(a, req);
    else if (strcmp(path, "/config") == 0)
        serve_config(a, req);
    else
        reply_text(req, 404, "Not Found",
                   "not found: the admin endpoints are /metrics /healthz /readyz /config\n");
}

static struct bufferevent *make_tls_bev(struct event_base *base, void *arg)
{
    adm_server *a = arg;
    SSL *ssl = SSL_new(a->ssl);
    if (ssl == NULL)
        return NULL;
    struct bufferevent *bev = bufferevent_openssl_socket_new(
        base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        SSL_free(ssl);
        return NULL;
    }
    /* a scraper that closes without close_notify is not an error */
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}

/* ---- the thread --------------------------------------------------------- */

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    adm_server *a = arg;
    char b[16];
    while (read(fd, b, sizeof b) > 0) {
    }
    event_base_loopbreak(a->base);
}

static void *run(void *arg)
{
    adm_server *a = arg;
    event_base_dispatch(a->base);
    return NULL;
}

/* ---- setup and teardown ------------------------------------------------- */

static void free_server(adm_server *a)
{
    if (a->http != NULL)
        evhttp_free(a->http);
    if (a->wake != NULL)
        event_free(a->wake);
    if (a->base != NULL)
        event_base_free(a->base);
    for (int i = 0; i < 2; i++)
        if (a->wake_fd[i] >= 0)
            close(a->wake_fd[i]);
    SSL_CTX_free(a->ssl);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

static int listen_on(const char *addr, int port, int *fd_out, int *port_out, char *err,
                     size_t errlen)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char ps[8];
    snprintf(ps, sizeof ps, "%d", port);
    int g = getaddrinfo(addr, ps, &hints, &res);
    if (g != 0 || res == NULL) {
        errf_set(err, errlen,
                 "cannot resolve the admin address %s: %s (set --admin-addr to an IP "
                 "address such as 127.0.0.1)",
                 addr, gai_strerror(g));
        if (res != NULL)
            freeaddrinfo(res);
        return -EINVAL;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        int e = errno;
        errf_set(err, errlen, "cannot create the admin socket: %s", strerror(e));
        freeaddrinfo(res);
        return -e;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc = 0;
    if (bind(fd, res->ai_addr, res->ai_addrlen) != 0) {
        rc = -errno;
        if (rc == -EADDRINUSE)
            errf_set(err, errlen, "admin port %s:%d is in use (set --admin-port)", addr, port);
        else
            errf_set(err, errlen,
                     "cannot bind the admin port %s:%d: %s (set --admin-addr and "
                     "--admin-port)",
                     addr, port, strerror(-rc));
    } else if (listen(fd, 128) != 0) {
        rc = -errno;
        if (rc == -EADDRINUSE)
            errf_set(err, errlen, "admin port %s:%d is in use (set --admin-port)", addr, port);
        else
            errf_set(err, errlen, "cannot listen on the admin port %s:%d: %s", addr, port,
                     strerror(-rc));
    }
    freeaddrinfo(res);
    if (rc == 0) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
            rc = -errno;
            errf_set(err, errlen, "cannot read the admin socket's address: %s", strerror(-rc));
        } else if (ss.ss_family == AF_INET6) {
            *port_out = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
        } else {
            *port_out = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        }
    }
    if (rc != 0) {
        close(fd);
        return rc;
    }
    *fd_out = fd;
    return 0;
}

static int tls_setup(adm_server *a, const adm_config *cfg, char *err, size_t errlen)
{
    if (cfg->tls_cert == NULL && cfg->tls_key == NULL)
        return 0;
    if (cfg->tls_cert == NULL || cfg->tls_key == NULL) {
        errf_set(err, errlen,
                 "admin TLS needs both a certificate and a key (set both "
                 "--admin-tls-cert and --admin-tls-key, or neither)");
        return -EINVAL;
    }
    a->ssl = SSL_CTX_new(TLS_server_method());
    if (a->ssl == NULL) {
        errf_set(err, errlen, "cannot create the admin TLS context: out of memory");
        return -ENOMEM;
    }
    SSL_CTX_set_min_proto_version(a->ssl, TLS1_2_VERSION);
    const char *what = NULL, *file = NULL;
    ERR_clear_error();
    if (SSL_CTX_use_certificate_chain_file(a->ssl, cfg->tls_cert) != 1) {
        what = "certificate";
        file = cfg->tls_cert;
    } else if (SSL_CTX_use_PrivateKey_file(a->ssl, cfg->tls_key, SSL_FILETYPE_PEM) != 1) {
        what = "key";
        file = cfg->tls_key;
        /* OpenSSL checks the pair while loading the key: say which fix applies */
        if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH)
            what = NULL;
    }
    if (what == NULL && (file != NULL || SSL_CTX_check_private_key(a->ssl) != 1)) {
        errf_set(err, errlen,
                 "the admin TLS key %s does not match the certificate %s (set "
                 "--admin-tls-key to the certificate's key)",
                 cfg->tls_key, cfg->tls_cert);
        ERR_clear_error();
        return -EINVAL;
    }
    if (what != NULL) {
        char why[256];
        ERR_error_string_n(ERR_peek_last_error(), why, sizeof why);
        ERR_clear_error();
        errf_set(err, errlen,
                 "cannot load the admin TLS %s %s: %s (set --admin-tls-%s to a "
                 "readable PEM file)",
                 what, file, why, strcmp(what, "key") == 0 ? "key" : "cert");
        return -EINVAL;
    }
    return 0;
}

int adm_start(adm_server **out, const adm_config *cfg, met_registry *metrics,
              adm_text_fn config_text, void *config_arg, char *err, size_t errlen)
{
    *out = NULL;
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    const char *addr = cfg->addr != NULL && cfg->addr[0] != '\0' ? cfg->addr : "127.0.0.1";
    if (cfg->port < 0 || cfg->port > 65535) {
        errf_set(err, errlen, "admin port %d is out of range (set --admin-port to 0..65535)",
                 cfg->port);
        return -EINVAL;
    }
    adm_server *a = calloc(1, sizeof *a);
    if (a == NULL) {
        errf_set(err, errlen, "out of memory starting the admin server");
        return -ENOMEM;
    }
    a->wake_fd[0] = a->wake_fd[1] = -1;
    a->metrics = metrics;
    a->config_text = config_text;
    a->config_arg = config_arg;
    atomic_init(&a->ready, false);
    pthread_mutex_init(&a->lock, NULL);
    snprintf(a->reason, sizeof a->reason, "starting");

    int rc = tls_setup(a, cfg, err, errlen);
    int fd = -1;
    if (rc == 0)
        rc = listen_on(addr, cfg->port, &fd, &a->port, err, errlen);
    if (rc == 0) {
        a->base = event_base_new();
        a->http = a->base != NULL ? evhttp_new(a->base) : NULL;
        if (a->http == NULL) {
            errf_set(err, errlen, "cannot create the admin event loop: out of memory");
            rc = -ENOMEM;
            close(fd);
        }
    }
    if (rc == 0) {
        evhttp_set_allowed_methods(a->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                                EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                                EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
                                                EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
        evhttp_set_gencb(a->http, on_request, a);
        evhttp_set_timeout(a->http, ADM_TIMEOUT_S);
        evhttp_set_max_headers_size(a->http, 16384);
        evhttp_set_max_body_size(a->http, 65536);
        if (a->ssl != NULL)
            evhttp_set_bevcb(a->http, make_tls_bev, a);
        if (evhttp_accept_socket_with_handle(a->http, fd) == NULL) {
            close(fd);
            errf_set(err, errlen, "cannot serve the admin port %s:%d: out of memory", addr,
                     a->port);
            rc = -ENOMEM;
        }
    }
    if (rc == 0) {
        if (pipe2(a->wake_fd, O_NONBLOCK | O_CLOEXEC) != 0) {
            rc = -errno;
            errf_set(err, errlen, "cannot create the admin wake-up pipe: %s", strerror(-rc));
        } else {
            a->wake = event_new(a->base, a->wake_fd[0], EV_READ | EV_PERSIST, on_wake, a);
            if (a->wake == NULL || event_add(a->wake, NULL) != 0) {
                errf_set(err, errlen, "cannot create the admin event loop: out of memory");
                rc = -ENOMEM;
            }
        }
    }
    if (rc == 0 && cfg->port_file != NULL && cfg->port_file[0] != '\0')
        rc = cfg_write_port_file(cfg->port_file, a->port, "admin port file", "--admin-port-file",
                                 err, errlen);
    if (rc == 0) {
        /* the thread blocks every signal: they belong to the daemon's main
         * thread, and SIGPIPE from a closed scraper becomes EPIPE */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int e = pthread_create(&a->thread, NULL, run, a);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (e != 0) {
            errf_set(err, errlen, "cannot start the admin thread: %s", strerror(e));
            rc = -e;
        } else {
            a->thread_started = true;
        }
    }
    if (rc != 0) {
        free_server(a);
        return rc;
    }
    *out = a;
    return 0;
}

void adm_set_ready(adm_server *a, bool ready)
{
    atomic_store(&a->ready, ready);
}

void adm_set_not_ready_reason(adm_server *a, const char *why)
{
    pthread_mutex_lock(&a->lock);
    snprintf(a->reason, sizeof a->reason, "%s", why != NULL && why[0] != '\0' ? why : "starting");
    /* one line: the body is a single line of text */
    for (char *p = a->reason; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    pthread_mutex_unlock(&a->lock);
}

int adm_port(const adm_server *a)
{
    return a->port;
}

void adm_stop(adm_server **ap)
{
    if (ap == NULL || *ap == NULL)
        return;
    adm_server *a = *ap;
    if (a->thread_started) {
        ssize_t w;
        do {
            w = write(a->wake_fd[1], "x", 1);
        } while (w < 0 && errno == EINTR);
        pthread_join(a->thread, NULL);
    }
    free_server(a);
    *ap = NULL;
}
