/* SPDX-License-Identifier: Apache-2.0
 *
 * bs_threads.c: the thread-pool backend, for hosts where io_uring cannot be
 * set up (container runtimes' default seccomp profiles block it). A fixed set
 * of I/O threads shared by all workers takes operations from one queue, does
 * pread/pwrite on the O_DIRECT data file, and hands each operation back to its
 * worker's inbox, whose eventfd wakes the worker's loop. A worker hands over
 * what it prepared once per loop turn (one lock, one signal per batch).
 */
#include "blockstore_int.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

struct bs_pool {
    bs_store *s;
    pthread_t *th;
    unsigned n;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bs_op *head, *tail;
    bool stop;
};

static int do_io(int fd, bs_op *op)
{
    size_t done = 0;
    while (done < op->io_len) {
        ssize_t n =
            op->kind == BS_OP_READ
                ? pread(fd, op->iomem + done, op->io_len - done, (off_t)(op->file_off + done))
                : pwrite(fd, op->iomem + done, op->io_len - done, (off_t)(op->file_off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            break; /* past the end: a short result, reported as such */
        done += (size_t)n;
    }
    return (int)done;
}

static void *pool_main(void *arg)
{
    bs_pool *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->head && !p->stop)
            pthread_cond_wait(&p->cond, &p->lock);
        if (!p->head)
            break;
        bs_op *op = p->head;
        p->head = op->next;
        if (!p->head)
            p->tail = NULL;
        pthread_mutex_unlock(&p->lock);
        op->res = do_io(p->s->data_fd, op);
        bs__inbox_push(op->w, op);
        pthread_mutex_lock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int bs__pool_create(bs_pool **out, bs_store *s, unsigned n)
{
    *out = NULL;
    bs_pool *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->s = s;
    p->th = calloc(n, sizeof(*p->th));
    if (!p->th) {
        free(p);
        return -ENOMEM;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    for (unsigned i = 0; i < n; i++) {
        int rc = pthread_create(&p->th[i], NULL, pool_main, p);
        if (rc) {
            bs__pool_destroy(&p);
            return -rc;
        }
        p->n++;
    }
    *out = p;
    return 0;
}

void bs__pool_destroy(bs_pool **pp)
{
    bs_pool *p = pp ? *pp : NULL;
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 0; i < p->n; i++)
        pthread_join(p->th[i], NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
    free(p->th);
    free(p);
    *pp = NULL;
}

void bs__pool_flush(bs_worker *w)
{
    if (!w->tp_head)
        return;
    bs_pool *p = w->s->pool;
    unsigned n = 0;
    for (bs_op *op = w->tp_head; op; op = op->next)
        n++;
    pthread_mutex_lock(&p->lock);
    if (p->tail)
        p->tail->next = w->tp_head;
    else
        p->head = w->tp_head;
    p->tail = w->tp_tail;
    if (n > 1)
        pthread_cond_broadcast(&p->cond);
    else
        pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
    w->tp_head = w->tp_tail = NULL;
    w->tp_out += n;
}

bs_op *bs__pool_steal(bs_pool *p, bs_worker *w)
{
    pthread_mutex_lock(&p->lock);
    bs_op *mine = bs__ops_take_worker(&p->head, &p->tail, w);
    pthread_mutex_unlock(&p->lock);
    return mine;
}

bs_op *bs__ops_take_worker(bs_op **head, bs_op **tail, const bs_worker *w)
{
    bs_op *mine = NULL, **mine_tail = &mine;
    bs_op **pp = head;
    *tail = NULL;
    while (*pp) {
        bs_op *op = *pp;
        if (op->w == w) {
            *pp = op->next;
            op->next = NULL;
            *mine_tail = op;
            mine_tail = &op->next;
        } else {
            *tail = op;
            pp = &op->next;
        }
    }
    return mine;
}
