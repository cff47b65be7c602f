/* SPDX-License-Identifier: Apache-2.0
 *
 * admin.h: the admin HTTP server of ringcached, on its own port, its own
 * thread, its own event_base + evhttp, so a slow scrape never touches a worker
 * loop. Plain HTTP, or HTTPS when a certificate and key are given. The server
 * owns its thread, its listening socket and its connections; the registry
 * and the config callback it serves are borrowed.
 *
 * Endpoints (GET and HEAD only; any other method gets 405 with
 * `Allow: GET, HEAD`; any other path gets 404; the query string is ignored):
 *   /metrics  200, met_render() of the registry, Content-Type
 *             `text/plain; version=0.0.4; charset=utf-8` (empty if no registry)
 *   /healthz  200 "ok\n" while the process serves HTTP at all
 *   /readyz   200 "ready\n" once adm_set_ready(a, true); before that, and after
 *             adm_set_ready(a, false), 503 "not ready: <reason>\n" (the reason
 *             from adm_set_not_ready_reason(), "starting" until one is set)
 *   /config   200, the text of config_text() (the effective config, secrets
 *             redacted by the caller, e.g. with cfg_format()); 404 if none;
 *             500 if the callback fails
 * Every other body is one line of text/plain.
 *
 * Thread-safety: adm_start() and adm_stop() from one controlling thread.
 * adm_set_ready(), adm_set_not_ready_reason() and adm_port() from any thread,
 * any time between them. The callbacks (config_text, and the gauge callbacks of
 * the registry, through met_render) run on the admin thread and must be safe
 * there. The admin thread blocks every signal, so SIGTERM/SIGHUP go to the
 * daemon's other threads and a write to a closed socket returns EPIPE there
 * instead of raising SIGPIPE.
 */
#ifndef RINGCACHE_ADMIN_H
#define RINGCACHE_ADMIN_H

#include <stdbool.h>
#include <stddef.h>

#include "metrics.h"

typedef struct adm_server adm_server;

typedef struct adm_config {
    const char *addr;      /* address to bind, "127.0.0.1", "::1" or "0.0.0.0"; NULL: 127.0.0.1 */
    int port;              /* 0..65535; 0: any free port (see adm_port and port_file) */
    const char *port_file; /* if not NULL, the bound port and a newline are written here
                              (atomically, by rename) once the socket listens */
    const char *tls_cert;  /* PEM certificate chain; with tls_key: HTTPS. Both NULL: HTTP */
    const char *tls_key;   /* PEM private key */
} adm_config;

/* Fills *out with a malloc'd body of *len bytes (the caller of the callback
 * frees it). Returns 0 or a negative errno. */
typedef int (*adm_text_fn)(void *arg, char **out, size_t *len);

/* Binds, listens, writes the port file and starts the admin thread. metrics
 * and config_text are borrowed (may be NULL) and must outlive the server.
 * Returns 0, or a negative errno with one sentence in err (may be NULL):
 * -EADDRINUSE "admin port 127.0.0.1:9090 is in use (set --admin-port)",
 * -EINVAL for a bad address, port or TLS setting, the errno of bind, of the TLS
 * files or of the port file, -ENOMEM. Nothing is left running on error. */
int adm_start(adm_server **out, const adm_config *cfg, met_registry *metrics,
              adm_text_fn config_text, void *config_arg, char *err, size_t errlen);

/* /readyz answers 200 from now on (true) or 503 again (false). */
void adm_set_ready(adm_server *a, bool ready);

/* The reason /readyz gives while not ready (copied; at most 200 bytes kept). */
void adm_set_not_ready_reason(adm_server *a, const char *why);

/* The bound port (the chosen one when cfg->port was 0). */
int adm_port(const adm_server *a);

/* Stops the admin thread (open connections are closed), joins it and frees
 * the server. Accepts NULL and *a == NULL; sets *a to NULL. */
void adm_stop(adm_server **a);

#endif /* RINGCACHE_ADMIN_H */
