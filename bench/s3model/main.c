/* SPDX-License-Identifier: Apache-2.0
 *
 * s3model: parses options (one table drives parsing, defaults and --help),
 * starts the proxy on an event loop, writes the port files (admin first, then
 * data, each written to a temp file and renamed), and on SIGTERM/SIGINT tears
 * everything down and exits 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "s3m_int.h"
#include "s3model.h"

typedef struct opts {
    const char *upstream;
    long port;
    const char *port_file;
    long admin_port;
    const char *admin_port_file;
    long latency_ms;
    long bandwidth_mib;
} opts;

typedef enum { O_STR, O_INT } opt_type;

typedef struct opt_def {
    const char *name;
    opt_type type;
    size_t off;
    const char *def; /* default, as text */
    long min, max;
    const char *help;
} opt_def;

static const opt_def g_opts[] = {
    {"upstream", O_STR, offsetof(opts, upstream), NULL, 0, 0,
     "the S3 server, IPv4:PORT (required), e.g. 127.0.0.1:4568"},
    {"port", O_INT, offsetof(opts, port), "0", 0, 65535,
     "data port on 127.0.0.1; 0 picks a free one"},
    {"port-file", O_STR, offsetof(opts, port_file), NULL, 0, 0,
     "write the data port to this file once listening"},
    {"admin-port", O_INT, offsetof(opts, admin_port), "0", 0, 65535,
     "admin HTTP port on 127.0.0.1 (/counts /reset /fault /config); 0 picks a free one"},
    {"admin-port-file", O_STR, offsetof(opts, admin_port_file), NULL, 0, 0,
     "write the admin port to this file (before the data port file)"},
    {"latency-ms", O_INT, offsetof(opts, latency_ms), "30", 0, 3600000,
     "first-byte latency added to every request; 0 disables"},
    {"bandwidth-mib", O_INT, offsetof(opts, bandwidth_mib), "100", 0, 1048576,
     "response bandwidth per connection in MiB/s; 0 disables"},
};
#define N_OPTS (sizeof(g_opts) / sizeof(g_opts[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: s3model --upstream IP:PORT [options]\n"
               "An S3-in-a-region model: a proxy in front of an S3 server adding latency,\n"
               "a bandwidth cap, counters and faults. Binds 127.0.0.1 only.\n\n");
    for (size_t i = 0; i < N_OPTS; i++) {
        char left[64];
        snprintf(left, sizeof(left), "--%s %s", g_opts[i].name,
                 g_opts[i].type == O_INT ? "N" : "VALUE");
        fprintf(f, "  %-26s %s (default: %s)\n", left, g_opts[i].help,
                g_opts[i].def != NULL ? g_opts[i].def : "none");
    }
    fprintf(f, "  %-26s %s\n", "--help", "print this and exit");
}

static int set_opt(opts *o, const opt_def *d, const char *val)
{
    char *p = (char *)o + d->off;
    if (d->type == O_STR) {
        *(const char **)p = val;
        return 0;
    }
    char *end = NULL;
    errno = 0;
    long x = strtol(val, &end, 10);
    if (errno != 0 || end == val || *end != '\0' || x < d->min || x > d->max) {
        fprintf(stderr, "s3model: --%s must be an integer in %ld..%ld, not '%s'\n", d->name, d->min,
                d->max, val);
        return -EINVAL;
    }
    *(long *)p = x;
    return 0;
}

static int parse_args(int argc, char **argv, opts *o)
{
    memset(o, 0, sizeof(*o));
    for (size_t i = 0; i < N_OPTS; i++) {
        if (g_opts[i].def != NULL && set_opt(o, &g_opts[i], g_opts[i].def) != 0)
            return -EINVAL;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "s3model: unexpected argument '%s' (see --help)\n", a);
            return -EINVAL;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq != NULL ? (size_t)(eq - name) : strlen(name);
        const opt_def *d = NULL;
        for (size_t k = 0; k < N_OPTS; k++) {
            if (strlen(g_opts[k].name) == nlen && strncmp(g_opts[k].name, name, nlen) == 0)
                d = &g_opts[k];
        }
        if (d == NULL) {
            fprintf(stderr, "s3model: unknown flag --%.*s (see --help)\n", (int)nlen, name);
            return -EINVAL;
        }
        const char *val = eq != NULL ? eq + 1 : NULL;
        if (val == NULL) {
            if (i + 1 >= argc) {
                fprintf(stderr, "s3model: --%s needs a value (see --help)\n", d->name);
                return -EINVAL;
            }
            val = argv[++i];
        }
        if (set_opt(o, d, val) != 0)
            return -EINVAL;
    }
    if (o->upstream == NULL) {
        fprintf(stderr, "s3model: --upstream is required (the S3 server, e.g. "
                        "--upstream 127.0.0.1:4568)\n");
        return -EINVAL;
    }
    return 0;
}

