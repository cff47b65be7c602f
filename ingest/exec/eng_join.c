/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_join.c: FROM a [ANY|ALL] [INNER|LEFT|RIGHT|FULL|CROSS] JOIN b ON ... |
 * USING (...), as ClickHouse's hash join runs it: the right side is run
 * first, as a query of its own, into memory (eng_compose.c's mem table,
 * charged to max_memory_usage with its hash table: over the limit the query
 * fails with the memory-limit sentence), then the left side's units are read
 * on the query's workers, each probing the table (the table is read-only by
 * then, so probes run in parallel over max_threads). The join is a source:
 * the statement binds against its columns (the left's, then the right's, a
 * right column whose name the left has too named "alias.column", as
 * ClickHouse names it) and runs as over any table.
 *
 *   left units --workers--> probe (hash of the ON keys) --> joined blocks --> plan
 *   right query --> mem table --> hash table (chains in the right's row order)
 *   (one integer key whose values span at most about four times the right's
 *   rows, as surrogate keys do: an array of heads indexed by key - min, the
 *   "direct" join of EXPLAIN, which neither hashes nor probes, and the right's
 *   key column goes after the build unless the query reads it)
 *   RIGHT / FULL: one more unit, after every left unit, emits the right rows
 *   nothing matched
 *
 * Semantics are ClickHouse's: NULL keys match nothing; with join_use_nulls =
 * 0 (the default) a side without a match gives its columns' type defaults (0,
 * '', 1970-01-01), NULL only for Nullable columns; with 1 they are Nullable
 * and NULL. ANY keeps, for each left row, the first right row of its key
 * (INNER and LEFT only). USING keeps one column per key, the left's, the
 * right's for a right row nothing matched.
 */
#include "exec_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define JOIN_BLOCK 65536u
#define NONE       UINT32_MAX

enum { JK_INT = 0, JK_FLOAT, JK_STR };

typedef struct jkey {
    int lcol; /* the left's schema column */
    int rcol; /* the right table's column */
    int mode; /* JK_*: how both sides' values compare */
} jkey;

/* A slot's first row of its key: row + 1 (0: an empty slot), JS_MORE set
 * when next[row] leads on to more rows of the key (entries of next[] are
 * made the same way), so a key of one row costs no read of next[]. */
#define JS_MORE   0x80000000u
#define JS_ROW(e) (((e) & ~JS_MORE) - 1)

typedef struct __attribute__((packed)) jslot {
    uint64_t h;    /* the key's hash, or with int1 the key */
    uint32_t head; /* the key's rows, in the right's order: as above */
} jslot;

typedef struct jsrc {
    eng_source base;
    equery *q;
    eng_source *left;
    sql_join_kind kind;
    bool any, use_nulls;
    eng_memtab right;
    int n_lcols;  /* schema columns [0, n_lcols) are the left's */
    int *rmap;    /* schema column n_lcols + j: the right's column rmap[j] */
    int *using_r; /* left column k is USING's, also right column using_r[k]; -1 */
    jkey *keys;
    int n_keys;
    /* the hash table over the right rows: open addressing, one 12-byte slot
     * per key (a cache line holds five), its rows chained from head by next[];
     * with one integer key (int1) a slot holds the key itself, so a probe
     * reads no right column */
    uint32_t cap;
    bool int1;
    jslot *slots;
    /* dense: one integer key whose right values span at most a few times
     * their count (surrogate keys 1..N, dates): the table is an array of
     * heads indexed by key - dmin (cap of them), no hashing nor probing */
    bool dense;
    int64_t dmin;
    uint32_t *heads;
    uint32_t *next;           /* the next row of the key, as jslot's head; NULL: keys unique */
    _Atomic uint8_t *matched; /* RIGHT / FULL */
    /* the left's plan: its columns this query needs, and the keys */
    eng_plan lplan;
    const eng_plan *p;
    int *lslot; /* left column -> slot of lplan, or -1 */
    int n_left_units;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int left_done;
} jsrc;

typedef struct jreader {
    eng_reader *lr;
    uint64_t *hs; /* a block's hashes (UINT64_MAX with a NULL key) */
    uint8_t *nul;
    uint32_t hcap;
    uint32_t *pl, *pr; /* pairs: left row, right row (NONE: no row) */
    uint32_t n, cap;
} jreader;

/* ---- keys ----------------------------------------------------------------------- */

/* With int1 the "hash" is the key; its slot comes from a multiplicative mix. */
static inline uint32_t slot_of(const jsrc *j, uint64_t h)
{
    if (j->int1)
        h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ull, h ^= h >> 32;
    return (uint32_t)h & (j->cap - 1);
}

