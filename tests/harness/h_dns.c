/* SPDX-License-Identifier: Apache-2.0
 *
 * h_dns.c: a tiny authoritative DNS server on 127.0.0.1 (UDP, a free port) for
 * tests of dns: membership: SRV records of a headless-Service-like name and A
 * records of their targets, changed while it runs. It answers from its own
 * thread with libevent's evdns server API, so a client under test may block
 * its caller (rc_create) or run its own loop; the zone is behind a mutex.
 *
 * Answers: a question for a name that has SRV records or an entry made by
 * h_dns_set_a() gets NOERROR with the records of the asked type (none: NODATA);
 * any other name gets NXDOMAIN. TTLs are 5 s; clients re-resolve on their own
 * interval anyway.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/dns.h>
#include <event2/dns_struct.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define H_DNS_MAX      64
#define H_DNS_NAME     256
#define H_DNS_TYPE_SRV 33 /* RFC 2782; evdns has no name for it */

struct h_dns_srv {
    char name[H_DNS_NAME];
    char target[H_DNS_NAME];
    uint16_t port;
};

struct h_dns_host {
    char name[H_DNS_NAME];
    char ip[INET_ADDRSTRLEN]; /* "" = the name exists without an A record */
};

struct h_dns {
    pthread_t thread;
    pthread_mutex_t lock;
    struct event_base *base;
    struct evdns_server_port *port;
    struct event *stop_ev;
    int fd, stop_fd;
    int port_no;
    char server[32];
    struct h_dns_srv srv[H_DNS_MAX];
    int nsrv;
    struct h_dns_host hosts[H_DNS_MAX];
    int nhosts;
    atomic_llong queries;
};

static int h_dns_encode_name(uint8_t *out, size_t cap, const char *name)
{
    size_t o = 0;
    const char *p = name;
    while (*p) {
        const char *dot = strchr(p, '.');
        size_t l = dot ? (size_t)(dot - p) : strlen(p);
        if (l == 0 || l > 63 || o + l + 2 > cap)
            return -EINVAL;
        out[o++] = (uint8_t)l;
        memcpy(out + o, p, l);
        o += l;
        p += l + (dot ? 1 : 0);
    }
    out[o++] = 0;
    return (int)o;
}

static void h_dns_answer(struct evdns_server_request *req, void *arg)
{
    struct h_dns *d = arg;
    atomic_fetch_add(&d->queries, 1);
    bool found = false;
    pthread_mutex_lock(&d->lock);
    for (int i = 0; i < req->nquestions; i++) {
        const struct evdns_server_question *q = req->questions[i];
        for (int k = 0; k < d->nsrv; k++) {
            if (strcasecmp(q->name, d->srv[k].name) != 0)
                continue;
            found = true;
            if (q->type != H_DNS_TYPE_SRV)
                continue;
            uint8_t rdata[6 + H_DNS_NAME + 2] = {0, 10, 0, 50}; /* priority 10, weight 50 */
            rdata[4] = (uint8_t)(d->srv[k].port >> 8);
            rdata[5] = (uint8_t)d->srv[k].port;
            int l = h_dns_encode_name(rdata + 6, sizeof(rdata) - 6, d->srv[k].target);
            if (l > 0)
                evdns_server_request_add_reply(req, EVDNS_ANSWER_SECTION, q->name, H_DNS_TYPE_SRV,
                                               EVDNS_CLASS_INET, 5, 6 + l, 0, (const char *)rdata);
        }
        for (int k = 0; k < d->nhosts; k++) {
            if (strcasecmp(q->name, d->hosts[k].name) != 0)
                continue;
            found = true;
            struct in_addr a;
            if (q->type == EVDNS_TYPE_A && d->hosts[k].ip[0] &&
                inet_pton(AF_INET, d->hosts[k].ip, &a) == 1)
                evdns_server_request_add_a_reply(req, q->name, 1, &a, 5);
        }
    }
    pthread_mutex_unlock(&d->lock);
    evdns_server_request_respond(req, found ? 0 : DNS_ERR_NOTEXIST);
}

static void h_dns_on_stop(evutil_socket_t fd, short what, void *arg)
{
    struct h_dns *d = arg;
    event_base_loopbreak(d->base);
}

static void *h_dns_main(void *arg)
{
    struct h_dns *d = arg;
    event_base_dispatch(d->base);
    return NULL;
}

