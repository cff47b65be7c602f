/* SPDX-License-Identifier: Apache-2.0
 *
 * metrics.c: the registry of metrics.h. Layout: every metric that counts per
 * thread (counters: 1 cell; histograms: MET_HIST_BUCKETS + 1 bucket cells and
 * one cell for the sum in microseconds) owns a fixed range of cells, and every
 * slot (one per worker thread, plus the shared one) is its own 64-byte-aligned
 * array of those cells:
 *
 *   slot[0]  | c0 | c1 | h0.b0 ... h0.b17 | h0.sum | pad to 64 B |   worker 0
 *   slot[1]  | c0 | c1 | h0.b0 ... h0.b17 | h0.sum | pad to 64 B |   worker 1
 *   ...
 *   slot[N]  | same layout, written with atomic adds               |   shared
 *
 * A worker's add is a relaxed load and store of its own cell (single writer);
 * the shared slot uses fetch_add. Readers sum every slot. Gauges are one
 * atomic value per metric, or a callback.
 */
#include "metrics.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MET_MAX_THREADS 1024
#define MET_LINE        64
#define HIST_CELLS      (MET_HIST_BUCKETS + 2) /* buckets, +Inf, sum */

const uint64_t met_hist_bounds_us[MET_HIST_BUCKETS] = {
    50,    100,    250,    500,    1000,    2500,    5000,    10000,    25000,
    50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000,
};
static const char *const hist_le[MET_HIST_BUCKETS + 1] = {
    "5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
    "0.05",  "0.1",    "0.25",    "0.5",    "1",     "2.5",    "5",     "10",   "+Inf",
};

typedef struct metric {
    char *name, *help, *labels; /* labels: NULL when none */
    met_kind kind;
    uint32_t scale; /* > 1: rendered as value / scale */
    size_t cell;    /* first cell, counters and histograms */
    _Atomic int64_t gauge;
    met_gauge_fn fn; /* fn and fn_arg under the registry's lock */
    void *fn_arg;
    uint64_t fn_high;   /* a counter's highest fn value yet (under the lock) */
    atomic_bool has_fn; /* mirrors fn != NULL, for met_set's fast path */
} metric;

struct met_registry {
    unsigned n_threads;
    pthread_mutex_t lock;
    metric *m;
    size_t n, cap;
    size_t ncells, cells_cap; /* per slot */
    _Atomic uint64_t **slot;  /* n_threads + 1 arrays of cells_cap cells */
};

int met_create(met_registry **out, unsigned n_threads)
{
    *out = NULL;
    if (n_threads == 0 || n_threads > MET_MAX_THREADS)
        return -EINVAL;
    met_registry *r = calloc(1, sizeof *r);
    if (r == NULL)
        return -ENOMEM;
    r->n_threads = n_threads;
    r->slot = calloc(n_threads + 1, sizeof *r->slot);
    if (r->slot == NULL) {
        free(r);
        return -ENOMEM;
    }
    pthread_mutex_init(&r->lock, NULL);
    *out = r;
    return 0;
}

void met_destroy(met_registry **rp)
{
    if (rp == NULL || *rp == NULL)
        return;
    met_registry *r = *rp;
    for (size_t i = 0; i < r->n; i++) {
        free(r->m[i].name);
        free(r->m[i].help);
        free(r->m[i].labels);
    }
    free(r->m);
    for (unsigned t = 0; t <= r->n_threads; t++)
        free(r->slot[t]);
    free(r->slot);
    pthread_mutex_destroy(&r->lock);
    free(r);
    *rp = NULL;
}

unsigned met_shared_slot(const met_registry *r)
{
    return r->n_threads;
}

/* ---- registration ------------------------------------------------------- */

static bool name_ok(const char *s)
{
    if (s == NULL || *s == '\0')
        return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
        if (!alpha && !(p > s && c >= '0' && c <= '9'))
            return false;
    }
    return true;
}

