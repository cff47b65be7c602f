/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_worker.c: the workers. max_threads threads pull the source's work
 * units from an atomic counter; each unit hands blocks of scan vectors to
 * its worker, which filters them (WHERE, a selection vector) in slices small
 * enough that every intermediate vector stays in the L2 cache, then either
 * folds them into its own aggregation table or appends projected rows to its
 * own result table (cut to the top N by a heap when ORDER BY has a LIMIT).
 * The thread that started them draws the progress line meanwhile.
 */
#include "exec_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Rows of a decoded row group that go through the operators at a time: small
 * enough that every intermediate vector (predicate results, selection, group
 * ids) stays in the L2 cache between one operator and the next. */
#define ENG_SLICE_ROWS 16384

static void q_fail(equery *q, int rc, const char *msg)
{
    eng_fail_set(&q->fail, rc, msg);
    atomic_store(&q->stop, 1);
    q->src->ops->stop(q->src);
}

int eng__n_res_cols(const eng_plan *p)
{
    return p->n_outs + p->n_order;
}

static int process_rows(worker *w, ex_vec *in, uint32_t n);

/* ARRAY JOIN: each row of the block once per element of the plan's array
 * (an empty one once, with the default, under LEFT), the element after the
 * source's slots; then the rest of the plan on those rows. */
static int array_join(worker *w, ex_vec *in, uint32_t n)
{
    equery *q = w->q;
    const eng_plan *p = &q->plan;
    ex_ectx ec = {&q->mem, w->err, sizeof(w->err)};
    ex_vec arr;
    int rc = bx_eval(&ec, p->ajoin, in, NULL, n, &arr);
    if (rc < 0)
        return rc;
    ex_type et = ex_arr_elem(&arr.t);
    int nin = p->n_need;
    ex_vec *in2 = calloc((size_t)nin + 2, sizeof(ex_vec));
    uint32_t *rep = NULL;
    if (!in2) {
        rc = -ENOMEM;
        goto out;
    }
    /* rows at a time, so that a block of long arrays stays a slice */
    for (uint32_t r0 = 0; r0 < n && rc == 0;) {
        uint64_t tot = 0;
        uint32_t r1 = r0;
        for (; r1 < n && (tot < ENG_SLICE_ROWS || r1 == r0); r1++) {
            uint32_t l;
            const uint8_t *a = ex_str(&arr, r1, &l);
            uint32_t k = ex_arr_count(a, l);
            tot += k ? k : p->ajoin_left;
        }
        if (tot > UINT32_MAX / 2) {
            snprintf(w->err, sizeof(w->err), "an array of ARRAY JOIN has more than 2^31 elements");
            rc = -E2BIG;
            break;
        }
        free(rep);
        if (!(rep = malloc(sizeof(uint32_t) * (size_t)(tot ? tot : 1)))) {
            rc = -ENOMEM;
            break;
        }
        ex_vec *el = &in2[nin];
        ex_type at = et;
        at.nullable = true;
        if ((rc = ex_vec_alloc(&q->mem, el, at, (uint32_t)tot)) < 0)
            break;
        el->t = et;
        uint32_t m = 0;
        for (uint32_t r = r0; r < r1 && rc == 0; r++) {
            uint32_t l;
            const uint8_t *a = ex_str(&arr, r, &l);
            ex_arr_it it;
            ex_arr_open(&it, &arr.t, a, l);
            ex_arr_val v;
            bool any = false;
            while (rc == 0 && (ex_arr_next(&it, &v) || (!any && p->ajoin_left))) {
                if (!any && it.at == 0) {
                    /* LEFT ARRAY JOIN of []: the element type's default (NULL when
                     * the elements are Nullable) */
                    memset(&v, 0, sizeof(v));
                    v.null = et.nullable;
                    if (et.kind == EX_ARRAY) {
                        static const uint8_t empty[4] = {0};
                        v.s = empty;
                        v.len = 4;
                    }
                }
                any = true;
                rep[m] = r;
                el->nulls[m] = v.null;
                if (ex_is_bytes(et.kind))
                    rc = ex_vec_str_put(&q->mem, el, m, v.null ? (const uint8_t *)"" : v.s,
                                        v.null ? 0 : v.len);
                else if (et.kind == EX_FLOAT)
                    el->d[m] = v.null ? 0 : v.d;
                else if (et.kind != EX_NOTHING)
                    el->i[m] = v.null ? 0 : v.i;
                m++;
                if (it.at >= it.count)
                    break;
            }
        }
        /* every other column repeated by rep (a gather, as a column reference) */
        for (int k = 0; k < nin && rc == 0; k++) {
            bx col = {.op = BX_COL, .col = k};
            rc = bx_eval(&ec, &col, in, rep, m, &in2[k]);
        }
        if (rc == 0 && m)
            rc = process_rows(w, in2, m);
        for (int k = 0; k <= nin; k++)
            ex_vec_clear(&q->mem, &in2[k]);
        r0 = r1;
    }
out:
    if (rc == -ENOMEM && !w->err[0])
        snprintf(w->err, sizeof(w->err), "out of memory in ARRAY JOIN");
    free(rep);
    free(in2);
    ex_vec_clear(&q->mem, &arr);
    return rc;
}

