/* SPDX-License-Identifier: Apache-2.0
 *
 * dist_plan.c: units of a distributed query and their scheduler
 * (dist_plan.h). The scheduler keeps, per server, a queue of unit numbers
 * (a ring buffer: the owner takes from the head, a thief from the tail) and,
 * per unit, its state: queued, in flight on a server since a time, or done.
 */
#include "dist_plan.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

void dist_units_free(dist_units *us)
{
    for (int i = 0; i < us->n; i++)
        free(us->u[i].path);
    free(us->u);
    memset(us, 0, sizeof(*us));
}

void dist_unit_to_eng(const dist_unit *u, eng_unit *out)
{
    out->path = u->path;
    out->rg_begin = u->rg_begin < 0 ? 0 : u->rg_begin;
    out->rg_end = u->rg_end < 0 ? 0 : u->rg_end;
}

static int units_add(dist_units *us, int *cap, const char *path, int b, int e, uint64_t bytes)
{
    if (us->n == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        dist_unit *nu = realloc(us->u, sizeof(dist_unit) * (size_t)nc);
        if (!nu)
            return -ENOMEM;
        us->u = nu;
        *cap = nc;
    }
    dist_unit *u = &us->u[us->n];
    if (!(u->path = strdup(path)))
        return -ENOMEM;
    u->rg_begin = b;
    u->rg_end = e;
    u->bytes = bytes;
    us->n++;
    return 0;
}

int dist_units_plan(const eng_pstate *ps, uint64_t split_bytes, dist_units *out)
{
    memset(out, 0, sizeof(*out));
    int n = eng_pstate_units(ps), cap = 0, rc = 0;
    if (n < 0)
        return n;
    /* the source's units come grouped by file, row groups in order */
    for (int i = 0; i < n && rc == 0;) {
        eng_unit_info a;
        if ((rc = eng_pstate_unit_info(ps, i, &a)) < 0)
            break;
        int j = i + 1;
        uint64_t file_bytes = a.bytes;
        eng_unit_info b;
        while (j < n && eng_pstate_unit_info(ps, j, &b) == 0 && strcmp(b.path, a.path) == 0) {
            file_bytes += b.bytes;
            j++;
        }
        if (a.rg < 0 || split_bytes == 0 || file_bytes <= split_bytes) {
            /* a whole file: the worker prunes its row groups itself */
            rc = units_add(out, &cap, a.path, -1, -1, file_bytes);
            i = j;
            continue;
        }
        /* ranges of consecutive row groups of about split_bytes */
        while (i < j && rc == 0) {
            eng_unit_info s, c;
            eng_pstate_unit_info(ps, i, &s);
            uint64_t sum = s.bytes;
            int k = i + 1, last = s.rg;
            while (k < j && eng_pstate_unit_info(ps, k, &c) == 0 && sum + c.bytes <= split_bytes) {
                sum += c.bytes;
                last = c.rg;
                k++;
            }
            rc = units_add(out, &cap, a.path, s.rg, last + 1, sum);
            i = k;
        }
    }
    if (rc < 0)
        dist_units_free(out);
    return rc;
}

static uint64_t rv_score(const char *server, const char *path, int rg)
{
    XXH3_state_t h;
    XXH3_64bits_reset(&h);
    XXH3_64bits_update(&h, server, strlen(server) + 1); /* the NUL keeps "a"+"bc" from "ab"+"c" */
    XXH3_64bits_update(&h, path, strlen(path));
    if (rg > 0) /* a range of row groups after the first: the ranges of a big file spread */
        XXH3_64bits_update(&h, &rg, sizeof(rg));
    return XXH3_64bits_digest(&h);
}

static int rendezvous_rg(const char *const *servers, const bool *live, int n, const char *path,
                         int rg)
{
    int best = -1;
    uint64_t bs = 0;
    for (int i = 0; i < n; i++) {
        if (live && !live[i])
            continue;
        uint64_t sc = rv_score(servers[i], path, rg);
        if (best < 0 || sc > bs) {
            best = i;
            bs = sc;
        }
    }
    return best;
}

int dist_rendezvous(const char *const *servers, const bool *live, int n, const char *path)
{
    return rendezvous_rg(servers, live, n, path, -1);
}

static int unit_home(const char *const *servers, const bool *live, int n, const dist_unit *u)
{
    return rendezvous_rg(servers, live, n, u->path, u->rg_begin);
}

/* ---- the scheduler ---- */

