/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_exec.c: runs a statement. The FROM clause's table function opens a
 * source through the registry (source/eng_source.h), which finds the data and
 * its schema; the plan is bound against that schema, then max_threads
 * workers run the source's work units, pulled from an atomic counter. Each
 * unit hands blocks of scan vectors to its worker, which filters them (in
 * slices small enough for the L2 cache) and either folds them into its own
 * aggregation table or appends projected rows to its own result table (cut
 * to the top N by a heap when ORDER BY has a LIMIT). At the end the tables
 * are merged, HAVING / ORDER BY / LIMIT applied, and the rows go to the sink
 * (an output format, sink/eng_out.c).
 */
#include "eng.h"
#include "eng_agg.h"
#include "eng_out.h"
#include "eng_plan.h"
#include "eng_source.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Rows of a decoded row group that go through the operators at a time: small
 * enough that every intermediate vector (predicate results, selection, group
 * ids) stays in the L2 cache between one operator and the next. */
#define ENG_SLICE_ROWS 16384

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the running statement ------------------------------------------------------ */

typedef struct equery {
    const eng_ctx *ctx;
    eng_mem mem;
    eng_settings set;
    eng_source *src;
    eng_plan plan;
    /* units */
    int n_units;
    _Atomic int next_unit;
    _Atomic int units_done;
    eng_scan_stats stats;
    _Atomic int stop;
    _Atomic int64_t rows_emitted; /* LIMIT without ORDER BY: early stop */
    pthread_mutex_t err_mu;
    int rc;
    char err[ENG_MSG_MAX];
    double t0;
} equery;

static void q_fail(equery *q, int rc, const char *msg)
{
    pthread_mutex_lock(&q->err_mu);
    if (!q->rc) {
        q->rc = rc;
        snprintf(q->err, sizeof(q->err), "%s", msg);
    }
    pthread_mutex_unlock(&q->err_mu);
    atomic_store(&q->stop, 1);
    q->src->ops->stop(q->src);
}

/* ---- result tables ------------------------------------------------------------- */

typedef struct rtab {
    int nc;
    ex_vec *c;
    uint32_t n, cap;
} rtab;

static int rtab_init(eng_mem *m, rtab *t, const ex_type *types, int nc)
{
    memset(t, 0, sizeof(*t));
    t->c = calloc((size_t)nc + 1, sizeof(ex_vec));
    if (!t->c)
        return -ENOMEM;
    t->nc = nc;
    for (int k = 0; k < nc; k++) {
        ex_type ty = types[k];
        ty.nullable = true; /* always keep a null map; cheap and simple */
        if (ex_vec_alloc(m, &t->c[k], ty, 0) < 0)
            return -ENOMEM;
        t->c[k].t = types[k];
        if (t->c[k].t.kind == EX_NOTHING)
            t->c[k].t.nullable = true;
    }
    t->cap = 1;
    return 0;
}

static void rtab_free(eng_mem *m, rtab *t)
{
    for (int k = 0; k < t->nc; k++)
        ex_vec_clear(m, &t->c[k]);
    free(t->c);
    memset(t, 0, sizeof(*t));
}

static int rtab_reserve(eng_mem *m, rtab *t, uint32_t need)
{
    if (need <= t->cap)
        return 0;
    uint32_t cap = t->cap * 2;
    while (cap < need)
        cap *= 2;
    for (int k = 0; k < t->nc; k++) {
        ex_vec *v = &t->c[k];
        void *p;
        if (v->t.kind == EX_FLOAT) {
            if (!(p = em_realloc(m, v->d, (size_t)cap * 8)))
                return -ENOMEM;
            v->d = p;
        } else if (v->t.kind == EX_STRING) {
            if (!(p = em_realloc(m, v->off, ((size_t)cap + 1) * 4)))
                return -ENOMEM;
            v->off = p;
        } else if (v->t.kind != EX_NOTHING) {
            if (!(p = em_realloc(m, v->i, (size_t)cap * 8)))
                return -ENOMEM;
            v->i = p;
        }
        if (!(p = em_realloc(m, v->nulls, cap)))
            return -ENOMEM;
        v->nulls = p;
    }
    t->cap = cap;
    return 0;
}

