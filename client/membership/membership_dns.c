/* SPDX-License-Identifier: Apache-2.0
 *
 * The DNS membership source: a headless Service's name, re-resolved every
 * interval on the caller's event loop.
 *
 * One round:
 *   SRV query for NAME (sent by hand over UDP to the evdns base's nameservers,
 *   each tried in turn on time-out or refusal)
 *     -> records: one A lookup per distinct target through evdns (AAAA when the
 *        target has no A); member id = the target's first label (the pod name),
 *        address = ip:srv-port, host = the target (the name TLS verifies)
 *     -> NXDOMAIN or no SRV records: A (then AAAA) lookup of NAME through evdns;
 *        every address is a member "ip:port" whose host is NAME
 *     -> any other failure: the round fails
 *   then the member list is installed (membership__install) or, on failure,
 *   the last good ring stays and the failure is logged with its reason.
 * The next round starts `interval` after this one ends, so rounds never
 * overlap; a reload during a round starts another as soon as it ends.
 *
 * evdns delivers its callbacks (even a cancellation's) later, from the loop, so
 * each target lookup carries a small ticket that outlives the round: stopping
 * cancels the lookups and detaches their tickets, and the callbacks free them.
 */
#include "membership_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>

#define SRV_MAX 4096

struct membership__dns;

struct target {
    char name[MEMBERSHIP__DNS_NAME_MAX + 1];
    uint16_t port;
    bool v6_tried;
    char addr[INET6_ADDRSTRLEN + 8];
};

struct ticket {
    struct membership__dns *d; /* NULL once the round is abandoned */
    size_t target;
    struct evdns_request *req;
};

struct membership__dns {
    struct membership *ms;
    struct event_base *base;
    struct evdns_base *evdns;
    bool own_evdns;
    struct event *timer;
    bool running, again;
    /* SRV query */
    evutil_socket_t fd;
    struct event *srv_ev;
    uint16_t txid;
    int ns_idx;
    /* target lookups */
    struct target *targets;
    struct ticket **tickets;
    size_t ntargets, pending;
    bool a_only;        /* NAME has no SRV: targets[0] is NAME itself */
    char *a_only_addrs; /* A-only: every address found, "ip:port\0"... */
    size_t a_only_count;
    char failure[512]; /* first failure of this round, "" if none */
};

static void round_start(struct membership__dns *d);
static void round_end(struct membership__dns *d);

static void fail(struct membership__dns *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void fail(struct membership__dns *d, const char *fmt, ...)
{
    if (d->failure[0] != '\0')
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->failure, sizeof d->failure, fmt, ap);
    va_end(ap);
}

static void srv_close(struct membership__dns *d)
{
    if (d->srv_ev != NULL) {
        event_free(d->srv_ev);
        d->srv_ev = NULL;
    }
    if (d->fd >= 0) {
        evutil_closesocket(d->fd);
        d->fd = -1;
    }
}