/* `k="v"(,k="v")*`, label names [a-zA-Z_][a-zA-Z0-9_]*, not "__..." and not
 * "le" for a histogram; values with \\ \" \n escapes only. */
static bool labels_ok(const char *s, met_kind kind)
{
    const char *p = s;
    for (;;) {
        const char *k = p;
        while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
               (p > k && *p >= '0' && *p <= '9'))
            p++;
        size_t klen = (size_t)(p - k);
        if (klen == 0 || (klen >= 2 && k[0] == '_' && k[1] == '_'))
            return false;
        if (kind == MET_HISTOGRAM && klen == 2 && k[0] == 'l' && k[1] == 'e')
            return false;
        if (*p++ != '=' || *p++ != '"')
            return false;
        for (;;) {
            if (*p == '\0' || *p == '\n')
                return false;
            if (*p == '"')
                break;
            if (*p == '\\') {
                p++;
                if (*p != '\\' && *p != '"' && *p != 'n')
                    return false;
            }
            p++;
        }
        p++;
        if (*p == '\0')
            return true;
        if (*p++ != ',')
            return false;
    }
}

static bool same_labels(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return strcmp(a, b) == 0;
}

static int grow_cells(met_registry *r, size_t need)
{
    if (need <= r->cells_cap)
        return 0;
    size_t cap = r->cells_cap ? r->cells_cap : 64;
    while (cap < need)
        cap *= 2;
    size_t bytes = cap * sizeof(uint64_t); /* cap is a multiple of 8 cells = 64 B */
    _Atomic uint64_t **fresh = calloc(r->n_threads + 1, sizeof *fresh);
    if (fresh == NULL)
        return -ENOMEM;
    for (unsigned t = 0; t <= r->n_threads; t++) {
        fresh[t] = aligned_alloc(MET_LINE, bytes);
        if (fresh[t] == NULL) {
            for (unsigned u = 0; u < t; u++)
                free(fresh[u]);
            free(fresh);
            return -ENOMEM;
        }
        for (size_t c = 0; c < cap; c++) {
            uint64_t v =
                c < r->ncells ? atomic_load_explicit(&r->slot[t][c], memory_order_relaxed) : 0;
            atomic_init(&fresh[t][c], v);
        }
    }
    for (unsigned t = 0; t <= r->n_threads; t++) {
        free(r->slot[t]);
        r->slot[t] = fresh[t];
    }
    free(fresh);
    r->cells_cap = cap;
    return 0;
}

static char *dup_or_null(const char *s)
{
    return s == NULL || *s == '\0' ? NULL : strdup(s);
}

