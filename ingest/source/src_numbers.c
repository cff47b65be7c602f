/* SPDX-License-Identifier: Apache-2.0
 *
 * src_numbers.c: the sources that make their rows instead of reading them,
 * as ClickHouse's probes and benchmarks use them:
 *
 *   numbers(N)        number UInt64: 0 .. N-1
 *   numbers(a, n)     number UInt64: a .. a+n-1
 *   zeros(N)          zero UInt8: N zeros
 *   system.numbers    number UInt64: 0, 1, ... without end (stop it with LIMIT)
 *   system.zeros      zero UInt8, without end
 *   system.one        dummy UInt8: one row, 0 (what a SELECT without FROM reads)
 *
 * Units are blocks of 65536 rows, so max_threads workers make them in
 * parallel; a worker reuses one vector for all its blocks.
 */
#include "eng_source.h"
#include "src_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NUM_BLOCK_ROWS 65536u
#define NUM_ENDLESS    UINT64_MAX

typedef struct num_source {
    eng_source base;
    eng_scan_env env;
    uint64_t start, count; /* count NUM_ENDLESS: no end */
    bool zeros;
    int n_need; /* the plan reads the column (1) or nothing (0: count()) */
} num_source;

struct eng_reader {
    ex_vec v;
};

static int num_plan(eng_source *b, const eng_plan *p, char *err, size_t errlen)
{
    num_source *s = (num_source *)b;
    (void)err, (void)errlen;
    s->n_need = p->n_need;
    if (s->count == NUM_ENDLESS)
        return INT32_MAX;
    uint64_t units = (s->count + NUM_BLOCK_ROWS - 1) / NUM_BLOCK_ROWS;
    if (units > INT32_MAX) {
        snprintf(err, errlen, "%s(%llu) makes too many rows: at most %llu",
                 s->zeros ? "zeros" : "numbers", (unsigned long long)s->count,
                 (unsigned long long)INT32_MAX * NUM_BLOCK_ROWS);
        return -EINVAL;
    }
    return (int)units;
}

static int num_reader_create(eng_source *b, eng_reader **out)
{
    (void)b;
    *out = calloc(1, sizeof(eng_reader));
    return *out ? 0 : -ENOMEM;
}

static void num_reader_destroy(eng_source *b, eng_reader *r)
{
    num_source *s = (num_source *)b;
    if (!r)
        return;
    ex_vec_clear(s->env.mem, &r->v);
    free(r);
}

static void num_nop(eng_source *b)
{
    (void)b;
}

static int num_read(eng_source *b, eng_reader *r, int u, eng_scan_fn fn, void *arg, char *err,
                    size_t errlen)
{
    num_source *s = (num_source *)b;
    uint64_t first = (uint64_t)u * NUM_BLOCK_ROWS;
    uint64_t n = NUM_BLOCK_ROWS;
    if (s->count != NUM_ENDLESS && s->count - first < n)
        n = s->count - first;
    if (!r->v.i) {
        ex_type t = {.kind = EX_UINT, .bits = s->zeros ? 8 : 64};
        if (ex_vec_alloc(s->env.mem, &r->v, t, NUM_BLOCK_ROWS) < 0) {
            snprintf(err, errlen, "out of memory making numbers");
            return -ENOMEM;
        }
        if (s->zeros)
            memset(r->v.i, 0, sizeof(int64_t) * NUM_BLOCK_ROWS);
    }
    if (!s->zeros)
        for (uint64_t k = 0; k < n; k++)
            r->v.i[k] = (int64_t)(s->start + first + k);
    r->v.n = (uint32_t)n;
    atomic_fetch_add_explicit(&s->env.stats->rows_read, n, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->env.stats->bytes_read, n * (s->zeros ? 1 : 8),
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&s->env.stats->units_read, 1, memory_order_relaxed);
    return fn(arg, s->n_need ? &r->v : NULL, (uint32_t)n);
}

static void num_destroy(eng_source *b)
{
    num_source *s = (num_source *)b;
    eng_schema_free(&s->base.schema);
    free(s);
}