static void lookups_abandon(struct membership__dns *d)
{
    for (size_t i = 0; i < d->ntargets; i++) {
        struct ticket *t = d->tickets ? d->tickets[i] : NULL;
        if (t != NULL && t->req != NULL) {
            t->d = NULL;
            evdns_cancel_request(d->evdns, t->req);
        } else {
            free(t);
        }
    }
    free(d->tickets);
    free(d->targets);
    free(d->a_only_addrs);
    d->tickets = NULL;
    d->targets = NULL;
    d->a_only_addrs = NULL;
    d->ntargets = d->pending = d->a_only_count = 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void lookup_done(int result, char type, int count, int ttl, void *addresses, void *arg);

static void lookup_start(struct membership__dns *d, size_t i)
{
    struct target *tg = &d->targets[i];
    struct ticket *t = d->tickets[i];
    t->req = tg->v6_tried
                 ? evdns_base_resolve_ipv6(d->evdns, tg->name, DNS_QUERY_NO_SEARCH, lookup_done, t)
                 : evdns_base_resolve_ipv4(d->evdns, tg->name, DNS_QUERY_NO_SEARCH, lookup_done, t);
    if (t->req == NULL) {
        fail(d, "cannot start a lookup of %s", tg->name);
        d->pending--;
    }
}

static void lookup_done(int result, char type, int count, int ttl, void *addresses, void *arg)
{
    struct ticket *t = arg;
    struct membership__dns *d = t->d;
    t->req = NULL;
    if (d == NULL) { /* round abandoned (stop) */
        free(t);
        return;
    }
    struct target *tg = &d->targets[t->target];
    bool none = result == DNS_ERR_NODATA || (result == DNS_ERR_NONE && count <= 0);
    if (none && !tg->v6_tried) {
        tg->v6_tried = true;
        lookup_start(d, t->target);
        if (d->pending == 0)
            round_end(d);
        return;
    }
    if (result != DNS_ERR_NONE || count <= 0) {
        fail(d, "cannot resolve %s: %s", tg->name,
             none ? "no A or AAAA records" : evdns_err_to_string(result));
    } else {
        /* all addresses, sorted, so the outcome does not depend on answer order */
        char(*txt)[INET6_ADDRSTRLEN + 8] = calloc((size_t)count, sizeof *txt);
        const char **ptr = calloc((size_t)count, sizeof *ptr);
        if (txt == NULL || ptr == NULL) {
            fail(d, "out of memory");
        } else {
            for (int k = 0; k < count; k++) {
                char ip[INET6_ADDRSTRLEN];
                if (type == DNS_IPv4_A)
                    inet_ntop(AF_INET, (const uint8_t *)addresses + 4 * k, ip, sizeof ip);
                else
                    inet_ntop(AF_INET6, (const uint8_t *)addresses + 16 * k, ip, sizeof ip);
                snprintf(txt[k], sizeof txt[k], type == DNS_IPv4_A ? "%s:%u" : "[%s]:%u", ip,
                         tg->port);
                ptr[k] = txt[k];
            }
            qsort(ptr, (size_t)count, sizeof *ptr, cmp_str);
            snprintf(tg->addr, sizeof tg->addr, "%s", ptr[0]);
            if (d->a_only) {
                size_t each = sizeof txt[0];
                d->a_only_addrs = calloc((size_t)count, each);
                if (d->a_only_addrs == NULL) {
                    fail(d, "out of memory");
                } else {
                    size_t u = 0;
                    for (int k = 0; k < count; k++)
                        if (u == 0 || strcmp(ptr[k], d->a_only_addrs + (u - 1) * each))
                            memcpy(d->a_only_addrs + u++ * each, ptr[k], each);
                    d->a_only_count = u;
                }
            }
        }
        free(txt);
        free(ptr);
    }
    d->tickets[t->target] = NULL;
    free(t);
    if (--d->pending == 0)
        round_end(d);
}

/* Sets up one target per distinct SRV target (preferring the configured port
 * when a target lists several) or, with no SRV records, NAME itself. */
static void lookups_begin(struct membership__dns *d, const struct membership__srv *srv, size_t n)
{
    d->a_only = n == 0;
    size_t cap = n ? n : 1;
    d->targets = calloc(cap, sizeof *d->targets);
    d->tickets = calloc(cap, sizeof *d->tickets);
    if (d->targets == NULL || d->tickets == NULL) {
        fail(d, "out of memory");
        round_end(d);
        return;
    }
    if (n == 0) {
        snprintf(d->targets[0].name, sizeof d->targets[0].name, "%s", d->ms->name);
        d->targets[0].port = d->ms->port;
        d->ntargets = 1;
    }
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < d->ntargets && strcasecmp(d->targets[k].name, srv[i].target) != 0)
            k++;
        if (k == d->ntargets) {
            if (srv[i].target[0] == '\0') {
                fail(d, "an SRV record of %s has an empty target", d->ms->name);
                round_end(d);
                return;
            }
            memcpy(d->targets[k].name, srv[i].target, sizeof d->targets[k].name);
            d->targets[k].port = srv[i].port;
            d->ntargets++;
        } else if (d->targets[k].port != d->ms->port &&
                   (srv[i].port == d->ms->port || srv[i].port < d->targets[k].port)) {
            d->targets[k].port = srv[i].port;
        }
    }
    for (size_t i = 0; i < d->ntargets; i++) {
        d->tickets[i] = calloc(1, sizeof *d->tickets[i]);
        if (d->tickets[i] == NULL) {
            fail(d, "out of memory");
            round_end(d);
            return;
        }
        d->tickets[i]->d = d;
        d->tickets[i]->target = i;
    }
    d->pending = d->ntargets;
    for (size_t i = 0; i < d->ntargets; i++)
        lookup_start(d, i);
    if (d->pending == 0)
        round_end(d);
}

static void srv_send(struct membership__dns *d);

static void srv_next_server(struct membership__dns *d, const char *why)
{
    srv_close(d);
    d->ns_idx++;
    if (d->ns_idx < evdns_base_count_nameservers(d->evdns)) {
        srv_send(d);
        return;
    }
    fail(d, "SRV query for %s failed: %s", d->ms->name, why);
    round_end(d);
}