/* Appends row r of v to column k (row t->n). */
static int rtab_put(eng_mem *m, rtab *t, int k, const ex_vec *v, uint32_t r)
{
    ex_vec *c = &t->c[k];
    uint32_t at = t->n;
    bool nul = ex_null(v, r);
    c->nulls[at] = nul;
    if (c->t.kind == EX_STRING) {
        uint32_t l = 0;
        const uint8_t *s = nul ? (const uint8_t *)"" : ex_str(v, r, &l);
        return ex_vec_str_put(m, c, at, s, l);
    }
    if (c->t.kind == EX_FLOAT)
        c->d[at] = nul ? 0 : ex_f(v, r);
    else if (c->t.kind != EX_NOTHING)
        c->i[at] = nul || v->t.kind == EX_NOTHING ? 0 : v->i[ex_row(v, r)];
    return 0;
}

static int rtab_append(eng_mem *m, rtab *t, const ex_vec *vals, uint32_t n)
{
    if (rtab_reserve(m, t, t->n + n) < 0)
        return -ENOMEM;
    for (uint32_t r = 0; r < n; r++) {
        for (int k = 0; k < t->nc; k++)
            if (rtab_put(m, t, k, &vals[k], r) < 0)
                return -ENOMEM;
        t->n++;
    }
    return 0;
}

/* Keeps only rows idx[0..n) in that order. */
static int rtab_take(eng_mem *m, rtab *t, const uint32_t *idx, uint32_t n)
{
    rtab nt;
    ex_type *ty = calloc((size_t)t->nc + 1, sizeof(ex_type));
    if (!ty)
        return -ENOMEM;
    for (int k = 0; k < t->nc; k++)
        ty[k] = t->c[k].t;
    int rc = rtab_init(m, &nt, ty, t->nc);
    free(ty);
    if (rc < 0 || rtab_reserve(m, &nt, n) < 0) {
        rtab_free(m, &nt);
        return -ENOMEM;
    }
    for (uint32_t r = 0; r < n; r++) {
        for (int k = 0; k < t->nc; k++)
            if (rtab_put(m, &nt, k, &t->c[k], idx[r]) < 0) {
                rtab_free(m, &nt);
                return -ENOMEM;
            }
        nt.n++;
    }
    rtab_free(m, t);
    *t = nt;
    return 0;
}

/* ---- ordering ------------------------------------------------------------------ */

typedef struct ord_ctx {
    const rtab *t;
    const eng_plan *p;
    int first_key;   /* column of the first order key in t */
} ord_ctx;

static int cmp_rows(const ord_ctx *o, uint32_t a, uint32_t b)
{
    for (int k = 0; k < o->p->n_order; k++) {
        const eng_order *ord = &o->p->order[k];
        const ex_vec *v = &o->t->c[o->first_key + k];
        /* rank: 0 value, 1 NaN, 2 NULL (NULLS LAST); NULLS FIRST puts them first */
        int ra = ex_null(v, a) ? 2 : (v->t.kind == EX_FLOAT && isnan(v->d[a])) ? 1 : 0;
        int rb = ex_null(v, b) ? 2 : (v->t.kind == EX_FLOAT && isnan(v->d[b])) ? 1 : 0;
        if (ra != rb) {
            int c = ra < rb ? -1 : 1;
            return ord->nulls_first ? -c : c;
        }
        if (ra)
            continue;
        int c = 0;
        switch (v->t.kind) {
        case EX_STRING: {
            uint32_t la, lb;
            const uint8_t *x = ex_str(v, a, &la), *y = ex_str(v, b, &lb);
            uint32_t mn = la < lb ? la : lb;
            c = mn ? memcmp(x, y, mn) : 0;
            if (!c)
                c = la < lb ? -1 : la > lb;
            c = c < 0 ? -1 : c > 0;
            break;
        }
        case EX_FLOAT: c = v->d[a] < v->d[b] ? -1 : v->d[a] > v->d[b]; break;
        case EX_UINT: c = (uint64_t)v->i[a] < (uint64_t)v->i[b] ? -1 : (uint64_t)v->i[a] > (uint64_t)v->i[b]; break;
        case EX_NOTHING: c = 0; break;
        default: c = v->i[a] < v->i[b] ? -1 : v->i[a] > v->i[b]; break;
        }
        if (c)
            return ord->desc ? -c : c;
    }
    return a < b ? -1 : a > b; /* stable */
}

