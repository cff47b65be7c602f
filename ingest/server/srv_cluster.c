/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_cluster.c: the clusters of --cluster as queries see them. A static
 * cluster is parsed once; a dns: cluster's name is resolved by a membership
 * source (client/membership: SRV records, else A records with this server's
 * port) on the server's loop and re-resolved every cluster-dns-interval-ms,
 * so a Deployment that scales adds and removes workers. Each change builds a
 * whole new set (dist_clusters_build) and swaps it in under s->mu; a query
 * holds a reference to the set it started with (srv_clusters_get/put), so a
 * swap never pulls members from under a running query.
 */
#include "srv_int.h"

#include "membership.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct srv_clset {
    atomic_int refs;
    dist_clusters cs;
};

/* One dns: cluster's source. */
typedef struct srv_cldns {
    srv *s;
    char name[128];
    struct membership *ms;
} srv_cldns;

srv_clset *srv_clusters_get(srv *s)
{
    pthread_mutex_lock(&s->mu);
    srv_clset *c = s->clset;
    if (c)
        atomic_fetch_add(&c->refs, 1);
    pthread_mutex_unlock(&s->mu);
    return c;
}

void srv_clusters_put(srv_clset *c)
{
    if (c && atomic_fetch_sub(&c->refs, 1) == 1) {
        dist_clusters_free(&c->cs);
        free(c);
    }
}

const dist_clusters *srv_clset_clusters(const srv_clset *c)
{
    return c ? &c->cs : NULL;
}

/* The addresses that are this server, as members name it ("ip:port"): the
 * listen address, or every interface's when it listens on all of them. */
static int find_selves(srv *s, int port)
{
    const char *l = s->conf.listen;
    bool any4 = !*l || strcmp(l, "0.0.0.0") == 0, any6 = strcmp(l, "::") == 0;
    char buf[300];
    snprintf(buf, sizeof(buf), strchr(l, ':') ? "[%s]:%d" : "%s:%d", *l ? l : "0.0.0.0", port);
    if (!(s->selves = calloc(1, sizeof(char *))) || !(s->selves[0] = strdup(buf)))
        return -ENOMEM;
    s->n_selves = 1;
    if (!any4 && !any6)
        return 0;
    struct ifaddrs *ifs;
    if (getifaddrs(&ifs) < 0)
        return 0; /* only the listen address: the server then sends itself units over HTTP */
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr)
            continue;
        char ip[INET6_ADDRSTRLEN];
        int fam = i->ifa_addr->sa_family;
        if (fam == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, ip, sizeof(ip));
        else if (fam == AF_INET6 && any6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, ip, sizeof(ip));
        else
            continue;
        snprintf(buf, sizeof(buf), fam == AF_INET6 ? "[%s]:%d" : "%s:%d", ip, port);
        char **n = realloc(s->selves, sizeof(char *) * (size_t)(s->n_selves + 1));
        if (!n || !(n[s->n_selves] = strdup(buf))) {
            if (n)
                s->selves = n;
            freeifaddrs(ifs);
            return -ENOMEM;
        }
        s->selves = n;
        s->n_selves++;
    }
    freeifaddrs(ifs);
    return 0;
}

/* Builds the set from --cluster and what each dns: name resolves to now, and
 * swaps it in. */