/* Filter + aggregate or project one block of scan vectors. */
static int process(worker *w, ex_vec *in, uint32_t n)
{
    if (w->q->plan.ajoin)
        return array_join(w, in, n);
    return process_rows(w, in, n);
}

static int process_rows(worker *w, ex_vec *in, uint32_t n)
{
    equery *q = w->q;
    const eng_plan *p = &q->plan;
    ex_ectx ec = {&q->mem, w->err, sizeof(w->err)};
    const uint32_t *sel = NULL;
    uint32_t m = n;
    int rc;
    if (p->where) {
        ex_vec b;
        if ((rc = bx_eval(&ec, p->where, in, NULL, n, &b)) < 0)
            return rc;
        if (n > w->sel_cap) {
            free(w->sel);
            w->sel_cap = n;
            if (!(w->sel = malloc(sizeof(uint32_t) * n))) {
                ex_vec_clear(&q->mem, &b);
                return -ENOMEM;
            }
        }
        m = bx_select(&b, NULL, n, w->sel);
        ex_vec_clear(&q->mem, &b);
        sel = w->sel;
        if (m == n)
            sel = NULL;
    }
    if (m == 0)
        return 0;
    if (p->aggregate)
        return agg_tab_update(w->agg, &ec, in, sel, m);
    if (p->has_limit && !p->n_order && atomic_load(&q->rows_emitted) >= p->offset + p->limit)
        return 0;
    int nc = eng__n_res_cols(p);
    ex_vec *vals = calloc((size_t)nc + 1, sizeof(ex_vec));
    if (!vals)
        return -ENOMEM;
    rc = 0;
    int done = 0;
    for (; done < nc && rc == 0; done++) {
        const bx *e = done < p->n_outs ? p->outs[done].e : p->order[done - p->n_outs].e;
        rc = bx_eval(&ec, e, in, sel, m, &vals[done]);
        if (rc < 0)
            break;
    }
    if (rc == 0)
        rc = rtab_append(&q->mem, &w->res, vals, m);
    for (int k = 0; k < done; k++)
        ex_vec_clear(&q->mem, &vals[k]);
    free(vals);
    if (rc < 0)
        return rc;
    atomic_fetch_add(&q->rows_emitted, m);
    if (q->stream) {
        /* straight to the sink; the table is used again for the next block */
        rc = eng__stream_rows(q, &w->res, w->err, sizeof(w->err));
        w->res.n = 0;
        return rc;
    }
    /* partial top-N: keep the table small */
    if (p->has_limit && p->n_order) {
        uint64_t want = (uint64_t)p->offset + (uint64_t)p->limit;
        if (want < (1u << 20) && w->res.n > 2 * want + 65536)
            rc = eng__order_and_cut(&q->mem, &w->res, p, p->n_outs, false);
    }
    return rc;
}

/* The source's callback: one block of scan vectors, processed in slices so
 * selection vectors stay small. */
static int scan_block(void *arg, ex_vec *in, uint32_t n)
{
    worker *w = arg;
    int ncols = w->q->plan.n_need;
    int rc = 0;
    if (eng__cancelled(w->q)) {
        snprintf(w->err, sizeof(w->err), "the query was cancelled");
        return -ECANCELED;
    }
    for (uint32_t off = 0; rc == 0 && off < n; off += ENG_SLICE_ROWS) {
        uint32_t cnt = n - off < ENG_SLICE_ROWS ? n - off : ENG_SLICE_ROWS;
        if (off == 0 && cnt == n)
            return process(w, in, cnt);
        ex_vec *sl = calloc((size_t)ncols + 1, sizeof(ex_vec));
        if (!sl)
            return -ENOMEM;
        for (int k = 0; k < ncols; k++)
            ex_vec_view(&in[k], off, cnt, &sl[k]);
        rc = process(w, sl, cnt);
        free(sl);
    }
    return rc;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    equery *q = w->q;
    for (;;) {
        if (atomic_load(&q->stop))
            break;
        if (eng__cancelled(q)) {
            q_fail(q, -ECANCELED, "the query was cancelled");
            break;
        }
        if (q->plan.has_limit && !q->plan.n_order && !q->plan.aggregate &&
            atomic_load(&q->rows_emitted) >= q->plan.offset + q->plan.limit) {
            q->src->ops->stop(q->src); /* enough rows: nothing more to fetch */
            break;
        }
        int u = atomic_fetch_add(&q->next_unit, 1);
        if (u >= q->n_units)
            break;
        w->err[0] = 0;
        int rc = q->src->ops->read(q->src, w->rd, u, scan_block, w, w->err, sizeof(w->err));
        atomic_fetch_add(&q->units_done, 1);
        if (rc < 0) {
            if (rc == -ENOMEM && atomic_load(&q->mem.failed_at))
                em_error(&q->mem, w->err, sizeof(w->err));
            else if (!w->err[0])
                snprintf(w->err, sizeof(w->err), "query failed: %s", strerror(-rc));
            q_fail(q, rc, w->err);
            break;
        }
    }
    return NULL;
}