static int qcmp(const void *x, const void *y, void *arg)
{
    return cmp_rows(arg, *(const uint32_t *)x, *(const uint32_t *)y);
}

/* The first k rows in order, by a max-heap of size k (then sorted). *out is
 * malloc'ed; returns the count. */
static int64_t top_n(const ord_ctx *o, uint32_t n, uint64_t k, uint32_t **out)
{
    if (k > n)
        k = n;
    uint32_t *h = malloc(sizeof(uint32_t) * (k ? k : 1));
    if (!h)
        return -ENOMEM;
    if (k == n) {
        for (uint32_t r = 0; r < n; r++)
            h[r] = r;
    } else {
        uint32_t hn = 0;
        for (uint32_t r = 0; r < n; r++) {
            if (hn < k) {
                /* sift up */
                uint32_t i = hn++;
                h[i] = r;
                while (i > 0) {
                    uint32_t pa = (i - 1) / 2;
                    if (cmp_rows(o, h[pa], h[i]) >= 0)
                        break;
                    uint32_t s = h[pa];
                    h[pa] = h[i];
                    h[i] = s;
                    i = pa;
                }
            } else if (k > 0 && cmp_rows(o, r, h[0]) < 0) {
                h[0] = r;
                uint32_t i = 0;
                for (;;) {
                    uint32_t l = 2 * i + 1, rr = l + 1, mx = i;
                    if (l < hn && cmp_rows(o, h[l], h[mx]) > 0)
                        mx = l;
                    if (rr < hn && cmp_rows(o, h[rr], h[mx]) > 0)
                        mx = rr;
                    if (mx == i)
                        break;
                    uint32_t s = h[mx];
                    h[mx] = h[i];
                    h[i] = s;
                    i = mx;
                }
            }
        }
    }
    qsort_r(h, k, sizeof(uint32_t), qcmp, (void *)o);
    *out = h;
    return (int64_t)k;
}

/* Orders t by the plan (if it has ORDER BY) and cuts it to [offset, offset +
 * limit) when cut is set; with keep_only_top, cuts to the first offset+limit
 * rows (a worker's partial top-N). */
static int order_and_cut(eng_mem *m, rtab *t, const eng_plan *p, int first_key, bool final)
{
    uint64_t want = p->has_limit ? (uint64_t)p->offset + (uint64_t)p->limit : UINT64_MAX;
    if (p->has_limit && (uint64_t)p->limit > UINT64_MAX - (uint64_t)p->offset)
        want = UINT64_MAX;
    uint32_t *idx = NULL;
    int64_t n;
    if (p->n_order) {
        ord_ctx o = {t, p, first_key};
        n = top_n(&o, t->n, want, &idx);
        if (n < 0)
            return -ENOMEM;
    } else {
        n = (int64_t)(want < t->n ? want : t->n);
        idx = malloc(sizeof(uint32_t) * (size_t)(n ? n : 1));
        if (!idx)
            return -ENOMEM;
        for (int64_t r = 0; r < n; r++)
            idx[r] = (uint32_t)r;
    }
    uint32_t from = 0;
    if (final && p->offset > 0)
        from = (uint64_t)p->offset >= (uint64_t)n ? (uint32_t)n : (uint32_t)p->offset;
    int rc = 0;
    if (!(from == 0 && n == t->n && !p->n_order))
        rc = rtab_take(m, t, idx + from, (uint32_t)(n - from));
    free(idx);
    return rc;
}

/* ---- workers -------------------------------------------------------------------- */

typedef struct worker {
    equery *q;
    agg_tab *agg;
    rtab res;
    uint32_t *sel;
    uint32_t sel_cap;
    eng_reader *rd;           /* the source's state for this worker */
    char err[ENG_MSG_MAX];
} worker;

static int n_res_cols(const eng_plan *p)
{
    return p->n_outs + p->n_order;
}