static const eng_source_ops num_ops = {
    .plan = num_plan,
    .reader_create = num_reader_create,
    .reader_destroy = num_reader_destroy,
    .start = num_nop,
    .read = num_read,
    .stop = num_nop,
    .finish = num_nop,
    .destroy = num_destroy,
};

static int num_create(eng_source **out, const eng_scan_env *env, bool zeros, uint64_t start,
                      uint64_t count, char *err, size_t errlen)
{
    num_source *s = calloc(1, sizeof(*s));
    eng_col *c = calloc(1, sizeof(eng_col));
    char *name = strdup(zeros ? "zero" : "number");
    if (!s || !c || !name) {
        free(s);
        free(c);
        free(name);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    c->name = name;
    c->t = (ex_type){.kind = EX_UINT, .bits = zeros ? 8 : 64};
    s->base.ops = &num_ops;
    s->base.schema.cols = c;
    s->base.schema.n = 1;
    s->env = *env;
    s->zeros = zeros;
    s->start = start;
    s->count = count;
    *out = &s->base;
    return 0;
}

/* A non-negative integer literal argument. */
static int count_arg(const eng_tf_call *c, int i, uint64_t *out, char *err, size_t errlen)
{
    const sql_node *a = c->args[i];
    if (a->kind != SQL_INT || a->negated) {
        snprintf(err, errlen,
                 "line %d, column %d: argument %d of %s() must be a non-negative integer, as in "
                 "%s(10)",
                 a->line, a->col, i + 1, c->name, c->name);
        return -EINVAL;
    }
    *out = a->u;
    return 0;
}

static int numbers_or_zeros(const eng_tf_call *c, const eng_scan_env *env, bool zeros,
                            eng_source **out, char *err, size_t errlen)
{
    int max = zeros ? 1 : 2;
    if (c->n_args < 1 || c->n_args > max) {
        snprintf(err, errlen,
                 zeros ? "line %d, column %d: zeros() takes the row count: zeros(N)"
                       : "line %d, column %d: numbers() takes a count or a start and a count: "
                         "numbers(N) or numbers(start, N)",
                 c->line, c->col);
        return -EINVAL;
    }
    uint64_t a = 0, n = 0;
    int rc = count_arg(c, 0, c->n_args == 2 ? &a : &n, err, errlen);
    if (rc == 0 && c->n_args == 2)
        rc = count_arg(c, 1, &n, err, errlen);
    if (rc < 0)
        return rc;
    if (n == NUM_ENDLESS)
        n--;
    return num_create(out, env, zeros, a, n, err, errlen);
}

int src__numbers_open(const eng_tf_call *c, const eng_scan_env *env, eng_source **out, char *err,
                      size_t errlen)
{
    return numbers_or_zeros(c, env, false, out, err, errlen);
}

int src__zeros_open(const eng_tf_call *c, const eng_scan_env *env, eng_source **out, char *err,
                    size_t errlen)
{
    return numbers_or_zeros(c, env, true, out, err, errlen);
}

/* ---- system.one, system.numbers, system.zeros ----------------------------------------- */

int eng_system_table_open(const char *name, const eng_scan_env *env, eng_source **out, char *err,
                          size_t errlen)
{
    *out = NULL;
    if (strcmp(name, "numbers") == 0 || strcmp(name, "numbers_mt") == 0)
        return num_create(out, env, false, 0, NUM_ENDLESS, err, errlen);
    if (strcmp(name, "zeros") == 0 || strcmp(name, "zeros_mt") == 0)
        return num_create(out, env, true, 0, NUM_ENDLESS, err, errlen);
    if (strcmp(name, "one") == 0) {
        int rc = num_create(out, env, true, 0, 1, err, errlen);
        if (rc == 0) {
            free((*out)->schema.cols[0].name);
            if (!((*out)->schema.cols[0].name = strdup("dummy"))) {
                eng_source_destroy(out);
                snprintf(err, errlen, "out of memory");
                return -ENOMEM;
            }
        }
        return rc;
    }
    return -ENOENT;
}