static inline uint64_t key_hash(const jsrc *j, const ex_vec *const *kv, uint32_t r, bool *null)
{
    if (j->int1) {
        const ex_vec *v = kv[0];
        if (ex_null(v, r)) {
            *null = true;
            return 0;
        }
        *null = false;
        return (uint64_t)v->i[ex_row(v, r)];
    }
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int k = 0; k < j->n_keys; k++) {
        const ex_vec *v = kv[k];
        if (ex_null(v, r)) {
            *null = true;
            return 0;
        }
        if (j->keys[k].mode == JK_STR) {
            uint32_t l;
            const uint8_t *s = ex_str(v, r, &l);
            h = XXH3_64bits_withSeed(s, l, h);
        } else if (j->keys[k].mode == JK_FLOAT) {
            double d = ex_f(v, r);
            if (d == 0)
                d = 0; /* -0 and 0 are one key */
            h = XXH3_64bits_withSeed(&d, sizeof(d), h);
        } else {
            int64_t x = v->i[ex_row(v, r)];
            h = XXH3_64bits_withSeed(&x, sizeof(x), h);
        }
    }
    *null = false;
    return h;
}

static inline bool key_eq(const jsrc *j, const ex_vec *const *lv, uint32_t lr, uint32_t rr)
{
    for (int k = 0; k < j->n_keys; k++) {
        const ex_vec *a = lv[k], *b = &j->right.rows.c[j->keys[k].rcol];
        if (j->keys[k].mode == JK_STR) {
            uint32_t la, lb;
            const uint8_t *sa = ex_str(a, lr, &la), *sb = ex_str(b, rr, &lb);
            if (la != lb || (la && memcmp(sa, sb, la) != 0))
                return false;
        } else if (j->keys[k].mode == JK_FLOAT) {
            if (ex_f(a, lr) != ex_f(b, rr))
                return false;
        } else if (a->i[ex_row(a, lr)] != b->i[ex_row(b, rr)]) {
            return false;
        }
    }
    return true;
}

static int build(jsrc *j, char *err, size_t errlen)
{
    eng_mem *m = &j->q->mem;
    uint32_t n = j->right.rows.n;
    uint64_t cap = 16;
    while (cap < (uint64_t)n * 2)
        cap *= 2;
    if (cap > (1ull << 31)) {
        snprintf(err, errlen,
                 "the right side of JOIN has %u rows, more than a hash join holds: "
                 "put the smaller table on the right",
                 n);
        return -E2BIG;
    }
    const ex_vec *kv[64];
    for (int k = 0; k < j->n_keys; k++)
        kv[k] = &j->right.rows.c[j->keys[k].rcol];
    if (j->int1) {
        uint64_t lo = 0, hi = 0;
        bool any = false;
        for (uint32_t r = 0; r < n; r++) {
            bool null;
            int64_t x = (int64_t)key_hash(j, kv, r, &null);
            if (null)
                continue;
            if (!any || x < (int64_t)lo)
                lo = (uint64_t)x;
            if (!any || x > (int64_t)hi)
                hi = (uint64_t)x;
            any = true;
        }
        uint64_t range = hi - lo + 1; /* 0: the whole of int64 */
        if (any && range && range <= 4ull * n + 64 && range <= (1ull << 31)) {
            j->dense = true;
            j->dmin = (int64_t)lo;
            cap = range;
        }
    }
    j->cap = (uint32_t)cap;
    if (j->dense)
        j->heads = em_calloc(m, cap * sizeof(uint32_t));
    else
        j->slots = em_calloc(m, cap * sizeof(jslot));
    if (j->kind == SQL_JOIN_RIGHT || j->kind == SQL_JOIN_FULL)
        j->matched = em_calloc(m, (size_t)n + 1);
    if (!(j->dense ? (void *)j->heads : (void *)j->slots) ||
        ((j->kind == SQL_JOIN_RIGHT || j->kind == SQL_JOIN_FULL) && !j->matched))
        goto oom;
    /* next[] is made at the first key seen twice (unique keys need none) */
    size_t next_bytes = ((size_t)n + 1) * sizeof(uint32_t);
    uint32_t mask = j->cap - 1;
    /* the rows from the last: each goes in front of its key's chain, which
     * so ends in the right's order (ANY: the first row alone) */
    for (uint32_t r = n; r-- > 0;) {
        bool null;
        uint64_t h = key_hash(j, kv, r, &null);
        if (null)
            continue; /* matches nothing */
        if (j->dense) {
            uint32_t *hd = &j->heads[h - (uint64_t)j->dmin];
            if (!*hd || j->any) {
                *hd = r + 1;
            } else {
                if (!j->next && !(j->next = em_calloc(m, next_bytes)))
                    goto oom;
                j->next[r] = *hd;
                *hd = (r + 1) | JS_MORE;
            }
            continue;
        }
        uint32_t s = slot_of(j, h);
        for (;;) {
            jslot *sl = &j->slots[s];
            if (!sl->head) {
                sl->h = h;
                sl->head = r + 1;
                break;
            }
            if (sl->h == h && (j->int1 || key_eq(j, kv, r, JS_ROW(sl->head)))) {
                if (j->any) {
                    sl->head = r + 1;
                } else {
                    if (!j->next && !(j->next = em_calloc(m, next_bytes)))
                        goto oom;
                    j->next[r] = sl->head;
                    sl->head = (r + 1) | JS_MORE;
                }
                break;
            }
            s = (s + 1) & mask;
        }
    }
    return 0;
oom:
    return em_oom(m, err, errlen);
}

/* The slot of left row lr's key (hash h): its right rows from head, or
 * NULL when no right row has the key. */