typedef struct run_state {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int live;
} run_state;

typedef struct wrap_arg {
    worker *w;
    run_state *rs;
} wrap_arg;

static void *wrap_main(void *arg)
{
    wrap_arg *a = arg;
    worker_main(a->w);
    pthread_mutex_lock(&a->rs->mu);
    a->rs->live--;
    pthread_cond_signal(&a->rs->cv);
    pthread_mutex_unlock(&a->rs->mu);
    return NULL;
}

/* Runs nthreads workers; the calling thread draws the progress line. */
int eng__run_workers(equery *q, worker *ws, int nthreads)
{
    pthread_t *th = calloc((size_t)nthreads, sizeof(pthread_t));
    wrap_arg *wa = calloc((size_t)nthreads, sizeof(wrap_arg));
    run_state rs = {.live = 0};
    pthread_mutex_init(&rs.mu, NULL);
    pthread_cond_init(&rs.cv, NULL);
    int started = 0;
    if (th && wa) {
        for (int i = 0; i < nthreads; i++) {
            wa[i] = (wrap_arg){&ws[i], &rs};
            pthread_mutex_lock(&rs.mu);
            rs.live++;
            pthread_mutex_unlock(&rs.mu);
            if (pthread_create(&th[i], NULL, wrap_main, &wa[i]) != 0) {
                pthread_mutex_lock(&rs.mu);
                rs.live--;
                pthread_mutex_unlock(&rs.mu);
                break;
            }
            started++;
        }
    }
    if (started == 0) {
        /* no thread: do the work here */
        if (nthreads > 0)
            worker_main(&ws[0]);
    } else {
        bool drew = false;
        double t_first = eng__now_s() + 0.5;
        pthread_mutex_lock(&rs.mu);
        while (rs.live > 0) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 100 * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&rs.cv, &rs.mu, &ts);
            eng__live_update(q);
            if (rs.live > 0 && eng__cancelled(q) && !atomic_load(&q->stop))
                q_fail(q, -ECANCELED, "the query was cancelled");
            if (rs.live > 0 && q->ctx->progress && eng__now_s() > t_first) {
                pthread_mutex_unlock(&rs.mu);
                eng__progress_line(q, false);
                drew = true;
                pthread_mutex_lock(&rs.mu);
            }
        }
        pthread_mutex_unlock(&rs.mu);
        if (drew)
            eng__progress_line(q, true);
        for (int i = 0; i < started; i++)
            pthread_join(th[i], NULL);
    }
    pthread_mutex_destroy(&rs.mu);
    pthread_cond_destroy(&rs.cv);
    free(th);
    free(wa);
    return 0;
}

int eng__execute(equery *q, worker **out, int *nout, char *err, size_t errlen)
{
    *out = NULL;
    *nout = 0;
    int nthreads = q->set.max_threads;
    if (nthreads > q->n_units)
        nthreads = q->n_units > 0 ? q->n_units : 1;
    worker *ws = calloc((size_t)nthreads, sizeof(worker));
    if (!ws) {
        snprintf(err, errlen, "out of memory starting the workers");
        return -ENOMEM;
    }
    *out = ws;
    *nout = nthreads;
    int nrc = eng__n_res_cols(&q->plan);
    int rc = 0;
    for (int i = 0; i < nthreads && rc == 0; i++) {
        ws[i].q = q;
        if (q->plan.aggregate)
            rc = agg_tab_create(&ws[i].agg, &q->mem, &q->plan);
        else
            rc = rtab_init(&q->mem, &ws[i].res, q->rtypes, nrc);
        if (rc == 0 && q->plan.aggregate)
            eng__agg_hint_worker(q, ws[i].agg, nthreads);
        if (rc == 0)
            rc = q->src->ops->reader_create(q->src, &ws[i].rd);
    }
    if (rc < 0) {
        if (atomic_load(&q->mem.failed_at))
            em_error(&q->mem, err, errlen);
        else
            snprintf(err, errlen, "out of memory starting the workers");
        return rc;
    }
    q->src->ops->start(q->src);
    eng__run_workers(q, ws, nthreads);
    q->src->ops->finish(q->src);
    for (int i = 0; i < nthreads; i++) {
        q->src->ops->reader_destroy(q->src, ws[i].rd);
        ws[i].rd = NULL;
    }
    int frc = atomic_load(&q->fail.rc);
    if (frc) {
        snprintf(err, errlen, "%s", q->fail.msg);
        return frc;
    }
    return 0;
}

void eng__workers_free(equery *q, worker *ws, int n)
{
    if (!ws)
        return;
    for (int i = 0; i < n; i++) {
        agg_tab_destroy(&ws[i].agg);
        rtab_free(&q->mem, &ws[i].res);
        free(ws[i].sel);
        if (ws[i].rd)
            q->src->ops->reader_destroy(q->src, ws[i].rd);
    }
    free(ws);
}
