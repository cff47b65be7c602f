/* SPDX-License-Identifier: Apache-2.0
 *
 * h_peers.c: the peers benchmarks measure against, started the same way
 * everywhere: an nginx slice cache in front of an S3 endpoint (Debian nginx,
 * the configuration of REFERENCES.md: slice 1m, proxy_cache, proxy_cache_lock
 * on, keep-alive upstream, everything inside the env folder), and the loopback
 * ceiling as iperf3 -P N measures it.
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

int h_nginx_start(h_env *env, h_proc **out, int upstream_port, int *port_out)
{
    char d[1024], conf[1100], err[1100];
    if (h_env_path(env, d, sizeof(d), "nginx") < 0)
        return -ENAMETOOLONG;
    mkdir(d, 0755);
    int port = h_free_port();
    if (port < 0)
        return port;
    snprintf(conf, sizeof(conf), "%s/nginx.conf", d);
    snprintf(err, sizeof(err), "%s/error.log", d);
    FILE *f = fopen(conf, "w");
    if (!f)
        return -errno;
    /* as root, nginx's workers would switch to www-data and could not write the
     * cache in our 0700 temp folder */
    fprintf(f,
            "%sworker_processes 2;\npid %s/nginx.pid;\nerror_log %s warn;\ndaemon off;\n"
            "events { worker_connections 1024; }\nhttp {\n access_log off;\n"
            " client_body_temp_path %s/body;\n proxy_temp_path %s/proxy;\n"
            " fastcgi_temp_path %s/fcgi;\n uwsgi_temp_path %s/uwsgi;\n scgi_temp_path %s/scgi;\n"
            " sendfile on;\n tcp_nopush off;\n"
            " proxy_cache_path %s/cache levels=1:2 keys_zone=s3:64m max_size=16g inactive=1h "
            "use_temp_path=off;\n upstream s3 { server 127.0.0.1:%d; keepalive 32; }\n"
            " server {\n  listen 127.0.0.1:%d;\n  location / {\n   slice 1m;\n"
            "   proxy_cache s3;\n   proxy_cache_key $uri$is_args$args$slice_range;\n"
            "   proxy_set_header Range $slice_range;\n   proxy_cache_valid 200 206 1h;\n"
            "   proxy_cache_lock on;\n   proxy_http_version 1.1;\n"
            "   proxy_set_header Connection \"\";\n   proxy_set_header Host 127.0.0.1:%d;\n"
            "   proxy_pass http://s3;\n  }\n }\n}\n",
            geteuid() == 0 ? "user root;\n" : "", d, err, d, d, d, d, d, d, upstream_port, port,
            upstream_port);
    if (fclose(f) != 0)
        return -EIO;
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