static inline const jslot *probe(const jsrc *j, const ex_vec *const *lv, uint32_t lr, uint64_t h)
{
    uint32_t mask = j->cap - 1, s = slot_of(j, h);
    for (;;) {
        const jslot *sl = &j->slots[s];
        if (!sl->head)
            return NULL;
        if (sl->h == h && (j->int1 || key_eq(j, lv, lr, JS_ROW(sl->head))))
            return sl;
        s = (s + 1) & mask;
    }
}

/* The first right row of left row lr's key (hash h), as jslot's head; 0
 * when no right row has the key. */
static inline uint32_t probe_head(const jsrc *j, const ex_vec *const *lv, uint32_t lr, uint64_t h)
{
    if (j->dense) {
        uint64_t d = h - (uint64_t)j->dmin;
        return d < j->cap ? j->heads[d] : 0;
    }
    const jslot *sl = probe(j, lv, lr, h);
    return sl ? sl->head : 0;
}

static inline void probe_prefetch(const jsrc *j, uint64_t h)
{
    if (j->dense) {
        uint64_t d = h - (uint64_t)j->dmin;
        if (d < j->cap)
            __builtin_prefetch(&j->heads[d]);
    } else {
        __builtin_prefetch(&j->slots[slot_of(j, h)]);
    }
}

/* ---- output --------------------------------------------------------------------- */

/* Row r of src (NONE: the missing side's value) into row i of out. */
static int put_val(eng_mem *m, ex_vec *out, uint32_t i, const ex_vec *src, uint32_t r,
                   bool missing_null)
{
    bool nul = r == NONE ? missing_null : ex_null(src, r);
    out->nulls[i] = nul;
    if (ex_is_bytes(out->t.kind)) {
        uint32_t l = 0;
        const uint8_t *s = (const uint8_t *)"";
        if (r != NONE && !nul)
            s = ex_str(src, r, &l);
        return ex_vec_str_put(m, out, i, s, l);
    }
    if (out->t.kind == EX_FLOAT)
        out->d[i] = r == NONE || nul ? 0 : ex_f(src, r);
    else if (out->t.kind != EX_NOTHING)
        out->i[i] = r == NONE || nul || src->t.kind == EX_NOTHING ? 0 : src->i[ex_row(src, r)];
    return 0;
}

/* Hands the pairs gathered so far to the plan, as vectors of its columns. */
static int flush_pairs(jsrc *j, jreader *jr, const ex_vec *lcols, eng_scan_fn fn, void *arg)
{
    if (!jr->n)
        return 0;
    eng_mem *m = &j->q->mem;
    const eng_plan *p = j->p;
    ex_vec *out = calloc((size_t)p->n_need + 1, sizeof(ex_vec));
    if (!out)
        return -ENOMEM;
    int rc = 0;
    for (int k = 0; k < p->n_need && rc == 0; k++) {
        int c = p->need[k];
        ex_type t = j->base.schema.cols[c].t;
        ex_type at = t;
        at.nullable = true;
        if (ex_vec_alloc(m, &out[k], at, jr->n) < 0) {
            rc = -ENOMEM;
            break;
        }
        out[k].t = t;
        if (t.kind == EX_NOTHING)
            out[k].t.nullable = true;
        bool miss_null = j->use_nulls || t.nullable;
        /* numbers: a tight gather (strings and USING's fallback go cell by cell) */
        const ex_vec *src = NULL;
        const uint32_t *rows = NULL;
        if (c < j->n_lcols && !(j->using_r && j->using_r[c] >= 0)) {
            src = lcols ? &lcols[j->lslot[c]] : NULL;
            rows = jr->pl;
        } else if (c >= j->n_lcols) {
            src = &j->right.rows.c[j->rmap[c - j->n_lcols]];
            rows = jr->pr;
        }
        if (src && !src->is_const && src->t.kind == t.kind && !ex_is_bytes(t.kind) &&
            t.kind != EX_NOTHING) {
            ex_vec *ov = &out[k];
            bool fl = t.kind == EX_FLOAT;
            /* the right's rows come in probe order, all over a table larger
             * than the caches: their cells are prefetched a few pairs ahead */
            enum { AHEAD = 16 };
            bool ahead = rows == jr->pr;
            for (uint32_t i = 0; i < jr->n; i++) {
                if (ahead && i + AHEAD < jr->n && rows[i + AHEAD] != NONE) {
                    if (fl)
                        __builtin_prefetch(&src->d[rows[i + AHEAD]]);
                    else
                        __builtin_prefetch(&src->i[rows[i + AHEAD]]);
                    if (src->nulls)
                        __builtin_prefetch(&src->nulls[rows[i + AHEAD]]);
                }
                uint32_t r = rows[i];
                if (r == NONE) {
                    ov->nulls[i] = miss_null;
                    if (fl)
                        ov->d[i] = 0;
                    else
                        ov->i[i] = 0;
                    continue;
                }
                ov->nulls[i] = src->nulls ? src->nulls[r] : 0;
                if (fl)
                    ov->d[i] = src->d[r];
                else
                    ov->i[i] = src->i[r];
            }
            continue;
        }
        for (uint32_t i = 0; i < jr->n && rc == 0; i++) {
            if (c < j->n_lcols) {
                uint32_t lr = jr->pl[i];
                if (lr == NONE && j->using_r && j->using_r[c] >= 0)
                    rc = put_val(m, &out[k], i, &j->right.rows.c[j->using_r[c]], jr->pr[i],
                                 miss_null);
                else
                    rc = put_val(m, &out[k], i, lr == NONE ? NULL : &lcols[j->lslot[c]], lr,
                                 miss_null);
            } else {
                rc = put_val(m, &out[k], i, &j->right.rows.c[j->rmap[c - j->n_lcols]], jr->pr[i],
                             miss_null);
            }
        }
    }
    uint32_t n = jr->n;
    jr->n = 0;
    if (rc == 0)
        rc = fn(arg, out, n);
    for (int k = 0; k < p->n_need; k++)
        ex_vec_clear(m, &out[k]);
    free(out);
    return rc;
}