static void h_dns_free(struct h_dns *d)
{
    if (d->port)
        evdns_close_server_port(d->port);
    if (d->stop_ev)
        event_free(d->stop_ev);
    if (d->base)
        event_base_free(d->base);
    if (d->fd >= 0)
        close(d->fd);
    if (d->stop_fd >= 0)
        close(d->stop_fd);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

int h_dns_start(h_dns **out)
{
    *out = NULL;
    struct h_dns *d = calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    pthread_mutex_init(&d->lock, NULL);
    d->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    d->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    if (d->fd < 0 || d->stop_fd < 0 || bind(d->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        getsockname(d->fd, (struct sockaddr *)&sa, &sl) < 0) {
        int e = errno;
        fprintf(stderr, "cannot bind a UDP socket on 127.0.0.1 for the test DNS server: %s\n",
                strerror(e));
        h_dns_free(d);
        return -e;
    }
    d->port_no = ntohs(sa.sin_port);
    snprintf(d->server, sizeof(d->server), "127.0.0.1:%d", d->port_no);
    d->base = event_base_new();
    d->port = d->base ? evdns_add_server_port_with_base(d->base, d->fd, 0, h_dns_answer, d) : NULL;
    d->stop_ev = d->base ? event_new(d->base, d->stop_fd, EV_READ, h_dns_on_stop, d) : NULL;
    if (!d->port || !d->stop_ev || event_add(d->stop_ev, NULL) < 0) {
        fprintf(stderr, "cannot set up the test DNS server's event loop\n");
        h_dns_free(d);
        return -ENOMEM;
    }
    if (pthread_create(&d->thread, NULL, h_dns_main, d) != 0) {
        fprintf(stderr, "cannot start the test DNS server's thread\n");
        h_dns_free(d);
        return -EAGAIN;
    }
    *out = d;
    return 0;
}

void h_dns_stop(h_dns **dp)
{
    if (!dp || !*dp)
        return;
    struct h_dns *d = *dp;
    *dp = NULL;
    uint64_t one = 1;
    if (write(d->stop_fd, &one, sizeof(one)) != sizeof(one))
        perror("h_dns_stop: eventfd");
    pthread_join(d->thread, NULL);
    h_dns_free(d);
}

const char *h_dns_server(const h_dns *d)
{
    return d->server;
}
int h_dns_port(const h_dns *d)
{
    return d->port_no;
}
int64_t h_dns_queries(const h_dns *d)
{
    return atomic_load(&((h_dns *)d)->queries);
}

int h_dns_add_srv(h_dns *d, const char *name, const char *target, uint16_t port)
{
    if (strlen(name) >= H_DNS_NAME || strlen(target) >= H_DNS_NAME)
        return -ENAMETOOLONG;
    int rc = 0;
    pthread_mutex_lock(&d->lock);
    int k = 0;
    while (k < d->nsrv &&
           (strcasecmp(d->srv[k].name, name) || strcasecmp(d->srv[k].target, target)))
        k++;
    if (k == d->nsrv && d->nsrv == H_DNS_MAX) {
        rc = -ENOSPC;
    } else {
        if (k == d->nsrv)
            d->nsrv++;
        snprintf(d->srv[k].name, sizeof(d->srv[k].name), "%s", name);
        snprintf(d->srv[k].target, sizeof(d->srv[k].target), "%s", target);
        d->srv[k].port = port;
    }
    pthread_mutex_unlock(&d->lock);
    return rc;
}

int h_dns_remove_srv(h_dns *d, const char *name, const char *target)
{
    int rc = -ENOENT;
    pthread_mutex_lock(&d->lock);
    for (int k = 0; k < d->nsrv; k++)
        if (!strcasecmp(d->srv[k].name, name) && !strcasecmp(d->srv[k].target, target)) {
            d->srv[k] = d->srv[--d->nsrv];
            rc = 0;
            break;
        }
    pthread_mutex_unlock(&d->lock);
    return rc;
}

int h_dns_set_a(h_dns *d, const char *host, const char *ipv4)
{
    struct in_addr a;
    if (strlen(host) >= H_DNS_NAME || (ipv4[0] && inet_pton(AF_INET, ipv4, &a) != 1))
        return -EINVAL;
    int rc = 0;
    pthread_mutex_lock(&d->lock);
    int k = 0;
    while (k < d->nhosts && strcasecmp(d->hosts[k].name, host))
        k++;
    if (k == d->nhosts && d->nhosts == H_DNS_MAX) {
        rc = -ENOSPC;
    } else {
        if (k == d->nhosts)
            d->nhosts++;
        snprintf(d->hosts[k].name, sizeof(d->hosts[k].name), "%s", host);
        snprintf(d->hosts[k].ip, sizeof(d->hosts[k].ip), "%s", ipv4);
    }
    pthread_mutex_unlock(&d->lock);
    return rc;
}
