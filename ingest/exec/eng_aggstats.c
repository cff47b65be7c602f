/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_aggstats.c: how many groups a GROUP BY made the last time it ran, so
 * that the next run sizes its tables once instead of doubling its way there
 * (ClickHouse's collect_hash_table_stats_during_aggregation).
 *
 * A server and a dashboard run the same queries over and over; a GROUP BY
 * of 120k names over 1M rows spends a tenth of its time growing its tables:
 * every doubling rehashes the index and moves the per-group arrays. The
 * process keeps, per statement shape (what it reads, by its FROM as written,
 * and the columns of it, its WHERE and its GROUP BY keys as bound: the
 * things that decide the groups; a DISTINCT's keys are its columns), the
 * largest worker table's groups and the merged table's; the next run of the
 * same shape reserves them (capped by max_size_to_preallocate_for_aggregation
 * in all). A hint that is wrong (the data changed) costs a table too large
 * or one doubling more, never a wrong answer.
 *
 * Thread-safety: one mutex over the table; the calls are once per query.
 */
#include "exec_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

/* Shapes remembered (a newer one takes an older one's place). */
#define AGG_STATS_SLOTS 4096

typedef struct stat_ent {
    uint64_t key; /* 0: empty */
    eng_agg_size size;
} stat_ent;

static pthread_mutex_t stats_mu = PTHREAD_MUTEX_INITIALIZER;
static stat_ent stats[AGG_STATS_SLOTS];

/* The shape's bytes go straight into the hash: nothing is kept. */
typedef struct kbuf {
    XXH3_state_t st;
    bool oom;
} kbuf;

static void kput(kbuf *k, const char *s, size_t n)
{
    if (n)
        XXH3_64bits_update(&k->st, s, n);
}

static void kstr(kbuf *k, const char *s)
{
    if (s)
        kput(k, s, strlen(s));
    kput(k, "\x1f", 1);
}

static void knode(kbuf *k, const sql_node *n)
{
    if (!n) {
        kput(k, "-\x1f", 2);
        return;
    }
    char small[512];
    size_t want = sql_node_name(n, small, sizeof(small));
    if (want < sizeof(small)) {
        kput(k, small, want);
    } else {
        char *big = malloc(want + 1);
        if (!big) {
            k->oom = true;
            return;
        }
        sql_node_name(n, big, want + 1);
        kput(k, big, want);
        free(big);
    }
    kput(k, "\x1f", 1);
}

static void kstmt(kbuf *k, const sql_stmt *st, int depth)
{
    if (!st || depth > 8) {
        kput(k, "?\x1f", 2);
        return;
    }
    kstr(k, st->from_fn);
    for (int i = 0; i < st->n_from_args; i++)
        knode(k, st->from_args[i]);
    kstr(k, st->table_db);
    kstr(k, st->table);
    kput(k, st->final ? "F\x1f" : "-\x1f", 2);
    if (st->from_sub)
        kstmt(k, st->from_sub, depth + 1);
    for (int j = 0; j < st->n_joins; j++) {
        kput(k, "J\x1f", 2);
        kstmt(k, st->joins[j].right, depth + 1);
        knode(k, st->joins[j].on);
    }
    knode(k, st->array_join);
    knode(k, st->where); /* a join's and a subquery's own; the plan's below */
}

/* A bound expression: its operator, function, type, column, constants and
 * arguments. */
static void kbx(kbuf *k, const bx *e, int depth)
{
    if (!e || depth > 64) {
        kput(k, "-", 1);
        return;
    }
    int64_t w[8] = {e->op, e->fn, e->t.kind, e->t.scale, e->col, e->negated, e->unit, e->na};
    kput(k, (const char *)w, sizeof(w));
    if (e->op == BX_CONST) {
        const ex_vec *v = &e->cval;
        if (ex_null(v, 0))
            kput(k, "N", 1);
        else if (ex_is_bytes(v->t.kind)) {
            uint32_t l;
            const uint8_t *s = ex_str(v, 0, &l);
            kput(k, (const char *)&l, sizeof(l));
            kput(k, (const char *)s, l);
        } else if (v->t.kind == EX_FLOAT && v->d)
            kput(k, (const char *)v->d, sizeof(double));
        else if (v->i)
            kput(k, (const char *)v->i, sizeof(int64_t));
    }
    kput(k, (const char *)&e->n_in, sizeof(e->n_in));
    for (int i = 0; i < e->n_in; i++) {
        if (e->in_s && e->in_len) {
            kput(k, (const char *)&e->in_len[i], sizeof(uint32_t));
            kput(k, e->in_s[i], e->in_len[i]);
        } else if (e->in_i) {
            kput(k, (const char *)&e->in_i[i], sizeof(int64_t));
        } else if (e->in_d) {
            kput(k, (const char *)&e->in_d[i], sizeof(double));
        }
    }
    for (int i = 0; i < e->na; i++)
        kbx(k, e->a[i], depth + 1);
}

static uint64_t stats_key(const sql_stmt *st, const eng_plan *p)
{
    kbuf k = {.oom = false};
    XXH3_64bits_reset(&k.st);
    kstmt(&k, st, 0);
    kput(&k, (const char *)&p->n_need, sizeof(p->n_need));
    for (int i = 0; i < p->n_need; i++)
        kput(&k, (const char *)&p->need[i], sizeof(int));
    kbx(&k, p->where, 0);
    kput(&k, (const char *)&p->n_keys, sizeof(p->n_keys));
    for (int i = 0; i < p->n_keys; i++)
        kbx(&k, p->keys[i], 0);
    if (k.oom)
        return 0; /* a name too long to write out: no size kept */
    uint64_t h = XXH3_64bits_digest(&k.st);
    return h ? h : 1; /* 0 marks an empty entry */
}

static bool stats_get(uint64_t key, eng_agg_size *out)
{
    const stat_ent *e = &stats[key % AGG_STATS_SLOTS];
    pthread_mutex_lock(&stats_mu);
    bool hit = e->key == key;
    if (hit)
        *out = e->size;
    pthread_mutex_unlock(&stats_mu);
    return hit;
}

static void stats_put(uint64_t key, const eng_agg_size *size)
{
    stat_ent *e = &stats[key % AGG_STATS_SLOTS];
    pthread_mutex_lock(&stats_mu);
    e->key = key;
    e->size = *size;
    pthread_mutex_unlock(&stats_mu);
}

/* What one group of a reserved table takes at most: its slot (8 bytes at
 * least 3/4 full, then doubled), its record and a state or two. */
#define AGG_PREALLOC_BYTES 48

/* Groups a hint may reserve in one of `tables` tables:
 * max_size_to_preallocate_for_aggregation (ENG_AGG_PREALLOC_MAX when not
 * given) shared among them, and a quarter of the query's memory left. */
static uint32_t prealloc_cap(const equery *q, uint32_t groups, int tables)
{
    uint64_t most = q->set.prealloc_given ? q->set.prealloc_max : ENG_AGG_PREALLOC_MAX;
    if (q->mem.limit > 0) {
        /* a quarter of what the query may still take, at most */
        int64_t left = q->mem.limit - atomic_load(&q->mem.cur);
        uint64_t by_mem = left > 0 ? (uint64_t)left / 4 / AGG_PREALLOC_BYTES : 0;
        most = by_mem < most ? by_mem : most;
    }
    most /= (uint64_t)(tables > 0 ? tables : 1);
    return groups < most ? groups : (uint32_t)(most < UINT32_MAX ? most : UINT32_MAX);
}

/* Reserves groups in t for the hint (q->agg_preallocated counts them):
 * true; a reserve that fails leaves t as it was and the query going. */
static bool hint_reserve(equery *q, agg_tab *t, uint32_t groups)
{
    if (groups == 0)
        return false;
    int64_t failed = atomic_load(&q->mem.failed_at);
    if (agg_tab_reserve(t, groups) < 0) {
        /* a hint, not a need: the table grows as it would have; the
           query's memory error stays the one that really happens */
        if (!failed) {
            atomic_store(&q->mem.failed_at, 0);
            atomic_store(&q->mem.failed_total, 0);
            atomic_store(&q->mem.failed_parent, 0);
        }
        return false;
    }
    q->agg_preallocated += groups;
    return true;
}

/* What one of `workers` workers' tables is sized for: the last run's
 * largest, spread over the workers there are now where that run had another
 * number of them (a 1-thread run's table held every group; 8 workers do not
 * each need all of them, and 1 after 8 needs more than one of 8 held),
 * never past the merged count. */
static uint32_t hint_per_worker(const equery *q, int workers)
{
    const eng_agg_size *h = &q->agg_hint;
    uint64_t g = h->worker_max;
    if (h->workers > 0 && workers > 0 && (uint32_t)workers != h->workers)
        g = g * h->workers / (uint32_t)workers;
    if (h->total > 0 && g > h->total)
        g = h->total;
    else if (h->total == 0 && g > h->worker_max)
        g = h->worker_max; /* more than one worker saw: not known */
    return (uint32_t)g;
}

void eng__agg_hint_begin(equery *q, const sql_stmt *st)
{
    const eng_plan *p = &q->plan;
    if (!p->aggregate || p->n_keys == 0 || q->set.hash_stats_off)
        return;
    q->agg_stats_key = stats_key(st, p);
    q->agg_hint_ok = q->agg_stats_key && stats_get(q->agg_stats_key, &q->agg_hint);
}

void eng__agg_hint_worker(equery *q, agg_tab *t, int workers)
{
    if (q->agg_hint_ok)
        hint_reserve(q, t, prealloc_cap(q, hint_per_worker(q, workers), workers));
}

void eng__agg_hint_merged(equery *q, agg_tab *dst)
{
    uint32_t have = agg_tab_groups(dst);
    if (!q->agg_hint_ok || q->agg_hint.total <= have)
        return;
    uint32_t g = prealloc_cap(q, q->agg_hint.total, 1);
    if (g > have && hint_reserve(q, dst, g))
        q->agg_preallocated -= have; /* the groups it held were there */
}

void eng__agg_hint_keep(equery *q, const eng_agg_size *size)
{
    if (q->agg_stats_key)
        stats_put(q->agg_stats_key, size);
}
