/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_partial.c: a SELECT up to its mergeable state and back (eng_partial.h).
 * The stages are eng_exec.c's: the workers' tables are merged here into the
 * pstate's one table instead of being finished; the initiator's finish hands
 * the merged table to the result stage (eng_result.c) as the table of a
 * single worker, so HAVING, ORDER BY and LIMIT run exactly as they do for a
 * query on one server.
 */
#include "eng_partial.h"

#include "exec_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

/* Body kinds. */
enum { PS_AGG = 1, PS_ROWS = 2 };

struct eng_pstate {
    equery *q;
    sql_stmt **st;
    int n_st;
    eng_format fmt;
    agg_tab *agg; /* aggregate: the merged groups */
    rtab rows;    /* else: the rows (cut to the top N with a LIMIT) */
    uint64_t more_rows, more_bytes;
    bool insert; /* INSERT ... SELECT: the SELECT's source, for its units */
};

static int oom(char *err, size_t errlen)
{
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
}

void eng_pstate_destroy(eng_pstate **pp)
{
    if (!pp || !*pp)
        return;
    eng_pstate *ps = *pp;
    if (ps->q) {
        agg_tab_destroy(&ps->agg);
        rtab_free(&ps->q->mem, &ps->rows);
        eng__query_free(ps->q);
    }
    if (ps->st)
        sql_script_free(&ps->st, ps->n_st);
    free(ps);
    *pp = NULL;
}

int eng_pstate_open(const eng_ctx *ctx, const char *sql, size_t len, eng_pstate **out, char *err,
                    size_t errlen)
{
    *out = NULL;
    eng_pstate *ps = calloc(1, sizeof(*ps));
    if (!ps)
        return oom(err, errlen);
    int rc = sql_parse_script(sql, len, &ps->st, err, errlen);
    if (rc < 0) {
        free(ps);
        return rc;
    }
    ps->n_st = rc;
    const sql_stmt *st = ps->n_st == 1 ? ps->st[0] : NULL;
    if (st && st->kind == SQL_INSERT && st->insert && st->insert->select) {
        ps->insert = true;
        st = st->insert->select;
    }
    if (!st || st->kind != SQL_SELECT || eng__is_table_stmt(st)) {
        snprintf(err, errlen,
                 "a distributed query is one SELECT statement, or one INSERT ... SELECT");
        eng_pstate_destroy(&ps);
        return -ENOTSUP;
    }
    if (!(ps->q = eng__query_create(ctx))) {
        eng_pstate_destroy(&ps);
        return oom(err, errlen);
    }
    equery *q = ps->q;
    rc = eng__stmt_settings(q, st, &ps->fmt, err, errlen);
    if (rc == 0 && ps->insert) /* INSERT ... SETTINGS ... SELECT */
        rc = eng_settings_apply(ps->st[0], &q->set, err, errlen);
    if (rc == 0)
        rc = eng__stmt_source(q, st, err, errlen);
    if (rc == 0)
        rc = eng_bind(&q->mem, st, &q->src->schema, &q->plan, err, errlen);
    if (rc == 0 && (rc = q->src->ops->plan(q->src, &q->plan, err, errlen)) >= 0) {
        q->n_units = rc;
        rc = 0;
    }
    const eng_plan *p = &q->plan;
    int nrc = rc == 0 ? eng__n_res_cols(p) : 0;
    if (rc == 0 && !(q->rtypes = calloc((size_t)nrc + 1, sizeof(ex_type))))
        rc = oom(err, errlen);
    for (int k = 0; rc == 0 && k < nrc; k++)
        q->rtypes[k] = k < p->n_outs ? p->outs[k].e->t : p->order[k - p->n_outs].e->t;
    if (rc == 0 && (p->aggregate ? agg_tab_create(&ps->agg, &q->mem, p)
                                 : rtab_init(&q->mem, &ps->rows, q->rtypes, nrc)) < 0)
        rc = oom(err, errlen);
    if (rc < 0) {
        eng_pstate_destroy(&ps);
        return rc;
    }
    *out = ps;
    return 0;
}

