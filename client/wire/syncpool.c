/* SPDX-License-Identifier: Apache-2.0
 *
 * syncpool.c: idle blocking connections to cache nodes, kept per node address
 * (syncconn.h, sc_pool). A small table of addresses, each with a stack of at
 * most keep_per_node idle connections; one mutex, held only to push or pop.
 * A connection that failed (sc_usable false) is never kept; the table's
 * entries are never removed (a cluster has a handful of nodes: max_nodes
 * bounds it, and past it connections are simply not kept).
 */
#include "syncconn.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct sc_pool_node {
    char *host;
    int port;
    int n;
    sc_conn **idle; /* keep_per_node slots, n of them used */
} sc_pool_node;

struct sc_pool {
    sc_pool_config cfg;
    char *token;
    pthread_mutex_t lock; /* nodes, n_nodes and every node's idle stack */
    sc_pool_node *nodes;  /* max_nodes entries, n_nodes used */
    int n_nodes;
};

int sc_pool_create(sc_pool **out, const sc_pool_config *cfg)
{
    *out = NULL;
    sc_pool *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->cfg = *cfg;
    if (p->cfg.max_nodes <= 0)
        p->cfg.max_nodes = 64;
    if (p->cfg.keep_per_node <= 0)
        p->cfg.keep_per_node = 8;
    p->token = cfg->token ? strdup(cfg->token) : NULL;
    p->nodes = calloc((size_t)p->cfg.max_nodes, sizeof(*p->nodes));
    if ((cfg->token && !p->token) || !p->nodes) {
        free(p->token);
        free(p->nodes);
        free(p);
        return -ENOMEM;
    }
    p->cfg.token = p->token;
    pthread_mutex_init(&p->lock, NULL);
    *out = p;
    return 0;
}

void sc_pool_destroy(sc_pool **pp)
{
    sc_pool *p = pp ? *pp : NULL;
    if (!p)
        return;
    for (int i = 0; i < p->n_nodes; i++) {
        for (int k = 0; k < p->nodes[i].n; k++)
            sc_close(&p->nodes[i].idle[k]);
        free(p->nodes[i].idle);
        free(p->nodes[i].host);
    }
    free(p->nodes);
    free(p->token);
    pthread_mutex_destroy(&p->lock);
    free(p);
    *pp = NULL;
}

/* host:port's entry, or NULL; under lock. */
static sc_pool_node *sc_pool_find_locked(sc_pool *p, const char *host, int port)
{
    for (int i = 0; i < p->n_nodes; i++)
        if (p->nodes[i].port == port && strcmp(p->nodes[i].host, host) == 0)
            return &p->nodes[i];
    return NULL;
}

int sc_pool_get(sc_pool *p, const char *host, int port, sc_conn **out, char *err, size_t errlen)
{
    *out = NULL;
    pthread_mutex_lock(&p->lock);
    sc_pool_node *n = sc_pool_find_locked(p, host, port);
    if (n && n->n > 0)
        *out = n->idle[--n->n];
    pthread_mutex_unlock(&p->lock);
    if (*out)
        return 0;
    return sc_open(out, host, port, p->cfg.token, p->cfg.block_size, p->cfg.connect_timeout_ms,
                   p->cfg.timeout_ms, p->cfg.spin_us, err, errlen);
}

void sc_pool_put(sc_pool *p, const char *host, int port, sc_conn **cp)
{
    sc_conn *c = *cp;
    *cp = NULL;
    if (!c)
        return;
    if (!sc_usable(c)) {
        sc_close(&c);
        return;
    }
    pthread_mutex_lock(&p->lock);
    sc_pool_node *n = sc_pool_find_locked(p, host, port);
    if (!n && p->n_nodes < p->cfg.max_nodes) {
        sc_pool_node *e = &p->nodes[p->n_nodes];
        e->host = strdup(host);
        e->idle = calloc((size_t)p->cfg.keep_per_node, sizeof(*e->idle));
        if (e->host && e->idle) {
            e->port = port;
            e->n = 0;
            n = e;
            p->n_nodes++;
        } else {
            free(e->host);
            free(e->idle);
            e->host = NULL;
            e->idle = NULL;
        }
    }
    if (n && n->n < p->cfg.keep_per_node) {
        n->idle[n->n++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&p->lock);
    sc_close(&c); /* no room: closed outside the lock */
}