enum { U_QUEUED, U_FLIGHT, U_DONE };

typedef struct squeue {
    int *q; /* ring of unit numbers, capacity n_units */
    int head, len;
    bool live;
    uint64_t empty_since; /* when its queue was first found empty; 0: not empty */
    int done;
} squeue;

struct dist_sched {
    pthread_mutex_t mu;
    const dist_units *us;
    const char *const *servers;
    int n, n_units, left; /* left: units without a result */
    uint64_t grace_ms;
    squeue *sq;
    bool *live;
    uint8_t *state;
    int *owner;      /* in flight: the server */
    uint64_t *since; /* in flight: since when */
    int *home;
};

static void q_push(dist_sched *s, int srv, int u)
{
    squeue *q = &s->sq[srv];
    q->q[(q->head + q->len) % s->n_units] = u;
    q->len++;
    s->state[u] = U_QUEUED;
}

int dist_sched_create(dist_sched **out, const dist_units *us, const char *const *servers, int n,
                      uint64_t grace_ms)
{
    *out = NULL;
    if (n <= 0)
        return -EINVAL;
    dist_sched *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    pthread_mutex_init(&s->mu, NULL);
    s->us = us;
    s->servers = servers;
    s->n = n;
    s->n_units = us->n;
    s->left = us->n;
    s->grace_ms = grace_ms;
    size_t nu = (size_t)us->n + 1;
    s->sq = calloc((size_t)n, sizeof(squeue));
    s->live = calloc((size_t)n, sizeof(bool));
    s->state = calloc(nu, 1);
    s->owner = calloc(nu, sizeof(int));
    s->since = calloc(nu, sizeof(uint64_t));
    s->home = calloc(nu, sizeof(int));
    bool ok = s->sq && s->live && s->state && s->owner && s->since && s->home;
    for (int i = 0; ok && i < n; i++) {
        s->live[i] = s->sq[i].live = true;
        ok = (s->sq[i].q = calloc(nu, sizeof(int))) != NULL;
    }
    if (!ok) {
        dist_sched_destroy(&s);
        return -ENOMEM;
    }
    for (int u = 0; u < us->n; u++) {
        s->home[u] = unit_home(servers, NULL, n, &us->u[u]);
        q_push(s, s->home[u], u);
    }
    *out = s;
    return 0;
}

void dist_sched_destroy(dist_sched **sp)
{
    if (!sp || !*sp)
        return;
    dist_sched *s = *sp;
    for (int i = 0; s->sq && i < s->n; i++)
        free(s->sq[i].q);
    free(s->sq);
    free(s->live);
    free(s->state);
    free(s->owner);
    free(s->since);
    free(s->home);
    pthread_mutex_destroy(&s->mu);
    free(s);
    *sp = NULL;
}

static int take(dist_sched *s, int srv, int u, uint64_t now)
{
    s->state[u] = U_FLIGHT;
    s->owner[u] = srv;
    s->since[u] = now;
    return u;
}