static void srv_readable(evutil_socket_t fd, short what, void *arg)
{
    struct membership__dns *d = arg;
    if (what & EV_TIMEOUT) {
        srv_next_server(d, "no answer (time-out)");
        return;
    }
    uint8_t buf[MEMBERSHIP__DNS_UDP_MAX];
    ssize_t got = recv(fd, buf, sizeof buf, 0);
    if (got < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return;
        char e[128];
        snprintf(e, sizeof e, "%s", strerror(errno));
        srv_next_server(d, e);
        return;
    }
    struct membership__srv *srv = calloc(SRV_MAX, sizeof *srv);
    if (srv == NULL) {
        srv_next_server(d, "out of memory");
        return;
    }
    size_t n = 0;
    int rc = membership__dns_parse_srv(buf, (size_t)got, d->txid, srv, SRV_MAX, &n);
    if (rc == -EBADMSG) {
        free(srv);
        return; /* not our answer (or garbage): keep waiting until the time-out */
    }
    srv_close(d);
    if (rc == -EMSGSIZE) {
        fail(d,
             "the SRV answer for %s was truncated (over %u bytes; TCP is not "
             "supported: use fewer or shorter names)",
             d->ms->name, MEMBERSHIP__DNS_UDP_MAX);
        round_end(d);
    } else if (rc == 0 || rc == 3) { /* NOERROR, NXDOMAIN */
        lookups_begin(d, srv, rc == 0 ? n : 0);
    } else {
        char e[64];
        snprintf(e, sizeof e, "server answered rcode %d", rc);
        free(srv);
        srv_next_server(d, e);
        return;
    }
    free(srv);
}

static void srv_send(struct membership__dns *d)
{
    struct sockaddr_storage ss;
    int sl = evdns_base_get_nameserver_addr(d->evdns, d->ns_idx, (struct sockaddr *)&ss, sizeof ss);
    if (sl <= 0) {
        fail(d,
             "no nameserver to ask for %s (configure /etc/resolv.conf or the "
             "resolver)",
             d->ms->name);
        round_end(d);
        return;
    }
    uint8_t q[512];
    int ql = membership__dns_query(q, sizeof q, d->txid, d->ms->name, MEMBERSHIP__DNS_TYPE_SRV);
    d->fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (ql < 0 || d->fd < 0 || connect(d->fd, (struct sockaddr *)&ss, (socklen_t)sl) < 0 ||
        send(d->fd, q, (size_t)ql, 0) != ql) {
        char e[128];
        snprintf(e, sizeof e, "%s", ql < 0 ? "bad name" : strerror(errno));
        srv_next_server(d, e);
        return;
    }
    d->srv_ev = event_new(d->base, d->fd, EV_READ | EV_PERSIST, srv_readable, d);
    struct timeval tv = {d->ms->o.dns_timeout_ms / 1000, (d->ms->o.dns_timeout_ms % 1000) * 1000};
    if (d->srv_ev == NULL || event_add(d->srv_ev, &tv) < 0)
        srv_next_server(d, "cannot watch the socket");
}

static void round_start(struct membership__dns *d)
{
    if (d->running) {
        d->again = true;
        return;
    }
    d->running = true;
    d->again = false;
    d->failure[0] = '\0';
    d->ns_idx = 0;
    evutil_secure_rng_get_bytes(&d->txid, sizeof d->txid);
    srv_send(d);
}

static void timer_fired(evutil_socket_t fd, short what, void *arg)
{
    round_start(arg);
}

static void round_end(struct membership__dns *d)
{
    struct membership *ms = d->ms;
    char q[600], why[512] = "";
    if (d->failure[0] == '\0') {
        size_t n = d->a_only ? d->a_only_count : d->ntargets;
        struct ring_member *m = calloc(n ? n : 1, sizeof *m);
        char(*ids)[MEMBERSHIP__DNS_NAME_MAX + 1] = calloc(n ? n : 1, sizeof *ids);
        if (m == NULL || ids == NULL) {
            fail(d, "out of memory");
        } else if (n == 0) {
            fail(d, "%s has no members", ms->name);
        } else {
            for (size_t i = 0; i < n; i++) {
                const char *addr = d->a_only ? d->a_only_addrs + i * sizeof d->targets[0].addr
                                             : d->targets[i].addr;
                if (d->a_only) {
                    snprintf(ids[i], sizeof ids[i], "%s", addr);
                } else {
                    const char *dot = strchr(d->targets[i].name, '.');
                    size_t l =
                        dot ? (size_t)(dot - d->targets[i].name) : strlen(d->targets[i].name);
                    snprintf(ids[i], sizeof ids[i], "%.*s", (int)l, d->targets[i].name);
                }
                /* the name the address came from: what TLS verifies */
                m[i] = (struct ring_member){ids[i], addr, 0,
                                            d->a_only ? ms->name : d->targets[i].name};
            }
            int rc = membership__install(ms, m, n, why, sizeof why);
            if (rc < 0)
                fail(d, "%s", why);
        }
        free(m);
        free(ids);
    }
    if (d->failure[0] != '\0') {
        atomic_fetch_add(&ms->rounds_failed, 1);
        bool first = atomic_load(&ms->changes) == 0;
        membership__log(ms, first ? MEMBERSHIP_ERROR : MEMBERSHIP_WARN,
                        "msg=\"%s\" source=\"%s\" error=\"%s\"",
                        first ? "cannot resolve the members (check the Service name and "
                                "the DNS server; retrying)"
                              : "member resolution failed, keeping the last ring",
                        ms->spec, membership__q(q, sizeof q, d->failure));
    }
    lookups_abandon(d);
    d->running = false;
    if (d->again) {
        round_start(d);
        return;
    }
    struct timeval tv = {ms->o.interval_ms / 1000, (ms->o.interval_ms % 1000) * 1000};
    evtimer_add(d->timer, &tv);
}