/* Filter + aggregate or project one block of scan vectors. */
static int process(worker *w, ex_vec *in, uint32_t n)
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
    if (p->has_limit && !p->n_order &&
        atomic_load(&q->rows_emitted) >= p->offset + p->limit)
        return 0;
    int nc = n_res_cols(p);
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
    /* partial top-N: keep the table small */
    if (p->has_limit && p->n_order) {
        uint64_t want = (uint64_t)p->offset + (uint64_t)p->limit;
        if (want < (1u << 20) && w->res.n > 2 * want + 65536)
            rc = order_and_cut(&q->mem, &w->res, p, p->n_outs, false);
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
    for (uint32_t off = 0; rc == 0 && off < n; off += ENG_SLICE_ROWS) {
        uint32_t cnt = n - off < ENG_SLICE_ROWS ? n - off : ENG_SLICE_ROWS;
        if (off == 0 && cnt == n)
            return process(w, in, cnt);
        ex_vec *sl = calloc((size_t)ncols + 1, sizeof(ex_vec));
        if (!sl)
            return -ENOMEM;
        for (int k = 0; k < ncols; k++) {
            ex_vec *v = &sl[k], *x = &in[k];
            *v = *x;
            v->own = 0;
            v->n = cnt;
            if (x->i) v->i = x->i + off;
            if (x->d) v->d = x->d + off;
            if (x->off) v->off = x->off + off;
            if (x->idx) v->idx = x->idx + off;
            if (x->nulls) v->nulls = x->nulls + off;
        }
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

/* ---- progress --------------------------------------------------------------------- */

static void human_count(double v, char *buf, size_t cap)
{
    if (v >= 1e12)
        snprintf(buf, cap, "%.2f trillion", v / 1e12);
    else if (v >= 1e9)
        snprintf(buf, cap, "%.2f billion", v / 1e9);
    else if (v >= 1e6)
        snprintf(buf, cap, "%.2f million", v / 1e6);
    else if (v >= 1e3)
        snprintf(buf, cap, "%.2f thousand", v / 1e3);
    else
        snprintf(buf, cap, "%.0f", v);
}

static void human_bytes10(double v, char *buf, size_t cap)
{
    static const char *u[] = {"B", "KB", "MB", "GB", "TB", "PB"};
    int k = 0;
    while (v >= 1000 && k < 5) {
        v /= 1000;
        k++;
    }
    if (k == 0)
        snprintf(buf, cap, "%.0f %s", v, u[k]);
    else
        snprintf(buf, cap, "%.2f %s", v, u[k]);
}

static void human_bytes2(double v, char *buf, size_t cap)
{
    static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int k = 0;
    while (v >= 1024 && k < 4) {
        v /= 1024;
        k++;
    }
    snprintf(buf, cap, "%.2f %s", v, u[k]);
}

void eng_print_summary(FILE *f, const eng_result *r)
{
    char rows[64], bytes[64], rr[64], br[64], mem[64];
    double el = r->elapsed_s > 0 ? r->elapsed_s : 1e-9;
    human_count((double)r->rows_read, rows, sizeof(rows));
    human_bytes10((double)r->bytes_read, bytes, sizeof(bytes));
    human_count((double)r->rows_read / el, rr, sizeof(rr));
    human_bytes10((double)r->bytes_read / el, br, sizeof(br));
    human_bytes2((double)r->peak_memory, mem, sizeof(mem));
    fprintf(f, "%llu row%s in set. Elapsed: %.3f sec. Processed %s rows, %s (%s rows/s., %s/s.)\n"
               "Peak memory usage: %s.\n",
            (unsigned long long)r->rows_out, r->rows_out == 1 ? "" : "s", r->elapsed_s, rows,
            bytes, rr, br, mem);
}

static void progress_line(equery *q, bool clear)
{
    FILE *f = q->ctx->progress;
    if (!f)
        return;
    if (clear) {
        fputs("\r\033[K", f);
        fflush(f);
        return;
    }
    double el = now_s() - q->t0;
    char rows[64], bytes[64], rr[64], br[64];
    uint64_t r = atomic_load(&q->stats.rows_read), b = atomic_load(&q->stats.bytes_read);
    human_count((double)r, rows, sizeof(rows));
    human_bytes10((double)b, bytes, sizeof(bytes));
    human_count((double)r / (el > 0 ? el : 1), rr, sizeof(rr));
    human_bytes10((double)b / (el > 0 ? el : 1), br, sizeof(br));
    int pct = q->n_units ? (int)(100.0 * atomic_load(&q->units_done) / q->n_units) : 0;
    fprintf(f, "\r\033[K↓ Progress: %s rows, %s (%s rows/s., %s/s.) %3d%%", rows, bytes, rr, br,
            pct);
    fflush(f);
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
static int run_workers(equery *q, worker *ws, int nthreads)
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
        double t_first = now_s() + 0.5;
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
            if (rs.live > 0 && q->ctx->progress && now_s() > t_first) {
                pthread_mutex_unlock(&rs.mu);
                progress_line(q, false);
                drew = true;
                pthread_mutex_lock(&rs.mu);
            }
        }
        pthread_mutex_unlock(&rs.mu);
        if (drew)
            progress_line(q, true);
        for (int i = 0; i < started; i++)
            pthread_join(th[i], NULL);
    }
    pthread_mutex_destroy(&rs.mu);
    pthread_cond_destroy(&rs.cv);
    free(th);
    free(wa);
    return 0;
}