static inline int add_pair(jsrc *j, jreader *jr, uint32_t l, uint32_t r, const ex_vec *lcols,
                           eng_scan_fn fn, void *arg)
{
    if (jr->n == jr->cap) {
        int rc = flush_pairs(j, jr, lcols, fn, arg);
        if (rc < 0)
            return rc;
    }
    jr->pl[jr->n] = l;
    jr->pr[jr->n] = r;
    jr->n++;
    return 0;
}

typedef struct probe_arg {
    jsrc *j;
    jreader *jr;
    eng_scan_fn fn;
    void *arg;
} probe_arg;

/* One block of the left: its rows' matches. */
static int probe_block(void *arg, ex_vec *cols, uint32_t n)
{
    probe_arg *pa = arg;
    jsrc *j = pa->j;
    jreader *jr = pa->jr;
    uint32_t nr = j->right.rows.n;
    const ex_vec *kv[64];
    for (int k = 0; k < j->n_keys; k++)
        kv[k] = &cols[j->lslot[j->keys[k].lcol]];
    bool outer_left = j->kind == SQL_JOIN_LEFT || j->kind == SQL_JOIN_FULL;
    bool cross = j->kind == SQL_JOIN_CROSS;
    /* the rows in chunks: their hashes first, then the probes with the
     * slots a few rows ahead prefetched (the table is larger than the
     * caches); a chunk's hashes stay in the cache, whatever the block's size */
    enum { CHUNK = 4096, AHEAD = 8 };
    if (!cross && !jr->hcap) {
        jr->hs = malloc(sizeof(uint64_t) * CHUNK);
        jr->nul = malloc(CHUNK);
        jr->hcap = jr->hs && jr->nul ? CHUNK : 0;
        if (!jr->hcap)
            return -ENOMEM;
    }
    for (uint32_t c0 = 0; c0 < n; c0 += CHUNK) {
        uint32_t cn = n - c0 < CHUNK ? n - c0 : CHUNK;
        for (uint32_t i = 0; !cross && i < cn; i++) {
            bool null;
            jr->hs[i] = key_hash(j, kv, c0 + i, &null);
            jr->nul[i] = null;
        }
        for (uint32_t i = 0; !cross && i < cn && i < AHEAD; i++)
            if (!jr->nul[i])
                probe_prefetch(j, jr->hs[i]);
        for (uint32_t i = 0; i < cn; i++) {
            uint32_t r = c0 + i;
            int rc = 0;
            if (cross) {
                for (uint32_t x = 0; x < nr && rc == 0; x++)
                    rc = add_pair(j, jr, r, x, cols, pa->fn, pa->arg);
                if (rc < 0)
                    return rc;
                continue;
            }
            if (i + AHEAD < cn && !jr->nul[i + AHEAD])
                probe_prefetch(j, jr->hs[i + AHEAD]);
            uint32_t head = jr->nul[i] ? 0 : probe_head(j, kv, r, jr->hs[i]);
            if (!head) {
                if (outer_left && (rc = add_pair(j, jr, r, NONE, cols, pa->fn, pa->arg)) < 0)
                    return rc;
                continue;
            }
            /* the chain is read only past its first row (a key of one row
             * costs no miss in next[]) */
            for (uint32_t e = head;; e = j->next[JS_ROW(e)]) {
                uint32_t x = JS_ROW(e);
                if (j->matched)
                    atomic_store_explicit(&j->matched[x], 1, memory_order_relaxed);
                rc = add_pair(j, jr, r, x, cols, pa->fn, pa->arg);
                if (rc < 0 || !(e & JS_MORE))
                    break;
            }
            if (rc < 0)
                return rc;
        }
        if (atomic_load_explicit(&j->q->stop, memory_order_relaxed))
            break;
    }
    return flush_pairs(j, jr, cols, pa->fn, pa->arg);
}

/* ---- the source ----------------------------------------------------------------- */

/* With one integer key the slots hold the keys themselves: the right's key
 * column is read by nothing after the build unless the query's columns (or
 * USING's fallback to it) take it, and goes (a 1M-row dimension's key is 9
 * MiB of a join's peak). */
static void drop_right_key(jsrc *j)
{
    if (!j->int1 || !j->p)
        return;
    int rcol = j->keys[0].rcol;
    for (int k = 0; k < j->p->n_need; k++) {
        int c = j->p->need[k];
        if (c >= j->n_lcols && j->rmap[c - j->n_lcols] == rcol)
            return;
    }
    for (int c = 0; j->using_r && c < j->n_lcols; c++)
        if (j->using_r[c] == rcol)
            return;
    ex_vec_clear(&j->q->mem, &j->right.rows.c[rcol]);
}

