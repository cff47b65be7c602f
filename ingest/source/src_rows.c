/* SPDX-License-Identifier: Apache-2.0
 *
 * src_rows.c: a source over rows already in memory (eng_source_rows_create):
 * the tables a server fills from its own state when a query names them
 * (system.query_log, system.processes, system.settings, ...). The columns are
 * whole vectors, taken at creation; a unit is a block of up to 65536 rows,
 * handed to the workers as views of those vectors.
 */
#include "eng_source.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS_BLOCK 65536u

typedef struct rows_source {
    eng_source base;
    eng_scan_env env;
    ex_vec *cols; /* schema.n vectors of n rows */
    uint32_t n;
    int *need; /* the plan's scan slots -> columns */
    int n_need;
} rows_source;

struct eng_reader {
    ex_vec *views;
};

static int rows_plan(eng_source *b, const eng_plan *p, char *err, size_t errlen)
{
    rows_source *s = (rows_source *)b;
    free(s->need);
    s->need = calloc((size_t)p->n_need + 1, sizeof(int));
    if (!s->need) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    if (p->n_need > 0) /* count(): no column needed, p->need may be NULL */
        memcpy(s->need, p->need, sizeof(int) * (size_t)p->n_need);
    s->n_need = p->n_need;
    return (int)((s->n + ROWS_BLOCK - 1) / ROWS_BLOCK);
}

static int rows_reader_create(eng_source *b, eng_reader **out)
{
    rows_source *s = (rows_source *)b;
    eng_reader *r = calloc(1, sizeof(*r));
    if (r && !(r->views = calloc((size_t)s->n_need + 1, sizeof(ex_vec)))) {
        free(r);
        r = NULL;
    }
    *out = r;
    return r ? 0 : -ENOMEM;
}

static void rows_reader_destroy(eng_source *b, eng_reader *r)
{
    (void)b;
    if (r)
        free(r->views);
    free(r);
}

static void rows_nop(eng_source *b)
{
    (void)b;
}

static int rows_read(eng_source *b, eng_reader *r, int u, eng_scan_fn fn, void *arg, char *err,
                     size_t errlen)
{
    rows_source *s = (rows_source *)b;
    (void)err, (void)errlen;
    uint32_t off = (uint32_t)u * ROWS_BLOCK;
    uint32_t n = s->n - off < ROWS_BLOCK ? s->n - off : ROWS_BLOCK;
    for (int k = 0; k < s->n_need; k++)
        ex_vec_view(&s->cols[s->need[k]], off, n, &r->views[k]);
    atomic_fetch_add_explicit(&s->env.stats->rows_read, n, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->env.stats->units_read, 1, memory_order_relaxed);
    return fn(arg, r->views, n);
}

static void rows_destroy(eng_source *b)
{
    rows_source *s = (rows_source *)b;
    for (int k = 0; k < s->base.schema.n; k++)
        ex_vec_clear(NULL, &s->cols[k]);
    free(s->cols);
    free(s->need);
    eng_schema_free(&s->base.schema);
    free(s);
}

static const eng_source_ops rows_ops = {
    .plan = rows_plan,
    .reader_create = rows_reader_create,
    .reader_destroy = rows_reader_destroy,
    .start = rows_nop,
    .read = rows_read,
    .stop = rows_nop,
    .finish = rows_nop,
    .destroy = rows_destroy,
};

int eng_source_rows_create(eng_source **out, const eng_scan_env *env, eng_schema *schema,
                           ex_vec *cols, uint32_t n, char *err, size_t errlen)
{
    *out = NULL;
    rows_source *s = calloc(1, sizeof(*s));
    if (!s) {
        for (int k = 0; k < schema->n; k++)
            ex_vec_clear(NULL, &cols[k]);
        free(cols);
        eng_schema_free(schema);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    s->base.ops = &rows_ops;
    s->base.schema = *schema;
    memset(schema, 0, sizeof(*schema));
    s->env = *env;
    s->cols = cols;
    s->n = n;
    for (int k = 0; k < s->base.schema.n; k++)
        s->cols[k].n = n;
    *out = &s->base;
    return 0;
}