int membership__dns_start(struct membership *ms, char *why, size_t why_len)
{
    const char *s = ms->spec + 4;
    const char *colon = strrchr(s, ':');
    size_t nlen = colon ? (size_t)(colon - s) : strlen(s);
    unsigned long port = ms->o.default_port;
    if (colon != NULL) {
        char *end;
        errno = 0;
        port = strtoul(colon + 1, &end, 10);
        if (colon[1] == '\0' || *end != '\0' || port == 0 || port > 65535) {
            snprintf(why, why_len,
                     "bad port in %s (write dns:NAME or dns:NAME:PORT, "
                     "PORT 1..65535)",
                     ms->spec);
            return -EINVAL;
        }
    }
    uint8_t probe[512];
    ms->name = strndup(s, nlen);
    if (ms->name == NULL)
        return -ENOMEM;
    ms->port = (uint16_t)port;
    if (nlen == 0 || membership__dns_query(probe, sizeof probe, 0, ms->name, 1) < 0) {
        snprintf(why, why_len,
                 "%s is not a valid DNS name (write dns:NAME[:PORT], e.g. "
                 "dns:ringcache-headless.default.svc.cluster.local:7070)",
                 ms->spec);
        return -EINVAL;
    }
    if (ms->o.base == NULL) {
        snprintf(why, why_len, "membership %s needs an event loop (set options.base)", ms->spec);
        return -EINVAL;
    }
    struct membership__dns *d = calloc(1, sizeof *d);
    if (d == NULL)
        return -ENOMEM;
    ms->dns = d;
    d->ms = ms;
    d->fd = -1;
    d->base = ms->o.base;
    d->evdns = ms->o.dns;
    const char *ns = ms->o.nameserver;
    ms->o.nameserver = NULL; /* borrowed for create only */
    if (d->evdns == NULL && ns != NULL && ns[0] != '\0') {
        /* one given server instead of /etc/resolv.conf (its options too) */
        struct sockaddr_storage ss;
        int sl = sizeof ss;
        bool ok = evutil_parse_sockaddr_port(ns, (struct sockaddr *)&ss, &sl) == 0;
        d->evdns = evdns_base_new(d->base, EVDNS_BASE_DISABLE_WHEN_INACTIVE);
        if (d->evdns == NULL)
            return -ENOMEM;
        d->own_evdns = true;
        if (!ok || evdns_base_nameserver_ip_add(d->evdns, ns) != 0) {
            snprintf(why, why_len,
                     "DNS server '%s' for %s is not an address (write IP "
                     "or IP:PORT, e.g. 10.96.0.10:53 or [fd00::a]:53)",
                     ns, ms->spec);
            return -EINVAL;
        }
    } else if (d->evdns == NULL) {
        d->evdns = evdns_base_new(d->base, EVDNS_BASE_INITIALIZE_NAMESERVERS |
                                               EVDNS_BASE_DISABLE_WHEN_INACTIVE);
        if (d->evdns == NULL) {
            snprintf(why, why_len,
                     "cannot set up a resolver from /etc/resolv.conf "
                     "for %s",
                     ms->spec);
            return -EIO;
        }
        d->own_evdns = true;
    }
    d->timer = evtimer_new(d->base, timer_fired, d);
    if (d->timer == NULL)
        return -ENOMEM;
    /* First round from the loop, so no callback fires inside create. */
    struct timeval now = {0, 0};
    evtimer_add(d->timer, &now);
    return 0;
}

void membership__dns_reload(struct membership *ms)
{
    struct membership__dns *d = ms->dns;
    if (d->running) {
        d->again = true;
        return;
    }
    evtimer_del(d->timer);
    round_start(d);
}

void membership__dns_stop(struct membership *ms)
{
    struct membership__dns *d = ms->dns;
    if (d == NULL)
        return;
    srv_close(d);
    lookups_abandon(d);
    if (d->timer != NULL)
        event_free(d->timer);
    if (d->own_evdns)
        evdns_base_free(d->evdns, 0);
    free(d);
    ms->dns = NULL;
}
