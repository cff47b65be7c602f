/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_pool.c: the background pool: a fixed number of threads (ClickHouse's
 * background_pool_size) that run one task, each every interval, staggered,
 * until stopped. The tables' merges and old-part cleanup run here
 * (srv_server.c's merge task), so their cost is bounded by the pool's size whatever
 * the insert rate. A stop wakes sleeping threads at once and waits for a
 * running task to return.
 *
 * Thread-safety: start and stop from one thread; stats from any.
 */
#include "srv_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct srv_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    pthread_t *th;
    int n;
    int interval_ms;
    srv_task_fn fn;
    void *arg;
    _Atomic uint64_t runs, failures;
};

typedef struct pool_arg {
    srv_pool *p;
    int index;
} pool_arg;

static void *pool_main(void *a)
{
    pool_arg *pa = a;
    srv_pool *p = pa->p;
    /* staggered: thread i first wakes at (i + 1) / n of the interval */
    int64_t first_ms = (int64_t)p->interval_ms * (pa->index + 1) / p->n;
    free(pa);
    struct timespec next;
    clock_gettime(CLOCK_REALTIME, &next);
    next.tv_sec += first_ms / 1000;
    next.tv_nsec += (first_ms % 1000) * 1000000;
    if (next.tv_nsec >= 1000000000) {
        next.tv_sec++;
        next.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        if (pthread_cond_timedwait(&p->cv, &p->mu, &next) != ETIMEDOUT)
            continue;
        pthread_mutex_unlock(&p->mu);
        char err[512] = "";
        int rc = p->fn(p->arg, err, sizeof(err));
        atomic_fetch_add(&p->runs, 1);
        if (rc < 0) {
            atomic_fetch_add(&p->failures, 1);
            srv_log(SRV_LOG_WARN, "msg=\"background task failed\" err=%d reason=\"%s\"", rc, err);
        }
        pthread_mutex_lock(&p->mu);
        clock_gettime(CLOCK_REALTIME, &next);
        next.tv_sec += p->interval_ms / 1000;
        next.tv_nsec += (long)(p->interval_ms % 1000) * 1000000;
        if (next.tv_nsec >= 1000000000) {
            next.tv_sec++;
            next.tv_nsec -= 1000000000;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int srv_pool_start(srv_pool **out, int n, int interval_ms, srv_task_fn fn, void *arg)
{
    *out = NULL;
    if (n < 1 || interval_ms < 1 || !fn)
        return -EINVAL;
    srv_pool *p = calloc(1, sizeof(*p));
    if (!p || !(p->th = calloc((size_t)n, sizeof(pthread_t)))) {
        free(p);
        return -ENOMEM;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->interval_ms = interval_ms;
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    for (int i = 0; i < n; i++) {
        pool_arg *pa = malloc(sizeof(*pa));
        if (pa)
            *pa = (pool_arg){p, i};
        if (!pa || pthread_create(&p->th[i], NULL, pool_main, pa) != 0) {
            free(pa);
            p->n = i;
            srv_pool_stop(&p);
            return -EAGAIN;
        }
    }
    *out = p;
    return 0;
}

void srv_pool_stop(srv_pool **pp)
{
    if (!pp || !*pp)
        return;
    srv_pool *p = *pp;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n; i++)
        pthread_join(p->th[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->th);
    free(p);
    *pp = NULL;
}

void srv_pool_stats(srv_pool *p, uint64_t *runs, uint64_t *failures)
{
    *runs = p ? atomic_load(&p->runs) : 0;
    *failures = p ? atomic_load(&p->failures) : 0;
}
