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
#include "exec_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- statement ------------------------------------------------------------------- */

/* The sink of the statement's format: the caller's, or the format's own on
 * the caller's writer (else its FILE). */
static int open_sink(const eng_ctx *ctx, eng_format fmt, eng_sink **out, char *err, size_t errlen)
{
    if (ctx->open_sink)
        return ctx->open_sink(ctx->sink_arg, fmt, out, err, errlen);
    eng_writer w;
    if (ctx->writer)
        w = *ctx->writer;
    else
        eng_writer_stdio(&w, ctx->out);
    int rc = eng_sink_format_create(out, fmt, &w);
    if (rc < 0)
        snprintf(err, errlen, "out of memory");
    return rc;
}

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
    q->t0 = eng__now_s();
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
    eng_output ot = {0};
    ex_type *otypes = NULL;
    ex_vec *post = NULL;
    int n_post = 0;
    rtab final = {0};
    worker *ws = NULL;
    int nthreads = 0;
    ex_type ts[7];
    if (st->kind == SQL_DESCRIBE) {
        /* name, type, default_type, default_expression, comment, codec_expression, ttl_expression */
        static const char *dn[] = {"name", "type", "default_type", "default_expression",
                                   "comment", "codec_expression", "ttl_expression"};
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
        ot = (eng_output){.names = dn, .types = ts, .n_cols = 7};
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
    int nrc = eng__n_res_cols(&q->plan);
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
    eng__run_workers(q, ws, nthreads);
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
        rc = eng__order_and_cut(&q->mem, &final, &q->plan, q->plan.n_outs, true);
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
        otypes = calloc((size_t)q->plan.n_outs + 1, sizeof(ex_type));
        if (!otypes) {
            free(names);
            rc = -ENOMEM;
            goto done;
        }
        for (int k = 0; k < q->plan.n_outs; k++) {
            names[k] = q->plan.outs[k].name;
            otypes[k] = q->plan.outs[k].e->t;
        }
        ot = (eng_output){.names = names, .types = otypes, .n_cols = q->plan.n_outs};
    }
emit:
    if (rc == 0)
        rc = open_sink(ctx, ofmt, &ot.sink, err, errlen);
    if (rc == 0)
        rc = eng__out_table(&ot, &final, err, errlen);
    if (rc == 0)
        rc = eng__out_end(&ot, err, errlen);
    r.rows_out = ot.rows;
    eng_sink_destroy(&ot.sink);
    if (st->kind != SQL_DESCRIBE)
        free((void *)ot.names);
    free(otypes);
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
    r.elapsed_s = eng__now_s() - q->t0;
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