static int js_plan(eng_source *s, const eng_plan *p, char *err, size_t errlen)
{
    jsrc *j = (jsrc *)s;
    j->p = p;
    eng_plan *lp = &j->lplan;
    lp->schema = &j->left->schema;
    j->lslot = calloc((size_t)j->n_lcols + 1, sizeof(int));
    lp->need = calloc((size_t)j->n_lcols + 1, sizeof(int));
    if (!j->lslot || !lp->need) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (int c = 0; c < j->n_lcols; c++)
        j->lslot[c] = -1;
    for (int k = 0; k < p->n_need + j->n_keys; k++) {
        int c = k < p->n_need ? p->need[k] : j->keys[k - p->n_need].lcol;
        if (c < j->n_lcols && j->lslot[c] < 0) {
            j->lslot[c] = lp->n_need;
            lp->need[lp->n_need++] = c;
        }
    }
    /* WHERE's pruning of the left's columns holds when every output row has
     * a left row */
    if (j->kind != SQL_JOIN_RIGHT && j->kind != SQL_JOIN_FULL && p->n_prune) {
        lp->prune = calloc((size_t)p->n_prune, sizeof(eng_prune));
        for (int i = 0; lp->prune && i < p->n_prune; i++)
            if (p->prune[i].col < j->n_lcols)
                lp->prune[lp->n_prune++] = p->prune[i]; /* p's strings, borrowed */
    }
    int rc = j->left->ops->plan(j->left, lp, err, errlen);
    if (rc < 0)
        return rc;
    j->n_left_units = rc;
    drop_right_key(j);
    bool tail = j->kind == SQL_JOIN_RIGHT || j->kind == SQL_JOIN_FULL;
    return rc + (tail ? 1 : 0);
}

static int js_reader_create(eng_source *s, eng_reader **out)
{
    jsrc *j = (jsrc *)s;
    jreader *jr = calloc(1, sizeof(*jr));
    if (!jr)
        return -ENOMEM;
    jr->cap = JOIN_BLOCK;
    jr->pl = malloc(sizeof(uint32_t) * jr->cap);
    jr->pr = malloc(sizeof(uint32_t) * jr->cap);
    int rc = jr->pl && jr->pr ? j->left->ops->reader_create(j->left, &jr->lr) : -ENOMEM;
    if (rc < 0) {
        free(jr->pl);
        free(jr->pr);
        free(jr);
        return rc;
    }
    *out = (eng_reader *)jr;
    return 0;
}

static void js_reader_destroy(eng_source *s, eng_reader *r)
{
    jsrc *j = (jsrc *)s;
    jreader *jr = (jreader *)r;
    if (!jr)
        return;
    j->left->ops->reader_destroy(j->left, jr->lr);
    free(jr->hs);
    free(jr->nul);
    free(jr->pl);
    free(jr->pr);
    free(jr);
}

static void js_start(eng_source *s)
{
    jsrc *j = (jsrc *)s;
    j->left->ops->start(j->left);
}

static void js_stop(eng_source *s)
{
    jsrc *j = (jsrc *)s;
    j->left->ops->stop(j->left);
}

static void js_finish(eng_source *s)
{
    jsrc *j = (jsrc *)s;
    j->left->ops->finish(j->left);
}

/* RIGHT / FULL: after every left unit, the right rows nothing matched. */
static int unmatched_right(jsrc *j, jreader *jr, eng_scan_fn fn, void *arg)
{
    pthread_mutex_lock(&j->mu);
    while (j->left_done < j->n_left_units)
        pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
    int rc = 0;
    for (uint32_t r = 0; r < j->right.rows.n && rc == 0; r++)
        if (!atomic_load_explicit(&j->matched[r], memory_order_relaxed))
            rc = add_pair(j, jr, NONE, r, NULL, fn, arg);
    if (rc == 0)
        rc = flush_pairs(j, jr, NULL, fn, arg);
    return rc;
}

static int js_read(eng_source *s, eng_reader *r, int u, eng_scan_fn fn, void *arg, char *err,
                   size_t errlen)
{
    jsrc *j = (jsrc *)s;
    jreader *jr = (jreader *)r;
    jr->n = 0;
    if (u >= j->n_left_units)
        return unmatched_right(j, jr, fn, arg);
    probe_arg pa = {j, jr, fn, arg};
    int rc = j->left->ops->read(j->left, jr->lr, u, probe_block, &pa, err, errlen);
    pthread_mutex_lock(&j->mu);
    j->left_done++;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return rc;
}