int dist_sched_next(dist_sched *s, int srv, uint64_t now)
{
    if (srv < 0 || srv >= s->n)
        return -EINVAL;
    pthread_mutex_lock(&s->mu);
    int rc;
    squeue *me = &s->sq[srv];
    if (!me->live) {
        rc = DIST_SCHED_LOST;
    } else if (s->left == 0) {
        rc = DIST_SCHED_DONE;
    } else if (me->len) {
        int u = me->q[me->head];
        me->head = (me->head + 1) % s->n_units;
        me->len--;
        me->empty_since = 0;
        rc = take(s, srv, u, now);
    } else {
        if (!me->empty_since)
            me->empty_since = now ? now : 1;
        rc = DIST_SCHED_WAIT;
        if (now - me->empty_since >= s->grace_ms) {
            /* steal from the tail of the longest live queue */
            int v = -1;
            for (int i = 0; i < s->n; i++)
                if (i != srv && s->sq[i].live && s->sq[i].len &&
                    (v < 0 || s->sq[i].len > s->sq[v].len))
                    v = i;
            if (v >= 0) {
                squeue *q = &s->sq[v];
                int u = q->q[(q->head + q->len - 1) % s->n_units];
                q->len--;
                rc = take(s, srv, u, now);
            }
        }
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int dist_sched_next_own(dist_sched *s, int srv, uint64_t now)
{
    if (srv < 0 || srv >= s->n)
        return -EINVAL;
    pthread_mutex_lock(&s->mu);
    int rc = DIST_SCHED_WAIT;
    squeue *me = &s->sq[srv];
    if (me->live && me->len) {
        int u = me->q[me->head];
        me->head = (me->head + 1) % s->n_units;
        me->len--;
        rc = take(s, srv, u, now);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

bool dist_sched_complete_n(dist_sched *s, const int *units, int n, int srv)
{
    if (srv < 0 || srv >= s->n || n <= 0)
        return false;
    pthread_mutex_lock(&s->mu);
    bool counts = s->sq[srv].live;
    for (int k = 0; k < n && counts; k++)
        counts = units[k] >= 0 && units[k] < s->n_units && s->state[units[k]] == U_FLIGHT &&
                 s->owner[units[k]] == srv;
    for (int k = 0; k < n && counts; k++) {
        s->state[units[k]] = U_DONE;
        s->left--;
        s->sq[srv].done++;
    }
    pthread_mutex_unlock(&s->mu);
    return counts;
}

bool dist_sched_complete(dist_sched *s, int unit, int srv)
{
    if (unit < 0 || unit >= s->n_units || srv < 0 || srv >= s->n)
        return false;
    pthread_mutex_lock(&s->mu);
    bool counts = s->state[unit] == U_FLIGHT && s->owner[unit] == srv && s->sq[srv].live;
    if (counts) {
        s->state[unit] = U_DONE;
        s->left--;
        s->sq[srv].done++;
    }
    pthread_mutex_unlock(&s->mu);
    return counts;
}

static int lose_locked(dist_sched *s, int srv)
{
    squeue *me = &s->sq[srv];
    if (!me->live)
        return 0;
    me->live = false;
    s->live[srv] = false;
    int moved = 0, alive = 0;
    for (int i = 0; i < s->n; i++)
        alive += s->live[i];
    /* its queue, then its units in flight, re-homed among the live */
    int *pend = malloc(sizeof(int) * ((size_t)s->n_units + 1)), np = 0;
    for (int k = 0; k < me->len; k++) {
        int u = me->q[(me->head + k) % s->n_units];
        if (pend)
            pend[np++] = u;
    }
    me->len = 0;
    for (int u = 0; u < s->n_units; u++)
        if (s->state[u] == U_FLIGHT && s->owner[u] == srv && pend)
            pend[np++] = u;
    for (int k = 0; k < np && alive; k++) {
        int u = pend[k];
        q_push(s, unit_home(s->servers, s->live, s->n, &s->us->u[u]), u);
        moved++;
    }
    free(pend);
    return moved;
}

int dist_sched_lose(dist_sched *s, int srv)
{
    if (srv < 0 || srv >= s->n)
        return -EINVAL;
    pthread_mutex_lock(&s->mu);
    int moved = lose_locked(s, srv);
    pthread_mutex_unlock(&s->mu);
    return moved;
}

int dist_sched_expire(dist_sched *s, uint64_t now, uint64_t deadline_ms)
{
    pthread_mutex_lock(&s->mu);
    int lost = 0;
    for (int u = 0; u < s->n_units; u++)
        if (s->state[u] == U_FLIGHT && s->sq[s->owner[u]].live && now > s->since[u] &&
            now - s->since[u] > deadline_ms) {
            lose_locked(s, s->owner[u]);
            lost++;
        }
    pthread_mutex_unlock(&s->mu);
    return lost;
}

int dist_sched_live(const dist_sched *s)
{
    pthread_mutex_lock((pthread_mutex_t *)&s->mu);
    int n = 0;
    for (int i = 0; i < s->n; i++)
        n += s->live[i];
    pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
    return n;
}

bool dist_sched_server_live(const dist_sched *s, int srv)
{
    if (srv < 0 || srv >= s->n)
        return false;
    pthread_mutex_lock((pthread_mutex_t *)&s->mu);
    bool l = s->live[srv];
    pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
    return l;
}

bool dist_sched_done(const dist_sched *s)
{
    pthread_mutex_lock((pthread_mutex_t *)&s->mu);
    bool d = s->left == 0;
    pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
    return d;
}

int dist_sched_count(const dist_sched *s, int srv)
{
    if (srv < 0 || srv >= s->n)
        return 0;
    pthread_mutex_lock((pthread_mutex_t *)&s->mu);
    int d = s->sq[srv].done;
    pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
    return d;
}

int dist_sched_home(const dist_sched *s, int unit)
{
    return unit >= 0 && unit < s->n_units ? s->home[unit] : -1;
}
