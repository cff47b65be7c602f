/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_result.c: the result stage of the executor: ORDER BY over a result
 * table (NULLs and NaNs ranked as ClickHouse ranks them, stable), the first N
 * rows by a max-heap of N when there is a LIMIT, LIMIT/OFFSET, and handing
 * the rows to the statement's sink in blocks of ENG_OUT_BLOCK_ROWS.
 */
#include "exec_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rows per block handed to the sink from a finished table. */
#define ENG_OUT_BLOCK_ROWS 65536

typedef struct ord_ctx {
    const rtab *t;
    const eng_plan *p;
    int first_key; /* column of the first order key in t */
} ord_ctx;

static int cmp_rows(const ord_ctx *o, uint32_t a, uint32_t b)
{
    for (int k = 0; k < o->p->n_order; k++) {
        const eng_order *ord = &o->p->order[k];
        if (ord->by_only)
            break;
        const ex_vec *v = &o->t->c[o->first_key + k];
        /* rank: 0 value, 1 NaN, 2 NULL (NULLS LAST); NULLS FIRST puts them first */
        int ra = ex_null(v, a) ? 2 : (v->t.kind == EX_FLOAT && isnan(v->d[ex_row(v, a)])) ? 1 : 0;
        int rb = ex_null(v, b) ? 2 : (v->t.kind == EX_FLOAT && isnan(v->d[ex_row(v, b)])) ? 1 : 0;
        if (ra != rb) {
            int c = ra < rb ? -1 : 1;
            return ord->nulls_first ? -c : c;
        }
        if (ra)
            continue;
        int c = rtab_cmp_values(v, a, b);
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
int eng__order_and_cut(eng_mem *m, rtab *t, const eng_plan *p, int first_key, bool final)
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

/* LIMIT [m,] n BY keys over the ordered t: keeps a key's rows m+1 .. m+n
 * (in order), then the LIMIT after it. The keys are the plan's by_only
 * order entries, at columns first_key + n_order - n_limit_by onwards. */
static int limit_by(eng_mem *m, rtab *t, const eng_plan *p, int first_key)
{
    int k0 = first_key + p->n_order - p->n_limit_by;
    uint32_t cap = 64;
    while (cap < t->n * 2u && cap < (1u << 31))
        cap *= 2;
    /* open addressing: hash and the row that holds the key first; counts per slot */
    uint64_t *hs = calloc(cap, sizeof(uint64_t));
    uint32_t *first = malloc(sizeof(uint32_t) * cap), *cnt = calloc(cap, sizeof(uint32_t));
    uint32_t *keep = malloc(sizeof(uint32_t) * (t->n ? t->n : 1)), nk = 0;
    int rc = 0;
    if (!hs || !first || !cnt || !keep) {
        rc = -ENOMEM;
        goto out;
    }
    uint64_t lo = (uint64_t)p->limit_by_offset, hi = lo + (uint64_t)p->limit_by_n;
    for (uint32_t r = 0; r < t->n; r++) {
        uint64_t h = 0x9e3779b97f4a7c15ull;
        for (int k = k0; k < t->nc; k++) {
            const ex_vec *v = &t->c[k];
            uint64_t x;
            if (ex_null(v, r)) {
                x = 0x6e756c6cull;
            } else if (ex_is_bytes(v->t.kind)) {
                uint32_t l;
                const uint8_t *s = ex_str(v, r, &l);
                x = 1469598103934665603ull;
                for (uint32_t i = 0; i < l; i++)
                    x = (x ^ s[i]) * 1099511628211ull;
            } else if (v->t.kind == EX_FLOAT) {
                double d = v->d[r] == 0 ? 0 : v->d[r];
                memcpy(&x, &d, 8);
            } else {
                x = (uint64_t)v->i[r];
            }
            h = (h ^ x) * 0xff51afd7ed558ccdull;
            h ^= h >> 29;
        }
        h |= 1;
        uint32_t s = (uint32_t)h & (cap - 1);
        for (;; s = (s + 1) & (cap - 1)) {
            if (!hs[s]) {
                hs[s] = h;
                first[s] = r;
                break;
            }
            if (hs[s] != h)
                continue;
            /* the same hash: the same key when every key column's value is */
            bool same = true;
            for (int k = k0; k < t->nc && same; k++) {
                const ex_vec *v = &t->c[k];
                uint32_t a = first[s];
                bool na = ex_null(v, a), nb = ex_null(v, r);
                if (na || nb) {
                    same = na == nb;
                } else if (ex_is_bytes(v->t.kind)) {
                    uint32_t la, lb;
                    const uint8_t *x = ex_str(v, a, &la), *y = ex_str(v, r, &lb);
                    same = la == lb && (la == 0 || memcmp(x, y, la) == 0);
                } else if (v->t.kind == EX_FLOAT) {
                    same = v->d[a] == v->d[r];
                } else {
                    same = v->i[a] == v->i[r];
                }
            }
            if (same)
                break;
        }
        uint32_t c = cnt[s]++;
        if (c >= lo && c < hi)
            keep[nk++] = r;
    }
    uint32_t from = 0, n = nk;
    if (p->lb_offset > 0)
        from = (uint64_t)p->lb_offset >= nk ? nk : (uint32_t)p->lb_offset;
    n = nk - from;
    if (p->lb_has_limit && (uint64_t)p->lb_limit < n)
        n = (uint32_t)p->lb_limit;
    rc = rtab_take(m, t, keep + from, n);
out:
    free(hs);
    free(first);
    free(cnt);
    free(keep);
    return rc;
}

/* ---- to the sink ------------------------------------------------------------------ */

static int out_begin(eng_output *o, char *err, size_t errlen)
{
    if (o->begun)
        return 0;
    o->begun = true;
    return o->sink->ops->begin(o->sink, o->names, o->types, o->n_cols, err, errlen);
}

int eng__out_rows(eng_output *o, const ex_vec *cols, uint32_t n, char *err, size_t errlen)
{
    int rc = out_begin(o, err, errlen);
    if (rc < 0 || n == 0)
        return rc;
    eng_block b = {cols, o->n_cols, n};
    rc = o->sink->ops->write(o->sink, &b, err, errlen);
    if (rc == 0)
        o->rows += n;
    return rc;
}

int eng__out_table(eng_output *o, const rtab *t, char *err, size_t errlen)
{
    if (t->n <= ENG_OUT_BLOCK_ROWS)
        return eng__out_rows(o, t->c, t->n, err, errlen);
    ex_vec *v = calloc((size_t)o->n_cols + 1, sizeof(ex_vec));
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int rc = 0;
    for (uint32_t off = 0; rc == 0 && off < t->n; off += ENG_OUT_BLOCK_ROWS) {
        uint32_t cnt = t->n - off < ENG_OUT_BLOCK_ROWS ? t->n - off : ENG_OUT_BLOCK_ROWS;
        for (int k = 0; k < o->n_cols; k++)
            ex_vec_view(&t->c[k], off, cnt, &v[k]);
        rc = eng__out_rows(o, v, cnt, err, errlen);
    }
    free(v);
    return rc;
}

int eng__out_end(eng_output *o, const eng_sink_stats *st, char *err, size_t errlen)
{
    int rc = out_begin(o, err, errlen);
    if (rc < 0)
        return rc;
    if (st && o->sink->stats)
        o->sink->stats(o->sink, st);
    return o->sink->ops->end(o->sink, err, errlen);
}

/* ---- streaming ---------------------------------------------------------------------- */

int eng__stream_rows(equery *q, const rtab *t, char *err, size_t errlen)
{
    int rc = 0;
    pthread_mutex_lock(&q->out_mu);
    uint32_t from = 0, n = t->n;
    if (q->out_skip) {
        uint32_t k = q->out_skip < n ? (uint32_t)q->out_skip : n;
        q->out_skip -= k;
        from = k;
        n -= k;
    }
    if (n > q->out_left)
        n = (uint32_t)q->out_left;
    if (n) {
        q->out_left -= n;
        eng__progress_clear_locked(q); /* rows may go to the same terminal */
        if (from == 0) {
            rc = eng__out_rows(&q->out, t->c, n, err, errlen);
        } else {
            ex_vec *v = calloc((size_t)q->out.n_cols + 1, sizeof(ex_vec));
            if (!v) {
                rc = -ENOMEM;
                snprintf(err, errlen, "out of memory");
            }
            for (int k = 0; v && k < q->out.n_cols; k++)
                ex_vec_view(&t->c[k], from, n, &v[k]);
            if (v)
                rc = eng__out_rows(&q->out, v, n, err, errlen);
            free(v);
        }
    }
    pthread_mutex_unlock(&q->out_mu);
    return rc;
}

/* ---- the materialised result ----------------------------------------------------------- */

/* Past this many groups for each row ORDER BY ... LIMIT keeps, the groups
 * are ranked before their output columns are made (top_groups). */
#define TOP_GROUPS_FACTOR 4

/* ORDER BY ... LIMIT n over many groups: ranks the groups by the ORDER BY's
 * values alone and cuts *sel (NULL: all *m groups) to the first offset + n of
 * them, in order, so the output columns are made for those rows only and not
 * for every group (a million groups and LIMIT 10 copy ten keys, not a
 * million). The ranking is the final one's (eng__order_and_cut sorts the
 * rows kept again, ties in the same order), so the answer is the same. */
static int top_groups(equery *q, ex_ectx *ec, const ex_vec *post, uint32_t **sel, uint32_t *m)
{
    const eng_plan *p = &q->plan;
    if (!p->has_limit || p->n_order == 0 || p->n_limit_by > 0)
        return 0;
    uint64_t want = (uint64_t)p->offset + (uint64_t)p->limit;
    if (p->limit < 0 || p->offset < 0 || want > *m / TOP_GROUPS_FACTOR)
        return 0;
    /* the ORDER BY's values, as eng__order_and_cut reads them: columns
     * n_outs onwards of a table (those before it are not touched) */
    ex_vec *ov = calloc((size_t)p->n_outs + (size_t)p->n_order + 1, sizeof(ex_vec));
    int rc = ov ? 0 : -ENOMEM, done = 0;
    for (; rc == 0 && done < p->n_order; done++)
        if ((rc = bx_eval(ec, p->order[done].e, post, *sel, *m, &ov[p->n_outs + done])) < 0)
            break;
    if (rc == 0) {
        rtab view = {.nc = p->n_outs + p->n_order, .c = ov, .n = *m};
        ord_ctx o = {&view, p, p->n_outs};
        uint32_t *idx;
        int64_t k = top_n(&o, *m, want, &idx);
        if (k < 0) {
            rc = -ENOMEM;
        } else {
            for (int64_t r = 0; r < k; r++)
                idx[r] = *sel ? (*sel)[idx[r]] : idx[r];
            free(*sel);
            *sel = idx;
            *m = (uint32_t)k;
        }
    }
    for (int j = 0; j < done; j++)
        ex_vec_clear(&q->mem, &ov[p->n_outs + j]);
    free(ov);
    return rc;
}

/* HAVING and the SELECT list (with the ORDER BY keys) evaluated over the
 * groups of *tp, appended to final; *tp is destroyed. */
static int emit_groups(equery *q, agg_tab **tp, rtab *final, char *err, size_t errlen)
{
    ex_ectx ec = {&q->mem, err, errlen};
    int rc = 0, nrc = eng__n_res_cols(&q->plan);
    int n_post = q->plan.n_keys + q->plan.n_aggs;
    ex_vec *post = calloc((size_t)n_post + 1, sizeof(ex_vec));
    if (!post)
        return -ENOMEM;
    int ng = agg_tab_finish(*tp, post, err, errlen);
    agg_tab_destroy(tp);
    if (ng < 0) {
        free(post);
        return ng;
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
        rc = top_groups(q, &ec, post, &sel, &m);
    ex_vec *vals = calloc((size_t)nrc + 1, sizeof(ex_vec));
    int done = 0;
    if (!vals)
        rc = -ENOMEM;
    for (; rc == 0 && done < nrc; done++) {
        const bx *e =
            done < q->plan.n_outs ? q->plan.outs[done].e : q->plan.order[done - q->plan.n_outs].e;
        rc = bx_eval(&ec, e, post, sel, m, &vals[done]);
        if (rc < 0)
            break;
    }
    if (rc == 0)
        rc = rtab_append(&q->mem, final, vals, m);
    for (int k = 0; k < done; k++)
        ex_vec_clear(&q->mem, &vals[k]);
    free(vals);
    free(sel);
    for (int k = 0; k < n_post; k++)
        ex_vec_clear(&q->mem, &post[k]);
    free(post);
    return rc;
}

/* Past this many groups in the workers' tables, and with three workers or
 * more, they are merged by partitions in parallel: each thread takes the
 * groups of every table whose key falls in its partition into a table of its
 * own, so no key is in two of them and each is finished on its own. Below
 * it, merging one table into the first costs less than starting threads.
 * Two workers' tables merge into the first: with G groups in each, one
 * thread inserts G into a table that holds most of them already, where two
 * threads by partitions would each insert about G into new tables, as long
 * in all and twice the work. From three workers on, the partitions take G
 * each against (workers - 1) x G. */
#define AGG_PAR_MIN_GROUPS  65536u
#define AGG_PAR_MIN_WORKERS 3

int eng__fan_out(void *(*fn)(void *), void *jobs, size_t job_size, int n)
{
    pthread_t *th = calloc((size_t)n, sizeof(*th));
    bool *started = calloc((size_t)n, sizeof(*started));
    if (!th || !started) {
        free(th);
        free(started);
        return -ENOMEM;
    }
    uint8_t *j = jobs;
    for (int k = 1; k < n; k++)
        started[k] = pthread_create(&th[k], NULL, fn, j + (size_t)k * job_size) == 0;
    fn(j);
    for (int k = 1; k < n; k++) {
        if (started[k])
            pthread_join(th[k], NULL);
        else
            fn(j + (size_t)k * job_size); /* no thread: this one does it */
    }
    free(th);
    free(started);
    return 0;
}

typedef struct part_job {
    worker *ws;
    int nthreads;
    uint32_t part, nparts;
    agg_tab *dst;
    int rc;
    char err[ENG_MSG_MAX];
} part_job;

static void *part_main(void *arg)
{
    part_job *j = arg;
    for (int i = 0; i < j->nthreads && j->rc == 0; i++)
        j->rc =
            agg_tab_merge_part(j->dst, j->ws[i].agg, j->part, j->nparts, j->err, sizeof(j->err));
    return NULL;
}

static int merge_parts(equery *q, worker *ws, int nthreads, rtab *final, char *err, size_t errlen)
{
    part_job *jobs = calloc((size_t)nthreads, sizeof(*jobs));
    int rc = jobs ? 0 : -ENOMEM;
    /* each partition holds at least its share of the largest table's
     * groups (about that when every worker saw every key) */
    uint32_t most = 0;
    for (int i = 0; i < nthreads; i++)
        if (agg_tab_groups(ws[i].agg) > most)
            most = agg_tab_groups(ws[i].agg);
    for (int j = 0; j < nthreads && rc == 0; j++) {
        jobs[j] = (part_job){
            .ws = ws, .nthreads = nthreads, .part = (uint32_t)j, .nparts = (uint32_t)nthreads};
        rc = agg_tab_create(&jobs[j].dst, &q->mem, &q->plan);
        if (rc == 0)
            rc = agg_tab_reserve(jobs[j].dst, most / (uint32_t)nthreads);
    }
    if (rc == 0)
        rc = eng__fan_out(part_main, jobs, sizeof(*jobs), nthreads);
    if (rc < 0)
        snprintf(err, errlen, "out of memory merging the GROUP BY's partitions");
    if (rc == 0) {
        for (int j = 0; j < nthreads && rc == 0; j++)
            if (jobs[j].rc < 0) {
                rc = jobs[j].rc;
                snprintf(err, errlen, "%s", jobs[j].err);
            }
    }
    for (int i = 0; i < nthreads; i++)
        agg_tab_destroy(&ws[i].agg);
    for (int j = 0; jobs && j < nthreads; j++) {
        if (rc == 0)
            rc = emit_groups(q, &jobs[j].dst, final, err, errlen);
        agg_tab_destroy(&jobs[j].dst);
    }
    free(jobs);
    return rc;
}

typedef struct sets_job {
    agg_sets *sm;
    uint32_t part;
} sets_job;

static void *sets_main(void *arg)
{
    sets_job *j = arg;
    agg_sets_part(j->sm, j->part);
    return NULL;
}

/* No GROUP BY: the one group's large value sets (count(DISTINCT) of many
 * values) merged by nthreads threads, each taking its ranges of the merged
 * sets from every worker's; the rest of the states merge after, in one
 * thread (agg_tab_merge). */
static int merge_sets(worker *ws, int nthreads, char *err, size_t errlen)
{
    agg_tab **tabs = calloc((size_t)nthreads, sizeof(*tabs));
    sets_job *jobs = calloc((size_t)nthreads, sizeof(*jobs));
    agg_sets *sm = NULL;
    int rc = tabs && jobs ? 0 : -ENOMEM;
    if (rc < 0)
        snprintf(err, errlen, "out of memory merging the workers' sets");
    for (int i = 0; i < nthreads && rc == 0; i++)
        tabs[i] = ws[i].agg;
    if (rc == 0)
        rc = agg_sets_begin(&sm, tabs, nthreads, (uint32_t)nthreads, err, errlen);
    if (rc == 0 && sm) {
        for (int j = 0; j < nthreads; j++)
            jobs[j] = (sets_job){.sm = sm, .part = (uint32_t)j};
        if (eng__fan_out(sets_main, jobs, sizeof(*jobs), nthreads) < 0) {
            agg_sets_free(&sm);
            rc = -ENOMEM;
            snprintf(err, errlen, "out of memory merging the workers' sets");
        } else {
            rc = agg_sets_end(&sm, err, errlen);
        }
    }
    free(tabs);
    free(jobs);
    return rc;
}

/* GROUP BY: the workers' tables merged (into the first, or by partitions
 * when they hold many groups), then emit_groups. */
static int finish_aggregate(equery *q, worker *ws, int nthreads, rtab *final, char *err,
                            size_t errlen)
{
    int rc = rtab_init(&q->mem, final, q->rtypes, eng__n_res_cols(&q->plan));
    if (rc < 0)
        return rc;
    uint64_t groups = 0;
    eng_agg_size size = {0, 0, (uint32_t)nthreads};
    for (int i = 0; i < nthreads; i++) {
        uint32_t g = agg_tab_groups(ws[i].agg);
        groups += g;
        size.worker_max = g > size.worker_max ? g : size.worker_max;
    }
    if (nthreads >= AGG_PAR_MIN_WORKERS && q->plan.n_keys > 0 && groups >= AGG_PAR_MIN_GROUPS) {
        eng__agg_hint_keep(q, &size); /* the partitions size themselves */
        return merge_parts(q, ws, nthreads, final, err, errlen);
    }
    if (nthreads > 1 && q->plan.n_keys == 0)
        rc = merge_sets(ws, nthreads, err, errlen);
    if (rc == 0 && nthreads > 1) /* the merged table sized once for its last count */
        eng__agg_hint_merged(q, ws[0].agg);
    for (int i = 1; i < nthreads && rc == 0; i++) {
        rc = agg_tab_merge(ws[0].agg, ws[i].agg, err, errlen);
        agg_tab_destroy(&ws[i].agg);
    }
    if (rc < 0)
        return rc;
    size.total = agg_tab_groups(ws[0].agg);
    eng__agg_hint_keep(q, &size);
    return emit_groups(q, &ws[0].agg, final, err, errlen);
}

/* ORDER BY: the workers' tables (each already cut to its top N when there is
 * a LIMIT) one after the other. */
static int finish_concat(equery *q, worker *ws, int nthreads, rtab *final)
{
    int rc = 0;
    *final = ws[0].res;
    memset(&ws[0].res, 0, sizeof(ws[0].res));
    for (int i = 1; i < nthreads && rc == 0; i++) {
        rtab *t = &ws[i].res;
        if (rtab_reserve(&q->mem, final, final->n + t->n) < 0) {
            rc = -ENOMEM;
            break;
        }
        for (uint32_t row = 0; row < t->n && rc == 0; row++) {
            for (int k = 0; k < final->nc && rc == 0; k++)
                rc = rtab_put(&q->mem, final, k, &t->c[k], row);
            final->n++;
        }
        rtab_free(&q->mem, t);
    }
    return rc;
}

int eng__finish_result(equery *q, worker *ws, int nthreads, char *err, size_t errlen)
{
    rtab final = {0};
    if (errlen)
        err[0] = 0;
    int rc = q->plan.aggregate ? finish_aggregate(q, ws, nthreads, &final, err, errlen)
                               : finish_concat(q, ws, nthreads, &final);
    if (rc == 0)
        rc = eng__order_and_cut(&q->mem, &final, &q->plan, q->plan.n_outs, true);
    if (rc == 0 && q->plan.n_limit_by)
        rc = limit_by(&q->mem, &final, &q->plan, q->plan.n_outs);
    if (rc < 0) {
        if (rc == -ENOMEM && atomic_load(&q->mem.failed_at))
            em_error(&q->mem, err, errlen);
        else if (rc == -ENOMEM && !err[0])
            snprintf(err, errlen, "out of memory");
    }
    if (rc == 0)
        rc = eng__out_table(&q->out, &final, err, errlen);
    rtab_free(&q->mem, &final);
    return rc;
}