static int rebuild(srv *s, char *err, size_t errlen)
{
    dist_resolved res[DIST_MAX_CLUSTERS];
    struct ring *rings[DIST_MAX_CLUSTERS] = {0};
    const char **addrs[DIST_MAX_CLUSTERS] = {0};
    int n_res = 0, rc = -ENOMEM;
    for (int i = 0; i < s->n_cldns; i++) {
        struct ring *r = membership_ring(s->cldns[i].ms);
        if (!r)
            continue;
        size_t n = ring_member_count(r);
        const char **a = calloc(n ? n : 1, sizeof(char *));
        if (!a) {
            ring_unref(&r);
            goto out;
        }
        for (size_t k = 0; k < n; k++)
            a[k] = ring_member_at(r, k)->addr;
        rings[n_res] = r;
        addrs[n_res] = a;
        res[n_res++] = (dist_resolved){s->cldns[i].name, a, (int)n};
    }
    srv_clset *c = calloc(1, sizeof(*c));
    if (!c)
        goto out;
    atomic_init(&c->refs, 1);
    rc = dist_clusters_build(&c->cs, s->conf.cluster, (const char *const *)s->selves, s->n_selves,
                             res, n_res, err, errlen);
    if (rc < 0) {
        free(c);
        goto out;
    }
    pthread_mutex_lock(&s->mu);
    srv_clset *old = s->clset;
    s->clset = c;
    pthread_mutex_unlock(&s->mu);
    srv_clusters_put(old);
out:
    for (int i = 0; i < n_res; i++) {
        free(addrs[i]);
        ring_unref(&rings[i]);
    }
    return rc;
}

static void on_change(void *arg, struct ring *ring)
{
    srv_cldns *d = arg;
    char err[512];
    if (rebuild(d->s, err, sizeof(err)) < 0) {
        srv_log(SRV_LOG_ERROR, "msg=\"cluster members not updated\" cluster=%s error=\"%s\"",
                d->name, err);
        return;
    }
    srv_log(SRV_LOG_INFO, "msg=\"cluster members\" cluster=%s servers=%zu", d->name,
            ring_member_count(ring));
}

static void on_log(void *arg, enum membership_level level, const char *line)
{
    srv_cldns *d = arg;
    int lv = level == MEMBERSHIP_ERROR  ? SRV_LOG_ERROR
             : level == MEMBERSHIP_WARN ? SRV_LOG_WARN
             : level == MEMBERSHIP_INFO ? SRV_LOG_INFO
                                        : SRV_LOG_DEBUG;
    srv_log(lv, "cluster=%s %s", d->name, line);
}

int srv_clusters_start(srv *s, int port, char *err, size_t errlen)
{
    int rc = find_selves(s, port);
    if (rc < 0) {
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    /* parse once without members: finds the dns: clusters and checks the text */
    dist_clusters probe;
    if ((rc = dist_clusters_build(&probe, s->conf.cluster, NULL, 0, NULL, 0, err, errlen)) < 0)
        return rc;
    int n_dns = 0;
    for (int i = 0; i < probe.n; i++)
        n_dns += probe.c[i].dns != NULL;
    if (n_dns && !(s->cldns = calloc((size_t)n_dns, sizeof(srv_cldns)))) {
        dist_clusters_free(&probe);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (int i = 0; i < probe.n && rc == 0; i++) {
        if (!probe.c[i].dns)
            continue;
        srv_cldns *d = &s->cldns[s->n_cldns++];
        d->s = s;
        snprintf(d->name, sizeof(d->name), "%s", probe.c[i].name);
        struct membership_options mo = {0};
        mo.base = s->base;
        mo.nameserver = getenv("RINGCACHE_DNS_SERVER");
        mo.interval_ms = (unsigned)s->conf.cluster_dns_interval_ms;
        mo.default_port = (uint16_t)port;
        mo.log = on_log;
        mo.log_arg = d;
        mo.on_change = on_change;
        mo.change_arg = d;
        char spec[600], why[512];
        snprintf(spec, sizeof(spec), "dns:%s", probe.c[i].dns);
        if ((rc = membership_create(&d->ms, spec, &mo, why, sizeof(why))) < 0)
            snprintf(err, errlen, "--cluster %s=%s: %s", d->name, spec, why);
    }
    dist_clusters_free(&probe);
    if (rc < 0)
        return rc;
    return rebuild(s, err, errlen);
}

void srv_clusters_stop(srv *s)
{
    for (int i = 0; i < s->n_cldns; i++)
        membership_destroy(&s->cldns[i].ms);
    free(s->cldns);
    s->cldns = NULL;
    s->n_cldns = 0;
    srv_clusters_put(s->clset);
    s->clset = NULL;
    for (int i = 0; i < s->n_selves; i++)
        free(s->selves[i]);
    free(s->selves);
    s->selves = NULL;
    s->n_selves = 0;
}