static int parse_upstream(const char *s, struct sockaddr_in *sa)
{
    const char *colon = strrchr(s, ':');
    char host[64];
    if (colon == NULL || (size_t)(colon - s) >= sizeof(host))
        goto bad;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    char *end = NULL;
    long port = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || *end != '\0' || port < 1 || port > 65535)
        goto bad;
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
        goto bad;
    return 0;
bad:
    fprintf(stderr, "s3model: --upstream must be IPv4:PORT such as 127.0.0.1:4568, not '%s'\n", s);
    return -EINVAL;
}

static int write_port_file(const char *path, int port)
{
    char tmp[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
        return -ENAMETOOLONG;
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        int err = errno;
        fprintf(stderr,
                "s3model: cannot write port file %s: %s (check the folder exists and "
                "is writable)\n",
                tmp, strerror(err));
        return -err;
    }
    fprintf(f, "%d\n", port);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        int err = errno;
        fprintf(stderr, "s3model: cannot write port file %s: %s\n", path, strerror(err));
        return -err;
    }
    return 0;
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    s3m__log("info", "msg=\"stopping\" signal=%d", (int)sig);
    event_base_loopexit(arg, NULL);
}

int main(int argc, char **argv)
{
    opts o;
    if (parse_args(argc, argv, &o) != 0)
        return 2;
    s3m_config cfg = {.port = (int)o.port,
                      .admin_port = (int)o.admin_port,
                      .latency_ms = (int)o.latency_ms,
                      .bandwidth_mib = (int)o.bandwidth_mib};
    if (parse_upstream(o.upstream, &cfg.upstream) != 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);

    struct event_config *ecfg = event_config_new();
    if (ecfg == NULL)
        return 1;
    /* Sub-millisecond timers for the token bucket. */
    event_config_set_flag(ecfg, EVENT_BASE_FLAG_PRECISE_TIMER);
    struct event_base *base = event_base_new_with_config(ecfg);
    event_config_free(ecfg);
    if (base == NULL) {
        fprintf(stderr, "s3model: cannot create the event loop\n");
        return 1;
    }
    int rc = 1;
    s3m_proxy *px = NULL;
    struct event *sigterm = evsignal_new(base, SIGTERM, on_signal, base);
    struct event *sigint = evsignal_new(base, SIGINT, on_signal, base);
    if (sigterm == NULL || sigint == NULL || event_add(sigterm, NULL) != 0 ||
        event_add(sigint, NULL) != 0)
        goto out;
    if (s3m_proxy_create(&px, base, &cfg) != 0)
        goto out;
    if (o.admin_port_file != NULL &&
        write_port_file(o.admin_port_file, s3m_proxy_admin_port(px)) != 0)
        goto out;
    if (o.port_file != NULL && write_port_file(o.port_file, s3m_proxy_port(px)) != 0)
        goto out;
    s3m__log("info",
             "msg=listening port=%d admin_port=%d upstream=%s latency_ms=%d "
             "bandwidth_mib=%d",
             s3m_proxy_port(px), s3m_proxy_admin_port(px), o.upstream, cfg.latency_ms,
             cfg.bandwidth_mib);
    if (event_base_dispatch(base) < 0)
        goto out;
    rc = 0;
out:
    s3m_proxy_destroy(&px);
    if (sigterm != NULL)
        event_free(sigterm);
    if (sigint != NULL)
        event_free(sigint);
    event_base_free(base);
    libevent_global_shutdown();
    return rc;
}