int met_register(met_registry *r, const met_def *defs, size_t n)
{
    if (r == NULL || (defs == NULL && n > 0) || n > INT32_MAX)
        return -EINVAL;
    pthread_mutex_lock(&r->lock);
    int rc = 0;
    size_t need_cells = r->ncells;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const met_def *d = &defs[i];
        if (!name_ok(d->name) || d->help == NULL ||
            (d->kind != MET_COUNTER && d->kind != MET_GAUGE && d->kind != MET_HISTOGRAM) ||
            (d->labels != NULL && d->labels[0] != '\0' && !labels_ok(d->labels, d->kind))) {
            rc = -EINVAL;
            break;
        }
        const char *lab = d->labels != NULL && d->labels[0] != '\0' ? d->labels : NULL;
        /* against what is registered, then against the earlier entries of defs */
        for (size_t j = 0; j < r->n + i && rc == 0; j++) {
            const char *jn, *jl;
            met_kind jk;
            if (j < r->n) {
                jn = r->m[j].name;
                jl = r->m[j].labels;
                jk = r->m[j].kind;
            } else {
                const met_def *e = &defs[j - r->n];
                jn = e->name;
                jl = e->labels != NULL && e->labels[0] != '\0' ? e->labels : NULL;
                jk = e->kind;
            }
            if (strcmp(jn, d->name) != 0)
                continue;
            if (jk != d->kind)
                rc = -EINVAL;
            else if (same_labels(jl, lab))
                rc = -EEXIST;
        }
        need_cells += d->kind == MET_COUNTER ? 1 : d->kind == MET_HISTOGRAM ? HIST_CELLS : 0;
    }
    if (rc == 0 && r->n + n > r->cap) {
        size_t cap = r->cap ? r->cap : 16;
        while (cap < r->n + n)
            cap *= 2;
        metric *nm = realloc(r->m, cap * sizeof *nm);
        if (nm == NULL)
            rc = -ENOMEM;
        else {
            r->m = nm;
            r->cap = cap;
        }
    }
    if (rc == 0)
        rc = grow_cells(r, need_cells);
    if (rc == 0) {
        size_t base = r->n;
        for (size_t i = 0; i < n; i++) {
            metric *m = &r->m[base + i];
            memset(m, 0, sizeof *m);
            m->name = strdup(defs[i].name);
            m->help = strdup(defs[i].help);
            m->labels = dup_or_null(defs[i].labels);
            m->kind = defs[i].kind;
            atomic_init(&m->gauge, 0);
            atomic_init(&m->has_fn, false);
            if (m->name == NULL || m->help == NULL ||
                (defs[i].labels != NULL && defs[i].labels[0] != '\0' && m->labels == NULL)) {
                for (size_t k = 0; k <= i; k++) {
                    free(r->m[base + k].name);
                    free(r->m[base + k].help);
                    free(r->m[base + k].labels);
                }
                rc = -ENOMEM;
                break;
            }
        }
        if (rc == 0) {
            for (size_t i = 0; i < n; i++) {
                metric *m = &r->m[base + i];
                m->cell = r->ncells;
                r->ncells += m->kind == MET_COUNTER ? 1 : m->kind == MET_HISTOGRAM ? HIST_CELLS : 0;
            }
            r->n += n;
            rc = (int)base;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

/* ---- the hot path ------------------------------------------------------- */

static inline void cell_add(met_registry *r, unsigned thread, size_t cell, uint64_t v)
{
    assert(thread <= r->n_threads);
    if (thread >= r->n_threads) {
        atomic_fetch_add_explicit(&r->slot[r->n_threads][cell], v, memory_order_relaxed);
    } else {
        /* single writer: a plain read-modify-write, atomic only for readers */
        _Atomic uint64_t *c = &r->slot[thread][cell];
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
                              memory_order_relaxed);
    }
}

void met_add(met_registry *r, unsigned thread, int idx, uint64_t v)
{
    assert(idx >= 0 && (size_t)idx < r->n && r->m[idx].kind == MET_COUNTER);
    cell_add(r, thread, r->m[idx].cell, v);
}

void met_observe_us(met_registry *r, unsigned thread, int idx, uint64_t us)
{
    assert(idx >= 0 && (size_t)idx < r->n && r->m[idx].kind == MET_HISTOGRAM);
    size_t b = 0;
    while (b < MET_HIST_BUCKETS && us > met_hist_bounds_us[b])
        b++;
    size_t cell = r->m[idx].cell;
    cell_add(r, thread, cell + b, 1);
    cell_add(r, thread, cell + MET_HIST_BUCKETS + 1, us);
}

void met_set(met_registry *r, int idx, int64_t v)
{
    assert(idx >= 0 && (size_t)idx < r->n && r->m[idx].kind == MET_GAUGE);
    atomic_store_explicit(&r->m[idx].gauge, v, memory_order_relaxed);
    if (atomic_load_explicit(&r->m[idx].has_fn, memory_order_relaxed)) {
        pthread_mutex_lock(&r->lock);
        r->m[idx].fn = NULL;
        r->m[idx].fn_arg = NULL;
        atomic_store_explicit(&r->m[idx].has_fn, false, memory_order_relaxed);
        pthread_mutex_unlock(&r->lock);
    }
}

void met_gauge_add(met_registry *r, int idx, int64_t delta)
{
    assert(idx >= 0 && (size_t)idx < r->n && r->m[idx].kind == MET_GAUGE);
    atomic_fetch_add_explicit(&r->m[idx].gauge, delta, memory_order_relaxed);
}

int met_set_fn(met_registry *r, int idx, met_gauge_fn fn, void *arg)
{
    pthread_mutex_lock(&r->lock);
    int rc = -EINVAL;
    if (idx >= 0 && (size_t)idx < r->n &&
        (r->m[idx].kind == MET_GAUGE || r->m[idx].kind == MET_COUNTER)) {
        r->m[idx].fn = fn;
        r->m[idx].fn_arg = arg;
        atomic_store_explicit(&r->m[idx].has_fn, fn != NULL, memory_order_relaxed);
        rc = 0;
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int met_set_scale(met_registry *r, int idx, uint32_t scale)
{
    uint32_t s = scale;
    while (s > 1 && s % 10 == 0)
        s /= 10;
    pthread_mutex_lock(&r->lock);
    int rc = -EINVAL;
    if (s == 1 && idx >= 0 && (size_t)idx < r->n && r->m[idx].kind != MET_HISTOGRAM) {
        r->m[idx].scale = scale;
        rc = 0;
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

/* ---- reading ------------------------------------------------------------ */

static uint64_t cell_sum_locked(met_registry *r, size_t cell)
{
    uint64_t s = 0;
    for (unsigned t = 0; t <= r->n_threads; t++)
        s += atomic_load_explicit(&r->slot[t][cell], memory_order_relaxed);
    return s;
}

static int64_t gauge_locked(met_registry *r, const metric *m)
{
    if (m->fn != NULL)
        return m->fn(m->fn_arg);
    return atomic_load_explicit(&m->gauge, memory_order_relaxed);
}

/* A counter: its cells, plus its callback's value, which never goes back
 * within the process (a store that recounts after a reopen cannot make a
 * Prometheus counter decrease without a restart). */
static uint64_t counter_locked(met_registry *r, metric *m)
{
    uint64_t v = cell_sum_locked(r, m->cell);
    if (m->fn != NULL) {
        int64_t f = m->fn(m->fn_arg);
        if (f > 0 && (uint64_t)f > m->fn_high)
            m->fn_high = (uint64_t)f;
        v += m->fn_high;
    }
    return v;
}

/* buckets[MET_HIST_BUCKETS + 1] cumulative; returns the sum in us. */
static uint64_t hist_locked(met_registry *r, const metric *m, uint64_t *cum)
{
    uint64_t run = 0;
    for (size_t b = 0; b <= MET_HIST_BUCKETS; b++) {
        run += cell_sum_locked(r, m->cell + b);
        cum[b] = run;
    }
    return cell_sum_locked(r, m->cell + MET_HIST_BUCKETS + 1);
}

uint64_t met_get(met_registry *r, int idx)
{
    pthread_mutex_lock(&r->lock);
    uint64_t v = 0;
    if (idx >= 0 && (size_t)idx < r->n) {
        metric *m = &r->m[idx];
        if (m->kind == MET_COUNTER) {
            v = counter_locked(r, m);
        } else if (m->kind == MET_GAUGE) {
            v = (uint64_t)gauge_locked(r, m);
        } else {
            uint64_t cum[MET_HIST_BUCKETS + 1];
            hist_locked(r, m, cum);
            v = cum[MET_HIST_BUCKETS];
        }
    }
    pthread_mutex_unlock(&r->lock);
    return v;
}

int met_get_histogram(met_registry *r, int idx, uint64_t *sum_us, uint64_t *counts)
{
    pthread_mutex_lock(&r->lock);
    int rc = -EINVAL;
    if (idx >= 0 && (size_t)idx < r->n && r->m[idx].kind == MET_HISTOGRAM) {
        uint64_t s = hist_locked(r, &r->m[idx], counts);
        if (sum_us != NULL)
            *sum_us = s;
        rc = 0;
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

typedef struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = true;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap * 2;
        while (cap - b->len <= (size_t)n)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (np == NULL) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
}

static void sb_help(sbuf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            sb_printf(b, "\\\\");
        else if (*s == '\n')
            sb_printf(b, "\\n");
        else
            sb_printf(b, "%c", *s);
    }
}

static const char *type_name(met_kind k)
{
    return k == MET_COUNTER ? "counter" : k == MET_GAUGE ? "gauge" : "histogram";
}

/* A value as Prometheus reads it: whole, or value / scale with one decimal
 * digit per power of 10 of the scale ("12.340000"). */
static void sb_value(sbuf *b, bool negative, uint64_t mag, uint32_t scale)
{
    const char *sign = negative ? "-" : "";
    if (scale <= 1) {
        sb_printf(b, "%s%" PRIu64 "\n", sign, mag);
        return;
    }
    int digits = 0;
    for (uint32_t s = scale; s > 1; s /= 10)
        digits++;
    sb_printf(b, "%s%" PRIu64 ".%0*" PRIu64 "\n", sign, mag / scale, digits, mag % scale);
}

static void render_one_locked(met_registry *r, sbuf *b, metric *m)
{
    const char *l = m->labels;
    if (m->kind == MET_COUNTER || m->kind == MET_GAUGE) {
        bool negative = false;
        uint64_t mag;
        if (m->kind == MET_COUNTER) {
            mag = counter_locked(r, m);
        } else {
            int64_t v = gauge_locked(r, m);
            negative = v < 0;
            mag = negative ? 0 - (uint64_t)v : (uint64_t)v;
        }
        if (l)
            sb_printf(b, "%s{%s} ", m->name, l);
        else
            sb_printf(b, "%s ", m->name);
        sb_value(b, negative, mag, m->scale);
    } else {
        uint64_t cum[MET_HIST_BUCKETS + 1];
        uint64_t sum = hist_locked(r, m, cum);
        for (size_t k = 0; k <= MET_HIST_BUCKETS; k++)
            sb_printf(b, "%s_bucket{%s%sle=\"%s\"} %" PRIu64 "\n", m->name, l ? l : "",
                      l ? "," : "", hist_le[k], cum[k]);
        const char *lo = l ? "{" : "", *lc = l ? "}" : "";
        sb_printf(b, "%s_sum%s%s%s %" PRIu64 ".%06" PRIu64 "\n", m->name, lo, l ? l : "", lc,
                  sum / 1000000, sum % 1000000);
        sb_printf(b, "%s_count%s%s%s %" PRIu64 "\n", m->name, lo, l ? l : "", lc,
                  cum[MET_HIST_BUCKETS]);
    }
}

int met_render(met_registry *r, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    sbuf b = {malloc(4096), 0, 4096, false};
    if (b.p == NULL)
        return -ENOMEM;
    b.p[0] = '\0';
    pthread_mutex_lock(&r->lock);
    for (size_t i = 0; i < r->n && !b.oom; i++) {
        metric *m = &r->m[i];
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(r->m[j].name, m->name) == 0;
        if (seen)
            continue; /* rendered with the first metric of its name */
        sb_printf(&b, "# HELP %s ", m->name);
        sb_help(&b, m->help);
        sb_printf(&b, "\n# TYPE %s %s\n", m->name, type_name(m->kind));
        for (size_t j = i; j < r->n; j++)
            if (strcmp(r->m[j].name, m->name) == 0)
                render_one_locked(r, &b, &r->m[j]);
    }
    pthread_mutex_unlock(&r->lock);
    if (b.oom) {
        free(b.p);
        return -ENOMEM;
    }
    *out = b.p;
    *len = b.len;
    return 0;
}
