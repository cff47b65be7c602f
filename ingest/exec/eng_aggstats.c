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

typedef struct kbuf {
    char *b;
    size_t n, cap;
    bool oom;
} kbuf;

static void kput(kbuf *k, const char *s, size_t n)
{
    if (k->oom || n == 0)
        return;
    if (k->n + n + 1 > k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 1024;
        while (cap < k->n + n + 1)
            cap *= 2;
        char *nb = realloc(k->b, cap);
        if (!nb) {
            k->oom = true;
            return;
        }
        k->b = nb;
        k->cap = cap;
    }
    memcpy(k->b + k->n, s, n);
    k->n += n;
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

uint64_t eng__agg_stats_key(const sql_stmt *st, const eng_plan *p)
{
    kbuf k = {0};
    kstmt(&k, st, 0);
    kput(&k, (const char *)&p->n_need, sizeof(p->n_need));
    for (int i = 0; i < p->n_need; i++)
        kput(&k, (const char *)&p->need[i], sizeof(int));
    kbx(&k, p->where, 0);
    kput(&k, (const char *)&p->n_keys, sizeof(p->n_keys));
    for (int i = 0; i < p->n_keys; i++)
        kbx(&k, p->keys[i], 0);
    uint64_t h = k.oom || !k.b ? 0 : XXH3_64bits(k.b, k.n);
    free(k.b);
    return h ? h : 1; /* 0 marks an empty entry */
}

bool eng__agg_stats_get(uint64_t key, eng_agg_size *out)
{
    const stat_ent *e = &stats[key % AGG_STATS_SLOTS];
    pthread_mutex_lock(&stats_mu);
    bool hit = e->key == key;
    if (hit)
        *out = e->size;
    pthread_mutex_unlock(&stats_mu);
    return hit;
}

void eng__agg_stats_put(uint64_t key, const eng_agg_size *size)
{
    stat_ent *e = &stats[key % AGG_STATS_SLOTS];
    pthread_mutex_lock(&stats_mu);
    e->key = key;
    e->size = *size;
    pthread_mutex_unlock(&stats_mu);
}
