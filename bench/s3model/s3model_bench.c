/* SPDX-License-Identifier: Apache-2.0
 *
 * s3model_bench: measures the S3 model's own cost, with latency and bandwidth
 * cap off, side by side in one run:
 *   (a) a trivial fast origin (an evhttp server on a thread of this process
 *       answering GET /bytes/N with N bytes) directly vs through the model:
 *       the model's ceiling in MiB/s;
 *   (b) s3rver directly vs through the model: the overhead ratio
 *       (time through the model / time direct; 1.00 = no overhead).
 * Each repetition runs every path in turn (interleaved); the table shows
 * medians. One client on one kept-alive connection per path: a large GET's
 * throughput and the p50 time of small GETs. The last line is machine-readable:
 *   s3model: ceiling_mib_s=<m> overhead_vs_direct=<r>
 * Needs RINGCACHE_BUILD_DIR (for bench/s3model/s3model) and node + npm s3rver.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "harness.h"
#include "../bench.h"

#define MIB (1024.0 * 1024.0)

typedef struct bench_opts {
    int size_mib;
    int reps;
    int small_kib;
    int small_count;
} bench_opts;

/* ---- the fast origin: evhttp on its own thread ---------------------------- */

typedef struct origin {
    struct event_base *base;
    struct evhttp *http;
    int port;
    char *blob;
    size_t blob_len;
    pthread_t thread;
} origin;

static void origin_on_req(struct evhttp_request *req, void *arg)
{
    origin *o = arg;
    const char *uri = evhttp_request_get_uri(req);
    unsigned long long n = 0;
    if (sscanf(uri, "/bytes/%llu", &n) != 1 || n > o->blob_len) {
        evhttp_send_error(req, 404, "use /bytes/N");
        return;
    }
    struct evbuffer *b = evbuffer_new();
    if (b == NULL) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    evbuffer_add_reference(b, o->blob, (size_t)n, NULL, NULL);
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
}

static void *origin_run(void *arg)
{
    origin *o = arg;
    event_base_dispatch(o->base);
    return NULL;
}

static int origin_start(origin *o, size_t max_bytes)
{
    memset(o, 0, sizeof(*o));
    o->blob_len = max_bytes;
    o->blob = malloc(max_bytes);
    o->base = event_base_new();
    o->http = o->base != NULL ? evhttp_new(o->base) : NULL;
    if (o->blob == NULL || o->http == NULL)
        return -ENOMEM;
    memset(o->blob, 'x', max_bytes);
    evhttp_set_gencb(o->http, origin_on_req, o);
    /* Our own listening socket with TCP_NODELAY, which accepted sockets inherit
     * on Linux: evhttp writes head and body separately, and Nagle plus delayed
     * ACKs would add 40 ms to every small answer. */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    if (fd < 0 || setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 128) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0 ||
        evhttp_accept_socket_with_handle(o->http, fd) == NULL) {
        if (fd >= 0)
            close(fd);
        return -EADDRINUSE;
    }
    o->port = ntohs(sa.sin_port);
    return pthread_create(&o->thread, NULL, origin_run, o) == 0 ? 0 : -EAGAIN;
}

static void origin_stop(origin *o)
{
    if (o->base != NULL && o->port > 0) {
        event_base_loopbreak(o->base);
        /* Wake the loop so it sees the break. */
        int fd = h_tcp_connect(o->port, 1000);
        if (fd >= 0)
            close(fd);
        pthread_join(o->thread, NULL);
    }
    if (o->http != NULL)
        evhttp_free(o->http);
    if (o->base != NULL)
        event_base_free(o->base);
    free(o->blob);
}

/* ---- a minimal keep-alive GET client ------------------------------------- */

typedef struct client {
    int fd;
    char *scratch;
    size_t cap;
    size_t have; /* bytes of the next response already read */
} client;

static int client_open(client *c, int port)
{
    c->cap = 1 << 20;
    c->scratch = malloc(c->cap);
    c->have = 0;
    c->fd = h_tcp_connect(port, 5000);
    return c->scratch != NULL && c->fd >= 0 ? 0 : -ECONNREFUSED;
}

static void client_close(client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    free(c->scratch);
    c->fd = -1;
    c->scratch = NULL;
}

