/* SPDX-License-Identifier: Apache-2.0
 *
 * h_peers.c: the peers benchmarks measure against, started the same way
 * everywhere: an nginx slice cache in front of an S3 endpoint (Debian nginx,
 * the configuration of REFERENCES.md: slice 1m, proxy_cache, proxy_cache_lock
 * on, keep-alive upstream, everything inside the env folder), nginx serving a
 * folder's files as they are (for servers compared with it byte for byte),
 * and the loopback ceiling as iperf3 -P N measures it.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

int h_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    int port = -EADDRNOTAVAIL;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
        port = ntohs(sa.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* Starts nginx on conf and waits until port answers. */
static int nginx_run(h_env *env, h_proc **out, const char *d, const char *conf, const char *err,
                     int port, int *port_out)
{
    const char *argv[] = {"nginx", "-p", d, "-c", conf, "-e", err, NULL};
    int rc = h_proc_start(env, out, "nginx", (char *const *)argv, NULL, NULL, 0);
    if (rc < 0)
        return rc;
    for (int i = 0; i < 200; i++) {
        int c = h_tcp_connect(port, 100);
        if (c >= 0) {
            close(c);
            *port_out = port;
            return 0;
        }
        usleep(50000);
    }
    h_proc_print_log_tail(*out, 20);
    return -ETIMEDOUT;
}

/* An nginx folder <env>/<sub> with a free port and nginx.conf opened, its
 * common part written (everything nginx writes stays in the folder) up to
 * the inside of the http block; the caller adds the rest and closes it. */
typedef struct nginx_conf {
    char d[1024], conf[1100], err[1100];
    int port;
    FILE *f;
} nginx_conf;

static int nginx_begin(h_env *env, const char *sub, int workers, nginx_conf *c)
{
    if (h_env_path(env, c->d, sizeof(c->d), sub) < 0)
        return -ENAMETOOLONG;
    mkdir(c->d, 0755);
    c->port = h_free_port();
    if (c->port < 0)
        return c->port;
    snprintf(c->conf, sizeof(c->conf), "%s/nginx.conf", c->d);
    snprintf(c->err, sizeof(c->err), "%s/error.log", c->d);
    c->f = fopen(c->conf, "w");
    if (!c->f)
        return -errno;
    /* as root, nginx's workers would switch to www-data and could not write the
     * cache in our 0700 temp folder */
    const char *d = c->d;
    fprintf(c->f,
            "%sworker_processes %d;\npid %s/nginx.pid;\nerror_log %s warn;\ndaemon off;\n"
            "events { worker_connections 1024; }\nhttp {\n access_log off;\n"
            " client_body_temp_path %s/body;\n proxy_temp_path %s/proxy;\n"
            " fastcgi_temp_path %s/fcgi;\n uwsgi_temp_path %s/uwsgi;\n scgi_temp_path %s/scgi;\n"
            " sendfile on;\n tcp_nopush off;\n",
            geteuid() == 0 ? "user root;\n" : "", workers, d, c->err, d, d, d, d, d);
    return 0;
}

static int nginx_end(h_env *env, h_proc **out, nginx_conf *c, int *port_out)
{
    if (fclose(c->f) != 0)
        return -EIO;
    return nginx_run(env, out, c->d, c->conf, c->err, c->port, port_out);
}

int h_nginx_start(h_env *env, h_proc **out, int upstream_port, int *port_out)
{
    nginx_conf c;
    int rc = nginx_begin(env, "nginx", 2, &c);
    if (rc < 0)
        return rc;
    fprintf(c.f,
            " proxy_cache_path %s/cache levels=1:2 keys_zone=s3:64m max_size=16g inactive=1h "
            "use_temp_path=off;\n upstream s3 { server 127.0.0.1:%d; keepalive 32; }\n"
            " server {\n  listen 127.0.0.1:%d;\n  location / {\n   slice 1m;\n"
            "   proxy_cache s3;\n   proxy_cache_key $uri$is_args$args$slice_range;\n"
            "   proxy_set_header Range $slice_range;\n   proxy_cache_valid 200 206 1h;\n"
            "   proxy_cache_lock on;\n   proxy_http_version 1.1;\n"
            "   proxy_set_header Connection \"\";\n   proxy_set_header Host 127.0.0.1:%d;\n"
            "   proxy_pass http://s3;\n  }\n }\n}\n",
            c.d, upstream_port, c.port, upstream_port);
    return nginx_end(env, out, &c, port_out);
}

int h_nginx_static_start(h_env *env, h_proc **out, const char *root, int workers, int *port_out)
{
    nginx_conf c;
    int rc = nginx_begin(env, "nginx-static", workers > 0 ? workers : 1, &c);
    if (rc < 0)
        return rc;
    fprintf(c.f,
            " keepalive_requests 100000000;\n keepalive_timeout 300s;\n"
            " default_type application/octet-stream;\n"
            " server {\n  listen 127.0.0.1:%d;\n  root %s;\n }\n}\n",
            c.port, root);
    return nginx_end(env, out, &c, port_out);
}

int h_iperf_server_start(h_env *env, h_proc **out, int *port_out)
{
    int port = *port_out > 0 ? *port_out : h_free_port();
    if (port < 0)
        return port;
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", port);
    const char *sv[] = {"iperf3", "-s", "-B", "127.0.0.1", "-p", ps, "-1", NULL};
    int rc = h_proc_start(env, out, "iperf3-server", (char *const *)sv, NULL, NULL, 0);
    if (rc < 0)
        return rc;
    /* iperf3 has no port file, and a connect probe would use up its single
     * session (-1): give it a moment to listen */
    usleep(300000);
    *port_out = port;
    return 0;
}

double h_iperf_client_gib_s(int port, int streams, int seconds, int reverse)
{
    char cmd[320];
    snprintf(cmd, sizeof(cmd),
             "iperf3 -c 127.0.0.1 -p %d -P %d -t %d %s -f m 2>/dev/null | "
             "grep -E '(SUM|\\[ *[0-9]+\\]).*receiver' | tail -1 | awk '{print $(NF-2)}'",
             port, streams, seconds, reverse ? "-R" : "");
    double mbits = 0;
    FILE *p = popen(cmd, "r");
    if (!p || fscanf(p, "%lf", &mbits) != 1)
        mbits = 0;
    if (p)
        pclose(p);
    return mbits * 1e6 / 8 / (1024.0 * 1024 * 1024);
}

double h_iperf_gib_s(h_env *env, int streams, int seconds)
{
    h_proc *srv;
    int port = 0;
    if (h_iperf_server_start(env, &srv, &port) < 0)
        return 0;
    double g = h_iperf_client_gib_s(port, streams, seconds, 0);
    h_proc_wait(srv, 3000);
    h_proc_stop(srv, 2000);
    return g;
}
