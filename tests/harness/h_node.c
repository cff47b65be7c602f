/* SPDX-License-Identifier: Apache-2.0
 *
 * h_node.c: a ringcached node on loopback for tests and benchmarks, started
 * with the flags every one of them gives (127.0.0.1, ports the node picks and
 * writes to files, S3RVER's credentials, --no-sync) and whatever a caller adds.
 */
#include "h_int.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define H_NODE_ARGS 96

/* The port in the file at path (written by the node before its data port is
 * ready), or -EPROTO. */
static int read_side_port(const char *path)
{
    int port = h__read_port_file(path);
    return port > 0 ? port : -EPROTO;
}

int h_node_start(h_env *env, h_node *out, const h_node_opts *o)
{
    memset(out, 0, sizeof(*out));
    char bin[PATH_MAX];
    int rc = h_build_path(bin, sizeof(bin), H_RINGCACHED);
    if (rc < 0)
        return rc;
    snprintf(out->dir, sizeof(out->dir), "%s", o->dir ? o->dir : "");
    if (!o->dir)
        h_env_path(env, out->dir, sizeof(out->dir), o->name);
    mkdir(out->dir, 0755);
    char pf[PATH_MAX], af[PATH_MAX], sf[PATH_MAX], file[160], port[16], threads[16];
    snprintf(file, sizeof(file), "%s.port", o->name);
    h_env_path(env, pf, sizeof(pf), file);
    snprintf(file, sizeof(file), "%s.admin-port", o->name);
    h_env_path(env, af, sizeof(af), file);
    snprintf(file, sizeof(file), "%s.s3api-port", o->name);
    h_env_path(env, sf, sizeof(sf), file);
    unlink(af);
    unlink(sf);
    snprintf(port, sizeof(port), "%d", o->port);
    snprintf(threads, sizeof(threads), "%d", o->threads);

    const char *argv[H_NODE_ARGS];
    int k = 0;
    for (int i = 0; o->wrap && o->wrap[i] && k < 8; i++)
        argv[k++] = o->wrap[i];
    const char *base[] = {bin,
                          "--node-id",
                          o->id ? o->id : o->name,
                          "--listen",
                          "127.0.0.1",
                          "--port",
                          port,
                          "--port-file",
                          pf,
                          "--admin-listen",
                          "127.0.0.1",
                          "--admin-port",
                          "0",
                          "--admin-port-file",
                          af,
                          "--data-dir",
                          out->dir,
                          "--ssd-capacity",
                          o->ssd ? o->ssd : "512MiB",
                          "--ram-capacity",
                          o->ram ? o->ram : "64MiB",
                          "--no-sync",
                          "--s3-endpoint",
                          o->s3_endpoint,
                          "--s3-access-key",
                          H_S3_DEFAULT_KEY,
                          "--s3-secret-key",
                          H_S3_DEFAULT_KEY,
                          NULL};
    for (int i = 0; base[i]; i++)
        argv[k++] = base[i];
    if (o->members) {
        argv[k++] = "--members";
        argv[k++] = o->members;
    }
    if (o->threads > 0) {
        argv[k++] = "--threads";
        argv[k++] = threads;
    }
    if (o->log_level) {
        argv[k++] = "--log-level";
        argv[k++] = o->log_level;
    }
    bool s3api = false;
    for (int i = 0; o->extra && o->extra[i] && k < H_NODE_ARGS - 3; i++) {
        argv[k++] = o->extra[i];
        s3api |= strcmp(o->extra[i], "--s3-api-port") == 0;
    }
    if (s3api) {
        argv[k++] = "--s3-api-port-file";
        argv[k++] = sf;
    }
    argv[k] = NULL;
    rc = h_proc_start(env, &out->proc, o->name, (char *const *)argv, NULL, pf, 0);
    if (rc < 0)
        return rc;
    out->port = h_proc_port(out->proc);
    out->admin_port = read_side_port(af);
    if (out->admin_port < 0) {
        h__err("%s wrote no admin port to %s", o->name, af);
        return -EPROTO;
    }
    if (s3api) {
        out->s3api_port = read_side_port(sf);
        if (out->s3api_port < 0) {
            h__err("%s wrote no S3 API port to %s", o->name, sf);
            return -EPROTO;
        }
    }
    return 0;
}

void h_members_add(char *members, size_t cap, const char *id, int port)
{
    size_t o = strlen(members);
    snprintf(members + o, cap - o, "%s%s=127.0.0.1:%d", o ? "," : "", id, port);
}

int64_t h_metric(int admin_port, const char *metric)
{
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", admin_port);
    h_http_resp r = {0};
    if (h_http_get(url, &r) != 200 || !r.body) {
        h_http_resp_deinit(&r);
        return -1;
    }
    int64_t v = -1;
    size_t ml = strlen(metric);
    for (const char *l = r.body; l && *l;) {
        if (strncmp(l, metric, ml) == 0 && (l[ml] == ' ' || l[ml] == '{')) {
            const char *sp = strchr(l, ' ');
            if (sp)
                v = (int64_t)strtod(sp + 1, NULL);
            break;
        }
        l = strchr(l, '\n');
        if (l)
            l++;
    }
    h_http_resp_deinit(&r);
    return v;
}
