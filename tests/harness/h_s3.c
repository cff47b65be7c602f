/* SPDX-License-Identifier: Apache-2.0
 *
 * Services on top of h_proc: the npm S3 servers (through tests/harness/s3server.js)
 * and the S3 model proxy (bench/s3model/s3model) with helpers for its admin HTTP
 * (counters, reset, fault injection, run-time config).
 * Thread-safety: none (see harness.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "h_int.h"

struct h_s3 {
    h_s3 *next;
    h_proc *proc;
    int port;
    char endpoint[64];
    char data_dir[PATH_MAX];
};

struct h_s3model {
    h_s3model *next;
    h_proc *proc;
    int port;
    int admin_port;
    char endpoint[64];
};

void h__free_services(h_env *env)
{
    while (env->s3s != NULL) {
        h_s3 *s = env->s3s;
        env->s3s = s->next;
        free(s);
    }
    while (env->models != NULL) {
        h_s3model *m = env->models;
        env->models = m->next;
        free(m);
    }
}

/* Looks for an executable named prog in PATH. */
static int h_find_in_path(const char *prog, char *buf, size_t len)
{
    const char *path = getenv("PATH");
    if (path == NULL)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path != '\0') {
        const char *end = strchr(path, ':');
        size_t n = end != NULL ? (size_t)(end - path) : strlen(path);
        if (n > 0 && (size_t)snprintf(buf, len, "%.*s/%s", (int)n, path, prog) < len &&
            access(buf, X_OK) == 0)
            return 0;
        path += n;
        if (*path == ':')
            path++;
    }
    return -ENOENT;
}

static int h_node_modules(char *buf, size_t len)
{
    const char *nm = getenv("RINGCACHE_NODE_MODULES");
    if (nm != NULL && nm[0] != '\0') {
        snprintf(buf, len, "%s", nm);
        return 0;
    }
    const char *src = getenv("RINGCACHE_SOURCE_DIR");
    if (src == NULL || src[0] == '\0')
        src = RINGCACHE_HARNESS_SOURCE_DIR;
    if ((size_t)snprintf(buf, len, "%s/node_modules", src) >= len)
        return -ENAMETOOLONG;
    return 0;
}

int h_s3_start(h_env *env, h_s3 **out, const h_s3_opts *opts)
{
    *out = NULL;
    h_s3_opts o = {0};
    if (opts != NULL)
        o = *opts;
    if (o.version == 0)
        o.version = 3;
    if (o.version != 3 && o.version != 5) {
        h__err("h_s3_start: version must be 3 (s3rver) or 5 (@20minutes/s3rver), not %d",
               o.version);
        return -EINVAL;
    }
    if (o.name == NULL)
        o.name = "s3rver";
    static const char *const default_buckets[] = {H_S3_DEFAULT_BUCKET, NULL};
    if (o.buckets == NULL)
        o.buckets = default_buckets;

    char node[PATH_MAX], nm[PATH_MAX], pkg[PATH_MAX + 64], js[PATH_MAX];
    if (h_find_in_path("node", node, sizeof(node)) != 0) {
        h__err("node is not on PATH, cannot start the S3 server (install nodejs)");
        return -ENOPKG;
    }
    int rc = h_node_modules(nm, sizeof(nm));
    if (rc < 0)
        return rc;
    snprintf(pkg, sizeof(pkg), "%s/%s/package.json", nm,
             o.version == 3 ? "s3rver" : "@20minutes/s3rver");
    if (access(pkg, R_OK) != 0) {
        h__err("%s is missing (run npm ci in the source folder, or set RINGCACHE_NODE_MODULES)",
               pkg);
        return -ENOPKG;
    }
    if (h_source_path(js, sizeof(js), "tests/harness/s3server.js") != 0)
        return -ENOPKG;

    h_s3 *s3 = calloc(1, sizeof(*s3));
    if (s3 == NULL)
        return -ENOMEM;
    char port_file[PATH_MAX];
    char data_name[128];
    snprintf(data_name, sizeof(data_name), "%s-data", o.name);
    h_env_path(env, s3->data_dir, sizeof(s3->data_dir), data_name);
    if ((size_t)snprintf(port_file, sizeof(port_file), "%s/%s.port", env->dir, o.name) >=
        sizeof(port_file)) {
        free(s3);
        return -ENAMETOOLONG;
    }

    const char *argv[64];
    int n = 0;
    char version[8];
    snprintf(version, sizeof(version), "%d", o.version);
    argv[n++] = node;
    argv[n++] = js;
    argv[n++] = "--node-modules";
    argv[n++] = nm;
    argv[n++] = "--version";
    argv[n++] = version;
    argv[n++] = "--dir";
    argv[n++] = s3->data_dir;
    argv[n++] = "--port-file";
    argv[n++] = port_file;
    for (int i = 0; o.buckets[i] != NULL && n < 50; i++) {
        argv[n++] = "--bucket";
        argv[n++] = o.buckets[i];
    }
    if (o.access_key != NULL || o.secret_key != NULL) {
        argv[n++] = "--access-key";
        argv[n++] = o.access_key != NULL ? o.access_key : H_S3_DEFAULT_KEY;
        argv[n++] = "--secret-key";
        argv[n++] = o.secret_key != NULL ? o.secret_key : H_S3_DEFAULT_KEY;
    }
    if (o.verbose)
        argv[n++] = "--verbose";
    if (o.no_conditional_writes)
        argv[n++] = "--no-conditional-writes";
    argv[n] = NULL;
    char *const envp[] = {"NODE_OPTIONS=--openssl-legacy-provider", "NODE_NO_WARNINGS=1", NULL};
    h_proc *proc;
    rc = h_proc_start(env, &proc, o.name, (char *const *)argv, envp, port_file, o.ready_timeout_ms);
    if (rc < 0) {
        free(s3);
        return rc;
    }
    s3->proc = proc;
    s3->port = h_proc_port(proc);
    snprintf(s3->endpoint, sizeof(s3->endpoint), "http://127.0.0.1:%d", s3->port);
    s3->next = env->s3s;
    env->s3s = s3;
    *out = s3;
    return 0;
}