/* GETs path; returns body bytes or -errno. */
static long long client_get(client *c, const char *path)
{
    char req[512];
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
    if (send(c->fd, req, (size_t)n, MSG_NOSIGNAL) != n)
        return -EIO;
    char *end = NULL;
    for (;;) {
        if (c->have > 0) {
            c->scratch[c->have < c->cap ? c->have : c->cap - 1] = '\0';
            end = strstr(c->scratch, "\r\n\r\n");
            if (end != NULL)
                break;
        }
        if (c->have + 1 >= c->cap)
            return -EPROTO;
        ssize_t r = recv(c->fd, c->scratch + c->have, c->cap - 1 - c->have, 0);
        if (r <= 0)
            return -ECONNRESET;
        c->have += (size_t)r;
    }
    int status = 0;
    if (sscanf(c->scratch, "HTTP/1.1 %d", &status) != 1 || status != 200) {
        fprintf(stderr, "s3model_bench: GET %s answered: %.80s\n", path, c->scratch);
        return -EPROTO;
    }
    long long clen = -1;
    for (char *p = c->scratch; p < end; p = strstr(p, "\r\n") + 2) {
        if (strncasecmp(p, "Content-Length:", 15) == 0)
            clen = strtoll(p + 15, NULL, 10);
    }
    if (clen < 0)
        return -EPROTO;
    size_t head = (size_t)(end - c->scratch) + 4;
    long long got = (long long)(c->have - head);
    if (got > clen)
        return -EPROTO; /* nothing is pipelined here */
    while (got < clen) {
        size_t want = (size_t)(clen - got) < c->cap ? (size_t)(clen - got) : c->cap;
        ssize_t r = recv(c->fd, c->scratch, want, 0);
        if (r <= 0)
            return -ECONNRESET;
        got += r;
    }
    c->have = 0;
    return clen;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct path_def {
    const char *name;
    int port;
    char large[256];
    char small[256];
    double *mib_s;  /* per repetition */
    double *p50_ms; /* per repetition */
} path_def;

/* One repetition of one path: a large GET (MiB/s) and small GETs (p50 ms). */
static int measure(path_def *p, const bench_opts *o, int rep)
{
    client c;
    if (client_open(&c, p->port) != 0) {
        fprintf(stderr, "s3model_bench: cannot connect to %s on port %d\n", p->name, p->port);
        client_close(&c);
        return -1;
    }
    /* Warm-up: connection and first request. */
    if (client_get(&c, p->small) < 0)
        goto fail;
    double t0 = bench_now_s();
    long long n = client_get(&c, p->large);
    double t1 = bench_now_s();
    if (n < 0)
        goto fail;
    p->mib_s[rep] = (double)n / MIB / (t1 - t0);
    double *lat = malloc(sizeof(double) * (size_t)o->small_count);
    if (lat == NULL)
        goto fail;
    for (int i = 0; i < o->small_count; i++) {
        double a = bench_now_s();
        if (client_get(&c, p->small) < 0) {
            free(lat);
            goto fail;
        }
        lat[i] = (bench_now_s() - a) * 1000.0;
    }
    p->p50_ms[rep] = median(lat, o->small_count);
    free(lat);
    client_close(&c);
    return 0;
fail:
    fprintf(stderr, "s3model_bench: GET through %s failed\n", p->name);
    client_close(&c);
    return -1;
}

static int parse_int(const char *flag, const char *v, int min, int max, int *out)
{
    char *end = NULL;
    long x = strtol(v, &end, 10);
    if (end == v || *end != '\0' || x < min || x > max) {
        fprintf(stderr, "s3model_bench: %s must be an integer in %d..%d, not '%s'\n", flag, min,
                max, v);
        return -1;
    }
    *out = (int)x;
    return 0;
}

static void usage(void)
{
    printf("usage: s3model_bench [--size-mib N (64)] [--reps N (5)] [--small-kib N (64)] "
           "[--small-count N (200)]\n"
           "Measures the S3 model's ceiling (fast origin) and overhead (s3rver), latency and\n"
           "bandwidth cap off, interleaved repetitions, medians. Needs RINGCACHE_BUILD_DIR.\n");
}

int main(int argc, char **argv)
{
    bench_opts o = {.size_mib = 64, .reps = 5, .small_kib = 64, .small_count = 200};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0) {
            usage();
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "s3model_bench: unknown flag or missing value: %s (see --help)\n", a);
            return 2;
        }
        const char *v = argv[++i];
        int rc = strcmp(a, "--size-mib") == 0      ? parse_int(a, v, 1, 4096, &o.size_mib)
                 : strcmp(a, "--reps") == 0        ? parse_int(a, v, 1, 1000, &o.reps)
                 : strcmp(a, "--small-kib") == 0   ? parse_int(a, v, 1, 1024, &o.small_kib)
                 : strcmp(a, "--small-count") == 0 ? parse_int(a, v, 1, 100000, &o.small_count)
                                                   : (fprintf(stderr,
                                                              "s3model_bench: unknown "
                                                              "flag %s (see --help)\n",
                                                              a),
                                                      -1);
        if (rc != 0)
            return 2;
    }
    size_t large = (size_t)o.size_mib << 20, small = (size_t)o.small_kib << 10;
    int status = 1;
    origin org;
    h_env *env = NULL;
    path_def paths[4];
    memset(paths, 0, sizeof(paths));
    char *data = NULL;
    if (origin_start(&org, large) != 0) {
        fprintf(stderr, "s3model_bench: cannot start the fast origin\n");
        goto out;
    }
    if (h_env_create(&env, "s3model_bench") != 0)
        goto out;
    h_s3 *s3;
    int rc = h_s3_start(env, &s3, NULL);
    if (rc == -ENOPKG)
        h_skip(h_last_error());
    if (rc != 0)
        goto out;
    h_s3model *m_origin, *m_s3;
    if (h_s3model_start(env, &m_origin, org.port, 0, 0) != 0 ||
        h_s3model_start(env, &m_s3, h_s3_port(s3), 0, 0) != 0)
        goto out;
    /* The objects on s3rver. */
    data = malloc(large);
    if (data == NULL)
        goto out;
    memset(data, 'y', large);
    const char *keys[2] = {"bench/large", "bench/small"};
    size_t sizes[2] = {large, small};
    for (int k = 0; k < 2; k++) {
        char url[512];
        snprintf(url, sizeof(url), "%s/%s/%s", h_s3_endpoint(s3), H_S3_DEFAULT_BUCKET, keys[k]);
        h_http_req put = {.method = "PUT", .url = url, .body = data, .body_len = sizes[k]};
        if (h_http(&put, NULL) != 200) {
            fprintf(stderr, "s3model_bench: cannot PUT %s\n", url);
            goto out;
        }
    }
    const char *names[4] = {"origin direct", "origin via s3model", "s3rver direct",
                            "s3rver via s3model"};
    int ports[4] = {org.port, h_s3model_port(m_origin), h_s3_port(s3), h_s3model_port(m_s3)};
    for (int i = 0; i < 4; i++) {
        paths[i].name = names[i];
        paths[i].port = ports[i];
        if (i < 2) {
            snprintf(paths[i].large, sizeof(paths[i].large), "/bytes/%zu", large);
            snprintf(paths[i].small, sizeof(paths[i].small), "/bytes/%zu", small);
        } else {
            snprintf(paths[i].large, sizeof(paths[i].large), "/%s/%s", H_S3_DEFAULT_BUCKET,
                     keys[0]);
            snprintf(paths[i].small, sizeof(paths[i].small), "/%s/%s", H_S3_DEFAULT_BUCKET,
                     keys[1]);
        }
        paths[i].mib_s = calloc((size_t)o.reps, sizeof(double));
        paths[i].p50_ms = calloc((size_t)o.reps, sizeof(double));
        if (paths[i].mib_s == NULL || paths[i].p50_ms == NULL)
            goto out;
    }
    for (int r = 0; r < o.reps; r++) {
        for (int i = 0; i < 4; i++) {
            if (measure(&paths[i], &o, r) != 0)
                goto out;
        }
    }
    double mib[4], p50[4];
    for (int i = 0; i < 4; i++) {
        mib[i] = median(paths[i].mib_s, o.reps);
        p50[i] = median(paths[i].p50_ms, o.reps);
    }
    printf("s3model bench: one client, one kept-alive connection per path; large GET %d MiB, "
           "%d x %d KiB GETs; %d interleaved repetitions, medians; latency and cap off\n\n",
           o.size_mib, o.small_count, o.small_kib, o.reps);
    printf("| path                 | large GET MiB/s | %d KiB GET p50 ms |\n", o.small_kib);
    printf("|----------------------|-----------------|-------------------|\n");
    for (int i = 0; i < 4; i++)
        printf("| %-20s | %15.0f | %17.3f |\n", paths[i].name, mib[i], p50[i]);
    double overhead = mib[3] > 0 ? mib[2] / mib[3] : 0;
    printf("\nceiling: the model moves %.0f MiB/s from a fast origin (%.2fx of the origin "
           "direct)\noverhead: s3rver through the model takes %.2fx the time of s3rver direct "
           "(large GET); small GET p50 %+.3f ms\n",
           mib[1], mib[0] > 0 ? mib[1] / mib[0] : 0, overhead, p50[3] - p50[2]);
    printf("%s\n", BENCH_RATIO_CONVENTION);
    printf("s3model: ceiling_mib_s=%.0f overhead_vs_direct=%.2f\n", mib[1], overhead);
    status = 0;
    if (h_proc_stop(h_s3model_proc(m_origin), 10000) != 0 ||
        h_proc_stop(h_s3model_proc(m_s3), 10000) != 0 || h_proc_stop(h_s3_proc(s3), 10000) != 0)
        status = 1;
out:
    for (int i = 0; i < 4; i++) {
        free(paths[i].mib_s);
        free(paths[i].p50_ms);
    }
    free(data);
    h_env_destroy(&env);
    origin_stop(&org);
    return status;
}