static void fp_type(XXH3_state_t *h, const ex_type *t)
{
    uint8_t x[6] = {t->kind, t->nullable, t->scale, t->bits, t->utc, t->prec};
    XXH3_64bits_update(h, x, sizeof(x));
}

uint64_t eng_pstate_fingerprint(const eng_pstate *ps)
{
    const eng_plan *p = &ps->q->plan;
    XXH3_state_t h;
    XXH3_64bits_reset(&h);
    int32_t shape[4] = {p->aggregate, p->n_keys, p->n_aggs, eng__n_res_cols(p)};
    XXH3_64bits_update(&h, shape, sizeof(shape));
    for (int k = 0; k < p->n_keys; k++)
        fp_type(&h, &p->keys[k]->t);
    for (int a = 0; a < p->n_aggs; a++) {
        const eng_agg *ag = &p->aggs[a];
        uint8_t fn[3] = {(uint8_t)ag->fn, ag->distinct, ag->cond != NULL};
        XXH3_64bits_update(&h, fn, sizeof(fn));
        XXH3_64bits_update(&h, &ag->level, sizeof(ag->level));
        fp_type(&h, &ag->t);
        if (ag->arg)
            fp_type(&h, &ag->arg->t);
        if (ag->arg2)
            fp_type(&h, &ag->arg2->t);
    }
    for (int k = 0; k < eng__n_res_cols(p); k++)
        fp_type(&h, &ps->q->rtypes[k]);
    return XXH3_64bits_digest(&h);
}

const eng_cluster *eng_pstate_cluster(const eng_pstate *ps)
{
    return ps->q->src->cluster;
}

bool eng_pstate_is_insert(const eng_pstate *ps)
{
    return ps->insert;
}

const eng_settings *eng_pstate_settings(const eng_pstate *ps)
{
    return &ps->q->set;
}

int eng_pstate_units(const eng_pstate *ps)
{
    return ps->q->src->ops->unit_info ? ps->q->n_units : -ENOTSUP;
}

int eng_pstate_unit_info(const eng_pstate *ps, int u, eng_unit_info *out)
{
    const eng_source *s = ps->q->src;
    return s->ops->unit_info ? s->ops->unit_info(s, u, out) : -ENOTSUP;
}

/* Keeps a rows state at its first OFFSET + LIMIT in ORDER BY (or in arrival
 * order without one): what any final answer can need of it. */
static int rows_cut(eng_pstate *ps, bool always)
{
    const eng_plan *p = &ps->q->plan;
    if (!p->has_limit)
        return 0;
    uint64_t want = (uint64_t)p->offset + (uint64_t)p->limit;
    if (!always && ps->rows.n <= 2 * want + 65536)
        return 0;
    return eng__order_and_cut(&ps->q->mem, &ps->rows, p, p->n_outs, false);
}

int eng_pstate_run(eng_pstate *ps, char *err, size_t errlen)
{
    equery *q = ps->q;
    q->stream = false; /* the rows stay in the workers' tables */
    q->out_left = UINT64_MAX;
    worker *ws;
    int n;
    int rc = eng__execute(q, &ws, &n, err, errlen);
    for (int i = 0; rc == 0 && i < n; i++) {
        if (q->plan.aggregate) {
            rc = agg_tab_merge(ps->agg, ws[i].agg, err, errlen);
            continue;
        }
        rtab *t = &ws[i].res;
        if (rtab_reserve(&q->mem, &ps->rows, ps->rows.n + t->n) < 0)
            rc = -ENOMEM;
        for (uint32_t r = 0; rc == 0 && r < t->n; r++) {
            for (int k = 0; k < t->nc && rc == 0; k++)
                rc = rtab_put(&q->mem, &ps->rows, k, &t->c[k], r);
            ps->rows.n++;
        }
        rtab_free(&q->mem, t);
    }
    if (rc == 0 && !q->plan.aggregate)
        rc = rows_cut(ps, true);
    eng__workers_free(q, ws, n);
    if (rc == -ENOMEM) {
        if (atomic_load(&q->mem.failed_at))
            em_error(&q->mem, err, errlen);
        else
            snprintf(err, errlen, "out of memory merging the partial state");
    }
    return rc;
}