const char *h_s3_endpoint(const h_s3 *s3)
{
    return s3->endpoint;
}

int h_s3_port(const h_s3 *s3)
{
    return s3->port;
}

const char *h_s3_data_dir(const h_s3 *s3)
{
    return s3->data_dir;
}

h_proc *h_s3_proc(const h_s3 *s3)
{
    return s3->proc;
}

int h_s3model_start(h_env *env, h_s3model **out, int upstream_port, int latency_ms,
                    int bandwidth_mib_s)
{
    *out = NULL;
    char bin[PATH_MAX];
    int rc = h_build_path(bin, sizeof(bin), "bench/s3model/s3model");
    if (rc < 0)
        return rc;
    h_s3model *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return -ENOMEM;
    /* Several models may share one env: name them by count. */
    int idx = 0;
    for (h_s3model *it = env->models; it != NULL; it = it->next)
        idx++;
    char name[32], port_file[PATH_MAX], admin_file[PATH_MAX], upstream[32], lat[16], bw[16];
    snprintf(name, sizeof(name), idx == 0 ? "s3model" : "s3model%d", idx);
    if ((size_t)snprintf(port_file, sizeof(port_file), "%s/%s.port", env->dir, name) >=
            sizeof(port_file) ||
        (size_t)snprintf(admin_file, sizeof(admin_file), "%s/%s.admin-port", env->dir, name) >=
            sizeof(admin_file)) {
        free(m);
        return -ENAMETOOLONG;
    }
    snprintf(upstream, sizeof(upstream), "127.0.0.1:%d", upstream_port);
    snprintf(lat, sizeof(lat), "%d", latency_ms);
    snprintf(bw, sizeof(bw), "%d", bandwidth_mib_s);
    unlink(admin_file);
    const char *argv[] = {bin, "--upstream",        upstream,   "--port",
                          "0", "--port-file",       port_file,  "--admin-port",
                          "0", "--admin-port-file", admin_file, "--latency-ms",
                          lat, "--bandwidth-mib",   bw,         NULL};
    h_proc *proc;
    rc = h_proc_start(env, &proc, name, (char *const *)argv, NULL, port_file, 0);
    if (rc < 0) {
        free(m);
        return rc;
    }
    /* s3model writes the admin port file before the data port file. */
    int admin = h__read_port_file(admin_file);
    if (admin <= 0) {
        h__err("%s is ready but wrote no admin port to %s", name, admin_file);
        h_proc_print_log_tail(proc, 30);
        free(m);
        return -EPROTO;
    }
    m->proc = proc;
    m->port = h_proc_port(proc);
    m->admin_port = admin;
    snprintf(m->endpoint, sizeof(m->endpoint), "http://127.0.0.1:%d", m->port);
    m->next = env->models;
    env->models = m;
    *out = m;
    return 0;
}

int h_s3model_port(const h_s3model *m)
{
    return m->port;
}

int h_s3model_admin_port(const h_s3model *m)
{
    return m->admin_port;
}

const char *h_s3model_endpoint(const h_s3model *m)
{
    return m->endpoint;
}

h_proc *h_s3model_proc(const h_s3model *m)
{
    return m->proc;
}

