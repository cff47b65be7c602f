/* SPDX-License-Identifier: Apache-2.0
 *
 * node_util.c: ringcached helpers for integration tests (see the header).
 */
#include "node_util.h"

#include <errno.h>
#include <stdbool.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* Not cmocka (benchmarks use this file too): a failed step ends the process. */
#define T_CHECK(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #cond);                      \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

int t_node_try_start(h_env *env, t_node *n, const char *name, const char *s3_endpoint,
                     const char *const *extra)
{
    return t_node_try_start_wrapped(env, n, name, s3_endpoint, extra, NULL);
}

int t_node_try_start_wrapped(h_env *env, t_node *n, const char *name, const char *s3_endpoint,
                             const char *const *extra, const char *const *wrap)
{
    memset(n, 0, sizeof(*n));
    snprintf(n->name, sizeof(n->name), "%s", name);
    h_node hn;
    h_node_opts o = {.name = name, .s3_endpoint = s3_endpoint, .extra = extra, .wrap = wrap};
    int rc = h_node_start(env, &hn, &o);
    if (rc == -ENOENT)
        h_skip("ringcached is not built");
    if (rc == -EPROTO) {
        fprintf(stderr, "%s\n", h_last_error());
        exit(1);
    }
    if (rc < 0)
        return rc;
    n->proc = hn.proc;
    n->port = hn.port;
    n->admin_port = hn.admin_port;
    n->s3api_port = hn.s3api_port;
    memcpy(n->dir, hn.dir, sizeof(n->dir) - 1); /* env folders are short */
    return 0;
}

void t_node_start(h_env *env, t_node *n, const char *name, const char *s3_endpoint,
                  const char *const *extra)
{
    if (t_node_try_start(env, n, name, s3_endpoint, extra) < 0) {
        fprintf(stderr, "cannot start %s: %s\n", name, h_last_error());
        exit(1);
    }
}

int64_t t_node_metric(const t_node *n, const char *metric)
{
    return h_metric(n->admin_port, metric);
}

int64_t t_node_rss_kib(const t_node *n)
{
    return h_pid_rss_kib(h_proc_pid(n->proc));
}

cc_conn *t_conn(struct event_base *base, const t_node *n, const char *token)
{
    cc_conn *c = NULL;
    cc_config cc = {"127.0.0.1", n->port, token, 0, "test", 2000, 30000, false, NULL, NULL};
    if (cc_conn_create(&c, base, &cc) < 0)
        return NULL;
    return c;
}

void t_done(const cc_result *r, void *arg)
{
    t_wait *w = arg;
    w->res = *r;
    w->res.text = NULL;
    w->done = 1;
}

cc_result t_get(struct event_base *base, cc_conn *c, const char *bucket, const char *key,
                const char *version, uint64_t size, uint64_t block, void *buf, size_t cap)
{
    t_wait w = {0};
    rcp_get_req g = {{rcp_s(bucket), rcp_s(key), rcp_s(version), size}, block, 0, 0, 0};
    return t_wait_run(base, &w, cc_get(c, &g, buf, cap, t_done, &w, NULL));
}

cc_result t_wait_run(struct event_base *base, t_wait *w, int rc)
{
    if (rc < 0) {
        w->res.code = rc;
        return w->res;
    }
    while (!w->done)
        event_base_loop(base, EVLOOP_ONCE);
    return w->res;
}

int t_raw_connect(int port)
{
    int fd = h_tcp_connect(port, 2000);
    T_CHECK(fd >= 0);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

void t_raw_send(int fd, uint8_t op, uint32_t id, const void *body, size_t len)
{
    uint8_t h[RCP_HEADER_SIZE];
    rcp_header hd = {op, 0, id, (uint32_t)len};
    rcp_header_encode(&hd, h);
    T_CHECK(send(fd, h, sizeof(h), MSG_NOSIGNAL) == (ssize_t)sizeof(h));
    if (len)
        T_CHECK(send(fd, body, len, MSG_NOSIGNAL) == (ssize_t)len);
}

int t_raw_recv_frame(int fd, rcp_header *h, uint8_t *body, size_t cap)
{
    uint8_t hb[RCP_HEADER_SIZE];
    size_t got = 0;
    while (got < sizeof(hb)) {
        ssize_t k = recv(fd, hb + got, sizeof(hb) - got, 0);
        if (k <= 0)
            return -1;
        got += (size_t)k;
    }
    if (rcp_header_decode(hb, RCP_MAX_FRAME_BODY, h) < 0 || h->len > cap)
        return -2;
    got = 0;
    while (got < h->len) {
        ssize_t k = recv(fd, body + got, h->len - got, 0);
        if (k <= 0)
            return -1;
        got += (size_t)k;
    }
    return 0;
}

void t_raw_hello(int fd, const char *token)
{
    uint8_t b[512];
    rcp_hello_req hq = {1, 1, rcp_s(token ? token : ""), 0, rcp_s("raw")};
    int k = rcp_encode_hello_req(&hq, b, sizeof(b));
    t_raw_send(fd, RCP_OP_HELLO, 0, b, (size_t)k);
    rcp_header h;
    T_CHECK(t_raw_recv_frame(fd, &h, b, sizeof(b)) == 0);
    T_CHECK(h.op == RCP_OP_HELLO);
}
