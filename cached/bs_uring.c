/* SPDX-License-Identifier: Apache-2.0
 *
 * bs_uring.c: the io_uring backend. One ring per worker, its eventfd (the
 * worker's) registered with the ring so completions wake the worker's event
 * loop. SQEs are prepared as requests come and submitted once per loop turn
 * (bs__uring_flush from the worker's kick), one io_uring_enter for the batch.
 * No more I/O is in the kernel than the CQ holds: the rest waits in a backlog,
 * so completions are never dropped or overflowed.
 */
#include "blockstore_int.h"

#include <errno.h>
#include <string.h>

int bs__uring_probe(unsigned entries)
{
    struct io_uring ring;
    int rc = io_uring_queue_init(entries, &ring, 0);
    if (rc < 0)
        return rc;
    io_uring_queue_exit(&ring);
    return 0;
}

int bs__uring_init(bs_worker *w)
{
    unsigned entries = w->s->cfg.ring_entries ? w->s->cfg.ring_entries : 128;
    int rc = io_uring_queue_init(entries, &w->ring, 0);
    if (rc < 0)
        return rc;
    rc = io_uring_register_eventfd(&w->ring, w->efd);
    if (rc < 0) {
        io_uring_queue_exit(&w->ring);
        return rc;
    }
    w->cq_cap = w->ring.cq.ring_entries;
    return 0;
}

void bs__uring_deinit(bs_worker *w)
{
    io_uring_queue_exit(&w->ring);
    w->cq_cap = 0;
}

static void submit_now(bs_worker *w)
{
    if (!w->sq_pending)
        return;
    int rc = io_uring_submit(&w->ring);
    if (rc > 0) {
        w->in_kernel += (unsigned)rc;
        w->sq_pending -= (unsigned)rc < w->sq_pending ? (unsigned)rc : w->sq_pending;
    }
    /* rc < 0 (-EAGAIN, -EBUSY): the SQEs stay in the ring; the next turn
     * retries, and completions reaped meanwhile make room. */
}

static void prep(bs_worker *w, bs_op *op)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);
    if (!sqe) {
        submit_now(w);
        sqe = io_uring_get_sqe(&w->ring);
    }
    if (!sqe) { /* the kernel took none: keep it for later */
        op->next = NULL;
        if (w->backlog_tail)
            w->backlog_tail->next = op;
        else
            w->backlog = op;
        w->backlog_tail = op;
        return;
    }
    if (op->kind == BS_OP_READ)
        io_uring_prep_read(sqe, w->s->data_fd, op->iomem, op->io_len, op->file_off);
    else
        io_uring_prep_write(sqe, w->s->data_fd, op->iomem, op->io_len, op->file_off);
    io_uring_sqe_set_data(sqe, op);
    w->sq_pending++;
}

void bs__uring_submit(bs_worker *w, bs_op *op)
{
    if (w->backlog || w->in_kernel + w->sq_pending >= w->cq_cap) {
        op->next = NULL;
        if (w->backlog_tail)
            w->backlog_tail->next = op;
        else
            w->backlog = op;
        w->backlog_tail = op;
        return;
    }
    prep(w, op);
}

static void feed_backlog(bs_worker *w)
{
    while (w->backlog && w->in_kernel + w->sq_pending < w->cq_cap) {
        bs_op *op = w->backlog;
        w->backlog = op->next;
        if (!w->backlog)
            w->backlog_tail = NULL;
        unsigned before = w->sq_pending;
        prep(w, op);
        if (w->sq_pending == before)
            break; /* went back to the backlog */
    }
}

void bs__uring_flush(bs_worker *w)
{
    feed_backlog(w);
    submit_now(w);
}

void bs__uring_reap(bs_worker *w)
{
    struct io_uring_cqe *cqe;
    while (io_uring_peek_cqe(&w->ring, &cqe) == 0) {
        bs_op *op = io_uring_cqe_get_data(cqe);
        int res = cqe->res;
        io_uring_cqe_seen(&w->ring, cqe);
        w->in_kernel--;
        bs__op_io_done(w, op, res);
    }
    feed_backlog(w);
}

void bs__uring_drain(bs_worker *w)
{
    /* What the kernel has not seen is cancelled; what it has is waited for
     * (it owns those buffers until their completion is reaped). */
    bs_op *b = w->backlog;
    w->backlog = w->backlog_tail = NULL;
    while (b) {
        bs_op *n = b->next;
        bs__op_cancel(w, b, -ECANCELED);
        b = n;
    }
    submit_now(w);
    while (w->in_kernel > 0 || w->sq_pending > 0) {
        submit_now(w);
        struct io_uring_cqe *cqe;
        int rc = io_uring_wait_cqe(&w->ring, &cqe);
        if (rc == -EINTR)
            continue;
        if (rc < 0)
            break;
        bs__uring_reap(w);
    }
}