/* ---- statement ------------------------------------------------------------------- */

static void query_free(equery *q)
{
    eng_plan_free(&q->mem, &q->plan);
    eng_source_destroy(&q->src);
    pthread_mutex_destroy(&q->err_mu);
}

static int run_stmt(const eng_ctx *ctx, const sql_stmt *st, FILE *summary, eng_result *res,
                    char *err, size_t errlen)
{
    equery *q = calloc(1, sizeof(*q));
    if (!q) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    pthread_mutex_init(&q->err_mu, NULL);
    q->ctx = ctx;
    q->t0 = now_s();
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    q->set.max_threads = ctx->max_threads > 0 ? ctx->max_threads : (int)(cores > 0 ? cores : 1);
    q->set.max_download_threads = 4;
    q->set.max_download_buffer_size = 10ull << 20;
    int rc = eng_settings_apply(st, &q->set, err, errlen);
    if (rc < 0)
        goto out;
    if (q->set.max_threads <= 0)
        q->set.max_threads = (int)(cores > 0 ? cores : 1);
    q->mem.limit = q->set.max_memory_usage;
    eng_format ofmt = ctx->format ? ctx->format : ENG_FMT_TSV;
    if (st->format) {
        int f = eng_format_parse(st->format);
        if (f < 0) {
            snprintf(err, errlen, "unknown output format '%s' (use PrettyCompact, TSV, "
                                  "TSVWithNames, CSV, CSVWithNames, JSONEachRow or Null)",
                     st->format);
            rc = -EINVAL;
            goto out;
        }
        ofmt = (eng_format)f;
    }
    /* FROM: the table function's source, with its schema */
    eng_tf_call call = {st->from_fn, st->from_args, st->n_from_args, st->from_line, st->from_col};
    eng_scan_env env = {&q->mem, &q->set, ctx->list_s3, ctx->open_s3, ctx->s3_impl,
                        &q->stats, &q->stop};
    rc = eng_source_open(&call, &env, &q->src, err, errlen);
    if (rc < 0)
        goto out;
    const eng_schema *schema = &q->src->schema;
    eng_result r = {0};
    r.files = q->src->files;
    rc = 0;
    eng_out_table ot = {0};
    ex_vec *post = NULL;
    int n_post = 0;
    rtab final = {0};
    worker *ws = NULL;
    int nthreads = 0;
    if (st->kind == SQL_DESCRIBE) {
        /* name, type, default_type, default_expression, comment, codec_expression, ttl_expression */
        static const char *dn[] = {"name", "type", "default_type", "default_expression",
                                   "comment", "codec_expression", "ttl_expression"};
        ex_type ts[7];
        for (int k = 0; k < 7; k++)
            ts[k] = (ex_type){.kind = EX_STRING};
        if (rtab_init(&q->mem, &final, ts, 7) < 0 || rtab_reserve(&q->mem, &final, (uint32_t)schema->n) < 0) {
            rc = -ENOMEM;
            snprintf(err, errlen, "out of memory");
            goto done;
        }
        for (int i = 0; i < schema->n; i++) {
            char tn[96];
            ex_type_name(&schema->cols[i].t, tn, sizeof(tn));
            const char *vals[7] = {schema->cols[i].name, tn, "", "", "", "", ""};
            for (int k = 0; k < 7; k++) {
                final.c[k].nulls[final.n] = 0;
                if (ex_vec_str_put(&q->mem, &final.c[k], final.n, vals[k], strlen(vals[k])) < 0)
                    rc = -ENOMEM;
            }
            final.n++;
        }
        ot = (eng_out_table){.cols = final.c, .n_cols = 7, .n_rows = final.n, .names = dn};
        goto emit;
    }
    rc = eng_bind(&q->mem, st, schema, &q->plan, err, errlen);
    if (rc < 0)
        goto done;
    nthreads = q->set.max_threads;
    /* units */
    rc = q->src->ops->plan(q->src, &q->plan, err, errlen);
    if (rc < 0)
        goto done;
    q->n_units = rc;
    rc = 0;
    if (nthreads > q->n_units)
        nthreads = q->n_units > 0 ? q->n_units : 1;
    ws = calloc((size_t)nthreads, sizeof(worker));
    if (!ws) {
        rc = -ENOMEM;
        goto done;
    }
    int nrc = n_res_cols(&q->plan);
    ex_type *rtypes = calloc((size_t)nrc + 1, sizeof(ex_type));
    if (!rtypes) {
        rc = -ENOMEM;
        goto done;
    }
    for (int k = 0; k < nrc; k++)
        rtypes[k] = k < q->plan.n_outs ? q->plan.outs[k].e->t : q->plan.order[k - q->plan.n_outs].e->t;
    for (int i = 0; i < nthreads && rc == 0; i++) {
        ws[i].q = q;
        if (q->plan.aggregate)
            rc = agg_tab_create(&ws[i].agg, &q->mem, &q->plan);
        else
            rc = rtab_init(&q->mem, &ws[i].res, rtypes, nrc);
        if (rc == 0)
            rc = q->src->ops->reader_create(q->src, &ws[i].rd);
    }
    if (rc < 0) {
        free(rtypes);
        if (atomic_load(&q->mem.failed_at))
            em_error(&q->mem, err, errlen);
        else
            snprintf(err, errlen, "out of memory starting the workers");
        goto done;
    }
    q->src->ops->start(q->src);
    run_workers(q, ws, nthreads);
    q->src->ops->finish(q->src);
    for (int i = 0; i < nthreads; i++) {
        q->src->ops->reader_destroy(q->src, ws[i].rd);
        ws[i].rd = NULL;
    }
    if (q->rc) {
        rc = q->rc;
        snprintf(err, errlen, "%s", q->err);
        free(rtypes);
        goto done;
    }
    ex_ectx ec = {&q->mem, err, errlen};
    if (q->plan.aggregate) {
        for (int i = 1; i < nthreads && rc == 0; i++) {
            rc = agg_tab_merge(ws[0].agg, ws[i].agg, err, errlen);
            agg_tab_destroy(&ws[i].agg);
        }
        if (rc < 0) {
            free(rtypes);
            goto done;
        }
        n_post = q->plan.n_keys + q->plan.n_aggs;
        post = calloc((size_t)n_post + 1, sizeof(ex_vec));
        if (!post) {
            rc = -ENOMEM;
            free(rtypes);
            goto done;
        }
        int ng = agg_tab_finish(ws[0].agg, post, err, errlen);
        agg_tab_destroy(&ws[0].agg);
        if (ng < 0) {
            rc = ng;
            free(rtypes);
            goto done;
        }
        for (int k = 0; k < n_post; k++)
            post[k].n = (uint32_t)ng;
        uint32_t *sel = NULL, m = (uint32_t)ng;
        if (q->plan.having) {
            ex_vec hb;
            rc = bx_eval(&ec, q->plan.having, post, NULL, (uint32_t)ng, &hb);
            if (rc == 0) {
                sel = malloc(sizeof(uint32_t) * ((size_t)ng + 1));
                if (!sel)
                    rc = -ENOMEM;
                else
                    m = bx_select(&hb, NULL, (uint32_t)ng, sel);
                ex_vec_clear(&q->mem, &hb);
            }
        }
        if (rc == 0)
            rc = rtab_init(&q->mem, &final, rtypes, nrc);
        ex_vec *vals = calloc((size_t)nrc + 1, sizeof(ex_vec));
        int done = 0;
        if (!vals)
            rc = -ENOMEM;
        for (; rc == 0 && done < nrc; done++) {
            const bx *e = done < q->plan.n_outs ? q->plan.outs[done].e
                                                : q->plan.order[done - q->plan.n_outs].e;
            rc = bx_eval(&ec, e, post, sel, m, &vals[done]);
            if (rc < 0)
                break;
        }
        if (rc == 0)
            rc = rtab_append(&q->mem, &final, vals, m);
        for (int k = 0; k < done; k++)
            ex_vec_clear(&q->mem, &vals[k]);
        free(vals);
        free(sel);
    } else {
        final = ws[0].res;
        memset(&ws[0].res, 0, sizeof(ws[0].res));
        for (int i = 1; i < nthreads && rc == 0; i++) {
            rtab *t = &ws[i].res;
            if (rtab_reserve(&q->mem, &final, final.n + t->n) < 0) {
                rc = -ENOMEM;
                break;
            }
            for (uint32_t row = 0; row < t->n && rc == 0; row++) {
                for (int k = 0; k < final.nc && rc == 0; k++)
                    rc = rtab_put(&q->mem, &final, k, &t->c[k], row);
                final.n++;
            }
            rtab_free(&q->mem, t);
        }
    }
    free(rtypes);
    if (rc == 0)
        rc = order_and_cut(&q->mem, &final, &q->plan, q->plan.n_outs, true);
    if (rc < 0) {
        if (rc == -ENOMEM && atomic_load(&q->mem.failed_at))
            em_error(&q->mem, err, errlen);
        else if (rc == -ENOMEM)
            snprintf(err, errlen, "out of memory");
        goto done;
    }
    {
        const char **names = calloc((size_t)q->plan.n_outs + 1, sizeof(char *));
        if (!names) {
            rc = -ENOMEM;
            goto done;
        }
        for (int k = 0; k < q->plan.n_outs; k++)
            names[k] = q->plan.outs[k].name;
        ot = (eng_out_table){.cols = final.c, .n_cols = q->plan.n_outs, .n_rows = final.n,
                             .names = names};
    }
emit:
    if (rc == 0) {
        rc = eng_out_write(ctx->out, ofmt, &ot, err, errlen);
        r.rows_out = ot.n_rows;
    }
    if (st->kind != SQL_DESCRIBE)
        free((void *)ot.names);
done:
    if (ws) {
        for (int i = 0; i < nthreads; i++) {
            agg_tab_destroy(&ws[i].agg);
            rtab_free(&q->mem, &ws[i].res);
            free(ws[i].sel);
            if (ws[i].rd)
                q->src->ops->reader_destroy(q->src, ws[i].rd);
        }
        free(ws);
    }
    if (post) {
        for (int k = 0; k < n_post; k++)
            ex_vec_clear(&q->mem, &post[k]);
        free(post);
    }
    rtab_free(&q->mem, &final);
    r.rows_read = atomic_load(&q->stats.rows_read);
    r.bytes_read = atomic_load(&q->stats.bytes_read);
    r.row_groups = atomic_load(&q->stats.units_read);
    r.row_groups_pruned = atomic_load(&q->stats.units_pruned);
    r.peak_memory = atomic_load(&q->mem.peak);
    r.elapsed_s = now_s() - q->t0;
    if (rc == 0 && summary)
        eng_print_summary(summary, &r);
    if (res)
        *res = r;
out:
    query_free(q);
    free(q);
    return rc;
}

int eng_run(const eng_ctx *ctx, const char *sql, size_t len, FILE *summary, eng_result *res,
            char *err, size_t errlen)
{
    sql_stmt **st;
    int n = sql_parse_script(sql, len, &st, err, errlen);
    if (n < 0)
        return n;
    if (n == 0) {
        snprintf(err, errlen, "the query is empty: write a SELECT or DESCRIBE statement");
        return -EINVAL;
    }
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = run_stmt(ctx, st[i], summary, res, err, errlen);
    sql_script_free(&st, n);
    return rc;
}
