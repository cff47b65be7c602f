/* SPDX-License-Identifier: Apache-2.0
 *
 * netproxy.c: a userspace TCP delay proxy for benchmarks (this kernel has no
 * netem). It stands between a compute node and the cache nodes: one listener
 * per target, every byte delayed by a one-way latency in each direction, and
 * the bytes flowing back to the client capped by ONE token bucket shared by all
 * targets, so a compute node sees a LAN link of a given latency and bandwidth
 * whatever node it talks to. It never parses what it carries.
 *
 *   netproxy --target 127.0.0.1:7070 [--target ...] --port-file F
 *            [--latency-us 150] [--bandwidth-mib 0 (no cap)]
 *
 * The port file gets one listening port per line, in --target order, written
 * once all are bound. Binds 127.0.0.1 only. SIGTERM exits 0.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NP_MAX_TARGETS 64
#define NP_HIGH        (4u << 20) /* stop reading a side whose peer has this much queued */

typedef struct np_chunk np_chunk;
struct np_chunk {
    np_chunk *next;
    struct evbuffer *data;
    int64_t due_us;
};

typedef struct np_conn np_conn;
typedef struct {
    np_conn *c;
    struct bufferevent *from, *to;
    np_chunk *head, *tail;
    size_t queued;
    struct event *timer;
    int downstream; /* target -> client: bandwidth capped */
    int eof;        /* `from` closed: close the pair once its delayed bytes are out */
} np_dir;

struct np_conn {
    struct bufferevent *client, *server;
    np_dir up, down;
    int closing;
};

static struct event_base *g_base;
static int64_t g_latency_us = 150;
static int64_t g_slack_us = 50; /* chunks due this soon go out together: fewer wake-ups */
static double g_rate;           /* bytes per microsecond, 0: no cap */
static double g_tokens;
static int64_t g_last_refill;
static struct sockaddr_storage g_targets[NP_MAX_TARGETS];
static int g_target_len[NP_MAX_TARGETS];

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void refill(void)
{
    int64_t t = now_us();
    g_tokens += (double)(t - g_last_refill) * g_rate;
    double burst = g_rate * 2000; /* at most 2 ms worth */
    if (burst < 65536)
        burst = 65536;
    if (g_tokens > burst)
        g_tokens = burst;
    g_last_refill = t;
}

static void conn_free(np_conn *c)
{
    np_dir *ds[2] = {&c->up, &c->down};
    for (int i = 0; i < 2; i++) {
        while (ds[i]->head) {
            np_chunk *k = ds[i]->head;
            ds[i]->head = k->next;
            evbuffer_free(k->data);
            free(k);
        }
        if (ds[i]->timer)
            event_free(ds[i]->timer);
    }
    if (c->client)
        bufferevent_free(c->client);
    if (c->server)
        bufferevent_free(c->server);
    free(c);
}

static void dir_arm(np_dir *d, int64_t wait_us)
{
    if (wait_us < 0)
        wait_us = 0;
    struct timeval tv = {wait_us / 1000000, wait_us % 1000000};
    evtimer_add(d->timer, &tv);
}

/* Send what is due (and within the bandwidth), re-arm for the rest. */
static void dir_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    np_dir *d = arg;
    int64_t t = now_us();
    struct evbuffer *out = bufferevent_get_output(d->to);
    /* send what is due within the slack too (half the latency): fewer timer
     * wake-ups, at the cost of some jitter below the nominal latency */
    while (d->head && d->head->due_us <= t + g_slack_us) {
        np_chunk *k = d->head;
        size_t len = evbuffer_get_length(k->data);
        size_t n = len;
        if (d->downstream && g_rate > 0) {
            refill();
            if (g_tokens < 1) {
                dir_arm(d, (int64_t)((1 - g_tokens) / g_rate) + 1);
                return;
            }
            if ((double)n > g_tokens)
                n = (size_t)g_tokens;
            g_tokens -= (double)n;
        }
        evbuffer_remove_buffer(k->data, out, n);
        d->queued -= n;
        if (n < len) {
            dir_arm(d, (int64_t)(1.0 / g_rate) + 50);
            return;
        }
        d->head = k->next;
        if (!d->head)
            d->tail = NULL;
        evbuffer_free(k->data);
        free(k);
    }
    if (d->head)
        dir_arm(d, d->head->due_us - t);
    else if (d->eof)
        return; /* on_write closes the pair once these bytes are written */
    if (d->queued < NP_HIGH && !d->eof)
        bufferevent_enable(d->from, EV_READ);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    np_conn *c = arg;
    np_dir *d = bev == c->client ? &c->up : &c->down;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t len = evbuffer_get_length(in);
    if (!len)
        return;
    np_chunk *k = calloc(1, sizeof(*k));
    k->data = evbuffer_new();
    evbuffer_remove_buffer(in, k->data, len);
    k->due_us = now_us() + g_latency_us;
    if (d->tail)
        d->tail->next = k;
    else
        d->head = k;
    d->tail = k;
    d->queued += len;
    if (d->queued >= NP_HIGH)
        bufferevent_disable(bev, EV_READ); /* back-pressure to the sender */
    if (!evtimer_pending(d->timer, NULL))
        dir_arm(d, g_latency_us);
}

/* A side sent EOF and everything it sent has been delivered: close the pair
 * (the last bytes of an exchange, like iperf3's results, must not be lost). */
static int maybe_close(np_conn *c)
{
    np_dir *ds[2] = {&c->up, &c->down};
    for (int i = 0; i < 2; i++)
        if (ds[i]->eof && !ds[i]->head &&
            evbuffer_get_length(bufferevent_get_output(ds[i]->to)) == 0) {
            conn_free(c);
            return 1;
        }
    return 0;
}