/* GET http://127.0.0.1:<admin><path_and_query>; body into resp. Status 200 or -errno. */
static int h_admin_get(const h_s3model *m, const char *path_and_query, h_http_resp *resp)
{
    char url[2048];
    if ((size_t)snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", m->admin_port,
                         path_and_query) >= sizeof(url))
        return -ENAMETOOLONG;
    int st = h_http_get(url, resp);
    if (st < 0) {
        h__err("s3model admin %s failed: %s (is the model running? see %s)", url, strerror(-st),
               m->proc->log_path);
        return st;
    }
    if (st != 200) {
        h__err("s3model admin %s answered %d: %s", url, st, resp->body != NULL ? resp->body : "");
        h_http_resp_deinit(resp);
        return st == 404 ? -ENOENT : -EINVAL;
    }
    return 0;
}

static int64_t h_admin_int(const h_s3model *m, const char *path_and_query)
{
    h_http_resp resp = {0};
    int rc = h_admin_get(m, path_and_query, &resp);
    if (rc < 0)
        return rc;
    char *end = NULL;
    long long v = resp.body != NULL ? strtoll(resp.body, &end, 10) : 0;
    int ok = resp.body != NULL && end != resp.body;
    h_http_resp_deinit(&resp);
    if (!ok) {
        h__err("s3model admin %s did not answer a number", path_and_query);
        return -EPROTO;
    }
    return v;
}

/* Appends "&name=<escaped value>" to q. */
static int h_q_add(char *q, size_t len, const char *name, const char *value)
{
    if (value == NULL)
        return 0;
    char *esc = curl_easy_escape(NULL, value, 0);
    if (esc == NULL)
        return -ENOMEM;
    size_t used = strlen(q);
    int n = snprintf(q + used, len - used, "%s%s=%s", strchr(q, '?') ? "&" : "?", name, esc);
    curl_free(esc);
    return n < 0 || (size_t)n >= len - used ? -ENAMETOOLONG : 0;
}

int64_t h_s3model_count(const h_s3model *m, const char *method, const char *path)
{
    char q[2048] = "/count";
    if (h_q_add(q, sizeof(q), "method", method) < 0 || h_q_add(q, sizeof(q), "path", path) < 0)
        return -ENAMETOOLONG;
    return h_admin_int(m, q);
}

int64_t h_s3model_stat(const h_s3model *m, const char *name)
{
    char q[512] = "/stat";
    if (h_q_add(q, sizeof(q), "name", name) < 0)
        return -ENAMETOOLONG;
    return h_admin_int(m, q);
}

int h_s3model_counts_json(const h_s3model *m, char **json)
{
    *json = NULL;
    h_http_resp resp = {0};
    int rc = h_admin_get(m, "/counts", &resp);
    if (rc < 0)
        return rc;
    *json = resp.body != NULL ? resp.body : strdup("");
    resp.body = NULL;
    h_http_resp_deinit(&resp);
    return *json != NULL ? 0 : -ENOMEM;
}

int h_s3model_reset(const h_s3model *m)
{
    h_http_resp resp = {0};
    int rc = h_admin_get(m, "/reset", &resp);
    h_http_resp_deinit(&resp);
    return rc;
}

int h_s3model_fault(const h_s3model *m, const char *kind, int count, const char *method,
                    const char *path_substr, int stall_ms)
{
    char q[2048] = "/fault";
    char n[16], st[16];
    snprintf(n, sizeof(n), "%d", count);
    snprintf(st, sizeof(st), "%d", stall_ms);
    if (h_q_add(q, sizeof(q), "kind", kind) < 0 || h_q_add(q, sizeof(q), "count", n) < 0 ||
        h_q_add(q, sizeof(q), "method", method) < 0 ||
        h_q_add(q, sizeof(q), "path", path_substr) < 0 || h_q_add(q, sizeof(q), "stall_ms", st) < 0)
        return -ENAMETOOLONG;
    h_http_resp resp = {0};
    int rc = h_admin_get(m, q, &resp);
    h_http_resp_deinit(&resp);
    return rc;
}

int h_s3model_config(const h_s3model *m, int latency_ms, int bandwidth_mib_s)
{
    char q[256] = "/config";
    char a[16], b[16];
    snprintf(a, sizeof(a), "%d", latency_ms);
    snprintf(b, sizeof(b), "%d", bandwidth_mib_s);
    if ((latency_ms >= 0 && h_q_add(q, sizeof(q), "latency_ms", a) < 0) ||
        (bandwidth_mib_s >= 0 && h_q_add(q, sizeof(q), "bandwidth_mib", b) < 0))
        return -ENAMETOOLONG;
    h_http_resp resp = {0};
    int rc = h_admin_get(m, q, &resp);
    h_http_resp_deinit(&resp);
    return rc;
}