static void js_destroy(eng_source *s)
{
    jsrc *j = (jsrc *)s;
    eng_mem *m = &j->q->mem;
    eng_source_destroy(&j->left);
    eng__memtab_free(m, &j->right);
    em_free(m, j->slots);
    em_free(m, j->heads);
    em_free(m, j->next);
    em_free(m, (void *)j->matched);
    free(j->rmap);
    free(j->using_r);
    free(j->keys);
    free(j->lslot);
    free(j->lplan.need);
    free(j->lplan.prune);
    eng_schema_free(&j->base.schema);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

static const eng_source_ops js_ops = {js_plan,   js_reader_create, js_reader_destroy,
                                      js_start,  js_read,          js_stop,
                                      js_finish, js_destroy,       NULL};

/* ---- setting up: columns and keys ----------------------------------------------- */

static int right_find(const jsrc *j, const char *name)
{
    for (int k = 0; k < j->right.n_names; k++)
        if (strcmp(j->right.names[k], name) == 0)
            return k;
    return -1;
}

static int left_find(const jsrc *j, const sql_node *n)
{
    const eng_schema *sc = &j->left->schema;
    char q[512];
    if (n->qual) {
        snprintf(q, sizeof(q), "%s.%s", n->qual, n->s);
        for (int k = 0; k < sc->n; k++)
            if (strcmp(sc->cols[k].name, q) == 0)
                return k;
    }
    for (int k = 0; k < sc->n; k++)
        if (strcmp(sc->cols[k].name, n->s) == 0)
            return k;
    return -1;
}

static int key_mode(const jsrc *j, int lc, int rc, const char *what, int line, int col, char *err,
                    size_t errlen)
{
    ex_type a = j->left->schema.cols[lc].t, b = j->right.rows.c[rc].t;
    if (a.kind == EX_ARRAY || b.kind == EX_ARRAY) {
        snprintf(err, errlen, "line %d, column %d: %s on an Array column is not supported", line,
                 col, what);
        return -ENOTSUP;
    }
    bool sa = a.kind == EX_STRING, sb = b.kind == EX_STRING;
    if (a.kind == EX_NOTHING || b.kind == EX_NOTHING)
        return a.kind == EX_STRING || b.kind == EX_STRING ? JK_STR : JK_INT;
    if (sa && sb)
        return JK_STR;
    bool da = a.kind == EX_DATE, db = b.kind == EX_DATE;
    bool ta = a.kind == EX_DATETIME, tb = b.kind == EX_DATETIME;
    if (!sa && !sb && da == db && ta == tb) {
        if (a.kind == EX_FLOAT || b.kind == EX_FLOAT || a.scale != b.scale)
            return JK_FLOAT;
        return JK_INT;
    }
    char n1[64], n2[64];
    ex_type_name(&a, n1, sizeof(n1));
    ex_type_name(&b, n2, sizeof(n2));
    snprintf(err, errlen,
             "line %d, column %d: %s compares %s with %s: CAST one side to the "
             "other's type",
             line, col, what, n1, n2);
    return -EINVAL;
}

static int add_key(jsrc *j, int lc, int rc, const char *what, int line, int col, char *err,
                   size_t errlen)
{
    if (j->n_keys >= 64) {
        snprintf(err, errlen, "line %d, column %d: a JOIN takes at most 64 keys", line, col);
        return -EINVAL;
    }
    int mode = key_mode(j, lc, rc, what, line, col, err, errlen);
    if (mode < 0)
        return mode;
    jkey *k = realloc(j->keys, sizeof(jkey) * (size_t)(j->n_keys + 1));
    if (!k) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    j->keys = k;
    k[j->n_keys++] = (jkey){lc, rc, mode};
    return 0;
}

/* Which side a column of ON names: 0 left, 1 right, -errno with err. */
static int on_side(const jsrc *j, const sql_join *jn, const sql_node *n, int *col, char *err,
                   size_t errlen)
{
    const sql_stmt *r = jn->right;
    const char *ra = r->from_alias ? r->from_alias : r->table;
    if (n->qual && ra && strcmp(n->qual, ra) == 0) {
        if ((*col = right_find(j, n->s)) >= 0)
            return 1;
        snprintf(err, errlen, "line %d, column %d: the joined table %s has no column '%s'", n->line,
                 n->col, ra, n->s);
        return -EINVAL;
    }
    int lc = left_find(j, n);
    int rc = n->qual ? -1 : right_find(j, n->s);
    if (lc >= 0 && rc >= 0) {
        snprintf(err, errlen,
                 "line %d, column %d: column '%s' of ON is in both tables: "
                 "qualify it (t.%s)",
                 n->line, n->col, n->s, n->s);
        return -EINVAL;
    }
    if (lc >= 0) {
        *col = lc;
        return 0;
    }
    if (rc >= 0) {
        *col = rc;
        return 1;
    }
    snprintf(err, errlen, "line %d, column %d: unknown column '%s' in JOIN ON", n->line, n->col,
             n->s);
    return -EINVAL;
}

static int on_keys(jsrc *j, const sql_join *jn, const sql_node *e, char *err, size_t errlen)
{
    if (e->kind == SQL_BINARY && e->op == SQL_OP_AND) {
        int rc = on_keys(j, jn, e->args[0], err, errlen);
        return rc < 0 ? rc : on_keys(j, jn, e->args[1], err, errlen);
    }
    if (e->kind != SQL_BINARY || e->op != SQL_OP_EQ || e->args[0]->kind != SQL_COLUMN ||
        e->args[1]->kind != SQL_COLUMN) {
        snprintf(err, errlen,
                 "line %d, column %d: JOIN ON supports equalities of a left and a "
                 "right column joined by AND; filter the rest in WHERE",
                 e->line, e->col);
        return -EINVAL;
    }
    int c0, c1;
    int s0 = on_side(j, jn, e->args[0], &c0, err, errlen);
    if (s0 < 0)
        return s0;
    int s1 = on_side(j, jn, e->args[1], &c1, err, errlen);
    if (s1 < 0)
        return s1;
    if (s0 == s1) {
        snprintf(err, errlen,
                 "line %d, column %d: this equality of JOIN ON compares two columns "
                 "of the %s table; one side must be the other table's",
                 e->line, e->col, s0 ? "right" : "left");
        return -EINVAL;
    }
    return s0 == 0 ? add_key(j, c0, c1, "JOIN ON", e->line, e->col, err, errlen)
                   : add_key(j, c1, c0, "JOIN ON", e->line, e->col, err, errlen);
}

/* ---- the right side's columns ----------------------------------------------------- */

/* The names a query uses, to read only those of a JOIN's right side. */
typedef struct used_names {
    const char **v;
    int n, cap;
    bool all; /* SELECT * or COLUMNS(...): every column */
    bool oom;
} used_names;

static void used_add(used_names *u, const char *s)
{
    if (!s || u->oom)
        return;
    for (int i = 0; i < u->n; i++)
        if (strcmp(u->v[i], s) == 0)
            return;
    if (u->n == u->cap) {
        int cap = u->cap ? u->cap * 2 : 32;
        const char **v = realloc(u->v, sizeof(char *) * (size_t)cap);
        if (!v) {
            u->oom = true;
            return;
        }
        u->v = v;
        u->cap = cap;
    }
    u->v[u->n++] = s;
}

static void used_node(used_names *u, const sql_node *e)
{
    if (!e)
        return;
    if (e->kind == SQL_COLUMN)
        used_add(u, e->s);
    if (e->kind == SQL_COLUMNS)
        u->all = true;
    for (int i = 0; i < e->nargs; i++)
        used_node(u, e->args[i]);
    for (int i = 0; i < e->nparams; i++)
        used_node(u, e->params[i]);
    if (e->win) {
        for (int i = 0; i < e->win->n_partition; i++)
            used_node(u, e->win->partition[i]);
        for (int i = 0; i < e->win->n_order; i++)
            used_node(u, e->win->order[i].expr);
    }
    /* a subquery's names are its own FROM's */
}

/* Every name st uses outside its FROM: the SELECT list, WHERE, GROUP BY,
 * HAVING, ORDER BY, LIMIT BY, WITH's expressions, ARRAY JOIN and every
 * JOIN's ON and USING. A name that is not a column (an alias, a WITH name) costs nothing. */
static void used_stmt(used_names *u, const sql_stmt *st)
{
    for (int i = 0; i < st->n_items; i++) {
        const sql_select_item *it = &st->items[i];
        if (it->expr && (it->expr->kind == SQL_STAR || it->expr->kind == SQL_COLUMNS))
            u->all = true;
        used_node(u, it->expr);
        for (int r = 0; r < it->n_replace; r++)
            used_node(u, it->replace[r].expr);
    }
    used_node(u, st->where);
    for (int i = 0; i < st->n_group_by; i++)
        used_node(u, st->group_by[i]);
    used_node(u, st->having);
    for (int i = 0; i < st->n_order_by; i++)
        used_node(u, st->order_by[i].expr);
    for (int i = 0; i < st->n_limit_by; i++)
        used_node(u, st->limit_by[i]);
    for (int i = 0; i < st->n_with; i++)
        used_node(u, st->with[i].expr);
    used_node(u, st->array_join);
    for (int i = 0; i < st->n_joins; i++) {
        used_node(u, st->joins[i].on);
        for (int k = 0; k < st->joins[i].n_using; k++)
            used_add(u, st->joins[i].using[k]);
    }
}

/* Runs the right side into memory with only the columns the outer statement
 * names, when the right is a table read whole ("SELECT * FROM item"): a
 * dimension's other columns are neither read nor kept. */
static int materialize_right(jsrc *j, const sql_stmt *outer, const sql_join *jn, char *err,
                             size_t errlen)
{
    sql_stmt *r = jn->right;
    used_names u = {0};
    sql_select_item *star = NULL;
    if (outer && r->n_items == 1 && r->items[0].expr && r->items[0].expr->kind == SQL_STAR &&
        !r->items[0].n_except && !r->items[0].n_replace && !r->union_all) {
        used_stmt(&u, outer);
        if (!u.all && !u.oom)
            star = &r->items[0];
    }
    if (star) {
        star->keep_set = true;
        star->keep = u.v;
        star->n_keep = u.n;
    }
    int rc = eng__materialize(j->q, r, &j->q->mem, &j->right, err, errlen);
    if (star) {
        star->keep_set = false;
        star->keep = NULL;
        star->n_keep = 0;
    }
    free(u.v);
    return rc;
}

/* The join's columns: the left's, then the right's (less USING's). */
static int make_schema(jsrc *j, const sql_join *jn, char *err, size_t errlen)
{
    const eng_schema *ls = &j->left->schema;
    int nr = j->right.n_names;
    eng_schema *sc = &j->base.schema;
    sc->cols = calloc((size_t)(ls->n + nr) + 1, sizeof(eng_col));
    j->rmap = calloc((size_t)nr + 1, sizeof(int));
    if (!sc->cols || !j->rmap)
        goto oom;
    bool lnull = j->use_nulls && (j->kind == SQL_JOIN_RIGHT || j->kind == SQL_JOIN_FULL);
    bool rnull = j->use_nulls && (j->kind == SQL_JOIN_LEFT || j->kind == SQL_JOIN_FULL);
    for (int k = 0; k < ls->n; k++) {
        sc->cols[k].t = ls->cols[k].t;
        sc->cols[k].cb = ls->cols[k].cb; /* the left's Parquet types: WHERE's pruning */
        sc->cols[k].nested = ls->cols[k].nested;
        bool is_using = j->using_r && j->using_r[k] >= 0;
        if (lnull && !is_using)
            sc->cols[k].t.nullable = true;
        if (!(sc->cols[k].name = strdup(ls->cols[k].name)))
            goto oom;
        sc->n = k + 1;
    }
    j->n_lcols = ls->n;
    const sql_stmt *r = jn->right;
    const char *ra = r->from_alias ? r->from_alias : r->table ? r->table : "_right";
    for (int c = 0; c < nr; c++) {
        bool used = false;
        for (int k = 0; j->using_r && k < ls->n; k++)
            used |= j->using_r[k] == c;
        if (used)
            continue;
        const char *nm = j->right.names[c];
        bool clash = false;
        for (int k = 0; k < sc->n; k++)
            clash |= strcmp(sc->cols[k].name, nm) == 0;
        char buf[512];
        if (clash)
            snprintf(buf, sizeof(buf), "%s.%s", ra, nm);
        else
            snprintf(buf, sizeof(buf), "%s", nm);
        eng_col *col = &sc->cols[sc->n];
        col->t = j->right.rows.c[c].t;
        if (rnull)
            col->t.nullable = true;
        if (!(col->name = strdup(buf)))
            goto oom;
        j->rmap[sc->n - j->n_lcols] = c;
        sc->n++;
    }
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
}

int eng__join_wrap(equery *q, const sql_stmt *outer, const sql_join *jn, char *err, size_t errlen)
{
    jsrc *j = calloc(1, sizeof(*j));
    if (!j) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->base.ops = &js_ops;
    j->q = q;
    j->left = q->src;
    q->src = &j->base;
    j->base.files = j->left->files;
    j->kind = jn->kind;
    j->any = jn->any;
    j->use_nulls = q->set.join_use_nulls;
    if (j->any && (j->kind == SQL_JOIN_RIGHT || j->kind == SQL_JOIN_FULL)) {
        snprintf(err, errlen,
                 "line %d, column %d: ANY %s JOIN is not supported: use ANY LEFT, "
                 "ANY INNER or ALL",
                 jn->line, jn->col, j->kind == SQL_JOIN_RIGHT ? "RIGHT" : "FULL");
        return -EINVAL;
    }
    int rc = materialize_right(j, outer, jn, err, errlen);
    if (rc < 0)
        return rc;
    if (jn->n_using) {
        j->using_r = malloc(sizeof(int) * ((size_t)j->left->schema.n + 1));
        if (!j->using_r) {
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        for (int k = 0; k < j->left->schema.n; k++)
            j->using_r[k] = -1;
        for (int i = 0; i < jn->n_using; i++) {
            sql_node n = {.kind = SQL_COLUMN, .s = jn->using[i]};
            int lc = left_find(j, &n), rcol = right_find(j, jn->using[i]);
            if (lc < 0 || rcol < 0) {
                snprintf(err, errlen,
                         "line %d, column %d: USING column '%s' is not in the %s "
                         "table",
                         jn->line, jn->col, jn->using[i], lc < 0 ? "left" : "right");
                return -EINVAL;
            }
            j->using_r[lc] = rcol;
            if ((rc = add_key(j, lc, rcol, "USING", jn->line, jn->col, err, errlen)) < 0)
                return rc;
        }
    } else if (jn->on) {
        if ((rc = on_keys(j, jn, jn->on, err, errlen)) < 0)
            return rc;
    }
    if ((rc = make_schema(j, jn, err, errlen)) < 0)
        return rc;
    j->int1 = j->n_keys == 1 && j->keys[0].mode == JK_INT;
    if (j->kind != SQL_JOIN_CROSS)
        return build(j, err, errlen);
    return 0;
}

bool eng__join_info(const eng_source *s, eng_join_info *out)
{
    if (!s || s->ops != &js_ops)
        return false;
    const jsrc *j = (const jsrc *)s;
    out->kind = j->kind;
    out->any = j->any;
    out->use_nulls = j->use_nulls;
    out->right_rows = j->right.rows.n;
    out->right_names = (const char *const *)j->right.names;
    out->n_right = j->right.n_names;
    out->n_keys = j->n_keys;
    out->dense = j->dense;
    out->dmin = j->dmin;
    out->dmax = j->dense ? (int64_t)((uint64_t)j->dmin + j->cap - 1) : 0;
    out->left = j->left;
    out->left_units = j->n_left_units;
    return true;
}