void eng_pstate_stats(const eng_pstate *ps, uint64_t *rows, uint64_t *bytes)
{
    *rows = atomic_load(&ps->q->stats.rows_read);
    *bytes = atomic_load(&ps->q->stats.bytes_read);
}

void eng_pstate_add_stats(eng_pstate *ps, uint64_t rows, uint64_t bytes)
{
    ps->more_rows += rows;
    ps->more_bytes += bytes;
}

int eng_pstate_encode(const eng_pstate *ps, ew_buf *b)
{
    if (ps->q->plan.aggregate) {
        ew_u8(b, PS_AGG);
        return agg_tab_encode(ps->agg, b);
    }
    ew_u8(b, PS_ROWS);
    return rtab_encode(&ps->rows, b);
}

int eng_pstate_merge(eng_pstate *ps, er_buf *r, char *err, size_t errlen)
{
    equery *q = ps->q;
    uint8_t kind = er_u8(r);
    if (r->err || kind != (q->plan.aggregate ? PS_AGG : PS_ROWS)) {
        er_fail(r);
        snprintf(err, errlen,
                 "a partial state is malformed (its kind): the sending server "
                 "runs another version or the bytes were damaged");
        return -EBADMSG;
    }
    int rc;
    if (kind == PS_AGG) {
        rc = agg_tab_decode_merge(ps->agg, r, err, errlen);
    } else {
        rc = rtab_decode_append(&q->mem, &ps->rows, r);
        if (rc == -EBADMSG)
            snprintf(err, errlen,
                     "a partial state's rows are malformed: the sending server "
                     "runs another version or the bytes were damaged");
        else if (rc < 0)
            oom(err, errlen);
        if (rc == 0 && rows_cut(ps, false) < 0)
            rc = oom(err, errlen);
    }
    if (rc == 0 && er_left(r)) {
        er_fail(r);
        snprintf(err, errlen,
                 "a partial state has %zu bytes after its end: the sending server "
                 "runs another version or the bytes were damaged",
                 er_left(r));
        return -EBADMSG;
    }
    return rc;
}

int eng_pstate_finish(eng_pstate *ps, eng_result *res, char *err, size_t errlen)
{
    equery *q = ps->q;
    const eng_plan *p = &q->plan;
    const char **names = calloc((size_t)p->n_outs + 1, sizeof(char *));
    if (!names)
        return oom(err, errlen);
    for (int k = 0; k < p->n_outs; k++)
        names[k] = p->outs[k].name;
    int rc = eng__stmt_output(q, ps->fmt, names, q->rtypes, p->n_outs, err, errlen);
    free(names);
    if (rc == 0) {
        /* the merged state is the one worker's table the result stage takes */
        worker w = {.q = q, .agg = ps->agg, .res = ps->rows};
        ps->agg = NULL;
        memset(&ps->rows, 0, sizeof(ps->rows));
        rc = eng__finish_result(q, &w, 1, err, errlen);
        agg_tab_destroy(&w.agg);
        rtab_free(&q->mem, &w.res);
    }
    if (rc == 0) {
        eng_sink_stats ss = {eng__now_s() - q->t0, atomic_load(&q->stats.rows_read) + ps->more_rows,
                             atomic_load(&q->stats.bytes_read) + ps->more_bytes};
        rc = eng__out_end(&q->out, &ss, err, errlen);
    }
    if (res) {
        memset(res, 0, sizeof(*res));
        res->rows_out = q->out.rows;
        res->files = q->src->files;
        res->rows_read = atomic_load(&q->stats.rows_read) + ps->more_rows;
        res->bytes_read = atomic_load(&q->stats.bytes_read) + ps->more_bytes;
        res->peak_memory = atomic_load(&q->mem.peak);
        res->elapsed_s = eng__now_s() - q->t0;
    }
    return rc;
}