static void on_write(struct bufferevent *bev, void *arg)
{
    (void)bev;
    maybe_close(arg);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    np_conn *c = arg;
    if (what & BEV_EVENT_CONNECTED)
        return;
    if (what & BEV_EVENT_ERROR) {
        conn_free(c); /* a reset: nothing more can be delivered */
        return;
    }
    if (what & BEV_EVENT_EOF) {
        np_dir *d = bev == c->client ? &c->up : &c->down;
        d->eof = 1;
        bufferevent_disable(bev, EV_READ);
        maybe_close(c);
    }
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int sl,
                      void *arg)
{
    (void)l;
    (void)sa;
    (void)sl;
    int idx = (int)(intptr_t)arg;
    np_conn *c = calloc(1, sizeof(*c));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->client = bufferevent_socket_new(g_base, fd, BEV_OPT_CLOSE_ON_FREE);
    c->server = bufferevent_socket_new(g_base, -1, BEV_OPT_CLOSE_ON_FREE);
    c->up = (np_dir){c, c->client, c->server, NULL, NULL, 0, NULL, 0, 0};
    c->down = (np_dir){c, c->server, c->client, NULL, NULL, 0, NULL, 1, 0};
    c->up.timer = evtimer_new(g_base, dir_flush, &c->up);
    c->down.timer = evtimer_new(g_base, dir_flush, &c->down);
    bufferevent_set_max_single_read(c->client, 256 * 1024);
    bufferevent_set_max_single_read(c->server, 256 * 1024);
    bufferevent_set_max_single_write(c->client, 256 * 1024);
    bufferevent_set_max_single_write(c->server, 256 * 1024);
    bufferevent_setcb(c->client, on_read, on_write, on_event, c);
    bufferevent_setcb(c->server, on_read, on_write, on_event, c);
    bufferevent_enable(c->client, EV_READ | EV_WRITE);
    bufferevent_enable(c->server, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(c->server, (struct sockaddr *)&g_targets[idx],
                                   g_target_len[idx]) < 0) {
        conn_free(c);
        return;
    }
    evutil_socket_t sfd = bufferevent_getfd(c->server);
    setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    (void)arg;
    event_base_loopbreak(g_base);
}

static void usage(void)
{
    fprintf(stderr, "usage: netproxy --target HOST:PORT [--target ...] --port-file F "
                    "[--latency-us N (150)] [--bandwidth-mib M (0: no cap)]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *port_file = NULL;
    int n = 0;
    double mib = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--target") && i + 1 < argc) {
            if (n == NP_MAX_TARGETS)
                usage();
            int len = sizeof(g_targets[n]);
            if (evutil_parse_sockaddr_port(argv[++i], (struct sockaddr *)&g_targets[n], &len)) {
                fprintf(stderr, "netproxy: --target %s is not HOST:PORT with a numeric host\n",
                        argv[i]);
                return 2;
            }
            g_target_len[n++] = len;
        } else if (!strcmp(argv[i], "--port-file") && i + 1 < argc) {
            port_file = argv[++i];
        } else if (!strcmp(argv[i], "--latency-us") && i + 1 < argc) {
            g_latency_us = atoll(argv[++i]);
        } else if (!strcmp(argv[i], "--bandwidth-mib") && i + 1 < argc) {
            mib = atof(argv[++i]);
        } else {
            usage();
        }
    }
    if (!n || !port_file || g_latency_us < 0 || mib < 0)
        usage();
    g_rate = mib * 1048576.0 / 1e6;
    g_slack_us = g_latency_us / 2 > 50 ? g_latency_us / 2 : 50;
    g_last_refill = now_us();
    signal(SIGPIPE, SIG_IGN);
    /* sub-millisecond latencies and refills need a precise timer (timerfd) */
    struct event_config *ec = event_config_new();
    event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER);
    g_base = event_base_new_with_config(ec);
    event_config_free(ec);
    struct evconnlistener *ls[NP_MAX_TARGETS];
    char ports[NP_MAX_TARGETS * 8] = "";
    for (int i = 0; i < n; i++) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        ls[i] = evconnlistener_new_bind(g_base, on_accept, (void *)(intptr_t)i,
                                        LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 512,
                                        (struct sockaddr *)&sa, sizeof(sa));
        if (!ls[i]) {
            perror("netproxy: listen");
            return 1;
        }
        struct sockaddr_in got;
        socklen_t gl = sizeof(got);
        getsockname(evconnlistener_get_fd(ls[i]), (struct sockaddr *)&got, &gl);
        char p[8];
        snprintf(p, sizeof(p), "%d\n", ntohs(got.sin_port));
        strcat(ports, p);
    }
    char tmp[1024];
    snprintf(tmp, sizeof(tmp), "%s.tmp", port_file);
    FILE *f = fopen(tmp, "w");
    if (!f || fputs(ports, f) < 0 || fclose(f) != 0 || rename(tmp, port_file) != 0) {
        fprintf(stderr, "netproxy: cannot write %s\n", port_file);
        return 1;
    }
    struct event *sigs[2] = {evsignal_new(g_base, SIGTERM, on_signal, NULL),
                             evsignal_new(g_base, SIGINT, on_signal, NULL)};
    event_add(sigs[0], NULL);
    event_add(sigs[1], NULL);
    event_base_dispatch(g_base);
    for (int i = 0; i < n; i++)
        evconnlistener_free(ls[i]);
    event_free(sigs[0]);
    event_free(sigs[1]);
    event_base_free(g_base);
    return 0;
}
